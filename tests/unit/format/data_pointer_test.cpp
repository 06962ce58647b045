#include <nvmekit/format/data_pointer.hpp>

#include <gtest/gtest.h>

namespace spec = nvmekit::spec;

TEST(format_data_pointer, prints_each_descriptor_type_with_its_fields)
{
    EXPECT_EQ(fmt::format("{}", spec::sgl_descriptor::data_block(0x1000, 4096)), "DATA_BLOCK addr=0x1000 len=4096");
    EXPECT_EQ(fmt::format("{}", spec::sgl_descriptor::bit_bucket(512)), "BIT_BUCKET len=512");
    EXPECT_EQ(fmt::format("{}", spec::sgl_descriptor::segment(0x7f00'0000'2000ULL, 4096)),
              "SEGMENT addr=0x7f0000002000 len=4096");
    EXPECT_EQ(fmt::format("{}", spec::sgl_descriptor::last_segment(0x2000, 48)), "LAST_SEGMENT addr=0x2000 len=48");
    EXPECT_EQ(fmt::format("{}", spec::sgl_descriptor::keyed_data_block(0x3000, 8192, 0x1234'5678)),
              "KEYED_DATA_BLOCK addr=0x3000 len=8192 key=0x12345678");
}

TEST(format_data_pointer, prints_subtype_when_not_address)
{
    EXPECT_EQ(fmt::format("{}", spec::sgl_descriptor::data_block(0, 512, spec::sgl_descriptor_subtype::offset)),
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
