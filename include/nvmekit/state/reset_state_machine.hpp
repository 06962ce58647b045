#pragma once
/// The controller's enable/shutdown/reset state machine (Base 2.0 3.5 Controller Initialization,
/// 3.6 Shutdown, 3.7 Resets) as one declarative transition table: states × events → guard,
/// action, next state. The machine only decides; the controller acts through a ResetOps object.
///
/// Like the Linux driver's `nvme_change_ctrl_state`, the table is a whitelist: a (state, event)
/// pair without a row is a host protocol error (reported through `host_protocol_error`, state
/// unchanged), never a crash and never silently ignored. `tick` is the exception: it is not a
/// host event but "time passed", so a tick with nothing to complete does nothing.
///
/// The ResetOps concept:
///
// clang-format off
/// | expression                            | type   | semantics |
/// |---------------------------------------|--------|-----------|
/// | `o.enable_configuration_valid()`      | `bool` | guard of `enable`: CC, AQA, ASQ and ACQ are consistent with CAP |
/// | `o.ready_delay_elapsed()`             | `bool` | guard of `tick` in enabling: the configured ready delay (on the Clock; 0 = at once) has passed since `start_enable` |
/// | `o.shutdown_flush_complete()`         | `bool` | guard of `tick` in shutting_down: the volatile write cache has been flushed |
/// | `o.start_enable()`                    | any    | records when enabling started; creates the admin queues from AQA/ASQ/ACQ |
/// | `o.set_ready(b)`                      | any    | sets CSTS.RDY to `b` |
/// | `o.stop_and_abort_all()`              | any    | stops all queues, aborts in-flight commands without posting their CQEs, deletes the I/O queues and ends any flush in progress |
/// | `o.reset_controller_state()`          | any    | registers to their reset values except AQA/ASQ/ACQ (CSTS.CFS and SHST cleared), features to saved or default values; MSI-X untouched |
/// | `o.begin_shutdown(abrupt)`            | any    | CSTS.SHST = 01b; when `!abrupt`, starts flushing the volatile write cache |
/// | `o.complete_shutdown()`               | any    | CSTS.SHST = 10b |
/// | `o.subsystem_reset()`                 | any    | NVM Subsystem Reset: everything a power-on reset does to the controller, then CSTS.NSSRO = 1 |
/// | `o.function_reset()`                  | any    | Function Level Reset: everything a power-on reset does, MSI-X and PCI state included |
/// | `o.set_fatal()`                       | any    | CSTS.CFS = 1 |
/// | `o.host_protocol_error(state, event)` | any    | the host caused an event the state does not accept: count and log it |
// clang-format on
///
/// `o` is an lvalue of the Ops type, `b` and `abrupt` are `bool`, `state` a `controller_state`,
/// `event` a `controller_event`. Guards must not change state. Guards and actions must not call
/// back into the machine's `handle` (queue the event and feed it afterwards).
///
/// Feeding events: `enable` on a CC.EN 0→1 edge; `disable` on every CC write with EN = 0 (a
/// write while already disabled is a harmless no-op); when one CC write changes both EN and
/// SHN, feed the EN event first. `tick` from the controller's poll loop while `state()` is
/// enabling or shutting_down.

#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nvmekit/config.hpp>

NVMEKIT_BEGIN_NAMESPACE

/// Where the controller is in its enable/shutdown/reset life (not a spec field: CSTS shows it).
enum class controller_state : std::uint8_t {
    disabled,      ///< CC.EN = 0, CSTS.RDY = 0: registers may be programmed
    enabling,      ///< CC.EN = 1, CSTS.RDY = 0: admin queues created, ready delay running
    ready,         ///< CC.EN = 1, CSTS.RDY = 1: processing commands
    shutting_down, ///< CSTS.SHST = 01b
    shut_down,     ///< CSTS.SHST = 10b: a Controller Reset is needed to run commands again
    failed,        ///< CSTS.CFS = 1: only resets are accepted
};
/// The number of controller_state values.
inline constexpr std::size_t controller_state_count = 6;

/// What can happen to the controller.
enum class controller_event : std::uint8_t {
    enable,           ///< CC.EN 0→1
    disable,          ///< CC written with EN = 0 (a Controller Reset when EN was 1)
    shutdown_normal,  ///< CC.SHN 00b→01b
    shutdown_abrupt,  ///< CC.SHN 00b→10b
    shutdown_cleared, ///< CC.SHN back to 00b
    tick,             ///< time passed or background work finished (not a host event)
    subsystem_reset,  ///< NSSR written with 4E564D65h ("NVMe")
    function_reset,   ///< PCIe Function Level Reset, from the transport
    fatal_error,      ///< an internal fatal error (not a host event)
};
/// The number of controller_event values.
inline constexpr std::size_t controller_event_count = 9;

/// The condition a transition checks before it is taken; each names one ResetOps query.
enum class reset_guard : std::uint8_t {
    none,                       ///< always true
    enable_configuration_valid, ///< ops.enable_configuration_valid()
    ready_delay_elapsed,        ///< ops.ready_delay_elapsed()
    shutdown_flush_complete,    ///< ops.shutdown_flush_complete()
};

/// What a transition does, as a fixed sequence of ResetOps calls.
enum class reset_action : std::uint8_t {
    none,                  ///< nothing
    start_enable,          ///< start_enable()
    set_ready,             ///< set_ready(true)
    controller_reset,      ///< stop_and_abort_all(), reset_controller_state(), set_ready(false)
    begin_normal_shutdown, ///< begin_shutdown(false)
    abrupt_shutdown,       ///< begin_shutdown(true), complete_shutdown()
    complete_shutdown,     ///< complete_shutdown()
    subsystem_reset,       ///< stop_and_abort_all(), subsystem_reset()
    function_reset,        ///< stop_and_abort_all(), function_reset()
    set_fatal,             ///< set_fatal()
};

/// The name of a state, as the table and logs spell it.
[[nodiscard]] constexpr std::string_view name(controller_state value) noexcept
{
    switch (value) {
    case controller_state::disabled: return "disabled";
    case controller_state::enabling: return "enabling";
    case controller_state::ready: return "ready";
    case controller_state::shutting_down: return "shutting_down";
    case controller_state::shut_down: return "shut_down";
    case controller_state::failed: return "failed";
    }
    return "unknown";
}

/// The name of an event.
[[nodiscard]] constexpr std::string_view name(controller_event value) noexcept
{
    switch (value) {
    case controller_event::enable: return "enable";
    case controller_event::disable: return "disable";
    case controller_event::shutdown_normal: return "shutdown_normal";
    case controller_event::shutdown_abrupt: return "shutdown_abrupt";
    case controller_event::shutdown_cleared: return "shutdown_cleared";
    case controller_event::tick: return "tick";
    case controller_event::subsystem_reset: return "subsystem_reset";
    case controller_event::function_reset: return "function_reset";
    case controller_event::fatal_error: return "fatal_error";
    }
    return "unknown";
}

/// The name of a guard.
[[nodiscard]] constexpr std::string_view name(reset_guard value) noexcept
{
    switch (value) {
    case reset_guard::none: return "none";
    case reset_guard::enable_configuration_valid: return "enable_configuration_valid";
    case reset_guard::ready_delay_elapsed: return "ready_delay_elapsed";
    case reset_guard::shutdown_flush_complete: return "shutdown_flush_complete";
    }
    return "unknown";
}

/// The name of an action.
[[nodiscard]] constexpr std::string_view name(reset_action value) noexcept
{
    switch (value) {
    case reset_action::none: return "none";
    case reset_action::start_enable: return "start_enable";
    case reset_action::set_ready: return "set_ready";
    case reset_action::controller_reset: return "controller_reset";
    case reset_action::begin_normal_shutdown: return "begin_normal_shutdown";
    case reset_action::abrupt_shutdown: return "abrupt_shutdown";
    case reset_action::complete_shutdown: return "complete_shutdown";
    case reset_action::subsystem_reset: return "subsystem_reset";
    case reset_action::function_reset: return "function_reset";
    case reset_action::set_fatal: return "set_fatal";
    }
    return "unknown";
}

/// One row of the table. When `guard` holds, `action` runs and the machine moves to `to`;
/// otherwise `otherwise_action` runs and it moves to `otherwise_to`. An otherwise branch with
/// no action and `otherwise_to == from` means "not yet": nothing happens and no error is
/// reported (only tick rows may wait).
struct reset_transition {
    controller_state from;
    controller_event event;
    reset_guard guard;
    reset_action action;
    controller_state to;
    reset_action otherwise_action;
    controller_state otherwise_to;

    friend constexpr bool operator==(const reset_transition&, const reset_transition&) noexcept = default;
};

namespace detail {

constexpr reset_transition reset_row(controller_state from, controller_event event, reset_action action,
                                     controller_state to) noexcept
{
    return {from, event, reset_guard::none, action, to, reset_action::none, from};
}

constexpr reset_transition reset_row_when(controller_state from, controller_event event, reset_guard guard,
                                          reset_action action, controller_state to) noexcept
{
    return {from, event, guard, action, to, reset_action::none, from};
}

} // namespace detail

/// The transition table. Pairs without a row are rejected; the notable ones: `enable` outside
/// disabled (CC.EN is already 1, and after a shutdown a Controller Reset is required, Base 2.0
/// Figure 42 SHST); a shutdown notification while disabled, while a shutdown is in progress or
/// done, or after a fatal error; `shutdown_cleared` while a shutdown is in progress; anything
/// but a reset while failed.
inline constexpr auto reset_transitions = [] {
    using enum controller_state;
    using enum controller_event;
    using detail::reset_row;
    using detail::reset_row_when;
    return std::to_array<reset_transition>({
        // CC.EN 0→1 starts initialization (Base 2.0 3.5.1); a configuration the controller
        // cannot run is reported as CSTS.CFS = 1 with RDY left 0 (the host sees it while
        // waiting for RDY, as with QEMU's failed start).
        {disabled, enable, reset_guard::enable_configuration_valid, reset_action::start_enable, enabling,
         reset_action::set_fatal, failed},
        // Hosts write CC.EN = 0 before programming AQA/ASQ/ACQ (Base 2.0 3.5.1 step 1): nothing to reset.
        reset_row(disabled, disable, reset_action::none, disabled),
        // SHN returns to 00b after a Controller Reset: nothing to do.
        reset_row(disabled, shutdown_cleared, reset_action::none, disabled),
        // NSSR and FLR are Controller Level Resets in every state (Base 2.0 3.7).
        reset_row(disabled, subsystem_reset, reset_action::subsystem_reset, disabled),
        reset_row(disabled, function_reset, reset_action::function_reset, disabled),
        // A fatal error is reported in CSTS.CFS whatever the state (Base 2.0 Figure 42 CFS).
        reset_row(disabled, fatal_error, reset_action::set_fatal, failed),

        // CSTS.RDY = 1 once the controller is ready to take doorbell writes, within CAP.TO
        // (Base 2.0 Figure 42 RDY).
        reset_row_when(enabling, tick, reset_guard::ready_delay_elapsed, reset_action::set_ready, ready),
        // CC.EN 1→0 is a Controller Reset: abort everything, reset registers except the admin
        // queue registers, then clear RDY, so no CQE is posted once RDY reads 0 (Base 2.0 3.7).
        reset_row(enabling, disable, reset_action::controller_reset, disabled),
        // A shutdown notification may come before RDY = 1: shutdown replaces the bring-up (Base 2.0 3.6).
        reset_row(enabling, shutdown_normal, reset_action::begin_normal_shutdown, shutting_down),
        // Abrupt shutdown does no flush: SHST goes 01b then 10b at once (Base 2.0 3.6).
        reset_row(enabling, shutdown_abrupt, reset_action::abrupt_shutdown, shut_down),
        reset_row(enabling, subsystem_reset, reset_action::subsystem_reset, disabled),
        reset_row(enabling, function_reset, reset_action::function_reset, disabled),
        reset_row(enabling, fatal_error, reset_action::set_fatal, failed),

        reset_row(ready, disable, reset_action::controller_reset, disabled),
        // CC.SHN = 01b: SHST = 01b while volatile data is flushed (Base 2.0 3.6, Figure 41 SHN).
        reset_row(ready, shutdown_normal, reset_action::begin_normal_shutdown, shutting_down),
        reset_row(ready, shutdown_abrupt, reset_action::abrupt_shutdown, shut_down),
        reset_row(ready, subsystem_reset, reset_action::subsystem_reset, disabled),
        reset_row(ready, function_reset, reset_action::function_reset, disabled),
        reset_row(ready, fatal_error, reset_action::set_fatal, failed),

        // SHST = 10b once the flush is done (Base 2.0 Figure 42 SHST).
        reset_row_when(shutting_down, tick, reset_guard::shutdown_flush_complete,
                       reset_action::complete_shutdown, shut_down),
        // CC.EN 1→0 during shutdown processing is still a Controller Reset (Base 2.0 3.7).
        reset_row(shutting_down, disable, reset_action::controller_reset, disabled),
        reset_row(shutting_down, subsystem_reset, reset_action::subsystem_reset, disabled),
        reset_row(shutting_down, function_reset, reset_action::function_reset, disabled),
        reset_row(shutting_down, fatal_error, reset_action::set_fatal, failed),

        // After SHST = 10b a Controller Reset (CC.EN 1→0) is required to run commands again
        // (Base 2.0 Figure 42 SHST); Linux does it on resume.
        reset_row(shut_down, disable, reset_action::controller_reset, disabled),
        // Clearing SHN alone does not restart the controller: SHST stays 10b until a reset.
        reset_row(shut_down, shutdown_cleared, reset_action::none, shut_down),
        reset_row(shut_down, subsystem_reset, reset_action::subsystem_reset, disabled),
        reset_row(shut_down, function_reset, reset_action::function_reset, disabled),
        reset_row(shut_down, fatal_error, reset_action::set_fatal, failed),

        // CSTS.CFS is cleared by a reset (Base 2.0 Figure 42 CFS); the host's recovery is CC.EN 1→0.
        reset_row(failed, disable, reset_action::controller_reset, disabled),
        reset_row(failed, subsystem_reset, reset_action::subsystem_reset, disabled),
        reset_row(failed, function_reset, reset_action::function_reset, disabled),
        // A further internal error while failed changes nothing (and is not the host's fault).
        reset_row(failed, fatal_error, reset_action::none, failed),
    });
}();

namespace detail {

inline constexpr std::uint8_t no_reset_transition = 0xff;

template <std::size_t N>
constexpr bool reset_rows_in_range(const std::array<reset_transition, N>& table) noexcept
{
    for (const auto& row : table) {
        if (static_cast<std::size_t>(row.from) >= controller_state_count ||
            static_cast<std::size_t>(row.to) >= controller_state_count ||
            static_cast<std::size_t>(row.otherwise_to) >= controller_state_count ||
            static_cast<std::size_t>(row.event) >= controller_event_count) {
            return false;
        }
    }
    return N < no_reset_transition;
}

/// No two rows share a (from, event) pair, so the table is a function of its key.
template <std::size_t N>
constexpr bool reset_keys_unique(const std::array<reset_transition, N>& table) noexcept
{
    for (std::size_t i = 0; i < N; ++i) {
        for (std::size_t j = i + 1; j < N; ++j) {
            if (table[i].from == table[j].from && table[i].event == table[j].event) {
                return false;
            }
        }
    }
    return true;
}

/// Unguarded rows have no otherwise branch; an otherwise branch without an action stays in
/// place; only tick rows may wait, so a host event is never dropped silently.
template <std::size_t N>
constexpr bool reset_otherwise_branches_sound(const std::array<reset_transition, N>& table) noexcept
{
    for (const auto& row : table) {
        const bool waits = row.otherwise_action == reset_action::none;
        if (row.guard == reset_guard::none && (!waits || row.otherwise_to != row.from)) {
            return false;
        }
        if (waits && row.otherwise_to != row.from) {
            return false;
        }
        if (row.guard != reset_guard::none && waits && row.event != controller_event::tick) {
            return false;
        }
    }
    return true;
}

/// The row number of (from, event), or N when the table has no such row.
template <std::size_t N>
constexpr std::size_t find_reset_row(const std::array<reset_transition, N>& table, controller_state from,
                                     controller_event event) noexcept
{
    for (std::size_t i = 0; i < N; ++i) {
        if (table[i].from == from && table[i].event == event) {
            return i;
        }
    }
    return N;
}

/// A state entered by a tick has no tick row of its own, so one completion attempt after a
/// transition is enough.
template <std::size_t N>
constexpr bool reset_ticks_settle(const std::array<reset_transition, N>& table) noexcept
{
    for (const auto& row : table) {
        const bool target_ticks = find_reset_row(table, row.to, controller_event::tick) != N;
        if (row.event == controller_event::tick && target_ticks) {
            return false;
        }
    }
    return true;
}

/// Every state accepts CC.EN 1→0, NSSR and FLR and they lead to disabled: the host can always
/// recover the controller.
template <std::size_t N>
constexpr bool reset_always_recoverable(const std::array<reset_transition, N>& table) noexcept
{
    for (std::size_t s = 0; s < controller_state_count; ++s) {
        for (auto event : {controller_event::disable, controller_event::subsystem_reset,
                           controller_event::function_reset}) {
            const std::size_t i = find_reset_row(table, static_cast<controller_state>(s), event);
            if (i == N || table[i].guard != reset_guard::none || table[i].to != controller_state::disabled) {
                return false;
            }
        }
    }
    return true;
}

using reset_index = std::array<std::array<std::uint8_t, controller_event_count>, controller_state_count>;

/// The table's row number for each (state, event), or no_reset_transition.
template <std::size_t N>
constexpr reset_index make_reset_index(const std::array<reset_transition, N>& table) noexcept
{
    reset_index index{};
    for (auto& per_state : index) {
        per_state.fill(no_reset_transition);
    }
    for (std::size_t i = 0; i < N; ++i) {
        index[static_cast<std::size_t>(table[i].from)][static_cast<std::size_t>(table[i].event)] =
            static_cast<std::uint8_t>(i);
    }
    return index;
}

} // namespace detail

static_assert(detail::reset_rows_in_range(reset_transitions), "reset_transitions: a value is out of range");
static_assert(detail::reset_keys_unique(reset_transitions), "reset_transitions: duplicate (from, event) row");
static_assert(detail::reset_otherwise_branches_sound(reset_transitions),
              "reset_transitions: an otherwise branch is malformed or drops a host event");
static_assert(detail::reset_ticks_settle(reset_transitions),
              "reset_transitions: a tick leads to a state that ticks");
static_assert(detail::reset_always_recoverable(reset_transitions),
              "reset_transitions: a state cannot be reset to disabled");

// clang-format off
template <typename T>
concept ResetGuards = requires(T& ops) {
    { ops.enable_configuration_valid() } -> std::same_as<bool>;
    { ops.ready_delay_elapsed() } -> std::same_as<bool>;
    { ops.shutdown_flush_complete() } -> std::same_as<bool>;
};
// clang-format on

// clang-format off
template <typename T>
concept ResetEnableOps = requires(T& ops, bool ready) {
    ops.start_enable();
    ops.set_ready(ready);
};
// clang-format on

// clang-format off
template <typename T>
concept ResetTeardownOps = requires(T& ops) {
    ops.stop_and_abort_all();
    ops.reset_controller_state();
    ops.subsystem_reset();
    ops.function_reset();
};
// clang-format on

// clang-format off
template <typename T>
concept ResetShutdownOps = requires(T& ops, bool abrupt) {
    ops.begin_shutdown(abrupt);
    ops.complete_shutdown();
};
// clang-format on

// clang-format off
template <typename T>
concept ResetErrorOps = requires(T& ops, controller_state state, controller_event event) {
    ops.set_fatal();
    ops.host_protocol_error(state, event);
};
// clang-format on

/// What the reset state machine asks of the controller (see the table above).
// clang-format off
template <typename T>
concept ResetOps = ResetGuards<T> && ResetEnableOps<T> && ResetTeardownOps<T> && ResetShutdownOps<T> &&
                   ResetErrorOps<T>;
// clang-format on

/// Checks `T` models ResetOps with one readable diagnostic per missing operation.
template <typename T>
consteval bool check_reset_ops()
{
    // clang-format off
    static_assert(requires(T& o) {
        { o.enable_configuration_valid() } -> std::same_as<bool>;
    }, "ResetOps: the type lacks `bool enable_configuration_valid()`");
    static_assert(requires(T& o) {
        { o.ready_delay_elapsed() } -> std::same_as<bool>;
    }, "ResetOps: the type lacks `bool ready_delay_elapsed()`");
    static_assert(requires(T& o) {
        { o.shutdown_flush_complete() } -> std::same_as<bool>;
    }, "ResetOps: the type lacks `bool shutdown_flush_complete()`");
    static_assert(requires(T& o) { o.start_enable(); }, "ResetOps: the type lacks `start_enable()`");
    static_assert(requires(T& o, bool b) { o.set_ready(b); }, "ResetOps: the type lacks `set_ready(bool)`");
    static_assert(requires(T& o) { o.stop_and_abort_all(); },
                  "ResetOps: the type lacks `stop_and_abort_all()`");
    static_assert(requires(T& o) { o.reset_controller_state(); },
                  "ResetOps: the type lacks `reset_controller_state()`");
    static_assert(requires(T& o, bool b) { o.begin_shutdown(b); },
                  "ResetOps: the type lacks `begin_shutdown(bool abrupt)`");
    static_assert(requires(T& o) { o.complete_shutdown(); },
                  "ResetOps: the type lacks `complete_shutdown()`");
    static_assert(requires(T& o) { o.subsystem_reset(); }, "ResetOps: the type lacks `subsystem_reset()`");
    static_assert(requires(T& o) { o.function_reset(); }, "ResetOps: the type lacks `function_reset()`");
    static_assert(requires(T& o) { o.set_fatal(); }, "ResetOps: the type lacks `set_fatal()`");
    static_assert(requires(T& o, controller_state s, controller_event e) { o.host_protocol_error(s, e); },
                  "ResetOps: the type lacks `host_protocol_error(controller_state, controller_event)`");
    // clang-format on
    return ResetOps<T>;
}

/// Drives `reset_transitions` for one controller. Single-threaded: call it from the context
/// that owns the controller's registers.
template <typename Ops>
class reset_state_machine {
    static_assert(check_reset_ops<Ops>());

public:
    /// The transition table, for tests and documentation.
    static constexpr const auto& table = reset_transitions;

    /// Starts in `initial` (disabled after power-on; another state when restoring a checkpoint).
    explicit reset_state_machine(Ops& ops, controller_state initial = controller_state::disabled) noexcept
        : ops_{&ops}, state_{initial}
    {
        NVMEKIT_ASSERT(static_cast<std::size_t>(initial) < controller_state_count,
                       "reset_state_machine: initial state out of range");
    }

    /// The current state.
    [[nodiscard]] controller_state state() const noexcept { return state_; }

    /// Looks (state, event) up in the table, checks the guard, runs the action and moves to
    /// the next state; on entering a state with a tick row it tries that tick at once, so a
    /// zero ready delay reaches ready within one call. Returns true if the event was accepted.
    /// A pair with no row calls `host_protocol_error` and returns false with the state
    /// unchanged; a tick with no row or a false guard ("not yet") just returns false.
    bool handle(controller_event event)
    {
        NVMEKIT_ASSERT(!handling_, "reset_state_machine: handle() called from a guard or an action");
        NVMEKIT_ASSERT(static_cast<std::size_t>(event) < controller_event_count,
                       "reset_state_machine: event out of range");
        handling_ = true;
        const auto* row = find(state_, event);
        bool accepted = false;
        if (row == nullptr) {
            if (event != controller_event::tick) {
                ops_->host_protocol_error(state_, event);
            }
        } else {
            const controller_state before = state_;
            accepted = take(*row);
            if (accepted && state_ != before && event != controller_event::tick) {
                if (const auto* completion = find(state_, controller_event::tick)) {
                    take(*completion);
                }
            }
        }
        handling_ = false;
        return accepted;
    }

private:
    // NOLINTNEXTLINE(readability-identifier-naming): private static, suffixed like the other members
    static constexpr detail::reset_index index_ = detail::make_reset_index(reset_transitions);

    static const reset_transition* find(controller_state state, controller_event event) noexcept
    {
        const std::uint8_t row = index_[static_cast<std::size_t>(state)][static_cast<std::size_t>(event)];
        return row == detail::no_reset_transition ? nullptr : &reset_transitions[row];
    }

    bool take(const reset_transition& row)
    {
        if (guard_holds(row.guard)) {
            run(row.action);
            state_ = row.to;
            return true;
        }
        if (row.otherwise_action == reset_action::none) {
            return false;
        }
        run(row.otherwise_action);
        state_ = row.otherwise_to;
        return true;
    }

    bool guard_holds(reset_guard guard)
    {
        switch (guard) {
        case reset_guard::none: return true;
        case reset_guard::enable_configuration_valid: return ops_->enable_configuration_valid();
        case reset_guard::ready_delay_elapsed: return ops_->ready_delay_elapsed();
        case reset_guard::shutdown_flush_complete: return ops_->shutdown_flush_complete();
        }
        NVMEKIT_ASSERT(false, "reset_state_machine: unknown guard");
        return false;
    }

    void run(reset_action action)
    {
        switch (action) {
        case reset_action::none: return;
        case reset_action::start_enable: ops_->start_enable(); return;
        case reset_action::set_ready: ops_->set_ready(true); return;
        case reset_action::controller_reset:
            ops_->stop_and_abort_all();
            ops_->reset_controller_state();
            ops_->set_ready(false);
            return;
        case reset_action::begin_normal_shutdown: ops_->begin_shutdown(false); return;
        case reset_action::abrupt_shutdown:
            ops_->begin_shutdown(true);
            ops_->complete_shutdown();
            return;
        case reset_action::complete_shutdown: ops_->complete_shutdown(); return;
        case reset_action::subsystem_reset:
            ops_->stop_and_abort_all();
            ops_->subsystem_reset();
            return;
        case reset_action::function_reset:
            ops_->stop_and_abort_all();
            ops_->function_reset();
            return;
        case reset_action::set_fatal: ops_->set_fatal(); return;
        }
        NVMEKIT_ASSERT(false, "reset_state_machine: unknown action");
    }

    Ops* ops_;
    controller_state state_;
    bool handling_ = false;
};

NVMEKIT_END_NAMESPACE
