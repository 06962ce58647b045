#include <array>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>

#include <gtest/gtest.h>

#include <nvmekit/state/register_file.hpp>

namespace spec = nvmekit::spec;
using nvmekit::register_event;
using nvmekit::register_event_kind;
using nvmekit::register_file;
using nvmekit::register_file_config;
using nvmekit::register_host_error;

namespace {

constexpr std::uint64_t cap_offset = 0x00;
constexpr std::uint64_t vs_offset = 0x08;
constexpr std::uint64_t intms_offset = 0x0c;
constexpr std::uint64_t intmc_offset = 0x10;
constexpr std::uint64_t cc_offset = 0x14;
constexpr std::uint64_t csts_offset = 0x1c;
constexpr std::uint64_t nssr_offset = 0x20;
constexpr std::uint64_t aqa_offset = 0x24;
constexpr std::uint64_t asq_offset = 0x28;
constexpr std::uint64_t acq_offset = 0x30;
constexpr std::uint64_t crto_offset = 0x68;

/// MQES 7FFh, CQR, AMS WRR, TO 20h, DSTRD 0, NSSRS, CSS NVM + I/O command sets, MPSMIN 0,
/// MPSMAX 4, CRMS CRWMS + CRIMS.
spec::cap_register typical_cap()
{
    spec::cap_register cap{};
    cap.set(cap.mqes, 0x7ff)
        .set(cap.cqr, true)
        .set(cap.ams_weighted_round_robin_urgent, true)
        .set(cap.to, 0x20)
        .set(cap.dstrd, 0)
        .set(cap.nssrs, true)
        .set(cap.css_nvm, true)
        .set(cap.css_io_command_sets, true)
        .set(cap.mpsmin, 0)
        .set(cap.mpsmax, 4)
        .set(cap.crwms, true)
        .set(cap.crims, true);
    return cap;
}
constexpr std::uint64_t typical_cap_raw = 0x18400830'200307ffULL;

register_file_config typical_config() { return register_file_config{.cap = typical_cap()}; }

register_file_config config_with(spec::cap_register cap) { return register_file_config{.cap = cap}; }

/// Every dword of 000h..FFFh as the host reads it. 4-byte reads below 1000h never count as host
/// errors, so taking a snapshot does not disturb the counter.
std::array<std::uint32_t, 1024> snapshot(register_file& registers)
{
    std::array<std::uint32_t, 1024> dwords{};
    for (std::uint64_t i = 0; i < dwords.size(); ++i) {
        dwords[i] = static_cast<std::uint32_t>(registers.read(i * 4, 4));
    }
    return dwords;
}

/// Checks that `action` counts exactly one host error with `reason` and changes no register.
template <typename Action>
void expect_one_host_error_without_change(register_file& registers, register_host_error reason, Action action)
{
    const auto before = snapshot(registers);
    const auto errors = registers.host_error_count();
    action();
    EXPECT_EQ(registers.host_error_count(), errors + 1);
    EXPECT_EQ(registers.last_host_error(), reason);
    EXPECT_EQ(snapshot(registers), before);
    EXPECT_EQ(registers.host_error_count(), errors + 1);
}

void expect_invalid(const register_file_config& config, const std::string& field)
{
    try {
        const register_file registers{config};
        ADD_FAILURE() << "no exception for " << field;
    } catch (const std::invalid_argument& error) {
        EXPECT_NE(std::string{error.what()}.find(field), std::string::npos) << error.what();
    }
}

constexpr register_event no_event{};

} // namespace

TEST(register_file, typical_cap_raw_value_is_what_the_test_expects)
{
    EXPECT_EQ(typical_cap().raw, typical_cap_raw);
}

TEST(register_file, every_register_reads_its_reset_value)
{
    register_file registers{typical_config()};
    EXPECT_EQ(registers.read(cap_offset, 8), typical_cap_raw);
    EXPECT_EQ(registers.read(cap_offset, 4), 0x200307ffU);
    EXPECT_EQ(registers.read(cap_offset + 4, 4), 0x18400830U);
    EXPECT_EQ(registers.read(vs_offset, 4), 0x00020000U);
    EXPECT_EQ(registers.read(intms_offset, 4), 0U);
    EXPECT_EQ(registers.read(intmc_offset, 4), 0U);
    EXPECT_EQ(registers.read(cc_offset, 4), 0U);
    EXPECT_EQ(registers.read(csts_offset, 4), 0U);
    EXPECT_EQ(registers.read(nssr_offset, 4), 0U);
    EXPECT_EQ(registers.read(aqa_offset, 4), 0U);
    EXPECT_EQ(registers.read(asq_offset, 8), 0U);
    EXPECT_EQ(registers.read(acq_offset, 8), 0U);
    EXPECT_EQ(registers.read(0x48, 8), 0U);                 // BPMBL
    EXPECT_EQ(registers.read(0x50, 8), 0U);                 // CMBMSC
    EXPECT_EQ(registers.read(crto_offset, 4), 0x00200020U); // CRWMT = CRIMT = CAP.TO
    EXPECT_EQ(registers.host_error_count(), 0U);

    const auto dwords = snapshot(registers);
    for (std::size_t i = 0; i < dwords.size(); ++i) {
        const std::uint64_t offset = i * 4;
        std::uint32_t expected = 0;
        if (offset == 0x00) {
            expected = 0x200307ff;
        } else if (offset == 0x04) {
            expected = 0x18400830;
        } else if (offset == vs_offset) {
            expected = 0x00020000;
        } else if (offset == crto_offset) {
            expected = 0x00200020;
        }
        EXPECT_EQ(dwords[i], expected) << "offset " << offset;
    }
    EXPECT_EQ(registers.host_error_count(), 0U);
    EXPECT_EQ(registers.last_host_error(), register_host_error::none);

    EXPECT_EQ(registers.cap().raw, typical_cap_raw);
    EXPECT_EQ(registers.vs(), spec::version_2_0_0);
    EXPECT_EQ(registers.cc().raw, 0U);
    EXPECT_EQ(registers.csts().raw, 0U);
    EXPECT_EQ(registers.aqa().raw, 0U);
    EXPECT_EQ(registers.asq().raw, 0U);
    EXPECT_EQ(registers.acq().raw, 0U);
    EXPECT_EQ(registers.crto().raw, 0x00200020U);
    EXPECT_EQ(registers.interrupt_mask(), 0U);
    EXPECT_EQ(registers.max_queue_id(), 0xffff);
    EXPECT_EQ(registers.doorbell_stride_bytes(), 4U);
}

TEST(register_file, vs_and_crto_come_from_the_configuration)
{
    auto config = typical_config();
    config.vs = spec::make_version(1, 4, 0);
    config.crto =
        spec::crto_register{}.with(spec::crto_register::crwmt, 0x30).with(spec::crto_register::crimt, 0x10);
    register_file registers{config};
    EXPECT_EQ(registers.read(vs_offset, 4), 0x00010400U);
    EXPECT_EQ(registers.read(crto_offset, 4), 0x00100030U);
    EXPECT_EQ(registers.crto().get(spec::crto_register::crwmt), 0x30);
}

TEST(register_file, crto_derived_from_cap_to_without_crms)
{
    auto cap = typical_cap();
    cap.set(cap.crms, 0).set(cap.to, 0x7f);
    register_file registers{config_with(cap)};
    EXPECT_EQ(registers.read(crto_offset, 4), 0x0000007fU); // no CRIMS: CRIMT 0
}

TEST(register_file, crto_derived_for_ready_with_media_only)
{
    // CRWMS without CRIMS: CRWMT = CAP.TO, CRIMT 0, and CC.CRIME read-only 0.
    auto cap = typical_cap();
    cap.set(cap.crims, false).set(cap.to, 0x14);
    register_file registers{config_with(cap)};
    EXPECT_EQ(registers.read(crto_offset, 4), 0x00000014U);
    registers.write(cc_offset, 4, spec::cc_register::crime.mask);
    EXPECT_EQ(registers.read(cc_offset, 4), 0U);
    EXPECT_EQ(registers.last_host_error(), register_host_error::read_only_bits_write);
}

TEST(register_file, configuration_is_validated_naming_the_field)
{
    expect_invalid(config_with(typical_cap().with(spec::cap_register::mqes, 0)), "CAP.MQES");
    expect_invalid(config_with(typical_cap().with(spec::cap_register::mpsmin, 5)), "CAP.MPSMIN");
    expect_invalid(config_with(typical_cap().with(spec::cap_register::css, 0)), "CAP.CSS");
    expect_invalid(config_with(typical_cap().with(spec::cap_register::css, 0x80)), "CAP.CSS"); // admin only
    expect_invalid(config_with(typical_cap().with(spec::cap_register::css, 0x03)), "CAP.CSS"); // bit 38
    expect_invalid(config_with(spec::cap_register{typical_cap_raw | (std::uint64_t{1} << 19)}),
                   "CAP: reserved");
    expect_invalid(config_with(spec::cap_register{typical_cap_raw | (std::uint64_t{1} << 61)}),
                   "CAP: reserved");
    expect_invalid(config_with(typical_cap().with(spec::cap_register::bps, true)), "CAP.BPS");
    expect_invalid(config_with(typical_cap().with(spec::cap_register::cmbs, true)), "CAP.CMBS");
    expect_invalid(config_with(typical_cap().with(spec::cap_register::pmrs, true)), "CAP.PMRS");
    expect_invalid(config_with(typical_cap().with(spec::cap_register::nsss, true)), "CAP.NSSS");
    expect_invalid(config_with(typical_cap().with(spec::cap_register::crwms, false)), "CAP.CRMS");

    auto bad_version = typical_config();
    bad_version.vs = spec::make_version(0, 9, 0);
    expect_invalid(bad_version, "VS.MJR");

    auto short_crto = typical_config();
    short_crto.crto =
        spec::crto_register{}.with(spec::crto_register::crwmt, 0x1f).with(spec::crto_register::crimt, 0x40);
    expect_invalid(short_crto, "CRTO.CRWMT");
}

TEST(register_file, configuration_edge_values_are_accepted)
{
    auto cap = typical_cap();
    cap.set(cap.mqes, 1)
        .set(cap.css, 0x40)
        .set(cap.dstrd, 15)
        .set(cap.mpsmin, 4)
        .set(cap.mpsmax, 4)
        .set(cap.crms, 0);
    cap.set(cap.cps, spec::controller_power_scope::nvm_subsystem).set(cap.ams, 0b11).set(cap.to, 0);
    register_file registers{config_with(cap)};
    EXPECT_EQ(registers.read(cap_offset, 8), cap.raw);
    EXPECT_EQ(registers.read(crto_offset, 4), 0U);
    EXPECT_EQ(registers.doorbell_stride_bytes(), 4U << 15);

    // Without CRWMS the CRTO given is reported as is, even below CAP.TO.
    auto config = config_with(typical_cap().with(spec::cap_register::crms, 0));
    config.crto = spec::crto_register{0x00010001};
    register_file low_crto{config};
    EXPECT_EQ(low_crto.read(crto_offset, 4), 0x00010001U);
}

TEST(register_file, read_only_registers_ignore_writes_and_count_host_errors)
{
    register_file registers{typical_config()};
    const std::array<std::uint64_t, 19> read_only_dwords{0x00, 0x04, 0x08,  0x38,  0x3c, 0x40, 0x44,
                                                         0x48, 0x4c, 0x50,  0x54,  0x58, 0x5c, 0x60,
                                                         0x64, 0x68, 0xe00, 0xe04, 0xe18};
    for (const auto offset : read_only_dwords) {
        // Even rewriting the value read counts: the whole register is read-only.
        const auto value = registers.read(offset, 4);
        expect_one_host_error_without_change(registers, register_host_error::read_only_register_write, [&] {
            EXPECT_EQ(registers.write(offset, 4, value), no_event) << offset;
        });
        expect_one_host_error_without_change(registers, register_host_error::read_only_register_write, [&] {
            EXPECT_EQ(registers.write(offset, 4, 0xffffffff), no_event) << offset;
        });
    }
    for (const std::uint64_t offset : std::initializer_list<std::uint64_t>{0x00ULL, 0x48ULL, 0x50ULL}) {
        expect_one_host_error_without_change(registers, register_host_error::read_only_register_write, [&] {
            EXPECT_EQ(registers.write(offset, 8, 0x1234'5678'9abc'd000ULL), no_event) << offset;
        });
    }
    EXPECT_EQ(registers.host_error_count(), 2 * read_only_dwords.size() + 3);
    EXPECT_EQ(registers.read(cap_offset, 8), typical_cap_raw);
}

TEST(register_file, reserved_space_reads_zero_and_writes_are_host_errors)
{
    register_file registers{typical_config()};
    for (const std::uint64_t offset : std::initializer_list<std::uint64_t>{
             0x18ULL, 0x6cULL, 0x100ULL, 0xdfcULL, 0xe1cULL, 0xf00ULL, 0xffcULL}) {
        EXPECT_EQ(registers.read(offset, 4), 0U);
        EXPECT_EQ(registers.host_error_count(), 0U);
        expect_one_host_error_without_change(registers, register_host_error::reserved_space_write,
                                             [&] { EXPECT_EQ(registers.write(offset, 4, 0x1), no_event); });
        expect_one_host_error_without_change(registers, register_host_error::reserved_space_write,
                                             [&] { EXPECT_EQ(registers.write(offset, 4, 0), no_event); });
        registers = register_file{typical_config()};
    }
}

TEST(register_file, cc_stores_every_defined_field_and_reports_old_and_new)
{
    register_file registers{typical_config()};
    spec::cc_register cc{};
    cc.set(cc.en, true).set(cc.iosqes, 6).set(cc.iocqes, 4);
    EXPECT_EQ(registers.write(cc_offset, 4, cc.raw),
              (register_event{register_event_kind::cc_written, 0, 0x00460001}));
    EXPECT_EQ(registers.read(cc_offset, 4), 0x00460001U);
    EXPECT_EQ(registers.cc(), cc);

    // Every defined field: EN, CSS, MPS, AMS, SHN, IOSQES, IOCQES, CRIME (CAP.CRMS.CRIMS = 1).
    EXPECT_EQ(registers.write(cc_offset, 4, 0x01fffff1),
              (register_event{register_event_kind::cc_written, 0x00460001, 0x01fffff1}));
    EXPECT_EQ(registers.read(cc_offset, 4), 0x01fffff1U);
    // The register file does not interpret the value: an unchanged CC is still reported.
    EXPECT_EQ(registers.write(cc_offset, 4, 0x01fffff1),
              (register_event{register_event_kind::cc_written, 0x01fffff1, 0x01fffff1}));
    EXPECT_EQ(registers.write(cc_offset, 4, 0),
              (register_event{register_event_kind::cc_written, 0x01fffff1, 0}));
    EXPECT_EQ(registers.host_error_count(), 0U);
}

TEST(register_file, cc_reserved_bits_are_dropped_and_counted)
{
    register_file registers{typical_config()};
    EXPECT_EQ(registers.write(cc_offset, 4, 0xffffffff),
              (register_event{register_event_kind::cc_written, 0, 0x01fffff1}));
    EXPECT_EQ(registers.host_error_count(), 1U);
    EXPECT_EQ(registers.last_host_error(), register_host_error::read_only_bits_write);
    EXPECT_EQ(registers.read(cc_offset, 4), 0x01fffff1U);
    EXPECT_EQ(registers.write(cc_offset, 4, 0x00000002),
              (register_event{register_event_kind::cc_written, 0x01fffff1, 0}));
    EXPECT_EQ(registers.host_error_count(), 2U);
    EXPECT_EQ(registers.read(cc_offset, 4), 0U);
}

TEST(register_file, cc_crime_is_reserved_without_crims)
{
    register_file registers{config_with(typical_cap().with(spec::cap_register::crims, false))};
    EXPECT_EQ(registers.write(cc_offset, 4, 0x01460001),
              (register_event{register_event_kind::cc_written, 0, 0x00460001}));
    EXPECT_EQ(registers.host_error_count(), 1U);
    EXPECT_EQ(registers.last_host_error(), register_host_error::read_only_bits_write);
    EXPECT_FALSE(registers.cc().get(spec::cc_register::crime));
}

TEST(register_file, set_cc_is_the_controllers_update_without_event_or_error)
{
    register_file registers{typical_config()};
    static_cast<void>(registers.write(cc_offset, 4, 0x00464001)); // SHN = normal
    EXPECT_EQ(registers.cc().get(spec::cc_register::shn), spec::shutdown_notification::normal);
    registers.set_cc(registers.cc().with(spec::cc_register::shn, spec::shutdown_notification::none));
    EXPECT_EQ(registers.read(cc_offset, 4), 0x00460001U);
    EXPECT_EQ(registers.host_error_count(), 0U);
}

TEST(register_file, csts_is_read_only_except_nssro_write_one_to_clear)
{
    register_file registers{typical_config()};
    spec::csts_register csts{};
    csts.set(csts.rdy, true)
        .set(csts.cfs, true)
        .set(csts.shst, spec::shutdown_status::complete)
        .set(csts.nssro, true)
        .set(csts.pp, true);
    registers.set_csts(csts);
    EXPECT_EQ(registers.read(csts_offset, 4), 0x3bU);

    // Writing 0 changes nothing and is no error (read-only bits written as 0 in a RW1C register).
    EXPECT_EQ(registers.write(csts_offset, 4, 0), no_event);
    EXPECT_EQ(registers.read(csts_offset, 4), 0x3bU);
    EXPECT_EQ(registers.host_error_count(), 0U);

    // Writing NSSRO alone clears it (what Linux does).
    EXPECT_EQ(registers.write(csts_offset, 4, 0x10), no_event);
    EXPECT_EQ(registers.read(csts_offset, 4), 0x2bU);
    EXPECT_EQ(registers.host_error_count(), 0U);

    // Writing back the value read (read-only bits equal to the stored ones) is no error either.
    registers.set_csts(csts);
    EXPECT_EQ(registers.write(csts_offset, 4, 0x3b), no_event);
    EXPECT_EQ(registers.read(csts_offset, 4), 0x2bU);
    EXPECT_EQ(registers.host_error_count(), 0U);

    // 1 to NSSRO when already clear: nothing happens.
    EXPECT_EQ(registers.write(csts_offset, 4, 0x10), no_event);
    EXPECT_EQ(registers.read(csts_offset, 4), 0x2bU);
    EXPECT_EQ(registers.host_error_count(), 0U);

    // Setting a read-only bit (ST) or a reserved bit is a host error and changes nothing.
    expect_one_host_error_without_change(registers, register_host_error::read_only_bits_write,
                                         [&] { EXPECT_EQ(registers.write(csts_offset, 4, 0x40), no_event); });
    expect_one_host_error_without_change(registers, register_host_error::read_only_bits_write, [&] {
        EXPECT_EQ(registers.write(csts_offset, 4, 0x80000000), no_event);
    });

    // A host error in read-only bits does not stop the NSSRO clear in the same write.
    registers.set_csts(csts);
    EXPECT_EQ(registers.write(csts_offset, 4, 0x50), no_event);
    EXPECT_EQ(registers.host_error_count(), 3U);
    EXPECT_EQ(registers.read(csts_offset, 4), 0x2bU);
}

TEST(register_file, nssr_reports_the_value_when_supported)
{
    register_file registers{typical_config()};
    EXPECT_EQ(registers.write(nssr_offset, 4, spec::nvm_subsystem_reset_value),
              (register_event{register_event_kind::nssr_written, 0, 0x4e564d65}));
    EXPECT_EQ(registers.read(nssr_offset, 4), 0U);
    // Any value is passed on: only 4E564D65h starts a reset, and the controller checks it.
    EXPECT_EQ(registers.write(nssr_offset, 4, 0x1234),
              (register_event{register_event_kind::nssr_written, 0, 0x1234}));
    EXPECT_EQ(registers.read(nssr_offset, 4), 0U);
    EXPECT_EQ(registers.host_error_count(), 0U);
}

TEST(register_file, nssr_is_a_host_error_without_nssrs)
{
    register_file registers{config_with(typical_cap().with(spec::cap_register::nssrs, false))};
    expect_one_host_error_without_change(registers, register_host_error::nssr_not_supported, [&] {
        EXPECT_EQ(registers.write(nssr_offset, 4, spec::nvm_subsystem_reset_value), no_event);
    });
    EXPECT_EQ(registers.read(nssr_offset, 4), 0U);
}

TEST(register_file, intms_sets_and_intmc_clears_one_mask)
{
    register_file registers{typical_config()};
    EXPECT_EQ(registers.write(intms_offset, 4, 0x5),
              (register_event{register_event_kind::interrupt_mask_changed, 0, 0x5}));
    EXPECT_EQ(registers.read(intms_offset, 4), 0x5U);
    EXPECT_EQ(registers.read(intmc_offset, 4), 0x5U);
    EXPECT_EQ(registers.write(intms_offset, 4, 0x4), no_event); // already masked: no change
    EXPECT_EQ(registers.write(intms_offset, 4, 0x100),
              (register_event{register_event_kind::interrupt_mask_changed, 0x5, 0x105}));
    EXPECT_EQ(registers.write(intmc_offset, 4, 0x4),
              (register_event{register_event_kind::interrupt_mask_changed, 0x105, 0x101}));
    EXPECT_EQ(registers.write(intmc_offset, 4, 0), no_event);
    EXPECT_EQ(registers.write(intmc_offset, 4, 0x2), no_event); // not masked: no change
    EXPECT_EQ(registers.interrupt_mask(), 0x101U);
    EXPECT_EQ(registers.read(intmc_offset, 4), 0x101U);
    EXPECT_EQ(registers.write(intms_offset, 4, 0xffffffff),
              (register_event{register_event_kind::interrupt_mask_changed, 0x101, 0xffffffff}));
    EXPECT_EQ(registers.write(intmc_offset, 4, 0xffffffff),
              (register_event{register_event_kind::interrupt_mask_changed, 0xffffffff, 0}));
    EXPECT_EQ(registers.interrupt_mask(), 0U);
    EXPECT_EQ(registers.host_error_count(), 0U);
}

TEST(register_file, aqa_keeps_the_sizes_written_and_drops_reserved_bits)
{
    register_file registers{typical_config()};
    EXPECT_EQ(registers.write(aqa_offset, 4, 0x001f003f),
              (register_event{register_event_kind::admin_queue_attributes_written, 0, 0x001f003f}));
    EXPECT_EQ(registers.aqa().admin_sq_entries(), 64U);
    EXPECT_EQ(registers.aqa().admin_cq_entries(), 32U);
    EXPECT_EQ(registers.host_error_count(), 0U);
    EXPECT_EQ(registers.write(aqa_offset, 4, 0xffffffff),
              (register_event{register_event_kind::admin_queue_attributes_written, 0x001f003f, 0x0fff0fff}));
    EXPECT_EQ(registers.read(aqa_offset, 4), 0x0fff0fffU);
    EXPECT_EQ(registers.host_error_count(), 1U);
    EXPECT_EQ(registers.last_host_error(), register_host_error::read_only_bits_write);
    // Size 0 (one entry) is stored as written; the controller rejects it at CC.EN 0 -> 1.
    EXPECT_EQ(registers.write(aqa_offset, 4, 0),
              (register_event{register_event_kind::admin_queue_attributes_written, 0x0fff0fff, 0}));
    EXPECT_EQ(registers.read(aqa_offset, 4), 0U);
}

class admin_queue_base_test : public testing::TestWithParam<std::uint64_t> {};

TEST_P(admin_queue_base_test, accepts_one_64_bit_write_or_two_halves_in_either_order)
{
    const std::uint64_t offset = GetParam();
    register_file registers{typical_config()};

    EXPECT_EQ(registers.write(offset, 8, 0x0000'0012'3456'7000ULL), no_event);
    EXPECT_EQ(registers.read(offset, 8), 0x0000'0012'3456'7000ULL);
    EXPECT_EQ(registers.read(offset, 4), 0x34567000U);
    EXPECT_EQ(registers.read(offset + 4, 4), 0x00000012U);

    // Low half then high half: each write changes only its half.
    EXPECT_EQ(registers.write(offset, 4, 0xaaaa'b000), no_event);
    EXPECT_EQ(registers.read(offset, 8), 0x0000'0012'aaaa'b000ULL);
    EXPECT_EQ(registers.write(offset + 4, 4, 0x8000'0001), no_event);
    EXPECT_EQ(registers.read(offset, 8), 0x8000'0001'aaaa'b000ULL);

    // High half then low half.
    EXPECT_EQ(registers.write(offset + 4, 4, 0x0000'00fe), no_event);
    EXPECT_EQ(registers.read(offset, 8), 0x0000'00fe'aaaa'b000ULL);
    EXPECT_EQ(registers.write(offset, 4, 0x1000'0000), no_event);
    EXPECT_EQ(registers.read(offset, 8), 0x0000'00fe'1000'0000ULL);
    EXPECT_EQ(registers.host_error_count(), 0U);

    // Bits 11:00 are reserved: dropped and counted, the address bits still land.
    EXPECT_EQ(registers.write(offset, 4, 0x2000'0123), no_event);
    EXPECT_EQ(registers.read(offset, 8), 0x0000'00fe'2000'0000ULL);
    EXPECT_EQ(registers.host_error_count(), 1U);
    EXPECT_EQ(registers.last_host_error(), register_host_error::read_only_bits_write);
    EXPECT_EQ(registers.write(offset, 8, 0x0000'0001'0000'1fffULL), no_event);
    EXPECT_EQ(registers.read(offset, 8), 0x0000'0001'0000'1000ULL);
    EXPECT_EQ(registers.host_error_count(), 2U);
    // A high-half write cannot touch the reserved bits: no error.
    EXPECT_EQ(registers.write(offset + 4, 4, 0xffff'ffff), no_event);
    EXPECT_EQ(registers.read(offset, 8), 0xffff'ffff'0000'1000ULL);
    EXPECT_EQ(registers.host_error_count(), 2U);
}

INSTANTIATE_TEST_SUITE_P(asq_and_acq, admin_queue_base_test, testing::Values(asq_offset, acq_offset));

TEST(register_file, admin_queue_bases_are_independent)
{
    register_file registers{typical_config()};
    static_cast<void>(registers.write(asq_offset, 8, 0x1000));
    static_cast<void>(registers.write(acq_offset, 8, 0x2000));
    EXPECT_EQ(registers.asq().base_address(), 0x1000U);
    EXPECT_EQ(registers.acq().base_address(), 0x2000U);
}

TEST(register_file, cap_reads_as_64_bits_or_two_halves)
{
    register_file registers{typical_config()};
    const auto high = registers.read(cap_offset + 4, 4);
    const auto low = registers.read(cap_offset, 4);
    EXPECT_EQ((high << 32) | low, typical_cap_raw);
    EXPECT_EQ(registers.read(cap_offset, 8), typical_cap_raw);
    EXPECT_EQ(registers.host_error_count(), 0U);
}

TEST(register_file, a_64_bit_access_must_target_a_64_bit_register)
{
    register_file registers{typical_config()};
    static_cast<void>(registers.write(cc_offset, 4, 0x00460001));
    static_cast<void>(registers.write(intms_offset, 4, 0x3));
    // 08h: VS + INTMS; 10h: INTMC + CC; 20h: NSSR + AQA; 18h: reserved + CSTS; 70h: reserved.
    for (const std::uint64_t offset : std::initializer_list<std::uint64_t>{
             0x08ULL, 0x10ULL, 0x20ULL, 0x18ULL, 0x68ULL, 0x70ULL, 0xe00ULL, 0xff8ULL}) {
        expect_one_host_error_without_change(registers, register_host_error::width_mismatch,
                                             [&] { EXPECT_EQ(registers.read(offset, 8), 0U) << offset; });
        expect_one_host_error_without_change(registers, register_host_error::width_mismatch, [&] {
            EXPECT_EQ(registers.write(offset, 8, 0xffff'ffff'ffff'ffffULL), no_event) << offset;
        });
    }
    EXPECT_EQ(registers.read(cc_offset, 4), 0x00460001U);
    EXPECT_EQ(registers.interrupt_mask(), 0x3U);
}

TEST(register_file, narrow_wide_and_misaligned_accesses_are_host_errors_without_effect)
{
    register_file registers{typical_config()};
    static_cast<void>(registers.write(cc_offset, 4, 0x00460001));

    for (const unsigned width : {0U, 1U, 2U, 3U, 5U, 16U, 64U}) {
        for (const std::uint64_t offset :
             std::initializer_list<std::uint64_t>{0x00ULL, cc_offset, 0x15ULL, 0x1000ULL}) {
            expect_one_host_error_without_change(registers, register_host_error::unsupported_width,
                                                 [&] { EXPECT_EQ(registers.read(offset, width), 0U); });
            expect_one_host_error_without_change(registers, register_host_error::unsupported_width, [&] {
                EXPECT_EQ(registers.write(offset, width, 0), no_event);
            });
        }
    }
    const std::array<std::pair<std::uint64_t, unsigned>, 7> misaligned{
        {{0x15, 4}, {0x16, 4}, {0x04, 8}, {0x2c, 8}, {0x1001, 4}, {0x1002, 4}, {0x1004, 8}}};
    for (const auto& access : misaligned) {
        const std::uint64_t offset = access.first;
        const unsigned width = access.second;
        expect_one_host_error_without_change(registers, register_host_error::misaligned,
                                             [&] { EXPECT_EQ(registers.read(offset, width), 0U) << offset; });
        expect_one_host_error_without_change(registers, register_host_error::misaligned, [&] {
            EXPECT_EQ(registers.write(offset, width, 0), no_event) << offset;
        });
    }
    EXPECT_EQ(registers.read(cc_offset, 4), 0x00460001U);
}

TEST(register_file, doorbells_with_stride_4_bytes)
{
    register_file registers{typical_config()};
    const auto before = snapshot(registers);
    EXPECT_EQ(registers.write(0x1000, 4, 7), (register_event{register_event_kind::doorbell, 0, 7, 0, false}));
    EXPECT_EQ(registers.write(0x1004, 4, 3), (register_event{register_event_kind::doorbell, 0, 3, 0, true}));
    EXPECT_EQ(registers.write(0x1008, 4, 1), (register_event{register_event_kind::doorbell, 0, 1, 1, false}));
    EXPECT_EQ(registers.write(0x100c, 4, 0xffff),
              (register_event{register_event_kind::doorbell, 0, 0xffff, 1, true}));
    // Only bits 31:00 of a 4-byte write reach the doorbell; bits 31:16 are the controller's to check.
    EXPECT_EQ(registers.write(0x1000, 4, 0xdead'beef'0001'0002ULL),
              (register_event{register_event_kind::doorbell, 0, 0x00010002, 0, false}));
    // Queue 65535 exists while max_queue_id is 65535.
    EXPECT_EQ(registers.write(spec::sq_tail_doorbell_offset(0xffff, 0), 4, 1),
              (register_event{register_event_kind::doorbell, 0, 1, 0xffff, false}));
    EXPECT_EQ(registers.write(spec::cq_head_doorbell_offset(0xffff, 0), 4, 1),
              (register_event{register_event_kind::doorbell, 0, 1, 0xffff, true}));
    EXPECT_EQ(registers.read(0x1000, 4), 0U);
    EXPECT_EQ(registers.read(0x1004, 4), 0U);
    EXPECT_EQ(registers.host_error_count(), 0U);
    EXPECT_EQ(snapshot(registers), before);

    // Past queue 65535 there are no doorbells.
    expect_one_host_error_without_change(registers, register_host_error::not_a_doorbell, [&] {
        EXPECT_EQ(registers.write(0x1000 + 0x80000, 4, 1), no_event);
    });
    expect_one_host_error_without_change(registers, register_host_error::not_a_doorbell,
                                         [&] { EXPECT_EQ(registers.read(0x1000 + 0x80000, 4), 0U); });
    expect_one_host_error_without_change(registers, register_host_error::not_a_doorbell, [&] {
        EXPECT_EQ(registers.write(0xffff'ffff'ffff'fffcULL, 4, 1), no_event);
    });
    // Doorbells are 32 bits wide.
    expect_one_host_error_without_change(registers, register_host_error::width_mismatch,
                                         [&] { EXPECT_EQ(registers.write(0x1008, 8, 1), no_event); });
    expect_one_host_error_without_change(registers, register_host_error::width_mismatch,
                                         [&] { EXPECT_EQ(registers.read(0x1008, 8), 0U); });
}

TEST(register_file, doorbells_beyond_max_queue_id_are_host_errors)
{
    register_file registers{typical_config()};
    registers.set_max_queue_id(3);
    EXPECT_EQ(registers.max_queue_id(), 3);
    EXPECT_EQ(registers.write(0x1018, 4, 2), (register_event{register_event_kind::doorbell, 0, 2, 3, false}));
    EXPECT_EQ(registers.write(0x101c, 4, 2), (register_event{register_event_kind::doorbell, 0, 2, 3, true}));
    expect_one_host_error_without_change(registers, register_host_error::doorbell_beyond_max_queue,
                                         [&] { EXPECT_EQ(registers.write(0x1020, 4, 2), no_event); });
    expect_one_host_error_without_change(registers, register_host_error::doorbell_beyond_max_queue,
                                         [&] { EXPECT_EQ(registers.write(0x1024, 4, 2), no_event); });
    expect_one_host_error_without_change(registers, register_host_error::doorbell_beyond_max_queue,
                                         [&] { EXPECT_EQ(registers.read(0x1024, 4), 0U); });

    registers.set_max_queue_id(0);
    EXPECT_EQ(registers.write(0x1000, 4, 1), (register_event{register_event_kind::doorbell, 0, 1, 0, false}));
    EXPECT_EQ(registers.write(0x1004, 4, 1), (register_event{register_event_kind::doorbell, 0, 1, 0, true}));
    expect_one_host_error_without_change(registers, register_host_error::doorbell_beyond_max_queue,
                                         [&] { EXPECT_EQ(registers.write(0x1008, 4, 1), no_event); });
    EXPECT_EQ(registers.host_error_count(), 4U);
}

TEST(register_file, doorbells_with_stride_16_bytes)
{
    register_file registers{config_with(typical_cap().with(spec::cap_register::dstrd, 2))};
    EXPECT_EQ(registers.doorbell_stride_bytes(), 16U);
    EXPECT_EQ(registers.write(0x1000, 4, 5), (register_event{register_event_kind::doorbell, 0, 5, 0, false}));
    EXPECT_EQ(registers.write(0x1010, 4, 5), (register_event{register_event_kind::doorbell, 0, 5, 0, true}));
    EXPECT_EQ(registers.write(0x1020, 4, 5), (register_event{register_event_kind::doorbell, 0, 5, 1, false}));
    EXPECT_EQ(registers.write(0x1030, 4, 5), (register_event{register_event_kind::doorbell, 0, 5, 1, true}));
    EXPECT_EQ(registers.host_error_count(), 0U);

    // The dwords inside a stride are not doorbells.
    for (const std::uint64_t offset :
         std::initializer_list<std::uint64_t>{0x1004ULL, 0x1008ULL, 0x100cULL, 0x1014ULL, 0x103cULL}) {
        expect_one_host_error_without_change(registers, register_host_error::not_a_doorbell, [&] {
            EXPECT_EQ(registers.write(offset, 4, 5), no_event) << offset;
        });
        expect_one_host_error_without_change(registers, register_host_error::not_a_doorbell,
                                             [&] { EXPECT_EQ(registers.read(offset, 4), 0U) << offset; });
    }

    registers.set_max_queue_id(7);
    EXPECT_EQ(registers.write(spec::sq_tail_doorbell_offset(7, 2), 4, 1),
              (register_event{register_event_kind::doorbell, 0, 1, 7, false}));
    EXPECT_EQ(registers.write(spec::cq_head_doorbell_offset(7, 2), 4, 1),
              (register_event{register_event_kind::doorbell, 0, 1, 7, true}));
    EXPECT_EQ(spec::cq_head_doorbell_offset(7, 2), 0x10f0U);
    expect_one_host_error_without_change(registers, register_host_error::doorbell_beyond_max_queue, [&] {
        EXPECT_EQ(registers.write(0x1100, 4, 1), no_event); // SQ 8
    });
}

TEST(register_file, controller_reset_keeps_admin_queue_registers_and_nssro)
{
    register_file registers{typical_config()};
    static_cast<void>(registers.write(cc_offset, 4, 0x00464001));
    static_cast<void>(registers.write(aqa_offset, 4, 0x001f001f));
    static_cast<void>(registers.write(asq_offset, 8, 0x0000'0001'0000'0000ULL));
    static_cast<void>(registers.write(acq_offset, 8, 0x0000'0002'0000'0000ULL));
    static_cast<void>(registers.write(intms_offset, 4, 0xf0));
    static_cast<void>(registers.write(cc_offset, 4, 0xffffffff)); // one host error
    registers.set_max_queue_id(9);
    spec::csts_register csts{};
    csts.set(csts.rdy, true).set(csts.cfs, true).set(csts.shst, spec::shutdown_status::complete);
    csts.set(csts.nssro, true).set(csts.pp, true).set(csts.st, true);
    registers.set_csts(csts);
    EXPECT_EQ(registers.read(csts_offset, 4), 0x7bU);

    registers.reset_controller();
    EXPECT_EQ(registers.read(cc_offset, 4), 0U);
    EXPECT_EQ(registers.read(csts_offset, 4), 0x10U); // RDY, CFS, SHST, PP, ST cleared; NSSRO kept
    EXPECT_EQ(registers.read(intms_offset, 4), 0U);
    EXPECT_EQ(registers.read(intmc_offset, 4), 0U);
    EXPECT_EQ(registers.read(aqa_offset, 4), 0x001f001fU);
    EXPECT_EQ(registers.read(asq_offset, 8), 0x0000'0001'0000'0000ULL);
    EXPECT_EQ(registers.read(acq_offset, 8), 0x0000'0002'0000'0000ULL);
    EXPECT_EQ(registers.read(cap_offset, 8), typical_cap_raw);
    EXPECT_EQ(registers.read(vs_offset, 4), 0x00020000U);
    EXPECT_EQ(registers.read(crto_offset, 4), 0x00200020U);
    EXPECT_EQ(registers.host_error_count(), 1U);
    EXPECT_EQ(registers.max_queue_id(), 9);

    // With the kept registers back at their reset values, everything equals a fresh file: both
    // resets read the same reset values.
    static_cast<void>(registers.write(aqa_offset, 4, 0));
    static_cast<void>(registers.write(asq_offset, 8, 0));
    static_cast<void>(registers.write(acq_offset, 8, 0));
    static_cast<void>(registers.write(csts_offset, 4, 0x10));
    register_file fresh{typical_config()};
    EXPECT_EQ(snapshot(registers), snapshot(fresh));
}

TEST(register_file, controller_reset_without_nssro_leaves_csts_zero)
{
    register_file registers{typical_config()};
    registers.set_csts(spec::csts_register{}.with(spec::csts_register::rdy, true));
    registers.reset_controller();
    EXPECT_EQ(registers.read(csts_offset, 4), 0U);
}

TEST(register_file, power_on_reset_restores_every_reset_value)
{
    register_file registers{typical_config()};
    register_file fresh{typical_config()};
    static_cast<void>(registers.write(cc_offset, 4, 0x00460001));
    static_cast<void>(registers.write(aqa_offset, 4, 0x001f001f));
    static_cast<void>(registers.write(asq_offset, 8, 0x1000));
    static_cast<void>(registers.write(acq_offset, 8, 0x2000));
    static_cast<void>(registers.write(intms_offset, 4, 0x1));
    static_cast<void>(registers.write(0x18, 4, 1)); // one host error
    registers.set_csts(spec::csts_register{0x7f});
    registers.set_max_queue_id(4);

    registers.reset_power_on();
    EXPECT_EQ(snapshot(registers), snapshot(fresh));
    EXPECT_EQ(registers.aqa().raw, 0U);
    EXPECT_EQ(registers.asq().raw, 0U);
    EXPECT_EQ(registers.acq().raw, 0U);
    EXPECT_EQ(registers.csts().raw, 0U);
    EXPECT_EQ(registers.host_error_count(), 1U);
    EXPECT_EQ(registers.max_queue_id(), 4);

    // NVM Subsystem Reset: power-on values, then the controller reports NSSRO.
    registers.set_csts(spec::csts_register{}.with(spec::csts_register::nssro, true));
    EXPECT_EQ(registers.read(csts_offset, 4), 0x10U);
}

TEST(register_file, random_accesses_never_break_the_invariants)
{
    auto cap = typical_cap();
    cap.set(cap.dstrd, 1);
    register_file registers{config_with(cap)};
    std::mt19937_64 random{20240611};
    constexpr std::array<unsigned, 10> widths{0, 1, 2, 3, 4, 4, 4, 8, 8, 16};
    std::array<unsigned, 6> events{};
    std::uint64_t previous_errors = 0;

    for (int i = 0; i < 100'000; ++i) {
        const std::uint64_t choice = random() % 100;
        std::uint64_t offset = 0;
        if (choice < 50) {
            offset = random() % 0x1100;
        } else if (choice < 65) {
            offset = random() % 0x100;
        } else if (choice < 85) {
            offset = 0x1000 + random() % 0x100000;
        } else {
            offset = random();
        }
        const unsigned width = widths[random() % widths.size()];
        const std::uint64_t value = (random() % 4 == 0) ? random() % 0x10000 : random();
        const std::uint64_t action = random() % 1000;
        if (action < 480) {
            static_cast<void>(registers.read(offset, width));
        } else if (action < 990) {
            const auto event = registers.write(offset, width, value);
            ++events[static_cast<std::size_t>(event.kind)];
            if (event.kind == register_event_kind::doorbell) {
                ASSERT_LE(event.queue_id, registers.max_queue_id());
                ASSERT_LE(event.new_value, 0xffffffffU);
            }
        } else if (action < 994) {
            registers.reset_controller();
        } else if (action < 996) {
            registers.reset_power_on();
        } else {
            registers.set_max_queue_id(static_cast<std::uint16_t>(random()));
        }

        ASSERT_GE(registers.host_error_count(), previous_errors);
        previous_errors = registers.host_error_count();
        ASSERT_EQ(registers.read(cap_offset, 8), cap.raw) << "step " << i;
        ASSERT_EQ(registers.read(cap_offset, 4), cap.raw & 0xffffffff);
        ASSERT_EQ(registers.read(cap_offset + 4, 4), cap.raw >> 32);
        ASSERT_EQ(registers.read(vs_offset, 4), 0x00020000U);
        ASSERT_EQ(registers.read(crto_offset, 4), 0x00200020U);
        ASSERT_EQ(registers.cc().raw & 0xfe00000eU, 0U);
        ASSERT_EQ(registers.aqa().raw & 0xf000f000U, 0U);
        ASSERT_EQ(registers.asq().raw & 0xfffU, 0U);
        ASSERT_EQ(registers.acq().raw & 0xfffU, 0U);
        ASSERT_EQ(registers.csts().raw, 0U);                      // the host can only clear NSSRO
        ASSERT_EQ(registers.host_error_count(), previous_errors); // the checks above are clean
    }
    EXPECT_GT(previous_errors, 0U);
    for (std::size_t kind = 1; kind < events.size(); ++kind) {
        EXPECT_GT(events[kind], 0U) << "event kind " << kind << " never produced";
    }
}
