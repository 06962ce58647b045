#pragma once
/// The descriptors NVMe/TCP targets leave to the rest of their process: every target counts its
/// open connections in one process-wide count (a connection_ticket each), and together they hold
/// at most connection_descriptor_bound(reserve), RLIMIT_NOFILE's soft limit less `reserve`, so
/// that a flood of connections cannot take the descriptors a management socket, a vfio-user
/// client or a file backend needs (target_options::descriptor_reserve).
///
///     auto ticket = connection_ticket::take();     // a connection accepted
///     if (open_target_connections() >= connection_descriptor_bound(128)) { ... }   // full
///     ticket.reset();                              // its socket closed
///
/// The count is the process's (one inline variable): targets of any Traits, on any thread, share it.

#include <atomic>
#include <cstddef>
#include <limits>
#include <utility>

#include <sys/resource.h>

#include <nvmekit/config.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace transport::tcp {

namespace detail {
/// Connections held by the NVMe/TCP targets of this process (connection_ticket).
inline std::atomic<std::size_t> target_connections{0};
} // namespace detail

/// One connection of a target, counted in open_target_connections() from take() until reset()
/// or destruction. Move-only.
class connection_ticket {
public:
    /// Counts nothing.
    connection_ticket() noexcept = default;

    /// Counts one connection more.
    [[nodiscard]] static connection_ticket take() noexcept
    {
        detail::target_connections.fetch_add(1, std::memory_order_relaxed);
        return connection_ticket{true};
    }

    connection_ticket(connection_ticket&& other) noexcept : held_{std::exchange(other.held_, false)} {}
    connection_ticket& operator=(connection_ticket&& other) noexcept
    {
        if (this != &other) {
            reset();
            held_ = std::exchange(other.held_, false);
        }
        return *this;
    }
    connection_ticket(const connection_ticket&) = delete;
    connection_ticket& operator=(const connection_ticket&) = delete;
    ~connection_ticket() { reset(); }

    /// Counts its connection no more (once).
    void reset() noexcept
    {
        if (std::exchange(held_, false)) {
            detail::target_connections.fetch_sub(1, std::memory_order_relaxed);
        }
    }

    [[nodiscard]] bool held() const noexcept { return held_; }

private:
    explicit connection_ticket(bool held) noexcept : held_{held} {}

    bool held_ = false;
};

/// Connections the NVMe/TCP targets of this process hold now, on every thread.
[[nodiscard]] inline std::size_t open_target_connections() noexcept
{
    return detail::target_connections.load(std::memory_order_relaxed);
}

/// The connections the targets of this process may hold together so that `reserve` descriptors
/// stay free for everything else: RLIMIT_NOFILE's soft limit, read now, less `reserve` (0 when
/// the limit is not above it). No bound (the size_t maximum) when `reserve` is 0, the soft limit
/// is RLIM_INFINITY or it cannot be read.
[[nodiscard]] inline std::size_t connection_descriptor_bound(std::size_t reserve) noexcept
{
    constexpr std::size_t none = std::numeric_limits<std::size_t>::max();
    rlimit limit{};
    if (reserve == 0 || ::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY ||
        limit.rlim_cur >= none) {
        return none;
    }
    const auto soft = static_cast<std::size_t>(limit.rlim_cur);
    return soft > reserve ? soft - reserve : 0;
}

} // namespace transport::tcp
NVMEKIT_END_NAMESPACE
