#include <nvmekit/rpc/framework_methods.hpp>

#include <algorithm>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>
#include <gtest/gtest.h>

namespace {
namespace rpc_framework_methods_test {

namespace rpc = nvmekit::rpc;
using nlohmann::json;

json call(const rpc::registry& methods, const std::string& request)
{
    const auto response = methods.dispatch(json::parse(request));
    return response ? json::parse(*response) : json{};
}

TEST(framework_methods, spdk_get_version_answers_nvmekits_version_in_spdks_shape)
{
    rpc::registry methods;
    rpc::add_framework_methods(methods);
    const json expected = {{"jsonrpc", "2.0"},
                           {"id", 1},
                           {"result",
                            {{"version", "nvmekit v" + std::to_string(NVMEKIT_VERSION_MAJOR) + "." +
                                             std::to_string(NVMEKIT_VERSION_MINOR) + "." +
                                             std::to_string(NVMEKIT_VERSION_PATCH)},
                             {"fields",
                              {{"major", NVMEKIT_VERSION_MAJOR},
                               {"minor", NVMEKIT_VERSION_MINOR},
                               {"patch", NVMEKIT_VERSION_PATCH},
                               {"suffix", ""}}}}}};
    EXPECT_EQ(call(methods, R"({"jsonrpc": "2.0", "id": 1, "method": "spdk_get_version"})"), expected);
    EXPECT_EQ(rpc::version_string(), "nvmekit v0.1.0");
}

TEST(framework_methods, methods_without_parameters_refuse_any_with_spdks_messages)
{
    rpc::registry methods;
    methods.set_state(rpc::states::startup);
    rpc::add_framework_methods(methods);
    const auto error_of = [&](const std::string& method, const std::string& params) {
        return call(methods, R"({"jsonrpc": "2.0", "id": 1, "method": ")" + method + R"(", "params": )" +
                                 params + "}")["error"];
    };
    EXPECT_EQ(
        error_of("spdk_get_version", "{}"),
        json::parse(R"({"code": -32602, "message": "spdk_get_version method requires no parameters"})"));
    EXPECT_EQ(
        error_of("framework_get_subsystems", "[]"),
        json::parse(R"({"code": -32602, "message": "'framework_get_subsystems' requires no arguments"})"));
    EXPECT_EQ(error_of("framework_start_init", R"({"x": 1})"),
              json::parse(R"({"code": -32602, "message": "framework_start_init requires no parameters"})"));
    EXPECT_EQ(methods.state(), rpc::states::startup);
}

TEST(framework_methods, framework_get_subsystems_lists_them_in_order)
{
    rpc::registry methods;
    rpc::add_framework_methods(methods, {.subsystems = {{"bdev", {}}, {"nvmf", {"bdev"}}}});
    EXPECT_EQ(call(methods, R"({"jsonrpc": "2.0", "id": 7, "method": "framework_get_subsystems"})"),
              json::parse(R"({"jsonrpc": "2.0", "id": 7, "result": [
                  {"subsystem": "bdev", "depends_on": []},
                  {"subsystem": "nvmf", "depends_on": ["bdev"]}]})"));

    rpc::registry defaults;
    rpc::add_framework_methods(defaults);
    EXPECT_EQ(
        call(defaults, R"({"jsonrpc": "2.0", "id": 7, "method": "framework_get_subsystems"})")["result"],
        json::parse(R"([{"subsystem": "bdev", "depends_on": []}])"));
}

TEST(framework_methods, framework_start_init_moves_startup_to_run_time_once)
{
    rpc::registry methods;
    methods.set_state(rpc::states::startup);
    int started = 0;
    rpc::add_framework_methods(methods, {.start_init = [&] { ++started; }});
    EXPECT_EQ(call(methods, R"({"jsonrpc": "2.0", "id": 1, "method": "framework_start_init"})"),
              json::parse(R"({"jsonrpc": "2.0", "id": 1, "result": true})"));
    EXPECT_EQ(started, 1);
    EXPECT_EQ(methods.state(), rpc::states::runtime);
    EXPECT_EQ(
        call(methods, R"({"jsonrpc": "2.0", "id": 2, "method": "framework_start_init"})")["error"]["code"],
        rpc::error_code::invalid_state);
    EXPECT_EQ(started, 1);
}

TEST(framework_methods, a_failed_start_init_stays_at_startup)
{
    rpc::registry methods;
    methods.set_state(rpc::states::startup);
    rpc::add_framework_methods(methods, {.start_init = [] { throw std::runtime_error("no"); }});
    EXPECT_EQ(call(methods, R"({"jsonrpc": "2.0", "id": 1, "method": "framework_start_init"})")["error"],
              json::parse(R"({"code": -32603, "message": "framework_initialization failed"})"));
    EXPECT_EQ(methods.state(), rpc::states::startup);
}

TEST(framework_methods, rpc_get_methods_lists_them_in_both_states)
{
    rpc::registry methods;
    rpc::add_framework_methods(methods);
    EXPECT_EQ(call(methods, R"({"jsonrpc": "2.0", "id": 1, "method": "rpc_get_methods"})")["result"],
              json::parse(R"(["rpc_get_methods", "spdk_get_version", "framework_get_subsystems",
                              "framework_start_init"])"));
    // At run time framework_start_init is not callable any more.
    EXPECT_EQ(call(methods,
                   R"({"jsonrpc": "2.0", "id": 1, "method": "rpc_get_methods", "params": {"current": true}})")
                  ["result"],
              json::parse(R"(["rpc_get_methods", "spdk_get_version", "framework_get_subsystems"])"));
}

} // namespace rpc_framework_methods_test
} // namespace
