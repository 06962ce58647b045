#pragma once
/// A bounded multi-producer single-consumer queue of messages: how poll groups and the admin
/// context talk (threading model: poll_group.hpp). "Delete this SQ", "reset your queues", "this command
/// completed on the backend" are sent as messages to the group that owns the queue.
///
///     nvmekit::mailbox<group_message> inbox{256};          // capacity 256 (a power of two)
///     if (!inbox.try_push(group_message{...})) { ... }     // any thread; false when full
///     group.wakeup_handle().notify();                      // then wake the consumer if it sleeps
///     inbox.drain([&](group_message&& m) { handle(m); }, 64);   // the consumer, in its poll
///
/// The ring is a sequence-numbered array of cells (the bounded queue described by D. Vyukov): each
/// cell holds a sequence number that says whose turn it is. A producer claims position `p` by
/// advancing the shared tail with a compare-exchange when cell `p % capacity` has sequence `p`,
/// constructs the message in it, then publishes it by storing `p + 1` with release. The consumer
/// takes the message at position `p` once it reads `p + 1` with acquire, moves it out, and hands
/// the cell to the producers of the next lap by storing `p + capacity` with release.
///
/// Threading: any number of producer threads may call try_push and try_emplace concurrently with
/// each other and with one consumer. Only one thread at a time may be the consumer (try_pop,
/// drain); a consumer may move to another thread only through a hand-over that synchronizes
/// (thread start and join, a mutex, a release/acquire pair). capacity, empty_approx and
/// size_approx may be called from any thread. Construction and destruction are not concurrent
/// with anything.
///
/// Progress: producers never block each other: a producer whose compare-exchange fails retries
/// with the newer tail, so some producer always makes progress. A producer descheduled between
/// claiming a cell and publishing it holds back the messages claimed after it: the consumer sees
/// an empty mailbox until that producer resumes (it never spins or waits on it). Messages from
/// one producer thread are received in the order it pushed them; messages from different producers
/// are received in the order they claimed cells.
///
/// Cost: all memory is allocated by the constructor. try_push, try_emplace, try_pop and drain
/// allocate nothing, take no lock and make no system call (beyond what T's move constructor and
/// destructor do).

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include <nvmekit/config.hpp>

NVMEKIT_BEGIN_NAMESPACE

/// See the comment at the top of this header. `T` is any object type that can be moved and
/// destroyed without throwing (what the consumer receives must not be lost halfway).
template <typename T>
class mailbox {
    static_assert(std::is_object_v<T> && !std::is_const_v<T> && !std::is_volatile_v<T>,
                  "mailbox<T>: T must be a non-const, non-volatile object type");
    static_assert(std::is_nothrow_move_constructible_v<T>,
                  "mailbox<T>: T must be nothrow move constructible (`T(std::move(t))` is noexcept)");
    static_assert(std::is_nothrow_destructible_v<T>, "mailbox<T>: T must be nothrow destructible");

public:
    using value_type = T;

    /// A mailbox that holds at least `min_capacity` messages: the capacity is rounded up to a power
    /// of two, and to at least 2. Throws std::invalid_argument when `min_capacity` is 0 or too
    /// large to round, and std::bad_alloc when the memory cannot be allocated.
    explicit mailbox(std::size_t min_capacity) : mask_{round_capacity(min_capacity) - 1}
    {
        cells_ = std::make_unique<cell[]>(mask_ + 1);
        for (std::size_t position = 0; position <= mask_; ++position) {
            cells_[position].sequence.store(position, std::memory_order_relaxed);
        }
    }

    mailbox(const mailbox&) = delete;
    mailbox& operator=(const mailbox&) = delete;

    /// Destroys the messages still queued. No producer or consumer may be running.
    ~mailbox()
    {
        while (try_pop_into_nothing()) {
        }
    }

    /// The number of messages the mailbox holds when full: a power of two, at least the capacity
    /// asked for.
    [[nodiscard]] std::size_t capacity() const noexcept { return mask_ + 1; }

    /// Queues `value` by moving it into the mailbox and returns true; when the mailbox is full
    /// returns false and leaves `value` untouched (not moved from), so the caller still owns it and
    /// may retry. Any thread.
    bool try_push(T&& value) noexcept { return try_emplace(std::move(value)); }

    /// Queues a copy of `value` and returns true, or returns false when the mailbox is full. When
    /// copying T may throw, the copy is made before a cell is claimed (and is wasted when the
    /// mailbox is full), so an exception leaves the mailbox unchanged. Any thread.
    // clang-format off
    bool try_push(const T& value) noexcept(std::is_nothrow_copy_constructible_v<T>)
        requires std::is_copy_constructible_v<T>
    // clang-format on
    {
        if constexpr (std::is_nothrow_copy_constructible_v<T>) {
            return try_emplace(value);
        } else {
            T copy(value);
            return try_emplace(std::move(copy));
        }
    }

    /// Constructs a message in place from `args` and returns true, or returns false, constructing
    /// nothing (the arguments are not moved from), when the mailbox is full. The construction must
    /// not throw: it runs while the claimed cell blocks the consumer. Any thread.
    template <typename... Args>
        requires std::is_nothrow_constructible_v<T, Args&&...>
    bool try_emplace(Args&&... args) noexcept
    {
        cell* claimed = nullptr;
        std::size_t position = tail_.load(std::memory_order_relaxed);
        for (;;) {
            cell& candidate = cells_[position & mask_];
            // Acquire: the consumer's move-out and destruction of the previous lap's message in
            // this cell happen before we construct into it.
            const std::size_t sequence = candidate.sequence.load(std::memory_order_acquire);
            const auto lag = static_cast<std::intptr_t>(sequence - position);
            if (lag == 0) {
                // The cell is free for this lap; claim the position unless another producer did.
                if (tail_.compare_exchange_weak(position, position + 1, std::memory_order_relaxed)) {
                    claimed = &candidate;
                    break;
                }
                // `position` now holds the newer tail.
            } else if (lag < 0) {
                // The cell still holds the message of the previous lap: full.
                return false;
            } else {
                // Another producer claimed this position already; catch up.
                position = tail_.load(std::memory_order_relaxed);
            }
        }
        std::construct_at(claimed->object(), std::forward<Args>(args)...);
        claimed->sequence.store(position + 1, std::memory_order_release);
        return true;
    }

    /// Takes the oldest published message into `out` (move assignment) and returns true, or
    /// returns false, leaving `out` untouched, when there is none. Consumer only.
    bool try_pop(T& out) noexcept(std::is_nothrow_move_assignable_v<T>)
    {
        cell* const head = published_head();
        if (head == nullptr) {
            return false;
        }
        // Assign before releasing the cell, so a throwing assignment leaves the message queued.
        out = std::move(*head->object());
        release_head(*head);
        return true;
    }

    /// The oldest published message, or std::nullopt when there is none. Consumer only.
    [[nodiscard]] std::optional<T> try_pop() noexcept
    {
        cell* const head = published_head();
        if (head == nullptr) {
            return std::nullopt;
        }
        std::optional<T> message{std::in_place, std::move(*head->object())};
        release_head(*head);
        return message;
    }

    /// Pops up to `max` messages, oldest first, calling `f(T&&)` on each, and returns how many were
    /// popped. Each message is out of the mailbox before `f` sees it, so `f` may push into this
    /// mailbox, and an exception from `f` loses only the message it was handling (which is
    /// destroyed). Messages published while draining are taken too, up to `max`. Consumer only.
    template <typename F>
    std::size_t drain(F&& f, std::size_t max)
    {
        std::size_t popped = 0;
        while (popped < max) {
            cell* const head = published_head();
            if (head == nullptr) {
                break;
            }
            T message(std::move(*head->object()));
            release_head(*head);
            ++popped;
            f(std::move(message));
        }
        return popped;
    }

    /// True when every message claimed by a producer has been popped. A message whose producer is
    /// still constructing it counts as present, so false does not promise that try_pop succeeds.
    /// Exact only when no thread runs concurrently. Any thread.
    [[nodiscard]] bool empty_approx() const noexcept { return size_approx() == 0; }

    /// The number of messages claimed and not yet popped, read without synchronization (two
    /// relaxed loads); exact only when no thread runs concurrently. Any thread.
    [[nodiscard]] std::size_t size_approx() const noexcept
    {
        // Read the head first: it never passes the tail, so a tail read later is not behind it
        // in the common case; clamp what a stale tail could still produce.
        const std::size_t head = head_.load(std::memory_order_relaxed);
        const std::size_t tail = tail_.load(std::memory_order_relaxed);
        const auto claimed = static_cast<std::intptr_t>(tail - head);
        if (claimed <= 0) {
            return 0;
        }
        return static_cast<std::size_t>(claimed) > capacity() ? capacity()
                                                              : static_cast<std::size_t>(claimed);
    }

private:
    // Producers write tail_ and the cells, the consumer head_ and the cells: keep the two counters
    // on separate cache lines so the consumer does not stall producers on every pop.
    static constexpr std::size_t cache_line = 64;

    struct cell {
        std::atomic<std::size_t> sequence{0};
        alignas(T) std::byte storage[sizeof(T)];

        T* object() noexcept { return std::launder(reinterpret_cast<T*>(storage)); }
    };

    static std::size_t round_capacity(std::size_t min_capacity)
    {
        if (min_capacity == 0) {
            throw std::invalid_argument{"nvmekit::mailbox: capacity must be at least 1"};
        }
        // Positions are compared as signed differences: keep the capacity far below half the range.
        constexpr std::size_t largest = std::size_t{1} << (sizeof(std::size_t) * 8 - 2);
        if (min_capacity > largest) {
            throw std::invalid_argument{"nvmekit::mailbox: capacity too large"};
        }
        // A single cell cannot tell "published" (p + 1) from "free for the next lap" (p + 1).
        return std::bit_ceil(min_capacity < 2 ? std::size_t{2} : min_capacity);
    }

    // The cell at the head when its message is published, else nullptr. Consumer only.
    cell* published_head() noexcept
    {
        const std::size_t position = head_.load(std::memory_order_relaxed);
        cell& candidate = cells_[position & mask_];
        // Acquire: pairs with the producer's publishing store, so the message is fully built.
        if (candidate.sequence.load(std::memory_order_acquire) != position + 1) {
            return nullptr;
        }
        return &candidate;
    }

    // Destroys the (moved-from) message at the head and hands its cell to the next lap.
    void release_head(cell& head) noexcept
    {
        const std::size_t position = head_.load(std::memory_order_relaxed);
        std::destroy_at(head.object());
        // Release: the destruction above happens before the next producer constructs here.
        head.sequence.store(position + mask_ + 1, std::memory_order_release);
        head_.store(position + 1, std::memory_order_relaxed);
    }

    bool try_pop_into_nothing() noexcept
    {
        cell* const head = published_head();
        if (head == nullptr) {
            return false;
        }
        release_head(*head);
        return true;
    }

    std::size_t mask_;
    std::unique_ptr<cell[]> cells_;
    alignas(cache_line) std::atomic<std::size_t> tail_{0};
    alignas(cache_line) std::atomic<std::size_t> head_{0};
};

NVMEKIT_END_NAMESPACE
