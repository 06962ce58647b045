#include <nvmekit/pci/reset_operations.hpp>

#include <type_traits>

#include <gtest/gtest.h>

#include <nvmekit/controller.hpp>

#include "controller_fixture.hpp"

// pci::reset_operations is a base of the controller (CRTP): what it owns, the state machine's
// hands, is tested through one.

namespace {
namespace pci_reset_operations_test {

namespace spec = nvmekit::spec;
using nvmekit::controller_state;
using namespace nvmekit_test;

static_assert(std::is_base_of_v<nvmekit::pci::reset_operations<nvmekit::controller<test_traits>, test_traits>,
                                nvmekit::controller<test_traits>>,
              "the controller is composed with its reset operations");

TEST(pci_reset_operations, an_enable_creates_the_admin_queue_and_sets_ready)
{
    rig r;
    EXPECT_FALSE(r.ctrl.submission_queue_exists(0));
    r.host.bring_up({.io_queue_pairs = 1});
    EXPECT_EQ(r.ctrl.state(), controller_state::ready);
    EXPECT_TRUE(r.csts().get(spec::csts_register::rdy));
    EXPECT_TRUE(r.ctrl.submission_queue_exists(0));
    EXPECT_TRUE(r.ctrl.completion_queue_exists(0));
}

TEST(pci_reset_operations, a_controller_reset_deletes_every_queue_and_clears_ready)
{
    rig r;
    r.host.bring_up({.io_queue_pairs = 2});
    ASSERT_TRUE(r.ctrl.submission_queue_exists(2));
    r.host.disable();
    EXPECT_FALSE(r.csts().get(spec::csts_register::rdy));
    EXPECT_FALSE(r.ctrl.submission_queue_exists(0));
    EXPECT_FALSE(r.ctrl.submission_queue_exists(2));
    EXPECT_FALSE(r.ctrl.completion_queue_exists(2));
    EXPECT_EQ(r.ctrl.requests_in_use(), 0U);
}

TEST(pci_reset_operations, a_normal_shutdown_completes_with_nothing_to_flush)
{
    rig r;
    r.host.bring_up({.io_queue_pairs = 1});
    r.host.shut_down();
    EXPECT_EQ(r.csts().get(spec::csts_register::shst), spec::shutdown_status::complete);
    EXPECT_EQ(r.ctrl.state(), controller_state::shut_down);
}

TEST(pci_reset_operations, a_function_level_reset_returns_the_registers_to_their_power_on_values)
{
    rig r;
    r.host.bring_up({.io_queue_pairs = 1});
    r.ctrl.function_level_reset();
    EXPECT_EQ(r.ctrl.registers().cc().raw, 0U);
    EXPECT_FALSE(r.csts().get(spec::csts_register::rdy));
    EXPECT_FALSE(r.ctrl.submission_queue_exists(0));
}

} // namespace pci_reset_operations_test
} // namespace
