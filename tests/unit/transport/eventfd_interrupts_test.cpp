#include <nvmekit/transport/eventfd_interrupts.hpp>

#include <cstdint>

#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/eventfd.h>
#include <unistd.h>

namespace {

using nvmekit::transport::eventfd_interrupts;

static_assert(nvmekit::InterruptProvider<eventfd_interrupts>);

std::uint64_t drain(int fd)
{
    std::uint64_t value = 0;
    return ::read(fd, &value, sizeof value) == sizeof value ? value : 0;
}

TEST(eventfd_interrupts, a_vector_signals_its_eventfd)
{
    eventfd_interrupts interrupts{4};
    const int fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    ASSERT_GE(fd, 0);
    const int watcher = ::dup(fd); // the client's end of the same counter
    ASSERT_TRUE(interrupts.assign(2, fd));
    interrupts.raise_msix(2, {});
    interrupts.raise_msix(2, {});
    EXPECT_EQ(drain(watcher), 2U);
    EXPECT_EQ(interrupts.raised(), 2U);
    interrupts.raise_msix(1, {}); // no eventfd: dropped
    EXPECT_EQ(interrupts.dropped(), 1U);
    EXPECT_EQ(drain(watcher), 0U);
    ::close(watcher);
}

TEST(eventfd_interrupts, reassigning_or_clearing_closes_the_old_eventfd)
{
    eventfd_interrupts interrupts{2};
    const int first = ::eventfd(0, EFD_CLOEXEC);
    const int second = ::eventfd(0, EFD_CLOEXEC);
    ASSERT_TRUE(interrupts.assign(0, first));
    ASSERT_TRUE(interrupts.assign(0, second));
    EXPECT_EQ(::fcntl(first, F_GETFD), -1); // closed
    EXPECT_EQ(interrupts.fd(0), second);
    interrupts.clear();
    EXPECT_EQ(::fcntl(second, F_GETFD), -1);
    EXPECT_EQ(interrupts.fd(0), -1);
}

TEST(eventfd_interrupts, a_vector_out_of_range_is_refused_and_its_fd_closed)
{
    eventfd_interrupts interrupts{2};
    const int fd = ::eventfd(0, EFD_CLOEXEC);
    EXPECT_FALSE(interrupts.assign(2, fd));
    EXPECT_EQ(::fcntl(fd, F_GETFD), -1);
    EXPECT_EQ(interrupts.fd(7), -1);
}

} // namespace
