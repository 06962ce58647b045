#include <nvmekit/spec/opcodes.hpp>

#include <cstdint>

#include <gtest/gtest.h>

namespace spec = nvmekit::spec;

namespace {
namespace spec_opcodes_test {

TEST(opcodes, values_are_those_of_the_specifications)
{
    // Base 2.0 Figure 139 (admin) and NVM Command Set 1.0 Figure 17 (I/O), a sample of each.
    EXPECT_EQ(static_cast<std::uint8_t>(spec::admin_opcode::delete_io_sq), 0x00);
    EXPECT_EQ(static_cast<std::uint8_t>(spec::admin_opcode::create_io_sq), 0x01);
    EXPECT_EQ(static_cast<std::uint8_t>(spec::admin_opcode::get_log_page), 0x02);
    EXPECT_EQ(static_cast<std::uint8_t>(spec::admin_opcode::create_io_cq), 0x05);
    EXPECT_EQ(static_cast<std::uint8_t>(spec::admin_opcode::identify), 0x06);
    EXPECT_EQ(static_cast<std::uint8_t>(spec::admin_opcode::set_features), 0x09);
    EXPECT_EQ(static_cast<std::uint8_t>(spec::admin_opcode::doorbell_buffer_config), 0x7c);
    EXPECT_EQ(static_cast<std::uint8_t>(spec::admin_opcode::format_nvm), 0x80);
    EXPECT_EQ(static_cast<std::uint8_t>(spec::nvm_opcode::flush), 0x00);
    EXPECT_EQ(static_cast<std::uint8_t>(spec::nvm_opcode::write), 0x01);
    EXPECT_EQ(static_cast<std::uint8_t>(spec::nvm_opcode::read), 0x02);
    EXPECT_EQ(static_cast<std::uint8_t>(spec::nvm_opcode::write_zeroes), 0x08);
    EXPECT_EQ(static_cast<std::uint8_t>(spec::nvm_opcode::dataset_management), 0x09);
    EXPECT_EQ(spec::fabrics_command_opcode, 0x7f);
    EXPECT_EQ(static_cast<std::uint8_t>(spec::fabrics_command_type::connect), 0x01);
    EXPECT_EQ(static_cast<std::uint8_t>(spec::fabrics_command_type::property_get), 0x04);
}

TEST(opcodes, the_low_two_bits_give_the_data_direction)
{
    EXPECT_EQ(spec::transfer_direction(static_cast<std::uint8_t>(spec::nvm_opcode::write)),
              spec::data_transfer::host_to_controller);
    EXPECT_EQ(spec::transfer_direction(static_cast<std::uint8_t>(spec::nvm_opcode::read)),
              spec::data_transfer::controller_to_host);
    EXPECT_EQ(spec::transfer_direction(static_cast<std::uint8_t>(spec::nvm_opcode::flush)),
              spec::data_transfer::none);
    EXPECT_EQ(spec::transfer_direction(static_cast<std::uint8_t>(spec::admin_opcode::identify)),
              spec::data_transfer::controller_to_host);
    EXPECT_EQ(spec::transfer_direction(0x7f), spec::data_transfer::bidirectional);
}

TEST(opcodes, vendor_specific_ranges)
{
    EXPECT_FALSE(spec::is_vendor_specific_admin(0xbf));
    EXPECT_TRUE(spec::is_vendor_specific_admin(0xc0));
    EXPECT_TRUE(spec::is_vendor_specific_admin(0xff));
    EXPECT_FALSE(spec::is_vendor_specific_io(0x7f));
    EXPECT_TRUE(spec::is_vendor_specific_io(0x80));
}

TEST(opcodes, names_are_the_upper_case_ones_logs_print)
{
    EXPECT_EQ(spec::name(spec::admin_opcode::identify), "IDENTIFY");
    EXPECT_EQ(spec::name(spec::admin_opcode::namespace_management), "NS_MANAGEMENT");
    EXPECT_EQ(spec::name(spec::nvm_opcode::read), "READ");
    EXPECT_EQ(spec::name(spec::fabrics_command_type::connect), "CONNECT");
    EXPECT_NE(spec::name(spec::admin_opcode::create_io_sq), spec::name(spec::admin_opcode::create_io_cq));
}

} // namespace spec_opcodes_test
} // namespace
