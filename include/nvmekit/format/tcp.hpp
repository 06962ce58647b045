#pragma once
/// Formatters for NVMe/TCP PDU headers: every PDU prints its common header
/// (`CapsuleCmd flags=0x0 hlen=72 pdo=0 plen=72`) and then its own fields.

#include <nvmekit/format/common.hpp>
#include <nvmekit/format/fabrics.hpp>
#include <nvmekit/format/status.hpp>
#include <nvmekit/spec/tcp.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace detail {

/// `Invalid PDU Header Field (0x01)`, FES 05h named for the PDU that carries it (C2HTermReq unless
/// told), or `0x07` for a reserved value.
template <typename Out>
Out fatal_error_status_text(Out out, spec::fatal_error_status status,
                            spec::pdu_type carrier = spec::pdu_type::c2h_term_req)
{
    const auto status_name = name(status, carrier);
    if (status_name.empty()) {
        return fmt::format_to(out, "{:#04x}", static_cast<unsigned>(status));
    }
    return fmt::format_to(out, "{} ({:#04x})", status_name, static_cast<unsigned>(status));
}

} // namespace detail
NVMEKIT_END_NAMESPACE

/// Prints the PDU name (`H2CData`), or `0x8` for a reserved type.
template <>
struct fmt::formatter<nvmekit::spec::pdu_type>
    : nvmekit::detail::name_or_hex_formatter<nvmekit::spec::pdu_type> {};

/// `Invalid PDU Header Field (0x01)`; 05h is printed as `Data Transfer Limit Exceeded (0x05)`
/// (the C2HTermReq meaning); a `term_req_pdu` prints it for its own direction.
template <>
struct fmt::formatter<nvmekit::spec::fatal_error_status> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::fatal_error_status value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        return nvmekit::detail::fatal_error_status_text(ctx.out(), value);
    }
};

/// `0x0c [last_pdu success]`: HDGSTF, DDGSTF, LAST_PDU and SUCCESS.
template <>
struct fmt::formatter<nvmekit::spec::pdu_flags> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::pdu_flags value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        using flags = nvmekit::spec::pdu_flags;
        return nvmekit::detail::flag_word(ctx.out(), value.raw,
                                          {{value.get(flags::hdgstf), "hdgstf"},
                                           {value.get(flags::ddgstf), "ddgstf"},
                                           {value.get(flags::last_pdu), "last_pdu"},
                                           {value.get(flags::success), "success"}});
    }
};

/// `0x03 [hdgst ddgst]`: the digests ICReq asks for or ICResp grants.
template <>
struct fmt::formatter<nvmekit::spec::digest_options> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::digest_options value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        using options = nvmekit::spec::digest_options;
        return nvmekit::detail::flag_word(
            ctx.out(), value.raw,
            {{value.get(options::hdgst_enable), "hdgst"}, {value.get(options::ddgst_enable), "ddgst"}});
    }
};

/// `CapsuleCmd flags=0x0 hlen=72 pdo=0 plen=72`.
template <>
struct fmt::formatter<nvmekit::spec::pdu_common_header> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(const nvmekit::spec::pdu_common_header& value, FormatContext& ctx) const
        -> decltype(ctx.out())
    {
        return fmt::format_to(ctx.out(), "{} flags={:#x} hlen={} pdo={} plen={}", value.type, value.flags.raw,
                              value.hlen, value.pdo, value.plen);
    }
};

/// `ICReq flags=0x0 hlen=128 pdo=0 plen=128 pfv=0 hpda=0 hdgst=1 ddgst=0 maxr2t=0`.
template <>
struct fmt::formatter<nvmekit::spec::icreq_pdu> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(const nvmekit::spec::icreq_pdu& value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        using nvmekit::spec::digest_options;
        return fmt::format_to(ctx.out(), "{} pfv={} hpda={} hdgst={:d} ddgst={:d} maxr2t={}", value.ch,
                              value.pfv, value.hpda, value.dgst.get(digest_options::hdgst_enable),
                              value.dgst.get(digest_options::ddgst_enable), value.maxr2t);
    }
};

/// `ICResp flags=0x0 hlen=128 pdo=0 plen=128 pfv=0 cpda=0 hdgst=0 ddgst=0 maxh2cdata=131072`.
template <>
struct fmt::formatter<nvmekit::spec::icresp_pdu> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(const nvmekit::spec::icresp_pdu& value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        using nvmekit::spec::digest_options;
        return fmt::format_to(ctx.out(), "{} pfv={} cpda={} hdgst={:d} ddgst={:d} maxh2cdata={}", value.ch,
                              value.pfv, value.cpda, value.dgst.get(digest_options::hdgst_enable),
                              value.dgst.get(digest_options::ddgst_enable), value.maxh2cdata);
    }
};

/// `H2CTermReq flags=0x0 hlen=24 pdo=0 plen=32 fes=Invalid PDU Header Field (0x01) fei=0x2`.
template <>
struct fmt::formatter<nvmekit::spec::term_req_pdu> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(const nvmekit::spec::term_req_pdu& value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        auto out = fmt::format_to(ctx.out(), "{} fes=", value.ch);
        out = nvmekit::detail::fatal_error_status_text(out, value.fes, value.ch.type);
        return fmt::format_to(out, " fei={:#x}", value.error_information());
    }
};

/// `CapsuleCmd flags=0x0 hlen=72 pdo=72 plen=1096 CONNECT cid=1 qid=0 ...` for a Fabrics
/// command, `CapsuleCmd ... opc=0x2 cid=5 nsid=1` for any other.
template <>
struct fmt::formatter<nvmekit::spec::capsule_cmd_pdu> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(const nvmekit::spec::capsule_cmd_pdu& value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        if (nvmekit::spec::is_fabrics_command(value.sqe)) {
            return fmt::format_to(ctx.out(), "{} {}", value.ch, nvmekit::spec::to_fabrics_command(value.sqe));
        }
        return fmt::format_to(ctx.out(), "{} opc={:#x} cid={} nsid={}", value.ch, value.sqe.opcode(),
                              value.sqe.command_id(), value.sqe.nsid);
    }
};

/// `CapsuleResp flags=0x0 hlen=24 pdo=0 plen=24 cid=5 sqhd=3 status=Generic/Successful Completion (0x00)`.
template <>
struct fmt::formatter<nvmekit::spec::capsule_resp_pdu> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(const nvmekit::spec::capsule_resp_pdu& value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        return fmt::format_to(ctx.out(), "{} cid={} sqhd={} status={}", value.ch, value.cqe.cid,
                              value.cqe.sq_head, value.cqe.status());
    }
};

/// `H2CData flags=0x4 hlen=24 pdo=24 plen=4120 cccid=5 ttag=1 datao=0 datal=4096`.
template <>
struct fmt::formatter<nvmekit::spec::h2c_data_pdu> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(const nvmekit::spec::h2c_data_pdu& value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        return fmt::format_to(ctx.out(), "{} cccid={} ttag={} datao={} datal={}", value.ch, value.cccid,
                              value.ttag, value.datao, value.datal);
    }
};

/// `C2HData flags=0xc hlen=24 pdo=24 plen=4120 cccid=5 datao=0 datal=4096`.
template <>
struct fmt::formatter<nvmekit::spec::c2h_data_pdu> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(const nvmekit::spec::c2h_data_pdu& value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        return fmt::format_to(ctx.out(), "{} cccid={} datao={} datal={}", value.ch, value.cccid, value.datao,
                              value.datal);
    }
};

/// `R2T flags=0x0 hlen=24 pdo=0 plen=24 cccid=5 ttag=1 r2to=0 r2tl=8192`.
template <>
struct fmt::formatter<nvmekit::spec::r2t_pdu> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(const nvmekit::spec::r2t_pdu& value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        return fmt::format_to(ctx.out(), "{} cccid={} ttag={} r2to={} r2tl={}", value.ch, value.cccid,
                              value.ttag, value.r2to, value.r2tl);
    }
};
