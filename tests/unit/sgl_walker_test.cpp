#include <nvmekit/data/sgl_walker.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <ostream>
#include <random>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nvmekit/format/status.hpp>

#include "asserts_enabled.hpp"
#include "print_helpers.hpp"
#include "recorded_memory.hpp"

namespace spec = nvmekit::spec;
using nvmekit::host_range;
using nvmekit::host_range_list;
using nvmekit::sgl_walk_options;
using nvmekit::transfer_direction;
using nvmekit::walk_sgl;
using nvmekit::testing::access_kind;
using descriptor = spec::sgl_descriptor;
using namespace nvmekit_test;

namespace {

constexpr spec::status success = spec::status::success();
constexpr spec::status invalid_field{spec::generic_status::invalid_field};
constexpr spec::status data_transfer_error{spec::generic_status::data_transfer_error};
constexpr spec::status invalid_segment{spec::generic_status::invalid_sgl_segment_descriptor};
constexpr spec::status invalid_count{spec::generic_status::invalid_sgl_descriptor_count};
constexpr spec::status data_length_invalid{spec::generic_status::data_sgl_length_invalid};
constexpr spec::status metadata_length_invalid{spec::generic_status::metadata_sgl_length_invalid};
constexpr spec::status type_invalid{spec::generic_status::sgl_descriptor_type_invalid};
constexpr spec::status granularity_invalid{spec::generic_status::sgl_data_block_granularity_invalid};
constexpr spec::status prp_offset_invalid{spec::generic_status::prp_offset_invalid};

constexpr sgl_walk_options reading{.direction = transfer_direction::controller_to_host};
constexpr sgl_walk_options writing{.direction = transfer_direction::host_to_controller};
constexpr sgl_walk_options reading_excess{.direction = transfer_direction::controller_to_host,
                                          .excess_length = true};
constexpr sgl_walk_options writing_excess{.direction = transfer_direction::host_to_controller,
                                          .excess_length = true};

/// Host memory for SGL segments at 0x10000 (0x20000 bytes); data blocks need no memory, the
/// walker never touches them.
struct sgl_fixture {
    recorded_memory host{0x10000, 0x20000};
    std::vector<host_range> storage = std::vector<host_range>(64);
    host_range_list out{storage};

    void store(std::uint64_t address, const std::vector<descriptor>& descriptors)
    {
        for (std::size_t i = 0; i < descriptors.size(); ++i) {
            host.memory.store(address + i * spec::sgl_descriptor_size, descriptors[i]);
        }
    }

    std::vector<host_range> ranges() const { return {out.ranges().begin(), out.ranges().end()}; }
};

descriptor with_subtype(descriptor value, std::uint8_t subtype)
{
    value.identifier.set(spec::sgl_identifier::subtype, static_cast<spec::sgl_descriptor_subtype>(subtype));
    return value;
}

descriptor of_type(std::uint8_t type, std::uint64_t address = 0x5000, std::uint32_t length = 0x100)
{
    descriptor value = descriptor::data_block(address, length);
    value.identifier.set(spec::sgl_identifier::type, static_cast<spec::sgl_descriptor_type>(type));
    return value;
}

std::uint32_t segment_bytes(std::size_t descriptors)
{
    return static_cast<std::uint32_t>(descriptors * spec::sgl_descriptor_size);
}

spec::submission_queue_entry command(spec::data_pointer_type psdt, const spec::data_pointer& dptr,
                                     std::uint64_t mptr = 0)
{
    spec::submission_queue_entry sqe{};
    sqe.cdw0.set(spec::command_dword0::psdt, psdt);
    sqe.dptr = dptr;
    sqe.mptr = mptr;
    return sqe;
}

} // namespace

TEST(sgl_walker, zero_length_succeeds_without_ranges_or_dma_and_ignores_the_sgl)
{
    sgl_fixture fixture;
    ASSERT_TRUE(fixture.out.push(0x1234, 4));
    EXPECT_EQ(walk_sgl(fixture.host.dma, of_type(0x6), 0, reading, fixture.out), success);
    EXPECT_TRUE(fixture.out.empty());
    EXPECT_TRUE(recorded(fixture.host.dma).empty());
}

TEST(sgl_walker, single_data_block_in_sgl1_is_one_range_without_dma)
{
    sgl_fixture fixture;
    EXPECT_EQ(
        walk_sgl(fixture.host.dma, descriptor::data_block(0x5003, 0x1001), 0x1001, reading, fixture.out),
        success);
    EXPECT_EQ(fixture.ranges(), (std::vector<host_range>{{0x5003, 0x1001, false}}));
    EXPECT_TRUE(recorded(fixture.host.dma).empty());
}

TEST(sgl_walker, data_block_shorter_or_longer_than_the_transfer_is_data_sgl_length_invalid)
{
    sgl_fixture fixture;
    EXPECT_EQ(walk_sgl(fixture.host.dma, descriptor::data_block(0x5000, 0x100), 0x101, reading, fixture.out),
              data_length_invalid);
    EXPECT_EQ(walk_sgl(fixture.host.dma, descriptor::data_block(0x5000, 0x100), 0xff, reading, fixture.out),
              data_length_invalid);
    EXPECT_EQ(walk_sgl(fixture.host.dma, descriptor::data_block(0x5000, 0), 1, reading, fixture.out),
              data_length_invalid);
}

TEST(sgl_walker, data_block_may_end_at_the_top_of_the_address_space_but_not_beyond)
{
    sgl_fixture fixture;
    EXPECT_EQ(walk_sgl(fixture.host.dma, descriptor::data_block(0xffff'ffff'ffff'ff00, 0x100), 0x100, reading,
                       fixture.out),
              success);
    EXPECT_EQ(fixture.ranges(), (std::vector<host_range>{{0xffff'ffff'ffff'ff00, 0x100, false}}));
    EXPECT_EQ(walk_sgl(fixture.host.dma, descriptor::data_block(0xffff'ffff'ffff'ff00, 0x101), 0x101, reading,
                       fixture.out),
              data_length_invalid);
}

TEST(sgl_walker, unsupported_types_and_sub_types_are_sgl_descriptor_type_invalid)
{
    sgl_fixture fixture;
    const std::vector<descriptor> invalid{
        descriptor::data_block(0x5000, 0x100, spec::sgl_descriptor_subtype::offset),
        with_subtype(descriptor::data_block(0x5000, 0x100), 0xa),
        descriptor::keyed_data_block(0x5000, 0x100, 0x1234),
        descriptor::transport_data_block(0x100, spec::sgl_descriptor_subtype{0xa}),
        of_type(0x6),
        of_type(0xe),
        of_type(0xf),
        with_subtype(descriptor::bit_bucket(0x100), 0x1),
        with_subtype(descriptor::segment(0x10000, 32), 0x1),
        with_subtype(descriptor::last_segment(0x10000, 32), 0x1),
    };
    for (const descriptor& sgl1 : invalid) {
        EXPECT_EQ(walk_sgl(fixture.host.dma, sgl1, 0x100, reading, fixture.out), type_invalid)
            << "identifier " << int{sgl1.identifier.raw};
    }
    EXPECT_TRUE(recorded(fixture.host.dma).empty());
}

TEST(sgl_walker, unsupported_type_inside_a_segment_is_sgl_descriptor_type_invalid)
{
    sgl_fixture fixture;
    fixture.store(0x10000, {descriptor::data_block(0x5000, 0x100), of_type(0x4)});
    EXPECT_EQ(walk_sgl(fixture.host.dma, descriptor::last_segment(0x10000, 32), 0x200, reading, fixture.out),
              type_invalid);
}

TEST(sgl_walker, last_segment_chain_gives_the_data_blocks_in_order_in_one_read)
{
    sgl_fixture fixture;
    fixture.store(0x10000, {descriptor::data_block(0x5000, 0x100), descriptor::data_block(0x9000, 0x80),
                            descriptor::data_block(0x5100, 0x10)});

    EXPECT_EQ(walk_sgl(fixture.host.dma, descriptor::last_segment(0x10000, segment_bytes(3)), 0x190, reading,
                       fixture.out),
              success);

    EXPECT_EQ(fixture.ranges(), (std::vector<host_range>{
                                    {0x5000, 0x100, false}, {0x9000, 0x80, false}, {0x5100, 0x10, false}}));
    EXPECT_EQ(recorded(fixture.host.dma), (std::vector{read_at(0x10000, 48)}));
}

TEST(sgl_walker, segment_chain_is_followed_to_the_last_segment)
{
    sgl_fixture fixture;
    fixture.store(0x10000,
                  {descriptor::data_block(0x5000, 0x100), descriptor::segment(0x12008, segment_bytes(2))});
    fixture.store(0x12008, {descriptor::data_block(0x7000, 0x200),
                            descriptor::last_segment(0x11000, segment_bytes(2))});
    fixture.store(0x11000, {descriptor::data_block(0x9000, 0x300), descriptor::data_block(0x9300, 0x10)});

    EXPECT_EQ(walk_sgl(fixture.host.dma, descriptor::segment(0x10000, segment_bytes(2)), 0x610, reading,
                       fixture.out),
              success);

    EXPECT_EQ(fixture.ranges(), (std::vector<host_range>{
                                    {0x5000, 0x100, false}, {0x7000, 0x200, false}, {0x9000, 0x310, false}}));
    EXPECT_EQ(recorded(fixture.host.dma),
              (std::vector{read_at(0x10000, 32), read_at(0x12008, 32), read_at(0x11000, 32)}));
}

TEST(sgl_walker, zero_length_data_blocks_are_valid_and_describe_nothing)
{
    sgl_fixture fixture;
    fixture.store(0x10000, {descriptor::data_block(0, 0), descriptor::data_block(0x5000, 0x100),
                            descriptor::data_block(0xffff'ffff'ffff'ffff, 0)});
    EXPECT_EQ(walk_sgl(fixture.host.dma, descriptor::last_segment(0x10000, segment_bytes(3)), 0x100, reading,
                       fixture.out),
              success);
    EXPECT_EQ(fixture.ranges(), (std::vector<host_range>{{0x5000, 0x100, false}}));
}

TEST(sgl_walker, bit_bucket_discards_read_data)
{
    sgl_fixture fixture;
    fixture.store(0x10000, {descriptor::data_block(0x5000, 0x100), descriptor::bit_bucket(0x80),
                            descriptor::data_block(0x9000, 0x100)});

    EXPECT_EQ(walk_sgl(fixture.host.dma, descriptor::last_segment(0x10000, segment_bytes(3)), 0x280, reading,
                       fixture.out),
              success);
    EXPECT_EQ(fixture.ranges(),
              (std::vector<host_range>{{0x5000, 0x100, false}, {0, 0x80, true}, {0x9000, 0x100, false}}));

    EXPECT_EQ(walk_sgl(fixture.host.dma, descriptor::bit_bucket(0x200), 0x200, reading, fixture.out),
              success);
    EXPECT_EQ(fixture.ranges(), (std::vector<host_range>{{0, 0x200, true}}));
}

TEST(sgl_walker, bit_bucket_has_no_effect_on_a_write)
{
    sgl_fixture fixture;
    fixture.store(0x10000, {descriptor::data_block(0x5000, 0x100), descriptor::bit_bucket(0x80),
                            descriptor::data_block(0x9000, 0x100)});
    const descriptor sgl1 = descriptor::last_segment(0x10000, segment_bytes(3));

    EXPECT_EQ(walk_sgl(fixture.host.dma, sgl1, 0x200, writing, fixture.out), success);
    EXPECT_EQ(fixture.ranges(), (std::vector<host_range>{{0x5000, 0x100, false}, {0x9000, 0x100, false}}));
    EXPECT_EQ(walk_sgl(fixture.host.dma, sgl1, 0x280, writing, fixture.out), data_length_invalid);
    EXPECT_EQ(walk_sgl(fixture.host.dma, descriptor::bit_bucket(0x200), 0x200, writing, fixture.out),
              data_length_invalid);
}

TEST(sgl_walker, bit_bucket_not_supported_is_sgl_descriptor_type_invalid)
{
    sgl_fixture fixture;
    sgl_walk_options options = reading;
    options.bit_bucket_supported = false;
    EXPECT_EQ(walk_sgl(fixture.host.dma, descriptor::bit_bucket(0x200), 0x200, options, fixture.out),
              type_invalid);
    options.direction = transfer_direction::host_to_controller;
    fixture.store(0x10000, {descriptor::data_block(0x5000, 0x100), descriptor::bit_bucket(0x80)});
    EXPECT_EQ(walk_sgl(fixture.host.dma, descriptor::last_segment(0x10000, 32), 0x100, options, fixture.out),
              type_invalid);
}

TEST(sgl_walker, segment_descriptor_before_the_end_of_a_segment_is_invalid_number_of_descriptors)
{
    sgl_fixture fixture;
    fixture.store(0x10000, {descriptor::data_block(0x5000, 0x100), descriptor::segment(0x11000, 32),
                            descriptor::data_block(0x6000, 0x100)});
    EXPECT_EQ(walk_sgl(fixture.host.dma, descriptor::segment(0x10000, segment_bytes(3)), 0x300, reading,
                       fixture.out),
              invalid_count);

    fixture.store(0x10000, {descriptor::last_segment(0x11000, 32), descriptor::data_block(0x5000, 0x100)});
    EXPECT_EQ(walk_sgl(fixture.host.dma, descriptor::segment(0x10000, segment_bytes(2)), 0x300, reading,
                       fixture.out),
              invalid_count);
}

TEST(sgl_walker, segment_or_last_segment_inside_the_last_segment_is_invalid_sgl_segment_descriptor)
{
    sgl_fixture fixture;
    fixture.store(0x10000, {descriptor::data_block(0x5000, 0x100), descriptor::segment(0x11000, 32)});
    EXPECT_EQ(walk_sgl(fixture.host.dma, descriptor::last_segment(0x10000, 32), 0x200, reading, fixture.out),
              invalid_segment);

    fixture.store(0x10000, {descriptor::data_block(0x5000, 0x100), descriptor::last_segment(0x11000, 32)});
    EXPECT_EQ(walk_sgl(fixture.host.dma, descriptor::last_segment(0x10000, 32), 0x200, reading, fixture.out),
              invalid_segment);

    fixture.store(0x10000, {descriptor::last_segment(0x11000, 32), descriptor::data_block(0x5000, 0x100)});
    EXPECT_EQ(walk_sgl(fixture.host.dma, descriptor::last_segment(0x10000, 32), 0x200, reading, fixture.out),
              invalid_segment);
}

TEST(sgl_walker, segment_that_does_not_lead_on_is_invalid_sgl_segment_descriptor)
{
    sgl_fixture fixture;
    fixture.store(0x10000, {descriptor::data_block(0x5000, 0x100), descriptor::data_block(0x6000, 0x100)});
    EXPECT_EQ(walk_sgl(fixture.host.dma, descriptor::segment(0x10000, 32), 0x200, reading, fixture.out),
              invalid_segment);
}

TEST(sgl_walker, segment_length_zero_or_not_a_multiple_of_16_is_invalid_sgl_segment_descriptor)
{
    sgl_fixture fixture;
    for (const std::uint32_t length : {0U, 8U, 24U, 33U}) {
        EXPECT_EQ(
            walk_sgl(fixture.host.dma, descriptor::segment(0x10000, length), 0x100, reading, fixture.out),
            invalid_segment)
            << length;
        EXPECT_EQ(walk_sgl(fixture.host.dma, descriptor::last_segment(0x10000, length), 0x100, reading,
                           fixture.out),
                  invalid_segment)
            << length;
    }
    fixture.store(0x10000, {descriptor::data_block(0x5000, 0x100), descriptor::last_segment(0x11000, 20)});
    EXPECT_EQ(walk_sgl(fixture.host.dma, descriptor::segment(0x10000, 32), 0x200, reading, fixture.out),
              invalid_segment);
    EXPECT_EQ(recorded(fixture.host.dma), (std::vector{read_at(0x10000, 32)}));
}

TEST(sgl_walker, segment_not_qword_aligned_is_invalid_sgl_segment_descriptor)
{
    sgl_fixture fixture;
    fixture.store(0x10004, {descriptor::data_block(0x5000, 0x100)});
    EXPECT_EQ(walk_sgl(fixture.host.dma, descriptor::last_segment(0x10004, 16), 0x100, reading, fixture.out),
              invalid_segment);
    EXPECT_TRUE(recorded(fixture.host.dma).empty());
    fixture.store(0x10008, {descriptor::data_block(0x5000, 0x100)});
    EXPECT_EQ(walk_sgl(fixture.host.dma, descriptor::last_segment(0x10008, 16), 0x100, reading, fixture.out),
              success);
}

TEST(sgl_walker, segment_beyond_the_address_space_is_data_sgl_length_invalid)
{
    sgl_fixture fixture;
    EXPECT_EQ(walk_sgl(fixture.host.dma, descriptor::last_segment(0xffff'ffff'ffff'fff0, 32), 0x100, reading,
                       fixture.out),
              data_length_invalid);
    EXPECT_TRUE(recorded(fixture.host.dma).empty());
}

TEST(sgl_walker, segment_outside_host_memory_is_data_transfer_error)
{
    sgl_fixture fixture;
    EXPECT_EQ(walk_sgl(fixture.host.dma, descriptor::last_segment(0xffff'ffff'ffff'ffe0, 32), 0x100, reading,
                       fixture.out),
              data_transfer_error);
    EXPECT_EQ(recorded(fixture.host.dma), (std::vector{read_at(0xffff'ffff'ffff'ffe0, 32, dma_unmapped)}));
}

TEST(sgl_walker, dma_failure_reading_a_segment_is_data_transfer_error)
{
    sgl_fixture fixture;
    fixture.store(0x10000, {descriptor::data_block(0x5000, 0x100), descriptor::last_segment(0x11000, 16)});
    fixture.store(0x11000, {descriptor::data_block(0x6000, 0x100)});
    const descriptor sgl1 = descriptor::segment(0x10000, 32);
    ASSERT_EQ(walk_sgl(fixture.host.dma, sgl1, 0x200, reading, fixture.out), success);
    fixture.host.dma.clear();

    fixture.host.dma.fail_nth(2, access_kind::read);
    EXPECT_EQ(walk_sgl(fixture.host.dma, sgl1, 0x200, reading, fixture.out), data_transfer_error);
    EXPECT_EQ(recorded(fixture.host.dma),
              (std::vector{read_at(0x10000, 32), read_at(0x11000, 16, dma_fault)}));
}

TEST(sgl_walker, sgl_longer_than_the_transfer_fails_as_soon_as_it_passes_the_length)
{
    sgl_fixture fixture;
    fixture.store(0x10000, {descriptor::data_block(0x5000, 0x100), descriptor::data_block(0x6000, 0x100),
                            descriptor::segment(0x11000, 16)});
    EXPECT_EQ(walk_sgl(fixture.host.dma, descriptor::segment(0x10000, segment_bytes(3)), 0x180, reading,
                       fixture.out),
              data_length_invalid);
    EXPECT_EQ(recorded(fixture.host.dma), (std::vector{read_at(0x10000, 48)}));
}

TEST(sgl_walker, sgl_shorter_than_the_transfer_is_data_sgl_length_invalid)
{
    sgl_fixture fixture;
    fixture.store(0x10000, {descriptor::data_block(0x5000, 0x100), descriptor::bit_bucket(0x10)});
    EXPECT_EQ(walk_sgl(fixture.host.dma, descriptor::last_segment(0x10000, 32), 0x111, reading, fixture.out),
              data_length_invalid);
}

TEST(sgl_walker_excess_length, data_block_longer_than_the_transfer_is_cut_at_the_length)
{
    sgl_fixture fixture;
    EXPECT_EQ(walk_sgl(fixture.host.dma, descriptor::data_block(0x5000, 0x1000), 0x200, reading_excess,
                       fixture.out),
              success);
    EXPECT_EQ(fixture.ranges(), (std::vector<host_range>{{0x5000, 0x200, false}}));
    EXPECT_EQ(walk_sgl(fixture.host.dma, descriptor::data_block(0x5000, 0x1000), 0x1000, writing_excess,
                       fixture.out),
              success);
    EXPECT_EQ(fixture.ranges(), (std::vector<host_range>{{0x5000, 0x1000, false}}));
    EXPECT_TRUE(recorded(fixture.host.dma).empty());
}

TEST(sgl_walker_excess_length, descriptors_past_the_length_are_not_used_and_no_further_segment_is_read)
{
    sgl_fixture fixture;
    // Past the length: a data block, a reserved type and a segment with a reserved type.
    fixture.store(0x10000,
                  {descriptor::data_block(0x5000, 0x100), descriptor::data_block(0x6000, 0x100),
                   descriptor::data_block(0x7000, 0x100), of_type(0x6), descriptor::segment(0x11000, 32)});
    fixture.store(0x11000, {of_type(0x6), of_type(0x6)});
    const descriptor sgl1 = descriptor::segment(0x10000, segment_bytes(5));

    EXPECT_EQ(walk_sgl(fixture.host.dma, sgl1, 0x180, reading_excess, fixture.out), success);
    EXPECT_EQ(fixture.ranges(), (std::vector<host_range>{{0x5000, 0x100, false}, {0x6000, 0x80, false}}));
    EXPECT_EQ(recorded(fixture.host.dma), (std::vector{read_at(0x10000, segment_bytes(5))}));

    // Read in pieces, the pieces after the one that reaches the length are not read either.
    fixture.host.dma.clear();
    sgl_walk_options pieces = reading_excess;
    pieces.max_segment_descriptors = 2;
    EXPECT_EQ(walk_sgl(fixture.host.dma, sgl1, 0x200, pieces, fixture.out), success);
    EXPECT_EQ(fixture.ranges(), (std::vector<host_range>{{0x5000, 0x100, false}, {0x6000, 0x100, false}}));
    EXPECT_EQ(recorded(fixture.host.dma), (std::vector{read_at(0x10000, 32)}));

    // Exactly at the end of a segment that leads on: its Segment descriptor is not followed.
    fixture.host.dma.clear();
    fixture.store(0x12000, {descriptor::data_block(0x5000, 0x100), descriptor::segment(0x11000, 32)});
    EXPECT_EQ(
        walk_sgl(fixture.host.dma, descriptor::segment(0x12000, 32), 0x100, reading_excess, fixture.out),
        success);
    EXPECT_EQ(fixture.ranges(), (std::vector<host_range>{{0x5000, 0x100, false}}));
    EXPECT_EQ(recorded(fixture.host.dma), (std::vector{read_at(0x12000, 32)}));

    // Without excess_length the same SGL passes the length.
    EXPECT_EQ(walk_sgl(fixture.host.dma, sgl1, 0x180, reading, fixture.out), data_length_invalid);
}

TEST(sgl_walker_excess_length, sgl_shorter_than_the_transfer_is_still_a_length_error)
{
    sgl_fixture fixture;
    EXPECT_EQ(
        walk_sgl(fixture.host.dma, descriptor::data_block(0x5000, 0x100), 0x101, reading_excess, fixture.out),
        data_length_invalid);
    fixture.store(0x10000, {descriptor::data_block(0x5000, 0x100), descriptor::bit_bucket(0x10)});
    EXPECT_EQ(
        walk_sgl(fixture.host.dma, descriptor::last_segment(0x10000, 32), 0x111, reading_excess, fixture.out),
        data_length_invalid);
    // A Bit Bucket describes nothing of a write.
    EXPECT_EQ(
        walk_sgl(fixture.host.dma, descriptor::last_segment(0x10000, 32), 0x110, writing_excess, fixture.out),
        data_length_invalid);

    // MPTR with PSDT 10b: longer is cut, shorter is Metadata SGL Length Invalid.
    fixture.store(0x10100, {descriptor::data_block(0x8000, 0x40)});
    const auto sqe = command(spec::data_pointer_type::sgl_metadata_descriptor, {}, 0x10100);
    EXPECT_EQ(nvmekit::walk_metadata_pointer(fixture.host.dma, sqe, 0x20, reading_excess, fixture.out),
              success);
    EXPECT_EQ(fixture.ranges(), (std::vector<host_range>{{0x8000, 0x20, false}}));
    EXPECT_EQ(nvmekit::walk_metadata_pointer(fixture.host.dma, sqe, 0x41, reading_excess, fixture.out),
              metadata_length_invalid);
}

TEST(sgl_walker_excess_length, bit_bucket_that_crosses_the_length_is_cut_on_a_read)
{
    sgl_fixture fixture;
    fixture.store(0x10000, {descriptor::data_block(0x5000, 0x100), descriptor::bit_bucket(0x100),
                            descriptor::data_block(0x9000, 0x100)});
    const descriptor sgl1 = descriptor::last_segment(0x10000, segment_bytes(3));

    EXPECT_EQ(walk_sgl(fixture.host.dma, sgl1, 0x180, reading_excess, fixture.out), success);
    EXPECT_EQ(fixture.ranges(), (std::vector<host_range>{{0x5000, 0x100, false}, {0, 0x80, true}}));
    // A write skips the Bit Bucket, so the length is crossed in the data block after it.
    EXPECT_EQ(walk_sgl(fixture.host.dma, sgl1, 0x180, writing_excess, fixture.out), success);
    EXPECT_EQ(fixture.ranges(), (std::vector<host_range>{{0x5000, 0x100, false}, {0x9000, 0x80, false}}));
    EXPECT_EQ(walk_sgl(fixture.host.dma, descriptor::bit_bucket(0x200), 0x10, reading_excess, fixture.out),
              success);
    EXPECT_EQ(fixture.ranges(), (std::vector<host_range>{{0, 0x10, true}}));
}

TEST(sgl_walker, segments_are_read_in_pieces_of_max_segment_descriptors)
{
    sgl_fixture fixture;
    fixture.store(0x10000, {descriptor::data_block(0x5000, 0x10), descriptor::data_block(0x6000, 0x10),
                            descriptor::data_block(0x7000, 0x10), descriptor::data_block(0x8000, 0x10),
                            descriptor::data_block(0x9000, 0x10)});
    sgl_walk_options options = reading;
    options.max_segment_descriptors = 2;

    EXPECT_EQ(walk_sgl(fixture.host.dma, descriptor::last_segment(0x10000, segment_bytes(5)), 0x50, options,
                       fixture.out),
              success);

    EXPECT_EQ(fixture.out.size(), 5U);
    EXPECT_EQ(recorded(fixture.host.dma),
              (std::vector{read_at(0x10000, 32), read_at(0x10020, 32), read_at(0x10040, 16)}));
}

TEST(sgl_walker, large_segment_is_read_in_pieces_of_the_256_descriptor_buffer)
{
    sgl_fixture fixture;
    std::vector<descriptor> segment;
    for (std::uint64_t i = 0; i < 300; ++i) {
        segment.push_back(descriptor::data_block(0x100'0000 + i * 0x1000, 0x10));
    }
    fixture.store(0x10000, segment);
    std::vector<host_range> storage(300);
    host_range_list out{storage};
    sgl_walk_options options = reading;
    options.max_segment_descriptors = 1000;

    EXPECT_EQ(walk_sgl(fixture.host.dma, descriptor::last_segment(0x10000, segment_bytes(300)), 300 * 0x10,
                       options, out),
              success);

    EXPECT_EQ(out.size(), 300U);
    EXPECT_EQ(recorded(fixture.host.dma), (std::vector{read_at(0x10000, 4096), read_at(0x11000, 44 * 16)}));
}

TEST(sgl_walker, more_descriptors_than_max_descriptors_is_invalid_number_without_reading_them)
{
    sgl_fixture fixture;
    sgl_walk_options options = reading;
    options.max_descriptors = 4;
    fixture.store(0x10000, {descriptor::data_block(0x5000, 0x10), descriptor::data_block(0x6000, 0x10),
                            descriptor::segment(0x11000, 48)});
    fixture.store(0x11000, {descriptor::data_block(0x7000, 0x10), descriptor::data_block(0x8000, 0x10),
                            descriptor::last_segment(0x12000, 16)});
    fixture.store(0x12000, {descriptor::data_block(0x9000, 0x10)});

    EXPECT_EQ(walk_sgl(fixture.host.dma, descriptor::segment(0x10000, 48), 0x50, options, fixture.out),
              invalid_count);
    EXPECT_EQ(recorded(fixture.host.dma), (std::vector{read_at(0x10000, 48)}));

    options.max_descriptors = 7;
    EXPECT_EQ(walk_sgl(fixture.host.dma, descriptor::segment(0x10000, 48), 0x50, options, fixture.out),
              success);
    EXPECT_EQ(fixture.out.size(), 5U);

    EXPECT_EQ(walk_sgl(fixture.host.dma, descriptor::last_segment(0x10000, 0xffff'fff0), 0x50, options,
                       fixture.out),
              invalid_count);
}

TEST(sgl_walker, cycle_of_segments_ends_at_max_descriptors)
{
    sgl_fixture fixture;
    fixture.store(0x10000, {descriptor::data_block(0x5000, 0), descriptor::segment(0x10000, 32)});
    sgl_walk_options options = reading;
    options.max_descriptors = 10;

    EXPECT_EQ(walk_sgl(fixture.host.dma, descriptor::segment(0x10000, 32), 0x100, options, fixture.out),
              invalid_count);
    EXPECT_EQ(fixture.host.dma.reads(), 5U);

    fixture.host.dma.clear();
    EXPECT_EQ(walk_sgl(fixture.host.dma, descriptor::segment(0x10000, 32), 0x100, reading, fixture.out),
              invalid_count);
    EXPECT_EQ(fixture.host.dma.reads(), 512U);
}

TEST(sgl_walker, cycle_of_data_ends_at_the_length_or_the_range_capacity)
{
    sgl_fixture fixture;
    fixture.store(0x10000, {descriptor::data_block(0x5000, 0x10), descriptor::segment(0x10000, 32)});
    EXPECT_EQ(walk_sgl(fixture.host.dma, descriptor::segment(0x10000, 32), 0x35, reading, fixture.out),
              data_length_invalid);
    EXPECT_EQ(fixture.host.dma.reads(), 4U);
}

TEST(sgl_walker, more_ranges_than_the_output_holds_is_invalid_number_of_descriptors)
{
    sgl_fixture fixture;
    fixture.store(0x10000, {descriptor::data_block(0x5000, 0x10), descriptor::data_block(0x7000, 0x10),
                            descriptor::data_block(0x9000, 0x10)});
    std::array<host_range, 2> storage{};
    host_range_list small{storage};
    EXPECT_EQ(walk_sgl(fixture.host.dma, descriptor::last_segment(0x10000, 48), 0x30, reading, small),
              invalid_count);

    fixture.store(0x10000, {descriptor::data_block(0x5000, 0x10), descriptor::data_block(0x5010, 0x10),
                            descriptor::data_block(0x9000, 0x10)});
    EXPECT_EQ(walk_sgl(fixture.host.dma, descriptor::last_segment(0x10000, 48), 0x30, reading, small),
              success);
    EXPECT_EQ(std::vector<host_range>(small.ranges().begin(), small.ranges().end()),
              (std::vector<host_range>{{0x5000, 0x20, false}, {0x9000, 0x10, false}}));
}

TEST(sgl_walker, dword_granularity_rejects_unaligned_data_blocks)
{
    sgl_fixture fixture;
    sgl_walk_options options = reading;
    options.dword_granularity = true;
    EXPECT_EQ(walk_sgl(fixture.host.dma, descriptor::data_block(0x5001, 0x100), 0x100, options, fixture.out),
              granularity_invalid);
    EXPECT_EQ(walk_sgl(fixture.host.dma, descriptor::data_block(0x5000, 0x102), 0x102, options, fixture.out),
              granularity_invalid);
    EXPECT_EQ(walk_sgl(fixture.host.dma, descriptor::data_block(0x5004, 0x104), 0x104, options, fixture.out),
              success);
    EXPECT_EQ(walk_sgl(fixture.host.dma, descriptor::bit_bucket(0x103), 0x103, options, fixture.out),
              success);
    EXPECT_EQ(walk_sgl(fixture.host.dma, descriptor::data_block(0x5001, 0x100), 0x100, reading, fixture.out),
              success);
}

TEST(sgl_walker, sgl_support_reports_what_the_walker_accepts)
{
    EXPECT_EQ(nvmekit::sgl_support_for(reading).raw, 0x000b'0001U);
    sgl_walk_options options = writing;
    options.bit_bucket_supported = false;
    options.dword_granularity = true;
    EXPECT_EQ(nvmekit::sgl_support_for(options).raw, 0x000a'0002U);
    static_assert(nvmekit::sgl_support_for(reading).get(spec::sgl_support::metadata_sgl));
    // SGLS bit 18, SGL Length Larger than Data: from excess_length.
    static_assert(!nvmekit::sgl_support_for(reading).get(spec::sgl_support::length_larger_than_data));
    EXPECT_EQ(nvmekit::sgl_support_for(reading_excess).raw, 0x000f'0001U);
    static_assert(nvmekit::sgl_support_for(reading_excess).get(spec::sgl_support::length_larger_than_data));
}

TEST(data_pointer_walker, psdt_selects_prps_or_an_sgl)
{
    sgl_fixture fixture;
    fixture.host.memory.store(0x10000, std::uint64_t{0x7000});
    fixture.host.memory.store(0x10008, std::uint64_t{0x3000});
    const spec::data_pointer prps{0x5000, 0x10000};

    EXPECT_EQ(nvmekit::walk_data_pointer(fixture.host.dma, command(spec::data_pointer_type::prp, prps),
                                         3 * 4096, 4096, reading, fixture.out),
              success);
    EXPECT_EQ(fixture.ranges(),
              (std::vector<host_range>{{0x5000, 4096, false}, {0x7000, 4096, false}, {0x3000, 4096, false}}));
    EXPECT_EQ(nvmekit::walk_data_pointer(fixture.host.dma, command(spec::data_pointer_type::prp, {0x5002, 0}),
                                         8, 4096, reading, fixture.out),
              prp_offset_invalid);

    const spec::data_pointer sgl = spec::to_data_pointer(descriptor::data_block(0x9001, 0x123));
    for (const auto psdt : {spec::data_pointer_type::sgl_contiguous_metadata,
                            spec::data_pointer_type::sgl_metadata_descriptor}) {
        EXPECT_EQ(nvmekit::walk_data_pointer(fixture.host.dma, command(psdt, sgl), 0x123, 4096, reading,
                                             fixture.out),
                  success);
        EXPECT_EQ(fixture.ranges(), (std::vector<host_range>{{0x9001, 0x123, false}}));
        EXPECT_EQ(nvmekit::walk_data_pointer(fixture.host.dma, command(psdt, sgl), 0x124, 4096, reading,
                                             fixture.out),
                  data_length_invalid);
    }

    ASSERT_TRUE(fixture.out.push(0x1, 1));
    EXPECT_EQ(nvmekit::walk_data_pointer(fixture.host.dma, command(spec::data_pointer_type{3}, sgl), 0x123,
                                         4096, reading, fixture.out),
              invalid_field);
    EXPECT_TRUE(fixture.out.empty());
}

TEST(metadata_pointer_walker, zero_length_succeeds_without_ranges_or_dma)
{
    sgl_fixture fixture;
    ASSERT_TRUE(fixture.out.push(0x1, 1));
    EXPECT_EQ(nvmekit::walk_metadata_pointer(fixture.host.dma, command(spec::data_pointer_type{3}, {}, 0x3),
                                             0, reading, fixture.out),
              success);
    EXPECT_TRUE(fixture.out.empty());
    EXPECT_TRUE(recorded(fixture.host.dma).empty());
}

TEST(metadata_pointer_walker, prps_use_a_dword_aligned_contiguous_buffer)
{
    sgl_fixture fixture;
    EXPECT_EQ(nvmekit::walk_metadata_pointer(fixture.host.dma,
                                             command(spec::data_pointer_type::prp, {}, 0x8004), 0x40, reading,
                                             fixture.out),
              success);
    EXPECT_EQ(fixture.ranges(), (std::vector<host_range>{{0x8004, 0x40, false}}));
    EXPECT_EQ(nvmekit::walk_metadata_pointer(fixture.host.dma,
                                             command(spec::data_pointer_type::prp, {}, 0x8002), 0x40, reading,
                                             fixture.out),
              invalid_field);
    EXPECT_TRUE(recorded(fixture.host.dma).empty());
}

TEST(metadata_pointer_walker, psdt_01b_uses_a_byte_aligned_contiguous_buffer)
{
    sgl_fixture fixture;
    EXPECT_EQ(nvmekit::walk_metadata_pointer(
                  fixture.host.dma, command(spec::data_pointer_type::sgl_contiguous_metadata, {}, 0x8001),
                  0x3, writing, fixture.out),
              success);
    EXPECT_EQ(fixture.ranges(), (std::vector<host_range>{{0x8001, 0x3, false}}));
    EXPECT_TRUE(recorded(fixture.host.dma).empty());
}

TEST(metadata_pointer_walker, contiguous_buffer_beyond_the_address_space_is_invalid_field)
{
    sgl_fixture fixture;
    EXPECT_EQ(nvmekit::walk_metadata_pointer(
                  fixture.host.dma,
                  command(spec::data_pointer_type::sgl_contiguous_metadata, {}, 0xffff'ffff'ffff'ff00), 0x101,
                  reading, fixture.out),
              invalid_field);
    EXPECT_EQ(nvmekit::walk_metadata_pointer(fixture.host.dma,
                                             command(spec::data_pointer_type::prp, {}, 0xffff'ffff'ffff'ff00),
                                             0x100, reading, fixture.out),
              success);
}

TEST(metadata_pointer_walker, contiguous_buffer_over_4_gib_takes_two_ranges)
{
    sgl_fixture fixture;
    constexpr std::uint64_t max = std::numeric_limits<std::uint32_t>::max();
    EXPECT_EQ(nvmekit::walk_metadata_pointer(fixture.host.dma,
                                             command(spec::data_pointer_type::prp, {}, 0x1000), max + 0x10,
                                             reading, fixture.out),
              success);
    EXPECT_EQ(fixture.ranges(), (std::vector<host_range>{{0x1000, static_cast<std::uint32_t>(max), false},
                                                         {0x1000 + max, 0x10, false}}));
    std::array<host_range, 1> storage{};
    host_range_list one{storage};
    EXPECT_EQ(nvmekit::walk_metadata_pointer(fixture.host.dma,
                                             command(spec::data_pointer_type::prp, {}, 0x1000), max + 0x10,
                                             reading, one),
              invalid_field);
}

TEST(metadata_pointer_walker, psdt_10b_reads_one_descriptor_at_mptr)
{
    sgl_fixture fixture;
    fixture.store(0x10008, {descriptor::data_block(0x8003, 0x21)});

    EXPECT_EQ(nvmekit::walk_metadata_pointer(
                  fixture.host.dma, command(spec::data_pointer_type::sgl_metadata_descriptor, {}, 0x10008),
                  0x21, reading, fixture.out),
              success);

    EXPECT_EQ(fixture.ranges(), (std::vector<host_range>{{0x8003, 0x21, false}}));
    EXPECT_EQ(recorded(fixture.host.dma), (std::vector{read_at(0x10008, 16)}));
}

TEST(metadata_pointer_walker, psdt_10b_descriptor_may_lead_to_a_last_segment)
{
    sgl_fixture fixture;
    fixture.store(0x10000, {descriptor::last_segment(0x11000, 48)});
    fixture.store(0x11000, {descriptor::data_block(0x8000, 0x8), descriptor::bit_bucket(0x8),
                            descriptor::data_block(0x9000, 0x8)});

    EXPECT_EQ(nvmekit::walk_metadata_pointer(
                  fixture.host.dma, command(spec::data_pointer_type::sgl_metadata_descriptor, {}, 0x10000),
                  0x18, reading, fixture.out),
              success);

    EXPECT_EQ(fixture.ranges(),
              (std::vector<host_range>{{0x8000, 0x8, false}, {0, 0x8, true}, {0x9000, 0x8, false}}));
    EXPECT_EQ(recorded(fixture.host.dma), (std::vector{read_at(0x10000, 16), read_at(0x11000, 48)}));
}

TEST(metadata_pointer_walker, psdt_10b_length_errors_are_metadata_sgl_length_invalid)
{
    sgl_fixture fixture;
    fixture.store(0x10000, {descriptor::data_block(0x8000, 0x20)});
    fixture.store(0x10010, {descriptor::data_block(0xffff'ffff'ffff'fff0, 0x20)});
    fixture.store(0x10020, {descriptor::last_segment(0xffff'ffff'ffff'fff0, 0x20)});
    const auto sqe = [](std::uint64_t mptr) {
        return command(spec::data_pointer_type::sgl_metadata_descriptor, {}, mptr);
    };

    EXPECT_EQ(nvmekit::walk_metadata_pointer(fixture.host.dma, sqe(0x10000), 0x21, reading, fixture.out),
              metadata_length_invalid);
    EXPECT_EQ(nvmekit::walk_metadata_pointer(fixture.host.dma, sqe(0x10000), 0x1f, reading, fixture.out),
              metadata_length_invalid);
    EXPECT_EQ(nvmekit::walk_metadata_pointer(fixture.host.dma, sqe(0x10010), 0x20, reading, fixture.out),
              metadata_length_invalid);
    EXPECT_EQ(nvmekit::walk_metadata_pointer(fixture.host.dma, sqe(0x10020), 0x20, reading, fixture.out),
              metadata_length_invalid);
}

TEST(metadata_pointer_walker, psdt_10b_mptr_not_qword_aligned_is_invalid_field)
{
    sgl_fixture fixture;
    EXPECT_EQ(nvmekit::walk_metadata_pointer(
                  fixture.host.dma, command(spec::data_pointer_type::sgl_metadata_descriptor, {}, 0x10004),
                  0x20, reading, fixture.out),
              invalid_field);
    EXPECT_TRUE(recorded(fixture.host.dma).empty());
}

TEST(metadata_pointer_walker, psdt_10b_dma_failure_reading_mptr_is_data_transfer_error)
{
    sgl_fixture fixture;
    fixture.store(0x10000, {descriptor::data_block(0x8000, 0x20)});
    fixture.host.dma.fail_nth(1, access_kind::read);
    EXPECT_EQ(nvmekit::walk_metadata_pointer(
                  fixture.host.dma, command(spec::data_pointer_type::sgl_metadata_descriptor, {}, 0x10000),
                  0x20, reading, fixture.out),
              data_transfer_error);
    EXPECT_EQ(nvmekit::walk_metadata_pointer(
                  fixture.host.dma, command(spec::data_pointer_type::sgl_metadata_descriptor, {}, 0x40000),
                  0x20, reading, fixture.out),
              data_transfer_error);
}

TEST(metadata_pointer_walker, reserved_psdt_is_invalid_field)
{
    sgl_fixture fixture;
    EXPECT_EQ(nvmekit::walk_metadata_pointer(fixture.host.dma,
                                             command(spec::data_pointer_type{3}, {}, 0x10000), 0x20, reading,
                                             fixture.out),
              invalid_field);
    EXPECT_TRUE(recorded(fixture.host.dma).empty());
}

TEST(sgl_walker_death, zero_descriptors_per_segment_read_asserts)
{
    if (!asserts_enabled) {
        GTEST_SKIP() << "NVMEKIT_ASSERT is compiled out";
    }
    sgl_fixture fixture;
    sgl_walk_options options = reading;
    options.max_segment_descriptors = 0;
    EXPECT_DEATH(static_cast<void>(walk_sgl(fixture.host.dma, descriptor::last_segment(0x10000, 16), 0x10,
                                            options, fixture.out)),
                 "max_segment_descriptors");
}

namespace {

/// One piece of a random SGL: a data block of host memory, or a bit bucket.
struct piece {
    std::uint64_t address = 0;
    std::uint32_t length = 0;
    bool bit_bucket = false;
};

descriptor describe(const piece& value)
{
    return value.bit_bucket ? descriptor::bit_bucket(value.length)
                            : descriptor::data_block(value.address, value.length);
}

/// Writes `pieces` as an SGL in `memory` (segments of random sizes, qword or 16-byte aligned)
/// and returns SGL1.
descriptor build_sgl(nvmekit::testing::flat_memory& memory, const std::vector<piece>& pieces,
                     std::mt19937_64& random)
{
    if (pieces.size() == 1 && random() % 2 == 0) {
        return describe(pieces.front());
    }
    descriptor sgl1{};
    std::uint64_t pointer_slot = 0;
    std::size_t index = 0;
    bool first = true;
    while (true) {
        const std::size_t capacity = 2 + random() % 6;
        const std::size_t remaining = pieces.size() - index;
        const bool last = remaining <= capacity;
        const std::size_t data_count = last ? remaining : capacity - 1;
        const std::size_t count = last ? remaining : capacity;
        const std::uint64_t segment = memory.allocate(count * 16, random() % 2 == 0 ? 8 : 16).value();
        for (std::size_t i = 0; i < data_count; ++i) {
            memory.store(segment + i * 16, describe(pieces[index + i]));
        }
        const auto length = static_cast<std::uint32_t>(count * 16);
        const descriptor pointer =
            last ? descriptor::last_segment(segment, length) : descriptor::segment(segment, length);
        if (first) {
            sgl1 = pointer;
            first = false;
        } else {
            memory.store(pointer_slot, pointer);
        }
        index += data_count;
        if (last) {
            return sgl1;
        }
        pointer_slot = segment + data_count * 16;
    }
}

} // namespace

TEST(sgl_walker_random, random_layouts_describe_the_length_and_round_trip_the_data)
{
    std::mt19937_64 random{77031};
    for (int round = 0; round < 300; ++round) {
        nvmekit::testing::flat_memory memory;
        memory.add_range(0x100'0000, 0x40'0000);
        const bool read = random() % 2 == 0;
        const sgl_walk_options options{.direction = read ? transfer_direction::controller_to_host
                                                         : transfer_direction::host_to_controller};

        std::vector<piece> pieces(1 + random() % 40);
        std::uint64_t length = 0;
        for (auto& value : pieces) {
            value.length = static_cast<std::uint32_t>(random() % 5 == 0 ? 0 : 1 + random() % 6000);
            value.bit_bucket = random() % 6 == 0;
            if (!value.bit_bucket && value.length != 0) {
                value.address = memory.allocate(value.length, 1).value();
            }
            if (!value.bit_bucket || read) {
                length += value.length;
            }
        }
        if (length == 0) {
            continue;
        }
        const descriptor sgl1 = build_sgl(memory, pieces, random);

        std::vector<host_range> storage(pieces.size());
        host_range_list out{storage};
        ASSERT_EQ(walk_sgl(memory, sgl1, length, options, out), success) << "round " << round;
        ASSERT_EQ(out.total_bytes(), length) << "round " << round;

        std::vector<std::byte> data(length);
        for (auto& byte : data) {
            byte = static_cast<std::byte>(random());
        }
        ASSERT_EQ(nvmekit::copy_to_host(memory, out, std::span<const std::byte>{data}), success);
        std::uint64_t position = 0;
        for (const piece& value : pieces) {
            if (value.bit_bucket && !read) {
                continue;
            }
            if (!value.bit_bucket && value.length != 0) {
                const auto bytes = memory.bytes(value.address, value.length);
                ASSERT_TRUE(std::equal(bytes.begin(), bytes.end(),
                                       data.begin() + static_cast<std::ptrdiff_t>(position)))
                    << "round " << round;
            }
            position += value.length;
        }

        std::vector<std::byte> read_back(length, std::byte{0xee});
        ASSERT_EQ(nvmekit::copy_from_host(memory, out, std::span<std::byte>{read_back}), success);
        position = 0;
        for (const piece& value : pieces) {
            if (value.bit_bucket && !read) {
                continue;
            }
            for (std::uint32_t i = 0; i < value.length; i += 61) {
                const std::byte expected = value.bit_bucket ? std::byte{0xee} : data[position + i];
                ASSERT_EQ(read_back[position + i], expected) << "round " << round;
            }
            position += value.length;
        }
    }
}
