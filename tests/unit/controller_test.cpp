#include <nvmekit/controller.hpp>

#include <array>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <type_traits>

#include <gtest/gtest.h>

#include <nvmekit/backends/ram_backend.hpp>

#include "controller_fixture.hpp"

namespace {

namespace spec = nvmekit::spec;
using namespace nvmekit_test;
using namespace std::chrono_literals;

[[nodiscard]] spec::aqa_register admin_queue_attributes(std::uint16_t asq_entries, std::uint16_t acq_entries)
{
    return spec::aqa_register{}
        .with(spec::aqa_register::asqs, static_cast<std::uint16_t>(asq_entries - 1))
        .with(spec::aqa_register::acqs, static_cast<std::uint16_t>(acq_entries - 1));
}

[[nodiscard]] spec::submission_queue_entry get_features(spec::feature_id fid, spec::feature_select select,
                                                        std::uint32_t cdw11 = 0)
{
    auto sqe = host_type::get_features_command(fid, select);
    sqe.cdw11 = cdw11;
    return sqe;
}

[[nodiscard]] spec::submission_queue_entry set_number_of_queues(std::uint32_t raw, bool save = false)
{
    return host_type::set_features_command(spec::feature_id::number_of_queues, raw, save);
}

// ---- bring-up and registers ---------------------------------------------------------------

TEST(controller_registers, cap_reads_as_two_halves_like_linux)
{
    rig r;
    const auto result = r.host.bring_up();
    const std::uint64_t whole = r.ctrl.mmio_read(0x00, 8);
    EXPECT_EQ(result.cap.raw, whole);
    EXPECT_EQ(r.ctrl.mmio_read(0x00, 4), whole & 0xffff'ffffU);
    EXPECT_EQ(r.ctrl.mmio_read(0x04, 4), whole >> 32);
    const spec::cap_register cap = result.cap;
    EXPECT_EQ(cap.get(cap.mqes), 4095);
    EXPECT_FALSE(cap.get(cap.cqr));
    EXPECT_EQ(cap.get(cap.ams), 0);
    EXPECT_EQ(cap.get(cap.to), 20);
    EXPECT_EQ(cap.get(cap.dstrd), 0);
    EXPECT_TRUE(cap.get(cap.nssrs));
    EXPECT_TRUE(cap.get(cap.css_nvm));
    EXPECT_FALSE(cap.get(cap.css_io_command_sets));
    EXPECT_FALSE(cap.get(cap.css_no_io_command_set));
    EXPECT_EQ(cap.get(cap.mpsmin), 0);
    EXPECT_EQ(cap.get(cap.mpsmax), 4);
    EXPECT_FALSE(cap.get(cap.bps));
    EXPECT_FALSE(cap.get(cap.cmbs));
    EXPECT_FALSE(cap.get(cap.pmrs));
    EXPECT_EQ(r.read32(spec::register_offset::vs), 0x0002'0000U);
    EXPECT_EQ(r.ctrl.registers().host_error_count(), 0U);
}

TEST(controller_registers, cap_reflects_the_configuration)
{
    rig r{{.ready_timeout_500ms = 7, .contiguous_queues_required = true, .subsystem_reset_supported = false}};
    const spec::cap_register cap{r.ctrl.mmio_read(0x00, 8)};
    EXPECT_EQ(cap.get(cap.to), 7);
    EXPECT_TRUE(cap.get(cap.cqr));
    EXPECT_FALSE(cap.get(cap.nssrs));
}

TEST(controller_registers, ready_modes_and_timeouts_are_those_of_a_2_0_controller)
{
    // Ready with media only (Base 2.0 3.1.4.1): CAP.CRMS.CRWMS = 1, CRIMS = 0; CRTO (3.1.4.22)
    // then gives the ready-with-media timeout, CAP.TO, and no ready-independent-of-media one.
    rig r;
    const spec::cap_register cap{r.ctrl.mmio_read(0x00, 8)};
    EXPECT_EQ(cap.get(cap.crms), 0b01);
    EXPECT_EQ(r.read32(static_cast<spec::register_offset>(0x04)) >> 27, 0b01U); // bits 60:59
    EXPECT_EQ(r.read32(spec::register_offset::crto), 20U); // CRWMT = CAP.TO = 20, CRIMT = 0
    const spec::crto_register crto{r.read32(spec::register_offset::crto)};
    EXPECT_EQ(crto.get(crto.crwmt), cap.get(cap.to));
    EXPECT_EQ(crto.get(crto.crimt), 0);

    rig other{{.ready_timeout_500ms = 7}};
    EXPECT_EQ(other.read32(spec::register_offset::crto), 7U);

    // CC.CRIME is read-only 0 without CRIMS: a host that sets it gets ready with media.
    r.program_admin_queues((31U << 16) | 31U, r.host.allocate(4096), r.host.allocate(4096));
    const auto errors = r.ctrl.registers().host_error_count();
    r.write_cc(linux_cc().with(spec::cc_register::crime, true));
    EXPECT_FALSE(r.host.cc().get(spec::cc_register::crime));
    EXPECT_EQ(r.ctrl.registers().host_error_count() - errors, 1U);
    r.poll(5);
    EXPECT_TRUE(r.csts().get(spec::csts_register::rdy));
}

TEST(controller_registers, admin_queue_registers_take_32_bit_halves)
{
    rig r;
    const std::uint64_t asq = 0x1'2345'6000;
    const std::uint64_t acq = 0x9'8765'4000;
    r.write32(spec::register_offset::aqa, admin_queue_attributes(32, 16).raw);
    r.host.write64(spec::register_offset::asq, asq);
    r.host.write64(spec::register_offset::acq, acq);
    EXPECT_EQ(r.read32(spec::register_offset::aqa), 0x000f'001fU);
    EXPECT_EQ(r.ctrl.mmio_read(0x28, 8), asq);
    EXPECT_EQ(r.ctrl.mmio_read(0x28, 4), 0x2345'6000U);
    EXPECT_EQ(r.ctrl.mmio_read(0x2c, 4), 0x1U);
    EXPECT_EQ(r.host.read64(spec::register_offset::acq), acq);
    EXPECT_EQ(r.ctrl.registers().asq().raw, asq);
    EXPECT_EQ(r.ctrl.registers().acq().raw, acq);
    // One 64-bit write works as well.
    r.ctrl.mmio_write(0x30, 8, 0x2'0000'3000);
    EXPECT_EQ(r.ctrl.mmio_read(0x30, 8), 0x2'0000'3000U);
    // A half written alone changes only that half.
    r.ctrl.mmio_write(0x34, 4, 0x5);
    EXPECT_EQ(r.ctrl.mmio_read(0x30, 8), 0x5'0000'3000U);
    EXPECT_EQ(r.ctrl.registers().host_error_count(), 0U);
}

// ---- Identify -------------------------------------------------------------------------------

TEST(controller_identify, identify_controller_reports_what_linux_checks)
{
    rig r;
    const auto result = r.host.bring_up();
    const spec::identify_controller& id = result.identify;
    EXPECT_EQ(id.vid, 0xf0e5);
    EXPECT_EQ(id.ssvid, 0xf0e5);
    EXPECT_EQ(id.serial_number(), "NVMEKIT0001");
    EXPECT_EQ(id.model_number(), "nvmekit emulated controller");
    EXPECT_EQ(id.firmware_revision(), "0.1.0");
    EXPECT_EQ(id.subsystem_nqn(), "nqn.2026-11.io.nvmekit:subsystem0");
    EXPECT_EQ(id.sn[19], ' ');       // space padded
    EXPECT_EQ(id.subnqn[255], '\0'); // NUL padded
    EXPECT_EQ(id.mdts, 5);
    EXPECT_EQ(id.cntlid, 1);
    EXPECT_EQ(id.ver, 0x0002'0000U);
    EXPECT_EQ(id.cntrltype, spec::controller_type::io);
    EXPECT_TRUE(id.oacs.get(spec::admin_command_support::doorbell_buffer_config));
    EXPECT_TRUE(id.oacs.get(spec::admin_command_support::format_nvm));
    EXPECT_TRUE(id.oacs.get(spec::admin_command_support::firmware));
    EXPECT_TRUE(id.oacs.get(spec::admin_command_support::namespace_management));
    // Format NVM, Firmware, Namespace Management, Doorbell Buffer Config and Get LBA Status
    // (bits 1, 2, 3, 8 and 9).
    EXPECT_EQ(id.oacs.raw, 0x030e);
    EXPECT_EQ(id.aerl, 3);
    EXPECT_EQ(id.sqes.raw, 0x66);
    EXPECT_EQ(id.cqes.raw, 0x44);
    EXPECT_EQ(id.nn, 256U);
    const auto expected = r.ctrl.identify_controller_data();
    EXPECT_EQ(std::memcmp(&expected, &id, sizeof id), 0);
}

struct small_traits : test_traits {
    static constexpr nvmekit::limits limits{
        .io_queues = 4, .queue_entries = 64, .mdts = 1, .msix_vectors = 5, .aerl = 7};
};

TEST(controller_identify, identity_and_limits_come_from_configuration)
{
    basic_rig<small_traits> r{{.identity = {.controller_id = 0x1234}},
                              nvmekit_test::memory_size,
                              nvmekit_test::memory_base,
                              {.nqn = "nqn.2014-08.org.example:one",
                               .serial_number = "SN-42",
                               .model_number = "model x",
                               .firmware_revision = "9.9"}};
    const auto result = r.host.bring_up({.io_queue_pairs = 4, .io_entries = 64});
    EXPECT_EQ(result.identify.serial_number(), "SN-42");
    EXPECT_EQ(result.identify.model_number(), "model x");
    EXPECT_EQ(result.identify.firmware_revision(), "9.9");
    EXPECT_EQ(result.identify.subsystem_nqn(), "nqn.2014-08.org.example:one");
    EXPECT_EQ(result.identify.cntlid, 0x1234);
    EXPECT_EQ(result.identify.mdts, 1);
    EXPECT_EQ(result.identify.aerl, 7);
    EXPECT_EQ(result.cap.get(spec::cap_register::mqes), 63);
    EXPECT_EQ(result.io_queue_pairs, 4);
}

TEST(controller_identify, unsupported_cns_is_invalid_field)
{
    rig r;
    r.host.bring_up();
    const std::uint64_t buffer = r.host.allocate(4096);
    const auto nvm_sets = r.host.admin(host_type::identify_command(spec::cns::nvm_set_list, 0, buffer));
    EXPECT_EQ(nvm_sets.status(), dnr(spec::generic_status::invalid_field));
    const auto list = r.host.admin(host_type::identify_command(spec::cns::active_namespace_list, 0, buffer));
    EXPECT_EQ(list.status(), spec::status::success());
}

TEST(controller_identify, identify_data_crosses_into_prp2)
{
    rig r;
    r.host.bring_up();
    const std::uint64_t buffer = r.host.allocate(2 * 4096);
    auto sqe = host_type::identify_command(spec::cns::identify_controller, 0, buffer + 0x800);
    sqe.dptr.prp2 = buffer + 4096;
    EXPECT_EQ(r.host.admin(sqe).status(), spec::status::success());
    const auto id = r.memory.load<spec::identify_controller>(buffer + 0x800);
    EXPECT_EQ(id.serial_number(), "NVMEKIT0001");
    EXPECT_EQ(id.cqes.raw, 0x44);

    sqe.dptr.prp1 = buffer + 0x802; // PRP1 must be dword aligned
    EXPECT_EQ(r.host.admin(sqe).status(), dnr(spec::generic_status::prp_offset_invalid));
    sqe.dptr.prp1 = buffer + 0x800;
    sqe.dptr.prp2 = buffer + 4096 + 0x10; // a later PRP entry must be page aligned
    EXPECT_EQ(r.host.admin(sqe).status(), dnr(spec::generic_status::prp_offset_invalid));
}

// ---- admin command dispatch -------------------------------------------------------------------

TEST(controller_admin, unknown_opcode_and_fused_admin_commands)
{
    rig r;
    r.host.bring_up();
    auto unknown = host_type::command(spec::admin_opcode::identify);
    unknown.cdw0.set(spec::command_dword0::opc, 0xc1);
    EXPECT_EQ(r.host.admin(unknown).status(), dnr(spec::generic_status::invalid_opcode));
    auto fused = get_features(spec::feature_id::number_of_queues, spec::feature_select::current);
    fused.cdw0.set(spec::command_dword0::fuse, spec::fused_operation::first);
    EXPECT_EQ(r.host.admin(fused).status(), dnr(spec::generic_status::invalid_field));
}

// ---- Number of Queues and Get Features SEL -----------------------------------------------------

TEST(controller_features, number_of_queues_grants_the_minimum_of_request_and_limit)
{
    rig r;
    r.admin_only();
    const auto granted = r.host.admin(set_number_of_queues(spec::number_of_queues::from_counts(100, 3).raw));
    EXPECT_EQ(granted.status(), spec::status::success());
    EXPECT_EQ(granted.cqe.dw0, spec::number_of_queues::from_counts(64, 3).raw);
    EXPECT_EQ(granted.cqe.dw0, 0x0002'003fU); // 0-based: 64 SQs, 3 CQs
    const auto current =
        r.host.admin(get_features(spec::feature_id::number_of_queues, spec::feature_select::current));
    EXPECT_EQ(current.status(), spec::status::success());
    EXPECT_EQ(current.cqe.dw0, 0x0002'003fU);
}

TEST(controller_features, number_of_queues_is_set_until_the_first_io_queue_after_reset)
{
    rig r;
    r.admin_only();
    const auto first = r.host.admin(set_number_of_queues(spec::number_of_queues::from_counts(2, 2).raw));
    EXPECT_EQ(first.status(), spec::status::success());
    EXPECT_EQ(first.cqe.dw0, 0x0001'0001U);
    // Before any I/O queue exists it may be set again (FreeBSD's nvme(4) does), and the answer is
    // what was allocated: the allocation does not change between resets (Base 2.0 5.27.1.5).
    const auto second = r.host.admin(set_number_of_queues(spec::number_of_queues::from_counts(4, 4).raw));
    EXPECT_EQ(second.status(), spec::status::success());
    EXPECT_EQ(second.cqe.dw0, 0x0001'0001U);
    const auto current =
        r.host.admin(get_features(spec::feature_id::number_of_queues, spec::feature_select::current));
    EXPECT_EQ(current.cqe.dw0, 0x0001'0001U);

    // Once an I/O queue has been created it is a Command Sequence Error, even after the queue
    // is deleted again, until the next Controller Reset.
    ASSERT_TRUE(r.host.create_io_cq(1, 16, 0, false).ok());
    const auto after_create =
        r.host.admin(set_number_of_queues(spec::number_of_queues::from_counts(1, 1).raw));
    EXPECT_EQ(after_create.status(), dnr(spec::generic_status::command_sequence_error));
    EXPECT_EQ(after_create.cqe.dw0, 0U);
    ASSERT_TRUE(r.host.delete_io_cq(1).ok());
    EXPECT_EQ(r.host.admin(set_number_of_queues(spec::number_of_queues::from_counts(1, 1).raw)).status(),
              dnr(spec::generic_status::command_sequence_error));
    EXPECT_EQ(
        r.host.admin(get_features(spec::feature_id::number_of_queues, spec::feature_select::current)).cqe.dw0,
        0x0001'0001U);

    // A controller reset makes it settable again (Base 2.0 5.27.1.5).
    r.host.disable();
    r.host.enable();
    const auto after_reset =
        r.host.admin(get_features(spec::feature_id::number_of_queues, spec::feature_select::current));
    EXPECT_EQ(after_reset.cqe.dw0, 0x003f'003fU);
    const auto again = r.host.admin(set_number_of_queues(spec::number_of_queues::from_counts(4, 4).raw));
    EXPECT_EQ(again.status(), spec::status::success());
    EXPECT_EQ(again.cqe.dw0, 0x0003'0003U);
}

TEST(controller_features, number_of_queues_65535_is_invalid_field)
{
    rig r;
    r.admin_only();
    EXPECT_EQ(r.host.admin(set_number_of_queues(0x0000'ffff)).status(),
              dnr(spec::generic_status::invalid_field));
    EXPECT_EQ(r.host.admin(set_number_of_queues(0xffff'0000)).status(),
              dnr(spec::generic_status::invalid_field));
    EXPECT_EQ(r.host.admin(set_number_of_queues(0xffff'ffff)).status(),
              dnr(spec::generic_status::invalid_field));
    // The rejected requests did not count as the one setting.
    const auto granted = r.host.admin(set_number_of_queues(0x0000'0000));
    EXPECT_EQ(granted.status(), spec::status::success());
    EXPECT_EQ(granted.cqe.dw0, 0U);
    // 65535 stays invalid after the value is set.
    EXPECT_EQ(r.host.admin(set_number_of_queues(0x0000'ffff)).status(),
              dnr(spec::generic_status::invalid_field));
}

TEST(controller_features, save_is_feature_not_saveable)
{
    rig r;
    r.admin_only();
    const auto saved =
        r.host.admin(set_number_of_queues(spec::number_of_queues::from_counts(2, 2).raw, true));
    EXPECT_EQ(saved.status(), dnr(spec::command_specific_status::feature_not_saveable));
    // Nothing was set.
    const auto granted = r.host.admin(set_number_of_queues(spec::number_of_queues::from_counts(2, 2).raw));
    EXPECT_EQ(granted.status(), spec::status::success());
    const auto coalescing =
        r.host.admin(host_type::set_features_command(spec::feature_id::interrupt_coalescing, 0x0a03, true));
    EXPECT_EQ(coalescing.status(), dnr(spec::command_specific_status::feature_not_saveable));
    const auto current =
        r.host.admin(get_features(spec::feature_id::interrupt_coalescing, spec::feature_select::current));
    EXPECT_EQ(current.cqe.dw0, 0U);
}

TEST(controller_features, get_features_select_values_of_number_of_queues)
{
    rig r;
    r.admin_only();
    const auto get = [&](spec::feature_select select) {
        return r.host.admin(get_features(spec::feature_id::number_of_queues, select));
    };
    EXPECT_EQ(get(spec::feature_select::current).cqe.dw0, 0x003f'003fU);
    r.host.admin(set_number_of_queues(spec::number_of_queues::from_counts(3, 5).raw));
    const auto current = get(spec::feature_select::current);
    const auto default_value = get(spec::feature_select::default_value);
    const auto saved = get(spec::feature_select::saved);
    const auto capabilities = get(spec::feature_select::supported_capabilities);
    for (const auto* c : {&current, &default_value, &saved, &capabilities}) {
        EXPECT_EQ(c->status(), spec::status::success());
    }
    EXPECT_EQ(current.cqe.dw0, 0x0004'0002U);
    EXPECT_EQ(default_value.cqe.dw0, 0x003f'003fU);
    EXPECT_EQ(saved.cqe.dw0, 0x003f'003fU); // not saveable: saved reads as the default
    EXPECT_EQ(capabilities.cqe.dw0,
              spec::feature_capabilities{}.with(spec::feature_capabilities::changeable, true).raw);
    EXPECT_EQ(capabilities.cqe.dw0, 0x4U);
}

TEST(controller_features, get_features_select_values_of_interrupt_features)
{
    rig r;
    r.host.bring_up({.io_queue_pairs = 2});
    EXPECT_TRUE(
        r.host.admin(host_type::set_features_command(spec::feature_id::interrupt_coalescing, 0x0a03)).ok());
    const auto coalescing = [&](spec::feature_select select) {
        return r.host.admin(get_features(spec::feature_id::interrupt_coalescing, select)).cqe.dw0;
    };
    EXPECT_EQ(coalescing(spec::feature_select::current), 0x0a03U);
    EXPECT_EQ(coalescing(spec::feature_select::default_value), 0U);
    EXPECT_EQ(coalescing(spec::feature_select::saved), 0U);
    EXPECT_EQ(coalescing(spec::feature_select::supported_capabilities), 0x4U);

    const spec::interrupt_vector_configuration disable_vector_2 =
        spec::interrupt_vector_configuration{}
            .with(spec::interrupt_vector_configuration::iv, 2)
            .with(spec::interrupt_vector_configuration::cd, true);
    EXPECT_TRUE(r.host
                    .admin(host_type::set_features_command(spec::feature_id::interrupt_vector_configuration,
                                                           disable_vector_2.raw))
                    .ok());
    const auto vector = [&](spec::feature_select select, std::uint32_t iv) {
        return r.host.admin(get_features(spec::feature_id::interrupt_vector_configuration, select, iv));
    };
    EXPECT_EQ(vector(spec::feature_select::current, 2).cqe.dw0, 0x0001'0002U);
    EXPECT_EQ(vector(spec::feature_select::default_value, 2).cqe.dw0, 0x0000'0002U);
    EXPECT_EQ(vector(spec::feature_select::current, 1).cqe.dw0, 0x0000'0001U);
    EXPECT_EQ(vector(spec::feature_select::supported_capabilities, 2).cqe.dw0, 0x4U);
    EXPECT_EQ(vector(spec::feature_select::current, 65).status(), dnr(spec::generic_status::invalid_field));
}

TEST(controller_features, reserved_select_and_unsupported_features_are_invalid_field)
{
    rig r;
    r.host.bring_up();
    auto reserved_select = get_features(spec::feature_id::number_of_queues, spec::feature_select::current);
    reserved_select.cdw10 |= 0b100U << 8; // SEL 100b is reserved
    EXPECT_EQ(r.host.admin(reserved_select).status(), dnr(spec::generic_status::invalid_field));
    EXPECT_EQ(
        r.host.admin(get_features(spec::feature_id::lba_range_type, spec::feature_select::current)).status(),
        dnr(spec::generic_status::invalid_field));
    EXPECT_EQ(
        r.host.admin(host_type::set_features_command(spec::feature_id::autonomous_power_state_transition, 0))
            .status(),
        dnr(spec::generic_status::invalid_field));
    const auto vector_65 =
        spec::interrupt_vector_configuration{}.with(spec::interrupt_vector_configuration::iv, 65);
    EXPECT_EQ(r.host
                  .admin(host_type::set_features_command(spec::feature_id::interrupt_vector_configuration,
                                                         vector_65.raw))
                  .status(),
              dnr(spec::generic_status::invalid_field));
}

// ---- the controller's parts ------------------------------------------------------------------
// Each part is a base of the controller (CRTP, no virtual call) owning its data; these check
// what each part owns through the controller's public API.

using controller_type = nvmekit::controller<test_traits>;
static_assert(
    std::is_base_of_v<nvmekit::transport::message_queues<controller_type, test_traits>, controller_type>);
static_assert(
    std::is_base_of_v<nvmekit::detail::group_processing<controller_type, test_traits>, controller_type>);
static_assert(std::is_base_of_v<nvmekit::detail::queue_state<controller_type, test_traits>, controller_type>);
static_assert(
    std::is_base_of_v<nvmekit::detail::introspection<controller_type, test_traits>, controller_type>);
static_assert(
    std::is_base_of_v<nvmekit::detail::admin_context<controller_type, test_traits>, controller_type>);
static_assert(!std::is_polymorphic_v<controller_type>, "the parts are composed without virtual calls");

TEST(controller_parts, queue_state_allows_the_configured_queues_until_number_of_queues_is_set)
{
    rig r{{.io_queues = 8}};
    r.admin_only();
    EXPECT_EQ(r.ctrl.allowed_submission_queues(), 8U);
    EXPECT_EQ(r.ctrl.allowed_completion_queues(), 8U);
    EXPECT_FALSE(r.ctrl.granted_queues().has_value());
    EXPECT_FALSE(r.ctrl.io_queue_created());
    EXPECT_TRUE(r.ctrl.submission_queue_exists(0));
    EXPECT_FALSE(r.ctrl.submission_queue_exists(1));
    EXPECT_FALSE(r.ctrl.submission_queue_exists(test_traits::limits.io_queues + 1U)); // beyond the table
    const auto granted = r.host.admin(set_number_of_queues(spec::number_of_queues::from_counts(3, 2).raw));
    ASSERT_TRUE(granted.ok());
    EXPECT_EQ(r.ctrl.allowed_submission_queues(), 3U);
    EXPECT_EQ(r.ctrl.allowed_completion_queues(), 2U);
    EXPECT_EQ(r.ctrl.max_io_queues(), 8U);
}

TEST(controller_parts, group_processing_places_queues_in_groups_and_runs_a_pause_around_a_call)
{
    rig r{{.poll_groups = 2}};
    r.admin_only(4);
    EXPECT_EQ(r.ctrl.poll_group_count(), 2U);
    EXPECT_FALSE(r.ctrl.completion_queue_group(0).has_value()); // the admin context's
    EXPECT_FALSE(r.ctrl.completion_queue_group(1).has_value()); // not created yet
    EXPECT_EQ(r.ctrl.with_groups_paused([] { return 7; }), 7);
    EXPECT_EQ(r.ctrl.requests_in_use(), 0U);
}

TEST(controller_parts, introspection_counts_the_admin_commands_and_reports_the_state)
{
    rig r;
    r.admin_only();
    EXPECT_EQ(r.ctrl.state(), nvmekit::controller_state::ready);
    const auto before = r.ctrl.statistics().commands;
    ASSERT_TRUE(
        r.host.admin(get_features(spec::feature_id::number_of_queues, spec::feature_select::current)).ok());
    EXPECT_EQ(r.ctrl.statistics().commands, before + 1U);
    r.ctrl.set_temperature(350);
    EXPECT_EQ(r.ctrl.temperature(), 350U);
}

TEST(controller_parts, admin_context_reports_a_discovery_log_change_only_when_the_host_enabled_it)
{
    rig r;
    r.admin_only();
    EXPECT_EQ(r.ctrl.memory_page_size(), 4096U);
    EXPECT_EQ(r.ctrl.admin_buffer().size(), 16384U);
    EXPECT_EQ(r.ctrl.log_buffer().size(), r.ctrl.max_transfer_bytes());
    EXPECT_FALSE(r.ctrl.report_discovery_log_change()); // Discovery Log Page Change Notices off
}

TEST(controller_parts, message_queues_are_refused_to_a_controller_already_enabled_over_pcie)
{
    rig r;
    r.admin_only();
    EXPECT_FALSE(r.ctrl.message_based());
    EXPECT_EQ(r.ctrl.connect_admin_queue(32), dnr(spec::generic_status::command_sequence_error));
    EXPECT_EQ(r.ctrl.connect_io_queue(1, 32), dnr(spec::generic_status::command_sequence_error));
    EXPECT_EQ(r.ctrl.property_read(0x14, 4), std::optional<std::uint64_t>{r.ctrl.registers().cc().raw});
    EXPECT_FALSE(r.ctrl.submit(1, spec::submission_queue_entry{})); // no such message-based queue
}

} // namespace

// ---- run-time caps ------------------------------------------------------------------------------

TEST(controller_config_caps, caps_below_the_limits_change_what_the_host_is_offered)
{
    rig r{{.io_queues = 2, .queue_entries = 64, .mdts = 2}};
    r.subsystem.add_namespace(nvmekit::ram_backend{1 << 20});
    const auto result = r.host.bring_up({.io_queue_pairs = 4, .io_entries = 64});
    EXPECT_EQ(result.cap.get(spec::cap_register::mqes), 63U);
    EXPECT_EQ(result.identify.mdts, 2U);
    EXPECT_EQ(result.submission_queues_granted, 2U); // asked for 4
    EXPECT_EQ(result.io_queue_pairs, 2U);
    // More queues than granted, or deeper than MQES, are refused.
    EXPECT_EQ(r.host.create_io_cq(3, 16, 3, true).status(),
              dnr(spec::command_specific_status::invalid_queue_identifier));
    ASSERT_TRUE(r.host.delete_io_sq(2).ok());
    ASSERT_TRUE(r.host.delete_io_cq(2).ok());
    EXPECT_EQ(r.host.create_io_cq(2, 65, 2, true).status(),
              dnr(spec::command_specific_status::invalid_queue_size));
    // MDTS 2: 16 KiB moves, 32 KiB is Invalid Field.
    const auto buffer = r.host.allocate(32768);
    auto read = host_type::lba_command(spec::nvm_opcode::read, 1, 0, 32);
    read.dptr = r.host.build_prps(buffer, 16384);
    EXPECT_EQ(r.host.io(1, read).status(), spec::status::success());
    read = host_type::lba_command(spec::nvm_opcode::read, 1, 0, 64);
    read.dptr = r.host.build_prps(buffer, 32768);
    EXPECT_EQ(r.host.io(1, read).status(), dnr(spec::generic_status::invalid_field));
}

TEST(controller_config_caps, caps_above_the_limits_are_refused_at_construction)
{
    EXPECT_THROW(rig({.io_queues = 65}), std::invalid_argument);
    EXPECT_THROW(rig({.queue_entries = 1}), std::invalid_argument);
    EXPECT_THROW(rig({.queue_entries = 4097}), std::invalid_argument);
    EXPECT_THROW(rig({.mdts = 6}), std::invalid_argument);
}
