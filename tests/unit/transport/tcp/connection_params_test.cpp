#include <nvmekit/transport/tcp/connection_params.hpp>

#include <array>
#include <cstdint>

#include <gtest/gtest.h>

#include <nvmekit/spec/tcp.hpp>

#include "wire_bytes.hpp"

namespace spec = nvmekit::spec;
namespace tcp = nvmekit::transport::tcp;
using nvmekit_test::bytes_of;
using nvmekit_test::le_at;

namespace {

/// The ICReq of the Linux host: PFV 0, HPDA 0, MAXR2T 0 (one R2T at a time), the digests its
/// hdr_digest and data_digest options ask for.
spec::icreq_pdu linux_icreq(bool header_digest, bool data_digest)
{
    spec::icreq_pdu icreq{};
    icreq.ch = {spec::pdu_type::icreq, spec::pdu_flags{}, 128, 0, 128};
    icreq.dgst.set(spec::digest_options::hdgst_enable, header_digest)
        .set(spec::digest_options::ddgst_enable, data_digest);
    return icreq;
}

} // namespace

TEST(tcp_connection_params, linux_icreq_is_answered_as_the_linux_host_checks)
{
    for (const bool header_digest : {false, true}) {
        for (const bool data_digest : {false, true}) {
            const auto params = tcp::negotiate(linux_icreq(header_digest, data_digest), tcp::target_limits{});
            ASSERT_TRUE(params);
            EXPECT_EQ(params->header_digest, header_digest);
            EXPECT_EQ(params->data_digest, data_digest);
            EXPECT_EQ(params->hpda, 0);
            EXPECT_EQ(params->cpda, 0);
            EXPECT_EQ(params->max_outstanding_r2t, 1U);
            EXPECT_EQ(params->max_in_capsule_data, 8192U);
            EXPECT_FALSE(params->sq_flow_control_disabled);

            const auto bytes = bytes_of(tcp::make_icresp(*params));
            EXPECT_EQ(bytes[0], 0x01); // ICResp
            EXPECT_EQ(bytes[1], 0x00); // no digests on ICResp
            EXPECT_EQ(bytes[2], 128);
            EXPECT_EQ(bytes[3], 0);
            EXPECT_EQ(le_at<std::uint32_t>(bytes, 4), 128U);
            EXPECT_EQ(le_at<std::uint16_t>(bytes, 8), 0U); // PFV
            EXPECT_EQ(bytes[10], 0);                       // CPDA: the Linux host accepts only 0
            EXPECT_EQ(bytes[11], (header_digest ? 1 : 0) | (data_digest ? 2 : 0)); // as asked
            const auto maxh2cdata = le_at<std::uint32_t>(bytes, 12);
            EXPECT_EQ(maxh2cdata, 128U * 1024U);
            EXPECT_EQ(maxh2cdata % 4, 0U);
            EXPECT_GE(maxh2cdata, 4096U);
            for (std::size_t i = 16; i < bytes.size(); ++i) {
                ASSERT_EQ(bytes[i], 0) << "reserved byte " << i;
            }
        }
    }
}

TEST(tcp_connection_params, digests_are_granted_only_when_asked_and_allowed)
{
    tcp::target_limits limits{};
    limits.allow_data_digest = false;
    auto params = tcp::negotiate(linux_icreq(true, true), limits);
    ASSERT_TRUE(params);
    EXPECT_TRUE(params->header_digest);
    EXPECT_FALSE(params->data_digest);
    EXPECT_EQ(bytes_of(tcp::make_icresp(*params))[11], 0x01);

    limits = {};
    limits.allow_header_digest = false;
    params = tcp::negotiate(linux_icreq(true, false), limits);
    ASSERT_TRUE(params);
    EXPECT_FALSE(params->header_digest);

    params = tcp::negotiate(linux_icreq(false, false), tcp::target_limits{});
    ASSERT_TRUE(params);
    EXPECT_FALSE(params->header_digest);
    EXPECT_FALSE(params->data_digest);
}

TEST(tcp_connection_params, hpda_cpda_maxr2t_and_maxh2cdata)
{
    auto icreq = linux_icreq(false, false);
    icreq.hpda = 31;
    icreq.maxr2t = 7;
    tcp::target_limits limits{};
    limits.cpda = 3;
    limits.maxh2cdata = 4096;
    limits.max_outstanding_r2t = 4;
    auto params = tcp::negotiate(icreq, limits);
    ASSERT_TRUE(params);
    EXPECT_EQ(params->hpda, 31);
    EXPECT_EQ(params->cpda, 3);
    EXPECT_EQ(params->max_outstanding_r2t, 4U); // the target's limit below MAXR2T + 1 = 8
    EXPECT_EQ(params->maxh2cdata, 4096U);
    const auto bytes = bytes_of(tcp::make_icresp(*params));
    EXPECT_EQ(bytes[10], 3);
    EXPECT_EQ(le_at<std::uint32_t>(bytes, 12), 4096U);

    icreq.maxr2t = 1;
    EXPECT_EQ(tcp::negotiate(icreq, limits)->max_outstanding_r2t, 2U);
    icreq.maxr2t = 0xffff'ffff; // 0's based: 2^32 R2Ts, no overflow
    EXPECT_EQ(tcp::negotiate(icreq, limits)->max_outstanding_r2t, 4U);
}

TEST(tcp_connection_params, icreq_errors_name_the_field)
{
    auto icreq = linux_icreq(false, false);
    icreq.pfv = 1;
    auto params = tcp::negotiate(icreq, {});
    ASSERT_FALSE(params);
    EXPECT_EQ(params.error(), (tcp::fatal_error{spec::fatal_error_status::unsupported_parameter, 8}));

    icreq = linux_icreq(false, false);
    icreq.hpda = 32;
    params = tcp::negotiate(icreq, {});
    ASSERT_FALSE(params);
    EXPECT_EQ(params.error(), tcp::invalid_header_field(10));

    icreq = linux_icreq(true, false);
    icreq.dgst.raw |= 0x04;
    params = tcp::negotiate(icreq, {});
    ASSERT_FALSE(params);
    EXPECT_EQ(params.error(), tcp::invalid_header_field(11));
}

TEST(tcp_connection_params, maxh2cdata_and_target_limits)
{
    EXPECT_TRUE(tcp::is_valid_maxh2cdata(4096));
    EXPECT_TRUE(tcp::is_valid_maxh2cdata(4100));
    EXPECT_FALSE(tcp::is_valid_maxh2cdata(4092));
    EXPECT_FALSE(tcp::is_valid_maxh2cdata(4098));
    EXPECT_FALSE(tcp::is_valid_maxh2cdata(0));

    EXPECT_TRUE(tcp::target_limits{}.valid());
    tcp::target_limits limits{};
    limits.cpda = 32;
    EXPECT_FALSE(limits.valid());
    limits = {};
    limits.maxh2cdata = 8190;
    EXPECT_FALSE(limits.valid());
    limits = {};
    limits.max_outstanding_r2t = 0;
    EXPECT_FALSE(limits.valid());
    // In-capsule data in whole 16-byte units of IOCCSZ
    limits = {};
    limits.io_in_capsule_data = 4100;
    EXPECT_FALSE(limits.valid());
    limits.io_in_capsule_data = 4096 + 16;
    EXPECT_TRUE(limits.valid());
    limits.io_in_capsule_data = 0;
    EXPECT_TRUE(limits.valid());
}

TEST(tcp_connection_params, in_capsule_data_from_ioccsz_and_the_admin_queue)
{
    EXPECT_EQ(tcp::admin_in_capsule_data_size, 8192U);
    EXPECT_EQ(tcp::in_capsule_data_size(4), 0U);      // the SQE alone
    EXPECT_EQ(tcp::in_capsule_data_size(260), 4096U); // 64 + 4096 bytes
    EXPECT_EQ(tcp::in_capsule_data_size(516), 8192U); // 64 + 8192 bytes
    EXPECT_EQ(tcp::in_capsule_data_size(0), 0U);

    tcp::target_limits limits{};
    limits.io_in_capsule_data = tcp::in_capsule_data_size(260);
    tcp::connection_params params = *tcp::negotiate(linux_icreq(false, false), limits);
    EXPECT_EQ(params.max_in_capsule_data, 8192U); // Connect's 1024 bytes fit either queue's capsule
    params.set_queue(false, limits, true);
    EXPECT_EQ(params.max_in_capsule_data, 4096U);
    EXPECT_TRUE(params.sq_flow_control_disabled);
    params.set_queue(true, limits, false);
    EXPECT_EQ(params.max_in_capsule_data, 8192U);
    EXPECT_FALSE(params.sq_flow_control_disabled);
}

TEST(tcp_connection_params, fatal_error_helpers)
{
    EXPECT_EQ(tcp::invalid_header_field(3).status, spec::fatal_error_status::invalid_pdu_header_field);
    EXPECT_EQ(tcp::invalid_header_field(3).information, 3U);
    EXPECT_EQ(tcp::unsupported_parameter(8).status, spec::fatal_error_status::unsupported_parameter);
    EXPECT_EQ(tcp::fatal(spec::fatal_error_status::header_digest_error).information, 0U);
    const tcp::result<int> value{5};
    EXPECT_TRUE(value);
    EXPECT_EQ(*value, 5);
    const tcp::result<int> error{tcp::fatal(spec::fatal_error_status::pdu_sequence_error)};
    EXPECT_FALSE(error.has_value());
    EXPECT_EQ(error.error().status, spec::fatal_error_status::pdu_sequence_error);
}
