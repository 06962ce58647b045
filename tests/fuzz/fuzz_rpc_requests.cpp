// libFuzzer target: the JSON-RPC request stream of a management client, decoded and dispatched to
// SPDK's framework, bdev, nvmf and configuration methods by rpc::request_stream, the code the
// management server runs on each client's bytes. The first byte chooses how the rest, the
// client's byte stream, is split into reads. Every response must be one JSON-RPC 2.0 response
// ending in a newline; the decoder must stay failed once failed; and after each request the target
// must be consistent: every namespace's bdev claimed by its subsystem and no other bdev claimed.
// At the end the saved configuration, loaded into a fresh target, must give the same subsystems.
// bdev_aio_create is not called (it opens host files), nor RAM or null bdevs over 64 MiB.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "fuzz_input.hpp"

#include <nvmekit/rpc/bdev_methods.hpp>
#include <nvmekit/rpc/framework_methods.hpp>
#include <nvmekit/rpc/json_config.hpp>
#include <nvmekit/rpc/jsonrpc.hpp>
#include <nvmekit/rpc/nvmf_methods.hpp>

namespace {

namespace rpc = nvmekit::rpc;
using nlohmann::json;

void check(bool condition)
{
    if (!condition) {
        std::abort();
    }
}

struct target {
    rpc::registry methods;
    rpc::bdev_registry bdevs;
    rpc::nvmf_registry nvmf;

    target()
    {
        rpc::add_framework_methods(methods, {.subsystems = {{"bdev", {}}, {"nvmf", {"bdev"}}}});
        rpc::add_bdev_methods(methods, bdevs);
        rpc::add_nvmf_methods(methods, bdevs, nvmf);
        rpc::add_config_methods(methods, bdevs, nvmf);
    }

    [[nodiscard]] json subsystems() const
    {
        const auto response =
            methods.dispatch({{"jsonrpc", "2.0"}, {"id", 0}, {"method", "nvmf_get_subsystems"}});
        return json::parse(response.value_or("{}"))["result"];
    }
};

/// Requests the harness does not let through.
bool skipped(const json& request)
{
    if (!request.is_object()) {
        return false;
    }
    const auto method = request.find("method");
    if (method == request.end() || !method->is_string()) {
        return false;
    }
    const auto& name = method->get_ref<const std::string&>();
    if (name.find("aio") != std::string::npos) {
        return true;
    }
    const auto params = request.find("params");
    if (params == request.end() || !params->is_object()) {
        return false;
    }
    const auto blocks = params->find("num_blocks");
    const auto block_size = params->find("block_size");
    if (blocks != params->end() && blocks->is_number_unsigned() && block_size != params->end() &&
        block_size->is_number_unsigned()) {
        const auto b = blocks->get<std::uint64_t>();
        const auto s = block_size->get<std::uint64_t>();
        return s != 0 && b > (std::uint64_t{64} << 20) / s;
    }
    return false;
}

void check_response(const std::string& response)
{
    check(!response.empty() && response.back() == '\n');
    const json parsed = json::parse(response);
    check(parsed.is_object() && parsed.value("jsonrpc", "") == "2.0" && parsed.contains("id"));
    check(parsed.contains("result") != parsed.contains("error"));
    if (parsed.contains("error")) {
        const json& e = parsed["error"];
        check(e["code"].is_number_integer() && e["message"].is_string());
    }
}

void check_claims(const target& t)
{
    std::size_t namespaces = 0;
    for (const auto& s : t.nvmf.subsystems()) {
        for (const auto& ns : s.namespaces) {
            check(ns.device->claimed() && ns.device->claim_owner() == s.nqn);
            ++namespaces;
        }
    }
    std::size_t claimed = 0;
    for (const auto& device : t.bdevs.list()) {
        claimed += device->claimed() ? 1 : 0;
    }
    check(claimed == namespaces);
}

/// The target's methods as the harness lets requests through: a skipped request is dropped like
/// a notification; after each request the target must be consistent.
struct admitted_methods {
    target* t;

    [[nodiscard]] std::optional<std::string> dispatch(const json& request) const
    {
        if (skipped(request)) {
            return std::nullopt;
        }
        auto response = t->methods.dispatch(request);
        check_claims(*t);
        return response;
    }
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    nvmekit_fuzz::reader input{{data, size}};
    const auto split = input.take<std::uint8_t>();
    const auto stream_bytes = input.take_bytes(size);
    const std::string_view bytes{reinterpret_cast<const char*>(stream_bytes.data()), stream_bytes.size()};

    target t;
    const admitted_methods admitted{&t};
    // The code the management server runs on each client's bytes (rpc/server.hpp).
    rpc::request_stream<admitted_methods> stream{admitted, {.max_request_bytes = 1 << 16, .max_depth = 32}};
    const std::size_t chunk = 1 + split % 64U;
    const auto respond = [](std::string&& response) {
        check_response(response);
        return true;
    };
    bool failed = false;
    for (std::size_t at = 0; at < bytes.size(); at += chunk) {
        stream.feed(bytes.substr(at, chunk));
        const auto answered = stream.answer(respond);
        // An exception escaping a method is answered with Internal Error, but is a method's bug.
        check(answered.internal_errors == 0);
        if (failed) {
            // A failed stream takes nothing more, and is not answered again.
            check(answered.requests == 0 && !answered.failed && stream.failed());
        }
        if (answered.failed) {
            check(stream.failed());
            failed = true;
        }
    }

    const json saved = rpc::save_config(t.bdevs, t.nvmf);
    target loaded;
    rpc::load_config(loaded.methods, saved); // throws, and so fails, when any saved call fails
    check(loaded.subsystems() == t.subsystems());
    return 0;
}
