#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <nvmekit/backends/any_backend.hpp>
#include <nvmekit/backends/ram_backend.hpp>
#include <nvmekit/backends/timed_backend.hpp>
#include <nvmekit/contracts/clock.hpp>
#include <nvmekit/controller.hpp>
#include <nvmekit/storage/nvm_namespace.hpp>
#include <nvmekit/testing/archetypes.hpp>
#include <nvmekit/testing/manual_clock.hpp>
#include <nvmekit/testing/test_backend.hpp>
#include <nvmekit/timing/simple_model.hpp>
#include <nvmekit/timing/ssd_model.hpp>

#include "controller_fixture.hpp"
#include "thread_group.hpp"

namespace {
namespace backends_timed_backend_test {

using namespace std::chrono_literals;
using nvmekit::block_operation;
using nvmekit::block_request;
using nvmekit::block_status;
using nvmekit::io_segment;
using nvmekit::ram_backend;
using nvmekit::timed_backend;
using nvmekit::testing::manual_clock;
using nvmekit::timing::simple_model;
using nvmekit::timing::ssd_model;

using ram_ssd = timed_backend<ram_backend, ssd_model, manual_clock>;
using ram_simple = timed_backend<ram_backend, simple_model, manual_clock>;

static_assert(nvmekit::check_block_backend<ram_ssd>());
static_assert(nvmekit::check_block_backend<ram_simple>());
static_assert(nvmekit::check_block_backend<
              timed_backend<nvmekit::testing::block_backend_archetype,
                            nvmekit::testing::timing_model_archetype, nvmekit::testing::clock_archetype>>());
static_assert(
    nvmekit::check_block_backend<timed_backend<ram_backend, simple_model, nvmekit::steady_clock>>());
static_assert(std::is_nothrow_move_constructible_v<ram_ssd> && !std::is_copy_constructible_v<ram_ssd>);
static_assert(std::is_convertible_v<ram_ssd, nvmekit::any_backend>);

constexpr std::uint64_t capacity = std::uint64_t{1} << 20;
constexpr std::size_t page = 4096;

/// A request with its one segment and what its completion reported; stays where it is built.
struct tracked {
    block_request request{};
    io_segment segment{};
    std::vector<std::byte> data;
    int calls = 0;
    block_status status = block_status::internal_error;

    tracked(block_operation operation, std::uint64_t offset, std::size_t length,
            std::byte fill = std::byte{0})
        : data(operation == block_operation::read || operation == block_operation::write ? length : 0, fill)
    {
        segment = io_segment{data.data(), data.size()};
        request.operation = operation;
        request.offset = offset;
        request.length = length;
        if (!data.empty()) {
            request.segments = std::span{&segment, 1};
        }
        request.context = this;
        request.complete = [](block_request& done, block_status result) {
            auto* self = static_cast<tracked*>(done.context);
            ++self->calls;
            self->status = result;
        };
    }
    tracked(const tracked&) = delete;
    tracked& operator=(const tracked&) = delete;
    ~tracked() = default;

    [[nodiscard]] bool done() const noexcept { return calls != 0; }
};

simple_model fixed(std::chrono::nanoseconds read, std::chrono::nanoseconds write = 0ns,
                   std::size_t parallelism = 1)
{
    return simple_model{{.read_latency = read, .write_latency = write, .parallelism = parallelism}};
}

TEST(timed_backend, a_write_then_a_read_complete_at_the_models_times_with_the_right_data)
{
    manual_clock clock;
    ram_simple backend{ram_backend{capacity}, fixed(30us, 10us), clock, 8};
    EXPECT_EQ(backend.capacity_bytes(), capacity);
    EXPECT_FALSE(backend.has_volatile_cache());

    tracked write{block_operation::write, 8192, page, std::byte{0x5a}};
    backend.submit(write.request);
    EXPECT_FALSE(write.done());
    EXPECT_EQ(backend.outstanding(), 1U);
    EXPECT_EQ(backend.next_due(), 10us);
    clock.advance(10us - 1ns);
    EXPECT_EQ(backend.poll(), 0U);
    EXPECT_FALSE(write.done());
    clock.advance(1ns);
    EXPECT_EQ(backend.poll(), 1U);
    EXPECT_EQ(write.calls, 1);
    EXPECT_EQ(write.status, block_status::success);
    EXPECT_EQ(backend.outstanding(), 0U);

    tracked read{block_operation::read, 8192, page};
    backend.submit(read.request);
    clock.advance(29us);
    EXPECT_EQ(backend.poll(), 0U);
    clock.advance(1us);
    EXPECT_EQ(backend.poll(), 1U);
    EXPECT_EQ(read.status, block_status::success);
    EXPECT_EQ(read.data, std::vector<std::byte>(page, std::byte{0x5a}));
    EXPECT_EQ(backend.poll(), 0U);
    EXPECT_EQ(read.calls, 1);
}

TEST(timed_backend, a_queue_depth_one_page_read_on_the_ssd_model_takes_read_latency_plus_transfer)
{
    manual_clock clock;
    clock.advance(1ms);
    auto parameters = nvmekit::timing::femu_defaults();
    parameters.channel_bytes_per_second = 800'000'000; // 5.12 us a page
    ram_ssd backend{ram_backend{capacity}, ssd_model{parameters}, clock, 4};
    tracked read{block_operation::read, 0, page};
    backend.submit(read.request);
    EXPECT_EQ(backend.next_due(), 1ms + 45'120ns);
    clock.advance(45'119ns);
    backend.poll();
    EXPECT_FALSE(read.done());
    clock.advance(1ns);
    backend.poll();
    EXPECT_EQ(read.status, block_status::success);
    EXPECT_EQ(backend.model().statistics().pages_read, 1U);
}

TEST(timed_backend, completes_in_order_of_time_then_of_submission)
{
    manual_clock clock;
    ram_simple backend{ram_backend{capacity}, fixed(50us, 10us, 4), clock, 8};
    std::vector<int> order;
    std::array<std::unique_ptr<tracked>, 4> requests;
    const std::array operations{block_operation::read, block_operation::write, block_operation::read,
                                block_operation::write};
    for (std::size_t i = 0; i < requests.size(); ++i) {
        requests[i] = std::make_unique<tracked>(operations[i], i * page, page);
        requests[i]->request.context = &order;
        requests[i]->request.complete = [](block_request& done, block_status) {
            static_cast<std::vector<int>*>(done.context)->push_back(static_cast<int>(done.offset / page));
        };
        backend.submit(requests[i]->request);
    }
    clock.advance(1ms);
    EXPECT_EQ(backend.poll(), 4U);
    EXPECT_EQ(order, (std::vector<int>{1, 3, 0, 2}));
}

TEST(timed_backend, a_request_beyond_max_outstanding_fails_at_once_with_internal_error)
{
    manual_clock clock;
    ram_simple backend{ram_backend{capacity}, fixed(10us), clock, 2};
    tracked first{block_operation::read, 0, 512};
    tracked second{block_operation::read, 512, 512};
    tracked third{block_operation::read, 1024, 512};
    backend.submit(first.request);
    backend.submit(second.request);
    backend.submit(third.request);
    EXPECT_EQ(third.calls, 1);
    EXPECT_EQ(third.status, block_status::internal_error);
    EXPECT_EQ(backend.overflows(), 1U);
    EXPECT_EQ(backend.outstanding(), 2U);
    // The refused request took no server: the two others complete after one latency each.
    clock.advance(20us);
    EXPECT_EQ(backend.poll(), 2U);
    // A slot freed by a completion takes a new request.
    tracked fourth{block_operation::read, 0, 512};
    backend.submit(fourth.request);
    EXPECT_FALSE(fourth.done());
    EXPECT_THROW((ram_simple{ram_backend{capacity}, fixed(0ns), clock, 0}), std::invalid_argument);
}

TEST(timed_backend, an_invalid_request_completes_at_once_without_reaching_the_model)
{
    manual_clock clock;
    ram_simple backend{ram_backend{capacity}, fixed(10us), clock, 2};
    tracked past_the_end{block_operation::read, capacity - 512, 1024};
    backend.submit(past_the_end.request);
    EXPECT_EQ(past_the_end.calls, 1);
    EXPECT_EQ(past_the_end.status, block_status::out_of_range);
    EXPECT_EQ(backend.outstanding(), 0U);
    tracked read{block_operation::read, 0, 512};
    backend.submit(read.request);
    EXPECT_EQ(backend.next_due(), 10us); // the server was free
}

TEST(timed_backend, waits_for_both_the_inner_backend_and_the_model)
{
    manual_clock clock;
    using inner_type = nvmekit::testing::test_backend<>;
    timed_backend<inner_type, simple_model, manual_clock> backend{
        inner_type{clock, capacity, 8, {.delay = 50us, .volatile_cache = true}}, fixed(10us), clock, 8};
    EXPECT_TRUE(backend.has_volatile_cache());
    backend.inner().add_media_error(4096 + 100, 1);
    tracked read{block_operation::read, 4096, 512};
    backend.submit(read.request);
    clock.advance(10us);
    EXPECT_EQ(backend.poll(), 0U); // the model's time has come, the inner backend's not
    EXPECT_FALSE(backend.next_due().has_value());
    clock.advance(40us);
    EXPECT_EQ(backend.poll(), 1U);
    EXPECT_EQ(read.status, block_status::unrecovered_read_error);
    EXPECT_EQ(read.request.error_offset, 4096U + 100U);
}

TEST(timed_backend, a_request_submitted_by_a_completion_waits_for_a_later_poll)
{
    manual_clock clock;
    ram_simple backend{ram_backend{capacity}, fixed(0ns), clock, 4};
    struct chain {
        ram_simple* backend;
        tracked first{block_operation::read, 0, 512};
        tracked second{block_operation::read, 512, 512};
    } c{&backend};
    c.first.request.context = &c;
    c.first.request.complete = [](block_request& done, block_status) {
        auto* self = static_cast<chain*>(done.context);
        ++self->first.calls;
        self->backend->submit(self->second.request);
    };
    backend.submit(c.first.request);
    EXPECT_EQ(backend.poll(), 1U);
    EXPECT_EQ(c.first.calls, 1);
    EXPECT_FALSE(c.second.done());
    EXPECT_EQ(backend.poll(), 1U);
    EXPECT_EQ(c.second.calls, 1);
}

TEST(timed_backend, the_same_submissions_complete_at_the_same_times)
{
    auto run = [] {
        manual_clock clock;
        auto parameters = nvmekit::timing::femu_defaults();
        parameters.channel_bytes_per_second = 800'000'000;
        parameters.write_buffer_bytes = 8 * page;
        ram_ssd backend{ram_backend{capacity}, ssd_model{parameters}, clock, 64};
        std::vector<std::unique_ptr<tracked>> requests;
        std::vector<std::pair<std::size_t, std::chrono::nanoseconds>> completions;
        for (std::size_t i = 0; i < 64; ++i) {
            const auto operation = i % 3 == 0 ? block_operation::write : block_operation::read;
            requests.push_back(std::make_unique<tracked>(operation, (i * 7 % 200) * page, page));
            backend.submit(requests.back()->request);
        }
        while (completions.size() < requests.size()) {
            clock.advance(1us);
            backend.poll();
            for (std::size_t i = 0; i < requests.size(); ++i) {
                if (requests[i]->calls == 1) {
                    requests[i]->calls = 2; // seen
                    completions.emplace_back(i, clock.now());
                }
            }
        }
        return completions;
    };
    const auto first = run();
    EXPECT_EQ(first, run());
    EXPECT_GT(first.back().second, 200us); // a full buffer held some writes behind programs
}

TEST(timed_backend, with_a_steady_clock_a_request_completes_once_wall_clock_time_has_passed)
{
    const nvmekit::steady_clock clock;
    timed_backend<ram_backend, simple_model, nvmekit::steady_clock> backend{ram_backend{capacity},
                                                                            fixed(200us), clock, 2};
    tracked read{block_operation::read, 0, 512};
    const auto start = clock.now();
    backend.submit(read.request);
    while (!read.done()) {
        backend.poll();
    }
    EXPECT_GE(clock.now() - start, 200us);
    EXPECT_EQ(read.status, block_status::success);
}

TEST(timed_backend, moves_with_its_waiting_requests)
{
    manual_clock clock;
    ram_simple backend{ram_backend{capacity}, fixed(10us), clock, 2};
    tracked read{block_operation::read, 0, 512};
    backend.submit(read.request);
    ram_simple moved{std::move(backend)};
    EXPECT_EQ(moved.outstanding(), 1U);
    clock.advance(10us);
    EXPECT_EQ(moved.poll(), 1U);
    EXPECT_EQ(read.status, block_status::success);
}

TEST(timed_backend, threads_submit_while_one_thread_polls_and_every_request_completes_once)
{
    manual_clock clock;
    using backend_type = timed_backend<ram_backend, simple_model, manual_clock>;
    backend_type backend{ram_backend{capacity, {.concurrent = true}}, fixed(5us, 5us, 4), clock, 64};
    constexpr std::size_t submitters = 4;
    constexpr std::size_t per_thread = 200;
    std::vector<std::unique_ptr<tracked>> requests;
    for (std::size_t i = 0; i < submitters * per_thread; ++i) {
        const auto operation = i % 2 == 0 ? block_operation::write : block_operation::read;
        requests.push_back(std::make_unique<tracked>(operation, (i % 256) * page, page, std::byte{1}));
    }
    std::atomic<std::size_t> finished{0};
    {
        nvmekit_test::thread_group threads{submitters, [&](std::size_t index) {
                                               for (std::size_t i = 0; i < per_thread; ++i) {
                                                   tracked& request = *requests[index * per_thread + i];
                                                   backend.submit(request.request);
                                               }
                                               finished.fetch_add(1);
                                           }};
        while (finished.load() != submitters || backend.outstanding() != 0) {
            clock.advance(1us);
            backend.poll();
        }
    }
    std::size_t overflowed = 0;
    for (const auto& request : requests) {
        ASSERT_EQ(request->calls, 1);
        if (request->status == block_status::internal_error) {
            ++overflowed;
        } else {
            EXPECT_EQ(request->status, block_status::success);
        }
    }
    EXPECT_EQ(overflowed, backend.overflows());
}

/// A whole controller over a timed RAM namespace: a Read completes only once the clock has
/// advanced by the model's latency.
TEST(timed_backend, a_controller_read_completes_after_the_models_latency)
{
    nvmekit_test::rig r;
    auto parameters = nvmekit::timing::femu_defaults();
    parameters.channel_bytes_per_second = 800'000'000; // 5.12 us a page
    constexpr std::uint64_t namespace_bytes = std::uint64_t{1} << 20;
    ram_backend storage{namespace_bytes, {.concurrent = true}};
    {
        tracked preload{block_operation::write, 0, page, std::byte{0xc3}};
        storage.submit(preload.request);
        ASSERT_EQ(preload.status, block_status::success);
    }
    r.subsystem.add_namespace(ram_ssd{std::move(storage), ssd_model{parameters}, r.clock, 64});
    r.host.bring_up();

    const auto block_bytes = nvmekit::supported_lba_formats[0].data_bytes;
    const auto blocks = static_cast<std::uint32_t>(page / block_bytes);
    auto sqe = nvmekit_test::host_type::lba_command(nvmekit::spec::nvm_opcode::read, 1, 0, blocks);
    const std::uint64_t buffer = r.host.allocate(page);
    sqe.dptr = r.host.build_prps(buffer, page);
    const std::uint16_t cid = r.host.submit(1, sqe);
    const auto submitted = r.clock.now();

    std::vector<nvmekit::testing::completion> completions;
    r.host.reap(1, completions); // the controller takes the command and hands it to the backend
    EXPECT_TRUE(completions.empty());
    r.clock.advance(45'120ns - 1ns);
    r.host.reap(1, completions);
    EXPECT_TRUE(completions.empty());
    r.clock.advance(1ns);
    r.host.reap(1, completions);
    ASSERT_EQ(completions.size(), 1U);
    EXPECT_EQ(completions[0].cqe.cid, cid);
    EXPECT_EQ(completions[0].status(), nvmekit::spec::status::success());
    EXPECT_EQ(r.clock.now() - submitted, 45'120ns);
    EXPECT_EQ(r.snapshot(buffer, page), std::vector<std::byte>(page, std::byte{0xc3}));
    auto* timed = r.subsystem.find(1)->backend().get_if<ram_ssd>();
    ASSERT_NE(timed, nullptr);
    EXPECT_EQ(timed->model().statistics().pages_read, 1U);
}

} // namespace backends_timed_backend_test
} // namespace
