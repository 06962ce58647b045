#pragma once
/// Formatters for feature identifiers and feature values. A feature value prints its fields as
/// `name=value` pairs named after the spec's abbreviations: `nsqr=63 ncqr=63`.

#include <cstdint>

#include <nvmekit/format/common.hpp>
#include <nvmekit/spec/features.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace detail::features_format {

constexpr unsigned bit(bool value) noexcept { return value ? 1U : 0U; }

} // namespace detail::features_format
NVMEKIT_END_NAMESPACE

/// `Number of Queues (0x07)`; `Vendor Specific (0xc0)`; `Reserved (0x20)`.
template <>
struct fmt::formatter<nvmekit::spec::feature_id>
    : nvmekit::detail::name_and_number_formatter<nvmekit::spec::feature_id> {};

/// `Current`, `Default`, `Saved`, `Supported Capabilities`, or `Reserved`.
template <>
struct fmt::formatter<nvmekit::spec::feature_select> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::feature_select value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        return fmt::format_to(ctx.out(), "{}", name(value));
    }
};

/// The set capabilities, or `none`: `saveable changeable`.
template <>
struct fmt::formatter<nvmekit::spec::feature_capabilities> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::feature_capabilities value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        using nvmekit::spec::feature_capabilities;
        const bool saveable = value.get(feature_capabilities::saveable);
        const bool namespace_specific = value.get(feature_capabilities::namespace_specific);
        const bool changeable = value.get(feature_capabilities::changeable);
        if (!saveable && !namespace_specific && !changeable) {
            return fmt::format_to(ctx.out(), "none");
        }
        bool first = true;
        return nvmekit::detail::append_flags(
            ctx.out(), first,
            {{saveable, "saveable"}, {namespace_specific, "namespace_specific"}, {changeable, "changeable"}});
    }
};

/// `ab=7 lpw=1 mpw=2 hpw=3`.
template <>
struct fmt::formatter<nvmekit::spec::arbitration> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::arbitration value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        using nvmekit::spec::arbitration;
        return fmt::format_to(ctx.out(), "ab={} lpw={} mpw={} hpw={}", value.get(arbitration::ab),
                              value.get(arbitration::lpw), value.get(arbitration::mpw),
                              value.get(arbitration::hpw));
    }
};

/// `ps=2 wh=1`.
template <>
struct fmt::formatter<nvmekit::spec::power_management> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::power_management value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        using nvmekit::spec::power_management;
        return fmt::format_to(ctx.out(), "ps={} wh={}", value.get(power_management::ps),
                              value.get(power_management::wh));
    }
};

/// `num=3`.
template <>
struct fmt::formatter<nvmekit::spec::lba_range_type> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::lba_range_type value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        return fmt::format_to(ctx.out(), "num={}", value.get(nvmekit::spec::lba_range_type::num));
    }
};

/// `general_purpose`, `filesystem`, `raid`, `cache`, `page_or_swap_file`, `vendor_specific(0x80)`
/// or `reserved(0x05)`.
template <>
struct fmt::formatter<nvmekit::spec::lba_range_kind> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::lba_range_kind value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        using enum nvmekit::spec::lba_range_kind;
        switch (value) {
        case general_purpose: return fmt::format_to(ctx.out(), "general_purpose");
        case filesystem: return fmt::format_to(ctx.out(), "filesystem");
        case raid: return fmt::format_to(ctx.out(), "raid");
        case cache: return fmt::format_to(ctx.out(), "cache");
        case page_or_swap_file: return fmt::format_to(ctx.out(), "page_or_swap_file");
        }
        const auto raw = static_cast<unsigned>(value);
        return fmt::format_to(ctx.out(), "{}(0x{:02x})", raw >= 0x80 ? "vendor_specific" : "reserved", raw);
    }
};

/// The set attributes, or `none`: `overwriteable hidden`.
template <>
struct fmt::formatter<nvmekit::spec::lba_range_attributes> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::lba_range_attributes value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        using nvmekit::spec::lba_range_attributes;
        const bool overwriteable = value.get(lba_range_attributes::overwriteable);
        const bool hidden = value.get(lba_range_attributes::hidden);
        if (!overwriteable && !hidden) {
            return fmt::format_to(ctx.out(), "none");
        }
        bool first = true;
        return nvmekit::detail::append_flags(ctx.out(), first,
                                             {{overwriteable, "overwriteable"}, {hidden, "hidden"}});
    }
};

/// `type=filesystem attributes=overwriteable slba=0x800 nlb=2047` (NLB is 0's based, as stored).
template <>
struct fmt::formatter<nvmekit::spec::lba_range_type_entry> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(const nvmekit::spec::lba_range_type_entry& entry, FormatContext& ctx) const
        -> decltype(ctx.out())
    {
        return fmt::format_to(ctx.out(), "type={} attributes={} slba=0x{:x} nlb={}", entry.type,
                              entry.attributes, entry.slba, entry.nlb);
    }
};

/// `over` or `under`, or `reserved(3)`.
template <>
struct fmt::formatter<nvmekit::spec::threshold_type> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::threshold_type value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        switch (value) {
        case nvmekit::spec::threshold_type::over: return fmt::format_to(ctx.out(), "over");
        case nvmekit::spec::threshold_type::under: return fmt::format_to(ctx.out(), "under");
        }
        return fmt::format_to(ctx.out(), "reserved({})", static_cast<unsigned>(value));
    }
};

/// `composite`, `sensor1` to `sensor8`, `all`, or `reserved(9)`.
template <>
struct fmt::formatter<nvmekit::spec::temperature_select> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::temperature_select value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        const auto raw = static_cast<unsigned>(value);
        if (value == nvmekit::spec::temperature_select::composite) {
            return fmt::format_to(ctx.out(), "composite");
        }
        if (value == nvmekit::spec::temperature_select::all) {
            return fmt::format_to(ctx.out(), "all");
        }
        if (raw <= 8) {
            return fmt::format_to(ctx.out(), "sensor{}", raw);
        }
        return fmt::format_to(ctx.out(), "reserved({})", raw);
    }
};

/// `tmpth=343 tmpsel=composite thsel=over` (TMPTH in Kelvin).
template <>
struct fmt::formatter<nvmekit::spec::temperature_threshold> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::temperature_threshold value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        using nvmekit::spec::temperature_threshold;
        return fmt::format_to(
            ctx.out(), "tmpth={} tmpsel={} thsel={}", value.get(temperature_threshold::tmpth),
            value.get(temperature_threshold::tmpsel), value.get(temperature_threshold::thsel));
    }
};

/// `tler=10 dulbe=1`.
template <>
struct fmt::formatter<nvmekit::spec::error_recovery> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::error_recovery value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        using nvmekit::detail::features_format::bit;
        using nvmekit::spec::error_recovery;
        return fmt::format_to(ctx.out(), "tler={} dulbe={}", value.get(error_recovery::tler),
                              bit(value.get(error_recovery::dulbe)));
    }
};

/// `wce=1`.
template <>
struct fmt::formatter<nvmekit::spec::volatile_write_cache> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::volatile_write_cache value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        using nvmekit::detail::features_format::bit;
        return fmt::format_to(ctx.out(), "wce={}", bit(value.get(nvmekit::spec::volatile_write_cache::wce)));
    }
};

/// `nsqr=63 ncqr=63` (0's based, as stored).
template <>
struct fmt::formatter<nvmekit::spec::number_of_queues> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::number_of_queues value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        using nvmekit::spec::number_of_queues;
        return fmt::format_to(ctx.out(), "nsqr={} ncqr={}", value.get(number_of_queues::nsqr),
                              value.get(number_of_queues::ncqr));
    }
};

/// `thr=7 time=10` (TIME in 100 microsecond units).
template <>
struct fmt::formatter<nvmekit::spec::interrupt_coalescing> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::interrupt_coalescing value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        using nvmekit::spec::interrupt_coalescing;
        return fmt::format_to(ctx.out(), "thr={} time={}", value.get(interrupt_coalescing::thr),
                              value.get(interrupt_coalescing::time));
    }
};

/// `iv=3 cd=1`.
template <>
struct fmt::formatter<nvmekit::spec::interrupt_vector_configuration> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::interrupt_vector_configuration value, FormatContext& ctx) const
        -> decltype(ctx.out())
    {
        using nvmekit::detail::features_format::bit;
        using nvmekit::spec::interrupt_vector_configuration;
        return fmt::format_to(ctx.out(), "iv={} cd={}", value.get(interrupt_vector_configuration::iv),
                              bit(value.get(interrupt_vector_configuration::cd)));
    }
};

/// `dn=0`.
template <>
struct fmt::formatter<nvmekit::spec::write_atomicity_normal> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::write_atomicity_normal value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        using nvmekit::detail::features_format::bit;
        return fmt::format_to(ctx.out(), "dn={}", bit(value.get(nvmekit::spec::write_atomicity_normal::dn)));
    }
};

/// The SMART / Health critical warning mask, then the enabled notices:
/// `smart=0x1f namespace_attribute firmware_activation discovery_log_change`.
template <>
struct fmt::formatter<nvmekit::spec::async_event_configuration> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::async_event_configuration value, FormatContext& ctx) const
        -> decltype(ctx.out())
    {
        using config = nvmekit::spec::async_event_configuration;
        auto out = fmt::format_to(ctx.out(), "smart=0x{:02x}", value.get(config::smart_critical_warnings));
        bool first = false;
        return nvmekit::detail::append_flags(
            out, first,
            {{value.get(config::namespace_attribute_notices), "namespace_attribute"},
             {value.get(config::firmware_activation_notices), "firmware_activation"},
             {value.get(config::telemetry_log_notices), "telemetry_log"},
             {value.get(config::ana_change_notices), "ana_change"},
             {value.get(config::predictable_latency_notices), "predictable_latency"},
             {value.get(config::lba_status_information_notices), "lba_status_information"},
             {value.get(config::endurance_group_event_notices), "endurance_group_event"},
             {value.get(config::normal_subsystem_shutdown_notices), "normal_subsystem_shutdown"},
             {value.get(config::discovery_log_change_notices), "discovery_log_change"}});
    }
};

/// `apste=1`.
template <>
struct fmt::formatter<nvmekit::spec::autonomous_power_state_transition> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::autonomous_power_state_transition value, FormatContext& ctx) const
        -> decltype(ctx.out())
    {
        using nvmekit::detail::features_format::bit;
        return fmt::format_to(ctx.out(), "apste={}",
                              bit(value.get(nvmekit::spec::autonomous_power_state_transition::apste)));
    }
};

/// `itps=3 itpt=100` (ITPT in milliseconds).
template <>
struct fmt::formatter<nvmekit::spec::apst_entry> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::apst_entry value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        using nvmekit::spec::apst_entry;
        return fmt::format_to(ctx.out(), "itps={} itpt={}", value.get(apst_entry::itps),
                              value.get(apst_entry::itpt));
    }
};

/// `ehm=1 mr=0`.
template <>
struct fmt::formatter<nvmekit::spec::host_memory_buffer> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::host_memory_buffer value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        using nvmekit::detail::features_format::bit;
        using nvmekit::spec::host_memory_buffer;
        return fmt::format_to(ctx.out(), "ehm={} mr={}", bit(value.get(host_memory_buffer::ehm)),
                              bit(value.get(host_memory_buffer::mr)));
    }
};

/// `reset`, `set_features`, or `reserved(2)`.
template <>
struct fmt::formatter<nvmekit::spec::timestamp_origin> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::timestamp_origin value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        switch (value) {
        case nvmekit::spec::timestamp_origin::reset: return fmt::format_to(ctx.out(), "reset");
        case nvmekit::spec::timestamp_origin::set_features: return fmt::format_to(ctx.out(), "set_features");
        }
        return fmt::format_to(ctx.out(), "reserved({})", static_cast<unsigned>(value));
    }
};

/// `synch=0 origin=set_features`.
template <>
struct fmt::formatter<nvmekit::spec::timestamp_attributes> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::timestamp_attributes value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        using nvmekit::detail::features_format::bit;
        using nvmekit::spec::timestamp_attributes;
        return fmt::format_to(ctx.out(), "synch={} origin={}", bit(value.get(timestamp_attributes::synch)),
                              value.get(timestamp_attributes::origin));
    }
};

/// `timestamp=1650000000000 synch=0 origin=set_features` (milliseconds since the Unix epoch).
template <>
struct fmt::formatter<nvmekit::spec::timestamp_data> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(const nvmekit::spec::timestamp_data& value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        return fmt::format_to(ctx.out(), "timestamp={} {}", value.milliseconds(), value.attributes);
    }
};

/// `kato=120000` (milliseconds).
template <>
struct fmt::formatter<nvmekit::spec::keep_alive_timer> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::keep_alive_timer value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        return fmt::format_to(ctx.out(), "kato={}", value.get(nvmekit::spec::keep_alive_timer::kato));
    }
};

/// `tmt1=353 tmt2=363` (Kelvin).
template <>
struct fmt::formatter<nvmekit::spec::host_controlled_thermal_management> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::host_controlled_thermal_management value, FormatContext& ctx) const
        -> decltype(ctx.out())
    {
        using nvmekit::spec::host_controlled_thermal_management;
        return fmt::format_to(ctx.out(), "tmt1={} tmt2={}",
                              value.get(host_controlled_thermal_management::tmt1),
                              value.get(host_controlled_thermal_management::tmt2));
    }
};

/// `noppme=1`.
template <>
struct fmt::formatter<nvmekit::spec::non_operational_power_state_config> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::non_operational_power_state_config value, FormatContext& ctx) const
        -> decltype(ctx.out())
    {
        using nvmekit::detail::features_format::bit;
        return fmt::format_to(ctx.out(), "noppme={}",
                              bit(value.get(nvmekit::spec::non_operational_power_state_config::noppme)));
    }
};

/// `acre=1 etdas=0 lbafee=1`.
template <>
struct fmt::formatter<nvmekit::spec::host_behavior_support> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(const nvmekit::spec::host_behavior_support& value, FormatContext& ctx) const
        -> decltype(ctx.out())
    {
        return fmt::format_to(ctx.out(), "acre={} etdas={} lbafee={}", value.acre, value.etdas, value.lbafee);
    }
};
