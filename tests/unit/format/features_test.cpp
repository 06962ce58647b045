#include <nvmekit/format/features.hpp>

#include <array>
#include <bit>
#include <cstdint>

#include <gtest/gtest.h>

#include "../wire_bytes.hpp"

namespace spec = nvmekit::spec;
using nvmekit_test::zeroed;

TEST(format_features, feature_id_prints_name_and_number)
{
    EXPECT_EQ(fmt::format("{}", spec::feature_id::number_of_queues), "Number of Queues (0x07)");
    EXPECT_EQ(fmt::format("{}", spec::feature_id::async_event_configuration),
              "Asynchronous Event Configuration (0x0b)");
    EXPECT_EQ(fmt::format("{}", static_cast<spec::feature_id>(0xc2)), "Vendor Specific (0xc2)");
    EXPECT_EQ(fmt::format("{}", static_cast<spec::feature_id>(0x00)), "Reserved (0x00)");
}

TEST(format_features, select_and_capabilities)
{
    EXPECT_EQ(fmt::format("{}", spec::feature_select::supported_capabilities), "Supported Capabilities");
    EXPECT_EQ(fmt::format("{}", spec::feature_capabilities{0b101}), "saveable changeable");
    EXPECT_EQ(fmt::format("{}", spec::feature_capabilities{0b010}), "namespace_specific");
    EXPECT_EQ(fmt::format("{}", spec::feature_capabilities{}), "none");
}

TEST(format_features, queue_and_interrupt_values_print_their_fields)
{
    EXPECT_EQ(fmt::format("{}", spec::number_of_queues::from_counts(64, 64)), "nsqr=63 ncqr=63");
    EXPECT_EQ(fmt::format("{}", spec::number_of_queues{0x0003000f}), "nsqr=15 ncqr=3");
    EXPECT_EQ(fmt::format("{}", spec::interrupt_coalescing{0x0a07}), "thr=7 time=10");
    EXPECT_EQ(fmt::format("{}", spec::interrupt_vector_configuration{0x00010003}), "iv=3 cd=1");
    EXPECT_EQ(fmt::format("{}", spec::arbitration{0x03020107}), "ab=7 lpw=1 mpw=2 hpw=3");
}

TEST(format_features, simple_values_print_their_fields)
{
    EXPECT_EQ(fmt::format("{}", spec::power_management{0x22}), "ps=2 wh=1");
    EXPECT_EQ(fmt::format("{}", spec::error_recovery{0x0001000a}), "tler=10 dulbe=1");
    EXPECT_EQ(fmt::format("{}", spec::volatile_write_cache{1}), "wce=1");
    EXPECT_EQ(fmt::format("{}", spec::write_atomicity_normal{0}), "dn=0");
    EXPECT_EQ(fmt::format("{}", spec::autonomous_power_state_transition{1}), "apste=1");
    EXPECT_EQ(fmt::format("{}", spec::apst_entry{0x6418}), "itps=3 itpt=100");
    EXPECT_EQ(fmt::format("{}", spec::host_memory_buffer{0x1}), "ehm=1 mr=0");
    EXPECT_EQ(fmt::format("{}", spec::keep_alive_timer{120000}), "kato=120000");
    EXPECT_EQ(fmt::format("{}", spec::host_controlled_thermal_management{0x0161016b}), "tmt1=353 tmt2=363");
    EXPECT_EQ(fmt::format("{}", spec::non_operational_power_state_config{1}), "noppme=1");
    EXPECT_EQ(fmt::format("{}", spec::lba_range_type{0x3f}), "num=63");
}

TEST(format_features, temperature_threshold_names_sensor_and_type)
{
    EXPECT_EQ(fmt::format("{}", spec::temperature_threshold{0x00120157}),
              "tmpth=343 tmpsel=sensor2 thsel=under");
    EXPECT_EQ(fmt::format("{}", spec::temperature_threshold{0x0000015e}),
              "tmpth=350 tmpsel=composite thsel=over");
    EXPECT_EQ(fmt::format("{}", spec::temperature_threshold{0x003f0000}),
              "tmpth=0 tmpsel=all thsel=reserved(3)");
    EXPECT_EQ(fmt::format("{}", spec::temperature_threshold{0x00090000}),
              "tmpth=0 tmpsel=reserved(9) thsel=over");
}

TEST(format_features, async_event_configuration_prints_mask_and_enabled_notices)
{
    EXPECT_EQ(fmt::format("{}", spec::async_event_configuration{0x8000031f}),
              "smart=0x1f namespace_attribute firmware_activation discovery_log_change");
    EXPECT_EQ(fmt::format("{}", spec::async_event_configuration{0x0000fc00}),
              "smart=0x00 telemetry_log ana_change predictable_latency lba_status_information "
              "endurance_group_event "
              "normal_subsystem_shutdown");
    EXPECT_EQ(fmt::format("{}", spec::async_event_configuration{}), "smart=0x00");
}

TEST(format_features, timestamp_prints_milliseconds_and_attributes)
{
    auto data = zeroed<spec::timestamp_data>();
    data.set_milliseconds(1650000000000ULL);
    data.attributes = spec::timestamp_attributes{0x02};
    EXPECT_EQ(fmt::format("{}", data), "timestamp=1650000000000 synch=0 origin=set_features");
    EXPECT_EQ(fmt::format("{}", spec::timestamp_attributes{0x01}), "synch=1 origin=reset");
    EXPECT_EQ(fmt::format("{}", spec::timestamp_attributes{0x04}), "synch=0 origin=reserved(2)");
}

TEST(format_features, lba_range_type_entry_and_host_behavior)
{
    auto entry = zeroed<spec::lba_range_type_entry>();
    entry.type = spec::lba_range_kind::filesystem;
    entry.attributes = spec::lba_range_attributes{0x1};
    entry.slba = 0x800;
    entry.nlb = 2047;
    EXPECT_EQ(fmt::format("{}", entry), "type=filesystem attributes=overwriteable slba=0x800 nlb=2047");
    entry.type = static_cast<spec::lba_range_kind>(0x80);
    entry.attributes = spec::lba_range_attributes{};
    EXPECT_EQ(fmt::format("{}", entry), "type=vendor_specific(0x80) attributes=none slba=0x800 nlb=2047");
    EXPECT_EQ(fmt::format("{}", spec::lba_range_attributes{0x3}), "overwriteable hidden");

    auto behavior = zeroed<spec::host_behavior_support>();
    behavior.acre = 1;
    behavior.lbafee = 1;
    EXPECT_EQ(fmt::format("{}", behavior), "acre=1 etdas=0 lbafee=1");
}
