#pragma once
/// The vfio-user server's limits (protocol_limits): what the server advertises in its VERSION
/// reply (encode.hpp) and enforces on every client message (decode.hpp), and the largest message
/// they let a client send.

#include <algorithm>
#include <cstdint>

#include <nvmekit/config.hpp>
#include <nvmekit/transport/vfio_user/protocol/wire.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace transport::vfio_user {

/// Server-side limits: what the server advertises in its VERSION reply and enforces.
struct protocol_limits {
    /// Largest `count` of a REGION_READ/REGION_WRITE the server accepts (max_data_xfer_size), and
    /// the most a DMA_READ/DMA_WRITE of the server asks for at once (it also keeps to the client's
    /// own max_data_xfer_size, the smaller of the two).
    std::uint32_t max_data_xfer_size = 1U << 20;
    /// Most file descriptors the server receives in one message (max_msg_fds). QEMU refuses
    /// values above 16.
    std::uint32_t max_msg_fds = 16;
    /// Most DMA mappings valid at once (max_dma_maps). QEMU refuses values above 65535.
    std::uint32_t max_dma_maps = 65535;
    /// DMA page size (pgsizes): DMA_MAP/UNMAP addresses, sizes and offsets are multiples of it.
    /// A power of two, at least 4096.
    std::uint64_t dma_page_size = 4096;
    /// Longest JSON capabilities text accepted in a VERSION request, NUL included.
    std::uint32_t max_version_data = 4096;

    /// Largest message parse_header accepts: a REGION_WRITE (or the reply to a DMA_READ) of
    /// max_data_xfer_size bytes or a VERSION with max_version_data bytes of JSON, whichever is
    /// larger. Both fixed parts are 16 bytes.
    [[nodiscard]] constexpr std::uint64_t max_message_size() const noexcept
    {
        static_assert(sizeof(dma_access) == sizeof(region_access));
        return std::max<std::uint64_t>(header_size + sizeof(region_access) + max_data_xfer_size,
                                       header_size + sizeof(version_payload) + max_version_data);
    }
};

} // namespace transport::vfio_user
NVMEKIT_END_NAMESPACE
