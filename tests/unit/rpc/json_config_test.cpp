#include <nvmekit/rpc/json_config.hpp>

#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>
#include <unistd.h>
#include <gtest/gtest.h>

#include <nvmekit/rpc/bdev_methods.hpp>
#include <nvmekit/rpc/framework_methods.hpp>

#include "rpc/method_calls.hpp"

namespace {
namespace rpc_json_config_test {

namespace rpc = nvmekit::rpc;
using nlohmann::json;

/// One target: its registries and the methods on them.
struct target_under_test {
    rpc::registry methods;
    rpc::bdev_registry bdevs;
    rpc::nvmf_registry nvmf;
    nvmekit_test::method_calls calls{methods};

    target_under_test()
    {
        rpc::add_framework_methods(methods, {.subsystems = {{"bdev", {}}, {"nvmf", {"bdev"}}}});
        rpc::add_bdev_methods(methods, bdevs);
        rpc::add_nvmf_methods(methods, bdevs, nvmf);
        rpc::add_config_methods(methods, bdevs, nvmf);
    }
};

struct json_config_fixture : ::testing::Test {
    std::string directory;

    void SetUp() override
    {
        std::string pattern = "/tmp/nvmekit-config-XXXXXX";
        ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
        directory = pattern;
    }
    void TearDown() override
    {
        ::unlink((directory + "/disk.img").c_str());
        ::rmdir(directory.c_str());
    }

    /// A target built the way a client would, through the methods.
    void build(const target_under_test& t) const
    {
        std::ofstream{directory + "/disk.img"} << std::string(8192, 'x');
        t.calls.result("bdev_malloc_create", R"({"name": "Malloc0", "num_blocks": 32, "block_size": 512,
            "uuid": "2b6601ba-eada-44fb-9a83-a20eb9eb9e90"})");
        t.calls.result("bdev_null_create", R"({"name": "Null0", "num_blocks": 64, "block_size": 4096})");
        t.calls.result("bdev_aio_create",
                       R"({"name": "Aio0", "filename": ")" + directory +
                           R"(/disk.img", "uuid": "6d1c3f0a-8e2b-4a5d-9c7e-1f2a3b4c5d6e"})");
        t.calls.result("nvmf_create_transport", R"({"trtype": "VFIOUSER", "max_queue_depth": 64})");
        t.calls.result("nvmf_create_transport", R"({"trtype": "TCP"})");
        t.calls.result("nvmf_discovery_add_referral", R"({"address": {"trtype": "TCP", "traddr": "192.0.2.9",
            "trsvcid": "8009"}, "secure_channel": true})");
        t.calls.result("nvmf_create_subsystem",
                       R"({"nqn": "nqn.2016-06.io.spdk:cnode1", "serial_number": "S1"})");
        t.calls.result("nvmf_subsystem_add_host", R"({"nqn": "nqn.2016-06.io.spdk:cnode1",
            "host": "nqn.2016-06.io.spdk:host1"})");
        t.calls.result("nvmf_subsystem_add_ns", R"({"nqn": "nqn.2016-06.io.spdk:cnode1",
            "namespace": {"bdev_name": "Malloc0", "nsid": 2, "eui64": "0102030405060708"}})");
        t.calls.result("nvmf_subsystem_add_ns", R"({"nqn": "nqn.2016-06.io.spdk:cnode1",
            "namespace": {"bdev_name": "Aio0"}})");
        t.calls.result("nvmf_subsystem_add_listener", R"({"nqn": "nqn.2016-06.io.spdk:cnode1",
            "listen_address": {"trtype": "VFIOUSER", "traddr": ")" +
                                                          directory + R"("}})");
        t.calls.result("nvmf_create_subsystem",
                       R"({"nqn": "nqn.2016-06.io.spdk:cnode2", "allow_any_host": true})");
        t.calls.result("nvmf_subsystem_add_ns", R"({"nqn": "nqn.2016-06.io.spdk:cnode2",
            "namespace": {"bdev_name": "Null0"}})");
        t.calls.result("nvmf_subsystem_add_listener", R"({"nqn": "nqn.2016-06.io.spdk:cnode2",
            "listen_address": {"trtype": "TCP", "traddr": "127.0.0.1", "trsvcid": "4420"}})");
    }
};

TEST_F(json_config_fixture, save_config_writes_the_calls_that_build_the_target)
{
    target_under_test t;
    build(t);
    const json saved = rpc::save_config(t.bdevs, t.nvmf);
    ASSERT_EQ(saved["subsystems"].size(), 2U);
    EXPECT_EQ(saved["subsystems"][0]["subsystem"], "bdev");
    EXPECT_EQ(saved["subsystems"][1]["subsystem"], "nvmf");
    const json& bdev = saved["subsystems"][0]["config"];
    ASSERT_EQ(bdev.size(), 3U);
    EXPECT_EQ(bdev[0], json::parse(R"({"method": "bdev_malloc_create", "params": {"name": "Malloc0",
        "num_blocks": 32, "block_size": 512, "uuid": "2b6601ba-eada-44fb-9a83-a20eb9eb9e90"}})"));
    EXPECT_EQ(bdev[1]["method"], "bdev_null_create");
    EXPECT_EQ(bdev[2]["params"]["filename"], directory + "/disk.img");
    EXPECT_FALSE(bdev[2]["params"].contains("block_size"));
    const json& nvmf = saved["subsystems"][1]["config"];
    std::vector<std::string> methods;
    for (const auto& call : nvmf) {
        methods.push_back(call["method"]);
    }
    EXPECT_EQ(methods, (std::vector<std::string>{
                           "nvmf_create_transport", "nvmf_create_transport", "nvmf_discovery_add_referral",
                           "nvmf_create_subsystem", "nvmf_subsystem_add_host", "nvmf_subsystem_add_ns",
                           "nvmf_subsystem_add_ns", "nvmf_subsystem_add_listener", "nvmf_create_subsystem",
                           "nvmf_subsystem_add_ns", "nvmf_subsystem_add_listener"}));
    // The referral as SPDK writes it: the address, secure_channel and the NQN it defaulted to
    EXPECT_EQ(nvmf[2]["params"], json::parse(R"({"address": {"trtype": "TCP", "adrfam": "IPv4",
        "traddr": "192.0.2.9", "trsvcid": "8009"}, "secure_channel": true,
        "subnqn": "nqn.2014-08.org.nvmexpress.discovery"})"));
    // A namespace added without uuid or nguid takes its bdev's UUID, and the UUID's 16 bytes, first
    // byte first, as its NGUID, written as 32 upper-case hex digits (as SPDK writes it):
    //   python3 -c 'import uuid; print(uuid.UUID("6d1c3f0a-8e2b-4a5d-9c7e-1f2a3b4c5d6e").hex.upper())'
    //   6D1C3F0A8E2B4A5D9C7E1F2A3B4C5D6E
    EXPECT_EQ(nvmf[5]["params"], json::parse(R"({"nqn": "nqn.2016-06.io.spdk:cnode1", "namespace": {
        "nsid": 1, "bdev_name": "Aio0", "uuid": "6d1c3f0a-8e2b-4a5d-9c7e-1f2a3b4c5d6e",
        "nguid": "6D1C3F0A8E2B4A5D9C7E1F2A3B4C5D6E"}})"));
    // ... and so does one given only an EUI-64, which it keeps:
    //   python3 -c 'import uuid; print(uuid.UUID("2b6601ba-eada-44fb-9a83-a20eb9eb9e90").hex.upper())'
    //   2B6601BAEADA44FB9A83A20EB9EB9E90
    EXPECT_EQ(nvmf[6]["params"], json::parse(R"({"nqn": "nqn.2016-06.io.spdk:cnode1", "namespace": {
        "nsid": 2, "bdev_name": "Malloc0", "uuid": "2b6601ba-eada-44fb-9a83-a20eb9eb9e90",
        "nguid": "2B6601BAEADA44FB9A83A20EB9EB9E90", "eui64": "0102030405060708"}})"));

    // framework_get_config answers each part; rpc.py's save_config assembles them.
    EXPECT_EQ(t.calls.result("framework_get_config", R"({"name": "bdev"})"), bdev);
    EXPECT_EQ(t.calls.result("framework_get_config", R"({"name": "nvmf"})"), nvmf);
    const json e = t.calls.error("framework_get_config", R"({"name": "iscsi"})");
    EXPECT_EQ(e, json::parse(R"({"code": -32602, "message": "Subsystem 'iscsi' not found"})"));
    EXPECT_EQ(t.calls.error("framework_get_config")["code"], -32602);
    // with_batches, which rpc.py's save_config always sends: either way each entry is one call.
    EXPECT_EQ(t.calls.result("framework_get_config", R"({"name": "nvmf", "with_batches": false})"), nvmf);
    EXPECT_EQ(t.calls.result("framework_get_config", R"({"name": "nvmf", "with_batches": true})"), nvmf);
    EXPECT_EQ(t.calls.result("framework_get_config", R"({"name": "bdev", "with_batches": true})"), bdev);
    EXPECT_EQ(t.calls.error("framework_get_config", R"({"name": "bdev", "with_batches": 1})")["code"],
              -32602);
    EXPECT_EQ(t.calls.error("framework_get_config", R"({"name": "bdev", "batches": true})")["code"], -32602);
}

TEST_F(json_config_fixture, load_runs_the_calls_of_a_batch_in_order)
{
    target_under_test t;
    // A configuration as SPDK writes it with batches kept: an array of calls is one entry.
    rpc::load_config(t.methods, json::parse(R"({"subsystems": [
        {"subsystem": "bdev", "config": [
            [{"method": "bdev_null_create", "params": {"name": "a", "num_blocks": 8, "block_size": 512}},
             {"method": "bdev_null_create", "params": {"name": "b", "num_blocks": 8, "block_size": 512}}],
            {"method": "bdev_null_create", "params": {"name": "c", "num_blocks": 8, "block_size": 512}},
            []]},
        {"subsystem": "nvmf", "config": [
            [{"method": "nvmf_create_subsystem", "params": {"nqn": "nqn.2016-06.io.spdk:cnode1"}},
             {"method": "nvmf_subsystem_add_ns",
              "params": {"nqn": "nqn.2016-06.io.spdk:cnode1", "namespace": {"bdev_name": "b"}}}]]}]})"));
    ASSERT_EQ(t.bdevs.size(), 3U);
    EXPECT_EQ(t.bdevs.list()[0]->name(), "a");
    EXPECT_EQ(t.bdevs.list()[1]->name(), "b");
    EXPECT_EQ(t.bdevs.list()[2]->name(), "c");
    const json subsystems = t.calls.result("nvmf_get_subsystems");
    ASSERT_EQ(subsystems.size(), 2U);
    ASSERT_EQ(subsystems[1]["namespaces"].size(), 1U);
    EXPECT_EQ(subsystems[1]["namespaces"][0]["bdev_name"], "b");
    // A call of a batch that fails is named like any other; the calls before it stay done.
    try {
        rpc::load_config(t.methods, json::parse(R"({"subsystems": [{"subsystem": "bdev", "config": [
            [{"method": "bdev_null_create", "params": {"name": "d", "num_blocks": 8, "block_size": 512}},
             {"method": "bdev_null_create", "params": {"name": "a", "num_blocks": 8, "block_size": 512}}]]}]})"));
        FAIL() << "loaded";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string{e.what()}.find("bdev: bdev_null_create failed"), std::string::npos) << e.what();
    }
    EXPECT_EQ(t.bdevs.size(), 4U);
    EXPECT_THROW(rpc::load_config(t.methods, json::parse(R"({"subsystems": [{"subsystem": "bdev", "config": [
                     [{"params": {}}]]}]})")),
                 std::invalid_argument);
}

TEST_F(json_config_fixture, save_then_load_gives_the_same_subsystems)
{
    json saved;
    json subsystems;
    json transports;
    json referrals;
    {
        target_under_test first;
        build(first);
        saved = json::parse(rpc::save_config(first.bdevs, first.nvmf).dump());
        subsystems = first.calls.result("nvmf_get_subsystems");
        transports = first.calls.result("nvmf_get_transports");
        referrals = first.calls.result("nvmf_discovery_get_referrals");
    }
    EXPECT_EQ(referrals.size(), 1U);
    target_under_test second;
    rpc::load_config(second.methods, saved);
    EXPECT_EQ(second.calls.result("nvmf_get_subsystems"), subsystems);
    EXPECT_EQ(second.calls.result("nvmf_get_transports"), transports);
    EXPECT_EQ(second.calls.result("nvmf_discovery_get_referrals"), referrals);
    EXPECT_EQ(rpc::save_config(second.bdevs, second.nvmf), saved);
    EXPECT_EQ(second.calls.error("bdev_malloc_delete", R"({"name": "Malloc0"})")["code"], -16);
}

TEST_F(json_config_fixture, load_names_the_call_that_fails_and_keeps_what_came_before)
{
    target_under_test t;
    const json config = json::parse(R"({"subsystems": [
        {"subsystem": "bdev", "config": [
            {"method": "bdev_null_create", "params": {"name": "n", "num_blocks": 8, "block_size": 512}},
            {"method": "bdev_null_create", "params": {"name": "n", "num_blocks": 8, "block_size": 512}}]}]})");
    try {
        rpc::load_config(t.methods, config);
        FAIL() << "loaded";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(
            std::string{e.what()}.find(
                "bdev: bdev_null_create failed (a bdev named 'n' exists already: File exists, code -17)"),
            std::string::npos)
            << e.what();
    }
    EXPECT_EQ(t.bdevs.size(), 1U);

    const auto refused = [&](const std::string& text, const std::string& part) {
        try {
            rpc::load_config(t.methods, json::parse(text));
            ADD_FAILURE() << "loaded " << text;
        } catch (const std::invalid_argument& e) {
            EXPECT_NE(std::string{e.what()}.find(part), std::string::npos) << e.what();
        }
    };
    refused("[]", R"("subsystems" array)");
    refused(R"({"subsystems": [{"config": []}]})", R"("subsystem" name)");
    refused(R"({"subsystems": [{"subsystem": "bdev", "config": {}}]})", "must be an array");
    refused(R"({"subsystems": [{"subsystem": "bdev", "config": [{"params": {}}]}]})", R"(no "method")");
    refused(R"({"subsystems": [{"subsystem": "sock", "config": [{"method": "sock_impl_set_options"}]}]})",
            "sock: sock_impl_set_options failed (Method not found");
    // Subsystems without calls are fine, as SPDK writes them for modules that have nothing set.
    EXPECT_NO_THROW(rpc::load_config(t.methods, json::parse(R"({"subsystems": [
        {"subsystem": "accel", "config": []}, {"subsystem": "vmd", "config": null}, {"subsystem": "x"}]})")));
}

} // namespace rpc_json_config_test
} // namespace
