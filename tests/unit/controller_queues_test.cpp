#include <nvmekit/controller.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "controller_fixture.hpp"

namespace {
namespace controller_queues_test {

namespace nt = nvmekit::testing;
namespace spec = nvmekit::spec;
using namespace nvmekit_test;

/// An NVM opcode the command set does not define.
[[nodiscard]] spec::submission_queue_entry reserved_io_command()
{
    auto sqe = host_type::command(spec::nvm_opcode::read, 1);
    sqe.cdw0.set(spec::command_dword0::opc, 0x03);
    return sqe;
}

constexpr std::uint32_t invalid_doorbell_value_event = 0x0001'0100;    // type 0, info 01h, log 01h
constexpr std::uint32_t invalid_doorbell_register_event = 0x0001'0000; // type 0, info 00h, log 01h

// ---- Create I/O Completion Queue ------------------------------------------------------------

TEST(controller_create_io_cq, invalid_queue_identifiers)
{
    rig r;
    r.admin_only(4);
    const std::uint64_t buffer = r.host.allocate(4096);
    const auto invalid_qid = dnr(spec::command_specific_status::invalid_queue_identifier);
    EXPECT_EQ(r.host.admin(create_cq_command(0, 16, buffer)).status(), invalid_qid);
    EXPECT_EQ(r.host.admin(create_cq_command(5, 16, buffer)).status(), invalid_qid); // above the 4 granted
    EXPECT_EQ(r.host.admin(create_cq_command(65, 16, buffer)).status(), invalid_qid);
    EXPECT_EQ(r.host.admin(create_cq_command(0xffff, 16, buffer)).status(), invalid_qid);
    EXPECT_FALSE(r.ctrl.completion_queue_exists(5));
    EXPECT_EQ(r.host.admin(create_cq_command(4, 16, buffer)).status(), spec::status::success());
    EXPECT_EQ(r.host.admin(create_cq_command(4, 16, r.host.allocate(4096))).status(), invalid_qid); // exists
    EXPECT_TRUE(r.ctrl.completion_queue_exists(4));
}

TEST(controller_create_io_cq, invalid_queue_sizes)
{
    rig r;
    r.admin_only(4);
    const std::uint64_t buffer = r.host.allocate(65536);
    const auto invalid_size = dnr(spec::command_specific_status::invalid_queue_size);
    EXPECT_EQ(r.host.admin(create_cq_command(1, 1, buffer)).status(), invalid_size);    // QSIZE 0
    EXPECT_EQ(r.host.admin(create_cq_command(1, 4097, buffer)).status(), invalid_size); // QSIZE above MQES
    EXPECT_EQ(r.host.admin(create_cq_command(1, 65536, buffer)).status(), invalid_size);
    EXPECT_FALSE(r.ctrl.completion_queue_exists(1));
    EXPECT_EQ(r.host.admin(create_cq_command(1, 4096, buffer)).status(),
              spec::status::success()); // QSIZE = MQES
    EXPECT_EQ(r.host.admin(create_cq_command(2, 2, r.host.allocate(4096))).status(), spec::status::success());
}

TEST(controller_create_io_cq, interrupt_vector_beyond_the_msix_table)
{
    rig r;
    r.admin_only(4);
    EXPECT_EQ(r.host.admin(create_cq_command(1, 16, r.host.allocate(4096), true, 65)).status(),
              dnr(spec::command_specific_status::invalid_interrupt_vector));
    EXPECT_EQ(r.host.admin(create_cq_command(1, 16, r.host.allocate(4096), true, 0xffff)).status(),
              dnr(spec::command_specific_status::invalid_interrupt_vector));
    EXPECT_FALSE(r.ctrl.completion_queue_exists(1));
    EXPECT_EQ(r.host.admin(create_cq_command(1, 16, r.host.allocate(4096), true, 64)).status(),
              spec::status::success());
}

TEST(controller_create_io_cq, queue_memory_offsets)
{
    rig r;
    r.admin_only(4);
    const std::uint64_t page = r.host.allocate(2 * 4096);
    const auto offset_invalid = dnr(spec::generic_status::prp_offset_invalid);
    EXPECT_EQ(r.host.admin(create_cq_command(1, 16, page + 0x200)).status(), offset_invalid);
    EXPECT_EQ(r.host.admin(create_cq_command(1, 16, page + 4)).status(), offset_invalid);
    // PC = 0: the PRP list pointer and every entry have offset 0h.
    const std::uint64_t list = r.host.allocate(4096);
    r.memory.store(list, page);
    EXPECT_EQ(r.host.admin(create_cq_command(1, 256, list + 8, false)).status(), offset_invalid);
    r.memory.store(list, page + 0x100);
    EXPECT_EQ(r.host.admin(create_cq_command(1, 256, list, false)).status(), offset_invalid);
    EXPECT_FALSE(r.ctrl.completion_queue_exists(1));
    r.memory.store(list, page);
    EXPECT_EQ(r.host.admin(create_cq_command(1, 256, list, false)).status(), spec::status::success());
    // A queue that would wrap the address space (8 KiB from the last page).
    EXPECT_EQ(r.host.admin(create_cq_command(2, 512, 0xffff'ffff'ffff'f000)).status(),
              dnr(spec::generic_status::invalid_field));
}

TEST(controller_create_io_cq, unreadable_prp_list_is_a_data_transfer_error)
{
    rig r;
    r.admin_only(4);
    EXPECT_EQ(r.host.admin(create_cq_command(1, 256, 0x7000'0000, false)).status(),
              dnr(spec::generic_status::data_transfer_error));
    EXPECT_FALSE(r.ctrl.completion_queue_exists(1));
    EXPECT_EQ(r.ctrl.state(), nvmekit::controller_state::ready);
}

TEST(controller_create_io_cq, contiguous_queues_required)
{
    rig r{{.contiguous_queues_required = true}};
    r.admin_only(4);
    EXPECT_TRUE(r.host.read64(spec::register_offset::cap) & spec::cap_register::cqr.mask);
    EXPECT_EQ(r.host.create_io_cq(1, 64, 1, true, false).status(), dnr(spec::generic_status::invalid_field));
    EXPECT_FALSE(r.ctrl.completion_queue_exists(1));
    EXPECT_EQ(r.host.create_io_cq(1, 64, 1, true, true).status(), spec::status::success());
    EXPECT_EQ(r.host.create_io_sq(1, 1, 64, false).status(), dnr(spec::generic_status::invalid_field));
    EXPECT_FALSE(r.ctrl.submission_queue_exists(1));
    EXPECT_EQ(r.host.create_io_sq(1, 1, 64, true).status(), spec::status::success());
    EXPECT_EQ(r.host.io(1, read_command()).status(), dnr(spec::generic_status::invalid_namespace_or_format));
}

// ---- Create I/O Submission Queue --------------------------------------------------------------

TEST(controller_create_io_sq, completion_queue_invalid)
{
    rig r;
    r.admin_only(4);
    const std::uint64_t buffer = r.host.allocate(4096);
    const auto cq_invalid = dnr(spec::command_specific_status::completion_queue_invalid);
    EXPECT_EQ(r.host.admin(create_sq_command(1, 1, 16, buffer)).status(), cq_invalid); // CQ 1 missing
    EXPECT_EQ(r.host.admin(create_sq_command(1, 0, 16, buffer)).status(), cq_invalid); // the admin CQ
    EXPECT_EQ(r.host.admin(create_sq_command(1, 200, 16, buffer)).status(), cq_invalid);
    EXPECT_FALSE(r.ctrl.submission_queue_exists(1));
    ASSERT_TRUE(r.host.create_io_cq(1, 16, 1, true).ok());
    EXPECT_EQ(r.host.admin(create_sq_command(1, 1, 16, buffer)).status(), spec::status::success());
}

TEST(controller_create_io_sq, invalid_queue_identifiers_and_sizes)
{
    rig r;
    r.admin_only(2);
    ASSERT_TRUE(r.host.create_io_cq(1, 16, 1, true).ok());
    const std::uint64_t buffer = r.host.allocate(4097 * 64);
    const auto invalid_qid = dnr(spec::command_specific_status::invalid_queue_identifier);
    const auto invalid_size = dnr(spec::command_specific_status::invalid_queue_size);
    EXPECT_EQ(r.host.admin(create_sq_command(0, 1, 16, buffer)).status(), invalid_qid);
    EXPECT_EQ(r.host.admin(create_sq_command(3, 1, 16, buffer)).status(), invalid_qid); // above the 2 granted
    EXPECT_EQ(r.host.admin(create_sq_command(65, 1, 16, buffer)).status(), invalid_qid);
    EXPECT_EQ(r.host.admin(create_sq_command(1, 1, 1, buffer)).status(), invalid_size);    // QSIZE 0
    EXPECT_EQ(r.host.admin(create_sq_command(1, 1, 4097, buffer)).status(), invalid_size); // above MQES
    EXPECT_EQ(r.host.admin(create_sq_command(1, 1, 16, buffer + 0x40)).status(),
              dnr(spec::generic_status::prp_offset_invalid));
    EXPECT_FALSE(r.ctrl.submission_queue_exists(1));
    EXPECT_EQ(r.host.admin(create_sq_command(1, 1, 4096, buffer)).status(), spec::status::success());
    EXPECT_EQ(r.host.admin(create_sq_command(1, 1, 16, r.host.allocate(4096))).status(),
              invalid_qid); // exists
    // An SQ may use any existing CQ, not only the one with its own identifier.
    EXPECT_EQ(r.host.admin(create_sq_command(2, 1, 16, r.host.allocate(4096))).status(),
              spec::status::success());
}

TEST(controller_create_io_queues, number_of_queues_bounds_the_identifiers)
{
    rig r;
    const auto result = r.host.bring_up({.io_queue_pairs = 2});
    EXPECT_EQ(result.submission_queues_granted, 2);
    EXPECT_EQ(r.host.create_io_cq(3, 16, 3, true).status(),
              dnr(spec::command_specific_status::invalid_queue_identifier));
    EXPECT_EQ(r.host.create_io_sq(3, 1, 16).status(),
              dnr(spec::command_specific_status::invalid_queue_identifier));
}

// ---- Delete I/O queues ------------------------------------------------------------------------

TEST(controller_delete_io_queues, ordering_rules)
{
    rig r;
    r.host.bring_up({.io_queue_pairs = 2});
    const auto invalid_qid = dnr(spec::command_specific_status::invalid_queue_identifier);
    EXPECT_EQ(r.host.delete_io_cq(1).status(), dnr(spec::command_specific_status::invalid_queue_deletion));
    EXPECT_TRUE(r.ctrl.completion_queue_exists(1));
    EXPECT_EQ(r.host.delete_io_sq(0).status(), invalid_qid);
    EXPECT_EQ(r.host.delete_io_cq(0).status(), invalid_qid);
    EXPECT_EQ(r.host.delete_io_sq(3).status(), invalid_qid);
    EXPECT_EQ(r.host.delete_io_cq(3).status(), invalid_qid);
    EXPECT_EQ(r.host.delete_io_sq(65).status(), invalid_qid);
    EXPECT_EQ(r.host.delete_io_cq(0xffff).status(), invalid_qid);
    EXPECT_TRUE(r.ctrl.submission_queue_exists(0));
    EXPECT_TRUE(r.ctrl.completion_queue_exists(0));

    EXPECT_EQ(r.host.delete_io_sq(1).status(), spec::status::success());
    EXPECT_FALSE(r.ctrl.submission_queue_exists(1));
    EXPECT_EQ(r.host.delete_io_sq(1).status(), invalid_qid);
    EXPECT_EQ(r.host.delete_io_cq(1).status(), spec::status::success());
    EXPECT_FALSE(r.ctrl.completion_queue_exists(1));
    EXPECT_EQ(r.host.delete_io_cq(1).status(), invalid_qid);

    // Delete then recreate: the queue starts afresh.
    ASSERT_EQ(r.host.create_io_cq(1, 8, 1, true).status(), spec::status::success());
    ASSERT_EQ(r.host.create_io_sq(1, 1, 8).status(), spec::status::success());
    for (int i = 0; i < 20; ++i) {
        const auto completion = r.host.io(1, read_command());
        EXPECT_EQ(completion.status(), dnr(spec::generic_status::invalid_namespace_or_format));
        EXPECT_EQ(completion.cqe.sq_head, (i + 1) % 8);
    }
    EXPECT_EQ(r.host.io(2, read_command()).status(), dnr(spec::generic_status::invalid_namespace_or_format));
}

// ---- I/O through queues -------------------------------------------------------------------------

TEST(controller_io_queues, io_commands_complete_with_namespace_or_opcode_errors)
{
    rig r;
    r.host.bring_up();
    for (const auto opcode : {spec::nvm_opcode::flush, spec::nvm_opcode::write, spec::nvm_opcode::read,
                              spec::nvm_opcode::write_zeroes, spec::nvm_opcode::dataset_management}) {
        EXPECT_EQ(r.host.io(1, host_type::command(opcode, 1)).status(),
                  dnr(spec::generic_status::invalid_namespace_or_format));
    }
    const auto reserved = r.host.io(1, reserved_io_command());
    EXPECT_EQ(reserved.status(), dnr(spec::generic_status::invalid_opcode));
    EXPECT_EQ(reserved.cqe.sq_id, 1);
    EXPECT_EQ(reserved.cqe.dw0, 0U);
    EXPECT_EQ(reserved.cqe.dw1, 0U);
}

TEST(controller_io_queues, prp_list_queues_work_end_to_end)
{
    rig r;
    const auto result =
        r.host.bring_up({.io_queue_pairs = 3, .io_entries = 256, .physically_contiguous = false});
    ASSERT_EQ(result.io_queue_pairs, 3);
    // Each SQ spans 4 pages, each CQ one; 600 commands go round the SQs twice.
    for (std::uint16_t qid = 1; qid <= 3; ++qid) {
        for (int i = 0; i < 600; ++i) {
            const bool reserved = i % 3 == 0;
            const auto completion = r.host.io(qid, reserved ? reserved_io_command() : read_command());
            ASSERT_EQ(completion.status(), reserved ? dnr(spec::generic_status::invalid_opcode)
                                                    : dnr(spec::generic_status::invalid_namespace_or_format));
            ASSERT_EQ(completion.cqe.sq_head, (i + 1) % 256);
            ASSERT_EQ(completion.cqe.phase(), (i / 256) % 2 == 0);
        }
    }
    EXPECT_EQ(r.ctrl.state(), nvmekit::controller_state::ready);
    EXPECT_EQ(r.ctrl.statistics().dma_errors, 0U);
}

struct large_queue_traits : test_traits {
    static constexpr nvmekit::limits limits{.io_queues = 1, .queue_entries = 65536, .msix_vectors = 2};
};

TEST(controller_io_queues, prp_list_of_a_queue_larger_than_one_list_page_is_chained)
{
    // 40000 entries of 64 bytes are 625 memory pages: the PRP list takes two list pages.
    basic_rig<large_queue_traits> r;
    r.host.bring_up({.io_queue_pairs = 1, .io_entries = 1024});
    ASSERT_TRUE(r.host.delete_io_sq(1).ok());
    ASSERT_EQ(r.host.create_io_sq(1, 1, 40000, false).status(), spec::status::success());
    // Page 511 of the queue, the first one the second list page describes, starts at entry 32704.
    std::vector<nt::completion> completions;
    for (std::uint32_t submitted = 0; submitted < 33000;) {
        for (int i = 0; i < 500; ++i, ++submitted) {
            r.host.submit(1, read_command());
        }
        while (r.host.outstanding(1) != 0) {
            completions.clear();
            r.host.reap(1, completions);
            ASSERT_EQ(r.ctrl.state(), nvmekit::controller_state::ready);
            for (const auto& completion : completions) {
                ASSERT_EQ(completion.status(), dnr(spec::generic_status::invalid_namespace_or_format));
            }
        }
    }
    EXPECT_EQ(r.ctrl.statistics().dma_errors, 0U);
    EXPECT_EQ(r.host.io(1, read_command()).cqe.sq_head, 33001);
}

TEST(controller_io_queues, several_sqs_share_one_cq)
{
    rig r;
    r.admin_only(3);
    ASSERT_TRUE(r.host.create_io_cq(1, 16, 1, true).ok());
    for (std::uint16_t qid = 1; qid <= 3; ++qid) {
        ASSERT_TRUE(r.host.create_io_sq(qid, 1, 8).ok());
    }
    std::vector<std::pair<std::uint16_t, std::uint16_t>> submitted; // (sqid, cid)
    const auto submit = [&](std::uint16_t qid, int count) {
        for (int i = 0; i < count; ++i) {
            submitted.emplace_back(qid, r.host.submit(qid, read_command()));
        }
    };
    submit(1, 2);
    submit(2, 3);
    submit(3, 1);
    r.ctrl.poll();
    const std::uint16_t expected_heads[] = {0, 2, 3, 1};
    for (const auto& [qid, cid] : submitted) {
        const auto completion = r.host.wait_for(qid, cid);
        EXPECT_EQ(completion.cqe.sq_id, qid);
        EXPECT_EQ(completion.cqe.sq_head, expected_heads[qid]);
        EXPECT_EQ(completion.status(), dnr(spec::generic_status::invalid_namespace_or_format));
    }
    // Each SQ's head moves on by itself, wrapping at 8 entries.
    for (int round = 0; round < 10; ++round) {
        for (std::uint16_t qid = 1; qid <= 3; ++qid) {
            const auto completion = r.host.io(qid, read_command());
            EXPECT_EQ(completion.cqe.sq_id, qid);
            EXPECT_EQ(completion.cqe.sq_head, (expected_heads[qid] + round + 1) % 8);
        }
    }
    // The CQ can only go once every SQ bound to it is gone.
    for (std::uint16_t qid = 1; qid <= 3; ++qid) {
        EXPECT_EQ(r.host.delete_io_cq(1).status(),
                  dnr(spec::command_specific_status::invalid_queue_deletion));
        EXPECT_TRUE(r.host.delete_io_sq(qid).ok());
    }
    EXPECT_EQ(r.host.delete_io_cq(1).status(), spec::status::success());
}

TEST(controller_io_queues, phase_tag_flips_at_every_wrap_of_a_small_cq)
{
    rig r;
    r.admin_only(1);
    ASSERT_TRUE(r.host.create_io_cq(1, 4, 1, true).ok());
    ASSERT_TRUE(r.host.create_io_sq(1, 1, 4).ok());
    for (int i = 0; i < 120; ++i) {
        const auto completion = r.host.io(1, read_command());
        const bool phase = (i / 4) % 2 == 0;
        ASSERT_EQ(completion.cqe.phase(), phase) << "command " << i;
        const auto in_memory = r.cqe_at(1, static_cast<std::uint32_t>(i % 4));
        ASSERT_EQ(in_memory, completion.cqe);
        ASSERT_EQ(completion.cqe.sq_head, (i + 1) % 4);
    }
    EXPECT_EQ(r.ctrl.statistics().invalid_doorbells, 0U);
}

TEST(controller_io_queues, a_full_cq_holds_completions_in_order)
{
    rig r;
    r.admin_only(1);
    ASSERT_TRUE(r.host.create_io_cq(1, 4, 1, true).ok());
    ASSERT_TRUE(r.host.create_io_sq(1, 1, 16).ok());
    const auto posted_before = r.ctrl.statistics().completions_posted;
    std::vector<std::uint16_t> cids;
    for (int i = 0; i < 10; ++i) {
        cids.push_back(r.host.submit(1, read_command()));
    }
    for (int i = 0; i < 5; ++i) {
        r.ctrl.poll();
    }
    // Exactly entries - 1 = 3 are posted; the fourth slot stays untouched.
    const auto expect_entry = [&](std::uint32_t slot, std::size_t command, bool phase) {
        const auto cqe = r.cqe_at(1, slot);
        EXPECT_EQ(cqe.cid, cids[command]) << "slot " << slot;
        EXPECT_EQ(cqe.phase(), phase) << "slot " << slot;
        EXPECT_EQ(cqe.sq_id, 1);
        EXPECT_EQ(cqe.sq_head, 10);
        EXPECT_EQ(cqe.status(), dnr(spec::generic_status::invalid_namespace_or_format));
    };
    expect_entry(0, 0, true);
    expect_entry(1, 1, true);
    expect_entry(2, 2, true);
    EXPECT_EQ(r.cqe_at(1, 3), spec::completion_queue_entry{});
    EXPECT_EQ(r.ctrl.statistics().completions_posted - posted_before, 3U);
    EXPECT_EQ(r.ctrl.statistics().completions_held, 7U);
    EXPECT_EQ(r.ctrl.requests_in_use(), 7U);

    // Consuming three entries lets three more in: slots 3, 0, 1, the phase inverted after the wrap.
    r.ring_cq_head(1, 3);
    r.ctrl.poll();
    expect_entry(3, 3, true);
    expect_entry(0, 4, false);
    expect_entry(1, 5, false);
    expect_entry(2, 2, true); // not overwritten
    EXPECT_EQ(r.ctrl.requests_in_use(), 4U);

    r.ring_cq_head(1, 2);
    r.ctrl.poll();
    expect_entry(2, 6, false);
    expect_entry(3, 7, false);
    expect_entry(0, 8, true);
    expect_entry(1, 5, false);
    EXPECT_EQ(r.ctrl.requests_in_use(), 1U);

    r.ring_cq_head(1, 1);
    r.ctrl.poll();
    expect_entry(1, 9, true);
    EXPECT_EQ(r.ctrl.requests_in_use(), 0U);
    EXPECT_EQ(r.ctrl.statistics().completions_posted - posted_before, 10U);
    EXPECT_EQ(r.ctrl.statistics().invalid_doorbells, 0U);
}

TEST(controller_io_queues, a_full_sq_pool_applies_back_pressure)
{
    rig r;
    r.admin_only(1);
    ASSERT_TRUE(r.host.create_io_cq(1, 2, 1, true).ok());
    ASSERT_TRUE(r.host.create_io_sq(1, 1, 4).ok());
    // The SQ's 4 requests: one completion posted (CQ of 2 holds 1), the others held.
    std::vector<std::uint16_t> cids;
    for (int i = 0; i < 3; ++i) {
        cids.push_back(r.host.submit(1, read_command()));
    }
    r.ctrl.poll();
    EXPECT_EQ(r.ctrl.requests_in_use(), 2U);
    // The host writes three more entries directly (its own view of the SQ head is stale).
    for (std::uint32_t slot = 3; slot < 6; ++slot) {
        auto sqe = read_command();
        sqe.cdw0.set(spec::command_dword0::cid, static_cast<std::uint16_t>(0x100 + slot));
        r.memory.store(r.host.submission_entry_address(1, slot % 4), sqe);
    }
    r.ring_sq_tail(1, 6 % 4);
    r.ctrl.poll();
    EXPECT_EQ(r.ctrl.requests_in_use(), 4U); // the pool is exhausted: one entry waits in the SQ
    // The host consumes one entry at a time; each frees room for the next held completion.
    std::vector<std::uint16_t> seen;
    std::uint32_t head = 0;
    bool phase = true;
    for (int polls = 0; polls < 20 && seen.size() < 6; ++polls) {
        const auto cqe = r.cqe_at(1, head);
        ASSERT_EQ(cqe.phase(), phase);
        seen.push_back(cqe.cid);
        head = (head + 1) % 2;
        phase = head == 0 ? !phase : phase;
        r.ring_cq_head(1, head);
        r.ctrl.poll();
    }
    EXPECT_EQ(seen, (std::vector<std::uint16_t>{cids[0], cids[1], cids[2], 0x103, 0x104, 0x105}));
    EXPECT_EQ(r.ctrl.requests_in_use(), 0U);
}

// ---- Invalid doorbell writes and asynchronous events -------------------------------------------

TEST(controller_doorbells, invalid_values_complete_an_async_event_request)
{
    rig r;
    r.host.bring_up({.io_queue_pairs = 1, .io_entries = 256});
    const auto expect_event = [&](std::uint32_t dw0) {
        const auto cid = *r.host.async_event_request_cid();
        EXPECT_EQ(r.async_event(cid), dw0);
    };
    r.ring_sq_tail(1, 256); // SQ tail = size
    expect_event(invalid_doorbell_value_event);

    r.acknowledge_errors();
    auto cid = r.post_async_event_request();
    r.ring_sq_tail(1, 0xffff);
    EXPECT_EQ(r.async_event(cid), invalid_doorbell_value_event);

    r.acknowledge_errors();
    cid = r.post_async_event_request();
    r.ring_cq_head(1, 1); // nothing posted yet
    EXPECT_EQ(r.async_event(cid), invalid_doorbell_value_event);

    r.acknowledge_errors();
    cid = r.post_async_event_request();
    r.ring_cq_head(1, 256);
    EXPECT_EQ(r.async_event(cid), invalid_doorbell_value_event);

    r.acknowledge_errors();
    cid = r.post_async_event_request();
    r.ring_sq_tail(0, 32); // the admin SQ has 32 entries
    EXPECT_EQ(r.async_event(cid), invalid_doorbell_value_event);

    EXPECT_EQ(r.ctrl.statistics().invalid_doorbells, 5U);
    EXPECT_EQ(r.ctrl.state(), nvmekit::controller_state::ready);
    // The queues still work: the bad values changed nothing.
    const auto completion = r.host.io(1, read_command());
    EXPECT_EQ(completion.status(), dnr(spec::generic_status::invalid_namespace_or_format));
    EXPECT_EQ(completion.cqe.sq_head, 1);
}

TEST(controller_doorbells, cq_head_past_the_posted_entries_is_invalid)
{
    rig r;
    r.host.bring_up();
    for (int i = 0; i < 3; ++i) {
        r.host.submit(1, read_command());
    }
    r.ctrl.poll(); // three entries posted at slots 0..2, the host has consumed none
    const auto cid = *r.host.async_event_request_cid();
    r.ring_cq_head(1, 3); // consumes all three: valid
    r.ctrl.poll();
    EXPECT_EQ(r.ctrl.statistics().invalid_doorbells, 0U);
    r.ring_cq_head(1, 4); // one past the last posted entry
    EXPECT_EQ(r.async_event(cid), invalid_doorbell_value_event);
    EXPECT_EQ(r.ctrl.statistics().invalid_doorbells, 1U);
}

TEST(controller_doorbells, doorbells_of_missing_queues_complete_an_async_event_request)
{
    rig r;
    r.host.bring_up({.io_queue_pairs = 1});
    auto cid = *r.host.async_event_request_cid();
    r.ring_sq_tail(2, 1); // SQ 2 was never created
    EXPECT_EQ(r.async_event(cid), invalid_doorbell_register_event);

    r.acknowledge_errors();
    cid = r.post_async_event_request();
    r.ring_cq_head(64, 0); // the highest queue identifier the controller has
    EXPECT_EQ(r.async_event(cid), invalid_doorbell_register_event);

    r.acknowledge_errors();
    cid = r.post_async_event_request();
    r.ring_sq_tail(100, 1); // a doorbell beyond every queue the controller can create
    EXPECT_EQ(r.async_event(cid), invalid_doorbell_register_event);
    EXPECT_EQ(r.ctrl.statistics().invalid_doorbells, 3U);
    EXPECT_EQ(r.ctrl.state(), nvmekit::controller_state::ready);
}

/// Entry `index` (0 = newest) of the Error Information log, read as a host would, with RAE set so
/// that the read does not unmask error events.
[[nodiscard]] spec::error_information_entry error_log_entry(rig& r, std::size_t index)
{
    std::vector<std::byte> log;
    EXPECT_EQ(r.host.get_log_page(spec::log_page_id::error_information, 64 * (index + 1), log, true).status(),
              spec::status::success());
    spec::error_information_entry entry{};
    std::memcpy(&entry, log.data() + 64 * index, sizeof entry);
    return entry;
}

[[nodiscard]] std::uint64_t smart_error_log_entries(rig& r)
{
    std::vector<std::byte> log;
    EXPECT_EQ(r.host.get_log_page(spec::log_page_id::smart_health, 512, log, true).status(),
              spec::status::success());
    spec::smart_health_log smart{};
    std::memcpy(&smart, log.data(), sizeof smart);
    return smart.error_log_entries.low();
}

TEST(controller_doorbells, an_invalid_doorbell_event_has_an_error_information_entry)
{
    // FreeBSD's nvme(4) reads the log page an error event names (Error Information) to report it.
    rig r;
    r.host.bring_up({.io_queue_pairs = 1, .io_entries = 256});
    ASSERT_EQ(r.ctrl.errors().size(), 0U);
    auto cid = *r.host.async_event_request_cid();
    r.ring_sq_tail(1, 256); // SQ tail = size
    ASSERT_EQ(r.async_event(cid), invalid_doorbell_value_event);
    // Not tied to a command (Base 2.0 5.16.1.2): SQID, CID and Parameter Error Location FFFFh.
    const auto value = error_log_entry(r, 0);
    EXPECT_EQ(value.error_count, 1U);
    EXPECT_EQ(value.sqid, 0xffffU);
    EXPECT_EQ(value.cid, 0xffffU);
    EXPECT_EQ(value.status(), spec::status{spec::generic_status::invalid_field});
    EXPECT_FALSE(value.phase());
    EXPECT_EQ(value.error_location.raw, 0xffffU);
    EXPECT_EQ(value.lba, 0U);
    EXPECT_EQ(value.nsid, 0U);
    EXPECT_EQ(smart_error_log_entries(r), 1U);

    r.acknowledge_errors();
    cid = r.post_async_event_request();
    r.ring_cq_head(9, 0); // CQ 9 was never created
    ASSERT_EQ(r.async_event(cid), invalid_doorbell_register_event);
    const auto missing = error_log_entry(r, 0);
    EXPECT_EQ(missing.error_count, 2U);
    EXPECT_EQ(missing.sqid, 0xffffU);
    EXPECT_EQ(missing.cid, 0xffffU);
    EXPECT_EQ(missing.status(), spec::status{spec::command_specific_status::invalid_queue_identifier});
    EXPECT_EQ(missing.error_location.raw, 0xffffU);
    EXPECT_EQ(error_log_entry(r, 1), value);
    EXPECT_EQ(smart_error_log_entries(r), 2U);

    // A CQ head past the posted entries is found where the queue is polled (a concurrent group,
    // when groups run on threads of their own); the admin context writes its entry all the same.
    r.acknowledge_errors();
    cid = r.post_async_event_request();
    r.ring_cq_head(1, 1);
    ASSERT_EQ(r.async_event(cid), invalid_doorbell_value_event);
    const auto head = error_log_entry(r, 0);
    EXPECT_EQ(head.error_count, 3U);
    EXPECT_EQ(head.sqid, 0xffffU);
    EXPECT_EQ(head.status(), spec::status{spec::generic_status::invalid_field});
    EXPECT_EQ(smart_error_log_entries(r), 3U);
    EXPECT_EQ(r.ctrl.errors().size(), 3U);
}

TEST(controller_doorbells, every_invalid_doorbell_write_has_its_entry)
{
    rig r;
    r.host.bring_up({.io_queue_pairs = 1, .io_entries = 256});
    const auto cid = *r.host.async_event_request_cid();
    // Three bad writes before the controller polls: one event, three errors.
    r.ring_sq_tail(1, 300);
    r.ring_sq_tail(1, 301);
    r.ring_sq_tail(1, 302);
    ASSERT_EQ(r.async_event(cid), invalid_doorbell_value_event);
    EXPECT_EQ(r.ctrl.statistics().invalid_doorbells, 3U);
    EXPECT_EQ(r.ctrl.errors().size(), 3U);
    EXPECT_EQ(error_log_entry(r, 0).error_count, 3U);
    EXPECT_EQ(error_log_entry(r, 2).error_count, 1U);
    EXPECT_EQ(error_log_entry(r, 3).error_count, 0U); // unused
    EXPECT_EQ(smart_error_log_entries(r), 3U);
}

TEST(controller_doorbells, an_event_waits_for_a_request)
{
    rig r;
    r.host.bring_up();
    const auto first = *r.host.async_event_request_cid();
    r.ring_sq_tail(1, 999);
    EXPECT_EQ(r.async_event(first), invalid_doorbell_value_event);
    // No request outstanding: the event waits, and the next request takes it at once.
    r.acknowledge_errors();
    r.ring_sq_tail(3, 1);
    for (int i = 0; i < 5; ++i) {
        r.ctrl.poll();
    }
    const auto second = r.host.submit(0, host_type::async_event_request_command());
    EXPECT_EQ(r.async_event(second), invalid_doorbell_register_event);
}

TEST(controller_doorbells, async_event_request_limit)
{
    rig r;
    const auto result = r.host.bring_up();
    ASSERT_EQ(result.identify.aerl, 3);
    // bring_up posted one request; AERL + 1 = 4 may be outstanding.
    std::vector<std::uint16_t> outstanding{*r.host.async_event_request_cid()};
    for (int i = 0; i < 3; ++i) {
        outstanding.push_back(r.host.submit(0, host_type::async_event_request_command()));
    }
    const auto excess = r.host.admin(host_type::async_event_request_command());
    EXPECT_EQ(excess.status(), dnr(spec::command_specific_status::async_event_request_limit_exceeded));
    EXPECT_EQ(r.host.outstanding(0), 4U);
    EXPECT_EQ(r.host.admin(host_type::async_event_request_command()).status(),
              dnr(spec::command_specific_status::async_event_request_limit_exceeded));
    // Events complete the requests oldest first.
    r.ring_sq_tail(1, 9999);
    EXPECT_EQ(r.async_event(outstanding[0]), invalid_doorbell_value_event);
    r.acknowledge_errors();
    r.ring_sq_tail(7, 1);
    EXPECT_EQ(r.async_event(outstanding[1]), invalid_doorbell_register_event);
    EXPECT_EQ(r.host.outstanding(0), 2U);
    // With room again, a new request is accepted.
    outstanding.push_back(r.host.submit(0, host_type::async_event_request_command()));
    for (int i = 0; i < 5; ++i) {
        r.ctrl.poll();
    }
    EXPECT_EQ(r.host.outstanding(0), 3U);
}

TEST(controller_doorbells, an_event_type_stays_masked_until_its_log_is_read)
{
    rig r;
    r.host.bring_up();
    const auto first = *r.host.async_event_request_cid();
    r.ring_sq_tail(1, 9999);
    EXPECT_EQ(r.async_event(first), invalid_doorbell_value_event);
    const auto second = r.post_async_event_request();
    r.ring_sq_tail(7, 1); // another error event: masked, it waits
    for (int i = 0; i < 5; ++i) {
        r.ctrl.poll();
    }
    EXPECT_EQ(r.host.outstanding(0), 1U);
    // Reading the log with RAE set keeps the mask.
    std::vector<std::byte> log;
    ASSERT_TRUE(r.host.get_log_page(spec::log_page_id::error_information, 64, log, true).ok());
    r.ctrl.poll();
    EXPECT_EQ(r.host.outstanding(0), 1U);
    r.acknowledge_errors();
    EXPECT_EQ(r.async_event(second), invalid_doorbell_register_event);
}

TEST(controller_doorbells, an_event_for_a_full_admin_cq_is_held_not_dropped)
{
    // Admin queues of 4 entries: the CQ holds 3 completions and the SQ has 4 requests.
    rig r;
    r.host.bring_up({.io_queue_pairs = 1, .admin_entries = 4});
    r.host.disable();
    r.host.enable(); // the admin queues start at slot 0 again; no request is outstanding
    std::uint32_t tail = 0;
    const auto submit_admin = [&](spec::submission_queue_entry sqe, std::uint16_t cid) {
        sqe.cdw0.set(spec::command_dword0::cid, cid);
        r.memory.store(r.host.submission_entry_address(0, tail), sqe);
        tail = (tail + 1) % 4;
    };
    submit_admin(host_type::async_event_request_command(), 0x500);
    r.ring_sq_tail(0, tail);
    r.ctrl.poll();
    for (std::uint16_t cid = 0x501; cid <= 0x503; ++cid) {
        submit_admin(get_queues(), cid);
    }
    r.ring_sq_tail(0, tail);
    r.ctrl.poll(); // the CQ is full
    for (std::uint16_t cid = 0x504; cid <= 0x506; ++cid) {
        submit_admin(get_queues(), cid);
    }
    r.ring_sq_tail(0, tail);
    r.ctrl.poll();
    submit_admin(get_queues(), 0x507);
    r.ring_sq_tail(0, tail);
    r.ctrl.poll(); // every request of the admin SQ holds a completion
    EXPECT_EQ(r.ctrl.requests_in_use(), 4U);

    r.ring_sq_tail(1, 1); // an event while no request is free to carry it
    r.ctrl.poll();

    // The host consumes the CQ; every completion, the event's included, arrives in order.
    std::vector<std::uint16_t> cids;
    std::uint32_t head = 0;
    bool phase = true;
    for (int polls = 0; polls < 20; ++polls) {
        for (;;) {
            const auto cqe = r.cqe_at(0, head);
            if (cqe.phase() != phase) {
                break;
            }
            cids.push_back(cqe.cid);
            if (cqe.cid == 0x500) {
                EXPECT_EQ(cqe.dw0, invalid_doorbell_register_event);
            }
            head = (head + 1) % 4;
            phase = head == 0 ? !phase : phase;
        }
        r.ring_cq_head(0, head);
        r.ctrl.poll();
    }
    EXPECT_EQ(cids, (std::vector<std::uint16_t>{0x501, 0x502, 0x503, 0x504, 0x505, 0x506, 0x507, 0x500}));
    EXPECT_EQ(r.ctrl.requests_in_use(), 0U);
}

TEST(controller_doorbells, doorbell_stride_spaces_the_doorbells)
{
    rig r{{.doorbell_stride = 2}}; // 16 bytes between doorbells
    const auto result = r.host.bring_up({.io_queue_pairs = 2});
    ASSERT_EQ(result.cap.get(spec::cap_register::dstrd), 2);
    EXPECT_GE(r.ctrl.msix_table_offset(), spec::cq_head_doorbell_offset(64, 2) + 4);
    for (int i = 0; i < 20; ++i) {
        ASSERT_EQ(r.host.io(static_cast<std::uint16_t>(1 + i % 2), read_command()).status(),
                  dnr(spec::generic_status::invalid_namespace_or_format));
    }
    // Between two doorbells there is no register: the write is a host error and nothing else.
    const auto errors = r.ctrl.registers().host_error_count();
    r.ctrl.mmio_write(spec::sq_tail_doorbell_offset(1, 2) + 4, 4, 1);
    r.ctrl.poll();
    EXPECT_EQ(r.ctrl.registers().host_error_count() - errors, 1U);
    EXPECT_EQ(r.ctrl.statistics().invalid_doorbells, 0U);
    // The stray write changed nothing: SQ 1 goes on after its ten commands.
    EXPECT_EQ(r.host.io(1, read_command()).cqe.sq_head, 11);
}

TEST(controller_doorbells, doorbell_stride_spaces_the_shadow_slots)
{
    rig r{{.doorbell_stride = 1}}; // 8 bytes between doorbells and between shadow slots
    r.host.bring_up({.io_queue_pairs = 2, .shadow_doorbells = true});
    r.ctrl.poll(); // takes the Asynchronous Event Request bring_up posted
    const std::uint64_t shadow = *r.host.shadow_doorbell_buffer();
    const std::uint64_t event_index = *r.host.event_index_buffer();
    // The first command goes through the doorbell register, as the new queue's EventIdx asks.
    ASSERT_EQ(r.host.io(2, read_command()).cqe.sq_head, 1U);
    EXPECT_EQ(r.memory.load<std::uint32_t>(event_index + 2 * 2 * 8), 1U); // SQ 2's EventIdx slot
    auto sqe = read_command();
    sqe.cdw0.set(spec::command_dword0::cid, 0x42);
    r.memory.store(r.host.submission_entry_address(2, 1), sqe);
    r.memory.store(shadow + 2 * 2 * 8, std::uint32_t{2}); // SQ 2's tail slot
    EXPECT_EQ(r.ctrl.poll(), 1U);
    EXPECT_EQ(r.cqe_at(2, 1).cid, 0x42);
    EXPECT_EQ(r.memory.load<std::uint32_t>(event_index + 2 * 2 * 8), 2U);
    EXPECT_EQ(r.ctrl.statistics().invalid_doorbells, 0U);
}

// ---- Shadow doorbells (Doorbell Buffer Config) --------------------------------------------------

/// The two ways hosts treat a new queue's shadow slots: Linux clears them, SPDK's driver leaves
/// what the last queue with that QID wrote.
class controller_shadow_doorbells : public ::testing::TestWithParam<bool> {
protected:
    [[nodiscard]] static nt::host_options options(std::uint16_t pairs, std::uint32_t entries = 256)
    {
        return {.io_queue_pairs = pairs,
                .io_entries = entries,
                .shadow_doorbells = true,
                .clear_shadow_slots = GetParam()};
    }
};

INSTANTIATE_TEST_SUITE_P(hosts, controller_shadow_doorbells, ::testing::Values(true, false),
                         [](const auto& info) { return info.param ? "slots_cleared" : "slots_left_stale"; });

TEST_P(controller_shadow_doorbells, commands_complete_from_the_shadow_buffer_alone)
{
    rig r;
    r.host.bring_up(options(2));
    ASSERT_TRUE(r.host.shadow_doorbell_buffer().has_value());
    const std::uint64_t shadow = *r.host.shadow_doorbell_buffer();
    const std::uint64_t event_index = *r.host.event_index_buffer();
    r.ctrl.poll(); // takes the Asynchronous Event Request bring_up posted
    // The host's first command and CQ head go through the registers (EventIdx 0 asks for it).
    ASSERT_EQ(r.host.io(1, read_command()).cqe.sq_head, 1U);
    r.ctrl.poll(); // takes the CQ head the host wrote after reaping
    EXPECT_EQ(r.memory.load<std::uint32_t>(event_index + 8), 1U);  // SQ 1's EventIdx: the processed tail
    EXPECT_EQ(r.memory.load<std::uint32_t>(event_index + 12), 1U); // CQ 1's EventIdx: its head
    // SQ 1's tail is slot 2 * 1, CQ 1's head slot 2 * 1 + 1 (4-byte stride).
    for (std::uint32_t slot = 1; slot < 4; ++slot) {
        auto sqe = slot == 2 ? reserved_io_command() : read_command();
        sqe.cdw0.set(spec::command_dword0::cid, static_cast<std::uint16_t>(0x700 + slot));
        r.memory.store(r.host.submission_entry_address(1, slot), sqe);
    }
    r.memory.store(shadow + 8, std::uint32_t{4});
    const auto executed = r.ctrl.poll();
    EXPECT_EQ(executed, 3U);
    for (std::uint32_t slot = 1; slot < 4; ++slot) {
        const auto cqe = r.cqe_at(1, slot);
        EXPECT_TRUE(cqe.phase());
        EXPECT_EQ(cqe.cid, 0x700 + slot);
        EXPECT_EQ(cqe.sq_head, 4);
        EXPECT_EQ(cqe.status(), slot == 2 ? dnr(spec::generic_status::invalid_opcode)
                                          : dnr(spec::generic_status::invalid_namespace_or_format));
    }
    EXPECT_EQ(r.memory.load<std::uint32_t>(event_index + 8), 4U);
    EXPECT_EQ(r.memory.load<std::uint32_t>(event_index + 12), 1U);
    // The CQ head goes through the shadow buffer too.
    r.memory.store(shadow + 12, std::uint32_t{4});
    r.ctrl.poll();
    EXPECT_EQ(r.memory.load<std::uint32_t>(event_index + 12), 4U);
    EXPECT_EQ(r.ctrl.statistics().invalid_doorbells, 0U);
    // SQ 2 is untouched.
    EXPECT_EQ(r.memory.load<std::uint32_t>(event_index + 16), 0U);
    // An invalid value in an armed shadow slot is an invalid doorbell write like a register one.
    r.memory.store(shadow + 8, std::uint32_t{4096});
    EXPECT_EQ(r.async_event(*r.host.async_event_request_cid()), invalid_doorbell_value_event);
}

TEST_P(controller_shadow_doorbells, the_host_driver_works_with_shadow_doorbells)
{
    rig r;
    r.host.bring_up(options(2, 16));
    const std::uint64_t event_index = *r.host.event_index_buffer();
    for (int i = 0; i < 40; ++i) {
        const auto completion = r.host.io(2, read_command());
        ASSERT_EQ(completion.status(), dnr(spec::generic_status::invalid_namespace_or_format));
        ASSERT_EQ(completion.cqe.sq_head, (i + 1) % 16);
    }
    EXPECT_EQ(r.memory.load<std::uint32_t>(event_index + 16), 40U % 16);
    EXPECT_EQ(r.ctrl.statistics().invalid_doorbells, 0U);
}

TEST_P(controller_shadow_doorbells, a_new_queue_takes_its_shadow_slot_only_after_its_doorbell_register)
{
    rig r;
    r.host.bring_up(options(2));
    const std::uint64_t shadow = *r.host.shadow_doorbell_buffer();
    const std::uint64_t event_index = *r.host.event_index_buffer();
    r.ctrl.poll();
    ASSERT_TRUE(r.host.delete_io_sq(2).ok());
    ASSERT_TRUE(r.host.delete_io_cq(2).ok());
    // Whatever the slots of QID 2 hold, creating the queues makes their EventIdx 0.
    r.memory.store(event_index + 16, std::uint32_t{9});
    r.memory.store(event_index + 20, std::uint32_t{9});
    ASSERT_TRUE(r.host.create_io_cq(2, 16, 2, true).ok());
    ASSERT_TRUE(r.host.create_io_sq(2, 2, 16).ok());
    EXPECT_EQ(r.memory.load<std::uint32_t>(event_index + 16), 0U);
    EXPECT_EQ(r.memory.load<std::uint32_t>(event_index + 20), 0U);
    // A tail in the shadow slot before the doorbell register was written is not work.
    auto sqe = read_command();
    sqe.cdw0.set(spec::command_dword0::cid, 0x51);
    r.memory.store(r.host.submission_entry_address(2, 0), sqe);
    r.memory.store(shadow + 16, std::uint32_t{1});
    for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(r.ctrl.poll(), 0U);
    }
    EXPECT_FALSE(r.cqe_at(2, 0).phase());
    EXPECT_EQ(r.ctrl.statistics().invalid_doorbells, 0U);
    // The register write arms the slot: the command runs, and later tails come from the slot.
    r.ctrl.mmio_write(spec::sq_tail_doorbell_offset(2, 0), 4, 1);
    EXPECT_EQ(r.ctrl.poll(), 1U);
    EXPECT_EQ(r.cqe_at(2, 0).cid, 0x51);
    EXPECT_EQ(r.cqe_at(2, 0).sq_head, 1U);
    sqe.cdw0.set(spec::command_dword0::cid, 0x52);
    r.memory.store(r.host.submission_entry_address(2, 1), sqe);
    r.memory.store(shadow + 16, std::uint32_t{2});
    EXPECT_EQ(r.ctrl.poll(), 1U);
    EXPECT_EQ(r.cqe_at(2, 1).cid, 0x52);
}

TEST_P(controller_shadow_doorbells, queues_recreated_without_a_reset_run_only_what_the_host_submits)
{
    // SPDK's driver deletes and re-creates an I/O queue pair without a Controller Reset and
    // recomputes the slot addresses without clearing them: the old tail (5) must not run again.
    rig r;
    r.host.bring_up(options(1, 16));
    const std::uint64_t shadow = *r.host.shadow_doorbell_buffer();
    for (int i = 0; i < 5; ++i) {
        ASSERT_EQ(r.host.io(1, read_command()).cqe.sq_head, i + 1);
    }
    ASSERT_EQ(r.memory.load<std::uint32_t>(shadow + 8), 5U);
    ASSERT_TRUE(r.host.delete_io_sq(1).ok());
    ASSERT_TRUE(r.host.delete_io_cq(1).ok());
    ASSERT_TRUE(r.host.create_io_cq(1, 16, 1, true).ok());
    ASSERT_TRUE(r.host.create_io_sq(1, 1, 16).ok());
    EXPECT_EQ(r.memory.load<std::uint32_t>(shadow + 8), GetParam() ? 0U : 5U);
    const auto executed_before = r.ctrl.statistics().commands;
    for (int i = 0; i < 5; ++i) {
        r.ctrl.poll();
    }
    EXPECT_EQ(r.ctrl.statistics().commands, executed_before);
    EXPECT_FALSE(r.cqe_at(1, 0).phase());
    // What the host submits now runs once each, with SQ heads counted from the new queue's 0
    // (the host driver checks every CQE's command identifier and SQ head).
    for (int i = 0; i < 20; ++i) {
        const auto completion = r.host.io(1, read_command());
        ASSERT_EQ(completion.status(), dnr(spec::generic_status::invalid_namespace_or_format));
        ASSERT_EQ(completion.cqe.sq_head, (i + 1) % 16);
    }
    EXPECT_EQ(r.ctrl.statistics().invalid_doorbells, 0U);
}

TEST(controller_shadow_doorbells_config, buffers_must_be_page_aligned)
{
    rig r;
    r.host.bring_up();
    const std::uint64_t shadow = r.host.allocate(4096);
    const std::uint64_t event_index = r.host.allocate(4096);
    EXPECT_EQ(r.host.admin(host_type::doorbell_buffer_config_command(shadow + 8, event_index)).status(),
              dnr(spec::generic_status::invalid_field));
    EXPECT_EQ(r.host.admin(host_type::doorbell_buffer_config_command(shadow, event_index + 0x800)).status(),
              dnr(spec::generic_status::invalid_field));
    // Nothing was configured: a shadow tail alone does nothing, even once SQ 1's register was written.
    ASSERT_EQ(r.host.io(1, read_command()).cqe.sq_head, 1U);
    r.memory.store(r.host.submission_entry_address(1, 1), read_command());
    r.memory.store(shadow + 8, std::uint32_t{2});
    EXPECT_EQ(r.ctrl.poll(), 0U);
    EXPECT_EQ(r.host.admin(host_type::doorbell_buffer_config_command(shadow, event_index)).status(),
              spec::status::success());
    // Now the shadow tail is read: by the next poll (or, with poll groups on threads of their
    // own, already in the step that completed the command).
    r.ctrl.poll();
    const auto cqe = r.cqe_at(1, 1);
    EXPECT_EQ(cqe.sq_id, 1U);
    EXPECT_EQ(cqe.sq_head, 2U);
}

} // namespace controller_queues_test
} // namespace
