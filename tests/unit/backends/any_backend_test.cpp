#include <nvmekit/backends/any_backend.hpp>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>
#include <unistd.h>

#include <gtest/gtest.h>

#include "backends/backend_test_support.hpp"

#include <nvmekit/backends/file_backend.hpp>
#include <nvmekit/backends/null_backend.hpp>
#include <nvmekit/backends/ram_backend.hpp>
#include <nvmekit/testing/manual_clock.hpp>
#include <nvmekit/testing/test_backend.hpp>

#include "../asserts_enabled.hpp"

using namespace std::chrono_literals;
using nvmekit::any_backend;
using nvmekit::block_operation;
using nvmekit::block_request;
using nvmekit::block_status;
using nvmekit::io_segment;

static_assert(nvmekit::BlockBackend<any_backend>);
static_assert(nvmekit::check_block_backend<any_backend>());
static_assert(nvmekit::InlineSubmitting<any_backend>);
static_assert(!std::is_copy_constructible_v<any_backend>);
static_assert(std::is_nothrow_move_constructible_v<any_backend>);
static_assert(std::is_convertible_v<nvmekit::ram_backend, any_backend>);

namespace {

/// Counts every call, and its destruction.
struct counting_backend {
    struct counters {
        int capacity = 0;
        int submit = 0;
        int poll = 0;
        int cache = 0;
        int outstanding = 0;
        int destroyed = 0;
    };

    explicit counting_backend(counters& counts) noexcept : counts_{&counts} {}
    counting_backend(counting_backend&& other) noexcept : counts_{std::exchange(other.counts_, nullptr)} {}
    counting_backend(const counting_backend&) = delete;
    counting_backend& operator=(const counting_backend&) = delete;
    counting_backend& operator=(counting_backend&&) = delete;
    ~counting_backend()
    {
        if (counts_ != nullptr) {
            ++counts_->destroyed;
        }
    }

    std::uint64_t capacity_bytes() const
    {
        ++counts_->capacity;
        return 777;
    }
    void submit(block_request& request)
    {
        ++counts_->submit;
        request.complete(request, block_status::write_fault);
    }
    std::size_t poll()
    {
        ++counts_->poll;
        return 5;
    }
    bool has_volatile_cache() const
    {
        ++counts_->cache;
        return true;
    }
    std::size_t outstanding() const
    {
        ++counts_->outstanding;
        return 3;
    }

    counters* counts_;
};

/// Neither movable nor copyable: only in-place construction can hold it.
struct pinned_backend {
    explicit pinned_backend(std::uint64_t capacity) noexcept : capacity{capacity} {}
    pinned_backend(const pinned_backend&) = delete;
    pinned_backend& operator=(const pinned_backend&) = delete;
    std::uint64_t capacity_bytes() const { return capacity; }
    void submit(block_request& request) { request.complete(request, block_status::success); }
    std::size_t poll() { return 0; }
    bool has_volatile_cache() const { return false; }
    std::size_t outstanding() const { return 0; }
    std::uint64_t capacity;
};

using nvmekit_test::outcome;
using nvmekit_test::run;

/// Writes 4 bytes at 100, reads them back and zeroes them, through the erased interface.
void round_trip(any_backend& backend)
{
    std::array<std::byte, 4> data{std::byte{9}, std::byte{8}, std::byte{7}, std::byte{6}};
    const std::array segments{io_segment{data.data(), data.size()}};
    const outcome written = run(backend, block_operation::write, 100, 4, segments);
    EXPECT_EQ(written.calls, 1);
    EXPECT_EQ(written.status, block_status::success);
    data.fill(std::byte{0xee});
    const outcome read = run(backend, block_operation::read, 100, 4, segments);
    EXPECT_EQ(read.calls, 1);
    EXPECT_EQ(read.status, block_status::success);
    EXPECT_EQ(data, (std::array<std::byte, 4>{std::byte{9}, std::byte{8}, std::byte{7}, std::byte{6}}));
    EXPECT_EQ(run(backend, block_operation::deallocate, 100, 4).status, block_status::success);
    EXPECT_EQ(run(backend, block_operation::read, 100, 4, segments).status, block_status::success);
    EXPECT_EQ(data, (std::array<std::byte, 4>{}));
    EXPECT_EQ(run(backend, block_operation::flush, 0, 0).status, block_status::success);
    EXPECT_EQ(run(backend, block_operation::write_zeroes, backend.capacity_bytes(), 1).status,
              block_status::out_of_range);
}

} // namespace

TEST(any_backend, forwards_every_operation_once)
{
    counting_backend::counters counts;
    {
        any_backend backend{counting_backend{counts}};
        EXPECT_TRUE(backend.has_value());
        EXPECT_EQ(backend.capacity_bytes(), 777U);
        EXPECT_EQ(run(backend, block_operation::flush, 0, 0).status, block_status::write_fault);
        EXPECT_EQ(backend.poll(), 5U);
        EXPECT_TRUE(backend.has_volatile_cache());
        EXPECT_EQ(backend.outstanding(), 3U);
        EXPECT_EQ(counts.capacity, 1);
        EXPECT_EQ(counts.submit, 1);
        EXPECT_EQ(counts.poll, 1);
        EXPECT_EQ(counts.cache, 1);
        EXPECT_EQ(counts.outstanding, 1);
        EXPECT_EQ(counts.destroyed, 0);
    }
    EXPECT_EQ(counts.destroyed, 1);
}

TEST(any_backend, get_if_reaches_the_concrete_backend_only_by_its_type)
{
    any_backend backend{nvmekit::ram_backend{4096, {.chunk_size = 512}}};
    nvmekit::ram_backend* ram = backend.get_if<nvmekit::ram_backend>();
    ASSERT_NE(ram, nullptr);
    EXPECT_EQ(ram->chunk_size(), 512U);
    EXPECT_EQ(backend.get_if<nvmekit::null_backend>(), nullptr);
    EXPECT_EQ(backend.get_if<int>(), nullptr);
    const any_backend& view = backend;
    EXPECT_EQ(view.get_if<nvmekit::ram_backend>(), ram);
    EXPECT_EQ(view.get_if<nvmekit::null_backend>(), nullptr);
}

TEST(any_backend, wraps_a_null_backend)
{
    any_backend backend{nvmekit::null_backend{1 << 20}};
    EXPECT_EQ(backend.capacity_bytes(), 1U << 20);
    EXPECT_FALSE(backend.has_volatile_cache());
    std::array<std::byte, 4> data{std::byte{1}, std::byte{1}, std::byte{1}, std::byte{1}};
    const std::array segments{io_segment{data.data(), data.size()}};
    EXPECT_EQ(run(backend, block_operation::write, 0, 4, segments).status, block_status::success);
    EXPECT_EQ(run(backend, block_operation::read, 0, 4, segments).status, block_status::success);
    EXPECT_EQ(data, (std::array<std::byte, 4>{}));
    EXPECT_EQ(backend.poll(), 0U);
    EXPECT_EQ(backend.outstanding(), 0U);
    EXPECT_NE(backend.get_if<nvmekit::null_backend>(), nullptr);
}

TEST(any_backend, wraps_a_ram_backend)
{
    any_backend backend{nvmekit::ram_backend{1 << 20}};
    EXPECT_EQ(backend.capacity_bytes(), 1U << 20);
    EXPECT_FALSE(backend.has_volatile_cache());
    round_trip(backend);
    EXPECT_EQ(backend.get_if<nvmekit::ram_backend>()->bytes_allocated(), 64U * 1024);
}

TEST(any_backend, wraps_a_file_backend)
{
    const std::string path = nvmekit_test::make_temporary_file("nvmekit_any_backend");
    {
        any_backend backend{nvmekit::file_backend{path, {.create_size = 8192}}};
        EXPECT_EQ(backend.capacity_bytes(), 8192U);
        EXPECT_TRUE(backend.has_volatile_cache());
        round_trip(backend);
        const auto* file = backend.get_if<nvmekit::file_backend>();
        ASSERT_NE(file, nullptr);
        EXPECT_EQ(file->sync_count(), 1U);
    }
    ::unlink(path.c_str());
}

TEST(any_backend, wraps_a_test_backend_in_place)
{
    nvmekit::testing::manual_clock clock;
    any_backend backend{std::in_place_type<nvmekit::testing::test_backend<>>, clock, 8192, 4,
                        nvmekit::testing::test_backend_options{.delay = 10ns}};
    EXPECT_EQ(backend.capacity_bytes(), 8192U);
    outcome result;
    block_request request{.operation = block_operation::flush,
                          .complete =
                              [](block_request& done, block_status status) {
                                  auto* self = static_cast<outcome*>(done.context);
                                  ++self->calls;
                                  self->status = status;
                              },
                          .context = &result};
    backend.submit(request);
    EXPECT_EQ(result.calls, 0);
    EXPECT_EQ(backend.outstanding(), 1U);
    EXPECT_EQ(backend.poll(), 0U);
    clock.advance(10ns);
    EXPECT_EQ(backend.poll(), 1U);
    EXPECT_EQ(result.calls, 1);
    EXPECT_EQ(result.status, block_status::success);
    EXPECT_EQ(backend.outstanding(), 0U);
    auto* test = backend.get_if<nvmekit::testing::test_backend<>>();
    ASSERT_NE(test, nullptr);
    EXPECT_EQ(test->records().size(), 1U);
}

TEST(any_backend, holds_a_type_that_cannot_move_in_place)
{
    any_backend backend{std::in_place_type<pinned_backend>, std::uint64_t{4242}};
    EXPECT_EQ(backend.capacity_bytes(), 4242U);
    EXPECT_EQ(backend.get_if<pinned_backend>()->capacity, 4242U);
}

TEST(any_backend, different_backends_live_side_by_side)
{
    std::vector<any_backend> namespaces;
    namespaces.emplace_back(nvmekit::ram_backend{4096});
    namespaces.emplace_back(nvmekit::null_backend{8192});
    namespaces.emplace_back(nvmekit::ram_backend{16384});
    EXPECT_EQ(namespaces[0].capacity_bytes(), 4096U);
    EXPECT_EQ(namespaces[1].capacity_bytes(), 8192U);
    EXPECT_EQ(namespaces[2].capacity_bytes(), 16384U);
    EXPECT_NE(namespaces[0].get_if<nvmekit::ram_backend>(), nullptr);
    EXPECT_EQ(namespaces[1].get_if<nvmekit::ram_backend>(), nullptr);
}

TEST(any_backend, moving_leaves_the_source_empty_and_assignment_destroys_the_old_backend)
{
    counting_backend::counters first_counts;
    counting_backend::counters second_counts;
    any_backend first{counting_backend{first_counts}};
    any_backend moved{std::move(first)};
    EXPECT_FALSE(first.has_value());
    EXPECT_EQ(first.get_if<counting_backend>(), nullptr);
    EXPECT_TRUE(moved.has_value());
    EXPECT_EQ(moved.capacity_bytes(), 777U);
    any_backend second{counting_backend{second_counts}};
    moved = std::move(second);
    EXPECT_EQ(first_counts.destroyed, 1);
    EXPECT_EQ(second_counts.destroyed, 0);
    EXPECT_FALSE(second.has_value());
    EXPECT_EQ(moved.capacity_bytes(), 777U);
    EXPECT_EQ(second_counts.capacity, 1);
    first = std::move(moved);
    EXPECT_TRUE(first.has_value());
    EXPECT_EQ(second_counts.destroyed, 0);
}

TEST(any_backend_death, operations_on_an_empty_any_backend_assert)
{
    if (!nvmekit_test::asserts_enabled) {
        GTEST_SKIP() << "NVMEKIT_ASSERT is compiled out";
    }
    any_backend backend{nvmekit::null_backend{4096}};
    any_backend other{std::move(backend)};
    EXPECT_DEATH(static_cast<void>(backend.capacity_bytes()), "empty any_backend");
    EXPECT_DEATH(static_cast<void>(backend.poll()), "empty any_backend");
}

TEST(any_backend, submit_inline_reaches_an_inline_backend_and_falls_back_to_submit_without_one)
{
    any_backend inline_one{nvmekit::null_backend{4096}};
    std::array<std::byte, 16> data{};
    data.fill(std::byte{0xaa});
    const std::array segments{io_segment{data.data(), data.size()}};
    const auto read = nvmekit_test::run_inline(inline_one, block_operation::read, 0, data.size(), segments);
    EXPECT_EQ(read.returned, block_status::success);
    EXPECT_EQ(read.callback.calls, 0);
    EXPECT_EQ(data[0], std::byte{0});

    counting_backend::counters counts;
    any_backend callback_only{counting_backend{counts}};
    const auto written =
        nvmekit_test::run_inline(callback_only, block_operation::write, 0, data.size(), segments);
    EXPECT_EQ(written.returned, std::nullopt);
    EXPECT_EQ(counts.submit, 1);
    EXPECT_EQ(written.callback.calls, 1) << "its submit() ran the callback";
    EXPECT_EQ(written.callback.status, block_status::write_fault);
}
