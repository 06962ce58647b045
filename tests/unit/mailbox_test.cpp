#include <nvmekit/runtime/mailbox.hpp>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

namespace {

using nvmekit::mailbox;

// A move-only message that counts its live instances, so a test can tell that every message the
// mailbox took in was destroyed exactly once: a leak leaves the count above zero, a double
// destruction drives it below.
class counted {
public:
    explicit counted(int value) noexcept : value_{value} { live.fetch_add(1, std::memory_order_relaxed); }
    counted(counted&& other) noexcept : value_{std::exchange(other.value_, moved_from)}
    {
        live.fetch_add(1, std::memory_order_relaxed);
    }
    counted& operator=(counted&& other) noexcept
    {
        value_ = std::exchange(other.value_, moved_from);
        return *this;
    }
    counted(const counted&) = delete;
    counted& operator=(const counted&) = delete;
    ~counted()
    {
        EXPECT_NE(value_, destroyed) << "destroyed twice";
        value_ = destroyed;
        live.fetch_sub(1, std::memory_order_relaxed);
    }

    [[nodiscard]] int value() const noexcept { return value_; }

    static constexpr int moved_from = -1;
    static constexpr int destroyed = -2;
    static inline std::atomic<long> live{0};

private:
    int value_;
};

// A copyable message whose copy constructor may throw, to reach try_push(const T&)'s copy-first path.
struct throwing_copy {
    std::string text;
    explicit throwing_copy(std::string t) : text{std::move(t)} {}
    throwing_copy(const throwing_copy& other) : text{other.text}
    {
        if (text == "throw") {
            throw std::runtime_error{"copy refused"};
        }
    }
    throwing_copy(throwing_copy&&) noexcept = default;
    throwing_copy& operator=(const throwing_copy&) = default;
    throwing_copy& operator=(throwing_copy&&) noexcept = default;
    ~throwing_copy() = default;
};

} // namespace

TEST(mailbox, capacity_is_rounded_up_to_a_power_of_two_of_at_least_two)
{
    EXPECT_EQ(mailbox<int>{1}.capacity(), 2U);
    EXPECT_EQ(mailbox<int>{2}.capacity(), 2U);
    EXPECT_EQ(mailbox<int>{3}.capacity(), 4U);
    EXPECT_EQ(mailbox<int>{64}.capacity(), 64U);
    EXPECT_EQ(mailbox<int>{1000}.capacity(), 1024U);
}

TEST(mailbox, invalid_capacity_throws)
{
    EXPECT_THROW(mailbox<int>{0}, std::invalid_argument);
    EXPECT_THROW(mailbox<int>{~std::size_t{0}}, std::invalid_argument);
}

TEST(mailbox, starts_empty)
{
    mailbox<int> box{4};
    EXPECT_TRUE(box.empty_approx());
    EXPECT_EQ(box.size_approx(), 0U);
    EXPECT_EQ(box.try_pop(), std::nullopt);
    int out = 7;
    EXPECT_FALSE(box.try_pop(out));
    EXPECT_EQ(out, 7) << "a failed pop must leave its output alone";
}

TEST(mailbox, single_thread_fifo)
{
    mailbox<int> box{8};
    for (int value = 1; value <= 5; ++value) {
        ASSERT_TRUE(box.try_push(value * 10));
    }
    EXPECT_FALSE(box.empty_approx());
    EXPECT_EQ(box.size_approx(), 5U);
    EXPECT_EQ(box.try_pop(), 10);
    int out = 0;
    EXPECT_TRUE(box.try_pop(out));
    EXPECT_EQ(out, 20);
    EXPECT_EQ(box.try_pop(), 30);
    EXPECT_EQ(box.try_pop(), 40);
    EXPECT_EQ(box.try_pop(), 50);
    EXPECT_EQ(box.try_pop(), std::nullopt);
    EXPECT_TRUE(box.empty_approx());
}

TEST(mailbox, full_mailbox_refuses_and_keeps_the_value)
{
    mailbox<std::unique_ptr<int>> box{4};
    for (int value = 0; value < 4; ++value) {
        ASSERT_TRUE(box.try_push(std::make_unique<int>(value)));
    }
    EXPECT_EQ(box.size_approx(), 4U);

    // A refused push must not consume the message: the caller still owns it and can retry.
    auto extra = std::make_unique<int>(99);
    EXPECT_FALSE(box.try_push(std::move(extra)));
    ASSERT_NE(extra, nullptr);
    EXPECT_EQ(*extra, 99);

    for (int value = 0; value < 4; ++value) {
        auto popped = box.try_pop();
        ASSERT_TRUE(popped.has_value());
        ASSERT_NE(*popped, nullptr);
        EXPECT_EQ(**popped, value);
    }
    EXPECT_TRUE(box.try_push(std::move(extra))) << "room again after popping";
}

TEST(mailbox, full_then_empty_then_full_again)
{
    mailbox<int> box{4};
    for (int round = 0; round < 3; ++round) {
        for (int value = 0; value < 4; ++value) {
            ASSERT_TRUE(box.try_push(round * 100 + value)) << "round " << round << " value " << value;
        }
        EXPECT_FALSE(box.try_push(-1)) << "round " << round << ": a fifth message fits in a capacity of 4";
        for (int value = 0; value < 4; ++value) {
            EXPECT_EQ(box.try_pop(), round * 100 + value);
        }
        EXPECT_EQ(box.try_pop(), std::nullopt);
    }
}

TEST(mailbox, wraps_around_many_times)
{
    // Capacity 4, three messages in flight: the positions go around the ring 75,000 times while
    // the mailbox is never empty and never full, so every cell's sequence is reused constantly.
    mailbox<std::uint64_t> box{4};
    std::uint64_t next_in = 0;
    std::uint64_t next_out = 0;
    for (int i = 0; i < 3; ++i) {
        ASSERT_TRUE(box.try_push(next_in++));
    }
    for (int i = 0; i < 300'000; ++i) {
        ASSERT_TRUE(box.try_push(next_in++)) << "at " << i;
        const auto popped = box.try_pop();
        ASSERT_TRUE(popped.has_value()) << "at " << i;
        ASSERT_EQ(*popped, next_out++);
    }
    EXPECT_EQ(box.size_approx(), 3U);
    while (const auto popped = box.try_pop()) {
        EXPECT_EQ(*popped, next_out++);
    }
    EXPECT_EQ(next_out, next_in);
}

TEST(mailbox, drain_pops_oldest_first_up_to_max)
{
    mailbox<int> box{16};
    for (int value = 0; value < 10; ++value) {
        ASSERT_TRUE(box.try_push(value));
    }
    std::vector<int> seen;
    EXPECT_EQ(box.drain([&](int&& value) { seen.push_back(value); }, 4), 4U);
    EXPECT_EQ(seen, (std::vector<int>{0, 1, 2, 3}));
    EXPECT_EQ(box.drain([&](int&& value) { seen.push_back(value); }, 100), 6U);
    EXPECT_EQ(seen, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
    EXPECT_EQ(box.drain([&](int&&) { ADD_FAILURE() << "nothing left to drain"; }, 100), 0U);
    EXPECT_EQ(box.drain([&](int&&) { ADD_FAILURE() << "max is 0"; }, 0), 0U);
}

TEST(mailbox, drain_callback_may_push_into_the_same_mailbox)
{
    // Each message is out of its cell before the callback runs, so a full mailbox has room for the
    // callback's push. Messages pushed during the drain are drained too, up to max.
    mailbox<int> box{2};
    ASSERT_TRUE(box.try_push(1));
    ASSERT_TRUE(box.try_push(2));
    std::vector<int> seen;
    const std::size_t popped = box.drain(
        [&](int&& value) {
            seen.push_back(value);
            if (value < 5) {
                EXPECT_TRUE(box.try_push(value + 2));
            }
        },
        5);
    EXPECT_EQ(popped, 5U);
    EXPECT_EQ(seen, (std::vector<int>{1, 2, 3, 4, 5}));
    EXPECT_EQ(box.try_pop(), 6);
    EXPECT_EQ(box.try_pop(), std::nullopt);
}

TEST(mailbox, exception_from_drain_callback_loses_only_that_message)
{
    mailbox<int> box{4};
    ASSERT_TRUE(box.try_push(1));
    ASSERT_TRUE(box.try_push(2));
    ASSERT_TRUE(box.try_push(3));
    EXPECT_THROW(box.drain(
                     [](int&& value) {
                         if (value == 2) {
                             throw std::runtime_error{"handler failed"};
                         }
                     },
                     10),
                 std::runtime_error);
    EXPECT_EQ(box.try_pop(), 3);
    EXPECT_EQ(box.try_pop(), std::nullopt);
}

TEST(mailbox, move_only_messages_keep_their_ownership)
{
    mailbox<std::unique_ptr<std::string>> box{4};
    auto message = std::make_unique<std::string>("delete sq 3");
    const std::string* const address = message.get();
    ASSERT_TRUE(box.try_push(std::move(message)));
    EXPECT_EQ(message, nullptr) << "an accepted push moves the message in";
    auto popped = box.try_pop();
    ASSERT_TRUE(popped.has_value());
    ASSERT_NE(*popped, nullptr);
    EXPECT_EQ(popped->get(), address) << "the same object, moved, not copied";
    EXPECT_EQ(**popped, "delete sq 3");
}

TEST(mailbox, every_message_is_destroyed_exactly_once)
{
    ASSERT_EQ(counted::live.load(), 0);
    {
        mailbox<counted> box{8};
        for (int value = 0; value < 8; ++value) {
            ASSERT_TRUE(box.try_emplace(value));
        }
        EXPECT_EQ(counted::live.load(), 8);

        // A refused emplace constructs nothing.
        EXPECT_FALSE(box.try_emplace(100));
        EXPECT_EQ(counted::live.load(), 8);
        // A refused push leaves the caller's message whole.
        counted refused{200};
        EXPECT_FALSE(box.try_push(std::move(refused)));
        EXPECT_EQ(refused.value(), 200);

        // Popped messages leave the mailbox; each pop destroys the moved-from cell content.
        auto first = box.try_pop();
        ASSERT_TRUE(first.has_value());
        EXPECT_EQ(first->value(), 0);
        counted second{0};
        ASSERT_TRUE(box.try_pop(second));
        EXPECT_EQ(second.value(), 1);
        EXPECT_EQ(box.drain([](counted&& message) { EXPECT_EQ(message.value(), 2); }, 1), 1U);
        // 1 (refused) + 1 (first) + 1 (second) + 5 still queued.
        EXPECT_EQ(counted::live.load(), 8);

        // Wrap around with counted messages, then leave 5 queued for the destructor.
        for (int round = 0; round < 100; ++round) {
            ASSERT_TRUE(box.try_emplace(1000 + round));
            ASSERT_TRUE(box.try_pop().has_value());
        }
        EXPECT_EQ(counted::live.load(), 8);
    }
    EXPECT_EQ(counted::live.load(), 0) << "the mailbox leaked or double-destroyed messages";
}

TEST(mailbox, copying_push_leaves_the_mailbox_unchanged_when_the_copy_throws)
{
    mailbox<throwing_copy> box{2};
    const throwing_copy good{"fine"};
    const throwing_copy bad{"throw"};
    EXPECT_TRUE(box.try_push(good));
    EXPECT_THROW(box.try_push(bad), std::runtime_error);
    EXPECT_EQ(box.size_approx(), 1U);
    EXPECT_TRUE(box.try_push(good)) << "the throwing copy must not have claimed a cell";
    EXPECT_FALSE(box.try_push(good));
    EXPECT_EQ(box.try_pop()->text, "fine");
    EXPECT_EQ(box.try_pop()->text, "fine");
    EXPECT_EQ(box.try_pop().has_value(), false);
}

TEST(mailbox, many_producers_one_consumer_every_message_once_in_producer_order)
{
    // 4 producers push 200,000 messages each through a 1024-message mailbox (so producers find it
    // full often); one consumer pops. Every (producer, sequence) pair must arrive exactly once, and
    // each producer's messages in the order it pushed them: the next sequence seen from a producer
    // is always the previous one plus one.
    constexpr int producers = 4;
    constexpr std::uint32_t per_producer = 200'000;
    struct message {
        std::uint32_t producer;
        std::uint32_t sequence;
    };
    mailbox<message> box{1024};

    std::atomic<bool> go{false};
    std::vector<std::thread> threads;
    for (int producer = 0; producer < producers; ++producer) {
        threads.emplace_back([&box, &go, producer] {
            while (!go.load(std::memory_order_acquire)) {
                std::this_thread::yield();
            }
            for (std::uint32_t sequence = 0; sequence < per_producer; ++sequence) {
                while (!box.try_push(message{static_cast<std::uint32_t>(producer), sequence})) {
                    std::this_thread::yield();
                }
            }
        });
    }

    std::array<std::uint32_t, producers> next{};
    std::uint64_t received = 0;
    std::uint64_t out_of_order = 0;
    go.store(true, std::memory_order_release);
    while (received < std::uint64_t{producers} * per_producer) {
        const std::size_t popped = box.drain(
            [&](message&& m) {
                if (m.producer >= producers || m.sequence != next[m.producer]) {
                    ++out_of_order;
                } else {
                    ++next[m.producer];
                }
                ++received;
            },
            256);
        if (popped == 0) {
            std::this_thread::yield();
        }
    }
    for (auto& thread : threads) {
        thread.join();
    }
    EXPECT_EQ(out_of_order, 0U);
    for (int producer = 0; producer < producers; ++producer) {
        EXPECT_EQ(next[producer], per_producer) << "producer " << producer;
    }
    EXPECT_EQ(box.try_pop().has_value(), false) << "a message arrived twice or from nowhere";
    EXPECT_TRUE(box.empty_approx());
}

TEST(mailbox, many_producers_of_owning_messages_leak_nothing)
{
    // Non-trivial messages across threads: each producer sends counted messages; the consumer
    // takes most of them, the mailbox's destructor the rest. No instance may survive the mailbox.
    ASSERT_EQ(counted::live.load(), 0);
    constexpr int producers = 3;
    constexpr int per_producer = 20'000;
    {
        mailbox<counted> box{64};
        std::vector<std::thread> threads;
        for (int producer = 0; producer < producers; ++producer) {
            threads.emplace_back([&box, producer] {
                for (int sequence = 0; sequence < per_producer; ++sequence) {
                    while (!box.try_emplace(producer * per_producer + sequence)) {
                        std::this_thread::yield();
                    }
                }
            });
        }
        std::vector<bool> seen(producers * per_producer, false);
        std::uint64_t consumed = 0;
        std::uint64_t duplicates = 0;
        std::uint64_t out_of_range = 0;
        // Consume all but 32 messages, then stop: the producers can still finish (the mailbox holds
        // 64) and the 32 left behind are for the mailbox's destructor.
        constexpr std::uint64_t left_for_destructor = 32;
        while (consumed < std::uint64_t{producers} * per_producer - left_for_destructor) {
            auto popped = box.try_pop();
            if (!popped) {
                std::this_thread::yield();
                continue;
            }
            const int value = popped->value();
            if (value < 0 || value >= producers * per_producer) {
                ++out_of_range;
            } else if (seen[static_cast<std::size_t>(value)]) {
                ++duplicates;
            } else {
                seen[static_cast<std::size_t>(value)] = true;
            }
            ++consumed;
        }
        for (auto& thread : threads) {
            thread.join();
        }
        EXPECT_EQ(out_of_range, 0U);
        EXPECT_EQ(duplicates, 0U);
        EXPECT_EQ(box.size_approx(), left_for_destructor);
        EXPECT_EQ(static_cast<std::uint64_t>(counted::live.load()), left_for_destructor)
            << "live instances must be exactly the messages still queued";
    }
    EXPECT_EQ(counted::live.load(), 0) << "messages leaked or destroyed twice";
}
