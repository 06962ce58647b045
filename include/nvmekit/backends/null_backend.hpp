#pragma once
/// A BlockBackend that stores nothing: writes are dropped and reads return zeros. For benchmarks
/// of the controller itself and for namespaces whose data does not matter. Every request completes
/// inline, inside submit().
///
/// Threads: submit() may run on several threads at once (poll groups on threads of their own),
/// each request object used by one thread. The submit path reads only members fixed at
/// construction (capacity, options) and writes only the request's own segments, so concurrent
/// requests share no mutable state and need no synchronization. Construction, moves and
/// destruction must not overlap any other call.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>

#include <nvmekit/config.hpp>
#include <nvmekit/contracts/block_backend.hpp>

NVMEKIT_BEGIN_NAMESPACE

/// Options of a null_backend.
struct null_backend_options {
    /// Whether reads fill their segments with zeros. False leaves the buffers untouched, so a
    /// benchmark measures the controller without the memset.
    bool fill_reads = true;
};

/// A backend of a given capacity that keeps no data.
class null_backend {
public:
    /// A backend of `capacity_bytes` bytes.
    explicit null_backend(std::uint64_t capacity_bytes, null_backend_options options = {}) noexcept
        : capacity_{capacity_bytes}, options_{options}
    {}

    /// The fixed size given at construction.
    [[nodiscard]] std::uint64_t capacity_bytes() const noexcept { return capacity_; }

    /// Completes `request` inline: success (reads give zeros unless fill_reads is off), or the
    /// status of validate_block_request.
    void submit(block_request& request) noexcept
    {
        detail::complete_request(request, *submit_inline(request));
    }

    /// submit() returning the status instead of calling `request.complete`: always a status.
    std::optional<block_status> submit_inline(block_request& request) noexcept
    {
        const block_status status = validate_block_request(request, capacity_);
        if (status == block_status::success && request.operation == block_operation::read &&
            options_.fill_reads) {
            for (const io_segment& segment : request.segments) {
                if (segment.data != nullptr && segment.size != 0) {
                    std::memset(segment.data, 0, segment.size);
                }
            }
        }
        return status;
    }

    /// Nothing is ever pending: returns 0.
    std::size_t poll() noexcept { return 0; }

    /// No cache: flush does nothing.
    [[nodiscard]] bool has_volatile_cache() const noexcept { return false; }

    /// Always 0: requests complete inside submit().
    [[nodiscard]] std::size_t outstanding() const noexcept { return 0; }

private:
    std::uint64_t capacity_;
    null_backend_options options_;
};

static_assert(check_block_backend<null_backend>());
static_assert(InlineSubmitting<null_backend>);

NVMEKIT_END_NAMESPACE
