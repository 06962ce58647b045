#include <nvmekit/backends/ram_backend.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <stdexcept>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "backends/backend_test_support.hpp"

using nvmekit::block_operation;
using nvmekit::block_request;
using nvmekit::block_status;
using nvmekit::io_segment;
using nvmekit::ram_backend;

static_assert(nvmekit::BlockBackend<ram_backend>);
static_assert(nvmekit::check_block_backend<ram_backend>());
static_assert(nvmekit::InlineSubmitting<ram_backend>);

namespace {

constexpr std::uint64_t kib = 1024;
constexpr std::uint64_t tib = kib * kib * kib * kib;

using nvmekit_test::outcome;
using nvmekit_test::run;

block_status write_bytes(ram_backend& backend, std::uint64_t offset, std::span<std::byte> bytes)
{
    const std::array segments{io_segment{bytes.data(), bytes.size()}};
    const outcome result = run(backend, block_operation::write, offset, bytes.size(), segments);
    EXPECT_EQ(result.calls, 1);
    return result.status;
}

std::vector<std::byte> read_bytes(ram_backend& backend, std::uint64_t offset, std::size_t length)
{
    std::vector<std::byte> bytes(length, std::byte{0xee});
    const std::array segments{io_segment{bytes.data(), bytes.size()}};
    const outcome result = run(backend, block_operation::read, offset, length, segments);
    EXPECT_EQ(result.calls, 1);
    EXPECT_EQ(result.status, block_status::success);
    return bytes;
}

std::vector<std::byte> pattern(std::size_t length, std::uint8_t seed)
{
    std::vector<std::byte> bytes(length);
    for (std::size_t i = 0; i < length; ++i) {
        bytes[i] = static_cast<std::byte>((i * 7 + seed) % 251 + 1);
    }
    return bytes;
}

std::vector<std::byte> zeros(std::size_t length) { return std::vector<std::byte>(length, std::byte{0}); }

/// A write of `data` at offset 0 whose completion submits it again at the next offset, until it
/// has completed `limit` times.
struct chained_write {
    chained_write(ram_backend& target, std::vector<std::byte> bytes, int times)
        : backend{&target}, data{std::move(bytes)}, limit{times}
    {
        segments[0] = io_segment{data.data(), data.size()};
        request = block_request{.operation = block_operation::write,
                                .offset = 0,
                                .length = data.size(),
                                .segments = segments,
                                .complete =
                                    [](block_request& done, block_status status) {
                                        auto* self = static_cast<chained_write*>(done.context);
                                        EXPECT_EQ(status, block_status::success);
                                        if (++self->completions < self->limit) {
                                            done.offset += self->data.size();
                                            self->backend->submit(done);
                                        }
                                    },
                                .context = this};
    }
    chained_write(const chained_write&) = delete;
    chained_write& operator=(const chained_write&) = delete;

    ram_backend* backend;
    std::vector<std::byte> data;
    int limit;
    std::array<io_segment, 1> segments{};
    int completions = 0;
    block_request request{};
};

} // namespace

TEST(ram_backend, starts_empty_with_the_given_capacity)
{
    const ram_backend backend{tib};
    EXPECT_EQ(backend.capacity_bytes(), tib);
    EXPECT_EQ(backend.chunk_size(), 64 * kib);
    EXPECT_EQ(backend.bytes_allocated(), 0U);
    EXPECT_FALSE(backend.has_volatile_cache());
    EXPECT_EQ(backend.outstanding(), 0U);
}

TEST(ram_backend, rejects_bad_chunk_sizes_and_oversized_tables)
{
    EXPECT_THROW(ram_backend(4096, {.chunk_size = 0}), std::invalid_argument);
    EXPECT_THROW(ram_backend(4096, {.chunk_size = 256}), std::invalid_argument);
    EXPECT_THROW(ram_backend(4096, {.chunk_size = 3000}), std::invalid_argument);
    EXPECT_THROW(ram_backend(4096, {.chunk_size = std::size_t{1} << 31}), std::invalid_argument);
    EXPECT_NO_THROW(ram_backend(4096, {.chunk_size = 512}));
    EXPECT_NO_THROW(ram_backend(4096, {.chunk_size = std::size_t{1} << 30}));
    EXPECT_THROW(ram_backend(std::numeric_limits<std::uint64_t>::max(), {.chunk_size = 512}),
                 std::invalid_argument);
    const std::uint64_t largest = ram_backend::max_top_entries * ram_backend::leaf_entries * 512;
    EXPECT_THROW(ram_backend(largest + 1, {.chunk_size = 512}), std::invalid_argument);
}

TEST(ram_backend, a_zero_capacity_backend_accepts_only_empty_ranges)
{
    ram_backend backend{0};
    EXPECT_EQ(run(backend, block_operation::read, 0, 0).status, block_status::success);
    EXPECT_EQ(run(backend, block_operation::write_zeroes, 0, 1).status, block_status::out_of_range);
    EXPECT_EQ(run(backend, block_operation::flush, 0, 0).status, block_status::success);
}

TEST(ram_backend, never_written_bytes_read_as_zeros_without_allocating)
{
    ram_backend backend{tib};
    EXPECT_EQ(read_bytes(backend, tib - 100, 100), zeros(100));
    EXPECT_EQ(read_bytes(backend, 0, 3 * 64 * kib), zeros(3 * 64 * kib));
    EXPECT_EQ(backend.bytes_allocated(), 0U);
}

TEST(ram_backend, data_written_across_chunks_and_segments_reads_back)
{
    ram_backend backend{8 * kib, {.chunk_size = 512}};
    auto first = pattern(300, 1);
    auto second = pattern(1000, 2);
    const std::array segments{io_segment{first.data(), first.size()},
                              io_segment{second.data(), second.size()}};
    const outcome written = run(backend, block_operation::write, 400, 1300, segments);
    EXPECT_EQ(written.calls, 1);
    EXPECT_EQ(written.status, block_status::success);
    EXPECT_EQ(backend.bytes_allocated(), 4U * 512);
    std::vector<std::byte> expected = zeros(400);
    expected.insert(expected.end(), first.begin(), first.end());
    expected.insert(expected.end(), second.begin(), second.end());
    expected.resize(2048, std::byte{0});
    EXPECT_EQ(read_bytes(backend, 0, 2048), expected);
    std::vector<std::byte> head(700);
    std::vector<std::byte> tail(1348);
    const std::array read_segments{io_segment{head.data(), head.size()},
                                   io_segment{tail.data(), tail.size()}};
    EXPECT_EQ(run(backend, block_operation::read, 0, 2048, read_segments).status, block_status::success);
    EXPECT_EQ(head, std::vector<std::byte>(expected.begin(), expected.begin() + 700));
    EXPECT_EQ(tail, std::vector<std::byte>(expected.begin() + 700, expected.end()));
}

TEST(ram_backend, discard_segments_skip_their_bytes)
{
    ram_backend backend{4 * kib, {.chunk_size = 512}};
    auto data = pattern(1024, 3);
    ASSERT_EQ(write_bytes(backend, 0, data), block_status::success);
    std::vector<std::byte> kept(24, std::byte{0xee});
    const std::array segments{io_segment{nullptr, 1000}, io_segment{kept.data(), kept.size()},
                              io_segment{nullptr, 8}};
    const outcome result = run(backend, block_operation::read, 0, 1032, segments);
    EXPECT_EQ(result.calls, 1);
    EXPECT_EQ(result.status, block_status::success);
    EXPECT_EQ(kept, std::vector<std::byte>(data.begin() + 1000, data.end()));
}

TEST(ram_backend, sparse_accounting_of_a_one_tib_backend)
{
    ram_backend backend{tib};
    auto small = pattern(10, 4);
    auto straddling = pattern(16, 5);
    ASSERT_EQ(write_bytes(backend, 5, small), block_status::success);
    EXPECT_EQ(backend.bytes_allocated(), 64 * kib);
    ASSERT_EQ(write_bytes(backend, 100, small), block_status::success);
    EXPECT_EQ(backend.bytes_allocated(), 64 * kib);
    ASSERT_EQ(write_bytes(backend, 512 * kib * kib - 8, straddling), block_status::success);
    EXPECT_EQ(backend.bytes_allocated(), 3 * 64 * kib);
    EXPECT_EQ(read_bytes(backend, 512 * kib * kib - 8, 16), straddling);
    EXPECT_EQ(read_bytes(backend, 5, 10), small);
}

TEST(ram_backend, the_last_chunk_is_only_as_long_as_the_capacity)
{
    ram_backend backend{64 * kib + 1000};
    auto data = pattern(8, 6);
    ASSERT_EQ(write_bytes(backend, 64 * kib + 992, data), block_status::success);
    EXPECT_EQ(backend.bytes_allocated(), 1000U);
    EXPECT_EQ(read_bytes(backend, 64 * kib + 992, 8), data);
    EXPECT_EQ(run(backend, block_operation::deallocate, 64 * kib, 1000).status, block_status::success);
    EXPECT_EQ(backend.bytes_allocated(), 0U);
}

TEST(ram_backend, deallocating_whole_chunks_frees_them_and_partial_ones_zero_bytes)
{
    for (const block_operation operation : {block_operation::deallocate, block_operation::write_zeroes}) {
        ram_backend backend{4 * kib, {.chunk_size = 512}};
        auto data = pattern(2048, 7);
        ASSERT_EQ(write_bytes(backend, 0, data), block_status::success);
        EXPECT_EQ(backend.bytes_allocated(), 2048U);
        const outcome result = run(backend, operation, 500, 1100);
        EXPECT_EQ(result.calls, 1);
        EXPECT_EQ(result.status, block_status::success);
        EXPECT_EQ(backend.bytes_allocated(), 2U * 512) << "chunks [512, 1024) and [1024, 1536) are freed";
        std::vector<std::byte> expected = data;
        std::fill(expected.begin() + 500, expected.begin() + 1600, std::byte{0});
        EXPECT_EQ(read_bytes(backend, 0, 2048), expected);
    }
}

TEST(ram_backend, zeroing_never_written_chunks_allocates_nothing)
{
    ram_backend backend{4 * kib, {.chunk_size = 512}};
    EXPECT_EQ(run(backend, block_operation::write_zeroes, 100, 2000).status, block_status::success);
    EXPECT_EQ(run(backend, block_operation::deallocate, 0, 4 * kib).status, block_status::success);
    EXPECT_EQ(backend.bytes_allocated(), 0U);
}

TEST(ram_backend, preallocate_allocates_everything_and_never_frees)
{
    ram_backend backend{4 * kib + 100, {.chunk_size = 512, .preallocate = true}};
    EXPECT_EQ(backend.bytes_allocated(), 4 * kib + 100);
    EXPECT_EQ(read_bytes(backend, 0, 4 * kib + 100), zeros(4 * kib + 100));
    auto data = pattern(2048, 8);
    ASSERT_EQ(write_bytes(backend, 0, data), block_status::success);
    EXPECT_EQ(run(backend, block_operation::deallocate, 0, 1024).status, block_status::success);
    EXPECT_EQ(run(backend, block_operation::write_zeroes, 1024, 512).status, block_status::success);
    EXPECT_EQ(backend.bytes_allocated(), 4 * kib + 100);
    std::vector<std::byte> expected = zeros(1536);
    expected.insert(expected.end(), data.begin() + 1536, data.end());
    EXPECT_EQ(read_bytes(backend, 0, 2048), expected);
}

TEST(ram_backend, huge_page_chunks_hold_the_same_data_and_are_freed_alike)
{
    // Two 2 MiB chunks (huge-page aligned) and a last one of 512 bytes (cache-line aligned).
    const std::uint64_t mib = kib * kib;
    ram_backend backend{4 * mib + 512, {.chunk_size = 2 * mib, .huge_pages = true}};
    EXPECT_TRUE(backend.options().huge_pages);
    auto data = pattern(8 * kib, 9);
    ASSERT_EQ(write_bytes(backend, 2 * mib - 4 * kib, data), block_status::success);
    auto tail = pattern(512, 10);
    ASSERT_EQ(write_bytes(backend, 4 * mib, tail), block_status::success);
    EXPECT_EQ(backend.bytes_allocated(), 4 * mib + 512);
    EXPECT_EQ(read_bytes(backend, 2 * mib - 4 * kib, 8 * kib), data);
    EXPECT_EQ(read_bytes(backend, 4 * mib, 512), tail);
    EXPECT_EQ(read_bytes(backend, 0, 4 * kib), zeros(4 * kib)) << "a fresh chunk is zero-filled";
    EXPECT_EQ(run(backend, block_operation::deallocate, 0, 2 * mib).status, block_status::success);
    EXPECT_EQ(backend.bytes_allocated(), 2 * mib + 512);
    std::vector<std::byte> expected = zeros(4 * kib);
    expected.insert(expected.end(), data.begin() + 4 * kib, data.end());
    EXPECT_EQ(read_bytes(backend, 2 * mib - 4 * kib, 8 * kib), expected);
    ram_backend moved{std::move(backend)};
    EXPECT_EQ(read_bytes(moved, 4 * mib, 512), tail);
}

TEST(ram_backend, out_of_range_requests_touch_nothing)
{
    ram_backend backend{4 * kib, {.chunk_size = 512}};
    auto data = pattern(16, 9);
    const std::array segments{io_segment{data.data(), data.size()}};
    EXPECT_EQ(run(backend, block_operation::write, 4 * kib - 8, 16, segments).status,
              block_status::out_of_range);
    EXPECT_EQ(
        run(backend, block_operation::write, std::numeric_limits<std::uint64_t>::max() - 4, 16, segments)
            .status,
        block_status::out_of_range);
    EXPECT_EQ(backend.bytes_allocated(), 0U);
    std::vector<std::byte> untouched(16, std::byte{0xee});
    const std::array read_segments{io_segment{untouched.data(), untouched.size()}};
    EXPECT_EQ(run(backend, block_operation::read, 4 * kib - 8, 16, read_segments).status,
              block_status::out_of_range);
    EXPECT_EQ(untouched, std::vector<std::byte>(16, std::byte{0xee}));
    EXPECT_EQ(run(backend, block_operation::deallocate, 4 * kib, 1).status, block_status::out_of_range);
}

TEST(ram_backend, a_write_with_a_null_segment_is_an_internal_error_and_allocates_nothing)
{
    ram_backend backend{4 * kib};
    const std::array segments{io_segment{nullptr, 16}};
    const outcome result = run(backend, block_operation::write, 0, 16, segments);
    EXPECT_EQ(result.calls, 1);
    EXPECT_EQ(result.status, block_status::internal_error);
    EXPECT_EQ(backend.bytes_allocated(), 0U);
}

TEST(ram_backend, flush_and_poll_do_nothing)
{
    ram_backend backend{4 * kib};
    const outcome result = run(backend, block_operation::flush, 0, 0);
    EXPECT_EQ(result.calls, 1);
    EXPECT_EQ(result.status, block_status::success);
    EXPECT_EQ(backend.poll(), 0U);
}

TEST(ram_backend, a_completion_may_submit_the_next_request)
{
    ram_backend backend{4 * kib, {.chunk_size = 512}};
    chained_write chain{backend, {std::byte{1}, std::byte{2}, std::byte{3}, std::byte{4}}, 3};
    backend.submit(chain.request);
    EXPECT_EQ(chain.completions, 3);
    EXPECT_EQ(read_bytes(backend, 0, 13),
              (std::vector<std::byte>{std::byte{1}, std::byte{2}, std::byte{3}, std::byte{4}, std::byte{1},
                                      std::byte{2}, std::byte{3}, std::byte{4}, std::byte{1}, std::byte{2},
                                      std::byte{3}, std::byte{4}, std::byte{0}}));
}

TEST(ram_backend, moving_keeps_the_data)
{
    ram_backend backend{4 * kib, {.chunk_size = 512}};
    auto data = pattern(8, 10);
    ASSERT_EQ(write_bytes(backend, 1020, data), block_status::success);
    ram_backend moved{std::move(backend)};
    EXPECT_EQ(moved.capacity_bytes(), 4 * kib);
    EXPECT_EQ(moved.bytes_allocated(), 1024U);
    EXPECT_EQ(read_bytes(moved, 1020, 8), data);
}

TEST(ram_backend, move_assignment_frees_the_target_and_leaves_the_source_without_capacity)
{
    ram_backend target{8 * kib, {.chunk_size = 512}};
    auto old_data = pattern(1024, 11);
    ASSERT_EQ(write_bytes(target, 0, old_data), block_status::success);
    ram_backend source{4 * kib, {.chunk_size = 1024}};
    auto data = pattern(100, 12);
    ASSERT_EQ(write_bytes(source, 2000, data), block_status::success);
    target = std::move(source);
    EXPECT_EQ(target.capacity_bytes(), 4 * kib);
    EXPECT_EQ(target.chunk_size(), 1024U);
    EXPECT_EQ(target.bytes_allocated(), 2048U);
    EXPECT_EQ(read_bytes(target, 2000, 100), data);
    EXPECT_EQ(read_bytes(target, 0, 1024), zeros(1024));
    EXPECT_EQ(source.capacity_bytes(), 0U);
    EXPECT_EQ(source.bytes_allocated(), 0U);
    EXPECT_EQ(write_bytes(source, 0, data), block_status::out_of_range)
        << "a moved-from backend holds no storage";
}

TEST(ram_backend, concurrent_mode_zeroes_whole_chunks_instead_of_freeing_them)
{
    for (const block_operation operation : {block_operation::deallocate, block_operation::write_zeroes}) {
        ram_backend backend{4 * kib, {.chunk_size = 512, .concurrent = true}};
        auto data = pattern(2048, 13);
        ASSERT_EQ(write_bytes(backend, 0, data), block_status::success);
        EXPECT_EQ(run(backend, operation, 500, 1100).status, block_status::success);
        EXPECT_EQ(backend.bytes_allocated(), 2048U) << "no chunk is freed";
        std::vector<std::byte> expected = data;
        std::fill(expected.begin() + 500, expected.begin() + 1600, std::byte{0});
        EXPECT_EQ(read_bytes(backend, 0, 2048), expected);
        EXPECT_EQ(run(backend, operation, 0, 4 * kib).status, block_status::success);
        EXPECT_EQ(backend.bytes_allocated(), 2048U);
        EXPECT_EQ(read_bytes(backend, 0, 4 * kib), zeros(4 * kib));
        ASSERT_EQ(write_bytes(backend, 512, data), block_status::success);
        EXPECT_EQ(backend.bytes_allocated(), 2560U) << "only the never-written chunk [2048, 2560) is new";
    }
}

TEST(ram_backend, copy_non_temporal_copies_exactly_the_bytes_at_every_alignment_and_length)
{
    // Source and destination offsets 0-17 and 63-65 from a 64-byte boundary, lengths around the
    // 16- and 64-byte steps; the guard bytes around the destination must stay untouched.
    constexpr std::size_t guard = 80;
    const auto source = pattern(4096 + 2 * guard, 21);
    for (const std::size_t length : {0, 1, 15, 16, 17, 63, 64, 65, 127, 128, 129, 200, 512, 4095, 4096}) {
        for (const std::size_t destination_offset : {0, 1, 8, 15, 16, 17, 63, 64, 65}) {
            for (const std::size_t source_offset : {0, 3, 16}) {
                alignas(64) std::array<std::byte, 4096 + 2 * guard> target{};
                target.fill(std::byte{0xee});
                nvmekit::detail::copy_non_temporal(target.data() + destination_offset,
                                                   source.data() + source_offset, length);
                nvmekit::detail::non_temporal_fence();
                for (std::size_t i = 0; i < target.size(); ++i) {
                    const bool inside = i >= destination_offset && i < destination_offset + length;
                    const std::byte expected =
                        inside ? source[source_offset + i - destination_offset] : std::byte{0xee};
                    ASSERT_EQ(target[i], expected)
                        << "length " << length << ", destination offset " << destination_offset
                        << ", source offset " << source_offset << ", byte " << i;
                }
            }
        }
    }
}

TEST(ram_backend, non_temporal_writes_hold_the_same_data)
{
    // Pieces that split across 512-byte chunks at odd places, from segments of odd sizes.
    ram_backend plain{8 * kib, {.chunk_size = 512}};
    ram_backend streaming{8 * kib, {.chunk_size = 512, .non_temporal_writes = true}};
    EXPECT_TRUE(streaming.options().non_temporal_writes);
    EXPECT_FALSE(plain.options().non_temporal_writes) << "off by default";
    auto first = pattern(1000, 22);
    auto second = pattern(3, 23);
    auto third = pattern(2100, 24);
    const std::array segments{io_segment{first.data(), first.size()},
                              io_segment{second.data(), second.size()},
                              io_segment{third.data(), third.size()}};
    const std::uint64_t length = first.size() + second.size() + third.size();
    for (const std::uint64_t offset : {std::uint64_t{0}, std::uint64_t{77}, 4 * kib + 1}) {
        EXPECT_EQ(run(plain, block_operation::write, offset, length, segments).status, block_status::success);
        EXPECT_EQ(
            nvmekit_test::run_polled(streaming, block_operation::write, offset, length, segments).status,
            block_status::success);
        EXPECT_EQ(read_bytes(streaming, 0, 8 * kib), read_bytes(plain, 0, 8 * kib)) << "offset " << offset;
    }
    std::vector<std::byte> expected = first;
    expected.insert(expected.end(), second.begin(), second.end());
    expected.insert(expected.end(), third.begin(), third.end());
    EXPECT_EQ(read_bytes(streaming, 4 * kib + 1, length), expected);
}

TEST(ram_backend, streamed_writes_complete_in_the_next_poll_after_one_fence)
{
    ram_backend backend{8 * kib, {.chunk_size = 512, .non_temporal_writes = true}};
    auto first = pattern(1000, 25);
    auto second = pattern(700, 26);
    const std::array first_segments{io_segment{first.data(), first.size()}};
    const std::array second_segments{io_segment{second.data(), second.size()}};
    nvmekit_test::recorded_request one{block_operation::write, 100, first.size(), first_segments};
    nvmekit_test::recorded_request two{block_operation::write, 3000, second.size(), second_segments};
    backend.submit(one.request);
    backend.submit(two.request);
    EXPECT_EQ(one.result.calls, 0);
    EXPECT_EQ(two.result.calls, 0);
    EXPECT_EQ(backend.outstanding(), 2U);
    EXPECT_EQ(read_bytes(backend, 100, first.size()), first)
        << "the submitting thread reads its data at once";
    EXPECT_EQ(run(backend, block_operation::write, 8 * kib - 10, first.size(), first_segments).status,
              block_status::out_of_range)
        << "a failed write completes inside submit()";
    EXPECT_EQ(backend.outstanding(), 2U);
    EXPECT_EQ(backend.poll(), 2U);
    EXPECT_EQ(one.result.calls, 1);
    EXPECT_EQ(one.result.status, block_status::success);
    EXPECT_EQ(two.result.calls, 1);
    EXPECT_EQ(backend.outstanding(), 0U);
    EXPECT_EQ(backend.poll(), 0U);
    EXPECT_EQ(read_bytes(backend, 3000, second.size()), second);
    EXPECT_EQ(one.result.calls, 1) << "completed once only";
}

TEST(ram_backend, a_streamed_write_submitted_by_a_completion_waits_for_the_next_poll)
{
    ram_backend backend{4 * kib, {.chunk_size = 512, .non_temporal_writes = true}};
    chained_write chain{backend, pattern(100, 27), 2};
    backend.submit(chain.request);
    EXPECT_EQ(backend.poll(), 1U);
    EXPECT_EQ(chain.completions, 1);
    EXPECT_EQ(backend.outstanding(), 1U) << "the write the completion submitted";
    ram_backend moved{std::move(backend)};
    EXPECT_EQ(moved.outstanding(), 1U) << "a move takes the waiting writes along";
    EXPECT_EQ(backend.outstanding(), 0U);
    EXPECT_EQ(moved.poll(), 1U);
    EXPECT_EQ(chain.completions, 2);
    std::vector<std::byte> expected = chain.data;
    expected.insert(expected.end(), chain.data.begin(), chain.data.end());
    EXPECT_EQ(read_bytes(moved, 0, 200), expected);
}

TEST(ram_backend, concurrent_streamed_writes_complete_inside_submit)
{
    // submit() and poll() may run on different threads, and a fence orders only its own thread's
    // stores: each write is fenced and completed at once.
    ram_backend backend{4 * kib, {.chunk_size = 512, .concurrent = true, .non_temporal_writes = true}};
    auto data = pattern(1500, 28);
    const std::array segments{io_segment{data.data(), data.size()}};
    const outcome result = run(backend, block_operation::write, 7, data.size(), segments);
    EXPECT_EQ(result.calls, 1);
    EXPECT_EQ(result.status, block_status::success);
    EXPECT_EQ(backend.outstanding(), 0U);
    EXPECT_EQ(read_bytes(backend, 7, data.size()), data);
}

TEST(ram_backend, submit_inline_returns_the_status_except_for_a_streamed_write_left_for_poll)
{
    ram_backend plain{4 * kib, {.chunk_size = 512}};
    auto data = pattern(600, 29);
    const std::array segments{io_segment{data.data(), data.size()}};
    const auto written = nvmekit_test::run_inline(plain, block_operation::write, 10, data.size(), segments);
    EXPECT_EQ(written.returned, block_status::success);
    EXPECT_EQ(written.callback.calls, 0);
    EXPECT_EQ(read_bytes(plain, 10, data.size()), data);
    const auto beyond =
        nvmekit_test::run_inline(plain, block_operation::read, 4 * kib - 10, data.size(), segments);
    EXPECT_EQ(beyond.returned, block_status::out_of_range);
    EXPECT_EQ(beyond.callback.calls, 0);

    ram_backend streaming{4 * kib, {.chunk_size = 512, .non_temporal_writes = true}};
    nvmekit_test::recorded_request one{block_operation::write, 20, data.size(), segments};
    EXPECT_EQ(streaming.submit_inline(one.request), std::nullopt) << "completes in poll()";
    EXPECT_EQ(one.result.calls, 0);
    EXPECT_EQ(streaming.outstanding(), 1U);
    EXPECT_EQ(streaming.poll(), 1U);
    EXPECT_EQ(one.result.calls, 1);
    EXPECT_EQ(one.result.status, block_status::success);
    const auto read = nvmekit_test::run_inline(streaming, block_operation::read, 20, data.size(), segments);
    EXPECT_EQ(read.returned, block_status::success) << "only streamed writes wait for poll()";
    EXPECT_EQ(read_bytes(streaming, 20, data.size()), data);
}
