#include <nvmekit/rpc/bdev_methods.hpp>

#include <array>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <gtest/gtest.h>

#include <nvmekit/rpc/server.hpp>

#include "rpc/method_calls.hpp"

namespace {
namespace rpc_bdev_methods_test {

namespace rpc = nvmekit::rpc;
using nlohmann::json;

/// Every supported_io_types member SPDK reports, with what nvmekit's backends serve.
json io_types(bool writable = true)
{
    return {{"read", true},         {"write", writable},      {"unmap", writable},
            {"flush", true},        {"reset", true},          {"nvme_admin", false},
            {"nvme_io", false},     {"nvme_io_md", false},    {"write_zeroes", writable},
            {"zcopy", false},       {"get_zone_info", false}, {"zone_management", false},
            {"zone_append", false}, {"compare", false},       {"compare_and_write", false},
            {"abort", false},       {"seek_hole", false},     {"seek_data", false},
            {"copy", false},        {"nvme_iov_md", false}};
}

/// The registry's clock in these tests: it moves by test_step at each reading.
std::uint64_t test_now = 123456789;
std::uint64_t test_step = 0;
std::uint64_t test_ticks() noexcept { return test_now += test_step; }

struct bdev_methods_fixture : ::testing::Test {
    rpc::registry methods;
    rpc::bdev_registry bdevs{{.tick_rate = 2'000'000'000, .ticks = &test_ticks}};
    nvmekit_test::method_calls calls{methods};
    std::string directory;

    void SetUp() override
    {
        test_now = 123456789;
        test_step = 0;
        rpc::add_bdev_methods(methods, bdevs);
        std::string pattern = "/tmp/nvmekit-bdev-XXXXXX";
        ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
        directory = pattern;
    }
    void TearDown() override
    {
        ::unlink((directory + "/disk.img").c_str());
        ::unlink((directory + "/rpc.sock").c_str());
        ::rmdir(directory.c_str());
    }

    json call(const std::string& request) const { return calls.call(request); }
    json result(const std::string& method, const std::string& params = "") const
    {
        return calls.result(method, params);
    }
    json error(const std::string& method, const std::string& params = "") const
    {
        return calls.error(method, params);
    }

    std::string make_file(std::size_t bytes)
    {
        std::string path = directory + "/disk.img";
        std::ofstream{path} << std::string(bytes, 'x');
        return path;
    }
};

TEST_F(bdev_methods_fixture, malloc_create_as_rpc_py_sends_it_then_bdev_get_bdevs)
{
    // scripts/rpc.py bdev_malloc_create -b Malloc7 -u ... 8 4096, with the metadata fields it
    // sends at their defaults.
    const json response = call(R"({
      "jsonrpc": "2.0", "method": "bdev_malloc_create", "id": 3,
      "params": {"num_blocks": 2048, "block_size": 4096, "name": "Malloc7",
                 "uuid": "2b6601ba-eada-44fb-9a83-a20eb9eb9e90", "physical_block_size": 4096,
                 "optimal_io_boundary": 0, "md_size": 0, "md_interleave": false, "dif_type": 0,
                 "dif_is_head_of_md": false, "dif_pi_format": 0}})");
    EXPECT_EQ(response, json::parse(R"({"jsonrpc": "2.0", "id": 3, "result": "Malloc7"})"));

    EXPECT_EQ(result("bdev_get_bdevs", R"({"name": "Malloc7"})"),
              json::parse(R"([{
      "name": "Malloc7", "aliases": [], "product_name": "Malloc disk", "block_size": 4096,
      "num_blocks": 2048, "uuid": "2b6601ba-eada-44fb-9a83-a20eb9eb9e90",
      "assigned_rate_limits": {"rw_ios_per_sec": 0, "rw_mbytes_per_sec": 0, "r_mbytes_per_sec": 0,
                               "w_mbytes_per_sec": 0},
      "claimed": false, "zoned": false, "supported_io_types": )" +
                          io_types().dump() + R"(, "driver_specific": {}}])"));
    const auto disk = bdevs.find("Malloc7");
    ASSERT_TRUE(disk);
    EXPECT_EQ(disk->backend().capacity_bytes(), 2048U * 4096U);
}

TEST_F(bdev_methods_fixture, malloc_names_itself_as_spdk_does)
{
    EXPECT_EQ(result("bdev_malloc_create", R"({"num_blocks": 8, "block_size": 512})"), "Malloc0");
    // Only generated names advance SPDK's counter.
    EXPECT_EQ(result("bdev_malloc_create", R"({"num_blocks": 8, "block_size": 512, "name": "x"})"), "x");
    EXPECT_EQ(result("bdev_malloc_create", R"({"num_blocks": 8, "block_size": 512})"), "Malloc1");
    const json all = result("bdev_get_bdevs");
    ASSERT_EQ(all.size(), 3U);
    EXPECT_EQ(all[0]["name"], "Malloc0");
    EXPECT_EQ(all[1]["name"], "x");
    EXPECT_EQ(all[2]["name"], "Malloc1");
    EXPECT_NE(all[0]["uuid"], all[2]["uuid"]);
    EXPECT_TRUE(rpc::parse_uuid(all[0]["uuid"].get<std::string>()));
}

TEST_F(bdev_methods_fixture, a_generated_name_that_is_taken_is_used_up_as_in_spdk)
{
    result("bdev_malloc_create", R"({"num_blocks": 8, "block_size": 512, "name": "Malloc0"})");
    EXPECT_EQ(error("bdev_malloc_create", R"({"num_blocks": 8, "block_size": 512})")["code"], -EEXIST);
    EXPECT_EQ(result("bdev_malloc_create", R"({"num_blocks": 8, "block_size": 512})"), "Malloc1");
    // Refused before its memory is allocated, a request uses up no name.
    EXPECT_EQ(error("bdev_malloc_create", R"({"num_blocks": 8, "block_size": 100})")["code"], -EINVAL);
    EXPECT_EQ(result("bdev_malloc_create", R"({"num_blocks": 8, "block_size": 512})"), "Malloc2");
}

TEST_F(bdev_methods_fixture, malloc_refuses_metadata_and_dif_naming_the_parameter)
{
    for (const char* field :
         {R"("md_size": 8)", R"("md_interleave": true)", R"("dif_type": 1)", R"("dif_is_head_of_md": true)",
          R"("dif_pi_format": 1)", R"("optimal_io_boundary": 16)", R"("physical_block_size": 4096)",
          R"("numa_id": 0)"}) {
        const json e = error("bdev_malloc_create",
                             std::string{R"({"num_blocks": 8, "block_size": 512, )"} + field + "}");
        EXPECT_EQ(e["code"], -32602) << field;
        const std::string name = json::parse(std::string{"{"} + field + "}").begin().key();
        EXPECT_NE(e["message"].get<std::string>().find("'" + name + "'"), std::string::npos) << e.dump();
    }
    EXPECT_EQ(bdevs.size(), 0U);
}

TEST_F(bdev_methods_fixture, unknown_missing_and_mistyped_parameters_are_invalid_params)
{
    EXPECT_EQ(error("bdev_malloc_create", R"({"num_blocks": 8, "block_size": 512, "colour": "red"})"),
              json::parse(R"({"code": -32602, "message": "unknown parameter 'colour'"})"));
    json e = error("bdev_malloc_create", R"({"block_size": 512})");
    EXPECT_EQ(e["code"], -32602);
    EXPECT_NE(e["message"].get<std::string>().find("missing parameter 'num_blocks'"), std::string::npos);
    e = error("bdev_malloc_create");
    EXPECT_EQ(e["code"], -32602);
    e = error("bdev_null_create", R"({"num_blocks": 8, "block_size": 512})");
    EXPECT_NE(e["message"].get<std::string>().find("missing parameter 'name'"), std::string::npos);
    e = error("bdev_malloc_create", R"({"num_blocks": "8", "block_size": 512})");
    EXPECT_EQ(e["code"], -32602);
    EXPECT_NE(e["message"].get<std::string>().find("'num_blocks'"), std::string::npos);
    e = error("bdev_malloc_create", R"({"num_blocks": 8, "block_size": 512, "uuid": "not-a-uuid"})");
    EXPECT_EQ(e["code"], -32602);
    EXPECT_NE(e["message"].get<std::string>().find("'uuid'"), std::string::npos);
    e = error("bdev_get_bdevs", R"({"nam": "x"})");
    EXPECT_EQ(e, json::parse(R"({"code": -32602, "message": "unknown parameter 'nam'"})"));
    EXPECT_EQ(bdevs.size(), 0U);
}

TEST_F(bdev_methods_fixture, bad_geometry_and_taken_names_answer_negative_errno)
{
    json e = error("bdev_malloc_create", R"({"num_blocks": 8, "block_size": 1000})");
    EXPECT_EQ(e["code"], -EINVAL);
    EXPECT_EQ(e["message"].get<std::string>().rfind("Invalid argument", 0), 0U) << e.dump();
    EXPECT_EQ(error("bdev_null_create", R"({"name": "n", "num_blocks": 0, "block_size": 512})")["code"],
              -EINVAL);

    result("bdev_malloc_create", R"({"num_blocks": 8, "block_size": 512, "name": "taken"})");
    e = error("bdev_null_create", R"({"name": "taken", "num_blocks": 8, "block_size": 512})");
    EXPECT_EQ(e["code"], -EEXIST);
    EXPECT_NE(e["message"].get<std::string>().find("'taken'"), std::string::npos) << e.dump();
    EXPECT_EQ(result("bdev_malloc_create", R"({"num_blocks": 8, "block_size": 512})"), "Malloc0");
}

TEST_F(bdev_methods_fixture, deletes_answer_true_or_no_such_device_as_spdk)
{
    result("bdev_malloc_create", R"({"num_blocks": 8, "block_size": 512, "name": "m"})");
    result("bdev_null_create", R"({"name": "n", "num_blocks": 8, "block_size": 512})");
    const json no_such_device = json::parse(R"({"code": -19, "message": "No such device"})");
    EXPECT_EQ(error("bdev_malloc_delete", R"({"name": "missing"})"), no_such_device);
    EXPECT_EQ(error("bdev_malloc_delete", R"({"name": "n"})"), no_such_device); // not a malloc bdev
    EXPECT_EQ(error("bdev_null_delete", R"({"name": "m"})"), no_such_device);
    EXPECT_EQ(error("bdev_aio_delete", R"({"name": "m"})"), no_such_device);
    EXPECT_EQ(result("bdev_malloc_delete", R"({"name": "m"})"), true);
    EXPECT_EQ(result("bdev_null_delete", R"({"name": "n"})"), true);
    EXPECT_EQ(error("bdev_null_delete", R"({"name": "n"})"), no_such_device);
    EXPECT_EQ(result("bdev_get_bdevs"), json::array());
    EXPECT_EQ(error("bdev_null_delete", R"({"name": "n", "extra": 1})")["code"], -32602);
}

TEST_F(bdev_methods_fixture, a_claimed_bdev_cannot_be_deleted)
{
    result("bdev_null_create", R"({"name": "n", "num_blocks": 8, "block_size": 512})");
    ASSERT_TRUE(bdevs.find("n")->claim("nqn.2016-06.io.spdk:cnode1"));
    const json info = result("bdev_get_bdevs", R"({"name": "n"})")[0];
    EXPECT_EQ(info["claimed"], true);
    EXPECT_EQ(info["claim_type"], "exclusive_write");
    const json e = error("bdev_null_delete", R"({"name": "n"})");
    EXPECT_EQ(e["code"], -EBUSY);
    EXPECT_NE(e["message"].get<std::string>().find("nqn.2016-06.io.spdk:cnode1"), std::string::npos);
    bdevs.find("n")->release();
    EXPECT_EQ(result("bdev_null_delete", R"({"name": "n"})"), true);
}

TEST_F(bdev_methods_fixture, null_create_accepts_its_defaults_and_refuses_the_rest)
{
    EXPECT_EQ(result("bdev_null_create", R"({"name": "Null0", "num_blocks": 16384, "block_size": 512,
        "uuid": "2b6601ba-eada-44fb-9a83-a20eb9eb9e90", "md_size": 0, "dif_type": 0,
        "dif_is_head_of_md": false, "dif_pi_format": 0, "physical_block_size": 0,
        "preferred_write_alignment": 0, "preferred_write_granularity": 0, "optimal_write_size": 0,
        "preferred_unmap_alignment": 0, "preferred_unmap_granularity": 0})"),
              "Null0");
    const json info = result("bdev_get_bdevs", R"({"name": "Null0"})")[0];
    EXPECT_EQ(info["product_name"], "Null disk");
    EXPECT_EQ(info["num_blocks"], 16384);
    EXPECT_EQ(info["uuid"], "2b6601ba-eada-44fb-9a83-a20eb9eb9e90");
    const json e = error("bdev_null_create", R"({"name": "Null1", "num_blocks": 8, "block_size": 520,
        "md_size": 8})");
    EXPECT_EQ(e["code"], -32602);
    EXPECT_NE(e["message"].get<std::string>().find("'md_size'"), std::string::npos);
}

TEST_F(bdev_methods_fixture, aio_create_on_a_file)
{
    const std::string path = make_file(64 * 1024 + 100);
    EXPECT_EQ(result("bdev_aio_create", R"({"filename": ")" + path + R"(", "name": "aio0"})"), "aio0");
    json info = result("bdev_get_bdevs", R"({"name": "aio0"})")[0];
    EXPECT_EQ(info["product_name"], "AIO disk");
    EXPECT_EQ(info["block_size"], 512);
    EXPECT_EQ(info["num_blocks"], 128); // the partial block at the end is not used
    EXPECT_EQ(info["driver_specific"], json({{"aio",
                                              {{"filename", path},
                                               {"block_size_override", false},
                                               {"readonly", false},
                                               {"fallocate", false},
                                               {"nowait", false}}}}));
    EXPECT_EQ(info["supported_io_types"], io_types());

    EXPECT_EQ(result("bdev_aio_create", R"({"filename": ")" + path +
                                            R"(", "name": "aio1", "block_size": 4096, "readonly": true})"),
              "aio1");
    info = result("bdev_get_bdevs", R"({"name": "aio1"})")[0];
    EXPECT_EQ(info["num_blocks"], 16);
    EXPECT_EQ(info["driver_specific"]["aio"]["block_size_override"], true);
    EXPECT_EQ(info["supported_io_types"], io_types(false));
    EXPECT_EQ(result("bdev_aio_delete", R"({"name": "aio1"})"), true);
}

TEST_F(bdev_methods_fixture, aio_create_failures)
{
    json e = error("bdev_aio_create", R"({"filename": ")" + directory + R"(/missing", "name": "a"})");
    EXPECT_EQ(e["code"], -ENOENT);
    EXPECT_NE(e["message"].get<std::string>().find("/missing"), std::string::npos) << e.dump();
    const std::string path = make_file(4096);
    EXPECT_EQ(error("bdev_aio_create",
                    R"({"filename": ")" + path + R"(", "name": "a", "block_size": 1000})")["code"],
              -EINVAL);
    EXPECT_EQ(error("bdev_aio_create",
                    R"({"filename": ")" + path + R"(", "name": "a", "block_size": 8192})")["code"],
              -EINVAL);
    EXPECT_EQ(error("bdev_aio_create", R"({"name": "a"})")["code"], -32602);
    e = error("bdev_aio_create", R"({"filename": ")" + path + R"(", "name": "a", "nowait": true})");
    EXPECT_EQ(e["code"], -32602);
    EXPECT_NE(e["message"].get<std::string>().find("'nowait'"), std::string::npos);
    EXPECT_EQ(bdevs.size(), 0U);
}

TEST_F(bdev_methods_fixture, get_bdevs_of_an_unknown_name_is_no_such_device)
{
    EXPECT_EQ(result("bdev_get_bdevs"), json::array());
    EXPECT_EQ(error("bdev_get_bdevs", R"({"name": "Malloc0", "timeout": 0})"),
              json::parse(R"({"code": -19, "message": "No such device"})"));
}

TEST_F(bdev_methods_fixture, iostat_reports_what_was_recorded_in_spdk_shape)
{
    result("bdev_null_create", R"({"name": "n", "num_blocks": 8, "block_size": 512})");
    result("bdev_null_create", R"({"name": "idle", "num_blocks": 8, "block_size": 512})");
    auto& stats = bdevs.find("n")->statistics();
    stats.record(nvmekit::block_operation::read, 36864, 178904);
    stats.record(nvmekit::block_operation::read, 512, 1000);
    stats.record(nvmekit::block_operation::write, 4096, 5000);
    stats.record(nvmekit::block_operation::deallocate, 1024, 70);

    EXPECT_EQ(result("bdev_get_iostat", R"({"name": "n"})"), json::parse(R"({
      "tick_rate": 2000000000, "ticks": 123456789,
      "bdevs": [{"name": "n", "bytes_read": 37376, "num_read_ops": 2, "bytes_written": 4096,
                 "num_write_ops": 1, "bytes_unmapped": 1024, "num_unmap_ops": 1, "bytes_copied": 0,
                 "num_copy_ops": 0, "read_latency_ticks": 179904, "max_read_latency_ticks": 178904,
                 "min_read_latency_ticks": 1000, "write_latency_ticks": 5000,
                 "max_write_latency_ticks": 5000, "min_write_latency_ticks": 5000,
                 "unmap_latency_ticks": 70, "max_unmap_latency_ticks": 70, "min_unmap_latency_ticks": 70,
                 "copy_latency_ticks": 0, "max_copy_latency_ticks": 0, "min_copy_latency_ticks": 0,
                 "io_error": {}}]})"));
    const json all = result("bdev_get_iostat");
    ASSERT_EQ(all["bdevs"].size(), 2U);
    EXPECT_EQ(all["bdevs"][1]["name"], "idle");
    EXPECT_EQ(all["bdevs"][1]["min_read_latency_ticks"], 0);
    EXPECT_EQ(error("bdev_get_iostat", R"({"name": "missing"})"),
              json::parse(R"({"code": -19, "message": "No such device"})"));
    EXPECT_EQ(result("bdev_get_iostat", R"({"per_channel": false})")["bdevs"].size(), 2U);
    EXPECT_EQ(error("bdev_get_iostat", R"({"per_channel": true})")["code"], -32602);
}

TEST_F(bdev_methods_fixture, iostat_by_names_and_with_reset_modes)
{
    for (const char* name : {"a", "b", "c"}) {
        result("bdev_null_create",
               R"({"name": ")" + std::string{name} + R"(", "num_blocks": 8, "block_size": 512})");
        bdevs.find(name)->statistics().record(nvmekit::block_operation::write, 512, 40);
    }
    json stats = result("bdev_get_iostat", R"({"names": ["c", "a"]})");
    ASSERT_EQ(stats["bdevs"].size(), 2U);
    EXPECT_EQ(stats["bdevs"][0]["name"], "c");
    EXPECT_EQ(stats["bdevs"][1]["name"], "a");
    EXPECT_EQ(error("bdev_get_iostat", R"({"names": ["a", "missing"]})"),
              json::parse(R"({"code": -19, "message": "No such device"})"));
    EXPECT_EQ(error("bdev_get_iostat", R"({"name": "a", "names": ["b"]})")["code"], -EINVAL);
    EXPECT_EQ(error("bdev_get_iostat", R"({"reset_mode": "some"})")["code"], -32602);

    // maxmin clears the latency bounds once reported, all clears everything.
    stats = result("bdev_get_iostat", R"({"name": "a", "reset_mode": "maxmin"})");
    EXPECT_EQ(stats["bdevs"][0]["max_write_latency_ticks"], 40);
    stats = result("bdev_get_iostat", R"({"name": "a", "reset_mode": "all"})")["bdevs"][0];
    EXPECT_EQ(stats["num_write_ops"], 1);
    EXPECT_EQ(stats["write_latency_ticks"], 40);
    EXPECT_EQ(stats["max_write_latency_ticks"], 0);
    EXPECT_EQ(stats["min_write_latency_ticks"], 0);
    stats = result("bdev_get_iostat", R"({"name": "a", "reset_mode": "none"})")["bdevs"][0];
    EXPECT_EQ(stats["num_write_ops"], 0);
    EXPECT_EQ(stats["bytes_written"], 0);
    EXPECT_EQ(result("bdev_get_iostat", R"({"name": "b"})")["bdevs"][0]["num_write_ops"], 1);

    // error clears only the error counts, which are not kept: the rest stays, as rpc.py's
    // --reset-mode error asks (with the per_channel it always sends).
    stats = result("bdev_get_iostat", R"({"names": ["b"], "per_channel": false, "reset_mode": "error"})");
    EXPECT_EQ(stats["bdevs"][0]["num_write_ops"], 1);
    EXPECT_EQ(stats["bdevs"][0]["io_error"], json::object());
    stats = result("bdev_get_iostat", R"({"name": "b"})")["bdevs"][0];
    EXPECT_EQ(stats["num_write_ops"], 1);
    EXPECT_EQ(stats["max_write_latency_ticks"], 40);
}

TEST_F(bdev_methods_fixture, iostat_counts_what_a_namespace_on_the_bdev_sends_it)
{
    using nvmekit::block_operation;
    result("bdev_malloc_create", R"({"name": "Malloc0", "num_blocks": 16, "block_size": 512})");
    rpc::bdev_backend ns{bdevs.find("Malloc0")};
    std::array<std::byte, 4096> buffer{};
    int failed = 0;
    // A malloc bdev completes inline: the clock moves by `step` at each reading, so each request
    // takes `step` ticks from submission to completion.
    const auto submit = [&](std::uint64_t step, block_operation operation, std::uint64_t offset,
                            std::uint64_t length) {
        test_step = step;
        const bool data = operation == block_operation::read || operation == block_operation::write;
        const nvmekit::io_segment segment{buffer.data(), static_cast<std::size_t>(length)};
        nvmekit::block_request request{.operation = operation,
                                       .offset = offset,
                                       .length = length,
                                       .segments = {&segment, data ? 1U : 0U},
                                       .complete =
                                           [](nvmekit::block_request& done, nvmekit::block_status status) {
                                               *static_cast<int*>(done.context) +=
                                                   status == nvmekit::block_status::success ? 0 : 1;
                                           },
                                       .context = &failed};
        ns.submit(request);
        test_step = 0;
    };
    submit(10, block_operation::write, 0, 4096);
    submit(30, block_operation::write, 4096, 512);
    submit(20, block_operation::read, 512, 4096);
    submit(5, block_operation::deallocate, 1024, 2048);
    submit(7, block_operation::flush, 0, 0);
    submit(7, block_operation::write_zeroes, 0, 512);
    submit(7, block_operation::read, 8192, 512); // out of range
    EXPECT_EQ(failed, 1);

    const json stats = result("bdev_get_iostat", R"({"name": "Malloc0", "reset_mode": "all"})")["bdevs"][0];
    EXPECT_EQ(stats, json::parse(R"({
      "name": "Malloc0", "bytes_read": 4096, "num_read_ops": 1, "bytes_written": 4608,
      "num_write_ops": 2, "bytes_unmapped": 2048, "num_unmap_ops": 1, "bytes_copied": 0,
      "num_copy_ops": 0, "read_latency_ticks": 20, "max_read_latency_ticks": 20,
      "min_read_latency_ticks": 20, "write_latency_ticks": 40, "max_write_latency_ticks": 30,
      "min_write_latency_ticks": 10, "unmap_latency_ticks": 5, "max_unmap_latency_ticks": 5,
      "min_unmap_latency_ticks": 5, "copy_latency_ticks": 0, "max_copy_latency_ticks": 0,
      "min_copy_latency_ticks": 0, "io_error": {}})"));

    const json cleared = result("bdev_get_iostat", R"({"name": "Malloc0"})")["bdevs"][0];
    for (const char* counter : {"num_read_ops", "bytes_written", "num_unmap_ops", "write_latency_ticks",
                                "max_write_latency_ticks", "min_read_latency_ticks"}) {
        EXPECT_EQ(cleared[counter], 0) << counter;
    }
    submit(3, block_operation::read, 0, 512);
    EXPECT_EQ(result("bdev_get_iostat", R"({"name": "Malloc0"})")["bdevs"][0]["max_read_latency_ticks"], 3);
}

TEST_F(bdev_methods_fixture, callable_only_at_run_time)
{
    methods.set_state(rpc::states::startup);
    EXPECT_EQ(error("bdev_get_bdevs")["code"], rpc::error_code::invalid_state);
    EXPECT_EQ(error("bdev_malloc_create", R"({"num_blocks": 8, "block_size": 512})")["code"],
              rpc::error_code::invalid_state);
    const auto names = methods.method_names(true);
    EXPECT_EQ(std::find(names.begin(), names.end(), "bdev_malloc_create"), names.end());
}

/// One request and its response over the Unix socket, as rpc.py talks to the server.
std::optional<json> round_trip(int fd, const std::string& request)
{
    if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(request.size())) {
        return std::nullopt;
    }
    std::string line;
    char c = 0;
    while (true) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 5000) <= 0 || ::recv(fd, &c, 1, 0) != 1) {
            return std::nullopt;
        }
        if (c == '\n') {
            return json::parse(line);
        }
        line += c;
    }
}

TEST_F(bdev_methods_fixture, through_the_unix_socket_server)
{
    rpc::server_options options;
    options.socket_path = directory + "/rpc.sock";
    rpc::server server{methods, options};
    server.start();

    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(fd, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, options.socket_path.c_str(), sizeof address.sun_path - 1);
    ASSERT_EQ(::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address), 0)
        << std::strerror(errno);

    EXPECT_EQ(round_trip(fd, json::parse(R"({"jsonrpc": "2.0", "method": "bdev_malloc_create", "id": 1,
                                           "params": {"num_blocks": 32, "block_size": 512}})")
                                 .dump(2)),
              json::parse(R"({"jsonrpc": "2.0", "id": 1, "result": "Malloc0"})"));
    const auto listed = round_trip(
        fd, R"({"jsonrpc": "2.0", "method": "bdev_get_bdevs", "id": 2, "params": {"name": "Malloc0"}})");
    ASSERT_TRUE(listed);
    EXPECT_EQ((*listed)["result"][0]["num_blocks"], 32);
    EXPECT_EQ(
        round_trip(
            fd, R"({"jsonrpc": "2.0", "method": "bdev_malloc_delete", "id": 3, "params": {"name": "nope"}})"),
        json::parse(R"({"jsonrpc": "2.0", "id": 3, "error": {"code": -19, "message": "No such device"}})"));
    EXPECT_EQ(
        round_trip(
            fd,
            R"({"jsonrpc": "2.0", "method": "bdev_malloc_delete", "id": 4, "params": {"name": "Malloc0"}})"),
        json::parse(R"({"jsonrpc": "2.0", "id": 4, "result": true})"));
    ::close(fd);
    server.stop();
    EXPECT_EQ(bdevs.size(), 0U);
}

} // namespace rpc_bdev_methods_test
} // namespace
