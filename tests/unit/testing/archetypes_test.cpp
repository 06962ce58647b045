#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <system_error>

#include <gtest/gtest.h>

#include <nvmekit/contracts/async_dma.hpp>
#include <nvmekit/contracts/clock.hpp>
#include <nvmekit/contracts/dma.hpp>
#include <nvmekit/contracts/interrupts.hpp>
#include <nvmekit/contracts/tracer.hpp>
#include <nvmekit/testing/archetypes.hpp>

using nvmekit::testing::async_dma_archetype;
using nvmekit::testing::clock_archetype;
using nvmekit::testing::dma_archetype;
using nvmekit::testing::interrupt_archetype;
using nvmekit::testing::intx_interrupt_archetype;
using nvmekit::testing::mapping_dma_archetype;
using nvmekit::testing::tracer_archetype;

namespace {

/// A component written against the concepts, as the library's own components are: it accepts
/// any model, so the archetypes prove that nothing beyond the concept is required.
template <nvmekit::DmaProvider Dma, nvmekit::InterruptProvider Interrupts, nvmekit::Clock Clock>
std::error_code copy_and_signal(Dma& dma, Interrupts& interrupts, const Clock& clock)
{
    static_assert(nvmekit::check_dma_provider<Dma>());
    static_assert(nvmekit::check_interrupt_provider<Interrupts>());
    static_assert(nvmekit::check_clock<Clock>());
    std::uint64_t value{};
    if (const auto error = nvmekit::dma_read_object(dma, 0x1000, value)) {
        return error;
    }
    if (const auto error = nvmekit::dma_write_object(dma, 0x2000, value)) {
        return error;
    }
    if constexpr (nvmekit::MappingDmaProvider<Dma>) {
        static_cast<void>(dma.map(0x3000, 8));
    }
    if constexpr (nvmekit::IntxInterruptProvider<Interrupts>) {
        interrupts.set_intx(true);
    }
    interrupts.raise_msix(
        1, nvmekit::msix_message{0xfee0'0000, static_cast<std::uint32_t>(clock.now().count())});
    return {};
}

} // namespace

static_assert(nvmekit::DmaProvider<dma_archetype>);
static_assert(!nvmekit::MappingDmaProvider<dma_archetype>);
static_assert(nvmekit::MappingDmaProvider<mapping_dma_archetype>);
static_assert(nvmekit::InterruptProvider<interrupt_archetype>);
static_assert(!nvmekit::IntxInterruptProvider<interrupt_archetype>);
static_assert(nvmekit::IntxInterruptProvider<intx_interrupt_archetype>);
static_assert(nvmekit::Clock<clock_archetype>);
static_assert(!nvmekit::DmaProvider<interrupt_archetype>);
static_assert(!nvmekit::InterruptProvider<dma_archetype>);
static_assert(!nvmekit::Clock<dma_archetype>);
static_assert(nvmekit::AsyncDmaProvider<async_dma_archetype>);
static_assert(!nvmekit::DmaProvider<async_dma_archetype>);
static_assert(!nvmekit::AsyncDmaProvider<dma_archetype>);

TEST(archetypes, dma_archetypes_report_success_and_map_nothing)
{
    dma_archetype dma;
    mapping_dma_archetype mapping;
    std::array<std::byte, 4> buffer{std::byte{1}, std::byte{2}, std::byte{3}, std::byte{4}};
    EXPECT_EQ(dma.read(0, buffer), std::error_code{});
    EXPECT_EQ(dma.write(0, buffer), std::error_code{});
    EXPECT_EQ(mapping.read(0, buffer), std::error_code{});
    EXPECT_EQ(mapping.write(0, buffer), std::error_code{});
    EXPECT_TRUE(mapping.map(0, 4).empty());
    EXPECT_EQ(buffer, (std::array<std::byte, 4>{std::byte{1}, std::byte{2}, std::byte{3}, std::byte{4}}));
}

TEST(archetypes, interrupt_and_clock_archetypes_do_nothing)
{
    interrupt_archetype interrupts;
    intx_interrupt_archetype intx;
    interrupts.raise_msix(0, {});
    intx.raise_msix(0, {});
    intx.set_intx(true);
    EXPECT_EQ(clock_archetype{}.now(), std::chrono::nanoseconds{0});
}

TEST(archetypes, a_component_written_against_the_concepts_accepts_every_archetype)
{
    dma_archetype dma;
    mapping_dma_archetype mapping;
    interrupt_archetype interrupts;
    intx_interrupt_archetype intx;
    const clock_archetype clock;
    EXPECT_EQ(copy_and_signal(dma, interrupts, clock), std::error_code{});
    EXPECT_EQ(copy_and_signal(mapping, intx, clock), std::error_code{});
}

TEST(archetypes, the_tracer_archetype_takes_every_event)
{
    static_assert(nvmekit::check_tracer<tracer_archetype>());
    tracer_archetype tracer;
    for (std::size_t i = 0; i < nvmekit::trace_event_count; ++i) {
        tracer.trace({.event = static_cast<nvmekit::trace_event>(i)});
    }
    SUCCEED();
}
