#include <nvmekit/state/controller_enable.hpp>

#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

namespace {
namespace controller_enable_test {

using nvmekit::cc_write_events;
using nvmekit::controller_event;
using nvmekit::enable_refusal;
using nvmekit::register_file;
using nvmekit::trace_event;
namespace spec = nvmekit::spec;

spec::cc_register cc(bool enabled, spec::shutdown_notification shn = spec::shutdown_notification::none)
{
    spec::cc_register value{};
    value.set(value.en, enabled).set(value.shn, shn);
    return value;
}

std::vector<controller_event> events_of(spec::cc_register old_cc, spec::cc_register new_cc)
{
    const auto events = cc_write_events(old_cc, new_cc);
    return {events.begin(), events.end()};
}

TEST(controller_enable, en_zero_is_always_a_disable)
{
    using spec::shutdown_notification;
    EXPECT_EQ(events_of(cc(true), cc(false)), std::vector{controller_event::disable});
    EXPECT_EQ(events_of(cc(false), cc(false)), std::vector{controller_event::disable});
    EXPECT_EQ(events_of(cc(true), cc(false, shutdown_notification::normal)),
              std::vector{controller_event::disable});
}

TEST(controller_enable, en_zero_to_one_enables_and_a_changed_shn_shuts_down)
{
    using spec::shutdown_notification;
    EXPECT_EQ(events_of(cc(false), cc(true)), std::vector{controller_event::enable});
    EXPECT_EQ(events_of(cc(true), cc(true)), std::vector<controller_event>{});
    EXPECT_EQ(events_of(cc(true), cc(true, shutdown_notification::normal)),
              std::vector{controller_event::shutdown_normal});
    EXPECT_EQ(events_of(cc(true), cc(true, shutdown_notification::abrupt)),
              std::vector{controller_event::shutdown_abrupt});
    EXPECT_EQ(events_of(cc(false), cc(true, shutdown_notification::normal)),
              (std::vector{controller_event::enable, controller_event::shutdown_normal}));
    // SHN unchanged, or back to none: nothing for the state machine.
    EXPECT_EQ(events_of(cc(true, shutdown_notification::normal), cc(true, shutdown_notification::normal)),
              std::vector<controller_event>{});
    EXPECT_EQ(events_of(cc(true, shutdown_notification::normal), cc(true)), std::vector<controller_event>{});
}

/// Registers with CAP.MPSMIN 0 and MPSMAX 4, and a valid admin queue at 4 KiB pages.
register_file valid_registers()
{
    spec::cap_register cap{};
    cap.set(cap.mqes, 1023).set(cap.css_nvm, true).set(cap.mpsmin, 0).set(cap.mpsmax, 4);
    register_file registers{nvmekit::register_file_config{.cap = cap}};
    static_cast<void>(registers.write(0x24, 4, 0x001f'001fU)); // AQA: 32 entries each
    static_cast<void>(registers.write(0x28, 8, 0x10'0000U));   // ASQ
    static_cast<void>(registers.write(0x30, 8, 0x20'0000U));   // ACQ
    return registers;
}

void write_cc(register_file& registers, std::uint32_t mps, std::uint32_t css = 0, std::uint32_t ams = 0)
{
    static_cast<void>(registers.write(0x14, 4, (mps << 7U) | (css << 4U) | (ams << 11U)));
}

TEST(controller_enable, valid_registers_are_accepted)
{
    auto registers = valid_registers();
    write_cc(registers, 0);
    EXPECT_FALSE(enable_refusal(registers, false));
}

TEST(controller_enable, each_refusal_names_its_register)
{
    auto registers = valid_registers();
    write_cc(registers, 5); // MPS beyond MPSMAX
    auto refusal = enable_refusal(registers, false);
    ASSERT_TRUE(refusal);
    EXPECT_EQ(refusal->event, trace_event::err_startfail_page_size);
    EXPECT_EQ(refusal->value, registers.cc().raw);

    write_cc(registers, 0, 1); // CSS: not the NVM command set
    refusal = enable_refusal(registers, false);
    ASSERT_TRUE(refusal);
    EXPECT_EQ(refusal->event, trace_event::err_startfail_css);

    write_cc(registers, 0, 0, 1); // AMS: weighted round robin, not offered
    refusal = enable_refusal(registers, false);
    ASSERT_TRUE(refusal);
    EXPECT_EQ(refusal->event, trace_event::err_startfail_ams);

    write_cc(registers, 0);
    static_cast<void>(registers.write(0x24, 4, 0x001f'0000U)); // ASQS 0: one entry
    refusal = enable_refusal(registers, false);
    ASSERT_TRUE(refusal);
    EXPECT_EQ(refusal->event, trace_event::err_startfail_asq_size);

    static_cast<void>(registers.write(0x24, 4, 0x0000'001fU)); // ACQS 0
    refusal = enable_refusal(registers, false);
    ASSERT_TRUE(refusal);
    EXPECT_EQ(refusal->event, trace_event::err_startfail_acq_size);

    // ASQ and ACQ keep bits 11:0 clear, so only a page above 4 KiB can be misaligned.
    static_cast<void>(registers.write(0x24, 4, 0x001f'001fU));
    write_cc(registers, 1);                                  // 8 KiB pages
    static_cast<void>(registers.write(0x28, 8, 0x10'1000U)); // ASQ on a 4 KiB boundary only
    refusal = enable_refusal(registers, false);
    ASSERT_TRUE(refusal);
    EXPECT_EQ(refusal->event, trace_event::err_startfail_asq_misaligned);
    EXPECT_EQ(refusal->value, 0x10'1000U);

    static_cast<void>(registers.write(0x28, 8, 0x10'0000U));
    static_cast<void>(registers.write(0x30, 8, 0x20'1000U));
    refusal = enable_refusal(registers, false);
    ASSERT_TRUE(refusal);
    EXPECT_EQ(refusal->event, trace_event::err_startfail_acq_misaligned);

    static_cast<void>(registers.write(0x30, 8, 0x20'0000U));
    EXPECT_FALSE(enable_refusal(registers, false));
}

TEST(controller_enable, a_connected_admin_queue_ignores_aqa_asq_and_acq)
{
    spec::cap_register cap{};
    cap.set(cap.mqes, 1023).set(cap.css_nvm, true).set(cap.mpsmin, 0).set(cap.mpsmax, 4);
    register_file registers{nvmekit::register_file_config{.cap = cap}}; // AQA, ASQ, ACQ all 0
    write_cc(registers, 0);
    EXPECT_TRUE(enable_refusal(registers, false));
    EXPECT_FALSE(enable_refusal(registers, true));
    write_cc(registers, 7);
    EXPECT_TRUE(enable_refusal(registers, true)) << "CC is still checked";
}

} // namespace controller_enable_test
} // namespace
