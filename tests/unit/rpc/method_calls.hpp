#pragma once
// Calls to a method registry for the rpc tests: a request as literal JSON text, its response
// parsed, and the result or error of a call that must succeed or fail.

#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>
#include <gtest/gtest.h>

#include <nvmekit/rpc/jsonrpc.hpp>

namespace nvmekit_test {

class method_calls {
public:
    explicit method_calls(const nvmekit::rpc::registry& methods) : methods_{methods} {}

    /// The response to `request` (literal JSON text), parsed.
    nlohmann::json call(const std::string& request) const
    {
        const auto response = methods_.dispatch(nlohmann::json::parse(request));
        if (!response) {
            throw std::runtime_error("no response to " + request);
        }
        EXPECT_EQ(response->back(), '\n');
        return nlohmann::json::parse(*response);
    }
    /// The result of a call that must succeed.
    nlohmann::json result(const std::string& method, const std::string& params = "") const
    {
        const nlohmann::json response = call(request(method, params));
        EXPECT_TRUE(response.contains("result")) << method << " " << params << ": " << response.dump();
        return response.value("result", nlohmann::json{});
    }
    /// The error of a call that must fail.
    nlohmann::json error(const std::string& method, const std::string& params = "") const
    {
        const nlohmann::json response = call(request(method, params));
        EXPECT_TRUE(response.contains("error")) << method << " " << params << ": " << response.dump();
        return response.value("error", nlohmann::json{});
    }

private:
    static std::string request(const std::string& method, const std::string& params)
    {
        return R"({"jsonrpc": "2.0", "id": 1, "method": ")" + method + "\"" +
               (params.empty() ? "" : ", \"params\": " + params) + "}";
    }

    const nvmekit::rpc::registry& methods_;
};

} // namespace nvmekit_test
