#include <nvmekit/controller.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nvmekit/testing/async_dma.hpp>
#include <nvmekit/testing/flat_memory.hpp>
#include <nvmekit/testing/host.hpp>
#include <nvmekit/testing/manual_clock.hpp>
#include <nvmekit/testing/recording_dma.hpp>
#include <nvmekit/testing/recording_msix.hpp>
#include <nvmekit/testing/test_backend.hpp>

#include "controller_fixture.hpp"
#include "splitmix64.hpp"

/// A reset storm against the composed controller: a lean host drives random reads, writes and
/// flushes (PRP and SGL data pointers) on up to 8 I/O SQs sharing up to 4 small CQs, against a
/// namespace whose backend completes late and out of order, with three staging buffers for a
/// DMA provider that often refuses to map, and with interrupt coalescing. At random points
/// (during the ready delay, the admin bring-up, I/O, a quiesce or a shutdown) it resets the
/// controller: CC.EN 1 -> 0, Function Level Reset, NVM Subsystem Reset, or a normal or abrupt
/// shutdown (CC.SHN) followed by CC.EN 1 -> 0. Over four seeds that is more than 10,000 resets.
///
/// What is checked:
/// - once the host reads CSTS.RDY = 0, no DMA write reaches any completion queue's memory, no
///   byte of it changes and no interrupt (MSI-X or INTx) is raised until the host reads RDY = 1
///   again;
/// - right after a reset only commands still in the backend hold requests (requests_in_use() ==
///   io_outstanding()); once the backend has returned everything, requests_in_use() and
///   io_outstanding() are 0, and every backend request was completed exactly once;
/// - between resets every completion names a command the host has outstanding in this epoch, on
///   an SQ bound to that CQ, with a plausible SQ Head and status Successful Completion; every
///   command completes when the host waits for it; reads return what the host wrote (a shadow of
///   the media, resynchronised from the backend for ranges written by commands a reset dropped);
/// - a normal shutdown reports SHST = 10b only after the cache flush it started has completed;
/// - after the storm a clean bring-up, Identify Controller and a verified write and read work.

namespace {
namespace reset_storm_test {

namespace nt = nvmekit::testing;
namespace spec = nvmekit::spec;
using namespace std::chrono_literals;
using nvmekit_test::splitmix64;

/// Fills `bytes` with the data stream of `seed`: a write's payload is known from its seed alone.
void fill_pattern(std::span<std::byte> bytes, std::uint64_t seed) noexcept { splitmix64{seed}.fill(bytes); }

// ---- a backend that accounts for every request ------------------------------------------------

/// Every block request the controller hands the backend, from submit() to its completion: it
/// catches a request completed twice, one never completed, and one submitted again while the
/// backend still holds it.
class backend_ledger {
public:
    void on_submit(nvmekit::block_request& request)
    {
        ++submitted_;
        auto [entry, inserted] = in_backend_.try_emplace(&request);
        if (!inserted) {
            ++resubmitted_while_outstanding_;
        }
        ++entry->second.count;
        entry->second.complete = request.complete;
        entry->second.context = request.context;
        entry->second.sequence = submitted_;
        entry->second.operation = request.operation;
        request.complete = &on_complete;
        request.context = this;
    }

    [[nodiscard]] std::size_t outstanding() const noexcept { return in_backend_.size(); }
    [[nodiscard]] std::uint64_t submitted() const noexcept { return submitted_; }
    [[nodiscard]] std::uint64_t completed() const noexcept { return completed_; }
    [[nodiscard]] std::uint64_t unknown_completions() const noexcept { return unknown_completions_; }
    [[nodiscard]] std::uint64_t resubmitted_while_outstanding() const noexcept
    {
        return resubmitted_while_outstanding_;
    }

    /// Flush requests submitted after the `sequence`-th submission that the backend still holds.
    [[nodiscard]] std::size_t flushes_outstanding_after(std::uint64_t sequence) const noexcept
    {
        return static_cast<std::size_t>(
            std::count_if(in_backend_.begin(), in_backend_.end(), [&](const auto& entry) {
                return entry.second.operation == nvmekit::block_operation::flush &&
                       entry.second.sequence > sequence;
            }));
    }

private:
    struct entry {
        void (*complete)(nvmekit::block_request&, nvmekit::block_status) = nullptr;
        void* context = nullptr;
        std::uint64_t sequence = 0;
        nvmekit::block_operation operation{};
        unsigned count = 0;
    };

    static void on_complete(nvmekit::block_request& request, nvmekit::block_status status)
    {
        auto& self = *static_cast<backend_ledger*>(request.context);
        const auto found = self.in_backend_.find(&request);
        if (found == self.in_backend_.end()) {
            ++self.unknown_completions_; // a completion of a request the backend no longer holds
            return;
        }
        ++self.completed_;
        const entry held = found->second;
        request.complete = held.complete;
        request.context = held.context;
        const bool still_held = --found->second.count != 0;
        if (!still_held) {
            self.in_backend_.erase(found);
        }
        held.complete(request, status);
        if (still_held) {
            // The same request was submitted again while held: its next completion is ours too.
            request.complete = &on_complete;
            request.context = &self;
        }
    }

    std::unordered_map<nvmekit::block_request*, entry> in_backend_;
    std::uint64_t submitted_ = 0;
    std::uint64_t completed_ = 0;
    std::uint64_t unknown_completions_ = 0;
    std::uint64_t resubmitted_while_outstanding_ = 0;
};

/// A test_backend seen through the ledger.
class counting_backend {
public:
    counting_backend(nt::test_backend<>& inner, backend_ledger& ledger) noexcept
        : inner_{&inner}, ledger_{&ledger}
    {}
    [[nodiscard]] std::uint64_t capacity_bytes() const { return inner_->capacity_bytes(); }
    void submit(nvmekit::block_request& request)
    {
        ledger_->on_submit(request);
        inner_->submit(request);
    }
    std::size_t poll() { return inner_->poll(); }
    [[nodiscard]] bool has_volatile_cache() const { return inner_->has_volatile_cache(); }
    [[nodiscard]] std::size_t outstanding() const { return inner_->outstanding(); }

private:
    nt::test_backend<>* inner_;
    backend_ledger* ledger_;
};
static_assert(nvmekit::check_block_backend<counting_backend>());

struct storm_traits : nvmekit::default_traits {
    using dma = nt::recording_dma<nt::flat_memory>;
    using interrupts = nt::recording_msix;
    using clock = nt::manual_clock;
    using backend = counting_backend;
    // 16 KiB transfers, 8 requests per SQ (deeper SQs wait in host memory) and 3 staging buffers,
    // so commands wait for one.
    static constexpr nvmekit::limits limits{.io_queues = 8,
                                            .queue_entries = 64,
                                            .mdts = 2,
                                            .msix_vectors = 9,
                                            .aerl = 3,
                                            .commands_per_queue = 8,
                                            .max_segments = 16,
                                            .staging_buffers = 3};
};
/// The storm's DMA completing late and out of order (0 to 3 us each), over the recording DMA
/// whose accesses the storm scans: the controller's asynchronous DMA path.
struct async_recording_dma : nt::async_dma<nt::recording_dma<nt::flat_memory>> {
    async_recording_dma(nt::recording_dma<nt::flat_memory>& recording, nt::manual_clock& clock,
                        std::uint64_t seed)
        : async_dma{recording, clock, 4096, {.min_delay = 0ns, .max_delay = 3us, .seed = seed}}
    {}
};

struct async_storm_traits : storm_traits {
    using dma = async_recording_dma;
};

/// The SQE builders (the same for every controller type).
using host_type = nt::in_process_host<nvmekit::controller<storm_traits>>;

// ---- host memory layout --------------------------------------------------------------------------

constexpr std::uint64_t page = 4096;
constexpr std::uint64_t memory_base = 0x1'0000'0000;
constexpr std::size_t memory_bytes = std::size_t{12} << 20;
constexpr std::uint64_t admin_sq_address = memory_base;
constexpr std::uint64_t admin_cq_address = memory_base + page;
constexpr std::uint64_t io_sq_base = memory_base + 0x1'0000; // one page per SQ
constexpr std::uint64_t io_cq_base = memory_base + 0x2'0000; // one page per CQ
constexpr std::uint64_t identify_address = memory_base + 0x3'0000;
constexpr std::uint64_t prp_list_base = memory_base + 0x4'0000;     // one page per buffer
constexpr std::uint64_t sgl_segment_base = memory_base + 0x14'0000; // 256 bytes per buffer
constexpr std::uint64_t data_base = memory_base + 0x20'0000;        // 32 KiB per buffer
constexpr std::uint64_t data_region_bytes = 0x8000;
constexpr std::uint32_t buffer_count = 256;
static_assert(prp_list_base + buffer_count * page <= sgl_segment_base);
static_assert(sgl_segment_base + buffer_count * 256U <= data_base);
static_assert(data_base + buffer_count * data_region_bytes <= memory_base + memory_bytes);

constexpr std::uint16_t max_io_queues = storm_traits::limits.io_queues;
constexpr std::uint32_t admin_entries = 16;
constexpr std::uint32_t max_sq_entries = storm_traits::limits.queue_entries;
constexpr std::size_t command_slots = 128; ///< host table per SQ: cid bits 6:0
constexpr std::uint64_t cq_region_bytes = std::uint64_t{max_io_queues} * page;

[[nodiscard]] constexpr std::uint64_t sq_address(std::uint16_t qid) noexcept
{
    return qid == 0 ? admin_sq_address : io_sq_base + (qid - 1U) * page;
}
[[nodiscard]] constexpr std::uint64_t cq_address(std::uint16_t qid) noexcept
{
    return qid == 0 ? admin_cq_address : io_cq_base + (qid - 1U) * page;
}

// ---- the namespace ----------------------------------------------------------------------------------

constexpr std::uint32_t block_bytes = 512; // LBA format 0
constexpr std::uint32_t slot_blocks = 32;  // one slot is one MDTS transfer (16 KiB)
constexpr std::uint32_t slot_bytes = slot_blocks * block_bytes;
constexpr std::uint32_t slot_count = 64;
constexpr std::uint64_t namespace_bytes = std::uint64_t{slot_count} * slot_bytes;
static_assert(slot_bytes == storm_traits::limits.max_transfer_bytes());

// ---- the storm ----------------------------------------------------------------------------------------

enum class reset_kind : std::uint8_t {
    controller,
    function_level,
    subsystem,
    normal_shutdown,
    abrupt_shutdown
};
constexpr std::size_t reset_kind_count = 5;
constexpr std::array<const char*, reset_kind_count> reset_kind_names{
    "controller reset (CC.EN 1->0)", "Function Level Reset", "NVM Subsystem Reset",
    "normal shutdown, then CC.EN 1->0", "abrupt shutdown, then CC.EN 1->0"};

/// One seed's setup.
struct storm_setup {
    std::uint64_t seed;
    std::uint8_t doorbell_stride;
    std::chrono::nanoseconds ready_delay;
    unsigned map_refusal_percent; ///< how often the DMA provider refuses map(): those commands are staged
    bool volatile_cache;
    std::uint64_t resets;
};

/// What one seed did, for the summary and the coverage checks.
struct storm_counts {
    std::array<std::uint64_t, reset_kind_count> resets{};
    std::uint64_t resets_with_backend_io = 0;       ///< commands were in the backend
    std::uint64_t resets_with_waiting_commands = 0; ///< commands waited for a staging buffer or CQ space
    std::uint64_t resets_during_bring_up = 0;       ///< before the I/O queues were all created
    std::uint64_t resets_during_shutdown_processing = 0;
    std::uint64_t resets_with_coalescing = 0;
    std::uint64_t bring_ups_without_drain = 0;
    std::uint64_t drains = 0;
    std::uint64_t quiesces = 0;
    std::uint64_t commands = 0;
    std::uint64_t completions = 0;
    std::uint64_t reads_verified = 0;
    std::uint64_t sgl_commands = 0;
    std::uint64_t dropped_by_reset = 0;
    std::uint64_t late_data_writes = 0; ///< DMA writes to data buffers after RDY read 0
    std::uint64_t steps = 0;
};

enum class phase : std::uint8_t { quiet, enabling, admin, io, quiesce, shutdown };
enum class command_kind : std::uint8_t { read, write, flush, admin, async_event };
constexpr std::uint32_t no_buffer = 0xffff'ffffU;
constexpr std::size_t max_pieces = 4;

struct data_piece {
    std::uint64_t address = 0;
    std::uint32_t length = 0;
};

/// A command the host has outstanding.
struct host_command {
    bool active = false;
    command_kind kind = command_kind::read;
    std::uint32_t buffer = no_buffer;
    std::uint32_t slot = 0;
    std::uint32_t first_block = 0;
    std::uint32_t blocks = 0;
    std::uint64_t data_seed = 0;
    std::size_t admin_step = 0;
    std::uint8_t piece_count = 0;
    std::array<data_piece, max_pieces> pieces{};
};

struct host_sq {
    bool exists = false;
    std::uint16_t cqid = 0;
    std::uint32_t entries = 0;
    std::uint32_t tail = 0;
    std::uint32_t head = 0;
    std::uint32_t outstanding = 0;
    std::uint32_t next_index = 0;
    bool doorbell_due = false;
    std::array<host_command, command_slots> commands{};
};

struct host_cq {
    bool exists = false;
    std::uint32_t entries = 0;
    std::uint32_t head = 0;
    bool phase = true;
};

/// A step of the admin bring-up.
struct admin_step {
    enum class kind : std::uint8_t {
        number_of_queues,
        coalescing,
        async_event,
        create_cq,
        create_sq,
        identify
    } what;
    std::uint16_t qid = 0;
    std::uint16_t cqid = 0;
    std::uint32_t entries = 0;
    std::uint32_t value = 0;
};

/// Per LBA slot: who uses it, and whether its media content is unknown (a write of it was dropped
/// by a reset and may still land).
struct lba_slot {
    std::uint16_t readers = 0;
    bool writer = false;
    bool unknown = false;
};

template <typename Traits>
class storm {
public:
    using controller_type = nvmekit::controller<Traits>;
    using subsystem_type = typename controller_type::subsystem_type;
    static constexpr bool async_dma = controller_type::dma_completes_later;

    explicit storm(const storm_setup& setup)
        : setup_{setup}
        , rng_{setup.seed}
        , storage_{clock_, namespace_bytes, 256,
                   nt::test_backend_options{.delay = 20us,
                                            .jitter = 400us,
                                            .seed = setup.seed ^ 0xb10c,
                                            .volatile_cache = setup.volatile_cache}}
        , ctrl_{dma_, msix_, clock_, subsystem_, config_for(setup)}
    {
        memory_.add_range(memory_base, memory_bytes);
        subsystem_.add_namespace(counting_backend{storage_, ledger_});
        shadow_.resize(namespace_bytes);
        slots_.resize(slot_count);
        for (std::uint32_t buffer = buffer_count; buffer-- > 0;) {
            free_buffers_.push_back(buffer);
        }
        scratch_.resize(slot_bytes);
        if (setup.map_refusal_percent != 0) {
            recording_.fail_randomly(setup.map_refusal_percent / 100.0, setup.seed ^ 0xd3a,
                                     nt::access_kind::map);
        }
        recording_.set_recording(false);
        const auto cap_offset = static_cast<std::uint64_t>(spec::register_offset::cap);
        const spec::cap_register cap{ctrl_.mmio_read(cap_offset, 4) |
                                     (ctrl_.mmio_read(cap_offset + 4, 4) << 32)};
        dstrd_ = cap.get(cap.dstrd);
        nssr_supported_ = cap.get(cap.nssrs);
        needs_msix_ = needs_admin_registers_ = true;
        enter_quiet(false);
    }

    storm(const storm&) = delete;
    storm& operator=(const storm&) = delete;

    ~storm()
    {
        // The controller must not be destroyed with backend I/O or DMA outstanding.
        for (int i = 0; i < 100000 && !ctrl_.dma_idle(); ++i) {
            clock_.advance(1ms);
            ctrl_.poll();
        }
        for (int i = 0; i < 100000 && ctrl_.io_outstanding() != 0; ++i) {
            clock_.advance(1ms);
            storage_.poll();
        }
    }

    /// Runs until the setup's number of resets is reached, then checks a clean bring-up.
    void run()
    {
        const std::uint64_t step_bound = setup_.resets * 400U;
        while (total_resets() < setup_.resets && !fatal_) {
            step(true);
            if (counts_.steps > step_bound) {
                fail(fmt::format("{} steps without reaching {} resets", counts_.steps, setup_.resets), true);
            }
        }
        if (!fatal_) {
            finish();
        }
    }

    /// The first 20 failures, and how many there were.
    [[nodiscard]] const std::vector<std::string>& failures() const noexcept { return failures_; }
    [[nodiscard]] std::size_t failure_count() const noexcept { return failure_count_; }
    [[nodiscard]] const storm_counts& counts() const noexcept { return counts_; }
    [[nodiscard]] const controller_type& controller() const noexcept { return ctrl_; }
    [[nodiscard]] const backend_ledger& ledger() const noexcept { return ledger_; }
    [[nodiscard]] std::uint64_t total_resets() const noexcept
    {
        std::uint64_t total = 0;
        for (const auto count : counts_.resets) {
            total += count;
        }
        return total;
    }

private:
    [[nodiscard]] static nvmekit::controller_config config_for(const storm_setup& setup)
    {
        nvmekit::controller_config config{};
        config.doorbell_stride = setup.doorbell_stride;
        config.ready_delay = setup.ready_delay;
        config.subsystem_reset_supported = true; // CAP.NSSRS: the host may write NSSR
        return config;
    }

    /// Records a failure; a fatal one (the host cannot go on) ends the storm.
    void fail(std::string what, bool fatal = false)
    {
        fatal_ = fatal_ || fatal;
        ++failure_count_;
        if (failures_.size() < 20) {
            failures_.push_back(fmt::format("seed {:#x}, step {}, epoch {}, phase {}: {}", setup_.seed,
                                            counts_.steps, epoch_, static_cast<int>(phase_), what));
        }
    }

    // ---- registers ------------------------------------------------------------------------------

    std::uint32_t read32(spec::register_offset offset)
    {
        return static_cast<std::uint32_t>(ctrl_.mmio_read(static_cast<std::uint64_t>(offset), 4));
    }
    void write32(spec::register_offset offset, std::uint32_t value)
    {
        ctrl_.mmio_write(static_cast<std::uint64_t>(offset), 4, value);
    }
    void write64(spec::register_offset offset, std::uint64_t value)
    {
        const auto base = static_cast<std::uint64_t>(offset);
        ctrl_.mmio_write(base, 4, value & 0xffff'ffffU);
        ctrl_.mmio_write(base + 4, 4, value >> 32);
    }
    spec::csts_register csts() { return spec::csts_register{read32(spec::register_offset::csts)}; }
    spec::cc_register cc() { return spec::cc_register{read32(spec::register_offset::cc)}; }

    // ---- one step ---------------------------------------------------------------------------------

    /// The host acts (and may reset the controller), time passes, the controller polls, and the
    /// host reaps what was posted.
    void step(bool inject)
    {
        ++counts_.steps;
        if (inject) {
            maybe_reset();
        }
        act();
        const std::uint64_t advance = rng_.percent(15) ? 0 : rng_.below(120);
        clock_.advance(std::chrono::microseconds{advance});
        ctrl_.poll();
        if (quiet_) {
            check_quiet();
        }
        reap_all();
    }

    void maybe_reset()
    {
        bool reset = false;
        switch (phase_) {
        case phase::quiet:
        case phase::shutdown: return; // the shutdown's own reset is in act()
        case phase::enabling: reset = rng_.one_in(6); break;
        case phase::admin: reset = rng_.one_in(20); break;
        case phase::io: reset = rng_.one_in(18); break;
        case phase::quiesce: reset = rng_.one_in(40); break;
        }
        if (reset) {
            inject_reset(random_kind());
        }
    }

    reset_kind random_kind()
    {
        const auto roll = rng_.below(100);
        if (roll < 30) {
            return reset_kind::controller;
        }
        if (roll < 50) {
            return reset_kind::function_level;
        }
        if (roll < 70) {
            return nssr_supported_ ? reset_kind::subsystem : reset_kind::controller;
        }
        return roll < 85 ? reset_kind::normal_shutdown : reset_kind::abrupt_shutdown;
    }

    void act()
    {
        switch (phase_) {
        case phase::quiet: act_quiet(); break;
        case phase::enabling: act_enabling(); break;
        case phase::admin: act_admin(); break;
        case phase::io: act_io(); break;
        case phase::quiesce: act_quiesce(); break;
        case phase::shutdown: act_shutdown(); break;
        }
    }

    // ---- resets -----------------------------------------------------------------------------------

    void inject_reset(reset_kind kind)
    {
        // What the reset lands on (io_outstanding() and requests_in_use() before it).
        if (ctrl_.io_outstanding() != 0) {
            ++counts_.resets_with_backend_io;
        }
        if (ctrl_.requests_in_use() > ctrl_.io_outstanding()) {
            ++counts_.resets_with_waiting_commands;
        }
        if (phase_ == phase::enabling || phase_ == phase::admin) {
            ++counts_.resets_during_bring_up;
        }
        if (coalescing_set_) {
            ++counts_.resets_with_coalescing;
        }
        pending_kind_ = kind;
        switch (kind) {
        case reset_kind::controller: disable(); break;
        case reset_kind::function_level:
            ctrl_.function_level_reset();
            needs_msix_ = needs_admin_registers_ = true;
            after_reset();
            break;
        case reset_kind::subsystem:
            write32(spec::register_offset::nssr, spec::nvm_subsystem_reset_value);
            needs_admin_registers_ = true;
            after_reset();
            break;
        case reset_kind::normal_shutdown:
        case reset_kind::abrupt_shutdown: {
            auto value = cc();
            value.set(value.shn, kind == reset_kind::normal_shutdown ? spec::shutdown_notification::normal
                                                                     : spec::shutdown_notification::abrupt);
            shutdown_sequence_ = ledger_.submitted();
            write32(spec::register_offset::cc, value.raw);
            phase_ = phase::shutdown;
            shutdown_steps_ = 0;
            break;
        }
        }
    }

    /// CC.EN = 0 (SHN cleared): a Controller Reset.
    void disable()
    {
        auto value = cc();
        value.set(value.en, false).set(value.shn, spec::shutdown_notification::none);
        write32(spec::register_offset::cc, value.raw);
        after_reset();
    }

    /// The host waits for CSTS.RDY = 0, then forgets every command it had outstanding.
    void after_reset()
    {
        bool ready = csts().get(spec::csts_register::rdy);
        for (int i = 0; ready && i < 100; ++i) {
            clock_.advance(100us);
            ctrl_.poll();
            ready = csts().get(spec::csts_register::rdy);
        }
        if (ready) {
            fail(fmt::format("CSTS.RDY still reads 1 after a {}",
                             reset_kind_names[static_cast<std::size_t>(pending_kind_)]),
                 true);
            return;
        }
        ++counts_.resets[static_cast<std::size_t>(pending_kind_)];
        drop_outstanding();
        enter_quiet(true);
    }

    void drop_outstanding()
    {
        for (std::uint16_t qid = 0; qid <= max_io_queues; ++qid) {
            auto& sq = sqs_[qid];
            for (auto& command : sq.commands) {
                if (!command.active) {
                    continue;
                }
                ++counts_.dropped_by_reset;
                command.active = false;
                if (command.kind == command_kind::write) {
                    slots_[command.slot].writer = false;
                    slots_[command.slot].unknown = true; // the write may still land
                } else if (command.kind == command_kind::read) {
                    --slots_[command.slot].readers;
                }
                if (command.buffer != no_buffer) {
                    quarantine_.push_back(command.buffer); // a dropped command may still use it
                }
            }
            sq = host_sq{};
            cqs_[qid] = host_cq{};
        }
        io_outstanding_host_ = 0;
        admin_busy_ = false;
        coalescing_set_ = false;
    }

    // ---- the quiet window: from RDY = 0 to RDY = 1 ------------------------------------------------

    void enter_quiet(bool after_a_reset)
    {
        phase_ = phase::quiet;
        quiet_ = true;
        recording_.clear();
        recording_.set_recording(true);
        dma_scanned_ = 0;
        msix_.clear();
        intx_transitions_ = msix_.intx_transitions();
        snapshot(cq_snapshot_);
        if (after_a_reset && ctrl_.requests_in_use() != ctrl_.io_outstanding()) {
            // Every command this test sends holds at most one backend request, so a request in use
            // that is not in the backend waited for a staging buffer or CQ space, or was never
            // returned to its pool.
            fail(fmt::format("requests_in_use() = {} but io_outstanding() = {} right after the reset",
                             ctrl_.requests_in_use(), ctrl_.io_outstanding()));
        }
        drain_ = !after_a_reset || rng_.percent(75) || ledger_.outstanding() > 96;
        quiet_polls_ = static_cast<int>(rng_.below(4));
        quiet_steps_ = 0;
    }

    void snapshot(std::vector<std::byte>& out)
    {
        const auto admin = memory_.bytes(admin_cq_address, page);
        const auto io = memory_.bytes(io_cq_base, cq_region_bytes);
        out.assign(admin.begin(), admin.end());
        out.insert(out.end(), io.begin(), io.end());
    }

    [[nodiscard]] static bool in_cq_memory(std::uint64_t address, std::uint64_t length) noexcept
    {
        const auto overlaps = [&](std::uint64_t first, std::uint64_t bytes) {
            return address < first + bytes && first < address + length;
        };
        return overlaps(admin_cq_address, page) || overlaps(io_cq_base, cq_region_bytes);
    }

    /// Since the host read RDY = 0: no DMA write to CQ memory, no interrupt.
    void check_quiet()
    {
        const auto accesses = recording_.accesses();
        for (; dma_scanned_ < accesses.size(); ++dma_scanned_) {
            const auto& access = accesses[dma_scanned_];
            if (access.kind != nt::access_kind::write) {
                continue;
            }
            if (in_cq_memory(access.address, access.length)) {
                fail(fmt::format(
                    "DMA write of {} bytes at {:#x} (completion queue memory) after CSTS.RDY read 0",
                    access.length, access.address));
            } else {
                // A read the reset aborted must not copy its staged data to the host buffer when
                // the backend finishes it (Base 2.0 3.7.2: outstanding commands are aborted; the
                // host may already reuse the buffer). Zero-copy reads cannot be seen here.
                ++counts_.late_data_writes;
                fail(fmt::format("DMA write of {} bytes at {:#x} (a data buffer) after CSTS.RDY read 0",
                                 access.length, access.address));
            }
        }
        if (!msix_.events().empty()) {
            fail(fmt::format("MSI-X vector {} raised after CSTS.RDY read 0", msix_.events().front().vector));
            msix_.clear();
        }
        if (msix_.intx_level() || msix_.intx_transitions() != intx_transitions_) {
            fail("INTx asserted after CSTS.RDY read 0");
        }
        if (phase_ == phase::quiet && ctrl_.requests_in_use() != ctrl_.io_outstanding()) {
            fail(fmt::format("requests_in_use() = {} but io_outstanding() = {} while CSTS.RDY reads 0",
                             ctrl_.requests_in_use(), ctrl_.io_outstanding()));
        }
    }

    void act_quiet()
    {
        ++quiet_steps_;
        if (drain_) {
            if (ledger_.outstanding() != 0) {
                if (quiet_steps_ > 20000) {
                    fail(fmt::format("the backend still holds {} requests after {} steps",
                                     ledger_.outstanding(), quiet_steps_),
                         true);
                }
                return;
            }
            check_drained();
        } else if (quiet_polls_-- > 0) {
            return;
        } else {
            ++counts_.bring_ups_without_drain;
        }
        start_bring_up();
    }

    /// The backend has returned everything: every request is back in its pool, and the media
    /// content of ranges written by dropped commands is known again.
    void check_drained()
    {
        ++counts_.drains;
        if (ctrl_.requests_in_use() != 0 || ctrl_.io_outstanding() != 0) {
            fail(fmt::format("with the backend empty, requests_in_use() = {} and io_outstanding() = {}",
                             ctrl_.requests_in_use(), ctrl_.io_outstanding()));
        }
        if (storage_.outstanding() != 0 || ledger_.submitted() != ledger_.completed() ||
            ledger_.unknown_completions() != unknown_completions_seen_ ||
            ledger_.resubmitted_while_outstanding() != resubmissions_seen_) {
            // A normal shutdown must not submit a flush request the backend still holds (see
            // shutdown_flush below).
            fail(fmt::format(
                "backend accounting: {} submitted, {} completed, {} completions of requests it did "
                "not hold, {} resubmitted while held, {} outstanding",
                ledger_.submitted(), ledger_.completed(), ledger_.unknown_completions(),
                ledger_.resubmitted_while_outstanding(), storage_.outstanding()));
            unknown_completions_seen_ = ledger_.unknown_completions();
            resubmissions_seen_ = ledger_.resubmitted_while_outstanding();
        }
        for (std::uint32_t slot = 0; slot < slot_count; ++slot) {
            if (slots_[slot].unknown) {
                storage_.peek(std::uint64_t{slot} * slot_bytes,
                              std::span{shadow_}.subspan(slot * slot_bytes, slot_bytes));
                slots_[slot].unknown = false;
            }
        }
        if (counts_.drains % 64 == 0) {
            check_media();
        }
        free_buffers_.insert(free_buffers_.end(), quarantine_.begin(), quarantine_.end());
        quarantine_.clear();
    }

    /// The whole backend against the shadow.
    void check_media()
    {
        for (std::uint32_t slot = 0; slot < slot_count; ++slot) {
            if (slots_[slot].unknown) {
                continue;
            }
            storage_.peek(std::uint64_t{slot} * slot_bytes, scratch_);
            if (!std::equal(scratch_.begin(), scratch_.end(), shadow_.begin() + slot * slot_bytes)) {
                fail(fmt::format("the media of LBA slot {} differs from what completed writes left there",
                                 slot));
            }
        }
    }

    // ---- bring-up -----------------------------------------------------------------------------------

    void start_bring_up()
    {
        std::vector<std::byte> now;
        snapshot(now);
        if (now != cq_snapshot_) {
            fail("completion queue memory changed after CSTS.RDY read 0");
        }
        const auto status = csts();
        if (status.raw & ~0x10U) { // only NSSRO may be set while disabled
            fail(fmt::format("CSTS = {:#x} while disabled", status.raw));
        }
        if (status.get(status.nssro) && rng_.percent(50)) {
            write32(spec::register_offset::csts, 0x10); // NSSRO is write 1 to clear
        }
        if (needs_msix_) {
            ctrl_.set_msix_control(true, false);
            const std::uint64_t table = ctrl_.msix_table_offset();
            for (std::uint16_t vector = 0; vector < storm_traits::limits.msix_vectors; ++vector) {
                const std::uint64_t entry = table + std::uint64_t{vector} * 16U;
                ctrl_.mmio_write(entry, 4, host_type::msi_address);
                ctrl_.mmio_write(entry + 4, 4, 0);
                ctrl_.mmio_write(entry + 8, 4, vector);
                ctrl_.mmio_write(entry + 12, 4, 0);
            }
            needs_msix_ = false;
        }
        if (needs_admin_registers_ || rng_.percent(20)) {
            spec::aqa_register aqa{};
            aqa.set(aqa.asqs, static_cast<std::uint16_t>(admin_entries - 1))
                .set(aqa.acqs, static_cast<std::uint16_t>(admin_entries - 1));
            write32(spec::register_offset::aqa, aqa.raw);
            write64(spec::register_offset::asq, admin_sq_address);
            write64(spec::register_offset::acq, admin_cq_address);
            needs_admin_registers_ = false;
        }
        // Every Phase Tag of the admin CQ reads 0 before CC.EN = 1 (Base 2.0 4.6).
        const auto admin_cq = memory_.bytes(admin_cq_address, page);
        std::fill(admin_cq.begin(), admin_cq.end(), std::byte{0});
        sqs_[0].exists = true;
        sqs_[0].entries = admin_entries;
        cqs_[0] = host_cq{.exists = true, .entries = admin_entries, .head = 0, .phase = true};
        ++epoch_;
        plan_bring_up();
        spec::cc_register value{};
        value.set(value.iosqes, 6).set(value.iocqes, 4).set(value.en, true);
        write32(spec::register_offset::cc, value.raw);
        phase_ = phase::enabling;
        enabling_steps_ = 0;
    }

    void plan_bring_up()
    {
        script_.clear();
        script_at_ = 0;
        ncq_ = static_cast<std::uint16_t>(rng_.between(1, 4));
        nsq_ = static_cast<std::uint16_t>(rng_.between(ncq_, max_io_queues));
        if (final_bring_up_ || rng_.percent(80)) {
            script_.push_back({.what = admin_step::kind::number_of_queues,
                               .value = spec::number_of_queues::from_counts(nsq_, ncq_).raw});
        }
        if (final_bring_up_ || rng_.percent(70)) {
            spec::interrupt_coalescing coalescing{};
            coalescing.set(coalescing.thr, static_cast<std::uint8_t>(rng_.below(8)))
                .set(coalescing.time, static_cast<std::uint8_t>(rng_.below(10)));
            script_.push_back({.what = admin_step::kind::coalescing, .value = coalescing.raw});
        }
        if (rng_.percent(50)) {
            script_.push_back({.what = admin_step::kind::async_event});
        }
        for (std::uint16_t qid = 1; qid <= ncq_; ++qid) {
            script_.push_back({.what = admin_step::kind::create_cq,
                               .qid = qid,
                               .entries = static_cast<std::uint32_t>(
                                   rng_.percent(50) ? rng_.between(2, 8) : rng_.between(9, 64))});
        }
        for (std::uint16_t qid = 1; qid <= nsq_; ++qid) {
            script_.push_back({.what = admin_step::kind::create_sq,
                               .qid = qid,
                               .cqid = static_cast<std::uint16_t>((qid - 1U) % ncq_ + 1U),
                               .entries = static_cast<std::uint32_t>(
                                   rng_.percent(30) ? rng_.between(2, 8) : rng_.between(9, max_sq_entries))});
        }
        if (final_bring_up_) {
            script_.push_back({.what = admin_step::kind::identify});
        }
    }

    void act_enabling()
    {
        const auto status = csts();
        if (status.get(status.cfs)) {
            fail("CSTS.CFS = 1 while enabling", true);
            return;
        }
        if (status.get(status.rdy)) {
            check_quiet(); // up to the read of RDY = 1
            quiet_ = false;
            recording_.set_recording(false);
            recording_.clear();
            phase_ = phase::admin;
            return;
        }
        if (++enabling_steps_ > 2000) {
            fail("CSTS.RDY never read 1 after CC.EN = 1", true);
        }
    }

    // ---- admin --------------------------------------------------------------------------------------

    void act_admin()
    {
        if (admin_busy_) {
            if (++admin_wait_steps_ > 3000) {
                fail("an admin command never completed", true);
            }
            return;
        }
        while (script_at_ < script_.size()) {
            const auto& next = script_[script_at_];
            spec::submission_queue_entry sqe{};
            command_kind kind = command_kind::admin;
            switch (next.what) {
            case admin_step::kind::number_of_queues:
                sqe = host_type::set_features_command(spec::feature_id::number_of_queues, next.value);
                break;
            case admin_step::kind::coalescing:
                sqe = host_type::set_features_command(spec::feature_id::interrupt_coalescing, next.value);
                break;
            case admin_step::kind::async_event:
                sqe = host_type::async_event_request_command();
                kind = command_kind::async_event;
                break;
            case admin_step::kind::create_cq: {
                const auto cq_memory = memory_.bytes(cq_address(next.qid), page);
                std::fill(cq_memory.begin(), cq_memory.end(), std::byte{0});
                sqe = host_type::command(spec::admin_opcode::create_io_cq);
                spec::create_io_cq_view{.queue_id = next.qid,
                                        .queue_size = next.entries,
                                        .physically_contiguous = true,
                                        .interrupts_enabled = true,
                                        .interrupt_vector = next.qid}
                    .encode(sqe);
                sqe.dptr.prp1 = cq_address(next.qid);
                break;
            }
            case admin_step::kind::create_sq:
                sqe = host_type::command(spec::admin_opcode::create_io_sq);
                spec::create_io_sq_view{.queue_id = next.qid,
                                        .queue_size = next.entries,
                                        .physically_contiguous = true,
                                        .cq_id = next.cqid}
                    .encode(sqe);
                sqe.dptr.prp1 = sq_address(next.qid);
                break;
            case admin_step::kind::identify:
                sqe = host_type::identify_command(spec::cns::identify_controller, 0, identify_address);
                break;
            }
            auto* command = place(0, sqe);
            if (command == nullptr) {
                fail("the admin SQ is full", true);
                return;
            }
            command->kind = kind;
            command->admin_step = script_at_;
            ring_sq(0);
            ++script_at_;
            if (kind != command_kind::async_event) {
                admin_busy_ = true;
                admin_wait_steps_ = 0;
                return;
            }
        }
        phase_ = phase::io;
    }

    void on_admin_completion(const host_command& command, const spec::completion_queue_entry& cqe)
    {
        if (command.kind == command_kind::async_event) {
            fail(fmt::format("unexpected Asynchronous Event completion, DW0 {:#x}", cqe.dw0));
            return;
        }
        admin_busy_ = false;
        const auto& done = script_[command.admin_step];
        switch (done.what) {
        case admin_step::kind::number_of_queues:
            // Number of Queues may be set once after every reset; the controller grants what was asked
            // (at most its 8 queue pairs).
            if (cqe.dw0 != done.value) {
                fail(fmt::format("Number of Queues granted {:#x} for a request of {:#x}", cqe.dw0,
                                 done.value));
            }
            break;
        case admin_step::kind::coalescing: coalescing_set_ = true; break;
        case admin_step::kind::create_cq:
            cqs_[done.qid] = host_cq{.exists = true, .entries = done.entries, .head = 0, .phase = true};
            break;
        case admin_step::kind::create_sq: {
            auto& sq = sqs_[done.qid];
            sq = host_sq{};
            sq.exists = true;
            sq.cqid = done.cqid;
            sq.entries = done.entries;
            break;
        }
        case admin_step::kind::identify: check_identify(); break;
        case admin_step::kind::async_event: break;
        }
    }

    void check_identify()
    {
        const auto data = memory_.load<spec::identify_controller>(identify_address);
        const auto expected = ctrl_.identify_controller_data();
        ++identify_checks_;
        if (std::memcmp(&data, &expected, sizeof data) != 0) {
            fail("Identify Controller data differs from the controller's identify_controller_data()");
        }
        if (data.mdts != storm_traits::limits.mdts || data.cntlid != ctrl_.controller_id()) {
            fail(fmt::format("Identify Controller: MDTS {} and CNTLID {}", data.mdts, data.cntlid));
        }
    }

    // ---- I/O ------------------------------------------------------------------------------------------

    void act_io()
    {
        if (final_bring_up_) {
            return; // the final checks submit their own commands
        }
        if (rng_.one_in(60)) {
            phase_ = phase::quiesce;
            quiesce_steps_ = 0;
            ++counts_.quiesces;
            return;
        }
        const auto burst = rng_.below(13);
        for (std::uint64_t i = 0; i < burst; ++i) {
            submit_random_io();
        }
        ring_due_doorbells();
    }

    void act_quiesce()
    {
        if (io_outstanding_host_ == 0) {
            // Everything the host submitted since the bring-up has completed.
            if (rng_.percent(50)) {
                inject_reset(random_kind());
            } else {
                phase_ = phase::io;
            }
            return;
        }
        if (++quiesce_steps_ > 5000) {
            fail(fmt::format("{} I/O commands never completed", io_outstanding_host_), true);
        }
    }

    void act_shutdown()
    {
        const auto status = csts();
        if (status.get(status.shst) == spec::shutdown_status::complete) {
            if (pending_kind_ == reset_kind::normal_shutdown) {
                // Base 2.0 3.6: shutdown processing is complete once volatile data is durable.
                // Also after a Controller Reset during shutdown processing, whose flush may still
                // be in the backend (see shutdown_flush below).
                if (const auto pending = ledger_.flushes_outstanding_after(shutdown_sequence_);
                    pending != 0) {
                    fail(fmt::format(
                        "CSTS.SHST = 10b while {} cache flushes the shutdown started are still in the "
                        "backend",
                        pending));
                }
            }
            disable();
            return;
        }
        if (rng_.one_in(8)) {
            ++counts_.resets_during_shutdown_processing;
            disable(); // CC.EN 1 -> 0 while the shutdown is still processing
            return;
        }
        if (++shutdown_steps_ > 5000) {
            fail("CSTS.SHST never read 10b", true);
        }
    }

    void submit_random_io()
    {
        const auto qid = static_cast<std::uint16_t>(rng_.between(1, nsq_));
        if (!sqs_[qid].exists) {
            return;
        }
        const auto roll = rng_.below(100);
        const command_kind kind = roll < 45   ? command_kind::read
                                  : roll < 90 ? command_kind::write
                                              : command_kind::flush;
        if (kind == command_kind::flush) {
            submit_io(qid, kind, 0, 0, 0, false);
            return;
        }
        for (int attempt = 0; attempt < 4; ++attempt) {
            const auto slot = static_cast<std::uint32_t>(rng_.below(slot_count));
            const auto& state = slots_[slot];
            if (state.unknown || state.writer || (kind == command_kind::write && state.readers != 0)) {
                continue;
            }
            const auto blocks = static_cast<std::uint32_t>(rng_.percent(75) ? rng_.between(1, 8)
                                                                            : rng_.between(9, slot_blocks));
            const auto first = static_cast<std::uint32_t>(rng_.below(slot_blocks - blocks + 1));
            submit_io(qid, kind, slot, first, blocks, rng_.percent(40));
            return;
        }
    }

    [[nodiscard]] static std::uint32_t sq_free(const host_sq& sq) noexcept
    {
        return sq.entries - 1U - (sq.tail + sq.entries - sq.head) % sq.entries;
    }

    /// Writes `sqe` at the tail of SQ `qid` with a command identifier of this epoch; null when
    /// the SQ or the host's table is full. The doorbell is left to the caller.
    host_command* place(std::uint16_t qid, spec::submission_queue_entry sqe)
    {
        auto& sq = sqs_[qid];
        if (!sq.exists || sq_free(sq) == 0) {
            return nullptr;
        }
        std::size_t index = sq.next_index;
        for (std::size_t tries = 0; tries < command_slots && sq.commands[index].active; ++tries) {
            index = (index + 1) % command_slots;
        }
        if (sq.commands[index].active) {
            return nullptr;
        }
        sq.next_index = static_cast<std::uint32_t>((index + 1) % command_slots);
        // CID: the epoch's low 9 bits above the table index, so a completion left from an earlier
        // epoch cannot pass for one of this epoch.
        const auto cid = static_cast<std::uint16_t>(((epoch_ & 0x1ffU) << 7) | index);
        sqe.cdw0.set(spec::command_dword0::cid, cid);
        memory_.store(sq_address(qid) + std::uint64_t{sq.tail} * 64U, sqe);
        sq.tail = (sq.tail + 1) % sq.entries;
        sq.doorbell_due = true;
        ++sq.outstanding;
        auto& command = sq.commands[index];
        command = host_command{};
        command.active = true;
        return &command;
    }

    void ring_sq(std::uint16_t qid)
    {
        auto& sq = sqs_[qid];
        sq.doorbell_due = false;
        ctrl_.mmio_write(spec::sq_tail_doorbell_offset(qid, dstrd_), 4, sq.tail);
    }

    void ring_due_doorbells()
    {
        for (std::uint16_t qid = 1; qid <= max_io_queues; ++qid) {
            if (sqs_[qid].exists && sqs_[qid].doorbell_due) {
                ring_sq(qid);
            }
        }
    }

    /// Builds and places one read, write or flush; the data pointer is PRPs (PRP1 at a random
    /// dword offset, PRP2 a page or a PRP list) or an SGL of 1 to 4 scattered Data Blocks.
    bool submit_io(std::uint16_t qid, command_kind kind, std::uint32_t slot, std::uint32_t first,
                   std::uint32_t blocks, bool sgl)
    {
        spec::submission_queue_entry sqe{};
        std::uint32_t buffer = no_buffer;
        std::array<data_piece, max_pieces> pieces{};
        std::uint8_t piece_count = 0;
        if (kind == command_kind::flush) {
            sqe = host_type::command(spec::nvm_opcode::flush, 1);
        } else {
            if (free_buffers_.empty()) {
                return false;
            }
            buffer = free_buffers_.back();
            const std::uint64_t slba = std::uint64_t{slot} * slot_blocks + first;
            sqe = kind == command_kind::read
                      ? host_type::lba_command<spec::read_view>(spec::nvm_opcode::read, 1, slba, blocks)
                      : host_type::lba_command<spec::write_view>(spec::nvm_opcode::write, 1, slba, blocks);
            const std::uint32_t length = blocks * block_bytes;
            const std::uint64_t region = data_base + std::uint64_t{buffer} * data_region_bytes;
            if (sgl) {
                piece_count = static_cast<std::uint8_t>(rng_.between(1, max_pieces));
                std::uint64_t cursor = region + rng_.below(256);
                std::uint32_t left = length;
                for (std::uint8_t i = 0; i < piece_count; ++i) {
                    const std::uint32_t size =
                        i + 1 == piece_count
                            ? left
                            : static_cast<std::uint32_t>(rng_.between(1, left - (piece_count - i - 1U)));
                    pieces[i] = {cursor, size};
                    cursor += size + rng_.below(100);
                    left -= size;
                }
                if (piece_count == 1) {
                    sqe.dptr = spec::to_data_pointer(
                        spec::sgl_descriptor::data_block(pieces[0].address, pieces[0].length));
                } else {
                    const std::uint64_t segment = sgl_segment_base + std::uint64_t{buffer} * 256U;
                    for (std::uint8_t i = 0; i < piece_count; ++i) {
                        memory_.store(segment + i * 16U,
                                      spec::sgl_descriptor::data_block(pieces[i].address, pieces[i].length));
                    }
                    sqe.dptr =
                        spec::to_data_pointer(spec::sgl_descriptor::last_segment(segment, piece_count * 16U));
                }
                sqe.cdw0.set(spec::command_dword0::psdt, spec::data_pointer_type::sgl_contiguous_metadata);
                ++counts_.sgl_commands;
            } else {
                const std::uint64_t address = region + 4U * rng_.below(page / 4U);
                piece_count = 1;
                pieces[0] = {address, length};
                sqe.dptr.prp1 = address;
                const std::uint64_t first_page = address & ~(page - 1U);
                const std::uint64_t room = first_page + page - address;
                if (length > room) {
                    const std::uint64_t more_pages = (length - room + page - 1U) / page;
                    if (more_pages == 1) {
                        sqe.dptr.prp2 = first_page + page;
                    } else {
                        const std::uint64_t list = prp_list_base + std::uint64_t{buffer} * page;
                        for (std::uint64_t i = 0; i < more_pages; ++i) {
                            memory_.store(list + i * 8U, first_page + (i + 1U) * page);
                        }
                        sqe.dptr.prp2 = list;
                    }
                }
            }
        }
        auto* command = place(qid, sqe);
        if (command == nullptr) {
            return false;
        }
        command->kind = kind;
        command->slot = slot;
        command->first_block = first;
        command->blocks = blocks;
        command->piece_count = piece_count;
        command->pieces = pieces;
        if (buffer != no_buffer) {
            free_buffers_.pop_back();
            command->buffer = buffer;
        }
        if (kind == command_kind::write) {
            command->data_seed = rng_.next();
            const auto payload = std::span{scratch_}.first(std::size_t{blocks} * block_bytes);
            fill_pattern(payload, command->data_seed);
            scatter(*command, payload);
            slots_[slot].writer = true;
        } else if (kind == command_kind::read) {
            for (std::uint8_t i = 0; i < piece_count; ++i) {
                const auto bytes = memory_.bytes(pieces[i].address, pieces[i].length);
                std::fill(bytes.begin(), bytes.end(), std::byte{0xee});
            }
            ++slots_[slot].readers;
        }
        ++io_outstanding_host_;
        ++counts_.commands;
        return true;
    }

    void scatter(const host_command& command, std::span<const std::byte> payload)
    {
        std::size_t at = 0;
        for (std::uint8_t i = 0; i < command.piece_count; ++i) {
            const auto bytes = memory_.bytes(command.pieces[i].address, command.pieces[i].length);
            std::copy_n(payload.begin() + static_cast<std::ptrdiff_t>(at), bytes.size(), bytes.begin());
            at += bytes.size();
        }
    }

    void gather(const host_command& command, std::span<std::byte> out)
    {
        std::size_t at = 0;
        for (std::uint8_t i = 0; i < command.piece_count; ++i) {
            const auto bytes = memory_.bytes(command.pieces[i].address, command.pieces[i].length);
            std::copy(bytes.begin(), bytes.end(), out.begin() + static_cast<std::ptrdiff_t>(at));
            at += bytes.size();
        }
    }

    void on_io_completion(host_command& command)
    {
        const std::size_t offset =
            std::size_t{command.slot} * slot_bytes + std::size_t{command.first_block} * block_bytes;
        const std::size_t length = std::size_t{command.blocks} * block_bytes;
        switch (command.kind) {
        case command_kind::write:
            fill_pattern(std::span{shadow_}.subspan(offset, length), command.data_seed);
            slots_[command.slot].writer = false;
            break;
        case command_kind::read: {
            const auto data = std::span{scratch_}.first(length);
            gather(command, data);
            const auto expected = std::span{shadow_}.subspan(offset, length);
            const auto mismatch = std::mismatch(data.begin(), data.end(), expected.begin());
            if (mismatch.first != data.end()) {
                fail(fmt::format("Read of LBA {} ({} blocks) returned wrong data at byte {}",
                                 std::uint64_t{command.slot} * slot_blocks + command.first_block,
                                 command.blocks, mismatch.first - data.begin()));
            }
            ++counts_.reads_verified;
            --slots_[command.slot].readers;
            break;
        }
        default: break;
        }
        if (command.buffer != no_buffer) {
            free_buffers_.push_back(command.buffer);
        }
        --io_outstanding_host_;
    }

    // ---- completions ------------------------------------------------------------------------------

    void reap_all()
    {
        if (cqs_[0].exists) {
            reap(0);
        }
        for (std::uint16_t qid = 1; qid <= max_io_queues; ++qid) {
            // Some CQs are left unread for a while, so that they fill and completions wait.
            if (cqs_[qid].exists && rng_.percent(80)) {
                reap(qid);
            }
        }
    }

    void reap(std::uint16_t cqid)
    {
        auto& cq = cqs_[cqid];
        std::uint32_t consumed = 0;
        for (;;) {
            const auto cqe =
                memory_.load<spec::completion_queue_entry>(cq_address(cqid) + std::uint64_t{cq.head} * 16U);
            if (cqe.phase() != cq.phase) {
                break;
            }
            on_completion(cqid, cqe);
            if (++cq.head == cq.entries) {
                cq.head = 0;
                cq.phase = !cq.phase;
            }
            if (++consumed > cq.entries) {
                fail(fmt::format("CQ {} yields more new entries than it holds", cqid));
                break;
            }
        }
        if (consumed != 0) {
            ctrl_.mmio_write(spec::cq_head_doorbell_offset(cqid, dstrd_), 4, cq.head);
        }
    }

    void on_completion(std::uint16_t cqid, const spec::completion_queue_entry& cqe)
    {
        ++counts_.completions;
        const std::string where = fmt::format("CQ {} entry (SQ {}, CID {:#x}, SQ Head {}, status {:#x})",
                                              cqid, cqe.sq_id, cqe.cid, cqe.sq_head, cqe.status().raw);
        if (cqe.sq_id > max_io_queues || !sqs_[cqe.sq_id].exists || sqs_[cqe.sq_id].cqid != cqid) {
            fail(where + ": no SQ of this CQ has that identifier");
            return;
        }
        auto& sq = sqs_[cqe.sq_id];
        // The SQ Head moves forward, and never past the host's tail.
        const std::uint32_t advance = (cqe.sq_head + sq.entries - sq.head) % sq.entries;
        const std::uint32_t pending = (sq.tail + sq.entries - sq.head) % sq.entries;
        if (cqe.sq_head >= sq.entries || advance > pending) {
            fail(fmt::format("{}: SQ Head outside [{}, {}]", where, sq.head, sq.tail));
        } else {
            sq.head = cqe.sq_head;
        }
        const std::size_t index = cqe.cid & 0x7fU;
        if ((cqe.cid >> 7) != (epoch_ & 0x1ffU) || !sq.commands[index].active) {
            fail(where + ": no command with that identifier is outstanding (a second completion, or one from "
                         "before the reset)");
            return;
        }
        auto& command = sq.commands[index];
        command.active = false;
        --sq.outstanding;
        if (cqe.status() != spec::status::success()) {
            fail(where + ": not Successful Completion");
        }
        if (cqe.sq_id == 0) {
            on_admin_completion(command, cqe);
        } else {
            on_io_completion(command);
        }
    }

    // ---- the end ------------------------------------------------------------------------------------

    /// Steps without injected resets until `done` holds (at most `bound` steps).
    template <typename Predicate>
    bool run_until(Predicate&& done, std::size_t bound, const char* what)
    {
        for (std::size_t i = 0; i < bound && !fatal_; ++i) {
            if (done()) {
                return true;
            }
            step(false);
        }
        if (!fatal_) {
            fail(std::string{"the final checks did not reach: "} + what, true);
        }
        return false;
    }

    /// After the storm: a full drain, a clean bring-up, Identify Controller, a verified write and
    /// read, and every request back in its pool.
    void finish()
    {
        if (phase_ == phase::shutdown) {
            disable();
        } else if (phase_ != phase::quiet) {
            inject_reset(reset_kind::controller);
        }
        drain_ = true;
        final_bring_up_ = true;
        if (!run_until([&] { return phase_ == phase::io; }, 50000,
                       "a clean bring-up with Identify Controller")) {
            return;
        }
        check_media();
        if (identify_checks_ == 0) {
            fail("Identify Controller did not run");
        }
        // Write a whole slot with PRPs, then read it back through an SGL.
        const std::uint32_t slot = 7;
        if (!run_until([&] { return !slots_[slot].writer && slots_[slot].readers == 0; }, 20000,
                       "an idle slot") ||
            !submit_io(1, command_kind::write, slot, 0, slot_blocks, false)) {
            fail("the final write could not be submitted");
            return;
        }
        ring_due_doorbells();
        if (!run_until([&] { return io_outstanding_host_ == 0; }, 20000, "the final write's completion") ||
            !submit_io(1, command_kind::read, slot, 0, slot_blocks, true)) {
            fail("the final read could not be submitted");
            return;
        }
        const std::uint64_t verified = counts_.reads_verified;
        ring_due_doorbells();
        if (!run_until([&] { return io_outstanding_host_ == 0; }, 20000, "the final read's completion")) {
            return;
        }
        if (counts_.reads_verified != verified + 1) {
            fail("the final read was not verified");
        }
        // A last controller reset and drain: nothing may be left anywhere.
        inject_reset(reset_kind::controller);
        drain_ = true;
        run_until([&] { return phase_ != phase::quiet; }, 50000, "the last drain");
        check_media();
        if (ctrl_.requests_in_use() != 0 || ctrl_.io_outstanding() != 0 || ledger_.outstanding() != 0 ||
            storage_.overflows() != 0) {
            fail(fmt::format(
                "at the end: requests_in_use() {}, io_outstanding() {}, backend holds {}, {} backend "
                "overflows",
                ctrl_.requests_in_use(), ctrl_.io_outstanding(), ledger_.outstanding(),
                storage_.overflows()));
        }
    }

    storm_setup setup_;
    splitmix64 rng_;
    /// The controller's provider: the recording DMA itself, or async_recording_dma over it.
    using dma_type = std::conditional_t<async_dma, async_recording_dma, nt::recording_dma<nt::flat_memory>&>;
    [[nodiscard]] dma_type make_dma()
    {
        if constexpr (async_dma) {
            return dma_type{recording_, clock_, setup_.seed ^ 0xa5};
        } else {
            return recording_;
        }
    }

    nt::flat_memory memory_;
    nt::recording_dma<nt::flat_memory> recording_{memory_};
    nt::manual_clock clock_;
    dma_type dma_ = make_dma();
    nt::recording_msix msix_;
    backend_ledger ledger_;
    nt::test_backend<> storage_;
    subsystem_type subsystem_;
    controller_type ctrl_;

    unsigned dstrd_ = 0;
    bool nssr_supported_ = false;
    phase phase_ = phase::quiet;
    bool quiet_ = false;
    bool drain_ = true;
    bool final_bring_up_ = false;
    bool needs_msix_ = true;
    bool needs_admin_registers_ = true;
    bool admin_busy_ = false;
    bool coalescing_set_ = false;
    reset_kind pending_kind_ = reset_kind::controller;
    std::uint64_t epoch_ = 0;
    std::uint64_t shutdown_sequence_ = 0;
    int quiet_polls_ = 0;
    std::size_t quiet_steps_ = 0;
    std::size_t enabling_steps_ = 0;
    std::size_t admin_wait_steps_ = 0;
    std::size_t quiesce_steps_ = 0;
    std::size_t shutdown_steps_ = 0;
    std::size_t dma_scanned_ = 0;
    std::size_t intx_transitions_ = 0;
    std::size_t io_outstanding_host_ = 0;
    std::size_t identify_checks_ = 0;
    std::uint16_t nsq_ = 1;
    std::uint16_t ncq_ = 1;
    std::vector<admin_step> script_;
    std::size_t script_at_ = 0;
    std::array<host_sq, max_io_queues + 1> sqs_{};
    std::array<host_cq, max_io_queues + 1> cqs_{};
    std::vector<std::uint32_t> free_buffers_;
    std::vector<std::uint32_t> quarantine_;
    std::vector<lba_slot> slots_;
    std::vector<std::byte> shadow_;
    std::vector<std::byte> scratch_;
    std::vector<std::byte> cq_snapshot_;
    storm_counts counts_{};
    std::vector<std::string> failures_;
    std::size_t failure_count_ = 0;
    bool fatal_ = false;
    std::uint64_t unknown_completions_seen_ = 0;
    std::uint64_t resubmissions_seen_ = 0;
};

constexpr auto storm_setups = std::to_array<storm_setup>({
    // Every command staged (map always refused), a write-back cache to flush, no ready delay.
    {.seed = 0x5707'0001,
     .doorbell_stride = 0,
     .ready_delay = 0ns,
     .map_refusal_percent = 100,
     .volatile_cache = true,
     .resets = 2600},
    // Half the commands zero-copy; resets also land while CSTS.RDY is on its way to 1.
    {.seed = 0x5707'0002,
     .doorbell_stride = 1,
     .ready_delay = 300us,
     .map_refusal_percent = 50,
     .volatile_cache = true,
     .resets = 2600},
    // Mostly zero-copy and no volatile cache (Flush and shutdown have nothing to flush).
    {.seed = 0x5707'0003,
     .doorbell_stride = 0,
     .ready_delay = 0ns,
     .map_refusal_percent = 10,
     .volatile_cache = false,
     .resets = 2600},
    {.seed = 0x5707'0004,
     .doorbell_stride = 2,
     .ready_delay = 100us,
     .map_refusal_percent = 80,
     .volatile_cache = true,
     .resets = 2600},
});

/// The storm over every setup, with the controller's DMA as `Traits` says.
template <typename Traits>
void run_storms()
{
    std::array<std::uint64_t, reset_kind_count> resets{};
    std::uint64_t total = 0;
    for (const auto& setup : storm_setups) {
        SCOPED_TRACE(fmt::format("seed {:#x}", setup.seed));
        const auto started = std::chrono::steady_clock::now();
        storm<Traits> run{setup};
        run.run();
        const auto elapsed =
            std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started);
        for (const auto& failure : run.failures()) {
            ADD_FAILURE() << failure;
        }
        EXPECT_EQ(run.failure_count(), 0U);
        const auto& counts = run.counts();
        for (std::size_t kind = 0; kind < reset_kind_count; ++kind) {
            resets[kind] += counts.resets[kind];
        }
        total += run.total_resets();
        const auto& statistics = run.controller().statistics();
        std::printf(
            "[ storm    ] seed %#llx: %llu resets in %llu steps, %lld ms; %llu commands, %llu completions, "
            "%llu reads verified, %llu SGL, %llu dropped by resets\n",
            static_cast<unsigned long long>(setup.seed), static_cast<unsigned long long>(run.total_resets()),
            static_cast<unsigned long long>(counts.steps), static_cast<long long>(elapsed.count()),
            static_cast<unsigned long long>(counts.commands),
            static_cast<unsigned long long>(counts.completions),
            static_cast<unsigned long long>(counts.reads_verified),
            static_cast<unsigned long long>(counts.sgl_commands),
            static_cast<unsigned long long>(counts.dropped_by_reset));
        std::printf(
            "[ storm    ]   resets with backend I/O %llu, with waiting commands %llu, during bring-up %llu, "
            "during shutdown processing %llu, with coalescing %llu; drains %llu, bring-ups without drain "
            "%llu, quiesces %llu; staging waits %llu, completions held %llu; DMA writes to data buffers "
            "after RDY read 0: %llu; backend requests %llu\n",
            static_cast<unsigned long long>(counts.resets_with_backend_io),
            static_cast<unsigned long long>(counts.resets_with_waiting_commands),
            static_cast<unsigned long long>(counts.resets_during_bring_up),
            static_cast<unsigned long long>(counts.resets_during_shutdown_processing),
            static_cast<unsigned long long>(counts.resets_with_coalescing),
            static_cast<unsigned long long>(counts.drains),
            static_cast<unsigned long long>(counts.bring_ups_without_drain),
            static_cast<unsigned long long>(counts.quiesces),
            static_cast<unsigned long long>(statistics.staging_waits),
            static_cast<unsigned long long>(statistics.completions_held),
            static_cast<unsigned long long>(counts.late_data_writes),
            static_cast<unsigned long long>(run.ledger().submitted()));
        std::fflush(stdout);
        // The resets landed where they matter: on commands in the backend, on commands waiting for
        // a staging buffer or CQ space, during bring-up and during shutdown processing.
        const std::uint64_t some = run.total_resets() / 50;
        EXPECT_GT(counts.resets_with_backend_io, some);
        EXPECT_GT(counts.resets_with_waiting_commands, some);
        EXPECT_GT(counts.resets_during_bring_up, some);
        if (setup.volatile_cache) {
            EXPECT_GT(counts.resets_during_shutdown_processing, some / 4);
        }
        EXPECT_GT(counts.resets_with_coalescing, some);
        EXPECT_GT(counts.bring_ups_without_drain, some);
        // A quiesce waits for every command to complete, which takes more polls with asynchronous DMA.
        EXPECT_GT(counts.quiesces, storm<Traits>::async_dma ? some / 4 : some);
        // With asynchronous DMA a command takes several polls, so fewer complete between resets.
        EXPECT_GT(counts.reads_verified,
                  storm<Traits>::async_dma ? run.total_resets() / 8 : run.total_resets());
        if (setup.map_refusal_percent != 0) {
            EXPECT_GT(statistics.staging_waits, some);
        }
        EXPECT_GT(statistics.completions_held, some);
    }
    for (std::size_t kind = 0; kind < reset_kind_count; ++kind) {
        std::printf("[ storm    ] %-36s %llu\n", reset_kind_names[kind],
                    static_cast<unsigned long long>(resets[kind]));
        EXPECT_GE(resets[kind], 1000U) << reset_kind_names[kind];
    }
    std::printf("[ storm    ] %-36s %llu\n", "total", static_cast<unsigned long long>(total));
    EXPECT_GE(total, 10000U);
}

TEST(reset_storm, ten_thousand_resets_of_every_kind_under_random_io) { run_storms<storm_traits>(); }

// The same with DMA that completes late and out of order: entries, lists, data and completions
// are all in flight when resets land, and a reset completes only once they have.
TEST(reset_storm, ten_thousand_resets_with_asynchronous_dma) { run_storms<async_storm_traits>(); }

// After a Controller Reset during shutdown processing the flush stays in the backend. The next
// normal shutdown must not submit that request object again while the backend holds it (the
// BlockBackend rule that the submitter keeps a request until it completes), and must report
// SHST = 10b only once a flush of its own is done (Base 2.0 3.6: shutdown processing is complete
// once volatile data is durable), not when the earlier flush completes.
TEST(reset_storm_shutdown_flush, next_normal_shutdown_waits_for_its_own_flush)
{
    nvmekit_test::rig r;
    backend_ledger ledger;
    nt::test_backend<> storage{r.clock, 1 << 20, 8, {.delay = 1s, .volatile_cache = true}};
    r.subsystem.add_namespace(counting_backend{storage, ledger});
    const auto shutdown_status = [&] { return r.csts().get(spec::csts_register::shst); };

    r.host.bring_up();
    const auto first_flush = r.clock.now();
    r.write_cc(r.host.cc().with(spec::cc_register::shn, spec::shutdown_notification::normal));
    ASSERT_EQ(shutdown_status(), spec::shutdown_status::processing);
    r.host.disable(); // CC.EN 1 -> 0 during shutdown processing: the flush stays in the backend
    ASSERT_EQ(storage.outstanding(), 1U);

    r.clock.advance(10ms);
    r.host.bring_up();
    r.write_cc(r.host.cc().with(spec::cc_register::shn, spec::shutdown_notification::normal));
    ASSERT_EQ(shutdown_status(), spec::shutdown_status::processing);
    EXPECT_EQ(ledger.resubmitted_while_outstanding(), 0U)
        << "the second shutdown's flush reused the request the backend still held";

    // The first flush completes; the second one, submitted 10 ms later, is still in the backend.
    r.clock.advance(first_flush + 1s - r.clock.now());
    r.ctrl.poll();
    EXPECT_EQ(shutdown_status(), spec::shutdown_status::processing)
        << "SHST = 10b while the shutdown's own flush is still in the backend";
    r.clock.advance(1s);
    r.ctrl.poll();
    EXPECT_EQ(shutdown_status(), spec::shutdown_status::complete);
    EXPECT_EQ(storage.outstanding(), 0U);
}

} // namespace reset_storm_test
} // namespace
