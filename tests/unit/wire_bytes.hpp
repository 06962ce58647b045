#pragma once
/// Helpers of the unit tests: the wire bytes of a structure, a zero-filled structure, and
/// little-endian reads of wire bytes written independently of the spec layer's own `load_le`,
/// so that a layout test does not check the library against itself.

#include <array>
#include <bit>
#include <concepts>
#include <cstddef>
#include <cstdint>

namespace nvmekit_test {

/// The bytes `value` puts on the wire.
template <typename T>
std::array<std::uint8_t, sizeof(T)> bytes_of(const T& value)
{
    return std::bit_cast<std::array<std::uint8_t, sizeof(T)>>(value);
}

/// A `T` whose every byte is zero, reserved fields included.
template <typename T>
T zeroed()
{
    return std::bit_cast<T>(std::array<std::uint8_t, sizeof(T)>{});
}

/// The little-endian `T` at `offset` of `bytes`.
template <std::unsigned_integral T, std::size_t N>
T le_at(const std::array<std::uint8_t, N>& bytes, std::size_t offset)
{
    T value = 0;
    for (std::size_t i = sizeof(T); i-- > 0;) {
        value = static_cast<T>((value << 8) | bytes.at(offset + i));
    }
    return value;
}

} // namespace nvmekit_test
