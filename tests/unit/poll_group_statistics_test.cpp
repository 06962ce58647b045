#include <nvmekit/runtime/poll_group_statistics.hpp>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <gtest/gtest.h>

#include "thread_group.hpp"

using nvmekit::poll_group_counters;
using nvmekit::poll_group_statistics;

static_assert(std::is_trivially_copyable_v<poll_group_counters>);
// One object per group, shared by address with its readers.
static_assert(!std::is_copy_constructible_v<poll_group_statistics>);

namespace {

constexpr std::array counter_members{
    &poll_group_counters::polls,  &poll_group_counters::busy_polls, &poll_group_counters::idle_polls,
    &poll_group_counters::sleeps, &poll_group_counters::wakeups,    &poll_group_counters::commands,
    &poll_group_counters::bytes,
};

bool never_decreased(const poll_group_counters& earlier, const poll_group_counters& later)
{
    for (const auto member : counter_members) {
        if (later.*member < earlier.*member) {
            return false;
        }
    }
    return true;
}

} // namespace

TEST(poll_group_statistics, starts_at_zero)
{
    const poll_group_statistics statistics;
    EXPECT_EQ(statistics.snapshot(), poll_group_counters{});
}

TEST(poll_group_counters, counters_differing_in_any_one_field_are_unequal)
{
    // Every field set, each to a value of its own, so that no field can stand in for another.
    poll_group_counters base;
    std::uint64_t value = 10;
    for (const auto member : counter_members) {
        base.*member = value++;
    }
    for (std::size_t i = 0; i < counter_members.size(); ++i) {
        const auto member = counter_members[i];
        SCOPED_TRACE(i);
        poll_group_counters changed = base;
        changed.*member += 1;
        EXPECT_NE(changed, base);
        EXPECT_NE(base, changed);
        // Equal again once that field is put back: == compares the fields and nothing else.
        poll_group_counters restored = changed;
        restored.*member = base.*member;
        EXPECT_EQ(restored, base);
        // Nor is a change of this field equal to the same change of another.
        for (std::size_t j = 0; j < counter_members.size(); ++j) {
            if (j == i) {
                continue;
            }
            poll_group_counters other = base;
            other.*counter_members[j] += 1;
            EXPECT_NE(changed, other) << "fields " << i << " and " << j;
        }
    }
}

TEST(poll_group_statistics, a_poll_is_busy_when_it_did_work_and_idle_otherwise)
{
    poll_group_statistics statistics;
    statistics.record_poll(0);
    EXPECT_EQ(statistics.snapshot(), (poll_group_counters{.polls = 1, .idle_polls = 1}));
    statistics.record_poll(1);
    statistics.record_poll(17);
    statistics.record_poll(0);
    statistics.record_poll(SIZE_MAX);
    const poll_group_counters counters = statistics.snapshot();
    EXPECT_EQ(counters, (poll_group_counters{.polls = 5, .busy_polls = 3, .idle_polls = 2}));
    EXPECT_EQ(counters.polls, counters.busy_polls + counters.idle_polls);
}

TEST(poll_group_statistics, every_sleep_counts_and_only_notified_ones_are_wakeups)
{
    poll_group_statistics statistics;
    statistics.record_sleep(false);
    statistics.record_sleep(true);
    statistics.record_sleep(false);
    statistics.record_sleep(true);
    statistics.record_sleep(true);
    EXPECT_EQ(statistics.snapshot(), (poll_group_counters{.sleeps = 5, .wakeups = 3}));
}

TEST(poll_group_statistics, commands_and_bytes_add_up)
{
    poll_group_statistics statistics;
    statistics.add_commands(3);
    statistics.add_commands(0);
    statistics.add_commands(5);
    statistics.add_bytes(4096);
    statistics.add_bytes(512);
    statistics.add_bytes(std::uint64_t{1} << 40);
    EXPECT_EQ(statistics.snapshot(),
              (poll_group_counters{.commands = 8, .bytes = (std::uint64_t{1} << 40) + 4608}));
}

TEST(poll_group_statistics, a_snapshot_is_a_copy_of_one_moment)
{
    poll_group_statistics statistics;
    statistics.record_poll(2);
    statistics.add_commands(2);
    const poll_group_counters before = statistics.snapshot();
    statistics.record_poll(0);
    statistics.add_bytes(8);
    EXPECT_EQ(before, (poll_group_counters{.polls = 1, .busy_polls = 1, .commands = 2}));
    EXPECT_EQ(statistics.snapshot(),
              (poll_group_counters{.polls = 2, .busy_polls = 1, .idle_polls = 1, .commands = 2, .bytes = 8}));
}

TEST(poll_group_statistics, a_reader_on_another_thread_never_sees_a_counter_decrease)
{
    constexpr std::uint64_t polls = 20'000;
    poll_group_statistics statistics;
    std::atomic<bool> writer_done{false};
    // The group's thread: a third of its polls are idle, every 100th poll ends in a sleep.
    const auto run_group = [&](std::size_t) {
        for (std::uint64_t poll = 0; poll < polls; ++poll) {
            const std::size_t work = poll % 3 == 0 ? 0 : 2;
            statistics.record_poll(work);
            statistics.add_commands(work);
            statistics.add_bytes(work * 4096);
            if (poll % 100 == 99) {
                statistics.record_sleep(poll % 200 == 199);
            }
        }
        writer_done.store(true, std::memory_order_release);
    };
    nvmekit_test::thread_group writer{1, run_group};

    poll_group_counters previous;
    std::size_t decreases = 0;
    while (!writer_done.load(std::memory_order_acquire)) {
        const poll_group_counters current = statistics.snapshot();
        decreases += never_decreased(previous, current) ? 0 : 1;
        previous = current;
    }
    writer.join();
    EXPECT_EQ(decreases, 0U);

    // Once the writer is joined the snapshot is exact.
    const std::uint64_t idle = (polls + 2) / 3;
    const std::uint64_t busy = polls - idle;
    EXPECT_EQ(statistics.snapshot(), (poll_group_counters{.polls = polls,
                                                          .busy_polls = busy,
                                                          .idle_polls = idle,
                                                          .sleeps = polls / 100,
                                                          .wakeups = polls / 200,
                                                          .commands = 2 * busy,
                                                          .bytes = 2 * busy * 4096}));
}
