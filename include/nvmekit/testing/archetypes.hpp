#pragma once
/// Archetypes: the least a type must declare to model each provider concept. Documentation and
/// static tests use them; every member does nothing and reports success.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <system_error>

#include <nvmekit/config.hpp>
#include <nvmekit/contracts/async_dma.hpp>
#include <nvmekit/contracts/clock.hpp>
#include <nvmekit/contracts/dma.hpp>
#include <nvmekit/contracts/interrupts.hpp>
#include <nvmekit/contracts/tracer.hpp>
#include <nvmekit/timing/timing_model.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace testing {

/// Models DmaProvider and nothing more.
struct dma_archetype {
    std::error_code read(std::uint64_t, std::span<std::byte>) { return {}; }
    std::error_code write(std::uint64_t, std::span<const std::byte>) { return {}; }
};

/// Models MappingDmaProvider; map() returns an empty span, which tells the controller to fall
/// back to read/write.
struct mapping_dma_archetype {
    std::error_code read(std::uint64_t, std::span<std::byte>) { return {}; }
    std::error_code write(std::uint64_t, std::span<const std::byte>) { return {}; }
    std::span<std::byte> map(std::uint64_t, std::size_t) { return {}; }
};

/// Models AsyncDmaProvider and nothing more: every request completes inside submit() with
/// success, touching nothing.
struct async_dma_archetype {
    void submit(dma_request& request) { nvmekit::detail::complete_dma_request(request, {}); }
    std::size_t poll() { return 0; }
    std::size_t outstanding() const { return 0; }
};

/// Models InterruptProvider and nothing more.
struct interrupt_archetype {
    void raise_msix(std::uint16_t, msix_message) {}
};

/// Models IntxInterruptProvider.
struct intx_interrupt_archetype {
    void raise_msix(std::uint16_t, msix_message) {}
    void set_intx(bool) {}
};

/// Models Clock; its time is always 0.
struct clock_archetype {
    std::chrono::nanoseconds now() const { return {}; }
};

/// Models Tracer; it drops every event.
struct tracer_archetype {
    void trace(const trace_record&) {}
};

/// Models timing::TimingModel; every request completes when it is submitted.
struct timing_model_archetype {
    std::chrono::nanoseconds complete_at(const timing::timing_request&, std::chrono::nanoseconds now)
    {
        return now;
    }
};

static_assert(DmaProvider<dma_archetype> && !MappingDmaProvider<dma_archetype>);
static_assert(check_dma_provider<dma_archetype>());
static_assert(MappingDmaProvider<mapping_dma_archetype>);
static_assert(check_dma_provider<mapping_dma_archetype>());
static_assert(AsyncDmaProvider<async_dma_archetype> && !InlineAsyncDmaProvider<async_dma_archetype>);
static_assert(check_async_dma_provider<async_dma_archetype>());
static_assert(InterruptProvider<interrupt_archetype> && !IntxInterruptProvider<interrupt_archetype>);
static_assert(check_interrupt_provider<interrupt_archetype>());
static_assert(IntxInterruptProvider<intx_interrupt_archetype>);
static_assert(check_interrupt_provider<intx_interrupt_archetype>());
static_assert(Clock<clock_archetype>);
static_assert(check_clock<clock_archetype>());
static_assert(Tracer<tracer_archetype>);
static_assert(check_tracer<tracer_archetype>());
static_assert(timing::TimingModel<timing_model_archetype>);
static_assert(timing::check_timing_model<timing_model_archetype>());

} // namespace testing
NVMEKIT_END_NAMESPACE
