#include <nvmekit/rpc/nvmf_registry.hpp>

#include <atomic>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include <nvmekit/backends/null_backend.hpp>

namespace {
namespace rpc_nvmf_registry_test {

namespace rpc = nvmekit::rpc;

constexpr const char* cnode1 = "nqn.2016-06.io.spdk:cnode1";

std::shared_ptr<rpc::bdev> null_bdev(rpc::bdev_registry& bdevs, const std::string& name)
{
    return bdevs.add(
        {.name = name, .product_name = "Null disk", .module = "null", .block_size = 512, .num_blocks = 8},
        nvmekit::null_backend{512 * 8});
}

/// The code of the rpc::exception `f` throws (0 when it throws none).
template <typename F>
int refusal(F&& f)
{
    try {
        f();
    } catch (const rpc::exception& e) {
        return e.error().code;
    }
    return 0;
}

TEST(nvmf_registry, builds_a_target_without_the_methods)
{
    rpc::bdev_registry bdevs;
    rpc::nvmf_registry target;
    target.add_transport(rpc::default_transport("VFIOUSER"));
    EXPECT_EQ(target.transport("VFIOUSER")->max_queue_depth, 256U);
    EXPECT_EQ(target.transport("TCP"), std::nullopt);
    target.add_subsystem({.nqn = cnode1, .max_namespaces = 0, .allow_any_host = true});
    EXPECT_EQ(target.subsystem(cnode1)->max_namespaces, 32U);

    const auto disk = null_bdev(bdevs, "n0");
    const rpc::nvmf_namespace added = target.add_namespace(cnode1, {.device = disk});
    EXPECT_EQ(added.nsid, 1U);
    EXPECT_EQ(added.uuid, disk->uuid());
    EXPECT_EQ(added.nguid, disk->uuid());
    EXPECT_EQ(disk->claim_owner(), cnode1);

    const rpc::nvmf_listen_address address{.trtype = "VFIOUSER", .traddr = "/run/vm0"};
    target.add_listener(cnode1, address);
    EXPECT_EQ(rpc::nvmf_registry::describe(address), "VFIOUSER /run/vm0");
    EXPECT_EQ(target.subsystem(cnode1)->listeners, std::vector{address});

    const rpc::nvmf_subsystem removed = target.remove_subsystem(cnode1);
    EXPECT_EQ(removed.namespaces.size(), 1U);
    EXPECT_FALSE(disk->claimed());
    EXPECT_TRUE(target.subsystems().empty());
}

TEST(nvmf_registry, refusals_throw_spdks_codes)
{
    rpc::bdev_registry bdevs;
    rpc::nvmf_registry target;
    target.add_subsystem({.nqn = cnode1});
    EXPECT_EQ(refusal([&] { target.add_subsystem({.nqn = cnode1}); }), rpc::error_code::internal_error);
    EXPECT_EQ(refusal([&] { target.add_subsystem({.nqn = "nqn."}); }), rpc::error_code::invalid_params);
    EXPECT_EQ(refusal([&] { target.add_namespace(cnode1, {}); }), rpc::error_code::invalid_params);
    EXPECT_EQ(refusal([&] { target.remove_subsystem("nqn.x:y"); }), rpc::error_code::invalid_params);
    EXPECT_EQ(refusal([&] { target.add_listener(cnode1, {.trtype = "TCP", .traddr = "::1"}); }),
              rpc::error_code::invalid_params);
    target.add_transport(rpc::default_transport("TCP"));
    EXPECT_EQ(refusal([&] { target.add_transport(rpc::default_transport("TCP")); }),
              rpc::error_code::invalid_params);

    // A full subsystem has no NSID to give.
    rpc::nvmf_registry small;
    small.add_subsystem({.nqn = cnode1, .max_namespaces = 1});
    small.add_namespace(cnode1, {.device = null_bdev(bdevs, "a")});
    const auto b = null_bdev(bdevs, "b");
    EXPECT_EQ(refusal([&] { small.add_namespace(cnode1, {.device = b}); }), rpc::error_code::invalid_params);
    EXPECT_FALSE(b->claimed());
}

TEST(nvmf_registry, readers_take_snapshots_while_a_writer_changes_it)
{
    rpc::bdev_registry bdevs;
    rpc::nvmf_registry target;
    std::atomic<bool> done{false};
    std::thread reader{[&] {
        while (!done.load()) {
            for (const auto& s : target.subsystems()) {
                EXPECT_LE(s.namespaces.size(), 1U);
            }
        }
    }};
    const auto disk = null_bdev(bdevs, "n");
    for (int i = 0; i < 200; ++i) {
        const std::string nqn = "nqn.2016-06.io.spdk:c" + std::to_string(i);
        target.add_subsystem({.nqn = nqn});
        target.add_namespace(nqn, {.device = disk});
        target.remove_subsystem(nqn);
    }
    done = true;
    reader.join();
    EXPECT_FALSE(disk->claimed());
}

} // namespace rpc_nvmf_registry_test
} // namespace
