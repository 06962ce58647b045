#include <nvmekit/queues/queue_memory.hpp>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "asserts_enabled.hpp"
#include "recorded_memory.hpp"

namespace spec = nvmekit::spec;
using nvmekit::queue_memory;
using nvmekit::testing::access_kind;
using namespace nvmekit_test;

namespace {

constexpr std::uint32_t page = 4096;

/// Writes a PRP List of `entries` at `list_address`.
void store_list(recorded_memory& host, std::uint64_t list_address, const std::vector<std::uint64_t>& entries)
{
    for (std::size_t i = 0; i < entries.size(); ++i) {
        host.memory.store(list_address + i * 8, entries[i]);
    }
}

/// Writes a full first list page at 0x10000: 511 data entries of 0x1000'0000, then the pointer
/// to the next list page, `chain`.
void store_full_first_list_page(recorded_memory& host, std::uint64_t chain)
{
    std::vector<std::uint64_t> first_list(511, 0x1000'0000);
    first_list.push_back(chain);
    store_list(host, 0x10000, first_list);
}

std::vector<std::uint64_t> pages_of(const queue_memory& memory)
{
    return {memory.pages().begin(), memory.pages().end()};
}

} // namespace

TEST(queue_memory, contiguous_queue_is_base_plus_offset_without_page_limits)
{
    const queue_memory memory = queue_memory::contiguous(0x1'0000'1000);
    EXPECT_TRUE(memory.is_contiguous());
    EXPECT_EQ(memory.address_of(0), 0x1'0000'1000U);
    EXPECT_EQ(memory.address_of(4096 + 64), 0x1'0000'2040U);
    EXPECT_EQ(memory.contiguous_bytes_from(0), std::numeric_limits<std::size_t>::max());
    EXPECT_EQ(memory.contiguous_bytes_from(4095), std::numeric_limits<std::size_t>::max());
    EXPECT_TRUE(memory.pages().empty());
    EXPECT_EQ(memory.page_size(), 0U);
}

TEST(queue_memory, prp_list_of_three_pages_is_read_in_one_dma_read)
{
    recorded_memory host{0, 0x20000};
    store_list(host, 0x10000, {0x5000, 0x3000, 0x8000});
    queue_memory memory = queue_memory::contiguous(0);

    const spec::status status = queue_memory::from_prp_list(host.dma, 0x10000, 3 * page, page, memory);

    EXPECT_EQ(status, spec::status::success());
    EXPECT_EQ(recorded(host.dma), (std::vector{read_at(0x10000, 24)}));
    EXPECT_FALSE(memory.is_contiguous());
    EXPECT_EQ(memory.page_size(), page);
    EXPECT_EQ(pages_of(memory), (std::vector<std::uint64_t>{0x5000, 0x3000, 0x8000}));
}

TEST(queue_memory, prp_list_queue_maps_offsets_through_its_pages)
{
    recorded_memory host{0, 0x20000};
    store_list(host, 0x10000, {0x5000, 0x3000, 0x8000});
    queue_memory memory = queue_memory::contiguous(0);
    ASSERT_EQ(queue_memory::from_prp_list(host.dma, 0x10000, 3 * page, page, memory),
              spec::status::success());

    EXPECT_EQ(memory.address_of(0), 0x5000U);
    EXPECT_EQ(memory.address_of(4095), 0x5fffU);
    EXPECT_EQ(memory.address_of(4096), 0x3000U);
    EXPECT_EQ(memory.address_of(2 * 4096 + 64), 0x8040U);
    EXPECT_EQ(memory.address_of(3 * 4096 - 1), 0x8fffU);
    EXPECT_EQ(memory.contiguous_bytes_from(0), 4096U);
    EXPECT_EQ(memory.contiguous_bytes_from(4032), 64U);
    EXPECT_EQ(memory.contiguous_bytes_from(4095), 1U);
    EXPECT_EQ(memory.contiguous_bytes_from(4096 + 100), 3996U);
}

TEST(queue_memory, partial_last_page_needs_one_more_entry)
{
    recorded_memory host{0, 0x20000};
    store_list(host, 0x10000, {0x5000, 0x3000, 0xdead'0000});
    queue_memory memory = queue_memory::contiguous(0);

    EXPECT_EQ(queue_memory::from_prp_list(host.dma, 0x10000, page + 16, page, memory),
              spec::status::success());
    EXPECT_EQ(recorded(host.dma), (std::vector{read_at(0x10000, 16)}));
    EXPECT_EQ(pages_of(memory), (std::vector<std::uint64_t>{0x5000, 0x3000}));
}

TEST(queue_memory, larger_memory_page_size_needs_fewer_entries)
{
    constexpr std::uint32_t large_page = 16384;
    recorded_memory host{0, 0x20000};
    store_list(host, 0x14000, {0x8000, 0x4000});
    queue_memory memory = queue_memory::contiguous(0);

    EXPECT_EQ(queue_memory::from_prp_list(host.dma, 0x14000, 2 * large_page, large_page, memory),
              spec::status::success());
    EXPECT_EQ(recorded(host.dma), (std::vector{read_at(0x14000, 16)}));
    EXPECT_EQ(memory.address_of(large_page + 10), 0x400aU);
    EXPECT_EQ(memory.contiguous_bytes_from(100), large_page - 100U);
}

TEST(queue_memory, list_pointer_with_an_offset_is_prp_offset_invalid)
{
    recorded_memory host{0, 0x20000};
    store_list(host, 0x10008, {0x5000, 0x3000});
    queue_memory memory = queue_memory::contiguous(0x1234);

    EXPECT_EQ(queue_memory::from_prp_list(host.dma, 0x10008, 2 * page, page, memory),
              spec::status{spec::generic_status::prp_offset_invalid});
    EXPECT_TRUE(host.dma.accesses().empty());
    EXPECT_TRUE(memory.is_contiguous());
    EXPECT_EQ(memory.address_of(0), 0x1234U);
}

TEST(queue_memory, list_entry_with_an_offset_is_prp_offset_invalid)
{
    recorded_memory host{0, 0x20000};
    store_list(host, 0x10000, {0x5000, 0x3010, 0x8000});
    queue_memory memory = queue_memory::contiguous(0x1234);

    EXPECT_EQ(queue_memory::from_prp_list(host.dma, 0x10000, 3 * page, page, memory),
              spec::status{spec::generic_status::prp_offset_invalid});
    EXPECT_TRUE(memory.is_contiguous());
    EXPECT_EQ(memory.address_of(0), 0x1234U);
}

TEST(queue_memory, entry_aligned_to_4k_but_not_to_the_memory_page_is_prp_offset_invalid)
{
    recorded_memory host{0, 0x20000};
    store_list(host, 0x10000, {0x4000, 0x5000}); // 0x5000 is not 8 KiB aligned
    queue_memory memory = queue_memory::contiguous(0);

    EXPECT_EQ(queue_memory::from_prp_list(host.dma, 0x10000, 2 * 8192, 8192, memory),
              spec::status{spec::generic_status::prp_offset_invalid});
    EXPECT_TRUE(memory.is_contiguous());
}

TEST(queue_memory, dma_failure_reading_the_list_is_data_transfer_error)
{
    recorded_memory host{0, 0x20000};
    store_list(host, 0x10000, {0x5000, 0x3000});
    host.dma.fail_nth(1, access_kind::read);
    queue_memory memory = queue_memory::contiguous(0x1234);

    EXPECT_EQ(queue_memory::from_prp_list(host.dma, 0x10000, 2 * page, page, memory),
              spec::status{spec::generic_status::data_transfer_error});
    EXPECT_EQ(recorded(host.dma), (std::vector{read_at(0x10000, 16, dma_fault)}));
    EXPECT_TRUE(memory.is_contiguous());
    EXPECT_EQ(memory.address_of(0), 0x1234U);
}

TEST(queue_memory, list_outside_host_memory_is_data_transfer_error)
{
    recorded_memory host{0, 0x1f008}; // the last page holds only one entry
    queue_memory memory = queue_memory::contiguous(0);

    EXPECT_EQ(queue_memory::from_prp_list(host.dma, 0x40000, 2 * page, page, memory),
              spec::status{spec::generic_status::data_transfer_error});
    EXPECT_EQ(queue_memory::from_prp_list(host.dma, 0x1f000, 2 * page, page, memory),
              spec::status{spec::generic_status::data_transfer_error});
    EXPECT_EQ(recorded(host.dma),
              (std::vector{read_at(0x40000, 16, dma_unmapped), read_at(0x1f000, 16, dma_unmapped)}));
    EXPECT_TRUE(memory.is_contiguous());
}

TEST(queue_memory, list_that_fills_exactly_one_list_page_is_not_chained)
{
    recorded_memory host{0, 0x20000};
    std::vector<std::uint64_t> entries(512);
    for (std::size_t i = 0; i < entries.size(); ++i) {
        entries[i] = 0x1000'0000 + i * page;
    }
    store_list(host, 0x10000, entries);
    queue_memory memory = queue_memory::contiguous(0);

    EXPECT_EQ(queue_memory::from_prp_list(host.dma, 0x10000, 512 * page, page, memory),
              spec::status::success());
    EXPECT_EQ(recorded(host.dma), (std::vector{read_at(0x10000, 4096)}));
    EXPECT_EQ(pages_of(memory), entries);
}

TEST(queue_memory, longer_list_chains_through_the_last_entry_of_each_list_page)
{
    // The largest queue: 65536 entries of 64 bytes in 4 KiB pages, 1024 PRP entries: 511 on the
    // first list page, 511 on the second, 2 on the third.
    recorded_memory host{0, 0x30000};
    std::vector<std::uint64_t> data(1024);
    for (std::size_t i = 0; i < data.size(); ++i) {
        data[i] = 0x1000'0000 + i * 2 * page;
    }
    std::vector<std::uint64_t> first_list(data.begin(), data.begin() + 511);
    first_list.push_back(0x20000);
    std::vector<std::uint64_t> second_list(data.begin() + 511, data.begin() + 1022);
    second_list.push_back(0x2a000);
    store_list(host, 0x10000, first_list);
    store_list(host, 0x20000, second_list);
    store_list(host, 0x2a000, {data[1022], data[1023]});
    queue_memory memory = queue_memory::contiguous(0);

    EXPECT_EQ(queue_memory::from_prp_list(host.dma, 0x10000, queue_memory::max_queue_bytes, page, memory),
              spec::status::success());
    EXPECT_EQ(recorded(host.dma),
              (std::vector{read_at(0x10000, 4096), read_at(0x20000, 4096), read_at(0x2a000, 16)}));
    EXPECT_EQ(pages_of(memory), data);
    EXPECT_EQ(memory.address_of(511 * std::size_t{page} + 8), data[511] + 8);
    EXPECT_EQ(memory.address_of(queue_memory::max_queue_bytes - 1), data[1023] + 4095);
}

TEST(queue_memory, one_entry_more_than_a_list_page_holds_needs_a_second_list_page)
{
    recorded_memory host{0, 0x30000};
    store_full_first_list_page(host, 0x20000);
    store_list(host, 0x20000, {0x3000'0000, 0x3000'1000});
    queue_memory memory = queue_memory::contiguous(0);

    EXPECT_EQ(queue_memory::from_prp_list(host.dma, 0x10000, 513 * page, page, memory),
              spec::status::success());
    EXPECT_EQ(recorded(host.dma), (std::vector{read_at(0x10000, 4096), read_at(0x20000, 16)}));
    ASSERT_EQ(memory.pages().size(), 513U);
    EXPECT_EQ(memory.pages()[510], 0x1000'0000U);
    EXPECT_EQ(memory.pages()[511], 0x3000'0000U);
    EXPECT_EQ(memory.pages()[512], 0x3000'1000U);
}

TEST(queue_memory, chain_pointer_with_an_offset_is_prp_offset_invalid)
{
    recorded_memory host{0, 0x30000};
    store_full_first_list_page(host, 0x20010);
    queue_memory memory = queue_memory::contiguous(0);

    EXPECT_EQ(queue_memory::from_prp_list(host.dma, 0x10000, 513 * page, page, memory),
              spec::status{spec::generic_status::prp_offset_invalid});
    EXPECT_EQ(recorded(host.dma), (std::vector{read_at(0x10000, 4096)}));
    EXPECT_TRUE(memory.is_contiguous());
}

TEST(queue_memory, dma_failure_on_a_chained_list_page_is_data_transfer_error)
{
    recorded_memory host{0, 0x30000};
    store_full_first_list_page(host, 0x20000);
    store_list(host, 0x20000, {0x1000'0000, 0x1000'0000});
    host.dma.fail_nth(2, access_kind::read);
    queue_memory memory = queue_memory::contiguous(0);

    EXPECT_EQ(queue_memory::from_prp_list(host.dma, 0x10000, 513 * page, page, memory),
              spec::status{spec::generic_status::data_transfer_error});
    EXPECT_EQ(recorded(host.dma), (std::vector{read_at(0x10000, 4096), read_at(0x20000, 16, dma_fault)}));
    EXPECT_TRUE(memory.is_contiguous());
}

TEST(queue_memory, chain_pointing_to_itself_reads_a_bounded_number_of_list_pages)
{
    recorded_memory host{0, 0x30000};
    std::vector<std::uint64_t> list(511, 0x1000'0000);
    list.push_back(0x10000); // the chain entry points back to this list page
    store_list(host, 0x10000, list);
    queue_memory memory = queue_memory::contiguous(0);

    // Entry 511 of the re-read page is the chain pointer again, so it is a data entry only on the
    // last page: the walk stops after ceil(1024 / 511) = 3 reads whatever the list says.
    EXPECT_EQ(queue_memory::from_prp_list(host.dma, 0x10000, queue_memory::max_queue_bytes, page, memory),
              spec::status::success());
    EXPECT_EQ(recorded(host.dma),
              (std::vector{read_at(0x10000, 4096), read_at(0x10000, 4096), read_at(0x10000, 2 * 8)}));
    EXPECT_EQ(memory.pages().size(), 1024U);
    EXPECT_EQ(memory.pages()[1022], 0x1000'0000U);
}

TEST(queue_memory, copies_keep_their_pages)
{
    recorded_memory host{0, 0x20000};
    store_list(host, 0x10000, {0x5000, 0x3000});
    queue_memory memory = queue_memory::contiguous(0);
    ASSERT_EQ(queue_memory::from_prp_list(host.dma, 0x10000, 2 * page, page, memory),
              spec::status::success());

    const queue_memory copy = memory;
    memory = queue_memory::contiguous(0x9000);
    EXPECT_EQ(copy.address_of(4096 + 8), 0x3008U);
    EXPECT_EQ(memory.address_of(8), 0x9008U);
}

TEST(queue_memory_death, invalid_page_size_or_queue_size_asserts)
{
    if (!asserts_enabled) {
        GTEST_SKIP() << "NVMEKIT_ASSERT is compiled out";
    }
    recorded_memory host{0, 0x20000};
    queue_memory memory = queue_memory::contiguous(0);
    EXPECT_DEATH(static_cast<void>(queue_memory::from_prp_list(host.dma, 0x10000, 4096, 2048, memory)),
                 "invalid memory page size");
    EXPECT_DEATH(static_cast<void>(queue_memory::from_prp_list(host.dma, 0x10000, 0, page, memory)),
                 "queue size out of range");
    EXPECT_DEATH(static_cast<void>(queue_memory::from_prp_list(
                     host.dma, 0x10000, queue_memory::max_queue_bytes + 1, page, memory)),
                 "queue size out of range");
}

TEST(queue_memory_death, offset_beyond_a_prp_list_queue_asserts)
{
    if (!asserts_enabled) {
        GTEST_SKIP() << "NVMEKIT_ASSERT is compiled out";
    }
    recorded_memory host{0, 0x20000};
    store_list(host, 0x10000, {0x5000});
    queue_memory memory = queue_memory::contiguous(0);
    ASSERT_EQ(queue_memory::from_prp_list(host.dma, 0x10000, page, page, memory), spec::status::success());
    EXPECT_DEATH(static_cast<void>(memory.address_of(page)), "offset beyond the queue");
}
