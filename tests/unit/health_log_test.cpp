#include <nvmekit/state/health_log.hpp>

#include <array>
#include <bit>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>

#include <gtest/gtest.h>

namespace spec = nvmekit::spec;
using nvmekit::data_units;
using nvmekit::health_conditions;
using nvmekit::health_log;
using nvmekit::units_512;
using namespace std::chrono_literals;

namespace {

constexpr std::uint16_t over = 343;  // 70 C
constexpr std::uint16_t under = 273; // 0 C

std::uint64_t u64_at(const std::array<std::byte, 512>& bytes, std::size_t offset)
{
    std::uint64_t value = 0;
    std::memcpy(&value, bytes.data() + offset, sizeof value);
    return value;
}

} // namespace

TEST(health_counters, data_units_are_thousands_of_512_byte_units_rounded_up)
{
    EXPECT_EQ(data_units(0), 0U);
    EXPECT_EQ(data_units(1), 1U);
    EXPECT_EQ(data_units(1000), 1U);
    EXPECT_EQ(data_units(1001), 2U);
    EXPECT_EQ(data_units(2001), 3U);
    EXPECT_EQ(data_units(3000), 3U);
    EXPECT_EQ(units_512(0), 0U);
    EXPECT_EQ(units_512(1), 1U);
    EXPECT_EQ(units_512(512), 1U);
    EXPECT_EQ(units_512(513), 2U);
    EXPECT_EQ(units_512(4096), 8U);
}

TEST(health_log, a_fresh_log_reports_defaults)
{
    const health_log health;
    const spec::smart_health_log log = health.build(0ns, over, under);
    EXPECT_EQ(log.critical_warning.raw, 0U);
    EXPECT_EQ(log.composite_temperature_kelvin(), 308U);
    EXPECT_EQ(log.available_spare, 100U);
    EXPECT_EQ(log.available_spare_threshold, 10U);
    EXPECT_EQ(log.percentage_used, 0U);
    EXPECT_EQ(log.endurance_group_warning_summary.raw, 0U);
    EXPECT_EQ(log.data_units_read, spec::uint128_le{});
    EXPECT_EQ(log.power_on_hours, spec::uint128_le{});
    EXPECT_EQ(log.temperature_sensors, (std::array<std::uint16_t, 8>{}));
    const auto bytes = std::bit_cast<std::array<std::byte, 512>>(log);
    EXPECT_EQ(bytes[1], std::byte{0x34}); // 308 = 0134h, little-endian at bytes 02:01
    EXPECT_EQ(bytes[2], std::byte{0x01});
}

TEST(health_log, reads_and_writes_count_commands_and_data_units)
{
    health_log health;
    health.record_read(512);         // 1 unit
    health.record_read(1);           // rounds up to 1 unit
    health.record_write(4096 * 250); // 2000 units
    health.record_write(512);        // 1 unit
    health.record_write(0);          // Write Uncorrectable: no data
    EXPECT_EQ(health.counters().read_512_units, 2U);
    EXPECT_EQ(health.counters().written_512_units, 2001U);
    const auto log = health.build(0ns, over, under);
    EXPECT_EQ(log.host_read_commands.low(), 2U);
    EXPECT_EQ(log.host_write_commands.low(), 3U);
    EXPECT_EQ(log.data_units_read.low(), 1U);
    EXPECT_EQ(log.data_units_written.low(), 3U);
    EXPECT_EQ(log.data_units_written.high(), 0U);
    const auto bytes = std::bit_cast<std::array<std::byte, 512>>(log);
    EXPECT_EQ(u64_at(bytes, 32), 1U);
    EXPECT_EQ(u64_at(bytes, 48), 3U);
    EXPECT_EQ(u64_at(bytes, 64), 2U);
    EXPECT_EQ(u64_at(bytes, 80), 3U);
}

TEST(health_log, times_round_down_to_minutes_and_hours)
{
    health_log health;
    health.add_busy_time(59s);
    EXPECT_EQ(health.build(0ns, over, under).controller_busy_time.low(), 0U);
    health.add_busy_time(61s);
    EXPECT_EQ(health.build(0ns, over, under).controller_busy_time.low(), 2U);
    EXPECT_EQ(health.build(59min + 59s, over, under).power_on_hours.low(), 0U);
    EXPECT_EQ(health.build(1h, over, under).power_on_hours.low(), 1U);
    EXPECT_EQ(health.build(1000h + 30min, over, under).power_on_hours.low(), 1000U);
    EXPECT_EQ(health.build(-5h, over, under).power_on_hours.low(), 0U);
    const auto bytes = std::bit_cast<std::array<std::byte, 512>>(health.build(26h, over, under));
    EXPECT_EQ(u64_at(bytes, 128), 26U);
    EXPECT_EQ(u64_at(bytes, 96), 2U);
}

TEST(health_log, power_cycles_unsafe_shutdowns_media_and_error_entries)
{
    health_log health;
    health.record_power_on(false);
    health.record_power_on(true);
    health.record_power_on(true);
    health.record_media_error();
    health.record_error_log_entry();
    health.record_error_log_entry();
    const auto bytes = std::bit_cast<std::array<std::byte, 512>>(health.build(0ns, over, under));
    EXPECT_EQ(u64_at(bytes, 112), 3U); // power cycles
    EXPECT_EQ(u64_at(bytes, 144), 2U); // unsafe shutdowns
    EXPECT_EQ(u64_at(bytes, 160), 1U); // media errors
    EXPECT_EQ(u64_at(bytes, 176), 2U); // error information log entries
}

TEST(health_log, counters_carry_into_the_high_64_bits)
{
    health_log health;
    health.counters().host_read_commands = 0xffff'ffff'ffff'ffffULL;
    const auto log = health.build(0ns, over, under);
    EXPECT_EQ(log.host_read_commands.low(), 0xffff'ffff'ffff'ffffULL);
    EXPECT_EQ(log.host_read_commands.high(), 0U);
}

TEST(health_log, temperature_bit_set_at_or_above_over_and_at_or_below_under)
{
    health_log health;
    health.set_composite_temperature(over - 1);
    EXPECT_EQ(health.build(0ns, over, under).critical_warning.raw, 0x00U);
    health.set_composite_temperature(over);
    EXPECT_EQ(health.build(0ns, over, under).critical_warning.raw, 0x02U);
    health.set_composite_temperature(under + 1);
    EXPECT_EQ(health.build(0ns, over, under).critical_warning.raw, 0x00U);
    health.set_composite_temperature(under);
    EXPECT_EQ(health.build(0ns, over, under).critical_warning.raw, 0x02U);
    EXPECT_EQ(health.build(0ns, over, under).composite_temperature_kelvin(), under);
}

TEST(health_log, conditions_and_wear_set_their_warning_bits)
{
    health_log health;
    EXPECT_EQ(health.build(0ns, over, under, health_conditions{.read_only = true}).critical_warning.raw,
              0x08U);
    EXPECT_EQ(
        health.build(0ns, over, under, health_conditions{.reliability_degraded = true}).critical_warning.raw,
        0x04U);
    EXPECT_EQ(health.build(0ns, over, under, health_conditions{.volatile_backup_failed = true})
                  .critical_warning.raw,
              0x10U);
    EXPECT_EQ(health.build(0ns, over, under, health_conditions{.pmr_read_only = true}).critical_warning.raw,
              0x20U);
    health.set_wear(9, 10, 120);
    const auto log = health.build(0ns, over, under);
    EXPECT_EQ(log.critical_warning.raw, 0x01U);
    EXPECT_EQ(log.available_spare, 9U);
    EXPECT_EQ(log.available_spare_threshold, 10U);
    EXPECT_EQ(log.percentage_used, 120U);
    health.set_wear(10, 10, 0);
    EXPECT_EQ(health.build(0ns, over, under).critical_warning.raw, 0x00U);
}

TEST(health_log, temperature_event_fires_once_per_crossing)
{
    health_log health;
    EXPECT_EQ(health.evaluate_temperature(over, under), std::nullopt);
    health.set_composite_temperature(over + 5);
    EXPECT_EQ(health.evaluate_temperature(over, under), spec::smart_health_event::temperature_threshold);
    EXPECT_EQ(health.evaluate_temperature(over, under), std::nullopt);
    health.set_composite_temperature(over + 10);
    EXPECT_EQ(health.evaluate_temperature(over, under), std::nullopt);
    health.set_composite_temperature(over - 1);
    EXPECT_EQ(health.evaluate_temperature(over, under), std::nullopt);
    health.set_composite_temperature(under);
    EXPECT_EQ(health.evaluate_temperature(over, under), spec::smart_health_event::temperature_threshold);
    EXPECT_EQ(health.evaluate_temperature(over, under), std::nullopt);
}

TEST(health_log, lowering_the_threshold_is_a_new_crossing)
{
    health_log health{330};
    EXPECT_EQ(health.evaluate_temperature(over, under), std::nullopt);
    EXPECT_EQ(health.evaluate_temperature(330, under), spec::smart_health_event::temperature_threshold);
    const auto event = spec::async_event_completion{spec::smart_health_event::temperature_threshold};
    EXPECT_EQ(event.raw, 0x00020101U); // type 1h, information 01h, log 02h
}

TEST(health_log, temperature_time_accrues_by_threshold_band)
{
    health_log health{340};
    constexpr std::uint16_t wctemp = 343;
    constexpr std::uint16_t cctemp = 353;
    health.account_temperature_time(10min, wctemp, cctemp);
    health.set_composite_temperature(wctemp);
    health.account_temperature_time(3min + 59s, wctemp, cctemp);
    health.set_composite_temperature(cctemp);
    health.account_temperature_time(2min, wctemp, cctemp);
    health.account_temperature_time(2min, 0, cctemp);
    auto log = health.build(0ns, over, under);
    EXPECT_EQ(log.warning_temperature_time, 3U);
    EXPECT_EQ(log.critical_temperature_time, 4U);
    health.set_composite_temperature(wctemp);
    health.account_temperature_time(5min, 0, cctemp);
    health.account_temperature_time(5min, wctemp, 0);
    log = health.build(0ns, over, under);
    EXPECT_EQ(log.warning_temperature_time, 3U);
    EXPECT_EQ(log.critical_temperature_time, 4U);
    const auto bytes = std::bit_cast<std::array<std::byte, 512>>(log);
    EXPECT_EQ(bytes[192], std::byte{3});
    EXPECT_EQ(bytes[196], std::byte{4});
}

TEST(health_log, sensors_are_reported_in_kelvin)
{
    health_log health;
    health.set_sensor_temperature(1, 300);
    health.set_sensor_temperature(8, 310);
    EXPECT_EQ(health.sensor_temperature(1), 300U);
    const auto log = health.build(0ns, over, under);
    EXPECT_EQ(log.temperature_sensors, (std::array<std::uint16_t, 8>{300, 0, 0, 0, 0, 0, 0, 310}));
    const auto bytes = std::bit_cast<std::array<std::byte, 512>>(log);
    EXPECT_EQ(bytes[200], std::byte{0x2c}); // 300 = 012Ch
    EXPECT_EQ(bytes[201], std::byte{0x01});
    EXPECT_EQ(bytes[214], std::byte{0x36}); // 310 = 0136h
}
