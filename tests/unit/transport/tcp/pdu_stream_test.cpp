#include <nvmekit/transport/tcp/pdu_stream.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include <gtest/gtest.h>

#include <nvmekit/spec/tcp.hpp>
#include <nvmekit/transport/tcp/pdu_encode.hpp>

#include "splitmix64.hpp"
#include "transport/tcp/reference_crc32c.hpp"
#include "transport/tcp/tcp_test_support.hpp"

namespace spec = nvmekit::spec;
namespace tcp = nvmekit::transport::tcp;
using nvmekit_test::placement;
using nvmekit_test::received_pdu;
using nvmekit_test::reference_crc32c;
using nvmekit_test::run_stream;
using nvmekit_test::stream_outcome;
using nvmekit_test::wire;

namespace {

using fes = spec::fatal_error_status;

/// What the host asks for and the target allows.
struct host_options {
    bool header_digest = false;
    bool data_digest = false;
    std::uint8_t cpda = 0;
};

tcp::target_limits limits_for(const host_options& options)
{
    tcp::target_limits limits{};
    limits.cpda = options.cpda;
    limits.maxh2cdata = 8192;
    limits.io_in_capsule_data = 4096;
    return limits;
}

/// The parameters both sides run with after the ICReq of `options`.
tcp::connection_params params_for(const host_options& options)
{
    return *tcp::negotiate(
        [&] {
            spec::icreq_pdu icreq{};
            icreq.dgst.set(spec::digest_options::hdgst_enable, options.header_digest)
                .set(spec::digest_options::ddgst_enable, options.data_digest);
            return icreq;
        }(),
        limits_for(options));
}

std::vector<std::byte> random_stream_bytes(std::size_t size, std::uint64_t seed)
{
    std::vector<std::byte> bytes(size);
    nvmekit_test::splitmix64 random{seed};
    random.fill(bytes);
    return bytes;
}

spec::submission_queue_entry sqe_with_cid(std::uint16_t cid)
{
    spec::submission_queue_entry sqe{};
    sqe.cdw0.set(spec::command_dword0::opc, 0x01).set(spec::command_dword0::cid, cid);
    sqe.nsid = 1;
    return sqe;
}

/// A host's byte stream and the PDUs the controller should see in it.
struct exchange {
    host_options options;
    tcp::connection_params params;
    wire bytes;
    std::vector<received_pdu> expected;

    explicit exchange(const host_options& opts) : options{opts}, params{params_for(opts)}
    {
        const auto pdu = bytes.append([&](std::span<std::byte> out) {
            return tcp::encode_icreq(0, opts.header_digest, opts.data_digest, 0, out);
        });
        expect(spec::pdu_type::icreq, pdu, {});
    }

    void expect(spec::pdu_type type, std::span<const std::byte> pdu, std::span<const std::byte> data)
    {
        const auto hlen = spec::pdu_header_length(type);
        expected.push_back({type, {pdu.begin(), pdu.begin() + hlen}, {data.begin(), data.end()}, true});
    }

    std::span<std::byte> capsule(std::uint16_t cid, std::span<const std::byte> data)
    {
        const std::array<std::span<const std::byte>, 1> parts{data};
        const auto pdu = bytes.append([&](std::span<std::byte> out) {
            return tcp::encode_capsule_cmd(sqe_with_cid(cid), data.empty() ? tcp::data_parts{} : parts,
                                           params, out);
        });
        expect(spec::pdu_type::capsule_cmd, pdu, data);
        return pdu;
    }

    std::span<std::byte> h2c(const tcp::h2c_data_fields& fields, std::span<const std::byte> data)
    {
        const std::array<std::span<const std::byte>, 1> parts{data};
        const auto pdu = bytes.append(
            [&](std::span<std::byte> out) { return tcp::encode_h2c_data(fields, parts, params, out); });
        expect(spec::pdu_type::h2c_data, pdu, data);
        return pdu;
    }

    std::span<std::byte> term_req(const tcp::fatal_error& error, std::span<const std::byte> header)
    {
        const auto pdu = bytes.append(
            [&](std::span<std::byte> out) { return tcp::encode_h2c_term_req(error, header, out); });
        expect(spec::pdu_type::h2c_term_req, pdu, std::span{pdu}.subspan(24));
        return pdu;
    }

    [[nodiscard]] stream_outcome run(placement how = placement::copy) const
    {
        return run_stream(
            bytes.bytes(), limits_for(options), [](std::size_t left) { return left; }, how);
    }
};

/// After editing a header: a correct HDGST again, so that the field, not the digest, is in error.
void fix_header_digest(std::span<std::byte> pdu, const tcp::connection_params& params)
{
    if (!params.header_digest) {
        return;
    }
    const auto hlen = std::to_integer<std::size_t>(pdu[2]);
    const auto digest = tcp::digest_bytes(reference_crc32c(pdu.first(hlen)));
    std::copy(digest.begin(), digest.end(), pdu.begin() + static_cast<std::ptrdiff_t>(hlen));
}

void set_plen(std::span<std::byte> pdu, std::uint32_t plen)
{
    for (std::size_t i = 0; i < 4; ++i) {
        pdu[4 + i] = std::byte((plen >> (8 * i)) & 0xffU);
    }
}

void set_u32(std::span<std::byte> pdu, std::size_t offset, std::uint32_t value)
{
    for (std::size_t i = 0; i < 4; ++i) {
        pdu[offset + i] = std::byte((value >> (8 * i)) & 0xffU);
    }
}

constexpr std::array<host_options, 6> all_options{{
    {false, false, 0},
    {true, false, 0},
    {false, true, 0},
    {true, true, 0},
    {true, true, 31},
    {false, false, 3},
}};

/// ICReq, a write's capsule with in-capsule data, a capsule alone, two H2CData of an R2T.
exchange typical_exchange(const host_options& options)
{
    exchange s{options};
    const auto data = random_stream_bytes(1000, 21);
    s.capsule(1, std::span{data}.first(300));
    s.capsule(2, {});
    s.h2c({2, 1, 0, false}, std::span{data}.first(500));
    s.h2c({2, 1, 500, true}, std::span{data}.subspan(500, 3));
    s.capsule(3, std::span{data}.first(7));
    return s;
}

} // namespace

TEST(tcp_pdu_stream, pdus_of_a_connection_come_out_whole)
{
    for (const auto& options : all_options) {
        const auto s = typical_exchange(options);
        const auto outcome = s.run();
        EXPECT_FALSE(outcome.error) << outcome.error->information;
        EXPECT_EQ(outcome.pdus, s.expected);
        EXPECT_EQ(outcome.params.header_digest, options.header_digest);
        EXPECT_EQ(outcome.params.cpda, options.cpda);
        EXPECT_EQ(s.run(placement::zero_copy), outcome);
    }
}

TEST(tcp_pdu_stream, every_split_point_and_byte_at_a_time)
{
    for (const auto& options : all_options) {
        const auto s = typical_exchange(options);
        const auto whole = s.run();
        ASSERT_FALSE(whole.error);
        const auto total = s.bytes.size();
        for (std::size_t split = 1; split < total; ++split) {
            bool first = true;
            const auto chunk = [&](std::size_t left) {
                const std::size_t size = first ? split : left;
                first = false;
                return size;
            };
            ASSERT_EQ(run_stream(s.bytes.bytes(), limits_for(s.options), chunk), whole)
                << "split at " << split;
            first = true;
            ASSERT_EQ(run_stream(s.bytes.bytes(), limits_for(s.options), chunk, placement::zero_copy), whole)
                << "split at " << split;
        }
        const auto one = [](std::size_t) { return std::size_t{1}; };
        EXPECT_EQ(run_stream(s.bytes.bytes(), limits_for(s.options), one), whole);
        EXPECT_EQ(run_stream(s.bytes.bytes(), limits_for(s.options), one, placement::zero_copy), whole);
    }
}

TEST(tcp_pdu_stream, padding_per_cpda_is_skipped)
{
    exchange s{{true, true, 31}};
    const auto data = random_stream_bytes(100, 2);
    const auto pdu = s.capsule(9, data);
    EXPECT_EQ(std::to_integer<unsigned>(pdu[3]), 128U); // PDO: 72 + 4 rounded up to 128
    const auto h2c = s.h2c({9, 0, 0, true}, data);
    EXPECT_EQ(std::to_integer<unsigned>(h2c[3]), 128U);
    const auto outcome = s.run();
    EXPECT_FALSE(outcome.error);
    EXPECT_EQ(outcome.pdus, s.expected);

    // A PDO past the minimum is still aligned data: padding of 128 + 128 bytes for CPDA 31.
    exchange larger{{false, false, 31}};
    const auto capsule = larger.capsule(1, data);
    ASSERT_EQ(std::to_integer<unsigned>(capsule[3]), 128U);
    EXPECT_EQ(larger.run().pdus, larger.expected);
}

TEST(tcp_pdu_stream, discarded_data_is_read_and_dropped)
{
    const auto s = typical_exchange({true, true, 0});
    const auto outcome = s.run(placement::discard);
    ASSERT_FALSE(outcome.error);
    ASSERT_EQ(outcome.pdus.size(), s.expected.size());
    for (std::size_t i = 0; i < outcome.pdus.size(); ++i) {
        EXPECT_EQ(outcome.pdus[i].header, s.expected[i].header);
        EXPECT_TRUE(outcome.pdus[i].data.empty());
        EXPECT_TRUE(outcome.pdus[i].data_digest_ok);
    }
}

TEST(tcp_pdu_stream, a_data_digest_error_is_reported_with_the_data_and_the_stream_goes_on)
{
    exchange s{{false, true, 0}};
    const auto data = random_stream_bytes(64, 4);
    const auto pdu = s.capsule(1, data);
    pdu[pdu.size() - 1] ^= std::byte{0x01};
    s.capsule(2, data);
    auto outcome = s.run();
    ASSERT_FALSE(outcome.error);
    ASSERT_EQ(outcome.pdus.size(), 3U);
    EXPECT_FALSE(outcome.pdus[1].data_digest_ok);
    EXPECT_EQ(outcome.pdus[1].data, s.expected[1].data);
    EXPECT_TRUE(outcome.pdus[2].data_digest_ok);

    // A flipped data byte, not the digest.
    exchange t{{true, true, 0}};
    const auto h2c = t.h2c({1, 1, 0, true}, data);
    h2c[28] ^= std::byte{0x80};
    outcome = t.run();
    ASSERT_FALSE(outcome.error);
    EXPECT_FALSE(outcome.pdus[1].data_digest_ok);
}

TEST(tcp_pdu_stream, header_digest_error)
{
    for (const std::size_t flip :
         {std::size_t{0}, std::size_t{2}, std::size_t{5}, std::size_t{40}, std::size_t{73}}) {
        exchange s{{true, false, 0}};
        const auto pdu = s.capsule(1, {});
        pdu[flip] ^= std::byte{0x10};
        const auto outcome = s.run();
        ASSERT_TRUE(outcome.error) << flip;
        if (flip == 0) {
            EXPECT_EQ(*outcome.error, tcp::invalid_header_field(0)); // type 0x14: no such PDU
        } else if (flip == 2) {
            EXPECT_EQ(*outcome.error, tcp::invalid_header_field(2)); // HLEN decides the digest's place
        } else {
            EXPECT_EQ(*outcome.error, tcp::fatal(fes::header_digest_error)) << flip;
        }
    }
}

TEST(tcp_pdu_stream, only_icreq_before_icresp)
{
    // A capsule first.
    wire bytes;
    bytes.append([](std::span<std::byte> out) {
        return tcp::encode_capsule_cmd(sqe_with_cid(1), {}, tcp::connection_params{}, out);
    });
    auto outcome = run_stream(bytes.bytes());
    ASSERT_TRUE(outcome.error);
    EXPECT_EQ(*outcome.error, tcp::fatal(fes::pdu_sequence_error));

    // ICReq twice.
    exchange s{{}};
    s.bytes.append([](std::span<std::byte> out) { return tcp::encode_icreq(0, false, false, 0, out); });
    outcome = s.run();
    ASSERT_TRUE(outcome.error);
    EXPECT_EQ(*outcome.error, tcp::fatal(fes::pdu_sequence_error));
    EXPECT_EQ(outcome.pdus.size(), 1U);

    // Bytes after ICReq before the controller answered it.
    tcp::pdu_stream stream;
    std::array<std::byte, 129> icreq{};
    ASSERT_EQ(tcp::encode_icreq(0, false, false, 0, icreq), 128U);
    auto step = stream.feed(icreq);
    EXPECT_EQ(step, (tcp::feed_result{128, tcp::stream_event::header}));
    EXPECT_EQ(stream.type(), spec::pdu_type::icreq);
    EXPECT_EQ(stream.state(), tcp::stream_state::awaiting_icresp);
    EXPECT_EQ(stream.bytes_wanted(), 0U);
    step = stream.feed(std::span{icreq}.subspan(128));
    EXPECT_EQ(step, (tcp::feed_result{0, tcp::stream_event::fatal}));
    EXPECT_EQ(stream.error(), tcp::fatal(fes::pdu_sequence_error));
    EXPECT_EQ(stream.state(), tcp::stream_state::failed);
    EXPECT_TRUE(stream.header_bytes().empty()); // the ICReq was not in error
    // Nothing more is taken.
    EXPECT_EQ(stream.feed(icreq), (tcp::feed_result{0, tcp::stream_event::fatal}));
}

TEST(tcp_pdu_stream, pdu_types_the_controller_never_receives)
{
    for (const std::uint8_t type : {0x01, 0x03, 0x05, 0x07, 0x08, 0x09, 0x0a, 0xff}) {
        exchange s{{}};
        const auto pdu = s.capsule(1, {});
        pdu[0] = std::byte{type};
        const auto outcome = s.run();
        ASSERT_TRUE(outcome.error);
        EXPECT_EQ(*outcome.error, tcp::invalid_header_field(0)) << int{type};
    }
    // Before ICReq too.
    std::array<std::byte, 24> bytes{};
    bytes[0] = std::byte{0x05};
    bytes[2] = std::byte{24};
    set_plen(bytes, 24);
    const auto outcome = run_stream(bytes);
    ASSERT_TRUE(outcome.error);
    EXPECT_EQ(*outcome.error, tcp::invalid_header_field(0));
}

TEST(tcp_pdu_stream, icreq_header_fields)
{
    const auto with = [](auto&& edit) {
        wire bytes;
        const auto pdu =
            bytes.append([](std::span<std::byte> out) { return tcp::encode_icreq(0, false, false, 0, out); });
        edit(pdu);
        return run_stream(bytes.bytes());
    };
    auto outcome = with([](std::span<std::byte> pdu) { pdu[2] = std::byte{72}; });
    EXPECT_EQ(outcome.error, tcp::invalid_header_field(2));
    outcome = with([](std::span<std::byte> pdu) { pdu[1] = std::byte{0x01}; }); // no digest on ICReq
    EXPECT_EQ(outcome.error, tcp::invalid_header_field(1));
    outcome = with([](std::span<std::byte> pdu) { set_plen(pdu, 132); });
    EXPECT_EQ(outcome.error, tcp::invalid_header_field(4));
    outcome = with([](std::span<std::byte> pdu) { pdu[8] = std::byte{1}; }); // PFV 1, from negotiate()
    EXPECT_EQ(outcome.error, tcp::unsupported_parameter(8));
    outcome = with([](std::span<std::byte> pdu) { pdu[10] = std::byte{32}; });
    EXPECT_EQ(outcome.error, tcp::invalid_header_field(10));
}

TEST(tcp_pdu_stream, digest_flags_must_match_the_connection)
{
    for (const auto& options : all_options) {
        // HDGSTF flipped.
        exchange s{options};
        auto pdu = s.capsule(1, {});
        pdu[1] ^= std::byte{0x01};
        fix_header_digest(pdu, s.params);
        EXPECT_EQ(s.run().error, tcp::invalid_header_field(1));

        // DDGSTF flipped on a PDU with data.
        exchange t{options};
        const auto data = random_stream_bytes(16, 1);
        pdu = t.capsule(1, data);
        pdu[1] ^= std::byte{0x02};
        fix_header_digest(pdu, t.params);
        EXPECT_EQ(t.run().error, tcp::invalid_header_field(1));

        // DDGSTF on a PDU without data.
        exchange u{options};
        pdu = u.capsule(1, {});
        pdu[1] |= std::byte{0x02};
        fix_header_digest(pdu, u.params);
        EXPECT_EQ(u.run().error, tcp::invalid_header_field(1));
    }
}

TEST(tcp_pdu_stream, flags_a_pdu_does_not_define)
{
    const auto data = random_stream_bytes(16, 1);
    for (const std::uint8_t flag : {0x04, 0x08, 0x10, 0x80}) {
        exchange s{{true, false, 0}};
        const auto pdu = s.capsule(1, data);
        pdu[1] |= std::byte{flag};
        fix_header_digest(pdu, s.params);
        EXPECT_EQ(s.run().error, tcp::invalid_header_field(1)) << int{flag};
    }
    for (const std::uint8_t flag : {0x08, 0x20}) { // SUCCESS is C2HData's only
        exchange s{{true, false, 0}};
        const auto pdu = s.h2c({1, 1, 0, true}, data);
        pdu[1] |= std::byte{flag};
        fix_header_digest(pdu, s.params);
        EXPECT_EQ(s.run().error, tcp::invalid_header_field(1)) << int{flag};
    }
}

TEST(tcp_pdu_stream, hlen_pdo_and_plen)
{
    const auto data = random_stream_bytes(64, 1);
    for (const auto& options : all_options) {
        const auto header_end = 72U + (options.header_digest ? 4U : 0U);
        const auto check = [&](auto&& edit, const tcp::fatal_error& expected) {
            exchange s{options};
            const auto pdu = s.capsule(1, data);
            edit(pdu);
            fix_header_digest(pdu, s.params);
            EXPECT_EQ(s.run().error, expected);
        };
        check([](std::span<std::byte> pdu) { pdu[2] = std::byte{24}; }, tcp::invalid_header_field(2));
        // PDO inside the header or its digest.
        check([&](std::span<std::byte> pdu) { pdu[3] = std::byte(header_end - 4); },
              tcp::invalid_header_field(3));
        // PDO not a multiple of CPDA's alignment (4 bytes at CPDA 0).
        check([&](std::span<std::byte> pdu) { pdu[3] = std::byte(std::to_integer<unsigned>(pdu[3]) + 2); },
              tcp::invalid_header_field(3));
        // PDO past the data.
        check([&](std::span<std::byte> pdu) { pdu[3] = std::byte{252}; }, tcp::invalid_header_field(3));
        // PLEN shorter than the header and its digest.
        check([&](std::span<std::byte> pdu) { set_plen(pdu, header_end - 1); }, tcp::invalid_header_field(4));
    }
    // CPDA 3 (16 bytes): PDO 80 is 4-aligned, not 16-aligned.
    exchange s{{false, false, 3}};
    const auto pdu = s.capsule(1, data);
    ASSERT_EQ(std::to_integer<unsigned>(pdu[3]), 80U);
    pdu[3] = std::byte{76};
    set_plen(pdu, 76 + 64 + 4);
    EXPECT_EQ(s.run().error, tcp::invalid_header_field(3));
}

TEST(tcp_pdu_stream, in_capsule_data_limit)
{
    // The admin queue's 8 KiB before Connect.
    exchange s{{true, true, 0}};
    auto data = random_stream_bytes(8192, 1);
    s.capsule(1, data);
    EXPECT_FALSE(s.run().error);
    data.push_back(std::byte{0});
    exchange t{{true, true, 0}};
    t.capsule(1, data);
    EXPECT_EQ(t.run().error, tcp::fatal(fes::limit_exceeded));

    // The I/O queue's limit once the caller sets it.
    tcp::pdu_stream stream;
    std::array<std::byte, 128> icreq{};
    ASSERT_EQ(stream.feed(std::span{icreq}.first(tcp::encode_icreq(0, false, false, 0, icreq))).event,
              tcp::stream_event::header);
    stream.establish(*tcp::negotiate(stream.icreq(), {}));
    stream.set_max_in_capsule_data(16);
    std::vector<std::byte> pdu(100);
    const std::array<std::span<const std::byte>, 1> parts{std::span{data}.first(17)};
    const auto size = tcp::encode_capsule_cmd(sqe_with_cid(1), parts, stream.params(), pdu);
    EXPECT_EQ(stream.feed(std::span{pdu}.first(8)), (tcp::feed_result{8, tcp::stream_event::need_more}));
    // The limit is known once the header is: the data is never waited for.
    EXPECT_EQ(stream.feed(std::span{pdu}.subspan(8, size - 8)),
              (tcp::feed_result{64, tcp::stream_event::fatal}));
    EXPECT_EQ(stream.error(), tcp::fatal(fes::limit_exceeded));
    EXPECT_EQ(stream.header_bytes().size(), 72U);
}

TEST(tcp_pdu_stream, h2c_data_fields)
{
    const auto data = random_stream_bytes(8193, 1);
    for (const auto& options : all_options) {
        // MAXH2CDATA 8192.
        exchange s{options};
        s.h2c({1, 1, 0, true}, std::span{data}.first(8192));
        EXPECT_FALSE(s.run().error);
        exchange t{options};
        t.h2c({1, 1, 0, true}, data);
        EXPECT_EQ(t.run().error, tcp::fatal(fes::limit_exceeded));

        // DATAL disagreeing with PLEN, and DATAL 0.
        exchange u{options};
        auto pdu = u.h2c({1, 1, 0, true}, std::span{data}.first(100));
        set_u32(pdu, 16, 99);
        fix_header_digest(pdu, u.params);
        EXPECT_EQ(u.run().error, tcp::invalid_header_field(4));
        exchange v{options};
        pdu = v.h2c({1, 1, 0, true}, std::span{data}.first(100));
        set_u32(pdu, 16, 0);
        fix_header_digest(pdu, v.params);
        EXPECT_EQ(v.run().error, tcp::invalid_header_field(16));
    }
}

TEST(tcp_pdu_stream, h2c_term_req_closes_the_stream)
{
    for (const auto& options : all_options) {
        exchange s{options};
        const auto header = random_stream_bytes(72, 5);
        s.term_req(tcp::invalid_header_field(3), header);
        const auto outcome = s.run();
        EXPECT_FALSE(outcome.error);
        EXPECT_TRUE(outcome.closed);
        EXPECT_EQ(outcome.pdus, s.expected);
    }
    // Before ICReq too, and with no header in error.
    wire bytes;
    bytes.append([](std::span<std::byte> out) {
        return tcp::encode_h2c_term_req(tcp::fatal(fes::pdu_sequence_error), {}, out);
    });
    tcp::pdu_stream stream;
    EXPECT_EQ(stream.feed(bytes.bytes()), (tcp::feed_result{24, tcp::stream_event::closed}));
    EXPECT_EQ(stream.term_req().fes, fes::pdu_sequence_error);
    EXPECT_TRUE(stream.term_req_data().empty());
    EXPECT_EQ(stream.state(), tcp::stream_state::closed);
    EXPECT_EQ(stream.feed(bytes.bytes()), (tcp::feed_result{0, tcp::stream_event::closed}));

    // PLEN beyond 24 + 128.
    exchange t{{}};
    const auto pdu = t.term_req(tcp::invalid_header_field(3), random_stream_bytes(128, 5));
    set_plen(pdu, 153);
    EXPECT_EQ(t.run().error, tcp::invalid_header_field(4));
}

TEST(tcp_pdu_stream, the_caller_fails_a_pdu_and_the_term_req_carries_its_header)
{
    exchange s{{true, false, 0}};
    const auto data = random_stream_bytes(32, 1);
    s.h2c({1, 77, 0, true}, data);
    tcp::pdu_stream stream;
    auto bytes = s.bytes.bytes();
    auto step = stream.feed(bytes);
    ASSERT_EQ(step.event, tcp::stream_event::header);
    stream.establish(*tcp::negotiate(stream.icreq(), limits_for(s.options)));
    bytes = bytes.subspan(step.consumed);
    step = stream.feed(bytes);
    ASSERT_EQ(step.event, tcp::stream_event::header);
    EXPECT_EQ(step.consumed, 28U);
    EXPECT_EQ(stream.data_length(), 32U);
    EXPECT_EQ(stream.bytes_wanted(), 0U);
    EXPECT_EQ(stream.h2c_data().ttag, 77U);
    // No R2T has TTAG 77.
    stream.fail(tcp::invalid_header_field(tcp::header_offset::ttag));
    EXPECT_EQ(stream.feed(bytes.subspan(step.consumed)).event, tcp::stream_event::fatal);

    std::array<std::byte, spec::tcp_term_req_max_length> out{};
    const auto size = tcp::encode_c2h_term_req(stream.error(), stream.header_bytes(), out);
    ASSERT_EQ(size, 48U);
    EXPECT_EQ(nvmekit_test::le_in<std::uint32_t>(out, 10), 10U);
    EXPECT_TRUE(std::equal(out.begin() + 24, out.begin() + 48, s.expected[1].header.begin()));
}

TEST(tcp_pdu_stream, zero_copy_window_and_bytes_wanted)
{
    exchange s{{false, true, 0}};
    const auto data = random_stream_bytes(1000, 8);
    s.capsule(4, data);
    auto bytes = s.bytes.bytes();
    tcp::pdu_stream stream;
    EXPECT_EQ(stream.bytes_wanted(), 8U);
    auto step = stream.feed(bytes.first(10));
    EXPECT_EQ(step, (tcp::feed_result{10, tcp::stream_event::need_more}));
    EXPECT_EQ(stream.bytes_wanted(), 118U);
    step = stream.feed(bytes.subspan(10));
    ASSERT_EQ(step, (tcp::feed_result{118, tcp::stream_event::header}));
    stream.establish(*tcp::negotiate(stream.icreq(), limits_for(s.options)));
    bytes = bytes.subspan(128);
    step = stream.feed(bytes);
    ASSERT_EQ(step, (tcp::feed_result{72, tcp::stream_event::header}));
    bytes = bytes.subspan(72);
    std::vector<std::byte> buffer(1000);
    EXPECT_TRUE(stream.data_window().empty());
    stream.place_data(buffer);
    EXPECT_EQ(stream.bytes_wanted(), 1000U);
    auto window = stream.data_window();
    ASSERT_EQ(window.size(), 1000U);
    std::copy_n(bytes.begin(), 600, window.begin()); // a read straight into the command's buffer
    EXPECT_EQ(stream.commit_data(600), tcp::stream_event::need_more);
    window = stream.data_window();
    ASSERT_EQ(window.size(), 400U);
    EXPECT_EQ(window.data(), buffer.data() + 600);
    std::copy_n(bytes.begin() + 600, 400, window.begin());
    EXPECT_EQ(stream.commit_data(400), tcp::stream_event::need_more); // the data digest follows
    EXPECT_TRUE(stream.data_window().empty());
    EXPECT_EQ(stream.bytes_wanted(), 4U);
    step = stream.feed(bytes.subspan(1000));
    EXPECT_EQ(step, (tcp::feed_result{4, tcp::stream_event::data}));
    EXPECT_TRUE(stream.data_digest_ok());
    EXPECT_EQ(buffer, data);
    EXPECT_EQ(stream.bytes_wanted(), 8U);
}

TEST(tcp_pdu_stream, check_h2c_data_against_its_r2t)
{
    const tcp::r2t_window r2t{5, 9, 4096, 8192, 0};
    spec::h2c_data_pdu pdu{};
    pdu.ch.type = spec::pdu_type::h2c_data;
    pdu.cccid = 5;
    pdu.ttag = 9;
    pdu.datao = 4096;
    pdu.datal = 8192;
    pdu.ch.flags.set(spec::pdu_flags::last_pdu, true);
    EXPECT_EQ(tcp::check_h2c_data(pdu, r2t), std::nullopt);

    auto bad = pdu;
    bad.ttag = 8;
    EXPECT_EQ(tcp::check_h2c_data(bad, r2t), tcp::invalid_header_field(10));
    bad = pdu;
    bad.cccid = 6;
    EXPECT_EQ(tcp::check_h2c_data(bad, r2t), tcp::invalid_header_field(8));
    bad = pdu;
    bad.datao = 4095;
    EXPECT_EQ(tcp::check_h2c_data(bad, r2t), tcp::fatal(fes::data_transfer_out_of_range));
    bad = pdu;
    bad.datal = 8193;
    EXPECT_EQ(tcp::check_h2c_data(bad, r2t), tcp::fatal(fes::data_transfer_out_of_range));
    bad = pdu;
    bad.ch.flags.set(spec::pdu_flags::last_pdu, false);
    EXPECT_EQ(tcp::check_h2c_data(bad, r2t), tcp::invalid_header_field(1));

    // The second of two PDUs: DATAO where the first ended, LAST_PDU on it only.
    auto second = pdu;
    second.datao = 4096 + 4096;
    second.datal = 4096;
    EXPECT_EQ(tcp::check_h2c_data(second, {5, 9, 4096, 8192, 4096}), std::nullopt);
    EXPECT_EQ(tcp::check_h2c_data(second, {5, 9, 4096, 8192, 0}), tcp::invalid_header_field(12));
    auto first = pdu;
    first.datal = 4096;
    EXPECT_EQ(tcp::check_h2c_data(first, r2t), tcp::invalid_header_field(1)); // LAST_PDU too early
    first.ch.flags.set(spec::pdu_flags::last_pdu, false);
    EXPECT_EQ(tcp::check_h2c_data(first, r2t), std::nullopt);
}

// Random valid exchanges, fed in random splits and placed in random ways, come out as sent.
TEST(tcp_pdu_stream, random_exchanges_in_random_splits)
{
    nvmekit_test::splitmix64 random{2026};
    const auto data = random_stream_bytes(20'000, 99);
    for (int round = 0; round < 300; ++round) {
        host_options options{random.percent(50), random.percent(50),
                             static_cast<std::uint8_t>(random.one_in(3) ? random.below(32) : 0)};
        exchange s{options};
        const auto pdus = random.between(1, 12);
        for (std::uint64_t i = 0; i < pdus; ++i) {
            const auto cid = static_cast<std::uint16_t>(random.below(65536));
            switch (random.below(3)) {
            case 0: s.capsule(cid, {}); break;
            case 1: {
                const auto size = random.between(1, 8192);
                s.capsule(cid, std::span{data}.subspan(random.below(data.size() - size), size));
                break;
            }
            default: {
                const auto size = random.between(1, 8192);
                s.h2c({cid, static_cast<std::uint16_t>(random.below(65536)),
                       static_cast<std::uint32_t>(random.word()), random.percent(50)},
                      std::span{data}.subspan(random.below(data.size() - size), size));
                break;
            }
            }
        }
        const bool ends_with_term_req = random.one_in(4);
        if (ends_with_term_req) {
            s.term_req(tcp::fatal(fes::header_digest_error), std::span{data}.first(random.below(129)));
        }
        const auto how = random.pick(std::array{placement::copy, placement::zero_copy});
        const auto max_chunk = random.pick(std::array<std::uint64_t, 4>{1, 7, 300, 100'000});
        const auto outcome = run_stream(
            s.bytes.bytes(), limits_for(options), [&](std::size_t) { return random.between(1, max_chunk); },
            how);
        ASSERT_FALSE(outcome.error) << "round " << round;
        ASSERT_EQ(outcome.closed, ends_with_term_req) << "round " << round;
        ASSERT_EQ(outcome.pdus, s.expected) << "round " << round;
    }
}
