#pragma once
/// The SMART / Health Information log (log 02h, Base 2.0 5.16.1.3): lifetime counters, the
/// temperature state and the critical warnings, and the edge-triggered temperature threshold
/// event (Base 2.0 5.2.1, 5.27.1.3).
///
/// Counters are kept in the units the embedder sees (512-byte units, nanoseconds) and converted
/// to the log's units when the log is built: data units of 1000 x 512 bytes rounded up, minutes
/// and hours rounded down.

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>

#include <nvmekit/config.hpp>
#include <nvmekit/spec/log_pages.hpp>

NVMEKIT_BEGIN_NAMESPACE

/// Lifetime counters of the SMART / Health log. Plain data, so an embedder can persist and
/// restore them across power cycles ("retained across power cycles", Base 2.0 5.16.1.3).
struct health_counters {
    std::uint64_t read_512_units = 0;      ///< data read by the host, 512-byte units, no metadata
    std::uint64_t written_512_units = 0;   ///< data written by the host, 512-byte units, no metadata
    std::uint64_t host_read_commands = 0;  ///< Compare, Read, Verify completed (NVM Command Set)
    std::uint64_t host_write_commands = 0; ///< Write, Write Uncorrectable, Write Zeroes completed
    std::chrono::nanoseconds controller_busy_time{0}; ///< time with I/O commands outstanding
    std::uint64_t power_cycles = 0;
    std::uint64_t unsafe_shutdowns = 0;
    std::uint64_t media_errors = 0;      ///< unrecovered data integrity errors
    std::uint64_t error_log_entries = 0; ///< Error Information log entries over the controller's life
    std::chrono::nanoseconds warning_temperature_time{0};  ///< WCTEMP <= composite < CCTEMP
    std::chrono::nanoseconds critical_temperature_time{0}; ///< composite >= CCTEMP

    friend constexpr bool operator==(const health_counters&, const health_counters&) noexcept = default;
};

/// Data Units Read / Written: thousands of 512-byte units, rounded up (1 to 1000 units -> 1,
/// 1001 -> 2), Base 2.0 5.16.1.3.
[[nodiscard]] constexpr std::uint64_t data_units(std::uint64_t units_512) noexcept
{
    return units_512 / 1000 + (units_512 % 1000 != 0 ? 1U : 0U);
}

/// 512-byte units of a transfer of `bytes`, rounded up (an LBA size other than 512 bytes is
/// converted to 512-byte units, Base 2.0 5.16.1.3).
[[nodiscard]] constexpr std::uint64_t units_512(std::uint64_t bytes) noexcept
{
    return bytes / 512 + (bytes % 512 != 0 ? 1U : 0U);
}

/// Conditions the caller knows about that set Critical Warning bits (Base 2.0 Figure 207).
struct health_conditions {
    bool reliability_degraded = false;   ///< bit 02: significant media or internal errors
    bool read_only = false;              ///< bit 03: all media placed in read-only mode
    bool volatile_backup_failed = false; ///< bit 04: volatile memory backup device failed
    bool pmr_read_only = false;          ///< bit 05: Persistent Memory Region read-only or unreliable
};

class health_log {
public:
    /// 35 degrees Celsius.
    static constexpr std::uint16_t default_composite_kelvin = 308;
    static constexpr std::size_t sensor_count = 8;

    explicit health_log(std::uint16_t composite_kelvin = default_composite_kelvin) noexcept
        : composite_kelvin_{composite_kelvin}
    {}

    [[nodiscard]] health_counters& counters() noexcept { return counters_; }
    [[nodiscard]] const health_counters& counters() const noexcept { return counters_; }

    /// A completed host read command (Compare, Read, Verify) of `bytes` of data.
    void record_read(std::uint64_t bytes) noexcept
    {
        ++counters_.host_read_commands;
        counters_.read_512_units += units_512(bytes);
    }
    /// A completed host write command (Write, Write Uncorrectable, Write Zeroes); `bytes` is the
    /// data written (0 for commands that transfer none, such as Write Uncorrectable).
    void record_write(std::uint64_t bytes) noexcept
    {
        ++counters_.host_write_commands;
        counters_.written_512_units += units_512(bytes);
    }
    /// Time during which at least one I/O command was outstanding.
    void add_busy_time(std::chrono::nanoseconds busy) noexcept { counters_.controller_busy_time += busy; }
    /// A power-on: counts a power cycle, and an unsafe shutdown when the previous power-off came
    /// without a shutdown notification (CC.SHN) completing.
    void record_power_on(bool previous_shutdown_unsafe) noexcept
    {
        ++counters_.power_cycles;
        if (previous_shutdown_unsafe) {
            ++counters_.unsafe_shutdowns;
        }
    }
    /// An unrecovered data integrity error (ECC, CRC or LBA tag mismatch).
    void record_media_error() noexcept { ++counters_.media_errors; }
    /// An entry added to the Error Information log (call with each `error_log::record`).
    void record_error_log_entry() noexcept { ++counters_.error_log_entries; }

    /// Composite Temperature in Kelvin, as the embedder's thermal model sets it.
    void set_composite_temperature(std::uint16_t kelvin) noexcept { composite_kelvin_ = kelvin; }
    [[nodiscard]] std::uint16_t composite_temperature() const noexcept { return composite_kelvin_; }
    /// Temperature Sensor `sensor` (1 to 8) in Kelvin; 0 means not implemented.
    void set_sensor_temperature(std::size_t sensor, std::uint16_t kelvin) noexcept
    {
        NVMEKIT_ASSERT(sensor >= 1 && sensor <= sensor_count, "temperature sensors are numbered 1 to 8");
        sensors_[sensor - 1] = kelvin;
    }
    [[nodiscard]] std::uint16_t sensor_temperature(std::size_t sensor) const noexcept
    {
        NVMEKIT_ASSERT(sensor >= 1 && sensor <= sensor_count, "temperature sensors are numbered 1 to 8");
        return sensors_[sensor - 1];
    }

    /// Available Spare, Available Spare Threshold (percent, 0 to 100) and Percentage Used (may
    /// exceed 100, saturates at 255). Defaults: 100, 10, 0.
    void set_wear(std::uint8_t available_spare, std::uint8_t spare_threshold,
                  std::uint8_t percentage_used) noexcept
    {
        available_spare_ = available_spare;
        spare_threshold_ = spare_threshold;
        percentage_used_ = percentage_used;
    }

    /// Whether the composite temperature meets a threshold: >= the over temperature threshold or
    /// <= the under temperature threshold (Base 2.0 Figure 207 bit 01, 5.27.1.3).
    [[nodiscard]] bool temperature_condition(std::uint16_t over_threshold_k,
                                             std::uint16_t under_threshold_k) const noexcept
    {
        return composite_kelvin_ >= over_threshold_k || composite_kelvin_ <= under_threshold_k;
    }

    /// Adds `elapsed` operating time at the current composite temperature to the Warning or
    /// Critical Composite Temperature Time. `wctemp` and `cctemp` are the Identify Controller
    /// thresholds in Kelvin; a zero threshold disables the counter it bounds (warning time needs
    /// both, critical time needs CCTEMP), Base 2.0 5.16.1.3.
    void account_temperature_time(std::chrono::nanoseconds elapsed, std::uint16_t wctemp,
                                  std::uint16_t cctemp) noexcept
    {
        if (cctemp == 0) {
            return;
        }
        if (composite_kelvin_ >= cctemp) {
            counters_.critical_temperature_time += elapsed;
        } else if (wctemp != 0 && composite_kelvin_ >= wctemp) {
            counters_.warning_temperature_time += elapsed;
        }
    }

    /// Reports a SMART / Health Temperature Threshold event once when the temperature condition
    /// becomes true; it re-arms when the condition clears. The caller posts the asynchronous event
    /// (if enabled in Asynchronous Event Configuration) with `spec::async_event_completion{event}`.
    std::optional<spec::smart_health_event> evaluate_temperature(std::uint16_t over_threshold_k,
                                                                 std::uint16_t under_threshold_k) noexcept
    {
        const bool condition = temperature_condition(over_threshold_k, under_threshold_k);
        const bool rising = condition && !temperature_reported_;
        temperature_reported_ = condition;
        if (rising) {
            return spec::smart_health_event::temperature_threshold;
        }
        return std::nullopt;
    }

    /// The log page. `powered_on_time` is the controller's total powered-on time (the embedder
    /// adds the time persisted from earlier power cycles); the thresholds are the current
    /// composite Temperature Threshold feature values (FID 04h, TMPSEL 0h) in Kelvin.
    [[nodiscard]] spec::smart_health_log build(std::chrono::nanoseconds powered_on_time,
                                               std::uint16_t over_threshold_k,
                                               std::uint16_t under_threshold_k,
                                               health_conditions conditions = {}) const noexcept
    {
        spec::smart_health_log log{};
        spec::smart_critical_warning warning{};
        warning.set(spec::smart_critical_warning::spare_below_threshold, available_spare_ < spare_threshold_);
        warning.set(spec::smart_critical_warning::temperature,
                    temperature_condition(over_threshold_k, under_threshold_k));
        warning.set(spec::smart_critical_warning::reliability_degraded, conditions.reliability_degraded);
        warning.set(spec::smart_critical_warning::read_only, conditions.read_only);
        warning.set(spec::smart_critical_warning::volatile_backup_failed, conditions.volatile_backup_failed);
        warning.set(spec::smart_critical_warning::pmr_read_only, conditions.pmr_read_only);
        log.critical_warning = warning;
        log.set_composite_temperature_kelvin(composite_kelvin_);
        log.available_spare = available_spare_;
        log.available_spare_threshold = spare_threshold_;
        log.percentage_used = percentage_used_;
        log.data_units_read.set(data_units(counters_.read_512_units));
        log.data_units_written.set(data_units(counters_.written_512_units));
        log.host_read_commands.set(counters_.host_read_commands);
        log.host_write_commands.set(counters_.host_write_commands);
        log.controller_busy_time.set(whole<std::chrono::minutes>(counters_.controller_busy_time));
        log.power_cycles.set(counters_.power_cycles);
        log.power_on_hours.set(whole<std::chrono::hours>(powered_on_time));
        log.unsafe_shutdowns.set(counters_.unsafe_shutdowns);
        log.media_errors.set(counters_.media_errors);
        log.error_log_entries.set(counters_.error_log_entries);
        log.warning_temperature_time =
            saturate_32(whole<std::chrono::minutes>(counters_.warning_temperature_time));
        log.critical_temperature_time =
            saturate_32(whole<std::chrono::minutes>(counters_.critical_temperature_time));
        log.temperature_sensors = sensors_;
        return log;
    }

private:
    /// Whole `Unit`s in `time`, rounded down; 0 for a negative time.
    template <typename Unit>
    [[nodiscard]] static std::uint64_t whole(std::chrono::nanoseconds time) noexcept
    {
        return time.count() <= 0 ? 0U
                                 : static_cast<std::uint64_t>(std::chrono::duration_cast<Unit>(time).count());
    }
    [[nodiscard]] static std::uint32_t saturate_32(std::uint64_t value) noexcept
    {
        return value > std::numeric_limits<std::uint32_t>::max() ? std::numeric_limits<std::uint32_t>::max()
                                                                 : static_cast<std::uint32_t>(value);
    }

    health_counters counters_{};
    std::uint16_t composite_kelvin_;
    std::array<std::uint16_t, sensor_count> sensors_{};
    std::uint8_t available_spare_ = 100;
    std::uint8_t spare_threshold_ = 10;
    std::uint8_t percentage_used_ = 0;
    bool temperature_reported_ = false;
};

NVMEKIT_END_NAMESPACE
