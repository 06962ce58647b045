#pragma once
/// Formatters for commands and queue entries:
///
///     READ cid=5 nsid=1 slba=0x10 nlb=8 prp1=0x1000 prp2=0x0
///     CREATE_IO_CQ cid=2 qid=1 qsize=1024 pc=1 ien=1 iv=1 prp1=0x7f000 prp2=0x0
///     GET_LOG_PAGE cid=3 nsid=0xffffffff lid=0x02 numd=128 offset=0 rae=0 prp1=0x2000 prp2=0x0
///
/// `admin_command{entry}` and `io_command{entry}` print the opcode name, `cid`, `nsid`, the decoded
/// fields of the command, then the data pointer:
/// - `nsid` is printed for commands that use the NSID field, and for the others only when it is
///   non-zero (it is reserved there, so worth seeing); FFFFFFFFh prints as `0xffffffff`.
/// - Counts print 1-based, in the unit the name says: `nlb` and `nr` are numbers of blocks and
///   ranges, `qsize` is entries, `numd` is dwords (QSIZE + 1, NLB + 1, ...). Offsets are bytes
///   (Get Log Page: an index when `ot=1`). Addresses, LBAs, raw dwords and the identifiers the
///   spec writes in hex (CNS, LID, FID) print in hex.
/// - Each command always prints the fields that say what it does; optional fields (UUID index, LSP,
///   LSI, NVM set, directives, protection information, tags, hints) print only when non-zero.
///   Admin flags print as `name=0|1`; I/O flags print as a bare word when set (` fua`, ` lr`).
/// - The data pointer prints for commands that transfer data (opcode bits 01:00 non-zero) or whose
///   PRP1 holds a queue, as `prp1=0x.. prp2=0x..`, or when CDW0.PSDT selects SGLs as the SGL
///   descriptor `sgl.addr=0x.. sgl.len=N sgl.type=0xT` (descriptor type, identifier bits 07:04).
///   Doorbell Buffer Config prints its two buffers by name instead. A non-zero FUSE prints as
///   ` fuse=N` and a non-zero MPTR as ` mptr=0x..`, just before the data pointer.
/// - Opcodes without a view print their dwords raw: `SANITIZE cid=.. nsid=.. cdw10=0x.. ..
///   cdw15=0x.. prp1=..`; unnamed opcodes print `ADMIN opc=0xc1 ...` or `IO opc=0x85 ...`.
///
/// `submission_queue_entry` prints raw (`opc=0x02 cid=5 nsid=1 cdw10=0x10 ... cdw15=0x0 prp1=..`)
/// and `completion_queue_entry` as `cid=5 sqid=1 sqhd=3 p=1 dw0=0x0 dw1=0x0 status=<status>`.

#include <cstdint>
#include <string_view>

#include <nvmekit/format/common.hpp>
#include <nvmekit/format/status.hpp>
#include <nvmekit/spec/commands.hpp>
#include <nvmekit/spec/opcodes.hpp>
#include <nvmekit/spec/queue_entries.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace detail::command_format {

inline constexpr std::uint32_t broadcast_nsid = 0xffffffff;

template <typename Out>
Out nsid(Out out, std::uint32_t value)
{
    return value == broadcast_nsid ? fmt::format_to(out, " nsid=0x{:x}", value)
                                   : fmt::format_to(out, " nsid={}", value);
}

/// ` nsid=..` for a command that uses NSID, or one that does not but carries a non-zero value.
template <typename Out>
Out nsid_if(Out out, const spec::submission_queue_entry& entry, bool command_uses_nsid)
{
    return command_uses_nsid || entry.nsid != 0 ? nsid(out, entry.nsid) : out;
}

template <typename Out>
Out flag(Out out, std::string_view name, bool set)
{
    return set ? fmt::format_to(out, " {}", name) : out;
}

template <typename Out>
Out decimal_if(Out out, std::string_view name, std::uint64_t value)
{
    return value != 0 ? fmt::format_to(out, " {}={}", name, value) : out;
}

template <typename Out>
Out hex_if(Out out, std::string_view name, std::uint64_t value)
{
    return value != 0 ? fmt::format_to(out, " {}=0x{:x}", name, value) : out;
}

/// The data pointer as two PRP entries, or as the SGL descriptor it holds when PSDT selects SGLs
/// (address bytes 07:00, length bytes 11:08, identifier byte 15).
template <typename Out>
Out data_pointer(Out out, const spec::submission_queue_entry& entry)
{
    if (entry.pointer_type() == spec::data_pointer_type::prp) {
        return fmt::format_to(out, " prp1=0x{:x} prp2=0x{:x}", entry.dptr.prp1, entry.dptr.prp2);
    }
    const auto length = static_cast<std::uint32_t>(entry.dptr.prp2);
    const auto identifier = static_cast<std::uint8_t>(entry.dptr.prp2 >> 56);
    return fmt::format_to(out, " sgl.addr=0x{:x} sgl.len={} sgl.type=0x{:x}", entry.dptr.prp1, length,
                          static_cast<unsigned>(identifier >> 4));
}

/// FUSE, MPTR and the data pointer (when the command moves data or points at a queue).
template <typename Out>
Out trailer(Out out, const spec::submission_queue_entry& entry, bool show_data_pointer)
{
    const auto fuse = entry.cdw0.get(spec::command_dword0::fuse);
    if (fuse != spec::fused_operation::normal) {
        out = fmt::format_to(out, " fuse={}", static_cast<unsigned>(fuse));
    }
    out = hex_if(out, "mptr", entry.mptr);
    return show_data_pointer ? data_pointer(out, entry) : out;
}

/// Whether the opcode moves data (bits 01:00), which is when its data pointer is worth printing.
[[nodiscard]] constexpr bool transfers_data(std::uint8_t opcode) noexcept
{
    return spec::transfer_direction(opcode) != spec::data_transfer::none;
}

/// CDW10 through CDW15 in hex, for commands without a view.
template <typename Out>
Out raw_dwords(Out out, const spec::submission_queue_entry& entry)
{
    return fmt::format_to(out,
                          " cdw10=0x{:x} cdw11=0x{:x} cdw12=0x{:x} cdw13=0x{:x} cdw14=0x{:x} cdw15=0x{:x}",
                          entry.cdw10, entry.cdw11, entry.cdw12, entry.cdw13, entry.cdw14, entry.cdw15);
}

/// A command without a view: name (or `ADMIN opc=0x..`), cid, nsid, raw dwords, data pointer.
template <typename Out>
Out raw_command(Out out, const spec::submission_queue_entry& entry, std::string_view name,
                std::string_view queue)
{
    out = name.empty()
              ? fmt::format_to(out, "{} opc=0x{:02x} cid={}", queue, entry.opcode(), entry.command_id())
              : fmt::format_to(out, "{} cid={}", name, entry.command_id());
    out = nsid(out, entry.nsid);
    out = raw_dwords(out, entry);
    return trailer(out, entry, true);
}

template <typename Out, spec::admin_opcode Opcode>
Out fields(Out out, const spec::delete_io_queue_view<Opcode>& cmd)
{
    return fmt::format_to(out, " qid={}", cmd.queue_id);
}

template <typename Out>
Out fields(Out out, const spec::create_io_sq_view& cmd)
{
    out = fmt::format_to(out, " qid={} qsize={} pc={:d} qprio={} cqid={}", cmd.queue_id, cmd.queue_size,
                         cmd.physically_contiguous, static_cast<unsigned>(cmd.priority), cmd.cq_id);
    return decimal_if(out, "nvmsetid", cmd.nvm_set_id);
}

template <typename Out>
Out fields(Out out, const spec::get_log_page_view& cmd)
{
    out = fmt::format_to(out, " lid=0x{:02x} numd={} offset={} rae={:d}",
                         static_cast<unsigned>(cmd.log_page_id), cmd.dword_count, cmd.offset,
                         cmd.retain_async_event);
    out = hex_if(out, "lsp", cmd.log_specific_field);
    out = decimal_if(out, "lsi", cmd.log_specific_id);
    out = decimal_if(out, "ot", cmd.offset_is_index ? 1U : 0U);
    out = decimal_if(out, "uuid", cmd.uuid_index);
    return decimal_if(out, "csi", static_cast<unsigned>(cmd.command_set_id));
}

template <typename Out>
Out fields(Out out, const spec::create_io_cq_view& cmd)
{
    return fmt::format_to(out, " qid={} qsize={} pc={:d} ien={:d} iv={}", cmd.queue_id, cmd.queue_size,
                          cmd.physically_contiguous, cmd.interrupts_enabled, cmd.interrupt_vector);
}

template <typename Out>
Out fields(Out out, const spec::identify_view& cmd)
{
    out = fmt::format_to(out, " cns=0x{:02x} cntid={} csi={}", static_cast<unsigned>(cmd.cns),
                         cmd.controller_id, static_cast<unsigned>(cmd.command_set_id));
    out = decimal_if(out, "cnssid", cmd.cns_specific_id);
    return decimal_if(out, "uuid", cmd.uuid_index);
}

template <typename Out>
Out fields(Out out, const spec::abort_view& cmd)
{
    return fmt::format_to(out, " sqid={} abort_cid={}", cmd.sq_id, cmd.command_id);
}

template <typename Out>
Out fields(Out out, const spec::set_features_view& cmd)
{
    out = fmt::format_to(out, " fid=0x{:02x} sv={:d} cdw11=0x{:x}", static_cast<unsigned>(cmd.feature_id),
                         cmd.save, cmd.cdw11);
    out = hex_if(out, "cdw12", cmd.cdw12);
    out = hex_if(out, "cdw13", cmd.cdw13);
    out = hex_if(out, "cdw15", cmd.cdw15);
    return decimal_if(out, "uuid", cmd.uuid_index);
}

template <typename Out>
Out fields(Out out, const spec::get_features_view& cmd)
{
    out = fmt::format_to(out, " fid=0x{:02x} sel={} cdw11=0x{:x}", static_cast<unsigned>(cmd.feature_id),
                         static_cast<unsigned>(cmd.select), cmd.cdw11);
    return decimal_if(out, "uuid", cmd.uuid_index);
}

template <typename Out>
Out fields(Out out, const spec::async_event_request_view& /*cmd*/)
{
    return out;
}

template <typename Out>
Out fields(Out out, const spec::namespace_management_view& cmd)
{
    return fmt::format_to(out, " sel={} csi={}", static_cast<unsigned>(cmd.select),
                          static_cast<unsigned>(cmd.command_set_id));
}

template <typename Out>
Out fields(Out out, const spec::firmware_commit_view& cmd)
{
    out = fmt::format_to(out, " fs={} ca={}", cmd.slot, static_cast<unsigned>(cmd.action));
    return decimal_if(out, "bpid", cmd.boot_partition_id);
}

template <typename Out>
Out fields(Out out, const spec::firmware_image_download_view& cmd)
{
    return fmt::format_to(out, " numd={} offset={}", cmd.dword_count, cmd.offset_bytes);
}

template <typename Out>
Out fields(Out out, const spec::namespace_attachment_view& cmd)
{
    return fmt::format_to(out, " sel={}", static_cast<unsigned>(cmd.select));
}

template <typename Out>
Out fields(Out out, const spec::keep_alive_view& /*cmd*/)
{
    return out;
}

template <typename Out>
Out fields(Out out, const spec::doorbell_buffer_config_view& cmd)
{
    return fmt::format_to(out, " shadow=0x{:x} eventidx=0x{:x}", cmd.shadow_doorbell_address,
                          cmd.eventidx_address);
}

template <typename Out>
Out fields(Out out, const spec::format_nvm_view& cmd)
{
    return fmt::format_to(out, " lbaf={} mset={:d} pi={} pil={:d} ses={}", cmd.format_index,
                          cmd.metadata_in_extended_lba, static_cast<unsigned>(cmd.protection_type),
                          cmd.protection_info_first, static_cast<unsigned>(cmd.secure_erase));
}

template <typename Out>
Out lba_range(Out out, std::uint64_t starting_lba, std::uint32_t block_count)
{
    return fmt::format_to(out, " slba=0x{:x} nlb={}", starting_lba, block_count);
}

/// The flags and protection information that Read, Write, Compare, Verify and Write Zeroes share.
template <typename Out, typename View>
Out lba_flags(Out out, const View& cmd)
{
    out = flag(out, "fua", cmd.force_unit_access);
    out = flag(out, "lr", cmd.limited_retry);
    out = flag(out, "stc", cmd.storage_tag_check);
    return hex_if(out, "prinfo", cmd.prinfo.raw);
}

template <typename Out>
Out tags(Out out, std::uint32_t reference_tag, std::uint16_t app_tag, std::uint16_t app_tag_mask)
{
    out = hex_if(out, "reftag", reference_tag);
    out = hex_if(out, "apptag", app_tag);
    return hex_if(out, "appmask", app_tag_mask);
}

template <typename Out>
Out fields(Out out, const spec::read_view& cmd)
{
    out = lba_range(out, cmd.starting_lba, cmd.block_count);
    out = lba_flags(out, cmd);
    out = hex_if(out, "dsm", cmd.dsm.raw);
    return tags(out, cmd.reference_tag, cmd.app_tag, cmd.app_tag_mask);
}

template <typename Out>
Out fields(Out out, const spec::write_view& cmd)
{
    out = lba_range(out, cmd.starting_lba, cmd.block_count);
    out = lba_flags(out, cmd);
    out = hex_if(out, "dsm", cmd.dsm.raw);
    out = decimal_if(out, "dtype", cmd.directive_type);
    out = decimal_if(out, "dspec", cmd.directive_specific);
    return tags(out, cmd.reference_tag, cmd.app_tag, cmd.app_tag_mask);
}

template <typename Out, spec::nvm_opcode Opcode>
Out fields(Out out, const spec::lba_check_view<Opcode>& cmd)
{
    out = lba_range(out, cmd.starting_lba, cmd.block_count);
    out = lba_flags(out, cmd);
    return tags(out, cmd.reference_tag, cmd.app_tag, cmd.app_tag_mask);
}

template <typename Out>
Out fields(Out out, const spec::write_uncorrectable_view& cmd)
{
    return lba_range(out, cmd.starting_lba, cmd.block_count);
}

template <typename Out>
Out fields(Out out, const spec::write_zeroes_view& cmd)
{
    out = lba_range(out, cmd.starting_lba, cmd.block_count);
    out = flag(out, "deac", cmd.deallocate);
    out = lba_flags(out, cmd);
    return tags(out, cmd.reference_tag, cmd.app_tag, cmd.app_tag_mask);
}

template <typename Out>
Out fields(Out out, const spec::flush_view& /*cmd*/)
{
    return out;
}

template <typename Out>
Out fields(Out out, const spec::dataset_management_view& cmd)
{
    out = fmt::format_to(out, " nr={}", cmd.range_count);
    out = flag(out, "idr", cmd.integral_read);
    out = flag(out, "idw", cmd.integral_write);
    return flag(out, "ad", cmd.deallocate);
}

template <typename Out>
Out fields(Out out, const spec::copy_view& cmd)
{
    out = fmt::format_to(out, " sdlba=0x{:x} nr={} desfmt={}", cmd.destination_lba, cmd.range_count,
                         cmd.descriptor_format);
    out = flag(out, "fua", cmd.force_unit_access);
    out = flag(out, "lr", cmd.limited_retry);
    out = flag(out, "stcw", cmd.storage_tag_check_write);
    out = hex_if(out, "prinfor", cmd.prinfo_read.raw);
    out = hex_if(out, "prinfow", cmd.prinfo_write.raw);
    out = decimal_if(out, "dtype", cmd.directive_type);
    out = decimal_if(out, "dspec", cmd.directive_specific);
    return tags(out, cmd.reference_tag, cmd.app_tag, cmd.app_tag_mask);
}

/// Name, cid, nsid, the fields of `View`, then FUSE, MPTR and the data pointer.
template <typename View, typename Out>
Out command(Out out, const spec::submission_queue_entry& entry, std::string_view name, bool uses_nsid,
            bool shows_data_pointer)
{
    out = fmt::format_to(out, "{} cid={}", name, entry.command_id());
    out = nsid_if(out, entry, uses_nsid);
    out = fields(out, View::decode(entry));
    return trailer(out, entry, shows_data_pointer);
}

template <typename Out>
Out admin(Out out, const spec::submission_queue_entry& entry)
{
    using enum spec::admin_opcode;
    const auto opcode = static_cast<spec::admin_opcode>(entry.opcode());
    const auto name = spec::name(opcode);
    const bool data = transfers_data(entry.opcode());
    switch (opcode) {
    case delete_io_sq: return command<spec::delete_io_sq_view>(out, entry, name, false, data);
    case create_io_sq: return command<spec::create_io_sq_view>(out, entry, name, false, true);
    case get_log_page: return command<spec::get_log_page_view>(out, entry, name, true, data);
    case delete_io_cq: return command<spec::delete_io_cq_view>(out, entry, name, false, data);
    case create_io_cq: return command<spec::create_io_cq_view>(out, entry, name, false, true);
    case identify: return command<spec::identify_view>(out, entry, name, true, data);
    case abort: return command<spec::abort_view>(out, entry, name, false, data);
    case set_features: return command<spec::set_features_view>(out, entry, name, true, data);
    case get_features: return command<spec::get_features_view>(out, entry, name, true, data);
    case async_event_request: return command<spec::async_event_request_view>(out, entry, name, false, data);
    case namespace_management: return command<spec::namespace_management_view>(out, entry, name, true, data);
    case firmware_commit: return command<spec::firmware_commit_view>(out, entry, name, false, data);
    case firmware_image_download:
        return command<spec::firmware_image_download_view>(out, entry, name, false, data);
    case namespace_attachment: return command<spec::namespace_attachment_view>(out, entry, name, true, data);
    case keep_alive: return command<spec::keep_alive_view>(out, entry, name, false, data);
    case doorbell_buffer_config:
        return command<spec::doorbell_buffer_config_view>(out, entry, name, false, false);
    case format_nvm: return command<spec::format_nvm_view>(out, entry, name, true, data);
    default: return raw_command(out, entry, name, "ADMIN");
    }
}

template <typename Out>
Out io(Out out, const spec::submission_queue_entry& entry)
{
    using enum spec::nvm_opcode;
    const auto opcode = static_cast<spec::nvm_opcode>(entry.opcode());
    const auto name = spec::name(opcode);
    const bool data = transfers_data(entry.opcode());
    switch (opcode) {
    case flush: return command<spec::flush_view>(out, entry, name, true, data);
    case write: return command<spec::write_view>(out, entry, name, true, data);
    case read: return command<spec::read_view>(out, entry, name, true, data);
    case write_uncorrectable: return command<spec::write_uncorrectable_view>(out, entry, name, true, data);
    case compare: return command<spec::compare_view>(out, entry, name, true, data);
    case write_zeroes: return command<spec::write_zeroes_view>(out, entry, name, true, data);
    case dataset_management: return command<spec::dataset_management_view>(out, entry, name, true, data);
    case verify: return command<spec::verify_view>(out, entry, name, true, data);
    case copy: return command<spec::copy_view>(out, entry, name, true, data);
    default: return raw_command(out, entry, name, "IO");
    }
}

} // namespace detail::command_format
NVMEKIT_END_NAMESPACE

/// An admin command: `CREATE_IO_CQ cid=2 qid=1 qsize=1024 pc=1 ien=1 iv=1 prp1=0x7f000 prp2=0x0`.
template <>
struct fmt::formatter<nvmekit::spec::admin_command> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(const nvmekit::spec::admin_command& command, FormatContext& ctx) const -> decltype(ctx.out())
    {
        return nvmekit::detail::command_format::admin(ctx.out(), command.entry);
    }
};

/// An NVM command set I/O command: `READ cid=5 nsid=1 slba=0x10 nlb=8 prp1=0x1000 prp2=0x0`, where
/// `nlb` is the number of blocks (NLB + 1).
template <>
struct fmt::formatter<nvmekit::spec::io_command> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(const nvmekit::spec::io_command& command, FormatContext& ctx) const -> decltype(ctx.out())
    {
        return nvmekit::detail::command_format::io(ctx.out(), command.entry);
    }
};

/// A submission queue entry, raw: `opc=0x02 cid=5 nsid=1 cdw10=0x10 cdw11=0x0 cdw12=0x7 cdw13=0x0
/// cdw14=0x0 cdw15=0x0 prp1=0x1000 prp2=0x0`. A non-zero FUSE or PSDT prints after `opc`, non-zero
/// CDW2, CDW3 and MPTR after `cdw15`; the data pointer prints as SGL when PSDT says so.
template <>
struct fmt::formatter<nvmekit::spec::submission_queue_entry> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(const nvmekit::spec::submission_queue_entry& entry, FormatContext& ctx) const
        -> decltype(ctx.out())
    {
        namespace command_format = nvmekit::detail::command_format;
        using nvmekit::spec::command_dword0;
        auto out = fmt::format_to(ctx.out(), "opc=0x{:02x}", entry.opcode());
        out = command_format::decimal_if(out, "fuse",
                                         static_cast<unsigned>(entry.cdw0.get(command_dword0::fuse)));
        out = command_format::decimal_if(out, "psdt",
                                         static_cast<unsigned>(entry.cdw0.get(command_dword0::psdt)));
        out = fmt::format_to(out, " cid={}", entry.command_id());
        out = command_format::nsid(out, entry.nsid);
        out = command_format::raw_dwords(out, entry);
        out = command_format::hex_if(out, "cdw2", entry.cdw2);
        out = command_format::hex_if(out, "cdw3", entry.cdw3);
        out = command_format::hex_if(out, "mptr", entry.mptr);
        return command_format::data_pointer(out, entry);
    }
};

/// A completion queue entry: `cid=5 sqid=1 sqhd=3 p=1 dw0=0x0 dw1=0x0 status=Generic/Successful
/// Completion (0x00)`.
template <>
struct fmt::formatter<nvmekit::spec::completion_queue_entry> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(const nvmekit::spec::completion_queue_entry& entry, FormatContext& ctx) const
        -> decltype(ctx.out())
    {
        return fmt::format_to(ctx.out(), "cid={} sqid={} sqhd={} p={:d} dw0=0x{:x} dw1=0x{:x} status={}",
                              entry.cid, entry.sq_id, entry.sq_head, entry.phase(), entry.dw0, entry.dw1,
                              entry.status());
    }
};
