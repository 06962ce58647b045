#pragma once
/// The Telemetry Host-Initiated log (log 07h, Base 2.0 5.16.1.8, 8.24): a 512-byte header and
/// Data Areas 1 to 3 in 512-byte blocks.
///
/// A Get Log Page for this log with Create Telemetry Host-Initiated Data (LSP bit 0) set makes
/// the controller capture a snapshot of its internal state; without it the host reads the last
/// capture. Each capture increments the Telemetry Host-Initiated Data Generation Number (8 bits,
/// wrapping). The areas are cumulative: Area 2 holds Area 1 and more, so the header's Last Block
/// fields are block numbers (the header is block 0) with Area 1 <= Area 2 <= Area 3. The Log
/// Page Offset must be a multiple of 512 bytes, else Invalid Field in Command. Data Area 4
/// (ETDAS) is not supported; this controller initiates no telemetry, so the Controller-Initiated
/// Data Available and Generation Number fields are 0.
///
/// Size is bounded at construction: at most `max_data_blocks` blocks follow the header; a larger
/// snapshot is truncated.

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <stdexcept>
#include <vector>

#include <nvmekit/config.hpp>
#include <nvmekit/spec/commands.hpp>
#include <nvmekit/spec/log_pages.hpp>
#include <nvmekit/spec/status.hpp>
#include <nvmekit/state/log_page.hpp>

NVMEKIT_BEGIN_NAMESPACE

/// Byte granularity of a telemetry log's Log Page Offset (Base 2.0 5.16.1.8).
inline constexpr std::uint64_t telemetry_offset_alignment = spec::telemetry_log_header::block_size;

/// Whether a Get Log Page for log 07h asks for a new capture: LSP bit 0, Create Telemetry
/// Host-Initiated Data.
[[nodiscard]] constexpr bool telemetry_create_requested(const spec::get_log_page_view& view) noexcept
{
    return (view.log_specific_field & 0x01U) != 0;
}

/// The Telemetry Controller-Initiated log (08h) of a controller that never initiates telemetry:
/// the header alone, with no data (Base 2.0 5.16.1.9).
[[nodiscard]] constexpr spec::telemetry_log_header
empty_telemetry_controller_log(std::array<std::uint8_t, 3> ieee_oui = {}) noexcept
{
    spec::telemetry_log_header header{};
    header.log_identifier = static_cast<std::uint8_t>(spec::log_page_id::telemetry_controller_initiated);
    header.ieee_oui = ieee_oui;
    return header;
}

struct telemetry_config {
    /// Blocks of 512 bytes after the header, 0 to 65535 (the Last Block fields are 16 bits).
    std::size_t max_data_blocks = 64;
    std::array<std::uint8_t, 3> ieee_oui{}; ///< IEEE OUI Identifier, as in Identify Controller
};

class telemetry_host_log {
public:
    static constexpr std::size_t block_size = spec::telemetry_log_header::block_size;
    static constexpr std::size_t max_blocks = 0xffff;
    static constexpr std::size_t reason_size = 128;

    /// Throws std::invalid_argument when `max_data_blocks` exceeds 65535.
    explicit telemetry_host_log(const telemetry_config& config = {})
        : buffer_((checked_blocks(config.max_data_blocks) + 1) * block_size)
    {
        header_.log_identifier = static_cast<std::uint8_t>(spec::log_page_id::telemetry_host_initiated);
        header_.ieee_oui = config.ieee_oui;
        store_header();
    }

    /// Captures a snapshot: Data Area 1 is `area1`, Area 2 adds `area2`, Area 3 adds `area3`, each
    /// padded with zeros to whole blocks; `reason` fills the Reason Identifier (up to 128 bytes,
    /// zero padded). Increments the generation number. Returns false when the snapshot was
    /// truncated to fit `max_data_blocks`.
    bool capture(std::span<const std::byte> area1, std::span<const std::byte> area2 = {},
                 std::span<const std::byte> area3 = {}, std::span<const std::byte> reason = {}) noexcept
    {
        std::size_t block = 1;
        bool complete = true;
        const auto append = [&](std::span<const std::byte> area) {
            const std::size_t room = (buffer_.size() / block_size - block) * block_size;
            const std::size_t stored = std::min(area.size(), room);
            complete = complete && stored == area.size();
            std::byte* const start = buffer_.data() + block * block_size;
            if (stored != 0) {
                std::memcpy(start, area.data(), stored);
            }
            const std::size_t blocks = (stored + block_size - 1) / block_size;
            std::fill(start + stored, start + blocks * block_size, std::byte{0});
            block += blocks;
            return static_cast<std::uint16_t>(block - 1);
        };
        header_.data_area1_last_block = append(area1);
        header_.data_area2_last_block = append(area2);
        header_.data_area3_last_block = append(area3);
        header_.reason_identifier.fill(0);
        const std::size_t reason_bytes = std::min(reason.size(), reason_size);
        complete = complete && reason_bytes == reason.size();
        // std::transform, not memcpy: g++ 12 at -O3 warns of a null source where an empty
        // reason inlines, though nothing is copied then.
        std::transform(reason.begin(), reason.begin() + static_cast<std::ptrdiff_t>(reason_bytes),
                       header_.reason_identifier.begin(),
                       [](std::byte b) { return std::to_integer<std::uint8_t>(b); });
        ++header_.host_data_generation_number;
        store_header();
        return complete;
    }

    /// The log page: the header and the blocks up to Data Area 3's last block.
    [[nodiscard]] std::span<const std::byte> bytes() const noexcept
    {
        return std::span<const std::byte>{buffer_}.first((std::size_t{header_.data_area3_last_block} + 1) *
                                                         block_size);
    }
    [[nodiscard]] const spec::telemetry_log_header& header() const noexcept { return header_; }
    /// Telemetry Host-Initiated Data Generation Number.
    [[nodiscard]] std::uint8_t generation() const noexcept { return header_.host_data_generation_number; }

    /// The transfer a Get Log Page for this log asks for: Invalid Field in Command for an index
    /// offset, an offset that is not a multiple of 512 bytes, or one past the log. When the command
    /// sets Create, capture first so that the check sees the new log's size.
    [[nodiscard]] log_page_transfer transfer(const spec::get_log_page_view& view) const noexcept
    {
        return log_page_transfer_of(view, bytes().size(), telemetry_offset_alignment);
    }

    /// Serves a Get Log Page window: Invalid Field in Command for an offset that is not a multiple
    /// of 512 bytes or lies past the log; zeros past the end.
    spec::status read(std::uint64_t offset, std::span<std::byte> out) const noexcept
    {
        return log_page_window(bytes(), offset, out, telemetry_offset_alignment);
    }

private:
    static std::size_t checked_blocks(std::size_t blocks)
    {
        if (blocks > max_blocks) {
            throw std::invalid_argument{"nvmekit::telemetry_host_log: max_data_blocks must be at most 65535"};
        }
        return blocks;
    }

    void store_header() noexcept
    {
        const auto raw = std::bit_cast<std::array<std::byte, block_size>>(header_);
        std::memcpy(buffer_.data(), raw.data(), raw.size());
    }

    spec::telemetry_log_header header_{};
    std::vector<std::byte> buffer_;
};

NVMEKIT_END_NAMESPACE
