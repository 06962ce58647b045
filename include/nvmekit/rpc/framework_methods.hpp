#pragma once
/// SPDK's application-framework methods, with SPDK's names, results and errors:
///
/// - `spdk_get_version`: nvmekit's version in SPDK's shape,
///   {"version": "nvmekit v0.1.0", "fields": {"major": 0, "minor": 1, "patch": 0, "suffix": ""}}.
/// - `framework_get_subsystems`: [{"subsystem": name, "depends_on": [names]}], in the order they
///   start.
/// - `framework_start_init`: true; the registry moves from the startup state to run time (SPDK's
///   `--wait-for-rpc`). Callable only at startup.
///
/// (`rpc_get_methods` belongs to the registry itself, jsonrpc.hpp.) None takes parameters: a
/// request with "params" at all is Invalid Params (-32602) with SPDK's message.
///
///     nvmekit::rpc::registry methods;
///     methods.set_state(nvmekit::rpc::states::startup); // when configuration waits for the client
///     nvmekit::rpc::add_framework_methods(methods, {.start_init = [&] { start_target(); }});

#include <exception>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <nvmekit/config.hpp>
#include <nvmekit/rpc/jsonrpc.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace rpc {

/// One entry of framework_get_subsystems.
struct framework_subsystem {
    std::string name;
    std::vector<std::string> depends_on{};
};

struct framework_options {
    /// What framework_get_subsystems lists (SPDK's subsystems nvmekit has: "bdev", and "nvmf"
    /// depending on "bdev" where the nvmf methods are served, as nvmekit-serve does).
    std::vector<framework_subsystem> subsystems{{"bdev", {}}};
    /// Run by framework_start_init before the registry moves to run time; an exception fails the
    /// call with SPDK's Internal Error and leaves the state at startup.
    std::function<void()> start_init{};
};

/// "nvmekit vMAJOR.MINOR.PATCH", as SPDK_VERSION_STRING reads "SPDK vMAJOR.MINOR...".
[[nodiscard]] inline std::string version_string()
{
    return "nvmekit v" + std::to_string(NVMEKIT_VERSION_MAJOR) + "." + std::to_string(NVMEKIT_VERSION_MINOR) +
           "." + std::to_string(NVMEKIT_VERSION_PATCH);
}

/// Adds spdk_get_version, framework_get_subsystems and framework_start_init to `methods`, which
/// must outlive them.
inline void add_framework_methods(registry& methods, framework_options options = {})
{
    methods.add("spdk_get_version", [](const nlohmann::json& p) -> outcome {
        refuse_params(p, "spdk_get_version method requires no parameters");
        return nlohmann::json{{"version", version_string()},
                              {"fields",
                               {{"major", NVMEKIT_VERSION_MAJOR},
                                {"minor", NVMEKIT_VERSION_MINOR},
                                {"patch", NVMEKIT_VERSION_PATCH},
                                {"suffix", ""}}}};
    });

    methods.add("framework_get_subsystems",
                [subsystems = std::move(options.subsystems)](const nlohmann::json& p) -> outcome {
                    refuse_params(p, "'framework_get_subsystems' requires no arguments");
                    nlohmann::json result = nlohmann::json::array();
                    for (const auto& s : subsystems) {
                        result.push_back({{"subsystem", s.name}, {"depends_on", s.depends_on}});
                    }
                    return result;
                });

    methods.add("framework_start_init",
                [&methods, start_init = std::move(options.start_init)](const nlohmann::json& p) -> outcome {
                    refuse_params(p, "framework_start_init requires no parameters");
                    if (start_init) {
                        try {
                            start_init();
                        } catch (const std::exception&) {
                            return rpc::error{error_code::internal_error, "framework_initialization failed"};
                        }
                    }
                    methods.set_state(states::runtime);
                    return true;
                },
                {.allowed_states = states::startup});
}

} // namespace rpc
NVMEKIT_END_NAMESPACE
