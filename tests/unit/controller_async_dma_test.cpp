#include <nvmekit/controller.hpp>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

#include <nvmekit/backends/ram_backend.hpp>

#include "controller_fixture.hpp"
#include "splitmix64.hpp"

/// The controller over a DMA provider whose requests complete in a later poll, out of order, and
/// fail where a test says (async_dma_memory over testing::async_dma). The data-path property test
/// runs in controller_data_test and the reset storm in reset_storm_test; these tests check what
/// asynchronous DMA adds: nothing runs before its entries arrive, a failed data access is the
/// command's Data Transfer Error and changes nothing else, a failed queue access is a controller
/// fatal status, and a reset or a queue deletion waits for the DMA in flight.

namespace {
namespace controller_async_dma_test {

namespace spec = nvmekit::spec;
using namespace nvmekit_test;
using namespace std::chrono_literals;

using async_rig = basic_rig<async_dma_traits>;
using host_type = async_rig::host_type;
static_assert(async_rig::controller_type::dma_completes_later);
static_assert(!rig::controller_type::dma_completes_later);

constexpr std::uint32_t block_bytes = 512;

/// A rig with a 1 MiB RAM namespace and `queues` I/O queue pairs up.
struct async_fixture {
    async_rig r;
    explicit async_fixture(std::uint16_t queues = 1)
    {
        r.subsystem.add_namespace(nvmekit::ram_backend{1 << 20});
        r.host.bring_up({.io_queue_pairs = queues, .io_entries = 64});
    }

    /// Writes `blocks` blocks at `slba` from a buffer filled with the stream of `seed`; the
    /// buffer's address is returned through `buffer`.
    spec::status write(std::uint64_t slba, std::uint32_t blocks, std::uint64_t seed, std::uint64_t& buffer)
    {
        buffer = r.host.allocate(std::size_t{blocks} * block_bytes);
        std::vector<std::byte> data(std::size_t{blocks} * block_bytes);
        splitmix64{seed}.fill(data);
        EXPECT_FALSE(r.memory.write(buffer, data));
        auto sqe = host_type::lba_command(spec::nvm_opcode::write, 1, slba, blocks);
        r.host.describe_data(sqe, buffer, data.size());
        return r.host.io(1, sqe).status();
    }

    /// Reads `blocks` blocks at `slba` into a new buffer, whose address goes to `buffer`.
    spec::status read(std::uint64_t slba, std::uint32_t blocks, std::uint64_t& buffer)
    {
        buffer = r.host.allocate(std::size_t{blocks} * block_bytes);
        auto sqe = host_type::lba_command(spec::nvm_opcode::read, 1, slba, blocks);
        r.host.describe_data(sqe, buffer, std::size_t{blocks} * block_bytes);
        return r.host.io(1, sqe).status();
    }

    [[nodiscard]] std::vector<std::byte> pattern(std::uint32_t blocks, std::uint64_t seed) const
    {
        std::vector<std::byte> data(std::size_t{blocks} * block_bytes);
        splitmix64{seed}.fill(data);
        return data;
    }
};

TEST(controller_async_dma, data_moves_through_late_requests_and_reads_back)
{
    async_fixture f;
    std::uint64_t buffer = 0;
    const auto submitted_before = f.r.dma.counts().submitted;
    // 40 blocks over PRP1 and a PRP list: the list and the data come by late requests.
    ASSERT_EQ(f.write(8, 40, 11, buffer), spec::status::success());
    ASSERT_EQ(f.read(8, 40, buffer), spec::status::success());
    EXPECT_EQ(f.r.snapshot(buffer, 40 * block_bytes), f.pattern(40, 11));
    // Per command at least a fetch, the PRP list, the data and the completion entry.
    EXPECT_GE(f.r.dma.counts().submitted - submitted_before, 8U);
    EXPECT_TRUE(f.r.ctrl.dma_idle());
}

/// Requests that take at least 1 us, so that a poll without time passing completes none.
struct slow_dma_memory : nvmekit::testing::async_dma<nvmekit::testing::flat_memory> {
    slow_dma_memory(nvmekit::testing::flat_memory& memory, nvmekit::testing::manual_clock& clock)
        : async_dma{memory, clock, 64, {.min_delay = 1us, .max_delay = 3us, .seed = 3}}
    {}
};
struct slow_dma_traits : test_traits {
    using dma = slow_dma_memory;
};

TEST(controller_async_dma, nothing_runs_before_its_entries_arrive)
{
    basic_rig<slow_dma_traits> r;
    r.subsystem.add_namespace(nvmekit::ram_backend{1 << 20});
    r.host.bring_up({.io_queue_pairs = 1, .io_entries = 64});
    struct {
        basic_rig<slow_dma_traits>& r;
    } f{r};
    f.r.poll(2);
    const auto commands_before = f.r.ctrl.statistics().commands;
    const auto buffer = f.r.host.allocate(block_bytes);
    auto sqe = host_type::lba_command(spec::nvm_opcode::read, 1, 0, 1);
    f.r.host.describe_data(sqe, buffer, block_bytes);
    const auto cid = f.r.host.submit(1, sqe);
    // The doorbell starts the fetch; no time passes, so the entry has not arrived.
    f.r.ctrl.poll();
    f.r.ctrl.poll();
    EXPECT_EQ(f.r.ctrl.statistics().commands, commands_before);
    EXPECT_FALSE(f.r.ctrl.dma_idle());
    // It arrives; the command runs and waits for its data write, then its completion's.
    f.r.clock.advance(3us);
    f.r.ctrl.poll();
    EXPECT_EQ(f.r.ctrl.statistics().commands, commands_before + 1);
    EXPECT_EQ(f.r.cqe_at(1, 0).status_phase & 1U, 0U); // no completion entry yet
    EXPECT_EQ(f.r.host.wait_for(1, cid).status(), spec::status::success());
    EXPECT_EQ(f.r.ctrl.statistics().commands, commands_before + 1);
}

TEST(controller_async_dma, a_write_whose_data_cannot_be_read_fails_and_leaves_the_media_alone)
{
    async_fixture f;
    std::uint64_t buffer = 0;
    ASSERT_EQ(f.write(0, 8, 1, buffer), spec::status::success());

    const auto bad = f.r.host.allocate(8 * block_bytes);
    f.r.dma.fail_range(bad + 2 * block_bytes, 1); // one byte in the middle of the data
    std::vector<std::byte> data(8 * block_bytes, std::byte{0xee});
    ASSERT_FALSE(f.r.memory.write(bad, data));
    auto sqe = host_type::lba_command(spec::nvm_opcode::write, 1, 0, 8);
    f.r.host.describe_data(sqe, bad, data.size());
    EXPECT_EQ(f.r.host.io(1, sqe).status(), dnr(spec::generic_status::data_transfer_error));
    f.r.dma.clear_faults();

    ASSERT_EQ(f.read(0, 8, buffer), spec::status::success());
    EXPECT_EQ(f.r.snapshot(buffer, 8 * block_bytes), f.pattern(8, 1));
    EXPECT_FALSE(f.r.host.csts().get(spec::csts_register::cfs));
}

TEST(controller_async_dma, a_read_whose_data_cannot_be_written_fails)
{
    async_fixture f;
    std::uint64_t buffer = 0;
    ASSERT_EQ(f.write(0, 8, 2, buffer), spec::status::success());
    const auto target = f.r.host.allocate(8 * block_bytes);
    f.r.dma.fail_range(target + 7 * block_bytes, 1);
    auto sqe = host_type::lba_command(spec::nvm_opcode::read, 1, 0, 8);
    f.r.host.describe_data(sqe, target, 8 * block_bytes);
    EXPECT_EQ(f.r.host.io(1, sqe).status(), dnr(spec::generic_status::data_transfer_error));
    EXPECT_GE(f.r.ctrl.statistics().dma_errors, 1U);
    f.r.dma.clear_faults();
    // The controller carries on.
    ASSERT_EQ(f.read(0, 8, buffer), spec::status::success());
    EXPECT_EQ(f.r.snapshot(buffer, 8 * block_bytes), f.pattern(8, 2));
}

TEST(controller_async_dma, a_prp_list_that_cannot_be_read_fails_the_command)
{
    async_fixture f;
    const auto buffer = f.r.host.allocate(64 * block_bytes);
    auto sqe = host_type::lba_command(spec::nvm_opcode::read, 1, 0, 64);
    sqe.dptr = f.r.host.build_prps(buffer, 64 * block_bytes); // PRP2 is a list: 7 entries
    f.r.dma.fail_range(sqe.dptr.prp2, 8);
    EXPECT_EQ(f.r.host.io(1, sqe).status(), dnr(spec::generic_status::data_transfer_error));
    f.r.dma.clear_faults();
    EXPECT_EQ(f.r.host.io(1, sqe).status(), spec::status::success());
}

/// Submits a one-block read on I/O queue 1 without waiting for it, then polls 5 times.
void submit_a_read_and_poll(async_fixture& f)
{
    const auto buffer = f.r.host.allocate(block_bytes);
    auto sqe = host_type::lba_command(spec::nvm_opcode::read, 1, 0, 1);
    f.r.host.describe_data(sqe, buffer, block_bytes);
    static_cast<void>(f.r.host.submit(1, sqe));
    f.r.poll(5);
}

TEST(controller_async_dma, a_submission_queue_that_cannot_be_read_is_a_controller_fatal_status)
{
    async_fixture f;
    f.r.dma.fail_range(f.r.host.submission_entry_address(1, 0), 64 * 64);
    submit_a_read_and_poll(f);
    EXPECT_TRUE(f.r.host.csts().get(spec::csts_register::cfs));
}

TEST(controller_async_dma, a_completion_queue_that_cannot_be_written_is_a_controller_fatal_status)
{
    async_fixture f;
    f.r.dma.fail_range(f.r.host.completion_entry_address(1, 0), 64 * 16);
    submit_a_read_and_poll(f);
    EXPECT_TRUE(f.r.host.csts().get(spec::csts_register::cfs));
    EXPECT_EQ(f.r.ctrl.requests_in_use(), 0U);
}

TEST(controller_async_dma, a_reset_completes_only_when_the_dma_in_flight_has)
{
    async_fixture f;
    const auto buffer = f.r.host.allocate(64 * block_bytes);
    auto sqe = host_type::lba_command(spec::nvm_opcode::read, 1, 0, 64);
    f.r.host.describe_data(sqe, buffer, 64 * block_bytes);
    static_cast<void>(f.r.host.submit(1, sqe));
    // Poll without letting time pass until the read's data writes are in flight.
    for (int i = 0; i < 50 && f.r.dma.counts().submitted < 12; ++i) {
        f.r.clock.advance(3us);
        f.r.ctrl.poll();
    }
    ASSERT_GT(f.r.dma.counts().outstanding, 0U);
    auto cc = f.r.host.cc();
    f.r.host.write32(spec::register_offset::cc, cc.with(spec::cc_register::en, false).raw);
    f.r.ctrl.poll();
    EXPECT_TRUE(f.r.host.csts().get(spec::csts_register::rdy)); // DMA still in flight
    const auto cq_before = f.r.snapshot(f.r.host.completion_entry_address(1, 0), 64 * 16);
    f.r.poll(3);
    EXPECT_EQ(f.r.dma.counts().outstanding, 0U);
    EXPECT_FALSE(f.r.host.csts().get(spec::csts_register::rdy));
    EXPECT_TRUE(f.r.ctrl.dma_idle());
    EXPECT_EQ(f.r.ctrl.requests_in_use(), 0U);
    // Whatever the DMA in flight wrote, no completion reached the I/O CQ once the reset began.
    f.r.poll(3);
    EXPECT_EQ(f.r.snapshot(f.r.host.completion_entry_address(1, 0), 64 * 16), cq_before);
    // The controller comes up again and works.
    f.r.host.bring_up({.io_queue_pairs = 1, .io_entries = 64});
    std::uint64_t data = 0;
    ASSERT_EQ(f.write(0, 4, 3, data), spec::status::success());
    ASSERT_EQ(f.read(0, 4, data), spec::status::success());
    EXPECT_EQ(f.r.snapshot(data, 4 * block_bytes), f.pattern(4, 3));
}

TEST(controller_async_dma, deleting_a_queue_waits_for_a_command_reading_its_data)
{
    async_fixture f{2};
    const auto buffer = f.r.host.allocate(64 * block_bytes);
    auto sqe = host_type::lba_command(spec::nvm_opcode::write, 1, 0, 64);
    f.r.host.describe_data(sqe, buffer, 64 * block_bytes);
    f.r.poll(2);
    const auto commands_before = f.r.ctrl.statistics().commands;
    static_cast<void>(f.r.host.submit(2, sqe));
    for (int i = 0; i < 50 && f.r.ctrl.statistics().commands == commands_before; ++i) {
        f.r.clock.advance(3us);
        f.r.ctrl.poll();
    }
    // The write runs; its list and data are being read when the host deletes its queue.
    ASSERT_EQ(f.r.ctrl.statistics().commands, commands_before + 1);
    ASSERT_GT(f.r.dma.counts().outstanding, 0U);
    EXPECT_EQ(f.r.host.delete_io_sq(2).status(), spec::status::success());
    EXPECT_EQ(f.r.ctrl.requests_in_use(), 0U);
    EXPECT_TRUE(f.r.ctrl.dma_idle());
    // Queue 1 carries on.
    std::uint64_t data = 0;
    ASSERT_EQ(f.write(0, 2, 4, data), spec::status::success());
}

TEST(controller_async_dma, compare_reads_the_host_data_after_the_media)
{
    async_fixture f;
    std::uint64_t buffer = 0;
    ASSERT_EQ(f.write(16, 24, 5, buffer), spec::status::success());
    auto compare = host_type::lba_command(spec::nvm_opcode::compare, 1, 16, 24);
    f.r.host.describe_data(compare, buffer, 24 * block_bytes);
    EXPECT_EQ(f.r.host.io(1, compare).status(), spec::status::success());
    std::array<std::byte, 1> flipped{std::byte{0x5a}};
    ASSERT_FALSE(f.r.memory.write(buffer + 20 * block_bytes + 3, flipped));
    EXPECT_EQ(f.r.host.io(1, compare).status(), dnr(spec::media_status::compare_failure));
}

TEST(controller_async_dma, doorbell_buffer_config_is_not_offered)
{
    async_fixture f;
    const auto identify = f.r.host.bring_up().identify;
    EXPECT_FALSE(identify.oacs.get(spec::admin_command_support::doorbell_buffer_config));
    const auto shadow = f.r.host.allocate(4096);
    const auto event_index = f.r.host.allocate(4096);
    EXPECT_EQ(f.r.host.admin(host_type::doorbell_buffer_config_command(shadow, event_index)).status(),
              dnr(spec::generic_status::invalid_opcode));
}

TEST(controller_async_dma, concurrent_poll_groups_are_refused)
{
    EXPECT_THROW(async_rig({.poll_groups = 2, .concurrent_poll_groups = true}), std::invalid_argument);
}

TEST(controller_async_dma, admin_data_and_features_move_by_late_requests)
{
    async_fixture f;
    // Identify (a data write), Set Features with a host buffer (a data read), and Get Log Page.
    std::vector<std::byte> log;
    EXPECT_TRUE(f.r.host.get_log_page(spec::log_page_id::smart_health, 512, log).ok());
    EXPECT_EQ(log.size(), 512U);
    const auto result = f.r.host.bring_up({.io_queue_pairs = 1, .io_entries = 64});
    EXPECT_EQ(result.identify.mdts, async_rig::controller_type::limits.mdts);
    EXPECT_EQ(result.io_queue_pairs, 1U);
}

} // namespace controller_async_dma_test
} // namespace
