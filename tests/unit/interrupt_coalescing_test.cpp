#include <nvmekit/state/interrupt_coalescing.hpp>

#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

namespace {

using namespace std::chrono_literals;
using nvmekit::interrupt_coalescer;
namespace spec = nvmekit::spec;

constexpr bool io_queue = true;
constexpr bool admin_queue = false;

std::vector<std::uint16_t> expired_at(interrupt_coalescer& coalescer, std::chrono::nanoseconds now)
{
    std::vector<std::uint16_t> vectors;
    coalescer.expire(now, [&](std::uint16_t vector) { vectors.push_back(vector); });
    return vectors;
}

} // namespace

TEST(interrupt_coalescer, rejects_zero_or_more_than_2048_vectors)
{
    EXPECT_THROW(interrupt_coalescer{0}, std::invalid_argument);
    EXPECT_THROW(interrupt_coalescer{2049}, std::invalid_argument);
    EXPECT_EQ(interrupt_coalescer{1}.vectors(), 1U);
    EXPECT_EQ(interrupt_coalescer{2048}.vectors(), 2048U);
}

TEST(interrupt_coalescer, reset_state_signals_every_completion)
{
    interrupt_coalescer coalescer{4};
    EXPECT_EQ(coalescer.configuration().raw, 0U);
    for (int i = 0; i < 5; ++i) {
        EXPECT_TRUE(coalescer.on_completion(1, io_queue, 10us));
    }
    EXPECT_FALSE(coalescer.aggregating(1));
    EXPECT_EQ(coalescer.next_deadline(), std::nullopt);
}

TEST(interrupt_coalescer, threshold_counts_thr_plus_one_entries)
{
    interrupt_coalescer coalescer{4};
    coalescer.configure(2, 10); // 3 entries or 1 ms
    EXPECT_EQ(coalescer.configuration().raw, 0x0a02U);
    EXPECT_FALSE(coalescer.on_completion(2, io_queue, 0us));
    EXPECT_EQ(coalescer.aggregated_count(2), 1U);
    EXPECT_FALSE(coalescer.on_completion(2, io_queue, 1us));
    EXPECT_EQ(coalescer.aggregated_count(2), 2U);
    EXPECT_TRUE(coalescer.on_completion(2, io_queue, 2us));
    EXPECT_EQ(coalescer.aggregated_count(2), 0U);
    EXPECT_FALSE(coalescer.aggregating(2));
    EXPECT_EQ(coalescer.next_deadline(), std::nullopt);
    // Starts afresh.
    EXPECT_FALSE(coalescer.on_completion(2, io_queue, 3us));
    EXPECT_FALSE(coalescer.on_completion(2, io_queue, 4us));
    EXPECT_TRUE(coalescer.on_completion(2, io_queue, 5us));
}

TEST(interrupt_coalescer, vectors_aggregate_independently)
{
    interrupt_coalescer coalescer{4};
    coalescer.configure(1, 10);
    EXPECT_FALSE(coalescer.on_completion(1, io_queue, 0us));
    EXPECT_FALSE(coalescer.on_completion(3, io_queue, 0us));
    EXPECT_TRUE(coalescer.on_completion(1, io_queue, 0us));
    EXPECT_TRUE(coalescer.aggregating(3));
    EXPECT_EQ(coalescer.aggregated_count(3), 1U);
    EXPECT_TRUE(coalescer.on_completion(3, io_queue, 0us));
}

TEST(interrupt_coalescer, largest_threshold_aggregates_256_entries)
{
    interrupt_coalescer coalescer{1};
    coalescer.configure(255, 255);
    for (int i = 0; i < 255; ++i) {
        ASSERT_FALSE(coalescer.on_completion(0, io_queue, 0us)) << i;
    }
    EXPECT_EQ(coalescer.aggregated_count(0), 255U);
    EXPECT_TRUE(coalescer.on_completion(0, io_queue, 0us));
}

TEST(interrupt_coalescer, thr_zero_or_time_zero_means_no_coalescing)
{
    interrupt_coalescer coalescer{2};
    coalescer.configure(0, 200);
    EXPECT_TRUE(coalescer.on_completion(0, io_queue, 0us));
    coalescer.configure(200, 0); // TIME 0 is no delay (Base 2.0 5.27.1.9)
    EXPECT_TRUE(coalescer.on_completion(0, io_queue, 0us));
    EXPECT_FALSE(coalescer.aggregating(0));
}

TEST(interrupt_coalescer, time_expires_from_the_first_aggregated_entry)
{
    interrupt_coalescer coalescer{4};
    coalescer.configure(9, 3); // 300 us
    EXPECT_FALSE(coalescer.on_completion(1, io_queue, 1000us));
    EXPECT_FALSE(coalescer.on_completion(1, io_queue, 1200us));
    EXPECT_EQ(coalescer.next_deadline(), std::chrono::nanoseconds{1300us});
    EXPECT_TRUE(expired_at(coalescer, 1299us).empty());
    EXPECT_TRUE(coalescer.aggregating(1));
    EXPECT_EQ(expired_at(coalescer, 1300us), (std::vector<std::uint16_t>{1}));
    EXPECT_FALSE(coalescer.aggregating(1));
    EXPECT_EQ(coalescer.next_deadline(), std::nullopt);
    EXPECT_TRUE(expired_at(coalescer, 5000us).empty());
}

TEST(interrupt_coalescer, completion_after_the_deadline_signals_at_once)
{
    interrupt_coalescer coalescer{1};
    coalescer.configure(9, 1); // 100 us
    EXPECT_FALSE(coalescer.on_completion(0, io_queue, 0us));
    EXPECT_FALSE(coalescer.on_completion(0, io_queue, 99us));
    EXPECT_TRUE(coalescer.on_completion(0, io_queue, 100us));
    EXPECT_FALSE(coalescer.aggregating(0));
}

TEST(interrupt_coalescer, expire_reports_due_vectors_in_ascending_order)
{
    interrupt_coalescer coalescer{200};
    coalescer.configure(9, 1);
    EXPECT_FALSE(coalescer.on_completion(130, io_queue, 0us));
    EXPECT_FALSE(coalescer.on_completion(5, io_queue, 10us));
    EXPECT_FALSE(coalescer.on_completion(64, io_queue, 20us));
    EXPECT_FALSE(coalescer.on_completion(7, io_queue, 90us));
    EXPECT_EQ(coalescer.next_deadline(), std::chrono::nanoseconds{100us});
    EXPECT_EQ(expired_at(coalescer, 120us), (std::vector<std::uint16_t>{5, 64, 130}));
    EXPECT_TRUE(coalescer.aggregating(7));
    EXPECT_EQ(coalescer.next_deadline(), std::chrono::nanoseconds{190us});
    EXPECT_EQ(expired_at(coalescer, 190us), (std::vector<std::uint16_t>{7}));
    EXPECT_EQ(coalescer.next_deadline(), std::nullopt);
}

TEST(interrupt_coalescer, expire_callback_may_aggregate_again)
{
    interrupt_coalescer coalescer{2};
    coalescer.configure(9, 1);
    EXPECT_FALSE(coalescer.on_completion(0, io_queue, 0us));
    std::vector<std::uint16_t> seen;
    coalescer.expire(100us, [&](std::uint16_t vector) {
        seen.push_back(vector);
        EXPECT_FALSE(coalescer.on_completion(vector, io_queue, 100us));
    });
    EXPECT_EQ(seen, (std::vector<std::uint16_t>{0}));
    EXPECT_TRUE(coalescer.aggregating(0));
    EXPECT_EQ(coalescer.next_deadline(), std::chrono::nanoseconds{200us});
}

TEST(interrupt_coalescer, flush_all_reports_every_aggregating_vector)
{
    interrupt_coalescer coalescer{100};
    coalescer.configure(9, 50);
    EXPECT_FALSE(coalescer.on_completion(99, io_queue, 0us));
    EXPECT_FALSE(coalescer.on_completion(3, io_queue, 0us));
    std::vector<std::uint16_t> seen;
    coalescer.flush_all([&](std::uint16_t vector) { seen.push_back(vector); });
    EXPECT_EQ(seen, (std::vector<std::uint16_t>{3, 99}));
    EXPECT_FALSE(coalescer.aggregating(3));
    EXPECT_FALSE(coalescer.aggregating(99));
    EXPECT_EQ(coalescer.next_deadline(), std::nullopt);
    seen.clear();
    coalescer.flush_all([&](std::uint16_t vector) { seen.push_back(vector); });
    EXPECT_TRUE(seen.empty());
}

TEST(interrupt_coalescer, coalescing_disable_applies_per_vector)
{
    interrupt_coalescer coalescer{4};
    coalescer.configure(9, 10);
    EXPECT_TRUE(coalescer.set_coalescing_disabled(2, true));
    EXPECT_TRUE(coalescer.coalescing_disabled(2));
    EXPECT_FALSE(coalescer.coalescing_disabled(1));
    EXPECT_TRUE(coalescer.on_completion(2, io_queue, 0us));
    EXPECT_FALSE(coalescer.on_completion(1, io_queue, 0us));
    EXPECT_TRUE(coalescer.set_coalescing_disabled(2, false));
    EXPECT_FALSE(coalescer.on_completion(2, io_queue, 0us));
}

TEST(interrupt_coalescer, coalescing_disable_rejects_vectors_out_of_range)
{
    interrupt_coalescer coalescer{4};
    EXPECT_FALSE(coalescer.set_coalescing_disabled(4, true));
    EXPECT_FALSE(coalescer.set_coalescing_disabled(0xffff, true));
    EXPECT_FALSE(coalescer.coalescing_disabled(4));
    EXPECT_FALSE(coalescer.aggregating(4));
    EXPECT_EQ(coalescer.aggregated_count(4), 0U);
}

TEST(interrupt_coalescer, admin_queue_is_never_coalesced)
{
    interrupt_coalescer coalescer{2};
    coalescer.configure(9, 10);
    EXPECT_TRUE(coalescer.on_completion(0, admin_queue, 0us));
    EXPECT_FALSE(coalescer.aggregating(0));
    // An I/O CQ sharing vector 0 aggregates; the admin completion's interrupt covers it.
    EXPECT_FALSE(coalescer.on_completion(0, io_queue, 1us));
    EXPECT_TRUE(coalescer.aggregating(0));
    EXPECT_TRUE(coalescer.on_completion(0, admin_queue, 2us));
    EXPECT_FALSE(coalescer.aggregating(0));
    EXPECT_EQ(coalescer.next_deadline(), std::nullopt);
}

TEST(interrupt_coalescer, configure_takes_the_feature_value)
{
    interrupt_coalescer coalescer{1};
    coalescer.configure(spec::interrupt_coalescing{0xffff'0504U});
    EXPECT_EQ(coalescer.configuration().get(spec::interrupt_coalescing::thr), 4U);
    EXPECT_EQ(coalescer.configuration().get(spec::interrupt_coalescing::time), 5U);
    EXPECT_EQ(coalescer.configuration().raw, 0x0504U);
}

TEST(interrupt_coalescer, reconfiguring_keeps_counts_and_moves_deadlines)
{
    interrupt_coalescer coalescer{1};
    coalescer.configure(9, 10);
    EXPECT_FALSE(coalescer.on_completion(0, io_queue, 0us));
    EXPECT_FALSE(coalescer.on_completion(0, io_queue, 0us));
    coalescer.configure(9, 2);
    EXPECT_EQ(coalescer.aggregated_count(0), 2U);
    EXPECT_EQ(coalescer.next_deadline(), std::chrono::nanoseconds{200us});
    coalescer.configure(2, 2);
    EXPECT_TRUE(coalescer.on_completion(0, io_queue, 10us));
}

TEST(interrupt_coalescer, reset_restores_defaults)
{
    interrupt_coalescer coalescer{3};
    coalescer.configure(9, 10);
    EXPECT_TRUE(coalescer.set_coalescing_disabled(1, true));
    EXPECT_FALSE(coalescer.on_completion(2, io_queue, 0us));
    coalescer.reset();
    EXPECT_EQ(coalescer.configuration().raw, 0U);
    EXPECT_FALSE(coalescer.coalescing_disabled(1));
    EXPECT_FALSE(coalescer.aggregating(2));
    EXPECT_EQ(coalescer.next_deadline(), std::nullopt);
    EXPECT_TRUE(expired_at(coalescer, 10s).empty());
    EXPECT_TRUE(coalescer.on_completion(2, io_queue, 0us));
}

#ifndef NDEBUG
TEST(interrupt_coalescer_death, completion_on_a_vector_out_of_range_asserts)
{
    interrupt_coalescer coalescer{2};
    EXPECT_DEATH(static_cast<void>(coalescer.on_completion(2, io_queue, std::chrono::nanoseconds{0})),
                 "vector beyond the configured vectors");
}
#endif
