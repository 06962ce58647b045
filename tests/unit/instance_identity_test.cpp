#include <array>
#include <cstdint>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include <nvmekit/backends/any_backend.hpp>
#include <nvmekit/backends/ram_backend.hpp>
#include <nvmekit/storage/instance_identity.hpp>
#include <nvmekit/storage/subsystem.hpp>

namespace {
namespace instance_identity_test {

using nvmekit::derive_instance_identity;

constexpr const char* machine_a = "4c4c4544003810348059b4c04f4e3732";
constexpr const char* machine_b = "0f9d3b3a6e2e4a9c8d7b1f2e3d4c5b6a";

/// The namespace identifiers a subsystem with `nqn` gives its first namespace.
nvmekit::namespace_identifiers first_namespace_of(const std::string& nqn)
{
    nvmekit::subsystem<nvmekit::any_backend> subsystem{{.nqn = nqn}};
    return subsystem.add_namespace(nvmekit::ram_backend{1 << 20}).identifiers();
}

TEST(instance_identity, the_same_inputs_give_the_same_identity)
{
    const auto first = derive_instance_identity("/run/nvmekit/a.sock", machine_a);
    const auto again = derive_instance_identity("/run/nvmekit/a.sock", machine_a);
    EXPECT_EQ(first.nqn, again.nqn);
    EXPECT_EQ(first.serial_number, again.serial_number);
    EXPECT_EQ(first.controller_id, again.controller_id);
    EXPECT_EQ(first_namespace_of(first.nqn).nguid, first_namespace_of(again.nqn).nguid);
    EXPECT_EQ(first_namespace_of(first.nqn).eui64, first_namespace_of(again.nqn).eui64);
}

TEST(instance_identity, the_derivation_is_fixed)
{
    // A restart under a later nvmekit must present the same identity as under this one. The
    // values were computed independently of this code from the documented rule: FNV-1a over
    // machine ID, NUL, instance, NUL from two bases, each finished with SplitMix64's finaliser.
    const auto identity = derive_instance_identity("/run/nvmekit/a.sock", machine_a);
    EXPECT_EQ(identity.nqn, "nqn.2026-11.io.nvmekit:dfc11f50b241cc9d4d7ac577eaac1d11");
    EXPECT_EQ(identity.serial_number, "NVMEKIT-522A77362631");
    EXPECT_EQ(identity.controller_id, 19835);
}

TEST(instance_identity, the_format_is_what_identify_controller_holds)
{
    const auto identity =
        derive_instance_identity("/tmp/nvme.sock", machine_a, "nqn.2026-11.io.nvmekit:serve-", "SRV");
    EXPECT_EQ(identity.nqn.size(), std::string{"nqn.2026-11.io.nvmekit:serve-"}.size() + 32);
    EXPECT_EQ(identity.nqn.rfind("nqn.2026-11.io.nvmekit:serve-", 0), 0U);
    ASSERT_EQ(identity.serial_number.size(), 20U);
    EXPECT_EQ(identity.serial_number.substr(0, 8), "SRV-----");
    EXPECT_GE(identity.controller_id, 0x0001);
    EXPECT_LE(identity.controller_id, 0xffef);
}

TEST(instance_identity, different_socket_paths_give_different_identities)
{
    std::set<std::string> nqns;
    std::set<std::string> serials;
    std::set<std::uint16_t> controller_ids;
    std::set<std::array<std::uint8_t, 16>> nguids;
    std::set<std::array<std::uint8_t, 8>> eui64s;
    constexpr int instances = 64;
    for (int i = 0; i < instances; ++i) {
        const auto identity = derive_instance_identity("/tmp/nvme" + std::to_string(i) + ".sock", machine_a);
        nqns.insert(identity.nqn);
        serials.insert(identity.serial_number);
        controller_ids.insert(identity.controller_id);
        const auto ns = first_namespace_of(identity.nqn);
        nguids.insert(ns.nguid);
        eui64s.insert(ns.eui64);
    }
    EXPECT_EQ(nqns.size(), instances);
    EXPECT_EQ(serials.size(), instances);
    EXPECT_EQ(controller_ids.size(), instances);
    EXPECT_EQ(nguids.size(), instances);
    EXPECT_EQ(eui64s.size(), instances);
}

TEST(instance_identity, two_sockets_as_the_end_to_end_test_starts_them_differ)
{
    const auto a = derive_instance_identity("/tmp/nvmekit-e2e.x/pair/a.sock", machine_a);
    const auto b = derive_instance_identity("/tmp/nvmekit-e2e.x/pair/b.sock", machine_a);
    EXPECT_NE(a.nqn, b.nqn);
    EXPECT_NE(a.serial_number, b.serial_number);
    EXPECT_NE(a.controller_id, b.controller_id);
    EXPECT_NE(first_namespace_of(a.nqn).nguid, first_namespace_of(b.nqn).nguid);
    EXPECT_NE(first_namespace_of(a.nqn).eui64, first_namespace_of(b.nqn).eui64);
}

TEST(instance_identity, the_same_socket_path_on_another_machine_differs)
{
    const auto a = derive_instance_identity("/tmp/nvme.sock", machine_a);
    const auto b = derive_instance_identity("/tmp/nvme.sock", machine_b);
    EXPECT_NE(a.nqn, b.nqn);
    EXPECT_NE(a.serial_number, b.serial_number);
}

TEST(instance_identity, the_boundary_between_the_inputs_counts)
{
    EXPECT_NE(derive_instance_identity("b/c", "a").nqn, derive_instance_identity("/c", "ab").nqn);
}

} // namespace instance_identity_test
} // namespace
