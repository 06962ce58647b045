#pragma once
/// Features: identifiers, the Get Features select values, and the value of each feature as Set
/// Features carries it in Command Dword 11 and Get Features returns it in completion Dword 0
/// (Base 2.0 5.27.1; NVM Command Set 1.0 4.1.3 for the NVM-specific ones). Features with a data
/// buffer (timestamp, host behavior support, LBA range type, APST) have their structures here.
///
/// The Get/Set Features command dwords (FID, SEL, SV) are decoded in commands.hpp.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nvmekit/config.hpp>
#include <nvmekit/spec/bits.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace spec {

/// Feature Identifier (Get/Set Features CDW10.FID), Base 2.0 5.27.1. C0h-FFh are vendor
/// specific.
enum class feature_id : std::uint8_t {
    arbitration = 0x01,
    power_management = 0x02,
    lba_range_type = 0x03,
    temperature_threshold = 0x04,
    error_recovery = 0x05,
    volatile_write_cache = 0x06,
    number_of_queues = 0x07,
    interrupt_coalescing = 0x08,
    interrupt_vector_configuration = 0x09,
    write_atomicity_normal = 0x0a,
    async_event_configuration = 0x0b,
    autonomous_power_state_transition = 0x0c,
    host_memory_buffer = 0x0d,
    timestamp = 0x0e,
    keep_alive_timer = 0x0f,
    host_controlled_thermal_management = 0x10,
    non_operational_power_state_config = 0x11,
    read_recovery_level_config = 0x12,
    predictable_latency_mode_config = 0x13,
    predictable_latency_mode_window = 0x14,
    lba_status_information_attributes = 0x15,
    host_behavior_support = 0x16,
    sanitize_config = 0x17,
    endurance_group_event_configuration = 0x18,
    io_command_set_profile = 0x19,
    software_progress_marker = 0x80,
    host_identifier = 0x81,
    reservation_notification_mask = 0x82,
    reservation_persistence = 0x83,
    namespace_write_protection_config = 0x84,
};

/// Feature identifiers C0h-FFh are vendor specific.
[[nodiscard]] constexpr bool is_vendor_specific(feature_id id) noexcept
{
    return static_cast<std::uint8_t>(id) >= 0xc0;
}

/// Name of a feature as the spec titles it, or an empty view for a reserved or vendor-specific
/// identifier.
[[nodiscard]] constexpr std::string_view name(feature_id id) noexcept
{
    using enum feature_id;
    switch (id) {
    case arbitration: return "Arbitration";
    case power_management: return "Power Management";
    case lba_range_type: return "LBA Range Type";
    case temperature_threshold: return "Temperature Threshold";
    case error_recovery: return "Error Recovery";
    case volatile_write_cache: return "Volatile Write Cache";
    case number_of_queues: return "Number of Queues";
    case interrupt_coalescing: return "Interrupt Coalescing";
    case interrupt_vector_configuration: return "Interrupt Vector Configuration";
    case write_atomicity_normal: return "Write Atomicity Normal";
    case async_event_configuration: return "Asynchronous Event Configuration";
    case autonomous_power_state_transition: return "Autonomous Power State Transition";
    case host_memory_buffer: return "Host Memory Buffer";
    case timestamp: return "Timestamp";
    case keep_alive_timer: return "Keep Alive Timer";
    case host_controlled_thermal_management: return "Host Controlled Thermal Management";
    case non_operational_power_state_config: return "Non-Operational Power State Config";
    case read_recovery_level_config: return "Read Recovery Level Config";
    case predictable_latency_mode_config: return "Predictable Latency Mode Config";
    case predictable_latency_mode_window: return "Predictable Latency Mode Window";
    case lba_status_information_attributes: return "LBA Status Information Attributes";
    case host_behavior_support: return "Host Behavior Support";
    case sanitize_config: return "Sanitize Config";
    case endurance_group_event_configuration: return "Endurance Group Event Configuration";
    case io_command_set_profile: return "I/O Command Set Profile";
    case software_progress_marker: return "Software Progress Marker";
    case host_identifier: return "Host Identifier";
    case reservation_notification_mask: return "Reservation Notification Mask";
    case reservation_persistence: return "Reservation Persistence";
    case namespace_write_protection_config: return "Namespace Write Protection Config";
    }
    return {};
}

/// Select (Get Features CDW10.SEL, bits 10:08): which value of a feature to return, Base 2.0 5.15.
enum class feature_select : std::uint8_t {
    current = 0b000,
    default_value = 0b001,
    saved = 0b010,
    supported_capabilities = 0b011,
};

[[nodiscard]] constexpr std::string_view name(feature_select select) noexcept
{
    using enum feature_select;
    switch (select) {
    case current: return "Current";
    case default_value: return "Default";
    case saved: return "Saved";
    case supported_capabilities: return "Supported Capabilities";
    }
    return "Reserved";
}

/// Completion Dword 0 of Get Features with SEL = Supported Capabilities, Base 2.0 5.15.
struct feature_capabilities : word<feature_capabilities, std::uint32_t> {
    using word::word;
    static constexpr field<0, 1, bool> saveable{};           // bit 00 the feature is saveable
    static constexpr field<1, 1, bool> namespace_specific{}; // bit 01 the feature is namespace specific
    static constexpr field<2, 1, bool> changeable{};         // bit 02 the feature is changeable
};
static_assert(sizeof(feature_capabilities) == 4);
static_assert(is_wire_type_v<feature_capabilities>);

/// Arbitration (01h) value.
struct arbitration : word<arbitration, std::uint32_t> {
    using word::word;
    /// Arbitration Burst value meaning no limit.
    static constexpr std::uint8_t no_burst_limit = 0b111;
    static constexpr field<0, 3, std::uint8_t> ab{};   // AB: bits 02:00 Arbitration Burst (2^n commands)
    static constexpr field<8, 8, std::uint8_t> lpw{};  // LPW: bits 15:08 Low Priority Weight (0's based)
    static constexpr field<16, 8, std::uint8_t> mpw{}; // MPW: bits 23:16 Medium Priority Weight (0's based)
    static constexpr field<24, 8, std::uint8_t> hpw{}; // HPW: bits 31:24 High Priority Weight (0's based)
};
static_assert(sizeof(arbitration) == 4);
static_assert(is_wire_type_v<arbitration>);

/// Power Management (02h) value.
struct power_management : word<power_management, std::uint32_t> {
    using word::word;
    static constexpr field<0, 5, std::uint8_t> ps{}; // PS: bits 04:00 Power State
    static constexpr field<5, 3, std::uint8_t> wh{}; // WH: bits 07:05 Workload Hint
};
static_assert(sizeof(power_management) == 4);
static_assert(is_wire_type_v<power_management>);

/// LBA Range Type (03h) value: the number of LBA Range Type entries in the data buffer, NVM
/// Command Set 1.0 4.1.3.1.
struct lba_range_type : word<lba_range_type, std::uint32_t> {
    using word::word;
    static constexpr field<0, 6, std::uint8_t> num{}; // NUM: bits 05:00 Number of LBA Ranges (0's based)
};
static_assert(sizeof(lba_range_type) == 4);
static_assert(is_wire_type_v<lba_range_type>);

/// Type of an LBA range. 80h-FFh are vendor specific.
enum class lba_range_kind : std::uint8_t {
    general_purpose = 0x00,
    filesystem = 0x01,
    raid = 0x02,
    cache = 0x03,
    page_or_swap_file = 0x04,
};

/// Attributes of an LBA range (entry byte 1).
struct lba_range_attributes : word<lba_range_attributes, std::uint8_t> {
    using word::word;
    static constexpr field<0, 1, bool> overwriteable{}; // LBARO: bit 00 the range may be overwritten
    static constexpr field<1, 1, bool> hidden{};        // HLBAR: bit 01 hide the range from OS / EFI / BIOS
};
static_assert(sizeof(lba_range_attributes) == 1);
static_assert(is_wire_type_v<lba_range_attributes>);

/// LBA Range Type data structure entry (64 bytes; up to 64 entries per buffer), NVM Command Set
/// 1.0 4.1.3.1.
struct lba_range_type_entry {
    lba_range_kind type;                 // byte 0 Type
    lba_range_attributes attributes;     // byte 1 Attributes
    std::array<std::uint8_t, 14> rsvd2;  // bytes 15:02
    std::uint64_t slba;                  // bytes 23:16 Starting LBA
    std::uint64_t nlb;                   // bytes 31:24 Number of Logical Blocks (0's based)
    std::array<std::uint8_t, 16> guid;   // bytes 47:32 Unique Identifier
    std::array<std::uint8_t, 16> rsvd48; // bytes 63:48

    friend constexpr bool operator==(const lba_range_type_entry&,
                                     const lba_range_type_entry&) noexcept = default;
};
static_assert(sizeof(lba_range_type_entry) == 64);
static_assert(is_wire_type_v<lba_range_type_entry>);
static_assert(offsetof(lba_range_type_entry, attributes) == 1);
static_assert(offsetof(lba_range_type_entry, slba) == 16);
static_assert(offsetof(lba_range_type_entry, nlb) == 24);
static_assert(offsetof(lba_range_type_entry, guid) == 32);
static_assert(offsetof(lba_range_type_entry, rsvd48) == 48);

/// Threshold Type Select (THSEL) of the Temperature Threshold feature.
enum class threshold_type : std::uint8_t {
    over = 0b00,
    under = 0b01,
};

/// Threshold Temperature Select (TMPSEL) of the Temperature Threshold feature.
enum class temperature_select : std::uint8_t {
    composite = 0x0,
    sensor_1 = 0x1,
    sensor_2 = 0x2,
    sensor_3 = 0x3,
    sensor_4 = 0x4,
    sensor_5 = 0x5,
    sensor_6 = 0x6,
    sensor_7 = 0x7,
    sensor_8 = 0x8,
    all = 0xf, ///< Set Features only: every implemented sensor and the composite temperature
};

/// Temperature Threshold (04h) value.
struct temperature_threshold : word<temperature_threshold, std::uint32_t> {
    using word::word;
    // clang-format off
    static constexpr field<0, 16, std::uint16_t> tmpth{};            // TMPTH: bits 15:00 Temperature Threshold (Kelvin)
    static constexpr field<16, 4, temperature_select> tmpsel{};      // TMPSEL: bits 19:16 Threshold Temperature Select
    static constexpr field<20, 2, threshold_type> thsel{};           // THSEL: bits 21:20 Threshold Type Select
    // clang-format on
};
static_assert(sizeof(temperature_threshold) == 4);
static_assert(is_wire_type_v<temperature_threshold>);

/// Error Recovery (05h) value, NVM Command Set 1.0 4.1.3.2.
struct error_recovery : word<error_recovery, std::uint32_t> {
    using word::word;
    // clang-format off
    static constexpr field<0, 16, std::uint16_t> tler{};  // TLER: bits 15:00 Time Limited Error Recovery (100 ms units, 0 = none)
    static constexpr field<16, 1, bool> dulbe{};          // DULBE: bit 16 Deallocated or Unwritten Logical Block Error Enable
    // clang-format on
};
static_assert(sizeof(error_recovery) == 4);
static_assert(is_wire_type_v<error_recovery>);

/// Volatile Write Cache (06h) value.
struct volatile_write_cache : word<volatile_write_cache, std::uint32_t> {
    using word::word;
    static constexpr field<0, 1, bool> wce{}; // WCE: bit 00 Volatile Write Cache Enable
};
static_assert(sizeof(volatile_write_cache) == 4);
static_assert(is_wire_type_v<volatile_write_cache>);

/// Number of Queues (07h): the counts requested in Set Features CDW11 (NSQR, NCQR) and the counts
/// allocated in the completion Dword 0 (NSQA, NCQA) share this layout. Both are 0's based, and
/// 65535 may not be requested.
struct number_of_queues : word<number_of_queues, std::uint32_t> {
    using word::word;
    // clang-format off
    static constexpr field<0, 16, std::uint16_t> nsqr{};   // NSQR / NSQA: bits 15:00 I/O submission queues (0's based)
    static constexpr field<16, 16, std::uint16_t> ncqr{};  // NCQR / NCQA: bits 31:16 I/O completion queues (0's based)
    // clang-format on

    /// The value for `submission_queues` and `completion_queues` I/O queues (each 1 to 65535).
    [[nodiscard]] static constexpr number_of_queues from_counts(std::uint32_t submission_queues,
                                                                std::uint32_t completion_queues) noexcept
    {
        return number_of_queues{}
            .with(nsqr, static_cast<std::uint16_t>(submission_queues - 1))
            .with(ncqr, static_cast<std::uint16_t>(completion_queues - 1));
    }
    [[nodiscard]] constexpr std::uint32_t submission_queue_count() const noexcept
    {
        return std::uint32_t{get(nsqr)} + 1;
    }
    [[nodiscard]] constexpr std::uint32_t completion_queue_count() const noexcept
    {
        return std::uint32_t{get(ncqr)} + 1;
    }
};
static_assert(sizeof(number_of_queues) == 4);
static_assert(is_wire_type_v<number_of_queues>);

/// Interrupt Coalescing (08h) value.
struct interrupt_coalescing : word<interrupt_coalescing, std::uint32_t> {
    using word::word;
    static constexpr field<0, 8, std::uint8_t> thr{};  // THR: bits 07:00 Aggregation Threshold (0's based)
    static constexpr field<8, 8, std::uint8_t> time{}; // TIME: bits 15:08 Aggregation Time (100 us units)
};
static_assert(sizeof(interrupt_coalescing) == 4);
static_assert(is_wire_type_v<interrupt_coalescing>);

/// Interrupt Vector Configuration (09h) value.
struct interrupt_vector_configuration : word<interrupt_vector_configuration, std::uint32_t> {
    using word::word;
    static constexpr field<0, 16, std::uint16_t> iv{}; // IV: bits 15:00 Interrupt Vector
    static constexpr field<16, 1, bool> cd{};          // CD: bit 16 Coalescing Disable
};
static_assert(sizeof(interrupt_vector_configuration) == 4);
static_assert(is_wire_type_v<interrupt_vector_configuration>);

/// Write Atomicity Normal (0Ah) value, NVM Command Set 1.0 4.1.3.3.
struct write_atomicity_normal : word<write_atomicity_normal, std::uint32_t> {
    using word::word;
    static constexpr field<0, 1, bool> dn{}; // DN: bit 00 Disable Normal (honor only AWUPF / NAWUPF)
};
static_assert(sizeof(write_atomicity_normal) == 4);
static_assert(is_wire_type_v<write_atomicity_normal>);

/// Asynchronous Event Configuration (0Bh) value: which events the controller reports.
struct async_event_configuration : word<async_event_configuration, std::uint32_t> {
    using word::word;
    // clang-format off
    static constexpr field<0, 8, std::uint8_t> smart_critical_warnings{};       // bits 07:00 SMART / Health Critical Warnings, one per Critical Warning bit
    static constexpr field<8, 1, bool> namespace_attribute_notices{};           // bit 08 Namespace Attribute Notices
    static constexpr field<9, 1, bool> firmware_activation_notices{};           // bit 09 Firmware Activation Notices
    static constexpr field<10, 1, bool> telemetry_log_notices{};                // bit 10 Telemetry Log Notices
    static constexpr field<11, 1, bool> ana_change_notices{};                   // bit 11 Asymmetric Namespace Access Change Notices
    static constexpr field<12, 1, bool> predictable_latency_notices{};          // bit 12 Predictable Latency Event Aggregate Log Change Notices
    static constexpr field<13, 1, bool> lba_status_information_notices{};       // bit 13 LBA Status Information Notices
    static constexpr field<14, 1, bool> endurance_group_event_notices{};        // bit 14 Endurance Group Event Aggregate Log Change Notices
    static constexpr field<15, 1, bool> normal_subsystem_shutdown_notices{};    // bit 15 Normal NVM Subsystem Shutdown event
    static constexpr field<31, 1, bool> discovery_log_change_notices{};         // bit 31 Discovery Log Page Change Notices
    // clang-format on
};
static_assert(sizeof(async_event_configuration) == 4);
static_assert(is_wire_type_v<async_event_configuration>);

/// Autonomous Power State Transition (0Ch) value.
struct autonomous_power_state_transition : word<autonomous_power_state_transition, std::uint32_t> {
    using word::word;
    static constexpr field<0, 1, bool> apste{}; // APSTE: bit 00 Autonomous Power State Transition Enable
};
static_assert(sizeof(autonomous_power_state_transition) == 4);
static_assert(is_wire_type_v<autonomous_power_state_transition>);

/// One entry of the Autonomous Power State Transition data structure (32 entries of 8 bytes,
/// one per power state).
struct apst_entry : word<apst_entry, std::uint64_t> {
    using word::word;
    // clang-format off
    static constexpr field<3, 5, std::uint8_t> itps{};    // ITPS: bits 07:03 Idle Transition Power State
    static constexpr field<8, 24, std::uint32_t> itpt{};  // ITPT: bits 31:08 Idle Time Prior to Transition (ms)
    // clang-format on
};
static_assert(sizeof(apst_entry) == 8);
static_assert(is_wire_type_v<apst_entry>);

/// Autonomous Power State Transition data structure (256 bytes), entry n for power state n.
using apst_table = std::array<apst_entry, 32>;
static_assert(sizeof(apst_table) == 256);

/// Host Memory Buffer (0Dh) Command Dword 11.
struct host_memory_buffer : word<host_memory_buffer, std::uint32_t> {
    using word::word;
    static constexpr field<0, 1, bool> ehm{}; // EHM: bit 00 Enable Host Memory
    static constexpr field<1, 1, bool> mr{};  // MR: bit 01 Memory Return
};
static_assert(sizeof(host_memory_buffer) == 4);
static_assert(is_wire_type_v<host_memory_buffer>);

/// Origin of the current timestamp.
enum class timestamp_origin : std::uint8_t {
    reset = 0b000,        ///< counted from the last controller reset (never set by the host)
    set_features = 0b001, ///< set by a Set Features command
};

/// Attributes byte of the Timestamp data structure.
struct timestamp_attributes : word<timestamp_attributes, std::uint8_t> {
    using word::word;
    static constexpr field<0, 1, bool> synch{};              // Synch: bit 00 the count may have stopped
    static constexpr field<1, 3, timestamp_origin> origin{}; // Timestamp Origin: bits 03:01
};
static_assert(sizeof(timestamp_attributes) == 1);
static_assert(is_wire_type_v<timestamp_attributes>);

/// Timestamp (0Eh) data structure (8 bytes).
struct timestamp_data {
    static constexpr std::uint64_t max_milliseconds = (std::uint64_t{1} << 48) - 1;

    std::array<std::uint8_t, 6> timestamp; // bytes 05:00 Timestamp (ms since 1970-01-01 00:00 UTC)
    timestamp_attributes attributes;       // byte 6
    std::uint8_t rsvd7;                    // byte 7

    [[nodiscard]] constexpr std::uint64_t milliseconds() const noexcept
    {
        return load_le<std::uint64_t>(timestamp, 0);
    }
    /// Stores the low 48 bits of `value`.
    constexpr void set_milliseconds(std::uint64_t value) noexcept { store_le(timestamp, 0, value); }

    friend constexpr bool operator==(const timestamp_data&, const timestamp_data&) noexcept = default;
};
static_assert(sizeof(timestamp_data) == 8);
static_assert(is_wire_type_v<timestamp_data>);
static_assert(offsetof(timestamp_data, attributes) == 6);

/// Keep Alive Timer (0Fh) value.
struct keep_alive_timer : word<keep_alive_timer, std::uint32_t> {
    using word::word;
    // clang-format off
    static constexpr field<0, 32, std::uint32_t> kato{};  // KATO: bits 31:00 Keep Alive Timeout (ms, 0 = disabled)
    // clang-format on
};
static_assert(sizeof(keep_alive_timer) == 4);
static_assert(is_wire_type_v<keep_alive_timer>);

/// Host Controlled Thermal Management (10h) value.
struct host_controlled_thermal_management : word<host_controlled_thermal_management, std::uint32_t> {
    using word::word;
    // clang-format off
    static constexpr field<0, 16, std::uint16_t> tmt2{};   // TMT2: bits 15:00 Thermal Management Temperature 2 (Kelvin)
    static constexpr field<16, 16, std::uint16_t> tmt1{};  // TMT1: bits 31:16 Thermal Management Temperature 1 (Kelvin)
    // clang-format on
};
static_assert(sizeof(host_controlled_thermal_management) == 4);
static_assert(is_wire_type_v<host_controlled_thermal_management>);

/// Non-Operational Power State Config (11h) value.
struct non_operational_power_state_config : word<non_operational_power_state_config, std::uint32_t> {
    using word::word;
    // clang-format off
    static constexpr field<0, 1, bool> noppme{};  // NOPPME: bit 00 Non-Operational Power State Permissive Mode Enable
    // clang-format on
};
static_assert(sizeof(non_operational_power_state_config) == 4);
static_assert(is_wire_type_v<non_operational_power_state_config>);

/// Host Behavior Support (16h) data structure (512 bytes). Each field is a byte whose values
/// other than 0 and 1 are reserved.
struct host_behavior_support {
    std::uint8_t acre;                   // byte 0 Advanced Command Retry Enable (ACRE)
    std::uint8_t etdas;                  // byte 1 Extended Telemetry Data Area 4 Supported (ETDAS)
    std::uint8_t lbafee;                 // byte 2 LBA Format Extension Enable (LBAFEE)
    std::array<std::uint8_t, 509> rsvd3; // bytes 511:03

    friend constexpr bool operator==(const host_behavior_support&,
                                     const host_behavior_support&) noexcept = default;
};
static_assert(sizeof(host_behavior_support) == 512);
static_assert(is_wire_type_v<host_behavior_support>);
static_assert(offsetof(host_behavior_support, etdas) == 1);
static_assert(offsetof(host_behavior_support, lbafee) == 2);
static_assert(offsetof(host_behavior_support, rsvd3) == 3);

} // namespace spec
NVMEKIT_END_NAMESPACE
