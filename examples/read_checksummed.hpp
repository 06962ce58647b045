#pragma once
// Read Checksummed (82h), a vendor-specific I/O command that completes asynchronously, as a device
// vendor would define it: its handler uses only the HandlerContext expressions (handler_context.hpp).
// It stages the blocks in a staging buffer, submits one read to the namespace's backend and returns
// pending; when the backend completes, later, its continuation computes a CRC-32C of the data,
// copies the data to the host and completes with the checksum in DW0.
//
//     struct my_traits : nvmekit_examples::with_read_checksummed<nvmekit::default_traits> {};
//
// examples/vendor_async_command.cpp runs it through the in-process host; the unit tests of
// handler_context.hpp compare it with the built-in Read.

#include <cstddef>
#include <cstdint>
#include <span>

#include <nvmekit/contracts/block_backend.hpp>
#include <nvmekit/contracts/handler_context.hpp>
#include <nvmekit/contracts/tracer.hpp>
#include <nvmekit/core/dispatcher.hpp>
#include <nvmekit/data/host_ranges.hpp>
#include <nvmekit/spec/queue_entries.hpp>
#include <nvmekit/spec/status.hpp>
#include <nvmekit/transport/tcp/crc32c.hpp>

namespace nvmekit_examples {

/// I/O vendor-specific range 80h-FFh. Bits 01:00 of an opcode give its data transfer direction
/// (Base 2.0 Figure 28): 10b, controller to host.
inline constexpr std::uint8_t read_checksummed_opcode = 0x82;
static_assert(read_checksummed_opcode >= 0x80, "an I/O vendor-specific opcode");
static_assert((read_checksummed_opcode & 0x3U) == 0x2U,
              "opcode bits 01:00 = 10b: data from controller to host");

/// The fields of Read Checksummed: CDW10/11 SLBA, CDW12 bits 15:00 NLB (0's based); the data
/// pointer describes the blocks' data. Other CDW12 bits are ignored.
struct read_checksummed_fields {
    std::uint64_t starting_lba = 0;
    std::uint32_t block_count = 0; ///< NLB + 1

    [[nodiscard]] static read_checksummed_fields
    decode(const nvmekit::spec::submission_queue_entry& sqe) noexcept
    {
        return {(std::uint64_t{sqe.cdw11} << 32U) | sqe.cdw10, (sqe.cdw12 & 0xffffU) + 1U};
    }
    void encode(nvmekit::spec::submission_queue_entry& sqe) const noexcept
    {
        sqe.cdw10 = static_cast<std::uint32_t>(starting_lba);
        sqe.cdw11 = static_cast<std::uint32_t>(starting_lba >> 32U);
        sqe.cdw12 = (block_count - 1U) & 0xffffU;
    }
};

/// What a host submits: Read Checksummed of `blocks` blocks at `slba` of namespace `nsid`, into
/// the data pointer `dptr`.
[[nodiscard]] inline nvmekit::spec::submission_queue_entry
read_checksummed_command(std::uint32_t nsid, std::uint64_t slba, std::uint32_t blocks,
                         nvmekit::spec::data_pointer dptr = {}) noexcept
{
    nvmekit::spec::submission_queue_entry sqe{};
    sqe.cdw0.set(nvmekit::spec::command_dword0::opc, read_checksummed_opcode);
    sqe.nsid = nsid;
    read_checksummed_fields{slba, blocks}.encode(sqe);
    sqe.dptr = dptr;
    return sqe;
}

template <nvmekit::HandlerContext Controller>
nvmekit::command_result read_checksummed_done(Controller& c, typename Controller::command& cmd);

/// Read Checksummed (82h): a handler of the I/O table. Everything before acquire_staging only
/// reads; when no staging buffer is free the command waits and this handler runs again from the
/// start.
template <nvmekit::HandlerContext Controller>
nvmekit::command_result read_checksummed(Controller& c, typename Controller::command& cmd)
{
    namespace spec = nvmekit::spec;
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
    const std::uint32_t checksum = nvmekit::transport::tcp::crc32c_of(data);
    if (const auto status = c.write_host(cmd, cmd.staging->ranges, data); !status.is_success()) {
        return command_result::failure(status);
    }
    c.trace_command(nvmekit::trace_event::data_prepared, cmd, bytes);
    c.count_read(cmd, bytes);
    return command_result::success(checksum);
}

/// The traits `Base` with Read Checksummed in the I/O table. It reads only, so its effects are
/// none.
template <typename Base>
struct with_read_checksummed : Base {
    template <typename Table>
    static constexpr Table io_commands(Table table)
    {
        return Base::io_commands(table).with(read_checksummed_opcode,
                                             &read_checksummed<typename Table::context_type>,
                                             nvmekit::effects::none());
    }
};

} // namespace nvmekit_examples
