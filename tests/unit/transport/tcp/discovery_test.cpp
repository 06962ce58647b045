#include <nvmekit/transport/tcp/discovery.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "print_helpers.hpp"

namespace {
namespace transport_tcp_discovery_test {

namespace spec = nvmekit::spec;
namespace tcp = nvmekit::transport::tcp;

spec::get_log_page_view log_read(std::uint64_t offset, std::uint64_t bytes)
{
    return {.log_page_id = spec::log_page_id{spec::discovery_log_page_id},
            .dword_count = bytes / 4,
            .offset = offset};
}

TEST(tcp_discovery, the_log_has_a_header_and_one_entry_per_record)
{
    const std::array<tcp::discovery_record, 2> records{
        tcp::discovery_record{
            .address = "192.0.2.7", .port = 4420, .nqn = "nqn.2026-01.org.example:a", .port_id = 3},
        tcp::discovery_record{.address = "2001:db8::1", .port = 4421, .nqn = "nqn.2026-01.org.example:b"}};
    const auto log = tcp::discovery_log(7, records);
    ASSERT_EQ(log.size(), 1024U * 3U);
    spec::discovery_log_header header{};
    std::memcpy(&header, log.data(), sizeof(header));
    EXPECT_EQ(header.genctr, 7U);
    EXPECT_EQ(header.numrec, 2U);
    EXPECT_EQ(header.recfmt, 0U);
    spec::discovery_log_entry first{};
    std::memcpy(&first, log.data() + 1024, sizeof(first));
    EXPECT_EQ(first.trtype, spec::transport_type::tcp);
    EXPECT_EQ(first.adrfam, spec::address_family::ipv4);
    EXPECT_EQ(first.subtype, spec::discovery_subsystem_type::nvm);
    // not specified, not "not required": Debian 12's nvme-cli (libnvme 1.3) starts TLS for that
    EXPECT_EQ(first.treq.get(spec::transport_requirements::secure_channel),
              spec::secure_channel_requirement::not_specified);
    EXPECT_EQ(first.portid, 3U);
    EXPECT_EQ(first.cntlid, spec::dynamic_controller_id);
    EXPECT_EQ(first.asqsz, 32U);
    EXPECT_EQ(first.address(), "192.0.2.7");
    EXPECT_EQ(first.service_id(), "4420");
    EXPECT_EQ(first.trsvcid[4], ' '); // space padded
    EXPECT_EQ(first.subsystem_nqn(), "nqn.2026-01.org.example:a");
    spec::discovery_log_entry second{};
    std::memcpy(&second, log.data() + 2048, sizeof(second));
    EXPECT_EQ(second.adrfam, spec::address_family::ipv6);
    EXPECT_EQ(second.address(), "2001:db8::1");
    EXPECT_EQ(second.service_id(), "4421");
}

TEST(tcp_discovery, referrals_are_entries_of_their_own_subtype_and_secure_channel)
{
    // A referral to another discovery service (the well-known NQN), and one to an NVM subsystem
    // elsewhere that needs a secure channel, after a subsystem of this listener
    const std::array<tcp::discovery_record, 3> records{
        tcp::discovery_record{.address = "10.0.0.1", .port = 4420, .nqn = "nqn.2026-01.org.example:a"},
        tcp::referral_record({.address = "192.0.2.9", .port = 8009}),
        tcp::referral_record({.address = "192.0.2.10",
                              .port = 4430,
                              .nqn = "nqn.2026-01.org.example:elsewhere",
                              .secure_channel = true,
                              .family = spec::address_family::ipv4})};
    const auto log = tcp::discovery_log(4, records);
    ASSERT_EQ(log.size(), 4U * 1024U);
    spec::discovery_log_header header{};
    std::memcpy(&header, log.data(), sizeof(header));
    EXPECT_EQ(header.numrec, 3U);
    spec::discovery_log_entry referral{};
    std::memcpy(&referral, log.data() + 2048, sizeof(referral));
    EXPECT_EQ(referral.trtype, spec::transport_type::tcp);
    EXPECT_EQ(referral.adrfam, spec::address_family::ipv4);
    EXPECT_EQ(referral.subtype, spec::discovery_subsystem_type::referral);
    EXPECT_EQ(referral.treq.get(spec::transport_requirements::secure_channel),
              spec::secure_channel_requirement::not_specified); // no TLS asked of libnvme
    EXPECT_EQ(referral.portid, 0U);
    EXPECT_EQ(referral.cntlid, spec::dynamic_controller_id);
    EXPECT_EQ(referral.asqsz, 32U);
    EXPECT_EQ(referral.address(), "192.0.2.9");
    EXPECT_EQ(referral.traddr[9], ' '); // space padded, as nvme-cli strips it
    EXPECT_EQ(referral.service_id(), "8009");
    EXPECT_EQ(referral.subsystem_nqn(), spec::discovery_nqn);
    spec::discovery_log_entry elsewhere{};
    std::memcpy(&elsewhere, log.data() + 3072, sizeof(elsewhere));
    EXPECT_EQ(elsewhere.subtype, spec::discovery_subsystem_type::nvm);
    EXPECT_EQ(elsewhere.treq.get(spec::transport_requirements::secure_channel),
              spec::secure_channel_requirement::required);
    EXPECT_EQ(elsewhere.subsystem_nqn(), "nqn.2026-01.org.example:elsewhere");
    EXPECT_EQ(elsewhere.service_id(), "4430");
}

TEST(tcp_discovery, a_referrals_address_family_is_as_given_or_from_its_address)
{
    EXPECT_EQ(tcp::referral_record({.address = "2001:db8::9"}).family, std::nullopt);
    const std::array<tcp::discovery_record, 2> records{
        tcp::referral_record({.address = "2001:db8::9"}),
        tcp::referral_record({.address = "fe80::1", .family = spec::address_family::ipv6})};
    const auto log = tcp::discovery_log(1, records);
    spec::discovery_log_entry first{};
    std::memcpy(&first, log.data() + 1024, sizeof(first));
    EXPECT_EQ(first.adrfam, spec::address_family::ipv6);
    EXPECT_EQ(first.service_id(), "8009");
}

TEST(tcp_discovery, an_empty_log_is_its_header)
{
    const auto log = tcp::discovery_log(1, {});
    ASSERT_EQ(log.size(), 1024U);
    spec::discovery_log_header header{};
    std::memcpy(&header, log.data(), sizeof(header));
    EXPECT_EQ(header.numrec, 0U);
}

TEST(tcp_discovery, the_log_is_read_at_offsets_with_zeroes_past_its_end)
{
    const std::array<tcp::discovery_record, 1> records{
        tcp::discovery_record{.address = "10.0.0.1", .port = 4420, .nqn = "nqn.2026-01.org.example:a"}};
    const auto log = tcp::discovery_log(2, records);
    std::vector<std::byte> out(4096, std::byte{0xee});
    // The header alone, as a host reads it first
    ASSERT_EQ(tcp::read_discovery_log(log_read(0, 1024), log, std::span{out}.first(1024)),
              spec::status::success());
    EXPECT_EQ(std::memcmp(out.data(), log.data(), 1024), 0);
    // From the entry on, asking for more than is left: the rest reads as zeroes
    std::fill(out.begin(), out.end(), std::byte{0xee});
    ASSERT_EQ(tcp::read_discovery_log(log_read(1024, 4096), log, out), spec::status::success());
    EXPECT_EQ(std::memcmp(out.data(), log.data() + 1024, 1024), 0);
    EXPECT_TRUE(std::all_of(out.begin() + 1024, out.end(), [](std::byte b) { return b == std::byte{0}; }));
    // At the very end: all zeroes
    ASSERT_EQ(tcp::read_discovery_log(log_read(log.size(), 8), log, std::span{out}.first(8)),
              spec::status::success());
}

TEST(tcp_discovery, bad_offsets_and_short_data_are_refused)
{
    const auto log = tcp::discovery_log(1, {});
    std::vector<std::byte> out(4096);
    const auto invalid_field = spec::status{spec::generic_status::invalid_field}.with_dnr();
    EXPECT_EQ(tcp::read_discovery_log(log_read(2, 16), log, out), invalid_field);    // not dword aligned
    EXPECT_EQ(tcp::read_discovery_log(log_read(1028, 16), log, out), invalid_field); // past the end
    auto by_index = log_read(0, 16);
    by_index.offset_is_index = true;
    EXPECT_EQ(tcp::read_discovery_log(by_index, log, out), invalid_field);
    const auto length_invalid = spec::status{spec::generic_status::data_sgl_length_invalid}.with_dnr();
    EXPECT_EQ(tcp::read_discovery_log(log_read(0, 1024), log, std::span{out}.first(512)), length_invalid);
}

TEST(tcp_discovery, data_longer_than_numd_keeps_its_bytes_past_the_log_read)
{
    const auto log = tcp::discovery_log(1, {});
    std::vector<std::byte> out(2048, std::byte{0xee});
    ASSERT_EQ(tcp::read_discovery_log(log_read(0, 1024), log, out), spec::status::success());
    EXPECT_EQ(std::memcmp(out.data(), log.data(), 1024), 0);
    EXPECT_TRUE(std::all_of(out.begin() + 1024, out.end(), [](std::byte b) { return b == std::byte{0xee}; }));
}

TEST(tcp_discovery, identify_reports_a_discovery_controller)
{
    spec::identify_controller io{};
    io.cntlid = 9;
    io.kas = 1;
    io.maxcmd = 128;
    io.ioccsz = 516;
    io.nn = 16;
    io.sgls.set(spec::sgl_support::support, spec::sgl_data_block_support::supported);
    spec::assign_null_padded(io.subnqn, "nqn.2026-01.org.example:a");
    const auto data = tcp::discovery_identify(io);
    EXPECT_EQ(data.cntrltype, spec::controller_type::discovery);
    EXPECT_EQ(spec::text_of(data.subnqn), spec::discovery_nqn);
    EXPECT_EQ(data.cntlid, 9U);
    EXPECT_EQ(data.kas, 1U);
    EXPECT_EQ(data.maxcmd, 128U);
    EXPECT_EQ(data.ioccsz, 4U);
    EXPECT_EQ(data.iorcsz, 1U);
    EXPECT_EQ(data.nn, 0U);
    EXPECT_TRUE(data.lpa.get(spec::log_page_attributes::extended_data));
    EXPECT_EQ(data.sgls.get(spec::sgl_support::support), spec::sgl_data_block_support::supported);
}

TEST(tcp_discovery, a_discovery_controller_takes_only_its_admin_commands)
{
    using spec::admin_opcode;
    for (const auto opcode :
         {admin_opcode::get_log_page, admin_opcode::identify, admin_opcode::set_features,
          admin_opcode::get_features, admin_opcode::async_event_request, admin_opcode::keep_alive}) {
        EXPECT_TRUE(tcp::discovery_takes(static_cast<std::uint8_t>(opcode))) << spec::name(opcode);
    }
    for (const auto opcode : {admin_opcode::create_io_sq, admin_opcode::namespace_management,
                              admin_opcode::format_nvm, admin_opcode::abort}) {
        EXPECT_FALSE(tcp::discovery_takes(static_cast<std::uint8_t>(opcode))) << spec::name(opcode);
    }
}

} // namespace transport_tcp_discovery_test
} // namespace
