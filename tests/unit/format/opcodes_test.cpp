#include <nvmekit/format/opcodes.hpp>

#include <cstdint>

#include <gtest/gtest.h>

namespace spec = nvmekit::spec;

TEST(format_opcodes, admin_opcodes_print_their_names)
{
    EXPECT_EQ(fmt::format("{}", spec::admin_opcode::identify), "IDENTIFY");
    EXPECT_EQ(fmt::format("{}", spec::admin_opcode::delete_io_sq), "DELETE_IO_SQ");
    EXPECT_EQ(fmt::format("{}", spec::admin_opcode::firmware_commit), "FW_COMMIT");
    EXPECT_EQ(fmt::format("{}", static_cast<spec::admin_opcode>(0x03)), "0x3");
    EXPECT_EQ(fmt::format("{}", static_cast<spec::admin_opcode>(0xc1)), "0xc1");
}

TEST(format_opcodes, nvm_opcodes_print_their_names)
{
    EXPECT_EQ(fmt::format("{}", spec::nvm_opcode::read), "READ");
    EXPECT_EQ(fmt::format("{}", spec::nvm_opcode::flush), "FLUSH");
    EXPECT_EQ(fmt::format("{}", spec::nvm_opcode::write_zeroes), "WRITE_ZEROES");
    EXPECT_EQ(fmt::format("{}", static_cast<spec::nvm_opcode>(0x85)), "0x85");
}

TEST(format_opcodes, fabrics_command_types_print_their_names)
{
    EXPECT_EQ(fmt::format("{}", spec::fabrics_command_type::connect), "CONNECT");
    EXPECT_EQ(fmt::format("{}", spec::fabrics_command_type::property_set), "PROPERTY_SET");
    EXPECT_EQ(fmt::format("{}", spec::fabrics_command_type::authentication_receive), "AUTH_RECEIVE");
    EXPECT_EQ(fmt::format("{}", static_cast<spec::fabrics_command_type>(0x7e)), "0x7e");
}

TEST(format_opcodes, data_transfer_prints_the_direction)
{
    EXPECT_EQ(fmt::format("{}", spec::data_transfer::none), "none");
    EXPECT_EQ(fmt::format("{}", spec::data_transfer::host_to_controller), "host_to_controller");
    EXPECT_EQ(fmt::format("{}", spec::data_transfer::controller_to_host), "controller_to_host");
    EXPECT_EQ(fmt::format("{}", spec::data_transfer::bidirectional), "bidirectional");
    // The direction is bits 01:00 of every opcode: Read (02h) moves data to the host.
    EXPECT_EQ(fmt::format("{}", spec::transfer_direction(static_cast<std::uint8_t>(spec::nvm_opcode::read))),
              "controller_to_host");
    EXPECT_EQ(fmt::format("{}", static_cast<spec::data_transfer>(0x4)), "0x4");
}
