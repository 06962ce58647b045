#include <nvmekit/transport/vfio_user/protocol/wire.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>

#include <gtest/gtest.h>

#include "wire_bytes.hpp"

namespace vu = nvmekit::transport::vfio_user;
using nvmekit_test::bytes_of;
using nvmekit_test::le_at;

TEST(vfio_user_protocol, command_ids_and_names_follow_the_specification)
{
    using enum vu::command;
    const std::array<std::pair<vu::command, std::string_view>, 18> table{{
        {version, "VFIO_USER_VERSION"},
        {dma_map, "VFIO_USER_DMA_MAP"},
        {dma_unmap, "VFIO_USER_DMA_UNMAP"},
        {device_get_info, "VFIO_USER_DEVICE_GET_INFO"},
        {device_get_region_info, "VFIO_USER_DEVICE_GET_REGION_INFO"},
        {device_get_region_io_fds, "VFIO_USER_DEVICE_GET_REGION_IO_FDS"},
        {device_get_irq_info, "VFIO_USER_DEVICE_GET_IRQ_INFO"},
        {device_set_irqs, "VFIO_USER_DEVICE_SET_IRQS"},
        {region_read, "VFIO_USER_REGION_READ"},
        {region_write, "VFIO_USER_REGION_WRITE"},
        {dma_read, "VFIO_USER_DMA_READ"},
        {dma_write, "VFIO_USER_DMA_WRITE"},
        {device_reset, "VFIO_USER_DEVICE_RESET"},
        {dirty_pages, "VFIO_USER_DIRTY_PAGES"},
        {region_write_multi, "VFIO_USER_REGION_WRITE_MULTI"},
        {device_feature, "VFIO_USER_DEVICE_FEATURE"},
        {mig_data_read, "VFIO_USER_MIG_DATA_READ"},
        {mig_data_write, "VFIO_USER_MIG_DATA_WRITE"},
    }};
    for (std::size_t i = 0; i < table.size(); ++i) {
        EXPECT_EQ(static_cast<unsigned>(table[i].first), i + 1);
        EXPECT_EQ(vu::name(table[i].first), table[i].second);
    }
    EXPECT_EQ(vu::name(static_cast<vu::command>(0)), "");
    EXPECT_EQ(vu::name(static_cast<vu::command>(19)), "");
}

TEST(vfio_user_protocol, pci_region_and_irq_indexes_match_linux_vfio)
{
    EXPECT_EQ(static_cast<unsigned>(vu::region_index::bar0), 0U);
    EXPECT_EQ(static_cast<unsigned>(vu::region_index::bar5), 5U);
    EXPECT_EQ(static_cast<unsigned>(vu::region_index::rom), 6U);
    EXPECT_EQ(static_cast<unsigned>(vu::region_index::config), 7U);
    EXPECT_EQ(static_cast<unsigned>(vu::region_index::vga), 8U);
    EXPECT_EQ(vu::pci_num_regions, 9U);
    EXPECT_EQ(static_cast<unsigned>(vu::irq_index::intx), 0U);
    EXPECT_EQ(static_cast<unsigned>(vu::irq_index::msi), 1U);
    EXPECT_EQ(static_cast<unsigned>(vu::irq_index::msix), 2U);
    EXPECT_EQ(static_cast<unsigned>(vu::irq_index::err), 3U);
    EXPECT_EQ(static_cast<unsigned>(vu::irq_index::req), 4U);
    EXPECT_EQ(vu::pci_num_irqs, 5U);
}

TEST(vfio_user_protocol, header_layout_matches_the_specification)
{
    vu::message_header header{};
    header.message_id = 0x1234;
    header.command_code = vu::command::region_write;
    header.message_size = 0x89ABCDEF;
    header.flags.set(vu::message_flags::type, vu::message_type::reply);
    header.flags.set(vu::message_flags::no_reply, true);
    header.flags.set(vu::message_flags::error, true);
    header.error_number = 0x11223344;
    const auto bytes = bytes_of(header);
    EXPECT_EQ(le_at<std::uint16_t>(bytes, 0), 0x1234U);
    EXPECT_EQ(le_at<std::uint16_t>(bytes, 2), 10U);
    EXPECT_EQ(le_at<std::uint32_t>(bytes, 4), 0x89ABCDEFU);
    EXPECT_EQ(le_at<std::uint32_t>(bytes, 8), 0x31U);
    EXPECT_EQ(le_at<std::uint32_t>(bytes, 12), 0x11223344U);

    EXPECT_EQ(vu::message_flags{0x10}.get(vu::message_flags::no_reply), true);
    EXPECT_EQ(vu::message_flags{0x20}.get(vu::message_flags::error), true);
    EXPECT_EQ(vu::message_flags{0x0F}.get(vu::message_flags::type), static_cast<vu::message_type>(0xF));
}

TEST(vfio_user_protocol, payload_layouts_match_the_specification_offsets)
{
    const auto map = bytes_of(vu::dma_map{0x20, vu::dma_map_flags{3}, 0x1111, 0x2222, 0x3333});
    EXPECT_EQ(le_at<std::uint32_t>(map, 0), 0x20U);
    EXPECT_EQ(le_at<std::uint32_t>(map, 4), 3U);
    EXPECT_EQ(le_at<std::uint64_t>(map, 8), 0x1111U);
    EXPECT_EQ(le_at<std::uint64_t>(map, 16), 0x2222U);
    EXPECT_EQ(le_at<std::uint64_t>(map, 24), 0x3333U);

    const auto unmap = bytes_of(vu::dma_unmap{0x18, vu::dma_unmap_flags{2}, 0x4444, 0x5555});
    EXPECT_EQ(le_at<std::uint32_t>(unmap, 0), 0x18U);
    EXPECT_EQ(le_at<std::uint32_t>(unmap, 4), 2U);
    EXPECT_EQ(le_at<std::uint64_t>(unmap, 8), 0x4444U);
    EXPECT_EQ(le_at<std::uint64_t>(unmap, 16), 0x5555U);

    const auto info = bytes_of(vu::device_info{16, vu::device_info_flags{3}, 9, 5});
    EXPECT_EQ(le_at<std::uint32_t>(info, 0), 16U);
    EXPECT_EQ(le_at<std::uint32_t>(info, 4), 3U);
    EXPECT_EQ(le_at<std::uint32_t>(info, 8), 9U);
    EXPECT_EQ(le_at<std::uint32_t>(info, 12), 5U);

    const auto region = bytes_of(vu::region_info{80, vu::region_info_flags{0xF}, 7, 32, 0x6666, 0x7777});
    EXPECT_EQ(le_at<std::uint32_t>(region, 0), 80U);
    EXPECT_EQ(le_at<std::uint32_t>(region, 4), 0xFU);
    EXPECT_EQ(le_at<std::uint32_t>(region, 8), 7U);
    EXPECT_EQ(le_at<std::uint32_t>(region, 12), 32U);
    EXPECT_EQ(le_at<std::uint64_t>(region, 16), 0x6666U);
    EXPECT_EQ(le_at<std::uint64_t>(region, 24), 0x7777U);

    const auto cap = bytes_of(vu::sparse_mmap_cap{{1, 1, 0x40}, 2, 0});
    EXPECT_EQ(le_at<std::uint16_t>(cap, 0), 1U);
    EXPECT_EQ(le_at<std::uint16_t>(cap, 2), 1U);
    EXPECT_EQ(le_at<std::uint32_t>(cap, 4), 0x40U);
    EXPECT_EQ(le_at<std::uint32_t>(cap, 8), 2U);
    const auto area = bytes_of(vu::sparse_mmap_area{0x1000, 0x3000});
    EXPECT_EQ(le_at<std::uint64_t>(area, 0), 0x1000U);
    EXPECT_EQ(le_at<std::uint64_t>(area, 8), 0x3000U);

    const auto irq = bytes_of(vu::irq_info{16, vu::irq_info_flags{0xB}, 2, 64});
    EXPECT_EQ(le_at<std::uint32_t>(irq, 4), 0xBU);
    EXPECT_EQ(le_at<std::uint32_t>(irq, 8), 2U);
    EXPECT_EQ(le_at<std::uint32_t>(irq, 12), 64U);

    const auto set = bytes_of(vu::irq_set{20, vu::irq_set_flags{0x24}, 2, 3, 4});
    EXPECT_EQ(le_at<std::uint32_t>(set, 0), 20U);
    EXPECT_EQ(le_at<std::uint32_t>(set, 4), 0x24U);
    EXPECT_EQ(le_at<std::uint32_t>(set, 8), 2U);
    EXPECT_EQ(le_at<std::uint32_t>(set, 12), 3U);
    EXPECT_EQ(le_at<std::uint32_t>(set, 16), 4U);

    const auto access = bytes_of(vu::region_access{0x8888, 7, 4});
    EXPECT_EQ(le_at<std::uint64_t>(access, 0), 0x8888U);
    EXPECT_EQ(le_at<std::uint32_t>(access, 8), 7U);
    EXPECT_EQ(le_at<std::uint32_t>(access, 12), 4U);

    const auto version = bytes_of(vu::version_payload{0x0102, 0x0304});
    EXPECT_EQ(le_at<std::uint16_t>(version, 0), 0x0102U);
    EXPECT_EQ(le_at<std::uint16_t>(version, 2), 0x0304U);
}

TEST(vfio_user_protocol, flag_bits_match_linux_vfio)
{
    EXPECT_EQ(vu::dma_map_flags{}.with(vu::dma_map_flags::read, true).raw, 0x1U);
    EXPECT_EQ(vu::dma_map_flags{}.with(vu::dma_map_flags::write, true).raw, 0x2U);
    EXPECT_EQ(vu::dma_unmap_flags{}.with(vu::dma_unmap_flags::get_dirty_bitmap, true).raw, 0x1U);
    EXPECT_EQ(vu::dma_unmap_flags{}.with(vu::dma_unmap_flags::all, true).raw, 0x2U);
    EXPECT_EQ(vu::device_info_flags{}.with(vu::device_info_flags::reset, true).raw, 0x1U);
    EXPECT_EQ(vu::device_info_flags{}.with(vu::device_info_flags::pci, true).raw, 0x2U);
    EXPECT_EQ(vu::region_info_flags{}.with(vu::region_info_flags::read, true).raw, 0x1U);
    EXPECT_EQ(vu::region_info_flags{}.with(vu::region_info_flags::write, true).raw, 0x2U);
    EXPECT_EQ(vu::region_info_flags{}.with(vu::region_info_flags::mmap, true).raw, 0x4U);
    EXPECT_EQ(vu::region_info_flags{}.with(vu::region_info_flags::caps, true).raw, 0x8U);
    EXPECT_EQ(vu::irq_info_flags{}.with(vu::irq_info_flags::eventfd, true).raw, 0x1U);
    EXPECT_EQ(vu::irq_info_flags{}.with(vu::irq_info_flags::maskable, true).raw, 0x2U);
    EXPECT_EQ(vu::irq_info_flags{}.with(vu::irq_info_flags::automasked, true).raw, 0x4U);
    EXPECT_EQ(vu::irq_info_flags{}.with(vu::irq_info_flags::noresize, true).raw, 0x8U);
    EXPECT_EQ(vu::irq_set_flags{}.with(vu::irq_set_flags::data_none, true).raw, 0x1U);
    EXPECT_EQ(vu::irq_set_flags{}.with(vu::irq_set_flags::data_bool, true).raw, 0x2U);
    EXPECT_EQ(vu::irq_set_flags{}.with(vu::irq_set_flags::data_eventfd, true).raw, 0x4U);
    EXPECT_EQ(vu::irq_set_flags{}.with(vu::irq_set_flags::action_mask, true).raw, 0x8U);
    EXPECT_EQ(vu::irq_set_flags{}.with(vu::irq_set_flags::action_unmask, true).raw, 0x10U);
    EXPECT_EQ(vu::irq_set_flags{}.with(vu::irq_set_flags::action_trigger, true).raw, 0x20U);
    EXPECT_EQ(vu::region_cap_sparse_mmap, 1U);
    EXPECT_EQ(vu::region_cap_sparse_mmap_version, 1U);
}
