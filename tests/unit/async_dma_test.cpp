#include <nvmekit/contracts/async_dma.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <system_error>
#include <vector>

#include <gtest/gtest.h>

#include <nvmekit/contracts/dma.hpp>
#include <nvmekit/error.hpp>
#include <nvmekit/testing/archetypes.hpp>
#include <nvmekit/testing/flat_memory.hpp>
#include <nvmekit/testing/recording_dma.hpp>

using nvmekit::AsyncDmaOutstandingCounting;
using nvmekit::AsyncDmaPollable;
using nvmekit::AsyncDmaProvider;
using nvmekit::AsyncDmaSubmittable;
using nvmekit::check_async_dma_provider;
using nvmekit::dma_operation;
using nvmekit::dma_request;
using nvmekit::DmaProvider;
using nvmekit::errc;
using nvmekit::InlineAsyncDmaProvider;
using nvmekit::MappingDmaProvider;
using nvmekit::sync_dma_adapter;
using nvmekit::testing::async_dma_archetype;
using nvmekit::testing::dma_archetype;
using nvmekit::testing::flat_memory;
using nvmekit::testing::mapping_dma_archetype;
using nvmekit::testing::recording_dma;

namespace {
namespace async_dma_test {

/// Lacks poll(): cannot tell when a late completion happens.
struct no_poll {
    void submit(dma_request&) {}
    std::size_t outstanding() const { return 0; }
};
struct no_submit {
    std::size_t poll() { return 0; }
    std::size_t outstanding() const { return 0; }
};
struct no_outstanding {
    void submit(dma_request&) {}
    std::size_t poll() { return 0; }
};
/// outstanding() must be callable on a const provider.
struct outstanding_not_const {
    void submit(dma_request&) {}
    std::size_t poll() { return 0; }
    std::size_t outstanding() { return 0; }
};
struct poll_returns_bool {
    void submit(dma_request&) {}
    bool poll() { return false; }
    std::size_t outstanding() const { return 0; }
};
/// submit() must return void: a provider reports its result through `complete` only.
struct submit_returns_a_code {
    std::error_code submit(dma_request&) { return {}; }
    std::size_t poll() { return 0; }
    std::size_t outstanding() const { return 0; }
};
/// Declares completes_inline false: asynchronous, whatever it does.
struct declares_not_inline {
    static constexpr bool completes_inline = false;
    void submit(dma_request&) {}
    std::size_t poll() { return 0; }
    std::size_t outstanding() const { return 0; }
};

static_assert(AsyncDmaProvider<async_dma_archetype>);
static_assert(check_async_dma_provider<async_dma_archetype>());
static_assert(!AsyncDmaPollable<no_poll> && AsyncDmaSubmittable<no_poll> &&
              AsyncDmaOutstandingCounting<no_poll>);
static_assert(!AsyncDmaProvider<no_poll>);
static_assert(!AsyncDmaProvider<no_submit>);
static_assert(!AsyncDmaProvider<no_outstanding>);
static_assert(!AsyncDmaProvider<outstanding_not_const>);
static_assert(!AsyncDmaProvider<poll_returns_bool>);
static_assert(!AsyncDmaProvider<submit_returns_a_code>);
static_assert(!AsyncDmaProvider<dma_archetype>);

static_assert(!InlineAsyncDmaProvider<async_dma_archetype>);
static_assert(AsyncDmaProvider<declares_not_inline> && !InlineAsyncDmaProvider<declares_not_inline>);

static_assert(AsyncDmaProvider<sync_dma_adapter<dma_archetype>>);
static_assert(check_async_dma_provider<sync_dma_adapter<flat_memory>>());
static_assert(InlineAsyncDmaProvider<sync_dma_adapter<dma_archetype>>);
static_assert(DmaProvider<sync_dma_adapter<dma_archetype>>);
static_assert(!MappingDmaProvider<sync_dma_adapter<dma_archetype>>);
static_assert(MappingDmaProvider<sync_dma_adapter<mapping_dma_archetype>>);
static_assert(sync_dma_adapter<flat_memory>::completes_inline);

constexpr std::uint64_t base = 0x4000;
const std::error_code fault = make_error_code(errc::dma_fault);
const std::error_code unmapped = make_error_code(errc::dma_unmapped);

/// Collects completions: which request, with what result, in order.
struct completions {
    struct entry {
        dma_request* request;
        std::error_code result;
    };
    std::vector<entry> entries;

    static void record(dma_request& request, std::error_code result)
    {
        static_cast<completions*>(request.context)->entries.push_back({&request, result});
    }

    dma_request make(dma_operation operation, std::uint64_t address, std::span<std::byte> buffer)
    {
        return dma_request{operation, address, buffer, &record, this};
    }
};

std::array<std::byte, 4> bytes(std::uint8_t a, std::uint8_t b, std::uint8_t c, std::uint8_t d)
{
    return {std::byte{a}, std::byte{b}, std::byte{c}, std::byte{d}};
}

TEST(async_dma, the_archetype_completes_inline_with_success)
{
    async_dma_archetype provider;
    completions seen;
    std::array<std::byte, 4> buffer{};
    dma_request request = seen.make(dma_operation::read, base, buffer);
    provider.submit(request);
    ASSERT_EQ(seen.entries.size(), 1U);
    EXPECT_EQ(seen.entries[0].request, &request);
    EXPECT_FALSE(seen.entries[0].result);
    EXPECT_EQ(provider.poll(), 0U);
    EXPECT_EQ(provider.outstanding(), 0U);
}

TEST(async_dma, the_adapter_writes_and_reads_inside_submit)
{
    flat_memory memory;
    memory.add_range(base, 0x1000);
    sync_dma_adapter dma{memory};
    completions seen;

    auto source = bytes(1, 2, 3, 4);
    dma_request write = seen.make(dma_operation::write, base + 8, source);
    dma.submit(write);
    ASSERT_EQ(seen.entries.size(), 1U);
    EXPECT_EQ(seen.entries[0].request, &write);
    EXPECT_FALSE(seen.entries[0].result);
    EXPECT_EQ(source, bytes(1, 2, 3, 4));

    std::array<std::byte, 4> destination{};
    dma_request read = seen.make(dma_operation::read, base + 8, destination);
    dma.submit(read);
    ASSERT_EQ(seen.entries.size(), 2U);
    EXPECT_EQ(seen.entries[1].request, &read);
    EXPECT_FALSE(seen.entries[1].result);
    EXPECT_EQ(destination, bytes(1, 2, 3, 4));

    EXPECT_EQ(dma.poll(), 0U);
    EXPECT_EQ(dma.outstanding(), 0U);
    EXPECT_EQ(&dma.inner(), &memory);
}

TEST(async_dma, the_adapter_completes_with_the_wrapped_providers_error_codes)
{
    flat_memory memory;
    memory.add_range(base, 0x1000);
    recording_dma recording{memory};
    sync_dma_adapter dma{recording};
    completions seen;

    std::array<std::byte, 4> buffer{};
    dma_request outside = seen.make(dma_operation::read, 0x100000, buffer);
    dma.submit(outside);
    recording.fail_nth(1, nvmekit::testing::access_kind::write);
    dma_request injected = seen.make(dma_operation::write, base, buffer);
    dma.submit(injected);
    dma_request fine = seen.make(dma_operation::write, base, buffer);
    dma.submit(fine);

    ASSERT_EQ(seen.entries.size(), 3U);
    EXPECT_EQ(seen.entries[0].result, unmapped);
    EXPECT_EQ(seen.entries[1].result, fault);
    EXPECT_FALSE(seen.entries[2].result);
    EXPECT_EQ(recording.reads(), 1U);
    EXPECT_EQ(recording.writes(), 2U);
}

TEST(async_dma, an_unknown_operation_is_invalid_argument_and_touches_nothing)
{
    flat_memory memory;
    memory.add_range(base, 0x1000);
    recording_dma recording{memory};
    sync_dma_adapter dma{recording};
    completions seen;
    std::array<std::byte, 4> buffer{};
    dma_request request = seen.make(static_cast<dma_operation>(7), base, buffer);
    dma.submit(request);
    ASSERT_EQ(seen.entries.size(), 1U);
    EXPECT_EQ(seen.entries[0].result, std::make_error_code(std::errc::invalid_argument));
    EXPECT_EQ(recording.reads() + recording.writes(), 0U);
}

TEST(async_dma, the_adapter_forwards_read_write_and_map)
{
    flat_memory memory;
    memory.add_range(base, 0x1000);
    sync_dma_adapter dma{memory};
    const auto source = bytes(9, 8, 7, 6);
    EXPECT_FALSE(dma.write(base, source));
    std::array<std::byte, 4> destination{};
    EXPECT_FALSE(dma.read(base, destination));
    EXPECT_EQ(destination, source);
    const std::span<std::byte> mapped = dma.map(base, 4);
    ASSERT_EQ(mapped.size(), 4U);
    EXPECT_EQ(mapped[0], std::byte{9});
    EXPECT_EQ(dma.read(0x100000, destination), unmapped);
}

/// A callback that submits again runs inside the outer submit(), as documented.
TEST(async_dma, a_callback_submitting_again_through_the_adapter_completes_inline)
{
    flat_memory memory;
    memory.add_range(base, 0x1000);
    sync_dma_adapter dma{memory};
    struct chain {
        sync_dma_adapter<flat_memory>* dma;
        int remaining;
        int completions;
    } state{&dma, 3, 0};
    std::array<std::byte, 4> buffer{};
    dma_request request{dma_operation::read, base, buffer,
                        [](dma_request& done, std::error_code result) {
                            EXPECT_FALSE(result);
                            auto& self = *static_cast<chain*>(done.context);
                            ++self.completions;
                            if (--self.remaining > 0) {
                                self.dma->submit(done);
                            }
                        },
                        &state};
    dma.submit(request);
    EXPECT_EQ(state.completions, 3);
}

} // namespace async_dma_test
} // namespace
