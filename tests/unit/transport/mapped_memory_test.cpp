#include <nvmekit/transport/mapped_memory.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include <nvmekit/dma.hpp>

namespace {

using nvmekit::transport::mapped_memory;

static_assert(nvmekit::MappingDmaProvider<mapped_memory>);

struct two_regions : ::testing::Test {
    std::vector<std::byte> low = std::vector<std::byte>(4096, std::byte{0x11});
    std::vector<std::byte> high = std::vector<std::byte>(8192, std::byte{0x22});
    mapped_memory memory;
    void SetUp() override
    {
        ASSERT_TRUE(memory.add(0x1000, low.data(), low.size(), true));
        ASSERT_TRUE(memory.add(0x10000, high.data(), high.size(), false));
    }
};

TEST_F(two_regions, reads_and_writes_inside_one_region)
{
    std::array<std::byte, 8> buffer{};
    ASSERT_FALSE(memory.read(0x1ff8, buffer));
    EXPECT_EQ(buffer[0], std::byte{0x11});
    buffer.fill(std::byte{0x77});
    ASSERT_FALSE(memory.write(0x1000, buffer));
    EXPECT_EQ(low[0], std::byte{0x77});
    EXPECT_EQ(low[7], std::byte{0x77});
    EXPECT_EQ(low[8], std::byte{0x11});
    ASSERT_FALSE(memory.read(0x11ff8, buffer));
    EXPECT_EQ(buffer[7], std::byte{0x22});
}

TEST_F(two_regions, accesses_outside_or_across_regions_are_unmapped)
{
    std::array<std::byte, 16> buffer{};
    EXPECT_EQ(memory.read(0x0, buffer), nvmekit::make_error_code(nvmekit::errc::dma_unmapped));
    EXPECT_EQ(memory.read(0x1ff8, buffer), nvmekit::make_error_code(nvmekit::errc::dma_unmapped)); // runs past the end
    EXPECT_EQ(memory.read(0x2000, buffer), nvmekit::make_error_code(nvmekit::errc::dma_unmapped));
    EXPECT_EQ(memory.write(0xfff8, buffer), nvmekit::make_error_code(nvmekit::errc::dma_unmapped));
    EXPECT_EQ(memory.read(~std::uint64_t{0} - 4, buffer), nvmekit::make_error_code(nvmekit::errc::dma_unmapped));
    EXPECT_TRUE(memory.map(0x1ff8, 16).empty());
}

TEST_F(two_regions, read_only_regions_refuse_writes_and_maps)
{
    std::array<std::byte, 4> buffer{};
    EXPECT_EQ(memory.write(0x10000, buffer), nvmekit::make_error_code(nvmekit::errc::dma_fault));
    EXPECT_EQ(high[0], std::byte{0x22});
    EXPECT_TRUE(memory.map(0x10000, 4).empty());
    EXPECT_FALSE(memory.read(0x10000, buffer));
}

TEST_F(two_regions, map_gives_the_bytes_in_place)
{
    const auto view = memory.map(0x1800, 16);
    ASSERT_EQ(view.size(), 16U);
    EXPECT_EQ(view.data(), low.data() + 0x800);
}

TEST_F(two_regions, overlapping_or_empty_regions_are_refused)
{
    std::vector<std::byte> other(4096);
    EXPECT_FALSE(memory.add(0x1800, other.data(), 4096, true));
    EXPECT_FALSE(memory.add(0x0, other.data(), 0x1001, true));
    EXPECT_FALSE(memory.add(0x5000, other.data(), 0, true));
    EXPECT_FALSE(memory.add(~std::uint64_t{0}, other.data(), 2, true));
    EXPECT_TRUE(memory.add(0x2000, other.data(), 4096, true)); // adjacent is fine
    EXPECT_EQ(memory.regions().size(), 3U);
}

TEST_F(two_regions, a_removed_region_is_unmapped_at_once)
{
    std::array<std::byte, 4> buffer{};
    ASSERT_FALSE(memory.read(0x1000, buffer)); // caches the region
    EXPECT_FALSE(memory.remove(0x1000, 100));  // not that size
    EXPECT_TRUE(memory.remove(0x1000, 4096));
    EXPECT_EQ(memory.read(0x1000, buffer), nvmekit::make_error_code(nvmekit::errc::dma_unmapped));
    memory.clear();
    EXPECT_EQ(memory.read(0x10000, buffer), nvmekit::make_error_code(nvmekit::errc::dma_unmapped));
}

} // namespace
