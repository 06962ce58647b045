#pragma once
/// Encoding NVMe/TCP PDUs into caller buffers: the controller's ICResp, CapsuleResp, C2HData,
/// R2T and C2HTermReq, and the host's ICReq, CapsuleCmd, H2CData and H2CTermReq (for hosts
/// written against the library and for round trips through pdu_stream).
///
/// Every encoder fills the common header (FLAGS digest bits, HLEN, PDO, PLEN), the header
/// digest when the connection has header digests, zero padding up to the alignment the peer
/// asked for (HPDA for C2HData, CPDA for host data), the data gathered from one or more spans,
/// and the data digest over it when the connection has data digests. ICReq, ICResp and the
/// termination requests never carry digests. Each returns the PDU's size (PLEN); `out` holds
/// at least pdu_size() bytes. For a send that leaves the data where it is (writev), encode
/// only the part before the data with encode_c2h_data_prefix and append data_digest().

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include <nvmekit/config.hpp>
#include <nvmekit/spec/queue_entries.hpp>
#include <nvmekit/spec/tcp.hpp>
#include <nvmekit/transport/tcp/connection_params.hpp>
#include <nvmekit/transport/tcp/crc32c.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace transport::tcp {

/// Data of a PDU, as one or more spans sent one after the other.
using data_parts = std::span<const std::span<const std::byte>>;

/// Where each part of one PDU lies.
struct pdu_layout {
    std::uint32_t hlen = 0;
    bool header_digest = false;
    /// PDO: offset of the data (0 without data).
    std::uint32_t pdo = 0;
    std::uint32_t data_length = 0;
    bool data_digest = false;
    /// PLEN: the whole PDU.
    std::uint32_t plen = 0;

    /// End of the header and its digest.
    [[nodiscard]] constexpr std::uint32_t header_end() const noexcept
    {
        return hlen + (header_digest ? static_cast<std::uint32_t>(spec::tcp_header_digest_size) : 0);
    }
    /// The bytes before the data: header, digest, padding.
    [[nodiscard]] constexpr std::uint32_t prefix_size() const noexcept
    {
        return data_length == 0 ? header_end() : pdo;
    }
};

/// The layout of a PDU of `type` carrying `data_length` bytes on a connection with `params`.
[[nodiscard]] constexpr pdu_layout layout_of(spec::pdu_type type, std::uint32_t data_length,
                                             const connection_params& params) noexcept
{
    using enum spec::pdu_type;
    const bool no_digests = type == icreq || type == icresp || type == h2c_term_req || type == c2h_term_req;
    pdu_layout layout{};
    layout.hlen = spec::pdu_header_length(type);
    layout.header_digest = !no_digests && params.header_digest;
    layout.data_length = data_length;
    layout.data_digest = !no_digests && params.data_digest && data_length != 0;
    if (data_length == 0) {
        layout.plen = layout.header_end();
        return layout;
    }
    // Termination requests carry the header in error right after their own header.
    const std::uint32_t alignment =
        no_digests ? 1 : spec::pdu_data_alignment_bytes(type == c2h_data ? params.hpda : params.cpda);
    layout.pdo = (layout.header_end() + alignment - 1) / alignment * alignment;
    layout.plen = layout.pdo + data_length +
                  (layout.data_digest ? static_cast<std::uint32_t>(spec::tcp_data_digest_size) : 0);
    return layout;
}

/// Size of the PDU layout_of describes.
[[nodiscard]] constexpr std::size_t pdu_size(spec::pdu_type type, std::uint32_t data_length,
                                             const connection_params& params) noexcept
{
    return layout_of(type, data_length, params).plen;
}

/// CRC-32C over the data parts, in order: the DDGST value.
[[nodiscard]] constexpr std::uint32_t data_digest(data_parts data) noexcept
{
    crc32c digest;
    for (const auto part : data) {
        digest.update(part);
    }
    return digest.value();
}

[[nodiscard]] constexpr std::size_t total_size(data_parts data) noexcept
{
    std::size_t size = 0;
    for (const auto part : data) {
        size += part.size();
    }
    return size;
}

namespace detail {

/// Writes the header (its common header completed from `layout`), HDGST and padding; returns the
/// prefix size.
template <typename Pdu>
std::size_t write_prefix(Pdu header, const pdu_layout& layout, std::span<std::byte> out) noexcept
{
    static_assert(spec::is_wire_type_v<Pdu>);
    NVMEKIT_ASSERT(sizeof(Pdu) == layout.hlen, "tcp::encode: header size differs from HLEN");
    NVMEKIT_ASSERT(out.size() >= layout.prefix_size(), "tcp::encode: output buffer too small");
    header.ch.flags.set(spec::pdu_flags::hdgstf, layout.header_digest)
        .set(spec::pdu_flags::ddgstf, layout.data_digest);
    header.ch.hlen = static_cast<std::uint8_t>(layout.hlen);
    // The data of a termination request is the header in error, not PDU data: PDO stays 0.
    const bool term_req =
        header.ch.type == spec::pdu_type::h2c_term_req || header.ch.type == spec::pdu_type::c2h_term_req;
    header.ch.pdo = term_req ? std::uint8_t{0} : static_cast<std::uint8_t>(layout.pdo);
    header.ch.plen = layout.plen;
    std::memcpy(out.data(), &header, sizeof(Pdu));
    std::size_t at = sizeof(Pdu);
    if (layout.header_digest) {
        const auto digest = digest_bytes(crc32c_of(out.first(sizeof(Pdu))));
        std::memcpy(out.data() + at, digest.data(), digest.size());
        at += digest.size();
    }
    const std::size_t prefix = layout.prefix_size();
    std::fill(out.begin() + static_cast<std::ptrdiff_t>(at),
              out.begin() + static_cast<std::ptrdiff_t>(prefix), std::byte{0});
    return prefix;
}

/// The whole PDU: prefix, data, DDGST.
template <typename Pdu>
std::size_t write_pdu(const Pdu& header, const pdu_layout& layout, data_parts data,
                      std::span<std::byte> out) noexcept
{
    NVMEKIT_ASSERT(total_size(data) == layout.data_length, "tcp::encode: data size differs from the layout");
    NVMEKIT_ASSERT(out.size() >= layout.plen, "tcp::encode: output buffer too small");
    std::size_t at = write_prefix(header, layout, out);
    crc32c digest;
    for (const auto part : data) {
        if (!part.empty()) {
            std::memcpy(out.data() + at, part.data(), part.size());
        }
        if (layout.data_digest) {
            digest.update(part);
        }
        at += part.size();
    }
    if (layout.data_digest) {
        const auto bytes = digest_bytes(digest.value());
        std::memcpy(out.data() + at, bytes.data(), bytes.size());
        at += bytes.size();
    }
    return at;
}

template <typename Pdu>
constexpr Pdu with_type(spec::pdu_type type) noexcept
{
    Pdu pdu{};
    pdu.ch.type = type;
    return pdu;
}

inline std::size_t write_term_req(spec::pdu_type type, const fatal_error& error,
                                  std::span<const std::byte> header_in_error,
                                  std::span<std::byte> out) noexcept
{
    const auto carried = header_in_error.first(std::min(header_in_error.size(), spec::tcp_term_req_max_data));
    auto pdu = with_type<spec::term_req_pdu>(type);
    pdu.fes = error.status;
    const bool has_fei = error.status == spec::fatal_error_status::invalid_pdu_header_field ||
                         error.status == spec::fatal_error_status::unsupported_parameter;
    pdu.set_error_information(has_fei ? error.information : 0);
    const std::array<std::span<const std::byte>, 1> parts{carried};
    return write_pdu(pdu, layout_of(type, static_cast<std::uint32_t>(carried.size()), {}), parts, out);
}

} // namespace detail

/// ICResp granting `params` (make_icresp); 128 bytes.
inline std::size_t encode_icresp(const connection_params& params, std::span<std::byte> out) noexcept
{
    NVMEKIT_ASSERT(out.size() >= sizeof(spec::icresp_pdu), "tcp::encode_icresp: output buffer too small");
    const spec::icresp_pdu icresp = make_icresp(params);
    std::memcpy(out.data(), &icresp, sizeof(icresp));
    return sizeof(icresp);
}

/// CapsuleResp carrying `cqe` (the caller sets SQHD, CID, status; the phase bit is unused).
inline std::size_t encode_capsule_resp(const spec::completion_queue_entry& cqe,
                                       const connection_params& params, std::span<std::byte> out) noexcept
{
    auto pdu = detail::with_type<spec::capsule_resp_pdu>(spec::pdu_type::capsule_resp);
    pdu.cqe = cqe;
    return detail::write_pdu(pdu, layout_of(spec::pdu_type::capsule_resp, 0, params), {}, out);
}

/// Fields of an R2T.
struct r2t_fields {
    std::uint16_t cccid = 0;
    std::uint16_t ttag = 0;
    std::uint32_t r2to = 0;
    std::uint32_t r2tl = 0;
};

/// R2T asking for R2TL bytes at R2TO of command CCCID (R2TL at most MAXH2CDATA per H2CData,
/// the host splits larger ones).
inline std::size_t encode_r2t(const r2t_fields& fields, const connection_params& params,
                              std::span<std::byte> out) noexcept
{
    NVMEKIT_ASSERT(fields.r2tl != 0, "tcp::encode_r2t: an R2T asks for at least one byte");
    auto pdu = detail::with_type<spec::r2t_pdu>(spec::pdu_type::r2t);
    pdu.cccid = fields.cccid;
    pdu.ttag = fields.ttag;
    pdu.r2to = fields.r2to;
    pdu.r2tl = fields.r2tl;
    return detail::write_pdu(pdu, layout_of(spec::pdu_type::r2t, 0, params), {}, out);
}

/// Fields of a C2HData.
struct c2h_data_fields {
    std::uint16_t cccid = 0;
    std::uint32_t datao = 0;
    /// LAST_PDU: the last C2HData of the command.
    bool last = false;
    /// SUCCESS: the command completed successfully and no CapsuleResp follows. Only with LAST_PDU
    /// on a queue whose host disabled SQ flow control (may_skip_capsule_resp).
    bool success = false;
};

/// Whether a C2HData may carry SUCCESS on this connection: the host disabled SQ flow control,
/// so it needs no CapsuleResp for its SQ head.
[[nodiscard]] constexpr bool may_skip_capsule_resp(const connection_params& params) noexcept
{
    return params.sq_flow_control_disabled;
}

namespace detail {
inline spec::c2h_data_pdu c2h_header(const c2h_data_fields& fields, std::uint32_t data_length,
                                     [[maybe_unused]] const connection_params& params) noexcept
{
    NVMEKIT_ASSERT(data_length != 0, "tcp::encode_c2h_data: a C2HData carries data");
    NVMEKIT_ASSERT(!fields.success || (fields.last && may_skip_capsule_resp(params)),
                   "tcp::encode_c2h_data: SUCCESS needs LAST_PDU and SQ flow control disabled");
    auto pdu = with_type<spec::c2h_data_pdu>(spec::pdu_type::c2h_data);
    pdu.ch.flags.set(spec::pdu_flags::last_pdu, fields.last).set(spec::pdu_flags::success, fields.success);
    pdu.cccid = fields.cccid;
    pdu.datao = fields.datao;
    pdu.datal = data_length;
    return pdu;
}
} // namespace detail

/// C2HData carrying `data` (its parts in order) at DATAO, padded to HPDA.
inline std::size_t encode_c2h_data(const c2h_data_fields& fields, data_parts data,
                                   const connection_params& params, std::span<std::byte> out) noexcept
{
    const auto length = static_cast<std::uint32_t>(total_size(data));
    return detail::write_pdu(detail::c2h_header(fields, length, params),
                             layout_of(spec::pdu_type::c2h_data, length, params), data, out);
}

/// The part of a C2HData before its `data_length` bytes of data (header, HDGST, padding); the
/// caller sends the data after it, then digest_bytes(data_digest(data)) when
/// params.data_digest. Returns the prefix size (PDO).
inline std::size_t encode_c2h_data_prefix(const c2h_data_fields& fields, std::uint32_t data_length,
                                          const connection_params& params, std::span<std::byte> out) noexcept
{
    return detail::write_prefix(detail::c2h_header(fields, data_length, params),
                                layout_of(spec::pdu_type::c2h_data, data_length, params), out);
}

/// C2HTermReq reporting `error`, carrying the first 128 bytes of `header_in_error` (the PDU
/// header that caused it; pdu_stream::header_bytes()). FEI is written only for the statuses that
/// define it. At most tcp_term_req_max_length bytes.
inline std::size_t encode_c2h_term_req(const fatal_error& error, std::span<const std::byte> header_in_error,
                                       std::span<std::byte> out) noexcept
{
    return detail::write_term_req(spec::pdu_type::c2h_term_req, error, header_in_error, out);
}

/// ICReq (host side): PFV 0, HPDA, the digests asked for, MAXR2T (0's based).
inline std::size_t encode_icreq(std::uint8_t hpda, bool header_digest, bool data_digest, std::uint32_t maxr2t,
                                std::span<std::byte> out) noexcept
{
    NVMEKIT_ASSERT(out.size() >= sizeof(spec::icreq_pdu), "tcp::encode_icreq: output buffer too small");
    auto pdu = detail::with_type<spec::icreq_pdu>(spec::pdu_type::icreq);
    pdu.ch.hlen = sizeof(spec::icreq_pdu);
    pdu.ch.plen = sizeof(spec::icreq_pdu);
    pdu.pfv = spec::tcp_pdu_format_version;
    pdu.hpda = hpda;
    pdu.dgst.set(spec::digest_options::hdgst_enable, header_digest)
        .set(spec::digest_options::ddgst_enable, data_digest);
    pdu.maxr2t = maxr2t;
    std::memcpy(out.data(), &pdu, sizeof(pdu));
    return sizeof(pdu);
}

/// CapsuleCmd (host side) carrying `sqe` and in-capsule `data`, padded to CPDA.
inline std::size_t encode_capsule_cmd(const spec::submission_queue_entry& sqe, data_parts data,
                                      const connection_params& params, std::span<std::byte> out) noexcept
{
    auto pdu = detail::with_type<spec::capsule_cmd_pdu>(spec::pdu_type::capsule_cmd);
    pdu.sqe = sqe;
    const auto length = static_cast<std::uint32_t>(total_size(data));
    return detail::write_pdu(pdu, layout_of(spec::pdu_type::capsule_cmd, length, params), data, out);
}

/// Fields of an H2CData.
struct h2c_data_fields {
    std::uint16_t cccid = 0;
    std::uint16_t ttag = 0;
    std::uint32_t datao = 0;
    /// LAST_PDU: the last H2CData answering the R2T.
    bool last = false;
};

/// H2CData (host side) carrying `data` at DATAO, padded to CPDA.
inline std::size_t encode_h2c_data(const h2c_data_fields& fields, data_parts data,
                                   const connection_params& params, std::span<std::byte> out) noexcept
{
    const auto length = static_cast<std::uint32_t>(total_size(data));
    NVMEKIT_ASSERT(length != 0, "tcp::encode_h2c_data: an H2CData carries data");
    auto pdu = detail::with_type<spec::h2c_data_pdu>(spec::pdu_type::h2c_data);
    pdu.ch.flags.set(spec::pdu_flags::last_pdu, fields.last);
    pdu.cccid = fields.cccid;
    pdu.ttag = fields.ttag;
    pdu.datao = fields.datao;
    pdu.datal = length;
    return detail::write_pdu(pdu, layout_of(spec::pdu_type::h2c_data, length, params), data, out);
}

/// H2CTermReq (host side), as encode_c2h_term_req.
inline std::size_t encode_h2c_term_req(const fatal_error& error, std::span<const std::byte> header_in_error,
                                       std::span<std::byte> out) noexcept
{
    return detail::write_term_req(spec::pdu_type::h2c_term_req, error, header_in_error, out);
}

} // namespace transport::tcp
NVMEKIT_END_NAMESPACE
