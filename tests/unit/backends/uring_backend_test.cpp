#include <nvmekit/backends/uring_backend.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <system_error>
#include <thread>
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
using nvmekit::io_segment;
using nvmekit::uring_backend;
using nvmekit::uring_backend_options;

static_assert(nvmekit::BlockBackend<uring_backend>);
static_assert(nvmekit::check_block_backend<uring_backend>());

namespace {

constexpr std::uint64_t kib = 1024;

using nvmekit_test::aligned_buffer;
using nvmekit_test::outcome;
using nvmekit_test::pattern;
using nvmekit_test::read_bytes;
using nvmekit_test::write_bytes;
using nvmekit_test::zeros;

using pending = nvmekit_test::recorded_request;

/// Polls until `done` holds, for at most 10 s.
template <typename Predicate>
void poll_until(uring_backend& backend, Predicate done)
{
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{10};
    while (!done() && std::chrono::steady_clock::now() < deadline) {
        backend.poll();
    }
    ASSERT_TRUE(done()) << "the backend did not complete in 10 s";
}

/// Runs one request to completion; nothing is outstanding afterwards.
outcome run(uring_backend& backend, block_operation operation, std::uint64_t offset, std::uint64_t length,
            std::span<const io_segment> segments = {}, bool force_unit_access = false)
{
    const outcome result =
        nvmekit_test::run_polled(backend, operation, offset, length, segments, force_unit_access);
    EXPECT_EQ(backend.outstanding(), 0U);
    return result;
}

uring_backend_options sized(std::uint64_t bytes, unsigned ring_entries = 128)
{
    return {.file = {.create_size = bytes}, .ring_entries = ring_entries};
}

class uring_backend_test : public nvmekit_test::temporary_file_test {};

} // namespace

TEST_F(uring_backend_test, bad_options_and_missing_files_throw_naming_the_path)
{
    for (const unsigned entries : {0U, 3U, 8192U}) {
        try {
            uring_backend backend{path_, {.ring_entries = entries}};
            FAIL() << "no exception for " << entries << " ring entries";
        } catch (const std::system_error& error) {
            EXPECT_EQ(error.code(), std::error_code(EINVAL, std::system_category()));
            EXPECT_NE(std::string{error.what()}.find(path_), std::string::npos) << error.what();
        }
    }
    EXPECT_THROW(uring_backend(path_ + ".missing"), std::system_error);
}

TEST_F(uring_backend_test, requests_complete_in_a_later_poll)
{
    uring_backend backend{path_, sized(64 * kib)};
    EXPECT_EQ(backend.capacity_bytes(), 64 * kib);
    EXPECT_TRUE(backend.has_volatile_cache());
    EXPECT_TRUE(backend.files_registered());
    auto data = pattern(4096, 1);
    const std::array segments{io_segment{data.data(), data.size()}};
    pending write{block_operation::write, 8192, 4096, segments};
    backend.submit(write.request);
    EXPECT_EQ(write.result.calls, 0) << "submit() only queues";
    EXPECT_EQ(backend.outstanding(), 1U);
    poll_until(backend, [&] { return write.result.calls != 0; });
    EXPECT_EQ(write.result.calls, 1);
    EXPECT_EQ(write.result.status, block_status::success);
    EXPECT_EQ(backend.outstanding(), 0U);
    EXPECT_EQ(backend.poll(), 0U);
    EXPECT_EQ(read_bytes(backend, 8192, 4096), data);
}

TEST_F(uring_backend_test, writes_and_reads_with_several_segments_and_discards)
{
    uring_backend backend{path_, sized(64 * kib)};
    const auto expected = nvmekit_test::expect_two_segment_round_trip(backend);

    std::vector<std::byte> kept(100, std::byte{0xee});
    std::vector<std::byte> tail(40, std::byte{0xee});
    const std::array read_segments{io_segment{nullptr, 2950}, io_segment{kept.data(), kept.size()},
                                   io_segment{nullptr, 10}, io_segment{tail.data(), tail.size()}};
    EXPECT_EQ(run(backend, block_operation::read, 1000, 3100, read_segments).status, block_status::success);
    EXPECT_EQ(kept, std::vector<std::byte>(expected.begin() + 2950, expected.begin() + 3050));
    EXPECT_EQ(tail, std::vector<std::byte>(expected.begin() + 3060, expected.begin() + 3100));

    const std::array only_discarded{io_segment{nullptr, 512}};
    EXPECT_EQ(run(backend, block_operation::read, 0, 512, only_discarded).status, block_status::success);
}

TEST_F(uring_backend_test, more_segments_than_one_submission_takes_go_in_several)
{
    uring_backend backend{path_, sized(64 * kib)};
    constexpr std::size_t count = 40; // more than uring_operation::max_iovecs
    auto data = pattern(count * 100, 4);
    std::vector<io_segment> segments;
    for (std::size_t i = 0; i < count; ++i) {
        segments.push_back({data.data() + i * 100, 100});
    }
    EXPECT_EQ(run(backend, block_operation::write, 300, data.size(), segments).status, block_status::success);
    EXPECT_GE(backend.resubmit_count(), 2U);
    EXPECT_EQ(read_bytes(backend, 300, data.size()), data);
}

TEST_F(uring_backend_test, out_of_range_and_invalid_requests_complete_inside_submit)
{
    uring_backend backend{path_, sized(4 * kib)};
    auto data = pattern(16, 5);
    const std::array segments{io_segment{data.data(), data.size()}};
    const auto inline_status = [&](block_operation operation, std::uint64_t offset, std::uint64_t length,
                                   std::span<const io_segment> with = {}) {
        pending one{operation, offset, length, with};
        backend.submit(one.request);
        EXPECT_EQ(one.result.calls, 1);
        return one.result.status;
    };
    EXPECT_EQ(inline_status(block_operation::write, 4 * kib - 15, 16, segments), block_status::out_of_range);
    EXPECT_EQ(inline_status(block_operation::read, 4 * kib, 16, segments), block_status::out_of_range);
    EXPECT_EQ(inline_status(block_operation::write_zeroes, 1, 4 * kib), block_status::out_of_range);
    EXPECT_EQ(inline_status(block_operation::deallocate, 4 * kib + 1, 0), block_status::out_of_range);
    EXPECT_EQ(inline_status(block_operation::read, 0, 17, segments), block_status::internal_error);
    EXPECT_EQ(inline_status(block_operation::deallocate, 100, 0), block_status::success);
    EXPECT_EQ(backend.outstanding(), 0U);
    EXPECT_EQ(data, pattern(16, 5));
    EXPECT_EQ(file_status().st_size, 4 * 1024);
    EXPECT_EQ(read_bytes(backend, 0, 4 * kib), zeros(4 * kib));
}

TEST_F(uring_backend_test, flush_syncs_and_fua_writes_are_durable_at_completion)
{
    uring_backend backend{path_, sized(64 * kib)};
    auto data = pattern(512, 6);
    ASSERT_EQ(write_bytes(backend, 0, data), block_status::success);
    EXPECT_EQ(backend.sync_count(), 0U);
    EXPECT_EQ(backend.dsync_write_count(), 0U);
    EXPECT_EQ(run(backend, block_operation::flush, 0, 0).status, block_status::success);
    EXPECT_EQ(backend.sync_count(), 1U);
    ASSERT_EQ(write_bytes(backend, 512, data, true), block_status::success);
    EXPECT_EQ(backend.dsync_write_count(), 1U);
    EXPECT_EQ(backend.sync_count(), 1U);
    EXPECT_EQ(run(backend, block_operation::write_zeroes, 0, 512, {}, true).status, block_status::success);
    EXPECT_EQ(backend.sync_count(), 2U);
    EXPECT_EQ(run(backend, block_operation::deallocate, 1024, 512).status, block_status::success);
    EXPECT_EQ(backend.sync_count(), 2U);
    EXPECT_EQ(read_bytes(backend, 0, 512), zeros(512));
    EXPECT_EQ(read_bytes(backend, 512, 512), data);
}

TEST_F(uring_backend_test, without_a_volatile_cache_nothing_syncs)
{
    uring_backend backend{path_, {.file = {.create_size = 64 * kib, .volatile_cache = false}}};
    EXPECT_FALSE(backend.has_volatile_cache());
    EXPECT_EQ(::fcntl(backend.file().native_handle(), F_GETFL) & O_DSYNC, O_DSYNC);
    auto data = pattern(512, 7);
    ASSERT_EQ(write_bytes(backend, 0, data, true), block_status::success);
    pending flush{block_operation::flush, 0, 0};
    backend.submit(flush.request);
    EXPECT_EQ(flush.result.calls, 1) << "nothing to flush: completes inside submit()";
    EXPECT_EQ(backend.sync_count(), 0U);
    EXPECT_EQ(backend.dsync_write_count(), 0U);
}

TEST_F(uring_backend_test, deallocate_punches_a_hole_that_reads_back_zeros)
{
    uring_backend backend{path_, sized(256 * kib)};
    expect_deallocate_punches_a_hole(backend);
}

TEST_F(uring_backend_test, write_zeroes_reads_back_zeros_with_and_without_fallocate)
{
    const bool zero_range = nvmekit_test::zero_range_supported(path_);
    for (const bool use_fallocate : {true, false}) {
        uring_backend backend{path_, {.file = {.create_size = 256 * kib, .use_fallocate = use_fallocate}}};
        auto data = pattern(256 * kib, 9);
        ASSERT_EQ(write_bytes(backend, 0, data), block_status::success);
        // 200 KiB: the zero-writing fallback needs several 64 KiB writes.
        EXPECT_EQ(run(backend, block_operation::write_zeroes, 1000, 200 * kib).status, block_status::success);
        EXPECT_EQ(run(backend, block_operation::deallocate, 210 * kib, 3000).status, block_status::success);
        EXPECT_EQ(backend.zero_fill_count(), use_fallocate && zero_range ? 0U : 2U);
        std::vector<std::byte> expected = data;
        std::fill(expected.begin() + 1000, expected.begin() + 1000 + 200 * kib, std::byte{0});
        std::fill(expected.begin() + 210 * kib, expected.begin() + 210 * kib + 3000, std::byte{0});
        EXPECT_EQ(read_bytes(backend, 0, 256 * kib), expected);
        EXPECT_EQ(file_status().st_size, 256 * 1024);
    }
}

TEST_F(uring_backend_test, requests_beyond_the_ring_wait_and_all_complete_once)
{
    constexpr unsigned ring_entries = 4;
    constexpr std::size_t count = 200;
    uring_backend backend{path_, sized(count * 4 * kib, ring_entries)};
    std::vector<std::vector<std::byte>> data;
    std::vector<std::array<io_segment, 1>> segments(count);
    std::vector<std::unique_ptr<pending>> requests;
    for (std::size_t i = 0; i < count; ++i) {
        data.push_back(pattern(4096, static_cast<std::uint8_t>(i)));
        segments[i] = {io_segment{data[i].data(), 4096}};
        requests.push_back(std::make_unique<pending>(block_operation::write, i * 4096, 4096, segments[i]));
        backend.submit(requests.back()->request);
    }
    EXPECT_EQ(backend.outstanding(), count);
    EXPECT_EQ(backend.waited_count(), count - ring_entries);
    std::size_t completed = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{10};
    while (backend.outstanding() != 0 && std::chrono::steady_clock::now() < deadline) {
        completed += backend.poll();
    }
    EXPECT_EQ(completed, count) << "poll() returns how many it completed";
    for (const auto& request : requests) {
        EXPECT_EQ(request->result.calls, 1);
        EXPECT_EQ(request->result.status, block_status::success);
    }
    // Read them all back at once, in reverse order.
    std::vector<std::vector<std::byte>> back(count, std::vector<std::byte>(4096));
    requests.clear();
    for (std::size_t i = count; i-- > 0;) {
        segments[i] = {io_segment{back[i].data(), 4096}};
        requests.push_back(std::make_unique<pending>(block_operation::read, i * 4096, 4096, segments[i]));
        backend.submit(requests.back()->request);
    }
    poll_until(backend, [&] { return backend.outstanding() == 0; });
    for (std::size_t i = 0; i < count; ++i) {
        EXPECT_EQ(requests[i]->result.calls, 1);
        EXPECT_EQ(back[i], data[i]) << "block " << i;
    }
}

TEST_F(uring_backend_test, a_short_read_at_end_of_file_continues_and_gives_zeros)
{
    uring_backend backend{path_, sized(64 * kib)};
    auto data = pattern(100, 10);
    ASSERT_EQ(write_bytes(backend, 32 * kib - 50, data), block_status::success);
    ASSERT_EQ(::truncate(path_.c_str(), 32 * kib), 0); // shrunk behind the backend's back
    const std::uint64_t resubmits = backend.resubmit_count();
    std::vector<std::byte> expected = zeros(1000);
    std::copy(data.begin(), data.begin() + 50, expected.end() - 550);
    EXPECT_EQ(read_bytes(backend, 32 * kib - 500, 1000), expected); // 500 bytes, then end of file
    EXPECT_EQ(backend.resubmit_count(), resubmits + 1);
    EXPECT_EQ(read_bytes(backend, 40 * kib, 4096), zeros(4096));
}

TEST_F(uring_backend_test, a_completion_may_submit_the_next_request)
{
    uring_backend backend{path_, sized(64 * kib)};
    struct chain {
        uring_backend* backend;
        std::vector<std::byte> data = pattern(512, 11);
        std::array<io_segment, 1> segments{};
        block_request request{};
        int left = 10;
        int calls = 0;
    } state{&backend};
    state.segments[0] = {state.data.data(), state.data.size()};
    state.request = {.operation = block_operation::write,
                     .offset = 0,
                     .length = 512,
                     .segments = state.segments,
                     .complete =
                         [](block_request& done, block_status status) {
                             auto& self = *static_cast<chain*>(done.context);
                             ++self.calls;
                             EXPECT_EQ(status, block_status::success);
                             if (--self.left > 0) {
                                 done.offset += 512;
                                 self.backend->submit(done);
                             }
                         },
                     .context = &state};
    backend.submit(state.request);
    poll_until(backend, [&] { return state.left == 0; });
    EXPECT_EQ(state.calls, 10);
    EXPECT_EQ(backend.outstanding(), 0U);
    EXPECT_EQ(read_bytes(backend, 9 * 512, 512), state.data);
}

TEST_F(uring_backend_test, read_only_and_closed_backends_refuse_inside_submit)
{
    {
        uring_backend writer{path_, sized(4 * kib)};
        auto data = pattern(64, 12);
        ASSERT_EQ(write_bytes(writer, 0, data), block_status::success);
    }
    uring_backend backend{path_, {.file = {.read_only = true}}};
    EXPECT_FALSE(backend.has_volatile_cache());
    EXPECT_EQ(read_bytes(backend, 0, 64), pattern(64, 12));
    auto other = pattern(64, 13);
    const std::array segments{io_segment{other.data(), other.size()}};
    pending write{block_operation::write, 0, 64, segments};
    backend.submit(write.request);
    EXPECT_EQ(write.result.calls, 1);
    EXPECT_EQ(write.result.status, block_status::internal_error);
    pending zeroes{block_operation::write_zeroes, 0, 64};
    backend.submit(zeroes.request);
    EXPECT_EQ(zeroes.result.status, block_status::internal_error);

    EXPECT_EQ(backend.close(), std::error_code{});
    EXPECT_FALSE(backend.is_open());
    std::vector<std::byte> bytes(16, std::byte{0xee});
    const std::array read_segments{io_segment{bytes.data(), bytes.size()}};
    pending read{block_operation::read, 0, 16, read_segments};
    backend.submit(read.request);
    EXPECT_EQ(read.result.calls, 1);
    EXPECT_EQ(read.result.status, block_status::internal_error);
    EXPECT_EQ(bytes, std::vector<std::byte>(16, std::byte{0xee}));
    EXPECT_EQ(backend.close(), std::error_code{});
}

TEST_F(uring_backend_test, moving_keeps_the_ring_and_the_file)
{
    uring_backend backend{path_, sized(8 * kib)};
    auto data = pattern(32, 14);
    ASSERT_EQ(write_bytes(backend, 8, data), block_status::success);
    uring_backend moved{std::move(backend)};
    EXPECT_FALSE(backend.is_open());
    EXPECT_EQ(read_bytes(moved, 8, 32), data);
    uring_backend other{path_};
    other = std::move(moved);
    EXPECT_EQ(read_bytes(other, 8, 32), data);
}

TEST_F(uring_backend_test, submits_from_several_threads_while_one_polls)
{
    constexpr std::size_t threads = 4;
    constexpr std::size_t per_thread = 64;
    uring_backend backend{path_, sized(threads * per_thread * 512, 8)};
    std::atomic<std::size_t> completed{0};
    std::vector<std::thread> submitters;
    std::vector<std::vector<std::byte>> data(threads);
    for (std::size_t t = 0; t < threads; ++t) {
        data[t] = pattern(per_thread * 512, static_cast<std::uint8_t>(t));
        submitters.emplace_back([&, t] {
            std::vector<std::array<io_segment, 1>> segments(per_thread);
            std::vector<block_request> requests(per_thread);
            std::atomic<std::size_t> mine{0};
            for (std::size_t i = 0; i < per_thread; ++i) {
                segments[i] = {io_segment{data[t].data() + i * 512, 512}};
                requests[i] = {.operation = block_operation::write,
                               .offset = (t * per_thread + i) * 512,
                               .length = 512,
                               .segments = segments[i],
                               .complete =
                                   [](block_request& done, block_status status) {
                                       EXPECT_EQ(status, block_status::success);
                                       static_cast<std::atomic<std::size_t>*>(done.context)->fetch_add(1);
                                   },
                               .context = &mine};
                backend.submit(requests[i]);
            }
            while (mine.load() != per_thread) {
                std::this_thread::yield(); // the requests live on this thread's stack until done
            }
            completed.fetch_add(per_thread);
        });
    }
    poll_until(backend, [&] { return completed.load() == threads * per_thread; });
    for (auto& submitter : submitters) {
        submitter.join();
    }
    EXPECT_EQ(backend.outstanding(), 0U);
    for (std::size_t t = 0; t < threads; ++t) {
        EXPECT_EQ(read_bytes(backend, t * per_thread * 512, per_thread * 512), data[t]);
    }
}

TEST_F(uring_backend_test, direct_io_serves_aligned_requests_and_buffers_the_rest)
{
    if (!nvmekit_test::scratch_directory().direct_io) {
        GTEST_SKIP() << nvmekit_test::no_direct_io_reason();
    }
    uring_backend backend{path_, {.file = {.create_size = 64 * kib, .direct = true}}};
    EXPECT_GE(backend.file().direct_handle(), 0);
    auto aligned = aligned_buffer(8192);
    const auto data = pattern(8192, 15);
    std::copy(data.begin(), data.end(), aligned.get());
    const std::array segments{io_segment{aligned.get(), 4096}, io_segment{aligned.get() + 4096, 4096}};
    EXPECT_EQ(run(backend, block_operation::write, 8192, 8192, segments).status, block_status::success);
    EXPECT_EQ(backend.direct_count(), 1U);
    std::fill(aligned.get(), aligned.get() + 8192, std::byte{0});
    EXPECT_EQ(run(backend, block_operation::read, 8192, 8192, segments).status, block_status::success);
    EXPECT_EQ(backend.direct_count(), 2U);
    EXPECT_TRUE(std::equal(data.begin(), data.end(), aligned.get()));

    auto unaligned = pattern(100, 16);
    ASSERT_EQ(write_bytes(backend, 8192 + 10, unaligned), block_status::success);
    EXPECT_EQ(backend.direct_count(), 2U);
    const std::array misaligned_buffer{io_segment{aligned.get() + 512, 4096}};
    EXPECT_EQ(run(backend, block_operation::read, 8192, 4096, misaligned_buffer).status,
              block_status::success);
    EXPECT_EQ(backend.direct_count(), 2U);
    std::vector<std::byte> expected(data.begin(), data.begin() + 4096);
    std::copy(unaligned.begin(), unaligned.end(), expected.begin() + 10);
    EXPECT_TRUE(std::equal(expected.begin(), expected.end(), aligned.get() + 512));

    EXPECT_EQ(run(backend, block_operation::read, 8192, 4096, std::span{segments}.first(1)).status,
              block_status::success);
    EXPECT_EQ(backend.direct_count(), 3U);
    EXPECT_TRUE(std::equal(expected.begin(), expected.end(), aligned.get()))
        << "direct reads see buffered writes";
    // A direct read that meets end of file continues buffered and gives zeros past it.
    ASSERT_EQ(::truncate(path_.c_str(), 8192 + 2048), 0);
    EXPECT_EQ(run(backend, block_operation::read, 8192, 4096, std::span{segments}.first(1)).status,
              block_status::success);
    EXPECT_TRUE(std::equal(expected.begin(), expected.begin() + 2048, aligned.get()));
    EXPECT_TRUE(std::all_of(aligned.get() + 2048, aligned.get() + 4096,
                            [](std::byte b) { return b == std::byte{0}; }));
}
