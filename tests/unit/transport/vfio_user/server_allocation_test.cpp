#include <nvmekit/transport/vfio_user/server.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <sys/mman.h>
#include <unistd.h>

#include "counting_new.hpp"

#include <nvmekit/backends/null_backend.hpp>
#include <nvmekit/controller.hpp>
#include <nvmekit/spec/registers.hpp>
#include <nvmekit/testing/flat_memory.hpp>
#include <nvmekit/testing/host.hpp>
#include <nvmekit/testing/manual_clock.hpp>
#include <nvmekit/testing/vfio_user_client.hpp>
#include <nvmekit/transport/eventfd_interrupts.hpp>
#include <nvmekit/transport/mapped_memory.hpp>

// The vfio-user path in steady state allocates nothing: a client reads through one I/O queue
// pair over a real socket, its doorbells by posted REGION_WRITE messages or by stores into the
// mapped doorbell page, and every allocation of the process (the server's thread, the client's)
// is counted while it does.

namespace {

namespace spec = nvmekit::spec;
namespace vu = nvmekit::transport::vfio_user;
using nvmekit_test::allocation_count;

struct traits : nvmekit::default_traits {
    using dma = nvmekit::transport::mapped_memory;
    using interrupts = nvmekit::transport::eventfd_interrupts;
    using clock = nvmekit::steady_clock;
    using backend = nvmekit::null_backend;
    static constexpr nvmekit::limits limits{.io_queues = 2, .queue_entries = 64, .msix_vectors = 3};
};
using controller_type = nvmekit::controller<traits>;

constexpr std::uint64_t guest_base = 0x1'0000'0000;
constexpr std::size_t guest_bytes = 4U << 20;
constexpr std::uint32_t queue_depth = 16;

/// Reads `commands` 4 KiB blocks through I/O queue 1, `queue_depth` at a time, ringing each
/// doorbell once per batch; false when a completion failed or none came for a long time.
bool read_blocks(nvmekit::testing::in_process_host<nvmekit::testing::vfio_user_client>& host,
                 nvmekit::testing::vfio_user_client& client, std::byte* guest, std::uint64_t buffer,
                 std::uint32_t entries, std::uint32_t& tail, std::uint32_t& head, bool& phase,
                 std::size_t commands)
{
    for (std::size_t done = 0; done < commands;) {
        for (std::uint16_t cid = 0; cid < queue_depth; ++cid) {
            auto sqe =
                nvmekit::testing::command_builders::lba_command(spec::nvm_opcode::read, 1, cid * 8U, 8);
            sqe.cdw0.set(spec::command_dword0::cid, cid);
            sqe.dptr.prp1 = buffer;
            std::memcpy(guest + (host.submission_entry_address(1, tail) - guest_base), &sqe, sizeof sqe);
            tail = (tail + 1) % entries;
        }
        client.ring_doorbell(spec::sq_tail_doorbell_offset(1, 0), tail);
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{30};
        for (std::uint32_t reaped = 0; reaped < queue_depth;) {
            std::byte* entry = guest + (host.completion_entry_address(1, head) - guest_base);
            const std::uint32_t dword3 = std::atomic_ref{*reinterpret_cast<std::uint32_t*>(entry + 12)}.load(
                std::memory_order_acquire);
            if (((dword3 >> 16) & 1U) != static_cast<std::uint32_t>(phase)) {
                if (std::chrono::steady_clock::now() > deadline) {
                    return false;
                }
                continue;
            }
            if ((dword3 >> 17) != 0) {
                return false; // a status other than success
            }
            head = (head + 1) % entries;
            phase = head == 0 ? !phase : phase;
            ++reaped;
        }
        client.ring_doorbell(spec::cq_head_doorbell_offset(1, 0), head);
        done += queue_depth;
    }
    return true;
}

void reads_allocate_nothing(bool mapped_doorbells)
{
    const std::string path = "/tmp/nvmekit-allocation-" + std::to_string(::getpid()) + ".sock";
    nvmekit::transport::mapped_memory memory;
    nvmekit::transport::eventfd_interrupts interrupts{traits::limits.msix_vectors};
    nvmekit::steady_clock clock;
    nvmekit::subsystem<nvmekit::null_backend> subsystem{{.nqn = "nqn.2026-11.io.nvmekit:allocation"}};
    subsystem.add_namespace(nvmekit::null_backend{1 << 20});
    controller_type ctrl{memory, interrupts, clock, subsystem};
    vu::server<controller_type> server{
        ctrl, memory, interrupts, {.socket_path = path, .mappable_doorbells = mapped_doorbells}};
    std::atomic<bool> stop{false};
    std::thread serving{[&] {
        while (!stop.load()) {
            server.run_once(std::chrono::milliseconds{mapped_doorbells ? 0 : 1});
        }
    }};

    const int fd = ::memfd_create("guest", MFD_CLOEXEC);
    ASSERT_EQ(::ftruncate(fd, guest_bytes), 0);
    auto* guest =
        static_cast<std::byte*>(::mmap(nullptr, guest_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
    {
        nvmekit::testing::vfio_user_client client{path};
        ASSERT_EQ(client.negotiate(), 0U);
        ASSERT_EQ(client.map_dma(fd, guest_base, guest_bytes), 0U);
        ASSERT_TRUE(client.enable_function());
        ASSERT_EQ(client.map_doorbells(), mapped_doorbells);
        nvmekit::testing::flat_memory host_memory;
        host_memory.add_range(guest_base, std::span{guest, guest_bytes});
        nvmekit::testing::manual_clock host_clock;
        nvmekit::testing::in_process_host host{client, host_memory, host_clock};
        constexpr std::uint32_t entries = 64;
        host.bring_up(
            {.io_queue_pairs = 1, .io_entries = entries, .interrupts = false, .max_polls = 1'000'000});
        const std::uint64_t buffer = host.allocate(4096);

        std::uint32_t tail = 0;
        std::uint32_t head = 0;
        bool phase = true;
        // Warm up (the server's receive buffer reaches its size), then count.
        ASSERT_TRUE(read_blocks(host, client, guest, buffer, entries, tail, head, phase, 256));
        const std::size_t before = allocation_count.load();
        ASSERT_TRUE(read_blocks(host, client, guest, buffer, entries, tail, head, phase, 4096));
        EXPECT_EQ(allocation_count.load(), before);
    }
    stop = true;
    serving.join();
    ::munmap(guest, guest_bytes);
    ::close(fd);
}

TEST(vfio_user_server_allocation, reads_with_message_doorbells_allocate_nothing)
{
    reads_allocate_nothing(false);
}

TEST(vfio_user_server_allocation, reads_with_mapped_doorbells_allocate_nothing)
{
    reads_allocate_nothing(true);
}

} // namespace
