#include <nvmekit/controller.hpp>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

#include <nvmekit/backends/ram_backend.hpp>

#include "controller_fixture.hpp"

/// Poll groups of the controller: which group each I/O queue lands in, that a group's doorbells
/// and commands are processed by that group alone, and the groups' counters. (The whole controller
/// suite also runs with 2 and 4 groups: NVMEKIT_TEST_POLL_GROUPS in the test fixture.)

namespace {
namespace controller_poll_groups_test {

namespace spec = nvmekit::spec;
using namespace nvmekit_test;

constexpr std::uint64_t capacity = std::uint64_t{1} << 20;

/// A rig with `groups` poll groups and one RAM namespace.
struct groups_rig : rig {
    explicit groups_rig(std::uint16_t groups, nvmekit::controller_config config = {})
        : rig{[&] {
            config.poll_groups = groups;
            return config;
        }()}
    {
        subsystem.add_namespace(nvmekit::ram_backend{capacity});
    }

    /// A Read of one block at `lba` into a new buffer, on SQ `qid`, written and rung but not run.
    std::uint16_t submit_read(std::uint16_t qid, std::uint64_t lba)
    {
        auto sqe = host_type::lba_command<spec::read_view>(spec::nvm_opcode::read, 1, lba, 1);
        sqe.dptr.prp1 = host.allocate(512);
        return host.submit(qid, sqe);
    }
};

TEST(controller_poll_groups, io_queue_pairs_are_spread_round_robin)
{
    groups_rig r{4};
    r.host.bring_up({.io_queue_pairs = 8});
    EXPECT_EQ(r.ctrl.poll_group_count(), 4U);
    for (std::uint16_t qid = 1; qid <= 8; ++qid) {
        const auto expected = static_cast<std::uint16_t>((qid - 1U) % 4U);
        EXPECT_EQ(r.ctrl.completion_queue_group(qid), expected) << qid;
        EXPECT_EQ(r.ctrl.submission_queue_group(qid), expected) << qid;
    }
    EXPECT_EQ(r.ctrl.completion_queue_group(0), std::nullopt); // the admin queue is no group's
    EXPECT_EQ(r.ctrl.completion_queue_group(9), std::nullopt);
    // A controller reset starts the rotation again.
    r.host.bring_up({.io_queue_pairs = 3});
    EXPECT_EQ(r.ctrl.completion_queue_group(1), 0U);
    EXPECT_EQ(r.ctrl.completion_queue_group(3), 2U);
}

TEST(controller_poll_groups, an_embedder_places_queues_by_interrupt_vector)
{
    // Vectors 1-4 (the host uses vector = QID); odd vectors on group 0, even ones on group 1, and
    // a result past the last group is taken modulo the number of groups.
    groups_rig r{2, {.queue_placement = [](std::uint16_t, std::uint16_t vector) {
                     return static_cast<std::uint16_t>(vector % 2 == 1 ? 2 : 1);
                 }}};
    r.host.bring_up({.io_queue_pairs = 4});
    EXPECT_EQ(r.ctrl.completion_queue_group(1), 0U);
    EXPECT_EQ(r.ctrl.completion_queue_group(2), 1U);
    EXPECT_EQ(r.ctrl.completion_queue_group(3), 0U);
    EXPECT_EQ(r.ctrl.completion_queue_group(4), 1U);
}

TEST(controller_poll_groups, a_submission_queue_follows_its_completion_queue)
{
    groups_rig r{2};
    r.host.bring_up({.io_queue_pairs = 2}); // CQ/SQ 1 on group 0, CQ/SQ 2 on group 1
    ASSERT_TRUE(r.host.delete_io_sq(1).ok());
    ASSERT_TRUE(r.host.create_io_sq(1, 2, 64).ok()); // SQ 1 now completes to CQ 2
    EXPECT_EQ(r.ctrl.submission_queue_group(1), 1U);
    r.submit_read(1, 0);
    EXPECT_EQ(r.ctrl.poll_group(0), 0U);
    EXPECT_EQ(r.ctrl.poll_group(1), 1U);
}

TEST(controller_poll_groups, a_group_runs_only_its_own_queues)
{
    groups_rig r{2};
    r.host.bring_up({.io_queue_pairs = 2});
    r.submit_read(1, 0); // group 0
    r.submit_read(2, 1); // group 1
    r.submit_read(2, 2);
    const auto cq1 = r.cqe_at(1, 0);
    EXPECT_EQ(r.ctrl.poll_group(1), 2U);
    EXPECT_TRUE(r.cqe_at(2, 0).phase());
    EXPECT_TRUE(r.cqe_at(2, 1).phase());
    EXPECT_EQ(r.cqe_at(1, 0), cq1) << "group 1 posted to group 0's CQ";
    EXPECT_FALSE(r.cqe_at(1, 0).phase());
    EXPECT_EQ(r.ctrl.poll_group(0), 1U);
    EXPECT_TRUE(r.cqe_at(1, 0).phase());
    EXPECT_TRUE(r.cqe_at(1, 0).status().is_success());
    EXPECT_EQ(r.ctrl.group_statistics(0).commands, 1U);
    EXPECT_EQ(r.ctrl.group_statistics(1).commands, 2U);
}

TEST(controller_poll_groups, counters_add_up_per_group)
{
    groups_rig r{4};
    r.host.bring_up({.io_queue_pairs = 4});
    // Queue q gets q reads of one block.
    std::uint64_t expected_commands = 0;
    for (std::uint16_t qid = 1; qid <= 4; ++qid) {
        for (std::uint16_t i = 0; i < qid; ++i) {
            auto sqe = host_type::lba_command<spec::read_view>(spec::nvm_opcode::read, 1, i, 1);
            sqe.dptr.prp1 = r.host.allocate(512);
            ASSERT_TRUE(r.host.io(qid, sqe).ok());
            ++expected_commands;
        }
    }
    std::uint64_t commands = 0;
    for (std::uint16_t group = 0; group < 4; ++group) {
        const auto counters = r.ctrl.group_statistics(group);
        EXPECT_EQ(counters.commands, group + 1U) << group;
        EXPECT_EQ(counters.bytes, (group + 1U) * 512U) << group;
        EXPECT_EQ(counters.polls, counters.busy_polls + counters.idle_polls);
        EXPECT_EQ(counters.busy_polls, group + 1U); // one command per poll: the host waits for each
        commands += counters.commands;
    }
    EXPECT_EQ(commands, expected_commands);
}

TEST(controller_poll_groups, the_group_count_is_checked)
{
    host_memory memory;
    nvmekit::testing::recording_msix msix;
    nvmekit::testing::manual_clock clock;
    using controller_type = nvmekit::controller<test_traits>;
    EXPECT_THROW((controller_type{memory, msix, clock, {.poll_groups = 0}}), std::invalid_argument);
    EXPECT_THROW((controller_type{memory, msix, clock, {.poll_groups = test_traits::limits.io_queues + 1U}}),
                 std::invalid_argument);
    EXPECT_NO_THROW((controller_type{memory, msix, clock, {.poll_groups = test_traits::limits.io_queues}}));
}

} // namespace controller_poll_groups_test
} // namespace
