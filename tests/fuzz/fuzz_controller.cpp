// libFuzzer target: the whole controller under a hostile host. The input is a program of host
// actions: BAR0 reads and writes of every width (registers, doorbells, MSI-X table and PBA),
// stores into host memory (queues, PRP lists, SGL segments, data), polls, clock advances,
// Function Level Resets and MSI-X control changes. Any crash, sanitizer report or broken
// invariant is a finding.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>

#include "fuzz_input.hpp"

#include <nvmekit/backends/ram_backend.hpp>
#include <nvmekit/controller.hpp>
#include <nvmekit/testing/flat_memory.hpp>
#include <nvmekit/testing/manual_clock.hpp>

namespace {

using nvmekit_fuzz::counting_interrupts;
using nvmekit_fuzz::reader;

struct traits : nvmekit::default_traits {
    using dma = nvmekit::testing::flat_memory;
    using interrupts = counting_interrupts;
    using clock = nvmekit::testing::manual_clock;
    static constexpr nvmekit::limits limits{
        .io_queues = 4, .queue_entries = 64, .mdts = 3, .msix_vectors = 5, .aerl = 3, .commands_per_queue = 16,
        .max_segments = 64, .staging_buffers = 2};
};

constexpr std::uint64_t host_base = 0x10000;
constexpr std::size_t host_size = 256 * 1024;

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    nvmekit::testing::flat_memory memory;
    memory.add_range(host_base, host_size);
    counting_interrupts interrupts;
    nvmekit::testing::manual_clock clock;
    nvmekit::subsystem<nvmekit::any_backend> subsystem;
    subsystem.add_namespace(nvmekit::ram_backend{64 * 1024}, {.lba_format = 1});
    subsystem.add_namespace(nvmekit::ram_backend{64 * 1024}, {.lba_format = 3, .extended_metadata = true});
    nvmekit::controller<traits> ctrl{memory, interrupts, clock, subsystem};
    const std::uint64_t bar0 = ctrl.bar0_size();

    reader in{{data, size}};
    for (int step = 0; step < 4096 && !in.empty(); ++step) {
        const auto op = in.take<std::uint8_t>();
        switch (op % 8) {
        case 0:
        case 1: { // BAR0 write
            static constexpr unsigned widths[] = {1, 2, 4, 8};
            const unsigned width = widths[in.take<std::uint8_t>() % 4];
            const std::uint64_t offset = in.take<std::uint16_t>() % bar0;
            ctrl.mmio_write(offset, width, in.take<std::uint64_t>());
            break;
        }
        case 2: { // BAR0 read
            static constexpr unsigned widths[] = {1, 2, 4, 8, 3};
            const unsigned width = widths[in.take<std::uint8_t>() % 5];
            static_cast<void>(ctrl.mmio_read(in.take<std::uint16_t>() % bar0, width));
            break;
        }
        case 3:
        case 4: { // host memory store
            const std::uint64_t offset = in.take<std::uint32_t>() % host_size;
            const auto bytes = in.take_bytes(in.take<std::uint8_t>() % 80U + 1U);
            const auto room = std::min<std::size_t>(bytes.size(), host_size - offset);
            if (room != 0) {
                std::memcpy(memory.bytes(host_base + offset, room).data(), bytes.data(), room);
            }
            break;
        }
        case 5: ctrl.poll(); break;
        case 6: clock.advance(std::chrono::microseconds{in.take<std::uint16_t>()} * 16); break;
        case 7: {
            const auto which = in.take<std::uint8_t>();
            if (which % 16 == 0) {
                ctrl.function_level_reset();
            } else {
                ctrl.set_msix_control((which & 1U) != 0, (which & 2U) != 0);
            }
            break;
        }
        }
    }
    // Let everything in flight finish, then the controller must account for every request.
    for (int i = 0; i < 8; ++i) {
        ctrl.poll();
    }
    ctrl.mmio_write(0x14, 4, 0); // CC.EN = 0: every queue goes, every request must come back
    ctrl.poll();
    if (ctrl.requests_in_use() != 0 || ctrl.io_outstanding() != 0) {
        std::abort();
    }
    return 0;
}
