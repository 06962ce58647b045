#pragma once
/// Message-based queues: how a transport without BAR0 (NVMe over Fabrics, testing/loopback.hpp)
/// reaches the controller. Registers are properties, the admin queue and I/O queue pairs are
/// connected rather than created in host memory, and commands and completions are handed over.
///
/// It owns whether the admin queue is message-based, its size, and the CDW0 bits each command is
/// checked for (PSDT 01b on message-based queues).
///
/// Composition: transport::message_queues<Controller, Traits> is a base of nvmekit::controller
/// (CRTP; controller.hpp), reaching the registers, queues and poll groups through self().

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include <nvmekit/config.hpp>
#include <nvmekit/core/io_context.hpp>
#include <nvmekit/queues/cq_ring.hpp>
#include <nvmekit/queues/queue_pair.hpp>
#include <nvmekit/queues/sq_ring.hpp>
#include <nvmekit/spec/commands.hpp>
#include <nvmekit/spec/features.hpp>
#include <nvmekit/spec/queue_entries.hpp>
#include <nvmekit/spec/registers.hpp>
#include <nvmekit/spec/status.hpp>
#include <nvmekit/state/reset_state_machine.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace transport {

/// Message queues of `Controller`; see the top of this header. `Controller` derives from it and
/// befriends it.
template <typename Controller, typename Traits>
class message_queues {
protected:
    using command = detail::controller_command<Controller, Traits>;
    static constexpr nvmekit::limits limits = Traits::limits;

    message_queues() = default;
    message_queues(const message_queues&) = delete;
    message_queues& operator=(const message_queues&) = delete;

    [[nodiscard]] Controller& self() noexcept { return static_cast<Controller&>(*this); }
    [[nodiscard]] const Controller& self() const noexcept { return static_cast<const Controller&>(*this); }

public:
    // ---- message-based transports ------------------------------------------------------------
    // A transport without BAR0 (NVMe over Fabrics, the in-memory loopback of testing/loopback.hpp)
    // reaches the controller's registers as properties, and its queues are message-based: each
    // command arrives as an SQE the transport hands over (submit), each completion leaves as the
    // CQE the transport takes (take_completion) and sends on. No doorbell, no queue memory in the
    // host and no interrupt take part; a command's data is reached through its data pointer and
    // the DMA provider, which for such a transport maps the buffers that carry the data. The
    // admin queue is connected before the controller is enabled and lasts across Controller
    // Resets, which delete the I/O queues (NVMe over Fabrics 1.1 3.4, 3.5; Base 2.0 3.7.2); Create
    // and Delete I/O SQ/CQ and Doorbell Buffer Config are then not offered. Call these from the
    // admin context for the admin queue, and from the context that runs an I/O queue's poll group
    // for that queue (the admin context without concurrent poll groups).

    /// Reads a controller property (Base 2.0 3.1.4, Figure 35; NVMe over Fabrics 1.1 Figure 16):
    /// CAP (8 bytes at 0h), VS (8h), CC (14h), CSTS (1Ch), CRTO (68h, which a host reads when
    /// CAP.CRMS.CRWMS is set) and, when CAP.NSSRS is set, NSSR (20h), each 4 bytes. Nothing for
    /// another offset, or another size than the property's: the registers of a PCIe controller
    /// alone (INTMS, AQA, ASQ, ACQ, the CMB and boot partition registers) are no properties.
    [[nodiscard]] std::optional<std::uint64_t> property_read(std::uint64_t offset, unsigned width)
    {
        if (!is_property(offset, width, false)) {
            return std::nullopt;
        }
        return self().mmio_read(offset, width);
    }

    /// Writes a controller property a host may set: CC, and when CAP.NSSRS is set NSSR and CSTS
    /// (whose one writable bit, NSSRO, only an NVM Subsystem Reset sets); they act as the same
    /// register written through BAR0 does (the reset state machine, shutdown, NVM Subsystem
    /// Reset). False, changing nothing, for a read-only property, another offset or another size.
    bool property_write(std::uint64_t offset, unsigned width, std::uint64_t value)
    {
        if (!is_property(offset, width, true)) {
            return false;
        }
        self().mmio_write(offset, width, value);
        return true;
    }

    /// Connects the message-based admin queue pair of `entries` slots (2 to 4096). Only while the
    /// controller is disabled (CC.EN = 0 and CSTS.RDY = 0), and only once: it stays connected for
    /// the controller's life, and from then on CC.EN = 1 takes this queue instead of AQA, ASQ and
    /// ACQ. Returns Invalid Queue Size or a Command Sequence Error otherwise. A fabrics Connect's
    /// KATO (`keep_alive_timeout_ms`, 0: none) becomes the Keep Alive Timer feature and starts the
    /// timer; one the feature does not take (above what KAS rounds into 32 bits) returns Keep
    /// Alive Timeout Invalid.
    spec::status connect_admin_queue(std::uint32_t entries, std::uint32_t keep_alive_timeout_ms = 0)
    {
        if (message_based_ || self().registers_.cc().get(spec::cc_register::en) ||
            self().registers_.csts().get(spec::csts_register::rdy)) {
            return self().error(spec::generic_status::command_sequence_error);
        }
        if (entries < 2 || entries > max_admin_queue_entries) {
            return self().error(spec::command_specific_status::invalid_queue_size);
        }
        if (keep_alive_timeout_ms != 0) {
            const auto kato =
                self().features_.set(spec::feature_id::keep_alive_timer, keep_alive_timeout_ms, false);
            if (!kato.status.is_success()) {
                return kato.status;
            }
            self().keep_alive_.restart(self().clock_.now());
        }
        message_based_ = true;
        admin_queue_entries_ = entries;
        cdw0_checked_ = spec::command_dword0{}
                            .with(spec::command_dword0::fuse, spec::fused_operation{3})
                            .with(spec::command_dword0::psdt, spec::data_pointer_type{3})
                            .raw;
        cdw0_required_ =
            spec::command_dword0{}
                .with(spec::command_dword0::psdt, spec::data_pointer_type::sgl_contiguous_metadata)
                .raw;
        return spec::status::success();
    }

    /// Connects message-based I/O queue pair `qid` (an SQ and its CQ of `entries` slots each)
    /// while the controller is ready. `qid` must be within the queues Number of Queues granted
    /// and not connected; `entries` 2 to CAP.MQES + 1. Returns Invalid Queue Identifier, Invalid
    /// Queue Size or a Command Sequence Error (not ready, or no message-based admin queue).
    spec::status connect_io_queue(std::uint16_t qid, std::uint32_t entries)
    {
        if (!message_based_ || self().state_machine_.state() != controller_state::ready) {
            return self().error(spec::generic_status::command_sequence_error);
        }
        if (qid == 0 ||
            qid > std::min(self().allowed_submission_queues(), self().allowed_completion_queues()) ||
            self().submission_queue_exists(qid) || self().completion_queue_exists(qid)) {
            return self().error(spec::command_specific_status::invalid_queue_identifier);
        }
        if (entries < 2 || entries > self().registers_.cap().max_queue_entries()) {
            return self().error(spec::command_specific_status::invalid_queue_size);
        }
        return self().with_groups_paused([&] {
            self().completion_queues_[qid] =
                std::make_unique<detail::completion_queue<command>>(qid, entries, cq_ring::message_based);
            const std::uint16_t group = self().place_completion_queue(qid, 0, false);
            self().doorbell_table_.set_group(qid, true, group);
            self().insert_queue(self().coordination_.groups()[group]->completion_queues, qid);
            self().submission_queues_[qid] = std::make_unique<detail::submission_queue<command>>(
                qid, qid, entries, limits.commands_per_queue, sq_ring::message_based);
            self().doorbell_table_.set_group(qid, false, group);
            self().insert_queue(self().coordination_.groups()[group]->submission_queues, qid);
            self().completion_queues_[qid]->bound_submission_queues = 1;
            self().io_queue_created_ = true;
            return spec::status::success();
        });
    }

    /// Disconnects message-based I/O queue pair `qid`: its waiting commands and untaken
    /// completions are discarded; commands still in a backend end without a completion when the
    /// backend returns them. False when no such queue pair is connected.
    bool disconnect_io_queue(std::uint16_t qid)
    {
        if (qid == 0 || !self().submission_queue_exists(qid) ||
            !self().submission_queues_[qid]->ring.is_message_based()) {
            return false;
        }
        self().with_groups_paused([&] {
            auto& cq = *self().completion_queues_[qid];
            cq.held.clear_and_dispose([](command* cmd) { Controller::drop_completion(*cmd); });
            self().erase_queue(self().group_of(*self().submission_queues_[qid]).submission_queues, qid);
            static_cast<void>(self().retire_submission_queue(qid));
            self().erase_queue(self().cq_owner(qid).completion_queues, qid);
            self().completion_queues_[qid].reset();
        });
        return true;
    }

    /// Whether the admin queue is message-based (connect_admin_queue).
    [[nodiscard]] bool message_based() const noexcept { return message_based_; }

    /// Hands a command to message-based queue `qid`; it runs at a following poll. False, taking
    /// nothing, when the queue holds entries - 1 commands not yet started (the host exceeded the
    /// queue's size), when no such message-based queue is connected, or when the controller is
    /// not ready (the admin queue takes commands only then).
    [[nodiscard]] bool submit(std::uint16_t qid, const spec::submission_queue_entry& sqe)
    {
        if (!self().submission_queue_exists(qid) ||
            self().state_machine_.state() != controller_state::ready) {
            return false;
        }
        return self().submission_queues_[qid]->ring.push(sqe);
    }

    /// Takes the oldest completion of message-based queue `qid`, making room for one held while
    /// the queue was full. Nothing when the queue holds none or is not connected.
    [[nodiscard]] std::optional<spec::completion_queue_entry> take_completion(std::uint16_t qid)
    {
        if (!self().completion_queue_exists(qid)) {
            return std::nullopt;
        }
        auto& cq = *self().completion_queues_[qid];
        auto entry = cq.ring.pop();
        if (entry && !cq.held.empty()) {
            self().post_held_completions(qid == 0 ? self().coordination_.admin() : self().cq_owner(qid), cq);
        }
        return entry;
    }

protected:
    /// The largest admin queue (AQA.ASQS and AQA.ACQS are 12 bits, 0's based).
    static constexpr std::uint32_t max_admin_queue_entries = 4096;

    /// Whether `offset` and `width` name a property of this controller, one the host may set when
    /// `written`.
    [[nodiscard]] bool is_property(std::uint64_t offset, unsigned width, bool written) const noexcept
    {
        using spec::register_offset;
        if (offset > static_cast<std::uint64_t>(register_offset::crto)) {
            return false;
        }
        const bool subsystem_reset = self().registers_.cap().get(spec::cap_register::nssrs);
        switch (static_cast<register_offset>(offset)) {
        case register_offset::cap: return width == 8 && !written;
        case register_offset::vs:
        case register_offset::crto: return width == 4 && !written;
        case register_offset::cc: return width == 4;
        case register_offset::csts: return width == 4 && (subsystem_reset || !written);
        case register_offset::nssr: return width == 4 && subsystem_reset;
        default: return false;
        }
    }

    /// The admin queue is message-based (connect_admin_queue), of this many entries.
    bool message_based_ = false;
    std::uint32_t admin_queue_entries_ = 0;
    /// The CDW0 bits every command is checked for, and the value they must have: FUSE 00b (fused
    /// operations are not supported), and on message-based queues PSDT 01b as well.
    std::uint32_t cdw0_checked_ =
        spec::command_dword0{}.with(spec::command_dword0::fuse, spec::fused_operation{3}).raw;
    std::uint32_t cdw0_required_ = 0;
};

} // namespace transport
NVMEKIT_END_NAMESPACE
