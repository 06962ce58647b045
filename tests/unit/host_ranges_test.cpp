#include <nvmekit/data/host_ranges.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <ostream>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nvmekit/format/status.hpp>

#include "asserts_enabled.hpp"
#include "print_helpers.hpp"
#include "recorded_memory.hpp"

namespace spec = nvmekit::spec;
using nvmekit::host_range;
using nvmekit::host_range_list;
using nvmekit::testing::access_kind;
using namespace nvmekit_test;

namespace {

std::vector<host_range> ranges_of(const host_range_list& list)
{
    return {list.ranges().begin(), list.ranges().end()};
}

std::vector<std::byte> pattern(std::size_t size, std::uint8_t seed)
{
    std::vector<std::byte> bytes(size);
    for (std::size_t i = 0; i < size; ++i) {
        bytes[i] = static_cast<std::byte>(seed + i * 7);
    }
    return bytes;
}

std::vector<std::byte> host_bytes(recorded_memory& host, std::uint64_t address, std::size_t size)
{
    const auto bytes = host.memory.bytes(address, size);
    return {bytes.begin(), bytes.end()};
}

std::vector<std::byte> slice(const std::vector<std::byte>& bytes, std::size_t offset, std::size_t size)
{
    return {bytes.begin() + static_cast<std::ptrdiff_t>(offset),
            bytes.begin() + static_cast<std::ptrdiff_t>(offset + size)};
}

} // namespace

TEST(host_range_list, starts_empty_with_the_capacity_of_its_storage)
{
    std::array<host_range, 3> storage{};
    const host_range_list list{storage};
    EXPECT_EQ(list.size(), 0U);
    EXPECT_TRUE(list.empty());
    EXPECT_EQ(list.capacity(), 3U);
    EXPECT_EQ(list.total_bytes(), 0U);
    EXPECT_TRUE(list.ranges().empty());
}

TEST(host_range_list, push_appends_ranges_in_order_and_counts_their_bytes)
{
    std::array<host_range, 3> storage{};
    host_range_list list{storage};
    EXPECT_TRUE(list.push(0x5000, 0x100));
    EXPECT_TRUE(list.push(0x3000, 0x20));
    EXPECT_EQ(ranges_of(list), (std::vector<host_range>{{0x5000, 0x100, false}, {0x3000, 0x20, false}}));
    EXPECT_EQ(list.size(), 2U);
    EXPECT_FALSE(list.empty());
    EXPECT_EQ(list.total_bytes(), 0x120U);
}

TEST(host_range_list, push_merges_a_range_that_continues_the_previous_one)
{
    std::array<host_range, 3> storage{};
    host_range_list list{storage};
    EXPECT_TRUE(list.push(0x5000, 0x1000));
    EXPECT_TRUE(list.push(0x6000, 0x1000));
    EXPECT_TRUE(list.push(0x7000, 0x10));
    EXPECT_EQ(ranges_of(list), (std::vector<host_range>{{0x5000, 0x2010, false}}));
    EXPECT_EQ(list.total_bytes(), 0x2010U);
}

TEST(host_range_list, push_does_not_merge_a_gap_an_overlap_or_a_range_before)
{
    std::array<host_range, 4> storage{};
    host_range_list list{storage};
    EXPECT_TRUE(list.push(0x5000, 0x100));
    EXPECT_TRUE(list.push(0x5101, 0x10));
    EXPECT_TRUE(list.push(0x5100, 0x10));
    EXPECT_TRUE(list.push(0x50f0, 0x10));
    EXPECT_EQ(
        ranges_of(list),
        (std::vector<host_range>{
            {0x5000, 0x100, false}, {0x5101, 0x10, false}, {0x5100, 0x10, false}, {0x50f0, 0x10, false}}));
}

TEST(host_range_list, bit_buckets_merge_with_each_other_and_never_with_memory)
{
    std::array<host_range, 4> storage{};
    host_range_list list{storage};
    EXPECT_TRUE(list.push(0x5000, 0x100));
    EXPECT_TRUE(list.push(0x5100, 0x20, true));
    EXPECT_TRUE(list.push(0x9999, 0x30, true));
    EXPECT_TRUE(list.push(0x5100, 0x40));
    EXPECT_EQ(ranges_of(list),
              (std::vector<host_range>{{0x5000, 0x100, false}, {0, 0x50, true}, {0x5100, 0x40, false}}));
    EXPECT_EQ(list.total_bytes(), 0x190U);
}

TEST(host_range_list, merge_stops_where_the_length_would_overflow_32_bits)
{
    constexpr std::uint32_t max = std::numeric_limits<std::uint32_t>::max();
    std::array<host_range, 3> storage{};
    host_range_list list{storage};
    EXPECT_TRUE(list.push(0x1'0000'0000, max - 0x10));
    EXPECT_TRUE(list.push(0x1'0000'0000 + max - 0x10, 0x10));
    EXPECT_TRUE(list.push(0x1'0000'0000 + std::uint64_t{max}, 1));
    EXPECT_EQ(ranges_of(list), (std::vector<host_range>{{0x1'0000'0000, max, false},
                                                        {0x1'0000'0000 + std::uint64_t{max}, 1, false}}));
    EXPECT_EQ(list.total_bytes(), std::uint64_t{max} + 1);
}

TEST(host_range_list, a_range_ending_at_the_top_of_the_address_space_does_not_merge_with_address_zero)
{
    std::array<host_range, 2> storage{};
    host_range_list list{storage};
    EXPECT_TRUE(list.push(0xffff'ffff'ffff'ff00, 0x100));
    EXPECT_TRUE(list.push(0, 0x100));
    EXPECT_EQ(ranges_of(list),
              (std::vector<host_range>{{0xffff'ffff'ffff'ff00, 0x100, false}, {0, 0x100, false}}));
}

TEST(host_range_list, zero_length_push_is_ignored_even_when_full)
{
    std::array<host_range, 1> storage{};
    host_range_list list{storage};
    EXPECT_TRUE(list.push(0x1000, 0));
    EXPECT_TRUE(list.empty());
    EXPECT_TRUE(list.push(0x1000, 0x10));
    EXPECT_TRUE(list.push(0x8000, 0));
    EXPECT_TRUE(list.push(0x8000, 0, true));
    EXPECT_EQ(ranges_of(list), (std::vector<host_range>{{0x1000, 0x10, false}}));
}

TEST(host_range_list, push_fails_when_full_and_leaves_the_list_unchanged_but_still_merges)
{
    std::array<host_range, 2> storage{};
    host_range_list list{storage};
    EXPECT_TRUE(list.push(0x1000, 0x10));
    EXPECT_TRUE(list.push(0x3000, 0x10));
    EXPECT_FALSE(list.push(0x5000, 0x10));
    EXPECT_FALSE(list.push(0x3010, 0x10, true));
    EXPECT_EQ(ranges_of(list), (std::vector<host_range>{{0x1000, 0x10, false}, {0x3000, 0x10, false}}));
    EXPECT_EQ(list.total_bytes(), 0x20U);
    EXPECT_TRUE(list.push(0x3010, 0x10));
    EXPECT_EQ(ranges_of(list), (std::vector<host_range>{{0x1000, 0x10, false}, {0x3000, 0x20, false}}));
    EXPECT_EQ(list.total_bytes(), 0x30U);
}

TEST(host_range_list, empty_storage_holds_nothing)
{
    host_range_list list{std::span<host_range>{}};
    EXPECT_EQ(list.capacity(), 0U);
    EXPECT_FALSE(list.push(0x1000, 1));
    EXPECT_TRUE(list.empty());
}

TEST(host_range_list, clear_empties_the_list_and_keeps_the_storage)
{
    std::array<host_range, 2> storage{};
    host_range_list list{storage};
    ASSERT_TRUE(list.push(0x1000, 0x10));
    ASSERT_TRUE(list.push(0x3000, 0x10));
    list.clear();
    EXPECT_TRUE(list.empty());
    EXPECT_EQ(list.total_bytes(), 0U);
    EXPECT_EQ(list.capacity(), 2U);
    EXPECT_TRUE(list.push(0x3010, 0x10));
    EXPECT_EQ(ranges_of(list), (std::vector<host_range>{{0x3010, 0x10, false}}));
}

namespace {

/// Three ranges and a bit bucket in host memory at 0x10000: 0x100 bytes at 0x10800, a 0x40-byte
/// bit bucket, 0x30 bytes at 0x10100, 0x200 bytes at 0x10400.
struct copy_fixture {
    recorded_memory host{0x10000, 0x1000};
    std::array<host_range, 4> storage{};
    host_range_list list{storage};

    copy_fixture()
    {
        EXPECT_TRUE(list.push(0x10800, 0x100));
        EXPECT_TRUE(list.push(0, 0x40, true));
        EXPECT_TRUE(list.push(0x10100, 0x30));
        EXPECT_TRUE(list.push(0x10400, 0x200));
    }
};

} // namespace

TEST(host_ranges_copy, copy_to_host_writes_each_range_once_and_skips_bit_buckets)
{
    copy_fixture fixture;
    const auto data = pattern(0x370, 1);

    EXPECT_EQ(nvmekit::copy_to_host(fixture.host.dma, fixture.list, std::span<const std::byte>{data}),
              spec::status::success());

    EXPECT_EQ(recorded(fixture.host.dma),
              (std::vector{write_at(0x10800, 0x100), write_at(0x10100, 0x30), write_at(0x10400, 0x200)}));
    EXPECT_EQ(host_bytes(fixture.host, 0x10800, 0x100), slice(data, 0, 0x100));
    EXPECT_EQ(host_bytes(fixture.host, 0x10100, 0x30), slice(data, 0x140, 0x30));
    EXPECT_EQ(host_bytes(fixture.host, 0x10400, 0x200), slice(data, 0x170, 0x200));
    EXPECT_EQ(host_bytes(fixture.host, 0x10130, 0x10), std::vector<std::byte>(0x10));
}

TEST(host_ranges_copy, copy_from_host_fills_each_range_and_leaves_bit_bucket_bytes_untouched)
{
    copy_fixture fixture;
    const auto source = pattern(0x370, 9);
    const auto filler = pattern(0x370, 200);
    ASSERT_EQ(nvmekit::copy_to_host(fixture.host.dma, fixture.list, std::span<const std::byte>{source}),
              spec::status::success());
    fixture.host.dma.clear();
    std::vector<std::byte> read_back = filler;

    EXPECT_EQ(nvmekit::copy_from_host(fixture.host.dma, fixture.list, std::span<std::byte>{read_back}),
              spec::status::success());

    EXPECT_EQ(recorded(fixture.host.dma),
              (std::vector{read_at(0x10800, 0x100), read_at(0x10100, 0x30), read_at(0x10400, 0x200)}));
    EXPECT_EQ(slice(read_back, 0, 0x100), slice(source, 0, 0x100));
    EXPECT_EQ(slice(read_back, 0x100, 0x40), slice(filler, 0x100, 0x40));
    EXPECT_EQ(slice(read_back, 0x140, 0x230), slice(source, 0x140, 0x230));
}

TEST(host_ranges_copy, windows_copy_the_pieces_of_the_ranges_they_cover)
{
    copy_fixture fixture;
    const auto data = pattern(0x370, 3);

    // Window [0xf0, 0x150): the end of the first range, the bit bucket, the start of the second.
    EXPECT_EQ(nvmekit::copy_to_host(fixture.host.dma, fixture.list, 0xf0,
                                    std::span<const std::byte>{data}.subspan(0xf0, 0x60)),
              spec::status::success());
    // Window [0x150, 0x370): the rest of the second range and all of the third.
    EXPECT_EQ(nvmekit::copy_to_host(fixture.host.dma, fixture.list, 0x150,
                                    std::span<const std::byte>{data}.subspan(0x150, 0x220)),
              spec::status::success());
    // Window [0, 0xf0): the start of the first range.
    EXPECT_EQ(nvmekit::copy_to_host(fixture.host.dma, fixture.list, 0,
                                    std::span<const std::byte>{data}.subspan(0, 0xf0)),
              spec::status::success());

    EXPECT_EQ(recorded(fixture.host.dma),
              (std::vector{write_at(0x108f0, 0x10), write_at(0x10100, 0x10), write_at(0x10110, 0x20),
                           write_at(0x10400, 0x200), write_at(0x10800, 0xf0)}));

    std::vector<std::byte> read_back(0x370);
    ASSERT_EQ(nvmekit::copy_from_host(fixture.host.dma, fixture.list, std::span<std::byte>{read_back}),
              spec::status::success());
    EXPECT_EQ(slice(read_back, 0, 0x100), slice(data, 0, 0x100));
    EXPECT_EQ(slice(read_back, 0x140, 0x230), slice(data, 0x140, 0x230));

    fixture.host.dma.clear();
    std::vector<std::byte> window(0x21);
    EXPECT_EQ(nvmekit::copy_from_host(fixture.host.dma, fixture.list, 0x16f, std::span<std::byte>{window}),
              spec::status::success());
    EXPECT_EQ(recorded(fixture.host.dma), (std::vector{read_at(0x1012f, 1), read_at(0x10400, 0x20)}));
    EXPECT_EQ(window, slice(data, 0x16f, 0x21));
}

TEST(host_ranges_copy, a_window_inside_a_bit_bucket_or_empty_moves_nothing)
{
    copy_fixture fixture;
    std::vector<std::byte> data(0x20, std::byte{0x5a});
    EXPECT_EQ(nvmekit::copy_to_host(fixture.host.dma, fixture.list, 0x110, std::span<const std::byte>{data}),
              spec::status::success());
    EXPECT_EQ(nvmekit::copy_from_host(fixture.host.dma, fixture.list, 0x110, std::span<std::byte>{data}),
              spec::status::success());
    EXPECT_EQ(nvmekit::copy_to_host(fixture.host.dma, fixture.list, 0x370, std::span<const std::byte>{}),
              spec::status::success());
    EXPECT_TRUE(recorded(fixture.host.dma).empty());
    EXPECT_EQ(data, std::vector<std::byte>(0x20, std::byte{0x5a}));
}

TEST(host_ranges_copy, empty_list_and_empty_data_succeed_without_dma)
{
    recorded_memory host{0x10000, 0x1000};
    host_range_list list{std::span<host_range>{}};
    EXPECT_EQ(nvmekit::copy_to_host(host.dma, list, std::span<const std::byte>{}), spec::status::success());
    EXPECT_EQ(nvmekit::copy_from_host(host.dma, list, std::span<std::byte>{}), spec::status::success());
    EXPECT_TRUE(recorded(host.dma).empty());
}

TEST(host_ranges_copy, dma_write_failure_is_data_transfer_error_and_stops_the_copy)
{
    copy_fixture fixture;
    const auto data = pattern(0x370, 1);
    fixture.host.dma.fail_nth(2, access_kind::write);

    EXPECT_EQ(nvmekit::copy_to_host(fixture.host.dma, fixture.list, std::span<const std::byte>{data}),
              spec::status{spec::generic_status::data_transfer_error});
    EXPECT_EQ(recorded(fixture.host.dma),
              (std::vector{write_at(0x10800, 0x100), write_at(0x10100, 0x30, dma_fault)}));
}

TEST(host_ranges_copy, dma_read_failure_is_data_transfer_error)
{
    copy_fixture fixture;
    std::vector<std::byte> data(0x370);
    fixture.host.dma.fail_nth(3, access_kind::read);

    EXPECT_EQ(nvmekit::copy_from_host(fixture.host.dma, fixture.list, std::span<std::byte>{data}),
              spec::status{spec::generic_status::data_transfer_error});
    EXPECT_EQ(recorded(fixture.host.dma), (std::vector{read_at(0x10800, 0x100), read_at(0x10100, 0x30),
                                                       read_at(0x10400, 0x200, dma_fault)}));
}

TEST(host_ranges_copy, range_outside_host_memory_is_data_transfer_error)
{
    recorded_memory host{0x10000, 0x1000};
    std::array<host_range, 1> storage{};
    host_range_list list{storage};
    ASSERT_TRUE(list.push(0x10f00, 0x200));
    std::vector<std::byte> data(0x200);

    EXPECT_EQ(nvmekit::copy_from_host(host.dma, list, std::span<std::byte>{data}),
              spec::status{spec::generic_status::data_transfer_error});
    EXPECT_EQ(nvmekit::copy_to_host(host.dma, list, std::span<const std::byte>{data}),
              spec::status{spec::generic_status::data_transfer_error});
    EXPECT_EQ(recorded(host.dma),
              (std::vector{read_at(0x10f00, 0x200, dma_unmapped), write_at(0x10f00, 0x200, dma_unmapped)}));
}

TEST(host_ranges_death, data_size_or_window_beyond_the_ranges_asserts)
{
    if (!asserts_enabled) {
        GTEST_SKIP() << "NVMEKIT_ASSERT is compiled out";
    }
    copy_fixture fixture;
    std::vector<std::byte> data(0x371);
    EXPECT_DEATH(static_cast<void>(
                     nvmekit::copy_to_host(fixture.host.dma, fixture.list, std::span<const std::byte>{data})),
                 "data size differs");
    EXPECT_DEATH(static_cast<void>(
                     nvmekit::copy_from_host(fixture.host.dma, fixture.list, std::span<std::byte>{data})),
                 "data size differs");
    EXPECT_DEATH(static_cast<void>(nvmekit::copy_to_host(fixture.host.dma, fixture.list, 0x300,
                                                         std::span<const std::byte>{data}.first(0x71))),
                 "window beyond");
    EXPECT_DEATH(static_cast<void>(nvmekit::copy_from_host(fixture.host.dma, fixture.list, 0x371,
                                                           std::span<std::byte>{data}.first(0))),
                 "window beyond");
}
