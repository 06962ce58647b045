#pragma once
/// Interrupt signalling of the PCIe function: which MSI-X vectors a processing context raises at
/// the end of its poll (vector_signalling), and the INTx pin for hosts without MSI-X (intx_pin).
///
/// A context (the admin context or a poll group) reports the completion entries it posted on each
/// CQ; a vector becomes due when coalescing (interrupt_coalescing.hpp) says so, and each due
/// vector is raised once at the end of the poll however many CQs and entries made it due. The
/// pin is asserted while pin-based interrupts are allowed (MSI-X off, INTMS bit 0 clear) and a
/// CQ with interrupts enabled holds entries (Base 2.0 3.5.1.1 and 3.5.2); the controller decides
/// those two conditions and the pin only follows them, changing level only when it must.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <vector>

#include <nvmekit/config.hpp>
#include <nvmekit/state/interrupt_coalescing.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace pci {

/// One processing context's MSI-X vectors: coalescing per vector and the vectors due.
class vector_signalling {
public:
    /// Vectors 0 to `vectors` - 1 (1 to 2048).
    explicit vector_signalling(std::uint16_t vectors) : coalescer_{vectors}, vector_due_(vectors)
    {
        due_vectors_.reserve(vectors);
    }

    /// The coalescing of this context's vectors (Set Features 08h and 09h configure it).
    [[nodiscard]] interrupt_coalescer& coalescer() noexcept { return coalescer_; }
    [[nodiscard]] const interrupt_coalescer& coalescer() const noexcept { return coalescer_; }

    /// `posted` entries were posted on a CQ that signals `vector` with interrupts enabled: the
    /// vector becomes due unless coalescing holds it back (`coalesce` false for the admin CQ,
    /// which is never coalesced).
    void on_completions(std::uint16_t vector, bool coalesce, std::uint32_t posted,
                        std::chrono::nanoseconds now)
    {
        if (vector_due_[vector]) {
            return;
        }
        for (std::uint32_t entry = 0; entry < posted; ++entry) {
            if (coalescer_.on_completion(vector, coalesce, now)) {
                mark_due(vector);
                return;
            }
        }
    }

    /// Vectors whose aggregation time has passed become due; then `raise(vector)` is called for
    /// every due vector, in the order they became due, and none is due any more.
    template <typename Raise>
    void raise_due(std::chrono::nanoseconds now, Raise&& raise)
    {
        coalescer_.expire(now, [this](std::uint16_t vector) { mark_due(vector); });
        for (const std::uint16_t vector : due_vectors_) {
            vector_due_[vector] = false;
            raise(vector);
        }
        due_vectors_.clear();
    }

    /// Whether `vector` is due at the end of this poll.
    [[nodiscard]] bool due(std::uint16_t vector) const noexcept { return vector_due_[vector]; }

private:
    void mark_due(std::uint16_t vector)
    {
        if (!vector_due_[vector]) {
            vector_due_[vector] = true;
            due_vectors_.push_back(vector); // within the capacity reserved at construction
        }
    }

    interrupt_coalescer coalescer_;
    std::vector<bool> vector_due_;
    std::vector<std::uint16_t> due_vectors_;
};

/// The INTx pin of an interrupt provider with `set_intx(bool)` (IntxInterruptProvider).
///
/// With one processing context the controller calls set_level() with the level it wants. With
/// concurrent poll groups each context reports: the admin context whether the pin is allowed and
/// whether the admin CQ wants it (report_admin), each group whether one of its CQs wants it (its
/// own flag); whoever changed a report then calls refresh() with the groups' flags, from any
/// thread: calls are ordered by a mutex (INTx is the slow legacy path), so the last one sees
/// every change.
template <typename Interrupts>
class intx_pin {
public:
    explicit intx_pin(Interrupts& interrupts) noexcept : interrupts_{interrupts} {}

    /// Drives the pin to `level` when it is not there already.
    void set_level(bool level)
    {
        if (level != level_) {
            level_ = level;
            interrupts_.set_intx(level);
        }
    }

    /// The level the pin was last driven to.
    [[nodiscard]] bool level() const noexcept { return level_; }

    /// Concurrent contexts: the admin context's report.
    void report_admin(bool allowed, bool admin_wanted) noexcept
    {
        allowed_.store(allowed, std::memory_order_relaxed);
        admin_wanted_.store(admin_wanted, std::memory_order_relaxed);
    }

    /// Concurrent contexts: sets the pin from the reports; `any_group_wants()` reads the groups'.
    template <typename AnyGroupWants>
    void refresh(AnyGroupWants&& any_group_wants)
    {
        const std::lock_guard lock{mutex_};
        set_level(allowed_.load(std::memory_order_relaxed) &&
                  (admin_wanted_.load(std::memory_order_relaxed) || any_group_wants()));
    }

private:
    Interrupts& interrupts_;
    bool level_ = false; ///< with concurrent contexts, guarded by mutex_
    std::mutex mutex_;
    std::atomic<bool> allowed_{false};      ///< MSI-X off and INTMS bit 0 clear
    std::atomic<bool> admin_wanted_{false}; ///< the admin CQ holds entries
};

} // namespace pci
NVMEKIT_END_NAMESPACE
