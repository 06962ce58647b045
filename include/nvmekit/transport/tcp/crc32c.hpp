#pragma once
/// CRC-32C (Castagnoli), the checksum of the NVMe/TCP header digest (HDGST, over the HLEN bytes
/// of a PDU header) and data digest (DDGST, over the PDU data): reflected polynomial 82F63B78h,
/// register preset to FFFFFFFFh and inverted at the end, stored on the wire little-endian.
///
/// `crc32c` is incremental, so a digest can follow data that arrives over many reads:
///
///     tcp::crc32c digest;
///     digest.update(first_part).update(second_part);
///     std::uint32_t value = digest.value();
///
/// The portable code is slicing-by-8 over constexpr tables (usable in constant expressions);
/// when the target has SSE4.2 (`__SSE4_2__`, e.g. -msse4.2 or -march=native) the CRC32
/// instruction computes the same function and is used at run time.

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <type_traits>

#if defined(__SSE4_2__)
#include <nmmintrin.h>
#endif

#include <nvmekit/config.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace transport::tcp {

/// CRC-32C polynomial 1EDC6F41h, bit-reflected.
inline constexpr std::uint32_t crc32c_polynomial = 0x82f6'3b78;

namespace detail {

using crc32c_table_set = std::array<std::array<std::uint32_t, 256>, 8>;

/// Table 0 is the classic byte-at-a-time table; table k advances a byte that is k bytes
/// further from the end of an 8-byte block.
constexpr crc32c_table_set make_crc32c_tables() noexcept
{
    crc32c_table_set tables{};
    for (std::uint32_t byte = 0; byte < 256; ++byte) {
        std::uint32_t crc = byte;
        for (int bit = 0; bit < 8; ++bit) {
            crc = (crc & 1U) != 0 ? (crc >> 1) ^ crc32c_polynomial : crc >> 1;
        }
        tables[0][byte] = crc;
    }
    for (std::size_t k = 1; k < 8; ++k) {
        for (std::size_t byte = 0; byte < 256; ++byte) {
            const std::uint32_t previous = tables[k - 1][byte];
            tables[k][byte] = (previous >> 8) ^ tables[0][previous & 0xffU];
        }
    }
    return tables;
}

inline constexpr crc32c_table_set crc32c_tables = make_crc32c_tables();

[[nodiscard]] constexpr std::uint32_t byte_at(std::span<const std::byte> data, std::size_t index) noexcept
{
    return std::to_integer<std::uint32_t>(data[index]);
}

} // namespace detail

/// Advances a CRC-32C register (not preset, not inverted) over `data`, portable slicing-by-8.
[[nodiscard]] constexpr std::uint32_t crc32c_update_portable(std::uint32_t state,
                                                             std::span<const std::byte> data) noexcept
{
    const auto& t = detail::crc32c_tables;
    std::size_t at = 0;
    for (; at + 8 <= data.size(); at += 8) {
        const std::uint32_t low =
            state ^ (detail::byte_at(data, at) | (detail::byte_at(data, at + 1) << 8) |
                     (detail::byte_at(data, at + 2) << 16) | (detail::byte_at(data, at + 3) << 24));
        state = t[7][low & 0xffU] ^ t[6][(low >> 8) & 0xffU] ^ t[5][(low >> 16) & 0xffU] ^ t[4][low >> 24] ^
                t[3][detail::byte_at(data, at + 4)] ^ t[2][detail::byte_at(data, at + 5)] ^
                t[1][detail::byte_at(data, at + 6)] ^ t[0][detail::byte_at(data, at + 7)];
    }
    for (; at < data.size(); ++at) {
        state = (state >> 8) ^ t[0][(state ^ detail::byte_at(data, at)) & 0xffU];
    }
    return state;
}

#if defined(__SSE4_2__)
/// Whether crc32c_update_sse42 exists (the target has SSE4.2).
inline constexpr bool crc32c_has_sse42 = true;

/// Advances a CRC-32C register over `data` with the SSE4.2 CRC32 instruction.
[[nodiscard]] inline std::uint32_t crc32c_update_sse42(std::uint32_t state,
                                                       std::span<const std::byte> data) noexcept
{
    const std::byte* cursor = data.data();
    std::size_t left = data.size();
#if defined(__x86_64__)
    std::uint64_t wide = state;
    while (left >= 8) {
        std::uint64_t word = 0;
        std::memcpy(&word, cursor, 8);
        wide = _mm_crc32_u64(wide, word);
        cursor += 8;
        left -= 8;
    }
    state = static_cast<std::uint32_t>(wide);
#endif
    while (left >= 4) {
        std::uint32_t word = 0;
        std::memcpy(&word, cursor, 4);
        state = _mm_crc32_u32(state, word);
        cursor += 4;
        left -= 4;
    }
    while (left > 0) {
        state = _mm_crc32_u8(state, std::to_integer<std::uint8_t>(*cursor));
        ++cursor;
        --left;
    }
    return state;
}
#else
inline constexpr bool crc32c_has_sse42 = false;
#endif

/// Advances a CRC-32C register over `data`: SSE4.2 when the target has it (outside constant
/// evaluation), slicing-by-8 otherwise.
[[nodiscard]] constexpr std::uint32_t crc32c_update(std::uint32_t state,
                                                    std::span<const std::byte> data) noexcept
{
#if defined(__SSE4_2__)
    if (!std::is_constant_evaluated()) {
        return crc32c_update_sse42(state, data);
    }
#endif
    return crc32c_update_portable(state, data);
}

/// An incremental CRC-32C: update over the parts in order, then value().
class crc32c {
public:
    constexpr crc32c() noexcept = default;

    constexpr crc32c& update(std::span<const std::byte> data) noexcept
    {
        state_ = crc32c_update(state_, data);
        return *this;
    }
    /// The CRC of everything given so far (the digest value).
    [[nodiscard]] constexpr std::uint32_t value() const noexcept { return ~state_; }
    constexpr void reset() noexcept { state_ = initial_state; }

private:
    static constexpr std::uint32_t initial_state = 0xffff'ffff;
    std::uint32_t state_ = initial_state;
};

/// CRC-32C of `data` in one call.
[[nodiscard]] constexpr std::uint32_t crc32c_of(std::span<const std::byte> data) noexcept
{
    return crc32c{}.update(data).value();
}

/// A digest as its 4 wire bytes (little-endian).
[[nodiscard]] constexpr std::array<std::byte, 4> digest_bytes(std::uint32_t digest) noexcept
{
    return {std::byte(digest & 0xffU), std::byte((digest >> 8) & 0xffU), std::byte((digest >> 16) & 0xffU),
            std::byte(digest >> 24)};
}

/// The digest stored in 4 wire bytes.
[[nodiscard]] constexpr std::uint32_t load_digest(std::span<const std::byte, 4> bytes) noexcept
{
    return std::to_integer<std::uint32_t>(bytes[0]) | (std::to_integer<std::uint32_t>(bytes[1]) << 8) |
           (std::to_integer<std::uint32_t>(bytes[2]) << 16) |
           (std::to_integer<std::uint32_t>(bytes[3]) << 24);
}

} // namespace transport::tcp
NVMEKIT_END_NAMESPACE
