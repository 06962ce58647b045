#include <nvmekit/backends/null_backend.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include <gtest/gtest.h>

#include "backends/backend_test_support.hpp"

using nvmekit::block_operation;
using nvmekit::block_request;
using nvmekit::block_status;
using nvmekit::io_segment;
using nvmekit::null_backend;

static_assert(nvmekit::BlockBackend<null_backend>);
static_assert(nvmekit::check_block_backend<null_backend>());
static_assert(nvmekit::InlineSubmitting<null_backend>);

namespace {

struct outcome {
    int calls = 0;
    block_status status = block_status::success;
    std::size_t outstanding_during_completion = 99;
};

template <typename Backend>
outcome run(Backend& backend, block_operation operation, std::uint64_t offset, std::uint64_t length,
            std::span<const io_segment> segments = {})
{
    struct context {
        outcome result;
        Backend* backend;
    } state{{}, &backend};
    block_request request{.operation = operation,
                          .offset = offset,
                          .length = length,
                          .segments = segments,
                          .complete =
                              [](block_request& done, block_status status) {
                                  auto* self = static_cast<context*>(done.context);
                                  ++self->result.calls;
                                  self->result.status = status;
                                  self->result.outstanding_during_completion = self->backend->outstanding();
                              },
                          .context = &state};
    backend.submit(request);
    return state.result;
}

std::array<std::byte, 16> filled(std::byte value)
{
    std::array<std::byte, 16> bytes{};
    bytes.fill(value);
    return bytes;
}

} // namespace

TEST(null_backend, reports_its_capacity_and_no_cache)
{
    const null_backend backend{std::uint64_t{1} << 40};
    EXPECT_EQ(backend.capacity_bytes(), std::uint64_t{1} << 40);
    EXPECT_FALSE(backend.has_volatile_cache());
    EXPECT_EQ(backend.outstanding(), 0U);
}

TEST(null_backend, reads_fill_zeros_inline)
{
    null_backend backend{4096};
    auto first = filled(std::byte{0xaa});
    auto second = filled(std::byte{0xbb});
    const std::array segments{io_segment{first.data(), 16}, io_segment{second.data(), 8}};
    const outcome result = run(backend, block_operation::read, 4096 - 24, 24, segments);
    EXPECT_EQ(result.calls, 1);
    EXPECT_EQ(result.status, block_status::success);
    EXPECT_EQ(result.outstanding_during_completion, 0U);
    EXPECT_EQ(first, filled(std::byte{0}));
    for (std::size_t i = 0; i < 16; ++i) {
        EXPECT_EQ(second[i], i < 8 ? std::byte{0} : std::byte{0xbb}) << i;
    }
    EXPECT_EQ(backend.poll(), 0U);
}

TEST(null_backend, discard_segments_are_skipped)
{
    null_backend backend{4096};
    auto data = filled(std::byte{0xaa});
    const std::array segments{io_segment{nullptr, 100}, io_segment{data.data(), 16}};
    const outcome result = run(backend, block_operation::read, 0, 116, segments);
    EXPECT_EQ(result.calls, 1);
    EXPECT_EQ(result.status, block_status::success);
    EXPECT_EQ(data, filled(std::byte{0}));
}

TEST(null_backend, fill_reads_off_leaves_buffers_untouched)
{
    null_backend backend{4096, {.fill_reads = false}};
    auto data = filled(std::byte{0xaa});
    const std::array segments{io_segment{data.data(), 16}};
    const outcome result = run(backend, block_operation::read, 0, 16, segments);
    EXPECT_EQ(result.calls, 1);
    EXPECT_EQ(result.status, block_status::success);
    EXPECT_EQ(data, filled(std::byte{0xaa}));
}

TEST(null_backend, writes_are_dropped_and_read_back_as_zeros)
{
    null_backend backend{4096};
    auto data = filled(std::byte{0x5a});
    const std::array segments{io_segment{data.data(), 16}};
    const outcome written = run(backend, block_operation::write, 0, 16, segments);
    EXPECT_EQ(written.calls, 1);
    EXPECT_EQ(written.status, block_status::success);
    EXPECT_EQ(data, filled(std::byte{0x5a}));
    const outcome read = run(backend, block_operation::read, 0, 16, segments);
    EXPECT_EQ(read.status, block_status::success);
    EXPECT_EQ(data, filled(std::byte{0}));
}

TEST(null_backend, flush_write_zeroes_and_deallocate_succeed_inline)
{
    null_backend backend{4096};
    for (const block_operation operation :
         {block_operation::flush, block_operation::write_zeroes, block_operation::deallocate}) {
        const outcome result = run(backend, operation, 0, 4096);
        EXPECT_EQ(result.calls, 1);
        EXPECT_EQ(result.status, block_status::success);
    }
}

TEST(null_backend, out_of_range_requests_complete_with_out_of_range_and_touch_nothing)
{
    null_backend backend{4096};
    auto data = filled(std::byte{0xaa});
    const std::array segments{io_segment{data.data(), 16}};
    for (const block_operation operation : {block_operation::read, block_operation::write}) {
        const outcome result = run(backend, operation, 4096 - 15, 16, segments);
        EXPECT_EQ(result.calls, 1);
        EXPECT_EQ(result.status, block_status::out_of_range);
    }
    EXPECT_EQ(data, filled(std::byte{0xaa}));
    EXPECT_EQ(run(backend, block_operation::write_zeroes, 4096, 1).status, block_status::out_of_range);
    EXPECT_EQ(run(backend, block_operation::deallocate, 1, 4096).status, block_status::out_of_range);
}

TEST(null_backend, a_length_that_disagrees_with_the_segments_is_an_internal_error)
{
    null_backend backend{4096};
    auto data = filled(std::byte{0xaa});
    const std::array segments{io_segment{data.data(), 16}};
    const outcome result = run(backend, block_operation::read, 0, 32, segments);
    EXPECT_EQ(result.calls, 1);
    EXPECT_EQ(result.status, block_status::internal_error);
    EXPECT_EQ(data, filled(std::byte{0xaa}));
}

TEST(null_backend, submit_inline_returns_every_status_without_the_callback)
{
    null_backend backend{4096};
    auto data = filled(std::byte{0xaa});
    const std::array segments{io_segment{data.data(), 16}};
    const auto read = nvmekit_test::run_inline(backend, block_operation::read, 0, 16, segments);
    EXPECT_EQ(read.returned, block_status::success);
    EXPECT_EQ(read.callback.calls, 0);
    EXPECT_EQ(data, filled(std::byte{0}));

    data = filled(std::byte{0xaa});
    const auto beyond = nvmekit_test::run_inline(backend, block_operation::read, 4096 - 15, 16, segments);
    EXPECT_EQ(beyond.returned, block_status::out_of_range);
    EXPECT_EQ(beyond.callback.calls, 0);
    const auto mismatched = nvmekit_test::run_inline(backend, block_operation::write, 0, 32, segments);
    EXPECT_EQ(mismatched.returned, block_status::internal_error);
    EXPECT_EQ(mismatched.callback.calls, 0);
    EXPECT_EQ(data, filled(std::byte{0xaa}));
    EXPECT_EQ(nvmekit_test::run_inline(backend, block_operation::flush, 0, 0).returned,
              block_status::success);
}
