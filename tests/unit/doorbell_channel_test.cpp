#include <nvmekit/pci/doorbell_channel.hpp>

#include <array>
#include <atomic>
#include <cstdint>
#include <ostream>
#include <thread>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

namespace {

using nvmekit::doorbell_channel;

struct doorbell {
    std::uint16_t qid;
    bool is_completion_queue;
    std::uint32_t value;
    friend bool operator==(const doorbell&, const doorbell&) = default;
    friend std::ostream& operator<<(std::ostream& out, const doorbell& d)
    {
        return out << "{" << d.qid << (d.is_completion_queue ? " CQ head " : " SQ tail ") << d.value << "}";
    }
};

std::vector<doorbell> drained(doorbell_channel& channel)
{
    std::vector<doorbell> seen;
    channel.drain([&](std::uint16_t qid, bool is_completion_queue, std::uint32_t value) {
        seen.push_back({qid, is_completion_queue, value});
    });
    return seen;
}

} // namespace

TEST(doorbell_channel, starts_empty)
{
    doorbell_channel channel{4};
    EXPECT_EQ(channel.max_qid(), 4U);
    EXPECT_FALSE(channel.any_pending());
    EXPECT_TRUE(drained(channel).empty());
}

TEST(doorbell_channel, reports_a_write_once)
{
    doorbell_channel channel{4};
    EXPECT_TRUE(channel.ring_sq_tail(1, 7));
    EXPECT_TRUE(channel.any_pending());
    EXPECT_EQ(drained(channel), (std::vector<doorbell>{{1, false, 7}}));
    EXPECT_FALSE(channel.any_pending());
    EXPECT_TRUE(drained(channel).empty());
}

TEST(doorbell_channel, keeps_only_the_latest_value)
{
    doorbell_channel channel{4};
    EXPECT_TRUE(channel.ring_sq_tail(2, 1));
    EXPECT_TRUE(channel.ring_sq_tail(2, 5));
    EXPECT_TRUE(channel.ring_sq_tail(2, 3));
    EXPECT_TRUE(channel.ring_cq_head(2, 9));
    EXPECT_TRUE(channel.ring_cq_head(2, 10));
    EXPECT_EQ(drained(channel), (std::vector<doorbell>{{2, false, 3}, {2, true, 10}}));
}

TEST(doorbell_channel, a_forgotten_doorbell_is_not_reported)
{
    // A deleted queue's pending value is dropped; the other doorbell of the QID and other QIDs
    // keep theirs, and a later write to the forgotten doorbell is reported again.
    doorbell_channel channel{70};
    EXPECT_TRUE(channel.ring_sq_tail(3, 4));
    EXPECT_TRUE(channel.ring_cq_head(3, 6));
    EXPECT_TRUE(channel.ring_cq_head(40, 2)); // in the second word of pending bits
    channel.forget(3, true);
    channel.forget(40, true);
    channel.forget(71, true); // beyond max_qid: nothing
    EXPECT_EQ(drained(channel), (std::vector<doorbell>{{3, false, 4}}));
    EXPECT_TRUE(channel.ring_cq_head(3, 1));
    EXPECT_EQ(drained(channel), (std::vector<doorbell>{{3, true, 1}}));
}

TEST(doorbell_channel, rewriting_the_same_value_reports_it_again)
{
    doorbell_channel channel{1};
    EXPECT_TRUE(channel.ring_cq_head(0, 4));
    EXPECT_EQ(drained(channel), (std::vector<doorbell>{{0, true, 4}}));
    EXPECT_TRUE(channel.ring_cq_head(0, 4));
    EXPECT_EQ(drained(channel), (std::vector<doorbell>{{0, true, 4}}));
}

TEST(doorbell_channel, drains_in_ascending_qid_order_sq_before_cq)
{
    doorbell_channel channel{200};
    EXPECT_TRUE(channel.ring_cq_head(200, 1));
    EXPECT_TRUE(channel.ring_cq_head(31, 2));
    EXPECT_TRUE(channel.ring_sq_tail(32, 3));
    EXPECT_TRUE(channel.ring_cq_head(0, 4));
    EXPECT_TRUE(channel.ring_sq_tail(200, 5));
    EXPECT_TRUE(channel.ring_sq_tail(0, 6));
    EXPECT_TRUE(channel.ring_sq_tail(31, 7));
    EXPECT_TRUE(channel.ring_cq_head(100, 8));
    EXPECT_EQ(drained(channel), (std::vector<doorbell>{{0, false, 6},
                                                       {0, true, 4},
                                                       {31, false, 7},
                                                       {31, true, 2},
                                                       {32, false, 3},
                                                       {100, true, 8},
                                                       {200, false, 5},
                                                       {200, true, 1}}));
}

TEST(doorbell_channel, values_are_stored_as_written)
{
    doorbell_channel channel{0};
    EXPECT_TRUE(channel.ring_sq_tail(0, 0xffff'ffffU)); // reserved bits: the poller rejects them
    EXPECT_EQ(drained(channel), (std::vector<doorbell>{{0, false, 0xffff'ffffU}}));
}

TEST(doorbell_channel, qids_beyond_max_are_refused)
{
    doorbell_channel channel{3};
    EXPECT_FALSE(channel.ring_sq_tail(4, 1));
    EXPECT_FALSE(channel.ring_cq_head(4, 1));
    EXPECT_FALSE(channel.ring_sq_tail(0xffff, 1));
    EXPECT_FALSE(channel.any_pending());
    EXPECT_TRUE(channel.ring_cq_head(3, 2));
    EXPECT_EQ(drained(channel), (std::vector<doorbell>{{3, true, 2}}));
}

TEST(doorbell_channel, largest_channel_covers_qid_65535)
{
    doorbell_channel channel{0xffff};
    EXPECT_TRUE(channel.ring_cq_head(0xffff, 11));
    EXPECT_TRUE(channel.ring_sq_tail(0xffff, 12));
    EXPECT_TRUE(channel.ring_sq_tail(1, 13));
    EXPECT_EQ(drained(channel),
              (std::vector<doorbell>{{1, false, 13}, {0xffff, false, 12}, {0xffff, true, 11}}));
}

TEST(doorbell_channel, clear_forgets_pending_doorbells)
{
    doorbell_channel channel{2};
    EXPECT_TRUE(channel.ring_sq_tail(1, 5));
    EXPECT_TRUE(channel.ring_cq_head(2, 6));
    channel.clear();
    EXPECT_FALSE(channel.any_pending());
    EXPECT_TRUE(drained(channel).empty());
    EXPECT_TRUE(channel.ring_sq_tail(1, 8));
    EXPECT_EQ(drained(channel), (std::vector<doorbell>{{1, false, 8}}));
}

TEST(doorbell_channel, doorbells_rung_during_a_drain_are_kept)
{
    doorbell_channel channel{100};
    EXPECT_TRUE(channel.ring_sq_tail(1, 1));
    std::vector<doorbell> seen;
    channel.drain([&](std::uint16_t qid, bool is_completion_queue, std::uint32_t value) {
        seen.push_back({qid, is_completion_queue, value});
        if (qid == 1) {
            EXPECT_TRUE(channel.ring_sq_tail(1, 2));  // same word: next drain
            EXPECT_TRUE(channel.ring_cq_head(90, 3)); // later word: this drain
        }
    });
    EXPECT_EQ(seen, (std::vector<doorbell>{{1, false, 1}, {90, true, 3}}));
    EXPECT_EQ(drained(channel), (std::vector<doorbell>{{1, false, 2}}));
}

TEST(doorbell_channel, one_producer_and_one_consumer_thread)
{
    constexpr std::uint16_t queues = 5;
    constexpr std::uint32_t writes = 100'000;
    doorbell_channel channel{queues - 1};
    std::atomic<bool> done{false};

    std::array<std::vector<std::uint32_t>, queues> sq_seen;
    std::array<std::vector<std::uint32_t>, queues> cq_seen;
    std::thread consumer{[&] {
        auto record = [&](std::uint16_t qid, bool is_completion_queue, std::uint32_t value) {
            (is_completion_queue ? cq_seen : sq_seen)[qid].push_back(value);
        };
        while (!done.load(std::memory_order_acquire)) {
            channel.drain(record);
        }
        channel.drain(record);
    }};

    std::array<std::uint32_t, queues> last_sq{};
    std::array<std::uint32_t, queues> last_cq{};
    for (std::uint32_t i = 1; i <= writes; ++i) {
        const auto qid = static_cast<std::uint16_t>(i % queues);
        ASSERT_TRUE(channel.ring_sq_tail(qid, i));
        last_sq[qid] = i;
        if (i % 3 == 0) {
            ASSERT_TRUE(channel.ring_cq_head(qid, i * 2));
            last_cq[qid] = i * 2;
        }
    }
    done.store(true, std::memory_order_release);
    consumer.join();

    EXPECT_FALSE(channel.any_pending());
    for (std::uint16_t qid = 0; qid < queues; ++qid) {
        for (const auto* seen : {&sq_seen[qid], &cq_seen[qid]}) {
            ASSERT_FALSE(seen->empty()) << qid;
            // Never decreasing; a value may repeat when a write raced a drain.
            for (std::size_t k = 1; k < seen->size(); ++k) {
                ASSERT_LE((*seen)[k - 1], (*seen)[k]) << "qid " << qid << " report " << k;
            }
        }
        EXPECT_EQ(sq_seen[qid].back(), last_sq[qid]) << qid;
        EXPECT_EQ(cq_seen[qid].back(), last_cq[qid]) << qid;
        EXPECT_LE(sq_seen[qid].size(), writes / queues + 1);
    }
}
