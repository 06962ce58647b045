#include <nvmekit/spec/fabrics.hpp>

#include <array>
#include <bit>
#include <cstdint>
#include <string>

#include <gtest/gtest.h>

#include "../wire_bytes.hpp"

namespace spec = nvmekit::spec;
using nvmekit_test::bytes_of;

static_assert(spec::FabricsCapsuleCommand<spec::connect_command>);
static_assert(spec::FabricsCapsuleCommand<spec::property_get_command>);
static_assert(spec::FabricsCapsuleCommand<spec::authentication_receive_command>);
static_assert(!spec::FabricsCapsuleCommand<spec::fabrics_command>);
static_assert(!spec::FabricsCapsuleCommand<spec::submission_queue_entry>);
static_assert(!spec::FabricsCapsuleCommand<spec::connect_data>);

TEST(fabrics, constants_match_the_spec)
{
    EXPECT_EQ(spec::discovery_nqn, "nqn.2014-08.org.nvmexpress.discovery");
    EXPECT_EQ(spec::nqn_max_length, 223U);
    EXPECT_EQ(spec::nqn_field_size, 256U);
    EXPECT_EQ(spec::tcp_default_port, 4420);
    EXPECT_EQ(spec::tcp_discovery_port, 8009);
    EXPECT_EQ(spec::discovery_log_page_id, 0x70);
    EXPECT_TRUE(spec::is_valid_nqn_length(spec::discovery_nqn));
    EXPECT_TRUE(spec::is_valid_nqn_length(std::string(223, 'n')));
    EXPECT_FALSE(spec::is_valid_nqn_length(std::string(224, 'n')));
    EXPECT_FALSE(spec::is_valid_nqn_length(""));
}

TEST(fabrics, an_nqn_is_nqn_dot_then_a_name_of_at_most_223_bytes)
{
    static_assert(spec::is_valid_nqn(spec::discovery_nqn));
    EXPECT_TRUE(spec::is_valid_nqn("nqn.2016-06.io.spdk:cnode1"));
    EXPECT_TRUE(spec::is_valid_nqn("nqn." + std::string(219, 'n')));
    EXPECT_FALSE(spec::is_valid_nqn("nqn." + std::string(220, 'n')));
    EXPECT_FALSE(spec::is_valid_nqn("nqn."));
    EXPECT_FALSE(spec::is_valid_nqn("not-an-nqn"));
    EXPECT_FALSE(spec::is_valid_nqn("NQN.2016-06.io.spdk:cnode1"));
    EXPECT_FALSE(spec::is_valid_nqn(""));
}

TEST(fabrics, made_command_carries_opcode_7f_fctype_and_cid)
{
    const auto connect = spec::make_fabrics_command<spec::connect_command>(0x1234);
    const spec::submission_queue_entry entry = spec::to_sqe(connect);
    EXPECT_EQ(entry.opcode(), 0x7f);
    EXPECT_EQ(entry.command_id(), 0x1234);
    EXPECT_EQ(entry.nsid & 0xffU, 0x01U); // FCTYPE is byte 04
    EXPECT_TRUE(spec::is_fabrics_command(entry));
    EXPECT_EQ(bytes_of(connect)[4], 0x01);

    EXPECT_EQ(bytes_of(spec::make_fabrics_command<spec::property_set_command>(1))[4], 0x00);
    EXPECT_EQ(bytes_of(spec::make_fabrics_command<spec::property_get_command>(1))[4], 0x04);
    EXPECT_EQ(bytes_of(spec::make_fabrics_command<spec::authentication_send_command>(1))[4], 0x05);
    EXPECT_EQ(bytes_of(spec::make_fabrics_command<spec::authentication_receive_command>(1))[4], 0x06);
    EXPECT_EQ(bytes_of(spec::make_fabrics_command<spec::disconnect_command>(1))[4], 0x08);

    spec::submission_queue_entry read{};
    read.cdw0.set(spec::command_dword0::opc, 0x02);
    EXPECT_FALSE(spec::is_fabrics_command(read));
}

TEST(fabrics, connect_fields_land_in_command_dwords_10_to_12)
{
    auto connect = spec::make_fabrics_command<spec::connect_command>(7);
    connect.recfmt = 0;
    connect.qid = 3;
    connect.sqsize = 127;
    connect.cattr.set(spec::connect_attributes::priority_class, 2)
        .set(spec::connect_attributes::disable_sq_flow_control, true);
    connect.kato = 120000;
    connect.sgl1 = spec::data_pointer{0x1000, 0x0000'0400};
    EXPECT_EQ(connect.cattr.raw, 0x06);
    EXPECT_EQ(connect.queue_entries(), 128U);

    const auto entry = spec::to_sqe(connect);
    EXPECT_EQ(entry.cdw10, 0x0003'0000U); // QID 43:42, RECFMT 41:40
    EXPECT_EQ(entry.cdw11, 0x0006'007fU); // CATTR 46, SQSIZE 45:44
    EXPECT_EQ(entry.cdw12, 120000U);      // KATO 51:48
    EXPECT_EQ(entry.dptr.prp1, 0x1000U);
    EXPECT_EQ(spec::fabrics_command_cast<spec::connect_command>(entry), connect);
    EXPECT_EQ(spec::fabrics_command_cast<spec::connect_command>(spec::to_fabrics_command(entry)), connect);
}

TEST(fabrics, generic_capsule_exposes_fctype_and_type_specific_bytes)
{
    auto property_get = spec::make_fabrics_command<spec::property_get_command>(9);
    property_get.ofst = 0x1c;
    const spec::fabrics_command generic = spec::to_fabrics_command(property_get);
    EXPECT_EQ(generic.fctype, spec::fabrics_command_type::property_get);
    EXPECT_EQ(generic.command_id(), 9);
    EXPECT_EQ(generic.type_specific[4], 0x1c); // OFST at byte 44 = type specific byte 4
    EXPECT_EQ(spec::to_sqe(generic), spec::to_sqe(property_get));
}

TEST(fabrics, property_get_and_set_encode_attrib_offset_and_value)
{
    auto get = spec::make_fabrics_command<spec::property_get_command>(2);
    get.attrib.set(spec::property_attributes::size, spec::property_size::eight_bytes);
    get.ofst = 0x0;
    auto entry = spec::to_sqe(get);
    EXPECT_EQ(entry.cdw10, 0x1U);
    EXPECT_EQ(entry.cdw11, 0x0U);
    EXPECT_EQ(get.size(), spec::property_size::eight_bytes);

    auto set = spec::make_fabrics_command<spec::property_set_command>(3);
    set.attrib.set(spec::property_attributes::size, spec::property_size::four_bytes);
    set.ofst = 0x14;
    set.value = 0x0000'0001'0046'0001ULL;
    entry = spec::to_sqe(set);
    EXPECT_EQ(entry.cdw10, 0x0U);
    EXPECT_EQ(entry.cdw11, 0x14U);
    EXPECT_EQ(entry.cdw12, 0x0046'0001U);
    EXPECT_EQ(entry.cdw13, 0x1U);

    EXPECT_EQ(spec::property_size_bytes(spec::property_size::four_bytes), 4U);
    EXPECT_EQ(spec::property_size_bytes(spec::property_size::eight_bytes), 8U);
    EXPECT_EQ(spec::property_size_bytes(static_cast<spec::property_size>(2)), 0U);
    EXPECT_EQ(spec::property_attributes{0xfa}.get(spec::property_attributes::size),
              static_cast<spec::property_size>(2));
}

TEST(fabrics, property_get_value_spans_cqe_dwords_0_and_1)
{
    spec::completion_queue_entry entry{};
    spec::set_property_get_value(entry, 0x0000'0020'ff01'0fffULL);
    EXPECT_EQ(entry.dw0, 0xff01'0fffU);
    EXPECT_EQ(entry.dw1, 0x20U);
    EXPECT_EQ(spec::property_get_value(entry), 0x0000'0020'ff01'0fffULL);
}

TEST(fabrics, disconnect_and_authentication_layouts)
{
    auto disconnect = spec::make_fabrics_command<spec::disconnect_command>(4);
    disconnect.recfmt = 0xabcd;
    EXPECT_EQ(spec::to_sqe(disconnect).cdw10, 0xabcdU);

    auto send = spec::make_fabrics_command<spec::authentication_send_command>(5);
    send.secp = spec::authentication_security_protocol;
    send.spsp0 = 0x01;
    send.spsp1 = 0x02;
    send.tl = 64;
    auto entry = spec::to_sqe(send);
    EXPECT_EQ(entry.cdw10, 0xe902'0100U); // SECP 43, SPSP1 42, SPSP0 41
    EXPECT_EQ(entry.cdw11, 64U);

    auto receive = spec::make_fabrics_command<spec::authentication_receive_command>(6);
    receive.secp = 0xe9;
    receive.al = 1024;
    entry = spec::to_sqe(receive);
    EXPECT_EQ(entry.cdw10, 0xe900'0000U);
    EXPECT_EQ(entry.cdw11, 1024U);
}

TEST(connect_data, nqn_fields_are_nul_padded_and_read_back_trimmed)
{
    spec::connect_data data{};
    data.cntlid = spec::dynamic_controller_id;
    EXPECT_TRUE(data.set_subsystem_nqn("nqn.2014-08.org.example:disk1"));
    EXPECT_TRUE(data.set_host_nqn("nqn.2014-08.org.nvmexpress:uuid:1234"));
    EXPECT_EQ(data.subsystem_nqn(), "nqn.2014-08.org.example:disk1");
    EXPECT_EQ(data.host_nqn(), "nqn.2014-08.org.nvmexpress:uuid:1234");

    const auto bytes = bytes_of(data);
    EXPECT_EQ(bytes[16], 0xff);
    EXPECT_EQ(bytes[17], 0xff);
    EXPECT_EQ(bytes[256], 'n');
    EXPECT_EQ(bytes[256 + 29], 0); // NUL after the 29-character SUBNQN
    EXPECT_EQ(bytes[511], 0);
    EXPECT_EQ(bytes[512 + 35], '4');
    EXPECT_EQ(bytes[512 + 36], 0);

    EXPECT_TRUE(data.set_subsystem_nqn("short"));
    EXPECT_EQ(data.subsystem_nqn(), "short");
    EXPECT_EQ(bytes_of(data)[256 + 6], 0); // the longer old value is cleared
}

TEST(connect_data, an_nqn_reads_back_byte_for_byte_up_to_its_nul)
{
    // An NQN with trailing spaces is another NQN: nothing is trimmed from SUBNQN or HOSTNQN.
    spec::connect_data data{};
    EXPECT_TRUE(data.set_subsystem_nqn("nqn.2014-08.org.example:disk1 "));
    EXPECT_TRUE(data.set_host_nqn("nqn.2014-08.org.nvmexpress:uuid:1234  "));
    EXPECT_EQ(data.subsystem_nqn(), "nqn.2014-08.org.example:disk1 ");
    EXPECT_EQ(data.host_nqn(), "nqn.2014-08.org.nvmexpress:uuid:1234  ");
}

TEST(connect_data, too_long_nqn_is_cut_leaving_the_terminating_nul)
{
    spec::connect_data data{};
    const std::string long_nqn(300, 'x');
    EXPECT_FALSE(data.set_host_nqn(long_nqn));
    EXPECT_EQ(data.host_nqn().size(), 255U);
    EXPECT_EQ(data.hostnqn[255], '\0');
}

TEST(connect_response, dword0_holds_cntlid_and_authentication_requirements)
{
    spec::connect_response_dword0 dword{};
    dword.set(spec::connect_response_dword0::cntlid, 5)
        .set(spec::connect_response_dword0::authentication_required, true);
    EXPECT_EQ(dword.raw, 0x0002'0005U);
    dword.set(spec::connect_response_dword0::secure_channel_required, true);
    EXPECT_EQ(dword.raw, 0x0006'0005U);
    EXPECT_EQ(dword.get(spec::connect_response_dword0::authreq), 0x6);

    spec::connect_invalid_parameter_dword0 invalid{};
    invalid.set(spec::connect_invalid_parameter_dword0::in_connect_data, true)
        .set(spec::connect_invalid_parameter_dword0::ipo, 16);
    EXPECT_EQ(invalid.raw, 0x0001'0010U);
    EXPECT_EQ(invalid.get(spec::connect_invalid_parameter_dword0::iattr), 1);
}

TEST(discovery_log, header_layout)
{
    spec::discovery_log_header header{};
    header.genctr = 0x0102'0304'0506'0708ULL;
    header.numrec = 2;
    header.recfmt = 0;
    const auto bytes = bytes_of(header);
    EXPECT_EQ(bytes[0], 0x08);
    EXPECT_EQ(bytes[7], 0x01);
    EXPECT_EQ(bytes[8], 0x02);
}

TEST(discovery_log, entry_fields_and_space_padded_strings)
{
    spec::discovery_log_entry entry{};
    entry.trtype = spec::transport_type::tcp;
    entry.adrfam = spec::address_family::ipv4;
    entry.subtype = spec::discovery_subsystem_type::nvm;
    entry.treq.set(spec::transport_requirements::secure_channel, spec::secure_channel_requirement::required)
        .set(spec::transport_requirements::disable_sq_flow_control, true);
    entry.portid = 0x0102;
    entry.cntlid = 0xffff;
    entry.asqsz = 32;
    entry.eflags.set(spec::discovery_entry_flags::explicit_persistent_connection, true);
    EXPECT_TRUE(entry.set_service_id("4420"));
    EXPECT_TRUE(entry.set_address("192.168.0.10"));
    EXPECT_TRUE(entry.set_subsystem_nqn("nqn.2014-08.org.example:disk1"));

    const auto bytes = bytes_of(entry);
    EXPECT_EQ(bytes[0], 0x03);
    EXPECT_EQ(bytes[1], 0x01);
    EXPECT_EQ(bytes[2], 0x02);
    EXPECT_EQ(bytes[3], 0x05);
    EXPECT_EQ(bytes[4], 0x02);
    EXPECT_EQ(bytes[5], 0x01);
    EXPECT_EQ(bytes[8], 32);
    EXPECT_EQ(bytes[10], 0x02);
    EXPECT_EQ(bytes[32], '4');
    EXPECT_EQ(bytes[36], ' ');
    EXPECT_EQ(bytes[63], ' ');
    EXPECT_EQ(bytes[512], '1');
    EXPECT_EQ(bytes[512 + 12], ' ');
    EXPECT_EQ(bytes[256 + 29], 0);

    EXPECT_EQ(entry.service_id(), "4420");
    EXPECT_EQ(entry.address(), "192.168.0.10");
    EXPECT_EQ(entry.subsystem_nqn(), "nqn.2014-08.org.example:disk1");

    EXPECT_FALSE(entry.set_service_id(std::string(33, '9')));
    EXPECT_EQ(entry.service_id().size(), 32U);
}

TEST(discovery_log, strings_padded_with_nul_also_read_back)
{
    spec::discovery_log_entry entry{};
    entry.traddr[0] = '1';
    entry.traddr[1] = '0';
    EXPECT_EQ(entry.address(), "10");
}

TEST(discovery_log, names_enumerated_values)
{
    EXPECT_EQ(spec::name(spec::transport_type::rdma), "rdma");
    EXPECT_EQ(spec::name(spec::transport_type::intra_host), "loop");
    EXPECT_TRUE(spec::name(static_cast<spec::transport_type>(0x04)).empty());
    EXPECT_EQ(spec::name(spec::address_family::ipv6), "ipv6");
    EXPECT_EQ(spec::name(spec::address_family::infiniband), "ib");
    EXPECT_EQ(spec::name(spec::discovery_subsystem_type::referral), "referral");
    EXPECT_EQ(spec::name(spec::discovery_subsystem_type::current_discovery), "current_discovery");
    EXPECT_EQ(spec::name(spec::secure_channel_requirement::not_required), "not required");
    EXPECT_EQ(static_cast<unsigned>(spec::address_family::intra_host), 0xfeU);
}
