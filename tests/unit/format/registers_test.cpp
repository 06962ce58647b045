#include <nvmekit/format/registers.hpp>

#include <string>

#include <gtest/gtest.h>

namespace spec = nvmekit::spec;

TEST(format_registers, cap_prints_every_field_in_bit_order)
{
    using cap = spec::cap_register;
    const cap qemu_like = cap{}
                              .with(cap::mqes, 2047)
                              .with(cap::cqr, true)
                              .with(cap::to, 30)
                              .with(cap::nssrs, true)
                              .with(cap::css_nvm, true)
                              .with(cap::css_io_command_sets, true)
                              .with(cap::mpsmax, 4);
    EXPECT_EQ(
        fmt::format("{}", qemu_like),
        "CAP mqes=2047 cqr=1 ams=0x0 to=30 dstrd=0 nssrs=1 css=0x41 bps=0 cps=not_reported mpsmin=0 mpsmax=4 "
        "pmrs=0 cmbs=0 nsss=0 crms=0x0");
    EXPECT_EQ(fmt::format("{}", cap{0x1f41e8321e0707ffULL}),
              "CAP mqes=2047 cqr=1 ams=0x3 to=30 dstrd=2 nssrs=1 css=0x41 bps=1 cps=nvm_subsystem mpsmin=1 "
              "mpsmax=4 "
              "pmrs=1 cmbs=1 nsss=1 crms=0x3");
}

TEST(format_registers, vs_prints_dotted_version)
{
    EXPECT_EQ(fmt::format("{}", spec::version_2_0_0), "2.0.0");
    EXPECT_EQ(fmt::format("{}", spec::make_version(1, 4, 2)), "1.4.2");
}

TEST(format_registers, cc_prints_enum_names)
{
    using cc = spec::cc_register;
    EXPECT_EQ(fmt::format("{}", cc{0x00460001}),
              "CC en=1 css=nvm mps=0 ams=rr shn=none iosqes=6 iocqes=4 crime=0");
    const cc shutting_down = cc{0x00460001}
                                 .with(cc::css, spec::io_command_set_selected::all_supported_io_sets)
                                 .with(cc::mps, 4)
                                 .with(cc::ams, spec::arbitration_mechanism::weighted_round_robin_urgent)
                                 .with(cc::shn, spec::shutdown_notification::normal)
                                 .with(cc::crime, true);
    EXPECT_EQ(fmt::format("{}", shutting_down),
              "CC en=1 css=all_io mps=4 ams=wrr_urgent shn=normal iosqes=6 iocqes=4 crime=1");
    EXPECT_EQ(fmt::format("{}", cc{}.with(cc::css, spec::io_command_set_selected::admin_only)
                                    .with(cc::ams, spec::arbitration_mechanism::vendor_specific)
                                    .with(cc::shn, spec::shutdown_notification::abrupt)),
              "CC en=0 css=admin_only mps=0 ams=vendor shn=abrupt iosqes=0 iocqes=0 crime=0");
}

TEST(format_registers, reserved_enum_values_print_as_hex)
{
    EXPECT_EQ(fmt::format("{}", spec::cc_register{0x0000c000U | (0b010U << 4) | (0b011U << 11)}),
              "CC en=0 css=0x2 mps=0 ams=0x3 shn=0x3 iosqes=0 iocqes=0 crime=0");
    EXPECT_EQ(fmt::format("{}", spec::csts_register{0xc}), "CSTS rdy=0 cfs=0 shst=0x3 nssro=0 pp=0 st=0");
    EXPECT_EQ(fmt::format("{}", spec::pmrsts_register{0x800}), "PMRSTS err=0x0 nrdy=0 hsts=0x4 cbai=0");
}

TEST(format_registers, csts_prints_shutdown_status_by_name)
{
    EXPECT_EQ(fmt::format("{}", spec::csts_register{0x1}), "CSTS rdy=1 cfs=0 shst=normal nssro=0 pp=0 st=0");
    EXPECT_EQ(fmt::format("{}", spec::csts_register{0x5}),
              "CSTS rdy=1 cfs=0 shst=processing nssro=0 pp=0 st=0");
    EXPECT_EQ(fmt::format("{}", spec::csts_register{0x7a}),
              "CSTS rdy=0 cfs=1 shst=complete nssro=1 pp=1 st=1");
}

TEST(format_registers, aqa_prints_zero_based_sizes_as_stored)
{
    EXPECT_EQ(fmt::format("{}", spec::aqa_register{0x001f001f}), "AQA asqs=31 acqs=31");
    EXPECT_EQ(fmt::format("{}", spec::aqa_register{0x00070fff}), "AQA asqs=4095 acqs=7");
}

TEST(format_registers, whole_value_registers_print_eight_hex_digits)
{
    EXPECT_EQ(fmt::format("{}", spec::intms_register{0x1}), "INTMS 0x00000001");
    EXPECT_EQ(fmt::format("{}", spec::intmc_register{0x80000000}), "INTMC 0x80000000");
    EXPECT_EQ(fmt::format("{}", spec::nssr_register{spec::nvm_subsystem_reset_value}), "NSSR 0x4e564d65");
    EXPECT_EQ(fmt::format("{}", spec::nssd_register{spec::nvm_subsystem_shutdown_normal_value}),
              "NSSD 0x4e726d6c");
}

TEST(format_registers, address_registers_print_the_address_bits)
{
    EXPECT_EQ(fmt::format("{}", spec::asq_register{0x12345fffULL}), "ASQ 0x12345000");
    EXPECT_EQ(fmt::format("{}", spec::acq_register{0x0000000812346000ULL}), "ACQ 0x812346000");
    EXPECT_EQ(fmt::format("{}", spec::bpmbl_register{0x80000000ULL}), "BPMBL 0x80000000");
    EXPECT_EQ(fmt::format("{}", spec::cmbmsc_register{0xc0000003ULL}), "CMBMSC cre=1 cmse=1 cba=0xc0000000");
    EXPECT_EQ(fmt::format("{}", spec::pmrmscl_register{0xd0000002U}), "PMRMSCL cmse=1 cba=0xd0000000");
    EXPECT_EQ(fmt::format("{}", spec::pmrmscu_register{0x1U}), "PMRMSCU cba=0x1");
}

TEST(format_registers, cmb_registers)
{
    using loc = spec::cmbloc_register;
    EXPECT_EQ(fmt::format("{}", loc{}.with(loc::bir, 2).with(loc::cqda, true).with(loc::ofst, 0x10)),
              "CMBLOC bir=2 cqmms=0 cqpds=0 cdpmls=0 cdpcils=0 cdmmms=0 cqda=1 ofst=0x10");
    EXPECT_EQ(fmt::format("{}", loc{0xf8}),
              "CMBLOC bir=0 cqmms=1 cqpds=1 cdpmls=1 cdpcils=1 cdmmms=1 cqda=0 ofst=0x0");
    EXPECT_EQ(fmt::format("{}", spec::cmbsz_register{0x0001021b}),
              "CMBSZ sqs=1 cqs=1 lists=0 rds=1 wds=1 szu=1MiB sz=16");
    EXPECT_EQ(fmt::format("{}", spec::cmbsts_register{0x1}), "CMBSTS cbai=1");
    EXPECT_EQ(fmt::format("{}", spec::cmbebs_register{0x4001}), "CMBEBS cmbszu=1 rbb=0 cmbwbz=64");
    EXPECT_EQ(fmt::format("{}", spec::cmbswtp_register{0x6402}), "CMBSWTP cmbswtu=2 cmbswtv=100");
}

TEST(format_registers, boot_partition_and_timeout_registers)
{
    EXPECT_EQ(fmt::format("{}", spec::bpinfo_register{0x82000002}), "BPINFO bpsz=2 brs=completed abpid=1");
    EXPECT_EQ(fmt::format("{}", spec::bpinfo_register{0x01000000}), "BPINFO bpsz=0 brs=reading abpid=0");
    EXPECT_EQ(fmt::format("{}", spec::bprsel_register{0x80000404}), "BPRSEL bprsz=4 bprof=1 bpid=1");
    EXPECT_EQ(fmt::format("{}", spec::crto_register{0x0014003c}), "CRTO crwmt=60 crimt=20");
}

TEST(format_registers, pmr_registers)
{
    using cap = spec::pmrcap_register;
    EXPECT_EQ(fmt::format("{}", cap{}
                                    .with(cap::rds, true)
                                    .with(cap::wds, true)
                                    .with(cap::bir, 4)
                                    .with(cap::pmrwbm, 0x2)
                                    .with(cap::pmrto, 10)
                                    .with(cap::cmss, true)),
              "PMRCAP rds=1 wds=1 bir=4 pmrtu=500ms pmrwbm=0x2 pmrto=10 cmss=1");
    EXPECT_EQ(fmt::format("{}", cap{0x100}),
              "PMRCAP rds=0 wds=0 bir=0 pmrtu=minutes pmrwbm=0x0 pmrto=0 cmss=0");
    EXPECT_EQ(fmt::format("{}", spec::pmrctl_register{0x1}), "PMRCTL en=1");
    EXPECT_EQ(fmt::format("{}", spec::pmrsts_register{0x15a5}),
              "PMRSTS err=0xa5 nrdy=1 hsts=read_only cbai=1");
    EXPECT_EQ(fmt::format("{}", spec::pmrebs_register{0x812}), "PMREBS pmrszu=2 rbb=1 pmrwbz=8");
    EXPECT_EQ(fmt::format("{}", spec::pmrswtp_register{0x1f402}), "PMRSWTP pmrswtu=2 pmrswtv=500");
}

TEST(format_registers, offsets_and_doorbells)
{
    EXPECT_EQ(fmt::format("{}", spec::register_offset::cc), "CC");
    EXPECT_EQ(fmt::format("{}", spec::register_offset::pmrmscu), "PMRMSCU");
    EXPECT_EQ(fmt::format("{}", *spec::decode_doorbell_offset(0x1018, 0)), "SQ 3 tail");
    EXPECT_EQ(fmt::format("{}", *spec::decode_doorbell_offset(0x101c, 0)), "CQ 3 head");
}

TEST(format_registers, enums_print_their_names)
{
    EXPECT_EQ(fmt::format("{}", spec::shutdown_notification::abrupt), "abrupt");
    EXPECT_EQ(fmt::format("{}", spec::shutdown_status::complete), "complete");
    EXPECT_EQ(fmt::format("{}", spec::controller_power_scope::domain), "domain");
    EXPECT_EQ(fmt::format("{}", spec::boot_read_status::error), "error");
    EXPECT_EQ(fmt::format("{}", spec::pmr_health_status::restore_error), "restore_error");
    EXPECT_EQ(fmt::format("{}", spec::cmb_size_units::gib_64), "64GiB");
    EXPECT_EQ(fmt::format("{}", static_cast<spec::cmb_size_units>(9)), "0x9");
}

TEST(format_registers, register_descriptions_print_name_offset_and_width)
{
    EXPECT_EQ(fmt::format("{}", spec::describe_register(spec::register_offset::cc)), "CC@0x14/4");
    EXPECT_EQ(fmt::format("{}", spec::describe_register(spec::register_offset::cap)), "CAP@0x0/8");
    EXPECT_EQ(fmt::format("{}", spec::describe_register(spec::register_offset::pmrmscu)), "PMRMSCU@0xe18/4");
    // A 4-byte access at 2Ch lands in the upper half of ASQ.
    EXPECT_EQ(fmt::format("{}", *spec::find_register(0x2c)), "ASQ@0x28/8");
}

namespace {

spec::controller_register_block enabled_controller_registers()
{
    using cap = spec::cap_register;
    spec::controller_register_block regs{};
    regs.cap = cap{}
                   .with(cap::mqes, 2047)
                   .with(cap::cqr, true)
                   .with(cap::to, 30)
                   .with(cap::css_nvm, true)
                   .with(cap::mpsmax, 4);
    regs.vs = spec::version_2_0_0;
    regs.cc = spec::cc_register{0x00460001};
    regs.csts = spec::csts_register{0x1};
    regs.aqa = spec::aqa_register{0x001f001f};
    regs.asq = spec::asq_register{0x10000};
    regs.acq = spec::acq_register{0x20000};
    regs.crto = spec::crto_register{0x0014003c};
    return regs;
}

} // namespace

TEST(format_registers, register_block_prints_the_core_registers_one_per_line)
{
    EXPECT_EQ(
        fmt::format("{}", enabled_controller_registers()),
        "CAP mqes=2047 cqr=1 ams=0x0 to=30 dstrd=0 nssrs=0 css=0x1 bps=0 cps=not_reported mpsmin=0 mpsmax=4 "
        "pmrs=0 cmbs=0 nsss=0 crms=0x0\n"
        "VS 2.0.0\n"
        "INTMS 0x00000000\n"
        "CC en=1 css=nvm mps=0 ams=rr shn=none iosqes=6 iocqes=4 crime=0\n"
        "CSTS rdy=1 cfs=0 shst=normal nssro=0 pp=0 st=0\n"
        "AQA asqs=31 acqs=31\n"
        "ASQ 0x10000\n"
        "ACQ 0x20000\n"
        "CRTO crwmt=60 crimt=20");
}

TEST(format_registers, register_block_adds_the_optional_registers_the_controller_supports)
{
    using cap = spec::cap_register;
    spec::controller_register_block regs = enabled_controller_registers();
    regs.cap = spec::cap_register{}.with(cap::bps, true);
    regs.bpinfo = spec::bpinfo_register{0x82000002};
    std::string text = fmt::format("{}", regs);
    EXPECT_NE(
        text.find("\nCRTO crwmt=60 crimt=20\nBPINFO bpsz=2 brs=completed abpid=1\nBPRSEL bprsz=0 bprof=0 "
                  "bpid=0\nBPMBL 0x0"),
        std::string::npos)
        << text;
    EXPECT_EQ(text.find("CMB"), std::string::npos) << text;
    EXPECT_EQ(text.find("PMR"), std::string::npos) << text;

    // CMBSZ not zero shows the CMB registers even with CAP.CMBS clear (before NVMe 1.4).
    regs.cap = spec::cap_register{}.with(cap::pmrs, true);
    regs.cmbsz = spec::cmbsz_register{0x0001021b};
    text = fmt::format("{}", regs);
    EXPECT_EQ(text.find("BPINFO"), std::string::npos) << text;
    EXPECT_NE(
        text.find(
            "\nCRTO crwmt=60 crimt=20\nCMBLOC bir=0 cqmms=0 cqpds=0 cdpmls=0 cdpcils=0 cdmmms=0 cqda=0 "
            "ofst=0x0\nCMBSZ sqs=1 cqs=1 lists=0 rds=1 wds=1 szu=1MiB sz=16\nCMBMSC cre=0 cmse=0 cba=0x0\n"
            "CMBSTS cbai=0\nCMBEBS cmbszu=0 rbb=0 cmbwbz=0\nCMBSWTP cmbswtu=0 cmbswtv=0\nPMRCAP "),
        std::string::npos)
        << text;
    const auto pmr_lines = text.substr(text.find("\nPMRCAP"));
    EXPECT_EQ(pmr_lines, "\nPMRCAP rds=0 wds=0 bir=0 pmrtu=500ms pmrwbm=0x0 pmrto=0 cmss=0\nPMRCTL en=0\n"
                         "PMRSTS err=0x0 nrdy=0 hsts=normal cbai=0\nPMREBS pmrszu=0 rbb=0 pmrwbz=0\n"
                         "PMRSWTP pmrswtu=0 pmrswtv=0\nPMRMSCL cmse=0 cba=0x0\nPMRMSCU cba=0x0");
}
