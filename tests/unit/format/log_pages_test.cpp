#include <nvmekit/format/log_pages.hpp>

#include <array>
#include <bit>
#include <cstdint>
#include <limits>
#include <string>

#include <gtest/gtest.h>

#include "../wire_bytes.hpp"

namespace spec = nvmekit::spec;
using nvmekit_test::zeroed;

TEST(format_log_pages, log_page_id_prints_name_and_number)
{
    EXPECT_EQ(fmt::format("{}", spec::log_page_id::smart_health), "SMART / Health Information (0x02)");
    EXPECT_EQ(fmt::format("{}", spec::log_page_id::changed_namespace_list), "Changed Namespace List (0x04)");
    EXPECT_EQ(fmt::format("{}", static_cast<spec::log_page_id>(0xc0)), "Vendor Specific (0xc0)");
    EXPECT_EQ(fmt::format("{}", static_cast<spec::log_page_id>(0x20)), "Reserved (0x20)");
}

TEST(format_log_pages, error_information_entry_prints_the_failed_command)
{
    auto entry = zeroed<spec::error_information_entry>();
    entry.error_count = 3;
    entry.sqid = 1;
    entry.cid = 0x12;
    entry.set_status(spec::status{spec::generic_status::invalid_field}.with_dnr(), true);
    entry.lba = 0x10;
    entry.nsid = 1;
    EXPECT_EQ(fmt::format("{}", entry),
              "error_count=3 sqid=1 cid=0x12 status=Generic/Invalid Field (0x02) [DNR] lba=0x10 nsid=1");
}

TEST(format_log_pages, parameter_error_location_prints_byte_and_bit)
{
    EXPECT_EQ(fmt::format("{}", spec::parameter_error_location::at(40, 2)), "byte 40 bit 2");
    EXPECT_EQ(fmt::format("{}", spec::parameter_error_location::not_applicable()), "n/a");
}

TEST(format_log_pages, critical_warnings_print_raw_byte_and_set_bits)
{
    EXPECT_EQ(fmt::format("{}", spec::smart_critical_warning{}), "0x00");
    EXPECT_EQ(fmt::format("{}", spec::smart_critical_warning{0x09}),
              "0x09 [spare_below_threshold read_only]");
    EXPECT_EQ(fmt::format("{}", spec::smart_critical_warning{0x72}),
              "0x72 [temperature volatile_backup_failed pmr_read_only reserved]");
    EXPECT_EQ(fmt::format("{}", spec::endurance_group_critical_warning{0x04}), "0x04 [reliability_degraded]");
}

TEST(format_log_pages, counters_print_all_128_bits_in_decimal)
{
    spec::uint128_le counter{};
    counter.set(1234);
    EXPECT_EQ(fmt::format("{}", counter), "1234");
    counter.set(0, 1);
    EXPECT_EQ(fmt::format("{}", counter), "18446744073709551616");
    counter.set(std::numeric_limits<std::uint64_t>::max(), std::numeric_limits<std::uint64_t>::max());
    EXPECT_EQ(fmt::format("{}", counter), "340282366920938463463374607431768211455");
    counter.set(0);
    EXPECT_EQ(fmt::format("{}", counter), "0");
}

TEST(format_log_pages, smart_health_log_prints_a_smart_log_summary)
{
    auto log = zeroed<spec::smart_health_log>();
    log.critical_warning = spec::smart_critical_warning{0x01};
    log.set_composite_temperature_kelvin(308);
    log.available_spare = 100;
    log.available_spare_threshold = 10;
    log.percentage_used = 3;
    log.data_units_read.set(1234);
    log.data_units_written.set(5678);
    log.host_read_commands.set(100);
    log.host_write_commands.set(200);
    log.controller_busy_time.set(7);
    log.power_cycles.set(12);
    log.power_on_hours.set(42);
    log.unsafe_shutdowns.set(2);
    log.media_errors.set(1);
    log.error_log_entries.set(3);
    log.warning_temperature_time = 5;
    log.temperature_sensors[1] = 310;
    log.thermal_management_temp2_total_time = 9;
    EXPECT_EQ(fmt::format("{}", log), "critical_warning            : 0x01 [spare_below_threshold]\n"
                                      "temperature                 : 308 K (35 C)\n"
                                      "available_spare             : 100%\n"
                                      "available_spare_threshold   : 10%\n"
                                      "percentage_used             : 3%\n"
                                      "endurance_group_warning     : 0x00\n"
                                      "data_units_read             : 1234\n"
                                      "data_units_written          : 5678\n"
                                      "host_read_commands          : 100\n"
                                      "host_write_commands         : 200\n"
                                      "controller_busy_time        : 7\n"
                                      "power_cycles                : 12\n"
                                      "power_on_hours              : 42\n"
                                      "unsafe_shutdowns            : 2\n"
                                      "media_errors                : 1\n"
                                      "num_err_log_entries         : 3\n"
                                      "warning_temperature_time    : 5\n"
                                      "critical_temperature_time   : 0\n"
                                      "temperature_sensor_2        : 310 K (37 C)\n"
                                      "thermal_mgmt_t1_transitions : 0\n"
                                      "thermal_mgmt_t2_transitions : 0\n"
                                      "thermal_mgmt_t1_total_time  : 0\n"
                                      "thermal_mgmt_t2_total_time  : 9");
}

TEST(format_log_pages, smart_health_log_prints_temperatures_below_freezing)
{
    auto log = zeroed<spec::smart_health_log>();
    log.set_composite_temperature_kelvin(263);
    EXPECT_NE(fmt::format("{}", log).find("temperature                 : 263 K (-10 C)\n"),
              std::string::npos);
}

TEST(format_log_pages, firmware_slot_log_prints_afi_and_filled_slots)
{
    auto log = zeroed<spec::firmware_slot_log>();
    log.afi = spec::active_firmware_info{0x21};
    ASSERT_TRUE(log.set_revision(1, "1.0"));
    ASSERT_TRUE(log.set_revision(3, "2.1b"));
    EXPECT_EQ(fmt::format("{}", log), "active_slot=1 next_slot=2 frs1=1.0 frs3=2.1b");
}

TEST(format_log_pages, changed_namespace_list_prints_nsids_or_overflow)
{
    auto list = zeroed<spec::changed_namespace_list>();
    EXPECT_EQ(fmt::format("{}", list), "nsids=[]");
    list.nsids[0] = 1;
    list.nsids[1] = 3;
    EXPECT_EQ(fmt::format("{}", list), "nsids=[1, 3]");
    list.nsids[0] = spec::changed_namespace_list::overflow_marker;
    list.nsids[1] = 0;
    EXPECT_EQ(fmt::format("{}", list), "nsids=[more than 1024]");
}

TEST(format_log_pages, command_effects_print_set_flags)
{
    EXPECT_EQ(fmt::format("{}", spec::command_effects{}), "none");
    EXPECT_EQ(fmt::format("{}", spec::command_effects{0x00090003}), "CSUPP LBCC CSE=1 USS");
    EXPECT_EQ(fmt::format("{}", spec::command_effects{0x0000001d}), "CSUPP NCC NIC CCC");
    EXPECT_EQ(fmt::format("{}", spec::command_effects{0x00020000}), "CSE=2");
}

TEST(format_log_pages, command_submission_execution_prints_the_restriction)
{
    EXPECT_EQ(fmt::format("{}", spec::command_submission_execution::no_restriction), "no_restriction");
    EXPECT_EQ(fmt::format("{}", spec::command_submission_execution::same_namespace_exclusive),
              "same_namespace_exclusive");
    EXPECT_EQ(fmt::format("{}", spec::command_submission_execution::any_namespace_exclusive),
              "any_namespace_exclusive");
    EXPECT_EQ(fmt::format("{}", static_cast<spec::command_submission_execution>(0b011)), "0x3");
    EXPECT_EQ(fmt::format("{}", spec::command_effects{0x00020001}.get(spec::command_effects::cse)),
              "any_namespace_exclusive");
}

TEST(format_log_pages, commands_supported_and_effects_lists_nonzero_entries)
{
    auto log = zeroed<spec::commands_supported_and_effects>();
    EXPECT_EQ(fmt::format("{}", log), "none");
    log.admin_commands[0x06] = spec::command_effects{0x1};
    log.admin_commands[0xc5] = spec::command_effects{0x1};
    log.io_commands[0x01] = spec::command_effects{0x3};
    EXPECT_EQ(fmt::format("{}", log), "admin 0x06 IDENTIFY: CSUPP\n"
                                      "admin 0xc5: CSUPP\n"
                                      "io 0x01: CSUPP LBCC");
}

TEST(format_log_pages, telemetry_header_prints_areas_and_generations)
{
    auto header = zeroed<spec::telemetry_log_header>();
    header.log_identifier = 0x07;
    header.ieee_oui = {0x21, 0x1b, 0x00};
    header.data_area1_last_block = 8;
    header.data_area2_last_block = 16;
    header.data_area3_last_block = 32;
    header.host_data_generation_number = 1;
    EXPECT_EQ(fmt::format("{}", header),
              "lid=0x07 oui=001b21 da1=8 da2=16 da3=32 da4=0 host_gen=1 ctrl_avail=0 ctrl_gen=0");
}

TEST(format_log_pages, async_event_completion_prints_type_event_and_log)
{
    EXPECT_EQ(fmt::format("{}", spec::async_event_completion{spec::notice_event::namespace_attribute_changed,
                                                             spec::log_page_id::changed_namespace_list}),
              "Notice/Namespace Attribute Changed (0x00) log=Changed Namespace List (0x04)");
    EXPECT_EQ(fmt::format("{}", spec::async_event_completion{spec::error_event::invalid_doorbell_value}),
              "Error/Invalid Doorbell Write Value (0x01) log=Error Information (0x01)");
    EXPECT_EQ(fmt::format("{}", spec::async_event_completion{spec::async_event_type::vendor_specific, 0x80,
                                                             static_cast<spec::log_page_id>(0xc1)}),
              "Vendor Specific (0x80) log=Vendor Specific (0xc1)");
    EXPECT_EQ(fmt::format("{}", spec::async_event_type::smart_health), "SMART / Health");
}

TEST(format_log_pages, event_information_enums_print_names)
{
    EXPECT_EQ(fmt::format("{}", spec::notice_event::telemetry_log_changed), "Telemetry Log Changed");
    EXPECT_EQ(fmt::format("{}", spec::smart_health_event::spare_below_threshold), "Spare Below Threshold");
    EXPECT_EQ(fmt::format("{}", spec::immediate_event::normal_subsystem_shutdown),
              "Normal NVM Subsystem Shutdown");
    EXPECT_EQ(fmt::format("{}", static_cast<spec::error_event>(0x07)), "Reserved (0x07)");
}

TEST(format_log_pages, lba_status_information_prints_header_elements_and_ranges)
{
    EXPECT_EQ(fmt::format("{}",
                          spec::lba_status_log_header{
                              .lslplen = 48, .nlslne = 1, .estulb = 8, .rsvd12 = {}, .lsgc = 2}),
              "lslplen=48 nlslne=1 estulb=8 lsgc=2");
    EXPECT_EQ(fmt::format("{}",
                          spec::lba_status_namespace_element{
                              .neid = 1, .nlrd = 2, .ratype = spec::lba_status_action::tracked, .rsvd9 = {}}),
              "neid=1 nlrd=2 ratype=tracked");
    EXPECT_EQ(fmt::format("{}", spec::lba_range_descriptor{.rslba = 0x10, .rnlb = 8, .rsvd12 = {}}),
              "rslba=0x10 rnlb=8");
    EXPECT_EQ(fmt::format("{}", static_cast<spec::lba_status_action>(0x12)), "Reserved (0x12)");
}
