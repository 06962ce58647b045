// libFuzzer target: the register file and the enable/shutdown/reset state machine, seen only
// through the controller's BAR0. The first input byte chooses the controller (ready delay,
// doorbell stride, NVM Subsystem Reset support); the rest is a program of BAR0 reads and writes
// of every width at any offset (registers, reserved space, doorbells, MSI-X table and PBA), clock
// advances, polls, Function Level Resets and NVM Subsystem Resets. Host memory is one small area
// for the admin queues, so a program that sets AQA, ASQ and ACQ can bring the controller up.
//
// After every step the register-level rules are checked and abort() is called on a violation:
// CAP, VS and CRTO never change; reserved registers and reserved bits read 0; reads have no side
// effects and a narrow or 8-byte read either is refused (reads 0) or agrees with the 4-byte reads
// of the same bytes; CSTS.RDY becomes 1 only after CC.EN 0 -> 1 with a configuration a controller
// can run and once the ready delay has passed, and reads 0 as soon as CC.EN = 0 is written; an
// enable that every rule a controller may apply accepts (runnable, IOSQES = 6, IOCQES = 4, no
// shutdown notification) reads RDY = 1 at the first poll after its ready delay, with CFS = 0
// unless a doorbell was rung since;
// CSTS.SHST only moves 00b -> 01b -> 10b (or 00b -> 10b) and back to 00b only through a reset;
// AQA, ASQ and ACQ survive a Controller Reset; an FLR or NSSR returns registers to power-on values.

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>

#include "fuzz_input.hpp"

#include <nvmekit/controller.hpp>
#include <nvmekit/testing/flat_memory.hpp>
#include <nvmekit/testing/manual_clock.hpp>

namespace {

using nvmekit_fuzz::counting_interrupts;
using nvmekit_fuzz::reader;

struct traits : nvmekit::default_traits {
    using dma = nvmekit::testing::flat_memory;
    using interrupts = counting_interrupts;
    using clock = nvmekit::testing::manual_clock;
    static constexpr nvmekit::limits limits{.io_queues = 4,
                                            .queue_entries = 64,
                                            .mdts = 3,
                                            .msix_vectors = 5,
                                            .aerl = 3,
                                            .commands_per_queue = 16,
                                            .max_segments = 64,
                                            .staging_buffers = 1};
};

// The only host memory: room for admin queues the program may point ASQ/ACQ at.
constexpr std::uint64_t host_base = 0x10000;
constexpr std::size_t host_size = 64 * 1024;

// Register offsets (Base 2.0 Figure 33) and field masks used by the checks.
constexpr std::uint64_t cap_off = 0x00, vs_off = 0x08, intms_off = 0x0c, intmc_off = 0x10, cc_off = 0x14,
                        csts_off = 0x1c, nssr_off = 0x20, aqa_off = 0x24, asq_off = 0x28, acq_off = 0x30,
                        crto_off = 0x68;
constexpr std::uint32_t csts_rdy = 1U << 0, csts_cfs = 1U << 1, csts_nssro = 1U << 4;
constexpr std::uint32_t csts_reserved = 0xffff'ff80U; // bits 31:07
constexpr std::uint32_t cc_reserved = 0xfe00'000eU;   // bits 31:25 and 03:01
constexpr std::uint32_t cc_crime = 1U << 24;          // reserved unless CAP.CRMS.CRIMS
constexpr std::uint32_t aqa_reserved = 0xf000'f000U;  // bits 31:28 and 15:12
constexpr std::uint64_t queue_base_reserved = 0xfffU; // ASQ/ACQ bits 11:00
constexpr std::uint64_t cap_crims = std::uint64_t{1} << 60;

[[noreturn]] void violation() { std::abort(); }
void check(bool condition)
{
    if (!condition) {
        violation();
    }
}

unsigned shst(std::uint32_t csts) { return (csts >> 2) & 3U; }

/// Whether a dword of 000h..FFFh lies in a register of Figure 33 (everything else is reserved
/// space and must read 0). 18h is reserved between CC and CSTS.
bool defined_dword(std::uint64_t offset)
{
    return (offset < 0x6c && offset != 0x18) || (offset >= 0xe00 && offset < 0xe1c);
}

/// Registers that are reserved because the CAP bits naming them are 0 (BPS, CMBS, NSSS, PMRS):
/// BPINFO..NSSD and the PMR registers, plus NSSR, which is write-only.
bool reads_as_zero(std::uint64_t offset)
{
    return offset == nssr_off || (offset >= 0x38 && offset < 0x68) || (offset >= 0xe00 && offset < 0xe1c);
}

/// The configuration a controller can run with (Base 2.0 3.5.1): MPS within CAP.MPSMIN..MPSMAX,
/// the NVM command set, round robin arbitration (CAP.AMS = 0), admin queues of at least two
/// entries at addresses aligned to the memory page size. Looser than a real controller may be
/// (it does not look at IOSQES/IOCQES), so it only ever rules a RDY = 1 out.
bool runnable(std::uint64_t cap, std::uint32_t cc, std::uint32_t aqa, std::uint64_t asq, std::uint64_t acq)
{
    const unsigned mps = (cc >> 7) & 0xfU;
    const unsigned mpsmin = (cap >> 48) & 0xfU;
    const unsigned mpsmax = (cap >> 52) & 0xfU;
    if (mps < mpsmin || mps > mpsmax || ((cc >> 4) & 7U) != 0 || ((cc >> 11) & 7U) != 0) {
        return false;
    }
    if ((aqa & 0xfffU) == 0 || ((aqa >> 16) & 0xfffU) == 0) {
        return false;
    }
    const std::uint64_t page_mask = (std::uint64_t{4096} << mps) - 1U;
    return (asq & page_mask) == 0 && (acq & page_mask) == 0;
}

/// The host-visible registers (4-byte reads of every defined dword).
struct snapshot {
    std::array<std::uint32_t, 0x6c / 4> low{};
    std::array<std::uint32_t, 7> pmr{};
    friend bool operator==(const snapshot&, const snapshot&) = default;
    [[nodiscard]] std::uint32_t at(std::uint64_t offset) const { return low[offset / 4]; }
    [[nodiscard]] std::uint64_t at64(std::uint64_t offset) const
    {
        return low[offset / 4] | (std::uint64_t{low[offset / 4 + 1]} << 32);
    }
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    reader in{{data, size}};
    const auto setup = in.take<std::uint8_t>();
    static constexpr std::chrono::nanoseconds ready_delays[] = {
        std::chrono::nanoseconds{0}, std::chrono::microseconds{100}, std::chrono::milliseconds{10},
        std::chrono::milliseconds{500}};
    const nvmekit::controller_config config{
        .ready_delay = ready_delays[setup % 4],
        .doorbell_stride = static_cast<std::uint8_t>((setup >> 2) % 3),
        .subsystem_reset_supported = (setup & 0x10U) == 0,
    };

    nvmekit::testing::flat_memory memory;
    memory.add_range(host_base, host_size);
    counting_interrupts interrupts;
    nvmekit::testing::manual_clock clock;
    nvmekit::controller<traits> ctrl{memory, interrupts, clock, config};
    const std::uint64_t bar0 = ctrl.bar0_size();
    const std::uint64_t msix_table = ctrl.msix_table_offset();

    const auto r32 = [&](std::uint64_t offset) { return ctrl.mmio_read(offset, 4); };
    const auto take_snapshot = [&] {
        snapshot s;
        for (std::size_t i = 0; i < s.low.size(); ++i) {
            s.low[i] = static_cast<std::uint32_t>(r32(4 * i));
        }
        for (std::size_t i = 0; i < s.pmr.size(); ++i) {
            s.pmr[i] = static_cast<std::uint32_t>(r32(0xe00 + 4 * i));
        }
        return s;
    };

    const snapshot power_on = take_snapshot();
    const std::uint64_t cap = power_on.at64(cap_off);
    const std::uint32_t vs = power_on.at(vs_off);
    const std::uint32_t crto = power_on.at(crto_off);
    // Power-on values: everything but CAP, VS and CRTO reads 0.
    for (std::uint64_t offset = 0; offset < 0x6c; offset += 4) {
        check(offset == cap_off || offset == cap_off + 4 || offset == vs_off || offset == crto_off ||
              power_on.at(offset) == 0);
    }
    const bool nssr_supported = ((cap >> 36) & 1U) != 0;
    check(nssr_supported == config.subsystem_reset_supported);

    // What the host knows about the last enable: when CC.EN went 0 -> 1 and whether the
    // registers then held a runnable configuration.
    bool enabled_since_reset = false;
    bool enable_runnable = false;
    // An enable that must bring the controller up, not yet checked; and whether a doorbell was
    // rung since (a command fetched from an admin queue outside host memory may set CFS).
    bool enable_must_succeed = false;
    bool doorbell_since_enable = false;
    std::chrono::nanoseconds enable_time{0};
    std::size_t sweep = 0;

    snapshot before = power_on;
    for (int step = 0; step < 2048 && !in.empty(); ++step) {
        const auto op = in.take<std::uint8_t>();
        bool is_read = false;
        bool reset = false;          // CC.EN = 0 written, FLR or NSSR
        bool power_on_reset = false; // FLR or NSSR
        bool may_change_registers = false;
        bool shst_may_advance = false;
        std::uint64_t cc_write = ~std::uint64_t{0};

        switch (op % 8) {
        case 0:
        case 1:
        case 2: { // BAR0 write
            static constexpr unsigned widths[] = {1, 2, 4, 8};
            const unsigned width = widths[in.take<std::uint8_t>() % 4];
            const std::uint64_t offset = in.take<std::uint16_t>() % bar0;
            const auto value = in.take<std::uint64_t>();
            ctrl.mmio_write(offset, width, value);
            if (offset + width > nvmekit::spec::doorbell_base_offset && offset < msix_table) {
                doorbell_since_enable = true;
            }
            const std::uint64_t written = width == 8 ? value : value & 0xffff'ffffU;
            if (width == 4 && offset == cc_off) {
                cc_write = written;
                may_change_registers = true;
                shst_may_advance = true;
                reset = (written & 1U) == 0;
            } else if (width == 4 && offset == nssr_off && written == 0x4e564d65U && nssr_supported) {
                reset = power_on_reset = may_change_registers = true;
            } else if ((width == 4 || width == 8) && offset % width == 0 && offset < 0x38 &&
                       offset != nssr_off && offset != cap_off && offset != cap_off + 4 && offset != vs_off &&
                       offset != 0x18 && (width == 4 || offset == asq_off || offset == acq_off)) {
                may_change_registers = true; // INTMS, INTMC, CSTS.NSSRO, AQA, ASQ, ACQ
            }
            const snapshot after = take_snapshot();
            // Stores into writable registers read back as stored (Base 2.0 Figures 38-47).
            if (width == 4 && offset == aqa_off) {
                check(after.at(aqa_off) == (written & ~std::uint64_t{aqa_reserved}));
            } else if (width == 8 && (offset == asq_off || offset == acq_off)) {
                check(after.at64(offset) == (written & ~queue_base_reserved));
            } else if (width == 4 && (offset == asq_off || offset == acq_off)) {
                check(after.at(offset) == (written & ~queue_base_reserved));
                check(after.at(offset + 4) == before.at(offset + 4));
            } else if (width == 4 && (offset == asq_off + 4 || offset == acq_off + 4)) {
                check(after.at(offset) == written);
                check(after.at(offset - 4) == before.at(offset - 4));
            } else if (width == 4 && offset == intms_off) {
                check(after.at(intms_off) == (before.at(intms_off) | written));
            } else if (width == 4 && offset == intmc_off) {
                check(after.at(intms_off) == (before.at(intms_off) & ~written));
            } else if (width == 4 && offset == csts_off) {
                // Only NSSRO is writable, and it is write-1-to-clear (Base 2.0 Figure 42).
                const std::uint32_t expected_nssro =
                    (written & csts_nssro) != 0 ? 0U : before.at(csts_off) & csts_nssro;
                check((after.at(csts_off) & ~csts_nssro) == (before.at(csts_off) & ~csts_nssro));
                check((after.at(csts_off) & csts_nssro) == expected_nssro);
            }
            break;
        }
        case 3:
        case 4: { // BAR0 read: no side effect; narrow and wide reads agree with 4-byte reads
            is_read = true;
            static constexpr unsigned widths[] = {1, 2, 4, 8, 3};
            const unsigned width = widths[in.take<std::uint8_t>() % 5];
            const std::uint64_t offset = in.take<std::uint16_t>() % bar0;
            const std::uint64_t value = ctrl.mmio_read(offset, width);
            if (width < 8) {
                check(value >> (8 * width) == 0);
            }
            const std::uint64_t dword_at = offset & ~std::uint64_t{3};
            if (width == 8 && offset % 8 == 0) {
                const std::uint64_t expected = r32(offset) | (r32(offset + 4) << 32);
                check(value == 0 || value == expected);
                // A 64-bit register reads the same either way.
                if (offset == cap_off || offset == asq_off || offset == acq_off) {
                    check(value == expected);
                }
            } else if (offset % 4 + width <= 4) {
                const std::uint64_t mask = (std::uint64_t{1} << (8 * width)) - 1U;
                const std::uint64_t expected = (r32(dword_at) >> (8 * (offset % 4))) & mask;
                check(value == 0 || value == expected);
            } else {
                check(value == 0); // straddles two dwords: refused
            }
            if (offset >= nvmekit::spec::doorbell_base_offset && offset < msix_table) {
                check(value == 0); // doorbells are write-only
            }
            break;
        }
        case 5:
            ctrl.poll();
            may_change_registers = true;
            shst_may_advance = true;
            if (enable_must_succeed && clock.now() - enable_time >= config.ready_delay) {
                // A valid enable completes at the first poll after its ready delay (Base 2.0
                // 3.5.1): RDY = 1, and no fatal status from the configuration.
                enable_must_succeed = false;
                const auto csts_now = static_cast<std::uint32_t>(r32(csts_off));
                check((csts_now & csts_rdy) != 0);
                check(doorbell_since_enable || (csts_now & csts_cfs) == 0);
            }
            break;
        case 6: clock.advance(std::chrono::microseconds{in.take<std::uint16_t>()} * 16); break;
        case 7: {
            const auto which = in.take<std::uint8_t>();
            if (which % 2 == 0) {
                ctrl.function_level_reset();
                reset = power_on_reset = may_change_registers = true;
            } else {
                // NSSR written with "NVMe", or with another value (which must do nothing).
                const std::uint32_t value = which % 4 == 1 ? 0x4e564d65U : in.take<std::uint32_t>();
                ctrl.mmio_write(nssr_off, 4, value);
                if (value == 0x4e564d65U && nssr_supported) {
                    reset = power_on_reset = may_change_registers = true;
                }
            }
            break;
        }
        }

        const snapshot after = take_snapshot();
        // CAP, VS and CRTO are read-only constants.
        check(after.at64(cap_off) == cap && after.at(vs_off) == vs && after.at(crto_off) == crto);
        // INTMC reads the mask INTMS reads (Base 2.0 Figure 39).
        check(after.at(intms_off) == after.at(intmc_off));
        // Reserved bits read 0.
        const std::uint32_t cc = after.at(cc_off);
        const std::uint32_t csts = after.at(csts_off);
        check((cc & cc_reserved) == 0 && ((cap & cap_crims) != 0 || (cc & cc_crime) == 0));
        check((csts & csts_reserved) == 0 && shst(csts) != 3);
        check((after.at(aqa_off) & aqa_reserved) == 0);
        check((after.at(asq_off) & queue_base_reserved) == 0 &&
              (after.at(acq_off) & queue_base_reserved) == 0);
        for (std::uint64_t offset = 0; offset < 0x6c; offset += 4) {
            if (reads_as_zero(offset)) {
                check(after.at(offset) == 0);
            }
        }
        for (const auto value : after.pmr) {
            check(value == 0);
        }
        // Reserved space reads 0: a rotating slice of 000h..FFFh each step.
        for (int i = 0; i < 16; ++i) {
            const std::uint64_t offset = (sweep++ * 4) % nvmekit::spec::doorbell_base_offset;
            if (!defined_dword(offset)) {
                check(r32(offset) == 0);
            }
        }

        if (is_read || !may_change_registers) {
            check(after == before); // reads, ignored writes, doorbells, MSI-X and clock changes
        }
        if (cc_write != ~std::uint64_t{0}) {
            enable_must_succeed = false; // a later CC write (a reset or a shutdown) ends the check
            // A CC write never touches the admin queue registers (Base 2.0 3.7.2).
            check(after.at(aqa_off) == before.at(aqa_off));
            check(after.at64(asq_off) == before.at64(asq_off) && after.at64(acq_off) == before.at64(acq_off));
            if ((before.at(cc_off) & 1U) == 0 && (cc_write & 1U) != 0) {
                enabled_since_reset = true;
                enable_time = clock.now();
                enable_runnable = runnable(cap, static_cast<std::uint32_t>(cc_write), before.at(aqa_off),
                                           before.at64(asq_off), before.at64(acq_off));
                // IOSQES = 6 and IOCQES = 4: valid whether or not 0 is also accepted at enable.
                const bool entry_sizes = ((cc_write >> 16) & 0xfU) == 6 && ((cc_write >> 20) & 0xfU) == 4;
                const bool no_shutdown = ((cc_write >> 14) & 3U) == 0;
                enable_must_succeed =
                    enable_runnable && entry_sizes && no_shutdown && (before.at(csts_off) & csts_cfs) == 0;
                doorbell_since_enable = false;
            }
        }
        if (reset) {
            enabled_since_reset = false;
            enable_must_succeed = false;
            // RDY, CFS and SHST read 0 once the reset has been requested (Base 2.0 3.7).
            check((csts & (csts_rdy | csts_cfs)) == 0 && shst(csts) == 0);
        }
        if (power_on_reset) {
            // FLR and NSSR: power-on values, with CSTS.NSSRO = 1 after an NSSR (Base 2.0 Figure 42).
            for (std::uint64_t offset = intms_off; offset < 0x38; offset += 4) {
                if (offset != csts_off) {
                    check(after.at(offset) == 0);
                }
            }
            check((csts & ~csts_nssro) == 0);
        }
        // RDY = 1 only while CC.EN = 1, after an enable with a runnable configuration whose ready
        // delay has passed (Base 2.0 3.5.1, Figure 42 RDY).
        if ((csts & csts_rdy) != 0) {
            check((cc & 1U) != 0);
            if ((before.at(csts_off) & csts_rdy) == 0) {
                check(enabled_since_reset && enable_runnable);
                check(clock.now() - enable_time >= config.ready_delay);
            }
        }
        // SHST: 00b -> 01b -> 10b, or 00b -> 10b, on a CC write or as shutdown processing
        // finishes; back to 00b only through a reset (Base 2.0 Figure 42 SHST).
        const unsigned old_shst = shst(before.at(csts_off));
        const unsigned new_shst = shst(csts);
        if (old_shst != new_shst) {
            if (new_shst == 0) {
                check(reset);
            } else {
                check(new_shst > old_shst && shst_may_advance);
                check(old_shst != 0 || cc_write != ~std::uint64_t{0}); // 00b leaves only on a CC write
                check(((cc >> 14) & 3U) != 0 || reset);                // after SHN was written
            }
        }
        before = after;
    }

    // Let the controller settle, then reset it: every request must come back and RDY read 0.
    for (int i = 0; i < 4; ++i) {
        ctrl.poll();
    }
    ctrl.mmio_write(cc_off, 4, 0);
    ctrl.poll();
    check((r32(csts_off) & csts_rdy) == 0);
    check(ctrl.requests_in_use() == 0 && ctrl.io_outstanding() == 0);
    for (std::uint64_t offset = 0; offset < nvmekit::spec::doorbell_base_offset; offset += 4) {
        if (!defined_dword(offset)) {
            check(r32(offset) == 0);
        }
    }
    return 0;
}
