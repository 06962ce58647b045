#pragma once
/// The logs and health one controller keeps for its host, and the asynchronous events that
/// announce them: Error Information (error_log.hpp), SMART / Health (health_log.hpp), Firmware
/// Slot (firmware_slots.hpp), Telemetry Host-Initiated (telemetry_log.hpp) and the Changed
/// Namespace List (Base 2.0 5.16.1.5), with the asynchronous event queue (async_events.hpp) and
/// the event types reported and not yet acknowledged (Base 2.0 5.2.2: a type stays masked until
/// the host reads its log page without Retain Asynchronous Event).
///
/// It decides nothing about when events happen: the controller records what it observed. Admin
/// context only.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include <nvmekit/config.hpp>
#include <nvmekit/spec/log_pages.hpp>
#include <nvmekit/state/async_events.hpp>
#include <nvmekit/state/error_log.hpp>
#include <nvmekit/state/firmware_slots.hpp>
#include <nvmekit/state/health_log.hpp>
#include <nvmekit/state/telemetry_log.hpp>

NVMEKIT_BEGIN_NAMESPACE

struct controller_logs_config {
    std::string firmware_revision;          ///< the revision in slot 1 at power-on
    std::array<std::uint8_t, 3> ieee_oui{}; ///< for the telemetry log's header
    std::size_t async_event_requests = 4;   ///< outstanding Asynchronous Event Requests (AERL + 1)
};

class controller_logs {
public:
    explicit controller_logs(const controller_logs_config& config)
        : firmware_{firmware_slots_config{.initial_revision = config.firmware_revision}}
        , telemetry_{telemetry_config{.ieee_oui = config.ieee_oui}}
        , events_{config.async_event_requests}
    {}

    [[nodiscard]] error_log& errors() noexcept { return errors_; }
    [[nodiscard]] const error_log& errors() const noexcept { return errors_; }
    [[nodiscard]] health_log& health() noexcept { return health_; }
    [[nodiscard]] const health_log& health() const noexcept { return health_; }
    [[nodiscard]] firmware_slots& firmware() noexcept { return firmware_; }
    [[nodiscard]] const firmware_slots& firmware() const noexcept { return firmware_; }
    [[nodiscard]] telemetry_host_log& telemetry() noexcept { return telemetry_; }
    [[nodiscard]] async_event_queue& events() noexcept { return events_; }

    /// An Error Information entry; SMART / Health counts it.
    void record_error(const error_record& record)
    {
        errors_.record(record);
        health_.record_error_log_entry();
    }

    /// `count` errors whose entries newer ones would replace at once: only counted, in the Error
    /// Count and in SMART / Health.
    void skip_errors(std::uint64_t count) noexcept
    {
        errors_.skip(count);
        health_.counters().error_log_entries += count;
    }

    /// The Changed Namespace List as it stands: each NSID once in increasing order, or the
    /// overflow marker after more than 1024 changes.
    [[nodiscard]] const spec::changed_namespace_list& changed_namespaces() const noexcept { return changed_; }

    /// Namespace `nsid` was attached to or detached from the controller.
    void note_changed_namespace(std::uint32_t nsid)
    {
        if (changed_.overflowed()) {
            return;
        }
        auto& list = changed_.nsids;
        const auto end = list.begin() + static_cast<std::ptrdiff_t>(changed_count_);
        const auto at = std::lower_bound(list.begin(), end, nsid);
        if (at != end && *at == nsid) {
            return;
        }
        if (changed_count_ < list.size()) {
            std::copy_backward(at, end, end + 1);
            *at = nsid;
            ++changed_count_;
        } else {
            list = {};
            list[0] = spec::changed_namespace_list::overflow_marker;
        }
    }

    /// The host read the list without RAE: it starts empty again.
    void clear_changed_namespaces() noexcept
    {
        changed_ = {};
        changed_count_ = 0;
    }

    /// The next event to complete an outstanding Asynchronous Event Request with, if any; its type
    /// is masked from then on, until acknowledged.
    [[nodiscard]] std::optional<async_event_report> next_event_report() noexcept
    {
        auto report = events_.next_report(masked_types_);
        if (report) {
            masked_types_ |= type_bit(report->event.get(spec::async_event_completion::event_type));
        }
        return report;
    }

    /// The host read the log page of an event type without RAE: that type is reported again.
    void acknowledge_event_type(spec::async_event_type type) noexcept
    {
        masked_types_ = static_cast<std::uint8_t>(masked_types_ & ~type_bit(type));
    }

    /// Whether events of `type` wait for their log page to be read.
    [[nodiscard]] bool event_type_masked(spec::async_event_type type) const noexcept
    {
        return (masked_types_ & type_bit(type)) != 0;
    }

    /// A Controller Reset: queued events and outstanding requests are dropped and nothing is
    /// masked. The Error Information log is kept, so that a host can read why the controller
    /// failed after the reset that recovers it.
    void clear_events() noexcept
    {
        events_.clear();
        masked_types_ = 0;
    }

private:
    [[nodiscard]] static constexpr std::uint8_t type_bit(spec::async_event_type type) noexcept
    {
        return static_cast<std::uint8_t>(1U << (static_cast<unsigned>(type) & 7U));
    }

    error_log errors_;
    health_log health_{};
    firmware_slots firmware_;
    telemetry_host_log telemetry_;
    async_event_queue events_;
    std::uint8_t masked_types_ = 0; ///< bit per async_event_type reported and not yet acknowledged
    spec::changed_namespace_list changed_{};
    std::size_t changed_count_ = 0;
};

NVMEKIT_END_NAMESPACE
