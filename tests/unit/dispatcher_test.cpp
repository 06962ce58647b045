#include <nvmekit/core/dispatcher.hpp>

#include <array>
#include <cstdint>

#include <gtest/gtest.h>

namespace {
namespace dispatcher_test {

namespace spec = nvmekit::spec;

struct context {
    int calls = 0;
    std::uint8_t last = 0;
};
struct command {
    std::uint8_t opcode = 0;
};

using table = nvmekit::dispatch_table<context, command>;

nvmekit::command_result first(context& c, command& cmd)
{
    ++c.calls;
    c.last = cmd.opcode;
    return nvmekit::command_result::success(0x11);
}

nvmekit::command_result second(context& c, command&)
{
    c.calls += 10;
    return nvmekit::command_result::failure(spec::status{spec::generic_status::invalid_field}.with_dnr(), 7);
}

nvmekit::command_result later(context&, command&) { return nvmekit::command_result::pending(); }

constexpr table base = table{}.with(0x06, &first).with(0x01, &second, nvmekit::effects::changes_content());

// The table is a constant expression: support is known at compile time.
static_assert(base.supported(0x06));
static_assert(base.supported(0x01));
static_assert(!base.supported(0x02));
static_assert(base.size() == 2);
static_assert(base.effects(0x01).get(spec::command_effects::lbcc));
static_assert(base.effects(0x01).get(spec::command_effects::csupp));
static_assert(!base.effects(0x06).get(spec::command_effects::lbcc));
static_assert(base.without(0x06).size() == 1);

TEST(dispatch_table, dispatches_to_the_handler_of_the_opcode)
{
    context ctx;
    command cmd{0x06};
    const auto result = base.dispatch(ctx, 0x06, cmd);
    EXPECT_EQ(result.status, spec::status::success());
    EXPECT_EQ(result.dw0, 0x11U);
    EXPECT_FALSE(result.is_pending());
    EXPECT_EQ(ctx.calls, 1);
    EXPECT_EQ(ctx.last, 0x06);
}

TEST(dispatch_table, unknown_opcode_is_invalid_command_opcode_with_dnr)
{
    context ctx;
    command cmd{0x02};
    const auto result = base.dispatch(ctx, 0x02, cmd);
    EXPECT_EQ(result.status, spec::status{spec::generic_status::invalid_opcode}.with_dnr());
    EXPECT_EQ(ctx.calls, 0);
}

TEST(dispatch_table, a_vendor_command_is_added_and_a_built_in_replaced)
{
    constexpr table custom = base.with(0xc0, &later).with(0x06, &second);
    context ctx;
    command cmd{};
    EXPECT_TRUE(custom.dispatch(ctx, 0xc0, cmd).is_pending());
    EXPECT_EQ(custom.dispatch(ctx, 0x06, cmd).dw0, 7U);
    EXPECT_EQ(ctx.calls, 10);
    EXPECT_EQ(custom.size(), 3U);
}

TEST(dispatch_table, removed_command_is_unsupported_and_has_no_effects)
{
    constexpr table reduced = base.without(0x01);
    context ctx;
    command cmd{};
    EXPECT_EQ(reduced.dispatch(ctx, 0x01, cmd).status,
              spec::status{spec::generic_status::invalid_opcode}.with_dnr());
    EXPECT_EQ(reduced.effects(0x01).raw, 0U);
}

TEST(dispatch_table, effects_log_entries_are_the_table)
{
    std::array<spec::command_effects, 256> entries{};
    base.fill_effects(entries);
    for (unsigned opcode = 0; opcode < 256; ++opcode) {
        EXPECT_EQ(entries[opcode].get(spec::command_effects::csupp),
                  base.supported(static_cast<std::uint8_t>(opcode)))
            << opcode;
    }
    EXPECT_EQ(entries[0x01].raw, 0x3U); // CSUPP | LBCC
    EXPECT_EQ(entries[0x06].raw, 0x1U);
}

TEST(dispatch_table, namespace_changing_effects_are_exclusive)
{
    const auto effects = nvmekit::effects::changes_namespaces();
    EXPECT_TRUE(effects.get(spec::command_effects::ncc));
    EXPECT_TRUE(effects.get(spec::command_effects::nic));
    EXPECT_EQ(effects.get(spec::command_effects::cse),
              spec::command_submission_execution::any_namespace_exclusive);
    EXPECT_TRUE(nvmekit::effects::changes_controller().get(spec::command_effects::ccc));
}

} // namespace dispatcher_test
} // namespace
