#include <cstdint>
#include <map>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

#include <nvmekit/pci/config_space.hpp>

#include "../controller_fixture.hpp"

namespace {

using nvmekit::pci::config_event;
using nvmekit::pci::config_space;
using nvmekit::pci::nvme_function_config;
using nvmekit::pci::power_state;
using nvmekit::pci::reset_kind;

/// A function with distinct identity values and a 16 KiB BAR0 holding 65 MSI-X vectors.
nvme_function_config test_config()
{
    return {.vendor_id = 0xf0e5,
            .device_id = 0x1234,
            .subsystem_vendor_id = 0x5a5a,
            .subsystem_id = 0x5678,
            .revision_id = 0x02,
            .bar0_size = 0x4000,
            .msix_vectors = 65,
            .msix_table_offset = 0x2000,
            .msix_pba_offset = 0x3000,
            .interrupt_pin = 1,
            .link_speed = 3,
            .link_width = 4};
}

/// Every non-zero dword of the test function's configuration space after reset.
const std::map<std::uint32_t, std::uint32_t>& reset_dwords()
{
    static const std::map<std::uint32_t, std::uint32_t> dwords{
        {0x00, 0x1234'f0e5}, // Device ID, Vendor ID
        {0x04, 0x0010'0000}, // Status: Capabilities List; Command 0
        {0x08, 0x0108'0202}, // class 01:08:02, revision 02
        {0x10, 0x0000'0004}, // BAR0: 64-bit memory
        {0x2c, 0x5678'5a5a}, // Subsystem ID, Subsystem Vendor ID
        {0x34, 0x0000'0040}, // Capabilities Pointer
        {0x3c, 0x0000'0100}, // Interrupt Pin INTA#
        {0x40, 0x0003'5001}, // PM: PMC version 3, next 50h
        {0x44, 0x0000'0008}, // PMCSR: No_Soft_Reset, D0
        {0x50, 0x0040'6011}, // MSI-X: table size 65 (0's based), next 60h
        {0x54, 0x0000'2000}, // Table Offset, BIR 0
        {0x58, 0x0000'3000}, // PBA Offset, BIR 0
        {0x60, 0x0002'0010}, // PCIe: version 2, endpoint, end of list
        {0x64, 0x1000'8000}, // DEVCAP: FLR, Role-Based Error Reporting
        {0x68, 0x0000'2810}, // DEVCTL: MRRS 512, No Snoop, Relaxed Ordering
        {0x6c, 0x0000'0043}, // LNKCAP: 8 GT/s x4
        {0x70, 0x1043'0000}, // LNKSTA: 8 GT/s x4, Slot Clock
        {0x8c, 0x0000'000e}, // LNKCAP2: 2.5, 5 and 8 GT/s
        {0x90, 0x0000'0003}, // LNKCTL2: target 8 GT/s
    };
    return dwords;
}

std::uint32_t reset_dword(std::uint32_t offset)
{
    const auto found = reset_dwords().find(offset);
    return found == reset_dwords().end() ? 0U : found->second;
}

/// Offsets of the capabilities reached from the Capabilities Pointer, with their IDs.
std::vector<std::pair<std::uint32_t, std::uint32_t>> capability_chain(config_space& space)
{
    std::vector<std::pair<std::uint32_t, std::uint32_t>> chain;
    std::uint32_t next = space.read(0x34, 1) & 0xfcU;
    while (next != 0 && chain.size() < 48) {
        chain.emplace_back(next, space.read(next, 1));
        next = space.read(next + 1, 1) & 0xfcU;
    }
    return chain;
}

} // namespace

TEST(pci_config_space, the_default_configuration_is_valid)
{
    config_space space{nvme_function_config{}};
    EXPECT_EQ(space.read(0x00, 4), 0x0000'f0e5U);
    EXPECT_EQ(space.read(0x2c, 4), 0x0000'f0e5U);
    EXPECT_EQ(space.read(0x50, 4), 0x0000'6011U);
    EXPECT_EQ(space.read(0x54, 4), 0x2000U);
    EXPECT_EQ(space.read(0x58, 4), 0x3000U);
    EXPECT_EQ(space.config().bar0_size, 16384U);
}

TEST(pci_config_space, rejects_inconsistent_configurations)
{
    const auto rejects = [](auto change) {
        nvme_function_config config = test_config();
        change(config);
        EXPECT_THROW(config_space{config}, std::invalid_argument);
    };
    rejects([](nvme_function_config& c) { c.vendor_id = 0x0000; });
    rejects([](nvme_function_config& c) { c.vendor_id = 0xffff; });
    rejects([](nvme_function_config& c) { c.bar0_size = 0; });
    rejects([](nvme_function_config& c) { c.bar0_size = 8192; });
    rejects([](nvme_function_config& c) { c.bar0_size = 0x6000; });
    rejects([](nvme_function_config& c) { c.msix_vectors = 0; });
    rejects([](nvme_function_config& c) { c.msix_vectors = 2049; });
    rejects([](nvme_function_config& c) { c.msix_table_offset = 0x2004; });
    rejects([](nvme_function_config& c) { c.msix_table_offset = 0x3c00; }); // 1040 bytes end at 4010h
    rejects([](nvme_function_config& c) { c.msix_table_offset = 0x4000; });
    rejects([](nvme_function_config& c) {
        c.bar0_size = std::uint64_t{1} << 33;
        c.msix_table_offset = std::uint64_t{1} << 32;
    });
    rejects([](nvme_function_config& c) { c.msix_pba_offset = 0x3004; });
    rejects([](nvme_function_config& c) { c.msix_pba_offset = 0x3ff8; }); // 16 bytes end at 4008h
    rejects([](nvme_function_config& c) { c.msix_pba_offset = 0x2408; }); // inside the table
    rejects([](nvme_function_config& c) { c.msix_pba_offset = 0x1ff8; }); // runs into the table
    rejects([](nvme_function_config& c) { c.interrupt_pin = 5; });
    rejects([](nvme_function_config& c) { c.link_speed = 0; });
    rejects([](nvme_function_config& c) { c.link_speed = 7; });
    rejects([](nvme_function_config& c) { c.link_width = 0; });
    rejects([](nvme_function_config& c) { c.link_width = 3; });
    rejects([](nvme_function_config& c) { c.link_width = 64; });
}

TEST(pci_config_space, accepts_the_boundaries_of_each_field)
{
    nvme_function_config config = test_config();
    config.msix_table_offset = 0x4000 - 1040; // the table ends at the end of BAR0
    config.msix_pba_offset = 0x2410;          // the PBA starts where the table would end at 2000h
    config.interrupt_pin = 0;
    config.link_speed = 6;
    config.link_width = 32;
    config_space space{config};
    EXPECT_EQ(space.read(0x54, 4), 0x3bf0U);
    EXPECT_EQ(space.read(0x58, 4), 0x2410U);
    EXPECT_EQ(space.read(0x3d, 1), 0U);
    EXPECT_EQ(space.read(0x6c, 4), 0x0000'0206U);
    EXPECT_EQ(space.read(0x72, 2), 0x1206U);
    EXPECT_EQ(space.read(0x8c, 4), 0x7eU);
    EXPECT_EQ(space.read(0x90, 2), 6U);

    config = test_config();
    config.msix_vectors = 2048;
    config.bar0_size = 0x20000;
    config.msix_table_offset = 0x10000;
    config.msix_pba_offset = 0x18000;
    config.interrupt_pin = 4;
    config_space big{config};
    EXPECT_EQ(big.read(0x52, 2), 0x07ffU);
    EXPECT_EQ(big.read(0x3d, 1), 4U);

    config = test_config();
    config.bar0_size = std::uint64_t{1} << 33;
    config.msix_table_offset = 0xffff'e000;
    config.msix_pba_offset = 0xffff'fff8;
    config_space high{config};
    EXPECT_EQ(high.read(0x54, 4), 0xffff'e000U);
    EXPECT_EQ(high.read(0x58, 4), 0xffff'fff8U);
}

TEST(pci_config_space, every_dword_has_its_reset_value)
{
    config_space space{test_config()};
    for (std::uint32_t offset = 0; offset < 4096; offset += 4) {
        EXPECT_EQ(space.read(offset, 4), reset_dword(offset)) << "offset " << offset;
    }
    EXPECT_EQ(space.rejected_accesses(), 0U);
    EXPECT_EQ(space.bar0_address(), 0U);
    EXPECT_FALSE(space.memory_enabled());
    EXPECT_FALSE(space.bus_master());
    EXPECT_FALSE(space.interrupt_disable());
    EXPECT_FALSE(space.msix_enabled());
    EXPECT_FALSE(space.msix_function_mask());
    EXPECT_EQ(space.power_state(), power_state::d0);
}

TEST(pci_config_space, narrow_reads_return_the_bytes_of_the_dword)
{
    config_space space{test_config()};
    for (std::uint32_t offset = 0; offset < 4096; ++offset) {
        const std::uint32_t dword = reset_dword(offset & ~3U);
        EXPECT_EQ(space.read(offset, 1), (dword >> (8 * (offset % 4))) & 0xffU) << "offset " << offset;
        if (offset % 2 == 0) {
            EXPECT_EQ(space.read(offset, 2), (dword >> (8 * (offset % 4))) & 0xffffU) << "offset " << offset;
        }
    }
    EXPECT_EQ(space.read(0x09, 1), 0x02U); // programming interface
    EXPECT_EQ(space.read(0x0a, 1), 0x08U); // sub-class
    EXPECT_EQ(space.read(0x0b, 1), 0x01U); // base class
    EXPECT_EQ(space.read(0x0e, 1), 0x00U); // header type 0, single function
}

TEST(pci_config_space, writing_all_ones_sets_only_the_writable_bits)
{
    const std::map<std::uint32_t, std::uint32_t> after_ones{
        {0x04, 0x0010'0546}, // Command: Memory, Bus Master, Parity, SERR, Interrupt Disable
        {0x0c, 0x0000'00ff}, // Cache Line Size
        {0x10, 0xffff'c004}, // BAR0: address bits above 16 KiB
        {0x14, 0xffff'ffff}, // BAR1
        {0x3c, 0x0000'01ff}, // Interrupt Line
        {0x44, 0x0000'000b}, // PMCSR: D3hot
        {0x50, 0xc040'6011}, // MSI-X Enable and Function Mask
        {0x68, 0x0000'28f0}, // FLR ran: defaults, Max_Payload_Size kept
        {0x70, 0x1043'00cb}, // Link Control: ASPM, RCB, Common Clock, Extended Synch
    };
    for (std::uint32_t offset = 0; offset < 4096; offset += 4) {
        config_space space{test_config()};
        space.write(offset, 4, 0xffff'ffff);
        const auto found = after_ones.find(offset);
        const std::uint32_t expected = found == after_ones.end() ? reset_dword(offset) : found->second;
        EXPECT_EQ(space.read(offset, 4), expected) << "offset " << offset;
    }
}

TEST(pci_config_space, writing_zeros_clears_the_writable_bits)
{
    const std::map<std::uint32_t, std::uint32_t> after_zeros{
        {0x68, 0x0000'0000}, // every Device Control field is writable
    };
    for (std::uint32_t offset = 0; offset < 4096; offset += 4) {
        config_space space{test_config()};
        space.write(offset, 4, 0xffff'ffff);
        space.write(offset, 4, 0);
        const auto found = after_zeros.find(offset);
        const std::uint32_t expected = found == after_zeros.end() ? reset_dword(offset) : found->second;
        EXPECT_EQ(space.read(offset, 4), expected) << "offset " << offset;
    }
}

TEST(pci_config_space, byte_and_word_writes_touch_only_their_bytes)
{
    config_space space{test_config()};
    space.write(0x04, 1, 0xff);
    EXPECT_EQ(space.read(0x04, 4), 0x0010'0046U);
    space.write(0x05, 1, 0xff);
    EXPECT_EQ(space.read(0x04, 4), 0x0010'0546U);
    space.write(0x06, 1, 0xff);
    space.write(0x07, 1, 0xff);
    EXPECT_EQ(space.read(0x04, 4), 0x0010'0546U);
    space.write(0x3c, 2, 0xffab);
    EXPECT_EQ(space.read(0x3c, 4), 0x0000'01abU);
    space.write(0x0e, 2, 0xffff);
    EXPECT_EQ(space.read(0x0c, 4), 0U);
    space.write(0x11, 1, 0xff);
    EXPECT_EQ(space.read(0x10, 4), 0x0000'c004U);
}

TEST(pci_config_space, bar0_sizing_reads_back_the_size_mask)
{
    config_space space{test_config()};
    auto event = space.write(0x10, 4, 0xffff'ffff);
    EXPECT_TRUE(event.bar0_changed);
    EXPECT_EQ(event.bar0_address, 0xffff'c000U);
    event = space.write(0x14, 4, 0xffff'ffff);
    EXPECT_TRUE(event.bar0_changed);
    EXPECT_EQ(event.bar0_address, 0xffff'ffff'ffff'c000U);
    const std::uint32_t low = space.read(0x10, 4);
    const std::uint32_t high = space.read(0x14, 4);
    EXPECT_EQ(low, 0xffff'c004U);
    EXPECT_EQ(high, 0xffff'ffffU);
    EXPECT_EQ(low & 0x7U, 0x4U); // memory, 64-bit
    EXPECT_EQ(low & 0x8U, 0U);   // not prefetchable
    const std::uint64_t mask = (std::uint64_t{high} << 32) | (low & ~0xfU);
    EXPECT_EQ(~mask + 1, 0x4000U);

    space.write(0x10, 4, 0xfebf'3fff);
    event = space.write(0x14, 4, 0x0000'0001);
    EXPECT_TRUE(event.bar0_changed);
    EXPECT_EQ(event.bar0_address, 0x1'febf'0000U);
    EXPECT_EQ(space.read(0x10, 4), 0xfebf'0004U);
    EXPECT_EQ(space.read(0x14, 4), 1U);
    EXPECT_EQ(space.bar0_address(), 0x1'febf'0000U);
    event = space.write(0x10, 4, 0xfebf'0000);
    EXPECT_FALSE(event.bar0_changed);
    EXPECT_FALSE(event.any());

    space.reset();
    EXPECT_EQ(space.bar0_address(), 0U);
    EXPECT_EQ(space.read(0x10, 4), 4U);
    EXPECT_EQ(space.read(0x14, 4), 0U);
}

TEST(pci_config_space, bars_of_4_gib_and_more_size_through_bar1)
{
    nvme_function_config config = test_config();
    config.bar0_size = std::uint64_t{1} << 32;
    config_space four{config};
    four.write(0x10, 4, 0xffff'ffff);
    four.write(0x14, 4, 0xffff'ffff);
    EXPECT_EQ(four.read(0x10, 4), 4U);
    EXPECT_EQ(four.read(0x14, 4), 0xffff'ffffU);

    config.bar0_size = std::uint64_t{1} << 33;
    config_space eight{config};
    eight.write(0x10, 4, 0xffff'ffff);
    eight.write(0x14, 4, 0xffff'ffff);
    EXPECT_EQ(eight.read(0x10, 4), 4U);
    EXPECT_EQ(eight.read(0x14, 4), 0xffff'fffeU);
    EXPECT_EQ(eight.bar0_address(), 0xffff'fffe'0000'0000U);
}

TEST(pci_config_space, other_bars_and_the_expansion_rom_are_not_implemented)
{
    config_space space{test_config()};
    for (std::uint32_t offset : {0x18U, 0x1cU, 0x20U, 0x24U, 0x28U, 0x30U}) {
        const auto event = space.write(offset, 4, 0xffff'ffff);
        EXPECT_FALSE(event.any());
        EXPECT_EQ(space.read(offset, 4), 0U) << "offset " << offset;
    }
}

TEST(pci_config_space, the_capability_chain_lists_pm_msix_and_pci_express)
{
    config_space space{test_config()};
    EXPECT_NE(space.read(0x06, 2) & 0x10U, 0U); // Capabilities List
    const std::vector<std::pair<std::uint32_t, std::uint32_t>> expected{
        {0x40, 0x01}, {0x50, 0x11}, {0x60, 0x10}};
    EXPECT_EQ(capability_chain(space), expected);
    EXPECT_EQ(space.read(0x61, 1), 0U);
    EXPECT_EQ(space.read(0x100, 4), 0U); // empty extended capability header

    space.write(0x34, 1, 0x00);
    space.write(0x41, 1, 0x00);
    space.write(0x51, 1, 0x00);
    space.write(0x61, 1, 0x44);
    EXPECT_EQ(capability_chain(space), expected);
}

TEST(pci_config_space, pci_express_capability_advertises_flr_and_a_plausible_link)
{
    config_space space{test_config()};
    const nvmekit::pci::pci_express_capabilities caps{static_cast<std::uint16_t>(space.read(0x62, 2))};
    EXPECT_EQ(caps.get(caps.version), 2U);
    EXPECT_EQ(caps.get(caps.device_type), 0U);
    const nvmekit::pci::device_capabilities devcap{space.read(0x64, 4)};
    EXPECT_TRUE(devcap.get(devcap.function_level_reset));
    EXPECT_TRUE(devcap.get(devcap.role_based_error_reporting));
    EXPECT_EQ(devcap.get(devcap.max_payload_size_supported), 0U);
    const nvmekit::pci::link_capabilities lnkcap{space.read(0x6c, 4)};
    EXPECT_EQ(lnkcap.get(lnkcap.max_link_speed), 3U);
    EXPECT_EQ(lnkcap.get(lnkcap.max_link_width), 4U);
    EXPECT_EQ(lnkcap.get(lnkcap.aspm_support), 0U);
    const nvmekit::pci::link_status lnksta{static_cast<std::uint16_t>(space.read(0x72, 2))};
    EXPECT_EQ(lnksta.get(lnksta.current_link_speed), 3U);
    EXPECT_EQ(lnksta.get(lnksta.negotiated_link_width), 4U);
    EXPECT_TRUE(lnksta.get(lnksta.slot_clock_configuration));
    const nvmekit::pci::device_status devsta{static_cast<std::uint16_t>(space.read(0x6a, 2))};
    EXPECT_FALSE(devsta.get(devsta.transactions_pending));
}

TEST(pci_config_space, msix_message_control_changes_are_reported)
{
    config_space space{test_config()};
    auto event = space.write(0x52, 2, 0x8000);
    EXPECT_TRUE(event.msix_changed);
    EXPECT_TRUE(event.msix_enabled);
    EXPECT_FALSE(event.msix_function_mask);
    EXPECT_FALSE(event.command_changed);
    EXPECT_FALSE(event.flr_requested);
    EXPECT_TRUE(space.msix_enabled());
    EXPECT_EQ(space.read(0x52, 2), 0x8040U);

    event = space.write(0x52, 2, 0xc000);
    EXPECT_TRUE(event.msix_changed);
    EXPECT_TRUE(event.msix_enabled);
    EXPECT_TRUE(event.msix_function_mask);
    EXPECT_TRUE(space.msix_function_mask());

    event = space.write(0x52, 2, 0xc000);
    EXPECT_FALSE(event.msix_changed);
    EXPECT_FALSE(event.any());
    EXPECT_TRUE(event.msix_enabled);

    event = space.write(0x52, 2, 0x07ff); // table size is read-only; clears both control bits
    EXPECT_TRUE(event.msix_changed);
    EXPECT_FALSE(event.msix_enabled);
    EXPECT_FALSE(event.msix_function_mask);
    EXPECT_EQ(space.read(0x52, 2), 0x0040U);

    event = space.write(0x53, 1, 0x80);
    EXPECT_TRUE(event.msix_changed);
    EXPECT_TRUE(event.msix_enabled);
    event = space.write(0x52, 1, 0xff); // low byte: table size only
    EXPECT_FALSE(event.any());

    event = space.write(0x50, 4, 0x4000'0000);
    EXPECT_TRUE(event.msix_changed);
    EXPECT_FALSE(event.msix_enabled);
    EXPECT_TRUE(event.msix_function_mask);
    EXPECT_EQ(space.read(0x50, 4), 0x4040'6011U);

    space.reset();
    EXPECT_FALSE(space.msix_enabled());
    EXPECT_FALSE(space.msix_function_mask());
    EXPECT_EQ(space.read(0x50, 4), 0x0040'6011U);
}

TEST(pci_config_space, command_register_changes_are_reported)
{
    config_space space{test_config()};
    auto event = space.write(0x04, 2, 0x0006);
    EXPECT_TRUE(event.command_changed);
    EXPECT_TRUE(event.memory_enabled);
    EXPECT_TRUE(event.bus_master);
    EXPECT_FALSE(event.interrupt_disable);
    EXPECT_TRUE(space.memory_enabled());
    EXPECT_TRUE(space.bus_master());

    event = space.write(0x04, 2, 0x0006);
    EXPECT_FALSE(event.any());
    event = space.write(0x04, 2, 0x0001); // I/O Space is hardwired 0
    EXPECT_TRUE(event.command_changed);
    EXPECT_FALSE(event.memory_enabled);
    EXPECT_FALSE(event.bus_master);
    EXPECT_EQ(space.read(0x04, 2), 0U);

    event = space.write(0x04, 2, 0x0402);
    EXPECT_TRUE(event.command_changed);
    EXPECT_TRUE(event.memory_enabled);
    EXPECT_TRUE(event.interrupt_disable);
    EXPECT_TRUE(space.interrupt_disable());

    event = space.write(0x3c, 1, 0x0b); // the event carries the current state too
    EXPECT_FALSE(event.any());
    EXPECT_TRUE(event.memory_enabled);
    EXPECT_TRUE(event.interrupt_disable);
    EXPECT_FALSE(event.bus_master);
}

TEST(pci_config_space, status_error_bits_are_write_one_to_clear)
{
    config_space space{test_config()};
    space.report_status_errors(0xffff);
    EXPECT_EQ(space.read(0x06, 2), 0xf910U);
    space.write(0x06, 2, 0x2000);
    EXPECT_EQ(space.read(0x06, 2), 0xd910U);
    space.write(0x06, 2, 0x0000);
    EXPECT_EQ(space.read(0x06, 2), 0xd910U);
    space.write(0x07, 1, 0x80);
    EXPECT_EQ(space.read(0x06, 2), 0x5910U);
    space.write(0x04, 4, 0xffff'0000); // clears every error bit, Command stays 0
    EXPECT_EQ(space.read(0x04, 4), 0x0010'0000U);

    space.set_interrupt_status(true);
    EXPECT_EQ(space.read(0x06, 2), 0x0018U);
    space.write(0x06, 2, 0xffff); // Interrupt Status is read-only
    EXPECT_EQ(space.read(0x06, 2), 0x0018U);
    space.set_interrupt_status(false);
    EXPECT_EQ(space.read(0x06, 2), 0x0010U);

    space.report_device_errors(0xffff);
    EXPECT_EQ(space.read(0x6a, 2), 0x000fU);
    space.write(0x6a, 2, 0x0005);
    EXPECT_EQ(space.read(0x6a, 2), 0x000aU);
    const auto event = space.write(0x68, 4, 0x000f'2810); // Device Control unchanged, errors cleared
    EXPECT_FALSE(event.flr_requested);
    EXPECT_EQ(space.read(0x68, 4), 0x0000'2810U);
}

TEST(pci_config_space, initiate_flr_resets_the_function_and_self_clears)
{
    config_space space{test_config()};
    space.write(0x10, 4, 0xfebf'0000);
    space.write(0x14, 4, 0x1);
    space.write(0x04, 2, 0x0406);
    space.write(0x0c, 1, 0x10);
    space.write(0x3c, 1, 0x0b);
    space.write(0x52, 2, 0x8000);
    space.report_status_errors(0x2000);
    space.report_device_errors(0x0008);
    space.write(0x68, 2, 0x5830); // MPS 256 bytes, MRRS 4096 bytes
    space.write(0x70, 2, 0x00c9); // ASPM L0s, RCB, Common Clock, Extended Synch

    const std::uint32_t control = space.read(0x68, 2);
    EXPECT_EQ(control, 0x5830U);
    const auto event = space.write(0x68, 2, control | 0x8000); // what a driver's pcie_flr does
    EXPECT_TRUE(event.flr_requested);
    EXPECT_TRUE(event.command_changed);
    EXPECT_FALSE(event.memory_enabled);
    EXPECT_FALSE(event.bus_master);
    EXPECT_FALSE(event.interrupt_disable);
    EXPECT_TRUE(event.bar0_changed);
    EXPECT_EQ(event.bar0_address, 0U);
    EXPECT_TRUE(event.msix_changed);
    EXPECT_FALSE(event.msix_enabled);
    EXPECT_FALSE(event.power_state_changed);

    EXPECT_EQ(space.read(0x68, 2), 0x2830U); // defaults, Max_Payload_Size kept, bit 15 reads 0
    EXPECT_EQ(space.read(0x6a, 2), 0U);
    EXPECT_EQ(space.read(0x70, 2), 0x00c9U); // link fields kept
    EXPECT_EQ(space.read(0x04, 4), 0x0010'0000U);
    EXPECT_EQ(space.read(0x0c, 4), 0U);
    EXPECT_EQ(space.read(0x10, 4), 4U);
    EXPECT_EQ(space.read(0x14, 4), 0U);
    EXPECT_EQ(space.read(0x3c, 4), 0x0000'0100U);
    EXPECT_EQ(space.read(0x50, 4), 0x0040'6011U);
    EXPECT_EQ(space.read(0x64, 4), 0x1000'8000U);
}

TEST(pci_config_space, initiate_flr_is_seen_at_every_width)
{
    config_space dword{test_config()};
    EXPECT_TRUE(dword.write(0x68, 4, 0x0000'8000).flr_requested);
    EXPECT_EQ(dword.read(0x68, 4), 0x0000'2810U);
    config_space space{test_config()};
    EXPECT_EQ(space.read(0x68, 4), 0x0000'2810U);
    EXPECT_TRUE(space.write(0x69, 1, 0x80).flr_requested);
    EXPECT_EQ(space.read(0x68, 2), 0x2810U);
    EXPECT_FALSE(space.write(0x68, 1, 0xff).flr_requested);
    EXPECT_FALSE(space.write(0x68, 2, 0x7fff).flr_requested);
    EXPECT_FALSE(space.write(0x6a, 2, 0xffff).flr_requested);
    EXPECT_FALSE(space.write(0x64, 4, 0xffff'ffff).flr_requested);
}

TEST(pci_config_space, power_state_moves_between_d0_and_d3hot_only)
{
    config_space space{test_config()};
    space.write(0x10, 4, 0xfebf'0000);
    auto event = space.write(0x44, 2, 0x0003);
    EXPECT_TRUE(event.power_state_changed);
    EXPECT_EQ(event.power_state, power_state::d3hot);
    EXPECT_EQ(space.power_state(), power_state::d3hot);
    EXPECT_EQ(space.read(0x44, 2), 0x000bU);

    event = space.write(0x44, 2, 0x0001); // D1 is not supported: the write is discarded
    EXPECT_FALSE(event.any());
    EXPECT_EQ(space.power_state(), power_state::d3hot);
    event = space.write(0x44, 1, 0x02); // nor D2
    EXPECT_FALSE(event.any());
    EXPECT_EQ(space.read(0x44, 2), 0x000bU);

    event = space.write(0x44, 2, 0x8100); // D0; PME_En and PME_Status are not implemented
    EXPECT_TRUE(event.power_state_changed);
    EXPECT_EQ(event.power_state, power_state::d0);
    EXPECT_EQ(space.read(0x44, 2), 0x0008U);
    EXPECT_EQ(space.bar0_address(), 0xfebf'0000U); // No_Soft_Reset: D3hot to D0 keeps the state

    space.write(0x44, 2, 0x0003);
    space.reset();
    EXPECT_EQ(space.power_state(), power_state::d0);
    EXPECT_EQ(space.read(0x40, 4), 0x0003'5001U);
}

TEST(pci_config_space, invalid_accesses_read_all_ones_and_change_nothing)
{
    config_space space{test_config()};
    EXPECT_EQ(space.read(0x01, 2), 0xffffU);
    EXPECT_EQ(space.read(0x02, 4), 0xffff'ffffU);
    EXPECT_EQ(space.read(0x03, 4), 0xffff'ffffU);
    EXPECT_EQ(space.read(0x1000, 1), 0xffU);
    EXPECT_EQ(space.read(0x1000, 4), 0xffff'ffffU);
    EXPECT_EQ(space.read(0xffff'ffff, 1), 0xffU);
    EXPECT_EQ(space.read(0xffff'fffc, 4), 0xffff'ffffU);
    EXPECT_EQ(space.read(0x00, 0), 0xffff'ffffU);
    EXPECT_EQ(space.read(0x00, 3), 0xffff'ffffU);
    EXPECT_EQ(space.read(0x00, 8), 0xffff'ffffU);
    EXPECT_EQ(space.rejected_accesses(), 10U);
    EXPECT_EQ(space.read(0xffc, 4), 0U);
    EXPECT_EQ(space.read(0xfff, 1), 0U);
    EXPECT_EQ(space.read(0xffe, 2), 0U);
    EXPECT_EQ(space.rejected_accesses(), 10U);

    EXPECT_FALSE(space.write(0x05, 2, 0xffff).any());
    EXPECT_FALSE(space.write(0x03, 4, 0xffff'ffff).any());
    EXPECT_FALSE(space.write(0x04, 3, 0xffff'ffff).any());
    EXPECT_FALSE(space.write(0x04, 8, 0xffff'ffff).any());
    EXPECT_FALSE(space.write(0x1000, 4, 0xffff'ffff).any());
    EXPECT_FALSE(space.write(0xffff'fffe, 2, 0xffff).any());
    EXPECT_FALSE(space.write(0x69, 2, 0xffff).any()); // would have covered Initiate FLR
    EXPECT_EQ(space.rejected_accesses(), 17U);
    for (std::uint32_t offset = 0; offset < 4096; offset += 4) {
        EXPECT_EQ(space.read(offset, 4), reset_dword(offset)) << "offset " << offset;
    }
}

TEST(pci_config_space, extended_space_is_read_only_zero)
{
    config_space space{test_config()};
    for (std::uint32_t offset = 0x100; offset < 4096; offset += 4) {
        EXPECT_FALSE(space.write(offset, 4, 0xffff'ffff).any());
    }
    space.write(0x101, 1, 0xff);
    space.write(0xffe, 2, 0xffff);
    for (std::uint32_t offset = 0x100; offset < 4096; offset += 4) {
        EXPECT_EQ(space.read(offset, 4), 0U) << "offset " << offset;
    }
    EXPECT_EQ(space.rejected_accesses(), 0U);
}

TEST(pci_config_space, function_level_reset_keeps_link_fields_that_power_on_reset_clears)
{
    config_space space{test_config()};
    space.write(0x68, 2, 0x00e0);
    space.write(0x70, 2, 0x00cb);
    space.reset(reset_kind::function_level_reset);
    EXPECT_EQ(space.read(0x68, 2), 0x28f0U);
    EXPECT_EQ(space.read(0x70, 2), 0x00cbU);
    space.reset(reset_kind::power_on);
    EXPECT_EQ(space.read(0x68, 2), 0x2810U);
    EXPECT_EQ(space.read(0x70, 2), 0U);
}

TEST(pci_config_space, reset_restores_every_default)
{
    config_space space{test_config()};
    for (std::uint32_t offset = 0; offset < 0x100; offset += 4) {
        if (offset != 0x68) {
            space.write(offset, 4, 0xffff'ffff);
        }
    }
    space.report_status_errors(0xffff);
    space.report_device_errors(0xffff);
    space.set_interrupt_status(true);
    space.reset();
    for (std::uint32_t offset = 0; offset < 4096; offset += 4) {
        EXPECT_EQ(space.read(offset, 4), reset_dword(offset)) << "offset " << offset;
    }
}

namespace {

struct fake_limits {
    std::uint16_t msix_vectors = 130;
};

struct fake_controller {
    static constexpr fake_limits limits{};
    [[nodiscard]] std::uint64_t bar0_size() const { return 0x10000; }
    [[nodiscard]] std::uint64_t msix_table_offset() const { return 0x3000; }
    [[nodiscard]] std::uint64_t msix_pba_offset() const { return 0x4000; }
};

} // namespace

TEST(pci_config_space, bar0_layout_of_copies_the_controller_layout)
{
    const fake_controller fake;
    const nvme_function_config config = nvmekit::pci::bar0_layout_of(fake, test_config());
    EXPECT_EQ(config.bar0_size, 0x10000U);
    EXPECT_EQ(config.msix_vectors, 130U);
    EXPECT_EQ(config.msix_table_offset, 0x3000U);
    EXPECT_EQ(config.msix_pba_offset, 0x4000U);
    EXPECT_EQ(config.device_id, 0x1234U);
    EXPECT_EQ(config.subsystem_id, 0x5678U);
    config_space space{config};
    EXPECT_EQ(space.read(0x52, 2), 0x0081U);
}

TEST(pci_config_space, a_real_controller_layout_is_accepted)
{
    nvmekit_test::basic_rig<> rig;
    using controller_type = nvmekit_test::basic_rig<>::controller_type;
    config_space space{nvmekit::pci::bar0_layout_of(rig.ctrl, {.device_id = 0x1234})};
    EXPECT_EQ(space.config().bar0_size, rig.ctrl.bar0_size());
    EXPECT_EQ(space.read(0x52, 2), controller_type::limits.msix_vectors - 1U);
    EXPECT_EQ(space.read(0x54, 4), rig.ctrl.msix_table_offset());
    EXPECT_EQ(space.read(0x58, 4), rig.ctrl.msix_pba_offset());
    space.write(0x10, 4, 0xffff'ffff);
    space.write(0x14, 4, 0xffff'ffff);
    const std::uint64_t mask = (std::uint64_t{space.read(0x14, 4)} << 32) | (space.read(0x10, 4) & ~0xfU);
    EXPECT_EQ(~mask + 1, rig.ctrl.bar0_size());
}
