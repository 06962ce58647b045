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
/// to the sizes in use. Single-threaded, like the target that owns it.

#include <cstddef>
#include <cstdint>
#include <cstring>
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
class command_buffers {
public:
    /// Handle of an acquired buffer.
    using buffer_id = std::uint32_t;

    /// A buffer of `size` bytes (zero-filled when it grows; otherwise holding old bytes, which the
    /// target overwrites before the controller reads them).
    [[nodiscard]] buffer_id acquire(std::size_t size)
    {
        buffer_id id = 0;
        if (free_.empty()) {
            id = static_cast<buffer_id>(slots_.size());
            slots_.emplace_back();
        } else {
            id = free_.back();
            free_.pop_back();
        }
        auto& slot = slots_[id];
        if (slot.storage.size() < size) {
            slot.storage.resize(size);
        }
        slot.size = size;
        slot.in_use = true;
        return id;
    }

    /// Gives buffer `id` back; its address stops resolving.
    void release(buffer_id id)
    {
        auto& slot = slots_[id];
        NVMEKIT_ASSERT(slot.in_use, "command_buffers::release: buffer not acquired");
        slot.in_use = false;
        slot.generation = static_cast<std::uint8_t>(slot.generation + 1);
        free_.push_back(id);
    }

    /// The host address of the first byte of buffer `id`.
    [[nodiscard]] std::uint64_t address(buffer_id id) const noexcept
    {
        // Slot 0 would make address 0 valid; slots are numbered from 1 in addresses.
        return (std::uint64_t{id + 1U} << slot_shift) |
               (std::uint64_t{slots_[id].generation} << generation_shift);
    }

    /// The bytes of buffer `id`.
    [[nodiscard]] std::span<std::byte> bytes(buffer_id id) noexcept
    {
        return std::span{slots_[id].storage}.first(slots_[id].size);
    }

    /// Buffers acquired and not released.
    [[nodiscard]] std::size_t in_use() const noexcept { return slots_.size() - free_.size(); }

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
    static constexpr unsigned slot_shift = 40;
    static constexpr unsigned generation_shift = 32;
    static constexpr std::uint64_t offset_mask = (std::uint64_t{1} << generation_shift) - 1;

    struct slot {
        std::vector<std::byte> storage;
        std::size_t size = 0;
        std::uint8_t generation = 0;
        bool in_use = false;
    };

    /// `length` bytes at `address` inside one acquired buffer, or an empty span.
    [[nodiscard]] std::span<std::byte> resolve(std::uint64_t address, std::size_t length) noexcept
    {
        const std::uint64_t number = address >> slot_shift;
        if (number == 0 || number > slots_.size()) {
            return {};
        }
        auto& slot = slots_[number - 1];
        const auto generation = static_cast<std::uint8_t>((address >> generation_shift) & 0xffU);
        const std::uint64_t offset = address & offset_mask;
        if (!slot.in_use || generation != slot.generation || offset > slot.size ||
            length > slot.size - offset) {
            return {};
        }
        return std::span{slot.storage}.subspan(static_cast<std::size_t>(offset), length);
    }

    std::vector<slot> slots_;
    std::vector<buffer_id> free_;
};
static_assert(MappingDmaProvider<command_buffers>);

/// The InterruptProvider of a fabrics controller: message-based queues signal nothing.
struct no_interrupts {
    void raise_msix(std::uint16_t /*vector*/, msix_message /*message*/) noexcept {}
};
static_assert(InterruptProvider<no_interrupts>);

} // namespace transport::tcp
NVMEKIT_END_NAMESPACE
