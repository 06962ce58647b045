#include <nvmekit/runtime/poll_group_state.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <type_traits>

namespace {
namespace poll_group_state_test {

struct test_command {
    nvmekit::detail::list_hook held_hook;
    nvmekit::detail::list_hook wait_hook;
};

template <bool Concurrent>
using group_state = nvmekit::detail::poll_group_state<test_command, Concurrent>;

static_assert(std::is_same_v<group_state<false>::counter, nvmekit::detail::plain_counter>,
              "a single-threaded group counts in plain integers");
static_assert(std::is_same_v<group_state<true>::counter, nvmekit::detail::owned_counter>,
              "a concurrent group's counters are read by other threads");

template <typename Counter>
void expect_counts()
{
    Counter counter;
    EXPECT_EQ(counter.load(), 0U);
    ++counter;
    counter += 5;
    counter.add(10);
    --counter;
    counter.subtract(3);
    EXPECT_EQ(counter.load(), 12U);
}

TEST(poll_group_state, counters_count)
{
    expect_counts<nvmekit::detail::plain_counter>();
    expect_counts<nvmekit::detail::owned_counter>();
}

TEST(poll_group_state, a_new_group_is_stopped_with_room_for_every_queue)
{
    const group_state<false> group{16, 8, 32, 4};
    EXPECT_TRUE(group.stopped) << "a group runs commands only once the controller is ready";
    EXPECT_GE(group.submission_queues.capacity(), 16U);
    EXPECT_GE(group.completion_queues.capacity(), 16U);
    EXPECT_EQ(group.fetch_buffer.size(), 8U);
    EXPECT_EQ(group.scratch_ranges.size(), 32U);
    EXPECT_EQ(group.scratch_metadata_ranges.size(), 16U);
    EXPECT_EQ(group.interrupts.coalescer().vectors(), 4U);
    EXPECT_FALSE(group.interrupts.due(3));
    EXPECT_EQ(group.free_staging, nullptr);
    EXPECT_TRUE(group.waiting_for_staging.empty());
    EXPECT_EQ(group.io_outstanding.load(), 0U);
}

} // namespace poll_group_state_test
} // namespace
