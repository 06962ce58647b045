#include <nvmekit/transport/tcp/send_queue.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

#include <sys/socket.h>
#include <unistd.h>

namespace {
namespace transport_tcp_send_queue_test {

using nvmekit::transport::tcp::send_queue;
using flush_result = send_queue::flush_result;

/// A connected pair of non-blocking stream sockets: the queue sends on one, the test reads the other.
class socket_pair {
public:
    socket_pair()
    {
        if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds_.data()) != 0) {
            throw std::runtime_error{"socketpair"};
        }
        const int small = 4096;
        ::setsockopt(fds_[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
    }
    socket_pair(const socket_pair&) = delete;
    socket_pair& operator=(const socket_pair&) = delete;
    ~socket_pair()
    {
        close_sender();
        close_receiver();
    }

    [[nodiscard]] int sender() const { return fds_[0]; }
    /// Everything that can be read now, appended to `out`.
    void drain(std::vector<std::byte>& out) const
    {
        std::array<std::byte, 65536> chunk{};
        for (;;) {
            const ssize_t got = ::recv(fds_[1], chunk.data(), chunk.size(), 0);
            if (got <= 0) {
                return;
            }
            out.insert(out.end(), chunk.begin(), chunk.begin() + got);
        }
    }
    void close_receiver()
    {
        if (fds_[1] >= 0) {
            ::close(fds_[1]);
            fds_[1] = -1;
        }
    }

private:
    void close_sender()
    {
        if (fds_[0] >= 0) {
            ::close(fds_[0]);
            fds_[0] = -1;
        }
    }
    std::array<int, 2> fds_{-1, -1};
};

std::vector<std::byte> filled(std::size_t size, unsigned seed)
{
    std::vector<std::byte> bytes(size);
    for (std::size_t i = 0; i < size; ++i) {
        bytes[i] = static_cast<std::byte>((i * 31U + seed) & 0xffU);
    }
    return bytes;
}

void append_bytes(send_queue& queue, const std::vector<std::byte>& bytes)
{
    queue.append(bytes.size() + 8, [&](std::span<std::byte> out) {
        std::memcpy(out.data(), bytes.data(), bytes.size());
        return bytes.size(); // less than offered: the queue keeps what was written
    });
}

TEST(send_queue, sends_bytes_and_buffers_in_order_and_reports_each_buffer_once)
{
    socket_pair sockets;
    send_queue queue;
    const auto head = filled(24, 1);
    const auto tail = filled(16, 2);
    std::vector<std::byte> buffer = filled(200'000, 3);
    append_bytes(queue, head);
    queue.append_buffer(7, buffer.size());
    append_bytes(queue, tail);
    EXPECT_EQ(queue.pending(), head.size() + buffer.size() + tail.size());

    std::vector<std::uint32_t> sent_tags;
    std::vector<std::byte> received;
    const auto buffer_of = [&](std::uint32_t tag) {
        EXPECT_EQ(tag, 7U);
        return std::span{buffer};
    };
    const auto on_sent = [&](std::uint32_t tag) { sent_tags.push_back(tag); };
    int rounds = 0;
    while (queue.flush(sockets.sender(), buffer_of, on_sent) == flush_result::would_block) {
        sockets.drain(received);
        ASSERT_LT(++rounds, 100000);
    }
    sockets.drain(received);
    EXPECT_GT(rounds, 0); // the small send buffer made it take several rounds
    EXPECT_TRUE(queue.empty());
    EXPECT_EQ(sent_tags, std::vector<std::uint32_t>{7});
    std::vector<std::byte> expected = head;
    expected.insert(expected.end(), buffer.begin(), buffer.end());
    expected.insert(expected.end(), tail.begin(), tail.end());
    EXPECT_EQ(received, expected);
    EXPECT_EQ(queue.stored_bytes(), 0U);
}

TEST(send_queue, drops_sent_bytes_once_they_are_most_of_the_queue)
{
    socket_pair sockets;
    send_queue queue{16};
    const auto first = filled(100, 4);
    const auto second = filled(100, 5);
    const auto third = filled(40, 6);
    std::vector<std::byte> buffer = filled(1 << 20, 7);
    append_bytes(queue, first);
    queue.append_buffer(1, buffer.size());
    append_bytes(queue, second);
    const auto buffer_of = [&](std::uint32_t /*tag*/) { return std::span{buffer}; };
    const auto ignore = [](std::uint32_t /*tag*/) {};
    ASSERT_EQ(queue.flush(sockets.sender(), buffer_of, ignore), flush_result::would_block);
    EXPECT_EQ(queue.stored_bytes(), 200U); // the first 100 are sent, the second 100 are not

    append_bytes(queue, third);
    EXPECT_EQ(queue.stored_bytes(), 140U); // the sent 100 dropped before appending

    std::vector<std::byte> received;
    while (queue.flush(sockets.sender(), buffer_of, ignore) == flush_result::would_block) {
        sockets.drain(received);
    }
    sockets.drain(received);
    std::vector<std::byte> expected = first;
    expected.insert(expected.end(), buffer.begin(), buffer.end());
    expected.insert(expected.end(), second.begin(), second.end());
    expected.insert(expected.end(), third.begin(), third.end());
    EXPECT_EQ(received, expected);
}

TEST(send_queue, a_closed_peer_fails_the_flush)
{
    socket_pair sockets;
    send_queue queue;
    sockets.close_receiver();
    append_bytes(queue, filled(64, 8));
    EXPECT_EQ(
        queue.flush(
            sockets.sender(), [](std::uint32_t) { return std::span<std::byte>{}; }, [](std::uint32_t) {}),
        flush_result::failed);
    queue.clear();
    EXPECT_TRUE(queue.empty());
}

} // namespace transport_tcp_send_queue_test
} // namespace
