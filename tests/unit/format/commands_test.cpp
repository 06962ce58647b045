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
                          spec::get_log_page_view{.log_page_id = spec::log_page_id::smart_health,
                                                  .dword_count = 128})),
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
    EXPECT_EQ(
        admin(entry(0x06, 1, 0, 0x3000,
                    spec::identify_view{.cns = static_cast<spec::cns>(0x1f),
                                        .command_set_id = static_cast<spec::command_set_identifier>(0x30)})),
        "IDENTIFY cid=1 nsid=0 cns=0x1f cntid=0 csi=48 prp1=0x3000 prp2=0x0");
    EXPECT_EQ(admin(entry(0x02, 3, 0, 0x4000,
                          spec::get_log_page_view{.log_page_id = static_cast<spec::log_page_id>(0xc1),
                                                  .dword_count = 1,
                                                  .command_set_id = spec::command_set_identifier::zoned})),
              "GET_LOG_PAGE cid=3 nsid=0 lid=0xc1 numd=1 offset=0 rae=0 csi=2 prp1=0x4000 prp2=0x0");
    EXPECT_EQ(admin(entry(0x0a, 12, 0, 0,
                          spec::get_features_view{.feature_id = static_cast<spec::feature_id>(0xc0)})),
              "GET_FEATURES cid=12 nsid=0 fid=0xc0 sel=0 cdw11=0x0 prp1=0x0 prp2=0x0");
}

TEST(format_commands, features_abort_and_events)
{
    EXPECT_EQ(admin(entry(0x09, 11, 0, 0,
                          spec::set_features_view{.feature_id = spec::feature_id::number_of_queues,
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

TEST(format_commands, get_lba_status_prints_its_range_and_action)
{
    EXPECT_EQ(admin(entry(0x86, 20, 1, 0x8000,
                          spec::get_lba_status_view{.starting_lba = 0x10,
                                                    .dword_count = 6,
                                                    .range_length = 64,
                                                    .action = spec::lba_status_action::tracked})),
              "GET_LBA_STATUS cid=20 nsid=1 slba=0x10 mndw=6 rl=64 atype=0x11 prp1=0x8000 prp2=0x0");
    EXPECT_EQ(fmt::format("{}", spec::get_lba_status_cdw13{0x1000'0008}), "rl=8 atype=16");
    EXPECT_EQ(fmt::format("{}", spec::lba_status_list_header{.nlsd = 2,
                                                             .cmpc = spec::lba_status_completion::complete,
                                                             .rsvd5 = {}}),
              "nlsd=2 cmpc=complete");
    EXPECT_EQ(fmt::format("{}", spec::lba_status_descriptor{.dslba = 0x20,
                                                            .nlb = 8,
                                                            .rsvd12 = 0,
                                                            .status = spec::lba_range_status::unrecoverable,
                                                            .rsvd14 = {}}),
              "dslba=0x20 nlb=8 status=unrecoverable");
    EXPECT_EQ(fmt::format("{}", static_cast<spec::lba_range_status>(2)), "reserved (0x02)");
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

TEST(format_commands, the_command_formatters_print_what_the_view_formatters_print)
{
    const auto sq = entry(0x01, 4, 0, 0x8000,
                          spec::create_io_sq_view{.queue_id = 2,
                                                  .queue_size = 64,
                                                  .priority = spec::queue_priority::low,
                                                  .cq_id = 1,
                                                  .nvm_set_id = 3});
    EXPECT_EQ(fmt::format("{}", spec::create_io_sq_view::decode(sq)),
              "qid=2 qsize=64 pc=0 qprio=3 cqid=1 nvmsetid=3");
    EXPECT_EQ(admin(sq),
              fmt::format("CREATE_IO_SQ cid=4 {} prp1=0x8000 prp2=0x0", spec::create_io_sq_view::decode(sq)));

    auto write = entry(0x01, 7, 2, 0x3000,
                       spec::write_view{.starting_lba = 0x100, .block_count = 16, .directive_type = 2});
    write.mptr = 0xf000;
    EXPECT_EQ(fmt::format("{}", spec::write_view::decode(write)), "slba=0x100 nlb=16 dtype=2");
    EXPECT_EQ(io(write), fmt::format("WRITE cid=7 nsid=2 {} mptr=0xf000 prp1=0x3000 prp2=0x0",
                                     spec::write_view::decode(write)));
}

TEST(format_commands, admin_views_print_their_decoded_fields)
{
    EXPECT_EQ(fmt::format("{}", spec::delete_io_sq_view{.queue_id = 3}), "qid=3");
    EXPECT_EQ(fmt::format("{}", spec::delete_io_cq_view{.queue_id = 65535}), "qid=65535");
    EXPECT_EQ(fmt::format("{}", spec::create_io_sq_view{.queue_id = 1,
                                                        .queue_size = 65536,
                                                        .physically_contiguous = true,
                                                        .priority = spec::queue_priority::medium,
                                                        .cq_id = 1}),
              "qid=1 qsize=65536 pc=1 qprio=2 cqid=1");
    EXPECT_EQ(
        fmt::format("{}", spec::get_log_page_view{.log_page_id = spec::log_page_id::smart_health,
                                                  .log_specific_field = 0x3,
                                                  .dword_count = 128,
                                                  .log_specific_id = 4,
                                                  .offset = 2,
                                                  .uuid_index = 5,
                                                  .offset_is_index = true,
                                                  .command_set_id = spec::command_set_identifier::zoned}),
        "lid=0x02 numd=128 offset=2 rae=0 lsp=0x3 lsi=4 ot=1 uuid=5 csi=2");
    EXPECT_EQ(fmt::format("{}", spec::create_io_cq_view{.queue_id = 1,
                                                        .queue_size = 1024,
                                                        .physically_contiguous = true,
                                                        .interrupts_enabled = true,
                                                        .interrupt_vector = 1}),
              "qid=1 qsize=1024 pc=1 ien=1 iv=1");
    EXPECT_EQ(fmt::format("{}", spec::identify_view{.cns = spec::cns::identify_controller,
                                                    .controller_id = 7,
                                                    .cns_specific_id = 9}),
              "cns=0x01 cntid=7 csi=0 cnssid=9");
    EXPECT_EQ(fmt::format("{}", spec::abort_view{.sq_id = 1, .command_id = 42}), "sqid=1 abort_cid=42");
    EXPECT_EQ(fmt::format("{}", spec::set_features_view{.feature_id = spec::feature_id::number_of_queues,
                                                        .save = true,
                                                        .cdw11 = 0x00030003,
                                                        .cdw12 = 0x1,
                                                        .cdw13 = 0x2,
                                                        .cdw15 = 0x3,
                                                        .uuid_index = 4}),
              "fid=0x07 sv=1 cdw11=0x30003 cdw12=0x1 cdw13=0x2 cdw15=0x3 uuid=4");
    EXPECT_EQ(fmt::format("{}", spec::get_features_view{.feature_id = spec::feature_id::arbitration,
                                                        .select = spec::feature_select::saved,
                                                        .cdw11 = 0x10}),
              "fid=0x01 sel=2 cdw11=0x10");
    EXPECT_EQ(fmt::format("{}", spec::async_event_request_view{}), "");
    EXPECT_EQ(
        fmt::format("{}",
                    spec::namespace_management_view{.select = spec::namespace_management_select::remove,
                                                    .command_set_id = spec::command_set_identifier::zoned}),
        "sel=1 csi=2");
    EXPECT_EQ(fmt::format("{}",
                          spec::firmware_commit_view{
                              .slot = 2, .action = spec::firmware_commit_action::activate_on_reset}),
              "fs=2 ca=2");
    EXPECT_EQ(
        fmt::format("{}", spec::firmware_image_download_view{.dword_count = 1024, .offset_bytes = 8192}),
        "numd=1024 offset=8192");
    EXPECT_EQ(fmt::format(
                  "{}", spec::namespace_attachment_view{.select = spec::namespace_attachment_select::attach}),
              "sel=0");
    EXPECT_EQ(fmt::format("{}", spec::keep_alive_view{}), "");
    EXPECT_EQ(fmt::format("{}", spec::doorbell_buffer_config_view{.shadow_doorbell_address = 0x9000,
                                                                  .eventidx_address = 0xa000}),
              "shadow=0x9000 eventidx=0xa000");
    EXPECT_EQ(fmt::format("{}", spec::format_nvm_view{.format_index = 17,
                                                      .metadata_in_extended_lba = true,
                                                      .protection_type = spec::format_protection_type::type3,
                                                      .secure_erase =
                                                          spec::format_secure_erase::cryptographic_erase}),
              "lbaf=17 mset=1 pi=3 pil=0 ses=2");
}

TEST(format_commands, io_views_print_their_decoded_fields)
{
    EXPECT_EQ(fmt::format("{}", spec::read_view{.starting_lba = 0x10, .block_count = 8}), "slba=0x10 nlb=8");
    EXPECT_EQ(fmt::format("{}", spec::read_view{.starting_lba = 0x10,
                                                .block_count = 8,
                                                .storage_tag_check = true,
                                                .prinfo = spec::protection_info_flags{0x1},
                                                .limited_retry = true,
                                                .dsm = spec::dsm_hints{0x80},
                                                .reference_tag = 0x10,
                                                .app_tag_mask = 0xff}),
              "slba=0x10 nlb=8 lr stc prinfo=0x1 dsm=0x80 reftag=0x10 appmask=0xff");
    EXPECT_EQ(fmt::format("{}", spec::write_view{.starting_lba = 0x20,
                                                 .block_count = 1,
                                                 .force_unit_access = true,
                                                 .directive_specific = 5,
                                                 .app_tag = 0x7}),
              "slba=0x20 nlb=1 fua dspec=5 apptag=0x7");
    EXPECT_EQ(fmt::format(
                  "{}", spec::compare_view{.starting_lba = 0x8, .block_count = 2, .force_unit_access = true}),
              "slba=0x8 nlb=2 fua");
    EXPECT_EQ(fmt::format("{}", spec::verify_view{.starting_lba = 0x8,
                                                  .block_count = 4,
                                                  .prinfo = spec::protection_info_flags{0x8},
                                                  .reference_tag = 0x1}),
              "slba=0x8 nlb=4 prinfo=0x8 reftag=0x1");
    EXPECT_EQ(fmt::format("{}", spec::write_uncorrectable_view{.starting_lba = 0xabc, .block_count = 2}),
              "slba=0xabc nlb=2");
    EXPECT_EQ(fmt::format("{}", spec::write_zeroes_view{.starting_lba = 0,
                                                        .block_count = 256,
                                                        .deallocate = true,
                                                        .limited_retry = true}),
              "slba=0x0 nlb=256 deac lr");
    EXPECT_EQ(fmt::format("{}", spec::flush_view{}), "");
    EXPECT_EQ(fmt::format("{}", spec::dataset_management_view{.range_count = 256,
                                                              .integral_read = true,
                                                              .integral_write = true,
                                                              .deallocate = true}),
              "nr=256 idr idw ad");
    EXPECT_EQ(
        fmt::format("{}", spec::copy_view{.destination_lba = 0x1000,
                                          .range_count = 3,
                                          .descriptor_format = 0,
                                          .prinfo_read = spec::protection_info_flags{0x4},
                                          .directive_type = 2,
                                          .storage_tag_check_write = true,
                                          .limited_retry = true,
                                          .directive_specific = 6,
                                          .reference_tag = 0x20,
                                          .app_tag = 0x3,
                                          .app_tag_mask = 0xf}),
        "sdlba=0x1000 nr=3 desfmt=0 lr stcw prinfor=0x4 dtype=2 dspec=6 reftag=0x20 apptag=0x3 appmask=0xf");
}

TEST(format_commands, admin_command_dwords_print_raw_fields_in_bit_order)
{
    EXPECT_EQ(fmt::format("{}", spec::uuid_index_cdw14{0x0000007f}), "uuid=127");
    EXPECT_EQ(fmt::format("{}", spec::uuid_index_cdw14{0xffffff81}), "uuid=1");
    EXPECT_EQ(fmt::format("{}", spec::delete_io_queue_cdw10{0xabcd0001}), "qid=1");
    EXPECT_EQ(fmt::format("{}", spec::create_io_queue_cdw10{0x03ff0001}), "qid=1 qsize=1023");
    EXPECT_EQ(fmt::format("{}", spec::create_io_queue_cdw10::of(1, 1024)), "qid=1 qsize=1023");
    EXPECT_EQ(fmt::format("{}", spec::create_io_sq_cdw11{0x00010005}), "pc=1 qprio=2 cqid=1");
    EXPECT_EQ(fmt::format("{}", spec::create_io_sq_cdw12{0x00000003}), "nvmsetid=3");
    EXPECT_EQ(fmt::format("{}", spec::get_log_page_cdw10{0x007f8102}), "lid=0x02 lsp=0x1 rae=1 numdl=127");
    EXPECT_EQ(fmt::format("{}", spec::get_log_page_cdw11{0x00050001}), "numdu=1 lsi=5");
    EXPECT_EQ(fmt::format("{}", spec::get_log_page_cdw14{0x02800002}), "uuid=2 ot=1 csi=2");
    EXPECT_EQ(fmt::format("{}", spec::create_io_cq_cdw11{0x00010003}), "pc=1 ien=1 iv=1");
    EXPECT_EQ(fmt::format("{}", spec::create_io_cq_cdw11{0x00200002}), "pc=0 ien=1 iv=32");
    EXPECT_EQ(fmt::format("{}", spec::identify_cdw10{0x00050001}), "cns=0x01 cntid=5");
    EXPECT_EQ(fmt::format("{}", spec::identify_cdw11{0x02000007}), "cnssid=7 csi=2");
    EXPECT_EQ(fmt::format("{}", spec::abort_cdw10{0x002a0001}), "sqid=1 cid=42");
    EXPECT_EQ(fmt::format("{}", spec::set_features_cdw10{0x80000007}), "fid=0x07 sv=1");
    EXPECT_EQ(fmt::format("{}", spec::get_features_cdw10{0x0000030b}), "fid=0x0b sel=3");
    EXPECT_EQ(fmt::format("{}", spec::namespace_management_cdw10{0x1}), "sel=1");
    EXPECT_EQ(fmt::format("{}", spec::namespace_management_cdw11{0x02000000}), "csi=2");
    EXPECT_EQ(fmt::format("{}", spec::firmware_commit_cdw10{0x8000000a}), "fs=2 ca=1 bpid=1");
    EXPECT_EQ(fmt::format("{}", spec::namespace_attachment_cdw10{0x1}), "sel=1");
    EXPECT_EQ(fmt::format("{}", spec::format_nvm_cdw10{0x1331}), "lbafl=1 mset=1 pi=1 pil=1 ses=1 lbafu=1");
}

TEST(format_commands, io_command_dwords_print_raw_fields_in_bit_order)
{
    // NLB is 0-based: 7 is eight blocks, as `nlb=8` in the view.
    EXPECT_EQ(fmt::format("{}", spec::rw_cdw12{0x40000007}),
              "nlb=7 dtype=0 stc=0 deac=0 prinfo=0x0 fua=1 lr=0");
    EXPECT_EQ(fmt::format("{}", spec::rw_cdw12{0xb320ffff}),
              "nlb=65535 dtype=2 stc=1 deac=1 prinfo=0xc fua=0 lr=1");
    EXPECT_EQ(fmt::format("{}", spec::rw_cdw13{0x00030005}), "dsm=0x5 dspec=3");
    EXPECT_EQ(fmt::format("{}", spec::rw_cdw15{0xffff0001}), "lbat=0x1 lbatm=0xffff");
    EXPECT_EQ(fmt::format("{}", spec::dataset_management_cdw10{0xff}), "nr=255");
    EXPECT_EQ(fmt::format("{}", spec::dataset_management_cdw11{0x4}), "idr=0 idw=0 ad=1");
    EXPECT_EQ(fmt::format("{}", spec::dataset_management_cdw11{0x3}), "idr=1 idw=1 ad=0");
    EXPECT_EQ(fmt::format("{}", spec::copy_cdw12{0x60000002}),
              "nr=2 desfmt=0 prinfor=0x0 dtype=0 stcw=0 prinfow=0x8 fua=1 lr=0");
    EXPECT_EQ(fmt::format("{}", spec::copy_cdw12{0x81201100}),
              "nr=0 desfmt=1 prinfor=0x1 dtype=2 stcw=1 prinfow=0x0 fua=0 lr=1");
    EXPECT_EQ(fmt::format("{}", spec::protection_info_flags{0xc}),
              "prchk_reftag=0 prchk_apptag=0 prchk_guard=1 pract=1");
    EXPECT_EQ(fmt::format("{}", spec::protection_info_flags{0x3}),
              "prchk_reftag=1 prchk_apptag=1 prchk_guard=0 pract=0");
    EXPECT_EQ(fmt::format("{}", spec::dsm_hints{0xa1}), "af=1 al=2 sequential=0 incompressible=1");
    EXPECT_EQ(fmt::format("{}", spec::dsm_hints{0x48}), "af=8 al=0 sequential=1 incompressible=0");
    EXPECT_EQ(fmt::format("{}", spec::dsm_context_attributes{0x08000121}),
              "af=1 al=2 sr=1 sw=0 wp=0 access_size=8");
    EXPECT_EQ(fmt::format("{}", spec::dsm_context_attributes{0x00000600}),
              "af=0 al=0 sr=0 sw=1 wp=1 access_size=0");
}

TEST(format_commands, range_entries)
{
    const spec::dataset_management_range range{
        .context_attributes = spec::dsm_context_attributes{0x21}, .block_count = 8, .starting_lba = 0x100};
    EXPECT_EQ(fmt::format("{}", range), "slba=0x100 nlb=8 cattr=0x21");

    spec::copy_source_range source{};
    source.starting_lba = 0x100;
    source.set_block_count(8);
    ASSERT_EQ(source.nlb_raw, 7U);
    EXPECT_EQ(fmt::format("{}", source), "slba=0x100 nlb=8");
    source.reference_tag = 0x10;
    source.app_tag = 0x2;
    source.app_tag_mask = 0xffff;
    EXPECT_EQ(fmt::format("{}", source), "slba=0x100 nlb=8 reftag=0x10 apptag=0x2 appmask=0xffff");
}

TEST(format_commands, enumerations_print_their_names)
{
    EXPECT_EQ(fmt::format("{} {} {} {}", spec::queue_priority::urgent, spec::queue_priority::high,
                          spec::queue_priority::medium, spec::queue_priority::low),
              "urgent high medium low");
    EXPECT_EQ(fmt::format("{} {} {}", spec::namespace_management_select::create,
                          spec::namespace_management_select::remove,
                          static_cast<spec::namespace_management_select>(2)),
              "create delete reserved (0x02)");
    using action = spec::firmware_commit_action;
    EXPECT_EQ(fmt::format("{} {} {} {} {} {} {} {}", action::replace, action::replace_and_activate_on_reset,
                          action::activate_on_reset, action::replace_and_activate_now, static_cast<action>(4),
                          static_cast<action>(5), action::replace_boot_partition,
                          action::activate_boot_partition),
              "replace replace_activate_on_reset activate_on_reset replace_activate_now reserved (0x04) "
              "reserved (0x05) replace_boot_partition activate_boot_partition");
    EXPECT_EQ(fmt::format("{} {} {}", spec::namespace_attachment_select::attach,
                          spec::namespace_attachment_select::detach,
                          static_cast<spec::namespace_attachment_select>(0xf)),
              "attach detach reserved (0x0f)");
    EXPECT_EQ(fmt::format("{} {} {} {} {}", spec::format_protection_type::none,
                          spec::format_protection_type::type1, spec::format_protection_type::type2,
                          spec::format_protection_type::type3, static_cast<spec::format_protection_type>(4)),
              "none type1 type2 type3 reserved (0x04)");
    EXPECT_EQ(fmt::format(
                  "{} {} {} {}", spec::format_secure_erase::none, spec::format_secure_erase::user_data_erase,
                  spec::format_secure_erase::cryptographic_erase, static_cast<spec::format_secure_erase>(3)),
              "none user_data cryptographic reserved (0x03)");
    using frequency = spec::dsm_access_frequency;
    EXPECT_EQ(
        fmt::format("{} {} {} {} {} {} {} {} {} {}", frequency::no_information, frequency::typical,
                    frequency::infrequent_writes_infrequent_reads,
                    frequency::infrequent_writes_frequent_reads, frequency::frequent_writes_infrequent_reads,
                    frequency::frequent_writes_frequent_reads, frequency::one_time_read,
                    frequency::speculative_read, frequency::overwritten_soon, static_cast<frequency>(9)),
        "none typical infrequent_writes_infrequent_reads infrequent_writes_frequent_reads "
        "frequent_writes_infrequent_reads frequent_writes_frequent_reads one_time_read speculative_read "
        "overwritten_soon reserved (0x09)");
    EXPECT_EQ(fmt::format("{} {} {} {}", spec::dsm_access_latency::no_information,
                          spec::dsm_access_latency::idle, spec::dsm_access_latency::normal,
                          spec::dsm_access_latency::low),
              "none idle normal low");
}
