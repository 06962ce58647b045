#include <nvmekit/transport/vfio_user/socket.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>
#include <gtest/gtest.h>

namespace {
namespace transport_vfio_user_socket_test {

namespace vu = nvmekit::transport::vfio_user;

struct socket_pair : ::testing::Test {
    int client = -1;
    int server = -1;
    void SetUp() override
    {
        std::array<int, 2> fds{};
        ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds.data()), 0);
        client = fds[0];
        server = fds[1];
    }
    void TearDown() override
    {
        if (client >= 0) {
            ::close(client);
        }
        ::close(server);
    }
};

std::vector<std::byte> message(vu::command code, std::uint16_t id, std::size_t payload_bytes)
{
    std::vector<std::byte> bytes(vu::header_size + payload_bytes, std::byte{0x5a});
    vu::message_header header{};
    header.message_id = id;
    header.command_code = code;
    header.message_size = static_cast<std::uint32_t>(bytes.size());
    header.flags = vu::message_flags{}.with(vu::message_flags::type, vu::message_type::command);
    header.error_number = 0;
    std::memcpy(bytes.data(), &header, sizeof header);
    return bytes;
}

/// Sends `bytes` with `fd` attached (SCM_RIGHTS) when fd >= 0.
void send_with_fd(int socket, std::span<const std::byte> bytes, int fd)
{
    iovec io{const_cast<std::byte*>(bytes.data()), bytes.size()};
    alignas(cmsghdr) std::array<std::byte, CMSG_SPACE(sizeof(int))> control{};
    msghdr msg{};
    msg.msg_iov = &io;
    msg.msg_iovlen = 1;
    if (fd >= 0) {
        msg.msg_control = control.data();
        msg.msg_controllen = control.size();
        cmsghdr* header = CMSG_FIRSTHDR(&msg);
        header->cmsg_level = SOL_SOCKET;
        header->cmsg_type = SCM_RIGHTS;
        header->cmsg_len = CMSG_LEN(sizeof(int));
        std::memcpy(CMSG_DATA(header), &fd, sizeof(int));
    }
    ASSERT_EQ(::sendmsg(socket, &msg, 0), static_cast<ssize_t>(bytes.size()));
}

TEST_F(socket_pair, a_message_arrives_whole_with_its_descriptor)
{
    const auto bytes = message(vu::command::dma_map, 7, 32);
    const int fd = ::eventfd(0, EFD_CLOEXEC);
    send_with_fd(client, bytes, fd);
    ::close(fd);
    vu::received_message received;
    ASSERT_EQ(vu::receive_message(server, received), vu::receive_status::message);
    EXPECT_EQ(received.header.message_id, 7);
    EXPECT_EQ(received.header.command_code, vu::command::dma_map);
    EXPECT_EQ(received.bytes, bytes);
    ASSERT_EQ(received.fds.size(), 1U);
    EXPECT_GE(::fcntl(received.fds[0].get(), F_GETFD), 0); // a live descriptor
}

TEST_F(socket_pair, a_message_split_across_writes_is_reassembled)
{
    const auto bytes = message(vu::command::region_write, 3, 100);
    ASSERT_EQ(::write(client, bytes.data(), 10), 10);
    ASSERT_EQ(::write(client, bytes.data() + 10, bytes.size() - 10), static_cast<ssize_t>(bytes.size() - 10));
    vu::received_message received;
    ASSERT_EQ(vu::receive_message(server, received), vu::receive_status::message);
    EXPECT_EQ(received.bytes, bytes);
}

TEST_F(socket_pair, a_clean_close_between_messages_is_closed)
{
    ::close(client);
    client = -1;
    vu::received_message received;
    EXPECT_EQ(vu::receive_message(server, received), vu::receive_status::closed);
}

TEST_F(socket_pair, a_close_in_the_middle_of_a_message_is_broken)
{
    const auto bytes = message(vu::command::region_write, 3, 100);
    ASSERT_EQ(::write(client, bytes.data(), 40), 40);
    ::close(client);
    client = -1;
    vu::received_message received;
    EXPECT_EQ(vu::receive_message(server, received), vu::receive_status::broken);
}

TEST_F(socket_pair, an_oversized_or_undersized_header_is_broken_without_reading_on)
{
    auto bytes = message(vu::command::region_write, 3, 0);
    const std::uint32_t huge = 0xffffffffU;
    std::memcpy(bytes.data() + 4, &huge, sizeof huge);
    ASSERT_EQ(::write(client, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
    vu::received_message received;
    EXPECT_EQ(vu::receive_message(server, received), vu::receive_status::broken);
    EXPECT_EQ(received.bytes.size(), vu::header_size); // nothing beyond the header was read

    auto small = message(vu::command::version, 1, 0);
    const std::uint32_t eight = 8;
    std::memcpy(small.data() + 4, &eight, sizeof eight);
    ASSERT_EQ(::write(client, small.data(), small.size()), static_cast<ssize_t>(small.size()));
    EXPECT_EQ(vu::receive_message(server, received), vu::receive_status::broken);
}

TEST_F(socket_pair, descriptors_beyond_the_limit_are_closed)
{
    const auto bytes = message(vu::command::dma_map, 1, 0);
    const int fd = ::eventfd(0, EFD_CLOEXEC);
    send_with_fd(client, bytes, fd);
    ::close(fd);
    vu::received_message received;
    vu::protocol_limits limits{};
    limits.max_msg_fds = 0;
    ASSERT_EQ(vu::receive_message(server, received, limits), vu::receive_status::message);
    EXPECT_TRUE(received.fds.empty());
}

TEST_F(socket_pair, send_message_sends_everything)
{
    const auto bytes = message(vu::command::version, 9, 64);
    ASSERT_TRUE(vu::send_message(server, bytes));
    std::vector<std::byte> got(bytes.size());
    ASSERT_EQ(::read(client, got.data(), got.size()), static_cast<ssize_t>(got.size()));
    EXPECT_EQ(got, bytes);
    ::close(client);
    client = -1;
    EXPECT_FALSE(vu::send_message(server, bytes)); // EPIPE, no SIGPIPE
}

} // namespace transport_vfio_user_socket_test
} // namespace
