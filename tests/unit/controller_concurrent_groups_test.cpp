// Poll groups on their own threads (controller_config::concurrent_poll_groups and
// start_poll_groups()): the host thread is the admin context (register writes, admin commands,
// poll()), each group runs its queues on a thread of its own. Host memory is synchronised, so
// that a ThreadSanitizer build (the CI's ci-tsan preset runs this file) reports any access the
// controller makes to its own state from two threads without ordering.
//
// The stress test drives random I/O over many queues spread across four groups while the host
// deletes and recreates queues and resets the controller more than a thousand times, and checks
// that no completion is lost or duplicated, that every request returns to its pool, and that the
// data read back is the data last written.

#include <gtest/gtest.h>

#include <nvmekit/backends/ram_backend.hpp>
#include <nvmekit/controller.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "controller_fixture.hpp"
#include "splitmix64.hpp"

namespace {

namespace spec = nvmekit::spec;
using nvmekit_test::splitmix64;

struct concurrent_traits : nvmekit_test::test_traits {
    static constexpr nvmekit::limits limits{.io_queues = 8,
                                            .queue_entries = 64,
                                            .mdts = 3,
                                            .msix_vectors = 9,
                                            .commands_per_queue = 16,
                                            .max_segments = 16,
                                            .staging_buffers = 4};
};

constexpr std::uint32_t block_bytes = 512;
constexpr std::uint64_t namespace_blocks = 8 * 1024; ///< 4 MiB
constexpr std::uint64_t blocks_per_queue = namespace_blocks / concurrent_traits::limits.io_queues;

/// A rig whose groups run on their own threads: synchronised host memory, a RAM namespace safe
/// for concurrent submission, and waits long enough for threads the scheduler holds back.
struct threaded_rig {
    explicit threaded_rig(std::uint16_t groups)
        // Room for the queues of every bring-up: the host driver does not reuse queue memory.
        : rig{nvmekit::controller_config{.poll_groups = groups, .concurrent_poll_groups = true},
              std::size_t{192} << 20}
    {
        rig.memory.set_synchronized(true);
        rig.subsystem.add_namespace(
            nvmekit::ram_backend{namespace_blocks * block_bytes, {.concurrent = true}}, {.lba_format = 0});
    }
    ~threaded_rig() { rig.ctrl.stop_poll_groups(); }
    threaded_rig(const threaded_rig&) = delete;
    threaded_rig& operator=(const threaded_rig&) = delete;

    nvmekit_test::basic_rig<concurrent_traits> rig;
};

/// Options of a host that waits for threads: many short polls, the clock hardly moving.
nvmekit::testing::host_options threaded_host(std::uint16_t pairs)
{
    return nvmekit::testing::host_options{.io_queue_pairs = pairs,
                                          .io_entries = 32,
                                          .interrupts = false,
                                          .max_polls = 50'000'000,
                                          .poll_step = std::chrono::nanoseconds{100}};
}

spec::submission_queue_entry rw_command(spec::nvm_opcode opcode, std::uint64_t slba, std::uint32_t blocks,
                                        spec::data_pointer dptr)
{
    spec::submission_queue_entry sqe{};
    sqe.cdw0.set(spec::command_dword0::opc, static_cast<std::uint8_t>(opcode));
    sqe.nsid = 1;
    sqe.dptr = dptr;
    sqe.cdw10 = static_cast<std::uint32_t>(slba);
    sqe.cdw11 = static_cast<std::uint32_t>(slba >> 32);
    sqe.cdw12 = blocks - 1U;
    return sqe;
}

TEST(controller_concurrent_groups, start_needs_the_concurrent_configuration)
{
    nvmekit_test::basic_rig<concurrent_traits> r{nvmekit::controller_config{.poll_groups = 2}};
    EXPECT_THROW(r.ctrl.start_poll_groups(), std::logic_error);
}

TEST(controller_concurrent_groups, queues_run_on_their_groups_threads)
{
    threaded_rig t{4};
    auto& r = t.rig;
    r.host.bring_up(threaded_host(8));
    r.ctrl.start_poll_groups({.name = "test-group", .idle_polls_before_sleep = 50});
    // Every queue writes a pattern to its own blocks and reads it back.
    std::vector<std::uint64_t> buffers;
    for (std::uint16_t qid = 1; qid <= 8; ++qid) {
        const std::uint64_t buffer = r.host.allocate(4096);
        std::vector<std::byte> pattern(4096, std::byte{static_cast<unsigned char>(qid)});
        r.memory.write(buffer, pattern);
        const auto written = r.host.io(qid, rw_command(spec::nvm_opcode::write, (qid - 1U) * blocks_per_queue,
                                                       8, r.host.build_prps(buffer, 4096)));
        ASSERT_TRUE(written.ok()) << "queue " << qid;
        buffers.push_back(r.host.allocate(4096));
        const auto read = r.host.io(qid, rw_command(spec::nvm_opcode::read, (qid - 1U) * blocks_per_queue, 8,
                                                    r.host.build_prps(buffers.back(), 4096)));
        ASSERT_TRUE(read.ok()) << "queue " << qid;
        std::vector<std::byte> back(4096);
        r.memory.read(buffers.back(), back);
        EXPECT_EQ(back, pattern) << "queue " << qid;
    }
    // Each group executed the commands of its two queue pairs (round-robin placement).
    for (std::uint16_t group = 0; group < 4; ++group) {
        EXPECT_EQ(r.ctrl.group_statistics(group).commands, 4U) << "group " << group;
    }
    EXPECT_EQ(r.ctrl.requests_in_use(), 0U);
}

TEST(controller_concurrent_groups, a_failed_read_is_logged_by_the_admin_context)
{
    threaded_rig t{2};
    auto& r = t.rig;
    r.host.bring_up(threaded_host(2));
    r.ctrl.start_poll_groups({.name = "test-group"});
    // A read past the namespace's end fails in the group; its Error Information entry reaches the
    // log the admin context owns before the host's next admin command runs.
    const std::uint64_t buffer = r.host.allocate(4096);
    const auto failed =
        r.host.io(2, rw_command(spec::nvm_opcode::read, namespace_blocks, 1, r.host.build_prps(buffer, 512)));
    EXPECT_EQ(failed.status(), spec::status{spec::generic_status::lba_out_of_range}.with_dnr());
    const auto log_buffer = r.host.allocate(4096);
    spec::submission_queue_entry get_log{};
    get_log.cdw0.set(spec::command_dword0::opc, static_cast<std::uint8_t>(spec::admin_opcode::get_log_page));
    get_log.dptr = r.host.build_prps(log_buffer, 64);
    get_log.cdw10 =
        static_cast<std::uint32_t>(spec::log_page_id::error_information) | ((64U / 4U - 1U) << 16);
    ASSERT_TRUE(r.host.admin(get_log).ok());
    const auto entry = r.memory.load<spec::error_information_entry>(log_buffer);
    EXPECT_EQ(entry.error_count, 1U);
    EXPECT_EQ(entry.sqid, 2U);
    EXPECT_EQ(entry.cid, failed.cqe.cid);
    EXPECT_EQ(entry.nsid, 1U);
}

TEST(controller_concurrent_groups, a_doorbell_of_a_deleted_queue_does_not_reach_its_successor)
{
    // No threads: the test runs group 0 itself, so that a CQ Head written before the host deletes
    // the queue is still waiting in the group's channel when the queue is recreated.
    threaded_rig t{2};
    auto& r = t.rig;
    r.host.bring_up(threaded_host(2));
    r.ring_cq_head(1, 5); // valid for the 32-entry CQ 1 (group 0)
    ASSERT_TRUE(r.host.delete_io_sq(1).ok());
    ASSERT_TRUE(r.host.delete_io_cq(1).ok());
    ASSERT_TRUE(r.host.create_io_cq(1, 32, 1, false).ok());
    ASSERT_TRUE(r.host.create_io_sq(1, 1, 32).ok());
    ASSERT_EQ(r.ctrl.completion_queue_group(1), std::optional<std::uint16_t>{0});
    r.ctrl.poll_group(0);
    r.ctrl.poll();
    // Applied to the new, empty CQ 1 the old head would be an invalid doorbell value.
    EXPECT_EQ(r.ctrl.statistics().invalid_doorbells, 0U);
    // And the new queue pair works.
    const std::uint64_t buffer = r.host.allocate(4096);
    const auto cid =
        r.host.submit(1, rw_command(spec::nvm_opcode::read, 0, 1, r.host.build_prps(buffer, 512)));
    r.ctrl.poll_group(0);
    EXPECT_TRUE(r.host.wait_for(1, cid).ok());
}

/// The host side of the stress test: random reads and writes, each queue on its own blocks (so
/// that no two groups touch the same bytes), a shadow of what each block holds, and the record
/// of every command outstanding.
class concurrent_stress {
public:
    explicit concurrent_stress(std::uint64_t seed) : random_{seed} {}

    void run(std::size_t resets_wanted)
    {
        auto& r = t_.rig;
        r.host.bring_up(threaded_host(pairs));
        r.ctrl.start_poll_groups({.name = "stress", .idle_polls_before_sleep = 20});
        for (std::uint16_t qid = 1; qid <= pairs; ++qid) {
            buffers_[qid] = r.host.allocate(std::size_t{4096} * batch);
        }
        while (resets_ < resets_wanted) {
            switch (random_.next() % 8) {
            case 0: reset(); break;
            case 1: recreate_queue_pair(); break;
            default: io_batch(); break;
            }
        }
        io_batch();
        r.ctrl.stop_poll_groups();
        EXPECT_EQ(r.ctrl.requests_in_use(), 0U);
        EXPECT_EQ(r.ctrl.io_outstanding(), 0U);
        EXPECT_GT(verified_blocks_, 10'000U);
        std::uint64_t group_commands = 0;
        for (std::uint16_t group = 0; group < r.ctrl.poll_group_count(); ++group) {
            const auto commands = r.ctrl.group_statistics(group).commands;
            EXPECT_GT(commands, 0U) << "group " << group << " ran nothing";
            group_commands += commands;
        }
        // Every command the host waited for ran exactly once; of the writes a reset cut short,
        // some ran before it and some never did.
        EXPECT_GE(group_commands, io_commands_);
        EXPECT_LE(group_commands, io_commands_ + cut_short_);
    }

    [[nodiscard]] std::size_t resets() const noexcept { return resets_; }

private:
    static constexpr std::uint16_t pairs = 8;
    static constexpr std::size_t batch = 6; ///< commands per queue per batch

    /// Commands on several queues at once, then every completion waited for and checked.
    void io_batch()
    {
        auto& r = t_.rig;
        struct pending {
            std::uint16_t qid;
            std::uint16_t cid;
            bool write;
            std::uint64_t slba;
            std::uint32_t blocks;
            std::uint64_t buffer;
            std::uint8_t pattern;
        };
        std::vector<pending> submitted;
        const std::uint16_t queues = static_cast<std::uint16_t>(1 + random_.next() % pairs);
        for (std::uint16_t n = 0; n < queues; ++n) {
            const auto qid = static_cast<std::uint16_t>(1 + random_.next() % pairs);
            const std::size_t commands = 1 + random_.next() % batch;
            for (std::size_t i = 0; i < commands; ++i) {
                if (std::any_of(submitted.begin(), submitted.end(), [&](const pending& p) {
                        return p.qid == qid && p.buffer == buffers_[qid] + i * 4096;
                    })) {
                    continue; // this buffer is in use by an earlier command of the batch
                }
                pending p{};
                p.qid = qid;
                p.write = random_.next() % 2 == 0;
                p.blocks = static_cast<std::uint32_t>(1 + random_.next() % 8);
                // Each command its own blocks of the queue's range: commands of one batch never
                // overlap, so the shadow knows what every read must return.
                const std::uint64_t base = (qid - 1U) * blocks_per_queue + i * (blocks_per_queue / batch);
                p.slba = base + random_.next() % (blocks_per_queue / batch - p.blocks);
                p.buffer = buffers_[qid] + i * 4096;
                p.pattern = static_cast<std::uint8_t>(random_.next());
                const std::size_t bytes = std::size_t{p.blocks} * block_bytes;
                if (p.write) {
                    r.memory.write(p.buffer, std::vector<std::byte>(bytes, std::byte{p.pattern}));
                } else {
                    r.memory.write(p.buffer, std::vector<std::byte>(bytes, std::byte{0xee}));
                }
                const auto opcode = p.write ? spec::nvm_opcode::write : spec::nvm_opcode::read;
                p.cid = r.host.submit(
                    qid, rw_command(opcode, p.slba, p.blocks, r.host.build_prps(p.buffer, bytes)));
                submitted.push_back(p);
            }
        }
        io_commands_ += submitted.size();
        for (const auto& p : submitted) {
            const auto done = r.host.wait_for(p.qid, p.cid);
            ASSERT_TRUE(done.ok()) << "queue " << p.qid << " command " << p.cid;
            if (p.write) {
                for (std::uint32_t b = 0; b < p.blocks; ++b) {
                    shadow_[p.slba + b] = p.pattern;
                }
                continue;
            }
            std::vector<std::byte> back(std::size_t{p.blocks} * block_bytes);
            r.memory.read(p.buffer, back);
            for (std::uint32_t b = 0; b < p.blocks; ++b) {
                const auto known = shadow_.find(p.slba + b);
                const std::byte expected = known == shadow_.end() ? std::byte{0} : std::byte{known->second};
                const auto block = std::span{back}.subspan(std::size_t{b} * block_bytes, block_bytes);
                ASSERT_TRUE(
                    std::all_of(block.begin(), block.end(), [&](std::byte x) { return x == expected; }))
                    << "LBA " << p.slba + b << " read back wrong data";
                ++verified_blocks_;
            }
        }
        for (std::uint16_t qid = 1; qid <= pairs; ++qid) {
            ASSERT_EQ(r.host.outstanding(qid), 0U) << "queue " << qid;
        }
        // Nothing else arrived: a duplicated or stray I/O completion would be reaped as unclaimed.
        ASSERT_TRUE(std::all_of(r.host.unclaimed().begin(), r.host.unclaimed().end(),
                                [](const auto& c) { return c.cqe.sq_id == 0; }));
        r.host.free_descriptor_memory();
    }

    /// Commands in flight, then a Controller Reset: the host forgets them (their writes may or may
    /// not have reached the media, so the blocks they cover are forgotten by the shadow too).
    void reset()
    {
        auto& r = t_.rig;
        const auto qid = static_cast<std::uint16_t>(1 + random_.next() % pairs);
        const std::uint32_t blocks = 1 + static_cast<std::uint32_t>(random_.next() % 8);
        const std::uint64_t slba =
            (qid - 1U) * blocks_per_queue + random_.next() % (blocks_per_queue - blocks);
        r.host.submit(qid, rw_command(spec::nvm_opcode::write, slba, blocks,
                                      r.host.build_prps(buffers_[qid], std::size_t{blocks} * block_bytes)));
        ++cut_short_;
        for (std::uint32_t b = 0; b < blocks; ++b) {
            shadow_.erase(slba + b); // unknown: the write may or may not have happened
            unknown_.push_back(slba + b);
        }
        r.host.disable();
        // RDY reads 0: every request is back in its pool (the RAM backend completes inline).
        ASSERT_EQ(r.ctrl.requests_in_use(), 0U);
        ASSERT_EQ(r.ctrl.io_outstanding(), 0U);
        ++resets_;
        r.host.free_descriptor_memory();
        r.host.bring_up(threaded_host(pairs));
        // Blocks a reset left unknown are rewritten, so that reads of them check again.
        for (const std::uint64_t lba : unknown_) {
            const std::uint16_t owner = static_cast<std::uint16_t>(1 + lba / blocks_per_queue);
            const std::uint8_t pattern = static_cast<std::uint8_t>(random_.next());
            r.memory.write(buffers_[owner], std::vector<std::byte>(block_bytes, std::byte{pattern}));
            const auto done = r.host.io(owner, rw_command(spec::nvm_opcode::write, lba, 1,
                                                          r.host.build_prps(buffers_[owner], block_bytes)));
            ASSERT_TRUE(done.ok());
            shadow_[lba] = pattern;
            ++io_commands_;
        }
        unknown_.clear();
    }

    /// Deletes one queue pair and creates it again (it may land in another group).
    void recreate_queue_pair()
    {
        auto& r = t_.rig;
        const auto qid = static_cast<std::uint16_t>(1 + random_.next() % pairs);
        ASSERT_TRUE(r.host.delete_io_sq(qid).ok());
        ASSERT_TRUE(r.host.delete_io_cq(qid).ok());
        ASSERT_TRUE(r.host.create_io_cq(qid, 32, qid, false).ok());
        ASSERT_TRUE(r.host.create_io_sq(qid, qid, 32).ok());
        ++recreated_;
    }

    threaded_rig t_{4};
    splitmix64 random_;
    std::map<std::uint16_t, std::uint64_t> buffers_;
    std::map<std::uint64_t, std::uint8_t> shadow_;
    std::vector<std::uint64_t> unknown_;
    std::size_t resets_ = 0;
    std::size_t recreated_ = 0;
    std::uint64_t verified_blocks_ = 0;
    std::uint64_t io_commands_ = 0;
    std::uint64_t cut_short_ = 0; ///< writes submitted just before a reset, never waited for
};

TEST(controller_concurrent_groups, stress_with_queue_recreation_and_a_thousand_resets)
{
    concurrent_stress stress{0x5eed'c0de'2026'1121ULL};
    stress.run(1000);
    EXPECT_GE(stress.resets(), 1000U);
}

} // namespace
