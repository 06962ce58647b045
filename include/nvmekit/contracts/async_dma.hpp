#pragma once
/// The AsyncDmaProvider concept: host memory accesses that may complete later.
///
/// A DMA engine of a DPU, a simulator's bus that takes simulated time and a vfio-user client that
/// serves DMA with VFIO_USER_DMA_READ/WRITE messages finish an access after the call that starts
/// it has returned. Such a provider takes a dma_request, owned by the submitter, and completes it
/// by calling its `complete`, the shape block_request has for backends.
///
/// | expression          | type          | semantics                                               |
/// |---------------------|---------------|---------------------------------------------------------|
/// | `p.submit(request)` | `void`        | starts `request`; completes it exactly once (see below) |
/// | `p.poll()`          | `std::size_t` | completes what is ready; returns how many it completed  |
/// | `cp.outstanding()`  | `std::size_t` | requests submitted and not yet completed                |
/// | `P::completes_inline` (optional) | `bool` constant | true: every request completes inside submit |
///
/// `p` is an lvalue of the provider type `P`, `cp` a const lvalue of it, `request` an lvalue
/// `dma_request`. submit never throws for host addresses: an address outside the memory the host
/// gave completes the request with an error code, as DmaProvider's read and write return one.
///
/// Rules every provider keeps:
/// - `request.complete` runs exactly once, inside submit() or inside a later poll(), with an
///   empty code on success. An inline provider's poll() returns 0.
/// - The submitter owns the request and its buffer and keeps both alive, the buffer untouched,
///   until `complete` runs. A provider never touches a request after calling its `complete`: the
///   callback may reuse it, submit it again or submit others. A request no longer counts in
///   outstanding() when its `complete` runs.
/// - A read stores into `request.buffer` only; on failure the buffer holds unspecified bytes. A
///   write never modifies `request.buffer`; a failed write may have stored a prefix. (The same
///   rules as DmaProvider's read and write.)
/// - Nothing a request carries makes a provider access memory outside the host's ranges or the
///   request's buffer.
///
/// Waiting for DMA in flight (controller reset, queue deletion, DMA_UNMAP): poll() until
/// outstanding() is 0, or until the requests the waiter submitted itself have completed.
///
/// Synchronous providers pay nothing: sync_dma_adapter makes any DmaProvider an AsyncDmaProvider
/// whose requests complete inside submit(), and says so with `static constexpr bool
/// completes_inline = true`. A controller tests InlineAsyncDmaProvider (or takes a plain
/// DmaProvider) at compile time and keeps its synchronous path, with no request objects, no
/// callbacks and no polling, for such providers.

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <system_error>

#include <nvmekit/config.hpp>
#include <nvmekit/contracts/dma.hpp>

NVMEKIT_BEGIN_NAMESPACE

/// What a dma_request asks the provider to do.
enum class dma_operation : std::uint8_t {
    read, ///< host memory at `address` into `buffer`
    write ///< `buffer` into host memory at `address`
};

/// One host memory access. The submitter owns it and keeps it, and its buffer, alive until
/// `complete` is called.
struct dma_request {
    dma_operation operation = dma_operation::read;
    std::uint64_t address = 0;     ///< host address of the first byte
    std::span<std::byte> buffer{}; ///< read: where the bytes go; write: where they come from (never modified)
    /// Called exactly once, either inside submit() or inside a later poll(), with an empty code on
    /// success; it may submit new requests and reuse this one.
    void (*complete)(dma_request&, std::error_code) = nullptr;
    void* context = nullptr; ///< for the submitter
};

// clang-format off
template <typename T>
concept AsyncDmaSubmittable = requires(T& provider, dma_request& request) {
    { provider.submit(request) } -> std::same_as<void>;
};
// clang-format on

// clang-format off
template <typename T>
concept AsyncDmaPollable = requires(T& provider) {
    { provider.poll() } -> std::same_as<std::size_t>;
};
// clang-format on

// clang-format off
template <typename T>
concept AsyncDmaOutstandingCounting = requires(const T& provider) {
    { provider.outstanding() } -> std::same_as<std::size_t>;
};
// clang-format on

/// Reads and writes host memory with requests that may complete later (see the table above).
template <typename T>
concept AsyncDmaProvider = AsyncDmaSubmittable<T> && AsyncDmaPollable<T> && AsyncDmaOutstandingCounting<T>;

/// An AsyncDmaProvider that declares `static constexpr bool completes_inline = true`: every
/// request completes inside submit(), so a controller may keep a synchronous code path for it.
// clang-format off
template <typename T>
concept InlineAsyncDmaProvider = AsyncDmaProvider<T> && requires {
    requires T::completes_inline;
};
// clang-format on

/// Checks `T` models AsyncDmaProvider with one readable diagnostic per missing operation. Use it
/// where a provider enters the library: `static_assert(check_async_dma_provider<T>());`.
template <typename T>
consteval bool check_async_dma_provider()
{
    static_assert(AsyncDmaSubmittable<T>,
                  "AsyncDmaProvider: the type lacks `void submit(nvmekit::dma_request& request)`");
    static_assert(AsyncDmaPollable<T>, "AsyncDmaProvider: the type lacks `std::size_t poll()`");
    static_assert(AsyncDmaOutstandingCounting<T>,
                  "AsyncDmaProvider: the type lacks `std::size_t outstanding() const`");
    return AsyncDmaProvider<T>;
}

/// Runs `request` on a synchronous provider and returns the provider's result, without calling
/// `complete`. An operation other than read or write is std::errc::invalid_argument and touches
/// nothing.
template <DmaProvider Dma>
[[nodiscard]] std::error_code execute_dma_request(Dma& dma, const dma_request& request)
{
    switch (request.operation) {
    case dma_operation::read: return dma.read(request.address, request.buffer);
    case dma_operation::write: return dma.write(request.address, std::span<const std::byte>{request.buffer});
    }
    return std::make_error_code(std::errc::invalid_argument);
}

namespace detail {
/// Ends `request` with `result`. The request must not be touched afterwards.
inline void complete_dma_request(dma_request& request, std::error_code result) noexcept
{
    NVMEKIT_ASSERT(request.complete != nullptr, "dma_request submitted without a completion callback");
    request.complete(request, result);
}
} // namespace detail

/// Makes a DmaProvider an AsyncDmaProvider: submit() runs the access on the wrapped provider and
/// completes the request inside the call with the provider's error code; poll() and outstanding()
/// are always 0. Models InlineAsyncDmaProvider, and also DmaProvider (read and write forward to
/// the wrapped provider), and MappingDmaProvider when the wrapped provider does. A callback that submits
/// again runs inside the outer submit(), one level deeper each time: a submitter chaining many requests loops
/// instead of recursing, or uses the wrapped provider directly (see completes_inline). Thread-safe exactly as
/// far as the wrapped provider is: the adapter has no state besides the reference.
template <DmaProvider Dma>
class sync_dma_adapter {
public:
    /// Every request completes inside submit(); see InlineAsyncDmaProvider.
    static constexpr bool completes_inline = true;

    /// Wraps `dma`, which must outlive the adapter.
    explicit sync_dma_adapter(Dma& dma) noexcept : dma_{&dma} {}

    /// Runs `request` on the wrapped provider and completes it with its result.
    void submit(dma_request& request)
    {
        const std::error_code result = execute_dma_request(*dma_, request);
        detail::complete_dma_request(request, result);
    }

    /// Nothing is ever pending: returns 0.
    std::size_t poll() noexcept { return 0; }

    /// Nothing is ever pending: returns 0.
    [[nodiscard]] std::size_t outstanding() const noexcept { return 0; }

    /// Forwards to the wrapped provider's read(): the synchronous path, unchanged.
    std::error_code read(std::uint64_t address, std::span<std::byte> destination)
    {
        return dma_->read(address, destination);
    }

    /// Forwards to the wrapped provider's write(): the synchronous path, unchanged.
    std::error_code write(std::uint64_t address, std::span<const std::byte> source)
    {
        return dma_->write(address, source);
    }

    /// Forwards to the wrapped provider's map().
    std::span<std::byte> map(std::uint64_t address, std::size_t length) requires MappingDmaProvider<Dma>
    {
        return dma_->map(address, length);
    }

    /// The wrapped provider.
    [[nodiscard]] Dma& inner() const noexcept { return *dma_; }

private:
    Dma* dma_;
};

NVMEKIT_END_NAMESPACE
