// Namespace Management, Namespace Attachment, the allocated-namespace and controller-list Identify
// structures and Get LBA Status, replayed as nvme-cli sends them (create-ns, delete-ns,
// attach-ns, detach-ns, list-ns --all, list-ctrl, get-lba-status, lba-status-log, format).
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <vector>

#include <gtest/gtest.h>

#include <nvmekit/backends/null_backend.hpp>
#include <nvmekit/backends/ram_backend.hpp>
#include <nvmekit/command_sets/admin.hpp>

#include "controller_fixture.hpp"

namespace {
namespace command_sets_admin_namespaces_test {

namespace spec = nvmekit::spec;
using namespace nvmekit_test;

constexpr std::uint32_t all_namespaces = 0xffffffffU;
constexpr std::uint64_t pool_bytes = std::uint64_t{1} << 20;

/// `T` from the first bytes of `bytes`.
template <typename T>
[[nodiscard]] T load(std::span<const std::byte> bytes, std::size_t offset = 0)
{
    T value{};
    EXPECT_GE(bytes.size(), offset + sizeof(T));
    std::memcpy(&value, bytes.data() + offset, std::min(bytes.size() - offset, sizeof(T)));
    return value;
}

/// A `Rig` whose subsystem has a 1 MiB capacity pool and one 64 KiB RAM namespace (NSID 1), so
/// that namespaces the host creates get sparse RAM backends.
template <typename Rig>
struct pool_rig : Rig {
    pool_rig() : Rig{{}, memory_size, memory_base, {}, {.nvm_capacity_bytes = pool_bytes}}
    {
        this->subsystem.add_namespace(nvmekit::ram_backend{64 * 1024});
        this->host.bring_up();
    }
};

/// Namespace Management create as nvme-cli's create-ns sends it: SEL 0, CSI in CDW11, the host's
/// Identify Namespace structure (4 KiB) in the data buffer; the new NSID comes back in DW0.
template <typename Rig>
nvmekit::testing::completion
create_namespace(Rig& r, std::uint64_t nsze, std::uint64_t ncap, std::uint8_t flbas, std::uint8_t nmic = 0,
                 std::uint8_t dps = 0, spec::command_set_identifier csi = spec::command_set_identifier::nvm)
{
    spec::identify_namespace data{};
    data.nsze = nsze;
    data.ncap = ncap;
    data.flbas = spec::formatted_lba_size{flbas};
    data.nmic = spec::namespace_multipath_caps{nmic};
    data.dps = spec::protection_settings{dps};
    const std::uint64_t buffer = r.host.allocate(sizeof(data));
    r.memory.store(buffer, data);
    auto sqe = host_type::command(spec::admin_opcode::namespace_management, 0);
    spec::namespace_management_view{.select = spec::namespace_management_select::create,
                                    .command_set_id = csi}
        .encode(sqe);
    r.host.describe_data(sqe, buffer, sizeof(data));
    const auto result = r.host.admin(sqe);
    r.host.release(buffer);
    return result;
}

/// Namespace Management delete (delete-ns): SEL 1, no data.
template <typename Rig>
nvmekit::testing::completion delete_namespace(Rig& r, std::uint32_t nsid)
{
    auto sqe = host_type::command(spec::admin_opcode::namespace_management, nsid);
    spec::namespace_management_view{.select = spec::namespace_management_select::remove}.encode(sqe);
    return r.host.admin(sqe);
}

/// Namespace Attachment (attach-ns / detach-ns -c ids): the controller list in a 4 KiB buffer.
template <typename Rig>
nvmekit::testing::completion attachment(Rig& r, std::uint32_t nsid, spec::namespace_attachment_select select,
                                        std::vector<std::uint16_t> ids)
{
    spec::controller_list list{};
    for (const auto id : ids) {
        list.push_back(id);
    }
    const std::uint64_t buffer = r.host.allocate(sizeof(list));
    r.memory.store(buffer, list);
    auto sqe = host_type::command(spec::admin_opcode::namespace_attachment, nsid);
    spec::namespace_attachment_view{.select = select}.encode(sqe);
    r.host.describe_data(sqe, buffer, sizeof(list));
    const auto result = r.host.admin(sqe);
    r.host.release(buffer);
    return result;
}

template <typename Rig>
nvmekit::testing::completion identify(Rig& r, spec::cns cns, std::uint32_t nsid, std::vector<std::byte>& out,
                                      std::uint16_t cntid = 0)
{
    auto sqe = host_type::command(spec::admin_opcode::identify, nsid);
    spec::identify_view{.cns = cns, .controller_id = cntid}.encode(sqe);
    return r.host.admin_read(sqe, spec::identify_data_size, out);
}

template <typename Rig>
[[nodiscard]] spec::identify_controller identify_pool_controller(Rig& r)
{
    std::vector<std::byte> out;
    EXPECT_TRUE(identify(r, spec::cns::identify_controller, 0, out).ok());
    return load<spec::identify_controller>(out);
}

template <typename Rig>
[[nodiscard]] std::vector<std::uint32_t> nsid_list(Rig& r, spec::cns cns, std::uint32_t nsid = 0)
{
    std::vector<std::byte> out;
    EXPECT_TRUE(identify(r, cns, nsid, out).ok());
    const auto list = load<spec::namespace_id_list>(out);
    return {list.nsids.begin(), list.nsids.begin() + static_cast<std::ptrdiff_t>(list.size())};
}

template <typename Rig>
[[nodiscard]] std::vector<std::uint16_t> controller_ids(Rig& r, spec::cns cns, std::uint32_t nsid,
                                                        std::uint16_t cntid = 0)
{
    std::vector<std::byte> out;
    EXPECT_TRUE(identify(r, cns, nsid, out, cntid).ok());
    const auto list = load<spec::controller_list>(out);
    return {list.identifiers().begin(), list.identifiers().end()};
}

// ---- suites over both transports ---------------------------------------------------------------

// Namespace Management, Attachment and Get LBA Status run over PCIe and over the loopback transport.
NVMEKIT_TEST_SUITE_OVER_TRANSPORTS(admin_namespace_management);
NVMEKIT_TEST_SUITE_OVER_TRANSPORTS(admin_get_lba_status);
// What Identify Namespace reports of metadata (MC) and which formats create-ns takes, over PCIe,
// the loopback transport and the loopback transport with a fabrics identity.
NVMEKIT_TEST_SUITE_OVER_LOCAL_AND_FABRIC(admin_namespace_metadata);

// ---- capacity and Identify Controller -------------------------------------------------------------

TYPED_TEST(admin_namespace_management, identify_controller_reports_the_pool_and_oacs_bit_3)
{
    pool_rig<TypeParam> r;
    const auto data = identify_pool_controller(r);
    EXPECT_TRUE(data.oacs.get(spec::admin_command_support::namespace_management));
    EXPECT_TRUE(data.oacs.get(spec::admin_command_support::get_lba_status));
    EXPECT_EQ(data.tnvmcap.low(), pool_bytes);
    EXPECT_EQ(data.tnvmcap.high(), 0U);
    EXPECT_EQ(data.unvmcap.low(), pool_bytes - 64 * 1024);
}

TYPED_TEST(admin_namespace_management, effects_log_lists_management_attachment_and_get_lba_status)
{
    pool_rig<TypeParam> r;
    std::vector<std::byte> out;
    ASSERT_TRUE(r.host.get_log_page(spec::log_page_id::commands_supported_and_effects, 4096, out).ok());
    const auto effects = load<spec::commands_supported_and_effects>(out);
    const auto inventory =
        spec::command_effects{}
            .with(spec::command_effects::csupp, true)
            .with(spec::command_effects::ncc, true)
            .with(spec::command_effects::nic, true)
            .with(spec::command_effects::cse, spec::command_submission_execution::any_namespace_exclusive);
    EXPECT_EQ(effects.admin_commands[0x0d], inventory);
    EXPECT_EQ(effects.admin_commands[0x15], inventory);
    EXPECT_EQ(effects.admin_commands[0x86], spec::command_effects{}.with(spec::command_effects::csupp, true));
}

// ---- create-ns / delete-ns ---------------------------------------------------------------------------

TYPED_TEST(admin_namespace_management, create_returns_the_nsid_and_takes_capacity_from_the_pool)
{
    pool_rig<TypeParam> r;
    // nvme create-ns /dev/nvme0 --nsze=128 --ncap=128 --flbas=2 (4 KiB blocks)
    const auto created = create_namespace(r, 128, 128, 2);
    ASSERT_EQ(created.status(), spec::status::success());
    EXPECT_EQ(created.cqe.dw0, 2U);
    EXPECT_EQ(identify_pool_controller(r).unvmcap.low(), pool_bytes - 64 * 1024 - 128 * 4096);
    // Allocated but not attached: in list-ns --all (CNS 10h), not in the active list (CNS 02h).
    EXPECT_EQ(nsid_list(r, spec::cns::allocated_namespace_list), (std::vector<std::uint32_t>{1, 2}));
    EXPECT_EQ(nsid_list(r, spec::cns::allocated_namespace_list, 1), (std::vector<std::uint32_t>{2}));
    EXPECT_EQ(nsid_list(r, spec::cns::active_namespace_list), (std::vector<std::uint32_t>{1}));
    std::vector<std::byte> out;
    ASSERT_TRUE(identify(r, spec::cns::identify_namespace, 2, out).ok());
    EXPECT_TRUE(std::all_of(out.begin(), out.end(), [](std::byte b) { return b == std::byte{0}; }));
    ASSERT_TRUE(identify(r, spec::cns::allocated_namespace, 2, out).ok());
    const auto ns = load<spec::identify_namespace>(out);
    EXPECT_EQ(ns.nsze, 128U);
    EXPECT_EQ(ns.ncap, 128U);
    EXPECT_EQ(ns.flbas.format_index(), 2U);
    EXPECT_EQ(ns.nvm_capacity(), 128U * 4096U);
    EXPECT_FALSE(ns.nmic.get(spec::namespace_multipath_caps::shared));
    // CNS 11h of an unallocated NSID is zero-filled; of NSID 0 or FFFFFFFFh invalid.
    ASSERT_TRUE(identify(r, spec::cns::allocated_namespace, 7, out).ok());
    EXPECT_TRUE(std::all_of(out.begin(), out.end(), [](std::byte b) { return b == std::byte{0}; }));
    EXPECT_EQ(identify(r, spec::cns::allocated_namespace, 0, out).status(),
              dnr(spec::generic_status::invalid_namespace_or_format));
    EXPECT_EQ(identify(r, spec::cns::allocated_namespace_list, 0xfffffffeU, out).status(),
              dnr(spec::generic_status::invalid_namespace_or_format));
}

TYPED_TEST(admin_namespace_management, identify_namespace_of_all_nsids_lists_the_formats_to_create_with)
{
    pool_rig<TypeParam> r;
    std::vector<std::byte> out;
    ASSERT_TRUE(identify(r, spec::cns::identify_namespace, all_namespaces, out).ok());
    const auto common = load<spec::identify_namespace>(out);
    EXPECT_EQ(common.nsze, 0U);
    EXPECT_EQ(common.nlbaf, 3U);
    EXPECT_EQ(common.lbaf[2].data_size(), 4096U);
    EXPECT_EQ(common.lbaf[3].get(spec::lba_format::ms), 64U);
    EXPECT_TRUE(common.nmic.get(spec::namespace_multipath_caps::shared));
}

TYPED_TEST(admin_namespace_management, create_refuses_what_the_spec_names)
{
    pool_rig<TypeParam> r;
    EXPECT_EQ(create_namespace(r, 0, 0, 0).status(), dnr(spec::generic_status::invalid_field));
    EXPECT_EQ(create_namespace(r, 8, 16, 0).status(), dnr(spec::generic_status::invalid_field));
    EXPECT_EQ(create_namespace(r, 16, 8, 0).status(),
              dnr(spec::command_specific_status::thin_provisioning_not_supported));
    EXPECT_EQ(create_namespace(r, 8, 8, 4).status(), dnr(spec::command_specific_status::invalid_format));
    EXPECT_EQ(create_namespace(r, 8, 8, 0, 0, 1).status(),
              dnr(spec::command_specific_status::invalid_format));
    EXPECT_EQ(create_namespace(r, 8, 8, 0, 0, 0, spec::command_set_identifier::zoned).status(),
              dnr(spec::command_specific_status::io_command_set_not_supported));
    // 1 MiB - 64 KiB left: 241 blocks of 4 KiB are one too many.
    EXPECT_EQ(create_namespace(r, 241, 241, 2).status(),
              dnr(spec::command_specific_status::namespace_insufficient_capacity));
    const auto exact = create_namespace(r, 240, 240, 2);
    ASSERT_TRUE(exact.ok());
    EXPECT_EQ(identify_pool_controller(r).unvmcap.low(), 0U);
    EXPECT_EQ(create_namespace(r, 1, 1, 0).status(),
              dnr(spec::command_specific_status::namespace_insufficient_capacity));
    // Nothing was allocated by the refused commands.
    EXPECT_EQ(nsid_list(r, spec::cns::allocated_namespace_list), (std::vector<std::uint32_t>{1, 2}));
}

TYPED_TEST(admin_namespace_management, no_free_nsid_is_namespace_identifier_unavailable)
{
    TypeParam r{{}, memory_size, memory_base, {}, {.max_namespaces = 2, .nvm_capacity_bytes = pool_bytes}};
    r.subsystem.add_namespace(nvmekit::ram_backend{4096});
    r.host.bring_up();
    ASSERT_EQ(create_namespace(r, 8, 8, 0).cqe.dw0, 2U);
    EXPECT_EQ(create_namespace(r, 8, 8, 0).status(),
              dnr(spec::command_specific_status::namespace_identifier_unavailable));
}

TYPED_TEST(admin_namespace_management, without_a_backend_factory_creation_finds_no_capacity)
{
    // A subsystem of null backends has no default factory.
    TypeParam r{{}, memory_size, memory_base, {}, {.nvm_capacity_bytes = pool_bytes}};
    r.subsystem.add_namespace(nvmekit::null_backend{4096});
    r.host.bring_up();
    EXPECT_EQ(create_namespace(r, 8, 8, 0).status(),
              dnr(spec::command_specific_status::namespace_insufficient_capacity));
    std::vector<std::uint64_t> asked;
    r.subsystem.set_backend_factory([&](std::uint64_t bytes) {
        asked.push_back(bytes);
        return std::optional<nvmekit::any_backend>{std::in_place, nvmekit::null_backend{bytes}};
    });
    EXPECT_EQ(create_namespace(r, 8, 8, 1).cqe.dw0, 2U);
    EXPECT_EQ(asked, std::vector<std::uint64_t>{8U * (512U + 8U)});
}

TYPED_TEST(admin_namespace_management, delete_returns_capacity_and_detaches_with_an_event)
{
    pool_rig<TypeParam> r;
    ASSERT_EQ(create_namespace(r, 16, 16, 0, 1).cqe.dw0, 2U);
    ASSERT_TRUE(attachment(r, 2, spec::namespace_attachment_select::attach, {r.ctrl.controller_id()}).ok());
    EXPECT_EQ(nsid_list(r, spec::cns::active_namespace_list), (std::vector<std::uint32_t>{1, 2}));
    std::vector<std::byte> out;
    ASSERT_TRUE(r.host.get_log_page(spec::log_page_id::changed_namespace_list, 4096, out).ok());
    // nvme delete-ns /dev/nvme0 -n 2
    ASSERT_EQ(delete_namespace(r, 2).status(), spec::status::success());
    EXPECT_EQ(identify_pool_controller(r).unvmcap.low(), pool_bytes - 64 * 1024);
    EXPECT_EQ(nsid_list(r, spec::cns::active_namespace_list), (std::vector<std::uint32_t>{1}));
    EXPECT_EQ(nsid_list(r, spec::cns::allocated_namespace_list), (std::vector<std::uint32_t>{1}));
    ASSERT_TRUE(r.host.get_log_page(spec::log_page_id::changed_namespace_list, 4096, out).ok());
    EXPECT_EQ(load<std::uint32_t>(out), 2U);
    EXPECT_EQ(load<std::uint32_t>(out, 4), 0U);
    // Deleting it again, or NSID 0, is refused.
    EXPECT_EQ(delete_namespace(r, 2).status(), dnr(spec::generic_status::invalid_field));
    EXPECT_EQ(delete_namespace(r, 0).status(), dnr(spec::generic_status::invalid_namespace_or_format));
    // NSID FFFFFFFFh deletes every namespace, the embedder's included: the whole pool is free.
    ASSERT_TRUE(create_namespace(r, 8, 8, 0).ok());
    ASSERT_EQ(delete_namespace(r, all_namespaces).status(), spec::status::success());
    EXPECT_TRUE(nsid_list(r, spec::cns::allocated_namespace_list).empty());
    EXPECT_EQ(identify_pool_controller(r).unvmcap.low(), pool_bytes);
}

// ---- attach-ns / detach-ns / list-ctrl -------------------------------------------------------------

TYPED_TEST(admin_namespace_management, attach_raises_namespace_attribute_changed_and_fills_the_list)
{
    pool_rig<TypeParam> r;
    const auto id = r.ctrl.controller_id();
    ASSERT_EQ(create_namespace(r, 32, 32, 0, 1).cqe.dw0, 2U);
    std::vector<std::byte> out;
    ASSERT_TRUE(r.host.get_log_page(spec::log_page_id::changed_namespace_list, 4096, out).ok());
    ASSERT_TRUE(
        r.host.admin(host_type::set_features_command(spec::feature_id::async_event_configuration, 1U << 8))
            .ok());
    const auto cid = *r.host.async_event_request_cid();
    // nvme attach-ns /dev/nvme0 -n 2 -c <cntlid>
    ASSERT_EQ(attachment(r, 2, spec::namespace_attachment_select::attach, {id}).status(),
              spec::status::success());
    EXPECT_EQ(r.async_event(cid), 0x0004'0002U); // Notice, Namespace Attribute Changed, log 04h
    ASSERT_TRUE(r.host.get_log_page(spec::log_page_id::changed_namespace_list, 4096, out).ok());
    EXPECT_EQ(load<std::uint32_t>(out), 2U);
    EXPECT_EQ(load<std::uint32_t>(out, 4), 0U);
    // nvme list-ctrl /dev/nvme0 -n 2 (CNS 12h) and without -n (CNS 13h)
    EXPECT_EQ(controller_ids(r, spec::cns::namespace_controller_list, 2), std::vector<std::uint16_t>{id});
    EXPECT_EQ(controller_ids(r, spec::cns::controller_list, 0), std::vector<std::uint16_t>{id});
    EXPECT_TRUE(controller_ids(r, spec::cns::controller_list, 0, static_cast<std::uint16_t>(id + 1)).empty());
    EXPECT_TRUE(controller_ids(r, spec::cns::namespace_controller_list, 9).empty());
    EXPECT_EQ(identify(r, spec::cns::namespace_controller_list, 0, out).status(),
              dnr(spec::generic_status::invalid_namespace_or_format));
    // Attached twice, detached twice.
    EXPECT_EQ(attachment(r, 2, spec::namespace_attachment_select::attach, {id}).status(),
              dnr(spec::command_specific_status::namespace_already_attached));
    ASSERT_TRUE(attachment(r, 2, spec::namespace_attachment_select::detach, {id}).ok());
    EXPECT_EQ(attachment(r, 2, spec::namespace_attachment_select::detach, {id}).status(),
              dnr(spec::command_specific_status::namespace_not_attached));
    EXPECT_TRUE(controller_ids(r, spec::cns::namespace_controller_list, 2).empty());
}

TYPED_TEST(admin_namespace_management, a_private_namespace_attaches_to_one_controller)
{
    pool_rig<TypeParam> r;
    nvmekit::testing::recording_msix msix;
    const auto second = r.make_peer(msix);
    const auto first_id = r.ctrl.controller_id();
    const auto second_id = second->controller_id();
    EXPECT_EQ(controller_ids(r, spec::cns::controller_list, 0),
              (std::vector<std::uint16_t>{first_id, second_id}));
    ASSERT_EQ(create_namespace(r, 8, 8, 0, 0).cqe.dw0, 2U); // NMIC 0: private
    EXPECT_EQ(attachment(r, 2, spec::namespace_attachment_select::attach, {first_id, second_id}).status(),
              dnr(spec::command_specific_status::namespace_is_private));
    ASSERT_TRUE(attachment(r, 2, spec::namespace_attachment_select::attach, {second_id}).ok());
    EXPECT_EQ(attachment(r, 2, spec::namespace_attachment_select::attach, {first_id}).status(),
              dnr(spec::command_specific_status::namespace_is_private));
    ASSERT_EQ(create_namespace(r, 8, 8, 0, 1).cqe.dw0, 3U); // shared
    ASSERT_TRUE(attachment(r, 3, spec::namespace_attachment_select::attach, {first_id, second_id}).ok());
    EXPECT_EQ(controller_ids(r, spec::cns::namespace_controller_list, 3),
              (std::vector<std::uint16_t>{first_id, second_id}));
}

// ---- metadata placements (MC) --------------------------------------------------------------------------

/// MC of the Identify Namespace structure `cns` returns for `nsid`.
template <typename Rig>
[[nodiscard]] std::uint8_t reported_mc(Rig& r, spec::cns cns, std::uint32_t nsid)
{
    std::vector<std::byte> out;
    EXPECT_TRUE(identify(r, cns, nsid, out).ok());
    return load<spec::identify_namespace>(out).mc.raw;
}

// MC bit 0 (extended LBA) everywhere, bit 1 (separate buffer) only where MPTR exists: not over a
// fabric. The same in every structure that reports it: Identify Namespace of an active NSID and
// of all NSIDs (CNS 00h), and of an allocated NSID (CNS 11h).
TYPED_TEST(admin_namespace_metadata, identify_namespace_reports_the_placements_the_transport_carries)
{
    pool_rig<TypeParam> r;
    const std::uint8_t expected = over_a_fabric<TypeParam> ? 0x1U : 0x3U;
    EXPECT_EQ(reported_mc(r, spec::cns::identify_namespace, 1), expected);
    EXPECT_EQ(reported_mc(r, spec::cns::identify_namespace, all_namespaces), expected);
    EXPECT_EQ(reported_mc(r, spec::cns::allocated_namespace, 1), expected);
    ASSERT_EQ(create_namespace(r, 16, 16, 0x11).status(), spec::status::success());
    EXPECT_EQ(reported_mc(r, spec::cns::allocated_namespace, 2), expected);
}

// nvme create-ns --flbas: a format with metadata needs its placement in MC (FLBAS bit 4 set for
// an extended LBA, clear for a separate buffer); over a fabric only the extended LBA is taken.
// A format without metadata has nothing to place: bit 4 does not matter and reads back 0.
TYPED_TEST(admin_namespace_metadata, create_takes_the_metadata_placements_mc_reports)
{
    pool_rig<TypeParam> r;
    const auto invalid_format = dnr(spec::command_specific_status::invalid_format);
    struct request {
        std::uint8_t flbas;
        bool separate_metadata;
    };
    for (const auto [flbas, separate_metadata] :
         {request{0x01, true}, request{0x03, true}, request{0x11, false}, request{0x13, false},
          request{0x10, false}, request{0x02, false}}) {
        SCOPED_TRACE(::testing::Message() << "FLBAS " << static_cast<int>(flbas));
        const auto created = create_namespace(r, 16, 16, flbas);
        if (separate_metadata && over_a_fabric<TypeParam>) {
            EXPECT_EQ(created.status(), invalid_format);
            continue;
        }
        ASSERT_EQ(created.status(), spec::status::success());
        std::vector<std::byte> out;
        ASSERT_TRUE(identify(r, spec::cns::allocated_namespace, created.cqe.dw0, out).ok());
        const auto ns = load<spec::identify_namespace>(out);
        const auto& format = nvmekit::supported_lba_formats[flbas & 0xfU];
        EXPECT_EQ(ns.flbas.raw, format.metadata_bytes != 0 ? flbas : (flbas & 0xfU));
        EXPECT_EQ(ns.nsze, 16U);
        EXPECT_EQ(ns.nvm_capacity(), 16U * (format.data_bytes + format.metadata_bytes));
    }
    // Only the namespaces created are allocated.
    EXPECT_EQ(nsid_list(r, spec::cns::allocated_namespace_list),
              over_a_fabric<TypeParam> ? (std::vector<std::uint32_t>{1, 2, 3, 4, 5})
                                       : (std::vector<std::uint32_t>{1, 2, 3, 4, 5, 6, 7}));
}

// ---- format after re-creating ---------------------------------------------------------------------------

TYPED_TEST(admin_namespace_management, format_runs_on_a_recreated_namespace)
{
    pool_rig<TypeParam> r;
    const auto id = r.ctrl.controller_id();
    ASSERT_EQ(create_namespace(r, 64, 64, 0, 1).cqe.dw0, 2U);
    ASSERT_TRUE(attachment(r, 2, spec::namespace_attachment_select::attach, {id}).ok());
    ASSERT_TRUE(attachment(r, 2, spec::namespace_attachment_select::detach, {id}).ok());
    ASSERT_TRUE(delete_namespace(r, 2).ok());
    ASSERT_EQ(create_namespace(r, 64, 64, 0, 1).cqe.dw0, 2U);
    ASSERT_TRUE(attachment(r, 2, spec::namespace_attachment_select::attach, {id}).ok());
    // nvme format /dev/nvme0n2 --lbaf=1 --ms=1 (512 + 8, metadata in the extended LBA)
    auto format = host_type::command(spec::admin_opcode::format_nvm, 2);
    spec::format_nvm_view{.format_index = 1, .metadata_in_extended_lba = true}.encode(format);
    ASSERT_EQ(r.host.admin(format).status(), spec::status::success());
    std::vector<std::byte> out;
    ASSERT_TRUE(identify(r, spec::cns::identify_namespace, 2, out).ok());
    const auto ns = load<spec::identify_namespace>(out);
    EXPECT_EQ(ns.flbas.format_index(), 1U);
    EXPECT_TRUE(ns.flbas.get(spec::formatted_lba_size::extended_metadata));
    EXPECT_EQ(ns.nsze, 64U * 512U / 520U);
    EXPECT_EQ(ns.nvm_capacity(), 64U * 512U);
}

// ---- Get LBA Status and the LBA Status Information log ----------------------------------------------------

template <typename Rig>
nvmekit::testing::completion get_lba_status(Rig& r, std::uint32_t nsid, spec::get_lba_status_view view,
                                            std::vector<std::byte>& out)
{
    auto sqe = host_type::command(spec::admin_opcode::get_lba_status, nsid);
    view.encode(sqe);
    return r.host.admin_read(sqe, static_cast<std::size_t>(view.byte_count()), out);
}

template <typename Rig>
void write_uncorrectable(Rig& r, std::uint32_t nsid, std::uint64_t slba, std::uint32_t blocks)
{
    auto sqe = host_type::command(spec::nvm_opcode::write_uncorrectable, nsid);
    spec::write_uncorrectable_view{.starting_lba = slba, .block_count = blocks}.encode(sqe);
    ASSERT_TRUE(r.host.io(1, sqe).ok());
}

TYPED_TEST(admin_get_lba_status, reports_write_uncorrectable_ranges_as_unrecoverable)
{
    pool_rig<TypeParam> r;
    write_uncorrectable(r, 1, 8, 4);
    write_uncorrectable(r, 1, 100, 2);
    std::vector<std::byte> out;
    // nvme get-lba-status /dev/nvme0 -n 1 --start-lba=0 --max-dw=11 --action=0x11 --range-len=0
    const auto view = spec::get_lba_status_view{
        .starting_lba = 0, .dword_count = 12, .range_length = 0, .action = spec::lba_status_action::tracked};
    ASSERT_EQ(get_lba_status(r, 1, view, out).status(), spec::status::success());
    auto header = load<spec::lba_status_list_header>(out);
    EXPECT_EQ(header.nlsd, 2U);
    EXPECT_EQ(header.cmpc, spec::lba_status_completion::complete);
    auto first = load<spec::lba_status_descriptor>(out, 8);
    EXPECT_EQ(first.dslba, 8U);
    EXPECT_EQ(first.nlb, 4U);
    EXPECT_EQ(first.status, spec::lba_range_status::unrecoverable);
    auto second = load<spec::lba_status_descriptor>(out, 24);
    EXPECT_EQ(second.dslba, 100U);
    EXPECT_EQ(second.nlb, 2U);
    // A range from LBA 10 of 91 blocks: the tail of the first range and the first block of the second.
    ASSERT_TRUE(get_lba_status(r, 1,
                               {.starting_lba = 10,
                                .dword_count = 12,
                                .range_length = 91,
                                .action = spec::lba_status_action::scan_untracked},
                               out)
                    .ok());
    header = load<spec::lba_status_list_header>(out);
    EXPECT_EQ(header.nlsd, 2U);
    EXPECT_EQ(load<spec::lba_status_descriptor>(out, 8).dslba, 10U);
    EXPECT_EQ(load<spec::lba_status_descriptor>(out, 8).nlb, 2U);
    EXPECT_EQ(load<spec::lba_status_descriptor>(out, 24).dslba, 100U);
    EXPECT_EQ(load<spec::lba_status_descriptor>(out, 24).nlb, 1U);
    // Room for one descriptor (6 dwords): incomplete.
    ASSERT_TRUE(
        get_lba_status(r, 1, {.dword_count = 6, .action = spec::lba_status_action::tracked}, out).ok());
    header = load<spec::lba_status_list_header>(out);
    EXPECT_EQ(header.nlsd, 1U);
    EXPECT_EQ(header.cmpc, spec::lba_status_completion::incomplete);
    // Rewriting the blocks clears them (Write Zeroes over LBA 8-11).
    auto zeroes = host_type::command(spec::nvm_opcode::write_zeroes, 1);
    spec::write_zeroes_view{.starting_lba = 8, .block_count = 4}.encode(zeroes);
    ASSERT_TRUE(r.host.io(1, zeroes).ok());
    ASSERT_TRUE(get_lba_status(r, 1, view, out).ok());
    EXPECT_EQ(load<spec::lba_status_list_header>(out).nlsd, 1U);
    EXPECT_EQ(load<spec::lba_status_descriptor>(out, 8).dslba, 100U);
}

TYPED_TEST(admin_get_lba_status, refuses_what_the_spec_names)
{
    pool_rig<TypeParam> r;
    std::vector<std::byte> out;
    const spec::get_lba_status_view tracked{.dword_count = 2, .action = spec::lba_status_action::tracked};
    EXPECT_EQ(get_lba_status(r, 9, tracked, out).status(),
              dnr(spec::generic_status::invalid_namespace_or_format));
    EXPECT_EQ(get_lba_status(r, all_namespaces, tracked, out).status(),
              dnr(spec::generic_status::invalid_namespace_or_format));
    EXPECT_EQ(
        get_lba_status(r, 1, {.dword_count = 2, .action = static_cast<spec::lba_status_action>(0x02)}, out)
            .status(),
        dnr(spec::generic_status::invalid_field));
    EXPECT_EQ(
        get_lba_status(
            r, 1, {.starting_lba = 128, .dword_count = 2, .action = spec::lba_status_action::tracked}, out)
            .status(),
        dnr(spec::generic_status::lba_out_of_range));
    // Nothing unrecoverable: an empty, complete list.
    ASSERT_TRUE(get_lba_status(r, 1, tracked, out).ok());
    EXPECT_EQ(load<spec::lba_status_list_header>(out).nlsd, 0U);
    EXPECT_EQ(load<spec::lba_status_list_header>(out).cmpc, spec::lba_status_completion::complete);
}

TYPED_TEST(admin_get_lba_status, information_log_lists_tracked_ranges_per_namespace)
{
    pool_rig<TypeParam> r;
    std::vector<std::byte> out;
    // nvme lba-status-log /dev/nvme0: the header first, then the whole log.
    ASSERT_TRUE(r.host.get_log_page(spec::log_page_id::lba_status_information, 16, out).ok());
    auto header = load<spec::lba_status_log_header>(out);
    EXPECT_EQ(header.lslplen, 16U);
    EXPECT_EQ(header.nlslne, 0U);
    const auto empty_generation = header.lsgc;
    write_uncorrectable(r, 1, 3, 5);
    write_uncorrectable(r, 1, 20, 1);
    ASSERT_TRUE(r.host.get_log_page(spec::log_page_id::lba_status_information, 16, out).ok());
    header = load<spec::lba_status_log_header>(out);
    EXPECT_EQ(header.lslplen, 16U + 16U + 2U * 16U);
    EXPECT_EQ(header.nlslne, 1U);
    EXPECT_EQ(header.estulb, 6U);
    EXPECT_NE(header.lsgc, empty_generation);
    ASSERT_TRUE(r.host.get_log_page(spec::log_page_id::lba_status_information, header.lslplen, out).ok());
    const auto element = load<spec::lba_status_namespace_element>(out, 16);
    EXPECT_EQ(element.neid, 1U);
    EXPECT_EQ(element.nlrd, 2U);
    EXPECT_EQ(element.ratype, spec::lba_status_action::tracked);
    EXPECT_EQ(load<spec::lba_range_descriptor>(out, 32).rslba, 3U);
    EXPECT_EQ(load<spec::lba_range_descriptor>(out, 32).rnlb, 5U);
    EXPECT_EQ(load<spec::lba_range_descriptor>(out, 48).rslba, 20U);
    EXPECT_EQ(load<spec::lba_range_descriptor>(out, 48).rnlb, 1U);
    // Unchanged content, unchanged generation.
    ASSERT_TRUE(r.host.get_log_page(spec::log_page_id::lba_status_information, 16, out).ok());
    EXPECT_EQ(load<spec::lba_status_log_header>(out).lsgc, header.lsgc);
}

} // namespace command_sets_admin_namespaces_test
} // namespace
