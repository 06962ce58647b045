#pragma once
/// Connection initialization of NVMe/TCP (ICReq/ICResp): what the target allows
/// (target_limits), the parameters one connection runs with once ICResp is sent
/// (connection_params), the fatal errors that end a connection (fatal_error, carried by
/// C2HTermReq), negotiate() to check an ICReq and derive the parameters, and make_icresp() to
/// answer it.
///
/// The Linux host fails a connection whose ICResp grants other digests than it asked for, or
/// a CPDA other than 0: a target meant for it keeps the default cpda 0 and allows both digests.

#include <cstdint>
#include <type_traits>
#include <utility>

#include <nvmekit/config.hpp>
#include <nvmekit/spec/tcp.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace transport::tcp {

/// A fatal transport error: the FES and FEI of the C2HTermReq that reports it.
struct fatal_error {
    spec::fatal_error_status status = spec::fatal_error_status::invalid_pdu_header_field;
    /// FEI: the byte offset of the field in error for Invalid PDU Header Field and Unsupported
    /// Parameter; 0 (reserved) for the other statuses.
    std::uint32_t information = 0;

    friend constexpr bool operator==(const fatal_error&, const fatal_error&) noexcept = default;
};

/// Invalid PDU Header Field, FEI = the offset of the field in the PDU header.
[[nodiscard]] constexpr fatal_error invalid_header_field(std::uint32_t offset) noexcept
{
    return {spec::fatal_error_status::invalid_pdu_header_field, offset};
}
/// Unsupported Parameter, FEI = the offset of the parameter in the PDU header.
[[nodiscard]] constexpr fatal_error unsupported_parameter(std::uint32_t offset) noexcept
{
    return {spec::fatal_error_status::unsupported_parameter, offset};
}
/// A fatal error whose FEI is reserved (PDU Sequence Error, Header Digest Error, Data Transfer
/// Out of Range, Data Transfer Limit Exceeded).
[[nodiscard]] constexpr fatal_error fatal(spec::fatal_error_status status) noexcept { return {status, 0}; }

/// A value, or the fatal error that ends the connection instead.
template <typename T>
class result {
public:
    constexpr result(T value) noexcept(std::is_nothrow_move_constructible_v<T>) // NOLINT: implicit by design
        : value_{std::move(value)}
    {}
    constexpr result(fatal_error error) noexcept // NOLINT: implicit by design
        : error_{error}, has_value_{false}
    {}

    [[nodiscard]] constexpr bool has_value() const noexcept { return has_value_; }
    constexpr explicit operator bool() const noexcept { return has_value_; }
    [[nodiscard]] constexpr const fatal_error& error() const noexcept
    {
        NVMEKIT_ASSERT(!has_value_, "tcp::result: error() of a value");
        return error_;
    }
    [[nodiscard]] constexpr const T& value() const noexcept
    {
        NVMEKIT_ASSERT(has_value_, "tcp::result: value() of an error");
        return value_;
    }
    [[nodiscard]] constexpr const T& operator*() const noexcept { return value(); }
    [[nodiscard]] constexpr const T* operator->() const noexcept { return &value(); }

private:
    T value_{};
    fatal_error error_{};
    bool has_value_ = true;
};

/// In-capsule data of an admin queue: NVMe/TCP fixes the admin queue's capsule at 8 KiB of data.
inline constexpr std::uint32_t admin_in_capsule_data_size = 8192;
/// Size of the SQE at the start of every command capsule.
inline constexpr std::uint32_t capsule_sqe_size = 64;

/// In-capsule data an I/O queue takes for an IOCCSZ (Identify Controller, in 16-byte units,
/// the 64-byte SQE included; at least 4).
[[nodiscard]] constexpr std::uint32_t in_capsule_data_size(std::uint32_t ioccsz) noexcept
{
    return ioccsz * 16 <= capsule_sqe_size ? 0 : ioccsz * 16 - capsule_sqe_size;
}

/// Whether a MAXH2CDATA value is one a controller may report: a multiple of 4, at least 4096.
[[nodiscard]] constexpr bool is_valid_maxh2cdata(std::uint32_t value) noexcept
{
    return value % 4 == 0 && value >= spec::tcp_min_maxh2cdata;
}

/// What the target side allows on its connections.
struct target_limits {
    /// CPDA: alignment (0's based dwords) the controller asks of the data the host sends. The
    /// Linux host accepts only 0.
    std::uint8_t cpda = 0;
    /// Whether header and data digests may be granted when the host asks for them.
    bool allow_header_digest = true;
    bool allow_data_digest = true;
    /// MAXH2CDATA: the largest H2CData payload (is_valid_maxh2cdata).
    std::uint32_t maxh2cdata = 128 * 1024;
    /// Most R2Ts the controller keeps outstanding for one command, whatever MAXR2T allows (>= 1).
    std::uint32_t max_outstanding_r2t = 1;
    /// In-capsule data of an I/O queue (in_capsule_data_size(IOCCSZ)), a multiple of 16 bytes;
    /// the admin queue takes admin_in_capsule_data_size.
    std::uint32_t io_in_capsule_data = admin_in_capsule_data_size;

    /// Whether the limits are ones a controller may advertise.
    [[nodiscard]] constexpr bool valid() const noexcept
    {
        return cpda <= spec::tcp_max_pdu_data_alignment && is_valid_maxh2cdata(maxh2cdata) &&
               max_outstanding_r2t >= 1 && io_in_capsule_data % 16 == 0;
    }
};

/// The parameters of one connection, from ICReq and the target's limits.
struct connection_params {
    /// HDGST and DDGST in every PDU (but ICReq, ICResp and the termination requests) that has a
    /// header, respectively data.
    bool header_digest = false;
    bool data_digest = false;
    /// HPDA: alignment (0's based dwords) the host asks of C2HData data.
    std::uint8_t hpda = 0;
    /// CPDA: alignment (0's based dwords) of the data the host sends.
    std::uint8_t cpda = 0;
    /// MAXH2CDATA granted in ICResp.
    std::uint32_t maxh2cdata = spec::tcp_min_maxh2cdata;
    /// R2Ts the controller may have outstanding for one command: min(MAXR2T + 1, the target's).
    std::uint32_t max_outstanding_r2t = 1;
    /// Largest in-capsule data a CapsuleCmd may carry: the admin queue's until Connect names an I/O
    /// queue (set_queue then sets the I/O queue's).
    std::uint32_t max_in_capsule_data = admin_in_capsule_data_size;
    /// Connect's CATTR Disable SQ Flow Control: only then may a C2HData carry SUCCESS.
    bool sq_flow_control_disabled = false;

    /// After Connect: the queue's in-capsule data limit and its SQ flow control.
    constexpr void set_queue(bool admin, const target_limits& limits, bool disable_sq_flow_control) noexcept
    {
        max_in_capsule_data = admin ? admin_in_capsule_data_size : limits.io_in_capsule_data;
        sq_flow_control_disabled = disable_sq_flow_control;
    }

    friend constexpr bool operator==(const connection_params&, const connection_params&) noexcept = default;
};

/// Offsets in ICReq of the fields negotiate() checks (FEI values).
namespace icreq_offset {
inline constexpr std::uint32_t pfv = 8;
inline constexpr std::uint32_t hpda = 10;
inline constexpr std::uint32_t dgst = 11;
} // namespace icreq_offset

/// Checks an ICReq (its common header was checked by the PDU stream) and derives the
/// connection's parameters. PFV other than 0: Unsupported Parameter, FEI 8. HPDA above 31:
/// Invalid PDU Header Field, FEI 10. DGST bits other than HDGST_ENABLE and DDGST_ENABLE:
/// Invalid PDU Header Field, FEI 11. A digest is granted when the host asks for it and the
/// target allows it; MAXR2T (0's based) bounds the R2Ts per command, with the target's own limit.
[[nodiscard]] constexpr result<connection_params> negotiate(const spec::icreq_pdu& icreq,
                                                            const target_limits& limits) noexcept
{
    NVMEKIT_ASSERT(limits.valid(), "tcp::negotiate: invalid target limits");
    if (icreq.pfv != spec::tcp_pdu_format_version) {
        return unsupported_parameter(icreq_offset::pfv);
    }
    if (icreq.hpda > spec::tcp_max_pdu_data_alignment) {
        return invalid_header_field(icreq_offset::hpda);
    }
    constexpr std::uint8_t defined_digests =
        spec::digest_options::hdgst_enable.mask | spec::digest_options::ddgst_enable.mask;
    if ((icreq.dgst.raw & ~defined_digests) != 0) {
        return invalid_header_field(icreq_offset::dgst);
    }
    connection_params params{};
    params.header_digest = icreq.dgst.get(spec::digest_options::hdgst_enable) && limits.allow_header_digest;
    params.data_digest = icreq.dgst.get(spec::digest_options::ddgst_enable) && limits.allow_data_digest;
    params.hpda = icreq.hpda;
    params.cpda = limits.cpda;
    params.maxh2cdata = limits.maxh2cdata;
    const std::uint64_t host_r2t = std::uint64_t{icreq.maxr2t} + 1;
    params.max_outstanding_r2t = static_cast<std::uint32_t>(
        host_r2t < limits.max_outstanding_r2t ? host_r2t : limits.max_outstanding_r2t);
    params.max_in_capsule_data = admin_in_capsule_data_size;
    return params;
}

/// The ICResp granting `params`: PFV 0, CPDA, the digests granted, MAXH2CDATA. ICResp never
/// carries digests (FLAGS 0), HLEN and PLEN 128, PDO 0.
[[nodiscard]] constexpr spec::icresp_pdu make_icresp(const connection_params& params) noexcept
{
    NVMEKIT_ASSERT(is_valid_maxh2cdata(params.maxh2cdata), "tcp::make_icresp: invalid MAXH2CDATA");
    spec::icresp_pdu icresp{};
    icresp.ch = {spec::pdu_type::icresp, spec::pdu_flags{}, sizeof(spec::icresp_pdu), 0,
                 sizeof(spec::icresp_pdu)};
    icresp.pfv = spec::tcp_pdu_format_version;
    icresp.cpda = params.cpda;
    icresp.dgst.set(spec::digest_options::hdgst_enable, params.header_digest)
        .set(spec::digest_options::ddgst_enable, params.data_digest);
    icresp.maxh2cdata = params.maxh2cdata;
    return icresp;
}

} // namespace transport::tcp
NVMEKIT_END_NAMESPACE
