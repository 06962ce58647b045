#pragma once
/// The controller's queues in host memory, as command_sets/queue_management.hpp creates and
/// deletes them, and as Set Features Number of Queues limits them.
///
/// It owns the submission and completion queues by QID (the admin queue's and the message-based
/// ones included), the queues Number of Queues granted, and whether an I/O queue was created
/// since the last Controller Reset.
///
/// Composition: detail::queue_state<Controller, Traits> is a base of nvmekit::controller (CRTP;
/// controller.hpp); placing a queue in a poll group and publishing its doorbell go through self().

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include <nvmekit/config.hpp>
#include <nvmekit/core/dispatcher.hpp>
#include <nvmekit/core/io_context.hpp>
#include <nvmekit/queues/queue_memory.hpp>
#include <nvmekit/queues/queue_pair.hpp>
#include <nvmekit/spec/features.hpp>
#include <nvmekit/spec/status.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace detail {

/// Queue state of `Controller`; see the top of this header. `Controller` derives from it and
/// befriends it.
template <typename Controller, typename Traits>
class queue_state {
protected:
    using command = detail::controller_command<Controller, Traits>;
    static constexpr nvmekit::limits limits = Traits::limits;

    queue_state()
    {
        submission_queues_.resize(std::size_t{limits.io_queues} + 1U);
        completion_queues_.resize(std::size_t{limits.io_queues} + 1U);
    }
    queue_state(const queue_state&) = delete;
    queue_state& operator=(const queue_state&) = delete;

    [[nodiscard]] Controller& self() noexcept { return static_cast<Controller&>(*this); }
    [[nodiscard]] const Controller& self() const noexcept { return static_cast<const Controller&>(*this); }

public:
    // ---- queues in host memory (command_sets/queue_management.hpp creates and deletes them) ----

    /// The number of I/O queues the host may use: what Set Features Number of Queues granted, or
    /// the controller's maximum before it was set.
    [[nodiscard]] std::uint16_t allowed_submission_queues() const noexcept
    {
        return granted_queues_ ? static_cast<std::uint16_t>(granted_queues_->submission_queue_count())
                               : self().config_.io_queues;
    }
    [[nodiscard]] std::uint16_t allowed_completion_queues() const noexcept
    {
        return granted_queues_ ? static_cast<std::uint16_t>(granted_queues_->completion_queue_count())
                               : self().config_.io_queues;
    }

    // registers() (introspection, above) gives CAP and CC as the host set them.

    /// The queue memory of `bytes` a PRP list at `prp_list` describes, read through the
    /// controller's DMA (queue_memory::from_prp_list).
    [[nodiscard]] spec::status queue_memory_from_prp_list(const command& cmd, std::uint64_t prp_list,
                                                          std::size_t bytes, queue_memory& out)
    {
        const auto status = self().with_command_dma(
            cmd,
            [&](auto& dma) {
                return queue_memory::from_prp_list(
                    dma, prp_list, bytes, static_cast<std::uint32_t>(self().memory_page_size()), out);
            },
            false);
        if constexpr (dma_completes_later_v<typename Traits::dma>) {
            if (cmd.async.journal.blocked) {
                return spec::status{spec::generic_status::data_transfer_error}.with_dnr(); // runs again
            }
        }
        return status;
    }

    /// Adds I/O CQ `qid` in `memory`, its identifier, size and vector checked by the caller: placed
    /// in a poll group, its doorbell live.
    void add_completion_queue(std::uint16_t qid, std::uint32_t entries, queue_memory memory,
                              std::uint16_t vector, bool interrupts_enabled)
    {
        completion_queues_[qid] = std::make_unique<detail::completion_queue<command>>(
            qid, entries, std::move(memory), vector, interrupts_enabled);
        const std::uint16_t group = self().place_completion_queue(qid, vector, interrupts_enabled);
        self().doorbell_table_.set_group(qid, true, group);
        self().insert_queue(self().coordination_.groups()[group]->completion_queues, qid);
        self().doorbell_table_.publish(qid, true, entries);
        io_queue_created_ = true;
        self().write_new_queue_event_index(qid, true);
    }

    /// Adds I/O SQ `qid` in `memory`, bound to the existing I/O CQ `cqid`, in that CQ's poll group.
    void add_submission_queue(std::uint16_t qid, std::uint16_t cqid, std::uint32_t entries,
                              queue_memory memory)
    {
        submission_queues_[qid] = std::make_unique<detail::submission_queue<command>>(
            qid, cqid, entries, limits.commands_per_queue, std::move(memory));
        const std::uint16_t group = self().doorbell_table_.group(cqid, true); // an SQ follows its CQ
        self().doorbell_table_.set_group(qid, false, group);
        self().insert_queue(self().coordination_.groups()[group]->submission_queues, qid);
        self().doorbell_table_.publish(qid, false, entries);
        ++completion_queues_[cqid]->bound_submission_queues;
        io_queue_created_ = true;
        self().write_new_queue_event_index(qid, false);
    }

    /// Deletes the existing I/O SQ `qid` for the command `cmd`. Completions still waiting for CQ
    /// space are dropped, as the host asked to delete the queue they belong to; commands still in a
    /// backend end without a completion when the backend is done with them. Returns pending when
    /// such commands remain: `cmd` then completes when the backend returns the last of them (until
    /// then their data may still move, and the host reuses their buffers as soon as the deletion
    /// completes).
    [[nodiscard]] command_result delete_submission_queue(command& cmd, std::uint16_t qid)
    {
        auto& sq = *submission_queues_[qid];
        auto& cq = *completion_queues_[sq.ring.cqid()];
        cq.held.remove_and_dispose_if([&](const command& held) { return held.sq == &sq; },
                                      [](command* held) { Controller::drop_completion(*held); });
        --cq.bound_submission_queues;
        self().doorbell_table_.publish(qid, false, 0);
        // A tail written before the deletion and not yet taken by a concurrent group dies with the
        // queue (it would otherwise reach a queue created later with this QID).
        self().group_of(sq).doorbells.forget(qid, false);
        self().erase_queue(self().group_of(sq).submission_queues, qid);
        if (auto* retired = self().retire_submission_queue(qid)) {
            retired->deleting = &cmd;
            return command_result::pending();
        }
        return command_result::success();
    }

    /// The I/O SQs bound to the existing CQ `qid`.
    [[nodiscard]] std::uint32_t bound_submission_queues(std::uint16_t qid) const noexcept
    {
        return completion_queues_[qid]->bound_submission_queues;
    }

    /// Deletes the existing I/O CQ `qid`, which no SQ is bound to.
    void delete_completion_queue(std::uint16_t qid)
    {
        self().doorbell_table_.publish(qid, true, 0);
        self().cq_owner(qid).doorbells.forget(qid, true); // as for an SQ (delete_submission_queue)
        self().erase_queue(self().cq_owner(qid).completion_queues, qid);
        completion_queues_[qid].reset();
    }

    /// An I/O queue was created since the last Controller Reset (Number of Queues is then fixed).
    [[nodiscard]] bool io_queue_created() const noexcept { return io_queue_created_; }
    /// The I/O queues Set Features Number of Queues granted since the last Controller Reset.
    [[nodiscard]] std::optional<spec::number_of_queues> granted_queues() const noexcept
    {
        return granted_queues_;
    }
    void grant_queues(spec::number_of_queues granted) noexcept { granted_queues_ = granted; }
    /// I/O queue pairs this controller offers at most (controller_config::io_queues).
    [[nodiscard]] std::uint16_t max_io_queues() const noexcept { return self().config_.io_queues; }

    [[nodiscard]] bool submission_queue_exists(std::uint16_t qid) const noexcept
    {
        return qid <= limits.io_queues && submission_queues_[qid] != nullptr;
    }
    [[nodiscard]] bool completion_queue_exists(std::uint16_t qid) const noexcept
    {
        return qid <= limits.io_queues && completion_queues_[qid] != nullptr;
    }

protected:
    [[nodiscard]] std::size_t count_requests_in_use() const noexcept
    {
        std::size_t in_use = 0;
        for (const auto& sq : submission_queues_) {
            if (sq) {
                in_use += sq->pool.in_use();
            }
        }
        for (const auto& sq : self().retired_queues_) { // deleted, with commands still in a backend
            in_use += sq->pool.in_use();
        }
        return in_use;
    }

    std::vector<std::unique_ptr<detail::submission_queue<command>>> submission_queues_;
    std::vector<std::unique_ptr<detail::completion_queue<command>>> completion_queues_;
    std::optional<spec::number_of_queues> granted_queues_;
    bool io_queue_created_ = false; ///< an I/O SQ or CQ was created since the last Controller Reset
};

} // namespace detail
NVMEKIT_END_NAMESPACE
