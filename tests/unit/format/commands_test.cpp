#include <nvmekit/format/commands.hpp>

#include <cstdint>
#include <string>

#include <gtest/gtest.h>

namespace spec = nvmekit::spec;

namespace {

spec::submission_queue_entry entry(std::uint8_t opcode, std::uint16_t cid, std::uint32_t nsid = 0,
                                   std::uint64_t prp1 = 0)
{
    spec::submission_queue_entry result{};
    result.cdw0.set(spec::command_dword0::opc, opcode).set(spec::command_dword0::cid, cid);
    result.nsid = nsid;
    result.dptr.prp1 = prp1;
    return result;
}

template <typename View>
spec::submission_queue_entry entry(std::uint8_t opcode, std::uint16_t cid, std::uint32_t nsid,
                                   std::uint64_t prp1, const View& view)
{
    spec::submission_queue_entry result = entry(opcode, cid, nsid, prp1);
    view.encode(result);
    return result;
}

std::string admin(const spec::submission_queue_entry& value)
{
    return fmt::format("{}", spec::admin_command{value});
}
std::string io(const spec::submission_queue_entry& value)
{
    return fmt::format("{}", spec::io_command{value});
}

} // namespace

TEST(format_commands, read_prints_the_number_of_blocks)
{
    const auto read = entry(0x02, 5, 1, 0x1000, spec::read_view{.starting_lba = 0x10, .block_count = 8});
    ASSERT_EQ(read.cdw12, 7U);
    EXPECT_EQ(io(read), "READ cid=5 nsid=1 slba=0x10 nlb=8 prp1=0x1000 prp2=0x0");
}

TEST(format_commands, write_adds_set_flags_and_non_zero_optional_fields)
{
    EXPECT_EQ(io(entry(0x01, 6, 1, 0x2000,
                       spec::write_view{.starting_lba = 0x20, .block_count = 1, .force_unit_access = true})),
              "WRITE cid=6 nsid=1 slba=0x20 nlb=1 fua prp1=0x2000 prp2=0x0");
    auto full = entry(0x01, 7, 2, 0x3000,
                      spec::write_view{.starting_lba = 0x100,
                                       .block_count = 16,
                                       .directive_type = 2,
                                       .storage_tag_check = true,
                                       .prinfo = spec::protection_info_flags{0xc},
                                       .force_unit_access = true,
                                       .limited_retry = true,
                                       .dsm = spec::dsm_hints{0x05},
                                       .directive_specific = 3,
                                       .reference_tag = 0x100,
                                       .app_tag = 0x1,
                                       .app_tag_mask = 0xffff});
    full.dptr.prp2 = 0x4000;
    EXPECT_EQ(io(full), "WRITE cid=7 nsid=2 slba=0x100 nlb=16 fua lr stc prinfo=0xc dsm=0x5 dtype=2 dspec=3 "
                        "reftag=0x100 apptag=0x1 appmask=0xffff prp1=0x3000 prp2=0x4000");
}

TEST(format_commands, other_lba_commands)
{
    EXPECT_EQ(io(entry(0x00, 1, 1)), "FLUSH cid=1 nsid=1");
    EXPECT_EQ(io(entry(0x08, 2, 1, 0,
                       spec::write_zeroes_view{.starting_lba = 0, .block_count = 256, .deallocate = true})),
              "WRITE_ZEROES cid=2 nsid=1 slba=0x0 nlb=256 deac");
    EXPECT_EQ(
        io(entry(0x04, 3, 1, 0, spec::write_uncorrectable_view{.starting_lba = 0xabc, .block_count = 2})),
        "WRITE_UNCORRECTABLE cid=3 nsid=1 slba=0xabc nlb=2");
    EXPECT_EQ(io(entry(0x0c, 4, 1, 0,
                       spec::verify_view{.starting_lba = 0x8, .block_count = 4, .limited_retry = true})),
              "VERIFY cid=4 nsid=1 slba=0x8 nlb=4 lr");
    auto compare = entry(0x05, 5, 1, 0x5000, spec::compare_view{.starting_lba = 0x8, .block_count = 2});
    compare.cdw0.set(spec::command_dword0::fuse, spec::fused_operation::first);
    EXPECT_EQ(io(compare), "COMPARE cid=5 nsid=1 slba=0x8 nlb=2 fuse=1 prp1=0x5000 prp2=0x0");
}

TEST(format_commands, dataset_management_and_copy)
{
    EXPECT_EQ(
        io(entry(0x09, 5, 1, 0x6000, spec::dataset_management_view{.range_count = 2, .deallocate = true})),
        "DATASET_MANAGEMENT cid=5 nsid=1 nr=2 ad prp1=0x6000 prp2=0x0");
    EXPECT_EQ(io(entry(0x19, 6, 1, 0x7000,
                       spec::copy_view{.destination_lba = 0x1000,
                                       .range_count = 3,
                                       .prinfo_write = spec::protection_info_flags{0x8},
                                       .force_unit_access = true})),
              "COPY cid=6 nsid=1 sdlba=0x1000 nr=3 desfmt=0 fua prinfow=0x8 prp1=0x7000 prp2=0x0");
}

TEST(format_commands, metadata_pointer_and_sgl_data_pointer)
{
    auto read = entry(0x02, 7, 1, 0x10000, spec::read_view{.block_count = 1});
    read.mptr = 0xf000;
    EXPECT_EQ(io(read), "READ cid=7 nsid=1 slba=0x0 nlb=1 mptr=0xf000 prp1=0x10000 prp2=0x0");

    read.mptr = 0;
    read.cdw0.set(spec::command_dword0::psdt, spec::data_pointer_type::sgl_contiguous_metadata);
    read.dptr.prp2 = 0x0000000000001000; // Data Block descriptor (type 0h), 4096 bytes
    EXPECT_EQ(io(read), "READ cid=7 nsid=1 slba=0x0 nlb=1 sgl.addr=0x10000 sgl.len=4096 sgl.type=0x0");
    read.dptr.prp2 = 0x5a00000000002000; // Transport SGL Data Block (type 5h, subtype Ah), 8192 bytes
    EXPECT_EQ(io(read), "READ cid=7 nsid=1 slba=0x0 nlb=1 sgl.addr=0x10000 sgl.len=8192 sgl.type=0x5");
}

TEST(format_commands, queue_commands)
{
    EXPECT_EQ(admin(entry(0x05, 2, 0, 0x7f000,
                          spec::create_io_cq_view{.queue_id = 1,
                                                  .queue_size = 1024,
                                                  .physically_contiguous = true,
                                                  .interrupts_enabled = true,
                                                  .interrupt_vector = 1})),
              "CREATE_IO_CQ cid=2 qid=1 qsize=1024 pc=1 ien=1 iv=1 prp1=0x7f000 prp2=0x0");
    EXPECT_EQ(admin(entry(0x01, 4, 0, 0x8000,
                          spec::create_io_sq_view{.queue_id = 1,
                                                  .queue_size = 64,
                                                  .physically_contiguous = true,
                                                  .priority = spec::queue_priority::medium,
                                                  .cq_id = 1})),
              "CREATE_IO_SQ cid=4 qid=1 qsize=64 pc=1 qprio=2 cqid=1 prp1=0x8000 prp2=0x0");
    EXPECT_EQ(admin(entry(0x00, 9, 0, 0, spec::delete_io_sq_view{.queue_id = 1})),
              "DELETE_IO_SQ cid=9 qid=1");
    EXPECT_EQ(admin(entry(0x04, 10, 0, 0, spec::delete_io_cq_view{.queue_id = 1})),
              "DELETE_IO_CQ cid=10 qid=1");
}

TEST(format_commands, reserved_nsid_prints_only_when_set)
{
    EXPECT_EQ(admin(entry(0x00, 9, 3, 0, spec::delete_io_sq_view{.queue_id = 1})),
              "DELETE_IO_SQ cid=9 nsid=3 qid=1");
}

TEST(format_commands, identify_and_get_log_page)
{
    EXPECT_EQ(admin(entry(0x06, 1, 0, 0x3000, spec::identify_view{.cns = spec::cns::identify_controller})),
              "IDENTIFY cid=1 nsid=0 cns=0x01 cntid=0 csi=0 prp1=0x3000 prp2=0x0");
    EXPECT_EQ(admin(entry(0x06, 1, 1, 0x3000,
                          spec::identify_view{.cns = spec::cns::io_command_set_namespace,
                                              .command_set_id = spec::command_set_identifier::zoned,
                                              .uuid_index = 1})),
              "IDENTIFY cid=1 nsid=1 cns=0x05 cntid=0 csi=2 uuid=1 prp1=0x3000 prp2=0x0");
    EXPECT_EQ(admin(entry(0x02, 3, 0xffffffff, 0x4000,
                          spec::get_log_page_view{.log_page_id = spec::log_page_id::smart_health, .dword_count = 128})),
              "GET_LOG_PAGE cid=3 nsid=0xffffffff lid=0x02 numd=128 offset=0 rae=0 prp1=0x4000 prp2=0x0");
    EXPECT_EQ(admin(entry(0x02, 3, 0, 0x4000,
                          spec::get_log_page_view{.log_page_id = spec::log_page_id::persistent_event,
                                                  .log_specific_field = 0x1,
                                                  .retain_async_event = true,
                                                  .dword_count = 1024,
                                                  .offset = 4096})),
              "GET_LOG_PAGE cid=3 nsid=0 lid=0x0d numd=1024 offset=4096 rae=1 lsp=0x1 prp1=0x4000 prp2=0x0");
}

TEST(format_commands, unnamed_identifiers_print_their_raw_numbers)
{
    EXPECT_EQ(admin(entry(0x06, 1, 0, 0x3000,
                          spec::identify_view{.cns = static_cast<spec::cns>(0x1f),
                                              .command_set_id = static_cast<spec::command_set_identifier>(0x30)})),
              "IDENTIFY cid=1 nsid=0 cns=0x1f cntid=0 csi=48 prp1=0x3000 prp2=0x0");
    EXPECT_EQ(admin(entry(0x02, 3, 0, 0x4000,
                          spec::get_log_page_view{.log_page_id = static_cast<spec::log_page_id>(0xc1),
                                                  .dword_count = 1,
                                                  .command_set_id = spec::command_set_identifier::zoned})),
              "GET_LOG_PAGE cid=3 nsid=0 lid=0xc1 numd=1 offset=0 rae=0 csi=2 prp1=0x4000 prp2=0x0");
    EXPECT_EQ(admin(entry(0x0a, 12, 0, 0, spec::get_features_view{.feature_id = static_cast<spec::feature_id>(0xc0)})),
              "GET_FEATURES cid=12 nsid=0 fid=0xc0 sel=0 cdw11=0x0 prp1=0x0 prp2=0x0");
}

TEST(format_commands, features_abort_and_events)
{
    EXPECT_EQ(admin(entry(0x09, 11, 0, 0, spec::set_features_view{.feature_id = spec::feature_id::number_of_queues,
                                                                .cdw11 = 0x00030003})),
              "SET_FEATURES cid=11 nsid=0 fid=0x07 sv=0 cdw11=0x30003 prp1=0x0 prp2=0x0");
    EXPECT_EQ(admin(entry(0x0a, 12, 1, 0,
                          spec::get_features_view{.feature_id = spec::feature_id::async_event_configuration,
                                                  .select = spec::feature_select::supported_capabilities,
                                                  .uuid_index = 2})),
              "GET_FEATURES cid=12 nsid=1 fid=0x0b sel=3 cdw11=0x0 uuid=2 prp1=0x0 prp2=0x0");
    EXPECT_EQ(admin(entry(0x08, 10, 0, 0, spec::abort_view{.sq_id = 1, .command_id = 42})),
              "ABORT cid=10 sqid=1 abort_cid=42");
    EXPECT_EQ(admin(entry(0x0c, 13)), "ASYNC_EVENT_REQUEST cid=13");
    EXPECT_EQ(admin(entry(0x18, 14)), "KEEP_ALIVE cid=14");
}

TEST(format_commands, namespace_and_firmware_commands)
{
    EXPECT_EQ(admin(entry(0x0d, 15, 0, 0x5000, spec::namespace_management_view{})),
              "NS_MANAGEMENT cid=15 nsid=0 sel=0 csi=0 prp1=0x5000 prp2=0x0");
    EXPECT_EQ(
        admin(entry(0x15, 19, 1, 0x7000,
                    spec::namespace_attachment_view{.select = spec::namespace_attachment_select::detach})),
        "NS_ATTACHMENT cid=19 nsid=1 sel=1 prp1=0x7000 prp2=0x0");
    EXPECT_EQ(
        admin(entry(0x10, 16, 0, 0,
                    spec::firmware_commit_view{
                        .slot = 2, .action = spec::firmware_commit_action::replace_and_activate_on_reset})),
        "FW_COMMIT cid=16 fs=2 ca=1");
    EXPECT_EQ(admin(entry(
                  0x10, 17, 0, 0,
                  spec::firmware_commit_view{.action = spec::firmware_commit_action::activate_boot_partition,
                                             .boot_partition_id = 1})),
              "FW_COMMIT cid=17 fs=0 ca=7 bpid=1");
    EXPECT_EQ(admin(entry(0x11, 18, 0, 0x6000,
                          spec::firmware_image_download_view{.dword_count = 1024, .offset_bytes = 8192})),
              "FW_IMAGE_DOWNLOAD cid=18 numd=1024 offset=8192 prp1=0x6000 prp2=0x0");
    EXPECT_EQ(admin(entry(0x80, 21, 1, 0,
                          spec::format_nvm_view{.format_index = 17,
                                                .protection_type = spec::format_protection_type::type1,
                                                .protection_info_first = true,
                                                .secure_erase = spec::format_secure_erase::user_data_erase})),
              "FORMAT_NVM cid=21 nsid=1 lbaf=17 mset=0 pi=1 pil=1 ses=1");
}

TEST(format_commands, doorbell_buffer_config_names_its_buffers)
{
    EXPECT_EQ(admin(entry(0x7c, 20, 0, 0,
                          spec::doorbell_buffer_config_view{.shadow_doorbell_address = 0x9000,
                                                            .eventidx_address = 0xa000})),
              "DOORBELL_BUFFER_CONFIG cid=20 shadow=0x9000 eventidx=0xa000");
}

TEST(format_commands, commands_without_a_view_print_raw_dwords)
{
    auto vendor = entry(0xc1, 22, 0, 0);
    vendor.cdw10 = 1;
    vendor.cdw15 = 0xff;
    EXPECT_EQ(admin(vendor), "ADMIN opc=0xc1 cid=22 nsid=0 cdw10=0x1 cdw11=0x0 cdw12=0x0 cdw13=0x0 cdw14=0x0 "
                             "cdw15=0xff prp1=0x0 prp2=0x0");
    auto sanitize = entry(0x84, 23, 0, 0);
    sanitize.cdw10 = 2;
    EXPECT_EQ(admin(sanitize), "SANITIZE cid=23 nsid=0 cdw10=0x2 cdw11=0x0 cdw12=0x0 cdw13=0x0 cdw14=0x0 "
                               "cdw15=0x0 prp1=0x0 prp2=0x0");
    EXPECT_EQ(io(entry(0x85, 24, 1, 0x1000)), "IO opc=0x85 cid=24 nsid=1 cdw10=0x0 cdw11=0x0 cdw12=0x0 "
                                              "cdw13=0x0 cdw14=0x0 cdw15=0x0 prp1=0x1000 prp2=0x0");
    EXPECT_EQ(
        io(entry(0x0d, 25, 1, 0x1000)),
        "RESERVATION_REGISTER cid=25 nsid=1 cdw10=0x0 cdw11=0x0 cdw12=0x0 cdw13=0x0 cdw14=0x0 cdw15=0x0 "
        "prp1=0x1000 prp2=0x0");
}

TEST(format_commands, the_command_ref_chooses_the_opcode_table)
{
    const auto value = entry(0x02, 5, 1, 0x1000, spec::read_view{.starting_lba = 0x10, .block_count = 8});
    EXPECT_EQ(io(value), "READ cid=5 nsid=1 slba=0x10 nlb=8 prp1=0x1000 prp2=0x0");
    EXPECT_EQ(admin(value), "GET_LOG_PAGE cid=5 nsid=1 lid=0x10 numd=1 offset=7 rae=0 prp1=0x1000 prp2=0x0");
}

TEST(format_commands, submission_queue_entry_prints_raw)
{
    auto value = entry(0x02, 5, 1, 0x1000, spec::read_view{.starting_lba = 0x10, .block_count = 8});
    EXPECT_EQ(fmt::format("{}", value), "opc=0x02 cid=5 nsid=1 cdw10=0x10 cdw11=0x0 cdw12=0x7 cdw13=0x0 "
                                        "cdw14=0x0 cdw15=0x0 prp1=0x1000 prp2=0x0");
    value.cdw0.set(spec::command_dword0::fuse, spec::fused_operation::second)
        .set(spec::command_dword0::psdt, spec::data_pointer_type::sgl_metadata_descriptor);
    value.cdw2 = 0xab;
    value.mptr = 0x2000;
    value.dptr.prp2 = 0x0000000000000200;
    EXPECT_EQ(fmt::format("{}", value),
              "opc=0x02 fuse=2 psdt=2 cid=5 nsid=1 cdw10=0x10 cdw11=0x0 cdw12=0x7 cdw13=0x0 "
              "cdw14=0x0 cdw15=0x0 cdw2=0xab mptr=0x2000 sgl.addr=0x1000 sgl.len=512 sgl.type=0x0");
}

TEST(format_commands, completion_queue_entry_prints_status)
{
    spec::completion_queue_entry value{};
    value.cid = 5;
    value.sq_id = 1;
    value.sq_head = 3;
    value.set_status(spec::status::success(), true);
    EXPECT_EQ(fmt::format("{}", value),
              "cid=5 sqid=1 sqhd=3 p=1 dw0=0x0 dw1=0x0 status=Generic/Successful Completion (0x00)");

    value.dw0 = 0x1f;
    value.set_status(spec::status{spec::command_specific_status::invalid_queue_identifier}.with_dnr(), false);
    EXPECT_EQ(fmt::format("{}", value), "cid=5 sqid=1 sqhd=3 p=0 dw0=0x1f dw1=0x0 status=Command "
                                        "Specific/Invalid Queue Identifier (0x01) [DNR]");
}
