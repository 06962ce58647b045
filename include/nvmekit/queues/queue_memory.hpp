#pragma once
/// Where a queue lives in host memory: one physically contiguous range (PC = 1) or the memory
/// pages listed by a PRP List (PC = 0), Base 2.0 4.1.1, 5.4 and 5.5.

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <utility>
#include <vector>

#include <nvmekit/config.hpp>
#include <nvmekit/contracts/dma.hpp>
#include <nvmekit/spec/data_pointer.hpp>
#include <nvmekit/spec/status.hpp>

NVMEKIT_BEGIN_NAMESPACE

/// The host memory of one submission or completion queue, addressed by byte offset in the queue.
class queue_memory {
public:
    /// Largest queue in bytes: 65536 entries (Base 2.0 4.1.3) of 64 bytes.
    static constexpr std::size_t max_queue_bytes = std::size_t{65536} * 64;

    /// A physically contiguous queue starting at `base` (PC = 1, or the admin queues' ASQ/ACQ).
    /// `address_of(offset)` is `base + offset`; the caller rejects a base whose queue would wrap
    /// the 64-bit address space.
    [[nodiscard]] static queue_memory contiguous(std::uint64_t base) noexcept
    {
        queue_memory memory;
        memory.base_ = base;
        return memory;
    }

    /// Reads the PRP List at `prp_list_address` that describes a queue of `queue_bytes` bytes in
    /// memory pages of `page_size` bytes (PC = 0): ceil(queue_bytes / page_size) entries, read
    /// with DMA now, one read per list page. The list must stay unmodified until the queue is
    /// deleted (Base 2.0 B.2), so it is read once; this is the only allocation of the queue.
    ///
    /// Rules (Base 2.0 5.4 and 5.5, PRP Entry 1: "in both cases the PRP Entry shall have an offset
    /// of 0h"; 4.1.1 for the entries): the list pointer and every entry are memory page aligned,
    /// else Generic / PRP Offset Invalid. A list needing more entries than one memory page holds
    /// is chained: the last entry of each full list page points to the next list page, which
    /// must be page aligned too. A failed DMA read gives Generic / Data Transfer Error. The status
    /// carries no DNR; the caller adds it. On success `out` holds the queue; on error `out` is
    /// unchanged.
    ///
    /// Preconditions (checked by the controller before): `page_size` is a valid CC.MPS page size
    /// and 0 < `queue_bytes` <= max_queue_bytes.
    template <DmaProvider Dma>
    [[nodiscard]] static spec::status from_prp_list(Dma& dma, std::uint64_t prp_list_address,
                                                    std::size_t queue_bytes, std::uint32_t page_size,
                                                    queue_memory& out)
    {
        NVMEKIT_ASSERT(spec::is_valid_prp_page_size(page_size), "queue_memory: invalid memory page size");
        NVMEKIT_ASSERT(queue_bytes > 0 && queue_bytes <= max_queue_bytes,
                       "queue_memory: queue size out of range");

        if (!spec::prp_entry{prp_list_address}.is_page_aligned(page_size)) {
            return spec::generic_status::prp_offset_invalid;
        }
        const std::size_t page_count = (queue_bytes + page_size - 1) / page_size;
        const auto entries_per_list_page =
            static_cast<std::size_t>(spec::prp_list_entries_per_page(page_size));
        std::vector<std::uint64_t> pages(page_count);

        std::uint64_t list_page = prp_list_address;
        std::size_t filled = 0;
        while (filled < page_count) {
            const std::size_t remaining = page_count - filled;
            const bool chained = remaining > entries_per_list_page;
            const std::size_t read_count = chained ? entries_per_list_page : remaining;
            const std::span<std::uint64_t> destination{pages.data() + filled, read_count};
            if (dma.read(list_page, std::as_writable_bytes(destination))) {
                return spec::generic_status::data_transfer_error;
            }
            if (!chained) {
                filled += read_count;
                break;
            }
            filled += read_count - 1;
            list_page = pages[filled];
            if (!spec::prp_entry{list_page}.is_page_aligned(page_size)) {
                return spec::generic_status::prp_offset_invalid;
            }
        }
        for (const std::uint64_t page : pages) {
            if (!spec::prp_entry{page}.is_page_aligned(page_size)) {
                return spec::generic_status::prp_offset_invalid;
            }
        }

        queue_memory memory;
        memory.pages_ = std::move(pages);
        memory.page_size_ = page_size;
        out = std::move(memory);
        return spec::status::success();
    }

    /// Host address of byte `offset` of the queue. For a PRP-list queue `offset` is below the
    /// queue's size (asserted).
    [[nodiscard]] std::uint64_t address_of(std::size_t offset) const noexcept
    {
        if (is_contiguous()) {
            return base_ + offset;
        }
        const std::size_t page = offset / page_size_;
        NVMEKIT_ASSERT(page < pages_.size(), "queue_memory: offset beyond the queue");
        return pages_[page] + offset % page_size_;
    }

    /// Bytes from `offset` to the end of the physically contiguous run that contains it:
    /// SIZE_MAX for a contiguous queue, the rest of the memory page for a PRP-list queue.
    [[nodiscard]] std::size_t contiguous_bytes_from(std::size_t offset) const noexcept
    {
        if (is_contiguous()) {
            return std::numeric_limits<std::size_t>::max();
        }
        return page_size_ - offset % page_size_;
    }

    /// The first `bytes` bytes of a contiguous queue as `dma` maps them, or nullptr when the
    /// queue is a PRP list or the provider does not map all of them (what the rings keep as their
    /// view of a queue).
    template <MappingDmaProvider Dma>
    [[nodiscard]] std::byte* map_whole(Dma& dma, std::size_t bytes) const
    {
        if (!is_contiguous()) {
            return nullptr;
        }
        const std::span<std::byte> view = dma.map(base_, bytes);
        return view.size() == bytes ? view.data() : nullptr;
    }

    /// Whether the queue is one contiguous range (PC = 1).
    [[nodiscard]] bool is_contiguous() const noexcept { return pages_.empty(); }

    /// The memory pages of a PRP-list queue in queue order; empty for a contiguous queue.
    [[nodiscard]] std::span<const std::uint64_t> pages() const noexcept { return pages_; }

    /// The memory page size of a PRP-list queue; 0 for a contiguous queue.
    [[nodiscard]] std::uint32_t page_size() const noexcept { return page_size_; }

private:
    std::uint64_t base_ = 0;
    std::vector<std::uint64_t> pages_;
    std::uint32_t page_size_ = 0;
};

NVMEKIT_END_NAMESPACE
