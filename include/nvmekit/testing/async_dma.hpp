#pragma once
/// async_dma: an AsyncDmaProvider for tests that completes DMA late and out of order and injects
/// failures, over any synchronous DmaProvider.
///
///     nvmekit::testing::flat_memory memory;
///     nvmekit::testing::manual_clock clock;
///     nvmekit::testing::async_dma dma{memory, clock, 64, {.min_delay = 1us, .max_delay = 20us, .seed = 7}};
///     dma.fail_nth(3);                         // the third request submitted from now fails
///     dma.submit(request);                     // nothing moves yet
///     clock.advance(20us);
///     dma.poll();                              // moves the data and completes every request due
///
/// Timing: each submitted request gets a due time, now + a delay drawn uniformly from
/// [options.min_delay, options.max_delay] with a std::mt19937_64 seeded with options.seed (one
/// draw per scheduled request, reduced with `%`, so the sequence is the same on every platform
/// and standard library). A request completes only in poll(), once its due time has come; poll()
/// completes the due requests in order of due time, ties in order of submission, so requests
/// complete out of submission order whenever the delays differ. Only requests submitted before
/// poll() started are taken: a request submitted from a completion callback, or by another thread
/// while poll() runs, waits for a later poll() even with a zero delay, so poll() always ends.
/// next_due() tells a simulator when to move its clock to.
///
/// Data moves at completion: a request reaches the wrapped provider (a read fills its buffer, a
/// write stores into host memory) inside the poll() that completes it, just before its
/// `complete` runs, never in submit(). A test can therefore check that nothing reached memory
/// before completion.
///
/// Faults: a request's fate is decided when it is submitted, in submission order: it fails when
/// a fail_nth rule counts it, or it overlaps a fail_range range, or the fail_randomly draw (one
/// per submission while the rule is set) fails it. Every rule sees every submission, whether or
/// not another rule already failed it. A failed request completes at its due time with
/// errc::dma_fault without reaching the wrapped provider: a failed write stores nothing and a
/// failed read leaves its buffer untouched. A request no rule fails completes with the wrapped
/// provider's result (errc::dma_unmapped for an address outside the host's memory, say).
///
/// Bounded: at most `max_outstanding` requests wait at once. A request submitted beyond that
/// completes at once, inside submit(), with std::errc::resource_unavailable_try_again
/// (std::make_error_code, the generic category), without reaching the wrapped provider; it still
/// counts as submitted, in fail_nth and in the fail_randomly draws, and as completed and failed.
/// That is the only completion inside submit().
///
/// Determinism: the same seeds, the same submissions, the same clock times and the same polls
/// give the same delays, faults and completion order.
///
/// Threading: submit(), poll() and every other member may be called from several threads at once
/// (poll groups submit on threads of their own while another thread polls), except inner(),
/// which does not lock. One mutex guards all state, and poll() holds it while it picks the next
/// due request and runs it on the wrapped provider, so the calls into the wrapped provider are
/// serialized; neither poll() nor submit() holds it while calling a request's `complete`. A
/// completion callback may therefore submit, poll or read the counters. Two polls at once
/// complete each request exactly once; the due-time order then holds within each poll(). The
/// mutex does not make the wrapped provider safe against anything else that uses it, such as the
/// host's own accesses to host memory: use one that is (flat_memory with set_synchronized(true)).
/// The wrapped provider must not call back into the wrapper. The object is neither copyable nor
/// movable; requests still waiting when it is destroyed are forgotten without completing.
///
/// Allocation: the slots are allocated at construction; fault rules allocate when set. submit()
/// and poll() allocate nothing.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <mutex>
#include <optional>
#include <random>
#include <stdexcept>
#include <system_error>
#include <utility>
#include <vector>

#include <nvmekit/config.hpp>
#include <nvmekit/contracts/async_dma.hpp>
#include <nvmekit/contracts/clock.hpp>
#include <nvmekit/contracts/dma.hpp>
#include <nvmekit/error.hpp>
#include <nvmekit/runtime/due_queue.hpp>
#include <nvmekit/testing/manual_clock.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace testing {

/// Options of an async_dma.
struct async_dma_options {
    std::chrono::nanoseconds min_delay{0}; ///< the shortest delay of a request
    std::chrono::nanoseconds max_delay{0}; ///< the longest delay of a request
    std::uint64_t seed = 1;                ///< seeds the delay generator
};

/// The counters of an async_dma, taken together.
struct async_dma_counts {
    std::uint64_t submitted{}; ///< submit() calls
    std::uint64_t completed{}; ///< requests taken for completion (their `complete` ran or is running)
    std::uint64_t failed{};    ///< completed with an error: injected, the wrapped provider's, or overflow
    std::uint64_t overflows{}; ///< completed inside submit() because max_outstanding requests waited
    std::size_t outstanding{}; ///< submitted and not yet taken for completion
    friend bool operator==(const async_dma_counts&, const async_dma_counts&) = default;
};

/// A delayed, out-of-order, fault-injecting AsyncDmaProvider over the DmaProvider `Dma` (see the
/// top of this header). `ClockType` is read at submit() and poll(); the wrapped provider and the
/// clock must outlive the wrapper.
template <DmaProvider Dma, Clock ClockType = manual_clock>
class async_dma {
public:
    /// Wraps `inner`; at most `max_outstanding` requests wait at once. Throws
    /// std::invalid_argument when `max_outstanding` is 0, a delay is negative or min_delay is
    /// greater than max_delay.
    async_dma(Dma& inner, const ClockType& clock, std::size_t max_outstanding, async_dma_options options = {})
        : inner_{&inner}, clock_{&clock}, options_{options}, delays_{options.seed}, waiting_{max_outstanding}
    {
        if (max_outstanding == 0) {
            throw std::invalid_argument("async_dma: max_outstanding must be at least 1");
        }
        if (options.min_delay < std::chrono::nanoseconds::zero() ||
            options.max_delay < std::chrono::nanoseconds::zero()) {
            throw std::invalid_argument("async_dma: delays cannot be negative");
        }
        if (options.min_delay > options.max_delay) {
            throw std::invalid_argument("async_dma: min_delay is greater than max_delay");
        }
    }

    async_dma(const async_dma&) = delete;
    async_dma& operator=(const async_dma&) = delete;
    async_dma(async_dma&&) = delete;
    async_dma& operator=(async_dma&&) = delete;
    ~async_dma() = default;

    /// Decides `request`'s fate and schedules it, or completes it at once with
    /// std::errc::resource_unavailable_try_again when max_outstanding requests wait (after
    /// releasing the mutex). Never touches host memory. Any thread.
    void submit(dma_request& request)
    {
        const std::chrono::nanoseconds now = clock_->now();
        {
            const std::lock_guard lock{mutex_};
            ++counts_.submitted;
            const bool injected = inject(request);
            if (!waiting_.full()) {
                waiting_.push(waiting_request{&request, injected}, due_time(now));
                ++counts_.outstanding;
                return;
            }
            ++counts_.overflows;
            ++counts_.completed;
            ++counts_.failed;
        }
        nvmekit::detail::complete_dma_request(request, std::make_error_code(overflow_errc));
    }

    /// Completes every request due by now that was submitted before the call, in order of due
    /// time (ties in submission order), moving its data just before its `complete` runs; returns
    /// how many. Calls each `complete` without holding the mutex. Any thread.
    std::size_t poll()
    {
        return nvmekit::detail::complete_due(
            mutex_, waiting_, clock_->now(),
            [this](waiting_request& next) {
                const std::error_code result = next.injected ? make_error_code(errc::dma_fault)
                                                             : execute_dma_request(*inner_, *next.request);
                --counts_.outstanding;
                ++counts_.completed;
                if (result) {
                    ++counts_.failed;
                }
                return std::pair{next.request, result};
            },
            [](const std::pair<dma_request*, std::error_code>& done) {
                nvmekit::detail::complete_dma_request(*done.first, done.second);
            });
    }

    /// Requests submitted and not yet taken by poll() (one whose callback is running no longer
    /// counts). Any thread.
    [[nodiscard]] std::size_t outstanding() const
    {
        const std::lock_guard lock{mutex_};
        return counts_.outstanding;
    }

    /// The earliest due time among the waiting requests; empty when none waits. Any thread.
    [[nodiscard]] std::optional<std::chrono::nanoseconds> next_due() const
    {
        const std::lock_guard lock{mutex_};
        return waiting_.next_due();
    }

    /// Fails the `n`-th request submitted from now (1 = the next), once. Rules add up. Throws
    /// std::invalid_argument when `n` is 0.
    void fail_nth(std::uint64_t n)
    {
        if (n == 0) {
            throw std::invalid_argument("async_dma: fail_nth counts from 1");
        }
        const std::lock_guard lock{mutex_};
        nth_rules_.push_back(counts_.submitted + n);
    }

    /// Fails every request submitted from now whose bytes overlap [address, address + length)
    /// (clamped at 2^64); a zero-length request overlaps nothing. Rules add up. Throws
    /// std::invalid_argument when `length` is 0.
    void fail_range(std::uint64_t address, std::uint64_t length)
    {
        if (length == 0) {
            throw std::invalid_argument("async_dma: fail_range needs a non-empty range");
        }
        const std::lock_guard lock{mutex_};
        range_rules_.push_back({address, last_address(address, length)});
    }

    /// Fails each request submitted from now with `probability`, one draw per submission from a
    /// std::mt19937_64 seeded with `seed` (the top 53 bits as a double in [0, 1)); replaces an
    /// earlier fail_randomly. Throws std::invalid_argument when `probability` is not in [0, 1].
    void fail_randomly(double probability, std::uint64_t seed)
    {
        if (!(probability >= 0.0 && probability <= 1.0)) {
            throw std::invalid_argument("async_dma: the probability must be in [0, 1]");
        }
        const std::lock_guard lock{mutex_};
        random_rule_ = random_rule{probability, std::mt19937_64{seed}};
    }

    /// Removes every fault rule; requests already submitted keep their fate.
    void clear_faults()
    {
        const std::lock_guard lock{mutex_};
        nth_rules_.clear();
        range_rules_.clear();
        random_rule_.reset();
    }

    /// submit() calls since construction. Any thread.
    [[nodiscard]] std::uint64_t submitted() const { return counts().submitted; }
    /// Requests taken for completion, overflows included. Any thread.
    [[nodiscard]] std::uint64_t completed() const { return counts().completed; }
    /// Requests completed with an error, overflows included. Any thread.
    [[nodiscard]] std::uint64_t failed() const { return counts().failed; }
    /// Requests completed inside submit() because max_outstanding requests waited. Any thread.
    [[nodiscard]] std::uint64_t overflows() const { return counts().overflows; }

    /// All the counters at one point in time (between two requests' steps). Any thread.
    [[nodiscard]] async_dma_counts counts() const
    {
        const std::lock_guard lock{mutex_};
        return counts_;
    }

    /// The bound given at construction.
    [[nodiscard]] std::size_t max_outstanding() const noexcept { return waiting_.capacity(); }

    /// The wrapped provider. Calls through it bypass the mutex.
    [[nodiscard]] Dma& inner() const noexcept { return *inner_; }

private:
    static constexpr std::errc overflow_errc = std::errc::resource_unavailable_try_again;

    struct waiting_request {
        dma_request* request = nullptr;
        bool injected = false;
    };

    struct range_rule {
        std::uint64_t first = 0;
        std::uint64_t last = 0; ///< inclusive
    };

    struct random_rule {
        double probability = 0.0;
        std::mt19937_64 generator;
    };

    static std::uint64_t last_address(std::uint64_t address, std::uint64_t length) noexcept
    {
        constexpr std::uint64_t max_address = std::numeric_limits<std::uint64_t>::max();
        return length - 1 > max_address - address ? max_address : address + (length - 1);
    }

    /// Runs every fault rule over the submission counted last; true when any fails it. Called with
    /// the mutex held.
    bool inject(const dma_request& request)
    {
        bool failed = false;
        for (auto rule = nth_rules_.begin(); rule != nth_rules_.end();) {
            if (*rule == counts_.submitted) {
                failed = true;
                rule = nth_rules_.erase(rule);
            } else {
                ++rule;
            }
        }
        if (!request.buffer.empty()) {
            const std::uint64_t last = last_address(request.address, request.buffer.size());
            for (const range_rule& rule : range_rules_) {
                failed = failed || (request.address <= rule.last && rule.first <= last);
            }
        }
        if (random_rule_) {
            const double draw = static_cast<double>(random_rule_->generator() >> 11) * 0x1.0p-53;
            failed = failed || draw < random_rule_->probability;
        }
        return failed;
    }

    /// now + a drawn delay, clamped at the clock's maximum. Called with the mutex held.
    std::chrono::nanoseconds due_time(std::chrono::nanoseconds now)
    {
        std::chrono::nanoseconds delay = options_.min_delay;
        if (options_.max_delay > options_.min_delay) {
            const auto span =
                static_cast<std::uint64_t>((options_.max_delay - options_.min_delay).count()) + 1;
            delay += std::chrono::nanoseconds{static_cast<std::chrono::nanoseconds::rep>(delays_() % span)};
        }
        return delay > std::chrono::nanoseconds::max() - now ? std::chrono::nanoseconds::max() : now + delay;
    }

    Dma* inner_;
    const ClockType* clock_;
    async_dma_options options_;
    mutable std::mutex mutex_; ///< guards every member below, and serializes the calls into *inner_
    std::mt19937_64 delays_;
    nvmekit::detail::due_queue<waiting_request> waiting_;
    async_dma_counts counts_{};
    std::vector<std::uint64_t> nth_rules_; ///< the values of counts_.submitted that fail
    std::vector<range_rule> range_rules_;
    std::optional<random_rule> random_rule_;
};

} // namespace testing
NVMEKIT_END_NAMESPACE
