#include <nvmekit/pci/shadow_doorbells.hpp>
#include <nvmekit/testing/flat_memory.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <span>

namespace {
namespace pci_shadow_doorbells_test {

using nvmekit::pci::shadow_doorbells;

constexpr std::uint64_t shadow_base = 0x10000;
constexpr std::uint64_t event_index_base = 0x20000;

struct rig {
    nvmekit::testing::flat_memory memory;
    rig()
    {
        memory.add_range(shadow_base, 4096);
        memory.add_range(event_index_base, 4096);
    }
    void store(std::uint64_t address, std::uint32_t value)
    {
        ASSERT_FALSE(memory.write(address, std::as_bytes(std::span{&value, 1})));
    }
    [[nodiscard]] std::uint32_t load(std::uint64_t address) const
    {
        std::uint32_t value = 0;
        EXPECT_FALSE(memory.read(address, std::as_writable_bytes(std::span{&value, 1})));
        return value;
    }
};

TEST(shadow_doorbells, off_until_configured_and_after_a_reset)
{
    shadow_doorbells doorbells;
    EXPECT_FALSE(doorbells.enabled());
    doorbells.configure(shadow_base, event_index_base, 4);
    EXPECT_TRUE(doorbells.enabled());
    doorbells.disable();
    EXPECT_FALSE(doorbells.enabled());
}

TEST(shadow_doorbells, slots_mirror_the_doorbell_registers)
{
    shadow_doorbells doorbells;
    doorbells.configure(shadow_base, event_index_base, 4);
    EXPECT_EQ(doorbells.slot_offset(0, false), 0U);
    EXPECT_EQ(doorbells.slot_offset(0, true), 4U);
    EXPECT_EQ(doorbells.slot_offset(3, false), 24U);
    EXPECT_EQ(doorbells.slot_offset(3, true), 28U);
    doorbells.configure(shadow_base, event_index_base, 16); // CAP.DSTRD 2
    EXPECT_EQ(doorbells.slot_offset(3, false), 96U);
    EXPECT_EQ(doorbells.slot_offset(3, true), 112U);
}

TEST(shadow_doorbells, reads_the_hosts_values_and_writes_event_indexes)
{
    rig r;
    shadow_doorbells doorbells;
    doorbells.configure(shadow_base, event_index_base, 8);
    r.store(shadow_base + 2 * 8, 17); // SQ 1 tail
    r.store(shadow_base + 3 * 8, 5);  // CQ 1 head
    std::uint32_t value = 0;
    ASSERT_FALSE(doorbells.read(r.memory, 1, false, value));
    EXPECT_EQ(value, 17U);
    ASSERT_FALSE(doorbells.read(r.memory, 1, true, value));
    EXPECT_EQ(value, 5U);
    ASSERT_FALSE(doorbells.write_event_index(r.memory, 1, false, 42));
    ASSERT_FALSE(doorbells.write_event_index(r.memory, 1, true, 43));
    EXPECT_EQ(r.load(event_index_base + 2 * 8), 42U);
    EXPECT_EQ(r.load(event_index_base + 3 * 8), 43U);
    EXPECT_EQ(r.load(shadow_base + 2 * 8), 17U) << "EventIdx writes leave the shadow buffer alone";
}

TEST(shadow_doorbells, a_slot_outside_host_memory_is_an_error)
{
    rig r;
    shadow_doorbells doorbells;
    doorbells.configure(shadow_base + 4096 - 4, event_index_base + 4096 - 4, 4);
    std::uint32_t value = 0;
    EXPECT_FALSE(doorbells.read(r.memory, 0, false, value));
    EXPECT_TRUE(doorbells.read(r.memory, 0, true, value)) << "the slot lies past the memory the host gave";
    EXPECT_TRUE(doorbells.write_event_index(r.memory, 1, false, 1));
}

} // namespace pci_shadow_doorbells_test
} // namespace
