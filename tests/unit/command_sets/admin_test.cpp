#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include <gtest/gtest.h>

#include <nvmekit/backends/ram_backend.hpp>
#include <nvmekit/command_sets/admin.hpp>

#include "controller_fixture.hpp"

namespace {
namespace command_sets_admin_test {

namespace spec = nvmekit::spec;
using namespace nvmekit_test;
using namespace std::chrono_literals;

constexpr std::byte fill_pattern{0xa5};

/// `T` from the first bytes of `bytes`.
template <typename T>
[[nodiscard]] T load(std::span<const std::byte> bytes)
{
    T value{};
    EXPECT_GE(bytes.size(), sizeof(T));
    std::memcpy(&value, bytes.data(), std::min(bytes.size(), sizeof(T)));
    return value;
}

/// Runs `sqe` with a buffer of `bytes` pre-filled with A5h, so that data the controller leaves
/// untouched can be told from zeros it writes; the host describes its first `described` bytes
/// (all when 0) with PRPs or an SGL. The buffer lands in `out`.
template <typename Host>
auto run_with_data(Host& host, spec::submission_queue_entry sqe, std::size_t bytes,
                   std::vector<std::byte>& out, std::size_t described = 0)
{
    const std::uint64_t buffer = host.allocate(std::max<std::size_t>(bytes, 4));
    const auto span = host.memory().bytes(buffer, bytes);
    std::fill(span.begin(), span.end(), fill_pattern);
    host.describe_data(sqe, buffer, described != 0 ? described : bytes);
    const auto result = host.admin(sqe);
    const auto data = host.memory().bytes(buffer, bytes);
    out.assign(data.begin(), data.end());
    host.release(buffer);
    return result;
}

[[nodiscard]] spec::submission_queue_entry
identify_command(spec::cns cns, std::uint32_t nsid,
                 spec::command_set_identifier csi = spec::command_set_identifier::nvm)
{
    auto sqe = host_type::command(spec::admin_opcode::identify, nsid);
    spec::identify_view{.cns = cns, .command_set_id = csi}.encode(sqe);
    return sqe;
}

template <typename Host>
auto identify(Host& host, spec::cns cns, std::uint32_t nsid, std::vector<std::byte>& out,
              spec::command_set_identifier csi = spec::command_set_identifier::nvm)
{
    return run_with_data(host, identify_command(cns, nsid, csi), spec::identify_data_size, out);
}

[[nodiscard]] bool all_equal(std::span<const std::byte> bytes, std::byte value)
{
    return std::all_of(bytes.begin(), bytes.end(), [value](std::byte b) { return b == value; });
}

// ---- suites over both transports ---------------------------------------------------------------

// The admin command set runs over PCIe and over the loopback transport; what is about PRPs or the
// phase tags of a CQ in host memory stays a TEST() over PCIe.
NVMEKIT_TEST_SUITE_OVER_TRANSPORTS(admin_identify);
NVMEKIT_TEST_SUITE_OVER_TRANSPORTS(admin_log_page);
NVMEKIT_TEST_SUITE_OVER_TRANSPORTS(admin_async_events);
NVMEKIT_TEST_SUITE_OVER_TRANSPORTS(admin_custom_table);

// ---- Identify Namespace (CNS 00h) -------------------------------------------------------------

TYPED_TEST(admin_identify, namespace_reports_size_format_and_lba_formats)
{
    TypeParam r;
    r.subsystem.add_namespace(nvmekit::ram_backend{1 << 20});
    r.host.bring_up();
    std::vector<std::byte> data;
    ASSERT_EQ(identify(r.host, spec::cns::identify_namespace, 1, data).status(), spec::status::success());
    const auto ns = load<spec::identify_namespace>(data);
    EXPECT_EQ(ns.nsze, 2048U);
    EXPECT_EQ(ns.ncap, 2048U);
    EXPECT_EQ(ns.nuse, 2048U);
    EXPECT_EQ(ns.nlbaf, 3U);
    EXPECT_EQ(ns.flbas.format_index(), 0U);
    EXPECT_FALSE(ns.flbas.get(spec::formatted_lba_size::extended_metadata));
    const std::array<std::pair<std::uint8_t, std::uint16_t>, 4> formats{{{9, 0}, {9, 8}, {12, 0}, {12, 64}}};
    for (std::size_t i = 0; i < formats.size(); ++i) {
        EXPECT_EQ(ns.lbaf[i].get(spec::lba_format::lbads), formats[i].first) << "LBAF" << i;
        EXPECT_EQ(ns.lbaf[i].get(spec::lba_format::ms), formats[i].second) << "LBAF" << i;
    }
    for (std::size_t i = formats.size(); i < ns.lbaf.size(); ++i) {
        EXPECT_EQ(ns.lbaf[i].raw, 0U) << "LBAF" << i;
    }
    EXPECT_EQ(ns.nvm_capacity(), std::uint64_t{1} << 20);
    const auto* backing = r.subsystem.find(1);
    ASSERT_NE(backing, nullptr);
    EXPECT_EQ(ns.nguid, backing->identifiers().nguid);
    EXPECT_EQ(ns.eui64, backing->identifiers().eui64);
}

TYPED_TEST(admin_identify, namespace_reports_an_extended_4k_format)
{
    TypeParam r;
    r.subsystem.add_namespace(nvmekit::ram_backend{1 << 20}, {.lba_format = 3, .extended_metadata = true});
    r.host.bring_up();
    std::vector<std::byte> data;
    ASSERT_EQ(identify(r.host, spec::cns::identify_namespace, 1, data).status(), spec::status::success());
    const auto ns = load<spec::identify_namespace>(data);
    EXPECT_EQ(ns.nsze, (std::uint64_t{1} << 20) / (4096 + 64));
    EXPECT_EQ(ns.flbas.format_index(), 3U);
    EXPECT_TRUE(ns.flbas.get(spec::formatted_lba_size::extended_metadata));
    EXPECT_EQ(ns.formatted_lba_format().get(spec::lba_format::lbads), 12U);
    EXPECT_EQ(ns.formatted_lba_format().get(spec::lba_format::ms), 64U);
}

TYPED_TEST(admin_identify, namespace_identifiers_are_unique_and_non_zero)
{
    TypeParam r;
    r.subsystem.add_namespace(nvmekit::ram_backend{1 << 20});
    r.subsystem.add_namespace(nvmekit::ram_backend{1 << 20});
    r.subsystem.add_namespace(nvmekit::ram_backend{1 << 20}, {}, 7);
    r.host.bring_up();
    std::vector<spec::identify_namespace> found;
    for (const std::uint32_t nsid : {1U, 2U, 7U}) {
        std::vector<std::byte> data;
        ASSERT_EQ(identify(r.host, spec::cns::identify_namespace, nsid, data).status(),
                  spec::status::success());
        found.push_back(load<spec::identify_namespace>(data));
        EXPECT_NE(found.back().nguid, decltype(found.back().nguid){}) << nsid;
        EXPECT_NE(found.back().eui64, decltype(found.back().eui64){}) << nsid;
    }
    for (std::size_t i = 0; i < found.size(); ++i) {
        for (std::size_t j = i + 1; j < found.size(); ++j) {
            EXPECT_NE(found[i].nguid, found[j].nguid) << i << " " << j;
            EXPECT_NE(found[i].eui64, found[j].eui64) << i << " " << j;
        }
    }
}

TYPED_TEST(admin_identify, inactive_valid_nsid_returns_zeros)
{
    TypeParam r;
    r.subsystem.add_namespace(nvmekit::ram_backend{1 << 20});
    r.host.bring_up();
    for (const std::uint32_t nsid : {2U, 200U, 256U}) {
        std::vector<std::byte> data;
        EXPECT_EQ(identify(r.host, spec::cns::identify_namespace, nsid, data).status(),
                  spec::status::success())
            << nsid;
        EXPECT_TRUE(all_equal(data, std::byte{0})) << nsid;
    }
}

TYPED_TEST(admin_identify, namespace_zero_or_above_nn_is_invalid)
{
    TypeParam r;
    r.subsystem.add_namespace(nvmekit::ram_backend{1 << 20});
    r.host.bring_up();
    // FFFFFFFFh is valid for CNS 00h: the capabilities common to every namespace (admin_namespaces_test).
    for (const std::uint32_t nsid : {0U, 257U, 0xfffffffeU}) {
        std::vector<std::byte> data;
        EXPECT_EQ(identify(r.host, spec::cns::identify_namespace, nsid, data).status(),
                  dnr(spec::generic_status::invalid_namespace_or_format))
            << nsid;
        EXPECT_TRUE(all_equal(data, fill_pattern)) << nsid;
    }
}

// ---- Identify Controller (CNS 01h) ------------------------------------------------------------

/// Every opcode `table` supports.
template <typename Table>
[[nodiscard]] std::vector<std::uint8_t> opcodes_of(const Table& table)
{
    std::vector<std::uint8_t> opcodes;
    for (unsigned opcode = 0; opcode < 256; ++opcode) {
        if (table.supported(static_cast<std::uint8_t>(opcode))) {
            opcodes.push_back(static_cast<std::uint8_t>(opcode));
        }
    }
    return opcodes;
}

TYPED_TEST(admin_identify, controller_capabilities_name_what_is_implemented)
{
    TypeParam r;
    r.host.bring_up();
    std::vector<std::byte> data;
    ASSERT_EQ(identify(r.host, spec::cns::identify_controller, 0, data).status(), spec::status::success());
    const auto id = load<spec::identify_controller>(data);
    // OACS: Format NVM (bit 1), Firmware Commit / Image Download (bit 2), Namespace Management and
    // Attachment (bit 3), Doorbell Buffer Config (bit 8, over PCIe only: message-based queues have
    // no doorbells, and asynchronous DMA does not read shadow doorbells), Get LBA Status (bit 9).
    EXPECT_EQ(id.oacs.raw, offers_shadow_doorbells<TypeParam> ? 0x030eU : 0x020eU);
    const auto& admin = TypeParam::controller_type::admin_table();
    const auto admin_op = [](spec::admin_opcode op) { return static_cast<std::uint8_t>(op); };
    EXPECT_TRUE(admin.supported(admin_op(spec::admin_opcode::format_nvm)));
    EXPECT_TRUE(admin.supported(admin_op(spec::admin_opcode::firmware_commit)));
    EXPECT_TRUE(admin.supported(admin_op(spec::admin_opcode::firmware_image_download)));
    EXPECT_TRUE(admin.supported(admin_op(spec::admin_opcode::doorbell_buffer_config)));
    EXPECT_TRUE(admin.supported(admin_op(spec::admin_opcode::namespace_management)));
    EXPECT_TRUE(admin.supported(admin_op(spec::admin_opcode::namespace_attachment)));
    EXPECT_TRUE(admin.supported(admin_op(spec::admin_opcode::get_lba_status)));
    EXPECT_FALSE(admin.supported(0x81)); // Security Send (OACS bit 0 clear)
    EXPECT_FALSE(admin.supported(0x82)); // Security Receive
    EXPECT_FALSE(admin.supported(0x14)); // Device Self-test (bit 4)
    EXPECT_FALSE(admin.supported(0x19)); // Directive Send (bit 5)
    EXPECT_FALSE(admin.supported(0x1a)); // Directive Receive
    EXPECT_FALSE(admin.supported(0x1c)); // Virtualization Management (bit 7)
    EXPECT_FALSE(admin.supported(0x24)); // Command and Feature Lockdown (bit 10)
    // ONCS: Compare, Write Uncorrectable, Dataset Management, Write Zeroes, Save/Select,
    // Timestamp, Verify, Copy; no Reservations (bit 5).
    EXPECT_EQ(id.oncs.raw, 0x01dfU);
    const auto& io = TypeParam::controller_type::io_table();
    const auto io_op = [](spec::nvm_opcode op) { return static_cast<std::uint8_t>(op); };
    for (const auto op : {spec::nvm_opcode::compare, spec::nvm_opcode::write_uncorrectable,
                          spec::nvm_opcode::dataset_management, spec::nvm_opcode::write_zeroes,
                          spec::nvm_opcode::verify, spec::nvm_opcode::copy, spec::nvm_opcode::flush}) {
        EXPECT_TRUE(io.supported(io_op(op))) << int(io_op(op));
    }
    for (const std::uint8_t reservation : {0x0d, 0x0e, 0x11, 0x15}) {
        EXPECT_FALSE(io.supported(reservation)) << int(reservation);
    }
    // LPA: Commands Supported and Effects (bit 1), extended data (bit 2), telemetry (bit 3); no
    // per-namespace SMART (bit 0).
    EXPECT_EQ(id.lpa.raw, 0x0eU);
    // VWC present, Flush with NSID FFFFFFFFh supported (bits 2:1 = 11b).
    EXPECT_EQ(id.vwc.raw, 0x07U);
    // SGLS: SGLs supported without alignment, Bit Bucket, byte aligned MPTR, metadata SGL.
    EXPECT_EQ(id.sgls.raw, 0x000b0001U);
    // FRMW: two slots, slot 1 writable, activation needs a reset.
    EXPECT_EQ(id.frmw.raw, 0x04U);
    // OAES: Namespace Attribute Notices only.
    EXPECT_EQ(id.oaes.raw, 0x0000'0100U);
    EXPECT_EQ(id.nn, 256U);
    EXPECT_EQ(id.mdts, 5U);
    EXPECT_EQ(id.aerl, 3U);
    EXPECT_EQ(id.elpe, 63U);
    EXPECT_EQ(id.cntlid, r.ctrl.controller_id());
    EXPECT_EQ(id.sqes.raw, 0x66U);
    EXPECT_EQ(id.cqes.raw, 0x44U);
    EXPECT_EQ(id.ver, 0x0002'0000U);
    EXPECT_EQ(id.cntrltype, spec::controller_type::io);
    EXPECT_EQ(id.serial_number(), "NVMEKIT0001");
    EXPECT_EQ(id.model_number(), "nvmekit emulated controller");
    EXPECT_EQ(id.firmware_revision(), "0.1.0");
    EXPECT_EQ(id.subsystem_nqn(), "nqn.2026-11.io.nvmekit:subsystem0");
}

// ---- Active Namespace ID list (CNS 02h) -------------------------------------------------------

[[nodiscard]] std::vector<std::uint32_t> nsids_of(const std::vector<std::byte>& data)
{
    const auto list = load<spec::active_namespace_id_list>(data);
    return {list.nsids.begin(), list.nsids.begin() + static_cast<std::ptrdiff_t>(list.size())};
}

TYPED_TEST(admin_identify, active_list_holds_the_nsids_above_the_given_one)
{
    TypeParam r;
    for (const std::uint32_t nsid : {1U, 3U, 4U, 100U, 256U}) {
        r.subsystem.add_namespace(nvmekit::ram_backend{1 << 16}, {}, nsid);
    }
    r.host.bring_up();
    const auto list_above = [&](std::uint32_t nsid) {
        std::vector<std::byte> data;
        EXPECT_EQ(identify(r.host, spec::cns::active_namespace_list, nsid, data).status(),
                  spec::status::success());
        // Unused entries are zero.
        const auto list = load<spec::active_namespace_id_list>(data);
        EXPECT_TRUE(std::all_of(list.nsids.begin() + static_cast<std::ptrdiff_t>(list.size()),
                                list.nsids.end(), [](std::uint32_t id) { return id == 0; }));
        return nsids_of(data);
    };
    EXPECT_EQ(list_above(0), (std::vector<std::uint32_t>{1, 3, 4, 100, 256}));
    EXPECT_EQ(list_above(1), (std::vector<std::uint32_t>{3, 4, 100, 256}));
    EXPECT_EQ(list_above(3), (std::vector<std::uint32_t>{4, 100, 256}));
    EXPECT_EQ(list_above(99), (std::vector<std::uint32_t>{100, 256}));
    EXPECT_EQ(list_above(256), std::vector<std::uint32_t>{});
    EXPECT_EQ(list_above(0xfffffffdU), std::vector<std::uint32_t>{});
}

TYPED_TEST(admin_identify, active_list_rejects_fffffffe_and_broadcast)
{
    TypeParam r;
    r.subsystem.add_namespace(nvmekit::ram_backend{1 << 16});
    r.host.bring_up();
    for (const std::uint32_t nsid : {0xfffffffeU, 0xffffffffU}) {
        std::vector<std::byte> data;
        EXPECT_EQ(identify(r.host, spec::cns::active_namespace_list, nsid, data).status(),
                  dnr(spec::generic_status::invalid_namespace_or_format))
            << nsid;
        EXPECT_TRUE(all_equal(data, fill_pattern));
    }
}

TYPED_TEST(admin_identify, detached_namespace_leaves_the_active_list)
{
    TypeParam r;
    for (int i = 0; i < 3; ++i) {
        r.subsystem.add_namespace(nvmekit::ram_backend{1 << 16});
    }
    r.host.bring_up();
    ASSERT_TRUE(r.subsystem.detach(2, r.ctrl.controller_id()));
    std::vector<std::byte> data;
    ASSERT_EQ(identify(r.host, spec::cns::active_namespace_list, 0, data).status(), spec::status::success());
    EXPECT_EQ(nsids_of(data), (std::vector<std::uint32_t>{1, 3}));
    // The detached NSID is inactive: Identify Namespace returns zeros, the descriptor list fails.
    ASSERT_EQ(identify(r.host, spec::cns::identify_namespace, 2, data).status(), spec::status::success());
    EXPECT_TRUE(all_equal(data, std::byte{0}));
    EXPECT_EQ(identify(r.host, spec::cns::namespace_id_descriptor_list, 2, data).status(),
              dnr(spec::generic_status::invalid_namespace_or_format));
    ASSERT_TRUE(r.subsystem.attach(2, r.ctrl.controller_id()));
    ASSERT_EQ(identify(r.host, spec::cns::active_namespace_list, 0, data).status(), spec::status::success());
    EXPECT_EQ(nsids_of(data), (std::vector<std::uint32_t>{1, 2, 3}));
}

// ---- Namespace Identification Descriptor list (CNS 03h) ---------------------------------------

TYPED_TEST(admin_identify, descriptor_list_holds_eui64_nguid_uuid_and_csi)
{
    TypeParam r;
    r.subsystem.add_namespace(nvmekit::ram_backend{1 << 16});
    r.subsystem.add_namespace(nvmekit::ram_backend{1 << 16});
    r.host.bring_up();
    std::vector<std::array<std::uint8_t, 16>> uuids;
    for (const std::uint32_t nsid : {1U, 2U}) {
        std::vector<std::byte> data;
        ASSERT_EQ(identify(r.host, spec::cns::namespace_id_descriptor_list, nsid, data).status(),
                  spec::status::success());
        const auto list = load<spec::namespace_id_descriptor_list>(data);
        const auto& ids = r.subsystem.find(nsid)->identifiers();
        // In order: EUI64, NGUID, UUID, CSI, each a 4-byte header then NIDL bytes.
        const std::array<std::pair<spec::namespace_id_type, std::size_t>, 4> expected{{
            {spec::namespace_id_type::eui64, 8},
            {spec::namespace_id_type::nguid, 16},
            {spec::namespace_id_type::uuid, 16},
            {spec::namespace_id_type::csi, 1},
        }};
        std::size_t offset = 0;
        for (const auto& [type, length] : expected) {
            const auto entry = list.at(offset);
            ASSERT_TRUE(entry.has_value()) << offset;
            EXPECT_EQ(entry->type, type);
            EXPECT_EQ(entry->id.size(), length);
            EXPECT_EQ(list.bytes[offset + 2], 0U);
            EXPECT_EQ(list.bytes[offset + 3], 0U);
            offset = entry->next_offset;
        }
        EXPECT_EQ(offset, 4U + 8U + 4U + 16U + 4U + 16U + 4U + 1U);
        // The list ends with zeros.
        EXPECT_TRUE(std::all_of(list.bytes.begin() + static_cast<std::ptrdiff_t>(offset), list.bytes.end(),
                                [](std::uint8_t b) { return b == 0; }));
        const auto eui64 = list.find(spec::namespace_id_type::eui64);
        const auto nguid = list.find(spec::namespace_id_type::nguid);
        const auto uuid = list.find(spec::namespace_id_type::uuid);
        const auto csi = list.find(spec::namespace_id_type::csi);
        ASSERT_TRUE(eui64 && nguid && uuid && csi);
        EXPECT_TRUE(std::equal(eui64->begin(), eui64->end(), ids.eui64.begin(), ids.eui64.end()));
        EXPECT_TRUE(std::equal(nguid->begin(), nguid->end(), ids.nguid.begin(), ids.nguid.end()));
        EXPECT_TRUE(std::equal(uuid->begin(), uuid->end(), ids.uuid.begin(), ids.uuid.end()));
        EXPECT_EQ((*csi)[0], static_cast<std::uint8_t>(spec::command_set_identifier::nvm));
        // RFC 9562: version in byte 6 bits 7:4, variant 10b in byte 8 bits 7:6.
        EXPECT_EQ((*uuid)[6] >> 4, 8U);
        EXPECT_EQ((*uuid)[8] >> 6, 2U);
        std::array<std::uint8_t, 16> copy{};
        std::copy(uuid->begin(), uuid->end(), copy.begin());
        uuids.push_back(copy);
    }
    EXPECT_NE(uuids[0], uuids[1]);
}

TYPED_TEST(admin_identify, descriptor_list_of_an_unknown_nsid_is_invalid)
{
    TypeParam r;
    r.subsystem.add_namespace(nvmekit::ram_backend{1 << 16});
    r.host.bring_up();
    for (const std::uint32_t nsid : {0U, 2U, 257U, 0xffffffffU}) {
        std::vector<std::byte> data;
        EXPECT_EQ(identify(r.host, spec::cns::namespace_id_descriptor_list, nsid, data).status(),
                  dnr(spec::generic_status::invalid_namespace_or_format))
            << nsid;
    }
}

// ---- I/O Command Set specific structures (CNS 05h, 06h, 07h), 08h, 1Ch --------------------------

TYPED_TEST(admin_identify, command_set_specific_structures_for_the_nvm_command_set)
{
    TypeParam r;
    r.subsystem.add_namespace(nvmekit::ram_backend{1 << 16});
    r.subsystem.add_namespace(nvmekit::ram_backend{1 << 16}, {}, 5);
    r.host.bring_up();
    std::vector<std::byte> data;
    // 05h: no protection information, so the NVM specific namespace structure is all zero.
    ASSERT_EQ(identify(r.host, spec::cns::io_command_set_namespace, 1, data).status(),
              spec::status::success());
    EXPECT_TRUE(all_equal(data, std::byte{0}));
    ASSERT_EQ(identify(r.host, spec::cns::io_command_set_namespace, 2, data).status(),
              spec::status::success());
    EXPECT_TRUE(all_equal(data, std::byte{0}));
    EXPECT_EQ(identify(r.host, spec::cns::io_command_set_namespace, 0, data).status(),
              dnr(spec::generic_status::invalid_namespace_or_format));
    // 06h: DMRL is 256 ranges (0's based), no other limit.
    ASSERT_EQ(identify(r.host, spec::cns::io_command_set_controller, 0, data).status(),
              spec::status::success());
    const auto controller = load<spec::nvm_identify_controller>(data);
    EXPECT_EQ(controller.dmrl, 255U);
    EXPECT_EQ(controller.vsl, 0U);
    EXPECT_EQ(controller.wzsl, 0U);
    EXPECT_EQ(controller.wusl, 0U);
    EXPECT_EQ(controller.dmrsl, 0U);
    EXPECT_EQ(controller.dmsl, 0U);
    EXPECT_TRUE(all_equal(std::span{data}.subspan(16), std::byte{0}));
    // 07h: the active NVM namespaces above the NSID.
    ASSERT_EQ(identify(r.host, spec::cns::io_command_set_active_namespace_list, 0, data).status(),
              spec::status::success());
    EXPECT_EQ(nsids_of(data), (std::vector<std::uint32_t>{1, 5}));
    ASSERT_EQ(identify(r.host, spec::cns::io_command_set_active_namespace_list, 1, data).status(),
              spec::status::success());
    EXPECT_EQ(nsids_of(data), (std::vector<std::uint32_t>{5}));
    EXPECT_EQ(identify(r.host, spec::cns::io_command_set_active_namespace_list, 0xfffffffeU, data).status(),
              dnr(spec::generic_status::invalid_namespace_or_format));
}

TYPED_TEST(admin_identify, command_set_specific_structures_reject_the_zoned_command_set)
{
    TypeParam r;
    r.subsystem.add_namespace(nvmekit::ram_backend{1 << 16});
    r.host.bring_up();
    for (const auto cns : {spec::cns::io_command_set_namespace, spec::cns::io_command_set_controller,
                           spec::cns::io_command_set_active_namespace_list}) {
        for (const auto csi :
             {spec::command_set_identifier::zoned, spec::command_set_identifier::key_value}) {
            std::vector<std::byte> data;
            EXPECT_EQ(identify(r.host, cns, cns == spec::cns::io_command_set_controller ? 0U : 1U, data, csi)
                          .status(),
                      dnr(spec::generic_status::invalid_field))
                << int(cns) << " " << int(csi);
            EXPECT_TRUE(all_equal(data, fill_pattern));
        }
    }
}

TYPED_TEST(admin_identify, command_set_independent_namespace)
{
    TypeParam r;
    r.subsystem.add_namespace(nvmekit::ram_backend{1 << 16});
    r.host.bring_up();
    std::vector<std::byte> data;
    ASSERT_EQ(identify(r.host, spec::cns::io_command_set_independent_namespace, 1, data).status(),
              spec::status::success());
    const auto ns = load<spec::independent_identify_namespace>(data);
    EXPECT_EQ(ns.nsfeat.raw, 0U);
    EXPECT_TRUE(ns.nmic.get(spec::namespace_multipath_caps::shared));
    EXPECT_EQ(ns.nstat.raw, 1U); // namespace ready
    EXPECT_EQ(ns.anagrpid, 0U);
    EXPECT_TRUE(all_equal(std::span{data}.subspan(15), std::byte{0}));
    // An inactive valid NSID: zeros (NRDY clear).
    ASSERT_EQ(identify(r.host, spec::cns::io_command_set_independent_namespace, 9, data).status(),
              spec::status::success());
    EXPECT_TRUE(all_equal(data, std::byte{0}));
    for (const std::uint32_t nsid : {0U, 257U}) {
        EXPECT_EQ(identify(r.host, spec::cns::io_command_set_independent_namespace, nsid, data).status(),
                  dnr(spec::generic_status::invalid_namespace_or_format))
            << nsid;
    }
}

TYPED_TEST(admin_identify, io_command_set_structure_names_the_nvm_command_set_only)
{
    TypeParam r;
    r.host.bring_up();
    std::vector<std::byte> data;
    ASSERT_EQ(identify(r.host, spec::cns::io_command_set, 0, data).status(), spec::status::success());
    const auto sets = load<spec::identify_io_command_set>(data);
    EXPECT_EQ(sets.vectors[0].raw, 1U);
    EXPECT_TRUE(std::all_of(sets.vectors.begin() + 1, sets.vectors.end(),
                            [](spec::io_command_set_vector v) { return v.raw == 0; }));
}

TYPED_TEST(admin_identify, unsupported_cns_is_invalid_field)
{
    TypeParam r;
    r.host.bring_up();
    for (const std::uint8_t cns : {0x04, 0x14, 0x15, 0x16, 0x17, 0x18, 0x19, 0x1d, 0xff}) {
        std::vector<std::byte> data;
        EXPECT_EQ(identify(r.host, static_cast<spec::cns>(cns), 0, data).status(),
                  dnr(spec::generic_status::invalid_field))
            << int(cns);
    }
}

TEST(admin_identify, sgl_data_pointer_on_an_admin_command_is_invalid_field)
{
    rig r;
    r.host.bring_up();
    const std::uint64_t buffer = r.host.allocate(4096);
    auto sqe = identify_command(spec::cns::identify_controller, 0);
    const std::array pieces{host_type::sgl_piece{buffer, 4096}};
    sqe.dptr = r.host.build_sgl(pieces);
    host_type::use_sgl(sqe);
    EXPECT_EQ(r.host.admin(sqe).status(), dnr(spec::generic_status::invalid_field));
    EXPECT_TRUE(all_equal(r.memory.bytes(buffer, 4096), std::byte{0}));
}

// ---- Get Log Page helpers ------------------------------------------------------------------------

struct log_request {
    spec::log_page_id lid;
    std::uint32_t bytes;
    std::uint64_t offset = 0;
    std::uint32_t nsid = 0xffffffffU;
    bool rae = false;
    std::uint8_t lsp = 0;
    spec::command_set_identifier csi = spec::command_set_identifier::nvm;
};

[[nodiscard]] spec::submission_queue_entry log_command(const log_request& request)
{
    auto sqe = host_type::command(spec::admin_opcode::get_log_page, request.nsid);
    spec::get_log_page_view{.log_page_id = request.lid,
                            .log_specific_field = request.lsp,
                            .retain_async_event = request.rae,
                            .dword_count = request.bytes / 4U,
                            .offset = request.offset,
                            .command_set_id = request.csi}
        .encode(sqe);
    return sqe;
}

template <typename Host>
auto read_log(Host& host, const log_request& request, std::vector<std::byte>& out)
{
    return run_with_data(host, log_command(request), request.bytes, out);
}

/// A whole 512-byte SMART / Health log, read with NSID FFFFFFFFh.
template <typename Host>
[[nodiscard]] spec::smart_health_log smart_log(Host& host)
{
    std::vector<std::byte> data;
    EXPECT_EQ(read_log(host, {.lid = spec::log_page_id::smart_health, .bytes = 512}, data).status(),
              spec::status::success());
    return load<spec::smart_health_log>(data);
}

[[nodiscard]] spec::error_information_entry error_entry(const std::vector<std::byte>& log, std::size_t index)
{
    return load<spec::error_information_entry>(std::span{log}.subspan(index * 64, 64));
}

// ---- Error Information (01h) -------------------------------------------------------------------

TYPED_TEST(admin_log_page, error_information_lists_failed_commands_newest_first)
{
    TypeParam r;
    r.subsystem.add_namespace(nvmekit::ram_backend{1 << 16});
    r.host.bring_up();
    std::vector<std::byte> data;
    // Nothing failed during bring-up: the log is all zero.
    ASSERT_EQ(read_log(r.host, {.lid = spec::log_page_id::error_information, .bytes = 4096}, data).status(),
              spec::status::success());
    EXPECT_TRUE(all_equal(data, std::byte{0}));

    const auto first = identify(r.host, static_cast<spec::cns>(0xff), 5, data);
    ASSERT_EQ(first.status(), dnr(spec::generic_status::invalid_field));
    const auto second =
        read_log(r.host, {.lid = static_cast<spec::log_page_id>(0x7f), .bytes = 512, .nsid = 1}, data);
    ASSERT_EQ(second.status(), dnr(spec::command_specific_status::invalid_log_page));

    ASSERT_EQ(read_log(r.host, {.lid = spec::log_page_id::error_information, .bytes = 4096}, data).status(),
              spec::status::success());
    const auto newest = error_entry(data, 0);
    EXPECT_EQ(newest.error_count, 2U);
    EXPECT_EQ(newest.sqid, 0U);
    EXPECT_EQ(newest.cid, second.cqe.cid);
    EXPECT_EQ(newest.status(), dnr(spec::command_specific_status::invalid_log_page));
    EXPECT_EQ(newest.nsid, 1U);
    EXPECT_EQ(newest.error_location.raw, 0xffffU);
    EXPECT_EQ(newest.lba, 0U);
    const auto older = error_entry(data, 1);
    EXPECT_EQ(older.error_count, 1U);
    EXPECT_EQ(older.sqid, 0U);
    EXPECT_EQ(older.cid, first.cqe.cid);
    EXPECT_EQ(older.status(), dnr(spec::generic_status::invalid_field));
    EXPECT_EQ(older.nsid, 5U);
    EXPECT_TRUE(all_equal(std::span{data}.subspan(128), std::byte{0}));
    // SMART counts every entry added to the log.
    EXPECT_EQ(smart_log(r.host).error_log_entries.low(), 2U);
}

TEST(admin_log_page, error_information_entry_carries_the_posted_phase_tag)
{
    rig r;
    r.host.bring_up();
    std::vector<std::byte> data;
    // The admin CQ has 32 entries: the first pass posts phase 1, the second phase 0.
    ASSERT_EQ(identify(r.host, static_cast<spec::cns>(0xff), 0, data).status(),
              dnr(spec::generic_status::invalid_field));
    ASSERT_EQ(read_log(r.host, {.lid = spec::log_page_id::error_information, .bytes = 64}, data).status(),
              spec::status::success());
    EXPECT_TRUE(error_entry(data, 0).phase());
    // Bring-up posted 4 completions: 32 more move the next one into the second pass.
    for (int i = 0; i < 32; ++i) {
        ASSERT_EQ(r.host.admin(host_type::command(spec::admin_opcode::keep_alive)).status(),
                  spec::status::success());
    }
    ASSERT_EQ(identify(r.host, static_cast<spec::cns>(0xff), 0, data).status(),
              dnr(spec::generic_status::invalid_field));
    ASSERT_EQ(read_log(r.host, {.lid = spec::log_page_id::error_information, .bytes = 64}, data).status(),
              spec::status::success());
    EXPECT_EQ(error_entry(data, 0).error_count, 2U);
    EXPECT_FALSE(error_entry(data, 0).phase());
}

TYPED_TEST(admin_log_page, error_information_offsets_select_entries)
{
    TypeParam r;
    r.host.bring_up();
    std::vector<std::byte> data;
    for (int i = 0; i < 3; ++i) {
        ASSERT_EQ(
            identify(r.host, static_cast<spec::cns>(0xff), static_cast<std::uint32_t>(i), data).status(),
            dnr(spec::generic_status::invalid_field));
    }
    // Entry 1 (the second newest) alone, then the second half of entry 0 and the first of entry 1.
    ASSERT_EQ(read_log(r.host, {.lid = spec::log_page_id::error_information, .bytes = 64, .offset = 64}, data)
                  .status(),
              spec::status::success());
    EXPECT_EQ(error_entry(data, 0).error_count, 2U);
    EXPECT_EQ(error_entry(data, 0).nsid, 1U);
    ASSERT_EQ(read_log(r.host, {.lid = spec::log_page_id::error_information, .bytes = 64, .offset = 32}, data)
                  .status(),
              spec::status::success());
    // Window bytes 31:00 are entry 0's bytes 63:32 (all zero here), 63:32 entry 1's bytes 31:00.
    EXPECT_TRUE(all_equal(std::span{data}.first(32), std::byte{0}));
    std::vector<std::byte> second_entry(data.begin() + 32, data.end());
    second_entry.resize(64);
    const auto part = load<spec::error_information_entry>(second_entry);
    EXPECT_EQ(part.error_count, 2U);
    EXPECT_EQ(part.nsid, 1U);
    // Offset equal to the log size (64 entries): zeros; past it or misaligned: Invalid Field.
    ASSERT_EQ(
        read_log(r.host, {.lid = spec::log_page_id::error_information, .bytes = 64, .offset = 4096}, data)
            .status(),
        spec::status::success());
    EXPECT_TRUE(all_equal(data, std::byte{0}));
    EXPECT_EQ(
        read_log(r.host, {.lid = spec::log_page_id::error_information, .bytes = 64, .offset = 4100}, data)
            .status(),
        dnr(spec::generic_status::invalid_field));
    EXPECT_EQ(read_log(r.host, {.lid = spec::log_page_id::error_information, .bytes = 64, .offset = 66}, data)
                  .status(),
              dnr(spec::generic_status::invalid_field));
    // Those two failures are logged too: the error count is now 5.
    ASSERT_EQ(read_log(r.host, {.lid = spec::log_page_id::error_information, .bytes = 64}, data).status(),
              spec::status::success());
    EXPECT_EQ(error_entry(data, 0).error_count, 5U);
}

// ---- SMART / Health Information (02h) ---------------------------------------------------------

/// Write or Read of `blocks` 512-byte blocks at `slba` of NSID 1 on I/O queue 1.
template <typename Host>
[[nodiscard]] spec::status block_io(Host& host, spec::nvm_opcode opcode, std::uint64_t slba,
                                    std::uint32_t blocks)
{
    const std::size_t bytes = std::size_t{blocks} * 512U;
    const std::uint64_t buffer = host.allocate(bytes);
    auto sqe = host_type::lba_command(opcode, 1, slba, blocks);
    host.describe_data(sqe, buffer, bytes);
    const auto status = host.io(1, sqe).status();
    host.release(buffer);
    return status;
}

TYPED_TEST(admin_log_page, smart_counts_data_units_and_commands)
{
    TypeParam r;
    r.subsystem.add_namespace(nvmekit::ram_backend{1 << 20});
    r.host.bring_up();
    auto log = smart_log(r.host);
    EXPECT_EQ(log.data_units_read.low(), 0U);
    EXPECT_EQ(log.data_units_written.low(), 0U);
    EXPECT_EQ(log.host_read_commands.low(), 0U);
    EXPECT_EQ(log.host_write_commands.low(), 0U);
    EXPECT_EQ(log.power_cycles.low(), 1U);
    EXPECT_EQ(log.available_spare, 100U);
    EXPECT_EQ(log.available_spare_threshold, 10U);
    EXPECT_EQ(log.critical_warning.raw, 0U);
    // One block written: 1 unit of 512 bytes rounds up to one data unit.
    ASSERT_EQ(block_io(r.host, spec::nvm_opcode::write, 0, 1), spec::status::success());
    log = smart_log(r.host);
    EXPECT_EQ(log.data_units_written.low(), 1U);
    EXPECT_EQ(log.host_write_commands.low(), 1U);
    EXPECT_EQ(log.data_units_read.low(), 0U);
    // 999 more: 1000 units, still one data unit; one more: 1001 units, two.
    for (int i = 0; i < 4; ++i) {
        ASSERT_EQ(block_io(r.host, spec::nvm_opcode::write, 1 + 250U * static_cast<unsigned>(i),
                           i == 3 ? 249U : 250U),
                  spec::status::success());
    }
    log = smart_log(r.host);
    EXPECT_EQ(log.data_units_written.low(), 1U);
    EXPECT_EQ(log.host_write_commands.low(), 5U);
    ASSERT_EQ(block_io(r.host, spec::nvm_opcode::write, 1000, 1), spec::status::success());
    log = smart_log(r.host);
    EXPECT_EQ(log.data_units_written.low(), 2U);
    EXPECT_EQ(log.host_write_commands.low(), 6U);
    // Reads: 16 blocks then 1000 blocks in four commands, 1016 units: two data units.
    ASSERT_EQ(block_io(r.host, spec::nvm_opcode::read, 0, 16), spec::status::success());
    log = smart_log(r.host);
    EXPECT_EQ(log.data_units_read.low(), 1U);
    EXPECT_EQ(log.host_read_commands.low(), 1U);
    for (unsigned i = 0; i < 4; ++i) {
        ASSERT_EQ(block_io(r.host, spec::nvm_opcode::read, 250U * i, 250), spec::status::success());
    }
    log = smart_log(r.host);
    EXPECT_EQ(log.data_units_read.low(), 2U);
    EXPECT_EQ(log.host_read_commands.low(), 5U);
    EXPECT_EQ(log.data_units_read.high(), 0U);
    EXPECT_EQ(log.host_write_commands.low(), 6U);
    // A failed read counts nothing.
    EXPECT_EQ(block_io(r.host, spec::nvm_opcode::read, 2048, 1), dnr(spec::generic_status::lba_out_of_range));
    log = smart_log(r.host);
    EXPECT_EQ(log.host_read_commands.low(), 5U);
    EXPECT_EQ(log.data_units_read.low(), 2U);
}

TYPED_TEST(admin_log_page, smart_power_on_hours_follow_the_clock)
{
    TypeParam r;
    r.host.bring_up();
    EXPECT_EQ(smart_log(r.host).power_on_hours.low(), 0U);
    r.clock.advance(59min);
    EXPECT_EQ(smart_log(r.host).power_on_hours.low(), 0U);
    r.clock.advance(1min);
    EXPECT_EQ(smart_log(r.host).power_on_hours.low(), 1U);
    r.clock.advance(24h * 10);
    EXPECT_EQ(smart_log(r.host).power_on_hours.low(), 241U);
}

TYPED_TEST(admin_log_page, smart_temperature_and_its_critical_warning)
{
    TypeParam r;
    r.host.bring_up();
    auto log = smart_log(r.host);
    EXPECT_EQ(log.composite_temperature_kelvin(), 308U);
    EXPECT_FALSE(log.critical_warning.get(spec::smart_critical_warning::temperature));
    // Over the default over threshold (WCTEMP, 343 K): the warning is set while it lasts.
    r.ctrl.set_temperature(342);
    log = smart_log(r.host);
    EXPECT_EQ(log.composite_temperature_kelvin(), 342U);
    EXPECT_EQ(log.critical_warning.raw, 0U);
    r.ctrl.set_temperature(343);
    log = smart_log(r.host);
    EXPECT_EQ(log.composite_temperature_kelvin(), 343U);
    EXPECT_EQ(log.critical_warning.raw, 0x02U);
    r.ctrl.set_temperature(300);
    EXPECT_EQ(smart_log(r.host).critical_warning.raw, 0U);
    // An under threshold set through Feature 04h (THSEL 01b) also sets it.
    const auto under = spec::temperature_threshold{}
                           .with(spec::temperature_threshold::tmpth, 280)
                           .with(spec::temperature_threshold::thsel, spec::threshold_type::under);
    ASSERT_EQ(
        r.host.admin(host_type::set_features_command(spec::feature_id::temperature_threshold, under.raw))
            .status(),
        spec::status::success());
    r.ctrl.set_temperature(280);
    log = smart_log(r.host);
    EXPECT_EQ(log.composite_temperature_kelvin(), 280U);
    EXPECT_EQ(log.critical_warning.raw, 0x02U);
}

TYPED_TEST(admin_log_page, smart_is_controller_wide_only)
{
    TypeParam r;
    r.subsystem.add_namespace(nvmekit::ram_backend{1 << 16});
    r.host.bring_up();
    std::vector<std::byte> data;
    EXPECT_EQ(
        read_log(r.host, {.lid = spec::log_page_id::smart_health, .bytes = 512, .nsid = 1}, data).status(),
        dnr(spec::generic_status::invalid_field));
    EXPECT_TRUE(all_equal(data, fill_pattern));
    EXPECT_EQ(
        read_log(r.host, {.lid = spec::log_page_id::smart_health, .bytes = 512, .nsid = 2}, data).status(),
        dnr(spec::generic_status::invalid_field));
    ASSERT_EQ(
        read_log(r.host, {.lid = spec::log_page_id::smart_health, .bytes = 512, .nsid = 0}, data).status(),
        spec::status::success());
    EXPECT_EQ(load<spec::smart_health_log>(data).composite_temperature_kelvin(), 308U);
}

// ---- Firmware Slot Information (03h) -------------------------------------------------------------

TYPED_TEST(admin_log_page, firmware_slot_reports_the_running_revision)
{
    TypeParam r;
    r.host.bring_up();
    std::vector<std::byte> data;
    ASSERT_EQ(read_log(r.host, {.lid = spec::log_page_id::firmware_slot, .bytes = 512}, data).status(),
              spec::status::success());
    const auto log = load<spec::firmware_slot_log>(data);
    EXPECT_EQ(log.afi.raw, 0x01U); // running slot 1, nothing pending
    const spec::firmware_slot_log::revision_type frs1{'0', '.', '1', '.', '0', ' ', ' ', ' '};
    EXPECT_EQ(log.revisions[0], frs1);
    for (std::size_t slot = 2; slot <= 7; ++slot) {
        EXPECT_EQ(log.revision(slot), "") << slot;
        EXPECT_EQ(log.revisions[slot - 1], spec::firmware_slot_log::revision_type{}) << slot;
    }
    EXPECT_TRUE(all_equal(std::span{data}.subspan(64), std::byte{0}));
}

// ---- Changed Namespace List (04h) ---------------------------------------------------------------

template <typename Host>
[[nodiscard]] std::vector<std::uint32_t> changed_namespaces(Host& host, bool rae = false)
{
    std::vector<std::byte> data;
    EXPECT_EQ(
        read_log(host, {.lid = spec::log_page_id::changed_namespace_list, .bytes = 4096, .rae = rae}, data)
            .status(),
        spec::status::success());
    const auto list = load<spec::changed_namespace_list>(data);
    std::vector<std::uint32_t> nsids(list.nsids.begin(),
                                     list.nsids.begin() + static_cast<std::ptrdiff_t>(list.count()));
    EXPECT_TRUE(std::all_of(list.nsids.begin() + static_cast<std::ptrdiff_t>(list.count()), list.nsids.end(),
                            [](std::uint32_t id) { return id == 0; }));
    return nsids;
}

TYPED_TEST(admin_log_page, changed_namespace_list_records_attach_and_detach)
{
    TypeParam r;
    for (int i = 0; i < 4; ++i) {
        r.subsystem.add_namespace(nvmekit::ram_backend{1 << 16});
    }
    r.host.bring_up();
    const auto id = r.ctrl.controller_id();
    // The namespaces were added after the controller was created: each attach is a change.
    EXPECT_EQ(changed_namespaces(r.host), (std::vector<std::uint32_t>{1, 2, 3, 4}));
    EXPECT_EQ(changed_namespaces(r.host), std::vector<std::uint32_t>{});
    ASSERT_TRUE(r.subsystem.detach(2, id));
    ASSERT_TRUE(r.subsystem.detach(4, id));
    ASSERT_TRUE(r.subsystem.attach(2, id)); // NSID 2 is listed once
    // RAE keeps the list.
    EXPECT_EQ(changed_namespaces(r.host, true), (std::vector<std::uint32_t>{2, 4}));
    EXPECT_EQ(changed_namespaces(r.host, true), (std::vector<std::uint32_t>{2, 4}));
    // A read without RAE returns it and clears it.
    EXPECT_EQ(changed_namespaces(r.host), (std::vector<std::uint32_t>{2, 4}));
    EXPECT_EQ(changed_namespaces(r.host), std::vector<std::uint32_t>{});
    // A namespace added later is attached and listed.
    r.subsystem.add_namespace(nvmekit::ram_backend{1 << 16}, {}, 9);
    EXPECT_EQ(changed_namespaces(r.host), std::vector<std::uint32_t>{9});
}

TYPED_TEST(admin_log_page, changed_namespace_list_is_in_increasing_order)
{
    TypeParam r;
    for (int i = 0; i < 5; ++i) {
        r.subsystem.add_namespace(nvmekit::ram_backend{1 << 16});
    }
    r.host.bring_up();
    const auto id = r.ctrl.controller_id();
    EXPECT_EQ(changed_namespaces(r.host).size(), 5U);
    for (const std::uint32_t nsid : {5U, 2U, 4U, 1U}) {
        ASSERT_TRUE(r.subsystem.detach(nsid, id));
    }
    EXPECT_EQ(changed_namespaces(r.host), (std::vector<std::uint32_t>{1, 2, 4, 5}));
}

TYPED_TEST(admin_log_page, changed_namespace_list_ignores_other_controllers)
{
    TypeParam r;
    r.subsystem.add_namespace(nvmekit::ram_backend{1 << 16});
    r.host.bring_up();
    nvmekit::testing::recording_msix other_msix;
    const auto other = r.make_peer(other_msix);
    ASSERT_NE(other->controller_id(), r.ctrl.controller_id());
    EXPECT_EQ(changed_namespaces(r.host), std::vector<std::uint32_t>{1});
    ASSERT_TRUE(r.subsystem.detach(1, other->controller_id()));
    EXPECT_EQ(changed_namespaces(r.host), std::vector<std::uint32_t>{});
    ASSERT_TRUE(r.subsystem.detach(1, r.ctrl.controller_id()));
    EXPECT_EQ(changed_namespaces(r.host), std::vector<std::uint32_t>{1});
}

// ---- Commands Supported and Effects (05h) --------------------------------------------------------

TYPED_TEST(admin_log_page, effects_log_lists_exactly_the_dispatch_tables)
{
    TypeParam r;
    r.host.bring_up();
    std::vector<std::byte> data;
    ASSERT_EQ(
        read_log(r.host, {.lid = spec::log_page_id::commands_supported_and_effects, .bytes = 4096}, data)
            .status(),
        spec::status::success());
    const auto log = load<spec::commands_supported_and_effects>(data);
    const auto& admin = TypeParam::controller_type::admin_table();
    const auto& io = TypeParam::controller_type::io_table();
    const auto supported = [](const auto& entries) {
        std::vector<std::uint8_t> opcodes;
        for (std::size_t op = 0; op < entries.size(); ++op) {
            if (entries[op].get(spec::command_effects::csupp)) {
                opcodes.push_back(static_cast<std::uint8_t>(op));
            }
        }
        return opcodes;
    };
    // Over message-based queues Delete/Create I/O SQ (00h, 01h), Delete/Create I/O CQ (04h, 05h)
    // and Doorbell Buffer Config (7Ch) are Invalid Command Opcode, and the log says so.
    const std::vector<std::uint8_t> queue_management{0x00, 0x01, 0x04, 0x05, 0x7c};
    const auto offered = [&](std::uint8_t op) {
        if (op == 0x7c) {
            return offers_shadow_doorbells<TypeParam>; // and not with asynchronous DMA
        }
        return over_pcie<TypeParam> ||
               std::find(queue_management.begin(), queue_management.end(), op) == queue_management.end();
    };
    const auto offered_of = [&](std::vector<std::uint8_t> opcodes) {
        std::erase_if(opcodes, [&](std::uint8_t op) { return !offered(op); });
        return opcodes;
    };
    EXPECT_EQ(supported(log.admin_commands), offered_of(opcodes_of(admin)));
    EXPECT_EQ(supported(log.io_commands), opcodes_of(io));
    EXPECT_EQ(supported(log.admin_commands),
              offered_of({0x00, 0x01, 0x02, 0x04, 0x05, 0x06, 0x08, 0x09, 0x0a, 0x0c, 0x0d, 0x10, 0x11, 0x15,
                          0x18, 0x7c, 0x80, 0x86}));
    EXPECT_EQ(supported(log.io_commands),
              (std::vector<std::uint8_t>{0x00, 0x01, 0x02, 0x04, 0x05, 0x08, 0x09, 0x0c, 0x19}));
    for (unsigned op = 0; op < 256; ++op) {
        const auto opcode = static_cast<std::uint8_t>(op);
        EXPECT_EQ(log.admin_commands[op].raw, offered(opcode) ? admin.effects(opcode).raw : 0U) << op;
        EXPECT_EQ(log.io_commands[op].raw, io.effects(opcode).raw) << op;
    }
    if constexpr (!over_pcie<TypeParam>) {
        for (const std::uint8_t op : queue_management) {
            EXPECT_EQ(r.host.admin(host_type::command(static_cast<spec::admin_opcode>(op))).status(),
                      dnr(spec::generic_status::invalid_opcode))
                << int(op);
        }
    }
    // Write: CSUPP and LBCC only. Read: CSUPP only.
    EXPECT_EQ(log.io_commands[0x01].raw, 0x0000'0003U);
    EXPECT_EQ(log.io_commands[0x02].raw, 0x0000'0001U);
    // Format NVM: LBCC, NCC, NIC, CSE 010b (no command to any namespace). Firmware Commit: CCC.
    EXPECT_EQ(log.admin_commands[0x80].raw, 0x0002'000fU);
    EXPECT_EQ(log.admin_commands[0x10].raw, 0x0000'0011U);
    // Namespace Management and Attachment: NCC, NIC, CSE 010b. Get LBA Status: CSUPP only.
    EXPECT_EQ(log.admin_commands[0x0d].raw, 0x0002'000dU);
    EXPECT_EQ(log.admin_commands[0x15].raw, 0x0002'000dU);
    EXPECT_EQ(log.admin_commands[0x86].raw, 0x0000'0001U);
    EXPECT_TRUE(all_equal(std::span{data}.subspan(2048), std::byte{0}));
}

TYPED_TEST(admin_log_page, effects_log_of_another_command_set_is_invalid_field)
{
    TypeParam r;
    r.host.bring_up();
    std::vector<std::byte> data;
    EXPECT_EQ(read_log(r.host,
                       {.lid = spec::log_page_id::commands_supported_and_effects,
                        .bytes = 4096,
                        .csi = spec::command_set_identifier::zoned},
                       data)
                  .status(),
              dnr(spec::generic_status::invalid_field));
}

// ---- Telemetry (07h, 08h) -----------------------------------------------------------------------

template <typename Host>
[[nodiscard]] spec::telemetry_log_header telemetry_header(Host& host, bool create)
{
    std::vector<std::byte> data;
    EXPECT_EQ(read_log(host,
                       {.lid = spec::log_page_id::telemetry_host_initiated,
                        .bytes = 512,
                        .lsp = static_cast<std::uint8_t>(create ? 1 : 0)},
                       data)
                  .status(),
              spec::status::success());
    return load<spec::telemetry_log_header>(data);
}

TYPED_TEST(admin_log_page, telemetry_create_captures_and_increments_the_generation)
{
    TypeParam r;
    r.host.bring_up();
    auto header = telemetry_header(r.host, false);
    EXPECT_EQ(header.log_identifier, 0x07U);
    EXPECT_EQ(header.host_data_generation_number, 0U);
    EXPECT_EQ(header.data_area3_last_block, 0U);
    header = telemetry_header(r.host, true);
    EXPECT_EQ(header.log_identifier, 0x07U);
    EXPECT_EQ(header.host_data_generation_number, 1U);
    EXPECT_EQ(header.data_area1_last_block, 1U);
    EXPECT_EQ(header.data_area2_last_block, 1U);
    EXPECT_EQ(header.data_area3_last_block, 1U);
    EXPECT_EQ(header.controller_data_available, 0U);
    // Without Create the last capture is read again.
    EXPECT_EQ(telemetry_header(r.host, false).host_data_generation_number, 1U);
    EXPECT_EQ(telemetry_header(r.host, true).host_data_generation_number, 2U);
    EXPECT_EQ(telemetry_header(r.host, false).host_data_generation_number, 2U);
    // Data Area 1 (block 1) holds the snapshot: the SMART / Health counters at the capture.
    r.ctrl.set_temperature(333);
    ASSERT_EQ(telemetry_header(r.host, true).host_data_generation_number, 3U);
    std::vector<std::byte> data;
    ASSERT_EQ(read_log(r.host,
                       {.lid = spec::log_page_id::telemetry_host_initiated, .bytes = 512, .offset = 512},
                       data)
                  .status(),
              spec::status::success());
    EXPECT_EQ(load<spec::smart_health_log>(data).composite_temperature_kelvin(), 333U);
}

TYPED_TEST(admin_log_page, telemetry_offset_must_be_a_multiple_of_512)
{
    TypeParam r;
    r.host.bring_up();
    std::vector<std::byte> data;
    // Before any capture the log is its header alone: offset 512 is its end.
    ASSERT_EQ(read_log(r.host,
                       {.lid = spec::log_page_id::telemetry_host_initiated, .bytes = 512, .offset = 512},
                       data)
                  .status(),
              spec::status::success());
    EXPECT_TRUE(all_equal(data, std::byte{0}));
    EXPECT_EQ(read_log(r.host,
                       {.lid = spec::log_page_id::telemetry_host_initiated, .bytes = 512, .offset = 1024},
                       data)
                  .status(),
              dnr(spec::generic_status::invalid_field));
    for (const std::uint64_t offset : {4U, 256U, 508U}) {
        EXPECT_EQ(
            read_log(r.host,
                     {.lid = spec::log_page_id::telemetry_host_initiated, .bytes = 512, .offset = offset},
                     data)
                .status(),
            dnr(spec::generic_status::invalid_field))
            << offset;
        EXPECT_TRUE(all_equal(data, fill_pattern));
    }
    EXPECT_EQ(
        read_log(r.host,
                 {.lid = spec::log_page_id::telemetry_host_initiated, .bytes = 512, .offset = 256, .lsp = 1},
                 data)
            .status(),
        dnr(spec::generic_status::invalid_field));
}

TYPED_TEST(admin_log_page, telemetry_controller_initiated_is_an_empty_log)
{
    // LPA bit 3 announces both telemetry logs.
    TypeParam r;
    r.host.bring_up();
    std::vector<std::byte> data;
    ASSERT_EQ(read_log(r.host, {.lid = spec::log_page_id::telemetry_controller_initiated, .bytes = 512}, data)
                  .status(),
              spec::status::success());
    const auto header = load<spec::telemetry_log_header>(data);
    EXPECT_EQ(header.log_identifier, 0x08U);
    EXPECT_EQ(header.data_area1_last_block, 0U);
    EXPECT_EQ(header.data_area3_last_block, 0U);
    EXPECT_EQ(header.controller_data_available, 0U);
    EXPECT_EQ(header.controller_data_generation_number, 0U);
    EXPECT_EQ(
        read_log(r.host,
                 {.lid = spec::log_page_id::telemetry_controller_initiated, .bytes = 512, .offset = 256},
                 data)
            .status(),
        dnr(spec::generic_status::invalid_field));
}

TYPED_TEST(admin_log_page, telemetry_headers_carry_the_ieee_oui_of_identify_controller)
{
    nvmekit::subsystem_identity identity{};
    identity.ieee_oui = {0x12, 0x34, 0x56};
    TypeParam r{{}, memory_size, memory_base, identity};
    r.host.bring_up();
    std::vector<std::byte> data;
    ASSERT_EQ(identify(r.host, spec::cns::identify_controller, 0, data).status(), spec::status::success());
    EXPECT_EQ(load<spec::identify_controller>(data).ieee_oui(), 0x563412U);
    const std::array<std::uint8_t, 3> oui{0x12, 0x34, 0x56};
    EXPECT_EQ(telemetry_header(r.host, false).ieee_oui, oui);
    EXPECT_EQ(telemetry_header(r.host, true).ieee_oui, oui);
    ASSERT_EQ(read_log(r.host, {.lid = spec::log_page_id::telemetry_controller_initiated, .bytes = 512}, data)
                  .status(),
              spec::status::success());
    EXPECT_EQ(load<spec::telemetry_log_header>(data).ieee_oui, oui);
}

// ---- Get Log Page errors ------------------------------------------------------------------------

TYPED_TEST(admin_log_page, unknown_log_page_is_invalid_log_page)
{
    TypeParam r;
    r.host.bring_up();
    for (const std::uint8_t lid : {0x00, 0x06, 0x09, 0x0d, 0x12, 0x70, 0x7f, 0x80, 0xc0, 0xff}) {
        std::vector<std::byte> data;
        EXPECT_EQ(read_log(r.host, {.lid = static_cast<spec::log_page_id>(lid), .bytes = 512}, data).status(),
                  dnr(spec::command_specific_status::invalid_log_page))
            << int(lid);
        EXPECT_TRUE(all_equal(data, fill_pattern));
    }
}

TYPED_TEST(admin_log_page, misaligned_or_past_the_end_offset_is_invalid_field)
{
    TypeParam r;
    r.host.bring_up();
    std::vector<std::byte> data;
    for (const std::uint64_t offset :
         {std::uint64_t{1}, std::uint64_t{2}, std::uint64_t{3}, std::uint64_t{514}, std::uint64_t{516},
          std::uint64_t{1024}, std::uint64_t{1} << 32}) {
        EXPECT_EQ(
            read_log(r.host, {.lid = spec::log_page_id::smart_health, .bytes = 64, .offset = offset}, data)
                .status(),
            dnr(spec::generic_status::invalid_field))
            << offset;
        EXPECT_TRUE(all_equal(data, fill_pattern));
    }
    // At the end of the log: zeros. Inside it: the window, and zeros past the end.
    ASSERT_EQ(
        read_log(r.host, {.lid = spec::log_page_id::smart_health, .bytes = 64, .offset = 512}, data).status(),
        spec::status::success());
    EXPECT_TRUE(all_equal(data, std::byte{0}));
    ASSERT_EQ(
        read_log(r.host, {.lid = spec::log_page_id::firmware_slot, .bytes = 16, .offset = 8}, data).status(),
        spec::status::success());
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(data.data()), 8), "0.1.0   ");
    EXPECT_TRUE(all_equal(std::span{data}.subspan(8), std::byte{0}));
    ASSERT_EQ(read_log(r.host, {.lid = spec::log_page_id::firmware_slot, .bytes = 1024}, data).status(),
              spec::status::success());
    EXPECT_EQ(data[0], std::byte{0x01});
    EXPECT_TRUE(all_equal(std::span{data}.subspan(512), std::byte{0}));
}

TYPED_TEST(admin_log_page, more_than_mdts_is_invalid_field)
{
    TypeParam r;
    r.host.bring_up();
    std::vector<std::byte> data;
    const std::uint32_t mdts_bytes = 4096U << 5;
    EXPECT_EQ(
        read_log(r.host, {.lid = spec::log_page_id::smart_health, .bytes = mdts_bytes + 4}, data).status(),
        dnr(spec::generic_status::invalid_field));
    EXPECT_TRUE(all_equal(data, fill_pattern));
    ASSERT_EQ(read_log(r.host, {.lid = spec::log_page_id::smart_health, .bytes = mdts_bytes}, data).status(),
              spec::status::success());
    EXPECT_EQ(load<spec::smart_health_log>(data).composite_temperature_kelvin(), 308U);
    EXPECT_TRUE(all_equal(std::span{data}.subspan(512), std::byte{0}));
    // NUMDU carries the upper 16 bits of NUMD: 2^16 dwords (256 KiB) is above MDTS.
    EXPECT_EQ(
        read_log(r.host, {.lid = spec::log_page_id::error_information, .bytes = 0x40000}, data).status(),
        dnr(spec::generic_status::invalid_field));
}

// ---- Asynchronous events -------------------------------------------------------------------------

[[nodiscard]] constexpr std::uint32_t namespace_attribute_changed_event()
{
    return spec::async_event_completion{spec::notice_event::namespace_attribute_changed,
                                        spec::log_page_id::changed_namespace_list}
        .raw;
}

[[nodiscard]] constexpr std::uint32_t temperature_event()
{
    return spec::async_event_completion{spec::smart_health_event::temperature_threshold}.raw;
}

template <typename Rig>
void set_feature_value(Rig& r, spec::feature_id fid, std::uint32_t value)
{
    ASSERT_EQ(r.host.admin(host_type::set_features_command(fid, value)).status(), spec::status::success());
}

/// Polls a few times and returns whether the Asynchronous Event Request `cid` completed.
template <typename Rig>
[[nodiscard]] bool event_reported(Rig& r)
{
    r.poll(3);
    std::vector<nvmekit::testing::completion> reaped;
    r.host.reap(0, reaped);
    return !reaped.empty();
}

TYPED_TEST(admin_async_events, namespace_attribute_changed_when_enabled)
{
    EXPECT_EQ(namespace_attribute_changed_event(), 0x0004'0002U);
    TypeParam r;
    r.subsystem.add_namespace(nvmekit::ram_backend{1 << 16});
    r.subsystem.add_namespace(nvmekit::ram_backend{1 << 16});
    r.host.bring_up();
    EXPECT_EQ(changed_namespaces(r.host).size(), 2U);
    set_feature_value(r, spec::feature_id::async_event_configuration, 1U << 8);
    const auto cid = *r.host.async_event_request_cid();
    ASSERT_TRUE(r.subsystem.detach(2, r.ctrl.controller_id()));
    EXPECT_EQ(r.async_event(cid), namespace_attribute_changed_event());
    EXPECT_EQ(changed_namespaces(r.host), std::vector<std::uint32_t>{2});
    // Namespace Attachment through the admin command raises it as well.
    const auto next = r.post_async_event_request();
    const std::uint64_t list = r.host.allocate(4096);
    r.memory.store(list, std::uint16_t{1});
    r.memory.store(list + 2, r.ctrl.controller_id());
    auto attach = host_type::command(spec::admin_opcode::namespace_attachment, 2);
    spec::namespace_attachment_view{.select = spec::namespace_attachment_select::attach}.encode(attach);
    r.host.describe_data(attach, list, 4096);
    ASSERT_EQ(r.host.admin(attach).status(), spec::status::success());
    EXPECT_EQ(r.async_event(next), namespace_attribute_changed_event());
    EXPECT_EQ(changed_namespaces(r.host), std::vector<std::uint32_t>{2});
}

TYPED_TEST(admin_async_events, no_namespace_event_when_disabled)
{
    TypeParam r;
    r.subsystem.add_namespace(nvmekit::ram_backend{1 << 16});
    r.subsystem.add_namespace(nvmekit::ram_backend{1 << 16});
    r.host.bring_up();
    EXPECT_EQ(changed_namespaces(r.host).size(), 2U);
    ASSERT_TRUE(r.subsystem.detach(1, r.ctrl.controller_id()));
    EXPECT_FALSE(event_reported(r));
    // Only the SMART warnings enabled: still no notice.
    set_feature_value(r, spec::feature_id::async_event_configuration, 0x0fU);
    ASSERT_TRUE(r.subsystem.detach(2, r.ctrl.controller_id()));
    EXPECT_FALSE(event_reported(r));
    EXPECT_EQ(r.host.outstanding(0), 1U); // the request is still held
    // The log still records the changes.
    EXPECT_EQ(changed_namespaces(r.host), (std::vector<std::uint32_t>{1, 2}));
}

TYPED_TEST(admin_async_events, notice_is_masked_until_the_log_is_read_without_rae)
{
    TypeParam r;
    for (int i = 0; i < 3; ++i) {
        r.subsystem.add_namespace(nvmekit::ram_backend{1 << 16});
    }
    r.host.bring_up();
    EXPECT_EQ(changed_namespaces(r.host).size(), 3U);
    set_feature_value(r, spec::feature_id::async_event_configuration, 1U << 8);
    const auto id = r.ctrl.controller_id();
    ASSERT_TRUE(r.subsystem.detach(1, id));
    EXPECT_EQ(r.async_event(*r.host.async_event_request_cid()), namespace_attribute_changed_event());
    const auto second = r.post_async_event_request();
    ASSERT_TRUE(r.subsystem.detach(3, id));
    EXPECT_FALSE(event_reported(r));
    // Reading with RAE keeps the event type masked.
    EXPECT_EQ(changed_namespaces(r.host, true), (std::vector<std::uint32_t>{1, 3}));
    EXPECT_FALSE(event_reported(r));
    // Reading without RAE unmasks it: the event that waited is reported.
    EXPECT_EQ(changed_namespaces(r.host), (std::vector<std::uint32_t>{1, 3}));
    EXPECT_EQ(r.async_event(second), namespace_attribute_changed_event());
}

TYPED_TEST(admin_async_events, temperature_over_threshold_raises_a_smart_event)
{
    EXPECT_EQ(temperature_event(), 0x0002'0101U);
    TypeParam r;
    r.host.bring_up();
    const auto over = spec::temperature_threshold{}
                          .with(spec::temperature_threshold::tmpth, 350)
                          .with(spec::temperature_threshold::thsel, spec::threshold_type::over);
    set_feature_value(r, spec::feature_id::temperature_threshold, over.raw);
    set_feature_value(r, spec::feature_id::async_event_configuration, 0x02U);
    const auto cid = *r.host.async_event_request_cid();
    r.ctrl.set_temperature(349);
    EXPECT_FALSE(event_reported(r));
    r.ctrl.set_temperature(350);
    EXPECT_EQ(r.async_event(cid), temperature_event());
    std::vector<std::byte> data;
    ASSERT_EQ(
        read_log(r.host, {.lid = spec::log_page_id::smart_health, .bytes = 512, .rae = true}, data).status(),
        spec::status::success());
    EXPECT_EQ(load<spec::smart_health_log>(data).critical_warning.raw, 0x02U);

    // Another crossing while the SMART type is masked waits for a read of the log without RAE.
    const auto second = r.post_async_event_request();
    r.ctrl.set_temperature(300);
    r.ctrl.set_temperature(360);
    EXPECT_FALSE(event_reported(r));
    ASSERT_EQ(
        read_log(r.host, {.lid = spec::log_page_id::smart_health, .bytes = 512, .rae = true}, data).status(),
        spec::status::success());
    EXPECT_FALSE(event_reported(r));
    EXPECT_EQ(smart_log(r.host).critical_warning.raw, 0x02U);
    EXPECT_EQ(r.async_event(second), temperature_event());
}

TYPED_TEST(admin_async_events, temperature_event_needs_aec_bit_1)
{
    TypeParam r;
    r.host.bring_up();
    // Bits 0, 2, 3 and 8 enabled; bit 1 (temperature) clear.
    set_feature_value(r, spec::feature_id::async_event_configuration, 0x10dU);
    r.ctrl.set_temperature(400);
    EXPECT_FALSE(event_reported(r));
    EXPECT_EQ(smart_log(r.host).critical_warning.raw, 0x02U);
    // Lowering the threshold below the current temperature is a crossing too, once enabled.
    set_feature_value(r, spec::feature_id::async_event_configuration, 0x02U);
    r.ctrl.set_temperature(320);
    EXPECT_FALSE(event_reported(r));
    const auto over = spec::temperature_threshold{}
                          .with(spec::temperature_threshold::tmpth, 310)
                          .with(spec::temperature_threshold::thsel, spec::threshold_type::over);
    set_feature_value(r, spec::feature_id::temperature_threshold, over.raw);
    EXPECT_EQ(r.async_event(*r.host.async_event_request_cid()), temperature_event());
}

// ---- Customised admin command tables -------------------------------------------------------------

inline int replaced_keep_alives = 0;

/// Vendor command C0h: 16 bytes of 5Ah to the host, CDW12 inverted in DW0.
template <typename Controller>
nvmekit::command_result vendor_echo(Controller& c, typename Controller::command& cmd)
{
    std::array<std::byte, 16> payload{};
    payload.fill(std::byte{0x5a});
    if (const auto status = c.transfer_to_host(cmd, payload); !status.is_success()) {
        return nvmekit::command_result::failure(status);
    }
    return nvmekit::command_result::success(~cmd.sqe.cdw12);
}

template <typename Controller>
nvmekit::command_result counting_keep_alive(Controller& /*c*/, typename Controller::command& /*cmd*/)
{
    ++replaced_keep_alives;
    return nvmekit::command_result::success(0xabcdU);
}

struct vendor_traits : test_traits {
    template <typename Table>
    static constexpr Table admin_commands(Table table)
    {
        using controller_type = typename Table::context_type;
        return table.with(0xc0, &vendor_echo<controller_type>, nvmekit::effects::changes_controller())
            .with(static_cast<std::uint8_t>(spec::admin_opcode::keep_alive),
                  &counting_keep_alive<controller_type>);
    }
};

TYPED_TEST(admin_custom_table, vendor_command_runs_and_is_in_the_effects_log)
{
    rig_for<TypeParam, vendor_traits> r;
    r.host.bring_up();
    auto sqe = host_type::command(static_cast<spec::admin_opcode>(0xc0));
    sqe.cdw12 = 0x1234'5678U;
    std::vector<std::byte> data;
    // The command transfers 16 bytes: an SGL describes exactly those (Identify Controller SGLS
    // bit 18 clear), PRPs the page they start.
    const auto result = run_with_data(r.host, sqe, 32, data, 16);
    ASSERT_EQ(result.status(), spec::status::success());
    EXPECT_EQ(result.cqe.dw0, 0xedcb'a987U);
    EXPECT_TRUE(all_equal(std::span{data}.first(16), std::byte{0x5a}));
    EXPECT_TRUE(all_equal(std::span{data}.subspan(16), fill_pattern));

    ASSERT_EQ(
        read_log(r.host, {.lid = spec::log_page_id::commands_supported_and_effects, .bytes = 4096}, data)
            .status(),
        spec::status::success());
    const auto log = load<spec::commands_supported_and_effects>(data);
    EXPECT_EQ(log.admin_commands[0xc0].raw, 0x0000'0011U); // CSUPP, CCC
    EXPECT_EQ(log.admin_commands[0x18].raw, 0x0000'0001U);
    EXPECT_EQ(log.admin_commands[0xc1].raw, 0U);
    EXPECT_EQ(opcodes_of(rig_for<TypeParam, vendor_traits>::controller_type::admin_table()).size(),
              opcodes_of(TypeParam::controller_type::admin_table()).size() + 1U);
    // An opcode the table lacks is still Invalid Command Opcode.
    EXPECT_EQ(r.host.admin(host_type::command(static_cast<spec::admin_opcode>(0xc1))).status(),
              dnr(spec::generic_status::invalid_opcode));
}

TYPED_TEST(admin_custom_table, vendor_opcode_without_customisation_is_invalid_opcode)
{
    TypeParam r;
    r.host.bring_up();
    auto sqe = host_type::command(static_cast<spec::admin_opcode>(0xc0));
    std::vector<std::byte> data;
    EXPECT_EQ(run_with_data(r.host, sqe, 32, data).status(), dnr(spec::generic_status::invalid_opcode));
    EXPECT_TRUE(all_equal(data, fill_pattern));
}

TYPED_TEST(admin_custom_table, replaced_handler_runs_instead_of_the_built_in_one)
{
    rig_for<TypeParam, vendor_traits> r;
    r.host.bring_up();
    replaced_keep_alives = 0;
    const auto result = r.host.admin(host_type::command(spec::admin_opcode::keep_alive));
    ASSERT_EQ(result.status(), spec::status::success());
    EXPECT_EQ(result.cqe.dw0, 0xabcdU);
    EXPECT_EQ(replaced_keep_alives, 1);
    // The built-in handler completes Keep Alive with DW0 0.
    TypeParam plain;
    plain.host.bring_up();
    const auto built_in = plain.host.admin(host_type::command(spec::admin_opcode::keep_alive));
    EXPECT_EQ(built_in.status(), spec::status::success());
    EXPECT_EQ(built_in.cqe.dw0, 0U);
    EXPECT_EQ(replaced_keep_alives, 1);
    // The other built-in handlers are untouched.
    std::vector<std::byte> data;
    ASSERT_EQ(identify(r.host, spec::cns::identify_controller, 0, data).status(), spec::status::success());
    EXPECT_EQ(load<spec::identify_controller>(data).nn, 256U);
}

} // namespace command_sets_admin_test
} // namespace
