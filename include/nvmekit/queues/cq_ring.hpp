#pragma once
/// A completion queue as the controller sees it: tail, phase tag, full/empty logic and posting
/// of entries (Base 2.0 3.3.1 and 4.6).

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <system_error>
#include <utility>

#include <nvmekit/config.hpp>
#include <nvmekit/contracts/dma.hpp>
#include <nvmekit/error.hpp>
#include <nvmekit/queues/queue_memory.hpp>
#include <nvmekit/spec/queue_entries.hpp>

NVMEKIT_BEGIN_NAMESPACE

/// A circular completion queue of `entries` slots. The controller produces at the tail, the host
/// consumes at the head. It holds at most entries - 1 completions: full when one more entry would
/// make tail == head (Base 2.0 3.3.1.5).
///
/// A memory-based queue (the PCIe function) is in host memory: post() writes entries there by
/// DMA and the host returns them through its head doorbell. A message-based queue (fabrics, the
/// in-memory loopback) is held by the controller: the transport takes each completion with pop()
/// and sends it on.
///
/// With a provider whose views are stable (StableMappingDmaProvider), a queue in one contiguous
/// range keeps a view of it and post() stores each entry there, mapping the queue again only when
/// the provider's mapping generation changes; a queue the provider does not map (a PRP list, a
/// range it refuses) is written through the provider as with any other.
class cq_ring {
public:
    /// Size of a completion queue entry: 16 bytes (CC.IOCQES = 4).
    static constexpr std::uint32_t cqe_size = sizeof(spec::completion_queue_entry);

    /// Selects the message-based constructor.
    struct message_based_t {};
    static constexpr message_based_t message_based{};

    /// Precondition (validated by the controller): 2 <= `entries` <= 65536 (Base 2.0 4.1.3).
    cq_ring(std::uint16_t qid, std::uint32_t entries, queue_memory memory, std::uint16_t interrupt_vector,
            bool interrupts_enabled)
        : memory_{std::move(memory)}
        , entries_{entries}
        , qid_{qid}
        , interrupt_vector_{interrupt_vector}
        , interrupts_enabled_{interrupts_enabled}
    {
        NVMEKIT_ASSERT(entries >= 2 && entries <= 65536, "cq_ring: queue size out of range");
    }

    /// A message-based queue of `entries` slots held by the controller (2 <= `entries` <= 65536);
    /// it signals no interrupt.
    cq_ring(std::uint16_t qid, std::uint32_t entries, message_based_t)
        : memory_{queue_memory::contiguous(0)}
        , local_{std::make_unique<spec::completion_queue_entry[]>(entries)}
        , entries_{entries}
        , qid_{qid}
        , interrupt_vector_{0}
        , interrupts_enabled_{false}
    {
        NVMEKIT_ASSERT(entries >= 2 && entries <= 65536, "cq_ring: queue size out of range");
    }

    /// True for a message-based queue (pop() drains it), false for one in host memory.
    [[nodiscard]] bool is_message_based() const noexcept { return local_ != nullptr; }

    /// A message-based queue gives up its oldest completion, which frees its slot; nothing when
    /// it is empty or in host memory.
    [[nodiscard]] std::optional<spec::completion_queue_entry> pop() noexcept
    {
        if (local_ == nullptr || head_ == tail_) {
            return std::nullopt;
        }
        const auto entry = local_[head_];
        head_ = next(head_);
        return entry;
    }

    [[nodiscard]] std::uint16_t qid() const noexcept { return qid_; }
    [[nodiscard]] std::uint32_t entries() const noexcept { return entries_; }
    /// The host's head, as last written to the CQ Head Doorbell.
    [[nodiscard]] std::uint32_t head() const noexcept { return head_; }
    /// The slot the next completion is written to.
    [[nodiscard]] std::uint32_t tail() const noexcept { return tail_; }
    /// The Phase Tag the next completion carries: true on the first pass, inverted at each wrap
    /// (Base 2.0 4.6).
    [[nodiscard]] bool phase() const noexcept { return phase_; }
    /// MSI-X vector of the queue (Create I/O CQ CDW11.IV; 0 for the admin queue).
    [[nodiscard]] std::uint16_t interrupt_vector() const noexcept { return interrupt_vector_; }
    /// Create I/O CQ CDW11.IEN (always true for the admin queue).
    [[nodiscard]] bool interrupts_enabled() const noexcept { return interrupts_enabled_; }
    [[nodiscard]] const queue_memory& memory() const noexcept { return memory_; }

    /// Whether posting one more completion would make tail == head (Base 2.0 3.3.1.5).
    [[nodiscard]] bool full() const noexcept { return next(tail_) == head_; }

    /// Completions posted and not yet consumed by the host: (tail - head) mod entries.
    [[nodiscard]] std::uint32_t outstanding() const noexcept
    {
        return tail_ >= head_ ? tail_ - head_ : entries_ - head_ + tail_;
    }

    /// Completions that can be posted before the queue is full.
    [[nodiscard]] std::uint32_t free_slots() const noexcept { return entries_ - 1 - outstanding(); }

    /// Takes the host's new head from a CQ Head Doorbell write. A value >= entries, or one that
    /// moves the head past completions not yet posted (outside [head, tail] going forward), is an
    /// Invalid Doorbell Write Value (Base 2.0 5.2, Asynchronous Event Information - Error
    /// Status): returns false and changes nothing. new_head == head (nothing consumed) and
    /// new_head == tail (everything consumed) are valid.
    [[nodiscard]] bool set_head(std::uint32_t new_head) noexcept
    {
        if (new_head >= entries_) {
            return false;
        }
        const std::uint32_t advance = new_head >= head_ ? new_head - head_ : entries_ - head_ + new_head;
        if (advance > outstanding()) {
            return false;
        }
        head_ = new_head;
        return true;
    }

    /// Writes `entry` at the tail with its Phase Tag (CQE DW3 bit 16) replaced by the current
    /// phase, then advances the tail, inverting the phase on wrap. The caller fills every other
    /// field (SQHD from sq_ring::head(), SQID, CID, status). Precondition: !full(); hold the
    /// completion while the queue is full. On a DMA error the error is returned and tail and
    /// phase are unchanged.
    template <DmaProvider Dma>
    std::error_code post(Dma& dma, spec::completion_queue_entry entry)
    {
        NVMEKIT_ASSERT(!full(), "cq_ring: posting into a full completion queue");
        entry.status_phase =
            static_cast<std::uint16_t>((entry.status_phase & ~std::uint16_t{1}) | (phase_ ? 1U : 0U));
        if (local_ != nullptr) [[unlikely]] {
            post_local(entry);
            return {};
        }
        const std::size_t offset = std::size_t{tail_} * cqe_size;
        // The command's data, written to host memory before, must be visible no later than its
        // completion entry, as PCIe orders a function's posted writes: a host on another core that
        // sees the new phase tag then finds the data. Free on x86, a barrier on weakly ordered
        // machines.
        std::atomic_thread_fence(std::memory_order_release);
        if constexpr (StableMappingDmaProvider<Dma>) {
            if (const std::uint64_t generation = dma.mapping_generation(); generation != view_generation_)
                [[unlikely]] {
                map_view(dma, generation);
            }
            if (view_ != nullptr) [[likely]] {
                std::memcpy(view_ + offset, &entry, cqe_size);
                advance_tail();
                return no_error;
            }
        }
        NVMEKIT_ASSERT(memory_.contiguous_bytes_from(offset) >= cqe_size,
                       "cq_ring: a completion queue entry straddles a memory page");
        // The provider's own success value is returned: building a new one costs a call.
        const std::error_code error = dma_write_object(dma, memory_.address_of(offset), entry);
        if (!error) {
            advance_tail();
        }
        return error;
    }

    /// Back to the state of a new queue: head = tail = 0 and phase = true, so the first pass
    /// writes P = 1.
    void reset() noexcept
    {
        head_ = 0;
        tail_ = 0;
        phase_ = true;
    }

private:
    /// Maps the whole queue for post() (no view when the queue is not one contiguous range or the
    /// provider does not map it), valid while the provider's mapping generation is `generation`.
    template <typename Dma>
    [[gnu::noinline]] void map_view(Dma& dma, std::uint64_t generation)
    {
        view_generation_ = generation;
        view_ = memory_.map_whole(dma, std::size_t{entries_} * cqe_size);
    }

    /// post() on a message-based queue, kept out of the memory-based path.
    void post_local(const spec::completion_queue_entry& entry) noexcept
    {
        local_[tail_] = entry;
        advance_tail();
    }

    /// Past a posted entry: the phase inverts on wrap.
    void advance_tail() noexcept
    {
        tail_ = next(tail_);
        if (tail_ == 0) {
            phase_ = !phase_;
        }
    }

    [[nodiscard]] std::uint32_t next(std::uint32_t index) const noexcept
    {
        return index + 1 == entries_ ? 0 : index + 1;
    }

    queue_memory memory_;
    std::unique_ptr<spec::completion_queue_entry[]> local_; ///< a message-based queue's slots
    std::byte* view_ = nullptr; ///< the queue's entries as the provider mapped them (map_view)
    /// The provider's mapping generation view_ was taken in; none yet (a provider's generation
    /// never reaches this value).
    std::uint64_t view_generation_ = std::numeric_limits<std::uint64_t>::max();
    std::uint32_t entries_;
    std::uint32_t head_ = 0;
    std::uint32_t tail_ = 0;
    std::uint16_t qid_;
    std::uint16_t interrupt_vector_;
    bool interrupts_enabled_;
    bool phase_ = true;
};

NVMEKIT_END_NAMESPACE
