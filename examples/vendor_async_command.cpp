// nvmekit-vendor-async-command: a vendor-specific I/O command that completes asynchronously. The
// traits add opcode 82h, "Read Checksummed" (read_checksummed.hpp), to the controller's I/O
// dispatch table. Its handler uses only the HandlerContext expressions (handler_context.hpp): it
// stages the blocks in a staging buffer, submits one read to the namespace's backend and returns
// pending; when the backend completes, later, its continuation computes a CRC-32C of the data,
// copies the data to the host and completes with the checksum in DW0.
//
// The namespace lives on a testing::test_backend whose requests complete only once the manual
// clock has passed their delay and the backend is polled, so the program can show the command
// outstanding, then completing; and a controller reset (CC.EN 1 -> 0) while one is in the backend:
// the reset completes (CSTS.RDY = 0) once the backend has returned the read, no completion is
// posted, the host buffer is untouched, the request is released, and the command works again after
// the host brings the controller up. It exits 0 only if every check held.
#include "command_line.hpp"
#include "read_checksummed.hpp"

#include <nvmekit/contracts/handler_context.hpp>
#include <nvmekit/controller.hpp>
#include <nvmekit/format.hpp>
#include <nvmekit/storage/subsystem.hpp>
#include <nvmekit/testing/flat_memory.hpp>
#include <nvmekit/testing/host.hpp>
#include <nvmekit/testing/manual_clock.hpp>
#include <nvmekit/testing/recording_msix.hpp>
#include <nvmekit/testing/test_backend.hpp>

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <span>
#include <string_view>
#include <vector>

namespace spec = nvmekit::spec;
namespace nt = nvmekit::testing;
using nvmekit_examples::read_checksummed_command;
using nvmekit_examples::read_checksummed_opcode;
using namespace std::chrono_literals;

namespace {

// ---- the controller's traits ------------------------------------------------------------------

/// The providers of the in-process host, and namespaces on a test_backend.
struct host_side_traits : nvmekit::default_traits {
    using dma = nt::flat_memory;
    using interrupts = nt::recording_msix;
    using clock = nt::manual_clock;
    using backend = nt::test_backend<>;
};

/// host_side_traits with Read Checksummed in the I/O table.
struct vendor_traits : nvmekit_examples::with_read_checksummed<host_side_traits> {};

using controller_type = nvmekit::controller<vendor_traits>;
using host_type = nt::in_process_host<controller_type>;
static_assert(nvmekit::HandlerContext<controller_type>);

// ---- the host side ----------------------------------------------------------------------------

constexpr std::uint32_t nsid = 1;
constexpr std::chrono::nanoseconds backend_delay = 10ms;

/// The host's own CRC-32C, bit by bit, to check the controller's (the library's crc32c) against.
[[nodiscard]] std::uint32_t host_crc32c(std::span<const std::byte> data) noexcept
{
    std::uint32_t crc = 0xffffffffU;
    for (const std::byte byte : data) {
        crc ^= std::to_integer<std::uint32_t>(byte);
        for (int bit = 0; bit < 8; ++bit) {
            crc = (crc >> 1U) ^ (0x82f63b78U & (0U - (crc & 1U)));
        }
    }
    return ~crc;
}

/// Counts the checks that failed; each is logged.
class checks {
public:
    bool operator()(bool held, std::string_view what)
    {
        if (held) {
            fmt::print("  ok: {}\n", what);
        } else {
            spdlog::error("check failed: {}", what);
            ++failed_;
        }
        return held;
    }
    [[nodiscard]] int failed() const noexcept { return failed_; }

private:
    int failed_ = 0;
};

[[nodiscard]] std::vector<std::byte> read_memory(nt::flat_memory& memory, std::uint64_t address,
                                                 std::size_t size)
{
    std::vector<std::byte> bytes(size);
    if (memory.read(address, bytes)) {
        throw nt::host_error{"cannot read host memory"};
    }
    return bytes;
}

int run()
{
    checks check;
    nt::flat_memory memory;
    memory.add_range(0x1'0000'0000, std::size_t{16} << 20);
    nt::recording_msix msix;
    nt::manual_clock clock;
    controller_type::subsystem_type subsystem{{.nqn = "nqn.2026-11.io.nvmekit:vendor-async-command"}};
    auto& ns = subsystem.add_namespace(
        nt::test_backend<>{clock, std::uint64_t{4} << 20, 64, {.delay = backend_delay}});
    auto& backend = ns.backend();
    controller_type controller{memory, msix, clock, subsystem};
    host_type host{controller, memory, clock, msix};
    host.bring_up({.io_queue_pairs = 1});
    spdlog::info(
        "controller {} is ready; its I/O table holds {} commands, 82h among them: {}; backend delay {}",
        controller.controller_id(), controller_type::io_table().size(),
        controller_type::io_table().supported(read_checksummed_opcode),
        std::chrono::duration_cast<std::chrono::milliseconds>(backend_delay));
    check(controller_type::io_table().supported(read_checksummed_opcode), "82h is in the I/O table");

    // A known pattern, written with a normal Write.
    constexpr std::uint64_t slba = 8;
    constexpr std::uint32_t blocks = 16;
    const std::size_t bytes = static_cast<std::size_t>(ns.data_transfer_bytes(blocks));
    std::vector<std::byte> pattern(bytes);
    for (std::size_t i = 0; i < pattern.size(); ++i) {
        pattern[i] = static_cast<std::byte>((i * 7U + (i >> 8U) + 0x5aU) & 0xffU);
    }
    const std::uint32_t expected_checksum = host_crc32c(pattern);
    const std::uint64_t write_buffer = host.allocate(bytes);
    if (memory.write(write_buffer, pattern)) {
        throw nt::host_error{"cannot write the pattern to host memory"};
    }
    auto write = host_type::lba_command<spec::write_view>(spec::nvm_opcode::write, nsid, slba, blocks);
    write.dptr = host.build_prps(write_buffer, bytes);
    const auto written = host.io(1, write);
    spdlog::info("Write of {} blocks at LBA {} -> {}", blocks, slba, written.status());
    check(written.ok(), "the Write of the pattern succeeds");

    // Read Checksummed: pending in the backend until the clock passes its delay.
    spdlog::info("Read Checksummed of {} blocks at LBA {}, host CRC-32C of the pattern {:#010x}", blocks,
                 slba, expected_checksum);
    const std::uint64_t read_buffer = host.allocate(bytes);
    const auto cid =
        host.submit(1, read_checksummed_command(nsid, slba, blocks, host.build_prps(read_buffer, bytes)));
    std::vector<nt::completion> reaped;
    for (int i = 0; i < 3; ++i) {
        host.reap(1, reaped); // polls the controller and its backends, the clock standing still
    }
    fmt::print("  after 3 polls without time passing: {} completions, {} request(s) in the backend, "
               "{} command(s) in the controller\n",
               reaped.size(), backend.outstanding(), controller.requests_in_use());
    check(reaped.empty() && backend.outstanding() == 1 && controller.requests_in_use() == 1,
          "the command stays outstanding while its backend request waits");
    clock.advance(backend_delay);
    host.reap(1, reaped);
    check(reaped.size() == 1, "one completion once the clock passed the delay and the backend was polled");
    if (reaped.size() == 1) {
        const auto& done = reaped.front();
        spdlog::info("Read Checksummed (cid {}) -> {}, dw0 {:#010x}", done.cqe.cid, done.status(),
                     done.cqe.dw0);
        check(done.cqe.cid == cid && done.ok(), "it completes successfully");
        check(done.cqe.dw0 == expected_checksum, "DW0 is the CRC-32C the host computed");
        check(read_memory(memory, read_buffer, bytes) == pattern, "the host buffer holds the pattern");
    }
    check(controller.requests_in_use() == 0, "no command left in the controller");

    // What the handler refuses.
    const auto refused = [&](spec::submission_queue_entry sqe, spec::status expected, std::string_view what) {
        const auto result = host.io(1, sqe);
        spdlog::info("Read Checksummed {} -> {}", what, result.status());
        check(result.status() == expected, fmt::format("{} is refused with {}", what, expected));
    };
    const auto dnr = [](auto code) { return spec::status{code}.with_dnr(); };
    refused(read_checksummed_command(7, 0, 1, host.build_prps(read_buffer, 512)),
            dnr(spec::generic_status::invalid_namespace_or_format), "of NSID 7 (not attached)");
    refused(read_checksummed_command(nsid, ns.block_count() - 1, 2, host.build_prps(read_buffer, 1024)),
            dnr(spec::generic_status::lba_out_of_range), "past the last LBA");
    const auto mdts_blocks = static_cast<std::uint32_t>(controller.max_transfer_bytes() / ns.block_bytes());
    refused(read_checksummed_command(nsid, 0, mdts_blocks + 1), dnr(spec::generic_status::invalid_field),
            "of MDTS + 1 block");

    // A controller reset while a Read Checksummed is in the backend.
    spdlog::info("controller reset while a Read Checksummed is in the backend");
    constexpr std::byte untouched{0xee};
    const std::uint64_t reset_buffer = host.allocate(bytes);
    const std::vector<std::byte> marker(bytes, untouched);
    if (memory.write(reset_buffer, marker)) {
        throw nt::host_error{"cannot write the marker to host memory"};
    }
    const std::uint64_t io_cq = host.completion_entry_address(1, 0);
    const std::size_t io_cq_bytes = std::size_t{host.options().io_entries} * 16U;
    host.submit(1, read_checksummed_command(nsid, slba, blocks, host.build_prps(reset_buffer, bytes)));
    controller.poll(); // fetched, staged, submitted to the backend
    const auto cq_before = read_memory(memory, io_cq, io_cq_bytes);
    const auto posted_before = controller.statistics().completions_posted;
    check(backend.outstanding() == 1, "the read is in the backend");
    // The host clears CC.EN. The controller aborts the command at once, but the Controller Reset
    // completes (CSTS.RDY reads 0) only once the backend has returned the read: until then a
    // backend may still be moving data, and the host may reuse its buffers when it sees RDY = 0.
    host.write32(spec::register_offset::cc, host.cc().with(spec::cc_register::en, false).raw);
    for (int i = 0; i < 3; ++i) {
        controller.poll();
    }
    fmt::print(
        "  after CC.EN = 0 and 3 polls without time passing: CSTS.RDY {}, {} request(s) in the backend, "
        "{} command(s) in the controller\n",
        host.csts().get(spec::csts_register::rdy), backend.outstanding(), controller.requests_in_use());
    check(host.csts().get(spec::csts_register::rdy) && backend.outstanding() == 1 &&
              controller.requests_in_use() == 1,
          "the reset waits for the read in the backend, which keeps its request");
    clock.advance(backend_delay);
    controller.poll(); // the backend completes the read; the controller skips the continuation
    fmt::print(
        "  after the backend completed: CSTS.RDY {}, {} request(s) in the backend, {} command(s) in the "
        "controller, {} backend request(s) outstanding\n",
        host.csts().get(spec::csts_register::rdy), backend.outstanding(), controller.requests_in_use(),
        controller.io_outstanding());
    check(!host.csts().get(spec::csts_register::rdy),
          "the reset completes (CSTS.RDY = 0) once the backend returned");
    check(backend.outstanding() == 0 && controller.requests_in_use() == 0 && controller.io_outstanding() == 0,
          "the request is released");
    host.disable(); // the host's side of the reset: RDY reads 0, it forgets its queues
    check(controller.statistics().completions_posted == posted_before, "no completion is posted for it");
    check(read_memory(memory, io_cq, io_cq_bytes) == cq_before,
          "the I/O completion queue's memory is unchanged");
    check(read_memory(memory, reset_buffer, bytes) == marker, "the host buffer is untouched");

    // Up again: the command works.
    host.bring_up({.io_queue_pairs = 1});
    const std::uint64_t again_buffer = host.allocate(bytes);
    const auto again =
        host.io(1, read_checksummed_command(nsid, slba, blocks, host.build_prps(again_buffer, bytes)));
    spdlog::info("after bringing the controller up again: Read Checksummed -> {}, dw0 {:#010x}",
                 again.status(), again.cqe.dw0);
    check(again.ok() && again.cqe.dw0 == expected_checksum,
          "Read Checksummed works again with the same checksum");
    check(read_memory(memory, again_buffer, bytes) == pattern, "and returns the pattern");
    host.shut_down();

    if (check.failed() != 0) {
        spdlog::error("{} check(s) failed", check.failed());
        return 1;
    }
    spdlog::info("every check held");
    return 0;
}

} // namespace

int main(int argc, char** argv)
{
    nvmekit_programs::no_options({"nvmekit-vendor-async-command",
                                  "nvmekit-vendor-async-command\n  sends the vendor I/O command 82h (Read "
                                  "Checksummed) through the in-process "
                                  "host to a controller whose backend completes later, across a controller "
                                  "reset, and checks what comes "
                                  "back\n"},
                                 argc, argv);
    spdlog::set_pattern("[%l] %v");
    try {
        return run();
    } catch (const std::exception& error) {
        spdlog::critical("{}", error.what());
        return 2;
    }
}
