#pragma once
/// Decoding what a vfio-user client sends: parse_result (a decoded value, or the errno value to
/// put in the reply's error field), parse_header for the fixed header of every command (and
/// parse_message_header for one that may also be a reply), one decoder per command payload:
/// decode_version and negotiate_version, decode_dma_map, decode_dma_unmap,
/// decode_device_get_info, decode_region_info, decode_irq_info, decode_set_irqs,
/// decode_region_read, decode_region_write and check_device_reset; and the client's replies to
/// the server's own requests: is_reply_to, decode_dma_read_reply and check_dma_write_reply.
///
/// Every decoder takes the payload (the bytes after the 16-byte header, exactly
/// `message_size - 16` of them) and the number of file descriptors that arrived with the message
/// as SCM_RIGHTS data, checks every field against the protocol and protocol_limits, and returns
/// either the decoded request or the errno value to put in the reply's error field. Nothing a
/// client sends is trusted.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>

#include <nvmekit/config.hpp>
#include <nvmekit/transport/vfio_user/protocol/capabilities.hpp>
#include <nvmekit/transport/vfio_user/protocol/limits.hpp>
#include <nvmekit/transport/vfio_user/protocol/wire.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace transport::vfio_user {

/// A decoded value, or the errno (EINVAL, ENOTSUP, E2BIG ...) that the reply reports instead.
template <typename T>
class parse_result {
public:
    // NOLINT: implicit by design
    constexpr parse_result(T value) noexcept(std::is_nothrow_move_constructible_v<T>)
        : value_{std::move(value)}
    {}
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

/// Checks the fixed header of a client message that may be a command or a reply (to one of the
/// server's own requests): at least 16 bytes in `bytes` (only those are read), message size >= 16
/// and <= limits.max_message_size(), type Command or Reply. An error here means the byte stream
/// cannot be trusted: the transport closes the connection.
[[nodiscard]] inline parse_result<message_header>
parse_message_header(std::span<const std::byte> bytes, const protocol_limits& limits = {}) noexcept
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
    const message_type type = header.flags.get(message_flags::type);
    if (type != message_type::command && type != message_type::reply) {
        return std::errc::invalid_argument;
    }
    return header;
}

/// parse_message_header for a message that must be a command. The command itself is not
/// checked, so an unknown one can still be answered (ENOTSUP) with its message ID.
[[nodiscard]] inline parse_result<message_header> parse_header(std::span<const std::byte> bytes,
                                                               const protocol_limits& limits = {}) noexcept
{
    const auto header = parse_message_header(bytes, limits);
    if (header && header->flags.get(message_flags::type) != message_type::command) {
        return std::errc::invalid_argument;
    }
    return header;
}

/// A decoded VERSION request.
struct version_request {
    std::uint16_t major = 0;
    std::uint16_t minor = 0;
    client_capabilities capabilities{};
};

namespace detail {

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
[[nodiscard]] constexpr parse_result<version_payload>
negotiate_version(const version_request& request) noexcept
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
[[nodiscard]] inline parse_result<dma_map> decode_dma_map(std::span<const std::byte> payload,
                                                          std::size_t fd_count,
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
    if (map.size == 0 || !detail::fits_u64(map.address, map.size) ||
        !detail::fits_u64(map.offset, map.size) || !detail::is_multiple(map.address, page) ||
        !detail::is_multiple(map.size, page) || !detail::is_multiple(map.offset, page)) {
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
[[nodiscard]] inline parse_result<irq_info>
decode_irq_info(std::span<const std::byte> payload, std::size_t fd_count, std::uint32_t num_irqs) noexcept
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
[[nodiscard]] inline parse_result<irq_set_request>
decode_set_irqs(std::span<const std::byte> payload, std::size_t fd_count,
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
    if (access.count == 0 || access.region >= region_sizes.size() || !fits_u64(access.offset, access.count) ||
        access.offset + access.count > region_sizes[access.region]) {
        return std::errc::invalid_argument;
    }
    return {};
}
} // namespace detail

/// Decodes a REGION_READ request; `region_sizes[i]` is the size of region i (0 when absent).
/// E2BIG: count above limits.max_data_xfer_size. EINVAL: payload not 16 bytes, descriptors
/// attached, count 0, region out of range, or offset + count past the region's end.
[[nodiscard]] inline parse_result<region_access>
decode_region_read(std::span<const std::byte> payload, std::size_t fd_count,
                   std::span<const std::uint64_t> region_sizes, const protocol_limits& limits = {}) noexcept
{
    if (payload.size() != sizeof(region_access) || fd_count != 0) {
        return std::errc::invalid_argument;
    }
    const auto access = detail::load<region_access>(payload);
    if (const std::errc error = detail::check_region_access(access, region_sizes, limits);
        error != std::errc{}) {
        return error;
    }
    return access;
}

/// Decodes a REGION_WRITE request, with the same checks as decode_region_read plus: the payload
/// is exactly 16 + count bytes (EINVAL otherwise).
[[nodiscard]] inline parse_result<region_write_request>
decode_region_write(std::span<const std::byte> payload, std::size_t fd_count,
                    std::span<const std::uint64_t> region_sizes, const protocol_limits& limits = {}) noexcept
{
    if (payload.size() < sizeof(region_access) || fd_count != 0) {
        return std::errc::invalid_argument;
    }
    const auto access = detail::load<region_access>(payload);
    if (const std::errc error = detail::check_region_access(access, region_sizes, limits);
        error != std::errc{}) {
        return error;
    }
    if (payload.size() - sizeof(region_access) != access.count) {
        return std::errc::invalid_argument;
    }
    return region_write_request{access, payload.subspan(sizeof(region_access))};
}

/// Whether `reply` (a header parse_message_header accepted) is the reply to the server's
/// request `request`: type Reply, the request's message ID and command ("vfio-user: Header").
[[nodiscard]] constexpr bool is_reply_to(const message_header& reply, const message_header& request) noexcept
{
    return reply.flags.get(message_flags::type) == message_type::reply &&
           reply.message_id == request.message_id && reply.command_code == request.command_code;
}

namespace detail {
/// The errno of an error reply (EIO when the client left it 0, which the protocol allows), or
/// std::errc{} when the reply is not an error.
[[nodiscard]] constexpr std::errc reply_error(const message_header& reply) noexcept
{
    if (!reply.flags.get(message_flags::error)) {
        return std::errc{};
    }
    return reply.error_number == 0 ? std::errc::io_error : static_cast<std::errc>(reply.error_number);
}
} // namespace detail

/// Decodes the client's reply to the server's DMA_READ `request` ("vfio-user: VFIO_USER_DMA_READ"):
/// the data read, a view into `payload`. The reply's errno when it is an error reply (EIO when it
/// carries none). EINVAL: descriptors attached, a payload that is not 16 + request.count bytes,
/// or an address or count that differs from the request's.
[[nodiscard]] inline parse_result<std::span<const std::byte>>
decode_dma_read_reply(const message_header& reply, std::span<const std::byte> payload, std::size_t fd_count,
                      const dma_access& request) noexcept
{
    if (const std::errc error = detail::reply_error(reply); error != std::errc{}) {
        return error;
    }
    if (fd_count != 0 || payload.size() < sizeof(dma_access) ||
        payload.size() - sizeof(dma_access) != request.count) {
        return std::errc::invalid_argument;
    }
    const auto echoed = detail::load<dma_access>(payload);
    if (echoed.address != request.address || echoed.count != request.count) {
        return std::errc::invalid_argument;
    }
    return payload.subspan(sizeof(dma_access));
}

/// Checks the client's reply to the server's DMA_WRITE `request` ("vfio-user: VFIO_USER_DMA_WRITE"):
/// std::errc{} when the write was done. The reply's errno when it is an error reply (EIO when it
/// carries none). The payload may be empty (QEMU's hw/vfio-user/pci.c replies with the header
/// alone), or echo the request's address and count in 16 bytes (as libvfio-user expects) or in 12
/// (the 4-byte count the specification's reply table shows); anything else, a differing echo or
/// descriptors attached is EINVAL.
[[nodiscard]] inline std::errc check_dma_write_reply(const message_header& reply,
                                                     std::span<const std::byte> payload, std::size_t fd_count,
                                                     const dma_access& request) noexcept
{
    if (const std::errc error = detail::reply_error(reply); error != std::errc{}) {
        return error;
    }
    if (fd_count != 0) {
        return std::errc::invalid_argument;
    }
    if (payload.empty()) {
        return std::errc{};
    }
    constexpr std::size_t short_echo = sizeof(std::uint64_t) + sizeof(std::uint32_t);
    if (payload.size() != sizeof(dma_access) && payload.size() != short_echo) {
        return std::errc::invalid_argument;
    }
    const auto address = detail::load<std::uint64_t>(payload);
    const std::uint64_t count = payload.size() == short_echo
                                    ? detail::load<std::uint32_t>(payload.subspan(sizeof(std::uint64_t)))
                                    : detail::load<std::uint64_t>(payload.subspan(sizeof(std::uint64_t)));
    return address == request.address && count == request.count ? std::errc{} : std::errc::invalid_argument;
}

/// Checks a DEVICE_RESET request: no payload, no descriptors (EINVAL otherwise).
[[nodiscard]] constexpr std::errc check_device_reset(std::span<const std::byte> payload,
                                                     std::size_t fd_count) noexcept
{
    return payload.empty() && fd_count == 0 ? std::errc{} : std::errc::invalid_argument;
}

} // namespace transport::vfio_user
NVMEKIT_END_NAMESPACE
