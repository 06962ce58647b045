#include <nvmekit/spec/text.hpp>

#include <array>
#include <string>
#include <string_view>

#include <gtest/gtest.h>

namespace spec = nvmekit::spec;

namespace {

template <std::size_t N>
std::string_view whole(const std::array<char, N>& field)
{
    return std::string_view{field.data(), field.size()};
}

} // namespace

TEST(text, space_padded_fields_pad_trim_and_report_truncation)
{
    std::array<char, 8> field{};
    EXPECT_TRUE(spec::assign_space_padded(field, "1.0"));
    EXPECT_EQ(whole(field), "1.0     ");
    EXPECT_EQ(spec::text_of(field), "1.0");

    EXPECT_TRUE(spec::assign_space_padded(field, "12345678"));
    EXPECT_EQ(spec::text_of(field), "12345678");

    EXPECT_FALSE(spec::assign_space_padded(field, "123456789"));
    EXPECT_EQ(whole(field), "12345678");
    EXPECT_EQ(spec::text_of(field), "12345678");

    EXPECT_TRUE(spec::assign_space_padded(field, ""));
    EXPECT_EQ(whole(field), "        ");
    EXPECT_EQ(spec::text_of(field), "");
}

TEST(text, space_padding_overwrites_what_the_field_held)
{
    std::array<char, 8> field{};
    field.fill('\0');
    EXPECT_TRUE(spec::assign_space_padded(field, "AB"));
    EXPECT_EQ(whole(field), "AB      ");
}

TEST(text, null_padded_fields_keep_a_terminator)
{
    std::array<char, 8> field{};
    field.fill('x');
    EXPECT_TRUE(spec::assign_null_padded(field, "nqn.a"));
    EXPECT_EQ(whole(field), std::string_view("nqn.a\0\0\0", 8));
    EXPECT_EQ(spec::text_of(field), "nqn.a");

    EXPECT_TRUE(spec::assign_null_padded(field, "1234567"));
    EXPECT_EQ(field[7], '\0');
    EXPECT_FALSE(spec::assign_null_padded(field, "12345678"));
    EXPECT_EQ(field[7], '\0');
    EXPECT_EQ(spec::text_of(field), "1234567");

    EXPECT_TRUE(spec::assign_null_padded(field, ""));
    EXPECT_EQ(whole(field), std::string_view("\0\0\0\0\0\0\0\0", 8));
    EXPECT_EQ(spec::text_of(field), "");
}

TEST(text, a_one_byte_null_padded_field_holds_only_its_terminator)
{
    std::array<char, 1> field{'x'};
    EXPECT_TRUE(spec::assign_null_padded(field, ""));
    EXPECT_EQ(field[0], '\0');
    EXPECT_FALSE(spec::assign_null_padded(field, "a"));
    EXPECT_EQ(field[0], '\0');
}

TEST(text, text_ends_at_the_first_nul_and_drops_trailing_spaces_only)
{
    const std::array<char, 8> nul_after_spaces{'F', 'W', ' ', ' ', '\0', '\0', '\0', '\0'};
    EXPECT_EQ(spec::text_of(nul_after_spaces), "FW");

    const std::array<char, 8> text_after_nul{'A', 'B', '\0', 'C', 'D', ' ', ' ', ' '};
    EXPECT_EQ(spec::text_of(text_after_nul), "AB");

    const std::array<char, 8> inner_and_leading_spaces{' ', 'a', ' ', 'b', ' ', ' ', ' ', ' '};
    EXPECT_EQ(spec::text_of(inner_and_leading_spaces), " a b");

    const std::array<char, 4> full{'a', 'b', 'c', 'd'};
    EXPECT_EQ(spec::text_of(full), "abcd");

    const std::array<char, 4> all_spaces{' ', ' ', ' ', ' '};
    EXPECT_EQ(spec::text_of(all_spaces), "");
}

TEST(text, nul_terminated_text_keeps_what_precedes_the_nul_trailing_spaces_included)
{
    const std::array<char, 8> nul_after_spaces{'n', 'q', ' ', ' ', '\0', 'x', '\0', '\0'};
    EXPECT_EQ(spec::nul_terminated_text_of(nul_after_spaces), "nq  ");
    const std::array<char, 4> full{'a', 'b', ' ', ' '};
    EXPECT_EQ(spec::nul_terminated_text_of(full), "ab  ");
    const std::array<char, 4> empty{};
    EXPECT_EQ(spec::nul_terminated_text_of(empty), "");
    static_assert(spec::nul_terminated_text_of(std::array<char, 3>{'a', ' ', '\0'}) == "a ");
}

TEST(text, text_views_the_field_itself)
{
    std::array<char, 8> field{};
    spec::assign_space_padded(field, "abc");
    const std::string_view text = spec::text_of(field);
    EXPECT_EQ(text.data(), field.data());
    field[0] = 'z';
    EXPECT_EQ(text, "zbc");
}

TEST(text, long_text_is_cut_to_the_field)
{
    std::array<char, 256> nqn{};
    const std::string long_nqn(300, 'x');
    EXPECT_FALSE(spec::assign_null_padded(nqn, long_nqn));
    EXPECT_EQ(spec::text_of(nqn).size(), 255U);
    EXPECT_EQ(nqn[255], '\0');

    std::array<char, 32> service{};
    EXPECT_FALSE(spec::assign_space_padded(service, std::string(33, '9')));
    EXPECT_EQ(spec::text_of(service), std::string(32, '9'));
}

TEST(text, works_at_compile_time)
{
    constexpr auto serial = [] {
        std::array<char, 20> sn{};
        spec::assign_space_padded(sn, "NVMEKIT0001");
        return sn;
    }();
    static_assert(spec::text_of(serial) == "NVMEKIT0001");
    static_assert(serial[19] == ' ');

    constexpr auto nqn = [] {
        std::array<char, 16> field{};
        spec::assign_null_padded(field, "nqn.x");
        return field;
    }();
    static_assert(spec::text_of(nqn) == "nqn.x");
    static_assert(nqn[15] == '\0');
    static_assert([] {
        std::array<char, 4> field{};
        return !spec::assign_space_padded(field, "12345") && !spec::assign_null_padded(field, "1234");
    }());
    SUCCEED();
}
