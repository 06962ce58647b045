#pragma once
/// The Tracer policy: a named event for every host mistake the controller detects (as QEMU's
/// `pci_nvme_err_*` trace events) and for each step of a command's life. The controller calls
/// `trace()` from the context that detects the event: with concurrent poll groups, from several
/// threads at once. `null_tracer`, the default, does nothing and costs nothing.
///
/// | expression     | type | semantics |
/// |----------------|------|-----------|
/// | `T{}`          | `T`  | a tracer the controller owns (reach it through `controller::tracer()`) |
/// | `t.trace(r)`   | any  | `r` is a `const trace_record&`: one event; must not throw |

#include <array>
#include <concepts>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include <nvmekit/config.hpp>
#include <nvmekit/spec/status.hpp>

NVMEKIT_BEGIN_NAMESPACE

/// The events a tracer receives. `err_*` events are host mistakes; the others are the steps of
/// a command's life and are in the order a command passes them. The fields of trace_record each
/// event fills are named after it.
enum class trace_event : std::uint8_t {
    // ---- register accesses (value: BAR0 offset) ----
    err_mmio_unsupported_width,         ///< access width other than 4 or 8 bytes
    err_mmio_misaligned,                ///< offset not a multiple of the width
    err_mmio_width_mismatch,            ///< 8-byte access to a 32-bit register, reserved space or a doorbell
    err_mmio_reserved_write,            ///< write to reserved register space
    err_mmio_read_only_register_write,  ///< write to a read-only register
    err_mmio_read_only_bits_write,      ///< write changing read-only or reserved bits
    err_mmio_not_a_doorbell,            ///< access above 1000h not at the start of a doorbell
    err_mmio_doorbell_beyond_max_queue, ///< doorbell of a QID above the controller's maximum
    err_mmio_nssr_unsupported,          ///< NSSR written while CAP.NSSRS = 0
    // ---- controller enable (CC.EN 0 to 1; value: the offending register) ----
    err_startfail_page_size,       ///< CC.MPS outside CAP.MPSMIN..MPSMAX (value: CC)
    err_startfail_css,             ///< CC.CSS not the NVM command set (value: CC)
    err_startfail_ams,             ///< CC.AMS not round robin (value: CC)
    err_startfail_asq_size,        ///< AQA.ASQS outside 1..4095 (value: AQA)
    err_startfail_acq_size,        ///< AQA.ACQS outside 1..4095 (value: AQA)
    err_startfail_asq_misaligned,  ///< ASQ not aligned to the memory page size (value: ASQ)
    err_startfail_acq_misaligned,  ///< ACQ not aligned to the memory page size (value: ACQ)
    err_enable_before_ready_clear, ///< CC.EN = 1 written before CSTS.RDY read 0 after a reset
    /// no command within the Keep Alive Timeout: the controller fails (value: KATO ms)
    err_keep_alive_expired,
    /// a register event the controller state does not accept (value: state << 8 | event)
    err_invalid_state_transition,
    // ---- doorbells (qid; value: the value written) ----
    err_doorbell_invalid_sq,      ///< SQ Tail doorbell of a queue that does not exist
    err_doorbell_invalid_cq,      ///< CQ Head doorbell of a queue that does not exist
    err_doorbell_invalid_sq_tail, ///< SQ tail beyond the queue's size
    err_doorbell_invalid_cq_head, ///< CQ head beyond the queue's size
    err_doorbell_not_ready,       ///< SQ Tail doorbell while the controller is not ready or is shut down
    // ---- host memory (qid, cid when a command's) ----
    err_dma,                 ///< a command's data or PRP/SGL list could not be reached (status)
    err_queue_dma,           ///< a queue entry could not be read or written: the controller fails
    err_shadow_doorbell_dma, ///< a shadow doorbell or EventIdx slot could not be reached (qid)
    // ---- commands (qid, cid, opcode, nsid, status) ----
    err_invalid_opcode,         ///< Invalid Command Opcode
    err_invalid_field,          ///< Invalid Field in Command
    err_invalid_namespace,      ///< Invalid Namespace or Format
    err_lba_out_of_range,       ///< LBA Out of Range
    err_invalid_prp_offset,     ///< PRP Offset Invalid
    err_invalid_sgl,            ///< an SGL segment, descriptor type or offset the spec forbids
    err_invalid_sgl_count,      ///< Invalid Number of SGL Descriptors
    err_invalid_sgl_length,     ///< Data or Metadata SGL Length Invalid
    err_invalid_create_cqid,    ///< Completion Queue Invalid (Create I/O SQ)
    err_invalid_qid,            ///< Invalid Queue Identifier
    err_invalid_queue_size,     ///< Invalid Queue Size
    err_invalid_queue_deletion, ///< Invalid Queue Deletion (a CQ with SQs bound, or the admin queue)
    err_invalid_vector,         ///< Invalid Interrupt Vector
    err_invalid_log_page,       ///< Invalid Log Page
    err_invalid_format,         ///< Invalid Format
    /// a completion waits: the host has not consumed its CQ (qid: SQ; value: CQ ID)
    err_cq_full,
    command_failed, ///< any other error status (media, internal, aborts)
    // ---- the life of a command ----
    sqe_fetched,        ///< read from the SQ (qid, cid, opcode, nsid)
    command_dispatched, ///< handed to its handler (qid, cid, opcode, nsid)
    /// the data pointer walked and the host buffer mapped or copied (qid, cid; value: bytes)
    data_prepared,
    backend_submitted, ///< a backend request submitted (qid, cid, opcode, nsid; value: byte offset)
    backend_completed, ///< a backend request completed (qid, cid, opcode, nsid; value: block_status)
    cqe_posted,        ///< the completion written (qid: SQ, cid, status; value: CQ ID)
    interrupt_raised,  ///< an MSI-X vector signalled (value: vector)
};

/// Number of trace_event enumerators.
inline constexpr std::size_t trace_event_count = static_cast<std::size_t>(trace_event::interrupt_raised) + 1U;

namespace detail {
inline constexpr std::array<std::string_view, trace_event_count> trace_event_names{
    "err_mmio_unsupported_width",
    "err_mmio_misaligned",
    "err_mmio_width_mismatch",
    "err_mmio_reserved_write",
    "err_mmio_read_only_register_write",
    "err_mmio_read_only_bits_write",
    "err_mmio_not_a_doorbell",
    "err_mmio_doorbell_beyond_max_queue",
    "err_mmio_nssr_unsupported",
    "err_startfail_page_size",
    "err_startfail_css",
    "err_startfail_ams",
    "err_startfail_asq_size",
    "err_startfail_acq_size",
    "err_startfail_asq_misaligned",
    "err_startfail_acq_misaligned",
    "err_enable_before_ready_clear",
    "err_keep_alive_expired",
    "err_invalid_state_transition",
    "err_doorbell_invalid_sq",
    "err_doorbell_invalid_cq",
    "err_doorbell_invalid_sq_tail",
    "err_doorbell_invalid_cq_head",
    "err_doorbell_not_ready",
    "err_dma",
    "err_queue_dma",
    "err_shadow_doorbell_dma",
    "err_invalid_opcode",
    "err_invalid_field",
    "err_invalid_namespace",
    "err_lba_out_of_range",
    "err_invalid_prp_offset",
    "err_invalid_sgl",
    "err_invalid_sgl_count",
    "err_invalid_sgl_length",
    "err_invalid_create_cqid",
    "err_invalid_qid",
    "err_invalid_queue_size",
    "err_invalid_queue_deletion",
    "err_invalid_vector",
    "err_invalid_log_page",
    "err_invalid_format",
    "err_cq_full",
    "command_failed",
    "sqe_fetched",
    "command_dispatched",
    "data_prepared",
    "backend_submitted",
    "backend_completed",
    "cqe_posted",
    "interrupt_raised",
};
} // namespace detail

/// The stable name of `event` (its enumerator's name), for logs and trace tools.
[[nodiscard]] constexpr std::string_view name(trace_event event) noexcept
{
    const auto index = static_cast<std::size_t>(event);
    return index < trace_event_count ? detail::trace_event_names[index] : std::string_view{"unknown"};
}

/// True for the events that are host mistakes.
[[nodiscard]] constexpr bool is_host_error(trace_event event) noexcept
{
    return event < trace_event::command_failed;
}

/// True for the events that concern one command: they carry its qid, cid, opcode and nsid.
[[nodiscard]] constexpr bool carries_command(trace_event event) noexcept
{
    return event == trace_event::err_dma ||
           (event >= trace_event::err_invalid_opcode && event <= trace_event::cqe_posted);
}

/// One trace event and its fields; a field an event does not use is 0.
struct trace_record {
    trace_event event{};
    std::uint8_t opcode = 0; ///< the command's opcode (admin when qid is 0)
    std::uint16_t qid = 0;   ///< the queue the event concerns
    std::uint16_t cid = 0;   ///< the command identifier
    spec::status status{};   ///< a command's status
    std::uint32_t nsid = 0;  ///< the command's namespace
    std::uint64_t value = 0; ///< event-specific: an offset, a register, a doorbell value...

    friend constexpr bool operator==(const trace_record&, const trace_record&) noexcept = default;
};
static_assert(std::is_trivially_copyable_v<trace_record>);
static_assert(sizeof(trace_record) == 24);

/// Receives trace events (see the table above).
// clang-format off
template <typename T>
concept TraceSink = requires(T& tracer, const trace_record& record) { tracer.trace(record); };
// clang-format on

/// A tracer the controller can own and call.
template <typename T>
concept Tracer = TraceSink<T> && std::default_initializable<T>;

/// Checks `T` models Tracer with a readable diagnostic, one message per missing operation.
template <typename T>
consteval bool check_tracer()
{
    static_assert(TraceSink<T>, "Tracer: the type lacks `trace(const nvmekit::trace_record&)`");
    static_assert(std::default_initializable<T>, "Tracer: the type lacks a default constructor");
    return Tracer<T>;
}

/// The default tracer: every event compiles to nothing.
struct null_tracer {
    constexpr void trace(const trace_record&) const noexcept {}
};
static_assert(Tracer<null_tracer>);
static_assert(std::is_empty_v<null_tracer>);

namespace detail {
/// Calls `tracer.trace(record)` in a function of its own.
template <typename T>
[[gnu::noinline]] void trace_out_of_line(T& tracer, const trace_record& record)
{
    tracer.trace(record);
}

/// How the controller calls its tracer: never for null_tracer, else out of line, so that a
/// tracer's code (formatting, logging) is not inlined into the hot paths the controller compiles
/// as one piece.
template <typename T>
NVMEKIT_HOT_INLINE inline void emit_trace(T& tracer, const trace_record& record)
{
    if constexpr (!std::is_same_v<std::remove_const_t<T>, null_tracer>) {
        trace_out_of_line(tracer, record);
    } else {
        static_cast<void>(tracer);
        static_cast<void>(record);
    }
}
} // namespace detail

NVMEKIT_END_NAMESPACE
