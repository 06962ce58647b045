#include <nvmekit/transport/vfio_user/protocol.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <gtest/gtest.h>

#include "../../wire_bytes.hpp"

namespace vu = nvmekit::transport::vfio_user;
using nvmekit_test::bytes_of;
using nvmekit_test::le_at;

namespace {

constexpr std::errc einval = std::errc::invalid_argument;
constexpr std::errc enotsup = std::errc::not_supported;
constexpr std::errc e2big = std::errc::argument_list_too_long;

template <typename T>
std::vector<std::byte> payload_of(const T& value)
{
    std::vector<std::byte> bytes(sizeof(T));
    std::memcpy(bytes.data(), &value, sizeof(T));
    return bytes;
}

std::vector<std::byte> with_tail(std::vector<std::byte> bytes, std::size_t extra, std::byte fill = std::byte{0xAB})
{
    bytes.insert(bytes.end(), extra, fill);
    return bytes;
}

std::vector<std::byte> truncated(std::vector<std::byte> bytes, std::size_t size)
{
    bytes.resize(size);
    return bytes;
}

std::vector<std::byte> version_payload_with(std::uint16_t major, std::uint16_t minor, std::string_view data)
{
    std::vector<std::byte> bytes = payload_of(vu::version_payload{major, minor});
    for (const char c : data) {
        bytes.push_back(static_cast<std::byte>(c));
    }
    return bytes;
}

/// A NUL-terminated JSON version payload.
std::vector<std::byte> version_json(std::string_view json)
{
    return with_tail(version_payload_with(0, 0, json), 1, std::byte{0});
}

vu::message_header command_header(vu::command cmd, std::uint32_t size, std::uint16_t id = 7)
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

constexpr std::string_view qemu_capabilities =
    R"({"capabilities":{"migration":{"pgsize":4096,"max_bitmap_size":268435456},"max_msg_fds":16,)"
    R"("max_data_xfer_size":1048576,"pgsizes":4096,"max_dma_maps":65535,"write_multiple":true}})";

const std::array<std::uint32_t, vu::pci_num_irqs> irq_counts{1, 0, 64, 1, 1};
const std::array<std::uint64_t, vu::pci_num_regions> region_sizes{0x4000, 0, 0, 0, 0, 0, 0, 0x1000, 0};

} // namespace

TEST(vfio_user_protocol, command_ids_and_names_follow_the_specification)
{
    using enum vu::command;
    const std::array<std::pair<vu::command, std::string_view>, 18> table{{
        {version, "VFIO_USER_VERSION"},
        {dma_map, "VFIO_USER_DMA_MAP"},
        {dma_unmap, "VFIO_USER_DMA_UNMAP"},
        {device_get_info, "VFIO_USER_DEVICE_GET_INFO"},
        {device_get_region_info, "VFIO_USER_DEVICE_GET_REGION_INFO"},
        {device_get_region_io_fds, "VFIO_USER_DEVICE_GET_REGION_IO_FDS"},
        {device_get_irq_info, "VFIO_USER_DEVICE_GET_IRQ_INFO"},
        {device_set_irqs, "VFIO_USER_DEVICE_SET_IRQS"},
        {region_read, "VFIO_USER_REGION_READ"},
        {region_write, "VFIO_USER_REGION_WRITE"},
        {dma_read, "VFIO_USER_DMA_READ"},
        {dma_write, "VFIO_USER_DMA_WRITE"},
        {device_reset, "VFIO_USER_DEVICE_RESET"},
        {dirty_pages, "VFIO_USER_DIRTY_PAGES"},
        {region_write_multi, "VFIO_USER_REGION_WRITE_MULTI"},
        {device_feature, "VFIO_USER_DEVICE_FEATURE"},
        {mig_data_read, "VFIO_USER_MIG_DATA_READ"},
        {mig_data_write, "VFIO_USER_MIG_DATA_WRITE"},
    }};
    for (std::size_t i = 0; i < table.size(); ++i) {
        EXPECT_EQ(static_cast<unsigned>(table[i].first), i + 1);
        EXPECT_EQ(vu::name(table[i].first), table[i].second);
    }
    EXPECT_EQ(vu::name(static_cast<vu::command>(0)), "");
    EXPECT_EQ(vu::name(static_cast<vu::command>(19)), "");
}

TEST(vfio_user_protocol, pci_region_and_irq_indexes_match_linux_vfio)
{
    EXPECT_EQ(static_cast<unsigned>(vu::region_index::bar0), 0U);
    EXPECT_EQ(static_cast<unsigned>(vu::region_index::bar5), 5U);
    EXPECT_EQ(static_cast<unsigned>(vu::region_index::rom), 6U);
    EXPECT_EQ(static_cast<unsigned>(vu::region_index::config), 7U);
    EXPECT_EQ(static_cast<unsigned>(vu::region_index::vga), 8U);
    EXPECT_EQ(vu::pci_num_regions, 9U);
    EXPECT_EQ(static_cast<unsigned>(vu::irq_index::intx), 0U);
    EXPECT_EQ(static_cast<unsigned>(vu::irq_index::msi), 1U);
    EXPECT_EQ(static_cast<unsigned>(vu::irq_index::msix), 2U);
    EXPECT_EQ(static_cast<unsigned>(vu::irq_index::err), 3U);
    EXPECT_EQ(static_cast<unsigned>(vu::irq_index::req), 4U);
    EXPECT_EQ(vu::pci_num_irqs, 5U);
}

TEST(vfio_user_protocol, header_layout_matches_the_specification)
{
    vu::message_header header{};
    header.message_id = 0x1234;
    header.command_code = vu::command::region_write;
    header.message_size = 0x89ABCDEF;
    header.flags.set(vu::message_flags::type, vu::message_type::reply);
    header.flags.set(vu::message_flags::no_reply, true);
    header.flags.set(vu::message_flags::error, true);
    header.error_number = 0x11223344;
    const auto bytes = bytes_of(header);
    EXPECT_EQ(le_at<std::uint16_t>(bytes, 0), 0x1234U);
    EXPECT_EQ(le_at<std::uint16_t>(bytes, 2), 10U);
    EXPECT_EQ(le_at<std::uint32_t>(bytes, 4), 0x89ABCDEFU);
    EXPECT_EQ(le_at<std::uint32_t>(bytes, 8), 0x31U);
    EXPECT_EQ(le_at<std::uint32_t>(bytes, 12), 0x11223344U);

    EXPECT_EQ(vu::message_flags{0x10}.get(vu::message_flags::no_reply), true);
    EXPECT_EQ(vu::message_flags{0x20}.get(vu::message_flags::error), true);
    EXPECT_EQ(vu::message_flags{0x0F}.get(vu::message_flags::type), static_cast<vu::message_type>(0xF));
}

TEST(vfio_user_protocol, payload_layouts_match_the_specification_offsets)
{
    const auto map = bytes_of(vu::dma_map{0x20, vu::dma_map_flags{3}, 0x1111, 0x2222, 0x3333});
    EXPECT_EQ(le_at<std::uint32_t>(map, 0), 0x20U);
    EXPECT_EQ(le_at<std::uint32_t>(map, 4), 3U);
    EXPECT_EQ(le_at<std::uint64_t>(map, 8), 0x1111U);
    EXPECT_EQ(le_at<std::uint64_t>(map, 16), 0x2222U);
    EXPECT_EQ(le_at<std::uint64_t>(map, 24), 0x3333U);

    const auto unmap = bytes_of(vu::dma_unmap{0x18, vu::dma_unmap_flags{2}, 0x4444, 0x5555});
    EXPECT_EQ(le_at<std::uint32_t>(unmap, 0), 0x18U);
    EXPECT_EQ(le_at<std::uint32_t>(unmap, 4), 2U);
    EXPECT_EQ(le_at<std::uint64_t>(unmap, 8), 0x4444U);
    EXPECT_EQ(le_at<std::uint64_t>(unmap, 16), 0x5555U);

    const auto info = bytes_of(vu::device_info{16, vu::device_info_flags{3}, 9, 5});
    EXPECT_EQ(le_at<std::uint32_t>(info, 0), 16U);
    EXPECT_EQ(le_at<std::uint32_t>(info, 4), 3U);
    EXPECT_EQ(le_at<std::uint32_t>(info, 8), 9U);
    EXPECT_EQ(le_at<std::uint32_t>(info, 12), 5U);

    const auto region = bytes_of(vu::region_info{80, vu::region_info_flags{0xF}, 7, 32, 0x6666, 0x7777});
    EXPECT_EQ(le_at<std::uint32_t>(region, 0), 80U);
    EXPECT_EQ(le_at<std::uint32_t>(region, 4), 0xFU);
    EXPECT_EQ(le_at<std::uint32_t>(region, 8), 7U);
    EXPECT_EQ(le_at<std::uint32_t>(region, 12), 32U);
    EXPECT_EQ(le_at<std::uint64_t>(region, 16), 0x6666U);
    EXPECT_EQ(le_at<std::uint64_t>(region, 24), 0x7777U);

    const auto cap = bytes_of(vu::sparse_mmap_cap{{1, 1, 0x40}, 2, 0});
    EXPECT_EQ(le_at<std::uint16_t>(cap, 0), 1U);
    EXPECT_EQ(le_at<std::uint16_t>(cap, 2), 1U);
    EXPECT_EQ(le_at<std::uint32_t>(cap, 4), 0x40U);
    EXPECT_EQ(le_at<std::uint32_t>(cap, 8), 2U);
    const auto area = bytes_of(vu::sparse_mmap_area{0x1000, 0x3000});
    EXPECT_EQ(le_at<std::uint64_t>(area, 0), 0x1000U);
    EXPECT_EQ(le_at<std::uint64_t>(area, 8), 0x3000U);

    const auto irq = bytes_of(vu::irq_info{16, vu::irq_info_flags{0xB}, 2, 64});
    EXPECT_EQ(le_at<std::uint32_t>(irq, 4), 0xBU);
    EXPECT_EQ(le_at<std::uint32_t>(irq, 8), 2U);
    EXPECT_EQ(le_at<std::uint32_t>(irq, 12), 64U);

    const auto set = bytes_of(vu::irq_set{20, vu::irq_set_flags{0x24}, 2, 3, 4});
    EXPECT_EQ(le_at<std::uint32_t>(set, 0), 20U);
    EXPECT_EQ(le_at<std::uint32_t>(set, 4), 0x24U);
    EXPECT_EQ(le_at<std::uint32_t>(set, 8), 2U);
    EXPECT_EQ(le_at<std::uint32_t>(set, 12), 3U);
    EXPECT_EQ(le_at<std::uint32_t>(set, 16), 4U);

    const auto access = bytes_of(vu::region_access{0x8888, 7, 4});
    EXPECT_EQ(le_at<std::uint64_t>(access, 0), 0x8888U);
    EXPECT_EQ(le_at<std::uint32_t>(access, 8), 7U);
    EXPECT_EQ(le_at<std::uint32_t>(access, 12), 4U);

    const auto version = bytes_of(vu::version_payload{0x0102, 0x0304});
    EXPECT_EQ(le_at<std::uint16_t>(version, 0), 0x0102U);
    EXPECT_EQ(le_at<std::uint16_t>(version, 2), 0x0304U);
}

TEST(vfio_user_protocol, flag_bits_match_linux_vfio)
{
    EXPECT_EQ(vu::dma_map_flags{}.with(vu::dma_map_flags::read, true).raw, 0x1U);
    EXPECT_EQ(vu::dma_map_flags{}.with(vu::dma_map_flags::write, true).raw, 0x2U);
    EXPECT_EQ(vu::dma_unmap_flags{}.with(vu::dma_unmap_flags::get_dirty_bitmap, true).raw, 0x1U);
    EXPECT_EQ(vu::dma_unmap_flags{}.with(vu::dma_unmap_flags::all, true).raw, 0x2U);
    EXPECT_EQ(vu::device_info_flags{}.with(vu::device_info_flags::reset, true).raw, 0x1U);
    EXPECT_EQ(vu::device_info_flags{}.with(vu::device_info_flags::pci, true).raw, 0x2U);
    EXPECT_EQ(vu::region_info_flags{}.with(vu::region_info_flags::read, true).raw, 0x1U);
    EXPECT_EQ(vu::region_info_flags{}.with(vu::region_info_flags::write, true).raw, 0x2U);
    EXPECT_EQ(vu::region_info_flags{}.with(vu::region_info_flags::mmap, true).raw, 0x4U);
    EXPECT_EQ(vu::region_info_flags{}.with(vu::region_info_flags::caps, true).raw, 0x8U);
    EXPECT_EQ(vu::irq_info_flags{}.with(vu::irq_info_flags::eventfd, true).raw, 0x1U);
    EXPECT_EQ(vu::irq_info_flags{}.with(vu::irq_info_flags::maskable, true).raw, 0x2U);
    EXPECT_EQ(vu::irq_info_flags{}.with(vu::irq_info_flags::automasked, true).raw, 0x4U);
    EXPECT_EQ(vu::irq_info_flags{}.with(vu::irq_info_flags::noresize, true).raw, 0x8U);
    EXPECT_EQ(vu::irq_set_flags{}.with(vu::irq_set_flags::data_none, true).raw, 0x1U);
    EXPECT_EQ(vu::irq_set_flags{}.with(vu::irq_set_flags::data_bool, true).raw, 0x2U);
    EXPECT_EQ(vu::irq_set_flags{}.with(vu::irq_set_flags::data_eventfd, true).raw, 0x4U);
    EXPECT_EQ(vu::irq_set_flags{}.with(vu::irq_set_flags::action_mask, true).raw, 0x8U);
    EXPECT_EQ(vu::irq_set_flags{}.with(vu::irq_set_flags::action_unmask, true).raw, 0x10U);
    EXPECT_EQ(vu::irq_set_flags{}.with(vu::irq_set_flags::action_trigger, true).raw, 0x20U);
    EXPECT_EQ(vu::region_cap_sparse_mmap, 1U);
    EXPECT_EQ(vu::region_cap_sparse_mmap_version, 1U);
}

TEST(vfio_user_protocol, parse_result_holds_a_value_or_an_errno)
{
    const vu::parse_result<std::uint32_t> value{42U};
    ASSERT_TRUE(value);
    EXPECT_EQ(*value, 42U);
    EXPECT_EQ(value.error(), std::errc{});
    const vu::parse_result<std::uint32_t> error{einval};
    EXPECT_FALSE(error.has_value());
    EXPECT_EQ(error.error(), einval);
    EXPECT_EQ(vu::errno_value(einval), 22U);
    EXPECT_EQ(vu::errno_value(enotsup), 95U);
    EXPECT_EQ(vu::errno_value(e2big), 7U);
}

TEST(vfio_user_protocol, parse_header_accepts_a_command)
{
    const auto bytes = payload_of(command_header(vu::command::device_reset, 16, 0xBEEF));
    const auto header = vu::parse_header(bytes);
    ASSERT_TRUE(header);
    EXPECT_EQ(header->message_id, 0xBEEFU);
    EXPECT_EQ(header->command_code, vu::command::device_reset);
    EXPECT_EQ(header->message_size, 16U);
}

TEST(vfio_user_protocol, parse_header_leaves_unknown_commands_to_the_caller)
{
    const auto header = vu::parse_header(payload_of(command_header(static_cast<vu::command>(99), 16)));
    ASSERT_TRUE(header);
    EXPECT_EQ(static_cast<unsigned>(header->command_code), 99U);
}

TEST(vfio_user_protocol, parse_header_rejects_short_input_and_bad_sizes)
{
    const auto bytes = payload_of(command_header(vu::command::device_reset, 16));
    EXPECT_EQ(vu::parse_header(std::span{bytes}.first(15)).error(), einval);
    EXPECT_EQ(vu::parse_header(std::span<const std::byte>{}).error(), einval);
    EXPECT_EQ(vu::parse_header(payload_of(command_header(vu::command::device_reset, 15))).error(), einval);
    EXPECT_EQ(vu::parse_header(payload_of(command_header(vu::command::device_reset, 0))).error(), einval);

    const vu::protocol_limits limits{};
    EXPECT_EQ(limits.max_message_size(), 16U + 16U + (1U << 20));
    const auto largest = static_cast<std::uint32_t>(limits.max_message_size());
    EXPECT_TRUE(vu::parse_header(payload_of(command_header(vu::command::region_write, largest)), limits));
    EXPECT_EQ(vu::parse_header(payload_of(command_header(vu::command::region_write, largest + 1)), limits).error(),
              e2big);
    EXPECT_EQ(vu::parse_header(payload_of(command_header(vu::command::region_write, 0xFFFFFFFF))).error(), e2big);

    vu::protocol_limits small{};
    small.max_data_xfer_size = 8;
    small.max_version_data = 64;
    EXPECT_EQ(small.max_message_size(), 16U + 4U + 64U);
}

TEST(vfio_user_protocol, parse_header_rejects_replies_and_undefined_types)
{
    auto header = command_header(vu::command::device_get_info, 32);
    header.flags.set(vu::message_flags::type, vu::message_type::reply);
    EXPECT_EQ(vu::parse_header(payload_of(header)).error(), einval);
    header.flags.raw = 0x2;
    EXPECT_EQ(vu::parse_header(payload_of(header)).error(), einval);
    header.flags.raw = 0x10; // No_reply on a command is fine
    EXPECT_TRUE(vu::parse_header(payload_of(header)));
}

TEST(vfio_user_protocol, whole_message_round_trip_through_header_and_decoder)
{
    auto message = payload_of(command_header(vu::command::dma_map, 48, 3));
    const auto body = payload_of(vu::dma_map{32, vu::dma_map_flags{3}, 0, 0x100000, 0x200000});
    message.insert(message.end(), body.begin(), body.end());
    const auto header = vu::parse_header(message);
    ASSERT_TRUE(header);
    const auto map = vu::decode_dma_map(std::span{message}.subspan(vu::header_size, header->message_size - 16), 1);
    ASSERT_TRUE(map);
    EXPECT_EQ(map->address, 0x100000U);
    EXPECT_EQ(map->size, 0x200000U);
}

TEST(vfio_user_protocol, version_parses_qemu_capabilities)
{
    const auto request = vu::decode_version(version_json(qemu_capabilities), 0);
    ASSERT_TRUE(request);
    EXPECT_EQ(request->major, 0U);
    EXPECT_EQ(request->minor, 0U);
    const auto& caps = request->capabilities;
    EXPECT_EQ(caps.max_msg_fds, 16U);
    EXPECT_EQ(caps.max_data_xfer_size, 1048576U);
    EXPECT_EQ(caps.pgsizes, 4096U);
    EXPECT_EQ(caps.max_dma_maps, 65535U);
    EXPECT_TRUE(caps.migration);
    EXPECT_TRUE(caps.write_multiple);
    EXPECT_FALSE(caps.twin_socket);
    EXPECT_TRUE(caps.has_max_msg_fds && caps.has_max_data_xfer_size && caps.has_pgsizes && caps.has_max_dma_maps);
}

TEST(vfio_user_protocol, version_without_capabilities_keeps_the_defaults)
{
    for (const auto& payload : {version_payload_with(0, 3, ""), version_json(""), version_json("  {}  "),
                                version_json(R"({"capabilities":{}})"), version_json(R"({"other":[1,2]})")}) {
        const auto request = vu::decode_version(payload, 0);
        ASSERT_TRUE(request);
        const auto& caps = request->capabilities;
        EXPECT_EQ(caps.max_msg_fds, 1U);
        EXPECT_EQ(caps.max_data_xfer_size, 1048576U);
        EXPECT_EQ(caps.max_dma_maps, 65535U);
        EXPECT_EQ(caps.pgsizes, 4096U);
        EXPECT_FALSE(caps.migration || caps.write_multiple || caps.twin_socket);
        EXPECT_FALSE(caps.has_max_msg_fds || caps.has_max_data_xfer_size || caps.has_pgsizes ||
                     caps.has_max_dma_maps);
    }
    EXPECT_EQ(vu::decode_version(version_payload_with(0, 3, ""), 0)->minor, 3U);
}

TEST(vfio_user_protocol, version_skips_unknown_members_of_any_shape)
{
    const auto request = vu::decode_version(
        version_json(R"( { "x" : {"a":[true,false,null,-1.5e+3,"s\"\\\/\b\f\n\r\t\u00e9"],"b":{}} ,)"
                     R"( "capabilities" : { "future" : [[[]]], "max_msg_fds" : 8 ,)"
                     R"( "twin_socket" : {"supported":true,"fd_index":0} } } )"),
        0);
    ASSERT_TRUE(request);
    EXPECT_EQ(request->capabilities.max_msg_fds, 8U);
    EXPECT_TRUE(request->capabilities.twin_socket);
}

TEST(vfio_user_protocol, version_accepts_the_largest_64_bit_number_and_last_duplicate_wins)
{
    const auto request =
        vu::decode_version(version_json(R"({"capabilities":{"pgsizes":18446744073709551615,"max_msg_fds":2,)"
                                        R"("max_msg_fds":3}})"),
                           0);
    ASSERT_TRUE(request);
    EXPECT_EQ(request->capabilities.pgsizes, 18446744073709551615U);
    EXPECT_EQ(request->capabilities.max_msg_fds, 3U);
}

TEST(vfio_user_protocol, version_rejects_malformed_json)
{
    const std::array<std::string_view, 34> garbage{
        "{",
        "}",
        "[]",
        "null",
        "\"capabilities\"",
        "{} {}",
        "{} x",
        "{\"capabilities\":1}",
        "{\"capabilities\":[]}",
        "{\"capabilities\":{\"max_msg_fds\":\"8\"}}",
        "{\"capabilities\":{\"max_msg_fds\":-1}}",
        "{\"capabilities\":{\"max_msg_fds\":1.0}}",
        "{\"capabilities\":{\"max_msg_fds\":1e3}}",
        "{\"capabilities\":{\"max_msg_fds\":01}}",
        "{\"capabilities\":{\"max_msg_fds\":18446744073709551616}}",
        "{\"capabilities\":{\"max_msg_fds\":true}}",
        "{\"capabilities\":{\"max_msg_fds\":}}",
        "{\"capabilities\":{\"write_multiple\":1}}",
        "{\"capabilities\":{\"migration\":true}}",
        "{\"capabilities\":{\"twin_socket\":true}}",
        "{\"capabilities\":{\"twin_socket\":{\"supported\":\"yes\"}}}",
        "{\"capabilities\":{\"max_msg_fds\":1,}}",
        "{\"capabilities\":{,}}",
        "{\"capabilities\" {}}",
        "{capabilities:{}}",
        "{'capabilities':{}}",
        "{\"a\":\"unterminated}",
        "{\"a\":\"bad escape \\x\"}",
        "{\"a\":\"bad unicode \\u12G4\"}",
        "{\"a\":\"raw\ttab\"}",
        "{\"a\":tru}",
        "{\"a\":-}",
        "{\"a\":1.}",
        "{\"a\":[1,]}",
    };
    for (const std::string_view json : garbage) {
        EXPECT_EQ(vu::decode_version(version_json(json), 0).error(), einval) << json;
    }
}

TEST(vfio_user_protocol, version_limits_json_nesting)
{
    const auto nested = [](int depth) {
        std::string json = R"({"capabilities":{"x":)";
        for (int i = 0; i < depth; ++i) {
            json += "[";
        }
        for (int i = 0; i < depth; ++i) {
            json += "]";
        }
        return json + "}}";
    };
    EXPECT_TRUE(vu::decode_version(version_json(nested(15)), 0));
    EXPECT_EQ(vu::decode_version(version_json(nested(16)), 0).error(), einval);
    vu::protocol_limits roomy{};
    roomy.max_version_data = 1U << 20;
    EXPECT_EQ(vu::decode_version(version_json(nested(100000)), 0, roomy).error(), einval);
}

TEST(vfio_user_protocol, version_rejects_framing_errors)
{
    EXPECT_EQ(vu::decode_version(std::vector<std::byte>(3), 0).error(), einval);
    EXPECT_EQ(vu::decode_version(version_payload_with(0, 0, "{}"), 0).error(), einval); // no NUL
    EXPECT_EQ(vu::decode_version(with_tail(version_json("{}"), 1), 0).error(), einval);  // bytes after NUL
    EXPECT_TRUE(vu::decode_version(with_tail(version_json("{}"), 3, std::byte{0}), 0));  // NUL padding
    EXPECT_EQ(vu::decode_version(version_json("{}"), 1).error(), einval);               // descriptor attached
}

TEST(vfio_user_protocol, version_rejects_huge_json)
{
    vu::protocol_limits limits{};
    limits.max_version_data = 32;
    const std::string fits = R"({"capabilities":{"pgsizes":4096}})"; // 33 characters + NUL
    EXPECT_EQ(vu::decode_version(version_json(fits), 0, limits).error(), e2big);
    limits.max_version_data = 34;
    EXPECT_TRUE(vu::decode_version(version_json(fits), 0, limits));
    const std::string huge(100000, ' ');
    EXPECT_EQ(vu::decode_version(version_json(huge + "{}"), 0).error(), e2big);
}

TEST(vfio_user_protocol, version_negotiation_keeps_major_and_lowers_minor)
{
    const auto same = vu::negotiate_version({0, 0, {}});
    ASSERT_TRUE(same);
    EXPECT_EQ(same->major, 0U);
    EXPECT_EQ(same->minor, 0U);
    const auto newer = vu::negotiate_version({0, 5, {}});
    ASSERT_TRUE(newer);
    EXPECT_EQ(newer->minor, 0U);
    EXPECT_EQ(vu::negotiate_version({1, 0, {}}).error(), enotsup);
}

TEST(vfio_user_protocol, version_reply_names_the_servers_values_for_the_proposed_members)
{
    const auto request = vu::decode_version(version_json(qemu_capabilities), 0);
    ASSERT_TRUE(request);
    const auto header = command_header(vu::command::version, static_cast<std::uint32_t>(16 + 4 + qemu_capabilities.size() + 1), 9);
    std::array<std::byte, vu::version_reply_capacity> out{};
    const vu::protocol_limits limits{};
    const std::size_t size =
        vu::encode_version_reply(header, *vu::negotiate_version(*request), request->capabilities, limits, out);

    const std::string_view expected_json =
        R"({"capabilities":{"max_msg_fds":16,"max_data_xfer_size":1048576,"pgsizes":4096,"max_dma_maps":65535}})";
    ASSERT_EQ(size, 16 + 4 + expected_json.size() + 1);
    EXPECT_LE(size, header.message_size); // QEMU sizes its reply buffer to its own request
    EXPECT_EQ(le_in<std::uint16_t>(out, 0), 9U);
    EXPECT_EQ(le_in<std::uint16_t>(out, 2), 1U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 4), size);
    EXPECT_EQ(le_in<std::uint32_t>(out, 8), 1U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 12), 0U);
    EXPECT_EQ(le_in<std::uint16_t>(out, 16), 0U);
    EXPECT_EQ(le_in<std::uint16_t>(out, 18), 0U);
    EXPECT_EQ(std::string_view(reinterpret_cast<const char*>(out.data() + 20), expected_json.size()), expected_json);
    EXPECT_EQ(out[size - 1], std::byte{0});

    const auto reparsed = vu::decode_version(std::span{out}.subspan(16, size - 16), 0);
    ASSERT_TRUE(reparsed);
    EXPECT_EQ(reparsed->capabilities.max_msg_fds, 16U);
    EXPECT_FALSE(reparsed->capabilities.write_multiple);
    EXPECT_FALSE(reparsed->capabilities.migration);
}

TEST(vfio_user_protocol, version_reply_omits_members_the_client_did_not_propose)
{
    const auto request = vu::decode_version(version_json(R"({"capabilities":{"max_data_xfer_size":4096}})"), 0);
    ASSERT_TRUE(request);
    vu::protocol_limits limits{};
    limits.max_data_xfer_size = 65536;
    std::array<std::byte, vu::version_reply_capacity> out{};
    const std::size_t size =
        vu::encode_version_reply(command_header(vu::command::version, 64), {0, 0}, request->capabilities, limits, out);
    const std::string_view expected_json = R"({"capabilities":{"max_data_xfer_size":65536}})";
    ASSERT_EQ(size, 20 + expected_json.size() + 1);
    EXPECT_EQ(std::string_view(reinterpret_cast<const char*>(out.data() + 20), expected_json.size()), expected_json);

    std::array<char, vu::max_version_reply_json> json{};
    EXPECT_EQ(std::string_view(json.data(), vu::write_capabilities_json({}, limits, json)), R"({"capabilities":{}})");
    vu::client_capabilities all{};
    all.has_max_msg_fds = all.has_max_data_xfer_size = all.has_pgsizes = all.has_max_dma_maps = true;
    limits.max_msg_fds = 0xFFFFFFFF;
    limits.max_data_xfer_size = 0xFFFFFFFF;
    limits.max_dma_maps = 0xFFFFFFFF;
    limits.dma_page_size = 0xFFFFFFFFFFFFFFFF;
    EXPECT_EQ(std::string_view(json.data(), vu::write_capabilities_json(all, limits, json)),
              R"({"capabilities":{"max_msg_fds":4294967295,"max_data_xfer_size":4294967295,)"
              R"("pgsizes":18446744073709551615,"max_dma_maps":4294967295}})");
}

TEST(vfio_user_protocol, dma_map_round_trip)
{
    const vu::dma_map sent{32, vu::dma_map_flags{3}, 0x3000, 0xC0000000, 0x40000000};
    const auto map = vu::decode_dma_map(payload_of(sent), 1);
    ASSERT_TRUE(map);
    EXPECT_EQ(map->argsz, 32U);
    EXPECT_TRUE(map->flags.get(vu::dma_map_flags::read));
    EXPECT_TRUE(map->flags.get(vu::dma_map_flags::write));
    EXPECT_EQ(map->offset, 0x3000U);
    EXPECT_EQ(map->address, 0xC0000000U);
    EXPECT_EQ(map->size, 0x40000000U);

    const auto read_only = vu::decode_dma_map(payload_of(vu::dma_map{32, vu::dma_map_flags{1}, 0, 0xF0000, 0x10000}), 0);
    ASSERT_TRUE(read_only);
    EXPECT_FALSE(read_only->flags.get(vu::dma_map_flags::write));
    EXPECT_TRUE(vu::decode_dma_map(payload_of(vu::dma_map{32, vu::dma_map_flags{2}, 0, 0, 0x1000}), 1));
    // The exclusive end must be representable: a map ending at 2^64 is refused, one page lower is not.
    EXPECT_TRUE(vu::decode_dma_map(
        payload_of(vu::dma_map{32, vu::dma_map_flags{3}, 0, 0xFFFFFFFFFFFFE000, 0x1000}), 1));
    EXPECT_EQ(vu::decode_dma_map(
                  payload_of(vu::dma_map{32, vu::dma_map_flags{3}, 0, 0xFFFFFFFFFFFFF000, 0x1000}), 1)
                  .error(),
              einval);
}

TEST(vfio_user_protocol, dma_map_rejects_every_malformed_request)
{
    const vu::dma_map good{32, vu::dma_map_flags{3}, 0x1000, 0x10000, 0x2000};
    const auto with = [&](auto change) {
        vu::dma_map map = good;
        change(map);
        return payload_of(map);
    };
    EXPECT_EQ(vu::decode_dma_map(truncated(payload_of(good), 31), 1).error(), einval);
    EXPECT_EQ(vu::decode_dma_map(with_tail(payload_of(good), 1), 1).error(), einval);
    EXPECT_EQ(vu::decode_dma_map(payload_of(good), 2).error(), einval);
    EXPECT_EQ(vu::decode_dma_map(with([](auto& m) { m.argsz = 24; }), 1).error(), einval);
    EXPECT_EQ(vu::decode_dma_map(with([](auto& m) { m.argsz = 40; }), 1).error(), einval);
    EXPECT_EQ(vu::decode_dma_map(with([](auto& m) { m.flags.raw = 0x0B; }), 1).error(), einval);
    EXPECT_EQ(vu::decode_dma_map(with([](auto& m) { m.flags.raw = 0x80000003; }), 1).error(), einval);
    EXPECT_EQ(vu::decode_dma_map(with([](auto& m) { m.flags.raw = 0x07; }), 1).error(), enotsup);
    EXPECT_EQ(vu::decode_dma_map(with([](auto& m) { m.flags.raw = 0; }), 1).error(), einval);
    EXPECT_EQ(vu::decode_dma_map(with([](auto& m) { m.size = 0; }), 1).error(), einval);
    EXPECT_EQ(vu::decode_dma_map(with([](auto& m) { m.address = 0xFFFFFFFFFFFFF000; }), 1).error(), einval);
    EXPECT_EQ(vu::decode_dma_map(with([](auto& m) { m.offset = 0xFFFFFFFFFFFFF000; }), 1).error(), einval);
    EXPECT_EQ(vu::decode_dma_map(with([](auto& m) { m.address = 0x10800; }), 1).error(), einval);
    EXPECT_EQ(vu::decode_dma_map(with([](auto& m) { m.size = 0x2001; }), 1).error(), einval);
    EXPECT_EQ(vu::decode_dma_map(with([](auto& m) { m.offset = 0x1004; }), 1).error(), einval);
    EXPECT_EQ(vu::decode_dma_map(payload_of(good), 0).error(), einval); // offset without a descriptor

    vu::protocol_limits huge_pages{};
    huge_pages.dma_page_size = 0x200000;
    EXPECT_EQ(vu::decode_dma_map(payload_of(good), 1, huge_pages).error(), einval);
    EXPECT_TRUE(vu::decode_dma_map(payload_of(vu::dma_map{32, vu::dma_map_flags{3}, 0x200000, 0x400000, 0x200000}),
                                   1, huge_pages));
}

TEST(vfio_user_protocol, dma_unmap_round_trip_and_reply_echoes_the_request)
{
    const vu::dma_unmap sent{24, vu::dma_unmap_flags{0}, 0xC0000000, 0x40000000};
    const auto unmap = vu::decode_dma_unmap(payload_of(sent), 0);
    ASSERT_TRUE(unmap);
    EXPECT_EQ(unmap->address, 0xC0000000U);
    EXPECT_EQ(unmap->size, 0x40000000U);

    std::array<std::byte, 40> out{};
    ASSERT_EQ(vu::encode_reply(command_header(vu::command::dma_unmap, 40, 11), *unmap, out), 40U);
    EXPECT_EQ(le_in<std::uint16_t>(out, 0), 11U);
    EXPECT_EQ(le_in<std::uint16_t>(out, 2), 3U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 4), 40U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 8), 1U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 16), 24U);
    EXPECT_EQ(le_in<std::uint64_t>(out, 24), 0xC0000000U);
    EXPECT_EQ(le_in<std::uint64_t>(out, 32), 0x40000000U);

    const auto all = vu::decode_dma_unmap(payload_of(vu::dma_unmap{24, vu::dma_unmap_flags{2}, 0, 0}), 0);
    ASSERT_TRUE(all);
    EXPECT_TRUE(all->flags.get(vu::dma_unmap_flags::all));
    EXPECT_TRUE(vu::decode_dma_unmap(payload_of(vu::dma_unmap{64, vu::dma_unmap_flags{0}, 0x1000, 0x1000}), 0));
}

TEST(vfio_user_protocol, dma_unmap_rejects_every_malformed_request)
{
    const vu::dma_unmap good{24, vu::dma_unmap_flags{0}, 0x10000, 0x2000};
    const auto with = [&](auto change) {
        vu::dma_unmap unmap = good;
        change(unmap);
        return payload_of(unmap);
    };
    EXPECT_EQ(vu::decode_dma_unmap(with([](auto& u) { u.flags.raw = 1; }), 0).error(), enotsup);
    // The dirty bitmap request carries a vfio_bitmap after the structure: still ENOTSUP.
    EXPECT_EQ(vu::decode_dma_unmap(with_tail(with([](auto& u) { u.flags.raw = 1; }), 24), 0).error(), enotsup);
    EXPECT_EQ(vu::decode_dma_unmap(with([](auto& u) { u.flags.raw = 4; }), 0).error(), enotsup);
    EXPECT_EQ(vu::decode_dma_unmap(with([](auto& u) { u.flags.raw = 8; }), 0).error(), einval);
    EXPECT_EQ(vu::decode_dma_unmap(truncated(payload_of(good), 23), 0).error(), einval);
    EXPECT_EQ(vu::decode_dma_unmap(with_tail(payload_of(good), 8), 0).error(), einval);
    EXPECT_EQ(vu::decode_dma_unmap(payload_of(good), 1).error(), einval);
    EXPECT_EQ(vu::decode_dma_unmap(with([](auto& u) { u.argsz = 16; }), 0).error(), einval);
    EXPECT_EQ(vu::decode_dma_unmap(with([](auto& u) { u.size = 0; }), 0).error(), einval);
    EXPECT_EQ(vu::decode_dma_unmap(with([](auto& u) { u.address = 0xFFFFFFFFFFFFF000; }), 0).error(), einval);
    EXPECT_EQ(vu::decode_dma_unmap(with([](auto& u) { u.address = 0x10010; }), 0).error(), einval);
    EXPECT_EQ(vu::decode_dma_unmap(with([](auto& u) { u.size = 0x1800; }), 0).error(), einval);
    EXPECT_EQ(vu::decode_dma_unmap(with([](auto& u) { u.flags.raw = 2; }), 0).error(), einval); // ALL + range
    EXPECT_EQ(vu::decode_dma_unmap(with([](auto& u) {
                  u.flags.raw = 2;
                  u.address = 0;
              }),
                                   0)
                  .error(),
              einval);
    EXPECT_EQ(vu::decode_dma_unmap(with([](auto& u) { u.flags.raw = 3; }), 0).error(), enotsup);
}

TEST(vfio_user_protocol, device_get_info_round_trip)
{
    const auto request = vu::decode_device_get_info(payload_of(vu::device_info{16, {}, 0, 0}), 0);
    ASSERT_TRUE(request);
    EXPECT_EQ(request->argsz, 16U);
    EXPECT_TRUE(vu::decode_device_get_info(payload_of(vu::device_info{24, {}, 0, 0}), 0));

    vu::device_info reply{16, {}, vu::pci_num_regions, vu::pci_num_irqs};
    reply.flags.set(vu::device_info_flags::reset, true).set(vu::device_info_flags::pci, true);
    std::array<std::byte, 32> out{};
    ASSERT_EQ(vu::encode_reply(command_header(vu::command::device_get_info, 32, 4), reply, out), 32U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 4), 32U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 16), 16U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 20), 3U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 24), 9U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 28), 5U);
}

TEST(vfio_user_protocol, device_get_info_rejects_malformed_requests)
{
    const auto good = payload_of(vu::device_info{16, {}, 0, 0});
    EXPECT_EQ(vu::decode_device_get_info(payload_of(vu::device_info{15, {}, 0, 0}), 0).error(), einval);
    EXPECT_EQ(vu::decode_device_get_info(std::span{good}.first(12), 0).error(), einval);
    EXPECT_EQ(vu::decode_device_get_info(with_tail(good, 4), 0).error(), einval);
    EXPECT_EQ(vu::decode_device_get_info(good, 1).error(), einval);
}

TEST(vfio_user_protocol, region_info_request_checks_argsz_and_index)
{
    const auto request = vu::decode_region_info(payload_of(vu::region_info{32, {}, 7, 0, 0, 0}), 0, 9);
    ASSERT_TRUE(request);
    EXPECT_EQ(request->index, 7U);
    EXPECT_EQ(vu::decode_region_info(payload_of(vu::region_info{32, {}, 9, 0, 0, 0}), 0, 9).error(), einval);
    EXPECT_EQ(vu::decode_region_info(payload_of(vu::region_info{31, {}, 0, 0, 0, 0}), 0, 9).error(), einval);
    const auto good = payload_of(vu::region_info{32, {}, 0, 0, 0, 0});
    EXPECT_EQ(vu::decode_region_info(std::span{good}.first(16), 0, 9).error(), einval);
    EXPECT_EQ(vu::decode_region_info(with_tail(good, 8), 0, 9).error(), einval);
    EXPECT_EQ(vu::decode_region_info(good, 1, 9).error(), einval);
}

TEST(vfio_user_protocol, region_info_reply_without_capabilities)
{
    vu::region_info info{};
    info.index = 7;
    info.size = 0x1000;
    info.flags.set(vu::region_info_flags::read, true).set(vu::region_info_flags::write, true);
    std::array<std::byte, 128> out{};
    ASSERT_EQ(vu::encode_region_info_reply(command_header(vu::command::device_get_region_info, 48), 32, info, {}, out),
              48U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 4), 48U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 16), 32U); // argsz
    EXPECT_EQ(le_in<std::uint32_t>(out, 20), 3U);  // read | write
    EXPECT_EQ(le_in<std::uint32_t>(out, 24), 7U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 28), 0U); // cap_offset
    EXPECT_EQ(le_in<std::uint64_t>(out, 32), 0x1000U);
    EXPECT_EQ(le_in<std::uint64_t>(out, 40), 0U);
}

TEST(vfio_user_protocol, region_info_reply_asks_for_a_larger_argsz_before_sending_capabilities)
{
    vu::region_info info{};
    info.index = 0;
    info.size = 0x4000;
    info.offset = 0x10000;
    info.flags.set(vu::region_info_flags::read, true)
        .set(vu::region_info_flags::write, true)
        .set(vu::region_info_flags::mmap, true);
    const std::array<vu::sparse_mmap_area, 2> areas{{{0x1000, 0x1000}, {0x3000, 0x1000}}};
    EXPECT_EQ(vu::region_info_full_size(2), 80U);
    EXPECT_EQ(vu::region_info_full_size(0), 32U);

    std::array<std::byte, 128> out{};
    ASSERT_EQ(vu::encode_region_info_reply(command_header(vu::command::device_get_region_info, 48), 79, info, areas,
                                           out),
              48U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 16), 80U); // argsz: the size needed
    EXPECT_EQ(le_in<std::uint32_t>(out, 20), 0xFU);
    EXPECT_EQ(le_in<std::uint32_t>(out, 28), 0U); // no capability in this reply

    out.fill(std::byte{0xEE});
    ASSERT_EQ(vu::encode_region_info_reply(command_header(vu::command::device_get_region_info, 48, 2), 80, info,
                                           areas, out),
              96U);
    EXPECT_EQ(le_in<std::uint16_t>(out, 0), 2U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 4), 96U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 8), 1U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 16), 80U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 20), 0xFU);
    EXPECT_EQ(le_in<std::uint32_t>(out, 24), 0U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 28), 32U); // cap_offset
    EXPECT_EQ(le_in<std::uint64_t>(out, 32), 0x4000U);
    EXPECT_EQ(le_in<std::uint64_t>(out, 40), 0x10000U);
    const std::size_t cap = 16 + 32;
    EXPECT_EQ(le_in<std::uint16_t>(out, cap + 0), 1U); // VFIO_REGION_INFO_CAP_SPARSE_MMAP
    EXPECT_EQ(le_in<std::uint16_t>(out, cap + 2), 1U);
    EXPECT_EQ(le_in<std::uint32_t>(out, cap + 4), 0U);
    EXPECT_EQ(le_in<std::uint32_t>(out, cap + 8), 2U);
    EXPECT_EQ(le_in<std::uint32_t>(out, cap + 12), 0U);
    EXPECT_EQ(le_in<std::uint64_t>(out, cap + 16), 0x1000U);
    EXPECT_EQ(le_in<std::uint64_t>(out, cap + 24), 0x1000U);
    EXPECT_EQ(le_in<std::uint64_t>(out, cap + 32), 0x3000U);
    EXPECT_EQ(le_in<std::uint64_t>(out, cap + 40), 0x1000U);
    EXPECT_EQ(out[96], std::byte{0xEE});
}

TEST(vfio_user_protocol, irq_info_round_trip)
{
    const auto request = vu::decode_irq_info(payload_of(vu::irq_info{16, {}, 2, 0}), 0, vu::pci_num_irqs);
    ASSERT_TRUE(request);
    EXPECT_EQ(request->index, 2U);
    vu::irq_info reply{16, {}, 2, 64};
    reply.flags.set(vu::irq_info_flags::eventfd, true).set(vu::irq_info_flags::noresize, true);
    std::array<std::byte, 32> out{};
    ASSERT_EQ(vu::encode_reply(command_header(vu::command::device_get_irq_info, 32), reply, out), 32U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 20), 9U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 24), 2U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 28), 64U);
}

TEST(vfio_user_protocol, irq_info_rejects_malformed_requests)
{
    const auto good = payload_of(vu::irq_info{16, {}, 0, 0});
    EXPECT_EQ(vu::decode_irq_info(payload_of(vu::irq_info{16, {}, 5, 0}), 0, 5).error(), einval);
    EXPECT_EQ(vu::decode_irq_info(payload_of(vu::irq_info{8, {}, 0, 0}), 0, 5).error(), einval);
    EXPECT_EQ(vu::decode_irq_info(std::span{good}.first(15), 0, 5).error(), einval);
    EXPECT_EQ(vu::decode_irq_info(with_tail(good, 1), 0, 5).error(), einval);
    EXPECT_EQ(vu::decode_irq_info(good, 1, 5).error(), einval);
}

TEST(vfio_user_protocol, set_irqs_eventfd_trigger_round_trip)
{
    const auto set = vu::decode_set_irqs(payload_of(vu::irq_set{20, vu::irq_set_flags{0x24}, 2, 4, 3}), 3, irq_counts);
    ASSERT_TRUE(set);
    EXPECT_EQ(set->data, vu::irq_set_data::eventfd);
    EXPECT_EQ(set->action, vu::irq_set_action::trigger);
    EXPECT_EQ(set->fields.index, 2U);
    EXPECT_EQ(set->fields.start, 4U);
    EXPECT_EQ(set->fields.count, 3U);
    EXPECT_EQ(set->fd_count, 3U);
    EXPECT_TRUE(set->bools.empty());
    EXPECT_FALSE(set->disables_all());

    const auto deassign =
        vu::decode_set_irqs(payload_of(vu::irq_set{20, vu::irq_set_flags{0x24}, 2, 0, 64}), 0, irq_counts);
    ASSERT_TRUE(deassign);
    EXPECT_EQ(deassign->fd_count, 0U);
    // A Linux-style argsz that counts the descriptors as data is accepted.
    EXPECT_TRUE(vu::decode_set_irqs(payload_of(vu::irq_set{32, vu::irq_set_flags{0x24}, 2, 0, 3}), 3, irq_counts));
}

TEST(vfio_user_protocol, set_irqs_none_and_bool)
{
    const auto disable =
        vu::decode_set_irqs(payload_of(vu::irq_set{20, vu::irq_set_flags{0x21}, 2, 0, 0}), 0, irq_counts);
    ASSERT_TRUE(disable);
    EXPECT_EQ(disable->data, vu::irq_set_data::none);
    EXPECT_TRUE(disable->disables_all());

    const auto mask = vu::decode_set_irqs(payload_of(vu::irq_set{20, vu::irq_set_flags{0x09}, 2, 1, 1}), 0, irq_counts);
    ASSERT_TRUE(mask);
    EXPECT_EQ(mask->action, vu::irq_set_action::mask);
    EXPECT_FALSE(mask->disables_all());

    auto bools = payload_of(vu::irq_set{22, vu::irq_set_flags{0x12}, 2, 62, 2});
    bools.push_back(std::byte{1});
    bools.push_back(std::byte{0});
    const auto unmask = vu::decode_set_irqs(bools, 0, irq_counts);
    ASSERT_TRUE(unmask);
    EXPECT_EQ(unmask->data, vu::irq_set_data::boolean);
    EXPECT_EQ(unmask->action, vu::irq_set_action::unmask);
    ASSERT_EQ(unmask->bools.size(), 2U);
    EXPECT_EQ(unmask->bools[0], std::byte{1});
    EXPECT_EQ(unmask->bools[1], std::byte{0});
    EXPECT_EQ(unmask->bools.data(), bools.data() + 20);
}

TEST(vfio_user_protocol, set_irqs_rejects_every_malformed_request)
{
    const auto decode = [](vu::irq_set set, std::size_t fds, std::size_t extra = 0) {
        return vu::decode_set_irqs(with_tail(payload_of(set), extra, std::byte{1}), fds, irq_counts).error();
    };
    EXPECT_EQ(vu::decode_set_irqs(truncated(payload_of(vu::irq_set{20, vu::irq_set_flags{0x21}, 2, 0, 0}), 19),
                                  0, irq_counts)
                  .error(),
              einval);
    EXPECT_EQ(decode({19, vu::irq_set_flags{0x21}, 2, 0, 0}, 0), einval);       // argsz below the structure
    EXPECT_EQ(decode({20, vu::irq_set_flags{0x22}, 2, 0, 2}, 0, 2), einval);    // argsz below the data present
    EXPECT_EQ(decode({20, vu::irq_set_flags{0x26}, 2, 0, 1}, 1), einval);       // two data types
    EXPECT_EQ(decode({20, vu::irq_set_flags{0x20}, 2, 0, 1}, 0), einval);       // no data type
    EXPECT_EQ(decode({20, vu::irq_set_flags{0x34}, 2, 0, 1}, 1), einval);       // two actions
    EXPECT_EQ(decode({20, vu::irq_set_flags{0x04}, 2, 0, 1}, 1), einval);       // no action
    EXPECT_EQ(decode({20, vu::irq_set_flags{0x64}, 2, 0, 1}, 1), einval);       // undefined bit 6
    EXPECT_EQ(decode({20, vu::irq_set_flags{0x80000024}, 2, 0, 1}, 1), einval); // undefined bit 31
    EXPECT_EQ(decode({20, vu::irq_set_flags{0x24}, 5, 0, 1}, 1), einval);       // index out of range
    EXPECT_EQ(decode({20, vu::irq_set_flags{0x24}, 2, 63, 2}, 2), einval);      // past the last vector
    EXPECT_EQ(decode({20, vu::irq_set_flags{0x24}, 2, 64, 0}, 0), einval);      // start past the end
    EXPECT_EQ(decode({20, vu::irq_set_flags{0x21}, 1, 0, 0}, 0), einval);       // index without interrupts
    EXPECT_EQ(decode({20, vu::irq_set_flags{0x24}, 2, 1, 0xFFFFFFFF}, 0), einval); // start + count wraps
    EXPECT_EQ(decode({20, vu::irq_set_flags{0x22}, 2, 0, 0}, 0), einval);       // count 0 with BOOL
    EXPECT_EQ(decode({20, vu::irq_set_flags{0x24}, 2, 0, 0}, 0), einval);       // count 0 with EVENTFD
    EXPECT_EQ(decode({21, vu::irq_set_flags{0x22}, 2, 0, 2}, 0, 1), einval);    // BOOL data too short
    EXPECT_EQ(decode({23, vu::irq_set_flags{0x22}, 2, 0, 2}, 0, 3), einval);    // BOOL data too long
    EXPECT_EQ(decode({22, vu::irq_set_flags{0x22}, 2, 0, 2}, 1, 2), einval);    // BOOL with a descriptor
    EXPECT_EQ(decode({21, vu::irq_set_flags{0x21}, 2, 0, 1}, 0, 1), einval);    // NONE with data
    EXPECT_EQ(decode({20, vu::irq_set_flags{0x21}, 2, 0, 1}, 1), einval);       // NONE with a descriptor
    EXPECT_EQ(decode({24, vu::irq_set_flags{0x24}, 2, 0, 1}, 1, 4), einval);    // EVENTFD with in-band data
    EXPECT_EQ(decode({20, vu::irq_set_flags{0x24}, 2, 0, 3}, 2), einval);       // descriptors != count
    EXPECT_EQ(decode({20, vu::irq_set_flags{0x24}, 2, 0, 1}, 2), einval);
}

TEST(vfio_user_protocol, region_read_round_trip_and_reply_layout)
{
    const auto read = vu::decode_region_read(payload_of(vu::region_access{0x1C, 0, 4}), 0, region_sizes);
    ASSERT_TRUE(read);
    EXPECT_EQ(read->offset, 0x1CU);
    EXPECT_EQ(read->region, 0U);
    EXPECT_EQ(read->count, 4U);
    EXPECT_TRUE(vu::decode_region_read(payload_of(vu::region_access{0, 7, 0x1000}), 0, region_sizes));
    EXPECT_TRUE(vu::decode_region_read(payload_of(vu::region_access{0x3FF8, 0, 8}), 0, region_sizes));

    const std::array<std::byte, 4> data{std::byte{0x11}, std::byte{0x22}, std::byte{0x33}, std::byte{0x44}};
    std::array<std::byte, 36> out{};
    ASSERT_EQ(vu::encode_region_read_reply(command_header(vu::command::region_read, 32, 5), *read, data, out), 36U);
    EXPECT_EQ(le_in<std::uint16_t>(out, 0), 5U);
    EXPECT_EQ(le_in<std::uint16_t>(out, 2), 9U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 4), 36U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 8), 1U);
    EXPECT_EQ(le_in<std::uint64_t>(out, 16), 0x1CU);
    EXPECT_EQ(le_in<std::uint32_t>(out, 24), 0U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 28), 4U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 32), 0x44332211U);
}

TEST(vfio_user_protocol, region_read_rejects_every_malformed_request)
{
    const auto decode = [](vu::region_access access, const vu::protocol_limits& limits = {}) {
        return vu::decode_region_read(payload_of(access), 0, region_sizes, limits).error();
    };
    EXPECT_EQ(decode({0, 0, 0}), einval);
    EXPECT_EQ(decode({0, 9, 4}), einval);                   // no such region
    EXPECT_EQ(decode({0, 1, 4}), einval);                   // region of size 0
    EXPECT_EQ(decode({0x3FFC, 0, 8}), einval);              // crosses the end
    EXPECT_EQ(decode({0x4000, 0, 1}), einval);              // starts at the end
    EXPECT_EQ(decode({0xFFFFFFFFFFFFFFFE, 0, 4}), einval);  // offset + count wraps
    EXPECT_EQ(decode({0, 0, (1U << 20) + 1}), e2big);       // above max_data_xfer_size
    vu::protocol_limits small{};
    small.max_data_xfer_size = 4;
    EXPECT_EQ(decode({0, 0, 8}, small), e2big);
    EXPECT_EQ(decode({0, 0, 4}, small), std::errc{});
    const auto good = payload_of(vu::region_access{0, 0, 4});
    EXPECT_EQ(vu::decode_region_read(std::span{good}.first(15), 0, region_sizes).error(), einval);
    EXPECT_EQ(vu::decode_region_read(with_tail(good, 4), 0, region_sizes).error(), einval);
    EXPECT_EQ(vu::decode_region_read(good, 1, region_sizes).error(), einval);
}

TEST(vfio_user_protocol, region_write_round_trip_and_reply_echoes_the_access)
{
    auto payload = payload_of(vu::region_access{0x14, 0, 4});
    payload.push_back(std::byte{0x01});
    payload.push_back(std::byte{0x00});
    payload.push_back(std::byte{0x46});
    payload.push_back(std::byte{0x00});
    const auto write = vu::decode_region_write(payload, 0, region_sizes);
    ASSERT_TRUE(write);
    EXPECT_EQ(write->access.offset, 0x14U);
    EXPECT_EQ(write->access.count, 4U);
    ASSERT_EQ(write->data.size(), 4U);
    EXPECT_EQ(write->data.data(), payload.data() + 16);
    EXPECT_EQ(write->data[2], std::byte{0x46});

    std::array<std::byte, 32> out{};
    ASSERT_EQ(vu::encode_reply(command_header(vu::command::region_write, 36, 6), write->access, out), 32U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 4), 32U);
    EXPECT_EQ(le_in<std::uint64_t>(out, 16), 0x14U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 24), 0U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 28), 4U);
}

TEST(vfio_user_protocol, region_write_rejects_every_malformed_request)
{
    const auto header_only = payload_of(vu::region_access{0, 0, 4});
    EXPECT_EQ(vu::decode_region_write(header_only, 0, region_sizes).error(), einval);           // data missing
    EXPECT_EQ(vu::decode_region_write(with_tail(header_only, 3), 0, region_sizes).error(), einval);
    EXPECT_EQ(vu::decode_region_write(with_tail(header_only, 5), 0, region_sizes).error(), einval);
    EXPECT_EQ(vu::decode_region_write(with_tail(header_only, 4), 1, region_sizes).error(), einval);
    EXPECT_EQ(vu::decode_region_write(std::span{header_only}.first(12), 0, region_sizes).error(), einval);
    EXPECT_EQ(vu::decode_region_write(payload_of(vu::region_access{0, 0, 0}), 0, region_sizes).error(), einval);
    EXPECT_EQ(vu::decode_region_write(with_tail(payload_of(vu::region_access{0x3FFE, 0, 4}), 4), 0, region_sizes)
                  .error(),
              einval);
    EXPECT_EQ(vu::decode_region_write(with_tail(payload_of(vu::region_access{0, 9, 4}), 4), 0, region_sizes).error(),
              einval);
    // A count above the limit is E2BIG even when the data that follows is short.
    EXPECT_EQ(vu::decode_region_write(with_tail(payload_of(vu::region_access{0, 0, 0xFFFFFFFF}), 4), 0, region_sizes)
                  .error(),
              e2big);
}

TEST(vfio_user_protocol, device_reset_takes_no_payload)
{
    EXPECT_EQ(vu::check_device_reset({}, 0), std::errc{});
    const std::array<std::byte, 1> extra{};
    EXPECT_EQ(vu::check_device_reset(extra, 0), einval);
    EXPECT_EQ(vu::check_device_reset({}, 1), einval);
}

TEST(vfio_user_protocol, replies_without_payload_and_error_replies)
{
    std::array<std::byte, 16> out{};
    auto request = command_header(vu::command::dma_map, 48, 0x4321);
    request.flags.set(vu::message_flags::no_reply, true);
    ASSERT_EQ(vu::encode_reply(request, std::span<const std::byte>{}, out), 16U);
    EXPECT_EQ(le_in<std::uint16_t>(out, 0), 0x4321U);
    EXPECT_EQ(le_in<std::uint16_t>(out, 2), 2U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 4), 16U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 8), 1U);
    EXPECT_EQ(le_in<std::uint32_t>(out, 12), 0U);

    for (const auto& [error, value] : {std::pair{einval, 22U}, std::pair{enotsup, 95U}, std::pair{e2big, 7U}}) {
        out.fill(std::byte{0xFF});
        ASSERT_EQ(vu::encode_error_reply(command_header(vu::command::device_feature, 24, 8), error, out), 16U);
        EXPECT_EQ(le_in<std::uint16_t>(out, 0), 8U);
        EXPECT_EQ(le_in<std::uint16_t>(out, 2), 16U);
        EXPECT_EQ(le_in<std::uint32_t>(out, 4), 16U);
        EXPECT_EQ(le_in<std::uint32_t>(out, 8), 0x21U);
        EXPECT_EQ(le_in<std::uint32_t>(out, 12), value);
    }

    const auto header = vu::make_reply_header(command_header(vu::command::region_read, 32, 1), 20);
    EXPECT_EQ(header.message_size, 36U);
    EXPECT_EQ(header.flags.get(vu::message_flags::type), vu::message_type::reply);
    EXPECT_FALSE(header.flags.get(vu::message_flags::no_reply));
    EXPECT_FALSE(header.flags.get(vu::message_flags::error));
}

TEST(vfio_user_protocol, random_payloads_never_crash_any_decoder)
{
    std::mt19937 random{12345};
    const std::string_view alphabet = R"({}[]":,0123456789-+.eE truefalsnl\u"capabilities max_msg_fds)";
    std::size_t accepted = 0;
    for (int round = 0; round < 20000; ++round) {
        std::vector<std::byte> payload(random() % 72);
        for (auto& byte : payload) {
            byte = static_cast<std::byte>(random() % 4 == 0 ? 0 : random() % 256);
        }
        const std::size_t fds = random() % 3;
        accepted += vu::decode_dma_map(payload, fds) ? 1U : 0U;
        accepted += vu::decode_dma_unmap(payload, fds) ? 1U : 0U;
        accepted += vu::decode_device_get_info(payload, fds) ? 1U : 0U;
        accepted += vu::decode_region_info(payload, fds, vu::pci_num_regions) ? 1U : 0U;
        accepted += vu::decode_irq_info(payload, fds, vu::pci_num_irqs) ? 1U : 0U;
        accepted += vu::decode_set_irqs(payload, fds, irq_counts) ? 1U : 0U;
        accepted += vu::decode_region_read(payload, fds, region_sizes) ? 1U : 0U;
        accepted += vu::decode_region_write(payload, fds, region_sizes) ? 1U : 0U;
        accepted += vu::decode_version(payload, fds) ? 1U : 0U;
        accepted += vu::parse_header(payload) ? 1U : 0U;

        std::string json;
        const std::size_t length = random() % 48;
        for (std::size_t i = 0; i < length; ++i) {
            json += alphabet[random() % alphabet.size()];
        }
        accepted += vu::decode_version(version_json(json), 0) ? 1U : 0U;
    }
    EXPECT_GT(accepted, 0U); // some random inputs are valid; none may crash or read out of bounds
}
