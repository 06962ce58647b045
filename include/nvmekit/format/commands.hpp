#pragma once
/// Formatters for commands, their dwords and queue entries:
///
///     READ cid=5 nsid=1 slba=0x10 nlb=8 prp1=0x1000 prp2=0x0
///     CREATE_IO_CQ cid=2 qid=1 qsize=1024 pc=1 ien=1 iv=1 prp1=0x7f000 prp2=0x0
///     GET_LOG_PAGE cid=3 nsid=0xffffffff lid=0x02 numd=128 offset=0 rae=0 prp1=0x2000 prp2=0x0
///
/// Each command view prints its decoded fields (`read_view`: `slba=0x10 nlb=8`; a view without
/// fields, such as `flush_view`, prints nothing). `admin_command{entry}` and `io_command{entry}`
/// print the opcode name, `cid`, `nsid`, what the view's formatter prints, then the data pointer:
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
/// A command dword type (`rw_cdw12`, `create_io_queue_cdw10`, ...) prints every field, in bit
/// order, as `name=value` with the spec's abbreviation for the name and the raw value as stored:
/// 0-based counts stay 0-based (`nlb=7` is eight blocks) and enumerated fields print their number.
/// The enumerations print their names (`urgent`, `replace_activate_on_reset`), or
/// `reserved (0x04)` for a reserved value.
///
/// `submission_queue_entry` prints raw (`opc=0x02 cid=5 nsid=1 cdw10=0x10 ... cdw15=0x0 prp1=..`)
/// and `completion_queue_entry` as `cid=5 sqid=1 sqhd=3 p=1 dw0=0x0 dw1=0x0 status=<status>`.

#include <cstdint>
#include <string_view>
#include <type_traits>

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
    return fmt::format_to(out, "qid={}", cmd.queue_id);
}

template <typename Out>
Out fields(Out out, const spec::create_io_sq_view& cmd)
{
    out = fmt::format_to(out, "qid={} qsize={} pc={:d} qprio={} cqid={}", cmd.queue_id, cmd.queue_size,
                         cmd.physically_contiguous, static_cast<unsigned>(cmd.priority), cmd.cq_id);
    return decimal_if(out, "nvmsetid", cmd.nvm_set_id);
}

template <typename Out>
Out fields(Out out, const spec::get_log_page_view& cmd)
{
    out =
        fmt::format_to(out, "lid=0x{:02x} numd={} offset={} rae={:d}", static_cast<unsigned>(cmd.log_page_id),
                       cmd.dword_count, cmd.offset, cmd.retain_async_event);
    out = hex_if(out, "lsp", cmd.log_specific_field);
    out = decimal_if(out, "lsi", cmd.log_specific_id);
    out = decimal_if(out, "ot", cmd.offset_is_index ? 1U : 0U);
    out = decimal_if(out, "uuid", cmd.uuid_index);
    return decimal_if(out, "csi", static_cast<unsigned>(cmd.command_set_id));
}

template <typename Out>
Out fields(Out out, const spec::create_io_cq_view& cmd)
{
    return fmt::format_to(out, "qid={} qsize={} pc={:d} ien={:d} iv={}", cmd.queue_id, cmd.queue_size,
                          cmd.physically_contiguous, cmd.interrupts_enabled, cmd.interrupt_vector);
}

template <typename Out>
Out fields(Out out, const spec::identify_view& cmd)
{
    out = fmt::format_to(out, "cns=0x{:02x} cntid={} csi={}", static_cast<unsigned>(cmd.cns),
                         cmd.controller_id, static_cast<unsigned>(cmd.command_set_id));
    out = decimal_if(out, "cnssid", cmd.cns_specific_id);
    return decimal_if(out, "uuid", cmd.uuid_index);
}

template <typename Out>
Out fields(Out out, const spec::abort_view& cmd)
{
    return fmt::format_to(out, "sqid={} abort_cid={}", cmd.sq_id, cmd.command_id);
}

template <typename Out>
Out fields(Out out, const spec::set_features_view& cmd)
{
    out = fmt::format_to(out, "fid=0x{:02x} sv={:d} cdw11=0x{:x}", static_cast<unsigned>(cmd.feature_id),
                         cmd.save, cmd.cdw11);
    out = hex_if(out, "cdw12", cmd.cdw12);
    out = hex_if(out, "cdw13", cmd.cdw13);
    out = hex_if(out, "cdw15", cmd.cdw15);
    return decimal_if(out, "uuid", cmd.uuid_index);
}

template <typename Out>
Out fields(Out out, const spec::get_features_view& cmd)
{
    out = fmt::format_to(out, "fid=0x{:02x} sel={} cdw11=0x{:x}", static_cast<unsigned>(cmd.feature_id),
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
    return fmt::format_to(out, "sel={} csi={}", static_cast<unsigned>(cmd.select),
                          static_cast<unsigned>(cmd.command_set_id));
}

template <typename Out>
Out fields(Out out, const spec::firmware_commit_view& cmd)
{
    out = fmt::format_to(out, "fs={} ca={}", cmd.slot, static_cast<unsigned>(cmd.action));
    return decimal_if(out, "bpid", cmd.boot_partition_id);
}

template <typename Out>
Out fields(Out out, const spec::firmware_image_download_view& cmd)
{
    return fmt::format_to(out, "numd={} offset={}", cmd.dword_count, cmd.offset_bytes);
}

template <typename Out>
Out fields(Out out, const spec::namespace_attachment_view& cmd)
{
    return fmt::format_to(out, "sel={}", static_cast<unsigned>(cmd.select));
}

template <typename Out>
Out fields(Out out, const spec::get_lba_status_view& cmd)
{
    return fmt::format_to(out, "slba={:#x} mndw={} rl={} atype=0x{:02x}", cmd.starting_lba, cmd.dword_count,
                          cmd.range_length, static_cast<unsigned>(cmd.action));
}

/// `nlsd=2 cmpc=complete`.
template <typename Out>
Out fields(Out out, const spec::lba_status_list_header& header)
{
    return fmt::format_to(out, "nlsd={} cmpc={}", header.nlsd, header.cmpc);
}

/// `dslba=0x10 nlb=8 status=unrecoverable`.
template <typename Out>
Out fields(Out out, const spec::lba_status_descriptor& descriptor)
{
    return fmt::format_to(out, "dslba={:#x} nlb={} status={}", descriptor.dslba, descriptor.nlb,
                          descriptor.status);
}

template <typename Out>
Out fields(Out out, const spec::keep_alive_view& /*cmd*/)
{
    return out;
}

template <typename Out>
Out fields(Out out, const spec::doorbell_buffer_config_view& cmd)
{
    return fmt::format_to(out, "shadow=0x{:x} eventidx=0x{:x}", cmd.shadow_doorbell_address,
                          cmd.eventidx_address);
}

template <typename Out>
Out fields(Out out, const spec::format_nvm_view& cmd)
{
    return fmt::format_to(out, "lbaf={} mset={:d} pi={} pil={:d} ses={}", cmd.format_index,
                          cmd.metadata_in_extended_lba, static_cast<unsigned>(cmd.protection_type),
                          cmd.protection_info_first, static_cast<unsigned>(cmd.secure_erase));
}

template <typename Out>
Out lba_range(Out out, std::uint64_t starting_lba, std::uint32_t block_count)
{
    return fmt::format_to(out, "slba=0x{:x} nlb={}", starting_lba, block_count);
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
    out = fmt::format_to(out, "nr={}", cmd.range_count);
    out = flag(out, "idr", cmd.integral_read);
    out = flag(out, "idw", cmd.integral_write);
    return flag(out, "ad", cmd.deallocate);
}

template <typename Out>
Out fields(Out out, const spec::copy_view& cmd)
{
    out = fmt::format_to(out, "sdlba=0x{:x} nr={} desfmt={}", cmd.destination_lba, cmd.range_count,
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

template <typename Out>
Out fields(Out out, const spec::dataset_management_range& range)
{
    return fmt::format_to(out, "slba=0x{:x} nlb={} cattr=0x{:x}", range.starting_lba, range.block_count,
                          range.context_attributes.raw);
}

template <typename Out>
Out fields(Out out, const spec::copy_source_range& range)
{
    out = lba_range(out, range.starting_lba, range.block_count());
    return tags(out, range.reference_tag, range.app_tag, range.app_tag_mask);
}

// The command dwords: every field, in bit order, with the raw value as stored (0-based counts
// stay 0-based, enumerated fields print their number).

template <typename Out>
Out fields(Out out, spec::uuid_index_cdw14 cdw)
{
    return fmt::format_to(out, "uuid={}", cdw.get(cdw.uuid_index));
}

template <typename Out>
Out fields(Out out, spec::delete_io_queue_cdw10 cdw)
{
    return fmt::format_to(out, "qid={}", cdw.get(cdw.qid));
}

template <typename Out>
Out fields(Out out, spec::create_io_queue_cdw10 cdw)
{
    return fmt::format_to(out, "qid={} qsize={}", cdw.get(cdw.qid), cdw.get(cdw.qsize));
}

template <typename Out>
Out fields(Out out, spec::create_io_sq_cdw11 cdw)
{
    return fmt::format_to(out, "pc={:d} qprio={} cqid={}", cdw.get(cdw.pc),
                          static_cast<unsigned>(cdw.get(cdw.qprio)), cdw.get(cdw.cqid));
}

template <typename Out>
Out fields(Out out, spec::create_io_sq_cdw12 cdw)
{
    return fmt::format_to(out, "nvmsetid={}", cdw.get(cdw.nvmsetid));
}

template <typename Out>
Out fields(Out out, spec::get_log_page_cdw10 cdw)
{
    return fmt::format_to(out, "lid=0x{:02x} lsp=0x{:x} rae={:d} numdl={}",
                          static_cast<unsigned>(cdw.get(cdw.lid)), cdw.get(cdw.lsp), cdw.get(cdw.rae),
                          cdw.get(cdw.numdl));
}

template <typename Out>
Out fields(Out out, spec::get_log_page_cdw11 cdw)
{
    return fmt::format_to(out, "numdu={} lsi={}", cdw.get(cdw.numdu), cdw.get(cdw.lsi));
}

template <typename Out>
Out fields(Out out, spec::get_log_page_cdw14 cdw)
{
    return fmt::format_to(out, "uuid={} ot={:d} csi={}", cdw.get(cdw.uuid_index), cdw.get(cdw.ot),
                          static_cast<unsigned>(cdw.get(cdw.csi)));
}

template <typename Out>
Out fields(Out out, spec::create_io_cq_cdw11 cdw)
{
    return fmt::format_to(out, "pc={:d} ien={:d} iv={}", cdw.get(cdw.pc), cdw.get(cdw.ien), cdw.get(cdw.iv));
}

template <typename Out>
Out fields(Out out, spec::identify_cdw10 cdw)
{
    return fmt::format_to(out, "cns=0x{:02x} cntid={}", static_cast<unsigned>(cdw.get(cdw.cns)),
                          cdw.get(cdw.cntid));
}

template <typename Out>
Out fields(Out out, spec::identify_cdw11 cdw)
{
    return fmt::format_to(out, "cnssid={} csi={}", cdw.get(cdw.cns_specific_id),
                          static_cast<unsigned>(cdw.get(cdw.csi)));
}

template <typename Out>
Out fields(Out out, spec::abort_cdw10 cdw)
{
    return fmt::format_to(out, "sqid={} cid={}", cdw.get(cdw.sqid), cdw.get(cdw.cid));
}

template <typename Out>
Out fields(Out out, spec::set_features_cdw10 cdw)
{
    return fmt::format_to(out, "fid=0x{:02x} sv={:d}", static_cast<unsigned>(cdw.get(cdw.fid)),
                          cdw.get(cdw.sv));
}

template <typename Out>
Out fields(Out out, spec::get_features_cdw10 cdw)
{
    return fmt::format_to(out, "fid=0x{:02x} sel={}", static_cast<unsigned>(cdw.get(cdw.fid)),
                          static_cast<unsigned>(cdw.get(cdw.sel)));
}

template <typename Out>
Out fields(Out out, spec::namespace_management_cdw10 cdw)
{
    return fmt::format_to(out, "sel={}", static_cast<unsigned>(cdw.get(cdw.sel)));
}

template <typename Out>
Out fields(Out out, spec::namespace_management_cdw11 cdw)
{
    return fmt::format_to(out, "csi={}", static_cast<unsigned>(cdw.get(cdw.csi)));
}

template <typename Out>
Out fields(Out out, spec::get_lba_status_cdw13 cdw)
{
    return fmt::format_to(out, "rl={} atype={}", cdw.get(cdw.rl), static_cast<unsigned>(cdw.get(cdw.atype)));
}

template <typename Out>
Out fields(Out out, spec::firmware_commit_cdw10 cdw)
{
    return fmt::format_to(out, "fs={} ca={} bpid={}", cdw.get(cdw.fs), static_cast<unsigned>(cdw.get(cdw.ca)),
                          cdw.get(cdw.bpid));
}

template <typename Out>
Out fields(Out out, spec::namespace_attachment_cdw10 cdw)
{
    return fmt::format_to(out, "sel={}", static_cast<unsigned>(cdw.get(cdw.sel)));
}

template <typename Out>
Out fields(Out out, spec::format_nvm_cdw10 cdw)
{
    return fmt::format_to(out, "lbafl={} mset={:d} pi={} pil={:d} ses={} lbafu={}", cdw.get(cdw.lbafl),
                          cdw.get(cdw.mset), static_cast<unsigned>(cdw.get(cdw.pi)), cdw.get(cdw.pil),
                          static_cast<unsigned>(cdw.get(cdw.ses)), cdw.get(cdw.lbafu));
}

template <typename Out>
Out fields(Out out, spec::protection_info_flags flags)
{
    return fmt::format_to(out, "prchk_reftag={:d} prchk_apptag={:d} prchk_guard={:d} pract={:d}",
                          flags.get(flags.prchk_reference_tag), flags.get(flags.prchk_app_tag),
                          flags.get(flags.prchk_guard), flags.get(flags.pract));
}

template <typename Out>
Out fields(Out out, spec::dsm_hints hints)
{
    return fmt::format_to(out, "af={} al={} sequential={:d} incompressible={:d}",
                          static_cast<unsigned>(hints.get(hints.access_frequency)),
                          static_cast<unsigned>(hints.get(hints.access_latency)),
                          hints.get(hints.sequential_request), hints.get(hints.incompressible));
}

template <typename Out>
Out fields(Out out, spec::rw_cdw12 cdw)
{
    return fmt::format_to(out, "nlb={} dtype={} stc={:d} deac={:d} prinfo=0x{:x} fua={:d} lr={:d}",
                          cdw.get(cdw.nlb), cdw.get(cdw.dtype), cdw.get(cdw.stc), cdw.get(cdw.deac),
                          cdw.get(cdw.prinfo), cdw.get(cdw.fua), cdw.get(cdw.lr));
}

template <typename Out>
Out fields(Out out, spec::rw_cdw13 cdw)
{
    return fmt::format_to(out, "dsm=0x{:x} dspec={}", cdw.get(cdw.dsm), cdw.get(cdw.dspec));
}

template <typename Out>
Out fields(Out out, spec::rw_cdw15 cdw)
{
    return fmt::format_to(out, "lbat=0x{:x} lbatm=0x{:x}", cdw.get(cdw.lbat), cdw.get(cdw.lbatm));
}

template <typename Out>
Out fields(Out out, spec::dataset_management_cdw10 cdw)
{
    return fmt::format_to(out, "nr={}", cdw.get(cdw.nr));
}

template <typename Out>
Out fields(Out out, spec::dataset_management_cdw11 cdw)
{
    return fmt::format_to(out, "idr={:d} idw={:d} ad={:d}", cdw.get(cdw.idr), cdw.get(cdw.idw),
                          cdw.get(cdw.ad));
}

/// The command access size has no abbreviation in the spec: `access_size`, in logical blocks.
template <typename Out>
Out fields(Out out, spec::dsm_context_attributes attributes)
{
    return fmt::format_to(
        out, "af={} al={} sr={:d} sw={:d} wp={:d} access_size={}",
        static_cast<unsigned>(attributes.get(attributes.access_frequency)),
        static_cast<unsigned>(attributes.get(attributes.access_latency)),
        attributes.get(attributes.sequential_read), attributes.get(attributes.sequential_write),
        attributes.get(attributes.write_prepare), attributes.get(attributes.command_access_size));
}

template <typename Out>
Out fields(Out out, spec::copy_cdw12 cdw)
{
    return fmt::format_to(out,
                          "nr={} desfmt={} prinfor=0x{:x} dtype={} stcw={:d} prinfow=0x{:x} fua={:d} lr={:d}",
                          cdw.get(cdw.nr), cdw.get(cdw.desfmt), cdw.get(cdw.prinfor), cdw.get(cdw.dtype),
                          cdw.get(cdw.stcw), cdw.get(cdw.prinfow), cdw.get(cdw.fua), cdw.get(cdw.lr));
}

} // namespace detail::command_format

namespace detail {

/// Formatter of a view, a command dword or a structure of spec/commands.hpp, printed by
/// `command_format::fields`.
template <typename T>
struct command_fields_formatter : plain_formatter {
    template <typename FormatContext>
    auto format(const T& value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        return command_format::fields(ctx.out(), value);
    }
};

/// Formatter of an enumeration of spec/commands.hpp: its name, or `reserved (0x04)`.
template <typename Enum>
struct command_enum_formatter : plain_formatter {
    template <typename FormatContext>
    auto format(Enum value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        return name_or_reserved(ctx.out(), value, "reserved");
    }
};

} // namespace detail
NVMEKIT_END_NAMESPACE

/// `urgent`, `high`, `medium` or `low`.
template <>
struct fmt::formatter<nvmekit::spec::queue_priority>
    : nvmekit::detail::command_enum_formatter<nvmekit::spec::queue_priority> {};

/// `create`, `delete`, or `reserved (0x02)`.
template <>
struct fmt::formatter<nvmekit::spec::namespace_management_select>
    : nvmekit::detail::command_enum_formatter<nvmekit::spec::namespace_management_select> {};

/// `replace`, `replace_activate_on_reset`, `activate_on_reset`, `replace_activate_now`,
/// `replace_boot_partition`, `activate_boot_partition`, or `reserved (0x04)`.
template <>
struct fmt::formatter<nvmekit::spec::firmware_commit_action>
    : nvmekit::detail::command_enum_formatter<nvmekit::spec::firmware_commit_action> {};

/// `attach`, `detach`, or `reserved (0x02)`.
template <>
struct fmt::formatter<nvmekit::spec::namespace_attachment_select>
    : nvmekit::detail::command_enum_formatter<nvmekit::spec::namespace_attachment_select> {};

/// `not indicated`, `incomplete`, `complete`, or `reserved (0x03)`.
template <>
struct fmt::formatter<nvmekit::spec::lba_status_completion>
    : nvmekit::detail::command_enum_formatter<nvmekit::spec::lba_status_completion> {};

/// `may be unrecoverable`, `unrecoverable`, or `reserved (0x02)`.
template <>
struct fmt::formatter<nvmekit::spec::lba_range_status>
    : nvmekit::detail::command_enum_formatter<nvmekit::spec::lba_range_status> {};

/// `rl=16 atype=17`.
template <>
struct fmt::formatter<nvmekit::spec::get_lba_status_cdw13>
    : nvmekit::detail::command_fields_formatter<nvmekit::spec::get_lba_status_cdw13> {};

/// `slba=0x0 mndw=64 rl=0 atype=0x11` (MNDW printed 1-based, in dwords).
template <>
struct fmt::formatter<nvmekit::spec::get_lba_status_view>
    : nvmekit::detail::command_fields_formatter<nvmekit::spec::get_lba_status_view> {};

/// `nlsd=2 cmpc=complete`.
template <>
struct fmt::formatter<nvmekit::spec::lba_status_list_header>
    : nvmekit::detail::command_fields_formatter<nvmekit::spec::lba_status_list_header> {};

/// `dslba=0x10 nlb=8 status=unrecoverable`.
template <>
struct fmt::formatter<nvmekit::spec::lba_status_descriptor>
    : nvmekit::detail::command_fields_formatter<nvmekit::spec::lba_status_descriptor> {};

/// `none`, `type1`, `type2`, `type3`, or `reserved (0x04)`.
template <>
struct fmt::formatter<nvmekit::spec::format_protection_type>
    : nvmekit::detail::command_enum_formatter<nvmekit::spec::format_protection_type> {};

/// `none`, `user_data`, `cryptographic`, or `reserved (0x03)`.
template <>
struct fmt::formatter<nvmekit::spec::format_secure_erase>
    : nvmekit::detail::command_enum_formatter<nvmekit::spec::format_secure_erase> {};

/// `none`, `typical`, `frequent_writes_infrequent_reads`, ..., or `reserved (0x09)`.
template <>
struct fmt::formatter<nvmekit::spec::dsm_access_frequency>
    : nvmekit::detail::command_enum_formatter<nvmekit::spec::dsm_access_frequency> {};

/// `none`, `idle`, `normal` or `low`.
template <>
struct fmt::formatter<nvmekit::spec::dsm_access_latency>
    : nvmekit::detail::command_enum_formatter<nvmekit::spec::dsm_access_latency> {};

/// `uuid=1`.
template <>
struct fmt::formatter<nvmekit::spec::uuid_index_cdw14>
    : nvmekit::detail::command_fields_formatter<nvmekit::spec::uuid_index_cdw14> {};

/// `qid=1`.
template <>
struct fmt::formatter<nvmekit::spec::delete_io_queue_cdw10>
    : nvmekit::detail::command_fields_formatter<nvmekit::spec::delete_io_queue_cdw10> {};

/// `qid=1 qsize=1023`: QSIZE raw, 0-based.
template <>
struct fmt::formatter<nvmekit::spec::create_io_queue_cdw10>
    : nvmekit::detail::command_fields_formatter<nvmekit::spec::create_io_queue_cdw10> {};

/// `pc=1 qprio=2 cqid=1`.
template <>
struct fmt::formatter<nvmekit::spec::create_io_sq_cdw11>
    : nvmekit::detail::command_fields_formatter<nvmekit::spec::create_io_sq_cdw11> {};

/// `nvmsetid=0`.
template <>
struct fmt::formatter<nvmekit::spec::create_io_sq_cdw12>
    : nvmekit::detail::command_fields_formatter<nvmekit::spec::create_io_sq_cdw12> {};

/// `lid=0x02 lsp=0x0 rae=0 numdl=127`: NUMDL raw, 0-based.
template <>
struct fmt::formatter<nvmekit::spec::get_log_page_cdw10>
    : nvmekit::detail::command_fields_formatter<nvmekit::spec::get_log_page_cdw10> {};

/// `numdu=0 lsi=0`.
template <>
struct fmt::formatter<nvmekit::spec::get_log_page_cdw11>
    : nvmekit::detail::command_fields_formatter<nvmekit::spec::get_log_page_cdw11> {};

/// `uuid=0 ot=0 csi=0`.
template <>
struct fmt::formatter<nvmekit::spec::get_log_page_cdw14>
    : nvmekit::detail::command_fields_formatter<nvmekit::spec::get_log_page_cdw14> {};

/// `pc=1 ien=1 iv=1`.
template <>
struct fmt::formatter<nvmekit::spec::create_io_cq_cdw11>
    : nvmekit::detail::command_fields_formatter<nvmekit::spec::create_io_cq_cdw11> {};

/// `cns=0x01 cntid=0`.
template <>
struct fmt::formatter<nvmekit::spec::identify_cdw10>
    : nvmekit::detail::command_fields_formatter<nvmekit::spec::identify_cdw10> {};

/// `cnssid=0 csi=0`.
template <>
struct fmt::formatter<nvmekit::spec::identify_cdw11>
    : nvmekit::detail::command_fields_formatter<nvmekit::spec::identify_cdw11> {};

/// `sqid=1 cid=42`.
template <>
struct fmt::formatter<nvmekit::spec::abort_cdw10>
    : nvmekit::detail::command_fields_formatter<nvmekit::spec::abort_cdw10> {};

/// `fid=0x07 sv=0`.
template <>
struct fmt::formatter<nvmekit::spec::set_features_cdw10>
    : nvmekit::detail::command_fields_formatter<nvmekit::spec::set_features_cdw10> {};

/// `fid=0x0b sel=3`.
template <>
struct fmt::formatter<nvmekit::spec::get_features_cdw10>
    : nvmekit::detail::command_fields_formatter<nvmekit::spec::get_features_cdw10> {};

/// `sel=0`.
template <>
struct fmt::formatter<nvmekit::spec::namespace_management_cdw10>
    : nvmekit::detail::command_fields_formatter<nvmekit::spec::namespace_management_cdw10> {};

/// `csi=0`.
template <>
struct fmt::formatter<nvmekit::spec::namespace_management_cdw11>
    : nvmekit::detail::command_fields_formatter<nvmekit::spec::namespace_management_cdw11> {};

/// `fs=2 ca=1 bpid=0`.
template <>
struct fmt::formatter<nvmekit::spec::firmware_commit_cdw10>
    : nvmekit::detail::command_fields_formatter<nvmekit::spec::firmware_commit_cdw10> {};

/// `sel=1`.
template <>
struct fmt::formatter<nvmekit::spec::namespace_attachment_cdw10>
    : nvmekit::detail::command_fields_formatter<nvmekit::spec::namespace_attachment_cdw10> {};

/// `lbafl=1 mset=0 pi=1 pil=1 ses=1 lbafu=1`.
template <>
struct fmt::formatter<nvmekit::spec::format_nvm_cdw10>
    : nvmekit::detail::command_fields_formatter<nvmekit::spec::format_nvm_cdw10> {};

/// `prchk_reftag=0 prchk_apptag=0 prchk_guard=1 pract=1`.
template <>
struct fmt::formatter<nvmekit::spec::protection_info_flags>
    : nvmekit::detail::command_fields_formatter<nvmekit::spec::protection_info_flags> {};

/// `af=1 al=2 sequential=0 incompressible=1`.
template <>
struct fmt::formatter<nvmekit::spec::dsm_hints>
    : nvmekit::detail::command_fields_formatter<nvmekit::spec::dsm_hints> {};

/// `nlb=7 dtype=0 stc=0 deac=0 prinfo=0x0 fua=1 lr=0`: NLB raw, 0-based.
template <>
struct fmt::formatter<nvmekit::spec::rw_cdw12>
    : nvmekit::detail::command_fields_formatter<nvmekit::spec::rw_cdw12> {};

/// `dsm=0x5 dspec=3`.
template <>
struct fmt::formatter<nvmekit::spec::rw_cdw13>
    : nvmekit::detail::command_fields_formatter<nvmekit::spec::rw_cdw13> {};

/// `lbat=0x1 lbatm=0xffff`.
template <>
struct fmt::formatter<nvmekit::spec::rw_cdw15>
    : nvmekit::detail::command_fields_formatter<nvmekit::spec::rw_cdw15> {};

/// `nr=1`: NR raw, 0-based.
template <>
struct fmt::formatter<nvmekit::spec::dataset_management_cdw10>
    : nvmekit::detail::command_fields_formatter<nvmekit::spec::dataset_management_cdw10> {};

/// `idr=0 idw=0 ad=1`.
template <>
struct fmt::formatter<nvmekit::spec::dataset_management_cdw11>
    : nvmekit::detail::command_fields_formatter<nvmekit::spec::dataset_management_cdw11> {};

/// `af=1 al=2 sr=1 sw=0 wp=0 access_size=8`.
template <>
struct fmt::formatter<nvmekit::spec::dsm_context_attributes>
    : nvmekit::detail::command_fields_formatter<nvmekit::spec::dsm_context_attributes> {};

/// `nr=2 desfmt=0 prinfor=0x0 dtype=0 stcw=0 prinfow=0x8 fua=1 lr=0`: NR raw, 0-based.
template <>
struct fmt::formatter<nvmekit::spec::copy_cdw12>
    : nvmekit::detail::command_fields_formatter<nvmekit::spec::copy_cdw12> {};

/// `slba=0x100 nlb=8 cattr=0x0`: NLB is the Length field, not 0-based.
template <>
struct fmt::formatter<nvmekit::spec::dataset_management_range>
    : nvmekit::detail::command_fields_formatter<nvmekit::spec::dataset_management_range> {};

/// `slba=0x100 nlb=8`, then ` reftag=0x..`, ` apptag=0x..`, ` appmask=0x..` when
/// non-zero; `nlb` is the number of blocks, NLB + 1.
template <>
struct fmt::formatter<nvmekit::spec::copy_source_range>
    : nvmekit::detail::command_fields_formatter<nvmekit::spec::copy_source_range> {};

/// `qid=1 qsize=64 pc=1 qprio=2 cqid=1`, then ` nvmsetid=N` when non-zero.
template <>
struct fmt::formatter<nvmekit::spec::create_io_sq_view>
    : nvmekit::detail::command_fields_formatter<nvmekit::spec::create_io_sq_view> {};

/// `lid=0x02 numd=128 offset=0 rae=0`, then the optional ` lsp=0x..`, ` lsi=N`, ` ot=1`,
/// ` uuid=N` and ` csi=N` when non-zero.
template <>
struct fmt::formatter<nvmekit::spec::get_log_page_view>
    : nvmekit::detail::command_fields_formatter<nvmekit::spec::get_log_page_view> {};

/// `qid=1 qsize=1024 pc=1 ien=1 iv=1`.
template <>
struct fmt::formatter<nvmekit::spec::create_io_cq_view>
    : nvmekit::detail::command_fields_formatter<nvmekit::spec::create_io_cq_view> {};

/// `cns=0x01 cntid=0 csi=0`, then ` cnssid=N` and ` uuid=N` when non-zero.
template <>
struct fmt::formatter<nvmekit::spec::identify_view>
    : nvmekit::detail::command_fields_formatter<nvmekit::spec::identify_view> {};

/// `sqid=1 abort_cid=42`.
template <>
struct fmt::formatter<nvmekit::spec::abort_view>
    : nvmekit::detail::command_fields_formatter<nvmekit::spec::abort_view> {};

/// `fid=0x07 sv=0 cdw11=0x30003`, then ` cdw12=`, ` cdw13=`, ` cdw15=` and ` uuid=` when
/// non-zero.
template <>
struct fmt::formatter<nvmekit::spec::set_features_view>
    : nvmekit::detail::command_fields_formatter<nvmekit::spec::set_features_view> {};

/// `fid=0x0b sel=3 cdw11=0x0`, then ` uuid=N` when non-zero.
template <>
struct fmt::formatter<nvmekit::spec::get_features_view>
    : nvmekit::detail::command_fields_formatter<nvmekit::spec::get_features_view> {};

/// Nothing: the command has no fields.
template <>
struct fmt::formatter<nvmekit::spec::async_event_request_view>
    : nvmekit::detail::command_fields_formatter<nvmekit::spec::async_event_request_view> {};

/// `sel=0 csi=0`.
template <>
struct fmt::formatter<nvmekit::spec::namespace_management_view>
    : nvmekit::detail::command_fields_formatter<nvmekit::spec::namespace_management_view> {};

/// `fs=2 ca=1`, then ` bpid=1` when non-zero.
template <>
struct fmt::formatter<nvmekit::spec::firmware_commit_view>
    : nvmekit::detail::command_fields_formatter<nvmekit::spec::firmware_commit_view> {};

/// `numd=1024 offset=8192`: dwords and bytes.
template <>
struct fmt::formatter<nvmekit::spec::firmware_image_download_view>
    : nvmekit::detail::command_fields_formatter<nvmekit::spec::firmware_image_download_view> {};

/// `sel=1`.
template <>
struct fmt::formatter<nvmekit::spec::namespace_attachment_view>
    : nvmekit::detail::command_fields_formatter<nvmekit::spec::namespace_attachment_view> {};

/// Nothing: the command has no fields.
template <>
struct fmt::formatter<nvmekit::spec::keep_alive_view>
    : nvmekit::detail::command_fields_formatter<nvmekit::spec::keep_alive_view> {};

/// `shadow=0x9000 eventidx=0xa000`.
template <>
struct fmt::formatter<nvmekit::spec::doorbell_buffer_config_view>
    : nvmekit::detail::command_fields_formatter<nvmekit::spec::doorbell_buffer_config_view> {};

/// `lbaf=17 mset=0 pi=1 pil=1 ses=1`.
template <>
struct fmt::formatter<nvmekit::spec::format_nvm_view>
    : nvmekit::detail::command_fields_formatter<nvmekit::spec::format_nvm_view> {};

/// `slba=0x10 nlb=8`, then the set flags (` fua`, ` lr`, ` stc`) and the non-zero
/// ` prinfo=0x..`, ` dsm=0x..`, ` reftag=0x..`, ` apptag=0x..`, ` appmask=0x..`.
template <>
struct fmt::formatter<nvmekit::spec::read_view>
    : nvmekit::detail::command_fields_formatter<nvmekit::spec::read_view> {};

/// As `read_view`, with ` dtype=N` and ` dspec=N` after ` dsm` when non-zero.
template <>
struct fmt::formatter<nvmekit::spec::write_view>
    : nvmekit::detail::command_fields_formatter<nvmekit::spec::write_view> {};

/// `slba=0xabc nlb=2`.
template <>
struct fmt::formatter<nvmekit::spec::write_uncorrectable_view>
    : nvmekit::detail::command_fields_formatter<nvmekit::spec::write_uncorrectable_view> {};

/// `slba=0x0 nlb=256 deac`, then the flags and tags as `read_view` prints them.
template <>
struct fmt::formatter<nvmekit::spec::write_zeroes_view>
    : nvmekit::detail::command_fields_formatter<nvmekit::spec::write_zeroes_view> {};

/// Nothing: the command has no fields.
template <>
struct fmt::formatter<nvmekit::spec::flush_view>
    : nvmekit::detail::command_fields_formatter<nvmekit::spec::flush_view> {};

/// `nr=2`, then ` idr`, ` idw`, ` ad` when set.
template <>
struct fmt::formatter<nvmekit::spec::dataset_management_view>
    : nvmekit::detail::command_fields_formatter<nvmekit::spec::dataset_management_view> {};

/// `sdlba=0x1000 nr=3 desfmt=0`, then the set flags (` fua`, ` lr`, ` stcw`) and the
/// non-zero ` prinfor=`, ` prinfow=`, ` dtype=`, ` dspec=` and tags.
template <>
struct fmt::formatter<nvmekit::spec::copy_view>
    : nvmekit::detail::command_fields_formatter<nvmekit::spec::copy_view> {};

/// `qid=1`: Delete I/O Submission Queue and Delete I/O Completion Queue.
template <nvmekit::spec::admin_opcode Opcode>
struct fmt::formatter<nvmekit::spec::delete_io_queue_view<Opcode>>
    : nvmekit::detail::command_fields_formatter<nvmekit::spec::delete_io_queue_view<Opcode>> {};

/// Compare and Verify: `slba=0x8 nlb=4`, then the flags and tags as `read_view` prints them.
template <nvmekit::spec::nvm_opcode Opcode>
struct fmt::formatter<nvmekit::spec::lba_check_view<Opcode>>
    : nvmekit::detail::command_fields_formatter<nvmekit::spec::lba_check_view<Opcode>> {};

NVMEKIT_BEGIN_NAMESPACE
namespace detail::command_format {

/// Name, cid, nsid, what the formatter of `View` prints, then FUSE, MPTR and the data pointer. A
/// view without fields (Flush, Keep Alive, ...) prints nothing, so it adds no separator either.
template <typename View, typename Out>
Out command(Out out, const spec::submission_queue_entry& entry, std::string_view name, bool uses_nsid,
            bool shows_data_pointer)
{
    out = fmt::format_to(out, "{} cid={}", name, entry.command_id());
    out = nsid_if(out, entry, uses_nsid);
    if constexpr (!std::is_empty_v<View>) {
        out = fmt::format_to(out, " {}", View::decode(entry));
    }
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
    case get_lba_status: return command<spec::get_lba_status_view>(out, entry, name, true, data);
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
