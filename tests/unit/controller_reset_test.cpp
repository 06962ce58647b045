#include <nvmekit/controller.hpp>

#include <chrono>
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "controller_fixture.hpp"

namespace {
namespace controller_reset_test {

namespace nt = nvmekit::testing;
namespace spec = nvmekit::spec;
using nvmekit::controller_state;
using namespace nvmekit_test;
using namespace std::chrono_literals;

[[nodiscard]] spec::csts_register shutdown_status(spec::shutdown_status status)
{
    return ready_status().with(spec::csts_register::shst, status);
}

// The tests driven through BAR0 run over every PCIe rig (NVMEKIT_TEST_SUITE_OVER_PCIE): in process
// with synchronous and with asynchronous DMA, and in the build with the SystemC rigs over
// nvme_device under TLM, loosely and approximately timed (tests/CMakeLists.txt). `r.step()` is one
// poll of the controller, or the simulation caught up with the rig's clock.
NVMEKIT_TEST_SUITE_OVER_PCIE(controller_reset);
NVMEKIT_TEST_SUITE_OVER_PCIE(controller_shutdown);
NVMEKIT_TEST_SUITE_OVER_PCIE(controller_nssr);
NVMEKIT_TEST_SUITE_OVER_PCIE(controller_flr);
NVMEKIT_TEST_SUITE_OVER_PCIE(controller_fatal);

// ---- Controller Reset (CC.EN 1 -> 0) ----------------------------------------------------------

TYPED_TEST(controller_reset, no_completion_is_posted_once_rdy_reads_0)
{
    TypeParam r;
    r.host.bring_up({.io_queue_pairs = 2});
    const std::uint64_t io_cq = r.host.completion_entry_address(1, 0);
    const std::uint64_t admin_cq = r.host.completion_entry_address(0, 0);
    const auto io_before = r.snapshot(io_cq, 256 * 16);
    const auto admin_before = r.snapshot(admin_cq, 32 * 16);
    for (int i = 0; i < 5; ++i) {
        r.host.submit(1, read_command());
        r.host.submit(2, read_command());
    }
    r.host.submit(0, get_queues());
    // The doorbells were written; the controller has not polled. Now the host resets it.
    r.write_cc(r.host.cc().with(spec::cc_register::en, false));
    EXPECT_EQ(r.csts().raw, 0U);
    EXPECT_EQ(r.ctrl.state(), controller_state::disabled);
    EXPECT_EQ(r.ctrl.requests_in_use(), 0U);
    r.poll(100);
    EXPECT_EQ(r.snapshot(io_cq, 256 * 16), io_before);
    EXPECT_EQ(r.snapshot(admin_cq, 32 * 16), admin_before);
    // bring_up's six admin commands; its Asynchronous Event Request was never fetched.
    EXPECT_EQ(r.ctrl.statistics().commands, 6U);
    EXPECT_EQ(r.csts().raw, 0U);
}

TYPED_TEST(controller_reset, in_flight_and_held_completions_are_dropped)
{
    TypeParam r;
    r.host.bring_up();
    // A CQ of 2 entries with six completions: one posted, five held.
    ASSERT_TRUE(r.host.delete_io_sq(1).ok());
    ASSERT_TRUE(r.host.delete_io_cq(1).ok());
    ASSERT_TRUE(r.host.create_io_cq(1, 2, 1, true).ok());
    ASSERT_TRUE(r.host.create_io_sq(1, 1, 8).ok());
    const std::uint64_t io_cq = r.host.completion_entry_address(1, 0);
    for (int i = 0; i < 6; ++i) {
        r.host.submit(1, read_command());
    }
    r.step();
    EXPECT_EQ(r.ctrl.requests_in_use(), 5U);
    const auto io_before = r.snapshot(io_cq, 2 * 16);
    r.write_cc(r.host.cc().with(spec::cc_register::en, false));
    EXPECT_EQ(r.ctrl.requests_in_use(), 0U);
    EXPECT_FALSE(r.ctrl.submission_queue_exists(1));
    EXPECT_FALSE(r.ctrl.completion_queue_exists(1));
    // The host consumes the one posted entry: the doorbell reaches a controller with no queue.
    r.mmio_write(spec::cq_head_doorbell_offset(1, 0), 4, 1);
    r.poll(50);
    EXPECT_EQ(r.snapshot(io_cq, 2 * 16), io_before);
}

TYPED_TEST(controller_reset, admin_queue_registers_are_kept_and_io_queues_deleted)
{
    TypeParam r;
    r.host.bring_up({.io_queue_pairs = 2});
    const auto aqa = r.read32(spec::register_offset::aqa);
    const auto asq = r.host.read64(spec::register_offset::asq);
    const auto acq = r.host.read64(spec::register_offset::acq);
    ASSERT_TRUE(
        r.host.admin(host_type::set_features_command(spec::feature_id::interrupt_coalescing, 0x0a03)).ok());
    r.write32(spec::register_offset::intms, 0x1);
    r.host.disable();
    EXPECT_EQ(r.read32(spec::register_offset::aqa), aqa);
    EXPECT_EQ(r.host.read64(spec::register_offset::asq), asq);
    EXPECT_EQ(r.host.read64(spec::register_offset::acq), acq);
    EXPECT_EQ(r.read32(spec::register_offset::cc), 0U);
    EXPECT_EQ(r.read32(spec::register_offset::intms), 0U);
    for (std::uint16_t qid = 0; qid <= 2; ++qid) {
        EXPECT_FALSE(r.ctrl.submission_queue_exists(qid));
        EXPECT_FALSE(r.ctrl.completion_queue_exists(qid));
    }
    EXPECT_EQ(r.ctrl.requests_in_use(), 0U);

    // Enabling again from the kept registers: features are back to their defaults and
    // Number of Queues may be set again.
    r.host.enable();
    EXPECT_EQ(r.host
                  .admin(host_type::get_features_command(spec::feature_id::interrupt_coalescing,
                                                         spec::feature_select::current))
                  .cqe.dw0,
              0U);
    const auto queues = r.host.admin(host_type::set_features_command(
        spec::feature_id::number_of_queues, spec::number_of_queues::from_counts(2, 2).raw));
    EXPECT_EQ(queues.status(), spec::status::success());
    EXPECT_EQ(queues.cqe.dw0, 0x0001'0001U);

    // The I/O queues are gone: a doorbell of one is a write to an invalid doorbell register,
    // and creating the same identifier succeeds.
    const auto event = r.host.submit(0, host_type::async_event_request_command());
    r.step();
    r.mmio_write(spec::sq_tail_doorbell_offset(1, 0), 4, 1);
    const auto completion = r.host.wait_for(0, event);
    EXPECT_EQ(completion.cqe.dw0, 0x0001'0000U);
    EXPECT_TRUE(r.host.create_io_cq(1, 16, 1, true).ok());
    EXPECT_TRUE(r.host.create_io_sq(1, 1, 16).ok());
    EXPECT_EQ(r.host.io(1, read_command()).status(), dnr(spec::generic_status::invalid_namespace_or_format));
}

TYPED_TEST(controller_reset, doorbells_while_disabled_are_host_errors)
{
    TypeParam r;
    r.host.bring_up();
    r.host.disable();
    const auto errors = r.ctrl.statistics().host_protocol_errors;
    const auto commands = r.ctrl.statistics().commands; // bring_up's
    r.mmio_write(spec::sq_tail_doorbell_offset(0, 0), 4, 1);
    r.mmio_write(spec::cq_head_doorbell_offset(1, 0), 4, 1);
    r.step();
    EXPECT_EQ(r.ctrl.statistics().host_protocol_errors - errors, 2U);
    EXPECT_EQ(r.ctrl.statistics().commands, commands); // nothing since
    // The stale admin tail is gone: after enabling, the admin queue starts empty.
    r.host.enable();
    EXPECT_EQ(r.host.admin(get_queues()).status(), spec::status::success());
    EXPECT_EQ(r.ctrl.statistics().commands, commands + 1);
}

TYPED_TEST(controller_reset, doorbells_written_before_a_reset_are_forgotten)
{
    TypeParam r;
    r.host.bring_up();
    r.step();                                                   // takes bring_up's Asynchronous Event Request
    r.mmio_write(spec::sq_tail_doorbell_offset(100, 0), 4, 1);  // beyond every queue
    r.mmio_write(spec::sq_tail_doorbell_offset(5, 0), 4, 1);    // a queue never created
    r.mmio_write(spec::sq_tail_doorbell_offset(1, 0), 4, 999);  // an invalid value
    r.write_cc(r.host.cc().with(spec::cc_register::en, false)); // before any poll
    r.host.enable();
    r.host.submit(0, host_type::async_event_request_command());
    r.poll(10);
    std::vector<nt::completion> reaped;
    r.host.reap(0, reaped);
    EXPECT_TRUE(reaped.empty());
    EXPECT_EQ(r.ctrl.statistics().invalid_doorbells, 0U);
}

// ---- Shutdown --------------------------------------------------------------------------------

TYPED_TEST(controller_shutdown, normal_shutdown_completes)
{
    TypeParam r;
    r.host.bring_up({.io_queue_pairs = 2});
    r.host.shut_down();
    // Nothing to flush: SHST 01b is passed within the CC write, so the host reads 10b at once.
    EXPECT_EQ(r.csts().raw, shutdown_status(spec::shutdown_status::complete).raw);
    EXPECT_EQ(r.host.cc().get(spec::cc_register::shn), spec::shutdown_notification::normal);
    EXPECT_EQ(r.ctrl.state(), controller_state::shut_down);
    EXPECT_FALSE(r.ctrl.submission_queue_exists(1));
    EXPECT_FALSE(r.ctrl.completion_queue_exists(1));
}

TYPED_TEST(controller_shutdown, abrupt_shutdown_completes)
{
    TypeParam r;
    r.host.bring_up();
    r.write_cc(r.host.cc().with(spec::cc_register::shn, spec::shutdown_notification::abrupt));
    EXPECT_EQ(r.csts().raw, shutdown_status(spec::shutdown_status::complete).raw);
    EXPECT_EQ(r.ctrl.state(), controller_state::shut_down);
    r.poll(5);
    EXPECT_EQ(r.csts().raw, shutdown_status(spec::shutdown_status::complete).raw);
}

TYPED_TEST(controller_shutdown, commands_are_refused_until_a_controller_reset)
{
    TypeParam r;
    r.host.bring_up({.io_queue_pairs = 1, .max_polls = 50});
    r.host.shut_down();
    const auto errors = r.ctrl.statistics().host_protocol_errors;
    // Writing CC again with EN = 1 does not restart a shut down controller.
    r.host.enable();
    EXPECT_EQ(r.ctrl.state(), controller_state::shut_down);
    EXPECT_EQ(r.csts().raw, shutdown_status(spec::shutdown_status::complete).raw);
    EXPECT_THROW(static_cast<void>(r.host.admin(get_queues())), nt::host_error);
    EXPECT_EQ(r.ctrl.statistics().host_protocol_errors - errors, 1U); // the admin SQ doorbell
    // A second shutdown notification is a protocol error too.
    r.write_cc(r.host.cc().with(spec::cc_register::shn, spec::shutdown_notification::abrupt));
    EXPECT_EQ(r.ctrl.statistics().host_protocol_errors - errors, 2U);
    EXPECT_EQ(r.ctrl.state(), controller_state::shut_down);

    // CC.EN = 0 is the reset that allows enabling again.
    r.host.disable();
    EXPECT_EQ(r.csts().raw, 0U);
    r.host.enable();
    EXPECT_EQ(r.csts().raw, ready_status().raw);
    EXPECT_EQ(r.host.admin(get_queues()).status(), spec::status::success());
}

TYPED_TEST(controller_shutdown, shutdown_before_ready_replaces_the_bring_up)
{
    TypeParam r{{.ready_delay = 10ms}};
    const std::uint64_t asq = r.host.allocate(4096);
    const std::uint64_t acq = r.host.allocate(4096);
    r.program_admin_queues(0x001f'001f, asq, acq);
    const auto cc = linux_cc();
    r.write_cc(cc);
    EXPECT_EQ(r.ctrl.state(), controller_state::enabling);
    r.write_cc(cc.with(spec::cc_register::shn, spec::shutdown_notification::normal));
    EXPECT_EQ(r.ctrl.state(), controller_state::shut_down);
    r.clock.advance(20ms);
    r.step();
    EXPECT_EQ(r.csts().raw,
              spec::csts_register{}.with(spec::csts_register::shst, spec::shutdown_status::complete).raw);
}

// ---- NVM Subsystem Reset ------------------------------------------------------------------------

TYPED_TEST(controller_nssr, only_the_nvme_signature_resets)
{
    TypeParam r;
    r.host.bring_up();
    for (const std::uint32_t value : {0u, 0x4e564d64u, 0x654d564eu, 0xffff'ffffu}) {
        r.write32(spec::register_offset::nssr, value);
        r.step();
        EXPECT_EQ(r.csts().raw, ready_status().raw);
        EXPECT_EQ(r.ctrl.state(), controller_state::ready);
    }
    EXPECT_EQ(r.read32(spec::register_offset::nssr), 0U);
    EXPECT_EQ(r.host.admin(get_queues()).status(), spec::status::success());

    r.write32(spec::register_offset::nssr, spec::nvm_subsystem_reset_value);
    EXPECT_EQ(r.csts().raw, spec::csts_register{}.with(spec::csts_register::nssro, true).raw);
    EXPECT_EQ(r.ctrl.state(), controller_state::disabled);
    EXPECT_FALSE(r.ctrl.submission_queue_exists(1));
    EXPECT_FALSE(r.ctrl.submission_queue_exists(0));
    EXPECT_EQ(r.ctrl.requests_in_use(), 0U);
    // Everything a power-on reset does: the admin queue registers are cleared too.
    EXPECT_EQ(r.read32(spec::register_offset::aqa), 0U);
    EXPECT_EQ(r.host.read64(spec::register_offset::asq), 0U);
    EXPECT_EQ(r.read32(spec::register_offset::cc), 0U);
}

TYPED_TEST(controller_nssr, nssro_survives_a_controller_reset_and_is_write_1_to_clear)
{
    TypeParam r;
    r.host.bring_up();
    r.write32(spec::register_offset::nssr, spec::nvm_subsystem_reset_value);
    r.host.bring_up(); // disables (a controller reset) and enables again
    EXPECT_EQ(r.csts().raw, ready_status().with(spec::csts_register::nssro, true).raw);
    r.write32(spec::register_offset::csts, 0);
    EXPECT_TRUE(r.csts().get(spec::csts_register::nssro));
    r.write32(spec::register_offset::csts, 0x1); // RDY is read-only
    EXPECT_EQ(r.csts().raw, ready_status().with(spec::csts_register::nssro, true).raw);
    r.write32(spec::register_offset::csts, 0x10);
    EXPECT_EQ(r.csts().raw, ready_status().raw);
    r.write32(spec::register_offset::csts, 0x10);
    EXPECT_EQ(r.csts().raw, ready_status().raw);
}

TYPED_TEST(controller_nssr, ignored_when_not_supported)
{
    TypeParam r{{.subsystem_reset_supported = false}};
    r.host.bring_up();
    const auto errors = r.ctrl.registers().host_error_count();
    r.write32(spec::register_offset::nssr, spec::nvm_subsystem_reset_value);
    r.step();
    EXPECT_EQ(r.csts().raw, ready_status().raw);
    EXPECT_EQ(r.ctrl.state(), controller_state::ready);
    EXPECT_EQ(r.ctrl.registers().host_error_count() - errors, 1U);
}

// ---- Function Level Reset -----------------------------------------------------------------------

TYPED_TEST(controller_flr, disables_the_controller_and_resets_msix)
{
    TypeParam r;
    r.host.bring_up({.io_queue_pairs = 2});
    ASSERT_FALSE(r.ctrl.msix().masked(1));
    // Leave a pending bit behind: mask vector 1 and complete a command on CQ 1.
    const std::uint64_t table = r.ctrl.msix_table_offset();
    r.mask_vector(1, true);
    r.host.submit(1, read_command());
    r.poll(5);
    std::vector<nt::completion> reaped;
    r.host.reap(1, reaped); // without waiting for the masked vector
    ASSERT_EQ(reaped.size(), 1U);
    EXPECT_EQ(reaped[0].status(), dnr(spec::generic_status::invalid_namespace_or_format));
    ASSERT_EQ(r.pba(), 0x2U);

    r.function_level_reset();
    EXPECT_EQ(r.csts().raw, 0U);
    EXPECT_EQ(r.ctrl.state(), controller_state::disabled);
    EXPECT_FALSE(r.ctrl.submission_queue_exists(0));
    EXPECT_FALSE(r.ctrl.completion_queue_exists(1));
    EXPECT_EQ(r.read32(spec::register_offset::aqa), 0U);
    EXPECT_FALSE(r.ctrl.msix().enabled());
    for (std::uint16_t vector = 0; vector < r.ctrl.msix().vectors(); ++vector) {
        const std::uint64_t entry = table + 16U * vector;
        ASSERT_EQ(r.mmio_read(entry, 8), 0U) << "vector " << vector;
        ASSERT_EQ(r.mmio_read(entry + 8, 4), 0U) << "vector " << vector;
        ASSERT_EQ(r.mmio_read(entry + 12, 4), 1U) << "vector " << vector; // masked
    }
    EXPECT_EQ(r.pba(), 0U);

    // The host brings the function up again from scratch.
    r.msix.clear();
    r.host.bring_up({.io_queue_pairs = 2});
    EXPECT_EQ(r.host.io(2, read_command()).status(), dnr(spec::generic_status::invalid_namespace_or_format));
    EXPECT_EQ(r.msix.count(2), 1U);
}

TYPED_TEST(controller_flr, features_return_to_defaults)
{
    TypeParam r;
    r.host.bring_up();
    ASSERT_TRUE(
        r.host.admin(host_type::set_features_command(spec::feature_id::interrupt_coalescing, 0x0a03)).ok());
    r.function_level_reset();
    r.host.bring_up({.io_queue_pairs = 3});
    EXPECT_EQ(r.host
                  .admin(host_type::get_features_command(spec::feature_id::interrupt_coalescing,
                                                         spec::feature_select::current))
                  .cqe.dw0,
              0U);
}

// ---- Fatal errors ---------------------------------------------------------------------------------

TYPED_TEST(controller_fatal, fatal_error_sets_cfs_until_a_reset)
{
    TypeParam r;
    r.host.bring_up({.io_queue_pairs = 1, .max_polls = 50});
    r.ctrl.fatal_error();
    EXPECT_EQ(r.csts().raw, ready_status().with(spec::csts_register::cfs, true).raw);
    EXPECT_EQ(r.ctrl.state(), controller_state::failed);
    EXPECT_THROW(static_cast<void>(r.host.io(1, read_command())), nt::host_error);
    r.ctrl.fatal_error(); // a second one changes nothing and is not the host's fault
    const auto errors = r.ctrl.statistics().host_protocol_errors;
    EXPECT_EQ(r.ctrl.state(), controller_state::failed);
    // A shutdown notification while failed is refused.
    r.write_cc(r.host.cc().with(spec::cc_register::shn, spec::shutdown_notification::normal));
    EXPECT_EQ(r.ctrl.statistics().host_protocol_errors - errors, 1U);
    r.host.disable();
    EXPECT_EQ(r.csts().raw, 0U);
    r.host.bring_up();
    EXPECT_EQ(r.csts().raw, ready_status().raw);
    EXPECT_EQ(r.host.io(1, read_command()).status(), dnr(spec::generic_status::invalid_namespace_or_format));
}

/// A controller whose DMA goes through a recording_dma over the host's memory.
using faulty_rig = basic_rig<recording_dma_traits>;

TEST(controller_fatal, admin_sq_fetch_failure_sets_cfs_and_reset_recovers)
{
    faulty_rig r;
    r.host.bring_up({.io_queue_pairs = 1, .max_polls = 50});
    const std::uint64_t asq = r.host.read64(spec::register_offset::asq);
    const std::uint64_t acq = r.host.completion_entry_address(0, 0);
    const auto admin_cq = r.snapshot(acq, 32 * 16);
    r.dma.fail_range(asq, 32 * 64, nt::access_kind::read);
    const auto dma_errors = r.ctrl.statistics().dma_errors;
    r.host.submit(0, get_queues());
    r.ctrl.poll();
    EXPECT_TRUE(r.host.csts().get(spec::csts_register::cfs));
    EXPECT_EQ(r.ctrl.state(), controller_state::failed);
    EXPECT_EQ(r.ctrl.statistics().dma_errors - dma_errors, 1U);
    for (int i = 0; i < 10; ++i) {
        r.ctrl.poll();
    }
    EXPECT_EQ(r.snapshot(acq, 32 * 16), admin_cq);

    r.dma.clear_faults();
    r.host.bring_up();
    EXPECT_EQ(r.host.csts().raw, ready_status().raw);
    EXPECT_EQ(r.host.admin(get_queues()).status(), spec::status::success());
}

TEST(controller_fatal, io_sq_fetch_failure_sets_cfs)
{
    faulty_rig r;
    r.host.bring_up({.io_queue_pairs = 2, .max_polls = 50});
    r.dma.fail_range(r.host.submission_entry_address(2, 0), 256 * 64, nt::access_kind::read);
    EXPECT_EQ(r.host.io(1, read_command()).status(), dnr(spec::generic_status::invalid_namespace_or_format));
    EXPECT_THROW(static_cast<void>(r.host.io(2, read_command())), nt::host_error);
    EXPECT_EQ(r.host.csts().raw, ready_status().with(spec::csts_register::cfs, true).raw);
    r.dma.clear_faults();
    r.host.bring_up({.io_queue_pairs = 2});
    EXPECT_EQ(r.host.io(2, read_command()).status(), dnr(spec::generic_status::invalid_namespace_or_format));
}

TEST(controller_fatal, cq_post_failure_sets_cfs)
{
    faulty_rig r;
    r.host.bring_up({.io_queue_pairs = 1, .max_polls = 50});
    r.dma.fail_range(r.host.completion_entry_address(1, 0), 256 * 16, nt::access_kind::write);
    EXPECT_THROW(static_cast<void>(r.host.io(1, read_command())), nt::host_error);
    EXPECT_EQ(r.host.csts().raw, ready_status().with(spec::csts_register::cfs, true).raw);
    r.host.disable();
    EXPECT_EQ(r.ctrl.requests_in_use(), 0U);
    r.dma.clear_faults();
    r.host.bring_up();
    EXPECT_EQ(r.host.io(1, read_command()).status(), dnr(spec::generic_status::invalid_namespace_or_format));
}

} // namespace controller_reset_test
} // namespace
