#include <nvmekit/testing/test_backend.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <memory>
#include <numeric>
#include <span>
#include <stdexcept>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <nvmekit/contracts/clock.hpp>
#include <nvmekit/testing/manual_clock.hpp>

using namespace std::chrono_literals;
using nvmekit::block_operation;
using nvmekit::block_request;
using nvmekit::block_status;
using nvmekit::io_segment;
using nvmekit::testing::block_request_record;
using nvmekit::testing::manual_clock;
using nvmekit::testing::test_backend;
using nvmekit::testing::test_backend_options;

static_assert(nvmekit::BlockBackend<test_backend<>>);
static_assert(nvmekit::check_block_backend<test_backend<manual_clock>>());
static_assert(nvmekit::check_block_backend<test_backend<nvmekit::steady_clock>>());

namespace {

/// Completion order, shared by the requests of one test.
struct journal {
    std::vector<int> order;
    std::vector<block_status> statuses;
};

/// A request that notes its id and status in a journal when it completes.
struct tracked_request {
    tracked_request(journal& log, int id, block_operation operation, std::uint64_t offset,
                    std::uint64_t length, std::span<const io_segment> segments = {}, bool fua = false)
        : log{&log}, id{id}
    {
        request = block_request{.operation = operation,
                                .force_unit_access = fua,
                                .offset = offset,
                                .length = length,
                                .segments = segments,
                                .complete =
                                    [](block_request& done, block_status status) {
                                        auto* self = static_cast<tracked_request*>(done.context);
                                        self->log->order.push_back(self->id);
                                        self->log->statuses.push_back(status);
                                    },
                                .context = this};
    }
    tracked_request(const tracked_request&) = delete;
    tracked_request& operator=(const tracked_request&) = delete;

    journal* log;
    int id;
    block_request request{};
};

/// A request that may complete on another thread: it counts its completions and keeps the last
/// status, published by the release increment of `completions`.
struct shared_request {
    shared_request()
    {
        request.complete = [](block_request& done, block_status result) {
            auto* self = static_cast<shared_request*>(done.context);
            self->status = result;
            self->completions.fetch_add(1, std::memory_order_release);
        };
        request.context = this;
    }
    shared_request(const shared_request&) = delete;
    shared_request& operator=(const shared_request&) = delete;

    block_request request{};
    block_status status = block_status::internal_error;
    std::atomic<int> completions{0};
};

std::vector<std::byte> bytes_of(std::initializer_list<int> values)
{
    std::vector<std::byte> bytes;
    for (const int value : values) {
        bytes.push_back(static_cast<std::byte>(value));
    }
    return bytes;
}

} // namespace

TEST(test_backend, rejects_bad_configuration)
{
    const manual_clock clock;
    EXPECT_THROW(test_backend(clock, 4096, 0), std::invalid_argument);
    EXPECT_THROW(test_backend(clock, 4096, 1, {.delay = -1ns}), std::invalid_argument);
    EXPECT_THROW(test_backend(clock, 4096, 1, {.jitter = -1ns}), std::invalid_argument);
    EXPECT_THROW(test_backend(clock, 4096, 1, {.chunk_size = 100}), std::invalid_argument);
    test_backend backend{clock, 4096, 1};
    EXPECT_THROW(backend.add_media_error(0, 0), std::invalid_argument);
    EXPECT_THROW(backend.fail_nth(0, block_status::write_fault), std::invalid_argument);
    EXPECT_THROW(backend.fail_nth(1, block_status::success), std::invalid_argument);
}

TEST(test_backend, reports_its_capacity_and_cache_option)
{
    const manual_clock clock;
    const test_backend plain{clock, 12288, 4};
    EXPECT_EQ(plain.capacity_bytes(), 12288U);
    EXPECT_FALSE(plain.has_volatile_cache());
    EXPECT_EQ(plain.outstanding(), 0U);
    const test_backend cached{clock, 4096, 4, {.volatile_cache = true}};
    EXPECT_TRUE(cached.has_volatile_cache());
}

TEST(test_backend, completes_only_in_poll_once_the_delay_has_passed)
{
    manual_clock clock;
    test_backend backend{clock, 4096, 4, {.delay = 10us}};
    journal log;
    tracked_request flush{log, 1, block_operation::flush, 0, 0};
    clock.advance(5us);
    backend.submit(flush.request);
    EXPECT_TRUE(log.order.empty());
    EXPECT_EQ(backend.outstanding(), 1U);
    EXPECT_EQ(backend.poll(), 0U);
    clock.advance(10us - 1ns);
    EXPECT_EQ(backend.poll(), 0U);
    EXPECT_TRUE(log.order.empty());
    clock.advance(1ns);
    EXPECT_EQ(backend.poll(), 1U);
    EXPECT_EQ(log.order, std::vector<int>{1});
    EXPECT_EQ(log.statuses, std::vector<block_status>{block_status::success});
    EXPECT_EQ(backend.outstanding(), 0U);
    EXPECT_EQ(backend.poll(), 0U);
}

TEST(test_backend, a_zero_delay_still_waits_for_poll)
{
    manual_clock clock;
    test_backend backend{clock, 4096, 4};
    journal log;
    tracked_request flush{log, 1, block_operation::flush, 0, 0};
    backend.submit(flush.request);
    EXPECT_TRUE(log.order.empty());
    EXPECT_EQ(backend.poll(), 1U);
    EXPECT_EQ(log.order, std::vector<int>{1});
}

TEST(test_backend, completes_out_of_order_by_due_time_then_submission)
{
    manual_clock clock;
    test_backend backend{clock, 4096, 8};
    backend.set_delay_function([](const block_request& request) {
        return std::chrono::nanoseconds{static_cast<std::int64_t>(request.offset)};
    });
    journal log;
    tracked_request a{log, 1, block_operation::deallocate, 30, 1};
    tracked_request b{log, 2, block_operation::deallocate, 10, 1};
    tracked_request c{log, 3, block_operation::deallocate, 20, 1};
    tracked_request d{log, 4, block_operation::deallocate, 10, 2};
    for (tracked_request* request : {&a, &b, &c, &d}) {
        backend.submit(request->request);
    }
    clock.advance(15ns);
    EXPECT_EQ(backend.poll(), 2U);
    EXPECT_EQ(log.order, (std::vector<int>{2, 4}));
    EXPECT_EQ(backend.outstanding(), 2U);
    clock.advance(15ns);
    EXPECT_EQ(backend.poll(), 2U);
    EXPECT_EQ(log.order, (std::vector<int>{2, 4, 3, 1}));
    EXPECT_EQ(log.statuses, std::vector<block_status>(4, block_status::success));
}

TEST(test_backend, an_empty_delay_function_restores_the_options_and_negative_delays_count_as_zero)
{
    manual_clock clock;
    test_backend backend{clock, 4096, 8, {.delay = 50ns}};
    backend.set_delay_function([](const block_request&) { return -5ns; });
    journal log;
    tracked_request first{log, 1, block_operation::flush, 0, 0};
    backend.submit(first.request);
    EXPECT_EQ(backend.poll(), 1U);
    backend.set_delay_function({});
    tracked_request second{log, 2, block_operation::flush, 0, 0};
    backend.submit(second.request);
    clock.advance(49ns);
    EXPECT_EQ(backend.poll(), 0U);
    clock.advance(1ns);
    EXPECT_EQ(backend.poll(), 1U);
    EXPECT_EQ(log.order, (std::vector<int>{1, 2}));
}

TEST(test_backend, jitter_is_bounded_and_repeats_with_the_seed)
{
    auto completion_order = [](std::uint64_t seed) {
        manual_clock clock;
        test_backend backend{clock, 4096, 32, {.delay = 100ns, .jitter = 50ns, .seed = seed}};
        journal log;
        std::vector<std::unique_ptr<tracked_request>> requests;
        for (int id = 0; id < 20; ++id) {
            requests.push_back(std::make_unique<tracked_request>(log, id, block_operation::flush, 0, 0));
            backend.submit(requests.back()->request);
        }
        clock.advance(99ns);
        EXPECT_EQ(backend.poll(), 0U);
        std::size_t completed = 0;
        for (int step = 0; step <= 50; ++step) {
            clock.advance(1ns);
            completed += backend.poll();
        }
        EXPECT_EQ(completed, 20U);
        EXPECT_EQ(backend.outstanding(), 0U);
        return log.order;
    };
    const std::vector<int> first = completion_order(7);
    EXPECT_EQ(completion_order(7), first);
    std::vector<int> submission(20);
    std::iota(submission.begin(), submission.end(), 0);
    EXPECT_NE(first, submission);
    std::vector<int> sorted = first;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, submission);
    EXPECT_NE(completion_order(8), first);
}

TEST(test_backend, runs_requests_against_ram_storage_at_completion)
{
    manual_clock clock;
    test_backend backend{clock, 8192, 4, {.delay = 1us}};
    auto data = bytes_of({1, 2, 3, 4, 5, 6, 7, 8});
    const std::array write_segments{io_segment{data.data(), data.size()}};
    journal log;
    tracked_request write{log, 1, block_operation::write, 4092, 8, write_segments, true};
    backend.submit(write.request);
    std::vector<std::byte> stored(8, std::byte{0xee});
    backend.peek(4092, stored);
    EXPECT_EQ(stored, std::vector<std::byte>(8, std::byte{0})) << "nothing stored before completion";
    clock.advance(1us);
    EXPECT_EQ(backend.poll(), 1U);
    backend.peek(4092, stored);
    EXPECT_EQ(stored, data);

    std::vector<std::byte> head(3, std::byte{0xee});
    std::vector<std::byte> tail(2, std::byte{0xee});
    const std::array read_segments{io_segment{head.data(), head.size()}, io_segment{nullptr, 3},
                                   io_segment{tail.data(), tail.size()}};
    tracked_request read{log, 2, block_operation::read, 4092, 8, read_segments};
    backend.submit(read.request);
    clock.advance(1us);
    EXPECT_EQ(backend.poll(), 1U);
    EXPECT_EQ(head, bytes_of({1, 2, 3}));
    EXPECT_EQ(tail, bytes_of({7, 8}));

    tracked_request zeroes{log, 3, block_operation::write_zeroes, 4094, 2};
    backend.submit(zeroes.request);
    clock.advance(1us);
    EXPECT_EQ(backend.poll(), 1U);
    backend.peek(4092, stored);
    EXPECT_EQ(stored, bytes_of({1, 2, 0, 0, 5, 6, 7, 8}));
    EXPECT_EQ(log.statuses, std::vector<block_status>(3, block_status::success));
    EXPECT_EQ(backend.storage().bytes_allocated(), 8192U);
}

TEST(test_backend, preload_and_peek_bypass_everything_and_check_the_range)
{
    manual_clock clock;
    test_backend backend{clock, 4096, 1};
    const auto data = bytes_of({9, 8, 7});
    backend.preload(4093, data);
    std::vector<std::byte> read(3);
    backend.peek(4093, read);
    EXPECT_EQ(read, data);
    EXPECT_THROW(backend.preload(4094, data), std::out_of_range);
    EXPECT_THROW(backend.peek(std::numeric_limits<std::uint64_t>::max(), read), std::out_of_range);
    EXPECT_TRUE(backend.records().empty());
    EXPECT_EQ(backend.submitted(), 0U);
}

TEST(test_backend, reads_overlapping_a_media_error_range_fail_and_copy_nothing)
{
    manual_clock clock;
    test_backend backend{clock, 8192, 8};
    backend.preload(0, std::vector<std::byte>(8192, std::byte{0x11}));
    backend.add_media_error(1000, 24);
    backend.add_media_error(std::numeric_limits<std::uint64_t>::max() - 1, 10);
    std::vector<std::byte> buffer(16, std::byte{0xee});
    const std::array segments{io_segment{buffer.data(), buffer.size()}};
    journal log;
    tracked_request before{log, 1, block_operation::read, 984, 16, segments};
    tracked_request overlapping_start{log, 2, block_operation::read, 985, 16, segments};
    tracked_request overlapping_end{log, 3, block_operation::read, 1023, 16, segments};
    tracked_request after{log, 4, block_operation::read, 1024, 16, segments};
    for (tracked_request* request : {&overlapping_start, &overlapping_end}) {
        backend.submit(request->request);
    }
    EXPECT_EQ(backend.poll(), 2U);
    EXPECT_EQ(log.statuses, (std::vector<block_status>{block_status::unrecovered_read_error,
                                                       block_status::unrecovered_read_error}));
    EXPECT_EQ(buffer, std::vector<std::byte>(16, std::byte{0xee}));
    for (tracked_request* request : {&before, &after}) {
        backend.submit(request->request);
    }
    EXPECT_EQ(backend.poll(), 2U);
    EXPECT_EQ(log.statuses[2], block_status::success);
    EXPECT_EQ(log.statuses[3], block_status::success);
    EXPECT_EQ(buffer, std::vector<std::byte>(16, std::byte{0x11}));

    auto fresh = std::vector<std::byte>(16, std::byte{0x22});
    const std::array write_segments{io_segment{fresh.data(), fresh.size()}};
    tracked_request write{log, 5, block_operation::write, 1000, 16, write_segments};
    backend.submit(write.request);
    EXPECT_EQ(backend.poll(), 1U);
    EXPECT_EQ(log.statuses[4], block_status::success);
    tracked_request again{log, 6, block_operation::read, 1000, 16, segments};
    backend.submit(again.request);
    EXPECT_EQ(backend.poll(), 1U);
    EXPECT_EQ(log.statuses[5], block_status::unrecovered_read_error) << "writes do not clear a media error";
    backend.clear_media_errors();
    tracked_request cleared{log, 7, block_operation::read, 1000, 16, segments};
    backend.submit(cleared.request);
    EXPECT_EQ(backend.poll(), 1U);
    EXPECT_EQ(log.statuses[6], block_status::success);
    EXPECT_EQ(buffer, fresh);
}

TEST(test_backend, fail_nth_fails_the_nth_request_from_now_without_touching_storage)
{
    manual_clock clock;
    test_backend backend{clock, 4096, 8};
    journal log;
    tracked_request early{log, 0, block_operation::flush, 0, 0};
    backend.submit(early.request);
    backend.fail_nth(2, block_status::write_fault);
    backend.fail_nth(3, block_status::internal_error);
    auto data = bytes_of({5, 5, 5, 5});
    const std::array segments{io_segment{data.data(), data.size()}};
    tracked_request first{log, 1, block_operation::write, 0, 4, segments};
    tracked_request second{log, 2, block_operation::write, 8, 4, segments};
    tracked_request third{log, 3, block_operation::write, 16, 2000, {}};
    tracked_request fourth{log, 4, block_operation::write, 24, 4, segments};
    for (tracked_request* request : {&first, &second, &third, &fourth}) {
        backend.submit(request->request);
    }
    EXPECT_EQ(backend.poll(), 5U);
    EXPECT_EQ(log.order, (std::vector<int>{0, 1, 2, 3, 4}));
    EXPECT_EQ(log.statuses, (std::vector<block_status>{block_status::success, block_status::success,
                                                       block_status::write_fault,
                                                       block_status::internal_error, block_status::success}));
    std::vector<std::byte> stored(28);
    backend.peek(0, stored);
    std::vector<std::byte> expected(28, std::byte{0});
    std::copy(data.begin(), data.end(), expected.begin());
    std::copy(data.begin(), data.end(), expected.begin() + 24);
    EXPECT_EQ(stored, expected);
}

TEST(test_backend, injected_failures_outrank_validation_which_outranks_media_errors)
{
    manual_clock clock;
    test_backend backend{clock, 4096, 8};
    backend.add_media_error(0, 4096);
    backend.fail_nth(1, block_status::write_fault);
    std::vector<std::byte> buffer(16);
    const std::array segments{io_segment{buffer.data(), buffer.size()}};
    journal log;
    tracked_request injected{log, 1, block_operation::read, 4090, 16, segments};
    tracked_request out_of_range{log, 2, block_operation::read, 4090, 16, segments};
    tracked_request media{log, 3, block_operation::read, 0, 16, segments};
    for (tracked_request* request : {&injected, &out_of_range, &media}) {
        backend.submit(request->request);
    }
    EXPECT_TRUE(log.order.empty()) << "even invalid requests complete in poll";
    EXPECT_EQ(backend.poll(), 3U);
    EXPECT_EQ(log.statuses, (std::vector<block_status>{block_status::write_fault, block_status::out_of_range,
                                                       block_status::unrecovered_read_error}));
}

TEST(test_backend, records_every_request_it_sees)
{
    manual_clock clock;
    test_backend backend{clock, 4096, 1};
    std::vector<std::byte> buffer(8);
    const std::array segments{io_segment{buffer.data(), buffer.size()}};
    journal log;
    tracked_request write{log, 1, block_operation::write, 8, 8, segments, true};
    tracked_request overflowing{log, 2, block_operation::deallocate, 100, 4000};
    tracked_request read{log, 3, block_operation::read, 4092, 8, segments};
    backend.submit(write.request);
    backend.submit(overflowing.request);
    EXPECT_EQ(backend.poll(), 1U);
    backend.submit(read.request);
    EXPECT_EQ(backend.poll(), 1U);
    EXPECT_EQ(backend.records(), (std::vector<block_request_record>{
                                     {block_operation::write, 8, 8, true},
                                     {block_operation::deallocate, 100, 4000, false},
                                     {block_operation::read, 4092, 8, false},
                                 }));
    EXPECT_EQ(backend.submitted(), 3U);
    backend.clear_records();
    EXPECT_TRUE(backend.records().empty());
    EXPECT_EQ(backend.submitted(), 3U);
}

TEST(test_backend, beyond_max_outstanding_submit_completes_inline_with_internal_error)
{
    manual_clock clock;
    test_backend backend{clock, 4096, 2, {.delay = 1ns}};
    journal log;
    tracked_request first{log, 1, block_operation::flush, 0, 0};
    tracked_request second{log, 2, block_operation::flush, 0, 0};
    tracked_request third{log, 3, block_operation::flush, 0, 0};
    tracked_request fourth{log, 4, block_operation::flush, 0, 0};
    backend.submit(first.request);
    backend.submit(second.request);
    backend.submit(third.request);
    EXPECT_EQ(log.order, std::vector<int>{3});
    EXPECT_EQ(log.statuses, std::vector<block_status>{block_status::internal_error});
    EXPECT_EQ(backend.outstanding(), 2U);
    EXPECT_EQ(backend.overflows(), 1U);
    clock.advance(1ns);
    EXPECT_EQ(backend.poll(), 2U);
    backend.submit(fourth.request);
    EXPECT_EQ(backend.outstanding(), 1U);
    clock.advance(1ns);
    EXPECT_EQ(backend.poll(), 1U);
    EXPECT_EQ(log.order, (std::vector<int>{3, 1, 2, 4}));
    EXPECT_EQ(log.statuses.back(), block_status::success);
    EXPECT_EQ(backend.overflows(), 1U);
}

TEST(test_backend, a_request_submitted_by_a_completion_waits_for_the_next_poll)
{
    manual_clock clock;
    test_backend backend{clock, 4096, 2};
    struct chain {
        test_backend<>* backend;
        int completions = 0;
        std::size_t outstanding_in_callback = 99;
    } state{&backend};
    block_request request{.operation = block_operation::flush,
                          .complete =
                              [](block_request& done, block_status) {
                                  auto* self = static_cast<chain*>(done.context);
                                  ++self->completions;
                                  self->outstanding_in_callback = self->backend->outstanding();
                                  self->backend->submit(done);
                              },
                          .context = &state};
    backend.submit(request);
    EXPECT_EQ(backend.poll(), 1U);
    EXPECT_EQ(state.completions, 1);
    EXPECT_EQ(state.outstanding_in_callback, 0U);
    EXPECT_EQ(backend.outstanding(), 1U);
    EXPECT_EQ(backend.poll(), 1U);
    EXPECT_EQ(state.completions, 2);
    EXPECT_EQ(backend.records().size(), 3U);
}

TEST(test_backend, several_threads_submit_while_one_polls)
{
    // 4 threads each write 400 distinct 64-byte ranges, 8 at a time, and read every batch back
    // once it completed; one thread advances the clock and polls meanwhile. Every request must
    // complete exactly once, with success, and every read must return what its range was given.
    constexpr int submitters = 4;
    constexpr int rounds = 50;
    constexpr int batch = 8;
    constexpr int per_thread = rounds * batch;
    constexpr std::size_t block = 64;
    constexpr std::uint64_t capacity = std::uint64_t{submitters} * per_thread * block;
    constexpr std::size_t max_outstanding = std::size_t{submitters} * batch;
    const auto pattern = [](int range, std::size_t byte) {
        return static_cast<std::byte>((static_cast<std::size_t>(range) * 131 + byte * 7 + 1) & 0xff);
    };

    manual_clock clock;
    test_backend backend{clock, capacity, max_outstanding, {.delay = 3us, .jitter = 4us, .seed = 11}};
    struct thread_state {
        std::unique_ptr<shared_request[]> writes = std::make_unique<shared_request[]>(per_thread);
        std::unique_ptr<shared_request[]> reads = std::make_unique<shared_request[]>(per_thread);
        std::vector<std::byte> written = std::vector<std::byte>(per_thread * block);
        std::vector<std::byte> read = std::vector<std::byte>(per_thread * block, std::byte{0xee});
        std::vector<io_segment> write_segments = std::vector<io_segment>(per_thread);
        std::vector<io_segment> read_segments = std::vector<io_segment>(per_thread);
    };
    std::array<thread_state, submitters> states;
    std::atomic<int> finished{0};

    const auto wait_for_batch = [](shared_request* first) {
        for (int index = 0; index < batch; ++index) {
            while (first[index].completions.load(std::memory_order_acquire) == 0) {
                std::this_thread::yield();
            }
        }
    };
    std::vector<std::thread> threads;
    for (int thread = 0; thread < submitters; ++thread) {
        threads.emplace_back([&, thread] {
            thread_state& state = states[static_cast<std::size_t>(thread)];
            for (int round = 0; round < rounds; ++round) {
                for (int index = round * batch; index < (round + 1) * batch; ++index) {
                    const int range = thread * per_thread + index;
                    const std::size_t at = static_cast<std::size_t>(index) * block;
                    for (std::size_t byte = 0; byte < block; ++byte) {
                        state.written[at + byte] = pattern(range, byte);
                    }
                    const auto offset = static_cast<std::uint64_t>(range) * block;
                    state.write_segments[static_cast<std::size_t>(index)] =
                        io_segment{&state.written[at], block};
                    block_request& write = state.writes[index].request;
                    write.operation = block_operation::write;
                    write.offset = offset;
                    write.length = block;
                    write.segments = std::span{&state.write_segments[static_cast<std::size_t>(index)], 1};
                    backend.submit(write);
                }
                wait_for_batch(&state.writes[round * batch]);
                for (int index = round * batch; index < (round + 1) * batch; ++index) {
                    const int range = thread * per_thread + index;
                    const std::size_t at = static_cast<std::size_t>(index) * block;
                    state.read_segments[static_cast<std::size_t>(index)] = io_segment{&state.read[at], block};
                    block_request& read = state.reads[index].request;
                    read.operation = block_operation::read;
                    read.offset = static_cast<std::uint64_t>(range) * block;
                    read.length = block;
                    read.segments = std::span{&state.read_segments[static_cast<std::size_t>(index)], 1};
                    backend.submit(read);
                }
                wait_for_batch(&state.reads[round * batch]);
            }
            finished.fetch_add(1, std::memory_order_release);
        });
    }

    std::uint64_t last_submitted = 0;
    std::uint64_t polls = 0;
    std::size_t completed = 0;
    while (finished.load(std::memory_order_acquire) < submitters) {
        clock.advance(1us);
        completed += backend.poll();
        const std::uint64_t submitted = backend.submitted();
        EXPECT_GE(submitted, last_submitted);
        last_submitted = submitted;
        EXPECT_LE(backend.outstanding(), max_outstanding);
        if (++polls % 64 == 0) {
            const std::size_t recorded = backend.records_snapshot().size();
            EXPECT_LE(recorded, backend.submitted()) << "a record without its submission";
            std::vector<std::byte> first(block);
            backend.peek(0, first);
        }
    }
    for (auto& thread : threads) {
        thread.join();
    }
    clock.advance(1s);
    EXPECT_EQ(backend.poll(), 0U) << "a request completed twice or came from nowhere";

    constexpr std::size_t total = std::size_t{2} * submitters * per_thread;
    EXPECT_EQ(completed, total);
    EXPECT_EQ(backend.submitted(), total);
    EXPECT_EQ(backend.records_snapshot().size(), total);
    EXPECT_EQ(backend.outstanding(), 0U);
    EXPECT_EQ(backend.overflows(), 0U);
    int wrong_count = 0;
    int failed = 0;
    for (const thread_state& state : states) {
        for (int index = 0; index < per_thread; ++index) {
            for (const shared_request* done : {&state.writes[index], &state.reads[index]}) {
                wrong_count += done->completions.load(std::memory_order_acquire) != 1 ? 1 : 0;
                failed += done->status != block_status::success ? 1 : 0;
            }
        }
        EXPECT_EQ(state.read, state.written) << "a read returned bytes of another range";
    }
    EXPECT_EQ(wrong_count, 0) << "requests not completed exactly once";
    EXPECT_EQ(failed, 0);
    std::vector<std::byte> stored(capacity);
    backend.peek(0, stored);
    std::vector<std::byte> expected;
    for (const thread_state& state : states) {
        expected.insert(expected.end(), state.written.begin(), state.written.end());
    }
    EXPECT_EQ(stored, expected);
}

TEST(test_backend, completion_callbacks_run_without_the_lock_so_other_threads_submit_meanwhile)
{
    // The first request's callback, on the polling thread, waits until another thread's submit()
    // has returned. Were the backend's mutex held during callbacks, that submit would block until
    // the wait gave up after 20 s and `saw_submit` would stay false. The request submitted during
    // poll() is left for the next one.
    manual_clock clock;
    test_backend backend{clock, 4096, 4};
    struct handshake {
        std::atomic<bool> in_callback{false};
        std::atomic<bool> submitted{false};
        bool saw_submit = false;
    } shake;
    block_request waiting{.operation = block_operation::flush,
                          .complete =
                              [](block_request& done, block_status) {
                                  auto* self = static_cast<handshake*>(done.context);
                                  self->in_callback.store(true, std::memory_order_release);
                                  const auto give_up = std::chrono::steady_clock::now() + 20s;
                                  while (!self->submitted.load(std::memory_order_acquire) &&
                                         std::chrono::steady_clock::now() < give_up) {
                                      std::this_thread::yield();
                                  }
                                  self->saw_submit = self->submitted.load(std::memory_order_acquire);
                              },
                          .context = &shake};
    shared_request late;
    late.request.operation = block_operation::flush;
    backend.submit(waiting);
    std::thread other{[&] {
        while (!shake.in_callback.load(std::memory_order_acquire)) {
            std::this_thread::yield();
        }
        backend.submit(late.request);
        shake.submitted.store(true, std::memory_order_release);
    }};
    EXPECT_EQ(backend.poll(), 1U);
    other.join();
    EXPECT_TRUE(shake.saw_submit) << "submit() blocked while a completion callback ran";
    EXPECT_EQ(late.completions.load(), 0) << "a request submitted during poll() completed in it";
    EXPECT_EQ(backend.outstanding(), 1U);
    EXPECT_EQ(backend.poll(), 1U);
    EXPECT_EQ(late.completions.load(), 1);
    EXPECT_EQ(late.status, block_status::success);
}

TEST(test_backend, callbacks_that_resubmit_do_not_deadlock_while_other_threads_use_the_backend)
{
    // 4 threads each start a chain: a flush whose callback, on the polling thread, submits it
    // again until it has completed 500 times, and reads the counters and records on the way.
    // Meanwhile another thread reconfigures the backend. Every chain must end with exactly 500
    // completions.
    constexpr int chains = 4;
    constexpr int links = 500;
    manual_clock clock;
    test_backend backend{clock, 4096, chains};
    struct chain {
        test_backend<>* backend = nullptr;
        std::atomic<int> completions{0};
        int failures = 0;
        block_request request{};
    };
    std::array<chain, chains> states;
    for (chain& state : states) {
        state.backend = &backend;
        state.request = block_request{.operation = block_operation::flush,
                                      .complete =
                                          [](block_request& done, block_status status) {
                                              auto* self = static_cast<chain*>(done.context);
                                              self->failures += status != block_status::success ? 1 : 0;
                                              const int count =
                                                  self->completions.load(std::memory_order_relaxed) + 1;
                                              (void)self->backend->records_snapshot();
                                              (void)self->backend->outstanding();
                                              if (count < links) {
                                                  self->backend->submit(done);
                                              }
                                              self->completions.store(count, std::memory_order_release);
                                          },
                                      .context = &state};
    }
    std::atomic<bool> stop{false};
    std::thread configurator{[&] {
        for (int turn = 0; !stop.load(std::memory_order_acquire); ++turn) {
            if (turn % 2 == 0) {
                backend.set_delay_function([](const block_request&) { return 1us; });
                backend.add_media_error(0, 512);
            } else {
                backend.set_delay_function({});
                backend.clear_media_errors();
            }
            std::this_thread::yield();
        }
    }};
    std::vector<std::thread> starters;
    for (chain& state : states) {
        starters.emplace_back([&state] { state.backend->submit(state.request); });
    }
    const auto all_done = [&] {
        return std::all_of(states.begin(), states.end(), [](const chain& state) {
            return state.completions.load(std::memory_order_acquire) == links;
        });
    };
    while (!all_done()) {
        clock.advance(1us);
        backend.poll();
    }
    for (auto& thread : starters) {
        thread.join();
    }
    stop.store(true, std::memory_order_release);
    configurator.join();
    clock.advance(1s);
    EXPECT_EQ(backend.poll(), 0U);
    for (const chain& state : states) {
        EXPECT_EQ(state.completions.load(), links);
        EXPECT_EQ(state.failures, 0);
    }
    EXPECT_EQ(backend.submitted(), std::uint64_t{chains} * links);
    EXPECT_EQ(backend.records_snapshot().size(), std::size_t{chains} * links);
    EXPECT_EQ(backend.outstanding(), 0U);
}

TEST(test_backend, an_overflowing_request_completes_outside_the_lock)
{
    // The inline internal_error completion of an overflowing request may use the backend: here it
    // reads the records and submits itself again, which overflows once more.
    manual_clock clock;
    test_backend backend{clock, 4096, 1};
    journal log;
    tracked_request filler{log, 1, block_operation::flush, 0, 0};
    backend.submit(filler.request);
    struct overflow_state {
        test_backend<>* backend;
        std::vector<block_status> statuses;
        std::vector<std::size_t> records_seen;
    } state{&backend, {}, {}};
    block_request overflowing{.operation = block_operation::flush,
                              .complete =
                                  [](block_request& done, block_status status) {
                                      auto* self = static_cast<overflow_state*>(done.context);
                                      self->statuses.push_back(status);
                                      self->records_seen.push_back(self->backend->records_snapshot().size());
                                      if (self->statuses.size() == 1) {
                                          self->backend->submit(done);
                                      }
                                  },
                              .context = &state};
    backend.submit(overflowing);
    EXPECT_EQ(state.statuses, std::vector<block_status>(2, block_status::internal_error));
    EXPECT_EQ(state.records_seen, (std::vector<std::size_t>{2, 3}));
    EXPECT_EQ(backend.overflows(), 2U);
    EXPECT_EQ(backend.outstanding(), 1U);
    EXPECT_EQ(backend.poll(), 1U);
    EXPECT_EQ(log.order, std::vector<int>{1});
}

TEST(test_backend, records_snapshot_is_a_copy_of_the_records)
{
    manual_clock clock;
    test_backend backend{clock, 4096, 4};
    journal log;
    tracked_request flush{log, 1, block_operation::flush, 0, 0};
    backend.submit(flush.request);
    const std::vector<block_request_record> snapshot = backend.records_snapshot();
    EXPECT_EQ(snapshot, backend.records());
    EXPECT_EQ(snapshot.size(), 1U);
    backend.clear_records();
    EXPECT_EQ(snapshot.size(), 1U) << "the snapshot does not follow the backend";
    EXPECT_TRUE(backend.records_snapshot().empty());
}

TEST(test_backend, moving_keeps_the_waiting_requests_and_the_configuration)
{
    manual_clock clock;
    test_backend source{clock, 4096, 2, {.delay = 5ns}};
    source.fail_nth(2, block_status::write_fault);
    journal log;
    tracked_request first{log, 1, block_operation::flush, 0, 0};
    tracked_request second{log, 2, block_operation::flush, 0, 0};
    source.submit(first.request);
    test_backend moved{std::move(source)};
    moved.submit(second.request);
    EXPECT_EQ(moved.outstanding(), 2U);
    EXPECT_EQ(moved.submitted(), 2U);
    clock.advance(5ns);
    EXPECT_EQ(moved.poll(), 2U);
    EXPECT_EQ(log.order, (std::vector<int>{1, 2}));
    EXPECT_EQ(log.statuses, (std::vector<block_status>{block_status::success, block_status::write_fault}));
    test_backend assigned{clock, 512, 1};
    assigned = std::move(moved);
    EXPECT_EQ(assigned.capacity_bytes(), 4096U);
    EXPECT_EQ(assigned.records().size(), 2U);
    EXPECT_EQ(assigned.submitted(), 2U);
}

TEST(test_backend, inline_completion_runs_each_request_at_once_with_its_faults_and_records)
{
    manual_clock clock;
    test_backend backend{clock, 4096, 1, {.delay = 1ms, .inline_completion = true}};
    backend.fail_nth(2, block_status::write_fault);
    backend.add_media_error(100, 1);
    auto data = bytes_of({7, 7, 7, 7});
    const std::array segments{io_segment{data.data(), data.size()}};
    journal log;
    tracked_request first{log, 1, block_operation::write, 0, 4, segments};
    tracked_request second{log, 2, block_operation::write, 8, 4, segments};
    tracked_request third{log, 3, block_operation::read, 98, 4, segments};
    tracked_request fourth{log, 4, block_operation::write, 16, 4, segments};
    EXPECT_EQ(backend.submit_inline(first.request), block_status::success);
    EXPECT_EQ(backend.submit_inline(second.request), block_status::write_fault);
    EXPECT_EQ(backend.submit_inline(third.request), block_status::unrecovered_read_error);
    EXPECT_EQ(third.request.error_offset, 100U);
    EXPECT_TRUE(log.order.empty()) << "submit_inline returns the status instead of calling complete";
    backend.submit(fourth.request);
    EXPECT_EQ(log.order, (std::vector<int>{4})) << "submit completes at once, past max_outstanding too";
    EXPECT_EQ(log.statuses, (std::vector<block_status>{block_status::success}));
    EXPECT_EQ(backend.outstanding(), 0U);
    EXPECT_EQ(backend.poll(), 0U);
    EXPECT_EQ(backend.submitted(), 4U);
    EXPECT_EQ(backend.records().size(), 4U);
    std::vector<std::byte> stored(20);
    backend.peek(0, stored);
    std::vector<std::byte> expected(20, std::byte{0});
    std::copy(data.begin(), data.end(), expected.begin());
    std::copy(data.begin(), data.end(), expected.begin() + 16);
    EXPECT_EQ(stored, expected) << "the failed write stored nothing";

    test_backend delayed{clock, 4096, 8};
    tracked_request late{log, 5, block_operation::flush, 0, 0};
    EXPECT_EQ(delayed.submit_inline(late.request), std::nullopt) << "without the option: submit()";
    EXPECT_EQ(delayed.outstanding(), 1U);
    EXPECT_EQ(delayed.poll(), 1U);
    EXPECT_EQ(log.order.back(), 5);
}
