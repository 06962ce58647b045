#pragma once
/// Helper of the unit tests' death tests: whether NVMEKIT_ASSERT is compiled in, so that a death
/// test can skip itself in a build where the assertion it expects is compiled out.

namespace nvmekit_test {

#ifdef NDEBUG
inline constexpr bool asserts_enabled = false;
#else
inline constexpr bool asserts_enabled = true;
#endif

} // namespace nvmekit_test
