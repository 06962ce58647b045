#pragma once
/// The client capabilities of a VERSION request ("vfio-user: VFIO_USER_VERSION"):
/// client_capabilities, with the specification's defaults for the members a client leaves out,
/// and detail::parse_capabilities_json, which reads them from the request's JSON text with
/// nlohmann_json's SAX parser: the whole text validated, the members it knows picked out and the
/// rest skipped, nesting bounded by detail::max_json_depth. (This is why the vfio-user headers
/// are the component nvmekit::vfio_user, which needs nlohmann_json.)
/// decode_version (decode.hpp) finds the text in the payload; write_capabilities_json
/// (encode.hpp) writes the server's answer.

#include <array>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include <nvmekit/config.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace transport::vfio_user {

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

namespace detail {

/// Deepest JSON nesting accepted in capabilities; deeper input is rejected.
inline constexpr int max_json_depth = 16;

/// nlohmann_json's SAX events for the capabilities object: the root must be an object; of its
/// "capabilities" object it records the members it knows (each must have the specification's
/// type) and skips the rest; any nesting beyond max_json_depth, and any syntax error, fails.
class capabilities_reader {
public:
    using json = nlohmann::json;
    explicit capabilities_reader(client_capabilities& caps) noexcept : caps_{caps} {}

    bool null() { return value(kind::other); }
    bool boolean(bool flag) { return value(kind::boolean, 0, flag); }
    bool number_integer(json::number_integer_t number)
    {
        return number < 0 ? value(kind::other)
                          : value(kind::unsigned_number, static_cast<std::uint64_t>(number));
    }
    bool number_unsigned(json::number_unsigned_t number) { return value(kind::unsigned_number, number); }
    bool number_float(json::number_float_t /*number*/, const json::string_t& /*text*/)
    {
        return value(kind::other);
    }
    bool string(json::string_t& /*text*/) { return value(kind::other); }
    bool binary(json::binary_t& /*bytes*/) { return false; } // JSON text has none
    bool start_object(std::size_t /*elements*/) { return value(kind::object) && enter(); }
    bool key(json::string_t& name)
    {
        if (depth_ < keys_.size()) {
            keys_[depth_] = name;
        }
        return true;
    }
    bool end_object() { return leave(); }
    bool start_array(std::size_t /*elements*/) { return value(kind::other) && enter(); }
    bool end_array() { return leave(); }
    bool parse_error(std::size_t /*position*/, const std::string& /*token*/,
                     const nlohmann::detail::exception& /*e*/)
    {
        return false;
    }

private:
    enum class kind : std::uint8_t { object, boolean, unsigned_number, other };

    bool enter()
    {
        ++depth_;
        if (depth_ < keys_.size()) {
            keys_[depth_].clear();
        }
        return depth_ - 1 <= max_json_depth; // the root object is at depth 0
    }
    bool leave()
    {
        --depth_;
        return true;
    }

    /// A value of kind `k` at the current place: whether it may be there, recording a known one.
    bool value(kind k, std::uint64_t number = 0, bool flag = false)
    {
        if (depth_ == 0) {
            return k == kind::object; // the root
        }
        if (keys_[1] != "capabilities") {
            return true; // another member of the root: skipped
        }
        if (depth_ == 1) {
            return k == kind::object;
        }
        const auto unsigned_member = [&](std::uint64_t& member, bool& named) {
            named = true;
            member = number;
            return k == kind::unsigned_number;
        };
        if (depth_ == 2) {
            const std::string& name = keys_[2];
            if (name == "max_msg_fds") {
                return unsigned_member(caps_.max_msg_fds, caps_.has_max_msg_fds);
            }
            if (name == "max_data_xfer_size") {
                return unsigned_member(caps_.max_data_xfer_size, caps_.has_max_data_xfer_size);
            }
            if (name == "max_dma_maps") {
                return unsigned_member(caps_.max_dma_maps, caps_.has_max_dma_maps);
            }
            if (name == "pgsizes") {
                return unsigned_member(caps_.pgsizes, caps_.has_pgsizes);
            }
            if (name == "write_multiple") {
                caps_.write_multiple = flag;
                return k == kind::boolean;
            }
            if (name == "migration") {
                caps_.migration = true;
                return k == kind::object;
            }
            if (name == "twin_socket") {
                return k == kind::object;
            }
            return true;
        }
        if (depth_ == 3 && keys_[2] == "twin_socket" && keys_[3] == "supported") {
            caps_.twin_socket = flag;
            return k == kind::boolean;
        }
        return true;
    }

    client_capabilities& caps_;
    std::size_t depth_ = 0;
    /// The member being read at depths 1 to 3 (index 0 unused).
    std::array<std::string, 4> keys_{};
};

/// Reads the capabilities from a VERSION request's JSON text (nlohmann_json's parser, strict:
/// nothing may follow the object). Empty text (only white space) leaves every default. False
/// for text that is not such an object, a known member of the wrong type, or nesting deeper than
/// max_json_depth.
[[nodiscard]] inline bool parse_capabilities_json(std::string_view text, client_capabilities& caps) noexcept
{
    if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) {
        return true; // no capabilities at all: every default applies
    }
    try {
        capabilities_reader reader{caps};
        return nlohmann::json::sax_parse(text.begin(), text.end(), &reader);
    } catch (const std::exception&) {
        return false; // out of memory
    }
}

} // namespace detail

} // namespace transport::vfio_user
NVMEKIT_END_NAMESPACE
