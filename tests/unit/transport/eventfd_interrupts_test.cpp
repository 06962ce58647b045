#include <nvmekit/transport/eventfd_interrupts.hpp>

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <gtest/gtest.h>

namespace {
namespace transport_eventfd_interrupts_test {

using nvmekit::transport::eventfd_interrupts;

static_assert(nvmekit::InterruptProvider<eventfd_interrupts>);
static_assert(nvmekit::IntxInterruptProvider<eventfd_interrupts>);

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

TEST(eventfd_interrupts, intx_is_signalled_as_a_level_that_masks_itself_until_unmasked)
{
    eventfd_interrupts interrupts{1};
    const int fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    ASSERT_GE(fd, 0);
    const int watcher = ::dup(fd);
    interrupts.set_intx(true); // asserted before the client gave an eventfd
    EXPECT_EQ(interrupts.intx_signals(), 0U);
    interrupts.assign_intx(fd); // an asserted pin is signalled at once
    EXPECT_EQ(drain(watcher), 1U);
    EXPECT_TRUE(interrupts.intx_masked());
    // Masked after the signal: the level staying high signals nothing more.
    interrupts.set_intx(true);
    EXPECT_EQ(drain(watcher), 0U);
    // The client unmasks after the guest's end of interrupt: still asserted, so signalled again.
    interrupts.mask_intx(false);
    EXPECT_EQ(drain(watcher), 1U);
    // The guest consumed the completions: the level drops; unmasking then signals nothing.
    interrupts.set_intx(false);
    interrupts.mask_intx(false);
    EXPECT_EQ(drain(watcher), 0U);
    EXPECT_FALSE(interrupts.intx_masked());
    // A new rising level is signalled.
    interrupts.set_intx(true);
    EXPECT_EQ(drain(watcher), 1U);
    EXPECT_EQ(interrupts.intx_signals(), 3U);
    // Interrupt Disable holds the pin off; clearing it with the level high signals.
    interrupts.set_intx(false);
    interrupts.mask_intx(false);
    interrupts.set_intx_disabled(true);
    interrupts.set_intx(true);
    EXPECT_EQ(drain(watcher), 0U);
    EXPECT_TRUE(interrupts.intx_level());
    interrupts.set_intx_disabled(false);
    EXPECT_EQ(drain(watcher), 1U);
    // A client-requested mask holds it too.
    interrupts.set_intx(false);
    interrupts.mask_intx(true);
    interrupts.set_intx(true);
    EXPECT_EQ(drain(watcher), 0U);
    interrupts.clear(); // closes the INTx eventfd
    EXPECT_EQ(::fcntl(fd, F_GETFD), -1);
    EXPECT_EQ(interrupts.intx_fd(), -1);
    ::close(watcher);
}

TEST(eventfd_interrupts, raises_from_several_threads_while_the_vectors_are_reassigned)
{
    // Poll groups raise from threads of their own while the vfio-user server's thread hands the
    // vectors new eventfds (SET_IRQS): every raise lands on an eventfd that is still open, and
    // each is counted once.
    eventfd_interrupts interrupts{2};
    const int first = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    const int watcher = ::dup(first);
    ASSERT_TRUE(interrupts.assign(0, first));
    constexpr int raises_per_thread = 20000;
    std::atomic<bool> go{false};
    std::vector<std::thread> groups;
    for (int group = 0; group < 2; ++group) {
        groups.emplace_back([&, group] {
            while (!go.load()) {
                std::this_thread::yield();
            }
            for (int i = 0; i < raises_per_thread; ++i) {
                interrupts.raise_msix(static_cast<std::uint16_t>(group), {});
            }
        });
    }
    go = true;
    for (int i = 0; i < 200; ++i) {
        interrupts.assign(1, ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
        interrupts.assign(1, -1);
    }
    for (auto& group : groups) {
        group.join();
    }
    EXPECT_EQ(interrupts.raised() + interrupts.dropped(), 2U * raises_per_thread);
    EXPECT_EQ(drain(watcher), static_cast<std::uint64_t>(raises_per_thread)); // vector 0 kept its eventfd
    interrupts.clear();
    ::close(watcher);
}

} // namespace transport_eventfd_interrupts_test
} // namespace
