#pragma once
/// Fabrics commands (Base 2.0 section 6): the command capsule layout, Connect with its data and
/// response, Property Get/Set, Disconnect, Authentication Send/Receive, and the Discovery log
/// page (log page 70h).
///
/// Every command type is a 64-byte struct laid over the SQE; convert with `to_sqe`,
/// `to_fabrics_command` and `fabrics_command_cast<T>` (all std::bit_cast).

#include <array>
#include <bit>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include <nvmekit/config.hpp>
#include <nvmekit/spec/bits.hpp>
#include <nvmekit/spec/opcodes.hpp>
#include <nvmekit/spec/queue_entries.hpp>
#include <nvmekit/spec/text.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace spec {

/// Size of every NQN field (SUBNQN, HOSTNQN): a NUL-terminated UTF-8 string.
inline constexpr std::size_t nqn_field_size = 256;
/// Longest NQN in bytes, not counting the terminating NUL.
inline constexpr std::size_t nqn_max_length = 223;
/// The well-known NQN of discovery subsystems.
inline constexpr std::string_view discovery_nqn = "nqn.2014-08.org.nvmexpress.discovery";

/// Connect data CNTLID: the subsystem uses the dynamic controller model and allocates one.
inline constexpr std::uint16_t dynamic_controller_id = 0xffff;
/// Connect data CNTLID: static controller model, any controller may be associated.
inline constexpr std::uint16_t any_static_controller_id = 0xfffe;
/// Largest controller identifier; FFF0h to FFFFh are reserved.
inline constexpr std::uint16_t max_controller_id = 0xffef;

/// IANA port of NVMe over Fabrics (NVMe/TCP I/O controllers, also NVMe/RDMA).
inline constexpr std::uint16_t tcp_default_port = 4420;
/// IANA port of NVMe/TCP discovery controllers.
inline constexpr std::uint16_t tcp_discovery_port = 8009;

/// Security Protocol (SECP) of NVMe in-band authentication, in Authentication Send/Receive.
inline constexpr std::uint8_t authentication_security_protocol = 0xe9;

/// Log page identifier of the Discovery log page.
inline constexpr std::uint8_t discovery_log_page_id = 0x70;

/// Whether `nqn` fits the NQN length limit (223 bytes).
[[nodiscard]] constexpr bool is_valid_nqn_length(std::string_view nqn) noexcept
{
    return !nqn.empty() && nqn.size() <= nqn_max_length;
}

/// Whether `nqn` has an NQN's form (NVMe over Fabrics 1.1, 7.9): "nqn." then a name, at most
/// nqn_max_length bytes in all. What nvmekit's management methods and programs accept.
[[nodiscard]] constexpr bool is_valid_nqn(std::string_view nqn) noexcept
{
    return is_valid_nqn_length(nqn) && nqn.size() > 4 && nqn.starts_with("nqn.");
}

/// Fabrics command capsule, generic layout (Base 2.0 section 6). The command is named by FCTYPE.
struct fabrics_command {
    // clang-format off
    command_dword0 cdw0;                        // bytes 03:00 OPC (7Fh) bits 07:00, PSDT bits 15:14, CID bits 31:16
    fabrics_command_type fctype;                // byte 04 FCTYPE
    std::array<std::uint8_t, 19> rsvd5;         // bytes 23:05
    data_pointer sgl1;                          // bytes 39:24 SGL1
    std::array<std::uint8_t, 24> type_specific; // bytes 63:40 Fabrics Command Type Specific
    // clang-format on

    [[nodiscard]] constexpr std::uint16_t command_id() const noexcept
    {
        return cdw0.get(command_dword0::cid);
    }

    friend constexpr bool operator==(const fabrics_command&, const fabrics_command&) noexcept = default;
};
static_assert(sizeof(fabrics_command) == 64);
static_assert(offsetof(fabrics_command, fctype) == 4);
static_assert(offsetof(fabrics_command, rsvd5) == 5);
static_assert(offsetof(fabrics_command, sgl1) == 24);
static_assert(offsetof(fabrics_command, type_specific) == 40);
static_assert(is_wire_type_v<fabrics_command>);

/// Connect Attributes (CATTR), Connect command byte 46.
struct connect_attributes : word<connect_attributes, std::uint8_t> {
    using word::word;
    // clang-format off
    static constexpr field<0, 2, std::uint8_t> priority_class{};       // priority class of an I/O queue: bits 01:00
    static constexpr field<2, 1, bool> disable_sq_flow_control{};      // Disable SQ Flow Control: bit 02
    // clang-format on
};

/// Connect command (FCTYPE 01h): creates the admin queue (QID 0) and its controller, or an I/O
/// queue of an existing controller. SGL1 points to the 1024-byte `connect_data`.
struct connect_command {
    command_dword0 cdw0;                 // bytes 03:00
    fabrics_command_type fctype;         // byte 04 FCTYPE (01h)
    std::array<std::uint8_t, 19> rsvd5;  // bytes 23:05
    data_pointer sgl1;                   // bytes 39:24 SGL1
    std::uint16_t recfmt;                // bytes 41:40 RECFMT (0h)
    std::uint16_t qid;                   // bytes 43:42 QID
    std::uint16_t sqsize;                // bytes 45:44 SQSIZE, 0's based
    connect_attributes cattr;            // byte 46 CATTR
    std::uint8_t rsvd47;                 // byte 47
    std::uint32_t kato;                  // bytes 51:48 KATO, milliseconds (admin queue only)
    std::array<std::uint8_t, 12> rsvd52; // bytes 63:52

    static constexpr fabrics_command_type command_type = fabrics_command_type::connect;

    [[nodiscard]] constexpr std::uint16_t command_id() const noexcept
    {
        return cdw0.get(command_dword0::cid);
    }
    /// Number of SQ entries the host asks for (SQSIZE + 1).
    [[nodiscard]] constexpr std::uint32_t queue_entries() const noexcept { return std::uint32_t{sqsize} + 1; }

    friend constexpr bool operator==(const connect_command&, const connect_command&) noexcept = default;
};
static_assert(sizeof(connect_command) == 64);
static_assert(offsetof(connect_command, fctype) == 4);
static_assert(offsetof(connect_command, sgl1) == 24);
static_assert(offsetof(connect_command, recfmt) == 40);
static_assert(offsetof(connect_command, qid) == 42);
static_assert(offsetof(connect_command, sqsize) == 44);
static_assert(offsetof(connect_command, cattr) == 46);
static_assert(offsetof(connect_command, kato) == 48);
static_assert(offsetof(connect_command, rsvd52) == 52);
static_assert(is_wire_type_v<connect_command>);

/// Data of the Connect command (1024 bytes).
struct connect_data {
    std::array<std::uint8_t, 16> hostid;      // bytes 15:00 HOSTID
    std::uint16_t cntlid;                     // bytes 17:16 CNTLID (FFFFh: dynamic, FFFEh: any static)
    std::array<std::uint8_t, 238> rsvd18;     // bytes 255:18
    std::array<char, nqn_field_size> subnqn;  // bytes 511:256 SUBNQN
    std::array<char, nqn_field_size> hostnqn; // bytes 767:512 HOSTNQN
    std::array<std::uint8_t, 256> rsvd768;    // bytes 1023:768

    /// SUBNQN and HOSTNQN up to their NUL, trailing spaces included: an NQN matches only the
    /// same bytes.
    [[nodiscard]] constexpr std::string_view subsystem_nqn() const noexcept
    {
        return nul_terminated_text_of(subnqn);
    }
    [[nodiscard]] constexpr std::string_view host_nqn() const noexcept
    {
        return nul_terminated_text_of(hostnqn);
    }
    /// Stores a NUL-padded NQN; false if it was cut to fit the field's 255 characters.
    constexpr bool set_subsystem_nqn(std::string_view nqn) noexcept
    {
        return assign_null_padded(subnqn, nqn);
    }
    constexpr bool set_host_nqn(std::string_view nqn) noexcept { return assign_null_padded(hostnqn, nqn); }
};
static_assert(sizeof(connect_data) == 1024);
static_assert(offsetof(connect_data, cntlid) == 16);
static_assert(offsetof(connect_data, rsvd18) == 18);
static_assert(offsetof(connect_data, subnqn) == 256);
static_assert(offsetof(connect_data, hostnqn) == 512);
static_assert(offsetof(connect_data, rsvd768) == 768);
static_assert(is_wire_type_v<connect_data>);

/// Dword 0 of a successful Connect response.
struct connect_response_dword0 : word<connect_response_dword0, std::uint32_t> {
    using word::word;
    static constexpr field<0, 16, std::uint16_t> cntlid{};         // CNTLID: bits 15:00
    static constexpr field<16, 16, std::uint16_t> authreq{};       // AUTHREQ: bits 31:16
    static constexpr field<17, 1, bool> authentication_required{}; // AUTHREQ.ATR: bit 17
    static constexpr field<18, 1, bool> secure_channel_required{}; // AUTHREQ.ASCR: bit 18
};
static_assert(sizeof(connect_response_dword0) == 4);

/// Dword 0 of a Connect response with status Connect Invalid Parameters: where the bad field is.
struct connect_invalid_parameter_dword0 : word<connect_invalid_parameter_dword0, std::uint32_t> {
    using word::word;
    // clang-format off
    static constexpr field<0, 16, std::uint16_t> ipo{};     // IPO, byte offset of the field: bits 15:00
    static constexpr field<16, 8, std::uint8_t> iattr{};    // IATTR: bits 23:16
    static constexpr field<16, 1, bool> in_connect_data{};  // IATTR bit 0: 1 = in the Connect data, 0 = in the SQE
    // clang-format on
};
static_assert(sizeof(connect_invalid_parameter_dword0) == 4);

/// Property size (ATTRIB.SIZE).
enum class property_size : std::uint8_t {
    four_bytes = 0x0,
    eight_bytes = 0x1,
};

/// Bytes a property access moves: 4, 8, or 0 for a reserved size.
[[nodiscard]] constexpr unsigned property_size_bytes(property_size size) noexcept
{
    switch (size) {
    case property_size::four_bytes: return 4;
    case property_size::eight_bytes: return 8;
    }
    return 0;
}

/// Attributes (ATTRIB) of Property Get and Property Set, byte 40.
struct property_attributes : word<property_attributes, std::uint8_t> {
    using word::word;
    static constexpr field<0, 3, property_size> size{}; // SIZE: bits 02:00
};

/// Property Get command (FCTYPE 04h): reads a controller property (register) at OFST. The value
/// is returned in CQE dwords 0 and 1 (see `property_get_value`).
struct property_get_command {
    command_dword0 cdw0;                 // bytes 03:00
    fabrics_command_type fctype;         // byte 04 FCTYPE (04h)
    std::array<std::uint8_t, 19> rsvd5;  // bytes 23:05
    data_pointer sgl1;                   // bytes 39:24 reserved
    property_attributes attrib;          // byte 40 ATTRIB
    std::array<std::uint8_t, 3> rsvd41;  // bytes 43:41
    std::uint32_t ofst;                  // bytes 47:44 OFST
    std::array<std::uint8_t, 16> rsvd48; // bytes 63:48

    static constexpr fabrics_command_type command_type = fabrics_command_type::property_get;

    [[nodiscard]] constexpr std::uint16_t command_id() const noexcept
    {
        return cdw0.get(command_dword0::cid);
    }
    [[nodiscard]] constexpr property_size size() const noexcept
    {
        return attrib.get(property_attributes::size);
    }

    friend constexpr bool operator==(const property_get_command&,
                                     const property_get_command&) noexcept = default;
};
static_assert(sizeof(property_get_command) == 64);
static_assert(offsetof(property_get_command, fctype) == 4);
static_assert(offsetof(property_get_command, attrib) == 40);
static_assert(offsetof(property_get_command, ofst) == 44);
static_assert(offsetof(property_get_command, rsvd48) == 48);
static_assert(is_wire_type_v<property_get_command>);

/// Property Set command (FCTYPE 00h): writes VALUE (4 or 8 bytes, per ATTRIB) at OFST.
struct property_set_command {
    command_dword0 cdw0;                // bytes 03:00
    fabrics_command_type fctype;        // byte 04 FCTYPE (00h)
    std::array<std::uint8_t, 19> rsvd5; // bytes 23:05
    data_pointer sgl1;                  // bytes 39:24 reserved
    property_attributes attrib;         // byte 40 ATTRIB
    std::array<std::uint8_t, 3> rsvd41; // bytes 43:41
    std::uint32_t ofst;                 // bytes 47:44 OFST
    std::uint64_t value;                // bytes 55:48 VALUE (bytes 55:52 reserved for a 4-byte property)
    std::array<std::uint8_t, 8> rsvd56; // bytes 63:56

    static constexpr fabrics_command_type command_type = fabrics_command_type::property_set;

    [[nodiscard]] constexpr std::uint16_t command_id() const noexcept
    {
        return cdw0.get(command_dword0::cid);
    }
    [[nodiscard]] constexpr property_size size() const noexcept
    {
        return attrib.get(property_attributes::size);
    }

    friend constexpr bool operator==(const property_set_command&,
                                     const property_set_command&) noexcept = default;
};
static_assert(sizeof(property_set_command) == 64);
static_assert(offsetof(property_set_command, fctype) == 4);
static_assert(offsetof(property_set_command, attrib) == 40);
static_assert(offsetof(property_set_command, ofst) == 44);
static_assert(offsetof(property_set_command, value) == 48);
static_assert(offsetof(property_set_command, rsvd56) == 56);
static_assert(is_wire_type_v<property_set_command>);

/// Value returned by Property Get: CQE dword 0 holds bits 31:00, dword 1 bits 63:32 (reserved
/// for a 4-byte property).
[[nodiscard]] constexpr std::uint64_t property_get_value(const completion_queue_entry& entry) noexcept
{
    return join_dwords(entry.dw0, entry.dw1);
}

constexpr void set_property_get_value(completion_queue_entry& entry, std::uint64_t value) noexcept
{
    split_qword(value, entry.dw0, entry.dw1);
}

/// Disconnect command (FCTYPE 08h): deletes the I/O queue the command was sent on.
struct disconnect_command {
    command_dword0 cdw0;                 // bytes 03:00
    fabrics_command_type fctype;         // byte 04 FCTYPE (08h)
    std::array<std::uint8_t, 19> rsvd5;  // bytes 23:05
    data_pointer sgl1;                   // bytes 39:24 reserved
    std::uint16_t recfmt;                // bytes 41:40 RECFMT (0h)
    std::array<std::uint8_t, 22> rsvd42; // bytes 63:42

    static constexpr fabrics_command_type command_type = fabrics_command_type::disconnect;

    [[nodiscard]] constexpr std::uint16_t command_id() const noexcept
    {
        return cdw0.get(command_dword0::cid);
    }

    friend constexpr bool operator==(const disconnect_command&, const disconnect_command&) noexcept = default;
};
static_assert(sizeof(disconnect_command) == 64);
static_assert(offsetof(disconnect_command, fctype) == 4);
static_assert(offsetof(disconnect_command, recfmt) == 40);
static_assert(offsetof(disconnect_command, rsvd42) == 42);
static_assert(is_wire_type_v<disconnect_command>);

/// Authentication Send command (FCTYPE 05h): sends TL bytes of a security protocol message.
struct authentication_send_command {
    command_dword0 cdw0;                 // bytes 03:00
    fabrics_command_type fctype;         // byte 04 FCTYPE (05h)
    std::array<std::uint8_t, 19> rsvd5;  // bytes 23:05
    data_pointer sgl1;                   // bytes 39:24 SGL1
    std::uint8_t rsvd40;                 // byte 40
    std::uint8_t spsp0;                  // byte 41 SPSP0
    std::uint8_t spsp1;                  // byte 42 SPSP1
    std::uint8_t secp;                   // byte 43 SECP
    std::uint32_t tl;                    // bytes 47:44 TL, transfer length
    std::array<std::uint8_t, 16> rsvd48; // bytes 63:48

    static constexpr fabrics_command_type command_type = fabrics_command_type::authentication_send;

    [[nodiscard]] constexpr std::uint16_t command_id() const noexcept
    {
        return cdw0.get(command_dword0::cid);
    }

    friend constexpr bool operator==(const authentication_send_command&,
                                     const authentication_send_command&) noexcept = default;
};
static_assert(sizeof(authentication_send_command) == 64);
static_assert(offsetof(authentication_send_command, spsp0) == 41);
static_assert(offsetof(authentication_send_command, spsp1) == 42);
static_assert(offsetof(authentication_send_command, secp) == 43);
static_assert(offsetof(authentication_send_command, tl) == 44);
static_assert(is_wire_type_v<authentication_send_command>);

/// Authentication Receive command (FCTYPE 06h): receives up to AL bytes of a security protocol
/// message.
struct authentication_receive_command {
    command_dword0 cdw0;                 // bytes 03:00
    fabrics_command_type fctype;         // byte 04 FCTYPE (06h)
    std::array<std::uint8_t, 19> rsvd5;  // bytes 23:05
    data_pointer sgl1;                   // bytes 39:24 SGL1
    std::uint8_t rsvd40;                 // byte 40
    std::uint8_t spsp0;                  // byte 41 SPSP0
    std::uint8_t spsp1;                  // byte 42 SPSP1
    std::uint8_t secp;                   // byte 43 SECP
    std::uint32_t al;                    // bytes 47:44 AL, allocation length
    std::array<std::uint8_t, 16> rsvd48; // bytes 63:48

    static constexpr fabrics_command_type command_type = fabrics_command_type::authentication_receive;

    [[nodiscard]] constexpr std::uint16_t command_id() const noexcept
    {
        return cdw0.get(command_dword0::cid);
    }

    friend constexpr bool operator==(const authentication_receive_command&,
                                     const authentication_receive_command&) noexcept = default;
};
static_assert(sizeof(authentication_receive_command) == 64);
static_assert(offsetof(authentication_receive_command, spsp0) == 41);
static_assert(offsetof(authentication_receive_command, secp) == 43);
static_assert(offsetof(authentication_receive_command, al) == 44);
static_assert(is_wire_type_v<authentication_receive_command>);

/// A 64-byte command type of one Fabrics command, named by its `command_type`.
// clang-format off
template <typename T>
concept FabricsCapsuleCommand = is_wire_type_v<T> && sizeof(T) == sizeof(submission_queue_entry) &&
                                std::same_as<std::remove_cv_t<decltype(T::command_type)>, fabrics_command_type>;
// clang-format on

/// A zeroed command of type `Command` with OPC 7Fh, its FCTYPE and `command_id`.
template <FabricsCapsuleCommand Command>
[[nodiscard]] constexpr Command make_fabrics_command(std::uint16_t command_id) noexcept
{
    Command command{};
    command.cdw0 = command_dword0{}
                       .with(command_dword0::opc, fabrics_command_opcode)
                       .with(command_dword0::cid, command_id);
    command.fctype = Command::command_type;
    return command;
}

/// Reads an SQE, or a generic Fabrics capsule, as the command type `Command`. The caller checks
/// FCTYPE first.
template <FabricsCapsuleCommand Command>
[[nodiscard]] constexpr Command fabrics_command_cast(const submission_queue_entry& entry) noexcept
{
    return std::bit_cast<Command>(entry);
}

template <FabricsCapsuleCommand Command>
[[nodiscard]] constexpr Command fabrics_command_cast(const fabrics_command& command) noexcept
{
    return std::bit_cast<Command>(command);
}

[[nodiscard]] constexpr fabrics_command to_fabrics_command(const submission_queue_entry& entry) noexcept
{
    return std::bit_cast<fabrics_command>(entry);
}

template <FabricsCapsuleCommand Command>
[[nodiscard]] constexpr fabrics_command to_fabrics_command(const Command& command) noexcept
{
    return std::bit_cast<fabrics_command>(command);
}

template <typename Command>
    requires FabricsCapsuleCommand<Command> || std::same_as<Command, fabrics_command>
[[nodiscard]] constexpr submission_queue_entry to_sqe(const Command& command) noexcept
{
    return std::bit_cast<submission_queue_entry>(command);
}

/// Whether an SQE is a Fabrics command (OPC 7Fh).
[[nodiscard]] constexpr bool is_fabrics_command(const submission_queue_entry& entry) noexcept
{
    return entry.opcode() == fabrics_command_opcode;
}

/// Transport Type (TRTYPE) of a Discovery log page entry.
enum class transport_type : std::uint8_t {
    rdma = 0x01,
    fibre_channel = 0x02,
    tcp = 0x03,
    intra_host = 0xfe, ///< loopback within the host
};

/// Address Family (ADRFAM) of a Discovery log page entry.
enum class address_family : std::uint8_t {
    ipv4 = 0x01,
    ipv6 = 0x02,
    infiniband = 0x03,
    fibre_channel = 0x04,
    intra_host = 0xfe, ///< loopback within the host
};

/// Subsystem Type (SUBTYPE) of a Discovery log page entry.
enum class discovery_subsystem_type : std::uint8_t {
    referral = 0x01,          ///< another discovery subsystem
    nvm = 0x02,               ///< an NVM subsystem (I/O controllers)
    current_discovery = 0x03, ///< the discovery subsystem that returned the log page
};

/// Secure channel requirement (TREQ bits 01:00).
enum class secure_channel_requirement : std::uint8_t {
    not_specified = 0b00,
    required = 0b01,
    not_required = 0b10,
};

/// Transport Requirements (TREQ) of a Discovery log page entry.
struct transport_requirements : word<transport_requirements, std::uint8_t> {
    using word::word;
    // clang-format off
    static constexpr field<0, 2, secure_channel_requirement> secure_channel{}; // secure channel: bits 01:00
    static constexpr field<2, 1, bool> disable_sq_flow_control{};              // SQ flow control disable supported: bit 02
    // clang-format on
};

/// Entry Flags (EFLAGS) of a Discovery log page entry.
struct discovery_entry_flags : word<discovery_entry_flags, std::uint16_t> {
    using word::word;
    static constexpr field<0, 1, bool> duplicate_returned_information{}; // DUPRETINFO: bit 00
    static constexpr field<1, 1, bool> explicit_persistent_connection{}; // EPCSD: bit 01
};

/// Discovery log page header (bytes 1023:00; the entries follow at byte 1024).
struct discovery_log_header {
    std::uint64_t genctr;                  // bytes 07:00 GENCTR
    std::uint64_t numrec;                  // bytes 15:08 NUMREC
    std::uint16_t recfmt;                  // bytes 17:16 RECFMT
    std::array<std::uint8_t, 1006> rsvd18; // bytes 1023:18
};
static_assert(sizeof(discovery_log_header) == 1024);
static_assert(offsetof(discovery_log_header, numrec) == 8);
static_assert(offsetof(discovery_log_header, recfmt) == 16);
static_assert(offsetof(discovery_log_header, rsvd18) == 18);
static_assert(is_wire_type_v<discovery_log_header>);

/// Discovery log page entry (1024 bytes). TRSVCID and TRADDR are ASCII strings padded with
/// spaces; SUBNQN is a NUL-terminated NQN.
struct discovery_log_entry {
    transport_type trtype;                   // byte 00 TRTYPE
    address_family adrfam;                   // byte 01 ADRFAM
    discovery_subsystem_type subtype;        // byte 02 SUBTYPE
    transport_requirements treq;             // byte 03 TREQ
    std::uint16_t portid;                    // bytes 05:04 PORTID
    std::uint16_t cntlid;                    // bytes 07:06 CNTLID
    std::uint16_t asqsz;                     // bytes 09:08 ASQSZ, admin max SQ size
    discovery_entry_flags eflags;            // bytes 11:10 EFLAGS
    std::array<std::uint8_t, 20> rsvd12;     // bytes 31:12
    std::array<char, 32> trsvcid;            // bytes 63:32 TRSVCID
    std::array<std::uint8_t, 192> rsvd64;    // bytes 255:64
    std::array<char, nqn_field_size> subnqn; // bytes 511:256 SUBNQN
    std::array<char, 256> traddr;            // bytes 767:512 TRADDR
    std::array<std::uint8_t, 256> tsas;      // bytes 1023:768 TSAS, transport specific

    [[nodiscard]] constexpr std::string_view service_id() const noexcept { return text_of(trsvcid); }
    [[nodiscard]] constexpr std::string_view address() const noexcept { return text_of(traddr); }
    [[nodiscard]] constexpr std::string_view subsystem_nqn() const noexcept { return text_of(subnqn); }
    /// Each setter returns false if the value was cut to fit its field.
    constexpr bool set_service_id(std::string_view value) noexcept
    {
        return assign_space_padded(trsvcid, value);
    }
    constexpr bool set_address(std::string_view value) noexcept { return assign_space_padded(traddr, value); }
    constexpr bool set_subsystem_nqn(std::string_view nqn) noexcept
    {
        return assign_null_padded(subnqn, nqn);
    }
};
static_assert(sizeof(discovery_log_entry) == 1024);
static_assert(offsetof(discovery_log_entry, adrfam) == 1);
static_assert(offsetof(discovery_log_entry, subtype) == 2);
static_assert(offsetof(discovery_log_entry, treq) == 3);
static_assert(offsetof(discovery_log_entry, portid) == 4);
static_assert(offsetof(discovery_log_entry, cntlid) == 6);
static_assert(offsetof(discovery_log_entry, asqsz) == 8);
static_assert(offsetof(discovery_log_entry, eflags) == 10);
static_assert(offsetof(discovery_log_entry, trsvcid) == 32);
static_assert(offsetof(discovery_log_entry, rsvd64) == 64);
static_assert(offsetof(discovery_log_entry, subnqn) == 256);
static_assert(offsetof(discovery_log_entry, traddr) == 512);
static_assert(offsetof(discovery_log_entry, tsas) == 768);
static_assert(is_wire_type_v<discovery_log_entry>);

[[nodiscard]] constexpr std::string_view name(transport_type type) noexcept
{
    switch (type) {
    case transport_type::rdma: return "rdma";
    case transport_type::fibre_channel: return "fc";
    case transport_type::tcp: return "tcp";
    case transport_type::intra_host: return "loop";
    }
    return {};
}

[[nodiscard]] constexpr std::string_view name(address_family family) noexcept
{
    switch (family) {
    case address_family::ipv4: return "ipv4";
    case address_family::ipv6: return "ipv6";
    case address_family::infiniband: return "ib";
    case address_family::fibre_channel: return "fc";
    case address_family::intra_host: return "loop";
    }
    return {};
}

[[nodiscard]] constexpr std::string_view name(discovery_subsystem_type type) noexcept
{
    switch (type) {
    case discovery_subsystem_type::referral: return "referral";
    case discovery_subsystem_type::nvm: return "nvme";
    case discovery_subsystem_type::current_discovery: return "current_discovery";
    }
    return {};
}

[[nodiscard]] constexpr std::string_view name(secure_channel_requirement requirement) noexcept
{
    switch (requirement) {
    case secure_channel_requirement::not_specified: return "not specified";
    case secure_channel_requirement::required: return "required";
    case secure_channel_requirement::not_required: return "not required";
    }
    return {};
}

} // namespace spec
NVMEKIT_END_NAMESPACE
