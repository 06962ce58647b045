#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <nvmekit/contracts/dma.hpp>
#include <nvmekit/error.hpp>
#include <nvmekit/testing/archetypes.hpp>
#include <nvmekit/testing/flat_memory.hpp>
#include <nvmekit/testing/recording_dma.hpp>

#include "../thread_group.hpp"

using nvmekit::errc;
using nvmekit::testing::access_kind;
using nvmekit::testing::dma_access;
using nvmekit::testing::dma_counts;
using nvmekit::testing::flat_memory;
using nvmekit::testing::recording_dma;

namespace {

constexpr std::uint64_t base = 0x1000;
constexpr std::uint64_t max64 = std::numeric_limits<std::uint64_t>::max();

const std::error_code ok{};
const std::error_code fault = make_error_code(errc::dma_fault);
const std::error_code unmapped = make_error_code(errc::dma_unmapped);

struct fixture {
    fixture() { memory.add_range(base, 0x1000); }
    flat_memory memory;
    recording_dma<flat_memory> dma{memory};
    std::array<std::byte, 8> buffer{};

    std::error_code read(std::uint64_t address = base) { return dma.read(address, buffer); }
    std::error_code write(std::uint64_t address = base) { return dma.write(address, buffer); }
    bool map(std::uint64_t address = base) { return !dma.map(address, buffer.size()).empty(); }
};

/// Outcome of `count` one-byte reads: true where the read failed.
std::vector<bool> read_failures(recording_dma<flat_memory>& dma, std::size_t count)
{
    std::vector<bool> failed;
    std::array<std::byte, 1> byte{};
    for (std::size_t i = 0; i < count; ++i) {
        failed.push_back(static_cast<bool>(dma.read(base, byte)));
    }
    return failed;
}

} // namespace

static_assert(nvmekit::MappingDmaProvider<recording_dma<flat_memory>>);
static_assert(nvmekit::check_dma_provider<recording_dma<flat_memory>>());
static_assert(nvmekit::DmaProvider<recording_dma<nvmekit::testing::dma_archetype>>);
static_assert(!nvmekit::MappingDmaProvider<recording_dma<nvmekit::testing::dma_archetype>>);
static_assert(nvmekit::MappingDmaProvider<recording_dma<nvmekit::testing::mapping_dma_archetype>>);
static_assert((access_kind::read | access_kind::write | access_kind::map) == access_kind::any);
static_assert(nvmekit::testing::includes(access_kind::read | access_kind::map, access_kind::map));
static_assert(!nvmekit::testing::includes(access_kind::read | access_kind::map, access_kind::write));

TEST(recording_dma, forwards_reads_writes_and_maps_to_the_wrapped_provider)
{
    fixture f;
    f.buffer = {std::byte{1}, std::byte{2}, std::byte{3}, std::byte{4},
                std::byte{5}, std::byte{6}, std::byte{7}, std::byte{8}};
    EXPECT_EQ(f.write(base + 8), ok);
    EXPECT_EQ(f.memory.load<std::uint64_t>(base + 8), 0x0807060504030201U);
    f.memory.store(base + 0x10, std::uint64_t{0x1122334455667788});
    EXPECT_EQ(f.read(base + 0x10), ok);
    EXPECT_EQ(f.buffer[0], std::byte{0x88});
    const auto mapped = f.dma.map(base + 0x20, 4);
    EXPECT_EQ(mapped.data(), f.memory.bytes(base + 0x20, 4).data());
    EXPECT_EQ(mapped.size(), 4U);
    EXPECT_EQ(&f.dma.inner(), &f.memory);
}

TEST(recording_dma, records_every_access_with_its_result)
{
    fixture f;
    EXPECT_EQ(f.read(base), ok);
    EXPECT_EQ(f.write(0x10), unmapped);
    EXPECT_TRUE(f.map(base + 0x100));
    EXPECT_FALSE(f.map(0x10));
    EXPECT_TRUE(f.dma.map(0x10, 0).empty());
    const std::vector<dma_access> expected{
        {access_kind::read, base, 8, ok},        {access_kind::write, 0x10, 8, unmapped},
        {access_kind::map, base + 0x100, 8, ok}, {access_kind::map, 0x10, 8, unmapped},
        {access_kind::map, 0x10, 0, ok},
    };
    EXPECT_EQ(std::vector<dma_access>(f.dma.accesses().begin(), f.dma.accesses().end()), expected);
    EXPECT_EQ(f.dma.reads(), 1U);
    EXPECT_EQ(f.dma.writes(), 1U);
    EXPECT_EQ(f.dma.maps(), 3U);
    EXPECT_EQ(f.dma.failures(), 2U);
}

TEST(recording_dma, recording_can_be_switched_off_while_the_counters_still_count)
{
    fixture f;
    EXPECT_TRUE(f.dma.recording());
    f.dma.set_recording(false);
    EXPECT_FALSE(f.dma.recording());
    EXPECT_EQ(f.read(), ok);
    EXPECT_EQ(f.write(0), unmapped);
    EXPECT_TRUE(f.dma.accesses().empty());
    EXPECT_EQ(f.dma.reads(), 1U);
    EXPECT_EQ(f.dma.writes(), 1U);
    EXPECT_EQ(f.dma.failures(), 1U);
    f.dma.set_recording(true);
    EXPECT_EQ(f.read(), ok);
    ASSERT_EQ(f.dma.accesses().size(), 1U);
    EXPECT_EQ(f.dma.accesses()[0], (dma_access{access_kind::read, base, 8, ok}));
}

TEST(recording_dma, clear_forgets_records_and_counters_but_keeps_faults)
{
    fixture f;
    f.dma.fail_range(base + 0x800, 1);
    EXPECT_EQ(f.read(), ok);
    EXPECT_EQ(f.write(0), unmapped);
    f.dma.clear();
    EXPECT_TRUE(f.dma.accesses().empty());
    EXPECT_EQ(f.dma.reads(), 0U);
    EXPECT_EQ(f.dma.writes(), 0U);
    EXPECT_EQ(f.dma.maps(), 0U);
    EXPECT_EQ(f.dma.failures(), 0U);
    EXPECT_EQ(f.read(base + 0x800), fault);
}

TEST(recording_dma, fail_nth_fails_only_the_nth_access_from_now)
{
    fixture f;
    EXPECT_EQ(f.read(), ok);
    f.dma.fail_nth(3);
    EXPECT_EQ(f.read(), ok);
    EXPECT_EQ(f.write(), ok);
    EXPECT_FALSE(f.map());
    EXPECT_EQ(f.read(), ok);
    EXPECT_EQ(f.write(), ok);
    EXPECT_TRUE(f.map());
    EXPECT_EQ(f.dma.failures(), 1U);
    EXPECT_EQ(f.dma.accesses()[3], (dma_access{access_kind::map, base, 8, fault}));
}

TEST(recording_dma, fail_nth_counts_only_accesses_of_the_given_kinds)
{
    fixture f;
    f.dma.fail_nth(2, access_kind::write);
    EXPECT_EQ(f.write(), ok);
    EXPECT_EQ(f.read(), ok);
    EXPECT_TRUE(f.map());
    EXPECT_EQ(f.read(), ok);
    EXPECT_EQ(f.write(), fault);
    EXPECT_EQ(f.write(), ok);

    f.dma.fail_nth(1, access_kind::read | access_kind::map);
    EXPECT_EQ(f.write(), ok);
    EXPECT_FALSE(f.map());
    EXPECT_EQ(f.read(), ok);
}

TEST(recording_dma, several_fail_nth_rules_count_independently)
{
    fixture f;
    f.dma.fail_nth(2);
    f.dma.fail_nth(4);
    f.dma.fail_nth(2, access_kind::write);
    EXPECT_EQ(f.read(), ok);
    EXPECT_EQ(f.read(), fault);
    EXPECT_EQ(f.write(), ok);
    EXPECT_EQ(f.write(), fault);
    EXPECT_EQ(f.write(), ok);
    EXPECT_EQ(f.read(), ok);
}

TEST(recording_dma, fail_nth_one_fails_the_very_next_access)
{
    fixture f;
    f.dma.fail_nth(1);
    EXPECT_EQ(f.read(), fault);
    EXPECT_EQ(f.read(), ok);
}

TEST(recording_dma, a_failed_write_stores_nothing_and_a_failed_read_leaves_its_buffer)
{
    fixture f;
    f.memory.store(base, std::uint64_t{0xaaaa'aaaa'aaaa'aaaa});
    f.buffer.fill(std::byte{0x55});
    f.dma.fail_nth(1);
    EXPECT_EQ(f.write(), fault);
    EXPECT_EQ(f.memory.load<std::uint64_t>(base), 0xaaaa'aaaa'aaaa'aaaaU);
    f.dma.fail_nth(1);
    EXPECT_EQ(f.read(), fault);
    EXPECT_EQ(f.buffer,
              (std::array<std::byte, 8>{std::byte{0x55}, std::byte{0x55}, std::byte{0x55}, std::byte{0x55},
                                        std::byte{0x55}, std::byte{0x55}, std::byte{0x55}, std::byte{0x55}}));
}

TEST(recording_dma, a_failed_map_returns_an_empty_span)
{
    fixture f;
    f.dma.fail_nth(1, access_kind::map);
    EXPECT_TRUE(f.dma.map(base, 16).empty());
    EXPECT_EQ(f.dma.accesses()[0], (dma_access{access_kind::map, base, 16, fault}));
    EXPECT_EQ(f.dma.map(base, 16).size(), 16U);
}

TEST(recording_dma, fail_range_fails_every_overlapping_access)
{
    fixture f;
    f.dma.fail_range(base + 0x100, 0x10);
    EXPECT_EQ(f.read(base + 0xf8), ok);
    EXPECT_EQ(f.read(base + 0xf9), fault);
    EXPECT_EQ(f.write(base + 0x100), fault);
    EXPECT_FALSE(f.map(base + 0x10f));
    EXPECT_EQ(f.read(base + 0x110), ok);
    EXPECT_EQ(f.read(base + 0x10f), fault);
    EXPECT_EQ(f.dma.failures(), 4U);
}

TEST(recording_dma, fail_range_applies_to_the_given_kinds_only)
{
    fixture f;
    f.dma.fail_range(base, 1, access_kind::write);
    EXPECT_EQ(f.read(), ok);
    EXPECT_TRUE(f.map());
    EXPECT_EQ(f.write(), fault);
    f.dma.fail_range(base + 0x200, 1, access_kind::read | access_kind::map);
    EXPECT_EQ(f.write(base + 0x200), ok);
    EXPECT_EQ(f.read(base + 0x200), fault);
    EXPECT_FALSE(f.map(base + 0x200));
}

TEST(recording_dma, fail_range_ignores_zero_length_accesses_and_clamps_at_the_top)
{
    fixture f;
    f.dma.fail_range(base, 0x100);
    EXPECT_EQ(f.dma.read(base, std::span<std::byte>{}), ok);
    f.dma.fail_range(max64 - 1, 0x10);
    std::array<std::byte, 1> byte{};
    EXPECT_EQ(f.dma.read(max64, byte), fault);
    EXPECT_EQ(f.dma.read(max64 - 2, byte), unmapped);
    EXPECT_EQ(f.dma.read(max64 - 2, f.buffer), fault);
}

TEST(recording_dma, fail_every_fails_each_periodth_access)
{
    fixture f;
    EXPECT_EQ(f.read(), ok);
    f.dma.fail_every(3);
    EXPECT_EQ(read_failures(f.dma, 9),
              (std::vector<bool>{false, false, true, false, false, true, false, false, true}));
    f.dma.fail_every(1);
    EXPECT_EQ(read_failures(f.dma, 3), (std::vector<bool>{true, true, true}));
}

TEST(recording_dma, fail_every_counts_only_accesses_of_the_given_kinds)
{
    fixture f;
    f.dma.fail_every(2, access_kind::write);
    EXPECT_EQ(f.write(), ok);
    EXPECT_EQ(f.read(), ok);
    EXPECT_EQ(f.read(), ok);
    EXPECT_EQ(f.write(), fault);
    EXPECT_TRUE(f.map());
    EXPECT_EQ(f.write(), ok);
    EXPECT_EQ(f.write(), fault);
}

TEST(recording_dma, splitmix64_matches_the_reference_sequence)
{
    nvmekit::testing::detail::splitmix64 generator{0};
    EXPECT_EQ(generator.next(), 0xe220'a839'7b1d'cdafULL);
    EXPECT_EQ(generator.next(), 0x6e78'9e6a'a1b9'65f4ULL);
    EXPECT_EQ(generator.next(), 0x06c4'5d18'8009'454fULL);
    nvmekit::testing::detail::splitmix64 unit{0};
    EXPECT_EQ(unit.next_unit(), static_cast<double>(0xe220'a839'7b1d'cdafULL >> 11) * 0x1.0p-53);
}

TEST(recording_dma, fail_randomly_follows_the_seeded_sequence)
{
    fixture f;
    f.dma.fail_randomly(0.5, 0);
    nvmekit::testing::detail::splitmix64 reference{0};
    std::vector<bool> expected;
    expected.reserve(64);
    for (int i = 0; i < 64; ++i) {
        expected.push_back(reference.next() < (std::uint64_t{1} << 63));
    }
    const auto failed = read_failures(f.dma, 64);
    EXPECT_EQ(failed, expected);
    EXPECT_FALSE(failed[0]);
    EXPECT_TRUE(failed[1]);
    EXPECT_TRUE(failed[2]);
}

TEST(recording_dma, fail_randomly_is_reproducible_and_depends_on_the_seed)
{
    fixture first;
    fixture second;
    fixture other_seed;
    first.dma.fail_randomly(0.3, 42);
    second.dma.fail_randomly(0.3, 42);
    other_seed.dma.fail_randomly(0.3, 43);
    const auto pattern = read_failures(first.dma, 200);
    EXPECT_EQ(read_failures(second.dma, 200), pattern);
    EXPECT_NE(read_failures(other_seed.dma, 200), pattern);
    const auto failures = static_cast<double>(first.dma.failures());
    EXPECT_GT(failures, 30.0);
    EXPECT_LT(failures, 90.0);
}

TEST(recording_dma, fail_randomly_with_probability_zero_or_one_never_or_always_fails)
{
    fixture f;
    f.dma.fail_randomly(0.0, 7);
    EXPECT_EQ(read_failures(f.dma, 100), std::vector<bool>(100, false));
    f.dma.fail_randomly(1.0, 7);
    EXPECT_EQ(read_failures(f.dma, 100), std::vector<bool>(100, true));
}

TEST(recording_dma, fail_randomly_draws_only_for_the_given_kinds)
{
    fixture f;
    f.dma.fail_randomly(1.0, 1, access_kind::map);
    EXPECT_EQ(f.read(), ok);
    EXPECT_EQ(f.write(), ok);
    EXPECT_FALSE(f.map());
}

TEST(recording_dma, clear_faults_removes_every_rule)
{
    fixture f;
    f.dma.fail_nth(1);
    f.dma.fail_range(base, 0x1000);
    f.dma.fail_every(1);
    f.dma.fail_randomly(1.0, 3);
    f.dma.clear_faults();
    EXPECT_EQ(f.read(), ok);
    EXPECT_EQ(f.write(), ok);
    EXPECT_TRUE(f.map());
    EXPECT_EQ(f.dma.failures(), 0U);
}

TEST(recording_dma, fault_rules_reject_invalid_arguments)
{
    fixture f;
    const auto none = static_cast<access_kind>(0);
    EXPECT_THROW(f.dma.fail_nth(0), std::invalid_argument);
    EXPECT_THROW(f.dma.fail_nth(1, none), std::invalid_argument);
    EXPECT_THROW(f.dma.fail_range(base, 0), std::invalid_argument);
    EXPECT_THROW(f.dma.fail_range(base, 1, none), std::invalid_argument);
    EXPECT_THROW(f.dma.fail_every(0), std::invalid_argument);
    EXPECT_THROW(f.dma.fail_every(1, none), std::invalid_argument);
    EXPECT_THROW(f.dma.fail_randomly(-0.01, 1), std::invalid_argument);
    EXPECT_THROW(f.dma.fail_randomly(1.01, 1), std::invalid_argument);
    EXPECT_THROW(f.dma.fail_randomly(std::nan(""), 1), std::invalid_argument);
    EXPECT_THROW(f.dma.fail_randomly(0.5, 1, none), std::invalid_argument);
    EXPECT_EQ(f.read(), ok);
}

TEST(recording_dma, wraps_a_provider_without_map)
{
    nvmekit::testing::dma_archetype inner;
    recording_dma dma{inner};
    std::array<std::byte, 4> buffer{};
    dma.fail_nth(2);
    EXPECT_EQ(dma.read(0x10, buffer), ok);
    EXPECT_EQ(dma.write(0x20, buffer), fault);
    const std::vector<dma_access> expected{{access_kind::read, 0x10, 4, ok},
                                           {access_kind::write, 0x20, 4, fault}};
    EXPECT_EQ(std::vector<dma_access>(dma.accesses().begin(), dma.accesses().end()), expected);
}

TEST(recording_dma, counts_and_snapshot_copy_the_counters_and_the_recording)
{
    fixture f;
    EXPECT_EQ(f.dma.counts(), dma_counts{});
    EXPECT_EQ(f.read(), ok);
    EXPECT_EQ(f.write(0x10), unmapped);
    EXPECT_TRUE(f.map());
    EXPECT_EQ(f.read(), ok);
    EXPECT_EQ(f.dma.counts(), (dma_counts{.reads = 2, .writes = 1, .maps = 1, .failures = 1}));
    auto records = f.dma.snapshot();
    EXPECT_EQ(records, std::vector<dma_access>(f.dma.accesses().begin(), f.dma.accesses().end()));
    ASSERT_EQ(records.size(), 4U);
    EXPECT_EQ(records[1], (dma_access{access_kind::write, 0x10, 8, unmapped}));
    // A copy: later accesses do not change it.
    EXPECT_EQ(f.write(), ok);
    EXPECT_EQ(records.size(), 4U);
    EXPECT_EQ(f.dma.snapshot().size(), 5U);
    f.dma.clear();
    EXPECT_EQ(f.dma.counts(), dma_counts{});
    EXPECT_TRUE(f.dma.snapshot().empty());
}

TEST(recording_dma, a_copy_wraps_the_same_provider_with_the_same_records_counters_and_rules)
{
    fixture f;
    EXPECT_EQ(f.write(), ok);
    f.dma.fail_nth(2, access_kind::read);
    f.dma.fail_range(base + 0x100, 8, access_kind::write);
    EXPECT_EQ(f.read(), ok); // the first read of fail_nth(2)
    recording_dma copy{f.dma};
    EXPECT_EQ(&copy.inner(), &f.memory);
    EXPECT_EQ(copy.snapshot(), f.dma.snapshot());
    EXPECT_EQ(copy.counts(), f.dma.counts());
    // Each counts its own rules from here: the next read fails in both.
    EXPECT_EQ(copy.read(base, f.buffer), fault);
    EXPECT_EQ(copy.read(base, f.buffer), ok);
    EXPECT_EQ(f.read(), fault);
    EXPECT_EQ(copy.write(base + 0x100, f.buffer), fault);
    EXPECT_EQ(copy.counts(), (dma_counts{.reads = 3, .writes = 2, .maps = 0, .failures = 2}));
    EXPECT_EQ(f.dma.counts(), (dma_counts{.reads = 2, .writes = 1, .maps = 0, .failures = 1}));

    fixture other;
    other.dma = copy;
    EXPECT_EQ(&other.dma.inner(), &f.memory);
    EXPECT_EQ(other.dma.snapshot(), copy.snapshot());
    EXPECT_EQ(other.dma.write(base + 0x100, f.buffer), fault);
    EXPECT_EQ(other.dma.counts().writes, 3U);
    EXPECT_EQ(copy.counts().writes, 2U);
}

TEST(recording_dma, a_move_takes_the_records_counters_and_rules_and_leaves_the_source_clear)
{
    fixture f;
    f.dma.fail_nth(2);
    f.dma.fail_range(base + 0x100, 8);
    f.dma.fail_every(5);
    f.dma.fail_randomly(1.0, 9, access_kind::map);
    f.dma.set_recording(false);
    EXPECT_EQ(f.write(0x10), unmapped);
    const dma_counts before = f.dma.counts();
    recording_dma moved{std::move(f.dma)};
    EXPECT_EQ(&moved.inner(), &f.memory);
    EXPECT_EQ(moved.counts(), before);
    EXPECT_FALSE(moved.recording());
    EXPECT_EQ(moved.read(base, f.buffer), fault); // fail_nth(2) carried over
    EXPECT_EQ(moved.read(base + 0x100, f.buffer), fault);
    EXPECT_TRUE(moved.map(base, 8).empty());

    // The source keeps its provider, with no records, counters or rules, recording on.
    EXPECT_EQ(&f.dma.inner(), &f.memory); // NOLINT(bugprone-use-after-move)
    EXPECT_EQ(f.dma.counts(), dma_counts{});
    EXPECT_TRUE(f.dma.recording());
    for (int i = 0; i < 5; ++i) {
        EXPECT_EQ(f.read(base + 0x100), ok);
    }
    EXPECT_TRUE(f.map());
    EXPECT_EQ(f.dma.snapshot().size(), 6U);

    fixture target;
    target.dma.fail_nth(1);
    target.dma = std::move(moved);
    EXPECT_EQ(&target.dma.inner(), &f.memory);
    EXPECT_EQ(target.dma.counts().reads, 2U);
    EXPECT_EQ(target.dma.read(base + 0x100, f.buffer), fault);
    EXPECT_EQ(moved.counts(), dma_counts{}); // NOLINT(bugprone-use-after-move)
    EXPECT_EQ(moved.read(base + 0x100, f.buffer), ok);
}

TEST(recording_dma, over_synchronized_memory_every_map_is_declined_and_read_and_write_still_work)
{
    fixture f;
    f.memory.set_synchronized(true);
    f.buffer.fill(std::byte{0x3c});
    EXPECT_TRUE(f.dma.map(base, 8).empty());
    EXPECT_TRUE(f.dma.map(base, 0).empty());
    EXPECT_EQ(f.write(base + 8), ok);
    f.buffer.fill(std::byte{0});
    EXPECT_EQ(f.read(base + 8), ok);
    EXPECT_EQ(f.buffer[7], std::byte{0x3c});
    const std::vector<dma_access> expected{{access_kind::map, base, 8, unmapped},
                                           {access_kind::map, base, 0, ok},
                                           {access_kind::write, base + 8, 8, ok},
                                           {access_kind::read, base + 8, 8, ok}};
    EXPECT_EQ(f.dma.snapshot(), expected);
    EXPECT_EQ(f.dma.counts(), (dma_counts{.reads = 1, .writes = 1, .maps = 2, .failures = 1}));
}

// ---- several threads through one recording_dma ----------------------------------------------------
//
// As a controller's poll groups do: each thread reads, writes and maps its own region of a
// synchronized flat_memory through one recording_dma while the test thread sets fault rules and
// reads the recording. Built under ThreadSanitizer, an access to the wrapper's state without the
// mutex fails the run.

namespace {

constexpr std::size_t thread_count = 4;
constexpr std::uint64_t region_bytes = 0x10000;
constexpr std::size_t region_slots = region_bytes / 16; ///< 16-byte slots, 8 bytes used

[[nodiscard]] constexpr std::uint64_t region_of(std::size_t thread) noexcept
{
    return base + thread * region_bytes;
}

/// The thread whose region holds `address`.
[[nodiscard]] std::size_t owner_of(std::uint64_t address)
{
    return static_cast<std::size_t>((address - base) / region_bytes);
}

/// Synchronized host memory with one region per thread, and the recording_dma over it.
struct shared_fixture {
    shared_fixture()
    {
        memory.add_range(base, thread_count * region_bytes);
        memory.set_synchronized(true); // before any thread starts
    }
    flat_memory memory;
    recording_dma<flat_memory> dma{memory};
};

using nvmekit_test::thread_group;

/// One thread's accesses, as it saw them, and what it found wrong with the data.
struct thread_log {
    std::vector<dma_access> accesses;
    std::size_t bad_reads = 0; ///< successful reads that did not return the last successful write
};

/// Worker `thread`: iteration i writes a value unique to (thread, i) to slot i % region_slots of
/// its region and reads it back, and every fourth iteration also maps the slot. Reads of a slot
/// must return the last value a successful write stored there. Runs at least
/// `iterations` iterations, then on while `keep_going` is set.
thread_log run_worker(recording_dma<flat_memory>& dma, std::size_t thread, std::size_t iterations,
                      const std::atomic<bool>* keep_going = nullptr)
{
    thread_log log;
    // What the region holds now (earlier runs may have written it); only this thread writes it.
    std::vector<std::uint64_t> shadow(region_slots);
    for (std::size_t slot = 0; slot < region_slots; ++slot) {
        shadow[slot] = dma.inner().load<std::uint64_t>(region_of(thread) + slot * 16);
    }
    for (std::size_t i = 0; i < iterations || (keep_going != nullptr && keep_going->load()); ++i) {
        const std::size_t slot = i % region_slots;
        const std::uint64_t address = region_of(thread) + slot * 16;
        const std::uint64_t value = (std::uint64_t{thread + 1} << 48) | (i + 1);
        const auto written = dma.write(address, std::as_bytes(std::span{&value, 1}));
        log.accesses.push_back({access_kind::write, address, 8, written});
        if (!written) {
            shadow[slot] = value;
        }
        std::uint64_t back = ~std::uint64_t{0};
        const auto read = dma.read(address, std::as_writable_bytes(std::span{&back, 1}));
        log.accesses.push_back({access_kind::read, address, 8, read});
        // A failed read leaves the destination untouched.
        if ((!read && back != shadow[slot]) || (read && back != ~std::uint64_t{0})) {
            ++log.bad_reads;
        }
        if (i % 4 == 3) {
            const auto mapped = dma.map(address, 8);
            log.accesses.push_back({access_kind::map, address, 8, mapped.empty() ? unmapped : ok});
        }
    }
    return log;
}

/// The records of `thread`'s region, in recorded order.
std::vector<dma_access> records_of(const std::vector<dma_access>& records, std::size_t thread)
{
    std::vector<dma_access> mine;
    std::copy_if(records.begin(), records.end(), std::back_inserter(mine),
                 [thread](const dma_access& access) { return owner_of(access.address) == thread; });
    return mine;
}

/// Whether `record` is the access `logged` as its thread saw it: the same kind, range and result,
/// except that a thread sees only that a map failed (an empty span), not why.
bool same_access(const dma_access& record, const dma_access& logged)
{
    const bool same_result = record.kind == access_kind::map
                                 ? static_cast<bool>(record.result) == static_cast<bool>(logged.result)
                                 : record.result == logged.result;
    return record.kind == logged.kind && record.address == logged.address && record.length == logged.length &&
           same_result;
}

/// Whether `records` are the accesses of `logged`, in the same order (see same_access).
bool same_accesses(std::span<const dma_access> records, std::span<const dma_access> logged)
{
    return std::equal(records.begin(), records.end(), logged.begin(), logged.end(), same_access);
}

/// Clears `flag` on leaving its scope; declared after a thread_group, before the group joins, so
/// that workers waiting on the flag stop also when an assertion returns early.
struct clear_on_exit {
    explicit clear_on_exit(std::atomic<bool>& cleared) noexcept : flag{cleared} {}
    clear_on_exit(const clear_on_exit&) = delete;
    clear_on_exit& operator=(const clear_on_exit&) = delete;
    ~clear_on_exit() { flag = false; }
    std::atomic<bool>& flag;
};

/// The counters the records add up to.
dma_counts tally(const std::vector<dma_access>& records)
{
    dma_counts counts;
    for (const auto& access : records) {
        counts.reads += access.kind == access_kind::read ? 1 : 0;
        counts.writes += access.kind == access_kind::write ? 1 : 0;
        counts.maps += access.kind == access_kind::map ? 1 : 0;
        counts.failures += access.result ? 1 : 0;
    }
    return counts;
}

/// Checks that the recording holds every access of every thread exactly once, each thread's in
/// its own order with the result it saw, and that the counters add up to the recording.
void expect_recorded_once_each(const recording_dma<flat_memory>& dma, const std::vector<thread_log>& logs)
{
    const auto records = dma.snapshot();
    std::size_t total = 0;
    for (std::size_t thread = 0; thread < logs.size(); ++thread) {
        EXPECT_EQ(logs[thread].bad_reads, 0U) << "thread " << thread;
        EXPECT_TRUE(same_accesses(records_of(records, thread), logs[thread].accesses)) << "thread " << thread;
        total += logs[thread].accesses.size();
    }
    EXPECT_EQ(records.size(), total);
    EXPECT_EQ(dma.counts(), tally(records));
}

/// Spins until `done` holds, yielding.
template <typename Predicate>
void wait_until(Predicate done)
{
    while (!done()) {
        std::this_thread::yield();
    }
}

} // namespace

TEST(recording_dma_threads, every_access_is_recorded_once_while_the_host_sets_fault_rules)
{
    shared_fixture f;
    // Thread 1's writes to slots 100 and 101 fail every time; reads of them return 0.
    f.dma.fail_range(region_of(1) + 100 * 16, 24, access_kind::write);
    std::vector<thread_log> logs(thread_count);
    std::atomic<bool> setting_rules{true};
    {
        thread_group threads{thread_count, [&](std::size_t thread) {
                                 logs[thread] = run_worker(f.dma, thread, 300, &setting_rules);
                             }};
        const clear_on_exit stop{setting_rules};
        // Three read faults, set while the threads run; each fails exactly one later read.
        wait_until([&] { return f.dma.reads() >= 100; });
        f.dma.fail_nth(5, access_kind::read);
        wait_until([&] { return f.dma.reads() >= 400; });
        f.dma.fail_nth(9, access_kind::read);
        f.dma.fail_nth(2, access_kind::read);
        // Reads counted from here come after all three rules: 9 of them fire the last one.
        const std::size_t reads_after_rules = f.dma.reads();
        wait_until([&] { return f.dma.reads() >= reads_after_rules + 9; });
        setting_rules = false;
        threads.join();
    }
    expect_recorded_once_each(f.dma, logs);
    const auto records = f.dma.snapshot();
    std::size_t failed_reads = 0;
    std::size_t failed_writes = 0;
    std::size_t range_writes = 0;
    for (const auto& access : records) {
        const bool in_range = owner_of(access.address) == 1 &&
                              (access.address - region_of(1)) / 16 % region_slots / 2 == 50; // slots 100, 101
        if (access.kind == access_kind::read) {
            failed_reads += access.result == fault ? 1 : 0;
            EXPECT_TRUE(access.result == ok || access.result == fault);
        } else if (access.kind == access_kind::write) {
            range_writes += in_range ? 1 : 0;
            failed_writes += access.result ? 1 : 0;
            EXPECT_EQ(access.result, in_range ? fault : ok);
        } else {
            EXPECT_EQ(access.result, unmapped); // synchronized memory declines every map
        }
    }
    EXPECT_EQ(failed_reads, 3U);
    EXPECT_GE(range_writes, 2U);
    EXPECT_EQ(failed_writes, range_writes);
    EXPECT_EQ(f.dma.failures(), 3U + range_writes + f.dma.maps());
}

TEST(recording_dma_threads, fail_nth_fails_exactly_the_nth_recorded_access_across_threads)
{
    shared_fixture f;
    for (const std::size_t n : {1, 2, 77, 500, 1399}) {
        f.dma.clear();
        f.dma.fail_nth(n);
        std::vector<thread_log> logs(thread_count);
        {
            // 4 threads x 160 iterations x (2 + 1/4) accesses: 1440 accesses.
            thread_group threads{thread_count,
                                 [&](std::size_t thread) { logs[thread] = run_worker(f.dma, thread, 160); }};
        }
        expect_recorded_once_each(f.dma, logs);
        const auto records = f.dma.snapshot();
        ASSERT_EQ(records.size(), 1440U);
        std::size_t faults = 0;
        for (std::size_t i = 0; i < records.size(); ++i) {
            if (records[i].result == fault) {
                ++faults;
                EXPECT_EQ(i + 1, n);
            }
        }
        EXPECT_EQ(faults, 1U) << "n = " << n;
    }
}

TEST(recording_dma_threads, fail_every_and_fail_randomly_count_in_recorded_order)
{
    shared_fixture f;
    f.dma.fail_every(3, access_kind::write);
    f.dma.fail_randomly(0.25, 2024, access_kind::read);
    std::vector<thread_log> logs(thread_count);
    {
        thread_group threads{thread_count,
                             [&](std::size_t thread) { logs[thread] = run_worker(f.dma, thread, 400); }};
    }
    expect_recorded_once_each(f.dma, logs);
    nvmekit::testing::detail::splitmix64 reference{2024};
    std::size_t writes = 0;
    std::size_t random_faults = 0;
    std::size_t mismatches = 0;
    for (const auto& access : f.dma.snapshot()) {
        if (access.kind == access_kind::write) {
            ++writes;
            mismatches += (access.result == fault) != (writes % 3 == 0) ? 1 : 0;
        } else if (access.kind == access_kind::read) {
            const bool expected = reference.next_unit() < 0.25;
            random_faults += expected ? 1 : 0;
            mismatches += (access.result == fault) != expected ? 1 : 0;
        }
    }
    EXPECT_EQ(mismatches, 0U);
    EXPECT_EQ(writes, thread_count * 400);
    EXPECT_GT(random_faults, 0U);
}

TEST(recording_dma_threads, counts_and_snapshots_taken_while_threads_run_are_consistent)
{
    shared_fixture f;
    f.dma.fail_every(10);
    std::vector<thread_log> logs(thread_count);
    std::atomic<std::size_t> finished{0};
    std::size_t samples = 0;
    {
        // A bounded amount of work, sampled until it is done.
        thread_group threads{thread_count, [&](std::size_t thread) {
                                 logs[thread] = run_worker(f.dma, thread, 1500);
                                 ++finished;
                             }};
        dma_counts previous{};
        for (; finished.load() < thread_count; ++samples) {
            const dma_counts before = f.dma.counts();
            const auto records = f.dma.snapshot();
            const dma_counts after = f.dma.counts();
            const std::size_t total_before = before.reads + before.writes + before.maps;
            const std::size_t total_after = after.reads + after.writes + after.maps;
            // Recording is on and nothing clears: the snapshot lies between the two counts.
            ASSERT_LE(total_before, records.size());
            ASSERT_LE(records.size(), total_after);
            const dma_counts recorded = tally(records);
            ASSERT_LE(before.failures, recorded.failures);
            ASSERT_LE(recorded.failures, after.failures);
            ASSERT_GE(before.reads, previous.reads);
            ASSERT_GE(before.writes, previous.writes);
            ASSERT_GE(before.maps, previous.maps);
            previous = after;
        }
    }
    expect_recorded_once_each(f.dma, logs);
}

TEST(recording_dma_threads, clear_while_threads_run_forgets_exactly_what_came_before_it)
{
    shared_fixture f;
    f.dma.fail_every(7, access_kind::read);
    std::vector<thread_log> logs(thread_count);
    std::atomic<bool> clearing{true};
    {
        thread_group threads{thread_count, [&](std::size_t thread) {
                                 logs[thread] = run_worker(f.dma, thread, 300, &clearing);
                             }};
        const clear_on_exit stop{clearing};
        wait_until([&] { return f.dma.writes() >= 200; });
        f.dma.clear();
        wait_until([&] { return f.dma.writes() >= 50; }); // counted from the clear
        clearing = false;
    }
    const auto records = f.dma.snapshot();
    EXPECT_EQ(f.dma.counts(), tally(records));
    std::size_t total = 0;
    for (std::size_t thread = 0; thread < thread_count; ++thread) {
        // What each thread did after the clear: a suffix of its accesses.
        const auto mine = records_of(records, thread);
        const auto& all = logs[thread].accesses;
        ASSERT_LE(mine.size(), all.size());
        EXPECT_TRUE(same_accesses(mine, std::span{all}.last(mine.size()))) << "thread " << thread;
        EXPECT_EQ(logs[thread].bad_reads, 0U);
        total += all.size();
    }
    EXPECT_GT(records.size(), 0U);
    EXPECT_LT(records.size(), total);
}
