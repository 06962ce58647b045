#pragma once
/// due_queue: the waiting entries of something that completes work late (test_backend, the
/// testing async_dma, timed_backend), each with a due time, picked earliest due first.
///
///     nvmekit::detail::due_queue<block_request*> queue{64};   // every slot allocated here
///     queue.push(&request, now + delay);                     // false when all 64 wait
///     const std::uint64_t before = queue.next_sequence();    // at the start of a poll
///     while (auto next = queue.pop_due(now, before)) { ... }
///
/// An entry is numbered when it is reserved, in reservation order, and becomes eligible once it is
/// scheduled (push() does both at once; a backend whose entries must first finish elsewhere
/// schedules them later). pop_due() takes the eligible entry due earliest among those due by
/// `now`, ties broken by number, and only among entries numbered below `before`: a poll that
/// passes the next_sequence() it read when it started never takes an entry reserved after that,
/// so it always ends.
///
/// The eligible entries form a binary min-heap on (due time, number), so push, schedule and a
/// pop_due whose pick is the heap's top are O(log n). An entry numbered at or above `before` and
/// due by `now` can sit ahead of the pick (reserved during a poll, with a due time at or before
/// the poll's `now`); pop_due() steps over such entries, visiting each once.
///
/// Memory: every slot, the heap and the free list are allocated at construction; nothing else
/// allocates (given a Payload whose moves do not). Not thread-safe: the user's mutex guards it;
/// complete_due() is the poll loop that takes entries under that mutex and finishes them without it.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include <nvmekit/config.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace detail {

/// See the top of this header. `Payload` is default constructible; it stays in its slot from
/// reserve() until pop_due() moves it out.
template <typename Payload>
class due_queue {
    static_assert(std::is_default_constructible_v<Payload>,
                  "due_queue: the payload must be default constructible");

public:
    /// Names a slot from reserve() until pop_due() frees it.
    using slot_index = std::size_t;

    /// A queue of `capacity` slots. Throws std::bad_alloc when memory runs out.
    explicit due_queue(std::size_t capacity) : slots_(capacity)
    {
        heap_.reserve(capacity);
        free_.reserve(capacity);
        for (std::size_t index = capacity; index > 0; --index) {
            free_.push_back(index - 1); // slot 0 is taken first
        }
    }

    /// The number of slots.
    [[nodiscard]] std::size_t capacity() const noexcept { return slots_.size(); }
    /// Entries reserved and not yet popped, scheduled or not.
    [[nodiscard]] std::size_t size() const noexcept { return slots_.size() - free_.size(); }
    /// Whether every slot is taken.
    [[nodiscard]] bool full() const noexcept { return free_.empty(); }

    /// Takes a free slot for an entry due at `due` and numbers it after every entry reserved
    /// before; the entry is not eligible until schedule(). Empty, and nothing numbered, when
    /// every slot is taken.
    [[nodiscard]] std::optional<slot_index> reserve(std::chrono::nanoseconds due) noexcept
    {
        if (free_.empty()) {
            return std::nullopt;
        }
        const slot_index index = free_.back();
        free_.pop_back();
        slots_[index].due = due;
        slots_[index].sequence = next_sequence_++;
        slots_[index].scheduled = false;
        return index;
    }

    /// The payload of a reserved slot.
    [[nodiscard]] Payload& operator[](slot_index index) noexcept { return slots_[index].payload; }
    [[nodiscard]] const Payload& operator[](slot_index index) const noexcept { return slots_[index].payload; }

    /// Makes the entry in reserved slot `index` eligible for pop_due(); once per reservation.
    void schedule(slot_index index) noexcept
    {
        slot& entry = slots_[index];
        NVMEKIT_ASSERT(!entry.scheduled, "due_queue: an entry is scheduled twice");
        entry.scheduled = true;
        heap_.push_back({entry.due, entry.sequence, index});
        sift_up(heap_.size() - 1);
    }

    /// Reserves a slot for `payload`, due at `due`, and schedules it. False, with nothing
    /// numbered, when every slot is taken.
    bool push(Payload payload,
              std::chrono::nanoseconds due) noexcept(std::is_nothrow_move_assignable_v<Payload>)
    {
        const auto index = reserve(due);
        if (!index) {
            return false;
        }
        slots_[*index].payload = std::move(payload);
        schedule(*index);
        return true;
    }

    /// The number the next reserved entry gets: every entry reserved so far is numbered below it.
    [[nodiscard]] std::uint64_t next_sequence() const noexcept { return next_sequence_; }

    /// Frees the slot of the scheduled entry due earliest (ties: numbered first) among those due
    /// by `now` and numbered below `before`, and returns its payload; empty when there is none.
    std::optional<Payload>
    pop_due(std::chrono::nanoseconds now,
            std::uint64_t before) noexcept(std::is_nothrow_move_constructible_v<Payload>)
    {
        const std::size_t position = find_due(0, now, before);
        if (position == npos) {
            return std::nullopt;
        }
        const slot_index index = heap_[position].slot;
        remove_at(position);
        free_.push_back(index);
        return std::optional<Payload>{std::move(slots_[index].payload)};
    }

    /// The earliest due time among the scheduled entries; empty when none is scheduled.
    [[nodiscard]] std::optional<std::chrono::nanoseconds> next_due() const noexcept
    {
        if (heap_.empty()) {
            return std::nullopt;
        }
        return heap_.front().due;
    }

private:
    static constexpr std::size_t npos = ~std::size_t{0};

    struct slot {
        Payload payload{};
        std::chrono::nanoseconds due{};
        std::uint64_t sequence = 0;
        bool scheduled = false;
    };

    /// A scheduled entry's key, kept in the heap next to the slot it names.
    struct node {
        std::chrono::nanoseconds due{};
        std::uint64_t sequence = 0;
        slot_index slot = 0;

        [[nodiscard]] bool before(const node& other) const noexcept
        {
            return due < other.due || (due == other.due && sequence < other.sequence);
        }
    };

    /// The heap position of the entry pop_due() takes within the subtree at `position`, or npos.
    /// A node due after `now` ends its subtree's search (its descendants are due no earlier); an
    /// eligible node is the best of its subtree; a node numbered at or above `before` is stepped
    /// over. Recursion depth is the heap's height.
    [[nodiscard]] std::size_t find_due(std::size_t position, std::chrono::nanoseconds now,
                                       std::uint64_t before) const noexcept
    {
        if (position >= heap_.size() || heap_[position].due > now) {
            return npos;
        }
        if (heap_[position].sequence < before) {
            return position;
        }
        const std::size_t left = find_due(2 * position + 1, now, before);
        const std::size_t right = find_due(2 * position + 2, now, before);
        if (left == npos || (right != npos && heap_[right].before(heap_[left]))) {
            return right;
        }
        return left;
    }

    void remove_at(std::size_t position) noexcept
    {
        const std::size_t last = heap_.size() - 1;
        if (position != last) {
            heap_[position] = heap_[last];
        }
        heap_.pop_back();
        if (position < heap_.size()) {
            sift_down(position);
            sift_up(position);
        }
    }

    void sift_up(std::size_t position) noexcept
    {
        while (position > 0) {
            const std::size_t parent = (position - 1) / 2;
            if (!heap_[position].before(heap_[parent])) {
                return;
            }
            std::swap(heap_[position], heap_[parent]);
            position = parent;
        }
    }

    void sift_down(std::size_t position) noexcept
    {
        for (;;) {
            std::size_t best = position;
            for (const std::size_t child : {2 * position + 1, 2 * position + 2}) {
                if (child < heap_.size() && heap_[child].before(heap_[best])) {
                    best = child;
                }
            }
            if (best == position) {
                return;
            }
            std::swap(heap_[position], heap_[best]);
            position = best;
        }
    }

    std::vector<slot> slots_;
    std::vector<node> heap_;       ///< the scheduled entries; capacity() reserved
    std::vector<slot_index> free_; ///< a stack of the free slots; capacity() reserved
    std::uint64_t next_sequence_ = 0;
};

/// One poll over `queue`, which `mutex` guards: takes the entries due by `now` that were reserved
/// before the call, one at a time in pop_due() order. For each, `take(payload)` runs with the
/// mutex held and returns what `finish` then gets with the mutex released (so `finish` may call
/// back into the queue's owner). Returns how many entries it took.
template <typename Payload, typename Mutex, typename Take, typename Finish>
std::size_t complete_due(Mutex& mutex, due_queue<Payload>& queue, std::chrono::nanoseconds now, Take&& take,
                         Finish&& finish)
{
    std::uint64_t before = 0;
    {
        const std::lock_guard lock{mutex};
        before = queue.next_sequence();
    }
    std::size_t taken = 0;
    for (;;) {
        std::optional<std::invoke_result_t<Take&, Payload&>> done;
        {
            const std::lock_guard lock{mutex};
            auto next = queue.pop_due(now, before);
            if (!next) {
                return taken;
            }
            done.emplace(take(*next));
        }
        ++taken;
        finish(std::move(*done));
    }
}

} // namespace detail
NVMEKIT_END_NAMESPACE
