#pragma once
/// A fixed-capacity pool of request objects: every request is allocated at construction, and
/// acquire, state changes and release are O(1) without allocation.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <utility>

#include <boost/intrusive/list.hpp>

#include <nvmekit/config.hpp>

NVMEKIT_BEGIN_NAMESPACE

/// Where a request is in its life: free -> in_flight -> completed -> posted -> free.
enum class request_state : std::uint8_t {
    free,       ///< in the pool, available to acquire
    in_flight,  ///< taken for a command that is executing
    completed,  ///< the command finished; its completion is not posted yet (e.g. the CQ is full)
    posted,     ///< the completion entry is in the CQ; the request waits for release
};

/// A pool of `capacity` requests, each holding a `Payload` (default constructible). Requests move
/// through the states of request_state; an illegal move is a programming error (NVMEKIT_ASSERT).
/// In-flight and completed requests are kept on a list so a reset or queue deletion can walk them.
///
/// The payload is not reset between uses: whoever acquires a request initialises it.
template <typename Payload>
class request_pool {
    static_assert(std::is_default_constructible_v<Payload>, "request_pool: the payload must be default constructible");

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

        boost::intrusive::list_member_hook<> hook_;
        std::uint32_t index_ = 0;
        request_state state_ = request_state::free;
    };

    /// Allocates all `capacity` requests, all free.
    explicit request_pool(std::uint32_t capacity)
        : storage_{std::make_unique<request[]>(capacity)}, capacity_{capacity}
    {
        for (std::uint32_t index = 0; index < capacity; ++index) {
            storage_[index].index_ = index;
            free_.push_back(storage_[index]);
        }
    }

    request_pool(const request_pool&) = delete;
    request_pool& operator=(const request_pool&) = delete;
    /// Moves the requests to the new pool; their addresses do not change. The moved-from pool
    /// has capacity 0.
    request_pool(request_pool&& other) noexcept
        : storage_{std::move(other.storage_)},
          capacity_{std::exchange(other.capacity_, 0)},
          free_{std::move(other.free_)},
          in_flight_{std::move(other.in_flight_)}
    {
    }
    request_pool& operator=(request_pool&&) = delete;
    ~request_pool() = default;

    /// Takes a free request (free -> in_flight); nullptr when every request is in use.
    [[nodiscard]] request* acquire() noexcept
    {
        if (free_.empty()) {
            return nullptr;
        }
        request& taken = free_.front();
        free_.pop_front();
        taken.state_ = request_state::in_flight;
        in_flight_.push_back(taken);
        return &taken;
    }

    /// in_flight -> completed: the command finished and its completion waits to be posted.
    void mark_completed(request& r) noexcept
    {
        NVMEKIT_ASSERT(owns(r), "request_pool: request of another pool");
        NVMEKIT_ASSERT(r.state_ == request_state::in_flight, "request_pool: mark_completed needs an in_flight request");
        r.state_ = request_state::completed;
    }

    /// completed -> posted: the completion entry was written to the CQ.
    void mark_posted(request& r) noexcept
    {
        NVMEKIT_ASSERT(owns(r), "request_pool: request of another pool");
        NVMEKIT_ASSERT(r.state_ == request_state::completed, "request_pool: mark_posted needs a completed request");
        in_flight_.erase(in_flight_.iterator_to(r));
        r.state_ = request_state::posted;
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
            in_flight_.erase(in_flight_.iterator_to(r));
        }
        r.state_ = request_state::free;
        free_.push_front(r);
    }

    /// Calls `f(request&)` on every in_flight and completed request, oldest acquired first. `f`
    /// may change the state of (or release) the request it is given, but of no other request.
    template <typename F>
    void for_each_in_flight(F&& f)
    {
        for (auto it = in_flight_.begin(); it != in_flight_.end();) {
            request& current = *it;
            ++it;
            f(current);
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
    [[nodiscard]] std::uint32_t in_flight_count() const noexcept { return static_cast<std::uint32_t>(in_flight_.size()); }
    /// Free requests.
    [[nodiscard]] std::uint32_t available() const noexcept { return static_cast<std::uint32_t>(free_.size()); }
    [[nodiscard]] bool all_free() const noexcept { return free_.size() == capacity_; }

private:
    using request_list = boost::intrusive::list<
        request, boost::intrusive::member_hook<request, boost::intrusive::list_member_hook<>, &request::hook_>>;

    [[nodiscard]] bool owns(const request& r) const noexcept
    {
        return r.index_ < capacity_ && &storage_[r.index_] == &r;
    }

    // Declared before the lists, so the lists are destroyed (and unlink their nodes) first.
    std::unique_ptr<request[]> storage_;
    std::uint32_t capacity_;
    request_list free_;
    request_list in_flight_;
};

NVMEKIT_END_NAMESPACE
