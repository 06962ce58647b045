#pragma once
/// What the fuzz targets share: a reader that turns the fuzzer's bytes into values, and an
/// interrupt provider that only counts.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include <nvmekit/contracts/interrupts.hpp>

// A fuzz target without NVMEKIT_ASSERT would let a hostile host break an internal invariant
// unnoticed; tests/fuzz/CMakeLists.txt undefines NDEBUG for every target.
#ifdef NDEBUG
#error "nvmekit fuzz targets must build with NVMEKIT_ASSERT enabled (without NDEBUG)"
#endif

namespace nvmekit_fuzz {

/// Counts MSI-X messages; the targets check state, not interrupts.
struct counting_interrupts {
    std::uint64_t raised = 0;
    void raise_msix(std::uint16_t, nvmekit::msix_message) noexcept { ++raised; }
};

/// Reads input bytes in order; past the end everything reads as zero.
class reader {
public:
    explicit reader(std::span<const std::uint8_t> data) : data_{data} {}
    [[nodiscard]] bool empty() const noexcept { return at_ >= data_.size(); }
    template <typename T>
    T take() noexcept
    {
        T value{};
        const std::size_t n = std::min(sizeof(T), data_.size() - std::min(at_, data_.size()));
        if (n != 0) {
            std::memcpy(&value, data_.data() + at_, n);
        }
        at_ += sizeof(T);
        return value;
    }
    std::span<const std::uint8_t> take_bytes(std::size_t count) noexcept
    {
        const std::size_t start = std::min(at_, data_.size());
        const std::size_t n = std::min(count, data_.size() - start);
        at_ += count;
        return data_.subspan(start, n);
    }

private:
    std::span<const std::uint8_t> data_;
    std::size_t at_ = 0;
};

} // namespace nvmekit_fuzz
