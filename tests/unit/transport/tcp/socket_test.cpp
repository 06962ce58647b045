#include <nvmekit/transport/tcp/socket.hpp>

#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>

#include <gtest/gtest.h>

#include <netinet/in.h>
#include <poll.h>
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
    tcp::unique_fd accepted;
    for (int attempt = 0; attempt < 1000 && accepted.get() < 0; ++attempt) {
        accepted = tcp::unique_fd{::accept(listener.get(), nullptr, nullptr)}; // non-blocking listener
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

TEST(tcp_socket, the_unspecified_addresses_name_every_address)
{
    EXPECT_TRUE(tcp::is_unspecified_address("0.0.0.0"));
    EXPECT_TRUE(tcp::is_unspecified_address("::"));
    EXPECT_TRUE(tcp::is_unspecified_address("0:0::0"));
    EXPECT_FALSE(tcp::is_unspecified_address("127.0.0.1"));
    EXPECT_FALSE(tcp::is_unspecified_address("::1"));
    EXPECT_FALSE(tcp::is_unspecified_address("::ffff:0.0.0.0"));
    EXPECT_THROW(static_cast<void>(tcp::is_unspecified_address("any")), std::invalid_argument);
}

/// A connection to `listener` (bound to the port `port`) at `address`, and the listener's end of it.
std::pair<tcp::unique_fd, tcp::unique_fd> connection_to(const tcp::unique_fd& listener,
                                                        const std::string& address, std::uint16_t port)
{
    auto client = tcp::connect_to(address, port, [](int) {});
    tcp::unique_fd accepted;
    pollfd readable{listener.get(), POLLIN, 0};
    if (::poll(&readable, 1, 30'000) == 1) { // a hang guard: the connection is there already
        accepted = tcp::unique_fd{::accept(listener.get(), nullptr, nullptr)};
    }
    return {std::move(client), std::move(accepted)};
}

TEST(tcp_socket, a_connection_to_a_listener_on_every_address_knows_the_address_it_reached)
{
    const auto listener = tcp::listen_on("0.0.0.0", 0);
    const auto [client, accepted] = connection_to(listener, "127.0.0.1", tcp::local_port(listener.get()));
    ASSERT_GE(accepted.get(), 0);
    const auto reached = tcp::local_address(accepted.get());
    EXPECT_EQ(reached.text, "127.0.0.1");
    EXPECT_FALSE(reached.ipv6);

    tcp::unique_fd v6;
    try {
        v6 = tcp::listen_on("::", 0);
    } catch (const std::system_error&) {
        GTEST_SKIP() << "no IPv6 on this machine (tests/test_stages.txt allows this skip)";
    }
    const std::uint16_t port = tcp::local_port(v6.get());
    try {
        const auto [client6, accepted6] = connection_to(v6, "::1", port);
        ASSERT_GE(accepted6.get(), 0);
        const auto reached6 = tcp::local_address(accepted6.get());
        EXPECT_EQ(reached6.text, "::1");
        EXPECT_TRUE(reached6.ipv6);
    } catch (const std::system_error&) {
        GTEST_SKIP() << "no IPv6 loopback address on this machine (tests/test_stages.txt allows this skip)";
    }
    // An IPv4 peer of a listener on :: (an IPv4-mapped address) reached its IPv4 address.
    try {
        const auto [client4, accepted4] = connection_to(v6, "127.0.0.1", port);
        ASSERT_GE(accepted4.get(), 0);
        const auto mapped = tcp::local_address(accepted4.get());
        EXPECT_EQ(mapped.text, "127.0.0.1");
        EXPECT_FALSE(mapped.ipv6);
    } catch (const std::system_error&) {
        GTEST_SKIP() << "IPV6_V6ONLY by default on this machine (tests/test_stages.txt allows this skip)";
    }
    EXPECT_THROW(static_cast<void>(tcp::local_address(-1)), std::system_error);
}

} // namespace transport_tcp_socket_test
} // namespace
