#pragma once
/// The vfio-user wire format: the protocol version, the command IDs and their names, the 16-byte
/// message header and its flags, the fixed payload structures of the commands with their flag
/// words, the PCI region and interrupt indexes and the region capability IDs, and the errno value
/// an error reply carries. Layouts only, each pinned by static_asserts; nothing here reads what a
/// client sent (decode.hpp does) or writes a reply (encode.hpp does).
///
/// Section names cite QEMU's docs/interop/vfio-user.rst ("vfio-user: Header"); the payload
/// structures that the protocol takes from <linux/vfio.h> cite their uapi struct names. All data
/// is in host byte order, which nvmekit requires to be little-endian.

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <system_error>

#include <nvmekit/config.hpp>
#include <nvmekit/spec/bits.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace transport::vfio_user {

/// Protocol version this server speaks; QEMU's client proposes 0.0 ("vfio-user: VFIO_USER_VERSION").
inline constexpr std::uint16_t protocol_major = 0;
inline constexpr std::uint16_t protocol_minor = 0;

/// Message command IDs ("vfio-user: Commands").
enum class command : std::uint16_t {
    version = 1,
    dma_map = 2,
    dma_unmap = 3,
    device_get_info = 4,
    device_get_region_info = 5,
    device_get_region_io_fds = 6,
    device_get_irq_info = 7,
    device_set_irqs = 8,
    region_read = 9,
    region_write = 10,
    dma_read = 11,
    dma_write = 12,
    device_reset = 13,
    dirty_pages = 14, ///< withdrawn from the specification; still numbered by clients
    region_write_multi = 15,
    device_feature = 16,
    mig_data_read = 17,
    mig_data_write = 18,
};

/// The command's name as the specification writes it ("VFIO_USER_DMA_MAP"), or empty if unknown.
[[nodiscard]] constexpr std::string_view name(command value) noexcept
{
    using enum command;
    switch (value) {
    case version: return "VFIO_USER_VERSION";
    case dma_map: return "VFIO_USER_DMA_MAP";
    case dma_unmap: return "VFIO_USER_DMA_UNMAP";
    case device_get_info: return "VFIO_USER_DEVICE_GET_INFO";
    case device_get_region_info: return "VFIO_USER_DEVICE_GET_REGION_INFO";
    case device_get_region_io_fds: return "VFIO_USER_DEVICE_GET_REGION_IO_FDS";
    case device_get_irq_info: return "VFIO_USER_DEVICE_GET_IRQ_INFO";
    case device_set_irqs: return "VFIO_USER_DEVICE_SET_IRQS";
    case region_read: return "VFIO_USER_REGION_READ";
    case region_write: return "VFIO_USER_REGION_WRITE";
    case dma_read: return "VFIO_USER_DMA_READ";
    case dma_write: return "VFIO_USER_DMA_WRITE";
    case device_reset: return "VFIO_USER_DEVICE_RESET";
    case dirty_pages: return "VFIO_USER_DIRTY_PAGES";
    case region_write_multi: return "VFIO_USER_REGION_WRITE_MULTI";
    case device_feature: return "VFIO_USER_DEVICE_FEATURE";
    case mig_data_read: return "VFIO_USER_MIG_DATA_READ";
    case mig_data_write: return "VFIO_USER_MIG_DATA_WRITE";
    }
    return {};
}

/// Message type, flags bits 3:0 ("vfio-user: Header").
enum class message_type : std::uint8_t { command = 0x0, reply = 0x1 };

/// The header's Flags word ("vfio-user: Header", offset 8).
struct message_flags : spec::word<message_flags, std::uint32_t> {
    using word::word;
    static constexpr field<0, 4, message_type> type{}; // Type: bits 3:0
    static constexpr field<4, 1, bool> no_reply{};     // No_reply: bit 4
    static constexpr field<5, 1, bool> error{};        // Error: bit 5
};
static_assert(sizeof(message_flags) == 4);
static_assert(spec::is_wire_type_v<message_flags>);

/// The 16-byte header in front of every command and reply ("vfio-user: Header").
struct message_header {
    std::uint16_t message_id;   // bytes 01:00, echoed in the reply
    command command_code;       // bytes 03:02
    std::uint32_t message_size; // bytes 07:04, header included
    message_flags flags;        // bytes 11:08
    std::uint32_t error_number; // bytes 15:12, errno in an error reply; reserved in a command
};
static_assert(sizeof(message_header) == 16);
static_assert(offsetof(message_header, message_id) == 0);
static_assert(offsetof(message_header, command_code) == 2);
static_assert(offsetof(message_header, message_size) == 4);
static_assert(offsetof(message_header, flags) == 8);
static_assert(offsetof(message_header, error_number) == 12);
static_assert(spec::is_wire_type_v<message_header>);

inline constexpr std::size_t header_size = sizeof(message_header);

/// VFIO_USER_VERSION payload before the optional JSON capabilities ("vfio-user: VFIO_USER_VERSION").
struct version_payload {
    std::uint16_t major; // bytes 01:00
    std::uint16_t minor; // bytes 03:02
};
static_assert(sizeof(version_payload) == 4);
static_assert(offsetof(version_payload, minor) == 2);
static_assert(spec::is_wire_type_v<version_payload>);

/// DMA_MAP flags (vfio_iommu_type1_dma_map.flags).
struct dma_map_flags : spec::word<dma_map_flags, std::uint32_t> {
    using word::word;
    static constexpr field<0, 1, bool> read{};  // bit 0
    static constexpr field<1, 1, bool> write{}; // bit 1
    static constexpr field<2, 1, bool> vaddr{}; // bit 2, Linux only: rejected
    static constexpr std::uint32_t defined_mask = 0x7;
};
static_assert(sizeof(dma_map_flags) == 4);

/// VFIO_USER_DMA_MAP request ("vfio-user: VFIO_USER_DMA_MAP"). The file descriptor, when the
/// region is mappable, arrives as SCM_RIGHTS data.
struct dma_map {
    std::uint32_t argsz;   // bytes 03:00, size of this structure
    dma_map_flags flags;   // bytes 07:04
    std::uint64_t offset;  // bytes 15:08, file offset of the region in the descriptor
    std::uint64_t address; // bytes 23:16, base DMA address
    std::uint64_t size;    // bytes 31:24
};
static_assert(sizeof(dma_map) == 32);
static_assert(offsetof(dma_map, flags) == 4);
static_assert(offsetof(dma_map, offset) == 8);
static_assert(offsetof(dma_map, address) == 16);
static_assert(offsetof(dma_map, size) == 24);
static_assert(spec::is_wire_type_v<dma_map>);

/// DMA_UNMAP flags (vfio_iommu_type1_dma_unmap.flags).
struct dma_unmap_flags : spec::word<dma_unmap_flags, std::uint32_t> {
    using word::word;
    static constexpr field<0, 1, bool> get_dirty_bitmap{}; // bit 0: rejected with ENOTSUP
    static constexpr field<1, 1, bool> all{};              // bit 1: unmap everything
    static constexpr field<2, 1, bool> vaddr{};            // bit 2, Linux only: rejected
    static constexpr std::uint32_t defined_mask = 0x7;
};
static_assert(sizeof(dma_unmap_flags) == 4);

/// VFIO_USER_DMA_UNMAP request, and the reply payload that echoes it ("vfio-user: VFIO_USER_DMA_UNMAP").
struct dma_unmap {
    std::uint32_t argsz;   // bytes 03:00, largest reply payload the client accepts
    dma_unmap_flags flags; // bytes 07:04
    std::uint64_t address; // bytes 15:08
    std::uint64_t size;    // bytes 23:16
};
static_assert(sizeof(dma_unmap) == 24);
static_assert(offsetof(dma_unmap, flags) == 4);
static_assert(offsetof(dma_unmap, address) == 8);
static_assert(offsetof(dma_unmap, size) == 16);
static_assert(spec::is_wire_type_v<dma_unmap>);

/// Device flags (vfio_device_info.flags).
struct device_info_flags : spec::word<device_info_flags, std::uint32_t> {
    using word::word;
    static constexpr field<0, 1, bool> reset{}; // VFIO_DEVICE_FLAGS_RESET: bit 0
    static constexpr field<1, 1, bool> pci{};   // VFIO_DEVICE_FLAGS_PCI: bit 1
};
static_assert(sizeof(device_info_flags) == 4);

/// VFIO_USER_DEVICE_GET_INFO request and reply (vfio_device_info, first 16 bytes).
struct device_info {
    std::uint32_t argsz;       // bytes 03:00
    device_info_flags flags;   // bytes 07:04
    std::uint32_t num_regions; // bytes 11:08
    std::uint32_t num_irqs;    // bytes 15:12
};
static_assert(sizeof(device_info) == 16);
static_assert(offsetof(device_info, flags) == 4);
static_assert(offsetof(device_info, num_regions) == 8);
static_assert(offsetof(device_info, num_irqs) == 12);
static_assert(spec::is_wire_type_v<device_info>);

/// VFIO PCI region indexes (VFIO_PCI_*_REGION_INDEX).
enum class region_index : std::uint32_t {
    bar0 = 0,
    bar1 = 1,
    bar2 = 2,
    bar3 = 3,
    bar4 = 4,
    bar5 = 5,
    rom = 6,
    config = 7,
    vga = 8,
};
/// VFIO_PCI_NUM_REGIONS.
inline constexpr std::uint32_t pci_num_regions = 9;

/// VFIO PCI interrupt indexes (VFIO_PCI_*_IRQ_INDEX).
enum class irq_index : std::uint32_t { intx = 0, msi = 1, msix = 2, err = 3, req = 4 };
/// VFIO_PCI_NUM_IRQS.
inline constexpr std::uint32_t pci_num_irqs = 5;

/// Region flags (vfio_region_info.flags).
struct region_info_flags : spec::word<region_info_flags, std::uint32_t> {
    using word::word;
    static constexpr field<0, 1, bool> read{};  // VFIO_REGION_INFO_FLAG_READ: bit 0
    static constexpr field<1, 1, bool> write{}; // VFIO_REGION_INFO_FLAG_WRITE: bit 1
    static constexpr field<2, 1, bool> mmap{};  // VFIO_REGION_INFO_FLAG_MMAP: bit 2
    static constexpr field<3, 1, bool> caps{};  // VFIO_REGION_INFO_FLAG_CAPS: bit 3
};
static_assert(sizeof(region_info_flags) == 4);

/// VFIO_USER_DEVICE_GET_REGION_INFO request and reply (vfio_region_info).
struct region_info {
    std::uint32_t argsz;      // bytes 03:00
    region_info_flags flags;  // bytes 07:04
    std::uint32_t index;      // bytes 11:08
    std::uint32_t cap_offset; // bytes 15:12, from the start of this structure
    std::uint64_t size;       // bytes 23:16
    std::uint64_t offset;     // bytes 31:24, mmap() offset of the region's descriptor
};
static_assert(sizeof(region_info) == 32);
static_assert(offsetof(region_info, flags) == 4);
static_assert(offsetof(region_info, index) == 8);
static_assert(offsetof(region_info, cap_offset) == 12);
static_assert(offsetof(region_info, size) == 16);
static_assert(offsetof(region_info, offset) == 24);
static_assert(spec::is_wire_type_v<region_info>);

/// Region capability IDs (VFIO_REGION_INFO_CAP_*).
inline constexpr std::uint16_t region_cap_sparse_mmap = 1;
inline constexpr std::uint16_t region_cap_sparse_mmap_version = 1;

/// Capability list entry header (vfio_info_cap_header).
struct info_cap_header {
    std::uint16_t id;      // bytes 01:00
    std::uint16_t version; // bytes 03:02
    std::uint32_t next;    // bytes 07:04, from the start of the region info; 0 ends the list
};
static_assert(sizeof(info_cap_header) == 8);
static_assert(offsetof(info_cap_header, version) == 2);
static_assert(offsetof(info_cap_header, next) == 4);
static_assert(spec::is_wire_type_v<info_cap_header>);

/// Sparse mmap capability before its areas (vfio_region_info_cap_sparse_mmap).
struct sparse_mmap_cap {
    info_cap_header header; // bytes 07:00
    std::uint32_t nr_areas; // bytes 11:08
    std::uint32_t rsvd12;   // bytes 15:12
};
static_assert(sizeof(sparse_mmap_cap) == 16);
static_assert(offsetof(sparse_mmap_cap, nr_areas) == 8);
static_assert(spec::is_wire_type_v<sparse_mmap_cap>);

/// One mappable area of a sparse region (vfio_region_sparse_mmap_area).
struct sparse_mmap_area {
    std::uint64_t offset; // bytes 07:00, from the region's start
    std::uint64_t size;   // bytes 15:08
};
static_assert(sizeof(sparse_mmap_area) == 16);
static_assert(offsetof(sparse_mmap_area, size) == 8);
static_assert(spec::is_wire_type_v<sparse_mmap_area>);

/// Interrupt type flags (vfio_irq_info.flags).
struct irq_info_flags : spec::word<irq_info_flags, std::uint32_t> {
    using word::word;
    static constexpr field<0, 1, bool> eventfd{};    // VFIO_IRQ_INFO_EVENTFD: bit 0
    static constexpr field<1, 1, bool> maskable{};   // VFIO_IRQ_INFO_MASKABLE: bit 1
    static constexpr field<2, 1, bool> automasked{}; // VFIO_IRQ_INFO_AUTOMASKED: bit 2
    static constexpr field<3, 1, bool> noresize{};   // VFIO_IRQ_INFO_NORESIZE: bit 3
};
static_assert(sizeof(irq_info_flags) == 4);

/// VFIO_USER_DEVICE_GET_IRQ_INFO request and reply (vfio_irq_info).
struct irq_info {
    std::uint32_t argsz;  // bytes 03:00
    irq_info_flags flags; // bytes 07:04
    std::uint32_t index;  // bytes 11:08
    std::uint32_t count;  // bytes 15:12
};
static_assert(sizeof(irq_info) == 16);
static_assert(offsetof(irq_info, flags) == 4);
static_assert(offsetof(irq_info, index) == 8);
static_assert(offsetof(irq_info, count) == 12);
static_assert(spec::is_wire_type_v<irq_info>);

/// SET_IRQS flags (vfio_irq_set.flags): one data type and one action.
struct irq_set_flags : spec::word<irq_set_flags, std::uint32_t> {
    using word::word;
    static constexpr field<0, 1, bool> data_none{};      // VFIO_IRQ_SET_DATA_NONE: bit 0
    static constexpr field<1, 1, bool> data_bool{};      // VFIO_IRQ_SET_DATA_BOOL: bit 1
    static constexpr field<2, 1, bool> data_eventfd{};   // VFIO_IRQ_SET_DATA_EVENTFD: bit 2
    static constexpr field<3, 1, bool> action_mask{};    // VFIO_IRQ_SET_ACTION_MASK: bit 3
    static constexpr field<4, 1, bool> action_unmask{};  // VFIO_IRQ_SET_ACTION_UNMASK: bit 4
    static constexpr field<5, 1, bool> action_trigger{}; // VFIO_IRQ_SET_ACTION_TRIGGER: bit 5
    static constexpr std::uint32_t data_mask = 0x07;
    static constexpr std::uint32_t action_mask_bits = 0x38;
};
static_assert(sizeof(irq_set_flags) == 4);

/// VFIO_USER_DEVICE_SET_IRQS request before its optional boolean array (vfio_irq_set).
struct irq_set {
    std::uint32_t argsz; // bytes 03:00, request payload size including the data
    irq_set_flags flags; // bytes 07:04
    std::uint32_t index; // bytes 11:08
    std::uint32_t start; // bytes 15:12
    std::uint32_t count; // bytes 19:16
};
static_assert(sizeof(irq_set) == 20);
static_assert(offsetof(irq_set, flags) == 4);
static_assert(offsetof(irq_set, index) == 8);
static_assert(offsetof(irq_set, start) == 12);
static_assert(offsetof(irq_set, count) == 16);
static_assert(spec::is_wire_type_v<irq_set>);

/// VFIO_USER_REGION_READ / REGION_WRITE fixed part, in requests and replies
/// ("vfio-user: VFIO_USER_REGION_READ").
struct region_access {
    std::uint64_t offset; // bytes 07:00, into the region
    std::uint32_t region; // bytes 11:08, region index
    std::uint32_t count;  // bytes 15:12, data bytes
};
static_assert(sizeof(region_access) == 16);
static_assert(offsetof(region_access, region) == 8);
static_assert(offsetof(region_access, count) == 12);
static_assert(spec::is_wire_type_v<region_access>);

/// VFIO_USER_DMA_READ / DMA_WRITE fixed part: in the server's requests, and echoed in the client's
/// replies ("vfio-user: VFIO_USER_DMA_READ", "vfio-user: VFIO_USER_DMA_WRITE"). The data follows it
/// in a DMA_WRITE request and a DMA_READ reply.
struct dma_access {
    std::uint64_t address; // bytes 07:00, client DMA address inside a region mapped without a descriptor
    std::uint64_t count;   // bytes 15:08, data bytes
};
static_assert(sizeof(dma_access) == 16);
static_assert(offsetof(dma_access, count) == 8);
static_assert(spec::is_wire_type_v<dma_access>);

/// The errno value a std::errc stands for, for the reply's error field.
[[nodiscard]] constexpr std::uint32_t errno_value(std::errc error) noexcept
{
    return static_cast<std::uint32_t>(error);
}

} // namespace transport::vfio_user
NVMEKIT_END_NAMESPACE
