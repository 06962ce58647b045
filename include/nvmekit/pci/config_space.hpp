#pragma once
/// The PCI configuration space of an NVMe controller's PCI Express function, independent of any
/// transport: a vfio-user server, a simulator's PCI bus or a test forwards the host's
/// configuration reads and writes here and acts on the returned `config_event`.
///
/// Layout (4 KiB: 256 bytes of PCI-compatible space, then PCI Express extended space):
///
/// | offset | structure |
/// |--------|-----------|
/// | 00h    | type-0 header, class code 01:08:02 (NVMe over PCIe 1.0 2) |
/// | 10h    | BAR0/BAR1: one 64-bit non-prefetchable memory BAR (controller registers, doorbells, MSI-X table
/// and PBA) | | 40h    | PCI Power Management capability (D0 and D3hot, No_Soft_Reset) | | 50h    | MSI-X
/// capability (table and PBA in BAR0) | | 60h    | PCI Express capability, version 2, endpoint, Function
/// Level Reset capable | | 100h   | extended capability list: one empty header (no extended capabilities) |
///
/// Every access is range-checked: widths 1, 2 and 4 at naturally aligned offsets inside the 4 KiB.
/// Anything else reads all ones and is ignored on write, and is counted in
/// `rejected_accesses()`.
///
///     nvmekit::pci::config_space config{nvmekit::pci::bar0_layout_of(controller, {.device_id = 0x1234})};
///     const auto event = config.write(offset, width, value);
///     if (event.flr_requested) controller.function_level_reset();
///     if (event.msix_changed) controller.set_msix_control(event.msix_enabled, event.msix_function_mask);
///
/// Not synchronised: one context at a time.

#include <array>
#include <bit>
#include <concepts>
#include <cstdint>
#include <stdexcept>

#include <nvmekit/config.hpp>
#include <nvmekit/pci/msix.hpp>
#include <nvmekit/spec/bits.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace pci {

/// Bytes of configuration space of a PCI Express function (PCIe Base 4.0 7.2.2).
inline constexpr std::uint32_t config_space_bytes = 4096;
/// Bytes of the PCI-compatible part, reachable by conventional configuration accesses.
inline constexpr std::uint32_t conventional_config_bytes = 256;

/// Class code of an NVM Express I/O controller: base class 01h (mass storage), sub-class 08h
/// (non-volatile memory), programming interface 02h (NVMe over PCIe 1.0 2).
inline constexpr std::uint32_t nvme_class_code = 0x010802;

/// Offsets of the type-0 configuration header (PCI Local Bus 3.0 6.1, PCIe Base 4.0 7.5.1).
namespace header {
inline constexpr std::uint32_t vendor_id = 0x00;       // 16 bits
inline constexpr std::uint32_t device_id = 0x02;       // 16 bits
inline constexpr std::uint32_t command = 0x04;         // 16 bits
inline constexpr std::uint32_t status = 0x06;          // 16 bits
inline constexpr std::uint32_t revision_id = 0x08;     // 8 bits
inline constexpr std::uint32_t class_code = 0x09;      // 24 bits: prog-if, sub-class, base class
inline constexpr std::uint32_t cache_line_size = 0x0c; // 8 bits
inline constexpr std::uint32_t latency_timer = 0x0d;   // 8 bits
inline constexpr std::uint32_t header_type = 0x0e;     // 8 bits
inline constexpr std::uint32_t bist = 0x0f;            // 8 bits
inline constexpr std::uint32_t bar0 = 0x10;            // BARs 0-5: 32 bits each
inline constexpr std::uint32_t bar1 = 0x14;
inline constexpr std::uint32_t bar5 = 0x24;
inline constexpr std::uint32_t cardbus_cis = 0x28;          // 32 bits
inline constexpr std::uint32_t subsystem_vendor_id = 0x2c;  // 16 bits
inline constexpr std::uint32_t subsystem_id = 0x2e;         // 16 bits
inline constexpr std::uint32_t expansion_rom = 0x30;        // 32 bits
inline constexpr std::uint32_t capabilities_pointer = 0x34; // 8 bits
inline constexpr std::uint32_t interrupt_line = 0x3c;       // 8 bits
inline constexpr std::uint32_t interrupt_pin = 0x3d;        // 8 bits
inline constexpr std::uint32_t min_gnt = 0x3e;              // 8 bits
inline constexpr std::uint32_t max_lat = 0x3f;              // 8 bits
} // namespace header

/// Capability IDs (PCI Code and ID Assignment 1.11 2).
namespace capability_id {
inline constexpr std::uint8_t power_management = 0x01;
inline constexpr std::uint8_t pci_express = 0x10;
inline constexpr std::uint8_t msix = 0x11;
} // namespace capability_id

/// Where this function places its capabilities.
inline constexpr std::uint32_t power_management_capability_offset = 0x40;
inline constexpr std::uint32_t msix_capability_offset = 0x50;
inline constexpr std::uint32_t pci_express_capability_offset = 0x60;
inline constexpr std::uint32_t extended_capabilities_offset = 0x100;

/// Offsets inside the Power Management capability (PCI PM 1.2 3.2).
namespace power_management_register {
inline constexpr std::uint32_t capabilities = 0x02;   // PMC, 16 bits
inline constexpr std::uint32_t control_status = 0x04; // PMCSR, 16 bits
inline constexpr std::uint32_t bridge_support = 0x06; // PMCSR_BSE, 8 bits
inline constexpr std::uint32_t data = 0x07;           // 8 bits
inline constexpr std::uint32_t size = 0x08;
} // namespace power_management_register

/// Offsets inside the MSI-X capability (PCI Local Bus 3.0 6.8.2).
namespace msix_register {
inline constexpr std::uint32_t message_control = 0x02; // 16 bits
inline constexpr std::uint32_t table = 0x04;           // Table Offset/Table BIR, 32 bits
inline constexpr std::uint32_t pba = 0x08;             // PBA Offset/PBA BIR, 32 bits
inline constexpr std::uint32_t size = 0x0c;
} // namespace msix_register

/// Offsets inside the PCI Express capability (PCIe Base 4.0 7.5.3).
namespace pci_express_register {
inline constexpr std::uint32_t capabilities = 0x02;          // 16 bits
inline constexpr std::uint32_t device_capabilities = 0x04;   // 32 bits
inline constexpr std::uint32_t device_control = 0x08;        // 16 bits
inline constexpr std::uint32_t device_status = 0x0a;         // 16 bits
inline constexpr std::uint32_t link_capabilities = 0x0c;     // 32 bits
inline constexpr std::uint32_t link_control = 0x10;          // 16 bits
inline constexpr std::uint32_t link_status = 0x12;           // 16 bits
inline constexpr std::uint32_t slot_capabilities = 0x14;     // 32 bits
inline constexpr std::uint32_t root_control = 0x1c;          // 16 bits
inline constexpr std::uint32_t device_capabilities_2 = 0x24; // 32 bits
inline constexpr std::uint32_t device_control_2 = 0x28;      // 16 bits
inline constexpr std::uint32_t link_capabilities_2 = 0x2c;   // 32 bits
inline constexpr std::uint32_t link_control_2 = 0x30;        // 16 bits
inline constexpr std::uint32_t link_status_2 = 0x32;         // 16 bits
inline constexpr std::uint32_t size = 0x3c;                  // version 2 endpoint structure
} // namespace pci_express_register

/// Command register (PCI Local Bus 3.0 6.2.2, PCIe Base 4.0 7.5.1.1.3).
struct command_register : spec::word<command_register, std::uint16_t> {
    using word::word;
    static constexpr field<0, 1, bool> io_space{};              // bit 00, hardwired 0: no I/O BAR
    static constexpr field<1, 1, bool> memory_space{};          // bit 01
    static constexpr field<2, 1, bool> bus_master{};            // bit 02
    static constexpr field<6, 1, bool> parity_error_response{}; // bit 06
    static constexpr field<8, 1, bool> serr_enable{};           // bit 08
    static constexpr field<10, 1, bool> interrupt_disable{};    // bit 10
    /// The bits software can change.
    static constexpr std::uint16_t writable = 0x0546;
};

/// Status register (PCI Local Bus 3.0 6.2.3, PCIe Base 4.0 7.5.1.1.4).
struct status_register : spec::word<status_register, std::uint16_t> {
    using word::word;
    static constexpr field<3, 1, bool> interrupt_status{};         // bit 03, read-only
    static constexpr field<4, 1, bool> capabilities_list{};        // bit 04, read-only 1
    static constexpr field<8, 1, bool> master_data_parity_error{}; // bit 08, RW1C
    static constexpr field<11, 1, bool> signaled_target_abort{};   // bit 11, RW1C
    static constexpr field<12, 1, bool> received_target_abort{};   // bit 12, RW1C
    static constexpr field<13, 1, bool> received_master_abort{};   // bit 13, RW1C
    static constexpr field<14, 1, bool> signaled_system_error{};   // bit 14, RW1C
    static constexpr field<15, 1, bool> detected_parity_error{};   // bit 15, RW1C
    /// The error bits software clears by writing 1.
    static constexpr std::uint16_t write_one_to_clear = 0xf900;
};

/// A function power state (PCI PM 1.2 3.2.4, PowerState field).
enum class power_state : std::uint8_t { d0 = 0, d1 = 1, d2 = 2, d3hot = 3 };

/// Power Management Capabilities, PMC (PCI PM 1.2 3.2.3).
struct power_management_capabilities : spec::word<power_management_capabilities, std::uint16_t> {
    using word::word;
    static constexpr field<0, 3, std::uint8_t> version{};      // bits 02:00, 3 = PCI PM 1.2
    static constexpr field<9, 1, bool> d1_support{};           // bit 09
    static constexpr field<10, 1, bool> d2_support{};          // bit 10
    static constexpr field<11, 5, std::uint8_t> pme_support{}; // bits 15:11
};

/// Power Management Control/Status, PMCSR (PCI PM 1.2 3.2.4, PCIe Base 4.0 7.5.2.2).
struct power_management_control : spec::word<power_management_control, std::uint16_t> {
    using word::word;
    static constexpr field<0, 2, pci::power_state> power_state{}; // bits 01:00, RW (D0/D3hot only)
    static constexpr field<3, 1, bool> no_soft_reset{};           // bit 03, read-only
    static constexpr field<8, 1, bool> pme_enable{};              // bit 08, 0: no PME support
    static constexpr field<15, 1, bool> pme_status{};             // bit 15, 0: no PME support
};

/// PCI Express Capabilities register (PCIe Base 4.0 7.5.3.2).
struct pci_express_capabilities : spec::word<pci_express_capabilities, std::uint16_t> {
    using word::word;
    static constexpr field<0, 4, std::uint8_t> version{};     // bits 03:00
    static constexpr field<4, 4, std::uint8_t> device_type{}; // bits 07:04, 0 = PCI Express Endpoint
    static constexpr field<8, 1, bool> slot_implemented{};    // bit 08
    static constexpr field<9, 5, std::uint8_t> interrupt_message_number{}; // bits 13:09
};

/// Device Capabilities register (PCIe Base 4.0 7.5.3.3).
struct device_capabilities : spec::word<device_capabilities, std::uint32_t> {
    using word::word;
    static constexpr field<0, 3, std::uint8_t> max_payload_size_supported{}; // bits 02:00, 0 = 128 bytes
    static constexpr field<5, 1, bool> extended_tag_supported{};             // bit 05
    static constexpr field<15, 1, bool> role_based_error_reporting{};        // bit 15
    static constexpr field<28, 1, bool> function_level_reset{};              // bit 28
};

/// Device Control register (PCIe Base 4.0 7.5.3.4).
struct device_control : spec::word<device_control, std::uint16_t> {
    using word::word;
    static constexpr field<0, 1, bool> correctable_error_reporting{};    // bit 00
    static constexpr field<1, 1, bool> non_fatal_error_reporting{};      // bit 01
    static constexpr field<2, 1, bool> fatal_error_reporting{};          // bit 02
    static constexpr field<3, 1, bool> unsupported_request_reporting{};  // bit 03
    static constexpr field<4, 1, bool> relaxed_ordering{};               // bit 04, 1 at reset
    static constexpr field<5, 3, std::uint8_t> max_payload_size{};       // bits 07:05
    static constexpr field<11, 1, bool> no_snoop{};                      // bit 11, 1 at reset
    static constexpr field<12, 3, std::uint8_t> max_read_request_size{}; // bits 14:12, 2 (512 bytes) at reset
    static constexpr field<15, 1, bool> initiate_flr{};                  // bit 15, reads 0
    /// The bits software can change and read back.
    static constexpr std::uint16_t writable = 0x78ff;
};

/// Device Status register (PCIe Base 4.0 7.5.3.5).
struct device_status : spec::word<device_status, std::uint16_t> {
    using word::word;
    static constexpr field<0, 1, bool> correctable_error{};    // bit 00, RW1C
    static constexpr field<1, 1, bool> non_fatal_error{};      // bit 01, RW1C
    static constexpr field<2, 1, bool> fatal_error{};          // bit 02, RW1C
    static constexpr field<3, 1, bool> unsupported_request{};  // bit 03, RW1C
    static constexpr field<5, 1, bool> transactions_pending{}; // bit 05, read-only
    /// The error bits software clears by writing 1.
    static constexpr std::uint16_t write_one_to_clear = 0x000f;
};

/// Link Capabilities register (PCIe Base 4.0 7.5.3.6).
struct link_capabilities : spec::word<link_capabilities, std::uint32_t> {
    using word::word;
    /// Bits 03:00: an index into Supported Link Speeds.
    static constexpr field<0, 4, std::uint8_t> max_link_speed{};
    static constexpr field<4, 6, std::uint8_t> max_link_width{}; // bits 09:04
    static constexpr field<10, 2, std::uint8_t> aspm_support{};  // bits 11:10, 0: no ASPM
    static constexpr field<24, 8, std::uint8_t> port_number{};   // bits 31:24
};

/// Link Control register (PCIe Base 4.0 7.5.3.7).
struct link_control : spec::word<link_control, std::uint16_t> {
    using word::word;
    static constexpr field<0, 2, std::uint8_t> aspm_control{};       // bits 01:00
    static constexpr field<3, 1, bool> read_completion_boundary{};   // bit 03
    static constexpr field<6, 1, bool> common_clock_configuration{}; // bit 06
    static constexpr field<7, 1, bool> extended_synch{};             // bit 07
    /// The bits software can change (Link Disable and Retrain Link are reserved for endpoints).
    static constexpr std::uint16_t writable = 0x00cb;
};

/// Link Status register (PCIe Base 4.0 7.5.3.8).
struct link_status : spec::word<link_status, std::uint16_t> {
    using word::word;
    static constexpr field<0, 4, std::uint8_t> current_link_speed{};    // bits 03:00
    static constexpr field<4, 6, std::uint8_t> negotiated_link_width{}; // bits 09:04
    static constexpr field<12, 1, bool> slot_clock_configuration{};     // bit 12
};

/// Link Capabilities 2 register (PCIe Base 4.0 7.5.3.18).
struct link_capabilities_2 : spec::word<link_capabilities_2, std::uint32_t> {
    using word::word;
    static constexpr field<1, 7, std::uint8_t> supported_link_speeds{}; // bits 07:01, bit n-1 = speed n
};

/// Link Control 2 register (PCIe Base 4.0 7.5.3.19).
struct link_control_2 : spec::word<link_control_2, std::uint16_t> {
    using word::word;
    static constexpr field<0, 4, std::uint8_t> target_link_speed{}; // bits 03:00
};

/// The Vendor ID (and Subsystem Vendor ID) a function has unless the embedder gives one: F0E5h,
/// which no vendor holds as far as the PCI ID Repository (pci.ids) records, far above the range
/// the PCI-SIG assigns from, so that hosts recognise no product in it and apply no product's
/// quirks (the Linux nvme driver binds any vendor's function by its class code 01:08:02). A
/// product built on nvmekit sets its own PCI-SIG-assigned IDs.
inline constexpr std::uint16_t unassigned_vendor_id = 0xf0e5;

/// What the embedder chooses about the function. Validated by `config_space`'s constructor.
struct nvme_function_config {
    std::uint16_t vendor_id = unassigned_vendor_id; ///< must not be 0000h or FFFFh (no function)
    std::uint16_t device_id = 0x0000;
    std::uint16_t subsystem_vendor_id = unassigned_vendor_id;
    std::uint16_t subsystem_id = 0x0000;
    std::uint8_t revision_id = 0x00;
    /// BAR0 size in bytes: a power of two, at least 16 KiB (NVMe over PCIe 1.0 3.8.1).
    std::uint64_t bar0_size = 16384;
    /// MSI-X table size in vectors, 1 to 2048.
    std::uint16_t msix_vectors = 1;
    /// BAR0 offsets of the MSI-X table and PBA: 8-byte aligned, below 4 GiB, inside BAR0 and not
    /// overlapping (PCI Local Bus 3.0 6.8.2.4, 6.8.2.5).
    std::uint64_t msix_table_offset = 0x2000;
    std::uint64_t msix_pba_offset = 0x3000;
    /// Interrupt Pin: 0 (none) or 1 to 4 (INTA# to INTD#).
    std::uint8_t interrupt_pin = 1;
    /// Link speed reported in Link Capabilities and Link Status: 1 (2.5 GT/s) to 6 (64 GT/s).
    std::uint8_t link_speed = 3;
    /// Link width reported: x1, x2, x4, x8, x12, x16 or x32.
    std::uint8_t link_width = 4;
};

/// `base` with the BAR0 layout (size, MSI-X vectors, table and PBA offsets) of `controller`.
// clang-format off
template <typename Controller>
    requires requires(const Controller& controller) {
        { controller.bar0_size() } -> std::convertible_to<std::uint64_t>;
        { controller.msix_table_offset() } -> std::convertible_to<std::uint64_t>;
        { controller.msix_pba_offset() } -> std::convertible_to<std::uint64_t>;
        { Controller::limits.msix_vectors } -> std::convertible_to<std::uint16_t>;
    }
// clang-format on
[[nodiscard]] nvme_function_config bar0_layout_of(const Controller& controller,
                                                  nvme_function_config base = {})
{
    base.bar0_size = controller.bar0_size();
    base.msix_vectors = Controller::limits.msix_vectors;
    base.msix_table_offset = controller.msix_table_offset();
    base.msix_pba_offset = controller.msix_pba_offset();
    return base;
}

/// Which reset `config_space::reset` performs.
enum class reset_kind : std::uint8_t {
    power_on,            ///< conventional reset: every register to its default
    function_level_reset ///< FLR: also keeps the link-related fields PCIe Base 4.0 6.6.2 exempts
};

/// What one configuration write did. The `*_changed` flags say which state changed; the other
/// members always hold the state after the write.
struct config_event {
    bool command_changed = false;     ///< Memory Space, Bus Master or Interrupt Disable changed
    bool bar0_changed = false;        ///< the BAR0 base address changed (also by sizing writes)
    bool msix_changed = false;        ///< MSI-X Enable or Function Mask changed
    bool flr_requested = false;       ///< Initiate Function Level Reset was written with 1
    bool power_state_changed = false; ///< PMCSR PowerState changed

    bool memory_enabled = false;
    bool bus_master = false;
    bool interrupt_disable = false;
    std::uint64_t bar0_address = 0;
    bool msix_enabled = false;
    bool msix_function_mask = false;
    pci::power_state power_state = pci::power_state::d0;

    /// True when anything changed.
    [[nodiscard]] constexpr bool any() const noexcept
    {
        return command_changed || bar0_changed || msix_changed || flr_requested || power_state_changed;
    }
};

/// The configuration space of one NVMe PCI Express function (see the file comment).
class config_space {
public:
    /// Throws std::invalid_argument when `config` is inconsistent.
    explicit config_space(const nvme_function_config& config) : config_{validated(config)} { reset(); }

    /// The `width`-byte value (1, 2 or 4) at `offset`; all ones for an access that is not
    /// naturally aligned, not of width 1, 2 or 4, or not inside the 4 KiB. Not const: it counts
    /// rejected accesses.
    [[nodiscard]] std::uint32_t read(std::uint32_t offset, unsigned width) noexcept
    {
        if (!access_valid(offset, width)) {
            ++rejected_accesses_;
            return all_ones(width);
        }
        return load(offset, width);
    }

    /// Writes the low `width` bytes of `value` at `offset`, honouring read-only and
    /// write-1-to-clear bits; an invalid access (as for read) changes nothing. An Initiate FLR
    /// write resets this configuration space at once (reset_kind::function_level_reset) and is
    /// reported with every state it changed: the caller resets the controller.
    config_event write(std::uint32_t offset, unsigned width, std::uint32_t value) noexcept
    {
        if (!access_valid(offset, width)) {
            ++rejected_accesses_;
            return event_between(snapshot(), snapshot());
        }
        const state before = snapshot();
        bool flr = false;
        for (unsigned i = 0; i < width; ++i) {
            const std::uint32_t at = offset + i;
            const auto byte = static_cast<std::uint8_t>(value >> (8 * i));
            const std::uint8_t kept = values_[at] & static_cast<std::uint8_t>(~write_mask_[at]);
            const std::uint8_t written = byte & write_mask_[at];
            values_[at] = static_cast<std::uint8_t>((kept | written) & ~(byte & clear_mask_[at]));
            if (at == device_control_offset + 1 && (byte & flr_high_byte) != 0) {
                flr = true;
            }
        }
        const auto requested =
            power_management_control{load16(pmcsr_offset)}.get(power_management_control::power_state);
        if (requested == pci::power_state::d1 || requested == pci::power_state::d2) {
            // PCI PM 1.2 3.2.4: a write of an unsupported state completes but changes nothing.
            store16(pmcsr_offset, power_management_control{load16(pmcsr_offset)}
                                      .with(power_management_control::power_state, before.power)
                                      .raw);
        }
        if (flr) {
            reset(reset_kind::function_level_reset);
        }
        config_event event = event_between(before, snapshot());
        event.flr_requested = flr;
        return event;
    }

    /// Restores the defaults: BAR address, Command, MSI-X Message Control, PowerState and every
    /// other writable or error bit. An FLR keeps Max_Payload_Size, ASPM Control, Read Completion
    /// Boundary, Common Clock Configuration and Extended Synch (PCIe Base 4.0 6.6.2).
    void reset(reset_kind kind = reset_kind::power_on) noexcept
    {
        const auto old_control = device_control{load16(device_control_offset)};
        const auto old_link = link_control{load16(link_control_offset)};
        initialise();
        if (kind == reset_kind::function_level_reset) {
            store16(device_control_offset, device_control{load16(device_control_offset)}
                                               .with(device_control::max_payload_size,
                                                     old_control.get(device_control::max_payload_size))
                                               .raw);
            constexpr std::uint16_t kept = 0x00cb; // ASPM Control, RCB, Common Clock, Extended Synch
            store16(link_control_offset, static_cast<std::uint16_t>(old_link.raw & kept));
        }
    }

    /// The BAR0 base address the host programmed (0 after reset).
    [[nodiscard]] std::uint64_t bar0_address() const noexcept { return bar0_raw() & ~std::uint64_t{0xf}; }
    /// Command.Memory Space Enable. BAR0 should be decoded only while this is set and the
    /// function is in D0.
    [[nodiscard]] bool memory_enabled() const noexcept
    {
        return command().get(command_register::memory_space);
    }
    /// Command.Bus Master Enable: the function may DMA and send MSI-X messages only while set.
    [[nodiscard]] bool bus_master() const noexcept { return command().get(command_register::bus_master); }
    /// Command.Interrupt Disable: INTx must not be asserted while set.
    [[nodiscard]] bool interrupt_disable() const noexcept
    {
        return command().get(command_register::interrupt_disable);
    }
    /// MSI-X Message Control.MSI-X Enable.
    [[nodiscard]] bool msix_enabled() const noexcept
    {
        return msix_control().get(msix_message_control::enable);
    }
    /// MSI-X Message Control.Function Mask.
    [[nodiscard]] bool msix_function_mask() const noexcept
    {
        return msix_control().get(msix_message_control::function_mask);
    }
    /// PMCSR.PowerState.
    [[nodiscard]] pci::power_state power_state() const noexcept
    {
        return power_management_control{load16(pmcsr_offset)}.get(power_management_control::power_state);
    }
    /// The configuration the space was built from.
    [[nodiscard]] const nvme_function_config& config() const noexcept { return config_; }
    /// Accesses refused as misaligned, of a bad width or out of range (guest errors).
    [[nodiscard]] std::uint64_t rejected_accesses() const noexcept { return rejected_accesses_; }

    /// Sets or clears Status.Interrupt Status, which mirrors the function's INTx level
    /// (PCI Local Bus 3.0 6.2.3).
    void set_interrupt_status(bool pending) noexcept
    {
        store16(header::status,
                status_register{load16(header::status)}.with(status_register::interrupt_status, pending).raw);
    }
    /// Sets error bits of the Status register (e.g. Received Master Abort after a failed DMA);
    /// bits outside `status_register::write_one_to_clear` are ignored.
    void report_status_errors(std::uint16_t bits) noexcept
    {
        store16(header::status, static_cast<std::uint16_t>(load16(header::status) |
                                                           (bits & status_register::write_one_to_clear)));
    }
    /// Sets error bits of the PCI Express Device Status register; bits outside
    /// `device_status::write_one_to_clear` are ignored.
    void report_device_errors(std::uint16_t bits) noexcept
    {
        store16(device_status_offset, static_cast<std::uint16_t>(load16(device_status_offset) |
                                                                 (bits & device_status::write_one_to_clear)));
    }

private:
    static constexpr std::uint32_t pmcsr_offset =
        power_management_capability_offset + power_management_register::control_status;
    static constexpr std::uint32_t msix_control_offset =
        msix_capability_offset + msix_register::message_control;
    static constexpr std::uint32_t device_control_offset =
        pci_express_capability_offset + pci_express_register::device_control;
    static constexpr std::uint32_t device_status_offset =
        pci_express_capability_offset + pci_express_register::device_status;
    static constexpr std::uint32_t link_control_offset =
        pci_express_capability_offset + pci_express_register::link_control;
    static constexpr std::uint8_t flr_high_byte = 0x80; // Initiate FLR, bit 15 of Device Control

    struct state {
        std::uint16_t command{};
        std::uint64_t bar0{};
        std::uint16_t msix{};
        pci::power_state power{};
    };

    using bytes = std::array<std::uint8_t, config_space_bytes>;

    [[nodiscard]] static nvme_function_config validated(const nvme_function_config& config)
    {
        if (config.vendor_id == 0x0000 || config.vendor_id == 0xffff) {
            throw std::invalid_argument{
                "nvmekit::pci::config_space: vendor_id 0000h and FFFFh mean no function"};
        }
        if (!std::has_single_bit(config.bar0_size) || config.bar0_size < 16384) {
            throw std::invalid_argument{
                "nvmekit::pci::config_space: bar0_size must be a power of two of at least 16 KiB"};
        }
        if (config.msix_vectors < 1 || config.msix_vectors > 2048) {
            throw std::invalid_argument{"nvmekit::pci::config_space: msix_vectors must be 1 to 2048"};
        }
        const std::uint64_t table_bytes = std::uint64_t{config.msix_vectors} * 16U;
        const std::uint64_t pba_bytes = (std::uint64_t{config.msix_vectors} + 63U) / 64U * 8U;
        if (!structure_fits(config.msix_table_offset, table_bytes, config.bar0_size)) {
            throw std::invalid_argument{"nvmekit::pci::config_space: msix_table_offset must be 8-byte "
                                        "aligned, below 4 GiB and leave the table "
                                        "inside BAR0"};
        }
        if (!structure_fits(config.msix_pba_offset, pba_bytes, config.bar0_size)) {
            throw std::invalid_argument{"nvmekit::pci::config_space: msix_pba_offset must be 8-byte aligned, "
                                        "below 4 GiB and leave the PBA "
                                        "inside BAR0"};
        }
        if (config.msix_table_offset < config.msix_pba_offset + pba_bytes &&
            config.msix_pba_offset < config.msix_table_offset + table_bytes) {
            throw std::invalid_argument{"nvmekit::pci::config_space: the MSI-X table and PBA overlap"};
        }
        if (config.interrupt_pin > 4) {
            throw std::invalid_argument{"nvmekit::pci::config_space: interrupt_pin must be 0 to 4"};
        }
        if (config.link_speed < 1 || config.link_speed > 6) {
            throw std::invalid_argument{"nvmekit::pci::config_space: link_speed must be 1 to 6"};
        }
        switch (config.link_width) {
        case 1:
        case 2:
        case 4:
        case 8:
        case 12:
        case 16:
        case 32: break;
        default:
            throw std::invalid_argument{
                "nvmekit::pci::config_space: link_width must be 1, 2, 4, 8, 12, 16 or 32"};
        }
        return config;
    }

    [[nodiscard]] static constexpr bool structure_fits(std::uint64_t offset, std::uint64_t size,
                                                       std::uint64_t bar_size) noexcept
    {
        return offset % 8 == 0 && offset <= 0xffff'fff8U && offset < bar_size && size <= bar_size - offset;
    }

    [[nodiscard]] static constexpr bool access_valid(std::uint32_t offset, unsigned width) noexcept
    {
        return (width == 1 || width == 2 || width == 4) && offset < config_space_bytes && offset % width == 0;
    }

    [[nodiscard]] static constexpr std::uint32_t all_ones(unsigned width) noexcept
    {
        return width == 1 ? 0xffU : width == 2 ? 0xffffU : 0xffff'ffffU;
    }

    [[nodiscard]] std::uint32_t load(std::uint32_t offset, unsigned width) const noexcept
    {
        NVMEKIT_ASSERT(offset + width <= config_space_bytes, "config_space: load past the end");
        std::uint32_t value = 0;
        for (unsigned i = 0; i < width; ++i) {
            value |= std::uint32_t{values_[offset + i]} << (8 * i);
        }
        return value;
    }
    [[nodiscard]] std::uint16_t load16(std::uint32_t offset) const noexcept
    {
        return static_cast<std::uint16_t>(load(offset, 2));
    }

    static void put(bytes& target, std::uint32_t offset, unsigned width, std::uint64_t value) noexcept
    {
        NVMEKIT_ASSERT(offset + width <= config_space_bytes, "config_space: store past the end");
        for (unsigned i = 0; i < width; ++i) {
            target[offset + i] = static_cast<std::uint8_t>(value >> (8 * i));
        }
    }
    void store16(std::uint32_t offset, std::uint16_t value) noexcept { put(values_, offset, 2, value); }

    [[nodiscard]] std::uint64_t bar0_raw() const noexcept
    {
        return spec::join_dwords(load(header::bar0, 4), load(header::bar1, 4));
    }
    [[nodiscard]] command_register command() const noexcept
    {
        return command_register{load16(header::command)};
    }
    [[nodiscard]] msix_message_control msix_control() const noexcept
    {
        return msix_message_control{load16(msix_control_offset)};
    }

    [[nodiscard]] state snapshot() const noexcept
    {
        return {load16(header::command), bar0_address(), load16(msix_control_offset), power_state()};
    }

    [[nodiscard]] config_event event_between(const state& before, const state& after) const noexcept
    {
        config_event event;
        event.command_changed = before.command != after.command;
        event.bar0_changed = before.bar0 != after.bar0;
        event.msix_changed = before.msix != after.msix;
        event.power_state_changed = before.power != after.power;
        event.memory_enabled = memory_enabled();
        event.bus_master = bus_master();
        event.interrupt_disable = interrupt_disable();
        event.bar0_address = after.bar0;
        event.msix_enabled = msix_enabled();
        event.msix_function_mask = msix_function_mask();
        event.power_state = after.power;
        return event;
    }

    /// Builds the power-on contents and the write and write-1-to-clear masks.
    void initialise() noexcept
    {
        values_.fill(0);
        write_mask_.fill(0);
        clear_mask_.fill(0);

        put(values_, header::vendor_id, 2, config_.vendor_id);
        put(values_, header::device_id, 2, config_.device_id);
        put(write_mask_, header::command, 2, command_register::writable);
        put(values_, header::status, 2, status_register{}.with(status_register::capabilities_list, true).raw);
        put(clear_mask_, header::status, 2, status_register::write_one_to_clear);
        put(values_, header::revision_id, 1, config_.revision_id);
        put(values_, header::class_code, 3, nvme_class_code);
        put(write_mask_, header::cache_line_size, 1, 0xff); // PCIe Base 4.0 7.5.1.1.7: RW, no effect
        // BAR0/BAR1: 64-bit (bits 02:01 = 10b) non-prefetchable memory; the address bits below the
        // size are read-only 0, which is what the sizing protocol reads back (PCI Local Bus 3.0 6.2.5.1).
        put(values_, header::bar0, 4, 0x4);
        const std::uint64_t address_bits = ~(config_.bar0_size - 1U) & ~std::uint64_t{0xf};
        put(write_mask_, header::bar0, 8, address_bits);
        put(values_, header::subsystem_vendor_id, 2, config_.subsystem_vendor_id);
        put(values_, header::subsystem_id, 2, config_.subsystem_id);
        put(values_, header::capabilities_pointer, 1, power_management_capability_offset);
        put(write_mask_, header::interrupt_line, 1, 0xff);
        put(values_, header::interrupt_pin, 1, config_.interrupt_pin);

        constexpr std::uint32_t pm = power_management_capability_offset;
        put(values_, pm, 1, capability_id::power_management);
        put(values_, pm + 1, 1, msix_capability_offset);
        put(values_, pm + power_management_register::capabilities, 2,
            power_management_capabilities{}.with(power_management_capabilities::version, 3).raw);
        put(values_, pmcsr_offset, 2,
            power_management_control{}.with(power_management_control::no_soft_reset, true).raw);
        put(write_mask_, pmcsr_offset, 2, power_management_control::power_state.mask);

        constexpr std::uint32_t msix = msix_capability_offset;
        put(values_, msix, 1, capability_id::msix);
        put(values_, msix + 1, 1, pci_express_capability_offset);
        put(values_, msix_control_offset, 2,
            msix_message_control{}
                .with(msix_message_control::table_size, static_cast<std::uint16_t>(config_.msix_vectors - 1U))
                .raw);
        put(write_mask_, msix_control_offset, 2,
            msix_message_control::function_mask.mask | msix_message_control::enable.mask);
        put(values_, msix + msix_register::table, 4, config_.msix_table_offset); // BIR 0 = BAR0
        put(values_, msix + msix_register::pba, 4, config_.msix_pba_offset);

        constexpr std::uint32_t express = pci_express_capability_offset;
        put(values_, express, 1, capability_id::pci_express);
        put(values_, express + 1, 1, 0); // end of the capability list
        put(values_, express + pci_express_register::capabilities, 2,
            pci_express_capabilities{}.with(pci_express_capabilities::version, 2).raw);
        put(values_, express + pci_express_register::device_capabilities, 4,
            device_capabilities{}
                .with(device_capabilities::role_based_error_reporting, true)
                .with(device_capabilities::function_level_reset, true)
                .raw);
        put(values_, device_control_offset, 2,
            device_control{}
                .with(device_control::relaxed_ordering, true)
                .with(device_control::no_snoop, true)
                .with(device_control::max_read_request_size, 2)
                .raw);
        put(write_mask_, device_control_offset, 2, device_control::writable);
        put(clear_mask_, device_status_offset, 2, device_status::write_one_to_clear);
        put(values_, express + pci_express_register::link_capabilities, 4,
            link_capabilities{}
                .with(link_capabilities::max_link_speed, config_.link_speed)
                .with(link_capabilities::max_link_width, config_.link_width)
                .raw);
        put(write_mask_, link_control_offset, 2, link_control::writable);
        put(values_, express + pci_express_register::link_status, 2,
            link_status{}
                .with(link_status::current_link_speed, config_.link_speed)
                .with(link_status::negotiated_link_width, config_.link_width)
                .with(link_status::slot_clock_configuration, true)
                .raw);
        put(values_, express + pci_express_register::link_capabilities_2, 4,
            link_capabilities_2{}
                .with(link_capabilities_2::supported_link_speeds,
                      static_cast<std::uint8_t>((1U << config_.link_speed) - 1U))
                .raw);
        put(values_, express + pci_express_register::link_control_2, 2,
            link_control_2{}.with(link_control_2::target_link_speed, config_.link_speed).raw);
        // The extended space at 100h starts with an all-zero header: no extended capabilities
        // (PCIe Base 4.0 7.6.3).
    }

    nvme_function_config config_;
    bytes values_{};
    bytes write_mask_{};
    bytes clear_mask_{};
    std::uint64_t rejected_accesses_ = 0;
};

/// Carries out on the function's `controller` and `interrupts` what configuration write `event` of
/// `config` changed: a Function Level Reset, MSI-X Enable and Function Mask, Interrupt Disable and
/// Bus Master Enable, and where BAR0 now is (the controller refuses DMA into its own registers
/// there). What a transport that owns configuration space calls after each write.
template <typename Controller, typename Interrupts>
void apply_config_event(const config_event& event, const config_space& config, Controller& controller,
                        Interrupts& interrupts)
{
    if (event.flr_requested) {
        controller.function_level_reset();
    }
    if (event.msix_changed || event.flr_requested) {
        controller.set_msix_control(event.msix_enabled, event.msix_function_mask);
    }
    if (event.command_changed || event.flr_requested) {
        interrupts.set_intx_disabled(event.interrupt_disable);
        controller.set_bus_master(event.bus_master);
    }
    if (event.bar0_changed || event.flr_requested) {
        controller.set_bar0_address(config.bar0_address());
    }
}

} // namespace pci
NVMEKIT_END_NAMESPACE
