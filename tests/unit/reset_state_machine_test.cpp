#include <nvmekit/state/reset_state_machine.hpp>

#include <array>
#include <cstddef>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

using nvmekit::controller_event;
using nvmekit::controller_state;
using nvmekit::reset_action;
using nvmekit::reset_guard;
using nvmekit::reset_transition;

namespace {

std::string protocol_error(controller_state state, controller_event event)
{
    return "host_protocol_error(" + std::string{name(state)} + ", " + std::string{name(event)} + ")";
}

/// Records every guard query and action in order; the guards answer what the test sets.
struct fake_ops {
    bool configuration_valid = true;
    bool delay_elapsed = true;
    bool flush_complete = true;
    std::vector<std::string> calls;

    bool enable_configuration_valid()
    {
        calls.emplace_back("enable_configuration_valid?");
        return configuration_valid;
    }
    bool ready_delay_elapsed()
    {
        calls.emplace_back("ready_delay_elapsed?");
        return delay_elapsed;
    }
    bool shutdown_flush_complete()
    {
        calls.emplace_back("shutdown_flush_complete?");
        return flush_complete;
    }
    void start_enable() { calls.emplace_back("start_enable"); }
    void set_ready(bool ready) { calls.emplace_back(ready ? "set_ready(true)" : "set_ready(false)"); }
    void stop_and_abort_all() { calls.emplace_back("stop_and_abort_all"); }
    void reset_controller_state() { calls.emplace_back("reset_controller_state"); }
    void begin_shutdown(bool abrupt)
    {
        calls.emplace_back(abrupt ? "begin_shutdown(abrupt)" : "begin_shutdown(normal)");
    }
    void complete_shutdown() { calls.emplace_back("complete_shutdown"); }
    void subsystem_reset() { calls.emplace_back("subsystem_reset"); }
    void function_reset() { calls.emplace_back("function_reset"); }
    void set_fatal() { calls.emplace_back("set_fatal"); }
    void host_protocol_error(controller_state state, controller_event event)
    {
        calls.push_back(protocol_error(state, event));
    }
};
static_assert(nvmekit::ResetOps<fake_ops>);
static_assert(nvmekit::check_reset_ops<fake_ops>());

struct ops_without_flush_guard {
    bool enable_configuration_valid() { return true; }
    bool ready_delay_elapsed() { return true; }
    void start_enable() {}
    void set_ready(bool) {}
    void stop_and_abort_all() {}
    void reset_controller_state() {}
    void begin_shutdown(bool) {}
    void complete_shutdown() {}
    void subsystem_reset() {}
    void function_reset() {}
    void set_fatal() {}
    void host_protocol_error(controller_state, controller_event) {}
};
static_assert(!nvmekit::ResetOps<ops_without_flush_guard>);
static_assert(!nvmekit::ResetGuards<ops_without_flush_guard>);
static_assert(nvmekit::ResetEnableOps<ops_without_flush_guard>);
static_assert(nvmekit::ResetErrorOps<ops_without_flush_guard>);

struct ops_with_int_guard : ops_without_flush_guard {
    int shutdown_flush_complete() { return 1; }
};
static_assert(!nvmekit::ResetOps<ops_with_int_guard>); // guards return exactly bool

using machine = nvmekit::reset_state_machine<fake_ops>;

const std::vector<std::string> controller_reset_calls{"stop_and_abort_all", "reset_controller_state",
                                                      "set_ready(false)"};
const std::vector<std::string> subsystem_reset_calls{"stop_and_abort_all", "subsystem_reset"};
const std::vector<std::string> function_reset_calls{"stop_and_abort_all", "function_reset"};

/// One expected transition: start in `from` with the guards answering as given, feed `event`.
struct row_case {
    std::string label;
    controller_state from;
    controller_event event;
    bool configuration_valid;
    bool delay_elapsed;
    bool flush_complete;
    bool accepted;
    controller_state to;
    std::vector<std::string> calls;
};

std::vector<row_case> row_cases()
{
    using enum controller_state;
    using enum controller_event;
    const std::vector<std::string> none;
    // Guards: valid configuration, ready delay elapsed, flush complete, unless a case says otherwise.
    auto plain = [](std::string label, controller_state from, controller_event event, controller_state to,
                    std::vector<std::string> calls) {
        return row_case{std::move(label), from, event, true, true, true, true, to, std::move(calls)};
    };
    std::vector<row_case> cases{
        plain("disabled_enable_zero_delay", disabled, enable, ready,
              {"enable_configuration_valid?", "start_enable", "ready_delay_elapsed?", "set_ready(true)"}),
        {"disabled_enable_delayed",
         disabled,
         enable,
         true,
         false,
         true,
         true,
         enabling,
         {"enable_configuration_valid?", "start_enable", "ready_delay_elapsed?"}},
        {"disabled_enable_invalid_configuration",
         disabled,
         enable,
         false,
         true,
         true,
         true,
         failed,
         {"enable_configuration_valid?", "set_fatal"}},
        plain("disabled_disable", disabled, disable, disabled, none),
        plain("disabled_shutdown_cleared", disabled, shutdown_cleared, disabled, none),
        plain("disabled_subsystem_reset", disabled, subsystem_reset, disabled, subsystem_reset_calls),
        plain("disabled_function_reset", disabled, function_reset, disabled, function_reset_calls),
        plain("disabled_fatal_error", disabled, fatal_error, failed, {"set_fatal"}),

        plain("enabling_tick_delay_elapsed", enabling, tick, ready,
              {"ready_delay_elapsed?", "set_ready(true)"}),
        {"enabling_tick_not_yet",
         enabling,
         tick,
         true,
         false,
         true,
         false,
         enabling,
         {"ready_delay_elapsed?"}},
        plain("enabling_disable", enabling, disable, disabled, controller_reset_calls),
        plain("enabling_shutdown_normal_nothing_to_flush", enabling, shutdown_normal, shut_down,
              {"begin_shutdown(normal)", "shutdown_flush_complete?", "complete_shutdown"}),
        {"enabling_shutdown_normal_flushing",
         enabling,
         shutdown_normal,
         true,
         true,
         false,
         true,
         shutting_down,
         {"begin_shutdown(normal)", "shutdown_flush_complete?"}},
        plain("enabling_shutdown_abrupt", enabling, shutdown_abrupt, shut_down,
              {"begin_shutdown(abrupt)", "complete_shutdown"}),
        plain("enabling_subsystem_reset", enabling, subsystem_reset, disabled, subsystem_reset_calls),
        plain("enabling_function_reset", enabling, function_reset, disabled, function_reset_calls),
        plain("enabling_fatal_error", enabling, fatal_error, failed, {"set_fatal"}),

        plain("ready_disable", ready, disable, disabled, controller_reset_calls),
        plain("ready_shutdown_normal_nothing_to_flush", ready, shutdown_normal, shut_down,
              {"begin_shutdown(normal)", "shutdown_flush_complete?", "complete_shutdown"}),
        {"ready_shutdown_normal_flushing",
         ready,
         shutdown_normal,
         true,
         true,
         false,
         true,
         shutting_down,
         {"begin_shutdown(normal)", "shutdown_flush_complete?"}},
        {"ready_shutdown_abrupt",
         ready,
         shutdown_abrupt,
         true,
         true,
         false,
         true,
         shut_down,
         {"begin_shutdown(abrupt)", "complete_shutdown"}},
        plain("ready_subsystem_reset", ready, subsystem_reset, disabled, subsystem_reset_calls),
        plain("ready_function_reset", ready, function_reset, disabled, function_reset_calls),
        plain("ready_fatal_error", ready, fatal_error, failed, {"set_fatal"}),

        plain("shutting_down_tick_flush_complete", shutting_down, tick, shut_down,
              {"shutdown_flush_complete?", "complete_shutdown"}),
        {"shutting_down_tick_not_yet",
         shutting_down,
         tick,
         true,
         true,
         false,
         false,
         shutting_down,
         {"shutdown_flush_complete?"}},
        plain("shutting_down_disable", shutting_down, disable, disabled, controller_reset_calls),
        plain("shutting_down_subsystem_reset", shutting_down, subsystem_reset, disabled,
              subsystem_reset_calls),
        plain("shutting_down_function_reset", shutting_down, function_reset, disabled, function_reset_calls),
        plain("shutting_down_fatal_error", shutting_down, fatal_error, failed, {"set_fatal"}),

        plain("shut_down_disable", shut_down, disable, disabled, controller_reset_calls),
        plain("shut_down_shutdown_cleared", shut_down, shutdown_cleared, shut_down, none),
        plain("shut_down_subsystem_reset", shut_down, subsystem_reset, disabled, subsystem_reset_calls),
        plain("shut_down_function_reset", shut_down, function_reset, disabled, function_reset_calls),
        plain("shut_down_fatal_error", shut_down, fatal_error, failed, {"set_fatal"}),

        plain("failed_disable", failed, disable, disabled, controller_reset_calls),
        plain("failed_subsystem_reset", failed, subsystem_reset, disabled, subsystem_reset_calls),
        plain("failed_function_reset", failed, function_reset, disabled, function_reset_calls),
        plain("failed_fatal_error", failed, fatal_error, failed, none),
    };
    return cases;
}

std::set<std::pair<controller_state, controller_event>> expected_keys()
{
    std::set<std::pair<controller_state, controller_event>> keys;
    for (const auto& c : row_cases()) {
        keys.emplace(c.from, c.event);
    }
    return keys;
}

class reset_row_test : public testing::TestWithParam<row_case> {};

} // namespace

static_assert(nvmekit::detail::reset_keys_unique(machine::table), "duplicate (from, event) row");
static_assert(&machine::table == &nvmekit::reset_transitions);

// The table checks reject the tables they exist to reject.
namespace bad_tables {
using enum controller_state;
using enum controller_event;
using nvmekit::detail::reset_row;
using nvmekit::detail::reset_row_when;

constexpr auto duplicate = std::to_array<reset_transition>({
    reset_row(ready, disable, reset_action::controller_reset, disabled),
    reset_row(ready, disable, reset_action::none, ready),
});
static_assert(!nvmekit::detail::reset_keys_unique(duplicate));

constexpr auto same_event_other_states = std::to_array<reset_transition>({
    reset_row(ready, disable, reset_action::controller_reset, disabled),
    reset_row(failed, disable, reset_action::controller_reset, disabled),
});
static_assert(nvmekit::detail::reset_keys_unique(same_event_other_states));

constexpr auto host_event_waits = std::to_array<reset_transition>({
    reset_row_when(disabled, enable, reset_guard::enable_configuration_valid, reset_action::start_enable,
                   enabling),
});
static_assert(!nvmekit::detail::reset_otherwise_branches_sound(host_event_waits));

constexpr auto unguarded_otherwise = std::to_array<reset_transition>({
    {ready, disable, reset_guard::none, reset_action::controller_reset, disabled, reset_action::set_fatal,
     failed},
});
static_assert(!nvmekit::detail::reset_otherwise_branches_sound(unguarded_otherwise));

constexpr auto waiting_elsewhere = std::to_array<reset_transition>({
    {enabling, tick, reset_guard::ready_delay_elapsed, reset_action::set_ready, ready, reset_action::none,
     failed},
});
static_assert(!nvmekit::detail::reset_otherwise_branches_sound(waiting_elsewhere));

constexpr auto tick_chain = std::to_array<reset_transition>({
    reset_row_when(enabling, tick, reset_guard::ready_delay_elapsed, reset_action::set_ready, shutting_down),
    reset_row_when(shutting_down, tick, reset_guard::shutdown_flush_complete, reset_action::complete_shutdown,
                   shut_down),
});
static_assert(!nvmekit::detail::reset_ticks_settle(tick_chain));

constexpr auto failed_without_flr = [] {
    auto table = nvmekit::reset_transitions;
    for (auto& row : table) {
        if (row.from == failed && row.event == function_reset) {
            row.event = enable;
        }
    }
    return table;
}();
static_assert(nvmekit::detail::reset_keys_unique(failed_without_flr));
static_assert(!nvmekit::detail::reset_always_recoverable(failed_without_flr));

constexpr auto out_of_range = std::to_array<reset_transition>({
    reset_row(static_cast<controller_state>(6), disable, reset_action::none, disabled),
});
static_assert(!nvmekit::detail::reset_rows_in_range(out_of_range));
} // namespace bad_tables

TEST_P(reset_row_test, drives_one_transition)
{
    const row_case& c = GetParam();
    fake_ops ops;
    ops.configuration_valid = c.configuration_valid;
    ops.delay_elapsed = c.delay_elapsed;
    ops.flush_complete = c.flush_complete;
    machine m{ops, c.from};

    EXPECT_EQ(m.handle(c.event), c.accepted);
    EXPECT_EQ(m.state(), c.to) << name(m.state());
    EXPECT_EQ(ops.calls, c.calls);
}

INSTANTIATE_TEST_SUITE_P(rows, reset_row_test, testing::ValuesIn(row_cases()),
                         [](const testing::TestParamInfo<row_case>& info) { return info.param.label; });

TEST(reset_state_machine, table_has_exactly_the_expected_rows)
{
    const auto keys = expected_keys();
    EXPECT_EQ(machine::table.size(), 33U);
    EXPECT_EQ(keys.size(), 33U);
    for (const auto& row : machine::table) {
        EXPECT_EQ(keys.count({row.from, row.event}), 1U) << name(row.from) << " + " << name(row.event);
    }
}

TEST(reset_state_machine, every_guarded_row_is_driven_both_ways)
{
    for (const auto& row : machine::table) {
        if (row.guard == reset_guard::none) {
            continue;
        }
        std::set<controller_state> outcomes;
        for (const auto& c : row_cases()) {
            if (c.from == row.from && c.event == row.event) {
                outcomes.insert(c.to);
            }
        }
        EXPECT_EQ(outcomes.count(row.to), 1U) << name(row.from) << " + " << name(row.event);
        EXPECT_EQ(outcomes.count(row.otherwise_to), 1U) << name(row.from) << " + " << name(row.event);
    }
}

TEST(reset_state_machine, pairs_without_a_row_are_host_protocol_errors_and_change_nothing)
{
    const auto keys = expected_keys();
    unsigned rejected = 0;
    unsigned silent_ticks = 0;
    for (std::size_t s = 0; s < nvmekit::controller_state_count; ++s) {
        for (std::size_t e = 0; e < nvmekit::controller_event_count; ++e) {
            const auto state = static_cast<controller_state>(s);
            const auto event = static_cast<controller_event>(e);
            if (keys.count({state, event}) != 0) {
                continue;
            }
            fake_ops ops;
            machine m{ops, state};
            EXPECT_FALSE(m.handle(event)) << name(state) << " + " << name(event);
            EXPECT_EQ(m.state(), state);
            if (event == controller_event::tick) {
                EXPECT_TRUE(ops.calls.empty()) << name(state);
                ++silent_ticks;
            } else {
                EXPECT_EQ(ops.calls, std::vector<std::string>{protocol_error(state, event)});
            }
            ++rejected;
        }
    }
    EXPECT_EQ(rejected, 6U * 9U - 33U);
    EXPECT_EQ(silent_ticks, 4U); // disabled, ready, shut_down, failed
}

TEST(reset_state_machine, starts_disabled)
{
    fake_ops ops;
    machine m{ops};
    EXPECT_EQ(m.state(), controller_state::disabled);
    EXPECT_TRUE(ops.calls.empty());
}

TEST(reset_state_machine, zero_ready_delay_reaches_ready_in_one_call)
{
    fake_ops ops;
    machine m{ops};
    EXPECT_TRUE(m.handle(controller_event::enable));
    EXPECT_EQ(m.state(), controller_state::ready);
    const std::vector<std::string> expected{"enable_configuration_valid?", "start_enable",
                                            "ready_delay_elapsed?", "set_ready(true)"};
    EXPECT_EQ(ops.calls, expected);
}

TEST(reset_state_machine, delayed_enable_reaches_ready_only_when_the_delay_has_elapsed)
{
    fake_ops ops;
    ops.delay_elapsed = false;
    machine m{ops};
    EXPECT_TRUE(m.handle(controller_event::enable));
    EXPECT_EQ(m.state(), controller_state::enabling);
    ops.calls.clear();

    EXPECT_FALSE(m.handle(controller_event::tick));
    EXPECT_FALSE(m.handle(controller_event::tick));
    EXPECT_EQ(m.state(), controller_state::enabling);
    EXPECT_EQ(ops.calls, (std::vector<std::string>{"ready_delay_elapsed?", "ready_delay_elapsed?"}));
    ops.calls.clear();

    ops.delay_elapsed = true;
    EXPECT_TRUE(m.handle(controller_event::tick));
    EXPECT_EQ(m.state(), controller_state::ready);
    EXPECT_EQ(ops.calls, (std::vector<std::string>{"ready_delay_elapsed?", "set_ready(true)"}));
    ops.calls.clear();

    EXPECT_FALSE(m.handle(controller_event::tick)); // nothing left to complete
    EXPECT_TRUE(ops.calls.empty());
}

TEST(reset_state_machine, linux_bring_up_shutdown_and_resume)
{
    fake_ops ops;
    ops.flush_complete = false;
    machine m{ops};
    EXPECT_TRUE(m.handle(controller_event::disable)); // CC.EN = 0 before programming AQA/ASQ/ACQ
    EXPECT_TRUE(m.handle(controller_event::enable));
    EXPECT_EQ(m.state(), controller_state::ready);

    EXPECT_TRUE(m.handle(controller_event::shutdown_normal));
    EXPECT_EQ(m.state(), controller_state::shutting_down);
    EXPECT_FALSE(m.handle(controller_event::tick));
    ops.flush_complete = true;
    EXPECT_TRUE(m.handle(controller_event::tick));
    EXPECT_EQ(m.state(), controller_state::shut_down);

    // Resume: nvme_disable_ctrl writes EN = 0 and SHN = 00b in one CC write (EN event first).
    EXPECT_TRUE(m.handle(controller_event::disable));
    EXPECT_TRUE(m.handle(controller_event::shutdown_cleared));
    EXPECT_TRUE(m.handle(controller_event::enable));
    EXPECT_EQ(m.state(), controller_state::ready);

    const std::vector<std::string> expected{"enable_configuration_valid?", "start_enable",
                                            "ready_delay_elapsed?",        "set_ready(true)",
                                            "begin_shutdown(normal)",      "shutdown_flush_complete?",
                                            "shutdown_flush_complete?",    "shutdown_flush_complete?",
                                            "complete_shutdown",           "stop_and_abort_all",
                                            "reset_controller_state",      "set_ready(false)",
                                            "enable_configuration_valid?", "start_enable",
                                            "ready_delay_elapsed?",        "set_ready(true)"};
    EXPECT_EQ(ops.calls, expected);
}

TEST(reset_state_machine, enable_after_shutdown_needs_a_controller_reset_first)
{
    fake_ops ops;
    machine m{ops, controller_state::shut_down};
    EXPECT_TRUE(m.handle(controller_event::shutdown_cleared));
    EXPECT_FALSE(m.handle(controller_event::enable));
    EXPECT_EQ(m.state(), controller_state::shut_down);
    EXPECT_EQ(ops.calls, (std::vector<std::string>{"host_protocol_error(shut_down, enable)"}));
}

TEST(reset_state_machine, abrupt_shutdown_then_immediate_disable)
{
    fake_ops ops;
    machine m{ops, controller_state::ready};
    EXPECT_TRUE(m.handle(controller_event::shutdown_abrupt));
    EXPECT_TRUE(m.handle(controller_event::disable));
    EXPECT_EQ(m.state(), controller_state::disabled);
    const std::vector<std::string> expected{"begin_shutdown(abrupt)", "complete_shutdown",
                                            "stop_and_abort_all", "reset_controller_state",
                                            "set_ready(false)"};
    EXPECT_EQ(ops.calls, expected);
}

TEST(reset_state_machine, failed_accepts_only_resets)
{
    fake_ops ops;
    machine m{ops, controller_state::ready};
    EXPECT_TRUE(m.handle(controller_event::fatal_error));
    EXPECT_FALSE(m.handle(controller_event::shutdown_normal));
    EXPECT_FALSE(m.handle(controller_event::enable));
    EXPECT_TRUE(m.handle(controller_event::fatal_error));
    EXPECT_EQ(m.state(), controller_state::failed);
    EXPECT_TRUE(m.handle(controller_event::disable));
    EXPECT_EQ(m.state(), controller_state::disabled);
    const std::vector<std::string> expected{"set_fatal",
                                            "host_protocol_error(failed, shutdown_normal)",
                                            "host_protocol_error(failed, enable)",
                                            "stop_and_abort_all",
                                            "reset_controller_state",
                                            "set_ready(false)"};
    EXPECT_EQ(ops.calls, expected);
}

TEST(reset_state_machine, invalid_configuration_fails_and_a_reset_recovers)
{
    fake_ops ops;
    ops.configuration_valid = false;
    machine m{ops};
    EXPECT_TRUE(m.handle(controller_event::enable));
    EXPECT_EQ(m.state(), controller_state::failed);
    EXPECT_TRUE(m.handle(controller_event::disable));
    ops.configuration_valid = true;
    ops.calls.clear();
    EXPECT_TRUE(m.handle(controller_event::enable));
    EXPECT_EQ(m.state(), controller_state::ready);
    EXPECT_EQ(ops.calls.front(), "enable_configuration_valid?");
    EXPECT_EQ(ops.calls.back(), "set_ready(true)");
}

TEST(reset_state_machine, reset_during_shutdown_processing)
{
    fake_ops ops;
    ops.flush_complete = false;
    machine m{ops, controller_state::ready};
    EXPECT_TRUE(m.handle(controller_event::shutdown_normal));
    EXPECT_FALSE(m.handle(controller_event::shutdown_cleared));
    EXPECT_EQ(m.state(), controller_state::shutting_down);
    EXPECT_TRUE(m.handle(controller_event::function_reset));
    EXPECT_EQ(m.state(), controller_state::disabled);
    EXPECT_FALSE(m.handle(controller_event::tick)); // the flush no longer matters
    const std::vector<std::string> expected{"begin_shutdown(normal)", "shutdown_flush_complete?",
                                            "host_protocol_error(shutting_down, shutdown_cleared)",
                                            "stop_and_abort_all", "function_reset"};
    EXPECT_EQ(ops.calls, expected);
}

TEST(reset_state_machine, names)
{
    EXPECT_EQ(name(controller_state::disabled), "disabled");
    EXPECT_EQ(name(controller_state::shutting_down), "shutting_down");
    EXPECT_EQ(name(controller_state::failed), "failed");
    EXPECT_EQ(name(static_cast<controller_state>(6)), "unknown");
    EXPECT_EQ(name(controller_event::enable), "enable");
    EXPECT_EQ(name(controller_event::shutdown_cleared), "shutdown_cleared");
    EXPECT_EQ(name(controller_event::fatal_error), "fatal_error");
    EXPECT_EQ(name(static_cast<controller_event>(9)), "unknown");
    EXPECT_EQ(name(reset_guard::ready_delay_elapsed), "ready_delay_elapsed");
    EXPECT_EQ(name(static_cast<reset_guard>(4)), "unknown");
    EXPECT_EQ(name(reset_action::controller_reset), "controller_reset");
    EXPECT_EQ(name(reset_action::set_fatal), "set_fatal");
    EXPECT_EQ(name(static_cast<reset_action>(10)), "unknown");

    std::set<std::string_view> state_names;
    for (std::size_t s = 0; s < nvmekit::controller_state_count; ++s) {
        state_names.insert(name(static_cast<controller_state>(s)));
    }
    EXPECT_EQ(state_names.size(), nvmekit::controller_state_count);
    EXPECT_EQ(state_names.count("unknown"), 0U);
    std::set<std::string_view> event_names;
    for (std::size_t e = 0; e < nvmekit::controller_event_count; ++e) {
        event_names.insert(name(static_cast<controller_event>(e)));
    }
    EXPECT_EQ(event_names.size(), nvmekit::controller_event_count);
    EXPECT_EQ(event_names.count("unknown"), 0U);
}

#if !defined(NDEBUG) && GTEST_HAS_DEATH_TEST
namespace {
struct reentrant_ops : fake_ops {
    nvmekit::reset_state_machine<reentrant_ops>* machine = nullptr;
    void start_enable() { machine->handle(controller_event::fatal_error); }
};
} // namespace

TEST(reset_state_machine_death, handle_from_an_action_asserts)
{
    reentrant_ops ops;
    nvmekit::reset_state_machine<reentrant_ops> m{ops};
    ops.machine = &m;
    EXPECT_DEATH(m.handle(controller_event::enable), "handle\\(\\) called from a guard or an action");
}
#endif
