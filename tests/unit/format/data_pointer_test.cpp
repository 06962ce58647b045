#include <nvmekit/format/data_pointer.hpp>

#include <gtest/gtest.h>

namespace spec = nvmekit::spec;

TEST(format_data_pointer, prints_each_descriptor_type_with_its_fields)
{
    EXPECT_EQ(fmt::format("{}", spec::sgl_descriptor::data_block(0x1000, 4096)),
              "DATA_BLOCK addr=0x1000 len=4096");
    EXPECT_EQ(fmt::format("{}", spec::sgl_descriptor::bit_bucket(512)), "BIT_BUCKET len=512");
    EXPECT_EQ(fmt::format("{}", spec::sgl_descriptor::segment(0x7f00'0000'2000ULL, 4096)),
              "SEGMENT addr=0x7f0000002000 len=4096");
    EXPECT_EQ(fmt::format("{}", spec::sgl_descriptor::last_segment(0x2000, 48)),
              "LAST_SEGMENT addr=0x2000 len=48");
    EXPECT_EQ(fmt::format("{}", spec::sgl_descriptor::keyed_data_block(0x3000, 8192, 0x1234'5678)),
              "KEYED_DATA_BLOCK addr=0x3000 len=8192 key=0x12345678");
}

TEST(format_data_pointer, prints_subtype_when_not_address)
{
    EXPECT_EQ(
        fmt::format("{}", spec::sgl_descriptor::data_block(0, 512, spec::sgl_descriptor_subtype::offset)),
        "DATA_BLOCK addr=0x0 len=512 subtype=OFFSET");
    EXPECT_EQ(fmt::format("{}", spec::sgl_descriptor::transport_data_block(
                                    4096, static_cast<spec::sgl_descriptor_subtype>(0xa))),
              "TRANSPORT_DATA_BLOCK len=4096 subtype=0xa");
}

TEST(format_data_pointer, prints_reserved_types_in_hex)
{
    const spec::sgl_descriptor reserved{0x10, 32, {}, spec::sgl_identifier{0x60}};
    EXPECT_EQ(fmt::format("{}", reserved), "0x6 addr=0x10 len=32");
    const spec::sgl_descriptor vendor{0x20, 16, {}, spec::sgl_identifier{0xf0}};
    EXPECT_EQ(fmt::format("{}", vendor), "VENDOR_SPECIFIC addr=0x20 len=16");
}

TEST(format_data_pointer, prints_prp_entries_and_enums)
{
    EXPECT_EQ(fmt::format("{}", spec::prp_entry{0x1234'5000}), "0x12345000");
    EXPECT_EQ(fmt::format("{}", spec::sgl_descriptor_type::last_segment), "LAST_SEGMENT");
    EXPECT_EQ(fmt::format("{}", spec::sgl_descriptor_subtype::address), "ADDRESS");
}

TEST(format_data_pointer, prints_prp2_roles)
{
    EXPECT_EQ(fmt::format("{}", spec::prp2_role::unused), "unused");
    EXPECT_EQ(fmt::format("{}", spec::prp2_role::data_page), "data_page");
    EXPECT_EQ(fmt::format("{}", spec::prp2_role::list_pointer), "list_pointer");
    // 8 KiB from offset 0x800 of a 4 KiB page touches three pages: PRP2 points to a PRP List.
    EXPECT_EQ(fmt::format("{}", spec::prp2_role_for(spec::prp_entry{0x10800}, 8192, 4096)), "list_pointer");
    EXPECT_EQ(fmt::format("{}", static_cast<spec::prp2_role>(7)), "0x7");
}

TEST(format_data_pointer, prints_sgl_identifier_type_and_subtype)
{
    EXPECT_EQ(fmt::format("{}", spec::sgl_identifier{0x00}), "type=DATA_BLOCK subtype=ADDRESS");
    EXPECT_EQ(fmt::format("{}", spec::sgl_identifier{0x31}), "type=LAST_SEGMENT subtype=OFFSET");
    EXPECT_EQ(fmt::format("{}", spec::sgl_identifier{0x5a}), "type=TRANSPORT_DATA_BLOCK subtype=0xa");
    EXPECT_EQ(fmt::format("{}", spec::sgl_identifier{0x62}), "type=0x6 subtype=0x2");
    EXPECT_EQ(fmt::format("{}", spec::sgl_descriptor::keyed_data_block(0, 1, 2).identifier),
              "type=KEYED_DATA_BLOCK subtype=ADDRESS");
}
