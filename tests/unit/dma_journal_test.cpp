#include <nvmekit/core/dma_journal.hpp>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <system_error>
#include <vector>

#include <gtest/gtest.h>

#include <nvmekit/error.hpp>
#include <nvmekit/testing/async_dma.hpp>
#include <nvmekit/testing/flat_memory.hpp>
#include <nvmekit/testing/manual_clock.hpp>

namespace {
namespace dma_journal_test {

namespace nt = nvmekit::testing;
using nvmekit::dma_operation;
using nvmekit::detail::dma_journal;
using nvmekit::detail::dma_slot;
using nvmekit::detail::dma_slot_pool;
using namespace std::chrono_literals;

struct provider {
    nt::flat_memory memory;
    nt::manual_clock clock;
    nt::async_dma<nt::flat_memory> dma{memory, clock, 16, {.min_delay = 1us, .max_delay = 9us, .seed = 5}};
    provider() { memory.add_range(0x1000, 0x4000); }
};

TEST(dma_slot_pool, completions_are_taken_in_completion_order_and_slots_are_reused)
{
    provider p;
    dma_slot_pool pool;
    std::vector<dma_slot*> submitted;
    for (std::uint64_t i = 0; i < 8; ++i) {
        auto& slot = pool.take(dma_operation::read, 0x1000 + i * 512, 512);
        slot.entries = static_cast<std::uint32_t>(i);
        submitted.push_back(&slot);
        p.dma.submit(slot.request);
    }
    EXPECT_EQ(pool.outstanding(), 8U);
    EXPECT_FALSE(pool.has_completed());
    EXPECT_EQ(pool.take_completed([](dma_slot&) { FAIL() << "nothing completed yet"; }), 0U);

    p.clock.advance(10us);
    EXPECT_EQ(p.dma.poll(), 8U);
    EXPECT_EQ(pool.outstanding(), 0U);
    EXPECT_TRUE(pool.has_completed());
    std::vector<std::uint32_t> order;
    EXPECT_EQ(pool.take_completed([&](dma_slot& slot) {
        EXPECT_TRUE(slot.done);
        EXPECT_TRUE(slot.settled);
        EXPECT_FALSE(slot.result);
        order.push_back(slot.entries);
        pool.release(slot);
    }),
              8U);
    ASSERT_EQ(order.size(), 8U);
    EXPECT_NE(order, (std::vector<std::uint32_t>{0, 1, 2, 3, 4, 5, 6, 7}))
        << "the delays differ: out of order";
    EXPECT_EQ(pool.allocated(), 8U);

    // Released slots are taken again: no new allocation, a fresh request and state.
    auto& again = pool.take(dma_operation::write, 0x2000, 16);
    EXPECT_EQ(pool.allocated(), 8U);
    EXPECT_FALSE(again.done);
    EXPECT_FALSE(again.settled);
    EXPECT_EQ(again.request.operation, dma_operation::write);
    EXPECT_EQ(again.request.buffer.size(), 16U);
    EXPECT_EQ(again.request.buffer.data(), again.bytes.data());
}

TEST(dma_slot_pool, a_failed_request_carries_its_error)
{
    provider p;
    dma_slot_pool pool;
    p.dma.fail_nth(1);
    auto& slot = pool.take(dma_operation::read, 0x1000, 64);
    p.dma.submit(slot.request);
    p.clock.advance(10us);
    static_cast<void>(p.dma.poll());
    std::error_code seen;
    pool.take_completed([&](dma_slot& done) {
        seen = done.result;
        pool.release(done);
    });
    EXPECT_EQ(seen, make_error_code(nvmekit::errc::dma_fault));
}

TEST(dma_journal, a_step_run_again_meets_its_accesses_in_order)
{
    dma_slot_pool pool;
    dma_journal journal;
    bool diverged = true;
    journal.begin_step(false);
    EXPECT_EQ(journal.replayed(dma_operation::read, 0x1000, 64, diverged), nullptr);
    EXPECT_FALSE(diverged);
    auto& first = pool.take(dma_operation::read, 0x1000, 64);
    journal.record(first);
    EXPECT_EQ(journal.replayed(dma_operation::write, 0x2000, 8, diverged), nullptr);
    auto& second = pool.take(dma_operation::write, 0x2000, 8);
    journal.record(second);
    EXPECT_EQ(journal.pending, 2U);
    journal.blocked = true;

    journal.rewind();
    EXPECT_FALSE(journal.blocked);
    EXPECT_EQ(journal.replayed(dma_operation::read, 0x1000, 64, diverged), &first);
    EXPECT_FALSE(diverged);
    EXPECT_EQ(journal.replayed(dma_operation::write, 0x2000, 8, diverged), &second);
    EXPECT_FALSE(diverged);
    EXPECT_EQ(journal.replayed(dma_operation::read, 0x3000, 8, diverged), nullptr); // past the end: new

    // A run that makes another access than before is told so.
    journal.rewind();
    static_cast<void>(journal.replayed(dma_operation::read, 0x1000, 32, diverged));
    EXPECT_TRUE(diverged);

    // A continuation's step starts after the accesses made so far.
    journal.begin_step(true);
    EXPECT_EQ(journal.phase_start, 2U);
    EXPECT_EQ(journal.replayed(dma_operation::read, 0x1000, 64, diverged), nullptr);
    auto& third = pool.take(dma_operation::read, 0x1000, 64);
    journal.record(third);
    journal.rewind();
    EXPECT_EQ(journal.replayed(dma_operation::read, 0x1000, 64, diverged), &third);
    EXPECT_FALSE(diverged);
}

TEST(dma_journal, release_returns_every_slot_and_empties_the_journal)
{
    provider p;
    dma_slot_pool pool;
    dma_journal journal;
    journal.begin_step(false);
    for (std::uint64_t i = 0; i < 3; ++i) {
        auto& slot = pool.take(dma_operation::read, 0x1000 + i * 64, 64);
        journal.record(slot);
        p.dma.submit(slot.request);
    }
    p.clock.advance(10us);
    static_cast<void>(p.dma.poll());
    pool.take_completed([&](dma_slot&) { --journal.pending; });
    journal.write_failed = true;
    journal.release(pool);
    EXPECT_TRUE(journal.entries.empty());
    EXPECT_EQ(journal.cursor, 0U);
    EXPECT_FALSE(journal.write_failed);
    // The three slots are free again.
    for (int i = 0; i < 3; ++i) {
        static_cast<void>(pool.take(dma_operation::read, 0x1000, 8));
    }
    EXPECT_EQ(pool.allocated(), 3U);
}

} // namespace dma_journal_test
} // namespace
