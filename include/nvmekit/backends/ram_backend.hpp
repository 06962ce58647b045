#pragma once
/// A sparse BlockBackend in local memory.
///
/// Storage is cut into chunks of a fixed size (64 KiB unless told otherwise). A chunk is
/// allocated, zero-filled, on the first write that touches it, so a 1 TiB backend costs only what
/// is written; reads of a chunk never written return zeros without allocating. Deallocate and
/// Write Zeroes free every chunk they cover entirely and zero the bytes of the chunks they cover
/// in part. Chunks are found through a two-level table: a top table, allocated at construction,
/// of pointers to leaf tables of 4096 chunk pointers, each leaf allocated on the first write to
/// its range and kept afterwards (8 bytes of top table per 4096 chunks, 32 KiB per leaf).
///
/// The first write to a chunk allocates on the I/O path; `preallocate` allocates every chunk at
/// construction instead, and then Deallocate and Write Zeroes zero chunks rather than free them,
/// so steady-state I/O never allocates (benchmarks). A failed allocation completes the write with
/// internal_error before any byte is stored.
///
/// `huge_pages` asks the kernel (Linux: madvise MADV_HUGEPAGE) to back chunks of 2 MiB or more with
/// transparent huge pages, allocating them 2 MiB aligned: random I/O over a large namespace then
/// takes one TLB entry per 2 MiB instead of per 4 KiB page. A hint only; elsewhere, or when the
/// kernel declines, the chunks are ordinary memory. Chunks are 64-byte aligned in every case.
///
/// `non_temporal_writes` stores written data with non-temporal (streaming) stores on x86-64:
/// the destination's cache lines are not read for ownership first, which nearly halves the cost
/// of a write into memory that is not in cache (random writes over a namespace much larger than
/// the caches). A fence (sfence) makes the data visible to other threads before the completion,
/// and it waits until the streamed lines have left the core. Without `concurrent`, one fence in
/// poll() serves every write since the last poll(): a successful streamed write completes in the
/// next poll() (the submitting thread reads its data at once). With `concurrent`, each write is
/// fenced and completed inside submit(), since a fence orders only its own thread's stores.
///
/// Every other request completes inline, inside submit(). No volatile cache: flush does nothing.
///
/// Threads: submit() may run on several threads at once (poll groups on threads of their own
/// submitting to one namespace), each request object used by one thread.
/// - Leaf and chunk pointers are atomics. The first write to a leaf or chunk allocates it and
///   publishes it with a compare-exchange; when two threads allocate the same one at once, one
///   wins and the other frees its allocation and uses the winner's. A lookup is one acquire load
///   per table level (a plain load on x86); no request takes a lock.
/// - Requests on different bytes never interfere, even within one chunk: their data is exact.
/// - Requests on the same bytes at once leave those bytes undefined, as on a drive.
/// - With `non_temporal_writes`, `concurrent` is needed (`preallocate` is not enough) as soon as
///   more than one thread reaches the backend: several submitting threads, or a controller whose
///   poll groups run on threads of their own (one submits while another polls the backend or
///   asks outstanding()). See above.
/// - Chunk memory is freed only by a Deallocate or Write Zeroes that covers a whole chunk, and
///   then a request on that chunk running at the same time on another thread would use freed
///   memory. `concurrent = true` (or `preallocate`) zeroes whole chunks instead, so chunk memory
///   lives as long as the backend and no mix of requests is ever memory-unsafe. Poll groups on
///   several threads need `concurrent = true`; the default suits one thread (single_threaded).
/// - bytes_allocated() may be read on any thread while requests run.
/// - Construction, moves and destruction must not overlap any other call.

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>
#include <utility>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif
#if defined(__x86_64__) || defined(_M_X64)
#include <emmintrin.h>
#define NVMEKIT_RAM_BACKEND_STREAMING_STORES 1
#endif

#include <nvmekit/config.hpp>
#include <nvmekit/contracts/block_backend.hpp>

NVMEKIT_BEGIN_NAMESPACE

/// Options of a ram_backend.
struct ram_backend_options {
    /// Bytes per chunk: a power of two from 512 to 1 GiB.
    std::size_t chunk_size = std::size_t{64} * 1024;
    /// Allocate every chunk at construction, so that no request allocates (and zero whole chunks
    /// rather than free them, as `concurrent` does).
    bool preallocate = false;
    /// Zero the chunks a Deallocate or Write Zeroes covers entirely instead of freeing them, so
    /// chunk memory is never freed while the backend lives and requests submitted on several
    /// threads at once are memory-safe whatever bytes they touch. Needed when poll groups run on
    /// threads of their own; bytes_allocated() then never decreases. False frees them (memory
    /// returns to the system; submit from one thread at a time).
    bool concurrent = false;
    /// Back chunks of 2 MiB or more with transparent huge pages where the system offers them
    /// (Linux: 2 MiB-aligned chunks advised with MADV_HUGEPAGE): fewer TLB misses for random
    /// requests over a large namespace. A hint; data and semantics are the same either way.
    bool huge_pages = false;
    /// Store written data with non-temporal stores (x86-64 SSE2; elsewhere a plain copy): the
    /// destination lines are neither read for ownership nor kept in cache. Much faster for writes
    /// to memory out of cache, as random writes over a namespace far larger than the caches are;
    /// slower when written data is read back soon (it then comes from memory, not from cache), as
    /// in a small namespace or a hot working set, the common case in tests. Off by default for
    /// that reason and because, without `concurrent`, writes then complete in poll() rather than
    /// inside submit() (see the top of the header), which a caller driving the backend itself
    /// must expect. The data is the same either way.
    bool non_temporal_writes = false;
};

namespace detail {

/// Copies `bytes` from `source` to `destination` as std::memcpy does, storing the
/// destination's 16-byte-aligned part with non-temporal stores on x86-64 (a plain memcpy elsewhere,
/// and for pieces under 64 bytes). The stores are weakly ordered: call non_temporal_fence() before
/// publishing the data to another thread or device (a completion).
inline void copy_non_temporal(std::byte* destination, const std::byte* source, std::size_t bytes) noexcept
{
#if defined(NVMEKIT_RAM_BACKEND_STREAMING_STORES)
    constexpr std::size_t vector_bytes = 16;
    constexpr std::size_t block_bytes = 64;
    if (bytes >= block_bytes) {
        // The head up to the destination's next 16-byte boundary, then whole 64-byte blocks.
        const std::size_t head =
            (vector_bytes - reinterpret_cast<std::uintptr_t>(destination) % vector_bytes) % vector_bytes;
        std::memcpy(destination, source, head);
        destination += head;
        source += head;
        bytes -= head;
        for (; bytes >= block_bytes; bytes -= block_bytes) {
            const auto* const from = reinterpret_cast<const __m128i*>(source);
            auto* const to = reinterpret_cast<__m128i*>(destination);
            const __m128i first = _mm_loadu_si128(from);
            const __m128i second = _mm_loadu_si128(from + 1);
            const __m128i third = _mm_loadu_si128(from + 2);
            const __m128i fourth = _mm_loadu_si128(from + 3);
            _mm_stream_si128(to, first);
            _mm_stream_si128(to + 1, second);
            _mm_stream_si128(to + 2, third);
            _mm_stream_si128(to + 3, fourth);
            destination += block_bytes;
            source += block_bytes;
        }
    }
#endif
    std::memcpy(destination, source, bytes);
}

/// Orders the non-temporal stores of copy_non_temporal before every later store (x86-64: sfence).
inline void non_temporal_fence() noexcept
{
#if defined(NVMEKIT_RAM_BACKEND_STREAMING_STORES)
    _mm_sfence();
#endif
}

} // namespace detail

/// A sparse RAM backend (see the top of this header).
class ram_backend {
public:
    /// The huge page size `huge_pages` aligns chunks of at least this size to.
    static constexpr std::size_t huge_page_bytes = std::size_t{2} << 20;
    /// Chunk pointers per leaf table.
    static constexpr std::size_t leaf_entries = 4096;
    /// The largest top table accepted, in entries (128 MiB of pointers).
    static constexpr std::uint64_t max_top_entries = std::uint64_t{1} << 24;

    /// A backend of `capacity_bytes` bytes, all zero. Throws std::invalid_argument when the chunk
    /// size is not a power of two in [512, 1 GiB] or the capacity needs a top table larger than
    /// max_top_entries; std::bad_alloc when memory runs out.
    explicit ram_backend(std::uint64_t capacity_bytes, ram_backend_options options = {})
        : capacity_{capacity_bytes}, options_{options}
    {
        const std::size_t size = options.chunk_size;
        if (size < 512 || size > (std::size_t{1} << 30) || (size & (size - 1)) != 0) {
            throw std::invalid_argument(
                "ram_backend: the chunk size must be a power of two from 512 bytes to 1 GiB");
        }
        chunk_count_ = capacity_ / size + (capacity_ % size != 0 ? 1 : 0);
        const std::uint64_t top_entries =
            chunk_count_ / leaf_entries + (chunk_count_ % leaf_entries != 0 ? 1 : 0);
        if (top_entries > max_top_entries) {
            throw std::invalid_argument("ram_backend: the capacity is too large for the chunk size");
        }
        top_entries_ = static_cast<std::size_t>(top_entries);
        top_ = std::make_unique<std::atomic<chunk_slot*>[]>(top_entries_);
        if (options.preallocate) {
            for (std::uint64_t index = 0; index < chunk_count_; ++index) {
                if (ensure_chunk(index) == nullptr) {
                    release_all();
                    throw std::bad_alloc();
                }
            }
        }
    }

    ram_backend(const ram_backend&) = delete;
    ram_backend& operator=(const ram_backend&) = delete;

    /// Takes the other backend's data; the moved-from backend has no capacity left.
    ram_backend(ram_backend&& other) noexcept
        : capacity_{std::exchange(other.capacity_, 0)}
        , options_{other.options_}
        , chunk_count_{std::exchange(other.chunk_count_, 0)}
        , bytes_allocated_{other.bytes_allocated_.exchange(0, std::memory_order_relaxed)}
        , top_entries_{std::exchange(other.top_entries_, 0)}
        , top_{std::move(other.top_)}
        , fence_pending_{std::move(other.fence_pending_)}
    {}

    /// Frees this backend's data and takes the other's; the moved-from backend has no capacity left.
    ram_backend& operator=(ram_backend&& other) noexcept
    {
        if (this != &other) {
            NVMEKIT_ASSERT(outstanding() == 0, "ram_backend move-assigned over writes waiting for poll()");
            release_all();
            capacity_ = std::exchange(other.capacity_, 0);
            options_ = other.options_;
            chunk_count_ = std::exchange(other.chunk_count_, 0);
            bytes_allocated_.store(other.bytes_allocated_.exchange(0, std::memory_order_relaxed),
                                   std::memory_order_relaxed);
            top_entries_ = std::exchange(other.top_entries_, 0);
            top_ = std::move(other.top_);
            fence_pending_ = std::move(other.fence_pending_);
            other.fence_pending_.clear();
        }
        return *this;
    }

    /// Every streamed write must have completed (poll() until outstanding() is 0).
    ~ram_backend()
    {
        NVMEKIT_ASSERT(outstanding() == 0, "ram_backend destroyed with writes waiting for poll()");
        release_all();
    }

    /// The fixed size given at construction.
    [[nodiscard]] std::uint64_t capacity_bytes() const noexcept { return capacity_; }

    /// Runs `request` and completes it inline with success or the status of
    /// validate_block_request (internal_error too when a chunk cannot be allocated).
    void submit(block_request& request) noexcept
    {
        if (const auto status = submit_inline(request)) {
            detail::complete_request(request, *status);
        }
    }

    /// submit() returning the status instead of calling `request.complete`, except for a
    /// streamed write that completes in poll() (std::nullopt).
    std::optional<block_status> submit_inline(block_request& request) noexcept
    {
        block_status status = validate_block_request(request, capacity_);
        if (status == block_status::success) {
            switch (request.operation) {
            case block_operation::read: read(request); break;
            case block_operation::write:
                status = write(request);
                if (status == block_status::success && options_.non_temporal_writes && defer_fence(request)) {
                    return std::nullopt;
                }
                break;
            case block_operation::write_zeroes:
            case block_operation::deallocate: zero_range(request.offset, request.length); break;
            case block_operation::flush: break;
            }
        }
        return status;
    }

    /// Completes the streamed writes submitted since the last poll() after one fence; returns
    /// how many. Nothing else is ever pending.
    std::size_t poll() noexcept
    {
        if (fence_pending_.empty()) {
            return 0;
        }
        detail::non_temporal_fence();
        // A completion may submit a write, which joins the other list.
        fence_pending_.swap(completing_);
        const std::size_t completed = completing_.size();
        for (completing_done_ = 0; completing_done_ < completed;) {
            // A request stops counting in outstanding() when its completion runs.
            block_request& request = *completing_[completing_done_++];
            detail::complete_request(request, block_status::success);
        }
        completing_.clear();
        completing_done_ = 0;
        return completed;
    }

    /// No cache: writes are in memory once they complete, and flush does nothing.
    [[nodiscard]] bool has_volatile_cache() const noexcept { return false; }

    /// Streamed writes waiting for poll() (see non_temporal_writes); every other request
    /// completes inside submit().
    [[nodiscard]] std::size_t outstanding() const noexcept
    {
        return fence_pending_.size() + completing_.size() - completing_done_;
    }

    /// Bytes of chunk memory allocated now (chunk data only, not the tables). The last chunk is
    /// only as long as the capacity leaves. Safe to call on any thread while requests run; exact
    /// for every request whose completion the calling thread has seen (joined, or synchronized).
    [[nodiscard]] std::uint64_t bytes_allocated() const noexcept
    {
        return bytes_allocated_.load(std::memory_order_relaxed);
    }

    /// Bytes per chunk.
    [[nodiscard]] std::size_t chunk_size() const noexcept { return options_.chunk_size; }

    /// The options given at construction.
    [[nodiscard]] const ram_backend_options& options() const noexcept { return options_; }

private:
    /// A leaf table entry: the chunk's bytes, or nullptr while the chunk is all zeros.
    using chunk_slot = std::atomic<std::byte*>;
    static_assert(chunk_slot::is_always_lock_free && std::atomic<chunk_slot*>::is_always_lock_free,
                  "ram_backend publishes leaves and chunks with lock-free atomic pointers");

    [[nodiscard]] std::uint64_t chunk_length(std::uint64_t index) const noexcept
    {
        return std::min<std::uint64_t>(options_.chunk_size, capacity_ - index * options_.chunk_size);
    }

    /// The chunk at `index`, or nullptr when it was never written (or was freed). The acquire loads
    /// pair with the release of the compare-exchange that published the leaf and the chunk, so
    /// their zero fill is visible.
    [[nodiscard]] std::byte* find_chunk(std::uint64_t index) const noexcept
    {
        NVMEKIT_ASSERT(index < chunk_count_, "ram_backend chunk index past the capacity");
        const chunk_slot* const leaf =
            top_[static_cast<std::size_t>(index / leaf_entries)].load(std::memory_order_acquire);
        return leaf != nullptr ? leaf[index % leaf_entries].load(std::memory_order_acquire) : nullptr;
    }

    /// The chunk at `index`, allocated and zero-filled if needed; nullptr when memory runs out.
    /// Lock-free: when several threads allocate the same leaf or chunk at once, the first
    /// compare-exchange wins and every other thread frees its allocation and takes the winner's.
    std::byte* ensure_chunk(std::uint64_t index) noexcept
    {
        NVMEKIT_ASSERT(index < chunk_count_, "ram_backend chunk index past the capacity");
        std::atomic<chunk_slot*>& top_slot = top_[static_cast<std::size_t>(index / leaf_entries)];
        chunk_slot* leaf = top_slot.load(std::memory_order_acquire);
        if (leaf == nullptr) {
            chunk_slot* const fresh = new (std::nothrow) chunk_slot[leaf_entries]();
            if (fresh == nullptr) {
                return nullptr;
            }
            // On failure `leaf` receives the winner's leaf, acquired.
            if (top_slot.compare_exchange_strong(leaf, fresh, std::memory_order_acq_rel,
                                                 std::memory_order_acquire)) {
                leaf = fresh;
            } else {
                delete[] fresh;
            }
        }
        chunk_slot& slot = leaf[index % leaf_entries];
        std::byte* data = slot.load(std::memory_order_acquire);
        if (data == nullptr) {
            const std::uint64_t length = chunk_length(index);
            std::byte* const fresh = allocate_chunk(static_cast<std::size_t>(length));
            if (fresh == nullptr) {
                return nullptr;
            }
            if (slot.compare_exchange_strong(data, fresh, std::memory_order_acq_rel,
                                             std::memory_order_acquire)) {
                data = fresh;
                bytes_allocated_.fetch_add(length, std::memory_order_relaxed);
            } else {
                free_chunk(fresh, static_cast<std::size_t>(length));
            }
        }
        return data;
    }

    /// The alignment of a chunk of `length` bytes: a huge page's with `huge_pages` when it holds
    /// one, else a cache line's (a copy between the chunk and a page-aligned buffer then runs on
    /// whole lines).
    [[nodiscard]] std::size_t chunk_alignment(std::size_t length) const noexcept
    {
        return options_.huge_pages && length >= huge_page_bytes ? huge_page_bytes : std::size_t{64};
    }

    /// A zero-filled chunk of `length` bytes, advised for huge pages before it is first touched
    /// when `huge_pages` asks for them; nullptr when memory runs out.
    [[nodiscard]] std::byte* allocate_chunk(std::size_t length) const noexcept
    {
        const std::size_t alignment = chunk_alignment(length);
        auto* const data =
            static_cast<std::byte*>(::operator new (length, std::align_val_t{alignment}, std::nothrow));
        if (data == nullptr) {
            return nullptr;
        }
#if defined(__linux__) && defined(MADV_HUGEPAGE)
        if (alignment == huge_page_bytes) {
            // Whole huge pages only; a refusal leaves ordinary pages, which is no error.
            static_cast<void>(::madvise(data, length - length % huge_page_bytes, MADV_HUGEPAGE));
        }
#endif
        std::memset(data, 0, length);
        return data;
    }

    /// Frees a chunk of `length` bytes from allocate_chunk.
    void free_chunk(std::byte* data, std::size_t length) const noexcept
    {
        ::operator delete (data, std::align_val_t{chunk_alignment(length)});
    }

    /// Frees the chunk at `index` (not in concurrent or preallocate mode: see the top of the header).
    void release_chunk(std::uint64_t index) noexcept
    {
        chunk_slot* const leaf =
            top_[static_cast<std::size_t>(index / leaf_entries)].load(std::memory_order_acquire);
        if (leaf == nullptr) {
            return;
        }
        if (std::byte* const data = leaf[index % leaf_entries].exchange(nullptr, std::memory_order_acq_rel)) {
            free_chunk(data, static_cast<std::size_t>(chunk_length(index)));
            bytes_allocated_.fetch_sub(chunk_length(index), std::memory_order_relaxed);
        }
    }

    /// Frees every chunk and leaf. Runs with no request in flight (destruction, move assignment).
    void release_all() noexcept
    {
        for (std::size_t top = 0; top < top_entries_; ++top) {
            chunk_slot* const leaf = top_[top].exchange(nullptr, std::memory_order_acquire);
            if (leaf == nullptr) {
                continue;
            }
            for (std::size_t entry = 0; entry < leaf_entries; ++entry) {
                if (std::byte* const data = leaf[entry].load(std::memory_order_acquire)) {
                    free_chunk(data, static_cast<std::size_t>(chunk_length(top * leaf_entries + entry)));
                }
            }
            delete[] leaf;
        }
        bytes_allocated_.store(0, std::memory_order_relaxed);
    }

    /// Calls `visit(chunk_index, offset_in_chunk, bytes)` for each chunk piece of
    /// [offset, offset + length), in order.
    template <typename Visit>
    void for_each_piece(std::uint64_t offset, std::uint64_t length, Visit&& visit) const
    {
        while (length != 0) {
            const std::uint64_t index = offset / options_.chunk_size;
            const std::uint64_t within = offset % options_.chunk_size;
            const std::uint64_t bytes = std::min<std::uint64_t>(length, chunk_length(index) - within);
            visit(index, static_cast<std::size_t>(within), static_cast<std::size_t>(bytes));
            offset += bytes;
            length -= bytes;
        }
    }

    void read(const block_request& request) const noexcept
    {
        std::uint64_t position = request.offset;
        for (const io_segment& segment : request.segments) {
            if (segment.data != nullptr) {
                std::byte* destination = segment.data;
                for_each_piece(position, segment.size,
                               [&](std::uint64_t index, std::size_t within, std::size_t bytes) {
                                   if (const std::byte* source = find_chunk(index)) {
                                       std::memcpy(destination, source + within, bytes);
                                   } else {
                                       std::memset(destination, 0, bytes);
                                   }
                                   destination += bytes;
                               });
            }
            position += segment.size;
        }
    }

    block_status write(const block_request& request) noexcept
    {
        bool allocated = true;
        for_each_piece(request.offset, request.length, [&](std::uint64_t index, std::size_t, std::size_t) {
            allocated = allocated && ensure_chunk(index) != nullptr;
        });
        if (!allocated) {
            return block_status::internal_error;
        }
        if (options_.non_temporal_writes) {
            copy_in(request, [](std::byte* destination, const std::byte* source, std::size_t bytes) {
                detail::copy_non_temporal(destination, source, bytes);
            });
        } else {
            copy_in(request, [](std::byte* destination, const std::byte* source, std::size_t bytes) {
                std::memcpy(destination, source, bytes);
            });
        }
        return block_status::success;
    }

    /// After a streamed write: queues the request for the next poll()'s fence and returns true,
    /// or fences at once and returns false (submit then completes it) with `concurrent`, where
    /// submit() and poll() may run on different threads, or when the queue cannot grow.
    bool defer_fence(block_request& request) noexcept
    {
        if (!options_.concurrent) {
            try {
                fence_pending_.push_back(&request);
                return true;
            } catch (const std::bad_alloc&) {
            }
        }
        detail::non_temporal_fence();
        return false;
    }

    /// Copies a write's segments into their chunks (all allocated) with `copy(destination,
    /// source, bytes)`.
    template <typename Copy>
    void copy_in(const block_request& request, Copy copy) noexcept
    {
        std::uint64_t position = request.offset;
        for (const io_segment& segment : request.segments) {
            const std::byte* source = segment.data;
            for_each_piece(position, segment.size,
                           [&](std::uint64_t index, std::size_t within, std::size_t bytes) {
                               copy(find_chunk(index) + within, source, bytes);
                               source += bytes;
                           });
            position += segment.size;
        }
    }

    void zero_range(std::uint64_t offset, std::uint64_t length) noexcept
    {
        for_each_piece(offset, length, [&](std::uint64_t index, std::size_t within, std::size_t bytes) {
            if (within == 0 && bytes == chunk_length(index) && !options_.preallocate &&
                !options_.concurrent) {
                release_chunk(index);
            } else if (std::byte* target = find_chunk(index)) {
                std::memset(target + within, 0, bytes);
            }
        });
    }

    std::uint64_t capacity_;
    ram_backend_options options_;
    std::uint64_t chunk_count_ = 0;
    std::atomic<std::uint64_t> bytes_allocated_{0};
    std::size_t top_entries_ = 0;
    /// Leaf tables (arrays of leaf_entries chunk slots), each nullptr until the first write to
    /// its range; owned, with their chunks, by this backend.
    std::unique_ptr<std::atomic<chunk_slot*>[]> top_;
    /// Streamed writes waiting for poll()'s fence, and those poll() is completing.
    std::vector<block_request*> fence_pending_;
    std::vector<block_request*> completing_;
    std::size_t completing_done_ = 0; ///< completing_'s requests whose completion has run
};

static_assert(check_block_backend<ram_backend>());
static_assert(InlineSubmitting<ram_backend>);

NVMEKIT_END_NAMESPACE
