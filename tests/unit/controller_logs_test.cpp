#include <nvmekit/state/controller_logs.hpp>

#include <gtest/gtest.h>

#include <cstdint>

namespace {
namespace controller_logs_test {

using nvmekit::controller_logs;
using nvmekit::controller_logs_config;
namespace spec = nvmekit::spec;

controller_logs make_logs()
{
    return controller_logs{controller_logs_config{.firmware_revision = "1.0", .async_event_requests = 4}};
}

spec::async_event_completion notice()
{
    return spec::async_event_completion{
        spec::async_event_type::notice,
        static_cast<std::uint8_t>(spec::notice_event::namespace_attribute_changed),
        spec::log_page_id::changed_namespace_list};
}

spec::async_event_completion smart_event()
{
    return spec::async_event_completion{spec::async_event_type::smart_health, 1,
                                        spec::log_page_id::smart_health};
}

TEST(controller_logs, errors_count_in_the_smart_log_recorded_or_skipped)
{
    auto logs = make_logs();
    logs.record_error(nvmekit::error_record{});
    logs.record_error(nvmekit::error_record{});
    logs.skip_errors(5);
    EXPECT_EQ(logs.health().counters().error_log_entries, 7U);
    EXPECT_EQ(logs.errors().last_error_count(), 7U) << "skipped errors advance the Error Count";
}

TEST(controller_logs, the_changed_namespace_list_holds_each_nsid_once_in_order)
{
    auto logs = make_logs();
    for (const std::uint32_t nsid : {7U, 3U, 7U, 12U, 1U, 3U}) {
        logs.note_changed_namespace(nsid);
    }
    const auto& list = logs.changed_namespaces();
    EXPECT_EQ(list.nsids[0], 1U);
    EXPECT_EQ(list.nsids[1], 3U);
    EXPECT_EQ(list.nsids[2], 7U);
    EXPECT_EQ(list.nsids[3], 12U);
    EXPECT_EQ(list.nsids[4], 0U);
    logs.clear_changed_namespaces();
    EXPECT_EQ(logs.changed_namespaces().nsids[0], 0U);
}

TEST(controller_logs, more_than_1024_changes_overflow_the_list)
{
    auto logs = make_logs();
    for (std::uint32_t nsid = 1; nsid <= 1024; ++nsid) {
        logs.note_changed_namespace(nsid);
    }
    EXPECT_FALSE(logs.changed_namespaces().overflowed());
    EXPECT_EQ(logs.changed_namespaces().nsids[1023], 1024U);
    logs.note_changed_namespace(512); // already listed
    EXPECT_FALSE(logs.changed_namespaces().overflowed());
    logs.note_changed_namespace(2000);
    EXPECT_TRUE(logs.changed_namespaces().overflowed());
    EXPECT_EQ(logs.changed_namespaces().nsids[1], 0U) << "the rest of an overflowed list is zero";
    logs.note_changed_namespace(3);
    EXPECT_TRUE(logs.changed_namespaces().overflowed());
}

TEST(controller_logs, a_reported_event_type_is_masked_until_acknowledged)
{
    auto logs = make_logs();
    ASSERT_TRUE(logs.events().add_request(10));
    ASSERT_TRUE(logs.events().add_request(11));
    ASSERT_TRUE(logs.events().post(notice()));
    const auto first = logs.next_event_report();
    ASSERT_TRUE(first);
    EXPECT_EQ(first->command_id, 10U);
    EXPECT_TRUE(logs.event_type_masked(spec::async_event_type::notice));
    ASSERT_TRUE(logs.events().post(notice()));
    EXPECT_FALSE(logs.next_event_report()) << "a second notice waits for the log page to be read";
    ASSERT_TRUE(logs.events().post(smart_event()));
    const auto smart = logs.next_event_report();
    ASSERT_TRUE(smart) << "another type is not masked";
    EXPECT_EQ(smart->command_id, 11U);
    logs.acknowledge_event_type(spec::async_event_type::notice);
    EXPECT_FALSE(logs.event_type_masked(spec::async_event_type::notice));
    ASSERT_TRUE(logs.events().add_request(12));
    const auto again = logs.next_event_report();
    ASSERT_TRUE(again);
    EXPECT_EQ(again->event, notice());
}

TEST(controller_logs, a_controller_reset_drops_events_and_masks_but_keeps_the_error_log)
{
    auto logs = make_logs();
    logs.record_error(nvmekit::error_record{});
    ASSERT_TRUE(logs.events().add_request(1));
    ASSERT_TRUE(logs.events().post(notice()));
    ASSERT_TRUE(logs.next_event_report());
    ASSERT_TRUE(logs.events().post(smart_event()));
    logs.clear_events();
    EXPECT_FALSE(logs.event_type_masked(spec::async_event_type::notice));
    EXPECT_EQ(logs.events().waiting_events(), 0U);
    EXPECT_EQ(logs.events().outstanding_requests(), 0U);
    EXPECT_EQ(logs.errors().last_error_count(), 1U);
}

TEST(controller_logs, firmware_slot_1_holds_the_configured_revision)
{
    const auto logs = make_logs();
    EXPECT_EQ(logs.firmware().active_revision(), "1.0");
}

} // namespace controller_logs_test
} // namespace
