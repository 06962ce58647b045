#pragma once
/// Typed bit-field descriptors over raw little-endian words.
///
/// Spec fields are never C++ bitfields (their bit order is implementation-defined). A register
/// or dword is stored as its raw word, and each field is a constexpr descriptor naming its bit
/// range and value type:
///
///     struct cc_register : spec::word<cc_register, std::uint32_t> {
///         using word::word;
///         static constexpr field<0, 1, bool> en{};  // EN: bit 00
///     };
///     cc_register cc{};
///     cc.set(cc.en, true);
///     bool enabled = cc.get(cc.en);
///
/// A descriptor belongs to one word type, so a CC field cannot be applied to CAP.
///
/// Multi-byte fields that are not naturally aligned are stored as byte arrays and read with
/// `load_le` / `store_le`; 128-bit counters and capacities are `uint128_le`.

#include <algorithm>
#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <nvmekit/config.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace spec {

/// A field of `Width` bits starting at bit `Lsb` of a `Word` owned by `Owner`, read as `Value`
/// (an unsigned integer, bool or enum).
template <typename Owner, std::unsigned_integral Word, unsigned Lsb, unsigned Width, typename Value>
struct bit_field {
    static_assert(Width >= 1 && Lsb + Width <= sizeof(Word) * 8, "field exceeds its word");
    static_assert(std::is_integral_v<Value> || std::is_enum_v<Value>,
                  "a field value is an integer, bool or enum");

    using owner_type = Owner;
    using word_type = Word;
    using value_type = Value;
    static constexpr unsigned lsb = Lsb;
    static constexpr unsigned width = Width;
    /// Largest raw value the field can hold.
    static constexpr Word max_raw =
        Width == sizeof(Word) * 8 ? static_cast<Word>(~Word{0}) : static_cast<Word>((Word{1} << Width) - 1);
    static constexpr Word mask = static_cast<Word>(max_raw << Lsb);

    /// The field's raw bits, shifted down.
    [[nodiscard]] static constexpr Word raw(Word word) noexcept
    {
        return static_cast<Word>((word & mask) >> Lsb);
    }
    [[nodiscard]] static constexpr Value get(Word word) noexcept
    {
        if constexpr (std::is_same_v<Value, bool>) {
            return raw(word) != 0;
        } else {
            return static_cast<Value>(raw(word));
        }
    }
    /// `word` with the field replaced by `value` (bits of `value` beyond the field are dropped).
    [[nodiscard]] static constexpr Word set(Word word, Value value) noexcept
    {
        const auto bits = static_cast<Word>(static_cast<Word>(value) & max_raw);
        return static_cast<Word>((word & static_cast<Word>(~mask)) | static_cast<Word>(bits << Lsb));
    }
};

/// Base of a raw word with typed fields: a register value, a command dword, a feature value.
/// `Derived` names itself so that its fields cannot be used on another word type.
template <typename Derived, std::unsigned_integral Word>
struct word {
    using word_type = Word;
    template <unsigned Lsb, unsigned Width, typename Value = Word>
    using field = bit_field<Derived, Word, Lsb, Width, Value>;

    Word raw{};

    constexpr word() noexcept = default;
    constexpr explicit word(Word value) noexcept : raw{value} {}

    template <unsigned Lsb, unsigned Width, typename Value>
    [[nodiscard]] constexpr Value get(bit_field<Derived, Word, Lsb, Width, Value> /*field*/) const noexcept
    {
        return bit_field<Derived, Word, Lsb, Width, Value>::get(raw);
    }
    template <unsigned Lsb, unsigned Width, typename Value>
    constexpr Derived& set(bit_field<Derived, Word, Lsb, Width, Value> /*field*/,
                           std::type_identity_t<Value> value) noexcept
    {
        raw = bit_field<Derived, Word, Lsb, Width, Value>::set(raw, value);
        return static_cast<Derived&>(*this);
    }
    /// A copy with one field replaced, for building values in expressions.
    template <unsigned Lsb, unsigned Width, typename Value>
    [[nodiscard]] constexpr Derived with(bit_field<Derived, Word, Lsb, Width, Value> field,
                                         std::type_identity_t<Value> value) const noexcept
    {
        Derived copy = static_cast<const Derived&>(*this);
        copy.set(field, value);
        return copy;
    }

    friend constexpr bool operator==(const word&, const word&) noexcept = default;
};

/// True when `value` fits in `Field` without losing bits.
template <typename Field>
[[nodiscard]] constexpr bool fits(std::uint64_t value) noexcept
{
    return value <= Field::max_raw;
}

/// Checks a structure is safe to memcpy to and from host memory.
template <typename T>
inline constexpr bool is_wire_type_v = (std::is_trivially_copyable_v<T> && std::is_standard_layout_v<T>);

/// The little-endian integer in `bytes` at `offset`: sizeof(T) bytes, or fewer when the array
/// ends first, so a 3-byte IEEE OUI reads into a std::uint32_t.
template <std::unsigned_integral T, std::size_t N>
[[nodiscard]] constexpr T load_le(const std::array<std::uint8_t, N>& bytes, std::size_t offset) noexcept
{
    NVMEKIT_ASSERT(offset < N, "load_le: offset past the end of the field");
    const std::size_t width = std::min(sizeof(T), N - offset);
    T value = 0;
    for (std::size_t i = 0; i < width; ++i) {
        value = static_cast<T>(value | static_cast<T>(T{bytes[offset + i]} << (8 * i)));
    }
    return value;
}

/// Stores `value` little-endian in `bytes` at `offset`: sizeof(T) bytes, or fewer when the
/// array ends first (the high bytes of `value` are then dropped).
template <std::unsigned_integral T, std::size_t N>
constexpr void store_le(std::array<std::uint8_t, N>& bytes, std::size_t offset, T value) noexcept
{
    NVMEKIT_ASSERT(offset < N, "store_le: offset past the end of the field");
    const std::size_t width = std::min(sizeof(T), N - offset);
    for (std::size_t i = 0; i < width; ++i) {
        bytes[offset + i] = static_cast<std::uint8_t>(value >> (8 * i));
    }
}

/// A 64-bit value held in two 32-bit words, low word first (SLBA in CDW11:CDW10, the Property
/// Get value in completion dwords 1:0).
[[nodiscard]] constexpr std::uint64_t join_dwords(std::uint32_t low, std::uint32_t high) noexcept
{
    return (std::uint64_t{high} << 32) | low;
}

/// Splits `value` into its low and high 32-bit words, the inverse of `join_dwords`.
constexpr void split_qword(std::uint64_t value, std::uint32_t& low, std::uint32_t& high) noexcept
{
    low = static_cast<std::uint32_t>(value);
    high = static_cast<std::uint32_t>(value >> 32);
}

/// A 128-bit little-endian unsigned integer as the spec stores it (TNVMCAP, NVMCAP, the SMART /
/// Health counters): 16 bytes, because C++ has no portable 128-bit integer.
struct uint128_le {
    std::array<std::uint8_t, 16> bytes; // bytes 15:00, least significant first

    /// Bits 63:00.
    [[nodiscard]] constexpr std::uint64_t low() const noexcept { return load_le<std::uint64_t>(bytes, 0); }
    /// Bits 127:64.
    [[nodiscard]] constexpr std::uint64_t high() const noexcept { return load_le<std::uint64_t>(bytes, 8); }
    constexpr void set(std::uint64_t low_bits, std::uint64_t high_bits = 0) noexcept
    {
        store_le(bytes, 0, low_bits);
        store_le(bytes, 8, high_bits);
    }
    /// Adds `amount`, carrying into the high 64 bits (and wrapping past 2^128 - 1).
    constexpr void add(std::uint64_t amount) noexcept
    {
        const std::uint64_t old_low = low();
        const std::uint64_t new_low = old_low + amount;
        set(new_low, high() + (new_low < old_low ? 1U : 0U));
    }

    friend constexpr bool operator==(const uint128_le&, const uint128_le&) noexcept = default;
};
static_assert(sizeof(uint128_le) == 16);
static_assert(alignof(uint128_le) == 1);
static_assert(is_wire_type_v<uint128_le>);

} // namespace spec
NVMEKIT_END_NAMESPACE
