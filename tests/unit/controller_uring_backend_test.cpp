#include <nvmekit/controller.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include <nvmekit/backends/uring_backend.hpp>

#include "controller_fixture.hpp"
#include "file_namespace_helpers.hpp"
#include "scratch_directory.hpp"

/// The controller on a uring_backend namespace, whose requests complete in the backend's poll()
/// rather than inside submit(): what the host writes and flushes is in the file and survives the
/// controller, FUA writes are written with RWF_DSYNC, Flush and a normal shutdown sync the file,
/// Write Zeroes and Deallocate read back zeros, and more commands than the ring's depth at once
/// all complete.

namespace {
namespace controller_uring_backend_test {

namespace spec = nvmekit::spec;
using namespace nvmekit_test;

constexpr std::uint64_t file_bytes = std::uint64_t{1} << 20;

/// The host waits for real I/O (an fdatasync may take milliseconds): many more polls than the
/// default bound.
constexpr nvmekit::testing::host_options patient_host{.max_polls = 5'000'000};

[[nodiscard]] nvmekit::uring_backend& uring_of(rig& r, std::uint32_t nsid = 1)
{
    auto* ns = r.subsystem.find(nsid);
    EXPECT_NE(ns, nullptr);
    auto* backend = ns->backend().get_if<nvmekit::uring_backend>();
    EXPECT_NE(backend, nullptr);
    return *backend;
}

[[nodiscard]] nvmekit::uring_backend make_backend(const temporary_file& file, unsigned ring_entries = 128)
{
    return nvmekit::uring_backend{file.path(),
                                  {.file = {.create_size = file_bytes}, .ring_entries = ring_entries}};
}

TEST(controller_uring_backend, flushed_data_survives_the_controller)
{
    temporary_file file;
    expect_flushed_data_survives<nvmekit::uring_backend>(
        file, [&] { return make_backend(file); }, [&] { return nvmekit::uring_backend{file.path()}; },
        patient_host);
}

TEST(controller_uring_backend, fua_writes_are_dsync_and_shutdown_flushes)
{
    temporary_file file;
    rig r;
    r.subsystem.add_namespace(make_backend(file));
    r.host.bring_up(patient_host);
    ASSERT_EQ(write_blocks(r, 0, pattern(4096, 3)), spec::status::success());
    ASSERT_EQ(write_blocks(r, 8, pattern(4096, 4), {}, true), spec::status::success());
    EXPECT_EQ(uring_of(r).dsync_write_count(), 1U);
    EXPECT_EQ(uring_of(r).sync_count(), 0U);
    r.host.shut_down();
    EXPECT_EQ(r.csts().get(spec::csts_register::shst), spec::shutdown_status::complete);
    EXPECT_EQ(uring_of(r).sync_count(), 1U);
    EXPECT_EQ(r.ctrl.requests_in_use(), 0U);
    EXPECT_EQ(file.read(0, 4096), pattern(4096, 3));
    EXPECT_EQ(file.read(8 * 512, 4096), pattern(4096, 4));
}

TEST(controller_uring_backend, write_zeroes_and_deallocate_read_back_zeros)
{
    temporary_file file;
    rig r;
    r.subsystem.add_namespace(make_backend(file));
    r.host.bring_up(patient_host);
    ASSERT_EQ(write_blocks(r, 0, pattern(64 * 512, 5)), spec::status::success());
    auto zeroes = host_type::command(spec::nvm_opcode::write_zeroes, 1);
    spec::write_zeroes_view{.starting_lba = 4, .block_count = 8}.encode(zeroes);
    ASSERT_EQ(r.host.io(1, zeroes).status(), spec::status::success());

    spec::dataset_management_range range{};
    range.starting_lba = 32;
    range.block_count = 16;
    const auto ranges = r.host.allocate(sizeof range);
    std::memcpy(r.memory.bytes(ranges, sizeof range).data(), &range, sizeof range);
    auto deallocate = host_type::command(spec::nvm_opcode::dataset_management, 1);
    spec::dataset_management_view{.range_count = 1, .deallocate = true}.encode(deallocate);
    deallocate.dptr = r.host.build_prps(ranges, sizeof range);
    ASSERT_EQ(r.host.io(1, deallocate).status(), spec::status::success());

    auto expected = pattern(64 * 512, 5);
    std::memset(expected.data() + 4 * 512, 0, 8 * 512);
    std::memset(expected.data() + 32 * 512, 0, 16 * 512);
    std::vector<std::byte> data;
    ASSERT_EQ(read_blocks(r, 0, 64, data), spec::status::success());
    EXPECT_EQ(data, expected);
}

TEST(controller_uring_backend, more_commands_than_the_ring_holds_all_complete)
{
    temporary_file file;
    rig r;
    r.subsystem.add_namespace(make_backend(file, 4));
    r.host.bring_up(patient_host);
    constexpr std::uint32_t commands = 64;
    std::vector<std::uint16_t> cids;
    for (std::uint32_t i = 0; i < commands; ++i) {
        const auto data = pattern(4096, 100 + i);
        auto sqe = host_type::lba_command<spec::write_view>(spec::nvm_opcode::write, 1, i * 8, 8);
        const auto buffer = r.host.allocate(data.size());
        std::memcpy(r.memory.bytes(buffer, data.size()).data(), data.data(), data.size());
        sqe.dptr = r.host.build_prps(buffer, data.size());
        cids.push_back(r.host.submit(1, sqe));
    }
    for (const auto cid : cids) {
        EXPECT_EQ(r.host.wait_for(1, cid).status(), spec::status::success());
    }
    EXPECT_GT(uring_of(r).waited_count(), 0U);
    EXPECT_EQ(r.ctrl.io_outstanding(), 0U);
    EXPECT_EQ(uring_of(r).outstanding(), 0U);
    for (std::uint32_t i = 0; i < commands; ++i) {
        EXPECT_EQ(file.read(std::uint64_t{i} * 4096, 4096), pattern(4096, 100 + i)) << "command " << i;
    }
}

TEST(controller_uring_backend, a_namespace_opened_with_o_direct_keeps_its_data)
{
    if (!scratch_directory().direct_io) {
        GTEST_SKIP() << no_direct_io_reason();
    }
    temporary_file file;
    const nvmekit::namespace_options format{.lba_format = 2}; // 4096-byte blocks
    const auto data = pattern(4 * 4096, 6);
    {
        rig r;
        r.subsystem.add_namespace(
            nvmekit::uring_backend{file.path(), {.file = {.create_size = file_bytes, .direct = true}}},
            format);
        r.host.bring_up(patient_host);
        ASSERT_EQ(write_blocks(r, 5, data), spec::status::success());
        std::vector<std::byte> back;
        ASSERT_EQ(read_blocks(r, 5, 4, back), spec::status::success());
        EXPECT_EQ(back, data);
        EXPECT_EQ(flush(r), spec::status::success());
    }
    EXPECT_EQ(file.read(5 * 4096, data.size()), data);
}

} // namespace controller_uring_backend_test
} // namespace
