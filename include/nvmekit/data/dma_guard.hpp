#pragma once
/// dma_guard: a DmaProvider adaptor that refuses every access touching one window of host
/// addresses. The controller puts one in front of its provider and excludes its own BAR0, so a
/// host that points a queue, a PRP or SGL entry or a data buffer at the controller's registers
/// gets Data Transfer Error (or, for a queue access, a fatal controller status) instead of the
/// controller reading or writing itself — whatever the embedder's provider would have done with
/// that address.
///
///     nvmekit::dma_guard guard{memory};
///     guard.exclude(0xfebf'0000, 0x4000);       // BAR0 as the host programmed it
///     guard.read(0xfebf'0010, buffer);          // errc::dma_fault, memory never called
///     guard.exclude(0, 0);                      // no window: every access is forwarded
///
/// With no window the check is one comparison per access. Accesses may run on several threads at
/// once (poll groups) and exclude() on another: the window's bounds are relaxed atomics, so an
/// access racing a change of window is checked against the old or the new bounds (the host moves
/// BAR0 while it programs the device, not while it uses it).

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <system_error>

#include <nvmekit/config.hpp>
#include <nvmekit/contracts/dma.hpp>
#include <nvmekit/error.hpp>

NVMEKIT_BEGIN_NAMESPACE

/// `Dma` is a DmaProvider, whose read() and write() the guard forwards; or any other provider
/// (an AsyncDmaProvider), for which the guard offers touches_window() and inner() alone.
template <typename Dma>
class dma_guard {
public:
    explicit dma_guard(Dma& inner) noexcept : inner_{&inner} {}

    /// Refuses accesses touching [base, base + length) from now on (replacing an earlier window);
    /// a length of 0 removes the window. A window reaching past the top of the address space is
    /// cut at the top.
    void exclude(std::uint64_t base, std::uint64_t length) noexcept
    {
        changes_.fetch_add(1, std::memory_order_relaxed);
        if (length == 0) {
            first_.store(std::numeric_limits<std::uint64_t>::max(), std::memory_order_relaxed);
            last_.store(0, std::memory_order_relaxed);
            return;
        }
        first_.store(base, std::memory_order_relaxed);
        last_.store(length - 1 > std::numeric_limits<std::uint64_t>::max() - base
                        ? std::numeric_limits<std::uint64_t>::max()
                        : base + (length - 1),
                    std::memory_order_relaxed);
    }

    /// The excluded window's first byte and length (length 0: none).
    [[nodiscard]] std::uint64_t excluded_base() const noexcept
    {
        const std::uint64_t first = first_.load(std::memory_order_relaxed);
        return first <= last_.load(std::memory_order_relaxed) ? first : 0;
    }
    [[nodiscard]] std::uint64_t excluded_length() const noexcept
    {
        const std::uint64_t first = first_.load(std::memory_order_relaxed);
        const std::uint64_t last = last_.load(std::memory_order_relaxed);
        return first <= last ? last - first + 1 : 0; // a window of all 2^64 bytes reads as 0
    }

    /// True when [address, address + length) overlaps the excluded window.
    [[nodiscard]] bool touches_window(std::uint64_t address, std::uint64_t length) const noexcept
    {
        if (length == 0) {
            return false;
        }
        const std::uint64_t first = first_.load(std::memory_order_relaxed);
        if (address <= last_.load(std::memory_order_relaxed)) {
            return first <= address || first - address < length;
        }
        // Past the window: only an access wrapping past the top of the address space reaches it.
        const std::uint64_t to_top = std::numeric_limits<std::uint64_t>::max() - address;
        return length - 1 > to_top && first <= length - 2 - to_top;
    }

    // clang-format off
    [[nodiscard]] std::error_code read(std::uint64_t address, std::span<std::byte> destination)
        requires DmaProvider<Dma>
    // clang-format on
    {
        if (touches_window(address, destination.size())) {
            return make_error_code(errc::dma_fault);
        }
        return inner_->read(address, destination);
    }

    // clang-format off
    [[nodiscard]] std::error_code write(std::uint64_t address, std::span<const std::byte> source)
        requires DmaProvider<Dma>
    // clang-format on
    {
        if (touches_window(address, source.size())) {
            return make_error_code(errc::dma_fault);
        }
        return inner_->write(address, source);
    }

    /// Present only when the wrapped provider maps; an empty span for ranges touching the window.
    // clang-format off
    [[nodiscard]] std::span<std::byte> map(std::uint64_t address, std::size_t length)
        requires MappingDmaProvider<Dma>
    // clang-format on
    {
        if (touches_window(address, length)) {
            return {};
        }
        return inner_->map(address, length);
    }

    /// Present only when the wrapped provider's views are stable (StableMappingDmaProvider): its
    /// generation, changed as well by every exclude(), so that a view kept across a change of
    /// window (BAR0 moved, Bus Master Enable cleared) is dropped and mapped again.
    // clang-format off
    [[nodiscard]] std::uint64_t mapping_generation() const noexcept
        requires StableMappingDmaProvider<Dma>
    // clang-format on
    {
        return inner_->mapping_generation() + changes_.load(std::memory_order_relaxed);
    }

    [[nodiscard]] Dma& inner() noexcept { return *inner_; }
    [[nodiscard]] const Dma& inner() const noexcept { return *inner_; }

private:
    Dma* inner_;
    std::atomic<std::uint64_t> first_{std::numeric_limits<std::uint64_t>::max()};
    std::atomic<std::uint64_t> last_{0};
    std::atomic<std::uint64_t> changes_{0}; ///< exclude() calls, part of mapping_generation()
};

NVMEKIT_END_NAMESPACE
