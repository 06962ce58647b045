#include <nvmekit/queues/sq_ring.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <system_error>
#include <vector>

#include <nvmekit/data/dma_guard.hpp>
#include <nvmekit/transport/mapped_memory.hpp>

#include <gtest/gtest.h>

#include "asserts_enabled.hpp"
#include "recorded_memory.hpp"
#include "viewing_memory.hpp"

namespace spec = nvmekit::spec;
using nvmekit::queue_memory;
using nvmekit::sq_ring;
using nvmekit::testing::access_kind;
using namespace nvmekit_test;

namespace {

constexpr std::uint64_t host_base = 0x1'0000'0000;
constexpr std::uint64_t queue_base = host_base + 0x1000;

/// A command whose CID and CDW10 identify slot `slot` of pass `pass`.
spec::submission_queue_entry command(std::uint32_t slot, std::uint32_t pass = 0)
{
    spec::submission_queue_entry entry{};
    entry.cdw0.set(spec::command_dword0::opc, 0x02);
    entry.cdw0.set(spec::command_dword0::cid, static_cast<std::uint16_t>(pass * 1000 + slot));
    entry.nsid = 1;
    entry.cdw10 = 0xa000'0000U + pass * 1000 + slot;
    return entry;
}

/// Fills every slot of a contiguous queue at queue_base with command(slot, pass).
void fill_contiguous(recorded_memory& host, std::uint32_t entries, std::uint32_t pass = 0)
{
    for (std::uint32_t slot = 0; slot < entries; ++slot) {
        host.memory.store(queue_base + slot * 64ULL, command(slot, pass));
    }
}

std::vector<std::uint16_t> cids(std::span<const spec::submission_queue_entry> entries)
{
    std::vector<std::uint16_t> result;
    for (const auto& entry : entries) {
        result.push_back(entry.command_id());
    }
    return result;
}

/// Fetches everything pending (up to 64 entries) and returns the CIDs fetched.
std::vector<std::uint16_t> fetch_all(sq_ring& sq, recorded_memory& host)
{
    std::array<spec::submission_queue_entry, 64> out{};
    std::uint32_t fetched = 99;
    const std::error_code error = sq.fetch(host.dma, out, fetched);
    EXPECT_FALSE(error) << error.message();
    return cids(std::span{out}.first(fetched));
}

} // namespace

TEST(sq_ring, new_queue_is_empty_with_head_and_tail_zero)
{
    const sq_ring sq{3, 2, 16, queue_memory::contiguous(queue_base)};
    EXPECT_EQ(sq.qid(), 3U);
    EXPECT_EQ(sq.cqid(), 2U);
    EXPECT_EQ(sq.entries(), 16U);
    EXPECT_EQ(sq.head(), 0U);
    EXPECT_EQ(sq.tail(), 0U);
    EXPECT_EQ(sq.pending(), 0U);
    EXPECT_TRUE(sq.empty());
    EXPECT_TRUE(sq.memory().is_contiguous());
    EXPECT_EQ(sq.memory().address_of(0), queue_base);
}

TEST(sq_ring, tail_doorbell_accepts_every_slot_of_the_queue)
{
    sq_ring sq{1, 1, 8, queue_memory::contiguous(queue_base)};
    EXPECT_TRUE(sq.set_tail(7));
    EXPECT_EQ(sq.tail(), 7U);
    EXPECT_EQ(sq.pending(), 7U);
    EXPECT_FALSE(sq.empty());
    EXPECT_TRUE(sq.set_tail(0));
    EXPECT_EQ(sq.tail(), 0U);
    EXPECT_TRUE(sq.empty());
}

TEST(sq_ring, tail_doorbell_at_or_beyond_the_queue_size_is_rejected_without_change)
{
    sq_ring sq{1, 1, 8, queue_memory::contiguous(queue_base)};
    ASSERT_TRUE(sq.set_tail(5));
    EXPECT_FALSE(sq.set_tail(8));
    EXPECT_EQ(sq.tail(), 5U);
    EXPECT_FALSE(sq.set_tail(9));
    EXPECT_EQ(sq.tail(), 5U);
    EXPECT_FALSE(sq.set_tail(0xffff'ffff));
    EXPECT_EQ(sq.tail(), 5U);
    EXPECT_EQ(sq.head(), 0U);
    EXPECT_EQ(sq.pending(), 5U);
}

TEST(sq_ring, fetch_reads_contiguous_entries_in_one_dma_read)
{
    recorded_memory host{host_base, 0x10000};
    fill_contiguous(host, 16);
    sq_ring sq{1, 1, 16, queue_memory::contiguous(queue_base)};
    ASSERT_TRUE(sq.set_tail(3));

    std::array<spec::submission_queue_entry, 8> out{};
    std::uint32_t fetched = 99;
    EXPECT_FALSE(sq.fetch(host.dma, out, fetched));

    EXPECT_EQ(fetched, 3U);
    EXPECT_EQ(recorded(host.dma), (std::vector{read_at(queue_base, 3 * 64)}));
    EXPECT_EQ(out[0], command(0));
    EXPECT_EQ(out[1], command(1));
    EXPECT_EQ(out[2], command(2));
    EXPECT_EQ(sq.head(), 3U);
    EXPECT_EQ(sq.tail(), 3U);
    EXPECT_TRUE(sq.empty());
    EXPECT_EQ(host.dma.writes(), 0U);
}

TEST(sq_ring, fetch_takes_no_more_than_the_output_holds)
{
    recorded_memory host{host_base, 0x10000};
    fill_contiguous(host, 16);
    sq_ring sq{1, 1, 16, queue_memory::contiguous(queue_base)};
    ASSERT_TRUE(sq.set_tail(5));

    std::array<spec::submission_queue_entry, 2> out{};
    std::uint32_t fetched = 99;
    EXPECT_FALSE(sq.fetch(host.dma, out, fetched));
    EXPECT_EQ(fetched, 2U);
    EXPECT_EQ(cids(out), (std::vector<std::uint16_t>{0, 1}));
    EXPECT_EQ(sq.head(), 2U);
    EXPECT_EQ(sq.pending(), 3U);

    EXPECT_FALSE(sq.fetch(host.dma, out, fetched));
    EXPECT_EQ(fetched, 2U);
    EXPECT_EQ(cids(out), (std::vector<std::uint16_t>{2, 3}));
    EXPECT_EQ(recorded(host.dma), (std::vector{read_at(queue_base, 128), read_at(queue_base + 128, 128)}));
    EXPECT_EQ(sq.head(), 4U);
    EXPECT_EQ(sq.pending(), 1U);
}

TEST(sq_ring, fetch_of_an_empty_queue_or_into_an_empty_span_reads_nothing)
{
    recorded_memory host{host_base, 0x10000};
    sq_ring sq{1, 1, 16, queue_memory::contiguous(queue_base)};
    std::array<spec::submission_queue_entry, 4> out{};
    std::uint32_t fetched = 99;

    EXPECT_FALSE(sq.fetch(host.dma, out, fetched));
    EXPECT_EQ(fetched, 0U);

    ASSERT_TRUE(sq.set_tail(2));
    fetched = 99;
    EXPECT_FALSE(sq.fetch(host.dma, std::span<spec::submission_queue_entry>{}, fetched));
    EXPECT_EQ(fetched, 0U);
    EXPECT_EQ(sq.head(), 0U);
    EXPECT_TRUE(host.dma.accesses().empty());
}

TEST(sq_ring, fetch_across_the_wrap_takes_two_dma_reads)
{
    recorded_memory host{host_base, 0x10000};
    fill_contiguous(host, 8);
    sq_ring sq{1, 1, 8, queue_memory::contiguous(queue_base)};
    ASSERT_TRUE(sq.set_tail(6));
    ASSERT_EQ(fetch_all(sq, host), (std::vector<std::uint16_t>{0, 1, 2, 3, 4, 5}));
    fill_contiguous(host, 8, 1);
    host.dma.clear();

    ASSERT_TRUE(sq.set_tail(3));
    EXPECT_EQ(sq.pending(), 5U);
    EXPECT_EQ(fetch_all(sq, host), (std::vector<std::uint16_t>{1006, 1007, 1000, 1001, 1002}));
    EXPECT_EQ(recorded(host.dma),
              (std::vector{read_at(queue_base + 6 * 64, 2 * 64), read_at(queue_base, 3 * 64)}));
    EXPECT_EQ(sq.head(), 3U);
    EXPECT_TRUE(sq.empty());
}

TEST(sq_ring, fetch_ending_exactly_at_the_end_of_the_ring_wraps_head_to_zero)
{
    recorded_memory host{host_base, 0x10000};
    fill_contiguous(host, 8);
    sq_ring sq{1, 1, 8, queue_memory::contiguous(queue_base)};
    ASSERT_TRUE(sq.set_tail(4));
    ASSERT_EQ(fetch_all(sq, host).size(), 4U);
    host.dma.clear();

    ASSERT_TRUE(sq.set_tail(0));
    EXPECT_EQ(sq.pending(), 4U);
    EXPECT_EQ(fetch_all(sq, host), (std::vector<std::uint16_t>{4, 5, 6, 7}));
    EXPECT_EQ(recorded(host.dma), (std::vector{read_at(queue_base + 4 * 64, 4 * 64)}));
    EXPECT_EQ(sq.head(), 0U);
    EXPECT_TRUE(sq.empty());
}

TEST(sq_ring, full_two_entry_queue_holds_one_command)
{
    recorded_memory host{host_base, 0x10000};
    fill_contiguous(host, 2);
    sq_ring sq{1, 1, 2, queue_memory::contiguous(queue_base)};
    EXPECT_TRUE(sq.empty());
    ASSERT_TRUE(sq.set_tail(1));
    EXPECT_EQ(sq.pending(), 1U);
    EXPECT_FALSE(sq.set_tail(2));
    EXPECT_EQ(fetch_all(sq, host), (std::vector<std::uint16_t>{0}));
    EXPECT_EQ(sq.head(), 1U);
    ASSERT_TRUE(sq.set_tail(0));
    EXPECT_EQ(sq.pending(), 1U);
    EXPECT_EQ(fetch_all(sq, host), (std::vector<std::uint16_t>{1}));
    EXPECT_EQ(sq.head(), 0U);
    EXPECT_TRUE(sq.empty());
}

TEST(sq_ring, dma_error_leaves_the_head_unchanged_and_reports_nothing_fetched)
{
    recorded_memory host{host_base, 0x10000};
    fill_contiguous(host, 8);
    sq_ring sq{1, 1, 8, queue_memory::contiguous(queue_base)};
    ASSERT_TRUE(sq.set_tail(6));
    ASSERT_EQ(fetch_all(sq, host).size(), 6U);
    ASSERT_TRUE(sq.set_tail(3));
    host.dma.clear();
    host.dma.fail_nth(2, access_kind::read); // the read after the wrap

    std::array<spec::submission_queue_entry, 8> out{};
    std::uint32_t fetched = 99;
    const std::error_code error = sq.fetch(host.dma, out, fetched);

    EXPECT_EQ(error, nvmekit::make_error_code(nvmekit::errc::dma_fault));
    EXPECT_EQ(fetched, 0U);
    EXPECT_EQ(sq.head(), 6U);
    EXPECT_EQ(sq.tail(), 3U);
    EXPECT_EQ(sq.pending(), 5U);
    EXPECT_EQ(recorded(host.dma),
              (std::vector{read_at(queue_base + 6 * 64, 2 * 64), read_at(queue_base, 3 * 64, dma_fault)}));

    EXPECT_EQ(fetch_all(sq, host), (std::vector<std::uint16_t>{6, 7, 0, 1, 2}));
    EXPECT_EQ(sq.head(), 3U);
}

TEST(sq_ring, queue_outside_host_memory_returns_the_provider_error)
{
    recorded_memory host{host_base, 0x10000};
    sq_ring sq{1, 1, 8, queue_memory::contiguous(host_base + 0x10000 - 2 * 64)};
    ASSERT_TRUE(sq.set_tail(3));
    std::array<spec::submission_queue_entry, 8> out{};
    std::uint32_t fetched = 99;

    EXPECT_EQ(sq.fetch(host.dma, out, fetched), nvmekit::make_error_code(nvmekit::errc::dma_unmapped));
    EXPECT_EQ(fetched, 0U);
    EXPECT_EQ(sq.head(), 0U);
}

namespace {

/// A 192-entry SQ in three 4 KiB pages listed out of order: 0x5000, 0x3000, 0x8000 above host_base.
struct three_page_queue {
    static constexpr std::array<std::uint64_t, 3> pages{host_base + 0x5000, host_base + 0x3000,
                                                        host_base + 0x8000};
    static constexpr std::uint64_t list = host_base + 0x10000;

    recorded_memory host{host_base, 0x20000};
    queue_memory memory = queue_memory::contiguous(0);

    three_page_queue()
    {
        for (std::size_t i = 0; i < pages.size(); ++i) {
            host.memory.store(list + i * 8, pages[i]);
        }
        EXPECT_EQ(queue_memory::from_prp_list(host.dma, list, 192 * 64, 4096, memory),
                  spec::status::success());
        host.dma.clear();
    }

    void fill(std::uint32_t pass)
    {
        for (std::uint32_t slot = 0; slot < 192; ++slot) {
            host.memory.store(pages[slot / 64] + (slot % 64) * 64ULL, command(slot, pass));
        }
    }
};

std::vector<std::uint16_t> cid_range(std::uint16_t first, std::uint16_t last, std::uint16_t pass = 0)
{
    std::vector<std::uint16_t> result;
    for (std::uint16_t slot = first; slot <= last; ++slot) {
        result.push_back(static_cast<std::uint16_t>(pass * 1000 + slot));
    }
    return result;
}

} // namespace

/// An 8-entry queue at queue_base, slot i holding command(i), in memory a viewing_memory maps.
struct viewed_queue {
    viewing_memory host;
    sq_ring sq{1, 1, 8, queue_memory::contiguous(queue_base)};

    viewed_queue()
    {
        host.memory.add_range(host_base, 0x10000);
        for (std::uint32_t slot = 0; slot < 8; ++slot) {
            host.memory.store(queue_base + slot * 64ULL, command(slot));
        }
    }
};

/// Takes `count` entries from `sq`'s view (sq_ring::take_mapped) and returns their CIDs; nothing
/// when the queue has no view.
template <typename Dma>
std::vector<std::uint16_t> take_mapped(sq_ring& sq, Dma& dma, std::uint32_t count)
{
    std::vector<std::uint16_t> result;
    const bool taken = sq.take_mapped(dma, count, [&](std::span<const std::byte, sq_ring::sqe_size> entry) {
        spec::submission_queue_entry copy{};
        std::memcpy(&copy, entry.data(), sizeof copy);
        result.push_back(copy.command_id());
    });
    EXPECT_EQ(taken, !result.empty() || count == 0);
    return result;
}

TEST(sq_ring, prp_list_queue_fetch_splits_reads_at_page_boundaries)
{
    three_page_queue q;
    q.fill(0);
    sq_ring sq{1, 1, 192, q.memory};
    ASSERT_TRUE(sq.set_tail(150));

    std::array<spec::submission_queue_entry, 192> out{};
    std::uint32_t fetched = 0;
    EXPECT_FALSE(sq.fetch(q.host.dma, out, fetched));

    EXPECT_EQ(fetched, 150U);
    EXPECT_EQ(recorded(q.host.dma), (std::vector{read_at(q.pages[0], 4096), read_at(q.pages[1], 4096),
                                                 read_at(q.pages[2], 22 * 64)}));
    EXPECT_EQ(cids(std::span{out}.first(150)), cid_range(0, 149));
    EXPECT_EQ(sq.head(), 150U);
}

TEST(sq_ring, prp_list_queue_fetch_across_the_wrap_splits_at_the_page_and_the_wrap)
{
    three_page_queue q;
    q.fill(0);
    sq_ring sq{1, 1, 192, q.memory};
    ASSERT_TRUE(sq.set_tail(120));
    std::array<spec::submission_queue_entry, 192> out{};
    std::uint32_t fetched = 0;
    ASSERT_FALSE(sq.fetch(q.host.dma, out, fetched));
    ASSERT_EQ(fetched, 120U);
    q.fill(1);
    q.host.dma.clear();

    ASSERT_TRUE(sq.set_tail(10));
    EXPECT_FALSE(sq.fetch(q.host.dma, out, fetched));

    EXPECT_EQ(fetched, 82U);
    EXPECT_EQ(recorded(q.host.dma), (std::vector{read_at(q.pages[1] + 56 * 64, 8 * 64),
                                                 read_at(q.pages[2], 4096), read_at(q.pages[0], 10 * 64)}));
    std::vector<std::uint16_t> expected = cid_range(120, 191, 1);
    const std::vector<std::uint16_t> wrapped = cid_range(0, 9, 1);
    expected.insert(expected.end(), wrapped.begin(), wrapped.end());
    EXPECT_EQ(cids(std::span{out}.first(82)), expected);
    EXPECT_EQ(sq.head(), 10U);
}

TEST(sq_ring, prp_list_queue_fetch_within_one_page_is_one_read)
{
    three_page_queue q;
    q.fill(0);
    sq_ring sq{1, 1, 192, q.memory};
    ASSERT_TRUE(sq.set_tail(70));
    std::array<spec::submission_queue_entry, 4> out{};
    std::uint32_t fetched = 0;
    ASSERT_FALSE(sq.fetch(q.host.dma, std::span{out}.first(2), fetched));
    q.host.dma.clear();

    EXPECT_FALSE(sq.fetch(q.host.dma, out, fetched));
    EXPECT_EQ(fetched, 4U);
    EXPECT_EQ(recorded(q.host.dma), (std::vector{read_at(q.pages[0] + 2 * 64, 4 * 64)}));
    EXPECT_EQ(cids(out), cid_range(2, 5));
}

TEST(sq_ring, dma_error_on_a_later_page_of_a_prp_list_queue_leaves_the_head_unchanged)
{
    three_page_queue q;
    q.fill(0);
    sq_ring sq{1, 1, 192, q.memory};
    ASSERT_TRUE(sq.set_tail(100));
    q.host.dma.fail_nth(2, access_kind::read);

    std::array<spec::submission_queue_entry, 192> out{};
    std::uint32_t fetched = 99;
    EXPECT_EQ(sq.fetch(q.host.dma, out, fetched), nvmekit::make_error_code(nvmekit::errc::dma_fault));
    EXPECT_EQ(fetched, 0U);
    EXPECT_EQ(sq.head(), 0U);
    EXPECT_EQ(sq.pending(), 100U);
}

TEST(sq_ring, reset_returns_head_and_tail_to_zero)
{
    recorded_memory host{host_base, 0x10000};
    fill_contiguous(host, 8);
    sq_ring sq{1, 1, 8, queue_memory::contiguous(queue_base)};
    ASSERT_TRUE(sq.set_tail(6));
    ASSERT_EQ(fetch_all(sq, host).size(), 6U);
    ASSERT_TRUE(sq.set_tail(2));

    sq.reset();
    EXPECT_EQ(sq.head(), 0U);
    EXPECT_EQ(sq.tail(), 0U);
    EXPECT_TRUE(sq.empty());
    EXPECT_EQ(sq.qid(), 1U);
    EXPECT_EQ(sq.entries(), 8U);
}

TEST(sq_ring, largest_queue_accepts_tails_up_to_65535)
{
    sq_ring sq{1, 1, 65536, queue_memory::contiguous(queue_base)};
    EXPECT_TRUE(sq.set_tail(65535));
    EXPECT_FALSE(sq.set_tail(65536));
    EXPECT_EQ(sq.pending(), 65535U);
}

TEST(sq_ring_death, queue_sizes_outside_2_to_65536_and_other_entry_sizes_assert)
{
    if (!asserts_enabled) {
        GTEST_SKIP() << "NVMEKIT_ASSERT is compiled out";
    }
    EXPECT_DEATH((sq_ring{1, 1, 1, queue_memory::contiguous(queue_base)}), "queue size out of range");
    EXPECT_DEATH((sq_ring{1, 1, 65537, queue_memory::contiguous(queue_base)}), "queue size out of range");
    EXPECT_DEATH((sq_ring{1, 1, 16, queue_memory::contiguous(queue_base), 128}), "only 64-byte");
}

TEST(sq_ring, stable_mapping_provider_takes_entries_from_one_view_of_the_queue)
{
    viewing_memory host;
    host.memory.add_range(host_base, 0x10000);
    sq_ring sq{1, 1, 8, queue_memory::contiguous(queue_base)};
    // Five passes of three entries round 8 slots, the host refilling each slot before its tail.
    std::uint32_t next_slot = 0;
    for (std::uint32_t pass = 0; pass < 5; ++pass) {
        std::vector<std::uint16_t> expected;
        for (int i = 0; i < 3; ++i) {
            host.memory.store(queue_base + next_slot * 64ULL, command(next_slot, pass));
            expected.push_back(static_cast<std::uint16_t>(pass * 1000 + next_slot));
            next_slot = (next_slot + 1) % 8;
        }
        ASSERT_TRUE(sq.set_tail(next_slot));
        ASSERT_EQ(take_mapped(sq, host, 3), expected) << "pass " << pass;
        EXPECT_EQ(sq.head(), next_slot);
        EXPECT_TRUE(sq.empty());
    }
    EXPECT_EQ(host.maps, 1);
    EXPECT_EQ(host.reads, 0);
    EXPECT_EQ(host.writes, 0);
}

TEST(sq_ring, take_from_the_view_wraps_at_the_end_of_the_ring_and_stops_at_count)
{
    viewed_queue q;
    auto& [host, sq] = q;
    ASSERT_TRUE(sq.set_tail(6));
    ASSERT_EQ(take_mapped(sq, host, 6).size(), 6U);
    ASSERT_TRUE(sq.set_tail(3));
    EXPECT_EQ(take_mapped(sq, host, 4), (std::vector<std::uint16_t>{6, 7, 0, 1}));
    EXPECT_EQ(sq.head(), 2U);
    EXPECT_EQ(sq.pending(), 1U);
    EXPECT_EQ(take_mapped(sq, host, 1), (std::vector<std::uint16_t>{2}));
    EXPECT_EQ(sq.head(), 3U);
    // Up to the last slot exactly: the head wraps to 0.
    ASSERT_TRUE(sq.set_tail(0));
    EXPECT_EQ(take_mapped(sq, host, 5), (std::vector<std::uint16_t>{3, 4, 5, 6, 7}));
    EXPECT_EQ(sq.head(), 0U);
    EXPECT_EQ(host.maps, 1);
}

TEST(sq_ring, a_new_mapping_generation_maps_again_and_a_refused_map_leaves_the_entries_to_fetch)
{
    viewed_queue q;
    auto& [host, sq] = q;
    ASSERT_TRUE(sq.set_tail(5));
    ASSERT_EQ(take_mapped(sq, host, 1), (std::vector<std::uint16_t>{0}));
    EXPECT_EQ(host.maps, 1);

    host.generation = 1;
    host.refuse_maps = true;
    EXPECT_TRUE(take_mapped(sq, host, 2).empty());
    EXPECT_TRUE(take_mapped(sq, host, 2).empty());
    EXPECT_EQ(host.maps, 2); // one attempt per generation
    EXPECT_EQ(sq.head(), 1U);
    std::array<spec::submission_queue_entry, 2> out{};
    std::uint32_t fetched = 0;
    ASSERT_FALSE(sq.fetch(host, out, fetched));
    EXPECT_EQ(cids(std::span{out}.first(fetched)), (std::vector<std::uint16_t>{1, 2}));
    EXPECT_EQ(host.reads, 1);

    host.generation = 2;
    host.refuse_maps = false;
    EXPECT_EQ(take_mapped(sq, host, 2), (std::vector<std::uint16_t>{3, 4}));
    EXPECT_EQ(host.maps, 3);
    EXPECT_EQ(host.reads, 1);
    EXPECT_TRUE(sq.empty());
}

TEST(sq_ring, queues_without_one_whole_mapped_range_have_no_view)
{
    viewing_memory host;
    host.memory.add_range(host_base, 0x10000);
    // 8 slots, the last four past the end of the range.
    sq_ring partly_mapped{1, 1, 8, queue_memory::contiguous(host_base + 0x10000 - 4 * 64)};
    ASSERT_TRUE(partly_mapped.set_tail(2));
    EXPECT_TRUE(take_mapped(partly_mapped, host, 2).empty());
    EXPECT_EQ(partly_mapped.head(), 0U);
    EXPECT_EQ(host.maps, 1);

    sq_ring message_based{1, 1, 8, sq_ring::message_based};
    ASSERT_TRUE(message_based.push(command(0)));
    EXPECT_TRUE(take_mapped(message_based, host, 1).empty());
    EXPECT_EQ(message_based.pending(), 1U);
    EXPECT_EQ(host.maps, 1); // a message-based queue asks for no view

    three_page_queue q;
    viewing_memory pages;
    pages.memory = q.host.memory;
    sq_ring prp_list{1, 1, 192, q.memory};
    ASSERT_TRUE(prp_list.set_tail(1));
    EXPECT_TRUE(take_mapped(prp_list, pages, 1).empty());
    EXPECT_EQ(prp_list.head(), 0U);
    EXPECT_EQ(pages.maps, 0); // nor does a PRP-list queue
}

TEST(sq_ring, region_removed_or_window_excluded_ends_the_view)
{
    std::vector<std::byte> guest(0x10000);
    nvmekit::transport::mapped_memory memory;
    ASSERT_TRUE(memory.add(host_base, guest.data(), guest.size(), true));
    for (std::uint32_t slot = 0; slot < 8; ++slot) {
        const auto entry = command(slot);
        std::memcpy(guest.data() + 0x1000 + slot * 64, &entry, sizeof entry);
    }
    nvmekit::dma_guard guard{memory};
    sq_ring sq{1, 1, 8, queue_memory::contiguous(queue_base)};
    ASSERT_TRUE(sq.set_tail(7));
    ASSERT_EQ(take_mapped(sq, guard, 1), (std::vector<std::uint16_t>{0}));

    // Bus Master Enable cleared: the controller excludes every address, and nothing is taken.
    guard.exclude(0, ~std::uint64_t{0});
    EXPECT_TRUE(take_mapped(sq, guard, 1).empty());
    std::array<spec::submission_queue_entry, 1> out{};
    std::uint32_t fetched = 0;
    EXPECT_EQ(sq.fetch(guard, out, fetched), dma_fault);
    guard.exclude(0, 0);
    ASSERT_EQ(take_mapped(sq, guard, 1), (std::vector<std::uint16_t>{1}));

    // The region unmapped: nothing more is read from its memory.
    ASSERT_TRUE(memory.remove(host_base, guest.size()));
    EXPECT_TRUE(take_mapped(sq, guard, 1).empty());
    EXPECT_EQ(sq.fetch(guard, out, fetched), dma_unmapped);
    EXPECT_EQ(sq.head(), 2U);
}
