#include <nvmekit/controller.hpp>

// Faults injected under a running controller: host memory accesses that fail (recording_dma),
// backends that fail, complete late or out of order (test_backend), interrupts that are lost or
// late, and clocks that jump. Each fault must give exactly the NVMe status the spec names, an
// Error Information log entry (Get Log Page 01h) that describes the failed command, and a
// controller that goes on serving the queue (or, where the spec calls the controller fatally
// failed, one that a Controller Reset brings back).

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <tuple>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <nvmekit/backends/ram_backend.hpp>
#include <nvmekit/testing/test_backend.hpp>

#include "controller_fixture.hpp"

namespace {
namespace fault_injection_test {

namespace nt = nvmekit::testing;
namespace spec = nvmekit::spec;
using namespace nvmekit_test;
using namespace std::chrono_literals;
using nt::access_kind;
using nvmekit::block_operation;
using nvmekit::block_status;

// ---- rigs ---------------------------------------------------------------------------------------

/// Host memory reached through a recording_dma (so accesses can be failed) and namespaces on
/// test_backend (so backend requests can be failed, delayed and reordered).
struct faulty_traits : recording_dma_traits {
    using backend = nt::test_backend<>;
};
using faulty_base = basic_rig<faulty_traits>;
using namespace_type = faulty_base::controller_type::namespace_type;

constexpr std::uint64_t capacity = std::uint64_t{1} << 20; // 2048 blocks of 512 bytes
constexpr std::uint64_t page = 4096;

/// A faulty rig with namespace 1 on a test_backend, brought up with `queues` I/O queue pairs.
struct fault_rig : faulty_base {
    explicit fault_rig(nvmekit::namespace_options options = {}, nt::test_backend_options backend_options = {},
                       std::uint16_t queues = 1)
        : ns{&subsystem.add_namespace(nt::test_backend<>{clock, capacity, 64, backend_options}, options)}
    {
        host.bring_up({.io_queue_pairs = queues});
    }

    [[nodiscard]] nt::test_backend<>& backend() { return ns->backend(); }
    /// The Error Count of the newest entry the controller has logged.
    [[nodiscard]] std::uint64_t error_count() const { return ctrl.errors().last_error_count(); }

    namespace_type* ns;
};

// ---- data and host buffers ------------------------------------------------------------------------

[[nodiscard]] std::vector<std::byte> pattern(std::size_t bytes, unsigned seed)
{
    std::vector<std::byte> data(bytes);
    for (std::size_t i = 0; i < bytes; ++i) {
        data[i] = static_cast<std::byte>((i * 29U + seed * 101U + (i >> 8U) + 7U) & 0xffU);
    }
    return data;
}

[[nodiscard]] std::vector<std::byte> filled(std::size_t bytes, std::byte value)
{
    return std::vector<std::byte>(bytes, value);
}

[[nodiscard]] std::vector<std::byte> part(const std::vector<std::byte>& bytes, std::size_t offset,
                                          std::size_t size)
{
    return {bytes.begin() + static_cast<std::ptrdiff_t>(offset),
            bytes.begin() + static_cast<std::ptrdiff_t>(offset + size)};
}

constexpr std::byte marker{0xa5}; ///< what a data buffer holds before the controller writes it
constexpr std::byte guard{0x5a};  ///< what host memory around a data buffer holds

/// A data buffer of `pages` 4 KiB pages that are not contiguous in host memory (each is followed
/// by a guard page), so each page is a range of its own and a PRP list names each one.
struct scattered_buffer {
    std::uint64_t base = 0;             ///< first byte of the region (pages and guard pages)
    std::size_t region_bytes = 0;       ///< 2 * pages pages
    std::vector<std::uint64_t> pages{}; ///< the data pages, in transfer order
    spec::data_pointer dptr{};          ///< PRP1 and PRP2 (a PRP list past two pages)
    std::uint64_t prp_list = 0;         ///< the PRP list page, 0 for two pages or fewer
};

/// A scattered buffer holding `data` (or `marker` bytes when `data` is empty) with guard bytes
/// between its pages.
template <typename Rig>
[[nodiscard]] scattered_buffer scatter(Rig& r, std::size_t pages, std::span<const std::byte> data = {})
{
    scattered_buffer buffer{};
    buffer.region_bytes = 2 * pages * page;
    buffer.base = r.host.allocate(buffer.region_bytes);
    const auto region = r.memory.bytes(buffer.base, buffer.region_bytes);
    std::fill(region.begin(), region.end(), guard);
    for (std::size_t i = 0; i < pages; ++i) {
        const std::uint64_t address = buffer.base + 2 * i * page;
        buffer.pages.push_back(address);
        const auto bytes = r.memory.bytes(address, page);
        if (data.empty()) {
            std::fill(bytes.begin(), bytes.end(), marker);
        } else {
            std::copy_n(data.begin() + static_cast<std::ptrdiff_t>(i * page), page, bytes.begin());
        }
    }
    buffer.dptr.prp1 = buffer.pages[0];
    if (pages == 2) {
        buffer.dptr.prp2 = buffer.pages[1];
    } else if (pages > 2) {
        buffer.prp_list = r.host.write_prp_list(std::span{buffer.pages}.subspan(1));
        buffer.dptr.prp2 = buffer.prp_list;
    }
    return buffer;
}

/// The data pages of `buffer`, concatenated.
template <typename Rig>
[[nodiscard]] std::vector<std::byte> gather(Rig& r, const scattered_buffer& buffer)
{
    std::vector<std::byte> out;
    for (const std::uint64_t address : buffer.pages) {
        const auto bytes = r.snapshot(address, page);
        out.insert(out.end(), bytes.begin(), bytes.end());
    }
    return out;
}

/// Whether every guard page of `buffer` still holds only guard bytes.
template <typename Rig>
[[nodiscard]] bool guards_intact(Rig& r, const scattered_buffer& buffer)
{
    for (const std::uint64_t address : buffer.pages) {
        if (r.snapshot(address + page, page) != filled(page, guard)) {
            return false;
        }
    }
    return true;
}

/// Host memory holding `data`, in a buffer of at least `size` bytes.
template <typename Rig>
[[nodiscard]] std::uint64_t host_buffer(Rig& r, std::span<const std::byte> data, std::size_t size = 0)
{
    const std::uint64_t address = r.host.allocate(std::max<std::size_t>({data.size(), size, 4}));
    std::copy(data.begin(), data.end(), r.memory.bytes(address, data.size()).begin());
    return address;
}

[[nodiscard]] spec::submission_queue_entry write_command(std::uint64_t slba, std::uint32_t blocks)
{
    return host_type::lba_command<spec::write_view>(spec::nvm_opcode::write, 1, slba, blocks);
}

[[nodiscard]] spec::submission_queue_entry read_command(std::uint64_t slba, std::uint32_t blocks)
{
    return host_type::lba_command(spec::nvm_opcode::read, 1, slba, blocks);
}

/// Write of `data` at `slba` of namespace 1 on I/O queue `qid`, with `metadata` through MPTR
/// when it is not empty.
template <typename Rig>
nt::completion write_blocks(Rig& r, std::uint64_t slba, std::span<const std::byte> data,
                            std::uint16_t qid = 1, std::span<const std::byte> metadata = {})
{
    auto sqe = write_command(slba, static_cast<std::uint32_t>(data.size() / 512));
    const auto buffer = host_buffer(r, data);
    sqe.dptr = r.host.build_prps(buffer, data.size());
    if (!metadata.empty()) {
        sqe.mptr = host_buffer(r, metadata);
    }
    return r.host.io(qid, sqe);
}

/// Read of `bytes` at `slba` of namespace 1 on I/O queue `qid`; `out` receives the buffer, and
/// `metadata_out` the separate metadata when `metadata_bytes` is not 0.
template <typename Rig>
nt::completion read_blocks(Rig& r, std::uint64_t slba, std::size_t bytes, std::vector<std::byte>& out,
                           std::uint16_t qid = 1, std::size_t metadata_bytes = 0,
                           std::vector<std::byte>* metadata_out = nullptr)
{
    auto sqe = read_command(slba, static_cast<std::uint32_t>(bytes / 512));
    const auto buffer = host_buffer(r, filled(bytes, marker));
    sqe.dptr = r.host.build_prps(buffer, bytes);
    if (metadata_bytes != 0) {
        sqe.mptr = host_buffer(r, filled(metadata_bytes, marker));
    }
    const auto result = r.host.io(qid, sqe);
    out = r.snapshot(buffer, bytes);
    if (metadata_out != nullptr) {
        *metadata_out = r.snapshot(sqe.mptr, metadata_bytes);
    }
    return result;
}

/// The bytes namespace 1 stores at `slba`, read past the controller.
[[nodiscard]] std::vector<std::byte> stored(fault_rig& r, std::uint64_t slba, std::size_t bytes)
{
    std::vector<std::byte> out(bytes);
    r.backend().peek(slba * 512, out);
    return out;
}

// ---- the Error Information log -------------------------------------------------------------------

/// Entry `index` (0: the newest) of the Error Information log, read with Get Log Page 01h.
template <typename Rig>
[[nodiscard]] spec::error_information_entry logged_error(Rig& r, std::size_t index = 0)
{
    std::vector<std::byte> log;
    const auto read = r.host.get_log_page(spec::log_page_id::error_information, 64 * (index + 1), log);
    EXPECT_EQ(read.status(), spec::status::success());
    spec::error_information_entry entry{};
    std::memcpy(&entry, log.data() + 64 * index, sizeof entry);
    return entry;
}

/// Checks that the newest Error Information entry (Base 2.0 5.16.1.2) describes `failed`: the
/// next Error Count after `count_before`; the failed command's SQID and CID; the Status Field
/// exactly as the completion carried it, Phase Tag included (bytes 13:12 mirror CQE DW3 31:16);
/// Parameter Error Location FFFFh, since a fault lies in no field of the command; the command's
/// namespace; and `lba`, the first LBA in error (0 where no LBA is in error; not checked where
/// the spec leaves it to the controller).
template <typename Rig>
void expect_logged(Rig& r, std::uint64_t count_before, const nt::completion& failed, std::uint32_t nsid,
                   std::optional<std::uint64_t> lba = 0)
{
    const auto entry = logged_error(r);
    EXPECT_EQ(entry.error_count, count_before + 1);
    EXPECT_EQ(entry.sqid, failed.cqe.sq_id);
    EXPECT_EQ(entry.cid, failed.cqe.cid);
    EXPECT_EQ(entry.status(), failed.status());
    EXPECT_EQ(entry.phase(), failed.cqe.phase());
    EXPECT_EQ(entry.status_field, failed.cqe.status_phase);
    EXPECT_EQ(entry.error_location.raw, spec::error_field_not_applicable);
    EXPECT_EQ(entry.nsid, nsid);
    if (lba) {
        EXPECT_EQ(entry.lba, *lba);
    }
    // Reading the log added nothing to it.
    EXPECT_EQ(r.ctrl.errors().last_error_count(), count_before + 1);
}

/// After a fault that is not fatal: a Write and a Read on the same I/O queue succeed and the data
/// round-trips, and no command is left holding a request.
void expect_queue_serves(fault_rig& r, std::uint16_t qid, std::uint64_t slba, unsigned seed)
{
    const auto data = pattern(2 * page, seed);
    const std::uint32_t blocks = 2 * page / 512;
    const auto metadata = pattern(r.ns->metadata_transfer_bytes(blocks), seed + 1);
    const auto count = r.error_count();
    EXPECT_EQ(write_blocks(r, slba, data, qid, metadata).status(), spec::status::success());
    std::vector<std::byte> back;
    std::vector<std::byte> metadata_back;
    EXPECT_EQ(read_blocks(r, slba, data.size(), back, qid, metadata.size(), &metadata_back).status(),
              spec::status::success());
    EXPECT_EQ(back, data);
    EXPECT_EQ(metadata_back, metadata);
    EXPECT_EQ(r.error_count(), count);
    EXPECT_EQ(r.ctrl.requests_in_use(), 0U);
    EXPECT_EQ(r.ctrl.io_outstanding(), 0U);
    EXPECT_FALSE(r.csts().get(spec::csts_register::cfs));
}

const spec::status data_transfer_error = dnr(spec::generic_status::data_transfer_error);

// ---- host data reads that fail (Data Transfer Error, Base 2.0 Figure 101, 04h) ------------------

TEST(fault_dma_read, write_data_in_prp1_prp2_or_a_prp_list_entry)
{
    fault_rig r;
    const auto old_data = pattern(4 * page, 1);
    r.backend().preload(0, old_data);
    const auto new_data = pattern(4 * page, 2);
    // Four scattered pages: PRP1, then a PRP list of three. The page whose read fails: PRP1's, the
    // first list entry's and the last list entry's.
    const auto four = scatter(r, 4, new_data);
    for (const std::size_t failing : {0U, 1U, 3U}) {
        SCOPED_TRACE(failing);
        r.dma.fail_range(four.pages[failing], page, access_kind::map | access_kind::read);
        const auto count = r.error_count();
        const auto failed = r.host.io(1, [&] {
            auto sqe = write_command(0, 32);
            sqe.dptr = four.dptr;
            return sqe;
        }());
        r.dma.clear_faults();
        EXPECT_EQ(failed.status(), data_transfer_error);
        expect_logged(r, count, failed, 1);
        // The backend never saw the write: the media keeps the old data.
        EXPECT_TRUE(r.backend().records().empty());
        EXPECT_EQ(stored(r, 0, old_data.size()), old_data);
    }
    // Two pages: PRP2 names the second page itself.
    const auto two = scatter(r, 2, part(new_data, 0, 2 * page));
    r.dma.fail_range(two.pages[1], page, access_kind::map | access_kind::read);
    const auto count = r.error_count();
    auto sqe = write_command(0, 16);
    sqe.dptr = two.dptr;
    const auto failed = r.host.io(1, sqe);
    r.dma.clear_faults();
    EXPECT_EQ(failed.status(), data_transfer_error);
    expect_logged(r, count, failed, 1);
    EXPECT_TRUE(r.backend().records().empty());
    EXPECT_EQ(stored(r, 0, old_data.size()), old_data);

    // The same Write without the fault stores the new data.
    sqe = write_command(0, 32);
    sqe.dptr = four.dptr;
    EXPECT_EQ(r.host.io(1, sqe).status(), spec::status::success());
    EXPECT_EQ(stored(r, 0, new_data.size()), new_data);
    expect_queue_serves(r, 1, 100, 3);
}

TEST(fault_dma_read, the_prp_list_page_itself)
{
    fault_rig r;
    const auto old_data = pattern(4 * page, 4);
    r.backend().preload(0, old_data);
    const auto source = scatter(r, 4, pattern(4 * page, 5));
    const auto destination = scatter(r, 4);
    for (const auto opcode : {spec::nvm_opcode::write, spec::nvm_opcode::read}) {
        SCOPED_TRACE(static_cast<int>(opcode));
        const auto& buffer = opcode == spec::nvm_opcode::write ? source : destination;
        r.dma.fail_range(buffer.prp_list, 8, access_kind::read); // the list's first entry
        const auto count = r.error_count();
        auto sqe = host_type::lba_command(opcode, 1, 0, 32);
        sqe.dptr = buffer.dptr;
        const auto failed = r.host.io(1, sqe);
        r.dma.clear_faults();
        EXPECT_EQ(failed.status(), data_transfer_error);
        expect_logged(r, count, failed, 1);
    }
    // Neither command reached the backend; the Read left its buffer and the memory around alone.
    EXPECT_TRUE(r.backend().records().empty());
    EXPECT_EQ(stored(r, 0, old_data.size()), old_data);
    EXPECT_EQ(gather(r, destination), filled(4 * page, marker));
    EXPECT_TRUE(guards_intact(r, destination));
    expect_queue_serves(r, 1, 100, 6);
}

TEST(fault_dma_read, sgl_segments_first_and_chained)
{
    fault_rig r;
    const auto old_data = pattern(3 * 1024, 7);
    r.backend().preload(0, old_data);
    const auto data = pattern(3 * 1024, 8);
    const auto buffer = host_buffer(r, data, 4 * page);
    // Three data blocks 1 KiB apart in host memory, so the SGL needs a segment.
    using piece = faulty_base::host_type::sgl_piece;
    const std::array pieces{piece{buffer, 1024}, piece{buffer + page, 1024}, piece{buffer + 2 * page, 1024}};
    std::copy_n(data.begin() + 1024, 1024, r.memory.bytes(buffer + page, 1024).begin());
    std::copy_n(data.begin() + 2048, 1024, r.memory.bytes(buffer + 2 * page, 1024).begin());
    // One segment of three descriptors, then the same pieces in two segments chained by a Segment
    // descriptor (two descriptors per segment).
    for (const std::size_t per_segment : {16U, 2U}) {
        SCOPED_TRACE(per_segment);
        auto sqe = write_command(0, 6);
        sqe.dptr = r.host.build_sgl(pieces, per_segment);
        host_type::use_sgl(sqe);
        const std::uint64_t first_segment = sqe.dptr.prp1; // SGL1 bytes 07:00: the segment's address
        const std::uint64_t failing =
            per_segment == 2 ? r.memory.load<std::uint64_t>(first_segment + 16) : first_segment;
        r.dma.fail_range(failing, 16, access_kind::read);
        const auto count = r.error_count();
        const auto failed = r.host.io(1, sqe);
        r.dma.clear_faults();
        EXPECT_EQ(failed.status(), data_transfer_error);
        expect_logged(r, count, failed, 1);
        EXPECT_TRUE(r.backend().records().empty());
        // Without the fault the same SGL works.
        EXPECT_EQ(r.host.io(1, sqe).status(), spec::status::success());
        EXPECT_EQ(stored(r, 0, data.size()), data);
        r.backend().preload(0, old_data);
        r.backend().clear_records();
    }
    r.host.free_descriptor_memory();
    expect_queue_serves(r, 1, 100, 9);
}

TEST(fault_dma_read, separate_metadata_buffer_of_a_write)
{
    fault_rig r{{.lba_format = 1}}; // 512 + 8 bytes, metadata in a separate buffer
    ASSERT_EQ(r.ns->metadata_bytes(), 8U);
    const auto data = pattern(4 * 512, 10);
    const auto metadata = pattern(4 * 8, 11);
    auto sqe = write_command(0, 4);
    const auto data_buffer = host_buffer(r, data);
    const auto metadata_buffer = host_buffer(r, metadata);
    sqe.dptr.prp1 = data_buffer;
    sqe.mptr = metadata_buffer;
    r.dma.fail_range(metadata_buffer, metadata.size(), access_kind::map | access_kind::read);
    const auto count = r.error_count();
    const auto failed = r.host.io(1, sqe);
    r.dma.clear_faults();
    EXPECT_EQ(failed.status(), data_transfer_error);
    expect_logged(r, count, failed, 1);
    // Neither the data nor the metadata reached the backend.
    EXPECT_TRUE(r.backend().records().empty());
    EXPECT_EQ(r.host.io(1, sqe).status(), spec::status::success());
    EXPECT_EQ(r.backend().records().size(), 2U); // data and metadata
    expect_queue_serves(r, 1, 100, 12);
}

TEST(fault_dma_read, set_features_data_buffers)
{
    fault_rig r;
    // Timestamp (0Eh) and Host Behavior Support (16h) take their value from a data buffer.
    spec::timestamp_data stamp{};
    stamp.set_milliseconds(1'700'000'000'000);
    spec::host_behavior_support behavior{};
    behavior.acre = 1;
    const auto stamp_buffer = r.host.allocate(page);
    r.memory.store(stamp_buffer, stamp);
    const auto behavior_buffer = r.host.allocate(page);
    r.memory.store(behavior_buffer, behavior);
    for (const auto& [feature, buffer] :
         {std::pair{spec::feature_id::timestamp, stamp_buffer},
          std::pair{spec::feature_id::host_behavior_support, behavior_buffer}}) {
        SCOPED_TRACE(static_cast<int>(feature));
        auto sqe = host_type::set_features_command(feature, 0);
        sqe.dptr.prp1 = buffer;
        r.dma.fail_range(buffer, page, access_kind::read);
        const auto count = r.error_count();
        const auto failed = r.host.admin(sqe);
        r.dma.clear_faults();
        EXPECT_EQ(failed.status(), data_transfer_error);
        expect_logged(r, count, failed, 0);
    }
    // Neither value was taken: the timestamp still counts from the reset, ACRE is still 0.
    std::vector<std::byte> out;
    ASSERT_TRUE(r.host
                    .admin_read(host_type::get_features_command(spec::feature_id::timestamp,
                                                                spec::feature_select::current),
                                sizeof(spec::timestamp_data), out)
                    .ok());
    spec::timestamp_data current{};
    std::memcpy(&current, out.data(), sizeof current);
    EXPECT_EQ(current.attributes.get(spec::timestamp_attributes::origin), spec::timestamp_origin::reset);
    EXPECT_LT(current.milliseconds(), 1'000'000U);
    ASSERT_TRUE(r.host
                    .admin_read(host_type::get_features_command(spec::feature_id::host_behavior_support,
                                                                spec::feature_select::current),
                                sizeof(spec::host_behavior_support), out)
                    .ok());
    EXPECT_EQ(out, filled(sizeof(spec::host_behavior_support), std::byte{0}));
    expect_queue_serves(r, 1, 0, 13);
}

TEST(fault_dma_read, firmware_image_download)
{
    fault_rig r;
    std::vector<std::byte> image(page);
    for (std::size_t i = 0; i < image.size(); ++i) {
        image[i] = static_cast<std::byte>(i < 8 ? "FAULT001"[i] : 0x40 + i % 50);
    }
    const auto buffer = host_buffer(r, image);
    auto download = host_type::command(spec::admin_opcode::firmware_image_download);
    spec::firmware_image_download_view{.dword_count = page / 4, .offset_bytes = 0}.encode(download);
    download.dptr.prp1 = buffer;
    r.dma.fail_range(buffer + 2048, 4, access_kind::read);
    const auto count = r.error_count();
    const auto failed = r.host.admin(download);
    r.dma.clear_faults();
    EXPECT_EQ(failed.status(), data_transfer_error);
    expect_logged(r, count, failed, 0);
    // Nothing was downloaded, so there is no image to commit.
    auto commit = host_type::command(spec::admin_opcode::firmware_commit);
    spec::firmware_commit_view{.slot = 2, .action = spec::firmware_commit_action::replace}.encode(commit);
    EXPECT_EQ(r.host.admin(commit).status(), dnr(spec::command_specific_status::invalid_firmware_image));
    // The download without the fault, then the commit, succeed.
    EXPECT_EQ(r.host.admin(download).status(), spec::status::success());
    EXPECT_EQ(r.host.admin(commit).status(), spec::status::success());
    expect_queue_serves(r, 1, 0, 14);
}

TEST(fault_dma_read, dataset_management_and_copy_ranges)
{
    fault_rig r;
    const auto data = pattern(8 * 512, 15);
    r.backend().preload(0, data);

    spec::dataset_management_range dsm{};
    dsm.starting_lba = 0;
    dsm.block_count = 8;
    const auto dsm_buffer = host_buffer(r, std::as_bytes(std::span{&dsm, 1}));
    auto deallocate = host_type::command(spec::nvm_opcode::dataset_management, 1);
    spec::dataset_management_view{.range_count = 1, .deallocate = true}.encode(deallocate);
    deallocate.dptr.prp1 = dsm_buffer;

    spec::copy_source_range source{};
    source.starting_lba = 0;
    source.set_block_count(8);
    const auto copy_buffer = host_buffer(r, std::as_bytes(std::span{&source, 1}));
    auto copy = host_type::command(spec::nvm_opcode::copy, 1);
    spec::copy_view{.destination_lba = 100, .range_count = 1}.encode(copy);
    copy.dptr.prp1 = copy_buffer;

    for (const auto& [sqe, buffer] : {std::pair{deallocate, dsm_buffer}, std::pair{copy, copy_buffer}}) {
        SCOPED_TRACE(static_cast<int>(sqe.opcode()));
        r.dma.fail_range(buffer, 16, access_kind::read);
        const auto count = r.error_count();
        const auto failed = r.host.io(1, sqe);
        r.dma.clear_faults();
        EXPECT_EQ(failed.status(), data_transfer_error);
        expect_logged(r, count, failed, 1);
    }
    // Nothing was deallocated or copied.
    EXPECT_TRUE(r.backend().records().empty());
    EXPECT_EQ(stored(r, 0, data.size()), data);
    EXPECT_EQ(stored(r, 100, data.size()), filled(data.size(), std::byte{0}));
    EXPECT_EQ(r.host.io(1, copy).status(), spec::status::success());
    EXPECT_EQ(stored(r, 100, data.size()), data);
    EXPECT_EQ(r.host.io(1, deallocate).status(), spec::status::success());
    EXPECT_EQ(stored(r, 0, data.size()), filled(data.size(), std::byte{0}));
    expect_queue_serves(r, 1, 200, 16);
}

// ---- host data writes that fail ------------------------------------------------------------------------

TEST(fault_dma_write, read_data_to_the_host)
{
    fault_rig r;
    const auto data = pattern(4 * page, 17);
    r.backend().preload(0, data);
    const auto buffer = scatter(r, 4);
    // The third page cannot be written (nor mapped, so the data goes through a staging buffer).
    r.dma.fail_range(buffer.pages[2], page, access_kind::map | access_kind::write);
    const auto count = r.error_count();
    auto sqe = read_command(0, 32);
    sqe.dptr = buffer.dptr;
    const auto failed = r.host.io(1, sqe);
    r.dma.clear_faults();
    EXPECT_EQ(failed.status(), data_transfer_error);
    expect_logged(r, count, failed, 1);
    // The media was read: the failure is in the transfer, not in the backend.
    EXPECT_EQ(r.backend().records(),
              (std::vector<nt::block_request_record>{{block_operation::read, 0, 4 * page, false}}));
    // The spec leaves a failed Read's buffer undefined, but only its buffer: the failed page holds
    // what it held, every other page holds either that or its own data, and the memory between
    // the pages is untouched.
    const auto after = gather(r, buffer);
    EXPECT_EQ(part(after, 2 * page, page), filled(page, marker));
    for (const std::size_t i : {0U, 1U, 3U}) {
        const auto piece = part(after, i * page, page);
        EXPECT_TRUE(piece == filled(page, marker) || piece == part(data, i * page, page)) << "page " << i;
    }
    EXPECT_TRUE(guards_intact(r, buffer));
    // Retried without the fault, the Read delivers every page.
    EXPECT_EQ(r.host.io(1, sqe).status(), spec::status::success());
    EXPECT_EQ(gather(r, buffer), data);
    EXPECT_TRUE(guards_intact(r, buffer));
    expect_queue_serves(r, 1, 100, 18);
}

TEST(fault_dma_write, separate_metadata_of_a_read)
{
    fault_rig r{{.lba_format = 1}}; // 512 + 8 bytes, metadata in a separate buffer
    const auto data = pattern(4 * 512, 19);
    const auto metadata = pattern(4 * 8, 20);
    auto write = write_command(0, 4);
    write.dptr.prp1 = host_buffer(r, data);
    write.mptr = host_buffer(r, metadata);
    ASSERT_EQ(r.host.io(1, write).status(), spec::status::success());

    auto read = read_command(0, 4);
    read.dptr.prp1 = host_buffer(r, filled(data.size(), marker));
    // Metadata placed inside a page, with guard bytes on either side.
    const auto metadata_page = host_buffer(r, filled(page, guard));
    read.mptr = metadata_page + 64;
    r.memory.store(read.mptr, std::array<std::byte, 32>{});
    r.dma.fail_range(read.mptr, metadata.size(), access_kind::map | access_kind::write);
    const auto count = r.error_count();
    const auto failed = r.host.io(1, read);
    r.dma.clear_faults();
    EXPECT_EQ(failed.status(), data_transfer_error);
    expect_logged(r, count, failed, 1);
    const auto around = r.snapshot(metadata_page, page);
    EXPECT_EQ(part(around, 0, 64), filled(64, guard));
    EXPECT_EQ(part(around, 64, 32), filled(32, std::byte{0})); // the failed piece kept its bytes
    EXPECT_EQ(part(around, 96, page - 96), filled(page - 96, guard));
    EXPECT_EQ(r.host.io(1, read).status(), spec::status::success());
    EXPECT_EQ(r.snapshot(read.mptr, metadata.size()), metadata);
    EXPECT_EQ(r.snapshot(read.dptr.prp1, data.size()), data);
    expect_queue_serves(r, 1, 100, 21);
}

TEST(fault_dma_write, identify_get_log_page_and_get_features_data)
{
    fault_rig r;
    struct case_t {
        const char* what;
        spec::submission_queue_entry sqe;
        std::size_t bytes;
    };
    const std::array cases{
        case_t{"Identify Controller", host_type::identify_command(spec::cns::identify_controller, 0, 0),
               4096},
        case_t{"Identify Namespace", host_type::identify_command(spec::cns::identify_namespace, 1, 0), 4096},
        case_t{"SMART / Health", host_type::get_log_page_command(spec::log_page_id::smart_health, 512), 512},
        case_t{"Error Information",
               host_type::get_log_page_command(spec::log_page_id::error_information, 256), 256},
        case_t{"Timestamp",
               host_type::get_features_command(spec::feature_id::timestamp, spec::feature_select::current),
               8},
    };
    for (const auto& [what, command, bytes] : cases) {
        SCOPED_TRACE(what);
        // The buffer crosses a page boundary: PRP1 holds its first half, PRP2 its second; the
        // second half cannot be written.
        const std::uint64_t region = host_buffer(r, filled(3 * page, guard));
        const std::uint64_t buffer = region + 2 * page - bytes / 2;
        std::fill_n(r.memory.bytes(buffer, bytes).begin(), bytes, marker);
        auto sqe = command;
        sqe.dptr = r.host.build_prps(buffer, bytes);
        r.dma.fail_range(region + 2 * page, bytes - bytes / 2, access_kind::write);
        const auto count = r.error_count();
        const auto failed = r.host.admin(sqe);
        r.dma.clear_faults();
        EXPECT_EQ(failed.status(), data_transfer_error);
        expect_logged(r, count, failed, sqe.nsid);
        const auto memory = r.snapshot(region, 3 * page);
        EXPECT_EQ(part(memory, 0, 2 * page - bytes / 2), filled(2 * page - bytes / 2, guard));
        EXPECT_EQ(part(memory, 2 * page, bytes - bytes / 2), filled(bytes - bytes / 2, marker));
        EXPECT_EQ(part(memory, 2 * page + bytes - bytes / 2, page - (bytes - bytes / 2)),
                  filled(page - (bytes - bytes / 2), guard));
        // Without the fault the command delivers its data.
        EXPECT_EQ(r.host.admin(sqe).status(), spec::status::success());
        EXPECT_NE(r.snapshot(region + 2 * page, bytes - bytes / 2), filled(bytes - bytes / 2, marker));
    }
    r.host.free_descriptor_memory();
    expect_queue_serves(r, 1, 0, 22);
}

// ---- map() refused: zero-copy falls back to read and write ---------------------------------------

TEST(fault_map, every_map_refused_moves_the_data_through_staging)
{
    fault_rig r{{.lba_format = 1}}; // data and separate metadata
    r.dma.fail_every(1, access_kind::map);
    const auto data = pattern(4 * page, 23);
    const auto metadata = pattern(32 * 8, 24);
    const auto source = scatter(r, 4, data);
    auto write = write_command(10, 32);
    write.dptr = source.dptr;
    write.mptr = host_buffer(r, metadata);
    const auto count = r.error_count();
    r.dma.clear();
    EXPECT_EQ(r.host.io(1, write).status(), spec::status::success());
    const auto destination = scatter(r, 4);
    auto read = read_command(10, 32);
    read.dptr = destination.dptr;
    read.mptr = host_buffer(r, filled(metadata.size(), marker));
    EXPECT_EQ(r.host.io(1, read).status(), spec::status::success());
    EXPECT_EQ(gather(r, destination), data);
    EXPECT_EQ(r.snapshot(read.mptr, metadata.size()), metadata);
    EXPECT_TRUE(guards_intact(r, destination));
    // Maps were tried and all refused; the data moved by reads and writes; nothing was logged.
    EXPECT_GT(r.dma.maps(), 0U);
    EXPECT_EQ(r.dma.failures(), r.dma.maps());
    EXPECT_EQ(r.error_count(), count);
    EXPECT_EQ(r.ctrl.statistics().dma_errors, 0U);
    r.dma.clear_faults();
    expect_queue_serves(r, 1, 100, 25);
}

TEST(fault_map, a_map_refused_after_others_succeeded)
{
    fault_rig r;
    const auto data = pattern(4 * page, 26);
    const auto source = scatter(r, 4, data);
    const auto destination = scatter(r, 4);
    const auto count = r.error_count();
    // The third page's map fails after two succeeded, for the Write and then for the Read.
    for (const bool writing : {true, false}) {
        r.dma.clear();
        r.dma.fail_nth(3, access_kind::map);
        auto sqe = writing ? write_command(0, 32) : read_command(0, 32);
        sqe.dptr = (writing ? source : destination).dptr;
        EXPECT_EQ(r.host.io(1, sqe).status(), spec::status::success()) << writing;
        EXPECT_EQ(r.dma.failures(), 1U) << writing;
    }
    EXPECT_EQ(stored(r, 0, data.size()), data);
    EXPECT_EQ(gather(r, destination), data);
    EXPECT_TRUE(guards_intact(r, destination));
    EXPECT_EQ(r.error_count(), count);
    expect_queue_serves(r, 1, 100, 27);
}

// ---- backend faults ----------------------------------------------------------------------------------

/// Each block status a backend can give, once for a Read and once for a Write, on a rig whose
/// backend has `options`.
void expect_every_block_status_gives_its_status_and_a_full_log_entry(nt::test_backend_options options)
{
    fault_rig r{{}, options};
    const auto data = pattern(8 * 512, 28);
    r.backend().preload(0, data);
    // NVM Command Set 1.0 Figure 18 (LBA Out of Range), Base 2.0 Figure 101 (Internal Error) and
    // Figure 103 (Write Fault, Unrecovered Read Error). A media error names the command's LBA.
    struct case_t {
        block_status injected;
        bool write;
        spec::status expected;
        std::optional<std::uint64_t> lba; ///< none: "if applicable" leaves it to the controller
    };
    const std::array cases{
        case_t{block_status::unrecovered_read_error, false, dnr(spec::media_status::unrecovered_read_error),
               3},
        case_t{block_status::write_fault, true, dnr(spec::media_status::write_fault), 3},
        case_t{block_status::internal_error, false, spec::status{spec::generic_status::internal_error}, 0},
        case_t{block_status::internal_error, true, spec::status{spec::generic_status::internal_error}, 0},
        case_t{block_status::out_of_range, false, dnr(spec::generic_status::lba_out_of_range), std::nullopt},
        case_t{block_status::out_of_range, true, dnr(spec::generic_status::lba_out_of_range), std::nullopt},
    };
    for (const auto& [injected, write, expected, lba] : cases) {
        SCOPED_TRACE(static_cast<int>(injected));
        SCOPED_TRACE(write);
        r.backend().fail_nth(1, injected);
        const auto count = r.error_count();
        std::vector<std::byte> back;
        const auto failed = write ? write_blocks(r, 3, pattern(512, 29)) : read_blocks(r, 3, 512, back);
        EXPECT_EQ(failed.status(), expected);
        expect_logged(r, count, failed, 1, lba);
        // A failed Write stored nothing.
        EXPECT_EQ(stored(r, 0, data.size()), data);
        expect_queue_serves(r, 1, 100, 30);
    }
}

TEST(fault_backend, every_block_status_gives_its_status_and_a_full_log_entry)
{
    expect_every_block_status_gives_its_status_and_a_full_log_entry({.delay = 200us});
}

TEST(fault_backend, every_block_status_returned_by_submit_inline_gives_the_same_status_and_entry)
{
    // The controller continues a command whose request the backend completed at once without
    // its completion callback (InlineSubmitting).
    expect_every_block_status_gives_its_status_and_a_full_log_entry({.inline_completion = true});
}

TEST(fault_backend, media_error_inside_a_multi_block_read_logs_the_first_lba_in_error)
{
    // The Error Information entry's LBA is "the first LBA that experienced the error condition"
    // (Base 2.0 5.16.1.2): block 5, which the backend names through error_offset, not the SLBA.
    fault_rig r{{}, {.delay = 100us}};
    const auto data = pattern(8 * 512, 31);
    r.backend().preload(0, data);
    r.backend().add_media_error(5 * 512 + 17, 600); // blocks 5 and 6
    const auto count = r.error_count();
    std::vector<std::byte> back;
    const auto failed = read_blocks(r, 0, 8 * 512, back);
    EXPECT_EQ(failed.status(), dnr(spec::media_status::unrecovered_read_error));
    expect_logged(r, count, failed, 1, 5);
    // Blocks before and after the error read fine.
    EXPECT_EQ(read_blocks(r, 0, 5 * 512, back).status(), spec::status::success());
    EXPECT_EQ(back, part(data, 0, 5 * 512));
    EXPECT_EQ(read_blocks(r, 7, 512, back).status(), spec::status::success());
    EXPECT_EQ(back, part(data, 7 * 512, 512));
    expect_queue_serves(r, 1, 100, 32);
}

TEST(fault_backend, faults_among_late_reordered_completions)
{
    // Two queues, reads and writes, backend delays of 50 us to 2 ms; three requests fail by
    // injection and one read hits a media error.
    fault_rig r{{}, {.delay = 50us, .jitter = 2ms, .seed = 11}, 2};
    constexpr std::size_t commands = 24;
    constexpr std::uint32_t blocks = 2;
    const auto old_data = pattern(commands * blocks * 512, 33);
    r.backend().preload(0, old_data);
    const std::map<std::uint64_t, block_status> injected{{3, block_status::internal_error},
                                                         {8, block_status::write_fault},
                                                         {15, block_status::unrecovered_read_error}};
    for (const auto& [ordinal, status] : injected) {
        r.backend().fail_nth(ordinal, status);
    }
    constexpr std::size_t media_error_command = 21; // odd: a read
    r.backend().add_media_error(media_error_command * blocks * 512, 1);

    struct submitted {
        bool write;
        std::vector<std::byte> data; ///< what a write stores
        std::uint64_t buffer;
    };
    std::vector<submitted> sent;
    std::map<std::pair<std::uint16_t, std::uint16_t>, std::size_t> which; // (SQID, CID) -> command
    for (std::size_t i = 0; i < commands; ++i) {
        const bool write = i % 2 == 0;
        const auto qid = static_cast<std::uint16_t>(1 + (i / 2) % 2);
        auto data = write ? pattern(blocks * 512, static_cast<unsigned>(40 + i)) : std::vector<std::byte>{};
        const auto buffer = host_buffer(r, write ? data : filled(blocks * 512, marker));
        auto sqe = write ? write_command(i * blocks, blocks) : read_command(i * blocks, blocks);
        sqe.dptr.prp1 = buffer;
        which[{qid, r.host.submit(qid, sqe)}] = i;
        sent.push_back({write, std::move(data), buffer});
    }
    const auto count = r.error_count();
    std::vector<nt::completion> done;
    for (int step = 0; step < 1000 && done.size() < commands; ++step) {
        r.host.reap(1, done); // throws on a CQE for a command that is not outstanding
        r.host.reap(2, done);
        r.clock.advance(100us);
    }
    ASSERT_EQ(done.size(), commands);

    // Which command each injected failure hit: the backend records requests in submission order.
    const auto& records = r.backend().records();
    ASSERT_EQ(records.size(), commands);
    std::map<std::size_t, spec::status> expected;
    const auto status_of = [](block_status status) {
        switch (status) {
        case block_status::write_fault: return dnr(spec::media_status::write_fault);
        case block_status::unrecovered_read_error: return dnr(spec::media_status::unrecovered_read_error);
        default: return spec::status{spec::generic_status::internal_error};
        }
    };
    for (const auto& [ordinal, status] : injected) {
        expected[records[ordinal - 1].offset / (blocks * 512)] = status_of(status);
    }
    // An injected failure takes precedence over the media error (test_backend.hpp). With poll
    // groups on threads of their own the submission order varies, and an injected failure may hit
    // the media-error read itself: then three commands fail, else four.
    expected.emplace(media_error_command, dnr(spec::media_status::unrecovered_read_error));
    const std::size_t failed = expected.size();
    ASSERT_GE(failed, 3U);
    ASSERT_LE(failed, 4U);

    bool reordered = false;
    std::size_t previous = 0;
    std::set<std::tuple<std::uint16_t, std::uint16_t, std::uint16_t>> failures; // SQID, CID, status
    for (const auto& c : done) {
        const std::size_t i = which.at({c.cqe.sq_id, c.cqe.cid});
        reordered = reordered || i < previous;
        previous = i;
        const auto it = expected.find(i);
        EXPECT_EQ(c.status(), it == expected.end() ? spec::status::success() : it->second) << "command " << i;
        if (it != expected.end()) {
            failures.emplace(c.cqe.sq_id, c.cqe.cid, c.status().raw);
        } else if (!sent[i].write) {
            EXPECT_EQ(r.snapshot(sent[i].buffer, blocks * 512),
                      part(old_data, i * blocks * 512, blocks * 512))
                << "command " << i;
        }
    }
    EXPECT_TRUE(reordered);
    // Every write stored its data unless it failed.
    for (std::size_t i = 0; i < commands; i += 2) {
        const auto want =
            expected.contains(i) ? part(old_data, i * blocks * 512, blocks * 512) : sent[i].data;
        EXPECT_EQ(stored(r, i * blocks, blocks * 512), want) << "command " << i;
    }
    // One log entry per failure, with consecutive Error Counts, naming exactly the failed commands.
    std::vector<std::byte> log;
    ASSERT_TRUE(r.host.get_log_page(spec::log_page_id::error_information, 64 * 5, log).ok());
    std::set<std::tuple<std::uint16_t, std::uint16_t, std::uint16_t>> logged;
    for (std::size_t index = 0; index < failed; ++index) {
        spec::error_information_entry entry{};
        std::memcpy(&entry, log.data() + 64 * index, sizeof entry);
        EXPECT_EQ(entry.error_count, count + failed - index);
        EXPECT_EQ(entry.nsid, 1U);
        logged.emplace(entry.sqid, entry.cid, entry.status().raw);
    }
    spec::error_information_entry older{};
    std::memcpy(&older, log.data() + 64 * failed, sizeof older);
    EXPECT_EQ(older.error_count, count); // the entry before this run (0: none)
    EXPECT_EQ(logged, failures);
    EXPECT_EQ(r.backend().outstanding(), 0U);
    expect_queue_serves(r, 1, 200, 34);
    expect_queue_serves(r, 2, 300, 35);
}

// ---- interrupts lost or late ----------------------------------------------------------------------------

/// An InterruptProvider between the controller and the host that can lose raises or hold them
/// back; the raises it lets through are recorded in `delivered`.
class unreliable_interrupts {
public:
    enum class mode { deliver, drop, defer };

    void raise_msix(std::uint16_t vector, nvmekit::msix_message message)
    {
        ++raised_;
        switch (mode_) {
        case mode::deliver: delivered.raise_msix(vector, message); break;
        case mode::drop: ++dropped_; break;
        case mode::defer: deferred_.push_back({vector, message}); break;
        }
    }

    void set_mode(mode value) noexcept { mode_ = value; }
    /// Delivers the raises held back, in order.
    void release_deferred()
    {
        for (const auto& event : deferred_) {
            delivered.raise_msix(event.vector, event.message);
        }
        deferred_.clear();
    }
    [[nodiscard]] std::size_t raised() const noexcept { return raised_; }
    [[nodiscard]] std::size_t dropped() const noexcept { return dropped_; }
    [[nodiscard]] std::size_t deferred() const noexcept { return deferred_.size(); }

    nt::recording_msix delivered;

private:
    mode mode_ = mode::deliver;
    std::size_t raised_ = 0;
    std::size_t dropped_ = 0;
    std::vector<nt::msix_event> deferred_;
};
static_assert(nvmekit::InterruptProvider<unreliable_interrupts>);

struct unreliable_interrupt_traits : test_traits {
    using interrupts = unreliable_interrupts;
};

/// A controller behind unreliable interrupts and a host that reaps by interrupt (it reads a CQ
/// only after its vector was delivered) unless it calls reap(), which polls the CQ.
struct interrupt_rig {
    using controller_type = nvmekit::controller<unreliable_interrupt_traits>;
    host_memory memory;
    unreliable_interrupts interrupts;
    nt::manual_clock clock;
    controller_type::subsystem_type subsystem;
    controller_type ctrl{memory, interrupts, clock, subsystem};
    nt::in_process_host<controller_type> host{ctrl, memory, clock, interrupts.delivered};

    interrupt_rig()
    {
        subsystem.add_namespace(nvmekit::ram_backend{capacity});
        host.bring_up({.io_queue_pairs = 1, .max_polls = 20});
    }

    /// Submits `count` one-block Reads on I/O queue 1; returns their command identifiers.
    std::set<std::uint16_t> submit_reads(std::size_t count)
    {
        std::set<std::uint16_t> cids;
        for (std::size_t i = 0; i < count; ++i) {
            auto sqe = host_type::lba_command(spec::nvm_opcode::read, 1, i, 1);
            sqe.dptr.prp1 = host.allocate(512);
            cids.insert(host.submit(1, sqe));
        }
        return cids;
    }
    /// Polls the controller and reaps CQ 1 by reading it, `polls` times.
    std::vector<nt::completion> poll_and_reap(int polls)
    {
        std::vector<nt::completion> out;
        for (int i = 0; i < polls; ++i) {
            clock.advance(1ms);
            host.reap(1, out);
        }
        return out;
    }
};

[[nodiscard]] std::set<std::uint16_t> cids_of(const std::vector<nt::completion>& completions)
{
    std::set<std::uint16_t> cids;
    for (const auto& c : completions) {
        EXPECT_EQ(c.status(), spec::status::success());
        EXPECT_TRUE(cids.insert(c.cqe.cid).second) << "CID " << c.cqe.cid << " completed twice";
    }
    return cids;
}

TEST(fault_interrupts, lost_interrupts_do_not_stop_completions)
{
    interrupt_rig r;
    r.interrupts.set_mode(unreliable_interrupts::mode::drop);
    const auto before = r.interrupts.delivered.count(1);
    const auto cids = r.submit_reads(8);
    // A host that waits for the interrupt never gets it.
    EXPECT_THROW(static_cast<void>(r.host.wait_for(1, *cids.begin())), nt::host_error);
    EXPECT_GT(r.interrupts.dropped(), 0U);
    EXPECT_EQ(r.interrupts.delivered.count(1), before);
    // The entries are in the CQ all the same: a host that polls it sees each once.
    const auto done = r.poll_and_reap(5);
    EXPECT_EQ(cids_of(done), cids);
    EXPECT_EQ(r.ctrl.requests_in_use(), 0U);
    // Once interrupts get through again, the next completion raises vector 1 and an
    // interrupt-driven host reaps it.
    r.interrupts.set_mode(unreliable_interrupts::mode::deliver);
    auto sqe = host_type::lba_command(spec::nvm_opcode::read, 1, 0, 1);
    sqe.dptr.prp1 = r.host.allocate(512);
    EXPECT_EQ(r.host.io(1, sqe).status(), spec::status::success());
    EXPECT_EQ(r.interrupts.delivered.count(1), before + 1);
    EXPECT_EQ(r.host.admin(get_queues()).status(), spec::status::success());
}

TEST(fault_interrupts, late_interrupts_arrive_once_and_repeat_no_completion)
{
    interrupt_rig r;
    r.interrupts.set_mode(unreliable_interrupts::mode::defer);
    const auto before = r.interrupts.delivered.events().size();
    const auto cids = r.submit_reads(4);
    const auto posted = r.ctrl.statistics().completions_posted;
    for (int i = 0; i < 5; ++i) {
        r.clock.advance(1ms);
        r.ctrl.poll();
    }
    // Posted and signalled once (one interrupt per batch per vector), not yet delivered.
    EXPECT_EQ(r.ctrl.statistics().completions_posted, posted + 4U);
    EXPECT_EQ(r.interrupts.deferred(), 1U);
    EXPECT_EQ(r.interrupts.delivered.events().size(), before);
    const auto raised = r.interrupts.raised();
    r.interrupts.release_deferred();
    ASSERT_EQ(r.interrupts.delivered.events().size(), before + 1);
    EXPECT_EQ(r.interrupts.delivered.events().back().vector, 1U);
    // The late interrupt finds every entry; reading the CQ again finds nothing more, and entries
    // already signalled raise nothing again.
    EXPECT_EQ(cids_of(r.poll_and_reap(5)), cids);
    EXPECT_TRUE(r.poll_and_reap(5).empty());
    EXPECT_EQ(r.interrupts.raised(), raised);
    EXPECT_EQ(r.ctrl.statistics().completions_posted, posted + 4U);
    // Delivered at once again, the next completion is reaped by interrupt.
    r.interrupts.set_mode(unreliable_interrupts::mode::deliver);
    auto sqe = host_type::lba_command(spec::nvm_opcode::read, 1, 0, 1);
    sqe.dptr.prp1 = r.host.allocate(512);
    EXPECT_EQ(r.host.io(1, sqe).status(), spec::status::success());
    EXPECT_EQ(r.interrupts.delivered.count(1), 2U);
    EXPECT_EQ(r.ctrl.requests_in_use(), 0U);
}

// ---- clock jumps ------------------------------------------------------------------------------------------

TEST(fault_clock, keep_alive_expired_by_a_jump_of_hours_is_logged_once_and_a_reset_recovers)
{
    rig r;
    r.host.bring_up();
    ASSERT_EQ(
        r.host.admin(host_type::set_features_command(spec::feature_id::keep_alive_timer, 1000)).status(),
        spec::status::success());
    const auto count = r.ctrl.errors().last_error_count();
    // Keep Alive (Base 2.0 3.9): no Keep Alive within KATO -> an Error Information entry with
    // Keep Alive Timer Expired, and the controller fails (CSTS.CFS = 1). Later polls, however far
    // the clock jumps, add nothing.
    r.clock.advance(5h);
    for (int i = 0; i < 20; ++i) {
        r.ctrl.poll();
        r.clock.advance(1h);
    }
    EXPECT_TRUE(r.csts().get(spec::csts_register::cfs));
    EXPECT_EQ(r.ctrl.errors().last_error_count(), count + 1);
    const auto posted = r.ctrl.statistics().completions_posted;
    // A Controller Reset recovers; the entry survives it, and nothing more is logged or posted.
    r.host.bring_up();
    EXPECT_EQ(r.csts().raw, ready_status().raw);
    EXPECT_GT(r.ctrl.statistics().completions_posted, posted); // the bring-up's commands
    const auto entry = logged_error(r);
    EXPECT_EQ(entry.error_count, count + 1);
    EXPECT_EQ(entry.status(), spec::status{spec::generic_status::keep_alive_timer_expired});
    EXPECT_EQ(entry.sqid, spec::error_field_not_applicable);
    EXPECT_EQ(entry.cid, spec::error_field_not_applicable);
    EXPECT_EQ(entry.error_location.raw, spec::error_field_not_applicable);
    EXPECT_EQ(entry.nsid, 0U);
    EXPECT_EQ(entry.lba, 0U);
    r.clock.advance(10h); // the reset stopped the timer (KATO is 0 again)
    r.ctrl.poll();
    EXPECT_FALSE(r.csts().get(spec::csts_register::cfs));
    EXPECT_EQ(r.ctrl.errors().last_error_count(), count + 1);
    EXPECT_EQ(r.host.admin(get_queues()).status(), spec::status::success());
}

TEST(fault_clock, a_jump_of_hours_during_the_ready_delay)
{
    rig r{{.ready_delay = 10ms}};
    r.host.bring_up();
    r.host.disable();
    const auto events = r.msix.events().size();
    const auto errors = r.ctrl.errors().last_error_count();
    const auto protocol_errors = r.ctrl.statistics().host_protocol_errors;
    r.write_cc(linux_cc());
    r.clock.advance(9ms);
    r.ctrl.poll();
    EXPECT_EQ(r.csts().raw, 0U); // not ready before the delay
    r.clock.advance(3h);
    for (int i = 0; i < 5; ++i) {
        r.ctrl.poll();
        EXPECT_EQ(r.csts().raw, ready_status().raw) << i; // ready, and nothing else
        r.clock.advance(2h);
    }
    EXPECT_EQ(r.ctrl.state(), nvmekit::controller_state::ready);
    EXPECT_EQ(r.msix.events().size(), events);
    EXPECT_EQ(r.ctrl.errors().last_error_count(), errors);
    EXPECT_EQ(r.ctrl.statistics().host_protocol_errors, protocol_errors);
    r.host.enable(); // already ready: the host only resets its view of the admin queue
    EXPECT_EQ(r.host.admin(get_queues()).status(), spec::status::success());
}

TEST(fault_clock, a_jump_of_hours_under_interrupt_coalescing)
{
    rig r;
    r.host.bring_up();
    const auto coalescing = spec::interrupt_coalescing{}
                                .with(spec::interrupt_coalescing::thr, 9)    // 10 entries
                                .with(spec::interrupt_coalescing::time, 10); // or 1 ms
    ASSERT_EQ(
        r.host.admin(host_type::set_features_command(spec::feature_id::interrupt_coalescing, coalescing.raw))
            .status(),
        spec::status::success());
    r.msix.clear();
    const auto cid = r.host.submit(1, nvmekit_test::read_command());
    r.ctrl.poll();
    EXPECT_EQ(r.msix.count(1), 0U); // aggregating
    r.clock.advance(7h);
    r.ctrl.poll();
    EXPECT_EQ(r.msix.count(1), 1U); // the aggregation time passed long ago: one interrupt
    for (int i = 0; i < 5; ++i) {
        r.clock.advance(3h);
        r.ctrl.poll();
    }
    EXPECT_EQ(r.msix.count(1), 1U); // and only one
    std::vector<nt::completion> done;
    r.host.reap(1, done);
    ASSERT_EQ(done.size(), 1U);
    EXPECT_EQ(done[0].cqe.cid, cid);
    r.host.reap(1, done);
    EXPECT_EQ(done.size(), 1U);
    // The next completion starts a fresh aggregation of 1 ms.
    r.host.submit(1, nvmekit_test::read_command());
    r.ctrl.poll();
    r.clock.advance(999us);
    r.ctrl.poll();
    EXPECT_EQ(r.msix.count(1), 1U);
    r.clock.advance(1us);
    r.ctrl.poll();
    EXPECT_EQ(r.msix.count(1), 2U);
    EXPECT_EQ(r.msix.events().size(), 2U);
}

} // namespace fault_injection_test
} // namespace
