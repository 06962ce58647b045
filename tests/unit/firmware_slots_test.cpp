#include <nvmekit/state/firmware_slots.hpp>

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

namespace spec = nvmekit::spec;
using nvmekit::firmware_commit_result;
using nvmekit::firmware_reset;
using nvmekit::firmware_slots;
using nvmekit::firmware_slots_config;
using action = spec::firmware_commit_action;

namespace {

const spec::status success = spec::status::success();
const spec::status invalid_field{spec::generic_status::invalid_field};
const spec::status invalid_slot{spec::command_specific_status::invalid_firmware_slot};
const spec::status invalid_image{spec::command_specific_status::invalid_firmware_image};
const spec::status overlapping{spec::command_specific_status::overlapping_range};
const spec::status needs_conventional{
    spec::command_specific_status::firmware_activation_requires_conventional_reset};
const spec::status needs_subsystem{
    spec::command_specific_status::firmware_activation_requires_subsystem_reset};
const spec::status needs_controller{
    spec::command_specific_status::firmware_activation_requires_controller_reset};

/// An image of `size` bytes (a multiple of 4) starting with `revision` (8 characters).
std::vector<std::byte> image(std::string_view revision, std::size_t size = 64)
{
    std::vector<std::byte> bytes(size, std::byte{0x5a});
    for (std::size_t i = 0; i < revision.size(); ++i) {
        bytes[i] = static_cast<std::byte>(revision[i]);
    }
    return bytes;
}

std::span<const std::byte> piece(const std::vector<std::byte>& bytes, std::size_t offset, std::size_t size)
{
    return std::span<const std::byte>{bytes}.subspan(offset, size);
}

firmware_slots with(firmware_slots_config config) { return firmware_slots{config}; }

void expect_result(const firmware_commit_result& result, spec::status status, std::uint8_t slot,
                   bool now = false)
{
    EXPECT_EQ(result.status, status);
    EXPECT_EQ(result.slot, slot);
    EXPECT_EQ(result.activated_now, now);
}

} // namespace

TEST(firmware_slots, power_on_state_and_log)
{
    const firmware_slots slots{firmware_slots_config{.slot_count = 3, .initial_revision = "FW1.0"}};
    EXPECT_EQ(slots.active_revision(), "FW1.0");
    EXPECT_EQ(slots.active_slot(), 1U);
    EXPECT_EQ(slots.pending_slot(), 0U);
    EXPECT_EQ(slots.slot_revision(1), "FW1.0");
    EXPECT_EQ(slots.slot_revision(2), "");
    const spec::firmware_slot_log log = slots.log();
    EXPECT_EQ(log.afi.raw, 0x01U);
    const auto bytes = std::bit_cast<std::array<std::uint8_t, 512>>(log);
    const std::array<std::uint8_t, 8> frs1{'F', 'W', '1', '.', '0', ' ', ' ', ' '};
    for (std::size_t i = 0; i < 8; ++i) {
        EXPECT_EQ(bytes[8 + i], frs1[i]) << i;
        EXPECT_EQ(bytes[16 + i], 0U) << i; // FRS2 empty
    }
    for (std::size_t i = 32; i < 512; ++i) {
        EXPECT_EQ(bytes[i], 0U) << i;
    }
}

TEST(firmware_slots, frmw_and_fwug_reflect_the_configuration)
{
    const auto slots = with({.slot_count = 4,
                             .slot1_read_only = true,
                             .activation_without_reset = true,
                             .update_granularity = 2});
    EXPECT_EQ(slots.frmw().raw, 0x19U); // bit 4, slots 4 in 03:01, bit 0
    EXPECT_EQ(slots.fwug(), 2U);
    EXPECT_EQ(with({}).frmw().raw, 0x04U);
}

TEST(firmware_slots, invalid_configuration_throws)
{
    EXPECT_THROW(with({.slot_count = 0}), std::invalid_argument);
    EXPECT_THROW(with({.slot_count = 8}), std::invalid_argument);
    EXPECT_THROW(with({.max_image_bytes = 0}), std::invalid_argument);
    EXPECT_THROW(with({.max_image_bytes = 1022}), std::invalid_argument);
    EXPECT_THROW(with({.initial_revision = ""}), std::invalid_argument);
    EXPECT_THROW(with({.initial_revision = "123456789"}), std::invalid_argument);
    EXPECT_NO_THROW(with({.slot_count = 7, .initial_revision = "12345678"}));
}

TEST(firmware_slots, replace_stores_the_image_revision_without_activating)
{
    auto slots = with({});
    const auto fw = image("FW2.0   ");
    EXPECT_EQ(slots.download(0, fw), success);
    EXPECT_EQ(slots.downloaded_image().size(), 64U);
    expect_result(slots.commit(2, action::replace), success, 2);
    EXPECT_EQ(slots.slot_revision(2), "FW2.0");
    EXPECT_EQ(slots.active_revision(), "1.0");
    EXPECT_EQ(slots.pending_slot(), 0U);
    EXPECT_EQ(slots.downloaded_image().size(), 0U); // consumed
    EXPECT_FALSE(slots.on_controller_reset());
    EXPECT_EQ(slots.active_revision(), "1.0");
}

TEST(firmware_slots, replace_and_activate_on_reset_runs_the_image_after_a_controller_reset)
{
    auto slots = with({});
    ASSERT_EQ(slots.download(0, image("FW2.0.01")), success);
    expect_result(slots.commit(2, action::replace_and_activate_on_reset), success, 2);
    EXPECT_EQ(slots.pending_slot(), 2U);
    EXPECT_EQ(slots.log().afi.raw, 0x21U); // next slot 2 in bits 06:04, active slot 1
    EXPECT_EQ(slots.active_revision(), "1.0");
    EXPECT_TRUE(slots.on_controller_reset());
    EXPECT_EQ(slots.active_revision(), "FW2.0.01");
    EXPECT_EQ(slots.active_slot(), 2U);
    EXPECT_EQ(slots.pending_slot(), 0U);
    EXPECT_EQ(slots.log().afi.raw, 0x02U);
}

TEST(firmware_slots, activate_on_reset_schedules_an_existing_slot)
{
    auto slots = with({.slot_count = 3});
    ASSERT_EQ(slots.download(0, image("FW3.0   ")), success);
    ASSERT_EQ(slots.commit(3, action::replace).status, success);
    expect_result(slots.commit(3, action::activate_on_reset), success, 3);
    EXPECT_EQ(slots.pending_slot(), 3U);
    EXPECT_TRUE(slots.on_controller_reset());
    EXPECT_EQ(slots.active_slot(), 3U);
    EXPECT_EQ(slots.active_revision(), "FW3.0");
    expect_result(slots.commit(1, action::activate_on_reset), success, 1);
    EXPECT_TRUE(slots.on_controller_reset());
    EXPECT_EQ(slots.active_revision(), "1.0");
}

TEST(firmware_slots, activating_an_empty_slot_is_an_invalid_image)
{
    auto slots = with({.slot_count = 3});
    expect_result(slots.commit(2, action::activate_on_reset), invalid_image, 0);
    EXPECT_EQ(slots.pending_slot(), 0U);
    expect_result(slots.commit(2, action::replace_and_activate_now), invalid_image, 0);
}

TEST(firmware_slots, replace_and_activate_now_without_support_needs_a_controller_level_reset)
{
    auto slots = with({});
    ASSERT_EQ(slots.download(0, image("FW4.0   ")), success);
    expect_result(slots.commit(2, action::replace_and_activate_now), needs_controller, 2);
    EXPECT_EQ(slots.active_revision(), "1.0");
    EXPECT_EQ(slots.pending_slot(), 2U);
    EXPECT_EQ(slots.slot_revision(2), "FW4.0");
    EXPECT_TRUE(slots.on_controller_reset());
    EXPECT_EQ(slots.active_revision(), "FW4.0");
}

TEST(firmware_slots, replace_and_activate_now_with_support_activates_at_once)
{
    auto slots = with({.activation_without_reset = true});
    ASSERT_EQ(slots.download(0, image("FW5.0   ")), success);
    expect_result(slots.commit(2, action::replace_and_activate_now), success, 2, true);
    EXPECT_EQ(slots.active_revision(), "FW5.0");
    EXPECT_EQ(slots.active_slot(), 2U);
    EXPECT_EQ(slots.pending_slot(), 0U);
    EXPECT_EQ(slots.log().afi.raw, 0x02U);
    // No new image: 011b activates the image already in the slot.
    expect_result(slots.commit(1, action::replace_and_activate_now), success, 1, true);
    EXPECT_EQ(slots.active_revision(), "1.0");
}

TEST(firmware_slots, activation_waiting_for_a_subsystem_reset_survives_controller_resets)
{
    auto slots = with({.activation_reset = firmware_reset::subsystem});
    ASSERT_EQ(slots.download(0, image("FW6.0   ")), success);
    expect_result(slots.commit(2, action::replace_and_activate_on_reset), needs_subsystem, 2);
    EXPECT_FALSE(slots.on_controller_reset());
    EXPECT_FALSE(slots.on_conventional_reset());
    EXPECT_EQ(slots.active_revision(), "1.0");
    EXPECT_EQ(slots.pending_slot(), 2U);
    EXPECT_TRUE(slots.on_subsystem_reset());
    EXPECT_EQ(slots.active_revision(), "FW6.0");
    expect_result(slots.commit(1, action::activate_on_reset), needs_subsystem, 1);
    expect_result(slots.commit(1, action::replace_and_activate_now), needs_subsystem, 1);
}

TEST(firmware_slots, activation_waiting_for_a_conventional_reset)
{
    auto slots = with({.activation_reset = firmware_reset::conventional});
    ASSERT_EQ(slots.download(0, image("FW7.0   ")), success);
    expect_result(slots.commit(2, action::replace_and_activate_on_reset), needs_conventional, 2);
    EXPECT_FALSE(slots.on_controller_reset());
    EXPECT_TRUE(slots.on_conventional_reset());
    EXPECT_EQ(slots.active_revision(), "FW7.0");
    expect_result(slots.commit(1, action::activate_on_reset), needs_conventional, 1);
    EXPECT_TRUE(slots.on_subsystem_reset()); // stronger than conventional
    EXPECT_EQ(slots.active_revision(), "1.0");
}

TEST(firmware_slots, boot_partition_and_reserved_actions_are_invalid_field)
{
    auto slots = with({});
    ASSERT_EQ(slots.download(0, image("FW8.0   ")), success);
    expect_result(slots.commit(0, action::replace_boot_partition), invalid_field, 0);
    expect_result(slots.commit(0, action::activate_boot_partition), invalid_field, 0);
    expect_result(slots.commit(1, static_cast<action>(0b100)), invalid_field, 0);
    expect_result(slots.commit(1, static_cast<action>(0b101)), invalid_field, 0);
    EXPECT_EQ(slots.downloaded_image().size(), 64U); // not consumed
}

TEST(firmware_slots, a_slot_past_the_slot_count_is_invalid)
{
    auto slots = with({.slot_count = 2});
    ASSERT_EQ(slots.download(0, image("FW9.0   ")), success);
    expect_result(slots.commit(3, action::replace), invalid_slot, 0);
    expect_result(slots.commit(7, action::activate_on_reset), invalid_slot, 0);
    expect_result(slots.commit(2, action::replace), success, 2);
}

TEST(firmware_slots, read_only_slot_1_rejects_replace_but_may_be_activated)
{
    auto slots = with({.slot1_read_only = true});
    ASSERT_EQ(slots.download(0, image("FWA.0   ")), success);
    expect_result(slots.commit(1, action::replace), invalid_slot, 0);
    expect_result(slots.commit(1, action::replace_and_activate_on_reset), invalid_slot, 0);
    expect_result(slots.commit(1, action::replace_and_activate_now), invalid_slot, 0);
    EXPECT_EQ(slots.slot_revision(1), "1.0");
    expect_result(slots.commit(1, action::activate_on_reset), success, 1);
}

TEST(firmware_slots, commit_without_an_image_is_an_invalid_image)
{
    auto slots = with({});
    expect_result(slots.commit(2, action::replace), invalid_image, 0);
    expect_result(slots.commit(2, action::replace_and_activate_on_reset), invalid_image, 0);
}

TEST(firmware_slots, the_revision_must_be_printable_ascii)
{
    auto slots = with({});
    auto bad = image("FW\x01"
                     "1.0  ");
    ASSERT_EQ(slots.download(0, bad), success);
    expect_result(slots.commit(2, action::replace), invalid_image, 0);
    ASSERT_EQ(slots.download(0, image("        ")), success); // restart, all spaces
    expect_result(slots.commit(2, action::replace), invalid_image, 0);
    ASSERT_EQ(slots.download(0, image("FW~1.0 \x7f")), success);
    expect_result(slots.commit(2, action::replace), invalid_image, 0);
    ASSERT_EQ(slots.download(0, image("FW~1.0 !")), success);
    expect_result(slots.commit(2, action::replace), success, 2);
    EXPECT_EQ(slots.slot_revision(2), "FW~1.0 !");
}

TEST(firmware_slots, an_image_shorter_than_the_revision_is_invalid)
{
    auto slots = with({});
    ASSERT_EQ(slots.download(0, piece(image("FWB.0   "), 0, 4)), success);
    expect_result(slots.commit(2, action::replace), invalid_image, 0);
}

TEST(firmware_slots, pieces_may_arrive_out_of_order)
{
    auto slots = with({});
    const auto fw = image("FWC.0   ", 48);
    EXPECT_EQ(slots.download(8, piece(fw, 32, 16)), success);
    EXPECT_EQ(slots.download(4, piece(fw, 16, 16)), success);
    EXPECT_EQ(slots.download(0, piece(fw, 0, 16)), success); // offset 0 not yet held: no restart
    EXPECT_EQ(slots.downloaded_image().size(), 48U);
    EXPECT_TRUE(std::equal(fw.begin(), fw.end(), slots.downloaded_image().begin()));
    expect_result(slots.commit(2, action::replace), success, 2);
    EXPECT_EQ(slots.slot_revision(2), "FWC.0");
}

TEST(firmware_slots, an_image_with_a_gap_is_invalid)
{
    auto slots = with({});
    const auto fw = image("FWD.0   ", 48);
    ASSERT_EQ(slots.download(0, piece(fw, 0, 16)), success);
    ASSERT_EQ(slots.download(8, piece(fw, 32, 16)), success);
    expect_result(slots.commit(2, action::replace), invalid_image, 0);
    ASSERT_EQ(slots.download(4, piece(fw, 16, 16)), success);
    expect_result(slots.commit(2, action::replace), success, 2);
}

TEST(firmware_slots, overlapping_pieces_are_rejected_and_offset_0_restarts)
{
    auto slots = with({});
    const auto fw = image("FWE.0   ", 64);
    ASSERT_EQ(slots.download(0, piece(fw, 0, 32)), success);
    EXPECT_EQ(slots.download(4, piece(fw, 16, 16)), overlapping);
    EXPECT_EQ(slots.download(7, piece(fw, 28, 8)), overlapping);
    EXPECT_EQ(slots.downloaded_image().size(), 32U);
    EXPECT_EQ(slots.download(8, piece(fw, 32, 32)), success);
    EXPECT_EQ(slots.downloaded_image().size(), 64U);
    const auto other = image("FWF.0   ", 16);
    EXPECT_EQ(slots.download(0, other), success); // restart
    EXPECT_EQ(slots.downloaded_image().size(), 16U);
    expect_result(slots.commit(2, action::replace), success, 2);
    EXPECT_EQ(slots.slot_revision(2), "FWF.0");
}

TEST(firmware_slots, granularity_applies_to_offset_and_length_except_a_short_last_piece)
{
    auto slots = with({.update_granularity = 1}); // 4 KiB
    const auto fw = image("FWG.0   ", 3 * 4096 + 512);
    EXPECT_EQ(slots.download(256, piece(fw, 1024, 4096)), invalid_field); // offset 1 KiB
    EXPECT_EQ(slots.download(3072, piece(fw, 3 * 4096, 512)), success);   // short last piece
    EXPECT_EQ(slots.download(1024, piece(fw, 4096, 512)), invalid_field); // second short piece
    EXPECT_EQ(slots.download(4096, piece(fw, 0, 4096)), invalid_field);   // past the short last piece
    EXPECT_EQ(slots.download(0, piece(fw, 0, 8192)), success);            // offset 0 not held: no restart
    EXPECT_EQ(slots.download(2048, piece(fw, 8192, 4096)), success);
    expect_result(slots.commit(2, action::replace), success, 2);
    EXPECT_EQ(slots.slot_revision(2), "FWG.0");
}

TEST(firmware_slots, a_short_piece_must_not_come_before_data)
{
    auto slots = with({.update_granularity = 1});
    const auto fw = image("FWH.0   ", 3 * 4096);
    ASSERT_EQ(slots.download(2048, piece(fw, 8192, 4096)), success);
    EXPECT_EQ(slots.download(0, piece(fw, 0, 512)), invalid_field);
}

TEST(firmware_slots, fwug_ffh_means_no_restriction)
{
    auto slots = with({.update_granularity = 0xff});
    const auto fw = image("FWI.0   ", 24);
    EXPECT_EQ(slots.download(1, piece(fw, 4, 12)), success);
    EXPECT_EQ(slots.download(0, piece(fw, 0, 4)), success);
    EXPECT_EQ(slots.download(4, piece(fw, 16, 8)), success);
    expect_result(slots.commit(2, action::replace), success, 2);
}

TEST(firmware_slots, an_image_past_the_maximum_is_invalid_field)
{
    auto slots = with({.max_image_bytes = 64});
    const auto fw = image("FWJ.0   ", 68);
    EXPECT_EQ(slots.download(0, fw), invalid_field);
    EXPECT_EQ(slots.download(16, piece(fw, 0, 8)), invalid_field);
    EXPECT_EQ(slots.download(0xffff'ffffU, piece(fw, 0, 4)), invalid_field);
    EXPECT_EQ(slots.download(15, piece(fw, 60, 4)), success);
    EXPECT_EQ(slots.downloaded_image().size(), 64U);
}

TEST(firmware_slots, check_download_validates_a_decoded_command_before_the_transfer)
{
    auto slots = with({.max_image_bytes = 64});
    spec::submission_queue_entry entry{};
    entry.cdw10 = 0xffff'ffffU; // NUMD: 2^32 dwords
    entry.cdw11 = 0;
    EXPECT_EQ(slots.check_download(spec::firmware_image_download_view::decode(entry)), invalid_field);
    entry.cdw10 = 3; // 16 bytes
    entry.cdw11 = 4;
    EXPECT_EQ(slots.check_download(spec::firmware_image_download_view::decode(entry)), success);
    ASSERT_EQ(slots.download(4, piece(image("FWK.0   "), 0, 16)), success);
    EXPECT_EQ(slots.check_download(spec::firmware_image_download_view::decode(entry)), overlapping);
}

TEST(firmware_slots, slot_0_lets_the_controller_choose)
{
    auto slots = with({.slot_count = 3});
    ASSERT_EQ(slots.download(0, image("FWL.0   ")), success);
    expect_result(slots.commit(0, action::replace), success, 2); // lowest empty, not active
    ASSERT_EQ(slots.download(0, image("FWM.0   ")), success);
    expect_result(slots.commit(0, action::replace), success, 3);
    ASSERT_EQ(slots.download(0, image("FWN.0   ")), success);
    expect_result(slots.commit(0, action::replace), success, 2); // none empty: lowest writable
    EXPECT_EQ(slots.slot_revision(2), "FWN.0");
    expect_result(slots.commit(0, action::activate_on_reset), success, 2); // most recently replaced
    EXPECT_EQ(slots.pending_slot(), 2U);
}

TEST(firmware_slots, slot_0_fails_when_no_slot_qualifies)
{
    auto single = with({.slot_count = 1});
    ASSERT_EQ(single.download(0, image("FWO.0   ")), success);
    expect_result(single.commit(0, action::replace), invalid_slot, 0);
    expect_result(single.commit(0, action::activate_on_reset), invalid_slot, 0);
    auto read_only = with({.slot_count = 2, .slot1_read_only = true});
    ASSERT_EQ(read_only.download(0, image("FWP.0   ")), success);
    expect_result(read_only.commit(0, action::replace), success, 2);
}

TEST(firmware_slots, a_reset_discards_an_uncommitted_download)
{
    auto slots = with({});
    ASSERT_EQ(slots.download(0, image("FWQ.0   ")), success);
    EXPECT_FALSE(slots.on_controller_reset());
    EXPECT_EQ(slots.downloaded_image().size(), 0U);
    expect_result(slots.commit(2, action::replace), invalid_image, 0);
    EXPECT_EQ(slots.download(0, image("FWQ.0   ")), success);
}

TEST(firmware_slots, commit_view_decodes_fs_and_ca)
{
    auto slots = with({});
    ASSERT_EQ(slots.download(0, image("FWR.0   ")), success);
    spec::submission_queue_entry entry{};
    entry.cdw10 = (0b001U << 3) | 2U; // CA 001b, FS 2
    expect_result(slots.commit(spec::firmware_commit_view::decode(entry)), success, 2);
    EXPECT_EQ(slots.pending_slot(), 2U);
}

TEST(firmware_slots, download_takes_a_decoded_command)
{
    auto slots = with({});
    const auto fw = image("FWS.0   ", 32);
    spec::submission_queue_entry entry{};
    entry.cdw10 = 3; // NUMD: 4 dwords
    entry.cdw11 = 4; // OFST: dword 4, byte 16
    EXPECT_EQ(slots.download(spec::firmware_image_download_view::decode(entry), piece(fw, 16, 16)), success);
    entry.cdw11 = 0;
    EXPECT_EQ(slots.download(spec::firmware_image_download_view::decode(entry), piece(fw, 0, 16)), success);
    EXPECT_EQ(slots.downloaded_image().size(), 32U);
    expect_result(slots.commit(2, action::replace), success, 2);
    EXPECT_EQ(slots.attributes(), slots.frmw());
}

namespace {
// clang-format off
template <typename Offset>
concept downloadable_offset = requires(firmware_slots slots, Offset offset, std::span<const std::byte> data) {
    slots.download(offset, data);
};
// clang-format on
} // namespace

TEST(firmware_slots, a_64_bit_offset_does_not_compile)
{
    static_assert(downloadable_offset<std::uint32_t>);
    static_assert(downloadable_offset<int>);
    static_assert(!downloadable_offset<std::uint64_t>);
    static_assert(!downloadable_offset<std::size_t>);
}
