#pragma once
/// An InterruptProvider that signals each MSI-X vector on an eventfd the client gave (vfio-user
/// SET_IRQS, a KVM irqfd): raising a vector writes 1 to its eventfd. A vector without an eventfd
/// is dropped (the client asked for no notification). The INTx pin is signalled on an eventfd of
/// its own, the way VFIO delivers a level-triggered interrupt: when the level rises (or the line
/// is unmasked while the level is high) 1 is written and the line masks itself until the client
/// unmasks it, after the guest's end of interrupt. Owns the file descriptors it is given.
///
///     nvmekit::transport::eventfd_interrupts interrupts{65};
///     interrupts.assign(1, fd);              // vector 1 now notifies `fd`
///     interrupts.assign_intx(intx_fd);       // the INTx pin notifies `intx_fd`

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
        assign_intx(-1);
    }

    /// The INTx pin notifies `fd` from now on (-1: no notification), unmasked; a previous
    /// eventfd is closed. A pin already asserted is signalled at once.
    void assign_intx(int fd) noexcept
    {
        if (intx_fd_ >= 0) {
            ::close(intx_fd_);
        }
        intx_fd_ = fd;
        intx_masked_ = false;
        deliver_intx();
    }

    /// InterruptProvider: drives the INTx pin (asserted while a completion queue with interrupts
    /// enabled holds entries and MSI-X is off).
    void set_intx(bool level) noexcept
    {
        intx_level_ = level;
        deliver_intx();
    }

    /// The client masks or unmasks the line (SET_IRQS MASK/UNMASK); unmasking while the pin is
    /// still asserted signals it again.
    void mask_intx(bool masked) noexcept
    {
        intx_masked_ = masked;
        deliver_intx();
    }

    /// PCI Command.Interrupt Disable (bit 10): while set the function does not assert INTx.
    void set_intx_disabled(bool disabled) noexcept
    {
        intx_disabled_ = disabled;
        deliver_intx();
    }

    [[nodiscard]] int intx_fd() const noexcept { return intx_fd_; }
    /// The pin's level as the controller drives it (PCI Status.Interrupt Status reports it,
    /// whatever Interrupt Disable says).
    [[nodiscard]] bool intx_level() const noexcept { return intx_level_; }
    [[nodiscard]] bool intx_masked() const noexcept { return intx_masked_; }
    [[nodiscard]] std::uint64_t intx_signals() const noexcept { return intx_signals_; }

    [[nodiscard]] int fd(std::uint16_t vector) const noexcept
    {
        return vector < fds_.size() ? fds_[vector] : -1;
    }
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
        signal(target);
        ++raised_;
    }

private:
    static void signal(int fd) noexcept
    {
        const std::uint64_t one = 1;
        ssize_t written = 0;
        do {
            written = ::write(fd, &one, sizeof one);
        } while (written < 0 && errno == EINTR);
        // EAGAIN means the counter is saturated: the client has an interrupt pending anyway.
    }

    void deliver_intx() noexcept
    {
        if (intx_level_ && !intx_disabled_ && !intx_masked_ && intx_fd_ >= 0) {
            signal(intx_fd_);
            intx_masked_ = true; // until the client unmasks the line (VFIO_IRQ_INFO_AUTOMASKED)
            ++intx_signals_;
        }
    }

    std::vector<int> fds_;
    std::uint64_t raised_ = 0;
    std::uint64_t dropped_ = 0;
    int intx_fd_ = -1;
    bool intx_level_ = false;
    bool intx_masked_ = false;
    bool intx_disabled_ = false;
    std::uint64_t intx_signals_ = 0;
};

} // namespace transport
NVMEKIT_END_NAMESPACE
