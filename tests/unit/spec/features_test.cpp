#include <nvmekit/spec/features.hpp>

#include <array>
#include <bit>
#include <cstdint>

#include <gtest/gtest.h>

#include "../wire_bytes.hpp"

namespace spec = nvmekit::spec;
using nvmekit_test::bytes_of;
using nvmekit_test::zeroed;

TEST(feature_id, has_the_spec_numbers_and_names)
{
    EXPECT_EQ(static_cast<unsigned>(spec::feature_id::number_of_queues), 0x07U);
    EXPECT_EQ(static_cast<unsigned>(spec::feature_id::async_event_configuration), 0x0bU);
    EXPECT_EQ(static_cast<unsigned>(spec::feature_id::keep_alive_timer), 0x0fU);
    EXPECT_EQ(static_cast<unsigned>(spec::feature_id::host_behavior_support), 0x16U);
    EXPECT_EQ(static_cast<unsigned>(spec::feature_id::io_command_set_profile), 0x19U);
    EXPECT_EQ(static_cast<unsigned>(spec::feature_id::software_progress_marker), 0x80U);
    EXPECT_EQ(static_cast<unsigned>(spec::feature_id::namespace_write_protection_config), 0x84U);
    EXPECT_EQ(spec::name(spec::feature_id::volatile_write_cache), "Volatile Write Cache");
    EXPECT_EQ(spec::name(spec::feature_id::host_identifier), "Host Identifier");
    for (unsigned id = 0x01; id <= 0x19; ++id) {
        EXPECT_FALSE(spec::name(static_cast<spec::feature_id>(id)).empty()) << id;
    }
    for (unsigned id = 0x80; id <= 0x84; ++id) {
        EXPECT_FALSE(spec::name(static_cast<spec::feature_id>(id)).empty()) << id;
    }
    EXPECT_TRUE(spec::name(static_cast<spec::feature_id>(0x00)).empty());
    EXPECT_TRUE(spec::name(static_cast<spec::feature_id>(0x85)).empty());
    EXPECT_TRUE(spec::is_vendor_specific(static_cast<spec::feature_id>(0xc0)));
    EXPECT_FALSE(spec::is_vendor_specific(spec::feature_id::reservation_persistence));
}

TEST(feature_select, values_and_supported_capabilities_bits)
{
    EXPECT_EQ(static_cast<unsigned>(spec::feature_select::saved), 0b010U);
    EXPECT_EQ(static_cast<unsigned>(spec::feature_select::supported_capabilities), 0b011U);
    EXPECT_EQ(spec::name(spec::feature_select::default_value), "Default");
    EXPECT_EQ(spec::name(static_cast<spec::feature_select>(4)), "Reserved");

    const auto capabilities = spec::feature_capabilities{}
                                  .with(spec::feature_capabilities::saveable, true)
                                  .with(spec::feature_capabilities::changeable, true);
    EXPECT_EQ(capabilities.raw, 0b101U);
    EXPECT_TRUE(spec::feature_capabilities{0b010}.get(spec::feature_capabilities::namespace_specific));
}

TEST(feature_values, arbitration_and_power_management_pack_as_the_spec_says)
{
    const auto arbitration = spec::arbitration{}
                                 .with(spec::arbitration::ab, spec::arbitration::no_burst_limit)
                                 .with(spec::arbitration::lpw, 1)
                                 .with(spec::arbitration::mpw, 2)
                                 .with(spec::arbitration::hpw, 3);
    EXPECT_EQ(arbitration.raw, 0x03020107U);

    const auto power =
        spec::power_management{}.with(spec::power_management::ps, 2).with(spec::power_management::wh, 1);
    EXPECT_EQ(power.raw, 0x22U);
    EXPECT_EQ(spec::power_management{0xffffffff}.get(spec::power_management::ps), 31);
    EXPECT_EQ(spec::power_management{0xffffffff}.get(spec::power_management::wh), 7);
}

TEST(feature_values, temperature_threshold_selects_sensor_and_type)
{
    const auto threshold = spec::temperature_threshold{}
                               .with(spec::temperature_threshold::tmpth, 343)
                               .with(spec::temperature_threshold::tmpsel, spec::temperature_select::sensor_2)
                               .with(spec::temperature_threshold::thsel, spec::threshold_type::under);
    EXPECT_EQ(threshold.raw, 0x00120157U);
    EXPECT_EQ(spec::temperature_threshold{0x000f0000}.get(spec::temperature_threshold::tmpsel),
              spec::temperature_select::all);
}

TEST(feature_values, error_recovery_write_cache_and_write_atomicity)
{
    const auto recovery =
        spec::error_recovery{}.with(spec::error_recovery::tler, 10).with(spec::error_recovery::dulbe, true);
    EXPECT_EQ(recovery.raw, 0x0001000aU);
    EXPECT_EQ(spec::volatile_write_cache{}.with(spec::volatile_write_cache::wce, true).raw, 1U);
    EXPECT_EQ(spec::write_atomicity_normal{}.with(spec::write_atomicity_normal::dn, true).raw, 1U);
}

TEST(feature_values, number_of_queues_is_zero_based_in_both_halves)
{
    const auto queues = spec::number_of_queues::from_counts(64, 16);
    EXPECT_EQ(queues.raw, 0x000f003fU);
    EXPECT_EQ(queues.get(spec::number_of_queues::nsqr), 63);
    EXPECT_EQ(queues.get(spec::number_of_queues::ncqr), 15);
    EXPECT_EQ(queues.submission_queue_count(), 64U);
    EXPECT_EQ(queues.completion_queue_count(), 16U);
    EXPECT_EQ(spec::number_of_queues{0xfffefffe}.submission_queue_count(), 65535U);
}

TEST(feature_values, interrupt_coalescing_and_vector_configuration)
{
    const auto coalescing = spec::interrupt_coalescing{}
                                .with(spec::interrupt_coalescing::thr, 7)
                                .with(spec::interrupt_coalescing::time, 10);
    EXPECT_EQ(coalescing.raw, 0x0a07U);
    const auto vector = spec::interrupt_vector_configuration{}
                            .with(spec::interrupt_vector_configuration::iv, 3)
                            .with(spec::interrupt_vector_configuration::cd, true);
    EXPECT_EQ(vector.raw, 0x00010003U);
}

TEST(feature_values, async_event_configuration_bits)
{
    const auto config = spec::async_event_configuration{}
                            .with(spec::async_event_configuration::smart_critical_warnings, 0x1f)
                            .with(spec::async_event_configuration::namespace_attribute_notices, true)
                            .with(spec::async_event_configuration::firmware_activation_notices, true)
                            .with(spec::async_event_configuration::discovery_log_change_notices, true);
    EXPECT_EQ(config.raw, 0x8000031fU);
    using config_type = spec::async_event_configuration;
    EXPECT_EQ(config_type{}.with(config_type::telemetry_log_notices, true).raw, 1U << 10);
    EXPECT_EQ(config_type{}.with(config_type::ana_change_notices, true).raw, 1U << 11);
    EXPECT_EQ(config_type{}.with(config_type::predictable_latency_notices, true).raw, 1U << 12);
    EXPECT_EQ(config_type{}.with(config_type::lba_status_information_notices, true).raw, 1U << 13);
    EXPECT_EQ(config_type{}.with(config_type::endurance_group_event_notices, true).raw, 1U << 14);
    EXPECT_EQ(config_type{}.with(config_type::normal_subsystem_shutdown_notices, true).raw, 1U << 15);
}

TEST(feature_values, power_state_transition_host_memory_and_thermal)
{
    EXPECT_EQ(spec::autonomous_power_state_transition{}
                  .with(spec::autonomous_power_state_transition::apste, true)
                  .raw,
              1U);
    const auto entry = spec::apst_entry{}.with(spec::apst_entry::itps, 3).with(spec::apst_entry::itpt, 100);
    EXPECT_EQ(entry.raw, 0x6418U);
    EXPECT_EQ(spec::host_memory_buffer{}.with(spec::host_memory_buffer::mr, true).raw, 0x2U);
    const auto thermal = spec::host_controlled_thermal_management{}
                             .with(spec::host_controlled_thermal_management::tmt1, 353)
                             .with(spec::host_controlled_thermal_management::tmt2, 363);
    EXPECT_EQ(thermal.raw, 0x0161016bU);
    EXPECT_EQ(spec::non_operational_power_state_config{}
                  .with(spec::non_operational_power_state_config::noppme, true)
                  .raw,
              1U);
    EXPECT_EQ(spec::keep_alive_timer{}.with(spec::keep_alive_timer::kato, 120000).raw, 120000U);
    EXPECT_EQ(spec::lba_range_type{}.with(spec::lba_range_type::num, 63).raw, 0x3fU);
}

TEST(timestamp_data, holds_48_bit_milliseconds_then_attributes)
{
    auto data = zeroed<spec::timestamp_data>();
    data.set_milliseconds(0xff0123456789abULL); // bits above 47 are dropped
    data.attributes = spec::timestamp_attributes{}
                          .with(spec::timestamp_attributes::synch, true)
                          .with(spec::timestamp_attributes::origin, spec::timestamp_origin::set_features);
    EXPECT_EQ(data.milliseconds(), 0x0123456789abULL);
    EXPECT_EQ(data.attributes.raw, 0x03U);
    const auto raw = bytes_of(data);
    EXPECT_EQ(raw[0], 0xab);
    EXPECT_EQ(raw[5], 0x01);
    EXPECT_EQ(raw[6], 0x03);
    EXPECT_EQ(raw[7], 0x00);
    data.set_milliseconds(spec::timestamp_data::max_milliseconds);
    EXPECT_EQ(data.milliseconds(), 0xffffffffffffULL);
}

TEST(host_behavior_support, fields_are_bytes_0_to_2)
{
    auto data = zeroed<spec::host_behavior_support>();
    data.acre = 1;
    data.lbafee = 1;
    const auto raw = bytes_of(data);
    EXPECT_EQ(raw[0], 1);
    EXPECT_EQ(raw[1], 0);
    EXPECT_EQ(raw[2], 1);
}

TEST(lba_range_type_entry, fields_land_at_their_spec_bytes)
{
    auto entry = zeroed<spec::lba_range_type_entry>();
    entry.type = spec::lba_range_kind::raid;
    entry.attributes = spec::lba_range_attributes{}
                           .with(spec::lba_range_attributes::overwriteable, true)
                           .with(spec::lba_range_attributes::hidden, true);
    entry.slba = 0x1122334455667788ULL;
    entry.nlb = 0x0fff;
    entry.guid[0] = 0xa5;
    const auto raw = bytes_of(entry);
    EXPECT_EQ(raw[0], 0x02);
    EXPECT_EQ(raw[1], 0x03);
    EXPECT_EQ(raw[16], 0x88);
    EXPECT_EQ(raw[23], 0x11);
    EXPECT_EQ(raw[24], 0xff);
    EXPECT_EQ(raw[25], 0x0f);
    EXPECT_EQ(raw[32], 0xa5);
}
