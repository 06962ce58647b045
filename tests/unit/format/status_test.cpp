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
    EXPECT_EQ(fmt::format("{}", invalid_field.with_dnr().with(spec::status::more, true).with(spec::status::crd, 3)),
              "Generic/Invalid Field (0x02) [DNR M CRD=3]");
    EXPECT_EQ(fmt::format("{}", invalid_field.with_dnr().with(spec::status::crd, 1)),
              "Generic/Invalid Field (0x02) [DNR CRD=1]");
    EXPECT_EQ(fmt::format("{}", invalid_field.with(spec::status::crd, 1)), "Generic/Invalid Field (0x02) [CRD=1]");
    EXPECT_EQ(fmt::format("{}", invalid_field.with(spec::status::more, true)), "Generic/Invalid Field (0x02) [M]");
}

TEST(format_status, prints_unnamed_codes_by_number)
{
    EXPECT_EQ(fmt::format("{}", spec::status{spec::status_code_type::vendor_specific, 0xc3}.with_dnr()),
              "Vendor Specific (0xc3) [DNR]");
    EXPECT_EQ(fmt::format("{}", spec::status{spec::status_code_type::generic, 0x17}), "Generic (0x17)");
}
