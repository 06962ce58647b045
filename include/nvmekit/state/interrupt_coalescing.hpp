#pragma once
/// Interrupt coalescing per interrupt vector: Feature 08h Interrupt Coalescing (Base 2.0
/// 5.27.1.9) and the Coalescing Disable bit of Feature 09h Interrupt Vector Configuration (Base
/// 2.0 5.27.1.10).
///
/// THR is the 0's based number of completion queue entries to aggregate on a vector before
/// signalling it; TIME is the longest delay, in 100 microsecond units, that coalescing may add,
/// measured from the vector's first aggregated completion. TIME = 0 means no delay, so THR = 0 or
/// TIME = 0 signals every completion (the reset state). Coalescing applies to I/O completion
/// queues only: the controller passes `coalesce = false` for the admin CQ, and a vector signalled
/// for any reason starts aggregating afresh, since one interrupt covers every CQ on the vector.
///
/// The coalescer decides; it holds no clock and raises nothing. The caller signals the vector
/// when `on_completion` says so, calls `expire(now, f)` from its poll loop or when the timer it set
/// from `next_deadline()` fires, and signals each vector `f` receives.

#include <bit>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <vector>

#include <nvmekit/config.hpp>
#include <nvmekit/spec/features.hpp>

NVMEKIT_BEGIN_NAMESPACE

class interrupt_coalescer {
public:
    /// Most vectors an MSI-X table can have.
    static constexpr std::uint16_t max_vectors = 2048;
    /// The unit of TIME.
    static constexpr std::chrono::nanoseconds time_unit = std::chrono::microseconds{100};

    /// A coalescer for vectors 0 to `vectors` - 1 (1 to 2048), in its reset state; throws
    /// std::invalid_argument otherwise.
    explicit interrupt_coalescer(std::uint16_t vectors)
        : vectors_{checked_vectors(vectors)}, states_(vectors), aggregating_((std::size_t{vectors} + 63) / 64)
    {}

    [[nodiscard]] std::uint16_t vectors() const noexcept { return vectors_; }

    /// Set Features 08h: THR (0's based) and TIME (100 us units). Vectors already aggregating keep
    /// their count; their deadline follows the new TIME.
    void configure(std::uint8_t threshold_zero_based, std::uint8_t time_100us) noexcept
    {
        threshold_ = threshold_zero_based;
        time_ = time_100us;
    }
    /// Set Features 08h with the command's Dword 11.
    void configure(spec::interrupt_coalescing value) noexcept
    {
        configure(value.get(spec::interrupt_coalescing::thr), value.get(spec::interrupt_coalescing::time));
    }
    /// Get Features 08h: the current THR and TIME.
    [[nodiscard]] spec::interrupt_coalescing configuration() const noexcept
    {
        return spec::interrupt_coalescing{}
            .with(spec::interrupt_coalescing::thr, threshold_)
            .with(spec::interrupt_coalescing::time, time_);
    }

    /// Set Features 09h: the Coalescing Disable bit of `vector`. Returns false, changing nothing,
    /// when `vector` is not below vectors() (the command then fails with Invalid Field in Command).
    /// Disabling signals nothing by itself: a vector already aggregating still expires.
    bool set_coalescing_disabled(std::uint16_t vector, bool disabled) noexcept
    {
        if (vector >= vectors_) {
            return false;
        }
        states_[vector].disabled = disabled;
        return true;
    }
    /// Get Features 09h: the Coalescing Disable bit of `vector` (false when `vector` is out of
    /// range).
    [[nodiscard]] bool coalescing_disabled(std::uint16_t vector) const noexcept
    {
        return vector < vectors_ && states_[vector].disabled;
    }

    /// A completion queue entry was posted on a CQ that uses `vector` (`coalesce` false for the
    /// admin CQ). Returns true when the vector must be signalled now: coalescing does not apply
    /// (`coalesce` false, CD set, THR = 0 or TIME = 0), THR + 1 entries have been aggregated, or
    /// TIME has already elapsed since the first aggregated one. The vector then starts afresh.
    /// Otherwise the entry is aggregated and false returned. `vector` must be below vectors(): the
    /// controller checks IV when it creates a CQ.
    [[nodiscard]] bool on_completion(std::uint16_t vector, bool coalesce,
                                     std::chrono::nanoseconds now) noexcept
    {
        NVMEKIT_ASSERT(vector < vectors_, "interrupt_coalescer: vector beyond the configured vectors");
        auto& state = states_[vector];
        if (!coalesce || state.disabled || threshold_ == 0 || time_ == 0) {
            stop(vector);
            return true;
        }
        if (state.count == 0) {
            state.first = now;
            aggregating_[vector / 64] |= bit(vector);
        }
        ++state.count;
        if (state.count > threshold_ || now - state.first >= time_span()) {
            stop(vector);
            return true;
        }
        return false;
    }

    /// True while `vector` holds aggregated entries not yet signalled.
    [[nodiscard]] bool aggregating(std::uint16_t vector) const noexcept
    {
        return vector < vectors_ && states_[vector].count != 0;
    }
    /// Entries aggregated on `vector` since it was last signalled (0 when out of range).
    [[nodiscard]] std::uint16_t aggregated_count(std::uint16_t vector) const noexcept
    {
        return vector < vectors_ ? states_[vector].count : std::uint16_t{0};
    }

    /// Calls f(vector) for each aggregating vector whose TIME has elapsed at `now`, in ascending
    /// vector order, after resetting that vector (so `f` may call on_completion again).
    template <typename F>
    void expire(std::chrono::nanoseconds now, F&& f)
    {
        const auto span = time_span();
        for_each_aggregating([&](std::uint16_t vector) {
            if (now - states_[vector].first >= span) {
                stop(vector);
                f(vector);
            }
        });
    }

    /// Calls f(vector) for every aggregating vector, in ascending vector order, after resetting it.
    template <typename F>
    void flush_all(F&& f)
    {
        for_each_aggregating([&](std::uint16_t vector) {
            stop(vector);
            f(vector);
        });
    }

    /// The earliest time at which an aggregating vector expires, or nothing when none aggregates.
    [[nodiscard]] std::optional<std::chrono::nanoseconds> next_deadline() const noexcept
    {
        std::optional<std::chrono::nanoseconds> earliest;
        const auto span = time_span();
        for_each_aggregating([&](std::uint16_t vector) {
            const auto deadline = states_[vector].first + span;
            if (!earliest || deadline < *earliest) {
                earliest = deadline;
            }
        });
        return earliest;
    }

    /// Controller reset: THR = 0, TIME = 0, every CD bit clear, nothing aggregating.
    void reset() noexcept
    {
        threshold_ = 0;
        time_ = 0;
        for (auto& state : states_) {
            state = vector_state{};
        }
        for (auto& word : aggregating_) {
            word = 0;
        }
    }

private:
    struct vector_state {
        std::chrono::nanoseconds first{}; // time of the first aggregated entry
        std::uint16_t count = 0;          // aggregated entries (at most THR + 1 = 256)
        bool disabled = false;            // CD
    };

    static std::uint16_t checked_vectors(std::uint16_t vectors)
    {
        if (vectors == 0 || vectors > max_vectors) {
            throw std::invalid_argument("interrupt_coalescer: the number of vectors must be 1 to 2048");
        }
        return vectors;
    }

    [[nodiscard]] static constexpr std::uint64_t bit(std::uint16_t vector) noexcept
    {
        return std::uint64_t{1} << (vector % 64);
    }

    [[nodiscard]] std::chrono::nanoseconds time_span() const noexcept { return time_unit * time_; }

    void stop(std::uint16_t vector) noexcept
    {
        states_[vector].count = 0;
        aggregating_[vector / 64] &= ~bit(vector);
    }

    /// Visits a snapshot of each word of the aggregating set, so `visit` may change the set.
    template <typename Visit>
    void for_each_aggregating(Visit&& visit) const
    {
        for (std::size_t word = 0; word < aggregating_.size(); ++word) {
            std::uint64_t bits = aggregating_[word];
            while (bits != 0) {
                const auto index = static_cast<unsigned>(std::countr_zero(bits));
                bits &= bits - 1;
                visit(static_cast<std::uint16_t>(word * 64 + index));
            }
        }
    }

    std::uint16_t vectors_;
    std::uint8_t threshold_ = 0;
    std::uint8_t time_ = 0;
    std::vector<vector_state> states_;
    std::vector<std::uint64_t> aggregating_;
};

NVMEKIT_END_NAMESPACE
