#include <nvmekit/spec/bits.hpp>

#include <array>
#include <bit>
#include <cstdint>
#include <limits>

#include <gtest/gtest.h>

namespace spec = nvmekit::spec;

namespace {

constexpr std::uint64_t max64 = std::numeric_limits<std::uint64_t>::max();

struct sample_word : spec::word<sample_word, std::uint16_t> {
    using word::word;
    static constexpr field<0, 1, bool> flag{};
    static constexpr field<4, 3, std::uint8_t> count{};
};

} // namespace

TEST(bits, fields_set_and_get_their_bits_only)
{
    sample_word value{0xff00};
    value.set(sample_word::flag, true).set(sample_word::count, 5);
    EXPECT_EQ(value.raw, 0xff51U);
    EXPECT_TRUE(value.get(sample_word::flag));
    EXPECT_EQ(value.get(sample_word::count), 5);
    EXPECT_EQ(value.with(sample_word::count, 0xff).raw, 0xff71U);
    EXPECT_TRUE(spec::fits<decltype(sample_word::count)>(7));
    EXPECT_FALSE(spec::fits<decltype(sample_word::count)>(8));
}

TEST(bits, load_le_reads_little_endian_at_an_offset)
{
    const std::array<std::uint8_t, 6> bytes{0x01, 0x02, 0x03, 0x04, 0x05, 0x06};
    EXPECT_EQ(spec::load_le<std::uint16_t>(bytes, 0), 0x0201U);
    EXPECT_EQ(spec::load_le<std::uint16_t>(bytes, 3), 0x0504U);
    EXPECT_EQ(spec::load_le<std::uint32_t>(bytes, 1), 0x05040302U);
    EXPECT_EQ(spec::load_le<std::uint8_t>(bytes, 5), 0x06U);
}

TEST(bits, load_le_stops_at_the_end_of_the_array)
{
    const std::array<std::uint8_t, 3> oui{0x00, 0x54, 0x52};
    EXPECT_EQ(spec::load_le<std::uint32_t>(oui, 0), 0x525400U);
    const std::array<std::uint8_t, 6> timestamp{0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    EXPECT_EQ(spec::load_le<std::uint64_t>(timestamp, 0), 0xffff'ffff'ffffULL);
    EXPECT_EQ(spec::load_le<std::uint64_t>(timestamp, 4), 0xffffULL);
}

TEST(bits, store_le_writes_little_endian_and_drops_what_does_not_fit)
{
    std::array<std::uint8_t, 6> bytes{};
    spec::store_le(bytes, 1, std::uint32_t{0x11223344});
    EXPECT_EQ(bytes, (std::array<std::uint8_t, 6>{0x00, 0x44, 0x33, 0x22, 0x11, 0x00}));

    spec::store_le(bytes, 4, std::uint32_t{0xaabbccdd});
    EXPECT_EQ(bytes, (std::array<std::uint8_t, 6>{0x00, 0x44, 0x33, 0x22, 0xdd, 0xcc}));

    std::array<std::uint8_t, 3> oui{};
    spec::store_le(oui, 0, std::uint32_t{0xff525400});
    EXPECT_EQ(oui, (std::array<std::uint8_t, 3>{0x00, 0x54, 0x52}));
    EXPECT_EQ(spec::load_le<std::uint32_t>(oui, 0), 0x525400U);
}

TEST(bits, load_and_store_work_at_compile_time)
{
    constexpr auto bytes = [] {
        std::array<std::uint8_t, 8> result{};
        spec::store_le(result, 0, std::uint64_t{0x0807060504030201});
        return result;
    }();
    static_assert(bytes[0] == 0x01 && bytes[7] == 0x08);
    static_assert(spec::load_le<std::uint64_t>(bytes, 0) == 0x0807060504030201ULL);
    SUCCEED();
}

TEST(bits, dwords_join_low_first_and_split_back)
{
    EXPECT_EQ(spec::join_dwords(0x89abcdef, 0x01234567), 0x0123456789abcdefULL);
    std::uint32_t low = 0;
    std::uint32_t high = 0;
    spec::split_qword(0x0123456789abcdefULL, low, high);
    EXPECT_EQ(low, 0x89abcdefU);
    EXPECT_EQ(high, 0x01234567U);
}

TEST(uint128_le, is_sixteen_unaligned_little_endian_bytes)
{
    static_assert(sizeof(spec::uint128_le) == 16);
    static_assert(alignof(spec::uint128_le) == 1);
    static_assert(spec::is_wire_type_v<spec::uint128_le>);

    spec::uint128_le value{};
    value.set(0x0807060504030201ULL, 0x100f0e0d0c0b0a09ULL);
    const auto raw = std::bit_cast<std::array<std::uint8_t, 16>>(value);
    for (std::size_t i = 0; i < raw.size(); ++i) {
        EXPECT_EQ(raw[i], i + 1) << i;
    }
    EXPECT_EQ(value.low(), 0x0807060504030201ULL);
    EXPECT_EQ(value.high(), 0x100f0e0d0c0b0a09ULL);

    value.set(42);
    EXPECT_EQ(value.low(), 42U);
    EXPECT_EQ(value.high(), 0U);
}

TEST(uint128_le, add_carries_into_the_high_half_and_wraps_at_the_top)
{
    spec::uint128_le value{};
    value.set(max64);
    value.add(2);
    EXPECT_EQ(value.low(), 1U);
    EXPECT_EQ(value.high(), 1U);

    value.set(5, 7);
    value.add(7);
    EXPECT_EQ(value.low(), 12U);
    EXPECT_EQ(value.high(), 7U);

    value.set(max64, max64);
    value.add(1);
    EXPECT_EQ(value.low(), 0U);
    EXPECT_EQ(value.high(), 0U);
}

TEST(uint128_le, compares_by_value)
{
    spec::uint128_le a{};
    spec::uint128_le b{};
    a.set(1, 2);
    b.set(1, 2);
    EXPECT_EQ(a, b);
    b.add(1);
    EXPECT_NE(a, b);
    b.set(1, 3);
    EXPECT_NE(a, b);
}

TEST(uint128_le, works_at_compile_time)
{
    constexpr auto value = [] {
        spec::uint128_le result{};
        result.set(max64, 3);
        result.add(1);
        return result;
    }();
    static_assert(value.low() == 0 && value.high() == 4);
    SUCCEED();
}
