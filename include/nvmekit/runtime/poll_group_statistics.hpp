#pragma once
/// A poll group's counters (commands, bytes, busy and idle polls, sleeps), written by the group's
/// thread and readable from any thread while it runs. Used by poll_group_runner and by the
/// controller's poll groups.

#include <atomic>
#include <cstddef>
#include <cstdint>

#include <nvmekit/config.hpp>

NVMEKIT_BEGIN_NAMESPACE

/// A plain copy of a group's counters (see poll_group_statistics).
struct poll_group_counters {
    std::uint64_t polls = 0;      ///< Calls of the group's work.
    std::uint64_t busy_polls = 0; ///< Polls that did work (returned non-zero).
    std::uint64_t idle_polls = 0; ///< Polls that did nothing; polls == busy_polls + idle_polls.
    std::uint64_t sleeps = 0;     ///< Completed sleeps (blocking on the wakeup).
    std::uint64_t wakeups = 0;    ///< Sleeps ended by notify() rather than by the timeout.
    std::uint64_t commands = 0;   ///< Commands the group processed (reported by its work).
    std::uint64_t bytes = 0;      ///< Data bytes the group transferred (reported by its work).

    friend bool operator==(const poll_group_counters&, const poll_group_counters&) = default;
};

/// A poll group's counters. Writer: the group's thread only (the runner records polls and sleeps,
/// the group's work adds commands and bytes). Readers: any thread, at any time. Each counter is a
/// relaxed atomic updated by a load and a store (no read-modify-write: there is one writer), so
/// each value read is one the counter held and never decreases, but a snapshot taken while the
/// group runs may mix moments (polls and busy_polls + idle_polls may differ by the polls in
/// progress). After the group's thread is joined, or from the group's own thread, a snapshot is
/// exact.
class poll_group_statistics {
public:
    /// Counts one poll that did `work_done` units of work (0: idle). Group thread.
    void record_poll(std::size_t work_done) noexcept
    {
        bump(work_done != 0 ? busy_polls_ : idle_polls_, 1);
        bump(polls_, 1);
    }
    /// Counts a completed sleep, and a wakeup when `notified`. Group thread.
    void record_sleep(bool notified) noexcept
    {
        if (notified) {
            bump(wakeups_, 1);
        }
        bump(sleeps_, 1);
    }
    /// Adds `count` processed commands. Group thread.
    NVMEKIT_HOT_INLINE void add_commands(std::uint64_t count) noexcept { bump(commands_, count); }
    /// Adds `count` transferred bytes. Group thread.
    NVMEKIT_HOT_INLINE void add_bytes(std::uint64_t count) noexcept { bump(bytes_, count); }

    /// The counters now. Any thread (see the class comment for consistency).
    [[nodiscard]] poll_group_counters snapshot() const noexcept
    {
        poll_group_counters counters;
        counters.polls = polls_.load(std::memory_order_relaxed);
        counters.busy_polls = busy_polls_.load(std::memory_order_relaxed);
        counters.idle_polls = idle_polls_.load(std::memory_order_relaxed);
        counters.sleeps = sleeps_.load(std::memory_order_relaxed);
        counters.wakeups = wakeups_.load(std::memory_order_relaxed);
        counters.commands = commands_.load(std::memory_order_relaxed);
        counters.bytes = bytes_.load(std::memory_order_relaxed);
        return counters;
    }

private:
    NVMEKIT_HOT_INLINE static void bump(std::atomic<std::uint64_t>& counter, std::uint64_t count) noexcept
    {
        counter.store(counter.load(std::memory_order_relaxed) + count, std::memory_order_relaxed);
    }

    std::atomic<std::uint64_t> polls_{0};
    std::atomic<std::uint64_t> busy_polls_{0};
    std::atomic<std::uint64_t> idle_polls_{0};
    std::atomic<std::uint64_t> sleeps_{0};
    std::atomic<std::uint64_t> wakeups_{0};
    std::atomic<std::uint64_t> commands_{0};
    std::atomic<std::uint64_t> bytes_{0};
};

NVMEKIT_END_NAMESPACE
