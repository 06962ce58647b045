#include <nvmekit/format/identify.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include <gtest/gtest.h>

namespace spec = nvmekit::spec;

namespace {

spec::identify_controller example_controller()
{
    spec::identify_controller ctrl{};
    ctrl.vid = 0xf0e5;
    ctrl.ssvid = 0x5a5a;
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
    psd.flags.set(spec::power_state_flags::max_power_scale, true)
        .set(spec::power_state_flags::non_operational, true);
    EXPECT_EQ(fmt::format("{}", psd), "mp:0.0250W non-operational enlat:16 exlat:4 rrt:1 rrl:0 rwt:0 rwl:3");
}

TEST(format_identify, prints_a_controller_summary)
{
    EXPECT_EQ(fmt::format("{}", example_controller()),
              "vid 0xf0e5 ssvid 0x5a5a sn \"NVMEKIT0001\" mn \"nvmekit controller\" fr \"0.1.0\"\n"
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

    EXPECT_EQ(
        fmt::format("{}", ns),
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
    EXPECT_EQ(
        fmt::format("{}", ns),
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

TEST(format_identify, prints_power_state_fields)
{
    EXPECT_EQ(fmt::format("{}", spec::power_scale::not_reported), "not_reported");
    EXPECT_EQ(fmt::format("{}", spec::power_scale::hundred_microwatts), "0.0001W");
    EXPECT_EQ(fmt::format("{}", spec::power_scale::ten_milliwatts), "0.01W");
    EXPECT_EQ(fmt::format("{}", static_cast<spec::power_scale>(3)), "0x3");
    EXPECT_EQ(fmt::format("{}", spec::power_state_flags{}), "0x00");
    EXPECT_EQ(fmt::format("{}", spec::power_state_flags{0x03}), "0x03 [mxps nops]");
    EXPECT_EQ(fmt::format("{}", spec::power_state_flags{0x02}), "0x02 [nops]");
    EXPECT_EQ(fmt::format("{}", spec::power_state_relative{}.with(spec::power_state_relative::value, 31)),
              "31");
    EXPECT_EQ(fmt::format("{}", spec::idle_power_attributes{0x80}), "ips=0.01W");
    EXPECT_EQ(fmt::format("{}", spec::active_power_attributes{0x42}), "apw=2 aps=0.0001W");
    EXPECT_EQ(fmt::format("{}", spec::active_power_attributes{}), "apw=0 aps=not_reported");
}

TEST(format_identify, prints_controller_capability_flags_with_their_names)
{
    EXPECT_EQ(fmt::format("{}", spec::admin_command_support{0x0106}), "0x0106 [format firmware dbbuf]");
    EXPECT_EQ(fmt::format("{}", spec::admin_command_support{0x07ff}),
              "0x07ff [security format firmware ns_mgmt self_test directives nvme_mi virt_mgmt dbbuf "
              "get_lba_status "
              "lockdown]");
    EXPECT_EQ(fmt::format("{}", spec::admin_command_support{}), "0x0000");
    EXPECT_EQ(fmt::format("{}", spec::controller_multipath_caps{0x0b}), "0x0b [mports mctrs anars]");
    EXPECT_EQ(fmt::format("{}", spec::async_events_supported{0x8000'0300}), "0x80000300 [nsan fan dlpcn]");
    EXPECT_EQ(fmt::format("{}", spec::async_events_supported{0x0800'7800}),
              "0x08007800 [anacn plealcn lsian egealcn zdcn]");
    EXPECT_EQ(fmt::format("{}", spec::controller_attributes{0x8001}), "0x00008001 [hids elbas]");
    EXPECT_EQ(fmt::format("{}", spec::controller_attributes{0x7ffe}),
              "0x00007ffe [nopspm nsets rrlvls egs plm tbkas ng sqa ulist mds fcm vcm deg dnvms]");
    EXPECT_EQ(fmt::format("{}", spec::log_page_attributes{0x07}), "0x07 [smart_per_ns cmd_effects ext_data]");
    EXPECT_EQ(fmt::format("{}", spec::log_page_attributes{0x78}), "0x78 [telemetry pel supported_logs da4]");
    EXPECT_EQ(fmt::format("{}", spec::nvm_command_support{0x015f}),
              "0x015f [compare write_uncor dsm write_zeroes save_select timestamp copy]");
    EXPECT_EQ(fmt::format("{}", spec::nvm_command_support{0x00a0}), "0x00a0 [reservations verify]");
    EXPECT_EQ(fmt::format("{}", spec::fused_operation_support{0x0001}), "0x0001 [compare_write]");
    EXPECT_EQ(fmt::format("{}", spec::format_nvm_attributes{0x05}), "0x05 [format_all crypto_erase]");
    EXPECT_EQ(fmt::format("{}", spec::format_nvm_attributes{0x02}), "0x02 [erase_all]");
}

TEST(format_identify, prints_controller_multi_field_bytes_as_name_value_pairs)
{
    EXPECT_EQ(fmt::format("{}", example_controller().frmw), "slot1_ro=1 slots=1 activate_without_reset=0");
    EXPECT_EQ(fmt::format("{}", spec::firmware_updates{0x1e}), "slot1_ro=0 slots=7 activate_without_reset=1");
    EXPECT_EQ(fmt::format("{}", example_controller().sqes), "required=6 max=6");
    EXPECT_EQ(fmt::format("{}", spec::queue_entry_sizes{0x64}), "required=4 max=6");
    EXPECT_EQ(fmt::format("{}", example_controller().vwc), "present=1 flush_broadcast=supported");
    EXPECT_EQ(fmt::format("{}", spec::volatile_write_cache_support{0x04}),
              "present=0 flush_broadcast=not_supported");
    EXPECT_EQ(fmt::format("{}", spec::volatile_write_cache_support{0x02}), "present=0 flush_broadcast=0x1");
    EXPECT_EQ(fmt::format("{}", spec::flush_broadcast::not_indicated), "not_indicated");
}

TEST(format_identify, prints_sgl_support_fields_in_bit_order)
{
    EXPECT_EQ(
        fmt::format("{}", example_controller().sgls),
        "support=supported keyed=0 bit_bucket=0 byte_aligned_mptr=0 oversized=0 mptr_sgl=0 address_offset=0 "
        "transport=0");
    EXPECT_EQ(fmt::format("{}", spec::sgl_support{0x003f'0006}),
              "support=dword_aligned keyed=1 bit_bucket=1 byte_aligned_mptr=1 oversized=1 mptr_sgl=1 "
              "address_offset=1 transport=1");
    EXPECT_EQ(fmt::format("{}", spec::sgl_data_block_support::not_supported), "not_supported");
    EXPECT_EQ(fmt::format("{}", static_cast<spec::sgl_data_block_support>(3)), "0x3");
}

TEST(format_identify, prints_namespace_capability_flags_with_their_names)
{
    EXPECT_EQ(fmt::format("{}", spec::namespace_features{0x11}), "0x11 [thinp optperf]");
    EXPECT_EQ(fmt::format("{}", spec::namespace_features{0x0e}), "0x0e [nsabp dae uidreuse]");
    EXPECT_EQ(fmt::format("{}", spec::metadata_capabilities{0x03}), "0x03 [extended separate]");
    EXPECT_EQ(fmt::format("{}", spec::protection_capabilities{0x19}), "0x19 [type1 pi_first pi_last]");
    EXPECT_EQ(fmt::format("{}", spec::protection_capabilities{0x06}), "0x06 [type2 type3]");
    EXPECT_EQ(fmt::format("{}", spec::namespace_multipath_caps{0x01}), "0x01 [shared]");
    EXPECT_EQ(fmt::format("{}", spec::reservation_capabilities{0x07}), "0x07 [ptpls wes eas]");
    EXPECT_EQ(fmt::format("{}", spec::reservation_capabilities{0xf8}), "0xf8 [wero earo wear eaar iekey]");
    EXPECT_EQ(fmt::format("{}", spec::namespace_attributes{0x01}), "0x01 [write_protected]");
    EXPECT_EQ(fmt::format("{}", spec::namespace_status{0x01}), "0x01 [nrdy]");
    EXPECT_EQ(fmt::format("{}", spec::namespace_status{}), "0x00");
    EXPECT_EQ(fmt::format("{}", spec::protection_information_capabilities{0x05}), "0x05 [16bpists stcrs]");
    EXPECT_EQ(fmt::format("{}", spec::protection_information_capabilities{0x02}), "0x02 [16bpistm]");
}

TEST(format_identify, prints_namespace_multi_field_bytes_as_name_value_pairs)
{
    spec::formatted_lba_size flbas{};
    flbas.set_format_index(17).set(spec::formatted_lba_size::extended_metadata, true);
    EXPECT_EQ(fmt::format("{}", flbas), "lbaf=17 extended=1");
    EXPECT_EQ(fmt::format("{}", spec::formatted_lba_size{0x01}), "lbaf=1 extended=0");
    EXPECT_EQ(fmt::format("{}", spec::protection_settings{0x09}), "pit=type1 pip=1");
    EXPECT_EQ(fmt::format("{}", spec::protection_settings{0x03}), "pit=type3 pip=0");
    EXPECT_EQ(fmt::format("{}", spec::protection_settings{0x05}), "pit=0x5 pip=0");
    EXPECT_EQ(fmt::format("{}", spec::format_progress{0x99}), "supported=1 remaining=25");
    EXPECT_EQ(fmt::format("{}", spec::format_progress{}), "supported=0 remaining=0");
    EXPECT_EQ(fmt::format("{}", spec::deallocate_features{0x09}), "read=zeroes write_zeroes=1 guard_crc=0");
    EXPECT_EQ(fmt::format("{}", spec::deallocate_features{0x12}), "read=ones write_zeroes=0 guard_crc=1");
    EXPECT_EQ(fmt::format("{}", spec::deallocate_features{0x03}), "read=0x3 write_zeroes=0 guard_crc=0");
}

TEST(format_identify, prints_namespace_enums_by_name)
{
    EXPECT_EQ(fmt::format("{}", spec::lba_relative_performance::best), "best");
    EXPECT_EQ(fmt::format("{}", spec::lba_relative_performance::degraded), "degraded");
    EXPECT_EQ(fmt::format("{}", spec::protection_information_type::none), "none");
    EXPECT_EQ(fmt::format("{}", spec::protection_information_type::type2), "type2");
    EXPECT_EQ(fmt::format("{}", spec::deallocated_read_value::not_reported), "not_reported");
    EXPECT_EQ(fmt::format("{}", spec::protection_information_format::guard_16b), "16b_guard");
    EXPECT_EQ(fmt::format("{}", spec::protection_information_format::guard_64b), "64b_guard");
    EXPECT_EQ(fmt::format("{}", static_cast<spec::protection_information_format>(3)), "0x3");
}

TEST(format_identify, prints_nvm_namespace_extended_lba_formats_that_are_set)
{
    using elbaf = spec::extended_lba_format;
    EXPECT_EQ(
        fmt::format(
            "{}",
            elbaf{}.with(elbaf::sts, 48).with(elbaf::pif, spec::protection_information_format::guard_64b)),
        "sts:48 pif:2");

    spec::nvm_identify_namespace nvm{};
    EXPECT_EQ(fmt::format("{}", nvm), "lbstm=0x0 pic=0x0");
    nvm.lbstm = 0xffff;
    nvm.pic.set(spec::protection_information_capabilities::storage_tag_16b, true);
    nvm.elbaf[1] =
        elbaf{}.with(elbaf::sts, 16).with(elbaf::pif, spec::protection_information_format::guard_64b);
    nvm.elbaf[63] = elbaf{}.with(elbaf::pif, spec::protection_information_format::guard_32b);
    EXPECT_EQ(fmt::format("{}", nvm), "lbstm=0xffff pic=0x1 elbaf1=(sts:16 pif:2) elbaf63=(sts:0 pif:1)");
}

TEST(format_identify, prints_the_command_set_independent_namespace)
{
    spec::independent_identify_namespace ns{};
    ns.nmic.set(spec::namespace_multipath_caps::shared, true);
    ns.rescap = spec::reservation_capabilities{0x07};
    ns.anagrpid = 2;
    ns.nvmsetid = 3;
    ns.endgid = 4;
    ns.nstat.set(spec::namespace_status::ready, true);
    EXPECT_EQ(
        fmt::format("{}", ns),
        "nsfeat 0x00 nmic 0x01 rescap 0x07 fpi 0x00 anagrpid 2 nsattr 0x00 nvmsetid 3 endgid 4 nstat 0x01");
}

TEST(format_identify, prints_active_namespace_ids_up_to_the_first_zero)
{
    spec::active_namespace_id_list list{};
    EXPECT_EQ(fmt::format("{}", list), "nsids=[]");
    list.nsids[0] = 1;
    list.nsids[1] = 2;
    list.nsids[2] = 5;
    list.nsids[4] = 9; // after the terminating zero: not listed
    EXPECT_EQ(fmt::format("{}", list), "nsids=[1, 2, 5]");
    for (std::size_t i = 0; i < list.nsids.size(); ++i) {
        list.nsids[i] = static_cast<std::uint32_t>(i + 1);
    }
    const std::string full = fmt::format("{}", list);
    EXPECT_EQ(full.substr(full.size() - 13), ", 1023, 1024]");
}

TEST(format_identify, prints_namespace_id_descriptors)
{
    const std::array<std::uint8_t, 8> eui64{0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77};
    std::array<std::uint8_t, 16> nguid{};
    for (std::size_t i = 0; i < nguid.size(); ++i) {
        nguid[i] = static_cast<std::uint8_t>(0xf0 + i);
    }
    const std::array<std::uint8_t, 16> uuid{0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0,
                                            0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef};
    const std::array<std::uint8_t, 1> csi{static_cast<std::uint8_t>(spec::command_set_identifier::zoned)};

    spec::namespace_id_descriptor_list list{};
    EXPECT_EQ(fmt::format("{}", list), "none");
    std::size_t offset = *list.put(0, spec::namespace_id_type::eui64, eui64);
    offset = *list.put(offset, spec::namespace_id_type::nguid, nguid);
    offset = *list.put(offset, spec::namespace_id_type::uuid, uuid);
    static_cast<void>(*list.put(offset, spec::namespace_id_type::csi, csi));
    EXPECT_EQ(fmt::format("{}", list), "eui64=0011223344556677 nguid=f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff "
                                       "uuid=12345678-9abc-def0-0123-456789abcdef "
                                       "csi=zoned");
    EXPECT_EQ(fmt::format("{}", *list.at(0)), "eui64=0011223344556677");
}

TEST(format_identify, prints_odd_namespace_id_descriptors_as_raw_bytes)
{
    spec::namespace_id_descriptor_list list{};
    // A reserved type 05h with two bytes, a UUID of the wrong length, an unknown CSI.
    const std::array<std::uint8_t, 17> bytes{0x05, 0x02, 0x00, 0x00, 0xaa, 0xbb, 0x03, 0x02, 0x00,
                                             0x00, 0x00, 0x11, 0x04, 0x01, 0x00, 0x00, 0x07};
    std::copy(bytes.begin(), bytes.end(), list.bytes.begin());
    EXPECT_EQ(fmt::format("{}", list), "0x5=aabb uuid=0011 csi=0x7");

    spec::namespace_id_descriptor_header header{spec::namespace_id_type::csi, 1, {}};
    EXPECT_EQ(fmt::format("{}", header), "nidt=CSI nidl=1");
}

TEST(format_identify, prints_io_command_set_vectors)
{
    using vector = spec::io_command_set_vector;
    EXPECT_EQ(fmt::format("{}", vector{}.with(vector::nvm, true).with(vector::zoned, true)),
              "0x0000000000000005 [nvm zoned]");
    EXPECT_EQ(fmt::format("{}", vector{0x2}), "0x0000000000000002 [key_value]");

    spec::identify_io_command_set sets{};
    EXPECT_EQ(fmt::format("{}", sets), "none");
    sets.vectors[0] = vector{0x1};
    sets.vectors[1] = vector{0x5};
    sets.vectors[511] = vector{0x10};
    EXPECT_EQ(fmt::format("{}", sets), "0:[nvm] 1:[nvm zoned] 511:0x10");
}

TEST(format_identify, controller_list_prints_the_counted_identifiers)
{
    spec::controller_list list{};
    EXPECT_EQ(fmt::format("{}", list), "cntlids=[]");
    list.push_back(1);
    list.push_back(3);
    EXPECT_EQ(fmt::format("{}", list), "cntlids=[1, 3]");
}
