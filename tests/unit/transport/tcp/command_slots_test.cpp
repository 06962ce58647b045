#include <nvmekit/transport/tcp/command_slots.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <set>

#include <gtest/gtest.h>

namespace {
namespace transport_tcp_command_slots_test {

using nvmekit::transport::tcp::command_slots;

TEST(command_slots, a_taken_slot_is_found_by_its_cid_until_released)
{
    command_slots slots{4};
    EXPECT_EQ(slots.size(), 4U);
    EXPECT_FALSE(slots.find(7));
    const auto slot = slots.take(7);
    ASSERT_TRUE(slot);
    EXPECT_EQ(*slot, 0U);
    EXPECT_TRUE(slots.in_use(*slot));
    EXPECT_EQ(slots.find(7), slot);
    EXPECT_FALSE(slots.find(8));
    EXPECT_EQ(slots.used(), 1U);
    slots.release(*slot);
    EXPECT_FALSE(slots.find(7));
    EXPECT_FALSE(slots.in_use(*slot));
    EXPECT_EQ(slots.used(), 0U);
}

TEST(command_slots, no_slot_is_taken_when_all_are_in_use)
{
    command_slots slots{2};
    const auto first = slots.take(0xffff);
    const auto second = slots.take(0);
    ASSERT_TRUE(first && second);
    EXPECT_NE(*first, *second);
    EXPECT_FALSE(slots.take(1));
    slots.release(*first);
    EXPECT_EQ(slots.take(1), first);
    EXPECT_EQ(slots.find(0), second);
}

TEST(command_slots, reset_frees_every_slot)
{
    command_slots slots{1};
    ASSERT_TRUE(slots.take(3));
    slots.reset(3);
    EXPECT_EQ(slots.size(), 3U);
    EXPECT_EQ(slots.used(), 0U);
    EXPECT_FALSE(slots.find(3));
}

// CIDs that share buckets, taken and released in random order, against a std::map: every
// release keeps the CIDs after it reachable.
TEST(command_slots, agrees_with_a_map_through_random_takes_and_releases)
{
    for (const std::uint32_t entries : {1U, 3U, 64U, 256U}) {
        command_slots slots{entries};
        std::map<std::uint16_t, std::uint32_t> expected;
        std::mt19937 random{entries};
        for (int step = 0; step < 20000; ++step) {
            // A few CIDs in sequence, with generation bits above them as some hosts keep.
            const auto cid = static_cast<std::uint16_t>((random() % (entries * 2)) | ((random() % 4) << 12));
            if (const auto it = expected.find(cid); it != expected.end()) {
                ASSERT_EQ(slots.find(cid), it->second);
                slots.release(it->second);
                expected.erase(it);
            } else if (const auto slot = slots.take(cid)) {
                ASSERT_LT(expected.size(), entries);
                expected.emplace(cid, *slot);
            } else {
                ASSERT_EQ(expected.size(), entries);
            }
            ASSERT_EQ(slots.used(), expected.size());
        }
        std::set<std::uint32_t> used;
        for (const auto& [cid, slot] : expected) {
            EXPECT_EQ(slots.find(cid), slot);
            EXPECT_TRUE(used.insert(slot).second);
        }
    }
}

} // namespace transport_tcp_command_slots_test
} // namespace
