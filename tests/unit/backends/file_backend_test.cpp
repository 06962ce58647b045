#include <nvmekit/backends/file_backend.hpp>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <span>
#include <string>
#include <system_error>
#include <utility>
#include <vector>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "backends/backend_test_support.hpp"

using nvmekit::block_operation;
using nvmekit::block_request;
using nvmekit::block_status;
using nvmekit::file_backend;
using nvmekit::io_segment;

static_assert(nvmekit::BlockBackend<file_backend>);
static_assert(nvmekit::check_block_backend<file_backend>());

namespace {

constexpr std::uint64_t kib = 1024;

using nvmekit_test::aligned_buffer;
using nvmekit_test::outcome;
using nvmekit_test::pattern;
using nvmekit_test::read_bytes;
using nvmekit_test::run;
using nvmekit_test::write_bytes;
using nvmekit_test::zeros;

class file_backend_test : public nvmekit_test::temporary_file_test {
protected:
    void TearDown() override
    {
        temporary_file_test::TearDown();
        ::unlink(missing().c_str());
    }

    [[nodiscard]] std::string missing() const { return path_ + ".missing"; }

    /// Whether the file system of the temporary file supports FALLOC_FL_ZERO_RANGE (tmpfs does not). Zeroes
    /// the first 4 KiB of the file.
    [[nodiscard]] bool zero_range_supported() const { return nvmekit_test::zero_range_supported(path_); }
};

} // namespace

TEST_F(file_backend_test, opening_a_missing_file_throws_naming_the_path)
{
    try {
        file_backend backend{missing()};
        FAIL() << "no exception";
    } catch (const std::system_error& error) {
        EXPECT_EQ(error.code(), std::error_code(ENOENT, std::system_category()));
        EXPECT_NE(std::string{error.what()}.find("cannot open '" + missing() + "'"), std::string::npos)
            << error.what();
    }
}

TEST_F(file_backend_test, contradictory_options_and_non_files_throw_naming_the_path)
{
    try {
        file_backend backend{path_, {.create_size = 4096, .read_only = true}};
        FAIL() << "no exception";
    } catch (const std::system_error& error) {
        EXPECT_EQ(error.code(), std::error_code(EINVAL, std::system_category()));
        EXPECT_NE(std::string{error.what()}.find(path_), std::string::npos) << error.what();
    }
    try {
        file_backend backend{"/tmp", {.read_only = true}};
        FAIL() << "no exception";
    } catch (const std::system_error& error) {
        EXPECT_EQ(error.code(), std::error_code(EINVAL, std::system_category()));
        EXPECT_NE(std::string{error.what()}.find("neither a regular file nor a block device: '/tmp'"),
                  std::string::npos)
            << error.what();
    }
    EXPECT_THROW(file_backend(path_, {.direct = true, .direct_alignment = 256}), std::system_error);
    EXPECT_THROW(file_backend(path_, {.direct = true, .direct_alignment = 4095}), std::system_error);
    EXPECT_THROW(file_backend(path_, {.create_size = std::uint64_t{1} << 63}), std::system_error);
}

TEST_F(file_backend_test, create_size_creates_a_sparse_file_of_that_size)
{
    file_backend backend{missing(), {.create_size = 1024 * kib}};
    EXPECT_TRUE(backend.is_open());
    EXPECT_FALSE(backend.is_block_device());
    EXPECT_FALSE(backend.read_only());
    EXPECT_EQ(backend.capacity_bytes(), 1024 * kib);
    struct stat status {};
    ASSERT_EQ(::stat(missing().c_str(), &status), 0);
    EXPECT_EQ(status.st_size, 1024 * 1024);
    EXPECT_EQ(read_bytes(backend, 512 * kib, 4096), zeros(4096));
    EXPECT_EQ(backend.poll(), 0U);
    EXPECT_EQ(backend.outstanding(), 0U);
}

TEST_F(file_backend_test, create_size_resizes_an_existing_file)
{
    {
        file_backend backend{path_, {.create_size = 8 * kib}};
        auto data = pattern(16, 1);
        ASSERT_EQ(write_bytes(backend, 100, data), block_status::success);
    }
    file_backend grown{path_, {.create_size = 16 * kib}};
    EXPECT_EQ(grown.capacity_bytes(), 16 * kib);
    EXPECT_EQ(read_bytes(grown, 100, 16), pattern(16, 1));
    EXPECT_EQ(file_status().st_size, 16 * 1024);
}

TEST_F(file_backend_test, an_empty_file_has_no_capacity)
{
    file_backend backend{path_};
    EXPECT_EQ(backend.capacity_bytes(), 0U);
    auto data = pattern(1, 0);
    EXPECT_EQ(write_bytes(backend, 0, data), block_status::out_of_range);
    EXPECT_EQ(file_status().st_size, 0);
}

TEST_F(file_backend_test, capacity_of_an_existing_file_is_its_size)
{
    ASSERT_EQ(::truncate(path_.c_str(), 12345), 0);
    const file_backend backend{path_};
    EXPECT_EQ(backend.capacity_bytes(), 12345U);
    EXPECT_TRUE(backend.has_volatile_cache());
}

TEST_F(file_backend_test, writes_and_reads_with_several_segments_and_discards)
{
    file_backend backend{path_, {.create_size = 64 * kib}};
    const auto expected = nvmekit_test::expect_two_segment_round_trip(backend);
    std::vector<std::byte> kept(100, std::byte{0xee});
    const std::array read_segments{io_segment{nullptr, 2950}, io_segment{kept.data(), kept.size()},
                                   io_segment{nullptr, 10}};
    EXPECT_EQ(run(backend, block_operation::read, 1000, 3060, read_segments).status, block_status::success);
    EXPECT_EQ(kept, std::vector<std::byte>(expected.begin() + 2950, expected.begin() + 3050));
}

TEST_F(file_backend_test, data_survives_closing_and_reopening)
{
    auto data = pattern(4096, 4);
    {
        file_backend backend{path_, {.create_size = 64 * kib}};
        ASSERT_EQ(write_bytes(backend, 60 * kib, data), block_status::success);
        EXPECT_EQ(backend.sync_count(), 0U);
        EXPECT_EQ(backend.close(), std::error_code{});
        EXPECT_EQ(backend.sync_count(), 1U);
        EXPECT_FALSE(backend.is_open());
        EXPECT_EQ(backend.close(), std::error_code{});
        EXPECT_EQ(backend.sync_count(), 1U);
    }
    file_backend reopened{path_};
    EXPECT_EQ(reopened.capacity_bytes(), 64 * kib);
    EXPECT_EQ(read_bytes(reopened, 60 * kib, 4096), data);
}

TEST_F(file_backend_test, flush_and_fua_writes_sync)
{
    file_backend backend{path_, {.create_size = 64 * kib}};
    auto data = pattern(512, 5);
    ASSERT_EQ(write_bytes(backend, 0, data), block_status::success);
    EXPECT_EQ(backend.sync_count(), 0U);
    EXPECT_EQ(run(backend, block_operation::flush, 0, 0).status, block_status::success);
    EXPECT_EQ(backend.sync_count(), 1U);
    ASSERT_EQ(write_bytes(backend, 512, data, true), block_status::success);
    EXPECT_EQ(backend.sync_count(), 2U);
    EXPECT_EQ(run(backend, block_operation::write_zeroes, 0, 512, {}, true).status, block_status::success);
    EXPECT_EQ(backend.sync_count(), 3U);
    EXPECT_EQ(run(backend, block_operation::deallocate, 0, 512).status, block_status::success);
    EXPECT_EQ(backend.sync_count(), 3U);
    EXPECT_EQ(read_bytes(backend, 512, 512), data);
}

TEST_F(file_backend_test, moving_transfers_the_open_file)
{
    file_backend backend{path_, {.create_size = 4 * kib}};
    const int fd = backend.native_handle();
    const int flags = ::fcntl(fd, F_GETFL);
    EXPECT_EQ(flags & (O_DSYNC | O_DIRECT | O_ACCMODE), O_RDWR);
    file_backend moved{std::move(backend)};
    EXPECT_FALSE(backend.is_open());
    EXPECT_EQ(backend.native_handle(), -1);
    EXPECT_EQ(backend.close(), std::error_code{});
    EXPECT_EQ(backend.sync_count(), 0U);
    EXPECT_TRUE(moved.is_open());
    EXPECT_EQ(moved.native_handle(), fd);
    EXPECT_EQ(moved.close(), std::error_code{});
    EXPECT_EQ(moved.sync_count(), 1U);
    EXPECT_EQ(::fcntl(fd, F_GETFD), -1) << "the descriptor is closed";
}

TEST_F(file_backend_test, without_a_volatile_cache_writes_are_durable_and_nothing_syncs)
{
    file_backend backend{path_, {.create_size = 64 * kib, .volatile_cache = false}};
    EXPECT_FALSE(backend.has_volatile_cache());
    const int flags = ::fcntl(backend.native_handle(), F_GETFL);
    EXPECT_EQ(flags & O_DSYNC, O_DSYNC);
    auto data = pattern(512, 6);
    ASSERT_EQ(write_bytes(backend, 0, data, true), block_status::success);
    EXPECT_EQ(run(backend, block_operation::flush, 0, 0).status, block_status::success);
    EXPECT_EQ(backend.close(), std::error_code{});
    EXPECT_EQ(backend.sync_count(), 0U);
}

TEST_F(file_backend_test, holes_and_bytes_past_end_of_file_read_as_zeros)
{
    file_backend backend{path_, {.create_size = 64 * kib}};
    auto data = pattern(100, 7);
    ASSERT_EQ(write_bytes(backend, 32 * kib - 50, data), block_status::success);
    ASSERT_EQ(::truncate(path_.c_str(), 32 * kib), 0);
    std::vector<std::byte> expected = zeros(1000);
    std::copy(data.begin(), data.begin() + 50, expected.end() - 550);
    EXPECT_EQ(read_bytes(backend, 32 * kib - 500, 1000), expected);
    EXPECT_EQ(read_bytes(backend, 40 * kib, 4096), zeros(4096));
}

TEST_F(file_backend_test, write_zeroes_reads_back_zeros)
{
    const bool zero_range = zero_range_supported();
    for (const bool use_fallocate : {true, false}) {
        file_backend backend{path_, {.create_size = 256 * kib, .use_fallocate = use_fallocate}};
        auto data = pattern(256 * kib, 8);
        ASSERT_EQ(write_bytes(backend, 0, data), block_status::success);
        EXPECT_EQ(run(backend, block_operation::write_zeroes, 1000, 200 * kib).status, block_status::success);
        EXPECT_EQ(backend.zero_fill_count(), use_fallocate && zero_range ? 0U : 1U);
        std::vector<std::byte> expected = data;
        std::fill(expected.begin() + 1000, expected.begin() + 1000 + 200 * kib, std::byte{0});
        EXPECT_EQ(read_bytes(backend, 0, 256 * kib), expected);
        EXPECT_EQ(file_status().st_size, 256 * 1024);
    }
}

TEST_F(file_backend_test, deallocate_punches_a_hole_that_reads_back_zeros)
{
    file_backend backend{path_, {.create_size = 256 * kib}};
    expect_deallocate_punches_a_hole(backend);
}

TEST_F(file_backend_test, deallocate_without_fallocate_writes_zeros)
{
    file_backend backend{path_, {.create_size = 8 * kib, .use_fallocate = false}};
    auto data = pattern(8 * kib, 10);
    ASSERT_EQ(write_bytes(backend, 0, data), block_status::success);
    EXPECT_EQ(run(backend, block_operation::deallocate, 100, 200).status, block_status::success);
    EXPECT_EQ(run(backend, block_operation::deallocate, 100, 0).status, block_status::success);
    EXPECT_EQ(backend.zero_fill_count(), 1U);
    std::vector<std::byte> expected = data;
    std::fill(expected.begin() + 100, expected.begin() + 300, std::byte{0});
    EXPECT_EQ(read_bytes(backend, 0, 8 * kib), expected);
}

TEST_F(file_backend_test, out_of_range_requests_touch_nothing)
{
    file_backend backend{path_, {.create_size = 4 * kib}};
    auto data = pattern(16, 11);
    const std::array segments{io_segment{data.data(), data.size()}};
    EXPECT_EQ(run(backend, block_operation::write, 4 * kib - 15, 16, segments).status,
              block_status::out_of_range);
    EXPECT_EQ(run(backend, block_operation::read, 4 * kib, 16, segments).status, block_status::out_of_range);
    EXPECT_EQ(run(backend, block_operation::write_zeroes, 1, 4 * kib).status, block_status::out_of_range);
    EXPECT_EQ(run(backend, block_operation::deallocate, 4 * kib + 1, 0).status, block_status::out_of_range);
    EXPECT_EQ(data, pattern(16, 11));
    EXPECT_EQ(file_status().st_size, 4 * 1024);
    EXPECT_EQ(read_bytes(backend, 0, 4 * kib), zeros(4 * kib));
}

TEST_F(file_backend_test, a_read_only_backend_reads_and_refuses_to_change_anything)
{
    {
        file_backend writer{path_, {.create_size = 4 * kib}};
        auto data = pattern(64, 12);
        ASSERT_EQ(write_bytes(writer, 0, data), block_status::success);
    }
    file_backend backend{path_, {.read_only = true}};
    EXPECT_TRUE(backend.read_only());
    EXPECT_EQ(::fcntl(backend.native_handle(), F_GETFL) & O_ACCMODE, O_RDONLY);
    EXPECT_FALSE(backend.has_volatile_cache());
    EXPECT_EQ(read_bytes(backend, 0, 64), pattern(64, 12));
    auto other = pattern(64, 13);
    EXPECT_EQ(write_bytes(backend, 0, other), block_status::internal_error);
    EXPECT_EQ(run(backend, block_operation::write_zeroes, 0, 64).status, block_status::internal_error);
    EXPECT_EQ(run(backend, block_operation::deallocate, 0, 64).status, block_status::internal_error);
    EXPECT_EQ(run(backend, block_operation::flush, 0, 0).status, block_status::success);
    EXPECT_EQ(backend.sync_count(), 0U);
    EXPECT_EQ(read_bytes(backend, 0, 64), pattern(64, 12));
}

TEST_F(file_backend_test, requests_after_close_are_internal_errors)
{
    file_backend backend{path_, {.create_size = 4 * kib}};
    EXPECT_EQ(backend.close(), std::error_code{});
    std::vector<std::byte> data(16, std::byte{0xee});
    const std::array segments{io_segment{data.data(), data.size()}};
    EXPECT_EQ(run(backend, block_operation::read, 0, 16, segments).status, block_status::internal_error);
    EXPECT_EQ(run(backend, block_operation::flush, 0, 0).status, block_status::internal_error);
    EXPECT_EQ(data, std::vector<std::byte>(16, std::byte{0xee}));
    EXPECT_EQ(backend.capacity_bytes(), 4 * kib);
}

TEST_F(file_backend_test, move_assignment_closes_the_target_and_takes_the_source)
{
    file_backend first{path_, {.create_size = 4 * kib}};
    file_backend second{missing(), {.create_size = 8 * kib}};
    auto data = pattern(32, 14);
    ASSERT_EQ(write_bytes(second, 8, data), block_status::success);
    first = std::move(second);
    EXPECT_FALSE(second.is_open());
    EXPECT_EQ(first.capacity_bytes(), 8 * kib);
    EXPECT_EQ(read_bytes(first, 8, 32), data);
}

TEST_F(file_backend_test, direct_io_serves_aligned_requests_and_falls_back_for_the_rest)
{
    if (!nvmekit_test::scratch_directory().direct_io) {
        GTEST_SKIP() << nvmekit_test::no_direct_io_reason();
    }
    // The temporary file is where O_DIRECT works: opening it so must succeed.
    const auto backend = std::make_unique<file_backend>(
        path_, nvmekit::file_backend_options{.create_size = 64 * kib, .direct = true});
    auto aligned = aligned_buffer(8192);
    const auto data = pattern(8192, 15);
    std::copy(data.begin(), data.end(), aligned.get());
    const std::array segments{io_segment{aligned.get(), 4096}, io_segment{aligned.get() + 4096, 4096}};
    EXPECT_EQ(run(*backend, block_operation::write, 8192, 8192, segments).status, block_status::success);
    EXPECT_EQ(backend->direct_count(), 1U);
    std::fill(aligned.get(), aligned.get() + 8192, std::byte{0});
    EXPECT_EQ(run(*backend, block_operation::read, 8192, 8192, segments).status, block_status::success);
    EXPECT_EQ(backend->direct_count(), 2U);
    EXPECT_TRUE(std::equal(data.begin(), data.end(), aligned.get()));

    auto unaligned = pattern(100, 16);
    ASSERT_EQ(write_bytes(*backend, 8192 + 10, unaligned), block_status::success);
    EXPECT_EQ(backend->direct_count(), 2U);
    const std::array misaligned_buffer{io_segment{aligned.get() + 512, 4096}};
    EXPECT_EQ(run(*backend, block_operation::read, 8192, 4096, misaligned_buffer).status,
              block_status::success);
    EXPECT_EQ(backend->direct_count(), 2U);
    std::vector<std::byte> expected(data.begin(), data.begin() + 4096);
    std::copy(unaligned.begin(), unaligned.end(), expected.begin() + 10);
    EXPECT_TRUE(std::equal(expected.begin(), expected.end(), aligned.get() + 512));

    EXPECT_EQ(run(*backend, block_operation::read, 8192, 4096, std::span{segments}.first(1)).status,
              block_status::success);
    EXPECT_EQ(backend->direct_count(), 3U);
    EXPECT_TRUE(std::equal(expected.begin(), expected.end(), aligned.get()))
        << "direct reads see buffered writes";
}
