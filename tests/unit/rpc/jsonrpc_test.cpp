#include <nvmekit/rpc/jsonrpc.hpp>

#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <gtest/gtest.h>

namespace {
namespace rpc_jsonrpc_test {

namespace rpc = nvmekit::rpc;
using nlohmann::json;

// ---------------------------------------------------------------------------------------------
// Stream decoder

/// Feeds `chunks` one after the other, collecting every value; stops at a failure.
struct decoded {
    std::vector<json> values;
    std::optional<std::string> failure;
};

decoded decode_chunks(const std::vector<std::string>& chunks, rpc::decoder_limits limits = {})
{
    rpc::stream_decoder decoder{limits};
    decoded out;
    for (const auto& chunk : chunks) {
        decoder.feed(chunk);
        for (auto item = decoder.next(); item.status != rpc::decode_status::need_more;
             item = decoder.next()) {
            if (item.status == rpc::decode_status::failed) {
                out.failure = item.error_message;
                return out;
            }
            out.values.push_back(std::move(item.value));
        }
    }
    return out;
}

const std::string request_text =
    R"({"jsonrpc": "2.0", "method": "bdev_get_bdevs", "params": {"name": "a{b}[c]\"d\\"}, "id": 7})";

TEST(stream_decoder, one_request_in_one_read)
{
    const auto out = decode_chunks({request_text});
    ASSERT_FALSE(out.failure);
    ASSERT_EQ(out.values.size(), 1U);
    EXPECT_EQ(out.values[0]["params"]["name"], "a{b}[c]\"d\\");
    EXPECT_EQ(out.values[0]["id"], 7);
}

TEST(stream_decoder, request_split_at_every_byte)
{
    for (std::size_t cut = 1; cut < request_text.size(); ++cut) {
        const auto out = decode_chunks({request_text.substr(0, cut), request_text.substr(cut)});
        ASSERT_FALSE(out.failure) << cut;
        ASSERT_EQ(out.values.size(), 1U) << cut;
        EXPECT_EQ(out.values[0], json::parse(request_text)) << cut;
    }
}

TEST(stream_decoder, request_fed_one_byte_at_a_time)
{
    std::vector<std::string> bytes;
    for (const char c : request_text) {
        bytes.emplace_back(1, c);
    }
    const auto out = decode_chunks(bytes);
    ASSERT_FALSE(out.failure);
    ASSERT_EQ(out.values.size(), 1U);
    EXPECT_EQ(out.values[0], json::parse(request_text));
}

TEST(stream_decoder, several_requests_in_one_read_with_whitespace_between)
{
    // As rpc.py sends them: pretty-printed, joined by newlines; and with no space at all.
    const std::string pretty = json::parse(request_text).dump(2);
    const auto out =
        decode_chunks({"\n  " + pretty + "\n" + pretty + request_text + request_text + " \r\n\t"});
    ASSERT_FALSE(out.failure);
    ASSERT_EQ(out.values.size(), 4U);
    for (const auto& value : out.values) {
        EXPECT_EQ(value, json::parse(request_text));
    }
}

TEST(stream_decoder, merged_and_split_at_once)
{
    const std::string two = request_text + "\n" + request_text;
    const auto out = decode_chunks(
        {two.substr(0, 40), two.substr(40, request_text.size()), two.substr(40 + request_text.size())});
    ASSERT_FALSE(out.failure);
    EXPECT_EQ(out.values.size(), 2U);
}

TEST(stream_decoder, whitespace_alone_is_no_request)
{
    rpc::stream_decoder decoder;
    decoder.feed(" \n\r\t  \n");
    EXPECT_EQ(decoder.next().status, rpc::decode_status::need_more);
    EXPECT_EQ(decoder.buffered(), 0U);
}

TEST(stream_decoder, top_level_scalars_and_arrays_are_values)
{
    // Not requests, but JSON: the registry answers Invalid Request, the stream stays in sync.
    const auto out = decode_chunks({R"("text" 12 true null [1, {"a": 2}] {})", " "});
    ASSERT_FALSE(out.failure);
    ASSERT_EQ(out.values.size(), 6U);
    EXPECT_EQ(out.values[0], "text");
    EXPECT_EQ(out.values[1], 12);
    EXPECT_EQ(out.values[2], true);
    EXPECT_TRUE(out.values[3].is_null());
    EXPECT_TRUE(out.values[4].is_array());
    EXPECT_TRUE(out.values[5].is_object());
}

TEST(stream_decoder, bare_number_waits_for_its_delimiter)
{
    rpc::stream_decoder decoder;
    decoder.feed("12");
    EXPECT_EQ(decoder.next().status, rpc::decode_status::need_more);
    decoder.feed("34{");
    const auto item = decoder.next();
    ASSERT_EQ(item.status, rpc::decode_status::value);
    EXPECT_EQ(item.value, 1234);
    EXPECT_EQ(decoder.next().status, rpc::decode_status::need_more);
}

TEST(stream_decoder, garbage_is_a_parse_error)
{
    for (const std::string garbage : {"}", "]", "hello", ",", ":", "\x01", "\xff{}"}) {
        const auto out = decode_chunks({garbage});
        ASSERT_TRUE(out.failure) << garbage;
        EXPECT_NE(out.failure->find("malformed JSON"), std::string::npos) << *out.failure;
    }
}

TEST(stream_decoder, malformed_json_inside_a_value_is_a_parse_error)
{
    for (const std::string bad : {R"({"a": })", R"({"a" 1})", R"({"a": 1,})",
                                  R"([1, 2)"
                                  "}",
                                  R"({"a": tru})", "{\"a\": \"\xc3\x28\"}", R"({'a': 1})", "nul ", "-x "}) {
        const auto out = decode_chunks({bad});
        ASSERT_TRUE(out.failure) << bad;
        EXPECT_NE(out.failure->find("malformed JSON"), std::string::npos) << *out.failure;
    }
}

// Well-formed JSON whose numbers no double or 64-bit integer holds: nlohmann_json throws
// out_of_range for them, which must become a Parse Error like any other undecodable request.
TEST(stream_decoder, numbers_beyond_a_double_are_a_parse_error_not_an_exception)
{
    const std::string digits(400, '9');
    for (const std::string& bad :
         std::vector<std::string>{R"({"jsonrpc":"2.0","method":"spdk_get_version","id":1e400})",
                                  R"({"jsonrpc":"2.0","method":"x","params":{"n":-1e400},"id":1})",
                                  R"({"jsonrpc":"2.0","method":"x","params":[)" + digits + "],\"id\":1}",
                                  "[" + digits + "." + digits + "e999999]"}) {
        decoded out;
        ASSERT_NO_THROW(out = decode_chunks({bad})) << bad;
        ASSERT_TRUE(out.failure) << bad;
        EXPECT_NE(out.failure->find("out of range"), std::string::npos) << *out.failure;
        EXPECT_TRUE(out.values.empty());
    }
}

TEST(stream_decoder, requests_before_garbage_are_delivered_then_it_fails_for_good)
{
    rpc::stream_decoder decoder;
    decoder.feed(request_text + " xyz " + request_text);
    auto item = decoder.next();
    ASSERT_EQ(item.status, rpc::decode_status::value);
    item = decoder.next();
    ASSERT_EQ(item.status, rpc::decode_status::failed);
    EXPECT_NE(item.error_message.find("0x78 'x'"), std::string::npos) << item.error_message;
    EXPECT_TRUE(decoder.failed());
    decoder.feed(request_text);
    EXPECT_EQ(decoder.next().status, rpc::decode_status::failed);
    EXPECT_EQ(decoder.buffered(), 0U);

    const json response = json::parse(item.error_response());
    EXPECT_EQ(response,
              json::parse(R"({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": )" +
                          json(item.error_message).dump() + "}}"));
}

TEST(stream_decoder, request_over_the_size_limit_fails_while_incomplete)
{
    const rpc::decoder_limits limits{.max_request_bytes = 1000, .max_depth = 16};
    rpc::stream_decoder decoder{limits};
    decoder.feed(R"({"jsonrpc": "2.0", "method": "m", "params": {"data": ")");
    EXPECT_EQ(decoder.next().status, rpc::decode_status::need_more);
    decoder.feed(std::string(1000, 'a'));
    const auto item = decoder.next();
    ASSERT_EQ(item.status, rpc::decode_status::failed);
    EXPECT_EQ(item.error_message, "request is longer than 1000 bytes");
    EXPECT_EQ(decoder.buffered(), 0U);
}

TEST(stream_decoder, request_at_the_size_limit_passes_and_leading_whitespace_does_not_count)
{
    std::string text = R"({"a":")";
    text += std::string(1000 - text.size() - 2, 'x') + "\"}";
    ASSERT_EQ(text.size(), 1000U);
    const rpc::decoder_limits limits{.max_request_bytes = 1000, .max_depth = 16};
    auto out = decode_chunks({std::string(5000, ' ') + text, "\n" + text}, limits);
    EXPECT_FALSE(out.failure);
    EXPECT_EQ(out.values.size(), 2U);
    out = decode_chunks({text.substr(0, 999) + "x" + text.substr(999)}, limits);
    ASSERT_TRUE(out.failure);
    EXPECT_EQ(*out.failure, "request is longer than 1000 bytes");
}

TEST(stream_decoder, nesting_over_the_depth_limit_is_a_parse_error)
{
    const rpc::decoder_limits limits{.max_request_bytes = 1 << 20, .max_depth = 4};
    EXPECT_FALSE(decode_chunks({"[[[[1]]]]"}, limits).failure);
    const auto out = decode_chunks({"[[[[[1]]]]]"}, limits);
    ASSERT_TRUE(out.failure);
    EXPECT_EQ(*out.failure, "request nests objects and arrays deeper than 4 levels");
    // Brackets inside strings do not count.
    EXPECT_FALSE(decode_chunks({R"([[[["[[[[[[{{{{"]]]])"}, limits).failure);
    // The default bound stops a stack-exhausting request long before the size limit.
    EXPECT_TRUE(decode_chunks({std::string(100000, '[')}).failure);
}

TEST(stream_decoder, escapes_at_a_split)
{
    const std::string text = R"({"a": "x\\", "b": "\"}"})";
    for (std::size_t cut = 1; cut < text.size(); ++cut) {
        const auto out = decode_chunks({text.substr(0, cut), text.substr(cut)});
        ASSERT_FALSE(out.failure) << cut;
        ASSERT_EQ(out.values.size(), 1U) << cut;
        EXPECT_EQ(out.values[0]["a"], "x\\");
        EXPECT_EQ(out.values[0]["b"], "\"}");
    }
}

// ---------------------------------------------------------------------------------------------
// Response encoding

TEST(encode, result_and_error_as_spdk_writes_them)
{
    EXPECT_EQ(rpc::encode_result(1, true), "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":true}\n");
    EXPECT_EQ(
        rpc::encode_error("x", {-32601, "Method not found"}),
        "{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"error\":{\"code\":-32601,\"message\":\"Method not found\"}}\n");
    // One line: newlines inside values are escaped.
    EXPECT_EQ(rpc::encode_result(nullptr, "a\nb"),
              "{\"jsonrpc\":\"2.0\",\"id\":null,\"result\":\"a\\nb\"}\n");
}

TEST(encode, bytes_that_are_not_utf8_do_not_fail_the_response)
{
    const std::string response = rpc::encode_result(1, std::string{"ok\xff"});
    EXPECT_EQ(json::parse(response)["result"], "ok\xef\xbf\xbd");
}

// ---------------------------------------------------------------------------------------------
// Dispatch

json call(const rpc::registry& methods, const json& request)
{
    const auto response = methods.dispatch(request);
    if (!response) {
        return "no response";
    }
    EXPECT_EQ(response->back(), '\n');
    EXPECT_EQ(response->find('\n'), response->size() - 1);
    return json::parse(*response);
}

json request(const std::string& method, const json& params = nullptr, const json& id = 1)
{
    json r = {{"jsonrpc", "2.0"}, {"method", method}, {"id", id}};
    if (!params.is_null()) {
        r["params"] = params;
    }
    return r;
}

void expect_error(const json& response, int code, const std::string& message_part, const json& id = 1)
{
    ASSERT_TRUE(response.is_object()) << response;
    EXPECT_EQ(response["jsonrpc"], "2.0");
    EXPECT_EQ(response["id"], id) << response;
    ASSERT_TRUE(response.contains("error")) << response;
    EXPECT_FALSE(response.contains("result"));
    EXPECT_EQ(response["error"]["code"], code) << response;
    EXPECT_NE(response["error"]["message"].get<std::string>().find(message_part), std::string::npos)
        << response["error"]["message"];
}

struct dispatch : ::testing::Test {
    rpc::registry methods;
    void SetUp() override
    {
        methods.add("echo", [](const json& params) -> rpc::outcome { return params; });
        methods.add("fail", [](const json&) -> rpc::outcome { return rpc::error{-19, "No such device"}; });
        methods.add("throw_rpc", [](const json&) -> rpc::outcome {
            throw rpc::exception{-17, "File exists"};
        });
        methods.add("throw_std",
                    [](const json&) -> rpc::outcome { throw std::runtime_error{"disk on fire"}; });
        methods.add("throw_other", [](const json&) -> rpc::outcome { throw 42; });
        methods.add("startup_only", [](const json&) -> rpc::outcome { return true; },
                    {.allowed_states = rpc::states::startup});
    }
};

TEST_F(dispatch, result)
{
    EXPECT_EQ(call(methods, request("echo", {{"a", 1}})),
              json::parse(R"({"jsonrpc": "2.0", "id": 1, "result": {"a": 1}})"));
    EXPECT_EQ(*methods.dispatch(request("echo", json::array({1, 2}), 5)),
              "{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":[1,2]}\n");
    // Without params the handler sees null.
    EXPECT_EQ(*methods.dispatch(request("echo")), "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":null}\n");
}

TEST_F(dispatch, id_is_echoed_exactly)
{
    const std::vector<std::pair<std::string, std::string>> ids = {
        {"0", "0"},
        {"-12", "-12"},
        {"9223372036854775807", "9223372036854775807"},
        {"-9223372036854775808", "-9223372036854775808"},
        {"18446744073709551615", "18446744073709551615"},
        {"1.5", "1.5"},
        {"\"abc\"", "\"abc\""},
        {"\"\"", "\"\""},
        {R"("a\"b\\c\n\u00e9\ud83d\ude00")", "\"a\\\"b\\\\c\\n\xc3\xa9\xf0\x9f\x98\x80\""},
        {"null", "null"},
    };
    for (const auto& [sent, echoed] : ids) {
        const std::string text = R"({"jsonrpc":"2.0","method":"echo","params":[true],"id":)" + sent + "}";
        EXPECT_EQ(*methods.dispatch(json::parse(text)), R"({"jsonrpc":"2.0","id":)" + echoed +
                                                            R"(,"result":[true]})"
                                                            "\n")
            << sent;
    }
}

TEST_F(dispatch, notification_gets_no_result)
{
    json notification = request("echo", {{"a", 1}});
    notification.erase("id");
    EXPECT_FALSE(methods.dispatch(notification));
}

TEST_F(dispatch, failed_notification_is_answered_with_a_null_id_as_spdk_does)
{
    json notification = request("fail");
    notification.erase("id");
    expect_error(call(methods, notification), -19, "No such device", nullptr);
    notification["method"] = "no_such_method";
    expect_error(call(methods, notification), rpc::error_code::method_not_found, "no_such_method", nullptr);

    rpc::registry quiet{{.answer_failed_notifications = false}};
    notification["method"] = "rpc_get_methods";
    notification["params"] = {{"bogus", 1}};
    EXPECT_FALSE(quiet.dispatch(notification));
    notification.erase("params");
    EXPECT_FALSE(quiet.dispatch(notification));
}

TEST_F(dispatch, invalid_request)
{
    const auto invalid = [&](const json& r, const std::string& message, const json& id = 1) {
        SCOPED_TRACE(r.dump());
        expect_error(call(methods, r), rpc::error_code::invalid_request, message, id);
    };
    invalid(json::parse("[]"), "batch requests are not supported", nullptr);
    invalid(json::array({request("echo")}), "batch requests are not supported", nullptr);
    invalid(json("text"), "must be a JSON object", nullptr);
    invalid(json(12), "must be a JSON object", nullptr);
    invalid(json(nullptr), "must be a JSON object", nullptr);

    json r = request("echo");
    r.erase("jsonrpc");
    invalid(r, "\"jsonrpc\": \"2.0\"");
    r["jsonrpc"] = "1.0";
    invalid(r, "\"jsonrpc\": \"2.0\"");
    r["jsonrpc"] = 2.0;
    invalid(r, "\"jsonrpc\": \"2.0\"");

    r = request("echo");
    r.erase("method");
    invalid(r, "string \"method\"");
    r["method"] = 5;
    invalid(r, "string \"method\"");

    for (const json& id : {json(true), json::array({1}), json::object({{"a", 1}})}) {
        invalid(request("echo", nullptr, id), "\"id\" must be", nullptr);
    }

    for (const json& params : {json("x"), json(1), json(false)}) {
        invalid(request("echo", params), "\"params\" must be an object or an array");
    }

    r = request("echo");
    r["extra"] = 1;
    invalid(r, "unknown member 'extra'");
}

TEST_F(dispatch, method_not_found)
{
    expect_error(call(methods, request("bdev_nope")), rpc::error_code::method_not_found,
                 "Method not found: bdev_nope");
}

TEST_F(dispatch, invalid_state)
{
    expect_error(call(methods, request("startup_only")), rpc::error_code::invalid_state, "not callable");
    methods.set_state(rpc::states::startup);
    EXPECT_EQ(call(methods, request("startup_only"))["result"], true);
    EXPECT_EQ(call(methods, request("echo", {{"a", 1}}))["result"]["a"], 1);
}

TEST_F(dispatch, handler_errors)
{
    expect_error(call(methods, request("fail")), -19, "No such device");
    expect_error(call(methods, request("throw_rpc")), -17, "File exists");
    expect_error(call(methods, request("throw_std")), rpc::error_code::internal_error, "disk on fire");
    expect_error(call(methods, request("throw_other")), rpc::error_code::internal_error, "the method failed");
}

TEST_F(dispatch, registration_refuses_duplicates_and_dangling_aliases)
{
    EXPECT_THROW(methods.add("echo", [](const json&) -> rpc::outcome { return 1; }), std::invalid_argument);
    EXPECT_THROW(methods.add("rpc_get_methods", [](const json&) -> rpc::outcome { return 1; }),
                 std::invalid_argument);
    EXPECT_THROW(methods.add_alias("x", "missing"), std::invalid_argument);
    methods.add_alias("get_echo", "echo");
    EXPECT_THROW(methods.add_alias("get_echo", "echo"), std::invalid_argument);
    EXPECT_THROW(methods.add_alias("y", "get_echo"), std::invalid_argument);
    EXPECT_TRUE(methods.contains("get_echo"));
}

TEST_F(dispatch, alias_calls_its_method)
{
    methods.add_alias("get_echo", "echo");
    EXPECT_EQ(call(methods, request("get_echo", {{"b", 2}}))["result"]["b"], 2);
    methods.add_alias("old_startup_only", "startup_only");
    expect_error(call(methods, request("old_startup_only")), rpc::error_code::invalid_state,
                 "old_startup_only");
}

TEST_F(dispatch, rpc_get_methods)
{
    methods.add_alias("get_echo", "echo");
    methods.add_alias("get_rpc_methods", "rpc_get_methods");
    const json all = {"rpc_get_methods", "echo",        "fail",        "throw_rpc",
                      "throw_std",       "throw_other", "startup_only"};
    EXPECT_EQ(call(methods, request("rpc_get_methods"))["result"], all);
    EXPECT_EQ(call(methods, request("rpc_get_methods", json::object()))["result"], all);

    json current = all;
    current.erase(current.size() - 1);
    EXPECT_EQ(call(methods, request("rpc_get_methods", {{"current", true}}))["result"], current);

    json with_aliases = all;
    with_aliases.push_back("get_echo");
    with_aliases.push_back("get_rpc_methods");
    EXPECT_EQ(call(methods, request("rpc_get_methods", {{"include_aliases", true}}))["result"], with_aliases);
    EXPECT_EQ(
        call(methods, request("get_rpc_methods", {{"include_aliases", true}, {"current", false}}))["result"],
        with_aliases);

    expect_error(call(methods, request("rpc_get_methods", {{"current", 1}})), rpc::error_code::invalid_params,
                 "parameter 'current' must be a boolean, not the number 1");
    expect_error(call(methods, request("rpc_get_methods", {{"verbose", true}})),
                 rpc::error_code::invalid_params, "unknown parameter 'verbose'");
    expect_error(call(methods, request("rpc_get_methods", json::array({true}))),
                 rpc::error_code::invalid_params, "params must be an object, not array");
}

// ---------------------------------------------------------------------------------------------
// Typed parameters

/// Runs `body` on `params_value` and returns the -32602 message it throws ("" if none).
template <typename Body>
std::string params_error(const json& params_value, Body body)
{
    try {
        rpc::params p{params_value};
        body(p);
    } catch (const rpc::exception& e) {
        EXPECT_EQ(e.error().code, rpc::error_code::invalid_params);
        return e.error().message;
    }
    return "";
}

TEST(params, reads_declared_parameters_with_defaults)
{
    const json p = {{"name", "Malloc0"}, {"num_blocks", 131072}, {"tags", {"a", "b"}}, {"ratio", 0.5}};
    auto [name, blocks, block_size, tags, ratio, uuid, md] = rpc::params{p}.read(
        rpc::required<std::string>("name"), rpc::required<std::uint64_t>("num_blocks"),
        rpc::optional<std::uint32_t>("block_size", 512), rpc::optional<std::vector<std::string>>("tags", {}),
        rpc::required<double>("ratio"), rpc::maybe<std::string>("uuid"),
        rpc::accepted_when_default("md_size", 0));
    EXPECT_EQ(name, "Malloc0");
    EXPECT_EQ(blocks, 131072U);
    EXPECT_EQ(block_size, 512U);
    EXPECT_EQ(tags, (std::vector<std::string>{"a", "b"}));
    EXPECT_EQ(ratio, 0.5);
    EXPECT_FALSE(uuid);
    EXPECT_EQ(md, 0);
}

TEST(params, absent_params_read_as_an_empty_object)
{
    auto [flag] = rpc::params{json{}}.read(rpc::optional<bool>("flag", true));
    EXPECT_TRUE(flag);
    EXPECT_EQ(params_error(json{}, [](rpc::params& p) { (void)p.read(rpc::required<std::string>("name")); }),
              "missing parameter 'name' (a string)");
}

TEST(params, must_be_an_object)
{
    EXPECT_EQ(params_error(json::array({1}), [](rpc::params&) {}), "params must be an object, not array");
}

TEST(params, missing_parameter_is_named)
{
    EXPECT_EQ(params_error({{"name", "x"}},
                           [](rpc::params& p) {
                               (void)p.read(rpc::required<std::string>("name"),
                                            rpc::required<std::uint64_t>("num_blocks"));
                           }),
              "missing parameter 'num_blocks' (an integer from 0 to 18446744073709551615)");
}

TEST(params, wrong_types_are_named)
{
    const auto one = [](const json& value, auto declaration) {
        return params_error({{"p", value}}, [&](rpc::params& p) { (void)p.read(declaration); });
    };
    EXPECT_EQ(one("512", rpc::required<std::uint32_t>("p")),
              "parameter 'p' must be an integer from 0 to 4294967295, not string");
    EXPECT_EQ(one(-1, rpc::required<std::uint32_t>("p")),
              "parameter 'p' must be an integer from 0 to 4294967295, not the number -1");
    EXPECT_EQ(one(4294967296, rpc::required<std::uint32_t>("p")),
              "parameter 'p' must be an integer from 0 to 4294967295, not the number 4294967296");
    EXPECT_EQ(one(1.5, rpc::required<std::int32_t>("p")),
              "parameter 'p' must be an integer from -2147483648 to 2147483647, not the number 1.5");
    EXPECT_EQ(one(128, rpc::required<std::int8_t>("p")),
              "parameter 'p' must be an integer from -128 to 127, not the number 128");
    EXPECT_EQ(one(-129, rpc::required<std::int8_t>("p")),
              "parameter 'p' must be an integer from -128 to 127, not the number -129");
    EXPECT_EQ(
        one(18446744073709551615ULL, rpc::required<std::int64_t>("p")),
        "parameter 'p' must be an integer from -9223372036854775808 to 9223372036854775807, not the number "
        "18446744073709551615");
    EXPECT_EQ(one(1, rpc::required<bool>("p")), "parameter 'p' must be a boolean, not the number 1");
    EXPECT_EQ(one(nullptr, rpc::optional<std::string>("p", "x")), "parameter 'p' must be a string, not null");
    EXPECT_EQ(one(true, rpc::required<double>("p")), "parameter 'p' must be a number, not boolean");
    EXPECT_EQ(one(json::object(), rpc::maybe<std::string>("p")),
              "parameter 'p' must be a string, not object");
    EXPECT_EQ(one(json::array({"a", 2}), rpc::required<std::vector<std::string>>("p")),
              "parameter 'p[1]' must be a string, not the number 2");
    EXPECT_EQ(one("a", rpc::required<std::vector<std::string>>("p")),
              "parameter 'p' must be an array, each element a string, not string");
    // In range at the edges.
    EXPECT_EQ(one(-128, rpc::required<std::int8_t>("p")), "");
    EXPECT_EQ(one(18446744073709551615ULL, rpc::required<std::uint64_t>("p")), "");
    EXPECT_EQ(one(-9223372036854775807LL - 1, rpc::required<std::int64_t>("p")), "");
    EXPECT_EQ(one(3, rpc::required<double>("p")), "");
    EXPECT_EQ(one(json::object({{"x", 1}}), rpc::required<json>("p")), "");
}

TEST(params, unknown_parameters_are_refused_naming_them)
{
    EXPECT_EQ(params_error({{"name", "x"}, {"bogus", 1}},
                           [](rpc::params& p) { (void)p.read(rpc::required<std::string>("name")); }),
              "unknown parameter 'bogus'");
    EXPECT_EQ(params_error({{"zeta", 1}, {"name", "x"}, {"alpha", 2}},
                           [](rpc::params& p) { (void)p.read(rpc::optional<std::string>("name", "")); }),
              "unknown parameters 'alpha', 'zeta'");
    // Reading with get() and finish() is the same.
    EXPECT_EQ(params_error({{"a", 1}, {"b", 2}},
                           [](rpc::params& p) {
                               (void)p.get(rpc::required<int>("a"));
                               p.finish();
                           }),
              "unknown parameter 'b'");
}

TEST(params, accepted_when_default)
{
    const auto with = [](const json& params_value) {
        return params_error(params_value, [](rpc::params& p) {
            (void)p.read(rpc::required<std::string>("name"),
                         rpc::accepted_when_default("optimal_io_boundary", 0U),
                         rpc::accepted_when_default<std::string>("mode", "none"));
        });
    };
    EXPECT_EQ(with({{"name", "x"}}), "");
    EXPECT_EQ(with({{"name", "x"}, {"optimal_io_boundary", 0}, {"mode", "none"}}), "");
    EXPECT_EQ(with({{"name", "x"}, {"optimal_io_boundary", 4096}}),
              "parameter 'optimal_io_boundary' is not supported with a value other than 0");
    EXPECT_EQ(with({{"name", "x"}, {"mode", "fast"}}),
              "parameter 'mode' is not supported with a value other than \"none\"");
    EXPECT_EQ(with({{"name", "x"}, {"mode", 1}}), "parameter 'mode' must be a string, not the number 1");
}

TEST(params, refuse_params_refuses_any_params_member)
{
    rpc::registry methods;
    methods.add("framework_start_init", [](const json& p) -> rpc::outcome {
        rpc::refuse_params(p, "framework_start_init requires no parameters");
        return true;
    });
    EXPECT_EQ(call(methods, request("framework_start_init", nullptr))["result"], true);
    for (const json& params : {json::object(), json::array(), json{{"x", 1}}}) {
        expect_error(call(methods, request("framework_start_init", params)), rpc::error_code::invalid_params,
                     "framework_start_init requires no parameters");
    }
}

TEST(params, errors_reach_the_client_as_invalid_params)
{
    rpc::registry methods;
    methods.add("bdev_malloc_create", [](const json& p) -> rpc::outcome {
        auto [name, blocks, block_size] = rpc::params{p}.read(
            rpc::required<std::string>("name"), rpc::required<std::uint64_t>("num_blocks"),
            rpc::optional<std::uint32_t>("block_size", 512));
        return json{{"name", name}, {"bytes", blocks * block_size}};
    });
    EXPECT_EQ(call(methods, request("bdev_malloc_create", {{"name", "M0"}, {"num_blocks", 8}}))["result"],
              json::parse(R"({"name": "M0", "bytes": 4096})"));
    expect_error(call(methods, request("bdev_malloc_create", {{"num_blocks", 8}})),
                 rpc::error_code::invalid_params, "missing parameter 'name'");
    expect_error(
        call(methods, request("bdev_malloc_create", {{"name", "M0"}, {"num_blocks", 8}, {"uuid", "u"}})),
        rpc::error_code::invalid_params, "unknown parameter 'uuid'");
}

} // namespace rpc_jsonrpc_test
} // namespace
