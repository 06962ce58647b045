#include <nvmekit/transport/tcp/pdu_encode.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include <gtest/gtest.h>

#include <nvmekit/spec/tcp.hpp>

#include "splitmix64.hpp"
#include "transport/tcp/reference_crc32c.hpp"
#include "transport/tcp/tcp_test_support.hpp"

namespace spec = nvmekit::spec;
namespace tcp = nvmekit::transport::tcp;
using nvmekit_test::le_in;
using nvmekit_test::reference_crc32c;

namespace {

tcp::connection_params with_digests(bool header_digest, bool data_digest)
{
    tcp::connection_params params{};
    params.header_digest = header_digest;
    params.data_digest = data_digest;
    return params;
}

std::vector<std::byte> random_bytes(std::size_t size, std::uint64_t seed)
{
    std::vector<std::byte> bytes(size);
    nvmekit_test::splitmix64 random{seed};
    random.fill(bytes);
    return bytes;
}

/// What a receiver of `pdu` checks first: the common header against the bytes.
void expect_common_header(std::span<const std::byte> pdu, std::uint8_t type, std::uint8_t flags,
                          std::uint8_t hlen, std::uint8_t pdo, std::uint32_t plen)
{
    ASSERT_GE(pdu.size(), 8U);
    EXPECT_EQ(std::to_integer<unsigned>(pdu[0]), type);
    EXPECT_EQ(std::to_integer<unsigned>(pdu[1]), flags);
    EXPECT_EQ(std::to_integer<unsigned>(pdu[2]), hlen);
    EXPECT_EQ(std::to_integer<unsigned>(pdu[3]), pdo);
    EXPECT_EQ(le_in<std::uint32_t>(pdu, 4), plen);
    EXPECT_EQ(pdu.size(), plen);
}

} // namespace

TEST(tcp_pdu_encode, icresp)
{
    tcp::connection_params params = with_digests(true, true);
    params.cpda = 0;
    params.maxh2cdata = 65536;
    std::array<std::byte, 128> out{};
    ASSERT_EQ(tcp::encode_icresp(params, out), 128U);
    expect_common_header(out, 0x01, 0x00, 128, 0, 128);
    EXPECT_EQ(le_in<std::uint16_t>(out, 8), 0U);
    EXPECT_EQ(std::to_integer<unsigned>(out[11]), 0x03U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 12), 65536U);
}

TEST(tcp_pdu_encode, capsule_resp_with_and_without_header_digest)
{
    spec::completion_queue_entry cqe{};
    cqe.cid = 0x1234;
    cqe.sq_head = 9;
    cqe.dw0 = 0xdead'beef;

    std::array<std::byte, 28> out{};
    auto size = tcp::encode_capsule_resp(cqe, with_digests(false, true), out);
    ASSERT_EQ(size, 24U);
    expect_common_header(std::span{out}.first(size), 0x05, 0x00, 24, 0, 24);
    EXPECT_EQ(le_in<std::uint32_t>(out, 8), 0xdead'beefU);
    EXPECT_EQ(le_in<std::uint16_t>(out, 16), 9U);
    EXPECT_EQ(le_in<std::uint16_t>(out, 20), 0x1234U);

    size = tcp::encode_capsule_resp(cqe, with_digests(true, true), out);
    ASSERT_EQ(size, 28U);
    // HDGSTF only: a CapsuleResp has no data, so no DDGSTF even with data digests on.
    expect_common_header(std::span{out}.first(size), 0x05, 0x01, 24, 0, 28);
    EXPECT_EQ(le_in<std::uint32_t>(out, 24), reference_crc32c(std::span{out}.first(24)));
    EXPECT_EQ(tcp::pdu_size(spec::pdu_type::capsule_resp, 0, with_digests(true, false)), 28U);
}

TEST(tcp_pdu_encode, r2t)
{
    std::array<std::byte, 28> out{};
    const auto size = tcp::encode_r2t({5, 7, 0x1000, 0x8000}, with_digests(true, false), out);
    ASSERT_EQ(size, 28U);
    expect_common_header(std::span{out}.first(size), 0x09, 0x01, 24, 0, 28);
    EXPECT_EQ(le_in<std::uint16_t>(out, 8), 5U);
    EXPECT_EQ(le_in<std::uint16_t>(out, 10), 7U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 12), 0x1000U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 16), 0x8000U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 20), 0U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 24), reference_crc32c(std::span{out}.first(24)));
}

TEST(tcp_pdu_encode, c2h_data_layout_digests_and_flags)
{
    const auto data = random_bytes(1000, 3);
    const std::array<std::span<const std::byte>, 3> parts{
        std::span{data}.first(1), std::span{data}.subspan(1, 499), std::span{data}.subspan(500)};
    std::vector<std::byte> out(2000);

    // No digests, HPDA 0: data right after the 24-byte header.
    auto size = tcp::encode_c2h_data({3, 0x2000, false, false}, parts, with_digests(false, false), out);
    ASSERT_EQ(size, 1024U);
    expect_common_header(std::span{out}.first(size), 0x07, 0x00, 24, 24, 1024);
    EXPECT_EQ(le_in<std::uint16_t>(out, 8), 3U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 12), 0x2000U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 16), 1000U);
    EXPECT_TRUE(std::equal(data.begin(), data.end(), out.begin() + 24));

    // Both digests, LAST_PDU: PDO 28 as the Linux host (HPDA 0) expects, DDGST over the data.
    auto params = with_digests(true, true);
    size = tcp::encode_c2h_data({3, 0, true, false}, parts, params, out);
    ASSERT_EQ(size, 24U + 4 + 1000 + 4);
    expect_common_header(std::span{out}.first(size), 0x07, 0x07, 24, 28, 1032);
    EXPECT_EQ(le_in<std::uint32_t>(out, 24), reference_crc32c(std::span{out}.first(24)));
    EXPECT_TRUE(std::equal(data.begin(), data.end(), out.begin() + 28));
    EXPECT_EQ(le_in<std::uint32_t>(out, 1028), reference_crc32c(data));

    // SUCCESS with LAST_PDU once the host disabled SQ flow control.
    params.sq_flow_control_disabled = true;
    EXPECT_TRUE(tcp::may_skip_capsule_resp(params));
    EXPECT_FALSE(tcp::may_skip_capsule_resp(with_digests(true, true)));
    size = tcp::encode_c2h_data({3, 0, true, true}, parts, params, out);
    EXPECT_EQ(std::to_integer<unsigned>(out[1]), 0x0fU);

    // HPDA 31: the data starts at 128, zero padding after the header digest.
    params = with_digests(true, false);
    params.hpda = 31;
    std::fill(out.begin(), out.end(), std::byte{0xee});
    size = tcp::encode_c2h_data({3, 0, false, false}, parts, params, out);
    ASSERT_EQ(size, 128U + 1000);
    expect_common_header(std::span{out}.first(size), 0x07, 0x01, 24, 128, 1128);
    for (std::size_t i = 28; i < 128; ++i) {
        ASSERT_EQ(out[i], std::byte{0}) << "padding byte " << i;
    }
    EXPECT_TRUE(std::equal(data.begin(), data.end(), out.begin() + 128));

    // HPDA 7 (32 bytes): 24 + 4 rounds up to 32.
    params.hpda = 7;
    EXPECT_EQ(tcp::layout_of(spec::pdu_type::c2h_data, 1000, params).pdo, 32U);
    params.header_digest = false;
    params.hpda = 1; // 8 bytes: 24 is aligned already
    EXPECT_EQ(tcp::layout_of(spec::pdu_type::c2h_data, 1000, params).pdo, 24U);
}

TEST(tcp_pdu_encode, c2h_data_prefix_matches_the_whole_pdu)
{
    const auto data = random_bytes(300, 5);
    const std::array<std::span<const std::byte>, 1> parts{data};
    for (const std::uint8_t hpda : {0, 3, 31}) {
        auto params = with_digests(true, true);
        params.hpda = hpda;
        std::vector<std::byte> whole(600);
        const auto size = tcp::encode_c2h_data({1, 4096, true, false}, parts, params, whole);
        std::vector<std::byte> prefix(200, std::byte{0xaa});
        const auto prefix_size = tcp::encode_c2h_data_prefix({1, 4096, true, false}, 300, params, prefix);
        ASSERT_EQ(prefix_size, tcp::layout_of(spec::pdu_type::c2h_data, 300, params).pdo);
        EXPECT_TRUE(std::equal(prefix.begin(), prefix.begin() + static_cast<std::ptrdiff_t>(prefix_size),
                               whole.begin()));
        EXPECT_EQ(le_in<std::uint32_t>(whole, size - 4), tcp::data_digest(parts));
        EXPECT_EQ(
            tcp::digest_bytes(tcp::data_digest(parts)),
            (std::array<std::byte, 4>{whole[size - 4], whole[size - 3], whole[size - 2], whole[size - 1]}));
    }
}

TEST(tcp_pdu_encode, c2h_term_req_carries_the_header_in_error_without_digests)
{
    const auto header = random_bytes(200, 9);
    std::array<std::byte, spec::tcp_term_req_max_length> out{};

    // Invalid PDU Header Field: FEI names the field; at most 128 bytes of the header in error.
    auto size = tcp::encode_c2h_term_req(tcp::invalid_header_field(3), header, out);
    ASSERT_EQ(size, 152U);
    expect_common_header(std::span{out}.first(size), 0x03, 0x00, 24, 0, 152);
    EXPECT_EQ(le_in<std::uint16_t>(out, 8), 0x01U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 10), 3U);
    for (std::size_t i = 14; i < 24; ++i) {
        ASSERT_EQ(out[i], std::byte{0});
    }
    EXPECT_TRUE(std::equal(header.begin(), header.begin() + 128, out.begin() + 24));

    // Header Digest Error: FEI reserved.
    size = tcp::encode_c2h_term_req({spec::fatal_error_status::header_digest_error, 77},
                                    std::span{header}.first(28), out);
    ASSERT_EQ(size, 52U);
    expect_common_header(std::span{out}.first(size), 0x03, 0x00, 24, 0, 52);
    EXPECT_EQ(le_in<std::uint16_t>(out, 8), 0x03U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 10), 0U);

    // Nothing to carry: the 24-byte header alone.
    size = tcp::encode_c2h_term_req(tcp::fatal(spec::fatal_error_status::pdu_sequence_error), {}, out);
    ASSERT_EQ(size, 24U);
    expect_common_header(std::span{out}.first(size), 0x03, 0x00, 24, 0, 24);
}

TEST(tcp_pdu_encode, host_pdus)
{
    std::array<std::byte, 128> icreq{};
    ASSERT_EQ(tcp::encode_icreq(0, true, false, 0, icreq), 128U);
    expect_common_header(icreq, 0x00, 0x00, 128, 0, 128);
    EXPECT_EQ(std::to_integer<unsigned>(icreq[11]), 0x01U);

    spec::submission_queue_entry sqe{};
    sqe.cdw0.set(spec::command_dword0::opc, 0x01).set(spec::command_dword0::cid, 42);
    const auto data = random_bytes(512, 1);
    const std::array<std::span<const std::byte>, 1> parts{data};
    auto params = with_digests(true, true);
    params.cpda = 31;
    std::vector<std::byte> out(1024);
    auto size = tcp::encode_capsule_cmd(sqe, parts, params, out);
    ASSERT_EQ(size, 128U + 512 + 4);
    expect_common_header(std::span{out}.first(size), 0x04, 0x03, 72, 128, 644);
    EXPECT_EQ(le_in<std::uint32_t>(out, 72), reference_crc32c(std::span{out}.first(72)));

    size = tcp::encode_capsule_cmd(sqe, {}, params, out);
    ASSERT_EQ(size, 76U);
    expect_common_header(std::span{out}.first(size), 0x04, 0x01, 72, 0, 76);

    params = with_digests(false, false);
    size = tcp::encode_h2c_data({42, 3, 4096, true}, parts, params, out);
    ASSERT_EQ(size, 24U + 512);
    expect_common_header(std::span{out}.first(size), 0x06, 0x04, 24, 24, 536);
    EXPECT_EQ(le_in<std::uint16_t>(out, 8), 42U);
    EXPECT_EQ(le_in<std::uint16_t>(out, 10), 3U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 12), 4096U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 16), 512U);

    size = tcp::encode_h2c_term_req(tcp::fatal(spec::fatal_error_status::limit_exceeded),
                                    std::span{data}.first(24), out);
    ASSERT_EQ(size, 48U);
    expect_common_header(std::span{out}.first(size), 0x02, 0x00, 24, 0, 48);
}
