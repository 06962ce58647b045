#include <nvmekit/testing/recording_tracer.hpp>

#include <gtest/gtest.h>

namespace {
namespace testing_recording_tracer_test {

using nvmekit::trace_event;

static_assert(nvmekit::check_tracer<nvmekit::testing::recording_tracer>());

TEST(recording_tracer, records_in_order_and_filters)
{
    nvmekit::testing::recording_tracer tracer;
    tracer.trace({.event = trace_event::sqe_fetched, .qid = 1, .cid = 4});
    tracer.trace({.event = trace_event::err_doorbell_invalid_sq, .qid = 1, .value = 9});
    tracer.trace({.event = trace_event::cqe_posted, .qid = 1, .cid = 4});
    tracer.trace({.event = trace_event::cqe_posted, .qid = 1, .cid = 5});
    EXPECT_EQ(tracer.snapshot().size(), 4U);
    EXPECT_EQ(tracer.count(trace_event::cqe_posted), 2U);
    const auto errors = tracer.host_errors();
    ASSERT_EQ(errors.size(), 1U);
    EXPECT_EQ(errors[0].value, 9U);
    const auto command = tracer.command_events(1, 4);
    ASSERT_EQ(command.size(), 2U);
    EXPECT_EQ(command[0].event, trace_event::sqe_fetched);
    EXPECT_EQ(command[1].event, trace_event::cqe_posted);
    tracer.clear();
    EXPECT_TRUE(tracer.snapshot().empty());
}

} // namespace testing_recording_tracer_test
} // namespace
