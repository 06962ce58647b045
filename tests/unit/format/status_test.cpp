#include <nvmekit/format/status.hpp>

#include <gtest/gtest.h>

namespace spec = nvmekit::spec;

TEST(format_status, prints_type_name_code_and_flags)
{
    EXPECT_EQ(fmt::format("{}", spec::status{spec::generic_status::invalid_field}.with_dnr()),
              "Generic/Invalid Field (0x02) [DNR]");
    EXPECT_EQ(fmt::format("{}", spec::status::success()), "Generic/Successful Completion (0x00)");
    EXPECT_EQ(fmt::format("{}", spec::status{spec::media_status::unrecovered_read_error}),
              "Media Error/Unrecovered Read Error (0x81)");
    EXPECT_EQ(fmt::format("{}", spec::status{spec::command_specific_status::invalid_queue_identifier}
                                    .with(spec::status::more, true)
                                    .with(spec::status::crd, 2)),
              "Command Specific/Invalid Queue Identifier (0x01) [M CRD=2]");
}

TEST(format_status, separates_every_set_flag_by_one_space)
{
    const spec::status invalid_field{spec::generic_status::invalid_field};
    EXPECT_EQ(
        fmt::format("{}", invalid_field.with_dnr().with(spec::status::more, true).with(spec::status::crd, 3)),
        "Generic/Invalid Field (0x02) [DNR M CRD=3]");
    EXPECT_EQ(fmt::format("{}", invalid_field.with_dnr().with(spec::status::crd, 1)),
              "Generic/Invalid Field (0x02) [DNR CRD=1]");
    EXPECT_EQ(fmt::format("{}", invalid_field.with(spec::status::crd, 1)),
              "Generic/Invalid Field (0x02) [CRD=1]");
    EXPECT_EQ(fmt::format("{}", invalid_field.with(spec::status::more, true)),
              "Generic/Invalid Field (0x02) [M]");
}

TEST(format_status, prints_unnamed_codes_by_number)
{
    EXPECT_EQ(fmt::format("{}", spec::status{spec::status_code_type::vendor_specific, 0xc3}.with_dnr()),
              "Vendor Specific (0xc3) [DNR]");
    EXPECT_EQ(fmt::format("{}", spec::status{spec::status_code_type::generic, 0x17}), "Generic (0x17)");
}

TEST(format_status, code_enums_print_the_code_part_of_a_status)
{
    EXPECT_EQ(fmt::format("{}", spec::generic_status::invalid_field), "Invalid Field (0x02)");
    EXPECT_EQ(fmt::format("{}", spec::generic_status::lba_out_of_range), "LBA Out of Range (0x80)");
    EXPECT_EQ(fmt::format("{}", spec::command_specific_status::invalid_queue_identifier),
              "Invalid Queue Identifier (0x01)");
    EXPECT_EQ(fmt::format("{}", spec::media_status::unrecovered_read_error), "Unrecovered Read Error (0x81)");
    EXPECT_EQ(fmt::format("{}", spec::path_status::host_pathing_error), "Host Pathing Error (0x70)");
}

TEST(format_status, fabrics_codes_print_their_own_names_not_the_nvm_ones)
{
    // 83h is also Command Size Limit Exceeded among the NVM command set's command specific codes.
    EXPECT_EQ(fmt::format("{}", spec::fabrics_status::connect_restart_discovery),
              "Connect Restart Discovery (0x83)");
    EXPECT_EQ(fmt::format("{}", spec::command_specific_status::command_size_limit_exceeded),
              "Command Size Limit Exceeded (0x83)");
    EXPECT_EQ(fmt::format("{}", spec::fabrics_status::connect_invalid_host), "Connect Invalid Host (0x84)");
}

TEST(format_status, unnamed_code_enums_print_their_type_and_number)
{
    EXPECT_EQ(fmt::format("{}", static_cast<spec::generic_status>(0x17)), "Generic (0x17)");
    EXPECT_EQ(fmt::format("{}", static_cast<spec::command_specific_status>(0x04)), "Command Specific (0x04)");
    EXPECT_EQ(fmt::format("{}", static_cast<spec::fabrics_status>(0x86)), "Command Specific (0x86)");
    EXPECT_EQ(fmt::format("{}", static_cast<spec::media_status>(0xc1)), "Media Error (0xc1)");
    EXPECT_EQ(fmt::format("{}", static_cast<spec::path_status>(0x04)), "Path Related (0x04)");
    // The status formatter prints the same code part.
    EXPECT_EQ(fmt::format("{}", spec::status{static_cast<spec::generic_status>(0x17)}), "Generic (0x17)");
}
