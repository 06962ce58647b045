#include <nvmekit/command_sets/features.hpp>

// Set Features and Get Features through the controller and the in-process host: the feature
// table's features (SEL, SV, reset), Timestamp and Host Behavior Support with their data buffers,
// and what a saved value does after a reset.

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <ostream>
#include <span>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <nvmekit/backends/ram_backend.hpp>
#include <nvmekit/controller.hpp>
#include <nvmekit/testing/test_backend.hpp>

#include "command_sets/feature_helpers.hpp"
#include "controller_fixture.hpp"

namespace {
namespace command_sets_features_test {

namespace spec = nvmekit::spec;
using namespace nvmekit_test;
using namespace std::chrono_literals;
using select = spec::feature_select;
using fid = spec::feature_id;

// ---- suites over both transports ---------------------------------------------------------------

// Set and Get Features run over PCIe and over the loopback transport; a reset written straight to
// the CC register stays a TEST() over PCIe.
NVMEKIT_TEST_SUITE_OVER_TRANSPORTS(admin_features);
NVMEKIT_TEST_SUITE_OVER_TRANSPORTS(admin_timestamp);
NVMEKIT_TEST_SUITE_OVER_TRANSPORTS(admin_host_behavior);

/// Current, default, saved and supported-capabilities DW0 of one feature, each checked to succeed.
struct feature_values {
    std::uint32_t current = 0;
    std::uint32_t default_value = 0;
    std::uint32_t saved = 0;
    std::uint32_t capabilities = 0;
    friend bool operator==(const feature_values&, const feature_values&) = default;
};

std::ostream& operator<<(std::ostream& out, const feature_values& v)
{
    return out << fmt::format("{{current {:#x}, default {:#x}, saved {:#x}, capabilities {:#x}}}", v.current,
                              v.default_value, v.saved, v.capabilities);
}

template <typename Rig>
feature_values read_feature(Rig& r, fid feature, std::uint32_t cdw11 = 0)
{
    feature_values values{};
    const std::array<std::pair<select, std::uint32_t*>, 4> selects{
        {{select::current, &values.current},
         {select::default_value, &values.default_value},
         {select::saved, &values.saved},
         {select::supported_capabilities, &values.capabilities}}};
    for (const auto& [sel, out] : selects) {
        const auto result = get_feature(r, feature, sel, cdw11);
        EXPECT_EQ(result.status(), spec::status::success()) << spec::name(sel);
        *out = result.cqe.dw0;
    }
    return values;
}

constexpr std::uint32_t changeable = 0x4;             // capabilities: changeable
constexpr std::uint32_t saveable = 0x5;               // saveable and changeable
constexpr std::uint32_t saveable_per_namespace = 0x7; // saveable, namespace specific, changeable

/// A saveable feature of Dword 11, its default, and two values it accepts (as they read back).
struct saveable_feature {
    fid feature;
    std::uint32_t cdw11_select; ///< CDW11 of Get Features (Temperature Threshold's TMPSEL/THSEL)
    std::uint32_t default_value;
    std::uint32_t first;
    std::uint32_t second;
    std::uint32_t capabilities;
};

// Temperature Threshold values carry TMPSEL 0 (composite) and THSEL 0 (over) in bits 21:16.
const std::array<saveable_feature, 7> saveable_features{{
    {fid::arbitration, 0, 0x0000'0007, 0x0302'0103, 0x0a0b'0c02, saveable},
    {fid::power_management, 0, 0x0000'0000, 0x0000'0040, 0x0000'0020, saveable},
    {fid::temperature_threshold, 0, 343, 350, 300, saveable},
    {fid::error_recovery, 0, 0x0000'0000, 0x0000'0005, 0x0000'0123, saveable_per_namespace},
    {fid::volatile_write_cache, 0, 0x0000'0001, 0x0000'0000, 0x0000'0001, saveable},
    {fid::write_atomicity_normal, 0, 0x0000'0000, 0x0000'0001, 0x0000'0000, saveable},
    {fid::async_event_configuration, 0, 0x0000'0000, 0x0000'0103, 0x0000'0002, saveable},
}};

// ---- Get / Set Features through the controller ------------------------------------------------------

TYPED_TEST(admin_features, saveable_features_report_every_select_before_any_set)
{
    TypeParam r;
    r.host.bring_up();
    for (const auto& f : saveable_features) {
        SCOPED_TRACE(spec::name(f.feature));
        EXPECT_EQ(read_feature(r, f.feature, f.cdw11_select),
                  (feature_values{f.default_value, f.default_value, f.default_value, f.capabilities}));
    }
}

TYPED_TEST(admin_features, set_with_save_changes_current_and_saved_and_keeps_the_default)
{
    TypeParam r;
    r.host.bring_up();
    for (const auto& f : saveable_features) {
        SCOPED_TRACE(spec::name(f.feature));
        const auto set = set_feature(r, f.feature, f.first, true);
        EXPECT_EQ(set.status(), spec::status::success());
        EXPECT_EQ(set.cqe.dw0, 0U);
        EXPECT_EQ(read_feature(r, f.feature, f.cdw11_select),
                  (feature_values{f.first, f.default_value, f.first, f.capabilities}));
    }
}

TYPED_TEST(admin_features, set_without_save_changes_only_the_current_value)
{
    TypeParam r;
    r.host.bring_up();
    for (const auto& f : saveable_features) {
        SCOPED_TRACE(spec::name(f.feature));
        EXPECT_EQ(set_feature(r, f.feature, f.first).status(), spec::status::success());
        EXPECT_EQ(read_feature(r, f.feature, f.cdw11_select),
                  (feature_values{f.first, f.default_value, f.default_value, f.capabilities}));
    }
}

TYPED_TEST(admin_features, saved_values_survive_a_controller_reset_and_unsaved_ones_revert)
{
    TypeParam r;
    r.host.bring_up();
    for (const auto& f : saveable_features) {
        // Saved `first`, then `second` as the current value only.
        ASSERT_EQ(set_feature(r, f.feature, f.first, true).status(), spec::status::success());
        ASSERT_EQ(set_feature(r, f.feature, f.second).status(), spec::status::success());
        EXPECT_EQ(get_feature(r, f.feature, select::current, f.cdw11_select).cqe.dw0, f.second);
    }
    controller_reset(r);
    for (const auto& f : saveable_features) {
        SCOPED_TRACE(spec::name(f.feature));
        EXPECT_EQ(read_feature(r, f.feature, f.cdw11_select),
                  (feature_values{f.first, f.default_value, f.first, f.capabilities}));
    }
}

TYPED_TEST(admin_features, unsaved_values_revert_to_the_default_at_a_controller_reset)
{
    TypeParam r;
    r.host.bring_up();
    for (const auto& f : saveable_features) {
        ASSERT_EQ(set_feature(r, f.feature, f.first).status(), spec::status::success());
    }
    ASSERT_EQ(set_feature(r, fid::keep_alive_timer, 5000).status(), spec::status::success());
    controller_reset(r);
    for (const auto& f : saveable_features) {
        SCOPED_TRACE(spec::name(f.feature));
        EXPECT_EQ(get_feature(r, f.feature, select::current, f.cdw11_select).cqe.dw0, f.default_value);
    }
    EXPECT_EQ(get_feature(r, fid::keep_alive_timer, select::current).cqe.dw0, 0U);
}

TEST(admin_features, saved_values_also_survive_a_reset_by_cc_en_writes)
{
    rig r;
    r.host.bring_up();
    ASSERT_EQ(set_feature(r, fid::arbitration, 0x0302'0103, true).status(), spec::status::success());
    ASSERT_EQ(set_feature(r, fid::volatile_write_cache, 0).status(), spec::status::success());
    // CC.EN 1 -> 0 -> 1 written straight to the register.
    auto cc = r.host.cc();
    r.write_cc(cc.with(spec::cc_register::en, false));
    r.ctrl.poll();
    EXPECT_FALSE(r.csts().get(spec::csts_register::rdy));
    r.host.enable();
    EXPECT_EQ(get_feature(r, fid::arbitration, select::current).cqe.dw0, 0x0302'0103U);
    EXPECT_EQ(get_feature(r, fid::volatile_write_cache, select::current).cqe.dw0, 1U);
}

TYPED_TEST(admin_features, a_saved_value_can_be_saved_again)
{
    TypeParam r;
    r.host.bring_up();
    ASSERT_EQ(set_feature(r, fid::temperature_threshold, 350, true).status(), spec::status::success());
    ASSERT_EQ(set_feature(r, fid::temperature_threshold, 360, true).status(), spec::status::success());
    controller_reset(r);
    EXPECT_EQ(read_feature(r, fid::temperature_threshold), (feature_values{360, 343, 360, saveable}));
}

TYPED_TEST(admin_features, a_failed_set_with_save_changes_neither_value)
{
    TypeParam r;
    r.host.bring_up();
    // Power state 1 does not exist (NPSS 0); DULBE is not supported.
    EXPECT_EQ(set_feature(r, fid::power_management, 0x01, true).status(),
              dnr(spec::generic_status::invalid_field));
    EXPECT_EQ(set_feature(r, fid::error_recovery, 0x0001'0005, true).status(),
              dnr(spec::generic_status::invalid_field));
    EXPECT_EQ(read_feature(r, fid::power_management), (feature_values{0, 0, 0, saveable}));
    EXPECT_EQ(read_feature(r, fid::error_recovery), (feature_values{0, 0, 0, saveable_per_namespace}));
}

/// Temperature Threshold's Dword 11: `kelvin` for sensor `sensor` (0 the composite), of `type`.
[[nodiscard]] std::uint32_t threshold(unsigned sensor, spec::threshold_type type, std::uint16_t kelvin)
{
    return spec::temperature_threshold{}
        .with(spec::temperature_threshold::tmpth, kelvin)
        .with(spec::temperature_threshold::tmpsel, static_cast<spec::temperature_select>(sensor))
        .with(spec::temperature_threshold::thsel, type)
        .raw;
}

TYPED_TEST(admin_features, every_temperature_threshold_is_saved_on_its_own)
{
    TypeParam r;
    r.host.bring_up();
    const auto over = spec::threshold_type::over;
    const auto under = spec::threshold_type::under;
    ASSERT_TRUE(set_feature(r, fid::temperature_threshold, threshold(0, over, 360), true).ok());
    ASSERT_TRUE(set_feature(r, fid::temperature_threshold, threshold(0, under, 270), true).ok());
    ASSERT_TRUE(set_feature(r, fid::temperature_threshold, threshold(0, under, 250)).ok());
    controller_reset(r);
    EXPECT_EQ(read_feature(r, fid::temperature_threshold, threshold(0, over, 0)),
              (feature_values{threshold(0, over, 360), threshold(0, over, 343), threshold(0, over, 360),
                              saveable}));
    // The under threshold was set again without SV: it reverted to its saved value.
    EXPECT_EQ(read_feature(r, fid::temperature_threshold, threshold(0, under, 0)),
              (feature_values{threshold(0, under, 270), threshold(0, under, 0), threshold(0, under, 270),
                              saveable}));
}

TYPED_TEST(admin_features, thresholds_exist_only_for_the_sensors_the_smart_log_reports)
{
    TypeParam r;
    r.host.bring_up();
    // The SMART / Health log reports the Composite Temperature and no Temperature Sensor 1-8.
    std::vector<std::byte> log;
    ASSERT_EQ(r.host.get_log_page(spec::log_page_id::smart_health, 512, log).status(),
              spec::status::success());
    spec::smart_health_log smart{};
    std::memcpy(&smart, log.data(), sizeof smart);
    EXPECT_EQ(smart.temperature_sensors, (std::array<std::uint16_t, 8>{}));

    // A TMPSEL naming a sensor that does not exist: Invalid Field in Command (Base 2.0 5.27.1.3).
    const auto invalid_field = dnr(spec::generic_status::invalid_field);
    const auto over = spec::threshold_type::over;
    const auto under = spec::threshold_type::under;
    for (unsigned sensor = 1; sensor <= 8; ++sensor) {
        EXPECT_EQ(set_feature(r, fid::temperature_threshold, threshold(sensor, over, 360)).status(),
                  invalid_field)
            << sensor;
        EXPECT_EQ(set_feature(r, fid::temperature_threshold, threshold(sensor, under, 250), true).status(),
                  invalid_field)
            << sensor;
        EXPECT_EQ(
            get_feature(r, fid::temperature_threshold, select::current, threshold(sensor, over, 0)).status(),
            invalid_field)
            << sensor;
    }
    // The composite's thresholds are there, and "every sensor" (TMPSEL 1111b) sets them alone.
    EXPECT_EQ(set_feature(r, fid::temperature_threshold, threshold(0, over, 355)).status(),
              spec::status::success());
    EXPECT_EQ(set_feature(r, fid::temperature_threshold, threshold(0xf, over, 351)).status(),
              spec::status::success());
    EXPECT_EQ(get_feature(r, fid::temperature_threshold, select::current, threshold(0, over, 0)).cqe.dw0,
              threshold(0, over, 351));
}

TYPED_TEST(admin_features, save_on_a_feature_that_is_not_saveable_is_refused)
{
    TypeParam r;
    r.host.bring_up();
    const auto not_saveable = dnr(spec::command_specific_status::feature_not_saveable);
    EXPECT_EQ(set_feature(r, fid::keep_alive_timer, 1000, true).status(), not_saveable);
    EXPECT_EQ(get_feature(r, fid::keep_alive_timer, select::current).cqe.dw0, 0U);

    // Timestamp and Host Behavior Support: refused before their buffers change anything.
    const auto buffer = r.host.allocate(4096);
    spec::timestamp_data stamp{};
    stamp.set_milliseconds(123456);
    r.memory.store(buffer, stamp);
    auto set_timestamp = host_type::set_features_command(fid::timestamp, 0, true);
    r.host.describe_data(set_timestamp, buffer, sizeof(stamp));
    EXPECT_EQ(r.host.admin(set_timestamp).status(), not_saveable);
    std::vector<std::byte> out;
    ASSERT_TRUE(
        r.host.admin_read(host_type::get_features_command(fid::timestamp, select::current), 8, out).ok());
    spec::timestamp_data read{};
    std::memcpy(&read, out.data(), sizeof(read));
    EXPECT_EQ(read.attributes.get(spec::timestamp_attributes::origin), spec::timestamp_origin::reset);

    spec::host_behavior_support behavior{};
    behavior.acre = 1;
    r.memory.store(buffer, behavior);
    auto set_behavior = host_type::set_features_command(fid::host_behavior_support, 0, true);
    r.host.describe_data(set_behavior, buffer, sizeof(behavior));
    EXPECT_EQ(r.host.admin(set_behavior).status(), not_saveable);
    ASSERT_TRUE(r.host
                    .admin_read(host_type::get_features_command(fid::host_behavior_support, select::current),
                                512, out)
                    .ok());
    EXPECT_EQ(out[0], std::byte{0});
}

TYPED_TEST(admin_features, features_that_are_not_saveable_report_changeable_only)
{
    TypeParam r;
    r.host.bring_up();
    for (const fid feature : {fid::timestamp, fid::keep_alive_timer, fid::host_behavior_support}) {
        SCOPED_TRACE(spec::name(feature));
        const auto capabilities = get_feature(r, feature, select::supported_capabilities);
        EXPECT_EQ(capabilities.status(), spec::status::success());
        EXPECT_EQ(capabilities.cqe.dw0, changeable);
    }
}

TYPED_TEST(admin_features, keep_alive_timeout_is_rounded_to_the_granularity_and_not_saved)
{
    TypeParam r;
    r.host.bring_up();
    EXPECT_EQ(identify_controller(r).kas, 1U); // 100 ms
    EXPECT_EQ(set_feature(r, fid::keep_alive_timer, 1550).status(), spec::status::success());
    EXPECT_EQ(read_feature(r, fid::keep_alive_timer), (feature_values{1600, 0, 0, changeable}));
    controller_reset(r);
    EXPECT_EQ(get_feature(r, fid::keep_alive_timer, select::current).cqe.dw0, 0U);
}

// ---- Timestamp and Host Behavior Support: data buffers ------------------------------------------

template <typename Rig>
spec::timestamp_data get_timestamp(Rig& r, select sel)
{
    std::vector<std::byte> out;
    const auto result = r.host.admin_read(Rig::host_type::get_features_command(fid::timestamp, sel), 8, out);
    EXPECT_EQ(result.status(), spec::status::success());
    spec::timestamp_data data{};
    std::memcpy(&data, out.data(), sizeof(data));
    return data;
}

template <typename Rig>
nvmekit::testing::completion set_timestamp(Rig& r, std::uint64_t milliseconds, std::uint8_t byte6 = 0,
                                           std::uint8_t byte7 = 0)
{
    spec::timestamp_data data{};
    data.set_milliseconds(milliseconds);
    data.attributes = spec::timestamp_attributes{byte6};
    data.rsvd7 = byte7;
    const auto buffer = r.host.allocate(4096);
    r.memory.store(buffer, data);
    auto sqe = Rig::host_type::set_features_command(fid::timestamp, 0);
    r.host.describe_data(sqe, buffer, sizeof(data));
    return r.host.admin(sqe);
}

spec::timestamp_data timestamp_of(std::uint64_t milliseconds, spec::timestamp_origin origin)
{
    spec::timestamp_data data{};
    data.set_milliseconds(milliseconds);
    data.attributes = spec::timestamp_attributes{}.with(spec::timestamp_attributes::origin, origin);
    return data;
}

TYPED_TEST(admin_timestamp, counts_from_the_controller_reset_until_the_host_sets_it)
{
    TypeParam r;
    r.host.bring_up();
    r.clock.advance(10s);
    const auto before = get_timestamp(r, select::current);
    EXPECT_EQ(before.attributes.get(spec::timestamp_attributes::origin), spec::timestamp_origin::reset);
    EXPECT_FALSE(before.attributes.get(spec::timestamp_attributes::synch));
    const std::uint64_t at_first_read = before.milliseconds();
    EXPECT_GE(at_first_read, 10'000U);
    r.clock.advance(1234ms);
    EXPECT_EQ(get_timestamp(r, select::current),
              timestamp_of(at_first_read + 1234, spec::timestamp_origin::reset));
}

TYPED_TEST(admin_timestamp, a_set_timestamp_round_trips_and_advances_with_the_clock)
{
    TypeParam r;
    r.host.bring_up();
    constexpr std::uint64_t set_to = 1'700'000'000'123;
    ASSERT_EQ(set_timestamp(r, set_to).status(), spec::status::success());
    EXPECT_EQ(get_timestamp(r, select::current), timestamp_of(set_to, spec::timestamp_origin::set_features));
    r.clock.advance(2500ms);
    EXPECT_EQ(get_timestamp(r, select::current),
              timestamp_of(set_to + 2500, spec::timestamp_origin::set_features));
    r.clock.advance(999us); // below a millisecond
    EXPECT_EQ(get_timestamp(r, select::current),
              timestamp_of(set_to + 2500, spec::timestamp_origin::set_features));
    r.clock.advance(1us);
    EXPECT_EQ(get_timestamp(r, select::current),
              timestamp_of(set_to + 2501, spec::timestamp_origin::set_features));
}

TYPED_TEST(admin_timestamp, reserved_attribute_bytes_of_a_set_are_ignored)
{
    TypeParam r;
    r.host.bring_up();
    ASSERT_EQ(set_timestamp(r, 5000, 0xff, 0xff).status(), spec::status::success());
    EXPECT_EQ(get_timestamp(r, select::current), timestamp_of(5000, spec::timestamp_origin::set_features));
}

TYPED_TEST(admin_timestamp, default_and_saved_are_the_count_since_reset)
{
    TypeParam r;
    r.host.bring_up();
    ASSERT_EQ(set_timestamp(r, 1'000'000).status(), spec::status::success());
    const auto since_reset = get_timestamp(r, select::default_value);
    EXPECT_EQ(since_reset.attributes.get(spec::timestamp_attributes::origin), spec::timestamp_origin::reset);
    EXPECT_LT(since_reset.milliseconds(), 1'000'000U);
    EXPECT_EQ(get_timestamp(r, select::saved), since_reset);
}

TYPED_TEST(admin_timestamp, supported_capabilities_transfers_no_data)
{
    TypeParam r;
    r.host.bring_up();
    const auto buffer = r.host.allocate(4096);
    const std::array<std::uint8_t, 8> marker{0xa5, 0xa5, 0xa5, 0xa5, 0xa5, 0xa5, 0xa5, 0xa5};
    r.memory.store(buffer, marker);
    auto sqe = host_type::get_features_command(fid::timestamp, select::supported_capabilities);
    r.host.describe_data(sqe, buffer, sizeof(marker));
    const auto result = r.host.admin(sqe);
    EXPECT_EQ(result.status(), spec::status::success());
    EXPECT_EQ(result.cqe.dw0, changeable);
    EXPECT_EQ(r.memory.template load<decltype(marker)>(buffer), marker);
}

TYPED_TEST(admin_timestamp, a_controller_reset_restarts_the_count_with_origin_reset)
{
    TypeParam r;
    r.host.bring_up();
    ASSERT_EQ(set_timestamp(r, 1'700'000'000'000).status(), spec::status::success());
    r.clock.advance(5s);
    controller_reset(r);
    const auto after = get_timestamp(r, select::current);
    EXPECT_EQ(after.attributes.get(spec::timestamp_attributes::origin), spec::timestamp_origin::reset);
    EXPECT_LT(after.milliseconds(), 1000U); // from the reset, not from the value set
}

template <typename Rig>
spec::host_behavior_support get_host_behavior(Rig& r, select sel)
{
    std::vector<std::byte> out;
    const auto result =
        r.host.admin_read(Rig::host_type::get_features_command(fid::host_behavior_support, sel), 512, out);
    EXPECT_EQ(result.status(), spec::status::success());
    spec::host_behavior_support data{};
    std::memcpy(&data, out.data(), sizeof(data));
    return data;
}

template <typename Rig>
nvmekit::testing::completion set_host_behavior(Rig& r, const spec::host_behavior_support& data)
{
    // A buffer that crosses a page: over PCIe the 512 bytes are split between PRP1 and PRP2.
    const auto buffer = r.host.allocate(8192) + 4096 - 256;
    r.memory.store(buffer, data);
    auto sqe = Rig::host_type::set_features_command(fid::host_behavior_support, 0);
    r.host.describe_data(sqe, buffer, sizeof(data));
    return r.host.admin(sqe);
}

TYPED_TEST(admin_host_behavior, the_data_buffer_round_trips_without_reserved_bytes)
{
    TypeParam r;
    r.host.bring_up();
    EXPECT_EQ(get_host_behavior(r, select::current), spec::host_behavior_support{});
    spec::host_behavior_support data{};
    data.acre = 1;
    data.etdas = 0;
    data.lbafee = 1;
    data.rsvd3.fill(0xee);
    ASSERT_EQ(set_host_behavior(r, data).status(), spec::status::success());
    spec::host_behavior_support expected{};
    expected.acre = 1;
    expected.lbafee = 1;
    EXPECT_EQ(get_host_behavior(r, select::current), expected);
    EXPECT_EQ(get_host_behavior(r, select::default_value), spec::host_behavior_support{});
    EXPECT_EQ(get_host_behavior(r, select::saved), spec::host_behavior_support{});
    data = {};
    data.etdas = 1;
    ASSERT_EQ(set_host_behavior(r, data).status(), spec::status::success());
    expected = {};
    expected.etdas = 1;
    EXPECT_EQ(get_host_behavior(r, select::current), expected);
}

TYPED_TEST(admin_host_behavior, a_reserved_value_is_invalid_field_and_changes_nothing)
{
    TypeParam r;
    r.host.bring_up();
    spec::host_behavior_support data{};
    data.acre = 1;
    ASSERT_EQ(set_host_behavior(r, data).status(), spec::status::success());
    for (std::size_t byte = 0; byte < 3; ++byte) {
        spec::host_behavior_support bad{};
        std::array<std::uint8_t, 512> raw{};
        raw[byte] = 2;
        std::memcpy(&bad, raw.data(), raw.size());
        EXPECT_EQ(set_host_behavior(r, bad).status(), dnr(spec::generic_status::invalid_field)) << byte;
    }
    EXPECT_EQ(get_host_behavior(r, select::current), data);
}

TYPED_TEST(admin_host_behavior, a_controller_reset_reverts_to_the_default)
{
    TypeParam r;
    r.host.bring_up();
    spec::host_behavior_support data{};
    data.acre = 1;
    ASSERT_EQ(set_host_behavior(r, data).status(), spec::status::success());
    controller_reset(r);
    EXPECT_EQ(get_host_behavior(r, select::current), spec::host_behavior_support{});
}

TYPED_TEST(admin_features, a_saved_async_event_configuration_is_in_effect_after_a_reset)
{
    TypeParam r;
    r.subsystem.add_namespace(nvmekit::ram_backend{1 << 20});
    r.host.bring_up();
    const auto notices = spec::async_event_configuration{}.with(
        spec::async_event_configuration::namespace_attribute_notices, true);
    ASSERT_TRUE(set_feature(r, fid::async_event_configuration, notices.raw, true).ok());
    ASSERT_TRUE(set_feature(r, fid::async_event_configuration, 0).ok());
    controller_reset(r);
    const auto cid = r.post_async_event_request();
    ASSERT_TRUE(r.subsystem.detach(1, r.ctrl.controller_id())); // the embedder detaches it
    const spec::async_event_completion event{r.async_event(cid)};
    EXPECT_EQ(event.get(spec::async_event_completion::event_type), spec::async_event_type::notice);
    EXPECT_EQ(event.get(spec::async_event_completion::log_page), spec::log_page_id::changed_namespace_list);
}

} // namespace command_sets_features_test
} // namespace
