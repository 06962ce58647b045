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
    static constexpr Word max_raw = Width == sizeof(Word) * 8 ? static_cast<Word>(~Word{0})
                                                              : static_cast<Word>((Word{1} << Width) - 1);
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
inline constexpr bool is_wire_type_v = std::is_trivially_copyable_v<T> && std::is_standard_layout_v<T>;

} // namespace spec
NVMEKIT_END_NAMESPACE
