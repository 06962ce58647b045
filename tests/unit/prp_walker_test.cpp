#include <nvmekit/data/prp_walker.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <ostream>
#include <random>
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
using nvmekit::walk_prp;
using nvmekit::testing::access_kind;
using namespace nvmekit_test;

namespace {

constexpr std::uint32_t page = 4096;
constexpr spec::status success = spec::status::success();
constexpr spec::status prp_offset_invalid{spec::generic_status::prp_offset_invalid};
constexpr spec::status invalid_field{spec::generic_status::invalid_field};
constexpr spec::status data_transfer_error{spec::generic_status::data_transfer_error};

/// Host memory for PRP Lists at 0x10000 (0x20000 bytes); data pages need no memory, the walker
/// never touches them.
struct prp_fixture {
    recorded_memory host{0x10000, 0x20000};
    std::vector<host_range> storage = std::vector<host_range>(1200);
    host_range_list out{storage};

    void store_list(std::uint64_t address, const std::vector<std::uint64_t>& entries)
    {
        for (std::size_t i = 0; i < entries.size(); ++i) {
            host.memory.store(address + i * 8, entries[i]);
        }
    }

    std::vector<host_range> ranges() const { return {out.ranges().begin(), out.ranges().end()}; }
};

/// `count` distinct, non-contiguous page addresses: 0x1000'0000, 0x1000'2000, ...
std::vector<std::uint64_t> sparse_pages(std::size_t count, std::uint64_t first = 0x1000'0000)
{
    std::vector<std::uint64_t> pages(count);
    for (std::size_t i = 0; i < count; ++i) {
        pages[i] = first + i * 2 * page;
    }
    return pages;
}

std::vector<host_range> full_pages(const std::vector<std::uint64_t>& pages)
{
    std::vector<host_range> ranges;
    for (const std::uint64_t address : pages) {
        ranges.push_back({address, page, false});
    }
    return ranges;
}

} // namespace

TEST(prp_walker, zero_length_succeeds_without_ranges_or_dma_and_ignores_the_entries)
{
    prp_fixture fixture;
    ASSERT_TRUE(fixture.out.push(0x1234, 4));

    EXPECT_EQ(walk_prp(fixture.host.dma, 0x1003, 0x7, 0, page, fixture.out), success);

    EXPECT_TRUE(fixture.out.empty());
    EXPECT_TRUE(recorded(fixture.host.dma).empty());
}

TEST(prp_walker, transfer_within_the_first_page_uses_prp1_with_its_offset_and_ignores_prp2)
{
    prp_fixture fixture;
    EXPECT_EQ(walk_prp(fixture.host.dma, 0x5010, 0xdead'beef'0003, 100, page, fixture.out), success);
    EXPECT_EQ(fixture.ranges(), (std::vector<host_range>{{0x5010, 100, false}}));
    EXPECT_TRUE(recorded(fixture.host.dma).empty());
}

TEST(prp_walker, transfer_filling_the_rest_of_the_first_page_needs_no_prp2)
{
    prp_fixture fixture;
    EXPECT_EQ(walk_prp(fixture.host.dma, 0x5800, 0x3, 0x800, page, fixture.out), success);
    EXPECT_EQ(fixture.ranges(), (std::vector<host_range>{{0x5800, 0x800, false}}));

    EXPECT_EQ(walk_prp(fixture.host.dma, 0x5000, 0x3, page, page, fixture.out), success);
    EXPECT_EQ(fixture.ranges(), (std::vector<host_range>{{0x5000, page, false}}));
    EXPECT_TRUE(recorded(fixture.host.dma).empty());
}

TEST(prp_walker, prp1_not_dword_aligned_is_prp_offset_invalid)
{
    prp_fixture fixture;
    EXPECT_EQ(walk_prp(fixture.host.dma, 0x5001, 0, 16, page, fixture.out), prp_offset_invalid);
    EXPECT_EQ(walk_prp(fixture.host.dma, 0x5002, 0, 16, page, fixture.out), prp_offset_invalid);
    EXPECT_EQ(walk_prp(fixture.host.dma, 0x5004, 0, 16, page, fixture.out), success);
}

TEST(prp_walker, transfer_crossing_one_page_boundary_uses_prp2_as_the_second_page)
{
    prp_fixture fixture;
    EXPECT_EQ(walk_prp(fixture.host.dma, 0x5800, 0x9000, page, page, fixture.out), success);
    EXPECT_EQ(fixture.ranges(), (std::vector<host_range>{{0x5800, 0x800, false}, {0x9000, 0x800, false}}));

    EXPECT_EQ(walk_prp(fixture.host.dma, 0x5000, 0x9000, 2 * page, page, fixture.out), success);
    EXPECT_EQ(fixture.ranges(), (std::vector<host_range>{{0x5000, page, false}, {0x9000, page, false}}));
    EXPECT_TRUE(recorded(fixture.host.dma).empty());
}

TEST(prp_walker, contiguous_pages_merge_into_one_range)
{
    prp_fixture fixture;
    EXPECT_EQ(walk_prp(fixture.host.dma, 0x5800, 0x6000, page, page, fixture.out), success);
    EXPECT_EQ(fixture.ranges(), (std::vector<host_range>{{0x5800, page, false}}));
}

TEST(prp_walker, second_page_with_an_offset_is_prp_offset_invalid)
{
    prp_fixture fixture;
    EXPECT_EQ(walk_prp(fixture.host.dma, 0x5800, 0x9008, page, page, fixture.out), prp_offset_invalid);
    EXPECT_EQ(walk_prp(fixture.host.dma, 0x5000, 0x9800, 2 * page, page, fixture.out), prp_offset_invalid);
    EXPECT_TRUE(recorded(fixture.host.dma).empty());
}

TEST(prp_walker, prp_list_in_one_page_is_read_in_one_dma_read_of_the_entries_needed)
{
    prp_fixture fixture;
    fixture.store_list(0x10000, {0x7000, 0x3000, 0x9000});

    EXPECT_EQ(walk_prp(fixture.host.dma, 0x5100, 0x10000, 3 * page + 0x10, page, fixture.out), success);

    EXPECT_EQ(
        fixture.ranges(),
        (std::vector<host_range>{
            {0x5100, 0xf00, false}, {0x7000, page, false}, {0x3000, page, false}, {0x9000, 0x110, false}}));
    EXPECT_EQ(recorded(fixture.host.dma), (std::vector{read_at(0x10000, 24)}));
}

TEST(prp_walker, prp_list_pointer_may_have_a_qword_aligned_offset)
{
    prp_fixture fixture;
    fixture.store_list(0x10328, {0x7000, 0x3000});

    EXPECT_EQ(walk_prp(fixture.host.dma, 0x5000, 0x10328, 3 * page, page, fixture.out), success);

    EXPECT_EQ(fixture.ranges(),
              (std::vector<host_range>{{0x5000, page, false}, {0x7000, page, false}, {0x3000, page, false}}));
    EXPECT_EQ(recorded(fixture.host.dma), (std::vector{read_at(0x10328, 16)}));
}

TEST(prp_walker, prp_list_pointer_not_qword_aligned_is_prp_offset_invalid)
{
    prp_fixture fixture;
    EXPECT_EQ(walk_prp(fixture.host.dma, 0x5000, 0x10004, 3 * page, page, fixture.out), prp_offset_invalid);
    EXPECT_EQ(walk_prp(fixture.host.dma, 0x5000, 0x10001, 3 * page, page, fixture.out), prp_offset_invalid);
    EXPECT_TRUE(recorded(fixture.host.dma).empty());
}

TEST(prp_walker, list_pointer_offset_leaves_fewer_entries_before_the_chain)
{
    prp_fixture fixture;
    // Two slots before the end of the list page: one data entry, then the chain pointer.
    fixture.store_list(0x10ff0, {0x7000, 0x12000});
    fixture.store_list(0x12000, {0x3000, 0x9000});

    EXPECT_EQ(walk_prp(fixture.host.dma, 0x5000, 0x10ff0, 4 * page, page, fixture.out), success);

    EXPECT_EQ(
        fixture.ranges(),
        (std::vector<host_range>{
            {0x5000, page, false}, {0x7000, page, false}, {0x3000, page, false}, {0x9000, page, false}}));
    EXPECT_EQ(recorded(fixture.host.dma), (std::vector{read_at(0x10ff0, 16), read_at(0x12000, 16)}));
}

TEST(prp_walker, list_pointer_in_the_last_slot_of_its_page_holds_only_the_chain)
{
    prp_fixture fixture;
    fixture.store_list(0x10ff8, {0x12000});
    fixture.store_list(0x12000, {0x3000, 0x9000});

    EXPECT_EQ(walk_prp(fixture.host.dma, 0x5000, 0x10ff8, 3 * page, page, fixture.out), success);

    EXPECT_EQ(fixture.ranges(),
              (std::vector<host_range>{{0x5000, page, false}, {0x3000, page, false}, {0x9000, page, false}}));
    EXPECT_EQ(recorded(fixture.host.dma), (std::vector{read_at(0x10ff8, 8), read_at(0x12000, 16)}));
}

TEST(prp_walker, list_that_fills_exactly_one_list_page_is_not_chained)
{
    prp_fixture fixture;
    const auto pages = sparse_pages(512);
    fixture.store_list(0x10000, pages);

    EXPECT_EQ(walk_prp(fixture.host.dma, 0x5000, 0x10000, 513 * std::uint64_t{page}, page, fixture.out),
              success);

    auto expected = full_pages(pages);
    expected.insert(expected.begin(), host_range{0x5000, page, false});
    EXPECT_EQ(fixture.ranges(), expected);
    EXPECT_EQ(recorded(fixture.host.dma), (std::vector{read_at(0x10000, page)}));
}

TEST(prp_walker, longer_list_chains_through_the_last_entry_of_each_full_list_page)
{
    prp_fixture fixture;
    const auto pages = sparse_pages(1024);
    std::vector<std::uint64_t> first_list(pages.begin(), pages.begin() + 511);
    first_list.push_back(0x14000);
    std::vector<std::uint64_t> second_list(pages.begin() + 511, pages.begin() + 1022);
    second_list.push_back(0x11000);
    const std::vector<std::uint64_t> third_list(pages.begin() + 1022, pages.end());
    fixture.store_list(0x10000, first_list);
    fixture.store_list(0x14000, second_list);
    fixture.store_list(0x11000, third_list);

    EXPECT_EQ(walk_prp(fixture.host.dma, 0x5000, 0x10000, 1025 * std::uint64_t{page}, page, fixture.out),
              success);

    auto expected = full_pages(pages);
    expected.insert(expected.begin(), host_range{0x5000, page, false});
    EXPECT_EQ(fixture.ranges(), expected);
    EXPECT_EQ(recorded(fixture.host.dma),
              (std::vector{read_at(0x10000, page), read_at(0x14000, page), read_at(0x11000, 16)}));
}

TEST(prp_walker, list_entry_with_an_offset_is_prp_offset_invalid)
{
    prp_fixture fixture;
    fixture.store_list(0x10000, {0x7000, 0x3010, 0x9000});
    EXPECT_EQ(walk_prp(fixture.host.dma, 0x5000, 0x10000, 4 * page, page, fixture.out), prp_offset_invalid);

    fixture.store_list(0x10000, {0x7000, 0x3000, 0x9004});
    EXPECT_EQ(walk_prp(fixture.host.dma, 0x5000, 0x10000, 4 * page, page, fixture.out), prp_offset_invalid);
}

TEST(prp_walker, entry_aligned_to_4k_but_not_to_the_memory_page_is_prp_offset_invalid)
{
    prp_fixture fixture;
    constexpr std::uint32_t large_page = 8192;
    fixture.store_list(0x10000, {0x8000, 0x5000});
    EXPECT_EQ(walk_prp(fixture.host.dma, 0x4000, 0x10000, 3 * large_page, large_page, fixture.out),
              prp_offset_invalid);
    EXPECT_EQ(walk_prp(fixture.host.dma, 0x4000, 0x7000, 2 * large_page, large_page, fixture.out),
              prp_offset_invalid);
}

TEST(prp_walker, chain_pointer_with_an_offset_is_prp_offset_invalid)
{
    prp_fixture fixture;
    fixture.store_list(0x10ff0, {0x7000, 0x12008});
    EXPECT_EQ(walk_prp(fixture.host.dma, 0x5000, 0x10ff0, 4 * page, page, fixture.out), prp_offset_invalid);
    EXPECT_EQ(recorded(fixture.host.dma), (std::vector{read_at(0x10ff0, 16)}));
}

TEST(prp_walker, dma_failure_reading_a_list_page_is_data_transfer_error)
{
    prp_fixture fixture;
    fixture.store_list(0x10ff0, {0x7000, 0x12000});
    fixture.store_list(0x12000, {0x3000, 0x9000});

    fixture.host.dma.fail_nth(1, access_kind::read);
    EXPECT_EQ(walk_prp(fixture.host.dma, 0x5000, 0x10ff0, 4 * page, page, fixture.out), data_transfer_error);

    fixture.host.dma.clear();
    fixture.host.dma.fail_nth(2, access_kind::read);
    EXPECT_EQ(walk_prp(fixture.host.dma, 0x5000, 0x10ff0, 4 * page, page, fixture.out), data_transfer_error);
    EXPECT_EQ(recorded(fixture.host.dma),
              (std::vector{read_at(0x10ff0, 16), read_at(0x12000, 16, dma_fault)}));
}

TEST(prp_walker, list_outside_host_memory_is_data_transfer_error)
{
    prp_fixture fixture;
    EXPECT_EQ(walk_prp(fixture.host.dma, 0x5000, 0x40000, 3 * page, page, fixture.out), data_transfer_error);
    EXPECT_EQ(recorded(fixture.host.dma), (std::vector{read_at(0x40000, 16, dma_unmapped)}));
}

TEST(prp_walker, chain_pointing_to_itself_reads_a_number_of_entries_bounded_by_the_length)
{
    prp_fixture fixture;
    auto list = sparse_pages(511);
    list.push_back(0x10000);
    fixture.store_list(0x10000, list);

    EXPECT_EQ(walk_prp(fixture.host.dma, 0x5000, 0x10000, 1101 * std::uint64_t{page}, page, fixture.out),
              success);

    EXPECT_EQ(fixture.out.size(), 1101U);
    EXPECT_EQ(fixture.out.total_bytes(), 1101 * std::uint64_t{page});
    EXPECT_EQ(recorded(fixture.host.dma),
              (std::vector{read_at(0x10000, page), read_at(0x10000, page), read_at(0x10000, 78 * 8)}));
}

TEST(prp_walker, full_output_is_invalid_field)
{
    prp_fixture fixture;
    fixture.store_list(0x10000, {0x7000, 0x3000, 0x9000});
    std::array<host_range, 3> storage{};
    host_range_list small{storage};

    EXPECT_EQ(walk_prp(fixture.host.dma, 0x5000, 0x10000, 4 * page, page, small), invalid_field);
    EXPECT_EQ(walk_prp(fixture.host.dma, 0x5000, 0x10000, 3 * page, page, small), success);
    EXPECT_EQ(small.size(), 3U);

    host_range_list one{std::span{storage}.first(1)};
    EXPECT_EQ(walk_prp(fixture.host.dma, 0x5000, 0x9000, 2 * page, page, one), invalid_field);
    host_range_list none{std::span<host_range>{}};
    EXPECT_EQ(walk_prp(fixture.host.dma, 0x5000, 0, 8, page, none), invalid_field);
}

TEST(prp_walker, merged_contiguous_pages_need_fewer_ranges)
{
    prp_fixture fixture;
    fixture.store_list(0x10000, {0x6000, 0x7000, 0x8000});
    std::array<host_range, 1> storage{};
    host_range_list one{storage};

    EXPECT_EQ(walk_prp(fixture.host.dma, 0x5000, 0x10000, 4 * page, page, one), success);
    EXPECT_EQ(one.ranges()[0], (host_range{0x5000, 4 * page, false}));
}

TEST(prp_walker, large_memory_pages_read_a_list_page_in_4k_pieces)
{
    prp_fixture fixture;
    constexpr std::uint32_t large_page = 65536;
    const auto pages = sparse_pages(600, 0x1'0000'0000);
    std::vector<std::uint64_t> aligned(pages.size());
    std::transform(pages.begin(), pages.end(), aligned.begin(), [](std::uint64_t p) { return p * 16; });
    fixture.store_list(0x10000, aligned);

    EXPECT_EQ(walk_prp(fixture.host.dma, 0x20000, 0x10000, 601 * std::uint64_t{large_page}, large_page,
                       fixture.out),
              success);

    EXPECT_EQ(fixture.out.size(), 601U);
    EXPECT_EQ(fixture.out.ranges()[600], (host_range{aligned[599], large_page, false}));
    EXPECT_EQ(recorded(fixture.host.dma), (std::vector{read_at(0x10000, page), read_at(0x11000, 88 * 8)}));
}

TEST(prp_walker_death, invalid_page_size_asserts)
{
    if (!asserts_enabled) {
        GTEST_SKIP() << "NVMEKIT_ASSERT is compiled out";
    }
    prp_fixture fixture;
    EXPECT_DEATH(static_cast<void>(walk_prp(fixture.host.dma, 0x5000, 0, 8, 2048, fixture.out)), "page size");
    EXPECT_DEATH(static_cast<void>(walk_prp(fixture.host.dma, 0x5000, 0, 8, 4096 + 512, fixture.out)),
                 "page size");
}

TEST(prp_walker_random, random_layouts_describe_the_length_and_round_trip_the_data)
{
    std::mt19937_64 random{20240611};
    for (int round = 0; round < 200; ++round) {
        const std::uint32_t page_size = (random() % 4 == 0) ? 8192 : page;
        constexpr std::uint64_t data_base = 0x100'0000;
        constexpr std::size_t data_pages = 96;
        constexpr std::uint64_t list_base = 0x800'0000;
        nvmekit::testing::flat_memory memory;
        memory.add_range(data_base, data_pages * page_size);
        memory.add_range(list_base, 8 * page_size);

        std::vector<std::uint64_t> order(data_pages);
        std::iota(order.begin(), order.end(), std::uint64_t{0});
        std::shuffle(order.begin(), order.end(), random);

        const std::uint64_t offset = (random() % (page_size / 4)) * 4;
        const std::uint64_t max_length = (data_pages - 1) * std::uint64_t{page_size};
        const std::uint64_t length = 1 + random() % max_length;
        const std::uint64_t entries = spec::prp_entry_count(spec::prp_entry{offset}, length, page_size);
        std::vector<std::uint64_t> pages(entries);
        for (std::uint64_t i = 0; i < entries; ++i) {
            pages[i] = data_base + order[i] * page_size;
        }
        const std::uint64_t prp1 = pages[0] + offset;
        std::uint64_t prp2 = 0;
        if (entries == 2) {
            prp2 = pages[1];
        } else if (entries > 2) {
            // The list starts at a random qword in the first list page, then chains through
            // list pages 1, 2, ... of the list area.
            const std::uint64_t slots_per_page = page_size / 8;
            std::uint64_t list = list_base + (random() % slots_per_page) * 8;
            prp2 = list;
            std::uint64_t next_list_page = list_base + page_size;
            std::size_t index = 1;
            while (index < entries) {
                const std::uint64_t slots = (page_size - list % page_size) / 8;
                const std::uint64_t left = entries - index;
                if (left <= slots) {
                    for (std::uint64_t i = 0; i < left; ++i) {
                        memory.store(list + i * 8, pages[index + i]);
                    }
                    break;
                }
                for (std::uint64_t i = 0; i + 1 < slots; ++i) {
                    memory.store(list + i * 8, pages[index + i]);
                }
                index += slots - 1;
                memory.store(list + (slots - 1) * 8, next_list_page);
                list = next_list_page;
                next_list_page += page_size;
            }
        }

        std::vector<host_range> storage(data_pages + 1);
        host_range_list out{storage};
        ASSERT_EQ(walk_prp(memory, prp1, prp2, length, page_size, out), success) << "round " << round;
        ASSERT_EQ(out.total_bytes(), length) << "round " << round;

        std::vector<std::byte> data(length);
        for (auto& byte : data) {
            byte = static_cast<std::byte>(random());
        }
        ASSERT_EQ(nvmekit::copy_to_host(memory, out, std::span<const std::byte>{data}), success);
        for (std::uint64_t i = 0; i < length; i += 97) {
            const std::uint64_t position = offset + i;
            const std::uint64_t address = pages[position / page_size] + position % page_size;
            ASSERT_EQ(memory.load<std::byte>(address), data[i]) << "round " << round << " byte " << i;
        }
        std::vector<std::byte> read_back(length);
        ASSERT_EQ(nvmekit::copy_from_host(memory, out, std::span<std::byte>{read_back}), success);
        ASSERT_EQ(read_back, data) << "round " << round;
    }
}
