#pragma once
/// The controller's side of asynchronous DMA: slots that carry its requests to an
/// AsyncDmaProvider, and each command's journal of the accesses it made.
///
/// A controller bound to a provider whose requests complete later (AsyncDmaProvider, not
/// InlineAsyncDmaProvider) never waits for host memory. Each access becomes a dma_slot: the
/// request, a buffer the slot owns (so the data outlives the handler's stack and the command's
/// staging buffer), and what the access was for. A completed slot goes on the pool's completed
/// list; the controller takes that list in its poll() and acts on each slot in its own context,
/// never inside the provider's callback.
///
/// A handler stays the straight-line code it is with a synchronous provider. Its reads of host
/// memory are journaled: the first run of a handler that reads memory not yet read submits the
/// reads and ends early ("blocked"); the controller parks the command and runs the handler again
/// once every read has completed, now served from the journal in the same order. Writes are
/// posted: the handler's bytes are copied into the slot and the handler goes on; a run again
/// skips writes it already posted. A command completes only when all its requests have, and a
/// write that failed turns a successful command into Data Transfer Error. This is the rule the
/// staging buffers already impose: a handler changes no state before its reads succeed, and runs
/// the same way twice on the same inputs.
///
///     dma_slot_pool pool;
///     dma_slot& slot = pool.take(dma_operation::read, address, 4096);
///     slot.kind = dma_slot_kind::command_read;
///     provider.submit(slot.request);           // completes now or in a later provider.poll()
///     provider.poll();
///     pool.take_completed([&](dma_slot& done) { /* done.result, done.bytes */ pool.release(done); });
///
/// Single-threaded: the pool, its slots and the journals belong to the context that polls the
/// controller. The provider may complete from its own thread only if the controller polls it
/// from one thread and the provider synchronizes (testing::async_dma does); completions are then
/// handed over under the pool's lock. Slots are allocated when none is free and kept for reuse,
/// so a steady workload allocates nothing.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <system_error>
#include <vector>

#include <nvmekit/config.hpp>
#include <nvmekit/contracts/async_dma.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace detail {

/// What a slot's access is for: it decides what the controller does when it completes.
enum class dma_slot_kind : std::uint8_t {
    command_read,     ///< a read a handler asked for (journaled)
    command_write,    ///< a write a handler posted (journaled)
    queue_fetch,      ///< submission queue entries
    completion_write, ///< one completion queue entry
};

/// One access in flight or completed: the request, its buffer and its purpose.
struct dma_slot {
    dma_request request{};
    std::vector<std::byte> bytes; ///< the request's buffer; its capacity is kept for reuse
    std::error_code result{};     ///< the provider's result, once done
    bool done = false;            ///< the provider completed it (set under the pool's lock)
    bool settled = false;         ///< the controller took the completion (its own context only)
    dma_slot_kind kind = dma_slot_kind::command_read;
    void* owner = nullptr;     ///< the command, or the submission queue of a fetch
    void* group = nullptr;     ///< the processing context that submitted it
    std::uint32_t entries = 0; ///< a fetch: the entries it reads
    dma_slot* next = nullptr;  ///< on the free list or the completed list
    class dma_slot_pool* pool = nullptr;
};

/// Owns every slot of one controller; see the top of this header.
class dma_slot_pool {
public:
    dma_slot_pool() = default;
    dma_slot_pool(const dma_slot_pool&) = delete;
    dma_slot_pool& operator=(const dma_slot_pool&) = delete;

    /// A slot for `length` bytes at host `address`, its request ready to submit (its completion
    /// puts it on the completed list); counted as outstanding until that completion.
    [[nodiscard]] dma_slot& take(dma_operation operation, std::uint64_t address, std::size_t length)
    {
        {
            const std::lock_guard lock{completed_mutex_};
            ++outstanding_;
        }
        dma_slot* slot = free_;
        if (slot != nullptr) {
            free_ = slot->next;
        } else {
            slot = slots_.emplace_back(std::make_unique<dma_slot>()).get();
            slot->pool = this;
        }
        slot->next = nullptr;
        slot->bytes.resize(length);
        slot->result = {};
        slot->done = false;
        slot->settled = false;
        slot->owner = nullptr;
        slot->group = nullptr;
        slot->entries = 0;
        slot->request = dma_request{.operation = operation,
                                    .address = address,
                                    .buffer = std::span{slot->bytes},
                                    .complete = &on_complete,
                                    .context = slot};
        return *slot;
    }

    /// Gives a completed slot back for reuse.
    void release(dma_slot& slot) noexcept
    {
        NVMEKIT_ASSERT(slot.settled, "dma_slot_pool: releasing a slot whose completion was not taken");
        slot.owner = nullptr;
        slot.next = free_;
        free_ = &slot;
    }

    /// Runs `f(slot)` on each slot completed since the last call, in completion order (slots
    /// completing meanwhile are taken too). Returns how many it took.
    template <typename F>
    std::size_t take_completed(F&& f)
    {
        std::size_t taken = 0;
        for (;;) {
            dma_slot* slot = nullptr;
            {
                const std::lock_guard lock{completed_mutex_};
                slot = completed_head_;
                if (slot == nullptr) {
                    break;
                }
                completed_head_ = slot->next;
                if (completed_head_ == nullptr) {
                    completed_tail_ = nullptr;
                }
            }
            slot->next = nullptr;
            slot->settled = true;
            ++taken;
            f(*slot);
        }
        return taken;
    }

    /// Slots taken whose request the provider has not completed yet.
    [[nodiscard]] std::size_t outstanding() const noexcept
    {
        const std::lock_guard lock{completed_mutex_};
        return outstanding_;
    }
    /// Whether a completion waits for take_completed().
    [[nodiscard]] bool has_completed() const noexcept
    {
        const std::lock_guard lock{completed_mutex_};
        return completed_head_ != nullptr;
    }
    /// Slots allocated so far (in use or free).
    [[nodiscard]] std::size_t allocated() const noexcept { return slots_.size(); }

private:
    static void on_complete(dma_request& request, std::error_code result)
    {
        auto& slot = *static_cast<dma_slot*>(request.context);
        slot.pool->completed(slot, result);
    }

    void completed(dma_slot& slot, std::error_code result)
    {
        const std::lock_guard lock{completed_mutex_};
        slot.result = result;
        slot.done = true;
        --outstanding_;
        slot.next = nullptr;
        if (completed_tail_ != nullptr) {
            completed_tail_->next = &slot;
        } else {
            completed_head_ = &slot;
        }
        completed_tail_ = &slot;
    }

    std::vector<std::unique_ptr<dma_slot>> slots_;
    dma_slot* free_ = nullptr;
    mutable std::mutex completed_mutex_;
    dma_slot* completed_head_ = nullptr;
    dma_slot* completed_tail_ = nullptr;
    std::size_t outstanding_ = 0;
};

/// The accesses of one command, in the order its handler made them (see the top of this header).
struct dma_journal {
    std::vector<dma_slot*> entries; ///< every access so far; capacity kept for the next command
    std::size_t cursor = 0;         ///< the next entry the running handler meets
    std::size_t phase_start = 0;    ///< where the running step's accesses begin (a continuation's)
    std::size_t pending = 0;        ///< entries not completed yet
    bool blocked = false;           ///< this run met a read still in flight: its result is void
    bool parked = false;            ///< waiting for `pending` to reach 0, then runs again
    bool finish_deferred = false;   ///< finished while writes were in flight
    bool write_failed = false;      ///< a posted write failed

    /// The entry the handler meets next when it ran this far before, or null. A handler runs the
    /// same way on the same inputs; one that makes a different access here did not, and the
    /// caller fails the access (`diverged` is set).
    [[nodiscard]] dma_slot* replayed(dma_operation operation, std::uint64_t address, std::size_t length,
                                     bool& diverged) noexcept
    {
        diverged = false;
        if (cursor == entries.size()) {
            return nullptr;
        }
        dma_slot* slot = entries[cursor];
        ++cursor;
        diverged = slot->request.operation != operation || slot->request.address != address ||
                   slot->bytes.size() != length;
        return slot;
    }

    /// Records a new access, submitted by the caller.
    void record(dma_slot& slot)
    {
        entries.push_back(&slot);
        ++cursor;
        ++pending;
    }

    /// Starts a run of the command's first step (phase_start 0) or of a continuation (from the
    /// accesses made so far).
    void begin_step(bool continuation) noexcept
    {
        phase_start = continuation ? entries.size() : 0;
        cursor = phase_start;
        blocked = false;
    }

    /// The same step again, after it blocked.
    void rewind() noexcept
    {
        cursor = phase_start;
        blocked = false;
        parked = false;
    }

    /// Every entry, completed, back to `pool`; the journal is empty for the next command.
    void release(dma_slot_pool& pool) noexcept
    {
        NVMEKIT_ASSERT(pending == 0, "dma_journal: released with accesses in flight");
        for (dma_slot* slot : entries) {
            pool.release(*slot);
        }
        entries.clear();
        cursor = 0;
        phase_start = 0;
        blocked = false;
        parked = false;
        finish_deferred = false;
        write_failed = false;
    }
};

} // namespace detail
NVMEKIT_END_NAMESPACE
