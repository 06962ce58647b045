#include <nvmekit/state/async_events.hpp>

#include <gtest/gtest.h>

namespace spec = nvmekit::spec;
using nvmekit::async_event_queue;

namespace {
const spec::async_event_completion invalid_value{spec::error_event::invalid_doorbell_value};
const spec::async_event_completion invalid_register{spec::error_event::invalid_doorbell_register};
} // namespace

TEST(async_event_queue, holds_at_most_the_request_limit)
{
    async_event_queue queue{4};
    for (std::uint16_t cid = 0; cid < 4; ++cid) {
        EXPECT_TRUE(queue.add_request(cid));
    }
    EXPECT_FALSE(queue.add_request(4));
    EXPECT_EQ(queue.outstanding_requests(), 4U);
}

TEST(async_event_queue, an_event_completes_the_oldest_request)
{
    async_event_queue queue{4};
    ASSERT_TRUE(queue.add_request(10));
    ASSERT_TRUE(queue.add_request(11));
    EXPECT_FALSE(queue.next_report());
    EXPECT_TRUE(queue.post(invalid_value));
    const auto report = queue.next_report();
    ASSERT_TRUE(report);
    EXPECT_EQ(report->command_id, 10);
    EXPECT_EQ(report->event.raw, 0x00010100U); // type 0, info 01h, log page 01h
    EXPECT_EQ(queue.outstanding_requests(), 1U);
    EXPECT_FALSE(queue.next_report());
}

TEST(async_event_queue, events_wait_for_a_request_and_duplicates_are_dropped)
{
    async_event_queue queue{1};
    EXPECT_TRUE(queue.post(invalid_value));
    EXPECT_FALSE(queue.post(invalid_value));
    EXPECT_TRUE(queue.post(invalid_register));
    EXPECT_EQ(queue.waiting_events(), 2U);
    ASSERT_TRUE(queue.add_request(1));
    EXPECT_EQ(queue.next_report()->event, invalid_value);
    ASSERT_TRUE(queue.add_request(2));
    EXPECT_EQ(queue.next_report()->event, invalid_register);
    EXPECT_EQ(queue.waiting_events(), 0U);
}

TEST(async_event_queue, the_event_queue_is_bounded)
{
    async_event_queue queue{1};
    std::size_t queued = 0;
    for (unsigned info = 0; info < 64; ++info) {
        queued += queue.post(spec::async_event_completion{spec::async_event_type::vendor_specific,
                                                          static_cast<std::uint8_t>(info),
                                                          spec::log_page_id::error_information})
                      ? 1U
                      : 0U;
    }
    EXPECT_EQ(queued, async_event_queue::event_capacity);
}

TEST(async_event_queue, clear_drops_requests_and_events)
{
    async_event_queue queue{2};
    ASSERT_TRUE(queue.add_request(1));
    queue.post(invalid_value);
    queue.clear();
    EXPECT_EQ(queue.outstanding_requests(), 0U);
    EXPECT_EQ(queue.waiting_events(), 0U);
}
