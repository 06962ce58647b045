#pragma once
/// A fixed-capacity pool of request objects: every request is allocated at construction, and
/// acquire, state changes and release are O(1) without allocation.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <utility>

#include <nvmekit/config.hpp>

NVMEKIT_BEGIN_NAMESPACE

/// Where a request is in its life: free -> in_flight -> completed -> posted -> free.
enum class request_state : std::uint8_t {
    free,      ///< in the pool, available to acquire
    in_flight, ///< taken for a command that is executing
    completed, ///< the command finished; its completion is not posted yet (e.g. the CQ is full)
    posted,    ///< the completion entry is in the CQ; the request waits for release
};

/// A pool of `capacity` requests, each holding a `Payload` (default constructible). Requests move
/// through the states of request_state; an illegal move is a programming error (NVMEKIT_ASSERT).
/// Free requests are kept on a stack of indexes, so acquire and release are a few instructions;
/// a reset or queue deletion walks the in-flight and completed ones with for_each_in_flight.
///
/// The payload is not reset between uses: whoever acquires a request initialises it.
template <typename Payload>
class request_pool {
    static_assert(std::is_default_constructible_v<Payload>,
                  "request_pool: the payload must be default constructible");

public:
    /// One request object. Its address stays valid for the pool's lifetime.
    class request {
    public:
        Payload payload{};

        [[nodiscard]] request_state state() const noexcept { return state_; }
        /// Position in the pool, 0 to capacity - 1; `request_pool::at(index())` is this request.
        [[nodiscard]] std::uint32_t index() const noexcept { return index_; }

    private:
        friend class request_pool;

        std::uint32_t index_ = 0;
        request_state state_ = request_state::free;
    };

    /// Allocates all `capacity` requests, all free; they are acquired in index order at first.
    explicit request_pool(std::uint32_t capacity)
        : storage_{std::make_unique<request[]>(capacity)}
        , free_{std::make_unique<std::uint32_t[]>(capacity)}
        , capacity_{capacity}
        , free_count_{capacity}
    {
        for (std::uint32_t index = 0; index < capacity; ++index) {
            storage_[index].index_ = index;
            free_[index] = capacity - 1 - index; // the top of the stack is request 0
        }
    }

    request_pool(const request_pool&) = delete;
    request_pool& operator=(const request_pool&) = delete;
    /// Moves the requests to the new pool; their addresses do not change. The moved-from pool
    /// has capacity 0.
    request_pool(request_pool&& other) noexcept
        : storage_{std::move(other.storage_)}
        , free_{std::move(other.free_)}
        , capacity_{std::exchange(other.capacity_, 0)}
        , free_count_{std::exchange(other.free_count_, 0)}
        , in_flight_count_{std::exchange(other.in_flight_count_, 0)}
    {}
    request_pool& operator=(request_pool&&) = delete;
    ~request_pool() = default;

    /// Takes a free request (free -> in_flight); nullptr when every request is in use.
    [[nodiscard]] request* acquire() noexcept
    {
        if (free_count_ == 0) {
            return nullptr;
        }
        request& taken = storage_[free_[--free_count_]];
        taken.state_ = request_state::in_flight;
        ++in_flight_count_;
        return &taken;
    }

    /// in_flight -> completed: the command finished and its completion waits to be posted.
    void mark_completed(request& r) noexcept
    {
        NVMEKIT_ASSERT(owns(r), "request_pool: request of another pool");
        NVMEKIT_ASSERT(r.state_ == request_state::in_flight,
                       "request_pool: mark_completed needs an in_flight request");
        r.state_ = request_state::completed;
    }

    /// completed -> posted: the completion entry was written to the CQ.
    void mark_posted(request& r) noexcept
    {
        NVMEKIT_ASSERT(owns(r), "request_pool: request of another pool");
        NVMEKIT_ASSERT(r.state_ == request_state::completed,
                       "request_pool: mark_posted needs a completed request");
        --in_flight_count_;
        r.state_ = request_state::posted;
    }

    /// completed -> posted -> free in one step: the completion entry was written and nothing
    /// holds the request after it (mark_posted then release).
    void release_posted(request& r) noexcept
    {
        NVMEKIT_ASSERT(owns(r), "request_pool: request of another pool");
        NVMEKIT_ASSERT(r.state_ == request_state::completed,
                       "request_pool: release_posted needs a completed request");
        --in_flight_count_;
        r.state_ = request_state::free;
        free_[free_count_++] = r.index_;
    }

    /// posted -> free, or completed -> free to drop a completion that will never be posted
    /// (reset, queue deletion). An in_flight request cannot be released: its command may still
    /// be executing; finish or cancel it and mark it completed first. The most recently released
    /// request is the next one acquired.
    void release(request& r) noexcept
    {
        NVMEKIT_ASSERT(owns(r), "request_pool: request of another pool");
        NVMEKIT_ASSERT(r.state_ == request_state::posted || r.state_ == request_state::completed,
                       "request_pool: release needs a posted or completed request");
        if (r.state_ == request_state::completed) {
            --in_flight_count_;
        }
        r.state_ = request_state::free;
        free_[free_count_++] = r.index_;
    }

    /// Calls `f(request&)` on every in_flight and completed request, in index order. `f` may
    /// change the state of (or release) the request it is given, but of no other request.
    template <typename F>
    void for_each_in_flight(F&& f)
    {
        for (std::uint32_t index = 0; index < capacity_; ++index) {
            request& current = storage_[index];
            if (current.state_ == request_state::in_flight || current.state_ == request_state::completed) {
                f(current);
            }
        }
    }

    /// The request at `index` (< capacity).
    [[nodiscard]] request& at(std::uint32_t index) noexcept
    {
        NVMEKIT_ASSERT(index < capacity_, "request_pool: index out of range");
        return storage_[index];
    }
    [[nodiscard]] const request& at(std::uint32_t index) const noexcept
    {
        NVMEKIT_ASSERT(index < capacity_, "request_pool: index out of range");
        return storage_[index];
    }

    [[nodiscard]] std::uint32_t capacity() const noexcept { return capacity_; }
    /// Requests not free (in_flight, completed or posted).
    [[nodiscard]] std::uint32_t in_use() const noexcept { return capacity_ - available(); }
    /// Requests in_flight or completed: those for_each_in_flight visits.
    [[nodiscard]] std::uint32_t in_flight_count() const noexcept { return in_flight_count_; }
    /// Free requests.
    [[nodiscard]] std::uint32_t available() const noexcept { return free_count_; }
    [[nodiscard]] bool all_free() const noexcept { return free_count_ == capacity_; }

private:
    [[nodiscard]] bool owns(const request& r) const noexcept
    {
        return r.index_ < capacity_ && &storage_[r.index_] == &r;
    }

    std::unique_ptr<request[]> storage_;
    std::unique_ptr<std::uint32_t[]> free_; ///< stack of free request indexes
    std::uint32_t capacity_;
    std::uint32_t free_count_;
    std::uint32_t in_flight_count_ = 0;
};

NVMEKIT_END_NAMESPACE
