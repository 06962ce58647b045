#include <nvmekit/format/identify.hpp>

#include <gtest/gtest.h>

#include <string>

namespace spec = nvmekit::spec;

namespace {

spec::identify_controller example_controller()
{
    spec::identify_controller ctrl{};
    ctrl.vid = 0x1b36;
    ctrl.ssvid = 0x1af4;
    ctrl.set_serial_number("NVMEKIT0001");
    ctrl.set_model_number("nvmekit controller");
    ctrl.set_firmware_revision("0.1.0");
    ctrl.mdts = 5;
    ctrl.cntlid = 1;
    ctrl.ver = 0x00020000;
    ctrl.cntrltype = spec::controller_type::io;
    ctrl.oaes.set(spec::async_events_supported::namespace_attribute, true);
    ctrl.nn = 32;
    ctrl.oacs.set(spec::admin_command_support::format_nvm, true)
        .set(spec::admin_command_support::firmware, true)
        .set(spec::admin_command_support::doorbell_buffer_config, true);
    ctrl.oncs.set(spec::nvm_command_support::compare, true)
        .set(spec::nvm_command_support::write_uncorrectable, true)
        .set(spec::nvm_command_support::dataset_management, true)
        .set(spec::nvm_command_support::write_zeroes, true)
        .set(spec::nvm_command_support::save_select_features, true)
        .set(spec::nvm_command_support::timestamp, true)
        .set(spec::nvm_command_support::copy, true);
    ctrl.frmw.set(spec::firmware_updates::slot1_read_only, true).set(spec::firmware_updates::slot_count, 1);
    ctrl.lpa.set(spec::log_page_attributes::smart_per_namespace, true)
        .set(spec::log_page_attributes::commands_effects, true)
        .set(spec::log_page_attributes::extended_data, true);
    ctrl.vwc.set(spec::volatile_write_cache_support::present, true)
        .set(spec::volatile_write_cache_support::flush_behavior, spec::flush_broadcast::supported);
    ctrl.sqes.set(spec::queue_entry_sizes::required, 6).set(spec::queue_entry_sizes::maximum, 6);
    ctrl.cqes.set(spec::queue_entry_sizes::required, 4).set(spec::queue_entry_sizes::maximum, 4);
    ctrl.sgls.set(spec::sgl_support::support, spec::sgl_data_block_support::supported);
    ctrl.set_subsystem_nqn("nqn.2023-01.io.nvmekit:subsystem0");
    return ctrl;
}

} // namespace

TEST(format_identify, prints_cns_and_csi_names)
{
    EXPECT_EQ(fmt::format("{}", spec::cns::identify_controller), "Identify Controller");
    EXPECT_EQ(fmt::format("{}", spec::cns::io_command_set_independent_namespace),
              "I/O Command Set Independent Identify Namespace");
    EXPECT_EQ(fmt::format("{}", static_cast<spec::cns>(0x1f)), "Reserved (0x1f)");
    EXPECT_EQ(fmt::format("{}", spec::command_set_identifier::nvm), "NVM");
    EXPECT_EQ(fmt::format("{}", spec::command_set_identifier::key_value), "Key Value");
    EXPECT_EQ(fmt::format("{}", static_cast<spec::command_set_identifier>(0x05)), "Reserved (0x05)");
}

TEST(format_identify, prints_controller_types_and_descriptor_types)
{
    EXPECT_EQ(fmt::format("{}", spec::controller_type::discovery), "discovery");
    EXPECT_EQ(fmt::format("{}", spec::controller_type::not_reported), "not reported");
    EXPECT_EQ(fmt::format("{}", static_cast<spec::controller_type>(7)), "reserved (0x07)");
    EXPECT_EQ(fmt::format("{}", spec::namespace_id_type::nguid), "NGUID");
    EXPECT_EQ(fmt::format("{}", static_cast<spec::namespace_id_type>(0)), "Reserved (0x00)");
}

TEST(format_identify, prints_lba_formats_like_nvme_cli)
{
    using spec::lba_format;
    EXPECT_EQ(fmt::format("{}", lba_format{}.with(lba_format::lbads, 12)), "ms:0 lbads:12 rp:0");
    EXPECT_EQ(fmt::format("{}", lba_format{}
                                    .with(lba_format::ms, 8)
                                    .with(lba_format::lbads, 9)
                                    .with(lba_format::rp, spec::lba_relative_performance::good)),
              "ms:8 lbads:9 rp:2");
}

TEST(format_identify, prints_power_states_in_watts)
{
    spec::power_state_descriptor psd{};
    psd.mp = 2500;
    psd.enlat = 16;
    psd.exlat = 4;
    EXPECT_EQ(fmt::format("{}", psd), "mp:25.00W operational enlat:16 exlat:4 rrt:0 rrl:0 rwt:0 rwl:0");

    psd.mp = 905;
    psd.rrt.set(spec::power_state_relative::value, 1);
    psd.rwl.set(spec::power_state_relative::value, 3);
    EXPECT_EQ(fmt::format("{}", psd), "mp:9.05W operational enlat:16 exlat:4 rrt:1 rrl:0 rwt:0 rwl:3");

    psd.mp = 250;
    psd.flags.set(spec::power_state_flags::max_power_scale, true).set(spec::power_state_flags::non_operational, true);
    EXPECT_EQ(fmt::format("{}", psd), "mp:0.0250W non-operational enlat:16 exlat:4 rrt:1 rrl:0 rwt:0 rwl:3");
}

TEST(format_identify, prints_a_controller_summary)
{
    EXPECT_EQ(fmt::format("{}", example_controller()),
              "vid 0x1b36 ssvid 0x1af4 sn \"NVMEKIT0001\" mn \"nvmekit controller\" fr \"0.1.0\"\n"
              "cntlid 1 ver 2.0.0 cntrltype io mdts 5 nn 32 oaes 0x00000100 ctratt 0x00000000\n"
              "oacs 0x0106 oncs 0x015f frmw 0x03 lpa 0x07 vwc 0x07 sqes 0x66 cqes 0x44 sgls 0x00000001\n"
              "subnqn \"nqn.2023-01.io.nvmekit:subsystem0\"");
}

TEST(format_identify, escapes_controller_strings)
{
    spec::identify_controller ctrl = example_controller();
    ctrl.set_serial_number("A\"B");
    ctrl.mn[0] = '\x01';
    ctrl.ver = 0x00010403;
    ctrl.cntrltype = spec::controller_type::discovery;
    const std::string text = fmt::format("{}", ctrl);
    EXPECT_NE(text.find("sn \"A\\\"B\""), std::string::npos) << text;
    EXPECT_NE(text.find("mn \"\\x01vmekit controller\""), std::string::npos) << text;
    EXPECT_NE(text.find("ver 1.4.3 cntrltype discovery"), std::string::npos) << text;
}

TEST(format_identify, prints_a_namespace_with_its_lba_formats)
{
    spec::identify_namespace ns{};
    ns.nsze = 0x200000;
    ns.ncap = 0x200000;
    ns.nuse = 0x1000;
    ns.nsfeat.set(spec::namespace_features::thin_provisioning, true);
    ns.nlbaf = 1;
    ns.flbas.set_format_index(1);
    for (std::size_t i = 0; i < ns.nguid.size(); ++i) {
        ns.nguid[i] = static_cast<std::uint8_t>(i);
    }
    ns.eui64 = {0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77};
    ns.lbaf[0] = spec::lba_format{}.with(spec::lba_format::lbads, 9);
    ns.lbaf[1] = spec::lba_format{}.with(spec::lba_format::lbads, 12);
    ns.lbaf[2] = spec::lba_format{}.with(spec::lba_format::lbads, 13); // beyond NLBAF: not printed

    EXPECT_EQ(fmt::format("{}", ns),
              "nsze 0x200000 ncap 0x200000 nuse 0x1000 nsfeat 0x01 nlbaf 1 flbas 0x01 mc 0x00 dpc 0x00 dps 0x00 "
              "nmic 0x00\n"
              "nguid 000102030405060708090a0b0c0d0e0f eui64 0011223344556677\n"
              "lbaf0 ms:0 lbads:9 rp:0\n"
              "lbaf1 ms:0 lbads:12 rp:0 (in use)");
}

TEST(format_identify, prints_a_single_format_namespace)
{
    spec::identify_namespace ns{};
    ns.nsze = 0x800;
    ns.ncap = 0x800;
    ns.lbaf[0] = spec::lba_format{}.with(spec::lba_format::lbads, 9);
    ns.flbas.set(spec::formatted_lba_size::extended_metadata, true);
    EXPECT_EQ(fmt::format("{}", ns),
              "nsze 0x800 ncap 0x800 nuse 0x0 nsfeat 0x00 nlbaf 0 flbas 0x10 mc 0x00 dpc 0x00 dps 0x00 nmic 0x00\n"
              "nguid 00000000000000000000000000000000 eui64 0000000000000000\n"
              "lbaf0 ms:0 lbads:9 rp:0 (in use)");
}

TEST(format_identify, prints_nvm_controller_limits)
{
    spec::nvm_identify_controller nvm{};
    nvm.vsl = 7;
    nvm.wzsl = 8;
    nvm.dmrl = 128;
    nvm.dmrsl = 0x10000;
    nvm.dmsl = 0x200000;
    EXPECT_EQ(fmt::format("{}", nvm), "vsl 7 wzsl 8 wusl 0 dmrl 128 dmrsl 65536 dmsl 2097152");
}
