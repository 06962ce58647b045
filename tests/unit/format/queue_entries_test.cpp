#include <nvmekit/format/queue_entries.hpp>

#include <gtest/gtest.h>

namespace spec = nvmekit::spec;

TEST(format_queue_entries, fused_operation_and_pointer_type_print_names)
{
    EXPECT_EQ(fmt::format("{}", spec::fused_operation::normal), "normal");
    EXPECT_EQ(fmt::format("{}", spec::fused_operation::first), "first");
    EXPECT_EQ(fmt::format("{}", spec::fused_operation::second), "second");
    EXPECT_EQ(fmt::format("{}", static_cast<spec::fused_operation>(0b11)), "0x3");
    EXPECT_EQ(fmt::format("{}", spec::data_pointer_type::prp), "prp");
    EXPECT_EQ(fmt::format("{}", spec::data_pointer_type::sgl_contiguous_metadata), "sgl_contiguous_metadata");
    EXPECT_EQ(fmt::format("{}", spec::data_pointer_type::sgl_metadata_descriptor), "sgl_metadata_descriptor");
    EXPECT_EQ(fmt::format("{}", static_cast<spec::data_pointer_type>(0b11)), "0x3");
}

TEST(format_queue_entries, command_dword0_prints_every_field)
{
    using dword = spec::command_dword0;
    EXPECT_EQ(fmt::format("{}", dword{}), "opc=0x00 fuse=normal psdt=prp cid=0");
    // OPC 02h, FUSE first (bits 09:08 = 01b), PSDT 01b (bits 15:14), CID 5 (bits 31:16).
    EXPECT_EQ(fmt::format("{}", dword{0x0005'4102}),
              "opc=0x02 fuse=first psdt=sgl_contiguous_metadata cid=5");
    EXPECT_EQ(fmt::format("{}", dword{}.with(dword::opc, 0xc1).with(dword::cid, 0xffff)),
              "opc=0xc1 fuse=normal psdt=prp cid=65535");
}

TEST(format_queue_entries, data_pointer_prints_both_prp_entries)
{
    EXPECT_EQ(fmt::format("{}", spec::data_pointer{0x1000, 0}), "prp1=0x1000 prp2=0x0");
    EXPECT_EQ(fmt::format("{}", spec::data_pointer{0x7f00'0000'0200ULL, 0x2000}),
              "prp1=0x7f0000000200 prp2=0x2000");
}
