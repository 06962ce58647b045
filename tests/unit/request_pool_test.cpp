#include <nvmekit/queues/request_pool.hpp>

#include <cstddef>
#include <cstdint>
#include <set>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "asserts_enabled.hpp"
#include "counting_new.hpp"

using nvmekit::request_state;
using nvmekit_test::allocation_count;
using nvmekit_test::asserts_enabled;

namespace {

struct command_payload {
    std::uint16_t cid = 0;
    std::uint32_t bytes = 0;
};

using pool_type = nvmekit::request_pool<command_payload>;
using request = pool_type::request;

std::vector<std::uint32_t> in_flight_indexes(pool_type& pool)
{
    std::vector<std::uint32_t> result;
    pool.for_each_in_flight([&](request& r) { result.push_back(r.index()); });
    return result;
}

} // namespace

TEST(request_pool, new_pool_has_every_request_free)
{
    pool_type pool{4};
    EXPECT_EQ(pool.capacity(), 4U);
    EXPECT_EQ(pool.available(), 4U);
    EXPECT_EQ(pool.in_use(), 0U);
    EXPECT_EQ(pool.in_flight_count(), 0U);
    EXPECT_TRUE(pool.all_free());
    for (std::uint32_t index = 0; index < 4; ++index) {
        EXPECT_EQ(pool.at(index).index(), index);
        EXPECT_EQ(pool.at(index).state(), request_state::free);
    }
    EXPECT_TRUE(in_flight_indexes(pool).empty());
}

TEST(request_pool, acquire_hands_out_distinct_in_flight_requests_until_exhausted)
{
    pool_type pool{3};
    std::set<request*> taken;
    for (int i = 0; i < 3; ++i) {
        request* r = pool.acquire();
        ASSERT_NE(r, nullptr);
        EXPECT_EQ(r->state(), request_state::in_flight);
        EXPECT_EQ(&pool.at(r->index()), r);
        taken.insert(r);
    }
    EXPECT_EQ(taken.size(), 3U);
    EXPECT_EQ(pool.available(), 0U);
    EXPECT_EQ(pool.in_use(), 3U);
    EXPECT_FALSE(pool.all_free());

    EXPECT_EQ(pool.acquire(), nullptr);
    EXPECT_EQ(pool.acquire(), nullptr);
    EXPECT_EQ(pool.in_use(), 3U);
    EXPECT_EQ(pool.in_flight_count(), 3U);
}

TEST(request_pool, request_moves_through_every_state_back_to_free)
{
    pool_type pool{2};
    request* r = pool.acquire();
    ASSERT_NE(r, nullptr);
    r->payload = {.cid = 42, .bytes = 4096};
    EXPECT_EQ(pool.in_flight_count(), 1U);

    pool.mark_completed(*r);
    EXPECT_EQ(r->state(), request_state::completed);
    EXPECT_EQ(pool.in_flight_count(), 1U);
    EXPECT_EQ(pool.in_use(), 1U);

    pool.mark_posted(*r);
    EXPECT_EQ(r->state(), request_state::posted);
    EXPECT_EQ(pool.in_flight_count(), 0U);
    EXPECT_EQ(pool.in_use(), 1U);
    EXPECT_EQ(pool.available(), 1U);
    EXPECT_EQ(r->payload.cid, 42U);
    EXPECT_EQ(r->payload.bytes, 4096U);

    pool.release(*r);
    EXPECT_EQ(r->state(), request_state::free);
    EXPECT_EQ(pool.in_use(), 0U);
    EXPECT_EQ(pool.available(), 2U);
    EXPECT_TRUE(pool.all_free());
}

TEST(request_pool, completed_request_can_be_released_without_posting)
{
    pool_type pool{2};
    request* r = pool.acquire();
    ASSERT_NE(r, nullptr);
    pool.mark_completed(*r);
    pool.release(*r);
    EXPECT_EQ(r->state(), request_state::free);
    EXPECT_EQ(pool.in_flight_count(), 0U);
    EXPECT_TRUE(pool.all_free());
    EXPECT_TRUE(in_flight_indexes(pool).empty());
}

TEST(request_pool, release_posted_frees_a_completed_request_in_one_step)
{
    pool_type pool{2};
    request* r = pool.acquire();
    ASSERT_NE(r, nullptr);
    pool.mark_completed(*r);
    pool.release_posted(*r);
    EXPECT_EQ(r->state(), request_state::free);
    EXPECT_EQ(pool.in_flight_count(), 0U);
    EXPECT_EQ(pool.available(), 2U);
    EXPECT_TRUE(pool.all_free());
    EXPECT_EQ(pool.acquire(), r); // the latest released is served first
}

TEST(request_pool, exhausted_pool_serves_again_after_a_release_and_reuses_the_latest_first)
{
    pool_type pool{2};
    request* first = pool.acquire();
    request* second = pool.acquire();
    ASSERT_NE(first, nullptr);
    ASSERT_NE(second, nullptr);
    ASSERT_EQ(pool.acquire(), nullptr);

    pool.mark_completed(*second);
    pool.mark_posted(*second);
    pool.release(*second);
    request* again = pool.acquire();
    EXPECT_EQ(again, second);
    EXPECT_EQ(again->state(), request_state::in_flight);
    EXPECT_EQ(pool.acquire(), nullptr);

    pool.mark_completed(*first);
    pool.release(*first);
    pool.mark_completed(*again);
    pool.release(*again);
    EXPECT_EQ(pool.acquire(), again);
    EXPECT_EQ(pool.acquire(), first);
}

TEST(request_pool, payload_is_left_for_the_next_user_to_initialise)
{
    pool_type pool{1};
    request* r = pool.acquire();
    ASSERT_NE(r, nullptr);
    r->payload.cid = 7;
    pool.mark_completed(*r);
    pool.release(*r);
    EXPECT_EQ(pool.acquire()->payload.cid, 7U);
}

TEST(request_pool, for_each_in_flight_visits_in_flight_and_completed_in_index_order)
{
    pool_type pool{5};
    std::vector<request*> r;
    for (int i = 0; i < 5; ++i) {
        r.push_back(pool.acquire());
        ASSERT_NE(r.back(), nullptr);
    }
    pool.mark_completed(*r[1]); // completed: visited
    pool.mark_completed(*r[2]);
    pool.mark_posted(*r[2]); // posted: not visited
    pool.mark_completed(*r[3]);
    pool.mark_posted(*r[3]);
    pool.release(*r[3]); // free: not visited

    EXPECT_EQ(in_flight_indexes(pool),
              (std::vector<std::uint32_t>{r[0]->index(), r[1]->index(), r[4]->index()}));
    EXPECT_EQ(pool.in_flight_count(), 3U);
    std::vector<request_state> states;
    pool.for_each_in_flight([&](request& each) { states.push_back(each.state()); });
    EXPECT_EQ(states, (std::vector<request_state>{request_state::in_flight, request_state::completed,
                                                  request_state::in_flight}));
}

TEST(request_pool, for_each_in_flight_lets_the_visitor_abort_and_release_each_request)
{
    pool_type pool{4};
    for (int i = 0; i < 4; ++i) {
        ASSERT_NE(pool.acquire(), nullptr);
    }
    pool.mark_completed(pool.at(2));

    std::size_t visited = 0;
    pool.for_each_in_flight([&](request& each) {
        ++visited;
        if (each.state() == request_state::in_flight) {
            pool.mark_completed(each);
        }
        pool.release(each);
    });

    EXPECT_EQ(visited, 4U);
    EXPECT_TRUE(pool.all_free());
    EXPECT_EQ(pool.in_flight_count(), 0U);
    for (std::uint32_t index = 0; index < 4; ++index) {
        EXPECT_EQ(pool.at(index).state(), request_state::free);
    }
}

TEST(request_pool, acquire_and_release_do_not_allocate)
{
    pool_type pool{64};
    std::vector<request*> taken;
    taken.reserve(64);
    const std::size_t before = allocation_count.load();

    for (int round = 0; round < 10; ++round) {
        while (request* r = pool.acquire()) {
            taken.push_back(r);
        }
        pool.for_each_in_flight([&](request& each) { pool.mark_completed(each); });
        for (request* r : taken) {
            pool.mark_posted(*r);
            pool.release(*r);
        }
        taken.clear();
    }

    EXPECT_EQ(allocation_count.load(), before);
    EXPECT_TRUE(pool.all_free());
}

TEST(request_pool, moved_pool_keeps_its_requests_and_their_states)
{
    pool_type original{3};
    request* r = original.acquire();
    ASSERT_NE(r, nullptr);
    r->payload.cid = 9;

    pool_type moved{std::move(original)};
    EXPECT_EQ(moved.capacity(), 3U);
    EXPECT_EQ(moved.in_use(), 1U);
    EXPECT_EQ(&moved.at(r->index()), r);
    EXPECT_EQ(in_flight_indexes(moved), (std::vector<std::uint32_t>{r->index()}));
    moved.mark_completed(*r);
    moved.release(*r);
    EXPECT_TRUE(moved.all_free());

    EXPECT_EQ(original.capacity(), 0U); // NOLINT(bugprone-use-after-move): the moved-from state is specified
    EXPECT_EQ(original.acquire(), nullptr);
    EXPECT_TRUE(original.all_free());
}

TEST(request_pool, empty_pool_never_serves)
{
    pool_type pool{0};
    EXPECT_EQ(pool.acquire(), nullptr);
    EXPECT_TRUE(pool.all_free());
    EXPECT_EQ(pool.in_use(), 0U);
}

TEST(request_pool_death, illegal_state_moves_assert)
{
    if (!asserts_enabled) {
        GTEST_SKIP() << "NVMEKIT_ASSERT is compiled out";
    }
    pool_type pool{4};
    request& free_request = pool.at(0);
    EXPECT_DEATH(pool.mark_completed(free_request), "mark_completed needs an in_flight request");
    EXPECT_DEATH(pool.mark_posted(free_request), "mark_posted needs a completed request");
    EXPECT_DEATH(pool.release(free_request), "release needs a posted or completed request");

    request* in_flight = pool.acquire();
    ASSERT_NE(in_flight, nullptr);
    EXPECT_DEATH(pool.mark_posted(*in_flight), "mark_posted needs a completed request");
    EXPECT_DEATH(pool.release(*in_flight), "release needs a posted or completed request");
    EXPECT_DEATH(pool.release_posted(*in_flight), "release_posted needs a completed request");

    pool.mark_completed(*in_flight);
    EXPECT_DEATH(pool.mark_completed(*in_flight), "mark_completed needs an in_flight request");

    pool.mark_posted(*in_flight);
    EXPECT_DEATH(pool.mark_completed(*in_flight), "mark_completed needs an in_flight request");
    EXPECT_DEATH(pool.mark_posted(*in_flight), "mark_posted needs a completed request");
    EXPECT_DEATH(pool.release_posted(*in_flight), "release_posted needs a completed request");

    pool.release(*in_flight);
    EXPECT_DEATH(pool.release(*in_flight), "release needs a posted or completed request");
}

TEST(request_pool_death, request_of_another_pool_or_index_out_of_range_asserts)
{
    if (!asserts_enabled) {
        GTEST_SKIP() << "NVMEKIT_ASSERT is compiled out";
    }
    pool_type pool{2};
    pool_type other{2};
    request* foreign = other.acquire();
    ASSERT_NE(foreign, nullptr);
    EXPECT_DEATH(pool.mark_completed(*foreign), "request of another pool");
    EXPECT_DEATH(static_cast<void>(pool.at(2)), "index out of range");
}
