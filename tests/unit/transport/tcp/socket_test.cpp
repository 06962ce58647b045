#include <nvmekit/transport/tcp/socket.hpp>

#include <array>
#include <cstdint>
#include <stdexcept>
#include <system_error>

#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>

namespace {
namespace transport_tcp_socket_test {

namespace tcp = nvmekit::transport::tcp;

TEST(tcp_socket, addresses_are_ipv4_or_ipv6)
{
    const auto v4 = tcp::socket_address::parse("127.0.0.1", 4420);
    EXPECT_EQ(v4.family, AF_INET);
    EXPECT_EQ(v4.length, sizeof(sockaddr_in));
    EXPECT_EQ(ntohs(reinterpret_cast<const sockaddr_in*>(v4.get())->sin_port), 4420);
    const auto v6 = tcp::socket_address::parse("::1", 8009);
    EXPECT_EQ(v6.family, AF_INET6);
    EXPECT_EQ(v6.length, sizeof(sockaddr_in6));
    EXPECT_THROW(static_cast<void>(tcp::socket_address::parse("localhost", 1)), std::invalid_argument);
    EXPECT_THROW(static_cast<void>(tcp::socket_address::parse("[::1]", 1)), std::invalid_argument);
}

TEST(tcp_socket, a_listener_on_any_port_accepts_a_connection)
{
    const auto listener = tcp::listen_on("127.0.0.1", 0);
    const std::uint16_t port = tcp::local_port(listener.get());
    EXPECT_NE(port, 0);
    bool configured = false;
    const auto client = tcp::connect_to("127.0.0.1", port, [&](int fd) { configured = fd >= 0; });
    EXPECT_TRUE(configured);
    tcp::socket_handle accepted;
    for (int attempt = 0; attempt < 1000 && accepted.get() < 0; ++attempt) {
        accepted = tcp::socket_handle{::accept(listener.get(), nullptr, nullptr)}; // non-blocking listener
    }
    ASSERT_GE(accepted.get(), 0);
    const std::array<char, 3> hello{'h', 'i', '!'};
    ASSERT_EQ(::send(client.get(), hello.data(), hello.size(), 0), 3);
    std::array<char, 3> got{};
    ASSERT_EQ(::recv(accepted.get(), got.data(), got.size(), MSG_WAITALL), 3);
    EXPECT_EQ(got, hello);
}

TEST(tcp_socket, a_refused_connection_throws)
{
    std::uint16_t port = 0;
    {
        const auto listener = tcp::listen_on("127.0.0.1", 0);
        port = tcp::local_port(listener.get());
    } // closed: nothing listens there any more
    EXPECT_THROW(static_cast<void>(tcp::connect_to("127.0.0.1", port, [](int) {})), std::system_error);
}

} // namespace transport_tcp_socket_test
} // namespace
