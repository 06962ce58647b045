#include <chrono>
#include <stdexcept>

#include <gtest/gtest.h>

#include <nvmekit/contracts/clock.hpp>
#include <nvmekit/testing/manual_clock.hpp>

using namespace std::chrono_literals;
using nvmekit::testing::manual_clock;

static_assert(nvmekit::Clock<manual_clock>);
static_assert(nvmekit::check_clock<manual_clock>());

TEST(manual_clock, starts_at_zero)
{
    const manual_clock clock;
    EXPECT_EQ(clock.now(), 0ns);
}

TEST(manual_clock, advance_adds_to_the_time)
{
    manual_clock clock;
    clock.advance(5us);
    EXPECT_EQ(clock.now(), 5000ns);
    clock.advance(0ns);
    EXPECT_EQ(clock.now(), 5000ns);
    clock.advance(1s);
    EXPECT_EQ(clock.now(), 1'000'005'000ns);
}

TEST(manual_clock, advance_rejects_a_negative_duration)
{
    manual_clock clock;
    clock.advance(10ns);
    EXPECT_THROW(clock.advance(-1ns), std::invalid_argument);
    EXPECT_EQ(clock.now(), 10ns);
}

TEST(manual_clock, advance_rejects_an_overflow)
{
    manual_clock clock;
    clock.set(std::chrono::nanoseconds::max() - 1ns);
    clock.advance(1ns);
    EXPECT_EQ(clock.now(), std::chrono::nanoseconds::max());
    EXPECT_THROW(clock.advance(1ns), std::overflow_error);
    EXPECT_EQ(clock.now(), std::chrono::nanoseconds::max());
}

TEST(manual_clock, set_moves_forward_or_stays_but_never_goes_back)
{
    manual_clock clock;
    clock.set(100ns);
    EXPECT_EQ(clock.now(), 100ns);
    clock.set(100ns);
    EXPECT_EQ(clock.now(), 100ns);
    EXPECT_THROW(clock.set(99ns), std::invalid_argument);
    EXPECT_EQ(clock.now(), 100ns);
    clock.set(2ms);
    EXPECT_EQ(clock.now(), 2'000'000ns);
}

TEST(manual_clock, set_rejects_negative_times_from_the_start)
{
    manual_clock clock;
    EXPECT_THROW(clock.set(-1ns), std::invalid_argument);
    EXPECT_EQ(clock.now(), 0ns);
}

TEST(manual_clock, a_copy_starts_at_the_same_time_and_moves_on_its_own)
{
    manual_clock clock;
    clock.advance(7ns);
    manual_clock copy{clock};
    EXPECT_EQ(copy.now(), 7ns);
    copy.advance(1ns);
    EXPECT_EQ(copy.now(), 8ns);
    EXPECT_EQ(clock.now(), 7ns);
    clock = copy;
    EXPECT_EQ(clock.now(), 8ns);
}
