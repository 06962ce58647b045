#pragma once
/// The ThreadingPolicy concept: whether a controller may run its poll groups concurrently
/// (controller_config::concurrent_poll_groups; the threading model is stated in controller.hpp).
///
/// | expression             | type                   | semantics |
/// |------------------------|------------------------|-----------|
/// | `T::concurrent_groups` | `const bool`, constant | poll groups may run on threads of their own |
///
/// With `concurrent_groups` false every group runs on the admin context's thread, and what only
/// concurrent groups need (the pause handshake, completions routed between threads, the INTx
/// lock, the thread-local context, atomic group counters) is compiled out.

#include <concepts>
#include <type_traits>

#include <nvmekit/config.hpp>

NVMEKIT_BEGIN_NAMESPACE

/// Has a compile-time `concurrent_groups` flag (see the table above).
// clang-format off
template <typename T>
concept ThreadingPolicy = requires {
    { T::concurrent_groups } -> std::convertible_to<bool>;
    typename std::bool_constant<T::concurrent_groups>; // a constant expression
};
// clang-format on

/// Checks `T` models ThreadingPolicy with a readable diagnostic.
template <typename T>
consteval bool check_threading_policy()
{
    static_assert(ThreadingPolicy<T>,
                  "ThreadingPolicy: the type lacks `static constexpr bool concurrent_groups` "
                  "(use nvmekit::single_threaded or nvmekit::multi_threaded)");
    return ThreadingPolicy<T>;
}

/// Nothing runs unless the embedder calls the controller, on one thread at a time: poll() runs
/// the admin context and every poll group. controller_config::concurrent_poll_groups is refused.
struct single_threaded {
    static constexpr bool concurrent_groups = false;
};

/// Poll groups may run on threads of their own: controller_config::concurrent_poll_groups
/// chooses at run time, and start_poll_groups() or the embedder's loops run them.
struct multi_threaded {
    static constexpr bool concurrent_groups = true;
};

static_assert(ThreadingPolicy<single_threaded>);
static_assert(ThreadingPolicy<multi_threaded>);

NVMEKIT_END_NAMESPACE
