#include <nvmekit/state/feature_table.hpp>

#include <chrono>
#include <cstdint>
#include <ostream>
#include <stdexcept>

#include <gtest/gtest.h>

NVMEKIT_BEGIN_NAMESPACE
void PrintTo(const feature_result& result, std::ostream* os)
{
    *os << "{status=0x" << std::hex << result.status.raw << " dw0=0x" << result.dw0 << std::dec << "}";
}
NVMEKIT_END_NAMESPACE

namespace {

using namespace std::chrono_literals;
namespace spec = nvmekit::spec;
using nvmekit::feature_result;
using nvmekit::feature_table;
using nvmekit::feature_table_config;
using spec::feature_id;
using spec::feature_select;

constexpr auto current = feature_select::current;
constexpr auto default_value = feature_select::default_value;
constexpr auto saved = feature_select::saved;
constexpr auto capabilities = feature_select::supported_capabilities;
constexpr bool save = true;
constexpr bool no_save = false;

const spec::status invalid_field = spec::status{spec::generic_status::invalid_field}.with_dnr();
const spec::status not_saveable =
    spec::status{spec::command_specific_status::feature_not_saveable}.with_dnr();
const spec::status kato_invalid = spec::status{spec::generic_status::keep_alive_timeout_invalid}.with_dnr();

feature_result ok(std::uint32_t dw0 = 0) { return {spec::status::success(), dw0}; }
feature_result failed(spec::status status) { return {status, 0}; }

/// Temperature Threshold CDW11 / Dword 0: TMPTH 15:00, TMPSEL 19:16, THSEL 21:20.
constexpr std::uint32_t threshold(std::uint32_t kelvin, std::uint32_t tmpsel, std::uint32_t thsel)
{
    return kelvin | (tmpsel << 16) | (thsel << 20);
}
constexpr std::uint32_t over = 0;
constexpr std::uint32_t under = 1;
constexpr std::uint32_t all_sensors = 0xf;

spec::timestamp_data timestamp_of(std::uint64_t milliseconds)
{
    spec::timestamp_data data{};
    data.set_milliseconds(milliseconds);
    return data;
}

spec::feature_select reserved_select(std::uint8_t raw) { return static_cast<feature_select>(raw); }

constexpr feature_id dword_features[] = {
    feature_id::arbitration,
    feature_id::power_management,
    feature_id::temperature_threshold,
    feature_id::error_recovery,
    feature_id::volatile_write_cache,
    feature_id::write_atomicity_normal,
    feature_id::async_event_configuration,
    feature_id::keep_alive_timer,
};

} // namespace

TEST(feature_table, handles_exactly_its_ten_features)
{
    for (const auto fid : dword_features) {
        EXPECT_TRUE(feature_table::handles(fid)) << static_cast<int>(fid);
        EXPECT_FALSE(feature_table::has_data_buffer(fid)) << static_cast<int>(fid);
    }
    EXPECT_TRUE(feature_table::handles(feature_id::timestamp));
    EXPECT_TRUE(feature_table::handles(feature_id::host_behavior_support));
    EXPECT_TRUE(feature_table::has_data_buffer(feature_id::timestamp));
    EXPECT_TRUE(feature_table::has_data_buffer(feature_id::host_behavior_support));
    for (const auto fid :
         {feature_id::lba_range_type, feature_id::number_of_queues, feature_id::interrupt_coalescing,
          feature_id::interrupt_vector_configuration, feature_id::autonomous_power_state_transition,
          feature_id::host_memory_buffer, feature_id::host_identifier, static_cast<feature_id>(0x00),
          static_cast<feature_id>(0xc0)}) {
        EXPECT_FALSE(feature_table::handles(fid)) << static_cast<int>(fid);
        EXPECT_FALSE(feature_table::has_data_buffer(fid)) << static_cast<int>(fid);
        EXPECT_EQ(feature_table::capabilities(fid).raw, 0U) << static_cast<int>(fid);
    }
}

TEST(feature_table, capabilities_are_saveable_namespace_specific_and_changeable_bits)
{
    static_assert(feature_table::capabilities(feature_id::arbitration).raw == 0b101);
    EXPECT_EQ(feature_table::capabilities(feature_id::arbitration).raw, 0b101U);
    EXPECT_EQ(feature_table::capabilities(feature_id::power_management).raw, 0b101U);
    EXPECT_EQ(feature_table::capabilities(feature_id::temperature_threshold).raw, 0b101U);
    EXPECT_EQ(feature_table::capabilities(feature_id::error_recovery).raw, 0b111U);
    EXPECT_EQ(feature_table::capabilities(feature_id::volatile_write_cache).raw, 0b101U);
    EXPECT_EQ(feature_table::capabilities(feature_id::write_atomicity_normal).raw, 0b101U);
    EXPECT_EQ(feature_table::capabilities(feature_id::async_event_configuration).raw, 0b101U);
    EXPECT_EQ(feature_table::capabilities(feature_id::timestamp).raw, 0b100U);
    EXPECT_EQ(feature_table::capabilities(feature_id::keep_alive_timer).raw, 0b100U);
    EXPECT_EQ(feature_table::capabilities(feature_id::host_behavior_support).raw, 0b100U);

    const feature_table table;
    for (const auto fid : dword_features) {
        EXPECT_EQ(table.get(fid, capabilities, 0), ok(feature_table::capabilities(fid).raw))
            << static_cast<int>(fid);
    }
    EXPECT_EQ(table.get(feature_id::timestamp, capabilities, 0), ok(0b100));
    EXPECT_EQ(table.get(feature_id::host_behavior_support, capabilities, 0), ok(0b100));
}

TEST(feature_table, unhandled_identifiers_are_invalid_field_with_dnr)
{
    feature_table table;
    for (const auto fid :
         {feature_id::lba_range_type, feature_id::number_of_queues, feature_id::interrupt_coalescing,
          feature_id::interrupt_vector_configuration, static_cast<feature_id>(0x00),
          static_cast<feature_id>(0x7f), static_cast<feature_id>(0xc0)}) {
        for (const auto select : {current, default_value, saved, capabilities}) {
            EXPECT_EQ(table.get(fid, select, 0), failed(invalid_field)) << static_cast<int>(fid);
        }
        EXPECT_EQ(table.set(fid, 0, no_save), failed(invalid_field)) << static_cast<int>(fid);
        EXPECT_EQ(table.set(fid, 0, save), failed(invalid_field)) << static_cast<int>(fid);
    }
    const auto result = table.get(feature_id::number_of_queues, current, 0);
    EXPECT_TRUE(result.status.do_not_retry());
    EXPECT_EQ(result.status.type(), spec::status_code_type::generic);
    EXPECT_EQ(result.status.code(), 0x02);
}

TEST(feature_table, reserved_select_values_are_invalid_field)
{
    const feature_table table;
    spec::timestamp_data stamp = timestamp_of(77);
    spec::host_behavior_support behavior{};
    behavior.acre = 9;
    for (std::uint8_t raw = 4; raw <= 7; ++raw) {
        for (const auto fid : dword_features) {
            EXPECT_EQ(table.get(fid, reserved_select(raw), 0), failed(invalid_field))
                << static_cast<int>(fid);
        }
        EXPECT_EQ(table.get(feature_id::timestamp, reserved_select(raw), 0), failed(invalid_field));
        EXPECT_EQ(table.get_timestamp(reserved_select(raw), 1s, stamp), failed(invalid_field));
        EXPECT_EQ(table.get_host_behavior(reserved_select(raw), behavior), failed(invalid_field));
    }
    EXPECT_EQ(stamp, timestamp_of(77));
    EXPECT_EQ(behavior.acre, 9);
}

TEST(feature_table, invalid_configuration_throws)
{
    EXPECT_THROW(feature_table{feature_table_config{.power_states = 0}}, std::invalid_argument);
    EXPECT_THROW(feature_table{feature_table_config{.power_states = 33}}, std::invalid_argument);
    EXPECT_NO_THROW(feature_table{feature_table_config{.power_states = 32}});
    EXPECT_THROW(feature_table{feature_table_config{.temperature_sensors = 9}}, std::invalid_argument);
    EXPECT_NO_THROW(feature_table{feature_table_config{.temperature_sensors = 8}});
    EXPECT_THROW(feature_table{feature_table_config{.supported_async_events = 0x0001'0000}},
                 std::invalid_argument);
    EXPECT_NO_THROW(feature_table{feature_table_config{.supported_async_events = 0x8000'ffff}});
    EXPECT_THROW(feature_table{feature_table_config{.keep_alive_granularity_ms = 150}},
                 std::invalid_argument);
    EXPECT_THROW(feature_table{feature_table_config{.keep_alive_granularity_ms = 6'553'600}},
                 std::invalid_argument);
    EXPECT_NO_THROW(feature_table{feature_table_config{.keep_alive_granularity_ms = 6'553'500}});
    const feature_table_config required_without_kas{.keep_alive_granularity_ms = 0,
                                                    .keep_alive_required = true};
    EXPECT_THROW(feature_table{required_without_kas}, std::invalid_argument);
}

TEST(feature_table, arbitration_set_get_save_and_reset)
{
    feature_table table;
    EXPECT_EQ(table.get(feature_id::arbitration, current, 0), ok(0x7));
    EXPECT_EQ(table.get(feature_id::arbitration, default_value, 0), ok(0x7));
    EXPECT_EQ(table.get(feature_id::arbitration, saved, 0), ok(0x7));

    // Bits 07:03 are reserved and dropped.
    EXPECT_EQ(table.set(feature_id::arbitration, 0x0403'02f9, no_save), ok());
    EXPECT_EQ(table.get(feature_id::arbitration, current, 0), ok(0x0403'0201));
    EXPECT_EQ(table.arbitration().raw, 0x0403'0201U);
    EXPECT_EQ(table.arbitration().get(spec::arbitration::hpw), 4);
    EXPECT_EQ(table.get(feature_id::arbitration, saved, 0), ok(0x7));
    EXPECT_EQ(table.get(feature_id::arbitration, default_value, 0), ok(0x7));
    table.controller_reset(0ns);
    EXPECT_EQ(table.get(feature_id::arbitration, current, 0), ok(0x7));

    EXPECT_EQ(table.set(feature_id::arbitration, 0x0a0b'0c03, save), ok());
    EXPECT_EQ(table.get(feature_id::arbitration, saved, 0), ok(0x0a0b'0c03));
    EXPECT_EQ(table.set(feature_id::arbitration, 0x0000'0001, no_save), ok());
    EXPECT_EQ(table.get(feature_id::arbitration, current, 0), ok(0x1));
    table.controller_reset(0ns);
    EXPECT_EQ(table.get(feature_id::arbitration, current, 0), ok(0x0a0b'0c03));
    EXPECT_EQ(table.get(feature_id::arbitration, default_value, 0), ok(0x7));
}

TEST(feature_table, arbitration_default_comes_from_the_configuration)
{
    const feature_table table{{.default_arbitration = spec::arbitration{0x0102'03ff}}};
    EXPECT_EQ(table.get(feature_id::arbitration, default_value, 0), ok(0x0102'0307));
    EXPECT_EQ(table.get(feature_id::arbitration, current, 0), ok(0x0102'0307));
}

TEST(feature_table, power_management_accepts_only_existing_states_and_defined_hints)
{
    feature_table table{{.power_states = 4}};
    EXPECT_EQ(table.get(feature_id::power_management, current, 0), ok(0));
    EXPECT_EQ(table.set(feature_id::power_management, 3, no_save), ok());
    EXPECT_EQ(table.power_state(), 3);
    EXPECT_EQ(table.get(feature_id::power_management, current, 0), ok(3));

    EXPECT_EQ(table.set(feature_id::power_management, 4, no_save), failed(invalid_field));
    EXPECT_EQ(table.set(feature_id::power_management, 31, save), failed(invalid_field));
    EXPECT_EQ(table.set(feature_id::power_management, (3U << 5) | 1U, no_save),
              failed(invalid_field)); // WH 011b
    EXPECT_EQ(table.set(feature_id::power_management, (7U << 5) | 1U, no_save),
              failed(invalid_field)); // WH 111b
    EXPECT_EQ(table.get(feature_id::power_management, current, 0), ok(3));
    EXPECT_EQ(table.get(feature_id::power_management, saved, 0), ok(0));

    EXPECT_EQ(table.set(feature_id::power_management, (2U << 5) | 2U, no_save), ok()); // WH 010b, PS 2
    EXPECT_EQ(table.get(feature_id::power_management, current, 0), ok(0x42));
    EXPECT_EQ(table.power_management().get(spec::power_management::wh), 2);
    // Bits 31:08 are reserved and dropped.
    EXPECT_EQ(table.set(feature_id::power_management, 0xffff'ff21, no_save), ok());
    EXPECT_EQ(table.get(feature_id::power_management, current, 0), ok(0x21));

    EXPECT_EQ(table.set(feature_id::power_management, 1, save), ok());
    EXPECT_EQ(table.set(feature_id::power_management, 2, no_save), ok());
    EXPECT_EQ(table.get(feature_id::power_management, saved, 0), ok(1));
    EXPECT_EQ(table.get(feature_id::power_management, default_value, 0), ok(0));
    table.controller_reset(0ns);
    EXPECT_EQ(table.power_state(), 1);
}

TEST(feature_table, power_management_with_one_power_state_only_takes_state_0)
{
    feature_table table;
    EXPECT_EQ(table.set(feature_id::power_management, 1, no_save), failed(invalid_field));
    EXPECT_EQ(table.set(feature_id::power_management, 0, no_save), ok());
}

TEST(feature_table, temperature_threshold_defaults_per_sensor_and_type)
{
    const feature_table table{{.temperature_sensors = 2, .warning_composite_temperature = 343}};
    for (const auto select : {current, default_value, saved}) {
        EXPECT_EQ(table.get(feature_id::temperature_threshold, select, threshold(0, 0, over)),
                  ok(threshold(343, 0, over)));
        EXPECT_EQ(table.get(feature_id::temperature_threshold, select, threshold(0, 0, under)),
                  ok(threshold(0, 0, under)));
        EXPECT_EQ(table.get(feature_id::temperature_threshold, select, threshold(0, 1, over)),
                  ok(threshold(0xffff, 1, over)));
        EXPECT_EQ(table.get(feature_id::temperature_threshold, select, threshold(0, 2, under)),
                  ok(threshold(0, 2, under)));
    }
    // TMPTH in CDW11 of a Get is ignored.
    EXPECT_EQ(table.get(feature_id::temperature_threshold, current, threshold(0x1234, 2, over)),
              ok(0x0002'ffffU));
    EXPECT_EQ(table.over_temperature_threshold(0), 343);
    EXPECT_EQ(table.under_temperature_threshold(0), 0);
    EXPECT_EQ(table.over_temperature_threshold(2), 0xffff);
    EXPECT_EQ(table.under_temperature_threshold(2), 0);
}

TEST(feature_table, temperature_threshold_rejects_missing_sensors_and_reserved_selects)
{
    feature_table table{{.temperature_sensors = 2}};
    for (const std::uint32_t tmpsel : {3U, 8U, 9U, 0xeU, all_sensors}) {
        EXPECT_EQ(table.get(feature_id::temperature_threshold, current, threshold(0, tmpsel, over)),
                  failed(invalid_field))
            << tmpsel;
    }
    for (const std::uint32_t tmpsel : {3U, 8U, 9U, 0xeU}) {
        EXPECT_EQ(table.set(feature_id::temperature_threshold, threshold(300, tmpsel, over), no_save),
                  failed(invalid_field))
            << tmpsel;
    }
    for (const std::uint32_t thsel : {2U, 3U}) {
        EXPECT_EQ(table.get(feature_id::temperature_threshold, current, threshold(0, 0, thsel)),
                  failed(invalid_field));
        EXPECT_EQ(table.set(feature_id::temperature_threshold, threshold(300, 0, thsel), no_save),
                  failed(invalid_field));
        EXPECT_EQ(table.set(feature_id::temperature_threshold, threshold(300, all_sensors, thsel), no_save),
                  failed(invalid_field));
    }
    EXPECT_EQ(table.over_temperature_threshold(0), 343);
    EXPECT_EQ(table.over_temperature_threshold(1), 0xffff);
    EXPECT_EQ(table.under_temperature_threshold(1), 0);
}

TEST(feature_table, temperature_threshold_set_changes_only_the_selected_threshold)
{
    feature_table table{{.temperature_sensors = 2}};
    EXPECT_EQ(table.set(feature_id::temperature_threshold, threshold(330, 1, over), no_save), ok());
    EXPECT_EQ(table.set(feature_id::temperature_threshold, threshold(270, 1, under), no_save), ok());
    EXPECT_EQ(table.set(feature_id::temperature_threshold, threshold(260, 0, under), no_save), ok());
    EXPECT_EQ(table.get(feature_id::temperature_threshold, current, threshold(0, 1, over)),
              ok(threshold(330, 1, over)));
    EXPECT_EQ(table.get(feature_id::temperature_threshold, current, threshold(0, 1, under)),
              ok(threshold(270, 1, under)));
    EXPECT_EQ(table.get(feature_id::temperature_threshold, current, threshold(0, 0, under)),
              ok(threshold(260, 0, under)));
    EXPECT_EQ(table.get(feature_id::temperature_threshold, current, threshold(0, 0, over)),
              ok(threshold(343, 0, over)));
    EXPECT_EQ(table.get(feature_id::temperature_threshold, current, threshold(0, 2, over)),
              ok(threshold(0xffff, 2, over)));
    EXPECT_EQ(table.get(feature_id::temperature_threshold, current, threshold(0, 2, under)),
              ok(threshold(0, 2, under)));
    EXPECT_EQ(table.get(feature_id::temperature_threshold, default_value, threshold(0, 1, over)),
              ok(threshold(0xffff, 1, over)));
    EXPECT_EQ(table.over_temperature_threshold(1), 330);
    EXPECT_EQ(table.under_temperature_threshold(1), 270);
    EXPECT_EQ(table.under_temperature_threshold(0), 260);
}

TEST(feature_table, temperature_threshold_all_sensors_sets_every_implemented_threshold)
{
    feature_table table{{.temperature_sensors = 2}};
    EXPECT_EQ(table.set(feature_id::temperature_threshold, threshold(350, all_sensors, over), no_save), ok());
    EXPECT_EQ(table.over_temperature_threshold(0), 350);
    EXPECT_EQ(table.over_temperature_threshold(1), 350);
    EXPECT_EQ(table.over_temperature_threshold(2), 350);
    EXPECT_EQ(table.under_temperature_threshold(0), 0);
    EXPECT_EQ(table.under_temperature_threshold(1), 0);
    EXPECT_EQ(table.set(feature_id::temperature_threshold, threshold(250, all_sensors, under), save), ok());
    EXPECT_EQ(table.under_temperature_threshold(0), 250);
    EXPECT_EQ(table.under_temperature_threshold(1), 250);
    EXPECT_EQ(table.under_temperature_threshold(2), 250);
    EXPECT_EQ(table.get(feature_id::temperature_threshold, saved, threshold(0, 2, under)),
              ok(threshold(250, 2, under)));
    EXPECT_EQ(table.get(feature_id::temperature_threshold, saved, threshold(0, 2, over)),
              ok(threshold(0xffff, 2, over)));
    table.controller_reset(0ns);
    EXPECT_EQ(table.over_temperature_threshold(0), 343);
    EXPECT_EQ(table.over_temperature_threshold(2), 0xffff);
    EXPECT_EQ(table.under_temperature_threshold(0), 250);
    EXPECT_EQ(table.under_temperature_threshold(2), 250);
}

TEST(feature_table, temperature_threshold_save_and_reset_per_threshold)
{
    feature_table table{{.temperature_sensors = 1}};
    EXPECT_EQ(table.set(feature_id::temperature_threshold, threshold(320, 1, over), save), ok());
    EXPECT_EQ(table.set(feature_id::temperature_threshold, threshold(300, 0, over), no_save), ok());
    EXPECT_EQ(table.get(feature_id::temperature_threshold, saved, threshold(0, 1, over)),
              ok(threshold(320, 1, over)));
    EXPECT_EQ(table.get(feature_id::temperature_threshold, saved, threshold(0, 0, over)),
              ok(threshold(343, 0, over)));
    table.controller_reset(0ns);
    EXPECT_EQ(table.get(feature_id::temperature_threshold, current, threshold(0, 1, over)),
              ok(threshold(320, 1, over)));
    EXPECT_EQ(table.get(feature_id::temperature_threshold, current, threshold(0, 0, over)),
              ok(threshold(343, 0, over)));
}

TEST(feature_table, composite_without_wctemp_has_no_under_threshold)
{
    feature_table table{{.temperature_sensors = 0, .warning_composite_temperature = 0}};
    EXPECT_EQ(table.get(feature_id::temperature_threshold, default_value, threshold(0, 0, over)),
              ok(threshold(0xffff, 0, over)));
    EXPECT_EQ(table.get(feature_id::temperature_threshold, current, threshold(0, 0, under)),
              failed(invalid_field));
    EXPECT_EQ(table.set(feature_id::temperature_threshold, threshold(260, 0, under), no_save),
              failed(invalid_field));
    EXPECT_EQ(table.set(feature_id::temperature_threshold, threshold(260, all_sensors, under), no_save),
              failed(invalid_field));
    EXPECT_EQ(table.get(feature_id::temperature_threshold, current, threshold(0, 1, over)),
              failed(invalid_field));
    EXPECT_EQ(table.set(feature_id::temperature_threshold, threshold(360, all_sensors, over), no_save), ok());
    EXPECT_EQ(table.over_temperature_threshold(0), 360);
}

TEST(feature_table, all_sensors_under_skips_a_composite_without_wctemp)
{
    feature_table table{{.temperature_sensors = 1, .warning_composite_temperature = 0}};
    EXPECT_EQ(table.set(feature_id::temperature_threshold, threshold(255, all_sensors, under), no_save),
              ok());
    EXPECT_EQ(table.under_temperature_threshold(0), 0);
    EXPECT_EQ(table.under_temperature_threshold(1), 255);
}

TEST(feature_table, eight_sensors_each_keep_their_thresholds)
{
    feature_table table{{.temperature_sensors = 8}};
    for (std::uint32_t sensor = 0; sensor <= 8; ++sensor) {
        EXPECT_EQ(
            table.set(feature_id::temperature_threshold, threshold(300 + sensor, sensor, over), no_save),
            ok());
        EXPECT_EQ(
            table.set(feature_id::temperature_threshold, threshold(200 + sensor, sensor, under), no_save),
            ok());
    }
    for (std::uint32_t sensor = 0; sensor <= 8; ++sensor) {
        EXPECT_EQ(table.get(feature_id::temperature_threshold, current, threshold(0, sensor, over)),
                  ok(threshold(300 + sensor, sensor, over)));
        EXPECT_EQ(table.get(feature_id::temperature_threshold, current, threshold(0, sensor, under)),
                  ok(threshold(200 + sensor, sensor, under)));
    }
    EXPECT_EQ(table.get(feature_id::temperature_threshold, current, threshold(0, 9, over)),
              failed(invalid_field));
}

TEST(feature_table, error_recovery_dulbe_needs_deallocated_error_support)
{
    feature_table table;
    EXPECT_EQ(table.get(feature_id::error_recovery, current, 0), ok(0));
    EXPECT_EQ(table.set(feature_id::error_recovery, 0x0001'0005, no_save), failed(invalid_field));
    EXPECT_EQ(table.set(feature_id::error_recovery, 0x0001'0005, save), failed(invalid_field));
    EXPECT_EQ(table.get(feature_id::error_recovery, current, 0), ok(0));
    EXPECT_EQ(table.set(feature_id::error_recovery, 0x1234, no_save), ok());
    EXPECT_EQ(table.get(feature_id::error_recovery, current, 0), ok(0x1234));
    EXPECT_EQ(table.error_recovery().get(spec::error_recovery::tler), 0x1234);
    // Bits 31:17 are reserved and dropped.
    EXPECT_EQ(table.set(feature_id::error_recovery, 0xfffe'0009, no_save), ok());
    EXPECT_EQ(table.get(feature_id::error_recovery, current, 0), ok(0x9));
}

TEST(feature_table, error_recovery_with_dulbe_support_saves_and_resets)
{
    feature_table table{{.deallocated_error_supported = true}};
    EXPECT_EQ(table.set(feature_id::error_recovery, 0x0001'0005, save), ok());
    EXPECT_TRUE(table.error_recovery().get(spec::error_recovery::dulbe));
    EXPECT_EQ(table.get(feature_id::error_recovery, saved, 0), ok(0x0001'0005));
    EXPECT_EQ(table.set(feature_id::error_recovery, 0x0000'0002, no_save), ok());
    EXPECT_EQ(table.get(feature_id::error_recovery, current, 0), ok(0x2));
    EXPECT_EQ(table.get(feature_id::error_recovery, default_value, 0), ok(0));
    table.controller_reset(0ns);
    EXPECT_EQ(table.get(feature_id::error_recovery, current, 0), ok(0x0001'0005));
}

TEST(feature_table, volatile_write_cache_defaults_enabled_and_saves)
{
    feature_table table;
    EXPECT_TRUE(table.volatile_write_cache_enabled());
    EXPECT_EQ(table.get(feature_id::volatile_write_cache, current, 0), ok(1));
    EXPECT_EQ(table.get(feature_id::volatile_write_cache, default_value, 0), ok(1));
    // Bits 31:01 are reserved and dropped.
    EXPECT_EQ(table.set(feature_id::volatile_write_cache, 0xffff'fffe, no_save), ok());
    EXPECT_FALSE(table.volatile_write_cache_enabled());
    EXPECT_EQ(table.get(feature_id::volatile_write_cache, current, 0), ok(0));
    EXPECT_EQ(table.get(feature_id::volatile_write_cache, saved, 0), ok(1));
    table.controller_reset(0ns);
    EXPECT_TRUE(table.volatile_write_cache_enabled());

    EXPECT_EQ(table.set(feature_id::volatile_write_cache, 0, save), ok());
    EXPECT_EQ(table.get(feature_id::volatile_write_cache, saved, 0), ok(0));
    EXPECT_EQ(table.set(feature_id::volatile_write_cache, 1, no_save), ok());
    EXPECT_TRUE(table.volatile_write_cache_enabled());
    table.controller_reset(0ns);
    EXPECT_FALSE(table.volatile_write_cache_enabled());
    EXPECT_EQ(table.get(feature_id::volatile_write_cache, default_value, 0), ok(1));
}

TEST(feature_table, volatile_write_cache_absent_is_not_supported)
{
    feature_table table{{.volatile_write_cache_present = false}};
    EXPECT_FALSE(table.volatile_write_cache_enabled());
    for (const auto select : {current, default_value, saved, capabilities}) {
        EXPECT_EQ(table.get(feature_id::volatile_write_cache, select, 0), failed(invalid_field));
    }
    EXPECT_EQ(table.set(feature_id::volatile_write_cache, 1, no_save), failed(invalid_field));
    EXPECT_EQ(table.set(feature_id::volatile_write_cache, 1, save), failed(invalid_field));
    EXPECT_FALSE(table.volatile_write_cache_enabled());
}

TEST(feature_table, write_atomicity_normal_set_save_and_reset)
{
    feature_table table;
    EXPECT_FALSE(table.write_atomicity_disable_normal());
    EXPECT_EQ(table.get(feature_id::write_atomicity_normal, current, 0), ok(0));
    EXPECT_EQ(table.set(feature_id::write_atomicity_normal, 0xffff'ffff, no_save), ok());
    EXPECT_TRUE(table.write_atomicity_disable_normal());
    EXPECT_EQ(table.get(feature_id::write_atomicity_normal, current, 0), ok(1));
    EXPECT_EQ(table.get(feature_id::write_atomicity_normal, saved, 0), ok(0));
    table.controller_reset(0ns);
    EXPECT_FALSE(table.write_atomicity_disable_normal());
    EXPECT_EQ(table.set(feature_id::write_atomicity_normal, 1, save), ok());
    EXPECT_EQ(table.set(feature_id::write_atomicity_normal, 0, no_save), ok());
    table.controller_reset(0ns);
    EXPECT_TRUE(table.write_atomicity_disable_normal());
    EXPECT_EQ(table.get(feature_id::write_atomicity_normal, default_value, 0), ok(0));
}

TEST(feature_table, async_event_configuration_keeps_only_supported_events)
{
    feature_table table;
    EXPECT_EQ(table.get(feature_id::async_event_configuration, current, 0), ok(0));
    EXPECT_EQ(table.set(feature_id::async_event_configuration, 0xffff'ffff, no_save), ok());
    EXPECT_EQ(table.get(feature_id::async_event_configuration, current, 0), ok(0x0000'010f));
    EXPECT_EQ(table.async_event_configuration().raw, 0x0000'010fU);
    EXPECT_TRUE(
        table.async_event_configuration().get(spec::async_event_configuration::namespace_attribute_notices));
    EXPECT_FALSE(
        table.async_event_configuration().get(spec::async_event_configuration::firmware_activation_notices));
    EXPECT_EQ(table.set(feature_id::async_event_configuration, 0x0000'0302, save), ok());
    EXPECT_EQ(table.get(feature_id::async_event_configuration, saved, 0), ok(0x0000'0102));
    EXPECT_EQ(table.set(feature_id::async_event_configuration, 0, no_save), ok());
    table.controller_reset(0ns);
    EXPECT_EQ(table.async_event_configuration().raw, 0x0000'0102U);
    EXPECT_EQ(table.get(feature_id::async_event_configuration, default_value, 0), ok(0));
}

TEST(feature_table, async_event_configuration_follows_the_configured_mask)
{
    feature_table table{{.supported_async_events = 0x8000'0e00}};
    EXPECT_EQ(table.set(feature_id::async_event_configuration, 0xffff'ffff, no_save), ok());
    EXPECT_EQ(table.get(feature_id::async_event_configuration, current, 0), ok(0x8000'0e00));
}

TEST(feature_table, timestamp_counts_from_reset_until_the_host_sets_it)
{
    feature_table table{{}, 5s};
    const auto before = table.timestamp(5s + 1500ms + 999us);
    EXPECT_EQ(before.milliseconds(), 1500U);
    EXPECT_EQ(before.attributes.raw, 0x00); // Synch 0, origin 000b
    EXPECT_EQ(before.rsvd7, 0);
    EXPECT_EQ(table.timestamp(1s).milliseconds(), 0U); // a clock before the origin counts as 0

    const std::uint64_t epoch_ms = 1'700'000'000'000;
    EXPECT_EQ(table.set_timestamp(timestamp_of(epoch_ms), 10s, no_save), ok());
    const auto after = table.timestamp(12s + 345ms + 600us);
    EXPECT_EQ(after.milliseconds(), epoch_ms + 2345);
    EXPECT_EQ(after.attributes.raw, 0x02); // origin 001b
    EXPECT_EQ(after.attributes.get(spec::timestamp_attributes::origin), spec::timestamp_origin::set_features);
    EXPECT_FALSE(after.attributes.get(spec::timestamp_attributes::synch));
    EXPECT_EQ(table.timestamp(10s).milliseconds(), epoch_ms);
    EXPECT_EQ(table.timestamp(9s).milliseconds(), epoch_ms);
}

TEST(feature_table, timestamp_wraps_modulo_2_pow_48_and_ignores_reserved_bytes)
{
    feature_table table;
    auto data = timestamp_of(spec::timestamp_data::max_milliseconds - 1);
    data.attributes = spec::timestamp_attributes{0xff};
    data.rsvd7 = 0xff;
    EXPECT_EQ(table.set_timestamp(data, 1s, no_save), ok());
    EXPECT_EQ(table.timestamp(1s).milliseconds(), spec::timestamp_data::max_milliseconds - 1);
    EXPECT_EQ(table.timestamp(1s + 1ms).milliseconds(), spec::timestamp_data::max_milliseconds);
    EXPECT_EQ(table.timestamp(1s + 2ms).milliseconds(), 0U);
    EXPECT_EQ(table.timestamp(1s + 7ms).milliseconds(), 5U);
    EXPECT_EQ(table.timestamp(1s + 7ms).attributes.raw, 0x02);
    EXPECT_EQ(table.timestamp(1s + 7ms).rsvd7, 0);
}

TEST(feature_table, timestamp_is_not_saveable)
{
    feature_table table{{}, 0s};
    EXPECT_EQ(table.set_timestamp(timestamp_of(1000), 1s, save), failed(not_saveable));
    EXPECT_EQ(table.timestamp(2s).attributes.raw, 0x00);
    EXPECT_EQ(table.timestamp(2s).milliseconds(), 2000U);
    EXPECT_EQ(table.set(feature_id::timestamp, 0, save), failed(not_saveable));
    EXPECT_EQ(table.set(feature_id::timestamp, 0, no_save), failed(invalid_field));
}

TEST(feature_table, get_timestamp_fills_the_buffer_by_select)
{
    feature_table table{{}, 1s};
    EXPECT_EQ(table.set_timestamp(timestamp_of(50'000), 2s, no_save), ok());
    spec::timestamp_data out{};
    EXPECT_EQ(table.get_timestamp(current, 3s, out), ok());
    EXPECT_EQ(out.milliseconds(), 51'000U);
    EXPECT_EQ(out.attributes.raw, 0x02);
    EXPECT_EQ(table.get_timestamp(default_value, 3s, out), ok());
    EXPECT_EQ(out.milliseconds(), 2000U);
    EXPECT_EQ(out.attributes.raw, 0x00);
    out = timestamp_of(7);
    EXPECT_EQ(table.get_timestamp(saved, 4s, out), ok());
    EXPECT_EQ(out.milliseconds(), 3000U);
    EXPECT_EQ(out.attributes.raw, 0x00);
    out = timestamp_of(7);
    EXPECT_EQ(table.get_timestamp(capabilities, 4s, out), ok(0b100));
    EXPECT_EQ(out, timestamp_of(7));
    EXPECT_EQ(table.get(feature_id::timestamp, current, 0), ok());
}

TEST(feature_table, controller_reset_restarts_the_timestamp_from_zero)
{
    feature_table table{{}, 0s};
    EXPECT_EQ(table.set_timestamp(timestamp_of(1'000'000), 1s, no_save), ok());
    table.controller_reset(20s);
    const auto stamp = table.timestamp(20s + 250ms);
    EXPECT_EQ(stamp.milliseconds(), 250U);
    EXPECT_EQ(stamp.attributes.raw, 0x00);
}

TEST(feature_table, a_timestamp_kept_across_reset_keeps_its_origin)
{
    feature_table table{{.timestamp_kept_across_reset = true}, 0s};
    table.controller_reset(3s);
    EXPECT_EQ(table.timestamp(4s).milliseconds(), 4000U); // still counted from power on
    EXPECT_EQ(table.set_timestamp(timestamp_of(1'000'000), 5s, no_save), ok());
    table.controller_reset(20s);
    const auto stamp = table.timestamp(21s);
    EXPECT_EQ(stamp.milliseconds(), 1'016'000U);
    EXPECT_EQ(stamp.attributes.raw, 0x02);

    table.power_cycle(30s);
    const auto after_power = table.timestamp(30s + 40ms);
    EXPECT_EQ(after_power.milliseconds(), 40U);
    EXPECT_EQ(after_power.attributes.raw, 0x00);
}

TEST(feature_table, timestamp_unsupported_is_invalid_field)
{
    feature_table table{{.timestamp_supported = false}};
    spec::timestamp_data out = timestamp_of(9);
    EXPECT_EQ(table.set_timestamp(timestamp_of(1), 1s, no_save), failed(invalid_field));
    EXPECT_EQ(table.set_timestamp(timestamp_of(1), 1s, save), failed(invalid_field));
    for (const auto select : {current, default_value, saved, capabilities}) {
        EXPECT_EQ(table.get_timestamp(select, 1s, out), failed(invalid_field));
        EXPECT_EQ(table.get(feature_id::timestamp, select, 0), failed(invalid_field));
    }
    EXPECT_EQ(out, timestamp_of(9));
}

TEST(feature_table, keep_alive_timeout_rounds_up_to_the_granularity)
{
    feature_table table;
    EXPECT_EQ(table.get(feature_id::keep_alive_timer, current, 0), ok(0));
    EXPECT_EQ(table.keep_alive_timeout_ms(), 0U);
    EXPECT_EQ(table.set(feature_id::keep_alive_timer, 1, no_save), ok());
    EXPECT_EQ(table.get(feature_id::keep_alive_timer, current, 0), ok(100));
    EXPECT_EQ(table.set(feature_id::keep_alive_timer, 100, no_save), ok());
    EXPECT_EQ(table.keep_alive_timeout_ms(), 100U);
    EXPECT_EQ(table.set(feature_id::keep_alive_timer, 101, no_save), ok());
    EXPECT_EQ(table.keep_alive_timeout_ms(), 200U);
    EXPECT_EQ(table.set(feature_id::keep_alive_timer, 4'294'967'200U, no_save), ok());
    EXPECT_EQ(table.keep_alive_timeout_ms(), 4'294'967'200U);
    EXPECT_EQ(table.set(feature_id::keep_alive_timer, 4'294'967'201U, no_save), failed(kato_invalid));
    EXPECT_EQ(table.set(feature_id::keep_alive_timer, 0xffff'ffff, no_save), failed(kato_invalid));
    EXPECT_EQ(table.keep_alive_timeout_ms(), 4'294'967'200U);
    EXPECT_EQ(table.set(feature_id::keep_alive_timer, 0, no_save), ok());
    EXPECT_EQ(table.keep_alive_timeout_ms(), 0U);

    feature_table coarse{{.keep_alive_granularity_ms = 1000}};
    EXPECT_EQ(coarse.set(feature_id::keep_alive_timer, 1500, no_save), ok());
    EXPECT_EQ(coarse.get(feature_id::keep_alive_timer, current, 0), ok(2000));
}

TEST(feature_table, keep_alive_timer_is_not_saveable_and_reverts_at_reset)
{
    feature_table table;
    EXPECT_EQ(table.set(feature_id::keep_alive_timer, 5000, save), failed(not_saveable));
    EXPECT_EQ(table.keep_alive_timeout_ms(), 0U);
    EXPECT_EQ(table.set(feature_id::keep_alive_timer, 5000, no_save), ok());
    EXPECT_EQ(table.get(feature_id::keep_alive_timer, saved, 0), ok(0));
    EXPECT_EQ(table.get(feature_id::keep_alive_timer, default_value, 0), ok(0));
    table.controller_reset(0ns);
    EXPECT_EQ(table.keep_alive_timeout_ms(), 0U);
}

TEST(feature_table, keep_alive_required_defaults_to_two_minutes_and_refuses_zero)
{
    feature_table table{{.keep_alive_granularity_ms = 700, .keep_alive_required = true}};
    EXPECT_EQ(table.get(feature_id::keep_alive_timer, default_value, 0), ok(120'400));
    EXPECT_EQ(table.keep_alive_timeout_ms(), 120'400U);
    EXPECT_EQ(table.set(feature_id::keep_alive_timer, 0, no_save), failed(kato_invalid));
    EXPECT_EQ(table.set(feature_id::keep_alive_timer, 1400, no_save), ok());
    EXPECT_EQ(table.keep_alive_timeout_ms(), 1400U);
    table.controller_reset(0ns);
    EXPECT_EQ(table.keep_alive_timeout_ms(), 120'400U);

    const feature_table exact{{.keep_alive_granularity_ms = 100, .keep_alive_required = true}};
    EXPECT_EQ(exact.keep_alive_timeout_ms(), 120'000U);
}

TEST(feature_table, keep_alive_unsupported_is_invalid_field)
{
    feature_table table{{.keep_alive_granularity_ms = 0}};
    for (const auto select : {current, default_value, saved, capabilities}) {
        EXPECT_EQ(table.get(feature_id::keep_alive_timer, select, 0), failed(invalid_field));
    }
    EXPECT_EQ(table.set(feature_id::keep_alive_timer, 100, no_save), failed(invalid_field));
    EXPECT_EQ(table.set(feature_id::keep_alive_timer, 100, save), failed(invalid_field));
}

TEST(feature_table, host_behavior_round_trip_clears_reserved_bytes)
{
    feature_table table;
    EXPECT_EQ(table.host_behavior(), spec::host_behavior_support{});
    spec::host_behavior_support data{};
    data.acre = 1;
    data.etdas = 1;
    data.lbafee = 1;
    data.rsvd3[0] = 0xaa;
    data.rsvd3[508] = 0x55;
    EXPECT_EQ(table.set_host_behavior(data, no_save), ok());
    spec::host_behavior_support expected{};
    expected.acre = 1;
    expected.etdas = 1;
    expected.lbafee = 1;
    EXPECT_EQ(table.host_behavior(), expected);

    spec::host_behavior_support out{};
    out.rsvd3[1] = 0x11;
    EXPECT_EQ(table.get_host_behavior(current, out), ok());
    EXPECT_EQ(out, expected);
    EXPECT_EQ(table.get_host_behavior(default_value, out), ok());
    EXPECT_EQ(out, spec::host_behavior_support{});
    out = expected;
    EXPECT_EQ(table.get_host_behavior(saved, out), ok());
    EXPECT_EQ(out, spec::host_behavior_support{});
    out = expected;
    EXPECT_EQ(table.get_host_behavior(capabilities, out), ok(0b100));
    EXPECT_EQ(out, expected);
    EXPECT_EQ(table.get(feature_id::host_behavior_support, current, 0), ok());

    data.acre = 0;
    data.etdas = 1;
    data.lbafee = 0;
    EXPECT_EQ(table.set_host_behavior(data, no_save), ok());
    EXPECT_EQ(table.host_behavior().acre, 0);
    EXPECT_EQ(table.host_behavior().etdas, 1);
    EXPECT_EQ(table.host_behavior().lbafee, 0);
}

TEST(feature_table, host_behavior_rejects_reserved_values_and_saving)
{
    feature_table table;
    spec::host_behavior_support good{};
    good.acre = 1;
    ASSERT_EQ(table.set_host_behavior(good, no_save), ok());

    for (int field = 0; field < 3; ++field) {
        for (const std::uint8_t value : {std::uint8_t{2}, std::uint8_t{0xff}}) {
            spec::host_behavior_support bad{};
            (field == 0 ? bad.acre : field == 1 ? bad.etdas : bad.lbafee) = value;
            EXPECT_EQ(table.set_host_behavior(bad, no_save), failed(invalid_field)) << field;
        }
    }
    EXPECT_EQ(table.set_host_behavior(spec::host_behavior_support{}, save), failed(not_saveable));
    EXPECT_EQ(table.set(feature_id::host_behavior_support, 0, save), failed(not_saveable));
    EXPECT_EQ(table.set(feature_id::host_behavior_support, 0, no_save), failed(invalid_field));
    EXPECT_EQ(table.host_behavior(), good);

    table.controller_reset(0ns);
    EXPECT_EQ(table.host_behavior(), spec::host_behavior_support{});
}

TEST(feature_table, not_saveable_is_command_specific_0dh_with_dnr)
{
    feature_table table;
    const auto result = table.set(feature_id::keep_alive_timer, 100, save);
    EXPECT_EQ(result.status.type(), spec::status_code_type::command_specific);
    EXPECT_EQ(result.status.code(), 0x0d);
    EXPECT_TRUE(result.status.do_not_retry());
    EXPECT_EQ(result.dw0, 0U);
}

TEST(feature_table, saved_values_survive_a_power_cycle)
{
    feature_table table{{.power_states = 3}};
    EXPECT_EQ(table.set(feature_id::power_management, 2, save), ok());
    EXPECT_EQ(table.set(feature_id::volatile_write_cache, 0, no_save), ok());
    EXPECT_EQ(table.set(feature_id::keep_alive_timer, 300, no_save), ok());
    spec::host_behavior_support behavior{};
    behavior.acre = 1;
    EXPECT_EQ(table.set_host_behavior(behavior, no_save), ok());
    table.power_cycle(0ns);
    EXPECT_EQ(table.power_state(), 2);
    EXPECT_EQ(table.get(feature_id::power_management, saved, 0), ok(2));
    EXPECT_TRUE(table.volatile_write_cache_enabled());
    EXPECT_EQ(table.keep_alive_timeout_ms(), 0U);
    EXPECT_EQ(table.host_behavior(), spec::host_behavior_support{});
}

TEST(feature_table, reset_without_changes_keeps_the_defaults)
{
    feature_table table{{.temperature_sensors = 1}};
    table.controller_reset(0ns);
    EXPECT_EQ(table.get(feature_id::arbitration, current, 0), ok(0x7));
    EXPECT_EQ(table.get(feature_id::power_management, current, 0), ok(0));
    EXPECT_EQ(table.get(feature_id::temperature_threshold, current, threshold(0, 0, over)),
              ok(threshold(343, 0, over)));
    EXPECT_EQ(table.get(feature_id::error_recovery, current, 0), ok(0));
    EXPECT_EQ(table.get(feature_id::volatile_write_cache, current, 0), ok(1));
    EXPECT_EQ(table.get(feature_id::write_atomicity_normal, current, 0), ok(0));
    EXPECT_EQ(table.get(feature_id::async_event_configuration, current, 0), ok(0));
    EXPECT_EQ(table.get(feature_id::keep_alive_timer, current, 0), ok(0));
}
