#pragma once
/// Shared pieces of the spec formatters. The formatters live apart from the spec headers so that
/// code which never prints pays nothing for {fmt}.
///
/// <fmt/format.h> rather than <fmt/core.h>: with only core.h, clang references a libfmt symbol
/// whose mangled name differs from the one in Debian's g++-built libfmt, and fails to link.
///
/// Besides the helpers every formatter header uses, this header formats `spec::uint128_le`, the
/// one 128-bit integer type of the spec layer, so that every header printing one prints it alike.

#include <algorithm>
#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string_view>

#include <fmt/format.h>

#include <nvmekit/config.hpp>
#include <nvmekit/spec/bits.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace detail {

/// Base of formatters that take no format specification: only "{}" is accepted.
struct plain_formatter {
    constexpr auto parse(fmt::format_parse_context& ctx) -> decltype(ctx.begin())
    {
        const auto* it = ctx.begin();
        if (it != ctx.end() && *it != '}') {
            ctx.on_error("nvmekit types take no format specification");
        }
        return it;
    }
};

/// Writes `label` when `set`, separated by one space from the labels written before; `first`
/// says whether none was written yet and is updated.
template <typename Out>
Out append_flag(Out out, bool& first, bool set, std::string_view label)
{
    if (!set) {
        return out;
    }
    if (!first) {
        *out++ = ' ';
    }
    first = false;
    return fmt::format_to(out, "{}", label);
}

/// A label and whether to print it, for `append_flags`.
struct flag_label {
    bool set;
    std::string_view label;
};

/// `append_flag` for each of `flags`, in order: `saveable changeable`.
template <typename Out>
Out append_flags(Out out, bool& first, std::initializer_list<flag_label> flags)
{
    for (const flag_label& flag : flags) {
        out = append_flag(out, first, flag.set, flag.label);
    }
    return out;
}

/// A bit-flag word: the raw value in hex, zero-padded to the word's width, then the labels of
/// the set flags in brackets when any is set: `0x0106 [format firmware dbbuf]`, `0x00`.
template <typename Out, std::unsigned_integral Word>
Out flag_word(Out out, Word raw, std::initializer_list<flag_label> flags)
{
    out = fmt::format_to(out, "0x{:0{}x}", raw, sizeof(Word) * 2);
    if (std::none_of(flags.begin(), flags.end(), [](const flag_label& flag) { return flag.set; })) {
        return out;
    }
    out = fmt::format_to(out, " [");
    bool first = true;
    out = append_flags(out, first, flags);
    return fmt::format_to(out, "]");
}

/// Writes `bytes` as contiguous lower-case hex, first byte first, as nvme-cli prints NGUID and
/// EUI64: `0011223344556677`.
template <typename Out>
Out hex_bytes(Out out, std::span<const std::uint8_t> bytes)
{
    for (const std::uint8_t byte : bytes) {
        out = fmt::format_to(out, "{:02x}", byte);
    }
    return out;
}

/// Writes 16 bytes as a UUID in its canonical form, `00112233-4455-6677-8899-aabbccddeeff`.
template <typename Out>
Out uuid_bytes(Out out, std::span<const std::uint8_t, 16> bytes)
{
    out = hex_bytes(out, bytes.first<4>());
    for (const auto group : {bytes.subspan<4, 2>(), bytes.subspan<6, 2>(), bytes.subspan<8, 2>()}) {
        *out++ = '-';
        out = hex_bytes(out, group);
    }
    *out++ = '-';
    return hex_bytes(out, bytes.last<6>());
}

/// Writes identifiers in brackets, separated by commas: `[1, 2, 5]`, `[]`.
template <typename Out>
Out id_list(Out out, std::span<const std::uint32_t> ids)
{
    return fmt::format_to(out, "[{}]", fmt::join(ids.begin(), ids.end(), ", "));
}

/// Writes `text`, or `raw` in hex (`0x6`) when `text` is empty (a reserved value).
template <typename Out>
Out text_or_hex(Out out, std::string_view text, unsigned raw)
{
    if (text.empty()) {
        return fmt::format_to(out, "{:#x}", raw);
    }
    return fmt::format_to(out, "{}", text);
}

/// Writes an enumerated value's name, or its raw value in hex (`0x6`) when it has no name
/// (a reserved value).
template <typename Out, typename Enum>
Out name_or_hex(Out out, Enum value)
{
    return text_or_hex(out, name(value), static_cast<unsigned>(value));
}

/// Writes an enumerated value's name, or `Reserved (0x05)` when it has no name; `reserved` is the
/// word printed for the missing name.
template <typename Out, typename Enum>
Out name_or_reserved(Out out, Enum value, std::string_view reserved = "Reserved")
{
    const std::string_view text = name(value);
    if (text.empty()) {
        return fmt::format_to(out, "{} (0x{:02x})", reserved, static_cast<unsigned>(value));
    }
    return fmt::format_to(out, "{}", text);
}

/// Writes an identifier with C0h-FFh vendor specific (log page, feature) by name and number:
/// `Number of Queues (0x07)`, `Vendor Specific (0xc0)`, `Reserved (0x20)`.
template <typename Out, typename Identifier>
Out name_and_number(Out out, Identifier value)
{
    std::string_view label = name(value);
    if (label.empty()) {
        label = is_vendor_specific(value) ? "Vendor Specific" : "Reserved";
    }
    return fmt::format_to(out, "{} (0x{:02x})", label, static_cast<unsigned>(value));
}

/// Formatter of an enumeration printed by `name_or_hex`.
template <typename Enum>
struct name_or_hex_formatter : plain_formatter {
    template <typename FormatContext>
    auto format(Enum value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        return name_or_hex(ctx.out(), value);
    }
};

/// Formatter of an enumeration the spec layer gives no `name()`: `Label` names its values for
/// printing, and values it leaves empty print in hex (`0x3`).
template <typename Enum, std::string_view (*Label)(Enum) noexcept>
struct label_or_hex_formatter : plain_formatter {
    template <typename FormatContext>
    auto format(Enum value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        return text_or_hex(ctx.out(), Label(value), static_cast<unsigned>(value));
    }
};

/// Formatter of an identifier printed by `name_and_number`.
template <typename Identifier>
struct name_and_number_formatter : plain_formatter {
    template <typename FormatContext>
    auto format(Identifier value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        return name_and_number(ctx.out(), value);
    }
};

/// Formatter of an enumeration printed by `name_or_reserved`.
template <typename Enum>
struct name_or_reserved_formatter : plain_formatter {
    template <typename FormatContext>
    auto format(Enum value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        return name_or_reserved(ctx.out(), value);
    }
};

} // namespace detail
NVMEKIT_END_NAMESPACE

/// The full 128-bit value in decimal: `340282366920938463463374607431768211455`.
template <>
struct fmt::formatter<nvmekit::spec::uint128_le> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(const nvmekit::spec::uint128_le& value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        if (value.high() == 0) {
            return fmt::format_to(ctx.out(), "{}", value.low());
        }
        // Long division by 10 over four 32-bit limbs, most significant first.
        std::array<std::uint32_t, 4> limbs{
            static_cast<std::uint32_t>(value.high() >> 32), static_cast<std::uint32_t>(value.high()),
            static_cast<std::uint32_t>(value.low() >> 32), static_cast<std::uint32_t>(value.low())};
        std::array<char, 40> digits{};
        std::size_t count = 0;
        bool nonzero = true;
        while (nonzero) {
            std::uint64_t remainder = 0;
            nonzero = false;
            for (auto& limb : limbs) {
                const std::uint64_t current = (remainder << 32) | limb;
                limb = static_cast<std::uint32_t>(current / 10);
                remainder = current % 10;
                nonzero = nonzero || limb != 0;
            }
            digits[count++] = static_cast<char>('0' + remainder);
        }
        auto out = ctx.out();
        while (count > 0) {
            *out++ = digits[--count];
        }
        return out;
    }
};
