#pragma once
/// The TCP sockets of the NVMe/TCP target and initiator (each a unique_fd): an
/// IPv4 or IPv6 address in text made a socket address, a non-blocking listener and a blocking
/// connection, the addresses they are bound to, and a peer's address as a key. Failures of the
/// system calls throw std::system_error; an address that is neither IPv4 nor IPv6 throws
/// std::invalid_argument.

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <iterator>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <nvmekit/config.hpp>
#include <nvmekit/transport/unique_fd.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace transport::tcp {

/// The sockets' owner (transport/unique_fd.hpp), named here as in the vfio-user transport.
using transport::unique_fd;

[[noreturn]] inline void throw_errno(const char* what)
{
    throw std::system_error{errno, std::generic_category(), what};
}

/// A socket address from an IPv4 or IPv6 address in text and a port.
struct socket_address {
    sockaddr_storage storage{};
    socklen_t length = 0;
    int family = AF_INET;

    [[nodiscard]] const sockaddr* get() const noexcept { return reinterpret_cast<const sockaddr*>(&storage); }

    static socket_address parse(const std::string& address, std::uint16_t port)
    {
        socket_address parsed;
        if (auto* v4 = reinterpret_cast<sockaddr_in*>(&parsed.storage);
            ::inet_pton(AF_INET, address.c_str(), &v4->sin_addr) == 1) {
            v4->sin_family = AF_INET;
            v4->sin_port = htons(port);
            parsed.length = sizeof(sockaddr_in);
        } else if (auto* v6 = reinterpret_cast<sockaddr_in6*>(&parsed.storage);
                   ::inet_pton(AF_INET6, address.c_str(), &v6->sin6_addr) == 1) {
            v6->sin6_family = AF_INET6;
            v6->sin6_port = htons(port);
            parsed.length = sizeof(sockaddr_in6);
            parsed.family = AF_INET6;
        } else {
            throw std::invalid_argument{"not an IPv4 or IPv6 address: " + address};
        }
        return parsed;
    }
};

/// A non-blocking listening socket on `address`:`port` (0: any free port; see local_port).
inline unique_fd listen_on(const std::string& address, std::uint16_t port)
{
    const auto where = socket_address::parse(address, port);
    // The errors name the address: a server with several listeners says which one failed.
    const auto fail = [&](const char* what) {
        const int error = errno;
        const std::string name = where.family == AF_INET6 ? "[" + address + "]" : address;
        throw std::system_error{error, std::generic_category(),
                                std::string{"tcp: "} + what + " " + name + ":" + std::to_string(port)};
    };
    unique_fd fd{::socket(where.family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)};
    if (fd.get() < 0) {
        fail("socket");
    }
    const int on = 1;
    ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
    if (::bind(fd.get(), where.get(), where.length) != 0) {
        fail("bind");
    }
    if (::listen(fd.get(), 128) != 0) {
        fail("listen");
    }
    return fd;
}

/// A blocking connection to `address`:`port` with TCP_NODELAY; `before_connect` runs on the new
/// socket first (to set socket options that must precede the connection).
template <typename Configure>
unique_fd connect_to(const std::string& address, std::uint16_t port, Configure&& before_connect)
{
    const auto where = socket_address::parse(address, port);
    unique_fd fd{::socket(where.family, SOCK_STREAM | SOCK_CLOEXEC, 0)};
    if (fd.get() < 0) {
        throw_errno("tcp: socket");
    }
    const int on = 1;
    ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
    before_connect(fd.get());
    if (::connect(fd.get(), where.get(), where.length) != 0) {
        throw_errno("tcp: connect");
    }
    return fd;
}

/// Whether `address` (IPv4 or IPv6 text) is the unspecified address, 0.0.0.0 or ::, on which a
/// listener takes connections to every address of the host. Throws std::invalid_argument when
/// it is neither IPv4 nor IPv6.
inline bool is_unspecified_address(const std::string& address)
{
    const auto parsed = socket_address::parse(address, 0);
    if (parsed.family == AF_INET6) {
        const auto& bytes = reinterpret_cast<const sockaddr_in6*>(&parsed.storage)->sin6_addr.s6_addr;
        return std::all_of(std::begin(bytes), std::end(bytes), [](std::uint8_t b) { return b == 0; });
    }
    return reinterpret_cast<const sockaddr_in*>(&parsed.storage)->sin_addr.s_addr == htonl(INADDR_ANY);
}

/// An IP address in text, and its family.
struct address_text {
    std::string text;
    bool ipv6 = false;
};

/// The local address of connected socket `fd`: the address its peer connected to. An
/// IPv4-mapped IPv6 address (an IPv4 peer of a listener on ::) is given as the IPv4 address it
/// maps, which is what that peer knows. Throws std::system_error when getsockname fails.
inline address_text local_address(int fd)
{
    sockaddr_storage storage{};
    socklen_t length = sizeof(storage);
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&storage), &length) != 0) {
        throw_errno("tcp: getsockname");
    }
    std::array<char, INET6_ADDRSTRLEN> text{};
    if (storage.ss_family == AF_INET6) {
        const auto& bytes = reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_addr.s6_addr;
        // ::ffff:a.b.c.d (RFC 4291 2.5.5.2)
        const bool v4_mapped = std::all_of(bytes, bytes + 10, [](std::uint8_t b) { return b == 0; }) &&
                               bytes[10] == 0xff && bytes[11] == 0xff;
        if (v4_mapped) {
            ::inet_ntop(AF_INET, bytes + 12, text.data(), text.size());
            return {text.data(), false};
        }
        ::inet_ntop(AF_INET6, bytes, text.data(), text.size());
        return {text.data(), true};
    }
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&storage)->sin_addr, text.data(), text.size());
    return {text.data(), false};
}

/// A peer's IP address as 16 bytes: an IPv6 address, or an IPv4 one as the IPv4-mapped IPv6
/// address (::ffff:a.b.c.d, RFC 4291 2.5.5.2), so a host counts as one whichever family reached
/// a listener on ::.
using peer_address = std::array<std::uint8_t, 16>;

/// The peer_address of socket address `storage` (AF_INET or AF_INET6; another family gives all
/// zeros).
inline peer_address peer_address_of(const sockaddr_storage& storage) noexcept
{
    peer_address out{};
    if (storage.ss_family == AF_INET6) {
        const auto& bytes = reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_addr.s6_addr;
        std::copy(std::begin(bytes), std::end(bytes), out.begin());
    } else if (storage.ss_family == AF_INET) {
        const auto* v4 = reinterpret_cast<const std::uint8_t*>(
            &reinterpret_cast<const sockaddr_in*>(&storage)->sin_addr.s_addr);
        out[10] = 0xff;
        out[11] = 0xff;
        std::copy(v4, v4 + 4, out.begin() + 12);
    }
    return out;
}

/// The port a socket is bound to.
inline std::uint16_t local_port(int fd)
{
    sockaddr_storage storage{};
    socklen_t length = sizeof(storage);
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&storage), &length) != 0) {
        throw_errno("tcp: getsockname");
    }
    if (storage.ss_family == AF_INET6) {
        return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_port);
    }
    return ntohs(reinterpret_cast<const sockaddr_in*>(&storage)->sin_port);
}

} // namespace transport::tcp
NVMEKIT_END_NAMESPACE
