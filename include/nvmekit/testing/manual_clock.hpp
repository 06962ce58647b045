#pragma once
/// A Clock for deterministic tests and simulators: time moves only when the test moves it.

#include <chrono>
#include <stdexcept>

#include <nvmekit/clock.hpp>
#include <nvmekit/config.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace testing {

/// A Clock that starts at 0 and never goes backwards.
class manual_clock {
public:
    /// The current time.
    [[nodiscard]] std::chrono::nanoseconds now() const noexcept { return now_; }

    /// Moves time forward by `delta`. Throws std::invalid_argument when `delta` is negative and
    /// std::overflow_error when the time would pass std::chrono::nanoseconds::max().
    void advance(std::chrono::nanoseconds delta)
    {
        if (delta < std::chrono::nanoseconds::zero()) {
            throw std::invalid_argument("manual_clock: cannot advance by a negative duration");
        }
        if (delta > std::chrono::nanoseconds::max() - now_) {
            throw std::overflow_error("manual_clock: advancing would overflow the clock");
        }
        now_ += delta;
    }

    /// Sets the time to `time`. Throws std::invalid_argument when `time` is before now().
    void set(std::chrono::nanoseconds time)
    {
        if (time < now_) {
            throw std::invalid_argument("manual_clock: time never goes backwards");
        }
        now_ = time;
    }

private:
    std::chrono::nanoseconds now_{0};
};

static_assert(Clock<manual_clock>);
static_assert(check_clock<manual_clock>());

} // namespace testing
NVMEKIT_END_NAMESPACE
