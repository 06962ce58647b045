#pragma once
/// Formatters for the Identify data structures, in the spirit of nvme-cli's id-ctrl and id-ns:
/// field names in lower case followed by their values, strings quoted and escaped.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include <nvmekit/format/common.hpp>
#include <nvmekit/spec/identify.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace detail::identify_format {

constexpr std::string_view label(spec::power_scale value) noexcept
{
    switch (value) {
    case spec::power_scale::not_reported: return "not_reported";
    case spec::power_scale::hundred_microwatts: return "0.0001W";
    case spec::power_scale::ten_milliwatts: return "0.01W";
    }
    return {};
}

constexpr std::string_view label(spec::flush_broadcast value) noexcept
{
    switch (value) {
    case spec::flush_broadcast::not_indicated: return "not_indicated";
    case spec::flush_broadcast::not_supported: return "not_supported";
    case spec::flush_broadcast::supported: return "supported";
    }
    return {};
}

constexpr std::string_view label(spec::sgl_data_block_support value) noexcept
{
    switch (value) {
    case spec::sgl_data_block_support::not_supported: return "not_supported";
    case spec::sgl_data_block_support::supported: return "supported";
    case spec::sgl_data_block_support::supported_dword_aligned: return "dword_aligned";
    }
    return {};
}

constexpr std::string_view label(spec::lba_relative_performance value) noexcept
{
    switch (value) {
    case spec::lba_relative_performance::best: return "best";
    case spec::lba_relative_performance::better: return "better";
    case spec::lba_relative_performance::good: return "good";
    case spec::lba_relative_performance::degraded: return "degraded";
    }
    return {};
}

constexpr std::string_view label(spec::protection_information_type value) noexcept
{
    switch (value) {
    case spec::protection_information_type::none: return "none";
    case spec::protection_information_type::type1: return "type1";
    case spec::protection_information_type::type2: return "type2";
    case spec::protection_information_type::type3: return "type3";
    }
    return {};
}

constexpr std::string_view label(spec::deallocated_read_value value) noexcept
{
    switch (value) {
    case spec::deallocated_read_value::not_reported: return "not_reported";
    case spec::deallocated_read_value::zeroes: return "zeroes";
    case spec::deallocated_read_value::ones: return "ones";
    }
    return {};
}

constexpr std::string_view label(spec::protection_information_format value) noexcept
{
    switch (value) {
    case spec::protection_information_format::guard_16b: return "16b_guard";
    case spec::protection_information_format::guard_32b: return "32b_guard";
    case spec::protection_information_format::guard_64b: return "64b_guard";
    }
    return {};
}

/// Lower-case command set names, as the I/O Command Set vectors print them.
constexpr std::string_view label(spec::command_set_identifier value) noexcept
{
    switch (value) {
    case spec::command_set_identifier::nvm: return "nvm";
    case spec::command_set_identifier::key_value: return "key_value";
    case spec::command_set_identifier::zoned: return "zoned";
    }
    return {};
}

/// Writes `[nvm zoned]` for an I/O Command Set Vector, or the raw vector in hex when none of the
/// command sets it names is known.
template <typename Out>
Out io_command_set_vector_text(Out out, spec::io_command_set_vector value)
{
    using vector = spec::io_command_set_vector;
    const bool nvm = value.get(vector::nvm);
    const bool key_value = value.get(vector::key_value);
    const bool zoned = value.get(vector::zoned);
    if (!nvm && !key_value && !zoned) {
        return fmt::format_to(out, "{:#x}", value.raw);
    }
    *out++ = '[';
    bool first = true;
    out = append_flags(out, first,
                       {{nvm, label(spec::command_set_identifier::nvm)},
                        {key_value, label(spec::command_set_identifier::key_value)},
                        {zoned, label(spec::command_set_identifier::zoned)}});
    *out++ = ']';
    return out;
}

} // namespace detail::identify_format
NVMEKIT_END_NAMESPACE

/// `Identify Controller`, or `Reserved (0x1f)` for a reserved value.
template <>
// clang-format off
struct fmt::formatter<nvmekit::spec::cns>
    : nvmekit::detail::name_or_reserved_formatter<nvmekit::spec::cns> {};
// clang-format on

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
    auto format(const nvmekit::spec::power_state_descriptor& value, FormatContext& ctx) const
        -> decltype(ctx.out())
    {
        using nvmekit::spec::power_state_flags;
        using nvmekit::spec::power_state_relative;
        const bool fine_scale = value.flags.get(power_state_flags::max_power_scale);
        const unsigned divisor = fine_scale ? 10000U : 100U;
        auto out = fmt::format_to(
            ctx.out(), "mp:{}.{:0{}}W {}", value.mp / divisor, value.mp % divisor, fine_scale ? 4 : 2,
            value.flags.get(power_state_flags::non_operational) ? "non-operational" : "operational");
        return fmt::format_to(
            out, " enlat:{} exlat:{} rrt:{} rrl:{} rwt:{} rwl:{}", value.enlat, value.exlat,
            value.rrt.get(power_state_relative::value), value.rrl.get(power_state_relative::value),
            value.rwt.get(power_state_relative::value), value.rwl.get(power_state_relative::value));
    }
};

/// Four lines (no trailing newline):
///
///     vid 0xf0e5 ssvid 0xf0e5 sn "NVMEKIT0001" mn "nvmekit controller" fr "0.1.0"
///     cntlid 1 ver 2.0.0 cntrltype io mdts 5 nn 32 oaes 0x00000100 ctratt 0x00000000
///     oacs 0x0106 oncs 0x015f frmw 0x03 lpa 0x07 vwc 0x07 sqes 0x66 cqes 0x44 sgls 0x00000001
///     subnqn "nqn.2023-01.io.nvmekit:subsystem0"
template <>
struct fmt::formatter<nvmekit::spec::identify_controller> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(const nvmekit::spec::identify_controller& value, FormatContext& ctx) const
        -> decltype(ctx.out())
    {
        auto out = fmt::format_to(ctx.out(), "vid 0x{:04x} ssvid 0x{:04x} sn {:?} mn {:?} fr {:?}\n",
                                  value.vid, value.ssvid, value.serial_number(), value.model_number(),
                                  value.firmware_revision());
        out = fmt::format_to(
            out, "cntlid {} ver {}.{}.{} cntrltype {} mdts {} nn {} oaes 0x{:08x} ctratt 0x{:08x}\n",
            value.cntlid, value.ver >> 16, (value.ver >> 8) & 0xffU, value.ver & 0xffU, value.cntrltype,
            value.mdts, value.nn, value.oaes.raw, value.ctratt.raw);
        out = fmt::format_to(
            out,
            "oacs 0x{:04x} oncs 0x{:04x} frmw 0x{:02x} lpa 0x{:02x} vwc 0x{:02x} sqes 0x{:02x} "
            "cqes 0x{:02x} sgls 0x{:08x}\n",
            value.oacs.raw, value.oncs.raw, value.frmw.raw, value.lpa.raw, value.vwc.raw, value.sqes.raw,
            value.cqes.raw, value.sgls.raw);
        return fmt::format_to(out, "subnqn {:?}", value.subsystem_nqn());
    }
};

/// Two lines, then one line per LBA format up to NLBAF (no trailing newline):
///
///     nsze 0x200000 ncap 0x200000 nuse 0x1000 nsfeat 0x00 nlbaf 1 flbas 0x01 mc 0x00 dpc 0x00 dps 0x00 nmic
///     0x00 nguid 000102030405060708090a0b0c0d0e0f eui64 0011223344556677 lbaf0 ms:0 lbads:9 rp:0 lbaf1 ms:0
///     lbads:12 rp:0 (in use)
template <>
struct fmt::formatter<nvmekit::spec::identify_namespace> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(const nvmekit::spec::identify_namespace& value, FormatContext& ctx) const
        -> decltype(ctx.out())
    {
        auto out =
            fmt::format_to(ctx.out(),
                           "nsze 0x{:x} ncap 0x{:x} nuse 0x{:x} nsfeat 0x{:02x} nlbaf {} flbas 0x{:02x} "
                           "mc 0x{:02x} dpc 0x{:02x} dps 0x{:02x} nmic 0x{:02x}\nnguid ",
                           value.nsze, value.ncap, value.nuse, value.nsfeat.raw, value.nlbaf, value.flbas.raw,
                           value.mc.raw, value.dpc.raw, value.dps.raw, value.nmic.raw);
        out = nvmekit::detail::hex_bytes(out, value.nguid);
        out = fmt::format_to(out, " eui64 ");
        out = nvmekit::detail::hex_bytes(out, value.eui64);
        const std::size_t in_use = value.flbas.format_index();
        const std::size_t last = std::min<std::size_t>(value.nlbaf, value.lbaf.size() - 1);
        for (std::size_t index = 0; index <= last; ++index) {
            out = fmt::format_to(out, "\nlbaf{} {}{}", index, value.lbaf[index],
                                 index == in_use ? " (in use)" : "");
        }
        return out;
    }
};

/// `vsl 0 wzsl 0 wusl 0 dmrl 0 dmrsl 0 dmsl 0`, as nvme-cli's nvm-id-ctrl.
template <>
struct fmt::formatter<nvmekit::spec::nvm_identify_controller> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(const nvmekit::spec::nvm_identify_controller& value, FormatContext& ctx) const
        -> decltype(ctx.out())
    {
        return fmt::format_to(ctx.out(), "vsl {} wzsl {} wusl {} dmrl {} dmrsl {} dmsl {}", value.vsl,
                              value.wzsl, value.wusl, value.dmrl, value.dmrsl, value.dmsl);
    }
};

/// `not_reported`, `0.0001W`, `0.01W`, or `0x3` (reserved): the unit of a power field.
template <>
struct fmt::formatter<nvmekit::spec::power_scale>
    : nvmekit::detail::label_or_hex_formatter<nvmekit::spec::power_scale,
                                              nvmekit::detail::identify_format::label> {};

/// `0x03 [mxps nops]`.
template <>
struct fmt::formatter<nvmekit::spec::power_state_flags> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::power_state_flags value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        using flags = nvmekit::spec::power_state_flags;
        return nvmekit::detail::flag_word(
            ctx.out(), value.raw,
            {{value.get(flags::max_power_scale), "mxps"}, {value.get(flags::non_operational), "nops"}});
    }
};

/// The relative value in decimal: `3`.
template <>
struct fmt::formatter<nvmekit::spec::power_state_relative> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::power_state_relative value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        return fmt::format_to(ctx.out(), "{}", value.get(nvmekit::spec::power_state_relative::value));
    }
};

/// `ips=0.01W`.
template <>
struct fmt::formatter<nvmekit::spec::idle_power_attributes> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::idle_power_attributes value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        return fmt::format_to(ctx.out(), "ips={}", value.get(nvmekit::spec::idle_power_attributes::scale));
    }
};

/// `apw=2 aps=0.0001W`.
template <>
struct fmt::formatter<nvmekit::spec::active_power_attributes> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::active_power_attributes value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        using attributes = nvmekit::spec::active_power_attributes;
        return fmt::format_to(ctx.out(), "apw={} aps={}", value.get(attributes::workload),
                              value.get(attributes::scale));
    }
};

/// CMIC: `0x0b [mports mctrs anars]`.
template <>
struct fmt::formatter<nvmekit::spec::controller_multipath_caps> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::controller_multipath_caps value, FormatContext& ctx) const
        -> decltype(ctx.out())
    {
        using caps = nvmekit::spec::controller_multipath_caps;
        return nvmekit::detail::flag_word(ctx.out(), value.raw,
                                          {{value.get(caps::multiple_ports), "mports"},
                                           {value.get(caps::multiple_controllers), "mctrs"},
                                           {value.get(caps::sriov_virtual_function), "ft"},
                                           {value.get(caps::ana_reporting), "anars"}});
    }
};

/// OAES: `0x80000300 [nsan fan dlpcn]`.
template <>
struct fmt::formatter<nvmekit::spec::async_events_supported> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::async_events_supported value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        using events = nvmekit::spec::async_events_supported;
        return nvmekit::detail::flag_word(ctx.out(), value.raw,
                                          {{value.get(events::namespace_attribute), "nsan"},
                                           {value.get(events::firmware_activation), "fan"},
                                           {value.get(events::ana_change), "anacn"},
                                           {value.get(events::predictable_latency), "plealcn"},
                                           {value.get(events::lba_status_information), "lsian"},
                                           {value.get(events::endurance_group_event), "egealcn"},
                                           {value.get(events::zone_descriptor_changed), "zdcn"},
                                           {value.get(events::discovery_log_page_change), "dlpcn"}});
    }
};

/// CTRATT: `0x00008001 [hids elbas]`.
template <>
struct fmt::formatter<nvmekit::spec::controller_attributes> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::controller_attributes value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        using attributes = nvmekit::spec::controller_attributes;
        return nvmekit::detail::flag_word(ctx.out(), value.raw,
                                          {{value.get(attributes::host_identifier_128bit), "hids"},
                                           {value.get(attributes::non_operational_permissive), "nopspm"},
                                           {value.get(attributes::nvm_sets), "nsets"},
                                           {value.get(attributes::read_recovery_levels), "rrlvls"},
                                           {value.get(attributes::endurance_groups), "egs"},
                                           {value.get(attributes::predictable_latency_mode), "plm"},
                                           {value.get(attributes::traffic_based_keep_alive), "tbkas"},
                                           {value.get(attributes::namespace_granularity), "ng"},
                                           {value.get(attributes::sq_associations), "sqa"},
                                           {value.get(attributes::uuid_list), "ulist"},
                                           {value.get(attributes::multi_domain_subsystem), "mds"},
                                           {value.get(attributes::fixed_capacity_management), "fcm"},
                                           {value.get(attributes::variable_capacity_management), "vcm"},
                                           {value.get(attributes::delete_endurance_group), "deg"},
                                           {value.get(attributes::delete_nvm_set), "dnvms"},
                                           {value.get(attributes::extended_lba_formats), "elbas"}});
    }
};

/// OACS: `0x0106 [format firmware dbbuf]`.
template <>
struct fmt::formatter<nvmekit::spec::admin_command_support> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::admin_command_support value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        using support = nvmekit::spec::admin_command_support;
        return nvmekit::detail::flag_word(ctx.out(), value.raw,
                                          {{value.get(support::security), "security"},
                                           {value.get(support::format_nvm), "format"},
                                           {value.get(support::firmware), "firmware"},
                                           {value.get(support::namespace_management), "ns_mgmt"},
                                           {value.get(support::device_self_test), "self_test"},
                                           {value.get(support::directives), "directives"},
                                           {value.get(support::nvme_mi), "nvme_mi"},
                                           {value.get(support::virtualization_management), "virt_mgmt"},
                                           {value.get(support::doorbell_buffer_config), "dbbuf"},
                                           {value.get(support::get_lba_status), "get_lba_status"},
                                           {value.get(support::lockdown), "lockdown"}});
    }
};

/// FRMW: `slot1_ro=1 slots=1 activate_without_reset=0`.
template <>
struct fmt::formatter<nvmekit::spec::firmware_updates> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::firmware_updates value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        using updates = nvmekit::spec::firmware_updates;
        return fmt::format_to(ctx.out(), "slot1_ro={:d} slots={} activate_without_reset={:d}",
                              value.get(updates::slot1_read_only), value.get(updates::slot_count),
                              value.get(updates::activation_without_reset));
    }
};

/// LPA: `0x07 [smart_per_ns cmd_effects ext_data]`.
template <>
struct fmt::formatter<nvmekit::spec::log_page_attributes> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::log_page_attributes value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        using attributes = nvmekit::spec::log_page_attributes;
        return nvmekit::detail::flag_word(ctx.out(), value.raw,
                                          {{value.get(attributes::smart_per_namespace), "smart_per_ns"},
                                           {value.get(attributes::commands_effects), "cmd_effects"},
                                           {value.get(attributes::extended_data), "ext_data"},
                                           {value.get(attributes::telemetry), "telemetry"},
                                           {value.get(attributes::persistent_event_log), "pel"},
                                           {value.get(attributes::supported_log_pages), "supported_logs"},
                                           {value.get(attributes::telemetry_data_area_4), "da4"}});
    }
};

/// SQES or CQES: `required=6 max=6` (powers of two, as stored).
template <>
struct fmt::formatter<nvmekit::spec::queue_entry_sizes> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::queue_entry_sizes value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        using sizes = nvmekit::spec::queue_entry_sizes;
        return fmt::format_to(ctx.out(), "required={} max={}", value.get(sizes::required),
                              value.get(sizes::maximum));
    }
};

/// ONCS: `0x015f [compare write_uncor dsm write_zeroes save_select timestamp copy]`.
template <>
struct fmt::formatter<nvmekit::spec::nvm_command_support> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::nvm_command_support value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        using support = nvmekit::spec::nvm_command_support;
        return nvmekit::detail::flag_word(ctx.out(), value.raw,
                                          {{value.get(support::compare), "compare"},
                                           {value.get(support::write_uncorrectable), "write_uncor"},
                                           {value.get(support::dataset_management), "dsm"},
                                           {value.get(support::write_zeroes), "write_zeroes"},
                                           {value.get(support::save_select_features), "save_select"},
                                           {value.get(support::reservations), "reservations"},
                                           {value.get(support::timestamp), "timestamp"},
                                           {value.get(support::verify), "verify"},
                                           {value.get(support::copy), "copy"}});
    }
};

/// FUSES: `0x0001 [compare_write]`.
template <>
struct fmt::formatter<nvmekit::spec::fused_operation_support> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::fused_operation_support value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        return nvmekit::detail::flag_word(
            ctx.out(), value.raw,
            {{value.get(nvmekit::spec::fused_operation_support::compare_and_write), "compare_write"}});
    }
};

/// FNA: `0x05 [format_all crypto_erase]`.
template <>
struct fmt::formatter<nvmekit::spec::format_nvm_attributes> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::format_nvm_attributes value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        using attributes = nvmekit::spec::format_nvm_attributes;
        return nvmekit::detail::flag_word(ctx.out(), value.raw,
                                          {{value.get(attributes::format_all_namespaces), "format_all"},
                                           {value.get(attributes::secure_erase_all_namespaces), "erase_all"},
                                           {value.get(attributes::cryptographic_erase), "crypto_erase"}});
    }
};

/// `not_indicated`, `not_supported`, `supported`, or `0x1` (reserved).
template <>
struct fmt::formatter<nvmekit::spec::flush_broadcast>
    : nvmekit::detail::label_or_hex_formatter<nvmekit::spec::flush_broadcast,
                                              nvmekit::detail::identify_format::label> {};

/// VWC: `present=1 flush_broadcast=supported`.
template <>
struct fmt::formatter<nvmekit::spec::volatile_write_cache_support> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::volatile_write_cache_support value, FormatContext& ctx) const
        -> decltype(ctx.out())
    {
        using support = nvmekit::spec::volatile_write_cache_support;
        return fmt::format_to(ctx.out(), "present={:d} flush_broadcast={}", value.get(support::present),
                              value.get(support::flush_behavior));
    }
};

/// `not_supported`, `supported`, `dword_aligned`, or `0x3` (reserved).
template <>
struct fmt::formatter<nvmekit::spec::sgl_data_block_support>
    : nvmekit::detail::label_or_hex_formatter<nvmekit::spec::sgl_data_block_support,
                                              nvmekit::detail::identify_format::label> {};

/// SGLS, every field in bit order: `support=supported keyed=0 bit_bucket=1 byte_aligned_mptr=0
/// oversized=0 mptr_sgl=0 address_offset=0 transport=0` (one line).
template <>
struct fmt::formatter<nvmekit::spec::sgl_support> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::sgl_support value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        using sgls = nvmekit::spec::sgl_support;
        return fmt::format_to(ctx.out(),
                              "support={} keyed={:d} bit_bucket={:d} byte_aligned_mptr={:d} oversized={:d} "
                              "mptr_sgl={:d} address_offset={:d} transport={:d}",
                              value.get(sgls::support), value.get(sgls::keyed_data_block),
                              value.get(sgls::bit_bucket), value.get(sgls::metadata_byte_aligned),
                              value.get(sgls::length_larger_than_data), value.get(sgls::metadata_sgl),
                              value.get(sgls::address_as_offset), value.get(sgls::transport_data_block));
    }
};

/// `best`, `better`, `good` or `degraded`.
template <>
struct fmt::formatter<nvmekit::spec::lba_relative_performance>
    : nvmekit::detail::label_or_hex_formatter<nvmekit::spec::lba_relative_performance,
                                              nvmekit::detail::identify_format::label> {};

/// NSFEAT: `0x11 [thinp optperf]`.
template <>
struct fmt::formatter<nvmekit::spec::namespace_features> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::namespace_features value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        using features = nvmekit::spec::namespace_features;
        return nvmekit::detail::flag_word(ctx.out(), value.raw,
                                          {{value.get(features::thin_provisioning), "thinp"},
                                           {value.get(features::namespace_atomics), "nsabp"},
                                           {value.get(features::deallocated_error), "dae"},
                                           {value.get(features::identifier_reuse), "uidreuse"},
                                           {value.get(features::optimal_performance), "optperf"}});
    }
};

/// FLBAS: `lbaf=17 extended=1`, the LBA format index joined from both of its halves.
template <>
struct fmt::formatter<nvmekit::spec::formatted_lba_size> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::formatted_lba_size value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        return fmt::format_to(ctx.out(), "lbaf={} extended={:d}", value.format_index(),
                              value.get(nvmekit::spec::formatted_lba_size::extended_metadata));
    }
};

/// MC: `0x03 [extended separate]`.
template <>
struct fmt::formatter<nvmekit::spec::metadata_capabilities> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::metadata_capabilities value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        using caps = nvmekit::spec::metadata_capabilities;
        return nvmekit::detail::flag_word(
            ctx.out(), value.raw,
            {{value.get(caps::extended_lba), "extended"}, {value.get(caps::separate_buffer), "separate"}});
    }
};

/// DPC: `0x19 [type1 pi_first pi_last]`.
template <>
struct fmt::formatter<nvmekit::spec::protection_capabilities> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::protection_capabilities value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        using caps = nvmekit::spec::protection_capabilities;
        return nvmekit::detail::flag_word(ctx.out(), value.raw,
                                          {{value.get(caps::type1), "type1"},
                                           {value.get(caps::type2), "type2"},
                                           {value.get(caps::type3), "type3"},
                                           {value.get(caps::first_bytes), "pi_first"},
                                           {value.get(caps::last_bytes), "pi_last"}});
    }
};

/// `none`, `type1`, `type2`, `type3`, or `0x4` (reserved).
template <>
struct fmt::formatter<nvmekit::spec::protection_information_type>
    : nvmekit::detail::label_or_hex_formatter<nvmekit::spec::protection_information_type,
                                              nvmekit::detail::identify_format::label> {};

/// DPS: `pit=type1 pip=1` (PIP: the protection information is in the first bytes of metadata).
template <>
struct fmt::formatter<nvmekit::spec::protection_settings> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::protection_settings value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        using settings = nvmekit::spec::protection_settings;
        return fmt::format_to(ctx.out(), "pit={} pip={:d}", value.get(settings::type),
                              value.get(settings::first_bytes));
    }
};

/// NMIC: `0x01 [shared]`.
template <>
struct fmt::formatter<nvmekit::spec::namespace_multipath_caps> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::namespace_multipath_caps value, FormatContext& ctx) const
        -> decltype(ctx.out())
    {
        return nvmekit::detail::flag_word(
            ctx.out(), value.raw, {{value.get(nvmekit::spec::namespace_multipath_caps::shared), "shared"}});
    }
};

/// RESCAP: `0x07 [ptpls wes eas]`.
template <>
struct fmt::formatter<nvmekit::spec::reservation_capabilities> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::reservation_capabilities value, FormatContext& ctx) const
        -> decltype(ctx.out())
    {
        using caps = nvmekit::spec::reservation_capabilities;
        return nvmekit::detail::flag_word(ctx.out(), value.raw,
                                          {{value.get(caps::persist_through_power_loss), "ptpls"},
                                           {value.get(caps::write_exclusive), "wes"},
                                           {value.get(caps::exclusive_access), "eas"},
                                           {value.get(caps::write_exclusive_registrants_only), "wero"},
                                           {value.get(caps::exclusive_access_registrants_only), "earo"},
                                           {value.get(caps::write_exclusive_all_registrants), "wear"},
                                           {value.get(caps::exclusive_access_all_registrants), "eaar"},
                                           {value.get(caps::ignore_existing_key), "iekey"}});
    }
};

/// FPI: `supported=1 remaining=25` (percent of the Format NVM left to do).
template <>
struct fmt::formatter<nvmekit::spec::format_progress> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::format_progress value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        using progress = nvmekit::spec::format_progress;
        return fmt::format_to(ctx.out(), "supported={:d} remaining={}", value.get(progress::supported),
                              value.get(progress::percent_remaining));
    }
};

/// `not_reported`, `zeroes`, `ones`, or `0x3` (reserved).
template <>
struct fmt::formatter<nvmekit::spec::deallocated_read_value>
    : nvmekit::detail::label_or_hex_formatter<nvmekit::spec::deallocated_read_value,
                                              nvmekit::detail::identify_format::label> {};

/// DLFEAT: `read=zeroes write_zeroes=1 guard_crc=0`.
template <>
struct fmt::formatter<nvmekit::spec::deallocate_features> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::deallocate_features value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        using features = nvmekit::spec::deallocate_features;
        return fmt::format_to(ctx.out(), "read={} write_zeroes={:d} guard_crc={:d}",
                              value.get(features::read_behavior),
                              value.get(features::write_zeroes_deallocate), value.get(features::guard_crc));
    }
};

/// NSATTR: `0x01 [write_protected]`.
template <>
struct fmt::formatter<nvmekit::spec::namespace_attributes> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::namespace_attributes value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        return nvmekit::detail::flag_word(
            ctx.out(), value.raw,
            {{value.get(nvmekit::spec::namespace_attributes::write_protected), "write_protected"}});
    }
};

/// `16b_guard`, `32b_guard`, `64b_guard`, or `0x3` (reserved).
template <>
struct fmt::formatter<nvmekit::spec::protection_information_format>
    : nvmekit::detail::label_or_hex_formatter<nvmekit::spec::protection_information_format,
                                              nvmekit::detail::identify_format::label> {};

/// `sts:8 pif:2`, as nvme-cli prints an extended LBA format (PIF as its raw value, like RP in
/// an LBA format).
template <>
struct fmt::formatter<nvmekit::spec::extended_lba_format> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::extended_lba_format value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        using format = nvmekit::spec::extended_lba_format;
        return fmt::format_to(ctx.out(), "sts:{} pif:{}", value.get(format::sts),
                              static_cast<unsigned>(value.get(format::pif)));
    }
};

/// PIC: `0x05 [16bpists stcrs]`.
template <>
struct fmt::formatter<nvmekit::spec::protection_information_capabilities> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::protection_information_capabilities value, FormatContext& ctx) const
        -> decltype(ctx.out())
    {
        using caps = nvmekit::spec::protection_information_capabilities;
        return nvmekit::detail::flag_word(ctx.out(), value.raw,
                                          {{value.get(caps::storage_tag_16b), "16bpists"},
                                           {value.get(caps::storage_tag_mask_16b), "16bpistm"},
                                           {value.get(caps::storage_tag_check_read), "stcrs"}});
    }
};

/// `lbstm=0xffff pic=0x1 elbaf1=(sts:16 pif:2)`: the extended LBA formats that are not zero.
template <>
struct fmt::formatter<nvmekit::spec::nvm_identify_namespace> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(const nvmekit::spec::nvm_identify_namespace& value, FormatContext& ctx) const
        -> decltype(ctx.out())
    {
        auto out = fmt::format_to(ctx.out(), "lbstm={:#x} pic={:#x}", value.lbstm, value.pic.raw);
        for (std::size_t index = 0; index < value.elbaf.size(); ++index) {
            if (value.elbaf[index].raw != 0) {
                out = fmt::format_to(out, " elbaf{}=({})", index, value.elbaf[index]);
            }
        }
        return out;
    }
};

/// NSTAT: `0x01 [nrdy]`.
template <>
struct fmt::formatter<nvmekit::spec::namespace_status> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::namespace_status value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        return nvmekit::detail::flag_word(ctx.out(), value.raw,
                                          {{value.get(nvmekit::spec::namespace_status::ready), "nrdy"}});
    }
};

/// `nsfeat 0x00 nmic 0x01 rescap 0x00 fpi 0x00 anagrpid 1 nsattr 0x00 nvmsetid 0 endgid 0 nstat 0x01`,
/// in the style of the Identify Namespace summary.
template <>
struct fmt::formatter<nvmekit::spec::independent_identify_namespace> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(const nvmekit::spec::independent_identify_namespace& value, FormatContext& ctx) const
        -> decltype(ctx.out())
    {
        return fmt::format_to(
            ctx.out(),
            "nsfeat 0x{:02x} nmic 0x{:02x} rescap 0x{:02x} fpi 0x{:02x} anagrpid {} nsattr 0x{:02x} "
            "nvmsetid {} endgid {} nstat 0x{:02x}",
            value.nsfeat.raw, value.nmic.raw, value.rescap.raw, value.fpi.raw, value.anagrpid,
            value.nsattr.raw, value.nvmsetid, value.endgid, value.nstat.raw);
    }
};

/// `nsids=[1, 2, 5]`: the entries before the first zero.
template <>
struct fmt::formatter<nvmekit::spec::active_namespace_id_list> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(const nvmekit::spec::active_namespace_id_list& value, FormatContext& ctx) const
        -> decltype(ctx.out())
    {
        return nvmekit::detail::id_list(fmt::format_to(ctx.out(), "nsids="),
                                        std::span<const std::uint32_t>{value.nsids}.first(value.size()));
    }
};

/// `cntlids=[1, 2]`.
template <>
struct fmt::formatter<nvmekit::spec::controller_list> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(const nvmekit::spec::controller_list& value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        const auto ids = value.identifiers();
        return fmt::format_to(ctx.out(), "cntlids=[{}]", fmt::join(ids.begin(), ids.end(), ", "));
    }
};

/// `nidt=EUI64 nidl=8`.
template <>
struct fmt::formatter<nvmekit::spec::namespace_id_descriptor_header> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(const nvmekit::spec::namespace_id_descriptor_header& value, FormatContext& ctx) const
        -> decltype(ctx.out())
    {
        return fmt::format_to(ctx.out(), "nidt={} nidl={}", value.nidt, value.nidl);
    }
};

/// One descriptor as `type=id`: `eui64=0011223344556677`, `nguid=<32 hex digits>`,
/// `uuid=00112233-4455-6677-8899-aabbccddeeff`, `csi=nvm`. A reserved type, or an identifier of
/// the wrong length, prints the type in hex and the bytes: `0x5=aabb`, `uuid=0011`.
template <>
struct fmt::formatter<nvmekit::spec::namespace_id_descriptor_list::descriptor>
    : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(const nvmekit::spec::namespace_id_descriptor_list::descriptor& value,
                FormatContext& ctx) const -> decltype(ctx.out())
    {
        namespace spec = nvmekit::spec;
        namespace detail = nvmekit::detail;
        auto out = ctx.out();
        switch (value.type) {
        case spec::namespace_id_type::eui64: out = fmt::format_to(out, "eui64="); break;
        case spec::namespace_id_type::nguid: out = fmt::format_to(out, "nguid="); break;
        case spec::namespace_id_type::uuid:
            out = fmt::format_to(out, "uuid=");
            if (value.id.size() == 16) {
                return detail::uuid_bytes(out, value.id.first<16>());
            }
            break;
        case spec::namespace_id_type::csi:
            out = fmt::format_to(out, "csi=");
            if (value.id.size() == 1) {
                return detail::text_or_hex(
                    out,
                    detail::identify_format::label(static_cast<spec::command_set_identifier>(value.id[0])),
                    value.id[0]);
            }
            break;
        default: out = fmt::format_to(out, "{:#x}=", static_cast<unsigned>(value.type)); break;
        }
        return detail::hex_bytes(out, value.id);
    }
};

/// The descriptors one after another: `eui64=0011223344556677 nguid=<32 hex digits>
/// uuid=00112233-4455-6677-8899-aabbccddeeff csi=nvm`, or `none` for an empty list.
template <>
struct fmt::formatter<nvmekit::spec::namespace_id_descriptor_list> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(const nvmekit::spec::namespace_id_descriptor_list& value, FormatContext& ctx) const
        -> decltype(ctx.out())
    {
        auto out = ctx.out();
        auto entry = value.at(0);
        if (!entry) {
            return fmt::format_to(out, "none");
        }
        out = fmt::format_to(out, "{}", *entry);
        while ((entry = value.at(entry->next_offset))) {
            out = fmt::format_to(out, " {}", *entry);
        }
        return out;
    }
};

/// `0x0000000000000005 [nvm zoned]`.
template <>
struct fmt::formatter<nvmekit::spec::io_command_set_vector> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::io_command_set_vector value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        using vector = nvmekit::spec::io_command_set_vector;
        using nvmekit::detail::identify_format::label;
        using nvmekit::spec::command_set_identifier;
        return nvmekit::detail::flag_word(
            ctx.out(), value.raw,
            {{value.get(vector::nvm), label(command_set_identifier::nvm)},
             {value.get(vector::key_value), label(command_set_identifier::key_value)},
             {value.get(vector::zoned), label(command_set_identifier::zoned)}});
    }
};

/// The vectors that are not zero, by index: `0:[nvm] 1:[nvm zoned]`; a vector of unknown command
/// sets prints in hex (`2:0x10`); `none` when every vector is zero.
template <>
struct fmt::formatter<nvmekit::spec::identify_io_command_set> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(const nvmekit::spec::identify_io_command_set& value, FormatContext& ctx) const
        -> decltype(ctx.out())
    {
        auto out = ctx.out();
        const char* separator = "";
        for (std::size_t index = 0; index < value.vectors.size(); ++index) {
            if (value.vectors[index].raw == 0) {
                continue;
            }
            out = fmt::format_to(out, "{}{}:", separator, index);
            out = nvmekit::detail::identify_format::io_command_set_vector_text(out, value.vectors[index]);
            separator = " ";
        }
        if (*separator == '\0') {
            out = fmt::format_to(out, "none");
        }
        return out;
    }
};
