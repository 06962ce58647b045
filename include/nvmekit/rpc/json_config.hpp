#pragma once
/// The target's configuration in SPDK's JSON format, the one `scripts/rpc.py save_config` writes
/// and an SPDK application loads with `-c/--json`:
///
///     {"subsystems": [
///        {"subsystem": "bdev", "config": [{"method": "bdev_malloc_create", "params": {...}}, ...]},
///        {"subsystem": "nvmf", "config": [{"method": "nvmf_create_transport", ...}, ...]}]}
///
/// - save_config(): the running state in that format (bdev_config() and nvmf_config() are its
///   two parts).
/// - load_config(): runs each call of a configuration through a method registry, in order. An
///   entry may also be a batch, an array of calls (as SPDK writes with `save_config
///   --with-batches`): its calls run in order too.
/// - add_config_methods(): SPDK's `framework_get_config` (name: "bdev" or "nvmf"; with_batches,
///   whether batches are kept as arrays, which changes nothing here: nvmekit's configuration is
///   one call an entry, with no batch to keep or flatten), the method rpc.py's save_config calls
///   for each subsystem.
///
///     nvmekit::rpc::add_config_methods(methods, bdevs, target);
///     nvmekit::rpc::load_config(methods, nlohmann::json::parse(std::ifstream{"nvmekit.json"}));

#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include <nvmekit/config.hpp>
#include <nvmekit/rpc/bdev_registry.hpp>
#include <nvmekit/rpc/jsonrpc.hpp>
#include <nvmekit/rpc/nvmf_methods.hpp>
#include <nvmekit/rpc/nvmf_registry.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace rpc {

/// The "bdev" subsystem's configuration: the create call of each bdev, in the order they were
/// added (bdevs of other modules than malloc, null and aio are left out: nothing recreates them).
[[nodiscard]] inline nlohmann::json bdev_config(const bdev_registry& bdevs)
{
    nlohmann::json config = nlohmann::json::array();
    for (const auto& device : bdevs.list()) {
        nlohmann::json params = {{"name", device->name()}, {"uuid", uuid_string(device->uuid())}};
        std::string method;
        if (device->module() == "malloc" || device->module() == "null") {
            method = "bdev_" + device->module() + "_create";
            params["num_blocks"] = device->num_blocks();
            params["block_size"] = device->block_size();
        } else if (device->module() == "aio") {
            method = "bdev_aio_create";
            const nlohmann::json& aio = device->driver_specific().at("aio");
            params["filename"] = aio.at("filename");
            params["readonly"] = aio.at("readonly");
            params["fallocate"] = aio.at("fallocate");
            if (aio.at("block_size_override").get<bool>()) {
                params["block_size"] = device->block_size();
            }
        } else {
            continue;
        }
        config.push_back({{"method", std::move(method)}, {"params", std::move(params)}});
    }
    return config;
}

/// The running state as SPDK's save_config writes it.
[[nodiscard]] inline nlohmann::json save_config(const bdev_registry& bdevs, const nvmf_registry& target)
{
    return {{"subsystems",
             {{{"subsystem", "bdev"}, {"config", bdev_config(bdevs)}},
              {{"subsystem", "nvmf"}, {"config", nvmf_config(target)}}}}};
}

/// Runs every call of `config` (SPDK's format) through `methods`, subsystem by subsystem in
/// order. Throws std::invalid_argument at the first entry that is malformed or fails, naming it
/// and the method's error; the calls before it stay done.
inline void load_config(const registry& methods, const nlohmann::json& config)
{
    const auto malformed = [](const std::string& what) {
        throw std::invalid_argument("configuration: " + what);
    };
    if (!config.is_object() || !config.contains("subsystems") || !config["subsystems"].is_array()) {
        malformed(R"(expected an object with a "subsystems" array)");
    }
    std::size_t id = 0;
    for (const auto& subsystem : config["subsystems"]) {
        if (!subsystem.is_object() || !subsystem.contains("subsystem") ||
            !subsystem["subsystem"].is_string()) {
            malformed(R"(each entry of "subsystems" needs a "subsystem" name)");
        }
        const std::string name = subsystem["subsystem"].get<std::string>();
        const auto calls = subsystem.find("config");
        if (calls == subsystem.end() || calls->is_null()) {
            continue;
        }
        if (!calls->is_array()) {
            malformed("\"config\" of subsystem " + name + " must be an array");
        }
        const auto run = [&](const nlohmann::json& call) {
            if (!call.is_object() || !call.contains("method") || !call["method"].is_string()) {
                malformed("an entry of subsystem " + name + " has no \"method\"");
            }
            nlohmann::json request = {{"jsonrpc", "2.0"}, {"id", ++id}, {"method", call["method"]}};
            if (call.contains("params")) {
                request["params"] = call["params"];
            }
            const auto response = methods.dispatch(request);
            const nlohmann::json answer = nlohmann::json::parse(response.value_or("{}"));
            if (answer.contains("error")) {
                malformed(name + ": " + call["method"].get<std::string>() + " failed (" +
                          answer["error"].value("message", std::string{}) + ", code " +
                          std::to_string(answer["error"].value("code", 0)) + ")");
            }
        };
        for (const auto& entry : *calls) {
            if (entry.is_array()) { // a batch: its calls in order
                for (const auto& call : entry) {
                    run(call);
                }
            } else {
                run(entry);
            }
        }
    }
}

/// Adds SPDK's framework_get_config on `bdevs` and `target` to `methods`; all three must outlive
/// its use.
inline void add_config_methods(registry& methods, const bdev_registry& bdevs, const nvmf_registry& target)
{
    methods.add("framework_get_config", [&bdevs, &target](const nlohmann::json& p) -> outcome {
        // with_batches: nvmekit's entries are single calls, so there is no batch to keep or flatten.
        [[maybe_unused]] auto [name, with_batches] =
            params{p}.read(required<std::string>("name"), optional<bool>("with_batches", false));
        if (name == "bdev") {
            return bdev_config(bdevs);
        }
        if (name == "nvmf") {
            return nvmf_config(target);
        }
        return rpc::error{error_code::invalid_params, "Subsystem '" + name + "' not found"};
    });
}

} // namespace rpc
NVMEKIT_END_NAMESPACE
