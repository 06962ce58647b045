#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include <nvmekit/contracts/interrupts.hpp>
#include <nvmekit/testing/recording_msix.hpp>

using nvmekit::testing::msix_event;
using nvmekit::testing::recording_msix;

static_assert(nvmekit::IntxInterruptProvider<recording_msix>);
static_assert(nvmekit::check_interrupt_provider<recording_msix>());

TEST(recording_msix, starts_with_no_events_and_intx_deasserted)
{
    const recording_msix msix;
    EXPECT_TRUE(msix.events().empty());
    EXPECT_EQ(msix.count(0), 0U);
    EXPECT_FALSE(msix.intx_level());
    EXPECT_EQ(msix.intx_transitions(), 0U);
}

TEST(recording_msix, records_each_raise_in_order)
{
    recording_msix msix;
    msix.raise_msix(3, {0xfee0'0000, 0x41});
    msix.raise_msix(0, {0xfee0'1000, 0x20});
    msix.raise_msix(3, {0xfee0'0000, 0x42});
    const std::vector<msix_event> expected{
        {3, {0xfee0'0000, 0x41}},
        {0, {0xfee0'1000, 0x20}},
        {3, {0xfee0'0000, 0x42}},
    };
    EXPECT_EQ(std::vector<msix_event>(msix.events().begin(), msix.events().end()), expected);
    EXPECT_EQ(msix.count(3), 2U);
    EXPECT_EQ(msix.count(0), 1U);
    EXPECT_EQ(msix.count(1), 0U);
    EXPECT_EQ(msix.count(0xffff), 0U);
}

TEST(recording_msix, events_compare_vector_and_message)
{
    const msix_event event{5, {0x1000, 7}};
    EXPECT_EQ(event, (msix_event{5, {0x1000, 7}}));
    EXPECT_NE(event, (msix_event{6, {0x1000, 7}}));
    EXPECT_NE(event, (msix_event{5, {0x1004, 7}}));
    EXPECT_NE(event, (msix_event{5, {0x1000, 8}}));
}

TEST(recording_msix, set_intx_counts_level_changes_only)
{
    recording_msix msix;
    msix.set_intx(false);
    EXPECT_EQ(msix.intx_transitions(), 0U);
    msix.set_intx(true);
    EXPECT_TRUE(msix.intx_level());
    EXPECT_EQ(msix.intx_transitions(), 1U);
    msix.set_intx(true);
    EXPECT_EQ(msix.intx_transitions(), 1U);
    msix.set_intx(false);
    EXPECT_FALSE(msix.intx_level());
    EXPECT_EQ(msix.intx_transitions(), 2U);
    EXPECT_TRUE(msix.events().empty());
}

TEST(recording_msix, clear_forgets_events_and_transitions_but_keeps_the_intx_level)
{
    recording_msix msix;
    msix.raise_msix(1, {});
    msix.set_intx(true);
    msix.clear();
    EXPECT_TRUE(msix.events().empty());
    EXPECT_EQ(msix.count(1), 0U);
    EXPECT_EQ(msix.intx_transitions(), 0U);
    EXPECT_TRUE(msix.intx_level());
    msix.set_intx(false);
    EXPECT_EQ(msix.intx_transitions(), 1U);
    msix.raise_msix(2, {0x10, 1});
    ASSERT_EQ(msix.events().size(), 1U);
    EXPECT_EQ(msix.events()[0], (msix_event{2, {0x10, 1}}));
}

// ---- the accessors that stay safe while raises happen (threaded_providers_test.cpp runs them
// against raising threads) --------------------------------------------------------------------------

TEST(recording_msix, snapshot_copies_the_events_and_total_counts_every_vector)
{
    recording_msix msix;
    EXPECT_TRUE(msix.snapshot().empty());
    EXPECT_EQ(msix.total(), 0U);
    msix.raise_msix(3, {0xfee0'0000, 0x41});
    msix.raise_msix(0, {0xfee0'1000, 0x20});
    const std::vector<msix_event> before = msix.snapshot();
    msix.raise_msix(2047, {0xfee0'0000, 0x42});
    const std::vector<msix_event> expected{{3, {0xfee0'0000, 0x41}}, {0, {0xfee0'1000, 0x20}}};
    EXPECT_EQ(before, expected); // a copy: later raises do not show in it
    EXPECT_EQ(msix.snapshot().size(), 3U);
    EXPECT_EQ(msix.snapshot().back(), (msix_event{2047, {0xfee0'0000, 0x42}}));
    EXPECT_EQ(msix.total(), 3U);
    EXPECT_EQ(msix.count(2047), 1U);
    EXPECT_EQ(msix.count(2046), 0U);
    EXPECT_EQ(msix.count(4), 0U);
    msix.clear();
    EXPECT_EQ(msix.total(), 0U);
    EXPECT_EQ(msix.count(2047), 0U);
    EXPECT_TRUE(msix.snapshot().empty());
    msix.raise_msix(2047, {});
    EXPECT_EQ(msix.count(2047), 1U);
}

TEST(recording_msix, a_copy_has_the_recording_and_the_pin_and_goes_its_own_way)
{
    recording_msix msix;
    msix.raise_msix(1, {0x10, 1});
    msix.set_intx(true);
    recording_msix copy{msix};
    EXPECT_EQ(copy.snapshot(), msix.snapshot());
    EXPECT_EQ(copy.count(1), 1U);
    EXPECT_TRUE(copy.intx_level());
    EXPECT_EQ(copy.intx_transitions(), 1U);
    copy.raise_msix(1, {0x10, 2});
    EXPECT_EQ(copy.count(1), 2U);
    EXPECT_EQ(msix.count(1), 1U);

    recording_msix assigned;
    assigned.raise_msix(5, {});
    assigned = msix;
    EXPECT_EQ(assigned.count(5), 0U);
    EXPECT_EQ(assigned.count(1), 1U);
    EXPECT_EQ(assigned.total(), 1U);
    EXPECT_TRUE(assigned.intx_level());
}
