#include <nvmekit/testing/host_base.hpp>

#include <cstddef>
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include <nvmekit/spec/commands.hpp>
#include <nvmekit/spec/log_pages.hpp>
#include <nvmekit/spec/opcodes.hpp>
#include <nvmekit/spec/queue_entries.hpp>
#include <nvmekit/testing/flat_memory.hpp>

namespace {
namespace testing_host_base_test {

namespace spec = nvmekit::spec;
using nvmekit::testing::completion;
using nvmekit::testing::flat_memory;

/// The least a host provides: admin() "runs" a command by filling the buffer its PRP1 names with
/// 5Ah, and describe_data puts the address and length in DPTR.
class fake_host : public nvmekit::testing::command_builders, public nvmekit::testing::host_base<fake_host> {
public:
    explicit fake_host(flat_memory& memory) : host_base{memory} {}

    void describe_data(spec::submission_queue_entry& sqe, std::uint64_t address, std::size_t length)
    {
        sqe.dptr = {address, length};
    }
    completion admin(const spec::submission_queue_entry& sqe)
    {
        seen.push_back(sqe);
        const std::vector<std::byte> data(static_cast<std::size_t>(sqe.dptr.prp2), std::byte{0x5a});
        EXPECT_FALSE(memory().write(sqe.dptr.prp1, data));
        return {};
    }

    std::vector<spec::submission_queue_entry> seen;
};

flat_memory memory_at(std::uint64_t base, std::size_t size)
{
    flat_memory memory;
    memory.add_range(base, size);
    return memory;
}

TEST(host_base, allocate_returns_zeroed_aligned_memory_and_release_frees_it)
{
    auto memory = memory_at(0x10000, 16384);
    fake_host host{memory};
    ASSERT_FALSE(memory.write(0x10000, std::vector<std::byte>(4096, std::byte{0xff})));
    const auto buffer = host.allocate(100);
    EXPECT_EQ(buffer % 4096, 0U);
    std::vector<std::byte> bytes(100);
    ASSERT_FALSE(memory.read(buffer, bytes));
    EXPECT_EQ(bytes, std::vector<std::byte>(100));
    host.release(buffer);
    EXPECT_EQ(host.allocate(100), buffer); // free again
    EXPECT_THROW(static_cast<void>(host.allocate(1 << 20)), nvmekit::testing::host_error);
}

TEST(host_base, admin_read_describes_a_buffer_and_returns_its_bytes)
{
    auto memory = memory_at(0x10000, 16384);
    fake_host host{memory};
    std::vector<std::byte> out;
    const auto result = host.get_log_page(spec::log_page_id::smart_health, 512, out, true, 1);
    EXPECT_TRUE(result.ok());
    EXPECT_EQ(out, std::vector<std::byte>(512, std::byte{0x5a}));
    ASSERT_EQ(host.seen.size(), 1U);
    const auto& sqe = host.seen.front();
    EXPECT_EQ(sqe.cdw0.get(spec::command_dword0::opc),
              static_cast<std::uint8_t>(spec::admin_opcode::get_log_page));
    EXPECT_EQ(sqe.nsid, 1U);
    const auto view = spec::get_log_page_view::decode(sqe);
    EXPECT_EQ(view.log_page_id, spec::log_page_id::smart_health);
    EXPECT_TRUE(view.retain_async_event);
    EXPECT_EQ(view.dword_count, 128U);
    EXPECT_EQ(sqe.dptr.prp2, 512U);
    // The buffer was released: the next allocation gets it again.
    EXPECT_EQ(host.allocate(512), sqe.dptr.prp1);
}

} // namespace testing_host_base_test
} // namespace
