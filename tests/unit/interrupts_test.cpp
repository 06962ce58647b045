#include <nvmekit/contracts/interrupts.hpp>

#include <cstdint>
#include <type_traits>
#include <vector>

#include <gtest/gtest.h>

#include <nvmekit/testing/archetypes.hpp>
#include <nvmekit/testing/recording_msix.hpp>

using nvmekit::check_interrupt_provider;
using nvmekit::InterruptProvider;
using nvmekit::IntxInterruptProvider;
using nvmekit::msix_message;
using nvmekit::MsixRaisable;
using nvmekit::testing::interrupt_archetype;
using nvmekit::testing::intx_interrupt_archetype;
using nvmekit::testing::msix_event;
using nvmekit::testing::recording_msix;

namespace {

struct no_raise {
    void set_intx(bool) {}
};
struct raise_returns_bool {
    bool raise_msix(std::uint16_t, msix_message) { return true; }
};
/// A raise that takes only the data cannot be given the table entry.
struct raise_takes_the_data_only {
    void raise_msix(std::uint16_t, std::uint32_t) {}
};
struct set_intx_returns_bool {
    void raise_msix(std::uint16_t, msix_message) {}
    bool set_intx(bool) { return true; }
};

/// What the controller does with a provider: raise a vector, and drive INTx when there is a pin.
template <InterruptProvider Interrupts>
void signal(Interrupts& interrupts, std::uint16_t vector, msix_message message)
{
    static_assert(check_interrupt_provider<Interrupts>());
    if constexpr (IntxInterruptProvider<Interrupts>) {
        interrupts.set_intx(true);
    }
    interrupts.raise_msix(vector, message);
}

} // namespace

static_assert(InterruptProvider<interrupt_archetype> && !IntxInterruptProvider<interrupt_archetype>);
static_assert(IntxInterruptProvider<intx_interrupt_archetype>);
static_assert(IntxInterruptProvider<recording_msix>);
static_assert(check_interrupt_provider<interrupt_archetype>());
static_assert(check_interrupt_provider<recording_msix>());

static_assert(!MsixRaisable<no_raise> && !InterruptProvider<no_raise> && !IntxInterruptProvider<no_raise>);
static_assert(!InterruptProvider<raise_returns_bool>);
static_assert(!InterruptProvider<raise_takes_the_data_only>);
static_assert(InterruptProvider<set_intx_returns_bool> && !IntxInterruptProvider<set_intx_returns_bool>);
// Raising changes the provider: a const one is not a provider.
static_assert(!InterruptProvider<const interrupt_archetype>);

static_assert(std::is_trivially_copyable_v<msix_message>);
static_assert(msix_message{} == msix_message{0, 0});
static_assert(msix_message{0xfee0'0000, 0x41} == msix_message{0xfee0'0000, 0x41});
static_assert(msix_message{0xfee0'0000, 0x41} != msix_message{0xfee0'0000, 0x42});
static_assert(msix_message{0xfee0'0000, 0x41} != msix_message{0xfee0'1000, 0x41});

TEST(interrupts, msix_message_compares_address_and_data)
{
    const msix_message message{0xfee0'0000'0000'1000, 0x4021};
    EXPECT_EQ(message.address, 0xfee0'0000'0000'1000U);
    EXPECT_EQ(message.data, 0x4021U);
    // The address is 64 bits wide: a message differing only above bit 31 is another message.
    EXPECT_NE(message, (msix_message{0x0000'0000'0000'1000, 0x4021}));
    EXPECT_EQ(message, (msix_message{0xfee0'0000'0000'1000, 0x4021}));
}

TEST(interrupts, a_component_written_against_the_concept_drives_the_recording_provider)
{
    recording_msix interrupts;
    signal(interrupts, 3, {0xfee0'0000, 7});
    signal(interrupts, 0, {0xfee0'1000, 8});

    const std::vector<msix_event> expected{{3, {0xfee0'0000, 7}}, {0, {0xfee0'1000, 8}}};
    EXPECT_EQ(interrupts.snapshot(), expected);
    EXPECT_TRUE(interrupts.intx_level());
    EXPECT_EQ(interrupts.intx_transitions(), 1U);

    interrupt_archetype msix_only;
    signal(msix_only, 1, {});
}
