#include <nvmekit/pci/doorbell_table.hpp>

#include <gtest/gtest.h>

namespace {
namespace pci_doorbell_table_test {

using nvmekit::pci::doorbell_table;
using write_check = doorbell_table::write_check;

TEST(doorbell_table, no_doorbell_is_live_at_first)
{
    doorbell_table table{4};
    EXPECT_EQ(table.check(0, false, 0), write_check::no_queue);
    EXPECT_EQ(table.check(4, true, 0), write_check::no_queue);
    EXPECT_EQ(table.take_invalid_registers(), 2U);
    EXPECT_EQ(table.take_invalid_registers(), 0U);
}

TEST(doorbell_table, a_published_queue_takes_values_below_its_entries)
{
    doorbell_table table{4};
    table.publish(2, true, 16);
    EXPECT_EQ(table.check(2, true, 0), write_check::valid);
    EXPECT_EQ(table.check(2, true, 15), write_check::valid);
    EXPECT_EQ(table.check(2, true, 16), write_check::beyond_queue);
    EXPECT_EQ(table.check(2, false, 1), write_check::no_queue) << "the SQ 2 doorbell is another register";
    EXPECT_EQ(table.take_invalid_values(), 1U);
    EXPECT_EQ(table.take_invalid_registers(), 1U);
    table.publish(2, true, 0); // deleted
    EXPECT_EQ(table.check(2, true, 0), write_check::no_queue);
}

TEST(doorbell_table, qids_beyond_the_table_have_no_queue)
{
    doorbell_table table{4};
    EXPECT_EQ(table.check(5, false, 0), write_check::no_queue);
    EXPECT_EQ(table.check(65535, true, 0), write_check::no_queue);
    EXPECT_EQ(table.take_invalid_registers(), 2U);
}

TEST(doorbell_table, clear_makes_every_doorbell_dead)
{
    doorbell_table table{2};
    table.publish(0, false, 8);
    table.publish(0, true, 8);
    table.publish(1, false, 8);
    table.clear();
    EXPECT_EQ(table.check(0, false, 1), write_check::no_queue);
    EXPECT_EQ(table.check(0, true, 1), write_check::no_queue);
    EXPECT_EQ(table.check(1, false, 1), write_check::no_queue);
}

TEST(doorbell_table, groups_are_kept_per_doorbell)
{
    doorbell_table table{3};
    EXPECT_EQ(table.group(3, true), 0U);
    table.set_group(3, true, 2);
    table.set_group(3, false, 1);
    EXPECT_EQ(table.group(3, true), 2U);
    EXPECT_EQ(table.group(3, false), 1U);
}

TEST(doorbell_table, invalid_writes_found_elsewhere_are_counted_with_the_others)
{
    doorbell_table table{1};
    table.count_invalid_register();
    table.count_invalid_value();
    table.count_invalid_value();
    static_cast<void>(table.check(1, false, 0));
    EXPECT_EQ(table.take_invalid_registers(), 2U);
    EXPECT_EQ(table.take_invalid_values(), 2U);
}

} // namespace pci_doorbell_table_test
} // namespace
