#pragma once
/// Guest memory a transport has mapped into this process (vfio-user DMA_MAP regions, a
/// simulator's RAM), as a MappingDmaProvider: reads and writes of host addresses inside the
/// mapped regions, split across adjacent regions where an access runs from one into the next (a
/// client may map guest RAM in several pieces), and zero-copy maps of ranges inside one region
/// (a range across two mappings is not one span: map() refuses it and the controller copies
/// through read and write). Anything else is an error code (the controller turns it into Data
/// Transfer Error), never an access outside the mappings.
///
///     nvmekit::transport::mapped_memory memory;
///     memory.add(0x0, base_pointer, 1 << 30, true);   // guest physical 0..1 GiB, writable
///     nvmekit::controller<traits> ctrl{memory, interrupts, clock, subsystem};
///
/// An access that no mapped region holds can be handed to a dma_fallback (set_fallback): the
/// vfio-user server serves the regions a client shares without a file descriptor that way, with
/// DMA_READ/DMA_WRITE messages. It is consulted only once the mapped lookup has missed, so
/// mapped accesses cost what they cost without it; map() never reaches it (such memory has no
/// span in this process, so the controller stages through read and write).
///
/// Regions may be added and removed while the controller runs (between polls, on the thread that
/// polls): a removed region is unmapped for every later access, and mapping_generation() changes
/// so that holders of views map() returned drop them (StableMappingDmaProvider: the controller
/// keeps a view of each completion queue). The object does not own the memory; the caller maps
/// and unmaps it.
///
/// Reads, writes and maps may run on several threads at once (poll groups); adding or removing a
/// region must not overlap any of them.

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <span>
#include <system_error>
#include <vector>

#include <nvmekit/config.hpp>
#include <nvmekit/error.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace transport {

/// Host memory that mapped_memory cannot reach by itself: reads and writes of ranges that no
/// mapped region holds (dma_unmapped when the range is not the fallback's either).
class dma_fallback {
public:
    virtual std::error_code read(std::uint64_t address, std::span<std::byte> destination) = 0;
    virtual std::error_code write(std::uint64_t address, std::span<const std::byte> source) = 0;

protected:
    dma_fallback() = default;
    dma_fallback(const dma_fallback&) = default;
    dma_fallback& operator=(const dma_fallback&) = default;
    ~dma_fallback() = default;
};

class mapped_memory {
public:
    /// One mapped region.
    struct region {
        std::uint64_t address = 0; ///< first host (guest physical / IOVA) address
        std::uint64_t size = 0;
        std::byte* data = nullptr; ///< where it is mapped in this process
        bool writable = true;
    };

    /// Adds [address, address + size) mapped at `data`. False (nothing added) when the region is
    /// empty, wraps 2^64, or overlaps a region already mapped.
    bool add(std::uint64_t address, std::byte* data, std::uint64_t size, bool writable)
    {
        if (size == 0 || data == nullptr || size - 1 > std::numeric_limits<std::uint64_t>::max() - address) {
            return false;
        }
        const std::uint64_t last = address + (size - 1);
        const auto next = std::lower_bound(regions_.begin(), regions_.end(), address,
                                           [](const region& r, std::uint64_t a) { return r.address < a; });
        if (next != regions_.end() && next->address <= last) {
            return false;
        }
        if (next != regions_.begin() && std::prev(next)->address + (std::prev(next)->size - 1) >= address) {
            return false;
        }
        regions_.insert(next, region{address, size, data, writable});
        last_hit_.store(nullptr, std::memory_order_relaxed);
        generation_.fetch_add(1, std::memory_order_relaxed); // a range map() refused may map now
        return true;
    }

    /// Removes the region that starts at `address` with `size` bytes (DMA_UNMAP); false when there
    /// is none.
    bool remove(std::uint64_t address, std::uint64_t size)
    {
        const auto it = std::find_if(regions_.begin(), regions_.end(),
                                     [&](const region& r) { return r.address == address && r.size == size; });
        if (it == regions_.end()) {
            return false;
        }
        generation_.fetch_add(1, std::memory_order_relaxed);
        regions_.erase(it);
        last_hit_.store(nullptr, std::memory_order_relaxed);
        return true;
    }

    /// Removes every region (the client went away).
    void clear() noexcept
    {
        generation_.fetch_add(1, std::memory_order_relaxed);
        regions_.clear();
        last_hit_.store(nullptr, std::memory_order_relaxed);
    }

    [[nodiscard]] std::span<const region> regions() const noexcept { return regions_; }

    /// Changes whenever a region is added or removed (StableMappingDmaProvider): a view map()
    /// returned stays valid while it does not.
    [[nodiscard]] std::uint64_t mapping_generation() const noexcept
    {
        return generation_.load(std::memory_order_relaxed);
    }

    /// Hands accesses outside every mapped region to `fallback` (null: none, the default); set
    /// and cleared as regions are, never during an access. The object does not own it.
    void set_fallback(dma_fallback* fallback) noexcept { fallback_ = fallback; }
    [[nodiscard]] dma_fallback* fallback() const noexcept { return fallback_; }

    // ---- DmaProvider --------------------------------------------------------------------------

    /// Copies [address, address + destination.size()) out of the regions that hold it: one, or
    /// several adjacent ones. Nothing is copied unless every byte is mapped.
    std::error_code read(std::uint64_t address, std::span<std::byte> destination) const
    {
        if (const region* r = find(address, destination.size()); r != nullptr) {
            if (!destination.empty()) {
                std::memcpy(destination.data(), r->data + (address - r->address), destination.size());
            }
            return no_error;
        }
        return read_across_regions(address, destination);
    }

    /// Copies `source` to [address, address + source.size()) in the regions that hold it: one, or
    /// several adjacent ones. Nothing is written unless every byte is mapped and writable.
    std::error_code write(std::uint64_t address, std::span<const std::byte> source)
    {
        if (const region* r = find(address, source.size()); r != nullptr) {
            if (!r->writable) {
                return make_error_code(errc::dma_fault);
            }
            if (!source.empty()) {
                std::memcpy(r->data + (address - r->address), source.data(), source.size());
            }
            return no_error;
        }
        return write_across_regions(address, source);
    }

    /// Zero-copy view of [address, address + length) when it lies in one region (writable, since
    /// the controller may write through it), else an empty span.
    std::span<std::byte> map(std::uint64_t address, std::size_t length)
    {
        const region* r = find(address, length);
        if (r == nullptr || length == 0 || !r->writable) {
            return {};
        }
        return {r->data + (address - r->address), length};
    }

private:
    /// An access that no single region holds: `copy(region, offset into it, bytes done, bytes)`
    /// for each piece, in address order, once the whole range is known to lie in regions that
    /// follow one another without a gap (dma_unmapped otherwise) and, when `writing`, that are
    /// all writable (dma_fault otherwise). A range that is not mapped goes to the fallback.
    // Out of line, so that the one-region paths of read() and write() stay small enough to be
    // inlined where the size is known (a 16-byte CQE becomes two moves, not a memcpy call).
    [[gnu::noinline]] std::error_code read_across_regions(std::uint64_t address,
                                                          std::span<std::byte> destination) const
    {
        const std::error_code error =
            across_regions(address, destination.size(), false,
                           [&](const region& r, std::uint64_t into, std::size_t done, std::size_t length) {
                               std::memcpy(destination.data() + done, r.data + into, length);
                           });
        if (error == errc::dma_unmapped && fallback_ != nullptr) {
            return fallback_->read(address, destination);
        }
        return error;
    }
    [[gnu::noinline]] std::error_code write_across_regions(std::uint64_t address,
                                                           std::span<const std::byte> source)
    {
        const std::error_code error =
            across_regions(address, source.size(), true,
                           [&](const region& r, std::uint64_t into, std::size_t done, std::size_t length) {
                               std::memcpy(r.data + into, source.data() + done, length);
                           });
        if (error == errc::dma_unmapped && fallback_ != nullptr) {
            return fallback_->write(address, source);
        }
        return error;
    }

    template <typename Copy>
    std::error_code across_regions(std::uint64_t address, std::size_t length, bool writing, Copy&& copy) const
    {
        if (length == 0 || length - 1 > std::numeric_limits<std::uint64_t>::max() - address) {
            return make_error_code(errc::dma_unmapped);
        }
        const auto next = std::upper_bound(regions_.begin(), regions_.end(), address,
                                           [](std::uint64_t a, const region& r) { return a < r.address; });
        if (next == regions_.begin() || address - std::prev(next)->address >= std::prev(next)->size) {
            return make_error_code(errc::dma_unmapped);
        }
        const auto first = std::prev(next);
        // The regions the range runs through: [first, last].
        auto last = first;
        std::uint64_t end_of_last = first->address + (first->size - 1);
        const std::uint64_t end = address + (length - 1);
        while (end_of_last < end) {
            const auto following = std::next(last);
            if (following == regions_.end() || following->address != end_of_last + 1) {
                return make_error_code(errc::dma_unmapped);
            }
            last = following;
            end_of_last = last->address + (last->size - 1);
        }
        if (writing && std::any_of(first, std::next(last), [](const region& r) { return !r.writable; })) {
            return make_error_code(errc::dma_fault);
        }
        std::size_t done = 0;
        for (auto r = first; done < length; ++r) {
            const std::uint64_t into = address + done - r->address;
            const auto piece =
                static_cast<std::size_t>(std::min<std::uint64_t>(r->size - into, length - done));
            copy(*r, into, done, piece);
            done += piece;
        }
        return {};
    }

    /// The region holding all of [address, address + length), or null.
    [[nodiscard]] const region* find(std::uint64_t address, std::uint64_t length) const noexcept
    {
        if (const region* hit = last_hit_.load(std::memory_order_relaxed); hit != nullptr) {
            // The region of the last lookup: an address below it wraps `into` past its size.
            const std::uint64_t into = address - hit->address;
            if (into < hit->size && length <= hit->size - into) {
                return hit;
            }
        }
        return find_region(address, length);
    }

    /// find() past its hint: the sorted regions searched.
    [[nodiscard]] const region* find_region(std::uint64_t address, std::uint64_t length) const noexcept
    {
        if (length != 0 && length - 1 > std::numeric_limits<std::uint64_t>::max() - address) {
            return nullptr;
        }
        const std::uint64_t last = length == 0 ? address : address + (length - 1);
        const auto inside = [&](const region& r) {
            return address >= r.address && last <= r.address + (r.size - 1);
        };
        auto next = std::upper_bound(regions_.begin(), regions_.end(), address,
                                     [](std::uint64_t a, const region& r) { return a < r.address; });
        if (next == regions_.begin()) {
            return nullptr;
        }
        const region& candidate = *std::prev(next);
        if (!inside(candidate)) {
            return nullptr;
        }
        last_hit_.store(&candidate, std::memory_order_relaxed);
        return &candidate;
    }

    std::vector<region> regions_; ///< sorted by address, disjoint
    /// A hint shared by every thread that reads and writes (a relaxed atomic: any region it names
    /// is a valid answer for the accesses inside it).
    mutable std::atomic<const region*> last_hit_{nullptr};
    dma_fallback* fallback_ = nullptr;
    std::atomic<std::uint64_t> generation_{0}; ///< mapping_generation()
};

} // namespace transport
NVMEKIT_END_NAMESPACE
