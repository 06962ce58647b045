#pragma once
/// Encoding the vfio-user server's replies: the reply header for a request, error replies,
/// replies whose payload is bytes or one wire structure, and the replies whose payload is built
/// here: VERSION (the negotiated version and the server's capabilities JSON, written by
/// write_capabilities_json), DEVICE_GET_REGION_INFO (with its sparse mmap capability) and
/// REGION_READ. And the server's own requests to the client: DMA_READ and DMA_WRITE. Every
/// encoder writes into a buffer the caller sized (version_reply_capacity, region_info_full_size)
/// and returns the message's size.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>
#include <system_error>

#include <nvmekit/config.hpp>
#include <nvmekit/spec/bits.hpp>
#include <nvmekit/transport/vfio_user/protocol/capabilities.hpp>
#include <nvmekit/transport/vfio_user/protocol/limits.hpp>
#include <nvmekit/transport/vfio_user/protocol/wire.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace transport::vfio_user {

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
inline std::size_t encode_error_reply(const message_header& request, std::errc error,
                                      std::span<std::byte> out) noexcept
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
inline std::size_t encode_reply(const message_header& request, const Payload& payload,
                                std::span<std::byte> out) noexcept
{
    return encode_reply(request, std::as_bytes(std::span{&payload, 1}), out);
}

/// Largest JSON text encode_version_reply writes, NUL excluded.
inline constexpr std::size_t max_version_reply_json = 160;
/// Output size that always holds a VERSION reply.
inline constexpr std::size_t version_reply_capacity =
    header_size + sizeof(version_payload) + max_version_reply_json + 1;

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
constexpr std::size_t write_capabilities_json(const client_capabilities& client,
                                              const protocol_limits& limits,
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
    return sizeof(region_info) +
           (area_count == 0 ? 0 : sizeof(sparse_mmap_cap) + area_count * sizeof(sparse_mmap_area));
}

/// Writes the GET_REGION_INFO reply for `info` (flags, index, size, offset; argsz and
/// cap_offset are filled here) with a sparse mmap capability listing `areas` when not empty.
/// When the request's argsz is too small for the capability, the reply carries the structure
/// alone with argsz = the full size, cap_offset 0 and the Caps flag clear, so the client asks
/// again (Linux VFIO_DEVICE_GET_REGION_INFO semantics; QEMU's vfio-user client refuses a reply
/// whose Caps flag is set without a capability offset inside it). `out` holds header_size +
/// region_info_full_size.
inline std::size_t encode_region_info_reply(const message_header& request, std::uint32_t request_argsz,
                                            region_info info, std::span<const sparse_mmap_area> areas,
                                            std::span<std::byte> out) noexcept
{
    const std::size_t full = region_info_full_size(areas.size());
    const bool with_caps = !areas.empty() && request_argsz >= full;
    const std::size_t payload_size = with_caps ? full : sizeof(region_info);
    NVMEKIT_ASSERT(out.size() >= header_size + payload_size,
                   "encode_region_info_reply: output buffer too small");
    info.argsz = static_cast<std::uint32_t>(full);
    info.flags.set(region_info_flags::caps, with_caps);
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
                                            std::span<const std::byte> data,
                                            std::span<std::byte> out) noexcept
{
    NVMEKIT_ASSERT(data.size() == access.count, "encode_region_read_reply: data size differs from count");
    const std::size_t payload_size = sizeof(region_access) + data.size();
    NVMEKIT_ASSERT(out.size() >= header_size + payload_size,
                   "encode_region_read_reply: output buffer too small");
    const message_header reply = make_reply_header(request, payload_size);
    std::memcpy(out.data(), &reply, header_size);
    std::memcpy(out.data() + header_size, &access, sizeof(region_access));
    if (!data.empty()) {
        std::memcpy(out.data() + header_size + sizeof(region_access), data.data(), data.size());
    }
    return header_size + payload_size;
}

/// The header of a request the server sends (DMA_READ, DMA_WRITE): type Command, a reply wanted.
[[nodiscard]] constexpr message_header make_request_header(command code, std::uint16_t message_id,
                                                           std::size_t payload_size) noexcept
{
    message_header request{};
    request.message_id = message_id;
    request.command_code = code;
    request.message_size = static_cast<std::uint32_t>(header_size + payload_size);
    request.flags.set(message_flags::type, message_type::command);
    return request;
}

/// Writes a DMA_READ request for `access` into `out` (at least 32 bytes); returns 32.
inline std::size_t encode_dma_read_request(std::uint16_t message_id, const dma_access& access,
                                           std::span<std::byte> out) noexcept
{
    NVMEKIT_ASSERT(out.size() >= header_size + sizeof(dma_access),
                   "encode_dma_read_request: output buffer too small");
    const message_header request = make_request_header(command::dma_read, message_id, sizeof(dma_access));
    std::memcpy(out.data(), &request, header_size);
    std::memcpy(out.data() + header_size, &access, sizeof(dma_access));
    return header_size + sizeof(dma_access);
}

/// Writes a DMA_WRITE request of `data` to client address `address` into `out` (at least
/// 32 + data.size() bytes); returns its size.
inline std::size_t encode_dma_write_request(std::uint16_t message_id, std::uint64_t address,
                                            std::span<const std::byte> data,
                                            std::span<std::byte> out) noexcept
{
    const std::size_t payload_size = sizeof(dma_access) + data.size();
    NVMEKIT_ASSERT(out.size() >= header_size + payload_size,
                   "encode_dma_write_request: output buffer too small");
    const message_header request = make_request_header(command::dma_write, message_id, payload_size);
    const dma_access access{address, data.size()};
    std::memcpy(out.data(), &request, header_size);
    std::memcpy(out.data() + header_size, &access, sizeof(dma_access));
    if (!data.empty()) {
        std::memcpy(out.data() + header_size + sizeof(dma_access), data.data(), data.size());
    }
    return header_size + payload_size;
}

} // namespace transport::vfio_user
NVMEKIT_END_NAMESPACE
