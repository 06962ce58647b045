#pragma once
/// A bit-at-a-time CRC-32C written from the polynomial, so that the NVMe/TCP tests do not check
/// the library's tables against themselves. A test-only header.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace nvmekit_test {

/// CRC-32C one bit at a time.
inline std::uint32_t reference_crc32c(std::span<const std::byte> data)
{
    std::uint32_t crc = 0xffff'ffff;
    for (const std::byte byte : data) {
        crc ^= std::to_integer<std::uint32_t>(byte);
        for (int bit = 0; bit < 8; ++bit) {
            crc = (crc & 1U) != 0 ? (crc >> 1) ^ 0x82f6'3b78U : crc >> 1;
        }
    }
    return ~crc;
}

inline std::span<const std::byte> as_bytes(std::string_view text)
{
    return std::as_bytes(std::span{text.data(), text.size()});
}

} // namespace nvmekit_test
