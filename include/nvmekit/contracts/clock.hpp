#pragma once
/// The Clock concept: the controller's only source of time (ready delays, interrupt coalescing,
/// keep-alive, timestamps, power-on hours). A deterministic embedder gives a manual clock.
///
/// | expression  | type                       | semantics |
/// |-------------|----------------------------|-----------|
/// | `c.now()`   | `std::chrono::nanoseconds` | monotonic time since an arbitrary epoch; never decreases |

#include <chrono>
#include <concepts>

#include <nvmekit/config.hpp>

NVMEKIT_BEGIN_NAMESPACE

/// Monotonic time in nanoseconds (see the table above).
// clang-format off
template <typename T>
concept Clock = requires(const T& clock) {
    { clock.now() } -> std::same_as<std::chrono::nanoseconds>;
};
// clang-format on

/// Checks `T` models Clock with a readable diagnostic.
template <typename T>
consteval bool check_clock()
{
    static_assert(Clock<T>, "Clock: the type lacks `std::chrono::nanoseconds now() const`");
    return Clock<T>;
}

/// The host's steady clock.
struct steady_clock {
    [[nodiscard]] std::chrono::nanoseconds now() const noexcept
    {
        return std::chrono::duration_cast<std::chrono::nanoseconds>(
            std::chrono::steady_clock::now().time_since_epoch());
    }
};
static_assert(Clock<steady_clock>);

NVMEKIT_END_NAMESPACE
