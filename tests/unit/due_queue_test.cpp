#include <nvmekit/runtime/due_queue.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "asserts_enabled.hpp"
#include "counting_new.hpp"
#include "splitmix64.hpp"

using namespace std::chrono_literals;
using nvmekit::detail::complete_due;
using nvmekit_test::allocation_count;
using nvmekit_test::asserts_enabled;

namespace {

using queue_type = nvmekit::detail::due_queue<int>;
constexpr std::uint64_t everything = ~std::uint64_t{0};

/// Pushes each value with its due time, in order; false once one does not fit.
bool push_all(queue_type& queue, std::initializer_list<std::pair<int, std::chrono::nanoseconds>> entries)
{
    for (const auto& [value, due] : entries) {
        if (!queue.push(value, due)) {
            return false;
        }
    }
    return true;
}

/// Pops every entry pop_due(now, before) gives, in order.
std::vector<int> drain(queue_type& queue, std::chrono::nanoseconds now, std::uint64_t before = everything)
{
    std::vector<int> taken;
    while (auto next = queue.pop_due(now, before)) {
        taken.push_back(*next);
    }
    return taken;
}

TEST(due_queue, a_new_queue_is_empty)
{
    queue_type queue{3};
    EXPECT_EQ(queue.capacity(), 3U);
    EXPECT_EQ(queue.size(), 0U);
    EXPECT_FALSE(queue.full());
    EXPECT_EQ(queue.next_sequence(), 0U);
    EXPECT_EQ(queue.next_due(), std::nullopt);
    EXPECT_EQ(queue.pop_due(std::chrono::nanoseconds::max(), everything), std::nullopt);
}

TEST(due_queue, pops_in_due_order_ties_in_push_order)
{
    queue_type queue{8};
    ASSERT_TRUE(push_all(queue, {{1, 30ns}, {2, 10ns}, {3, 20ns}, {4, 10ns}, {5, 0ns}, {6, 20ns}}));
    EXPECT_EQ(queue.size(), 6U);
    EXPECT_EQ(queue.next_due(), 0ns);
    EXPECT_EQ(drain(queue, 30ns), (std::vector<int>{5, 2, 4, 3, 6, 1}));
    EXPECT_EQ(queue.size(), 0U);
}

TEST(due_queue, leaves_entries_not_due_yet)
{
    queue_type queue{4};
    ASSERT_TRUE(push_all(queue, {{1, 15ns}, {2, 5ns}, {3, 10ns}}));
    EXPECT_EQ(drain(queue, 4ns), std::vector<int>{});
    EXPECT_EQ(drain(queue, 10ns), (std::vector<int>{2, 3}));
    EXPECT_EQ(queue.next_due(), 15ns);
    EXPECT_EQ(queue.size(), 1U);
    EXPECT_EQ(drain(queue, 15ns), std::vector<int>{1});
    EXPECT_EQ(queue.next_due(), std::nullopt);
}

TEST(due_queue, a_full_queue_refuses_without_numbering_and_serves_again_after_a_pop)
{
    queue_type queue{2};
    ASSERT_TRUE(push_all(queue, {{1, 0ns}, {2, 0ns}}));
    EXPECT_TRUE(queue.full());
    EXPECT_FALSE(queue.push(3, 0ns));
    EXPECT_EQ(queue.reserve(0ns), std::nullopt);
    EXPECT_EQ(queue.next_sequence(), 2U);
    EXPECT_EQ(queue.pop_due(0ns, everything), 1);
    EXPECT_FALSE(queue.full());
    ASSERT_TRUE(queue.push(4, 0ns));
    EXPECT_EQ(queue.next_sequence(), 3U);
    EXPECT_EQ(drain(queue, 0ns), (std::vector<int>{2, 4}));
}

TEST(due_queue, takes_only_entries_numbered_below_before)
{
    queue_type queue{8};
    ASSERT_TRUE(push_all(queue, {{1, 20ns}, {2, 10ns}}));
    const std::uint64_t before = queue.next_sequence();
    // Pushed during the poll, due earlier than the entries before it: stepped over, not taken.
    ASSERT_TRUE(push_all(queue, {{3, 0ns}, {4, 10ns}, {5, 5ns}}));
    EXPECT_EQ(drain(queue, 20ns, before), (std::vector<int>{2, 1}));
    EXPECT_EQ(queue.size(), 3U);
    EXPECT_EQ(queue.next_due(), 0ns);
    EXPECT_EQ(drain(queue, 20ns), (std::vector<int>{3, 5, 4}));
}

TEST(due_queue, a_reserved_entry_waits_for_schedule_and_keeps_its_number)
{
    queue_type queue{4};
    const auto first = queue.reserve(10ns);
    ASSERT_TRUE(first.has_value());
    queue[*first] = 1;
    ASSERT_TRUE(queue.push(2, 10ns));
    EXPECT_EQ(queue.size(), 2U);
    EXPECT_EQ(queue.next_due(), 10ns);
    EXPECT_EQ(queue.pop_due(10ns, everything), 2);
    EXPECT_EQ(queue.next_due(), std::nullopt);
    EXPECT_EQ(queue.pop_due(10ns, everything), std::nullopt);
    EXPECT_EQ(queue.size(), 1U);

    ASSERT_TRUE(queue.push(3, 10ns));
    queue.schedule(*first); // reserved before 3, so taken before it at the same due time
    EXPECT_EQ(queue.pop_due(10ns, 1), 1);
    EXPECT_EQ(drain(queue, 10ns), std::vector<int>{3});
}

TEST(due_queue, matches_a_linear_scan_over_random_pushes_and_polls)
{
    struct waiting {
        int value;
        std::chrono::nanoseconds due;
        std::uint64_t sequence;
    };
    nvmekit_test::splitmix64 random{42};
    constexpr std::size_t capacity = 37;
    queue_type queue{capacity};
    std::vector<waiting> model;
    std::uint64_t sequence = 0;
    std::chrono::nanoseconds now{0};
    int value = 0;
    const auto push_some = [&] {
        for (std::uint64_t n = random.below(6); n > 0; --n) {
            const std::chrono::nanoseconds due =
                now + std::chrono::nanoseconds{static_cast<std::int64_t>(random.below(8))} - 2ns;
            const bool pushed = queue.push(value, due);
            ASSERT_EQ(pushed, model.size() < capacity);
            if (pushed) {
                model.push_back({value, due, sequence++});
            }
            ++value;
        }
    };
    for (int round = 0; round < 2000; ++round) {
        push_some();
        now += std::chrono::nanoseconds{static_cast<std::int64_t>(random.below(3))};
        const std::uint64_t before = queue.next_sequence();
        ASSERT_EQ(before, sequence);
        push_some(); // pushed "during the poll"
        for (;;) {
            auto expected = model.end();
            for (auto candidate = model.begin(); candidate != model.end(); ++candidate) {
                if (candidate->sequence < before && candidate->due <= now &&
                    (expected == model.end() || candidate->due < expected->due ||
                     (candidate->due == expected->due && candidate->sequence < expected->sequence))) {
                    expected = candidate;
                }
            }
            const auto taken = queue.pop_due(now, before);
            if (expected == model.end()) {
                ASSERT_EQ(taken, std::nullopt) << "round " << round;
                break;
            }
            ASSERT_EQ(taken, expected->value) << "round " << round;
            model.erase(expected);
        }
        ASSERT_EQ(queue.size(), model.size());
    }
}

TEST(due_queue, nothing_allocates_after_construction)
{
    queue_type queue{16};
    const std::size_t before = allocation_count.load();
    for (int round = 0; round < 100; ++round) {
        for (int n = 0; n < 20; ++n) {
            static_cast<void>(queue.push(n, std::chrono::nanoseconds{(n * 7) % 5}));
        }
        const auto reserved = queue.reserve(0ns);
        if (reserved) {
            queue.schedule(*reserved);
        }
        static_cast<void>(queue.next_due());
        std::mutex mutex;
        complete_due(
            mutex, queue, 5ns, [](int entry) { return entry; }, [](int) {});
    }
    EXPECT_EQ(allocation_count.load(), before);
}

TEST(due_queue, complete_due_finishes_without_the_mutex_and_leaves_what_it_finishes_push)
{
    queue_type queue{8};
    std::mutex mutex;
    ASSERT_TRUE(push_all(queue, {{1, 2ns}, {2, 1ns}, {3, 9ns}}));
    std::vector<int> finished;
    const std::size_t taken = complete_due(
        mutex, queue, 5ns, [](int entry) { return entry * 10; },
        [&](int result) {
            const std::unique_lock lock{mutex, std::try_to_lock};
            EXPECT_TRUE(lock.owns_lock());
            finished.push_back(result);
            EXPECT_TRUE(queue.push(result, 0ns)); // due, but pushed during the poll
        });
    EXPECT_EQ(taken, 2U);
    EXPECT_EQ(finished, (std::vector<int>{20, 10}));
    EXPECT_EQ(queue.size(), 3U);
    EXPECT_EQ(drain(queue, 5ns), (std::vector<int>{20, 10}));
}

TEST(due_queue, a_moved_queue_keeps_its_entries)
{
    queue_type queue{4};
    ASSERT_TRUE(push_all(queue, {{1, 3ns}, {2, 1ns}}));
    queue_type moved{std::move(queue)};
    EXPECT_EQ(moved.size(), 2U);
    EXPECT_EQ(moved.next_sequence(), 2U);
    EXPECT_EQ(drain(moved, 3ns), (std::vector<int>{2, 1}));
}

TEST(due_queue_death, scheduling_an_entry_twice_asserts)
{
    if (!asserts_enabled) {
        GTEST_SKIP() << "NVMEKIT_ASSERT is compiled out";
    }
    queue_type queue{2};
    const auto index = queue.reserve(0ns);
    ASSERT_TRUE(index.has_value());
    queue.schedule(*index);
    EXPECT_DEATH(queue.schedule(*index), "scheduled twice");
}

} // namespace
