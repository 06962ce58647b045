#include <algorithm>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

#include <nvmekit/contracts/block_backend.hpp>
#include <nvmekit/timing/ssd_model.hpp>
#include <nvmekit/timing/timing_model.hpp>

#include "splitmix64.hpp"

namespace {
namespace timing_ssd_model_test {

using namespace std::chrono_literals;
using nvmekit::block_operation;
using nvmekit::timing::femu_defaults;
using nvmekit::timing::ssd_geometry;
using nvmekit::timing::ssd_model;
using nvmekit::timing::ssd_parameters;
using nvmekit::timing::ssd_statistics;
using nvmekit::timing::timing_request;
using times = std::vector<std::chrono::nanoseconds>;

static_assert(nvmekit::timing::check_timing_model<ssd_model>());

constexpr std::uint64_t page = 4096;
/// A 4 KiB page crosses a channel in exactly 1 us.
constexpr std::uint64_t page_per_microsecond = 4'096'000'000;

timing_request read(std::uint64_t offset, std::uint64_t length = page)
{
    return {block_operation::read, offset, length, false};
}

timing_request write(std::uint64_t offset, std::uint64_t length = page, bool fua = false)
{
    return {block_operation::write, offset, length, fua};
}

constexpr timing_request flush{block_operation::flush, 0, 0, false};

/// FEMU's defaults with a 1 us-per-page channel.
ssd_parameters femu_with_channel_rate()
{
    ssd_parameters parameters = femu_defaults();
    parameters.channel_bytes_per_second = page_per_microsecond;
    return parameters;
}

/// One channel, one LUN, one plane: every page on one timeline.
ssd_parameters single_lun(std::uint64_t buffer_pages = 0)
{
    ssd_parameters parameters = femu_defaults();
    parameters.geometry.channels = 1;
    parameters.geometry.luns_per_channel = 1;
    parameters.write_buffer_bytes = buffer_pages * page;
    return parameters;
}

TEST(ssd_model, femu_defaults_are_femus_blackbox_defaults)
{
    constexpr ssd_parameters femu = femu_defaults();
    EXPECT_EQ(femu.geometry.channels, 8U);
    EXPECT_EQ(femu.geometry.luns_per_channel, 8U);
    EXPECT_EQ(femu.geometry.planes_per_lun, 1U);
    EXPECT_EQ(femu.geometry.blocks_per_plane, 256U);
    EXPECT_EQ(femu.geometry.pages_per_block, 256U);
    EXPECT_EQ(femu.geometry.page_bytes, 4096U);
    EXPECT_EQ(femu.geometry.parallel_units(), 64U);
    EXPECT_EQ(femu.geometry.raw_bytes(), std::uint64_t{16} << 30);
    EXPECT_EQ(femu.page_read, 40us);
    EXPECT_EQ(femu.page_program, 200us);
    EXPECT_EQ(femu.block_erase, 2ms);
    EXPECT_EQ(femu.channel_bytes_per_second, 0U);
    EXPECT_EQ(femu.host_bytes_per_second, 0U);
    EXPECT_EQ(femu.write_buffer_bytes, 0U);
}

TEST(ssd_model, a_queue_depth_one_page_read_takes_read_latency_plus_channel_and_host_transfers)
{
    ssd_parameters parameters = femu_with_channel_rate();
    parameters.host_bytes_per_second = 2 * page_per_microsecond; // 500 ns a page
    ssd_model model{parameters};
    EXPECT_EQ(model.complete_at(read(0), 0ns), 40us + 1us + 500ns);
    EXPECT_EQ(model.complete_at(read(77 * page), 1ms), 1ms + 41'500ns);
    // FEMU's own defaults: the page read alone.
    ssd_model femu{femu_defaults()};
    EXPECT_EQ(femu.complete_at(read(0), 0ns), 40us);
    EXPECT_EQ(femu.statistics().pages_read, 1U);
}

TEST(ssd_model, a_partial_page_transfers_only_its_bytes)
{
    ssd_model model{femu_with_channel_rate()};
    EXPECT_EQ(model.complete_at(read(page + 512, 1024), 0ns), 40us + 250ns);
}

TEST(ssd_model, a_read_across_two_pages_reads_both_in_parallel_on_two_channels)
{
    ssd_model model{femu_with_channel_rate()};
    EXPECT_EQ(model.complete_at(read(2048, page), 0ns), 40us + 500ns);
    EXPECT_EQ(model.statistics().pages_read, 2U);
}

TEST(ssd_model, pages_stripe_across_channels_first_then_luns)
{
    ssd_model model{femu_with_channel_rate()};
    // Pages 0 and 8 are on channel 0, LUNs 0 and 1: the reads overlap, the transfers queue.
    EXPECT_EQ(model.complete_at(read(0), 0ns), 41us);
    EXPECT_EQ(model.complete_at(read(8 * page), 0ns), 42us);
    // Page 64 is on LUN 0 of channel 0 again: it waits for that LUN.
    EXPECT_EQ(model.complete_at(read(64 * page), 0ns), 41us + 40us + 1us);
    // Page 1 is on channel 1, idle so far.
    EXPECT_EQ(model.complete_at(read(page), 0ns), 41us);
}

TEST(ssd_model, a_link_of_rate_zero_orders_nothing)
{
    // FEMU's defaults: no channel or host transfer time, so only LUNs are shared.
    ssd_model model{femu_defaults()};
    EXPECT_EQ(model.complete_at(read(0), 0ns), 40us);
    EXPECT_EQ(model.complete_at(read(64 * page), 0ns), 80us); // LUN 0 of channel 0 again
    EXPECT_EQ(model.complete_at(read(8 * page), 0ns), 40us);  // LUN 1 of channel 0, idle
    EXPECT_EQ(model.complete_at(write(page), 0ns), 200us);
}

TEST(ssd_model, sixty_four_page_reads_on_8x8_take_one_read_latency_plus_eight_channel_transfers)
{
    ssd_model model{femu_with_channel_rate()};
    times done;
    for (std::uint64_t p = 0; p < 64; ++p) {
        done.push_back(model.complete_at(read(p * page), 0ns));
    }
    // On each channel the eight LUNs read at once and their pages leave one after the other.
    for (std::uint64_t p = 0; p < 64; ++p) {
        EXPECT_EQ(done[p], 40us + std::chrono::microseconds{p / 8 + 1}) << "page " << p;
    }
    EXPECT_EQ(*std::max_element(done.begin(), done.end()), 48us);
}

TEST(ssd_model, a_hundred_and_twenty_eight_page_reads_on_8x8_take_two_rounds)
{
    ssd_model model{femu_with_channel_rate()};
    times done;
    for (std::uint64_t p = 0; p < 128; ++p) {
        done.push_back(model.complete_at(read(p * page), 0ns));
    }
    // The second read of a LUN starts once its first page has left on the channel.
    for (std::uint64_t p = 64; p < 128; ++p) {
        const std::uint64_t lun = (p - 64) / 8;
        EXPECT_EQ(done[p], 40us + std::chrono::microseconds{lun + 1} + 40us + 1us) << "page " << p;
    }
    EXPECT_EQ(*std::max_element(done.begin(), done.end()), 89us);
}

TEST(ssd_model, the_host_link_bounds_throughput_once_it_is_slower_than_the_channels)
{
    ssd_parameters parameters = femu_with_channel_rate();
    parameters.host_bytes_per_second = page_per_microsecond / 2; // 2 us a page
    ssd_model model{parameters};
    times done;
    for (std::uint64_t p = 0; p < 8; ++p) {
        done.push_back(model.complete_at(read(p * page), 0ns));
    }
    // Eight channels deliver their pages at 41 us; the link passes one every 2 us.
    for (std::uint64_t p = 0; p < 8; ++p) {
        EXPECT_EQ(done[p], 41us + std::chrono::microseconds{2 * (p + 1)}) << "page " << p;
    }
}

TEST(ssd_model, without_a_write_buffer_a_write_completes_when_its_page_is_programmed)
{
    ssd_parameters parameters = femu_with_channel_rate();
    parameters.host_bytes_per_second = 2 * page_per_microsecond;
    ssd_model model{parameters};
    EXPECT_EQ(model.complete_at(write(0), 0ns), 500ns + 1us + 200us);
    // A flush has nothing buffered to wait for.
    EXPECT_EQ(model.complete_at(flush, 10us), 10us);
    // A read of the same LUN waits for the program.
    EXPECT_EQ(model.complete_at(read(0), 10us), 201'500ns + 40us + 1us + 500ns);
    EXPECT_EQ(model.statistics(), (ssd_statistics{.pages_read = 1, .pages_programmed = 1}));
}

TEST(ssd_model, a_buffered_write_completes_once_in_the_buffer_and_fua_waits_for_the_program)
{
    ssd_parameters parameters = single_lun(4);
    parameters.host_bytes_per_second = page_per_microsecond;
    ssd_model model{parameters};
    EXPECT_EQ(model.complete_at(write(0), 0ns), 1us);
    EXPECT_EQ(model.buffered_pages(1us), 1U);
    EXPECT_EQ(model.buffered_pages(201us), 0U);
    // Behind the first program on the only LUN.
    EXPECT_EQ(model.complete_at(write(page, page, true), 0ns), 401us);
    // A flush waits for every program booked.
    EXPECT_EQ(model.complete_at(flush, 5us), 401us);
    EXPECT_EQ(model.complete_at(flush, 500us), 500us);
}

TEST(ssd_model, a_full_write_buffer_makes_writes_wait_for_a_program_to_end)
{
    ssd_model model{single_lun(2)};
    times done;
    for (std::uint64_t p = 0; p < 4; ++p) {
        done.push_back(model.complete_at(write(p * page), 0ns));
    }
    // Two pages fit; the third gets the first page's buffer when its program ends at 200 us, the
    // fourth the second's at 400 us.
    EXPECT_EQ(done, (times{0us, 0us, 200us, 400us}));
    EXPECT_EQ(model.statistics().buffer_waits, 2U);
    EXPECT_EQ(model.buffered_pages(0us), 2U);
    EXPECT_EQ(model.complete_at(flush, 0ns), 800us);
    // Once drained, a write completes at once again.
    EXPECT_EQ(model.complete_at(write(0), 800us), 800us);
    EXPECT_EQ(model.statistics().buffer_waits, 2U);
}

TEST(ssd_model, a_write_larger_than_the_buffer_streams_through_it)
{
    ssd_model model{single_lun(2)};
    // Four pages through two buffer pages: the last piece enters when the second program ends.
    EXPECT_EQ(model.complete_at(write(0, 4 * page), 0ns), 400us);
    EXPECT_EQ(model.complete_at(flush, 0ns), 800us);
}

TEST(ssd_model, a_block_written_before_is_erased_before_it_is_programmed_again)
{
    ssd_parameters parameters = single_lun();
    parameters.geometry.blocks_per_plane = 2;
    parameters.geometry.pages_per_block = 2;
    ssd_model model{parameters};
    times done;
    for (std::uint64_t p = 0; p < 6; ++p) {
        done.push_back(model.complete_at(write(p * page), 0ns));
    }
    // Four pages fill both blocks; the fifth reopens block 0, which is erased first.
    EXPECT_EQ(done, (times{200us, 400us, 600us, 800us, 800us + 2ms + 200us, 800us + 2ms + 400us}));
    EXPECT_EQ(model.statistics(), (ssd_statistics{.pages_programmed = 6, .blocks_erased = 1}));
}

TEST(ssd_model, write_zeroes_and_deallocate_complete_at_once)
{
    ssd_model model{femu_defaults()};
    EXPECT_EQ(model.complete_at({block_operation::write_zeroes, 0, 1 << 20, false}, 3us), 3us);
    EXPECT_EQ(model.complete_at({block_operation::deallocate, 0, 1 << 20, false}, 4us), 4us);
    EXPECT_EQ(model.complete_at(read(0, 0), 5us), 5us);
}

TEST(ssd_model, the_same_requests_give_the_same_times)
{
    ssd_parameters parameters = femu_with_channel_rate();
    parameters.host_bytes_per_second = 3'200'000'000;
    parameters.write_buffer_bytes = 64 * page;
    parameters.geometry.blocks_per_plane = 4;
    parameters.geometry.pages_per_block = 8;
    auto run = [&](std::uint64_t seed) {
        ssd_model model{parameters};
        nvmekit_test::splitmix64 random{seed};
        times done;
        std::chrono::nanoseconds now{0};
        for (int i = 0; i < 5000; ++i) {
            now += std::chrono::nanoseconds{random.below(20'000)};
            const auto operation = static_cast<block_operation>(random.below(5));
            const timing_request request{operation, random.below(std::uint64_t{1} << 30),
                                         random.between(1, 64 * 1024), random.one_in(8)};
            done.push_back(model.complete_at(request, now));
            EXPECT_GE(done.back(), now);
        }
        return std::pair{done, model.statistics()};
    };
    const auto first = run(7);
    EXPECT_EQ(first, run(7));
    EXPECT_NE(first.first, run(8).first);
    EXPECT_GT(first.second.blocks_erased, 0U);
    EXPECT_GT(first.second.buffer_waits, 0U);
}

TEST(ssd_model, refuses_an_empty_geometry_negative_latencies_and_a_buffer_below_a_page)
{
    for (std::uint32_t ssd_geometry::*count :
         {&ssd_geometry::channels, &ssd_geometry::luns_per_channel, &ssd_geometry::planes_per_lun,
          &ssd_geometry::blocks_per_plane, &ssd_geometry::pages_per_block, &ssd_geometry::page_bytes}) {
        ssd_parameters parameters = femu_defaults();
        parameters.geometry.*count = 0;
        EXPECT_THROW(ssd_model{parameters}, std::invalid_argument);
    }
    ssd_parameters negative = femu_defaults();
    negative.block_erase = -1ns;
    EXPECT_THROW(ssd_model{negative}, std::invalid_argument);
    ssd_parameters small_buffer = femu_defaults();
    small_buffer.write_buffer_bytes = page - 1;
    EXPECT_THROW(ssd_model{small_buffer}, std::invalid_argument);
    small_buffer.write_buffer_bytes = page;
    EXPECT_NO_THROW(ssd_model{small_buffer});
}

} // namespace timing_ssd_model_test
} // namespace
