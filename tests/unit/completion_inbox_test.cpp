#include <nvmekit/runtime/completion_inbox.hpp>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <nvmekit/contracts/block_backend.hpp>

namespace {

using nvmekit::block_request;
using nvmekit::block_status;
using nvmekit::completion_inbox;
using nvmekit::routed_completion;

/// A request with its routing node, as an owner holds them; `id` names it in the tests' journals.
struct owned_request {
    int id = 0;
    int finished = 0; ///< how often `node.finish` ran
    block_request request{};
    routed_completion node{};

    explicit owned_request(int identifier, block_status status = block_status::success) : id{identifier}
    {
        request.context = this;
        node.request = &request;
        node.status = status;
        node.finish = [](block_request& done, block_status) {
            static_cast<owned_request*>(done.context)->finished++;
        };
    }
    owned_request(const owned_request&) = delete;
    owned_request& operator=(const owned_request&) = delete;
};

/// The id of the request a node routes.
int id_of(const routed_completion& node) { return static_cast<owned_request*>(node.request->context)->id; }

} // namespace

TEST(completion_inbox, an_empty_inbox_drains_nothing)
{
    completion_inbox inbox;
    EXPECT_TRUE(inbox.empty_approx());
    EXPECT_EQ(inbox.drain([](routed_completion&) { ADD_FAILURE() << "nothing was pushed"; }), 0U);
    EXPECT_TRUE(inbox.empty_approx());
}

TEST(completion_inbox, drain_runs_the_nodes_in_push_order_and_returns_the_count)
{
    completion_inbox inbox;
    owned_request a{1};
    owned_request b{2, block_status::write_fault};
    owned_request c{3};
    inbox.push(b.node);
    EXPECT_FALSE(inbox.empty_approx());
    inbox.push(a.node);
    inbox.push(c.node);
    std::vector<int> order;
    std::vector<block_status> statuses;
    const std::size_t taken = inbox.drain([&](routed_completion& node) {
        order.push_back(id_of(node));
        statuses.push_back(node.status);
        node.finish(*node.request, node.status);
    });
    EXPECT_EQ(taken, 3U);
    EXPECT_EQ(order, (std::vector<int>{2, 1, 3}));
    EXPECT_EQ(statuses, (std::vector<block_status>{block_status::write_fault, block_status::success,
                                                   block_status::success}));
    EXPECT_EQ(a.finished, 1);
    EXPECT_EQ(b.finished, 1);
    EXPECT_EQ(c.finished, 1);
    EXPECT_TRUE(inbox.empty_approx());
    EXPECT_EQ(inbox.drain([](routed_completion&) { ADD_FAILURE() << "drained twice"; }), 0U);
}

TEST(completion_inbox, a_single_node_round_trips)
{
    completion_inbox inbox;
    owned_request only{7, block_status::unrecovered_read_error};
    for (int round = 1; round <= 3; ++round) {
        inbox.push(only.node);
        std::vector<int> seen;
        EXPECT_EQ(inbox.drain([&](routed_completion& node) {
            EXPECT_EQ(&node, &only.node);
            EXPECT_EQ(node.request, &only.request);
            EXPECT_EQ(node.status, block_status::unrecovered_read_error);
            seen.push_back(id_of(node));
        }),
                  1U);
        EXPECT_EQ(seen, std::vector<int>{7}) << "round " << round;
    }
}

TEST(completion_inbox, a_node_pushed_again_from_drain_waits_for_the_next_drain)
{
    // Re-pushing the node being run rewrites its `next`; the drain must still run the nodes after
    // it, and the re-pushed node (and a new one pushed from the callback) only in the next drain.
    completion_inbox inbox;
    owned_request a{1};
    owned_request b{2};
    owned_request c{3};
    owned_request d{4};
    inbox.push(a.node);
    inbox.push(b.node);
    inbox.push(c.node);
    std::vector<int> order;
    const std::size_t first = inbox.drain([&](routed_completion& node) {
        order.push_back(id_of(node));
        if (&node == &a.node) {
            inbox.push(a.node);
            inbox.push(d.node);
        }
    });
    EXPECT_EQ(first, 3U);
    EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
    EXPECT_FALSE(inbox.empty_approx());
    order.clear();
    EXPECT_EQ(inbox.drain([&](routed_completion& node) { order.push_back(id_of(node)); }), 2U);
    EXPECT_EQ(order, (std::vector<int>{1, 4}));
    EXPECT_TRUE(inbox.empty_approx());
}

TEST(completion_inbox, the_last_node_pushed_again_from_drain_is_not_run_twice_in_it)
{
    completion_inbox inbox;
    owned_request a{1};
    owned_request b{2};
    inbox.push(a.node);
    inbox.push(b.node);
    std::vector<int> order;
    EXPECT_EQ(inbox.drain([&](routed_completion& node) {
        order.push_back(id_of(node));
        inbox.push(node);
    }),
              2U);
    EXPECT_EQ(order, (std::vector<int>{1, 2}));
    order.clear();
    EXPECT_EQ(inbox.drain([&](routed_completion& node) { order.push_back(id_of(node)); }), 2U);
    EXPECT_EQ(order, (std::vector<int>{1, 2}));
}

TEST(completion_inbox, many_producers_one_consumer_every_completion_once_in_producer_order)
{
    // 4 producers each own 8 nodes and complete 20,000 requests through them, round robin: a
    // node is pushed again only after the consumer's finish released it. The node carries its
    // producer, a sequence number and a status derived from it; the consumer checks that each
    // producer's sequence numbers arrive one after the other (so none is lost, repeated or
    // reordered) with the status they were pushed with.
    constexpr int producers = 4;
    constexpr int nodes_per_producer = 8;
    constexpr std::uint32_t per_producer = 20'000;
    const auto status_for = [](std::uint32_t sequence) {
        return sequence % 3 == 0 ? block_status::write_fault : block_status::success;
    };

    struct consumer_ledger {
        std::array<std::uint32_t, producers> next{};
        std::uint64_t finished = 0;
        std::uint64_t out_of_order = 0;
        std::uint64_t wrong_status = 0;
    } ledger;
    struct producer_node {
        block_request request{};
        routed_completion node{};
        std::atomic<bool> busy{false};
        consumer_ledger* ledger = nullptr;
        int producer = 0;
        std::uint32_t sequence = 0;
    };
    const auto nodes = std::make_unique<producer_node[]>(producers * nodes_per_producer);
    for (int index = 0; index < producers * nodes_per_producer; ++index) {
        producer_node& owner = nodes[index];
        owner.ledger = &ledger;
        owner.producer = index / nodes_per_producer;
        owner.request.context = &owner;
        owner.node.request = &owner.request;
        // Runs on the consumer thread; the release store hands the node back to its producer.
        owner.node.finish = [](block_request& done, block_status status) {
            auto* self = static_cast<producer_node*>(done.context);
            consumer_ledger& books = *self->ledger;
            const auto producer = static_cast<std::size_t>(self->producer);
            if (self->sequence != books.next[producer]) {
                ++books.out_of_order;
            } else {
                ++books.next[producer];
            }
            const block_status expected =
                self->sequence % 3 == 0 ? block_status::write_fault : block_status::success;
            books.wrong_status += status != expected ? 1 : 0;
            ++books.finished;
            self->busy.store(false, std::memory_order_release);
        };
    }

    completion_inbox inbox;
    std::atomic<bool> go{false};
    std::vector<std::thread> threads;
    for (int producer = 0; producer < producers; ++producer) {
        threads.emplace_back([&, producer] {
            while (!go.load(std::memory_order_acquire)) {
                std::this_thread::yield();
            }
            for (std::uint32_t sequence = 0; sequence < per_producer; ++sequence) {
                producer_node& owner =
                    nodes[producer * nodes_per_producer + static_cast<int>(sequence % nodes_per_producer)];
                while (owner.busy.load(std::memory_order_acquire)) {
                    std::this_thread::yield();
                }
                owner.busy.store(true, std::memory_order_relaxed);
                owner.sequence = sequence;
                owner.node.status = status_for(sequence);
                inbox.push(owner.node);
            }
        });
    }

    constexpr std::uint64_t total = std::uint64_t{producers} * per_producer;
    std::uint64_t taken = 0;
    go.store(true, std::memory_order_release);
    while (ledger.finished < total) {
        const std::size_t count =
            inbox.drain([](routed_completion& node) { node.finish(*node.request, node.status); });
        taken += count;
        if (count == 0) {
            std::this_thread::yield();
        }
    }
    for (auto& thread : threads) {
        thread.join();
    }
    EXPECT_EQ(inbox.drain(
                  [](routed_completion&) { ADD_FAILURE() << "a completion arrived twice or from nowhere"; }),
              0U);
    EXPECT_TRUE(inbox.empty_approx());
    EXPECT_EQ(taken, total);
    EXPECT_EQ(ledger.finished, total);
    EXPECT_EQ(ledger.out_of_order, 0U);
    EXPECT_EQ(ledger.wrong_status, 0U);
    for (int producer = 0; producer < producers; ++producer) {
        EXPECT_EQ(ledger.next[static_cast<std::size_t>(producer)], per_producer) << "producer " << producer;
    }
    for (int index = 0; index < producers * nodes_per_producer; ++index) {
        EXPECT_FALSE(nodes[index].busy.load()) << "node " << index << " was never finished";
    }
}
