#include <nvmekit/spec/commands.hpp>

#include <array>
#include <cstdint>

#include <gtest/gtest.h>

#include "../wire_bytes.hpp"

namespace spec = nvmekit::spec;
using nvmekit_test::bytes_of;

namespace {

constexpr std::uint32_t stale = 0xdeadbeef;

/// An entry whose CDW0, NSID, CDW2, CDW3, MPTR and DPTR hold marker values, and whose command
/// dwords hold stale bits an encoder must clear.
constexpr spec::submission_queue_entry stale_entry() noexcept
{
    spec::submission_queue_entry entry{};
    entry.cdw0.set(spec::command_dword0::opc, 0x5a).set(spec::command_dword0::cid, 0x1234);
    entry.nsid = 0x11;
    entry.cdw2 = 0x22;
    entry.cdw3 = 0x33;
    entry.mptr = 0x44;
    entry.dptr = {.prp1 = 0x55, .prp2 = 0x66};
    entry.cdw10 = entry.cdw11 = entry.cdw12 = entry.cdw13 = entry.cdw14 = entry.cdw15 = stale;
    return entry;
}

using dwords = std::array<std::uint32_t, 6>;

dwords command_dwords(const spec::submission_queue_entry& entry)
{
    return {entry.cdw10, entry.cdw11, entry.cdw12, entry.cdw13, entry.cdw14, entry.cdw15};
}

/// Encodes `view` over a stale entry, checks CDW10..CDW15 are `expected` and that the rest of the
/// entry is untouched, then checks that decoding gives `view` back.
template <typename View>
void expect_round_trip(const View& view, const dwords& expected)
{
    spec::submission_queue_entry entry = stale_entry();
    view.encode(entry);
    EXPECT_EQ(command_dwords(entry), expected);

    spec::submission_queue_entry header = stale_entry();
    header.cdw10 = entry.cdw10;
    header.cdw11 = entry.cdw11;
    header.cdw12 = entry.cdw12;
    header.cdw13 = entry.cdw13;
    header.cdw14 = entry.cdw14;
    header.cdw15 = entry.cdw15;
    EXPECT_EQ(entry, header) << "encode wrote outside CDW10..CDW15";

    EXPECT_TRUE(View::decode(entry) == view);
}

spec::submission_queue_entry with_dwords(const dwords& values)
{
    spec::submission_queue_entry entry{};
    entry.cdw10 = values[0];
    entry.cdw11 = values[1];
    entry.cdw12 = values[2];
    entry.cdw13 = values[3];
    entry.cdw14 = values[4];
    entry.cdw15 = values[5];
    return entry;
}

constexpr spec::submission_queue_entry encoded_read() noexcept
{
    spec::submission_queue_entry entry{};
    spec::read_view{.starting_lba = 0x10, .block_count = 8}.encode(entry);
    return entry;
}
static_assert(encoded_read().cdw12 == 7, "NLB is 0-based");
static_assert(spec::read_view::decode(encoded_read()).block_count == 8,
              "views decode in constant expressions");

} // namespace

TEST(commands, delete_io_sq_puts_qid_in_cdw10_bits_15_00)
{
    expect_round_trip(spec::delete_io_sq_view{.queue_id = 0x1234}, {0x00001234, 0, 0, 0, 0, 0});
}

TEST(commands, create_io_sq_encodes_qsize_0_based_and_qprio_in_bits_02_01)
{
    expect_round_trip(spec::create_io_sq_view{.queue_id = 3,
                                              .queue_size = 256,
                                              .physically_contiguous = true,
                                              .priority = spec::queue_priority::high,
                                              .cq_id = 2,
                                              .nvm_set_id = 5},
                      {0x00ff0003, 0x00020003, 0x00000005, 0, 0, 0});
    expect_round_trip(spec::create_io_sq_view{.queue_id = 1, .queue_size = 65536, .cq_id = 0xffff},
                      {0xffff0001, 0xffff0000, 0, 0, 0, 0});

    const auto low = spec::create_io_sq_view::decode(with_dwords({0, 0x00000006, 0, 0, 0, 0}));
    EXPECT_EQ(low.priority, spec::queue_priority::low);
    EXPECT_FALSE(low.physically_contiguous);
    EXPECT_EQ(low.queue_size, 1U);
}

TEST(commands, get_log_page_splits_numd_and_offset_over_two_dwords)
{
    expect_round_trip(spec::get_log_page_view{.log_page_id = spec::log_page_id::smart_health,
                                              .log_specific_field = 0x45,
                                              .retain_async_event = true,
                                              .dword_count = 0x12346,
                                              .log_specific_id = 0xbeef,
                                              .offset = 0x1'0000'0200,
                                              .uuid_index = 0x55,
                                              .offset_is_index = true,
                                              .command_set_id = spec::command_set_identifier::zoned},
                      {0x2345c502, 0xbeef0001, 0x00000200, 0x00000001, 0x02800055, 0});
    // SMART / Health Information: 512 bytes are 128 dwords, NUMDL 127.
    expect_round_trip(
        spec::get_log_page_view{.log_page_id = spec::log_page_id::smart_health, .dword_count = 128},
        {0x007f0002, 0, 0, 0, 0, 0});
}

TEST(commands, get_log_page_dword_count_holds_the_largest_numd)
{
    const auto view = spec::get_log_page_view::decode(with_dwords({0xffff0000, 0x0000ffff, 0, 0, 0, 0}));
    EXPECT_EQ(view.dword_count, 0x1'0000'0000U);
    EXPECT_EQ(view.byte_count(), 0x4'0000'0000U);
    expect_round_trip(view, {0xffff0000, 0x0000ffff, 0, 0, 0, 0});
}

TEST(commands, delete_io_cq_puts_qid_in_cdw10_bits_15_00)
{
    expect_round_trip(spec::delete_io_cq_view{.queue_id = 7}, {7, 0, 0, 0, 0, 0});
}

TEST(commands, create_io_cq_encodes_pc_ien_and_iv)
{
    expect_round_trip(spec::create_io_cq_view{.queue_id = 1,
                                              .queue_size = 1024,
                                              .physically_contiguous = true,
                                              .interrupts_enabled = true,
                                              .interrupt_vector = 0x21},
                      {0x03ff0001, 0x00210003, 0, 0, 0, 0});
    const auto polled = spec::create_io_cq_view::decode(with_dwords({0x00010002, 0x00000001, 0, 0, 0, 0}));
    EXPECT_FALSE(polled.interrupts_enabled);
    EXPECT_TRUE(polled.physically_contiguous);
    EXPECT_EQ(polled.queue_size, 2U);
}

TEST(commands, identify_encodes_cns_cntid_csi_and_uuid_index)
{
    expect_round_trip(spec::identify_view{.cns = spec::cns::io_command_set_controller,
                                          .controller_id = 0x0102,
                                          .cns_specific_id = 0x0304,
                                          .command_set_id = spec::command_set_identifier::zoned,
                                          .uuid_index = 0x7f},
                      {0x01020006, 0x02000304, 0, 0, 0x0000007f, 0});
}

TEST(commands, abort_names_the_queue_and_command_to_abort)
{
    expect_round_trip(spec::abort_view{.sq_id = 3, .command_id = 0xabcd}, {0xabcd0003, 0, 0, 0, 0, 0});
}

TEST(commands, set_features_keeps_feature_dwords_raw)
{
    expect_round_trip(spec::set_features_view{.feature_id = spec::feature_id::number_of_queues,
                                              .save = true,
                                              .cdw11 = 0x00030003,
                                              .cdw12 = 0x1212,
                                              .cdw13 = 0x1313,
                                              .cdw15 = 0x1515,
                                              .uuid_index = 0x0a},
                      {0x80000007, 0x00030003, 0x1212, 0x1313, 0x0000000a, 0x1515});
}

TEST(commands, get_features_encodes_select_in_bits_10_08)
{
    expect_round_trip(spec::get_features_view{.feature_id = spec::feature_id::async_event_configuration,
                                              .select = spec::feature_select::supported_capabilities,
                                              .cdw11 = 1,
                                              .uuid_index = 3},
                      {0x0000030b, 1, 0, 0, 3, 0});
    EXPECT_EQ(spec::get_features_view::decode(with_dwords({0x00000207, 0, 0, 0, 0, 0})).select,
              spec::feature_select::saved);
}

TEST(commands, typed_identifiers_decode_and_encode_any_raw_value)
{
    const auto identify = spec::identify_view::decode(with_dwords({0x000000ff, 0xff000000, 0, 0, 0, 0}));
    EXPECT_EQ(static_cast<unsigned>(identify.cns), 0xffU);
    EXPECT_EQ(static_cast<unsigned>(identify.command_set_id), 0xffU);
    expect_round_trip(identify, {0x000000ff, 0xff000000, 0, 0, 0, 0});

    const auto vendor_log =
        spec::get_log_page_view::decode(with_dwords({0x000000c1, 0, 0, 0, 0x03000000, 0}));
    EXPECT_TRUE(spec::is_vendor_specific(vendor_log.log_page_id));
    EXPECT_EQ(static_cast<unsigned>(vendor_log.log_page_id), 0xc1U);
    EXPECT_EQ(static_cast<unsigned>(vendor_log.command_set_id), 0x03U);
    expect_round_trip(vendor_log, {0x000000c1, 0, 0, 0, 0x03000000, 0});

    expect_round_trip(spec::set_features_view{.feature_id = static_cast<spec::feature_id>(0xc0)},
                      {0x000000c0, 0, 0, 0, 0, 0});
    const auto reserved_select = spec::get_features_view::decode(with_dwords({0x000007ff, 0, 0, 0, 0, 0}));
    EXPECT_EQ(static_cast<unsigned>(reserved_select.feature_id), 0xffU);
    EXPECT_EQ(static_cast<unsigned>(reserved_select.select), 0x7U);
    expect_round_trip(reserved_select, {0x000007ff, 0, 0, 0, 0, 0});
}

TEST(commands, commands_without_dwords_clear_them)
{
    expect_round_trip(spec::async_event_request_view{}, {0, 0, 0, 0, 0, 0});
    expect_round_trip(spec::keep_alive_view{}, {0, 0, 0, 0, 0, 0});
    expect_round_trip(spec::flush_view{}, {0, 0, 0, 0, 0, 0});
}

TEST(commands, namespace_management_encodes_sel_and_csi)
{
    expect_round_trip(spec::namespace_management_view{.select = spec::namespace_management_select::remove,
                                                      .command_set_id = spec::command_set_identifier::zoned},
                      {1, 0x02000000, 0, 0, 0, 0});
}

TEST(commands, firmware_commit_encodes_slot_action_and_boot_partition)
{
    expect_round_trip(
        spec::firmware_commit_view{.slot = 5,
                                   .action = spec::firmware_commit_action::replace_and_activate_now,
                                   .boot_partition_id = 1},
        {0x8000001d, 0, 0, 0, 0, 0});
    EXPECT_EQ(spec::firmware_commit_view::decode(with_dwords({0x30, 0, 0, 0, 0, 0})).action,
              spec::firmware_commit_action::replace_boot_partition);
}

TEST(commands, firmware_image_download_counts_dwords_and_offsets_bytes)
{
    const spec::firmware_image_download_view view{.dword_count = 0x400, .offset_bytes = 0x2000};
    EXPECT_EQ(view.byte_count(), 0x1000U);
    expect_round_trip(view, {0x3ff, 0x800, 0, 0, 0, 0});
    const auto largest =
        spec::firmware_image_download_view::decode(with_dwords({0xffffffff, 0xffffffff, 0, 0, 0, 0}));
    EXPECT_EQ(largest.dword_count, 0x1'0000'0000U);
    EXPECT_EQ(largest.offset_bytes, 0x3'ffff'fffcU);
}

TEST(commands, namespace_attachment_detach_is_sel_1)
{
    expect_round_trip(spec::namespace_attachment_view{.select = spec::namespace_attachment_select::detach},
                      {1, 0, 0, 0, 0, 0});
}

TEST(commands, get_lba_status_splits_slba_and_keeps_mndw_0_based)
{
    expect_round_trip(spec::get_lba_status_view{.starting_lba = 0x1'2345'6789,
                                                .dword_count = 6,
                                                .range_length = 0x42,
                                                .action = spec::lba_status_action::tracked},
                      {0x2345'6789, 0x1, 5, 0x1100'0042, 0, 0});
    EXPECT_EQ((spec::get_lba_status_view{.dword_count = 6}.byte_count()), 24U);
}

TEST(commands, doorbell_buffer_config_reads_and_writes_dptr)
{
    spec::submission_queue_entry entry = stale_entry();
    spec::doorbell_buffer_config_view{.shadow_doorbell_address = 0x1000, .eventidx_address = 0x2000}.encode(
        entry);
    EXPECT_EQ(entry.dptr.prp1, 0x1000U);
    EXPECT_EQ(entry.dptr.prp2, 0x2000U);
    EXPECT_EQ(command_dwords(entry), (dwords{0, 0, 0, 0, 0, 0}));
    EXPECT_EQ(entry.nsid, 0x11U);
    EXPECT_EQ(entry.mptr, 0x44U);
    EXPECT_EQ(entry.command_id(), 0x1234);

    const auto view = spec::doorbell_buffer_config_view::decode(entry);
    EXPECT_EQ(view.shadow_doorbell_address, 0x1000U);
    EXPECT_EQ(view.eventidx_address, 0x2000U);
}

TEST(commands, format_nvm_splits_the_format_index_over_lbafl_and_lbafu)
{
    expect_round_trip(spec::format_nvm_view{.format_index = 0x25,
                                            .metadata_in_extended_lba = true,
                                            .protection_type = spec::format_protection_type::type3,
                                            .protection_info_first = true,
                                            .secure_erase = spec::format_secure_erase::cryptographic_erase},
                      {0x00002575, 0, 0, 0, 0, 0});
    EXPECT_EQ(spec::format_nvm_cdw10{0x0000300f}.format_index(), 63);
    EXPECT_EQ(spec::format_nvm_cdw10{}.set_format_index(16).raw, 0x00001000U);
}

TEST(commands, read_encodes_slba_nlb_flags_hints_and_expected_tags)
{
    const auto prinfo = spec::protection_info_flags{}
                            .with(spec::protection_info_flags::pract, true)
                            .with(spec::protection_info_flags::prchk_guard, true);
    const auto hints = spec::dsm_hints{}
                           .with(spec::dsm_hints::access_frequency,
                                 spec::dsm_access_frequency::frequent_writes_frequent_reads)
                           .with(spec::dsm_hints::access_latency, spec::dsm_access_latency::low)
                           .with(spec::dsm_hints::sequential_request, true)
                           .with(spec::dsm_hints::incompressible, true);
    EXPECT_EQ(prinfo.raw, 0xc);
    EXPECT_EQ(hints.raw, 0xf5);
    expect_round_trip(spec::read_view{.starting_lba = 0x1'2345'6789,
                                      .block_count = 8,
                                      .storage_tag_check = true,
                                      .prinfo = prinfo,
                                      .force_unit_access = true,
                                      .limited_retry = true,
                                      .dsm = hints,
                                      .reference_tag = 0xcafef00d,
                                      .app_tag = 0x1111,
                                      .app_tag_mask = 0xffff},
                      {0x23456789, 0x00000001, 0xf1000007, 0x000000f5, 0xcafef00d, 0xffff1111});
}

TEST(commands, read_ignores_write_only_bits)
{
    // DTYPE (23:20), DEAC (25) and DSPEC (CDW13 31:16) are not Read fields.
    const auto view = spec::read_view::decode(with_dwords({0, 0, 0x02f00003, 0xabcd0000, 0, 0}));
    EXPECT_TRUE(view == (spec::read_view{.block_count = 4}));
}

TEST(commands, write_encodes_directives_and_the_largest_nlb)
{
    expect_round_trip(
        spec::write_view{.starting_lba = 0x40,
                         .block_count = 65536,
                         .directive_type = 2,
                         .prinfo = spec::protection_info_flags{0x3},
                         .force_unit_access = true,
                         .dsm = spec::dsm_hints{}.with(spec::dsm_hints::access_frequency,
                                                       spec::dsm_access_frequency::one_time_read),
                         .directive_specific = 0x1234,
                         .reference_tag = 0x10,
                         .app_tag = 0x22,
                         .app_tag_mask = 0xff},
        {0x00000040, 0, 0x4c20ffff, 0x12340006, 0x10, 0x00ff0022});
}

TEST(commands, compare_and_verify_share_fields_but_not_cdw13)
{
    expect_round_trip(spec::compare_view{.starting_lba = 0x100,
                                         .block_count = 1,
                                         .storage_tag_check = true,
                                         .prinfo = spec::protection_info_flags{0x1},
                                         .limited_retry = true,
                                         .reference_tag = 0x11223344,
                                         .app_tag = 0x7788,
                                         .app_tag_mask = 0x5566},
                      {0x100, 0, 0x85000000, 0, 0x11223344, 0x55667788});
    expect_round_trip(spec::verify_view{.starting_lba = 0xffff'ffff'ffff'fff0,
                                        .block_count = 16,
                                        .force_unit_access = true},
                      {0xfffffff0, 0xffffffff, 0x4000000f, 0, 0, 0});
}

TEST(commands, write_uncorrectable_has_only_slba_and_nlb)
{
    expect_round_trip(spec::write_uncorrectable_view{.starting_lba = 0xabcdef, .block_count = 16},
                      {0x00abcdef, 0, 0x0000000f, 0, 0, 0});
}

TEST(commands, write_zeroes_encodes_deallocate_in_bit_25)
{
    expect_round_trip(spec::write_zeroes_view{.starting_lba = 0x2'0000'0000,
                                              .block_count = 256,
                                              .deallocate = true,
                                              .force_unit_access = true,
                                              .reference_tag = 9,
                                              .app_tag = 1,
                                              .app_tag_mask = 2},
                      {0, 2, 0x420000ff, 0, 9, 0x00020001});
}

TEST(commands, dataset_management_counts_ranges_1_based)
{
    expect_round_trip(
        spec::dataset_management_view{.range_count = 256, .integral_read = true, .deallocate = true},
        {0xff, 0x5, 0, 0, 0, 0});
    const auto one = spec::dataset_management_view::decode(with_dwords({0, 0x2, 0, 0, 0, 0}));
    EXPECT_EQ(one.range_count, 1);
    EXPECT_TRUE(one.integral_write);
    EXPECT_FALSE(one.deallocate);
}

TEST(commands, dataset_management_range_is_16_little_endian_bytes)
{
    spec::dataset_management_range range{};
    range.context_attributes
        .set(spec::dsm_context_attributes::access_frequency,
             spec::dsm_access_frequency::infrequent_writes_infrequent_reads)
        .set(spec::dsm_context_attributes::access_latency, spec::dsm_access_latency::idle)
        .set(spec::dsm_context_attributes::sequential_read, true)
        .set(spec::dsm_context_attributes::write_prepare, true)
        .set(spec::dsm_context_attributes::command_access_size, 0x10);
    range.block_count = 8;
    range.starting_lba = 0x0102'0304'0506'0708;
    EXPECT_EQ(range.context_attributes.raw, 0x10000512U);
    const std::array<std::uint8_t, 16> expected{0x12, 0x05, 0x00, 0x10, 0x08, 0x00, 0x00, 0x00,
                                                0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01};
    EXPECT_EQ(bytes_of(range), expected);
}

TEST(commands, copy_encodes_both_prinfo_fields_and_the_descriptor_format)
{
    expect_round_trip(spec::copy_view{.destination_lba = 0x2'0000'0000,
                                      .range_count = 2,
                                      .descriptor_format = 1,
                                      .prinfo_read = spec::protection_info_flags{0x8},
                                      .directive_type = 2,
                                      .storage_tag_check_write = true,
                                      .prinfo_write = spec::protection_info_flags{0x4},
                                      .force_unit_access = true,
                                      .limited_retry = true,
                                      .directive_specific = 7,
                                      .reference_tag = 0x99,
                                      .app_tag = 1,
                                      .app_tag_mask = 2},
                      {0, 2, 0xd1208101, 0x00070000, 0x99, 0x00020001});
}

TEST(commands, copy_source_range_format_0_layout)
{
    spec::copy_source_range range{};
    range.starting_lba = 0x1122'3344'5566'7788;
    range.set_block_count(4);
    range.reference_tag = 0xa1a2a3a4;
    range.app_tag = 0xb1b2;
    range.app_tag_mask = 0xc1c2;
    EXPECT_EQ(range.nlb_raw, 3);
    EXPECT_EQ(range.block_count(), 4U);
    const std::array<std::uint8_t, 32> expected{
        0,    0,    0,    0,    0,    0,    0,    0,    // reserved
        0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, // SLBA
        0x03, 0x00, 0,    0,    0,    0,    0,    0,    // NLB 0-based, reserved
        0xa4, 0xa3, 0xa2, 0xa1, 0xb2, 0xb1, 0xc2, 0xc1, // ELBT, ELBAT, ELBATM
    };
    EXPECT_EQ(bytes_of(range), expected);
}

TEST(commands, command_refs_name_the_entry_without_copying_it)
{
    const spec::submission_queue_entry entry = stale_entry();
    EXPECT_EQ(&spec::admin_command{entry}.entry, &entry);
    EXPECT_EQ(&spec::io_command{entry}.entry, &entry);
}
