#include <nvmekit/testing/async_dma.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <nvmekit/contracts/async_dma.hpp>
#include <nvmekit/error.hpp>
#include <nvmekit/testing/archetypes.hpp>
#include <nvmekit/testing/flat_memory.hpp>
#include <nvmekit/testing/manual_clock.hpp>

#include "../thread_group.hpp"

using namespace std::chrono_literals;
using nvmekit::dma_operation;
using nvmekit::dma_request;
using nvmekit::errc;
using nvmekit::testing::async_dma;
using nvmekit::testing::async_dma_counts;
using nvmekit::testing::async_dma_options;
using nvmekit::testing::flat_memory;
using nvmekit::testing::manual_clock;

static_assert(nvmekit::AsyncDmaProvider<async_dma<flat_memory>>);
static_assert(nvmekit::check_async_dma_provider<async_dma<flat_memory, manual_clock>>());
static_assert(nvmekit::check_async_dma_provider<async_dma<nvmekit::testing::dma_archetype>>());
static_assert(!nvmekit::InlineAsyncDmaProvider<async_dma<flat_memory>>);

namespace {

constexpr std::uint64_t base = 0x10000;
constexpr std::size_t region = 0x10000;
const std::error_code fault = make_error_code(errc::dma_fault);
const std::error_code unmapped = make_error_code(errc::dma_unmapped);
const std::error_code overflow = std::make_error_code(std::errc::resource_unavailable_try_again);

/// Collects completions in the order they happen.
struct completions {
    struct entry {
        std::size_t index; ///< the request's position in the fixture's requests
        std::error_code result;
        friend bool operator==(const entry&, const entry&) = default;
    };
    std::vector<entry> entries;
};

/// Host memory, a clock, an async_dma and requests that write or read 8 bytes each.
struct fixture {
    explicit fixture(async_dma_options options = {.min_delay = 1us, .max_delay = 100us, .seed = 42},
                     std::size_t max_outstanding = 64)
        : dma{memory, clock, max_outstanding, options}
    {
        memory.add_range(base, region);
        requests.reserve(256);
        buffers.reserve(256);
    }

    static void record(dma_request& request, std::error_code result)
    {
        auto* self = static_cast<fixture*>(request.context);
        const auto index = static_cast<std::size_t>(&request - self->requests.data());
        self->seen.entries.push_back({index, result});
    }

    /// Adds a request on its own 8-byte buffer; a write's buffer holds the byte `fill`.
    dma_request& add(dma_operation operation, std::uint64_t address, std::uint8_t fill = 0)
    {
        buffers.emplace_back();
        buffers.back().fill(std::byte{fill});
        requests.push_back(dma_request{operation, address, buffers.back(), &record, this});
        return requests.back();
    }

    /// Adds and submits `count` writes, the i-th to base + 8 i holding i + 1.
    void submit_writes(std::size_t count)
    {
        for (std::size_t i = 0; i < count; ++i) {
            dma.submit(add(dma_operation::write, base + 8 * i, static_cast<std::uint8_t>(i + 1)));
        }
    }

    [[nodiscard]] std::byte host_byte(std::uint64_t address) const
    {
        std::array<std::byte, 1> byte{};
        EXPECT_FALSE(memory.read(address, byte));
        return byte[0];
    }

    /// Advances the clock past every due time and polls until nothing waits.
    void drain()
    {
        while (dma.outstanding() != 0) {
            clock.advance(1ms);
            dma.poll();
        }
    }

    [[nodiscard]] std::vector<std::size_t> order() const
    {
        std::vector<std::size_t> indices;
        for (const auto& entry : seen.entries) {
            indices.push_back(entry.index);
        }
        return indices;
    }

    flat_memory memory;
    manual_clock clock;
    async_dma<flat_memory> dma;
    std::vector<dma_request> requests;
    std::vector<std::array<std::byte, 8>> buffers;
    completions seen;
};

TEST(async_dma, construction_rejects_a_zero_bound_and_bad_delays)
{
    flat_memory memory;
    manual_clock clock;
    using provider = async_dma<flat_memory>;
    EXPECT_THROW(provider(memory, clock, 0), std::invalid_argument);
    EXPECT_THROW(provider(memory, clock, 1, {.min_delay = -1ns}), std::invalid_argument);
    EXPECT_THROW(provider(memory, clock, 1, {.min_delay = 2us, .max_delay = 1us}), std::invalid_argument);
    const provider fine{memory, clock, 3, {.min_delay = 1us, .max_delay = 1us}};
    EXPECT_EQ(fine.max_outstanding(), 3U);
    EXPECT_EQ(&fine.inner(), &memory);
}

TEST(async_dma, nothing_reaches_memory_or_the_buffer_before_completion)
{
    fixture f{{.min_delay = 10us, .max_delay = 10us}};
    ASSERT_FALSE(f.memory.write(base + 0x100, std::array{std::byte{0x5a}}));
    dma_request& write = f.add(dma_operation::write, base, 0xab);
    dma_request& read = f.add(dma_operation::read, base + 0x100, 0);
    f.dma.submit(write);
    f.dma.submit(read);

    EXPECT_TRUE(f.seen.entries.empty());
    EXPECT_EQ(f.dma.outstanding(), 2U);
    EXPECT_EQ(f.host_byte(base), std::byte{0});
    EXPECT_EQ(f.buffers[1][0], std::byte{0});
    EXPECT_EQ(f.dma.next_due(), std::optional{10us});

    f.clock.advance(9us);
    EXPECT_EQ(f.dma.poll(), 0U);
    EXPECT_EQ(f.host_byte(base), std::byte{0});
    EXPECT_EQ(f.buffers[1][0], std::byte{0});

    f.clock.advance(1us);
    EXPECT_EQ(f.dma.poll(), 2U);
    EXPECT_EQ(f.order(), (std::vector<std::size_t>{0, 1}));
    EXPECT_EQ(f.host_byte(base), std::byte{0xab});
    EXPECT_EQ(f.host_byte(base + 7), std::byte{0xab});
    EXPECT_EQ(f.buffers[1][0], std::byte{0x5a});
    EXPECT_EQ(f.dma.outstanding(), 0U);
    EXPECT_EQ(f.dma.next_due(), std::nullopt);
}

TEST(async_dma, the_data_moves_just_before_each_completion_in_completion_order)
{
    fixture f;
    f.submit_writes(16);
    // Each completion checks its own bytes are there and that those of requests not yet
    // completed are not.
    struct probe {
        fixture* f;
        std::vector<bool> done = std::vector<bool>(16);
        bool consistent = true;
    } state{&f};
    for (auto& request : f.requests) {
        request.context = &state;
        request.complete = [](dma_request& done, std::error_code result) {
            auto& self = *static_cast<probe*>(done.context);
            EXPECT_FALSE(result);
            const auto index = static_cast<std::size_t>(&done - self.f->requests.data());
            self.done[index] = true;
            for (std::size_t i = 0; i < self.done.size(); ++i) {
                const std::byte expected =
                    self.done[i] ? std::byte{static_cast<std::uint8_t>(i + 1)} : std::byte{0};
                self.consistent = self.consistent && self.f->host_byte(base + 8 * i) == expected;
            }
        };
    }
    f.clock.advance(100us);
    EXPECT_EQ(f.dma.poll(), 16U);
    EXPECT_TRUE(state.consistent);
    EXPECT_TRUE(std::all_of(state.done.begin(), state.done.end(), [](bool done) { return done; }));
}

TEST(async_dma, requests_complete_out_of_submission_order_and_only_when_due)
{
    fixture f;
    f.submit_writes(32);
    std::vector<std::size_t> order;
    std::chrono::nanoseconds now{};
    while (f.dma.outstanding() != 0) {
        const std::optional<std::chrono::nanoseconds> due = f.dma.next_due();
        ASSERT_TRUE(due.has_value());
        ASSERT_GE(*due, now);
        f.clock.set(*due);
        now = *due;
        const std::size_t before = f.seen.entries.size();
        EXPECT_GE(f.dma.poll(), 1U);
        EXPECT_GT(f.seen.entries.size(), before);
    }
    ASSERT_EQ(f.seen.entries.size(), 32U);
    const std::vector<std::size_t> completed = f.order();
    std::vector<std::size_t> sorted = completed;
    std::sort(sorted.begin(), sorted.end());
    for (std::size_t i = 0; i < sorted.size(); ++i) {
        EXPECT_EQ(sorted[i], i);
    }
    EXPECT_NE(completed, sorted) << "the delays should reorder 32 requests";
    EXPECT_LE(now, 1us + 100us);
    for (std::size_t i = 0; i < 32; ++i) {
        EXPECT_EQ(f.host_byte(base + 8 * i), std::byte{static_cast<std::uint8_t>(i + 1)});
    }
}

TEST(async_dma, a_zero_delay_still_completes_only_in_poll)
{
    fixture f{{}};
    f.submit_writes(3);
    EXPECT_TRUE(f.seen.entries.empty());
    EXPECT_EQ(f.host_byte(base), std::byte{0});
    EXPECT_EQ(f.dma.poll(), 3U);
    EXPECT_EQ(f.order(), (std::vector<std::size_t>{0, 1, 2}));
}

TEST(async_dma, same_seed_same_completion_order_and_faults)
{
    const auto run = [](std::uint64_t seed) {
        fixture f{{.min_delay = 0ns, .max_delay = 50us, .seed = seed}};
        f.dma.fail_randomly(0.25, seed + 1);
        f.submit_writes(40);
        f.clock.advance(20us);
        f.dma.poll();
        f.submit_writes(10);
        f.drain();
        return f.seen.entries;
    };
    const auto first = run(7);
    EXPECT_EQ(first.size(), 50U);
    EXPECT_EQ(run(7), first);
    EXPECT_NE(run(8), first);
}

TEST(async_dma, fail_nth_fails_the_nth_submission_without_touching_memory_or_the_buffer)
{
    fixture f{{}};
    ASSERT_FALSE(f.memory.write(base + 0x200, std::array{std::byte{0x77}}));
    f.dma.fail_nth(2);
    f.dma.fail_nth(3);
    f.dma.submit(f.add(dma_operation::write, base, 0x11));
    f.dma.submit(f.add(dma_operation::write, base + 8, 0x22));
    f.dma.submit(f.add(dma_operation::read, base + 0x200, 0x33));
    f.dma.submit(f.add(dma_operation::write, base + 16, 0x44));
    EXPECT_EQ(f.dma.poll(), 4U);
    ASSERT_EQ(f.seen.entries.size(), 4U);
    EXPECT_FALSE(f.seen.entries[0].result);
    EXPECT_EQ(f.seen.entries[1].result, fault);
    EXPECT_EQ(f.seen.entries[2].result, fault);
    EXPECT_FALSE(f.seen.entries[3].result);
    EXPECT_EQ(f.host_byte(base), std::byte{0x11});
    EXPECT_EQ(f.host_byte(base + 8), std::byte{0});
    EXPECT_EQ(f.buffers[2][0], std::byte{0x33}) << "a failed read leaves its buffer untouched";
    EXPECT_EQ(f.host_byte(base + 16), std::byte{0x44});
    EXPECT_EQ(f.dma.counts(), (async_dma_counts{.submitted = 4, .completed = 4, .failed = 2}));
}

TEST(async_dma, a_failed_request_still_waits_for_its_due_time)
{
    fixture f{{.min_delay = 5us, .max_delay = 5us}};
    f.dma.fail_nth(1);
    f.submit_writes(1);
    EXPECT_EQ(f.dma.poll(), 0U);
    f.clock.advance(5us);
    EXPECT_EQ(f.dma.poll(), 1U);
    ASSERT_EQ(f.seen.entries.size(), 1U);
    EXPECT_EQ(f.seen.entries[0].result, fault);
}

TEST(async_dma, fail_range_fails_every_overlapping_request)
{
    fixture f{{}};
    f.dma.fail_range(base + 12, 8); // bytes 12..19 of the region
    f.submit_writes(4);             // writes 0..7, 8..15, 16..23, 24..31
    std::array<std::byte, 0> nothing{};
    dma_request empty{dma_operation::write, base + 12, nothing, &fixture::record, &f};
    f.requests.push_back(empty);
    f.dma.submit(f.requests.back());
    f.dma.poll();
    ASSERT_EQ(f.seen.entries.size(), 5U);
    EXPECT_FALSE(f.seen.entries[0].result);
    EXPECT_EQ(f.seen.entries[1].result, fault);
    EXPECT_EQ(f.seen.entries[2].result, fault);
    EXPECT_FALSE(f.seen.entries[3].result);
    EXPECT_FALSE(f.seen.entries[4].result) << "a zero-length request overlaps nothing";
    EXPECT_EQ(f.host_byte(base + 8), std::byte{0});
    EXPECT_EQ(f.host_byte(base + 16), std::byte{0});
    EXPECT_EQ(f.host_byte(base + 24), std::byte{4});
}

TEST(async_dma, fail_range_clamps_at_the_top_of_the_address_space)
{
    fixture f{{}};
    f.dma.fail_range(~std::uint64_t{0} - 3, 100);
    f.dma.submit(f.add(dma_operation::read, ~std::uint64_t{0} - 7));
    f.dma.submit(f.add(dma_operation::read, base));
    f.dma.poll();
    ASSERT_EQ(f.seen.entries.size(), 2U);
    EXPECT_EQ(f.seen.entries[0].result, fault);
    EXPECT_FALSE(f.seen.entries[1].result);
}

TEST(async_dma, fail_randomly_with_probability_zero_or_one)
{
    fixture never{{}};
    never.dma.fail_randomly(0.0, 1);
    never.submit_writes(20);
    never.dma.poll();
    EXPECT_EQ(never.dma.failed(), 0U);

    fixture always{{}};
    always.dma.fail_randomly(1.0, 1);
    always.submit_writes(20);
    always.dma.poll();
    EXPECT_EQ(always.dma.failed(), 20U);
    for (std::size_t i = 0; i < 20; ++i) {
        EXPECT_EQ(always.host_byte(base + 8 * i), std::byte{0});
    }
}

TEST(async_dma, fail_randomly_fails_a_seeded_share_and_leaves_failed_writes_unstored)
{
    const auto failures = [](std::uint64_t seed) {
        fixture f{{}};
        f.dma.fail_randomly(0.5, seed);
        f.submit_writes(64);
        f.dma.poll();
        std::vector<bool> failed;
        for (const auto& entry : f.seen.entries) {
            failed.push_back(static_cast<bool>(entry.result));
            const std::byte expected =
                entry.result ? std::byte{0} : std::byte{static_cast<std::uint8_t>(entry.index + 1)};
            EXPECT_EQ(f.host_byte(base + 8 * entry.index), expected);
        }
        return failed;
    };
    const std::vector<bool> first = failures(3);
    const auto count = std::count(first.begin(), first.end(), true);
    EXPECT_GT(count, 10);
    EXPECT_LT(count, 54);
    EXPECT_EQ(failures(3), first);
    EXPECT_NE(failures(4), first);
}

TEST(async_dma, clear_faults_removes_every_rule)
{
    fixture f{{}};
    f.dma.fail_nth(1);
    f.dma.fail_range(base, 0x1000);
    f.dma.fail_randomly(1.0, 9);
    f.dma.clear_faults();
    f.submit_writes(4);
    f.dma.poll();
    EXPECT_EQ(f.dma.failed(), 0U);
}

TEST(async_dma, fault_rules_reject_invalid_arguments)
{
    fixture f;
    EXPECT_THROW(f.dma.fail_nth(0), std::invalid_argument);
    EXPECT_THROW(f.dma.fail_range(base, 0), std::invalid_argument);
    EXPECT_THROW(f.dma.fail_randomly(-0.1, 1), std::invalid_argument);
    EXPECT_THROW(f.dma.fail_randomly(1.5, 1), std::invalid_argument);
}

TEST(async_dma, the_wrapped_providers_errors_come_through_at_completion)
{
    fixture f{{.min_delay = 3us, .max_delay = 3us}};
    f.dma.submit(f.add(dma_operation::write, 0x100, 1));
    EXPECT_TRUE(f.seen.entries.empty());
    f.clock.advance(3us);
    f.dma.poll();
    ASSERT_EQ(f.seen.entries.size(), 1U);
    EXPECT_EQ(f.seen.entries[0].result, unmapped);
    EXPECT_EQ(f.dma.failed(), 1U);
}

TEST(async_dma, beyond_max_outstanding_submit_completes_inline_with_resource_unavailable)
{
    fixture f{{.min_delay = 1us, .max_delay = 1us}, 3};
    f.submit_writes(3);
    EXPECT_TRUE(f.seen.entries.empty());
    f.dma.fail_nth(2); // counts the overflowing submission, then the one after it
    dma_request& extra = f.add(dma_operation::write, base + 0x800, 0x99);
    f.dma.submit(extra);
    ASSERT_EQ(f.seen.entries.size(), 1U);
    EXPECT_EQ(f.seen.entries[0].index, 3U);
    EXPECT_EQ(f.seen.entries[0].result, overflow);
    EXPECT_EQ(f.host_byte(base + 0x800), std::byte{0});
    EXPECT_EQ(f.dma.outstanding(), 3U);
    EXPECT_EQ(
        f.dma.counts(),
        (async_dma_counts{.submitted = 4, .completed = 1, .failed = 1, .overflows = 1, .outstanding = 3}));

    f.clock.advance(1us);
    EXPECT_EQ(f.dma.poll(), 3U);
    f.dma.submit(extra);
    EXPECT_EQ(f.dma.outstanding(), 1U);
    f.clock.advance(1us);
    EXPECT_EQ(f.dma.poll(), 1U);
    EXPECT_EQ(f.seen.entries.back().result, fault) << "the fifth submission was the second from fail_nth";
    EXPECT_EQ(f.dma.counts(),
              (async_dma_counts{.submitted = 5, .completed = 5, .failed = 2, .overflows = 1}));
}

TEST(async_dma, a_request_submitted_from_its_callback_waits_for_a_later_poll)
{
    fixture f{{}};
    struct chain {
        async_dma<flat_memory>* dma;
        int remaining = 3;
        int completions = 0;
        std::size_t outstanding_in_callback = 99;
    } state{&f.dma};
    std::array<std::byte, 4> buffer{};
    dma_request request{dma_operation::read, base, buffer,
                        [](dma_request& done, std::error_code result) {
                            EXPECT_FALSE(result);
                            auto& self = *static_cast<chain*>(done.context);
                            ++self.completions;
                            self.outstanding_in_callback = self.dma->outstanding();
                            if (--self.remaining > 0) {
                                self.dma->submit(done);
                            }
                        },
                        &state};
    f.dma.submit(request);
    EXPECT_EQ(f.dma.poll(), 1U);
    EXPECT_EQ(state.completions, 1);
    EXPECT_EQ(state.outstanding_in_callback, 0U) << "a request whose callback runs no longer counts";
    EXPECT_EQ(f.dma.outstanding(), 1U);
    EXPECT_EQ(f.dma.poll(), 1U);
    EXPECT_EQ(f.dma.poll(), 1U);
    EXPECT_EQ(f.dma.poll(), 0U);
    EXPECT_EQ(state.completions, 3);
}

TEST(async_dma, a_callback_may_poll_again)
{
    fixture f{{}};
    f.submit_writes(3);
    struct nested {
        async_dma<flat_memory>* dma;
        std::size_t inner_completed = 0;
        int calls = 0;
    } state{&f.dma};
    for (auto& request : f.requests) {
        request.context = &state;
        request.complete = [](dma_request&, std::error_code) {};
    }
    f.requests[0].complete = [](dma_request& done, std::error_code) {
        auto& self = *static_cast<nested*>(done.context);
        ++self.calls;
        self.inner_completed = self.dma->poll();
    };
    EXPECT_EQ(f.dma.poll(), 1U) << "the nested poll completed the other two";
    EXPECT_EQ(state.inner_completed, 2U);
    EXPECT_EQ(f.dma.completed(), 3U);
}

TEST(async_dma, the_counters_add_up)
{
    fixture f;
    f.dma.fail_nth(5);
    f.submit_writes(10);
    f.dma.submit(f.add(dma_operation::read, 0x10));
    EXPECT_EQ(f.dma.submitted(), 11U);
    EXPECT_EQ(f.dma.completed(), 0U);
    f.drain();
    const async_dma_counts counts = f.dma.counts();
    EXPECT_EQ(counts, (async_dma_counts{.submitted = 11, .completed = 11, .failed = 2}));
    EXPECT_EQ(f.dma.submitted(), counts.submitted);
    EXPECT_EQ(f.dma.failed(), counts.failed);
    EXPECT_EQ(f.dma.overflows(), 0U);
}

/// Submitter threads submit writes, some of which resubmit from their callback, while one thread
/// moves the clock and polls; every request completes exactly once and every byte lands.
TEST(async_dma_threads, submitters_and_a_poller_complete_every_request_once)
{
    constexpr std::size_t submitters = 3;
    constexpr std::size_t per_thread = 200;
    constexpr std::size_t total_submissions = submitters * per_thread * 2; // each request runs twice

    flat_memory memory;
    memory.set_synchronized(true);
    memory.add_range(base, submitters * per_thread * 8);
    manual_clock clock;
    async_dma<flat_memory> dma{
        memory, clock, submitters * per_thread, {.min_delay = 0ns, .max_delay = 20us, .seed = 5}};
    dma.fail_range(base, 8); // request 0 of thread 0 fails both times

    struct tracked {
        dma_request request{};
        std::array<std::byte, 8> buffer{};
        async_dma<flat_memory>* dma = nullptr;
        std::atomic<int> runs{0};
        std::atomic<int> failures{0};
        std::atomic<std::size_t>* completed = nullptr;
    };
    std::vector<tracked> items(submitters * per_thread);
    std::atomic<std::size_t> completed{0};

    {
        nvmekit_test::thread_group threads{
            submitters + 1, [&](std::size_t thread) {
                if (thread == submitters) {
                    while (completed.load() < total_submissions) {
                        clock.advance(1us);
                        dma.poll();
                        (void)dma.counts();
                        std::this_thread::yield();
                    }
                    return;
                }
                for (std::size_t i = 0; i < per_thread; ++i) {
                    const std::size_t index = thread * per_thread + i;
                    tracked& item = items[index];
                    item.buffer.fill(std::byte{static_cast<std::uint8_t>(index % 251 + 1)});
                    item.dma = &dma;
                    item.completed = &completed;
                    item.request = dma_request{dma_operation::write, base + 8 * index, item.buffer,
                                               [](dma_request& done, std::error_code result) {
                                                   auto& self = *static_cast<tracked*>(done.context);
                                                   if (result) {
                                                       self.failures.fetch_add(1);
                                                   }
                                                   if (self.runs.fetch_add(1) == 0) {
                                                       self.dma->submit(done);
                                                   }
                                                   self.completed->fetch_add(1);
                                               },
                                               &item};
                    dma.submit(item.request);
                    if (i % 16 == 0) {
                        std::this_thread::yield();
                    }
                }
            }};
        threads.join(); // the poller ends once every request has run twice
    }

    EXPECT_EQ(completed.load(), total_submissions);
    const async_dma_counts counts = dma.counts();
    EXPECT_EQ(counts.submitted, total_submissions);
    EXPECT_EQ(counts.completed, total_submissions);
    EXPECT_EQ(counts.failed, 2U);
    EXPECT_EQ(counts.overflows, 0U);
    EXPECT_EQ(counts.outstanding, 0U);
    for (std::size_t index = 0; index < items.size(); ++index) {
        EXPECT_EQ(items[index].runs.load(), 2) << index;
        std::array<std::byte, 1> byte{};
        ASSERT_FALSE(memory.read(base + 8 * index, byte));
        const std::byte expected =
            index == 0 ? std::byte{0} : std::byte{static_cast<std::uint8_t>(index % 251 + 1)};
        EXPECT_EQ(byte[0], expected) << index;
    }
    EXPECT_EQ(items[0].failures.load(), 2);
}

} // namespace
