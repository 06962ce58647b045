#include <nvmekit/storage/namespace_table.hpp>

#include <gtest/gtest.h>

namespace {
namespace namespace_table_test {

struct fake_namespace {
    int id;
};

TEST(namespace_table, nothing_is_attached_at_first)
{
    const nvmekit::namespace_table<fake_namespace> table{4};
    EXPECT_EQ(table.slots(), 4U);
    for (std::uint32_t nsid = 0; nsid < 6; ++nsid) {
        EXPECT_EQ(table.find(nsid), nullptr) << nsid;
    }
}

TEST(namespace_table, attach_and_detach)
{
    nvmekit::namespace_table<fake_namespace> table{4};
    fake_namespace one{1};
    fake_namespace three{3};
    table.set(1, &one);
    table.set(3, &three);
    EXPECT_EQ(table.find(1), &one);
    EXPECT_EQ(table.find(3), &three);
    EXPECT_EQ(table.find(2), nullptr);
    table.set(1, nullptr);
    EXPECT_EQ(table.find(1), nullptr);
}

TEST(namespace_table, nsid_zero_and_beyond_the_table_name_nothing)
{
    nvmekit::namespace_table<fake_namespace> table{4};
    fake_namespace ns{0};
    table.set(0, &ns);
    table.set(4, &ns);
    table.set(0xffffffffU, &ns);
    EXPECT_EQ(table.find(0), nullptr);
    EXPECT_EQ(table.find(4), nullptr);
    EXPECT_EQ(table.find(0xffffffffU), nullptr);
}

TEST(namespace_table, an_empty_table_finds_nothing)
{
    const nvmekit::namespace_table<fake_namespace> table;
    EXPECT_EQ(table.find(1), nullptr);
}

} // namespace namespace_table_test
} // namespace
