#include <nvmekit/pci/function.hpp>

#include <bit>
#include <cstdint>

#include <gtest/gtest.h>

#include <nvmekit/controller.hpp>

#include "controller_fixture.hpp"

// pci::function is a base of the controller (CRTP): what it owns is tested through one, the
// rest of the controller only holding the queues and registers it acts on.

namespace {
namespace pci_function_test {

namespace spec = nvmekit::spec;
using namespace nvmekit_test;

static_assert(std::is_base_of_v<nvmekit::pci::function<nvmekit::controller<test_traits>, test_traits>,
                                nvmekit::controller<test_traits>>,
              "the controller is composed with the PCIe function");

TEST(pci_function, bar0_holds_registers_doorbells_msix_table_and_pba_in_page_aligned_order)
{
    rig r;
    constexpr auto limits = test_traits::limits;
    constexpr std::uint64_t page = 4096;
    const std::uint64_t table = r.ctrl.msix_table_offset();
    const std::uint64_t pba = r.ctrl.msix_pba_offset();
    EXPECT_EQ(table % page, 0U);
    EXPECT_EQ(pba % page, 0U);
    EXPECT_GE(table, spec::cq_head_doorbell_offset(limits.io_queues, 0) + 4U);
    EXPECT_GE(pba, table + 16U * limits.msix_vectors);
    EXPECT_TRUE(std::has_single_bit(r.ctrl.bar0_size()));
    EXPECT_GE(r.ctrl.bar0_size(), pba + (limits.msix_vectors + 63U) / 64U * 8U);
}

TEST(pci_function, msix_table_entries_are_read_back_through_bar0)
{
    rig r;
    const std::uint64_t entry = r.ctrl.msix_table_offset() + 16U * 3U;
    r.ctrl.mmio_write(entry, 8, 0xfee0'1000);
    r.ctrl.mmio_write(entry + 8U, 4, 0x4321);
    EXPECT_EQ(r.ctrl.mmio_read(entry, 8), 0xfee0'1000U);
    EXPECT_EQ(r.ctrl.mmio_read(entry + 8U, 4), 0x4321U);
}

TEST(pci_function, a_doorbell_of_a_queue_that_does_not_exist_is_an_invalid_doorbell)
{
    rig r;
    r.admin_only();
    r.ring_sq_tail(5, 1);
    r.poll(2);
    EXPECT_EQ(r.ctrl.statistics().invalid_doorbells, 1U);
    EXPECT_EQ(r.ctrl.state(), nvmekit::controller_state::ready);
}

TEST(pci_function, bus_master_enable_and_bar0_address_are_kept_as_the_transport_set_them)
{
    rig r;
    EXPECT_TRUE(r.ctrl.bus_master());
    EXPECT_EQ(r.ctrl.bar0_address(), 0U);
    r.ctrl.set_bar0_address(0xfe00'0000);
    r.ctrl.set_bus_master(false);
    EXPECT_FALSE(r.ctrl.bus_master());
    EXPECT_EQ(r.ctrl.bar0_address(), 0xfe00'0000U);
    r.ctrl.set_bus_master(true);
    EXPECT_TRUE(r.ctrl.bus_master());
}

} // namespace pci_function_test
} // namespace
