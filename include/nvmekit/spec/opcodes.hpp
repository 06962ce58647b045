#pragma once
/// Command opcodes: admin (Base 2.0 Figure 139), NVM I/O (NVM Command Set 1.0 Figure 20) and
/// Fabrics command types (Base 2.0 Figure 540), with their names as nvme-cli prints them.

#include <cstdint>
#include <string_view>

#include <nvmekit/config.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace spec {

enum class admin_opcode : std::uint8_t {
    delete_io_sq = 0x00,
    create_io_sq = 0x01,
    get_log_page = 0x02,
    delete_io_cq = 0x04,
    create_io_cq = 0x05,
    identify = 0x06,
    abort = 0x08,
    set_features = 0x09,
    get_features = 0x0a,
    async_event_request = 0x0c,
    namespace_management = 0x0d,
    firmware_commit = 0x10,
    firmware_image_download = 0x11,
    device_self_test = 0x14,
    namespace_attachment = 0x15,
    keep_alive = 0x18,
    directive_send = 0x19,
    directive_receive = 0x1a,
    virtualization_management = 0x1c,
    nvme_mi_send = 0x1d,
    nvme_mi_receive = 0x1e,
    capacity_management = 0x20,
    lockdown = 0x24,
    doorbell_buffer_config = 0x7c,
    fabrics = 0x7f,
    format_nvm = 0x80,
    security_send = 0x81,
    security_receive = 0x82,
    sanitize = 0x84,
    get_lba_status = 0x86,
};

enum class nvm_opcode : std::uint8_t {
    flush = 0x00,
    write = 0x01,
    read = 0x02,
    write_uncorrectable = 0x04,
    compare = 0x05,
    write_zeroes = 0x08,
    dataset_management = 0x09,
    verify = 0x0c,
    reservation_register = 0x0d,
    reservation_report = 0x0e,
    reservation_acquire = 0x11,
    reservation_release = 0x15,
    copy = 0x19,
};

/// The opcode every Fabrics command carries in CDW0.OPC; the command is named by FCTYPE.
inline constexpr std::uint8_t fabrics_command_opcode = 0x7f;

/// Fabrics Command Type (FCTYPE, SQE byte 04).
enum class fabrics_command_type : std::uint8_t {
    property_set = 0x00,
    connect = 0x01,
    property_get = 0x04,
    authentication_send = 0x05,
    authentication_receive = 0x06,
    disconnect = 0x08,
};

/// Data transfer direction, bits 01:00 of every opcode (Base 2.0 Figure 88).
enum class data_transfer : std::uint8_t {
    none = 0b00,
    host_to_controller = 0b01,
    controller_to_host = 0b10,
    bidirectional = 0b11,
};

[[nodiscard]] constexpr data_transfer transfer_direction(std::uint8_t opcode) noexcept
{
    return static_cast<data_transfer>(opcode & 0b11U);
}

/// Admin vendor-specific opcodes are C0h-FFh, I/O vendor-specific opcodes 80h-FFh.
[[nodiscard]] constexpr bool is_vendor_specific_admin(std::uint8_t opcode) noexcept { return opcode >= 0xc0; }
[[nodiscard]] constexpr bool is_vendor_specific_io(std::uint8_t opcode) noexcept { return opcode >= 0x80; }

[[nodiscard]] constexpr std::string_view name(admin_opcode opcode) noexcept
{
    using enum admin_opcode;
    switch (opcode) {
    case delete_io_sq: return "DELETE_IO_SQ";
    case create_io_sq: return "CREATE_IO_SQ";
    case get_log_page: return "GET_LOG_PAGE";
    case delete_io_cq: return "DELETE_IO_CQ";
    case create_io_cq: return "CREATE_IO_CQ";
    case identify: return "IDENTIFY";
    case abort: return "ABORT";
    case set_features: return "SET_FEATURES";
    case get_features: return "GET_FEATURES";
    case async_event_request: return "ASYNC_EVENT_REQUEST";
    case namespace_management: return "NS_MANAGEMENT";
    case firmware_commit: return "FW_COMMIT";
    case firmware_image_download: return "FW_IMAGE_DOWNLOAD";
    case device_self_test: return "DEVICE_SELF_TEST";
    case namespace_attachment: return "NS_ATTACHMENT";
    case keep_alive: return "KEEP_ALIVE";
    case directive_send: return "DIRECTIVE_SEND";
    case directive_receive: return "DIRECTIVE_RECEIVE";
    case virtualization_management: return "VIRT_MANAGEMENT";
    case nvme_mi_send: return "NVME_MI_SEND";
    case nvme_mi_receive: return "NVME_MI_RECEIVE";
    case capacity_management: return "CAPACITY_MANAGEMENT";
    case lockdown: return "LOCKDOWN";
    case doorbell_buffer_config: return "DOORBELL_BUFFER_CONFIG";
    case fabrics: return "FABRICS";
    case format_nvm: return "FORMAT_NVM";
    case security_send: return "SECURITY_SEND";
    case security_receive: return "SECURITY_RECEIVE";
    case sanitize: return "SANITIZE";
    case get_lba_status: return "GET_LBA_STATUS";
    }
    return {};
}

[[nodiscard]] constexpr std::string_view name(nvm_opcode opcode) noexcept
{
    using enum nvm_opcode;
    switch (opcode) {
    case flush: return "FLUSH";
    case write: return "WRITE";
    case read: return "READ";
    case write_uncorrectable: return "WRITE_UNCORRECTABLE";
    case compare: return "COMPARE";
    case write_zeroes: return "WRITE_ZEROES";
    case dataset_management: return "DATASET_MANAGEMENT";
    case verify: return "VERIFY";
    case reservation_register: return "RESERVATION_REGISTER";
    case reservation_report: return "RESERVATION_REPORT";
    case reservation_acquire: return "RESERVATION_ACQUIRE";
    case reservation_release: return "RESERVATION_RELEASE";
    case copy: return "COPY";
    }
    return {};
}

[[nodiscard]] constexpr std::string_view name(fabrics_command_type type) noexcept
{
    using enum fabrics_command_type;
    switch (type) {
    case property_set: return "PROPERTY_SET";
    case connect: return "CONNECT";
    case property_get: return "PROPERTY_GET";
    case authentication_send: return "AUTH_SEND";
    case authentication_receive: return "AUTH_RECEIVE";
    case disconnect: return "DISCONNECT";
    }
    return {};
}

} // namespace spec
NVMEKIT_END_NAMESPACE
