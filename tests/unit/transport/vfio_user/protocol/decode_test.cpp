#include <nvmekit/transport/vfio_user/protocol/decode.hpp>

#include <array>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <gtest/gtest.h>

#include "transport/vfio_user/protocol/protocol_test_support.hpp"

namespace vu = nvmekit::transport::vfio_user;
using nvmekit_test::command_header;
using nvmekit_test::e2big;
using nvmekit_test::einval;
using nvmekit_test::enotsup;
using nvmekit_test::irq_counts;
using nvmekit_test::payload_of;
using nvmekit_test::region_sizes;
using nvmekit_test::truncated;
using nvmekit_test::version_json;
using nvmekit_test::version_payload_with;
using nvmekit_test::with_tail;

TEST(vfio_user_protocol, parse_result_holds_a_value_or_an_errno)
{
    const vu::parse_result<std::uint32_t> value{42U};
    ASSERT_TRUE(value);
    EXPECT_EQ(*value, 42U);
    EXPECT_EQ(value.error(), std::errc{});
    const vu::parse_result<std::uint32_t> error{einval};
    EXPECT_FALSE(error.has_value());
    EXPECT_EQ(error.error(), einval);
    EXPECT_EQ(vu::errno_value(einval), 22U);
    EXPECT_EQ(vu::errno_value(enotsup), 95U);
    EXPECT_EQ(vu::errno_value(e2big), 7U);
}

TEST(vfio_user_protocol, parse_header_accepts_a_command)
{
    const auto bytes = payload_of(command_header(vu::command::device_reset, 16, 0xBEEF));
    const auto header = vu::parse_header(bytes);
    ASSERT_TRUE(header);
    EXPECT_EQ(header->message_id, 0xBEEFU);
    EXPECT_EQ(header->command_code, vu::command::device_reset);
    EXPECT_EQ(header->message_size, 16U);
}

TEST(vfio_user_protocol, parse_header_leaves_unknown_commands_to_the_caller)
{
    const auto header = vu::parse_header(payload_of(command_header(static_cast<vu::command>(99), 16)));
    ASSERT_TRUE(header);
    EXPECT_EQ(static_cast<unsigned>(header->command_code), 99U);
}

TEST(vfio_user_protocol, parse_header_rejects_short_input_and_bad_sizes)
{
    const auto bytes = payload_of(command_header(vu::command::device_reset, 16));
    EXPECT_EQ(vu::parse_header(std::span{bytes}.first(15)).error(), einval);
    EXPECT_EQ(vu::parse_header(std::span<const std::byte>{}).error(), einval);
    EXPECT_EQ(vu::parse_header(payload_of(command_header(vu::command::device_reset, 15))).error(), einval);
    EXPECT_EQ(vu::parse_header(payload_of(command_header(vu::command::device_reset, 0))).error(), einval);

    const vu::protocol_limits limits{};
    EXPECT_EQ(limits.max_message_size(), 16U + 16U + (1U << 20));
    const auto largest = static_cast<std::uint32_t>(limits.max_message_size());
    EXPECT_TRUE(vu::parse_header(payload_of(command_header(vu::command::region_write, largest)), limits));
    EXPECT_EQ(
        vu::parse_header(payload_of(command_header(vu::command::region_write, largest + 1)), limits).error(),
        e2big);
    EXPECT_EQ(vu::parse_header(payload_of(command_header(vu::command::region_write, 0xFFFFFFFF))).error(),
              e2big);

    vu::protocol_limits small{};
    small.max_data_xfer_size = 8;
    small.max_version_data = 64;
    EXPECT_EQ(small.max_message_size(), 16U + 4U + 64U);
}

TEST(vfio_user_protocol, parse_header_rejects_replies_and_undefined_types)
{
    auto header = command_header(vu::command::device_get_info, 32);
    header.flags.set(vu::message_flags::type, vu::message_type::reply);
    EXPECT_EQ(vu::parse_header(payload_of(header)).error(), einval);
    header.flags.raw = 0x2;
    EXPECT_EQ(vu::parse_header(payload_of(header)).error(), einval);
    header.flags.raw = 0x10; // No_reply on a command is fine
    EXPECT_TRUE(vu::parse_header(payload_of(header)));
}

TEST(vfio_user_protocol, whole_message_round_trip_through_header_and_decoder)
{
    auto message = payload_of(command_header(vu::command::dma_map, 48, 3));
    const auto body = payload_of(vu::dma_map{32, vu::dma_map_flags{3}, 0, 0x100000, 0x200000});
    message.insert(message.end(), body.begin(), body.end());
    const auto header = vu::parse_header(message);
    ASSERT_TRUE(header);
    const auto map =
        vu::decode_dma_map(std::span{message}.subspan(vu::header_size, header->message_size - 16), 1);
    ASSERT_TRUE(map);
    EXPECT_EQ(map->address, 0x100000U);
    EXPECT_EQ(map->size, 0x200000U);
}

TEST(vfio_user_protocol, version_rejects_framing_errors)
{
    EXPECT_EQ(vu::decode_version(std::vector<std::byte>(3), 0).error(), einval);
    EXPECT_EQ(vu::decode_version(version_payload_with(0, 0, "{}"), 0).error(), einval); // no NUL
    EXPECT_EQ(vu::decode_version(with_tail(version_json("{}"), 1), 0).error(), einval); // bytes after NUL
    EXPECT_TRUE(vu::decode_version(with_tail(version_json("{}"), 3, std::byte{0}), 0)); // NUL padding
    EXPECT_EQ(vu::decode_version(version_json("{}"), 1).error(), einval);               // descriptor attached
}

TEST(vfio_user_protocol, version_rejects_huge_json)
{
    vu::protocol_limits limits{};
    limits.max_version_data = 32;
    const std::string fits = R"({"capabilities":{"pgsizes":4096}})"; // 33 characters + NUL
    EXPECT_EQ(vu::decode_version(version_json(fits), 0, limits).error(), e2big);
    limits.max_version_data = 34;
    EXPECT_TRUE(vu::decode_version(version_json(fits), 0, limits));
    const std::string huge(100000, ' ');
    EXPECT_EQ(vu::decode_version(version_json(huge + "{}"), 0).error(), e2big);
}

TEST(vfio_user_protocol, version_negotiation_keeps_major_and_lowers_minor)
{
    const auto same = vu::negotiate_version({0, 0, {}});
    ASSERT_TRUE(same);
    EXPECT_EQ(same->major, 0U);
    EXPECT_EQ(same->minor, 0U);
    const auto newer = vu::negotiate_version({0, 5, {}});
    ASSERT_TRUE(newer);
    EXPECT_EQ(newer->minor, 0U);
    EXPECT_EQ(vu::negotiate_version({1, 0, {}}).error(), enotsup);
}

TEST(vfio_user_protocol, dma_map_round_trip)
{
    const vu::dma_map sent{32, vu::dma_map_flags{3}, 0x3000, 0xC0000000, 0x40000000};
    const auto map = vu::decode_dma_map(payload_of(sent), 1);
    ASSERT_TRUE(map);
    EXPECT_EQ(map->argsz, 32U);
    EXPECT_TRUE(map->flags.get(vu::dma_map_flags::read));
    EXPECT_TRUE(map->flags.get(vu::dma_map_flags::write));
    EXPECT_EQ(map->offset, 0x3000U);
    EXPECT_EQ(map->address, 0xC0000000U);
    EXPECT_EQ(map->size, 0x40000000U);

    const auto read_only =
        vu::decode_dma_map(payload_of(vu::dma_map{32, vu::dma_map_flags{1}, 0, 0xF0000, 0x10000}), 0);
    ASSERT_TRUE(read_only);
    EXPECT_FALSE(read_only->flags.get(vu::dma_map_flags::write));
    EXPECT_TRUE(vu::decode_dma_map(payload_of(vu::dma_map{32, vu::dma_map_flags{2}, 0, 0, 0x1000}), 1));
    // The exclusive end must be representable: a map ending at 2^64 is refused, one page lower is not.
    EXPECT_TRUE(vu::decode_dma_map(
        payload_of(vu::dma_map{32, vu::dma_map_flags{3}, 0, 0xFFFFFFFFFFFFE000, 0x1000}), 1));
    EXPECT_EQ(vu::decode_dma_map(
                  payload_of(vu::dma_map{32, vu::dma_map_flags{3}, 0, 0xFFFFFFFFFFFFF000, 0x1000}), 1)
                  .error(),
              einval);
}

TEST(vfio_user_protocol, dma_map_rejects_every_malformed_request)
{
    const vu::dma_map good{32, vu::dma_map_flags{3}, 0x1000, 0x10000, 0x2000};
    const auto with = [&](auto change) {
        vu::dma_map map = good;
        change(map);
        return payload_of(map);
    };
    EXPECT_EQ(vu::decode_dma_map(truncated(payload_of(good), 31), 1).error(), einval);
    EXPECT_EQ(vu::decode_dma_map(with_tail(payload_of(good), 1), 1).error(), einval);
    EXPECT_EQ(vu::decode_dma_map(payload_of(good), 2).error(), einval);
    EXPECT_EQ(vu::decode_dma_map(with([](auto& m) { m.argsz = 24; }), 1).error(), einval);
    EXPECT_EQ(vu::decode_dma_map(with([](auto& m) { m.argsz = 40; }), 1).error(), einval);
    EXPECT_EQ(vu::decode_dma_map(with([](auto& m) { m.flags.raw = 0x0B; }), 1).error(), einval);
    EXPECT_EQ(vu::decode_dma_map(with([](auto& m) { m.flags.raw = 0x80000003; }), 1).error(), einval);
    EXPECT_EQ(vu::decode_dma_map(with([](auto& m) { m.flags.raw = 0x07; }), 1).error(), enotsup);
    EXPECT_EQ(vu::decode_dma_map(with([](auto& m) { m.flags.raw = 0; }), 1).error(), einval);
    EXPECT_EQ(vu::decode_dma_map(with([](auto& m) { m.size = 0; }), 1).error(), einval);
    EXPECT_EQ(vu::decode_dma_map(with([](auto& m) { m.address = 0xFFFFFFFFFFFFF000; }), 1).error(), einval);
    EXPECT_EQ(vu::decode_dma_map(with([](auto& m) { m.offset = 0xFFFFFFFFFFFFF000; }), 1).error(), einval);
    EXPECT_EQ(vu::decode_dma_map(with([](auto& m) { m.address = 0x10800; }), 1).error(), einval);
    EXPECT_EQ(vu::decode_dma_map(with([](auto& m) { m.size = 0x2001; }), 1).error(), einval);
    EXPECT_EQ(vu::decode_dma_map(with([](auto& m) { m.offset = 0x1004; }), 1).error(), einval);
    EXPECT_EQ(vu::decode_dma_map(payload_of(good), 0).error(), einval); // offset without a descriptor

    vu::protocol_limits huge_pages{};
    huge_pages.dma_page_size = 0x200000;
    EXPECT_EQ(vu::decode_dma_map(payload_of(good), 1, huge_pages).error(), einval);
    EXPECT_TRUE(vu::decode_dma_map(
        payload_of(vu::dma_map{32, vu::dma_map_flags{3}, 0x200000, 0x400000, 0x200000}), 1, huge_pages));
}

TEST(vfio_user_protocol, dma_unmap_rejects_every_malformed_request)
{
    const vu::dma_unmap good{24, vu::dma_unmap_flags{0}, 0x10000, 0x2000};
    const auto with = [&](auto change) {
        vu::dma_unmap unmap = good;
        change(unmap);
        return payload_of(unmap);
    };
    EXPECT_EQ(vu::decode_dma_unmap(with([](auto& u) { u.flags.raw = 1; }), 0).error(), enotsup);
    // The dirty bitmap request carries a vfio_bitmap after the structure: still ENOTSUP.
    EXPECT_EQ(vu::decode_dma_unmap(with_tail(with([](auto& u) { u.flags.raw = 1; }), 24), 0).error(),
              enotsup);
    EXPECT_EQ(vu::decode_dma_unmap(with([](auto& u) { u.flags.raw = 4; }), 0).error(), enotsup);
    EXPECT_EQ(vu::decode_dma_unmap(with([](auto& u) { u.flags.raw = 8; }), 0).error(), einval);
    EXPECT_EQ(vu::decode_dma_unmap(truncated(payload_of(good), 23), 0).error(), einval);
    EXPECT_EQ(vu::decode_dma_unmap(with_tail(payload_of(good), 8), 0).error(), einval);
    EXPECT_EQ(vu::decode_dma_unmap(payload_of(good), 1).error(), einval);
    EXPECT_EQ(vu::decode_dma_unmap(with([](auto& u) { u.argsz = 16; }), 0).error(), einval);
    EXPECT_EQ(vu::decode_dma_unmap(with([](auto& u) { u.size = 0; }), 0).error(), einval);
    EXPECT_EQ(vu::decode_dma_unmap(with([](auto& u) { u.address = 0xFFFFFFFFFFFFF000; }), 0).error(), einval);
    EXPECT_EQ(vu::decode_dma_unmap(with([](auto& u) { u.address = 0x10010; }), 0).error(), einval);
    EXPECT_EQ(vu::decode_dma_unmap(with([](auto& u) { u.size = 0x1800; }), 0).error(), einval);
    EXPECT_EQ(vu::decode_dma_unmap(with([](auto& u) { u.flags.raw = 2; }), 0).error(), einval); // ALL + range
    EXPECT_EQ(vu::decode_dma_unmap(with([](auto& u) {
                                       u.flags.raw = 2;
                                       u.address = 0;
                                   }),
                                   0)
                  .error(),
              einval);
    EXPECT_EQ(vu::decode_dma_unmap(with([](auto& u) { u.flags.raw = 3; }), 0).error(), enotsup);
}

TEST(vfio_user_protocol, device_get_info_rejects_malformed_requests)
{
    const auto good = payload_of(vu::device_info{16, {}, 0, 0});
    EXPECT_EQ(vu::decode_device_get_info(payload_of(vu::device_info{15, {}, 0, 0}), 0).error(), einval);
    EXPECT_EQ(vu::decode_device_get_info(std::span{good}.first(12), 0).error(), einval);
    EXPECT_EQ(vu::decode_device_get_info(with_tail(good, 4), 0).error(), einval);
    EXPECT_EQ(vu::decode_device_get_info(good, 1).error(), einval);
}

TEST(vfio_user_protocol, region_info_request_checks_argsz_and_index)
{
    const auto request = vu::decode_region_info(payload_of(vu::region_info{32, {}, 7, 0, 0, 0}), 0, 9);
    ASSERT_TRUE(request);
    EXPECT_EQ(request->index, 7U);
    EXPECT_EQ(vu::decode_region_info(payload_of(vu::region_info{32, {}, 9, 0, 0, 0}), 0, 9).error(), einval);
    EXPECT_EQ(vu::decode_region_info(payload_of(vu::region_info{31, {}, 0, 0, 0, 0}), 0, 9).error(), einval);
    const auto good = payload_of(vu::region_info{32, {}, 0, 0, 0, 0});
    EXPECT_EQ(vu::decode_region_info(std::span{good}.first(16), 0, 9).error(), einval);
    EXPECT_EQ(vu::decode_region_info(with_tail(good, 8), 0, 9).error(), einval);
    EXPECT_EQ(vu::decode_region_info(good, 1, 9).error(), einval);
}

TEST(vfio_user_protocol, irq_info_rejects_malformed_requests)
{
    const auto good = payload_of(vu::irq_info{16, {}, 0, 0});
    EXPECT_EQ(vu::decode_irq_info(payload_of(vu::irq_info{16, {}, 5, 0}), 0, 5).error(), einval);
    EXPECT_EQ(vu::decode_irq_info(payload_of(vu::irq_info{8, {}, 0, 0}), 0, 5).error(), einval);
    EXPECT_EQ(vu::decode_irq_info(std::span{good}.first(15), 0, 5).error(), einval);
    EXPECT_EQ(vu::decode_irq_info(with_tail(good, 1), 0, 5).error(), einval);
    EXPECT_EQ(vu::decode_irq_info(good, 1, 5).error(), einval);
}

TEST(vfio_user_protocol, set_irqs_eventfd_trigger_round_trip)
{
    const auto set =
        vu::decode_set_irqs(payload_of(vu::irq_set{20, vu::irq_set_flags{0x24}, 2, 4, 3}), 3, irq_counts);
    ASSERT_TRUE(set);
    EXPECT_EQ(set->data, vu::irq_set_data::eventfd);
    EXPECT_EQ(set->action, vu::irq_set_action::trigger);
    EXPECT_EQ(set->fields.index, 2U);
    EXPECT_EQ(set->fields.start, 4U);
    EXPECT_EQ(set->fields.count, 3U);
    EXPECT_EQ(set->fd_count, 3U);
    EXPECT_TRUE(set->bools.empty());
    EXPECT_FALSE(set->disables_all());

    const auto deassign =
        vu::decode_set_irqs(payload_of(vu::irq_set{20, vu::irq_set_flags{0x24}, 2, 0, 64}), 0, irq_counts);
    ASSERT_TRUE(deassign);
    EXPECT_EQ(deassign->fd_count, 0U);
    // A Linux-style argsz that counts the descriptors as data is accepted.
    EXPECT_TRUE(
        vu::decode_set_irqs(payload_of(vu::irq_set{32, vu::irq_set_flags{0x24}, 2, 0, 3}), 3, irq_counts));
}

TEST(vfio_user_protocol, set_irqs_none_and_bool)
{
    const auto disable =
        vu::decode_set_irqs(payload_of(vu::irq_set{20, vu::irq_set_flags{0x21}, 2, 0, 0}), 0, irq_counts);
    ASSERT_TRUE(disable);
    EXPECT_EQ(disable->data, vu::irq_set_data::none);
    EXPECT_TRUE(disable->disables_all());

    const auto mask =
        vu::decode_set_irqs(payload_of(vu::irq_set{20, vu::irq_set_flags{0x09}, 2, 1, 1}), 0, irq_counts);
    ASSERT_TRUE(mask);
    EXPECT_EQ(mask->action, vu::irq_set_action::mask);
    EXPECT_FALSE(mask->disables_all());

    auto bools = payload_of(vu::irq_set{22, vu::irq_set_flags{0x12}, 2, 62, 2});
    bools.push_back(std::byte{1});
    bools.push_back(std::byte{0});
    const auto unmask = vu::decode_set_irqs(bools, 0, irq_counts);
    ASSERT_TRUE(unmask);
    EXPECT_EQ(unmask->data, vu::irq_set_data::boolean);
    EXPECT_EQ(unmask->action, vu::irq_set_action::unmask);
    ASSERT_EQ(unmask->bools.size(), 2U);
    EXPECT_EQ(unmask->bools[0], std::byte{1});
    EXPECT_EQ(unmask->bools[1], std::byte{0});
    EXPECT_EQ(unmask->bools.data(), bools.data() + 20);
}

TEST(vfio_user_protocol, set_irqs_rejects_every_malformed_request)
{
    const auto decode = [](vu::irq_set set, std::size_t fds, std::size_t extra = 0) {
        return vu::decode_set_irqs(with_tail(payload_of(set), extra, std::byte{1}), fds, irq_counts).error();
    };
    EXPECT_EQ(vu::decode_set_irqs(
                  truncated(payload_of(vu::irq_set{20, vu::irq_set_flags{0x21}, 2, 0, 0}), 19), 0, irq_counts)
                  .error(),
              einval);
    EXPECT_EQ(decode({19, vu::irq_set_flags{0x21}, 2, 0, 0}, 0), einval); // argsz below the structure
    // argsz below the data present
    EXPECT_EQ(decode({20, vu::irq_set_flags{0x22}, 2, 0, 2}, 0, 2), einval);
    EXPECT_EQ(decode({20, vu::irq_set_flags{0x26}, 2, 0, 1}, 1), einval);          // two data types
    EXPECT_EQ(decode({20, vu::irq_set_flags{0x20}, 2, 0, 1}, 0), einval);          // no data type
    EXPECT_EQ(decode({20, vu::irq_set_flags{0x34}, 2, 0, 1}, 1), einval);          // two actions
    EXPECT_EQ(decode({20, vu::irq_set_flags{0x04}, 2, 0, 1}, 1), einval);          // no action
    EXPECT_EQ(decode({20, vu::irq_set_flags{0x64}, 2, 0, 1}, 1), einval);          // undefined bit 6
    EXPECT_EQ(decode({20, vu::irq_set_flags{0x80000024}, 2, 0, 1}, 1), einval);    // undefined bit 31
    EXPECT_EQ(decode({20, vu::irq_set_flags{0x24}, 5, 0, 1}, 1), einval);          // index out of range
    EXPECT_EQ(decode({20, vu::irq_set_flags{0x24}, 2, 63, 2}, 2), einval);         // past the last vector
    EXPECT_EQ(decode({20, vu::irq_set_flags{0x24}, 2, 64, 0}, 0), einval);         // start past the end
    EXPECT_EQ(decode({20, vu::irq_set_flags{0x21}, 1, 0, 0}, 0), einval);          // index without interrupts
    EXPECT_EQ(decode({20, vu::irq_set_flags{0x24}, 2, 1, 0xFFFFFFFF}, 0), einval); // start + count wraps
    EXPECT_EQ(decode({20, vu::irq_set_flags{0x22}, 2, 0, 0}, 0), einval);          // count 0 with BOOL
    EXPECT_EQ(decode({20, vu::irq_set_flags{0x24}, 2, 0, 0}, 0), einval);          // count 0 with EVENTFD
    EXPECT_EQ(decode({21, vu::irq_set_flags{0x22}, 2, 0, 2}, 0, 1), einval);       // BOOL data too short
    EXPECT_EQ(decode({23, vu::irq_set_flags{0x22}, 2, 0, 2}, 0, 3), einval);       // BOOL data too long
    EXPECT_EQ(decode({22, vu::irq_set_flags{0x22}, 2, 0, 2}, 1, 2), einval);       // BOOL with a descriptor
    EXPECT_EQ(decode({21, vu::irq_set_flags{0x21}, 2, 0, 1}, 0, 1), einval);       // NONE with data
    EXPECT_EQ(decode({20, vu::irq_set_flags{0x21}, 2, 0, 1}, 1), einval);          // NONE with a descriptor
    EXPECT_EQ(decode({24, vu::irq_set_flags{0x24}, 2, 0, 1}, 1, 4), einval); // EVENTFD with in-band data
    EXPECT_EQ(decode({20, vu::irq_set_flags{0x24}, 2, 0, 3}, 2), einval);    // descriptors != count
    EXPECT_EQ(decode({20, vu::irq_set_flags{0x24}, 2, 0, 1}, 2), einval);
}

TEST(vfio_user_protocol, region_read_rejects_every_malformed_request)
{
    const auto decode = [](vu::region_access access, const vu::protocol_limits& limits = {}) {
        return vu::decode_region_read(payload_of(access), 0, region_sizes, limits).error();
    };
    EXPECT_EQ(decode({0, 0, 0}), einval);
    EXPECT_EQ(decode({0, 9, 4}), einval);                  // no such region
    EXPECT_EQ(decode({0, 1, 4}), einval);                  // region of size 0
    EXPECT_EQ(decode({0x3FFC, 0, 8}), einval);             // crosses the end
    EXPECT_EQ(decode({0x4000, 0, 1}), einval);             // starts at the end
    EXPECT_EQ(decode({0xFFFFFFFFFFFFFFFE, 0, 4}), einval); // offset + count wraps
    EXPECT_EQ(decode({0, 0, (1U << 20) + 1}), e2big);      // above max_data_xfer_size
    vu::protocol_limits small{};
    small.max_data_xfer_size = 4;
    EXPECT_EQ(decode({0, 0, 8}, small), e2big);
    EXPECT_EQ(decode({0, 0, 4}, small), std::errc{});
    const auto good = payload_of(vu::region_access{0, 0, 4});
    EXPECT_EQ(vu::decode_region_read(std::span{good}.first(15), 0, region_sizes).error(), einval);
    EXPECT_EQ(vu::decode_region_read(with_tail(good, 4), 0, region_sizes).error(), einval);
    EXPECT_EQ(vu::decode_region_read(good, 1, region_sizes).error(), einval);
}

TEST(vfio_user_protocol, region_write_rejects_every_malformed_request)
{
    const auto header_only = payload_of(vu::region_access{0, 0, 4});
    // data missing
    EXPECT_EQ(vu::decode_region_write(header_only, 0, region_sizes).error(), einval);
    EXPECT_EQ(vu::decode_region_write(with_tail(header_only, 3), 0, region_sizes).error(), einval);
    EXPECT_EQ(vu::decode_region_write(with_tail(header_only, 5), 0, region_sizes).error(), einval);
    EXPECT_EQ(vu::decode_region_write(with_tail(header_only, 4), 1, region_sizes).error(), einval);
    EXPECT_EQ(vu::decode_region_write(std::span{header_only}.first(12), 0, region_sizes).error(), einval);
    EXPECT_EQ(vu::decode_region_write(payload_of(vu::region_access{0, 0, 0}), 0, region_sizes).error(),
              einval);
    EXPECT_EQ(
        vu::decode_region_write(with_tail(payload_of(vu::region_access{0x3FFE, 0, 4}), 4), 0, region_sizes)
            .error(),
        einval);
    EXPECT_EQ(vu::decode_region_write(with_tail(payload_of(vu::region_access{0, 9, 4}), 4), 0, region_sizes)
                  .error(),
              einval);
    // A count above the limit is E2BIG even when the data that follows is short.
    EXPECT_EQ(vu::decode_region_write(with_tail(payload_of(vu::region_access{0, 0, 0xFFFFFFFF}), 4), 0,
                                      region_sizes)
                  .error(),
              e2big);
}

TEST(vfio_user_protocol, device_reset_takes_no_payload)
{
    EXPECT_EQ(vu::check_device_reset({}, 0), std::errc{});
    const std::array<std::byte, 1> extra{};
    EXPECT_EQ(vu::check_device_reset(extra, 0), einval);
    EXPECT_EQ(vu::check_device_reset({}, 1), einval);
}

TEST(vfio_user_protocol, random_payloads_never_crash_any_decoder)
{
    std::mt19937 random{12345};
    const std::string_view alphabet = R"({}[]":,0123456789-+.eE truefalsnl\u"capabilities max_msg_fds)";
    std::size_t accepted = 0;
    for (int round = 0; round < 20000; ++round) {
        std::vector<std::byte> payload(random() % 72);
        for (auto& byte : payload) {
            byte = static_cast<std::byte>(random() % 4 == 0 ? 0 : random() % 256);
        }
        const std::size_t fds = random() % 3;
        accepted += vu::decode_dma_map(payload, fds) ? 1U : 0U;
        accepted += vu::decode_dma_unmap(payload, fds) ? 1U : 0U;
        accepted += vu::decode_device_get_info(payload, fds) ? 1U : 0U;
        accepted += vu::decode_region_info(payload, fds, vu::pci_num_regions) ? 1U : 0U;
        accepted += vu::decode_irq_info(payload, fds, vu::pci_num_irqs) ? 1U : 0U;
        accepted += vu::decode_set_irqs(payload, fds, irq_counts) ? 1U : 0U;
        accepted += vu::decode_region_read(payload, fds, region_sizes) ? 1U : 0U;
        accepted += vu::decode_region_write(payload, fds, region_sizes) ? 1U : 0U;
        accepted += vu::decode_version(payload, fds) ? 1U : 0U;
        accepted += vu::parse_header(payload) ? 1U : 0U;

        std::string json;
        const std::size_t length = random() % 48;
        for (std::size_t i = 0; i < length; ++i) {
            json += alphabet[random() % alphabet.size()];
        }
        accepted += vu::decode_version(version_json(json), 0) ? 1U : 0U;
    }
    EXPECT_GT(accepted, 0U); // some random inputs are valid; none may crash or read out of bounds
}

namespace {

/// The header of a request of the server's with `payload_size` bytes after it.
vu::message_header request_header(vu::command cmd, std::uint16_t id, std::size_t payload_size)
{
    return command_header(cmd, static_cast<std::uint32_t>(vu::header_size + payload_size), id);
}

/// The client's reply to request `request`, `payload_size` bytes after the header.
vu::message_header reply_to(const vu::message_header& request, std::size_t payload_size)
{
    vu::message_header reply = request;
    reply.message_size = static_cast<std::uint32_t>(vu::header_size + payload_size);
    reply.flags = vu::message_flags{}.with(vu::message_flags::type, vu::message_type::reply);
    return reply;
}

vu::message_header error_reply_to(const vu::message_header& request, std::uint32_t error_number)
{
    vu::message_header reply = reply_to(request, 0);
    reply.flags.set(vu::message_flags::error, true);
    reply.error_number = error_number;
    return reply;
}

/// A DMA_READ reply payload: the echoed address and count, then `data`.
std::vector<std::byte> dma_read_reply_payload(vu::dma_access echoed, std::span<const std::byte> data)
{
    auto bytes = payload_of(echoed);
    const std::size_t echo = bytes.size();
    bytes.resize(echo + data.size()); // not insert(): g++ 12 -O3 warns falsely on its memmove
    std::copy(data.begin(), data.end(), bytes.begin() + static_cast<std::ptrdiff_t>(echo));
    return bytes;
}

} // namespace

TEST(vfio_user_protocol, parse_message_header_takes_replies_that_parse_header_refuses)
{
    const auto request = request_header(vu::command::dma_read, 3, 16);
    const auto reply = payload_of(reply_to(request, 16 + 8));
    EXPECT_EQ(vu::parse_header(reply).error(), einval);
    const auto parsed = vu::parse_message_header(reply);
    ASSERT_TRUE(parsed);
    EXPECT_EQ(parsed->flags.get(vu::message_flags::type), vu::message_type::reply);
    EXPECT_TRUE(vu::parse_message_header(payload_of(request)));

    vu::message_header other_type = request;
    other_type.flags.set(vu::message_flags::type, static_cast<vu::message_type>(2));
    EXPECT_EQ(vu::parse_message_header(payload_of(other_type)).error(), einval);
    vu::message_header short_size = request;
    short_size.message_size = 15;
    EXPECT_EQ(vu::parse_message_header(payload_of(short_size)).error(), einval);
    vu::message_header huge = reply_to(request, 0);
    huge.message_size = 0xFFFFFFFF;
    EXPECT_EQ(vu::parse_message_header(payload_of(huge)).error(), e2big);
}

TEST(vfio_user_protocol, is_reply_to_matches_type_message_id_and_command)
{
    const auto request = request_header(vu::command::dma_write, 40, 16);
    EXPECT_TRUE(vu::is_reply_to(reply_to(request, 0), request));
    EXPECT_TRUE(vu::is_reply_to(error_reply_to(request, 14), request));
    EXPECT_FALSE(vu::is_reply_to(request, request)); // a command, not a reply
    auto other_id = reply_to(request, 0);
    other_id.message_id = 41;
    EXPECT_FALSE(vu::is_reply_to(other_id, request));
    auto other_command = reply_to(request, 0);
    other_command.command_code = vu::command::dma_read;
    EXPECT_FALSE(vu::is_reply_to(other_command, request));
}

TEST(vfio_user_protocol, dma_read_reply_gives_the_data_read)
{
    const vu::dma_access asked{0x8000'1000, 4};
    const auto request = request_header(vu::command::dma_read, 5, sizeof asked);
    const std::array data{std::byte{1}, std::byte{2}, std::byte{3}, std::byte{4}};
    const auto payload = dma_read_reply_payload(asked, data);
    const auto read = vu::decode_dma_read_reply(reply_to(request, payload.size()), payload, 0, asked);
    ASSERT_TRUE(read);
    ASSERT_EQ(read->size(), 4U);
    EXPECT_EQ((*read)[0], std::byte{1});
    EXPECT_EQ((*read)[3], std::byte{4});
    EXPECT_EQ(read->data(), payload.data() + 16); // a view into the payload
}

TEST(vfio_user_protocol, dma_read_reply_that_does_not_match_its_request_is_refused)
{
    const vu::dma_access asked{0x8000'1000, 4};
    const auto request = request_header(vu::command::dma_read, 5, sizeof asked);
    const std::array data{std::byte{1}, std::byte{2}, std::byte{3}, std::byte{4}};
    const auto good = dma_read_reply_payload(asked, data);
    const auto header = reply_to(request, good.size());
    EXPECT_EQ(vu::decode_dma_read_reply(header, good, 1, asked).error(), einval); // a descriptor
    EXPECT_EQ(vu::decode_dma_read_reply(header, truncated(good, 19), 0, asked).error(), einval);
    EXPECT_EQ(vu::decode_dma_read_reply(header, with_tail(good, 1), 0, asked).error(), einval);
    EXPECT_EQ(vu::decode_dma_read_reply(header, truncated(good, 8), 0, asked).error(), einval);
    EXPECT_EQ(vu::decode_dma_read_reply(header, std::span<const std::byte>{}, 0, asked).error(), einval);
    const auto other_address = dma_read_reply_payload({0x8000'2000, 4}, data);
    EXPECT_EQ(vu::decode_dma_read_reply(header, other_address, 0, asked).error(), einval);
    const std::array three{std::byte{1}, std::byte{2}, std::byte{3}};
    const auto other_count = dma_read_reply_payload({0x8000'1000, 3}, three);
    EXPECT_EQ(vu::decode_dma_read_reply(header, other_count, 0, asked).error(), einval);
}

TEST(vfio_user_protocol, an_error_reply_to_a_dma_request_gives_its_errno_or_eio)
{
    const vu::dma_access asked{0x8000'0000, 8};
    const auto read = request_header(vu::command::dma_read, 9, sizeof asked);
    EXPECT_EQ(vu::decode_dma_read_reply(error_reply_to(read, EFAULT), {}, 0, asked).error(),
              std::errc::bad_address);
    EXPECT_EQ(vu::decode_dma_read_reply(error_reply_to(read, 0), {}, 0, asked).error(), std::errc::io_error);
    const auto write = request_header(vu::command::dma_write, 10, sizeof asked + 8);
    EXPECT_EQ(vu::check_dma_write_reply(error_reply_to(write, EPERM), {}, 0, asked),
              std::errc::operation_not_permitted);
    EXPECT_EQ(vu::check_dma_write_reply(error_reply_to(write, 0), {}, 0, asked), std::errc::io_error);
}

TEST(vfio_user_protocol, dma_write_reply_is_empty_or_echoes_the_request)
{
    const vu::dma_access written{0x8000'0000, 0x1000};
    const auto request = request_header(vu::command::dma_write, 12, sizeof written + 0x1000);
    // QEMU's client answers with the header alone; libvfio-user expects address and count back.
    EXPECT_EQ(vu::check_dma_write_reply(reply_to(request, 0), {}, 0, written), std::errc{});
    EXPECT_EQ(vu::check_dma_write_reply(reply_to(request, 16), payload_of(written), 0, written), std::errc{});
    // The specification's reply table gives the count 4 bytes.
    auto short_echo = payload_of(written.address);
    const auto count32 = payload_of(std::uint32_t{0x1000});
    short_echo.insert(short_echo.end(), count32.begin(), count32.end());
    EXPECT_EQ(vu::check_dma_write_reply(reply_to(request, 12), short_echo, 0, written), std::errc{});

    EXPECT_EQ(vu::check_dma_write_reply(reply_to(request, 0), {}, 1, written), einval);
    EXPECT_EQ(vu::check_dma_write_reply(reply_to(request, 8), payload_of(written.address), 0, written),
              einval);
    EXPECT_EQ(vu::check_dma_write_reply(reply_to(request, 17), with_tail(payload_of(written), 1), 0, written),
              einval);
    const vu::dma_access elsewhere{0x8000'1000, 0x1000};
    EXPECT_EQ(vu::check_dma_write_reply(reply_to(request, 16), payload_of(elsewhere), 0, written), einval);
    const vu::dma_access shorter{0x8000'0000, 0x800};
    EXPECT_EQ(vu::check_dma_write_reply(reply_to(request, 16), payload_of(shorter), 0, written), einval);
}
