#include <nvmekit/contracts/dma.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <system_error>
#include <vector>

#include <gtest/gtest.h>

#include <nvmekit/error.hpp>
#include <nvmekit/testing/archetypes.hpp>
#include <nvmekit/testing/flat_memory.hpp>

using nvmekit::check_dma_provider;
using nvmekit::dma_read_object;
using nvmekit::dma_write_object;
using nvmekit::DmaProvider;
using nvmekit::DmaReadable;
using nvmekit::DmaWritable;
using nvmekit::errc;
using nvmekit::MappingDmaProvider;
using nvmekit::testing::dma_archetype;
using nvmekit::testing::flat_memory;
using nvmekit::testing::mapping_dma_archetype;

namespace {

struct no_read {
    std::error_code write(std::uint64_t, std::span<const std::byte>) { return {}; }
};
struct no_write {
    std::error_code read(std::uint64_t, std::span<std::byte>) { return {}; }
};
struct read_returns_bool {
    bool read(std::uint64_t, std::span<std::byte>) { return true; }
    std::error_code write(std::uint64_t, std::span<const std::byte>) { return {}; }
};
/// write() taking mutable bytes cannot be given the controller's `std::span<const std::byte>`.
struct write_takes_mutable_bytes {
    std::error_code read(std::uint64_t, std::span<std::byte>) { return {}; }
    std::error_code write(std::uint64_t, std::span<std::byte>) { return {}; }
};
struct map_returns_a_pointer {
    std::error_code read(std::uint64_t, std::span<std::byte>) { return {}; }
    std::error_code write(std::uint64_t, std::span<const std::byte>) { return {}; }
    std::byte* map(std::uint64_t, std::size_t) { return nullptr; }
};
struct map_only {
    std::span<std::byte> map(std::uint64_t, std::size_t) { return {}; }
};

/// A descriptor-sized object, as the controller reads and writes them.
struct sample_entry {
    std::uint32_t dword0;
    std::uint16_t low;
    std::uint16_t high;
    std::uint64_t address;
    friend bool operator==(const sample_entry&, const sample_entry&) = default;
};
static_assert(sizeof(sample_entry) == 16);

/// Records every access and answers each with `result`.
struct access_log {
    struct access {
        bool write;
        std::uint64_t address;
        std::size_t size;
    };
    std::vector<access> accesses;
    std::error_code result;

    std::error_code read(std::uint64_t address, std::span<std::byte> destination)
    {
        accesses.push_back({false, address, destination.size()});
        return result;
    }
    std::error_code write(std::uint64_t address, std::span<const std::byte> source)
    {
        accesses.push_back({true, address, source.size()});
        return result;
    }
};

// clang-format off
template <typename Dma, typename T>
concept object_readable = requires(Dma& dma, T& object) {
    dma_read_object(dma, std::uint64_t{}, object);
};
// clang-format on
// clang-format off
template <typename Dma, typename T>
concept object_writable = requires(Dma& dma, const T& object) {
    dma_write_object(dma, std::uint64_t{}, object);
};
// clang-format on

constexpr std::uint64_t base = 0x1'0000'0000;
constexpr std::size_t range_size = 0x1000;

} // namespace

static_assert(DmaProvider<dma_archetype> && !MappingDmaProvider<dma_archetype>);
static_assert(MappingDmaProvider<mapping_dma_archetype>);
static_assert(MappingDmaProvider<flat_memory>);
static_assert(MappingDmaProvider<access_log> == false && DmaProvider<access_log>);
static_assert(check_dma_provider<dma_archetype>());
static_assert(check_dma_provider<flat_memory>());
static_assert(check_dma_provider<access_log>());

static_assert(!DmaReadable<no_read> && DmaWritable<no_read> && !DmaProvider<no_read>);
static_assert(DmaReadable<no_write> && !DmaWritable<no_write> && !DmaProvider<no_write>);
static_assert(!DmaReadable<read_returns_bool> && !DmaProvider<read_returns_bool>);
static_assert(!DmaWritable<write_takes_mutable_bytes> && !DmaProvider<write_takes_mutable_bytes>);
static_assert(DmaProvider<map_returns_a_pointer> && !MappingDmaProvider<map_returns_a_pointer>);
static_assert(!DmaProvider<map_only> && !MappingDmaProvider<map_only>);
// Writing needs a mutable provider: flat_memory's read() is const, its write() is not.
static_assert(DmaReadable<const flat_memory> && !DmaProvider<const flat_memory>);
static_assert(!DmaReadable<const dma_archetype>);

// The object helpers take trivially copyable objects only (their bytes are what DMA copies), and
// providers only.
static_assert(object_readable<dma_archetype, sample_entry> && object_writable<dma_archetype, sample_entry>);
static_assert(!object_readable<dma_archetype, std::string> && !object_writable<dma_archetype, std::string>);
static_assert(!object_readable<no_write, sample_entry> && !object_writable<no_read, sample_entry>);

TEST(dma, objects_round_trip_through_host_memory_as_their_bytes)
{
    flat_memory memory;
    const std::span<std::byte> bytes = memory.add_range(base, range_size);
    const sample_entry written{0x11223344, 0x5566, 0x7788, 0x0123'4567'89ab'cdef};

    ASSERT_EQ(dma_write_object(memory, base + 0x20, written), std::error_code{});
    std::array<std::byte, sizeof(sample_entry)> expected{};
    std::memcpy(expected.data(), &written, sizeof written);
    EXPECT_EQ(std::memcmp(bytes.data() + 0x20, expected.data(), expected.size()), 0);
    EXPECT_EQ(bytes[0x20], std::byte{0x44}); // little-endian dword 0
    EXPECT_EQ(bytes[0x1f], std::byte{0});
    EXPECT_EQ(bytes[0x20 + sizeof(sample_entry)], std::byte{0});

    sample_entry read{};
    ASSERT_EQ(dma_read_object(memory, base + 0x20, read), std::error_code{});
    EXPECT_EQ(read, written);
}

TEST(dma, object_helpers_make_one_access_of_the_object_size_at_the_address)
{
    access_log log;
    sample_entry entry{};
    std::uint16_t halfword{};
    EXPECT_EQ(dma_read_object(log, 0x2000, entry), std::error_code{});
    EXPECT_EQ(dma_write_object(log, 0x3008, halfword), std::error_code{});
    ASSERT_EQ(log.accesses.size(), 2U);
    EXPECT_FALSE(log.accesses[0].write);
    EXPECT_EQ(log.accesses[0].address, 0x2000U);
    EXPECT_EQ(log.accesses[0].size, sizeof(sample_entry));
    EXPECT_TRUE(log.accesses[1].write);
    EXPECT_EQ(log.accesses[1].address, 0x3008U);
    EXPECT_EQ(log.accesses[1].size, sizeof(std::uint16_t));
}

TEST(dma, object_helpers_return_the_provider_error)
{
    access_log log;
    log.result = nvmekit::make_error_code(errc::dma_fault);
    sample_entry entry{};
    EXPECT_EQ(dma_read_object(log, 0, entry), errc::dma_fault);
    EXPECT_EQ(dma_write_object(log, 0, entry), errc::dma_fault);

    flat_memory memory;
    const std::span<std::byte> bytes = memory.add_range(base, range_size);
    EXPECT_EQ(dma_read_object(memory, base - 8, entry), errc::dma_unmapped);
    // A write that would cross the end of the range fails and, for flat_memory, stores nothing.
    const sample_entry written{1, 2, 3, 4};
    EXPECT_EQ(dma_write_object(memory, base + range_size - 8, written), errc::dma_unmapped);
    for (const std::byte byte : bytes.last(8)) {
        EXPECT_EQ(byte, std::byte{0});
    }
}
