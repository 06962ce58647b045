#include <nvmekit/core/io_context.hpp>

#include <cstddef>
#include <type_traits>

#include <gtest/gtest.h>

#include <nvmekit/contracts/threading.hpp>
#include <nvmekit/core/controller_config.hpp>
#include <nvmekit/testing/async_dma.hpp>
#include <nvmekit/testing/flat_memory.hpp>

namespace {
namespace io_context_test {

namespace nt = nvmekit::testing;

// The record of a command is built from the traits alone: the controller is only named, by
// pointer, so a stand-in does.
struct stand_in_controller;

struct synchronous_traits : nvmekit::default_traits {
    using dma = nt::flat_memory;
};
struct asynchronous_traits : nvmekit::default_traits {
    using dma = nt::async_dma<nt::flat_memory>;
    using threading = nvmekit::multi_threaded;
};

using synchronous_command = nvmekit::detail::controller_command<stand_in_controller, synchronous_traits>;
using asynchronous_command = nvmekit::detail::controller_command<stand_in_controller, asynchronous_traits>;

static_assert(!nvmekit::dma_completes_later_v<nt::flat_memory>, "a synchronous provider");
static_assert(nvmekit::dma_completes_later_v<nt::async_dma<nt::flat_memory>>, "a provider completing later");
static_assert(std::is_same_v<std::remove_cvref_t<decltype(synchronous_command{}.async)>,
                             nvmekit::detail::no_async_state>,
              "a synchronous provider's command carries no journal");
static_assert(std::is_same_v<std::remove_cvref_t<decltype(asynchronous_command{}.async)>,
                             nvmekit::detail::async_command_state<stand_in_controller, asynchronous_traits>>,
              "a command of a provider completing later carries its journal");
static_assert(sizeof(synchronous_command) < sizeof(asynchronous_command),
              "the journal costs nothing otherwise");
static_assert(std::is_same_v<decltype(asynchronous_command{}.group),
                             nvmekit::detail::poll_group_state<asynchronous_command, true>*>,
              "the threading policy decides the poll group's state");

TEST(controller_command, starts_with_no_owner_request_state_or_staging_buffer)
{
    const synchronous_command cmd{};
    EXPECT_EQ(cmd.owner, nullptr);
    EXPECT_EQ(cmd.sq, nullptr);
    EXPECT_EQ(cmd.group, nullptr);
    EXPECT_EQ(cmd.ns, nullptr);
    EXPECT_EQ(cmd.staging, nullptr);
    EXPECT_EQ(cmd.continuation, nullptr);
    EXPECT_EQ(cmd.blocks_pending, 0U);
    EXPECT_FALSE(cmd.submitting);
    EXPECT_EQ(cmd.block_result, nvmekit::block_status::success);
    EXPECT_EQ(cmd.data_segment_count, 0U);
    EXPECT_EQ(cmd.progress.vendor, 0U);
}

TEST(controller_command, holds_the_data_segments_of_a_transfer_of_the_traits_limits)
{
    constexpr auto limits = synchronous_traits::limits;
    EXPECT_EQ(synchronous_command{}.data_segments.size(), std::size_t{limits.max_segments});
    EXPECT_EQ(synchronous_command{}.block.size(), synchronous_command{}.routed.size());
}

TEST(controller_command, a_journaled_command_starts_with_nothing_in_flight)
{
    const asynchronous_command cmd{};
    EXPECT_EQ(cmd.async.step, nullptr);
    EXPECT_FALSE(cmd.async.cqe_in_flight);
    EXPECT_FALSE(cmd.async.journal.blocked);
    EXPECT_EQ(cmd.async.journal.pending, 0U);
}

} // namespace io_context_test
} // namespace
