#pragma once
/// Formatters for log page identifiers, log page structures and asynchronous events.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <type_traits>

#include <nvmekit/format/common.hpp>
#include <nvmekit/format/status.hpp>
#include <nvmekit/spec/log_pages.hpp>
#include <nvmekit/spec/opcodes.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace detail::log_pages_format {

/// Whole degrees Celsius from Kelvin (0 C = 273 K).
constexpr int celsius(std::uint16_t kelvin) noexcept { return static_cast<int>(kelvin) - 273; }

/// Label of a CSE value, or an empty view if reserved.
constexpr std::string_view label(spec::command_submission_execution value) noexcept
{
    switch (value) {
    case spec::command_submission_execution::no_restriction: return "no_restriction";
    case spec::command_submission_execution::same_namespace_exclusive: return "same_namespace_exclusive";
    case spec::command_submission_execution::any_namespace_exclusive: return "any_namespace_exclusive";
    }
    return {};
}

} // namespace detail::log_pages_format
NVMEKIT_END_NAMESPACE

/// `SMART / Health Information (0x02)`; `Vendor Specific (0xc0)`; `Reserved (0x20)`.
template <>
struct fmt::formatter<nvmekit::spec::log_page_id>
    : nvmekit::detail::name_and_number_formatter<nvmekit::spec::log_page_id> {};

/// `byte 40 bit 2`, or `n/a` for FFFFh.
template <>
struct fmt::formatter<nvmekit::spec::parameter_error_location> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::parameter_error_location value, FormatContext& ctx) const
        -> decltype(ctx.out())
    {
        using nvmekit::spec::parameter_error_location;
        if (value.raw == nvmekit::spec::error_field_not_applicable) {
            return fmt::format_to(ctx.out(), "n/a");
        }
        return fmt::format_to(ctx.out(), "byte {} bit {}", value.get(parameter_error_location::byte_offset),
                              value.get(parameter_error_location::bit));
    }
};

/// `error_count=3 sqid=1 cid=0x12 status=Generic/Invalid Field (0x02) [DNR] lba=0x10 nsid=1`.
template <>
struct fmt::formatter<nvmekit::spec::error_information_entry> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(const nvmekit::spec::error_information_entry& value, FormatContext& ctx) const
        -> decltype(ctx.out())
    {
        return fmt::format_to(ctx.out(), "error_count={} sqid={} cid=0x{:x} status={} lba=0x{:x} nsid={}",
                              value.error_count, value.sqid, value.cid, value.status(), value.lba,
                              value.nsid);
    }
};

/// `0x00` when no warning is set, else the raw byte and the set warnings:
/// `0x09 [spare_below_threshold read_only]`.
template <>
struct fmt::formatter<nvmekit::spec::smart_critical_warning> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::smart_critical_warning value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        using warning = nvmekit::spec::smart_critical_warning;
        return nvmekit::detail::flag_word(
            ctx.out(), value.raw,
            {{value.get(warning::spare_below_threshold), "spare_below_threshold"},
             {value.get(warning::temperature), "temperature"},
             {value.get(warning::reliability_degraded), "reliability_degraded"},
             {value.get(warning::read_only), "read_only"},
             {value.get(warning::volatile_backup_failed), "volatile_backup_failed"},
             {value.get(warning::pmr_read_only), "pmr_read_only"},
             {(value.raw & 0xc0U) != 0, "reserved"}});
    }
};

/// Same style as the critical warning: `0x04 [reliability_degraded]`.
template <>
struct fmt::formatter<nvmekit::spec::endurance_group_critical_warning> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::endurance_group_critical_warning value, FormatContext& ctx) const
        -> decltype(ctx.out())
    {
        using warning = nvmekit::spec::endurance_group_critical_warning;
        return nvmekit::detail::flag_word(
            ctx.out(), value.raw,
            {{value.get(warning::spare_below_threshold), "spare_below_threshold"},
             {value.get(warning::reliability_degraded), "reliability_degraded"},
             {value.get(warning::read_only), "read_only"},
             {(value.raw & 0xf2U) != 0, "reserved"}});
    }
};

/// A multi-line summary in the manner of `nvme smart-log`, one `key : value` per line with no
/// final newline. Temperature sensors that report 0 (not implemented) are left out.
template <>
struct fmt::formatter<nvmekit::spec::smart_health_log> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(const nvmekit::spec::smart_health_log& log, FormatContext& ctx) const -> decltype(ctx.out())
    {
        using nvmekit::detail::log_pages_format::celsius;
        const std::uint16_t kelvin = log.composite_temperature_kelvin();
        auto out = ctx.out();
        out = fmt::format_to(out, "{:<27} : {}\n", "critical_warning", log.critical_warning);
        out = fmt::format_to(out, "{:<27} : {} K ({} C)\n", "temperature", kelvin, celsius(kelvin));
        out = fmt::format_to(out, "{:<27} : {}%\n", "available_spare", log.available_spare);
        out =
            fmt::format_to(out, "{:<27} : {}%\n", "available_spare_threshold", log.available_spare_threshold);
        out = fmt::format_to(out, "{:<27} : {}%\n", "percentage_used", log.percentage_used);
        out = fmt::format_to(out, "{:<27} : {}\n", "endurance_group_warning",
                             log.endurance_group_warning_summary);
        out = fmt::format_to(out, "{:<27} : {}\n", "data_units_read", log.data_units_read);
        out = fmt::format_to(out, "{:<27} : {}\n", "data_units_written", log.data_units_written);
        out = fmt::format_to(out, "{:<27} : {}\n", "host_read_commands", log.host_read_commands);
        out = fmt::format_to(out, "{:<27} : {}\n", "host_write_commands", log.host_write_commands);
        out = fmt::format_to(out, "{:<27} : {}\n", "controller_busy_time", log.controller_busy_time);
        out = fmt::format_to(out, "{:<27} : {}\n", "power_cycles", log.power_cycles);
        out = fmt::format_to(out, "{:<27} : {}\n", "power_on_hours", log.power_on_hours);
        out = fmt::format_to(out, "{:<27} : {}\n", "unsafe_shutdowns", log.unsafe_shutdowns);
        out = fmt::format_to(out, "{:<27} : {}\n", "media_errors", log.media_errors);
        out = fmt::format_to(out, "{:<27} : {}\n", "num_err_log_entries", log.error_log_entries);
        out = fmt::format_to(out, "{:<27} : {}\n", "warning_temperature_time", log.warning_temperature_time);
        out =
            fmt::format_to(out, "{:<27} : {}\n", "critical_temperature_time", log.critical_temperature_time);
        for (std::size_t i = 0; i < log.temperature_sensors.size(); ++i) {
            const std::uint16_t sensor = log.temperature_sensors[i];
            if (sensor != 0) {
                out = fmt::format_to(out, "temperature_sensor_{:<8} : {} K ({} C)\n", i + 1, sensor,
                                     celsius(sensor));
            }
        }
        out = fmt::format_to(out, "{:<27} : {}\n", "thermal_mgmt_t1_transitions",
                             log.thermal_management_temp1_transitions);
        out = fmt::format_to(out, "{:<27} : {}\n", "thermal_mgmt_t2_transitions",
                             log.thermal_management_temp2_transitions);
        out = fmt::format_to(out, "{:<27} : {}\n", "thermal_mgmt_t1_total_time",
                             log.thermal_management_temp1_total_time);
        return fmt::format_to(out, "{:<27} : {}", "thermal_mgmt_t2_total_time",
                              log.thermal_management_temp2_total_time);
    }
};

/// `active_slot=1 next_slot=2`.
template <>
struct fmt::formatter<nvmekit::spec::active_firmware_info> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::active_firmware_info value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        using nvmekit::spec::active_firmware_info;
        return fmt::format_to(ctx.out(), "active_slot={} next_slot={}",
                              value.get(active_firmware_info::active_slot),
                              value.get(active_firmware_info::next_slot));
    }
};

/// `active_slot=1 next_slot=0 frs1=1.0 frs3=2.1b`: slots without firmware are left out.
template <>
struct fmt::formatter<nvmekit::spec::firmware_slot_log> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(const nvmekit::spec::firmware_slot_log& log, FormatContext& ctx) const -> decltype(ctx.out())
    {
        auto out = fmt::format_to(ctx.out(), "{}", log.afi);
        for (std::size_t slot = 1; slot <= nvmekit::spec::firmware_slot_log::slot_count; ++slot) {
            const std::string_view revision = log.revision(slot);
            if (!revision.empty()) {
                out = fmt::format_to(out, " frs{}={}", slot, revision);
            }
        }
        return out;
    }
};

/// `nsids=[1, 3]`; `nsids=[]`; `nsids=[more than 1024]`.
template <>
struct fmt::formatter<nvmekit::spec::changed_namespace_list> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(const nvmekit::spec::changed_namespace_list& list, FormatContext& ctx) const
        -> decltype(ctx.out())
    {
        if (list.overflowed()) {
            return fmt::format_to(ctx.out(), "nsids=[more than {}]",
                                  nvmekit::spec::changed_namespace_list::max_entries);
        }
        return nvmekit::detail::id_list(fmt::format_to(ctx.out(), "nsids="),
                                        std::span<const std::uint32_t>{list.nsids}.first(list.count()));
    }
};

/// `no_restriction`, `same_namespace_exclusive`, `any_namespace_exclusive`, or `0x3` if reserved.
template <>
struct fmt::formatter<nvmekit::spec::command_submission_execution>
    : nvmekit::detail::label_or_hex_formatter<nvmekit::spec::command_submission_execution,
                                              nvmekit::detail::log_pages_format::label> {};

/// The set flags by their spec abbreviations, `CSE=n` when CSE is not 0, or `none`:
/// `CSUPP LBCC NIC CSE=1 USS`.
template <>
struct fmt::formatter<nvmekit::spec::command_effects> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::command_effects value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        using nvmekit::detail::append_flag;
        using nvmekit::detail::append_flags;
        using nvmekit::spec::command_effects;
        if (value.raw == 0) {
            return fmt::format_to(ctx.out(), "none");
        }
        bool first = true;
        auto out = append_flags(ctx.out(), first,
                                {{value.get(command_effects::csupp), "CSUPP"},
                                 {value.get(command_effects::lbcc), "LBCC"},
                                 {value.get(command_effects::ncc), "NCC"},
                                 {value.get(command_effects::nic), "NIC"},
                                 {value.get(command_effects::ccc), "CCC"}});
        const auto cse = static_cast<unsigned>(value.get(command_effects::cse));
        if (cse != 0) {
            out = fmt::format_to(out, "{}CSE={}", first ? "" : " ", cse);
            first = false;
        }
        out = append_flag(out, first, value.get(command_effects::uss), "USS");
        return out;
    }
};

/// One line per opcode whose entry is not zero, admin commands first, no final newline, or
/// `none` when every entry is zero:
/// `admin 0x06 IDENTIFY: CSUPP` / `io 0x01: CSUPP LBCC`. I/O opcodes are not named: their
/// meaning depends on the command set the log was read for.
template <>
struct fmt::formatter<nvmekit::spec::commands_supported_and_effects> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(const nvmekit::spec::commands_supported_and_effects& log, FormatContext& ctx) const
        -> decltype(ctx.out())
    {
        auto out = ctx.out();
        const char* separator = "";
        for (std::size_t opcode = 0; opcode < log.admin_commands.size(); ++opcode) {
            if (log.admin_commands[opcode].raw == 0) {
                continue;
            }
            const std::string_view opcode_name = name(static_cast<nvmekit::spec::admin_opcode>(opcode));
            out = fmt::format_to(out, "{}admin 0x{:02x}{}{}: {}", separator, opcode,
                                 opcode_name.empty() ? "" : " ", opcode_name, log.admin_commands[opcode]);
            separator = "\n";
        }
        for (std::size_t opcode = 0; opcode < log.io_commands.size(); ++opcode) {
            if (log.io_commands[opcode].raw == 0) {
                continue;
            }
            out = fmt::format_to(out, "{}io 0x{:02x}: {}", separator, opcode, log.io_commands[opcode]);
            separator = "\n";
        }
        if (*separator == '\0') {
            out = fmt::format_to(out, "none");
        }
        return out;
    }
};

/// `lid=0x07 oui=001b21 da1=8 da2=16 da3=32 da4=0 host_gen=1 ctrl_avail=0 ctrl_gen=0`.
template <>
struct fmt::formatter<nvmekit::spec::telemetry_log_header> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(const nvmekit::spec::telemetry_log_header& header, FormatContext& ctx) const
        -> decltype(ctx.out())
    {
        return fmt::format_to(
            ctx.out(),
            "lid=0x{:02x} oui={:06x} da1={} da2={} da3={} da4={} host_gen={} ctrl_avail={} "
            "ctrl_gen={}",
            header.log_identifier, nvmekit::spec::load_le<std::uint32_t>(header.ieee_oui, 0),
            header.data_area1_last_block, header.data_area2_last_block, header.data_area3_last_block,
            header.data_area4_last_block, header.host_data_generation_number,
            header.controller_data_available, header.controller_data_generation_number);
    }
};

/// Event information names: `Namespace Attribute Changed`, or `Reserved (0x07)`.
template <typename Event>
    // clang-format off
    requires std::is_same_v<Event, nvmekit::spec::error_event> || std::is_same_v<Event, nvmekit::spec::smart_health_event>
             || std::is_same_v<Event, nvmekit::spec::notice_event> || std::is_same_v<Event, nvmekit::spec::immediate_event>
struct fmt::formatter<Event> : nvmekit::detail::name_or_reserved_formatter<Event> {};
// clang-format on

template <>
struct fmt::formatter<nvmekit::spec::async_event_type> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::async_event_type value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        return fmt::format_to(ctx.out(), "{}", name(value));
    }
};

/// Type, event name and raw information, then the log page to read:
/// `Notice/Namespace Attribute Changed (0x00) log=Changed Namespace List (0x04)`;
/// `Vendor Specific (0x80) log=Vendor Specific (0xc1)`.
template <>
struct fmt::formatter<nvmekit::spec::async_event_completion> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::async_event_completion value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        using nvmekit::spec::async_event_completion;
        const auto type = value.get(async_event_completion::event_type);
        const unsigned information = value.get(async_event_completion::event_information);
        const auto log = value.get(async_event_completion::log_page);
        const std::string_view event_name = name(value);
        if (event_name.empty()) {
            return fmt::format_to(ctx.out(), "{} (0x{:02x}) log={}", name(type), information, log);
        }
        return fmt::format_to(ctx.out(), "{}/{} (0x{:02x}) log={}", name(type), event_name, information, log);
    }
};

/// `scan untracked`, `tracked`, or `reserved (0x12)`.
template <>
struct fmt::formatter<nvmekit::spec::lba_status_action>
    : nvmekit::detail::name_or_reserved_formatter<nvmekit::spec::lba_status_action> {};

/// `lslplen=48 nlslne=1 estulb=8 lsgc=2`.
template <>
struct fmt::formatter<nvmekit::spec::lba_status_log_header> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(const nvmekit::spec::lba_status_log_header& value, FormatContext& ctx) const
        -> decltype(ctx.out())
    {
        return fmt::format_to(ctx.out(), "lslplen={} nlslne={} estulb={} lsgc={}", value.lslplen,
                              value.nlslne, value.estulb, value.lsgc);
    }
};

/// `neid=1 nlrd=2 ratype=tracked`.
template <>
struct fmt::formatter<nvmekit::spec::lba_status_namespace_element> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(const nvmekit::spec::lba_status_namespace_element& value, FormatContext& ctx) const
        -> decltype(ctx.out())
    {
        return fmt::format_to(ctx.out(), "neid={} nlrd={} ratype={}", value.neid, value.nlrd, value.ratype);
    }
};

/// `rslba=0x10 rnlb=8`.
template <>
struct fmt::formatter<nvmekit::spec::lba_range_descriptor> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(const nvmekit::spec::lba_range_descriptor& value, FormatContext& ctx) const
        -> decltype(ctx.out())
    {
        return fmt::format_to(ctx.out(), "rslba={:#x} rnlb={}", value.rslba, value.rnlb);
    }
};
