#include <nvmekit/testing/host.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "../controller_fixture.hpp"

namespace {

namespace nt = nvmekit::testing;
namespace spec = nvmekit::spec;
using namespace nvmekit_test;
using namespace std::chrono_literals;

/// Where the host driver's tests put host memory: at 16 GiB, above the controller tests' base.
constexpr std::uint64_t host_memory_base = 0x4'0000'0000;
constexpr std::uint64_t page = 4096;

/// The rig, with the readers and forgers of host memory the host driver's tests use.
struct host_rig : rig {
    explicit host_rig(nvmekit::controller_config config = {})
        : rig{std::move(config), memory_size, host_memory_base}
    {}

    [[nodiscard]] std::uint64_t entry(std::uint64_t list, std::size_t index)
    {
        return memory.load<std::uint64_t>(list + 8 * index);
    }

    /// The slot the host reads next in a CQ that has not wrapped yet: the first with P = 0.
    [[nodiscard]] std::uint32_t next_slot(std::uint16_t cqid, std::uint32_t entries)
    {
        for (std::uint32_t slot = 0; slot < entries; ++slot) {
            if (!cqe_at(cqid, slot).phase()) {
                return slot;
            }
        }
        ADD_FAILURE() << "CQ " << cqid << " has wrapped";
        return 0;
    }

    /// Writes `cqe` with P = 1 where the host looks for the next completion of CQ `cqid`.
    void forge_completion(std::uint16_t cqid, std::uint32_t entries, spec::completion_queue_entry cqe)
    {
        cqe.set_status(spec::status::success(), true);
        memory.store(host.completion_entry_address(cqid, next_slot(cqid, entries)), cqe);
    }
};

// ---- build_prps --------------------------------------------------------------------------------

TEST(host_build_prps, one_page_needs_only_prp1)
{
    host_rig r;
    const std::uint64_t buffer = r.host.allocate(2 * page);
    EXPECT_EQ(r.host.build_prps(buffer, page), (spec::data_pointer{buffer, 0}));
    EXPECT_EQ(r.host.build_prps(buffer, 1), (spec::data_pointer{buffer, 0}));
    EXPECT_EQ(r.host.build_prps(buffer + 0x100, page - 0x100), (spec::data_pointer{buffer + 0x100, 0}));
}

TEST(host_build_prps, two_pages_put_the_second_in_prp2)
{
    host_rig r;
    const std::uint64_t buffer = r.host.allocate(3 * page);
    EXPECT_EQ(r.host.build_prps(buffer, 2 * page), (spec::data_pointer{buffer, buffer + page}));
    EXPECT_EQ(r.host.build_prps(buffer, page + 1), (spec::data_pointer{buffer, buffer + page}));
    // An offset in PRP1 moves the second page in sooner.
    EXPECT_EQ(r.host.build_prps(buffer + 0x200, page), (spec::data_pointer{buffer + 0x200, buffer + page}));
    EXPECT_EQ(r.host.build_prps(buffer + 0x200, 2 * page - 0x200),
              (spec::data_pointer{buffer + 0x200, buffer + page}));
}

TEST(host_build_prps, more_pages_build_a_prp_list)
{
    host_rig r;
    const std::uint64_t buffer = r.host.allocate(8 * page);
    const auto dptr = r.host.build_prps(buffer, 5 * page);
    EXPECT_EQ(dptr.prp1, buffer);
    EXPECT_EQ(dptr.prp2 % page, 0U); // a PRP list pointer in PRP2 has offset 0h here
    for (std::size_t i = 0; i < 4; ++i) {
        EXPECT_EQ(r.entry(dptr.prp2, i), buffer + (i + 1) * page);
    }
    EXPECT_EQ(r.entry(dptr.prp2, 4), 0U);

    const auto offset = r.host.build_prps(buffer + 0x10, 2 * page);
    EXPECT_EQ(offset.prp1, buffer + 0x10);
    EXPECT_EQ(r.entry(offset.prp2, 0), buffer + page);
    EXPECT_EQ(r.entry(offset.prp2, 1), buffer + 2 * page);
    EXPECT_EQ(r.entry(offset.prp2, 2), 0U);
}

TEST(host_build_prps, a_list_filling_one_page_is_not_chained)
{
    host_rig r;
    // 513 pages: PRP1 and 512 list entries, exactly one list page.
    const std::uint64_t buffer = r.host.allocate(513 * page);
    const auto dptr = r.host.build_prps(buffer, 513 * page);
    for (std::size_t i = 0; i < 512; ++i) {
        ASSERT_EQ(r.entry(dptr.prp2, i), buffer + (i + 1) * page) << i;
    }
}

TEST(host_build_prps, long_lists_chain_through_their_last_entry)
{
    host_rig r;
    // 1100 pages: PRP1 and 1099 more, as 511 + 511 + 77 entries on three list pages.
    const std::uint64_t buffer = r.host.allocate(1100 * page);
    const auto dptr = r.host.build_prps(buffer, 1100 * page);
    EXPECT_EQ(dptr.prp1, buffer);
    std::uint64_t list = dptr.prp2;
    std::vector<std::uint64_t> pages;
    for (int list_page = 0; list_page < 3; ++list_page) {
        ASSERT_EQ(list % page, 0U);
        const std::size_t entries = list_page < 2 ? 511 : 77;
        for (std::size_t i = 0; i < entries; ++i) {
            pages.push_back(r.entry(list, i));
        }
        if (list_page < 2) {
            const std::uint64_t next = r.entry(list, 511);
            EXPECT_TRUE(next < buffer || next >= buffer + 1100 * page); // a list page, not data
            list = next;
        } else {
            EXPECT_EQ(r.entry(list, 77), 0U);
        }
    }
    ASSERT_EQ(pages.size(), 1099U);
    for (std::size_t i = 0; i < pages.size(); ++i) {
        ASSERT_EQ(pages[i], buffer + (i + 1) * page) << i;
    }
}

TEST(host_build_prps, write_prp_list_allocates_page_aligned_lists)
{
    host_rig r;
    static_cast<void>(r.host.allocate(8, 8)); // leaves the allocator off a page boundary
    const std::vector<std::uint64_t> pages{host_memory_base + 0x10000, host_memory_base + 0x20000};
    const std::uint64_t first = r.host.write_prp_list(pages);
    const std::uint64_t second = r.host.write_prp_list(pages);
    EXPECT_EQ(first % page, 0U);
    EXPECT_EQ(second % page, 0U);
    EXPECT_EQ(r.entry(second, 1), host_memory_base + 0x20000);
}

// ---- the driver's checks --------------------------------------------------------------------------

TEST(host_checks, a_cqe_with_an_unknown_command_identifier_throws)
{
    host_rig r;
    r.host.bring_up();
    spec::completion_queue_entry cqe{};
    cqe.sq_id = 0;
    cqe.cid = 0xbeef;
    r.forge_completion(0, 32, cqe);
    std::vector<nt::completion> reaped;
    EXPECT_THROW(r.host.reap(0, reaped), nt::host_error);
}

TEST(host_checks, a_cqe_naming_a_foreign_sq_throws)
{
    host_rig r;
    r.host.bring_up({.io_queue_pairs = 2});
    spec::completion_queue_entry cqe{};
    cqe.sq_id = 2; // SQ 2 is bound to CQ 2, not CQ 1
    cqe.cid = r.host.submit(2, read_command());
    r.forge_completion(1, 256, cqe);
    std::vector<nt::completion> reaped;
    EXPECT_THROW(r.host.reap(1, reaped), nt::host_error);
}

TEST(host_checks, a_cqe_with_an_sq_head_outside_the_sq_throws)
{
    host_rig r;
    r.host.bring_up({.io_queue_pairs = 1, .io_entries = 16});
    spec::completion_queue_entry cqe{};
    cqe.sq_id = 1;
    cqe.cid = 0x1234; // the SQ head is checked first
    cqe.sq_head = 16;
    r.forge_completion(1, 16, cqe);
    std::vector<nt::completion> reaped;
    EXPECT_THROW(r.host.reap(1, reaped), nt::host_error);
}

TEST(host_checks, a_full_sq_throws_instead_of_overwriting)
{
    host_rig r;
    r.host.bring_up({.io_queue_pairs = 1, .io_entries = 4});
    for (int i = 0; i < 3; ++i) {
        r.host.submit(1, read_command());
    }
    EXPECT_THROW(r.host.submit(1, read_command()), nt::host_error);
    // Completions tell the host the SQ head has moved: room again.
    std::vector<nt::completion> reaped;
    r.host.reap(1, reaped);
    EXPECT_EQ(reaped.size(), 3U);
    EXPECT_NO_THROW(r.host.submit(1, read_command()));
}

TEST(host_checks, unknown_queues_and_entries_throw)
{
    host_rig r;
    r.host.bring_up({.io_queue_pairs = 1, .io_entries = 16});
    EXPECT_THROW(r.host.submit(2, read_command()), nt::host_error);
    EXPECT_THROW(static_cast<void>(r.host.io(2, read_command())), nt::host_error);
    EXPECT_THROW(static_cast<void>(r.host.submission_entry_address(1, 16)), nt::host_error);
    EXPECT_THROW(static_cast<void>(r.host.completion_entry_address(3, 0)), nt::host_error);
    EXPECT_EQ(r.host.submission_entry_address(1, 15) - r.host.submission_entry_address(1, 0), 15U * 64);
    EXPECT_EQ(r.host.completion_entry_address(0, 31) - r.host.completion_entry_address(0, 0), 31U * 16);
}

struct few_vectors : test_traits {
    static constexpr nvmekit::limits limits{.io_queues = 4, .msix_vectors = 2};
};

TEST(host_checks, a_failing_command_during_bring_up_throws)
{
    basic_rig<few_vectors> r{{}, memory_size, host_memory_base};
    // CQ 2 asks for vector 2 of a 2-vector table: Invalid Interrupt Vector.
    EXPECT_THROW(r.host.bring_up({.io_queue_pairs = 2}), nt::host_error);
    EXPECT_NO_THROW(r.host.bring_up({.io_queue_pairs = 1}));
}

TEST(host_checks, a_fatal_status_while_enabling_throws)
{
    host_rig r;
    EXPECT_THROW(r.host.bring_up({.io_queue_pairs = 1, .admin_entries = 1}), nt::host_error);
    EXPECT_TRUE(r.host.csts().get(spec::csts_register::cfs));
    EXPECT_NO_THROW(r.host.bring_up());
}

// ---- bounded waits --------------------------------------------------------------------------------

TEST(host_waits, a_command_that_never_completes_throws)
{
    host_rig r;
    r.host.bring_up({.io_queue_pairs = 1, .max_polls = 40, .poll_step = 2ms});
    const auto start = r.clock.now();
    // The Asynchronous Event Request completes only when an event occurs.
    EXPECT_THROW(static_cast<void>(r.host.wait_for(0, *r.host.async_event_request_cid())), nt::host_error);
    EXPECT_EQ(r.clock.now() - start, 80ms);
}

TEST(host_waits, a_controller_that_never_becomes_ready_throws)
{
    host_rig r{{.ready_delay = std::chrono::hours{1}}};
    EXPECT_THROW(r.host.bring_up({.io_queue_pairs = 1, .max_polls = 100}), nt::host_error);
    EXPECT_EQ(r.clock.now(), 100ms);
    EXPECT_FALSE(r.host.csts().get(spec::csts_register::rdy));
}

TEST(host_waits, a_shutdown_that_never_completes_throws)
{
    host_rig r;
    r.host.bring_up({.io_queue_pairs = 1, .max_polls = 20});
    r.ctrl.fatal_error(); // a failed controller does not answer the deletes
    EXPECT_THROW(r.host.shut_down(), nt::host_error);
}

// ---- bring-up and teardown ------------------------------------------------------------------------

TEST(host_bring_up, reports_its_steps_and_results)
{
    host_rig r;
    std::vector<std::string> steps;
    r.host.on_step([&](std::string_view step) { steps.emplace_back(step); });
    const auto result = r.host.bring_up({.io_queue_pairs = 3, .io_entries = 64});
    EXPECT_EQ(result.io_queue_pairs, 3);
    EXPECT_EQ(result.submission_queues_granted, 3);
    EXPECT_EQ(result.completion_queues_granted, 3);
    EXPECT_EQ(result.cap.raw, r.ctrl.registers().cap().raw);
    EXPECT_EQ(result.identify.serial_number(), "NVMEKIT0001");
    ASSERT_EQ(steps.size(), 7U);
    EXPECT_EQ(steps.front(), "read CAP: mqes=4095 dstrd=0 to=20");
    EXPECT_EQ(steps[4], "Number of Queues granted: 3 SQs, 3 CQs");
    EXPECT_EQ(steps.back(), "posted an Asynchronous Event Request");
    for (std::uint16_t qid = 1; qid <= 3; ++qid) {
        EXPECT_TRUE(r.host.has_io_queue(qid));
        EXPECT_TRUE(r.ctrl.submission_queue_exists(qid));
        EXPECT_TRUE(r.ctrl.completion_queue_exists(qid));
    }
    EXPECT_EQ(r.host.outstanding(0), 1U);
    EXPECT_TRUE(r.host.async_event_request_cid().has_value());
    EXPECT_FALSE(r.host.shadow_doorbell_buffer().has_value());
}

TEST(host_bring_up, programs_msix_vectors_unmasked)
{
    host_rig r;
    r.host.bring_up({.io_queue_pairs = 2});
    EXPECT_TRUE(r.ctrl.msix().enabled());
    EXPECT_FALSE(r.ctrl.msix().function_masked());
    for (std::uint16_t vector = 0; vector <= 2; ++vector) {
        EXPECT_FALSE(r.ctrl.msix().masked(vector));
        EXPECT_EQ(r.ctrl.msix().message(vector), (nvmekit::msix_message{host_type::msi_address, vector}));
    }
    EXPECT_TRUE(r.ctrl.msix().masked(3));
}

TEST(host_bring_up, prp_list_queues_for_many_pairs)
{
    host_rig r;
    const auto result =
        r.host.bring_up({.io_queue_pairs = 4, .io_entries = 100, .physically_contiguous = false});
    EXPECT_EQ(result.io_queue_pairs, 4);
    for (std::uint16_t qid = 1; qid <= 4; ++qid) {
        EXPECT_EQ(r.host.io(qid, read_command()).status(),
                  dnr(spec::generic_status::invalid_namespace_or_format));
    }
}

TEST(host_bring_up, bring_up_twice_starts_afresh)
{
    host_rig r;
    r.host.bring_up({.io_queue_pairs = 2});
    r.host.io(1, read_command());
    const auto result = r.host.bring_up({.io_queue_pairs = 1});
    EXPECT_EQ(result.io_queue_pairs, 1);
    EXPECT_FALSE(r.host.has_io_queue(2));
    EXPECT_FALSE(r.ctrl.submission_queue_exists(2));
    EXPECT_EQ(r.host.outstanding(0), 1U);
    EXPECT_TRUE(r.host.admin(get_queues()).ok());
}

TEST(host_bring_up, disable_and_enable_keep_the_admin_queue_usable)
{
    host_rig r;
    r.host.bring_up({.io_queue_pairs = 1, .admin_entries = 4});
    // Leave the host's and the controller's admin queue positions mid-ring, then reset.
    for (int i = 0; i < 3; ++i) {
        r.host.admin(get_queues());
    }
    for (int round = 0; round < 3; ++round) {
        r.host.disable();
        r.host.enable();
        for (int i = 0; i < 6; ++i) {
            ASSERT_TRUE(r.host.admin(get_queues()).ok());
        }
    }
}

TEST(host_bring_up, shut_down_deletes_the_queues_then_notifies)
{
    host_rig r;
    r.host.bring_up({.io_queue_pairs = 2});
    r.host.shut_down();
    EXPECT_FALSE(r.host.has_io_queue(1));
    EXPECT_FALSE(r.ctrl.submission_queue_exists(1));
    EXPECT_FALSE(r.ctrl.completion_queue_exists(2));
    EXPECT_EQ(r.host.csts().get(spec::csts_register::shst), spec::shutdown_status::complete);
    EXPECT_EQ(r.host.cc().get(spec::cc_register::shn), spec::shutdown_notification::normal);
}

TEST(host_bring_up, shadow_doorbells_are_configured_when_offered)
{
    host_rig r;
    r.host.bring_up({.io_queue_pairs = 1, .shadow_doorbells = true});
    ASSERT_TRUE(r.host.shadow_doorbell_buffer().has_value());
    ASSERT_TRUE(r.host.event_index_buffer().has_value());
    EXPECT_EQ(*r.host.shadow_doorbell_buffer() % page, 0U);
    EXPECT_EQ(*r.host.event_index_buffer() % page, 0U);
    r.host.io(1, read_command());
    // The host writes the new tail to the shadow buffer (SQ 1 at 2 * 1 * 4 bytes).
    EXPECT_EQ(r.memory.load<std::uint32_t>(*r.host.shadow_doorbell_buffer() + 8), 1U);
    EXPECT_EQ(r.memory.load<std::uint32_t>(*r.host.shadow_doorbell_buffer() + 12), 1U);
    r.host.disable();
    EXPECT_FALSE(r.host.shadow_doorbell_buffer().has_value());
}

} // namespace

// ---- build_sgl -----------------------------------------------------------------------------------

namespace {

using sgl_piece = host_type::sgl_piece;

spec::sgl_descriptor sgl_at(host_rig& r, std::uint64_t address)
{
    return r.memory.load<spec::sgl_descriptor>(address);
}

} // namespace

TEST(host_build_sgl, one_piece_is_described_in_dptr)
{
    host_rig r;
    const std::uint64_t buffer = r.host.allocate(page);
    const sgl_piece pieces[] = {{buffer, 512}};
    const auto descriptor = spec::to_sgl_descriptor(r.host.build_sgl(pieces));
    EXPECT_EQ(descriptor, spec::sgl_descriptor::data_block(buffer, 512));

    const sgl_piece bucket[] = {{0, 4096, true}};
    EXPECT_EQ(spec::to_sgl_descriptor(r.host.build_sgl(bucket)), spec::sgl_descriptor::bit_bucket(4096));
}

TEST(host_build_sgl, a_few_pieces_go_in_one_last_segment)
{
    host_rig r;
    const std::uint64_t buffer = r.host.allocate(4 * page);
    const sgl_piece pieces[] = {{buffer, 100}, {0, 28, true}, {buffer + page, 4096}};
    const auto head = spec::to_sgl_descriptor(r.host.build_sgl(pieces));
    ASSERT_EQ(head.type(), spec::sgl_descriptor_type::last_segment);
    EXPECT_EQ(head.length, 3U * 16U);
    EXPECT_EQ(head.address % 16, 0U);
    EXPECT_EQ(sgl_at(r, head.address), spec::sgl_descriptor::data_block(buffer, 100));
    EXPECT_EQ(sgl_at(r, head.address + 16), spec::sgl_descriptor::bit_bucket(28));
    EXPECT_EQ(sgl_at(r, head.address + 32), spec::sgl_descriptor::data_block(buffer + page, 4096));
}

TEST(host_build_sgl, many_pieces_chain_segments_and_end_with_a_last_segment)
{
    host_rig r;
    std::vector<sgl_piece> pieces;
    const std::uint64_t buffer = r.host.allocate(10 * page);
    for (std::uint64_t i = 0; i < 10; ++i) {
        pieces.push_back({buffer + i * page, 512});
    }
    // Four descriptors a segment: 3 data + Segment, 3 data + Segment, then a Last Segment of 4.
    const auto head = spec::to_sgl_descriptor(r.host.build_sgl(pieces, 4));
    ASSERT_EQ(head.type(), spec::sgl_descriptor_type::segment);
    EXPECT_EQ(head.length, 64U);
    std::vector<std::uint64_t> described;
    spec::sgl_descriptor pointer = head;
    std::size_t segments = 0;
    while (true) {
        ++segments;
        const std::size_t count = pointer.length / 16;
        for (std::size_t i = 0; i < count; ++i) {
            const auto descriptor = sgl_at(r, pointer.address + 16 * i);
            if (descriptor.type() == spec::sgl_descriptor_type::data_block) {
                EXPECT_EQ(descriptor.length, 512U);
                described.push_back(descriptor.address);
            } else {
                ASSERT_EQ(i, count - 1) << "a segment pointer must be the last descriptor of its segment";
                ASSERT_NE(pointer.type(), spec::sgl_descriptor_type::last_segment)
                    << "a Last Segment must not point to another segment";
                pointer = descriptor;
            }
        }
        if (pointer.type() == spec::sgl_descriptor_type::last_segment && described.size() == pieces.size()) {
            break;
        }
        ASSERT_LT(segments, 10U);
    }
    EXPECT_EQ(segments, 3U);
    ASSERT_EQ(described.size(), pieces.size());
    for (std::size_t i = 0; i < pieces.size(); ++i) {
        EXPECT_EQ(described[i], pieces[i].address);
    }
}

TEST(host_build_sgl, refuses_an_empty_sgl)
{
    host_rig r;
    EXPECT_THROW(r.host.build_sgl(std::span<const sgl_piece>{}), std::invalid_argument);
}

// ---- interrupt-driven reaping --------------------------------------------------------------------

TEST(host_interrupts, reaps_a_cq_after_its_vector_fires)
{
    host_rig r;
    host_type host{r.ctrl, r.memory, r.clock, r.msix};
    host.bring_up({.io_queue_pairs = 2});
    const std::size_t before = r.msix.count(2);
    const auto flush = host_type::command(spec::nvm_opcode::flush, 1);
    EXPECT_EQ(host.io(2, flush).status(),
              spec::status{spec::generic_status::invalid_namespace_or_format}.with_dnr());
    EXPECT_EQ(r.msix.count(2), before + 1);
}

TEST(host_interrupts, a_cq_holding_entries_without_an_interrupt_is_a_missed_interrupt)
{
    host_rig r;
    host_type host{r.ctrl, r.memory, r.clock, r.msix};
    host.bring_up({.io_queue_pairs = 1, .max_polls = 50});
    // Mask vector 1 in the MSI-X table: the controller posts the completion but sets the PBA bit
    // instead of raising the vector, which the host, waiting for an interrupt, sees as missed.
    const std::uint64_t vector_control = r.ctrl.msix_table_offset() + 16 + 12;
    r.ctrl.mmio_write(vector_control, 4, 1);
    try {
        static_cast<void>(host.io(1, host_type::command(spec::nvm_opcode::flush, 1)));
        FAIL() << "the host should report a missed interrupt";
    } catch (const nt::host_error& error) {
        EXPECT_NE(std::string_view{error.what()}.find("missed interrupt"), std::string_view::npos)
            << error.what();
    }
    EXPECT_TRUE(r.ctrl.msix().pending(1));
}

TEST(host_interrupts, polling_mode_ignores_interrupts)
{
    host_rig r;
    host_type host{r.ctrl, r.memory, r.clock, r.msix};
    host.bring_up({.io_queue_pairs = 1, .reap_by_interrupt = false});
    r.ctrl.mmio_write(r.ctrl.msix_table_offset() + 16 + 12, 4, 1);
    EXPECT_EQ(host.io(1, host_type::command(spec::nvm_opcode::flush, 1)).status(),
              spec::status{spec::generic_status::invalid_namespace_or_format}.with_dnr());
}

// ---- host memory through the synchronized accessors ----------------------------------------------
// The host reaches host memory only through read, write, load and store, so it runs unchanged
// on synchronized memory (which maps nothing); threaded_providers_test.cpp runs it against a
// controller polled from another thread.

TEST(host_memory, allocate_zeroes_memory_a_freed_allocation_left_dirty)
{
    host_rig r;
    const std::uint64_t dirty = r.host.allocate(3 * page);
    ASSERT_EQ(r.memory.write(dirty, std::vector<std::byte>(3 * page, std::byte{0xa5})), std::error_code{});
    r.memory.deallocate(dirty);
    const std::uint64_t again = r.host.allocate(3 * page - 8); // more than one zeroing chunk, not whole pages
    EXPECT_EQ(again, dirty);
    std::vector<std::byte> bytes(3 * page);
    ASSERT_EQ(r.memory.read(again, bytes), std::error_code{});
    EXPECT_TRUE(std::all_of(bytes.begin(), bytes.end() - 8, [](std::byte b) { return b == std::byte{0}; }));
    // The 8 bytes past the allocation are not the host's to clear.
    EXPECT_TRUE(std::all_of(bytes.end() - 8, bytes.end(), [](std::byte b) { return b == std::byte{0xa5}; }));
}

TEST(host_memory, enable_clears_stale_admin_completions)
{
    host_rig r;
    r.host.bring_up({.io_queue_pairs = 1, .admin_entries = 4});
    r.host.disable();
    const std::uint64_t first = r.host.completion_entry_address(0, 0);
    // Stale entries with P = 1 would look new to a host expecting phase 1.
    for (std::uint32_t slot = 0; slot < 4; ++slot) {
        spec::completion_queue_entry stale{};
        stale.set_status(spec::status::success(), true);
        r.memory.store(first + 16U * slot, stale);
    }
    r.host.enable();
    for (std::uint32_t slot = 0; slot < 4; ++slot) {
        EXPECT_FALSE(r.memory.load<spec::completion_queue_entry>(first + 16U * slot).phase()) << slot;
    }
    EXPECT_TRUE(r.host.admin(get_queues()).ok());
}

TEST(host_memory, the_host_works_unchanged_on_synchronized_memory)
{
    host_rig r;
    r.memory.set_synchronized(true);
    host_type host{r.ctrl, r.memory, r.clock, r.msix};
    const auto up = host.bring_up(
        {.io_queue_pairs = 2, .io_entries = 64, .physically_contiguous = false, .shadow_doorbells = true});
    ASSERT_EQ(up.io_queue_pairs, 2);
    EXPECT_EQ(up.identify.serial_number(), "NVMEKIT0001");
    ASSERT_TRUE(host.shadow_doorbell_buffer().has_value());
    for (std::uint16_t qid = 1; qid <= 2; ++qid) {
        for (int i = 0; i < 70; ++i) { // past the end of the 64-entry queues
            EXPECT_EQ(host.io(qid, read_command()).status(),
                      spec::status{spec::generic_status::invalid_namespace_or_format}.with_dnr());
        }
        EXPECT_EQ(r.memory.load<std::uint32_t>(*host.shadow_doorbell_buffer() + 8U * qid), 70U % 64U);
    }
    std::vector<std::byte> log;
    ASSERT_TRUE(host.get_log_page(spec::log_page_id::smart_health, 512, log).ok());
    ASSERT_EQ(log.size(), 512U);
    // The page came back through read(): Composite Temperature (bytes 02:01) is the controller's.
    const auto kelvin = static_cast<std::uint16_t>(std::to_integer<unsigned>(log[1]) |
                                                   (std::to_integer<unsigned>(log[2]) << 8U));
    EXPECT_EQ(kelvin, r.ctrl.temperature());
    EXPECT_NE(kelvin, 0U);
    host.disable();
    host.enable();
    EXPECT_TRUE(host.admin(get_queues()).ok());
    host.shut_down();
    EXPECT_TRUE(r.memory.synchronized());
}
