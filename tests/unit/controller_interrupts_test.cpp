#include <nvmekit/controller.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "controller_fixture.hpp"

namespace {
namespace controller_interrupts_test {

namespace nt = nvmekit::testing;
namespace spec = nvmekit::spec;
using namespace nvmekit_test;
using namespace std::chrono_literals;

/// The rig with the Set Features of interrupt coalescing.
struct coalescing_rig : rig {
    /// Sets Interrupt Coalescing (08h): THR (0's based) and TIME (100 us units).
    void set_coalescing(std::uint8_t threshold, std::uint8_t time)
    {
        const auto value = spec::interrupt_coalescing{}
                               .with(spec::interrupt_coalescing::thr, threshold)
                               .with(spec::interrupt_coalescing::time, time);
        ASSERT_EQ(
            host.admin(host_type::set_features_command(spec::feature_id::interrupt_coalescing, value.raw))
                .status(),
            spec::status::success());
    }
    void set_coalescing_disabled(std::uint16_t vector, bool disabled)
    {
        const auto value = spec::interrupt_vector_configuration{}
                               .with(spec::interrupt_vector_configuration::iv, vector)
                               .with(spec::interrupt_vector_configuration::cd, disabled);
        ASSERT_EQ(host.admin(host_type::set_features_command(spec::feature_id::interrupt_vector_configuration,
                                                             value.raw))
                      .status(),
                  spec::status::success());
    }
};

/// Brings the controller up with `options`, then disables MSI-X so that it signals through INTx.
void bring_up_with_intx(rig& r, const nt::host_options& options = {.io_queue_pairs = 1})
{
    r.host.bring_up(options);
    r.ctrl.set_msix_control(false, false);
}

// ---- MSI-X ---------------------------------------------------------------------------------------

TEST(controller_msix, admin_completions_raise_vector_0_and_io_cqs_their_vector)
{
    rig r;
    r.host.bring_up({.io_queue_pairs = 3});
    // Identify, Set Features and three Create I/O CQ and SQ: eight admin completions.
    EXPECT_EQ(r.msix.count(0), 8U);
    EXPECT_EQ(r.msix.events().size(), 8U);
    EXPECT_EQ(r.msix.events().front(), (nt::msix_event{0, {host_type::msi_address, 0}}));
    r.msix.clear();
    for (std::uint16_t qid = 1; qid <= 3; ++qid) {
        EXPECT_EQ(r.host.io(qid, read_command()).status(),
                  dnr(spec::generic_status::invalid_namespace_or_format));
    }
    ASSERT_EQ(r.msix.events().size(), 3U);
    for (std::uint16_t qid = 1; qid <= 3; ++qid) {
        EXPECT_EQ(r.msix.events()[qid - 1U], (nt::msix_event{qid, {host_type::msi_address, qid}}));
    }
    EXPECT_EQ(r.pba(), 0U);
}

TEST(controller_bus_master, a_clear_bus_master_enable_holds_every_dma_and_interrupt_until_set)
{
    rig r;
    r.host.bring_up({.io_queue_pairs = 1});
    r.ctrl.poll(); // takes the Asynchronous Event Request bring_up posted
    r.msix.clear();
    const auto posted = r.ctrl.statistics().completions_posted;
    r.ctrl.set_bus_master(false);
    EXPECT_FALSE(r.ctrl.bus_master());
    // The host submits on an I/O queue and the admin queue: nothing is fetched, executed, posted
    // or signalled while Bus Master Enable is clear.
    const auto io_cid = r.host.submit(1, read_command());
    const std::uint64_t buffer = r.host.allocate(4096);
    const auto admin_cid =
        r.host.submit(0, host_type::identify_command(spec::cns::identify_controller, 0, buffer));
    for (int i = 0; i < 5; ++i) {
        EXPECT_EQ(r.ctrl.poll(), 0U);
    }
    EXPECT_FALSE(r.cqe_at(1, 0).phase());
    EXPECT_EQ(r.ctrl.statistics().completions_posted, posted);
    EXPECT_EQ(r.msix.events().size(), 0U);
    EXPECT_EQ(r.ctrl.statistics().dma_errors, 0U);
    EXPECT_TRUE(r.csts().get(spec::csts_register::rdy));
    // Setting it again resumes: both commands run, complete and raise their vectors.
    r.ctrl.set_bus_master(true);
    EXPECT_EQ(r.host.wait_for(1, io_cid).status(), dnr(spec::generic_status::invalid_namespace_or_format));
    EXPECT_TRUE(r.host.wait_for(0, admin_cid).ok());
    EXPECT_EQ(r.msix.count(1), 1U);
    EXPECT_EQ(r.msix.count(0), 1U);
}

TEST(controller_bus_master, a_controller_reset_completes_while_bus_master_enable_is_clear)
{
    rig r;
    r.host.bring_up({.io_queue_pairs = 1});
    r.ctrl.set_bus_master(false);
    static_cast<void>(r.host.submit(1, read_command()));
    r.host.disable(); // CC.EN = 0 and CSTS.RDY = 0: no DMA needed
    EXPECT_FALSE(r.ctrl.submission_queue_exists(1));
    r.ctrl.set_bus_master(true);
    r.host.bring_up({.io_queue_pairs = 1});
    EXPECT_EQ(r.host.io(1, read_command()).status(), dnr(spec::generic_status::invalid_namespace_or_format));
}

TEST(controller_msix, io_cq_on_a_chosen_vector)
{
    rig r;
    r.host.bring_up({.io_queue_pairs = 2});
    r.host.program_msix(64);
    ASSERT_TRUE(r.host.delete_io_sq(2).ok());
    ASSERT_TRUE(r.host.delete_io_cq(2).ok());
    ASSERT_TRUE(r.host.create_io_cq(2, 16, 64, true).ok());
    ASSERT_TRUE(r.host.create_io_sq(2, 2, 16).ok());
    r.msix.clear();
    r.host.io(2, read_command());
    ASSERT_EQ(r.msix.events().size(), 1U);
    EXPECT_EQ(r.msix.events()[0], (nt::msix_event{64, {host_type::msi_address, 64}}));
}

TEST(controller_msix, masked_vector_sets_its_pending_bit_and_fires_on_unmask)
{
    rig r;
    r.host.bring_up({.io_queue_pairs = 2});
    r.msix.clear();
    r.mask_vector(1, true);
    EXPECT_EQ(r.host.io(1, read_command()).status(), dnr(spec::generic_status::invalid_namespace_or_format));
    EXPECT_EQ(r.msix.count(1), 0U);
    EXPECT_EQ(r.pba(), 0x2U);
    EXPECT_EQ(r.ctrl.mmio_read(r.ctrl.msix_pba_offset(), 4), 0x2U);
    EXPECT_TRUE(r.ctrl.msix().pending(1));
    // Another completion while masked: still one pending bit, nothing sent.
    r.host.io(1, read_command());
    EXPECT_EQ(r.msix.count(1), 0U);
    // Other vectors are not affected.
    r.host.io(2, read_command());
    EXPECT_EQ(r.msix.count(2), 1U);
    EXPECT_EQ(r.pba(), 0x2U);

    r.mask_vector(1, false);
    EXPECT_EQ(r.msix.count(1), 1U);
    EXPECT_EQ(r.pba(), 0U);
    // The PBA is read-only.
    const auto errors = r.ctrl.msix().host_error_count();
    r.ctrl.mmio_write(r.ctrl.msix_pba_offset(), 8, 0xff);
    EXPECT_EQ(r.pba(), 0U);
    EXPECT_EQ(r.ctrl.msix().host_error_count() - errors, 1U);
}

TEST(controller_msix, function_mask_holds_every_vector)
{
    rig r;
    r.host.bring_up({.io_queue_pairs = 2});
    r.msix.clear();
    r.ctrl.set_msix_control(true, true);
    r.host.io(1, read_command());
    r.host.io(2, read_command());
    EXPECT_EQ(r.host.admin(get_queues()).status(), spec::status::success());
    EXPECT_TRUE(r.msix.events().empty());
    EXPECT_EQ(r.pba(), 0x7U);
    r.ctrl.set_msix_control(true, false);
    EXPECT_EQ(r.msix.events().size(), 3U);
    EXPECT_EQ(r.msix.count(0), 1U);
    EXPECT_EQ(r.msix.count(1), 1U);
    EXPECT_EQ(r.msix.count(2), 1U);
    EXPECT_EQ(r.pba(), 0U);
}

TEST(controller_msix, polled_queues_raise_nothing)
{
    rig r;
    r.host.bring_up({.io_queue_pairs = 2, .interrupts = false});
    r.msix.clear();
    for (int i = 0; i < 10; ++i) {
        EXPECT_EQ(r.host.io(1 + i % 2, read_command()).status(),
                  dnr(spec::generic_status::invalid_namespace_or_format));
    }
    EXPECT_TRUE(r.msix.events().empty());
    EXPECT_EQ(r.pba(), 0U);
    // The admin CQ keeps its interrupt.
    r.host.admin(get_queues());
    EXPECT_EQ(r.msix.count(0), 1U);
    EXPECT_EQ(r.msix.events().size(), 1U);
}

TEST(controller_msix, one_interrupt_per_poll_per_vector)
{
    rig r;
    r.host.bring_up({.io_queue_pairs = 1});
    r.msix.clear();
    std::vector<std::uint16_t> cids;
    for (int i = 0; i < 5; ++i) {
        cids.push_back(r.host.submit(1, read_command()));
    }
    r.ctrl.poll();
    EXPECT_EQ(r.msix.count(1), 1U);
    for (const auto cid : cids) {
        EXPECT_EQ(r.host.wait_for(1, cid).status(), dnr(spec::generic_status::invalid_namespace_or_format));
    }
    EXPECT_EQ(r.msix.count(1), 1U); // reaping posted nothing new
    EXPECT_EQ(r.msix.events().size(), 1U);
}

TEST(controller_msix, cqs_sharing_a_vector_raise_it_once_per_poll)
{
    rig r;
    r.host.bring_up({.io_queue_pairs = 3});
    ASSERT_TRUE(r.host.delete_io_sq(2).ok());
    ASSERT_TRUE(r.host.delete_io_cq(2).ok());
    ASSERT_TRUE(r.host.create_io_cq(2, 16, 1, true).ok()); // CQ 2 on vector 1, like CQ 1
    ASSERT_TRUE(r.host.create_io_sq(2, 2, 16).ok());
    r.msix.clear();
    r.host.submit(1, read_command());
    r.host.submit(2, read_command());
    r.host.submit(2, read_command());
    r.host.submit(3, read_command());
    r.ctrl.poll();
    EXPECT_EQ(r.msix.count(1), 1U);
    EXPECT_EQ(r.msix.count(3), 1U);
    EXPECT_EQ(r.msix.events().size(), 2U);
}

// ---- Interrupt coalescing -----------------------------------------------------------------------

TEST(controller_coalescing, threshold_aggregates_completions)
{
    coalescing_rig r;
    r.host.bring_up({.io_queue_pairs = 1});
    r.set_coalescing(3, 10); // THR 3: four entries per interrupt; TIME 1 ms
    r.msix.clear();
    for (int round = 0; round < 3; ++round) {
        for (int i = 0; i < 3; ++i) {
            EXPECT_EQ(r.host.io(1, read_command()).status(),
                      dnr(spec::generic_status::invalid_namespace_or_format));
            EXPECT_EQ(r.msix.count(1), static_cast<std::size_t>(round));
        }
        r.host.io(1, read_command());
        EXPECT_EQ(r.msix.count(1), static_cast<std::size_t>(round + 1));
    }
    EXPECT_EQ(r.msix.events().size(), 3U);
}

TEST(controller_coalescing, threshold_counts_entries_posted_in_one_poll)
{
    coalescing_rig r;
    r.host.bring_up({.io_queue_pairs = 1});
    r.set_coalescing(3, 10);
    r.msix.clear();
    std::vector<std::uint16_t> cids;
    for (int i = 0; i < 4; ++i) {
        cids.push_back(r.host.submit(1, read_command()));
    }
    r.ctrl.poll();
    EXPECT_EQ(r.msix.count(1), 1U);
    for (const auto cid : cids) {
        r.host.wait_for(1, cid);
    }
    // Six more in one poll: one interrupt; the two after the fourth are covered by it.
    for (int i = 0; i < 6; ++i) {
        r.host.submit(1, read_command());
    }
    r.ctrl.poll();
    EXPECT_EQ(r.msix.count(1), 2U);
    r.clock.advance(5ms);
    r.ctrl.poll();
    EXPECT_EQ(r.msix.count(1), 2U);
}

TEST(controller_coalescing, time_limits_the_delay)
{
    coalescing_rig r;
    r.host.bring_up({.io_queue_pairs = 1});
    r.set_coalescing(3, 10); // TIME = 10 * 100 us
    r.msix.clear();
    r.host.io(1, read_command());
    EXPECT_EQ(r.msix.count(1), 0U);
    r.clock.advance(999us);
    r.ctrl.poll();
    EXPECT_EQ(r.msix.count(1), 0U);
    r.clock.advance(1us);
    r.ctrl.poll();
    EXPECT_EQ(r.msix.count(1), 1U);
    r.clock.advance(10ms);
    r.ctrl.poll();
    EXPECT_EQ(r.msix.count(1), 1U); // nothing aggregated since
    // Two entries 600 us apart: the deadline runs from the first.
    r.host.io(1, read_command());
    r.clock.advance(600us);
    r.host.io(1, read_command());
    EXPECT_EQ(r.msix.count(1), 1U);
    r.clock.advance(400us);
    r.ctrl.poll();
    EXPECT_EQ(r.msix.count(1), 2U);
}

TEST(controller_coalescing, coalescing_disable_turns_it_off_for_one_vector)
{
    coalescing_rig r;
    r.host.bring_up({.io_queue_pairs = 2});
    r.set_coalescing(3, 255);
    r.set_coalescing_disabled(1, true);
    r.msix.clear();
    for (int i = 0; i < 5; ++i) {
        r.host.io(1, read_command());
        r.host.io(2, read_command());
    }
    EXPECT_EQ(r.msix.count(1), 5U);
    EXPECT_EQ(r.msix.count(2), 1U); // the fourth completion
    r.set_coalescing_disabled(1, false);
    r.msix.clear();
    for (int i = 0; i < 4; ++i) {
        r.host.io(1, read_command());
    }
    EXPECT_EQ(r.msix.count(1), 1U);
}

TEST(controller_coalescing, admin_completions_are_never_coalesced)
{
    coalescing_rig r;
    r.host.bring_up({.io_queue_pairs = 1});
    r.set_coalescing(255, 255);
    r.msix.clear();
    for (int i = 0; i < 5; ++i) {
        EXPECT_EQ(r.host.admin(get_queues()).status(), spec::status::success());
        EXPECT_EQ(r.msix.count(0), static_cast<std::size_t>(i + 1));
    }
}

TEST(controller_coalescing, an_admin_completion_on_a_shared_vector_flushes_the_aggregation)
{
    coalescing_rig r;
    r.host.bring_up({.io_queue_pairs = 2});
    ASSERT_TRUE(r.host.delete_io_sq(2).ok());
    ASSERT_TRUE(r.host.delete_io_cq(2).ok());
    ASSERT_TRUE(r.host.create_io_cq(2, 16, 0, true).ok()); // I/O CQ 2 on vector 0, with the admin CQ
    ASSERT_TRUE(r.host.create_io_sq(2, 2, 16).ok());
    r.set_coalescing(3, 255);
    r.msix.clear();
    r.host.io(2, read_command());
    EXPECT_EQ(r.msix.count(0), 0U);
    r.host.admin(get_queues());
    EXPECT_EQ(r.msix.count(0), 1U);
    r.clock.advance(100ms);
    r.ctrl.poll();
    if (nvmekit_test::threaded_groups_requested()) {
        // Groups on threads of their own aggregate apart from the admin context: the group's
        // aggregation time still ends with its own interrupt (one more than needed, never one
        // less).
        EXPECT_EQ(r.msix.count(0), 2U);
    } else {
        EXPECT_EQ(r.msix.count(0), 1U); // the admin interrupt covered the aggregated entry
    }
}

// ---- INTx --------------------------------------------------------------------------------------

TEST(controller_intx, asserted_while_a_cq_holds_entries)
{
    rig r;
    bring_up_with_intx(r);
    r.msix.clear();
    EXPECT_FALSE(r.msix.intx_level());
    r.host.submit(1, read_command());
    r.ctrl.poll();
    EXPECT_TRUE(r.msix.intx_level());
    r.ctrl.poll();
    EXPECT_TRUE(r.msix.intx_level()); // level triggered: still asserted
    std::vector<nt::completion> reaped;
    r.host.reap(1, reaped); // reads the entry and writes the CQ head doorbell
    ASSERT_EQ(reaped.size(), 1U);
    r.ctrl.poll(); // the controller takes the head
    EXPECT_FALSE(r.msix.intx_level());
    EXPECT_TRUE(r.msix.events().empty());
    EXPECT_EQ(r.msix.intx_transitions(), 2U);
}

TEST(controller_intx, intms_masks_and_intmc_unmasks)
{
    rig r;
    bring_up_with_intx(r);
    r.write32(spec::register_offset::intms, 0x1);
    EXPECT_EQ(r.ctrl.mmio_read(static_cast<std::uint64_t>(spec::register_offset::intmc), 4), 0x1U);
    r.host.submit(1, read_command());
    r.ctrl.poll();
    EXPECT_FALSE(r.msix.intx_level());
    r.write32(spec::register_offset::intmc, 0x1);
    EXPECT_EQ(r.ctrl.mmio_read(static_cast<std::uint64_t>(spec::register_offset::intms), 4), 0U);
    EXPECT_TRUE(r.msix.intx_level());
    r.write32(spec::register_offset::intms, 0x1);
    EXPECT_FALSE(r.msix.intx_level());
    r.write32(spec::register_offset::intmc, 0x1);
    EXPECT_TRUE(r.msix.intx_level());
    r.ring_cq_head(1, 1);
    r.ctrl.poll();
    EXPECT_FALSE(r.msix.intx_level());
}

TEST(controller_intx, admin_cq_asserts_and_polled_queues_do_not)
{
    rig r;
    bring_up_with_intx(r, {.io_queue_pairs = 1, .interrupts = false});
    r.host.submit(1, read_command());
    r.ctrl.poll();
    EXPECT_FALSE(r.msix.intx_level());
    r.host.submit(0, get_queues());
    r.ctrl.poll();
    EXPECT_TRUE(r.msix.intx_level());
}

TEST(controller_intx, deasserted_by_a_reset)
{
    rig r;
    bring_up_with_intx(r);
    r.host.submit(1, read_command());
    r.ctrl.poll();
    ASSERT_TRUE(r.msix.intx_level());
    r.write32(spec::register_offset::cc, 0);
    EXPECT_FALSE(r.msix.intx_level());
}

TEST(controller_intx, deasserted_when_consumed_after_shutdown)
{
    rig r;
    bring_up_with_intx(r);
    r.host.submit(1, read_command());
    r.ctrl.poll();
    ASSERT_TRUE(r.msix.intx_level());
    r.write32(spec::register_offset::cc,
              r.host.cc().with(spec::cc_register::shn, spec::shutdown_notification::normal).raw);
    ASSERT_EQ(r.ctrl.state(), nvmekit::controller_state::shut_down);
    EXPECT_TRUE(r.msix.intx_level());
    r.ring_cq_head(1, 1);
    r.ctrl.poll();
    EXPECT_FALSE(r.msix.intx_level());
}

TEST(controller_intx, nothing_while_msix_is_enabled)
{
    rig r;
    r.host.bring_up({.io_queue_pairs = 1});
    r.host.submit(1, read_command());
    r.ctrl.poll();
    EXPECT_FALSE(r.msix.intx_level());
    EXPECT_EQ(r.msix.intx_transitions(), 0U);
}

} // namespace controller_interrupts_test
} // namespace
