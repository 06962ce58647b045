#include <nvmekit/rpc/bdev_registry.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <nvmekit/backends/null_backend.hpp>
#include <nvmekit/backends/ram_backend.hpp>

namespace {

namespace rpc = nvmekit::rpc;

rpc::bdev_options disk(std::string name, std::string module = "null", std::uint64_t blocks = 8)
{
    return {.name = std::move(name),
            .product_name = "Null disk",
            .module = std::move(module),
            .block_size = 512,
            .num_blocks = blocks};
}

TEST(uuid, parses_and_prints_the_canonical_form)
{
    const auto parsed = rpc::parse_uuid("2B6601BA-eada-44fb-9a83-a20eb9eb9e90");
    ASSERT_TRUE(parsed);
    EXPECT_EQ((*parsed)[0], 0x2b);
    EXPECT_EQ((*parsed)[15], 0x90);
    EXPECT_EQ(rpc::uuid_string(*parsed), "2b6601ba-eada-44fb-9a83-a20eb9eb9e90");
}

TEST(uuid, refuses_anything_else)
{
    for (const char* bad : {"", "2b6601ba-eada-44fb-9a83-a20eb9eb9e9",
                            "2b6601ba-eada-44fb-9a83-a20eb9eb9e900", "2b6601baeada-44fb-9a83-a20eb9eb9e90-",
                            "2b6601ba-eada-44fb-9a83-a20eb9eb9eg0", "{b6601ba-eada-44fb-9a83-a20eb9eb9e90"}) {
        EXPECT_FALSE(rpc::parse_uuid(bad)) << bad;
    }
}

TEST(uuid, random_ones_are_version_4_and_differ)
{
    const auto a = rpc::random_uuid();
    const auto b = rpc::random_uuid();
    EXPECT_NE(a, b);
    EXPECT_EQ(a[6] >> 4, 4);
    EXPECT_EQ(a[8] & 0xc0, 0x80);
}

TEST(bdev_registry, adds_finds_and_lists_in_order)
{
    rpc::bdev_registry bdevs;
    const auto uuid = rpc::parse_uuid("2b6601ba-eada-44fb-9a83-a20eb9eb9e90");
    auto options = disk("b");
    options.uuid = uuid;
    bdevs.add(options, nvmekit::null_backend{4096});
    bdevs.add(disk("a"), nvmekit::ram_backend{4096});
    ASSERT_EQ(bdevs.size(), 2U);
    EXPECT_EQ(bdevs.list()[0]->name(), "b");
    EXPECT_EQ(bdevs.list()[1]->name(), "a");
    const auto b = bdevs.find("b");
    ASSERT_TRUE(b);
    EXPECT_EQ(b->uuid(), *uuid);
    EXPECT_EQ(b->block_size(), 512U);
    EXPECT_EQ(b->num_blocks(), 8U);
    EXPECT_EQ(b->backend().capacity_bytes(), 4096U);
    EXPECT_FALSE(bdevs.find("c"));
    EXPECT_NE(bdevs.find("a")->uuid(), rpc::uuid_bytes{}); // generated
}

TEST(bdev_registry, refuses_a_taken_name_and_bad_geometry)
{
    rpc::bdev_registry bdevs;
    bdevs.add(disk("a"), nvmekit::null_backend{4096});
    const auto code_of = [&](rpc::bdev_options options, std::uint64_t capacity) {
        try {
            bdevs.add(std::move(options), nvmekit::null_backend{capacity});
        } catch (const std::system_error& e) {
            return e.code();
        }
        return std::error_code{};
    };
    EXPECT_EQ(code_of(disk("a"), 4096), std::errc::file_exists);
    EXPECT_EQ(code_of(disk(""), 4096), std::errc::invalid_argument);
    EXPECT_EQ(code_of(disk("b", "null", 0), 4096), std::errc::invalid_argument);
    EXPECT_EQ(code_of(disk("b", "null", 9), 4096), std::errc::invalid_argument); // 9 blocks > 4096 bytes
    EXPECT_EQ(bdevs.size(), 1U);
}

TEST(bdev_registry, removes_only_by_its_module_and_never_while_claimed)
{
    rpc::bdev_registry bdevs;
    const auto a = bdevs.add(disk("a", "malloc"), nvmekit::ram_backend{4096});
    EXPECT_EQ(bdevs.remove("missing"), std::errc::no_such_device);
    EXPECT_EQ(bdevs.remove("a", "null"), std::errc::no_such_device);

    EXPECT_TRUE(a->claim("nqn.2016-06.io.spdk:cnode1"));
    EXPECT_FALSE(a->claim("someone else"));
    EXPECT_TRUE(a->claimed());
    EXPECT_EQ(a->claim_owner(), "nqn.2016-06.io.spdk:cnode1");
    EXPECT_EQ(bdevs.remove("a", "malloc"), std::errc::device_or_resource_busy);
    a->release();
    EXPECT_EQ(bdevs.remove("a", "malloc"), std::errc{});
    EXPECT_FALSE(bdevs.find("a"));
    // A holder keeps a removed bdev alive.
    EXPECT_EQ(a->backend().capacity_bytes(), 4096U);
}

TEST(bdev_io_statistics, counts_reads_writes_and_unmaps_with_latency_bounds)
{
    rpc::bdev_io_statistics stats;
    EXPECT_EQ(stats.counters(), rpc::bdev_io_counters{});
    stats.record(nvmekit::block_operation::read, 4096, 30);
    stats.record(nvmekit::block_operation::read, 512, 10);
    stats.record(nvmekit::block_operation::write, 1024, 7);
    stats.record(nvmekit::block_operation::deallocate, 8192, 5);
    stats.record(nvmekit::block_operation::flush, 0, 100);
    stats.record(nvmekit::block_operation::write_zeroes, 512, 100);
    const rpc::bdev_io_counters expected{
        .read = {4608, 2, 40, 30, 10}, .write = {1024, 1, 7, 7, 7}, .unmap = {8192, 1, 5, 5, 5}};
    EXPECT_EQ(stats.counters(), expected);

    stats.reset(rpc::bdev_io_reset::max_min);
    EXPECT_EQ(stats.counters().read, (rpc::bdev_io_kind_counters{4608, 2, 40, 0, 0}));
    stats.record(nvmekit::block_operation::read, 512, 20);
    EXPECT_EQ(stats.counters().read, (rpc::bdev_io_kind_counters{5120, 3, 60, 20, 20}));
    stats.reset(rpc::bdev_io_reset::all);
    EXPECT_EQ(stats.counters(), rpc::bdev_io_counters{});
}

} // namespace

namespace {

TEST(bdev_backend, serves_the_bdevs_backend_and_keeps_it_alive)
{
    static_assert(nvmekit::BlockBackend<rpc::bdev_backend>);
    rpc::bdev_registry bdevs;
    // The backend is larger than the blocks: a namespace sees the blocks only.
    rpc::bdev_backend backend{bdevs.add(disk("r", "malloc", 4), nvmekit::ram_backend{4096})};
    EXPECT_EQ(backend.capacity_bytes(), 2048U);
    EXPECT_FALSE(backend.has_volatile_cache());

    std::array<std::byte, 512> written{};
    written.fill(std::byte{0x5a});
    std::array<std::byte, 512> read{};
    const nvmekit::io_segment out{written.data(), written.size()};
    const nvmekit::io_segment in{read.data(), read.size()};
    int completed = 0;
    const auto count = [](nvmekit::block_request& r, nvmekit::block_status status) {
        EXPECT_EQ(status, nvmekit::block_status::success);
        ++*static_cast<int*>(r.context);
    };
    nvmekit::block_request write{.operation = nvmekit::block_operation::write,
                                 .offset = 512,
                                 .length = 512,
                                 .segments = {&out, 1},
                                 .complete = count,
                                 .context = &completed};
    backend.submit(write);
    nvmekit::block_request read_back{.operation = nvmekit::block_operation::read,
                                     .offset = 512,
                                     .length = 512,
                                     .segments = {&in, 1},
                                     .complete = count,
                                     .context = &completed};
    backend.submit(read_back);
    backend.poll();
    EXPECT_EQ(completed, 2);
    EXPECT_EQ(read, written);
    EXPECT_EQ(backend.outstanding(), 0U);

    // Removed from the registry, the bdev lives on while the namespace holds it.
    EXPECT_EQ(bdevs.remove("r"), std::errc{});
    EXPECT_EQ(backend.device()->name(), "r");
    EXPECT_EQ(backend.device().use_count(), 1);
}

} // namespace

namespace {

/// The time a test sets, for bdev_clock.
std::uint64_t test_now = 0;
std::uint64_t test_ticks() noexcept { return test_now; }

/// Completes its requests in poll(), on RAM, as an asynchronous backend does.
class deferred_backend {
public:
    [[nodiscard]] std::uint64_t capacity_bytes() const { return storage_.capacity_bytes(); }
    void submit(nvmekit::block_request& request) { waiting_.push_back(&request); }
    std::size_t poll()
    {
        const std::vector<nvmekit::block_request*> due = std::exchange(waiting_, {});
        for (nvmekit::block_request* request : due) {
            storage_.submit(*request);
        }
        return due.size();
    }
    [[nodiscard]] bool has_volatile_cache() const { return false; }
    [[nodiscard]] std::size_t outstanding() const { return waiting_.size(); }

private:
    nvmekit::ram_backend storage_{4096};
    std::vector<nvmekit::block_request*> waiting_;
};

/// What a submitter sees of its requests' completions.
struct completions {
    int count = 0;
    nvmekit::block_status last = nvmekit::block_status::internal_error;

    static void on_complete(nvmekit::block_request& request, nvmekit::block_status status)
    {
        auto& self = *static_cast<completions*>(request.context);
        ++self.count;
        self.last = status;
        EXPECT_EQ(request.relay.complete, nullptr); // given back as it was submitted
    }
    [[nodiscard]] nvmekit::block_request request(nvmekit::block_operation operation, std::uint64_t offset,
                                                 std::uint64_t length,
                                                 const nvmekit::io_segment* segment = nullptr)
    {
        return {.operation = operation,
                .offset = offset,
                .length = length,
                .segments = {segment, segment == nullptr ? 0U : 1U},
                .complete = &completions::on_complete,
                .context = this};
    }
};

TEST(bdev_backend, counts_successful_requests_with_their_latency_from_submission_to_completion)
{
    using nvmekit::block_operation;
    rpc::bdev_registry bdevs{{.tick_rate = 1000, .ticks = &test_ticks}};
    rpc::bdev_backend backend{bdevs.add(disk("d", "malloc"), deferred_backend{})};
    EXPECT_EQ(backend.device()->clock().tick_rate, 1000U);

    std::array<std::byte, 1024> buffer{};
    const nvmekit::io_segment segment{buffer.data(), buffer.size()};
    const nvmekit::io_segment half{buffer.data(), 512};
    completions done;
    auto write = done.request(block_operation::write, 0, 1024, &segment);
    auto read = done.request(block_operation::read, 1024, 512, &half);
    auto deallocate = done.request(block_operation::deallocate, 2048, 2048);
    auto flush = done.request(block_operation::flush, 0, 0);
    auto zeroes = done.request(block_operation::write_zeroes, 0, 512);
    auto beyond = done.request(block_operation::read, 4096, 512, &half); // out of range: fails

    test_now = 100;
    backend.submit(write);
    EXPECT_NE(write.complete, &completions::on_complete); // relayed meanwhile
    EXPECT_EQ(write.relay.submitted_at, 100U);
    test_now = 130;
    backend.poll();
    EXPECT_EQ(done.count, 1);
    EXPECT_EQ(write.complete, &completions::on_complete);
    EXPECT_EQ(write.context, &done);

    for (auto* request : {&read, &deallocate, &flush, &zeroes, &beyond}) {
        backend.submit(*request);
    }
    EXPECT_EQ(backend.outstanding(), 5U);
    test_now = 200;
    backend.poll();
    EXPECT_EQ(done.count, 6);
    EXPECT_EQ(done.last, nvmekit::block_status::out_of_range);

    // A request given back may be submitted again at once, from its own completion.
    struct again {
        rpc::bdev_backend* backend;
        int completed = 0;
    } resubmitted{&backend};
    read.context = &resubmitted;
    read.complete = [](nvmekit::block_request& request, nvmekit::block_status status) {
        EXPECT_EQ(status, nvmekit::block_status::success);
        auto& self = *static_cast<again*>(request.context);
        if (++self.completed == 1) {
            self.backend->submit(request);
        }
    };
    test_now = 300;
    backend.submit(read);
    test_now = 310;
    backend.poll();
    test_now = 400;
    backend.poll();
    EXPECT_EQ(resubmitted.completed, 2);

    const rpc::bdev_io_counters expected{
        .read = {1536, 3, 170, 90, 10}, .write = {1024, 1, 30, 30, 30}, .unmap = {2048, 1, 70, 70, 70}};
    EXPECT_EQ(backend.device()->statistics().counters(), expected);
}

TEST(bdev_backend, counts_every_request_of_threads_submitting_at_once)
{
    rpc::bdev_registry bdevs;
    rpc::bdev_backend backend{bdevs.add(disk("n"), nvmekit::null_backend{4096})};
    static constexpr int threads = 4;
    static constexpr int per_thread = 5000;
    std::vector<std::thread> submitters;
    for (int t = 0; t < threads; ++t) {
        submitters.emplace_back([&backend, t] {
            std::array<std::byte, 512> buffer{};
            const nvmekit::io_segment segment{buffer.data(), buffer.size()};
            completions done;
            for (int i = 0; i < per_thread; ++i) {
                auto request = done.request(t % 2 == 0 ? nvmekit::block_operation::read
                                                       : nvmekit::block_operation::write,
                                            512, 512, &segment);
                backend.submit(request);
            }
            EXPECT_EQ(done.count, per_thread);
        });
    }
    for (auto& submitter : submitters) {
        submitter.join();
    }
    const rpc::bdev_io_counters counted = backend.device()->statistics().counters();
    EXPECT_EQ(counted.read.ops, std::uint64_t{threads / 2 * per_thread});
    EXPECT_EQ(counted.read.bytes, std::uint64_t{threads / 2 * per_thread * 512});
    EXPECT_EQ(counted.write.ops, std::uint64_t{threads / 2 * per_thread});
    EXPECT_LE(counted.read.min_latency_ticks, counted.read.max_latency_ticks);
    EXPECT_LE(counted.read.max_latency_ticks, counted.read.latency_ticks);
}

} // namespace
