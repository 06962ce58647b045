#pragma once
/// The BlockBackend archetype, and test_backend: RAM storage for tests that completes requests late
/// and out of order, injects media errors and records every request.
///
///     nvmekit::testing::manual_clock clock;
///     nvmekit::testing::test_backend backend{clock, 1 << 20, 32, {.delay = 10us, .jitter = 5us}};
///     backend.add_media_error(4096, 512);     // reads touching these bytes fail
///     backend.fail_nth(3, nvmekit::block_status::write_fault);
///     ... submit ...
///     clock.advance(15us);
///     backend.poll();                        // completes every request whose time has come
///
/// Timing: each submitted request gets a due time, now + delay, where the delay is the user's
/// delay function when one is set, else `options.delay` plus a uniformly drawn extra in
/// [0, options.jitter] from a generator seeded with `options.seed` (the same sequence every run).
/// A request completes only in poll(), once its due time has come; poll() completes the due
/// requests in order of due time, ties in order of submission. A request submitted from a
/// completion callback during poll() is left for a later poll(), so poll() always ends.
///
/// A request runs against the storage when it completes, not when it is submitted. Its status is,
/// in order of precedence: the status of a matching fail_nth rule (storage untouched); the status
/// of validate_block_request; unrecovered_read_error for a read overlapping a media error range
/// (no byte copied; error_offset names the first byte in error); otherwise the storage's (a ram_backend).
///
/// Bounded: at most `max_outstanding` requests wait at once. A request submitted beyond that
/// completes at once, inside submit(), with internal_error (it is still recorded and counted by
/// fail_nth). That is the only completion inside submit(), unless `options.inline_completion`
/// runs every request at once (submit_inline() then returns the status instead of calling
/// `complete`).
///
/// Configuration (set_delay_function, add_media_error, fail_nth) allocates; so does recording,
/// which appends to a vector, so submit() can throw std::bad_alloc when memory runs out (the
/// BlockBackend rule "submit never throws" holds otherwise). Nothing else allocates per request.
///
/// Threading: submit(), poll() and the other members may be called from several threads at once
/// (poll groups submit on their own threads while one thread polls), except records(), storage(),
/// moving and destruction, which need the backend to themselves. One mutex guards all state;
/// poll() holds it only while it picks the next due request and runs it against the storage,
/// never while it calls the request's `complete`, and submit() does not hold it when it completes
/// an overflowing request inline. A completion callback may therefore submit, poll or read the
/// counters again, and may run as long as it likes without holding up submitters. poll() takes
/// only requests submitted before it started, whichever thread submitted them, so a request
/// submitted by another thread while poll() runs is left for a later poll() like one submitted
/// from a callback. Two polls at once complete each request exactly once, but the due-time order
/// then holds only among the completions of one poll(). The delay function runs under the mutex:
/// it must not call back into the backend. outstanding(), submitted() and overflows() are atomic
/// and may be read from any thread at any time; each returns a value the counter held during the
/// call.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <random>
#include <span>
#include <stdexcept>
#include <utility>
#include <vector>

#include <nvmekit/backends/ram_backend.hpp>
#include <nvmekit/config.hpp>
#include <nvmekit/contracts/block_backend.hpp>
#include <nvmekit/contracts/clock.hpp>
#include <nvmekit/runtime/due_queue.hpp>
#include <nvmekit/testing/manual_clock.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace testing {

/// Models BlockBackend and nothing more: a backend of capacity 0 that completes every request
/// inline with the status of validate_block_request (so only empty ranges and flushes succeed).
struct block_backend_archetype {
    std::uint64_t capacity_bytes() const { return 0; }
    void submit(block_request& request)
    {
        nvmekit::detail::complete_request(request, validate_block_request(request, 0));
    }
    std::size_t poll() { return 0; }
    bool has_volatile_cache() const { return false; }
    std::size_t outstanding() const { return 0; }
};
static_assert(check_block_backend<block_backend_archetype>());

/// What test_backend saw of one submitted request.
struct block_request_record {
    block_operation operation{};
    std::uint64_t offset{};
    std::uint64_t length{};
    bool force_unit_access{};
    friend bool operator==(const block_request_record&, const block_request_record&) = default;
};

/// Options of a test_backend.
struct test_backend_options {
    std::chrono::nanoseconds delay{0};  ///< the delay of every request
    std::chrono::nanoseconds jitter{0}; ///< plus a random extra delay in [0, jitter]
    std::uint64_t seed = 1;             ///< seeds the jitter generator
    bool volatile_cache = false;        ///< what has_volatile_cache() reports (flush is recorded either way)
    std::size_t chunk_size = std::size_t{64} * 1024; ///< chunk size of the RAM storage
    /// Every request completes inside submit(), and submit_inline() returns its status (delays
    /// and jitter are not used): an inline backend with faults and records.
    bool inline_completion = false;
};

/// A delayed, fault-injecting, recording RAM backend (see the top of this header). `Clock` is read
/// at submit() and poll(); the clock must outlive the backend.
template <Clock ClockType = manual_clock>
class test_backend {
public:
    /// Chooses the delay of a request; a negative result counts as 0.
    using delay_function = std::function<std::chrono::nanoseconds(const block_request&)>;

    /// A backend of `capacity_bytes` zero bytes on which at most `max_outstanding` requests wait.
    /// Throws std::invalid_argument when `max_outstanding` is 0 or a delay option is negative, and
    /// whatever ram_backend throws for the capacity and chunk size.
    test_backend(const ClockType& clock, std::uint64_t capacity_bytes, std::size_t max_outstanding,
                 test_backend_options options = {})
        : clock_{&clock}
        , options_{options}
        , storage_{capacity_bytes, ram_backend_options{.chunk_size = options.chunk_size}}
        , generator_{options.seed}
        , waiting_{max_outstanding}
    {
        if (max_outstanding == 0) {
            throw std::invalid_argument("test_backend: max_outstanding must be at least 1");
        }
        if (options.delay < std::chrono::nanoseconds::zero() ||
            options.jitter < std::chrono::nanoseconds::zero()) {
            throw std::invalid_argument("test_backend: delays cannot be negative");
        }
    }

    test_backend(const test_backend&) = delete;
    test_backend& operator=(const test_backend&) = delete;

    /// Takes `other`'s storage, configuration, records and waiting requests (they complete in this
    /// backend's poll()). No other thread may use either backend meanwhile.
    test_backend(test_backend&& other) noexcept
        : clock_{other.clock_}
        , options_{other.options_}
        , storage_{std::move(other.storage_)}
        , generator_{other.generator_}
        , delay_function_{std::move(other.delay_function_)}
        , waiting_{std::move(other.waiting_)}
        , outstanding_{other.outstanding_.load(std::memory_order_relaxed)}
        , submitted_{other.submitted_.load(std::memory_order_relaxed)}
        , overflows_{other.overflows_.load(std::memory_order_relaxed)}
        , nth_rules_{std::move(other.nth_rules_)}
        , media_errors_{std::move(other.media_errors_)}
        , records_{std::move(other.records_)}
    {}

    /// Takes `other`'s state as the move constructor does; requests still waiting in this backend
    /// are forgotten without completing. No other thread may use either backend meanwhile.
    test_backend& operator=(test_backend&& other) noexcept
    {
        if (this != &other) {
            clock_ = other.clock_;
            options_ = other.options_;
            storage_ = std::move(other.storage_);
            generator_ = other.generator_;
            delay_function_ = std::move(other.delay_function_);
            waiting_ = std::move(other.waiting_);
            outstanding_.store(other.outstanding_.load(std::memory_order_relaxed), std::memory_order_relaxed);
            submitted_.store(other.submitted_.load(std::memory_order_relaxed), std::memory_order_relaxed);
            overflows_.store(other.overflows_.load(std::memory_order_relaxed), std::memory_order_relaxed);
            nth_rules_ = std::move(other.nth_rules_);
            media_errors_ = std::move(other.media_errors_);
            records_ = std::move(other.records_);
        }
        return *this;
    }

    ~test_backend() = default;

    /// The fixed size given at construction.
    [[nodiscard]] std::uint64_t capacity_bytes() const noexcept { return storage_.capacity_bytes(); }

    /// Records `request` and schedules it, or completes it with internal_error when
    /// max_outstanding requests already wait (after releasing the mutex). Any thread.
    void submit(block_request& request)
    {
        if (options_.inline_completion) {
            nvmekit::detail::complete_request(request, *submit_inline(request));
            return;
        }
        {
            const std::lock_guard lock{mutex_};
            const std::optional<block_status> injected = record_and_take_rule(request);
            if (!waiting_.full()) {
                waiting_.push(waiting_request{&request, injected}, due_time(request));
                outstanding_.fetch_add(1, std::memory_order_relaxed);
                return;
            }
            overflows_.fetch_add(1, std::memory_order_relaxed);
        }
        nvmekit::detail::complete_request(request, block_status::internal_error);
    }

    /// With options.inline_completion, runs `request` at once and returns its status without
    /// calling `complete`; otherwise submit() (std::nullopt).
    std::optional<block_status> submit_inline(block_request& request)
    {
        if (!options_.inline_completion) {
            submit(request);
            return std::nullopt;
        }
        const std::lock_guard lock{mutex_};
        const std::optional<block_status> injected = record_and_take_rule(request);
        return injected ? *injected : execute(request);
    }

    /// Completes every request due by now that was submitted before the call (see the top of
    /// this header); returns how many. Calls each `complete` without holding the mutex.
    std::size_t poll()
    {
        return nvmekit::detail::complete_due(
            mutex_, waiting_, clock_->now(),
            [this](waiting_request& next) {
                const block_status status = next.injected ? *next.injected : execute(*next.request);
                outstanding_.fetch_sub(1, std::memory_order_relaxed);
                return std::pair{next.request, status};
            },
            [](const std::pair<block_request*, block_status>& done) {
                nvmekit::detail::complete_request(*done.first, done.second);
            });
    }

    /// options.volatile_cache.
    [[nodiscard]] bool has_volatile_cache() const noexcept { return options_.volatile_cache; }

    /// Requests submitted and not yet taken by poll() (one whose callback is running no longer
    /// counts). Any thread.
    [[nodiscard]] std::size_t outstanding() const noexcept
    {
        return outstanding_.load(std::memory_order_relaxed);
    }

    /// Uses `function` to choose each later request's delay; an empty function restores
    /// options.delay and options.jitter. The function runs inside submit() with the mutex held, so
    /// it must not call back into the backend.
    void set_delay_function(delay_function function)
    {
        const std::lock_guard lock{mutex_};
        delay_function_.swap(function); // `function` now holds the previous one, destroyed unlocked
    }

    /// Makes reads overlapping [offset, offset + length) (clamped at 2^64) complete with
    /// unrecovered_read_error. Writes do not clear the range. Throws std::invalid_argument when
    /// `length` is 0.
    void add_media_error(std::uint64_t offset, std::uint64_t length)
    {
        if (length == 0) {
            throw std::invalid_argument("test_backend: a media error range cannot be empty");
        }
        const std::uint64_t last = length - 1 > UINT64_MAX - offset ? UINT64_MAX : offset + (length - 1);
        const std::lock_guard lock{mutex_};
        media_errors_.push_back({offset, last});
    }

    /// Removes every media error range.
    void clear_media_errors() noexcept
    {
        const std::lock_guard lock{mutex_};
        media_errors_.clear();
    }

    /// Makes the `n`-th request submitted from now (1 = the next) complete with `status` without
    /// touching the storage. Rules add up. Throws std::invalid_argument when `n` is 0 or `status`
    /// is success.
    void fail_nth(std::uint64_t n, block_status status)
    {
        if (n == 0) {
            throw std::invalid_argument("test_backend: fail_nth counts from 1");
        }
        if (status == block_status::success) {
            throw std::invalid_argument("test_backend: fail_nth needs a failure status");
        }
        const std::lock_guard lock{mutex_};
        nth_rules_.push_back({submitted_.load(std::memory_order_relaxed) + n, status});
    }

    /// Every request submitted since construction or clear_records(), in order. The reference is
    /// read without the mutex: use it only while no other thread submits or clears the records
    /// (records_snapshot() has no such limit).
    [[nodiscard]] const std::vector<block_request_record>& records() const noexcept { return records_; }

    /// A copy of records(), taken under the mutex; any thread. Throws std::bad_alloc when memory
    /// runs out.
    [[nodiscard]] std::vector<block_request_record> records_snapshot() const
    {
        const std::lock_guard lock{mutex_};
        return records_;
    }

    /// Forgets the records.
    void clear_records() noexcept
    {
        const std::lock_guard lock{mutex_};
        records_.clear();
    }

    /// Requests submitted since construction. Any thread.
    [[nodiscard]] std::uint64_t submitted() const noexcept
    {
        return submitted_.load(std::memory_order_relaxed);
    }

    /// Requests completed with internal_error because max_outstanding requests were waiting.
    /// Any thread.
    [[nodiscard]] std::uint64_t overflows() const noexcept
    {
        return overflows_.load(std::memory_order_relaxed);
    }

    /// Stores `data` at `offset` at once, bypassing delays, faults and records. Throws
    /// std::out_of_range past the capacity.
    void preload(std::uint64_t offset, std::span<const std::byte> data)
    {
        const io_segment segment{const_cast<std::byte*>(data.data()), data.size()};
        direct(block_operation::write, offset, segment);
    }

    /// Copies the stored bytes at `offset` into `data` at once, bypassing delays, faults and
    /// records. Throws std::out_of_range past the capacity.
    void peek(std::uint64_t offset, std::span<std::byte> data)
    {
        direct(block_operation::read, offset, io_segment{data.data(), data.size()});
    }

    /// The RAM storage underneath. Calls through this reference bypass the mutex: make them only
    /// while no other thread uses the backend.
    [[nodiscard]] ram_backend& storage() noexcept { return storage_; }

private:
    struct waiting_request {
        block_request* request = nullptr;
        std::optional<block_status> injected{};
    };

    struct nth_rule {
        std::uint64_t ordinal = 0; ///< the value of submitted_ once the failing request is counted
        block_status status = block_status::internal_error;
    };

    struct media_error_range {
        std::uint64_t first = 0;
        std::uint64_t last = 0;
    };

    /// Records `request`, counts it, and takes the fail_nth rule that names it, if any. Under
    /// the mutex.
    std::optional<block_status> record_and_take_rule(const block_request& request)
    {
        records_.push_back({request.operation, request.offset, request.length, request.force_unit_access});
        const std::uint64_t ordinal = submitted_.load(std::memory_order_relaxed) + 1;
        submitted_.store(ordinal, std::memory_order_relaxed);
        const auto rule =
            std::find_if(nth_rules_.begin(), nth_rules_.end(),
                         [ordinal](const nth_rule& candidate) { return candidate.ordinal == ordinal; });
        if (rule == nth_rules_.end()) {
            return std::nullopt;
        }
        const block_status status = rule->status;
        nth_rules_.erase(rule);
        return status;
    }

    std::chrono::nanoseconds due_time(const block_request& request)
    {
        std::chrono::nanoseconds delay = options_.delay;
        if (delay_function_) {
            delay = std::max(delay_function_(request), std::chrono::nanoseconds::zero());
        } else if (options_.jitter > std::chrono::nanoseconds::zero()) {
            const auto span = static_cast<std::uint64_t>(options_.jitter.count()) + 1;
            const std::chrono::nanoseconds extra{
                static_cast<std::chrono::nanoseconds::rep>(generator_() % span)};
            delay = extra > std::chrono::nanoseconds::max() - delay ? std::chrono::nanoseconds::max()
                                                                    : delay + extra;
        }
        const std::chrono::nanoseconds now = clock_->now();
        return delay > std::chrono::nanoseconds::max() - now ? std::chrono::nanoseconds::max() : now + delay;
    }

    /// The first byte of `request` inside a media error range, if any.
    [[nodiscard]] std::optional<std::uint64_t> first_media_error(const block_request& request) const noexcept
    {
        if (request.length == 0) {
            return std::nullopt;
        }
        const std::uint64_t last = request.offset + (request.length - 1);
        std::optional<std::uint64_t> first;
        for (const media_error_range& range : media_errors_) {
            if (request.offset <= range.last && range.first <= last) {
                const std::uint64_t hit = std::max(request.offset, range.first);
                first = first ? std::min(*first, hit) : hit;
            }
        }
        return first;
    }

    block_status execute(block_request& request) noexcept
    {
        const block_status valid = validate_block_request(request, storage_.capacity_bytes());
        if (valid != block_status::success) {
            return valid;
        }
        if (request.operation == block_operation::read) {
            if (const auto error = first_media_error(request)) {
                request.error_offset = *error;
                return block_status::unrecovered_read_error;
            }
        }
        return run_on_storage(request);
    }

    block_status run_on_storage(const block_request& request) noexcept
    {
        block_status status = block_status::internal_error;
        block_request inner = request;
        inner.context = &status;
        inner.complete = [](block_request& done, block_status result) {
            *static_cast<block_status*>(done.context) = result;
        };
        storage_.submit(inner);
        return status;
    }

    void direct(block_operation operation, std::uint64_t offset, io_segment segment)
    {
        if (!block_range_fits(offset, segment.size, storage_.capacity_bytes())) {
            throw std::out_of_range("test_backend: the range passes the capacity");
        }
        const block_request request{.operation = operation,
                                    .offset = offset,
                                    .length = segment.size,
                                    .segments = std::span{&segment, 1}};
        const std::lock_guard lock{mutex_};
        if (run_on_storage(request) != block_status::success) {
            throw std::runtime_error("test_backend: the storage refused the access");
        }
    }

    // mutex_ guards every member below but clock_ and options_, which change only when the backend
    // moves. The counters are written only under it too; they are atomic so their getters need no
    // lock.
    mutable std::mutex mutex_;
    const ClockType* clock_;
    test_backend_options options_;
    ram_backend storage_;
    std::mt19937_64 generator_;
    delay_function delay_function_{};
    nvmekit::detail::due_queue<waiting_request> waiting_;
    std::atomic<std::size_t> outstanding_{0};
    std::atomic<std::uint64_t> submitted_{0};
    std::atomic<std::uint64_t> overflows_{0};
    std::vector<nth_rule> nth_rules_;
    std::vector<media_error_range> media_errors_;
    std::vector<block_request_record> records_;
};

static_assert(check_block_backend<test_backend<>>());
static_assert(InlineSubmitting<test_backend<>>);

} // namespace testing
NVMEKIT_END_NAMESPACE
