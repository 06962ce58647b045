#include <nvmekit/config.hpp>

#include <csignal>
#include <string>
#include <type_traits>

#include <gtest/gtest.h>

#include "asserts_enabled.hpp"

using nvmekit_test::asserts_enabled;

// tests/CMakeLists.txt passes the version of the project() call as NVMEKIT_TEST_PROJECT_VERSION_*.
#if !defined(NVMEKIT_TEST_PROJECT_VERSION_MAJOR) || !defined(NVMEKIT_TEST_PROJECT_VERSION_MINOR) || \
    !defined(NVMEKIT_TEST_PROJECT_VERSION_PATCH)
#error "config_test needs the project version as compile definitions (see tests/CMakeLists.txt)"
#endif

// Embedders test the version in #if, where an undefined macro would silently read as 0.
#if !defined(NVMEKIT_VERSION_MAJOR) || !defined(NVMEKIT_VERSION_MINOR) || !defined(NVMEKIT_VERSION_PATCH)
#error "config.hpp defines NVMEKIT_VERSION_MAJOR, _MINOR and _PATCH"
#endif

NVMEKIT_BEGIN_NAMESPACE
namespace config_test_probe {
struct declared_inside_the_macros {};
} // namespace config_test_probe
NVMEKIT_END_NAMESPACE

// What the macros open is nvmekit::v0, and v0 is inline: the short name reaches the same entity.
static_assert(std::is_same_v<nvmekit::config_test_probe::declared_inside_the_macros,
                             nvmekit::v0::config_test_probe::declared_inside_the_macros>);

namespace {

constexpr int checked_increment(int value)
{
    NVMEKIT_ASSERT(value >= 0, "checked_increment: negative value");
    return value + 1;
}

} // namespace

// A holding assertion is a constant expression, so constexpr functions may assert.
static_assert(checked_increment(1) == 2);

TEST(config, version_macros_match_the_project_version)
{
    EXPECT_EQ(NVMEKIT_VERSION_MAJOR, NVMEKIT_TEST_PROJECT_VERSION_MAJOR);
    EXPECT_EQ(NVMEKIT_VERSION_MINOR, NVMEKIT_TEST_PROJECT_VERSION_MINOR);
    EXPECT_EQ(NVMEKIT_VERSION_PATCH, NVMEKIT_TEST_PROJECT_VERSION_PATCH);
}

TEST(config, a_holding_assertion_evaluates_its_condition_once_and_continues)
{
    int evaluations = 0;
    NVMEKIT_ASSERT(++evaluations == 1, "evaluated once");
    // Compiled out (NDEBUG), the condition is not evaluated at all.
    EXPECT_EQ(evaluations, asserts_enabled ? 1 : 0);
    EXPECT_EQ(checked_increment(evaluations), evaluations + 1);
}

TEST(config_death, a_failing_assertion_aborts_with_file_line_and_message)
{
    if (!asserts_enabled) {
        GTEST_SKIP() << "NVMEKIT_ASSERT is compiled out (NDEBUG is defined)";
    }
    // The location printed is the assertion's own (this file and line), not config.hpp's.
    const int assertion_line = __LINE__ + 1;
    const auto fail = []([[maybe_unused]] const char* text) { NVMEKIT_ASSERT(text == nullptr, text); };
    EXPECT_EXIT(fail("queue id out of range"), testing::KilledBySignal(SIGABRT),
                "config_test\\.cpp:" + std::to_string(assertion_line) +
                    ": nvmekit assertion failed: queue id out of range");
}

TEST(config_death, a_failing_assertion_inside_a_constexpr_function_aborts_at_run_time)
{
    if (!asserts_enabled) {
        GTEST_SKIP() << "NVMEKIT_ASSERT is compiled out (NDEBUG is defined)";
    }
    volatile int negative = -1;
    EXPECT_DEATH(static_cast<void>(checked_increment(negative)),
                 "nvmekit assertion failed: checked_increment: negative value");
}

TEST(config_death, assertion_failed_prints_the_location_it_is_given_and_aborts)
{
    EXPECT_EXIT(nvmekit::detail::assertion_failed("some/file.hpp", 42, "an invariant"),
                testing::KilledBySignal(SIGABRT),
                "some/file\\.hpp:42: nvmekit assertion failed: an invariant");
}
