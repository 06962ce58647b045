#include <nvmekit/format/fabrics.hpp>

#include <gtest/gtest.h>

namespace spec = nvmekit::spec;

TEST(format_fabrics, prints_connect)
{
    auto connect = spec::make_fabrics_command<spec::connect_command>(1);
    connect.qid = 0;
    connect.sqsize = 31;
    connect.kato = 120000;
    EXPECT_EQ(fmt::format("{}", connect), "CONNECT cid=1 qid=0 sqsize=31 kato=120000 recfmt=0");
    connect.cattr.set(spec::connect_attributes::disable_sq_flow_control, true);
    EXPECT_EQ(fmt::format("{}", connect), "CONNECT cid=1 qid=0 sqsize=31 kato=120000 recfmt=0 cattr=0x4");
}

TEST(format_fabrics, prints_property_get_and_set)
{
    auto get = spec::make_fabrics_command<spec::property_get_command>(2);
    get.attrib.set(spec::property_attributes::size, spec::property_size::eight_bytes);
    EXPECT_EQ(fmt::format("{}", get), "PROPERTY_GET cid=2 ofst=0x0 size=8");

    auto set = spec::make_fabrics_command<spec::property_set_command>(3);
    set.ofst = 0x14;
    set.value = 0x460001;
    EXPECT_EQ(fmt::format("{}", set), "PROPERTY_SET cid=3 ofst=0x14 size=4 value=0x460001");

    get.attrib = spec::property_attributes{0x2};
    EXPECT_EQ(fmt::format("{}", get), "PROPERTY_GET cid=2 ofst=0x0 size=reserved(0x2)");
}

TEST(format_fabrics, prints_disconnect_and_authentication)
{
    EXPECT_EQ(fmt::format("{}", spec::make_fabrics_command<spec::disconnect_command>(4)),
              "DISCONNECT cid=4 recfmt=0");
    auto send = spec::make_fabrics_command<spec::authentication_send_command>(5);
    send.secp = 0xe9;
    send.spsp0 = 1;
    send.spsp1 = 1;
    send.tl = 64;
    EXPECT_EQ(fmt::format("{}", send), "AUTH_SEND cid=5 secp=0xe9 spsp0=0x1 spsp1=0x1 tl=64");
    auto receive = spec::make_fabrics_command<spec::authentication_receive_command>(6);
    receive.secp = 0xe9;
    receive.al = 1024;
    EXPECT_EQ(fmt::format("{}", receive), "AUTH_RECEIVE cid=6 secp=0xe9 spsp0=0x0 spsp1=0x0 al=1024");
}

TEST(format_fabrics, generic_command_prints_as_its_fctype)
{
    auto set = spec::make_fabrics_command<spec::property_set_command>(3);
    set.ofst = 0x14;
    set.value = 0x460001;
    EXPECT_EQ(fmt::format("{}", spec::to_fabrics_command(set)),
              "PROPERTY_SET cid=3 ofst=0x14 size=4 value=0x460001");

    auto unknown = spec::to_fabrics_command(spec::make_fabrics_command<spec::disconnect_command>(7));
    unknown.fctype = static_cast<spec::fabrics_command_type>(0x7e);
    EXPECT_EQ(fmt::format("{}", unknown), "FABRICS cid=7 fctype=0x7e");
}

TEST(format_fabrics, prints_connect_data_with_uuid_shaped_hostid)
{
    spec::connect_data data{};
    data.hostid = {0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77,
                   0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff};
    data.cntlid = spec::dynamic_controller_id;
    data.set_subsystem_nqn("nqn.2014-08.org.example:disk1");
    data.set_host_nqn("nqn.2014-08.org.nvmexpress:uuid:1234");
    EXPECT_EQ(fmt::format("{}", data), "hostid=00112233-4455-6677-8899-aabbccddeeff cntlid=0xffff "
                                       "subnqn=\"nqn.2014-08.org.example:disk1\" "
                                       "hostnqn=\"nqn.2014-08.org.nvmexpress:uuid:1234\"");
}

TEST(format_fabrics, prints_connect_response)
{
    spec::connect_response_dword0 dword{0x0001};
    EXPECT_EQ(fmt::format("{}", dword), "cntlid=0x1");
    dword.set(spec::connect_response_dword0::authentication_required, true)
        .set(spec::connect_response_dword0::secure_channel_required, true);
    EXPECT_EQ(fmt::format("{}", dword), "cntlid=0x1 ATR ASCR");
}

TEST(format_fabrics, prints_discovery_log)
{
    spec::discovery_log_header header{};
    header.genctr = 3;
    header.numrec = 2;
    EXPECT_EQ(fmt::format("{}", header), "genctr=3 numrec=2 recfmt=0");

    spec::discovery_log_entry entry{};
    entry.trtype = spec::transport_type::tcp;
    entry.adrfam = spec::address_family::ipv4;
    entry.subtype = spec::discovery_subsystem_type::nvm;
    entry.portid = 1;
    entry.cntlid = 0xffff;
    entry.set_address("192.168.0.10");
    entry.set_service_id("4420");
    entry.set_subsystem_nqn("nqn.2014-08.org.example:disk1");
    EXPECT_EQ(fmt::format("{}", entry),
              "trtype=tcp adrfam=ipv4 subtype=nvme portid=1 cntlid=0xffff "
              "traddr=192.168.0.10 trsvcid=4420 subnqn=\"nqn.2014-08.org.example:disk1\"");

    entry.trtype = static_cast<spec::transport_type>(0x09);
    entry.subtype = spec::discovery_subsystem_type::current_discovery;
    entry.set_subsystem_nqn(spec::discovery_nqn);
    EXPECT_EQ(fmt::format("{}", entry),
              "trtype=0x9 adrfam=ipv4 subtype=current_discovery portid=1 cntlid=0xffff "
              "traddr=192.168.0.10 trsvcid=4420 "
              "subnqn=\"nqn.2014-08.org.nvmexpress.discovery\"");
}

TEST(format_fabrics, prints_connect_attributes)
{
    EXPECT_EQ(fmt::format("{}", spec::connect_attributes{}), "priority=0 disable_sqfc=0");
    EXPECT_EQ(fmt::format("{}", spec::connect_attributes{0x06}), "priority=2 disable_sqfc=1");
    EXPECT_EQ(fmt::format("{}", spec::connect_attributes{}.with(spec::connect_attributes::priority_class, 3)),
              "priority=3 disable_sqfc=0");
}

TEST(format_fabrics, prints_where_an_invalid_connect_parameter_is)
{
    using dword = spec::connect_invalid_parameter_dword0;
    // QID at command byte 42.
    EXPECT_EQ(fmt::format("{}", dword{}.with(dword::ipo, 42)), "ipo=0x2a iattr=0x00 (command)");
    // SUBNQN at byte 256 of the Connect data.
    EXPECT_EQ(fmt::format("{}", dword{}.with(dword::ipo, 256).with(dword::in_connect_data, true)),
              "ipo=0x100 iattr=0x01 (connect data)");
}

TEST(format_fabrics, prints_property_sizes_and_attributes)
{
    EXPECT_EQ(fmt::format("{}", spec::property_size::four_bytes), "4 bytes");
    EXPECT_EQ(fmt::format("{}", spec::property_size::eight_bytes), "8 bytes");
    EXPECT_EQ(fmt::format("{}", static_cast<spec::property_size>(2)), "0x2");
    EXPECT_EQ(fmt::format("{}", spec::property_attributes{0x1}), "size=8");
    EXPECT_EQ(fmt::format("{}", spec::property_attributes{}), "size=4");
    EXPECT_EQ(fmt::format("{}", spec::property_attributes{0x7}), "size=reserved(0x7)");
}

TEST(format_fabrics, prints_transport_requirements)
{
    EXPECT_EQ(fmt::format("{}", spec::secure_channel_requirement::not_specified), "not specified");
    EXPECT_EQ(fmt::format("{}", spec::secure_channel_requirement::not_required), "not required");
    EXPECT_EQ(fmt::format("{}", static_cast<spec::secure_channel_requirement>(3)), "0x3");
    EXPECT_EQ(fmt::format("{}", spec::transport_requirements{}),
              "secure_channel=not specified disable_sqfc=0");
    EXPECT_EQ(fmt::format("{}", spec::transport_requirements{0x05}),
              "secure_channel=required disable_sqfc=1");
}

TEST(format_fabrics, prints_discovery_entry_flags)
{
    EXPECT_EQ(fmt::format("{}", spec::discovery_entry_flags{}), "0x0000");
    EXPECT_EQ(fmt::format("{}", spec::discovery_entry_flags{0x0003}), "0x0003 [dupretinfo epcsd]");
    EXPECT_EQ(fmt::format("{}", spec::discovery_entry_flags{0x0002}), "0x0002 [epcsd]");
}
