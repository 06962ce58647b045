#pragma once
/// An InterruptProvider that signals each MSI-X vector on an eventfd the client gave (vfio-user
/// SET_IRQS, a KVM irqfd): raising a vector writes 1 to its eventfd. A vector without an eventfd
/// is dropped (the client asked for no notification). The INTx pin is signalled on an eventfd of
/// its own, the way VFIO delivers a level-triggered interrupt: when the level rises (or the line
/// is unmasked while the level is high) 1 is written and the line masks itself until the client
/// unmasks it, after the guest's end of interrupt. Owns the file descriptors it is given.
///
/// Threading: raise_msix may be called from any number of threads at once (a controller's poll
/// groups on threads of their own), concurrently with assign and clear from one other thread
/// (the vfio-user server's, on SET_IRQS). A raise reads the vector's descriptor with one atomic
/// load inside a count of raises in progress; assign and clear swap the descriptor out and wait
/// for that count to reach zero before closing the old one, so a raise never writes to a
/// descriptor that was closed (and perhaps reused). The INTx pin's operations hold a mutex of
/// their own (INTx is not the path of a multi-queue controller).
///
///     nvmekit::transport::eventfd_interrupts interrupts{65};
///     interrupts.assign(1, fd);              // vector 1 now notifies `fd`
///     interrupts.assign_intx(intx_fd);       // the INTx pin notifies `intx_fd`

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>

#include <unistd.h>

#include <nvmekit/config.hpp>
#include <nvmekit/contracts/interrupts.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace transport {

class eventfd_interrupts {
public:
    explicit eventfd_interrupts(std::uint16_t vectors)
        : fds_{std::make_unique<std::atomic<int>[]>(vectors)}, vectors_{vectors}
    {
        for (std::uint16_t vector = 0; vector < vectors_; ++vector) {
            fds_[vector].store(-1, std::memory_order_relaxed);
        }
    }
    eventfd_interrupts(const eventfd_interrupts&) = delete;
    eventfd_interrupts& operator=(const eventfd_interrupts&) = delete;
    ~eventfd_interrupts() { clear(); }

    [[nodiscard]] std::uint16_t vectors() const noexcept { return vectors_; }

    /// Vector `vector` notifies `fd` from now on (-1: no notification); a previous eventfd of the
    /// vector is closed once no raise uses it. False, closing `fd`, when the vector does not exist.
    bool assign(std::uint16_t vector, int fd) noexcept
    {
        if (vector >= vectors_) {
            if (fd >= 0) {
                ::close(fd);
            }
            return false;
        }
        retire(fds_[vector].exchange(fd, std::memory_order_seq_cst));
        return true;
    }

    /// Closes every eventfd (the client went away, or asked to tear the interrupts down).
    void clear() noexcept
    {
        for (std::uint16_t vector = 0; vector < vectors_; ++vector) {
            retire(fds_[vector].exchange(-1, std::memory_order_seq_cst));
        }
        assign_intx(-1);
    }

    /// The INTx pin notifies `fd` from now on (-1: no notification), unmasked; a previous
    /// eventfd is closed. A pin already asserted is signalled at once.
    void assign_intx(int fd) noexcept
    {
        const std::lock_guard lock{intx_mutex_};
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
        const std::lock_guard lock{intx_mutex_};
        intx_level_ = level;
        deliver_intx();
    }

    /// The client masks or unmasks the line (SET_IRQS MASK/UNMASK); unmasking while the pin is
    /// still asserted signals it again.
    void mask_intx(bool masked) noexcept
    {
        const std::lock_guard lock{intx_mutex_};
        intx_masked_ = masked;
        deliver_intx();
    }

    /// PCI Command.Interrupt Disable (bit 10): while set the function does not assert INTx.
    void set_intx_disabled(bool disabled) noexcept
    {
        const std::lock_guard lock{intx_mutex_};
        intx_disabled_ = disabled;
        deliver_intx();
    }

    [[nodiscard]] int intx_fd() const noexcept
    {
        const std::lock_guard lock{intx_mutex_};
        return intx_fd_;
    }
    /// The pin's level as the controller drives it (PCI Status.Interrupt Status reports it,
    /// whatever Interrupt Disable says).
    [[nodiscard]] bool intx_level() const noexcept
    {
        const std::lock_guard lock{intx_mutex_};
        return intx_level_;
    }
    [[nodiscard]] bool intx_masked() const noexcept
    {
        const std::lock_guard lock{intx_mutex_};
        return intx_masked_;
    }
    [[nodiscard]] std::uint64_t intx_signals() const noexcept
    {
        const std::lock_guard lock{intx_mutex_};
        return intx_signals_;
    }

    [[nodiscard]] int fd(std::uint16_t vector) const noexcept
    {
        return vector < vectors_ ? fds_[vector].load(std::memory_order_acquire) : -1;
    }
    [[nodiscard]] std::uint64_t raised() const noexcept { return raised_.load(std::memory_order_relaxed); }
    [[nodiscard]] std::uint64_t dropped() const noexcept { return dropped_.load(std::memory_order_relaxed); }

    /// InterruptProvider: notifies the vector's eventfd. The MSI-X message is the guest's own
    /// (the client delivers it), so only the vector matters here.
    void raise_msix(std::uint16_t vector, msix_message /*message*/) noexcept
    {
        if (vector >= vectors_) {
            dropped_.fetch_add(1, std::memory_order_relaxed);
            return;
        }
        // seq_cst with retire(): either assign's exchange comes first and this loads the new
        // descriptor, or this raise is counted before retire() looks and the old one stays open.
        raising_.fetch_add(1, std::memory_order_seq_cst);
        const int target = fds_[vector].load(std::memory_order_seq_cst);
        if (target >= 0) {
            signal(target);
        }
        raising_.fetch_sub(1, std::memory_order_release);
        (target >= 0 ? raised_ : dropped_).fetch_add(1, std::memory_order_relaxed);
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

    /// Closes a descriptor swapped out of the table once no raise can still be using it.
    void retire(int fd) noexcept
    {
        if (fd < 0) {
            return;
        }
        while (raising_.load(std::memory_order_seq_cst) != 0) {
            std::this_thread::yield();
        }
        ::close(fd);
    }

    /// With intx_mutex_ held.
    void deliver_intx() noexcept
    {
        if (intx_level_ && !intx_disabled_ && !intx_masked_ && intx_fd_ >= 0) {
            signal(intx_fd_);
            intx_masked_ = true; // until the client unmasks the line (VFIO_IRQ_INFO_AUTOMASKED)
            ++intx_signals_;
        }
    }

    std::unique_ptr<std::atomic<int>[]> fds_;
    std::uint16_t vectors_;
    std::atomic<std::uint32_t> raising_{0}; ///< raise_msix calls between their load and their write
    std::atomic<std::uint64_t> raised_{0};
    std::atomic<std::uint64_t> dropped_{0};
    mutable std::mutex intx_mutex_;
    int intx_fd_ = -1;
    bool intx_level_ = false;
    bool intx_masked_ = false;
    bool intx_disabled_ = false;
    std::uint64_t intx_signals_ = 0;
};

} // namespace transport
NVMEKIT_END_NAMESPACE
