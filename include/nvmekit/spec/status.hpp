#pragma once
/// Completion status: a status code type and a code, one enum per type (NVMe Base 2.0, 4.6.1).
///
/// Codes of different types that share a number cannot be confused: `status` is built from a
/// typed enum and remembers the type.

#include <cstdint>
#include <optional>
#include <string_view>

#include <nvmekit/config.hpp>
#include <nvmekit/spec/bits.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace spec {

/// Status Code Type (SCT), Base 2.0 Figure 100.
enum class status_code_type : std::uint8_t {
    generic = 0x0,
    command_specific = 0x1,
    media_error = 0x2, ///< Media and Data Integrity Errors
    path_related = 0x3,
    vendor_specific = 0x7,
};

/// Generic Command Status (SCT 0h), Base 2.0 Figure 101; 80h and above from NVM Command Set 1.0.
enum class generic_status : std::uint8_t {
    success = 0x00,
    invalid_opcode = 0x01,
    invalid_field = 0x02,
    command_id_conflict = 0x03,
    data_transfer_error = 0x04,
    aborted_power_loss = 0x05,
    internal_error = 0x06,
    abort_requested = 0x07,
    aborted_sq_deletion = 0x08,
    aborted_failed_fused = 0x09,
    aborted_missing_fused = 0x0a,
    invalid_namespace_or_format = 0x0b,
    command_sequence_error = 0x0c,
    invalid_sgl_segment_descriptor = 0x0d,
    invalid_sgl_descriptor_count = 0x0e,
    data_sgl_length_invalid = 0x0f,
    metadata_sgl_length_invalid = 0x10,
    sgl_descriptor_type_invalid = 0x11,
    invalid_use_of_cmb = 0x12,
    prp_offset_invalid = 0x13,
    atomic_write_unit_exceeded = 0x14,
    operation_denied = 0x15,
    sgl_offset_invalid = 0x16,
    host_identifier_inconsistent_format = 0x18,
    keep_alive_timer_expired = 0x19,
    keep_alive_timeout_invalid = 0x1a,
    aborted_preempt_and_abort = 0x1b,
    sanitize_failed = 0x1c,
    sanitize_in_progress = 0x1d,
    sgl_data_block_granularity_invalid = 0x1e,
    command_not_supported_for_cmb_queue = 0x1f,
    namespace_write_protected = 0x20,
    command_interrupted = 0x21,
    transient_transport_error = 0x22,
    prohibited_by_lockdown = 0x23,
    admin_command_media_not_ready = 0x24,
    // NVM Command Set 1.0, Figure 18
    lba_out_of_range = 0x80,
    capacity_exceeded = 0x81,
    namespace_not_ready = 0x82,
    reservation_conflict = 0x83,
    format_in_progress = 0x84,
};

/// Command Specific Status (SCT 1h), Base 2.0 Figure 102; 80h and above from NVM Command Set 1.0
/// Figure 19 (I/O commands). Fabrics commands reuse 80h and above: see `fabrics_status`.
enum class command_specific_status : std::uint8_t {
    completion_queue_invalid = 0x00,
    invalid_queue_identifier = 0x01,
    invalid_queue_size = 0x02,
    abort_command_limit_exceeded = 0x03,
    async_event_request_limit_exceeded = 0x05,
    invalid_firmware_slot = 0x06,
    invalid_firmware_image = 0x07,
    invalid_interrupt_vector = 0x08,
    invalid_log_page = 0x09,
    invalid_format = 0x0a,
    firmware_activation_requires_conventional_reset = 0x0b,
    invalid_queue_deletion = 0x0c,
    feature_not_saveable = 0x0d,
    feature_not_changeable = 0x0e,
    feature_not_namespace_specific = 0x0f,
    firmware_activation_requires_subsystem_reset = 0x10,
    firmware_activation_requires_controller_reset = 0x11,
    firmware_activation_requires_max_time_violation = 0x12,
    firmware_activation_prohibited = 0x13,
    overlapping_range = 0x14,
    namespace_insufficient_capacity = 0x15,
    namespace_identifier_unavailable = 0x16,
    namespace_already_attached = 0x18,
    namespace_is_private = 0x19,
    namespace_not_attached = 0x1a,
    thin_provisioning_not_supported = 0x1b,
    controller_list_invalid = 0x1c,
    device_self_test_in_progress = 0x1d,
    boot_partition_write_prohibited = 0x1e,
    invalid_controller_identifier = 0x1f,
    invalid_secondary_controller_state = 0x20,
    invalid_controller_resource_count = 0x21,
    invalid_resource_identifier = 0x22,
    sanitize_prohibited_pmr_enabled = 0x23,
    ana_group_identifier_invalid = 0x24,
    ana_attach_failed = 0x25,
    insufficient_capacity = 0x26,
    namespace_attachment_limit_exceeded = 0x27,
    prohibition_of_command_execution_not_supported = 0x28,
    io_command_set_not_supported = 0x29,
    io_command_set_not_enabled = 0x2a,
    io_command_set_combination_rejected = 0x2b,
    invalid_io_command_set = 0x2c,
    identifier_unavailable = 0x2d,
    // NVM Command Set 1.0, Figure 19
    conflicting_attributes = 0x80,
    invalid_protection_information = 0x81,
    write_to_read_only_range = 0x82,
    command_size_limit_exceeded = 0x83,
};

/// Command Specific Status of the Fabrics commands (SCT 1h), Base 2.0 Figure 102 (Connect,
/// Discovery, Authentication).
enum class fabrics_status : std::uint8_t {
    connect_incompatible_format = 0x80,
    connect_controller_busy = 0x81,
    connect_invalid_parameters = 0x82,
    connect_restart_discovery = 0x83,
    connect_invalid_host = 0x84,
    invalid_queue_type = 0x85,
    discover_restart = 0x90,
    authentication_required = 0x91,
};

/// Media and Data Integrity Errors (SCT 2h), Base 2.0 Figure 103 and NVM Command Set 1.0.
enum class media_status : std::uint8_t {
    write_fault = 0x80,
    unrecovered_read_error = 0x81,
    guard_check_error = 0x82,
    application_tag_check_error = 0x83,
    reference_tag_check_error = 0x84,
    compare_failure = 0x85,
    access_denied = 0x86,
    deallocated_or_unwritten_block = 0x87,
    storage_tag_check_error = 0x88,
};

/// Path Related Status (SCT 3h), Base 2.0 Figure 104.
enum class path_status : std::uint8_t {
    internal_path_error = 0x00,
    asymmetric_access_persistent_loss = 0x01,
    asymmetric_access_inaccessible = 0x02,
    asymmetric_access_transition = 0x03,
    controller_pathing_error = 0x60,
    host_pathing_error = 0x70,
    aborted_by_host = 0x71,
};

/// The 15-bit Status field of a completion (CQE DW3 bits 31:17 shifted down by 17).
struct status : word<status, std::uint16_t> {
    using word::word;

    static constexpr field<0, 8, std::uint8_t> sc{};      // SC: bits 07:00
    static constexpr field<8, 3, status_code_type> sct{}; // SCT: bits 10:08
    static constexpr field<11, 2, std::uint8_t> crd{};    // CRD: bits 12:11
    static constexpr field<13, 1, bool> more{};           // M: bit 13
    static constexpr field<14, 1, bool> dnr{};            // DNR: bit 14

    constexpr status(generic_status code) noexcept
        : status{status_code_type::generic, static_cast<std::uint8_t>(code)}
    {}
    constexpr status(command_specific_status code) noexcept
        : status{status_code_type::command_specific, static_cast<std::uint8_t>(code)}
    {}
    constexpr status(fabrics_status code) noexcept
        : status{status_code_type::command_specific, static_cast<std::uint8_t>(code)}
    {}
    constexpr status(media_status code) noexcept
        : status{status_code_type::media_error, static_cast<std::uint8_t>(code)}
    {}
    constexpr status(path_status code) noexcept
        : status{status_code_type::path_related, static_cast<std::uint8_t>(code)}
    {}
    constexpr status(status_code_type type, std::uint8_t code) noexcept
    {
        set(sc, code);
        set(sct, type);
    }

    [[nodiscard]] static constexpr status success() noexcept { return status{generic_status::success}; }

    [[nodiscard]] constexpr bool is_success() const noexcept
    {
        return get(sct) == status_code_type::generic && get(sc) == 0;
    }
    [[nodiscard]] constexpr status_code_type type() const noexcept { return get(sct); }
    [[nodiscard]] constexpr std::uint8_t code() const noexcept { return get(sc); }
    [[nodiscard]] constexpr bool do_not_retry() const noexcept { return get(dnr); }

    /// The same status with Do Not Retry set.
    [[nodiscard]] constexpr status with_dnr(bool value = true) const noexcept { return with(dnr, value); }

    /// Whether type and code are equal, ignoring DNR, M and CRD.
    [[nodiscard]] constexpr bool same_code(status other) const noexcept
    {
        return get(sct) == other.get(sct) && get(sc) == other.get(sc);
    }
};
static_assert(sizeof(status) == 2);
static_assert(is_wire_type_v<status>);

/// Name of a status code type: "Generic", "Command Specific", "Media Error", "Path Related",
/// "Vendor Specific", or "Reserved".
[[nodiscard]] constexpr std::string_view name(status_code_type type) noexcept
{
    switch (type) {
    case status_code_type::generic: return "Generic";
    case status_code_type::command_specific: return "Command Specific";
    case status_code_type::media_error: return "Media Error";
    case status_code_type::path_related: return "Path Related";
    case status_code_type::vendor_specific: return "Vendor Specific";
    }
    return "Reserved";
}

[[nodiscard]] constexpr std::string_view name(generic_status code) noexcept
{
    using enum generic_status;
    switch (code) {
    case success: return "Successful Completion";
    case invalid_opcode: return "Invalid Command Opcode";
    case invalid_field: return "Invalid Field";
    case command_id_conflict: return "Command ID Conflict";
    case data_transfer_error: return "Data Transfer Error";
    case aborted_power_loss: return "Aborted due to Power Loss Notification";
    case internal_error: return "Internal Error";
    case abort_requested: return "Command Abort Requested";
    case aborted_sq_deletion: return "Aborted due to SQ Deletion";
    case aborted_failed_fused: return "Aborted due to Failed Fused Command";
    case aborted_missing_fused: return "Aborted due to Missing Fused Command";
    case invalid_namespace_or_format: return "Invalid Namespace or Format";
    case command_sequence_error: return "Command Sequence Error";
    case invalid_sgl_segment_descriptor: return "Invalid SGL Segment Descriptor";
    case invalid_sgl_descriptor_count: return "Invalid Number of SGL Descriptors";
    case data_sgl_length_invalid: return "Data SGL Length Invalid";
    case metadata_sgl_length_invalid: return "Metadata SGL Length Invalid";
    case sgl_descriptor_type_invalid: return "SGL Descriptor Type Invalid";
    case invalid_use_of_cmb: return "Invalid Use of Controller Memory Buffer";
    case prp_offset_invalid: return "PRP Offset Invalid";
    case atomic_write_unit_exceeded: return "Atomic Write Unit Exceeded";
    case operation_denied: return "Operation Denied";
    case sgl_offset_invalid: return "SGL Offset Invalid";
    case host_identifier_inconsistent_format: return "Host Identifier Inconsistent Format";
    case keep_alive_timer_expired: return "Keep Alive Timer Expired";
    case keep_alive_timeout_invalid: return "Keep Alive Timeout Invalid";
    case aborted_preempt_and_abort: return "Aborted due to Preempt and Abort";
    case sanitize_failed: return "Sanitize Failed";
    case sanitize_in_progress: return "Sanitize In Progress";
    case sgl_data_block_granularity_invalid: return "SGL Data Block Granularity Invalid";
    case command_not_supported_for_cmb_queue: return "Command Not Supported for Queue in CMB";
    case namespace_write_protected: return "Namespace is Write Protected";
    case command_interrupted: return "Command Interrupted";
    case transient_transport_error: return "Transient Transport Error";
    case prohibited_by_lockdown: return "Prohibited by Command and Feature Lockdown";
    case admin_command_media_not_ready: return "Admin Command Media Not Ready";
    case lba_out_of_range: return "LBA Out of Range";
    case capacity_exceeded: return "Capacity Exceeded";
    case namespace_not_ready: return "Namespace Not Ready";
    case reservation_conflict: return "Reservation Conflict";
    case format_in_progress: return "Format In Progress";
    }
    return {};
}

[[nodiscard]] constexpr std::string_view name(command_specific_status code) noexcept
{
    using enum command_specific_status;
    switch (code) {
    case completion_queue_invalid: return "Completion Queue Invalid";
    case invalid_queue_identifier: return "Invalid Queue Identifier";
    case invalid_queue_size: return "Invalid Queue Size";
    case abort_command_limit_exceeded: return "Abort Command Limit Exceeded";
    case async_event_request_limit_exceeded: return "Asynchronous Event Request Limit Exceeded";
    case invalid_firmware_slot: return "Invalid Firmware Slot";
    case invalid_firmware_image: return "Invalid Firmware Image";
    case invalid_interrupt_vector: return "Invalid Interrupt Vector";
    case invalid_log_page: return "Invalid Log Page";
    case invalid_format: return "Invalid Format";
    case firmware_activation_requires_conventional_reset:
        return "Firmware Activation Requires Conventional Reset";
    case invalid_queue_deletion: return "Invalid Queue Deletion";
    case feature_not_saveable: return "Feature Identifier Not Saveable";
    case feature_not_changeable: return "Feature Not Changeable";
    case feature_not_namespace_specific: return "Feature Not Namespace Specific";
    case firmware_activation_requires_subsystem_reset:
        return "Firmware Activation Requires NVM Subsystem Reset";
    case firmware_activation_requires_controller_reset:
        return "Firmware Activation Requires Controller Level Reset";
    case firmware_activation_requires_max_time_violation:
        return "Firmware Activation Requires Maximum Time Violation";
    case firmware_activation_prohibited: return "Firmware Activation Prohibited";
    case overlapping_range: return "Overlapping Range";
    case namespace_insufficient_capacity: return "Namespace Insufficient Capacity";
    case namespace_identifier_unavailable: return "Namespace Identifier Unavailable";
    case namespace_already_attached: return "Namespace Already Attached";
    case namespace_is_private: return "Namespace Is Private";
    case namespace_not_attached: return "Namespace Not Attached";
    case thin_provisioning_not_supported: return "Thin Provisioning Not Supported";
    case controller_list_invalid: return "Controller List Invalid";
    case device_self_test_in_progress: return "Device Self-test In Progress";
    case boot_partition_write_prohibited: return "Boot Partition Write Prohibited";
    case invalid_controller_identifier: return "Invalid Controller Identifier";
    case invalid_secondary_controller_state: return "Invalid Secondary Controller State";
    case invalid_controller_resource_count: return "Invalid Number of Controller Resources";
    case invalid_resource_identifier: return "Invalid Resource Identifier";
    case sanitize_prohibited_pmr_enabled:
        return "Sanitize Prohibited While Persistent Memory Region is Enabled";
    case ana_group_identifier_invalid: return "ANA Group Identifier Invalid";
    case ana_attach_failed: return "ANA Attach Failed";
    case insufficient_capacity: return "Insufficient Capacity";
    case namespace_attachment_limit_exceeded: return "Namespace Attachment Limit Exceeded";
    case prohibition_of_command_execution_not_supported:
        return "Prohibition of Command Execution Not Supported";
    case io_command_set_not_supported: return "I/O Command Set Not Supported";
    case io_command_set_not_enabled: return "I/O Command Set Not Enabled";
    case io_command_set_combination_rejected: return "I/O Command Set Combination Rejected";
    case invalid_io_command_set: return "Invalid I/O Command Set";
    case identifier_unavailable: return "Identifier Unavailable";
    case conflicting_attributes: return "Conflicting Attributes";
    case invalid_protection_information: return "Invalid Protection Information";
    case write_to_read_only_range: return "Attempted Write to Read Only Range";
    case command_size_limit_exceeded: return "Command Size Limit Exceeded";
    }
    return {};
}

[[nodiscard]] constexpr std::string_view name(fabrics_status code) noexcept
{
    using enum fabrics_status;
    switch (code) {
    case connect_incompatible_format: return "Connect Incompatible Format";
    case connect_controller_busy: return "Connect Controller Busy";
    case connect_invalid_parameters: return "Connect Invalid Parameters";
    case connect_restart_discovery: return "Connect Restart Discovery";
    case connect_invalid_host: return "Connect Invalid Host";
    case invalid_queue_type: return "Invalid Queue Type";
    case discover_restart: return "Discover Restart";
    case authentication_required: return "Authentication Required";
    }
    return {};
}

[[nodiscard]] constexpr std::string_view name(media_status code) noexcept
{
    using enum media_status;
    switch (code) {
    case write_fault: return "Write Fault";
    case unrecovered_read_error: return "Unrecovered Read Error";
    case guard_check_error: return "End-to-end Guard Check Error";
    case application_tag_check_error: return "End-to-end Application Tag Check Error";
    case reference_tag_check_error: return "End-to-end Reference Tag Check Error";
    case compare_failure: return "Compare Failure";
    case access_denied: return "Access Denied";
    case deallocated_or_unwritten_block: return "Deallocated or Unwritten Logical Block";
    case storage_tag_check_error: return "End-to-end Storage Tag Check Error";
    }
    return {};
}

[[nodiscard]] constexpr std::string_view name(path_status code) noexcept
{
    using enum path_status;
    switch (code) {
    case internal_path_error: return "Internal Path Error";
    case asymmetric_access_persistent_loss: return "Asymmetric Access Persistent Loss";
    case asymmetric_access_inaccessible: return "Asymmetric Access Inaccessible";
    case asymmetric_access_transition: return "Asymmetric Access Transition";
    case controller_pathing_error: return "Controller Pathing Error";
    case host_pathing_error: return "Host Pathing Error";
    case aborted_by_host: return "Command Aborted By Host";
    }
    return {};
}

/// Name of a status's code within its type (command-specific codes 80h and above are named as
/// the NVM command set's), or an empty view for a reserved or vendor-specific code.
[[nodiscard]] constexpr std::string_view name(status value) noexcept
{
    const std::uint8_t code = value.code();
    switch (value.type()) {
    case status_code_type::generic: return name(static_cast<generic_status>(code));
    case status_code_type::command_specific: return name(static_cast<command_specific_status>(code));
    case status_code_type::media_error: return name(static_cast<media_status>(code));
    case status_code_type::path_related: return name(static_cast<path_status>(code));
    case status_code_type::vendor_specific: return {};
    }
    return {};
}

} // namespace spec
NVMEKIT_END_NAMESPACE
