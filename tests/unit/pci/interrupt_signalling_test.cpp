#include <nvmekit/pci/interrupt_signalling.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <vector>

namespace {
namespace pci_interrupt_signalling_test {

using nvmekit::pci::intx_pin;
using nvmekit::pci::vector_signalling;
using namespace std::chrono_literals;

std::vector<std::uint16_t> raised(vector_signalling& signalling, std::chrono::nanoseconds now)
{
    std::vector<std::uint16_t> vectors;
    signalling.raise_due(now, [&](std::uint16_t vector) { vectors.push_back(vector); });
    return vectors;
}

TEST(vector_signalling, a_vector_is_raised_once_per_poll_in_the_order_it_became_due)
{
    vector_signalling signalling{8};
    signalling.on_completions(5, true, 1, 0ns);
    signalling.on_completions(2, true, 3, 0ns);
    signalling.on_completions(5, true, 2, 0ns); // a second CQ on vector 5
    EXPECT_TRUE(signalling.due(5));
    EXPECT_TRUE(signalling.due(2));
    EXPECT_FALSE(signalling.due(0));
    EXPECT_EQ(raised(signalling, 0ns), (std::vector<std::uint16_t>{5, 2}));
    EXPECT_FALSE(signalling.due(5));
    EXPECT_TRUE(raised(signalling, 0ns).empty()) << "nothing is raised twice";
}

TEST(vector_signalling, coalescing_holds_io_vectors_back_but_never_the_admin_cq)
{
    vector_signalling signalling{4};
    signalling.coalescer().configure(3, 10); // THR 4 entries, TIME 1 ms
    signalling.on_completions(1, true, 3, 0ns);
    EXPECT_FALSE(signalling.due(1));
    signalling.on_completions(1, true, 1, 0ns); // the fourth entry
    EXPECT_TRUE(signalling.due(1));
    EXPECT_EQ(raised(signalling, 0ns), (std::vector<std::uint16_t>{1}));

    signalling.on_completions(0, false, 1, 0ns); // admin CQ: coalesce = false
    EXPECT_EQ(raised(signalling, 0ns), (std::vector<std::uint16_t>{0}));
}

TEST(vector_signalling, an_aggregation_time_that_passed_makes_its_vector_due)
{
    vector_signalling signalling{4};
    signalling.coalescer().configure(9, 1); // THR 10 entries, TIME 100 us
    signalling.on_completions(3, true, 2, 0ns);
    EXPECT_TRUE(raised(signalling, 50us).empty());
    EXPECT_EQ(raised(signalling, 100us), (std::vector<std::uint16_t>{3}));
}

struct counting_intx {
    std::vector<bool> levels;
    void set_intx(bool level) { levels.push_back(level); }
};

TEST(intx_pin, drives_the_pin_only_when_its_level_changes)
{
    counting_intx provider;
    intx_pin pin{provider};
    EXPECT_FALSE(pin.level());
    pin.set_level(false);
    pin.set_level(true);
    pin.set_level(true);
    pin.set_level(false);
    EXPECT_EQ(provider.levels, (std::vector<bool>{true, false}));
    EXPECT_FALSE(pin.level());
}

TEST(intx_pin, concurrent_reports_assert_the_pin_while_allowed_and_wanted)
{
    counting_intx provider;
    intx_pin pin{provider};
    bool group_wants = false;
    const auto any_group = [&] { return group_wants; };
    pin.report_admin(true, false);
    pin.refresh(any_group);
    EXPECT_FALSE(pin.level());
    group_wants = true;
    pin.refresh(any_group);
    EXPECT_TRUE(pin.level());
    pin.report_admin(false, true); // MSI-X enabled or INTMS masks the pin
    pin.refresh(any_group);
    EXPECT_FALSE(pin.level());
    pin.report_admin(true, true);
    group_wants = false;
    pin.refresh(any_group);
    EXPECT_TRUE(pin.level()) << "the admin CQ wants it";
    EXPECT_EQ(provider.levels, (std::vector<bool>{true, false, true}));
}

} // namespace pci_interrupt_signalling_test
} // namespace
