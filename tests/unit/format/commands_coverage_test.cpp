#include <string>
#include <type_traits>

#include <gtest/gtest.h>

#include <nvmekit/format/commands.hpp>

namespace spec = nvmekit::spec;

namespace {

// Every type of spec/commands.hpp has a formatter; the templates are checked with each opcode they
// accept, through their aliases.
static_assert(fmt::is_formattable<spec::admin_command>::value);
static_assert(fmt::is_formattable<spec::io_command>::value);
static_assert(fmt::is_formattable<spec::uuid_index_cdw14>::value);
static_assert(fmt::is_formattable<spec::delete_io_queue_cdw10>::value);
static_assert(fmt::is_formattable<spec::delete_io_queue_view<spec::admin_opcode::delete_io_sq>>::value);
static_assert(fmt::is_formattable<spec::delete_io_queue_view<spec::admin_opcode::delete_io_cq>>::value);
static_assert(fmt::is_formattable<spec::delete_io_sq_view>::value);
static_assert(fmt::is_formattable<spec::delete_io_cq_view>::value);
static_assert(fmt::is_formattable<spec::queue_priority>::value);
static_assert(fmt::is_formattable<spec::create_io_queue_cdw10>::value);
static_assert(fmt::is_formattable<spec::create_io_sq_cdw11>::value);
static_assert(fmt::is_formattable<spec::create_io_sq_cdw12>::value);
static_assert(fmt::is_formattable<spec::create_io_sq_view>::value);
static_assert(fmt::is_formattable<spec::get_log_page_cdw10>::value);
static_assert(fmt::is_formattable<spec::get_log_page_cdw11>::value);
static_assert(fmt::is_formattable<spec::get_log_page_cdw14>::value);
static_assert(fmt::is_formattable<spec::get_log_page_view>::value);
static_assert(fmt::is_formattable<spec::create_io_cq_cdw11>::value);
static_assert(fmt::is_formattable<spec::create_io_cq_view>::value);
static_assert(fmt::is_formattable<spec::identify_cdw10>::value);
static_assert(fmt::is_formattable<spec::identify_cdw11>::value);
static_assert(fmt::is_formattable<spec::identify_view>::value);
static_assert(fmt::is_formattable<spec::abort_cdw10>::value);
static_assert(fmt::is_formattable<spec::abort_view>::value);
static_assert(fmt::is_formattable<spec::set_features_cdw10>::value);
static_assert(fmt::is_formattable<spec::set_features_view>::value);
static_assert(fmt::is_formattable<spec::get_features_cdw10>::value);
static_assert(fmt::is_formattable<spec::get_features_view>::value);
static_assert(fmt::is_formattable<spec::async_event_request_view>::value);
static_assert(fmt::is_formattable<spec::namespace_management_select>::value);
static_assert(fmt::is_formattable<spec::namespace_management_cdw10>::value);
static_assert(fmt::is_formattable<spec::namespace_management_cdw11>::value);
static_assert(fmt::is_formattable<spec::namespace_management_view>::value);
static_assert(fmt::is_formattable<spec::firmware_commit_action>::value);
static_assert(fmt::is_formattable<spec::firmware_commit_cdw10>::value);
static_assert(fmt::is_formattable<spec::firmware_commit_view>::value);
static_assert(fmt::is_formattable<spec::firmware_image_download_view>::value);
static_assert(fmt::is_formattable<spec::namespace_attachment_select>::value);
static_assert(fmt::is_formattable<spec::namespace_attachment_cdw10>::value);
static_assert(fmt::is_formattable<spec::namespace_attachment_view>::value);
static_assert(fmt::is_formattable<spec::keep_alive_view>::value);
static_assert(fmt::is_formattable<spec::doorbell_buffer_config_view>::value);
static_assert(fmt::is_formattable<spec::format_protection_type>::value);
static_assert(fmt::is_formattable<spec::format_secure_erase>::value);
static_assert(fmt::is_formattable<spec::format_nvm_cdw10>::value);
static_assert(fmt::is_formattable<spec::format_nvm_view>::value);
static_assert(fmt::is_formattable<spec::protection_info_flags>::value);
static_assert(fmt::is_formattable<spec::dsm_access_frequency>::value);
static_assert(fmt::is_formattable<spec::dsm_access_latency>::value);
static_assert(fmt::is_formattable<spec::dsm_hints>::value);
static_assert(fmt::is_formattable<spec::rw_cdw12>::value);
static_assert(fmt::is_formattable<spec::rw_cdw13>::value);
static_assert(fmt::is_formattable<spec::rw_cdw15>::value);
static_assert(fmt::is_formattable<spec::read_view>::value);
static_assert(fmt::is_formattable<spec::write_view>::value);
static_assert(fmt::is_formattable<spec::lba_check_view<spec::nvm_opcode::compare>>::value);
static_assert(fmt::is_formattable<spec::lba_check_view<spec::nvm_opcode::verify>>::value);
static_assert(fmt::is_formattable<spec::compare_view>::value);
static_assert(fmt::is_formattable<spec::verify_view>::value);
static_assert(fmt::is_formattable<spec::write_uncorrectable_view>::value);
static_assert(fmt::is_formattable<spec::write_zeroes_view>::value);
static_assert(fmt::is_formattable<spec::flush_view>::value);
static_assert(fmt::is_formattable<spec::dataset_management_cdw10>::value);
static_assert(fmt::is_formattable<spec::dataset_management_cdw11>::value);
static_assert(fmt::is_formattable<spec::dataset_management_view>::value);
static_assert(fmt::is_formattable<spec::dsm_context_attributes>::value);
static_assert(fmt::is_formattable<spec::dataset_management_range>::value);
static_assert(fmt::is_formattable<spec::copy_cdw12>::value);
static_assert(fmt::is_formattable<spec::copy_view>::value);
static_assert(fmt::is_formattable<spec::copy_source_range>::value);
static_assert(fmt::is_formattable<spec::get_lba_status_cdw13>::value);
static_assert(fmt::is_formattable<spec::get_lba_status_view>::value);
static_assert(fmt::is_formattable<spec::lba_status_completion>::value);
static_assert(fmt::is_formattable<spec::lba_range_status>::value);
static_assert(fmt::is_formattable<spec::lba_status_list_header>::value);
static_assert(fmt::is_formattable<spec::lba_status_descriptor>::value);

/// The text a default (all-zero) value prints.
template <typename T>
std::string zero()
{
    return fmt::format("{}", T{});
}

} // namespace

// A view prints nothing exactly when its command has no fields, which is what lets the command
// formatters print it without a separator; every other zero value prints something.
TEST(format_commands_coverage, only_the_views_without_fields_print_nothing)
{
    EXPECT_TRUE(std::is_empty_v<spec::flush_view>);
    EXPECT_EQ(zero<spec::flush_view>(), "");
    EXPECT_EQ(zero<spec::keep_alive_view>(), "");
    EXPECT_EQ(zero<spec::async_event_request_view>(), "");
    EXPECT_FALSE(std::is_empty_v<spec::doorbell_buffer_config_view>);

    EXPECT_EQ(zero<spec::delete_io_sq_view>(), "qid=0");
    EXPECT_EQ(zero<spec::delete_io_cq_view>(), "qid=0");
    EXPECT_EQ(zero<spec::compare_view>(), "slba=0x0 nlb=0");
    EXPECT_EQ(zero<spec::verify_view>(), "slba=0x0 nlb=0");
    EXPECT_EQ(zero<spec::rw_cdw12>(), "nlb=0 dtype=0 stc=0 deac=0 prinfo=0x0 fua=0 lr=0");
    EXPECT_EQ(zero<spec::queue_priority>(), "urgent");
    EXPECT_EQ(zero<spec::dataset_management_range>(), "slba=0x0 nlb=0 cattr=0x0");
    EXPECT_EQ(zero<spec::copy_source_range>(), "slba=0x0 nlb=1");
    EXPECT_EQ(zero<spec::get_lba_status_view>(), "slba=0x0 mndw=0 rl=0 atype=0x00");
    EXPECT_EQ(zero<spec::lba_status_list_header>(), "nlsd=0 cmpc=not indicated");
    EXPECT_EQ(zero<spec::lba_status_descriptor>(), "dslba=0x0 nlb=0 status=may be unrecoverable");
}
