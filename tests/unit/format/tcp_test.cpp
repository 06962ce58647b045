#include <nvmekit/format/tcp.hpp>

#include <gtest/gtest.h>

namespace spec = nvmekit::spec;

TEST(format_tcp, prints_common_header)
{
    const spec::pdu_common_header header{spec::pdu_type::capsule_cmd, spec::pdu_flags{}, 72, 0, 72};
    EXPECT_EQ(fmt::format("{}", header), "CapsuleCmd flags=0x0 hlen=72 pdo=0 plen=72");
    const spec::pdu_common_header reserved{static_cast<spec::pdu_type>(0x08), spec::pdu_flags{0x3}, 8, 0, 8};
    EXPECT_EQ(fmt::format("{}", reserved), "0x8 flags=0x3 hlen=8 pdo=0 plen=8");
}

TEST(format_tcp, prints_connection_setup_pdus)
{
    spec::icreq_pdu request{};
    request.ch = {spec::pdu_type::icreq, spec::pdu_flags{}, 128, 0, 128};
    request.dgst.set(spec::digest_options::hdgst_enable, true);
    request.maxr2t = 0;
    EXPECT_EQ(fmt::format("{}", request),
              "ICReq flags=0x0 hlen=128 pdo=0 plen=128 pfv=0 hpda=0 hdgst=1 ddgst=0 maxr2t=0");

    spec::icresp_pdu response{};
    response.ch = {spec::pdu_type::icresp, spec::pdu_flags{}, 128, 0, 128};
    response.cpda = 1;
    response.dgst.set(spec::digest_options::ddgst_enable, true);
    response.maxh2cdata = 131072;
    EXPECT_EQ(fmt::format("{}", response),
              "ICResp flags=0x0 hlen=128 pdo=0 plen=128 pfv=0 cpda=1 hdgst=0 ddgst=1 maxh2cdata=131072");
}

TEST(format_tcp, prints_termination_requests_for_their_direction)
{
    spec::term_req_pdu term{};
    term.ch = {spec::pdu_type::h2c_term_req, spec::pdu_flags{}, 24, 0, 32};
    term.fes = spec::fatal_error_status::invalid_pdu_header_field;
    term.set_error_information(2);
    EXPECT_EQ(fmt::format("{}", term),
              "H2CTermReq flags=0x0 hlen=24 pdo=0 plen=32 fes=Invalid PDU Header Field (0x01) fei=0x2");
    term.fes = spec::fatal_error_status::limit_exceeded;
    term.set_error_information(0);
    EXPECT_EQ(fmt::format("{}", term),
              "H2CTermReq flags=0x0 hlen=24 pdo=0 plen=32 fes=R2T Limit Exceeded (0x05) fei=0x0");
    term.ch.type = spec::pdu_type::c2h_term_req;
    EXPECT_EQ(fmt::format("{}", term),
              "C2HTermReq flags=0x0 hlen=24 pdo=0 plen=32 fes=Data Transfer Limit Exceeded (0x05) fei=0x0");
    term.fes = static_cast<spec::fatal_error_status>(0x20);
    EXPECT_EQ(fmt::format("{}", term), "C2HTermReq flags=0x0 hlen=24 pdo=0 plen=32 fes=0x20 fei=0x0");
    EXPECT_EQ(fmt::format("{}", spec::fatal_error_status::pdu_sequence_error), "PDU Sequence Error (0x02)");
}

TEST(format_tcp, prints_capsules)
{
    spec::capsule_cmd_pdu command{};
    command.ch = {spec::pdu_type::capsule_cmd, spec::pdu_flags{}, 72, 0, 72};
    command.sqe.cdw0.set(spec::command_dword0::opc, 0x02).set(spec::command_dword0::cid, 5);
    command.sqe.nsid = 1;
    EXPECT_EQ(fmt::format("{}", command), "CapsuleCmd flags=0x0 hlen=72 pdo=0 plen=72 opc=0x2 cid=5 nsid=1");

    auto connect = spec::make_fabrics_command<spec::connect_command>(1);
    connect.sqsize = 31;
    connect.kato = 120000;
    command.ch = {spec::pdu_type::capsule_cmd, spec::pdu_flags{}, 72, 72, 1096};
    command.sqe = spec::to_sqe(connect);
    EXPECT_EQ(
        fmt::format("{}", command),
        "CapsuleCmd flags=0x0 hlen=72 pdo=72 plen=1096 CONNECT cid=1 qid=0 sqsize=31 kato=120000 recfmt=0");

    spec::capsule_resp_pdu response{};
    response.ch = {spec::pdu_type::capsule_resp, spec::pdu_flags{}, 24, 0, 24};
    response.cqe.cid = 5;
    response.cqe.sq_head = 3;
    response.cqe.set_status(spec::status::success(), true);
    EXPECT_EQ(fmt::format("{}", response), "CapsuleResp flags=0x0 hlen=24 pdo=0 plen=24 cid=5 sqhd=3 "
                                           "status=Generic/Successful Completion (0x00)");
    response.cqe.set_status(spec::status{spec::generic_status::invalid_field}.with_dnr(), false);
    EXPECT_EQ(
        fmt::format("{}", response),
        "CapsuleResp flags=0x0 hlen=24 pdo=0 plen=24 cid=5 sqhd=3 status=Generic/Invalid Field (0x02) [DNR]");
}

TEST(format_tcp, prints_data_transfer_pdus)
{
    spec::h2c_data_pdu h2c{};
    h2c.ch = {spec::pdu_type::h2c_data, spec::pdu_flags{}.with(spec::pdu_flags::last_pdu, true), 24, 24,
              4120};
    h2c.cccid = 5;
    h2c.ttag = 1;
    h2c.datal = 4096;
    EXPECT_EQ(fmt::format("{}", h2c),
              "H2CData flags=0x4 hlen=24 pdo=24 plen=4120 cccid=5 ttag=1 datao=0 datal=4096");

    spec::c2h_data_pdu c2h{};
    c2h.ch = {spec::pdu_type::c2h_data, spec::pdu_flags{0x0c}, 24, 24, 4120};
    c2h.cccid = 5;
    c2h.datao = 8192;
    c2h.datal = 4096;
    EXPECT_EQ(fmt::format("{}", c2h),
              "C2HData flags=0xc hlen=24 pdo=24 plen=4120 cccid=5 datao=8192 datal=4096");

    spec::r2t_pdu r2t{};
    r2t.ch = {spec::pdu_type::r2t, spec::pdu_flags{}, 24, 0, 24};
    r2t.cccid = 5;
    r2t.ttag = 1;
    r2t.r2tl = 8192;
    EXPECT_EQ(fmt::format("{}", r2t), "R2T flags=0x0 hlen=24 pdo=0 plen=24 cccid=5 ttag=1 r2to=0 r2tl=8192");
    EXPECT_EQ(fmt::format("{}", spec::pdu_type::c2h_term_req), "C2HTermReq");
}

TEST(format_tcp, prints_pdu_flags_by_name)
{
    EXPECT_EQ(fmt::format("{}", spec::pdu_flags{}), "0x00");
    EXPECT_EQ(fmt::format("{}", spec::pdu_flags{0x0c}), "0x0c [last_pdu success]");
    EXPECT_EQ(fmt::format("{}", spec::pdu_flags{0x03}), "0x03 [hdgstf ddgstf]");
    EXPECT_EQ(fmt::format("{}", spec::pdu_flags{0x80}), "0x80");
}

TEST(format_tcp, prints_digest_options_by_name)
{
    EXPECT_EQ(fmt::format("{}", spec::digest_options{}), "0x00");
    EXPECT_EQ(fmt::format("{}", spec::digest_options{0x01}), "0x01 [hdgst]");
    EXPECT_EQ(fmt::format("{}", spec::digest_options{0x03}), "0x03 [hdgst ddgst]");
}
