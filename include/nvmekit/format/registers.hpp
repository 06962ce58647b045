#pragma once
/// Formatters for the controller registers, one line each in the spirit of nvme-cli's show-regs:
/// `CC en=1 css=nvm mps=0 ams=rr shn=none iosqes=6 iocqes=4 crime=0`.
///
/// Style, the same for every register: the spec mnemonic, then every defined field in bit order
/// as `name=value`, named by its lower-case spec mnemonic. Values are the raw field encodings:
/// 0-based sizes (MQES, ASQS, ACQS) and exponents (MPS, IOSQES) are printed as stored, not
/// converted. Single bits print 0/1, counts print in decimal, bit masks and addresses print in hex
/// (`0x41`), and enumerated fields print their name (`shn=normal`), or the raw value in hex when
/// it is reserved (`shn=0x3`). Addresses print with bits 11:00 cleared, as the spec defines them.

#include <nvmekit/format/common.hpp>
#include <nvmekit/spec/registers.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace detail::register_format {

/// Registers that are one 32-bit value with no inner fields print as `NAME 0x0000abcd`.
template <typename Register>
struct whole_register_formatter : plain_formatter {
    template <typename FormatContext>
    auto format(Register value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        return fmt::format_to(ctx.out(), "{} {:#010x}", spec::name(Register::offset), value.raw);
    }
};

/// Address registers print as `NAME 0x...` with the address bits only.
template <typename Register>
struct address_register_formatter : plain_formatter {
    template <typename FormatContext>
    auto format(Register value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        return fmt::format_to(ctx.out(), "{} {:#x}", spec::name(Register::offset), value.base_address());
    }
};

} // namespace detail::register_format
NVMEKIT_END_NAMESPACE

template <>
struct fmt::formatter<nvmekit::spec::controller_power_scope>
    : nvmekit::detail::name_or_hex_formatter<nvmekit::spec::controller_power_scope> {};
template <>
struct fmt::formatter<nvmekit::spec::io_command_set_selected>
    : nvmekit::detail::name_or_hex_formatter<nvmekit::spec::io_command_set_selected> {};
template <>
struct fmt::formatter<nvmekit::spec::arbitration_mechanism>
    : nvmekit::detail::name_or_hex_formatter<nvmekit::spec::arbitration_mechanism> {};
template <>
struct fmt::formatter<nvmekit::spec::shutdown_notification>
    : nvmekit::detail::name_or_hex_formatter<nvmekit::spec::shutdown_notification> {};
template <>
struct fmt::formatter<nvmekit::spec::shutdown_status>
    : nvmekit::detail::name_or_hex_formatter<nvmekit::spec::shutdown_status> {};
template <>
struct fmt::formatter<nvmekit::spec::cmb_size_units>
    : nvmekit::detail::name_or_hex_formatter<nvmekit::spec::cmb_size_units> {};
template <>
struct fmt::formatter<nvmekit::spec::boot_read_status>
    : nvmekit::detail::name_or_hex_formatter<nvmekit::spec::boot_read_status> {};
template <>
struct fmt::formatter<nvmekit::spec::pmr_time_units>
    : nvmekit::detail::name_or_hex_formatter<nvmekit::spec::pmr_time_units> {};
template <>
struct fmt::formatter<nvmekit::spec::pmr_health_status>
    : nvmekit::detail::name_or_hex_formatter<nvmekit::spec::pmr_health_status> {};

/// The register's mnemonic: `CC`, `PMRMSCU`.
template <>
struct fmt::formatter<nvmekit::spec::register_offset> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::register_offset value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        return fmt::format_to(ctx.out(), "{}", name(value));
    }
};

/// `SQ 3 tail` or `CQ 3 head`.
template <>
struct fmt::formatter<nvmekit::spec::doorbell_location> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::doorbell_location value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        return value.is_completion_queue ? fmt::format_to(ctx.out(), "CQ {} head", value.qid)
                                         : fmt::format_to(ctx.out(), "SQ {} tail", value.qid);
    }
};

/// `CAP mqes=2047 cqr=1 ams=0x0 to=30 dstrd=0 nssrs=1 css=0x41 bps=0 cps=not_reported mpsmin=0
/// mpsmax=4 pmrs=0 cmbs=0 nsss=0 crms=0x0` (one line; MQES is 0-based).
template <>
struct fmt::formatter<nvmekit::spec::cap_register> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::cap_register value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        using reg = nvmekit::spec::cap_register;
        return fmt::format_to(
            ctx.out(),
            "CAP mqes={} cqr={:d} ams={:#x} to={} dstrd={} nssrs={:d} css={:#x} bps={:d} cps={} "
            "mpsmin={} mpsmax={} pmrs={:d} cmbs={:d} nsss={:d} crms={:#x}",
            value.get(reg::mqes), value.get(reg::cqr), value.get(reg::ams), value.get(reg::to),
            value.get(reg::dstrd), value.get(reg::nssrs), value.get(reg::css), value.get(reg::bps),
            value.get(reg::cps), value.get(reg::mpsmin), value.get(reg::mpsmax), value.get(reg::pmrs),
            value.get(reg::cmbs), value.get(reg::nsss), value.get(reg::crms));
    }
};

/// The version as `major.minor.tertiary`: `2.0.0`.
template <>
struct fmt::formatter<nvmekit::spec::vs_register> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::vs_register value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        using reg = nvmekit::spec::vs_register;
        return fmt::format_to(ctx.out(), "{}.{}.{}", value.get(reg::mjr), value.get(reg::mnr),
                              value.get(reg::ter));
    }
};

/// `INTMS 0x00000001`.
template <>
struct fmt::formatter<nvmekit::spec::intms_register>
    : nvmekit::detail::register_format::whole_register_formatter<nvmekit::spec::intms_register> {};
/// `INTMC 0x00000001`.
template <>
struct fmt::formatter<nvmekit::spec::intmc_register>
    : nvmekit::detail::register_format::whole_register_formatter<nvmekit::spec::intmc_register> {};
/// `NSSR 0x4e564d65`.
template <>
struct fmt::formatter<nvmekit::spec::nssr_register>
    : nvmekit::detail::register_format::whole_register_formatter<nvmekit::spec::nssr_register> {};
/// `NSSD 0x4e726d6c`.
template <>
struct fmt::formatter<nvmekit::spec::nssd_register>
    : nvmekit::detail::register_format::whole_register_formatter<nvmekit::spec::nssd_register> {};

/// `CC en=1 css=nvm mps=0 ams=rr shn=none iosqes=6 iocqes=4 crime=0` (MPS, IOSQES and IOCQES
/// are the exponents as stored).
template <>
struct fmt::formatter<nvmekit::spec::cc_register> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::cc_register value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        using reg = nvmekit::spec::cc_register;
        return fmt::format_to(
            ctx.out(), "CC en={:d} css={} mps={} ams={} shn={} iosqes={} iocqes={} crime={:d}",
            value.get(reg::en), value.get(reg::css), value.get(reg::mps), value.get(reg::ams),
            value.get(reg::shn), value.get(reg::iosqes), value.get(reg::iocqes), value.get(reg::crime));
    }
};

/// `CSTS rdy=1 cfs=0 shst=normal nssro=0 pp=0 st=0`.
template <>
struct fmt::formatter<nvmekit::spec::csts_register> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::csts_register value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        using reg = nvmekit::spec::csts_register;
        return fmt::format_to(ctx.out(), "CSTS rdy={:d} cfs={:d} shst={} nssro={:d} pp={:d} st={:d}",
                              value.get(reg::rdy), value.get(reg::cfs), value.get(reg::shst),
                              value.get(reg::nssro), value.get(reg::pp), value.get(reg::st));
    }
};

/// `AQA asqs=31 acqs=31`: the 0-based sizes as stored (31 means 32 entries).
template <>
struct fmt::formatter<nvmekit::spec::aqa_register> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::aqa_register value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        using reg = nvmekit::spec::aqa_register;
        return fmt::format_to(ctx.out(), "AQA asqs={} acqs={}", value.get(reg::asqs), value.get(reg::acqs));
    }
};

/// `ASQ 0x12345000`.
template <>
struct fmt::formatter<nvmekit::spec::asq_register>
    : nvmekit::detail::register_format::address_register_formatter<nvmekit::spec::asq_register> {};
/// `ACQ 0x12346000`.
template <>
struct fmt::formatter<nvmekit::spec::acq_register>
    : nvmekit::detail::register_format::address_register_formatter<nvmekit::spec::acq_register> {};
/// `BPMBL 0x80000000`.
template <>
struct fmt::formatter<nvmekit::spec::bpmbl_register>
    : nvmekit::detail::register_format::address_register_formatter<nvmekit::spec::bpmbl_register> {};

/// `CMBLOC bir=2 cqmms=0 cqpds=0 cdpmls=0 cdpcils=0 cdmmms=0 cqda=0 ofst=0x0` (OFST in SZU units).
template <>
struct fmt::formatter<nvmekit::spec::cmbloc_register> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::cmbloc_register value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        using reg = nvmekit::spec::cmbloc_register;
        return fmt::format_to(
            ctx.out(),
            "CMBLOC bir={} cqmms={:d} cqpds={:d} cdpmls={:d} cdpcils={:d} cdmmms={:d} cqda={:d} "
            "ofst={:#x}",
            value.get(reg::bir), value.get(reg::cqmms), value.get(reg::cqpds), value.get(reg::cdpmls),
            value.get(reg::cdpcils), value.get(reg::cdmmms), value.get(reg::cqda), value.get(reg::ofst));
    }
};

/// `CMBSZ sqs=1 cqs=1 lists=0 rds=1 wds=1 szu=1MiB sz=16` (SZ in SZU units).
template <>
struct fmt::formatter<nvmekit::spec::cmbsz_register> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::cmbsz_register value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        using reg = nvmekit::spec::cmbsz_register;
        return fmt::format_to(ctx.out(), "CMBSZ sqs={:d} cqs={:d} lists={:d} rds={:d} wds={:d} szu={} sz={}",
                              value.get(reg::sqs), value.get(reg::cqs), value.get(reg::lists),
                              value.get(reg::rds), value.get(reg::wds), value.get(reg::szu),
                              value.get(reg::sz));
    }
};

/// `BPINFO bpsz=2 brs=completed abpid=1` (BPSZ in 128 KiB units).
template <>
struct fmt::formatter<nvmekit::spec::bpinfo_register> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::bpinfo_register value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        using reg = nvmekit::spec::bpinfo_register;
        return fmt::format_to(ctx.out(), "BPINFO bpsz={} brs={} abpid={:d}", value.get(reg::bpsz),
                              value.get(reg::brs), value.get(reg::abpid));
    }
};

/// `BPRSEL bprsz=4 bprof=1 bpid=0` (both in 4 KiB units).
template <>
struct fmt::formatter<nvmekit::spec::bprsel_register> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::bprsel_register value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        using reg = nvmekit::spec::bprsel_register;
        return fmt::format_to(ctx.out(), "BPRSEL bprsz={} bprof={} bpid={:d}", value.get(reg::bprsz),
                              value.get(reg::bprof), value.get(reg::bpid));
    }
};

/// `CMBMSC cre=1 cmse=1 cba=0xc0000000`.
template <>
struct fmt::formatter<nvmekit::spec::cmbmsc_register> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::cmbmsc_register value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        using reg = nvmekit::spec::cmbmsc_register;
        return fmt::format_to(ctx.out(), "CMBMSC cre={:d} cmse={:d} cba={:#x}", value.get(reg::cre),
                              value.get(reg::cmse), value.base_address());
    }
};

/// `CMBSTS cbai=0`.
template <>
struct fmt::formatter<nvmekit::spec::cmbsts_register> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::cmbsts_register value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        return fmt::format_to(ctx.out(), "CMBSTS cbai={:d}", value.get(nvmekit::spec::cmbsts_register::cbai));
    }
};

/// `CMBEBS cmbszu=1 rbb=0 cmbwbz=64` (CMBWBZ in CMBSZU units).
template <>
struct fmt::formatter<nvmekit::spec::cmbebs_register> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::cmbebs_register value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        using reg = nvmekit::spec::cmbebs_register;
        return fmt::format_to(ctx.out(), "CMBEBS cmbszu={} rbb={:d} cmbwbz={}", value.get(reg::cmbszu),
                              value.get(reg::rbb), value.get(reg::cmbwbz));
    }
};

/// `CMBSWTP cmbswtu=2 cmbswtv=100`.
template <>
struct fmt::formatter<nvmekit::spec::cmbswtp_register> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::cmbswtp_register value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        using reg = nvmekit::spec::cmbswtp_register;
        return fmt::format_to(ctx.out(), "CMBSWTP cmbswtu={} cmbswtv={}", value.get(reg::cmbswtu),
                              value.get(reg::cmbswtv));
    }
};

/// `CRTO crwmt=60 crimt=20` (500 ms units).
template <>
struct fmt::formatter<nvmekit::spec::crto_register> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::crto_register value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        using reg = nvmekit::spec::crto_register;
        return fmt::format_to(ctx.out(), "CRTO crwmt={} crimt={}", value.get(reg::crwmt),
                              value.get(reg::crimt));
    }
};

/// `PMRCAP rds=1 wds=1 bir=4 pmrtu=500ms pmrwbm=0x2 pmrto=10 cmss=1`.
template <>
struct fmt::formatter<nvmekit::spec::pmrcap_register> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::pmrcap_register value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        using reg = nvmekit::spec::pmrcap_register;
        return fmt::format_to(
            ctx.out(), "PMRCAP rds={:d} wds={:d} bir={} pmrtu={} pmrwbm={:#x} pmrto={} cmss={:d}",
            value.get(reg::rds), value.get(reg::wds), value.get(reg::bir), value.get(reg::pmrtu),
            value.get(reg::pmrwbm), value.get(reg::pmrto), value.get(reg::cmss));
    }
};

/// `PMRCTL en=1`.
template <>
struct fmt::formatter<nvmekit::spec::pmrctl_register> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::pmrctl_register value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        return fmt::format_to(ctx.out(), "PMRCTL en={:d}", value.get(nvmekit::spec::pmrctl_register::en));
    }
};

/// `PMRSTS err=0x0 nrdy=0 hsts=normal cbai=0` (ERR is vendor specific, so hex).
template <>
struct fmt::formatter<nvmekit::spec::pmrsts_register> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::pmrsts_register value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        using reg = nvmekit::spec::pmrsts_register;
        return fmt::format_to(ctx.out(), "PMRSTS err={:#x} nrdy={:d} hsts={} cbai={:d}", value.get(reg::err),
                              value.get(reg::nrdy), value.get(reg::hsts), value.get(reg::cbai));
    }
};

/// `PMREBS pmrszu=2 rbb=1 pmrwbz=8` (PMRWBZ in PMRSZU units).
template <>
struct fmt::formatter<nvmekit::spec::pmrebs_register> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::pmrebs_register value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        using reg = nvmekit::spec::pmrebs_register;
        return fmt::format_to(ctx.out(), "PMREBS pmrszu={} rbb={:d} pmrwbz={}", value.get(reg::pmrszu),
                              value.get(reg::rbb), value.get(reg::pmrwbz));
    }
};

/// `PMRSWTP pmrswtu=2 pmrswtv=500`.
template <>
struct fmt::formatter<nvmekit::spec::pmrswtp_register> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::pmrswtp_register value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        using reg = nvmekit::spec::pmrswtp_register;
        return fmt::format_to(ctx.out(), "PMRSWTP pmrswtu={} pmrswtv={}", value.get(reg::pmrswtu),
                              value.get(reg::pmrswtv));
    }
};

/// `PMRMSCL cmse=1 cba=0xd0000000` (address bits 31:12).
template <>
struct fmt::formatter<nvmekit::spec::pmrmscl_register> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::pmrmscl_register value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        return fmt::format_to(ctx.out(), "PMRMSCL cmse={:d} cba={:#x}",
                              value.get(nvmekit::spec::pmrmscl_register::cmse), value.raw & 0xfffff000U);
    }
};

/// `PMRMSCU cba=0x1` (address bits 63:32).
template <>
struct fmt::formatter<nvmekit::spec::pmrmscu_register> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::pmrmscu_register value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        return fmt::format_to(ctx.out(), "PMRMSCU cba={:#x}", value.raw);
    }
};

/// `CC@0x14/4`: mnemonic, offset in BAR0 and width in bytes.
template <>
struct fmt::formatter<nvmekit::spec::register_description> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(const nvmekit::spec::register_description& value, FormatContext& ctx) const
        -> decltype(ctx.out())
    {
        return fmt::format_to(ctx.out(), "{}@{:#x}/{}", value.name, value.first_byte(), value.width);
    }
};

/// One register a line (no final newline), in the spirit of `nvme show-regs`: CAP, VS, INTMS, CC,
/// CSTS, AQA, ASQ, ACQ and CRTO always, then the Boot Partition registers when CAP.BPS is set,
/// the Controller Memory Buffer registers when CAP.CMBS is set or CMBSZ is not zero, and the
/// Persistent Memory Region registers when CAP.PMRS is set:
///
///     CAP mqes=2047 cqr=1 ams=0x0 to=30 dstrd=0 nssrs=0 css=0x1 bps=0 cps=not_reported mpsmin=0 ...
///     VS 2.0.0
///     INTMS 0x00000000
///     CC en=1 css=nvm mps=0 ams=rr shn=none iosqes=6 iocqes=4 crime=0
///     CSTS rdy=1 cfs=0 shst=normal nssro=0 pp=0 st=0
///     AQA asqs=31 acqs=31
///     ASQ 0x10000
///     ACQ 0x20000
///     CRTO crwmt=0 crimt=0
template <>
struct fmt::formatter<nvmekit::spec::controller_register_block> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(const nvmekit::spec::controller_register_block& value, FormatContext& ctx) const
        -> decltype(ctx.out())
    {
        using cap = nvmekit::spec::cap_register;
        auto out =
            fmt::format_to(ctx.out(), "{}\nVS {}\n{}\n{}\n{}\n{}\n{}\n{}\n{}", value.cap, value.vs,
                           value.intms, value.cc, value.csts, value.aqa, value.asq, value.acq, value.crto);
        if (value.cap.get(cap::bps)) {
            out = fmt::format_to(out, "\n{}\n{}\n{}", value.bpinfo, value.bprsel, value.bpmbl);
        }
        if (value.cap.get(cap::cmbs) || value.cmbsz.raw != 0) {
            out = fmt::format_to(out, "\n{}\n{}\n{}\n{}\n{}\n{}", value.cmbloc, value.cmbsz, value.cmbmsc,
                                 value.cmbsts, value.cmbebs, value.cmbswtp);
        }
        if (value.cap.get(cap::pmrs)) {
            out = fmt::format_to(out, "\n{}\n{}\n{}\n{}\n{}\n{}\n{}", value.pmrcap, value.pmrctl,
                                 value.pmrsts, value.pmrebs, value.pmrswtp, value.pmrmscl, value.pmrmscu);
        }
        return out;
    }
};
