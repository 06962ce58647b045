#include <nvmekit/controller.hpp>

#include <array>
#include <chrono>
#include <cstdint>

#include <gtest/gtest.h>

#include "controller_fixture.hpp"

// Bringing the controller up through BAR0: CC.EN and CSTS.RDY, the ready delay, the enable checks
// and the recovery from a failed enable. Every test runs over every PCIe rig
// (NVMEKIT_TEST_SUITE_OVER_PCIE): in process with synchronous and with asynchronous DMA, and in the
// build with the SystemC rigs over nvme_device under TLM, loosely and approximately timed
// (tests/CMakeLists.txt). `r.step()` is one poll of the controller, or the simulation caught up
// with the rig's clock.

namespace {
namespace controller_bring_up_test {

namespace spec = nvmekit::spec;
using namespace nvmekit_test;
using namespace std::chrono_literals;

NVMEKIT_TEST_SUITE_OVER_PCIE(controller_bring_up);

[[nodiscard]] spec::aqa_register admin_queue_attributes(std::uint16_t asq_entries, std::uint16_t acq_entries)
{
    return spec::aqa_register{}
        .with(spec::aqa_register::asqs, static_cast<std::uint16_t>(asq_entries - 1))
        .with(spec::aqa_register::acqs, static_cast<std::uint16_t>(acq_entries - 1));
}

[[nodiscard]] spec::submission_queue_entry set_number_of_queues(std::uint32_t raw)
{
    return host_type::set_features_command(spec::feature_id::number_of_queues, raw);
}

TYPED_TEST(controller_bring_up, bring_up_programs_admin_queues_above_4_gib)
{
    TypeParam r;
    r.host.bring_up();
    EXPECT_EQ(r.mmio_read(0x2c, 4), memory_base >> 32);
    EXPECT_EQ(r.mmio_read(0x34, 4), memory_base >> 32);
    EXPECT_EQ(r.read32(spec::register_offset::aqa), admin_queue_attributes(32, 32).raw);
    EXPECT_EQ(r.ctrl.state(), nvmekit::controller_state::ready);
}

TYPED_TEST(controller_bring_up, rdy_follows_cc_en)
{
    TypeParam r;
    const std::uint64_t asq = r.host.allocate(4096);
    const std::uint64_t acq = r.host.allocate(4096);
    r.program_admin_queues(admin_queue_attributes(32, 32).raw, asq, acq);
    EXPECT_EQ(r.csts().raw, 0U);
    EXPECT_EQ(r.ctrl.state(), nvmekit::controller_state::disabled);
    r.write32(spec::register_offset::cc, linux_cc().raw);
    EXPECT_EQ(r.read32(spec::register_offset::cc), linux_cc().raw);
    EXPECT_EQ(r.csts().raw, ready_status().raw);
    EXPECT_EQ(r.ctrl.state(), nvmekit::controller_state::ready);
    EXPECT_TRUE(r.ctrl.submission_queue_exists(0));
    EXPECT_TRUE(r.ctrl.completion_queue_exists(0));
    r.write32(spec::register_offset::cc, linux_cc().with(spec::cc_register::en, false).raw);
    EXPECT_EQ(r.csts().raw, 0U);
    EXPECT_EQ(r.read32(spec::register_offset::cc), 0U);
    EXPECT_FALSE(r.ctrl.submission_queue_exists(0));
    EXPECT_FALSE(r.ctrl.completion_queue_exists(0));
}

TYPED_TEST(controller_bring_up, ready_waits_for_the_ready_delay_on_the_clock)
{
    TypeParam r{{.ready_delay = 10ms}};
    const std::uint64_t asq = r.host.allocate(4096);
    const std::uint64_t acq = r.host.allocate(4096);
    r.program_admin_queues(admin_queue_attributes(32, 32).raw, asq, acq);
    r.write32(spec::register_offset::cc, linux_cc().raw);
    EXPECT_FALSE(r.csts().get(spec::csts_register::rdy));
    EXPECT_EQ(r.ctrl.state(), nvmekit::controller_state::enabling);
    for (int i = 0; i < 5; ++i) {
        r.step();
        EXPECT_FALSE(r.csts().get(spec::csts_register::rdy));
    }
    r.clock.advance(10ms - 1ns);
    r.step();
    EXPECT_FALSE(r.csts().get(spec::csts_register::rdy));
    EXPECT_FALSE(r.csts().get(spec::csts_register::cfs));
    r.clock.advance(1ns);
    r.step();
    EXPECT_TRUE(r.csts().get(spec::csts_register::rdy));
    EXPECT_EQ(r.ctrl.state(), nvmekit::controller_state::ready);
}

TYPED_TEST(controller_bring_up, host_bring_up_waits_out_the_ready_delay)
{
    TypeParam r{{.ready_delay = 25ms}};
    const auto start = r.clock.now();
    r.host.bring_up();
    EXPECT_GE(r.clock.now() - start, 25ms);
    EXPECT_EQ(r.ctrl.state(), nvmekit::controller_state::ready);
}

TYPED_TEST(controller_bring_up, cc_en_0_during_the_ready_delay_resets)
{
    TypeParam r{{.ready_delay = 10ms}};
    const std::uint64_t asq = r.host.allocate(4096);
    const std::uint64_t acq = r.host.allocate(4096);
    r.program_admin_queues(admin_queue_attributes(32, 32).raw, asq, acq);
    r.write32(spec::register_offset::cc, linux_cc().raw);
    r.write32(spec::register_offset::cc, 0);
    r.clock.advance(20ms);
    r.step();
    EXPECT_EQ(r.csts().raw, 0U);
    EXPECT_EQ(r.ctrl.state(), nvmekit::controller_state::disabled);
    EXPECT_FALSE(r.ctrl.submission_queue_exists(0));
}

/// One way to enable with a configuration the controller cannot run (Base 2.0 3.5.1).
struct invalid_enable {
    const char* what;
    spec::aqa_register aqa;
    std::uint64_t asq_offset; ///< added to an 8 KiB aligned buffer
    std::uint64_t acq_offset;
    spec::cc_register cc;
};

TYPED_TEST(controller_bring_up, invalid_enable_sets_cfs_and_recovers_after_en_0)
{
    const spec::aqa_register good_aqa = admin_queue_attributes(32, 32);
    const spec::cc_register good = linux_cc();
    const std::array cases{
        invalid_enable{"MPS above MPSMAX", good_aqa, 0, 0, good.with(spec::cc_register::mps, 5)},
        invalid_enable{"MPS 15", good_aqa, 0, 0, good.with(spec::cc_register::mps, 15)},
        invalid_enable{
            "CSS all I/O sets without CAP.CSS bit 43", good_aqa, 0, 0,
            good.with(spec::cc_register::css, spec::io_command_set_selected::all_supported_io_sets)},
        invalid_enable{"CSS admin only without CAP.CSS bit 44", good_aqa, 0, 0,
                       good.with(spec::cc_register::css, spec::io_command_set_selected::admin_only)},
        invalid_enable{
            "AMS weighted round robin without CAP.AMS", good_aqa, 0, 0,
            good.with(spec::cc_register::ams, spec::arbitration_mechanism::weighted_round_robin_urgent)},
        invalid_enable{"ASQ not aligned to the 8 KiB memory page", good_aqa, 0x1000, 0,
                       good.with(spec::cc_register::mps, 1)},
        invalid_enable{"ACQ not aligned to the 8 KiB memory page", good_aqa, 0, 0x1000,
                       good.with(spec::cc_register::mps, 1)},
        invalid_enable{"AQA.ASQS 0 (one entry)", admin_queue_attributes(1, 32), 0, 0, good},
        invalid_enable{"AQA.ACQS 0 (one entry)", admin_queue_attributes(32, 1), 0, 0, good},
        invalid_enable{"AQA both 0", spec::aqa_register{}, 0, 0, good},
    };
    // One controller for every case (a SystemC rig elaborates one design per process), disabled
    // before each.
    TypeParam r;
    const std::uint64_t asq = r.host.allocate(3 * 4096, 8192);
    const std::uint64_t acq = r.host.allocate(3 * 4096, 8192);
    for (const auto& c : cases) {
        SCOPED_TRACE(c.what);
        r.write32(spec::register_offset::cc, 0);
        ASSERT_EQ(r.csts().raw, 0U);
        r.program_admin_queues(c.aqa.raw, asq + c.asq_offset, acq + c.acq_offset);
        r.write32(spec::register_offset::cc, c.cc.raw);
        EXPECT_EQ(r.csts().raw, spec::csts_register{}.with(spec::csts_register::cfs, true).raw);
        EXPECT_EQ(r.ctrl.state(), nvmekit::controller_state::failed);
        r.poll(3);
        EXPECT_EQ(r.csts().raw, spec::csts_register{}.with(spec::csts_register::cfs, true).raw);
        EXPECT_FALSE(r.ctrl.submission_queue_exists(0));

        // Recovery: CC.EN = 0 clears CFS, then a valid enable reaches RDY.
        r.write32(spec::register_offset::cc, 0);
        EXPECT_EQ(r.csts().raw, 0U);
        EXPECT_EQ(r.ctrl.state(), nvmekit::controller_state::disabled);
        r.program_admin_queues(good_aqa.raw, asq, acq);
        r.write32(spec::register_offset::cc, good.raw);
        EXPECT_EQ(r.csts().raw, ready_status().raw);
        r.host.bring_up();
        EXPECT_EQ(r.ctrl.state(), nvmekit::controller_state::ready);
    }
}

TYPED_TEST(controller_bring_up, enable_with_queue_entry_sizes_zero_becomes_ready)
{
    // CC.IOSQES and CC.IOCQES are needed only once I/O queues are created (Base 2.0 Figure 41, CC): a
    // host may enable with them 0 and set them before creating its I/O queues.
    TypeParam r;
    r.admin_only();
    r.host.disable();
    r.host.enable(0, 0);
    EXPECT_EQ(r.csts().raw, ready_status().raw);
    EXPECT_EQ(r.ctrl.state(), nvmekit::controller_state::ready);
    const std::uint64_t buffer = r.host.allocate(4096);
    EXPECT_TRUE(r.host.admin(host_type::identify_command(spec::cns::identify_controller, 0, buffer)).ok());
    ASSERT_TRUE(r.host.admin(set_number_of_queues(spec::number_of_queues::from_counts(1, 1).raw)).ok());
    // The I/O queues cannot be created with entries the controller does not use.
    EXPECT_EQ(r.host.create_io_cq(1, 16, 0, false).status(),
              dnr(spec::command_specific_status::invalid_queue_size));
    EXPECT_FALSE(r.ctrl.completion_queue_exists(1));

    // IOCQES = 4 alone: the CQ can be created, the SQ (IOSQES still 0) cannot.
    r.write32(spec::register_offset::cc, linux_cc().with(spec::cc_register::iosqes, 0).raw);
    EXPECT_EQ(r.csts().raw, ready_status().raw);
    EXPECT_TRUE(r.host.create_io_cq(1, 16, 0, false).ok());
    EXPECT_EQ(r.host.create_io_sq(1, 1, 16).status(), dnr(spec::command_specific_status::invalid_queue_size));
    EXPECT_FALSE(r.ctrl.submission_queue_exists(1));
    r.write32(spec::register_offset::cc, linux_cc().with(spec::cc_register::iosqes, 7).raw);
    EXPECT_EQ(r.host.create_io_sq(1, 1, 16).status(), dnr(spec::command_specific_status::invalid_queue_size));

    // With IOSQES = 6 the pair is complete and carries I/O.
    r.write32(spec::register_offset::cc, linux_cc().raw);
    ASSERT_TRUE(r.host.create_io_sq(1, 1, 16).ok());
    EXPECT_EQ(r.host.io(1, read_command()).status(), dnr(spec::generic_status::invalid_namespace_or_format));
    EXPECT_EQ(r.csts().raw, ready_status().raw);
}

TYPED_TEST(controller_bring_up, larger_memory_pages_within_mpsmax_are_accepted)
{
    TypeParam r;
    const std::uint64_t asq = r.host.allocate(8192, 8192);
    const std::uint64_t acq = r.host.allocate(8192, 8192);
    r.program_admin_queues(admin_queue_attributes(32, 32).raw, asq, acq);
    r.write32(spec::register_offset::cc, linux_cc().with(spec::cc_register::mps, 1).raw);
    EXPECT_EQ(r.csts().raw, ready_status().raw);
}

TYPED_TEST(controller_bring_up, host_bring_up_recovers_a_failed_controller)
{
    TypeParam r;
    r.ctrl.fatal_error();
    EXPECT_TRUE(r.csts().get(spec::csts_register::cfs));
    const auto result = r.host.bring_up({.io_queue_pairs = 2});
    EXPECT_EQ(result.io_queue_pairs, 2);
    EXPECT_EQ(r.csts().raw, ready_status().raw);
}

} // namespace controller_bring_up_test
} // namespace
