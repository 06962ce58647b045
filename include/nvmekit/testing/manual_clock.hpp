#pragma once
/// A Clock for deterministic tests and simulators: time moves only when the test moves it.
///
/// now() may be read from any thread while another moves the time: the tick count is atomic, and
/// a reader that sees a time also sees whatever the mover wrote before advance() or set() (release
/// on the move, acquire on the read).

#include <atomic>
#include <chrono>
#include <stdexcept>

#include <nvmekit/config.hpp>
#include <nvmekit/contracts/clock.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace testing {

/// A Clock that starts at 0 and never goes backwards.
class manual_clock {
public:
    manual_clock() = default;

    /// A clock at `other`'s time.
    manual_clock(const manual_clock& other) noexcept : ticks_{other.ticks_.load(std::memory_order_acquire)} {}

    manual_clock& operator=(const manual_clock& other) noexcept
    {
        ticks_.store(other.ticks_.load(std::memory_order_acquire), std::memory_order_release);
        return *this;
    }

    ~manual_clock() = default;

    /// The current time; safe from any thread while advance() or set() run.
    [[nodiscard]] std::chrono::nanoseconds now() const noexcept
    {
        return std::chrono::nanoseconds{ticks_.load(std::memory_order_acquire)};
    }

    /// Moves time forward by `delta`. Throws std::invalid_argument when `delta` is negative and
    /// std::overflow_error when the time would pass std::chrono::nanoseconds::max(). Concurrent
    /// calls (of advance or set) each take effect whole: no advance is lost.
    void advance(std::chrono::nanoseconds delta)
    {
        if (delta < std::chrono::nanoseconds::zero()) {
            throw std::invalid_argument("manual_clock: cannot advance by a negative duration");
        }
        rep current = ticks_.load(std::memory_order_relaxed);
        do {
            if (delta.count() > std::chrono::nanoseconds::max().count() - current) {
                throw std::overflow_error("manual_clock: advancing would overflow the clock");
            }
        } while (!ticks_.compare_exchange_weak(current, current + delta.count(), std::memory_order_release,
                                               std::memory_order_relaxed));
    }

    /// Sets the time to `time`. Throws std::invalid_argument when `time` is before now().
    void set(std::chrono::nanoseconds time)
    {
        rep current = ticks_.load(std::memory_order_relaxed);
        do {
            if (time.count() < current) {
                throw std::invalid_argument("manual_clock: time never goes backwards");
            }
        } while (!ticks_.compare_exchange_weak(current, time.count(), std::memory_order_release,
                                               std::memory_order_relaxed));
    }

private:
    using rep = std::chrono::nanoseconds::rep;
    static_assert(std::atomic<rep>::is_always_lock_free);

    std::atomic<rep> ticks_{0}; ///< nanoseconds since 0
};

static_assert(Clock<manual_clock>);
static_assert(check_clock<manual_clock>());

} // namespace testing
NVMEKIT_END_NAMESPACE
