// libFuzzer target: the vfio-user message decoders on arbitrary client bytes. The first byte
// chooses a command's decoder and a descriptor count; the rest is the message. Every decoder must
// return a value or an errno, never read outside the input, and a decoded value must keep the
// bounds the decoder promises. Every result is checked: an errno is one the protocol replies
// with and travels intact in an error reply; a decoded value agrees with the bytes it came from,
// and what the server encodes from it (the reply echoing it, or the reply it asks for) decodes
// back to the same value.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string_view>
#include <system_error>

#include "fuzz_input.hpp"

#include <nvmekit/transport/vfio_user/protocol.hpp>

namespace {

namespace vu = nvmekit::transport::vfio_user;

void check(bool condition)
{
    if (!condition) {
        std::abort();
    }
}

/// Whether two wire structures hold the same bytes.
template <typename T>
bool same_bytes(const T& a, const T& b)
{
    return std::memcmp(&a, &b, sizeof(T)) == 0;
}

/// A wire structure read from the start of `bytes`, which holds at least its size.
template <typename T>
T load(std::span<const std::byte> bytes)
{
    check(bytes.size() >= sizeof(T));
    T value{};
    std::memcpy(&value, bytes.data(), sizeof(T));
    return value;
}

/// Checks an encoded reply of `size` bytes in `out` to `request` and returns its payload.
std::span<const std::byte> reply_payload(const vu::message_header& request, std::size_t size,
                                         std::span<const std::byte> out, bool error = false)
{
    check(size >= vu::header_size && size <= out.size());
    const auto reply = load<vu::message_header>(out);
    check(reply.message_id == request.message_id && reply.command_code == request.command_code);
    check(reply.message_size == size);
    check(reply.flags.get(vu::message_flags::type) == vu::message_type::reply);
    check(reply.flags.get(vu::message_flags::error) == error &&
          !reply.flags.get(vu::message_flags::no_reply));
    check(error || reply.error_number == 0);
    return out.subspan(vu::header_size, size - vu::header_size);
}

/// An errno a decoder may reply with travels in an error reply unchanged.
template <typename T>
void check_error(const vu::parse_result<T>& result, const vu::message_header& request,
                 std::span<std::byte> out)
{
    if (result) {
        return;
    }
    const std::errc error = result.error();
    check(error == std::errc::invalid_argument || error == std::errc::not_supported ||
          error == std::errc::argument_list_too_long);
    const std::size_t size = vu::encode_error_reply(request, error, out);
    check(reply_payload(request, size, out, true).empty());
    check(load<vu::message_header>(out).error_number == vu::errno_value(error));
}

/// A structure the server echoes in its reply (the DMA_UNMAP reply, a DEVICE_GET_INFO or
/// GET_IRQ_INFO reply of the same shape) decodes back, with the same decoder, to the same bytes.
template <typename T, typename Decode>
void check_echo(const T& value, const vu::message_header& request, std::span<std::byte> out, Decode decode)
{
    const std::size_t size = vu::encode_reply(request, value, out);
    const auto payload = reply_payload(request, size, out);
    check(payload.size() == sizeof(T));
    const auto again = decode(payload);
    check(again.has_value() && same_bytes(*again, value));
}

/// The server's capabilities JSON for `client` names exactly the members the client named, with
/// the server's values.
void check_capabilities_round_trip(const vu::client_capabilities& client, const vu::protocol_limits& limits,
                                   const vu::client_capabilities& reply)
{
    check(reply.has_max_msg_fds == client.has_max_msg_fds && reply.has_pgsizes == client.has_pgsizes &&
          reply.has_max_data_xfer_size == client.has_max_data_xfer_size &&
          reply.has_max_dma_maps == client.has_max_dma_maps);
    check(!reply.has_max_msg_fds || reply.max_msg_fds == limits.max_msg_fds);
    check(!reply.has_max_data_xfer_size || reply.max_data_xfer_size == limits.max_data_xfer_size);
    check(!reply.has_max_dma_maps || reply.max_dma_maps == limits.max_dma_maps);
    check(!reply.has_pgsizes || reply.pgsizes == limits.dma_page_size);
    check(!reply.migration && !reply.write_multiple && !reply.twin_socket);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    if (size < 1) {
        return 0;
    }
    const std::uint8_t selector = data[0];
    const auto bytes = std::as_bytes(std::span{data + 1, size - 1});
    const std::size_t fds = (selector >> 4) % 3;
    const vu::protocol_limits limits{};
    static constexpr std::array<std::uint64_t, vu::pci_num_regions> region_sizes{0x4000, 0, 0,    0, 0,
                                                                                 0,      0, 4096, 0};
    static constexpr std::array<std::uint32_t, vu::pci_num_irqs> irq_counts{1, 0, 65, 0, 0};
    // Large enough for any reply built here: a REGION_READ of a whole 16 KiB region.
    static std::array<std::byte, vu::header_size + sizeof(vu::region_access) + 0x4000> out{};

    // The header: accepted exactly when the bytes make a command of a size the limits allow.
    const auto header = vu::parse_header(bytes, limits);
    check_error(header, vu::message_header{}, out);
    if (bytes.size() >= vu::header_size) {
        const auto raw = load<vu::message_header>(bytes);
        const bool acceptable = raw.message_size >= vu::header_size &&
                                raw.message_size <= limits.max_message_size() &&
                                raw.flags.get(vu::message_flags::type) == vu::message_type::command;
        check(header.has_value() == acceptable);
        check(!header || same_bytes(*header, raw));
    } else {
        check(!header);
    }
    vu::message_header request{};
    request.message_id = static_cast<std::uint16_t>(size);
    request.command_code = static_cast<vu::command>(selector % 11);
    if (header) {
        request = *header;
    }

    switch (selector % 11) {
    case 0: {
        const auto version = vu::decode_version(bytes, fds, limits);
        check_error(version, request, out);
        if (!version) {
            break;
        }
        check(version->major == load<vu::version_payload>(bytes).major &&
              version->minor == load<vu::version_payload>(bytes).minor);
        const auto negotiated = vu::negotiate_version(*version);
        check_error(negotiated, request, out);
        check(negotiated.has_value() == (version->major == vu::protocol_major));
        if (!negotiated) {
            break;
        }
        check(negotiated->major == vu::protocol_major && negotiated->minor <= vu::protocol_minor &&
              negotiated->minor <= version->minor);
        // The VERSION reply is a VERSION payload the decoder accepts, with the negotiated version
        // and the server's values for the capabilities the client named.
        const std::size_t reply_size =
            vu::encode_version_reply(request, *negotiated, version->capabilities, limits, out);
        const auto reply = vu::decode_version(reply_payload(request, reply_size, out), 0, limits);
        check(reply.has_value() && reply->major == negotiated->major && reply->minor == negotiated->minor);
        check_capabilities_round_trip(version->capabilities, limits, reply->capabilities);
        break;
    }
    case 1: {
        const auto map = vu::decode_dma_map(bytes, fds, limits);
        check_error(map, request, out);
        if (map) {
            check(map->size != 0 && map->address + (map->size - 1) >= map->address);
            check(same_bytes(*map, load<vu::dma_map>(bytes)));
            check_echo(*map, request, out,
                       [&](auto payload) { return vu::decode_dma_map(payload, fds, limits); });
        }
        break;
    }
    case 2: {
        const auto unmap = vu::decode_dma_unmap(bytes, fds, limits);
        check_error(unmap, request, out);
        if (unmap) {
            check(fds == 0 && bytes.size() == sizeof(vu::dma_unmap) && unmap->argsz >= sizeof(vu::dma_unmap));
            check(same_bytes(*unmap, load<vu::dma_unmap>(bytes)));
            if (unmap->flags.get(vu::dma_unmap_flags::all)) {
                check(unmap->address == 0 && unmap->size == 0);
            } else {
                check(unmap->size != 0 && unmap->address + (unmap->size - 1) >= unmap->address &&
                      unmap->address % limits.dma_page_size == 0 && unmap->size % limits.dma_page_size == 0);
            }
            check_echo(*unmap, request, out,
                       [&](auto payload) { return vu::decode_dma_unmap(payload, 0, limits); });
        }
        break;
    }
    case 3: {
        const auto info = vu::decode_device_get_info(bytes, fds);
        check_error(info, request, out);
        if (info) {
            check(fds == 0 && info->argsz >= sizeof(vu::device_info) &&
                  same_bytes(*info, load<vu::device_info>(bytes)));
            check_echo(*info, request, out,
                       [](auto payload) { return vu::decode_device_get_info(payload, 0); });
        }
        break;
    }
    case 4: {
        const auto info = vu::decode_region_info(bytes, fds, vu::pci_num_regions);
        check_error(info, request, out);
        if (!info) {
            break;
        }
        check(info->index < vu::pci_num_regions && same_bytes(*info, load<vu::region_info>(bytes)));
        // The reply: the region's description, with a sparse mmap capability of up to two areas
        // when the client's argsz leaves room for it.
        vu::region_info description{};
        description.index = info->index;
        description.size = region_sizes[info->index];
        description.flags.set(vu::region_info_flags::read, true);
        const std::array<vu::sparse_mmap_area, 2> areas{{{0x1000, 0x1000}, {0x3000, 0x1000}}};
        const auto listed = std::span{areas}.first(info->cap_offset % 3);
        const std::size_t reply_size =
            vu::encode_region_info_reply(request, info->argsz, description, listed, out);
        const auto payload = reply_payload(request, reply_size, out);
        const auto again =
            vu::decode_region_info(payload.first(sizeof(vu::region_info)), 0, vu::pci_num_regions);
        check(again.has_value() && again->index == description.index && again->size == description.size);
        const std::size_t full = vu::region_info_full_size(listed.size());
        const bool with_caps = !listed.empty() && info->argsz >= full;
        check(again->argsz == full && again->flags.get(vu::region_info_flags::caps) == with_caps);
        check(payload.size() == (with_caps ? full : sizeof(vu::region_info)));
        check(again->cap_offset == (with_caps ? sizeof(vu::region_info) : 0U));
        if (with_caps) {
            const auto cap = load<vu::sparse_mmap_cap>(payload.subspan(sizeof(vu::region_info)));
            check(cap.header.id == vu::region_cap_sparse_mmap && cap.header.next == 0 &&
                  cap.nr_areas == listed.size());
            const auto listed_back = payload.subspan(sizeof(vu::region_info) + sizeof(vu::sparse_mmap_cap));
            check(std::memcmp(listed_back.data(), listed.data(), listed.size_bytes()) == 0);
        }
        break;
    }
    case 5: {
        const auto info = vu::decode_irq_info(bytes, fds, vu::pci_num_irqs);
        check_error(info, request, out);
        if (info) {
            check(fds == 0 && info->index < vu::pci_num_irqs && info->argsz >= sizeof(vu::irq_info) &&
                  same_bytes(*info, load<vu::irq_info>(bytes)));
            check_echo(*info, request, out,
                       [](auto payload) { return vu::decode_irq_info(payload, 0, vu::pci_num_irqs); });
        }
        break;
    }
    case 6: {
        const auto set = vu::decode_set_irqs(bytes, fds, irq_counts);
        check_error(set, request, out);
        if (set) {
            check(std::uint64_t{set->fields.start} + set->fields.count <= irq_counts[set->fields.index]);
            check(same_bytes(set->fields, load<vu::irq_set>(bytes)));
            check(set->bools.size() == (set->data == vu::irq_set_data::boolean ? set->fields.count : 0U));
            check(set->fd_count == (set->data == vu::irq_set_data::eventfd ? fds : 0U));
            // Its reply is a header alone.
            check(reply_payload(request, vu::encode_reply(request, std::span<const std::byte>{}, out), out)
                      .empty());
        }
        break;
    }
    case 7: {
        const auto read = vu::decode_region_read(bytes, fds, region_sizes, limits);
        check_error(read, request, out);
        if (read) {
            check(read->count != 0 && read->offset + read->count <= region_sizes[read->region]);
            check(same_bytes(*read, load<vu::region_access>(bytes)));
            // The reply carries the access and its data: the shape of a REGION_WRITE request.
            std::array<std::byte, 0x4000> region{};
            for (std::size_t i = 0; i < read->count; ++i) {
                region[i] = static_cast<std::byte>(read->offset + i);
            }
            const auto data_read = std::span<const std::byte>{region}.first(read->count);
            const std::size_t reply_size = vu::encode_region_read_reply(request, *read, data_read, out);
            const auto again =
                vu::decode_region_write(reply_payload(request, reply_size, out), 0, region_sizes, limits);
            check(again.has_value() && same_bytes(again->access, *read));
            check(std::equal(again->data.begin(), again->data.end(), data_read.begin(), data_read.end()));
        }
        break;
    }
    case 8: {
        const auto write = vu::decode_region_write(bytes, fds, region_sizes, limits);
        check_error(write, request, out);
        if (write) {
            if (write->data.size() != write->access.count ||
                write->access.offset + write->access.count > region_sizes[write->access.region]) {
                std::abort();
            }
            check(same_bytes(write->access, load<vu::region_access>(bytes)));
            check(write->data.data() == bytes.data() + sizeof(vu::region_access));
            // The reply echoes the access alone: the shape of a REGION_READ request.
            check_echo(write->access, request, out, [&](auto payload) {
                return vu::decode_region_read(payload, 0, region_sizes, limits);
            });
        }
        break;
    }
    case 9: {
        const std::errc reset = vu::check_device_reset(bytes, fds);
        check((reset == std::errc{}) == (bytes.empty() && fds == 0));
        check(reset == std::errc{} || reset == std::errc::invalid_argument);
        break;
    }
    default: {
        vu::client_capabilities caps{};
        const std::string_view text{reinterpret_cast<const char*>(data + 1), size - 1};
        if (vu::detail::parse_capabilities_json(text, caps)) {
            // The server's answer to these capabilities parses and names the same members.
            std::array<char, vu::max_version_reply_json> json{};
            const std::size_t json_size = vu::write_capabilities_json(caps, limits, json);
            vu::client_capabilities reply{};
            check(vu::detail::parse_capabilities_json(std::string_view{json.data(), json_size}, reply));
            check_capabilities_round_trip(caps, limits, reply);
        }
        break;
    }
    }
    return 0;
}
