#pragma once
/// Helper of the unit tests that check a component allocates nothing: replaces the global
/// operator new and delete with ones that count the allocations in nvmekit_test::allocation_count.
/// The replacements are definitions, so a test executable includes this header from one
/// translation unit only (each tests/unit/*_test.cpp is one executable).

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <new>

namespace nvmekit_test {

/// Calls of the replaced global operator new below, from every thread.
inline std::atomic<std::size_t> allocation_count{0};

} // namespace nvmekit_test

// The replacement operators pair malloc with free; g++ -O2 cannot see that pairing through the
// replaced operator new and warns about a mismatch that is not there.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

void* operator new(std::size_t size)
{
    nvmekit_test::allocation_count.fetch_add(1, std::memory_order_relaxed);
    if (void* memory = std::malloc(size == 0 ? 1 : size)) {
        return memory;
    }
    throw std::bad_alloc{};
}

void* operator new[](std::size_t size) { return ::operator new(size); }

void operator delete(void* memory) noexcept { std::free(memory); }

void operator delete(void* memory, std::size_t) noexcept { std::free(memory); }

void operator delete[](void* memory) noexcept { std::free(memory); }

void operator delete[](void* memory, std::size_t) noexcept { std::free(memory); }
