#include <nvmekit/transport/vfio_user/protocol/capabilities.hpp>

#include <array>
#include <string>
#include <string_view>
#include <system_error>

#include <gtest/gtest.h>

#include <nvmekit/transport/vfio_user/protocol/decode.hpp>

#include "transport/vfio_user/protocol/protocol_test_support.hpp"

namespace vu = nvmekit::transport::vfio_user;
using nvmekit_test::einval;
using nvmekit_test::qemu_capabilities;
using nvmekit_test::version_json;
using nvmekit_test::version_payload_with;

// The capabilities as a client sends them: JSON text in a VERSION payload, framed by decode_version.

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
    EXPECT_TRUE(caps.has_max_msg_fds && caps.has_max_data_xfer_size && caps.has_pgsizes &&
                caps.has_max_dma_maps);
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

TEST(vfio_user_protocol, capabilities_json_is_read_without_the_version_framing)
{
    vu::client_capabilities eight{};
    EXPECT_TRUE(vu::detail::parse_capabilities_json(R"({"capabilities":{"max_dma_maps":8}})", eight));
    EXPECT_EQ(eight.max_dma_maps, 8U);
    EXPECT_TRUE(eight.has_max_dma_maps);
    EXPECT_FALSE(eight.has_pgsizes);

    vu::client_capabilities caps{};
    EXPECT_TRUE(vu::detail::parse_capabilities_json("", caps)); // no text: every default applies
    EXPECT_EQ(caps.max_msg_fds, 1U);
    EXPECT_FALSE(caps.has_max_msg_fds);

    ASSERT_TRUE(vu::detail::parse_capabilities_json(qemu_capabilities, caps));
    EXPECT_EQ(caps.max_msg_fds, 16U);
    EXPECT_EQ(caps.max_data_xfer_size, 1048576U);
    EXPECT_TRUE(caps.has_max_msg_fds && caps.has_max_data_xfer_size && caps.has_pgsizes &&
                caps.has_max_dma_maps);
    EXPECT_TRUE(caps.migration);
    EXPECT_TRUE(caps.write_multiple);

    vu::client_capabilities rejected{};
    EXPECT_FALSE(vu::detail::parse_capabilities_json("{", rejected));
    EXPECT_FALSE(vu::detail::parse_capabilities_json(R"({"capabilities":{}} x)", rejected));
    EXPECT_FALSE(vu::detail::parse_capabilities_json(R"({"capabilities":{"pgsizes":"4096"}})", rejected));
}

TEST(vfio_user_protocol, capabilities_json_is_read_as_json)
{
    // Escapes in member names are JSON's; unknown members and the other members of the root
    // are skipped whatever they hold.
    vu::client_capabilities caps{};
    ASSERT_TRUE(vu::detail::parse_capabilities_json(
        R"({"name":[1,{"a":null}],"capabilities":{"max\u005fmsg_fds":4,"extra":[[1.5]],)"
        R"("twin_socket":{"supported":true,"x":"y"},"migration":{"pgsize":4096}}})",
        caps));
    EXPECT_EQ(caps.max_msg_fds, 4U);
    EXPECT_TRUE(caps.has_max_msg_fds);
    EXPECT_TRUE(caps.twin_socket);
    EXPECT_TRUE(caps.migration);
    EXPECT_TRUE(vu::detail::parse_capabilities_json(" \n\t", caps)); // only white space: the defaults

    // Each known member must have its type: a non-negative integer, a boolean, an object.
    for (const char* text :
         {R"({"capabilities":{"max_msg_fds":-1}})", R"({"capabilities":{"max_msg_fds":1.0}})",
          R"({"capabilities":{"max_dma_maps":18446744073709551616}})",
          R"({"capabilities":{"write_multiple":1}})", R"({"capabilities":{"migration":true}})",
          R"({"capabilities":{"twin_socket":{"supported":"yes"}}})", R"({"capabilities":[]})",
          R"([{"capabilities":{}}])", R"("capabilities")", R"({"capabilities":{"pgsizes":4096},})"}) {
        vu::client_capabilities refused{};
        EXPECT_FALSE(vu::detail::parse_capabilities_json(text, refused)) << text;
    }
    // Nesting is bounded wherever it is
    const auto deep = [](int arrays) {
        const auto count = static_cast<std::size_t>(arrays);
        return R"({"other":)" + std::string(count, '[') + std::string(count, ']') + "}";
    };
    vu::client_capabilities refused{};
    EXPECT_TRUE(vu::detail::parse_capabilities_json(deep(vu::detail::max_json_depth), refused));
    EXPECT_FALSE(vu::detail::parse_capabilities_json(deep(vu::detail::max_json_depth + 1), refused));
}
