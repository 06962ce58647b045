#include <nvmekit/spec/identify.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <string>
#include <string_view>

#include "../wire_bytes.hpp"

namespace spec = nvmekit::spec;
using nvmekit_test::bytes_of;
using nvmekit_test::le_at;

namespace {

using page = std::array<std::uint8_t, spec::identify_data_size>;

std::string_view chars_at(const page& bytes, std::size_t offset, std::size_t length)
{
    return std::string_view{reinterpret_cast<const char*>(bytes.data() + offset), length};
}

} // namespace

TEST(identify_cns, values_follow_the_spec_and_are_named)
{
    EXPECT_EQ(static_cast<unsigned>(spec::cns::identify_namespace), 0x00U);
    EXPECT_EQ(static_cast<unsigned>(spec::cns::identify_controller), 0x01U);
    EXPECT_EQ(static_cast<unsigned>(spec::cns::active_namespace_list), 0x02U);
    EXPECT_EQ(static_cast<unsigned>(spec::cns::namespace_id_descriptor_list), 0x03U);
    EXPECT_EQ(static_cast<unsigned>(spec::cns::io_command_set_namespace), 0x05U);
    EXPECT_EQ(static_cast<unsigned>(spec::cns::io_command_set_controller), 0x06U);
    EXPECT_EQ(static_cast<unsigned>(spec::cns::io_command_set_active_namespace_list), 0x07U);
    EXPECT_EQ(static_cast<unsigned>(spec::cns::io_command_set_independent_namespace), 0x08U);
    EXPECT_EQ(static_cast<unsigned>(spec::cns::allocated_namespace_list), 0x10U);
    EXPECT_EQ(static_cast<unsigned>(spec::cns::allocated_namespace), 0x11U);
    EXPECT_EQ(static_cast<unsigned>(spec::cns::namespace_controller_list), 0x12U);
    EXPECT_EQ(static_cast<unsigned>(spec::cns::controller_list), 0x13U);
    EXPECT_EQ(static_cast<unsigned>(spec::cns::io_command_set), 0x1cU);

    EXPECT_EQ(spec::name(spec::cns::identify_controller), "Identify Controller");
    EXPECT_EQ(spec::name(spec::cns::namespace_id_descriptor_list),
              "Namespace Identification Descriptor List");
    EXPECT_EQ(spec::name(spec::cns::io_command_set), "Identify I/O Command Set");
    for (unsigned value = 0; value <= 0x1c; ++value) {
        const bool reserved = value == 0x09 || (value >= 0x0a && value <= 0x0f);
        EXPECT_EQ(spec::name(static_cast<spec::cns>(value)).empty(), reserved) << value;
    }
    EXPECT_TRUE(spec::name(static_cast<spec::cns>(0x1f)).empty());
}

TEST(identify_csi, values_follow_the_spec_and_are_named)
{
    EXPECT_EQ(static_cast<unsigned>(spec::command_set_identifier::nvm), 0x00U);
    EXPECT_EQ(static_cast<unsigned>(spec::command_set_identifier::key_value), 0x01U);
    EXPECT_EQ(static_cast<unsigned>(spec::command_set_identifier::zoned), 0x02U);
    EXPECT_EQ(spec::name(spec::command_set_identifier::nvm), "NVM");
    EXPECT_EQ(spec::name(spec::command_set_identifier::zoned), "Zoned Namespace");
    EXPECT_TRUE(spec::name(static_cast<spec::command_set_identifier>(0x03)).empty());
}

TEST(identify_u128, splits_into_little_endian_halves)
{
    spec::uint128_le field{};
    field.set(0x1122334455667788ULL, 0x99aabbccddeeff00ULL);
    EXPECT_EQ(field.bytes[0], 0x88);
    EXPECT_EQ(field.bytes[7], 0x11);
    EXPECT_EQ(field.bytes[8], 0x00);
    EXPECT_EQ(field.bytes[15], 0x99);
    EXPECT_EQ(field.low(), 0x1122334455667788ULL);
    EXPECT_EQ(field.high(), 0x99aabbccddeeff00ULL);

    field.set(1ULL << 40);
    EXPECT_EQ(field.low(), 1ULL << 40);
    EXPECT_EQ(field.high(), 0U);
}

TEST(identify_power_state, fields_land_on_their_bytes)
{
    spec::power_state_descriptor psd{};
    psd.mp = 2500;
    psd.flags.set(spec::power_state_flags::non_operational, true);
    psd.enlat = 16;
    psd.exlat = 0x01020304;
    psd.rrt.set(spec::power_state_relative::value, 1);
    psd.rrl.set(spec::power_state_relative::value, 2);
    psd.rwt.set(spec::power_state_relative::value, 3);
    psd.rwl.set(spec::power_state_relative::value, 0x3f); // only bits 04:00 exist
    psd.idlp = 0x0102;
    psd.ips.set(spec::idle_power_attributes::scale, spec::power_scale::ten_milliwatts);
    psd.actp = 0x0304;
    psd.apw_aps.set(spec::active_power_attributes::workload, 2)
        .set(spec::active_power_attributes::scale, spec::power_scale::hundred_microwatts);

    const auto bytes = std::bit_cast<std::array<std::uint8_t, 32>>(psd);
    EXPECT_EQ(bytes[0], 0xc4);
    EXPECT_EQ(bytes[1], 0x09);
    EXPECT_EQ(bytes[3], 0x02);
    EXPECT_EQ(bytes[4], 16);
    EXPECT_EQ(bytes[8], 0x04);
    EXPECT_EQ(bytes[11], 0x01);
    EXPECT_EQ(bytes[12], 1);
    EXPECT_EQ(bytes[13], 2);
    EXPECT_EQ(bytes[14], 3);
    EXPECT_EQ(bytes[15], 0x1f);
    EXPECT_EQ(bytes[16], 0x02);
    EXPECT_EQ(bytes[17], 0x01);
    EXPECT_EQ(bytes[18], 0x80);
    EXPECT_EQ(bytes[20], 0x04);
    EXPECT_EQ(bytes[22], 0x42);

    psd.flags = spec::power_state_flags{};
    psd.flags.set(spec::power_state_flags::max_power_scale, true);
    EXPECT_EQ(psd.flags.raw, 0x01);
    EXPECT_EQ(psd.apw_aps.get(spec::active_power_attributes::scale), spec::power_scale::hundred_microwatts);
}

TEST(identify_controller, bit_fields_build_the_spec_values)
{
    using spec::admin_command_support;
    const auto oacs = admin_command_support{}
                          .with(admin_command_support::security, true)
                          .with(admin_command_support::format_nvm, true)
                          .with(admin_command_support::firmware, true)
                          .with(admin_command_support::namespace_management, true)
                          .with(admin_command_support::doorbell_buffer_config, true);
    EXPECT_EQ(oacs.raw, 0x010fU);
    EXPECT_EQ(admin_command_support{}.with(admin_command_support::lockdown, true).raw, 0x0400U);
    EXPECT_EQ(admin_command_support{}.with(admin_command_support::virtualization_management, true).raw,
              0x0080U);

    using spec::nvm_command_support;
    const auto oncs = nvm_command_support{}
                          .with(nvm_command_support::compare, true)
                          .with(nvm_command_support::dataset_management, true)
                          .with(nvm_command_support::write_zeroes, true)
                          .with(nvm_command_support::save_select_features, true)
                          .with(nvm_command_support::timestamp, true)
                          .with(nvm_command_support::verify, true)
                          .with(nvm_command_support::copy, true);
    EXPECT_EQ(oncs.raw, 0x01ddU);
    EXPECT_EQ(nvm_command_support{}.with(nvm_command_support::reservations, true).raw, 0x0020U);

    using spec::firmware_updates;
    const auto frmw = firmware_updates{}
                          .with(firmware_updates::slot1_read_only, true)
                          .with(firmware_updates::slot_count, 3)
                          .with(firmware_updates::activation_without_reset, true);
    EXPECT_EQ(frmw.raw, 0x17U);
    EXPECT_EQ(frmw.get(firmware_updates::slot_count), 3);

    using spec::log_page_attributes;
    const auto lpa = log_page_attributes{}
                         .with(log_page_attributes::smart_per_namespace, true)
                         .with(log_page_attributes::commands_effects, true)
                         .with(log_page_attributes::extended_data, true)
                         .with(log_page_attributes::telemetry, true)
                         .with(log_page_attributes::persistent_event_log, true);
    EXPECT_EQ(lpa.raw, 0x1fU);

    using spec::queue_entry_sizes;
    EXPECT_EQ(
        queue_entry_sizes{}.with(queue_entry_sizes::required, 6).with(queue_entry_sizes::maximum, 6).raw,
        0x66U);
    EXPECT_EQ(queue_entry_sizes{0x64}.get(queue_entry_sizes::required), 4);
    EXPECT_EQ(queue_entry_sizes{0x64}.get(queue_entry_sizes::maximum), 6);

    using spec::volatile_write_cache_support;
    const auto vwc =
        volatile_write_cache_support{}
            .with(volatile_write_cache_support::present, true)
            .with(volatile_write_cache_support::flush_behavior, spec::flush_broadcast::supported);
    EXPECT_EQ(vwc.raw, 0x07U);
    EXPECT_EQ(volatile_write_cache_support{0x05}.get(volatile_write_cache_support::flush_behavior),
              spec::flush_broadcast::not_supported);

    using spec::sgl_support;
    const auto sgls = sgl_support{}
                          .with(sgl_support::support, spec::sgl_data_block_support::supported)
                          .with(sgl_support::keyed_data_block, true)
                          .with(sgl_support::bit_bucket, true)
                          .with(sgl_support::metadata_byte_aligned, true)
                          .with(sgl_support::length_larger_than_data, true)
                          .with(sgl_support::metadata_sgl, true)
                          .with(sgl_support::address_as_offset, true)
                          .with(sgl_support::transport_data_block, true);
    EXPECT_EQ(sgls.raw, 0x003f0005U);
    EXPECT_EQ(
        sgl_support{}.with(sgl_support::support, spec::sgl_data_block_support::supported_dword_aligned).raw,
        0x2U);

    using spec::controller_multipath_caps;
    EXPECT_EQ(controller_multipath_caps{}
                  .with(controller_multipath_caps::multiple_ports, true)
                  .with(controller_multipath_caps::ana_reporting, true)
                  .raw,
              0x09U);

    using spec::async_events_supported;
    EXPECT_EQ(async_events_supported{}
                  .with(async_events_supported::namespace_attribute, true)
                  .with(async_events_supported::firmware_activation, true)
                  .raw,
              0x00000300U);
    EXPECT_EQ(async_events_supported{}.with(async_events_supported::discovery_log_page_change, true).raw,
              0x80000000U);
    EXPECT_EQ(async_events_supported{}.with(async_events_supported::ana_change, true).raw, 0x00000800U);

    using spec::controller_attributes;
    EXPECT_EQ(controller_attributes{}
                  .with(controller_attributes::host_identifier_128bit, true)
                  .with(controller_attributes::extended_lba_formats, true)
                  .raw,
              0x8001U);

    EXPECT_EQ(spec::format_nvm_attributes{}.with(spec::format_nvm_attributes::cryptographic_erase, true).raw,
              0x04U);
    EXPECT_EQ(
        spec::fused_operation_support{}.with(spec::fused_operation_support::compare_and_write, true).raw,
        0x1U);

    EXPECT_EQ(static_cast<unsigned>(spec::controller_type::io), 1U);
    EXPECT_EQ(static_cast<unsigned>(spec::controller_type::discovery), 2U);
    EXPECT_EQ(static_cast<unsigned>(spec::controller_type::admin), 3U);
}

TEST(identify_controller, fields_land_on_their_spec_offsets)
{
    spec::identify_controller ctrl{};
    ctrl.vid = 0xf0e5;
    ctrl.ssvid = 0x5a5a;
    EXPECT_TRUE(ctrl.set_serial_number("NVMEKIT0001"));
    EXPECT_TRUE(ctrl.set_model_number("nvmekit controller"));
    EXPECT_TRUE(ctrl.set_firmware_revision("0.1.0"));
    ctrl.set_ieee_oui(0x525400);
    ctrl.mdts = 5;
    ctrl.cntlid = 0x0102;
    ctrl.ver = 0x00020000;
    ctrl.oaes.set(spec::async_events_supported::namespace_attribute, true);
    ctrl.cntrltype = spec::controller_type::io;
    ctrl.oacs.set(spec::admin_command_support::doorbell_buffer_config, true);
    ctrl.frmw.set(spec::firmware_updates::slot_count, 1);
    ctrl.lpa.set(spec::log_page_attributes::commands_effects, true);
    ctrl.npss = 0;
    ctrl.wctemp = 343;
    ctrl.tnvmcap.set(0x40000000);
    ctrl.sqes.set(spec::queue_entry_sizes::required, 6).set(spec::queue_entry_sizes::maximum, 6);
    ctrl.cqes.set(spec::queue_entry_sizes::required, 4).set(spec::queue_entry_sizes::maximum, 4);
    ctrl.maxcmd = 0x1234;
    ctrl.nn = 32;
    ctrl.oncs.set(spec::nvm_command_support::write_zeroes, true);
    ctrl.vwc.set(spec::volatile_write_cache_support::present, true);
    ctrl.ocfs = 0x0001;
    ctrl.sgls.set(spec::sgl_support::support, spec::sgl_data_block_support::supported);
    EXPECT_TRUE(ctrl.set_subsystem_nqn("nqn.2023-01.io.nvmekit:subsystem0"));
    ctrl.ioccsz = 4;
    ctrl.msdbd = 1;
    ctrl.psd[0].mp = 2500;
    ctrl.psd[1].enlat = 7;
    ctrl.vs[0] = 0xab;

    const page bytes = bytes_of(ctrl);
    EXPECT_EQ(le_at<std::uint16_t>(bytes, 0), 0xf0e5);
    EXPECT_EQ(le_at<std::uint16_t>(bytes, 2), 0x5a5a);
    EXPECT_EQ(chars_at(bytes, 4, 20), "NVMEKIT0001         ");
    EXPECT_EQ(chars_at(bytes, 24, 40), "nvmekit controller                      ");
    EXPECT_EQ(chars_at(bytes, 64, 8), "0.1.0   ");
    EXPECT_EQ(bytes[73], 0x00);
    EXPECT_EQ(bytes[74], 0x54);
    EXPECT_EQ(bytes[75], 0x52);
    EXPECT_EQ(bytes[77], 5);
    EXPECT_EQ(le_at<std::uint16_t>(bytes, 78), 0x0102);
    EXPECT_EQ(le_at<std::uint32_t>(bytes, 80), 0x00020000U);
    EXPECT_EQ(le_at<std::uint32_t>(bytes, 92), 0x00000100U);
    EXPECT_EQ(bytes[111], 1);
    EXPECT_EQ(le_at<std::uint16_t>(bytes, 256), 0x0100);
    EXPECT_EQ(bytes[260], 0x02);
    EXPECT_EQ(bytes[261], 0x02);
    EXPECT_EQ(le_at<std::uint16_t>(bytes, 266), 343);
    EXPECT_EQ(le_at<std::uint64_t>(bytes, 280), 0x40000000U);
    EXPECT_EQ(le_at<std::uint64_t>(bytes, 288), 0U);
    EXPECT_EQ(bytes[512], 0x66);
    EXPECT_EQ(bytes[513], 0x44);
    EXPECT_EQ(le_at<std::uint16_t>(bytes, 514), 0x1234);
    EXPECT_EQ(le_at<std::uint32_t>(bytes, 516), 32U);
    EXPECT_EQ(le_at<std::uint16_t>(bytes, 520), 0x0008);
    EXPECT_EQ(bytes[525], 0x01);
    EXPECT_EQ(le_at<std::uint16_t>(bytes, 534), 0x0001);
    EXPECT_EQ(le_at<std::uint32_t>(bytes, 536), 0x00000001U);
    const std::string_view nqn = "nqn.2023-01.io.nvmekit:subsystem0";
    EXPECT_EQ(chars_at(bytes, 768, nqn.size()), nqn);
    EXPECT_TRUE(std::all_of(bytes.begin() + 768 + static_cast<std::ptrdiff_t>(nqn.size()),
                            bytes.begin() + 1024, [](std::uint8_t byte) { return byte == 0; }));
    EXPECT_EQ(le_at<std::uint32_t>(bytes, 1792), 4U);
    EXPECT_EQ(bytes[1803], 1);
    EXPECT_EQ(le_at<std::uint16_t>(bytes, 2048), 2500);
    EXPECT_EQ(le_at<std::uint32_t>(bytes, 2048 + 32 + 4), 7U);
    EXPECT_EQ(bytes[3072], 0xab);

    EXPECT_EQ(ctrl.serial_number(), "NVMEKIT0001");
    EXPECT_EQ(ctrl.model_number(), "nvmekit controller");
    EXPECT_EQ(ctrl.firmware_revision(), "0.1.0");
    EXPECT_EQ(ctrl.subsystem_nqn(), nqn);
    EXPECT_EQ(ctrl.ieee_oui(), 0x525400U);
}

TEST(identify_controller, long_strings_are_cut_to_the_field)
{
    spec::identify_controller ctrl{};
    EXPECT_FALSE(ctrl.set_serial_number("0123456789012345678901"));
    EXPECT_EQ(ctrl.serial_number(), "01234567890123456789");
    EXPECT_FALSE(ctrl.set_subsystem_nqn(std::string(300, 'n')));
    EXPECT_EQ(ctrl.subsystem_nqn().size(), 255U);
    EXPECT_EQ(ctrl.subnqn[255], '\0');
}

TEST(identify_namespace, lba_format_packs_ms_lbads_rp)
{
    using spec::lba_format;
    const auto format = lba_format{}
                            .with(lba_format::ms, 8)
                            .with(lba_format::lbads, 12)
                            .with(lba_format::rp, spec::lba_relative_performance::better);
    EXPECT_EQ(format.raw, 0x010c0008U);
    EXPECT_EQ(format.data_size(), 4096U);
    EXPECT_EQ(lba_format{0x00090000}.data_size(), 512U);
    EXPECT_EQ(lba_format{}.data_size(), 0U);
    EXPECT_EQ(lba_format{0x03000000}.get(lba_format::rp), spec::lba_relative_performance::degraded);
}

TEST(identify_namespace, flbas_joins_both_halves_of_the_format_index)
{
    using spec::formatted_lba_size;
    formatted_lba_size flbas{};
    flbas.set_format_index(0x25);
    EXPECT_EQ(flbas.raw, 0x45U);
    EXPECT_EQ(flbas.format_index(), 0x25);
    flbas.set(formatted_lba_size::extended_metadata, true);
    EXPECT_EQ(flbas.raw, 0x55U);
    EXPECT_EQ(flbas.format_index(), 0x25);
    flbas.set_format_index(17);
    EXPECT_EQ(flbas.raw, 0x31U);
    EXPECT_EQ(formatted_lba_size{0x7f}.format_index(), 63);
    EXPECT_EQ(formatted_lba_size{0x0f}.format_index(), 15);
}

TEST(identify_namespace, byte_fields_build_the_spec_values)
{
    EXPECT_EQ(spec::namespace_features{}
                  .with(spec::namespace_features::thin_provisioning, true)
                  .with(spec::namespace_features::optimal_performance, true)
                  .raw,
              0x11U);
    EXPECT_EQ(spec::protection_settings{}
                  .with(spec::protection_settings::type, spec::protection_information_type::type3)
                  .with(spec::protection_settings::first_bytes, true)
                  .raw,
              0x0bU);
    EXPECT_EQ(spec::protection_capabilities{}
                  .with(spec::protection_capabilities::type1, true)
                  .with(spec::protection_capabilities::last_bytes, true)
                  .raw,
              0x11U);
    EXPECT_EQ(spec::deallocate_features{}
                  .with(spec::deallocate_features::read_behavior, spec::deallocated_read_value::zeroes)
                  .with(spec::deallocate_features::write_zeroes_deallocate, true)
                  .with(spec::deallocate_features::guard_crc, true)
                  .raw,
              0x19U);
    EXPECT_EQ(spec::format_progress{}
                  .with(spec::format_progress::supported, true)
                  .with(spec::format_progress::percent_remaining, 50)
                  .raw,
              0xb2U);
    EXPECT_EQ(spec::reservation_capabilities{}
                  .with(spec::reservation_capabilities::persist_through_power_loss, true)
                  .with(spec::reservation_capabilities::ignore_existing_key, true)
                  .raw,
              0x81U);
    EXPECT_EQ(spec::metadata_capabilities{}.with(spec::metadata_capabilities::separate_buffer, true).raw,
              0x02U);
}

TEST(identify_namespace, fields_land_on_their_spec_offsets)
{
    spec::identify_namespace ns{};
    ns.nsze = 0x200000;
    ns.ncap = 0x1f0000;
    ns.nuse = 0x1000;
    ns.nsfeat.set(spec::namespace_features::deallocated_error, true);
    ns.nlbaf = 1;
    ns.flbas.set_format_index(1);
    ns.dlfeat.set(spec::deallocate_features::read_behavior, spec::deallocated_read_value::ones);
    ns.nawun = 0x0007;
    ns.noiob = 0x0100;
    ns.nvmcap.set(0x40000000);
    ns.npwg = 7;
    ns.nows = 15;
    ns.mssrl = 0x0080;
    ns.mcl = 0x00010000;
    ns.msrc = 0x7f;
    ns.nulbaf = 2;
    ns.anagrpid = 3;
    ns.nsattr.set(spec::namespace_attributes::write_protected, true);
    ns.nvmsetid = 4;
    ns.endgid = 5;
    ns.nguid[0] = 0xa0;
    ns.eui64[7] = 0xe7;
    ns.lbaf[0] = spec::lba_format{}.with(spec::lba_format::lbads, 9);
    ns.lbaf[1] = spec::lba_format{}.with(spec::lba_format::lbads, 12).with(spec::lba_format::ms, 8);
    ns.lbaf[63] = spec::lba_format{0xdeadbeef};
    ns.vs[0] = 0x5a;

    const page bytes = bytes_of(ns);
    EXPECT_EQ(le_at<std::uint64_t>(bytes, 0), 0x200000U);
    EXPECT_EQ(le_at<std::uint64_t>(bytes, 8), 0x1f0000U);
    EXPECT_EQ(le_at<std::uint64_t>(bytes, 16), 0x1000U);
    EXPECT_EQ(bytes[24], 0x04);
    EXPECT_EQ(bytes[25], 1);
    EXPECT_EQ(bytes[26], 0x01);
    EXPECT_EQ(bytes[33], 0x02);
    EXPECT_EQ(le_at<std::uint16_t>(bytes, 34), 0x0007);
    EXPECT_EQ(le_at<std::uint16_t>(bytes, 46), 0x0100);
    EXPECT_EQ(le_at<std::uint64_t>(bytes, 48), 0x40000000U);
    EXPECT_EQ(le_at<std::uint16_t>(bytes, 64), 7);
    EXPECT_EQ(le_at<std::uint16_t>(bytes, 72), 15);
    EXPECT_EQ(le_at<std::uint16_t>(bytes, 74), 0x0080);
    EXPECT_EQ(le_at<std::uint32_t>(bytes, 76), 0x00010000U);
    EXPECT_EQ(bytes[80], 0x7f);
    EXPECT_EQ(bytes[82], 2);
    EXPECT_EQ(le_at<std::uint32_t>(bytes, 92), 3U);
    EXPECT_EQ(bytes[99], 0x01);
    EXPECT_EQ(le_at<std::uint16_t>(bytes, 100), 4);
    EXPECT_EQ(le_at<std::uint16_t>(bytes, 102), 5);
    EXPECT_EQ(bytes[104], 0xa0);
    EXPECT_EQ(bytes[127], 0xe7);
    EXPECT_EQ(le_at<std::uint32_t>(bytes, 128), 0x00090000U);
    EXPECT_EQ(le_at<std::uint32_t>(bytes, 132), 0x000c0008U);
    EXPECT_EQ(le_at<std::uint32_t>(bytes, 380), 0xdeadbeefU);
    EXPECT_EQ(bytes[384], 0x5a);

    EXPECT_EQ(ns.formatted_lba_format().data_size(), 4096U);
    EXPECT_EQ(ns.formatted_lba_format().get(spec::lba_format::ms), 8);
    EXPECT_EQ(ns.nvm_capacity(), 0x40000000U);
}

TEST(identify_nvm_namespace, extended_formats_follow_the_protection_capabilities)
{
    spec::nvm_identify_namespace nvm{};
    nvm.lbstm = 0xffff0000ffff0000ULL;
    nvm.pic.set(spec::protection_information_capabilities::storage_tag_16b, true)
        .set(spec::protection_information_capabilities::storage_tag_check_read, true);
    nvm.elbaf[1] = spec::extended_lba_format{}
                       .with(spec::extended_lba_format::sts, 48)
                       .with(spec::extended_lba_format::pif, spec::protection_information_format::guard_64b);
    nvm.elbaf[63].set(spec::extended_lba_format::pif, spec::protection_information_format::guard_32b);

    const page bytes = bytes_of(nvm);
    EXPECT_EQ(le_at<std::uint64_t>(bytes, 0), 0xffff0000ffff0000ULL);
    EXPECT_EQ(bytes[8], 0x05);
    EXPECT_EQ(le_at<std::uint32_t>(bytes, 12), 0U);
    EXPECT_EQ(le_at<std::uint32_t>(bytes, 16), 0x130U);
    EXPECT_EQ(le_at<std::uint32_t>(bytes, 12 + 63 * 4), 0x080U);
    EXPECT_EQ(nvm.elbaf[1].get(spec::extended_lba_format::sts), 48);
}

TEST(identify_nvm_controller, size_limits_land_on_their_offsets)
{
    spec::nvm_identify_controller nvm{};
    nvm.vsl = 1;
    nvm.wzsl = 2;
    nvm.wusl = 3;
    nvm.dmrl = 4;
    nvm.dmrsl = 0x05060708;
    nvm.dmsl = 0x1122334455667788ULL;

    const page bytes = bytes_of(nvm);
    EXPECT_EQ(bytes[0], 1);
    EXPECT_EQ(bytes[1], 2);
    EXPECT_EQ(bytes[2], 3);
    EXPECT_EQ(bytes[3], 4);
    EXPECT_EQ(le_at<std::uint32_t>(bytes, 4), 0x05060708U);
    EXPECT_EQ(le_at<std::uint64_t>(bytes, 8), 0x1122334455667788ULL);
}

TEST(identify_independent_namespace, fields_land_on_their_offsets)
{
    spec::independent_identify_namespace ns{};
    ns.nmic.set(spec::namespace_multipath_caps::shared, true);
    ns.anagrpid = 0x01020304;
    ns.nsattr.set(spec::namespace_attributes::write_protected, true);
    ns.nvmsetid = 0x0506;
    ns.endgid = 0x0708;
    ns.nstat.set(spec::namespace_status::ready, true);

    const page bytes = bytes_of(ns);
    EXPECT_EQ(bytes[1], 0x01);
    EXPECT_EQ(le_at<std::uint32_t>(bytes, 4), 0x01020304U);
    EXPECT_EQ(bytes[8], 0x01);
    EXPECT_EQ(le_at<std::uint16_t>(bytes, 10), 0x0506);
    EXPECT_EQ(le_at<std::uint16_t>(bytes, 12), 0x0708);
    EXPECT_EQ(bytes[14], 0x01);
}

TEST(identify_namespace_list, counts_ids_before_the_first_zero)
{
    spec::active_namespace_id_list list{};
    EXPECT_EQ(list.size(), 0U);
    list.nsids[0] = 1;
    list.nsids[1] = 2;
    list.nsids[2] = 0x10;
    list.nsids[4] = 9; // after a zero entry: not part of the list
    EXPECT_EQ(list.size(), 3U);
    const page bytes = bytes_of(list);
    EXPECT_EQ(le_at<std::uint32_t>(bytes, 8), 0x10U);

    list.nsids.fill(7);
    EXPECT_EQ(list.size(), spec::active_namespace_id_list::capacity);
}

TEST(identify_descriptors, expected_lengths_follow_the_types)
{
    EXPECT_EQ(spec::expected_length(spec::namespace_id_type::eui64), 8);
    EXPECT_EQ(spec::expected_length(spec::namespace_id_type::nguid), 16);
    EXPECT_EQ(spec::expected_length(spec::namespace_id_type::uuid), 16);
    EXPECT_EQ(spec::expected_length(spec::namespace_id_type::csi), 1);
    EXPECT_EQ(spec::expected_length(static_cast<spec::namespace_id_type>(0)), 0);
    EXPECT_EQ(spec::expected_length(static_cast<spec::namespace_id_type>(5)), 0);
    EXPECT_EQ(static_cast<unsigned>(spec::namespace_id_type::csi), 4U);
}

TEST(identify_descriptors, put_packs_descriptors_and_find_reads_them_back)
{
    spec::namespace_id_descriptor_list list{};
    const std::array<std::uint8_t, 8> eui64{0, 1, 2, 3, 4, 5, 6, 7};
    std::array<std::uint8_t, 16> nguid{};
    nguid.fill(0xee);
    const std::array<std::uint8_t, 1> csi{static_cast<std::uint8_t>(spec::command_set_identifier::zoned)};

    const auto after_eui = list.put(0, spec::namespace_id_type::eui64, eui64);
    ASSERT_TRUE(after_eui.has_value());
    EXPECT_EQ(*after_eui, 12U);
    const auto after_nguid = list.put(*after_eui, spec::namespace_id_type::nguid, nguid);
    ASSERT_TRUE(after_nguid.has_value());
    EXPECT_EQ(*after_nguid, 32U);
    const auto after_csi = list.put(*after_nguid, spec::namespace_id_type::csi, csi);
    ASSERT_TRUE(after_csi.has_value());
    EXPECT_EQ(*after_csi, 37U);

    EXPECT_EQ(list.bytes[0], 0x01);
    EXPECT_EQ(list.bytes[1], 8);
    EXPECT_EQ(list.bytes[2], 0);
    EXPECT_EQ(list.bytes[3], 0);
    EXPECT_EQ(list.bytes[4], 0);
    EXPECT_EQ(list.bytes[11], 7);
    EXPECT_EQ(list.bytes[12], 0x02);
    EXPECT_EQ(list.bytes[13], 16);
    EXPECT_EQ(list.bytes[16], 0xee);
    EXPECT_EQ(list.bytes[31], 0xee);
    EXPECT_EQ(list.bytes[32], 0x04);
    EXPECT_EQ(list.bytes[33], 1);
    EXPECT_EQ(list.bytes[36], 0x02);
    EXPECT_EQ(list.bytes[37], 0);

    const auto found_csi = list.find(spec::namespace_id_type::csi);
    ASSERT_TRUE(found_csi.has_value());
    ASSERT_EQ(found_csi->size(), 1U);
    EXPECT_EQ((*found_csi)[0], 0x02);
    const auto found_eui = list.find(spec::namespace_id_type::eui64);
    ASSERT_TRUE(found_eui.has_value());
    EXPECT_TRUE(std::equal(found_eui->begin(), found_eui->end(), eui64.begin(), eui64.end()));
    EXPECT_FALSE(list.find(spec::namespace_id_type::uuid).has_value());

    const auto first = list.at(0);
    ASSERT_TRUE(first.has_value());
    EXPECT_EQ(first->type, spec::namespace_id_type::eui64);
    EXPECT_EQ(first->next_offset, 12U);
    EXPECT_FALSE(list.at(37).has_value()); // NIDL 0h ends the list
}

TEST(identify_descriptors, put_rejects_wrong_lengths_and_overflow)
{
    spec::namespace_id_descriptor_list list{};
    const std::array<std::uint8_t, 16> sixteen{};
    EXPECT_FALSE(list.put(0, spec::namespace_id_type::eui64, sixteen).has_value());
    EXPECT_FALSE(list.put(0, static_cast<spec::namespace_id_type>(9), sixteen).has_value());
    EXPECT_TRUE(
        std::all_of(list.bytes.begin(), list.bytes.end(), [](std::uint8_t byte) { return byte == 0; }));

    EXPECT_FALSE(list.put(4096 - 19, spec::namespace_id_type::uuid, sixteen).has_value());
    EXPECT_FALSE(list.put(5000, spec::namespace_id_type::uuid, sixteen).has_value());
    const auto end = list.put(4096 - 20, spec::namespace_id_type::uuid, sixteen);
    ASSERT_TRUE(end.has_value());
    EXPECT_EQ(*end, 4096U);
    EXPECT_TRUE(list.at(4096 - 20).has_value());
    EXPECT_FALSE(list.at(4096).has_value());
}

TEST(identify_descriptors, at_rejects_a_descriptor_running_past_the_page)
{
    spec::namespace_id_descriptor_list list{};
    list.bytes[4096 - 8] = static_cast<std::uint8_t>(spec::namespace_id_type::nguid);
    list.bytes[4096 - 7] = 16;
    EXPECT_FALSE(list.at(4096 - 8).has_value());
    EXPECT_FALSE(list.at(4096 - 2).has_value());
}

TEST(identify_io_command_set, vectors_are_64_bit_entries)
{
    spec::identify_io_command_set data{};
    data.vectors[0].set(spec::io_command_set_vector::nvm, true);
    data.vectors[1].set(spec::io_command_set_vector::nvm, true).set(spec::io_command_set_vector::zoned, true);
    data.vectors[511].set(spec::io_command_set_vector::key_value, true);

    EXPECT_EQ(data.vectors[1].raw, 0x5U);
    const page bytes = bytes_of(data);
    EXPECT_EQ(le_at<std::uint64_t>(bytes, 0), 0x1U);
    EXPECT_EQ(le_at<std::uint64_t>(bytes, 8), 0x5U);
    EXPECT_EQ(le_at<std::uint64_t>(bytes, 4088), 0x2U);
}
