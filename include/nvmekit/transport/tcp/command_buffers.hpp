#pragma once
/// The data buffers of the commands an NVMe/TCP association has in flight, and the DmaProvider
/// through which its controller reaches them. The target receives a command's data (in-capsule
/// or H2CData) into a buffer of its own, rewrites the command's SGL to one Data Block at that
/// buffer's address, and sends C2HData from it once the controller has completed a read: the
/// controller never sees the network, only these buffers as "host memory".
///
///     command_buffers buffers;
///     const auto id = buffers.acquire(4096);       // a buffer of 4096 bytes
///     sqe.dptr = spec::to_data_pointer(spec::sgl_descriptor::data_block(buffers.address(id), 4096));
///     ...                                          // the controller reads or writes it
///     buffers.release(id);
///
/// Addresses name a buffer and a generation: an access to a released buffer (a command that
/// outlived its queue) fails with an error code instead of touching the buffer's next user.
/// Storage is kept for reuse, so steady-state I/O allocates nothing once every buffer has grown
/// to the sizes in use.
///
/// Each buffer keeps how far the controller reached in it (transferred()): a command whose SGL
/// is longer than its transfer (SGLS bit 18) uses a prefix of its buffer, and only that prefix
/// holds its data; the rest holds what an earlier command left.
///
/// The storage they hold may be bounded by a buffer_budget (the target gives one to each
/// association, drawing on one of its own): try_acquire() takes a buffer only when its storage
/// fits, giving back the storage of the partition's free buffers first if that makes it fit,
/// and trim() gives that storage back when a connection closes.
///
///     buffer_budget target_wide{64 << 20};
///     buffer_budget association{16 << 20, &target_wide};
///     command_buffers buffers{&association};
///     if (const auto id = buffers.try_acquire(128 * 1024)) { ... } else { /* wait */ }

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <system_error>
#include <vector>

#include <nvmekit/config.hpp>
#include <nvmekit/contracts/dma.hpp>
#include <nvmekit/contracts/interrupts.hpp>
#include <nvmekit/error.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace transport::tcp {

/// A bound on bytes of buffer storage, taken and given back from any thread (atomically): the
/// target has one, and each association one that draws on it (`parent`), so a buffer's bytes
/// count against both.
class buffer_budget {
public:
    static constexpr std::size_t unlimited = std::numeric_limits<std::size_t>::max();

    explicit buffer_budget(std::size_t limit = unlimited, buffer_budget* parent = nullptr) noexcept
        : limit_{limit}, parent_{parent}
    {}
    buffer_budget(const buffer_budget&) = delete;
    buffer_budget& operator=(const buffer_budget&) = delete;

    /// Takes `bytes` here and from the parent when they fit under each limit, or when that budget
    /// holds nothing yet (so a single buffer larger than a limit is not refused forever). False,
    /// taking nothing, otherwise: the budget that refused counts a shortage.
    [[nodiscard]] bool try_take(std::size_t bytes) noexcept
    {
        if (bytes == 0) {
            return true;
        }
        std::size_t used = used_.load(std::memory_order_relaxed);
        do {
            if (used != 0 && (used > limit_ || bytes > limit_ - used)) {
                shortages_.fetch_add(1, std::memory_order_relaxed);
                return false;
            }
        } while (!used_.compare_exchange_weak(used, used + bytes, std::memory_order_relaxed));
        if (parent_ != nullptr && !parent_->try_take(bytes)) {
            used_.fetch_sub(bytes, std::memory_order_relaxed);
            return false;
        }
        note_peak(used + bytes);
        return true;
    }

    /// Takes `bytes` here and from the parent whatever the limits.
    void force_take(std::size_t bytes) noexcept
    {
        note_peak(used_.fetch_add(bytes, std::memory_order_relaxed) + bytes);
        if (parent_ != nullptr) {
            parent_->force_take(bytes);
        }
    }

    /// Gives back `bytes` taken before, here and to the parent.
    void give_back(std::size_t bytes) noexcept
    {
        used_.fetch_sub(bytes, std::memory_order_relaxed);
        if (parent_ != nullptr) {
            parent_->give_back(bytes);
        }
    }

    [[nodiscard]] std::size_t used() const noexcept { return used_.load(std::memory_order_relaxed); }
    /// The most bytes held at once.
    [[nodiscard]] std::size_t peak() const noexcept { return peak_.load(std::memory_order_relaxed); }
    [[nodiscard]] std::size_t limit() const noexcept { return limit_; }
    /// Refusals here and in the parents: a holder of cached storage that sees the count change
    /// gives its cache back (command_buffers::trim_if_short).
    [[nodiscard]] std::uint64_t shortages() const noexcept
    {
        return shortages_.load(std::memory_order_relaxed) + (parent_ != nullptr ? parent_->shortages() : 0);
    }

private:
    void note_peak(std::size_t used) noexcept
    {
        std::size_t peak = peak_.load(std::memory_order_relaxed);
        while (used > peak && !peak_.compare_exchange_weak(peak, used, std::memory_order_relaxed)) {
        }
    }

    std::size_t limit_;
    buffer_budget* parent_;
    std::atomic<std::size_t> used_{0};
    std::atomic<std::size_t> peak_{0};
    std::atomic<std::uint64_t> shortages_{0};
};

/// Buffers addressed as host memory; models MappingDmaProvider.
///
/// Buffers come from partitions (0 to 255): a partition is used by one thread at a time, so the
/// target's connection groups each acquire and release in the partitions of their own
/// connections, and the controller reaches a command's buffer from the thread that runs the
/// command, without a lock. Partitions are created by prepare() (partition 0 exists from the
/// start), before the thread that uses one learns of it.
class command_buffers {
public:
    /// Handle of an acquired buffer: its partition and its slot there.
    using buffer_id = std::uint32_t;
    static constexpr std::size_t partition_count = 256;

    /// Buffers whose storage counts against `budget` (none: unbounded), which outlives them.
    explicit command_buffers(buffer_budget* budget = nullptr) : budget_{budget} { prepare(0); }
    command_buffers(const command_buffers&) = delete;
    command_buffers& operator=(const command_buffers&) = delete;
    ~command_buffers()
    {
        if (budget_ != nullptr) {
            for (const auto& part : partitions_) {
                if (part) {
                    budget_->give_back(part->storage);
                }
            }
        }
    }

    /// Creates partition `number` (nothing when it exists).
    void prepare(std::uint8_t number)
    {
        if (!partitions_[number]) {
            partitions_[number] = std::make_unique<partition>();
        }
    }

    /// A buffer of `size` bytes from partition `number` (prepared), zero-filled when it grows;
    /// otherwise holding old bytes, which the target overwrites before the controller reads them.
    /// Its storage counts against the budget whatever the limit.
    [[nodiscard]] buffer_id acquire(std::size_t size, std::uint8_t number = 0)
    {
        const auto id = take(size, number, true);
        NVMEKIT_ASSERT(id.has_value(), "command_buffers::acquire: forced acquisition failed");
        return *id;
    }

    /// A buffer as acquire() gives, when the storage it needs fits the budget (after the storage
    /// of the partition's free buffers is given back, if that makes it fit); nothing otherwise.
    [[nodiscard]] std::optional<buffer_id> try_acquire(std::size_t size, std::uint8_t number = 0)
    {
        if (auto id = take(size, number, false)) {
            return id;
        }
        if (trim(number) == 0) {
            return std::nullopt;
        }
        return take(size, number, false);
    }

    /// Gives back the storage of partition `number`'s free buffers (their slots stay, so a stale
    /// address still resolves to nothing); returns how many bytes. Call from the partition's thread.
    std::size_t trim(std::uint8_t number = 0)
    {
        auto& part = *partitions_[number];
        std::size_t freed = 0;
        for (const std::uint32_t index : part.free) {
            auto& slot = part.slots[index];
            freed += slot.storage.size();
            std::vector<std::byte>{}.swap(slot.storage);
        }
        give_back(part, freed);
        return freed;
    }

    /// Trims partition `number` when the budget (or its parent) has refused storage since this
    /// partition last looked: storage cached here may be what another partition waits for.
    std::size_t trim_if_short(std::uint8_t number = 0)
    {
        if (budget_ == nullptr) {
            return 0;
        }
        auto& part = *partitions_[number];
        const std::uint64_t shortages = budget_->shortages();
        if (shortages == part.shortages_seen) {
            return 0;
        }
        part.shortages_seen = shortages;
        return trim(number);
    }

    /// Bytes of storage partition `number` holds, its buffers' in use and free (call from the
    /// partition's thread).
    [[nodiscard]] std::size_t storage_bytes(std::uint8_t number) const noexcept
    {
        return partitions_[number] ? partitions_[number]->storage : 0;
    }

    /// Gives buffer `id` back; its address stops resolving.
    void release(buffer_id id)
    {
        auto& part = partition_of(id);
        auto& slot = part.slots[id & index_mask];
        NVMEKIT_ASSERT(slot.in_use, "command_buffers::release: buffer not acquired");
        slot.in_use = false;
        slot.generation = static_cast<std::uint8_t>(slot.generation + 1);
        part.free.push_back(id & index_mask);
    }

    /// The host address of the first byte of buffer `id`.
    [[nodiscard]] std::uint64_t address(buffer_id id) const noexcept
    {
        // Slot 0 would make address 0 valid; slots are numbered from 1 in addresses.
        const auto& part = partition_of(id);
        return (std::uint64_t{id >> partition_shift} << address_partition_shift) |
               (std::uint64_t{(id & index_mask) + 1U} << slot_shift) |
               (std::uint64_t{part.slots[id & index_mask].generation} << generation_shift);
    }

    /// The bytes of buffer `id`.
    [[nodiscard]] std::span<std::byte> bytes(buffer_id id) noexcept
    {
        auto& slot = partition_of(id).slots[id & index_mask];
        return std::span{slot.storage}.first(slot.size);
    }

    /// The end of the furthest byte of buffer `id` read, written or mapped through its address
    /// (the DmaProvider operations) or named by note_transferred() since it was acquired; bytes()
    /// reaches the buffer without moving it.
    [[nodiscard]] std::size_t transferred(buffer_id id) const noexcept
    {
        return partition_of(id).slots[id & index_mask].transferred;
    }

    /// Records that the first `bytes` bytes of buffer `id` (at most its size) hold data written
    /// through bytes(), as a transfer through its address would.
    void note_transferred(buffer_id id, std::size_t bytes) noexcept
    {
        auto& slot = partition_of(id).slots[id & index_mask];
        NVMEKIT_ASSERT(bytes <= slot.size, "command_buffers::note_transferred: beyond the buffer");
        slot.transferred = std::max(slot.transferred, bytes);
    }

    /// Buffers acquired and not released (call while no other thread uses a partition).
    [[nodiscard]] std::size_t in_use() const noexcept
    {
        std::size_t used = 0;
        for (const auto& part : partitions_) {
            if (part) {
                used += part->slots.size() - part->free.size();
            }
        }
        return used;
    }

    // ---- DmaProvider --------------------------------------------------------------------------

    [[nodiscard]] std::error_code read(std::uint64_t address, std::span<std::byte> destination) noexcept
    {
        const auto source = resolve(address, destination.size());
        if (source.size() != destination.size()) {
            return make_error_code(errc::dma_unmapped);
        }
        if (!destination.empty()) {
            std::memcpy(destination.data(), source.data(), destination.size());
        }
        return {};
    }

    [[nodiscard]] std::error_code write(std::uint64_t address, std::span<const std::byte> source) noexcept
    {
        const auto destination = resolve(address, source.size());
        if (destination.size() != source.size()) {
            return make_error_code(errc::dma_unmapped);
        }
        if (!source.empty()) {
            std::memcpy(destination.data(), source.data(), source.size());
        }
        return {};
    }

    [[nodiscard]] std::span<std::byte> map(std::uint64_t address, std::size_t length) noexcept
    {
        const auto range = resolve(address, length);
        return range.size() == length ? range : std::span<std::byte>{};
    }

private:
    static constexpr unsigned partition_shift = 24; // in a buffer_id
    static constexpr std::uint32_t index_mask = (1U << partition_shift) - 1;
    static constexpr unsigned address_partition_shift = 56;
    static constexpr unsigned slot_shift = 40;
    static constexpr unsigned generation_shift = 32;
    static constexpr std::uint64_t max_slots =
        (std::uint64_t{1} << (address_partition_shift - slot_shift)) - 1;
    static constexpr std::uint64_t offset_mask = (std::uint64_t{1} << generation_shift) - 1;

    struct slot {
        std::vector<std::byte> storage;
        std::size_t size = 0;
        std::size_t transferred = 0; ///< since acquired: transferred()
        std::uint8_t generation = 0;
        bool in_use = false;
    };
    struct partition {
        std::vector<slot> slots;
        std::vector<std::uint32_t> free;
        /// Bytes of storage of its slots.
        std::size_t storage = 0;
        /// buffer_budget::shortages() when it was last trimmed for them.
        std::uint64_t shortages_seen = 0;
    };

    /// A buffer of `size` bytes from partition `number`: a free one whose storage holds it, else
    /// a free one (or a new one) given storage of `size` bytes when the budget takes them, or
    /// whatever the budget when `forced`.
    [[nodiscard]] std::optional<buffer_id> take(std::size_t size, std::uint8_t number, bool forced)
    {
        auto& part = *partitions_[number];
        // The most recently freed first (its storage is likely warm and of the size in use).
        auto fits = std::find_if(part.free.rbegin(), part.free.rend(), [&](std::uint32_t index) {
            return part.slots[index].storage.size() >= size;
        });
        std::uint32_t index = 0;
        if (fits != part.free.rend()) {
            index = *fits;
            part.free.erase(std::next(fits).base());
        } else {
            // Storage of exactly `size` bytes replaces the smaller storage of the last free one.
            const std::size_t replaced = part.free.empty() ? 0 : part.slots[part.free.back()].storage.size();
            const std::size_t grown = size - replaced;
            if (budget_ != nullptr) {
                if (forced) {
                    budget_->force_take(grown);
                } else if (!budget_->try_take(grown)) {
                    return std::nullopt;
                }
            }
            part.storage += grown;
            if (part.free.empty()) {
                index = static_cast<std::uint32_t>(part.slots.size());
                NVMEKIT_ASSERT(index < max_slots, "command_buffers::acquire: partition full");
                part.slots.emplace_back();
            } else {
                index = part.free.back();
                part.free.pop_back();
            }
            if (size != 0) {
                std::vector<std::byte>(size).swap(part.slots[index].storage);
            }
        }
        auto& slot = part.slots[index];
        slot.size = size;
        slot.transferred = 0;
        slot.in_use = true;
        return (buffer_id{number} << partition_shift) | index;
    }

    void give_back(partition& part, std::size_t bytes) noexcept
    {
        part.storage -= bytes;
        if (budget_ != nullptr && bytes != 0) {
            budget_->give_back(bytes);
        }
    }

    [[nodiscard]] partition& partition_of(buffer_id id) noexcept
    {
        return *partitions_[id >> partition_shift];
    }
    [[nodiscard]] const partition& partition_of(buffer_id id) const noexcept
    {
        return *partitions_[id >> partition_shift];
    }

    /// `length` bytes at `address` inside one acquired buffer, or an empty span; the buffer's
    /// transferred() covers them.
    [[nodiscard]] std::span<std::byte> resolve(std::uint64_t address, std::size_t length) noexcept
    {
        const auto& part = partitions_[address >> address_partition_shift];
        const std::uint64_t number = (address >> slot_shift) & max_slots;
        if (!part || number == 0 || number > part->slots.size()) {
            return {};
        }
        auto& slot = part->slots[number - 1];
        const auto generation = static_cast<std::uint8_t>((address >> generation_shift) & 0xffU);
        const std::uint64_t offset = address & offset_mask;
        if (!slot.in_use || generation != slot.generation || offset > slot.size ||
            length > slot.size - offset) {
            return {};
        }
        if (length != 0) {
            slot.transferred = std::max(slot.transferred, static_cast<std::size_t>(offset) + length);
        }
        return std::span{slot.storage}.subspan(static_cast<std::size_t>(offset), length);
    }

    buffer_budget* budget_ = nullptr;
    std::array<std::unique_ptr<partition>, partition_count> partitions_{};
};
static_assert(MappingDmaProvider<command_buffers>);

/// The InterruptProvider of a fabrics controller: message-based queues signal nothing.
struct no_interrupts {
    void raise_msix(std::uint16_t /*vector*/, msix_message /*message*/) noexcept {}
};
static_assert(InterruptProvider<no_interrupts>);

} // namespace transport::tcp
NVMEKIT_END_NAMESPACE
