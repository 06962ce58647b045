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
/// Every request completes inline, inside submit(). No volatile cache: flush does nothing.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>
#include <new>
#include <stdexcept>

#include <nvmekit/block_backend.hpp>
#include <nvmekit/config.hpp>

NVMEKIT_BEGIN_NAMESPACE

/// Options of a ram_backend.
struct ram_backend_options {
    /// Bytes per chunk: a power of two from 512 to 1 GiB.
    std::size_t chunk_size = std::size_t{64} * 1024;
    /// Allocate every chunk at construction, so that no request allocates.
    bool preallocate = false;
};

/// A sparse RAM backend (see the top of this header).
class ram_backend {
public:
    /// Chunk pointers per leaf table.
    static constexpr std::size_t leaf_entries = 4096;
    /// The largest top table accepted, in entries (128 MiB of pointers).
    static constexpr std::uint64_t max_top_entries = std::uint64_t{1} << 24;

    /// A backend of `capacity_bytes` bytes, all zero. Throws std::invalid_argument when the chunk
    /// size is not a power of two in [512, 1 GiB] or the capacity needs a top table larger than
    /// max_top_entries; std::bad_alloc when memory runs out.
    explicit ram_backend(std::uint64_t capacity_bytes, ram_backend_options options = {})
        : capacity_{capacity_bytes}
        , options_{options}
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
        top_.resize(static_cast<std::size_t>(top_entries));
        if (options.preallocate) {
            for (std::uint64_t index = 0; index < chunk_count_; ++index) {
                if (ensure_chunk(index) == nullptr) {
                    throw std::bad_alloc();
                }
            }
        }
    }

    /// The fixed size given at construction.
    [[nodiscard]] std::uint64_t capacity_bytes() const noexcept { return capacity_; }

    /// Runs `request` and completes it inline with success or the status of
    /// validate_block_request (internal_error too when a chunk cannot be allocated).
    void submit(block_request& request) noexcept
    {
        block_status status = validate_block_request(request, capacity_);
        if (status == block_status::success) {
            switch (request.operation) {
            case block_operation::read: read(request); break;
            case block_operation::write: status = write(request); break;
            case block_operation::write_zeroes:
            case block_operation::deallocate: zero_range(request.offset, request.length); break;
            case block_operation::flush: break;
            }
        }
        detail::complete_request(request, status);
    }

    /// Nothing is ever pending: returns 0.
    std::size_t poll() noexcept { return 0; }

    /// No cache: writes are in memory once they complete, and flush does nothing.
    [[nodiscard]] bool has_volatile_cache() const noexcept { return false; }

    /// Always 0: requests complete inside submit().
    [[nodiscard]] std::size_t outstanding() const noexcept { return 0; }

    /// Bytes of chunk memory allocated now (chunk data only, not the tables). The last chunk is
    /// only as long as the capacity leaves.
    [[nodiscard]] std::uint64_t bytes_allocated() const noexcept { return bytes_allocated_; }

    /// Bytes per chunk.
    [[nodiscard]] std::size_t chunk_size() const noexcept { return options_.chunk_size; }

private:
    using chunk = std::unique_ptr<std::byte[]>;
    using leaf_table = std::unique_ptr<chunk[]>;

    [[nodiscard]] std::uint64_t chunk_length(std::uint64_t index) const noexcept
    {
        return std::min<std::uint64_t>(options_.chunk_size, capacity_ - index * options_.chunk_size);
    }

    [[nodiscard]] std::byte* find_chunk(std::uint64_t index) const noexcept
    {
        NVMEKIT_ASSERT(index < chunk_count_, "ram_backend chunk index past the capacity");
        const leaf_table& leaf = top_[static_cast<std::size_t>(index / leaf_entries)];
        return leaf ? leaf[index % leaf_entries].get() : nullptr;
    }

    /// The chunk at `index`, allocated and zero-filled if needed; nullptr when memory runs out.
    std::byte* ensure_chunk(std::uint64_t index) noexcept
    {
        NVMEKIT_ASSERT(index < chunk_count_, "ram_backend chunk index past the capacity");
        leaf_table& leaf = top_[static_cast<std::size_t>(index / leaf_entries)];
        if (!leaf) {
            leaf.reset(new (std::nothrow) chunk[leaf_entries]());
            if (!leaf) {
                return nullptr;
            }
        }
        chunk& slot = leaf[index % leaf_entries];
        if (!slot) {
            const std::uint64_t length = chunk_length(index);
            slot.reset(new (std::nothrow) std::byte[static_cast<std::size_t>(length)]());
            if (!slot) {
                return nullptr;
            }
            bytes_allocated_ += length;
        }
        return slot.get();
    }

    void release_chunk(std::uint64_t index) noexcept
    {
        leaf_table& leaf = top_[static_cast<std::size_t>(index / leaf_entries)];
        if (leaf && leaf[index % leaf_entries]) {
            leaf[index % leaf_entries].reset();
            bytes_allocated_ -= chunk_length(index);
        }
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
        std::uint64_t position = request.offset;
        for (const io_segment& segment : request.segments) {
            const std::byte* source = segment.data;
            for_each_piece(position, segment.size,
                           [&](std::uint64_t index, std::size_t within, std::size_t bytes) {
                               std::memcpy(find_chunk(index) + within, source, bytes);
                               source += bytes;
                           });
            position += segment.size;
        }
        return block_status::success;
    }

    void zero_range(std::uint64_t offset, std::uint64_t length) noexcept
    {
        for_each_piece(offset, length, [&](std::uint64_t index, std::size_t within, std::size_t bytes) {
            if (within == 0 && bytes == chunk_length(index) && !options_.preallocate) {
                release_chunk(index);
            } else if (std::byte* target = find_chunk(index)) {
                std::memset(target + within, 0, bytes);
            }
        });
    }

    std::uint64_t capacity_;
    ram_backend_options options_;
    std::uint64_t chunk_count_ = 0;
    std::uint64_t bytes_allocated_ = 0;
    std::vector<leaf_table> top_;
};

static_assert(check_block_backend<ram_backend>());

NVMEKIT_END_NAMESPACE
