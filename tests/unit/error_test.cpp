#include <nvmekit/error.hpp>

#include <array>
#include <set>
#include <string>
#include <system_error>
#include <type_traits>

#include <gtest/gtest.h>

using nvmekit::errc;
using nvmekit::error_category;
using nvmekit::make_error_code;

static_assert(std::is_error_code_enum_v<errc>);
static_assert(!std::is_error_condition_enum_v<errc>);
// An errc converts implicitly to std::error_code (found through make_error_code by ADL), which is
// how providers return it.
static_assert(std::is_convertible_v<errc, std::error_code>);

namespace {

constexpr std::array all_codes{errc::dma_unmapped, errc::dma_fault, errc::dma_out_of_range,
                               errc::invalid_configuration};

std::error_code returned_by_a_provider(errc value) { return value; }

} // namespace

TEST(error, the_category_is_named_nvmekit_and_is_one_object)
{
    EXPECT_STREQ(error_category().name(), "nvmekit");
    EXPECT_EQ(&error_category(), &error_category());
    EXPECT_EQ(&make_error_code(errc::dma_fault).category(), &error_category());
    EXPECT_TRUE(error_category() != std::generic_category());
    EXPECT_TRUE(error_category() != std::system_category());
}

TEST(error, each_code_has_its_message)
{
    EXPECT_EQ(make_error_code(errc::dma_unmapped).message(), "host address not mapped for DMA");
    EXPECT_EQ(make_error_code(errc::dma_fault).message(), "DMA access failed");
    EXPECT_EQ(make_error_code(errc::dma_out_of_range).message(), "DMA range wraps the host address space");
    EXPECT_EQ(make_error_code(errc::invalid_configuration).message(), "invalid configuration");

    std::set<std::string> messages;
    for (const errc value : all_codes) {
        messages.insert(make_error_code(value).message());
    }
    EXPECT_EQ(messages.size(), all_codes.size());
}

TEST(error, a_value_outside_the_enum_has_a_generic_message)
{
    EXPECT_EQ(error_category().message(0), "unknown nvmekit error");
    EXPECT_EQ(error_category().message(static_cast<int>(errc::invalid_configuration) + 1),
              "unknown nvmekit error");
    EXPECT_EQ(error_category().message(-1), "unknown nvmekit error");
}

TEST(error, every_code_is_an_error_and_success_is_the_empty_code)
{
    // The DMA contract reads "an empty code on success": no errc may be 0.
    for (const errc value : all_codes) {
        const std::error_code code = make_error_code(value);
        EXPECT_TRUE(code) << code.message();
        EXPECT_EQ(code.value(), static_cast<int>(value));
        EXPECT_NE(code, std::error_code{});
    }
    EXPECT_FALSE(std::error_code{});
}

TEST(error, codes_compare_by_category_and_value)
{
    const std::error_code fault = returned_by_a_provider(errc::dma_fault);
    EXPECT_EQ(fault, errc::dma_fault);
    EXPECT_EQ(fault, make_error_code(errc::dma_fault));
    EXPECT_NE(fault, errc::dma_unmapped);
    EXPECT_NE(make_error_code(errc::dma_unmapped), errc::dma_out_of_range);

    // The same number in another category is another error.
    const std::error_code unmapped = errc::dma_unmapped;
    EXPECT_NE(unmapped, std::error_code(unmapped.value(), std::generic_category()));
    EXPECT_NE(unmapped, std::error_code(unmapped.value(), std::system_category()));
    EXPECT_NE(unmapped, std::errc::operation_not_permitted);
    EXPECT_NE(make_error_code(errc::invalid_configuration), std::errc::invalid_argument);
}

TEST(error, the_default_condition_stays_in_the_nvmekit_category)
{
    const std::error_code code = errc::dma_out_of_range;
    const std::error_condition condition = code.default_error_condition();
    EXPECT_EQ(&condition.category(), &error_category());
    EXPECT_EQ(condition.value(), static_cast<int>(errc::dma_out_of_range));
    EXPECT_EQ(condition.message(), "DMA range wraps the host address space");
    EXPECT_EQ(code, condition);
}
