#pragma once
/// An InterruptProvider for tests: records every MSI-X raise in order and tracks the INTx pin.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include <nvmekit/config.hpp>
#include <nvmekit/interrupts.hpp>

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
    /// Records the raise of `vector` with `message`.
    void raise_msix(std::uint16_t vector, msix_message message) { events_.push_back({vector, message}); }

    /// Drives the INTx pin; a call that changes the level counts as one transition.
    void set_intx(bool level) noexcept
    {
        if (level != intx_level_) {
            intx_level_ = level;
            ++intx_transitions_;
        }
    }

    /// The recorded raises, oldest first.
    [[nodiscard]] std::span<const msix_event> events() const noexcept { return events_; }

    /// How many recorded raises were of `vector`.
    [[nodiscard]] std::size_t count(std::uint16_t vector) const noexcept
    {
        return static_cast<std::size_t>(
            std::count_if(events_.begin(), events_.end(),
                          [vector](const msix_event& event) { return event.vector == vector; }));
    }

    /// The INTx pin's level (deasserted, false, at construction).
    [[nodiscard]] bool intx_level() const noexcept { return intx_level_; }

    /// How many times set_intx() changed the level since construction or clear().
    [[nodiscard]] std::size_t intx_transitions() const noexcept { return intx_transitions_; }

    /// Forgets the recorded raises and transitions; the INTx level stays, as the pin would.
    void clear() noexcept
    {
        events_.clear();
        intx_transitions_ = 0;
    }

private:
    std::vector<msix_event> events_;
    bool intx_level_{false};
    std::size_t intx_transitions_{};
};

static_assert(IntxInterruptProvider<recording_msix>);
static_assert(check_interrupt_provider<recording_msix>());

} // namespace testing
NVMEKIT_END_NAMESPACE
