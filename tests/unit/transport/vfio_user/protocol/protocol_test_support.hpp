#pragma once
/// What the vfio-user protocol tests share: the errno values the decoders answer with, payloads
/// built from wire structures (whole, truncated or with bytes appended), VERSION payloads around a
/// JSON text, command headers, little-endian reads of encoded replies, the capabilities QEMU
/// proposes, and the interrupt counts and region sizes of the PCI function the decoders check
/// requests against.

#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>
#include <system_error>
#include <vector>

#include <nvmekit/transport/vfio_user/protocol/wire.hpp>

#include "wire_bytes.hpp"

namespace nvmekit_test {

namespace vu = nvmekit::transport::vfio_user;

inline constexpr std::errc einval = std::errc::invalid_argument;
inline constexpr std::errc enotsup = std::errc::not_supported;
inline constexpr std::errc e2big = std::errc::argument_list_too_long;

template <typename T>
std::vector<std::byte> payload_of(const T& value)
{
    std::vector<std::byte> bytes(sizeof(T));
    std::memcpy(bytes.data(), &value, sizeof(T));
    return bytes;
}

inline std::vector<std::byte> with_tail(std::vector<std::byte> bytes, std::size_t extra,
                                        std::byte fill = std::byte{0xAB})
{
    bytes.insert(bytes.end(), extra, fill);
    return bytes;
}

inline std::vector<std::byte> truncated(std::vector<std::byte> bytes, std::size_t size)
{
    bytes.resize(size);
    return bytes;
}

inline std::vector<std::byte> version_payload_with(std::uint16_t major, std::uint16_t minor,
                                                   std::string_view data)
{
    std::vector<std::byte> bytes = payload_of(vu::version_payload{major, minor});
    for (const char c : data) {
        bytes.push_back(static_cast<std::byte>(c));
    }
    return bytes;
}

/// A NUL-terminated JSON version payload.
inline std::vector<std::byte> version_json(std::string_view json)
{
    return with_tail(version_payload_with(0, 0, json), 1, std::byte{0});
}

inline vu::message_header command_header(vu::command cmd, std::uint32_t size, std::uint16_t id = 7)
{
    vu::message_header header{};
    header.message_id = id;
    header.command_code = cmd;
    header.message_size = size;
    return header;
}

template <std::unsigned_integral T>
T le_in(std::span<const std::byte> bytes, std::size_t offset)
{
    T value = 0;
    for (std::size_t i = sizeof(T); i-- > 0;) {
        value = static_cast<T>((value << 8) | std::to_integer<T>(bytes[offset + i]));
    }
    return value;
}

inline constexpr std::string_view qemu_capabilities =
    R"({"capabilities":{"migration":{"pgsize":4096,"max_bitmap_size":268435456},"max_msg_fds":16,)"
    R"("max_data_xfer_size":1048576,"pgsizes":4096,"max_dma_maps":65535,"write_multiple":true}})";

inline const std::array<std::uint32_t, vu::pci_num_irqs> irq_counts{1, 0, 64, 1, 1};
inline const std::array<std::uint64_t, vu::pci_num_regions> region_sizes{0x4000, 0, 0, 0, 0, 0, 0, 0x1000, 0};

} // namespace nvmekit_test
