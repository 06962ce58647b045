#include <nvmekit/state/shutdown_flushes.hpp>

#include <cstddef>
#include <vector>

#include <gtest/gtest.h>

namespace {
namespace shutdown_flushes_test {

using nvmekit::block_operation;
using nvmekit::block_request;
using nvmekit::block_status;

/// A backend that keeps every request until the test completes it.
struct held_backend {
    std::vector<block_request*> held;
    void submit(block_request& request) { held.push_back(&request); }
};

struct fake_namespace {
    held_backend backend_;
    held_backend& backend() noexcept { return backend_; }
};

struct no_route {};
using flushes_type = nvmekit::detail::shutdown_flushes<fake_namespace, no_route>;

struct rig {
    flushes_type flushes;
    std::vector<fake_namespace> namespaces = std::vector<fake_namespace>(3);
    int completions = 0;

    static void on_complete(block_request& request, block_status)
    {
        auto& flush = *static_cast<flushes_type::flush*>(request.context);
        auto& self = *static_cast<rig*>(flush.owner);
        ++self.completions;
        self.flushes.finished(flush);
    }

    /// Starts a shutdown flushing the namespaces whose index `wanted` accepts.
    template <typename Wanted>
    void start(Wanted wanted)
    {
        flushes.start(this, &on_complete, [&](auto&& flush) {
            for (std::size_t i = 0; i < namespaces.size(); ++i) {
                if (wanted(i)) {
                    flush(namespaces[i]);
                }
            }
        });
    }

    /// Completes the oldest request namespace `i` holds.
    void complete(std::size_t i)
    {
        auto& held = namespaces[i].backend_.held;
        ASSERT_FALSE(held.empty());
        block_request* request = held.front();
        held.erase(held.begin());
        request->complete(*request, block_status::success);
    }
};

TEST(shutdown_flushes, one_flush_per_namespace_and_done_when_all_return)
{
    rig r;
    r.start([](std::size_t i) { return i != 1; });
    EXPECT_EQ(r.flushes.pending(), 2U);
    EXPECT_EQ(r.flushes.in_backend(), 2U);
    ASSERT_EQ(r.namespaces[0].backend_.held.size(), 1U);
    EXPECT_EQ(r.namespaces[0].backend_.held.front()->operation, block_operation::flush);
    EXPECT_TRUE(r.namespaces[1].backend_.held.empty());
    r.complete(2);
    EXPECT_EQ(r.flushes.pending(), 1U);
    r.complete(0);
    EXPECT_EQ(r.flushes.pending(), 0U);
    EXPECT_EQ(r.flushes.in_backend(), 0U);
    EXPECT_EQ(r.completions, 2);
}

TEST(shutdown_flushes, an_abandoned_flush_does_not_count_for_the_next_shutdown)
{
    rig r;
    r.start([](std::size_t i) { return i == 0; });
    r.flushes.abandon(); // a reset
    EXPECT_EQ(r.flushes.pending(), 0U);
    EXPECT_EQ(r.flushes.in_backend(), 1U);
    r.start([](std::size_t i) { return i == 0; });
    // The old flush is still in the backend: it is not submitted twice at once.
    EXPECT_EQ(r.namespaces[0].backend_.held.size(), 1U);
    EXPECT_EQ(r.flushes.pending(), 1U);
    r.complete(0); // the old one returns: submitted again for this shutdown
    EXPECT_EQ(r.flushes.pending(), 1U);
    ASSERT_EQ(r.namespaces[0].backend_.held.size(), 1U);
    r.complete(0);
    EXPECT_EQ(r.flushes.pending(), 0U);
    EXPECT_EQ(r.flushes.in_backend(), 0U);
}

TEST(shutdown_flushes, a_flush_that_returns_after_an_abandoned_shutdown_is_not_resubmitted)
{
    rig r;
    r.start([](std::size_t) { return true; });
    r.flushes.abandon();
    for (std::size_t i = 0; i < 3; ++i) {
        r.complete(i);
    }
    EXPECT_EQ(r.flushes.in_backend(), 0U);
    EXPECT_EQ(r.flushes.pending(), 0U);
    for (const auto& ns : r.namespaces) {
        EXPECT_TRUE(ns.backend_.held.empty());
    }
}

TEST(shutdown_flushes, the_request_object_is_reused_for_a_namespace)
{
    rig r;
    r.start([](std::size_t i) { return i == 2; });
    const block_request* first = r.namespaces[2].backend_.held.front();
    r.complete(2);
    r.start([](std::size_t i) { return i == 2; });
    EXPECT_EQ(r.namespaces[2].backend_.held.front(), first);
    r.complete(2);
    EXPECT_EQ(r.flushes.pending(), 0U);
}

} // namespace shutdown_flushes_test
} // namespace
