#pragma once
/// NVMe/TCP PDU headers (NVMe/TCP Transport Specification 1.0).
///
/// Each struct is a PDU header as it appears on the wire, starting with the 8-byte common
/// header; the header digest, padding and data follow it as HLEN, PDO and PLEN say.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nvmekit/config.hpp>
#include <nvmekit/spec/bits.hpp>
#include <nvmekit/spec/queue_entries.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace spec {

/// PDU Format Version (PFV) of NVMe/TCP 1.0.
inline constexpr std::uint16_t tcp_pdu_format_version = 0x0000;
/// Size of the header digest (HDGST) and of the data digest (DDGST), both CRC32C.
inline constexpr std::size_t tcp_header_digest_size = 4;
inline constexpr std::size_t tcp_data_digest_size = 4;
/// Smallest MAXH2CDATA a controller may report in ICResp.
inline constexpr std::uint32_t tcp_min_maxh2cdata = 4096;
/// Largest HPDA/CPDA value (0's based dwords: 128-byte alignment).
inline constexpr std::uint8_t tcp_max_pdu_data_alignment = 31;
/// Longest header in error that a termination request carries after its own header, and the
/// longest termination request PDU.
inline constexpr std::size_t tcp_term_req_max_data = 128;
inline constexpr std::size_t tcp_term_req_max_length = 24 + tcp_term_req_max_data;

/// PDU-type, byte 00 of the common header.
enum class pdu_type : std::uint8_t {
    icreq = 0x00,
    icresp = 0x01,
    h2c_term_req = 0x02,
    c2h_term_req = 0x03,
    capsule_cmd = 0x04,
    capsule_resp = 0x05,
    h2c_data = 0x06,
    c2h_data = 0x07,
    r2t = 0x09,
};

/// PDU name as the specification writes it ("ICReq", "CapsuleCmd", ...), or empty if reserved.
[[nodiscard]] constexpr std::string_view name(pdu_type type) noexcept
{
    using enum pdu_type;
    switch (type) {
    case icreq: return "ICReq";
    case icresp: return "ICResp";
    case h2c_term_req: return "H2CTermReq";
    case c2h_term_req: return "C2HTermReq";
    case capsule_cmd: return "CapsuleCmd";
    case capsule_resp: return "CapsuleResp";
    case h2c_data: return "H2CData";
    case c2h_data: return "C2HData";
    case r2t: return "R2T";
    }
    return {};
}

/// Whether the host sends PDUs of this type (the controller sends the others).
[[nodiscard]] constexpr bool is_host_to_controller(pdu_type type) noexcept
{
    using enum pdu_type;
    return type == icreq || type == h2c_term_req || type == capsule_cmd || type == h2c_data;
}

/// The fixed HLEN of each PDU type, or 0 for a reserved type.
[[nodiscard]] constexpr std::uint8_t pdu_header_length(pdu_type type) noexcept
{
    using enum pdu_type;
    switch (type) {
    case icreq:
    case icresp: return 128;
    case capsule_cmd: return 72;
    case h2c_term_req:
    case c2h_term_req:
    case capsule_resp:
    case h2c_data:
    case c2h_data:
    case r2t: return 24;
    }
    return 0;
}

/// Alignment in bytes that an HPDA or CPDA value asks of PDU data: (value + 1) dwords.
[[nodiscard]] constexpr std::uint32_t pdu_data_alignment_bytes(std::uint8_t hpda_or_cpda) noexcept
{
    return (std::uint32_t{hpda_or_cpda} + 1) * 4;
}

/// FLAGS, byte 01 of the common header. Bits 02 and 03 exist only in the data PDUs.
struct pdu_flags : word<pdu_flags, std::uint8_t> {
    using word::word;
    // clang-format off
    static constexpr field<0, 1, bool> hdgstf{};   // HDGSTF, header digest present: bit 00
    static constexpr field<1, 1, bool> ddgstf{};   // DDGSTF, data digest present: bit 01
    static constexpr field<2, 1, bool> last_pdu{}; // LAST_PDU (H2CData, C2HData): bit 02
    static constexpr field<3, 1, bool> success{};  // SUCCESS (C2HData, with LAST_PDU; no CapsuleResp follows): bit 03
    // clang-format on
};

/// PDU common header (CH), bytes 07:00 of every PDU.
struct pdu_common_header {
    pdu_type type;      // byte 00 PDU-type
    pdu_flags flags;    // byte 01 FLAGS
    std::uint8_t hlen;  // byte 02 HLEN, PDU header length
    std::uint8_t pdo;   // byte 03 PDO, PDU data offset (0 without data)
    std::uint32_t plen; // bytes 07:04 PLEN, total PDU length

    friend constexpr bool operator==(const pdu_common_header&, const pdu_common_header&) noexcept = default;
};
static_assert(sizeof(pdu_common_header) == 8);
static_assert(offsetof(pdu_common_header, flags) == 1);
static_assert(offsetof(pdu_common_header, hlen) == 2);
static_assert(offsetof(pdu_common_header, pdo) == 3);
static_assert(offsetof(pdu_common_header, plen) == 4);
static_assert(is_wire_type_v<pdu_common_header>);

/// DGST of ICReq and ICResp: the digests asked for (ICReq) and granted (ICResp).
struct digest_options : word<digest_options, std::uint8_t> {
    using word::word;
    static constexpr field<0, 1, bool> hdgst_enable{}; // HDGST_ENABLE: bit 00
    static constexpr field<1, 1, bool> ddgst_enable{}; // DDGST_ENABLE: bit 01
};

/// Initialize Connection Request (ICReq), 128 bytes, host to controller.
struct icreq_pdu {
    pdu_common_header ch;                 // bytes 07:00 CH
    std::uint16_t pfv;                    // bytes 09:08 PFV
    std::uint8_t hpda;                    // byte 10 HPDA, host PDU data alignment, 0's based dwords
    digest_options dgst;                  // byte 11 DGST
    std::uint32_t maxr2t;                 // bytes 15:12 MAXR2T, outstanding R2Ts per command, 0's based
    std::array<std::uint8_t, 112> rsvd16; // bytes 127:16
};
static_assert(sizeof(icreq_pdu) == 128);
static_assert(offsetof(icreq_pdu, pfv) == 8);
static_assert(offsetof(icreq_pdu, hpda) == 10);
static_assert(offsetof(icreq_pdu, dgst) == 11);
static_assert(offsetof(icreq_pdu, maxr2t) == 12);
static_assert(offsetof(icreq_pdu, rsvd16) == 16);
static_assert(is_wire_type_v<icreq_pdu>);

/// Initialize Connection Response (ICResp), 128 bytes, controller to host.
struct icresp_pdu {
    pdu_common_header ch;                 // bytes 07:00 CH
    std::uint16_t pfv;                    // bytes 09:08 PFV
    std::uint8_t cpda;                    // byte 10 CPDA, controller PDU data alignment, 0's based dwords
    digest_options dgst;                  // byte 11 DGST
    std::uint32_t maxh2cdata;             // bytes 15:12 MAXH2CDATA, largest H2CData payload in bytes
    std::array<std::uint8_t, 112> rsvd16; // bytes 127:16
};
static_assert(sizeof(icresp_pdu) == 128);
static_assert(offsetof(icresp_pdu, pfv) == 8);
static_assert(offsetof(icresp_pdu, cpda) == 10);
static_assert(offsetof(icresp_pdu, dgst) == 11);
static_assert(offsetof(icresp_pdu, maxh2cdata) == 12);
static_assert(is_wire_type_v<icresp_pdu>);

/// Fatal Error Status (FES) of H2CTermReq and C2HTermReq.
enum class fatal_error_status : std::uint16_t {
    invalid_pdu_header_field = 0x01,
    pdu_sequence_error = 0x02,
    header_digest_error = 0x03,
    data_transfer_out_of_range = 0x04,
    /// H2CTermReq: R2T Limit Exceeded; C2HTermReq: Data Transfer Limit Exceeded.
    limit_exceeded = 0x05,
    unsupported_parameter = 0x06,
};

/// FES name; 05h is named for the PDU that carries it (H2CTermReq or C2HTermReq).
[[nodiscard]] constexpr std::string_view name(fatal_error_status status,
                                              pdu_type carrier = pdu_type::c2h_term_req) noexcept
{
    using enum fatal_error_status;
    switch (status) {
    case invalid_pdu_header_field: return "Invalid PDU Header Field";
    case pdu_sequence_error: return "PDU Sequence Error";
    case header_digest_error: return "Header Digest Error";
    case data_transfer_out_of_range: return "Data Transfer Out of Range";
    case limit_exceeded:
        return carrier == pdu_type::h2c_term_req ? std::string_view{"R2T Limit Exceeded"}
                                                 : std::string_view{"Data Transfer Limit Exceeded"};
    case unsupported_parameter: return "Unsupported Parameter";
    }
    return {};
}

/// Header of H2CTermReq and C2HTermReq (24 bytes); up to 128 bytes of the PDU header in error
/// follow it. FEI is not naturally aligned, so it is stored as bytes.
struct term_req_pdu {
    pdu_common_header ch;                // bytes 07:00 CH
    fatal_error_status fes;              // bytes 09:08 FES
    std::array<std::uint8_t, 4> fei;     // bytes 13:10 FEI, fatal error information
    std::array<std::uint8_t, 10> rsvd14; // bytes 23:14

    /// FEI: for Invalid PDU Header Field and Unsupported Parameter, the byte offset of the
    /// field in error; otherwise reserved.
    [[nodiscard]] constexpr std::uint32_t error_information() const noexcept
    {
        return load_le<std::uint32_t>(fei, 0);
    }
    constexpr void set_error_information(std::uint32_t value) noexcept { store_le(fei, 0, value); }
};
static_assert(sizeof(term_req_pdu) == 24);
static_assert(offsetof(term_req_pdu, fes) == 8);
static_assert(offsetof(term_req_pdu, fei) == 10);
static_assert(offsetof(term_req_pdu, rsvd14) == 14);
static_assert(is_wire_type_v<term_req_pdu>);

/// Command Capsule (CapsuleCmd) header: the SQE; in-capsule data may follow at PDO.
struct capsule_cmd_pdu {
    pdu_common_header ch;       // bytes 07:00 CH
    submission_queue_entry sqe; // bytes 71:08 SQE
};
static_assert(sizeof(capsule_cmd_pdu) == 72);
static_assert(offsetof(capsule_cmd_pdu, sqe) == 8);
static_assert(is_wire_type_v<capsule_cmd_pdu>);

/// Response Capsule (CapsuleResp) header: the CQE.
struct capsule_resp_pdu {
    pdu_common_header ch;       // bytes 07:00 CH
    completion_queue_entry cqe; // bytes 23:08 CQE
};
static_assert(sizeof(capsule_resp_pdu) == 24);
static_assert(offsetof(capsule_resp_pdu, cqe) == 8);
static_assert(is_wire_type_v<capsule_resp_pdu>);

/// Host to Controller Data (H2CData) header: data answering an R2T.
struct h2c_data_pdu {
    pdu_common_header ch;               // bytes 07:00 CH
    std::uint16_t cccid;                // bytes 09:08 CCCID, command capsule CID
    std::uint16_t ttag;                 // bytes 11:10 TTAG, transfer tag from the R2T
    std::uint32_t datao;                // bytes 15:12 DATAO, offset in the command's data
    std::uint32_t datal;                // bytes 19:16 DATAL, data length of this PDU
    std::array<std::uint8_t, 4> rsvd20; // bytes 23:20
};
static_assert(sizeof(h2c_data_pdu) == 24);
static_assert(offsetof(h2c_data_pdu, cccid) == 8);
static_assert(offsetof(h2c_data_pdu, ttag) == 10);
static_assert(offsetof(h2c_data_pdu, datao) == 12);
static_assert(offsetof(h2c_data_pdu, datal) == 16);
static_assert(offsetof(h2c_data_pdu, rsvd20) == 20);
static_assert(is_wire_type_v<h2c_data_pdu>);

/// Controller to Host Data (C2HData) header.
struct c2h_data_pdu {
    pdu_common_header ch;               // bytes 07:00 CH
    std::uint16_t cccid;                // bytes 09:08 CCCID, command capsule CID
    std::array<std::uint8_t, 2> rsvd10; // bytes 11:10
    std::uint32_t datao;                // bytes 15:12 DATAO, offset in the command's data
    std::uint32_t datal;                // bytes 19:16 DATAL, data length of this PDU
    std::array<std::uint8_t, 4> rsvd20; // bytes 23:20
};
static_assert(sizeof(c2h_data_pdu) == 24);
static_assert(offsetof(c2h_data_pdu, cccid) == 8);
static_assert(offsetof(c2h_data_pdu, rsvd10) == 10);
static_assert(offsetof(c2h_data_pdu, datao) == 12);
static_assert(offsetof(c2h_data_pdu, datal) == 16);
static_assert(is_wire_type_v<c2h_data_pdu>);

/// Ready to Transfer (R2T): the controller asks for R2TL bytes at offset R2TO.
struct r2t_pdu {
    pdu_common_header ch;               // bytes 07:00 CH
    std::uint16_t cccid;                // bytes 09:08 CCCID, command capsule CID
    std::uint16_t ttag;                 // bytes 11:10 TTAG, transfer tag
    std::uint32_t r2to;                 // bytes 15:12 R2TO, R2T offset
    std::uint32_t r2tl;                 // bytes 19:16 R2TL, R2T length
    std::array<std::uint8_t, 4> rsvd20; // bytes 23:20
};
static_assert(sizeof(r2t_pdu) == 24);
static_assert(offsetof(r2t_pdu, cccid) == 8);
static_assert(offsetof(r2t_pdu, ttag) == 10);
static_assert(offsetof(r2t_pdu, r2to) == 12);
static_assert(offsetof(r2t_pdu, r2tl) == 16);
static_assert(is_wire_type_v<r2t_pdu>);

} // namespace spec
NVMEKIT_END_NAMESPACE
