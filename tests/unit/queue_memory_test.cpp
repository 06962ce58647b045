#include <nvmekit/queue_memory.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <ostream>
#include <span>
#include <system_error>
#include <vector>

#include <gtest/gtest.h>

#include <nvmekit/error.hpp>

namespace spec = nvmekit::spec;
using nvmekit::queue_memory;

namespace {

#ifdef NDEBUG
constexpr bool asserts_enabled = false;
#else
constexpr bool asserts_enabled = true;
#endif

struct dma_access {
    std::uint64_t address;
    std::size_t length;
    friend bool operator==(const dma_access&, const dma_access&) = default;
    friend std::ostream& operator<<(std::ostream& out, const dma_access& a)
    {
        return out << std::hex << "{0x" << a.address << ", 0x" << a.length << "}" << std::dec;
    }
};

/// Host RAM at [base, base + size) that logs every dma_access and can fail one chosen read.
class test_memory {
public:
    test_memory(std::uint64_t base, std::size_t size) : base_{base}, bytes_(size) {}

    std::error_code read(std::uint64_t address, std::span<std::byte> destination)
    {
        reads.push_back({address, destination.size()});
        if (fail_read_number && *fail_read_number == reads.size()) {
            return nvmekit::errc::dma_fault;
        }
        if (!contains(address, destination.size())) {
            return nvmekit::errc::dma_unmapped;
        }
        std::memcpy(destination.data(), bytes_.data() + (address - base_), destination.size());
        return {};
    }

    std::error_code write(std::uint64_t address, std::span<const std::byte> source)
    {
        writes.push_back({address, source.size()});
        if (!contains(address, source.size())) {
            return nvmekit::errc::dma_unmapped;
        }
        std::memcpy(bytes_.data() + (address - base_), source.data(), source.size());
        return {};
    }

    void store_u64(std::uint64_t address, std::uint64_t value)
    {
        ASSERT_TRUE(contains(address, sizeof value));
        std::memcpy(bytes_.data() + (address - base_), &value, sizeof value);
    }

    std::vector<dma_access> reads;
    std::vector<dma_access> writes;
    std::optional<std::size_t> fail_read_number; ///< 1-based number of the read that fails

private:
    [[nodiscard]] bool contains(std::uint64_t address, std::size_t length) const
    {
        return address >= base_ && address - base_ <= bytes_.size() && length <= bytes_.size() - (address - base_);
    }

    std::uint64_t base_;
    std::vector<std::byte> bytes_;
};

static_assert(nvmekit::DmaProvider<test_memory>);

constexpr std::uint32_t page = 4096;

/// Writes a PRP List of `entries` at `list_address`.
void store_list(test_memory& memory, std::uint64_t list_address, const std::vector<std::uint64_t>& entries)
{
    for (std::size_t i = 0; i < entries.size(); ++i) {
        memory.store_u64(list_address + i * 8, entries[i]);
    }
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
    test_memory host{0, 0x20000};
    store_list(host, 0x10000, {0x5000, 0x3000, 0x8000});
    queue_memory memory = queue_memory::contiguous(0);

    const spec::status status = queue_memory::from_prp_list(host, 0x10000, 3 * page, page, memory);

    EXPECT_EQ(status, spec::status::success());
    ASSERT_EQ(host.reads.size(), 1U);
    EXPECT_EQ(host.reads[0], (dma_access{0x10000, 24}));
    EXPECT_FALSE(memory.is_contiguous());
    EXPECT_EQ(memory.page_size(), page);
    EXPECT_EQ(pages_of(memory), (std::vector<std::uint64_t>{0x5000, 0x3000, 0x8000}));
}

TEST(queue_memory, prp_list_queue_maps_offsets_through_its_pages)
{
    test_memory host{0, 0x20000};
    store_list(host, 0x10000, {0x5000, 0x3000, 0x8000});
    queue_memory memory = queue_memory::contiguous(0);
    ASSERT_EQ(queue_memory::from_prp_list(host, 0x10000, 3 * page, page, memory), spec::status::success());

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
    test_memory host{0, 0x20000};
    store_list(host, 0x10000, {0x5000, 0x3000, 0xdead'0000});
    queue_memory memory = queue_memory::contiguous(0);

    EXPECT_EQ(queue_memory::from_prp_list(host, 0x10000, page + 16, page, memory), spec::status::success());
    ASSERT_EQ(host.reads.size(), 1U);
    EXPECT_EQ(host.reads[0], (dma_access{0x10000, 16}));
    EXPECT_EQ(pages_of(memory), (std::vector<std::uint64_t>{0x5000, 0x3000}));
}

TEST(queue_memory, larger_memory_page_size_needs_fewer_entries)
{
    constexpr std::uint32_t large_page = 16384;
    test_memory host{0, 0x20000};
    store_list(host, 0x14000, {0x8000, 0x4000});
    queue_memory memory = queue_memory::contiguous(0);

    EXPECT_EQ(queue_memory::from_prp_list(host, 0x14000, 2 * large_page, large_page, memory),
              spec::status::success());
    EXPECT_EQ(host.reads, (std::vector<dma_access>{{0x14000, 16}}));
    EXPECT_EQ(memory.address_of(large_page + 10), 0x400aU);
    EXPECT_EQ(memory.contiguous_bytes_from(100), large_page - 100U);
}

TEST(queue_memory, list_pointer_with_an_offset_is_prp_offset_invalid)
{
    test_memory host{0, 0x20000};
    store_list(host, 0x10008, {0x5000, 0x3000});
    queue_memory memory = queue_memory::contiguous(0x1234);

    EXPECT_EQ(queue_memory::from_prp_list(host, 0x10008, 2 * page, page, memory),
              spec::status{spec::generic_status::prp_offset_invalid});
    EXPECT_TRUE(host.reads.empty());
    EXPECT_TRUE(memory.is_contiguous());
    EXPECT_EQ(memory.address_of(0), 0x1234U);
}

TEST(queue_memory, list_entry_with_an_offset_is_prp_offset_invalid)
{
    test_memory host{0, 0x20000};
    store_list(host, 0x10000, {0x5000, 0x3010, 0x8000});
    queue_memory memory = queue_memory::contiguous(0x1234);

    EXPECT_EQ(queue_memory::from_prp_list(host, 0x10000, 3 * page, page, memory),
              spec::status{spec::generic_status::prp_offset_invalid});
    EXPECT_TRUE(memory.is_contiguous());
    EXPECT_EQ(memory.address_of(0), 0x1234U);
}

TEST(queue_memory, entry_aligned_to_4k_but_not_to_the_memory_page_is_prp_offset_invalid)
{
    test_memory host{0, 0x20000};
    store_list(host, 0x10000, {0x4000, 0x5000}); // 0x5000 is not 8 KiB aligned
    queue_memory memory = queue_memory::contiguous(0);

    EXPECT_EQ(queue_memory::from_prp_list(host, 0x10000, 2 * 8192, 8192, memory),
              spec::status{spec::generic_status::prp_offset_invalid});
    EXPECT_TRUE(memory.is_contiguous());
}

TEST(queue_memory, dma_failure_reading_the_list_is_data_transfer_error)
{
    test_memory host{0, 0x20000};
    store_list(host, 0x10000, {0x5000, 0x3000});
    host.fail_read_number = 1;
    queue_memory memory = queue_memory::contiguous(0x1234);

    EXPECT_EQ(queue_memory::from_prp_list(host, 0x10000, 2 * page, page, memory),
              spec::status{spec::generic_status::data_transfer_error});
    EXPECT_EQ(host.reads.size(), 1U);
    EXPECT_TRUE(memory.is_contiguous());
    EXPECT_EQ(memory.address_of(0), 0x1234U);
}

TEST(queue_memory, list_outside_host_memory_is_data_transfer_error)
{
    test_memory host{0, 0x1f008}; // the last page holds only one entry
    queue_memory memory = queue_memory::contiguous(0);

    EXPECT_EQ(queue_memory::from_prp_list(host, 0x40000, 2 * page, page, memory),
              spec::status{spec::generic_status::data_transfer_error});
    EXPECT_EQ(queue_memory::from_prp_list(host, 0x1f000, 2 * page, page, memory),
              spec::status{spec::generic_status::data_transfer_error});
    EXPECT_EQ(host.reads, (std::vector<dma_access>{{0x40000, 16}, {0x1f000, 16}}));
    EXPECT_TRUE(memory.is_contiguous());
}

TEST(queue_memory, list_that_fills_exactly_one_list_page_is_not_chained)
{
    test_memory host{0, 0x20000};
    std::vector<std::uint64_t> entries(512);
    for (std::size_t i = 0; i < entries.size(); ++i) {
        entries[i] = 0x1000'0000 + i * page;
    }
    store_list(host, 0x10000, entries);
    queue_memory memory = queue_memory::contiguous(0);

    EXPECT_EQ(queue_memory::from_prp_list(host, 0x10000, 512 * page, page, memory), spec::status::success());
    EXPECT_EQ(host.reads, (std::vector<dma_access>{{0x10000, 4096}}));
    EXPECT_EQ(pages_of(memory), entries);
}

TEST(queue_memory, longer_list_chains_through_the_last_entry_of_each_list_page)
{
    // The largest queue: 65536 entries of 64 bytes in 4 KiB pages, 1024 PRP entries: 511 on the
    // first list page, 511 on the second, 2 on the third.
    test_memory host{0, 0x30000};
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

    EXPECT_EQ(queue_memory::from_prp_list(host, 0x10000, queue_memory::max_queue_bytes, page, memory),
              spec::status::success());
    EXPECT_EQ(host.reads, (std::vector<dma_access>{{0x10000, 4096}, {0x20000, 4096}, {0x2a000, 16}}));
    EXPECT_EQ(pages_of(memory), data);
    EXPECT_EQ(memory.address_of(511 * std::size_t{page} + 8), data[511] + 8);
    EXPECT_EQ(memory.address_of(queue_memory::max_queue_bytes - 1), data[1023] + 4095);
}

TEST(queue_memory, one_entry_more_than_a_list_page_holds_needs_a_second_list_page)
{
    test_memory host{0, 0x30000};
    std::vector<std::uint64_t> first_list(511, 0x1000'0000);
    first_list.push_back(0x20000);
    store_list(host, 0x10000, first_list);
    store_list(host, 0x20000, {0x3000'0000, 0x3000'1000});
    queue_memory memory = queue_memory::contiguous(0);

    EXPECT_EQ(queue_memory::from_prp_list(host, 0x10000, 513 * page, page, memory), spec::status::success());
    EXPECT_EQ(host.reads, (std::vector<dma_access>{{0x10000, 4096}, {0x20000, 16}}));
    ASSERT_EQ(memory.pages().size(), 513U);
    EXPECT_EQ(memory.pages()[510], 0x1000'0000U);
    EXPECT_EQ(memory.pages()[511], 0x3000'0000U);
    EXPECT_EQ(memory.pages()[512], 0x3000'1000U);
}

TEST(queue_memory, chain_pointer_with_an_offset_is_prp_offset_invalid)
{
    test_memory host{0, 0x30000};
    std::vector<std::uint64_t> first_list(511, 0x1000'0000);
    first_list.push_back(0x20010);
    store_list(host, 0x10000, first_list);
    queue_memory memory = queue_memory::contiguous(0);

    EXPECT_EQ(queue_memory::from_prp_list(host, 0x10000, 513 * page, page, memory),
              spec::status{spec::generic_status::prp_offset_invalid});
    EXPECT_EQ(host.reads.size(), 1U);
    EXPECT_TRUE(memory.is_contiguous());
}

TEST(queue_memory, dma_failure_on_a_chained_list_page_is_data_transfer_error)
{
    test_memory host{0, 0x30000};
    std::vector<std::uint64_t> first_list(511, 0x1000'0000);
    first_list.push_back(0x20000);
    store_list(host, 0x10000, first_list);
    store_list(host, 0x20000, {0x1000'0000, 0x1000'0000});
    host.fail_read_number = 2;
    queue_memory memory = queue_memory::contiguous(0);

    EXPECT_EQ(queue_memory::from_prp_list(host, 0x10000, 513 * page, page, memory),
              spec::status{spec::generic_status::data_transfer_error});
    EXPECT_EQ(host.reads, (std::vector<dma_access>{{0x10000, 4096}, {0x20000, 16}}));
    EXPECT_TRUE(memory.is_contiguous());
}

TEST(queue_memory, chain_pointing_to_itself_reads_a_bounded_number_of_list_pages)
{
    test_memory host{0, 0x30000};
    std::vector<std::uint64_t> list(511, 0x1000'0000);
    list.push_back(0x10000); // the chain entry points back to this list page
    store_list(host, 0x10000, list);
    queue_memory memory = queue_memory::contiguous(0);

    // Entry 511 of the re-read page is the chain pointer again, so it is a data entry only on the
    // last page: the walk stops after ceil(1024 / 511) = 3 reads whatever the list says.
    EXPECT_EQ(queue_memory::from_prp_list(host, 0x10000, queue_memory::max_queue_bytes, page, memory),
              spec::status::success());
    EXPECT_EQ(host.reads, (std::vector<dma_access>{{0x10000, 4096}, {0x10000, 4096}, {0x10000, 2 * 8}}));
    EXPECT_EQ(memory.pages().size(), 1024U);
    EXPECT_EQ(memory.pages()[1022], 0x1000'0000U);
}

TEST(queue_memory, copies_keep_their_pages)
{
    test_memory host{0, 0x20000};
    store_list(host, 0x10000, {0x5000, 0x3000});
    queue_memory memory = queue_memory::contiguous(0);
    ASSERT_EQ(queue_memory::from_prp_list(host, 0x10000, 2 * page, page, memory), spec::status::success());

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
    test_memory host{0, 0x20000};
    queue_memory memory = queue_memory::contiguous(0);
    EXPECT_DEATH(static_cast<void>(queue_memory::from_prp_list(host, 0x10000, 4096, 2048, memory)),
                 "invalid memory page size");
    EXPECT_DEATH(static_cast<void>(queue_memory::from_prp_list(host, 0x10000, 0, page, memory)),
                 "queue size out of range");
    EXPECT_DEATH(
        static_cast<void>(queue_memory::from_prp_list(host, 0x10000, queue_memory::max_queue_bytes + 1, page, memory)),
        "queue size out of range");
}

TEST(queue_memory_death, offset_beyond_a_prp_list_queue_asserts)
{
    if (!asserts_enabled) {
        GTEST_SKIP() << "NVMEKIT_ASSERT is compiled out";
    }
    test_memory host{0, 0x20000};
    store_list(host, 0x10000, {0x5000});
    queue_memory memory = queue_memory::contiguous(0);
    ASSERT_EQ(queue_memory::from_prp_list(host, 0x10000, page, page, memory), spec::status::success());
    EXPECT_DEATH(static_cast<void>(memory.address_of(page)), "offset beyond the queue");
}
