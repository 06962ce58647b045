#pragma once
/// The randomized tests' generator: splitmix64 (Vigna's reference) with integer mappings of our
/// own and no std distributions, so a seed gives the same sequence with every standard library.
/// A test-only header.

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

namespace nvmekit_test {

class splitmix64 {
public:
    explicit splitmix64(std::uint64_t seed) noexcept : state_{seed} {}

    std::uint64_t next() noexcept
    {
        state_ += 0x9e37'79b9'7f4a'7c15ULL;
        std::uint64_t mixed = state_;
        mixed = (mixed ^ (mixed >> 30)) * 0xbf58'476d'1ce4'e5b9ULL;
        mixed = (mixed ^ (mixed >> 27)) * 0x94d0'49bb'1331'11ebULL;
        return mixed ^ (mixed >> 31);
    }
    /// A value in [0, bound); the modulo bias (below 2^-40 for the tests' bounds) does not matter.
    std::uint64_t below(std::uint64_t bound) noexcept { return next() % bound; }
    /// A value in [low, high].
    std::uint64_t between(std::uint64_t low, std::uint64_t high) noexcept
    {
        return low + below(high - low + 1);
    }
    /// True `chance` times in 100.
    bool percent(unsigned chance) noexcept { return below(100) < chance; }
    /// True once in `n`.
    bool one_in(std::uint64_t n) noexcept { return below(n) == 0; }
    std::uint32_t word() noexcept { return static_cast<std::uint32_t>(next() >> 32); }
    template <typename T, std::size_t N>
    const T& pick(const std::array<T, N>& values) noexcept
    {
        return values[below(N)];
    }
    /// Fills `bytes` with the next values.
    void fill(std::span<std::byte> bytes) noexcept
    {
        std::size_t at = 0;
        for (; at + 8 <= bytes.size(); at += 8) {
            const std::uint64_t value = next();
            std::memcpy(bytes.data() + at, &value, 8);
        }
        if (at != bytes.size()) {
            const std::uint64_t value = next();
            std::memcpy(bytes.data() + at, &value, bytes.size() - at);
        }
    }

private:
    std::uint64_t state_;
};

} // namespace nvmekit_test
