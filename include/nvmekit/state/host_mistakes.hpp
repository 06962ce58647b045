#pragma once
/// Which trace event names a host mistake: the one a failed command's status names, and the one
/// a register access the register file refused names (tracer.hpp lists the events).
///
///     tracer.trace({.event = host_mistake_event(status), ...});  // err_invalid_field, ...
///     tracer.trace({.event = register_error_event(registers.last_host_error()), .value = offset});

#include <utility>

#include <nvmekit/config.hpp>
#include <nvmekit/contracts/tracer.hpp>
#include <nvmekit/spec/status.hpp>
#include <nvmekit/state/register_file.hpp>

NVMEKIT_BEGIN_NAMESPACE

/// The trace event of a failed command: the host mistake its status names, else command_failed.
[[nodiscard]] constexpr trace_event host_mistake_event(spec::status status) noexcept
{
    using spec::command_specific_status;
    using spec::generic_status;
    constexpr std::pair<spec::status, trace_event> host_mistakes[]{
        {generic_status::invalid_opcode, trace_event::err_invalid_opcode},
        {generic_status::invalid_field, trace_event::err_invalid_field},
        {generic_status::invalid_namespace_or_format, trace_event::err_invalid_namespace},
        {generic_status::lba_out_of_range, trace_event::err_lba_out_of_range},
        {generic_status::prp_offset_invalid, trace_event::err_invalid_prp_offset},
        {generic_status::invalid_sgl_segment_descriptor, trace_event::err_invalid_sgl},
        {generic_status::sgl_descriptor_type_invalid, trace_event::err_invalid_sgl},
        {generic_status::sgl_offset_invalid, trace_event::err_invalid_sgl},
        {generic_status::invalid_sgl_descriptor_count, trace_event::err_invalid_sgl_count},
        {generic_status::data_sgl_length_invalid, trace_event::err_invalid_sgl_length},
        {generic_status::metadata_sgl_length_invalid, trace_event::err_invalid_sgl_length},
        {command_specific_status::completion_queue_invalid, trace_event::err_invalid_create_cqid},
        {command_specific_status::invalid_queue_identifier, trace_event::err_invalid_qid},
        {command_specific_status::invalid_queue_size, trace_event::err_invalid_queue_size},
        {command_specific_status::invalid_queue_deletion, trace_event::err_invalid_queue_deletion},
        {command_specific_status::invalid_interrupt_vector, trace_event::err_invalid_vector},
        {command_specific_status::invalid_log_page, trace_event::err_invalid_log_page},
        {command_specific_status::invalid_format, trace_event::err_invalid_format},
    };
    for (const auto& [mistake, event] : host_mistakes) {
        if (status.same_code(mistake)) {
            return event;
        }
    }
    return trace_event::command_failed;
}

/// The trace event of a register access the register file refused (`none` is not a refusal and
/// gives err_mmio_unsupported_width, the event of the first check an access fails).
[[nodiscard]] constexpr trace_event register_error_event(register_host_error error) noexcept
{
    switch (error) {
    case register_host_error::none:
    case register_host_error::unsupported_width: return trace_event::err_mmio_unsupported_width;
    case register_host_error::misaligned: return trace_event::err_mmio_misaligned;
    case register_host_error::width_mismatch: return trace_event::err_mmio_width_mismatch;
    case register_host_error::reserved_space_write: return trace_event::err_mmio_reserved_write;
    case register_host_error::read_only_register_write: return trace_event::err_mmio_read_only_register_write;
    case register_host_error::read_only_bits_write: return trace_event::err_mmio_read_only_bits_write;
    case register_host_error::not_a_doorbell: return trace_event::err_mmio_not_a_doorbell;
    case register_host_error::doorbell_beyond_max_queue:
        return trace_event::err_mmio_doorbell_beyond_max_queue;
    case register_host_error::nssr_not_supported: return trace_event::err_mmio_nssr_unsupported;
    }
    return trace_event::err_mmio_unsupported_width;
}

NVMEKIT_END_NAMESPACE
