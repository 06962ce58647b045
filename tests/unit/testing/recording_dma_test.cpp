#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <stdexcept>
#include <system_error>
#include <vector>

#include <gtest/gtest.h>

#include <nvmekit/dma.hpp>
#include <nvmekit/error.hpp>
#include <nvmekit/testing/archetypes.hpp>
#include <nvmekit/testing/flat_memory.hpp>
#include <nvmekit/testing/recording_dma.hpp>

using nvmekit::errc;
using nvmekit::testing::access_kind;
using nvmekit::testing::dma_access;
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
