#pragma once
/// Log pages returned by Get Log Page (Base 2.0 5.16) and the Asynchronous Event Request
/// completion that announces them (Base 2.0 5.2).
///
/// The Get Log Page command dwords are decoded in commands.hpp; this header holds the log
/// identifiers and the data structures the controller returns.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nvmekit/config.hpp>
#include <nvmekit/spec/bits.hpp>
#include <nvmekit/spec/status.hpp>
#include <nvmekit/spec/text.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace spec {

/// Log Page Identifier (Get Log Page CDW10.LID), Base 2.0 5.16. C0h-FFh are vendor specific.
enum class log_page_id : std::uint8_t {
    supported_log_pages = 0x00,
    error_information = 0x01,
    smart_health = 0x02,
    firmware_slot = 0x03,
    changed_namespace_list = 0x04,
    commands_supported_and_effects = 0x05,
    device_self_test = 0x06,
    telemetry_host_initiated = 0x07,
    telemetry_controller_initiated = 0x08,
    endurance_group_information = 0x09,
    predictable_latency_per_nvm_set = 0x0a,
    predictable_latency_event_aggregate = 0x0b,
    asymmetric_namespace_access = 0x0c,
    persistent_event = 0x0d,
    lba_status_information = 0x0e,
    endurance_group_event_aggregate = 0x0f,
    media_unit_status = 0x10,
    supported_capacity_configuration_list = 0x11,
    feature_identifiers_supported_and_effects = 0x12,
    nvme_mi_commands_supported_and_effects = 0x13,
    command_and_feature_lockdown = 0x14,
    boot_partition = 0x15,
    rotational_media_information = 0x16,
    discovery = 0x70,
    reservation_notification = 0x80,
    sanitize_status = 0x81,
};

/// Log identifiers C0h-FFh are vendor specific.
[[nodiscard]] constexpr bool is_vendor_specific(log_page_id id) noexcept
{
    return static_cast<std::uint8_t>(id) >= 0xc0;
}

/// Name of a log page as the spec titles it, or an empty view for a reserved or vendor-specific
/// identifier.
[[nodiscard]] constexpr std::string_view name(log_page_id id) noexcept
{
    using enum log_page_id;
    switch (id) {
    case supported_log_pages: return "Supported Log Pages";
    case error_information: return "Error Information";
    case smart_health: return "SMART / Health Information";
    case firmware_slot: return "Firmware Slot Information";
    case changed_namespace_list: return "Changed Namespace List";
    case commands_supported_and_effects: return "Commands Supported and Effects";
    case device_self_test: return "Device Self-test";
    case telemetry_host_initiated: return "Telemetry Host-Initiated";
    case telemetry_controller_initiated: return "Telemetry Controller-Initiated";
    case endurance_group_information: return "Endurance Group Information";
    case predictable_latency_per_nvm_set: return "Predictable Latency Per NVM Set";
    case predictable_latency_event_aggregate: return "Predictable Latency Event Aggregate";
    case asymmetric_namespace_access: return "Asymmetric Namespace Access";
    case persistent_event: return "Persistent Event Log";
    case lba_status_information: return "LBA Status Information";
    case endurance_group_event_aggregate: return "Endurance Group Event Aggregate";
    case media_unit_status: return "Media Unit Status";
    case supported_capacity_configuration_list: return "Supported Capacity Configuration List";
    case feature_identifiers_supported_and_effects: return "Feature Identifiers Supported and Effects";
    case nvme_mi_commands_supported_and_effects: return "NVMe-MI Commands Supported and Effects";
    case command_and_feature_lockdown: return "Command and Feature Lockdown";
    case boot_partition: return "Boot Partition";
    case rotational_media_information: return "Rotational Media Information";
    case discovery: return "Discovery";
    case reservation_notification: return "Reservation Notification";
    case sanitize_status: return "Sanitize Status";
    }
    return {};
}

/// Value of the SQID, CID and Parameter Error Location fields of an error that is not tied to
/// a queue, a command or a parameter (Base 2.0 5.16.1.2).
inline constexpr std::uint16_t error_field_not_applicable = 0xffff;

/// Parameter Error Location of an Error Information entry: where in the submission queue entry
/// the faulty parameter is.
struct parameter_error_location : word<parameter_error_location, std::uint16_t> {
    using word::word;
    static constexpr field<0, 8, std::uint8_t> byte_offset{}; // Byte in command: bits 07:00
    static constexpr field<8, 3, std::uint8_t> bit{};         // Bit in command: bits 10:08

    /// The location of bit `bit_index` of byte `byte_index` of the submission queue entry.
    [[nodiscard]] static constexpr parameter_error_location at(std::uint8_t byte_index,
                                                               std::uint8_t bit_index) noexcept
    {
        return parameter_error_location{}.with(byte_offset, byte_index).with(bit, bit_index);
    }
    [[nodiscard]] static constexpr parameter_error_location not_applicable() noexcept
    {
        return parameter_error_location{error_field_not_applicable};
    }
};
static_assert(sizeof(parameter_error_location) == 2);
static_assert(is_wire_type_v<parameter_error_location>);

/// Error Information Log Entry (log 01h; each entry 64 bytes), Base 2.0 5.16.1.2.
struct error_information_entry {
    std::uint64_t error_count;                    // bytes 07:00 Error Count (0 = invalid entry)
    std::uint16_t sqid;                           // bytes 09:08 Submission Queue ID
    std::uint16_t cid;                            // bytes 11:10 Command ID
    std::uint16_t status_field;                   // bytes 13:12 Phase Tag bit 00, Status bits 15:01
    parameter_error_location error_location;      // bytes 15:14 Parameter Error Location
    std::uint64_t lba;                            // bytes 23:16 LBA
    std::uint32_t nsid;                           // bytes 27:24 Namespace
    std::uint8_t vendor_specific_log_page;        // byte 28 Vendor Specific Information Available
    std::uint8_t transport_type;                  // byte 29 Transport Type (TRTYPE)
    std::array<std::uint8_t, 2> rsvd30;           // bytes 31:30
    std::uint64_t command_specific_information;   // bytes 39:32 Command Specific Information
    std::uint16_t transport_specific_information; // bytes 41:40 Transport Type Specific Information
    std::array<std::uint8_t, 22> rsvd42;          // bytes 63:42

    /// The status the failed command completed with.
    [[nodiscard]] constexpr spec::status status() const noexcept
    {
        return spec::status{static_cast<std::uint16_t>(status_field >> 1)};
    }
    /// The phase tag the failed command's completion was posted with.
    [[nodiscard]] constexpr bool phase() const noexcept { return (status_field & 1U) != 0; }
    constexpr void set_status(spec::status value, bool phase_tag) noexcept
    {
        status_field = static_cast<std::uint16_t>((value.raw << 1) | (phase_tag ? 1U : 0U));
    }

    friend constexpr bool operator==(const error_information_entry&,
                                     const error_information_entry&) noexcept = default;
};
static_assert(sizeof(error_information_entry) == 64);
static_assert(is_wire_type_v<error_information_entry>);
static_assert(offsetof(error_information_entry, error_count) == 0);
static_assert(offsetof(error_information_entry, sqid) == 8);
static_assert(offsetof(error_information_entry, cid) == 10);
static_assert(offsetof(error_information_entry, status_field) == 12);
static_assert(offsetof(error_information_entry, error_location) == 14);
static_assert(offsetof(error_information_entry, lba) == 16);
static_assert(offsetof(error_information_entry, nsid) == 24);
static_assert(offsetof(error_information_entry, vendor_specific_log_page) == 28);
static_assert(offsetof(error_information_entry, transport_type) == 29);
static_assert(offsetof(error_information_entry, command_specific_information) == 32);
static_assert(offsetof(error_information_entry, transport_specific_information) == 40);
static_assert(offsetof(error_information_entry, rsvd42) == 42);

/// Critical Warning of the SMART / Health Information log (byte 0), Base 2.0 5.16.1.3. Each set
/// bit is a current condition and may raise a SMART / Health asynchronous event.
struct smart_critical_warning : word<smart_critical_warning, std::uint8_t> {
    using word::word;
    // clang-format off
    static constexpr field<0, 1, bool> spare_below_threshold{};   // bit 00 available spare below threshold
    static constexpr field<1, 1, bool> temperature{};             // bit 01 temperature above over- or below under-threshold
    static constexpr field<2, 1, bool> reliability_degraded{};    // bit 02 NVM subsystem reliability degraded
    static constexpr field<3, 1, bool> read_only{};               // bit 03 all media placed in read-only mode
    static constexpr field<4, 1, bool> volatile_backup_failed{};  // bit 04 volatile memory backup device failed
    static constexpr field<5, 1, bool> pmr_read_only{};           // bit 05 Persistent Memory Region placed in read-only mode
    // clang-format on
};
static_assert(sizeof(smart_critical_warning) == 1);
static_assert(is_wire_type_v<smart_critical_warning>);

/// Endurance Group Critical Warning Summary of the SMART / Health Information log (byte 6): the
/// OR of the critical warnings of all Endurance Groups.
struct endurance_group_critical_warning : word<endurance_group_critical_warning, std::uint8_t> {
    using word::word;
    static constexpr field<0, 1, bool> spare_below_threshold{}; // bit 00
    static constexpr field<2, 1, bool> reliability_degraded{};  // bit 02
    static constexpr field<3, 1, bool> read_only{};             // bit 03
};
static_assert(sizeof(endurance_group_critical_warning) == 1);
static_assert(is_wire_type_v<endurance_group_critical_warning>);

/// SMART / Health Information log (log 02h, 512 bytes), Base 2.0 5.16.1.3.
struct smart_health_log {
    // clang-format off
    smart_critical_warning critical_warning;                        // byte 0 Critical Warning
    std::array<std::uint8_t, 2> composite_temperature;              // bytes 02:01 Composite Temperature (Kelvin)
    std::uint8_t available_spare;                                   // byte 3 Available Spare (percent)
    std::uint8_t available_spare_threshold;                         // byte 4 Available Spare Threshold (percent)
    std::uint8_t percentage_used;                                   // byte 5 Percentage Used (may exceed 100)
    endurance_group_critical_warning endurance_group_warning_summary; // byte 6 Endurance Group Critical Warning Summary
    std::array<std::uint8_t, 25> rsvd7;                             // bytes 31:07
    uint128_le data_units_read;                                     // bytes 47:32 Data Units Read (1000 x 512 bytes)
    uint128_le data_units_written;                                  // bytes 63:48 Data Units Written (1000 x 512 bytes)
    uint128_le host_read_commands;                                  // bytes 79:64 Host Read Commands
    uint128_le host_write_commands;                                 // bytes 95:80 Host Write Commands
    uint128_le controller_busy_time;                                // bytes 111:96 Controller Busy Time (minutes)
    uint128_le power_cycles;                                        // bytes 127:112 Power Cycles
    uint128_le power_on_hours;                                      // bytes 143:128 Power On Hours
    uint128_le unsafe_shutdowns;                                    // bytes 159:144 Unsafe Shutdowns
    uint128_le media_errors;                                        // bytes 175:160 Media and Data Integrity Errors
    uint128_le error_log_entries;                                   // bytes 191:176 Number of Error Information Log Entries
    std::uint32_t warning_temperature_time;                         // bytes 195:192 Warning Composite Temperature Time (minutes)
    std::uint32_t critical_temperature_time;                        // bytes 199:196 Critical Composite Temperature Time (minutes)
    std::array<std::uint16_t, 8> temperature_sensors;               // bytes 215:200 Temperature Sensor 1-8 (Kelvin, 0 = not implemented)
    std::uint32_t thermal_management_temp1_transitions;             // bytes 219:216 Thermal Management Temperature 1 Transition Count
    std::uint32_t thermal_management_temp2_transitions;             // bytes 223:220 Thermal Management Temperature 2 Transition Count
    std::uint32_t thermal_management_temp1_total_time;              // bytes 227:224 Total Time For Thermal Management Temperature 1 (seconds)
    std::uint32_t thermal_management_temp2_total_time;              // bytes 231:228 Total Time For Thermal Management Temperature 2 (seconds)
    std::array<std::uint8_t, 280> rsvd232;                          // bytes 511:232
    // clang-format on

    [[nodiscard]] constexpr std::uint16_t composite_temperature_kelvin() const noexcept
    {
        return load_le<std::uint16_t>(composite_temperature, 0);
    }
    constexpr void set_composite_temperature_kelvin(std::uint16_t kelvin) noexcept
    {
        store_le(composite_temperature, 0, kelvin);
    }

    friend constexpr bool operator==(const smart_health_log&, const smart_health_log&) noexcept = default;
};
static_assert(sizeof(smart_health_log) == 512);
static_assert(is_wire_type_v<smart_health_log>);
static_assert(offsetof(smart_health_log, composite_temperature) == 1);
static_assert(offsetof(smart_health_log, available_spare) == 3);
static_assert(offsetof(smart_health_log, available_spare_threshold) == 4);
static_assert(offsetof(smart_health_log, percentage_used) == 5);
static_assert(offsetof(smart_health_log, endurance_group_warning_summary) == 6);
static_assert(offsetof(smart_health_log, data_units_read) == 32);
static_assert(offsetof(smart_health_log, data_units_written) == 48);
static_assert(offsetof(smart_health_log, host_read_commands) == 64);
static_assert(offsetof(smart_health_log, host_write_commands) == 80);
static_assert(offsetof(smart_health_log, controller_busy_time) == 96);
static_assert(offsetof(smart_health_log, power_cycles) == 112);
static_assert(offsetof(smart_health_log, power_on_hours) == 128);
static_assert(offsetof(smart_health_log, unsafe_shutdowns) == 144);
static_assert(offsetof(smart_health_log, media_errors) == 160);
static_assert(offsetof(smart_health_log, error_log_entries) == 176);
static_assert(offsetof(smart_health_log, warning_temperature_time) == 192);
static_assert(offsetof(smart_health_log, critical_temperature_time) == 196);
static_assert(offsetof(smart_health_log, temperature_sensors) == 200);
static_assert(offsetof(smart_health_log, thermal_management_temp1_transitions) == 216);
static_assert(offsetof(smart_health_log, thermal_management_temp2_transitions) == 220);
static_assert(offsetof(smart_health_log, thermal_management_temp1_total_time) == 224);
static_assert(offsetof(smart_health_log, thermal_management_temp2_total_time) == 228);
static_assert(offsetof(smart_health_log, rsvd232) == 232);

/// Active Firmware Info (AFI) of the Firmware Slot Information log (byte 0).
struct active_firmware_info : word<active_firmware_info, std::uint8_t> {
    using word::word;
    // clang-format off
    static constexpr field<0, 3, std::uint8_t> active_slot{};  // bits 02:00 slot of the running firmware
    static constexpr field<4, 3, std::uint8_t> next_slot{};    // bits 06:04 slot activated at the next reset (0 = none)
    // clang-format on
};
static_assert(sizeof(active_firmware_info) == 1);
static_assert(is_wire_type_v<active_firmware_info>);

/// Firmware Slot Information log (log 03h, 512 bytes), Base 2.0 5.16.1.4. Slots are numbered
/// 1 to 7, as in the spec.
struct firmware_slot_log {
    static constexpr std::size_t slot_count = 7;
    static constexpr std::size_t revision_length = 8;
    using revision_type = std::array<char, revision_length>;

    active_firmware_info afi;                        // byte 0 Active Firmware Info
    std::array<std::uint8_t, 7> rsvd1;               // bytes 07:01
    std::array<revision_type, slot_count> revisions; // bytes 63:08 FRS1-FRS7, FRSn at 8 + 8 * (n - 1)
    std::array<std::uint8_t, 448> rsvd64;            // bytes 511:64

    /// The firmware revision in `slot` (1-7), up to its first NUL and without trailing spaces;
    /// empty when the slot holds no valid firmware.
    [[nodiscard]] constexpr std::string_view revision(std::size_t slot) const noexcept
    {
        NVMEKIT_ASSERT(slot >= 1 && slot <= slot_count, "firmware slots are numbered 1 to 7");
        return text_of(revisions[slot - 1]);
    }
    /// Stores `value` in `slot` (1-7), padded with spaces; an empty value clears the slot to
    /// zeros, which the spec requires for a slot without valid firmware. Returns false, and
    /// changes nothing, when `value` is longer than 8 characters.
    constexpr bool set_revision(std::size_t slot, std::string_view value) noexcept
    {
        NVMEKIT_ASSERT(slot >= 1 && slot <= slot_count, "firmware slots are numbered 1 to 7");
        if (value.size() > revision_length) {
            return false;
        }
        revision_type& text = revisions[slot - 1];
        return value.empty() ? assign_null_padded(text, value) : assign_space_padded(text, value);
    }

    friend constexpr bool operator==(const firmware_slot_log&, const firmware_slot_log&) noexcept = default;
};
static_assert(sizeof(firmware_slot_log) == 512);
static_assert(is_wire_type_v<firmware_slot_log>);
static_assert(offsetof(firmware_slot_log, afi) == 0);
static_assert(offsetof(firmware_slot_log, revisions) == 8);
static_assert(offsetof(firmware_slot_log, rsvd64) == 64);

/// Changed Namespace List log (log 04h, 4096 bytes), Base 2.0 5.16.1.5: up to 1024 NSIDs in
/// increasing order, zero-filled after the last one.
struct changed_namespace_list {
    static constexpr std::size_t max_entries = 1024;
    /// First entry when more than 1024 namespaces changed; the rest of the list is then zero.
    static constexpr std::uint32_t overflow_marker = 0xffffffff;

    std::array<std::uint32_t, max_entries> nsids; // bytes 4095:00, entry n at 4 * n

    /// Whether more namespaces changed than the list can hold.
    [[nodiscard]] constexpr bool overflowed() const noexcept { return nsids[0] == overflow_marker; }
    /// Number of NSIDs listed (0 when overflowed).
    [[nodiscard]] constexpr std::size_t count() const noexcept
    {
        if (overflowed()) {
            return 0;
        }
        std::size_t n = 0;
        while (n < max_entries && nsids[n] != 0) {
            ++n;
        }
        return n;
    }

    friend constexpr bool operator==(const changed_namespace_list&,
                                     const changed_namespace_list&) noexcept = default;
};
static_assert(sizeof(changed_namespace_list) == 4096);
static_assert(is_wire_type_v<changed_namespace_list>);

/// Command Submission and Execution (CSE) of a command's effects, Base 2.0 5.16.1.6.
enum class command_submission_execution : std::uint8_t {
    no_restriction = 0b000,
    /// Submitted only when no other command to the same namespace is outstanding, and no other
    /// command to that namespace is submitted until it completes.
    same_namespace_exclusive = 0b001,
    /// Submitted only when no other command to any namespace is outstanding, and no other
    /// command to any namespace is submitted until it completes.
    any_namespace_exclusive = 0b010,
};

/// Commands Supported and Effects data structure of one opcode, Base 2.0 5.16.1.6.
struct command_effects : word<command_effects, std::uint32_t> {
    using word::word;
    // clang-format off
    static constexpr field<0, 1, bool> csupp{};                              // CSUPP: bit 00 command supported
    static constexpr field<1, 1, bool> lbcc{};                               // LBCC: bit 01 logical block content change
    static constexpr field<2, 1, bool> ncc{};                                // NCC: bit 02 namespace capability change
    static constexpr field<3, 1, bool> nic{};                                // NIC: bit 03 namespace inventory change
    static constexpr field<4, 1, bool> ccc{};                                // CCC: bit 04 controller capability change
    static constexpr field<16, 3, command_submission_execution> cse{};       // CSE: bits 18:16
    static constexpr field<19, 1, bool> uss{};                               // USS: bit 19 UUID selection supported
    // clang-format on
};
static_assert(sizeof(command_effects) == 4);
static_assert(is_wire_type_v<command_effects>);

/// Commands Supported and Effects log (log 05h, 4096 bytes), Base 2.0 5.16.1.6, indexed by
/// opcode. The I/O entries describe the command set chosen by the Get Log Page CSI.
struct commands_supported_and_effects {
    std::array<command_effects, 256> admin_commands; // bytes 1023:00 ACS0-ACS255
    std::array<command_effects, 256> io_commands;    // bytes 2047:1024 IOCS0-IOCS255
    std::array<std::uint8_t, 2048> rsvd2048;         // bytes 4095:2048

    friend constexpr bool operator==(const commands_supported_and_effects&,
                                     const commands_supported_and_effects&) noexcept = default;
};
static_assert(sizeof(commands_supported_and_effects) == 4096);
static_assert(is_wire_type_v<commands_supported_and_effects>);
static_assert(offsetof(commands_supported_and_effects, admin_commands) == 0);
static_assert(offsetof(commands_supported_and_effects, io_commands) == 1024);
static_assert(offsetof(commands_supported_and_effects, rsvd2048) == 2048);

/// Action Type of Get LBA Status (CDW13.ATYPE) and Recommended Action Type of the LBA Status
/// Information log, Base 2.0 (Get LBA Status command).
enum class lba_status_action : std::uint8_t {
    scan_untracked = 0x10, ///< scan, then report untracked and tracked Potentially Unrecoverable LBAs
    tracked = 0x11,        ///< report the tracked Potentially Unrecoverable LBAs
};

/// "scan untracked", "tracked"; empty for a reserved value.
[[nodiscard]] constexpr std::string_view name(lba_status_action value) noexcept
{
    switch (value) {
    case lba_status_action::scan_untracked: return "scan untracked";
    case lba_status_action::tracked: return "tracked";
    }
    return {};
}

/// LBA Status Information log (0Eh) header, Base 2.0 (LBA Status Information log page). Namespace
/// elements follow it, each a `lba_status_namespace_element` and its LBA range descriptors.
struct lba_status_log_header {
    std::uint32_t lslplen;              // bytes 03:00 LSLPLEN LBA Status Log Page Length (bytes)
    std::uint32_t nlslne;               // bytes 07:04 NLSLNE Number of LBA Status Log Namespace Elements
    std::uint32_t estulb;               // bytes 11:08 ESTULB Estimate of Unrecoverable Logical Blocks
    std::array<std::uint8_t, 2> rsvd12; // bytes 13:12
    std::uint16_t lsgc;                 // bytes 15:14 LSGC LBA Status Generation Counter
};
static_assert(sizeof(lba_status_log_header) == 16);
static_assert(offsetof(lba_status_log_header, lslplen) == 0);
static_assert(offsetof(lba_status_log_header, nlslne) == 4);
static_assert(offsetof(lba_status_log_header, estulb) == 8);
static_assert(offsetof(lba_status_log_header, lsgc) == 14);
static_assert(is_wire_type_v<lba_status_log_header>);

/// LBA Status Log Namespace Element header (16 bytes): NLRD LBA range descriptors follow it.
struct lba_status_namespace_element {
    std::uint32_t neid;                // bytes 03:00 NEID Namespace Element Identifier (the NSID)
    std::uint32_t nlrd;                // bytes 07:04 NLRD Number of LBA Range Descriptors
    lba_status_action ratype;          // byte 08 RATYPE Recommended Action Type
    std::array<std::uint8_t, 7> rsvd9; // bytes 15:09
};
static_assert(sizeof(lba_status_namespace_element) == 16);
static_assert(offsetof(lba_status_namespace_element, neid) == 0);
static_assert(offsetof(lba_status_namespace_element, nlrd) == 4);
static_assert(offsetof(lba_status_namespace_element, ratype) == 8);
static_assert(is_wire_type_v<lba_status_namespace_element>);

/// LBA Range Descriptor of a namespace element (16 bytes).
struct lba_range_descriptor {
    std::uint64_t rslba;                // bytes 07:00 RSLBA Range Starting LBA
    std::uint32_t rnlb;                 // bytes 11:08 RNLB Range Number of Logical Blocks
    std::array<std::uint8_t, 4> rsvd12; // bytes 15:12
};
static_assert(sizeof(lba_range_descriptor) == 16);
static_assert(offsetof(lba_range_descriptor, rslba) == 0);
static_assert(offsetof(lba_range_descriptor, rnlb) == 8);
static_assert(is_wire_type_v<lba_range_descriptor>);

/// Header (first 512-byte block) of the Telemetry Host-Initiated log (07h) and the Telemetry
/// Controller-Initiated log (08h), Base 2.0 5.16.1.8 and 5.16.1.9. Data areas follow in
/// 512-byte blocks numbered from 1.
struct telemetry_log_header {
    static constexpr std::size_t block_size = 512;

    // clang-format off
    std::uint8_t log_identifier;                     // byte 0 Log Identifier (07h or 08h)
    std::array<std::uint8_t, 4> rsvd1;               // bytes 04:01
    std::array<std::uint8_t, 3> ieee_oui;            // bytes 07:05 IEEE OUI Identifier
    std::uint16_t data_area1_last_block;             // bytes 09:08 Data Area 1 Last Block
    std::uint16_t data_area2_last_block;             // bytes 11:10 Data Area 2 Last Block
    std::uint16_t data_area3_last_block;             // bytes 13:12 Data Area 3 Last Block
    std::array<std::uint8_t, 2> rsvd14;              // bytes 15:14
    std::uint32_t data_area4_last_block;             // bytes 19:16 Data Area 4 Last Block (if ETDAS)
    std::array<std::uint8_t, 361> rsvd20;            // bytes 380:20
    std::uint8_t host_data_generation_number;        // byte 381 Telemetry Host-Initiated Data Generation Number (07h only; reserved in 08h)
    std::uint8_t controller_data_available;          // byte 382 Telemetry Controller-Initiated Data Available
    std::uint8_t controller_data_generation_number;  // byte 383 Telemetry Controller-Initiated Data Generation Number
    std::array<std::uint8_t, 128> reason_identifier; // bytes 511:384 Reason Identifier
    // clang-format on

    friend constexpr bool operator==(const telemetry_log_header&,
                                     const telemetry_log_header&) noexcept = default;
};
static_assert(sizeof(telemetry_log_header) == 512);
static_assert(is_wire_type_v<telemetry_log_header>);
static_assert(offsetof(telemetry_log_header, ieee_oui) == 5);
static_assert(offsetof(telemetry_log_header, data_area1_last_block) == 8);
static_assert(offsetof(telemetry_log_header, data_area2_last_block) == 10);
static_assert(offsetof(telemetry_log_header, data_area3_last_block) == 12);
static_assert(offsetof(telemetry_log_header, data_area4_last_block) == 16);
static_assert(offsetof(telemetry_log_header, rsvd20) == 20);
static_assert(offsetof(telemetry_log_header, host_data_generation_number) == 381);
static_assert(offsetof(telemetry_log_header, controller_data_available) == 382);
static_assert(offsetof(telemetry_log_header, controller_data_generation_number) == 383);
static_assert(offsetof(telemetry_log_header, reason_identifier) == 384);

/// Asynchronous Event Type (AER completion dword 0 bits 02:00), Base 2.0 5.2.1.
enum class async_event_type : std::uint8_t {
    error = 0b000,
    smart_health = 0b001,
    notice = 0b010,
    immediate = 0b011,
    io_command_set_specific = 0b110,
    vendor_specific = 0b111,
};

/// Asynchronous Event Information for Error events, Base 2.0 5.2.1.
enum class error_event : std::uint8_t {
    invalid_doorbell_register = 0x00, ///< Write to Invalid Doorbell Register
    invalid_doorbell_value = 0x01,    ///< Invalid Doorbell Write Value
    diagnostic_failure = 0x02,
    persistent_internal_error = 0x03,
    transient_internal_error = 0x04,
    firmware_image_load_error = 0x05,
};

/// Asynchronous Event Information for SMART / Health events, Base 2.0 5.2.1.
enum class smart_health_event : std::uint8_t {
    subsystem_reliability = 0x00,
    temperature_threshold = 0x01,
    spare_below_threshold = 0x02,
};

/// Asynchronous Event Information for Notice events, Base 2.0 5.2.1.
enum class notice_event : std::uint8_t {
    namespace_attribute_changed = 0x00,
    firmware_activation_starting = 0x01,
    telemetry_log_changed = 0x02,
    asymmetric_namespace_access_change = 0x03,
    predictable_latency_event_aggregate_log_change = 0x04,
    lba_status_information_alert = 0x05,
    endurance_group_event_aggregate_log_change = 0x06,
    discovery_log_page_change = 0xf0, ///< Fabrics discovery controllers only
};

/// Asynchronous Event Information for Immediate events, Base 2.0 5.2.1.
enum class immediate_event : std::uint8_t {
    normal_subsystem_shutdown = 0x00, ///< Normal NVM Subsystem Shutdown
};

/// Completion Dword 0 of an Asynchronous Event Request, Base 2.0 5.2.1.
struct async_event_completion : word<async_event_completion, std::uint32_t> {
    using word::word;
    // clang-format off
    static constexpr field<0, 3, async_event_type> event_type{};       // Asynchronous Event Type: bits 02:00
    static constexpr field<8, 8, std::uint8_t> event_information{};    // Asynchronous Event Information: bits 15:08
    static constexpr field<16, 8, log_page_id> log_page{};             // Log Page Identifier: bits 23:16
    // clang-format on

    constexpr async_event_completion() noexcept = default;
    constexpr async_event_completion(async_event_type type, std::uint8_t information,
                                     log_page_id log) noexcept
    {
        set(event_type, type);
        set(event_information, information);
        set(log_page, log);
    }
    constexpr explicit async_event_completion(error_event information,
                                              log_page_id log = log_page_id::error_information) noexcept
        : async_event_completion{async_event_type::error, static_cast<std::uint8_t>(information), log}
    {}
    constexpr explicit async_event_completion(smart_health_event information,
                                              log_page_id log = log_page_id::smart_health) noexcept
        : async_event_completion{async_event_type::smart_health, static_cast<std::uint8_t>(information), log}
    {}
    constexpr async_event_completion(notice_event information, log_page_id log) noexcept
        : async_event_completion{async_event_type::notice, static_cast<std::uint8_t>(information), log}
    {}
    constexpr async_event_completion(immediate_event information, log_page_id log) noexcept
        : async_event_completion{async_event_type::immediate, static_cast<std::uint8_t>(information), log}
    {}
};
static_assert(sizeof(async_event_completion) == 4);
static_assert(is_wire_type_v<async_event_completion>);

[[nodiscard]] constexpr std::string_view name(async_event_type type) noexcept
{
    using enum async_event_type;
    switch (type) {
    case error: return "Error";
    case smart_health: return "SMART / Health";
    case notice: return "Notice";
    case immediate: return "Immediate";
    case io_command_set_specific: return "I/O Command Set Specific";
    case vendor_specific: return "Vendor Specific";
    }
    return "Reserved";
}

[[nodiscard]] constexpr std::string_view name(error_event information) noexcept
{
    using enum error_event;
    switch (information) {
    case invalid_doorbell_register: return "Write to Invalid Doorbell Register";
    case invalid_doorbell_value: return "Invalid Doorbell Write Value";
    case diagnostic_failure: return "Diagnostic Failure";
    case persistent_internal_error: return "Persistent Internal Error";
    case transient_internal_error: return "Transient Internal Error";
    case firmware_image_load_error: return "Firmware Image Load Error";
    }
    return {};
}

[[nodiscard]] constexpr std::string_view name(smart_health_event information) noexcept
{
    using enum smart_health_event;
    switch (information) {
    case subsystem_reliability: return "NVM Subsystem Reliability";
    case temperature_threshold: return "Temperature Threshold";
    case spare_below_threshold: return "Spare Below Threshold";
    }
    return {};
}

[[nodiscard]] constexpr std::string_view name(notice_event information) noexcept
{
    using enum notice_event;
    switch (information) {
    case namespace_attribute_changed: return "Namespace Attribute Changed";
    case firmware_activation_starting: return "Firmware Activation Starting";
    case telemetry_log_changed: return "Telemetry Log Changed";
    case asymmetric_namespace_access_change: return "Asymmetric Namespace Access Change";
    case predictable_latency_event_aggregate_log_change:
        return "Predictable Latency Event Aggregate Log Change";
    case lba_status_information_alert: return "LBA Status Information Alert";
    case endurance_group_event_aggregate_log_change: return "Endurance Group Event Aggregate Log Page Change";
    case discovery_log_page_change: return "Discovery Log Page Change";
    }
    return {};
}

[[nodiscard]] constexpr std::string_view name(immediate_event information) noexcept
{
    switch (information) {
    case immediate_event::normal_subsystem_shutdown: return "Normal NVM Subsystem Shutdown";
    }
    return {};
}

/// Name of an event's information within its type, or an empty view for a reserved,
/// command-set-specific or vendor-specific value.
[[nodiscard]] constexpr std::string_view name(async_event_completion event) noexcept
{
    const std::uint8_t information = event.get(async_event_completion::event_information);
    switch (event.get(async_event_completion::event_type)) {
    case async_event_type::error: return name(static_cast<error_event>(information));
    case async_event_type::smart_health: return name(static_cast<smart_health_event>(information));
    case async_event_type::notice: return name(static_cast<notice_event>(information));
    case async_event_type::immediate: return name(static_cast<immediate_event>(information));
    case async_event_type::io_command_set_specific:
    case async_event_type::vendor_specific: return {};
    }
    return {};
}

} // namespace spec
NVMEKIT_END_NAMESPACE
