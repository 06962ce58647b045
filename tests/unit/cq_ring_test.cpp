#include <nvmekit/queues/cq_ring.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <system_error>
#include <vector>

#include <nvmekit/data/dma_guard.hpp>
#include <nvmekit/testing/flat_memory.hpp>
#include <nvmekit/transport/mapped_memory.hpp>

#include <gtest/gtest.h>

#include "asserts_enabled.hpp"
#include "recorded_memory.hpp"
#include "viewing_memory.hpp"

namespace spec = nvmekit::spec;
using nvmekit::cq_ring;
using nvmekit::queue_memory;
using nvmekit::testing::access_kind;
using namespace nvmekit_test;

namespace {

constexpr std::uint64_t host_base = 0x2'0000'0000;
constexpr std::uint64_t queue_base = host_base + 0x1000;

/// A completion of command `cid` from SQ 1 with status `status` and phase bit `phase_bit`.
spec::completion_queue_entry completion(std::uint16_t cid, spec::status status = spec::status::success(),
                                        bool phase_bit = false)
{
    spec::completion_queue_entry entry{};
    entry.dw0 = 0xd000'0000U + cid;
    entry.dw1 = 0x1111'2222;
    entry.sq_head = static_cast<std::uint16_t>(cid + 1);
    entry.sq_id = 1;
    entry.cid = cid;
    entry.set_status(status, phase_bit);
    return entry;
}

spec::completion_queue_entry slot_of(const recorded_memory& host, std::uint32_t slot)
{
    return host.memory.load<spec::completion_queue_entry>(queue_base + slot * 16ULL);
}

static_assert(nvmekit::StableMappingDmaProvider<nvmekit::transport::mapped_memory>);
static_assert(nvmekit::StableMappingDmaProvider<nvmekit::dma_guard<nvmekit::transport::mapped_memory>>);
static_assert(
    !nvmekit::StableMappingDmaProvider<nvmekit::testing::recording_dma<nvmekit::testing::flat_memory>>);

} // namespace

TEST(cq_ring, new_queue_is_empty_with_phase_one)
{
    const cq_ring cq{4, 16, queue_memory::contiguous(queue_base), 7, true};
    EXPECT_EQ(cq.qid(), 4U);
    EXPECT_EQ(cq.entries(), 16U);
    EXPECT_EQ(cq.head(), 0U);
    EXPECT_EQ(cq.tail(), 0U);
    EXPECT_TRUE(cq.phase());
    EXPECT_EQ(cq.interrupt_vector(), 7U);
    EXPECT_TRUE(cq.interrupts_enabled());
    EXPECT_EQ(cq.outstanding(), 0U);
    EXPECT_EQ(cq.free_slots(), 15U);
    EXPECT_FALSE(cq.full());
    EXPECT_EQ(cq.memory().address_of(0), queue_base);

    const cq_ring polled{5, 2, queue_memory::contiguous(queue_base), 0, false};
    EXPECT_EQ(polled.interrupt_vector(), 0U);
    EXPECT_FALSE(polled.interrupts_enabled());
}

TEST(cq_ring, post_writes_the_entry_at_the_tail_with_the_phase_tag_set)
{
    recorded_memory host{host_base, 0x10000};
    cq_ring cq{1, 8, queue_memory::contiguous(queue_base), 0, true};
    const spec::status invalid_field = spec::status{spec::generic_status::invalid_field}.with_dnr();

    EXPECT_FALSE(cq.post(host.dma, completion(5, invalid_field)));

    EXPECT_EQ(recorded(host.dma), (std::vector{write_at(queue_base, 16)}));
    const spec::completion_queue_entry written = slot_of(host, 0);
    EXPECT_TRUE(written.phase());
    EXPECT_EQ(written.status(), invalid_field);
    EXPECT_EQ(written.dw0, 0xd000'0005U);
    EXPECT_EQ(written.dw1, 0x1111'2222U);
    EXPECT_EQ(written.sq_head, 6U);
    EXPECT_EQ(written.sq_id, 1U);
    EXPECT_EQ(written.cid, 5U);
    EXPECT_EQ(written.status_phase, static_cast<std::uint16_t>((invalid_field.raw << 1) | 1U));
    EXPECT_EQ(cq.tail(), 1U);
    EXPECT_EQ(cq.outstanding(), 1U);
    EXPECT_TRUE(cq.phase());

    EXPECT_FALSE(cq.post(host.dma, completion(6)));
    EXPECT_EQ(recorded(host.dma), (std::vector{write_at(queue_base, 16), write_at(queue_base + 16, 16)}));
    EXPECT_EQ(slot_of(host, 1).cid, 6U);
    EXPECT_EQ(slot_of(host, 1).status_phase, 1U);
    EXPECT_EQ(cq.tail(), 2U);
}

TEST(cq_ring, post_overrides_the_phase_bit_the_caller_passed)
{
    recorded_memory host{host_base, 0x10000};
    cq_ring cq{1, 2, queue_memory::contiguous(queue_base), 0, true};

    EXPECT_FALSE(cq.post(host.dma, completion(1, spec::status::success(), false)));
    EXPECT_TRUE(slot_of(host, 0).phase());
    ASSERT_TRUE(cq.set_head(1));
    EXPECT_FALSE(cq.post(host.dma, completion(2, spec::status::success(), false)));
    EXPECT_TRUE(slot_of(host, 1).phase());
    EXPECT_FALSE(cq.phase());
    ASSERT_TRUE(cq.set_head(0));
    EXPECT_FALSE(cq.post(host.dma, completion(3, spec::status::success(), true)));
    EXPECT_FALSE(slot_of(host, 0).phase());
    EXPECT_EQ(slot_of(host, 0).status(), spec::status::success());
}

TEST(cq_ring, two_entry_queue_is_full_after_one_completion)
{
    recorded_memory host{host_base, 0x10000};
    cq_ring cq{1, 2, queue_memory::contiguous(queue_base), 0, true};
    EXPECT_FALSE(cq.full());
    EXPECT_EQ(cq.free_slots(), 1U);

    ASSERT_FALSE(cq.post(host.dma, completion(1)));
    EXPECT_TRUE(cq.full());
    EXPECT_EQ(cq.outstanding(), 1U);
    EXPECT_EQ(cq.free_slots(), 0U);
    EXPECT_EQ(cq.tail(), 1U);

    ASSERT_TRUE(cq.set_head(1));
    EXPECT_FALSE(cq.full());
    EXPECT_EQ(cq.outstanding(), 0U);
    EXPECT_EQ(cq.free_slots(), 1U);

    ASSERT_FALSE(cq.post(host.dma, completion(2)));
    EXPECT_EQ(cq.tail(), 0U);
    EXPECT_FALSE(cq.phase());
    EXPECT_TRUE(cq.full());
    EXPECT_EQ(cq.outstanding(), 1U);

    ASSERT_TRUE(cq.set_head(0));
    EXPECT_FALSE(cq.full());
    EXPECT_EQ(cq.outstanding(), 0U);
}

TEST(cq_ring, phase_inverts_on_every_wrap)
{
    recorded_memory host{host_base, 0x10000};
    cq_ring cq{1, 4, queue_memory::contiguous(queue_base), 0, true};

    for (std::uint32_t pass = 0; pass < 5; ++pass) {
        const bool expected_phase = pass % 2 == 0;
        EXPECT_EQ(cq.phase(), expected_phase) << "pass " << pass;
        for (std::uint32_t slot = 0; slot < 4; ++slot) {
            const auto cid = static_cast<std::uint16_t>(pass * 10 + slot);
            ASSERT_FALSE(cq.post(host.dma, completion(cid)));
            ASSERT_TRUE(cq.set_head(cq.tail()));
            const spec::completion_queue_entry written = slot_of(host, slot);
            EXPECT_EQ(written.cid, cid);
            EXPECT_EQ(written.phase(), expected_phase) << "pass " << pass << " slot " << slot;
        }
        EXPECT_EQ(cq.tail(), 0U);
        EXPECT_EQ(cq.phase(), !expected_phase) << "after pass " << pass;
    }
    EXPECT_EQ(host.dma.writes(), 20U);
}

TEST(cq_ring, head_doorbell_at_or_beyond_the_queue_size_is_rejected_without_change)
{
    recorded_memory host{host_base, 0x10000};
    cq_ring cq{1, 8, queue_memory::contiguous(queue_base), 0, true};
    for (std::uint16_t cid = 0; cid < 3; ++cid) {
        ASSERT_FALSE(cq.post(host.dma, completion(cid)));
    }

    EXPECT_FALSE(cq.set_head(8));
    EXPECT_FALSE(cq.set_head(9));
    EXPECT_FALSE(cq.set_head(0xffff'ffff));
    EXPECT_EQ(cq.head(), 0U);
    EXPECT_EQ(cq.outstanding(), 3U);
}

TEST(cq_ring, head_doorbell_may_not_move_past_the_tail)
{
    recorded_memory host{host_base, 0x10000};
    cq_ring cq{1, 8, queue_memory::contiguous(queue_base), 0, true};
    for (std::uint16_t cid = 0; cid < 3; ++cid) {
        ASSERT_FALSE(cq.post(host.dma, completion(cid)));
    }

    EXPECT_FALSE(cq.set_head(4));
    EXPECT_FALSE(cq.set_head(7));
    EXPECT_EQ(cq.head(), 0U);
    EXPECT_TRUE(cq.set_head(0)); // nothing consumed
    EXPECT_EQ(cq.head(), 0U);
    EXPECT_TRUE(cq.set_head(2));
    EXPECT_EQ(cq.head(), 2U);
    EXPECT_EQ(cq.outstanding(), 1U);
    EXPECT_TRUE(cq.set_head(3)); // head == tail: everything consumed
    EXPECT_EQ(cq.head(), 3U);
    EXPECT_EQ(cq.outstanding(), 0U);
    EXPECT_FALSE(cq.set_head(2)); // backwards is a move past the tail going forward
    EXPECT_FALSE(cq.set_head(4));
    EXPECT_EQ(cq.head(), 3U);
}

TEST(cq_ring, head_doorbell_within_a_wrapped_window_is_accepted)
{
    recorded_memory host{host_base, 0x10000};
    cq_ring cq{1, 8, queue_memory::contiguous(queue_base), 0, true};
    for (std::uint16_t cid = 0; cid < 6; ++cid) {
        ASSERT_FALSE(cq.post(host.dma, completion(cid)));
    }
    ASSERT_TRUE(cq.set_head(6));
    for (std::uint16_t cid = 6; cid < 10; ++cid) {
        ASSERT_FALSE(cq.post(host.dma, completion(cid)));
    }
    ASSERT_EQ(cq.tail(), 2U);
    ASSERT_EQ(cq.outstanding(), 4U);

    EXPECT_FALSE(cq.set_head(3));
    EXPECT_FALSE(cq.set_head(5));
    EXPECT_TRUE(cq.set_head(7));
    EXPECT_EQ(cq.outstanding(), 3U);
    EXPECT_TRUE(cq.set_head(1));
    EXPECT_EQ(cq.outstanding(), 1U);
    EXPECT_FALSE(cq.set_head(0));
    EXPECT_TRUE(cq.set_head(2));
    EXPECT_EQ(cq.outstanding(), 0U);
}

TEST(cq_ring, completions_held_while_full_post_after_the_head_doorbell)
{
    recorded_memory host{host_base, 0x10000};
    cq_ring cq{1, 4, queue_memory::contiguous(queue_base), 0, true};
    std::vector<std::uint16_t> held{10, 11, 12, 13, 14};

    std::size_t next = 0;
    while (next < held.size() && !cq.full()) {
        ASSERT_FALSE(cq.post(host.dma, completion(held[next++])));
    }
    EXPECT_EQ(next, 3U);
    EXPECT_TRUE(cq.full());
    EXPECT_EQ(cq.outstanding(), 3U);
    EXPECT_EQ(host.dma.writes(), 3U);

    ASSERT_TRUE(cq.set_head(2));
    EXPECT_FALSE(cq.full());
    EXPECT_EQ(cq.free_slots(), 2U);
    while (next < held.size() && !cq.full()) {
        ASSERT_FALSE(cq.post(host.dma, completion(held[next++])));
    }
    EXPECT_EQ(next, 5U);
    EXPECT_TRUE(cq.full());
    EXPECT_EQ(cq.tail(), 1U);
    EXPECT_FALSE(cq.phase());
    EXPECT_EQ(slot_of(host, 3).cid, 13U);
    EXPECT_TRUE(slot_of(host, 3).phase());
    EXPECT_EQ(slot_of(host, 0).cid, 14U);
    EXPECT_FALSE(slot_of(host, 0).phase());
    EXPECT_EQ(slot_of(host, 2).cid, 12U); // the host's unconsumed entry is untouched
    EXPECT_TRUE(slot_of(host, 2).phase());
}

TEST(cq_ring, dma_error_leaves_tail_and_phase_unchanged)
{
    recorded_memory host{host_base, 0x10000};
    cq_ring cq{1, 2, queue_memory::contiguous(queue_base), 0, true};
    ASSERT_FALSE(cq.post(host.dma, completion(1)));
    ASSERT_TRUE(cq.set_head(1));
    host.dma.fail_nth(1, access_kind::write); // the next write: the last slot, which would wrap

    EXPECT_EQ(cq.post(host.dma, completion(2)), nvmekit::make_error_code(nvmekit::errc::dma_fault));
    EXPECT_EQ(host.dma.accesses().back(), write_at(queue_base + 16, 16, dma_fault));
    EXPECT_EQ(cq.tail(), 1U);
    EXPECT_TRUE(cq.phase());
    EXPECT_EQ(cq.outstanding(), 0U);
    EXPECT_EQ(slot_of(host, 1).status_phase, 0U);

    EXPECT_FALSE(cq.post(host.dma, completion(2)));
    EXPECT_EQ(slot_of(host, 1).cid, 2U);
    EXPECT_TRUE(slot_of(host, 1).phase());
    EXPECT_EQ(cq.tail(), 0U);
    EXPECT_FALSE(cq.phase());
}

TEST(cq_ring, queue_outside_host_memory_returns_the_provider_error)
{
    recorded_memory host{host_base, 0x10000};
    cq_ring cq{1, 4, queue_memory::contiguous(host_base + 0x10000 - 8), 0, true};
    EXPECT_EQ(cq.post(host.dma, completion(1)), nvmekit::make_error_code(nvmekit::errc::dma_unmapped));
    EXPECT_EQ(cq.tail(), 0U);
    EXPECT_TRUE(cq.phase());
}

TEST(cq_ring, prp_list_queue_posts_into_the_listed_pages)
{
    recorded_memory host{host_base, 0x20000};
    const std::uint64_t list = host_base + 0x10000;
    host.memory.store(list, host_base + 0x9000);
    host.memory.store(list + 8, host_base + 0x4000);
    queue_memory memory = queue_memory::contiguous(0);
    ASSERT_EQ(queue_memory::from_prp_list(host.dma, list, 512 * 16, 4096, memory), spec::status::success());
    cq_ring cq{2, 512, memory, 3, true};
    host.dma.clear();

    for (std::uint16_t cid = 0; cid < 257; ++cid) {
        ASSERT_FALSE(cq.post(host.dma, completion(cid)));
        ASSERT_TRUE(cq.set_head(cq.tail()));
    }
    ASSERT_EQ(host.dma.accesses().size(), 257U);
    EXPECT_EQ(host.dma.accesses()[0], write_at(host_base + 0x9000, 16));
    EXPECT_EQ(host.dma.accesses()[255], write_at(host_base + 0x9ff0, 16));
    EXPECT_EQ(host.dma.accesses()[256], write_at(host_base + 0x4000, 16));
    const auto written = host.memory.load<spec::completion_queue_entry>(host_base + 0x4000);
    EXPECT_EQ(written.cid, 256U);
    EXPECT_TRUE(written.phase());
}

TEST(cq_ring, reset_returns_to_an_empty_queue_with_phase_one)
{
    recorded_memory host{host_base, 0x10000};
    cq_ring cq{1, 2, queue_memory::contiguous(queue_base), 9, true};
    ASSERT_FALSE(cq.post(host.dma, completion(1)));
    ASSERT_TRUE(cq.set_head(1));
    ASSERT_FALSE(cq.post(host.dma, completion(2)));
    ASSERT_FALSE(cq.phase());

    cq.reset();
    EXPECT_EQ(cq.head(), 0U);
    EXPECT_EQ(cq.tail(), 0U);
    EXPECT_TRUE(cq.phase());
    EXPECT_EQ(cq.outstanding(), 0U);
    EXPECT_EQ(cq.interrupt_vector(), 9U);

    ASSERT_FALSE(cq.post(host.dma, completion(3)));
    EXPECT_TRUE(slot_of(host, 0).phase());
}

TEST(cq_ring_death, posting_into_a_full_queue_asserts)
{
    if (!asserts_enabled) {
        GTEST_SKIP() << "NVMEKIT_ASSERT is compiled out";
    }
    recorded_memory host{host_base, 0x10000};
    cq_ring cq{1, 2, queue_memory::contiguous(queue_base), 0, true};
    ASSERT_FALSE(cq.post(host.dma, completion(1)));
    ASSERT_TRUE(cq.full());
    EXPECT_DEATH(static_cast<void>(cq.post(host.dma, completion(2))), "posting into a full completion queue");
}

TEST(cq_ring_death, queue_sizes_outside_2_to_65536_assert)
{
    if (!asserts_enabled) {
        GTEST_SKIP() << "NVMEKIT_ASSERT is compiled out";
    }
    EXPECT_DEATH((cq_ring{1, 1, queue_memory::contiguous(queue_base), 0, true}), "queue size out of range");
    EXPECT_DEATH((cq_ring{1, 65537, queue_memory::contiguous(queue_base), 0, true}),
                 "queue size out of range");
}

TEST(cq_ring, stable_mapping_provider_posts_into_one_view_of_the_queue)
{
    viewing_memory host;
    host.memory.add_range(host_base, 0x10000);
    cq_ring cq{1, 4, queue_memory::contiguous(queue_base), 0, true};
    for (std::uint16_t cid = 0; cid < 9; ++cid) {
        ASSERT_FALSE(cq.post(host, completion(cid)));
        ASSERT_TRUE(cq.set_head(cq.tail()));
    }
    EXPECT_EQ(host.maps, 1);
    EXPECT_EQ(host.writes, 0);
    // 9 posts into 4 slots: the ninth is in slot 0 on the third pass, phase 1 again.
    const auto last = host.memory.load<spec::completion_queue_entry>(queue_base);
    EXPECT_EQ(last.cid, 8U);
    EXPECT_EQ(last.dw0, 0xd000'0008U);
    EXPECT_TRUE(last.phase());
    const auto second = host.memory.load<spec::completion_queue_entry>(queue_base + 16);
    EXPECT_EQ(second.cid, 5U);
    EXPECT_FALSE(second.phase());
}

TEST(cq_ring, a_new_mapping_generation_maps_again_and_a_refused_map_writes_through_the_provider)
{
    viewing_memory host;
    host.memory.add_range(host_base, 0x10000);
    cq_ring cq{1, 8, queue_memory::contiguous(queue_base), 0, true};
    ASSERT_FALSE(cq.post(host, completion(1)));
    EXPECT_EQ(host.maps, 1);

    host.generation = 1;
    host.refuse_maps = true;
    ASSERT_FALSE(cq.post(host, completion(2)));
    ASSERT_FALSE(cq.post(host, completion(3)));
    EXPECT_EQ(host.maps, 2); // one attempt per generation
    EXPECT_EQ(host.writes, 2);
    EXPECT_EQ(host.memory.load<spec::completion_queue_entry>(queue_base + 32).cid, 3U);

    host.generation = 2;
    host.refuse_maps = false;
    ASSERT_FALSE(cq.post(host, completion(4)));
    EXPECT_EQ(host.maps, 3);
    EXPECT_EQ(host.writes, 2);
    EXPECT_EQ(host.memory.load<spec::completion_queue_entry>(queue_base + 48).cid, 4U);
}

TEST(cq_ring, queue_only_partly_mapped_is_written_through_the_provider)
{
    viewing_memory host;
    host.memory.add_range(host_base, 0x10000);
    // 8 slots, the last four past the end of the range: no view, and the fifth post fails.
    cq_ring cq{1, 8, queue_memory::contiguous(host_base + 0x10000 - 64), 0, true};
    for (std::uint16_t cid = 0; cid < 4; ++cid) {
        ASSERT_FALSE(cq.post(host, completion(cid)));
    }
    EXPECT_EQ(host.writes, 4);
    EXPECT_EQ(cq.post(host, completion(4)), nvmekit::make_error_code(nvmekit::errc::dma_unmapped));
    EXPECT_EQ(cq.tail(), 4U);
}

TEST(cq_ring, region_removed_or_window_excluded_ends_the_view)
{
    std::vector<std::byte> guest(0x10000);
    nvmekit::transport::mapped_memory memory;
    ASSERT_TRUE(memory.add(host_base, guest.data(), guest.size(), true));
    nvmekit::dma_guard guard{memory};
    cq_ring cq{1, 8, queue_memory::contiguous(queue_base), 0, true};
    ASSERT_FALSE(cq.post(guard, completion(1)));
    EXPECT_EQ(guest[0x1000 + 12], std::byte{1}); // cid 1, little-endian

    // Bus Master Enable cleared: the controller excludes every address.
    guard.exclude(0, ~std::uint64_t{0});
    EXPECT_EQ(cq.post(guard, completion(2)), nvmekit::make_error_code(nvmekit::errc::dma_fault));
    guard.exclude(0, 0);
    ASSERT_FALSE(cq.post(guard, completion(2)));
    EXPECT_EQ(guest[0x1000 + 16 + 12], std::byte{2});

    // The region unmapped: nothing more is stored in its memory.
    ASSERT_TRUE(memory.remove(host_base, guest.size()));
    EXPECT_EQ(cq.post(guard, completion(3)), nvmekit::make_error_code(nvmekit::errc::dma_unmapped));
    EXPECT_EQ(guest[0x1000 + 32 + 12], std::byte{0});
    EXPECT_EQ(cq.tail(), 2U);
}
