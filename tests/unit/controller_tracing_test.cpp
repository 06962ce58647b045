#include <nvmekit/controller.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include <nvmekit/backends/ram_backend.hpp>
#include <nvmekit/testing/recording_tracer.hpp>

#include "controller_fixture.hpp"

/// The controller's trace events: the exact event of each host mistake, driven through the
/// in-process host, and the ordered life of a Read.
namespace {
namespace controller_tracing_test {

namespace spec = nvmekit::spec;
using namespace nvmekit_test;
using nvmekit::trace_event;
using nvmekit::trace_record;

struct traced_traits : test_traits {
    using tracer = nvmekit::testing::recording_tracer;
};
using traced_rig = basic_rig<traced_traits>;

[[nodiscard]] std::vector<trace_event> events_of(const std::vector<trace_record>& records)
{
    std::vector<trace_event> events;
    for (const auto& record : records) {
        events.push_back(record.event);
    }
    return events;
}

// ---- registers ------------------------------------------------------------------------------

TEST(controller_tracing, register_access_mistakes)
{
    traced_rig r;
    auto& tracer = r.ctrl.tracer();
    r.write32(spec::register_offset::cap, 0);                                       // CAP is read-only
    static_cast<void>(r.ctrl.mmio_read(0x2, 4));                                    // misaligned
    r.ctrl.mmio_write(static_cast<std::uint64_t>(spec::register_offset::cc), 2, 1); // 2-byte access
    const std::vector<trace_record> expected{
        {.event = trace_event::err_mmio_read_only_register_write, .value = 0x0},
        {.event = trace_event::err_mmio_misaligned, .value = 0x2},
        {.event = trace_event::err_mmio_unsupported_width, .value = 0x14},
    };
    EXPECT_EQ(tracer.host_errors(), expected);
}

TEST(controller_tracing, enable_with_an_admin_submission_queue_not_page_aligned)
{
    traced_rig r;
    const std::uint64_t asq = memory_base + 0x1000; // 4 KiB aligned; the pages are 8 KiB
    r.program_admin_queues(0x000f'000f, asq, memory_base + 0x4000);
    r.write_cc(linux_cc().with(spec::cc_register::mps, 1));
    r.poll(2);
    const auto errors = r.ctrl.tracer().host_errors();
    ASSERT_FALSE(errors.empty());
    EXPECT_EQ(errors.front(),
              (trace_record{.event = trace_event::err_startfail_asq_misaligned, .value = asq}));
    EXPECT_FALSE(r.csts().get(spec::csts_register::rdy));
}

TEST(controller_tracing, enable_with_a_one_entry_admin_submission_queue)
{
    traced_rig r;
    r.program_admin_queues(0x000f'0000, memory_base, memory_base + 0x1000); // ASQS 0: one entry
    r.write_cc(linux_cc());
    r.poll(2);
    const auto errors = r.ctrl.tracer().host_errors();
    ASSERT_FALSE(errors.empty());
    EXPECT_EQ(errors.front(),
              (trace_record{.event = trace_event::err_startfail_asq_size, .value = 0x000f'0000}));
    EXPECT_FALSE(r.csts().get(spec::csts_register::rdy));
}

TEST(controller_tracing, no_keep_alive_within_the_timeout)
{
    traced_rig r;
    r.host.bring_up();
    ASSERT_TRUE(r.host.admin(host_type::set_features_command(spec::feature_id::keep_alive_timer, 1000)).ok());
    auto& tracer = r.ctrl.tracer();
    tracer.clear();
    r.clock.advance(std::chrono::milliseconds{1001});
    r.ctrl.poll();
    ASSERT_TRUE(r.csts().get(spec::csts_register::cfs));
    const std::vector<trace_record> expected{{.event = trace_event::err_keep_alive_expired, .value = 1000}};
    EXPECT_EQ(tracer.host_errors(), expected);
}

// ---- doorbells --------------------------------------------------------------------------------

TEST(controller_tracing, invalid_doorbell_writes)
{
    traced_rig r;
    r.host.bring_up({.io_queue_pairs = 1, .io_entries = 64});
    auto& tracer = r.ctrl.tracer();
    tracer.clear();
    r.ring_sq_tail(1, 64); // beyond the 64-entry queue
    r.ring_cq_head(1, 100);
    r.ring_sq_tail(5, 1); // no SQ 5
    r.ring_cq_head(7, 0); // no CQ 7
    const std::vector<trace_record> expected{
        {.event = trace_event::err_doorbell_invalid_sq_tail, .qid = 1, .value = 64},
        {.event = trace_event::err_doorbell_invalid_cq_head, .qid = 1, .value = 100},
        {.event = trace_event::err_doorbell_invalid_sq, .qid = 5, .value = 1},
        {.event = trace_event::err_doorbell_invalid_cq, .qid = 7, .value = 0},
    };
    EXPECT_EQ(tracer.host_errors(), expected);
    EXPECT_EQ(r.ctrl.statistics().invalid_doorbells, 0U); // counted at the next poll
    r.poll(1);
    EXPECT_EQ(r.ctrl.statistics().invalid_doorbells, 4U);
    EXPECT_EQ(tracer.host_errors(), expected); // and traced once
}

// ---- commands -----------------------------------------------------------------------------------

TEST(controller_tracing, queue_creation_mistakes)
{
    traced_rig r;
    r.admin_only(4);
    auto& tracer = r.ctrl.tracer();
    tracer.clear();
    const std::uint64_t buffer = r.host.allocate(4096);
    const auto create_cq = spec::admin_opcode::create_io_cq;

    const auto qid0 = r.host.submit(0, create_cq_command(0, 16, buffer));
    EXPECT_EQ(r.host.wait_for(0, qid0).status(),
              dnr(spec::command_specific_status::invalid_queue_identifier));
    const auto too_deep = r.host.submit(0, create_cq_command(1, 5000, buffer));
    EXPECT_EQ(r.host.wait_for(0, too_deep).status(), dnr(spec::command_specific_status::invalid_queue_size));
    const auto no_cq = r.host.create_io_sq(1, 1, 16); // CQ 1 does not exist
    EXPECT_EQ(no_cq.status(), dnr(spec::command_specific_status::completion_queue_invalid));

    const std::vector<trace_record> expected{
        {.event = trace_event::err_invalid_qid,
         .opcode = static_cast<std::uint8_t>(create_cq),
         .cid = qid0,
         .status = dnr(spec::command_specific_status::invalid_queue_identifier)},
        {.event = trace_event::err_invalid_queue_size,
         .opcode = static_cast<std::uint8_t>(create_cq),
         .cid = too_deep,
         .status = dnr(spec::command_specific_status::invalid_queue_size)},
        {.event = trace_event::err_invalid_create_cqid,
         .opcode = static_cast<std::uint8_t>(spec::admin_opcode::create_io_sq),
         .cid = no_cq.cqe.cid,
         .status = dnr(spec::command_specific_status::completion_queue_invalid)},
    };
    EXPECT_EQ(tracer.host_errors(), expected);
}

TEST(controller_tracing, reserved_io_opcode_and_missing_namespace)
{
    traced_rig r;
    r.host.bring_up({.io_queue_pairs = 1});
    auto& tracer = r.ctrl.tracer();
    tracer.clear();
    auto reserved = host_type::command(spec::nvm_opcode::read, 1);
    reserved.cdw0.set(spec::command_dword0::opc, 0x03);
    const auto opcode_cid = r.host.submit(1, reserved);
    EXPECT_EQ(r.host.wait_for(1, opcode_cid).status(), dnr(spec::generic_status::invalid_opcode));
    const auto read_cid = r.host.submit(1, read_command()); // no namespace 1
    EXPECT_EQ(r.host.wait_for(1, read_cid).status(), dnr(spec::generic_status::invalid_namespace_or_format));
    const std::vector<trace_record> expected{
        {.event = trace_event::err_invalid_opcode,
         .opcode = 0x03,
         .qid = 1,
         .cid = opcode_cid,
         .status = dnr(spec::generic_status::invalid_opcode),
         .nsid = 1},
        {.event = trace_event::err_invalid_namespace,
         .opcode = static_cast<std::uint8_t>(spec::nvm_opcode::read),
         .qid = 1,
         .cid = read_cid,
         .status = dnr(spec::generic_status::invalid_namespace_or_format),
         .nsid = 1},
    };
    EXPECT_EQ(tracer.host_errors(), expected);
}

TEST(controller_tracing, data_pointer_mistakes)
{
    traced_rig r;
    r.subsystem.add_namespace(nvmekit::ram_backend{1 << 20});
    r.host.bring_up({.io_queue_pairs = 1});
    auto& tracer = r.ctrl.tracer();
    tracer.clear();
    const std::uint64_t buffer = r.host.allocate(8192);
    // Two pages: PRP2 is the second page's address and must have offset 0.
    auto misaligned = host_type::lba_command(spec::nvm_opcode::read, 1, 0, 16);
    misaligned.dptr.prp1 = buffer;
    misaligned.dptr.prp2 = buffer + 4096 + 8;
    const auto misaligned_cid = r.host.submit(1, misaligned);
    EXPECT_EQ(r.host.wait_for(1, misaligned_cid).status(), dnr(spec::generic_status::prp_offset_invalid));
    // One page outside host memory.
    auto unreachable = host_type::lba_command(spec::nvm_opcode::write, 1, 0, 8);
    unreachable.dptr.prp1 = memory_base + memory_size + 0x10'0000;
    const auto unreachable_cid = r.host.submit(1, unreachable);
    EXPECT_EQ(r.host.wait_for(1, unreachable_cid).status(), dnr(spec::generic_status::data_transfer_error));

    const auto read = static_cast<std::uint8_t>(spec::nvm_opcode::read);
    const auto write = static_cast<std::uint8_t>(spec::nvm_opcode::write);
    const std::vector<trace_record> expected{
        {.event = trace_event::err_invalid_prp_offset,
         .opcode = read,
         .qid = 1,
         .cid = misaligned_cid,
         .status = dnr(spec::generic_status::prp_offset_invalid),
         .nsid = 1},
        {.event = trace_event::err_dma,
         .opcode = write,
         .qid = 1,
         .cid = unreachable_cid,
         .status = dnr(spec::generic_status::data_transfer_error),
         .nsid = 1},
    };
    EXPECT_EQ(tracer.host_errors(), expected);
    // A failed transfer is a host mistake (err_dma); the command then fails with it.
    EXPECT_EQ(tracer.count(trace_event::command_failed), 1U);
}

TEST(controller_tracing, a_completion_for_a_full_completion_queue)
{
    traced_rig r;
    r.admin_only(4);
    ASSERT_TRUE(r.host.create_io_cq(1, 2, 1, true).ok()); // holds one entry
    ASSERT_TRUE(r.host.create_io_sq(1, 1, 16).ok());
    auto& tracer = r.ctrl.tracer();
    tracer.clear();
    const auto first = r.host.submit(1, read_command());
    const auto second = r.host.submit(1, read_command());
    EXPECT_FALSE(r.host.wait_for(1, first).ok());
    EXPECT_FALSE(r.host.wait_for(1, second).ok());
    std::vector<trace_record> full;
    for (const auto& record : tracer.host_errors()) {
        if (record.event == trace_event::err_cq_full) {
            full.push_back(record);
        }
    }
    ASSERT_EQ(full.size(), 1U);
    EXPECT_EQ(full[0].qid, 1U);
    EXPECT_EQ(full[0].cid, second);
    EXPECT_EQ(full[0].value, 1U); // the CQ
    EXPECT_EQ(full[0].status, dnr(spec::generic_status::invalid_namespace_or_format));
}

// ---- the life of a command ----------------------------------------------------------------------

TEST(controller_tracing, the_life_of_a_read)
{
    traced_rig r;
    r.subsystem.add_namespace(nvmekit::ram_backend{1 << 20});
    r.host.bring_up({.io_queue_pairs = 1});
    auto& tracer = r.ctrl.tracer();
    tracer.clear();
    const std::uint64_t buffer = r.host.allocate(4096);
    auto read = host_type::lba_command(spec::nvm_opcode::read, 1, 8, 8); // 8 blocks of 512 bytes at LBA 8
    read.dptr = r.host.build_prps(buffer, 4096);
    const auto cid = r.host.submit(1, read);
    ASSERT_TRUE(r.host.wait_for(1, cid).ok());

    const auto life = tracer.command_events(1, cid);
    const std::vector<trace_event> steps{trace_event::sqe_fetched,       trace_event::command_dispatched,
                                         trace_event::data_prepared,     trace_event::backend_submitted,
                                         trace_event::backend_completed, trace_event::cqe_posted};
    ASSERT_EQ(events_of(life), steps);
    for (const auto& record : life) {
        EXPECT_EQ(record.opcode, static_cast<std::uint8_t>(spec::nvm_opcode::read))
            << nvmekit::name(record.event);
        EXPECT_EQ(record.nsid, 1U) << nvmekit::name(record.event);
    }
    EXPECT_EQ(life[2].value, 4096U);     // bytes
    EXPECT_EQ(life[3].value, 8U * 512U); // backend byte offset of LBA 8
    EXPECT_EQ(life[4].value, 0U);        // block_status::success
    EXPECT_EQ(life[5].status, spec::status::success());
    EXPECT_EQ(life[5].value, 1U); // CQ 1

    // The CQ's vector is raised after the completion is posted.
    const auto all = tracer.snapshot();
    std::size_t posted = all.size();
    std::size_t raised = all.size();
    for (std::size_t i = 0; i < all.size(); ++i) {
        if (all[i].event == trace_event::cqe_posted && all[i].cid == cid && all[i].qid == 1) {
            posted = i;
        }
        if (all[i].event == trace_event::interrupt_raised && all[i].value == 1 && raised == all.size()) {
            raised = i;
        }
    }
    ASSERT_LT(posted, all.size());
    ASSERT_LT(raised, all.size());
    EXPECT_GT(raised, posted);
    EXPECT_TRUE(tracer.host_errors().empty());
}

} // namespace controller_tracing_test
} // namespace
