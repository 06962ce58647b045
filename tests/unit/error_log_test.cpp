#include <nvmekit/state/error_log.hpp>

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

namespace spec = nvmekit::spec;
using nvmekit::error_log;
using nvmekit::error_record;

namespace {

const spec::status invalid_field{spec::generic_status::invalid_field};

error_record failure(std::uint16_t command_id)
{
    return error_record{.sq_id = 1, .command_id = command_id, .status = invalid_field};
}

std::uint64_t u64_at(const std::vector<std::byte>& bytes, std::size_t offset)
{
    std::uint64_t value = 0;
    std::memcpy(&value, bytes.data() + offset, sizeof value);
    return value;
}

std::uint16_t u16_at(const std::vector<std::byte>& bytes, std::size_t offset)
{
    std::uint16_t value = 0;
    std::memcpy(&value, bytes.data() + offset, sizeof value);
    return value;
}

} // namespace

TEST(error_log, default_capacity_is_64_entries)
{
    const error_log log;
    EXPECT_EQ(log.capacity(), 64U);
    EXPECT_EQ(log.elpe(), 63U);
    EXPECT_EQ(log.log_size(), 4096U);
    EXPECT_EQ(log.size(), 0U);
    EXPECT_EQ(log.last_error_count(), 0U);
}

TEST(error_log, skipped_errors_advance_the_error_count_without_entries)
{
    // Errors that never reached the log (a full mailbox between a poll group and the admin
    // context) still count: the next entry's Error Count shows the gap.
    error_log log;
    EXPECT_EQ(log.record(error_record{}), 1U);
    log.skip(3);
    EXPECT_EQ(log.size(), 1U);
    EXPECT_EQ(log.last_error_count(), 4U);
    EXPECT_EQ(log.record(error_record{}), 5U);
    EXPECT_EQ(log.size(), 2U);
    EXPECT_EQ(log.entry(0).error_count, 5U); // newest first
}

TEST(error_log, capacity_must_be_1_to_256)
{
    EXPECT_THROW(error_log{0}, std::invalid_argument);
    EXPECT_THROW(error_log{257}, std::invalid_argument);
    const error_log one{1};
    EXPECT_EQ(one.elpe(), 0U);
    const error_log most{256};
    EXPECT_EQ(most.elpe(), 255U);
    EXPECT_EQ(most.log_size(), 16384U);
}

TEST(error_log, record_fills_every_field_and_assigns_the_error_count)
{
    error_log log{4};
    const error_record error{
        .sq_id = 3,
        .command_id = 0x1234,
        .status = spec::status{spec::media_status::unrecovered_read_error}.with_dnr(),
        .phase_tag = true,
        .location = spec::parameter_error_location::at(40, 2),
        .lba = 0x1122'3344'5566'7788ULL,
        .nsid = 7,
        .vendor_specific_log_page = 0xc1,
        .transport_type = 3,
        .command_specific_information = 0xabcdULL,
        .transport_specific_information = 0x55aa,
    };
    EXPECT_EQ(log.record(error), 1U);
    const spec::error_information_entry entry = log.entry(0);
    EXPECT_EQ(entry.error_count, 1U);
    EXPECT_EQ(entry.sqid, 3U);
    EXPECT_EQ(entry.cid, 0x1234U);
    EXPECT_EQ(entry.status_field, 0x8503U); // DNR 14 -> 15, SCT 2h -> 10:09, SC 81h -> 08:01, phase 1
    EXPECT_TRUE(entry.phase());
    EXPECT_EQ(entry.error_location.raw, 0x0228U); // bit 2 -> 10:08, byte 40 -> 07:00
    EXPECT_EQ(entry.lba, 0x1122'3344'5566'7788ULL);
    EXPECT_EQ(entry.nsid, 7U);
    EXPECT_EQ(entry.vendor_specific_log_page, 0xc1U);
    EXPECT_EQ(entry.transport_type, 3U);
    EXPECT_EQ(entry.command_specific_information, 0xabcdULL);
    EXPECT_EQ(entry.transport_specific_information, 0x55aaU);
}

TEST(error_log, an_error_not_tied_to_a_command_reports_ffffh)
{
    error_log log{4};
    log.record(error_record{.status = spec::status{spec::generic_status::internal_error}});
    const auto entry = log.entry(0);
    EXPECT_EQ(entry.sqid, 0xffffU);
    EXPECT_EQ(entry.cid, 0xffffU);
    EXPECT_EQ(entry.error_location.raw, 0xffffU);
    EXPECT_EQ(entry.status_field, 0x000cU);
    EXPECT_FALSE(entry.phase());
}

TEST(error_log, entries_are_newest_first_and_unused_entries_are_zero)
{
    error_log log{4};
    log.record(failure(10));
    log.record(failure(11));
    EXPECT_EQ(log.size(), 2U);
    EXPECT_EQ(log.entry(0).cid, 11U);
    EXPECT_EQ(log.entry(0).error_count, 2U);
    EXPECT_EQ(log.entry(1).cid, 10U);
    EXPECT_EQ(log.entry(1).error_count, 1U);
    EXPECT_EQ(log.entry(2), spec::error_information_entry{});
    EXPECT_EQ(log.entry(3), spec::error_information_entry{});

    std::vector<std::byte> page(log.log_size(), std::byte{0xee});
    log.copy(page);
    EXPECT_EQ(u64_at(page, 0), 2U);
    EXPECT_EQ(u16_at(page, 10), 11U);
    EXPECT_EQ(u64_at(page, 64), 1U);
    EXPECT_EQ(u16_at(page, 64 + 10), 10U);
    for (std::size_t i = 128; i < page.size(); ++i) {
        EXPECT_EQ(page[i], std::byte{0}) << i;
    }
}

TEST(error_log, the_ring_wraps_and_keeps_the_newest_entries)
{
    error_log log{3};
    for (std::uint16_t cid = 1; cid <= 5; ++cid) {
        EXPECT_EQ(log.record(failure(cid)), cid);
    }
    EXPECT_EQ(log.size(), 3U);
    EXPECT_EQ(log.lifetime_entries(), 5U);
    EXPECT_EQ(log.last_error_count(), 5U);
    EXPECT_EQ(log.entry(0).error_count, 5U);
    EXPECT_EQ(log.entry(1).error_count, 4U);
    EXPECT_EQ(log.entry(2).error_count, 3U);
    EXPECT_EQ(log.entry(2).cid, 3U);
    EXPECT_EQ(log.entry(3), spec::error_information_entry{});
    log.record(failure(6));
    EXPECT_EQ(log.entry(0).error_count, 6U);
    EXPECT_EQ(log.entry(2).error_count, 4U);
}

TEST(error_log, copy_serves_any_window_and_zeros_past_the_log)
{
    error_log log{2};
    log.record(failure(1));
    log.record(failure(2));
    std::vector<std::byte> window(72, std::byte{0xee});
    log.copy(60, window); // last 4 bytes of entry 0, all of entry 1, 4 bytes past the log
    EXPECT_EQ(u64_at(window, 4), 1U);
    EXPECT_EQ(u16_at(window, 4 + 10), 1U);
    for (std::size_t i = 0; i < 4; ++i) {
        EXPECT_EQ(window[i], std::byte{0}) << i; // bytes 63:60 of entry 0 are reserved
    }
    for (std::size_t i = 68; i < 72; ++i) {
        EXPECT_EQ(window[i], std::byte{0}) << i;
    }
    std::vector<std::byte> far(16, std::byte{0xee});
    log.copy(std::numeric_limits<std::uint64_t>::max() - 3, far);
    for (const std::byte value : far) {
        EXPECT_EQ(value, std::byte{0});
    }
}

TEST(error_log, read_checks_the_offset)
{
    error_log log{2};
    log.record(failure(1));
    std::vector<std::byte> out(8, std::byte{0xee});
    EXPECT_EQ(log.read(2, out), invalid_field);
    EXPECT_EQ(log.read(132, out), invalid_field);
    EXPECT_EQ(out[0], std::byte{0xee});
    EXPECT_TRUE(log.read(128, out).is_success());
    EXPECT_EQ(out[0], std::byte{0});
    EXPECT_TRUE(log.read(0, out).is_success());
    EXPECT_EQ(u64_at(out, 0), 1U);
}

TEST(error_log, reading_does_not_clear_and_clear_keeps_the_error_count)
{
    error_log log{4};
    log.record(failure(1));
    log.record(failure(2));
    std::vector<std::byte> out(256);
    EXPECT_TRUE(log.read(0, out).is_success());
    EXPECT_EQ(log.size(), 2U);
    log.clear();
    EXPECT_EQ(log.size(), 0U);
    EXPECT_EQ(log.entry(0), spec::error_information_entry{});
    EXPECT_EQ(log.last_error_count(), 2U);
    EXPECT_EQ(log.lifetime_entries(), 2U);
    EXPECT_EQ(log.record(failure(3)), 3U);
    EXPECT_EQ(log.size(), 1U);
    EXPECT_EQ(log.entry(0).cid, 3U);
}

TEST(error_log, the_error_count_is_restored_and_rolls_over_to_1)
{
    error_log restored{4, 41};
    EXPECT_EQ(restored.record(failure(1)), 42U);

    error_log log{4, std::numeric_limits<std::uint64_t>::max() - 1};
    EXPECT_EQ(log.record(failure(1)), std::numeric_limits<std::uint64_t>::max());
    EXPECT_EQ(log.record(failure(2)), 1U);
    EXPECT_EQ(log.record(failure(3)), 2U);
    EXPECT_EQ(log.entry(1).error_count, 1U);
    EXPECT_EQ(log.lifetime_entries(), 3U);
}
