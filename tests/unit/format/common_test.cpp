#include <nvmekit/format/common.hpp>

#include <array>
#include <cstdint>
#include <iterator>
#include <limits>
#include <span>
#include <string>
#include <string_view>

#include <gtest/gtest.h>

namespace spec = nvmekit::spec;
namespace detail = nvmekit::detail;

namespace sample {

enum class color : std::uint8_t {
    red = 0x01,
    vendor = 0xc0,
};

constexpr std::string_view name(color value) noexcept
{
    return value == color::red ? "Red" : std::string_view{};
}

constexpr bool is_vendor_specific(color value) noexcept { return static_cast<unsigned>(value) >= 0xc0; }

/// An enumeration the sample gives no name(): printed through a label function.
enum class shade : std::uint8_t {
    light = 0x0,
    dark = 0x1,
};

constexpr std::string_view label(shade value) noexcept
{
    return value == shade::light ? "light" : value == shade::dark ? "dark" : std::string_view{};
}

} // namespace sample

template <>
struct fmt::formatter<sample::color> : nvmekit::detail::name_or_hex_formatter<sample::color> {};

template <>
struct fmt::formatter<sample::shade> : nvmekit::detail::label_or_hex_formatter<sample::shade, sample::label> {
};

namespace {

template <typename Write>
std::string written(Write write)
{
    std::string text;
    write(std::back_inserter(text));
    return text;
}

} // namespace

TEST(format_common, uint128_prints_all_128_bits_in_decimal)
{
    spec::uint128_le value{};
    EXPECT_EQ(fmt::format("{}", value), "0");
    value.set(1234);
    EXPECT_EQ(fmt::format("{}", value), "1234");
    value.set(std::numeric_limits<std::uint64_t>::max());
    EXPECT_EQ(fmt::format("{}", value), "18446744073709551615");
    value.set(0, 1);
    EXPECT_EQ(fmt::format("{}", value), "18446744073709551616");
    value.set(0x098a'2240'0000'0000ULL, 0x4b3b'4ca8'5a86'c47aULL); // 10^38
    EXPECT_EQ(fmt::format("{}", value), "100000000000000000000000000000000000000");
    value.set(std::numeric_limits<std::uint64_t>::max(), std::numeric_limits<std::uint64_t>::max());
    EXPECT_EQ(fmt::format("{}", value), "340282366920938463463374607431768211455");
}

TEST(format_common, append_flag_separates_the_set_labels_by_one_space)
{
    const std::string text = written([](auto out) {
        bool first = true;
        out = detail::append_flag(out, first, false, "a");
        out = detail::append_flag(out, first, true, "b");
        out = detail::append_flag(out, first, false, "c");
        out = detail::append_flag(out, first, true, "d");
        return out;
    });
    EXPECT_EQ(text, "b d");

    const std::string after_text = written([](auto out) {
        bool first = false;
        return detail::append_flag(out, first, true, "x");
    });
    EXPECT_EQ(after_text, " x");
}

TEST(format_common, enum_names_fall_back_to_the_raw_number)
{
    EXPECT_EQ(fmt::format("{}", sample::color::red), "Red");
    EXPECT_EQ(fmt::format("{}", static_cast<sample::color>(0x06)), "0x6");

    EXPECT_EQ(written([](auto out) { return detail::name_or_reserved(out, sample::color::red); }), "Red");
    EXPECT_EQ(
        written([](auto out) { return detail::name_or_reserved(out, static_cast<sample::color>(0x05)); }),
        "Reserved (0x05)");
    EXPECT_EQ(written([](auto out) {
                  return detail::name_or_reserved(out, static_cast<sample::color>(0x07), "reserved");
              }),
              "reserved (0x07)");

    EXPECT_EQ(written([](auto out) { return detail::name_and_number(out, sample::color::red); }),
              "Red (0x01)");
    EXPECT_EQ(written([](auto out) { return detail::name_and_number(out, sample::color::vendor); }),
              "Vendor Specific (0xc0)");
    EXPECT_EQ(
        written([](auto out) { return detail::name_and_number(out, static_cast<sample::color>(0x20)); }),
        "Reserved (0x20)");
}

TEST(format_common, formatters_reject_a_format_specification)
{
    spec::uint128_le value{};
    value.set(1);
    EXPECT_THROW(static_cast<void>(fmt::format(fmt::runtime("{:x}"), value)), fmt::format_error);
}

TEST(format_common, labelled_enums_fall_back_to_the_raw_number)
{
    EXPECT_EQ(fmt::format("{}", sample::shade::dark), "dark");
    EXPECT_EQ(fmt::format("{}", sample::shade::light), "light");
    EXPECT_EQ(fmt::format("{}", static_cast<sample::shade>(0x0b)), "0xb");
    EXPECT_EQ(written([](auto out) { return detail::text_or_hex(out, "text", 7); }), "text");
    EXPECT_EQ(written([](auto out) { return detail::text_or_hex(out, "", 0x1f); }), "0x1f");
}

TEST(format_common, flag_words_print_raw_hex_at_word_width_then_set_labels)
{
    EXPECT_EQ(
        written([](auto out) {
            return detail::flag_word(out, std::uint16_t{0x0106}, {{false, "a"}, {true, "b"}, {true, "c"}});
        }),
        "0x0106 [b c]");
    EXPECT_EQ(written([](auto out) {
                  return detail::flag_word(out, std::uint8_t{0}, {{false, "a"}});
              }),
              "0x00");
    // Bits without a label show in the raw value only.
    EXPECT_EQ(written([](auto out) {
                  return detail::flag_word(out, std::uint32_t{0x80000000}, {{false, "a"}});
              }),
              "0x80000000");
    EXPECT_EQ(written([](auto out) {
                  return detail::flag_word(out, std::uint64_t{5}, {{true, "nvm"}});
              }),
              "0x0000000000000005 [nvm]");
}

TEST(format_common, byte_strings_print_as_hex_and_uuids)
{
    const std::array<std::uint8_t, 16> bytes{0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77,
                                             0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff};
    EXPECT_EQ(written([&bytes](auto out) { return detail::hex_bytes(out, std::span{bytes}.first(3)); }),
              "001122");
    EXPECT_EQ(written([](auto out) { return detail::hex_bytes(out, {}); }), "");
    EXPECT_EQ(written([&bytes](auto out) { return detail::uuid_bytes(out, bytes); }),
              "00112233-4455-6677-8899-aabbccddeeff");
}

TEST(format_common, id_lists_print_comma_separated_in_brackets)
{
    const std::array<std::uint32_t, 3> ids{1, 2, 0xffffffff};
    EXPECT_EQ(written([&ids](auto out) { return detail::id_list(out, ids); }), "[1, 2, 4294967295]");
    EXPECT_EQ(written([](auto out) { return detail::id_list(out, {}); }), "[]");
}
