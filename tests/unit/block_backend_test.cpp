#include <nvmekit/contracts/block_backend.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <span>

#include <gtest/gtest.h>

#include <nvmekit/testing/test_backend.hpp>

#include "asserts_enabled.hpp"

using nvmekit::block_operation;
using nvmekit::block_request;
using nvmekit::block_status;
using nvmekit::io_segment;
using nvmekit::validate_block_request;
using nvmekit::testing::block_backend_archetype;

namespace {

constexpr std::uint64_t max64 = std::numeric_limits<std::uint64_t>::max();

struct no_capacity {
    void submit(block_request&) {}
    std::size_t poll() { return 0; }
    bool has_volatile_cache() const { return false; }
    std::size_t outstanding() const { return 0; }
};
struct no_submit {
    std::uint64_t capacity_bytes() const { return 0; }
    std::size_t poll() { return 0; }
    bool has_volatile_cache() const { return false; }
    std::size_t outstanding() const { return 0; }
};
struct no_poll {
    std::uint64_t capacity_bytes() const { return 0; }
    void submit(block_request&) {}
    bool has_volatile_cache() const { return false; }
    std::size_t outstanding() const { return 0; }
};
struct no_cache_report {
    std::uint64_t capacity_bytes() const { return 0; }
    void submit(block_request&) {}
    std::size_t poll() { return 0; }
    std::size_t outstanding() const { return 0; }
};
struct no_outstanding {
    std::uint64_t capacity_bytes() const { return 0; }
    void submit(block_request&) {}
    std::size_t poll() { return 0; }
    bool has_volatile_cache() const { return false; }
};
struct non_const_capacity {
    std::uint64_t capacity_bytes() { return 0; }
    void submit(block_request&) {}
    std::size_t poll() { return 0; }
    bool has_volatile_cache() const { return false; }
    std::size_t outstanding() const { return 0; }
};

struct completion_log {
    int calls = 0;
    block_status status = block_status::success;
    block_request* request = nullptr;

    static void record(block_request& request, block_status status)
    {
        auto* log = static_cast<completion_log*>(request.context);
        ++log->calls;
        log->status = status;
        log->request = &request;
    }
};

constexpr block_request request_of(block_operation operation, std::uint64_t offset, std::uint64_t length,
                                   std::span<const io_segment> segments = {})
{
    return block_request{.operation = operation, .offset = offset, .length = length, .segments = segments};
}

} // namespace

static_assert(nvmekit::BlockBackend<block_backend_archetype>);
static_assert(nvmekit::check_block_backend<block_backend_archetype>());
static_assert(!nvmekit::BlockBackend<no_capacity> && !nvmekit::BlockSized<no_capacity>);
static_assert(!nvmekit::BlockBackend<no_submit> && !nvmekit::BlockSubmittable<no_submit>);
static_assert(!nvmekit::BlockBackend<no_poll> && !nvmekit::BlockPollable<no_poll>);
static_assert(!nvmekit::BlockBackend<no_cache_report> && !nvmekit::BlockCacheReporting<no_cache_report>);
static_assert(!nvmekit::BlockBackend<no_outstanding> && !nvmekit::BlockOutstandingCounting<no_outstanding>);
static_assert(!nvmekit::BlockBackend<non_const_capacity>);
static_assert(nvmekit::BlockSubmittable<no_capacity> && nvmekit::BlockPollable<no_capacity> &&
              nvmekit::BlockCacheReporting<no_capacity> && nvmekit::BlockOutstandingCounting<no_capacity>);
static_assert(!nvmekit::BlockBackend<int>);

static_assert(validate_block_request(request_of(block_operation::flush, max64, max64), 0) ==
              block_status::success);
static_assert(validate_block_request(request_of(block_operation::deallocate, 8, 8), 16) ==
              block_status::success);
static_assert(validate_block_request(request_of(block_operation::deallocate, 8, 9), 16) ==
              block_status::out_of_range);

TEST(block_backend, block_range_fits_checks_the_end_without_overflow)
{
    EXPECT_TRUE(nvmekit::block_range_fits(0, 0, 0));
    EXPECT_FALSE(nvmekit::block_range_fits(0, 1, 0));
    EXPECT_TRUE(nvmekit::block_range_fits(10, 6, 16));
    EXPECT_FALSE(nvmekit::block_range_fits(10, 7, 16));
    EXPECT_TRUE(nvmekit::block_range_fits(16, 0, 16));
    EXPECT_FALSE(nvmekit::block_range_fits(17, 0, 16));
    EXPECT_TRUE(nvmekit::block_range_fits(0, max64, max64));
    EXPECT_FALSE(nvmekit::block_range_fits(1, max64, max64));
    EXPECT_FALSE(nvmekit::block_range_fits(max64, 2, max64));
    EXPECT_FALSE(nvmekit::block_range_fits(2, max64 - 1, max64));
}

TEST(block_backend, a_flush_always_validates)
{
    EXPECT_EQ(validate_block_request(request_of(block_operation::flush, 0, 0), 0), block_status::success);
    EXPECT_EQ(validate_block_request(request_of(block_operation::flush, max64, max64), 512),
              block_status::success);
}

TEST(block_backend, reads_and_writes_need_segments_that_add_up_to_the_length)
{
    std::array<std::byte, 48> memory{};
    const std::array segments{io_segment{memory.data(), 16}, io_segment{memory.data() + 16, 32}};
    for (const block_operation operation : {block_operation::read, block_operation::write}) {
        EXPECT_EQ(validate_block_request(request_of(operation, 0, 48, segments), 48), block_status::success);
        EXPECT_EQ(validate_block_request(request_of(operation, 0, 47, segments), 48),
                  block_status::internal_error);
        EXPECT_EQ(validate_block_request(request_of(operation, 0, 49, segments), 64),
                  block_status::internal_error);
        EXPECT_EQ(validate_block_request(request_of(operation, 0, 16, segments), 48),
                  block_status::internal_error);
        EXPECT_EQ(validate_block_request(request_of(operation, 0, 0), 0), block_status::success);
        EXPECT_EQ(validate_block_request(request_of(operation, 0, 8), 48), block_status::internal_error);
    }
}

TEST(block_backend, a_single_segment_must_be_exactly_the_length_and_a_write_needs_its_data)
{
    std::array<std::byte, 16> memory{};
    const std::array one{io_segment{memory.data(), 16}};
    const std::array discard{io_segment{nullptr, 16}};
    const std::array empty_discard{io_segment{nullptr, 0}};
    for (const block_operation operation : {block_operation::read, block_operation::write}) {
        EXPECT_EQ(validate_block_request(request_of(operation, 0, 16, one), 16), block_status::success);
        EXPECT_EQ(validate_block_request(request_of(operation, 0, 15, one), 16),
                  block_status::internal_error);
        EXPECT_EQ(validate_block_request(request_of(operation, 0, 17, one), 32),
                  block_status::internal_error);
        EXPECT_EQ(validate_block_request(request_of(operation, 1, 16, one), 16), block_status::out_of_range);
        EXPECT_EQ(validate_block_request(request_of(operation, 0, 0, empty_discard), 0),
                  block_status::success);
    }
    EXPECT_EQ(validate_block_request(request_of(block_operation::read, 0, 16, discard), 16),
              block_status::success);
    EXPECT_EQ(validate_block_request(request_of(block_operation::write, 0, 16, discard), 16),
              block_status::internal_error);
}

TEST(block_backend, segment_sizes_that_would_overflow_are_rejected)
{
    std::array<std::byte, 1> memory{};
    const std::size_t huge = std::numeric_limits<std::size_t>::max();
    const std::array segments{io_segment{memory.data(), huge}, io_segment{memory.data(), 2}};
    EXPECT_EQ(validate_block_request(request_of(block_operation::read, 0, 1, segments), max64),
              block_status::internal_error);
    EXPECT_EQ(validate_block_request(request_of(block_operation::write, 0, huge, segments), max64),
              block_status::internal_error);
}

TEST(block_backend, only_reads_may_have_discard_segments)
{
    std::array<std::byte, 8> memory{};
    const std::array segments{io_segment{nullptr, 8}, io_segment{memory.data(), 8}};
    EXPECT_EQ(validate_block_request(request_of(block_operation::read, 0, 16, segments), 16),
              block_status::success);
    EXPECT_EQ(validate_block_request(request_of(block_operation::write, 0, 16, segments), 16),
              block_status::internal_error);
    const std::array empty_null{io_segment{nullptr, 0}, io_segment{memory.data(), 8}};
    EXPECT_EQ(validate_block_request(request_of(block_operation::write, 0, 8, empty_null), 16),
              block_status::success);
}

TEST(block_backend, ranges_past_the_capacity_are_out_of_range)
{
    std::array<std::byte, 8> memory{};
    const std::array segments{io_segment{memory.data(), 8}};
    EXPECT_EQ(validate_block_request(request_of(block_operation::read, 8, 8, segments), 16),
              block_status::success);
    EXPECT_EQ(validate_block_request(request_of(block_operation::read, 9, 8, segments), 16),
              block_status::out_of_range);
    EXPECT_EQ(validate_block_request(request_of(block_operation::write, max64, 8, segments), 16),
              block_status::out_of_range);
    EXPECT_EQ(validate_block_request(request_of(block_operation::write_zeroes, 0, 17), 16),
              block_status::out_of_range);
    EXPECT_EQ(validate_block_request(request_of(block_operation::write_zeroes, 0, 16), 16),
              block_status::success);
    EXPECT_EQ(validate_block_request(request_of(block_operation::deallocate, max64, max64), 16),
              block_status::out_of_range);
    EXPECT_EQ(validate_block_request(request_of(block_operation::deallocate, 16, 0), 16),
              block_status::success);
}

TEST(block_backend, a_submitter_mistake_outranks_a_bad_range)
{
    std::array<std::byte, 8> memory{};
    const std::array segments{io_segment{memory.data(), 8}};
    EXPECT_EQ(validate_block_request(request_of(block_operation::read, 100, 9, segments), 16),
              block_status::internal_error);
}

TEST(block_backend, an_unknown_operation_is_an_internal_error)
{
    EXPECT_EQ(validate_block_request(request_of(static_cast<block_operation>(5), 0, 0), 16),
              block_status::internal_error);
    EXPECT_EQ(validate_block_request(request_of(static_cast<block_operation>(255), 0, 0), 16),
              block_status::internal_error);
}

TEST(block_backend, complete_request_calls_the_callback_once_with_the_status)
{
    completion_log log;
    block_request request{.complete = &completion_log::record, .context = &log};
    nvmekit::detail::complete_request(request, block_status::write_fault);
    EXPECT_EQ(log.calls, 1);
    EXPECT_EQ(log.status, block_status::write_fault);
    EXPECT_EQ(log.request, &request);
}

TEST(block_backend_death, completing_a_request_without_a_callback_asserts)
{
    if (!nvmekit_test::asserts_enabled) {
        GTEST_SKIP() << "NVMEKIT_ASSERT is compiled out";
    }
    block_request request{};
    EXPECT_DEATH(nvmekit::detail::complete_request(request, block_status::success),
                 "without a completion callback");
}

TEST(block_backend, the_archetype_completes_inline_with_the_validation_status)
{
    block_backend_archetype backend;
    EXPECT_EQ(backend.capacity_bytes(), 0U);
    EXPECT_EQ(backend.poll(), 0U);
    EXPECT_FALSE(backend.has_volatile_cache());
    EXPECT_EQ(backend.outstanding(), 0U);
    completion_log log;
    block_request flush{
        .operation = block_operation::flush, .complete = &completion_log::record, .context = &log};
    backend.submit(flush);
    EXPECT_EQ(log.calls, 1);
    EXPECT_EQ(log.status, block_status::success);
    block_request zeroes{.operation = block_operation::write_zeroes,
                         .length = 1,
                         .complete = &completion_log::record,
                         .context = &log};
    backend.submit(zeroes);
    EXPECT_EQ(log.calls, 2);
    EXPECT_EQ(log.status, block_status::out_of_range);
}

namespace {
/// A component written against the concept, as the controller is: the archetype proves that
/// nothing beyond the concept is required.
template <nvmekit::BlockBackend Backend>
std::size_t flush_and_drain(Backend& backend, completion_log& log)
{
    static_assert(nvmekit::check_block_backend<Backend>());
    block_request request{
        .operation = block_operation::flush, .complete = &completion_log::record, .context = &log};
    backend.submit(request);
    std::size_t completed = backend.poll();
    if (backend.has_volatile_cache()) {
        ++completed;
    }
    return completed + backend.outstanding() + static_cast<std::size_t>(backend.capacity_bytes());
}
} // namespace

TEST(block_backend, a_component_written_against_the_concept_accepts_the_archetype)
{
    block_backend_archetype backend;
    completion_log log;
    EXPECT_EQ(flush_and_drain(backend, log), 0U);
    EXPECT_EQ(log.calls, 1);
    EXPECT_EQ(log.status, block_status::success);
}
