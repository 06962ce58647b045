#pragma once
/// The processing contexts of one controller and how they take turns (threading model:
/// controller.hpp, poll_group.hpp). The admin context runs the admin queue, register events and
/// backend polling; the poll groups run the I/O queues. With concurrent groups each group runs
/// on a thread of its own, and the admin context acts on group state only while the groups are
/// paused (pause()/resume(), a per-group flag handshake) or stopped.
///
///     coordination.pause();                        // admin context: no group is inside a poll
///     ...                                          // read or change any group's state
///     coordination.resume([&] { return !ready; }); // the groups learn whether they may run
///
/// A group's poll is bracketed by enter_poll()/leave_poll(), and each context marks the thread
/// that runs it with a scope, so that a backend completion can tell whether it runs on its
/// command's thread (owns()) or must be handed over (route()). A group that fails a queue DMA
/// raises a fatal error the admin context takes at its next turn.
///
/// `Group` is detail::poll_group_state; with `ConcurrencyAllowed` false (the single_threaded
/// policy) every context runs on the caller's thread and none of this costs anything.

#include <atomic>
#include <cstddef>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include <nvmekit/config.hpp>
#include <nvmekit/contracts/block_backend.hpp>
#include <nvmekit/runtime/completion_inbox.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace detail {

template <typename Group, bool ConcurrencyAllowed>
class group_coordination {
public:
    /// `admin_args` build the admin context.
    template <typename... AdminArgs>
    explicit group_coordination(AdminArgs&&... admin_args) : admin_{std::forward<AdminArgs>(admin_args)...}
    {}

    /// Whether the groups run concurrently with the admin context (controller_config::
    /// concurrent_poll_groups); set once, before any group runs.
    void set_concurrent([[maybe_unused]] bool concurrent) noexcept
    {
        if constexpr (ConcurrencyAllowed) {
            concurrent_ = concurrent;
        }
    }
    [[nodiscard]] bool concurrent() const noexcept
    {
        if constexpr (ConcurrencyAllowed) {
            return concurrent_;
        } else {
            return false;
        }
    }

    /// Adds a poll group; before any group runs.
    Group& add_group(std::unique_ptr<Group> group) { return *groups_.emplace_back(std::move(group)); }

    [[nodiscard]] Group& admin() noexcept { return admin_; }
    [[nodiscard]] const Group& admin() const noexcept { return admin_; }
    /// The poll groups, by index.
    [[nodiscard]] std::vector<std::unique_ptr<Group>>& groups() noexcept { return groups_; }
    [[nodiscard]] const std::vector<std::unique_ptr<Group>>& groups() const noexcept { return groups_; }
    [[nodiscard]] Group& group(std::size_t index) noexcept { return *groups_[index]; }

    /// Marks the calling thread as running `context` for a scope; nothing without concurrency,
    /// where owns() needs no context.
    class scope {
    public:
        explicit scope([[maybe_unused]] const Group& context) noexcept
        {
            if constexpr (ConcurrencyAllowed) {
                previous_ = std::exchange(current_context_, &context);
            }
        }
        scope(const scope&) = delete;
        scope& operator=(const scope&) = delete;
        ~scope()
        {
            if constexpr (ConcurrencyAllowed) {
                current_context_ = previous_;
            }
        }

    private:
        const void* previous_ = nullptr;
    };

    /// True when the calling thread may act on `context`'s state: always on one thread; with
    /// concurrent groups, on the context's own thread, or on the admin context's while the groups
    /// are paused or stopped by it (a stopped group touches nothing: the admin context acts for
    /// it).
    [[nodiscard]] bool owns(const Group& context) const noexcept
    {
        if (!concurrent() || current_context_ == &context) {
            return true;
        }
        return current_context_ == &admin_ && paused_or_stopped();
    }

    /// A backend completion for `context`'s state: when the calling thread does not own
    /// `context` (owns()), hands it over in `node`, to be finished by `finish` at the context's
    /// next poll (take_routed), and returns true; else returns false: finish it here.
    bool route(Group& context, routed_completion& node, block_request& request, block_status status,
               void (*finish)(block_request&, block_status)) noexcept
    {
        if (owns(context)) {
            return false;
        }
        node.request = &request;
        node.status = status;
        node.finish = finish;
        context.routed.push(node);
        if (&context != &admin_ && context.runner) {
            context.runner->notify();
        }
        return true;
    }

    /// Finishes the completions routed to `context`; the caller owns it (see owns()).
    static void take_routed(Group& context)
    {
        context.routed.drain([](routed_completion& node) { node.finish(*node.request, node.status); });
    }

    /// A group's poll begins: false when the admin context asked it to pause (the poll is then
    /// skipped). With pause() this is the store-load handshake of Dekker's algorithm: both store
    /// their flag, then read the other's, with seq_cst, so at least one sees the other: the admin
    /// context never proceeds while the group is inside a poll, and the group never starts one
    /// while a pause is requested.
    [[nodiscard]] static bool enter_poll(Group& group) noexcept
    {
        group.in_poll.store(true, std::memory_order_seq_cst);
        if (group.pause_requested.load(std::memory_order_seq_cst)) {
            group.in_poll.store(false, std::memory_order_release);
            return false;
        }
        return true;
    }
    static void leave_poll(Group& group) noexcept { group.in_poll.store(false, std::memory_order_release); }

    /// Asks every concurrent group to pause and waits until none is inside a poll (nested calls
    /// count). Admin context only.
    void pause()
    {
        if (pause_depth_++ != 0 || !concurrent()) {
            return;
        }
        for (auto& group : groups_) {
            group->pause_requested.store(true, std::memory_order_seq_cst);
        }
        for (auto& group : groups_) {
            while (group->in_poll.load(std::memory_order_seq_cst)) {
                std::this_thread::yield(); // a poll is bounded: fetch batches over the group's queues
            }
        }
    }

    /// Ends a pause. At the outermost one, `stopped()` says whether the controller is no longer
    /// ready (it may first take a fatal error: take_fatal()); the contexts learn it, and the
    /// groups resume. From now on the admin context acts for stopped concurrent groups.
    template <typename Stopped>
    void resume(Stopped&& stopped_now)
    {
        if (--pause_depth_ != 0) {
            return;
        }
        const bool stopped = std::forward<Stopped>(stopped_now)();
        stopped_ = stopped;
        admin_.stopped = stopped;
        for (auto& group : groups_) {
            group->stopped = stopped;
            if (stopped && concurrent()) {
                take_routed(*group);
            }
        }
        if (!concurrent()) {
            return;
        }
        for (auto& group : groups_) {
            group->pause_requested.store(false, std::memory_order_release);
            if (group->runner) {
                group->runner->notify(); // it may have slept through doorbells rung during the pause
            }
        }
    }

    /// True while the admin context holds the groups paused, or they are stopped.
    [[nodiscard]] bool paused_or_stopped() const noexcept { return pause_depth_ > 0 || stopped_; }

    /// A context failed a queue DMA: it stops at once, and the admin context puts the controller
    /// into the fatal state at its next turn (Base 2.0 9.5).
    void raise_fatal(Group& group) noexcept
    {
        ++group.dma_errors;
        group.stopped = true;
        fatal_pending_.store(true, std::memory_order_release);
    }
    /// Whether a context raised a fatal error the admin context has not taken.
    [[nodiscard]] bool fatal_pending() const noexcept
    {
        return fatal_pending_.load(std::memory_order_acquire);
    }
    /// Takes a raised fatal error: true when there was one.
    [[nodiscard]] bool take_fatal() noexcept
    {
        return fatal_pending_.exchange(false, std::memory_order_acquire);
    }

private:
    /// The context the calling thread runs while inside a scope; null elsewhere.
    // NOLINTNEXTLINE(readability-identifier-naming): private static, suffixed like the other members
    static inline thread_local const void* current_context_ = nullptr;

    std::vector<std::unique_ptr<Group>> groups_;
    Group admin_; ///< runs the admin queue
    bool concurrent_ = false;
    std::atomic<bool> fatal_pending_{false};
    int pause_depth_ = 0; ///< nested pauses
    /// The admin context stopped the groups (the controller is not ready); admin context only (a
    /// group also stops itself on a fatal DMA error, in its own flag, until the admin context
    /// takes the error).
    bool stopped_ = true;
};

} // namespace detail
NVMEKIT_END_NAMESPACE
