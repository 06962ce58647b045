#include <nvmekit/data/dma_guard.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include <gtest/gtest.h>

#include <nvmekit/backends/ram_backend.hpp>

#include "controller_fixture.hpp"

/// dma_guard alone, then the controller refusing DMA into its own BAR0 (the class of bug where a
/// host points a data buffer, a PRP list or a queue at the device's registers and the device ends
/// up reading or writing itself).

namespace {
namespace dma_guard_test {

namespace spec = nvmekit::spec;
using namespace nvmekit_test;
using nvmekit::testing::flat_memory;

constexpr std::uint64_t base = 0x10000;

struct guard_rig {
    flat_memory memory;
    nvmekit::dma_guard<flat_memory> guard{memory};
    guard_rig() { memory.add_range(base, 0x10000); }
};

// ---- dma_guard ----------------------------------------------------------------------------------

TEST(dma_guard, forwards_everything_without_a_window)
{
    guard_rig r;
    std::array<std::byte, 8> bytes{std::byte{1}, std::byte{2}};
    EXPECT_FALSE(r.guard.write(base, bytes));
    std::array<std::byte, 8> back{};
    EXPECT_FALSE(r.guard.read(base, back));
    EXPECT_EQ(back, bytes);
    EXPECT_EQ(r.guard.map(base, 8).size(), 8U);
    EXPECT_EQ(r.guard.excluded_length(), 0U);
    // Address 0 is not special when there is no window: the provider decides (unmapped here).
    EXPECT_TRUE(r.guard.read(0, back));
    EXPECT_FALSE(r.guard.touches_window(0, 8));
}

TEST(dma_guard, refuses_every_access_touching_the_window)
{
    guard_rig r;
    const std::uint64_t window = base + 0x4000;
    r.guard.exclude(window, 0x1000);
    EXPECT_EQ(r.guard.excluded_base(), window);
    EXPECT_EQ(r.guard.excluded_length(), 0x1000U);
    const auto fault = nvmekit::make_error_code(nvmekit::errc::dma_fault);
    std::array<std::byte, 16> bytes{};
    bytes.fill(std::byte{0xab});
    // Inside, straddling the start, straddling the end, covering it whole.
    for (const std::uint64_t address : {window, window + 0x800, window - 8, window + 0x1000 - 8}) {
        EXPECT_EQ(r.guard.read(address, bytes), fault) << address;
        EXPECT_EQ(r.guard.write(address, bytes), fault) << address;
        EXPECT_TRUE(r.guard.map(address, bytes.size()).empty()) << address;
    }
    EXPECT_TRUE(r.guard.map(base, 0x8000).empty());
    // Nothing was stored into the window or next to it by the refused writes.
    EXPECT_TRUE(std::ranges::all_of(r.memory.bytes(window - 16, 0x1020),
                                    [](std::byte b) { return b == std::byte{0}; }));
    // Right next to it, on both sides: forwarded.
    EXPECT_FALSE(r.guard.write(window - 16, bytes));
    EXPECT_FALSE(r.guard.write(window + 0x1000, bytes));
    EXPECT_EQ(r.guard.map(window + 0x1000, 16).size(), 16U);
    // Empty accesses touch nothing.
    EXPECT_FALSE(r.guard.touches_window(window, 0));
}

TEST(dma_guard, address_arithmetic_does_not_wrap)
{
    guard_rig r;
    constexpr std::uint64_t top = std::numeric_limits<std::uint64_t>::max();
    r.guard.exclude(top - 0xfff, 0x10000); // reaches past the top: cut there
    EXPECT_EQ(r.guard.excluded_length(), 0x1000U);
    EXPECT_TRUE(r.guard.touches_window(top, 1));
    EXPECT_TRUE(r.guard.touches_window(top - 0x1000, 2));
    EXPECT_FALSE(r.guard.touches_window(top - 0x1000, 1));
    // An access whose end wraps around zero does not fool the check.
    r.guard.exclude(0x1000, 0x1000);
    EXPECT_TRUE(r.guard.touches_window(top - 15, top)); // covers everything above it, then wraps
    EXPECT_FALSE(r.guard.touches_window(0x2000, top - 0x2000));
    EXPECT_TRUE(r.guard.touches_window(0, 0x1001));
    EXPECT_FALSE(r.guard.touches_window(0, 0x1000));
    r.guard.exclude(0, 0);
    EXPECT_FALSE(r.guard.touches_window(0x1000, 1));
}

// ---- the controller and its own BAR0 ------------------------------------------------------------

/// A controller whose "BAR0" lies inside host memory, so every refused access would otherwise
/// have succeeded: the guard, not the provider, refuses it.
struct bar_rig : rig {
    std::uint64_t bar = 0;
    bar_rig()
    {
        subsystem.add_namespace(nvmekit::ram_backend{1 << 20});
        host.bring_up();
        bar = host.allocate(ctrl.bar0_size(), ctrl.bar0_size());
        std::ranges::fill(memory.bytes(bar, ctrl.bar0_size()), std::byte{0x5a});
        ctrl.set_bar0_address(bar);
    }
    [[nodiscard]] bool bar_untouched()
    {
        return std::ranges::all_of(memory.bytes(bar, ctrl.bar0_size()),
                                   [](std::byte b) { return b == std::byte{0x5a}; });
    }
    [[nodiscard]] spec::submission_queue_entry io_command(spec::nvm_opcode opcode, std::uint32_t blocks,
                                                          spec::data_pointer dptr)
    {
        auto sqe = host_type::lba_command<spec::read_view>(opcode, 1, 0, blocks);
        sqe.dptr = dptr;
        return sqe;
    }
};

const spec::status transfer_error = spec::status{spec::generic_status::data_transfer_error}.with_dnr();

TEST(controller_bar0_dma, set_bar0_address_reports_the_window)
{
    bar_rig r;
    EXPECT_EQ(r.ctrl.bar0_address(), r.bar);
    r.ctrl.set_bar0_address(0);
    EXPECT_EQ(r.ctrl.bar0_address(), 0U);
}

TEST(controller_bar0_dma, data_buffers_in_bar0_are_data_transfer_errors)
{
    bar_rig r;
    const auto good = r.host.allocate(8192);
    for (const auto opcode : {spec::nvm_opcode::read, spec::nvm_opcode::write}) {
        // PRP1 inside BAR0.
        EXPECT_EQ(r.host.io(1, r.io_command(opcode, 1, {r.bar + 0x1000, 0})).status(), transfer_error);
        // PRP1 fine, PRP2 (second page) inside BAR0.
        EXPECT_EQ(r.host.io(1, r.io_command(opcode, 16, {good, r.bar})).status(), transfer_error);
        // A buffer straddling BAR0's first byte.
        EXPECT_EQ(r.host.io(1, r.io_command(opcode, 1, {r.bar - 256, 0})).status(), transfer_error);
        // An SGL Data Block descriptor into BAR0.
        auto sgl =
            r.io_command(opcode, 1, spec::to_data_pointer(spec::sgl_descriptor::data_block(r.bar + 64, 512)));
        host_type::use_sgl(sgl);
        EXPECT_EQ(r.host.io(1, sgl).status(), transfer_error);
    }
    EXPECT_TRUE(r.bar_untouched());
    // The controller goes on serving: the same commands with good buffers succeed.
    EXPECT_EQ(r.host.io(1, r.io_command(spec::nvm_opcode::write, 16, r.host.build_prps(good, 8192))).status(),
              spec::status::success());
    EXPECT_EQ(r.ctrl.requests_in_use(), 0U);
}

TEST(controller_bar0_dma, prp_lists_and_sgl_segments_in_bar0_are_data_transfer_errors)
{
    bar_rig r;
    const auto good = r.host.allocate(16384);
    // Four pages: PRP2 is a list pointer, and the list lives in BAR0.
    EXPECT_EQ(r.host.io(1, r.io_command(spec::nvm_opcode::read, 32, {good, r.bar + 0x800})).status(),
              transfer_error);
    // An SGL Last Segment descriptor pointing into BAR0.
    auto sgl = r.io_command(spec::nvm_opcode::read, 2,
                            spec::to_data_pointer(spec::sgl_descriptor::last_segment(r.bar + 0x100, 32)));
    host_type::use_sgl(sgl);
    EXPECT_EQ(r.host.io(1, sgl).status(), transfer_error);
    EXPECT_TRUE(r.bar_untouched());
}

TEST(controller_bar0_dma, admin_data_in_bar0_is_a_data_transfer_error)
{
    bar_rig r;
    auto identify = host_type::identify_command(spec::cns::identify_controller, 0, r.bar);
    EXPECT_EQ(r.host.admin(identify).status(), transfer_error);
    EXPECT_TRUE(r.bar_untouched());
    // Lifting the window (the host moved BAR0 away) lets the same buffer be used.
    r.ctrl.set_bar0_address(0);
    EXPECT_EQ(r.host.admin(identify).status(), spec::status::success());
    EXPECT_FALSE(r.bar_untouched());
}

TEST(controller_bar0_dma, a_completion_queue_in_bar0_fails_the_controller_until_reset)
{
    bar_rig r;
    r.host.bring_up({.io_queue_pairs = 2});
    ASSERT_TRUE(r.host.delete_io_sq(2).ok());
    ASSERT_TRUE(r.host.delete_io_cq(2).ok());
    // Create I/O CQ 2 and SQ 2 again by hand, the CQ inside BAR0.
    auto cq = host_type::command(spec::admin_opcode::create_io_cq);
    cq.dptr.prp1 = r.bar;
    cq.cdw10 = (15U << 16) | 2U; // QID 2, 16 entries (0's based)
    cq.cdw11 = 1;                // physically contiguous, no interrupts
    ASSERT_EQ(r.host.admin(cq).status(), spec::status::success());
    auto sq = host_type::command(spec::admin_opcode::create_io_sq);
    const auto sq_memory = r.host.allocate(16 * 64);
    sq.dptr.prp1 = sq_memory;
    sq.cdw10 = (15U << 16) | 2U;
    sq.cdw11 = (2U << 16) | 1U; // CQID 2, physically contiguous
    ASSERT_EQ(r.host.admin(sq).status(), spec::status::success());
    // A Flush on SQ 2: its completion cannot be posted into BAR0.
    auto flush = host_type::command(spec::nvm_opcode::flush, 1);
    flush.cdw0.set(spec::command_dword0::cid, std::uint16_t{7});
    r.memory.store(sq_memory, flush);
    r.ring_sq_tail(2, 1);
    r.poll(3);
    EXPECT_TRUE(r.csts().get(spec::csts_register::cfs));
    EXPECT_TRUE(r.bar_untouched());
    // A controller reset recovers.
    r.host.disable();
    r.host.enable();
    EXPECT_FALSE(r.csts().get(spec::csts_register::cfs));
    EXPECT_EQ(r.ctrl.requests_in_use(), 0U);
}

} // namespace dma_guard_test
} // namespace
