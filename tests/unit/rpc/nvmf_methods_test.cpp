#include <nvmekit/rpc/nvmf_methods.hpp>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>
#include <unistd.h>
#include <gtest/gtest.h>

#include <nvmekit/rpc/bdev_methods.hpp>

#include "rpc/method_calls.hpp"

namespace {
namespace rpc_nvmf_methods_test {

namespace rpc = nvmekit::rpc;
using nlohmann::json;

constexpr const char* cnode1 = "nqn.2016-06.io.spdk:cnode1";

struct nvmf_methods_fixture : ::testing::Test {
    rpc::registry methods;
    rpc::bdev_registry bdevs;
    rpc::nvmf_registry target;
    rpc::nvmf_method_hooks hooks;
    nvmekit_test::method_calls calls{methods};
    std::string directory;

    void SetUp() override
    {
        std::string pattern = "/tmp/nvmekit-nvmf-XXXXXX";
        ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
        directory = pattern;
    }
    void TearDown() override { ::rmdir(directory.c_str()); }

    /// Adds the methods (after the test set `hooks`).
    void add_methods()
    {
        rpc::add_bdev_methods(methods, bdevs);
        rpc::add_nvmf_methods(methods, bdevs, target, hooks);
    }
    json result(const std::string& method, const std::string& params = "") const
    {
        return calls.result(method, params);
    }
    json error(const std::string& method, const std::string& params = "") const
    {
        return calls.error(method, params);
    }
    /// The error's code, and whether its message contains `part`.
    static void expect_error(const json& e, int code, const std::string& part)
    {
        EXPECT_EQ(e.value("code", 0), code) << e.dump();
        EXPECT_NE(e.value("message", std::string{}).find(part), std::string::npos) << e.dump();
    }
    void make_subsystem(const std::string& nqn = cnode1)
    {
        ASSERT_EQ(result("nvmf_create_subsystem", R"({"nqn": ")" + nqn + R"(", "allow_any_host": true})"),
                  true);
    }
    void make_bdev(const std::string& name, const std::string& uuid = "")
    {
        ASSERT_EQ(result("bdev_null_create", R"({"name": ")" + name +
                                                 R"(", "num_blocks": 64, "block_size": 512)" +
                                                 (uuid.empty() ? "" : R"(, "uuid": ")" + uuid + "\"") + "}"),
                  name);
    }
    std::string vfio_user_address(const std::string& traddr) const
    {
        return R"({"trtype": "VFIOUSER", "adrfam": "IPv4", "traddr": ")" + traddr + R"(", "trsvcid": "0"})";
    }
};

TEST_F(nvmf_methods_fixture, create_transport_records_the_options_and_get_transports_lists_them)
{
    add_methods();
    // scripts/rpc.py nvmf_create_transport -t VFIOUSER -q 512 -m 15 -i 262144
    EXPECT_EQ(result("nvmf_create_transport", R"({"trtype": "VFIOUSER", "max_queue_depth": 512,
        "max_io_qpairs_per_ctrlr": 15, "max_io_size": 262144, "disable_mappable_bar0": true})"),
              true);
    // Lower case as rpc.py's -t tcp sends it; max_qpairs_per_ctrlr counts the admin queue too.
    EXPECT_EQ(result("nvmf_create_transport", R"({"trtype": "tcp", "max_qpairs_per_ctrlr": 9,
        "in_capsule_data_size": 8192, "num_shared_buffers": 1023, "c2h_success": true, "no_srq": true})"),
              true);
    EXPECT_EQ(result("nvmf_get_transports"), json::parse(R"([
      {"trtype": "VFIOUSER", "max_queue_depth": 512, "max_io_qpairs_per_ctrlr": 15,
       "in_capsule_data_size": 0, "max_io_size": 262144, "io_unit_size": 131072, "max_aq_depth": 32,
       "num_shared_buffers": 0, "buf_cache_size": 0, "abort_timeout_sec": 1,
       "dif_insert_or_strip": false, "zcopy": false, "disable_mappable_bar0": true,
       "disable_adaptive_irq": false, "disable_shadow_doorbells": false},
      {"trtype": "TCP", "max_queue_depth": 128, "max_io_qpairs_per_ctrlr": 8,
       "in_capsule_data_size": 8192, "max_io_size": 131072, "io_unit_size": 131072, "max_aq_depth": 128,
       "num_shared_buffers": 1023, "buf_cache_size": 4294967295, "abort_timeout_sec": 1,
       "dif_insert_or_strip": false, "zcopy": false, "c2h_success": true, "sock_priority": 0,
       "control_msg_num": 32}])"));
    EXPECT_EQ(result("nvmf_get_transports", R"({"trtype": "Tcp"})").size(), 1U);
    EXPECT_EQ(result("nvmf_get_transports", R"({"tgt_name": "nvmf_tgt"})").size(), 2U);
    expect_error(error("nvmf_get_transports", R"({"trtype": "RDMA"})"), -32602, "'RDMA' does not exist");
}

TEST_F(nvmf_methods_fixture, create_transport_refuses_what_nvmekit_cannot_do_naming_it)
{
    add_methods();
    expect_error(error("nvmf_create_transport"), -32602, "missing parameter 'trtype'");
    expect_error(error("nvmf_create_transport", R"({"trtype": 4})"), -32602, "'trtype' must be a string");
    expect_error(error("nvmf_create_transport", R"({"trtype": "RDMA"})"), -32602, "'RDMA' is not supported");
    expect_error(error("nvmf_create_transport", R"({"trtype": "TCP", "sock_priority": 6})"), -32602,
                 "'sock_priority'");
    expect_error(error("nvmf_create_transport", R"({"trtype": "TCP", "c2h_success": false})"), -32602,
                 "'c2h_success'");
    expect_error(error("nvmf_create_transport", R"({"trtype": "VFIOUSER", "max_aq_depth": 64})"), -32602,
                 "'max_aq_depth'");
    expect_error(error("nvmf_create_transport", R"({"trtype": "VFIOUSER", "in_capsule_data_size": 4096})"),
                 -32602, "'in_capsule_data_size'");
    expect_error(
        error("nvmf_create_transport", R"({"trtype": "VFIOUSER", "disable_shadow_doorbells": true})"), -32602,
        "'disable_shadow_doorbells'");
    expect_error(error("nvmf_create_transport", R"({"trtype": "TCP", "in_capsule_data_size": 100})"), -32602,
                 "'in_capsule_data_size'");
    expect_error(error("nvmf_create_transport", R"({"trtype": "TCP", "max_io_size": 100000})"), -32602,
                 "'max_io_size'");
    expect_error(error("nvmf_create_transport", R"({"trtype": "TCP", "max_queue_depth": 1})"), -32602,
                 "'max_queue_depth'");
    expect_error(error("nvmf_create_transport", R"({"trtype": "TCP", "max_queue_depth": -1})"), -32602,
                 "'max_queue_depth'");
    expect_error(error("nvmf_create_transport", R"({"trtype": "TCP", "zcopy": true})"), -32602, "'zcopy'");
    expect_error(error("nvmf_create_transport", R"({"trtype": "TCP", "bogus": 1})"), -32602,
                 "unknown parameter 'bogus'");
    expect_error(error("nvmf_create_transport", R"({"trtype": "TCP", "tgt_name": "other"})"), -32602,
                 "Unable to find target other");
    EXPECT_EQ(result("nvmf_get_transports"), json::array());

    EXPECT_EQ(result("nvmf_create_transport", R"({"trtype": "TCP"})"), true);
    expect_error(error("nvmf_create_transport", R"({"trtype": "TCP", "max_queue_depth": 64})"), -32602,
                 "'TCP' already exists");
    EXPECT_EQ(result("nvmf_get_transports")[0]["max_queue_depth"], 128);
}

TEST_F(nvmf_methods_fixture, create_transport_takes_the_newer_options_rpc_py_sends)
{
    add_methods();
    // scripts/rpc.py nvmf_create_transport -t tcp --iobuf-small-cache-size 64 --iobuf-large-cache-size 8
    // --acceptor-poll-rate 10000, with the switches it always sends.
    EXPECT_EQ(result("nvmf_create_transport", R"({"trtype": "tcp", "iobuf_small_cache_size": 64,
        "iobuf_large_cache_size": 8, "acceptor_poll_rate": 10000, "zcopy": false, "no_srq": false,
        "c2h_success": true, "dif_insert_or_strip": false, "no_wr_batching": false,
        "disable_mappable_bar0": false, "disable_adaptive_irq": false, "disable_shadow_doorbells": false,
        "disable_command_passthru": false, "masked_oncs": [], "masked_fuses": []})"),
              true);
    // The pools' shares are taken and not reported: there are no pools.
    const json tcp = result("nvmf_get_transports")[0];
    EXPECT_FALSE(tcp.contains("iobuf_small_cache_size")) << tcp.dump();
    EXPECT_EQ(tcp["buf_cache_size"], 4294967295U);
    // Values asking for what nvmekit does not do are refused, naming the parameter.
    const auto refused = [&](const std::string& options, const std::string& part) {
        expect_error(error("nvmf_create_transport", R"({"trtype": "VFIOUSER", )" + options + "}"), -32602,
                     part);
    };
    refused(R"("acceptor_poll_rate": 500)",
            "'acceptor_poll_rate' is not supported with a value other than 10000");
    refused(R"("masked_oncs": ["nvmcmps"])", "'masked_oncs'");
    refused(R"("masked_fuses": ["fcws"])", "'masked_fuses'");
    refused(R"("masked_oncs": "nvmcmps")", "'masked_oncs' must be an array");
    refused(R"("kas": 10)", "'kas' is not supported");
    refused(R"("min_kato": 10000)", "'min_kato' is not supported");
    refused(R"("iobuf_small_cache_size": -1)", "'iobuf_small_cache_size'");
    EXPECT_EQ(result("nvmf_get_transports").size(), 1U);
}

TEST_F(nvmf_methods_fixture, get_subsystems_of_one_nqn)
{
    add_methods();
    make_subsystem();
    make_subsystem("nqn.2016-06.io.spdk:cnode2");
    // scripts/rpc.py nvmf_get_subsystems nqn.2016-06.io.spdk:cnode2
    const json all = result("nvmf_get_subsystems");
    ASSERT_EQ(all.size(), 3U);
    EXPECT_EQ(result("nvmf_get_subsystems", R"({"nqn": "nqn.2016-06.io.spdk:cnode2"})"),
              json::array({all[2]}));
    EXPECT_EQ(
        result("nvmf_get_subsystems", R"({"nqn": "nqn.2016-06.io.spdk:cnode1", "tgt_name": "nvmf_tgt"})"),
        json::array({all[1]}));
    EXPECT_EQ(result("nvmf_get_subsystems", R"({"nqn": "nqn.2014-08.org.nvmexpress.discovery"})"),
              json::array({all[0]}));
    expect_error(error("nvmf_get_subsystems", R"({"nqn": "nqn.x:9"})"), -32602,
                 "Unable to find subsystem with NQN nqn.x:9");
    expect_error(error("nvmf_get_subsystems", R"({"nqn": 3})"), -32602, "'nqn' must be a string");
}

TEST_F(nvmf_methods_fixture, newer_subsystem_host_and_listener_parameters)
{
    add_methods();
    // scripts/rpc.py nvmf_create_subsystem --admin-label: no extended discovery entries to carry it.
    expect_error(
        error("nvmf_create_subsystem", R"({"nqn": "nqn.2016-06.io.spdk:cnode1", "admin_label": "abcd"})"),
        -32602, "'admin_label' is not supported");
    EXPECT_EQ(result("nvmf_get_subsystems").size(), 1U);
    make_subsystem();
    // nvmf_subsystem_remove_host -T 100: the removal does not wait, so any timeout is met.
    const std::string host1 = R"({"nqn": "nqn.2016-06.io.spdk:cnode1", "host": "nqn.2016-06.io.spdk:host1")";
    EXPECT_EQ(result("nvmf_subsystem_add_host", host1 + "}"), true);
    expect_error(error("nvmf_subsystem_remove_host", host1 + R"(, "timeout_ms": "100"})"), -32602,
                 "'timeout_ms' must be an integer");
    EXPECT_EQ(result("nvmf_get_subsystems")[1]["hosts"].size(), 1U);
    EXPECT_EQ(result("nvmf_subsystem_remove_host", host1 + R"(, "timeout_ms": 100})"), true);
    EXPECT_EQ(result("nvmf_get_subsystems")[1]["hosts"], json::array());
    // nvmf_subsystem_add_listener --numa-id: -1 (any node) only.
    ASSERT_EQ(result("nvmf_create_transport", R"({"trtype": "TCP"})"), true);
    const std::string tcp = R"({"nqn": "nqn.2016-06.io.spdk:cnode1", "listen_address": {"trtype": "TCP",
        "traddr": "127.0.0.1", "trsvcid": "4420"}, "secure_channel": false)";
    expect_error(error("nvmf_subsystem_add_listener", tcp + R"(, "numa_id": 0})"), -32602, "'numa_id'");
    EXPECT_EQ(result("nvmf_get_subsystems")[1]["listen_addresses"], json::array());
    EXPECT_EQ(result("nvmf_subsystem_add_listener", tcp + R"(, "numa_id": -1})"), true);
    EXPECT_EQ(result("nvmf_get_subsystems")[1]["listen_addresses"].size(), 1U);
}

TEST_F(nvmf_methods_fixture, create_subsystem_as_rpc_py_sends_it_and_get_subsystems_in_spdks_shape)
{
    add_methods();
    // scripts/rpc.py nvmf_create_subsystem nqn.2016-06.io.spdk:cnode1 -a -s SPDK001 -d Ctrl1, with
    // the fields it sends unset.
    EXPECT_EQ(result("nvmf_create_subsystem", R"({"nqn": "nqn.2016-06.io.spdk:cnode1",
        "serial_number": "SPDK001", "model_number": "Ctrl1", "allow_any_host": true,
        "ana_reporting": false, "passthrough": false, "enable_nssr": false, "max_namespaces": 0,
        "min_cntlid": 1, "max_cntlid": 65519})"),
              true);
    EXPECT_EQ(result("nvmf_create_subsystem", R"({"nqn": "nqn.2016-06.io.spdk:cnode2"})"), true);
    EXPECT_EQ(result("nvmf_get_subsystems"), json::parse(R"([
      {"nqn": "nqn.2014-08.org.nvmexpress.discovery", "subtype": "Discovery", "listen_addresses": [],
       "allow_any_host": true, "hosts": []},
      {"nqn": "nqn.2016-06.io.spdk:cnode1", "subtype": "NVMe", "listen_addresses": [],
       "allow_any_host": true, "hosts": [], "serial_number": "SPDK001", "model_number": "Ctrl1",
       "max_namespaces": 32, "min_cntlid": 1, "max_cntlid": 65519, "namespaces": []},
      {"nqn": "nqn.2016-06.io.spdk:cnode2", "subtype": "NVMe", "listen_addresses": [],
       "allow_any_host": false, "hosts": [], "serial_number": "00000000000000000000",
       "model_number": "nvmekit Controller", "max_namespaces": 32, "min_cntlid": 1,
       "max_cntlid": 65519, "namespaces": []}])"));
}

TEST_F(nvmf_methods_fixture, create_subsystem_refusals_name_the_problem_and_create_nothing)
{
    add_methods();
    make_subsystem();
    expect_error(error("nvmf_create_subsystem", R"({"nqn": "nqn.2016-06.io.spdk:cnode1"})"), -32603,
                 "Unable to create subsystem nqn.2016-06.io.spdk:cnode1");
    expect_error(error("nvmf_create_subsystem", R"({"nqn": "nqn.2014-08.org.nvmexpress.discovery"})"), -32603,
                 "Unable to create subsystem");
    expect_error(error("nvmf_create_subsystem"), -32602, "missing parameter 'nqn'");
    expect_error(error("nvmf_create_subsystem", R"({"nqn": true})"), -32602, "'nqn' must be a string");
    expect_error(error("nvmf_create_subsystem", R"({"nqn": "cnode3"})"), -32602, "'cnode3' is not an NQN");
    expect_error(
        error("nvmf_create_subsystem", R"({"nqn": "nqn.x:3", "serial_number": "123456789012345678901"})"),
        -32602, "Invalid SN");
    expect_error(error("nvmf_create_subsystem", R"({"nqn": "nqn.x:3", "model_number": ""})"), -32602,
                 "Invalid MN");
    expect_error(error("nvmf_create_subsystem", R"({"nqn": "nqn.x:3", "min_cntlid": 9, "max_cntlid": 8})"),
                 -32602, "Invalid cntlid range [9-8]");
    expect_error(error("nvmf_create_subsystem", R"({"nqn": "nqn.x:3", "max_cntlid": 65520})"), -32602,
                 "Invalid cntlid range");
    expect_error(error("nvmf_create_subsystem", R"({"nqn": "nqn.x:3", "ana_reporting": true})"), -32602,
                 "'ana_reporting'");
    expect_error(error("nvmf_create_subsystem", R"({"nqn": "nqn.x:3", "max_namespaces": 2000})"), -32602,
                 "'max_namespaces'");
    expect_error(error("nvmf_create_subsystem", R"({"nqn": "nqn.x:3", "min_cntlid": 70000})"), -32602,
                 "'min_cntlid'");
    EXPECT_EQ(result("nvmf_get_subsystems").size(), 2U);
}

TEST_F(nvmf_methods_fixture, delete_subsystem_releases_its_bdevs)
{
    add_methods();
    make_subsystem();
    make_bdev("Null0");
    EXPECT_EQ(result("nvmf_subsystem_add_ns", R"({"nqn": "nqn.2016-06.io.spdk:cnode1",
        "namespace": {"bdev_name": "Null0"}})"),
              1);
    expect_error(error("bdev_null_delete", R"({"name": "Null0"})"), -EBUSY, cnode1);
    expect_error(error("nvmf_delete_subsystem", R"({"nqn": "nqn.2016-06.io.spdk:cnode9"})"), -32602,
                 "Unable to find subsystem with NQN nqn.2016-06.io.spdk:cnode9");
    expect_error(error("nvmf_delete_subsystem"), -32602, "missing parameter 'nqn'");
    EXPECT_EQ(result("nvmf_delete_subsystem", R"({"nqn": "nqn.2016-06.io.spdk:cnode1"})"), true);
    EXPECT_EQ(result("nvmf_get_subsystems").size(), 1U);
    EXPECT_EQ(result("bdev_null_delete", R"({"name": "Null0"})"), true);
}

TEST_F(nvmf_methods_fixture, add_ns_numbers_identifies_and_claims)
{
    add_methods();
    make_subsystem();
    make_bdev("a", "11111111-2222-3333-4444-555555555555");
    make_bdev("b");
    make_bdev("c");
    EXPECT_EQ(result("nvmf_subsystem_add_ns", R"({"nqn": "nqn.2016-06.io.spdk:cnode1",
        "namespace": {"bdev_name": "a", "eui64": "0011223344556677"}})"),
              1);
    EXPECT_EQ(result("nvmf_subsystem_add_ns", R"({"nqn": "nqn.2016-06.io.spdk:cnode1",
        "namespace": {"bdev_name": "b", "nsid": 5, "uuid": "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee",
                      "nguid": "ffeeddcc-bbaa9988-77665544-33221100", "anagrpid": 0,
                      "no_auto_visible": false}})"),
              5);
    EXPECT_EQ(result("nvmf_subsystem_add_ns", R"({"nqn": "nqn.2016-06.io.spdk:cnode1",
        "namespace": {"bdev_name": "c"}})"),
              2);
    const json subsystem = result("nvmf_get_subsystems")[1];
    EXPECT_EQ(subsystem["namespaces"][0], json::parse(R"({"nsid": 1, "bdev_name": "a", "name": "a",
        "uuid": "11111111-2222-3333-4444-555555555555", "nguid": "11111111222233334444555555555555",
        "eui64": "0011223344556677"})"));
    EXPECT_EQ(subsystem["namespaces"][1]["nsid"], 2);
    EXPECT_EQ(subsystem["namespaces"][2], json::parse(R"({"nsid": 5, "bdev_name": "b", "name": "b",
        "uuid": "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee", "nguid": "FFEEDDCCBBAA99887766554433221100"})"));
    EXPECT_EQ(result("bdev_get_bdevs", R"({"name": "a"})")[0]["claimed"], true);
    expect_error(error("bdev_null_delete", R"({"name": "b"})"), -EBUSY, "claimed");

    EXPECT_EQ(result("nvmf_subsystem_remove_ns", R"({"nqn": "nqn.2016-06.io.spdk:cnode1", "nsid": 5})"),
              true);
    EXPECT_EQ(result("bdev_null_delete", R"({"name": "b"})"), true);
    EXPECT_EQ(result("nvmf_get_subsystems")[1]["namespaces"].size(), 2U);
}

TEST_F(nvmf_methods_fixture, add_ns_and_remove_ns_refusals_change_nothing)
{
    add_methods();
    make_subsystem();
    make_subsystem("nqn.2016-06.io.spdk:cnode2");
    make_bdev("a");
    make_bdev("b");
    const auto add_ns = [&](const std::string& nqn, const std::string& ns) {
        return error("nvmf_subsystem_add_ns", R"({"nqn": ")" + nqn + R"(", "namespace": )" + ns + "}");
    };
    ASSERT_EQ(result("nvmf_subsystem_add_ns", R"({"nqn": "nqn.2016-06.io.spdk:cnode1",
        "namespace": {"bdev_name": "a", "nsid": 3}})"),
              3);
    expect_error(add_ns(cnode1, R"({"bdev_name": "b", "nsid": 3})"), -32602, "nsid 3 is in use");
    expect_error(add_ns("nqn.2016-06.io.spdk:cnode2", R"({"bdev_name": "a"})"), -32602,
                 "bdev 'a' is claimed by nqn.2016-06.io.spdk:cnode1");
    expect_error(add_ns("nqn.2016-06.io.spdk:cnode9", R"({"bdev_name": "b"})"), -32602,
                 "Unable to find subsystem with NQN nqn.2016-06.io.spdk:cnode9");
    expect_error(add_ns(cnode1, R"({"bdev_name": "zz"})"), -32602, "Unable to find bdev 'zz'");
    expect_error(add_ns(cnode1, R"({"nsid": 4})"), -32602, "missing parameter 'bdev_name'");
    expect_error(add_ns(cnode1, R"("b")"), -32602, "'namespace' must be an object");
    expect_error(add_ns(cnode1, R"({"bdev_name": "b", "nsid": 33})"), -32602, "max_namespaces");
    expect_error(add_ns(cnode1, R"({"bdev_name": "b", "nsid": 4294967295})"), -32602, "'nsid'");
    expect_error(add_ns(cnode1, R"({"bdev_name": "b", "nguid": "12"})"), -32602, "'nguid'");
    expect_error(add_ns(cnode1, R"({"bdev_name": "b", "eui64": "zz11223344556677"})"), -32602, "'eui64'");
    expect_error(add_ns(cnode1, R"({"bdev_name": "b", "uuid": "x"})"), -32602, "'uuid'");
    expect_error(add_ns(cnode1, R"({"bdev_name": "b", "ptpl_file": "/tmp/pr.json"})"), -32602, "'ptpl_file'");
    expect_error(add_ns(cnode1, R"({"bdev_name": "b", "hide_metadata": true})"), -32602, "'hide_metadata'");
    expect_error(error("nvmf_subsystem_add_ns", R"({"nqn": "nqn.2016-06.io.spdk:cnode1"})"), -32602,
                 "missing parameter 'namespace'");
    // The same UUID twice in one subsystem.
    const std::string uuid = result("bdev_get_bdevs", R"({"name": "a"})")[0]["uuid"];
    expect_error(add_ns(cnode1, R"({"bdev_name": "b", "uuid": ")" + uuid + R"("})"), -32602, "same uuid");
    EXPECT_EQ(result("bdev_get_bdevs", R"({"name": "b"})")[0]["claimed"], false);
    EXPECT_EQ(result("nvmf_get_subsystems")[1]["namespaces"].size(), 1U);

    expect_error(error("nvmf_subsystem_remove_ns", R"({"nqn": "nqn.2016-06.io.spdk:cnode1", "nsid": 1})"),
                 -32602, "has no namespace 1");
    expect_error(error("nvmf_subsystem_remove_ns", R"({"nqn": "nqn.2016-06.io.spdk:cnode1"})"), -32602,
                 "missing parameter 'nsid'");
    expect_error(error("nvmf_subsystem_remove_ns", R"({"nqn": "nqn.2016-06.io.spdk:cnode1", "nsid": "3"})"),
                 -32602, "'nsid' must be an integer");
    expect_error(error("nvmf_subsystem_remove_ns", R"({"nqn": "nqn.2016-06.io.spdk:cnode7", "nsid": 3})"),
                 -32602, "Unable to find subsystem");
    EXPECT_EQ(result("nvmf_get_subsystems")[1]["namespaces"].size(), 1U);
}

TEST_F(nvmf_methods_fixture, hosts_are_added_removed_and_any_host_switched)
{
    add_methods();
    make_subsystem();
    const std::string host1 = R"({"nqn": "nqn.2016-06.io.spdk:cnode1", "host": "nqn.2016-06.io.spdk:host1")";
    EXPECT_EQ(result("nvmf_subsystem_add_host", host1 + "}"), true);
    EXPECT_EQ(result("nvmf_subsystem_add_host", host1 + "}"), true); // allowed already: as SPDK, no error
    EXPECT_EQ(result("nvmf_subsystem_allow_any_host",
                     R"({"nqn": "nqn.2016-06.io.spdk:cnode1", "allow_any_host": false})"),
              true);
    json subsystem = result("nvmf_get_subsystems")[1];
    EXPECT_EQ(subsystem["hosts"], json::parse(R"([{"nqn": "nqn.2016-06.io.spdk:host1"}])"));
    EXPECT_EQ(subsystem["allow_any_host"], false);

    expect_error(error("nvmf_subsystem_add_host", host1 + R"(, "psk": "/tmp/key"})"), -32602, "'psk'");
    expect_error(error("nvmf_subsystem_add_host", R"({"nqn": "nqn.2016-06.io.spdk:cnode1", "host": "h"})"),
                 -32602, "'h' is not an NQN");
    expect_error(error("nvmf_subsystem_add_host", R"({"nqn": "nqn.2016-06.io.spdk:cnode1"})"), -32602,
                 "missing parameter 'host'");
    expect_error(error("nvmf_subsystem_allow_any_host", R"({"nqn": "nqn.2016-06.io.spdk:cnode1"})"), -32602,
                 "missing parameter 'allow_any_host'");
    expect_error(error("nvmf_subsystem_allow_any_host",
                       R"({"nqn": "nqn.2016-06.io.spdk:cnode1", "allow_any_host": 1})"),
                 -32602, "'allow_any_host' must be a boolean");
    expect_error(error("nvmf_subsystem_allow_any_host", R"({"nqn": "nqn.x:9", "allow_any_host": true})"),
                 -32602, "Unable to find subsystem with NQN nqn.x:9");

    EXPECT_EQ(result("nvmf_subsystem_remove_host", host1 + "}"), true);
    expect_error(error("nvmf_subsystem_remove_host", host1 + "}"), -32602,
                 "host nqn.2016-06.io.spdk:host1 is not allowed");
    EXPECT_EQ(result("nvmf_get_subsystems")[1]["hosts"], json::array());
}

TEST_F(nvmf_methods_fixture, vfio_user_listeners_need_the_transport_and_a_directory)
{
    add_methods();
    make_subsystem();
    make_subsystem("nqn.2016-06.io.spdk:cnode2");
    const auto listener = [&](const std::string& nqn, const std::string& address) {
        return R"({"nqn": ")" + nqn + R"(", "listen_address": )" + address + "}";
    };
    expect_error(error("nvmf_subsystem_add_listener", listener(cnode1, vfio_user_address(directory))), -32602,
                 "Unable to find VFIOUSER transport");
    ASSERT_EQ(result("nvmf_create_transport", R"({"trtype": "VFIOUSER"})"), true);
    expect_error(error("nvmf_subsystem_add_listener", listener(cnode1, vfio_user_address(directory + "/no"))),
                 -32602, "is not a directory");
    EXPECT_EQ(result("nvmf_subsystem_add_listener", listener(cnode1, vfio_user_address(directory))), true);
    expect_error(error("nvmf_subsystem_add_listener", listener(cnode1, vfio_user_address(directory))), -32602,
                 "listens on VFIOUSER " + directory + " already");
    expect_error(error("nvmf_subsystem_add_listener",
                       listener("nqn.2016-06.io.spdk:cnode2", vfio_user_address(directory))),
                 -32602, "in use by subsystem nqn.2016-06.io.spdk:cnode1");
    expect_error(error("nvmf_subsystem_add_listener", listener("nqn.x:7", vfio_user_address(directory))),
                 -32602, "Unable to find subsystem with NQN nqn.x:7");
    expect_error(error("nvmf_subsystem_add_listener", R"({"nqn": "nqn.2016-06.io.spdk:cnode1"})"), -32602,
                 "missing parameter 'listen_address'");
    expect_error(error("nvmf_subsystem_add_listener", listener(cnode1, R"({"trtype": "VFIOUSER"})")), -32602,
                 "missing parameter 'traddr'");
    expect_error(error("nvmf_subsystem_add_listener",
                       R"({"nqn": "nqn.2016-06.io.spdk:cnode1", "secure_channel": true, "listen_address": )" +
                           vfio_user_address(directory) + "}"),
                 -32602, "'secure_channel'");
    EXPECT_EQ(result("nvmf_get_subsystems")[1]["listen_addresses"],
              json::array({json::parse(vfio_user_address(directory))}));
    EXPECT_EQ(result("nvmf_get_subsystems")[2]["listen_addresses"], json::array());

    EXPECT_EQ(result("nvmf_subsystem_remove_listener", listener(cnode1, vfio_user_address(directory))), true);
    expect_error(error("nvmf_subsystem_remove_listener", listener(cnode1, vfio_user_address(directory))),
                 -32602, "does not listen on VFIOUSER " + directory);
    EXPECT_EQ(result("nvmf_subsystem_add_listener",
                     listener("nqn.2016-06.io.spdk:cnode2", vfio_user_address(directory))),
              true);
}

TEST_F(nvmf_methods_fixture, tcp_listeners_take_an_address_family_and_a_port)
{
    add_methods();
    make_subsystem();
    make_subsystem("nqn.2016-06.io.spdk:cnode2");
    ASSERT_EQ(result("nvmf_create_transport", R"({"trtype": "TCP"})"), true);
    const auto listener = [](const std::string& nqn, const std::string& address) {
        return R"({"nqn": ")" + nqn + R"(", "listen_address": )" + address + "}";
    };
    // rpc.py -t tcp -a 127.0.0.1 -s 4420 without -f: adrfam IPv4.
    const std::string tcp = R"({"trtype": "tcp", "traddr": "127.0.0.1", "trsvcid": "4420"})";
    EXPECT_EQ(result("nvmf_subsystem_add_listener", listener(cnode1, tcp)), true);
    // One TCP address may serve several subsystems.
    EXPECT_EQ(result("nvmf_subsystem_add_listener", listener("nqn.2016-06.io.spdk:cnode2", tcp)), true);
    EXPECT_EQ(result("nvmf_get_subsystems")[1]["listen_addresses"], json::parse(R"([
        {"trtype": "TCP", "adrfam": "IPv4", "traddr": "127.0.0.1", "trsvcid": "4420"}])"));
    expect_error(
        error("nvmf_subsystem_add_listener",
              listener(cnode1,
                       R"({"trtype": "TCP", "adrfam": "ipv4", "traddr": "127.0.0.1", "trsvcid": "4420"})")),
        -32602, "listens on TCP IPv4 127.0.0.1:4420 already");
    expect_error(error("nvmf_subsystem_add_listener",
                       listener(cnode1, R"({"trtype": "TCP", "traddr": "127.0.0.1", "trsvcid": "70000"})")),
                 -32602, "'trsvcid'");
    expect_error(
        error("nvmf_subsystem_add_listener", listener(cnode1, R"({"trtype": "TCP", "traddr": "::1"})")),
        -32602, "'trsvcid'");
    expect_error(
        error("nvmf_subsystem_add_listener",
              listener(cnode1, R"({"trtype": "TCP", "adrfam": "IB", "traddr": "a", "trsvcid": "1"})")),
        -32602, "'adrfam'");
    expect_error(error("nvmf_subsystem_add_listener",
                       listener(cnode1, R"({"trtype": "RDMA", "traddr": "a", "trsvcid": "1"})")),
                 -32602, "'RDMA' is not supported");
    expect_error(error("nvmf_subsystem_add_listener",
                       listener(cnode1, R"({"trtype": "TCP", "traddr": "a", "trsvcid": "1", "x": 1})")),
                 -32602, "unknown parameter 'x'");
    EXPECT_EQ(result("nvmf_subsystem_remove_listener", listener(cnode1, tcp)), true);
    EXPECT_EQ(result("nvmf_get_subsystems")[1]["listen_addresses"], json::array());
}

TEST_F(nvmf_methods_fixture, a_failing_hook_undoes_the_addition)
{
    int listeners_started = 0;
    hooks.listener_added = [&](const rpc::nvmf_subsystem& s, const rpc::nvmf_listen_address& a) {
        EXPECT_EQ(s.listeners.back(), a);
        if (a.traddr == "10.0.0.9") {
            throw std::runtime_error("cannot listen on 10.0.0.9");
        }
        ++listeners_started;
    };
    hooks.namespace_added = [](const rpc::nvmf_subsystem&, const rpc::nvmf_namespace& ns) {
        if (ns.device->name() == "bad") {
            throw std::runtime_error("namespace refused");
        }
    };
    std::string removed;
    hooks.subsystem_removed = [&](const rpc::nvmf_subsystem& s) { removed = s.nqn; };
    add_methods();
    make_subsystem();
    make_bdev("bad");
    ASSERT_EQ(result("nvmf_create_transport", R"({"trtype": "TCP"})"), true);
    expect_error(error("nvmf_subsystem_add_listener", R"({"nqn": "nqn.2016-06.io.spdk:cnode1",
        "listen_address": {"trtype": "TCP", "traddr": "10.0.0.9", "trsvcid": "4420"}})"),
                 -32603, "cannot listen on 10.0.0.9");
    EXPECT_EQ(result("nvmf_subsystem_add_listener", R"({"nqn": "nqn.2016-06.io.spdk:cnode1",
        "listen_address": {"trtype": "TCP", "traddr": "10.0.0.8", "trsvcid": "4420"}})"),
              true);
    EXPECT_EQ(listeners_started, 1);
    expect_error(error("nvmf_subsystem_add_ns", R"({"nqn": "nqn.2016-06.io.spdk:cnode1",
        "namespace": {"bdev_name": "bad"}})"),
                 -32603, "namespace refused");
    const json subsystem = result("nvmf_get_subsystems")[1];
    EXPECT_EQ(subsystem["listen_addresses"].size(), 1U);
    EXPECT_EQ(subsystem["namespaces"], json::array());
    EXPECT_EQ(result("bdev_get_bdevs", R"({"name": "bad"})")[0]["claimed"], false);
    EXPECT_EQ(result("nvmf_delete_subsystem", R"({"nqn": "nqn.2016-06.io.spdk:cnode1"})"), true);
    EXPECT_EQ(removed, cnode1);
}

TEST_F(nvmf_methods_fixture, controllers_qpairs_and_stats_come_from_the_embedder)
{
    add_methods();
    make_subsystem();
    // Without hooks: nothing served.
    EXPECT_EQ(result("nvmf_subsystem_get_controllers", R"({"nqn": "nqn.2016-06.io.spdk:cnode1"})"),
              json::array());
    EXPECT_EQ(result("nvmf_subsystem_get_qpairs", R"({"nqn": "nqn.2016-06.io.spdk:cnode1"})"), json::array());
    EXPECT_EQ(result("nvmf_get_stats"), json::parse(R"({"tick_rate": 1000000000, "poll_groups": []})"));
    expect_error(error("nvmf_subsystem_get_controllers", R"({"nqn": "nqn.x:9"})"), -32602,
                 "Unable to find subsystem with NQN nqn.x:9");
    expect_error(error("nvmf_subsystem_get_qpairs"), -32602, "missing parameter 'nqn'");
    expect_error(error("nvmf_get_stats", R"({"x": 1})"), -32602, "unknown parameter 'x'");
}

TEST(nvmf_methods, controllers_qpairs_and_stats_hooks_answer)
{
    rpc::registry methods;
    rpc::bdev_registry bdevs;
    rpc::nvmf_registry target;
    target.add_subsystem({.nqn = cnode1});
    rpc::nvmf_method_hooks hooks;
    hooks.controllers = [](const rpc::nvmf_subsystem& s) {
        return json::array({{{"cntlid", 1}, {"hostnqn", s.nqn}}});
    };
    hooks.qpairs = [](const rpc::nvmf_subsystem&) -> json { throw std::runtime_error("no qpairs here"); };
    hooks.stats = [] { return json{{"tick_rate", 5}, {"poll_groups", json::array({{{"name", "g0"}}})}}; };
    rpc::add_nvmf_methods(methods, bdevs, target, hooks);
    const nvmekit_test::method_calls calls{methods};
    EXPECT_EQ(calls.result("nvmf_subsystem_get_controllers", R"({"nqn": "nqn.2016-06.io.spdk:cnode1"})"),
              json::parse(R"([{"cntlid": 1, "hostnqn": "nqn.2016-06.io.spdk:cnode1"}])"));
    EXPECT_EQ(calls.error("nvmf_subsystem_get_qpairs", R"({"nqn": "nqn.2016-06.io.spdk:cnode1"})"),
              json::parse(R"({"code": -32603, "message": "no qpairs here"})"));
    EXPECT_EQ(calls.result("nvmf_get_stats")["poll_groups"][0]["name"], "g0");
}

TEST(nvmf_methods, the_hosts_changed_hook_sees_each_change_and_a_failing_one_is_undone)
{
    rpc::registry methods;
    rpc::bdev_registry bdevs;
    rpc::nvmf_registry target;
    target.add_subsystem({.nqn = cnode1});
    rpc::nvmf_method_hooks hooks;
    std::vector<std::pair<bool, std::vector<std::string>>> seen;
    bool refuse = false;
    hooks.hosts_changed = [&](const rpc::nvmf_subsystem& s) {
        if (refuse) {
            throw std::runtime_error("cannot change the hosts");
        }
        seen.emplace_back(s.allow_any_host, s.hosts);
    };
    rpc::add_nvmf_methods(methods, bdevs, target, hooks);
    const nvmekit_test::method_calls calls{methods};
    const std::string host = "nqn.2014-08.org.nvmexpress:uuid:00000000-0000-0000-0000-0000000000aa";
    const std::string add = R"({"nqn": "nqn.2016-06.io.spdk:cnode1", "host": ")" + host + R"("})";
    EXPECT_EQ(calls.result("nvmf_subsystem_add_host", add), true);
    EXPECT_EQ(calls.result("nvmf_subsystem_allow_any_host",
                           R"({"nqn": "nqn.2016-06.io.spdk:cnode1", "allow_any_host": true})"),
              true);
    EXPECT_EQ(calls.result("nvmf_subsystem_remove_host", add), true);
    const std::vector<std::pair<bool, std::vector<std::string>>> expected{
        {false, {host}}, {true, {host}}, {true, {}}};
    EXPECT_EQ(seen, expected);

    refuse = true;
    EXPECT_EQ(calls.error("nvmf_subsystem_add_host", add).value("code", 0), -32603);
    EXPECT_EQ(calls
                  .error("nvmf_subsystem_allow_any_host",
                         R"({"nqn": "nqn.2016-06.io.spdk:cnode1", "allow_any_host": false})")
                  .value("code", 0),
              -32603);
    EXPECT_TRUE(target.subsystem(cnode1)->hosts.empty());
    EXPECT_TRUE(target.subsystem(cnode1)->allow_any_host);
    refuse = false;
    EXPECT_EQ(calls.result("nvmf_subsystem_add_host", add), true);
    refuse = true;
    EXPECT_EQ(calls.error("nvmf_subsystem_remove_host", add).value("code", 0), -32603);
    EXPECT_EQ(target.subsystem(cnode1)->hosts, std::vector<std::string>{host});
}

TEST_F(nvmf_methods_fixture, referrals_are_added_listed_and_removed_as_spdk_does)
{
    std::vector<std::vector<rpc::nvmf_referral>> seen;
    hooks.referrals_changed = [&](const std::vector<rpc::nvmf_referral>& referrals) {
        seen.push_back(referrals);
    };
    add_methods();
    EXPECT_EQ(result("nvmf_discovery_get_referrals"), json::array());
    // rpc.py nvmf_discovery_add_referral -t tcp -a 192.0.2.9 -s 8009: no adrfam, no subnqn
    const std::string address = R"("address": {"trtype": "tcp", "traddr": "192.0.2.9", "trsvcid": "8009"})";
    EXPECT_EQ(result("nvmf_discovery_add_referral", "{" + address + "}"), true);
    // ... and one to an NVM subsystem at the same address, needing a secure channel
    EXPECT_EQ(result("nvmf_discovery_add_referral",
                     "{" + address + R"(, "subnqn": "nqn.2016-06.io.spdk:cnode9", "secure_channel": true,
                         "tgt_name": "nvmf_tgt"})"),
              true);
    EXPECT_EQ(result("nvmf_discovery_get_referrals"), json::parse(R"([
        {"address": {"trtype": "TCP", "adrfam": "IPv4", "traddr": "192.0.2.9", "trsvcid": "8009"},
         "secure_channel": false, "subnqn": "nqn.2014-08.org.nvmexpress.discovery"},
        {"address": {"trtype": "TCP", "adrfam": "IPv4", "traddr": "192.0.2.9", "trsvcid": "8009"},
         "secure_channel": true, "subnqn": "nqn.2016-06.io.spdk:cnode9"}])"));
    ASSERT_EQ(seen.size(), 2U);
    EXPECT_EQ(seen[1].size(), 2U);
    EXPECT_EQ(seen[1][1].subnqn, "nqn.2016-06.io.spdk:cnode9");
    // The same address and NQN again: accepted, nothing changes
    EXPECT_EQ(result("nvmf_discovery_add_referral", "{" + address + R"(, "secure_channel": true})"), true);
    EXPECT_EQ(result("nvmf_discovery_get_referrals").size(), 2U);
    EXPECT_EQ(seen.size(), 2U);

    // Refusals
    expect_error(error("nvmf_discovery_add_referral", "{}"), -32602, "'address'");
    expect_error(error("nvmf_discovery_add_referral", R"({"address": {"trtype": "TCP", "traddr": "a"}})"),
                 -32602, "address 'trsvcid'");
    expect_error(error("nvmf_discovery_add_referral",
                       R"({"address": {"trtype": "VFIOUSER", "traddr": "/tmp", "trsvcid": "0"}})"),
                 -32602, "must be TCP");
    expect_error(error("nvmf_discovery_add_referral", "{" + address + R"(, "subnqn": "cnode9"})"), -32602,
                 "is not an NQN");
    expect_error(error("nvmf_discovery_add_referral", "{" + address + R"(, "x": 1})"), -32602,
                 "unknown parameter 'x'");
    expect_error(error("nvmf_discovery_get_referrals", R"({"tgt_name": "other"})"), -32602,
                 "Unable to find target other");

    // Removal names the address and the NQN (the discovery NQN when absent)
    EXPECT_EQ(result("nvmf_discovery_remove_referral", "{" + address + "}"), true);
    EXPECT_EQ(result("nvmf_discovery_get_referrals")[0]["subnqn"], "nqn.2016-06.io.spdk:cnode9");
    expect_error(error("nvmf_discovery_remove_referral", "{" + address + "}"), -32603,
                 "Unable to remove a referral");
    EXPECT_EQ(result("nvmf_discovery_remove_referral",
                     "{" + address + R"(, "subnqn": "nqn.2016-06.io.spdk:cnode9"})"),
              true);
    EXPECT_EQ(result("nvmf_discovery_get_referrals"), json::array());
    EXPECT_EQ(seen.size(), 4U);
    EXPECT_TRUE(seen.back().empty());
}

TEST_F(nvmf_methods_fixture, a_failing_referrals_hook_undoes_the_change)
{
    bool refuse = false;
    hooks.referrals_changed = [&](const std::vector<rpc::nvmf_referral>&) {
        if (refuse) {
            throw std::runtime_error("cannot list referrals");
        }
    };
    add_methods();
    const std::string params =
        R"({"address": {"trtype": "TCP", "adrfam": "IPv6", "traddr": "2001:db8::9", "trsvcid": "8009"}})";
    refuse = true;
    expect_error(error("nvmf_discovery_add_referral", params), -32603, "cannot list referrals");
    EXPECT_TRUE(target.referrals().empty());
    refuse = false;
    EXPECT_EQ(result("nvmf_discovery_add_referral", params), true);
    refuse = true;
    expect_error(error("nvmf_discovery_remove_referral", params), -32603, "cannot list referrals");
    ASSERT_EQ(target.referrals().size(), 1U);
    EXPECT_EQ(target.referrals()[0].address.adrfam, "IPv6");
}

TEST_F(nvmf_methods_fixture, the_methods_are_listed_and_callable_at_run_time_only)
{
    add_methods();
    const json names = result("rpc_get_methods");
    for (const char* name :
         {"nvmf_create_transport", "nvmf_get_transports", "nvmf_create_subsystem", "nvmf_delete_subsystem",
          "nvmf_get_subsystems", "nvmf_subsystem_add_ns", "nvmf_subsystem_remove_ns",
          "nvmf_subsystem_add_host", "nvmf_subsystem_remove_host", "nvmf_subsystem_allow_any_host",
          "nvmf_subsystem_add_listener", "nvmf_subsystem_remove_listener", "nvmf_discovery_add_referral",
          "nvmf_discovery_remove_referral", "nvmf_discovery_get_referrals"}) {
        EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
    }
    methods.set_state(rpc::states::startup);
    expect_error(error("nvmf_get_subsystems"), -1, "not callable in the current state");
}

TEST_F(nvmf_methods_fixture, array_params_are_refused)
{
    add_methods();
    expect_error(error("nvmf_get_subsystems", "[]"), -32602, "params must be an object");
    expect_error(error("nvmf_create_subsystem", R"(["nqn.2016-06.io.spdk:cnode1"])"), -32602,
                 "params must be an object");
}

TEST(nvmf_hex, parses_and_prints_identifiers)
{
    EXPECT_EQ(rpc::parse_hex<2>("aB-0f"), (std::array<std::uint8_t, 2>{0xab, 0x0f}));
    EXPECT_EQ(rpc::parse_hex<2>("ab0"), std::nullopt);
    EXPECT_EQ(rpc::parse_hex<2>("ab0f1"), std::nullopt);
    EXPECT_EQ(rpc::parse_hex<2>("ag0f"), std::nullopt);
    EXPECT_EQ(rpc::hex_string(std::array<std::uint8_t, 2>{0xab, 0x0f}), "AB0F");
}

} // namespace rpc_nvmf_methods_test
} // namespace
