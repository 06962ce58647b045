#include <nvmekit/transport/vfio_user/protocol/encode.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <system_error>
#include <utility>

#include <gtest/gtest.h>

#include <nvmekit/transport/vfio_user/protocol/decode.hpp>

#include "transport/vfio_user/protocol/protocol_test_support.hpp"

namespace vu = nvmekit::transport::vfio_user;
using nvmekit_test::command_header;
using nvmekit_test::e2big;
using nvmekit_test::einval;
using nvmekit_test::enotsup;
using nvmekit_test::le_in;
using nvmekit_test::payload_of;
using nvmekit_test::qemu_capabilities;
using nvmekit_test::region_sizes;
using nvmekit_test::version_json;

TEST(vfio_user_protocol, version_reply_names_the_servers_values_for_the_proposed_members)
{
    const auto request = vu::decode_version(version_json(qemu_capabilities), 0);
    ASSERT_TRUE(request);
    const auto header = command_header(vu::command::version,
                                       static_cast<std::uint32_t>(16 + 4 + qemu_capabilities.size() + 1), 9);
    std::array<std::byte, vu::version_reply_capacity> out{};
    const vu::protocol_limits limits{};
    const std::size_t size = vu::encode_version_reply(header, *vu::negotiate_version(*request),
                                                      request->capabilities, limits, out);

    const std::string_view expected_json =
        R"({"capabilities":{"max_msg_fds":16,"max_data_xfer_size":1048576,"pgsizes":4096,"max_dma_maps":65535}})";
    ASSERT_EQ(size, 16 + 4 + expected_json.size() + 1);
    EXPECT_LE(size, header.message_size); // QEMU sizes its reply buffer to its own request
    EXPECT_EQ(le_in<std::uint16_t>(out, 0), 9U);
    EXPECT_EQ(le_in<std::uint16_t>(out, 2), 1U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 4), size);
    EXPECT_EQ(le_in<std::uint32_t>(out, 8), 1U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 12), 0U);
    EXPECT_EQ(le_in<std::uint16_t>(out, 16), 0U);
    EXPECT_EQ(le_in<std::uint16_t>(out, 18), 0U);
    EXPECT_EQ(std::string_view(reinterpret_cast<const char*>(out.data() + 20), expected_json.size()),
              expected_json);
    EXPECT_EQ(out[size - 1], std::byte{0});

    const auto reparsed = vu::decode_version(std::span{out}.subspan(16, size - 16), 0);
    ASSERT_TRUE(reparsed);
    EXPECT_EQ(reparsed->capabilities.max_msg_fds, 16U);
    EXPECT_FALSE(reparsed->capabilities.write_multiple);
    EXPECT_FALSE(reparsed->capabilities.migration);
}

TEST(vfio_user_protocol, version_reply_omits_members_the_client_did_not_propose)
{
    const auto request =
        vu::decode_version(version_json(R"({"capabilities":{"max_data_xfer_size":4096}})"), 0);
    ASSERT_TRUE(request);
    vu::protocol_limits limits{};
    limits.max_data_xfer_size = 65536;
    std::array<std::byte, vu::version_reply_capacity> out{};
    const std::size_t size = vu::encode_version_reply(command_header(vu::command::version, 64), {0, 0},
                                                      request->capabilities, limits, out);
    const std::string_view expected_json = R"({"capabilities":{"max_data_xfer_size":65536}})";
    ASSERT_EQ(size, 20 + expected_json.size() + 1);
    EXPECT_EQ(std::string_view(reinterpret_cast<const char*>(out.data() + 20), expected_json.size()),
              expected_json);

    std::array<char, vu::max_version_reply_json> json{};
    EXPECT_EQ(std::string_view(json.data(), vu::write_capabilities_json({}, limits, json)),
              R"({"capabilities":{}})");
    vu::client_capabilities all{};
    all.has_max_msg_fds = all.has_max_data_xfer_size = all.has_pgsizes = all.has_max_dma_maps = true;
    limits.max_msg_fds = 0xFFFFFFFF;
    limits.max_data_xfer_size = 0xFFFFFFFF;
    limits.max_dma_maps = 0xFFFFFFFF;
    limits.dma_page_size = 0xFFFFFFFFFFFFFFFF;
    EXPECT_EQ(std::string_view(json.data(), vu::write_capabilities_json(all, limits, json)),
              R"({"capabilities":{"max_msg_fds":4294967295,"max_data_xfer_size":4294967295,)"
              R"("pgsizes":18446744073709551615,"max_dma_maps":4294967295}})");
}

TEST(vfio_user_protocol, dma_unmap_round_trip_and_reply_echoes_the_request)
{
    const vu::dma_unmap sent{24, vu::dma_unmap_flags{0}, 0xC0000000, 0x40000000};
    const auto unmap = vu::decode_dma_unmap(payload_of(sent), 0);
    ASSERT_TRUE(unmap);
    EXPECT_EQ(unmap->address, 0xC0000000U);
    EXPECT_EQ(unmap->size, 0x40000000U);

    std::array<std::byte, 40> out{};
    ASSERT_EQ(vu::encode_reply(command_header(vu::command::dma_unmap, 40, 11), *unmap, out), 40U);
    EXPECT_EQ(le_in<std::uint16_t>(out, 0), 11U);
    EXPECT_EQ(le_in<std::uint16_t>(out, 2), 3U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 4), 40U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 8), 1U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 16), 24U);
    EXPECT_EQ(le_in<std::uint64_t>(out, 24), 0xC0000000U);
    EXPECT_EQ(le_in<std::uint64_t>(out, 32), 0x40000000U);

    const auto all = vu::decode_dma_unmap(payload_of(vu::dma_unmap{24, vu::dma_unmap_flags{2}, 0, 0}), 0);
    ASSERT_TRUE(all);
    EXPECT_TRUE(all->flags.get(vu::dma_unmap_flags::all));
    EXPECT_TRUE(
        vu::decode_dma_unmap(payload_of(vu::dma_unmap{64, vu::dma_unmap_flags{0}, 0x1000, 0x1000}), 0));
}

TEST(vfio_user_protocol, device_get_info_round_trip)
{
    const auto request = vu::decode_device_get_info(payload_of(vu::device_info{16, {}, 0, 0}), 0);
    ASSERT_TRUE(request);
    EXPECT_EQ(request->argsz, 16U);
    EXPECT_TRUE(vu::decode_device_get_info(payload_of(vu::device_info{24, {}, 0, 0}), 0));

    vu::device_info reply{16, {}, vu::pci_num_regions, vu::pci_num_irqs};
    reply.flags.set(vu::device_info_flags::reset, true).set(vu::device_info_flags::pci, true);
    std::array<std::byte, 32> out{};
    ASSERT_EQ(vu::encode_reply(command_header(vu::command::device_get_info, 32, 4), reply, out), 32U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 4), 32U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 16), 16U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 20), 3U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 24), 9U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 28), 5U);
}

TEST(vfio_user_protocol, region_info_reply_without_capabilities)
{
    vu::region_info info{};
    info.index = 7;
    info.size = 0x1000;
    info.flags.set(vu::region_info_flags::read, true).set(vu::region_info_flags::write, true);
    std::array<std::byte, 128> out{};
    ASSERT_EQ(vu::encode_region_info_reply(command_header(vu::command::device_get_region_info, 48), 32, info,
                                           {}, out),
              48U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 4), 48U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 16), 32U); // argsz
    EXPECT_EQ(le_in<std::uint32_t>(out, 20), 3U);  // read | write
    EXPECT_EQ(le_in<std::uint32_t>(out, 24), 7U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 28), 0U); // cap_offset
    EXPECT_EQ(le_in<std::uint64_t>(out, 32), 0x1000U);
    EXPECT_EQ(le_in<std::uint64_t>(out, 40), 0U);
}

TEST(vfio_user_protocol, region_info_reply_asks_for_a_larger_argsz_before_sending_capabilities)
{
    vu::region_info info{};
    info.index = 0;
    info.size = 0x4000;
    info.offset = 0x10000;
    info.flags.set(vu::region_info_flags::read, true)
        .set(vu::region_info_flags::write, true)
        .set(vu::region_info_flags::mmap, true);
    const std::array<vu::sparse_mmap_area, 2> areas{{{0x1000, 0x1000}, {0x3000, 0x1000}}};
    EXPECT_EQ(vu::region_info_full_size(2), 80U);
    EXPECT_EQ(vu::region_info_full_size(0), 32U);

    std::array<std::byte, 128> out{};
    ASSERT_EQ(vu::encode_region_info_reply(command_header(vu::command::device_get_region_info, 48), 79, info,
                                           areas, out),
              48U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 16), 80U);  // argsz: the size needed
    EXPECT_EQ(le_in<std::uint32_t>(out, 20), 0x7U); // Caps clear: no capability in this reply
    EXPECT_EQ(le_in<std::uint32_t>(out, 28), 0U);

    out.fill(std::byte{0xEE});
    ASSERT_EQ(vu::encode_region_info_reply(command_header(vu::command::device_get_region_info, 48, 2), 80,
                                           info, areas, out),
              96U);
    EXPECT_EQ(le_in<std::uint16_t>(out, 0), 2U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 4), 96U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 8), 1U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 16), 80U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 20), 0xFU);
    EXPECT_EQ(le_in<std::uint32_t>(out, 24), 0U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 28), 32U); // cap_offset
    EXPECT_EQ(le_in<std::uint64_t>(out, 32), 0x4000U);
    EXPECT_EQ(le_in<std::uint64_t>(out, 40), 0x10000U);
    const std::size_t cap = 16 + 32;
    EXPECT_EQ(le_in<std::uint16_t>(out, cap + 0), 1U); // VFIO_REGION_INFO_CAP_SPARSE_MMAP
    EXPECT_EQ(le_in<std::uint16_t>(out, cap + 2), 1U);
    EXPECT_EQ(le_in<std::uint32_t>(out, cap + 4), 0U);
    EXPECT_EQ(le_in<std::uint32_t>(out, cap + 8), 2U);
    EXPECT_EQ(le_in<std::uint32_t>(out, cap + 12), 0U);
    EXPECT_EQ(le_in<std::uint64_t>(out, cap + 16), 0x1000U);
    EXPECT_EQ(le_in<std::uint64_t>(out, cap + 24), 0x1000U);
    EXPECT_EQ(le_in<std::uint64_t>(out, cap + 32), 0x3000U);
    EXPECT_EQ(le_in<std::uint64_t>(out, cap + 40), 0x1000U);
    EXPECT_EQ(out[96], std::byte{0xEE});
}

TEST(vfio_user_protocol, irq_info_round_trip)
{
    const auto request = vu::decode_irq_info(payload_of(vu::irq_info{16, {}, 2, 0}), 0, vu::pci_num_irqs);
    ASSERT_TRUE(request);
    EXPECT_EQ(request->index, 2U);
    vu::irq_info reply{16, {}, 2, 64};
    reply.flags.set(vu::irq_info_flags::eventfd, true).set(vu::irq_info_flags::noresize, true);
    std::array<std::byte, 32> out{};
    ASSERT_EQ(vu::encode_reply(command_header(vu::command::device_get_irq_info, 32), reply, out), 32U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 20), 9U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 24), 2U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 28), 64U);
}

TEST(vfio_user_protocol, region_read_round_trip_and_reply_layout)
{
    const auto read = vu::decode_region_read(payload_of(vu::region_access{0x1C, 0, 4}), 0, region_sizes);
    ASSERT_TRUE(read);
    EXPECT_EQ(read->offset, 0x1CU);
    EXPECT_EQ(read->region, 0U);
    EXPECT_EQ(read->count, 4U);
    EXPECT_TRUE(vu::decode_region_read(payload_of(vu::region_access{0, 7, 0x1000}), 0, region_sizes));
    EXPECT_TRUE(vu::decode_region_read(payload_of(vu::region_access{0x3FF8, 0, 8}), 0, region_sizes));

    const std::array<std::byte, 4> data{std::byte{0x11}, std::byte{0x22}, std::byte{0x33}, std::byte{0x44}};
    std::array<std::byte, 36> out{};
    ASSERT_EQ(vu::encode_region_read_reply(command_header(vu::command::region_read, 32, 5), *read, data, out),
              36U);
    EXPECT_EQ(le_in<std::uint16_t>(out, 0), 5U);
    EXPECT_EQ(le_in<std::uint16_t>(out, 2), 9U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 4), 36U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 8), 1U);
    EXPECT_EQ(le_in<std::uint64_t>(out, 16), 0x1CU);
    EXPECT_EQ(le_in<std::uint32_t>(out, 24), 0U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 28), 4U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 32), 0x44332211U);
}

TEST(vfio_user_protocol, region_write_round_trip_and_reply_echoes_the_access)
{
    auto payload = payload_of(vu::region_access{0x14, 0, 4});
    payload.push_back(std::byte{0x01});
    payload.push_back(std::byte{0x00});
    payload.push_back(std::byte{0x46});
    payload.push_back(std::byte{0x00});
    const auto write = vu::decode_region_write(payload, 0, region_sizes);
    ASSERT_TRUE(write);
    EXPECT_EQ(write->access.offset, 0x14U);
    EXPECT_EQ(write->access.count, 4U);
    ASSERT_EQ(write->data.size(), 4U);
    EXPECT_EQ(write->data.data(), payload.data() + 16);
    EXPECT_EQ(write->data[2], std::byte{0x46});

    std::array<std::byte, 32> out{};
    ASSERT_EQ(vu::encode_reply(command_header(vu::command::region_write, 36, 6), write->access, out), 32U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 4), 32U);
    EXPECT_EQ(le_in<std::uint64_t>(out, 16), 0x14U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 24), 0U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 28), 4U);
}

TEST(vfio_user_protocol, replies_without_payload_and_error_replies)
{
    std::array<std::byte, 16> out{};
    auto request = command_header(vu::command::dma_map, 48, 0x4321);
    request.flags.set(vu::message_flags::no_reply, true);
    ASSERT_EQ(vu::encode_reply(request, std::span<const std::byte>{}, out), 16U);
    EXPECT_EQ(le_in<std::uint16_t>(out, 0), 0x4321U);
    EXPECT_EQ(le_in<std::uint16_t>(out, 2), 2U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 4), 16U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 8), 1U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 12), 0U);

    for (const auto& [error, value] :
         {std::pair{einval, 22U}, std::pair{enotsup, 95U}, std::pair{e2big, 7U}}) {
        out.fill(std::byte{0xFF});
        ASSERT_EQ(vu::encode_error_reply(command_header(vu::command::device_feature, 24, 8), error, out),
                  16U);
        EXPECT_EQ(le_in<std::uint16_t>(out, 0), 8U);
        EXPECT_EQ(le_in<std::uint16_t>(out, 2), 16U);
        EXPECT_EQ(le_in<std::uint32_t>(out, 4), 16U);
        EXPECT_EQ(le_in<std::uint32_t>(out, 8), 0x21U);
        EXPECT_EQ(le_in<std::uint32_t>(out, 12), value);
    }

    const auto header = vu::make_reply_header(command_header(vu::command::region_read, 32, 1), 20);
    EXPECT_EQ(header.message_size, 36U);
    EXPECT_EQ(header.flags.get(vu::message_flags::type), vu::message_type::reply);
    EXPECT_FALSE(header.flags.get(vu::message_flags::no_reply));
    EXPECT_FALSE(header.flags.get(vu::message_flags::error));
}

TEST(vfio_user_protocol, dma_read_request_asks_for_an_address_and_a_count)
{
    std::array<std::byte, 32> out{};
    ASSERT_EQ(vu::encode_dma_read_request(0x1234, {0x7000'0000, 4096}, out), 32U);
    EXPECT_EQ(le_in<std::uint16_t>(out, 0), 0x1234U);
    EXPECT_EQ(le_in<std::uint16_t>(out, 2), 11U); // VFIO_USER_DMA_READ
    EXPECT_EQ(le_in<std::uint32_t>(out, 4), 32U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 8), 0U); // Command, a reply wanted
    EXPECT_EQ(le_in<std::uint32_t>(out, 12), 0U);
    EXPECT_EQ(le_in<std::uint64_t>(out, 16), 0x7000'0000U);
    EXPECT_EQ(le_in<std::uint64_t>(out, 24), 4096U);

    const auto header = vu::parse_header(out);
    ASSERT_TRUE(header);
    EXPECT_EQ(header->command_code, vu::command::dma_read);
}

TEST(vfio_user_protocol, dma_write_request_carries_its_data_after_the_address_and_count)
{
    const std::array data{std::byte{0xA1}, std::byte{0xB2}, std::byte{0xC3}};
    std::array<std::byte, 40> out{};
    ASSERT_EQ(vu::encode_dma_write_request(7, 0x7000'0010, data, out), 35U);
    EXPECT_EQ(le_in<std::uint16_t>(out, 0), 7U);
    EXPECT_EQ(le_in<std::uint16_t>(out, 2), 12U); // VFIO_USER_DMA_WRITE
    EXPECT_EQ(le_in<std::uint32_t>(out, 4), 35U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 8), 0U);
    EXPECT_EQ(le_in<std::uint64_t>(out, 16), 0x7000'0010U);
    EXPECT_EQ(le_in<std::uint64_t>(out, 24), 3U);
    EXPECT_EQ(out[32], std::byte{0xA1});
    EXPECT_EQ(out[34], std::byte{0xC3});

    const auto header = vu::make_request_header(vu::command::dma_write, 7, 19);
    EXPECT_EQ(header.message_size, 35U);
    EXPECT_EQ(header.flags.get(vu::message_flags::type), vu::message_type::command);
    EXPECT_FALSE(header.flags.get(vu::message_flags::no_reply));
}
