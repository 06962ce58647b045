#include <nvmekit/spec/tcp.hpp>

#include <array>
#include <bit>
#include <cstdint>

#include <gtest/gtest.h>

#include "../wire_bytes.hpp"

namespace spec = nvmekit::spec;
using nvmekit_test::bytes_of;
using nvmekit_test::le_at;

TEST(tcp, pdu_types_have_spec_values_and_names)
{
    EXPECT_EQ(static_cast<unsigned>(spec::pdu_type::capsule_cmd), 0x04U);
    EXPECT_EQ(static_cast<unsigned>(spec::pdu_type::r2t), 0x09U);
    EXPECT_EQ(spec::name(spec::pdu_type::icreq), "ICReq");
    EXPECT_EQ(spec::name(spec::pdu_type::c2h_term_req), "C2HTermReq");
    EXPECT_EQ(spec::name(spec::pdu_type::capsule_resp), "CapsuleResp");
    EXPECT_EQ(spec::name(spec::pdu_type::h2c_data), "H2CData");
    EXPECT_EQ(spec::name(spec::pdu_type::r2t), "R2T");
    EXPECT_TRUE(spec::name(static_cast<spec::pdu_type>(0x08)).empty());
}

TEST(tcp, header_lengths_and_directions)
{
    EXPECT_EQ(spec::pdu_header_length(spec::pdu_type::icreq), 128);
    EXPECT_EQ(spec::pdu_header_length(spec::pdu_type::icresp), 128);
    EXPECT_EQ(spec::pdu_header_length(spec::pdu_type::capsule_cmd), sizeof(spec::capsule_cmd_pdu));
    EXPECT_EQ(spec::pdu_header_length(spec::pdu_type::capsule_resp), sizeof(spec::capsule_resp_pdu));
    EXPECT_EQ(spec::pdu_header_length(spec::pdu_type::h2c_term_req), sizeof(spec::term_req_pdu));
    EXPECT_EQ(spec::pdu_header_length(spec::pdu_type::r2t), sizeof(spec::r2t_pdu));
    EXPECT_EQ(spec::pdu_header_length(static_cast<spec::pdu_type>(0x08)), 0);

    EXPECT_TRUE(spec::is_host_to_controller(spec::pdu_type::icreq));
    EXPECT_TRUE(spec::is_host_to_controller(spec::pdu_type::h2c_data));
    EXPECT_TRUE(spec::is_host_to_controller(spec::pdu_type::h2c_term_req));
    EXPECT_FALSE(spec::is_host_to_controller(spec::pdu_type::r2t));
    EXPECT_FALSE(spec::is_host_to_controller(spec::pdu_type::c2h_data));
    EXPECT_FALSE(spec::is_host_to_controller(spec::pdu_type::capsule_resp));
}

TEST(tcp, constants)
{
    EXPECT_EQ(spec::tcp_pdu_format_version, 0);
    EXPECT_EQ(spec::tcp_header_digest_size, 4U);
    EXPECT_EQ(spec::tcp_data_digest_size, 4U);
    EXPECT_EQ(spec::tcp_term_req_max_length, 152U);
    EXPECT_EQ(spec::pdu_data_alignment_bytes(0), 4U);
    EXPECT_EQ(spec::pdu_data_alignment_bytes(spec::tcp_max_pdu_data_alignment), 128U);
}

TEST(tcp, common_header_bytes)
{
    spec::pdu_common_header header{};
    header.type = spec::pdu_type::capsule_cmd;
    header.flags.set(spec::pdu_flags::hdgstf, true).set(spec::pdu_flags::ddgstf, true);
    header.hlen = 72;
    header.pdo = 76;
    header.plen = 0x1234'5678;
    const std::array<std::uint8_t, 8> expected{0x04, 0x03, 72, 76, 0x78, 0x56, 0x34, 0x12};
    EXPECT_EQ(bytes_of(header), expected);

    const spec::pdu_flags data_flags =
        spec::pdu_flags{}.with(spec::pdu_flags::last_pdu, true).with(spec::pdu_flags::success, true);
    EXPECT_EQ(data_flags.raw, 0x0c);
}

TEST(tcp, icreq_and_icresp_layout)
{
    spec::icreq_pdu request{};
    request.ch = {spec::pdu_type::icreq, spec::pdu_flags{}, 128, 0, 128};
    request.pfv = 0x0100;
    request.hpda = 3;
    request.dgst.set(spec::digest_options::hdgst_enable, true).set(spec::digest_options::ddgst_enable, true);
    request.maxr2t = 0x0a0b'0c0d;
    auto bytes = bytes_of(request);
    EXPECT_EQ(bytes[8], 0x00);
    EXPECT_EQ(bytes[9], 0x01);
    EXPECT_EQ(bytes[10], 3);
    EXPECT_EQ(bytes[11], 0x03);
    EXPECT_EQ(le_at<std::uint32_t>(bytes, 12), 0x0a0b'0c0dU);

    spec::icresp_pdu response{};
    response.cpda = 1;
    response.dgst.set(spec::digest_options::ddgst_enable, true);
    response.maxh2cdata = 131072;
    const auto response_bytes = bytes_of(response);
    EXPECT_EQ(response_bytes[10], 1);
    EXPECT_EQ(response_bytes[11], 0x02);
    EXPECT_EQ(le_at<std::uint32_t>(response_bytes, 12), 131072U);
}

TEST(tcp, term_req_stores_unaligned_fei_little_endian)
{
    spec::term_req_pdu term{};
    term.ch.type = spec::pdu_type::c2h_term_req;
    term.fes = spec::fatal_error_status::invalid_pdu_header_field;
    term.set_error_information(0x1122'3344);
    const auto bytes = bytes_of(term);
    EXPECT_EQ(bytes[0], 0x03);
    EXPECT_EQ(bytes[8], 0x01);
    EXPECT_EQ(bytes[9], 0x00);
    EXPECT_EQ(bytes[10], 0x44);
    EXPECT_EQ(bytes[11], 0x33);
    EXPECT_EQ(bytes[12], 0x22);
    EXPECT_EQ(bytes[13], 0x11);
    EXPECT_EQ(bytes[14], 0x00);
    EXPECT_EQ(term.error_information(), 0x1122'3344U);
}

TEST(tcp, fatal_error_status_05h_is_named_by_direction)
{
    EXPECT_EQ(spec::name(spec::fatal_error_status::limit_exceeded, spec::pdu_type::h2c_term_req),
              "R2T Limit Exceeded");
    EXPECT_EQ(spec::name(spec::fatal_error_status::limit_exceeded, spec::pdu_type::c2h_term_req),
              "Data Transfer Limit Exceeded");
    EXPECT_EQ(spec::name(spec::fatal_error_status::header_digest_error), "Header Digest Error");
    EXPECT_EQ(spec::name(spec::fatal_error_status::unsupported_parameter), "Unsupported Parameter");
    EXPECT_TRUE(spec::name(static_cast<spec::fatal_error_status>(0x07)).empty());
}

TEST(tcp, capsules_carry_the_queue_entry_after_the_common_header)
{
    spec::capsule_cmd_pdu command{};
    command.sqe.cdw0.set(spec::command_dword0::opc, 0x02).set(spec::command_dword0::cid, 0xbeef);
    command.sqe.nsid = 1;
    auto bytes = bytes_of(command);
    EXPECT_EQ(bytes[8], 0x02);
    EXPECT_EQ(bytes[10], 0xef);
    EXPECT_EQ(bytes[11], 0xbe);
    EXPECT_EQ(bytes[12], 0x01);

    spec::capsule_resp_pdu response{};
    response.cqe.cid = 0x0102;
    response.cqe.sq_head = 7;
    const auto response_bytes = bytes_of(response);
    EXPECT_EQ(response_bytes[16], 7);    // SQHD: CQE bytes 09:08
    EXPECT_EQ(response_bytes[20], 0x02); // CID: CQE bytes 13:12
    EXPECT_EQ(response_bytes[21], 0x01);
}

TEST(tcp, data_and_r2t_headers_layout)
{
    spec::h2c_data_pdu h2c{};
    h2c.cccid = 0x0a0b;
    h2c.ttag = 0x0c0d;
    h2c.datao = 0x1000;
    h2c.datal = 0x2000;
    auto bytes = bytes_of(h2c);
    EXPECT_EQ(bytes[8], 0x0b);
    EXPECT_EQ(bytes[10], 0x0d);
    EXPECT_EQ(le_at<std::uint32_t>(bytes, 12), 0x1000U);
    EXPECT_EQ(le_at<std::uint32_t>(bytes, 16), 0x2000U);

    spec::c2h_data_pdu c2h{};
    c2h.cccid = 0x0a0b;
    c2h.datao = 0x3000;
    c2h.datal = 0x4000;
    const auto c2h_bytes = bytes_of(c2h);
    EXPECT_EQ(c2h_bytes[10], 0);
    EXPECT_EQ(le_at<std::uint32_t>(c2h_bytes, 12), 0x3000U);
    EXPECT_EQ(le_at<std::uint32_t>(c2h_bytes, 16), 0x4000U);

    spec::r2t_pdu r2t{};
    r2t.cccid = 1;
    r2t.ttag = 2;
    r2t.r2to = 0x5000;
    r2t.r2tl = 0x6000;
    const auto r2t_bytes = bytes_of(r2t);
    EXPECT_EQ(r2t_bytes[10], 2);
    EXPECT_EQ(le_at<std::uint32_t>(r2t_bytes, 12), 0x5000U);
    EXPECT_EQ(le_at<std::uint32_t>(r2t_bytes, 16), 0x6000U);
}
