#pragma once
/// The controller's features for Get Features (Base 2.0 5.15) and Set Features (Base 2.0 5.27):
/// the current, saved and default value of each controller-scope feature below, and the
/// per-feature rules of Base 2.0 5.27.1 and NVM Command Set 1.0 4.1.3.
///
///   01h Arbitration, 02h Power Management, 04h Temperature Threshold, 05h Error Recovery,
///   06h Volatile Write Cache, 0Ah Write Atomicity Normal, 0Bh Asynchronous Event
///   Configuration: saveable and changeable, value in Dword 11 / completion Dword 0.
///   0Eh Timestamp, 0Fh Keep Alive Timer, 16h Host Behavior Support: changeable, not saveable;
///   Timestamp and Host Behavior Support move an 8- and a 512-byte data buffer.
///
/// Number of Queues (07h), Interrupt Coalescing (08h) and Interrupt Vector Configuration (09h)
/// stay with the controller; `handles` says which identifiers belong here.
///
/// Saved values live as long as the table: a Controller Level Reset (`controller_reset`) and a
/// power cycle (`power_cycle`) both make the current values the saved ones, or the defaults
/// where nothing was saved (Base 2.0 5.27: a saved attribute persists through all power states
/// and resets). The table assumes the controller reports ONCS bit 4 (Save field and Select field
/// supported) set, and ONCS bit 6 (Timestamp) as `timestamp_supported` says.
///
/// A reserved coded value in a defined field (SEL, TMPSEL, THSEL, WH, a Host Behavior byte) is
/// an error, Invalid Field in Command; reserved bits are ignored and read back as 0. Every
/// failure is a status with DNR set, and a failed Set changes nothing. Nothing here allocates
/// after construction.

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <stdexcept>

#include <nvmekit/config.hpp>
#include <nvmekit/spec/features.hpp>
#include <nvmekit/spec/status.hpp>

NVMEKIT_BEGIN_NAMESPACE

/// What the controller supports, as its Identify Controller data reports it.
struct feature_table_config {
    /// Number of power states: NPSS + 1 (1 to 32).
    std::uint8_t power_states = 1;
    /// Temperature sensors besides the Composite Temperature (0 to 8).
    std::uint8_t temperature_sensors = 1;
    /// WCTEMP in Kelvin: the default over temperature threshold of the Composite Temperature. 0
    /// means the controller reports no WCTEMP: the composite then has no under temperature
    /// threshold and its over threshold defaults to FFFFh.
    std::uint16_t warning_composite_temperature = 343;
    /// VWC bit 0 of Identify Controller: without a volatile write cache Feature 06h is not
    /// supported.
    bool volatile_write_cache_present = true;
    /// Whether the namespaces report NSFEAT.DAE, so DULBE may be enabled.
    bool deallocated_error_supported = false;
    /// The Asynchronous Event Configuration bits the controller supports (bits 15:00 and 31).
    /// Default: SMART / Health critical warnings 03:00 and Namespace Attribute Notices.
    std::uint32_t supported_async_events = 0x0000'010f;
    /// KAS * 100 ms; 0 when Keep Alive is not supported (Feature 0Fh then is not either).
    std::uint32_t keep_alive_granularity_ms = 100;
    /// Whether the transport requires Keep Alive (fabrics): KATO then defaults to 120 s rounded
    /// up to the granularity and may not be set to 0.
    bool keep_alive_required = false;
    /// ONCS bit 6: whether Feature 0Eh is supported.
    bool timestamp_supported = true;
    /// Whether the timestamp keeps counting across a Controller Level Reset (with its origin)
    /// rather than restarting from 0h (Base 2.0 5.27.1.11).
    bool timestamp_kept_across_reset = false;
    /// Default Arbitration value (implementation specific): no burst limit, all weights 0.
    spec::arbitration default_arbitration =
        spec::arbitration{}.with(spec::arbitration::ab, spec::arbitration::no_burst_limit);
};

/// Outcome of a Get or Set Features on the table: the status (DNR set on failure) and the
/// completion Dword 0.
struct feature_result {
    spec::status status = spec::status::success();
    std::uint32_t dw0 = 0;

    friend constexpr bool operator==(const feature_result&, const feature_result&) noexcept = default;
};

namespace detail {

[[nodiscard]] constexpr spec::status feature_error(auto code) noexcept
{
    return spec::status{code}.with_dnr();
}

/// Temperature thresholds: index 0 the Composite Temperature, 1 to 8 Temperature Sensors 1-8.
inline constexpr std::size_t temperature_slots = 9;

/// Bits of the Asynchronous Event Configuration value that name an event (Base 2.0 5.27.1.8).
inline constexpr std::uint32_t async_event_defined_bits = 0x8000'ffff;

} // namespace detail

class feature_table {
public:
    /// Keep Alive Timeout default where the transport requires Keep Alive (Base 2.0 5.27.1.12).
    static constexpr std::uint32_t required_keep_alive_default_ms = 120'000;

    /// A table in its power-on state at time `now` (the origin of the timestamp before the host
    /// sets one). Throws std::invalid_argument when `config` is out of range.
    explicit feature_table(feature_table_config config = {}, std::chrono::nanoseconds now = {})
        : config_{checked(config)}
        , defaults_{make_defaults(config_)}
        , saved_{defaults_}
        , current_{defaults_}
        , reset_at_{now}
    {}

    [[nodiscard]] const feature_table_config& config() const noexcept { return config_; }

    /// Whether this table handles `fid` (the controller dispatches the others itself).
    [[nodiscard]] static constexpr bool handles(spec::feature_id fid) noexcept
    {
        using enum spec::feature_id;
        switch (fid) {
        case arbitration:
        case power_management:
        case temperature_threshold:
        case error_recovery:
        case volatile_write_cache:
        case write_atomicity_normal:
        case async_event_configuration:
        case timestamp:
        case keep_alive_timer:
        case host_behavior_support: return true;
        default: return false;
        }
    }

    /// Whether the feature moves data (the controller transfers the buffer): Timestamp, Host
    /// Behavior Support.
    [[nodiscard]] static constexpr bool has_data_buffer(spec::feature_id fid) noexcept
    {
        return fid == spec::feature_id::timestamp || fid == spec::feature_id::host_behavior_support;
    }

    /// For SEL = Supported Capabilities (Base 2.0 5.15): saveable / namespace specific /
    /// changeable bits; 0 for an identifier the table does not handle. Error Recovery applies to
    /// a namespace (NVM Command Set 1.0 4.1.3.2), so it reports namespace specific even though
    /// the table keeps one value for all namespaces.
    [[nodiscard]] static constexpr spec::feature_capabilities capabilities(spec::feature_id fid) noexcept
    {
        using enum spec::feature_id;
        const auto changeable =
            spec::feature_capabilities{}.with(spec::feature_capabilities::changeable, true);
        const auto saveable = changeable.with(spec::feature_capabilities::saveable, true);
        switch (fid) {
        case arbitration:
        case power_management:
        case temperature_threshold:
        case volatile_write_cache:
        case write_atomicity_normal:
        case async_event_configuration: return saveable;
        case error_recovery: return saveable.with(spec::feature_capabilities::namespace_specific, true);
        case timestamp:
        case keep_alive_timer:
        case host_behavior_support: return changeable;
        default: return spec::feature_capabilities{};
        }
    }

    /// Get Features (Base 2.0 5.15) of a handled feature: the value SEL selects in Dword 0
    /// (Temperature Threshold: the threshold CDW11's TMPSEL and THSEL select, in the CDW11
    /// layout). For Timestamp and Host Behavior Support Dword 0 is 0 (or the capabilities) and
    /// the data comes from get_timestamp / get_host_behavior. Invalid Field in Command for an
    /// identifier not handled or not supported, a reserved SEL, or a threshold that is not
    /// implemented.
    [[nodiscard]] feature_result get(spec::feature_id fid, spec::feature_select select,
                                     std::uint32_t cdw11) const
    {
        if (const auto status = check_get(fid, select); !status.is_success()) {
            return {status};
        }
        if (select == spec::feature_select::supported_capabilities) {
            return {spec::status::success(), capabilities(fid).raw};
        }
        const values& source = selected(select);
        using enum spec::feature_id;
        switch (fid) {
        case arbitration: return {spec::status::success(), source.arbitration.raw};
        case power_management: return {spec::status::success(), source.power_management.raw};
        case temperature_threshold: return get_temperature_threshold(source, cdw11);
        case error_recovery: return {spec::status::success(), source.error_recovery.raw};
        case volatile_write_cache: return {spec::status::success(), source.volatile_write_cache.raw};
        case write_atomicity_normal: return {spec::status::success(), source.write_atomicity_normal.raw};
        case async_event_configuration:
            return {spec::status::success(), source.async_event_configuration.raw};
        case keep_alive_timer: return {spec::status::success(), source.keep_alive_timeout_ms};
        default: return {};
        }
    }

    /// Set Features (Base 2.0 5.27) of a feature whose value is CDW11. `save` = SV: a feature
    /// that is not saveable -> Feature Identifier Not Saveable. Timestamp and Host Behavior
    /// Support go through the data calls (Invalid Field in Command here). A value is checked
    /// before anything changes; a failed command changes nothing.
    feature_result set(spec::feature_id fid, std::uint32_t cdw11, bool save)
    {
        if (const auto status = check_set(fid, save); !status.is_success()) {
            return {status};
        }
        using enum spec::feature_id;
        switch (fid) {
        case arbitration: return set_arbitration(spec::arbitration{cdw11}, save);
        case power_management: return set_power_management(spec::power_management{cdw11}, save);
        case temperature_threshold:
            return set_temperature_threshold(spec::temperature_threshold{cdw11}, save);
        case error_recovery: return set_error_recovery(spec::error_recovery{cdw11}, save);
        case volatile_write_cache: return set_volatile_write_cache(spec::volatile_write_cache{cdw11}, save);
        case write_atomicity_normal:
            return set_write_atomicity_normal(spec::write_atomicity_normal{cdw11}, save);
        case async_event_configuration:
            return set_async_event_configuration(spec::async_event_configuration{cdw11}, save);
        case keep_alive_timer: return set_keep_alive_timer(spec::keep_alive_timer{cdw11});
        default: return {detail::feature_error(spec::generic_status::invalid_field)};
        }
    }

    /// Set Features Timestamp (Base 2.0 5.27.1.11) with the 8-byte buffer the host sent: the
    /// timestamp counts on from its TSTMP at time `now` with origin 001b. Bytes 07:06 are
    /// reserved and ignored. Not saveable.
    feature_result set_timestamp(const spec::timestamp_data& data, std::chrono::nanoseconds now, bool save)
    {
        if (const auto status = check_set(spec::feature_id::timestamp, save); !status.is_success()) {
            return {status};
        }
        host_timestamp_ms_ = data.milliseconds() & spec::timestamp_data::max_milliseconds;
        timestamp_set_at_ = now;
        timestamp_host_set_ = true;
        return {};
    }

    /// The current Timestamp data structure at time `now` (Base 2.0 5.27.1.11): origin 000b and
    /// the milliseconds since the last Controller Level Reset until the host sets a value, then
    /// origin 001b and that value plus the milliseconds since, modulo 2^48. Synch is 0: the
    /// count never stops. A `now` before the reference time counts as no time elapsed.
    [[nodiscard]] spec::timestamp_data timestamp(std::chrono::nanoseconds now) const noexcept
    {
        if (timestamp_host_set_) {
            return make_timestamp(host_timestamp_ms_ + elapsed_ms(timestamp_set_at_, now),
                                  spec::timestamp_origin::set_features);
        }
        return make_timestamp(elapsed_ms(reset_at_, now), spec::timestamp_origin::reset);
    }

    /// Get Features Timestamp: checks as `get` does and, for SEL current, default or saved,
    /// fills `out` (the default and saved values are the count since the last Controller Level
    /// Reset, origin 000b, as the feature is not saveable). For SEL Supported Capabilities Dword
    /// 0 holds the capabilities and `out` is left alone: no data is transferred.
    feature_result get_timestamp(spec::feature_select select, std::chrono::nanoseconds now,
                                 spec::timestamp_data& out) const
    {
        if (const auto status = check_get(spec::feature_id::timestamp, select); !status.is_success()) {
            return {status};
        }
        if (select == spec::feature_select::supported_capabilities) {
            return {spec::status::success(), capabilities(spec::feature_id::timestamp).raw};
        }
        out = select == spec::feature_select::current
                  ? timestamp(now)
                  : make_timestamp(elapsed_ms(reset_at_, now), spec::timestamp_origin::reset);
        return {};
    }

    /// Set Features Host Behavior Support (Base 2.0 5.27.1.18) with the 512-byte buffer the
    /// host sent: ACRE, ETDAS and LBAFEE take 0h or 1h, any other value is a reserved code ->
    /// Invalid Field in Command. Reserved bytes 511:03 are ignored and read back as 0h. Not
    /// saveable.
    feature_result set_host_behavior(const spec::host_behavior_support& data, bool save)
    {
        if (const auto status = check_set(spec::feature_id::host_behavior_support, save);
            !status.is_success()) {
            return {status};
        }
        if (data.acre > 1 || data.etdas > 1 || data.lbafee > 1) {
            return {detail::feature_error(spec::generic_status::invalid_field)};
        }
        current_.host_behavior = spec::host_behavior_support{};
        current_.host_behavior.acre = data.acre;
        current_.host_behavior.etdas = data.etdas;
        current_.host_behavior.lbafee = data.lbafee;
        return {};
    }

    /// The current Host Behavior Support data structure.
    [[nodiscard]] const spec::host_behavior_support& host_behavior() const noexcept
    {
        return current_.host_behavior;
    }

    /// Get Features Host Behavior Support: as get_timestamp, with `out` the selected structure
    /// (default and saved: all bytes 0h).
    feature_result get_host_behavior(spec::feature_select select, spec::host_behavior_support& out) const
    {
        if (const auto status = check_get(spec::feature_id::host_behavior_support, select);
            !status.is_success()) {
            return {status};
        }
        if (select == spec::feature_select::supported_capabilities) {
            return {spec::status::success(), capabilities(spec::feature_id::host_behavior_support).raw};
        }
        out = selected(select).host_behavior;
        return {};
    }

    /// Controller Level Reset at time `now` (Base 2.0 3.7.2 and 5.27): every current value
    /// reverts to its saved value, or its default where none was saved. The timestamp restarts
    /// from 0h with origin 000b unless `timestamp_kept_across_reset`.
    void controller_reset(std::chrono::nanoseconds now) noexcept
    {
        current_ = saved_;
        if (!config_.timestamp_kept_across_reset) {
            restart_timestamp(now);
        }
    }

    /// Power cycle (power loss and power on) at time `now`: saved values survive, as they are
    /// non-volatile; current values revert as at a Controller Level Reset, and the timestamp
    /// always restarts from 0h with origin 000b.
    void power_cycle(std::chrono::nanoseconds now) noexcept
    {
        current_ = saved_;
        restart_timestamp(now);
    }

    /// Current Volatile Write Cache Enable (false when no cache is present).
    [[nodiscard]] bool volatile_write_cache_enabled() const noexcept
    {
        return config_.volatile_write_cache_present &&
               current_.volatile_write_cache.get(spec::volatile_write_cache::wce);
    }
    /// Current Keep Alive Timeout in milliseconds (0 = disabled), rounded up to the granularity.
    [[nodiscard]] std::uint32_t keep_alive_timeout_ms() const noexcept
    {
        return current_.keep_alive_timeout_ms;
    }
    /// Current Asynchronous Event Configuration (only supported event bits).
    [[nodiscard]] spec::async_event_configuration async_event_configuration() const noexcept
    {
        return current_.async_event_configuration;
    }
    /// Current over temperature threshold (Kelvin) of `sensor`: 0 the Composite Temperature, 1
    /// to 8 a Temperature Sensor. `sensor` must be at most config().temperature_sensors.
    [[nodiscard]] std::uint16_t over_temperature_threshold(unsigned sensor) const noexcept
    {
        NVMEKIT_ASSERT(sensor <= config_.temperature_sensors, "feature_table: no such temperature sensor");
        return current_.over_threshold[sensor % detail::temperature_slots];
    }
    /// Current under temperature threshold (Kelvin) of `sensor`, as over_temperature_threshold.
    [[nodiscard]] std::uint16_t under_temperature_threshold(unsigned sensor) const noexcept
    {
        NVMEKIT_ASSERT(sensor <= config_.temperature_sensors, "feature_table: no such temperature sensor");
        return current_.under_threshold[sensor % detail::temperature_slots];
    }
    /// Current Error Recovery value (TLER, DULBE).
    [[nodiscard]] spec::error_recovery error_recovery() const noexcept { return current_.error_recovery; }
    /// Current power state.
    [[nodiscard]] std::uint8_t power_state() const noexcept
    {
        return current_.power_management.get(spec::power_management::ps);
    }
    /// Current Power Management value (PS and WH).
    [[nodiscard]] spec::power_management power_management() const noexcept
    {
        return current_.power_management;
    }
    /// Current Arbitration value.
    [[nodiscard]] spec::arbitration arbitration() const noexcept { return current_.arbitration; }
    /// Current Write Atomicity Normal Disable Normal bit.
    [[nodiscard]] bool write_atomicity_disable_normal() const noexcept
    {
        return current_.write_atomicity_normal.get(spec::write_atomicity_normal::dn);
    }

private:
    /// One full set of feature values: the table keeps the defaults, the saved and the current
    /// set. Not saveable features never change in the saved set.
    struct values {
        spec::arbitration arbitration{};
        spec::power_management power_management{};
        std::array<std::uint16_t, detail::temperature_slots> over_threshold{};
        std::array<std::uint16_t, detail::temperature_slots> under_threshold{};
        spec::error_recovery error_recovery{};
        spec::volatile_write_cache volatile_write_cache{};
        spec::write_atomicity_normal write_atomicity_normal{};
        spec::async_event_configuration async_event_configuration{};
        std::uint32_t keep_alive_timeout_ms = 0;
        spec::host_behavior_support host_behavior{};
    };

    /// Workload Hint values above this are reserved (Base 2.0 5.27.1.2, Workload Hints).
    static constexpr std::uint8_t max_workload_hint = 0b010;
    /// Temperature Sensor 8, the highest TMPSEL naming one sensor.
    static constexpr std::uint8_t last_sensor = 8;

    static feature_table_config checked(const feature_table_config& config)
    {
        if (config.power_states < 1 || config.power_states > 32) {
            throw std::invalid_argument{"feature_table: power_states (NPSS + 1) must be 1 to 32"};
        }
        if (config.temperature_sensors > last_sensor) {
            throw std::invalid_argument{"feature_table: temperature_sensors must be 0 to 8"};
        }
        if ((config.supported_async_events & ~detail::async_event_defined_bits) != 0) {
            throw std::invalid_argument{"feature_table: supported_async_events names reserved bits"};
        }
        if (config.keep_alive_granularity_ms % 100 != 0 ||
            config.keep_alive_granularity_ms > 0xffffU * 100U) {
            throw std::invalid_argument{
                "feature_table: keep_alive_granularity_ms must be KAS * 100 (KAS 0 to 65535)"};
        }
        if (config.keep_alive_required && config.keep_alive_granularity_ms == 0) {
            throw std::invalid_argument{
                "feature_table: keep_alive_required needs a keep_alive_granularity_ms"};
        }
        return config;
    }

    /// `value` rounded up to a multiple of `granularity` (non-zero); above 2^32 - 1 when it does
    /// not fit the KATO field.
    [[nodiscard]] static constexpr std::uint64_t round_up(std::uint64_t value,
                                                          std::uint64_t granularity) noexcept
    {
        return (value + granularity - 1) / granularity * granularity;
    }

    static values make_defaults(const feature_table_config& config)
    {
        values v{};
        v.arbitration = spec::arbitration{config.default_arbitration.raw & arbitration_mask()};
        // Temperature Threshold defaults (Base 2.0 5.27.1.3): the composite's over threshold is
        // WCTEMP when reported, the sensors' over thresholds FFFFh, every under threshold 0h.
        v.over_threshold.fill(0xffff);
        if (config.warning_composite_temperature != 0) {
            v.over_threshold[0] = config.warning_composite_temperature;
        }
        v.volatile_write_cache = spec::volatile_write_cache{}.with(spec::volatile_write_cache::wce, true);
        if (config.keep_alive_required) {
            v.keep_alive_timeout_ms = static_cast<std::uint32_t>(
                round_up(required_keep_alive_default_ms, config.keep_alive_granularity_ms));
        }
        return v;
    }

    /// Arbitration bits 07:03 are reserved (Base 2.0 5.27.1.1).
    [[nodiscard]] static constexpr std::uint32_t arbitration_mask() noexcept
    {
        return spec::arbitration::ab.mask | spec::arbitration::lpw.mask | spec::arbitration::mpw.mask |
               spec::arbitration::hpw.mask;
    }

    /// Whether the controller supports `fid` with this configuration (a handled feature may be
    /// absent: no volatile write cache, KAS 0, ONCS Timestamp clear).
    [[nodiscard]] bool supported(spec::feature_id fid) const noexcept
    {
        switch (fid) {
        case spec::feature_id::volatile_write_cache: return config_.volatile_write_cache_present;
        case spec::feature_id::keep_alive_timer: return config_.keep_alive_granularity_ms != 0;
        case spec::feature_id::timestamp: return config_.timestamp_supported;
        default: return handles(fid);
        }
    }

    [[nodiscard]] spec::status check_get(spec::feature_id fid, spec::feature_select select) const noexcept
    {
        if (!supported(fid)) {
            return detail::feature_error(spec::generic_status::invalid_field);
        }
        switch (select) {
        case spec::feature_select::current:
        case spec::feature_select::default_value:
        case spec::feature_select::saved:
        case spec::feature_select::supported_capabilities: return spec::status::success();
        }
        return detail::feature_error(spec::generic_status::invalid_field);
    }

    [[nodiscard]] spec::status check_set(spec::feature_id fid, bool save) const noexcept
    {
        if (!supported(fid)) {
            return detail::feature_error(spec::generic_status::invalid_field);
        }
        if (save && !capabilities(fid).get(spec::feature_capabilities::saveable)) {
            return detail::feature_error(spec::command_specific_status::feature_not_saveable);
        }
        return spec::status::success();
    }

    /// The set SEL current, default or saved picks (a feature never saved reads its default,
    /// which the saved set starts as).
    [[nodiscard]] const values& selected(spec::feature_select select) const noexcept
    {
        switch (select) {
        case spec::feature_select::default_value: return defaults_;
        case spec::feature_select::saved: return saved_;
        default: return current_;
        }
    }

    /// Applies `update` to the current values and, with SV, to the saved ones.
    template <typename Update>
    void commit(bool save, Update update) noexcept
    {
        update(current_);
        if (save) {
            update(saved_);
        }
    }

    /// Whether `sensor` (0 composite, 1-8) has a threshold of `type` (Base 2.0 5.27.1.3): the
    /// composite always has an over threshold and an under one when WCTEMP is reported; an
    /// implemented sensor has both.
    [[nodiscard]] bool threshold_implemented(unsigned sensor, spec::threshold_type type) const noexcept
    {
        if (sensor == 0) {
            return type == spec::threshold_type::over || config_.warning_composite_temperature != 0;
        }
        return sensor <= config_.temperature_sensors;
    }

    [[nodiscard]] static bool valid_threshold_type(spec::threshold_type type) noexcept
    {
        return type == spec::threshold_type::over || type == spec::threshold_type::under;
    }

    [[nodiscard]] static std::array<std::uint16_t, detail::temperature_slots>&
    thresholds(values& v, spec::threshold_type type) noexcept
    {
        return type == spec::threshold_type::over ? v.over_threshold : v.under_threshold;
    }

    /// TMPSEL 1111b is reserved in Get Features, as are 1001b-1110b; THSEL 10b and 11b are
    /// reserved (Base 2.0 5.27.1.3).
    [[nodiscard]] feature_result get_temperature_threshold(const values& source,
                                                           std::uint32_t cdw11) const noexcept
    {
        const spec::temperature_threshold request{cdw11};
        const auto type = request.get(spec::temperature_threshold::thsel);
        const auto sensor = static_cast<unsigned>(request.get(spec::temperature_threshold::tmpsel));
        if (!valid_threshold_type(type) || sensor > last_sensor || !threshold_implemented(sensor, type)) {
            return {detail::feature_error(spec::generic_status::invalid_field)};
        }
        const auto& table =
            type == spec::threshold_type::over ? source.over_threshold : source.under_threshold;
        const auto value =
            spec::temperature_threshold{}
                .with(spec::temperature_threshold::tmpth, table[sensor])
                .with(spec::temperature_threshold::tmpsel, request.get(spec::temperature_threshold::tmpsel))
                .with(spec::temperature_threshold::thsel, type);
        return {spec::status::success(), value.raw};
    }

    /// TMPSEL 1111b sets every implemented threshold of the type: the composite (when it has
    /// one of that type) and every implemented sensor.
    feature_result set_temperature_threshold(spec::temperature_threshold value, bool save) noexcept
    {
        const auto type = value.get(spec::temperature_threshold::thsel);
        const auto select = value.get(spec::temperature_threshold::tmpsel);
        const std::uint16_t kelvin = value.get(spec::temperature_threshold::tmpth);
        if (!valid_threshold_type(type)) {
            return {detail::feature_error(spec::generic_status::invalid_field)};
        }
        if (select == spec::temperature_select::all) {
            bool any = false;
            for (unsigned sensor = 0; sensor <= config_.temperature_sensors; ++sensor) {
                if (threshold_implemented(sensor, type)) {
                    commit(save, [&](values& v) { thresholds(v, type)[sensor] = kelvin; });
                    any = true;
                }
            }
            return any ? feature_result{}
                       : feature_result{detail::feature_error(spec::generic_status::invalid_field)};
        }
        const auto sensor = static_cast<unsigned>(select);
        if (sensor > last_sensor || !threshold_implemented(sensor, type)) {
            return {detail::feature_error(spec::generic_status::invalid_field)};
        }
        commit(save, [&](values& v) { thresholds(v, type)[sensor] = kelvin; });
        return {};
    }

    feature_result set_arbitration(spec::arbitration value, bool save) noexcept
    {
        const spec::arbitration stored{value.raw & arbitration_mask()};
        commit(save, [stored](values& v) { v.arbitration = stored; });
        return {};
    }

    /// WCE only: bits 31:01 are reserved (Base 2.0 5.27.1.4).
    feature_result set_volatile_write_cache(spec::volatile_write_cache value, bool save) noexcept
    {
        const auto stored = spec::volatile_write_cache{}.with(spec::volatile_write_cache::wce,
                                                              value.get(spec::volatile_write_cache::wce));
        commit(save, [stored](values& v) { v.volatile_write_cache = stored; });
        return {};
    }

    /// DN only: bits 31:01 are reserved (NVM Command Set 1.0 4.1.3.3).
    feature_result set_write_atomicity_normal(spec::write_atomicity_normal value, bool save) noexcept
    {
        const auto stored = spec::write_atomicity_normal{}.with(spec::write_atomicity_normal::dn,
                                                                value.get(spec::write_atomicity_normal::dn));
        commit(save, [stored](values& v) { v.write_atomicity_normal = stored; });
        return {};
    }

    /// Bits of events the controller does not support are reserved for it: they are dropped,
    /// not kept, and not an error (Base 2.0 5.27.1.8).
    feature_result set_async_event_configuration(spec::async_event_configuration value, bool save) noexcept
    {
        const spec::async_event_configuration stored{value.raw & config_.supported_async_events};
        commit(save, [stored](values& v) { v.async_event_configuration = stored; });
        return {};
    }

    /// PS must name a power state the controller has (NPSS); WH 011b-111b are reserved (Base
    /// 2.0 5.27.1.2).
    feature_result set_power_management(spec::power_management value, bool save) noexcept
    {
        const std::uint8_t state = value.get(spec::power_management::ps);
        const std::uint8_t hint = value.get(spec::power_management::wh);
        if (state >= config_.power_states || hint > max_workload_hint) {
            return {detail::feature_error(spec::generic_status::invalid_field)};
        }
        const auto stored = spec::power_management{}
                                .with(spec::power_management::ps, state)
                                .with(spec::power_management::wh, hint);
        commit(save, [stored](values& v) { v.power_management = stored; });
        return {};
    }

    /// DULBE may only be enabled where the namespaces support the error (NVM Command Set 1.0
    /// 4.1.3.2).
    feature_result set_error_recovery(spec::error_recovery value, bool save) noexcept
    {
        const bool dulbe = value.get(spec::error_recovery::dulbe);
        if (dulbe && !config_.deallocated_error_supported) {
            return {detail::feature_error(spec::generic_status::invalid_field)};
        }
        const auto stored = spec::error_recovery{}
                                .with(spec::error_recovery::tler, value.get(spec::error_recovery::tler))
                                .with(spec::error_recovery::dulbe, dulbe);
        commit(save, [stored](values& v) { v.error_recovery = stored; });
        return {};
    }

    /// KATO is rounded up to the KAS granularity (Base 2.0 5.27.1.12). 0 disables the timer,
    /// which a transport that requires Keep Alive refuses; so does a value that would round up
    /// past the 32-bit field: Keep Alive Timeout Invalid.
    feature_result set_keep_alive_timer(spec::keep_alive_timer value) noexcept
    {
        const std::uint32_t requested = value.get(spec::keep_alive_timer::kato);
        if (requested == 0 && config_.keep_alive_required) {
            return {detail::feature_error(spec::generic_status::keep_alive_timeout_invalid)};
        }
        const std::uint64_t rounded = round_up(requested, config_.keep_alive_granularity_ms);
        if (rounded > UINT32_MAX) {
            return {detail::feature_error(spec::generic_status::keep_alive_timeout_invalid)};
        }
        current_.keep_alive_timeout_ms = static_cast<std::uint32_t>(rounded);
        return {};
    }

    [[nodiscard]] static std::uint64_t elapsed_ms(std::chrono::nanoseconds from,
                                                  std::chrono::nanoseconds now) noexcept
    {
        if (now <= from) {
            return 0;
        }
        return static_cast<std::uint64_t>(
            std::chrono::duration_cast<std::chrono::milliseconds>(now - from).count());
    }

    [[nodiscard]] static spec::timestamp_data make_timestamp(std::uint64_t milliseconds,
                                                             spec::timestamp_origin origin) noexcept
    {
        spec::timestamp_data data{};
        data.set_milliseconds(milliseconds & spec::timestamp_data::max_milliseconds);
        data.attributes = spec::timestamp_attributes{}
                              .with(spec::timestamp_attributes::synch, false)
                              .with(spec::timestamp_attributes::origin, origin);
        return data;
    }

    void restart_timestamp(std::chrono::nanoseconds now) noexcept
    {
        timestamp_host_set_ = false;
        host_timestamp_ms_ = 0;
        timestamp_set_at_ = {};
        reset_at_ = now;
    }

    feature_table_config config_;
    values defaults_;
    values saved_;
    values current_;
    std::chrono::nanoseconds reset_at_{};
    std::chrono::nanoseconds timestamp_set_at_{};
    std::uint64_t host_timestamp_ms_ = 0;
    bool timestamp_host_set_ = false;
};

NVMEKIT_END_NAMESPACE
