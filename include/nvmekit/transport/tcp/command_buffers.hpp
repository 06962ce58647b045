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

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <system_error>
#include <vector>

#include <nvmekit/config.hpp>
#include <nvmekit/dma.hpp>
#include <nvmekit/error.hpp>
#include <nvmekit/interrupts.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace transport::tcp {

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

    command_buffers() { prepare(0); }

    /// Creates partition `number` (nothing when it exists).
    void prepare(std::uint8_t number)
    {
        if (!partitions_[number]) {
            partitions_[number] = std::make_unique<partition>();
        }
    }

    /// A buffer of `size` bytes from partition `number` (prepared), zero-filled when it grows;
    /// otherwise holding old bytes, which the target overwrites before the controller reads them.
    [[nodiscard]] buffer_id acquire(std::size_t size, std::uint8_t number = 0)
    {
        auto& part = *partitions_[number];
        std::uint32_t index = 0;
        if (part.free.empty()) {
            index = static_cast<std::uint32_t>(part.slots.size());
            NVMEKIT_ASSERT(index < max_slots, "command_buffers::acquire: partition full");
            part.slots.emplace_back();
        } else {
            index = part.free.back();
            part.free.pop_back();
        }
        auto& slot = part.slots[index];
        if (slot.storage.size() < size) {
            slot.storage.resize(size);
        }
        slot.size = size;
        slot.in_use = true;
        return (buffer_id{number} << partition_shift) | index;
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
        std::uint8_t generation = 0;
        bool in_use = false;
    };
    struct partition {
        std::vector<slot> slots;
        std::vector<std::uint32_t> free;
    };

    [[nodiscard]] partition& partition_of(buffer_id id) noexcept
    {
        return *partitions_[id >> partition_shift];
    }
    [[nodiscard]] const partition& partition_of(buffer_id id) const noexcept
    {
        return *partitions_[id >> partition_shift];
    }

    /// `length` bytes at `address` inside one acquired buffer, or an empty span.
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
        return std::span{slot.storage}.subspan(static_cast<std::size_t>(offset), length);
    }

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
