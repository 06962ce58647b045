#include <nvmekit/state/log_page.hpp>

#include <array>
#include <cstddef>
#include <cstdint>

#include <gtest/gtest.h>

namespace spec = nvmekit::spec;
using nvmekit::check_log_page_offset;
using nvmekit::copy_log_window;
using nvmekit::log_page_transfer_of;
using nvmekit::log_page_window;

namespace {

/// A 16-byte log holding 1, 2, ..., 16.
std::array<std::byte, 16> sample_log()
{
    std::array<std::byte, 16> log{};
    for (std::size_t i = 0; i < log.size(); ++i) {
        log[i] = static_cast<std::byte>(i + 1);
    }
    return log;
}

std::array<std::byte, 8> filled(std::uint8_t value)
{
    std::array<std::byte, 8> out{};
    out.fill(static_cast<std::byte>(value));
    return out;
}

spec::submission_queue_entry get_log_page(std::uint32_t numd, std::uint64_t offset, bool index = false)
{
    spec::get_log_page_view view{};
    view.log_page_id = spec::log_page_id::error_information;
    view.dword_count = std::uint64_t{numd} + 1;
    view.offset = offset;
    view.offset_is_index = index;
    spec::submission_queue_entry entry{};
    view.encode(entry);
    return entry;
}

const spec::status invalid_field{spec::generic_status::invalid_field};

} // namespace

TEST(log_page_window, copies_the_window_at_an_aligned_offset)
{
    const auto log = sample_log();
    auto out = filled(0xee);
    EXPECT_TRUE(log_page_window(log, 4, out).is_success());
    for (std::size_t i = 0; i < out.size(); ++i) {
        EXPECT_EQ(out[i], static_cast<std::byte>(5 + i)) << i;
    }
}

TEST(log_page_window, bytes_past_the_end_of_the_log_read_as_zero)
{
    const auto log = sample_log();
    auto out = filled(0xee);
    EXPECT_TRUE(log_page_window(log, 12, out).is_success());
    EXPECT_EQ(out[0], std::byte{13});
    EXPECT_EQ(out[3], std::byte{16});
    for (std::size_t i = 4; i < out.size(); ++i) {
        EXPECT_EQ(out[i], std::byte{0}) << i;
    }
}

TEST(log_page_window, an_offset_equal_to_the_size_reads_zeros)
{
    const auto log = sample_log();
    auto out = filled(0xee);
    EXPECT_TRUE(log_page_window(log, 16, out).is_success());
    for (const std::byte value : out) {
        EXPECT_EQ(value, std::byte{0});
    }
}

TEST(log_page_window, an_offset_beyond_the_log_is_invalid_field_and_leaves_out_unchanged)
{
    const auto log = sample_log();
    auto out = filled(0xee);
    EXPECT_EQ(log_page_window(log, 20, out), invalid_field);
    EXPECT_EQ(log_page_window(log, 0xffff'ffff'ffff'fffcULL, out), invalid_field);
    for (const std::byte value : out) {
        EXPECT_EQ(value, std::byte{0xee});
    }
}

TEST(log_page_window, a_misaligned_offset_is_invalid_field)
{
    const auto log = sample_log();
    auto out = filled(0xee);
    EXPECT_EQ(log_page_window(log, 2, out), invalid_field);
    EXPECT_EQ(log_page_window(log, 1, out), invalid_field);
    EXPECT_EQ(out[0], std::byte{0xee});
}

TEST(log_page_window, a_coarser_alignment_is_honoured)
{
    EXPECT_EQ(check_log_page_offset(4, 1024, 512), invalid_field);
    EXPECT_TRUE(check_log_page_offset(512, 1024, 512).is_success());
    EXPECT_TRUE(check_log_page_offset(1024, 1024, 512).is_success());
    EXPECT_EQ(check_log_page_offset(1536, 1024, 512), invalid_field);
}

TEST(log_page_window, an_empty_window_is_valid)
{
    const auto log = sample_log();
    EXPECT_TRUE(log_page_window(log, 8, std::span<std::byte>{}).is_success());
}

TEST(copy_log_window, accepts_any_offset_for_chunked_copies)
{
    const auto log = sample_log();
    auto out = filled(0xee);
    copy_log_window(log, 1'000'000, out);
    for (const std::byte value : out) {
        EXPECT_EQ(value, std::byte{0});
    }
    copy_log_window(log, 10, out);
    EXPECT_EQ(out[0], std::byte{11});
    EXPECT_EQ(out[5], std::byte{16});
    EXPECT_EQ(out[6], std::byte{0});
}

TEST(log_page_transfer_of, length_is_the_zeros_based_dword_count_in_bytes)
{
    const auto view = spec::get_log_page_view::decode(get_log_page(127, 0));
    const auto transfer = log_page_transfer_of(view, 512);
    EXPECT_TRUE(transfer.ok());
    EXPECT_EQ(transfer.offset, 0U);
    EXPECT_EQ(transfer.length, 512U);
}

TEST(log_page_transfer_of, numdu_and_lpou_extend_length_and_offset)
{
    auto entry = get_log_page(0, 0);
    entry.cdw10 = 0xffff'0001U; // NUMDL FFFFh, LID 01h
    entry.cdw11 = 0x0000'ffffU; // NUMDU FFFFh
    entry.cdw12 = 0x0000'0000U; // LPOL
    entry.cdw13 = 0x0000'0001U; // LPOU
    const auto view = spec::get_log_page_view::decode(entry);
    const auto transfer = log_page_transfer_of(view, 0x1'0000'0000ULL);
    EXPECT_TRUE(transfer.ok());
    EXPECT_EQ(transfer.length, 0x4'0000'0000ULL); // 2^32 dwords
    EXPECT_EQ(transfer.offset, 0x1'0000'0000ULL);
}

TEST(log_page_transfer_of, rejects_misaligned_and_out_of_range_offsets)
{
    EXPECT_EQ(log_page_transfer_of(spec::get_log_page_view::decode(get_log_page(0, 6)), 512).status,
              invalid_field);
    EXPECT_EQ(log_page_transfer_of(spec::get_log_page_view::decode(get_log_page(0, 516)), 512).status,
              invalid_field);
    EXPECT_TRUE(log_page_transfer_of(spec::get_log_page_view::decode(get_log_page(0, 512)), 512).ok());
    EXPECT_EQ(log_page_transfer_of(spec::get_log_page_view::decode(get_log_page(0, 256)), 1024, 512).status,
              invalid_field);
}

TEST(log_page_transfer_of, an_index_offset_is_invalid_field)
{
    const auto view = spec::get_log_page_view::decode(get_log_page(0, 0, true));
    EXPECT_EQ(log_page_transfer_of(view, 512).status, invalid_field);
}
