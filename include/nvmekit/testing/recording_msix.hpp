#pragma once
/// An InterruptProvider for tests: records every MSI-X raise in order and tracks the INTx pin.
///
/// A controller may raise interrupts from several threads (its poll groups) while the test's host
/// thread checks them: raise_msix, set_intx, clear and every accessor that returns a value (count,
/// total, snapshot, intx_level, intx_transitions) hold an internal mutex and are safe to call
/// meanwhile. events() returns a view into the recording, which a concurrent raise may
/// reallocate: use it only while no raise can happen, and snapshot() otherwise.

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <span>
#include <vector>

#include <nvmekit/config.hpp>
#include <nvmekit/contracts/interrupts.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace testing {

/// One recorded MSI-X raise.
struct msix_event {
    std::uint16_t vector{};
    msix_message message{};
    friend constexpr bool operator==(const msix_event&, const msix_event&) noexcept = default;
};

/// Records MSI-X raises and INTx levels; models IntxInterruptProvider.
class recording_msix {
public:
    recording_msix() = default;

    /// A copy of `other`'s recording and INTx state (taken under `other`'s mutex), with a mutex
    /// of its own.
    recording_msix(const recording_msix& other)
    {
        const std::lock_guard lock{other.mutex_};
        events_ = other.events_;
        counts_ = other.counts_;
        intx_level_ = other.intx_level_;
        intx_transitions_ = other.intx_transitions_;
    }

    recording_msix& operator=(const recording_msix& other)
    {
        if (this != &other) {
            const std::scoped_lock lock{mutex_, other.mutex_};
            events_ = other.events_;
            counts_ = other.counts_;
            intx_level_ = other.intx_level_;
            intx_transitions_ = other.intx_transitions_;
        }
        return *this;
    }

    ~recording_msix() = default;

    /// Records the raise of `vector` with `message`. Safe from several threads at once.
    void raise_msix(std::uint16_t vector, msix_message message)
    {
        const std::lock_guard lock{mutex_};
        if (vector >= counts_.size()) {
            counts_.resize(std::size_t{vector} + 1);
        }
        events_.push_back({vector, message});
        ++counts_[vector];
    }

    /// Drives the INTx pin; a call that changes the level counts as one transition. Safe from
    /// several threads at once.
    void set_intx(bool level)
    {
        const std::lock_guard lock{mutex_};
        if (level != intx_level_) {
            intx_level_ = level;
            ++intx_transitions_;
        }
    }

    /// The recorded raises, oldest first. A view: valid only while no raise_msix or clear runs
    /// (a raise may reallocate it). While raises may happen, use snapshot().
    [[nodiscard]] std::span<const msix_event> events() const noexcept { return events_; }

    /// A copy of the recorded raises, oldest first; safe while raises happen.
    [[nodiscard]] std::vector<msix_event> snapshot() const
    {
        const std::lock_guard lock{mutex_};
        return events_;
    }

    /// How many recorded raises were of `vector`; safe while raises happen.
    [[nodiscard]] std::size_t count(std::uint16_t vector) const
    {
        const std::lock_guard lock{mutex_};
        return vector < counts_.size() ? counts_[vector] : 0;
    }

    /// How many raises were recorded, of any vector; safe while raises happen.
    [[nodiscard]] std::size_t total() const
    {
        const std::lock_guard lock{mutex_};
        return events_.size();
    }

    /// The INTx pin's level (deasserted, false, at construction); safe while set_intx runs.
    [[nodiscard]] bool intx_level() const
    {
        const std::lock_guard lock{mutex_};
        return intx_level_;
    }

    /// How many times set_intx() changed the level since construction or clear(); safe while
    /// set_intx runs.
    [[nodiscard]] std::size_t intx_transitions() const
    {
        const std::lock_guard lock{mutex_};
        return intx_transitions_;
    }

    /// Forgets the recorded raises and transitions; the INTx level stays, as the pin would. Safe
    /// while raises happen (each raise lands either before, and is forgotten, or after).
    void clear()
    {
        const std::lock_guard lock{mutex_};
        events_.clear();
        counts_.clear();
        intx_transitions_ = 0;
    }

private:
    mutable std::mutex mutex_; ///< guards every member below
    std::vector<msix_event> events_;
    std::vector<std::size_t> counts_; ///< raises per vector, indexed by vector
    bool intx_level_{false};
    std::size_t intx_transitions_{};
};

static_assert(IntxInterruptProvider<recording_msix>);
static_assert(check_interrupt_provider<recording_msix>());

} // namespace testing
NVMEKIT_END_NAMESPACE
