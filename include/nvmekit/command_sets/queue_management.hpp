#pragma once
/// Queue management over PCIe (Base 2.0 5.4 - 5.8): Create and Delete I/O Completion Queue,
/// Create and Delete I/O Submission Queue, and Doorbell Buffer Config, as admin command handlers.
/// They check the command against the controller's registers and queues and then add or delete
/// the queue through the context's queue operations (AdminHandlerContext, handler_context.hpp).
///
/// A controller with message-based queues (NVMe over Fabrics 1.1) connects its queues instead and
/// has no doorbells: there these commands complete with Invalid Command Opcode, and the Commands
/// Supported and Effects log leaves out `opcodes`.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>

#include <nvmekit/config.hpp>
#include <nvmekit/core/dispatcher.hpp>
#include <nvmekit/queues/queue_memory.hpp>
#include <nvmekit/spec/commands.hpp>
#include <nvmekit/spec/opcodes.hpp>
#include <nvmekit/spec/registers.hpp>
#include <nvmekit/spec/status.hpp>

NVMEKIT_BEGIN_NAMESPACE

template <typename Controller>
struct queue_management_commands {
    using command = typename Controller::command;

    /// The commands of this set, which a controller with message-based queues does not offer.
    static constexpr std::array opcodes{spec::admin_opcode::delete_io_sq, spec::admin_opcode::create_io_sq,
                                        spec::admin_opcode::delete_io_cq, spec::admin_opcode::create_io_cq,
                                        spec::admin_opcode::doorbell_buffer_config};

    /// Whether `c` offers Doorbell Buffer Config: not with message-based queues, and not where the
    /// controller says it cannot read shadow doorbells (`Controller::shadow_doorbells_supported`
    /// false: asynchronous DMA).
    [[nodiscard]] static bool shadow_doorbells_offered(const Controller& c) noexcept
    {
        if constexpr (requires { Controller::shadow_doorbells_supported; }) {
            if (!Controller::shadow_doorbells_supported) {
                return false;
            }
        }
        return !c.message_based();
    }

    /// Create I/O Completion Queue, Base 2.0 5.4.
    static command_result create_io_cq(Controller& c, command& cmd)
    {
        if (c.message_based()) {
            return fail(spec::generic_status::invalid_opcode); // queues are connected, not created
        }
        const auto view = spec::create_io_cq_view::decode(cmd.sqe);
        if (view.queue_id == 0 || view.queue_id > c.allowed_completion_queues() ||
            c.completion_queue_exists(view.queue_id)) {
            return fail(spec::command_specific_status::invalid_queue_identifier);
        }
        if (view.queue_size < 2 || view.queue_size > c.registers().cap().max_queue_entries()) {
            return fail(spec::command_specific_status::invalid_queue_size);
        }
        if (c.registers().cc().get(spec::cc_register::iocqes) != 4) {
            // The entries would not be the 16 bytes this controller posts (Identify CQES); the
            // Base specification names no status of its own for this.
            return fail(spec::command_specific_status::invalid_queue_size);
        }
        if (view.interrupt_vector >= Controller::limits.msix_vectors) {
            return fail(spec::command_specific_status::invalid_interrupt_vector);
        }
        std::optional<queue_memory> memory;
        if (const auto status = memory_of(c, cmd, view.physically_contiguous, view.queue_size, 16, memory);
            !status.is_success()) {
            return command_result::failure(status);
        }
        c.add_completion_queue(view.queue_id, view.queue_size, std::move(*memory), view.interrupt_vector,
                               view.interrupts_enabled);
        return command_result::success();
    }

    /// Create I/O Submission Queue, Base 2.0 5.5.
    static command_result create_io_sq(Controller& c, command& cmd)
    {
        if (c.message_based()) {
            return fail(spec::generic_status::invalid_opcode);
        }
        const auto view = spec::create_io_sq_view::decode(cmd.sqe);
        if (view.queue_id == 0 || view.queue_id > c.allowed_submission_queues() ||
            c.submission_queue_exists(view.queue_id)) {
            return fail(spec::command_specific_status::invalid_queue_identifier);
        }
        if (view.queue_size < 2 || view.queue_size > c.registers().cap().max_queue_entries()) {
            return fail(spec::command_specific_status::invalid_queue_size);
        }
        if (c.registers().cc().get(spec::cc_register::iosqes) != 6) {
            return fail(spec::command_specific_status::invalid_queue_size); // 64-byte entries only (SQES)
        }
        if (view.cq_id == 0 || !c.completion_queue_exists(view.cq_id)) {
            return fail(spec::command_specific_status::completion_queue_invalid);
        }
        std::optional<queue_memory> memory;
        if (const auto status = memory_of(c, cmd, view.physically_contiguous, view.queue_size, 64, memory);
            !status.is_success()) {
            return command_result::failure(status);
        }
        c.add_submission_queue(view.queue_id, view.cq_id, view.queue_size, std::move(*memory));
        return command_result::success();
    }

    /// Delete I/O Submission Queue, Base 2.0 5.7: completes once every command of the queue is
    /// aborted, at once or when the backend returns the last of them.
    static command_result delete_io_sq(Controller& c, command& cmd)
    {
        if (c.message_based()) {
            return fail(spec::generic_status::invalid_opcode);
        }
        const auto view = spec::delete_io_sq_view::decode(cmd.sqe);
        if (view.queue_id == 0 || !c.submission_queue_exists(view.queue_id)) {
            return fail(spec::command_specific_status::invalid_queue_identifier);
        }
        return c.delete_submission_queue(cmd, view.queue_id);
    }

    /// Delete I/O Completion Queue, Base 2.0 5.6.
    static command_result delete_io_cq(Controller& c, command& cmd)
    {
        if (c.message_based()) {
            return fail(spec::generic_status::invalid_opcode);
        }
        const auto view = spec::delete_io_cq_view::decode(cmd.sqe);
        if (view.queue_id == 0 || !c.completion_queue_exists(view.queue_id)) {
            return fail(spec::command_specific_status::invalid_queue_identifier);
        }
        if (c.bound_submission_queues(view.queue_id) != 0) {
            return fail(spec::command_specific_status::invalid_queue_deletion);
        }
        c.delete_completion_queue(view.queue_id);
        return command_result::success();
    }

    /// Doorbell Buffer Config (Base 2.0 5.8): PRP1 the shadow doorbell buffer, PRP2 the EventIdx
    /// buffer, each one memory page.
    static command_result doorbell_buffer_config(Controller& c, command& cmd)
    {
        if (!shadow_doorbells_offered(c)) {
            return fail(spec::generic_status::invalid_opcode);
        }
        const auto view = spec::doorbell_buffer_config_view::decode(cmd.sqe);
        const std::uint64_t page_mask = c.memory_page_size() - 1U;
        if (cmd.sqe.pointer_type() != spec::data_pointer_type::prp ||
            (view.shadow_doorbell_address & page_mask) != 0 || (view.eventidx_address & page_mask) != 0) {
            return fail(spec::generic_status::invalid_field);
        }
        c.configure_shadow_doorbells(view.shadow_doorbell_address, view.eventidx_address);
        return command_result::success();
    }

private:
    [[nodiscard]] static spec::status error(auto code) noexcept { return spec::status{code}.with_dnr(); }
    [[nodiscard]] static command_result fail(auto code) noexcept
    {
        return command_result::failure(error(code));
    }

    /// The memory of a queue of `entries` entries of `entry_bytes` the command's PRP1 gives: the
    /// contiguous queue it starts, or the PRP list it points at (refused when CAP.CQR is set).
    [[nodiscard]] static spec::status memory_of(Controller& c, const command& cmd, bool physically_contiguous,
                                                std::uint32_t entries, std::size_t entry_bytes,
                                                std::optional<queue_memory>& out)
    {
        const auto& sqe = cmd.sqe;
        const std::uint64_t page_mask = c.memory_page_size() - 1U;
        if (physically_contiguous) {
            if ((sqe.dptr.prp1 & page_mask) != 0) {
                return error(spec::generic_status::prp_offset_invalid);
            }
            if (sqe.dptr.prp1 > ~std::uint64_t{0} - std::uint64_t{entries} * entry_bytes) {
                return error(spec::generic_status::invalid_field); // the queue would wrap the address space
            }
            out.emplace(queue_memory::contiguous(sqe.dptr.prp1));
            return spec::status::success();
        }
        if (c.registers().cap().get(spec::cap_register::cqr)) {
            return error(spec::generic_status::invalid_field);
        }
        queue_memory memory = queue_memory::contiguous(0);
        const spec::status status =
            c.queue_memory_from_prp_list(cmd, sqe.dptr.prp1, std::size_t{entries} * entry_bytes, memory);
        if (!status.is_success()) {
            return status.with_dnr();
        }
        out.emplace(std::move(memory));
        return spec::status::success();
    }
};

NVMEKIT_END_NAMESPACE
