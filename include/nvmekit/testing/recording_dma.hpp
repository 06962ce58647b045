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
///
/// Threading: a controller whose poll groups run on threads of their own calls read, write and
/// map from several threads at once while the test's host thread reads the recording and sets
/// fault rules. Every member function except accesses(), inner() and the move constructor and
/// assignment holds an internal mutex, always: an uncontended lock and unlock per access, and a
/// single thread sees the same results as before there was one. An access holds the mutex from
/// its fault rules through the wrapped provider's call to its record, so the accesses of all
/// threads fall in one order: the order of the recording and the counters, the order every fault
/// rule counts in (fail_nth(3) fails the third access recorded after it, whichever thread made
/// it) and the order they reach the wrapped provider. A rule set, or a clear(), while accesses run
/// applies to the accesses after it in that order.
///
/// The mutex guards the wrapper's state and serializes its calls into the wrapped provider; it
/// does not make the provider safe against anything else that uses it, such as the host's own
/// accesses to host memory: use a provider that is (flat_memory with set_synchronized(true)).
/// Bytes behind a span map() returns are not guarded either; a synchronized flat_memory declines
/// every map, which is recorded, as any empty span for a non-zero length, as errc::dma_unmapped
/// (and counted in failures()), and a controller then copies through read and write. accesses()
/// is a view that a concurrent access may reallocate: read it only while no other thread uses the
/// object, and use snapshot() and counts() otherwise. The wrapped provider must not call back
/// into the wrapper.

#include <cstddef>
#include <cstdint>
#include <limits>
#include <mutex>
#include <span>
#include <stdexcept>
#include <system_error>
#include <utility>
#include <vector>

#include <nvmekit/config.hpp>
#include <nvmekit/contracts/dma.hpp>
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

/// The counters of a recording_dma, taken together.
struct dma_counts {
    std::size_t reads{};
    std::size_t writes{};
    std::size_t maps{};
    std::size_t failures{};
    friend bool operator==(const dma_counts&, const dma_counts&) = default;
};

namespace detail {
/// The splitmix64 generator (Steele, Lea and Flood; Vigna's reference code): the same sequence on
/// every platform and standard library.
class splitmix64 {
public:
    explicit constexpr splitmix64(std::uint64_t seed) noexcept : state_{seed} {}

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
/// MappingDmaProvider exactly when `Inner` does. Safe to share between threads (see Threading
/// above).
template <DmaProvider Inner>
class recording_dma {
public:
    /// Wraps `inner`, which must outlive the wrapper.
    explicit recording_dma(Inner& inner) noexcept : inner_{&inner} {}

    /// Wraps the same provider with a copy of `other`'s records, counters and fault rules (taken
    /// under `other`'s mutex) and a mutex of its own.
    recording_dma(const recording_dma& other) : inner_{other.inner_}, state_{other.locked_state()} {}

    /// Wraps `other`'s provider with its records, counters and fault rules; `other` keeps its
    /// provider with none of them, as after clear() and clear_faults(), recording on. Not
    /// synchronized: no other thread may use either object meanwhile.
    recording_dma(recording_dma&& other) noexcept
        : inner_{other.inner_}, state_{std::exchange(other.state_, {})}
    {}

    /// As the copy constructor, holding both mutexes.
    recording_dma& operator=(const recording_dma& other)
    {
        if (this != &other) {
            const std::scoped_lock lock{mutex_, other.mutex_};
            inner_ = other.inner_;
            state_ = other.state_;
        }
        return *this;
    }

    /// As the move constructor; not synchronized either.
    recording_dma& operator=(recording_dma&& other) noexcept
    {
        if (this != &other) {
            inner_ = other.inner_;
            state_ = std::exchange(other.state_, {});
        }
        return *this;
    }

    ~recording_dma() = default;

    /// Forwards to `inner.read` unless a fault rule fails the access.
    std::error_code read(std::uint64_t address, std::span<std::byte> destination)
    {
        const std::lock_guard lock{mutex_};
        ++state_.counts.reads;
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
        const std::lock_guard lock{mutex_};
        ++state_.counts.writes;
        std::error_code result = inject(access_kind::write, address, source.size());
        if (!result) {
            result = inner_->write(address, source);
        }
        note(access_kind::write, address, source.size(), result);
        return result;
    }

    /// Forwards to `inner.map` unless a fault rule fails the access (then the span is empty). An
    /// empty span for a non-zero length is recorded as errc::dma_unmapped. The mutex is released
    /// on return: the bytes behind the span are not guarded by it.
    std::span<std::byte> map(std::uint64_t address, std::size_t length) requires MappingDmaProvider<Inner>
    {
        const std::lock_guard lock{mutex_};
        ++state_.counts.maps;
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
    void set_recording(bool enabled)
    {
        const std::lock_guard lock{mutex_};
        state_.recording = enabled;
    }
    [[nodiscard]] bool recording() const
    {
        const std::lock_guard lock{mutex_};
        return state_.recording;
    }

    /// The recorded accesses, oldest first. A view into the recording, which any access may
    /// reallocate: read it only while no other thread uses the object; use snapshot() otherwise.
    [[nodiscard]] std::span<const dma_access> accesses() const noexcept { return state_.accesses; }

    /// A copy of the recorded accesses, oldest first; safe while other threads make accesses.
    [[nodiscard]] std::vector<dma_access> snapshot() const
    {
        const std::lock_guard lock{mutex_};
        return state_.accesses;
    }

    /// Forgets the recorded accesses and zeroes the counters, together; fault rules stay.
    void clear()
    {
        const std::lock_guard lock{mutex_};
        state_.accesses.clear();
        state_.counts = {};
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
        const std::lock_guard lock{mutex_};
        state_.nth_rules.push_back({n, kinds});
    }

    /// Fails every access of `kinds` that overlaps [address, address + length) (clamped at 2^64).
    /// Rules add up. Throws std::invalid_argument when `length` is 0 or `kinds` is empty.
    void fail_range(std::uint64_t address, std::uint64_t length, access_kind kinds = access_kind::any)
    {
        if (length == 0) {
            throw std::invalid_argument("recording_dma: fail_range needs a non-empty range");
        }
        detail::check_kinds(kinds);
        const std::lock_guard lock{mutex_};
        state_.range_rules.push_back({address, last_address(address, length), kinds});
    }

    /// Fails every `period`-th access of `kinds`, counted from this call; replaces an earlier
    /// fail_every. Throws std::invalid_argument when `period` is 0 or `kinds` is empty.
    void fail_every(std::size_t period, access_kind kinds = access_kind::any)
    {
        if (period == 0) {
            throw std::invalid_argument("recording_dma: fail_every needs a period of at least 1");
        }
        detail::check_kinds(kinds);
        const std::lock_guard lock{mutex_};
        state_.every = {period, 0, kinds};
    }

    /// Fails each access of `kinds` with `probability`, drawn from splitmix64 seeded with `seed`
    /// (the same pattern on every platform, one draw per access of `kinds` in the order the
    /// accesses are recorded); replaces an earlier fail_randomly. Throws std::invalid_argument
    /// when `probability` is not in [0, 1] or `kinds` is empty.
    void fail_randomly(double probability, std::uint64_t seed, access_kind kinds = access_kind::any)
    {
        if (!(probability >= 0.0 && probability <= 1.0)) {
            throw std::invalid_argument("recording_dma: the probability must be in [0, 1]");
        }
        detail::check_kinds(kinds);
        const std::lock_guard lock{mutex_};
        state_.random = {true, probability, detail::splitmix64{seed}, kinds};
    }

    /// Removes every fault rule.
    void clear_faults()
    {
        const std::lock_guard lock{mutex_};
        state_.nth_rules.clear();
        state_.range_rules.clear();
        state_.every = {};
        state_.random = {};
    }

    /// Read accesses since construction or clear(), failed ones included.
    [[nodiscard]] std::size_t reads() const { return counts().reads; }
    /// Write accesses since construction or clear(), failed ones included.
    [[nodiscard]] std::size_t writes() const { return counts().writes; }
    /// Map accesses since construction or clear(), failed ones included.
    [[nodiscard]] std::size_t maps() const { return counts().maps; }
    /// Accesses that returned an error (injected or from the wrapped provider).
    [[nodiscard]] std::size_t failures() const { return counts().failures; }

    /// All four counters at one point of the access order (between two accesses).
    [[nodiscard]] dma_counts counts() const
    {
        const std::lock_guard lock{mutex_};
        return state_.counts;
    }

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
    /// Everything the mutex guards, in one place so that copies and moves take all of it.
    struct state {
        bool recording{true};
        std::vector<dma_access> accesses;
        dma_counts counts{};
        std::vector<nth_rule> nth_rules;
        std::vector<range_rule> range_rules;
        every_rule every{};
        random_rule random{};
    };

    static std::uint64_t last_address(std::uint64_t address, std::uint64_t length) noexcept
    {
        constexpr std::uint64_t max_address = std::numeric_limits<std::uint64_t>::max();
        return length - 1 > max_address - address ? max_address : address + (length - 1);
    }

    [[nodiscard]] state locked_state() const
    {
        const std::lock_guard lock{mutex_};
        return state_;
    }

    /// Runs every fault rule over the access; errc::dma_fault when any of them fails it. Called
    /// with the mutex held.
    std::error_code inject(access_kind kind, std::uint64_t address, std::uint64_t length)
    {
        bool failed = false;
        auto& nth_rules = state_.nth_rules;
        for (auto rule = nth_rules.begin(); rule != nth_rules.end();) {
            if (includes(rule->kinds, kind) && --rule->remaining == 0) {
                failed = true;
                rule = nth_rules.erase(rule);
            } else {
                ++rule;
            }
        }
        if (length != 0) {
            const std::uint64_t last = last_address(address, length);
            for (const auto& rule : state_.range_rules) {
                failed = failed || (includes(rule.kinds, kind) && address <= rule.last && rule.first <= last);
            }
        }
        auto& every = state_.every;
        if (every.period != 0 && includes(every.kinds, kind) && ++every.seen % every.period == 0) {
            failed = true;
        }
        auto& random = state_.random;
        if (random.enabled && includes(random.kinds, kind) &&
            random.generator.next_unit() < random.probability) {
            failed = true;
        }
        return failed ? make_error_code(errc::dma_fault) : std::error_code{};
    }

    /// Counts and records the outcome of an access; called with the mutex held.
    void note(access_kind kind, std::uint64_t address, std::uint64_t length, std::error_code result)
    {
        if (result) {
            ++state_.counts.failures;
        }
        if (state_.recording) {
            state_.accesses.push_back({kind, address, length, result});
        }
    }

    Inner* inner_;
    mutable std::mutex mutex_; ///< guards state_, and serializes the calls into *inner_
    state state_;
};

} // namespace testing
NVMEKIT_END_NAMESPACE
