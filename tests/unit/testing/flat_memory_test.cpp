#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <span>
#include <stdexcept>
#include <system_error>
#include <vector>

#include <gtest/gtest.h>

#include <nvmekit/contracts/dma.hpp>
#include <nvmekit/error.hpp>
#include <nvmekit/testing/flat_memory.hpp>

using nvmekit::errc;
using nvmekit::testing::flat_memory;

namespace {

constexpr std::uint64_t max64 = std::numeric_limits<std::uint64_t>::max();

std::vector<std::byte> pattern(std::size_t size, std::uint8_t first = 1)
{
    std::vector<std::byte> bytes(size);
    for (std::size_t i = 0; i < size; ++i) {
        bytes[i] = static_cast<std::byte>(first + i);
    }
    return bytes;
}

struct sample {
    std::uint32_t word;
    std::uint16_t half;
    std::uint8_t byte;
    std::uint8_t flags;
};

} // namespace

static_assert(nvmekit::MappingDmaProvider<flat_memory>);

TEST(flat_memory, add_range_returns_zero_filled_memory_of_the_requested_size)
{
    flat_memory memory;
    const auto range = memory.add_range(0x1000, 64);
    EXPECT_EQ(range.size(), 64U);
    EXPECT_TRUE(std::all_of(range.begin(), range.end(), [](std::byte b) { return b == std::byte{0}; }));
    range[3] = std::byte{0x5a};
    EXPECT_EQ(memory.load<std::uint8_t>(0x1003), 0x5aU);
}

TEST(flat_memory, a_range_of_the_callers_storage_is_used_in_place_and_copied_by_a_copy)
{
    // Memory shared with a device (a memfd a vfio-user client maps): the range is those bytes.
    std::vector<std::byte> storage(8192, std::byte{0x5a});
    flat_memory memory;
    const auto range = memory.add_range(0x4000, std::span{storage});
    EXPECT_EQ(range.data(), storage.data());
    EXPECT_EQ(memory.load<std::uint8_t>(0x4000), 0x5aU); // not zeroed
    memory.store<std::uint32_t>(0x4010, 0x01020304U);
    std::uint32_t stored = 0;
    std::memcpy(&stored, storage.data() + 0x10, sizeof stored);
    EXPECT_EQ(stored, 0x01020304U);
    const auto allocated = memory.allocate(4096);
    ASSERT_TRUE(allocated.has_value());
    EXPECT_EQ(*allocated, 0x4000U);
    // A copy owns its bytes: the caller's storage no longer changes with it.
    flat_memory copy{memory};
    copy.store<std::uint32_t>(0x4010, 0xaabbccddU);
    EXPECT_EQ(memory.load<std::uint32_t>(0x4010), 0x01020304U);
    EXPECT_EQ(copy.load<std::uint8_t>(0x5fff), 0x5aU);
    EXPECT_THROW(memory.add_range(0x5000, std::span{storage}), std::invalid_argument);
}

TEST(flat_memory, add_range_rejects_empty_wrapping_and_overlapping_ranges)
{
    flat_memory memory;
    memory.add_range(0x1000, 0x1000);
    EXPECT_THROW(memory.add_range(0x8000, 0), std::invalid_argument);
    EXPECT_THROW(memory.add_range(max64, 2), std::invalid_argument);
    EXPECT_THROW(memory.add_range(max64 - 0xf, 0x11), std::invalid_argument);
    EXPECT_THROW(memory.add_range(0x1000, 0x1000), std::invalid_argument);
    EXPECT_THROW(memory.add_range(0x1fff, 1), std::invalid_argument);
    EXPECT_THROW(memory.add_range(0x0fff, 2), std::invalid_argument);
    EXPECT_THROW(memory.add_range(0x0800, 0x2000), std::invalid_argument);
    EXPECT_THROW(memory.add_range(0x1800, 0x10), std::invalid_argument);
    EXPECT_NO_THROW(memory.add_range(0x0fff, 1));
    EXPECT_NO_THROW(memory.add_range(0x2000, 1));
}

TEST(flat_memory, a_range_may_end_at_the_top_of_the_address_space)
{
    flat_memory memory;
    memory.add_range(max64 - 0xf, 0x10);
    memory.add_range(0, 0x10);
    const std::array<std::byte, 4> source{std::byte{1}, std::byte{2}, std::byte{3}, std::byte{4}};
    EXPECT_EQ(memory.write(max64 - 3, source), std::error_code{});
    std::array<std::byte, 4> destination{};
    EXPECT_EQ(memory.read(max64 - 3, destination), std::error_code{});
    EXPECT_EQ(destination, source);
    EXPECT_EQ(memory.load<std::uint8_t>(max64), 4U);
}

TEST(flat_memory, an_access_ending_exactly_at_the_range_end_succeeds_and_one_byte_more_fails)
{
    flat_memory memory;
    memory.add_range(0x1000, 0x100);
    const auto source = pattern(0x10);
    EXPECT_EQ(memory.write(0x10f0, source), std::error_code{});
    std::vector<std::byte> destination(0x10);
    EXPECT_EQ(memory.read(0x10f0, destination), std::error_code{});
    EXPECT_EQ(destination, source);

    const auto longer = pattern(0x11, 0x80);
    EXPECT_EQ(memory.write(0x10f0, longer), make_error_code(errc::dma_unmapped));
    std::vector<std::byte> longer_destination(0x11, std::byte{0xee});
    EXPECT_EQ(memory.read(0x10f0, longer_destination), make_error_code(errc::dma_unmapped));
    EXPECT_EQ(longer_destination, std::vector<std::byte>(0x11, std::byte{0xee}));
    EXPECT_EQ(memory.read(0x10f0, destination), std::error_code{});
    EXPECT_EQ(destination, source);
}

TEST(flat_memory, an_access_starting_before_a_range_fails)
{
    flat_memory memory;
    memory.add_range(0x1000, 0x100);
    std::array<std::byte, 2> destination{};
    EXPECT_EQ(memory.read(0x0fff, destination), make_error_code(errc::dma_unmapped));
    EXPECT_EQ(memory.read(0x1100, destination), make_error_code(errc::dma_unmapped));
    EXPECT_EQ(memory.read(0, destination), make_error_code(errc::dma_unmapped));
    EXPECT_EQ(memory.read(0x10fe, destination), std::error_code{});
}

TEST(flat_memory, an_access_spanning_two_adjacent_ranges_fails_and_touches_nothing)
{
    flat_memory memory;
    const auto low = memory.add_range(0x1000, 0x10);
    const auto high = memory.add_range(0x1010, 0x10);
    const auto source = pattern(4);
    EXPECT_EQ(memory.write(0x100e, source), make_error_code(errc::dma_unmapped));
    EXPECT_EQ(low[0xe], std::byte{0});
    EXPECT_EQ(low[0xf], std::byte{0});
    EXPECT_EQ(high[0], std::byte{0});
    EXPECT_EQ(high[1], std::byte{0});
    std::array<std::byte, 4> destination{};
    EXPECT_EQ(memory.read(0x100e, destination), make_error_code(errc::dma_unmapped));
    EXPECT_TRUE(memory.map(0x100e, 4).empty());
    EXPECT_THROW(static_cast<void>(memory.bytes(0x100e, 4)), std::out_of_range);
    EXPECT_EQ(memory.write(0x1010, source), std::error_code{});
    EXPECT_EQ(high[0], std::byte{1});
}

TEST(flat_memory, an_access_wrapping_the_address_space_is_out_of_range)
{
    flat_memory memory;
    memory.add_range(max64 - 0xf, 0x10);
    memory.add_range(0, 0x10);
    std::array<std::byte, 2> destination{};
    EXPECT_EQ(memory.read(max64, destination), make_error_code(errc::dma_out_of_range));
    EXPECT_EQ(memory.write(max64, destination), make_error_code(errc::dma_out_of_range));
    EXPECT_TRUE(memory.map(max64, 2).empty());
    EXPECT_TRUE(memory.map(max64 - 0xf, std::numeric_limits<std::size_t>::max()).empty());
    EXPECT_THROW(static_cast<void>(memory.bytes(max64, 2)), std::out_of_range);
    EXPECT_EQ(memory.read(max64, std::span{destination}.first(1)), std::error_code{});
}

TEST(flat_memory, an_unmapped_access_reports_unmapped_even_far_from_any_range)
{
    flat_memory empty;
    std::array<std::byte, 1> destination{};
    EXPECT_EQ(empty.read(0x1000, destination), make_error_code(errc::dma_unmapped));
    EXPECT_EQ(empty.write(0, destination), make_error_code(errc::dma_unmapped));
    EXPECT_TRUE(empty.map(0, 1).empty());
}

TEST(flat_memory, zero_length_accesses_succeed_anywhere)
{
    flat_memory memory;
    memory.add_range(0x1000, 0x10);
    EXPECT_EQ(memory.read(0x5000, std::span<std::byte>{}), std::error_code{});
    EXPECT_EQ(memory.write(max64, std::span<const std::byte>{}), std::error_code{});
    EXPECT_TRUE(memory.map(0x5000, 0).empty());
    EXPECT_TRUE(memory.bytes(0x5000, 0).empty());
}

TEST(flat_memory, map_returns_the_range_bytes_at_the_address)
{
    flat_memory memory;
    const auto range = memory.add_range(0x2000, 0x100);
    const auto mapped = memory.map(0x2010, 0x20);
    ASSERT_EQ(mapped.size(), 0x20U);
    EXPECT_EQ(mapped.data(), range.data() + 0x10);
    mapped[0] = std::byte{0x77};
    EXPECT_EQ(memory.load<std::uint8_t>(0x2010), 0x77U);
    EXPECT_EQ(memory.map(0x20f0, 0x10).size(), 0x10U);
    EXPECT_TRUE(memory.map(0x20f0, 0x11).empty());
}

TEST(flat_memory, read_and_write_work_through_the_dma_object_helpers)
{
    flat_memory memory;
    memory.add_range(0x3000, 0x100);
    const sample written{0x11223344, 0x5566, 0x77, 0x88};
    EXPECT_EQ(nvmekit::dma_write_object(memory, 0x3008, written), std::error_code{});
    sample read_back{};
    EXPECT_EQ(nvmekit::dma_read_object(memory, 0x3008, read_back), std::error_code{});
    EXPECT_EQ(read_back.word, 0x11223344U);
    EXPECT_EQ(read_back.half, 0x5566U);
    EXPECT_EQ(read_back.byte, 0x77U);
    EXPECT_EQ(read_back.flags, 0x88U);
    EXPECT_EQ(memory.load<std::uint32_t>(0x3008), 0x11223344U);
    EXPECT_EQ(nvmekit::dma_read_object(memory, 0x30fc, read_back), make_error_code(errc::dma_unmapped));
}

TEST(flat_memory, load_and_store_are_little_endian_and_throw_outside_a_range)
{
    flat_memory memory;
    memory.add_range(0x4000, 0x10);
    memory.store(0x4004, std::uint32_t{0xa1b2c3d4});
    const auto stored = memory.bytes(0x4004, 4);
    EXPECT_EQ(stored[0], std::byte{0xd4});
    EXPECT_EQ(stored[3], std::byte{0xa1});
    EXPECT_EQ(memory.load<std::uint16_t>(0x4005), 0xb2c3U);
    memory.store(0x4008, std::uint64_t{0x0102030405060708});
    EXPECT_EQ(memory.load<std::uint64_t>(0x4008), 0x0102030405060708U);
    EXPECT_THROW(memory.store(0x400d, std::uint32_t{1}), std::out_of_range);
    EXPECT_EQ(memory.load<std::uint32_t>(0x400c), 0x01020304U);
    EXPECT_THROW(static_cast<void>(memory.load<std::uint32_t>(0x400d)), std::out_of_range);
    EXPECT_THROW(static_cast<void>(memory.load<std::uint8_t>(0x3fff)), std::out_of_range);
}

TEST(flat_memory, const_bytes_sees_the_same_memory)
{
    flat_memory memory;
    memory.add_range(0x4000, 0x10);
    memory.store(0x4001, std::uint8_t{9});
    const flat_memory& view = memory;
    const auto bytes = view.bytes(0x4000, 0x10);
    EXPECT_EQ(bytes.size(), 0x10U);
    EXPECT_EQ(bytes[1], std::byte{9});
    EXPECT_THROW(static_cast<void>(view.bytes(0x4000, 0x11)), std::out_of_range);
}

TEST(flat_memory, allocate_honours_the_alignment)
{
    flat_memory memory;
    memory.add_range(0x10'0010, 0x10000);
    EXPECT_EQ(memory.allocate(16), std::optional<std::uint64_t>{0x10'1000});
    EXPECT_EQ(memory.allocate(16, 1), std::optional<std::uint64_t>{0x10'0010});
    EXPECT_EQ(memory.allocate(1, 8), std::optional<std::uint64_t>{0x10'0020});
    EXPECT_EQ(memory.allocate(1, 64), std::optional<std::uint64_t>{0x10'0040});
    EXPECT_EQ(memory.allocate(0x1000, 0x2000), std::optional<std::uint64_t>{0x10'2000});
}

TEST(flat_memory, allocate_rejects_a_zero_size_or_a_bad_alignment)
{
    flat_memory memory;
    memory.add_range(0, 0x1000);
    EXPECT_THROW(static_cast<void>(memory.allocate(0)), std::invalid_argument);
    EXPECT_THROW(static_cast<void>(memory.allocate(8, 0)), std::invalid_argument);
    EXPECT_THROW(static_cast<void>(memory.allocate(8, 24)), std::invalid_argument);
}

TEST(flat_memory, allocate_returns_nullopt_when_memory_is_exhausted)
{
    flat_memory memory;
    EXPECT_EQ(memory.allocate(1), std::nullopt);
    memory.add_range(0x1000, 0x2000);
    EXPECT_EQ(memory.allocate(0x2001), std::nullopt);
    EXPECT_EQ(memory.allocate(0x1000), std::optional<std::uint64_t>{0x1000});
    EXPECT_EQ(memory.allocate(0x1000), std::optional<std::uint64_t>{0x2000});
    EXPECT_EQ(memory.allocate(1, 1), std::nullopt);
}

TEST(flat_memory, allocate_moves_to_the_next_range_when_one_is_full)
{
    flat_memory memory;
    memory.add_range(0x8000, 0x1000);
    memory.add_range(0x1000, 0x1000);
    EXPECT_EQ(memory.allocate(0x800), std::optional<std::uint64_t>{0x1000});
    EXPECT_EQ(memory.allocate(0x900), std::optional<std::uint64_t>{0x8000});
    EXPECT_EQ(memory.allocate(0x800, 1), std::optional<std::uint64_t>{0x1800});
    EXPECT_EQ(memory.allocate(0x700, 1), std::optional<std::uint64_t>{0x8900});
    EXPECT_EQ(memory.allocate(1, 1), std::nullopt);
}

TEST(flat_memory, an_allocation_never_spans_two_adjacent_ranges)
{
    flat_memory memory;
    memory.add_range(0x1000, 0x1000);
    memory.add_range(0x2000, 0x1000);
    EXPECT_EQ(memory.allocate(0x1800), std::nullopt);
    EXPECT_EQ(memory.allocate(0x800, 1), std::optional<std::uint64_t>{0x1000});
    EXPECT_EQ(memory.allocate(0x1000, 1), std::optional<std::uint64_t>{0x2000});
}

TEST(flat_memory, allocate_reuses_memory_after_deallocate)
{
    flat_memory memory;
    memory.add_range(0x1000, 0x3000);
    const auto first = memory.allocate(0x1000);
    const auto second = memory.allocate(0x1000);
    const auto third = memory.allocate(0x1000);
    ASSERT_EQ(first, std::optional<std::uint64_t>{0x1000});
    ASSERT_EQ(second, std::optional<std::uint64_t>{0x2000});
    ASSERT_EQ(third, std::optional<std::uint64_t>{0x3000});
    EXPECT_EQ(memory.allocate(1), std::nullopt);
    memory.deallocate(*second);
    EXPECT_EQ(memory.allocate(0x1001), std::nullopt);
    EXPECT_EQ(memory.allocate(0x800), std::optional<std::uint64_t>{0x2000});
    EXPECT_EQ(memory.allocate(0x800, 0x800), std::optional<std::uint64_t>{0x2800});
    memory.deallocate(*first);
    memory.deallocate(*third);
    EXPECT_EQ(memory.allocate(0x1000), std::optional<std::uint64_t>{0x1000});
    EXPECT_EQ(memory.allocate(0x1000), std::optional<std::uint64_t>{0x3000});
}

TEST(flat_memory, deallocate_rejects_addresses_that_start_no_live_allocation)
{
    flat_memory memory;
    memory.add_range(0x1000, 0x2000);
    EXPECT_THROW(memory.deallocate(0x1000), std::invalid_argument);
    const auto address = memory.allocate(0x100);
    ASSERT_EQ(address, std::optional<std::uint64_t>{0x1000});
    EXPECT_THROW(memory.deallocate(0x1008), std::invalid_argument);
    EXPECT_THROW(memory.deallocate(0x0), std::invalid_argument);
    EXPECT_THROW(memory.deallocate(0x9000), std::invalid_argument);
    memory.deallocate(0x1000);
    EXPECT_THROW(memory.deallocate(0x1000), std::invalid_argument);
}

TEST(flat_memory, allocate_works_at_the_top_of_the_address_space)
{
    flat_memory memory;
    memory.add_range(max64 - 0x1fff, 0x2000);
    EXPECT_EQ(memory.allocate(0x1000), std::optional<std::uint64_t>{max64 - 0x1fff});
    EXPECT_EQ(memory.allocate(0x1000), std::optional<std::uint64_t>{max64 - 0xfff});
    EXPECT_EQ(memory.allocate(1, 1), std::nullopt);
    memory.deallocate(max64 - 0xfff);
    EXPECT_EQ(memory.allocate(0x10, 0x10), std::optional<std::uint64_t>{max64 - 0xfff});
    EXPECT_EQ(memory.allocate(0x10, std::size_t{1} << 63), std::nullopt);
}

TEST(flat_memory, live_allocations_never_overlap)
{
    flat_memory memory;
    memory.add_range(0x10000, 0x4000);
    memory.add_range(0x20000, 0x1000);
    struct block {
        std::uint64_t address;
        std::size_t size;
    };
    std::vector<block> live;
    std::uint64_t state = 12345;
    const auto next = [&state] {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        return state >> 33;
    };
    for (int step = 0; step < 2000; ++step) {
        if (!live.empty() && next() % 3 == 0) {
            const auto index = static_cast<std::size_t>(next() % live.size());
            memory.deallocate(live[index].address);
            live.erase(live.begin() + static_cast<std::ptrdiff_t>(index));
            continue;
        }
        const std::size_t size = 1 + next() % 0x300;
        const std::size_t alignment = std::size_t{1} << (next() % 9);
        const auto address = memory.allocate(size, alignment);
        if (!address) {
            continue;
        }
        ASSERT_EQ(*address % alignment, 0U);
        const bool in_low = *address >= 0x10000 && *address + size <= 0x14000;
        const bool in_high = *address >= 0x20000 && *address + size <= 0x21000;
        ASSERT_TRUE(in_low || in_high);
        for (const auto& other : live) {
            ASSERT_TRUE(*address + size <= other.address || other.address + other.size <= *address)
                << "step " << step;
        }
        live.push_back({*address, size});
    }
    EXPECT_FALSE(live.empty());
}

// ---- synchronized mode, copies and moves -------------------------------------------------------
// The threads that share a synchronized memory are in threaded_providers_test.cpp.

TEST(flat_memory, is_unsynchronized_until_asked)
{
    flat_memory memory;
    EXPECT_FALSE(memory.synchronized());
    memory.set_synchronized(true);
    EXPECT_TRUE(memory.synchronized());
    memory.set_synchronized(true);
    EXPECT_TRUE(memory.synchronized());
    memory.set_synchronized(false);
    EXPECT_FALSE(memory.synchronized());
}

TEST(flat_memory, synchronized_memory_maps_nothing_but_reads_and_writes_as_before)
{
    flat_memory memory;
    const auto range = memory.add_range(0x2000, 0x100);
    memory.set_synchronized(true);
    EXPECT_TRUE(memory.map(0x2010, 0x20).empty());
    EXPECT_TRUE(memory.map(0x2000, 0x100).empty());

    const auto source = pattern(0x20);
    EXPECT_EQ(memory.write(0x2010, source), std::error_code{});
    std::vector<std::byte> destination(0x20);
    EXPECT_EQ(memory.read(0x2010, destination), std::error_code{});
    EXPECT_EQ(destination, source);
    EXPECT_TRUE(std::equal(source.begin(), source.end(), range.begin() + 0x10));
    EXPECT_EQ(memory.write(0x20f0, pattern(0x11)), make_error_code(errc::dma_unmapped));
    EXPECT_EQ(memory.read(max64, destination), make_error_code(errc::dma_out_of_range));

    memory.store(0x2040, std::uint32_t{0xa1b2c3d4});
    EXPECT_EQ(memory.load<std::uint32_t>(0x2040), 0xa1b2c3d4U);
    EXPECT_EQ(memory.bytes(0x2040, 1)[0], std::byte{0xd4});
    EXPECT_THROW(memory.store(0x20fd, std::uint32_t{1}), std::out_of_range);
    EXPECT_THROW(static_cast<void>(memory.load<std::uint32_t>(0x20fd)), std::out_of_range);
    EXPECT_THROW(static_cast<void>(memory.bytes(0x20ff, 2)), std::out_of_range);
    EXPECT_THROW(memory.add_range(0x2080, 1), std::invalid_argument);

    // Turned off again, it maps as before.
    memory.set_synchronized(false);
    EXPECT_EQ(memory.map(0x2010, 0x20).data(), range.data() + 0x10);
}

TEST(flat_memory, synchronized_memory_allocates_as_before)
{
    flat_memory memory;
    memory.add_range(0x10000, 0x2000);
    memory.set_synchronized(true);
    const auto first = memory.allocate(0x1000);
    const auto second = memory.allocate(0x1000);
    ASSERT_TRUE(first && second);
    EXPECT_EQ(*first, 0x10000U);
    EXPECT_EQ(*second, 0x11000U);
    EXPECT_FALSE(memory.allocate(1).has_value());
    memory.deallocate(*first);
    EXPECT_THROW(memory.deallocate(*first), std::invalid_argument);
    EXPECT_EQ(memory.allocate(0x800), first);
    EXPECT_THROW(static_cast<void>(memory.allocate(0)), std::invalid_argument);
    EXPECT_THROW(static_cast<void>(memory.allocate(8, 3)), std::invalid_argument);
}

TEST(flat_memory, a_copy_has_its_own_bytes_and_allocations_and_keeps_the_mode)
{
    flat_memory memory;
    memory.add_range(0x1000, 0x1000);
    memory.store(0x1000, std::uint32_t{1}); // the lookup cache now names this range
    const auto allocated = memory.allocate(0x100);
    memory.set_synchronized(true);

    flat_memory copy{memory};
    EXPECT_TRUE(copy.synchronized());
    EXPECT_EQ(copy.load<std::uint32_t>(0x1000), 1U);
    copy.store(0x1000, std::uint32_t{2});
    std::array<std::byte, 4> written{std::byte{3}, std::byte{3}, std::byte{3}, std::byte{3}};
    EXPECT_EQ(copy.write(0x1004, written), std::error_code{});
    EXPECT_EQ(memory.load<std::uint32_t>(0x1000), 1U);
    EXPECT_EQ(memory.load<std::uint32_t>(0x1004), 0U);
    EXPECT_EQ(copy.load<std::uint32_t>(0x1000), 2U);
    // The allocation was copied: freeing it in the copy leaves the original's.
    copy.deallocate(*allocated);
    EXPECT_THROW(copy.deallocate(*allocated), std::invalid_argument);
    EXPECT_NO_THROW(memory.deallocate(*allocated));

    flat_memory assigned;
    assigned.add_range(0x9000, 0x10);
    assigned = memory;
    EXPECT_TRUE(assigned.synchronized());
    EXPECT_EQ(assigned.load<std::uint32_t>(0x1000), 1U);
    EXPECT_THROW(static_cast<void>(assigned.load<std::uint8_t>(0x9000)), std::out_of_range);
    assigned.store(0x1000, std::uint32_t{4});
    EXPECT_EQ(memory.load<std::uint32_t>(0x1000), 1U);

    memory.set_synchronized(false);
    const flat_memory unsynchronized_copy{memory};
    EXPECT_FALSE(unsynchronized_copy.synchronized());
}

TEST(flat_memory, a_move_takes_the_ranges_and_the_mode_and_leaves_an_empty_memory)
{
    flat_memory memory;
    const auto range = memory.add_range(0x1000, 0x100);
    memory.store(0x1000, std::uint32_t{7}); // the lookup cache now names this range
    memory.set_synchronized(true);

    flat_memory moved{std::move(memory)};
    EXPECT_TRUE(moved.synchronized());
    EXPECT_EQ(moved.load<std::uint32_t>(0x1000), 7U);
    EXPECT_EQ(moved.bytes(0x1000, 4).data(), range.data()); // the bytes themselves moved
    // NOLINTBEGIN(bugprone-use-after-move): the moved-from state is specified
    EXPECT_FALSE(memory.synchronized());
    EXPECT_THROW(static_cast<void>(memory.load<std::uint32_t>(0x1000)), std::out_of_range);
    std::array<std::byte, 4> destination{};
    EXPECT_EQ(memory.read(0x1000, destination), make_error_code(errc::dma_unmapped));
    memory.add_range(0x1000, 0x10); // usable again
    EXPECT_EQ(memory.load<std::uint32_t>(0x1000), 0U);

    flat_memory assigned;
    assigned = std::move(moved);
    EXPECT_TRUE(assigned.synchronized());
    EXPECT_EQ(assigned.load<std::uint32_t>(0x1000), 7U);
    EXPECT_FALSE(moved.synchronized());
    EXPECT_EQ(moved.read(0x1000, destination), make_error_code(errc::dma_unmapped));
    // NOLINTEND(bugprone-use-after-move)
}
