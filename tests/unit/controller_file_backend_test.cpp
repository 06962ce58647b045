#include <nvmekit/controller.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>
#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <nvmekit/backends/file_backend.hpp>
#include <nvmekit/backends/ram_backend.hpp>

#include "controller_fixture.hpp"
#include "file_namespace_helpers.hpp"
#include "scratch_directory.hpp"

/// The controller on a file_backend namespace: what the host writes and flushes is in the file and
/// survives the controller and the subsystem, FUA writes and writes with the volatile write cache
/// disabled sync the file before they complete, Flush syncs it, and a normal shutdown (CC.SHN =
/// 01b) flushes the volatile write cache before CSTS.SHST reads complete.

namespace {

namespace spec = nvmekit::spec;
using namespace nvmekit_test;

constexpr std::uint64_t file_bytes = std::uint64_t{1} << 20;

/// The file_backend behind namespace `nsid` of `r`'s subsystem (the default traits erase it).
[[nodiscard]] nvmekit::file_backend& file_of(rig& r, std::uint32_t nsid = 1)
{
    auto* ns = r.subsystem.find(nsid);
    EXPECT_NE(ns, nullptr);
    auto* file = ns->backend().get_if<nvmekit::file_backend>();
    EXPECT_NE(file, nullptr);
    return *file;
}

TEST(controller_file_backend, flushed_data_survives_the_controller_and_the_subsystem)
{
    temporary_file file;
    expect_flushed_data_survives<nvmekit::file_backend>(
        file,
        [&] {
            return nvmekit::file_backend{file.path(), {.create_size = file_bytes}};
        },
        [&] { return nvmekit::file_backend{file.path()}; });
}

TEST(controller_file_backend, separate_metadata_survives_reopening_the_file)
{
    temporary_file file;
    const nvmekit::namespace_options format{.lba_format = 3}; // 4096 + 64, separate metadata
    const auto data = pattern(5 * 4096, 3);
    const auto metadata = pattern(5 * 64, 4);
    std::uint64_t blocks = 0;
    {
        rig r;
        blocks =
            r.subsystem.add_namespace(nvmekit::file_backend{file.path(), {.create_size = file_bytes}}, format)
                .block_count();
        r.host.bring_up();
        ASSERT_EQ(write_blocks(r, 7, data, metadata), spec::status::success());
        EXPECT_EQ(flush(r), spec::status::success());
        EXPECT_EQ(file_of(r).sync_count(), 1U);
    }
    // The data of block n at n * 4096, its metadata after the data of every block.
    EXPECT_EQ(blocks, file_bytes / (4096 + 64));
    EXPECT_EQ(file.read(7 * 4096, data.size()), data);
    EXPECT_EQ(file.read(blocks * 4096 + 7 * 64, metadata.size()), metadata);

    rig r;
    r.subsystem.add_namespace(nvmekit::file_backend{file.path()}, format);
    r.host.bring_up();
    std::vector<std::byte> read_data;
    std::vector<std::byte> read_metadata;
    EXPECT_EQ(read_blocks(r, 7, 5, read_data, &read_metadata), spec::status::success());
    EXPECT_EQ(read_data, data);
    EXPECT_EQ(read_metadata, metadata);
}

TEST(controller_file_backend, fua_write_syncs_the_file_before_it_completes)
{
    temporary_file file;
    rig r;
    r.subsystem.add_namespace(nvmekit::file_backend{file.path(), {.create_size = file_bytes}});
    r.host.bring_up();
    ASSERT_EQ(write_blocks(r, 0, pattern(4096, 5)), spec::status::success());
    EXPECT_EQ(file_of(r).sync_count(), 0U);
    ASSERT_EQ(write_blocks(r, 8, pattern(4096, 6), {}, true), spec::status::success());
    EXPECT_EQ(file_of(r).sync_count(), 1U);
    ASSERT_EQ(write_blocks(r, 16, pattern(512, 7)), spec::status::success());
    EXPECT_EQ(file_of(r).sync_count(), 1U);
    EXPECT_EQ(file.read(8 * 512, 4096), pattern(4096, 6));
}

TEST(controller_file_backend, writes_sync_the_file_while_the_volatile_write_cache_is_disabled)
{
    temporary_file file;
    rig r;
    r.subsystem.add_namespace(nvmekit::file_backend{file.path(), {.create_size = file_bytes}});
    r.host.bring_up();
    const auto disable =
        r.host.admin(host_type::set_features_command(spec::feature_id::volatile_write_cache, 0));
    ASSERT_EQ(disable.status(), spec::status::success());
    ASSERT_EQ(write_blocks(r, 0, pattern(4096, 8)), spec::status::success());
    EXPECT_EQ(file_of(r).sync_count(), 1U); // every write is durable when it completes
    const auto enable = r.host.admin(host_type::set_features_command(
        spec::feature_id::volatile_write_cache,
        spec::volatile_write_cache{}.with(spec::volatile_write_cache::wce, true).raw));
    ASSERT_EQ(enable.status(), spec::status::success());
    ASSERT_EQ(write_blocks(r, 8, pattern(4096, 9)), spec::status::success());
    EXPECT_EQ(file_of(r).sync_count(), 1U);
}

TEST(controller_file_backend, a_file_without_a_volatile_cache_needs_no_sync)
{
    temporary_file file;
    rig r;
    r.subsystem.add_namespace(
        nvmekit::file_backend{file.path(), {.create_size = file_bytes, .volatile_cache = false}}); // O_DSYNC
    r.host.bring_up();
    ASSERT_EQ(write_blocks(r, 0, pattern(4096, 10), {}, true), spec::status::success());
    EXPECT_EQ(flush(r), spec::status::success());
    r.host.shut_down();
    EXPECT_EQ(file_of(r).sync_count(), 0U);
    EXPECT_EQ(file.read(0, 4096), pattern(4096, 10));
}

TEST(controller_file_backend, normal_shutdown_flushes_the_volatile_write_cache)
{
    temporary_file file;
    rig r;
    r.subsystem.add_namespace(nvmekit::file_backend{file.path(), {.create_size = file_bytes}});
    r.host.bring_up();
    ASSERT_EQ(write_blocks(r, 40, pattern(8192, 11)), spec::status::success());
    EXPECT_EQ(file_of(r).sync_count(), 0U);
    EXPECT_EQ(r.csts().get(spec::csts_register::shst), spec::shutdown_status::normal);

    r.host.shut_down(); // deletes the I/O queues, CC.SHN = 01b, waits for CSTS.SHST = 10b
    EXPECT_EQ(r.csts().get(spec::csts_register::shst), spec::shutdown_status::complete);
    EXPECT_EQ(file_of(r).sync_count(), 1U);
    EXPECT_EQ(r.ctrl.requests_in_use(), 0U);
    EXPECT_EQ(r.ctrl.io_outstanding(), 0U);
    EXPECT_EQ(file.read(40 * 512, 8192), pattern(8192, 11));
}

TEST(controller_file_backend, shutdown_flushes_only_the_namespaces_attached_to_the_controller)
{
    temporary_file attached;
    temporary_file detached;
    rig r;
    r.subsystem.add_namespace(nvmekit::file_backend{attached.path(), {.create_size = file_bytes}});
    r.subsystem.add_namespace(nvmekit::file_backend{detached.path(), {.create_size = file_bytes}});
    r.host.bring_up();
    ASSERT_TRUE(r.subsystem.detach(2, r.ctrl.controller_id()));
    r.host.shut_down();
    EXPECT_EQ(file_of(r, 1).sync_count(), 1U);
    EXPECT_EQ(file_of(r, 2).sync_count(), 0U);
}

TEST(controller_file_backend, flush_of_every_namespace_syncs_each_file)
{
    temporary_file one;
    temporary_file two;
    rig r;
    r.subsystem.add_namespace(nvmekit::file_backend{one.path(), {.create_size = file_bytes}});
    r.subsystem.add_namespace(nvmekit::ram_backend{file_bytes}); // no volatile cache: nothing to flush
    r.subsystem.add_namespace(nvmekit::file_backend{two.path(), {.create_size = file_bytes}});
    r.host.bring_up();
    EXPECT_EQ(flush(r, 0xffffffffU), spec::status::success());
    EXPECT_EQ(file_of(r, 1).sync_count(), 1U);
    EXPECT_EQ(file_of(r, 3).sync_count(), 1U);
    EXPECT_EQ(flush(r, 3), spec::status::success());
    EXPECT_EQ(file_of(r, 1).sync_count(), 1U);
    EXPECT_EQ(file_of(r, 3).sync_count(), 2U);
}

} // namespace

TEST(controller_file_backend, a_namespace_opened_with_o_direct_keeps_its_data)
{
    // A request goes through the O_DIRECT descriptor only when every segment the controller hands
    // the backend is 4 KiB aligned, which depends on the DMA provider's memory (flat_memory's
    // ranges and the staging buffers are not page aligned); the data must be right either way.
    if (!scratch_directory().direct_io) {
        GTEST_SKIP() << no_direct_io_reason();
    }
    temporary_file file;
    const nvmekit::namespace_options format{.lba_format = 2}; // 4096-byte blocks, no metadata
    const auto data = pattern(4 * 4096, 12);
    const auto unaligned = pattern(3 * 512, 13);
    {
        rig r;
        r.subsystem.add_namespace(
            nvmekit::file_backend{file.path(), {.create_size = file_bytes, .direct = true}}, format);
        r.host.bring_up();
        ASSERT_EQ(write_blocks(r, 5, data), spec::status::success());
        std::vector<std::byte> back;
        ASSERT_EQ(read_blocks(r, 5, 4, back), spec::status::success());
        EXPECT_EQ(back, data);
        EXPECT_EQ(flush(r), spec::status::success());
        EXPECT_EQ(r.ctrl.requests_in_use(), 0U);
    }
    EXPECT_EQ(file.read(5 * 4096, data.size()), data);

    // Reopened with 512-byte blocks: the same bytes, read back in pieces smaller than a page.
    rig r;
    r.subsystem.add_namespace(nvmekit::file_backend{file.path(), {.direct = true}});
    r.host.bring_up();
    std::vector<std::byte> back;
    ASSERT_EQ(read_blocks(r, 5 * 8 + 1, 3, back), spec::status::success());
    EXPECT_EQ(back, std::vector<std::byte>(data.begin() + 512, data.begin() + 4 * 512));
    ASSERT_EQ(write_blocks(r, 7, unaligned), spec::status::success());
    EXPECT_EQ(flush(r), spec::status::success());
    EXPECT_EQ(file.read(7 * 512, unaligned.size()), unaligned);
}
