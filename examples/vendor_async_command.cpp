// nvmekit-vendor-async-command: a vendor-specific I/O command that completes asynchronously. The
// traits add opcode 82h, "Read Checksummed", to the controller's I/O dispatch table. Its handler
// uses only the HandlerContext expressions (handler_context.hpp): it stages the blocks in a
// staging buffer, submits one read to the namespace's backend and returns pending; when the
// backend completes, later, its continuation computes a CRC-32C of the data, copies the data to
// the host and completes with the checksum in DW0.
//
// The namespace lives on a testing::test_backend whose requests complete only once the manual
// clock has passed their delay and the backend is polled, so the program can show the command
// outstanding, then completing; and a controller reset (CC.EN 1 -> 0) while one is in the backend:
// the reset completes (CSTS.RDY = 0) once the backend has returned the read, no completion is
// posted, the host buffer is untouched, the request is released, and the command works again after
// the host brings the controller up. It exits 0 only if every check held.
#include "command_line.hpp"

#include <nvmekit/controller.hpp>
#include <nvmekit/format.hpp>
#include <nvmekit/handler_context.hpp>
#include <nvmekit/subsystem.hpp>
#include <nvmekit/testing/flat_memory.hpp>
#include <nvmekit/testing/host.hpp>
#include <nvmekit/testing/manual_clock.hpp>
#include <nvmekit/testing/recording_msix.hpp>
#include <nvmekit/testing/test_backend.hpp>

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <span>
#include <string_view>
#include <vector>

namespace spec = nvmekit::spec;
namespace nt = nvmekit::testing;
using namespace std::chrono_literals;

namespace {

// ---- the vendor command, as a device vendor would define it -----------------------------------

/// I/O vendor-specific range 80h-FFh. Bits 01:00 of an opcode give its data transfer direction
/// (Base 2.0 Figure 28): 10b, controller to host.
constexpr std::uint8_t read_checksummed_opcode = 0x82;
static_assert(read_checksummed_opcode >= 0x80, "an I/O vendor-specific opcode");
static_assert((read_checksummed_opcode & 0x3U) == 0x2U,
              "opcode bits 01:00 = 10b: data from controller to host");

// CRC-32C (Castagnoli: reflected polynomial 82F63B78h, initial value and final XOR FFFFFFFFh).
[[nodiscard]] constexpr std::array<std::uint32_t, 256> make_crc32c_table() noexcept
{
    std::array<std::uint32_t, 256> table{};
    for (std::uint32_t index = 0; index < table.size(); ++index) {
        std::uint32_t crc = index;
        for (int bit = 0; bit < 8; ++bit) {
            crc = (crc & 1U) != 0 ? (crc >> 1U) ^ 0x82f63b78U : crc >> 1U;
        }
        table[index] = crc;
    }
    return table;
}
constexpr std::array<std::uint32_t, 256> crc32c_table = make_crc32c_table();

[[nodiscard]] constexpr std::uint32_t crc32c_update(std::uint32_t state, std::uint8_t byte) noexcept
{
    return (state >> 8U) ^ crc32c_table[(state ^ byte) & 0xffU];
}

/// The CRC-32C of `data`, as the controller computes it (a byte-wise table).
[[nodiscard]] std::uint32_t crc32c(std::span<const std::byte> data) noexcept
{
    std::uint32_t state = 0xffffffffU;
    for (const std::byte byte : data) {
        state = crc32c_update(state, std::to_integer<std::uint8_t>(byte));
    }
    return ~state;
}

[[nodiscard]] constexpr std::uint32_t crc32c_of(std::string_view text) noexcept
{
    std::uint32_t state = 0xffffffffU;
    for (const char c : text) {
        state = crc32c_update(state, static_cast<std::uint8_t>(c));
    }
    return ~state;
}
static_assert(crc32c_of("123456789") == 0xe3069283U, "the CRC-32C check value");

/// The fields of Read Checksummed: CDW10/11 SLBA, CDW12 bits 15:00 NLB (0's based); the data
/// pointer describes the blocks' data. Other CDW12 bits are ignored.
struct read_checksummed_fields {
    std::uint64_t starting_lba = 0;
    std::uint32_t block_count = 0; ///< NLB + 1

    [[nodiscard]] static read_checksummed_fields decode(const spec::submission_queue_entry& sqe) noexcept
    {
        return {(std::uint64_t{sqe.cdw11} << 32U) | sqe.cdw10, (sqe.cdw12 & 0xffffU) + 1U};
    }
    void encode(spec::submission_queue_entry& sqe) const noexcept
    {
        sqe.cdw10 = static_cast<std::uint32_t>(starting_lba);
        sqe.cdw11 = static_cast<std::uint32_t>(starting_lba >> 32U);
        sqe.cdw12 = (block_count - 1U) & 0xffffU;
    }
};

template <nvmekit::HandlerContext Controller>
nvmekit::command_result read_checksummed_done(Controller& c, typename Controller::command& cmd);

/// Read Checksummed (82h): a handler of the I/O table. Everything before acquire_staging only
/// reads; when no staging buffer is free the command waits and this handler runs again from the
/// start.
template <nvmekit::HandlerContext Controller>
nvmekit::command_result read_checksummed(Controller& c, typename Controller::command& cmd)
{
    using nvmekit::command_result;
    const auto refuse = [](auto code) { return command_result::failure(spec::status{code}.with_dnr()); };
    const auto fields = read_checksummed_fields::decode(cmd.sqe);
    cmd.ns = c.attached_namespace(cmd.sqe.nsid);
    if (cmd.ns == nullptr) {
        return refuse(spec::generic_status::invalid_namespace_or_format);
    }
    auto& ns = *cmd.ns;
    if (!ns.contains(fields.starting_lba, fields.block_count)) {
        return refuse(spec::generic_status::lba_out_of_range);
    }
    const std::uint64_t bytes = ns.data_transfer_bytes(fields.block_count);
    if (bytes > c.max_transfer_bytes()) {
        return refuse(spec::generic_status::invalid_field);
    }
    // Blocks a Write Uncorrectable marked read as Unrecovered Read Error, as with Read.
    if (const auto lba = ns.first_uncorrectable(fields.starting_lba, fields.block_count)) {
        c.record_media_error(cmd, *lba);
        return refuse(spec::media_status::unrecovered_read_error);
    }
    nvmekit::host_range_list ranges = c.scratch_ranges(cmd);
    if (const auto status = c.walk_data(cmd, bytes, nvmekit::transfer_direction::controller_to_host, ranges);
        !status.is_success()) {
        return command_result::failure(status);
    }
    auto* staging = c.acquire_staging(cmd);
    if (staging == nullptr) {
        return command_result::pending();
    }
    // The scratch list lives only until this handler returns: the staging buffer keeps the ranges
    // for the continuation.
    for (const nvmekit::host_range& range : ranges.ranges()) {
        if (!staging->ranges.push(range.address, range.length, range.bit_bucket)) {
            return command_result::failure(spec::status{spec::generic_status::internal_error});
        }
    }
    cmd.data_segments[0] = nvmekit::io_segment{staging->bytes.data(), static_cast<std::size_t>(bytes)};
    cmd.data_segment_count = 1;
    cmd.block[0] =
        nvmekit::block_request{.operation = nvmekit::block_operation::read,
                               .offset = ns.data_offset(fields.starting_lba),
                               .length = bytes,
                               .segments = std::span<const nvmekit::io_segment>{cmd.data_segments}.first(1)};
    cmd.continuation = &read_checksummed_done<Controller>;
    c.submit_blocks(cmd, 1);
    return command_result::pending();
}

/// Runs when the backend has completed the read, on the command's context. The controller does
/// not run it for a command whose queue a reset or Delete I/O SQ retired.
template <nvmekit::HandlerContext Controller>
nvmekit::command_result read_checksummed_done(Controller& c, typename Controller::command& cmd)
{
    using nvmekit::command_result;
    if (cmd.block_result != nvmekit::block_status::success) {
        return command_result::failure(c.backend_failure(cmd, cmd.block_result));
    }
    const auto fields = read_checksummed_fields::decode(cmd.sqe);
    const std::uint64_t bytes = cmd.ns->data_transfer_bytes(fields.block_count);
    const auto data = std::span<const std::byte>{cmd.staging->bytes}.first(static_cast<std::size_t>(bytes));
    const std::uint32_t checksum = crc32c(data);
    if (const auto status = c.write_host(cmd, cmd.staging->ranges, data); !status.is_success()) {
        return command_result::failure(status);
    }
    c.trace_command(nvmekit::trace_event::data_prepared, cmd, bytes);
    c.count_read(cmd, bytes);
    return command_result::success(checksum);
}

// ---- the controller's traits ------------------------------------------------------------------

/// The providers of the in-process host, and namespaces on a test_backend.
struct host_side_traits : nvmekit::default_traits {
    using dma = nt::flat_memory;
    using interrupts = nt::recording_msix;
    using clock = nt::manual_clock;
    using backend = nt::test_backend<>;
};

/// host_side_traits with Read Checksummed in the I/O table. It reads only, so its effects are none.
struct vendor_traits : host_side_traits {
    template <typename Table>
    static constexpr Table io_commands(Table table)
    {
        return table.with(read_checksummed_opcode, &read_checksummed<typename Table::context_type>,
                          nvmekit::effects::none());
    }
};

using controller_type = nvmekit::controller<vendor_traits>;
using host_type = nt::in_process_host<controller_type>;
static_assert(nvmekit::HandlerContext<controller_type>);

// ---- the host side ----------------------------------------------------------------------------

constexpr std::uint32_t nsid = 1;
constexpr std::chrono::nanoseconds backend_delay = 10ms;

/// Read Checksummed of `blocks` blocks at `slba` into the PRPs `dptr`.
spec::submission_queue_entry read_checksummed_command(std::uint32_t ns, std::uint64_t slba,
                                                      std::uint32_t blocks, spec::data_pointer dptr = {})
{
    spec::submission_queue_entry sqe{};
    sqe.cdw0.set(spec::command_dword0::opc, read_checksummed_opcode);
    sqe.nsid = ns;
    read_checksummed_fields{slba, blocks}.encode(sqe);
    sqe.dptr = dptr;
    return sqe;
}

/// The host's own CRC-32C, bit by bit, to check the controller's table-driven one against.
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
