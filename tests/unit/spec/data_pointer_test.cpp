#include <nvmekit/spec/data_pointer.hpp>

#include <array>
#include <bit>
#include <cstdint>
#include <limits>

#include <gtest/gtest.h>

namespace spec = nvmekit::spec;

namespace {

using descriptor_bytes = std::array<std::uint8_t, 16>;

descriptor_bytes bytes_of(const spec::sgl_descriptor& descriptor)
{
    return std::bit_cast<descriptor_bytes>(descriptor);
}

} // namespace

TEST(prp_entry, splits_page_base_and_offset_for_the_page_size)
{
    const spec::prp_entry entry{0x1234'5678'9abcULL};
    EXPECT_EQ(entry.offset(4096), 0xabcU);
    EXPECT_EQ(entry.page_base(4096), 0x1234'5678'9000ULL);
    EXPECT_EQ(entry.offset(8192), 0x1abcU);
    EXPECT_EQ(entry.page_base(8192), 0x1234'5678'8000ULL);
    EXPECT_TRUE(entry.is_dword_aligned());
    EXPECT_FALSE(entry.is_qword_aligned());
    EXPECT_FALSE(entry.is_page_aligned(4096));
    EXPECT_TRUE(spec::prp_entry{0x2000}.is_page_aligned(8192));
    EXPECT_FALSE(spec::prp_entry{0x3000}.is_page_aligned(8192));
}

TEST(prp_entry, dword_alignment_is_bits_1_0_clear)
{
    EXPECT_FALSE(spec::prp_entry{0x1002}.is_dword_aligned());
    EXPECT_FALSE(spec::prp_entry{0x1001}.is_dword_aligned());
    EXPECT_TRUE(spec::prp_entry{0x1004}.is_dword_aligned());
    EXPECT_FALSE(spec::prp_entry{0x1004}.is_qword_aligned());
    EXPECT_TRUE(spec::prp_entry{0x1008}.is_qword_aligned());
}

TEST(prp, valid_page_sizes_are_powers_of_two_from_4k_to_128m)
{
    EXPECT_TRUE(spec::is_valid_prp_page_size(4096));
    EXPECT_TRUE(spec::is_valid_prp_page_size(std::uint64_t{1} << 27));
    EXPECT_FALSE(spec::is_valid_prp_page_size(2048));
    EXPECT_FALSE(spec::is_valid_prp_page_size(std::uint64_t{1} << 28));
    EXPECT_FALSE(spec::is_valid_prp_page_size(12288));
    EXPECT_EQ(spec::prp_list_entries_per_page(4096), 512U);
    EXPECT_EQ(spec::prp_list_entries_per_page(65536), 8192U);
}

TEST(prp, entry_count_counts_the_pages_a_transfer_touches)
{
    constexpr std::uint64_t page = 4096;
    EXPECT_EQ(spec::prp_entry_count(spec::prp_entry{0x1000}, 0, page), 0U);
    EXPECT_EQ(spec::prp_entry_count(spec::prp_entry{0x1000}, 1, page), 1U);
    EXPECT_EQ(spec::prp_entry_count(spec::prp_entry{0x1000}, 4096, page), 1U);
    EXPECT_EQ(spec::prp_entry_count(spec::prp_entry{0x1000}, 4097, page), 2U);
    EXPECT_EQ(spec::prp_entry_count(spec::prp_entry{0x1800}, 4096, page), 2U);
    EXPECT_EQ(spec::prp_entry_count(spec::prp_entry{0x1ffc}, 8, page), 2U);
    EXPECT_EQ(spec::prp_entry_count(spec::prp_entry{0x1000}, 8193, page), 3U);
    EXPECT_EQ(spec::prp_entry_count(spec::prp_entry{0x1004}, 65536, page), 17U);
    // No overflow for a hostile length.
    EXPECT_EQ(spec::prp_entry_count(spec::prp_entry{0}, std::numeric_limits<std::uint64_t>::max(), page),
              std::uint64_t{1} << 52);
    static_assert(spec::prp_entry_count(spec::prp_entry{0x200}, 8192, 8192) == 2);
}

TEST(prp, prp2_role_follows_the_page_boundaries_crossed)
{
    constexpr std::uint64_t page = 4096;
    using role = spec::prp2_role;
    EXPECT_EQ(spec::prp2_role_for(spec::prp_entry{0x1000}, 4096, page), role::unused);
    EXPECT_EQ(spec::prp2_role_for(spec::prp_entry{0x1000}, 0, page), role::unused);
    // One page at a non-zero offset crosses one boundary.
    EXPECT_EQ(spec::prp2_role_for(spec::prp_entry{0x1200}, 4096, page), role::data_page);
    EXPECT_EQ(spec::prp2_role_for(spec::prp_entry{0x1000}, 8192, page), role::data_page);
    EXPECT_EQ(spec::prp2_role_for(spec::prp_entry{0x1000}, 8193, page), role::list_pointer);
    EXPECT_EQ(spec::prp2_role_for(spec::prp_entry{0x1800}, 8192, page), role::list_pointer);
    EXPECT_TRUE(spec::prp2_is_list_pointer(spec::prp_entry{0x1800}, 8192, page));
    EXPECT_FALSE(spec::prp2_is_list_pointer(spec::prp_entry{0x1000}, 8192, page));
}

TEST(prp, list_supplies_every_page_after_the_first)
{
    constexpr std::uint64_t page = 4096;
    EXPECT_EQ(spec::prp_list_data_entry_count(spec::prp_entry{0x1000}, 65536, page), 15U);
    EXPECT_EQ(spec::prp_list_data_entry_count(spec::prp_entry{0x1000}, 8192, page), 0U);
    EXPECT_EQ(spec::prp_list_data_entry_count(spec::prp_entry{0x1000}, 4096, page), 0U);
    EXPECT_EQ(spec::prp_list_data_entry_count(spec::prp_entry{0x1800}, 8192, page), 2U);
}

TEST(sgl_descriptor, identifier_holds_type_in_high_nibble_and_subtype_in_low)
{
    EXPECT_EQ(spec::sgl_descriptor::data_block(0x1000, 4096).identifier.raw, 0x00);
    EXPECT_EQ(spec::sgl_descriptor::bit_bucket(512).identifier.raw, 0x10);
    EXPECT_EQ(spec::sgl_descriptor::segment(0x2000, 64).identifier.raw, 0x20);
    EXPECT_EQ(spec::sgl_descriptor::last_segment(0x2000, 48).identifier.raw, 0x30);
    EXPECT_EQ(spec::sgl_descriptor::data_block(0, 512, spec::sgl_descriptor_subtype::offset).identifier.raw,
              0x01);
    EXPECT_EQ(spec::sgl_descriptor::transport_data_block(4096, static_cast<spec::sgl_descriptor_subtype>(0xa))
                  .identifier.raw,
              0x5a);
    EXPECT_EQ(spec::sgl_descriptor::keyed_data_block(0, 1, 2, static_cast<spec::sgl_descriptor_subtype>(0xf))
                  .identifier.raw,
              0x4f);

    const spec::sgl_descriptor parsed{0, 0, {}, spec::sgl_identifier{0x31}};
    EXPECT_EQ(parsed.type(), spec::sgl_descriptor_type::last_segment);
    EXPECT_EQ(parsed.subtype(), spec::sgl_descriptor_subtype::offset);
}

TEST(sgl_descriptor, data_block_bytes_follow_the_spec_layout)
{
    const auto bytes = bytes_of(spec::sgl_descriptor::data_block(0x1122'3344'5566'7788ULL, 0x0000'1000));
    const descriptor_bytes expected{0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11,
                                    0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
    EXPECT_EQ(bytes, expected);
}

TEST(sgl_descriptor, bit_bucket_and_transport_block_leave_the_address_zero)
{
    const auto bucket = spec::sgl_descriptor::bit_bucket(0x200);
    EXPECT_EQ(bucket.address, 0U);
    EXPECT_EQ(bucket.length, 0x200U);
    EXPECT_EQ(bucket.type(), spec::sgl_descriptor_type::bit_bucket);
    const auto transport =
        spec::sgl_descriptor::transport_data_block(0x3000, static_cast<spec::sgl_descriptor_subtype>(0xa));
    EXPECT_EQ(transport.address, 0U);
    EXPECT_EQ(transport.length, 0x3000U);
    EXPECT_TRUE(spec::is_transport_specific(transport.subtype()));
}

TEST(sgl_descriptor, keyed_data_block_packs_3_byte_length_and_4_byte_key)
{
    const auto keyed = spec::sgl_descriptor::keyed_data_block(0x1000, 0x12'3456, 0xaabb'ccdd);
    const descriptor_bytes expected{0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                                    0x56, 0x34, 0x12, 0xdd, 0xcc, 0xbb, 0xaa, 0x40};
    EXPECT_EQ(bytes_of(keyed), expected);
    EXPECT_EQ(keyed.keyed_length(), 0x12'3456U);
    EXPECT_EQ(keyed.key(), 0xaabb'ccddU);
    EXPECT_EQ(keyed.type(), spec::sgl_descriptor_type::keyed_data_block);

    const auto truncated = spec::sgl_descriptor::keyed_data_block(0, 0x0112'3456, 0x01);
    EXPECT_EQ(truncated.keyed_length(), 0x12'3456U);
    EXPECT_EQ(truncated.key(), 0x01U);
}

TEST(sgl_descriptor, converts_to_and_from_the_sqe_data_pointer)
{
    const auto segment = spec::sgl_descriptor::last_segment(0xdead'b000ULL, 48);
    const spec::data_pointer pointer = spec::to_data_pointer(segment);
    EXPECT_EQ(pointer.prp1, 0xdead'b000ULL);
    EXPECT_EQ(pointer.prp2, (std::uint64_t{0x30} << 56) | 48U);
    EXPECT_EQ(spec::to_sgl_descriptor(pointer), segment);

    spec::submission_queue_entry entry{};
    entry.dptr = spec::to_data_pointer(spec::sgl_descriptor::data_block(0x4000, 512));
    const auto read_back = spec::to_sgl_descriptor(entry.dptr);
    EXPECT_EQ(read_back.type(), spec::sgl_descriptor_type::data_block);
    EXPECT_EQ(read_back.address, 0x4000U);
    EXPECT_EQ(read_back.length, 512U);
    static_assert(
        spec::to_sgl_descriptor(spec::to_data_pointer(spec::sgl_descriptor::bit_bucket(8))).length == 8);
}

TEST(sgl_descriptor, segment_length_is_a_non_zero_multiple_of_16)
{
    EXPECT_EQ(spec::sgl_descriptor_size, 16U);
    EXPECT_TRUE(spec::is_valid_sgl_segment_length(16));
    EXPECT_TRUE(spec::is_valid_sgl_segment_length(4096));
    EXPECT_FALSE(spec::is_valid_sgl_segment_length(0));
    EXPECT_FALSE(spec::is_valid_sgl_segment_length(24));
    EXPECT_FALSE(spec::is_valid_sgl_segment_length(8));
    EXPECT_EQ(spec::sgl_segment_descriptor_count(48), 3U);
    EXPECT_EQ(spec::sgl_segment_descriptor_count(4096), 256U);
}

TEST(sgl_descriptor, classifies_descriptor_types)
{
    using type = spec::sgl_descriptor_type;
    EXPECT_TRUE(spec::is_segment_pointer(type::segment));
    EXPECT_TRUE(spec::is_segment_pointer(type::last_segment));
    EXPECT_FALSE(spec::is_segment_pointer(type::data_block));
    EXPECT_TRUE(spec::is_data_descriptor(type::data_block));
    EXPECT_TRUE(spec::is_data_descriptor(type::bit_bucket));
    EXPECT_TRUE(spec::is_data_descriptor(type::keyed_data_block));
    EXPECT_TRUE(spec::is_data_descriptor(type::transport_data_block));
    EXPECT_FALSE(spec::is_data_descriptor(type::segment));
    EXPECT_FALSE(spec::is_data_descriptor(type::vendor_specific));
}

TEST(sgl_descriptor, names_types_and_subtypes)
{
    EXPECT_EQ(spec::name(spec::sgl_descriptor_type::keyed_data_block), "KEYED_DATA_BLOCK");
    EXPECT_EQ(spec::name(spec::sgl_descriptor_type::transport_data_block), "TRANSPORT_DATA_BLOCK");
    EXPECT_EQ(spec::name(spec::sgl_descriptor_type::vendor_specific), "VENDOR_SPECIFIC");
    EXPECT_TRUE(spec::name(static_cast<spec::sgl_descriptor_type>(0x6)).empty());
    EXPECT_EQ(spec::name(spec::sgl_descriptor_subtype::offset), "OFFSET");
    EXPECT_EQ(spec::name(static_cast<spec::sgl_descriptor_subtype>(0xa)), "TRANSPORT_SPECIFIC");
    EXPECT_EQ(spec::name(static_cast<spec::sgl_descriptor_subtype>(0xf)), "TRANSPORT_SPECIFIC");
    EXPECT_TRUE(spec::name(static_cast<spec::sgl_descriptor_subtype>(0x9)).empty());
    EXPECT_FALSE(spec::is_transport_specific(static_cast<spec::sgl_descriptor_subtype>(0x9)));
    EXPECT_FALSE(spec::is_transport_specific(spec::sgl_descriptor_subtype::offset));
}
