#pragma once
/// A DmaProvider wrapper for tests: records every access and injects failures.
///
///     nvmekit::testing::flat_memory memory;
///     nvmekit::testing::recording_dma dma{memory};
///     dma.fail_nth(2, nvmekit::testing::access_kind::write);  // the second write from now fails
///
/// An injected failure returns errc::dma_fault without calling the wrapped provider, so a failed
/// write stores nothing, a failed read leaves its destination untouched and a failed map returns
/// an empty span. Every fault rule sees every access of its kinds, whether or not another rule
/// already failed it, so each rule's pattern is independent of the others.

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <stdexcept>
#include <system_error>
#include <vector>

#include <nvmekit/config.hpp>
#include <nvmekit/dma.hpp>
#include <nvmekit/error.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace testing {

/// The kind of a DMA access; as a set of kinds (combined with `|`) it selects which accesses a
/// fault rule applies to.
enum class access_kind : std::uint8_t {
    read = 1,
    write = 2,
    map = 4,
    any = read | write | map,
};

/// The union of two sets of access kinds.
[[nodiscard]] constexpr access_kind operator|(access_kind left, access_kind right) noexcept
{
    return static_cast<access_kind>(static_cast<std::uint8_t>(left) | static_cast<std::uint8_t>(right));
}

/// Whether the set `kinds` contains `kind`.
[[nodiscard]] constexpr bool includes(access_kind kinds, access_kind kind) noexcept
{
    return (static_cast<std::uint8_t>(kinds) & static_cast<std::uint8_t>(kind)) != 0;
}

/// One recorded access: its kind, host range and outcome (an empty code on success).
struct dma_access {
    access_kind kind{};
    std::uint64_t address{};
    std::uint64_t length{};
    std::error_code result{};
    friend bool operator==(const dma_access&, const dma_access&) = default;
};

namespace detail {
/// The splitmix64 generator (Steele, Lea and Flood; Vigna's reference code): the same sequence on
/// every platform and standard library.
class splitmix64 {
public:
    explicit constexpr splitmix64(std::uint64_t seed) noexcept
        : state_{seed}
    {
    }

    constexpr std::uint64_t next() noexcept
    {
        state_ += 0x9e37'79b9'7f4a'7c15ULL;
        std::uint64_t mixed = state_;
        mixed = (mixed ^ (mixed >> 30)) * 0xbf58'476d'1ce4'e5b9ULL;
        mixed = (mixed ^ (mixed >> 27)) * 0x94d0'49bb'1331'11ebULL;
        return mixed ^ (mixed >> 31);
    }

    /// A double in [0, 1) from the top 53 bits of next().
    constexpr double next_unit() noexcept { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

private:
    std::uint64_t state_;
};

inline void check_kinds(access_kind kinds)
{
    if (!includes(kinds, access_kind::any)) {
        throw std::invalid_argument("recording_dma: the set of access kinds is empty");
    }
}
} // namespace detail

/// Wraps a DmaProvider by reference, recording and optionally failing its accesses. Models
/// MappingDmaProvider exactly when `Inner` does.
template <DmaProvider Inner>
class recording_dma {
public:
    /// Wraps `inner`, which must outlive the wrapper.
    explicit recording_dma(Inner& inner) noexcept
        : inner_{&inner}
    {
    }

    /// Forwards to `inner.read` unless a fault rule fails the access.
    std::error_code read(std::uint64_t address, std::span<std::byte> destination)
    {
        ++reads_;
        std::error_code result = inject(access_kind::read, address, destination.size());
        if (!result) {
            result = inner_->read(address, destination);
        }
        note(access_kind::read, address, destination.size(), result);
        return result;
    }

    /// Forwards to `inner.write` unless a fault rule fails the access (then nothing is stored).
    std::error_code write(std::uint64_t address, std::span<const std::byte> source)
    {
        ++writes_;
        std::error_code result = inject(access_kind::write, address, source.size());
        if (!result) {
            result = inner_->write(address, source);
        }
        note(access_kind::write, address, source.size(), result);
        return result;
    }

    /// Forwards to `inner.map` unless a fault rule fails the access (then the span is empty). An
    /// empty span for a non-zero length is recorded as errc::dma_unmapped.
    std::span<std::byte> map(std::uint64_t address, std::size_t length) requires MappingDmaProvider<Inner>
    {
        ++maps_;
        std::error_code result = inject(access_kind::map, address, length);
        std::span<std::byte> mapped;
        if (!result) {
            mapped = inner_->map(address, length);
            if (mapped.empty() && length != 0) {
                result = make_error_code(errc::dma_unmapped);
            }
        }
        note(access_kind::map, address, length, result);
        return mapped;
    }

    /// The wrapped provider.
    [[nodiscard]] Inner& inner() const noexcept { return *inner_; }

    /// Turns recording of accesses on (the default) or off; the counters count either way.
    void set_recording(bool enabled) noexcept { recording_ = enabled; }
    [[nodiscard]] bool recording() const noexcept { return recording_; }

    /// The recorded accesses, oldest first.
    [[nodiscard]] std::span<const dma_access> accesses() const noexcept { return accesses_; }

    /// Forgets the recorded accesses and zeroes the counters; fault rules stay.
    void clear() noexcept
    {
        accesses_.clear();
        reads_ = writes_ = maps_ = failures_ = 0;
    }

    /// Fails the `n`-th access (1-based, counted from this call) among those of `kinds`, once.
    /// Several pending rules count independently. Throws std::invalid_argument when `n` is 0 or
    /// `kinds` is empty.
    void fail_nth(std::size_t n, access_kind kinds = access_kind::any)
    {
        if (n == 0) {
            throw std::invalid_argument("recording_dma: fail_nth counts from 1");
        }
        detail::check_kinds(kinds);
        nth_rules_.push_back({n, kinds});
    }

    /// Fails every access of `kinds` that overlaps [address, address + length) (clamped at 2^64).
    /// Rules add up. Throws std::invalid_argument when `length` is 0 or `kinds` is empty.
    void fail_range(std::uint64_t address, std::uint64_t length, access_kind kinds = access_kind::any)
    {
        if (length == 0) {
            throw std::invalid_argument("recording_dma: fail_range needs a non-empty range");
        }
        detail::check_kinds(kinds);
        range_rules_.push_back({address, last_address(address, length), kinds});
    }

    /// Fails every `period`-th access of `kinds`, counted from this call; replaces an earlier
    /// fail_every. Throws std::invalid_argument when `period` is 0 or `kinds` is empty.
    void fail_every(std::size_t period, access_kind kinds = access_kind::any)
    {
        if (period == 0) {
            throw std::invalid_argument("recording_dma: fail_every needs a period of at least 1");
        }
        detail::check_kinds(kinds);
        every_ = {period, 0, kinds};
    }

    /// Fails each access of `kinds` with `probability`, drawn from splitmix64 seeded with `seed`
    /// (the same pattern on every platform); replaces an earlier fail_randomly. Throws
    /// std::invalid_argument when `probability` is not in [0, 1] or `kinds` is empty.
    void fail_randomly(double probability, std::uint64_t seed, access_kind kinds = access_kind::any)
    {
        if (!(probability >= 0.0 && probability <= 1.0)) {
            throw std::invalid_argument("recording_dma: the probability must be in [0, 1]");
        }
        detail::check_kinds(kinds);
        random_ = {true, probability, detail::splitmix64{seed}, kinds};
    }

    /// Removes every fault rule.
    void clear_faults() noexcept
    {
        nth_rules_.clear();
        range_rules_.clear();
        every_ = {};
        random_ = {};
    }

    /// Read accesses since construction or clear(), failed ones included.
    [[nodiscard]] std::size_t reads() const noexcept { return reads_; }
    /// Write accesses since construction or clear(), failed ones included.
    [[nodiscard]] std::size_t writes() const noexcept { return writes_; }
    /// Map accesses since construction or clear(), failed ones included.
    [[nodiscard]] std::size_t maps() const noexcept { return maps_; }
    /// Accesses that returned an error (injected or from the wrapped provider).
    [[nodiscard]] std::size_t failures() const noexcept { return failures_; }

private:
    struct nth_rule {
        std::size_t remaining;
        access_kind kinds;
    };
    struct range_rule {
        std::uint64_t first;
        std::uint64_t last; ///< inclusive
        access_kind kinds;
    };
    struct every_rule {
        std::size_t period{};
        std::size_t seen{};
        access_kind kinds{};
    };
    struct random_rule {
        bool enabled{};
        double probability{};
        detail::splitmix64 generator{0};
        access_kind kinds{};
    };

    static std::uint64_t last_address(std::uint64_t address, std::uint64_t length) noexcept
    {
        constexpr std::uint64_t max_address = std::numeric_limits<std::uint64_t>::max();
        return length - 1 > max_address - address ? max_address : address + (length - 1);
    }

    /// Runs every fault rule over the access; errc::dma_fault when any of them fails it.
    std::error_code inject(access_kind kind, std::uint64_t address, std::uint64_t length)
    {
        bool failed = false;
        for (auto rule = nth_rules_.begin(); rule != nth_rules_.end();) {
            if (includes(rule->kinds, kind) && --rule->remaining == 0) {
                failed = true;
                rule = nth_rules_.erase(rule);
            } else {
                ++rule;
            }
        }
        if (length != 0) {
            const std::uint64_t last = last_address(address, length);
            for (const auto& rule : range_rules_) {
                failed = failed || (includes(rule.kinds, kind) && address <= rule.last && rule.first <= last);
            }
        }
        if (every_.period != 0 && includes(every_.kinds, kind) && ++every_.seen % every_.period == 0) {
            failed = true;
        }
        if (random_.enabled && includes(random_.kinds, kind) &&
            random_.generator.next_unit() < random_.probability) {
            failed = true;
        }
        return failed ? make_error_code(errc::dma_fault) : std::error_code{};
    }

    void note(access_kind kind, std::uint64_t address, std::uint64_t length, std::error_code result)
    {
        if (result) {
            ++failures_;
        }
        if (recording_) {
            accesses_.push_back({kind, address, length, result});
        }
    }

    Inner* inner_;
    bool recording_{true};
    std::vector<dma_access> accesses_;
    std::size_t reads_{};
    std::size_t writes_{};
    std::size_t maps_{};
    std::size_t failures_{};
    std::vector<nth_rule> nth_rules_;
    std::vector<range_rule> range_rules_;
    every_rule every_{};
    random_rule random_{};
};

} // namespace testing
NVMEKIT_END_NAMESPACE
