#include <nvmekit/contracts/clock.hpp>

#include <chrono>
#include <cstdint>

#include <gtest/gtest.h>

#include <nvmekit/testing/archetypes.hpp>
#include <nvmekit/testing/manual_clock.hpp>

using namespace std::chrono_literals;
using nvmekit::check_clock;
using nvmekit::Clock;
using nvmekit::testing::clock_archetype;
using nvmekit::testing::manual_clock;

namespace {

struct no_now {};
/// Components hold their clock by const reference, so now() must be const.
struct mutable_now {
    std::chrono::nanoseconds now() { return {}; }
};
struct now_in_microseconds {
    std::chrono::microseconds now() const { return {}; }
};
struct now_as_a_count {
    std::int64_t now() const { return 0; }
};

/// A deadline kept against any Clock, as the controller's timers are (CC.EN ready delay,
/// keep-alive).
template <Clock C>
class deadline {
public:
    deadline(const C& clock, std::chrono::nanoseconds timeout)
        : clock_{&clock}, expiry_{clock.now() + timeout}
    {
        static_assert(check_clock<C>());
    }
    [[nodiscard]] bool expired() const { return clock_->now() >= expiry_; }
    [[nodiscard]] std::chrono::nanoseconds remaining() const
    {
        return expired() ? 0ns : expiry_ - clock_->now();
    }

private:
    const C* clock_;
    std::chrono::nanoseconds expiry_;
};

} // namespace

static_assert(Clock<nvmekit::steady_clock> && check_clock<nvmekit::steady_clock>());
static_assert(Clock<manual_clock> && check_clock<manual_clock>());
static_assert(Clock<clock_archetype> && check_clock<clock_archetype>());

static_assert(!Clock<no_now>);
static_assert(!Clock<mutable_now>);
static_assert(!Clock<now_in_microseconds>);
static_assert(!Clock<now_as_a_count>);
// std::chrono's clocks return a time_point, not a duration since the epoch.
static_assert(!Clock<std::chrono::steady_clock>);

TEST(clock, steady_clock_reads_the_host_steady_clock_in_nanoseconds)
{
    const nvmekit::steady_clock clock;
    const auto before = std::chrono::steady_clock::now().time_since_epoch();
    const std::chrono::nanoseconds first = clock.now();
    const std::chrono::nanoseconds second = clock.now();
    const auto after = std::chrono::steady_clock::now().time_since_epoch();
    EXPECT_LE(before, first);
    EXPECT_LE(first, second);
    EXPECT_LE(second, after);
}

TEST(clock, a_deadline_on_manual_clock_expires_when_the_time_is_moved)
{
    manual_clock clock;
    clock.set(1ms);
    const deadline ready{clock, 500us};
    EXPECT_FALSE(ready.expired());
    EXPECT_EQ(ready.remaining(), 500us);

    clock.advance(499'999ns);
    EXPECT_FALSE(ready.expired());
    EXPECT_EQ(ready.remaining(), 1ns);

    clock.advance(1ns);
    EXPECT_TRUE(ready.expired());
    EXPECT_EQ(ready.remaining(), 0ns);
    clock.advance(1s);
    EXPECT_EQ(ready.remaining(), 0ns);
}

TEST(clock, a_deadline_on_the_archetype_never_expires_and_on_steady_clock_does)
{
    const clock_archetype frozen;
    const deadline never{frozen, 1ns};
    EXPECT_FALSE(never.expired());
    EXPECT_EQ(never.remaining(), 1ns);

    const nvmekit::steady_clock steady;
    const deadline now{steady, 0ns};
    EXPECT_TRUE(now.expired());
}
