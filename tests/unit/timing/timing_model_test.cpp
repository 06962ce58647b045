#include <chrono>
#include <cstdint>

#include <gtest/gtest.h>

#include <nvmekit/contracts/block_backend.hpp>
#include <nvmekit/testing/archetypes.hpp>
#include <nvmekit/timing/timing_model.hpp>

namespace {
namespace timing_timing_model_test {

using namespace std::chrono_literals;
using nvmekit::timing::timing_request;
using nvmekit::timing::transfer_time;

static_assert(nvmekit::timing::check_timing_model<nvmekit::testing::timing_model_archetype>());

/// Lacks complete_at.
struct not_a_model {
    std::chrono::nanoseconds complete(const timing_request&, std::chrono::nanoseconds now) { return now; }
};
static_assert(!nvmekit::timing::TimingModel<not_a_model>);

/// Returns the wrong type.
struct counting_model {
    std::uint64_t complete_at(const timing_request&, std::chrono::nanoseconds) { return 0; }
};
static_assert(!nvmekit::timing::TimingModel<counting_model>);

TEST(timing_request, views_what_a_model_needs_of_a_block_request)
{
    const nvmekit::block_request request{.operation = nvmekit::block_operation::write,
                                         .force_unit_access = true,
                                         .offset = 8192,
                                         .length = 4096};
    const timing_request view = timing_request::of(request);
    EXPECT_EQ(view.operation, nvmekit::block_operation::write);
    EXPECT_EQ(view.offset, 8192U);
    EXPECT_EQ(view.length, 4096U);
    EXPECT_TRUE(view.force_unit_access);
}

TEST(transfer_time, rounds_up_to_a_nanosecond_and_a_zero_rate_costs_nothing)
{
    EXPECT_EQ(transfer_time(4096, 4'096'000'000), 1us);
    EXPECT_EQ(transfer_time(1, 3), 333'333'334ns);
    EXPECT_EQ(transfer_time(4096, 0), 0ns);
    EXPECT_EQ(transfer_time(0, 1), 0ns);
    // 2^40 bytes at 64 GB/s: the product with 10^9 passes 2^64 and must not wrap.
    EXPECT_EQ(transfer_time(std::uint64_t{1} << 40, 64'000'000'000), 17'179'869'184ns);
    EXPECT_EQ(transfer_time(~std::uint64_t{0}, 1), std::chrono::nanoseconds::max());
}

TEST(timing_model_archetype, completes_every_request_when_it_is_submitted)
{
    nvmekit::testing::timing_model_archetype model;
    EXPECT_EQ(model.complete_at({}, 5us), 5us);
}

} // namespace timing_timing_model_test
} // namespace
