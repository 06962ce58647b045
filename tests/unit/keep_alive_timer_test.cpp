#include <nvmekit/state/keep_alive_timer.hpp>

#include <chrono>

#include <gtest/gtest.h>

namespace {
namespace keep_alive_timer_test {

using namespace std::chrono_literals;
using nvmekit::keep_alive_timer;

TEST(keep_alive_timer, does_not_run_until_started)
{
    keep_alive_timer timer;
    EXPECT_FALSE(timer.running());
    EXPECT_FALSE(timer.expired(10s, 100));
}

TEST(keep_alive_timer, expires_once_after_the_timeout)
{
    keep_alive_timer timer;
    timer.restart(1s);
    EXPECT_FALSE(timer.expired(1s + 100ms, 100)) << "exactly the timeout has not expired";
    EXPECT_TRUE(timer.expired(1s + 100ms + 1ns, 100));
    EXPECT_FALSE(timer.running());
    EXPECT_FALSE(timer.expired(5s, 100)) << "stopped until restarted";
}

TEST(keep_alive_timer, a_restart_moves_the_deadline)
{
    keep_alive_timer timer;
    timer.restart(0s);
    timer.restart(90ms);
    EXPECT_FALSE(timer.expired(150ms, 100));
    EXPECT_TRUE(timer.expired(191ms, 100));
}

TEST(keep_alive_timer, a_timeout_of_zero_never_expires_and_stop_stops)
{
    keep_alive_timer timer;
    timer.restart(0s);
    EXPECT_FALSE(timer.expired(1h, 0));
    EXPECT_TRUE(timer.running());
    timer.stop();
    EXPECT_FALSE(timer.expired(1h, 1));
}

} // namespace keep_alive_timer_test
} // namespace
