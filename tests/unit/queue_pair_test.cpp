#include <nvmekit/queues/queue_pair.hpp>

#include <gtest/gtest.h>

#include <cstdint>

namespace {
namespace queue_pair_test {

using nvmekit::queue_memory;

/// The least a command type needs to live in a queue pair's pool and lists.
struct test_command {
    nvmekit::detail::list_hook held_hook;
    nvmekit::detail::list_hook wait_hook;
    std::uint32_t id = 0;
};

using submission_queue = nvmekit::detail::submission_queue<test_command>;
using completion_queue = nvmekit::detail::completion_queue<test_command>;

TEST(queue_pair, a_submission_queue_runs_no_more_commands_than_it_has_entries)
{
    const submission_queue small{1, 1, 4, 64, queue_memory::contiguous(0x10000)};
    EXPECT_EQ(small.pool.capacity(), 4U);
    const submission_queue large{2, 1, 1024, 64, queue_memory::contiguous(0x20000)};
    EXPECT_EQ(large.pool.capacity(), 64U) << "commands_per_queue bounds the pool";
    EXPECT_EQ(large.ring.qid(), 2U);
    EXPECT_EQ(large.ring.cqid(), 1U);
    EXPECT_FALSE(large.retired);
    EXPECT_EQ(large.deleting, nullptr);
    EXPECT_FALSE(large.shadow_armed)
        << "a new queue's shadow slot is not trusted before its doorbell is written";
}

TEST(queue_pair, a_completion_queue_holds_commands_in_order_until_unlinked)
{
    completion_queue cq{1, 2, queue_memory::contiguous(0x30000), 3, true};
    EXPECT_EQ(cq.ring.interrupt_vector(), 3U);
    EXPECT_TRUE(cq.ring.interrupts_enabled());
    EXPECT_TRUE(cq.held.empty());
    EXPECT_EQ(cq.bound_submission_queues, 0U);
    test_command first;
    first.id = 1;
    test_command second;
    second.id = 2;
    cq.held.push_back(first);
    cq.held.push_back(second);
    ASSERT_EQ(cq.held.size(), 2U);
    EXPECT_EQ(cq.held.front().id, 1U);
    cq.held.pop_front();
    EXPECT_EQ(cq.held.front().id, 2U);
    cq.held.clear(); // safe-mode hooks: unlinked before the commands go away
    EXPECT_FALSE(second.held_hook.is_linked());
}

} // namespace queue_pair_test
} // namespace
