#pragma once
/// The processing side of the controller: poll() for the admin context, poll_group() for each
/// I/O poll group, the threads start_poll_groups() runs, and the pause the admin context takes
/// around admin commands and register events (threading model: controller.hpp).
///
/// It owns the admin context and the poll groups (group_coordination.hpp), which group a new I/O
/// queue goes to, and each group's list of queues.
///
/// Composition: detail::group_processing<Controller, Traits> is a base of nvmekit::controller
/// (CRTP; controller.hpp), reaching the queues, doorbells, interrupts, backends and logs through
/// self().

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nvmekit/config.hpp>
#include <nvmekit/contracts/tracer.hpp>
#include <nvmekit/core/controller_config.hpp>
#include <nvmekit/core/io_context.hpp>
#include <nvmekit/queues/queue_pair.hpp>
#include <nvmekit/runtime/group_coordination.hpp>
#include <nvmekit/runtime/poll_group.hpp>
#include <nvmekit/runtime/poll_group_state.hpp>
#include <nvmekit/runtime/poll_group_statistics.hpp>
#include <nvmekit/spec/registers.hpp>
#include <nvmekit/state/error_log.hpp>
#include <nvmekit/state/reset_state_machine.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace detail {

/// Group processing of `Controller`; see the top of this header. `Controller` derives from it and
/// befriends it.
template <typename Controller, typename Traits>
class group_processing {
protected:
    using command = detail::controller_command<Controller, Traits>;
    using group_type = detail::poll_group_state<command, Traits::threading::concurrent_groups>;
    static constexpr nvmekit::limits limits = Traits::limits;
    using threading_type = typename Traits::threading;
    using coordination_type = detail::group_coordination<group_type, threading_type::concurrent_groups>;
    using coordination_scope = typename coordination_type::scope;

    group_processing() = default;
    group_processing(const group_processing&) = delete;
    group_processing& operator=(const group_processing&) = delete;

    [[nodiscard]] Controller& self() noexcept { return static_cast<Controller&>(*this); }
    [[nodiscard]] const Controller& self() const noexcept { return static_cast<const Controller&>(*this); }

public:
    // ---- processing side ----------------------------------------------------------------------

    /// Does all the work that is ready: finishes a pending enable or shutdown, takes doorbell
    /// values, fetches and executes commands, posts completions and signals interrupts. Returns
    /// the number of commands executed. With concurrent poll groups it does this for the admin
    /// context alone (the admin queue, register events, events and logs); the groups run in
    /// poll_group().
    std::size_t poll()
    {
        const coordination_scope scope{coordination_.admin()};
        handle_event(controller_event::tick);
        take_group_reports();
        const auto state = self().state_machine_.state();
        if (state == controller_state::shutting_down || state == controller_state::shut_down) {
            // The queues still exist: the host may consume completions, but commands no longer run
            // until a Controller Reset (Base 2.0 3.6), so a submission is a host protocol error.
            // (Concurrent groups are stopped: their doorbells are taken here.)
            self().statistics_.host_protocol_errors += self().doorbell_table_.take_invalid_registers();
            self().drain_every_doorbell(
                [this](std::uint16_t qid, bool completion_queue, std::uint32_t value) {
                    if (completion_queue) {
                        self().apply_cq_head(cq_owner(qid), qid, value);
                    } else {
                        ++self().statistics_.host_protocol_errors;
                        self().trace_doorbell_error(trace_event::err_doorbell_not_ready, qid, value);
                    }
                });
            self().poll_dma(); // entries being written still count as posted when their writes complete
            self().update_intx();
            return 0;
        }
        if (state == controller_state::ready && !self().bus_master_.load(std::memory_order_acquire)) {
            return 0; // Bus Master Enable is clear: doorbells and backend completions wait
        }
        self().poll_dma();
        self().poll_backends();
        self().free_retired_queues();
        if (self().ready_clear_deferred_ && self().io_outstanding() == 0 && self().dma_idle()) {
            self().ready_clear_deferred_ = false;
            self().set_csts_bit(spec::csts_register::rdy, false); // the Controller Reset is complete
        }
        if (state != controller_state::ready) {
            self().statistics_.host_protocol_errors += self().doorbell_table_.take_invalid_registers();
            self().drain_every_doorbell([this](std::uint16_t qid, bool, std::uint32_t value) {
                ++self().statistics_.host_protocol_errors;
                self().trace_doorbell_error(trace_event::err_doorbell_not_ready, qid, value);
            });
            return 0;
        }
        self().drain_doorbells();
        if (!concurrent()) {
            for (auto& group : coordination_.groups()) {
                self().read_shadow_doorbells(*group);
            }
        }
        self().poll_backends();
        if (!concurrent()) {
            for (auto& group : coordination_.groups()) {
                self().resume_staging_waiters(*group);
            }
        }
        self().check_keep_alive();
        std::size_t executed = 0;
        if (self().submission_queues_[0] && !self().submission_queues_[0]->ring.empty()) {
            // Admin commands change what the groups use (queues, features, namespaces): concurrent
            // groups are paused while they run.
            with_groups_paused([&] {
                executed +=
                    self().process_submission_queue(*self().submission_queues_[0], coordination_.admin());
            });
        }
        if (!concurrent()) {
            for (auto& group : coordination_.groups()) {
                if (self().state_machine_.state() != controller_state::ready) {
                    break; // a command (or a DMA failure) changed the state
                }
                executed += process_group_queues(*group);
                take_fatal_error();
            }
        }
        self().poll_backends();
        self().poll_dma();
        self().free_retired_queues();
        self().report_async_events();
        if (!concurrent()) {
            for (auto& group : coordination_.groups()) {
                self().write_event_indexes(*group);
            }
        }
        self().signal_interrupts();
        return executed;
    }

    /// Runs poll group `index` alone: takes its queues' doorbell values, executes their commands,
    /// posts their completions and signals their interrupts. Returns the number of commands
    /// executed. Without concurrent_poll_groups, poll() already does this for every group, and
    /// this is for tests that drive groups one by one (never concurrently with poll()). With
    /// concurrent_poll_groups, this is how a group runs: from any thread, concurrently with poll()
    /// and with the other groups, one call at a time per group (not while start_poll_groups()'s
    /// threads run).
    std::size_t poll_group(std::uint16_t index)
    {
        NVMEKIT_ASSERT(index < coordination_.groups().size(), "poll_group: no such group");
        auto& group = *coordination_.groups()[index];
        if (!concurrent()) {
            if (self().state_machine_.state() != controller_state::ready ||
                !self().bus_master_.load(std::memory_order_relaxed)) {
                return 0;
            }
            group.doorbells.drain([&](std::uint16_t qid, bool completion_queue, std::uint32_t value) {
                self().apply_doorbell(group, qid, completion_queue, value);
            });
            self().poll_dma();
            const std::size_t executed = process_group_queues(group);
            take_fatal_error();
            self().signal_interrupts();
            return executed;
        }
        if (!coordination_type::enter_poll(group)) {
            return 0;
        }
        if (group.stopped || !self().bus_master_.load(std::memory_order_acquire)) {
            coordination_type::leave_poll(group);
            return 0;
        }
        const coordination_scope scope{group};
        coordination_type::take_routed(group);
        group.doorbells.drain([&](std::uint16_t qid, bool completion_queue, std::uint32_t value) {
            self().apply_doorbell(group, qid, completion_queue, value);
        });
        self().read_shadow_doorbells(group);
        self().resume_staging_waiters(group);
        const std::size_t executed = process_group_queues(group);
        self().write_event_indexes(group);
        self().signal_group_interrupts(group);
        coordination_type::leave_poll(group);
        return executed;
    }

    /// For a message-based transport whose I/O queues live on concurrent poll groups: runs
    /// `f(running)` as part of poll group `index`, so that `f` may call submit() and
    /// take_completion() for that group's queues from the thread that polls the group, never
    /// while the admin context has the groups paused. `running` is false while the group is
    /// stopped (the controller is not ready, and the admin context acts for the group): `f` must
    /// then leave the controller alone. Returns false, without calling `f`, while the admin
    /// context asks the group to pause (try again at the next turn). Without concurrent poll
    /// groups `f` runs at once, with `running` true while the controller is ready. Not from
    /// inside poll_group() nor while start_poll_groups()'s threads run.
    template <typename F>
    bool run_in_group(std::uint16_t index, F&& f)
    {
        NVMEKIT_ASSERT(index < coordination_.groups().size(), "run_in_group: no such group");
        auto& group = *coordination_.groups()[index];
        if (!concurrent()) {
            std::forward<F>(f)(self().state_machine_.state() == controller_state::ready);
            return true;
        }
        if (!coordination_type::enter_poll(group)) {
            return false;
        }
        {
            const coordination_scope scope{group};
            std::forward<F>(f)(!group.stopped && self().bus_master_.load(std::memory_order_acquire));
        }
        coordination_type::leave_poll(group);
        return true;
    }

    /// Starts one thread per poll group (a poll_group_runner calling poll_group(i), sleeping on
    /// an eventfd when idle and woken by doorbell writes). Needs concurrent_poll_groups (else
    /// throws std::logic_error), and so the multi_threaded policy: with single_threaded it does
    /// not compile. `options` applies to every group; its name gets the group index appended,
    /// and `cpus`, when not empty, pins group i to cpus[i % cpus.size()]. Call from the admin
    /// context.
    // clang-format off
    void start_poll_groups(const poll_group_options& options = {}, const std::vector<unsigned>& cpus = {})
        requires(threading_type::concurrent_groups)
    // clang-format on
    {
        if (!concurrent()) {
            throw std::logic_error(
                "controller::start_poll_groups needs controller_config::concurrent_poll_groups");
        }
        if (poll_groups_started()) {
            return;
        }
        for (std::size_t index = 0; index < coordination_.groups().size(); ++index) {
            auto group_options = options;
            group_options.name += std::to_string(index);
            if (!cpus.empty()) {
                group_options.cpu = cpus[index % cpus.size()];
            }
            auto& group = *coordination_.groups()[index];
            group.runner = std::make_unique<poll_group_runner<>>(
                [this, index] { return poll_group(static_cast<std::uint16_t>(index)); },
                std::move(group_options));
        }
        for (auto& group : coordination_.groups()) {
            group->runner->start();
        }
    }

    /// Stops and joins the threads start_poll_groups() started (nothing when none run). The
    /// queues stay as they are; poll_group() may then be called again.
    void stop_poll_groups()
    {
        if (!poll_groups_started()) {
            return;
        }
        for (auto& group : coordination_.groups()) {
            group->runner->stop();
        }
        for (auto& group : coordination_.groups()) {
            group->runner.reset();
        }
    }

    /// True between start_poll_groups() and stop_poll_groups().
    [[nodiscard]] bool poll_groups_started() const noexcept
    {
        return coordination_.groups().front()->runner != nullptr;
    }

    /// Runs `f` while no poll group runs: with concurrent groups, each is asked to pause and
    /// waited for until it is between polls; they resume when `f` returns. The controller does
    /// this around admin commands and register events; embedders and tests use it to read state
    /// the groups own (requests_in_use(), queue contents) consistently. Call from the admin
    /// context, never from a group.
    template <typename F>
    decltype(auto) with_groups_paused(F&& f)
    {
        struct resume_on_exit {
            group_processing& owner;
            ~resume_on_exit() { owner.resume_groups(); }
        } resume{*this};
        coordination_.pause();
        return std::forward<F>(f)();
    }

    /// Number of poll groups (controller_config::poll_groups).
    [[nodiscard]] std::uint16_t poll_group_count() const noexcept
    {
        return static_cast<std::uint16_t>(coordination_.groups().size());
    }
    /// Counters of poll group `index`: polls (busy and idle), commands executed, data bytes read
    /// and written by its commands. Readable while the controller runs.
    [[nodiscard]] poll_group_counters group_statistics(std::uint16_t index) const
    {
        NVMEKIT_ASSERT(index < coordination_.groups().size(), "group_statistics: no such group");
        return coordination_.groups()[index]->statistics.snapshot();
    }
    /// The poll group of I/O CQ `qid`, when it exists.
    [[nodiscard]] std::optional<std::uint16_t> completion_queue_group(std::uint16_t qid) const noexcept
    {
        if (qid == 0 || !self().completion_queue_exists(qid)) {
            return std::nullopt;
        }
        return self().doorbell_table_.group(qid, true);
    }
    /// The poll group of I/O SQ `qid` (that of its CQ), when it exists.
    [[nodiscard]] std::optional<std::uint16_t> submission_queue_group(std::uint16_t qid) const noexcept
    {
        if (qid == 0 || !self().submission_queue_exists(qid)) {
            return std::nullopt;
        }
        return self().doorbell_table_.group(qid, false);
    }

protected:
    /// The context that owns CQ `qid`: the admin context for the admin CQ, else its poll group.
    [[nodiscard]] group_type& cq_owner(std::uint16_t qid) noexcept
    {
        return qid == 0 ? coordination_.admin()
                        : *coordination_.groups()[self().doorbell_table_.group(qid, true)];
    }

    /// True when poll groups run concurrently with the admin context (poll_group()); a constant
    /// false with single_threaded, so that what only concurrent groups need is compiled out.
    [[nodiscard]] bool concurrent() const noexcept { return coordination_.concurrent(); }

    /// Ends a pause (with_groups_paused): a fatal error a context raised takes effect, and the
    /// groups learn whether the controller is ready (a group runs commands only while it is).
    void resume_groups()
    {
        coordination_.resume([this] {
            if (coordination_.take_fatal()) {
                self().state_machine_.handle(controller_event::fatal_error);
            }
            return self().state_machine_.state() != controller_state::ready;
        });
    }

    /// A state machine event from the admin context: with the groups paused, unless it is a tick
    /// that changes nothing.
    void handle_event(controller_event event)
    {
        if (event == controller_event::tick) {
            const auto before = self().state_machine_.state();
            self().state_machine_.handle(event);
            if (self().state_machine_.state() != before) {
                with_groups_paused([] {}); // a tick never leaves ready: the groups only learn of it
            }
            return;
        }
        const coordination_scope scope{coordination_.admin()};
        with_groups_paused([&] { self().state_machine_.handle(event); });
    }

    /// Admin context: a fatal error a context raised takes effect.
    void take_fatal_error()
    {
        if (coordination_.fatal_pending()) {
            with_groups_paused([] {}); // resume_groups() handles it
        }
    }

    /// Admin context: what concurrent groups report (fatal errors, Error Information entries)
    /// reaches the controller's state and logs; their invalid doorbells are taken with the admin
    /// context's doorbells (drain_doorbells).
    void take_group_reports()
    {
        take_fatal_error();
        if (!concurrent()) {
            return;
        }
        for (auto& group : coordination_.groups()) {
            group->errors.drain([this](error_record&& record) { self().record_error(record); },
                                std::size_t{1} << 20);
            if (const auto lost = group->errors_lost.load() - group->errors_lost_taken; lost != 0) {
                group->errors_lost_taken += lost;
                self().logs_.skip_errors(lost);
            }
        }
    }

    /// Runs the SQs of one poll group; counts its poll and commands.
    std::size_t process_group_queues(group_type& group)
    {
        std::size_t executed = 0;
        for (const std::uint16_t qid : group.submission_queues) {
            if (group.stopped) {
                break;
            }
            if (self().submission_queues_[qid]) {
                executed += self().process_submission_queue(*self().submission_queues_[qid], group);
            }
        }
        group.statistics.record_poll(executed);
        group.statistics.add_commands(executed);
        return executed;
    }

    /// The poll group of a new I/O CQ: queue_placement's choice; else, when its interrupts are
    /// enabled, the group of an I/O CQ that signals the same vector (a group aggregates and raises
    /// the vectors of its CQs, so a vector's CQs are kept together: one interrupt per poll for all
    /// of them, and coalescing that counts them all); else the next group round-robin.
    [[nodiscard]] std::uint16_t place_completion_queue(std::uint16_t qid, std::uint16_t vector,
                                                       bool interrupts_enabled)
    {
        const auto groups = static_cast<std::uint16_t>(coordination_.groups().size());
        if (self().config_.queue_placement) {
            return static_cast<std::uint16_t>(self().config_.queue_placement(qid, vector) % groups);
        }
        if (interrupts_enabled && groups > 1) {
            for (std::size_t other = 1; other < self().completion_queues_.size(); ++other) {
                const auto& cq = self().completion_queues_[other];
                if (other != qid && cq && cq->ring.interrupts_enabled() &&
                    cq->ring.interrupt_vector() == vector) {
                    return self().doorbell_table_.group(other, true);
                }
            }
        }
        const std::uint16_t group = next_group_;
        next_group_ = static_cast<std::uint16_t>((next_group_ + 1U) % groups);
        return group;
    }

    static void insert_queue(std::vector<std::uint16_t>& queues, std::uint16_t qid)
    {
        queues.insert(std::lower_bound(queues.begin(), queues.end(), qid), qid); // within the reserve
    }
    static void erase_queue(std::vector<std::uint16_t>& queues, std::uint16_t qid)
    {
        std::erase(queues, qid);
    }

    /// The context that runs an SQ: its CQ's.
    [[nodiscard]] group_type& group_of(const detail::submission_queue<command>& sq) noexcept
    {
        return cq_owner(sq.ring.cqid());
    }

    /// The admin context and the poll groups.
    coordination_type coordination_{std::uint16_t{0}, Controller::fetch_batch, limits.max_segments,
                                    std::uint16_t{1}};
    std::uint16_t next_group_ = 0; ///< round-robin placement
};

} // namespace detail
NVMEKIT_END_NAMESPACE
