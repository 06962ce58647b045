#pragma once
/// Making room for a listening UNIX socket at a path without destroying what is there: a path that
/// holds anything but a socket is refused, and so is a socket a server still answers on; only a
/// stale socket file (nobody listening) is removed. Used by every listener of the library (the
/// JSON-RPC server, the vfio-user socket), so that `--vfio-user disk.img` can never delete the
/// image and a second server never takes a live socket over from the first. Plain POSIX.

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>
#include <system_error>

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <nvmekit/config.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace transport {

/// What prepare_unix_socket_path found at the path.
enum class socket_path_state : unsigned char {
    absent,        ///< nothing there
    stale_removed, ///< a socket file nobody listens on, now removed
};

/// The address of `path`. Throws std::invalid_argument, with `who` first in the message, for a
/// path that does not fit a socket address (1 to 107 bytes on Linux).
[[nodiscard]] inline sockaddr_un unix_socket_address(const std::string& path, const std::string& who)
{
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    if (path.empty() || path.size() >= sizeof(address.sun_path)) {
        throw std::invalid_argument(who + ": socket path must be 1 to " +
                                    std::to_string(sizeof(address.sun_path) - 1) + " bytes: " + path);
    }
    std::memcpy(address.sun_path, path.data(), path.size());
    return address;
}

/// Makes `path` free for bind(2): refuses (std::runtime_error naming the path, `who` first) a path
/// that exists and is not a socket, or is a socket a server accepts connections on (a connect
/// succeeds, or finds the listener's backlog full); removes a socket file nobody listens on.
/// std::system_error for a failing stat, socket, connect or unlink.
inline socket_path_state prepare_unix_socket_path(const std::string& path, const std::string& who)
{
    const sockaddr_un address = unix_socket_address(path, who);
    struct stat existing {};
    if (::lstat(path.c_str(), &existing) != 0) {
        if (errno == ENOENT) {
            return socket_path_state::absent;
        }
        throw std::system_error(errno, std::generic_category(), who + ": stat " + path);
    }
    if (!S_ISSOCK(existing.st_mode)) {
        throw std::runtime_error(who + ": " + path + " exists and is not a socket");
    }
    const int probe = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (probe < 0) {
        throw std::system_error(errno, std::generic_category(), who + ": socket() for " + path);
    }
    const int connected = ::connect(probe, reinterpret_cast<const sockaddr*>(&address), sizeof address);
    const int error = errno;
    ::close(probe);
    if (connected == 0 || error == EAGAIN || error == EINPROGRESS) {
        // Connected, or a listener whose backlog is full: a server is there.
        throw std::runtime_error(who + ": a server already answers at " + path);
    }
    if (error != ECONNREFUSED && error != ENOENT) {
        throw std::system_error(error, std::generic_category(), who + ": probing " + path);
    }
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
        throw std::system_error(errno, std::generic_category(), who + ": removing stale socket " + path);
    }
    return socket_path_state::stale_removed;
}

} // namespace transport
NVMEKIT_END_NAMESPACE
