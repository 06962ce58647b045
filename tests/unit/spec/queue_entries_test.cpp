#include <nvmekit/spec/queue_entries.hpp>

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include <gtest/gtest.h>

namespace spec = nvmekit::spec;

namespace {
namespace spec_queue_entries_test {

/// The bytes of an entry as the host's memory holds them.
template <typename Entry>
std::array<std::uint8_t, sizeof(Entry)> bytes_of(const Entry& entry)
{
    return std::bit_cast<std::array<std::uint8_t, sizeof(Entry)>>(entry);
}

TEST(queue_entries, command_dword0_fields_sit_where_base_figure_88_puts_them)
{
    spec::submission_queue_entry sqe{};
    sqe.cdw0.set(spec::command_dword0::opc, 0x02)
        .set(spec::command_dword0::fuse, spec::fused_operation::second)
        .set(spec::command_dword0::psdt, spec::data_pointer_type::sgl_metadata_descriptor)
        .set(spec::command_dword0::cid, 0xbeef);
    EXPECT_EQ(sqe.cdw0.raw, 0xbeef'0000U | (0b10U << 14) | (0b10U << 8) | 0x02U);
    EXPECT_EQ(sqe.opcode(), 0x02);
    EXPECT_EQ(sqe.command_id(), 0xbeef);
    EXPECT_EQ(sqe.pointer_type(), spec::data_pointer_type::sgl_metadata_descriptor);
    // Bits 13:10 are reserved: setting every field leaves them 0.
    EXPECT_EQ(sqe.cdw0.raw & 0x3c00U, 0U);
}

TEST(queue_entries, an_sqe_is_64_little_endian_bytes_in_the_spec_order)
{
    spec::submission_queue_entry sqe{};
    sqe.cdw0.set(spec::command_dword0::opc, 0x01).set(spec::command_dword0::cid, 0x1234);
    sqe.nsid = 0x0a0b0c0d;
    sqe.mptr = 0x1122334455667788;
    sqe.dptr = {0x0000'0001'0000'2000, 0x0000'0001'0000'3000};
    sqe.cdw10 = 0xdeadbeef;
    sqe.cdw15 = 0xcafef00d;
    const auto raw = bytes_of(sqe);
    EXPECT_EQ(raw[0], 0x01); // OPC
    EXPECT_EQ(raw[2], 0x34); // CID, low byte first
    EXPECT_EQ(raw[3], 0x12);
    EXPECT_EQ(raw[4], 0x0d);  // NSID
    EXPECT_EQ(raw[16], 0x88); // MPTR
    EXPECT_EQ(raw[25], 0x20); // PRP1 bits 15:08
    EXPECT_EQ(raw[28], 0x01); // PRP1 bits 39:32
    EXPECT_EQ(raw[33], 0x30); // PRP2 bits 15:08
    EXPECT_EQ(raw[40], 0xef); // CDW10
    EXPECT_EQ(raw[63], 0xca); // CDW15's last byte
    spec::submission_queue_entry copy{};
    std::memcpy(&copy, raw.data(), raw.size());
    EXPECT_EQ(copy, sqe);
    copy.cdw12 = 1;
    EXPECT_NE(copy, sqe);
}

TEST(queue_entries, a_cqe_keeps_the_phase_in_bit_0_and_the_status_above_it)
{
    spec::completion_queue_entry cqe{};
    const auto status = spec::status{spec::command_specific_status::invalid_queue_identifier}.with_dnr();
    cqe.set_status(status, true);
    EXPECT_TRUE(cqe.phase());
    EXPECT_EQ(cqe.status(), status);
    EXPECT_EQ(cqe.status_phase, static_cast<std::uint16_t>((status.raw << 1) | 1U));
    cqe.set_status(spec::status::success(), false);
    EXPECT_FALSE(cqe.phase());
    EXPECT_TRUE(cqe.status().is_success());
    EXPECT_EQ(cqe.status_phase, 0U);
    // Bytes 09:08 SQHD, 11:10 SQID, 13:12 CID, 15:14 status and phase (Base 2.0 Figure 89).
    cqe.dw0 = 0x01020304;
    cqe.sq_head = 0x0506;
    cqe.sq_id = 0x0708;
    cqe.cid = 0x090a;
    cqe.set_status(spec::status{spec::generic_status::invalid_field}, true);
    const auto raw = bytes_of(cqe);
    EXPECT_EQ(raw[0], 0x04);
    EXPECT_EQ(raw[8], 0x06);
    EXPECT_EQ(raw[10], 0x08);
    EXPECT_EQ(raw[12], 0x0a);
    EXPECT_EQ(raw[14], (0x02U << 1 | 1U) & 0xffU); // Invalid Field (02h), phase 1
    EXPECT_EQ(raw[15], 0x00);
}

} // namespace spec_queue_entries_test
} // namespace
