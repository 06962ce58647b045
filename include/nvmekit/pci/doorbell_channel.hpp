#pragma once
/// The boundary between the context that receives doorbell writes (BAR0 MMIO, PCIe Transport 1.0
/// 3.1.2) and the context that processes the queues: the first step of a command's life, the
/// host's doorbell write reaching the queue's owner.
///
/// The channel holds the latest value written to each SQ Tail and CQ Head doorbell of queues 0 to
/// max_qid, and which of them were written since the processing side last looked. Writes are not
/// queued: a doorbell written twice between two drains is reported once, with its latest value,
/// which is all a doorbell means (an absolute ring index). Values are stored as written, reserved
/// bits included; the processing side validates them against the queue.
///
/// Threading: one producer thread (ring_*) and one consumer thread (drain, any_pending) may run
/// concurrently without locks. The producer stores the value, then sets the doorbell's pending bit
/// with release; the consumer takes a whole word of pending bits with an acquire exchange, then
/// reads the values. When a write races a drain, the drain may already report the newer value and
/// the next drain report it again, so the values reported for one doorbell never decrease but may
/// repeat. Single-threaded use costs one atomic OR per doorbell write. clear() and construction
/// are not concurrent with anything.

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>

#include <nvmekit/config.hpp>

NVMEKIT_BEGIN_NAMESPACE

class doorbell_channel {
public:
    /// Room for the doorbells of queues 0 (admin) to `max_qid`.
    explicit doorbell_channel(std::uint16_t max_qid)
        : max_qid_{max_qid}
        , values_{std::make_unique<std::atomic<std::uint32_t>[]>(slot_count())}
        , pending_{std::make_unique<std::atomic<std::uint64_t>[]>(word_count())}
    {}

    [[nodiscard]] std::uint16_t max_qid() const noexcept { return max_qid_; }

    /// A write of `value` to SQ `qid`'s Tail Doorbell. Returns false, recording nothing, when
    /// `qid` > max_qid() (the caller counts the host error).
    bool ring_sq_tail(std::uint16_t qid, std::uint32_t value) noexcept { return ring(qid, false, value); }
    /// A write of `value` to CQ `qid`'s Head Doorbell. Returns false, recording nothing, when
    /// `qid` > max_qid().
    bool ring_cq_head(std::uint16_t qid, std::uint32_t value) noexcept { return ring(qid, true, value); }

    /// Calls f(qid, is_completion_queue, value) once for each doorbell written since the last
    /// drain, with its latest value, in ascending qid order and, for one qid, the SQ Tail before the
    /// CQ Head. `f` may ring doorbells; those are reported by a later drain unless their bit lies
    /// in a word this drain has not reached yet.
    template <typename F>
    void drain(F&& f)
    {
        const std::size_t words = word_count();
        for (std::size_t word = 0; word < words; ++word) {
            if (pending_[word].load(std::memory_order_relaxed) == 0) {
                continue;
            }
            std::uint64_t bits = pending_[word].exchange(0, std::memory_order_acquire);
            while (bits != 0) {
                const auto index = static_cast<unsigned>(std::countr_zero(bits));
                bits &= bits - 1;
                const std::size_t slot = word * 64 + index;
                f(static_cast<std::uint16_t>(slot / 2), (slot & 1U) != 0,
                  values_[slot].load(std::memory_order_relaxed));
            }
        }
    }

    /// True when a doorbell was written since the last drain.
    [[nodiscard]] bool any_pending() const noexcept
    {
        const std::size_t words = word_count();
        for (std::size_t word = 0; word < words; ++word) {
            if (pending_[word].load(std::memory_order_acquire) != 0) {
                return true;
            }
        }
        return false;
    }

    /// Forgets one doorbell's pending write and zeroes its value (its queue was deleted: a value
    /// written for the old queue must not reach a queue created later with the same QID). The
    /// consumer may not run meanwhile; the producer may.
    void forget(std::uint16_t qid, bool completion_queue) noexcept
    {
        if (qid > max_qid_) {
            return;
        }
        const std::size_t slot = 2 * std::size_t{qid} + (completion_queue ? 1U : 0U);
        pending_[slot / 64].fetch_and(~(std::uint64_t{1} << (slot % 64)), std::memory_order_relaxed);
        values_[slot].store(0, std::memory_order_relaxed);
    }

    /// Forgets every pending doorbell and zeroes every value (controller reset). Neither side may
    /// run meanwhile.
    void clear() noexcept
    {
        const std::size_t slots = slot_count();
        for (std::size_t slot = 0; slot < slots; ++slot) {
            values_[slot].store(0, std::memory_order_relaxed);
        }
        const std::size_t words = word_count();
        for (std::size_t word = 0; word < words; ++word) {
            pending_[word].store(0, std::memory_order_relaxed);
        }
    }

private:
    static_assert(std::atomic<std::uint64_t>::is_always_lock_free &&
                      std::atomic<std::uint32_t>::is_always_lock_free,
                  "doorbell_channel needs lock-free 32- and 64-bit atomics");

    // Slot 2 * qid is the SQ Tail, 2 * qid + 1 the CQ Head: the BAR0 doorbell order.
    [[nodiscard]] std::size_t slot_count() const noexcept { return 2 * (std::size_t{max_qid_} + 1); }
    [[nodiscard]] std::size_t word_count() const noexcept { return (slot_count() + 63) / 64; }

    bool ring(std::uint16_t qid, bool completion_queue, std::uint32_t value) noexcept
    {
        if (qid > max_qid_) {
            return false;
        }
        const std::size_t slot = 2 * std::size_t{qid} + (completion_queue ? 1U : 0U);
        values_[slot].store(value, std::memory_order_relaxed);
        pending_[slot / 64].fetch_or(std::uint64_t{1} << (slot % 64), std::memory_order_release);
        return true;
    }

    std::uint16_t max_qid_;
    std::unique_ptr<std::atomic<std::uint32_t>[]> values_;
    std::unique_ptr<std::atomic<std::uint64_t>[]> pending_;
};

NVMEKIT_END_NAMESPACE
