// libFuzzer target: the vfio-user message decoders on arbitrary client bytes. The first byte
// chooses a command's decoder and a descriptor count; the rest is the message. Every decoder must
// return a value or an errno, never read outside the input, and a decoded value must keep the
// bounds the decoder promises.

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "fuzz_input.hpp"

#include <nvmekit/transport/vfio_user/protocol.hpp>

namespace vu = nvmekit::transport::vfio_user;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    if (size < 1) {
        return 0;
    }
    const std::uint8_t selector = data[0];
    const auto bytes = std::as_bytes(std::span{data + 1, size - 1});
    const std::size_t fds = (selector >> 4) % 3;
    const vu::protocol_limits limits{};
    static constexpr std::array<std::uint64_t, vu::pci_num_regions> region_sizes{0x4000, 0, 0, 0, 0, 0, 0, 4096, 0};
    static constexpr std::array<std::uint32_t, vu::pci_num_irqs> irq_counts{1, 0, 65, 0, 0};
    std::array<std::byte, 2048> out{};
    const vu::message_header request{};

    static_cast<void>(vu::parse_header(bytes, limits));
    switch (selector % 11) {
    case 0:
        if (const auto version = vu::decode_version(bytes, fds, limits)) {
            if (const auto negotiated = vu::negotiate_version(*version)) {
                static_cast<void>(vu::encode_version_reply(request, *negotiated, version->capabilities, limits, out));
            }
        }
        break;
    case 1:
        if (const auto map = vu::decode_dma_map(bytes, fds, limits)) {
            if (map->size == 0 || map->address + (map->size - 1) < map->address) {
                std::abort();
            }
        }
        break;
    case 2: static_cast<void>(vu::decode_dma_unmap(bytes, fds, limits)); break;
    case 3: static_cast<void>(vu::decode_device_get_info(bytes, fds)); break;
    case 4:
        if (const auto info = vu::decode_region_info(bytes, fds, vu::pci_num_regions)) {
            if (info->index >= vu::pci_num_regions) {
                std::abort();
            }
        }
        break;
    case 5: static_cast<void>(vu::decode_irq_info(bytes, fds, vu::pci_num_irqs)); break;
    case 6:
        if (const auto set = vu::decode_set_irqs(bytes, fds, irq_counts)) {
            if (std::uint64_t{set->fields.start} + set->fields.count > irq_counts[set->fields.index]) {
                std::abort();
            }
        }
        break;
    case 7:
        if (const auto read = vu::decode_region_read(bytes, fds, region_sizes, limits)) {
            if (read->offset + read->count > region_sizes[read->region]) {
                std::abort();
            }
        }
        break;
    case 8:
        if (const auto write = vu::decode_region_write(bytes, fds, region_sizes, limits)) {
            if (write->data.size() != write->access.count ||
                write->access.offset + write->access.count > region_sizes[write->access.region]) {
                std::abort();
            }
        }
        break;
    case 9: static_cast<void>(vu::check_device_reset(bytes, fds)); break;
    default: {
        vu::client_capabilities caps{};
        const std::string_view text{reinterpret_cast<const char*>(data + 1), size - 1};
        static_cast<void>(vu::detail::parse_capabilities_json(text, caps));
        break;
    }
    }
    return 0;
}
