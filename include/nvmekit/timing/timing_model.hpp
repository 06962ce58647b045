#pragma once
/// The TimingModel concept: when a block request completes on a modelled device.
///
/// | expression               | type                       | semantics |
/// |--------------------------|----------------------------|-----------|
/// | `m.complete_at(r, now)`  | `std::chrono::nanoseconds` | books request `r`, submitted at `now`, on the
/// model's resources and returns the time it completes, never before `now` |
///
/// `m` is an lvalue of the model type, `r` a `const timing_request&` and `now` a
/// `std::chrono::nanoseconds`. A model is called once per request, in submission order; the `now`
/// of successive calls never decreases (a model takes an earlier `now` as the latest one it saw).
/// The result depends only on the model's parameters and the sequence of calls: a model reads no
/// clock, starts no thread and draws no unseeded random number, so the same calls give the same
/// times on every run, in simulated time (a SystemC embedding passes its simulation time) as in
/// wall-clock time (timed_backend passes its Clock's now()). A model is not thread-safe: its
/// caller serializes calls (timed_backend holds a mutex).

#include <chrono>
#include <concepts>
#include <cstdint>

#include <nvmekit/config.hpp>
#include <nvmekit/contracts/block_backend.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace timing {

/// What a timing model sees of a block request: no data, no callback.
struct timing_request {
    block_operation operation = block_operation::read;
    std::uint64_t offset = 0; ///< bytes from the start of the namespace
    std::uint64_t length = 0; ///< bytes (0 for a flush)
    bool force_unit_access = false;

    /// The view of `request`.
    [[nodiscard]] static constexpr timing_request of(const block_request& request) noexcept
    {
        return {request.operation, request.offset, request.length, request.force_unit_access};
    }
};

/// Times requests (see the table above).
// clang-format off
template <typename T>
concept TimingModel = requires(T& model, const timing_request& request, std::chrono::nanoseconds now) {
    { model.complete_at(request, now) } -> std::same_as<std::chrono::nanoseconds>;
};
// clang-format on

/// Checks `T` models TimingModel with a readable diagnostic. Use it where a model enters the
/// library: `static_assert(check_timing_model<T>());`.
template <typename T>
consteval bool check_timing_model()
{
    static_assert(TimingModel<T>, "TimingModel: the type lacks `std::chrono::nanoseconds complete_at(const "
                                  "nvmekit::timing::timing_request& request, std::chrono::nanoseconds now)`");
    return TimingModel<T>;
}

/// The time `bytes` take at `bytes_per_second`, rounded up to a nanosecond; zero when
/// `bytes_per_second` is 0, which stands for "no transfer time" (an unmodelled link).
[[nodiscard]] constexpr std::chrono::nanoseconds transfer_time(std::uint64_t bytes,
                                                               std::uint64_t bytes_per_second) noexcept
{
    if (bytes_per_second == 0 || bytes == 0) {
        return std::chrono::nanoseconds::zero();
    }
    __extension__ using wide = unsigned __int128; // bytes x 10^9 passes 2^64 from 18 GB up
    const wide scaled = static_cast<wide>(bytes) * 1'000'000'000U;
    const wide nanoseconds = (scaled + bytes_per_second - 1) / bytes_per_second;
    constexpr auto limit = static_cast<wide>(std::chrono::nanoseconds::max().count());
    return std::chrono::nanoseconds{
        static_cast<std::chrono::nanoseconds::rep>(nanoseconds > limit ? limit : nanoseconds)};
}

} // namespace timing
NVMEKIT_END_NAMESPACE
