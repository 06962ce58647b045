#include <nvmekit/state/host_mistakes.hpp>

#include <gtest/gtest.h>

namespace {
namespace host_mistakes_test {

using nvmekit::host_mistake_event;
using nvmekit::register_error_event;
using nvmekit::register_host_error;
using nvmekit::trace_event;
namespace spec = nvmekit::spec;

TEST(host_mistakes, a_status_naming_a_host_mistake_gives_its_event)
{
    EXPECT_EQ(host_mistake_event(spec::status{spec::generic_status::invalid_opcode}),
              trace_event::err_invalid_opcode);
    EXPECT_EQ(host_mistake_event(spec::status{spec::generic_status::invalid_field}.with_dnr()),
              trace_event::err_invalid_field);
    EXPECT_EQ(host_mistake_event(spec::status{spec::generic_status::sgl_offset_invalid}),
              trace_event::err_invalid_sgl);
    EXPECT_EQ(host_mistake_event(spec::status{spec::command_specific_status::invalid_queue_identifier}),
              trace_event::err_invalid_qid);
    EXPECT_EQ(host_mistake_event(spec::status{spec::command_specific_status::invalid_format}),
              trace_event::err_invalid_format);
}

TEST(host_mistakes, other_failures_are_command_failed)
{
    EXPECT_EQ(host_mistake_event(spec::status{spec::generic_status::data_transfer_error}),
              trace_event::command_failed);
    EXPECT_EQ(host_mistake_event(spec::status{spec::generic_status::internal_error}),
              trace_event::command_failed);
}

TEST(host_mistakes, every_register_refusal_has_its_event)
{
    EXPECT_EQ(register_error_event(register_host_error::misaligned), trace_event::err_mmio_misaligned);
    EXPECT_EQ(register_error_event(register_host_error::width_mismatch),
              trace_event::err_mmio_width_mismatch);
    EXPECT_EQ(register_error_event(register_host_error::reserved_space_write),
              trace_event::err_mmio_reserved_write);
    EXPECT_EQ(register_error_event(register_host_error::read_only_register_write),
              trace_event::err_mmio_read_only_register_write);
    EXPECT_EQ(register_error_event(register_host_error::read_only_bits_write),
              trace_event::err_mmio_read_only_bits_write);
    EXPECT_EQ(register_error_event(register_host_error::not_a_doorbell),
              trace_event::err_mmio_not_a_doorbell);
    EXPECT_EQ(register_error_event(register_host_error::doorbell_beyond_max_queue),
              trace_event::err_mmio_doorbell_beyond_max_queue);
    EXPECT_EQ(register_error_event(register_host_error::nssr_not_supported),
              trace_event::err_mmio_nssr_unsupported);
    EXPECT_EQ(register_error_event(register_host_error::unsupported_width),
              trace_event::err_mmio_unsupported_width);
}

static_assert(host_mistake_event(spec::status{spec::generic_status::lba_out_of_range}) ==
              trace_event::err_lba_out_of_range);

} // namespace host_mistakes_test
} // namespace
