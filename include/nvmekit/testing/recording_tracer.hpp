#pragma once
/// A Tracer for tests: records every event in order, so a test can assert the exact events a
/// host mistake or a command causes.
///
/// A controller traces from several threads at once with concurrent poll groups: trace(),
/// snapshot(), clear() and the filters hold an internal mutex and are safe to call meanwhile.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <mutex>
#include <vector>

#include <nvmekit/config.hpp>
#include <nvmekit/contracts/tracer.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace testing {

/// Records trace events; models Tracer.
class recording_tracer {
public:
    recording_tracer() = default;
    recording_tracer(const recording_tracer&) = delete;
    recording_tracer& operator=(const recording_tracer&) = delete;

    void trace(const trace_record& record)
    {
        const std::lock_guard lock{mutex_};
        records_.push_back(record);
    }

    /// Every event recorded so far, in order.
    [[nodiscard]] std::vector<trace_record> snapshot() const
    {
        const std::lock_guard lock{mutex_};
        return records_;
    }

    /// The host mistakes recorded so far (is_host_error), in order.
    [[nodiscard]] std::vector<trace_record> host_errors() const
    {
        const std::lock_guard lock{mutex_};
        std::vector<trace_record> errors;
        std::copy_if(records_.begin(), records_.end(), std::back_inserter(errors),
                     [](const trace_record& record) { return is_host_error(record.event); });
        return errors;
    }

    /// The events of command `cid` on SQ `qid` (carries_command), in order.
    [[nodiscard]] std::vector<trace_record> command_events(std::uint16_t qid, std::uint16_t cid) const
    {
        const std::lock_guard lock{mutex_};
        std::vector<trace_record> events;
        std::copy_if(records_.begin(), records_.end(), std::back_inserter(events),
                     [&](const trace_record& record) {
                         return carries_command(record.event) && record.qid == qid && record.cid == cid;
                     });
        return events;
    }

    /// How many `event`s were recorded.
    [[nodiscard]] std::size_t count(trace_event event) const
    {
        const std::lock_guard lock{mutex_};
        return static_cast<std::size_t>(
            std::count_if(records_.begin(), records_.end(),
                          [&](const trace_record& record) { return record.event == event; }));
    }

    void clear()
    {
        const std::lock_guard lock{mutex_};
        records_.clear();
    }

private:
    mutable std::mutex mutex_;
    std::vector<trace_record> records_;
};

static_assert(Tracer<recording_tracer>);

} // namespace testing
NVMEKIT_END_NAMESPACE
