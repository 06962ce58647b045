#pragma once
/// The controller registers of BAR0 (Base 2.0 3.1.3, Figure 33) and the doorbell decoding that
/// follows them (PCIe Transport 1.0 3.1.2), as the host sees them through MMIO.
///
/// The register file is table driven: each row of `detail::register_table` gives a register's
/// offset, width, read-only mask, write-1-to-clear mask, reset value, the bits a controller reset
/// keeps, and its on-write hook. It enforces access widths and read-only/reserved bits, counts
/// every host mistake, and turns the writes the controller must act on into `register_event`s.
/// It never interprets CC.EN or CC.SHN and never owns CSTS: that is the controller's job.
///
///     nvmekit::register_file registers{{.cap = my_cap}};
///     const auto event = registers.write(0x14, 4, cc.raw);   // cc_written: old and new CC
///     const auto low = registers.read(0x00, 4);              // CAP bits 31:00

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

#include <nvmekit/config.hpp>
#include <nvmekit/spec/registers.hpp>

NVMEKIT_BEGIN_NAMESPACE

/// What the embedder chooses about the register file; checked by the register_file constructor.
struct register_file_config {
    /// The controller's CAP. MQES >= 1, MPSMIN <= MPSMAX, CSS includes the NVM Command Set or
    /// I/O Command Sets bit and no reserved bit, CRMS.CRIMS only with CRMS.CRWMS, reserved bits
    /// clear; BPS, CMBS, PMRS and NSSS must be 0 (boot partitions, CMB, PMR and NVM subsystem
    /// shutdown are not implemented, so their registers read as reserved).
    spec::cap_register cap;
    /// Reported in VS; MJR must be at least 1.
    spec::vs_register vs = spec::version_2_0_0;
    /// CRTO; when zero it is derived from CAP: CRWMT = CAP.TO, and CRIMT = CAP.TO when
    /// CAP.CRMS.CRIMS is set, else 0 (no ready-independent-of-media mode to time). When
    /// CAP.CRMS.CRWMS is set, CRWMT must not be below CAP.TO.
    spec::crto_register crto{};
};

/// What a host write asks the controller to do.
enum class register_event_kind : std::uint8_t {
    none,                           ///< nothing to act on (stored, ignored or a host error)
    cc_written,                     ///< CC written: old_value / new_value are the old and new CC
    nssr_written,                   ///< NSSR written (CAP.NSSRS = 1): new_value is the value written
    interrupt_mask_changed,         ///< INTMS/INTMC changed the mask: old and new mask
    admin_queue_attributes_written, ///< AQA written: old_value / new_value are the old and new AQA
    doorbell,                       ///< a doorbell: queue_id, completion_queue, new_value
};

/// The result of one host write.
struct register_event {
    register_event_kind kind = register_event_kind::none;
    std::uint64_t old_value = 0;   ///< old CC, old AQA or old interrupt mask
    std::uint64_t new_value = 0;   ///< new CC / AQA / mask, the NSSR value or the doorbell value
    std::uint16_t queue_id = 0;    ///< doorbell only
    bool completion_queue = false; ///< doorbell only: true = CQ Head Doorbell, false = SQ Tail Doorbell

    friend constexpr bool operator==(const register_event&, const register_event&) noexcept = default;
};

/// Why the last host access counted as a host error.
enum class register_host_error : std::uint8_t {
    none,
    unsupported_width,         ///< width other than 4 or 8 bytes
    misaligned,                ///< offset not a multiple of the width
    width_mismatch,            ///< 8-byte access to a 32-bit register, reserved space or a doorbell
    reserved_space_write,      ///< write to an offset below 1000h that holds no register
    read_only_register_write,  ///< write to a register that is read-only as a whole
    read_only_bits_write,      ///< write that would change read-only or reserved bits
    not_a_doorbell,            ///< offset at or above 1000h that is not the start of a doorbell
    doorbell_beyond_max_queue, ///< doorbell of a queue identifier above max_queue_id()
    nssr_not_supported,        ///< NSSR written while CAP.NSSRS = 0
};

namespace detail {

/// What a write to a register does besides storing its writable bits.
enum class register_write_hook : std::uint8_t {
    store,                    ///< store writable bits, apply W1C bits
    read_only,                ///< the whole register is read-only: store nothing
    interrupt_mask_set,       ///< INTMS: 1 bits set mask bits (Base 2.0 Figure 38)
    interrupt_mask_clear,     ///< INTMC: 1 bits clear mask bits, reads return the mask (Figure 39)
    controller_configuration, ///< CC: store, then report cc_written
    subsystem_reset,          ///< NSSR: store nothing, report nssr_written (Figure 43)
    admin_queue_attributes,   ///< AQA: store, then report admin_queue_attributes_written
};

/// Where a register's reset value comes from.
enum class register_reset_source : std::uint8_t { constant, configured_cap, configured_vs, configured_crto };

/// One row of the register table.
struct register_row {
    spec::register_offset offset;
    std::uint8_t width;                          ///< bytes: 4 or 8
    std::uint64_t read_only_mask;                ///< read-only and reserved bits
    std::uint64_t write_one_to_clear_mask;       ///< RW1C bits
    std::uint64_t kept_on_controller_reset_mask; ///< bits CC.EN 1 -> 0 does not reset (Base 2.0 3.7.2)
    register_reset_source reset_source;
    std::uint64_t reset_value; ///< when reset_source is constant
    register_write_hook on_write;

    [[nodiscard]] constexpr std::uint64_t first_byte() const noexcept
    {
        return static_cast<std::uint64_t>(offset);
    }
};

inline constexpr std::uint64_t dword_mask = 0xffff'ffff;
inline constexpr std::uint64_t all_bits = ~std::uint64_t{0};

/// CC bits defined by Base 2.0 Figure 41; the rest are reserved.
inline constexpr std::uint64_t cc_defined_bits =
    std::uint64_t{spec::cc_register::en.mask} | spec::cc_register::css.mask | spec::cc_register::mps.mask |
    spec::cc_register::ams.mask | spec::cc_register::shn.mask | spec::cc_register::iosqes.mask |
    spec::cc_register::iocqes.mask | spec::cc_register::crime.mask;

/// CSTS bits defined by Base 2.0 Figure 42.
inline constexpr std::uint64_t csts_defined_bits =
    std::uint64_t{spec::csts_register::rdy.mask} | spec::csts_register::cfs.mask |
    spec::csts_register::shst.mask | spec::csts_register::nssro.mask | spec::csts_register::pp.mask |
    spec::csts_register::st.mask;

inline constexpr std::uint64_t csts_nssro_bit = spec::csts_register::nssro.mask;

/// AQA bits defined by Base 2.0 Figure 44 (ASQS, ACQS).
inline constexpr std::uint64_t aqa_defined_bits =
    std::uint64_t{spec::aqa_register::asqs.mask} | spec::aqa_register::acqs.mask;

/// CAP bits defined by Base 2.0 Figure 36; bits 23:19 and 63:61 are reserved.
inline constexpr std::uint64_t cap_defined_bits =
    spec::cap_register::mqes.mask | spec::cap_register::cqr.mask | spec::cap_register::ams.mask |
    spec::cap_register::to.mask | spec::cap_register::dstrd.mask | spec::cap_register::nssrs.mask |
    spec::cap_register::css.mask | spec::cap_register::bps.mask | spec::cap_register::cps.mask |
    spec::cap_register::mpsmin.mask | spec::cap_register::mpsmax.mask | spec::cap_register::pmrs.mask |
    spec::cap_register::cmbs.mask | spec::cap_register::nsss.mask | spec::cap_register::crms.mask;

/// CAP.CSS bits 42:38 are reserved (Base 2.0 Figure 36).
inline constexpr std::uint8_t cap_css_reserved_bits = 0x3e;

[[nodiscard]] constexpr register_row
read_only_row(spec::register_offset offset, std::uint8_t width,
              register_reset_source source = register_reset_source::constant) noexcept
{
    const std::uint64_t every_bit = width == 8 ? all_bits : dword_mask;
    return {offset, width, every_bit, 0, 0, source, 0, register_write_hook::read_only};
}

/// Every register of Base 2.0 Figure 33, in the order of spec::controller_register_table.
/// BPINFO/BPRSEL/BPMBL, the CMB registers, NSSD and the PMR registers are reserved because
/// CAP.BPS, CAP.CMBS, CAP.NSSS and CAP.PMRS are 0: read-only and 0.
inline constexpr std::array<register_row, spec::controller_register_table.size()> register_table{{
    read_only_row(spec::register_offset::cap, 8, register_reset_source::configured_cap),
    read_only_row(spec::register_offset::vs, 4, register_reset_source::configured_vs),
    {spec::register_offset::intms, 4, 0, 0, 0, register_reset_source::constant, 0,
     register_write_hook::interrupt_mask_set},
    {spec::register_offset::intmc, 4, 0, 0, 0, register_reset_source::constant, 0,
     register_write_hook::interrupt_mask_clear},
    {spec::register_offset::cc, 4, dword_mask & ~cc_defined_bits, 0, 0, register_reset_source::constant, 0,
     register_write_hook::controller_configuration},
    // CSTS: only NSSRO (RW1C) is host-writable; a controller reset keeps it (Base 2.0 Figure 42).
    {spec::register_offset::csts, 4, dword_mask & ~csts_nssro_bit, csts_nssro_bit, csts_nssro_bit,
     register_reset_source::constant, 0, register_write_hook::store},
    {spec::register_offset::nssr, 4, 0, 0, 0, register_reset_source::constant, 0,
     register_write_hook::subsystem_reset},
    {spec::register_offset::aqa, 4, dword_mask & ~aqa_defined_bits, 0, all_bits,
     register_reset_source::constant, 0, register_write_hook::admin_queue_attributes},
    {spec::register_offset::asq, 8, ~spec::page_aligned_address_mask, 0, all_bits,
     register_reset_source::constant, 0, register_write_hook::store},
    {spec::register_offset::acq, 8, ~spec::page_aligned_address_mask, 0, all_bits,
     register_reset_source::constant, 0, register_write_hook::store},
    read_only_row(spec::register_offset::cmbloc, 4),
    read_only_row(spec::register_offset::cmbsz, 4),
    read_only_row(spec::register_offset::bpinfo, 4),
    read_only_row(spec::register_offset::bprsel, 4),
    read_only_row(spec::register_offset::bpmbl, 8),
    read_only_row(spec::register_offset::cmbmsc, 8),
    read_only_row(spec::register_offset::cmbsts, 4),
    read_only_row(spec::register_offset::cmbebs, 4),
    read_only_row(spec::register_offset::cmbswtp, 4),
    read_only_row(spec::register_offset::nssd, 4),
    read_only_row(spec::register_offset::crto, 4, register_reset_source::configured_crto),
    read_only_row(spec::register_offset::pmrcap, 4),
    read_only_row(spec::register_offset::pmrctl, 4),
    read_only_row(spec::register_offset::pmrsts, 4),
    read_only_row(spec::register_offset::pmrebs, 4),
    read_only_row(spec::register_offset::pmrswtp, 4),
    read_only_row(spec::register_offset::pmrmscl, 4),
    read_only_row(spec::register_offset::pmrmscu, 4),
}};

[[nodiscard]] constexpr bool register_table_matches_spec() noexcept
{
    for (std::size_t i = 0; i < register_table.size(); ++i) {
        const auto& row = register_table[i];
        const auto& spec_row = spec::controller_register_table[i];
        const std::uint64_t width_bits = row.width == 8 ? all_bits : dword_mask;
        if (row.offset != spec_row.offset || row.width != spec_row.width ||
            (row.read_only_mask & ~width_bits) != 0 ||
            (row.write_one_to_clear_mask & row.read_only_mask) != 0) {
            return false;
        }
    }
    return true;
}
static_assert(
    register_table_matches_spec(),
    "register_table lists spec::controller_register_table's registers with the same widths; masks fit");

/// Index of `offset`'s row in register_table.
[[nodiscard]] constexpr std::size_t register_slot(spec::register_offset offset) noexcept
{
    for (std::size_t i = 0; i < register_table.size(); ++i) {
        if (register_table[i].offset == offset) {
            return i;
        }
    }
    NVMEKIT_ASSERT(false, "register_offset value missing from register_table");
    return 0;
}

inline constexpr std::size_t cap_slot = register_slot(spec::register_offset::cap);
inline constexpr std::size_t vs_slot = register_slot(spec::register_offset::vs);
inline constexpr std::size_t intms_slot = register_slot(spec::register_offset::intms);
inline constexpr std::size_t cc_slot = register_slot(spec::register_offset::cc);
inline constexpr std::size_t csts_slot = register_slot(spec::register_offset::csts);
inline constexpr std::size_t aqa_slot = register_slot(spec::register_offset::aqa);
inline constexpr std::size_t asq_slot = register_slot(spec::register_offset::asq);
inline constexpr std::size_t acq_slot = register_slot(spec::register_offset::acq);
inline constexpr std::size_t crto_slot = register_slot(spec::register_offset::crto);

inline constexpr std::uint8_t no_register = 0xff;
static_assert(register_table.size() < no_register);

/// For each dword of 000h..FFFh, the register_table row holding it, or no_register.
inline constexpr auto register_slot_by_dword = [] {
    std::array<std::uint8_t, spec::doorbell_base_offset / 4> slots{};
    slots.fill(no_register);
    for (std::size_t i = 0; i < register_table.size(); ++i) {
        const auto first = register_table[i].first_byte() / 4;
        for (std::size_t dword = 0; dword < register_table[i].width / 4U; ++dword) {
            slots[first + dword] = static_cast<std::uint8_t>(i);
        }
    }
    return slots;
}();

[[noreturn]] inline void invalid_register_config(const char* what)
{
    throw std::invalid_argument(std::string{"nvmekit::register_file: "} + what);
}

/// `config` checked, with CRTO derived from CAP when zero; throws std::invalid_argument
/// naming the offending field.
[[nodiscard]] inline register_file_config validated(register_file_config config)
{
    const spec::cap_register cap = config.cap;
    if ((cap.raw & ~cap_defined_bits) != 0) {
        invalid_register_config("CAP: reserved bits 23:19 or 63:61 are set");
    }
    if (cap.get(cap.mqes) < 1) {
        invalid_register_config("CAP.MQES must be at least 1 (0-based: two entries)");
    }
    if (cap.get(cap.mpsmin) > cap.get(cap.mpsmax)) {
        invalid_register_config("CAP.MPSMIN is greater than CAP.MPSMAX");
    }
    if (!cap.get(cap.css_nvm) && !cap.get(cap.css_io_command_sets)) {
        invalid_register_config(
            "CAP.CSS supports neither the NVM Command Set (bit 37) nor I/O Command Sets (bit 43)");
    }
    if ((cap.get(cap.css) & cap_css_reserved_bits) != 0) {
        invalid_register_config("CAP.CSS: reserved bits 42:38 are set");
    }
    if (cap.get(cap.bps)) {
        invalid_register_config("CAP.BPS: boot partitions are not supported by the register file");
    }
    if (cap.get(cap.cmbs)) {
        invalid_register_config("CAP.CMBS: a controller memory buffer is not supported by the register file");
    }
    if (cap.get(cap.pmrs)) {
        invalid_register_config("CAP.PMRS: a persistent memory region is not supported by the register file");
    }
    if (cap.get(cap.nsss)) {
        invalid_register_config(
            "CAP.NSSS: NVM subsystem shutdown (NSSD) is not supported by the register file");
    }
    if (cap.get(cap.crims) && !cap.get(cap.crwms)) {
        invalid_register_config("CAP.CRMS: CRIMS is set without CRWMS");
    }
    if (config.vs.get(config.vs.mjr) < 1) {
        invalid_register_config("VS.MJR must be at least 1");
    }
    if (config.crto.raw == 0) {
        config.crto.set(config.crto.crwmt, cap.get(cap.to))
            .set(config.crto.crimt, cap.get(cap.crims) ? cap.get(cap.to) : std::uint8_t{0});
    } else if (cap.get(cap.crwms) && config.crto.get(config.crto.crwmt) < cap.get(cap.to)) {
        invalid_register_config("CRTO.CRWMT is below CAP.TO");
    }
    return config;
}

} // namespace detail

/// BAR0 registers 000h-FFFh and the doorbells from 1000h, for one controller.
///
/// Accesses are 4 or 8 bytes, naturally aligned. 64-bit registers (CAP, ASQ, ACQ, BPMBL, CMBMSC)
/// take one 8-byte access or 4-byte accesses to either half, in any order; a 4-byte write changes
/// only its half. Every other access is a host error that changes nothing (reads return 0).
/// Reserved space reads as 0 (Base 2.0 3.1.3). Not thread-safe: one context owns it.
class register_file {
public:
    /// Throws std::invalid_argument naming the field when `config` is not acceptable.
    explicit register_file(const register_file_config& config) : config_{detail::validated(config)}
    {
        for (std::size_t i = 0; i < detail::register_table.size(); ++i) {
            const auto& row = detail::register_table[i];
            read_only_masks_[i] = row.read_only_mask;
            switch (row.reset_source) {
            case detail::register_reset_source::constant: reset_values_[i] = row.reset_value; break;
            case detail::register_reset_source::configured_cap: reset_values_[i] = config_.cap.raw; break;
            case detail::register_reset_source::configured_vs: reset_values_[i] = config_.vs.raw; break;
            case detail::register_reset_source::configured_crto: reset_values_[i] = config_.crto.raw; break;
            }
        }
        // CC.CRIME is reserved unless CAP.CRMS.CRIMS is set (Base 2.0 Figure 41).
        if (!config_.cap.get(config_.cap.crims)) {
            read_only_masks_[detail::cc_slot] |= spec::cc_register::crime.mask;
        }
        reset_power_on();
    }

    /// Host MMIO read of `width` (4 or 8) bytes at BAR0 `offset`. Reserved space, NSSR and
    /// doorbells read as 0; a bad width, alignment or doorbell offset reads 0 and counts a host
    /// error.
    [[nodiscard]] std::uint64_t read(std::uint64_t offset, unsigned width) noexcept
    {
        if (!check_width_and_alignment(offset, width)) {
            return 0;
        }
        if (offset >= spec::doorbell_base_offset) {
            // Doorbells are write-only; reading one returns 0 (PCIe Transport 1.0 3.1.2).
            static_cast<void>(decode_doorbell(offset, width));
            return 0;
        }
        const auto slot = slot_of(offset, width);
        if (!slot) {
            return 0;
        }
        const auto& row = detail::register_table[*slot];
        std::uint64_t value = values_[*slot];
        if (row.on_write == detail::register_write_hook::interrupt_mask_clear) {
            value = values_[detail::intms_slot];
        }
        return width == 8 ? value : (value >> lane_shift(row, offset)) & detail::dword_mask;
    }

    /// Host MMIO write of `width` (4 or 8) bytes at BAR0 `offset` (for a 4-byte write only
    /// bits 31:00 of `value` are used). Stores the writable bits, ignores read-only and reserved
    /// bits (a host error when the write would change them, or when a whole read-only register
    /// is written), and returns what the controller must act on.
    register_event write(std::uint64_t offset, unsigned width, std::uint64_t value) noexcept
    {
        if (!check_width_and_alignment(offset, width)) {
            return {};
        }
        if (width == 4) {
            value &= detail::dword_mask;
        }
        if (offset >= spec::doorbell_base_offset) {
            const auto location = decode_doorbell(offset, width);
            if (!location) {
                return {};
            }
            return {register_event_kind::doorbell, 0, value, location->qid, location->is_completion_queue};
        }
        const auto slot = slot_of(offset, width);
        if (!slot) {
            if (width == 4) {
                host_error(register_host_error::reserved_space_write);
            }
            return {};
        }
        const auto& row = detail::register_table[*slot];
        const unsigned shift = lane_shift(row, offset);
        const std::uint64_t lane = (width == 8 ? detail::all_bits : detail::dword_mask) << shift;
        const std::uint64_t written = value << shift;

        switch (row.on_write) {
        case detail::register_write_hook::read_only:
            host_error(register_host_error::read_only_register_write);
            return {};
        case detail::register_write_hook::subsystem_reset:
            // NSSR reads as 0 and stores nothing; the controller checks for "NVMe" (Base 2.0 3.7.1).
            if (!config_.cap.get(config_.cap.nssrs)) {
                host_error(register_host_error::nssr_not_supported);
                return {};
            }
            return {register_event_kind::nssr_written, 0, value};
        case detail::register_write_hook::interrupt_mask_set:
            return change_interrupt_mask(values_[detail::intms_slot] | written);
        case detail::register_write_hook::interrupt_mask_clear:
            return change_interrupt_mask(values_[detail::intms_slot] & ~written);
        case detail::register_write_hook::store:
        case detail::register_write_hook::controller_configuration:
        case detail::register_write_hook::admin_queue_attributes: break;
        }

        const std::uint64_t old_value = values_[*slot];
        store_masked(*slot, lane, written);
        switch (row.on_write) {
        case detail::register_write_hook::controller_configuration:
            return {register_event_kind::cc_written, old_value, values_[*slot]};
        case detail::register_write_hook::admin_queue_attributes:
            return {register_event_kind::admin_queue_attributes_written, old_value, values_[*slot]};
        default: return {};
        }
    }

    [[nodiscard]] spec::cap_register cap() const noexcept
    {
        return spec::cap_register{values_[detail::cap_slot]};
    }
    [[nodiscard]] spec::vs_register vs() const noexcept { return spec::vs_register{dword(detail::vs_slot)}; }
    [[nodiscard]] spec::cc_register cc() const noexcept { return spec::cc_register{dword(detail::cc_slot)}; }
    [[nodiscard]] spec::csts_register csts() const noexcept
    {
        return spec::csts_register{dword(detail::csts_slot)};
    }
    [[nodiscard]] spec::aqa_register aqa() const noexcept
    {
        return spec::aqa_register{dword(detail::aqa_slot)};
    }
    [[nodiscard]] spec::asq_register asq() const noexcept
    {
        return spec::asq_register{values_[detail::asq_slot]};
    }
    [[nodiscard]] spec::acq_register acq() const noexcept
    {
        return spec::acq_register{values_[detail::acq_slot]};
    }
    [[nodiscard]] spec::crto_register crto() const noexcept
    {
        return spec::crto_register{dword(detail::crto_slot)};
    }
    /// The pin-based/MSI interrupt mask that INTMS and INTMC set, clear and read (bit n = vector n).
    [[nodiscard]] std::uint32_t interrupt_mask() const noexcept { return dword(detail::intms_slot); }

    /// The controller's update of CSTS (RDY, CFS, SHST, NSSRO, PP, ST); reserved bits must be 0.
    void set_csts(spec::csts_register csts) noexcept
    {
        NVMEKIT_ASSERT((csts.raw & ~detail::csts_defined_bits) == 0, "set_csts: reserved CSTS bits set");
        values_[detail::csts_slot] = csts.raw & detail::csts_defined_bits;
    }

    /// The controller's update of CC (e.g. clearing SHN); reserved bits must be 0.
    void set_cc(spec::cc_register cc) noexcept
    {
        NVMEKIT_ASSERT((cc.raw & ~detail::cc_defined_bits) == 0, "set_cc: reserved CC bits set");
        values_[detail::cc_slot] = cc.raw & detail::cc_defined_bits;
    }

    /// Controller reset (CC.EN 1 -> 0, Base 2.0 3.7.2): every register returns to its reset value
    /// except AQA, ASQ, ACQ and CSTS.NSSRO. CSTS.RDY, CFS, SHST, PP and ST, CC and the interrupt
    /// mask read 0 afterwards. Call it when the reset's work is done: it clears CSTS.RDY.
    void reset_controller() noexcept
    {
        for (std::size_t i = 0; i < detail::register_table.size(); ++i) {
            const std::uint64_t keep = detail::register_table[i].kept_on_controller_reset_mask;
            values_[i] = (values_[i] & keep) | (reset_values_[i] & ~keep);
        }
    }

    /// Power-on (and NVM Subsystem Reset) reset: every register returns to its reset value,
    /// the same values reset_controller() uses. After an NVM Subsystem Reset the controller
    /// then sets CSTS.NSSRO with set_csts() (Base 2.0 Figure 42). The host error count and
    /// max_queue_id() are kept.
    void reset_power_on() noexcept { values_ = reset_values_; }

    /// The highest queue identifier whose doorbells exist (65535 until the controller sets it).
    void set_max_queue_id(std::uint16_t qid) noexcept { max_queue_id_ = qid; }
    [[nodiscard]] std::uint16_t max_queue_id() const noexcept { return max_queue_id_; }

    /// Number of host accesses that broke an access rule since construction.
    [[nodiscard]] std::uint64_t host_error_count() const noexcept { return host_errors_; }
    /// Why the most recent host error happened (none before the first).
    [[nodiscard]] register_host_error last_host_error() const noexcept { return last_host_error_; }

    /// Bytes between doorbells: 4 << CAP.DSTRD.
    [[nodiscard]] std::uint32_t doorbell_stride_bytes() const noexcept
    {
        return cap().doorbell_stride_bytes();
    }

private:
    using register_values = std::array<std::uint64_t, detail::register_table.size()>;

    void host_error(register_host_error reason) noexcept
    {
        ++host_errors_;
        last_host_error_ = reason;
    }

    [[nodiscard]] std::uint32_t dword(std::size_t slot) const noexcept
    {
        return static_cast<std::uint32_t>(values_[slot]);
    }

    [[nodiscard]] static unsigned lane_shift(const detail::register_row& row, std::uint64_t offset) noexcept
    {
        return static_cast<unsigned>(8 * (offset - row.first_byte()));
    }

    [[nodiscard]] bool check_width_and_alignment(std::uint64_t offset, unsigned width) noexcept
    {
        if (width != 4 && width != 8) {
            host_error(register_host_error::unsupported_width);
            return false;
        }
        if (offset % width != 0) {
            host_error(register_host_error::misaligned);
            return false;
        }
        return true;
    }

    /// The row of the register an aligned access below 1000h lands in, or nothing for reserved
    /// space (an 8-byte access anywhere but at a 64-bit register is a host error).
    [[nodiscard]] std::optional<std::size_t> slot_of(std::uint64_t offset, unsigned width) noexcept
    {
        NVMEKIT_ASSERT(offset < spec::doorbell_base_offset && offset % width == 0,
                       "slot_of: unchecked offset");
        const std::uint8_t slot = detail::register_slot_by_dword[offset / 4];
        if (width == 8 && (slot == detail::no_register || detail::register_table[slot].width != 8)) {
            host_error(register_host_error::width_mismatch);
            return std::nullopt;
        }
        if (slot == detail::no_register) {
            return std::nullopt;
        }
        return slot;
    }

    /// The doorbell at `offset` (at or above 1000h), or nothing after counting a host error.
    [[nodiscard]] std::optional<spec::doorbell_location> decode_doorbell(std::uint64_t offset,
                                                                         unsigned width) noexcept
    {
        if (width != 4) {
            host_error(register_host_error::width_mismatch);
            return std::nullopt;
        }
        const auto location = spec::decode_doorbell_offset(offset, config_.cap.get(config_.cap.dstrd));
        if (!location) {
            host_error(register_host_error::not_a_doorbell);
            return std::nullopt;
        }
        if (location->qid > max_queue_id_) {
            host_error(register_host_error::doorbell_beyond_max_queue);
            return std::nullopt;
        }
        return location;
    }

    /// Applies the bits of `written` inside `lane` to register `slot`: writable bits are stored,
    /// RW1C bits written as 1 are cleared, read-only bits are kept. A write that would change a
    /// read-only bit is a host error; in a register with RW1C bits, read-only bits written as 0
    /// are the normal way to write it (the Linux driver writes CSTS.NSSRO alone) and are not.
    void store_masked(std::size_t slot, std::uint64_t lane, std::uint64_t written) noexcept
    {
        const auto& row = detail::register_table[slot];
        const std::uint64_t old_value = values_[slot];
        const std::uint64_t read_only = read_only_masks_[slot] & lane;
        const std::uint64_t write_one_to_clear = row.write_one_to_clear_mask & lane;
        std::uint64_t changed_read_only = (written ^ old_value) & read_only;
        if (write_one_to_clear != 0) {
            changed_read_only &= written;
        }
        if (changed_read_only != 0) {
            host_error(register_host_error::read_only_bits_write);
        }
        const std::uint64_t writable = lane & ~read_only & ~write_one_to_clear;
        values_[slot] = ((old_value & ~writable) | (written & writable)) & ~(written & write_one_to_clear);
    }

    [[nodiscard]] register_event change_interrupt_mask(std::uint64_t new_mask) noexcept
    {
        const std::uint64_t old_mask = values_[detail::intms_slot];
        if (new_mask == old_mask) {
            return {};
        }
        values_[detail::intms_slot] = new_mask;
        return {register_event_kind::interrupt_mask_changed, old_mask, new_mask};
    }

    register_file_config config_;
    register_values values_{};
    register_values reset_values_{};
    register_values read_only_masks_{};
    std::uint64_t host_errors_ = 0;
    register_host_error last_host_error_ = register_host_error::none;
    std::uint16_t max_queue_id_ = 0xffff;
};

NVMEKIT_END_NAMESPACE
