#pragma once
/// Formatters for the Identify data structures, in the spirit of nvme-cli's id-ctrl and id-ns:
/// field names in lower case followed by their values, strings quoted and escaped.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>

#include <nvmekit/format/common.hpp>
#include <nvmekit/spec/identify.hpp>

/// `Identify Controller`, or `Reserved (0x1f)` for a reserved value.
template <>
struct fmt::formatter<nvmekit::spec::cns>
    : nvmekit::detail::name_or_reserved_formatter<nvmekit::spec::cns> {};

/// `NVM`, `Key Value`, `Zoned Namespace`, or `Reserved (0x05)`.
template <>
struct fmt::formatter<nvmekit::spec::command_set_identifier>
    : nvmekit::detail::name_or_reserved_formatter<nvmekit::spec::command_set_identifier> {};

/// `io`, `discovery`, `admin`, `not reported`, or `reserved (0x07)`.
template <>
struct fmt::formatter<nvmekit::spec::controller_type> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::controller_type value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        return nvmekit::detail::name_or_reserved(ctx.out(), value, "reserved");
    }
};

/// `EUI64`, `NGUID`, `UUID`, `CSI`, or `Reserved (0x05)`.
template <>
struct fmt::formatter<nvmekit::spec::namespace_id_type>
    : nvmekit::detail::name_or_reserved_formatter<nvmekit::spec::namespace_id_type> {};

/// `ms:8 lbads:12 rp:1`, as nvme-cli prints an LBA format.
template <>
struct fmt::formatter<nvmekit::spec::lba_format> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::lba_format value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        using nvmekit::spec::lba_format;
        return fmt::format_to(ctx.out(), "ms:{} lbads:{} rp:{}", value.get(lba_format::ms),
                              value.get(lba_format::lbads), static_cast<unsigned>(value.get(lba_format::rp)));
    }
};

/// `mp:25.00W operational enlat:16 exlat:4 rrt:0 rrl:0 rwt:0 rwl:0`; MP in 0.0001 W units (MXPS
/// set) prints with four decimals, and a non-operational state says so.
template <>
struct fmt::formatter<nvmekit::spec::power_state_descriptor> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(const nvmekit::spec::power_state_descriptor& value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        using nvmekit::spec::power_state_flags;
        using nvmekit::spec::power_state_relative;
        const bool fine_scale = value.flags.get(power_state_flags::max_power_scale);
        const unsigned divisor = fine_scale ? 10000U : 100U;
        auto out = fmt::format_to(ctx.out(), "mp:{}.{:0{}}W {}", value.mp / divisor, value.mp % divisor,
                                  fine_scale ? 4 : 2,
                                  value.flags.get(power_state_flags::non_operational) ? "non-operational"
                                                                                       : "operational");
        return fmt::format_to(out, " enlat:{} exlat:{} rrt:{} rrl:{} rwt:{} rwl:{}", value.enlat, value.exlat,
                              value.rrt.get(power_state_relative::value), value.rrl.get(power_state_relative::value),
                              value.rwt.get(power_state_relative::value), value.rwl.get(power_state_relative::value));
    }
};

/// Four lines (no trailing newline):
///
///     vid 0x1b36 ssvid 0x1af4 sn "NVMEKIT0001" mn "nvmekit controller" fr "0.1.0"
///     cntlid 1 ver 2.0.0 cntrltype io mdts 5 nn 32 oaes 0x00000100 ctratt 0x00000000
///     oacs 0x0106 oncs 0x015f frmw 0x03 lpa 0x07 vwc 0x07 sqes 0x66 cqes 0x44 sgls 0x00000001
///     subnqn "nqn.2023-01.io.nvmekit:subsystem0"
template <>
struct fmt::formatter<nvmekit::spec::identify_controller> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(const nvmekit::spec::identify_controller& value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        auto out = fmt::format_to(ctx.out(), "vid 0x{:04x} ssvid 0x{:04x} sn {:?} mn {:?} fr {:?}\n", value.vid,
                                  value.ssvid, value.serial_number(), value.model_number(), value.firmware_revision());
        out = fmt::format_to(out, "cntlid {} ver {}.{}.{} cntrltype {} mdts {} nn {} oaes 0x{:08x} ctratt 0x{:08x}\n",
                             value.cntlid, value.ver >> 16, (value.ver >> 8) & 0xffU, value.ver & 0xffU,
                             value.cntrltype, value.mdts, value.nn, value.oaes.raw, value.ctratt.raw);
        out = fmt::format_to(out,
                             "oacs 0x{:04x} oncs 0x{:04x} frmw 0x{:02x} lpa 0x{:02x} vwc 0x{:02x} sqes 0x{:02x} "
                             "cqes 0x{:02x} sgls 0x{:08x}\n",
                             value.oacs.raw, value.oncs.raw, value.frmw.raw, value.lpa.raw, value.vwc.raw,
                             value.sqes.raw, value.cqes.raw, value.sgls.raw);
        return fmt::format_to(out, "subnqn {:?}", value.subsystem_nqn());
    }
};

/// Two lines, then one line per LBA format up to NLBAF (no trailing newline):
///
///     nsze 0x200000 ncap 0x200000 nuse 0x1000 nsfeat 0x00 nlbaf 1 flbas 0x01 mc 0x00 dpc 0x00 dps 0x00 nmic 0x00
///     nguid 000102030405060708090a0b0c0d0e0f eui64 0011223344556677
///     lbaf0 ms:0 lbads:9 rp:0
///     lbaf1 ms:0 lbads:12 rp:0 (in use)
template <>
struct fmt::formatter<nvmekit::spec::identify_namespace> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(const nvmekit::spec::identify_namespace& value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        auto out = fmt::format_to(ctx.out(),
                                  "nsze 0x{:x} ncap 0x{:x} nuse 0x{:x} nsfeat 0x{:02x} nlbaf {} flbas 0x{:02x} "
                                  "mc 0x{:02x} dpc 0x{:02x} dps 0x{:02x} nmic 0x{:02x}\nnguid ",
                                  value.nsze, value.ncap, value.nuse, value.nsfeat.raw, value.nlbaf, value.flbas.raw,
                                  value.mc.raw, value.dpc.raw, value.dps.raw, value.nmic.raw);
        out = format_hex_bytes(out, value.nguid);
        out = fmt::format_to(out, " eui64 ");
        out = format_hex_bytes(out, value.eui64);
        const std::size_t in_use = value.flbas.format_index();
        const std::size_t last = std::min<std::size_t>(value.nlbaf, value.lbaf.size() - 1);
        for (std::size_t index = 0; index <= last; ++index) {
            out = fmt::format_to(out, "\nlbaf{} {}{}", index, value.lbaf[index], index == in_use ? " (in use)" : "");
        }
        return out;
    }

private:
    /// Writes `bytes` as contiguous lower-case hex, as nvme-cli prints NGUID and EUI64.
    template <typename OutputIt, std::size_t N>
    static OutputIt format_hex_bytes(OutputIt out, const std::array<std::uint8_t, N>& bytes)
    {
        for (const std::uint8_t byte : bytes) {
            out = fmt::format_to(out, "{:02x}", byte);
        }
        return out;
    }
};

/// `vsl 0 wzsl 0 wusl 0 dmrl 0 dmrsl 0 dmsl 0`, as nvme-cli's nvm-id-ctrl.
template <>
struct fmt::formatter<nvmekit::spec::nvm_identify_controller> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(const nvmekit::spec::nvm_identify_controller& value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        return fmt::format_to(ctx.out(), "vsl {} wzsl {} wusl {} dmrl {} dmrsl {} dmsl {}", value.vsl, value.wzsl,
                              value.wusl, value.dmrl, value.dmrsl, value.dmsl);
    }
};
