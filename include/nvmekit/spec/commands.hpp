#pragma once
/// Typed views of the command dwords of every command nvmekit implements: the admin commands of
/// NVMe Base 2.0 section 5 and the NVM I/O commands of NVM Command Set 1.0 section 3.
///
/// Each command has `word` types naming the bits of its dwords, and a view that decodes them once:
///
///     const auto cmd = spec::create_io_sq_view::decode(entry);
///     if (cmd.queue_size > max_queue_entries) { ... }
///
///     spec::read_view{.starting_lba = 0x10, .block_count = 8}.encode(entry);
///
/// Counts that the spec stores 0-based are decoded 1-based and named for their unit
/// (`queue_size` in entries, `block_count`, `dword_count`, `range_count`); encoding subtracts the
/// one again, so such a count must be at least 1. No view keeps a 0-based member: code that needs
/// the raw value reads the dword type's field (`create_io_queue_cdw10::qsize`, `rw_cdw12::nlb`). The
/// one raw 0-based member is `copy_source_range::nlb_raw`, a wire structure read by DMA.
///
/// Identifiers with a spec enum are typed with it: CNS (`cns`), CSI (`command_set_identifier`),
/// LID (`log_page_id`), FID (`feature_id`) and SEL (`feature_select`). Each enum has a fixed
/// underlying type, so a reserved or vendor-specific value decodes and encodes unchanged.
///
/// `encode` writes all of CDW10 through CDW15, with reserved dwords and bits zero, and leaves CDW0
/// (opcode, CID, FUSE, PSDT), NSID, CDW2, CDW3, MPTR and DPTR alone; the one exception is Doorbell
/// Buffer Config, whose only fields live in DPTR.
///
/// `admin_command` and `io_command` name the opcode table of an entry for the formatters in
/// format/commands.hpp.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nvmekit/config.hpp>
#include <nvmekit/spec/bits.hpp>
#include <nvmekit/spec/features.hpp>
#include <nvmekit/spec/identify.hpp>
#include <nvmekit/spec/log_pages.hpp>
#include <nvmekit/spec/opcodes.hpp>
#include <nvmekit/spec/queue_entries.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace spec {

namespace detail {
/// Clears CDW10 through CDW15, so that an encoder leaves no stale reserved bits behind.
constexpr void clear_command_dwords(submission_queue_entry& entry) noexcept
{
    entry.cdw10 = 0;
    entry.cdw11 = 0;
    entry.cdw12 = 0;
    entry.cdw13 = 0;
    entry.cdw14 = 0;
    entry.cdw15 = 0;
}
} // namespace detail

/// An entry to print with the admin opcode table (format/commands.hpp).
struct admin_command {
    const submission_queue_entry& entry;
};

/// An entry to print with the NVM Command Set I/O opcode table (format/commands.hpp).
struct io_command {
    const submission_queue_entry& entry;
};

/// CDW14 of Identify, Set Features and Get Features: bits 31:07 reserved.
struct uuid_index_cdw14 : word<uuid_index_cdw14, std::uint32_t> {
    using word::word;
    static constexpr field<0, 7, std::uint8_t> uuid_index{}; // UUID Index: bits 06:00
};

// Admin commands, NVMe Base 2.0 section 5.

/// Delete I/O Submission Queue (00h) and Delete I/O Completion Queue (04h) CDW10.
struct delete_io_queue_cdw10 : word<delete_io_queue_cdw10, std::uint32_t> {
    using word::word;
    static constexpr field<0, 16, std::uint16_t> qid{}; // QID: bits 15:00
};

/// Delete I/O Submission Queue (00h) and Delete I/O Completion Queue (04h), which share their one
/// field: the queue to delete.
template <admin_opcode Opcode>
struct delete_io_queue_view {
    static_assert(Opcode == admin_opcode::delete_io_sq || Opcode == admin_opcode::delete_io_cq);

    std::uint16_t queue_id{};

    [[nodiscard]] static constexpr delete_io_queue_view decode(const submission_queue_entry& entry) noexcept
    {
        return {.queue_id = delete_io_queue_cdw10{entry.cdw10}.get(delete_io_queue_cdw10::qid)};
    }
    constexpr void encode(submission_queue_entry& entry) const noexcept
    {
        detail::clear_command_dwords(entry);
        entry.cdw10 = delete_io_queue_cdw10{}.with(delete_io_queue_cdw10::qid, queue_id).raw;
    }
    friend constexpr bool operator==(const delete_io_queue_view&,
                                     const delete_io_queue_view&) noexcept = default;
};

/// Delete I/O Submission Queue (00h).
using delete_io_sq_view = delete_io_queue_view<admin_opcode::delete_io_sq>;

/// Queue Priority (Create I/O SQ CDW11.QPRIO), used with weighted round robin arbitration.
enum class queue_priority : std::uint8_t {
    urgent = 0b00,
    high = 0b01,
    medium = 0b10,
    low = 0b11,
};

/// "urgent", "high", "medium", "low".
[[nodiscard]] constexpr std::string_view name(queue_priority value) noexcept
{
    switch (value) {
    case queue_priority::urgent: return "urgent";
    case queue_priority::high: return "high";
    case queue_priority::medium: return "medium";
    case queue_priority::low: return "low";
    }
    return {};
}

/// Create I/O Submission Queue (01h) and Create I/O Completion Queue (05h) CDW10.
struct create_io_queue_cdw10 : word<create_io_queue_cdw10, std::uint32_t> {
    using word::word;
    static constexpr field<0, 16, std::uint16_t> qid{};    // QID: bits 15:00
    static constexpr field<16, 16, std::uint16_t> qsize{}; // QSIZE: bits 31:16, 0-based

    /// CDW10 for queue `queue_id` of `entries` entries (1 to 65536).
    [[nodiscard]] static constexpr create_io_queue_cdw10 of(std::uint16_t queue_id,
                                                            std::uint32_t entries) noexcept
    {
        return create_io_queue_cdw10{}
            .with(qid, queue_id)
            .with(qsize, static_cast<std::uint16_t>(entries - 1));
    }
    /// Entries of the queue: QSIZE + 1.
    [[nodiscard]] constexpr std::uint32_t entries() const noexcept { return get(qsize) + 1U; }
};

/// Create I/O Submission Queue (01h) CDW11.
struct create_io_sq_cdw11 : word<create_io_sq_cdw11, std::uint32_t> {
    using word::word;
    static constexpr field<0, 1, bool> pc{};              // PC: bit 00 physically contiguous
    static constexpr field<1, 2, queue_priority> qprio{}; // QPRIO: bits 02:01
    static constexpr field<16, 16, std::uint16_t> cqid{}; // CQID: bits 31:16
};

/// Create I/O Submission Queue (01h) CDW12.
struct create_io_sq_cdw12 : word<create_io_sq_cdw12, std::uint32_t> {
    using word::word;
    static constexpr field<0, 16, std::uint16_t> nvmsetid{}; // NVMSETID: bits 15:00
};

/// Create I/O Submission Queue (01h). PRP1 (in DPTR) holds the queue's base address or PRP list.
struct create_io_sq_view {
    std::uint16_t queue_id{};
    std::uint32_t queue_size{}; ///< entries: QSIZE + 1, 1 to 65536
    bool physically_contiguous{};
    queue_priority priority{};
    std::uint16_t cq_id{};
    std::uint16_t nvm_set_id{};

    [[nodiscard]] static constexpr create_io_sq_view decode(const submission_queue_entry& entry) noexcept
    {
        const create_io_queue_cdw10 cdw10{entry.cdw10};
        const create_io_sq_cdw11 cdw11{entry.cdw11};
        return {
            .queue_id = cdw10.get(cdw10.qid),
            .queue_size = cdw10.entries(),
            .physically_contiguous = cdw11.get(cdw11.pc),
            .priority = cdw11.get(cdw11.qprio),
            .cq_id = cdw11.get(cdw11.cqid),
            .nvm_set_id = create_io_sq_cdw12{entry.cdw12}.get(create_io_sq_cdw12::nvmsetid),
        };
    }
    constexpr void encode(submission_queue_entry& entry) const noexcept
    {
        detail::clear_command_dwords(entry);
        entry.cdw10 = create_io_queue_cdw10::of(queue_id, queue_size).raw;
        entry.cdw11 = create_io_sq_cdw11{}
                          .with(create_io_sq_cdw11::pc, physically_contiguous)
                          .with(create_io_sq_cdw11::qprio, priority)
                          .with(create_io_sq_cdw11::cqid, cq_id)
                          .raw;
        entry.cdw12 = create_io_sq_cdw12{}.with(create_io_sq_cdw12::nvmsetid, nvm_set_id).raw;
    }
    friend constexpr bool operator==(const create_io_sq_view&, const create_io_sq_view&) noexcept = default;
};

/// Get Log Page (02h) CDW10.
struct get_log_page_cdw10 : word<get_log_page_cdw10, std::uint32_t> {
    using word::word;
    static constexpr field<0, 8, log_page_id> lid{};       // LID: bits 07:00
    static constexpr field<8, 7, std::uint8_t> lsp{};      // LSP: bits 14:08
    static constexpr field<15, 1, bool> rae{};             // RAE: bit 15
    static constexpr field<16, 16, std::uint16_t> numdl{}; // NUMDL: bits 31:16, low half of 0-based NUMD
};

/// Get Log Page (02h) CDW11.
struct get_log_page_cdw11 : word<get_log_page_cdw11, std::uint32_t> {
    using word::word;
    static constexpr field<0, 16, std::uint16_t> numdu{}; // NUMDU: bits 15:00, high half of NUMD
    static constexpr field<16, 16, std::uint16_t> lsi{};  // LSI: bits 31:16
};

/// Get Log Page (02h) CDW14. CDW12 and CDW13 are LPOL and LPOU, the low and high dwords of the
/// log page offset.
struct get_log_page_cdw14 : word<get_log_page_cdw14, std::uint32_t> {
    using word::word;
    static constexpr field<0, 7, std::uint8_t> uuid_index{};     // UUID Index: bits 06:00
    static constexpr field<23, 1, bool> ot{};                    // OT: bit 23 offset type
    static constexpr field<24, 8, command_set_identifier> csi{}; // CSI: bits 31:24
};

/// Get Log Page (02h).
struct get_log_page_view {
    spec::log_page_id log_page_id{};
    std::uint8_t log_specific_field{}; ///< LSP
    bool retain_async_event{};         ///< RAE
    /// NUMD + 1, 1 to 2^32: 64 bits wide because a 32-bit count cannot hold NUMD = FFFFFFFFh + 1.
    std::uint64_t dword_count{};
    std::uint16_t log_specific_id{}; ///< LSI
    std::uint64_t offset{};          ///< LPOU:LPOL, in bytes, or an index when `offset_is_index`
    std::uint8_t uuid_index{};
    bool offset_is_index{}; ///< OT
    command_set_identifier command_set_id{};

    [[nodiscard]] constexpr std::uint64_t byte_count() const noexcept { return dword_count * 4; }

    [[nodiscard]] static constexpr get_log_page_view decode(const submission_queue_entry& entry) noexcept
    {
        const get_log_page_cdw10 cdw10{entry.cdw10};
        const get_log_page_cdw11 cdw11{entry.cdw11};
        const get_log_page_cdw14 cdw14{entry.cdw14};
        const std::uint32_t numd = (std::uint32_t{cdw11.get(cdw11.numdu)} << 16) | cdw10.get(cdw10.numdl);
        return {
            .log_page_id = cdw10.get(cdw10.lid),
            .log_specific_field = cdw10.get(cdw10.lsp),
            .retain_async_event = cdw10.get(cdw10.rae),
            .dword_count = std::uint64_t{numd} + 1,
            .log_specific_id = cdw11.get(cdw11.lsi),
            .offset = join_dwords(entry.cdw12, entry.cdw13),
            .uuid_index = cdw14.get(cdw14.uuid_index),
            .offset_is_index = cdw14.get(cdw14.ot),
            .command_set_id = cdw14.get(cdw14.csi),
        };
    }
    constexpr void encode(submission_queue_entry& entry) const noexcept
    {
        detail::clear_command_dwords(entry);
        const auto numd = static_cast<std::uint32_t>(dword_count - 1);
        entry.cdw10 = get_log_page_cdw10{}
                          .with(get_log_page_cdw10::lid, log_page_id)
                          .with(get_log_page_cdw10::lsp, log_specific_field)
                          .with(get_log_page_cdw10::rae, retain_async_event)
                          .with(get_log_page_cdw10::numdl, static_cast<std::uint16_t>(numd))
                          .raw;
        entry.cdw11 = get_log_page_cdw11{}
                          .with(get_log_page_cdw11::numdu, static_cast<std::uint16_t>(numd >> 16))
                          .with(get_log_page_cdw11::lsi, log_specific_id)
                          .raw;
        split_qword(offset, entry.cdw12, entry.cdw13);
        entry.cdw14 = get_log_page_cdw14{}
                          .with(get_log_page_cdw14::uuid_index, uuid_index)
                          .with(get_log_page_cdw14::ot, offset_is_index)
                          .with(get_log_page_cdw14::csi, command_set_id)
                          .raw;
    }
    friend constexpr bool operator==(const get_log_page_view&, const get_log_page_view&) noexcept = default;
};

/// Delete I/O Completion Queue (04h).
using delete_io_cq_view = delete_io_queue_view<admin_opcode::delete_io_cq>;

/// Create I/O Completion Queue (05h) CDW11.
struct create_io_cq_cdw11 : word<create_io_cq_cdw11, std::uint32_t> {
    using word::word;
    static constexpr field<0, 1, bool> pc{};            // PC: bit 00 physically contiguous
    static constexpr field<1, 1, bool> ien{};           // IEN: bit 01 interrupts enabled
    static constexpr field<16, 16, std::uint16_t> iv{}; // IV: bits 31:16 interrupt vector
};

/// Create I/O Completion Queue (05h). PRP1 (in DPTR) holds the queue's base address or PRP list.
struct create_io_cq_view {
    std::uint16_t queue_id{};
    std::uint32_t queue_size{}; ///< entries: QSIZE + 1, 1 to 65536
    bool physically_contiguous{};
    bool interrupts_enabled{};
    std::uint16_t interrupt_vector{};

    [[nodiscard]] static constexpr create_io_cq_view decode(const submission_queue_entry& entry) noexcept
    {
        const create_io_queue_cdw10 cdw10{entry.cdw10};
        const create_io_cq_cdw11 cdw11{entry.cdw11};
        return {
            .queue_id = cdw10.get(cdw10.qid),
            .queue_size = cdw10.entries(),
            .physically_contiguous = cdw11.get(cdw11.pc),
            .interrupts_enabled = cdw11.get(cdw11.ien),
            .interrupt_vector = cdw11.get(cdw11.iv),
        };
    }
    constexpr void encode(submission_queue_entry& entry) const noexcept
    {
        detail::clear_command_dwords(entry);
        entry.cdw10 = create_io_queue_cdw10::of(queue_id, queue_size).raw;
        entry.cdw11 = create_io_cq_cdw11{}
                          .with(create_io_cq_cdw11::pc, physically_contiguous)
                          .with(create_io_cq_cdw11::ien, interrupts_enabled)
                          .with(create_io_cq_cdw11::iv, interrupt_vector)
                          .raw;
    }
    friend constexpr bool operator==(const create_io_cq_view&, const create_io_cq_view&) noexcept = default;
};

/// Identify (06h) CDW10.
struct identify_cdw10 : word<identify_cdw10, std::uint32_t> {
    using word::word;
    static constexpr field<0, 8, spec::cns> cns{};         // CNS: bits 07:00
    static constexpr field<16, 16, std::uint16_t> cntid{}; // CNTID: bits 31:16
};

/// Identify (06h) CDW11.
struct identify_cdw11 : word<identify_cdw11, std::uint32_t> {
    using word::word;
    static constexpr field<0, 16, std::uint16_t> cns_specific_id{}; // CNS Specific Identifier: bits 15:00
    static constexpr field<24, 8, command_set_identifier> csi{};    // CSI: bits 31:24
};

/// Identify (06h). CDW14 is `uuid_index_cdw14`.
struct identify_view {
    spec::cns cns{};
    std::uint16_t controller_id{};           ///< CNTID
    std::uint16_t cns_specific_id{};         ///< NVM Set, Domain or Endurance Group identifier, per CNS
    command_set_identifier command_set_id{}; ///< CSI
    std::uint8_t uuid_index{};

    [[nodiscard]] static constexpr identify_view decode(const submission_queue_entry& entry) noexcept
    {
        const identify_cdw10 cdw10{entry.cdw10};
        const identify_cdw11 cdw11{entry.cdw11};
        return {
            .cns = cdw10.get(cdw10.cns),
            .controller_id = cdw10.get(cdw10.cntid),
            .cns_specific_id = cdw11.get(cdw11.cns_specific_id),
            .command_set_id = cdw11.get(cdw11.csi),
            .uuid_index = uuid_index_cdw14{entry.cdw14}.get(uuid_index_cdw14::uuid_index),
        };
    }
    constexpr void encode(submission_queue_entry& entry) const noexcept
    {
        detail::clear_command_dwords(entry);
        entry.cdw10 =
            identify_cdw10{}.with(identify_cdw10::cns, cns).with(identify_cdw10::cntid, controller_id).raw;
        entry.cdw11 = identify_cdw11{}
                          .with(identify_cdw11::cns_specific_id, cns_specific_id)
                          .with(identify_cdw11::csi, command_set_id)
                          .raw;
        entry.cdw14 = uuid_index_cdw14{}.with(uuid_index_cdw14::uuid_index, uuid_index).raw;
    }
    friend constexpr bool operator==(const identify_view&, const identify_view&) noexcept = default;
};

/// Abort (08h) CDW10.
struct abort_cdw10 : word<abort_cdw10, std::uint32_t> {
    using word::word;
    static constexpr field<0, 16, std::uint16_t> sqid{}; // SQID: bits 15:00
    static constexpr field<16, 16, std::uint16_t> cid{}; // CID: bits 31:16
};

/// Abort (08h): the command to abort is (`sq_id`, `command_id`).
struct abort_view {
    std::uint16_t sq_id{};
    std::uint16_t command_id{};

    [[nodiscard]] static constexpr abort_view decode(const submission_queue_entry& entry) noexcept
    {
        const abort_cdw10 cdw10{entry.cdw10};
        return {.sq_id = cdw10.get(cdw10.sqid), .command_id = cdw10.get(cdw10.cid)};
    }
    constexpr void encode(submission_queue_entry& entry) const noexcept
    {
        detail::clear_command_dwords(entry);
        entry.cdw10 = abort_cdw10{}.with(abort_cdw10::sqid, sq_id).with(abort_cdw10::cid, command_id).raw;
    }
    friend constexpr bool operator==(const abort_view&, const abort_view&) noexcept = default;
};

/// Set Features (09h) CDW10.
struct set_features_cdw10 : word<set_features_cdw10, std::uint32_t> {
    using word::word;
    static constexpr field<0, 8, feature_id> fid{}; // FID: bits 07:00
    static constexpr field<31, 1, bool> sv{};       // SV: bit 31 save
};

/// Set Features (09h). CDW11, CDW12, CDW13 and CDW15 are feature specific and kept raw for the
/// feature's own word type; CDW14 is `uuid_index_cdw14`.
struct set_features_view {
    spec::feature_id feature_id{};
    bool save{};
    std::uint32_t cdw11{};
    std::uint32_t cdw12{};
    std::uint32_t cdw13{};
    std::uint32_t cdw15{};
    std::uint8_t uuid_index{};

    [[nodiscard]] static constexpr set_features_view decode(const submission_queue_entry& entry) noexcept
    {
        const set_features_cdw10 cdw10{entry.cdw10};
        return {
            .feature_id = cdw10.get(cdw10.fid),
            .save = cdw10.get(cdw10.sv),
            .cdw11 = entry.cdw11,
            .cdw12 = entry.cdw12,
            .cdw13 = entry.cdw13,
            .cdw15 = entry.cdw15,
            .uuid_index = uuid_index_cdw14{entry.cdw14}.get(uuid_index_cdw14::uuid_index),
        };
    }
    constexpr void encode(submission_queue_entry& entry) const noexcept
    {
        entry.cdw10 = set_features_cdw10{}
                          .with(set_features_cdw10::fid, feature_id)
                          .with(set_features_cdw10::sv, save)
                          .raw;
        entry.cdw11 = cdw11;
        entry.cdw12 = cdw12;
        entry.cdw13 = cdw13;
        entry.cdw14 = uuid_index_cdw14{}.with(uuid_index_cdw14::uuid_index, uuid_index).raw;
        entry.cdw15 = cdw15;
    }
    friend constexpr bool operator==(const set_features_view&, const set_features_view&) noexcept = default;
};

/// Get Features (0Ah) CDW10.
struct get_features_cdw10 : word<get_features_cdw10, std::uint32_t> {
    using word::word;
    static constexpr field<0, 8, feature_id> fid{};     // FID: bits 07:00
    static constexpr field<8, 3, feature_select> sel{}; // SEL: bits 10:08
};

/// Get Features (0Ah). CDW11 is feature specific and kept raw; CDW14 is `uuid_index_cdw14`.
struct get_features_view {
    spec::feature_id feature_id{};
    feature_select select{};
    std::uint32_t cdw11{};
    std::uint8_t uuid_index{};

    [[nodiscard]] static constexpr get_features_view decode(const submission_queue_entry& entry) noexcept
    {
        const get_features_cdw10 cdw10{entry.cdw10};
        return {
            .feature_id = cdw10.get(cdw10.fid),
            .select = cdw10.get(cdw10.sel),
            .cdw11 = entry.cdw11,
            .uuid_index = uuid_index_cdw14{entry.cdw14}.get(uuid_index_cdw14::uuid_index),
        };
    }
    constexpr void encode(submission_queue_entry& entry) const noexcept
    {
        detail::clear_command_dwords(entry);
        entry.cdw10 = get_features_cdw10{}
                          .with(get_features_cdw10::fid, feature_id)
                          .with(get_features_cdw10::sel, select)
                          .raw;
        entry.cdw11 = cdw11;
        entry.cdw14 = uuid_index_cdw14{}.with(uuid_index_cdw14::uuid_index, uuid_index).raw;
    }
    friend constexpr bool operator==(const get_features_view&, const get_features_view&) noexcept = default;
};

/// Asynchronous Event Request (0Ch): no command dwords.
struct async_event_request_view {
    [[nodiscard]] static constexpr async_event_request_view
    decode(const submission_queue_entry& /*entry*/) noexcept
    {
        return {};
    }
    constexpr void encode(submission_queue_entry& entry) const noexcept
    {
        detail::clear_command_dwords(entry);
    }
    friend constexpr bool operator==(const async_event_request_view&,
                                     const async_event_request_view&) noexcept = default;
};

/// Select (Namespace Management CDW10.SEL).
enum class namespace_management_select : std::uint8_t {
    create = 0x0,
    remove = 0x1, ///< "Delete" in the spec
};

/// "create", "delete"; empty for a reserved value.
[[nodiscard]] constexpr std::string_view name(namespace_management_select value) noexcept
{
    switch (value) {
    case namespace_management_select::create: return "create";
    case namespace_management_select::remove: return "delete";
    }
    return {};
}

/// Namespace Management (0Dh) CDW10.
struct namespace_management_cdw10 : word<namespace_management_cdw10, std::uint32_t> {
    using word::word;
    static constexpr field<0, 4, namespace_management_select> sel{}; // SEL: bits 03:00
};

/// Namespace Management (0Dh) CDW11.
struct namespace_management_cdw11 : word<namespace_management_cdw11, std::uint32_t> {
    using word::word;
    static constexpr field<24, 8, command_set_identifier> csi{}; // CSI: bits 31:24 (create only)
};

/// Namespace Management (0Dh). Create carries the host's namespace data structure in DPTR.
struct namespace_management_view {
    namespace_management_select select{};
    command_set_identifier command_set_id{};

    [[nodiscard]] static constexpr namespace_management_view
    decode(const submission_queue_entry& entry) noexcept
    {
        return {
            .select = namespace_management_cdw10{entry.cdw10}.get(namespace_management_cdw10::sel),
            .command_set_id = namespace_management_cdw11{entry.cdw11}.get(namespace_management_cdw11::csi),
        };
    }
    constexpr void encode(submission_queue_entry& entry) const noexcept
    {
        detail::clear_command_dwords(entry);
        entry.cdw10 = namespace_management_cdw10{}.with(namespace_management_cdw10::sel, select).raw;
        entry.cdw11 = namespace_management_cdw11{}.with(namespace_management_cdw11::csi, command_set_id).raw;
    }
    friend constexpr bool operator==(const namespace_management_view&,
                                     const namespace_management_view&) noexcept = default;
};

/// Commit Action (Firmware Commit CDW10.CA); 100b and 101b are reserved.
enum class firmware_commit_action : std::uint8_t {
    replace = 0b000,                       ///< store the image in the slot, do not activate it
    replace_and_activate_on_reset = 0b001, ///< store the image, activate it at the next reset
    activate_on_reset = 0b010,             ///< activate the slot's image at the next reset
    replace_and_activate_now = 0b011,      ///< store the image and activate it without a reset
    replace_boot_partition = 0b110,        ///< store the image in boot partition BPID
    activate_boot_partition = 0b111,       ///< mark boot partition BPID active
};

/// The spec's meaning in short: "replace", "replace_activate_on_reset", "activate_on_reset",
/// "replace_activate_now", "replace_boot_partition", "activate_boot_partition"; empty for a
/// reserved value.
[[nodiscard]] constexpr std::string_view name(firmware_commit_action value) noexcept
{
    switch (value) {
    case firmware_commit_action::replace: return "replace";
    case firmware_commit_action::replace_and_activate_on_reset: return "replace_activate_on_reset";
    case firmware_commit_action::activate_on_reset: return "activate_on_reset";
    case firmware_commit_action::replace_and_activate_now: return "replace_activate_now";
    case firmware_commit_action::replace_boot_partition: return "replace_boot_partition";
    case firmware_commit_action::activate_boot_partition: return "activate_boot_partition";
    }
    return {};
}

/// Firmware Commit (10h) CDW10.
struct firmware_commit_cdw10 : word<firmware_commit_cdw10, std::uint32_t> {
    using word::word;
    static constexpr field<0, 3, std::uint8_t> fs{};           // FS: bits 02:00 firmware slot
    static constexpr field<3, 3, firmware_commit_action> ca{}; // CA: bits 05:03
    static constexpr field<31, 1, std::uint8_t> bpid{};        // BPID: bit 31 boot partition
};

/// Firmware Commit (10h).
struct firmware_commit_view {
    std::uint8_t slot{}; ///< FS: 1 to 7, or 0 for a slot the controller chooses
    firmware_commit_action action{};
    std::uint8_t boot_partition_id{}; ///< BPID: 0 or 1

    [[nodiscard]] static constexpr firmware_commit_view decode(const submission_queue_entry& entry) noexcept
    {
        const firmware_commit_cdw10 cdw10{entry.cdw10};
        return {.slot = cdw10.get(cdw10.fs),
                .action = cdw10.get(cdw10.ca),
                .boot_partition_id = cdw10.get(cdw10.bpid)};
    }
    constexpr void encode(submission_queue_entry& entry) const noexcept
    {
        detail::clear_command_dwords(entry);
        entry.cdw10 = firmware_commit_cdw10{}
                          .with(firmware_commit_cdw10::fs, slot)
                          .with(firmware_commit_cdw10::ca, action)
                          .with(firmware_commit_cdw10::bpid, boot_partition_id)
                          .raw;
    }
    friend constexpr bool operator==(const firmware_commit_view&,
                                     const firmware_commit_view&) noexcept = default;
};

/// Firmware Image Download (11h): CDW10 is NUMD (0-based dword count), CDW11 is OFST (offset in
/// dwords), each the whole dword.
struct firmware_image_download_view {
    std::uint64_t dword_count{};  ///< NUMD + 1, 1 to 2^32
    std::uint64_t offset_bytes{}; ///< OFST * 4; encode requires a multiple of 4 below 2^34

    [[nodiscard]] constexpr std::uint64_t byte_count() const noexcept { return dword_count * 4; }

    [[nodiscard]] static constexpr firmware_image_download_view
    decode(const submission_queue_entry& entry) noexcept
    {
        return {.dword_count = std::uint64_t{entry.cdw10} + 1,
                .offset_bytes = std::uint64_t{entry.cdw11} * 4};
    }
    constexpr void encode(submission_queue_entry& entry) const noexcept
    {
        detail::clear_command_dwords(entry);
        entry.cdw10 = static_cast<std::uint32_t>(dword_count - 1);
        entry.cdw11 = static_cast<std::uint32_t>(offset_bytes / 4);
    }
    friend constexpr bool operator==(const firmware_image_download_view&,
                                     const firmware_image_download_view&) noexcept = default;
};

/// Select (Namespace Attachment CDW10.SEL).
enum class namespace_attachment_select : std::uint8_t {
    attach = 0x0,
    detach = 0x1,
};

/// "attach", "detach"; empty for a reserved value.
[[nodiscard]] constexpr std::string_view name(namespace_attachment_select value) noexcept
{
    switch (value) {
    case namespace_attachment_select::attach: return "attach";
    case namespace_attachment_select::detach: return "detach";
    }
    return {};
}

/// Namespace Attachment (15h) CDW10.
struct namespace_attachment_cdw10 : word<namespace_attachment_cdw10, std::uint32_t> {
    using word::word;
    static constexpr field<0, 4, namespace_attachment_select> sel{}; // SEL: bits 03:00
};

/// Namespace Attachment (15h). The controller list travels in DPTR.
struct namespace_attachment_view {
    namespace_attachment_select select{};

    [[nodiscard]] static constexpr namespace_attachment_view
    decode(const submission_queue_entry& entry) noexcept
    {
        return {.select = namespace_attachment_cdw10{entry.cdw10}.get(namespace_attachment_cdw10::sel)};
    }
    constexpr void encode(submission_queue_entry& entry) const noexcept
    {
        detail::clear_command_dwords(entry);
        entry.cdw10 = namespace_attachment_cdw10{}.with(namespace_attachment_cdw10::sel, select).raw;
    }
    friend constexpr bool operator==(const namespace_attachment_view&,
                                     const namespace_attachment_view&) noexcept = default;
};

/// Keep Alive (18h): no command dwords.
struct keep_alive_view {
    [[nodiscard]] static constexpr keep_alive_view decode(const submission_queue_entry& /*entry*/) noexcept
    {
        return {};
    }
    constexpr void encode(submission_queue_entry& entry) const noexcept
    {
        detail::clear_command_dwords(entry);
    }
    friend constexpr bool operator==(const keep_alive_view&, const keep_alive_view&) noexcept = default;
};

/// Doorbell Buffer Config (7Ch): PRP1 is the Shadow Doorbell buffer, PRP2 the EventIdx buffer,
/// each one memory page. The only view whose encode writes DPTR.
struct doorbell_buffer_config_view {
    std::uint64_t shadow_doorbell_address{}; ///< DPTR.PRP1
    std::uint64_t eventidx_address{};        ///< DPTR.PRP2

    [[nodiscard]] static constexpr doorbell_buffer_config_view
    decode(const submission_queue_entry& entry) noexcept
    {
        return {.shadow_doorbell_address = entry.dptr.prp1, .eventidx_address = entry.dptr.prp2};
    }
    constexpr void encode(submission_queue_entry& entry) const noexcept
    {
        detail::clear_command_dwords(entry);
        entry.dptr.prp1 = shadow_doorbell_address;
        entry.dptr.prp2 = eventidx_address;
    }
    friend constexpr bool operator==(const doorbell_buffer_config_view&,
                                     const doorbell_buffer_config_view&) noexcept = default;
};

/// Protection Information (Format NVM CDW10.PI): end-to-end protection type.
enum class format_protection_type : std::uint8_t {
    none = 0b000,
    type1 = 0b001,
    type2 = 0b010,
    type3 = 0b011,
};

/// "none", "type1", "type2", "type3"; empty for a reserved value.
[[nodiscard]] constexpr std::string_view name(format_protection_type value) noexcept
{
    switch (value) {
    case format_protection_type::none: return "none";
    case format_protection_type::type1: return "type1";
    case format_protection_type::type2: return "type2";
    case format_protection_type::type3: return "type3";
    }
    return {};
}

/// Secure Erase Settings (Format NVM CDW10.SES).
enum class format_secure_erase : std::uint8_t {
    none = 0b000,
    user_data_erase = 0b001,
    cryptographic_erase = 0b010,
};

/// "none", "user_data", "cryptographic"; empty for a reserved value.
[[nodiscard]] constexpr std::string_view name(format_secure_erase value) noexcept
{
    switch (value) {
    case format_secure_erase::none: return "none";
    case format_secure_erase::user_data_erase: return "user_data";
    case format_secure_erase::cryptographic_erase: return "cryptographic";
    }
    return {};
}

/// Format NVM (80h) CDW10.
struct format_nvm_cdw10 : word<format_nvm_cdw10, std::uint32_t> {
    using word::word;
    static constexpr field<0, 4, std::uint8_t> lbafl{};        // LBAFL: bits 03:00 format index, low
    static constexpr field<4, 1, bool> mset{};                 // MSET: bit 04 metadata settings
    static constexpr field<5, 3, format_protection_type> pi{}; // PI: bits 07:05
    static constexpr field<8, 1, bool> pil{};                  // PIL: bit 08 PI location
    static constexpr field<9, 3, format_secure_erase> ses{};   // SES: bits 11:09
    static constexpr field<12, 2, std::uint8_t> lbafu{};       // LBAFU: bits 13:12 format index, high

    /// The LBA Format index, 0 to 63: LBAFU in bits 05:04, LBAFL in bits 03:00.
    [[nodiscard]] constexpr std::uint8_t format_index() const noexcept
    {
        return static_cast<std::uint8_t>((get(lbafu) << 4) | get(lbafl));
    }
    constexpr format_nvm_cdw10& set_format_index(std::uint8_t index) noexcept
    {
        set(lbafl, static_cast<std::uint8_t>(index & 0xfU));
        return set(lbafu, static_cast<std::uint8_t>(index >> 4));
    }
};

/// Format NVM (80h).
struct format_nvm_view {
    std::uint8_t format_index{};     ///< LBAFU:LBAFL, 0 to 63
    bool metadata_in_extended_lba{}; ///< MSET: 1 = metadata at the end of each LBA, 0 = separate buffer
    format_protection_type protection_type{};
    bool protection_info_first{}; ///< PIL: 1 = PI in the first bytes of the metadata, 0 = the last
    format_secure_erase secure_erase{};

    [[nodiscard]] static constexpr format_nvm_view decode(const submission_queue_entry& entry) noexcept
    {
        const format_nvm_cdw10 cdw10{entry.cdw10};
        return {
            .format_index = cdw10.format_index(),
            .metadata_in_extended_lba = cdw10.get(cdw10.mset),
            .protection_type = cdw10.get(cdw10.pi),
            .protection_info_first = cdw10.get(cdw10.pil),
            .secure_erase = cdw10.get(cdw10.ses),
        };
    }
    constexpr void encode(submission_queue_entry& entry) const noexcept
    {
        detail::clear_command_dwords(entry);
        format_nvm_cdw10 cdw10{};
        cdw10.set_format_index(format_index)
            .set(format_nvm_cdw10::mset, metadata_in_extended_lba)
            .set(format_nvm_cdw10::pi, protection_type)
            .set(format_nvm_cdw10::pil, protection_info_first)
            .set(format_nvm_cdw10::ses, secure_erase);
        entry.cdw10 = cdw10.raw;
    }
    friend constexpr bool operator==(const format_nvm_view&, const format_nvm_view&) noexcept = default;
};

/// Get LBA Status (86h) CDW13.
struct get_lba_status_cdw13 : word<get_lba_status_cdw13, std::uint32_t> {
    using word::word;
    static constexpr field<0, 16, std::uint16_t> rl{};        // RL Range Length: bits 15:00 (LBAs)
    static constexpr field<24, 8, lba_status_action> atype{}; // ATYPE Action Type: bits 31:24
};

/// Get LBA Status (86h), Base 2.0: which Potentially Unrecoverable LBAs of [SLBA, SLBA + RL) the
/// controller reports. CDW10-11 are SLBA, CDW12 is MNDW (0-based dwords of the data buffer).
struct get_lba_status_view {
    std::uint64_t starting_lba{}; ///< SLBA
    std::uint64_t dword_count{};  ///< MNDW + 1, 1 to 2^32: the data buffer holds this many dwords
    std::uint16_t range_length{}; ///< RL, in logical blocks
    lba_status_action action{};   ///< ATYPE

    [[nodiscard]] constexpr std::uint64_t byte_count() const noexcept { return dword_count * 4; }

    [[nodiscard]] static constexpr get_lba_status_view decode(const submission_queue_entry& entry) noexcept
    {
        const get_lba_status_cdw13 cdw13{entry.cdw13};
        return {
            .starting_lba = (std::uint64_t{entry.cdw11} << 32) | entry.cdw10,
            .dword_count = std::uint64_t{entry.cdw12} + 1,
            .range_length = cdw13.get(cdw13.rl),
            .action = cdw13.get(cdw13.atype),
        };
    }
    constexpr void encode(submission_queue_entry& entry) const noexcept
    {
        detail::clear_command_dwords(entry);
        entry.cdw10 = static_cast<std::uint32_t>(starting_lba);
        entry.cdw11 = static_cast<std::uint32_t>(starting_lba >> 32);
        entry.cdw12 = static_cast<std::uint32_t>(dword_count - 1);
        entry.cdw13 = get_lba_status_cdw13{}
                          .with(get_lba_status_cdw13::rl, range_length)
                          .with(get_lba_status_cdw13::atype, action)
                          .raw;
    }
    friend constexpr bool operator==(const get_lba_status_view&,
                                     const get_lba_status_view&) noexcept = default;
};

/// Completion Condition (CMPC) of the LBA Status Descriptor list.
enum class lba_status_completion : std::uint8_t {
    not_indicated = 0x0,
    /// More descriptors were available than MNDW let the controller return.
    incomplete = 0x1,
    /// The action covered the whole range and every descriptor was returned.
    complete = 0x2,
};

/// "not indicated", "incomplete", "complete"; empty for a reserved value.
[[nodiscard]] constexpr std::string_view name(lba_status_completion value) noexcept
{
    switch (value) {
    case lba_status_completion::not_indicated: return "not indicated";
    case lba_status_completion::incomplete: return "incomplete";
    case lba_status_completion::complete: return "complete";
    }
    return {};
}

/// Status of an LBA Status Descriptor (byte 13).
enum class lba_range_status : std::uint8_t {
    /// Each logical block of the range may report Unrecovered Read Error, or may be read.
    may_be_unrecoverable = 0x0,
    /// Each logical block of the range reports Unrecovered Read Error when read (it was last
    /// written by Write Uncorrectable, or its media failed).
    unrecoverable = 0x1,
};

/// "may be unrecoverable", "unrecoverable"; empty for a reserved value.
[[nodiscard]] constexpr std::string_view name(lba_range_status value) noexcept
{
    switch (value) {
    case lba_range_status::may_be_unrecoverable: return "may be unrecoverable";
    case lba_range_status::unrecoverable: return "unrecoverable";
    }
    return {};
}

/// The header of the LBA Status Descriptor list Get LBA Status returns (8 bytes); NLSD
/// `lba_status_descriptor`s follow it.
struct lba_status_list_header {
    std::uint32_t nlsd;                // bytes 03:00 NLSD Number of LBA Status Descriptors
    lba_status_completion cmpc;        // byte 04 CMPC Completion Condition
    std::array<std::uint8_t, 3> rsvd5; // bytes 07:05

    friend constexpr bool operator==(const lba_status_list_header&,
                                     const lba_status_list_header&) noexcept = default;
};
static_assert(sizeof(lba_status_list_header) == 8);
static_assert(offsetof(lba_status_list_header, nlsd) == 0);
static_assert(offsetof(lba_status_list_header, cmpc) == 4);
static_assert(is_wire_type_v<lba_status_list_header>);

/// LBA Status Descriptor (16 bytes).
struct lba_status_descriptor {
    std::uint64_t dslba;                // bytes 07:00 DSLBA Descriptor Starting LBA
    std::uint32_t nlb;                  // bytes 11:08 NLB Number of Logical Blocks (1-based)
    std::uint8_t rsvd12;                // byte 12
    lba_range_status status;            // byte 13 Status
    std::array<std::uint8_t, 2> rsvd14; // bytes 15:14

    friend constexpr bool operator==(const lba_status_descriptor&,
                                     const lba_status_descriptor&) noexcept = default;
};
static_assert(sizeof(lba_status_descriptor) == 16);
static_assert(offsetof(lba_status_descriptor, dslba) == 0);
static_assert(offsetof(lba_status_descriptor, nlb) == 8);
static_assert(offsetof(lba_status_descriptor, status) == 13);
static_assert(is_wire_type_v<lba_status_descriptor>);

// NVM I/O commands, NVM Command Set 1.0 section 3.

/// Protection Information field (PRINFO) of the NVM I/O commands: action and checks.
struct protection_info_flags : word<protection_info_flags, std::uint8_t> {
    using word::word;
    static constexpr field<0, 1, bool> prchk_reference_tag{}; // PRCHK: bit 00 check the reference tag
    static constexpr field<1, 1, bool> prchk_app_tag{};       // PRCHK: bit 01 check the application tag
    static constexpr field<2, 1, bool> prchk_guard{};         // PRCHK: bit 02 check the guard
    static constexpr field<3, 1, bool> pract{};               // PRACT: bit 03 insert or strip PI
};

/// Access Frequency of the dataset management hints, NVM 1.0.
enum class dsm_access_frequency : std::uint8_t {
    no_information = 0x0,
    typical = 0x1,
    infrequent_writes_infrequent_reads = 0x2,
    infrequent_writes_frequent_reads = 0x3,
    frequent_writes_infrequent_reads = 0x4,
    frequent_writes_frequent_reads = 0x5,
    one_time_read = 0x6,
    speculative_read = 0x7,
    overwritten_soon = 0x8,
};

/// "none", "typical", "infrequent_writes_infrequent_reads", ..., "one_time_read",
/// "speculative_read", "overwritten_soon"; empty for a reserved value.
[[nodiscard]] constexpr std::string_view name(dsm_access_frequency value) noexcept
{
    switch (value) {
    case dsm_access_frequency::no_information: return "none";
    case dsm_access_frequency::typical: return "typical";
    case dsm_access_frequency::infrequent_writes_infrequent_reads:
        return "infrequent_writes_infrequent_reads";
    case dsm_access_frequency::infrequent_writes_frequent_reads: return "infrequent_writes_frequent_reads";
    case dsm_access_frequency::frequent_writes_infrequent_reads: return "frequent_writes_infrequent_reads";
    case dsm_access_frequency::frequent_writes_frequent_reads: return "frequent_writes_frequent_reads";
    case dsm_access_frequency::one_time_read: return "one_time_read";
    case dsm_access_frequency::speculative_read: return "speculative_read";
    case dsm_access_frequency::overwritten_soon: return "overwritten_soon";
    }
    return {};
}

/// Access Latency of the dataset management hints, NVM 1.0.
enum class dsm_access_latency : std::uint8_t {
    no_information = 0b00,
    idle = 0b01,
    normal = 0b10,
    low = 0b11,
};

/// "none", "idle", "normal", "low".
[[nodiscard]] constexpr std::string_view name(dsm_access_latency value) noexcept
{
    switch (value) {
    case dsm_access_latency::no_information: return "none";
    case dsm_access_latency::idle: return "idle";
    case dsm_access_latency::normal: return "normal";
    case dsm_access_latency::low: return "low";
    }
    return {};
}

/// Dataset Management field (DSM) of Read and Write, CDW13 bits 07:00.
struct dsm_hints : word<dsm_hints, std::uint8_t> {
    using word::word;
    static constexpr field<0, 4, dsm_access_frequency> access_frequency{}; // AF: bits 03:00
    static constexpr field<4, 2, dsm_access_latency> access_latency{};     // AL: bits 05:04
    static constexpr field<6, 1, bool> sequential_request{};               // bit 06
    static constexpr field<7, 1, bool> incompressible{};                   // bit 07
};

/// CDW12 of the NVM commands that address an LBA range. All use NLB; Read, Write, Compare,
/// Write Zeroes and Verify use STC, PRINFO, FUA and LR; only Write uses DTYPE and only Write
/// Zeroes uses DEAC.
struct rw_cdw12 : word<rw_cdw12, std::uint32_t> {
    using word::word;
    static constexpr field<0, 16, std::uint16_t> nlb{};   // NLB: bits 15:00, 0-based
    static constexpr field<20, 4, std::uint8_t> dtype{};  // DTYPE: bits 23:20 directive type
    static constexpr field<24, 1, bool> stc{};            // STC: bit 24 storage tag check
    static constexpr field<25, 1, bool> deac{};           // DEAC: bit 25 deallocate
    static constexpr field<26, 4, std::uint8_t> prinfo{}; // PRINFO: bits 29:26
    static constexpr field<30, 1, bool> fua{};            // FUA: bit 30 force unit access
    static constexpr field<31, 1, bool> lr{};             // LR: bit 31 limited retry
};

/// CDW13 of Read (DSM only), Write (DSM and DSPEC) and Copy (DSPEC only).
struct rw_cdw13 : word<rw_cdw13, std::uint32_t> {
    using word::word;
    static constexpr field<0, 8, std::uint8_t> dsm{};      // DSM: bits 07:00, see dsm_hints
    static constexpr field<16, 16, std::uint16_t> dspec{}; // DSPEC: bits 31:16 directive specific
};

/// CDW15 of Read, Write, Compare, Write Zeroes, Verify and Copy: the (expected) logical block
/// application tag and its mask. CDW14 is the whole 32-bit (expected) initial reference tag.
struct rw_cdw15 : word<rw_cdw15, std::uint32_t> {
    using word::word;
    static constexpr field<0, 16, std::uint16_t> lbat{};   // LBAT/ELBAT: bits 15:00
    static constexpr field<16, 16, std::uint16_t> lbatm{}; // LBATM/ELBATM: bits 31:16
};

namespace detail {
[[nodiscard]] constexpr std::uint64_t decode_slba(const submission_queue_entry& entry) noexcept
{
    return join_dwords(entry.cdw10, entry.cdw11); // SLBA: CDW11:CDW10
}
[[nodiscard]] constexpr std::uint32_t decode_block_count(rw_cdw12 cdw12) noexcept
{
    return cdw12.get(cdw12.nlb) + 1U;
}
[[nodiscard]] constexpr std::uint16_t encode_nlb(std::uint32_t count) noexcept
{
    return static_cast<std::uint16_t>(count - 1);
}

/// Decodes into `view` the fields Read, Write, Compare, Verify and Write Zeroes share: SLBA, NLB,
/// STC, PRINFO, FUA and LR, the reference tag (CDW14) and the application tag and mask (CDW15).
template <typename View>
constexpr void decode_lba_command(View& view, const submission_queue_entry& entry) noexcept
{
    const rw_cdw12 cdw12{entry.cdw12};
    const rw_cdw15 cdw15{entry.cdw15};
    view.starting_lba = decode_slba(entry);
    view.block_count = decode_block_count(cdw12);
    view.storage_tag_check = cdw12.get(cdw12.stc);
    view.prinfo = protection_info_flags{cdw12.get(cdw12.prinfo)};
    view.force_unit_access = cdw12.get(cdw12.fua);
    view.limited_retry = cdw12.get(cdw12.lr);
    view.reference_tag = entry.cdw14;
    view.app_tag = cdw15.get(cdw15.lbat);
    view.app_tag_mask = cdw15.get(cdw15.lbatm);
}

/// Encodes the fields `decode_lba_command` reads: clears CDW10 through CDW15, writes CDW10, CDW11,
/// CDW14 and CDW15, and returns CDW12 for the command to add its own bits to before storing it.
template <typename View>
[[nodiscard]] constexpr rw_cdw12 encode_lba_command(const View& view, submission_queue_entry& entry) noexcept
{
    clear_command_dwords(entry);
    split_qword(view.starting_lba, entry.cdw10, entry.cdw11);
    entry.cdw14 = view.reference_tag;
    entry.cdw15 = rw_cdw15{}.with(rw_cdw15::lbat, view.app_tag).with(rw_cdw15::lbatm, view.app_tag_mask).raw;
    return rw_cdw12{}
        .with(rw_cdw12::nlb, encode_nlb(view.block_count))
        .with(rw_cdw12::stc, view.storage_tag_check)
        .with(rw_cdw12::prinfo, view.prinfo.raw)
        .with(rw_cdw12::fua, view.force_unit_access)
        .with(rw_cdw12::lr, view.limited_retry);
}
} // namespace detail

/// Read (02h). The tags are the expected ones (EILBRT, ELBAT, ELBATM), checked when PRINFO asks.
struct read_view {
    std::uint64_t starting_lba{};
    std::uint32_t block_count{}; ///< NLB + 1, 1 to 65536
    bool storage_tag_check{};
    protection_info_flags prinfo{};
    bool force_unit_access{};
    bool limited_retry{};
    dsm_hints dsm{};
    std::uint32_t reference_tag{};
    std::uint16_t app_tag{};
    std::uint16_t app_tag_mask{};

    [[nodiscard]] static constexpr read_view decode(const submission_queue_entry& entry) noexcept
    {
        read_view view{};
        detail::decode_lba_command(view, entry);
        view.dsm = dsm_hints{rw_cdw13{entry.cdw13}.get(rw_cdw13::dsm)};
        return view;
    }
    constexpr void encode(submission_queue_entry& entry) const noexcept
    {
        const rw_cdw12 cdw12 = detail::encode_lba_command(*this, entry);
        entry.cdw12 = cdw12.raw;
        entry.cdw13 = rw_cdw13{}.with(rw_cdw13::dsm, dsm.raw).raw;
    }
    friend constexpr bool operator==(const read_view&, const read_view&) noexcept = default;
};

/// Write (01h). The tags are the ones to write (ILBRT, LBAT, LBATM).
struct write_view {
    std::uint64_t starting_lba{};
    std::uint32_t block_count{}; ///< NLB + 1, 1 to 65536
    std::uint8_t directive_type{};
    bool storage_tag_check{};
    protection_info_flags prinfo{};
    bool force_unit_access{};
    bool limited_retry{};
    dsm_hints dsm{};
    std::uint16_t directive_specific{};
    std::uint32_t reference_tag{};
    std::uint16_t app_tag{};
    std::uint16_t app_tag_mask{};

    [[nodiscard]] static constexpr write_view decode(const submission_queue_entry& entry) noexcept
    {
        const rw_cdw13 cdw13{entry.cdw13};
        write_view view{};
        detail::decode_lba_command(view, entry);
        view.directive_type = rw_cdw12{entry.cdw12}.get(rw_cdw12::dtype);
        view.dsm = dsm_hints{cdw13.get(cdw13.dsm)};
        view.directive_specific = cdw13.get(cdw13.dspec);
        return view;
    }
    constexpr void encode(submission_queue_entry& entry) const noexcept
    {
        const rw_cdw12 cdw12 = detail::encode_lba_command(*this, entry);
        entry.cdw12 = cdw12.with(rw_cdw12::dtype, directive_type).raw;
        entry.cdw13 = rw_cdw13{}.with(rw_cdw13::dsm, dsm.raw).with(rw_cdw13::dspec, directive_specific).raw;
    }
    friend constexpr bool operator==(const write_view&, const write_view&) noexcept = default;
};

/// Compare (05h) and Verify (0Ch), which share their fields: Compare checks the LBA range against
/// the data in DPTR, Verify checks it without transferring data. The tags are the expected ones
/// (EILBRT, ELBAT, ELBATM).
template <nvm_opcode Opcode>
struct lba_check_view {
    static_assert(Opcode == nvm_opcode::compare || Opcode == nvm_opcode::verify);

    std::uint64_t starting_lba{};
    std::uint32_t block_count{}; ///< NLB + 1, 1 to 65536
    bool storage_tag_check{};
    protection_info_flags prinfo{};
    bool force_unit_access{};
    bool limited_retry{};
    std::uint32_t reference_tag{};
    std::uint16_t app_tag{};
    std::uint16_t app_tag_mask{};

    [[nodiscard]] static constexpr lba_check_view decode(const submission_queue_entry& entry) noexcept
    {
        lba_check_view view{};
        detail::decode_lba_command(view, entry);
        return view;
    }
    constexpr void encode(submission_queue_entry& entry) const noexcept
    {
        const rw_cdw12 cdw12 = detail::encode_lba_command(*this, entry);
        entry.cdw12 = cdw12.raw;
    }
    friend constexpr bool operator==(const lba_check_view&, const lba_check_view&) noexcept = default;
};

/// Compare (05h).
using compare_view = lba_check_view<nvm_opcode::compare>;
/// Verify (0Ch).
using verify_view = lba_check_view<nvm_opcode::verify>;

/// Write Uncorrectable (04h): only SLBA and NLB.
struct write_uncorrectable_view {
    std::uint64_t starting_lba{};
    std::uint32_t block_count{}; ///< NLB + 1, 1 to 65536

    [[nodiscard]] static constexpr write_uncorrectable_view
    decode(const submission_queue_entry& entry) noexcept
    {
        return {.starting_lba = detail::decode_slba(entry),
                .block_count = detail::decode_block_count(rw_cdw12{entry.cdw12})};
    }
    constexpr void encode(submission_queue_entry& entry) const noexcept
    {
        detail::clear_command_dwords(entry);
        split_qword(starting_lba, entry.cdw10, entry.cdw11);
        entry.cdw12 = rw_cdw12{}.with(rw_cdw12::nlb, detail::encode_nlb(block_count)).raw;
    }
    friend constexpr bool operator==(const write_uncorrectable_view&,
                                     const write_uncorrectable_view&) noexcept = default;
};

/// Write Zeroes (08h). The tags are the ones to write (ILBRT, LBAT, LBATM).
struct write_zeroes_view {
    std::uint64_t starting_lba{};
    std::uint32_t block_count{}; ///< NLB + 1, 1 to 65536
    bool storage_tag_check{};
    bool deallocate{}; ///< DEAC
    protection_info_flags prinfo{};
    bool force_unit_access{};
    bool limited_retry{};
    std::uint32_t reference_tag{};
    std::uint16_t app_tag{};
    std::uint16_t app_tag_mask{};

    [[nodiscard]] static constexpr write_zeroes_view decode(const submission_queue_entry& entry) noexcept
    {
        write_zeroes_view view{};
        detail::decode_lba_command(view, entry);
        view.deallocate = rw_cdw12{entry.cdw12}.get(rw_cdw12::deac);
        return view;
    }
    constexpr void encode(submission_queue_entry& entry) const noexcept
    {
        const rw_cdw12 cdw12 = detail::encode_lba_command(*this, entry);
        entry.cdw12 = cdw12.with(rw_cdw12::deac, deallocate).raw;
    }
    friend constexpr bool operator==(const write_zeroes_view&, const write_zeroes_view&) noexcept = default;
};

/// Flush (00h): no command dwords.
struct flush_view {
    [[nodiscard]] static constexpr flush_view decode(const submission_queue_entry& /*entry*/) noexcept
    {
        return {};
    }
    constexpr void encode(submission_queue_entry& entry) const noexcept
    {
        detail::clear_command_dwords(entry);
    }
    friend constexpr bool operator==(const flush_view&, const flush_view&) noexcept = default;
};

/// Dataset Management (09h) CDW10.
struct dataset_management_cdw10 : word<dataset_management_cdw10, std::uint32_t> {
    using word::word;
    static constexpr field<0, 8, std::uint8_t> nr{}; // NR: bits 07:00 number of ranges, 0-based
};

/// Dataset Management (09h) CDW11: the attributes that apply to every range.
struct dataset_management_cdw11 : word<dataset_management_cdw11, std::uint32_t> {
    using word::word;
    static constexpr field<0, 1, bool> idr{}; // IDR: bit 00 integral dataset for read
    static constexpr field<1, 1, bool> idw{}; // IDW: bit 01 integral dataset for write
    static constexpr field<2, 1, bool> ad{};  // AD: bit 02 deallocate
};

/// Dataset Management (09h). DPTR holds `range_count` `dataset_management_range` entries.
struct dataset_management_view {
    std::uint16_t range_count{}; ///< NR + 1, 1 to 256
    bool integral_read{};        ///< IDR
    bool integral_write{};       ///< IDW
    bool deallocate{};           ///< AD

    [[nodiscard]] static constexpr dataset_management_view
    decode(const submission_queue_entry& entry) noexcept
    {
        const dataset_management_cdw11 cdw11{entry.cdw11};
        return {
            .range_count = static_cast<std::uint16_t>(
                dataset_management_cdw10{entry.cdw10}.get(dataset_management_cdw10::nr) + 1U),
            .integral_read = cdw11.get(cdw11.idr),
            .integral_write = cdw11.get(cdw11.idw),
            .deallocate = cdw11.get(cdw11.ad),
        };
    }
    constexpr void encode(submission_queue_entry& entry) const noexcept
    {
        detail::clear_command_dwords(entry);
        entry.cdw10 = dataset_management_cdw10{}
                          .with(dataset_management_cdw10::nr, static_cast<std::uint8_t>(range_count - 1))
                          .raw;
        entry.cdw11 = dataset_management_cdw11{}
                          .with(dataset_management_cdw11::idr, integral_read)
                          .with(dataset_management_cdw11::idw, integral_write)
                          .with(dataset_management_cdw11::ad, deallocate)
                          .raw;
    }
    friend constexpr bool operator==(const dataset_management_view&,
                                     const dataset_management_view&) noexcept = default;
};

/// Context Attributes of a Dataset Management range, NVM 1.0.
struct dsm_context_attributes : word<dsm_context_attributes, std::uint32_t> {
    using word::word;
    static constexpr field<0, 4, dsm_access_frequency> access_frequency{}; // AF: bits 03:00
    static constexpr field<4, 2, dsm_access_latency> access_latency{};     // AL: bits 05:04
    static constexpr field<8, 1, bool> sequential_read{};                  // SR: bit 08
    static constexpr field<9, 1, bool> sequential_write{};                 // SW: bit 09
    static constexpr field<10, 1, bool> write_prepare{};                   // WP: bit 10
    static constexpr field<24, 8, std::uint8_t> command_access_size{};     // bits 31:24, in LBAs
};

/// One Dataset Management range (16 bytes), NVM 1.0.
struct dataset_management_range {
    dsm_context_attributes context_attributes; // bytes 03:00
    std::uint32_t block_count;                 // bytes 07:04 Length in logical blocks (not 0-based)
    std::uint64_t starting_lba;                // bytes 15:08

    friend constexpr bool operator==(const dataset_management_range&,
                                     const dataset_management_range&) noexcept = default;
};
static_assert(sizeof(dataset_management_range) == 16);
static_assert(offsetof(dataset_management_range, context_attributes) == 0);
static_assert(offsetof(dataset_management_range, block_count) == 4);
static_assert(offsetof(dataset_management_range, starting_lba) == 8);
static_assert(is_wire_type_v<dataset_management_range>);

/// Copy (19h) CDW12. Bits 19:16 are reserved in NVM 1.0.
struct copy_cdw12 : word<copy_cdw12, std::uint32_t> {
    using word::word;
    static constexpr field<0, 8, std::uint8_t> nr{};       // NR: bits 07:00 number of ranges, 0-based
    static constexpr field<8, 4, std::uint8_t> desfmt{};   // DESFMT: bits 11:08 descriptor format
    static constexpr field<12, 4, std::uint8_t> prinfor{}; // PRINFOR: bits 15:12 PRINFO for reads
    static constexpr field<20, 4, std::uint8_t> dtype{};   // DTYPE: bits 23:20 directive type
    static constexpr field<24, 1, bool> stcw{};            // STCW: bit 24 storage tag check for write
    static constexpr field<26, 4, std::uint8_t> prinfow{}; // PRINFOW: bits 29:26 PRINFO for writes
    static constexpr field<30, 1, bool> fua{};             // FUA: bit 30
    static constexpr field<31, 1, bool> lr{};              // LR: bit 31
};

/// Copy (19h). CDW13 carries DSPEC as `rw_cdw13`, CDW15 the tags to write as `rw_cdw15`; DPTR
/// holds `range_count` source range entries in format `descriptor_format`.
struct copy_view {
    std::uint64_t destination_lba{}; ///< SDLBA: CDW11:CDW10
    std::uint16_t range_count{};     ///< NR + 1, 1 to 256
    std::uint8_t descriptor_format{};
    protection_info_flags prinfo_read{};
    std::uint8_t directive_type{};
    bool storage_tag_check_write{};
    protection_info_flags prinfo_write{};
    bool force_unit_access{};
    bool limited_retry{};
    std::uint16_t directive_specific{};
    std::uint32_t reference_tag{}; ///< CDW14, initial reference tag of the written blocks
    std::uint16_t app_tag{};
    std::uint16_t app_tag_mask{};

    [[nodiscard]] static constexpr copy_view decode(const submission_queue_entry& entry) noexcept
    {
        const copy_cdw12 cdw12{entry.cdw12};
        const rw_cdw15 cdw15{entry.cdw15};
        return {
            .destination_lba = join_dwords(entry.cdw10, entry.cdw11),
            .range_count = static_cast<std::uint16_t>(cdw12.get(cdw12.nr) + 1U),
            .descriptor_format = cdw12.get(cdw12.desfmt),
            .prinfo_read = protection_info_flags{cdw12.get(cdw12.prinfor)},
            .directive_type = cdw12.get(cdw12.dtype),
            .storage_tag_check_write = cdw12.get(cdw12.stcw),
            .prinfo_write = protection_info_flags{cdw12.get(cdw12.prinfow)},
            .force_unit_access = cdw12.get(cdw12.fua),
            .limited_retry = cdw12.get(cdw12.lr),
            .directive_specific = rw_cdw13{entry.cdw13}.get(rw_cdw13::dspec),
            .reference_tag = entry.cdw14,
            .app_tag = cdw15.get(cdw15.lbat),
            .app_tag_mask = cdw15.get(cdw15.lbatm),
        };
    }
    constexpr void encode(submission_queue_entry& entry) const noexcept
    {
        detail::clear_command_dwords(entry);
        split_qword(destination_lba, entry.cdw10, entry.cdw11);
        entry.cdw12 = copy_cdw12{}
                          .with(copy_cdw12::nr, static_cast<std::uint8_t>(range_count - 1))
                          .with(copy_cdw12::desfmt, descriptor_format)
                          .with(copy_cdw12::prinfor, prinfo_read.raw)
                          .with(copy_cdw12::dtype, directive_type)
                          .with(copy_cdw12::stcw, storage_tag_check_write)
                          .with(copy_cdw12::prinfow, prinfo_write.raw)
                          .with(copy_cdw12::fua, force_unit_access)
                          .with(copy_cdw12::lr, limited_retry)
                          .raw;
        entry.cdw13 = rw_cdw13{}.with(rw_cdw13::dspec, directive_specific).raw;
        entry.cdw14 = reference_tag;
        entry.cdw15 = rw_cdw15{}.with(rw_cdw15::lbat, app_tag).with(rw_cdw15::lbatm, app_tag_mask).raw;
    }
    friend constexpr bool operator==(const copy_view&, const copy_view&) noexcept = default;
};

/// Copy Source Range Entry, descriptor format 0h (32 bytes), NVM 1.0. The tags are the expected
/// ones of the source blocks.
struct copy_source_range {
    std::array<std::uint8_t, 8> rsvd0;  // bytes 07:00
    std::uint64_t starting_lba;         // bytes 15:08 SLBA
    std::uint16_t nlb_raw;              // bytes 17:16 NLB, 0-based as on the wire: see block_count()
    std::array<std::uint8_t, 2> rsvd18; // bytes 19:18
    std::array<std::uint8_t, 4> rsvd20; // bytes 23:20
    std::uint32_t reference_tag;        // bytes 27:24 ELBT: expected initial logical block reference tag
    std::uint16_t app_tag;              // bytes 29:28 ELBAT
    std::uint16_t app_tag_mask;         // bytes 31:30 ELBATM

    /// NLB + 1, 1 to 65536.
    [[nodiscard]] constexpr std::uint32_t block_count() const noexcept { return nlb_raw + 1U; }
    constexpr void set_block_count(std::uint32_t count) noexcept
    {
        nlb_raw = static_cast<std::uint16_t>(count - 1);
    }

    friend constexpr bool operator==(const copy_source_range&, const copy_source_range&) noexcept = default;
};
static_assert(sizeof(copy_source_range) == 32);
static_assert(offsetof(copy_source_range, starting_lba) == 8);
static_assert(offsetof(copy_source_range, nlb_raw) == 16);
static_assert(offsetof(copy_source_range, rsvd18) == 18);
static_assert(offsetof(copy_source_range, rsvd20) == 20);
static_assert(offsetof(copy_source_range, reference_tag) == 24);
static_assert(offsetof(copy_source_range, app_tag) == 28);
static_assert(offsetof(copy_source_range, app_tag_mask) == 30);
static_assert(is_wire_type_v<copy_source_range>);

} // namespace spec
NVMEKIT_END_NAMESPACE
