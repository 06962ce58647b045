#include <nvmekit/transport/unique_fd.hpp>

#include <gtest/gtest.h>

#include <array>
#include <cerrno>
#include <utility>

#include <fcntl.h>
#include <unistd.h>

namespace {
namespace unique_fd_test {

using nvmekit::transport::unique_fd;

bool is_open(int fd) { return ::fcntl(fd, F_GETFD) != -1 || errno != EBADF; }

/// The two ends of a new pipe.
std::array<int, 2> new_pipe()
{
    std::array<int, 2> ends{-1, -1};
    EXPECT_EQ(::pipe2(ends.data(), O_CLOEXEC), 0);
    return ends;
}

TEST(unique_fd, closes_its_descriptor_when_it_goes)
{
    const auto ends = new_pipe();
    {
        const unique_fd reader{ends[0]};
        EXPECT_TRUE(reader.valid());
        EXPECT_EQ(reader.get(), ends[0]);
        EXPECT_TRUE(is_open(ends[0]));
    }
    EXPECT_FALSE(is_open(ends[0]));
    ::close(ends[1]);
}

TEST(unique_fd, a_move_hands_the_descriptor_over_and_an_assignment_closes_the_old_one)
{
    const auto first = new_pipe();
    const auto second = new_pipe();
    unique_fd a{first[0]};
    unique_fd b{std::move(a)};
    EXPECT_FALSE(a.valid()); // NOLINT(bugprone-use-after-move): a moved-from owner holds -1
    EXPECT_EQ(b.get(), first[0]);
    EXPECT_TRUE(is_open(first[0]));

    b = unique_fd{second[0]};
    EXPECT_FALSE(is_open(first[0]));
    EXPECT_EQ(b.get(), second[0]);
    ::close(first[1]);
    ::close(second[1]);
}

TEST(unique_fd, release_gives_the_descriptor_up_and_reset_closes_it)
{
    const auto ends = new_pipe();
    unique_fd reader{ends[0]};
    const int released = reader.release();
    EXPECT_EQ(released, ends[0]);
    EXPECT_FALSE(reader.valid());
    EXPECT_TRUE(is_open(released));

    reader.reset(released);
    EXPECT_TRUE(reader.valid());
    reader.reset();
    EXPECT_FALSE(reader.valid());
    EXPECT_FALSE(is_open(released));
    ::close(ends[1]);
}

} // namespace unique_fd_test
} // namespace
