#include <nvmekit/transport/tcp/command_buffers.hpp>

#include <cstddef>
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

namespace {
namespace transport_tcp_command_buffers_test {

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

} // namespace transport_tcp_command_buffers_test
} // namespace
