#pragma once
/// The client capabilities of a VERSION request ("vfio-user: VFIO_USER_VERSION"):
/// client_capabilities, with the specification's defaults for the members a client leaves out,
/// and detail::parse_capabilities_json, which reads them from the request's JSON text with
/// detail::json_reader, just enough of a JSON reader (RFC 8259) to validate the whole text, pick
/// out the members it knows and skip the rest, nesting bounded by detail::max_json_depth.
/// decode_version (decode.hpp) finds the text in the payload; write_capabilities_json
/// (encode.hpp) writes the server's answer.

#include <cstddef>
#include <cstdint>
#include <string_view>

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
[[nodiscard]] constexpr bool parse_capabilities_json(std::string_view text,
                                                     client_capabilities& caps) noexcept
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
            return r.read_object(depth,
                                 [&caps](std::string_view inner_key, json_reader& inner, int inner_depth) {
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

} // namespace detail

} // namespace transport::vfio_user
NVMEKIT_END_NAMESPACE
