#pragma once
/// An InterruptProvider that signals each MSI-X vector on an eventfd the client gave (vfio-user
/// SET_IRQS, a KVM irqfd): raising a vector writes 1 to its eventfd. A vector without an eventfd
/// is dropped (the client asked for no notification). Owns the file descriptors it is given.
///
///     nvmekit::transport::eventfd_interrupts interrupts{65};
///     interrupts.assign(1, fd);              // vector 1 now notifies `fd`

#include <cerrno>
#include <cstdint>
#include <vector>

#include <unistd.h>

#include <nvmekit/config.hpp>
#include <nvmekit/interrupts.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace transport {

class eventfd_interrupts {
public:
    explicit eventfd_interrupts(std::uint16_t vectors) : fds_(vectors, -1) {}
    eventfd_interrupts(const eventfd_interrupts&) = delete;
    eventfd_interrupts& operator=(const eventfd_interrupts&) = delete;
    ~eventfd_interrupts() { clear(); }

    [[nodiscard]] std::uint16_t vectors() const noexcept { return static_cast<std::uint16_t>(fds_.size()); }

    /// Vector `vector` notifies `fd` from now on (-1: no notification); a previous eventfd of the
    /// vector is closed. False, closing `fd`, when the vector does not exist.
    bool assign(std::uint16_t vector, int fd) noexcept
    {
        if (vector >= fds_.size()) {
            if (fd >= 0) {
                ::close(fd);
            }
            return false;
        }
        if (fds_[vector] >= 0) {
            ::close(fds_[vector]);
        }
        fds_[vector] = fd;
        return true;
    }

    /// Closes every eventfd (the client went away, or asked to tear the interrupts down).
    void clear() noexcept
    {
        for (int& fd : fds_) {
            if (fd >= 0) {
                ::close(fd);
                fd = -1;
            }
        }
    }

    [[nodiscard]] int fd(std::uint16_t vector) const noexcept { return vector < fds_.size() ? fds_[vector] : -1; }
    [[nodiscard]] std::uint64_t raised() const noexcept { return raised_; }
    [[nodiscard]] std::uint64_t dropped() const noexcept { return dropped_; }

    /// InterruptProvider: notifies the vector's eventfd. The MSI-X message is the guest's own
    /// (the client delivers it), so only the vector matters here.
    void raise_msix(std::uint16_t vector, msix_message /*message*/) noexcept
    {
        const int target = fd(vector);
        if (target < 0) {
            ++dropped_;
            return;
        }
        const std::uint64_t one = 1;
        ssize_t written = 0;
        do {
            written = ::write(target, &one, sizeof one);
        } while (written < 0 && errno == EINTR);
        // EAGAIN means the counter is saturated: the client has an interrupt pending anyway.
        ++raised_;
    }

private:
    std::vector<int> fds_;
    std::uint64_t raised_ = 0;
    std::uint64_t dropped_ = 0;
};

} // namespace transport
NVMEKIT_END_NAMESPACE
