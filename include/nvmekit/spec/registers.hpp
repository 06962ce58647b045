#pragma once
/// Controller registers (NVMe Base 2.0 section 3.1.3, Figure 33) as they appear in PCIe BAR0,
/// the register offset table, and the doorbell layout (NVMe over PCIe Transport 1.0, 3.1.2).
///
/// Each register is a raw little-endian word with typed field descriptors:
///
///     spec::cc_register cc{};
///     cc.set(cc.en, true).set(cc.iosqes, 6).set(cc.iocqes, 4);   // cc.raw == 0x00460001
///
/// Fields hold the raw encodings of the spec (0-based sizes, exponents, unit counts); the helper
/// functions next to each register turn them into bytes, entries and milliseconds.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include <nvmekit/config.hpp>
#include <nvmekit/spec/bits.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace spec {

/// Offset of each controller register in BAR0, Base 2.0 Figure 33.
enum class register_offset : std::uint16_t {
    cap = 0x00,      ///< Controller Capabilities (64-bit)
    vs = 0x08,       ///< Version
    intms = 0x0c,    ///< Interrupt Mask Set
    intmc = 0x10,    ///< Interrupt Mask Clear
    cc = 0x14,       ///< Controller Configuration
    csts = 0x1c,     ///< Controller Status
    nssr = 0x20,     ///< NVM Subsystem Reset
    aqa = 0x24,      ///< Admin Queue Attributes
    asq = 0x28,      ///< Admin Submission Queue Base Address (64-bit)
    acq = 0x30,      ///< Admin Completion Queue Base Address (64-bit)
    cmbloc = 0x38,   ///< Controller Memory Buffer Location
    cmbsz = 0x3c,    ///< Controller Memory Buffer Size
    bpinfo = 0x40,   ///< Boot Partition Information
    bprsel = 0x44,   ///< Boot Partition Read Select
    bpmbl = 0x48,    ///< Boot Partition Memory Buffer Location (64-bit)
    cmbmsc = 0x50,   ///< Controller Memory Buffer Memory Space Control (64-bit)
    cmbsts = 0x58,   ///< Controller Memory Buffer Status
    cmbebs = 0x5c,   ///< Controller Memory Buffer Elasticity Buffer Size
    cmbswtp = 0x60,  ///< Controller Memory Buffer Sustained Write Throughput
    nssd = 0x64,     ///< NVM Subsystem Shutdown
    crto = 0x68,     ///< Controller Ready Timeouts
    pmrcap = 0xe00,  ///< Persistent Memory Region Capabilities
    pmrctl = 0xe04,  ///< Persistent Memory Region Control
    pmrsts = 0xe08,  ///< Persistent Memory Region Status
    pmrebs = 0xe0c,  ///< Persistent Memory Region Elasticity Buffer Size
    pmrswtp = 0xe10, ///< Persistent Memory Region Sustained Write Throughput
    pmrmscl = 0xe14, ///< Persistent Memory Region Controller Memory Space Control Lower
    pmrmscu = 0xe18, ///< Persistent Memory Region Controller Memory Space Control Upper
};

/// One row of the register table: where a register lives, how wide it is, its spec mnemonic.
struct register_description {
    register_offset offset;
    std::uint8_t width; ///< bytes: 4 or 8
    std::string_view name;

    [[nodiscard]] constexpr std::uint32_t first_byte() const noexcept
    {
        return static_cast<std::uint32_t>(offset);
    }
    [[nodiscard]] constexpr std::uint32_t end_byte() const noexcept { return first_byte() + width; }
    [[nodiscard]] constexpr bool contains(std::uint64_t byte_offset) const noexcept
    {
        return byte_offset >= first_byte() && byte_offset < end_byte();
    }
};

/// Every controller register of Base 2.0 Figure 33, in offset order.
// clang-format off
inline constexpr std::array<register_description, 28> controller_register_table{{
    {register_offset::cap, 8, "CAP"},
    {register_offset::vs, 4, "VS"},
    {register_offset::intms, 4, "INTMS"},
    {register_offset::intmc, 4, "INTMC"},
    {register_offset::cc, 4, "CC"},
    {register_offset::csts, 4, "CSTS"},
    {register_offset::nssr, 4, "NSSR"},
    {register_offset::aqa, 4, "AQA"},
    {register_offset::asq, 8, "ASQ"},
    {register_offset::acq, 8, "ACQ"},
    {register_offset::cmbloc, 4, "CMBLOC"},
    {register_offset::cmbsz, 4, "CMBSZ"},
    {register_offset::bpinfo, 4, "BPINFO"},
    {register_offset::bprsel, 4, "BPRSEL"},
    {register_offset::bpmbl, 8, "BPMBL"},
    {register_offset::cmbmsc, 8, "CMBMSC"},
    {register_offset::cmbsts, 4, "CMBSTS"},
    {register_offset::cmbebs, 4, "CMBEBS"},
    {register_offset::cmbswtp, 4, "CMBSWTP"},
    {register_offset::nssd, 4, "NSSD"},
    {register_offset::crto, 4, "CRTO"},
    {register_offset::pmrcap, 4, "PMRCAP"},
    {register_offset::pmrctl, 4, "PMRCTL"},
    {register_offset::pmrsts, 4, "PMRSTS"},
    {register_offset::pmrebs, 4, "PMREBS"},
    {register_offset::pmrswtp, 4, "PMRSWTP"},
    {register_offset::pmrmscl, 4, "PMRMSCL"},
    {register_offset::pmrmscu, 4, "PMRMSCU"},
}};
// clang-format on

/// The table row of `offset`, which must be a register_offset value.
[[nodiscard]] constexpr const register_description& describe_register(register_offset offset) noexcept
{
    for (const auto& row : controller_register_table) {
        if (row.offset == offset) {
            return row;
        }
    }
    NVMEKIT_ASSERT(false, "register_offset value missing from controller_register_table");
    return controller_register_table.front();
}

/// Width in bytes of the register at `offset` (4 or 8).
[[nodiscard]] constexpr std::uint8_t register_width(register_offset offset) noexcept
{
    return describe_register(offset).width;
}

/// Spec mnemonic of the register at `offset`: "CAP", "CC", "PMRMSCU", ...
[[nodiscard]] constexpr std::string_view name(register_offset offset) noexcept
{
    return describe_register(offset).name;
}

/// The register whose bytes include `byte_offset` (a 4-byte access at 04h lands in CAP), or
/// nothing for reserved space and the doorbells.
[[nodiscard]] constexpr std::optional<register_description> find_register(std::uint64_t byte_offset) noexcept
{
    for (const auto& row : controller_register_table) {
        if (row.contains(byte_offset)) {
            return row;
        }
    }
    return std::nullopt;
}

namespace detail {
[[nodiscard]] constexpr bool register_table_is_well_formed() noexcept
{
    std::uint32_t previous_end = 0;
    for (const auto& row : controller_register_table) {
        if ((row.width != 4 && row.width != 8) || row.first_byte() % row.width != 0 ||
            row.first_byte() < previous_end || row.end_byte() > 0x1000 || row.name.empty()) {
            return false;
        }
        previous_end = row.end_byte();
    }
    return true;
}
} // namespace detail
static_assert(detail::register_table_is_well_formed(),
              "registers are 4 or 8 bytes, naturally aligned, sorted, disjoint and below the doorbells");

/// Memory page size in bytes for an MPS, MPSMIN or MPSMAX value: 2^(12 + mps).
[[nodiscard]] constexpr std::uint64_t memory_page_size_bytes(std::uint8_t mps) noexcept
{
    return std::uint64_t{4096} << (mps & 0xfU);
}

/// Queue entry size in bytes for an IOSQES or IOCQES value: 2^n.
[[nodiscard]] constexpr std::uint32_t queue_entry_size_bytes(std::uint8_t exponent) noexcept
{
    return std::uint32_t{1} << (exponent & 0xfU);
}

/// CAP.TO, CRTO.CRWMT and CRTO.CRIMT count 500 ms units.
[[nodiscard]] constexpr std::uint32_t timeout_ms(std::uint32_t units_of_500ms) noexcept
{
    return units_of_500ms * 500U;
}

/// Power scope of CAP.CPS, Base 2.0 Figure 36.
enum class controller_power_scope : std::uint8_t {
    not_reported = 0b00,
    controller = 0b01,
    domain = 0b10,
    nvm_subsystem = 0b11,
};

/// CAP, Controller Capabilities (00h), Base 2.0 Figure 36.
struct cap_register : word<cap_register, std::uint64_t> {
    using word::word;
    static constexpr register_offset offset = register_offset::cap;

    static constexpr field<0, 16, std::uint16_t> mqes{};                   // MQES: bits 15:00, 0-based
    static constexpr field<16, 1, bool> cqr{};                             // CQR: bit 16
    static constexpr field<17, 2, std::uint8_t> ams{};                     // AMS: bits 18:17, bit mask
    static constexpr field<17, 1, bool> ams_weighted_round_robin_urgent{}; // AMS bit 17
    static constexpr field<18, 1, bool> ams_vendor_specific{};             // AMS bit 18
    static constexpr field<24, 8, std::uint8_t> to{};                      // TO: bits 31:24, 500 ms units
    static constexpr field<32, 4, std::uint8_t> dstrd{};                   // DSTRD: bits 35:32
    static constexpr field<36, 1, bool> nssrs{};                           // NSSRS: bit 36
    static constexpr field<37, 8, std::uint8_t> css{};                     // CSS: bits 44:37, bit mask
    static constexpr field<37, 1, bool> css_nvm{};                         // CSS bit 37: NVM Command Set
    static constexpr field<43, 1, bool> css_io_command_sets{};   // CSS bit 43: one or more I/O Command Sets
    static constexpr field<44, 1, bool> css_no_io_command_set{}; // CSS bit 44: Admin only
    static constexpr field<45, 1, bool> bps{};                   // BPS: bit 45
    static constexpr field<46, 2, controller_power_scope> cps{}; // CPS: bits 47:46
    static constexpr field<48, 4, std::uint8_t> mpsmin{};        // MPSMIN: bits 51:48
    static constexpr field<52, 4, std::uint8_t> mpsmax{};        // MPSMAX: bits 55:52
    static constexpr field<56, 1, bool> pmrs{};                  // PMRS: bit 56
    static constexpr field<57, 1, bool> cmbs{};                  // CMBS: bit 57
    static constexpr field<58, 1, bool> nsss{};                  // NSSS: bit 58
    static constexpr field<59, 2, std::uint8_t> crms{};          // CRMS: bits 60:59, bit mask
    static constexpr field<59, 1, bool> crwms{};                 // CRMS bit 59: ready with media
    static constexpr field<60, 1, bool> crims{};                 // CRMS bit 60: ready independent of media

    /// Largest queue size in entries (MQES is 0-based).
    [[nodiscard]] constexpr std::uint32_t max_queue_entries() const noexcept { return get(mqes) + 1U; }
    [[nodiscard]] constexpr std::uint32_t ready_timeout_ms() const noexcept { return timeout_ms(get(to)); }
    /// Distance in bytes between doorbells: 2^(2 + DSTRD).
    [[nodiscard]] constexpr std::uint32_t doorbell_stride_bytes() const noexcept { return 4U << get(dstrd); }
    [[nodiscard]] constexpr std::uint64_t min_page_size_bytes() const noexcept
    {
        return memory_page_size_bytes(get(mpsmin));
    }
    [[nodiscard]] constexpr std::uint64_t max_page_size_bytes() const noexcept
    {
        return memory_page_size_bytes(get(mpsmax));
    }
};
static_assert(sizeof(cap_register) == 8);
static_assert(sizeof(cap_register) == register_width(cap_register::offset));
static_assert(is_wire_type_v<cap_register>);

/// VS, Version (08h), Base 2.0 Figure 37.
struct vs_register : word<vs_register, std::uint32_t> {
    using word::word;
    static constexpr register_offset offset = register_offset::vs;

    static constexpr field<0, 8, std::uint8_t> ter{};    // TER: bits 07:00
    static constexpr field<8, 8, std::uint8_t> mnr{};    // MNR: bits 15:08
    static constexpr field<16, 16, std::uint16_t> mjr{}; // MJR: bits 31:16
};
static_assert(sizeof(vs_register) == 4);
static_assert(sizeof(vs_register) == register_width(vs_register::offset));
static_assert(is_wire_type_v<vs_register>);

/// The VS value of version `major.minor.tertiary` (also the encoding of Identify VER).
[[nodiscard]] constexpr vs_register make_version(std::uint16_t major, std::uint8_t minor,
                                                 std::uint8_t tertiary) noexcept
{
    return vs_register{}
        .with(vs_register::mjr, major)
        .with(vs_register::mnr, minor)
        .with(vs_register::ter, tertiary);
}

/// The version nvmekit implements.
inline constexpr vs_register version_2_0_0 = make_version(2, 0, 0);
static_assert(version_2_0_0.raw == 0x00020000);
static_assert(make_version(1, 4, 0).raw == 0x00010400);

/// INTMS, Interrupt Mask Set (0Ch), Base 2.0 Figure 38. Writing 1 masks that vector; reads
/// return the current mask. Used with pin-based and MSI interrupts, never with MSI-X.
struct intms_register : word<intms_register, std::uint32_t> {
    using word::word;
    static constexpr register_offset offset = register_offset::intms;

    static constexpr field<0, 32, std::uint32_t> ivms{}; // IVMS: bits 31:00

    [[nodiscard]] constexpr bool vector(unsigned number) const noexcept
    {
        return number < 32 && ((raw >> number) & 1U) != 0;
    }
};
static_assert(sizeof(intms_register) == 4);
static_assert(sizeof(intms_register) == register_width(intms_register::offset));
static_assert(is_wire_type_v<intms_register>);

/// INTMC, Interrupt Mask Clear (10h), Base 2.0 Figure 39. Writing 1 unmasks that vector.
struct intmc_register : word<intmc_register, std::uint32_t> {
    using word::word;
    static constexpr register_offset offset = register_offset::intmc;

    static constexpr field<0, 32, std::uint32_t> ivmc{}; // IVMC: bits 31:00

    [[nodiscard]] constexpr bool vector(unsigned number) const noexcept
    {
        return number < 32 && ((raw >> number) & 1U) != 0;
    }
};
static_assert(sizeof(intmc_register) == 4);
static_assert(sizeof(intmc_register) == register_width(intmc_register::offset));
static_assert(is_wire_type_v<intmc_register>);

/// CC.CSS, I/O Command Set Selected, Base 2.0 Figure 41.
enum class io_command_set_selected : std::uint8_t {
    nvm = 0b000,
    all_supported_io_sets = 0b110, ///< needs CAP.CSS bit 43
    admin_only = 0b111,            ///< needs CAP.CSS bit 44
};

/// CC.AMS, Arbitration Mechanism Selected, Base 2.0 Figure 41.
enum class arbitration_mechanism : std::uint8_t {
    round_robin = 0b000,
    weighted_round_robin_urgent = 0b001,
    vendor_specific = 0b111,
};

/// CC.SHN, Shutdown Notification, Base 2.0 Figure 41.
enum class shutdown_notification : std::uint8_t {
    none = 0b00,
    normal = 0b01,
    abrupt = 0b10,
};

/// CC, Controller Configuration (14h), Base 2.0 Figure 41.
struct cc_register : word<cc_register, std::uint32_t> {
    using word::word;
    static constexpr register_offset offset = register_offset::cc;

    static constexpr field<0, 1, bool> en{};                     // EN: bit 00
    static constexpr field<4, 3, io_command_set_selected> css{}; // CSS: bits 06:04
    static constexpr field<7, 4, std::uint8_t> mps{};            // MPS: bits 10:07
    static constexpr field<11, 3, arbitration_mechanism> ams{};  // AMS: bits 13:11
    static constexpr field<14, 2, shutdown_notification> shn{};  // SHN: bits 15:14
    static constexpr field<16, 4, std::uint8_t> iosqes{};        // IOSQES: bits 19:16
    static constexpr field<20, 4, std::uint8_t> iocqes{};        // IOCQES: bits 23:20
    static constexpr field<24, 1, bool> crime{};                 // CRIME: bit 24

    [[nodiscard]] constexpr std::uint64_t page_size_bytes() const noexcept
    {
        return memory_page_size_bytes(get(mps));
    }
    [[nodiscard]] constexpr std::uint32_t io_sq_entry_size_bytes() const noexcept
    {
        return queue_entry_size_bytes(get(iosqes));
    }
    [[nodiscard]] constexpr std::uint32_t io_cq_entry_size_bytes() const noexcept
    {
        return queue_entry_size_bytes(get(iocqes));
    }
};
static_assert(sizeof(cc_register) == 4);
static_assert(sizeof(cc_register) == register_width(cc_register::offset));
static_assert(is_wire_type_v<cc_register>);

/// CSTS.SHST, Shutdown Status, Base 2.0 Figure 42.
enum class shutdown_status : std::uint8_t {
    normal = 0b00,     ///< no shutdown requested
    processing = 0b01, ///< shutdown processing occurring
    complete = 0b10,   ///< shutdown processing complete
};

/// CSTS, Controller Status (1Ch), Base 2.0 Figure 42.
struct csts_register : word<csts_register, std::uint32_t> {
    using word::word;
    static constexpr register_offset offset = register_offset::csts;

    static constexpr field<0, 1, bool> rdy{};             // RDY: bit 00
    static constexpr field<1, 1, bool> cfs{};             // CFS: bit 01
    static constexpr field<2, 2, shutdown_status> shst{}; // SHST: bits 03:02
    static constexpr field<4, 1, bool> nssro{};           // NSSRO: bit 04, RW1C
    static constexpr field<5, 1, bool> pp{};              // PP: bit 05
    static constexpr field<6, 1, bool> st{};              // ST: bit 06, 1 = NVM subsystem shutdown
};
static_assert(sizeof(csts_register) == 4);
static_assert(sizeof(csts_register) == register_width(csts_register::offset));
static_assert(is_wire_type_v<csts_register>);

/// The NSSR.NSSRC value that starts an NVM Subsystem Reset: "NVMe" in ASCII, read as a number.
inline constexpr std::uint32_t nvm_subsystem_reset_value = 0x4e564d65;

/// NSSR, NVM Subsystem Reset (20h), Base 2.0 Figure 43.
struct nssr_register : word<nssr_register, std::uint32_t> {
    using word::word;
    static constexpr register_offset offset = register_offset::nssr;

    static constexpr field<0, 32, std::uint32_t> nssrc{}; // NSSRC: bits 31:00

    [[nodiscard]] constexpr bool requests_reset() const noexcept { return raw == nvm_subsystem_reset_value; }
};
static_assert(sizeof(nssr_register) == 4);
static_assert(sizeof(nssr_register) == register_width(nssr_register::offset));
static_assert(is_wire_type_v<nssr_register>);

/// AQA, Admin Queue Attributes (24h), Base 2.0 Figure 44. Both sizes are 0-based.
struct aqa_register : word<aqa_register, std::uint32_t> {
    using word::word;
    static constexpr register_offset offset = register_offset::aqa;

    static constexpr field<0, 12, std::uint16_t> asqs{};  // ASQS: bits 11:00
    static constexpr field<16, 12, std::uint16_t> acqs{}; // ACQS: bits 27:16

    [[nodiscard]] constexpr std::uint32_t admin_sq_entries() const noexcept { return get(asqs) + 1U; }
    [[nodiscard]] constexpr std::uint32_t admin_cq_entries() const noexcept { return get(acqs) + 1U; }
};
static_assert(sizeof(aqa_register) == 4);
static_assert(sizeof(aqa_register) == register_width(aqa_register::offset));
static_assert(is_wire_type_v<aqa_register>);

/// Mask of the address bits 63:12 of ASQ, ACQ, BPMBL, CMBMSC.CBA.
inline constexpr std::uint64_t page_aligned_address_mask = ~std::uint64_t{0xfff};

/// ASQ, Admin Submission Queue Base Address (28h), Base 2.0 Figure 45.
struct asq_register : word<asq_register, std::uint64_t> {
    using word::word;
    static constexpr register_offset offset = register_offset::asq;

    static constexpr field<12, 52, std::uint64_t> asqb{}; // ASQB: bits 63:12

    /// The queue's host address (bits 11:00 are reserved and read as zero).
    [[nodiscard]] constexpr std::uint64_t base_address() const noexcept
    {
        return raw & page_aligned_address_mask;
    }
};
static_assert(sizeof(asq_register) == 8);
static_assert(sizeof(asq_register) == register_width(asq_register::offset));
static_assert(is_wire_type_v<asq_register>);

/// ACQ, Admin Completion Queue Base Address (30h), Base 2.0 Figure 46.
struct acq_register : word<acq_register, std::uint64_t> {
    using word::word;
    static constexpr register_offset offset = register_offset::acq;

    static constexpr field<12, 52, std::uint64_t> acqb{}; // ACQB: bits 63:12

    [[nodiscard]] constexpr std::uint64_t base_address() const noexcept
    {
        return raw & page_aligned_address_mask;
    }
};
static_assert(sizeof(acq_register) == 8);
static_assert(sizeof(acq_register) == register_width(acq_register::offset));
static_assert(is_wire_type_v<acq_register>);

/// CMBLOC, Controller Memory Buffer Location (38h), Base 2.0 Figure 47.
struct cmbloc_register : word<cmbloc_register, std::uint32_t> {
    using word::word;
    static constexpr register_offset offset = register_offset::cmbloc;

    static constexpr field<0, 3, std::uint8_t> bir{};     // BIR: bits 02:00
    static constexpr field<3, 1, bool> cqmms{};           // CQMMS: bit 03
    static constexpr field<4, 1, bool> cqpds{};           // CQPDS: bit 04
    static constexpr field<5, 1, bool> cdpmls{};          // CDPMLS: bit 05
    static constexpr field<6, 1, bool> cdpcils{};         // CDPCILS: bit 06
    static constexpr field<7, 1, bool> cdmmms{};          // CDMMMS: bit 07
    static constexpr field<8, 1, bool> cqda{};            // CQDA: bit 08
    static constexpr field<12, 20, std::uint32_t> ofst{}; // OFST: bits 31:12, in CMBSZ.SZU units
};
static_assert(sizeof(cmbloc_register) == 4);
static_assert(sizeof(cmbloc_register) == register_width(cmbloc_register::offset));
static_assert(is_wire_type_v<cmbloc_register>);

/// CMBSZ.SZU, Size Units, Base 2.0 Figure 48.
enum class cmb_size_units : std::uint8_t {
    kib_4 = 0x0,
    kib_64 = 0x1,
    mib_1 = 0x2,
    mib_16 = 0x3,
    mib_256 = 0x4,
    gib_4 = 0x5,
    gib_64 = 0x6,
};

/// CMBSZ, Controller Memory Buffer Size (3Ch), Base 2.0 Figure 48.
struct cmbsz_register : word<cmbsz_register, std::uint32_t> {
    using word::word;
    static constexpr register_offset offset = register_offset::cmbsz;

    static constexpr field<0, 1, bool> sqs{};           // SQS: bit 00
    static constexpr field<1, 1, bool> cqs{};           // CQS: bit 01
    static constexpr field<2, 1, bool> lists{};         // LISTS: bit 02
    static constexpr field<3, 1, bool> rds{};           // RDS: bit 03
    static constexpr field<4, 1, bool> wds{};           // WDS: bit 04
    static constexpr field<8, 4, cmb_size_units> szu{}; // SZU: bits 11:08
    static constexpr field<12, 20, std::uint32_t> sz{}; // SZ: bits 31:12, in SZU units

    /// Bytes per SZU unit: 4 KiB * 16^SZU, or 0 for a reserved SZU.
    [[nodiscard]] constexpr std::uint64_t unit_bytes() const noexcept
    {
        const auto units = static_cast<unsigned>(get(szu));
        return units <= 6 ? std::uint64_t{1} << (12 + 4 * units) : 0;
    }
    [[nodiscard]] constexpr std::uint64_t size_bytes() const noexcept { return unit_bytes() * get(sz); }
};
static_assert(sizeof(cmbsz_register) == 4);
static_assert(sizeof(cmbsz_register) == register_width(cmbsz_register::offset));
static_assert(is_wire_type_v<cmbsz_register>);

/// BPINFO.BRS, Boot Read Status, Base 2.0 Figure 49.
enum class boot_read_status : std::uint8_t {
    no_read = 0b00,
    in_progress = 0b01,
    completed = 0b10,
    error = 0b11,
};

/// BPINFO, Boot Partition Information (40h), Base 2.0 Figure 49.
struct bpinfo_register : word<bpinfo_register, std::uint32_t> {
    using word::word;
    static constexpr register_offset offset = register_offset::bpinfo;

    static constexpr field<0, 15, std::uint16_t> bpsz{};   // BPSZ: bits 14:00, 128 KiB units
    static constexpr field<24, 2, boot_read_status> brs{}; // BRS: bits 25:24
    static constexpr field<31, 1, bool> abpid{};           // ABPID: bit 31

    [[nodiscard]] constexpr std::uint64_t boot_partition_size_bytes() const noexcept
    {
        return std::uint64_t{get(bpsz)} * 128 * 1024;
    }
};
static_assert(sizeof(bpinfo_register) == 4);
static_assert(sizeof(bpinfo_register) == register_width(bpinfo_register::offset));
static_assert(is_wire_type_v<bpinfo_register>);

/// BPRSEL, Boot Partition Read Select (44h), Base 2.0 Figure 50.
struct bprsel_register : word<bprsel_register, std::uint32_t> {
    using word::word;
    static constexpr register_offset offset = register_offset::bprsel;

    static constexpr field<0, 10, std::uint16_t> bprsz{};  // BPRSZ: bits 09:00, 4 KiB units
    static constexpr field<10, 20, std::uint32_t> bprof{}; // BPROF: bits 29:10, 4 KiB units
    static constexpr field<31, 1, bool> bpid{};            // BPID: bit 31

    [[nodiscard]] constexpr std::uint32_t read_size_bytes() const noexcept
    {
        return std::uint32_t{get(bprsz)} * 4096;
    }
    [[nodiscard]] constexpr std::uint64_t read_offset_bytes() const noexcept
    {
        return std::uint64_t{get(bprof)} * 4096;
    }
};
static_assert(sizeof(bprsel_register) == 4);
static_assert(sizeof(bprsel_register) == register_width(bprsel_register::offset));
static_assert(is_wire_type_v<bprsel_register>);

/// BPMBL, Boot Partition Memory Buffer Location (48h), Base 2.0 Figure 51.
struct bpmbl_register : word<bpmbl_register, std::uint64_t> {
    using word::word;
    static constexpr register_offset offset = register_offset::bpmbl;

    static constexpr field<12, 52, std::uint64_t> bmbba{}; // BMBBA: bits 63:12

    [[nodiscard]] constexpr std::uint64_t base_address() const noexcept
    {
        return raw & page_aligned_address_mask;
    }
};
static_assert(sizeof(bpmbl_register) == 8);
static_assert(sizeof(bpmbl_register) == register_width(bpmbl_register::offset));
static_assert(is_wire_type_v<bpmbl_register>);

/// CMBMSC, Controller Memory Buffer Memory Space Control (50h), Base 2.0 Figure 52.
struct cmbmsc_register : word<cmbmsc_register, std::uint64_t> {
    using word::word;
    static constexpr register_offset offset = register_offset::cmbmsc;

    static constexpr field<0, 1, bool> cre{};            // CRE: bit 00
    static constexpr field<1, 1, bool> cmse{};           // CMSE: bit 01
    static constexpr field<12, 52, std::uint64_t> cba{}; // CBA: bits 63:12

    /// The controller base address of the CMB (CBA with bits 11:00 zero).
    [[nodiscard]] constexpr std::uint64_t base_address() const noexcept
    {
        return raw & page_aligned_address_mask;
    }
};
static_assert(sizeof(cmbmsc_register) == 8);
static_assert(sizeof(cmbmsc_register) == register_width(cmbmsc_register::offset));
static_assert(is_wire_type_v<cmbmsc_register>);

/// CMBSTS, Controller Memory Buffer Status (58h), Base 2.0 Figure 53.
struct cmbsts_register : word<cmbsts_register, std::uint32_t> {
    using word::word;
    static constexpr register_offset offset = register_offset::cmbsts;

    static constexpr field<0, 1, bool> cbai{}; // CBAI: bit 00
};
static_assert(sizeof(cmbsts_register) == 4);
static_assert(sizeof(cmbsts_register) == register_width(cmbsts_register::offset));
static_assert(is_wire_type_v<cmbsts_register>);

/// Bytes in one unit of a CMBEBS/PMREBS size or CMBSWTP/PMRSWTP throughput unit field
/// (0h bytes, 1h KiB, 2h MiB, 3h GiB), or 0 for a reserved value.
[[nodiscard]] constexpr std::uint64_t granularity_bytes(std::uint8_t units) noexcept
{
    return units <= 3 ? std::uint64_t{1} << (10U * units) : 0;
}

/// CMBEBS, Controller Memory Buffer Elasticity Buffer Size (5Ch), Base 2.0 Figure 54.
struct cmbebs_register : word<cmbebs_register, std::uint32_t> {
    using word::word;
    static constexpr register_offset offset = register_offset::cmbebs;

    static constexpr field<0, 4, std::uint8_t> cmbszu{};   // CMBSZU: bits 03:00
    static constexpr field<4, 1, bool> rbb{};              // RBB: bit 04
    static constexpr field<8, 24, std::uint32_t> cmbwbz{}; // CMBWBZ: bits 31:08

    [[nodiscard]] constexpr std::uint64_t size_bytes() const noexcept
    {
        return granularity_bytes(get(cmbszu)) * get(cmbwbz);
    }
};
static_assert(sizeof(cmbebs_register) == 4);
static_assert(sizeof(cmbebs_register) == register_width(cmbebs_register::offset));
static_assert(is_wire_type_v<cmbebs_register>);

/// CMBSWTP, Controller Memory Buffer Sustained Write Throughput (60h), Base 2.0 Figure 55.
struct cmbswtp_register : word<cmbswtp_register, std::uint32_t> {
    using word::word;
    static constexpr register_offset offset = register_offset::cmbswtp;

    static constexpr field<0, 4, std::uint8_t> cmbswtu{};   // CMBSWTU: bits 03:00
    static constexpr field<8, 24, std::uint32_t> cmbswtv{}; // CMBSWTV: bits 31:08

    [[nodiscard]] constexpr std::uint64_t bytes_per_second() const noexcept
    {
        return granularity_bytes(get(cmbswtu)) * get(cmbswtv);
    }
};
static_assert(sizeof(cmbswtp_register) == 4);
static_assert(sizeof(cmbswtp_register) == register_width(cmbswtp_register::offset));
static_assert(is_wire_type_v<cmbswtp_register>);

/// NSSD.NSSC values that start a normal ("Nrml") or abrupt ("Abpt") NVM Subsystem Shutdown.
inline constexpr std::uint32_t nvm_subsystem_shutdown_normal_value = 0x4e726d6c;
inline constexpr std::uint32_t nvm_subsystem_shutdown_abrupt_value = 0x41627074;

/// NSSD, NVM Subsystem Shutdown (64h), Base 2.0 Figure 56.
struct nssd_register : word<nssd_register, std::uint32_t> {
    using word::word;
    static constexpr register_offset offset = register_offset::nssd;

    static constexpr field<0, 32, std::uint32_t> nssc{}; // NSSC: bits 31:00
};
static_assert(sizeof(nssd_register) == 4);
static_assert(sizeof(nssd_register) == register_width(nssd_register::offset));
static_assert(is_wire_type_v<nssd_register>);

/// CRTO, Controller Ready Timeouts (68h), Base 2.0 Figure 57. Both in 500 ms units.
struct crto_register : word<crto_register, std::uint32_t> {
    using word::word;
    static constexpr register_offset offset = register_offset::crto;

    static constexpr field<0, 16, std::uint16_t> crwmt{};  // CRWMT: bits 15:00
    static constexpr field<16, 16, std::uint16_t> crimt{}; // CRIMT: bits 31:16

    [[nodiscard]] constexpr std::uint32_t ready_with_media_timeout_ms() const noexcept
    {
        return timeout_ms(get(crwmt));
    }
    [[nodiscard]] constexpr std::uint32_t ready_independent_of_media_timeout_ms() const noexcept
    {
        return timeout_ms(get(crimt));
    }
};
static_assert(sizeof(crto_register) == 4);
static_assert(sizeof(crto_register) == register_width(crto_register::offset));
static_assert(is_wire_type_v<crto_register>);

/// PMRCAP.PMRTU, Persistent Memory Region Time Units, Base 2.0 Figure 58.
enum class pmr_time_units : std::uint8_t {
    milliseconds_500 = 0b00,
    minutes = 0b01,
};

/// PMRCAP, Persistent Memory Region Capabilities (E00h), Base 2.0 Figure 58.
struct pmrcap_register : word<pmrcap_register, std::uint32_t> {
    using word::word;
    static constexpr register_offset offset = register_offset::pmrcap;

    static constexpr field<3, 1, bool> rds{};             // RDS: bit 03
    static constexpr field<4, 1, bool> wds{};             // WDS: bit 04
    static constexpr field<5, 3, std::uint8_t> bir{};     // BIR: bits 07:05
    static constexpr field<8, 2, pmr_time_units> pmrtu{}; // PMRTU: bits 09:08
    static constexpr field<10, 4, std::uint8_t> pmrwbm{}; // PMRWBM: bits 13:10, bit mask
    static constexpr field<16, 8, std::uint8_t> pmrto{};  // PMRTO: bits 23:16, in PMRTU units
    static constexpr field<24, 1, bool> cmss{};           // CMSS: bit 24
};
static_assert(sizeof(pmrcap_register) == 4);
static_assert(sizeof(pmrcap_register) == register_width(pmrcap_register::offset));
static_assert(is_wire_type_v<pmrcap_register>);

/// PMRCTL, Persistent Memory Region Control (E04h), Base 2.0 Figure 59.
struct pmrctl_register : word<pmrctl_register, std::uint32_t> {
    using word::word;
    static constexpr register_offset offset = register_offset::pmrctl;

    static constexpr field<0, 1, bool> en{}; // EN: bit 00
};
static_assert(sizeof(pmrctl_register) == 4);
static_assert(sizeof(pmrctl_register) == register_width(pmrctl_register::offset));
static_assert(is_wire_type_v<pmrctl_register>);

/// PMRSTS.HSTS, Health Status, Base 2.0 Figure 60.
enum class pmr_health_status : std::uint8_t {
    normal = 0b000,
    restore_error = 0b001,
    read_only = 0b010,
    unreliable = 0b011,
};

/// PMRSTS, Persistent Memory Region Status (E08h), Base 2.0 Figure 60.
struct pmrsts_register : word<pmrsts_register, std::uint32_t> {
    using word::word;
    static constexpr register_offset offset = register_offset::pmrsts;

    static constexpr field<0, 8, std::uint8_t> err{};       // ERR: bits 07:00
    static constexpr field<8, 1, bool> nrdy{};              // NRDY: bit 08
    static constexpr field<9, 3, pmr_health_status> hsts{}; // HSTS: bits 11:09
    static constexpr field<12, 1, bool> cbai{};             // CBAI: bit 12
};
static_assert(sizeof(pmrsts_register) == 4);
static_assert(sizeof(pmrsts_register) == register_width(pmrsts_register::offset));
static_assert(is_wire_type_v<pmrsts_register>);

/// PMREBS, Persistent Memory Region Elasticity Buffer Size (E0Ch), Base 2.0 Figure 61.
struct pmrebs_register : word<pmrebs_register, std::uint32_t> {
    using word::word;
    static constexpr register_offset offset = register_offset::pmrebs;

    static constexpr field<0, 4, std::uint8_t> pmrszu{};   // PMRSZU: bits 03:00
    static constexpr field<4, 1, bool> rbb{};              // RBB: bit 04
    static constexpr field<8, 24, std::uint32_t> pmrwbz{}; // PMRWBZ: bits 31:08

    [[nodiscard]] constexpr std::uint64_t size_bytes() const noexcept
    {
        return granularity_bytes(get(pmrszu)) * get(pmrwbz);
    }
};
static_assert(sizeof(pmrebs_register) == 4);
static_assert(sizeof(pmrebs_register) == register_width(pmrebs_register::offset));
static_assert(is_wire_type_v<pmrebs_register>);

/// PMRSWTP, Persistent Memory Region Sustained Write Throughput (E10h), Base 2.0 Figure 62.
struct pmrswtp_register : word<pmrswtp_register, std::uint32_t> {
    using word::word;
    static constexpr register_offset offset = register_offset::pmrswtp;

    static constexpr field<0, 4, std::uint8_t> pmrswtu{};   // PMRSWTU: bits 03:00
    static constexpr field<8, 24, std::uint32_t> pmrswtv{}; // PMRSWTV: bits 31:08

    [[nodiscard]] constexpr std::uint64_t bytes_per_second() const noexcept
    {
        return granularity_bytes(get(pmrswtu)) * get(pmrswtv);
    }
};
static_assert(sizeof(pmrswtp_register) == 4);
static_assert(sizeof(pmrswtp_register) == register_width(pmrswtp_register::offset));
static_assert(is_wire_type_v<pmrswtp_register>);

/// PMRMSCL, Persistent Memory Region Controller Memory Space Control Lower (E14h),
/// Base 2.0 Figure 63.
struct pmrmscl_register : word<pmrmscl_register, std::uint32_t> {
    using word::word;
    static constexpr register_offset offset = register_offset::pmrmscl;

    static constexpr field<1, 1, bool> cmse{};           // CMSE: bit 01
    static constexpr field<12, 20, std::uint32_t> cba{}; // CBA: bits 31:12, address bits 31:12
};
static_assert(sizeof(pmrmscl_register) == 4);
static_assert(sizeof(pmrmscl_register) == register_width(pmrmscl_register::offset));
static_assert(is_wire_type_v<pmrmscl_register>);

/// PMRMSCU, Persistent Memory Region Controller Memory Space Control Upper (E18h),
/// Base 2.0 Figure 64.
struct pmrmscu_register : word<pmrmscu_register, std::uint32_t> {
    using word::word;
    static constexpr register_offset offset = register_offset::pmrmscu;

    static constexpr field<0, 32, std::uint32_t> cba{}; // CBA: bits 31:00, address bits 63:32
};
static_assert(sizeof(pmrmscu_register) == 4);
static_assert(sizeof(pmrmscu_register) == register_width(pmrmscu_register::offset));
static_assert(is_wire_type_v<pmrmscu_register>);

/// The controller base address of the PMR, joined from PMRMSCU (bits 63:32) and PMRMSCL
/// (bits 31:12).
[[nodiscard]] constexpr std::uint64_t pmr_base_address(pmrmscl_register lower,
                                                       pmrmscu_register upper) noexcept
{
    return join_dwords(lower.raw & 0xfffff000U, upper.raw);
}

/// The register part of BAR0 (00h to FFFh), Base 2.0 Figure 33; the doorbells follow at 1000h.
struct controller_register_block {
    cap_register cap;                                   // 07h:00h
    vs_register vs;                                     // 0Bh:08h
    intms_register intms;                               // 0Fh:0Ch
    intmc_register intmc;                               // 13h:10h
    cc_register cc;                                     // 17h:14h
    std::array<std::uint8_t, 4> rsvd24;                 // 1Bh:18h
    csts_register csts;                                 // 1Fh:1Ch
    nssr_register nssr;                                 // 23h:20h
    aqa_register aqa;                                   // 27h:24h
    asq_register asq;                                   // 2Fh:28h
    acq_register acq;                                   // 37h:30h
    cmbloc_register cmbloc;                             // 3Bh:38h
    cmbsz_register cmbsz;                               // 3Fh:3Ch
    bpinfo_register bpinfo;                             // 43h:40h
    bprsel_register bprsel;                             // 47h:44h
    bpmbl_register bpmbl;                               // 4Fh:48h
    cmbmsc_register cmbmsc;                             // 57h:50h
    cmbsts_register cmbsts;                             // 5Bh:58h
    cmbebs_register cmbebs;                             // 5Fh:5Ch
    cmbswtp_register cmbswtp;                           // 63h:60h
    nssd_register nssd;                                 // 67h:64h
    crto_register crto;                                 // 6Bh:68h
    std::array<std::uint8_t, 3476> rsvd108;             // DFFh:6Ch
    pmrcap_register pmrcap;                             // E03h:E00h
    pmrctl_register pmrctl;                             // E07h:E04h
    pmrsts_register pmrsts;                             // E0Bh:E08h
    pmrebs_register pmrebs;                             // E0Fh:E0Ch
    pmrswtp_register pmrswtp;                           // E13h:E10h
    pmrmscl_register pmrmscl;                           // E17h:E14h
    pmrmscu_register pmrmscu;                           // E1Bh:E18h
    std::array<std::uint8_t, 228> rsvd3612;             // EFFh:E1Ch
    std::array<std::uint8_t, 256> command_set_specific; // FFFh:F00h
};
static_assert(sizeof(controller_register_block) == 0x1000);
static_assert(is_wire_type_v<controller_register_block>);
static_assert(offsetof(controller_register_block, cap) == 0x00);
static_assert(offsetof(controller_register_block, vs) == 0x08);
static_assert(offsetof(controller_register_block, intms) == 0x0c);
static_assert(offsetof(controller_register_block, intmc) == 0x10);
static_assert(offsetof(controller_register_block, cc) == 0x14);
static_assert(offsetof(controller_register_block, csts) == 0x1c);
static_assert(offsetof(controller_register_block, nssr) == 0x20);
static_assert(offsetof(controller_register_block, aqa) == 0x24);
static_assert(offsetof(controller_register_block, asq) == 0x28);
static_assert(offsetof(controller_register_block, acq) == 0x30);
static_assert(offsetof(controller_register_block, cmbloc) == 0x38);
static_assert(offsetof(controller_register_block, cmbsz) == 0x3c);
static_assert(offsetof(controller_register_block, bpinfo) == 0x40);
static_assert(offsetof(controller_register_block, bprsel) == 0x44);
static_assert(offsetof(controller_register_block, bpmbl) == 0x48);
static_assert(offsetof(controller_register_block, cmbmsc) == 0x50);
static_assert(offsetof(controller_register_block, cmbsts) == 0x58);
static_assert(offsetof(controller_register_block, cmbebs) == 0x5c);
static_assert(offsetof(controller_register_block, cmbswtp) == 0x60);
static_assert(offsetof(controller_register_block, nssd) == 0x64);
static_assert(offsetof(controller_register_block, crto) == 0x68);
static_assert(offsetof(controller_register_block, pmrcap) == 0xe00);
static_assert(offsetof(controller_register_block, pmrctl) == 0xe04);
static_assert(offsetof(controller_register_block, pmrsts) == 0xe08);
static_assert(offsetof(controller_register_block, pmrebs) == 0xe0c);
static_assert(offsetof(controller_register_block, pmrswtp) == 0xe10);
static_assert(offsetof(controller_register_block, pmrmscl) == 0xe14);
static_assert(offsetof(controller_register_block, pmrmscu) == 0xe18);
static_assert(offsetof(controller_register_block, command_set_specific) == 0xf00);

/// First byte of the doorbell registers in BAR0 (PCIe Transport 1.0, Figure 4).
inline constexpr std::uint64_t doorbell_base_offset = 0x1000;

/// Offset of SQ `qid`'s Tail Doorbell: 1000h + (2 * qid) * (4 << CAP.DSTRD).
[[nodiscard]] constexpr std::uint64_t sq_tail_doorbell_offset(std::uint16_t qid, unsigned dstrd) noexcept
{
    NVMEKIT_ASSERT(dstrd <= 0xf, "CAP.DSTRD is a 4-bit field");
    return doorbell_base_offset + (2 * std::uint64_t{qid}) * (std::uint64_t{4} << dstrd);
}

/// Offset of CQ `qid`'s Head Doorbell: 1000h + (2 * qid + 1) * (4 << CAP.DSTRD).
[[nodiscard]] constexpr std::uint64_t cq_head_doorbell_offset(std::uint16_t qid, unsigned dstrd) noexcept
{
    NVMEKIT_ASSERT(dstrd <= 0xf, "CAP.DSTRD is a 4-bit field");
    return doorbell_base_offset + (2 * std::uint64_t{qid} + 1) * (std::uint64_t{4} << dstrd);
}

/// The queue a doorbell offset belongs to.
struct doorbell_location {
    std::uint16_t qid;
    bool is_completion_queue; ///< true: CQ Head Doorbell; false: SQ Tail Doorbell

    friend constexpr bool operator==(const doorbell_location&, const doorbell_location&) noexcept = default;
};

/// Which doorbell starts at BAR0 offset `offset`, or nothing when `offset` is below 1000h, not
/// at the start of a doorbell for this stride, or beyond queue 65535. Host-controlled offsets are
/// safe to pass.
[[nodiscard]] constexpr std::optional<doorbell_location> decode_doorbell_offset(std::uint64_t offset,
                                                                                unsigned dstrd) noexcept
{
    if (offset < doorbell_base_offset || dstrd > 0xf) {
        return std::nullopt;
    }
    const std::uint64_t stride = std::uint64_t{4} << dstrd;
    const std::uint64_t relative = offset - doorbell_base_offset;
    if (relative % stride != 0) {
        return std::nullopt;
    }
    const std::uint64_t index = relative / stride;
    if (index / 2 > 0xffff) {
        return std::nullopt;
    }
    return doorbell_location{static_cast<std::uint16_t>(index / 2), (index & 1U) != 0};
}

static_assert(sq_tail_doorbell_offset(0, 0) == 0x1000);
static_assert(cq_head_doorbell_offset(0, 0) == 0x1004);
static_assert(sq_tail_doorbell_offset(1, 0) == 0x1008);
static_assert(cq_head_doorbell_offset(1, 2) == 0x1030);

[[nodiscard]] constexpr std::string_view name(controller_power_scope value) noexcept
{
    switch (value) {
    case controller_power_scope::not_reported: return "not_reported";
    case controller_power_scope::controller: return "controller";
    case controller_power_scope::domain: return "domain";
    case controller_power_scope::nvm_subsystem: return "nvm_subsystem";
    }
    return {};
}

/// "nvm", "all_io", "admin_only"; empty for a reserved value.
[[nodiscard]] constexpr std::string_view name(io_command_set_selected value) noexcept
{
    switch (value) {
    case io_command_set_selected::nvm: return "nvm";
    case io_command_set_selected::all_supported_io_sets: return "all_io";
    case io_command_set_selected::admin_only: return "admin_only";
    }
    return {};
}

/// "rr", "wrr_urgent", "vendor"; empty for a reserved value.
[[nodiscard]] constexpr std::string_view name(arbitration_mechanism value) noexcept
{
    switch (value) {
    case arbitration_mechanism::round_robin: return "rr";
    case arbitration_mechanism::weighted_round_robin_urgent: return "wrr_urgent";
    case arbitration_mechanism::vendor_specific: return "vendor";
    }
    return {};
}

/// "none", "normal", "abrupt"; empty for the reserved value 11b.
[[nodiscard]] constexpr std::string_view name(shutdown_notification value) noexcept
{
    switch (value) {
    case shutdown_notification::none: return "none";
    case shutdown_notification::normal: return "normal";
    case shutdown_notification::abrupt: return "abrupt";
    }
    return {};
}

/// "normal", "processing", "complete"; empty for the reserved value 11b.
[[nodiscard]] constexpr std::string_view name(shutdown_status value) noexcept
{
    switch (value) {
    case shutdown_status::normal: return "normal";
    case shutdown_status::processing: return "processing";
    case shutdown_status::complete: return "complete";
    }
    return {};
}

[[nodiscard]] constexpr std::string_view name(cmb_size_units value) noexcept
{
    switch (value) {
    case cmb_size_units::kib_4: return "4KiB";
    case cmb_size_units::kib_64: return "64KiB";
    case cmb_size_units::mib_1: return "1MiB";
    case cmb_size_units::mib_16: return "16MiB";
    case cmb_size_units::mib_256: return "256MiB";
    case cmb_size_units::gib_4: return "4GiB";
    case cmb_size_units::gib_64: return "64GiB";
    }
    return {};
}

[[nodiscard]] constexpr std::string_view name(boot_read_status value) noexcept
{
    switch (value) {
    case boot_read_status::no_read: return "none";
    case boot_read_status::in_progress: return "reading";
    case boot_read_status::completed: return "completed";
    case boot_read_status::error: return "error";
    }
    return {};
}

[[nodiscard]] constexpr std::string_view name(pmr_time_units value) noexcept
{
    switch (value) {
    case pmr_time_units::milliseconds_500: return "500ms";
    case pmr_time_units::minutes: return "minutes";
    }
    return {};
}

[[nodiscard]] constexpr std::string_view name(pmr_health_status value) noexcept
{
    switch (value) {
    case pmr_health_status::normal: return "normal";
    case pmr_health_status::restore_error: return "restore_error";
    case pmr_health_status::read_only: return "read_only";
    case pmr_health_status::unreliable: return "unreliable";
    }
    return {};
}

} // namespace spec
NVMEKIT_END_NAMESPACE
