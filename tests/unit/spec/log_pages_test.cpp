#include <nvmekit/spec/log_pages.hpp>

#include <array>
#include <bit>
#include <cstdint>
#include <limits>

#include <gtest/gtest.h>

#include "../wire_bytes.hpp"

namespace spec = nvmekit::spec;
using nvmekit_test::bytes_of;
using nvmekit_test::le_at;
using nvmekit_test::zeroed;

TEST(log_page_id, names_the_pages_and_leaves_reserved_and_vendor_ids_unnamed)
{
    EXPECT_EQ(spec::name(spec::log_page_id::smart_health), "SMART / Health Information");
    EXPECT_EQ(spec::name(spec::log_page_id::commands_supported_and_effects),
              "Commands Supported and Effects");
    EXPECT_EQ(spec::name(spec::log_page_id::sanitize_status), "Sanitize Status");
    EXPECT_EQ(static_cast<unsigned>(spec::log_page_id::telemetry_controller_initiated), 0x08U);
    EXPECT_EQ(static_cast<unsigned>(spec::log_page_id::persistent_event), 0x0dU);
    EXPECT_EQ(static_cast<unsigned>(spec::log_page_id::discovery), 0x70U);
    EXPECT_EQ(static_cast<unsigned>(spec::log_page_id::reservation_notification), 0x80U);
    for (unsigned id = 0x00; id <= 0x16; ++id) {
        EXPECT_FALSE(spec::name(static_cast<spec::log_page_id>(id)).empty()) << id;
    }
    EXPECT_TRUE(spec::name(static_cast<spec::log_page_id>(0x17)).empty());
    EXPECT_TRUE(spec::name(static_cast<spec::log_page_id>(0xc0)).empty());
    EXPECT_TRUE(spec::is_vendor_specific(static_cast<spec::log_page_id>(0xc0)));
    EXPECT_FALSE(spec::is_vendor_specific(spec::log_page_id::sanitize_status));
}

TEST(error_information_entry, status_field_holds_phase_in_bit_0_and_status_above)
{
    auto entry = zeroed<spec::error_information_entry>();
    const spec::status failed = spec::status{spec::generic_status::invalid_field}.with_dnr();
    entry.set_status(failed, true);
    EXPECT_EQ(entry.status_field, 0x8005U); // DNR bit 14 -> 15, SC 02h -> bits 08:01, phase 1
    EXPECT_EQ(entry.status(), failed);
    EXPECT_TRUE(entry.phase());
    entry.set_status(failed, false);
    EXPECT_EQ(entry.status_field, 0x8004U);
    EXPECT_FALSE(entry.phase());
}

TEST(error_information_entry, fields_land_at_their_spec_bytes)
{
    auto entry = zeroed<spec::error_information_entry>();
    entry.error_count = 0x0102030405060708ULL;
    entry.sqid = 0x1112;
    entry.cid = 0x2122;
    entry.set_status(spec::status{spec::media_status::unrecovered_read_error}, true);
    entry.error_location = spec::parameter_error_location::at(40, 2);
    entry.lba = 0x3132333435363738ULL;
    entry.nsid = 0x41424344;
    entry.vendor_specific_log_page = 0xc1;
    entry.transport_type = 3;
    entry.command_specific_information = 0x5152535455565758ULL;
    entry.transport_specific_information = 0x6162;

    const auto raw = bytes_of(entry);
    EXPECT_EQ(raw[0], 0x08);
    EXPECT_EQ(raw[7], 0x01);
    EXPECT_EQ(raw[8], 0x12);
    EXPECT_EQ(raw[9], 0x11);
    EXPECT_EQ(raw[10], 0x22);
    EXPECT_EQ(raw[12], 0x03); // SC 81h << 1 | phase: low byte 0x03
    EXPECT_EQ(raw[13], 0x05); // SCT 2h at status bits 10:08 -> field bits 11:09
    EXPECT_EQ(raw[14], 40);   // byte in command
    EXPECT_EQ(raw[15], 2);    // bit in command
    EXPECT_EQ(raw[16], 0x38);
    EXPECT_EQ(raw[24], 0x44);
    EXPECT_EQ(raw[28], 0xc1);
    EXPECT_EQ(raw[29], 3);
    EXPECT_EQ(raw[32], 0x58);
    EXPECT_EQ(raw[39], 0x51);
    EXPECT_EQ(raw[40], 0x62);
    EXPECT_EQ(raw[41], 0x61);
    for (std::size_t i = 42; i < raw.size(); ++i) {
        EXPECT_EQ(raw[i], 0) << i;
    }
}

TEST(parameter_error_location, packs_byte_and_bit_and_has_a_not_applicable_value)
{
    const auto location = spec::parameter_error_location::at(0x2c, 5);
    EXPECT_EQ(location.raw, 0x052cU);
    EXPECT_EQ(location.get(spec::parameter_error_location::byte_offset), 0x2c);
    EXPECT_EQ(location.get(spec::parameter_error_location::bit), 5);
    EXPECT_EQ(spec::parameter_error_location::not_applicable().raw, 0xffffU);
}

TEST(smart_health_log, critical_warning_bits_follow_the_spec)
{
    spec::smart_critical_warning warning{};
    warning.set(spec::smart_critical_warning::spare_below_threshold, true)
        .set(spec::smart_critical_warning::read_only, true);
    EXPECT_EQ(warning.raw, 0x09U);
    EXPECT_EQ(spec::smart_critical_warning{}.with(spec::smart_critical_warning::temperature, true).raw,
              0x02U);
    EXPECT_EQ(
        spec::smart_critical_warning{}.with(spec::smart_critical_warning::reliability_degraded, true).raw,
        0x04U);
    EXPECT_EQ(
        spec::smart_critical_warning{}.with(spec::smart_critical_warning::volatile_backup_failed, true).raw,
        0x10U);
    EXPECT_EQ(spec::smart_critical_warning{}.with(spec::smart_critical_warning::pmr_read_only, true).raw,
              0x20U);

    spec::endurance_group_critical_warning summary{};
    summary.set(spec::endurance_group_critical_warning::reliability_degraded, true)
        .set(spec::endurance_group_critical_warning::read_only, true);
    EXPECT_EQ(summary.raw, 0x0cU);
}

TEST(smart_health_log, composite_temperature_is_little_endian_at_bytes_1_and_2)
{
    auto log = zeroed<spec::smart_health_log>();
    log.set_composite_temperature_kelvin(0x0134); // 308 K
    log.critical_warning = spec::smart_critical_warning{0x01};
    log.available_spare = 100;
    log.available_spare_threshold = 10;
    log.percentage_used = 3;
    log.endurance_group_warning_summary = spec::endurance_group_critical_warning{0x04};
    const auto raw = bytes_of(log);
    EXPECT_EQ(raw[0], 0x01);
    EXPECT_EQ(raw[1], 0x34);
    EXPECT_EQ(raw[2], 0x01);
    EXPECT_EQ(raw[3], 100);
    EXPECT_EQ(raw[4], 10);
    EXPECT_EQ(raw[5], 3);
    EXPECT_EQ(raw[6], 0x04);
    EXPECT_EQ(log.composite_temperature_kelvin(), 308);
}

TEST(smart_health_log, counters_are_128_bit_little_endian_and_carry)
{
    auto log = zeroed<spec::smart_health_log>();
    log.power_on_hours.set(std::numeric_limits<std::uint64_t>::max());
    log.power_on_hours.add(2);
    EXPECT_EQ(log.power_on_hours.low(), 1U);
    EXPECT_EQ(log.power_on_hours.high(), 1U);

    log.data_units_read.set(0x0807060504030201ULL, 0x100f0e0d0c0b0a09ULL);
    log.error_log_entries.add(5);
    log.error_log_entries.add(7);
    const auto raw = bytes_of(log);
    for (std::size_t i = 0; i < 16; ++i) {
        EXPECT_EQ(raw[32 + i], i + 1) << i;
    }
    EXPECT_EQ(raw[128], 1);     // power on hours low byte
    EXPECT_EQ(raw[128 + 8], 1); // power on hours bit 64
    EXPECT_EQ(raw[176], 12);    // number of error information log entries
    EXPECT_EQ(log.error_log_entries.high(), 0U);
}

TEST(smart_health_log, temperature_times_sensors_and_thermal_counts_sit_at_their_offsets)
{
    auto log = zeroed<spec::smart_health_log>();
    log.warning_temperature_time = 0x11223344;
    log.critical_temperature_time = 0x55667788;
    log.temperature_sensors[0] = 0x0140;
    log.temperature_sensors[7] = 0x0150;
    log.thermal_management_temp1_transitions = 1;
    log.thermal_management_temp2_transitions = 2;
    log.thermal_management_temp1_total_time = 3;
    log.thermal_management_temp2_total_time = 4;
    const auto raw = bytes_of(log);
    EXPECT_EQ(le_at<std::uint32_t>(raw, 192), 0x11223344U);
    EXPECT_EQ(le_at<std::uint32_t>(raw, 196), 0x55667788U);
    EXPECT_EQ(raw[200], 0x40);
    EXPECT_EQ(raw[201], 0x01);
    EXPECT_EQ(raw[214], 0x50);
    EXPECT_EQ(le_at<std::uint32_t>(raw, 216), 1U);
    EXPECT_EQ(le_at<std::uint32_t>(raw, 220), 2U);
    EXPECT_EQ(le_at<std::uint32_t>(raw, 224), 3U);
    EXPECT_EQ(le_at<std::uint32_t>(raw, 228), 4U);
}

TEST(firmware_slot_log, afi_packs_active_and_next_slot)
{
    const auto afi = spec::active_firmware_info{}
                         .with(spec::active_firmware_info::active_slot, 1)
                         .with(spec::active_firmware_info::next_slot, 2);
    EXPECT_EQ(afi.raw, 0x21U);
}

TEST(firmware_slot_log, revisions_are_space_padded_and_empty_slots_zeroed)
{
    auto log = zeroed<spec::firmware_slot_log>();
    EXPECT_TRUE(log.set_revision(1, "1.0"));
    EXPECT_TRUE(log.set_revision(7, "ABCDEFGH"));
    EXPECT_FALSE(log.set_revision(2, "123456789"));
    EXPECT_EQ(log.revision(1), "1.0");
    EXPECT_EQ(log.revision(7), "ABCDEFGH");
    EXPECT_EQ(log.revision(2), "");

    const auto raw = bytes_of(log);
    EXPECT_EQ(raw[8], '1');
    EXPECT_EQ(raw[10], '0');
    EXPECT_EQ(raw[11], ' ');
    EXPECT_EQ(raw[15], ' ');
    EXPECT_EQ(raw[16], 0); // slot 2 untouched
    EXPECT_EQ(raw[56], 'A');
    EXPECT_EQ(raw[63], 'H');

    EXPECT_TRUE(log.set_revision(1, ""));
    for (std::size_t i = 8; i < 16; ++i) {
        EXPECT_EQ(bytes_of(log)[i], 0) << i;
    }
}

TEST(firmware_slot_log, revision_trims_nul_padding)
{
    auto log = zeroed<spec::firmware_slot_log>();
    log.revisions[2] = {'F', 'W', '2', '\0', '\0', '\0', '\0', '\0'};
    EXPECT_EQ(log.revision(3), "FW2");
}

TEST(changed_namespace_list, counts_entries_up_to_the_first_zero_and_detects_overflow)
{
    auto list = zeroed<spec::changed_namespace_list>();
    EXPECT_EQ(list.count(), 0U);
    list.nsids[0] = 1;
    list.nsids[1] = 7;
    EXPECT_EQ(list.count(), 2U);
    EXPECT_FALSE(list.overflowed());
    list.nsids.fill(5);
    EXPECT_EQ(list.count(), 1024U);
    list = zeroed<spec::changed_namespace_list>();
    list.nsids[0] = 0xffffffff;
    EXPECT_TRUE(list.overflowed());
    EXPECT_EQ(list.count(), 0U);
}

TEST(commands_supported_and_effects, effects_word_bits_follow_the_spec)
{
    const auto effects =
        spec::command_effects{}
            .with(spec::command_effects::csupp, true)
            .with(spec::command_effects::lbcc, true)
            .with(spec::command_effects::cse, spec::command_submission_execution::same_namespace_exclusive)
            .with(spec::command_effects::uss, true);
    EXPECT_EQ(effects.raw, 0x00090003U);
    EXPECT_EQ(spec::command_effects{}.with(spec::command_effects::ncc, true).raw, 0x4U);
    EXPECT_EQ(spec::command_effects{}.with(spec::command_effects::nic, true).raw, 0x8U);
    EXPECT_EQ(spec::command_effects{}.with(spec::command_effects::ccc, true).raw, 0x10U);
    EXPECT_EQ(
        spec::command_effects{}
            .with(spec::command_effects::cse, spec::command_submission_execution::any_namespace_exclusive)
            .raw,
        0x00020000U);
}

TEST(commands_supported_and_effects, admin_and_io_entries_are_indexed_by_opcode)
{
    auto log = zeroed<spec::commands_supported_and_effects>();
    log.admin_commands[0x06] = spec::command_effects{0x1};
    log.io_commands[0x01] = spec::command_effects{0x3};
    const auto raw = bytes_of(log);
    EXPECT_EQ(le_at<std::uint32_t>(raw, 4 * 0x06), 0x1U);
    EXPECT_EQ(le_at<std::uint32_t>(raw, 1024 + 4 * 0x01), 0x3U);
}

TEST(telemetry_log_header, data_area_limits_and_generation_numbers_sit_at_their_offsets)
{
    auto header = zeroed<spec::telemetry_log_header>();
    header.log_identifier = 0x07;
    header.ieee_oui = {0x21, 0x1b, 0x00};
    header.data_area1_last_block = 0x0102;
    header.data_area2_last_block = 0x0304;
    header.data_area3_last_block = 0x0506;
    header.data_area4_last_block = 0x0708090a;
    header.host_data_generation_number = 0xa1;
    header.controller_data_available = 1;
    header.controller_data_generation_number = 0xa3;
    header.reason_identifier[0] = 0xb0;
    header.reason_identifier[127] = 0xbf;
    const auto raw = bytes_of(header);
    EXPECT_EQ(raw[0], 0x07);
    EXPECT_EQ(raw[5], 0x21);
    EXPECT_EQ(raw[8], 0x02);
    EXPECT_EQ(raw[10], 0x04);
    EXPECT_EQ(raw[12], 0x06);
    EXPECT_EQ(le_at<std::uint32_t>(raw, 16), 0x0708090aU);
    EXPECT_EQ(raw[381], 0xa1);
    EXPECT_EQ(raw[382], 1);
    EXPECT_EQ(raw[383], 0xa3);
    EXPECT_EQ(raw[384], 0xb0);
    EXPECT_EQ(raw[511], 0xbf);
}

TEST(async_event_completion, packs_type_information_and_log_page)
{
    const spec::async_event_completion namespace_changed{spec::notice_event::namespace_attribute_changed,
                                                         spec::log_page_id::changed_namespace_list};
    EXPECT_EQ(namespace_changed.raw, 0x00040002U);

    const spec::async_event_completion doorbell{spec::error_event::invalid_doorbell_value};
    EXPECT_EQ(doorbell.raw, 0x00010100U);

    const spec::async_event_completion temperature{spec::smart_health_event::temperature_threshold};
    EXPECT_EQ(temperature.raw, 0x00020101U);

    const spec::async_event_completion discovery{spec::notice_event::discovery_log_page_change,
                                                 spec::log_page_id::discovery};
    EXPECT_EQ(discovery.raw, 0x0070f002U);

    const spec::async_event_completion shutdown{spec::immediate_event::normal_subsystem_shutdown,
                                                spec::log_page_id::persistent_event};
    EXPECT_EQ(shutdown.get(spec::async_event_completion::event_type), spec::async_event_type::immediate);

    const spec::async_event_completion vendor{spec::async_event_type::vendor_specific, 0x80,
                                              static_cast<spec::log_page_id>(0xc1)};
    EXPECT_EQ(vendor.raw, 0x00c18007U);
    EXPECT_EQ(spec::async_event_completion{}.raw, 0U);
}

TEST(async_event_completion, names_event_information_by_type)
{
    EXPECT_EQ(spec::name(spec::async_event_completion{0x00040002}), "Namespace Attribute Changed");
    EXPECT_EQ(spec::name(spec::async_event_completion{0x00010000}), "Write to Invalid Doorbell Register");
    EXPECT_EQ(spec::name(spec::async_event_completion{0x00020001}), "NVM Subsystem Reliability");
    EXPECT_EQ(spec::name(spec::async_event_completion{0x00020201}), "Spare Below Threshold");
    EXPECT_EQ(spec::name(spec::async_event_completion{0x00010500}), "Firmware Image Load Error");
    EXPECT_TRUE(spec::name(spec::async_event_completion{0x00010600}).empty());
    EXPECT_TRUE(spec::name(spec::async_event_completion{0x00000006}).empty());
    EXPECT_EQ(spec::name(spec::async_event_type::io_command_set_specific), "I/O Command Set Specific");
    EXPECT_EQ(spec::name(static_cast<spec::async_event_type>(4)), "Reserved");
}
