#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

#include <nvmekit/contracts/block_backend.hpp>
#include <nvmekit/timing/simple_model.hpp>
#include <nvmekit/timing/timing_model.hpp>

#include "splitmix64.hpp"

namespace {
namespace timing_simple_model_test {

using namespace std::chrono_literals;
using nvmekit::block_operation;
using nvmekit::timing::simple_model;
using nvmekit::timing::simple_parameters;
using nvmekit::timing::timing_request;

static_assert(nvmekit::timing::TimingModel<simple_model>);
static_assert(nvmekit::timing::check_timing_model<simple_model>());

/// 4096 bytes per microsecond: a 4 KiB transfer takes exactly 1 us.
constexpr std::uint64_t page_per_microsecond = 4'096'000'000;

timing_request read(std::uint64_t offset, std::uint64_t length)
{
    return {block_operation::read, offset, length, false};
}

timing_request write(std::uint64_t offset, std::uint64_t length)
{
    return {block_operation::write, offset, length, false};
}

TEST(simple_model, a_queue_depth_one_read_takes_its_latency_plus_its_transfer_time)
{
    simple_model model{{.read_latency = 50us, .transfer_bytes_per_second = page_per_microsecond}};
    EXPECT_EQ(model.complete_at(read(0, 4096), 0ns), 51us);
    // The next one, submitted after the first completed, takes the same time from its submission.
    EXPECT_EQ(model.complete_at(read(1 << 20, 4096), 100us), 151us);
    EXPECT_EQ(model.complete_at(read(0, 8192), 200us), 252us);
}

TEST(simple_model, every_operation_has_its_own_fixed_latency_and_only_data_is_transferred)
{
    simple_model model{{.read_latency = 10us,
                        .write_latency = 20us,
                        .flush_latency = 30us,
                        .other_latency = 40us,
                        .transfer_bytes_per_second = page_per_microsecond}};
    EXPECT_EQ(model.service_time(read(0, 4096)), 11us);
    EXPECT_EQ(model.service_time(write(0, 4096)), 21us);
    EXPECT_EQ(model.service_time({block_operation::flush, 0, 0, false}), 30us);
    EXPECT_EQ(model.service_time({block_operation::write_zeroes, 0, 1 << 20, false}), 40us);
    EXPECT_EQ(model.service_time({block_operation::deallocate, 0, 1 << 20, false}), 40us);
    EXPECT_EQ(model.complete_at(write(0, 4096), 1ms), 1ms + 21us);
}

TEST(simple_model, n_servers_serve_n_requests_at_once_and_the_next_waits_for_the_first_free)
{
    simple_model model{{.read_latency = 10us, .parallelism = 4}};
    std::vector<std::chrono::nanoseconds> done;
    for (int i = 0; i < 9; ++i) {
        done.push_back(model.complete_at(read(0, 512), 0ns));
    }
    EXPECT_EQ(done,
              (std::vector<std::chrono::nanoseconds>{10us, 10us, 10us, 10us, 20us, 20us, 20us, 20us, 30us}));
    // At 25 us three servers are free (since 20 us): a request starts at once.
    EXPECT_EQ(model.complete_at(read(0, 512), 25us), 35us);
}

TEST(simple_model, a_request_takes_the_server_that_frees_first)
{
    simple_model model{{.read_latency = 10us, .write_latency = 100us, .parallelism = 2}};
    EXPECT_EQ(model.complete_at(write(0, 512), 0ns), 100us); // server 0 until 100 us
    EXPECT_EQ(model.complete_at(read(0, 512), 0ns), 10us);   // server 1 until 10 us
    EXPECT_EQ(model.complete_at(read(0, 512), 0ns), 20us);   // server 1 again
    EXPECT_EQ(model.complete_at(read(0, 512), 50us), 60us);  // server 1, free since 20 us
}

TEST(simple_model, an_earlier_now_is_taken_as_the_latest_one_seen)
{
    simple_model model{{.read_latency = 10us, .parallelism = 2}};
    EXPECT_EQ(model.complete_at(read(0, 512), 100us), 110us);
    EXPECT_EQ(model.complete_at(read(0, 512), 50us), 110us);
}

TEST(simple_model, the_same_requests_give_the_same_times)
{
    const simple_parameters parameters{.read_latency = 7us,
                                       .write_latency = 13us,
                                       .flush_latency = 1us,
                                       .transfer_bytes_per_second = 1'000'000'000,
                                       .parallelism = 3};
    auto run = [&] {
        simple_model model{parameters};
        nvmekit_test::splitmix64 random{42};
        std::vector<std::chrono::nanoseconds> times;
        std::chrono::nanoseconds now{0};
        for (int i = 0; i < 1000; ++i) {
            now += std::chrono::nanoseconds{random.below(5000)};
            const auto operation = static_cast<block_operation>(random.below(5));
            times.push_back(
                model.complete_at({operation, random.below(1 << 30), random.between(1, 65536), false}, now));
        }
        return times;
    };
    EXPECT_EQ(run(), run());
}

TEST(simple_model, refuses_no_servers_and_negative_latencies)
{
    EXPECT_THROW(simple_model{simple_parameters{.parallelism = 0}}, std::invalid_argument);
    EXPECT_THROW(simple_model{simple_parameters{.read_latency = -1ns}}, std::invalid_argument);
    EXPECT_THROW(simple_model{simple_parameters{.other_latency = -1ns}}, std::invalid_argument);
}

} // namespace timing_simple_model_test
} // namespace
