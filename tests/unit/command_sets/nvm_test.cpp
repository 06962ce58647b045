#include <nvmekit/command_sets/nvm.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <ostream>
#include <span>
#include <string>
#include <system_error>
#include <tuple>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <nvmekit/testing/test_backend.hpp>

#include "controller_fixture.hpp"

NVMEKIT_BEGIN_NAMESPACE
namespace testing {
// Failures print backend records readably.
inline void PrintTo(const block_request_record& record, std::ostream* out)
{
    *out << "{op " << static_cast<int>(record.operation) << ", offset " << record.offset << ", length "
         << record.length << (record.force_unit_access ? ", FUA}" : "}");
}
} // namespace testing
NVMEKIT_END_NAMESPACE

namespace {
namespace command_sets_nvm_test {

namespace spec = nvmekit::spec;
using namespace nvmekit_test;
using namespace std::chrono_literals;
using nvmekit::block_operation;
using nvmekit::block_status;
using nvmekit::testing::block_request_record;
using nvmekit::testing::completion;
using nvmekit::testing::test_backend;

// ---- rigs ---------------------------------------------------------------------------------------

/// Namespaces on test_backend, so tests can delay, fail and inspect backend requests.
struct async_traits : test_traits {
    using backend = test_backend<>;
};
using async_rig = basic_rig<async_traits>;

/// A DmaProvider that reads and writes host memory but cannot map it: every transfer goes through
/// a staging buffer. (recording_dma over flat_memory maps, as the static_assert below checks.)
class unmapped_dma {
public:
    explicit unmapped_dma(nvmekit::testing::flat_memory& memory) noexcept : memory_{&memory} {}
    std::error_code read(std::uint64_t address, std::span<std::byte> destination)
    {
        ++reads_;
        return memory_->read(address, destination);
    }
    std::error_code write(std::uint64_t address, std::span<const std::byte> source)
    {
        ++writes_;
        return memory_->write(address, source);
    }
    [[nodiscard]] std::size_t reads() const noexcept { return reads_; }
    [[nodiscard]] std::size_t writes() const noexcept { return writes_; }

private:
    nvmekit::testing::flat_memory* memory_;
    std::size_t reads_ = 0;
    std::size_t writes_ = 0;
};
static_assert(nvmekit::MappingDmaProvider<recording_dma_traits::dma>,
              "recording_dma over flat_memory maps, so it would not exercise the staging path");
static_assert(nvmekit::DmaProvider<unmapped_dma> && !nvmekit::MappingDmaProvider<unmapped_dma>);

/// Unmappable host memory, delayed backends and a single staging buffer.
struct staging_traits : test_traits {
    using dma = unmapped_dma;
    using backend = test_backend<>;
    static constexpr nvmekit::limits limits{.staging_buffers = 1};
};
using staging_rig = basic_rig<staging_traits>;

/// Unmappable host memory over inline RAM backends.
struct unmapped_traits : test_traits {
    using dma = unmapped_dma;
};
using unmapped_rig = basic_rig<unmapped_traits>;

constexpr std::uint64_t capacity = std::uint64_t{1} << 20; // 2048 blocks of 512 bytes
constexpr std::uint64_t blocks_512 = capacity / 512;
constexpr std::uint32_t mdts_blocks_512 = 256; // MDTS 5: 128 KiB

// ---- helpers ------------------------------------------------------------------------------------

[[nodiscard]] std::vector<std::byte> pattern(std::size_t bytes, unsigned seed)
{
    std::vector<std::byte> data(bytes);
    for (std::size_t i = 0; i < bytes; ++i) {
        data[i] = static_cast<std::byte>((i * 131U + seed * 37U + (i >> 9U) + 1U) & 0xffU);
    }
    return data;
}

[[nodiscard]] std::vector<std::byte> zeroes(std::size_t bytes) { return std::vector<std::byte>(bytes); }

/// Host memory holding `data` (at least 4 bytes allocated).
template <typename Rig>
[[nodiscard]] std::uint64_t host_buffer(Rig& r, std::span<const std::byte> data, std::size_t size = 0)
{
    const std::uint64_t address = r.host.allocate(std::max<std::size_t>({data.size(), size, 4}));
    if (!data.empty()) {
        const auto bytes = r.memory.bytes(address, data.size());
        std::copy(data.begin(), data.end(), bytes.begin());
    }
    return address;
}

template <typename View = spec::read_view>
[[nodiscard]] spec::submission_queue_entry lba(spec::nvm_opcode opcode, std::uint32_t nsid,
                                               std::uint64_t slba, std::uint32_t blocks)
{
    return host_type::lba_command<View>(opcode, nsid, slba, blocks);
}

[[nodiscard]] spec::submission_queue_entry write_command(std::uint32_t nsid, std::uint64_t slba,
                                                         std::uint32_t blocks, bool fua = false)
{
    auto sqe = host_type::command(spec::nvm_opcode::write, nsid);
    spec::write_view{.starting_lba = slba, .block_count = blocks, .force_unit_access = fua}.encode(sqe);
    return sqe;
}

/// Writes `data` (and separate `metadata` through MPTR) to `blocks` blocks at `slba`.
template <typename Rig>
completion write_blocks(Rig& r, std::uint32_t nsid, std::uint64_t slba, std::uint32_t blocks,
                        std::span<const std::byte> data, std::span<const std::byte> metadata = {},
                        bool fua = false)
{
    auto sqe = write_command(nsid, slba, blocks, fua);
    const auto buffer = host_buffer(r, data);
    r.host.describe_data(sqe, buffer, data.size());
    std::uint64_t metadata_buffer = 0;
    if (!metadata.empty()) {
        metadata_buffer = host_buffer(r, metadata);
        sqe.mptr = metadata_buffer;
    }
    const auto result = r.host.io(1, sqe);
    r.host.release(buffer);
    if (metadata_buffer != 0) {
        r.host.release(metadata_buffer);
    }
    return result;
}

struct read_result {
    completion done;
    std::vector<std::byte> data;
    std::vector<std::byte> metadata;
};

/// Reads `blocks` blocks at `slba` into `data_bytes` of data and `metadata_bytes` of separate
/// metadata (through MPTR).
template <typename Rig>
read_result read_blocks(Rig& r, std::uint32_t nsid, std::uint64_t slba, std::uint32_t blocks,
                        std::size_t data_bytes, std::size_t metadata_bytes = 0)
{
    auto sqe = lba(spec::nvm_opcode::read, nsid, slba, blocks);
    // Filled with a marker, so a read that leaves the buffer alone is seen.
    const auto buffer = host_buffer(r, std::vector<std::byte>(data_bytes, std::byte{0xa5}));
    r.host.describe_data(sqe, buffer, data_bytes);
    std::uint64_t metadata_buffer = 0;
    if (metadata_bytes != 0) {
        metadata_buffer = host_buffer(r, std::vector<std::byte>(metadata_bytes, std::byte{0xa5}));
        sqe.mptr = metadata_buffer;
    }
    read_result result{r.host.io(1, sqe), r.snapshot(buffer, data_bytes), {}};
    if (metadata_buffer != 0) {
        result.metadata = r.snapshot(metadata_buffer, metadata_bytes);
        r.host.release(metadata_buffer);
    }
    r.host.release(buffer);
    return result;
}

template <typename Rig>
completion compare_blocks(Rig& r, std::uint32_t nsid, std::uint64_t slba, std::uint32_t blocks,
                          std::span<const std::byte> data, std::span<const std::byte> metadata = {})
{
    auto sqe = lba<spec::compare_view>(spec::nvm_opcode::compare, nsid, slba, blocks);
    const auto buffer = host_buffer(r, data);
    r.host.describe_data(sqe, buffer, data.size());
    std::uint64_t metadata_buffer = 0;
    if (!metadata.empty()) {
        metadata_buffer = host_buffer(r, metadata);
        sqe.mptr = metadata_buffer;
    }
    const auto result = r.host.io(1, sqe);
    r.host.release(buffer);
    if (metadata_buffer != 0) {
        r.host.release(metadata_buffer);
    }
    return result;
}

template <typename Rig>
completion write_zeroes(Rig& r, std::uint32_t nsid, std::uint64_t slba, std::uint32_t blocks,
                        bool deallocate = false, bool fua = false)
{
    auto sqe = host_type::command(spec::nvm_opcode::write_zeroes, nsid);
    spec::write_zeroes_view{
        .starting_lba = slba, .block_count = blocks, .deallocate = deallocate, .force_unit_access = fua}
        .encode(sqe);
    return r.host.io(1, sqe);
}

template <typename Rig>
completion write_uncorrectable(Rig& r, std::uint32_t nsid, std::uint64_t slba, std::uint32_t blocks)
{
    auto sqe = host_type::command(spec::nvm_opcode::write_uncorrectable, nsid);
    spec::write_uncorrectable_view{.starting_lba = slba, .block_count = blocks}.encode(sqe);
    return r.host.io(1, sqe);
}

template <typename Rig>
completion verify(Rig& r, std::uint32_t nsid, std::uint64_t slba, std::uint32_t blocks)
{
    return r.host.io(1, lba<spec::verify_view>(spec::nvm_opcode::verify, nsid, slba, blocks));
}

template <typename Rig>
completion flush(Rig& r, std::uint32_t nsid)
{
    return r.host.io(1, host_type::command(spec::nvm_opcode::flush, nsid));
}

[[nodiscard]] spec::dataset_management_range dsm_range(std::uint64_t slba, std::uint32_t blocks)
{
    spec::dataset_management_range range{};
    range.starting_lba = slba;
    range.block_count = blocks;
    return range;
}

template <typename Rig>
completion dataset_management(Rig& r, std::uint32_t nsid,
                              std::span<const spec::dataset_management_range> ranges, bool deallocate = true,
                              bool integral_read = false)
{
    auto sqe = host_type::command(spec::nvm_opcode::dataset_management, nsid);
    spec::dataset_management_view{.range_count = static_cast<std::uint16_t>(ranges.size()),
                                  .integral_read = integral_read,
                                  .deallocate = deallocate}
        .encode(sqe);
    const auto bytes = std::as_bytes(ranges);
    const auto buffer = host_buffer(r, bytes);
    r.host.describe_data(sqe, buffer, bytes.size());
    const auto result = r.host.io(1, sqe);
    r.host.release(buffer);
    return result;
}

[[nodiscard]] spec::copy_source_range copy_range(std::uint64_t slba, std::uint32_t blocks)
{
    spec::copy_source_range range{};
    range.starting_lba = slba;
    range.set_block_count(blocks);
    return range;
}

[[nodiscard]] spec::submission_queue_entry copy_command(std::uint32_t nsid, std::uint64_t destination,
                                                        std::size_t ranges, std::uint8_t format = 0,
                                                        bool fua = false)
{
    auto sqe = host_type::command(spec::nvm_opcode::copy, nsid);
    spec::copy_view{.destination_lba = destination,
                    .range_count = static_cast<std::uint16_t>(ranges),
                    .descriptor_format = format,
                    .force_unit_access = fua}
        .encode(sqe);
    return sqe;
}

template <typename Rig>
completion copy(Rig& r, std::uint32_t nsid, std::uint64_t destination,
                std::span<const spec::copy_source_range> ranges, std::uint8_t format = 0, bool fua = false)
{
    auto sqe = copy_command(nsid, destination, ranges.size(), format, fua);
    const auto bytes = std::as_bytes(ranges);
    const auto buffer = host_buffer(r, bytes);
    r.host.describe_data(sqe, buffer, bytes.size());
    const auto result = r.host.io(1, sqe);
    r.host.release(buffer);
    return result;
}

template <typename Rig>
completion set_write_cache(Rig& r, bool enabled)
{
    return r.host.admin(host_type::set_features_command(
        spec::feature_id::volatile_write_cache,
        spec::volatile_write_cache{}.with(spec::volatile_write_cache::wce, enabled).raw));
}

/// The newest entry of the Error Information log.
template <typename Rig>
[[nodiscard]] spec::error_information_entry newest_error(Rig& r)
{
    std::vector<std::byte> log;
    EXPECT_EQ(r.host.get_log_page(spec::log_page_id::error_information, 64, log).status(),
              spec::status::success());
    spec::error_information_entry entry{};
    std::memcpy(&entry, log.data(), sizeof(entry));
    return entry;
}

/// SMART / Health Information: Media and Data Integrity Errors (low 64 bits).
template <typename Rig>
[[nodiscard]] std::uint64_t media_errors(Rig& r)
{
    std::vector<std::byte> log;
    EXPECT_EQ(r.host.get_log_page(spec::log_page_id::smart_health, 512, log).status(),
              spec::status::success());
    spec::smart_health_log smart{};
    std::memcpy(&smart, log.data(), sizeof(smart));
    EXPECT_EQ(smart.media_errors.high(), 0U);
    return smart.media_errors.low();
}

[[nodiscard]] std::vector<std::byte> part(const std::vector<std::byte>& bytes, std::size_t offset,
                                          std::size_t size)
{
    return {bytes.begin() + static_cast<std::ptrdiff_t>(offset),
            bytes.begin() + static_cast<std::ptrdiff_t>(offset + size)};
}

[[nodiscard]] std::vector<std::byte> peek(test_backend<>& backend, std::uint64_t offset, std::size_t size)
{
    std::vector<std::byte> bytes(size);
    backend.peek(offset, bytes);
    return bytes;
}

/// Polls (1 ms clock steps) and reaps CQ `cqid` until `count` completions arrived.
template <typename Rig>
std::vector<completion> reap_all(Rig& r, std::uint16_t cqid, std::size_t count,
                                 std::chrono::nanoseconds step = std::chrono::microseconds{100})
{
    std::vector<completion> out;
    for (int i = 0; i < 100000 && out.size() < count; ++i) {
        r.host.reap(cqid, out);
        r.clock.advance(step);
    }
    return out;
}

// ---- suites over both transports ---------------------------------------------------------------

// The tests of a command set run over PCIe and over the loopback transport; those about PRPs,
// SGL segments in host memory, queue deletion or register-level resets stay TEST()s over PCIe.
NVMEKIT_TEST_SUITE_OVER_TRANSPORTS(nvm_read_write);
NVMEKIT_TEST_SUITE_OVER_TRANSPORTS(nvm_errors);
NVMEKIT_TEST_SUITE_OVER_TRANSPORTS(nvm_flush);
NVMEKIT_TEST_SUITE_OVER_TRANSPORTS(nvm_write_zeroes);
NVMEKIT_TEST_SUITE_OVER_TRANSPORTS(nvm_dataset_management);
NVMEKIT_TEST_SUITE_OVER_TRANSPORTS(nvm_compare);
NVMEKIT_TEST_SUITE_OVER_TRANSPORTS(nvm_verify);
NVMEKIT_TEST_SUITE_OVER_TRANSPORTS(nvm_write_uncorrectable);
NVMEKIT_TEST_SUITE_OVER_TRANSPORTS(nvm_copy);
NVMEKIT_TEST_SUITE_OVER_TRANSPORTS(nvm_staging);
NVMEKIT_TEST_SUITE_OVER_TRANSPORTS(nvm_async);

// ---- Read and Write -------------------------------------------------------------------------------

TYPED_TEST(nvm_read_write, multi_page_write_reads_back_exactly)
{
    TypeParam r;
    r.subsystem.add_namespace(nvmekit::ram_backend{capacity});
    r.host.bring_up();
    const auto data = pattern(16 * 512, 1); // two pages: PRP1 + PRP2
    EXPECT_EQ(write_blocks(r, 1, 3, 16, data).status(), spec::status::success());
    const auto back = read_blocks(r, 1, 3, 16, data.size());
    EXPECT_EQ(back.done.status(), spec::status::success());
    EXPECT_EQ(back.data, data);
    // Neighbours were not touched and unwritten blocks read as zeroes.
    const auto around = read_blocks(r, 1, 2, 18, 18 * 512);
    EXPECT_EQ(part(around.data, 0, 512), zeroes(512));
    EXPECT_EQ(part(around.data, 512, data.size()), data);
    EXPECT_EQ(part(around.data, 17 * 512, 512), zeroes(512));
}

TYPED_TEST(nvm_read_write, streamed_writes_complete_through_the_backend_poll_and_read_back)
{
    // ram_backend's non_temporal_writes completes writes in its poll(), after one fence; with the
    // poll groups on threads of their own, several threads reach the backend, which then needs
    // `concurrent` (each write fenced and completed inside submit()).
    TypeParam r;
    r.subsystem.add_namespace(nvmekit::ram_backend{
        capacity, {.concurrent = nvmekit_test::threaded_groups_requested(), .non_temporal_writes = true}});
    r.host.bring_up();
    const auto data = pattern(16 * 512, 11);
    EXPECT_EQ(write_blocks(r, 1, 3, 16, data).status(), spec::status::success());
    const auto odd = pattern(3 * 512, 12);
    EXPECT_EQ(write_blocks(r, 1, 40, 3, odd).status(), spec::status::success());
    const auto back = read_blocks(r, 1, 2, 41, 41 * 512);
    EXPECT_EQ(back.done.status(), spec::status::success());
    EXPECT_EQ(part(back.data, 0, 512), zeroes(512));
    EXPECT_EQ(part(back.data, 512, data.size()), data);
    EXPECT_EQ(part(back.data, 38 * 512, odd.size()), odd);
}

TEST(nvm_read_write, full_mdts_transfer_through_a_prp_list_with_an_offset)
{
    rig r;
    r.subsystem.add_namespace(nvmekit::ram_backend{capacity});
    r.host.bring_up();
    const auto data = pattern(std::size_t{mdts_blocks_512} * 512, 2);
    // A buffer starting 512 bytes into a page: PRP1 has an offset, PRP2 is a list.
    const std::uint64_t buffer = r.host.allocate(data.size() + 4096) + 512;
    std::copy(data.begin(), data.end(), r.memory.bytes(buffer, data.size()).begin());
    auto sqe = write_command(1, 100, mdts_blocks_512);
    sqe.dptr = r.host.build_prps(buffer, data.size());
    EXPECT_EQ(r.host.io(1, sqe).status(), spec::status::success());
    const auto back = read_blocks(r, 1, 100, mdts_blocks_512, data.size());
    EXPECT_EQ(back.done.status(), spec::status::success());
    EXPECT_EQ(back.data, data);
}

TYPED_TEST(nvm_read_write, transfer_above_mdts_is_invalid_field)
{
    rig_for<TypeParam, async_traits> r;
    auto& ns = r.subsystem.add_namespace(test_backend<>{r.clock, capacity, 64});
    r.host.bring_up();
    const std::size_t bytes = (std::size_t{mdts_blocks_512} + 1) * 512;
    const auto buffer = r.host.allocate(bytes);
    for (const auto opcode : {spec::nvm_opcode::read, spec::nvm_opcode::write, spec::nvm_opcode::compare}) {
        auto sqe = lba(opcode, 1, 0, mdts_blocks_512 + 1);
        r.host.describe_data(sqe, buffer, bytes);
        EXPECT_EQ(r.host.io(1, sqe).status(), dnr(spec::generic_status::invalid_field))
            << static_cast<int>(opcode);
    }
    EXPECT_TRUE(ns.backend().records().empty());
}

TYPED_TEST(nvm_read_write, fua_reaches_the_backend_and_a_disabled_write_cache_makes_every_write_fua)
{
    rig_for<TypeParam, async_traits> r;
    auto& ns = r.subsystem.add_namespace(test_backend<>{r.clock, capacity, 64, {.volatile_cache = true}});
    auto& backend = ns.backend();
    r.host.bring_up();
    const auto data = pattern(2 * 512, 3);
    ASSERT_EQ(write_blocks(r, 1, 4, 2, data).status(), spec::status::success());
    ASSERT_EQ(write_blocks(r, 1, 6, 2, data, {}, true).status(), spec::status::success());
    EXPECT_EQ(backend.records(),
              (std::vector<block_request_record>{{block_operation::write, 2048, 1024, false},
                                                 {block_operation::write, 3072, 1024, true}}));
    backend.clear_records();

    ASSERT_EQ(set_write_cache(r, false).status(), spec::status::success());
    const auto current = r.host.admin(host_type::get_features_command(spec::feature_id::volatile_write_cache,
                                                                      spec::feature_select::current));
    EXPECT_EQ(current.cqe.dw0, 0U);
    ASSERT_EQ(write_blocks(r, 1, 8, 2, data).status(), spec::status::success());
    const std::array ranges{copy_range(4, 2)};
    ASSERT_EQ(copy(r, 1, 20, ranges).status(), spec::status::success());
    ASSERT_EQ(write_zeroes(r, 1, 30, 2).status(), spec::status::success());
    EXPECT_EQ(backend.records(),
              (std::vector<block_request_record>{{block_operation::write, 4096, 1024, true},
                                                 {block_operation::read, 2048, 1024, false},
                                                 {block_operation::write, 10240, 1024, true},
                                                 {block_operation::write_zeroes, 15360, 1024, true}}));
    backend.clear_records();

    ASSERT_EQ(set_write_cache(r, true).status(), spec::status::success());
    ASSERT_EQ(write_blocks(r, 1, 8, 2, data).status(), spec::status::success());
    ASSERT_EQ(copy(r, 1, 20, ranges, 0, true).status(), spec::status::success());
    ASSERT_EQ(write_zeroes(r, 1, 30, 2, false, true).status(), spec::status::success());
    EXPECT_EQ(backend.records(),
              (std::vector<block_request_record>{{block_operation::write, 4096, 1024, false},
                                                 {block_operation::read, 2048, 1024, false},
                                                 {block_operation::write, 10240, 1024, true},
                                                 {block_operation::write_zeroes, 15360, 1024, true}}));
    EXPECT_EQ(read_blocks(r, 1, 20, 2, 1024).data, data);
}

/// One command of each NVM opcode naming `nsid`, with a valid data buffer where it has one.
template <typename Rig>
[[nodiscard]] spec::submission_queue_entry command_for(Rig& r, spec::nvm_opcode opcode, std::uint32_t nsid)
{
    const std::uint64_t buffer = r.host.allocate(4096);
    switch (opcode) {
    case spec::nvm_opcode::flush: return host_type::command(opcode, nsid);
    case spec::nvm_opcode::write_uncorrectable: {
        auto sqe = host_type::command(opcode, nsid);
        spec::write_uncorrectable_view{.starting_lba = 0, .block_count = 1}.encode(sqe);
        return sqe;
    }
    case spec::nvm_opcode::write_zeroes: return lba<spec::write_zeroes_view>(opcode, nsid, 0, 1);
    case spec::nvm_opcode::verify: return lba<spec::verify_view>(opcode, nsid, 0, 1);
    case spec::nvm_opcode::dataset_management: {
        r.memory.store(buffer, dsm_range(0, 1));
        auto sqe = host_type::command(opcode, nsid);
        spec::dataset_management_view{.range_count = 1, .deallocate = true}.encode(sqe);
        r.host.describe_data(sqe, buffer, sizeof(spec::dataset_management_range));
        return sqe;
    }
    case spec::nvm_opcode::copy: {
        r.memory.store(buffer, copy_range(0, 1));
        auto sqe = copy_command(nsid, 8, 1);
        r.host.describe_data(sqe, buffer, sizeof(spec::copy_source_range));
        return sqe;
    }
    default: {
        auto sqe = lba(opcode, nsid, 0, 1);
        r.host.describe_data(sqe, buffer, 512);
        return sqe;
    }
    }
}

constexpr std::array all_nvm_opcodes{spec::nvm_opcode::flush,
                                     spec::nvm_opcode::write,
                                     spec::nvm_opcode::read,
                                     spec::nvm_opcode::write_uncorrectable,
                                     spec::nvm_opcode::compare,
                                     spec::nvm_opcode::write_zeroes,
                                     spec::nvm_opcode::dataset_management,
                                     spec::nvm_opcode::verify,
                                     spec::nvm_opcode::copy};

TYPED_TEST(nvm_errors, every_command_refuses_a_namespace_that_is_missing_or_not_attached)
{
    rig_for<TypeParam, async_traits> r;
    auto& ns1 = r.subsystem.add_namespace(test_backend<>{r.clock, capacity, 64, {.volatile_cache = true}});
    auto& ns2 = r.subsystem.add_namespace(test_backend<>{r.clock, capacity, 64, {.volatile_cache = true}});
    r.host.bring_up();
    ASSERT_TRUE(r.subsystem.detach(2, r.ctrl.controller_id()));
    for (const auto opcode : all_nvm_opcodes) {
        for (const std::uint32_t nsid : {0U, 2U, 3U, 256U, 0xfffffffeU}) {
            const auto result = r.host.io(1, command_for(r, opcode, nsid));
            EXPECT_EQ(result.status(), dnr(spec::generic_status::invalid_namespace_or_format))
                << "opcode " << static_cast<int>(opcode) << " nsid " << nsid;
            EXPECT_EQ(result.cqe.dw0, 0U);
        }
    }
    // NSID FFFFFFFFh (broadcast) only for Flush.
    for (const auto opcode : all_nvm_opcodes) {
        const auto result = r.host.io(1, command_for(r, opcode, 0xffffffffU));
        const auto expected = opcode == spec::nvm_opcode::flush
                                  ? spec::status::success()
                                  : dnr(spec::generic_status::invalid_namespace_or_format);
        EXPECT_EQ(result.status(), expected) << "opcode " << static_cast<int>(opcode);
    }
    // Only the broadcast flush reached a backend, and only the attached one.
    EXPECT_EQ(ns1.backend().records(),
              (std::vector<block_request_record>{{block_operation::flush, 0, 0, false}}));
    EXPECT_TRUE(ns2.backend().records().empty());
    // The failures are logged with the command's identity.
    const auto entry = newest_error(r);
    EXPECT_EQ(entry.sqid, 1U);
    EXPECT_EQ(entry.nsid, 0xffffffffU);
    EXPECT_EQ(entry.status(), dnr(spec::generic_status::invalid_namespace_or_format));
}

TYPED_TEST(nvm_errors, lba_ranges_past_the_namespace_are_out_of_range)
{
    rig_for<TypeParam, async_traits> r;
    auto& ns = r.subsystem.add_namespace(test_backend<>{r.clock, capacity, 64});
    r.host.bring_up();
    ASSERT_EQ(ns.block_count(), blocks_512);
    const auto buffer = r.host.allocate(8192);
    struct range {
        std::uint64_t slba;
        std::uint32_t blocks;
    };
    const std::array ranges{range{blocks_512, 1}, range{blocks_512 - 1, 2}, range{blocks_512 - 8, 16},
                            range{~std::uint64_t{0}, 2}, range{~std::uint64_t{0} - 1, 4}};
    const std::array opcodes{spec::nvm_opcode::read,         spec::nvm_opcode::write,
                             spec::nvm_opcode::compare,      spec::nvm_opcode::verify,
                             spec::nvm_opcode::write_zeroes, spec::nvm_opcode::write_uncorrectable};
    for (const auto opcode : opcodes) {
        for (const auto& [slba, blocks] : ranges) {
            auto sqe = lba(opcode, 1, slba, blocks);
            if (opcode != spec::nvm_opcode::verify && opcode != spec::nvm_opcode::write_zeroes &&
                opcode != spec::nvm_opcode::write_uncorrectable) {
                r.host.describe_data(sqe, buffer, std::size_t{blocks} * 512);
            }
            EXPECT_EQ(r.host.io(1, sqe).status(), dnr(spec::generic_status::lba_out_of_range))
                << "opcode " << static_cast<int>(opcode) << " slba " << slba;
        }
    }
    EXPECT_TRUE(ns.backend().records().empty());
    EXPECT_EQ(ns.uncorrectable_ranges(), 0U);
    // The last block itself is in range.
    EXPECT_EQ(read_blocks(r, 1, blocks_512 - 1, 1, 512).done.status(), spec::status::success());
}

TEST(nvm_errors, bad_prps_are_refused)
{
    rig r;
    r.subsystem.add_namespace(nvmekit::ram_backend{capacity});
    r.host.bring_up();
    const auto data = pattern(4096, 4);
    ASSERT_EQ(write_blocks(r, 1, 0, 8, data).status(), spec::status::success());
    const auto buffer = r.host.allocate(3 * 4096);
    for (const auto opcode : {spec::nvm_opcode::read, spec::nvm_opcode::write, spec::nvm_opcode::compare}) {
        // PRP1 not dword aligned.
        auto sqe = lba(opcode, 1, 0, 1);
        sqe.dptr.prp1 = buffer + 2;
        EXPECT_EQ(r.host.io(1, sqe).status(), dnr(spec::generic_status::prp_offset_invalid));
        // PRP2 as the second page with an offset.
        sqe = lba(opcode, 1, 0, 16);
        sqe.dptr = {buffer, buffer + 4096 + 8};
        EXPECT_EQ(r.host.io(1, sqe).status(), dnr(spec::generic_status::prp_offset_invalid));
        // A PRP list entry with an offset.
        const auto list = r.host.allocate(4096);
        r.memory.store(list, buffer + 4096);
        r.memory.store(list + 8, buffer + 2 * 4096 + 16);
        sqe = lba(opcode, 1, 0, 24);
        sqe.dptr = {buffer, list};
        EXPECT_EQ(r.host.io(1, sqe).status(), dnr(spec::generic_status::prp_offset_invalid));
        // A PRP list pointer outside host memory.
        sqe.dptr = {buffer, 0x10000};
        EXPECT_EQ(r.host.io(1, sqe).status(), dnr(spec::generic_status::data_transfer_error));
        // Data pages outside host memory.
        sqe = lba(opcode, 1, 0, 8);
        sqe.dptr = {0x20000, 0};
        EXPECT_EQ(r.host.io(1, sqe).status(), dnr(spec::generic_status::data_transfer_error))
            << static_cast<int>(opcode);
        sqe = lba(opcode, 1, 0, 16);
        sqe.dptr = {buffer, 0x20000};
        EXPECT_EQ(r.host.io(1, sqe).status(), dnr(spec::generic_status::data_transfer_error))
            << static_cast<int>(opcode);
    }
    EXPECT_GT(r.ctrl.statistics().dma_errors, 0U);
    // Nothing reached the media.
    EXPECT_EQ(read_blocks(r, 1, 0, 8, 4096).data, data);
    EXPECT_EQ(read_blocks(r, 1, 8, 16, 8192).data, zeroes(8192));
}

TEST(nvm_read_write, sgl_data_blocks_and_bit_buckets)
{
    rig r;
    r.subsystem.add_namespace(nvmekit::ram_backend{capacity});
    r.host.bring_up();
    const auto data = pattern(8 * 512, 5);
    // Write from three scattered pieces (one not dword aligned in length), chained over two
    // segments.
    const auto a = host_buffer(r, part(data, 0, 1000));
    const auto b = host_buffer(r, part(data, 1000, 2000));
    const auto c = host_buffer(r, part(data, 3000, 1096));
    const std::array<host_type::sgl_piece, 3> pieces{{{a, 1000}, {b, 2000}, {c, 1096}}};
    auto sqe = write_command(1, 10, 8);
    sqe.dptr = r.host.build_sgl(pieces, 2);
    host_type::use_sgl(sqe);
    ASSERT_EQ(r.host.io(1, sqe).status(), spec::status::success());
    EXPECT_EQ(read_blocks(r, 1, 10, 8, data.size()).data, data);

    // Read through an SGL whose bit buckets discard blocks 1 and 3 to 5.
    const auto first = r.host.allocate(512);
    const auto second = r.host.allocate(512);
    const auto third = r.host.allocate(1024);
    const std::array<host_type::sgl_piece, 5> read_pieces{
        {{first, 512}, {0, 512, true}, {second, 512}, {0, 1536, true}, {third, 1024}}};
    sqe = lba(spec::nvm_opcode::read, 1, 10, 8);
    sqe.dptr = r.host.build_sgl(read_pieces);
    host_type::use_sgl(sqe);
    ASSERT_EQ(r.host.io(1, sqe).status(), spec::status::success());
    EXPECT_EQ(r.snapshot(first, 512), part(data, 0, 512));
    EXPECT_EQ(r.snapshot(second, 512), part(data, 1024, 512));
    EXPECT_EQ(r.snapshot(third, 1024), part(data, 3072, 1024));

    // One SGL descriptor in DPTR itself.
    const auto whole = r.host.allocate(4096);
    sqe = lba(spec::nvm_opcode::read, 1, 10, 8);
    const std::array<host_type::sgl_piece, 1> one{{{whole, 4096}}};
    sqe.dptr = r.host.build_sgl(one);
    host_type::use_sgl(sqe);
    ASSERT_EQ(r.host.io(1, sqe).status(), spec::status::success());
    EXPECT_EQ(r.snapshot(whole, 4096), data);

    // An SGL shorter than the transfer.
    const std::array<host_type::sgl_piece, 1> short_sgl{{{whole, 4000}}};
    sqe = lba(spec::nvm_opcode::read, 1, 10, 8);
    sqe.dptr = r.host.build_sgl(short_sgl);
    host_type::use_sgl(sqe);
    EXPECT_EQ(r.host.io(1, sqe).status(), dnr(spec::generic_status::data_sgl_length_invalid));
    // An SGL data block outside host memory.
    const std::array<host_type::sgl_piece, 2> unmapped{{{whole, 2048}, {0x30000, 2048}}};
    sqe = lba(spec::nvm_opcode::read, 1, 10, 8);
    sqe.dptr = r.host.build_sgl(unmapped);
    host_type::use_sgl(sqe);
    EXPECT_EQ(r.host.io(1, sqe).status(), dnr(spec::generic_status::data_transfer_error));
}

// ---- Flush ----------------------------------------------------------------------------------------

TYPED_TEST(nvm_flush, specific_namespace_broadcast_and_namespaces_without_a_cache)
{
    rig_for<TypeParam, async_traits> r;
    auto& cached = r.subsystem.add_namespace(test_backend<>{r.clock, capacity, 64, {.volatile_cache = true}});
    auto& uncached =
        r.subsystem.add_namespace(test_backend<>{r.clock, capacity, 64, {.volatile_cache = false}});
    auto& second = r.subsystem.add_namespace(
        test_backend<>{r.clock, capacity, 64, {.delay = 5ms, .volatile_cache = true}});
    auto& detached =
        r.subsystem.add_namespace(test_backend<>{r.clock, capacity, 64, {.volatile_cache = true}});
    r.host.bring_up();
    ASSERT_TRUE(r.subsystem.detach(4, r.ctrl.controller_id()));
    const std::vector<block_request_record> one_flush{{block_operation::flush, 0, 0, false}};

    EXPECT_EQ(flush(r, 1).status(), spec::status::success());
    EXPECT_EQ(cached.backend().records(), one_flush);
    EXPECT_EQ(flush(r, 2).status(), spec::status::success()); // nothing to flush
    EXPECT_TRUE(uncached.backend().records().empty());
    cached.backend().clear_records();

    EXPECT_EQ(flush(r, 0xffffffffU).status(), spec::status::success());
    EXPECT_EQ(cached.backend().records(), one_flush);
    EXPECT_TRUE(uncached.backend().records().empty());
    EXPECT_EQ(second.backend().records(), one_flush);
    EXPECT_TRUE(detached.backend().records().empty());

    EXPECT_EQ(flush(r, 4).status(), dnr(spec::generic_status::invalid_namespace_or_format));
    EXPECT_EQ(flush(r, 0).status(), dnr(spec::generic_status::invalid_namespace_or_format));
    EXPECT_EQ(flush(r, 9).status(), dnr(spec::generic_status::invalid_namespace_or_format));

    // A failing flush of one namespace fails the broadcast flush.
    second.backend().fail_nth(1, block_status::write_fault);
    EXPECT_EQ(flush(r, 0xffffffffU).status(), dnr(spec::media_status::write_fault));
    cached.backend().fail_nth(1, block_status::internal_error);
    EXPECT_EQ(flush(r, 1).status(), spec::status{spec::generic_status::internal_error});
}

// ---- Write Zeroes ----------------------------------------------------------------------------------

TYPED_TEST(nvm_write_zeroes, with_and_without_deallocate_reads_back_zeroes)
{
    rig_for<TypeParam, async_traits> r;
    auto& ns = r.subsystem.add_namespace(test_backend<>{r.clock, capacity, 64});
    auto& backend = ns.backend();
    r.host.bring_up();
    const auto data = pattern(32 * 512, 6);
    ASSERT_EQ(write_blocks(r, 1, 0, 32, data).status(), spec::status::success());
    backend.clear_records();

    EXPECT_EQ(write_zeroes(r, 1, 2, 3).status(), spec::status::success());
    EXPECT_EQ(write_zeroes(r, 1, 20, 4, true).status(), spec::status::success());
    EXPECT_EQ(backend.records(),
              (std::vector<block_request_record>{{block_operation::write_zeroes, 1024, 1536, false},
                                                 {block_operation::deallocate, 10240, 2048, false}}));
    auto expected = data;
    std::fill_n(expected.begin() + 2 * 512, 3 * 512, std::byte{0});
    std::fill_n(expected.begin() + 20 * 512, 4 * 512, std::byte{0});
    EXPECT_EQ(read_blocks(r, 1, 0, 32, expected.size()).data, expected);

    // Beyond MDTS: Write Zeroes transfers no data, so MDTS does not limit it.
    EXPECT_EQ(write_zeroes(r, 1, 0, 1024).status(), spec::status::success());
    EXPECT_EQ(read_blocks(r, 1, 0, 32, expected.size()).data, zeroes(expected.size()));
    EXPECT_EQ(write_zeroes(r, 1, blocks_512 - 1, 2).status(), dnr(spec::generic_status::lba_out_of_range));
    backend.fail_nth(1, block_status::write_fault);
    EXPECT_EQ(write_zeroes(r, 1, 0, 1).status(), dnr(spec::media_status::write_fault));
}

// ---- Dataset Management -----------------------------------------------------------------------------

TYPED_TEST(nvm_dataset_management, deallocated_ranges_read_back_as_zeroes)
{
    rig_for<TypeParam, async_traits> r;
    auto& ns = r.subsystem.add_namespace(test_backend<>{r.clock, capacity, 64});
    auto& backend = ns.backend();
    r.host.bring_up();
    const auto data = pattern(16 * 512, 7);
    ASSERT_EQ(write_blocks(r, 1, 0, 16, data).status(), spec::status::success());
    backend.clear_records();

    const std::array ranges{dsm_range(2, 3), dsm_range(5, 0), dsm_range(10, 1)};
    EXPECT_EQ(dataset_management(r, 1, ranges).status(), spec::status::success());
    EXPECT_EQ(backend.records(),
              (std::vector<block_request_record>{{block_operation::deallocate, 1024, 1536, false},
                                                 {block_operation::deallocate, 5120, 512, false}}));
    auto expected = data;
    std::fill_n(expected.begin() + 2 * 512, 3 * 512, std::byte{0});
    std::fill_n(expected.begin() + 10 * 512, 512, std::byte{0});
    EXPECT_EQ(read_blocks(r, 1, 0, 16, expected.size()).data, expected);
}

TYPED_TEST(nvm_dataset_management, out_of_range_ranges_change_nothing)
{
    rig_for<TypeParam, async_traits> r;
    auto& ns = r.subsystem.add_namespace(test_backend<>{r.clock, capacity, 64});
    auto& backend = ns.backend();
    r.host.bring_up();
    const auto data = pattern(16 * 512, 8);
    ASSERT_EQ(write_blocks(r, 1, 0, 16, data).status(), spec::status::success());
    backend.clear_records();
    for (const auto& bad :
         {dsm_range(blocks_512 - 1, 2), dsm_range(blocks_512, 1), dsm_range(~std::uint64_t{0}, 2)}) {
        const std::array ranges{dsm_range(0, 4), bad};
        EXPECT_EQ(dataset_management(r, 1, ranges).status(), dnr(spec::generic_status::lba_out_of_range));
    }
    EXPECT_TRUE(backend.records().empty());
    EXPECT_EQ(read_blocks(r, 1, 0, 16, data.size()).data, data);
}

TYPED_TEST(nvm_dataset_management, without_deallocate_is_a_hint_and_changes_nothing)
{
    rig_for<TypeParam, async_traits> r;
    auto& ns = r.subsystem.add_namespace(test_backend<>{r.clock, capacity, 64});
    auto& backend = ns.backend();
    r.host.bring_up();
    const auto data = pattern(8 * 512, 9);
    ASSERT_EQ(write_blocks(r, 1, 0, 8, data).status(), spec::status::success());
    backend.clear_records();
    const std::array ranges{dsm_range(0, 8)};
    EXPECT_EQ(dataset_management(r, 1, ranges, false, true).status(), spec::status::success());
    EXPECT_EQ(dataset_management(r, 1, ranges, false, false).status(), spec::status::success());
    EXPECT_TRUE(backend.records().empty());
    EXPECT_EQ(read_blocks(r, 1, 0, 8, data.size()).data, data);
}

TYPED_TEST(nvm_dataset_management, all_256_ranges_and_a_bad_range_pointer)
{
    TypeParam r;
    r.subsystem.add_namespace(nvmekit::ram_backend{capacity});
    r.host.bring_up();
    const auto data = pattern(512 * 512, 10);
    for (std::uint32_t chunk = 0; chunk < 2; ++chunk) {
        ASSERT_EQ(write_blocks(r, 1, chunk * 256, 256, part(data, chunk * 131072, 131072)).status(),
                  spec::status::success());
    }
    std::vector<spec::dataset_management_range> ranges;
    for (std::uint64_t i = 0; i < 256; ++i) {
        ranges.push_back(dsm_range(2 * i + 1, 1)); // every odd block
    }
    EXPECT_EQ(dataset_management(r, 1, ranges).status(), spec::status::success());
    for (std::uint32_t chunk = 0; chunk < 2; ++chunk) {
        const auto back = read_blocks(r, 1, chunk * 256, 256, 131072);
        for (std::size_t block = 0; block < 256; ++block) {
            const auto expected =
                block % 2 == 1 ? zeroes(512) : part(data, chunk * 131072 + block * 512, 512);
            EXPECT_EQ(part(back.data, block * 512, 512), expected) << "block " << chunk * 256 + block;
        }
    }
    auto sqe = host_type::command(spec::nvm_opcode::dataset_management, 1);
    spec::dataset_management_view{.range_count = 4, .deallocate = true}.encode(sqe);
    r.host.describe_data(sqe, 0x40000, 4 * sizeof(spec::dataset_management_range)); // not host memory
    EXPECT_EQ(r.host.io(1, sqe).status(), dnr(spec::generic_status::data_transfer_error));
    if constexpr (over_pcie<TypeParam>) {
        sqe.dptr.prp1 = r.host.allocate(4096) + 1;
        EXPECT_EQ(r.host.io(1, sqe).status(), dnr(spec::generic_status::prp_offset_invalid));
    }
}

// ---- Compare and Verify -------------------------------------------------------------------------------

TYPED_TEST(nvm_compare, match_mismatch_and_bad_pointers)
{
    TypeParam r;
    r.subsystem.add_namespace(nvmekit::ram_backend{capacity});
    r.host.bring_up();
    const auto data = pattern(16 * 512, 11);
    ASSERT_EQ(write_blocks(r, 1, 40, 16, data).status(), spec::status::success());
    EXPECT_EQ(compare_blocks(r, 1, 40, 16, data).status(), spec::status::success());
    EXPECT_EQ(compare_blocks(r, 1, 44, 2, part(data, 2048, 1024)).status(), spec::status::success());
    auto changed = data;
    changed.back() ^= std::byte{1}; // the last byte of the last page
    EXPECT_EQ(compare_blocks(r, 1, 40, 16, changed).status(), dnr(spec::media_status::compare_failure));
    changed = data;
    changed[4096] ^= std::byte{0x80}; // the first byte of the second page
    EXPECT_EQ(compare_blocks(r, 1, 40, 16, changed).status(), dnr(spec::media_status::compare_failure));
    EXPECT_EQ(compare_blocks(r, 1, 41, 16, data).status(), dnr(spec::media_status::compare_failure));

    auto sqe = lba<spec::compare_view>(spec::nvm_opcode::compare, 1, 40, 8);
    r.host.describe_data(sqe, 0x50000, 4096); // not host memory
    EXPECT_EQ(r.host.io(1, sqe).status(), dnr(spec::generic_status::data_transfer_error));
    if constexpr (over_pcie<TypeParam>) {
        sqe.dptr.prp1 = r.host.allocate(4096) + 3;
        EXPECT_EQ(r.host.io(1, sqe).status(), dnr(spec::generic_status::prp_offset_invalid));
    }
    // The data is unchanged by the compares.
    EXPECT_EQ(read_blocks(r, 1, 40, 16, data.size()).data, data);
}

TYPED_TEST(nvm_verify, reads_the_media_without_a_transfer)
{
    rig_for<TypeParam, async_traits> r;
    auto& ns = r.subsystem.add_namespace(test_backend<>{r.clock, capacity, 64});
    auto& backend = ns.backend();
    r.host.bring_up();
    EXPECT_EQ(verify(r, 1, 0, 8).status(), spec::status::success());
    // Verify is not limited by MDTS.
    EXPECT_EQ(verify(r, 1, 0, 1024).status(), spec::status::success());
    EXPECT_EQ(backend.records(),
              (std::vector<block_request_record>{{block_operation::read, 0, 4096, false},
                                                 {block_operation::read, 0, 524288, false}}));
    EXPECT_EQ(verify(r, 1, blocks_512, 1).status(), dnr(spec::generic_status::lba_out_of_range));
    backend.add_media_error(7 * 512, 1);
    EXPECT_EQ(verify(r, 1, 0, 8).status(), dnr(spec::media_status::unrecovered_read_error));
    EXPECT_EQ(verify(r, 1, 8, 8).status(), spec::status::success());
}

// ---- Write Uncorrectable --------------------------------------------------------------------------------

TYPED_TEST(nvm_write_uncorrectable, blocks_fail_reads_until_rewritten)
{
    TypeParam r;
    r.subsystem.add_namespace(nvmekit::ram_backend{capacity});
    r.host.bring_up();
    const auto data = pattern(16 * 512, 12);
    ASSERT_EQ(write_blocks(r, 1, 0, 16, data).status(), spec::status::success());
    ASSERT_EQ(media_errors(r), 0U);

    ASSERT_EQ(write_uncorrectable(r, 1, 4, 3).status(), spec::status::success()); // blocks 4, 5, 6
    const auto failed = read_blocks(r, 1, 0, 8, 4096);
    EXPECT_EQ(failed.done.status(), dnr(spec::media_status::unrecovered_read_error));
    auto entry = newest_error(r);
    EXPECT_EQ(entry.status(), dnr(spec::media_status::unrecovered_read_error));
    EXPECT_EQ(entry.lba, 4U);
    EXPECT_EQ(entry.nsid, 1U);
    EXPECT_EQ(entry.sqid, 1U);
    EXPECT_EQ(entry.cid, failed.done.cqe.cid);
    EXPECT_EQ(media_errors(r), 1U);

    EXPECT_EQ(read_blocks(r, 1, 6, 4, 2048).done.status(), dnr(spec::media_status::unrecovered_read_error));
    EXPECT_EQ(newest_error(r).lba, 6U);
    EXPECT_EQ(read_blocks(r, 1, 5, 1, 512).done.status(), dnr(spec::media_status::unrecovered_read_error));
    EXPECT_EQ(newest_error(r).lba, 5U);
    EXPECT_EQ(media_errors(r), 3U);
    EXPECT_EQ(verify(r, 1, 3, 2).status(), dnr(spec::media_status::unrecovered_read_error));
    EXPECT_EQ(compare_blocks(r, 1, 6, 1, part(data, 6 * 512, 512)).status(),
              dnr(spec::media_status::unrecovered_read_error));
    const std::array source{copy_range(0, 5)};
    EXPECT_EQ(copy(r, 1, 100, source).status(), dnr(spec::media_status::unrecovered_read_error));
    EXPECT_EQ(newest_error(r).lba, 4U);
    EXPECT_EQ(media_errors(r), 6U);

    // The blocks around are readable.
    EXPECT_EQ(read_blocks(r, 1, 0, 4, 2048).data, part(data, 0, 2048));
    EXPECT_EQ(read_blocks(r, 1, 7, 9, 9 * 512).data, part(data, 7 * 512, 9 * 512));

    // A Write of block 5 makes it readable; 4 and 6 stay uncorrectable.
    const auto fresh = pattern(512, 13);
    ASSERT_EQ(write_blocks(r, 1, 5, 1, fresh).status(), spec::status::success());
    EXPECT_EQ(read_blocks(r, 1, 5, 1, 512).data, fresh);
    EXPECT_EQ(read_blocks(r, 1, 4, 1, 512).done.status(), dnr(spec::media_status::unrecovered_read_error));
    EXPECT_EQ(read_blocks(r, 1, 6, 1, 512).done.status(), dnr(spec::media_status::unrecovered_read_error));
    // Write Zeroes rewrites 4 to 6.
    ASSERT_EQ(write_zeroes(r, 1, 4, 3).status(), spec::status::success());
    EXPECT_EQ(read_blocks(r, 1, 4, 3, 1536).data, zeroes(1536));
    EXPECT_EQ(read_blocks(r, 1, 0, 16, 8192).done.status(), spec::status::success());

    // Deallocate and Copy rewrite uncorrectable blocks too.
    ASSERT_EQ(write_uncorrectable(r, 1, 8, 2).status(), spec::status::success());
    const std::array dsm{dsm_range(8, 1)};
    ASSERT_EQ(dataset_management(r, 1, dsm).status(), spec::status::success());
    EXPECT_EQ(read_blocks(r, 1, 8, 1, 512).data, zeroes(512));
    EXPECT_EQ(read_blocks(r, 1, 9, 1, 512).done.status(), dnr(spec::media_status::unrecovered_read_error));
    const std::array onto{copy_range(0, 1)};
    ASSERT_EQ(copy(r, 1, 9, onto).status(), spec::status::success());
    EXPECT_EQ(read_blocks(r, 1, 9, 1, 512).data, part(data, 0, 512));

    EXPECT_EQ(write_uncorrectable(r, 1, blocks_512 - 1, 2).status(),
              dnr(spec::generic_status::lba_out_of_range));
    EXPECT_EQ(media_errors(r), 9U); // reads of 4 and 6 after the Write, of 9 after the Deallocate
}

// ---- Copy -------------------------------------------------------------------------------------------------

TYPED_TEST(nvm_copy, single_and_several_ranges)
{
    TypeParam r;
    r.subsystem.add_namespace(nvmekit::ram_backend{capacity});
    r.host.bring_up();
    const auto data = pattern(64 * 512, 14);
    ASSERT_EQ(write_blocks(r, 1, 0, 64, data).status(), spec::status::success());

    const std::array one{copy_range(3, 5)};
    EXPECT_EQ(copy(r, 1, 200, one).status(), spec::status::success());
    EXPECT_EQ(read_blocks(r, 1, 200, 5, 2560).data, part(data, 3 * 512, 2560));

    const std::array several{copy_range(10, 2), copy_range(0, 1), copy_range(60, 4), copy_range(10, 2)};
    EXPECT_EQ(copy(r, 1, 300, several).status(), spec::status::success());
    std::vector<std::byte> expected;
    for (const auto& [slba, blocks] :
         {std::pair{10, 2}, std::pair{0, 1}, std::pair{60, 4}, std::pair{10, 2}}) {
        const auto piece =
            part(data, static_cast<std::size_t>(slba) * 512, static_cast<std::size_t>(blocks) * 512);
        expected.insert(expected.end(), piece.begin(), piece.end());
    }
    const auto back = read_blocks(r, 1, 299, 11, 11 * 512);
    EXPECT_EQ(part(back.data, 0, 512), zeroes(512));
    EXPECT_EQ(part(back.data, 512, 9 * 512), expected);
    EXPECT_EQ(part(back.data, 10 * 512, 512), zeroes(512));

    // The largest copy the namespace reports (MCL = MSSRL = 256 blocks of 512 bytes).
    const std::array largest{copy_range(0, 64), copy_range(0, 64), copy_range(0, 64), copy_range(0, 64)};
    EXPECT_EQ(copy(r, 1, 1000, largest).status(), spec::status::success());
    for (std::uint64_t i = 0; i < 4; ++i) {
        EXPECT_EQ(read_blocks(r, 1, 1000 + 64 * i, 64, data.size()).data, data);
    }
}

TYPED_TEST(nvm_copy, destination_overlapping_a_source_gets_the_source_data)
{
    TypeParam r;
    r.subsystem.add_namespace(nvmekit::ram_backend{capacity});
    r.host.bring_up();
    const auto data = pattern(16 * 512, 15);
    ASSERT_EQ(write_blocks(r, 1, 0, 16, data).status(), spec::status::success());
    const std::array ranges{copy_range(0, 8)};
    EXPECT_EQ(copy(r, 1, 4, ranges).status(), spec::status::success());
    const auto back = read_blocks(r, 1, 0, 16, 8192);
    EXPECT_EQ(part(back.data, 0, 2048), part(data, 0, 2048));
    EXPECT_EQ(part(back.data, 2048, 4096), part(data, 0, 4096));
    EXPECT_EQ(part(back.data, 6144, 2048), part(data, 6144, 2048));
}

TYPED_TEST(nvm_copy, limits_ranges_and_descriptor_format)
{
    rig_for<TypeParam, async_traits> r;
    auto& ns = r.subsystem.add_namespace(test_backend<>{r.clock, capacity, 64});
    auto& backend = ns.backend();
    r.host.bring_up();
    const auto data = pattern(8 * 512, 16);
    ASSERT_EQ(write_blocks(r, 1, 0, 8, data).status(), spec::status::success());
    backend.clear_records();

    const auto expect_refused = [&](std::span<const spec::copy_source_range> ranges,
                                    std::uint64_t destination, spec::status expected,
                                    std::uint8_t format = 0) {
        const auto result = copy(r, 1, destination, ranges, format);
        EXPECT_EQ(result.status(), expected);
        EXPECT_EQ(result.cqe.dw0, 0U); // no data written to the destination
    };
    const std::array too_long{copy_range(0, 257)};
    expect_refused(too_long, 100, dnr(spec::command_specific_status::command_size_limit_exceeded));
    const std::array too_much{copy_range(0, 200), copy_range(200, 57)};
    expect_refused(too_much, 1000, dnr(spec::command_specific_status::command_size_limit_exceeded));
    const std::vector<spec::copy_source_range> too_many(129, copy_range(0, 1));
    expect_refused(too_many, 100, dnr(spec::command_specific_status::command_size_limit_exceeded));
    const std::vector<spec::copy_source_range> most(128, copy_range(0, 1));
    EXPECT_EQ(copy(r, 1, 500, most).status(), spec::status::success());

    const std::array source_out{copy_range(0, 1), copy_range(blocks_512 - 1, 2)};
    expect_refused(source_out, 100, dnr(spec::generic_status::lba_out_of_range));
    const std::array fine{copy_range(0, 4)};
    expect_refused(fine, blocks_512 - 3, dnr(spec::generic_status::lba_out_of_range));
    expect_refused(fine, ~std::uint64_t{0} - 1, dnr(spec::generic_status::lba_out_of_range));
    expect_refused(fine, 100, dnr(spec::generic_status::invalid_field), 1);
    expect_refused(fine, 100, dnr(spec::generic_status::invalid_field), 15);
    EXPECT_EQ(read_blocks(r, 1, 100, 4, 2048).data, zeroes(2048));

    // A bad pointer to the source ranges.
    auto sqe = copy_command(1, 100, 1);
    r.host.describe_data(sqe, 0x60000, sizeof(spec::copy_source_range)); // not host memory
    EXPECT_EQ(r.host.io(1, sqe).status(), dnr(spec::generic_status::data_transfer_error));

    // Backend failures while reading and while writing.
    backend.clear_records();
    backend.fail_nth(1, block_status::unrecovered_read_error);
    EXPECT_EQ(copy(r, 1, 100, fine).status(), dnr(spec::media_status::unrecovered_read_error));
    backend.fail_nth(2, block_status::write_fault);
    EXPECT_EQ(copy(r, 1, 100, fine).status(), dnr(spec::media_status::write_fault));
    EXPECT_EQ(backend.records(),
              (std::vector<block_request_record>{{block_operation::read, 0, 2048, false},
                                                 {block_operation::read, 0, 2048, false},
                                                 {block_operation::write, 51200, 2048, false}}));
    EXPECT_EQ(copy(r, 1, 100, fine).status(), spec::status::success());
    EXPECT_EQ(read_blocks(r, 1, 100, 4, 2048).data, part(data, 0, 2048));
}

// ---- LBA formats ------------------------------------------------------------------------------------------

struct format_case {
    std::uint8_t lba_format;
    bool extended;
};

[[nodiscard]] std::string format_name(const format_case& format)
{
    return "lbaf" + std::to_string(format.lba_format) + (format.extended ? "_extended" : "_separate");
}

constexpr std::array all_format_cases{format_case{0, false}, format_case{0, true},  format_case{1, false},
                                      format_case{1, true},  format_case{2, false}, format_case{2, true},
                                      format_case{3, false}, format_case{3, true}};

/// Data and metadata of LBA format `format` through every command, over `Rig`'s transport.
template <typename Rig>
void round_trip_through_every_command(format_case format_and_layout)
{
    const auto [format, extended] = format_and_layout;
    Rig r;
    auto& ns = r.subsystem.add_namespace(test_backend<>{r.clock, capacity, 64},
                                         {.lba_format = format, .extended_metadata = extended});
    auto& backend = ns.backend();
    r.host.bring_up();
    const std::uint64_t data_bytes = nvmekit::supported_lba_formats[format].data_bytes;
    const std::uint64_t metadata_bytes = nvmekit::supported_lba_formats[format].metadata_bytes;
    const bool interleaved = extended && metadata_bytes != 0;
    ASSERT_EQ(ns.block_count(), capacity / (data_bytes + metadata_bytes));
    ASSERT_EQ(ns.extended_metadata(), interleaved);
    const std::uint32_t count = 4;
    const std::size_t transfer = count * (data_bytes + (interleaved ? metadata_bytes : 0));
    const std::size_t separate = interleaved ? 0 : count * metadata_bytes;

    const auto data = pattern(transfer, 20 + format);
    const auto metadata = pattern(separate, 40 + format);
    ASSERT_EQ(write_blocks(r, 1, 3, count, data, metadata).status(), spec::status::success());
    const auto back = read_blocks(r, 1, 3, count, transfer, separate);
    ASSERT_EQ(back.done.status(), spec::status::success());
    EXPECT_EQ(back.data, data);
    EXPECT_EQ(back.metadata, metadata);

    // The backend layout: interleaved blocks, or all data then all metadata.
    if (interleaved) {
        EXPECT_EQ(peek(backend, 3 * (data_bytes + metadata_bytes), transfer), data);
    } else {
        EXPECT_EQ(peek(backend, 3 * data_bytes, transfer), data);
        if (metadata_bytes != 0) {
            EXPECT_EQ(peek(backend, ns.block_count() * data_bytes + 3 * metadata_bytes, separate), metadata);
        }
    }

    // Compare checks data and metadata.
    EXPECT_EQ(compare_blocks(r, 1, 3, count, data, metadata).status(), spec::status::success());
    auto changed = data;
    changed[transfer - 1] ^= std::byte{4}; // the last block's metadata when interleaved
    EXPECT_EQ(compare_blocks(r, 1, 3, count, changed, metadata).status(),
              dnr(spec::media_status::compare_failure));
    if (separate != 0) {
        auto changed_metadata = metadata;
        changed_metadata[separate - 1] ^= std::byte{4};
        EXPECT_EQ(compare_blocks(r, 1, 3, count, data, changed_metadata).status(),
                  dnr(spec::media_status::compare_failure));
    }

    // Copy moves data and metadata.
    const std::array ranges{copy_range(5, 2), copy_range(3, 2)};
    ASSERT_EQ(copy(r, 1, 40, ranges).status(), spec::status::success());
    const std::size_t unit = transfer / count;
    const std::size_t metadata_unit = separate / count;
    auto copied = part(data, 2 * unit, 2 * unit);
    const auto first_two = part(data, 0, 2 * unit);
    copied.insert(copied.end(), first_two.begin(), first_two.end());
    auto copied_metadata = part(metadata, 2 * metadata_unit, 2 * metadata_unit);
    const auto first_metadata = part(metadata, 0, 2 * metadata_unit);
    copied_metadata.insert(copied_metadata.end(), first_metadata.begin(), first_metadata.end());
    const auto copy_back = read_blocks(r, 1, 40, count, transfer, separate);
    EXPECT_EQ(copy_back.data, copied);
    EXPECT_EQ(copy_back.metadata, copied_metadata);

    // Write Zeroes and Deallocate clear data and metadata.
    ASSERT_EQ(write_zeroes(r, 1, 3, 2).status(), spec::status::success());
    const std::array deallocate{dsm_range(5, 2)};
    ASSERT_EQ(dataset_management(r, 1, deallocate).status(), spec::status::success());
    const auto cleared = read_blocks(r, 1, 3, count, transfer, separate);
    EXPECT_EQ(cleared.data, zeroes(transfer));
    EXPECT_EQ(cleared.metadata, zeroes(separate));
    // The copy is untouched.
    EXPECT_EQ(read_blocks(r, 1, 40, count, transfer, separate).metadata, copied_metadata);

    // MDTS counts the data buffer (metadata included when interleaved).
    const auto mdts_blocks = static_cast<std::uint32_t>(131072 / unit);
    EXPECT_EQ(
        read_blocks(r, 1, 0, mdts_blocks, mdts_blocks * unit, mdts_blocks * metadata_unit).done.status(),
        spec::status::success());
    EXPECT_EQ(
        read_blocks(r, 1, 0, mdts_blocks + 1, (mdts_blocks + 1) * unit, (mdts_blocks + 1) * metadata_unit)
            .done.status(),
        dnr(spec::generic_status::invalid_field));
    // The last block is in range, the one after it is not.
    EXPECT_EQ(read_blocks(r, 1, ns.block_count() - 1, 1, unit, metadata_unit).done.status(),
              spec::status::success());
    EXPECT_EQ(read_blocks(r, 1, ns.block_count(), 1, unit, metadata_unit).done.status(),
              dnr(spec::generic_status::lba_out_of_range));
}

/// An LBA format and the transport to run it over.
using format_over_transport = std::tuple<format_case, bool /* loopback */>;

class nvm_lba_format_over_transports : public ::testing::TestWithParam<format_over_transport> {};

TEST_P(nvm_lba_format_over_transports, data_and_metadata_round_trip_through_every_command)
{
    const auto [format, loopback] = GetParam();
    if (loopback) {
        round_trip_through_every_command<loopback_rig<async_traits>>(format);
    } else {
        round_trip_through_every_command<basic_rig<async_traits>>(format);
    }
}

INSTANTIATE_TEST_SUITE_P(formats, nvm_lba_format_over_transports,
                         ::testing::Combine(::testing::ValuesIn(all_format_cases), ::testing::Bool()),
                         [](const ::testing::TestParamInfo<format_over_transport>& info) {
                             return format_name(std::get<0>(info.param)) +
                                    (std::get<1>(info.param) ? "_loopback" : "_pcie");
                         });

/// The PRP and SGL data pointers with metadata in host memory: over PCIe only.
class nvm_lba_format : public ::testing::TestWithParam<format_case> {};

TEST_P(nvm_lba_format, sgl_data_with_a_byte_aligned_metadata_buffer)
{
    const auto [format, extended] = GetParam();
    rig r;
    auto& ns = r.subsystem.add_namespace(nvmekit::ram_backend{capacity},
                                         {.lba_format = format, .extended_metadata = extended});
    r.host.bring_up();
    const std::size_t transfer = ns.data_transfer_bytes(2);
    const std::size_t separate = ns.metadata_transfer_bytes(2);
    const auto data = pattern(transfer, 60);
    const auto metadata = pattern(separate, 61);
    const auto half = transfer / 2;
    const auto a = host_buffer(r, part(data, 0, half));
    const auto b = host_buffer(r, part(data, half, transfer - half));
    const auto metadata_buffer = r.host.allocate(separate + 8) + 1; // PSDT 01b: byte aligned
    if (separate != 0) {
        std::copy(metadata.begin(), metadata.end(), r.memory.bytes(metadata_buffer, separate).begin());
    }
    const std::array<host_type::sgl_piece, 2> pieces{
        {{a, static_cast<std::uint32_t>(half)}, {b, static_cast<std::uint32_t>(transfer - half)}}};
    auto sqe = write_command(1, 7, 2);
    sqe.dptr = r.host.build_sgl(pieces);
    sqe.mptr = metadata_buffer;
    host_type::use_sgl(sqe);
    ASSERT_EQ(r.host.io(1, sqe).status(), spec::status::success());
    const auto back = read_blocks(r, 1, 7, 2, transfer, separate);
    EXPECT_EQ(back.data, data);
    EXPECT_EQ(back.metadata, metadata);

    // PSDT 00b needs a dword aligned MPTR.
    if (separate != 0) {
        auto prp = write_command(1, 7, 2);
        prp.dptr = r.host.build_prps(a, transfer);
        prp.mptr = metadata_buffer;
        EXPECT_EQ(r.host.io(1, prp).status(), dnr(spec::generic_status::invalid_field));
        prp.mptr = 0x70000; // not host memory
        EXPECT_EQ(r.host.io(1, prp).status(), dnr(spec::generic_status::data_transfer_error));
    }
}

INSTANTIATE_TEST_SUITE_P(formats, nvm_lba_format, ::testing::ValuesIn(all_format_cases),
                         [](const ::testing::TestParamInfo<format_case>& info) {
                             return format_name(info.param);
                         });

// ---- staging buffers
// ----------------------------------------------------------------------------------------

TYPED_TEST(nvm_staging, commands_wait_for_the_one_staging_buffer_and_all_complete)
{
    rig_for<TypeParam, staging_traits> r;
    auto& ns = r.subsystem.add_namespace(test_backend<>{r.clock, capacity, 64, {.delay = 200us}},
                                         {.lba_format = 1, .extended_metadata = false});
    r.host.bring_up();
    constexpr int writes = 4;
    std::vector<std::vector<std::byte>> data;
    std::vector<std::vector<std::byte>> metadata;
    std::vector<std::uint16_t> cids;
    for (int i = 0; i < writes; ++i) {
        data.push_back(pattern(8 * 512, 70 + static_cast<unsigned>(i)));
        metadata.push_back(pattern(8 * 8, 80 + static_cast<unsigned>(i)));
        auto sqe = write_command(1, 16U * static_cast<unsigned>(i), 8);
        const auto buffer = host_buffer(r, data.back());
        r.host.describe_data(sqe, buffer, 4096);
        sqe.mptr = host_buffer(r, metadata.back());
        cids.push_back(r.host.submit(1, sqe));
    }
    r.step(); // one poll of the controller (over TLM: the simulation catches up, DMA included)
    EXPECT_EQ(ns.backend().outstanding(), 2U); // the first write's data and metadata
    EXPECT_EQ(r.ctrl.statistics().staging_waits, 3U);
    EXPECT_EQ(r.ctrl.requests_in_use(), 4U);
    const auto done = reap_all(r, 1, writes);
    ASSERT_EQ(done.size(), static_cast<std::size_t>(writes));
    for (int i = 0; i < writes; ++i) {
        EXPECT_EQ(done[static_cast<std::size_t>(i)].cqe.cid, cids[static_cast<std::size_t>(i)]);
        EXPECT_EQ(done[static_cast<std::size_t>(i)].status(), spec::status::success());
    }

    // Reads, a compare, a copy and a deallocate, all queued at once.
    std::vector<std::uint64_t> read_buffers;
    std::vector<std::uint64_t> metadata_buffers;
    cids.clear();
    for (int i = 0; i < writes; ++i) {
        auto sqe = lba(spec::nvm_opcode::read, 1, 16U * static_cast<unsigned>(i), 8);
        read_buffers.push_back(r.host.allocate(4096));
        metadata_buffers.push_back(r.host.allocate(64));
        r.host.describe_data(sqe, read_buffers.back(), 4096);
        sqe.mptr = metadata_buffers.back();
        cids.push_back(r.host.submit(1, sqe));
    }
    auto compare = lba<spec::compare_view>(spec::nvm_opcode::compare, 1, 0, 8);
    r.host.describe_data(compare, host_buffer(r, data[0]), 4096);
    compare.mptr = host_buffer(r, metadata[0]);
    cids.push_back(r.host.submit(1, compare));
    const std::array ranges{copy_range(16, 8)};
    auto copy_sqe = copy_command(1, 200, 1);
    r.host.describe_data(copy_sqe, host_buffer(r, std::as_bytes(std::span{ranges})), sizeof(ranges));
    cids.push_back(r.host.submit(1, copy_sqe));
    const std::array dsm{dsm_range(48, 8)};
    auto dsm_sqe = host_type::command(spec::nvm_opcode::dataset_management, 1);
    spec::dataset_management_view{.range_count = 1, .deallocate = true}.encode(dsm_sqe);
    r.host.describe_data(dsm_sqe, host_buffer(r, std::as_bytes(std::span{dsm})), sizeof(dsm));
    cids.push_back(r.host.submit(1, dsm_sqe));
    const auto second = reap_all(r, 1, cids.size());
    ASSERT_EQ(second.size(), cids.size());
    for (std::size_t i = 0; i < cids.size(); ++i) {
        EXPECT_EQ(second[i].cqe.cid, cids[i]); // one buffer: they run one at a time, in order
        EXPECT_EQ(second[i].status(), spec::status::success()) << i;
    }
    EXPECT_EQ(r.ctrl.statistics().staging_waits, 3U + 6U);
    for (std::size_t i = 0; i < writes; ++i) {
        EXPECT_EQ(r.snapshot(read_buffers[i], 4096), data[i]);
        EXPECT_EQ(r.snapshot(metadata_buffers[i], 64), metadata[i]);
    }
    const auto copied = read_blocks(r, 1, 200, 8, 4096, 64);
    EXPECT_EQ(copied.data, data[1]);
    EXPECT_EQ(copied.metadata, metadata[1]);
    const auto deallocated = read_blocks(r, 1, 48, 8, 4096, 64);
    EXPECT_EQ(deallocated.data, zeroes(4096));
    EXPECT_EQ(deallocated.metadata, zeroes(64));
    EXPECT_EQ(r.ctrl.requests_in_use(), 0U);
    EXPECT_GT(r.dma.reads(), 0U);
    EXPECT_GT(r.dma.writes(), 0U);
}

TEST(nvm_staging, unmappable_memory_with_inline_backends_and_sgl_bit_buckets)
{
    unmapped_rig r;
    r.subsystem.add_namespace(nvmekit::ram_backend{capacity});
    r.host.bring_up();
    const auto data = pattern(8 * 512, 90);
    ASSERT_EQ(write_blocks(r, 1, 0, 8, data).status(), spec::status::success());
    EXPECT_EQ(read_blocks(r, 1, 0, 8, 4096).data, data);
    EXPECT_EQ(compare_blocks(r, 1, 0, 8, data).status(), spec::status::success());
    const auto kept = r.host.allocate(1024);
    const std::array<unmapped_rig::host_type::sgl_piece, 3> pieces{
        {{0, 1024, true}, {kept, 1024}, {0, 2048, true}}};
    auto sqe = lba(spec::nvm_opcode::read, 1, 0, 8);
    sqe.dptr = r.host.build_sgl(pieces);
    host_type::use_sgl(sqe);
    ASSERT_EQ(r.host.io(1, sqe).status(), spec::status::success());
    EXPECT_EQ(r.snapshot(kept, 1024), part(data, 1024, 1024));
    // A host buffer outside host memory is found when the data is copied.
    sqe = lba(spec::nvm_opcode::read, 1, 0, 8);
    sqe.dptr.prp1 = 0x80000;
    EXPECT_EQ(r.host.io(1, sqe).status(), dnr(spec::generic_status::data_transfer_error));
    sqe = write_command(1, 0, 8);
    sqe.dptr.prp1 = 0x80000;
    EXPECT_EQ(r.host.io(1, sqe).status(), dnr(spec::generic_status::data_transfer_error));
    EXPECT_EQ(read_blocks(r, 1, 0, 8, 4096).data, data);
}

TEST(nvm_staging, deleting_the_queue_drops_commands_waiting_for_a_buffer)
{
    staging_rig r;
    auto& ns = r.subsystem.add_namespace(test_backend<>{r.clock, capacity, 64, {.delay = 1s}});
    r.host.bring_up();
    for (int i = 0; i < 3; ++i) {
        auto sqe = write_command(1, static_cast<std::uint64_t>(i) * 8, 8);
        sqe.dptr = r.host.build_prps(host_buffer(r, pattern(4096, 100 + static_cast<unsigned>(i))), 4096);
        r.host.submit(1, sqe);
    }
    r.ctrl.poll();
    ASSERT_EQ(ns.backend().outstanding(), 1U);
    ASSERT_EQ(r.ctrl.statistics().staging_waits, 2U);
    const auto posted = r.ctrl.statistics().completions_posted;
    // The deletion completes once the write in the backend has returned (1 s).
    const auto asked = r.clock.now();
    ASSERT_EQ(r.host.delete_io_sq(1).status(), spec::status::success());
    EXPECT_GE(r.clock.now() - asked, 1s);
    EXPECT_EQ(r.ctrl.requests_in_use(), 0U);
    EXPECT_EQ(r.ctrl.io_outstanding(), 0U);
    EXPECT_EQ(ns.backend().submitted(), 1U);                        // the waiting writes never ran
    EXPECT_EQ(r.ctrl.statistics().completions_posted, posted + 1U); // the Delete I/O SQ only
    // The staging buffer is free again.
    ASSERT_EQ(r.host.create_io_sq(1, 1, 64).status(), spec::status::success());
    const auto data = pattern(4096, 110);
    EXPECT_EQ(write_blocks(r, 1, 0, 8, data).status(), spec::status::success());
    EXPECT_EQ(read_blocks(r, 1, 0, 8, 4096).data, data);
}

// ---- asynchronous completion ------------------------------------------------------------------------------

TYPED_TEST(nvm_async, completions_arrive_in_backend_order_with_their_command_ids)
{
    rig_for<TypeParam, async_traits> r;
    auto& ns = r.subsystem.add_namespace(test_backend<>{r.clock, capacity, 64});
    auto& backend = ns.backend();
    r.host.bring_up();
    const auto data = pattern(8 * 512, 120);
    backend.preload(0, data);
    // Later blocks complete sooner.
    backend.set_delay_function([](const nvmekit::block_request& request) {
        return std::chrono::milliseconds{10} - std::chrono::milliseconds{request.offset / 512};
    });
    std::vector<std::uint16_t> cids;
    std::vector<std::uint64_t> buffers;
    for (std::uint64_t block = 0; block < 8; ++block) {
        auto sqe = lba(spec::nvm_opcode::read, 1, block, 1);
        buffers.push_back(r.host.allocate(512));
        r.host.describe_data(sqe, buffers.back(), 512);
        cids.push_back(r.host.submit(1, sqe));
    }
    r.step(); // one poll of the controller (over TLM: the simulation catches up, DMA included)
    EXPECT_EQ(backend.outstanding(), 8U);
    EXPECT_EQ(r.ctrl.io_outstanding(), 8U);
    EXPECT_EQ(r.ctrl.requests_in_use(), 8U);
    const auto done = reap_all(r, 1, 8, 500us);
    ASSERT_EQ(done.size(), 8U);
    for (std::size_t i = 0; i < 8; ++i) {
        EXPECT_EQ(done[i].cqe.cid, cids[7 - i]);
        EXPECT_EQ(done[i].cqe.sq_id, 1U);
        EXPECT_EQ(done[i].status(), spec::status::success());
    }
    for (std::size_t block = 0; block < 8; ++block) {
        EXPECT_EQ(r.snapshot(buffers[block], 512), part(data, block * 512, 512));
    }
    EXPECT_EQ(r.ctrl.requests_in_use(), 0U);
    EXPECT_EQ(r.ctrl.io_outstanding(), 0U);
}

TYPED_TEST(nvm_async, jittered_commands_on_two_queues_all_complete)
{
    rig_for<TypeParam, async_traits> r;
    auto& ns = r.subsystem.add_namespace(
        test_backend<>{r.clock, capacity, 256, {.delay = 50us, .jitter = 2ms, .seed = 7}});
    r.host.bring_up({.io_queue_pairs = 2});
    std::vector<std::vector<std::byte>> data;
    std::map<std::pair<std::uint16_t, std::uint16_t>, std::size_t> which;
    for (std::size_t i = 0; i < 32; ++i) {
        const auto qid = static_cast<std::uint16_t>(1 + i % 2);
        data.push_back(pattern(1024, static_cast<unsigned>(130 + i)));
        auto sqe = write_command(1, 2 * i, 2);
        r.host.describe_data(sqe, host_buffer(r, data.back()), data.back().size());
        which[{qid, r.host.submit(qid, sqe)}] = i;
    }
    std::vector<completion> done;
    for (int step = 0; step < 1000 && done.size() < 32; ++step) {
        r.host.reap(1, done);
        r.host.reap(2, done);
        r.clock.advance(100us);
    }
    ASSERT_EQ(done.size(), 32U);
    bool reordered = false;
    std::size_t previous = 0;
    for (const auto& c : done) {
        EXPECT_EQ(c.status(), spec::status::success());
        const auto index = which.at({c.cqe.sq_id, c.cqe.cid});
        reordered = reordered || index < previous;
        previous = index;
    }
    EXPECT_TRUE(reordered);
    EXPECT_EQ(ns.backend().outstanding(), 0U);
    for (std::size_t i = 0; i < 32; ++i) {
        EXPECT_EQ(read_blocks(r, 1, 2 * i, 2, 1024).data, data[i]);
    }
}

TEST(nvm_async, deleting_an_sq_while_its_commands_are_in_the_backend)
{
    async_rig r;
    auto& ns = r.subsystem.add_namespace(test_backend<>{r.clock, capacity, 64, {.delay = 1s}});
    auto& backend = ns.backend();
    r.host.bring_up();
    for (std::uint64_t i = 0; i < 3; ++i) {
        auto sqe = lba(spec::nvm_opcode::read, 1, i, 1);
        sqe.dptr.prp1 = r.host.allocate(512);
        r.host.submit(1, sqe);
    }
    r.ctrl.poll();
    ASSERT_EQ(backend.outstanding(), 3U);
    const auto cq = r.host.completion_entry_address(1, 0);
    const auto cq_before = r.snapshot(cq, 16 * 8);
    // The deletion completes once its commands are aborted, which is when the backend returns
    // them (1 s): until then their data may still move, and the host reuses their buffers as
    // soon as it sees the deletion complete.
    const auto asked = r.clock.now();
    ASSERT_EQ(r.host.delete_io_sq(1).status(), spec::status::success());
    EXPECT_GE(r.clock.now() - asked, 1s);
    EXPECT_FALSE(r.ctrl.submission_queue_exists(1));
    EXPECT_EQ(backend.outstanding(), 0U);
    EXPECT_EQ(r.ctrl.io_outstanding(), 0U);
    EXPECT_EQ(r.ctrl.requests_in_use(), 0U);
    const auto posted = r.ctrl.statistics().completions_posted;
    ASSERT_EQ(r.host.delete_io_cq(1).status(), spec::status::success());
    EXPECT_EQ(r.ctrl.statistics().completions_posted, posted + 1U); // the Delete I/O CQ only
    EXPECT_EQ(r.snapshot(cq, 16 * 8), cq_before);                   // none of the aborted reads was posted

    // New queues with the same identifiers work.
    ASSERT_EQ(r.host.create_io_cq(1, 64, 1, true).status(), spec::status::success());
    ASSERT_EQ(r.host.create_io_sq(1, 1, 64).status(), spec::status::success());
    const auto data = pattern(512, 140);
    EXPECT_EQ(write_blocks(r, 1, 0, 1, data).status(), spec::status::success());
    EXPECT_EQ(read_blocks(r, 1, 0, 1, 512).data, data);
}

TEST(nvm_async, controller_reset_while_io_is_in_the_backend)
{
    async_rig r;
    auto& ns = r.subsystem.add_namespace(test_backend<>{r.clock, capacity, 64, {.delay = 1s}});
    auto& backend = ns.backend();
    r.host.bring_up();
    for (std::uint64_t i = 0; i < 4; ++i) {
        auto sqe = i % 2 == 0 ? write_command(1, i, 1) : lba(spec::nvm_opcode::read, 1, i, 1);
        sqe.dptr.prp1 = r.host.allocate(512);
        r.host.submit(1, sqe);
    }
    r.ctrl.poll();
    ASSERT_EQ(backend.outstanding(), 4U);
    const auto posted = r.ctrl.statistics().completions_posted;
    // CC.EN = 0: the queues go at once, but CSTS.RDY reads 0 only once the backend has returned
    // the aborted commands (1 s), so no data moves after the host sees the reset complete.
    r.write_cc(r.host.cc().with(spec::cc_register::en, false));
    EXPECT_FALSE(r.ctrl.submission_queue_exists(1));
    EXPECT_EQ(r.ctrl.requests_in_use(), 4U);
    r.clock.advance(500ms);
    r.ctrl.poll();
    EXPECT_TRUE(r.csts().get(spec::csts_register::rdy));
    r.clock.advance(600ms);
    r.ctrl.poll();
    EXPECT_FALSE(r.csts().get(spec::csts_register::rdy));
    EXPECT_EQ(backend.outstanding(), 0U);
    EXPECT_EQ(r.ctrl.io_outstanding(), 0U);
    EXPECT_EQ(r.ctrl.requests_in_use(), 0U);
    EXPECT_EQ(r.ctrl.statistics().completions_posted, posted);

    r.host.bring_up();
    const auto data = pattern(512, 150);
    EXPECT_EQ(write_blocks(r, 1, 9, 1, data).status(), spec::status::success());
    EXPECT_EQ(read_blocks(r, 1, 9, 1, 512).data, data);
}

TEST(nvm_async, commands_of_a_reset_controller_finish_silently_after_it_is_enabled_again)
{
    async_rig r;
    auto& ns = r.subsystem.add_namespace(test_backend<>{r.clock, capacity, 64, {.delay = 1s}});
    auto& backend = ns.backend();
    r.host.bring_up();
    for (std::uint64_t i = 0; i < 3; ++i) {
        auto sqe = lba(spec::nvm_opcode::read, 1, i, 1);
        sqe.dptr.prp1 = r.host.allocate(512);
        r.host.submit(1, sqe);
    }
    r.ctrl.poll();
    ASSERT_EQ(backend.outstanding(), 3U);
    // A host that sets CC.EN = 1 again without waiting for CSTS.RDY = 0 (a protocol error): the
    // new enable wins, and the old commands still finish silently when the backend returns them.
    const auto errors = r.ctrl.statistics().host_protocol_errors;
    const auto cc = r.host.cc();
    r.write_cc(cc.with(spec::cc_register::en, false));
    ASSERT_TRUE(r.csts().get(spec::csts_register::rdy)); // the reset waits for the backend
    r.write_cc(cc.with(spec::cc_register::en, true));
    EXPECT_GT(r.ctrl.statistics().host_protocol_errors, errors);
    r.poll(1);
    ASSERT_TRUE(r.csts().get(spec::csts_register::rdy)); // ready again, admin queue only
    ASSERT_EQ(backend.outstanding(), 3U);
    EXPECT_EQ(r.ctrl.requests_in_use(), 3U);
    const auto posted = r.ctrl.statistics().completions_posted;
    const auto cq_before = r.snapshot(r.host.completion_entry_address(1, 0), 16 * 8);
    r.clock.advance(2s);
    r.ctrl.poll();
    EXPECT_EQ(backend.outstanding(), 0U);
    EXPECT_EQ(r.ctrl.requests_in_use(), 0U);
    EXPECT_EQ(r.ctrl.statistics().completions_posted, posted);
    EXPECT_EQ(r.snapshot(r.host.completion_entry_address(1, 0), 16 * 8), cq_before);
    r.host.bring_up();
    const auto data = pattern(512, 160);
    EXPECT_EQ(write_blocks(r, 1, 0, 1, data).status(), spec::status::success());
    r.clock.advance(2s);
    EXPECT_EQ(read_blocks(r, 1, 0, 1, 512).data, data);
}

TYPED_TEST(nvm_async, backend_failures_map_to_nvme_statuses)
{
    rig_for<TypeParam, async_traits> r;
    auto& ns = r.subsystem.add_namespace(test_backend<>{r.clock, capacity, 64, {.delay = 100us}});
    auto& backend = ns.backend();
    r.host.bring_up();
    const auto data = pattern(8 * 512, 170);
    ASSERT_EQ(write_blocks(r, 1, 0, 8, data).status(), spec::status::success());
    ASSERT_EQ(media_errors(r), 0U);

    backend.add_media_error(5 * 512 + 100, 1); // inside block 5
    const auto failed = read_blocks(r, 1, 5, 1, 512);
    EXPECT_EQ(failed.done.status(), dnr(spec::media_status::unrecovered_read_error));
    auto entry = newest_error(r);
    EXPECT_EQ(entry.status(), dnr(spec::media_status::unrecovered_read_error));
    EXPECT_EQ(entry.cid, failed.done.cqe.cid);
    EXPECT_EQ(entry.lba, 5U);
    EXPECT_EQ(entry.nsid, 1U);
    EXPECT_EQ(media_errors(r), 1U);
    EXPECT_EQ(read_blocks(r, 1, 0, 8, 4096).done.status(), dnr(spec::media_status::unrecovered_read_error));
    EXPECT_EQ(compare_blocks(r, 1, 0, 8, data).status(), dnr(spec::media_status::unrecovered_read_error));
    EXPECT_EQ(media_errors(r), 3U);
    EXPECT_EQ(read_blocks(r, 1, 6, 2, 1024).data, part(data, 3072, 1024));
    backend.clear_media_errors();

    backend.fail_nth(1, block_status::write_fault);
    const auto write_failed = write_blocks(r, 1, 3, 1, pattern(512, 171));
    EXPECT_EQ(write_failed.status(), dnr(spec::media_status::write_fault));
    entry = newest_error(r);
    EXPECT_EQ(entry.status(), dnr(spec::media_status::write_fault));
    EXPECT_EQ(entry.lba, 3U);
    EXPECT_EQ(media_errors(r), 4U);
    EXPECT_EQ(read_blocks(r, 1, 0, 8, 4096).data, data); // the failed write stored nothing

    backend.fail_nth(1, block_status::internal_error);
    EXPECT_EQ(read_blocks(r, 1, 0, 1, 512).done.status(), spec::status{spec::generic_status::internal_error});
    backend.fail_nth(1, block_status::out_of_range);
    EXPECT_EQ(read_blocks(r, 1, 0, 1, 512).done.status(), dnr(spec::generic_status::lba_out_of_range));
    EXPECT_EQ(media_errors(r), 4U);
    EXPECT_EQ(r.ctrl.requests_in_use(), 0U);
}

} // namespace command_sets_nvm_test
} // namespace
