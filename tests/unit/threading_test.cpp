#include <nvmekit/contracts/threading.hpp>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#include <gtest/gtest.h>

#include <nvmekit/backends/ram_backend.hpp>
#include <nvmekit/controller.hpp>

#include "controller_fixture.hpp"

/// The threading policies: what they declare, that the controller refuses concurrent groups
/// without multi_threaded, and that a single_threaded controller still runs several poll groups
/// on its one thread.

namespace {
namespace threading_test {

namespace spec = nvmekit::spec;

static_assert(nvmekit::ThreadingPolicy<nvmekit::single_threaded>);
static_assert(nvmekit::ThreadingPolicy<nvmekit::multi_threaded>);
static_assert(nvmekit::check_threading_policy<nvmekit::single_threaded>());
static_assert(nvmekit::check_threading_policy<nvmekit::multi_threaded>());
static_assert(!nvmekit::single_threaded::concurrent_groups);
static_assert(nvmekit::multi_threaded::concurrent_groups);
static_assert(std::is_same_v<nvmekit::default_traits::threading, nvmekit::single_threaded>);

struct no_flag {};
struct run_time_flag {
    static inline bool concurrent_groups = true; // not a constant expression
};
static_assert(!nvmekit::ThreadingPolicy<no_flag>);
static_assert(!nvmekit::ThreadingPolicy<run_time_flag>);

struct single_threaded_traits : nvmekit_test::test_traits {
    using threading = nvmekit::single_threaded;
};
struct multi_threaded_traits : nvmekit_test::test_traits {
    using threading = nvmekit::multi_threaded;
};

// clang-format off
template <typename Controller>
concept can_start_poll_groups = requires(Controller& ctrl) { ctrl.start_poll_groups(); };
// clang-format on
static_assert(!can_start_poll_groups<nvmekit::controller<single_threaded_traits>>,
              "single_threaded: start_poll_groups() does not compile");
static_assert(can_start_poll_groups<nvmekit::controller<multi_threaded_traits>>);

TEST(threading, single_threaded_refuses_concurrent_poll_groups)
{
    nvmekit_test::host_memory memory;
    nvmekit::testing::recording_msix msix;
    nvmekit::testing::manual_clock clock;
    try {
        nvmekit::controller<single_threaded_traits> ctrl{
            memory, msix, clock,
            nvmekit::controller_config{.poll_groups = 2, .concurrent_poll_groups = true}};
        FAIL() << "constructed";
    } catch (const std::invalid_argument& e) {
        const std::string message = e.what();
        EXPECT_NE(message.find("concurrent_poll_groups"), std::string::npos) << message;
        EXPECT_NE(message.find("multi_threaded"), std::string::npos) << message;
    }
}

TEST(threading, multi_threaded_accepts_concurrent_poll_groups)
{
    nvmekit_test::host_memory memory;
    nvmekit::testing::recording_msix msix;
    nvmekit::testing::manual_clock clock;
    nvmekit::controller<multi_threaded_traits> ctrl{
        memory, msix, clock, nvmekit::controller_config{.poll_groups = 2, .concurrent_poll_groups = true}};
    EXPECT_EQ(ctrl.poll_group_count(), 2U);
}

TEST(threading, single_threaded_runs_several_groups_on_one_thread)
{
    nvmekit_test::basic_rig<single_threaded_traits> r{nvmekit::controller_config{.poll_groups = 2}};
    r.subsystem.add_namespace(nvmekit::ram_backend{std::uint64_t{1} << 20});
    r.host.bring_up({.io_queue_pairs = 2});
    for (std::uint16_t qid = 1; qid <= 2; ++qid) {
        auto sqe = nvmekit_test::basic_rig<single_threaded_traits>::host_type::lba_command<spec::read_view>(
            spec::nvm_opcode::read, 1, qid, 1);
        sqe.dptr.prp1 = r.host.allocate(512);
        EXPECT_TRUE(r.host.io(qid, sqe).ok()) << qid;
    }
    EXPECT_EQ(r.ctrl.group_statistics(0).commands + r.ctrl.group_statistics(1).commands, 2U);
}

} // namespace threading_test
} // namespace
