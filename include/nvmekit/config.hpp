#pragma once
/// Library-wide configuration: version, namespace, assertions, platform checks.

#include <bit>
#include <cstdio>
#include <cstdlib>

#define NVMEKIT_VERSION_MAJOR 0
#define NVMEKIT_VERSION_MINOR 1
#define NVMEKIT_VERSION_PATCH 0

/// Opens and closes the versioned public namespace, so two copies of nvmekit in one program do
/// not collide.
#define NVMEKIT_BEGIN_NAMESPACE \
    namespace nvmekit {         \
    inline namespace v0 {
#define NVMEKIT_END_NAMESPACE \
    }                         \
    }

static_assert(std::endian::native == std::endian::little,
              "nvmekit: NVMe host memory is little-endian and nvmekit targets little-endian hosts");

NVMEKIT_BEGIN_NAMESPACE
namespace detail {
/// Called by NVMEKIT_ASSERT when an internal invariant does not hold. Never reachable from host
/// input.
[[noreturn]] inline void assertion_failed(const char* file, int line, const char* message) noexcept
{
    std::fprintf(stderr, "%s:%d: nvmekit assertion failed: %s\n", file, line, message);
    std::abort();
}
} // namespace detail
NVMEKIT_END_NAMESPACE

/// Marks a small helper on the I/O path that must be inlined into its callers whatever else the
/// translation unit holds: left to its unit-wide budget, g++ stops inlining such a helper when
/// unrelated code grows, and every command pays a call (bench/README.md).
#define NVMEKIT_HOT_INLINE [[gnu::always_inline]]

/// Checks an internal invariant. Define NVMEKIT_ASSERT before including nvmekit to replace it.
#ifndef NVMEKIT_ASSERT
#ifdef NDEBUG
#define NVMEKIT_ASSERT(condition, message) static_cast<void>(0)
#else
#define NVMEKIT_ASSERT(condition, message) \
    ((condition) ? static_cast<void>(0) : ::nvmekit::detail::assertion_failed(__FILE__, __LINE__, (message)))
#endif
#endif
