#include <nvmekit/transport/tcp/command_buffers.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include <gtest/gtest.h>

namespace {
namespace transport_tcp_command_buffers_test {

using nvmekit::transport::tcp::buffer_budget;
using nvmekit::transport::tcp::command_buffers;

TEST(command_buffers, a_buffer_is_host_memory_at_its_address)
{
    command_buffers buffers;
    const auto id = buffers.acquire(4096);
    const std::uint64_t address = buffers.address(id);
    EXPECT_NE(address, 0U);
    const std::vector<std::byte> data(100, std::byte{0x5a});
    EXPECT_FALSE(buffers.write(address + 10, data));
    std::vector<std::byte> back(100);
    EXPECT_FALSE(buffers.read(address + 10, back));
    EXPECT_EQ(back, data);
    EXPECT_EQ(buffers.bytes(id)[10], std::byte{0x5a});
    const auto mapped = buffers.map(address, 4096);
    EXPECT_EQ(mapped.data(), buffers.bytes(id).data());
    EXPECT_EQ(mapped.size(), 4096U);
}

TEST(command_buffers, nothing_outside_a_buffer_resolves)
{
    command_buffers buffers;
    const auto id = buffers.acquire(512);
    const std::uint64_t address = buffers.address(id);
    std::vector<std::byte> out(16);
    EXPECT_TRUE(buffers.read(address + 500, out)); // runs past the end
    EXPECT_TRUE(buffers.read(0, out));
    EXPECT_TRUE(buffers.read(address + (std::uint64_t{7} << 40), out)); // no such buffer
    EXPECT_TRUE(buffers.map(address, 513).empty());
    EXPECT_FALSE(buffers.read(address + 496, out));
}

TEST(command_buffers, a_released_buffer_stops_resolving_even_when_reused)
{
    command_buffers buffers;
    const auto first = buffers.acquire(4096);
    const std::uint64_t old_address = buffers.address(first);
    buffers.release(first);
    std::vector<std::byte> out(8);
    EXPECT_TRUE(buffers.read(old_address, out));
    const auto second = buffers.acquire(1024);
    EXPECT_EQ(second, first);                        // the storage is reused ...
    EXPECT_NE(buffers.address(second), old_address); // ... under another address
    EXPECT_TRUE(buffers.write(old_address, out));
    EXPECT_FALSE(buffers.write(buffers.address(second), out));
    EXPECT_EQ(buffers.in_use(), 1U);
}

TEST(command_buffers, transferred_is_the_end_of_the_furthest_byte_reached_since_acquired)
{
    command_buffers buffers;
    const auto id = buffers.acquire(4096);
    const std::uint64_t address = buffers.address(id);
    EXPECT_EQ(buffers.transferred(id), 0U);
    // Bytes reached directly (the target receiving data) do not count.
    buffers.bytes(id)[4000] = std::byte{1};
    EXPECT_EQ(buffers.transferred(id), 0U);
    std::vector<std::byte> data(512, std::byte{0x5a});
    EXPECT_FALSE(buffers.write(address + 512, data));
    EXPECT_EQ(buffers.transferred(id), 1024U);
    EXPECT_FALSE(buffers.write(address, data)); // an earlier range moves nothing
    EXPECT_EQ(buffers.transferred(id), 1024U);
    std::vector<std::byte> back(16);
    EXPECT_FALSE(buffers.read(address + 1500, back));
    EXPECT_EQ(buffers.transferred(id), 1516U);
    EXPECT_EQ(buffers.map(address + 2000, 48).size(), 48U);
    EXPECT_EQ(buffers.transferred(id), 2048U);
    // Accesses refused, and empty ones, move nothing.
    EXPECT_TRUE(buffers.read(address + 4090, back));
    EXPECT_FALSE(buffers.read(address + 4000, std::span<std::byte>{}));
    EXPECT_EQ(buffers.transferred(id), 2048U);
    buffers.note_transferred(id, 3000);
    EXPECT_EQ(buffers.transferred(id), 3000U);
    buffers.note_transferred(id, 100);
    EXPECT_EQ(buffers.transferred(id), 3000U);

    // Reuse starts again from 0, and a stale address moves nothing.
    buffers.release(id);
    const auto reused = buffers.acquire(4096);
    ASSERT_EQ(reused, id);
    EXPECT_EQ(buffers.transferred(reused), 0U);
    EXPECT_TRUE(buffers.write(address, data));
    EXPECT_EQ(buffers.transferred(reused), 0U);
    EXPECT_FALSE(buffers.read(buffers.address(reused) + 4080, back));
    EXPECT_EQ(buffers.transferred(reused), 4096U);
}

TEST(command_buffers, partitions_keep_their_buffers_apart)
{
    command_buffers buffers;
    buffers.prepare(3);
    const auto zero = buffers.acquire(512);
    const auto three = buffers.acquire(512, 3);
    EXPECT_NE(buffers.address(zero), buffers.address(three));
    std::vector<std::byte> data(512, std::byte{0x5a});
    EXPECT_FALSE(buffers.write(buffers.address(three), data));
    EXPECT_EQ(buffers.bytes(three)[511], std::byte{0x5a});
    EXPECT_NE(buffers.bytes(zero)[0], std::byte{0x5a});
    EXPECT_EQ(buffers.in_use(), 2U);
    // A partition not prepared resolves nothing; a released buffer of partition 3 goes back to it
    EXPECT_TRUE(buffers.read(buffers.address(three) + (std::uint64_t{1} << 56), data));
    buffers.release(three);
    EXPECT_EQ(buffers.acquire(64, 3), three);
    EXPECT_EQ(buffers.in_use(), 2U);
}

TEST(command_buffers, try_acquire_takes_storage_only_within_the_budget)
{
    buffer_budget budget{8192};
    command_buffers buffers{&budget};
    const auto first = buffers.try_acquire(4096);
    const auto second = buffers.try_acquire(4096);
    ASSERT_TRUE(first && second);
    EXPECT_FALSE(buffers.try_acquire(4096)); // 12 KiB would not fit
    EXPECT_EQ(budget.used(), 8192U);
    // A released buffer's storage is reused without taking more ...
    buffers.release(*first);
    const auto third = buffers.try_acquire(2048);
    ASSERT_TRUE(third);
    EXPECT_EQ(budget.used(), 8192U);
    // ... and storage kept for reuse is given back when a larger buffer needs the room.
    buffers.release(*second);
    buffers.release(*third);
    const auto large = buffers.try_acquire(8192);
    ASSERT_TRUE(large);
    EXPECT_EQ(budget.used(), 8192U);
    EXPECT_EQ(buffers.storage_bytes(0), 8192U);
    EXPECT_EQ(budget.peak(), 8192U);
}

TEST(command_buffers, a_buffer_beyond_the_budget_is_taken_only_while_nothing_else_is)
{
    buffer_budget budget{4096};
    command_buffers buffers{&budget};
    const auto alone = buffers.try_acquire(16384);
    ASSERT_TRUE(alone);
    EXPECT_FALSE(buffers.try_acquire(512));
    // acquire() takes storage whatever the budget (in-capsule data), and counts it.
    const auto forced = buffers.acquire(512);
    EXPECT_EQ(budget.used(), 16384U + 512U);
    buffers.release(*alone);
    buffers.release(forced);
    EXPECT_EQ(buffers.trim(), 16384U + 512U);
    EXPECT_EQ(budget.used(), 0U);
}

TEST(command_buffers, a_parent_budget_bounds_its_children_together)
{
    buffer_budget target{8192};
    buffer_budget first_budget{8192, &target};
    buffer_budget second_budget{8192, &target};
    command_buffers first{&first_budget};
    command_buffers second{&second_budget};
    const auto held = first.try_acquire(6144);
    ASSERT_TRUE(held);
    EXPECT_FALSE(second.try_acquire(4096)); // the parent's limit
    EXPECT_EQ(second_budget.used(), 0U);
    EXPECT_EQ(target.used(), 6144U);
    // The storage the first keeps after its command goes back once it sees the shortage.
    first.release(*held);
    EXPECT_EQ(target.used(), 6144U);
    EXPECT_EQ(first.trim_if_short(0), 6144U);
    EXPECT_EQ(first.trim_if_short(0), 0U); // (once per shortage)
    EXPECT_TRUE(second.try_acquire(4096));
    EXPECT_EQ(target.used(), 4096U);
}

TEST(command_buffers, trim_gives_back_the_storage_of_free_buffers_only)
{
    buffer_budget budget;
    command_buffers buffers{&budget};
    const auto kept = buffers.acquire(4096);
    const auto freed = buffers.acquire(4096);
    const std::uint64_t old_address = buffers.address(freed);
    buffers.release(freed);
    EXPECT_EQ(buffers.storage_bytes(0), 8192U);
    EXPECT_EQ(buffers.trim(), 4096U);
    EXPECT_EQ(buffers.storage_bytes(0), 4096U);
    EXPECT_EQ(budget.used(), 4096U);
    std::vector<std::byte> out(16);
    EXPECT_TRUE(buffers.read(old_address, out));            // the trimmed buffer resolves no more
    EXPECT_FALSE(buffers.read(buffers.address(kept), out)); // the one in use is untouched
    EXPECT_EQ(buffers.in_use(), 1U);
    // A buffer taken again in the trimmed slot has a new address and fresh storage.
    const auto again = buffers.acquire(4096);
    EXPECT_NE(buffers.address(again), old_address);
    EXPECT_EQ(buffers.bytes(again).size(), 4096U);
}

} // namespace transport_tcp_command_buffers_test
} // namespace
