#include <nvmekit/contracts/tracer.hpp>

#include <cstddef>
#include <set>
#include <string_view>
#include <type_traits>

#include <gtest/gtest.h>

namespace {
namespace tracer_test {

using nvmekit::trace_event;

[[nodiscard]] trace_event event_at(std::size_t index) { return static_cast<trace_event>(index); }

TEST(tracer, every_event_has_a_unique_name_in_the_enumerators_spelling)
{
    std::set<std::string_view> names;
    for (std::size_t i = 0; i < nvmekit::trace_event_count; ++i) {
        const auto name = nvmekit::name(event_at(i));
        EXPECT_NE(name, "unknown") << "event " << i;
        EXPECT_FALSE(name.empty()) << "event " << i;
        EXPECT_TRUE(names.insert(name).second) << name << " named twice";
        // Host mistakes, and only they, are named err_*.
        EXPECT_EQ(name.starts_with("err_"), nvmekit::is_host_error(event_at(i))) << name;
    }
    EXPECT_EQ(names.size(), nvmekit::trace_event_count);
    EXPECT_EQ(nvmekit::name(event_at(nvmekit::trace_event_count)), "unknown");
}

TEST(tracer, names_are_the_enumerator_names)
{
    EXPECT_EQ(nvmekit::name(trace_event::err_mmio_unsupported_width), "err_mmio_unsupported_width");
    EXPECT_EQ(nvmekit::name(trace_event::err_doorbell_invalid_sq_tail), "err_doorbell_invalid_sq_tail");
    EXPECT_EQ(nvmekit::name(trace_event::err_invalid_qid), "err_invalid_qid");
    EXPECT_EQ(nvmekit::name(trace_event::err_cq_full), "err_cq_full");
    EXPECT_EQ(nvmekit::name(trace_event::command_failed), "command_failed");
    EXPECT_EQ(nvmekit::name(trace_event::sqe_fetched), "sqe_fetched");
    EXPECT_EQ(nvmekit::name(trace_event::data_prepared), "data_prepared");
    EXPECT_EQ(nvmekit::name(trace_event::cqe_posted), "cqe_posted");
    EXPECT_EQ(nvmekit::name(trace_event::interrupt_raised), "interrupt_raised");
}

TEST(tracer, command_events_are_the_ones_carrying_a_command)
{
    EXPECT_TRUE(nvmekit::carries_command(trace_event::err_dma));
    EXPECT_TRUE(nvmekit::carries_command(trace_event::err_invalid_field));
    EXPECT_TRUE(nvmekit::carries_command(trace_event::sqe_fetched));
    EXPECT_TRUE(nvmekit::carries_command(trace_event::cqe_posted));
    EXPECT_FALSE(nvmekit::carries_command(trace_event::interrupt_raised));
    EXPECT_FALSE(nvmekit::carries_command(trace_event::err_doorbell_invalid_sq));
    EXPECT_FALSE(nvmekit::carries_command(trace_event::err_queue_dma));
}

static_assert(nvmekit::check_tracer<nvmekit::null_tracer>());
static_assert(std::is_trivially_copyable_v<nvmekit::trace_record>);

} // namespace tracer_test
} // namespace
