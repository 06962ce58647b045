#include <nvmekit/transport/mapped_memory.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <system_error>
#include <vector>

#include <gtest/gtest.h>

#include <nvmekit/backends/ram_backend.hpp>
#include <nvmekit/contracts/dma.hpp>

#include "controller_fixture.hpp"

namespace {
namespace transport_mapped_memory_test {

using nvmekit::transport::mapped_memory;

static_assert(nvmekit::MappingDmaProvider<mapped_memory>);

struct two_regions : ::testing::Test {
    std::vector<std::byte> low = std::vector<std::byte>(4096, std::byte{0x11});
    std::vector<std::byte> high = std::vector<std::byte>(8192, std::byte{0x22});
    mapped_memory memory;
    void SetUp() override
    {
        ASSERT_TRUE(memory.add(0x1000, low.data(), low.size(), true));
        ASSERT_TRUE(memory.add(0x10000, high.data(), high.size(), false));
    }
};

TEST_F(two_regions, reads_and_writes_inside_one_region)
{
    std::array<std::byte, 8> buffer{};
    ASSERT_FALSE(memory.read(0x1ff8, buffer));
    EXPECT_EQ(buffer[0], std::byte{0x11});
    buffer.fill(std::byte{0x77});
    ASSERT_FALSE(memory.write(0x1000, buffer));
    EXPECT_EQ(low[0], std::byte{0x77});
    EXPECT_EQ(low[7], std::byte{0x77});
    EXPECT_EQ(low[8], std::byte{0x11});
    ASSERT_FALSE(memory.read(0x11ff8, buffer));
    EXPECT_EQ(buffer[7], std::byte{0x22});
}

TEST_F(two_regions, accesses_outside_or_across_regions_are_unmapped)
{
    std::array<std::byte, 16> buffer{};
    EXPECT_EQ(memory.read(0x0, buffer), nvmekit::make_error_code(nvmekit::errc::dma_unmapped));
    // runs past the end
    EXPECT_EQ(memory.read(0x1ff8, buffer), nvmekit::make_error_code(nvmekit::errc::dma_unmapped));
    EXPECT_EQ(memory.read(0x2000, buffer), nvmekit::make_error_code(nvmekit::errc::dma_unmapped));
    EXPECT_EQ(memory.write(0xfff8, buffer), nvmekit::make_error_code(nvmekit::errc::dma_unmapped));
    EXPECT_EQ(memory.read(~std::uint64_t{0} - 4, buffer),
              nvmekit::make_error_code(nvmekit::errc::dma_unmapped));
    EXPECT_TRUE(memory.map(0x1ff8, 16).empty());
}

TEST_F(two_regions, read_only_regions_refuse_writes_and_maps)
{
    std::array<std::byte, 4> buffer{};
    EXPECT_EQ(memory.write(0x10000, buffer), nvmekit::make_error_code(nvmekit::errc::dma_fault));
    EXPECT_EQ(high[0], std::byte{0x22});
    EXPECT_TRUE(memory.map(0x10000, 4).empty());
    EXPECT_FALSE(memory.read(0x10000, buffer));
}

TEST_F(two_regions, map_gives_the_bytes_in_place)
{
    const auto view = memory.map(0x1800, 16);
    ASSERT_EQ(view.size(), 16U);
    EXPECT_EQ(view.data(), low.data() + 0x800);
}

TEST_F(two_regions, overlapping_or_empty_regions_are_refused)
{
    std::vector<std::byte> other(4096);
    EXPECT_FALSE(memory.add(0x1800, other.data(), 4096, true));
    EXPECT_FALSE(memory.add(0x0, other.data(), 0x1001, true));
    EXPECT_FALSE(memory.add(0x5000, other.data(), 0, true));
    EXPECT_FALSE(memory.add(~std::uint64_t{0}, other.data(), 2, true));
    EXPECT_TRUE(memory.add(0x2000, other.data(), 4096, true)); // adjacent is fine
    EXPECT_EQ(memory.regions().size(), 3U);
}

TEST_F(two_regions, a_removed_region_is_unmapped_at_once)
{
    std::array<std::byte, 4> buffer{};
    ASSERT_FALSE(memory.read(0x1000, buffer)); // caches the region
    EXPECT_FALSE(memory.remove(0x1000, 100));  // not that size
    EXPECT_TRUE(memory.remove(0x1000, 4096));
    EXPECT_EQ(memory.read(0x1000, buffer), nvmekit::make_error_code(nvmekit::errc::dma_unmapped));
    memory.clear();
    EXPECT_EQ(memory.read(0x10000, buffer), nvmekit::make_error_code(nvmekit::errc::dma_unmapped));
}

/// A fallback that holds [base, base + bytes.size()) and counts what reaches it.
struct recording_fallback final : nvmekit::transport::dma_fallback {
    std::uint64_t base = 0x40000;
    std::vector<std::byte> bytes = std::vector<std::byte>(4096, std::byte{0x33});
    int reads = 0;
    int writes = 0;
    std::error_code read(std::uint64_t address, std::span<std::byte> destination) override
    {
        ++reads;
        if (address < base || address - base + destination.size() > bytes.size()) {
            return make_error_code(nvmekit::errc::dma_unmapped);
        }
        std::copy_n(bytes.begin() + static_cast<std::ptrdiff_t>(address - base), destination.size(),
                    destination.begin());
        return {};
    }
    std::error_code write(std::uint64_t address, std::span<const std::byte> source) override
    {
        ++writes;
        if (address < base || address - base + source.size() > bytes.size()) {
            return make_error_code(nvmekit::errc::dma_unmapped);
        }
        std::copy(source.begin(), source.end(), bytes.begin() + static_cast<std::ptrdiff_t>(address - base));
        return {};
    }
};

TEST_F(two_regions, only_accesses_no_region_holds_reach_the_fallback)
{
    recording_fallback fallback;
    memory.set_fallback(&fallback);
    EXPECT_EQ(memory.fallback(), &fallback);
    std::array<std::byte, 8> buffer{};
    ASSERT_FALSE(memory.read(0x1000, buffer));
    ASSERT_FALSE(memory.write(0x1008, buffer));
    EXPECT_EQ(fallback.reads + fallback.writes, 0);

    ASSERT_FALSE(memory.read(0x40010, buffer));
    EXPECT_EQ(buffer[0], std::byte{0x33});
    buffer.fill(std::byte{0x44});
    ASSERT_FALSE(memory.write(0x40ff8, buffer));
    EXPECT_EQ(fallback.bytes[0xff8], std::byte{0x44});
    EXPECT_EQ(fallback.reads, 1);
    EXPECT_EQ(fallback.writes, 1);
    // What the fallback does not hold either stays unmapped; a read-only region still refuses.
    EXPECT_EQ(memory.read(0x90000, buffer), nvmekit::errc::dma_unmapped);
    EXPECT_EQ(memory.write(0x10000, buffer), nvmekit::errc::dma_fault);
    EXPECT_EQ(fallback.writes, 1);
    // No span in this process: map() stays empty and the controller stages.
    EXPECT_TRUE(memory.map(0x40000, 8).empty());

    memory.set_fallback(nullptr);
    EXPECT_EQ(memory.read(0x40010, buffer), nvmekit::errc::dma_unmapped);
    EXPECT_EQ(fallback.reads, 2);
}

TEST(adjacent_regions, reads_and_writes_are_split_across_them)
{
    // Two DMA_MAP regions back to back in guest memory, mapped at unrelated places here (a
    // client sends guest RAM in several pieces).
    std::vector<std::byte> first(0x1000, std::byte{0x11});
    std::vector<std::byte> second(0x1000, std::byte{0x22});
    std::vector<std::byte> third(0x1000, std::byte{0x33});
    mapped_memory memory;
    ASSERT_TRUE(memory.add(0x2000, second.data(), second.size(), true));
    ASSERT_TRUE(memory.add(0x1000, first.data(), first.size(), true));
    ASSERT_TRUE(memory.add(0x3000, third.data(), third.size(), true));

    std::vector<std::byte> buffer(0x1010);
    ASSERT_FALSE(memory.read(0x1ff8, buffer)); // 8 bytes of the first, all of the second, 8 of the third
    EXPECT_TRUE(
        std::all_of(buffer.begin(), buffer.begin() + 8, [](std::byte b) { return b == std::byte{0x11}; }));
    EXPECT_TRUE(std::all_of(buffer.begin() + 8, buffer.begin() + 0x1008,
                            [](std::byte b) { return b == std::byte{0x22}; }));
    EXPECT_TRUE(
        std::all_of(buffer.begin() + 0x1008, buffer.end(), [](std::byte b) { return b == std::byte{0x33}; }));

    for (std::size_t i = 0; i < buffer.size(); ++i) {
        buffer[i] = static_cast<std::byte>(i);
    }
    ASSERT_FALSE(memory.write(0x1ff8, buffer));
    EXPECT_EQ(first[0xff7], std::byte{0x11});
    EXPECT_EQ(first[0xff8], std::byte{0x00});
    EXPECT_EQ(first[0xfff], std::byte{0x07});
    EXPECT_EQ(second[0x000], std::byte{0x08});
    EXPECT_EQ(second[0xfff], static_cast<std::byte>(0x1007));
    EXPECT_EQ(third[0x000], static_cast<std::byte>(0x1008));
    EXPECT_EQ(third[0x007], static_cast<std::byte>(0x100f));
    EXPECT_EQ(third[0x008], std::byte{0x33});

    // A zero-copy view cannot be one span across two mappings: map() refuses, so the caller
    // falls back to read and write.
    EXPECT_TRUE(memory.map(0x1ff8, 16).empty());
    EXPECT_EQ(memory.map(0x1ff8, 8).size(), 8U);
}

TEST(adjacent_regions, a_gap_or_a_read_only_piece_fails_the_whole_access)
{
    std::vector<std::byte> low(0x1000, std::byte{0x11});
    std::vector<std::byte> high(0x1000, std::byte{0x22});
    std::vector<std::byte> read_only(0x1000, std::byte{0x44});
    mapped_memory memory;
    ASSERT_TRUE(memory.add(0x1000, low.data(), low.size(), true));
    ASSERT_TRUE(memory.add(0x3000, high.data(), high.size(), true)); // a hole at 0x2000
    ASSERT_TRUE(memory.add(0x4000, read_only.data(), read_only.size(), false));

    std::vector<std::byte> buffer(0x20, std::byte{0x77});
    EXPECT_EQ(memory.read(0x1ff0, buffer), nvmekit::make_error_code(nvmekit::errc::dma_unmapped));
    EXPECT_EQ(memory.write(0x1ff0, buffer), nvmekit::make_error_code(nvmekit::errc::dma_unmapped));
    EXPECT_EQ(low[0xff0], std::byte{0x11}); // nothing written before the hole was found
    EXPECT_EQ(memory.write(0x3ff0, buffer), nvmekit::make_error_code(nvmekit::errc::dma_fault));
    EXPECT_EQ(high[0xff0], std::byte{0x22});
    EXPECT_FALSE(memory.read(0x3ff0, buffer)); // reading a read-only piece is fine
    EXPECT_EQ(buffer[0x0f], std::byte{0x22});
    EXPECT_EQ(buffer[0x10], std::byte{0x44});
    // Past the end of the address space.
    EXPECT_EQ(memory.read(~std::uint64_t{0} - 4, buffer),
              nvmekit::make_error_code(nvmekit::errc::dma_unmapped));
}

// ---- The controller over mapped memory ------------------------------------------------------------

/// The rig's host memory presented as DMA regions, the way a vfio-user client maps guest RAM:
/// one region, or two adjacent ones split at a chosen address.
class split_memory : public mapped_memory {
public:
    explicit split_memory(nvmekit::testing::flat_memory& memory) : memory_{&memory}
    {
        add(nvmekit_test::memory_base,
            memory.bytes(nvmekit_test::memory_base, nvmekit_test::memory_size).data(),
            nvmekit_test::memory_size, true);
    }
    /// Two regions from now on: below `address` and from it on.
    void split_at(std::uint64_t address)
    {
        const auto all = memory_->bytes(nvmekit_test::memory_base, nvmekit_test::memory_size);
        const std::uint64_t low = address - nvmekit_test::memory_base;
        clear();
        ASSERT_TRUE(add(nvmekit_test::memory_base, all.data(), low, true));
        ASSERT_TRUE(add(address, all.data() + low, nvmekit_test::memory_size - low, true));
    }

private:
    nvmekit::testing::flat_memory* memory_;
};

struct split_memory_traits : nvmekit_test::test_traits {
    using dma = split_memory;
};

TEST(controller_over_adjacent_regions, a_buffer_across_two_regions_is_staged)
{
    namespace spec = nvmekit::spec;
    nvmekit_test::basic_rig<split_memory_traits> r;
    r.subsystem.add_namespace(nvmekit::ram_backend{1 << 20});
    r.host.bring_up();
    constexpr std::size_t bytes = 8192; // PRP1 and PRP2
    const std::uint64_t buffer = r.host.allocate(bytes);
    // Not on a page boundary: PRP1's page lies in both regions, so it cannot be mapped at once.
    r.dma.split_at(buffer + 0x800);
    ASSERT_EQ(r.dma.regions().size(), 2U);
    ASSERT_TRUE(r.dma.map(buffer, 4096).empty());

    std::vector<std::byte> data(bytes);
    for (std::size_t i = 0; i < data.size(); ++i) {
        data[i] = static_cast<std::byte>(i * 7 + 1);
    }
    std::copy(data.begin(), data.end(), r.memory.bytes(buffer, bytes).begin());
    auto write = nvmekit_test::host_type::lba_command<spec::write_view>(spec::nvm_opcode::write, 1, 5, 16);
    write.dptr = r.host.build_prps(buffer, bytes);
    EXPECT_EQ(r.host.io(1, write).status(), spec::status::success());

    const auto destination = r.memory.bytes(buffer, bytes);
    std::fill(destination.begin(), destination.end(), std::byte{0xa5});
    auto read = nvmekit_test::host_type::lba_command<spec::read_view>(spec::nvm_opcode::read, 1, 5, 16);
    read.dptr = r.host.build_prps(buffer, bytes);
    EXPECT_EQ(r.host.io(1, read).status(), spec::status::success());
    EXPECT_EQ(r.snapshot(buffer, bytes), data);
}

} // namespace transport_mapped_memory_test
} // namespace
