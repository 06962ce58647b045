#include <nvmekit/spec/status.hpp>

#include <gtest/gtest.h>

namespace spec = nvmekit::spec;

TEST(status, packs_type_code_and_flags_into_the_15_bit_field)
{
    const spec::status value = spec::status{spec::command_specific_status::invalid_queue_size}.with_dnr();
    EXPECT_EQ(value.raw, (1U << 14) | (0x1U << 8) | 0x02U);
    EXPECT_EQ(value.type(), spec::status_code_type::command_specific);
    EXPECT_EQ(value.code(), 0x02);
    EXPECT_TRUE(value.do_not_retry());
    EXPECT_FALSE(value.is_success());
}

TEST(status, codes_with_the_same_number_in_different_types_differ)
{
    const spec::status invalid_field{spec::generic_status::invalid_field};
    const spec::status invalid_size{spec::command_specific_status::invalid_queue_size};
    EXPECT_EQ(invalid_field.code(), invalid_size.code());
    EXPECT_NE(invalid_field, invalid_size);
    EXPECT_FALSE(invalid_field.same_code(invalid_size));
}

TEST(status, same_code_ignores_retry_flags)
{
    const spec::status plain{spec::media_status::unrecovered_read_error};
    const spec::status flagged = plain.with_dnr().with(spec::status::more, true).with(spec::status::crd, 3);
    EXPECT_TRUE(plain.same_code(flagged));
    EXPECT_NE(plain, flagged);
    EXPECT_EQ(flagged.get(spec::status::crd), 3);
}

TEST(status, success_is_generic_zero)
{
    EXPECT_TRUE(spec::status::success().is_success());
    EXPECT_EQ(spec::status::success().raw, 0);
    EXPECT_FALSE(spec::status{spec::path_status::internal_path_error}.is_success());
}

TEST(status, names_every_code_of_each_type)
{
    EXPECT_EQ(spec::name(spec::status{spec::generic_status::prp_offset_invalid}), "PRP Offset Invalid");
    EXPECT_EQ(spec::name(spec::status{spec::command_specific_status::invalid_queue_deletion}),
              "Invalid Queue Deletion");
    EXPECT_EQ(spec::name(spec::status{spec::media_status::compare_failure}), "Compare Failure");
    EXPECT_EQ(spec::name(spec::status{spec::path_status::aborted_by_host}), "Command Aborted By Host");
    EXPECT_EQ(spec::name(spec::fabrics_status::connect_invalid_host), "Connect Invalid Host");
    for (unsigned code = 0; code <= 0x24; ++code) {
        if (code == 0x17) {
            continue; // reserved in Base 2.0
        }
        EXPECT_FALSE(spec::name(static_cast<spec::generic_status>(code)).empty()) << code;
    }
    for (unsigned code = 0; code <= 0x2d; ++code) {
        if (code == 0x04 || code == 0x17) {
            continue; // reserved in Base 2.0
        }
        EXPECT_FALSE(spec::name(static_cast<spec::command_specific_status>(code)).empty()) << code;
    }
    EXPECT_TRUE(spec::name(spec::status{spec::status_code_type::generic, 0x17}).empty());
}

TEST(status, round_trips_through_raw_field)
{
    for (unsigned raw = 0; raw < (1U << 15); raw += 7) {
        const spec::status value{static_cast<std::uint16_t>(raw)};
        spec::status rebuilt{value.type(), value.code()};
        rebuilt.set(spec::status::crd, value.get(spec::status::crd));
        rebuilt.set(spec::status::more, value.get(spec::status::more));
        rebuilt.set(spec::status::dnr, value.get(spec::status::dnr));
        EXPECT_EQ(rebuilt.raw, raw);
    }
}
