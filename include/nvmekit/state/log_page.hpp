#pragma once
/// Windows into log page data for Get Log Page (Base 2.0 5.16).
///
/// A log is a run of bytes; the host reads a window of it given by the Log Page Offset
/// (LPOU:LPOL, CDW13:CDW12) and the Number of Dwords (NUMDU:NUMDL, 0's based). The rules
/// (Base 2.0 Figure 199, LPOL):
/// - the offset is dword aligned; this library rejects a misaligned offset with Invalid Field in
///   Command (the spec allows that or ignoring bits 1:0);
/// - an offset greater than the size of the log is Invalid Field in Command; an offset equal to
///   the size is a window of zeros;
/// - bytes past the end of the log are undefined by the spec (Base 2.0 5.16, NUMDL): this library
///   returns zeros.
/// Some logs require a coarser offset (the telemetry logs: a multiple of 512 bytes,
/// Base 2.0 5.16.1.8); pass their alignment.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include <nvmekit/config.hpp>
#include <nvmekit/spec/commands.hpp>
#include <nvmekit/spec/status.hpp>

NVMEKIT_BEGIN_NAMESPACE

/// Required alignment of a byte Log Page Offset: a dword (Base 2.0 Figure 199).
inline constexpr std::uint64_t log_page_offset_alignment = 4;

/// Copies the window [offset, offset + out.size()) of `log` into `out`, with zeros for the bytes
/// past the end of the log. No checks: any offset is valid, so a caller may copy a large
/// transfer chunk by chunk.
inline void copy_log_window(std::span<const std::byte> log, std::uint64_t offset,
                            std::span<std::byte> out) noexcept
{
    std::size_t copied = 0;
    if (offset < log.size()) {
        const auto start = static_cast<std::size_t>(offset);
        copied = std::min(out.size(), log.size() - start);
        if (copied != 0) {
            std::memcpy(out.data(), log.data() + start, copied);
        }
    }
    std::fill(out.begin() + static_cast<std::ptrdiff_t>(copied), out.end(), std::byte{0});
}

/// Checks a byte Log Page Offset against a log of `log_size` bytes (Base 2.0 Figure 199):
/// Invalid Field in Command when it is not a multiple of `alignment` or is greater than
/// `log_size`, success otherwise.
[[nodiscard]] constexpr spec::status
check_log_page_offset(std::uint64_t offset, std::uint64_t log_size,
                      std::uint64_t alignment = log_page_offset_alignment) noexcept
{
    NVMEKIT_ASSERT(alignment != 0, "a log page offset alignment is at least 1");
    if (offset % alignment != 0 || offset > log_size) {
        return spec::generic_status::invalid_field;
    }
    return spec::status::success();
}

/// Copies the window [offset, offset + out.size()) of `log` into `out` after checking the offset
/// (see `check_log_page_offset`); bytes past the end of the log read as zero. On an error status
/// `out` is left unchanged.
inline spec::status log_page_window(std::span<const std::byte> log, std::uint64_t offset,
                                    std::span<std::byte> out,
                                    std::uint64_t alignment = log_page_offset_alignment) noexcept
{
    const spec::status status = check_log_page_offset(offset, log.size(), alignment);
    if (status.is_success()) {
        copy_log_window(log, offset, out);
    }
    return status;
}

/// What a Get Log Page command transfers: where in the log it starts and how many bytes it moves.
struct log_page_transfer {
    spec::status status = spec::status::success(); ///< Invalid Field in Command when the command is rejected
    std::uint64_t offset = 0;                      ///< byte offset into the log: LPOU:LPOL
    std::uint64_t length = 0;                      ///< bytes to transfer: (NUMD + 1) * 4, 4 B to 16 GiB

    [[nodiscard]] constexpr bool ok() const noexcept { return status.is_success(); }
};

/// The transfer a decoded Get Log Page command asks of a log of `log_size` bytes whose offsets
/// must be multiples of `alignment`. Rejected with Invalid Field in Command: an index offset
/// (OT = 1; Base 2.0 Figure 201: none of the logs built here supports one, so their IOS bit in the
/// Supported Log Pages log is 0), a misaligned offset, an offset past the end of the log. The
/// length is not bounded here: the data pointer (MDTS) bounds it, and bytes past the log read as
/// zero.
[[nodiscard]] constexpr log_page_transfer
log_page_transfer_of(const spec::get_log_page_view& view, std::uint64_t log_size,
                     std::uint64_t alignment = log_page_offset_alignment) noexcept
{
    log_page_transfer transfer{.offset = view.offset, .length = view.byte_count()};
    transfer.status = view.offset_is_index ? spec::status{spec::generic_status::invalid_field}
                                           : check_log_page_offset(view.offset, log_size, alignment);
    return transfer;
}

NVMEKIT_END_NAMESPACE
