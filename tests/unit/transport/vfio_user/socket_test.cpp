#include <nvmekit/transport/vfio_user/socket.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
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

// ---- the listening socket's path -----------------------------------------------------------

/// A scratch directory, removed with what the test left in it.
struct socket_directory : ::testing::Test {
    std::string directory;
    std::string path;
    void SetUp() override
    {
        std::string pattern = "/tmp/nvmekit-vfio-user-XXXXXX";
        ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
        directory = pattern;
        path = directory + "/socket";
    }
    void TearDown() override
    {
        ::unlink(path.c_str());
        ::rmdir(path.c_str());
        ::rmdir(directory.c_str());
    }
};

TEST_F(socket_directory, a_file_at_the_path_is_refused_and_kept)
{
    const int fd = ::open(path.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::write(fd, "disk image", 10), 10);
    ::close(fd);
    try {
        [[maybe_unused]] auto listener = vu::listen_unix(path);
        FAIL() << "listened over a regular file";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string{e.what()}.find("exists and is not a socket"), std::string::npos) << e.what();
        EXPECT_NE(std::string{e.what()}.find(path), std::string::npos) << e.what();
    }
    struct stat kept {};
    ASSERT_EQ(::stat(path.c_str(), &kept), 0);
    EXPECT_TRUE(S_ISREG(kept.st_mode));
    EXPECT_EQ(kept.st_size, 10);
}

TEST_F(socket_directory, a_directory_at_the_path_is_refused)
{
    ASSERT_EQ(::mkdir(path.c_str(), 0700), 0);
    EXPECT_THROW((void)vu::listen_unix(path), std::runtime_error);
    struct stat kept {};
    ASSERT_EQ(::stat(path.c_str(), &kept), 0);
    EXPECT_TRUE(S_ISDIR(kept.st_mode));
}

TEST_F(socket_directory, a_live_socket_is_refused_and_keeps_its_server)
{
    auto first = vu::listen_unix(path);
    try {
        [[maybe_unused]] auto second = vu::listen_unix(path);
        FAIL() << "took a live socket over";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string{e.what()}.find("already answers"), std::string::npos) << e.what();
    }
    // The first server still accepts on its path (the probe's connection is queued first).
    const auto address = nvmekit::transport::unix_socket_address(path, "test");
    const int client = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(client, 0);
    EXPECT_EQ(::connect(client, reinterpret_cast<const sockaddr*>(&address), sizeof address), 0);
    ::close(client);
}

TEST_F(socket_directory, a_stale_socket_is_replaced)
{
    {
        auto gone = vu::listen_unix(path); // closed without removing its file
    }
    struct stat stale {};
    ASSERT_EQ(::lstat(path.c_str(), &stale), 0);
    ASSERT_TRUE(S_ISSOCK(stale.st_mode));
    auto listener = vu::listen_unix(path);
    EXPECT_TRUE(listener.valid());
}

} // namespace transport_vfio_user_socket_test
} // namespace
