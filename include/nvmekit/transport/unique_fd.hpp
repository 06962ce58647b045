#pragma once
/// The library's one owner of a POSIX file descriptor: a socket, an eventfd or a file, closed when
/// the owner goes. The NVMe/TCP sockets, the vfio-user socket and the JSON-RPC server all hold
/// their descriptors in it. Plain POSIX.

#include <utility>

#include <unistd.h>

#include <nvmekit/config.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace transport {

/// A file descriptor closed on destruction; -1 when it holds none. Movable, not copyable.
class unique_fd {
public:
    unique_fd() noexcept = default;
    explicit unique_fd(int fd) noexcept : fd_{fd} {}
    unique_fd(unique_fd&& other) noexcept : fd_{other.release()} {}
    unique_fd& operator=(unique_fd&& other) noexcept
    {
        if (this != &other) {
            reset(other.release());
        }
        return *this;
    }
    unique_fd(const unique_fd&) = delete;
    unique_fd& operator=(const unique_fd&) = delete;
    ~unique_fd() { reset(); }

    [[nodiscard]] int get() const noexcept { return fd_; }
    [[nodiscard]] bool valid() const noexcept { return fd_ >= 0; }
    /// Gives the descriptor up without closing it.
    [[nodiscard]] int release() noexcept { return std::exchange(fd_, -1); }
    /// Closes the descriptor held, if any, and holds `fd`.
    void reset(int fd = -1) noexcept
    {
        if (fd_ >= 0) {
            ::close(fd_);
        }
        fd_ = fd;
    }

private:
    int fd_ = -1;
};

} // namespace transport
NVMEKIT_END_NAMESPACE
