#pragma once
/// Formatters for Fabrics commands, Connect data and responses, and the Discovery log page:
/// `CONNECT cid=1 qid=0 sqsize=31 kato=120000 recfmt=0`.

#include <cstddef>

#include <nvmekit/format/common.hpp>
#include <nvmekit/spec/fabrics.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace detail {

template <typename OutputIt>
auto format_property_size(OutputIt out, spec::property_size size) -> OutputIt
{
    const unsigned bytes = spec::property_size_bytes(size);
    if (bytes == 0) {
        return fmt::format_to(out, "size=reserved({:#x})", static_cast<unsigned>(size));
    }
    return fmt::format_to(out, "size={}", bytes);
}

} // namespace detail
NVMEKIT_END_NAMESPACE

/// `CONNECT cid=1 qid=0 sqsize=31 kato=120000 recfmt=0`, then ` cattr=0x4` when CATTR is set.
template <>
struct fmt::formatter<nvmekit::spec::connect_command> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(const nvmekit::spec::connect_command& value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        auto out = fmt::format_to(ctx.out(), "CONNECT cid={} qid={} sqsize={} kato={} recfmt={}",
                                  value.command_id(), value.qid, value.sqsize, value.kato, value.recfmt);
        if (value.cattr.raw != 0) {
            out = fmt::format_to(out, " cattr={:#x}", value.cattr.raw);
        }
        return out;
    }
};

/// `PROPERTY_GET cid=2 ofst=0x0 size=8`.
template <>
struct fmt::formatter<nvmekit::spec::property_get_command> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(const nvmekit::spec::property_get_command& value, FormatContext& ctx) const
        -> decltype(ctx.out())
    {
        auto out =
            fmt::format_to(ctx.out(), "PROPERTY_GET cid={} ofst={:#x} ", value.command_id(), value.ofst);
        return nvmekit::detail::format_property_size(out, value.size());
    }
};

/// `PROPERTY_SET cid=3 ofst=0x14 size=4 value=0x460001`.
template <>
struct fmt::formatter<nvmekit::spec::property_set_command> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(const nvmekit::spec::property_set_command& value, FormatContext& ctx) const
        -> decltype(ctx.out())
    {
        auto out =
            fmt::format_to(ctx.out(), "PROPERTY_SET cid={} ofst={:#x} ", value.command_id(), value.ofst);
        out = nvmekit::detail::format_property_size(out, value.size());
        return fmt::format_to(out, " value={:#x}", value.value);
    }
};

/// `DISCONNECT cid=4 recfmt=0`.
template <>
struct fmt::formatter<nvmekit::spec::disconnect_command> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(const nvmekit::spec::disconnect_command& value, FormatContext& ctx) const
        -> decltype(ctx.out())
    {
        return fmt::format_to(ctx.out(), "DISCONNECT cid={} recfmt={}", value.command_id(), value.recfmt);
    }
};

/// `AUTH_SEND cid=5 secp=0xe9 spsp0=0x1 spsp1=0x1 tl=64`.
template <>
struct fmt::formatter<nvmekit::spec::authentication_send_command> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(const nvmekit::spec::authentication_send_command& value, FormatContext& ctx) const
        -> decltype(ctx.out())
    {
        return fmt::format_to(ctx.out(), "AUTH_SEND cid={} secp={:#x} spsp0={:#x} spsp1={:#x} tl={}",
                              value.command_id(), value.secp, value.spsp0, value.spsp1, value.tl);
    }
};

/// `AUTH_RECEIVE cid=6 secp=0xe9 spsp0=0x1 spsp1=0x1 al=64`.
template <>
struct fmt::formatter<nvmekit::spec::authentication_receive_command> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(const nvmekit::spec::authentication_receive_command& value, FormatContext& ctx) const
        -> decltype(ctx.out())
    {
        return fmt::format_to(ctx.out(), "AUTH_RECEIVE cid={} secp={:#x} spsp0={:#x} spsp1={:#x} al={}",
                              value.command_id(), value.secp, value.spsp0, value.spsp1, value.al);
    }
};

/// Prints the command its FCTYPE names, as its own formatter does, or
/// `FABRICS cid=7 fctype=0x7e` for a reserved FCTYPE.
template <>
struct fmt::formatter<nvmekit::spec::fabrics_command> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(const nvmekit::spec::fabrics_command& value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        namespace spec = nvmekit::spec;
        switch (value.fctype) {
        case spec::fabrics_command_type::connect:
            return fmt::format_to(ctx.out(), "{}", spec::fabrics_command_cast<spec::connect_command>(value));
        case spec::fabrics_command_type::property_get:
            return fmt::format_to(ctx.out(), "{}",
                                  spec::fabrics_command_cast<spec::property_get_command>(value));
        case spec::fabrics_command_type::property_set:
            return fmt::format_to(ctx.out(), "{}",
                                  spec::fabrics_command_cast<spec::property_set_command>(value));
        case spec::fabrics_command_type::disconnect:
            return fmt::format_to(ctx.out(), "{}",
                                  spec::fabrics_command_cast<spec::disconnect_command>(value));
        case spec::fabrics_command_type::authentication_send:
            return fmt::format_to(ctx.out(), "{}",
                                  spec::fabrics_command_cast<spec::authentication_send_command>(value));
        case spec::fabrics_command_type::authentication_receive:
            return fmt::format_to(ctx.out(), "{}",
                                  spec::fabrics_command_cast<spec::authentication_receive_command>(value));
        }
        return fmt::format_to(ctx.out(), "FABRICS cid={} fctype={:#x}", value.command_id(),
                              static_cast<unsigned>(value.fctype));
    }
};

/// `hostid=00112233-4455-6677-8899-aabbccddeeff cntlid=0xffff subnqn="..." hostnqn="..."`.
template <>
struct fmt::formatter<nvmekit::spec::connect_data> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(const nvmekit::spec::connect_data& value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        auto out = nvmekit::detail::uuid_bytes(fmt::format_to(ctx.out(), "hostid="), value.hostid);
        return fmt::format_to(out, " cntlid={:#x} subnqn=\"{}\" hostnqn=\"{}\"", value.cntlid,
                              value.subsystem_nqn(), value.host_nqn());
    }
};

/// `cntlid=0x1`, then ` ATR` and ` ASCR` when set.
template <>
struct fmt::formatter<nvmekit::spec::connect_response_dword0> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::connect_response_dword0 value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        using nvmekit::spec::connect_response_dword0;
        auto out = fmt::format_to(ctx.out(), "cntlid={:#x}", value.get(connect_response_dword0::cntlid));
        if (value.get(connect_response_dword0::authentication_required)) {
            out = fmt::format_to(out, " ATR");
        }
        if (value.get(connect_response_dword0::secure_channel_required)) {
            out = fmt::format_to(out, " ASCR");
        }
        return out;
    }
};

template <>
struct fmt::formatter<nvmekit::spec::transport_type>
    : nvmekit::detail::name_or_hex_formatter<nvmekit::spec::transport_type> {};

template <>
struct fmt::formatter<nvmekit::spec::address_family>
    : nvmekit::detail::name_or_hex_formatter<nvmekit::spec::address_family> {};

template <>
struct fmt::formatter<nvmekit::spec::discovery_subsystem_type>
    : nvmekit::detail::name_or_hex_formatter<nvmekit::spec::discovery_subsystem_type> {};

/// `priority=0 disable_sqfc=1`: the priority class of an I/O queue (bits 01:00), then whether
/// SQ flow control is disabled (bit 02).
template <>
struct fmt::formatter<nvmekit::spec::connect_attributes> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::connect_attributes value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        using nvmekit::spec::connect_attributes;
        return fmt::format_to(ctx.out(), "priority={} disable_sqfc={:d}",
                              value.get(connect_attributes::priority_class),
                              value.get(connect_attributes::disable_sq_flow_control));
    }
};

/// `ipo=0x2a iattr=0x00 (command)` or `ipo=0x100 iattr=0x01 (connect data)`: the byte offset of
/// the invalid field and whether it is in the Connect command or its data.
template <>
struct fmt::formatter<nvmekit::spec::connect_invalid_parameter_dword0> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::connect_invalid_parameter_dword0 value, FormatContext& ctx) const
        -> decltype(ctx.out())
    {
        using nvmekit::spec::connect_invalid_parameter_dword0;
        return fmt::format_to(
            ctx.out(), "ipo={:#x} iattr=0x{:02x} ({})", value.get(connect_invalid_parameter_dword0::ipo),
            value.get(connect_invalid_parameter_dword0::iattr),
            value.get(connect_invalid_parameter_dword0::in_connect_data) ? "connect data" : "command");
    }
};

/// `4 bytes`, `8 bytes`, or `0x2` (reserved).
template <>
struct fmt::formatter<nvmekit::spec::property_size> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::property_size value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        const unsigned bytes = nvmekit::spec::property_size_bytes(value);
        if (bytes == 0) {
            return fmt::format_to(ctx.out(), "{:#x}", static_cast<unsigned>(value));
        }
        return fmt::format_to(ctx.out(), "{} bytes", bytes);
    }
};

/// `size=8`, or `size=reserved(0x2)`, as the Property Get and Set commands print it.
template <>
struct fmt::formatter<nvmekit::spec::property_attributes> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::property_attributes value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        return nvmekit::detail::format_property_size(ctx.out(),
                                                     value.get(nvmekit::spec::property_attributes::size));
    }
};

/// `not specified`, `required`, `not required`, or `0x3` (reserved).
template <>
struct fmt::formatter<nvmekit::spec::secure_channel_requirement>
    : nvmekit::detail::name_or_hex_formatter<nvmekit::spec::secure_channel_requirement> {};

/// `secure_channel=required disable_sqfc=1`: bit 02 says the port supports disabling SQ flow
/// control.
template <>
struct fmt::formatter<nvmekit::spec::transport_requirements> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::transport_requirements value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        using nvmekit::spec::transport_requirements;
        return fmt::format_to(ctx.out(), "secure_channel={} disable_sqfc={:d}",
                              value.get(transport_requirements::secure_channel),
                              value.get(transport_requirements::disable_sq_flow_control));
    }
};

/// `0x0003 [dupretinfo epcsd]`.
template <>
struct fmt::formatter<nvmekit::spec::discovery_entry_flags> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::discovery_entry_flags value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        using flags = nvmekit::spec::discovery_entry_flags;
        return nvmekit::detail::flag_word(ctx.out(), value.raw,
                                          {{value.get(flags::duplicate_returned_information), "dupretinfo"},
                                           {value.get(flags::explicit_persistent_connection), "epcsd"}});
    }
};

/// `genctr=3 numrec=2 recfmt=0`.
template <>
struct fmt::formatter<nvmekit::spec::discovery_log_header> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(const nvmekit::spec::discovery_log_header& value, FormatContext& ctx) const
        -> decltype(ctx.out())
    {
        return fmt::format_to(ctx.out(), "genctr={} numrec={} recfmt={}", value.genctr, value.numrec,
                              value.recfmt);
    }
};

/// `trtype=tcp adrfam=ipv4 subtype=nvme portid=1 cntlid=0xffff traddr=192.168.0.10
/// trsvcid=4420 subnqn="nqn.2014-08.org.example:disk"` (one line).
template <>
struct fmt::formatter<nvmekit::spec::discovery_log_entry> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(const nvmekit::spec::discovery_log_entry& value, FormatContext& ctx) const
        -> decltype(ctx.out())
    {
        return fmt::format_to(
            ctx.out(),
            "trtype={} adrfam={} subtype={} portid={} cntlid={:#x} traddr={} trsvcid={} subnqn=\"{}\"",
            value.trtype, value.adrfam, value.subtype, value.portid, value.cntlid, value.address(),
            value.service_id(), value.subsystem_nqn());
    }
};
