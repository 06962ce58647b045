#pragma once
/// The PRP walker: turns a command's PRP Entry 1 and PRP Entry 2 (and the PRP Lists they lead
/// to) into host memory ranges, checking every PRP rule of Base 2.0 4.1.1.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include <nvmekit/config.hpp>
#include <nvmekit/contracts/dma.hpp>
#include <nvmekit/data/host_ranges.hpp>
#include <nvmekit/spec/data_pointer.hpp>
#include <nvmekit/spec/status.hpp>

NVMEKIT_BEGIN_NAMESPACE

namespace detail {
/// PRP List entries read per DMA read: a local buffer of 4 KiB, one whole list page with 4 KiB
/// memory pages (larger list pages are read in several pieces).
inline constexpr std::size_t prp_list_chunk_entries = 512;
} // namespace detail

/// Walks the PRPs of a transfer of `length` bytes in memory pages of `page_size` bytes
/// (2^(12 + CC.MPS)) into `out`, which is cleared first. Contiguous pages merge into one range.
///
/// Rules (Base 2.0 4.1.1, and 4.2 for PRP Entry 2):
/// - `length` 0: success with no range and no DMA; PRP1 and PRP2 are not examined.
/// - PRP1 may have an offset in its page but must be dword aligned, else PRP Offset Invalid.
/// - When the transfer crosses exactly one page boundary PRP2 is the second page: offset 0,
///   else PRP Offset Invalid. When it needs no second page PRP2 is reserved and ignored.
/// - When it crosses more, PRP2 is a PRP List pointer: qword aligned, else PRP Offset Invalid; it
///   may have an offset, and its entries run to the end of that memory page. When more entries
///   are needed than remain in a list page, the last entry of that page points to the next list
///   page. Every list entry, chain pointers included, has offset 0, else PRP Offset Invalid.
/// - Only the entries the transfer needs are read, one DMA read per list page (per 4 KiB of a
///   larger list page) into a fixed local buffer; a failed read is Data Transfer Error.
/// - When `out` has no room for another range: Invalid Field in Command. A controller that sizes
///   `out` to MDTS pages + 1 never sees it for a transfer within MDTS.
///
/// Work is bounded by `length / page_size` entries whatever the lists hold (a chain that loops
/// back still consumes entries); the caller bounds `length` by MDTS before the walk. Statuses
/// carry no DNR; the caller adds it. On error `out` holds an unspecified prefix.
template <DmaProvider Dma>
[[nodiscard]] spec::status walk_prp(Dma& dma, std::uint64_t prp1, std::uint64_t prp2, std::uint64_t length,
                                    std::uint32_t page_size, host_range_list& out)
{
    NVMEKIT_ASSERT(spec::is_valid_prp_page_size(page_size), "walk_prp: invalid memory page size");
    out.clear();
    if (length == 0) {
        return spec::status::success();
    }

    const spec::prp_entry first{prp1};
    if (!first.is_dword_aligned()) {
        return spec::generic_status::prp_offset_invalid;
    }
    const std::uint64_t first_bytes = std::min<std::uint64_t>(length, page_size - first.offset(page_size));
    if (!out.push(prp1, static_cast<std::uint32_t>(first_bytes))) {
        return spec::generic_status::invalid_field;
    }
    std::uint64_t remaining = length - first_bytes;
    if (remaining == 0) {
        return spec::status::success();
    }

    const spec::prp_entry second{prp2};
    if (remaining <= page_size) {
        if (!second.is_page_aligned(page_size)) {
            return spec::generic_status::prp_offset_invalid;
        }
        return out.push(prp2, static_cast<std::uint32_t>(remaining))
                   ? spec::status::success()
                   : spec::status{spec::generic_status::invalid_field};
    }

    if (!second.is_qword_aligned()) {
        return spec::generic_status::prp_offset_invalid;
    }
    std::array<std::uint64_t, detail::prp_list_chunk_entries> entries;
    std::uint64_t list_address = prp2;
    while (remaining != 0) {
        const std::uint64_t slots =
            (page_size - spec::prp_entry{list_address}.offset(page_size)) / sizeof(std::uint64_t);
        const std::uint64_t needed = (remaining + page_size - 1) / page_size;
        const bool chained = needed > slots;
        const std::uint64_t to_read = chained ? slots : needed;
        std::uint64_t next_list = 0;
        for (std::uint64_t read = 0; read < to_read;) {
            const auto chunk =
                static_cast<std::size_t>(std::min<std::uint64_t>(to_read - read, entries.size()));
            const std::span<std::uint64_t> destination{entries.data(), chunk};
            if (dma.read(list_address + read * sizeof(std::uint64_t), std::as_writable_bytes(destination))) {
                return spec::generic_status::data_transfer_error;
            }
            for (std::size_t i = 0; i < chunk; ++i) {
                const spec::prp_entry entry{entries[i]};
                if (!entry.is_page_aligned(page_size)) {
                    return spec::generic_status::prp_offset_invalid;
                }
                if (chained && read + i == to_read - 1) {
                    next_list = entry.raw;
                    continue;
                }
                const std::uint64_t piece = std::min<std::uint64_t>(remaining, page_size);
                if (!out.push(entry.raw, static_cast<std::uint32_t>(piece))) {
                    return spec::generic_status::invalid_field;
                }
                remaining -= piece;
            }
            read += chunk;
        }
        list_address = next_list;
    }
    return spec::status::success();
}

NVMEKIT_END_NAMESPACE
