#include <nvmekit/runtime/group_coordination.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>

#include <gtest/gtest.h>

namespace {
namespace group_coordination_test {

using nvmekit::block_request;
using nvmekit::block_status;
using nvmekit::routed_completion;

/// What group_coordination reads and writes of a context (detail::poll_group_state has them).
struct fake_group {
    struct fake_runner {
        int notified = 0;
        void notify() { ++notified; }
    };
    explicit fake_group(int id_) : id{id_} {}
    int id;
    nvmekit::completion_inbox routed;
    std::uint64_t dma_errors = 0;
    bool stopped = true;
    std::atomic<bool> in_poll{false};
    std::atomic<bool> pause_requested{false};
    std::unique_ptr<fake_runner> runner;
};

using concurrent_coordination = nvmekit::detail::group_coordination<fake_group, true>;
using single_coordination = nvmekit::detail::group_coordination<fake_group, false>;

template <typename Coordination>
void add_groups(Coordination& coordination, int count)
{
    for (int i = 1; i <= count; ++i) {
        coordination.add_group(std::make_unique<fake_group>(i));
    }
}

int finished = 0;
void count_finish(block_request&, block_status) { ++finished; }

TEST(group_coordination, one_thread_owns_every_context)
{
    single_coordination coordination{0};
    add_groups(coordination, 2);
    coordination.set_concurrent(true); // ignored: the policy does not allow it
    EXPECT_FALSE(coordination.concurrent());
    EXPECT_TRUE(coordination.owns(coordination.group(0)));
    EXPECT_TRUE(coordination.owns(coordination.admin()));
    routed_completion node{};
    block_request request{};
    EXPECT_FALSE(
        coordination.route(coordination.group(1), node, request, block_status::success, &count_finish));
}

TEST(group_coordination, a_completion_on_another_thread_is_routed_to_its_group)
{
    concurrent_coordination coordination{0};
    add_groups(coordination, 2);
    coordination.set_concurrent(true);
    coordination.pause();
    coordination.resume([] { return false; }); // the controller is ready: groups run on their threads
    auto& group = coordination.group(0);
    group.runner = std::make_unique<fake_group::fake_runner>();
    routed_completion node{};
    block_request request{};
    finished = 0;
    {
        const concurrent_coordination::scope on_other{coordination.group(1)};
        EXPECT_FALSE(coordination.owns(group));
        EXPECT_TRUE(coordination.route(group, node, request, block_status::success, &count_finish));
    }
    EXPECT_EQ(group.runner->notified, 1);
    EXPECT_EQ(finished, 0);
    {
        const concurrent_coordination::scope on_group{group};
        EXPECT_TRUE(coordination.owns(group));
        concurrent_coordination::take_routed(group);
    }
    EXPECT_EQ(finished, 1);
}

TEST(group_coordination, the_admin_context_owns_groups_only_while_paused_or_stopped)
{
    concurrent_coordination coordination{0};
    add_groups(coordination, 1);
    coordination.set_concurrent(true);
    const concurrent_coordination::scope on_admin{coordination.admin()};
    EXPECT_TRUE(coordination.paused_or_stopped()); // stopped until the first resume says otherwise
    EXPECT_TRUE(coordination.owns(coordination.group(0)));
    coordination.pause();
    coordination.resume([] { return false; }); // the controller became ready
    EXPECT_FALSE(coordination.paused_or_stopped());
    EXPECT_FALSE(coordination.owns(coordination.group(0)));
    EXPECT_FALSE(coordination.group(0).stopped);
    coordination.pause();
    EXPECT_TRUE(coordination.owns(coordination.group(0)));
    coordination.pause(); // nested
    coordination.resume([] {
        ADD_FAILURE() << "only the outermost resume decides";
        return true;
    });
    EXPECT_TRUE(coordination.paused_or_stopped());
    coordination.resume([] { return true; }); // reset: stopped
    EXPECT_TRUE(coordination.owns(coordination.group(0)));
    EXPECT_TRUE(coordination.group(0).stopped);
    EXPECT_TRUE(coordination.admin().stopped);
}

TEST(group_coordination, a_pause_waits_for_a_group_inside_a_poll)
{
    concurrent_coordination coordination{0};
    add_groups(coordination, 1);
    coordination.set_concurrent(true);
    coordination.pause();
    coordination.resume([] { return false; });
    auto& group = coordination.group(0);
    ASSERT_TRUE(concurrent_coordination::enter_poll(group));
    std::atomic<bool> paused{false};
    std::thread admin{[&] {
        coordination.pause();
        paused = true;
    }};
    std::this_thread::sleep_for(std::chrono::milliseconds{20});
    EXPECT_FALSE(paused.load()) << "the admin context went on while the group polled";
    concurrent_coordination::leave_poll(group);
    admin.join();
    EXPECT_TRUE(paused.load());
    EXPECT_FALSE(concurrent_coordination::enter_poll(group)) << "a paused group must not start a poll";
    coordination.resume([] { return false; });
    EXPECT_TRUE(concurrent_coordination::enter_poll(group));
    concurrent_coordination::leave_poll(group);
}

TEST(group_coordination, a_fatal_error_stops_its_group_until_taken)
{
    concurrent_coordination coordination{0};
    add_groups(coordination, 2);
    EXPECT_FALSE(coordination.fatal_pending());
    coordination.group(1).stopped = false;
    coordination.raise_fatal(coordination.group(1));
    EXPECT_TRUE(coordination.group(1).stopped);
    EXPECT_EQ(coordination.group(1).dma_errors, 1U);
    EXPECT_TRUE(coordination.fatal_pending());
    EXPECT_TRUE(coordination.take_fatal());
    EXPECT_FALSE(coordination.take_fatal());
}

} // namespace group_coordination_test
} // namespace
