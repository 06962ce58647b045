#pragma once
/// timed_backend: a BlockBackend that gives another backend's requests the completion times of a
/// TimingModel.
///
///     nvmekit::steady_clock clock;   // or testing::manual_clock, or a simulator's clock
///     nvmekit::timed_backend backend{nvmekit::ram_backend{1 << 30},
///                                    nvmekit::timing::ssd_model{nvmekit::timing::femu_defaults()},
///                                    clock, 256};
///     subsystem.add_namespace(std::move(backend));
///
/// submit() reads the clock, asks the model when the request completes (the model's state is
/// advanced at once), and submits a copy of the request to the inner backend, which does the data
/// work now (an inline backend) or later (in the inner backend's poll()). The request completes in
/// a later poll(), once the inner backend has completed it and the clock has reached the model's
/// time, with the inner backend's status (and error_offset). poll() first polls the inner backend,
/// then completes the requests whose time has come, in order of time, ties in order of
/// submission; a request submitted from a completion callback waits for a later poll(). With a
/// wall-clock Clock (steady_clock) completion times are wall-clock times, so the embedding must
/// poll often enough; with a manual or simulated clock they are exact.
///
/// The data is read or written when the request is submitted: a read can see a write submitted
/// before it even when the write has not completed yet, which NVMe allows (commands in flight
/// are unordered).
///
/// Two kinds of request complete inside submit(): one that validate_block_request refuses (with its
/// status; the model does not see it and the inner backend is not called), and one submitted
/// while `max_outstanding` requests are waiting (with internal_error, as test_backend does).
///
/// Memory: fixed at construction (max_outstanding slots and the model's own state); submit() and
/// poll() allocate nothing.
///
/// Threading: submit(), poll() and the counters may be called from several threads at once (poll
/// groups submit on their own threads while the admin context polls), provided the inner backend
/// accepts concurrent submits too (ram_backend with `concurrent = true`). One mutex guards the
/// model and the slots; it is never held while the inner backend runs or a `complete` is called.
/// Moving the backend (which keeps the slots on the heap) must not overlap any other call; a
/// moved-from backend may only be destroyed or assigned. Requests still waiting at destruction
/// are forgotten without completing (the controller destroys namespaces only when idle).
///
/// capacity_bytes() and has_volatile_cache() are the inner backend's; outstanding() counts the
/// requests submitted and not yet completed by this backend.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <utility>

#include <nvmekit/config.hpp>
#include <nvmekit/contracts/block_backend.hpp>
#include <nvmekit/contracts/clock.hpp>
#include <nvmekit/runtime/due_queue.hpp>
#include <nvmekit/timing/timing_model.hpp>

NVMEKIT_BEGIN_NAMESPACE

namespace detail {

/// What a timed_backend keeps on the heap: its waiting requests point at it, so moves keep them
/// valid.
template <typename Model>
struct timed_backend_state {
    /// A request from submit() until poll() completes it. Its slot is reserved at submit() and
    /// scheduled when the inner backend completes the copy.
    struct waiting_request {
        timed_backend_state* owner = nullptr;
        std::size_t slot = 0; ///< its slot in `waiting`
        block_request* outer = nullptr;
        block_request inner{}; ///< the copy the inner backend runs
        block_status status = block_status::internal_error;
    };

    timed_backend_state(Model timing_model, std::size_t max_outstanding)
        : model{std::move(timing_model)}, waiting{max_outstanding}
    {}

    /// The inner backend's completion: the request is ready once its time comes.
    static void inner_complete(block_request& inner, block_status status) noexcept
    {
        auto* const done = static_cast<waiting_request*>(inner.context);
        const std::lock_guard lock{done->owner->mutex};
        done->status = status;
        done->owner->waiting.schedule(done->slot);
    }

    std::mutex mutex;
    Model model;
    due_queue<waiting_request> waiting;
    std::atomic<std::size_t> outstanding{0};
    std::atomic<std::uint64_t> overflows{0};
};

} // namespace detail

/// A BlockBackend timed by a TimingModel (see the top of this header). `Clock` is read in
/// submit() and poll(); the clock must outlive the backend. Each parameter is checked with its
/// concept's readable diagnostic.
template <typename Backend, typename Model, typename ClockType>
class timed_backend {
    static_assert(check_block_backend<Backend>());
    static_assert(timing::check_timing_model<Model>());
    static_assert(check_clock<ClockType>());

    using state_type = detail::timed_backend_state<Model>;
    using waiting_request = typename state_type::waiting_request;

public:
    /// Wraps `inner`, timing its requests with `model`; at most `max_outstanding` requests wait
    /// at once. Throws std::invalid_argument when `max_outstanding` is 0; std::bad_alloc when
    /// memory runs out.
    timed_backend(Backend inner, Model model, const ClockType& clock, std::size_t max_outstanding)
        : inner_{std::move(inner)}, clock_{&clock}, state_{make_state(std::move(model), max_outstanding)}
    {}

    timed_backend(const timed_backend&) = delete;
    timed_backend& operator=(const timed_backend&) = delete;
    timed_backend(timed_backend&&) noexcept = default;
    timed_backend& operator=(timed_backend&&) noexcept = default;
    ~timed_backend() = default;

    /// The inner backend's capacity.
    [[nodiscard]] std::uint64_t capacity_bytes() const { return inner_.capacity_bytes(); }

    /// Times `request` and hands it to the inner backend; it completes in a later poll(). Any
    /// thread.
    void submit(block_request& request)
    {
        const block_status valid = validate_block_request(request, inner_.capacity_bytes());
        if (valid != block_status::success) {
            detail::complete_request(request, valid);
            return;
        }
        waiting_request* taken = nullptr;
        {
            const std::lock_guard lock{state_->mutex};
            if (!state_->waiting.full()) {
                const auto slot = state_->waiting.reserve(
                    state_->model.complete_at(timing::timing_request::of(request), clock_->now()));
                taken = &state_->waiting[*slot];
                *taken =
                    waiting_request{state_.get(), *slot, &request, request, block_status::internal_error};
                taken->inner.complete = &state_type::inner_complete;
                taken->inner.context = taken;
                state_->outstanding.fetch_add(1, std::memory_order_relaxed);
            } else {
                state_->overflows.fetch_add(1, std::memory_order_relaxed);
            }
        }
        if (taken == nullptr) {
            detail::complete_request(request, block_status::internal_error);
            return;
        }
        inner_.submit(taken->inner);
    }

    /// Polls the inner backend, then completes every request the inner backend has completed
    /// whose time has come and that was submitted before the call; returns how many it completed.
    std::size_t poll()
    {
        inner_.poll();
        return detail::complete_due(
            state_->mutex, state_->waiting, clock_->now(),
            [this](waiting_request& next) {
                next.outer->error_offset = next.inner.error_offset;
                state_->outstanding.fetch_sub(1, std::memory_order_relaxed);
                return std::pair{next.outer, next.status};
            },
            [](const std::pair<block_request*, block_status>& done) {
                detail::complete_request(*done.first, done.second);
            });
    }

    /// The inner backend's has_volatile_cache().
    [[nodiscard]] bool has_volatile_cache() const { return inner_.has_volatile_cache(); }

    /// Requests submitted and not yet completed (one whose callback runs no longer counts). Any
    /// thread.
    [[nodiscard]] std::size_t outstanding() const noexcept
    {
        return state_->outstanding.load(std::memory_order_relaxed);
    }

    /// Requests completed with internal_error because max_outstanding requests were waiting.
    /// Any thread.
    [[nodiscard]] std::uint64_t overflows() const noexcept
    {
        return state_->overflows.load(std::memory_order_relaxed);
    }

    /// The earliest completion time among the waiting requests the inner backend has completed,
    /// if any: when a simulator's next poll() has something to do.
    [[nodiscard]] std::optional<std::chrono::nanoseconds> next_due() const
    {
        const std::lock_guard lock{state_->mutex};
        return state_->waiting.next_due();
    }

    /// The wrapped backend. Calls through it bypass the timing; make them only while no other
    /// thread uses this backend.
    [[nodiscard]] Backend& inner() noexcept { return inner_; }
    [[nodiscard]] const Backend& inner() const noexcept { return inner_; }

    /// The model. Read it only while no other thread uses this backend.
    [[nodiscard]] const Model& model() const noexcept { return state_->model; }

private:
    static std::unique_ptr<state_type> make_state(Model model, std::size_t max_outstanding)
    {
        if (max_outstanding == 0) {
            throw std::invalid_argument("timed_backend: max_outstanding must be at least 1");
        }
        return std::make_unique<state_type>(std::move(model), max_outstanding);
    }

    Backend inner_;
    const ClockType* clock_;
    std::unique_ptr<state_type> state_;
};

NVMEKIT_END_NAMESPACE
