#include <nvmekit/state/telemetry_log.hpp>

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

namespace spec = nvmekit::spec;
using nvmekit::empty_telemetry_controller_log;
using nvmekit::telemetry_config;
using nvmekit::telemetry_create_requested;
using nvmekit::telemetry_host_log;

namespace {

const spec::status invalid_field{spec::generic_status::invalid_field};

std::vector<std::byte> filled(std::size_t size, std::uint8_t value)
{
    return std::vector<std::byte>(size, static_cast<std::byte>(value));
}

spec::get_log_page_view view_at(std::uint64_t offset, std::uint8_t lsp = 0)
{
    return spec::get_log_page_view{.log_page_id = spec::log_page_id::telemetry_host_initiated,
                                   .log_specific_field = lsp,
                                   .dword_count = 128,
                                   .offset = offset};
}

} // namespace

TEST(telemetry_host_log, before_a_capture_the_log_is_the_header_alone)
{
    const telemetry_host_log log{telemetry_config{.ieee_oui = {0x11, 0x22, 0x33}}};
    ASSERT_EQ(log.bytes().size(), 512U);
    EXPECT_EQ(log.bytes()[0], std::byte{0x07});
    EXPECT_EQ(log.bytes()[5], std::byte{0x11});
    EXPECT_EQ(log.bytes()[6], std::byte{0x22});
    EXPECT_EQ(log.bytes()[7], std::byte{0x33});
    for (std::size_t i = 8; i < 512; ++i) {
        EXPECT_EQ(log.bytes()[i], std::byte{0}) << i;
    }
    EXPECT_EQ(log.generation(), 0U);
}

TEST(telemetry_host_log, capture_lays_out_cumulative_areas_in_blocks)
{
    telemetry_host_log log;
    const auto area1 = filled(600, 0xa1); // 2 blocks
    const auto area2 = filled(512, 0xa2); // 1 block
    const auto area3 = filled(1, 0xa3);   // 1 block
    const auto reason = filled(3, 0x7e);
    EXPECT_TRUE(log.capture(area1, area2, area3, reason));
    const auto& header = log.header();
    EXPECT_EQ(header.data_area1_last_block, 2U);
    EXPECT_EQ(header.data_area2_last_block, 3U);
    EXPECT_EQ(header.data_area3_last_block, 4U);
    EXPECT_EQ(header.host_data_generation_number, 1U);
    EXPECT_EQ(header.controller_data_available, 0U);
    EXPECT_EQ(header.controller_data_generation_number, 0U);
    const auto bytes = log.bytes();
    ASSERT_EQ(bytes.size(), 5U * 512);
    EXPECT_EQ(bytes[8], std::byte{2});  // Data Area 1 Last Block, bytes 09:08
    EXPECT_EQ(bytes[10], std::byte{3}); // Data Area 2 Last Block
    EXPECT_EQ(bytes[12], std::byte{4}); // Data Area 3 Last Block
    EXPECT_EQ(bytes[381], std::byte{1});
    EXPECT_EQ(bytes[384], std::byte{0x7e});
    EXPECT_EQ(bytes[386], std::byte{0x7e});
    EXPECT_EQ(bytes[387], std::byte{0});
    EXPECT_EQ(bytes[512], std::byte{0xa1});
    EXPECT_EQ(bytes[512 + 599], std::byte{0xa1});
    EXPECT_EQ(bytes[512 + 600], std::byte{0}); // padding of area 1
    EXPECT_EQ(bytes[1023 + 512], std::byte{0});
    EXPECT_EQ(bytes[3 * 512], std::byte{0xa2});
    EXPECT_EQ(bytes[4 * 512 - 1], std::byte{0xa2});
    EXPECT_EQ(bytes[4 * 512], std::byte{0xa3});
    EXPECT_EQ(bytes[4 * 512 + 1], std::byte{0});
    EXPECT_EQ(bytes[5 * 512 - 1], std::byte{0});
}

TEST(telemetry_host_log, each_capture_increments_the_generation_and_reading_does_not)
{
    telemetry_host_log log;
    const auto data = filled(512, 1);
    log.capture(data);
    std::vector<std::byte> out(1024);
    EXPECT_TRUE(log.read(0, out).is_success());
    EXPECT_TRUE(log.read(0, out).is_success());
    EXPECT_EQ(log.generation(), 1U);
    EXPECT_EQ(out[381], std::byte{1});
    log.capture(data);
    EXPECT_EQ(log.generation(), 2U);
    for (int i = 0; i < 254; ++i) {
        log.capture(data);
    }
    EXPECT_EQ(log.generation(), 0U); // 8 bits, wraps
}

TEST(telemetry_host_log, a_smaller_capture_shrinks_the_log)
{
    telemetry_host_log log;
    log.capture(filled(2048, 0x55));
    EXPECT_EQ(log.bytes().size(), 5U * 512);
    log.capture({});
    EXPECT_EQ(log.header().data_area1_last_block, 0U);
    EXPECT_EQ(log.header().data_area3_last_block, 0U);
    EXPECT_EQ(log.bytes().size(), 512U);
    std::vector<std::byte> out(512, std::byte{0xee});
    EXPECT_TRUE(log.read(512, out).is_success());
    EXPECT_EQ(out[0], std::byte{0}); // stale data is not visible
}

TEST(telemetry_host_log, an_empty_area_keeps_its_last_block_equal_to_the_previous)
{
    telemetry_host_log log;
    log.capture(filled(10, 1), {}, filled(10, 3));
    EXPECT_EQ(log.header().data_area1_last_block, 1U);
    EXPECT_EQ(log.header().data_area2_last_block, 1U);
    EXPECT_EQ(log.header().data_area3_last_block, 2U);
    EXPECT_EQ(log.bytes()[1024], std::byte{3});
}

TEST(telemetry_host_log, a_snapshot_past_the_bound_is_truncated)
{
    telemetry_host_log log{telemetry_config{.max_data_blocks = 3}};
    EXPECT_FALSE(log.capture(filled(1024, 1), filled(1024, 2), filled(512, 3)));
    EXPECT_EQ(log.header().data_area1_last_block, 2U);
    EXPECT_EQ(log.header().data_area2_last_block, 3U);
    EXPECT_EQ(log.header().data_area3_last_block, 3U);
    EXPECT_EQ(log.bytes().size(), 4U * 512);
    EXPECT_EQ(log.bytes()[3 * 512], std::byte{2});
    EXPECT_EQ(log.generation(), 1U);
    EXPECT_FALSE(log.capture({}, {}, {}, filled(129, 9)));
    EXPECT_EQ(log.header().reason_identifier[127], 9U);
    EXPECT_TRUE(log.capture(filled(1536, 1)));
    EXPECT_TRUE(telemetry_host_log{telemetry_config{.max_data_blocks = 0}}.capture({}));
}

TEST(telemetry_host_log, the_bound_is_at_most_65535_blocks)
{
    EXPECT_THROW(telemetry_host_log{telemetry_config{.max_data_blocks = 65536}}, std::invalid_argument);
}

TEST(telemetry_host_log, offsets_must_be_multiples_of_512_within_the_log)
{
    telemetry_host_log log;
    log.capture(filled(1024, 0x42));
    std::vector<std::byte> out(512, std::byte{0xee});
    EXPECT_EQ(log.read(4, out), invalid_field);
    EXPECT_EQ(log.read(256, out), invalid_field);
    EXPECT_EQ(out[0], std::byte{0xee});
    EXPECT_EQ(log.read(2048, out), invalid_field);
    EXPECT_TRUE(log.read(1024, out).is_success());
    EXPECT_EQ(out[511], std::byte{0x42});
    EXPECT_TRUE(log.read(1536, out).is_success());
    EXPECT_EQ(out[0], std::byte{0});
    EXPECT_EQ(log.transfer(view_at(1024)).length, 512U);
    EXPECT_TRUE(log.transfer(view_at(1536)).ok());
    EXPECT_EQ(log.transfer(view_at(1540)).status, invalid_field);
    EXPECT_EQ(log.transfer(view_at(2048)).status, invalid_field);
}

TEST(telemetry_host_log, create_is_lsp_bit_0)
{
    EXPECT_TRUE(telemetry_create_requested(view_at(0, 0x01)));
    EXPECT_TRUE(telemetry_create_requested(view_at(0, 0x7f)));
    EXPECT_FALSE(telemetry_create_requested(view_at(0, 0x00)));
    EXPECT_FALSE(telemetry_create_requested(view_at(0, 0x02)));
}

TEST(telemetry_controller_log, is_a_header_without_data)
{
    const auto header = empty_telemetry_controller_log({0xaa, 0xbb, 0xcc});
    const auto bytes = std::bit_cast<std::array<std::uint8_t, 512>>(header);
    EXPECT_EQ(bytes[0], 0x08U);
    EXPECT_EQ(bytes[5], 0xaaU);
    EXPECT_EQ(bytes[7], 0xccU);
    for (std::size_t i = 8; i < 512; ++i) {
        EXPECT_EQ(bytes[i], 0U) << i;
    }
}
