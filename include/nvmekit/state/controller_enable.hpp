#pragma once
/// What a write to CC asks of the reset state machine, and whether the registers allow CC.EN = 1:
/// the register semantics BAR0 and a fabrics Property Set share (Base 2.0 3.1.4.5, 3.5.1).
///
///     for (const controller_event event : cc_write_events(old_cc, new_cc)) {
///         state_machine.handle(event);
///     }
///     if (const auto refusal = enable_refusal(registers, admin_queue_connected)) {
///         tracer.trace({.event = refusal->event, .value = refusal->value});  // stays disabled
///     }

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>

#include <nvmekit/config.hpp>
#include <nvmekit/contracts/tracer.hpp>
#include <nvmekit/spec/registers.hpp>
#include <nvmekit/state/register_file.hpp>
#include <nvmekit/state/reset_state_machine.hpp>

NVMEKIT_BEGIN_NAMESPACE

/// The state machine events of one CC write, in order (at most two: enable, then a shutdown).
class cc_write_event_list {
public:
    void push(controller_event event) noexcept { events_[count_++] = event; }
    [[nodiscard]] const controller_event* begin() const noexcept { return events_.data(); }
    [[nodiscard]] const controller_event* end() const noexcept { return events_.data() + count_; }
    [[nodiscard]] std::size_t size() const noexcept { return count_; }

private:
    std::array<controller_event, 2> events_{};
    std::size_t count_ = 0;
};

/// The events of CC changing from `old_cc` to `new_cc`. Every write of EN = 0 is a disable (a
/// Controller Reset, a no-op when already disabled, and how the host leaves the failed state);
/// EN 0 to 1 is an enable; SHN changing to normal or abrupt is a shutdown.
[[nodiscard]] inline cc_write_event_list cc_write_events(spec::cc_register old_cc,
                                                         spec::cc_register new_cc) noexcept
{
    cc_write_event_list events;
    if (!new_cc.get(new_cc.en)) {
        events.push(controller_event::disable);
        return events;
    }
    if (!old_cc.get(old_cc.en)) {
        events.push(controller_event::enable);
    }
    const auto old_shn = old_cc.get(old_cc.shn);
    const auto shn = new_cc.get(new_cc.shn);
    if (shn != old_shn) {
        if (shn == spec::shutdown_notification::normal) {
            events.push(controller_event::shutdown_normal);
        } else if (shn == spec::shutdown_notification::abrupt) {
            events.push(controller_event::shutdown_abrupt);
        }
    }
    return events;
}

/// Why CC.EN = 1 cannot take effect: the host mistake's trace event and the offending register.
struct enable_refusal_reason {
    trace_event event;
    std::uint64_t value;
};

/// CC, and unless the admin queue is connected by a message-based transport AQA, ASQ and ACQ,
/// against CAP (Base 2.0 3.5.1): empty when the controller can run with them. CC.IOSQES and
/// CC.IOCQES matter only once I/O queues are created (Base 2.0 Figure 41, CC): Create I/O SQ/CQ
/// check them, so a host that enables with them 0 still becomes ready.
[[nodiscard]] inline std::optional<enable_refusal_reason> enable_refusal(const register_file& registers,
                                                                         bool admin_queue_connected) noexcept
{
    const auto cap = registers.cap();
    const auto cc = registers.cc();
    const unsigned mps = cc.get(cc.mps);
    if (mps < cap.get(cap.mpsmin) || mps > cap.get(cap.mpsmax)) {
        return enable_refusal_reason{trace_event::err_startfail_page_size, cc.raw};
    }
    if (cc.get(cc.css) != spec::io_command_set_selected::nvm) {
        return enable_refusal_reason{trace_event::err_startfail_css, cc.raw};
    }
    if (cc.get(cc.ams) != spec::arbitration_mechanism::round_robin) {
        return enable_refusal_reason{trace_event::err_startfail_ams, cc.raw};
    }
    if (admin_queue_connected) {
        return std::nullopt; // AQA, ASQ and ACQ play no part
    }
    const auto aqa = registers.aqa();
    const std::uint32_t asq_entries = aqa.get(aqa.asqs) + 1U;
    const std::uint32_t acq_entries = aqa.get(aqa.acqs) + 1U;
    if (asq_entries < 2 || asq_entries > 4096) {
        return enable_refusal_reason{trace_event::err_startfail_asq_size, aqa.raw};
    }
    if (acq_entries < 2 || acq_entries > 4096) {
        return enable_refusal_reason{trace_event::err_startfail_acq_size, aqa.raw};
    }
    const std::uint64_t page_mask = (std::uint64_t{4096} << mps) - 1U;
    if ((registers.asq().raw & page_mask) != 0) {
        return enable_refusal_reason{trace_event::err_startfail_asq_misaligned, registers.asq().raw};
    }
    if ((registers.acq().raw & page_mask) != 0) {
        return enable_refusal_reason{trace_event::err_startfail_acq_misaligned, registers.acq().raw};
    }
    return std::nullopt;
}

NVMEKIT_END_NAMESPACE
