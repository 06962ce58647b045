#pragma once
/// A submission queue as the controller sees it: head, tail and fetching of new entries
/// (Base 2.0 3.3.1).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <span>
#include <system_error>
#include <utility>

#include <nvmekit/config.hpp>
#include <nvmekit/contracts/dma.hpp>
#include <nvmekit/queues/queue_memory.hpp>
#include <nvmekit/spec/queue_entries.hpp>

NVMEKIT_BEGIN_NAMESPACE

/// A circular submission queue of `entries` slots. The host produces at the tail, the controller
/// consumes at the head. Empty when head == tail (Base 2.0 3.3.1.4).
///
/// Where the slots live depends on the transport. A memory-based queue (the PCIe function) is in
/// host memory: the host writes entries there and the tail through its doorbell, and fetch()
/// reads them by DMA. A message-based queue (fabrics, the in-memory loopback) is held by the
/// controller itself: the transport hands it each command as it arrives (push()), and fetch()
/// copies from there.
///
/// With a provider whose views are stable (StableMappingDmaProvider), a queue in one contiguous
/// range keeps a view of it, mapped once and again only when the provider's mapping generation
/// changes, and take_mapped() hands each entry to the caller where it lies, to be copied once; a
/// queue the provider does not map (a PRP list, a range it refuses) is read with fetch().
class sq_ring {
public:
    /// Size of a submission queue entry: the only one supported is 64 bytes (CC.IOSQES = 6).
    static constexpr std::uint32_t sqe_size = sizeof(spec::submission_queue_entry);

    /// Selects the message-based constructor.
    struct message_based_t {};
    static constexpr message_based_t message_based{};

    /// Preconditions (validated by the controller): 2 <= `entries` <= 65536 (Base 2.0 4.1.3) and
    /// `entry_size` == 64.
    sq_ring(std::uint16_t qid, std::uint16_t cqid, std::uint32_t entries, queue_memory memory,
            [[maybe_unused]] std::uint32_t entry_size = sqe_size)
        : memory_{std::move(memory)}, entries_{entries}, qid_{qid}, cqid_{cqid}
    {
        NVMEKIT_ASSERT(entries >= 2 && entries <= 65536, "sq_ring: queue size out of range");
        NVMEKIT_ASSERT(entry_size == sqe_size,
                       "sq_ring: only 64-byte submission queue entries are supported");
    }

    /// A message-based queue of `entries` slots held by the controller (2 <= `entries` <= 65536).
    sq_ring(std::uint16_t qid, std::uint16_t cqid, std::uint32_t entries, message_based_t)
        : memory_{queue_memory::contiguous(0)}
        , local_{std::make_unique<spec::submission_queue_entry[]>(entries)}
        , entries_{entries}
        , qid_{qid}
        , cqid_{cqid}
    {
        NVMEKIT_ASSERT(entries >= 2 && entries <= 65536, "sq_ring: queue size out of range");
    }

    /// True for a message-based queue (push() feeds it), false for one in host memory.
    [[nodiscard]] bool is_message_based() const noexcept { return local_ != nullptr; }

    /// A message-based queue takes one command at its tail. False, changing nothing, when the
    /// queue is full (entries - 1 commands waiting, Base 2.0 3.3.1.5) or is in host memory.
    [[nodiscard]] bool push(const spec::submission_queue_entry& entry) noexcept
    {
        if (local_ == nullptr || pending() == entries_ - 1U) {
            return false;
        }
        local_[tail_] = entry;
        tail_ = tail_ + 1U == entries_ ? 0 : tail_ + 1U;
        return true;
    }

    [[nodiscard]] std::uint16_t qid() const noexcept { return qid_; }
    [[nodiscard]] std::uint16_t cqid() const noexcept { return cqid_; }
    [[nodiscard]] std::uint32_t entries() const noexcept { return entries_; }
    /// The controller's SQ head: the next entry to fetch, and the SQHD of completions.
    [[nodiscard]] std::uint32_t head() const noexcept { return head_; }
    [[nodiscard]] std::uint32_t tail() const noexcept { return tail_; }
    [[nodiscard]] const queue_memory& memory() const noexcept { return memory_; }

    /// Takes the host's new tail from an SQ Tail Doorbell write. A value >= entries is an
    /// Invalid Doorbell Write Value (Base 2.0 5.2, Asynchronous Event Information - Error Status):
    /// returns false and changes nothing; the caller raises the asynchronous event.
    [[nodiscard]] bool set_tail(std::uint32_t new_tail) noexcept
    {
        if (new_tail >= entries_) {
            return false;
        }
        tail_ = new_tail;
        return true;
    }

    /// Entries submitted and not yet fetched.
    [[nodiscard]] std::uint32_t pending() const noexcept
    {
        return tail_ >= head_ ? tail_ - head_ : entries_ - head_ + tail_;
    }

    [[nodiscard]] bool empty() const noexcept { return head_ == tail_; }

    /// Fetches up to `out.size()` pending entries from the head into `out` and advances the head
    /// past them. Reads are split only where the layout requires it: at the end of the ring and,
    /// for a PRP-list queue, at memory page boundaries. On success `fetched` is the number of
    /// entries fetched; on a DMA error the error is returned, `fetched` is 0, the head is
    /// unchanged and the contents of `out` are unspecified.
    template <DmaProvider Dma>
    std::error_code fetch(Dma& dma, std::span<spec::submission_queue_entry> out, std::uint32_t& fetched)
    {
        fetched = 0;
        const auto count = static_cast<std::uint32_t>(std::min<std::size_t>(out.size(), pending()));
        if (local_ != nullptr) {
            take_local(out.first(count));
            fetched = count;
            return {};
        }
        std::uint32_t position = head_;
        std::uint32_t done = 0;
        while (done < count) {
            const auto piece = run_from(position, count - done);
            if (auto error =
                    dma.read(piece.address, std::as_writable_bytes(out.subspan(done, piece.entries)))) {
                return error;
            }
            done += piece.entries;
            position += piece.entries;
            if (position == entries_) {
                position = 0;
            }
        }
        head_ = position;
        fetched = count;
        return {};
    }

    /// Hands the `count` entries at the head (count <= pending()) to `take`, in order, each as the
    /// 64 bytes of the queue's view of host memory that hold it, then advances the head past them
    /// all. `take` copies what it keeps: the host may reuse the slots once the head has passed
    /// them. False, with nothing taken and the head unchanged, when the queue has no view: a
    /// message-based queue, a PRP-list queue, or a range the provider does not map whole; fetch()
    /// reads those.
    template <StableMappingDmaProvider Dma, typename Take>
    bool take_mapped(Dma& dma, std::uint32_t count, Take&& take)
    {
        NVMEKIT_ASSERT(count <= pending(), "sq_ring: taking entries not submitted");
        if (const std::uint64_t generation = dma.mapping_generation(); generation != view_generation_)
            [[unlikely]] {
            map_view(dma, generation);
        }
        if (view_ == nullptr) [[unlikely]] {
            return false;
        }
        // At most two runs: from the head to the end of the ring, then from its start.
        std::uint32_t position = head_;
        for (std::uint32_t left = count; left != 0;) {
            const std::uint32_t run = std::min(left, entries_ - position);
            const std::byte* entry = view_ + std::size_t{position} * sqe_size;
            for (const std::byte* const end = entry + std::size_t{run} * sqe_size; entry != end;
                 entry += sqe_size) {
                take(std::span<const std::byte, sqe_size>{entry, sqe_size});
            }
            left -= run;
            position = position + run == entries_ ? 0 : position + run;
        }
        head_ = position;
        return true;
    }

    /// Entries in host memory that one read can fetch: where they are and how many.
    struct run {
        std::uint64_t address;
        std::uint32_t entries;
    };

    /// The first run of up to `max` pending entries from the head, which stays where it is (for a
    /// read that completes later: consume() once the entries have arrived). Precondition: a
    /// queue in host memory with entries pending, `max` >= 1.
    [[nodiscard]] run next_run(std::uint32_t max) const noexcept
    {
        NVMEKIT_ASSERT(local_ == nullptr && !empty() && max >= 1, "sq_ring: next_run with nothing to fetch");
        return run_from(head_, std::min(max, pending()));
    }

    /// Advances the head past `count` entries fetched (next_run). Precondition: count <= pending().
    void consume(std::uint32_t count) noexcept
    {
        NVMEKIT_ASSERT(count <= pending(), "sq_ring: consuming entries not submitted");
        head_ = (head_ + count) % entries_;
    }

    /// Back to the state of a new queue: head = tail = 0.
    void reset() noexcept
    {
        head_ = 0;
        tail_ = 0;
    }

private:
    /// The run of up to `count` entries at `position`: it ends at the end of the ring and, for a
    /// PRP-list queue, at a memory page boundary.
    [[nodiscard]] run run_from(std::uint32_t position, std::uint32_t count) const noexcept
    {
        const std::size_t offset = std::size_t{position} * sqe_size;
        const std::size_t run_entries = memory_.contiguous_bytes_from(offset) / sqe_size;
        NVMEKIT_ASSERT(run_entries > 0, "sq_ring: a submission queue entry straddles a memory page");
        return run{memory_.address_of(offset),
                   static_cast<std::uint32_t>(std::min<std::size_t>(
                       {std::size_t{count}, std::size_t{entries_ - position}, run_entries}))};
    }

    /// Maps the whole queue for take_mapped() (no view for a message-based queue, one that is not
    /// one contiguous range, or one the provider does not map), valid while the provider's mapping
    /// generation is `generation`.
    template <typename Dma>
    [[gnu::noinline]] void map_view(Dma& dma, std::uint64_t generation)
    {
        view_generation_ = generation;
        view_ = local_ == nullptr ? memory_.map_whole(dma, std::size_t{entries_} * sqe_size) : nullptr;
    }

    void take_local(std::span<spec::submission_queue_entry> out) noexcept
    {
        const auto first = static_cast<std::uint32_t>(std::min<std::size_t>(out.size(), entries_ - head_));
        std::memcpy(out.data(), &local_[head_], std::size_t{first} * sqe_size);
        std::memcpy(out.data() + first, &local_[0], (out.size() - first) * sqe_size);
        head_ = static_cast<std::uint32_t>((head_ + out.size()) % entries_);
    }

    queue_memory memory_;
    std::unique_ptr<spec::submission_queue_entry[]> local_; ///< a message-based queue's slots
    const std::byte* view_ = nullptr; ///< the queue's entries as the provider mapped them (map_view)
    /// The provider's mapping generation view_ was taken in; none yet (a provider's generation
    /// never reaches this value).
    std::uint64_t view_generation_ = std::numeric_limits<std::uint64_t>::max();
    std::uint32_t entries_;
    std::uint32_t head_ = 0;
    std::uint32_t tail_ = 0;
    std::uint16_t qid_;
    std::uint16_t cqid_;
};

NVMEKIT_END_NAMESPACE
