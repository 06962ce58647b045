#pragma once
/// The runtime of a poll group: a context that owns whole queue pairs and processes them by
/// polling, as SPDK's and DOCA's poll groups do.
///
/// Threading model. With one context (the default) nothing runs unless the embedder calls the
/// controller's poll(), and a run is deterministic: the mode for simulators and unit tests. With
/// concurrent poll groups, each group owns whole queue pairs (a CQ and every SQ bound to it) and
/// runs on its own thread or in the embedder's loop; admin commands and register events run on the
/// admin context. Contexts talk by messages over lock-free queues (mailbox.hpp, completion_inbox.hpp)
/// and the I/O path takes no lock. What changes state a group owns (deleting a queue, a reset, a
/// namespace or feature change) runs on the admin context with every group paused, which costs a
/// group at most one poll of waiting. Backends used with concurrent groups complete from their own
/// poll() (run by the admin context) or from any thread; the completion travels to the command's
/// group as a message.
///
/// Three pieces:
///
/// - `wakeup`: lets an idle group sleep on an eventfd and lets producers (doorbell writers,
///   mailbox senders) wake it, paying a system call only when the group actually sleeps.
/// - `poll_group_statistics`: the group's counters, written by the group, readable by anyone.
/// - `poll_group_runner`: calls the group's `work()` in a loop on a thread it starts, sleeping
///   when idle; or leaves the loop to the embedder, who calls `poll_once()`.
///
///     nvmekit::mailbox<message> inbox{256};
///     nvmekit::poll_group_runner group{[&] { return inbox.drain(handle, 64) + poll_queues(); },
///                                      {.name = "nvme-io0", .max_sleep = std::chrono::milliseconds{1}}};
///     group.start();                          // the group's thread polls, sleeps when idle
///     if (inbox.try_push(message{...})) {     // any other thread
///         group.notify();                     // wakes the group if it sleeps; cheap otherwise
///     }
///     group.stop();                           // wakes and joins the thread
///
/// Rule for producers: make the work visible first (push the message, store the doorbell), then
/// call notify(). A notify() issued before the work is visible may be consumed by a sleeper that
/// then finds nothing to do and sleeps again.

#include <atomic>
#include <cerrno>
#include <chrono>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <type_traits>
#include <utility>

#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <nvmekit/config.hpp>
#include <nvmekit/runtime/poll_group_statistics.hpp>

NVMEKIT_BEGIN_NAMESPACE

/// Why wakeup::sleep_unless returned.
enum class wake_reason {
    work_found, ///< The re-check found work; the caller did not sleep.
    notified,   ///< notify() woke the sleeper (rarely spurious: a notify left over from an earlier sleep).
    timed_out,  ///< The timeout elapsed without a notify.
};

/// An idle/wake primitive for one sleeper and any number of notifiers, built on a Linux eventfd.
///
/// The sleeper publishes a `sleeping` flag before blocking; notify() writes the eventfd only when
/// it sees the flag, so a notify while the sleeper is busy costs a fence and a load, no system
/// call. The sleeper's protocol (sleep_unless does all of it) is: set the flag, re-check for work,
/// block on the eventfd only when the re-check found none, then clear the flag.
///
/// Why no wakeup is lost: the producer does [make work visible; seq_cst fence; load flag] and the
/// sleeper does [store flag; seq_cst fence; re-check work]. The two fences are totally ordered.
/// If the sleeper's fence comes first, the producer's load sees the flag (C++ [atomics.order]: a
/// load after the later fence sees the store before the earlier one, or a later store) and writes
/// the eventfd, whose count stays set until read, so the sleeper returns at once even if it has
/// not reached ppoll yet. If the producer's fence comes first, the sleeper's re-check sees the work
/// by the same rule and does not block. Without the fences (plain release/acquire) both sides may
/// read the old values (the store-buffering outcome), and the sleeper would block with work queued.
///
/// Threading: notify() from any thread, any number of them, concurrently with everything else. One
/// sleeper thread at a time calls sleep_unless, wait, arm and disarm. fd() from any thread.
///
/// An embedder with its own epoll loop uses the same protocol by hand: arm(); re-check its work;
/// if none, wait for fd() to become readable (with its other descriptors); disarm().
class wakeup {
public:
    /// Opens the eventfd (EFD_NONBLOCK | EFD_CLOEXEC). Throws std::system_error when it cannot.
    wakeup() : fd_{::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)}
    {
        if (fd_ < 0) {
            throw std::system_error{errno, std::generic_category(), "nvmekit::wakeup: eventfd"};
        }
    }

    wakeup(const wakeup&) = delete;
    wakeup& operator=(const wakeup&) = delete;

    /// Closes the eventfd. Nobody may be sleeping or notifying.
    ~wakeup() { ::close(fd_); }

    /// Wakes the sleeper if it sleeps or is about to (armed); otherwise does nothing beyond a fence
    /// and a load. Call it after making the work visible. Any thread; never blocks; noexcept (an
    /// eventfd write cannot fail here: the counter would need 2^64 - 2 pending notifications).
    void notify() noexcept
    {
        std::atomic_thread_fence(std::memory_order_seq_cst);
        // The exchange lets only one of several concurrent notifiers pay for the write.
        if (sleeping_.load(std::memory_order_relaxed) &&
            sleeping_.exchange(false, std::memory_order_relaxed)) {
            const std::uint64_t one = 1;
            if (::write(fd_, &one, sizeof one) < 0) {
                // EAGAIN only: the counter is saturated, so the sleeper is woken anyway.
            }
        }
    }

    /// The sleeper's protocol in one call: arm, then call `has_work()`; when it returns true, disarm
    /// and return wake_reason::work_found without sleeping; otherwise block until notify() or until
    /// `timeout` elapses, disarm, and say which. `has_work` may do the work itself (a poll that
    /// returns whether it did anything). A timeout of zero or less re-checks without blocking.
    /// Sleeper thread only. Exceptions from `has_work` propagate after disarming.
    // clang-format off
    template <typename Predicate>
        requires std::predicate<Predicate&>
    wake_reason sleep_unless(Predicate&& has_work, std::chrono::nanoseconds timeout)
    {
        arm();
        bool found = false;
        try {
            found = static_cast<bool>(has_work());
        } catch (...) {
            static_cast<void>(disarm());
            throw;
        }
        if (found) {
            static_cast<void>(disarm());
            return wake_reason::work_found;
        }
        const bool readable = block(timeout);
        const bool notified = disarm();
        return readable || notified ? wake_reason::notified : wake_reason::timed_out;
    }
    // clang-format on

    /// Blocks until notify() or until `timeout` elapses; true when notified. Without a re-check,
    /// only a notify() issued after this call starts is sure to wake it: prefer sleep_unless.
    /// Sleeper thread only.
    bool wait(std::chrono::nanoseconds timeout)
    {
        return sleep_unless([] { return false; }, timeout) == wake_reason::notified;
    }

    /// Publishes that the sleeper is about to sleep: from here on, notify() writes the eventfd.
    /// The caller must re-check for work after arm() and before blocking on fd(). Sleeper only.
    void arm() noexcept
    {
        sleeping_.store(true, std::memory_order_relaxed);
        std::atomic_thread_fence(std::memory_order_seq_cst);
    }

    /// Ends a sleep (or an armed re-check): clears the flag and consumes the eventfd's count, so
    /// fd() is no longer readable. Returns true when a notify() arrived since arm(). Makes a system
    /// call only when a notify() wrote the eventfd. Sleeper only.
    bool disarm() noexcept
    {
        if (sleeping_.exchange(false, std::memory_order_relaxed)) {
            // Still set: no notify() took it, so none wrote the eventfd since arm().
            return false;
        }
        // A notifier took the flag. Its write may still be on the way; if so, the count it leaves
        // only makes a later sleep return early once (a spurious wake_reason::notified).
        std::uint64_t count = 0;
        return ::read(fd_, &count, sizeof count) == static_cast<ssize_t>(sizeof count);
    }

    /// The eventfd: readable while a notify() is pending. For an embedder's epoll loop (see the
    /// class comment); never read or write it directly.
    [[nodiscard]] int fd() const noexcept { return fd_; }

private:
    // Waits for the eventfd to become readable; true when it did. Restarts after signals with the
    // time that is left.
    bool block(std::chrono::nanoseconds timeout) const noexcept
    {
        using std::chrono::steady_clock;
        const steady_clock::time_point deadline = steady_clock::now() + timeout;
        for (;;) {
            const auto left =
                std::chrono::duration_cast<std::chrono::nanoseconds>(deadline - steady_clock::now());
            const std::int64_t nanoseconds = left.count() > 0 ? left.count() : 0;
            timespec wait_for{};
            wait_for.tv_sec = static_cast<time_t>(nanoseconds / 1'000'000'000);
            wait_for.tv_nsec = static_cast<long>(nanoseconds % 1'000'000'000);
            pollfd descriptor{fd_, POLLIN, 0};
            const int ready = ::ppoll(&descriptor, 1, &wait_for, nullptr);
            if (ready > 0) {
                return true;
            }
            if (ready == 0 || errno != EINTR || nanoseconds == 0) {
                return false;
            }
        }
    }

    int fd_;
    std::atomic<bool> sleeping_{false};
};

/// How a poll_group_runner's thread polls and sleeps.
struct poll_group_options {
    /// The thread's name (pthread_setname_np), cut to the 15 characters Linux keeps; empty keeps
    /// the inherited name.
    std::string name{};
    /// Never sleep: poll in a tight loop (lowest latency, one core at 100%).
    bool busy_poll = false;
    /// Consecutive idle polls after which the thread arms its wakeup, polls once more and, when that
    /// poll is idle too, sleeps. 0 and 1 both mean: after the first idle poll.
    std::uint32_t idle_polls_before_sleep = 1000;
    /// The longest sleep: a sleeping group polls again at least this often, so timers and backend
    /// completions that do not notify still progress. Must be positive.
    std::chrono::nanoseconds max_sleep = std::chrono::milliseconds{1};
    /// Pin the thread to this CPU (sched_setaffinity); std::nullopt leaves the affinity inherited.
    std::optional<unsigned> cpu{};
};

/// Drives one poll group: calls `work()` (returning the amount of work done, 0 when idle) either in
/// a loop on a thread it starts (start, stop), or never by itself, the embedder calling poll_once()
/// from its own loop. Producers call notify() after giving the group work. `Work` is any callable
/// `std::size_t()`; the default, std::function, lets a class hold a runner without naming a lambda
/// type, and class template argument deduction keeps the lambda's own type for locals.
///
/// The thread's loop: poll; after a busy poll, poll again; after `idle_polls_before_sleep`
/// consecutive idle polls (never in busy_poll mode), arm the wakeup and poll once more (the
/// re-check), and when that poll is idle too, sleep until notify() or `max_sleep`; then start
/// counting idle polls from zero. Each poll, the re-check included, is recorded in statistics().
///
/// Threading: start, stop and the destructor are called by one controlling thread, never by the
/// group's own thread. poll_once is called by the embedder's thread and only while no thread runs.
/// notify, running and statistics().snapshot from any thread. work() runs on the group's thread
/// (or the poll_once caller) and may use statistics() to add commands and bytes. An exception
/// escaping work() on the group's thread terminates the program, as with any std::thread.
template <typename Work = std::function<std::size_t()>>
class poll_group_runner {
    static_assert(std::is_invocable_v<Work&>, "poll_group_runner<Work>: the type lacks `work()`");
    static_assert(std::is_convertible_v<std::invoke_result_t<Work&>, std::size_t>,
                  "poll_group_runner<Work>: `work()` must return the amount of work done as std::size_t");

public:
    /// A stopped runner of `work`. Throws std::invalid_argument when options.max_sleep is not
    /// positive or options.cpu is not below CPU_SETSIZE, and std::system_error when the eventfd
    /// cannot be opened.
    explicit poll_group_runner(Work work, poll_group_options options = {})
        : work_(std::move(work)), options_{std::move(options)}
    {
        if (options_.max_sleep <= std::chrono::nanoseconds::zero()) {
            throw std::invalid_argument{"nvmekit::poll_group_runner: max_sleep must be positive"};
        }
        if (options_.cpu && *options_.cpu >= CPU_SETSIZE) {
            throw std::invalid_argument{"nvmekit::poll_group_runner: cpu index not below CPU_SETSIZE"};
        }
        if (options_.name.size() > max_thread_name) {
            options_.name.resize(max_thread_name);
        }
    }

    poll_group_runner(const poll_group_runner&) = delete;
    poll_group_runner& operator=(const poll_group_runner&) = delete;

    /// Stops the thread if it runs (see stop).
    ~poll_group_runner() { stop(); }

    /// Starts the group's thread, names it and pins it, then returns; the loop starts only once
    /// the thread is configured. Throws std::system_error (and leaves the runner stopped) when the
    /// thread cannot be created, named or pinned (EINVAL: the CPU is not usable). Not running.
    void start()
    {
        NVMEKIT_ASSERT(!thread_.joinable(), "poll_group_runner started twice");
        stop_requested_.store(false, std::memory_order_relaxed);
        setup_result_.store(not_configured, std::memory_order_relaxed);
        thread_ = std::thread{[this] { run(); }};
        setup_result_.wait(not_configured, std::memory_order_acquire);
        const int error = setup_result_.load(std::memory_order_acquire);
        if (error != 0) {
            thread_.join();
            throw std::system_error{error, std::generic_category(),
                                    "nvmekit::poll_group_runner: thread setup"};
        }
        running_.store(true, std::memory_order_release);
    }

    /// Asks the thread to stop, wakes it if it sleeps, and joins it: the current poll finishes,
    /// no further one starts. Does nothing when not running. start() may be called again after.
    void stop()
    {
        if (!thread_.joinable()) {
            return;
        }
        NVMEKIT_ASSERT(thread_.get_id() != std::this_thread::get_id(),
                       "poll_group_runner stopped by its own thread");
        stop_requested_.store(true, std::memory_order_relaxed);
        // notify()'s fence orders the store above before its flag check (see wakeup).
        wakeup_.notify();
        thread_.join();
        running_.store(false, std::memory_order_release);
    }

    /// True between a successful start() and stop(). Any thread.
    [[nodiscard]] bool running() const noexcept { return running_.load(std::memory_order_acquire); }

    /// Calls work() once on the calling thread, records the poll, and returns the work done. For
    /// embedders that run the loop themselves; never sleeps. Not while the thread runs.
    std::size_t poll_once()
    {
        NVMEKIT_ASSERT(!running(), "poll_group_runner::poll_once called while its thread runs");
        return poll();
    }

    /// Wakes the group if it sleeps. Call after making work visible. Any thread.
    void notify() noexcept { wakeup_.notify(); }

    /// The group's wakeup: producers may hold a reference to it, and an embedder in poll_once mode
    /// may arm it and wait on its fd() (see wakeup).
    [[nodiscard]] wakeup& wakeup_handle() noexcept { return wakeup_; }

    /// The group's counters; work() adds commands and bytes through it.
    [[nodiscard]] poll_group_statistics& statistics() noexcept { return statistics_; }
    [[nodiscard]] const poll_group_statistics& statistics() const noexcept { return statistics_; }

    [[nodiscard]] const poll_group_options& options() const noexcept { return options_; }

private:
    static constexpr std::size_t max_thread_name = 15;
    static constexpr int not_configured = -1;

    std::size_t poll()
    {
        const auto done = static_cast<std::size_t>(std::invoke(work_));
        statistics_.record_poll(done);
        return done;
    }

    void run()
    {
        const int error = configure_this_thread();
        setup_result_.store(error, std::memory_order_release);
        setup_result_.notify_one();
        if (error != 0) {
            return;
        }
        std::uint64_t idle_streak = 0;
        while (!stop_requested_.load(std::memory_order_relaxed)) {
            if (poll() != 0) {
                idle_streak = 0;
                continue;
            }
            if (options_.busy_poll || ++idle_streak < options_.idle_polls_before_sleep) {
                continue;
            }
            idle_streak = 0;
            const wake_reason reason = wakeup_.sleep_unless(
                [this] { return stop_requested_.load(std::memory_order_relaxed) || poll() != 0; },
                options_.max_sleep);
            if (reason != wake_reason::work_found) {
                statistics_.record_sleep(reason == wake_reason::notified);
            }
        }
    }

    int configure_this_thread() noexcept
    {
        if (!options_.name.empty()) {
            if (const int error = ::pthread_setname_np(::pthread_self(), options_.name.c_str()); error != 0) {
                return error;
            }
        }
        if (options_.cpu) {
            cpu_set_t cpus;
            CPU_ZERO(&cpus);
            CPU_SET(*options_.cpu, &cpus);
            if (const int error = ::pthread_setaffinity_np(::pthread_self(), sizeof cpus, &cpus);
                error != 0) {
                return error;
            }
        }
        return 0;
    }

    Work work_;
    poll_group_options options_;
    wakeup wakeup_;
    poll_group_statistics statistics_;
    std::atomic<bool> stop_requested_{false};
    std::atomic<bool> running_{false};
    /// The thread's setup result for start(): 0 or an errno value, not_configured until known.
    std::atomic<int> setup_result_{not_configured};
    std::thread thread_;
};

NVMEKIT_END_NAMESPACE
