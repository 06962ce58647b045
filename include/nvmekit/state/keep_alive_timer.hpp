#pragma once
/// The Keep Alive Timer (Base 2.0 3.9): restarted by each Keep Alive command; when more than the
/// Keep Alive Timeout passes without one, it expires once and stops until restarted. A KATO of 0
/// disables it.
///
///     keep_alive_timer timer;
///     timer.restart(clock.now());                     // a Keep Alive command
///     if (timer.expired(clock.now(), kato_ms)) { ... } // checked at every poll

#include <chrono>
#include <cstdint>
#include <optional>

#include <nvmekit/config.hpp>

NVMEKIT_BEGIN_NAMESPACE

class keep_alive_timer {
public:
    /// (Re)starts the timer at `now`.
    void restart(std::chrono::nanoseconds now) noexcept { last_ = now; }
    /// Stops the timer (a Controller Reset, or an expiry).
    void stop() noexcept { last_.reset(); }
    [[nodiscard]] bool running() const noexcept { return last_.has_value(); }

    /// True, once, when the timer runs and more than `timeout_ms` passed since it was last
    /// restarted; the timer then stops. Never with a timeout of 0.
    [[nodiscard]] bool expired(std::chrono::nanoseconds now, std::uint32_t timeout_ms) noexcept
    {
        if (timeout_ms == 0 || !last_ || now - *last_ <= std::chrono::milliseconds{timeout_ms}) {
            return false;
        }
        last_.reset();
        return true;
    }

private:
    std::optional<std::chrono::nanoseconds> last_;
};

NVMEKIT_END_NAMESPACE
