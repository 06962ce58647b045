#pragma once
/// The BlockBackend concept: the storage behind a namespace.
///
// clang-format off
/// | expression                | type            | semantics |
/// |---------------------------|-----------------|-----------|
/// | `b.capacity_bytes()`      | `std::uint64_t` | the fixed size of the backend in bytes |
/// | `b.submit(request)`       | `void`          | starts `request`; never throws. `request.complete` runs exactly once, inside this call or inside a later `b.poll()`. A request that is invalid (see validate_block_request) completes with its status without touching storage |
/// | `b.poll()`                | `std::size_t`   | completes whatever is ready and returns how many requests it completed; an inline backend returns 0 |
/// | `b.has_volatile_cache()`  | `bool`          | true when flush does something (the controller then reports a volatile write cache, Identify Controller VWC) |
/// | `b.outstanding()`         | `std::size_t`   | requests submitted and not yet completed |
// clang-format on
///
/// `b` is an lvalue of the backend type and `request` an lvalue `block_request`.
///
/// A backend that often completes requests inside submit() may also offer (InlineSubmitting)
// clang-format off
/// | expression                | type                          | semantics |
/// |---------------------------|-------------------------------|-----------|
/// | `b.submit_inline(request)` | `std::optional<block_status>` | as `b.submit(request)`, except that a request it completes inside the call may end by returning its status instead of calling `request.complete`; std::nullopt means `request.complete` runs as with submit() (it may already have run) |
// clang-format on
/// The controller then continues a command whose request completed at once without the callback.
///
/// Rules every backend keeps:
/// - The submitter owns the request and its segments and keeps them alive until `complete` runs.
///   A backend never touches a request after calling its `complete`: the callback may reuse it,
///   submit it again or submit others. A request no longer counts in `outstanding()` when its
///   `complete` runs.
/// - Ranges that were deallocated or write-zeroed read back as zeros (the controller reports
///   Identify Namespace DLFEAT "read zeros", NVM Command Set 1.0 4.1.5).
/// - A flush makes every write completed before it durable (Flush, Base 2.0 7.1); a write with
///   `force_unit_access` is durable when it completes (Write FUA, NVM Command Set 1.0 3.2.6).
/// - Nothing a request carries can make a backend read or write outside its storage or the
///   request's segments.

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include <nvmekit/config.hpp>

NVMEKIT_BEGIN_NAMESPACE

/// One piece of local memory of a read or write. On a read, data == nullptr means "discard these
/// bytes" (an SGL Bit Bucket, Base 2.0 4.1.2).
struct io_segment {
    std::byte* data = nullptr;
    std::size_t size = 0;
};

/// What a block_request asks the backend to do.
enum class block_operation : std::uint8_t { read, write, flush, write_zeroes, deallocate };

/// How a block_request ended. The controller maps these to NVMe statuses (Unrecovered Read Error,
/// Write Fault, Internal Error, LBA Out of Range).
enum class block_status : std::uint8_t {
    success,
    unrecovered_read_error,
    write_fault,
    internal_error,
    out_of_range
};

struct block_request;

/// What a backend that hands a request on to another keeps in the request while it is inside,
/// so that it sees the request complete without allocating or locking: the submitter's
/// `complete` and `context`, which it puts back before completing, and when it took the request.
struct block_request_relay {
    void (*complete)(block_request&, block_status) = nullptr; ///< nullptr: no backend relays it
    void* context = nullptr;
    std::uint64_t submitted_at = 0; ///< in the relaying backend's own time unit
};

/// One backend operation. The submitter owns it and keeps it alive until `complete` is called.
struct block_request {
    block_operation operation = block_operation::read;
    bool force_unit_access = false; ///< write: durable before completion (FUA)
    std::uint64_t offset = 0; ///< bytes from the start of the backend (read/write/write_zeroes/deallocate)
    std::uint64_t length = 0; ///< bytes; for read/write it equals the sum of segment sizes
    std::span<const io_segment> segments{}; ///< read/write only: where the bytes go or come from, in order
    /// Called exactly once, either inside submit() or inside a later poll(); it may submit new requests.
    void (*complete)(block_request&, block_status) = nullptr;
    void* context = nullptr; ///< for the submitter
    /// A backend that fails a read or write with unrecovered_read_error or write_fault may set
    /// this to the offset (same origin as `offset`) of the first byte in error; the controller
    /// then reports that block's LBA in the Error Information log. Left at unknown_offset, the
    /// request's first block is reported.
    std::uint64_t error_offset = unknown_offset;
    static constexpr std::uint64_t unknown_offset = ~std::uint64_t{0};
    /// Belongs to the one backend on the way that relays the request (see block_request_relay);
    /// the submitter leaves it empty.
    block_request_relay relay{};
};

// clang-format off
template <typename T>
concept BlockSized = requires(const T& backend) {
    { backend.capacity_bytes() } -> std::same_as<std::uint64_t>;
};
// clang-format on

// clang-format off
template <typename T>
concept BlockSubmittable = requires(T& backend, block_request& request) {
    { backend.submit(request) } -> std::same_as<void>;
};
// clang-format on

// clang-format off
template <typename T>
concept BlockPollable = requires(T& backend) {
    { backend.poll() } -> std::same_as<std::size_t>;
};
// clang-format on

// clang-format off
template <typename T>
concept BlockCacheReporting = requires(const T& backend) {
    { backend.has_volatile_cache() } -> std::same_as<bool>;
};
// clang-format on

// clang-format off
template <typename T>
concept BlockOutstandingCounting = requires(const T& backend) {
    { backend.outstanding() } -> std::same_as<std::size_t>;
};
// clang-format on

/// Storage for a namespace (see the table above).
// clang-format off
template <typename T>
concept BlockBackend = BlockSized<T> && BlockSubmittable<T> && BlockPollable<T> && BlockCacheReporting<T> &&
    BlockOutstandingCounting<T>;
// clang-format on

/// A backend that can return the status of a request it completes at once (see the top).
// clang-format off
template <typename T>
concept InlineSubmitting = requires(T& backend, block_request& request) {
    { backend.submit_inline(request) } -> std::same_as<std::optional<block_status>>;
};
// clang-format on

/// Checks `T` models BlockBackend with one readable diagnostic per missing operation. Use it where
/// a backend enters the library: `static_assert(check_block_backend<T>());`.
template <typename T>
consteval bool check_block_backend()
{
    static_assert(BlockSized<T>, "BlockBackend: the type lacks `std::uint64_t capacity_bytes() const`");
    static_assert(BlockSubmittable<T>,
                  "BlockBackend: the type lacks `void submit(nvmekit::block_request& request)`");
    static_assert(BlockPollable<T>, "BlockBackend: the type lacks `std::size_t poll()`");
    static_assert(BlockCacheReporting<T>, "BlockBackend: the type lacks `bool has_volatile_cache() const`");
    static_assert(BlockOutstandingCounting<T>,
                  "BlockBackend: the type lacks `std::size_t outstanding() const`");
    return BlockBackend<T>;
}

/// Whether [offset, offset + length) lies within `capacity` bytes, without overflow.
[[nodiscard]] constexpr bool block_range_fits(std::uint64_t offset, std::uint64_t length,
                                              std::uint64_t capacity) noexcept
{
    return offset <= capacity && length <= capacity - offset;
}

/// The status a backend of `capacity` bytes gives `request` before doing anything: success when
/// the request may run; internal_error for a submitter mistake (an unknown operation, a read or
/// write whose segment sizes do not add up to `length`, a write segment without data);
/// out_of_range when the byte range passes the capacity. A flush has no range and always passes.
[[nodiscard]] constexpr block_status validate_block_request(const block_request& request,
                                                            std::uint64_t capacity) noexcept
{
    switch (request.operation) {
    case block_operation::flush: return block_status::success;
    case block_operation::write_zeroes:
    case block_operation::deallocate: break;
    case block_operation::read:
    case block_operation::write: {
        if (request.segments.size() == 1) {
            // The common shape, checked without the loop.
            const io_segment& only = request.segments[0];
            if (only.size != request.length ||
                (request.operation == block_operation::write && only.data == nullptr && only.size != 0)) {
                return block_status::internal_error;
            }
            break;
        }
        std::uint64_t total = 0;
        for (const io_segment& segment : request.segments) {
            if (segment.size > request.length - total) {
                return block_status::internal_error;
            }
            if (request.operation == block_operation::write && segment.data == nullptr && segment.size != 0) {
                return block_status::internal_error;
            }
            total += segment.size;
        }
        if (total != request.length) {
            return block_status::internal_error;
        }
        break;
    }
    default: return block_status::internal_error;
    }
    return block_range_fits(request.offset, request.length, capacity) ? block_status::success
                                                                      : block_status::out_of_range;
}

namespace detail {
/// Ends `request` with `status`. The request must not be touched afterwards.
inline void complete_request(block_request& request, block_status status) noexcept
{
    NVMEKIT_ASSERT(request.complete != nullptr, "block_request submitted without a completion callback");
    request.complete(request, status);
}
} // namespace detail

NVMEKIT_END_NAMESPACE
