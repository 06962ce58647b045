#include <nvmekit/spec/registers.hpp>

#include <cstddef>
#include <cstdint>
#include <set>

#include <gtest/gtest.h>

namespace spec = nvmekit::spec;

namespace {

template <typename Register>
constexpr std::size_t spec_offset_of() noexcept
{
    return static_cast<std::size_t>(Register::offset);
}

// clang-format off
template <typename Register, typename Field>
concept readable_with = requires(Register value, Field field) { value.get(field); };
// clang-format on

} // namespace

// A field belongs to one register type: CC.EN cannot be read from CSTS or PMRCTL.
static_assert(readable_with<spec::cc_register, decltype(spec::cc_register::en)>);
static_assert(!readable_with<spec::csts_register, decltype(spec::cc_register::en)>);
static_assert(!readable_with<spec::pmrctl_register, decltype(spec::cc_register::en)>);

TEST(registers, table_names_every_register_once_with_its_width)
{
    EXPECT_EQ(spec::controller_register_table.size(), 28U);
    std::set<std::string_view> names;
    unsigned wide = 0;
    for (const auto& row : spec::controller_register_table) {
        EXPECT_TRUE(names.insert(row.name).second) << row.name;
        EXPECT_EQ(spec::name(row.offset), row.name);
        wide += row.width == 8 ? 1U : 0U;
    }
    EXPECT_EQ(wide, 5U); // CAP, ASQ, ACQ, BPMBL, CMBMSC
    EXPECT_EQ(spec::register_width(spec::register_offset::cap), 8);
    EXPECT_EQ(spec::register_width(spec::register_offset::cmbmsc), 8);
    EXPECT_EQ(spec::register_width(spec::register_offset::cmbsts), 4);
    EXPECT_EQ(spec::register_width(spec::register_offset::pmrmscl), 4);
    EXPECT_EQ(spec::name(spec::register_offset::nssd), "NSSD");
    EXPECT_EQ(spec::name(spec::register_offset::pmrmscu), "PMRMSCU");
    EXPECT_EQ(static_cast<unsigned>(spec::controller_register_table.back().offset), 0xe18U);
}

TEST(registers, find_register_maps_every_byte_of_a_register_and_nothing_else)
{
    EXPECT_EQ(spec::find_register(0x00)->offset, spec::register_offset::cap);
    EXPECT_EQ(spec::find_register(0x04)->offset, spec::register_offset::cap); // upper half of CAP
    EXPECT_EQ(spec::find_register(0x07)->offset, spec::register_offset::cap);
    EXPECT_EQ(spec::find_register(0x08)->offset, spec::register_offset::vs);
    EXPECT_EQ(spec::find_register(0x2c)->offset, spec::register_offset::asq);
    EXPECT_EQ(spec::find_register(0x34)->offset, spec::register_offset::acq);
    EXPECT_EQ(spec::find_register(0x4c)->offset, spec::register_offset::bpmbl);
    EXPECT_EQ(spec::find_register(0x6b)->offset, spec::register_offset::crto);
    EXPECT_EQ(spec::find_register(0xe1b)->offset, spec::register_offset::pmrmscu);
    EXPECT_FALSE(spec::find_register(0x18).has_value()); // reserved between CC and CSTS
    EXPECT_FALSE(spec::find_register(0x6c).has_value());
    EXPECT_FALSE(spec::find_register(0xdff).has_value());
    EXPECT_FALSE(spec::find_register(0xe1c).has_value());
    EXPECT_FALSE(spec::find_register(0x1000).has_value()); // SQ 0 tail doorbell
}

TEST(registers, block_places_each_register_type_at_its_table_offset)
{
    using block = spec::controller_register_block;
    EXPECT_EQ(offsetof(block, cap), spec_offset_of<spec::cap_register>());
    EXPECT_EQ(offsetof(block, vs), spec_offset_of<spec::vs_register>());
    EXPECT_EQ(offsetof(block, intms), spec_offset_of<spec::intms_register>());
    EXPECT_EQ(offsetof(block, intmc), spec_offset_of<spec::intmc_register>());
    EXPECT_EQ(offsetof(block, cc), spec_offset_of<spec::cc_register>());
    EXPECT_EQ(offsetof(block, csts), spec_offset_of<spec::csts_register>());
    EXPECT_EQ(offsetof(block, nssr), spec_offset_of<spec::nssr_register>());
    EXPECT_EQ(offsetof(block, aqa), spec_offset_of<spec::aqa_register>());
    EXPECT_EQ(offsetof(block, asq), spec_offset_of<spec::asq_register>());
    EXPECT_EQ(offsetof(block, acq), spec_offset_of<spec::acq_register>());
    EXPECT_EQ(offsetof(block, cmbloc), spec_offset_of<spec::cmbloc_register>());
    EXPECT_EQ(offsetof(block, cmbsz), spec_offset_of<spec::cmbsz_register>());
    EXPECT_EQ(offsetof(block, bpinfo), spec_offset_of<spec::bpinfo_register>());
    EXPECT_EQ(offsetof(block, bprsel), spec_offset_of<spec::bprsel_register>());
    EXPECT_EQ(offsetof(block, bpmbl), spec_offset_of<spec::bpmbl_register>());
    EXPECT_EQ(offsetof(block, cmbmsc), spec_offset_of<spec::cmbmsc_register>());
    EXPECT_EQ(offsetof(block, cmbsts), spec_offset_of<spec::cmbsts_register>());
    EXPECT_EQ(offsetof(block, cmbebs), spec_offset_of<spec::cmbebs_register>());
    EXPECT_EQ(offsetof(block, cmbswtp), spec_offset_of<spec::cmbswtp_register>());
    EXPECT_EQ(offsetof(block, nssd), spec_offset_of<spec::nssd_register>());
    EXPECT_EQ(offsetof(block, crto), spec_offset_of<spec::crto_register>());
    EXPECT_EQ(offsetof(block, pmrcap), spec_offset_of<spec::pmrcap_register>());
    EXPECT_EQ(offsetof(block, pmrctl), spec_offset_of<spec::pmrctl_register>());
    EXPECT_EQ(offsetof(block, pmrsts), spec_offset_of<spec::pmrsts_register>());
    EXPECT_EQ(offsetof(block, pmrebs), spec_offset_of<spec::pmrebs_register>());
    EXPECT_EQ(offsetof(block, pmrswtp), spec_offset_of<spec::pmrswtp_register>());
    EXPECT_EQ(offsetof(block, pmrmscl), spec_offset_of<spec::pmrmscl_register>());
    EXPECT_EQ(offsetof(block, pmrmscu), spec_offset_of<spec::pmrmscu_register>());
}

TEST(registers, cap_fields_sit_at_their_spec_bits)
{
    using cap = spec::cap_register;
    EXPECT_EQ(cap{}.with(cap::mqes, 0xffff).raw, 0xffffULL);
    EXPECT_EQ(cap{}.with(cap::cqr, true).raw, 1ULL << 16);
    EXPECT_EQ(cap{}.with(cap::ams_weighted_round_robin_urgent, true).raw, 1ULL << 17);
    EXPECT_EQ(cap{}.with(cap::ams_vendor_specific, true).raw, 1ULL << 18);
    EXPECT_EQ(cap{}.with(cap::to, 0xff).raw, 0xffULL << 24);
    EXPECT_EQ(cap{}.with(cap::dstrd, 0xf).raw, 0xfULL << 32);
    EXPECT_EQ(cap{}.with(cap::nssrs, true).raw, 1ULL << 36);
    EXPECT_EQ(cap{}.with(cap::css_nvm, true).raw, 1ULL << 37);
    EXPECT_EQ(cap{}.with(cap::css_io_command_sets, true).raw, 1ULL << 43);
    EXPECT_EQ(cap{}.with(cap::css_no_io_command_set, true).raw, 1ULL << 44);
    EXPECT_EQ(cap{}.with(cap::css, 0xff).raw, 0xffULL << 37);
    EXPECT_EQ(cap{}.with(cap::bps, true).raw, 1ULL << 45);
    EXPECT_EQ(cap{}.with(cap::cps, spec::controller_power_scope::nvm_subsystem).raw, 3ULL << 46);
    EXPECT_EQ(cap{}.with(cap::mpsmin, 0xf).raw, 0xfULL << 48);
    EXPECT_EQ(cap{}.with(cap::mpsmax, 0xf).raw, 0xfULL << 52);
    EXPECT_EQ(cap{}.with(cap::pmrs, true).raw, 1ULL << 56);
    EXPECT_EQ(cap{}.with(cap::cmbs, true).raw, 1ULL << 57);
    EXPECT_EQ(cap{}.with(cap::nsss, true).raw, 1ULL << 58);
    EXPECT_EQ(cap{}.with(cap::crwms, true).raw, 1ULL << 59);
    EXPECT_EQ(cap{}.with(cap::crims, true).raw, 1ULL << 60);
}

TEST(registers, cap_round_trips_every_field)
{
    using cap = spec::cap_register;
    cap value{};
    value.set(cap::mqes, 2047)
        .set(cap::cqr, true)
        .set(cap::ams_weighted_round_robin_urgent, true)
        .set(cap::ams_vendor_specific, true)
        .set(cap::to, 30)
        .set(cap::dstrd, 2)
        .set(cap::nssrs, true)
        .set(cap::css_nvm, true)
        .set(cap::css_io_command_sets, true)
        .set(cap::bps, true)
        .set(cap::cps, spec::controller_power_scope::nvm_subsystem)
        .set(cap::mpsmin, 1)
        .set(cap::mpsmax, 4)
        .set(cap::pmrs, true)
        .set(cap::cmbs, true)
        .set(cap::nsss, true)
        .set(cap::crwms, true)
        .set(cap::crims, true);
    EXPECT_EQ(value.raw, 0x1f41e8321e0707ffULL);

    const cap decoded{0x1f41e8321e0707ffULL};
    EXPECT_EQ(decoded.get(cap::mqes), 2047);
    EXPECT_EQ(decoded.get(cap::ams), 0b11);
    EXPECT_EQ(decoded.get(cap::to), 30);
    EXPECT_EQ(decoded.get(cap::dstrd), 2);
    EXPECT_EQ(decoded.get(cap::css), 0x41);
    EXPECT_FALSE(decoded.get(cap::css_no_io_command_set));
    EXPECT_EQ(decoded.get(cap::cps), spec::controller_power_scope::nvm_subsystem);
    EXPECT_EQ(decoded.get(cap::mpsmin), 1);
    EXPECT_EQ(decoded.get(cap::mpsmax), 4);
    EXPECT_EQ(decoded.get(cap::crms), 0b11);

    EXPECT_EQ(decoded.max_queue_entries(), 2048U);
    EXPECT_EQ(decoded.ready_timeout_ms(), 15000U);
    EXPECT_EQ(decoded.doorbell_stride_bytes(), 16U);
    EXPECT_EQ(decoded.min_page_size_bytes(), 8192U);
    EXPECT_EQ(decoded.max_page_size_bytes(), 65536U);
    EXPECT_EQ(cap{}.with(cap::mqes, 0xffff).max_queue_entries(), 65536U);
}

TEST(registers, vs_encodes_major_minor_tertiary)
{
    EXPECT_EQ(spec::version_2_0_0.raw, 0x00020000U);
    EXPECT_EQ(spec::make_version(1, 4, 0).raw, 0x00010400U);
    EXPECT_EQ(spec::make_version(2, 1, 3).raw, 0x00020103U);
    const spec::vs_register decoded{0x00010302};
    EXPECT_EQ(decoded.get(spec::vs_register::mjr), 1);
    EXPECT_EQ(decoded.get(spec::vs_register::mnr), 3);
    EXPECT_EQ(decoded.get(spec::vs_register::ter), 2);
}

TEST(registers, interrupt_mask_registers_expose_one_bit_per_vector)
{
    const spec::intms_register set{0x80000005};
    EXPECT_TRUE(set.vector(0));
    EXPECT_FALSE(set.vector(1));
    EXPECT_TRUE(set.vector(2));
    EXPECT_TRUE(set.vector(31));
    EXPECT_FALSE(set.vector(32));
    EXPECT_EQ(set.get(spec::intms_register::ivms), 0x80000005U);
    EXPECT_TRUE(spec::intmc_register{0x2}.vector(1));
    EXPECT_FALSE(spec::intmc_register{0x2}.vector(0));
}

TEST(registers, cc_builds_the_value_a_linux_host_writes)
{
    using cc = spec::cc_register;
    cc value{};
    value.set(cc::en, true).set(cc::iosqes, 6).set(cc::iocqes, 4);
    EXPECT_EQ(value.raw, 0x00460001U);
    EXPECT_EQ(value.get(cc::css), spec::io_command_set_selected::nvm);
    EXPECT_EQ(value.get(cc::ams), spec::arbitration_mechanism::round_robin);
    EXPECT_EQ(value.get(cc::shn), spec::shutdown_notification::none);
    EXPECT_EQ(value.io_sq_entry_size_bytes(), 64U);
    EXPECT_EQ(value.io_cq_entry_size_bytes(), 16U);
    EXPECT_EQ(value.page_size_bytes(), 4096U);
}

TEST(registers, cc_fields_sit_at_their_spec_bits)
{
    using cc = spec::cc_register;
    EXPECT_EQ(cc{}.with(cc::css, spec::io_command_set_selected::all_supported_io_sets).raw, 0x60U);
    EXPECT_EQ(cc{}.with(cc::css, spec::io_command_set_selected::admin_only).raw, 0x70U);
    EXPECT_EQ(cc{}.with(cc::mps, 0xf).raw, 0x780U);
    EXPECT_EQ(cc{}.with(cc::ams, spec::arbitration_mechanism::weighted_round_robin_urgent).raw, 0x800U);
    EXPECT_EQ(cc{}.with(cc::ams, spec::arbitration_mechanism::vendor_specific).raw, 0x3800U);
    EXPECT_EQ(cc{}.with(cc::shn, spec::shutdown_notification::normal).raw, 0x4000U);
    EXPECT_EQ(cc{}.with(cc::shn, spec::shutdown_notification::abrupt).raw, 0x8000U);
    EXPECT_EQ(cc{}.with(cc::iosqes, 0xf).raw, 0xf0000U);
    EXPECT_EQ(cc{}.with(cc::iocqes, 0xf).raw, 0xf00000U);
    EXPECT_EQ(cc{}.with(cc::crime, true).raw, 0x1000000U);
    EXPECT_EQ(cc{}.with(cc::mps, 4).page_size_bytes(), 65536U);
}

TEST(registers, cc_reserved_encodings_have_no_name)
{
    using cc = spec::cc_register;
    const cc value{0x0000c000U | (0b010U << 4) | (0b011U << 11)};
    EXPECT_TRUE(spec::name(value.get(cc::shn)).empty());
    EXPECT_TRUE(spec::name(value.get(cc::css)).empty());
    EXPECT_TRUE(spec::name(value.get(cc::ams)).empty());
    EXPECT_EQ(spec::name(spec::io_command_set_selected::admin_only), "admin_only");
    EXPECT_EQ(spec::name(spec::arbitration_mechanism::round_robin), "rr");
}

TEST(registers, csts_fields_sit_at_their_spec_bits)
{
    using csts = spec::csts_register;
    EXPECT_EQ(csts{}.with(csts::rdy, true).raw, 0x1U);
    EXPECT_EQ(csts{}.with(csts::cfs, true).raw, 0x2U);
    EXPECT_EQ(csts{}.with(csts::shst, spec::shutdown_status::processing).raw, 0x4U);
    EXPECT_EQ(csts{}.with(csts::shst, spec::shutdown_status::complete).raw, 0x8U);
    EXPECT_EQ(csts{}.with(csts::nssro, true).raw, 0x10U);
    EXPECT_EQ(csts{}.with(csts::pp, true).raw, 0x20U);
    EXPECT_EQ(csts{}.with(csts::st, true).raw, 0x40U);
    const csts shut_down{0x9};
    EXPECT_TRUE(shut_down.get(csts::rdy));
    EXPECT_EQ(shut_down.get(csts::shst), spec::shutdown_status::complete);
    EXPECT_TRUE(spec::name(csts{0xc}.get(csts::shst)).empty());
}

TEST(registers, reset_and_shutdown_keys_spell_their_ascii_names)
{
    const auto spells = [](std::uint32_t value, const char(&text)[5]) {
        return static_cast<char>(value >> 24) == text[0] &&
               static_cast<char>((value >> 16) & 0xff) == text[1] &&
               static_cast<char>((value >> 8) & 0xff) == text[2] &&
               static_cast<char>(value & 0xff) == text[3];
    };
    EXPECT_TRUE(spells(spec::nvm_subsystem_reset_value, "NVMe"));
    EXPECT_TRUE(spells(spec::nvm_subsystem_shutdown_normal_value, "Nrml"));
    EXPECT_TRUE(spells(spec::nvm_subsystem_shutdown_abrupt_value, "Abpt"));
    EXPECT_TRUE(spec::nssr_register{0x4e564d65}.requests_reset());
    EXPECT_FALSE(spec::nssr_register{0x654d564e}.requests_reset()); // byte-swapped
    EXPECT_EQ(spec::nssd_register{0x41627074}.get(spec::nssd_register::nssc), 0x41627074U);
}

TEST(registers, aqa_holds_zero_based_queue_sizes)
{
    using aqa = spec::aqa_register;
    aqa value{};
    value.set(aqa::asqs, 31).set(aqa::acqs, 31);
    EXPECT_EQ(value.raw, 0x001f001fU);
    EXPECT_EQ(value.admin_sq_entries(), 32U);
    EXPECT_EQ(aqa{0x0fff0fffU}.admin_cq_entries(), 4096U);
    EXPECT_EQ(aqa{0xf000f000U}.get(aqa::asqs), 0); // bits 15:12 and 31:28 are reserved
    EXPECT_EQ(aqa{0xf000f000U}.get(aqa::acqs), 0);
}

TEST(registers, queue_base_addresses_use_bits_63_12)
{
    const spec::asq_register asq{0x0000001234567fffULL};
    EXPECT_EQ(asq.base_address(), 0x0000001234567000ULL);
    EXPECT_EQ(asq.get(spec::asq_register::asqb), 0x1234567ULL);
    EXPECT_EQ(spec::acq_register{}.with(spec::acq_register::acqb, 0xfffffffffffffULL).raw,
              0xfffffffffffff000ULL);
    EXPECT_EQ(spec::bpmbl_register{0xabcdef0123ULL}.base_address(), 0xabcdef0000ULL);
    EXPECT_EQ(spec::bpmbl_register{}.with(spec::bpmbl_register::bmbba, 1).raw, 0x1000ULL);
}

TEST(registers, cmbloc_and_cmbsz_fields_sit_at_their_spec_bits)
{
    using loc = spec::cmbloc_register;
    EXPECT_EQ(loc{}.with(loc::bir, 7).raw, 0x7U);
    EXPECT_EQ(loc{}.with(loc::cqmms, true).raw, 0x8U);
    EXPECT_EQ(loc{}.with(loc::cqpds, true).raw, 0x10U);
    EXPECT_EQ(loc{}.with(loc::cdpmls, true).raw, 0x20U);
    EXPECT_EQ(loc{}.with(loc::cdpcils, true).raw, 0x40U);
    EXPECT_EQ(loc{}.with(loc::cdmmms, true).raw, 0x80U);
    EXPECT_EQ(loc{}.with(loc::cqda, true).raw, 0x100U);
    EXPECT_EQ(loc{}.with(loc::ofst, 0xfffff).raw, 0xfffff000U);

    using sz = spec::cmbsz_register;
    EXPECT_EQ(sz{}.with(sz::sqs, true).raw, 0x1U);
    EXPECT_EQ(sz{}.with(sz::cqs, true).raw, 0x2U);
    EXPECT_EQ(sz{}.with(sz::lists, true).raw, 0x4U);
    EXPECT_EQ(sz{}.with(sz::rds, true).raw, 0x8U);
    EXPECT_EQ(sz{}.with(sz::wds, true).raw, 0x10U);
    const sz sixteen_mib = sz{}.with(sz::szu, spec::cmb_size_units::mib_1).with(sz::sz, 16);
    EXPECT_EQ(sixteen_mib.raw, 0x00010200U);
    EXPECT_EQ(sixteen_mib.size_bytes(), 16ULL << 20);
    EXPECT_EQ(sz{}.with(sz::szu, spec::cmb_size_units::kib_4).unit_bytes(), 4096U);
    EXPECT_EQ(sz{}.with(sz::szu, spec::cmb_size_units::gib_64).unit_bytes(), 64ULL << 30);
    EXPECT_EQ(sz{0x00001700U}.unit_bytes(), 0U); // SZU 7h is reserved
}

TEST(registers, boot_partition_registers)
{
    using info = spec::bpinfo_register;
    EXPECT_EQ(info{}.with(info::bpsz, 0x7fff).raw, 0x7fffU);
    EXPECT_EQ(info{}.with(info::brs, spec::boot_read_status::completed).raw, 0x02000000U);
    EXPECT_EQ(info{}.with(info::brs, spec::boot_read_status::error).raw, 0x03000000U);
    EXPECT_EQ(info{}.with(info::abpid, true).raw, 0x80000000U);
    EXPECT_EQ(info{}.with(info::bpsz, 2).boot_partition_size_bytes(), 256U * 1024U);

    using sel = spec::bprsel_register;
    EXPECT_EQ(sel{}.with(sel::bprsz, 0x3ff).raw, 0x3ffU);
    EXPECT_EQ(sel{}.with(sel::bprof, 1).raw, 0x400U);
    EXPECT_EQ(sel{}.with(sel::bprof, 0xfffff).raw, 0x3ffffc00U);
    EXPECT_EQ(sel{}.with(sel::bpid, true).raw, 0x80000000U);
    const sel read{0x00000c02U};
    EXPECT_EQ(read.read_size_bytes(), 2U * 4096U);
    EXPECT_EQ(read.read_offset_bytes(), 3U * 4096U);
}

TEST(registers, cmb_control_status_and_throughput)
{
    using msc = spec::cmbmsc_register;
    EXPECT_EQ(msc{}.with(msc::cre, true).raw, 0x1ULL);
    EXPECT_EQ(msc{}.with(msc::cmse, true).raw, 0x2ULL);
    const msc enabled{0x00000001c0000003ULL};
    EXPECT_EQ(enabled.base_address(), 0x00000001c0000000ULL);
    EXPECT_EQ(enabled.get(msc::cba), 0x1c0000ULL);
    EXPECT_TRUE(spec::cmbsts_register{0x1}.get(spec::cmbsts_register::cbai));

    using ebs = spec::cmbebs_register;
    EXPECT_EQ(ebs{}.with(ebs::cmbszu, 0xf).raw, 0xfU);
    EXPECT_EQ(ebs{}.with(ebs::rbb, true).raw, 0x10U);
    EXPECT_EQ(ebs{}.with(ebs::cmbwbz, 0xffffff).raw, 0xffffff00U);
    EXPECT_EQ(ebs{}.with(ebs::cmbszu, 1).with(ebs::cmbwbz, 64).size_bytes(), 64U * 1024U);
    EXPECT_EQ(ebs{}.with(ebs::cmbszu, 4).with(ebs::cmbwbz, 64).size_bytes(), 0U); // reserved unit

    using swtp = spec::cmbswtp_register;
    EXPECT_EQ(swtp{}.with(swtp::cmbswtu, 2).with(swtp::cmbswtv, 100).raw, 0x6402U);
    EXPECT_EQ(swtp{0x6402U}.bytes_per_second(), 100ULL << 20);
}

TEST(registers, crto_holds_two_500ms_timeouts)
{
    using crto = spec::crto_register;
    crto value{};
    value.set(crto::crwmt, 60).set(crto::crimt, 20);
    EXPECT_EQ(value.raw, 0x0014003cU);
    EXPECT_EQ(value.ready_with_media_timeout_ms(), 30000U);
    EXPECT_EQ(value.ready_independent_of_media_timeout_ms(), 10000U);
}

TEST(registers, pmr_registers)
{
    using cap = spec::pmrcap_register;
    EXPECT_EQ(cap{}.with(cap::rds, true).raw, 0x8U);
    EXPECT_EQ(cap{}.with(cap::wds, true).raw, 0x10U);
    EXPECT_EQ(cap{}.with(cap::bir, 7).raw, 0xe0U);
    EXPECT_EQ(cap{}.with(cap::pmrtu, spec::pmr_time_units::minutes).raw, 0x100U);
    EXPECT_EQ(cap{}.with(cap::pmrwbm, 0xf).raw, 0x3c00U);
    EXPECT_EQ(cap{}.with(cap::pmrto, 0xff).raw, 0xff0000U);
    EXPECT_EQ(cap{}.with(cap::cmss, true).raw, 0x1000000U);

    EXPECT_EQ(spec::pmrctl_register{}.with(spec::pmrctl_register::en, true).raw, 0x1U);

    using sts = spec::pmrsts_register;
    EXPECT_EQ(sts{}.with(sts::err, 0xff).raw, 0xffU);
    EXPECT_EQ(sts{}.with(sts::nrdy, true).raw, 0x100U);
    EXPECT_EQ(sts{}.with(sts::hsts, spec::pmr_health_status::read_only).raw, 0x400U);
    EXPECT_EQ(sts{}.with(sts::hsts, spec::pmr_health_status::unreliable).raw, 0x600U);
    EXPECT_EQ(sts{}.with(sts::cbai, true).raw, 0x1000U);

    using ebs = spec::pmrebs_register;
    EXPECT_EQ(ebs{}.with(ebs::pmrszu, 2).with(ebs::rbb, true).with(ebs::pmrwbz, 8).raw, 0x812U);
    EXPECT_EQ(ebs{0x812U}.size_bytes(), 8ULL << 20);

    using swtp = spec::pmrswtp_register;
    EXPECT_EQ(swtp{}.with(swtp::pmrswtu, 3).with(swtp::pmrswtv, 2).raw, 0x203U);
    EXPECT_EQ(swtp{0x203U}.bytes_per_second(), 2ULL << 30);

    using low = spec::pmrmscl_register;
    using high = spec::pmrmscu_register;
    EXPECT_EQ(low{}.with(low::cmse, true).raw, 0x2U);
    EXPECT_EQ(low{}.with(low::cba, 0xd0000).raw, 0xd0000000U);
    EXPECT_EQ(spec::pmr_base_address(low{0xd0000002U}, high{0x1U}), 0x1d0000000ULL);
}

TEST(registers, unit_helpers)
{
    EXPECT_EQ(spec::memory_page_size_bytes(0), 4096U);
    EXPECT_EQ(spec::memory_page_size_bytes(4), 65536U);
    EXPECT_EQ(spec::memory_page_size_bytes(15), 4096ULL << 15);
    EXPECT_EQ(spec::queue_entry_size_bytes(6), 64U);
    EXPECT_EQ(spec::queue_entry_size_bytes(4), 16U);
    EXPECT_EQ(spec::timeout_ms(30), 15000U);
    EXPECT_EQ(spec::timeout_ms(255), 127500U);
    EXPECT_EQ(spec::granularity_bytes(0), 1U);
    EXPECT_EQ(spec::granularity_bytes(3), 1ULL << 30);
    EXPECT_EQ(spec::granularity_bytes(4), 0U);
}

TEST(registers, doorbell_offsets_follow_the_stride)
{
    EXPECT_EQ(spec::sq_tail_doorbell_offset(0, 0), 0x1000U);
    EXPECT_EQ(spec::cq_head_doorbell_offset(0, 0), 0x1004U);
    EXPECT_EQ(spec::sq_tail_doorbell_offset(5, 0), 0x1028U);
    EXPECT_EQ(spec::cq_head_doorbell_offset(5, 0), 0x102cU);
    EXPECT_EQ(spec::sq_tail_doorbell_offset(1, 1), 0x1010U);
    EXPECT_EQ(spec::cq_head_doorbell_offset(1, 1), 0x1018U);
    EXPECT_EQ(spec::cq_head_doorbell_offset(65535, 15), 0x1000U + (2ULL * 65535 + 1) * (4ULL << 15));
}

TEST(registers, doorbell_offsets_decode_back_to_their_queue)
{
    for (unsigned dstrd : {0U, 1U, 3U, 15U}) {
        for (std::uint32_t qid = 0; qid <= 0xffff; qid += 257) {
            const auto id = static_cast<std::uint16_t>(qid);
            EXPECT_EQ(spec::decode_doorbell_offset(spec::sq_tail_doorbell_offset(id, dstrd), dstrd),
                      (spec::doorbell_location{id, false}));
            EXPECT_EQ(spec::decode_doorbell_offset(spec::cq_head_doorbell_offset(id, dstrd), dstrd),
                      (spec::doorbell_location{id, true}));
        }
    }
}

TEST(registers, doorbell_decode_rejects_offsets_off_a_doorbell)
{
    EXPECT_FALSE(spec::decode_doorbell_offset(0xffc, 0).has_value());
    EXPECT_FALSE(spec::decode_doorbell_offset(0x14, 0).has_value());
    EXPECT_FALSE(spec::decode_doorbell_offset(0x1002, 0).has_value());
    EXPECT_FALSE(spec::decode_doorbell_offset(0x1004, 1).has_value()); // stride 8: middle of SQ 0
    EXPECT_FALSE(spec::decode_doorbell_offset(0x1008, 2).has_value());
    EXPECT_FALSE(spec::decode_doorbell_offset(0x1000, 16).has_value()); // DSTRD is 4 bits
    const std::uint64_t past_last_queue = 0x1000 + 2ULL * 0x10000 * 4;
    EXPECT_FALSE(spec::decode_doorbell_offset(past_last_queue, 0).has_value());
    EXPECT_EQ(spec::decode_doorbell_offset(past_last_queue - 4, 0), (spec::doorbell_location{0xffff, true}));
    EXPECT_FALSE(spec::decode_doorbell_offset(~std::uint64_t{0} - 3, 0).has_value());
}
