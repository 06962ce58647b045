#include <nvmekit/core/controller_config.hpp>

#include <cstdint>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

namespace {
namespace controller_config_test {

using nvmekit::controller_config;
using nvmekit::detail::checked_controller_config;
namespace spec = nvmekit::spec;

constexpr nvmekit::limits caps{.io_queues = 8, .queue_entries = 1024, .mdts = 6};

/// The message of the std::invalid_argument `config` is refused with, or "" when accepted.
std::string refusal(const controller_config& config, bool concurrent_allowed = false)
{
    try {
        static_cast<void>(checked_controller_config(config, caps, concurrent_allowed));
    } catch (const std::invalid_argument& error) {
        return error.what();
    }
    return {};
}

TEST(controller_config, zero_caps_resolve_to_the_limits)
{
    const controller_config resolved = checked_controller_config(controller_config{}, caps, false);
    EXPECT_EQ(resolved.io_queues, 8U);
    EXPECT_EQ(resolved.queue_entries, 1024U);
    EXPECT_EQ(resolved.mdts, 6U);
}

TEST(controller_config, caps_within_the_limits_are_kept)
{
    const controller_config resolved = checked_controller_config(
        controller_config{.io_queues = 3, .queue_entries = 2, .mdts = 1}, caps, false);
    EXPECT_EQ(resolved.io_queues, 3U);
    EXPECT_EQ(resolved.queue_entries, 2U);
    EXPECT_EQ(resolved.mdts, 1U);
}

TEST(controller_config, caps_outside_their_range_are_refused_by_name)
{
    EXPECT_NE(refusal({.io_queues = 9}).find("io_queues is 9"), std::string::npos);
    EXPECT_NE(refusal({.queue_entries = 1}).find("queue_entries is 1"), std::string::npos);
    EXPECT_NE(refusal({.queue_entries = 2048}).find("queue_entries"), std::string::npos);
    EXPECT_NE(refusal({.mdts = 7}).find("mdts is 7"), std::string::npos);
    EXPECT_NE(refusal({.poll_groups = 0}).find("poll_groups is 0"), std::string::npos);
    EXPECT_NE(refusal({.poll_groups = 9}).find("poll_groups is 9"), std::string::npos);
    EXPECT_EQ(refusal({.poll_groups = 8}), "");
}

TEST(controller_config, fabrics_in_capsule_data_is_whole_ioccsz_units)
{
    const auto with_in_capsule = [](std::uint32_t bytes) {
        controller_config config{};
        config.identity.fabrics = nvmekit::fabrics_identity{.io_in_capsule_data = bytes};
        return config;
    };
    EXPECT_NE(refusal(with_in_capsule(100)).find("io_in_capsule_data is 100"), std::string::npos);
    EXPECT_NE(refusal(with_in_capsule((1U << 30) + 16)).find("io_in_capsule_data"), std::string::npos);
    EXPECT_EQ(refusal(with_in_capsule(8192)), "");
    EXPECT_EQ(refusal(with_in_capsule(0)), "");
}

TEST(controller_config, concurrent_groups_need_a_policy_that_allows_them)
{
    EXPECT_NE(refusal({.concurrent_poll_groups = true}).find("multi_threaded"), std::string::npos);
    EXPECT_EQ(refusal({.concurrent_poll_groups = true}, true), "");
}

TEST(controller_config, cap_register_follows_the_configuration)
{
    const auto registers = nvmekit::detail::controller_register_config({.ready_timeout_500ms = 7,
                                                                        .doorbell_stride = 2,
                                                                        .contiguous_queues_required = true,
                                                                        .subsystem_reset_supported = false,
                                                                        .queue_entries = 64});
    const spec::cap_register cap = registers.cap;
    EXPECT_EQ(cap.get(cap.mqes), 63U);
    EXPECT_TRUE(cap.get(cap.cqr));
    EXPECT_EQ(cap.get(cap.to), 7U);
    EXPECT_EQ(cap.get(cap.dstrd), 2U);
    EXPECT_FALSE(cap.get(cap.nssrs));
    EXPECT_TRUE(cap.get(cap.css_nvm));
    EXPECT_TRUE(cap.get(cap.crwms));
}

TEST(controller_config, feature_table_reports_a_volatile_cache_and_no_extra_sensors)
{
    const auto features = nvmekit::detail::controller_feature_config({});
    EXPECT_TRUE(features.volatile_write_cache_present);
    EXPECT_EQ(features.temperature_sensors, nvmekit::detail::reported_temperature_sensors);
    // Asynchronous Event Configuration: the notices an I/O controller reports, and a discovery
    // controller's Discovery Log Page Change Notices (bit 31) besides
    EXPECT_EQ(features.supported_async_events, 0x0000'010fU);
    nvmekit::controller_config discovery{};
    discovery.identity.fabrics = nvmekit::fabrics_identity{.discovery = true};
    EXPECT_EQ(nvmekit::detail::controller_feature_config(discovery).supported_async_events, 0x8000'010fU);
}

} // namespace controller_config_test
} // namespace
