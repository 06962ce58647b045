#pragma once
/// The vfio-user protocol as data: message header, command payloads, request decoders and reply
/// encoders. No sockets and no threads; the server transport feeds bytes in and sends bytes out.
///
/// Section names cite QEMU's docs/interop/vfio-user.rst ("vfio-user: Header"); the payload
/// structures that the protocol takes from <linux/vfio.h> cite their uapi struct names. All data
/// is in host byte order, which nvmekit requires to be little-endian.
///
/// Every decoder takes the payload (the bytes after the 16-byte header, exactly
/// `message_size - 16` of them) and the number of file descriptors that arrived with the message
/// as SCM_RIGHTS data, checks every field, and returns either the decoded request or the errno
/// value to put in the reply's error field. Nothing a client sends is trusted.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>

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

/// The errno value a std::errc stands for, for the reply's error field.
[[nodiscard]] constexpr std::uint32_t errno_value(std::errc error) noexcept
{
    return static_cast<std::uint32_t>(error);
}

/// A decoded value, or the errno (EINVAL, ENOTSUP, E2BIG ...) that the reply reports instead.
template <typename T>
class parse_result {
public:
    constexpr parse_result(T value) noexcept(std::is_nothrow_move_constructible_v<T>) // NOLINT: implicit by design
        : value_{std::move(value)}
    {
    }
    constexpr parse_result(std::errc error) noexcept // NOLINT: implicit by design
        : error_{error}
    {
        NVMEKIT_ASSERT(error != std::errc{}, "parse_result: an error needs a non-zero errno");
    }

    [[nodiscard]] constexpr bool has_value() const noexcept { return error_ == std::errc{}; }
    constexpr explicit operator bool() const noexcept { return has_value(); }
    /// The errno; std::errc{} when a value is held.
    [[nodiscard]] constexpr std::errc error() const noexcept { return error_; }
    [[nodiscard]] constexpr const T& value() const noexcept
    {
        NVMEKIT_ASSERT(has_value(), "parse_result: value() of an error");
        return value_;
    }
    [[nodiscard]] constexpr const T& operator*() const noexcept { return value(); }
    [[nodiscard]] constexpr const T* operator->() const noexcept { return &value(); }

private:
    T value_{};
    std::errc error_{};
};

/// Server-side limits: what the server advertises in its VERSION reply and enforces.
struct protocol_limits {
    /// Largest `count` of a REGION_READ/REGION_WRITE the server accepts (max_data_xfer_size).
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

    /// Largest message parse_header accepts: a REGION_WRITE of max_data_xfer_size bytes or a
    /// VERSION with max_version_data bytes of JSON, whichever is larger.
    [[nodiscard]] constexpr std::uint64_t max_message_size() const noexcept
    {
        return std::max<std::uint64_t>(header_size + sizeof(region_access) + max_data_xfer_size,
                                       header_size + sizeof(version_payload) + max_version_data);
    }
};

/// Checks the fixed header of a client message: at least 16 bytes in `bytes` (only those are
/// read), message size >= 16 and <= limits.max_message_size(), type Command. The command itself
/// is not checked, so an unknown one can still be answered (ENOTSUP) with its message ID. An
/// error here means the byte stream cannot be trusted: the transport closes the connection.
[[nodiscard]] inline parse_result<message_header> parse_header(std::span<const std::byte> bytes,
                                                               const protocol_limits& limits = {}) noexcept
{
    if (bytes.size() < header_size) {
        return std::errc::invalid_argument;
    }
    message_header header{};
    std::memcpy(&header, bytes.data(), header_size);
    if (header.message_size < header_size) {
        return std::errc::invalid_argument;
    }
    if (header.message_size > limits.max_message_size()) {
        return std::errc::argument_list_too_long;
    }
    if (header.flags.get(message_flags::type) != message_type::command) {
        return std::errc::invalid_argument;
    }
    return header;
}

/// Client capabilities from a VERSION request's JSON ("vfio-user: VFIO_USER_VERSION"); missing
/// members keep the specification's defaults.
struct client_capabilities {
    std::uint64_t max_msg_fds = 1;
    std::uint64_t max_data_xfer_size = 1U << 20;
    std::uint64_t max_dma_maps = 65535;
    std::uint64_t pgsizes = 4096;
    bool migration = false;      ///< a "migration" object was present (not supported by the server)
    bool write_multiple = false; ///< the client accepts REGION_WRITE_MULTI
    bool twin_socket = false;    ///< twin_socket.supported
    /// Which members the client named, so the reply can name a subset of them.
    bool has_max_msg_fds = false;
    bool has_max_data_xfer_size = false;
    bool has_max_dma_maps = false;
    bool has_pgsizes = false;
};

/// A decoded VERSION request.
struct version_request {
    std::uint16_t major = 0;
    std::uint16_t minor = 0;
    client_capabilities capabilities{};
};

namespace detail {

/// Deepest JSON nesting accepted in capabilities; deeper input is rejected, not recursed into.
inline constexpr int max_json_depth = 16;

/// Just enough of a JSON reader (RFC 8259) for the capabilities object: validates the whole
/// text, extracts the members it is asked for, and skips everything else.
class json_reader {
public:
    constexpr explicit json_reader(std::string_view text) noexcept : text_{text} {}

    [[nodiscard]] constexpr bool at_end() noexcept
    {
        skip_space();
        return pos_ == text_.size();
    }

    /// Reads an object; calls `member(key, reader)` for each member, which must consume the value
    /// and return false if it is invalid. `key` is the raw text between the quotes.
    template <typename Member>
    [[nodiscard]] constexpr bool read_object(int depth, Member&& member) noexcept
    {
        if (depth > max_json_depth || !consume('{')) {
            return false;
        }
        if (consume('}')) {
            return true;
        }
        for (;;) {
            std::string_view key;
            if (!read_string(key) || !consume(':') || !member(key, *this, depth + 1)) {
                return false;
            }
            if (consume('}')) {
                return true;
            }
            if (!consume(',')) {
                return false;
            }
        }
    }

    /// True when the next value is an object (without consuming it).
    [[nodiscard]] constexpr bool next_is_object() noexcept
    {
        skip_space();
        return pos_ < text_.size() && text_[pos_] == '{';
    }

    /// Reads a number that must be a non-negative integer fitting 64 bits.
    [[nodiscard]] constexpr bool read_unsigned(std::uint64_t& value) noexcept
    {
        std::string_view raw;
        if (!read_number(raw) || raw.find_first_not_of("0123456789") != std::string_view::npos) {
            return false;
        }
        value = 0;
        for (const char digit : raw) {
            const auto d = static_cast<std::uint64_t>(digit - '0');
            if (value > (UINT64_MAX - d) / 10) {
                return false;
            }
            value = value * 10 + d;
        }
        return true;
    }

    [[nodiscard]] constexpr bool read_bool(bool& value) noexcept
    {
        skip_space();
        if (literal("true")) {
            value = true;
            return true;
        }
        if (literal("false")) {
            value = false;
            return true;
        }
        return false;
    }

    /// Validates and skips any value.
    [[nodiscard]] constexpr bool skip_value(int depth) noexcept
    {
        if (depth > max_json_depth) {
            return false;
        }
        skip_space();
        if (pos_ == text_.size()) {
            return false;
        }
        switch (text_[pos_]) {
        case '{':
            return read_object(depth, [](std::string_view, json_reader& reader, int inner) {
                return reader.skip_value(inner);
            });
        case '[': {
            ++pos_;
            if (consume(']')) {
                return true;
            }
            for (;;) {
                if (!skip_value(depth + 1)) {
                    return false;
                }
                if (consume(']')) {
                    return true;
                }
                if (!consume(',')) {
                    return false;
                }
            }
        }
        case '"': {
            std::string_view ignored;
            return read_string(ignored);
        }
        case 't': return literal("true");
        case 'f': return literal("false");
        case 'n': return literal("null");
        default: {
            std::string_view ignored;
            return read_number(ignored);
        }
        }
    }

private:
    constexpr void skip_space() noexcept
    {
        while (pos_ < text_.size() &&
               (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r')) {
            ++pos_;
        }
    }
    [[nodiscard]] constexpr bool consume(char c) noexcept
    {
        skip_space();
        if (pos_ < text_.size() && text_[pos_] == c) {
            ++pos_;
            return true;
        }
        return false;
    }
    [[nodiscard]] constexpr bool literal(std::string_view word) noexcept
    {
        if (text_.substr(pos_, word.size()) != word) {
            return false;
        }
        pos_ += word.size();
        return true;
    }
    [[nodiscard]] static constexpr bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }
    [[nodiscard]] static constexpr bool is_hex(char c) noexcept
    {
        return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
    }
    [[nodiscard]] constexpr std::size_t digits() noexcept
    {
        const std::size_t begin = pos_;
        while (pos_ < text_.size() && is_digit(text_[pos_])) {
            ++pos_;
        }
        return pos_ - begin;
    }
    /// A string's raw contents; escapes are validated, not decoded.
    [[nodiscard]] constexpr bool read_string(std::string_view& raw) noexcept
    {
        if (!consume('"')) {
            return false;
        }
        const std::size_t begin = pos_;
        while (pos_ < text_.size()) {
            const char c = text_[pos_];
            if (c == '"') {
                raw = text_.substr(begin, pos_ - begin);
                ++pos_;
                return true;
            }
            if (static_cast<unsigned char>(c) < 0x20) {
                return false;
            }
            if (c == '\\') {
                if (++pos_ == text_.size()) {
                    return false;
                }
                const char escaped = text_[pos_];
                if (escaped == 'u') {
                    for (int i = 0; i < 4; ++i) {
                        if (++pos_ == text_.size() || !is_hex(text_[pos_])) {
                            return false;
                        }
                    }
                } else if (std::string_view{"\"\\/bfnrt"}.find(escaped) == std::string_view::npos) {
                    return false;
                }
            }
            ++pos_;
        }
        return false;
    }
    /// A number's text: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
    [[nodiscard]] constexpr bool read_number(std::string_view& raw) noexcept
    {
        skip_space();
        const std::size_t begin = pos_;
        if (pos_ < text_.size() && text_[pos_] == '-') {
            ++pos_;
        }
        const std::size_t int_begin = pos_;
        const std::size_t int_digits = digits();
        if (int_digits == 0 || (int_digits > 1 && text_[int_begin] == '0')) {
            return false;
        }
        if (pos_ < text_.size() && text_[pos_] == '.') {
            ++pos_;
            if (digits() == 0) {
                return false;
            }
        }
        if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
            ++pos_;
            if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) {
                ++pos_;
            }
            if (digits() == 0) {
                return false;
            }
        }
        raw = text_.substr(begin, pos_ - begin);
        return true;
    }

    std::string_view text_;
    std::size_t pos_ = 0;
};

/// Parses the capabilities JSON text (without its NUL) into `caps`.
[[nodiscard]] constexpr bool parse_capabilities_json(std::string_view text, client_capabilities& caps) noexcept
{
    json_reader reader{text};
    if (reader.at_end()) {
        return true; // no capabilities at all: every default applies
    }
    const auto capability = [&caps](std::string_view key, json_reader& r, int depth) {
        if (key == "max_msg_fds") {
            caps.has_max_msg_fds = true;
            return r.read_unsigned(caps.max_msg_fds);
        }
        if (key == "max_data_xfer_size") {
            caps.has_max_data_xfer_size = true;
            return r.read_unsigned(caps.max_data_xfer_size);
        }
        if (key == "max_dma_maps") {
            caps.has_max_dma_maps = true;
            return r.read_unsigned(caps.max_dma_maps);
        }
        if (key == "pgsizes") {
            caps.has_pgsizes = true;
            return r.read_unsigned(caps.pgsizes);
        }
        if (key == "write_multiple") {
            return r.read_bool(caps.write_multiple);
        }
        if (key == "migration") {
            caps.migration = true;
            return r.next_is_object() && r.skip_value(depth);
        }
        if (key == "twin_socket") {
            return r.read_object(depth, [&caps](std::string_view inner_key, json_reader& inner, int inner_depth) {
                if (inner_key == "supported") {
                    return inner.read_bool(caps.twin_socket);
                }
                return inner.skip_value(inner_depth);
            });
        }
        return r.skip_value(depth);
    };
    const bool ok = reader.read_object(0, [&](std::string_view key, json_reader& r, int depth) {
        if (key == "capabilities") {
            return r.read_object(depth, capability);
        }
        return r.skip_value(depth);
    });
    return ok && reader.at_end();
}

template <typename T>
[[nodiscard]] inline T load(std::span<const std::byte> bytes) noexcept
{
    NVMEKIT_ASSERT(bytes.size() >= sizeof(T), "load: span shorter than the structure");
    T value{};
    std::memcpy(&value, bytes.data(), sizeof(T));
    return value;
}

[[nodiscard]] constexpr bool is_multiple(std::uint64_t value, std::uint64_t page) noexcept
{
    return (value & (page - 1)) == 0;
}

/// True when [base, base + length) stays within 64 bits.
[[nodiscard]] constexpr bool fits_u64(std::uint64_t base, std::uint64_t length) noexcept
{
    return length <= UINT64_MAX - base;
}

} // namespace detail

/// Decodes a VERSION request: version numbers and the optional NUL-terminated JSON capabilities.
/// EINVAL for a short payload, missing NUL, non-NUL bytes after it, malformed JSON or a known
/// member of the wrong type; E2BIG for JSON longer than limits.max_version_data.
[[nodiscard]] inline parse_result<version_request> decode_version(std::span<const std::byte> payload,
                                                                  std::size_t fd_count,
                                                                  const protocol_limits& limits = {}) noexcept
{
    if (payload.size() < sizeof(version_payload) || fd_count != 0) {
        return std::errc::invalid_argument;
    }
    const auto fixed = detail::load<version_payload>(payload);
    version_request request{fixed.major, fixed.minor, {}};
    const auto data = payload.subspan(sizeof(version_payload));
    if (data.empty()) {
        return request;
    }
    if (data.size() > limits.max_version_data) {
        return std::errc::argument_list_too_long;
    }
    const auto* const chars = reinterpret_cast<const char*>(data.data());
    const std::string_view all{chars, data.size()};
    const std::size_t nul = all.find('\0');
    if (nul == std::string_view::npos || all.find_first_not_of('\0', nul) != std::string_view::npos) {
        return std::errc::invalid_argument;
    }
    if (!detail::parse_capabilities_json(all.substr(0, nul), request.capabilities)) {
        return std::errc::invalid_argument;
    }
    return request;
}

/// The version the server replies with: the proposed major (ENOTSUP unless it is
/// protocol_major; the server then closes the connection) and min(proposed, our) minor.
[[nodiscard]] constexpr parse_result<version_payload> negotiate_version(const version_request& request) noexcept
{
    if (request.major != protocol_major) {
        return std::errc::not_supported;
    }
    return version_payload{request.major, std::min(request.minor, protocol_minor)};
}

/// Decodes a DMA_MAP request. EINVAL: payload not 32 bytes, argsz not 32, undefined flag bits,
/// neither read nor write, zero size, address + size or offset + size above 2^64 - 1, a field not a
/// multiple of limits.dma_page_size, more than one descriptor, or a non-zero offset without
/// one. ENOTSUP: the Linux-only VADDR flag.
[[nodiscard]] inline parse_result<dma_map> decode_dma_map(std::span<const std::byte> payload, std::size_t fd_count,
                                                         const protocol_limits& limits = {}) noexcept
{
    if (payload.size() != sizeof(dma_map) || fd_count > 1) {
        return std::errc::invalid_argument;
    }
    const auto map = detail::load<dma_map>(payload);
    if (map.argsz != sizeof(dma_map) || (map.flags.raw & ~dma_map_flags::defined_mask) != 0) {
        return std::errc::invalid_argument;
    }
    if (map.flags.get(dma_map_flags::vaddr)) {
        return std::errc::not_supported;
    }
    if (!map.flags.get(dma_map_flags::read) && !map.flags.get(dma_map_flags::write)) {
        return std::errc::invalid_argument;
    }
    const std::uint64_t page = limits.dma_page_size;
    if (map.size == 0 || !detail::fits_u64(map.address, map.size) || !detail::fits_u64(map.offset, map.size) ||
        !detail::is_multiple(map.address, page) || !detail::is_multiple(map.size, page) ||
        !detail::is_multiple(map.offset, page)) {
        return std::errc::invalid_argument;
    }
    if (fd_count == 0 && map.offset != 0) {
        return std::errc::invalid_argument;
    }
    return map;
}

/// Decodes a DMA_UNMAP request. ENOTSUP: the dirty-bitmap or VADDR flag. EINVAL: payload not
/// 24 bytes, argsz below 24 (the reply echoes the request), undefined flag bits, descriptors
/// attached, ALL with a non-zero address or size, or (without ALL) zero size, address + size
/// above 2^64 - 1, or a field not a multiple of limits.dma_page_size.
[[nodiscard]] inline parse_result<dma_unmap> decode_dma_unmap(std::span<const std::byte> payload,
                                                             std::size_t fd_count,
                                                             const protocol_limits& limits = {}) noexcept
{
    if (payload.size() < sizeof(dma_unmap) || fd_count != 0) {
        return std::errc::invalid_argument;
    }
    const auto unmap = detail::load<dma_unmap>(payload);
    if ((unmap.flags.raw & ~dma_unmap_flags::defined_mask) != 0) {
        return std::errc::invalid_argument;
    }
    if (unmap.flags.get(dma_unmap_flags::get_dirty_bitmap) || unmap.flags.get(dma_unmap_flags::vaddr)) {
        return std::errc::not_supported;
    }
    if (payload.size() != sizeof(dma_unmap) || unmap.argsz < sizeof(dma_unmap)) {
        return std::errc::invalid_argument;
    }
    if (unmap.flags.get(dma_unmap_flags::all)) {
        if (unmap.address != 0 || unmap.size != 0) {
            return std::errc::invalid_argument;
        }
        return unmap;
    }
    const std::uint64_t page = limits.dma_page_size;
    if (unmap.size == 0 || !detail::fits_u64(unmap.address, unmap.size) ||
        !detail::is_multiple(unmap.address, page) || !detail::is_multiple(unmap.size, page)) {
        return std::errc::invalid_argument;
    }
    return unmap;
}

/// Decodes a DEVICE_GET_INFO request. EINVAL: payload not 16 bytes, argsz below 16, or
/// descriptors attached. The other fields are ignored.
[[nodiscard]] inline parse_result<device_info> decode_device_get_info(std::span<const std::byte> payload,
                                                                     std::size_t fd_count) noexcept
{
    if (payload.size() != sizeof(device_info) || fd_count != 0) {
        return std::errc::invalid_argument;
    }
    const auto info = detail::load<device_info>(payload);
    if (info.argsz < sizeof(device_info)) {
        return std::errc::invalid_argument;
    }
    return info;
}

/// Decodes a DEVICE_GET_REGION_INFO request. EINVAL: payload not 32 bytes, argsz below 32,
/// index >= num_regions, or descriptors attached. Only argsz and index are meaningful.
[[nodiscard]] inline parse_result<region_info> decode_region_info(std::span<const std::byte> payload,
                                                                 std::size_t fd_count,
                                                                 std::uint32_t num_regions) noexcept
{
    if (payload.size() != sizeof(region_info) || fd_count != 0) {
        return std::errc::invalid_argument;
    }
    const auto info = detail::load<region_info>(payload);
    if (info.argsz < sizeof(region_info) || info.index >= num_regions) {
        return std::errc::invalid_argument;
    }
    return info;
}

/// Decodes a DEVICE_GET_IRQ_INFO request. EINVAL: payload not 16 bytes, argsz below 16,
/// index >= num_irqs, or descriptors attached.
[[nodiscard]] inline parse_result<irq_info> decode_irq_info(std::span<const std::byte> payload, std::size_t fd_count,
                                                           std::uint32_t num_irqs) noexcept
{
    if (payload.size() != sizeof(irq_info) || fd_count != 0) {
        return std::errc::invalid_argument;
    }
    const auto info = detail::load<irq_info>(payload);
    if (info.argsz < sizeof(irq_info) || info.index >= num_irqs) {
        return std::errc::invalid_argument;
    }
    return info;
}

/// SET_IRQS data type and action, one of each.
enum class irq_set_data : std::uint8_t { none, boolean, eventfd };
enum class irq_set_action : std::uint8_t { mask, unmask, trigger };

/// A decoded SET_IRQS request.
struct irq_set_request {
    irq_set fields{};
    irq_set_data data = irq_set_data::none;
    irq_set_action action = irq_set_action::trigger;
    /// DATA_BOOL: one byte per sub-index, `fields.count` of them (a view into the payload).
    std::span<const std::byte> bools{};
    /// DATA_EVENTFD: descriptors attached, either 0 (de-assign) or `fields.count`.
    std::size_t fd_count = 0;
    /// DATA_NONE with count 0: disable every interrupt of the index.
    [[nodiscard]] constexpr bool disables_all() const noexcept
    {
        return data == irq_set_data::none && action == irq_set_action::trigger && fields.count == 0;
    }
};

/// Decodes a DEVICE_SET_IRQS request; `irq_counts[i]` is the number of interrupts of index i.
/// EINVAL: payload shorter than 20 bytes, argsz below the bytes present, undefined flag bits,
/// not exactly one data type and one action, index out of range, start/count beyond the
/// index's interrupts (start must be below the count even when count is 0), count 0 with data
/// other than NONE, DATA_BOOL payload not 20 + count bytes, extra bytes with NONE/EVENTFD,
/// descriptors with NONE/BOOL, or with EVENTFD neither 0 nor count of them.
[[nodiscard]] inline parse_result<irq_set_request> decode_set_irqs(std::span<const std::byte> payload,
                                                                  std::size_t fd_count,
                                                                  std::span<const std::uint32_t> irq_counts) noexcept
{
    if (payload.size() < sizeof(irq_set)) {
        return std::errc::invalid_argument;
    }
    irq_set_request request{};
    request.fields = detail::load<irq_set>(payload);
    const irq_set& set = request.fields;
    const std::uint32_t flags = set.flags.raw;
    if (set.argsz < payload.size() ||
        (flags & ~(irq_set_flags::data_mask | irq_set_flags::action_mask_bits)) != 0) {
        return std::errc::invalid_argument;
    }
    switch (flags & irq_set_flags::data_mask) {
    case 0x1: request.data = irq_set_data::none; break;
    case 0x2: request.data = irq_set_data::boolean; break;
    case 0x4: request.data = irq_set_data::eventfd; break;
    default: return std::errc::invalid_argument;
    }
    switch (flags & irq_set_flags::action_mask_bits) {
    case 0x08: request.action = irq_set_action::mask; break;
    case 0x10: request.action = irq_set_action::unmask; break;
    case 0x20: request.action = irq_set_action::trigger; break;
    default: return std::errc::invalid_argument;
    }
    if (set.index >= irq_counts.size()) {
        return std::errc::invalid_argument;
    }
    const std::uint64_t available = irq_counts[set.index];
    if (set.start >= available || std::uint64_t{set.start} + set.count > available) {
        return std::errc::invalid_argument;
    }
    if (set.count == 0 && request.data != irq_set_data::none) {
        return std::errc::invalid_argument;
    }
    const std::size_t data_bytes = payload.size() - sizeof(irq_set);
    switch (request.data) {
    case irq_set_data::none:
        if (data_bytes != 0 || fd_count != 0) {
            return std::errc::invalid_argument;
        }
        break;
    case irq_set_data::boolean:
        if (data_bytes != set.count || fd_count != 0) {
            return std::errc::invalid_argument;
        }
        request.bools = payload.subspan(sizeof(irq_set));
        break;
    case irq_set_data::eventfd:
        if (data_bytes != 0 || (fd_count != 0 && fd_count != set.count)) {
            return std::errc::invalid_argument;
        }
        request.fd_count = fd_count;
        break;
    }
    return request;
}

/// A decoded REGION_WRITE request: the fixed part and a view of its data in the payload.
struct region_write_request {
    region_access access{};
    std::span<const std::byte> data{};
};

namespace detail {
[[nodiscard]] inline std::errc check_region_access(const region_access& access,
                                                   std::span<const std::uint64_t> region_sizes,
                                                   const protocol_limits& limits) noexcept
{
    if (access.count > limits.max_data_xfer_size) {
        return std::errc::argument_list_too_long;
    }
    if (access.count == 0 || access.region >= region_sizes.size() ||
        !fits_u64(access.offset, access.count) || access.offset + access.count > region_sizes[access.region]) {
        return std::errc::invalid_argument;
    }
    return {};
}
} // namespace detail

/// Decodes a REGION_READ request; `region_sizes[i]` is the size of region i (0 when absent).
/// E2BIG: count above limits.max_data_xfer_size. EINVAL: payload not 16 bytes, descriptors
/// attached, count 0, region out of range, or offset + count past the region's end.
[[nodiscard]] inline parse_result<region_access> decode_region_read(std::span<const std::byte> payload,
                                                                   std::size_t fd_count,
                                                                   std::span<const std::uint64_t> region_sizes,
                                                                   const protocol_limits& limits = {}) noexcept
{
    if (payload.size() != sizeof(region_access) || fd_count != 0) {
        return std::errc::invalid_argument;
    }
    const auto access = detail::load<region_access>(payload);
    if (const std::errc error = detail::check_region_access(access, region_sizes, limits); error != std::errc{}) {
        return error;
    }
    return access;
}

/// Decodes a REGION_WRITE request, with the same checks as decode_region_read plus: the payload
/// is exactly 16 + count bytes (EINVAL otherwise).
[[nodiscard]] inline parse_result<region_write_request> decode_region_write(
    std::span<const std::byte> payload, std::size_t fd_count, std::span<const std::uint64_t> region_sizes,
    const protocol_limits& limits = {}) noexcept
{
    if (payload.size() < sizeof(region_access) || fd_count != 0) {
        return std::errc::invalid_argument;
    }
    const auto access = detail::load<region_access>(payload);
    if (const std::errc error = detail::check_region_access(access, region_sizes, limits); error != std::errc{}) {
        return error;
    }
    if (payload.size() - sizeof(region_access) != access.count) {
        return std::errc::invalid_argument;
    }
    return region_write_request{access, payload.subspan(sizeof(region_access))};
}

/// Checks a DEVICE_RESET request: no payload, no descriptors (EINVAL otherwise).
[[nodiscard]] constexpr std::errc check_device_reset(std::span<const std::byte> payload, std::size_t fd_count) noexcept
{
    return payload.empty() && fd_count == 0 ? std::errc{} : std::errc::invalid_argument;
}

/// The reply header for `request` carrying `payload_size` bytes after the header.
[[nodiscard]] constexpr message_header make_reply_header(const message_header& request,
                                                         std::size_t payload_size) noexcept
{
    message_header reply{};
    reply.message_id = request.message_id;
    reply.command_code = request.command_code;
    reply.message_size = static_cast<std::uint32_t>(header_size + payload_size);
    reply.flags.set(message_flags::type, message_type::reply);
    return reply;
}

/// Writes an error reply (header only, Error bit, errno) into `out`; returns 16.
inline std::size_t encode_error_reply(const message_header& request, std::errc error, std::span<std::byte> out) noexcept
{
    NVMEKIT_ASSERT(out.size() >= header_size, "encode_error_reply: output buffer too small");
    message_header reply = make_reply_header(request, 0);
    reply.flags.set(message_flags::error, true);
    reply.error_number = errno_value(error);
    std::memcpy(out.data(), &reply, header_size);
    return header_size;
}

/// Writes a successful reply, the header then `payload`, into `out`; returns its size.
inline std::size_t encode_reply(const message_header& request, std::span<const std::byte> payload,
                                std::span<std::byte> out) noexcept
{
    NVMEKIT_ASSERT(out.size() >= header_size + payload.size(), "encode_reply: output buffer too small");
    const message_header reply = make_reply_header(request, payload.size());
    std::memcpy(out.data(), &reply, header_size);
    if (!payload.empty()) {
        std::memcpy(out.data() + header_size, payload.data(), payload.size());
    }
    return header_size + payload.size();
}

/// Writes a successful reply whose payload is one wire structure (device_info, irq_info,
/// dma_unmap, region_access ...).
template <typename Payload>
    requires spec::is_wire_type_v<Payload>
inline std::size_t encode_reply(const message_header& request, const Payload& payload, std::span<std::byte> out) noexcept
{
    return encode_reply(request, std::as_bytes(std::span{&payload, 1}), out);
}

/// Largest JSON text encode_version_reply writes, NUL excluded.
inline constexpr std::size_t max_version_reply_json = 160;
/// Output size that always holds a VERSION reply.
inline constexpr std::size_t version_reply_capacity = header_size + sizeof(version_payload) + max_version_reply_json + 1;

namespace detail {
class text_builder {
public:
    constexpr explicit text_builder(std::span<char> buffer) noexcept : buffer_{buffer} {}
    constexpr void append(std::string_view text) noexcept
    {
        NVMEKIT_ASSERT(text.size() <= buffer_.size() - size_, "text_builder: buffer too small");
        std::copy(text.begin(), text.end(), buffer_.begin() + static_cast<std::ptrdiff_t>(size_));
        size_ += text.size();
    }
    constexpr void append(std::uint64_t value) noexcept
    {
        std::array<char, 20> digits{};
        std::size_t count = 0;
        do {
            digits[count++] = static_cast<char>('0' + value % 10);
            value /= 10;
        } while (value != 0);
        std::array<char, 20> reversed{};
        for (std::size_t i = 0; i < count; ++i) {
            reversed[i] = digits[count - 1 - i];
        }
        append(std::string_view{reversed.data(), count});
    }
    [[nodiscard]] constexpr std::size_t size() const noexcept { return size_; }

private:
    std::span<char> buffer_;
    std::size_t size_ = 0;
};
} // namespace detail

/// The server's capabilities JSON: the members of `client` that the server also knows, with
/// the server's values from `limits` (the reply names a subset of what the client proposed).
/// Returns the text length written to `buffer` (no NUL).
constexpr std::size_t write_capabilities_json(const client_capabilities& client, const protocol_limits& limits,
                                              std::span<char, max_version_reply_json> buffer) noexcept
{
    detail::text_builder json{buffer};
    json.append("{\"capabilities\":{");
    bool first = true;
    const auto member = [&](std::string_view key, std::uint64_t value) {
        json.append(first ? "\"" : ",\"");
        json.append(key);
        json.append("\":");
        json.append(value);
        first = false;
    };
    if (client.has_max_msg_fds) {
        member("max_msg_fds", limits.max_msg_fds);
    }
    if (client.has_max_data_xfer_size) {
        member("max_data_xfer_size", limits.max_data_xfer_size);
    }
    if (client.has_pgsizes) {
        member("pgsizes", limits.dma_page_size);
    }
    if (client.has_max_dma_maps) {
        member("max_dma_maps", limits.max_dma_maps);
    }
    json.append("}}");
    return json.size();
}

/// Writes the VERSION reply (negotiated version, NUL-terminated capabilities JSON) into `out`,
/// which holds at least version_reply_capacity bytes; returns its size.
inline std::size_t encode_version_reply(const message_header& request, const version_payload& version,
                                        const client_capabilities& client, const protocol_limits& limits,
                                        std::span<std::byte> out) noexcept
{
    NVMEKIT_ASSERT(out.size() >= version_reply_capacity, "encode_version_reply: output buffer too small");
    std::array<char, max_version_reply_json> json{};
    const std::size_t json_size = write_capabilities_json(client, limits, json);
    const std::size_t payload_size = sizeof(version_payload) + json_size + 1;
    const message_header reply = make_reply_header(request, payload_size);
    std::byte* cursor = out.data();
    std::memcpy(cursor, &reply, header_size);
    cursor += header_size;
    std::memcpy(cursor, &version, sizeof(version_payload));
    cursor += sizeof(version_payload);
    std::memcpy(cursor, json.data(), json_size);
    cursor[json_size] = std::byte{0};
    return header_size + payload_size;
}

/// Full region info payload size: the structure, plus the sparse mmap capability when `areas`
/// is not empty.
[[nodiscard]] constexpr std::size_t region_info_full_size(std::size_t area_count) noexcept
{
    return sizeof(region_info) + (area_count == 0 ? 0 : sizeof(sparse_mmap_cap) + area_count * sizeof(sparse_mmap_area));
}

/// Writes the GET_REGION_INFO reply for `info` (flags, index, size, offset; argsz and
/// cap_offset are filled here) with a sparse mmap capability listing `areas` when not empty.
/// When the request's argsz is too small for the capability, the reply carries the structure
/// alone with argsz = the full size and cap_offset 0, so the client asks again (Linux
/// VFIO_DEVICE_GET_REGION_INFO semantics). `out` holds header_size + region_info_full_size.
inline std::size_t encode_region_info_reply(const message_header& request, std::uint32_t request_argsz,
                                            region_info info, std::span<const sparse_mmap_area> areas,
                                            std::span<std::byte> out) noexcept
{
    const std::size_t full = region_info_full_size(areas.size());
    const bool with_caps = !areas.empty() && request_argsz >= full;
    const std::size_t payload_size = with_caps ? full : sizeof(region_info);
    NVMEKIT_ASSERT(out.size() >= header_size + payload_size, "encode_region_info_reply: output buffer too small");
    info.argsz = static_cast<std::uint32_t>(full);
    info.flags.set(region_info_flags::caps, !areas.empty());
    info.cap_offset = with_caps ? static_cast<std::uint32_t>(sizeof(region_info)) : 0;
    const message_header reply = make_reply_header(request, payload_size);
    std::byte* cursor = out.data();
    std::memcpy(cursor, &reply, header_size);
    cursor += header_size;
    std::memcpy(cursor, &info, sizeof(region_info));
    cursor += sizeof(region_info);
    if (with_caps) {
        sparse_mmap_cap cap{};
        cap.header = {region_cap_sparse_mmap, region_cap_sparse_mmap_version, 0};
        cap.nr_areas = static_cast<std::uint32_t>(areas.size());
        std::memcpy(cursor, &cap, sizeof(cap));
        cursor += sizeof(cap);
        std::memcpy(cursor, areas.data(), areas.size_bytes());
    }
    return header_size + payload_size;
}

/// Writes the REGION_READ reply: the request's fixed part then `data` (its size is the count).
inline std::size_t encode_region_read_reply(const message_header& request, const region_access& access,
                                            std::span<const std::byte> data, std::span<std::byte> out) noexcept
{
    NVMEKIT_ASSERT(data.size() == access.count, "encode_region_read_reply: data size differs from count");
    const std::size_t payload_size = sizeof(region_access) + data.size();
    NVMEKIT_ASSERT(out.size() >= header_size + payload_size, "encode_region_read_reply: output buffer too small");
    const message_header reply = make_reply_header(request, payload_size);
    std::memcpy(out.data(), &reply, header_size);
    std::memcpy(out.data() + header_size, &access, sizeof(region_access));
    if (!data.empty()) {
        std::memcpy(out.data() + header_size + sizeof(region_access), data.data(), data.size());
    }
    return header_size + payload_size;
}

} // namespace transport::vfio_user
NVMEKIT_END_NAMESPACE
