#include <nvmekit/storage/nvm_namespace.hpp>

#include <cstdint>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <nvmekit/backends/null_backend.hpp>

namespace {
namespace nvm_namespace_test {

namespace spec = nvmekit::spec;
using ns_type = nvmekit::nvm_namespace<nvmekit::null_backend>;

nvmekit::namespace_identifiers ids()
{
    nvmekit::namespace_identifiers result{};
    result.nguid[0] = 0x11;
    result.eui64[7] = 0x22;
    result.uuid[15] = 0x33;
    return result;
}

TEST(nvm_namespace, block_count_and_layout_follow_the_format)
{
    ns_type ns{7, nvmekit::null_backend{1 << 20}, ids(), {.lba_format = 1}}; // 512 + 8
    EXPECT_EQ(ns.nsid(), 7U);
    EXPECT_EQ(ns.block_bytes(), 512U);
    EXPECT_EQ(ns.metadata_bytes(), 8U);
    EXPECT_EQ(ns.block_count(), (1U << 20) / 520U);
    EXPECT_FALSE(ns.extended_metadata());
    EXPECT_EQ(ns.data_transfer_bytes(4), 2048U);
    EXPECT_EQ(ns.metadata_transfer_bytes(4), 32U);
    EXPECT_EQ(ns.data_offset(3), 1536U);
    EXPECT_EQ(ns.metadata_offset(3), ns.block_count() * 512U + 24U);
    ns.set_format(1, true);
    EXPECT_TRUE(ns.extended_metadata());
    EXPECT_EQ(ns.data_transfer_bytes(4), 4U * 520U);
    EXPECT_EQ(ns.metadata_transfer_bytes(4), 0U);
    EXPECT_EQ(ns.data_offset(3), 3U * 520U);
    ns.set_format(2, true); // no metadata: extended means nothing
    EXPECT_FALSE(ns.extended_metadata());
    EXPECT_EQ(ns.block_count(), 256U);
}

TEST(nvm_namespace, contains_checks_without_overflow)
{
    ns_type ns{1, nvmekit::null_backend{4096 * 10}, ids(), {.lba_format = 2}};
    EXPECT_TRUE(ns.contains(0, 10));
    EXPECT_TRUE(ns.contains(10, 0));
    EXPECT_FALSE(ns.contains(9, 2));
    EXPECT_FALSE(ns.contains(11, 0));
    EXPECT_FALSE(ns.contains(~std::uint64_t{0}, 2));
}

TEST(nvm_namespace, uncorrectable_ranges_merge_split_and_clear)
{
    ns_type ns{1, nvmekit::null_backend{1 << 20}, ids()};
    EXPECT_TRUE(ns.mark_uncorrectable(10, 5)); // [10, 15)
    EXPECT_TRUE(ns.mark_uncorrectable(15, 5)); // touches: [10, 20)
    EXPECT_EQ(ns.uncorrectable_ranges(), 1U);
    EXPECT_EQ(ns.first_uncorrectable(0, 10), std::nullopt);
    EXPECT_EQ(ns.first_uncorrectable(0, 11), 10U);
    EXPECT_EQ(ns.first_uncorrectable(19, 5), 19U);
    EXPECT_EQ(ns.first_uncorrectable(20, 5), std::nullopt);
    EXPECT_TRUE(ns.clear_uncorrectable(12, 3)); // [10, 12) and [15, 20)
    EXPECT_EQ(ns.uncorrectable_ranges(), 2U);
    EXPECT_EQ(ns.first_uncorrectable(12, 3), std::nullopt);
    EXPECT_EQ(ns.first_uncorrectable(12, 4), 15U);
    EXPECT_TRUE(ns.clear_uncorrectable(0, 100));
    EXPECT_EQ(ns.uncorrectable_ranges(), 0U);
    ns.set_format(0, false);
    EXPECT_EQ(ns.uncorrectable_ranges(), 0U);
}

TEST(nvm_namespace, uncorrectable_table_is_bounded)
{
    ns_type ns{1, nvmekit::null_backend{1 << 20}, ids(), {.max_uncorrectable_ranges = 2}};
    EXPECT_TRUE(ns.mark_uncorrectable(0, 1));
    EXPECT_TRUE(ns.mark_uncorrectable(30, 5));
    EXPECT_FALSE(ns.mark_uncorrectable(20, 1)); // a third disjoint range does not fit
    EXPECT_EQ(ns.first_uncorrectable(20, 1), std::nullopt);
    EXPECT_TRUE(ns.mark_uncorrectable(1, 1));    // merging with [0, 1) does
    EXPECT_FALSE(ns.clear_uncorrectable(31, 1)); // a split would need a third range
    EXPECT_EQ(ns.first_uncorrectable(31, 1), 31U);
    EXPECT_TRUE(ns.clear_uncorrectable(30, 1)); // trimming an end does not
    EXPECT_EQ(ns.first_uncorrectable(30, 1), std::nullopt);
    EXPECT_EQ(ns.uncorrectable_ranges(), 2U);
}

TEST(nvm_namespace, identify_namespace_reports_format_and_identifiers)
{
    ns_type ns{1, nvmekit::null_backend{1 << 20}, ids(), {.lba_format = 3, .extended_metadata = true}};
    const auto data = ns.identify();
    EXPECT_EQ(data.nsze, (1U << 20) / (4096U + 64U));
    EXPECT_EQ(data.ncap, data.nsze);
    EXPECT_EQ(data.nlbaf, 3U);
    EXPECT_EQ(data.flbas.format_index(), 3U);
    EXPECT_TRUE(data.flbas.get(spec::formatted_lba_size::extended_metadata));
    EXPECT_EQ(data.mc.raw, 0x3U);
    EXPECT_EQ(data.dlfeat.raw, 0x9U); // reads zeroes, Write Zeroes DEAC
    EXPECT_EQ(data.lbaf[0].data_size(), 512U);
    EXPECT_EQ(data.lbaf[1].get(spec::lba_format::ms), 8U);
    EXPECT_EQ(data.lbaf[2].data_size(), 4096U);
    EXPECT_EQ(data.lbaf[3].get(spec::lba_format::ms), 64U);
    EXPECT_EQ(data.lbaf[4].raw, 0U);
    EXPECT_EQ(data.nguid[0], 0x11);
    EXPECT_EQ(data.eui64[7], 0x22);
    EXPECT_EQ(data.nvmcap.low(), 1U << 20);
}

TEST(nvm_namespace, a_format_with_metadata_is_selectable_where_mc_reports_its_placement)
{
    constexpr auto pcie = nvmekit::metadata_placements(false);
    constexpr auto fabric = nvmekit::metadata_placements(true);
    static_assert(nvmekit::lba_format_selectable(1, true, fabric));
    EXPECT_EQ(pcie.raw, 0x3U);   // extended LBA and separate buffer
    EXPECT_EQ(fabric.raw, 0x1U); // extended LBA only
    for (const bool extended : {false, true}) {
        SCOPED_TRACE(extended);
        for (const std::uint8_t with_metadata : {std::uint8_t{1}, std::uint8_t{3}}) {
            EXPECT_TRUE(nvmekit::lba_format_selectable(with_metadata, extended, pcie));
            EXPECT_EQ(nvmekit::lba_format_selectable(with_metadata, extended, fabric), extended);
        }
        // No metadata: nothing to place.
        for (const std::uint8_t without_metadata : {std::uint8_t{0}, std::uint8_t{2}}) {
            EXPECT_TRUE(nvmekit::lba_format_selectable(without_metadata, extended, fabric));
            EXPECT_TRUE(
                nvmekit::lba_format_selectable(without_metadata, extended, spec::metadata_capabilities{}));
        }
        EXPECT_FALSE(nvmekit::lba_format_selectable(4, extended, pcie));
    }
    ns_type ns{1, nvmekit::null_backend{1 << 20}, ids(), {.lba_format = 1, .extended_metadata = true}};
    EXPECT_EQ(ns.identify(fabric).mc.raw, 0x1U);
    EXPECT_EQ(ns.identify(fabric).flbas.raw, 0x11U);
    EXPECT_EQ(ns_type::common_capabilities(fabric).mc.raw, 0x1U);
    EXPECT_EQ(ns_type::common_capabilities().mc.raw, 0x3U);
}

TEST(nvm_namespace, descriptor_list_holds_each_nonzero_identifier_and_the_csi)
{
    ns_type ns{1, nvmekit::null_backend{1 << 20}, ids()};
    const auto list = ns.id_descriptors();
    // EUI64 (type 1, 8 bytes), NGUID (2, 16), UUID (3, 16), CSI (4, 1).
    EXPECT_EQ(list.bytes[0], 1);
    EXPECT_EQ(list.bytes[1], 8);
    EXPECT_EQ(list.bytes[4 + 7], 0x22);
    EXPECT_EQ(list.bytes[12], 2);
    EXPECT_EQ(list.bytes[13], 16);
    EXPECT_EQ(list.bytes[16], 0x11);
    EXPECT_EQ(list.bytes[32], 3);
    EXPECT_EQ(list.bytes[33], 16);
    EXPECT_EQ(list.bytes[36 + 15], 0x33);
    EXPECT_EQ(list.bytes[52], 4);
    EXPECT_EQ(list.bytes[53], 1);
    EXPECT_EQ(list.bytes[56], 0); // NVM command set
    EXPECT_EQ(list.bytes[57], 0); // end of the list

    ns_type anonymous{2, nvmekit::null_backend{1 << 20}, {}};
    const auto only_csi = anonymous.id_descriptors();
    EXPECT_EQ(only_csi.bytes[0], 4);
    EXPECT_EQ(only_csi.bytes[5], 0);
}

TEST(nvm_namespace, attachment_is_recorded_once_per_controller)
{
    ns_type ns{1, nvmekit::null_backend{1 << 20}, ids()};
    EXPECT_TRUE(ns.attach(1));
    EXPECT_FALSE(ns.attach(1));
    EXPECT_TRUE(ns.attach(2));
    EXPECT_TRUE(ns.attached_to(2));
    EXPECT_TRUE(ns.detach(1));
    EXPECT_FALSE(ns.detach(1));
    EXPECT_EQ(ns.attached_controllers().size(), 1U);
}

TEST(nvm_namespace, uncorrectable_ranges_are_visited_clipped_and_counted)
{
    ns_type ns{1, nvmekit::null_backend{1 << 20}, ids()};
    EXPECT_EQ(ns.uncorrectable_generation(), 0U);
    ASSERT_TRUE(ns.mark_uncorrectable(10, 10));
    ASSERT_TRUE(ns.mark_uncorrectable(40, 5));
    EXPECT_EQ(ns.uncorrectable_generation(), 2U);
    EXPECT_EQ(ns.uncorrectable_blocks(), 15U);
    std::vector<std::pair<std::uint64_t, std::uint64_t>> seen;
    ns.for_each_uncorrectable(15, 42,
                              [&](std::uint64_t first, std::uint64_t end) { seen.emplace_back(first, end); });
    EXPECT_EQ(seen, (std::vector<std::pair<std::uint64_t, std::uint64_t>>{{15, 20}, {40, 42}}));
    ASSERT_TRUE(ns.clear_uncorrectable(12, 2));
    EXPECT_EQ(ns.uncorrectable_generation(), 3U);
    ns.set_format(0, false);
    EXPECT_EQ(ns.uncorrectable_ranges(), 0U);
    EXPECT_EQ(ns.uncorrectable_generation(), 4U);
}

TEST(nvm_namespace, a_private_namespace_reports_nmic_0_and_common_capabilities_have_no_size)
{
    ns_type ns{1, nvmekit::null_backend{1 << 20}, ids(), {.shared = false}};
    EXPECT_FALSE(ns.shared());
    EXPECT_FALSE(ns.identify().nmic.get(spec::namespace_multipath_caps::shared));
    EXPECT_FALSE(ns.independent_identify().nmic.get(spec::namespace_multipath_caps::shared));
    const auto common = ns_type::common_capabilities();
    EXPECT_EQ(common.nsze, 0U);
    EXPECT_EQ(common.nlbaf, 3U);
    EXPECT_EQ(common.lbaf[0].data_size(), 512U);
}

} // namespace nvm_namespace_test
} // namespace
