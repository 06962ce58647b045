#include <nvmekit/transport/tcp/descriptor_reserve.hpp>

#include <cstddef>
#include <limits>
#include <utility>

#include <gtest/gtest.h>

#include <sys/resource.h>

namespace {
namespace transport_tcp_descriptor_reserve_test {

using nvmekit::transport::tcp::connection_descriptor_bound;
using nvmekit::transport::tcp::connection_ticket;
using nvmekit::transport::tcp::open_target_connections;

TEST(connection_ticket, counts_its_connection_until_reset_or_destroyed_once)
{
    const std::size_t before = open_target_connections();
    {
        auto first = connection_ticket::take();
        auto second = connection_ticket::take();
        EXPECT_TRUE(first.held());
        EXPECT_EQ(open_target_connections(), before + 2);
        first.reset();
        first.reset();
        EXPECT_FALSE(first.held());
        EXPECT_EQ(open_target_connections(), before + 1);
        // A move hands the count over; it is not counted twice.
        connection_ticket moved{std::move(second)};
        EXPECT_FALSE(second.held()); // NOLINT(bugprone-use-after-move): a moved-from ticket holds nothing
        EXPECT_EQ(open_target_connections(), before + 1);
        first = std::move(moved);
        EXPECT_EQ(open_target_connections(), before + 1);
    }
    EXPECT_EQ(open_target_connections(), before);
    EXPECT_FALSE(connection_ticket{}.held());
}

TEST(connection_descriptor_bound, is_the_soft_limit_less_the_reserve)
{
    rlimit limit{};
    ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &limit), 0);
    constexpr std::size_t none = std::numeric_limits<std::size_t>::max();
    EXPECT_EQ(connection_descriptor_bound(0), none);
    if (limit.rlim_cur == RLIM_INFINITY) {
        EXPECT_EQ(connection_descriptor_bound(128), none);
        return;
    }
    const auto soft = static_cast<std::size_t>(limit.rlim_cur);
    EXPECT_EQ(connection_descriptor_bound(1), soft - 1);
    EXPECT_EQ(connection_descriptor_bound(soft - 1), 1U);
    EXPECT_EQ(connection_descriptor_bound(soft), 0U);
    EXPECT_EQ(connection_descriptor_bound(soft + 1), 0U);
}

} // namespace transport_tcp_descriptor_reserve_test
} // namespace
