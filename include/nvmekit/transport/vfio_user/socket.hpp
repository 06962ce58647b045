#pragma once
/// The vfio-user byte stream: a listening UNIX socket, and whole messages received with the file
/// descriptors that travel with them (SCM_RIGHTS) or sent. Plain POSIX, no threads.
///
/// A receive reads the 16-byte header first, checks it (parse_header, protocol/decode.hpp) and then reads
/// exactly the rest of the message, so a client can never make the server read more than the
/// limits allow; descriptors beyond max_msg_fds are closed at once.

#include <array>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <nvmekit/config.hpp>
#include <nvmekit/transport/unique_fd.hpp>
#include <nvmekit/transport/unix_socket_path.hpp>
#include <nvmekit/transport/vfio_user/protocol.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace transport::vfio_user {

/// The sockets' and received descriptors' owner (transport/unique_fd.hpp).
using transport::unique_fd;

/// A listening UNIX stream socket at `path`. A stale socket file there (nobody listening) is
/// replaced; anything else at the path (a file, a directory, a socket a server answers on) is
/// refused with std::runtime_error naming it (prepare_unix_socket_path). Throws std::system_error
/// naming the path when the socket cannot be created.
[[nodiscard]] inline unique_fd listen_unix(const std::string& path, int backlog = 1)
{
    const sockaddr_un address = transport::unix_socket_address(path, "vfio-user");
    transport::prepare_unix_socket_path(path, "vfio-user");
    unique_fd socket{::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)};
    if (!socket.valid()) {
        throw std::system_error(errno, std::generic_category(), "vfio-user: socket() for " + path);
    }
    if (::bind(socket.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
        throw std::system_error(errno, std::generic_category(), "vfio-user: bind " + path);
    }
    if (::listen(socket.get(), backlog) != 0) {
        const int error = errno;
        ::unlink(path.c_str());
        throw std::system_error(error, std::generic_category(), "vfio-user: listen " + path);
    }
    return socket;
}

/// What a receive found.
enum class receive_status : std::uint8_t {
    message, ///< a whole message is in the buffer
    closed,  ///< the client closed the connection (cleanly, between messages)
    broken,  ///< the stream cannot be trusted (I/O error, bad header, closed mid-message)
};

/// One received message: its bytes (header included) and the descriptors that came with it.
struct received_message {
    std::vector<std::byte> bytes;
    std::vector<unique_fd> fds;
    message_header header{};
};

namespace detail {

/// Reads exactly `out.size()` bytes, collecting descriptors into `fds` (at most `max_fds`; the
/// others are closed). Returns 0 on success, -1 when the peer closed before the first byte, and
/// errno (or EPIPE for a close mid-read) otherwise.
inline int read_exactly(int fd, std::span<std::byte> out, std::vector<unique_fd>& fds, std::size_t max_fds)
{
    std::size_t done = 0;
    while (done < out.size()) {
        iovec io{out.data() + done, out.size() - done};
        alignas(cmsghdr) std::array<std::byte, CMSG_SPACE(sizeof(int) * 32)> control{};
        msghdr message{};
        message.msg_iov = &io;
        message.msg_iovlen = 1;
        message.msg_control = control.data();
        message.msg_controllen = control.size();
        const ssize_t got = ::recvmsg(fd, &message, MSG_CMSG_CLOEXEC);
        if (got < 0) {
            if (errno == EINTR) {
                continue;
            }
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                pollfd wait{fd, POLLIN, 0};
                ::poll(&wait, 1, 1000);
                continue;
            }
            return errno;
        }
        for (cmsghdr* header = CMSG_FIRSTHDR(&message); header != nullptr;
             header = CMSG_NXTHDR(&message, header)) {
            if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) {
                continue;
            }
            const std::size_t count = (header->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            for (std::size_t i = 0; i < count; ++i) {
                int received = -1;
                std::memcpy(&received, CMSG_DATA(header) + i * sizeof(int), sizeof(int));
                unique_fd owned{received};
                if (fds.size() < max_fds) {
                    fds.push_back(std::move(owned));
                }
            }
        }
        if (got == 0) {
            return done == 0 ? -1 : EPIPE;
        }
        done += static_cast<std::size_t>(got);
    }
    return 0;
}

} // namespace detail

/// Which message types a receive takes; any other type breaks the stream.
enum class accepted_messages : std::uint8_t {
    commands,             ///< commands only (parse_header)
    commands_and_replies, ///< replies too, to requests the server sent (parse_message_header)
};

/// Receives one message from `fd` into `out`.
[[nodiscard]] inline receive_status receive_message(int fd, received_message& out,
                                                    const protocol_limits& limits = {},
                                                    accepted_messages accepted = accepted_messages::commands)
{
    out.fds.clear();
    out.bytes.resize(header_size);
    const int first = detail::read_exactly(fd, out.bytes, out.fds, limits.max_msg_fds);
    if (first == -1) {
        return receive_status::closed;
    }
    if (first != 0) {
        return receive_status::broken;
    }
    const auto header = accepted == accepted_messages::commands ? parse_header(out.bytes, limits)
                                                                : parse_message_header(out.bytes, limits);
    if (!header) {
        return receive_status::broken;
    }
    out.header = *header;
    out.bytes.resize(header->message_size);
    if (header->message_size > header_size) {
        const auto rest = std::span{out.bytes}.subspan(header_size);
        if (detail::read_exactly(fd, rest, out.fds, limits.max_msg_fds) != 0) {
            return receive_status::broken;
        }
    }
    return receive_status::message;
}

/// Sends all of `bytes`; false when the connection failed.
inline bool send_message(int fd, std::span<const std::byte> bytes)
{
    std::size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t sent = ::send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
        if (sent < 0) {
            if (errno == EINTR) {
                continue;
            }
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                pollfd wait{fd, POLLOUT, 0};
                ::poll(&wait, 1, 1000);
                continue;
            }
            return false;
        }
        done += static_cast<std::size_t>(sent);
    }
    return true;
}

/// Sends all of `bytes` with `fds` as SCM_RIGHTS data (on the first byte); false when the
/// connection failed.
inline bool send_message(int fd, std::span<const std::byte> bytes, std::span<const int> fds)
{
    if (fds.empty()) {
        return send_message(fd, bytes);
    }
    constexpr std::size_t max_fds = 253; // SCM_MAX_FD
    if (fds.size() > max_fds || bytes.empty()) {
        return false;
    }
    alignas(cmsghdr) std::array<std::byte, CMSG_SPACE(sizeof(int) * max_fds)> control{};
    iovec io{const_cast<std::byte*>(bytes.data()), bytes.size()};
    msghdr message{};
    message.msg_iov = &io;
    message.msg_iovlen = 1;
    message.msg_control = control.data();
    message.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
    cmsghdr* rights = CMSG_FIRSTHDR(&message);
    rights->cmsg_level = SOL_SOCKET;
    rights->cmsg_type = SCM_RIGHTS;
    rights->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(rights), fds.data(), sizeof(int) * fds.size());
    ssize_t sent = 0;
    do {
        sent = ::sendmsg(fd, &message, MSG_NOSIGNAL);
    } while (sent < 0 && errno == EINTR);
    if (sent <= 0) {
        return false;
    }
    return send_message(fd, bytes.subspan(static_cast<std::size_t>(sent)));
}

} // namespace transport::vfio_user
NVMEKIT_END_NAMESPACE
