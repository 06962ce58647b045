#pragma once
/// Host memory ranges: the scatter list a PRP or SGL walk produces, and the copies between a
/// local buffer and those ranges through a DmaProvider.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>

#include <nvmekit/config.hpp>
#include <nvmekit/contracts/dma.hpp>
#include <nvmekit/spec/status.hpp>

NVMEKIT_BEGIN_NAMESPACE

/// One piece of a command's data buffer: `length` bytes of host memory at `address`, or, for a
/// bit bucket (SGL Bit Bucket descriptor, Base 2.0 4.1.2), `length` bytes of read data the
/// controller discards (its address is 0 and meaningless).
struct host_range {
    std::uint64_t address = 0;
    std::uint32_t length = 0;
    bool bit_bucket = false;

    friend constexpr bool operator==(const host_range&, const host_range&) noexcept = default;
};

/// Which way a command moves its data.
enum class transfer_direction : std::uint8_t {
    controller_to_host, ///< the controller writes host memory (e.g. Read, Identify)
    host_to_controller, ///< the controller reads host memory (e.g. Write, Set Features)
};

/// A list of host memory ranges over caller-provided storage (no allocation). push() merges a
/// range that continues the previous one (same kind, address contiguous, merged length fits 32
/// bits; consecutive bit buckets always merge) and returns false when the storage is full.
class host_range_list {
public:
    /// An empty list that can hold `storage.size()` ranges; `storage` must outlive the list.
    explicit host_range_list(std::span<host_range> storage) noexcept : storage_{storage} {}

    /// Appends a range, or extends the last one when it continues it. A zero-length range is
    /// ignored (and succeeds). Returns false, leaving the list unchanged, when a new range is
    /// needed and the storage is full.
    [[nodiscard]] bool push(std::uint64_t address, std::uint32_t length, bool bit_bucket = false) noexcept
    {
        if (length == 0) {
            return true;
        }
        if (bit_bucket) {
            address = 0;
        }
        if (size_ != 0) {
            host_range& last = storage_[size_ - 1];
            if (continues(last, address, length, bit_bucket)) {
                last.length += length;
                total_bytes_ += length;
                return true;
            }
        }
        if (size_ == storage_.size()) {
            return false;
        }
        storage_[size_++] = host_range{address, length, bit_bucket};
        total_bytes_ += length;
        return true;
    }

    /// Removes every range; the storage stays.
    void clear() noexcept
    {
        size_ = 0;
        total_bytes_ = 0;
    }

    /// The ranges, in data order.
    [[nodiscard]] std::span<const host_range> ranges() const noexcept { return storage_.first(size_); }
    /// Number of ranges.
    [[nodiscard]] std::size_t size() const noexcept { return size_; }
    /// Whether the list holds no range.
    [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
    /// Sum of the range lengths, bit-bucket bytes included.
    [[nodiscard]] std::uint64_t total_bytes() const noexcept { return total_bytes_; }
    /// Most ranges the storage holds.
    [[nodiscard]] std::size_t capacity() const noexcept { return storage_.size(); }

private:
    [[nodiscard]] static bool continues(const host_range& last, std::uint64_t address, std::uint32_t length,
                                        bool bit_bucket) noexcept
    {
        if (last.bit_bucket != bit_bucket ||
            length > std::numeric_limits<std::uint32_t>::max() - last.length) {
            return false;
        }
        if (bit_bucket) {
            return true;
        }
        return last.length <= std::numeric_limits<std::uint64_t>::max() - last.address &&
               last.address + last.length == address;
    }

    std::span<host_range> storage_;
    std::size_t size_ = 0;
    std::uint64_t total_bytes_ = 0;
};

namespace detail {
/// Calls `move(address, offset_in_window, length)` for each piece of the window
/// [offset, offset + window_length) of `list` that lies in host memory (bit buckets skipped),
/// stopping at the first error.
template <typename Move>
[[nodiscard]] spec::status for_each_window_piece(const host_range_list& list, std::uint64_t offset,
                                                 std::uint64_t window_length, Move&& move)
{
    NVMEKIT_ASSERT(offset <= list.total_bytes() && window_length <= list.total_bytes() - offset,
                   "host_ranges: copy window beyond the ranges");
    std::uint64_t range_start = 0;
    std::uint64_t done = 0;
    for (const host_range& range : list.ranges()) {
        if (done == window_length) {
            break;
        }
        const std::uint64_t range_end = range_start + range.length;
        const std::uint64_t position = offset + done;
        if (position < range_end) {
            const std::uint64_t skip = position - range_start;
            const std::uint64_t piece = std::min<std::uint64_t>(range.length - skip, window_length - done);
            if (!range.bit_bucket && !move(range.address + skip, done, piece)) {
                return spec::generic_status::data_transfer_error;
            }
            done += piece;
        }
        range_start = range_end;
    }
    return spec::status::success();
}
} // namespace detail

/// Writes `data` to the bytes [offset, offset + data.size()) of the ranges (controller to host).
/// Bit-bucket bytes are not written: their part of `data` is skipped. A DMA failure gives
/// Generic / Data Transfer Error (the caller adds DNR if it wants); a prefix may have been
/// written. The window must lie within total_bytes() (asserted).
template <DmaProvider Dma>
[[nodiscard]] spec::status copy_to_host(Dma& dma, const host_range_list& list, std::uint64_t offset,
                                        std::span<const std::byte> data)
{
    return detail::for_each_window_piece(list, offset, data.size(),
                                         [&](std::uint64_t address, std::uint64_t at, std::uint64_t length) {
                                             return !dma.write(address, data.subspan(at, length));
                                         });
}

/// Writes all of `data` to the ranges; `data.size()` must equal total_bytes() (asserted).
template <DmaProvider Dma>
[[nodiscard]] spec::status copy_to_host(Dma& dma, const host_range_list& list,
                                        std::span<const std::byte> data)
{
    NVMEKIT_ASSERT(data.size() == list.total_bytes(), "copy_to_host: data size differs from the ranges");
    return copy_to_host(dma, list, 0, data);
}

/// Reads the bytes [offset, offset + data.size()) of the ranges into `data` (host to
/// controller). The part of `data` under a bit bucket is left untouched. A DMA failure gives
/// Generic / Data Transfer Error. The window must lie within total_bytes() (asserted).
template <DmaProvider Dma>
[[nodiscard]] spec::status copy_from_host(Dma& dma, const host_range_list& list, std::uint64_t offset,
                                          std::span<std::byte> data)
{
    return detail::for_each_window_piece(list, offset, data.size(),
                                         [&](std::uint64_t address, std::uint64_t at, std::uint64_t length) {
                                             return !dma.read(address, data.subspan(at, length));
                                         });
}

/// Reads all of the ranges into `data`; `data.size()` must equal total_bytes() (asserted).
template <DmaProvider Dma>
[[nodiscard]] spec::status copy_from_host(Dma& dma, const host_range_list& list, std::span<std::byte> data)
{
    NVMEKIT_ASSERT(data.size() == list.total_bytes(), "copy_from_host: data size differs from the ranges");
    return copy_from_host(dma, list, 0, data);
}

NVMEKIT_END_NAMESPACE
