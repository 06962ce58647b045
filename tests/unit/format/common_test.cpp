#include <nvmekit/format/common.hpp>

#include <cstdint>
#include <iterator>
#include <limits>
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

constexpr bool is_vendor_specific(color value) noexcept
{
    return static_cast<unsigned>(value) >= 0xc0;
}

} // namespace sample

template <>
struct fmt::formatter<sample::color> : nvmekit::detail::name_or_hex_formatter<sample::color> {
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
