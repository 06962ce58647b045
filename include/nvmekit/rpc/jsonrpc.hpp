#pragma once
/// JSON-RPC 2.0 as SPDK's management interface speaks it (SPDK's doc/jsonrpc.md; the server side
/// of `scripts/rpc.py`), independent of what the methods do: the stream decoder, the method
/// registry with typed parameter checking, and the response encoder. No I/O here (server.hpp
/// serves a registry on a Unix socket).
///
///     namespace rpc = nvmekit::rpc;
///     rpc::registry methods;
///     methods.add("bdev_null_create", [](const nlohmann::json& params) -> rpc::outcome {
///         auto [name, blocks, block_size] = rpc::params{params}.read(
///             rpc::required<std::string>("name"), rpc::required<std::uint64_t>("num_blocks"),
///             rpc::optional<std::uint32_t>("block_size", 512));
///         return name;
///     });
///     rpc::stream_decoder decoder;
///     decoder.feed(bytes_received);
///     for (auto item = decoder.next(); item.status != rpc::decode_status::need_more;
///          item = decoder.next()) {
///         if (item.status == rpc::decode_status::failed) {
///             send(item.error_response()); // then close the connection
///             break;
///         }
///         if (auto response = methods.dispatch(item.value)) send(*response);
///     }
///
/// The wire format (SPDK's behaviour, which rpc.py relies on):
/// - Requests are JSON values back to back on a stream, with no framing and no handshake; a value
///   may arrive split over several reads and several may arrive in one, with any whitespace
///   between them (rpc.py sends them pretty-printed, joined by newlines).
/// - Each request is an object with exactly the members "jsonrpc" (the string "2.0"), "method"
///   (a string), optional "params" (an object or an array) and optional "id" (a string, a number
///   or null); anything else is Invalid Request (-32600). A batch (a top-level array) is Invalid
///   Request too: SPDK does not support batches.
/// - The response is one JSON object, {"jsonrpc":"2.0","id":...,"result":...} or
///   {"jsonrpc":"2.0","id":...,"error":{"code":...,"message":"..."}}, followed by a newline. The
///   id is the request's (an integer in the 64-bit range, a string or null exactly; other
///   numbers as the closest double).
/// - A request without "id" is a notification: a result is not sent. An error is, with "id":
///   null, as SPDK's server does (it answers every failed request, notification or not);
///   registry_options::answer_failed_notifications = false follows the JSON-RPC 2.0 text instead.
/// - Malformed JSON is Parse Error (-32700), answered with "id": null; a stream has no point to
///   resynchronise at after it, so the connection is closed (as SPDK closes it). SPDK's
///   jsonrpc.md counts "request is too long" as a parse error too: so does stream_decoder.

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include <nvmekit/config.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace rpc {

/// The error codes of SPDK's jsonrpc.md ("Error response message"): the five of JSON-RPC 2.0 and
/// SPDK's own -1, "invalid state" (the method exists but cannot be called in the current state;
/// SPDK_JSONRPC_ERROR_INVALID_STATE in SPDK's include/spdk/jsonrpc.h). Handlers may use any other
/// code too (SPDK's methods often answer a negative errno).
namespace error_code {
inline constexpr int parse_error = -32700;
inline constexpr int invalid_request = -32600;
inline constexpr int method_not_found = -32601;
inline constexpr int invalid_params = -32602;
inline constexpr int internal_error = -32603;
inline constexpr int invalid_state = -1;
} // namespace error_code

/// A JSON-RPC error object.
struct error {
    int code = error_code::internal_error;
    std::string message;

    friend bool operator==(const error&, const error&) = default;
};

/// Thrown by handlers (and by the parameter helpers) to answer with `error()`.
class exception : public std::runtime_error {
public:
    exception(int code, const std::string& message) : std::runtime_error{message}, error_{code, message} {}
    explicit exception(rpc::error error) : std::runtime_error{error.message}, error_{std::move(error)} {}
    [[nodiscard]] const rpc::error& error() const noexcept { return error_; }

private:
    rpc::error error_;
};

/// What a handler returns: a result (any JSON value) or an error.
class outcome {
public:
    outcome() : value_{std::in_place_index<0>, nullptr} {}
    outcome(rpc::error error) : value_{std::in_place_index<1>, std::move(error)} {}
    template <typename T>
        requires(!std::is_same_v<std::remove_cvref_t<T>, outcome> &&
                 !std::is_same_v<std::remove_cvref_t<T>, rpc::error> &&
                 std::is_constructible_v<nlohmann::json, T&&>)
    // Implicit, so a handler returns any JSON value; the constraint keeps copies and moves of
    // outcome away from it.
    outcome(T&& result) // NOLINT(bugprone-forwarding-reference-overload)
        : value_{std::in_place_index<0>, std::forward<T>(result)}
    {}

    [[nodiscard]] bool ok() const noexcept { return value_.index() == 0; }
    [[nodiscard]] const nlohmann::json& result() const { return std::get<0>(value_); }
    [[nodiscard]] const rpc::error& error() const { return std::get<1>(value_); }

private:
    std::variant<nlohmann::json, rpc::error> value_;
};

/// A method: receives the request's "params" (null when the request has none).
using handler = std::function<outcome(const nlohmann::json& params)>;

// ---------------------------------------------------------------------------------------------
// Response encoding

namespace detail {
inline std::string dump(const nlohmann::json& value)
{
    // Handlers may put bytes that are not UTF-8 into strings; they go out as U+FFFD rather than
    // failing the response.
    return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}
} // namespace detail

/// {"jsonrpc":"2.0","id":<id>,"result":<result>} and a newline.
[[nodiscard]] inline std::string encode_result(const nlohmann::json& id, const nlohmann::json& result)
{
    return R"({"jsonrpc":"2.0","id":)" + detail::dump(id) + R"(,"result":)" + detail::dump(result) + "}\n";
}

/// {"jsonrpc":"2.0","id":<id>,"error":{"code":<code>,"message":<message>}} and a newline.
[[nodiscard]] inline std::string encode_error(const nlohmann::json& id, const error& failure)
{
    return R"({"jsonrpc":"2.0","id":)" + detail::dump(id) + R"(,"error":{"code":)" +
           std::to_string(failure.code) + R"(,"message":)" + detail::dump(nlohmann::json(failure.message)) +
           "}}\n";
}

// ---------------------------------------------------------------------------------------------
// Stream decoder

/// Bounds on what one request may hold.
struct decoder_limits {
    /// A request (one JSON value) longer than this is a parse error; whitespace between requests
    /// does not count.
    std::size_t max_request_bytes = std::size_t{64} << 20;
    /// Objects and arrays nested deeper than this are a parse error (the JSON parser recurses).
    std::size_t max_depth = 128;
};

enum class decode_status : std::uint8_t {
    need_more, ///< no complete value buffered: feed more bytes
    value,     ///< `value` holds the next JSON value (not necessarily a valid request)
    failed,    ///< the stream is not JSON (or a value is over the limits): answer, then close
};

struct decode_result {
    decode_status status = decode_status::need_more;
    nlohmann::json value;      ///< with decode_status::value
    std::string error_message; ///< with decode_status::failed

    /// With decode_status::failed: the Parse Error response to send before closing.
    [[nodiscard]] std::string error_response() const
    {
        return encode_error(nullptr, {error_code::parse_error, error_message});
    }
};

/// Splits a byte stream into JSON values. Every byte is scanned once (strings, escapes and
/// nesting are tracked across feeds); a value is parsed when its last byte arrives. After a
/// failure the decoder stays failed: there is no way back into sync with the stream.
class stream_decoder {
public:
    explicit stream_decoder(decoder_limits limits = {}) : limits_{limits} {}

    /// Appends received bytes (ignored once failed).
    void feed(std::string_view bytes)
    {
        if (failed_) {
            return;
        }
        if (consumed_ > 0) {
            buffer_.erase(0, consumed_);
            scan_ -= consumed_;
            if (start_ != npos) {
                start_ -= consumed_;
            }
            consumed_ = 0;
        }
        buffer_.append(bytes);
    }

    /// The next complete value, or need_more, or the failure.
    [[nodiscard]] decode_result next()
    {
        if (failed_) {
            return {decode_status::failed, {}, failure_};
        }
        while (scan_ < buffer_.size()) {
            const char c = buffer_[scan_];
            if (start_ == npos) {
                if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
                    ++scan_;
                    consumed_ = scan_;
                    continue;
                }
                if (!begin_value(c)) {
                    return fail(unexpected_character(c));
                }
                start_ = scan_++; // an object, array or string ends at its closing byte, a bare
                continue;         // scalar (number, true, false, null) before the next delimiter
            }
            if (in_string_) {
                if (escape_) {
                    escape_ = false;
                } else if (c == '\\') {
                    escape_ = true;
                } else if (c == '"') {
                    in_string_ = false;
                    if (depth_ == 0) {
                        return complete(scan_ + 1);
                    }
                }
                ++scan_;
                continue;
            }
            if (depth_ == 0) {
                // A bare scalar (number, true, false, null) ends before a delimiter.
                if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '{' || c == '}' || c == '[' ||
                    c == ']' || c == '"' || c == ',' || c == ':') {
                    return complete(scan_);
                }
                ++scan_;
                continue;
            }
            if (c == '"') {
                in_string_ = true;
            } else if (c == '{' || c == '[') {
                if (++depth_ > limits_.max_depth) {
                    return fail("request nests objects and arrays deeper than " +
                                std::to_string(limits_.max_depth) + " levels");
                }
            } else if (c == '}' || c == ']') {
                if (--depth_ == 0) {
                    return complete(scan_ + 1);
                }
            }
            ++scan_;
        }
        if (start_ != npos && buffer_.size() - start_ > limits_.max_request_bytes) {
            return fail(too_long());
        }
        return {};
    }

    [[nodiscard]] bool failed() const noexcept { return failed_; }
    /// Bytes held: the incomplete value and values not taken by next() yet.
    [[nodiscard]] std::size_t buffered() const noexcept { return buffer_.size() - consumed_; }
    [[nodiscard]] const decoder_limits& limits() const noexcept { return limits_; }

private:
    static constexpr std::size_t npos = std::string::npos;

    bool begin_value(char c)
    {
        switch (c) {
        case '{':
        case '[': depth_ = 1; return true;
        case '"': in_string_ = true; return true;
        case '-':
        case 't':
        case 'f':
        case 'n': return true;
        default: return c >= '0' && c <= '9';
        }
    }

    decode_result complete(std::size_t end)
    {
        if (end - start_ > limits_.max_request_bytes) {
            return fail(too_long());
        }
        const char* first = buffer_.data() + start_;
        const char* last = buffer_.data() + end;
        decode_result result{decode_status::value, {}, {}};
        try {
            result.value = nlohmann::json::parse(first, last);
        } catch (const nlohmann::json::parse_error& e) {
            return fail(std::string{"malformed JSON: "} + e.what());
        } catch (const nlohmann::json::exception& e) {
            // Well-formed but not representable, such as a number beyond a double (1e400):
            // nlohmann_json throws out_of_range, not parse_error.
            return fail(std::string{"JSON value out of range: "} + e.what());
        } catch (const std::bad_alloc&) {
            return fail("out of memory parsing the request");
        }
        scan_ = end;
        consumed_ = end;
        start_ = npos;
        depth_ = 0;
        in_string_ = false;
        escape_ = false;
        return result;
    }

    decode_result fail(std::string message)
    {
        failed_ = true;
        failure_ = std::move(message);
        buffer_.clear();
        buffer_.shrink_to_fit();
        scan_ = consumed_ = 0;
        start_ = npos;
        return {decode_status::failed, {}, failure_};
    }

    [[nodiscard]] std::string too_long() const
    {
        return "request is longer than " + std::to_string(limits_.max_request_bytes) + " bytes";
    }

    static std::string unexpected_character(char c)
    {
        static constexpr char digits[] = "0123456789abcdef";
        const auto byte = static_cast<unsigned char>(c);
        std::string text = "malformed JSON: unexpected byte 0x";
        text += digits[byte >> 4];
        text += digits[byte & 0xf];
        if (byte >= 0x20 && byte < 0x7f) {
            text += " '";
            text += c;
            text += '\'';
        }
        return text + " where a request should begin";
    }

    decoder_limits limits_;
    std::string buffer_;
    std::size_t consumed_ = 0; ///< bytes of buffer_ no longer needed
    std::size_t scan_ = 0;     ///< next byte to scan
    std::size_t start_ = npos; ///< first byte of the value being scanned
    std::size_t depth_ = 0;    ///< open objects and arrays
    bool in_string_ = false;
    bool escape_ = false;
    bool failed_ = false;
    std::string failure_;
};

// ---------------------------------------------------------------------------------------------
// Typed parameters

namespace detail {

template <typename T>
struct is_vector : std::false_type {};
template <typename T>
struct is_vector<std::vector<T>> : std::true_type {};

template <typename T>
std::string expected_type()
{
    if constexpr (std::is_same_v<T, bool>) {
        return "a boolean";
    } else if constexpr (std::is_same_v<T, std::string>) {
        return "a string";
    } else if constexpr (std::is_integral_v<T>) {
        return "an integer from " + std::to_string(std::numeric_limits<T>::min()) + " to " +
               std::to_string(std::numeric_limits<T>::max());
    } else if constexpr (std::is_floating_point_v<T>) {
        return "a number";
    } else if constexpr (std::is_same_v<T, nlohmann::json>) {
        return "a JSON value";
    } else if constexpr (is_vector<T>::value) {
        return "an array, each element " + expected_type<typename T::value_type>();
    } else {
        static_assert(is_vector<T>::value, "rpc parameters are bool, std::string, integers, floating point, "
                                           "nlohmann::json or std::vector of those");
    }
}

[[noreturn]] inline void wrong_type(std::string_view name, const std::string& expected,
                                    const nlohmann::json& value)
{
    std::string message = "parameter '";
    message.append(name);
    message += "' must be " + expected + ", not ";
    message += value.is_number() ? std::string{"the number "} + dump(value) : std::string{value.type_name()};
    throw exception{error_code::invalid_params, message};
}

template <typename T>
T decode(std::string_view name, const nlohmann::json& value)
{
    if constexpr (std::is_same_v<T, nlohmann::json>) {
        return value;
    } else if constexpr (std::is_same_v<T, bool>) {
        if (!value.is_boolean()) {
            wrong_type(name, expected_type<T>(), value);
        }
        return value.get<bool>();
    } else if constexpr (std::is_same_v<T, std::string>) {
        if (!value.is_string()) {
            wrong_type(name, expected_type<T>(), value);
        }
        return value.get<std::string>();
    } else if constexpr (std::is_integral_v<T>) {
        if (value.is_number_unsigned()) {
            const auto v = value.get<std::uint64_t>();
            if (v <= static_cast<std::uint64_t>(std::numeric_limits<T>::max())) {
                return static_cast<T>(v);
            }
        } else if (value.is_number_integer()) {
            const auto v = value.get<std::int64_t>();
            if constexpr (std::is_signed_v<T>) {
                if (v >= static_cast<std::int64_t>(std::numeric_limits<T>::min()) &&
                    v <= static_cast<std::int64_t>(std::numeric_limits<T>::max())) {
                    return static_cast<T>(v);
                }
            } else if (v >= 0 && static_cast<std::uint64_t>(v) <= std::numeric_limits<T>::max()) {
                return static_cast<T>(v);
            }
        }
        wrong_type(name, expected_type<T>(), value);
    } else if constexpr (std::is_floating_point_v<T>) {
        if (!value.is_number()) {
            wrong_type(name, expected_type<T>(), value);
        }
        return value.get<T>();
    } else {
        static_assert(is_vector<T>::value);
        if (!value.is_array()) {
            wrong_type(name, expected_type<T>(), value);
        }
        T out;
        out.reserve(value.size());
        for (std::size_t i = 0; i < value.size(); ++i) {
            out.push_back(
                decode<typename T::value_type>(std::string{name} + "[" + std::to_string(i) + "]", value[i]));
        }
        return out;
    }
}

} // namespace detail

/// Parameter declarations for params::read.
template <typename T>
struct required_parameter {
    std::string_view name;
};
template <typename T>
struct optional_parameter {
    std::string_view name;
    T fallback;
};
template <typename T>
struct maybe_parameter {
    std::string_view name;
};
template <typename T>
struct default_only_parameter {
    std::string_view name;
    T value;
};

/// A parameter that must be present: T.
template <typename T>
[[nodiscard]] required_parameter<T> required(std::string_view name)
{
    return {name};
}
/// A parameter that may be absent: T, `fallback` when absent.
template <typename T>
[[nodiscard]] optional_parameter<T> optional(std::string_view name, T fallback)
{
    return {name, std::move(fallback)};
}
/// A parameter that may be absent: std::optional<T>.
template <typename T>
[[nodiscard]] maybe_parameter<T> maybe(std::string_view name)
{
    return {name};
}
/// A parameter this implementation does not act on but accepts when it is absent or holds
/// `value` (its default, as clients such as rpc.py send it); any other value is refused naming
/// it. Reads as `value`.
template <typename T>
[[nodiscard]] default_only_parameter<T> accepted_when_default(std::string_view name, T value)
{
    return {name, std::move(value)};
}

/// A handler's view of its "params": an object (or absent, which reads as an empty object).
/// Each parameter read is declared; finish() (called by read()) refuses the undeclared ones.
/// Every failure throws rpc::exception with Invalid Params (-32602) and a message naming the
/// parameter.
class params {
public:
    explicit params(const nlohmann::json& value) : value_{value}
    {
        if (!value.is_null() && !value.is_object()) {
            throw exception{error_code::invalid_params,
                            std::string{"params must be an object, not "} + value.type_name()};
        }
    }

    template <typename T>
    [[nodiscard]] T get(const required_parameter<T>& p)
    {
        const nlohmann::json* v = find(p.name);
        if (v == nullptr) {
            throw exception{error_code::invalid_params, "missing parameter '" + std::string{p.name} + "' (" +
                                                            detail::expected_type<T>() + ")"};
        }
        return detail::decode<T>(p.name, *v);
    }
    template <typename T>
    [[nodiscard]] T get(const optional_parameter<T>& p)
    {
        const nlohmann::json* v = find(p.name);
        return v == nullptr ? p.fallback : detail::decode<T>(p.name, *v);
    }
    template <typename T>
    [[nodiscard]] std::optional<T> get(const maybe_parameter<T>& p)
    {
        const nlohmann::json* v = find(p.name);
        return v == nullptr ? std::nullopt : std::optional<T>{detail::decode<T>(p.name, *v)};
    }
    template <typename T>
    [[nodiscard]] T get(const default_only_parameter<T>& p)
    {
        const nlohmann::json* v = find(p.name);
        if (v != nullptr && detail::decode<T>(p.name, *v) != p.value) {
            throw exception{error_code::invalid_params, "parameter '" + std::string{p.name} +
                                                            "' is not supported with a value other than " +
                                                            detail::dump(nlohmann::json(p.value))};
        }
        return p.value;
    }

    /// Refuses the parameters present but never declared, naming them all.
    void finish() const
    {
        if (!value_.is_object()) {
            return;
        }
        std::vector<std::string> unknown;
        for (const auto& [key, v] : value_.items()) {
            if (std::find(declared_.begin(), declared_.end(), key) == declared_.end()) {
                unknown.push_back(key);
            }
        }
        if (unknown.empty()) {
            return;
        }
        std::string message = unknown.size() == 1 ? "unknown parameter " : "unknown parameters ";
        for (std::size_t i = 0; i < unknown.size(); ++i) {
            message += (i == 0 ? "'" : ", '") + unknown[i] + "'";
        }
        throw exception{error_code::invalid_params, message};
    }

    /// Reads every declared parameter, then finish(): a tuple of their values, in order.
    template <typename... Declarations>
    [[nodiscard]] auto read(const Declarations&... declarations)
    {
        std::tuple<decltype(get(declarations))...> values{get(declarations)...};
        finish();
        return values;
    }

private:
    const nlohmann::json* find(std::string_view name)
    {
        declared_.emplace_back(name);
        if (!value_.is_object()) {
            return nullptr;
        }
        const auto it = value_.find(name);
        return it == value_.end() ? nullptr : &*it;
    }

    const nlohmann::json& value_;
    std::vector<std::string> declared_;
};

/// For a method that takes no parameters: refuses a request that has "params" at all (even an
/// empty object or array) with Invalid Params and `message`, as SPDK's methods of that kind do.
inline void refuse_params(const nlohmann::json& params, const std::string& message)
{
    if (!params.is_null()) {
        throw exception{error_code::invalid_params, message};
    }
}

// ---------------------------------------------------------------------------------------------
// Method registry and dispatch

/// The states a server can be in, as SPDK's "startup" (before its subsystems are initialised,
/// `--wait-for-rpc`) and "runtime"; a method callable in neither current state answers Invalid
/// State (-1). A bit mask.
namespace states {
inline constexpr std::uint32_t startup = 1U << 0;
inline constexpr std::uint32_t runtime = 1U << 1;
inline constexpr std::uint32_t any = startup | runtime;
} // namespace states

struct method_options {
    std::uint32_t allowed_states = states::any;
};

struct registry_options {
    /// SPDK answers a notification (no "id") that fails with an error with "id": null; false
    /// answers nothing, as JSON-RPC 2.0 says.
    bool answer_failed_notifications = true;
};

/// Methods by name, and the dispatch of one decoded request to them. Holds `rpc_get_methods`
/// from the start (SPDK's parameters: "current", only the methods callable in the current state;
/// "include_aliases", deprecated names too). add() and add_alias() are not thread-safe with
/// dispatch(); set_state() is.
class registry {
public:
    explicit registry(registry_options options = {}) : options_{options}
    {
        add("rpc_get_methods", [this](const nlohmann::json& p) -> outcome {
            auto [current, include_aliases] =
                params{p}.read(optional<bool>("current", false), optional<bool>("include_aliases", false));
            return method_names(current, include_aliases);
        });
    }
    registry(const registry&) = delete;
    registry& operator=(const registry&) = delete;

    /// Adds a method; throws std::invalid_argument when the name is taken.
    void add(std::string name, handler method, method_options options = {})
    {
        if (name.empty() || !method) {
            throw std::invalid_argument("rpc: a method needs a name and a handler");
        }
        claim(name);
        index_.emplace(name, entries_.size());
        entries_.push_back({std::move(name), std::move(method), options, std::nullopt});
    }

    /// Adds `alias` as another (deprecated) name of the method `target`.
    void add_alias(std::string alias, const std::string& target)
    {
        const auto it = index_.find(target);
        if (it == index_.end() || entries_[it->second].alias_of) {
            throw std::invalid_argument("rpc: alias " + alias + " of " + target + ", which is no method");
        }
        claim(alias);
        const std::size_t target_index = it->second;
        index_.emplace(alias, entries_.size());
        entries_.push_back({std::move(alias), {}, {}, target_index});
    }

    [[nodiscard]] bool contains(std::string_view name) const { return index_.find(name) != index_.end(); }

    /// The names in the order they were added; with `current`, only those callable now.
    [[nodiscard]] std::vector<std::string> method_names(bool current = false,
                                                        bool include_aliases = false) const
    {
        std::vector<std::string> names;
        for (const auto& entry : entries_) {
            if (entry.alias_of && !include_aliases) {
                continue;
            }
            if (current && !callable(resolve(entry))) {
                continue;
            }
            names.push_back(entry.name);
        }
        return names;
    }

    void set_state(std::uint32_t state) noexcept { state_.store(state, std::memory_order_relaxed); }
    [[nodiscard]] std::uint32_t state() const noexcept { return state_.load(std::memory_order_relaxed); }

    /// Handles one decoded request: the response to send (ending in a newline), or nothing for a
    /// notification that succeeded.
    [[nodiscard]] std::optional<std::string> dispatch(const nlohmann::json& request) const
    {
        if (!request.is_object()) {
            return encode_error(nullptr, {error_code::invalid_request,
                                          request.is_array() ? "batch requests are not supported"
                                                             : "a request must be a JSON object"});
        }
        const auto id = request.find("id");
        const bool notification = id == request.end();
        const bool id_valid = notification || id->is_string() || id->is_number() || id->is_null();
        const nlohmann::json& response_id = notification || !id_valid ? null_ : *id;
        const auto refuse = [&](int code, std::string message) -> std::optional<std::string> {
            if (notification && !options_.answer_failed_notifications) {
                return std::nullopt;
            }
            return encode_error(response_id, {code, std::move(message)});
        };

        for (const auto& [key, value] : request.items()) {
            if (key != "jsonrpc" && key != "method" && key != "params" && key != "id") {
                return refuse(error_code::invalid_request, "unknown member '" + key + "' in the request");
            }
        }
        const auto version = request.find("jsonrpc");
        if (version == request.end() || !version->is_string() ||
            version->get_ref<const std::string&>() != "2.0") {
            return refuse(error_code::invalid_request, R"(the request must have "jsonrpc": "2.0")");
        }
        const auto method = request.find("method");
        if (method == request.end() || !method->is_string()) {
            return refuse(error_code::invalid_request, R"(the request must have a string "method")");
        }
        if (!id_valid) {
            return refuse(error_code::invalid_request, R"("id" must be a string, a number or null)");
        }
        const auto request_params = request.find("params");
        if (request_params != request.end() && !request_params->is_object() && !request_params->is_array()) {
            return refuse(error_code::invalid_request, R"("params" must be an object or an array)");
        }

        const std::string& name = method->get_ref<const std::string&>();
        const auto found = index_.find(name);
        if (found == index_.end()) {
            return refuse(error_code::method_not_found, "Method not found: " + name);
        }
        const entry& target = resolve(entries_[found->second]);
        if (!callable(target)) {
            return refuse(error_code::invalid_state,
                          "Method " + name + " is not callable in the current state");
        }

        outcome result;
        try {
            result = target.method(request_params == request.end() ? null_ : *request_params);
        } catch (const exception& e) {
            result = e.error();
        } catch (const std::bad_alloc&) {
            result = rpc::error{error_code::internal_error, "out of memory"};
        } catch (const std::exception& e) {
            result = rpc::error{error_code::internal_error, e.what()};
        } catch (...) {
            result = rpc::error{error_code::internal_error, "the method failed"};
        }
        if (!result.ok()) {
            return refuse(result.error().code, result.error().message);
        }
        if (notification) {
            return std::nullopt;
        }
        return encode_result(response_id, result.result());
    }

private:
    struct entry {
        std::string name;
        handler method;
        method_options options;
        std::optional<std::size_t> alias_of;
    };

    void claim(const std::string& name) const
    {
        if (contains(name)) {
            throw std::invalid_argument("rpc: method " + name + " is already registered");
        }
    }
    [[nodiscard]] const entry& resolve(const entry& e) const
    {
        return e.alias_of ? entries_[*e.alias_of] : e;
    }
    [[nodiscard]] bool callable(const entry& e) const { return (e.options.allowed_states & state()) != 0; }

    registry_options options_;
    std::vector<entry> entries_;
    std::map<std::string, std::size_t, std::less<>> index_;
    std::atomic<std::uint32_t> state_{states::runtime};
    nlohmann::json null_;
};

/// What a server does with one client's bytes, without the socket: the requests decoded from the
/// stream (stream_decoder) are dispatched to `Methods` (a registry, or anything with its
/// dispatch()), and each response goes to the caller. Nothing a client sends escapes as an
/// exception: one that escapes dispatch() answers that request with Internal Error and the stream
/// goes on; a stream that fails is answered with its Parse Error and takes nothing more. server.hpp
/// runs one per client; the RPC fuzz target runs the same code on its bytes.
template <typename Methods = registry>
class request_stream {
public:
    /// What answer() did.
    struct answered {
        std::size_t requests = 0;        ///< values decoded and dispatched
        bool failed = false;             ///< the stream failed (its Parse Error was given to respond)
        std::string failure;             ///< why, when failed
        std::size_t internal_errors = 0; ///< dispatches that threw
        std::string internal_error;      ///< what the last of them threw
    };

    request_stream(const Methods& methods, decoder_limits limits) : methods_{&methods}, decoder_{limits} {}

    /// Appends received bytes (ignored once the stream failed).
    void feed(std::string_view bytes) { decoder_.feed(bytes); }
    /// Bytes of a request not yet complete.
    [[nodiscard]] std::size_t buffered() const noexcept { return decoder_.buffered(); }
    [[nodiscard]] bool failed() const noexcept { return decoder_.failed(); }

    /// Dispatches the requests complete in the stream, in order, handing each response (a
    /// notification has none) to `respond(std::string)`, which returns whether to go on; a failed
    /// stream's Parse Error goes to respond() too, once.
    template <typename Respond>
    answered answer(Respond&& respond)
    {
        answered out;
        if (reported_failure_) {
            return out;
        }
        for (auto item = decoder_.next(); item.status != decode_status::need_more; item = decoder_.next()) {
            if (item.status == decode_status::failed) {
                reported_failure_ = true;
                out.failed = true;
                out.failure = item.error_message;
                static_cast<void>(respond(item.error_response()));
                return out;
            }
            ++out.requests;
            std::optional<std::string> response;
            try {
                response = methods_->dispatch(item.value);
            } catch (const std::exception& e) {
                ++out.internal_errors;
                out.internal_error = e.what();
                response = encode_error(nullptr, {error_code::internal_error, "the request failed"});
            } catch (...) {
                ++out.internal_errors;
                out.internal_error = "an exception of an unknown type";
                response = encode_error(nullptr, {error_code::internal_error, "the request failed"});
            }
            if (response && !respond(std::move(*response))) {
                return out;
            }
        }
        return out;
    }

private:
    const Methods* methods_;
    stream_decoder decoder_;
    bool reported_failure_ = false;
};

} // namespace rpc
NVMEKIT_END_NAMESPACE
