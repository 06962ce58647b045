#pragma once
/// Shadow doorbells and EventIdx (Doorbell Buffer Config, Base 2.0 5.8), a part of the PCIe
/// function: the host keeps a copy of every doorbell value in a buffer in its memory, which the
/// controller reads at every poll, and the controller writes per queue the EventIdx past which the
/// host writes the doorbell register again. Both buffers mirror the doorbell registers' layout:
/// the SQ y tail slot is at (2y) x stride, the CQ y head slot at (2y + 1) x stride, with the
/// doorbell stride of CAP.DSTRD. Off until Doorbell Buffer Config, and off again after a
/// Controller Reset. Reads and writes go through the controller's DMA provider; a failed one is
/// an error code for the caller to count.

#include <cstdint>
#include <system_error>

#include <nvmekit/config.hpp>
#include <nvmekit/contracts/dma.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace pci {

class shadow_doorbells {
public:
    /// True once Doorbell Buffer Config gave the buffers.
    [[nodiscard]] bool enabled() const noexcept { return enabled_; }

    /// Doorbell Buffer Config: the shadow doorbell buffer at `shadow_address`, the EventIdx buffer
    /// at `event_index_address` (the command has checked their alignment), slots `stride_bytes`
    /// apart.
    void configure(std::uint64_t shadow_address, std::uint64_t event_index_address,
                   std::uint32_t stride_bytes) noexcept
    {
        shadow_ = shadow_address;
        event_index_ = event_index_address;
        stride_ = stride_bytes;
        enabled_ = true;
    }

    /// A Controller Reset: the buffers are forgotten.
    void disable() noexcept { *this = shadow_doorbells{}; }

    /// Offset of a queue's slot in either buffer.
    [[nodiscard]] std::uint64_t slot_offset(std::uint16_t qid, bool completion_queue) const noexcept
    {
        return (2U * std::uint64_t{qid} + (completion_queue ? 1U : 0U)) * stride_;
    }

    /// The value the host last stored in a queue's shadow doorbell slot. Only while enabled().
    template <DmaProvider Dma>
    [[nodiscard]] std::error_code read(Dma& dma, std::uint16_t qid, bool completion_queue,
                                       std::uint32_t& value) const
    {
        return dma_read_object(dma, shadow_ + slot_offset(qid, completion_queue), value);
    }

    /// Stores a queue's EventIdx. Only while enabled().
    template <DmaProvider Dma>
    [[nodiscard]] std::error_code write_event_index(Dma& dma, std::uint16_t qid, bool completion_queue,
                                                    std::uint32_t value) const
    {
        return dma_write_object(dma, event_index_ + slot_offset(qid, completion_queue), value);
    }

private:
    std::uint64_t shadow_ = 0;
    std::uint64_t event_index_ = 0;
    std::uint32_t stride_ = 4;
    bool enabled_ = false;
};

} // namespace pci
NVMEKIT_END_NAMESPACE
