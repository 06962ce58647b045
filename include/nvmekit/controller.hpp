#pragma once
/// The controller: registers, reset state machine, queues, doorbells and MSI-X composed into one
/// NVMe controller bound to the embedder's DMA, interrupt and clock providers.
///
///     struct my_traits : nvmekit::default_traits {
///         using dma = my_dma;              // models DmaProvider
///         using interrupts = my_msix;      // models InterruptProvider
///         using clock = my_clock;          // models Clock
///     };
///     nvmekit::controller<my_traits> ctrl{dma, msix, clock};
///     ctrl.mmio_write(0x14, 4, cc);        // the host's BAR0 accesses
///     ctrl.poll();                         // nothing runs until the embedder polls
///
/// Threading: this is the `single_threaded` policy. Nothing runs unless the embedder calls a
/// member function, and the same sequence of calls always gives the same results. Queues are
/// owned by one processing context (the one that calls poll()); MMIO doorbell writes reach it
/// through the doorbell channel, which is the seam for poll groups.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <boost/intrusive/list.hpp>

#include <nvmekit/async_events.hpp>
#include <nvmekit/clock.hpp>
#include <nvmekit/config.hpp>
#include <nvmekit/cq_ring.hpp>
#include <nvmekit/dma.hpp>
#include <nvmekit/doorbell_channel.hpp>
#include <nvmekit/interrupt_coalescing.hpp>
#include <nvmekit/interrupts.hpp>
#include <nvmekit/msix.hpp>
#include <nvmekit/queue_memory.hpp>
#include <nvmekit/register_file.hpp>
#include <nvmekit/request_pool.hpp>
#include <nvmekit/reset_state_machine.hpp>
#include <nvmekit/sq_ring.hpp>
#include <nvmekit/spec/commands.hpp>
#include <nvmekit/spec/features.hpp>
#include <nvmekit/spec/identify.hpp>
#include <nvmekit/spec/log_pages.hpp>
#include <nvmekit/spec/opcodes.hpp>
#include <nvmekit/spec/queue_entries.hpp>
#include <nvmekit/spec/registers.hpp>
#include <nvmekit/spec/status.hpp>

NVMEKIT_BEGIN_NAMESPACE

/// Sizes the controller is built for. They bound every allocation the host can cause.
struct limits {
    std::uint16_t io_queues = 64;       ///< I/O submission queues, and as many completion queues
    std::uint32_t queue_entries = 4096; ///< entries of the largest queue (CAP.MQES + 1), 2 to 65536
    std::uint8_t mdts = 5;              ///< Maximum Data Transfer Size, 2^n minimum pages (0: no limit)
    std::uint16_t msix_vectors = 65;    ///< MSI-X table size, 1 to 2048
    std::uint8_t aerl = 3;              ///< Asynchronous Event Request Limit, 0's based
};

/// Threading policy: nothing runs unless the embedder calls poll().
struct single_threaded {};

/// Base of the traits users derive from; it names the defaults a user does not override.
struct default_traits {
    using threading = single_threaded;
    static constexpr nvmekit::limits limits{};
};

/// What the controller reports about itself in Identify Controller.
struct controller_identity {
    std::uint16_t vendor_id = 0x1b36;           ///< PCI VID
    std::uint16_t subsystem_vendor_id = 0x1af4; ///< PCI SSVID
    std::string serial_number = "NVMEKIT0001";
    std::string model_number = "nvmekit emulated controller";
    std::string firmware_revision = "0.1.0";
    std::string subsystem_nqn = "nqn.2026-11.io.nvmekit:subsystem0";
    std::uint16_t controller_id = 1;
};

/// Run-time configuration of one controller.
struct controller_config {
    controller_identity identity{};
    /// Time from CC.EN = 1 to CSTS.RDY = 1, measured on the Clock, so hosts' timeouts can be
    /// exercised.
    std::chrono::nanoseconds ready_delay{0};
    std::uint8_t ready_timeout_500ms = 20;   ///< CAP.TO
    std::uint8_t doorbell_stride = 0;        ///< CAP.DSTRD
    bool contiguous_queues_required = false; ///< CAP.CQR
    bool subsystem_reset_supported = true;   ///< CAP.NSSRS
};

/// Counters of what the host did wrong and what the controller did, for tests and logs.
struct controller_statistics {
    std::uint64_t commands = 0;
    std::uint64_t completions_posted = 0;
    std::uint64_t completions_held = 0;  ///< times a completion waited for CQ space
    std::uint64_t invalid_doorbells = 0; ///< invalid doorbell values and writes to missing doorbells
    std::uint64_t dma_errors = 0;
    std::uint64_t host_protocol_errors = 0;
};

namespace detail {

/// A command from fetch to posted completion.
struct command_slot {
    spec::submission_queue_entry sqe{};
    spec::completion_queue_entry cqe{};
    std::uint16_t sq_id = 0;
    std::uint32_t request_index = 0; ///< this slot's request in its SQ's pool
    /// Links a completion waiting for space in its CQ.
    boost::intrusive::list_member_hook<boost::intrusive::link_mode<boost::intrusive::safe_link>> held_hook;
};

using held_list = boost::intrusive::list<
    command_slot, boost::intrusive::member_hook<command_slot, decltype(command_slot::held_hook), &command_slot::held_hook>>;

using command_pool = request_pool<command_slot>;

struct submission_queue {
    sq_ring ring;
    command_pool pool;
    submission_queue(std::uint16_t qid, std::uint16_t cqid, std::uint32_t entries, queue_memory memory)
        : ring{qid, cqid, entries, std::move(memory)}, pool{entries}
    {
    }
};

struct completion_queue {
    cq_ring ring;
    held_list held{};
    std::uint16_t bound_submission_queues = 0;
    std::uint32_t posted_since_signal = 0; ///< entries posted since interrupts were last considered
    completion_queue(std::uint16_t qid, std::uint32_t entries, queue_memory memory, std::uint16_t vector, bool ien)
        : ring{qid, entries, std::move(memory), vector, ien}
    {
    }
};

} // namespace detail

template <typename Traits>
class controller {
public:
    using dma_type = typename Traits::dma;
    using interrupts_type = typename Traits::interrupts;
    using clock_type = typename Traits::clock;
    static constexpr nvmekit::limits limits = Traits::limits;

    static_assert(check_dma_provider<dma_type>());
    static_assert(check_interrupt_provider<interrupts_type>());
    static_assert(check_clock<clock_type>());
    static_assert(limits.io_queues >= 1, "limits: at least one I/O queue pair");
    static_assert(limits.queue_entries >= 2 && limits.queue_entries <= 65536, "limits: queue_entries 2..65536");
    static_assert(limits.msix_vectors >= 1 && limits.msix_vectors <= 2048, "limits: msix_vectors 1..2048");
    static_assert(limits.aerl < async_event_queue::max_requests, "limits: aerl too large");

    controller(dma_type& dma, interrupts_type& interrupts, clock_type& clock, controller_config config = {})
        : dma_{dma}
        , clock_{clock}
        , config_{std::move(config)}
        , registers_{make_register_config(config_)}
        , msix_{interrupts, limits.msix_vectors}
        , interrupts_{interrupts}
        , coalescer_{limits.msix_vectors}
        , doorbells_{limits.io_queues}
        , events_{std::size_t{limits.aerl} + 1U}
        , state_machine_{reset_ops_}
    {
        submission_queues_.resize(std::size_t{limits.io_queues} + 1U);
        completion_queues_.resize(std::size_t{limits.io_queues} + 1U);
        fetch_buffer_.resize(fetch_batch);
        vector_due_.resize(limits.msix_vectors);
        due_vectors_.reserve(limits.msix_vectors);
    }

    controller(const controller&) = delete;
    controller& operator=(const controller&) = delete;

    // ---- BAR0 layout ------------------------------------------------------------------------

    /// First byte of the MSI-X table in BAR0 (page aligned, after the doorbells).
    [[nodiscard]] std::uint64_t msix_table_offset() const noexcept
    {
        const std::uint64_t doorbells_end =
            spec::doorbell_base_offset +
            (2U * (std::uint64_t{limits.io_queues} + 1U)) * registers_.doorbell_stride_bytes();
        return round_up(doorbells_end, page_bytes);
    }
    /// First byte of the MSI-X PBA in BAR0 (page aligned, after the table).
    [[nodiscard]] std::uint64_t msix_pba_offset() const noexcept
    {
        return msix_table_offset() + round_up(msix_type::table_bytes(limits.msix_vectors), page_bytes);
    }
    /// BAR0 size: a power of two covering registers, doorbells, MSI-X table and PBA.
    [[nodiscard]] std::uint64_t bar0_size() const noexcept
    {
        const std::uint64_t end = msix_pba_offset() + round_up(msix_type::pba_bytes(limits.msix_vectors), page_bytes);
        return std::bit_ceil(end);
    }

    // ---- host-facing side ---------------------------------------------------------------------

    /// A host read of BAR0.
    [[nodiscard]] std::uint64_t mmio_read(std::uint64_t offset, unsigned width)
    {
        if (offset >= msix_pba_offset()) {
            return msix_.read_pba(offset - msix_pba_offset(), width);
        }
        if (offset >= msix_table_offset()) {
            return msix_.read_table(offset - msix_table_offset(), width);
        }
        return registers_.read(offset, width);
    }

    /// A host write to BAR0. Register changes take effect at once; doorbells are handed to the
    /// processing context and act at the next poll().
    void mmio_write(std::uint64_t offset, unsigned width, std::uint64_t value)
    {
        if (offset >= msix_pba_offset()) {
            msix_.write_pba(offset - msix_pba_offset(), width, value);
            return;
        }
        if (offset >= msix_table_offset()) {
            msix_.write_table(offset - msix_table_offset(), width, value);
            return;
        }
        const register_event event = registers_.write(offset, width, value);
        switch (event.kind) {
        case register_event_kind::none:
        case register_event_kind::admin_queue_attributes_written: break;
        case register_event_kind::cc_written:
            on_cc_written(spec::cc_register{static_cast<std::uint32_t>(event.old_value)},
                          spec::cc_register{static_cast<std::uint32_t>(event.new_value)});
            break;
        case register_event_kind::nssr_written:
            if (event.new_value == spec::nvm_subsystem_reset_value) {
                state_machine_.handle(controller_event::subsystem_reset);
            }
            break;
        case register_event_kind::interrupt_mask_changed: update_intx(); break;
        case register_event_kind::doorbell: {
            // Checked here, on the host-facing side, so that a bad write never replaces a good one
            // still waiting in the channel: hardware applies doorbell writes one by one.
            const auto value = static_cast<std::uint32_t>(event.new_value);
            const std::uint32_t entries =
                event.queue_id <= limits.io_queues
                    ? doorbell_entries_[doorbell_index(event.queue_id, event.completion_queue)].load(
                          std::memory_order_acquire)
                    : 0U;
            if (entries == 0) {
                // No such queue: a write to an invalid doorbell register (Base 2.0 5.2).
                invalid_doorbell_registers_.fetch_add(1, std::memory_order_relaxed);
            } else if (value >= entries) {
                invalid_doorbell_values_.fetch_add(1, std::memory_order_relaxed);
            } else if (event.completion_queue) {
                doorbells_.ring_cq_head(event.queue_id, value);
            } else {
                doorbells_.ring_sq_tail(event.queue_id, value);
            }
            break;
        }
        }
    }

    /// The PCI MSI-X capability's Message Control bits, set by the transport from config space.
    void set_msix_control(bool enabled, bool function_mask)
    {
        msix_.set_enabled(enabled);
        msix_.set_function_mask(function_mask);
    }

    /// PCIe Function Level Reset, the transport's entry point.
    void function_level_reset() { state_machine_.handle(controller_event::function_reset); }

    /// An internal fatal error: CSTS.CFS reads 1 until the host resets the controller.
    void fatal_error() { state_machine_.handle(controller_event::fatal_error); }

    // ---- processing side ----------------------------------------------------------------------

    /// Does all the work that is ready: finishes a pending enable or shutdown, takes doorbell
    /// values, fetches and executes commands, posts completions and signals interrupts. Returns
    /// the number of commands executed.
    std::size_t poll()
    {
        state_machine_.handle(controller_event::tick);
        const auto state = state_machine_.state();
        if (state == controller_state::shutting_down || state == controller_state::shut_down) {
            // The queues still exist: the host may consume completions, but commands no longer run
            // until a Controller Reset (Base 2.0 3.6), so a submission is a host protocol error.
            statistics_.host_protocol_errors +=
                invalid_doorbell_registers_.exchange(0, std::memory_order_relaxed);
            doorbells_.drain([this](std::uint16_t qid, bool completion_queue, std::uint32_t value) {
                if (completion_queue) {
                    apply_cq_head(qid, value);
                } else {
                    ++statistics_.host_protocol_errors;
                }
            });
            update_intx();
            return 0;
        }
        if (state != controller_state::ready) {
            statistics_.host_protocol_errors +=
                invalid_doorbell_registers_.exchange(0, std::memory_order_relaxed);
            doorbells_.drain([this](std::uint16_t, bool, std::uint32_t) { ++statistics_.host_protocol_errors; });
            return 0;
        }
        drain_doorbells();
        read_shadow_doorbells();
        std::size_t executed = 0;
        for (std::uint16_t qid = 0; qid <= limits.io_queues; ++qid) {
            if (submission_queues_[qid]) {
                executed += process_submission_queue(*submission_queues_[qid]);
            }
            if (state_machine_.state() != controller_state::ready) {
                break; // a command (or a DMA failure) changed the state
            }
        }
        report_async_events();
        write_event_indexes();
        signal_interrupts();
        return executed;
    }

    // ---- introspection ------------------------------------------------------------------------

    [[nodiscard]] controller_state state() const noexcept { return state_machine_.state(); }
    [[nodiscard]] const register_file& registers() const noexcept { return registers_; }
    [[nodiscard]] const controller_statistics& statistics() const noexcept { return statistics_; }
    [[nodiscard]] msix_table<interrupts_type>& msix() noexcept { return msix_; }
    /// Commands fetched and not yet returned to their pool, over every queue.
    [[nodiscard]] std::size_t requests_in_use() const noexcept
    {
        std::size_t in_use = 0;
        for (const auto& sq : submission_queues_) {
            if (sq) {
                in_use += sq->pool.in_use();
            }
        }
        return in_use;
    }
    [[nodiscard]] bool submission_queue_exists(std::uint16_t qid) const noexcept
    {
        return qid <= limits.io_queues && submission_queues_[qid] != nullptr;
    }
    [[nodiscard]] bool completion_queue_exists(std::uint16_t qid) const noexcept
    {
        return qid <= limits.io_queues && completion_queues_[qid] != nullptr;
    }
    /// The Identify Controller data this controller returns.
    [[nodiscard]] spec::identify_controller identify_controller_data() const
    {
        spec::identify_controller data{};
        const auto& identity = config_.identity;
        data.vid = identity.vendor_id;
        data.ssvid = identity.subsystem_vendor_id;
        spec::assign_space_padded(data.sn, identity.serial_number);
        spec::assign_space_padded(data.mn, identity.model_number);
        spec::assign_space_padded(data.fr, identity.firmware_revision);
        spec::assign_null_padded(data.subnqn, identity.subsystem_nqn);
        data.mdts = limits.mdts;
        data.cntlid = identity.controller_id;
        data.ver = registers_.vs().raw;
        data.cntrltype = spec::controller_type::io;
        data.oacs.set(spec::admin_command_support::doorbell_buffer_config, true);
        data.acl = 3;
        data.aerl = limits.aerl;
        data.wctemp = 343;
        data.cctemp = 373;
        data.sqes.set(spec::queue_entry_sizes::required, 6).set(spec::queue_entry_sizes::maximum, 6);
        data.cqes.set(spec::queue_entry_sizes::required, 4).set(spec::queue_entry_sizes::maximum, 4);
        data.nn = 0;
        data.psd[0].mp = 2500; // 25 W in 0.01 W units
        return data;
    }

private:
    using msix_type = msix_table<interrupts_type>;
    static constexpr std::uint64_t page_bytes = 4096;
    static constexpr std::size_t fetch_batch = 32;

    [[nodiscard]] static constexpr std::uint64_t round_up(std::uint64_t value, std::uint64_t alignment) noexcept
    {
        return (value + alignment - 1) / alignment * alignment;
    }

    [[nodiscard]] static register_file_config make_register_config(const controller_config& config)
    {
        spec::cap_register cap{};
        cap.set(cap.mqes, static_cast<std::uint16_t>(limits.queue_entries - 1U))
            .set(cap.cqr, config.contiguous_queues_required)
            .set(cap.to, config.ready_timeout_500ms)
            .set(cap.dstrd, config.doorbell_stride)
            .set(cap.nssrs, config.subsystem_reset_supported)
            .set(cap.css_nvm, true)
            .set(cap.mpsmin, 0)
            .set(cap.mpsmax, 4);
        return register_file_config{.cap = cap};
    }

    /// The state machine's hands: what each transition does to this controller.
    struct reset_operations {
        controller* self;

        [[nodiscard]] bool enable_configuration_valid() const { return self->enable_configuration_valid(); }
        [[nodiscard]] bool ready_delay_elapsed() const
        {
            return self->clock_.now() - self->enable_started_ >= self->config_.ready_delay;
        }
        [[nodiscard]] bool shutdown_flush_complete() const { return true; }
        void start_enable() { self->start_enable(); }
        void set_ready(bool ready) { self->set_csts_bit(spec::csts_register::rdy, ready); }
        void stop_and_abort_all() { self->stop_and_abort_all(); }
        void reset_controller_state() { self->reset_controller_state(); }
        void begin_shutdown(bool /*abrupt*/)
        {
            auto csts = self->registers_.csts();
            self->registers_.set_csts(csts.with(csts.shst, spec::shutdown_status::processing));
        }
        void complete_shutdown()
        {
            auto csts = self->registers_.csts();
            self->registers_.set_csts(csts.with(csts.shst, spec::shutdown_status::complete));
        }
        void subsystem_reset()
        {
            self->registers_.reset_power_on();
            self->reset_features();
            self->set_csts_bit(spec::csts_register::nssro, true);
        }
        void function_reset()
        {
            self->registers_.reset_power_on();
            self->reset_features();
            self->msix_.reset();
            self->coalescer_.reset();
        }
        void set_fatal() { self->set_csts_bit(spec::csts_register::cfs, true); }
        void host_protocol_error(controller_state, controller_event) { ++self->statistics_.host_protocol_errors; }
    };

    void set_csts_bit(const auto& field, bool value)
    {
        auto csts = registers_.csts();
        registers_.set_csts(csts.with(field, value));
    }

    void on_cc_written(spec::cc_register old_cc, spec::cc_register new_cc)
    {
        const bool was_enabled = old_cc.get(old_cc.en);
        const bool enabled = new_cc.get(new_cc.en);
        if (!enabled) {
            // Every write of EN = 0 resets (a no-op when already disabled); it is also how the
            // host leaves the failed state.
            state_machine_.handle(controller_event::disable);
            return;
        }
        if (!was_enabled) {
            state_machine_.handle(controller_event::enable);
        }
        const auto old_shn = old_cc.get(old_cc.shn);
        const auto shn = new_cc.get(new_cc.shn);
        if (shn != old_shn) {
            if (shn == spec::shutdown_notification::normal) {
                state_machine_.handle(controller_event::shutdown_normal);
            } else if (shn == spec::shutdown_notification::abrupt) {
                state_machine_.handle(controller_event::shutdown_abrupt);
            }
        }
    }

    /// CC, AQA, ASQ and ACQ against CAP (Base 2.0 3.5.1): the values a controller can run with.
    [[nodiscard]] bool enable_configuration_valid() const
    {
        const auto cap = registers_.cap();
        const auto cc = registers_.cc();
        const auto aqa = registers_.aqa();
        const unsigned mps = cc.get(cc.mps);
        if (mps < cap.get(cap.mpsmin) || mps > cap.get(cap.mpsmax)) {
            return false;
        }
        if (cc.get(cc.css) != spec::io_command_set_selected::nvm) {
            return false;
        }
        if (cc.get(cc.ams) != spec::arbitration_mechanism::round_robin) {
            return false;
        }
        if (cc.get(cc.iosqes) != 6 || cc.get(cc.iocqes) != 4) {
            return false;
        }
        const std::uint32_t asq_entries = aqa.get(aqa.asqs) + 1U;
        const std::uint32_t acq_entries = aqa.get(aqa.acqs) + 1U;
        if (asq_entries < 2 || acq_entries < 2 || asq_entries > 4096 || acq_entries > 4096) {
            return false;
        }
        const std::uint64_t page_mask = memory_page_size() - 1U;
        return (registers_.asq().raw & page_mask) == 0 && (registers_.acq().raw & page_mask) == 0;
    }

    [[nodiscard]] std::uint64_t memory_page_size() const noexcept
    {
        return std::uint64_t{4096} << registers_.cc().get(spec::cc_register::mps);
    }

    void start_enable()
    {
        enable_started_ = clock_.now();
        const auto aqa = registers_.aqa();
        const std::uint32_t asq_entries = aqa.get(aqa.asqs) + 1U;
        const std::uint32_t acq_entries = aqa.get(aqa.acqs) + 1U;
        completion_queues_[0] = std::make_unique<detail::completion_queue>(
            0, acq_entries, queue_memory::contiguous(registers_.acq().raw), 0, true);
        submission_queues_[0] = std::make_unique<detail::submission_queue>(
            0, 0, asq_entries, queue_memory::contiguous(registers_.asq().raw));
        completion_queues_[0]->bound_submission_queues = 1;
        // Doorbells written while the controller was disabled belong to no queue of this enable.
        for (std::size_t i = 0; i < doorbell_slots; ++i) {
            doorbell_entries_[i].store(0, std::memory_order_release);
        }
        doorbells_.clear();
        invalid_doorbell_registers_.store(0, std::memory_order_relaxed);
        invalid_doorbell_values_.store(0, std::memory_order_relaxed);
        invalid_doorbell_values_.store(0, std::memory_order_relaxed);
        publish_doorbell_entries(0, false, asq_entries);
        publish_doorbell_entries(0, true, acq_entries);
    }

    [[nodiscard]] static constexpr std::size_t doorbell_index(std::uint16_t qid, bool completion_queue) noexcept
    {
        return 2U * std::size_t{qid} + (completion_queue ? 1U : 0U);
    }

    /// Tells the host-facing side how many entries a queue has (0: no queue), for its doorbell
    /// checks.
    void publish_doorbell_entries(std::uint16_t qid, bool completion_queue, std::uint32_t entries) noexcept
    {
        doorbell_entries_[doorbell_index(qid, completion_queue)].store(entries, std::memory_order_release);
    }

    /// Stops every queue: in-flight commands are dropped without a completion (Base 2.0 3.7.2),
    /// held completions are discarded, and all queues, admin included, are deleted.
    void stop_and_abort_all()
    {
        for (auto& cq : completion_queues_) {
            if (cq) {
                cq->held.clear();
            }
        }
        for (auto& sq : submission_queues_) {
            sq.reset();
        }
        for (auto& cq : completion_queues_) {
            cq.reset();
        }
        doorbells_.clear();
        invalid_doorbell_registers_.store(0, std::memory_order_relaxed);
        events_.clear();
        shadow_doorbells_.reset();
        update_intx(); // no CQ holds an entry any more
    }

    void reset_controller_state()
    {
        registers_.reset_controller();
        reset_features();
    }

    void reset_features()
    {
        granted_queues_.reset();
        coalescer_.reset();
    }

    // ---- doorbells ----------------------------------------------------------------------------

    void drain_doorbells()
    {
        if (const auto writes = invalid_doorbell_registers_.exchange(0, std::memory_order_relaxed);
            writes != 0) {
            statistics_.invalid_doorbells += writes;
            events_.post(spec::async_event_completion{spec::error_event::invalid_doorbell_register});
        }
        if (const auto writes = invalid_doorbell_values_.exchange(0, std::memory_order_relaxed); writes != 0) {
            statistics_.invalid_doorbells += writes;
            events_.post(spec::async_event_completion{spec::error_event::invalid_doorbell_value});
        }
        doorbells_.drain([this](std::uint16_t qid, bool completion_queue, std::uint32_t value) {
            if (completion_queue) {
                apply_cq_head(qid, value);
            } else {
                apply_sq_tail(qid, value);
            }
        });
    }

    void apply_sq_tail(std::uint16_t qid, std::uint32_t value)
    {
        if (!submission_queue_exists(qid)) {
            report_invalid_doorbell(spec::error_event::invalid_doorbell_register);
            return;
        }
        if (!submission_queues_[qid]->ring.set_tail(value)) {
            report_invalid_doorbell(spec::error_event::invalid_doorbell_value);
        }
    }

    void apply_cq_head(std::uint16_t qid, std::uint32_t value)
    {
        if (!completion_queue_exists(qid)) {
            report_invalid_doorbell(spec::error_event::invalid_doorbell_register);
            return;
        }
        auto& cq = *completion_queues_[qid];
        if (!cq.ring.set_head(value)) {
            report_invalid_doorbell(spec::error_event::invalid_doorbell_value);
            return;
        }
        post_held_completions(cq);
    }

    void report_invalid_doorbell(spec::error_event event)
    {
        ++statistics_.invalid_doorbells;
        events_.post(spec::async_event_completion{event});
    }

    /// Shadow doorbells (Doorbell Buffer Config, Base 2.0 5.8): the host writes new tails and
    /// heads to a buffer in its memory; the controller reads them here, at every poll.
    struct shadow_doorbell_buffers {
        std::uint64_t shadow = 0;
        std::uint64_t event_index = 0;
    };

    [[nodiscard]] std::uint64_t shadow_slot_offset(std::uint16_t qid, bool completion_queue) const noexcept
    {
        // The shadow buffers mirror the doorbell registers' layout (Base 2.0 5.8).
        return doorbell_index(qid, completion_queue) * registers_.doorbell_stride_bytes();
    }

    void read_shadow_doorbells()
    {
        if (!shadow_doorbells_) {
            return;
        }
        for (std::uint16_t qid = 1; qid <= limits.io_queues; ++qid) {
            if (completion_queue_exists(qid)) {
                std::uint32_t head = 0;
                if (read_shadow(qid, true, head)) {
                    if (head != completion_queues_[qid]->ring.head()) {
                        apply_cq_head(qid, head);
                    }
                }
            }
            if (submission_queue_exists(qid)) {
                std::uint32_t tail = 0;
                if (read_shadow(qid, false, tail)) {
                    if (tail != submission_queues_[qid]->ring.tail()) {
                        apply_sq_tail(qid, tail);
                    }
                }
            }
        }
    }

    bool read_shadow(std::uint16_t qid, bool completion_queue, std::uint32_t& value)
    {
        if (dma_read_object(dma_, shadow_doorbells_->shadow + shadow_slot_offset(qid, completion_queue), value)) {
            ++statistics_.dma_errors;
            return false;
        }
        return true;
    }

    void write_event_indexes()
    {
        if (!shadow_doorbells_) {
            return;
        }
        for (std::uint16_t qid = 1; qid <= limits.io_queues; ++qid) {
            if (submission_queue_exists(qid)) {
                write_event_index(qid, false, submission_queues_[qid]->ring.tail());
            }
            if (completion_queue_exists(qid)) {
                write_event_index(qid, true, completion_queues_[qid]->ring.head());
            }
        }
    }

    void write_event_index(std::uint16_t qid, bool completion_queue, std::uint32_t value)
    {
        if (dma_write_object(dma_, shadow_doorbells_->event_index + shadow_slot_offset(qid, completion_queue),
                             value)) {
            ++statistics_.dma_errors;
        }
    }

    // ---- command processing -------------------------------------------------------------------

    std::size_t process_submission_queue(detail::submission_queue& sq)
    {
        std::size_t executed = 0;
        while (!sq.ring.empty() && state_machine_.state() == controller_state::ready) {
            const std::uint32_t room = std::min<std::uint32_t>(static_cast<std::uint32_t>(sq.pool.available()),
                                                               static_cast<std::uint32_t>(fetch_batch));
            if (room == 0) {
                break; // every request of this queue waits for CQ space: back-pressure
            }
            std::uint32_t fetched = 0;
            if (sq.ring.fetch(dma_, std::span{fetch_buffer_}.first(room), fetched)) {
                // The SQ cannot be read: a controller fatal status is what the spec offers
                // (Base 2.0 9.5); the host recovers by resetting the controller.
                ++statistics_.dma_errors;
                state_machine_.handle(controller_event::fatal_error);
                break;
            }
            for (std::uint32_t i = 0; i < fetched; ++i) {
                auto* request = sq.pool.acquire();
                NVMEKIT_ASSERT(request != nullptr, "fetched more commands than the pool holds");
                request->payload.sqe = fetch_buffer_[i];
                request->payload.sq_id = sq.ring.qid();
                request->payload.request_index = request->index();
                execute(sq, *request);
                ++executed;
            }
        }
        return executed;
    }

    struct command_result {
        spec::status status = spec::status::success();
        std::uint32_t dw0 = 0;
        bool complete = true; ///< false: the command completes later (Asynchronous Event Request)
    };

    void execute(detail::submission_queue& sq, typename detail::command_pool::request& request)
    {
        ++statistics_.commands;
        const auto& sqe = request.payload.sqe;
        const command_result result = sq.ring.qid() == 0 ? execute_admin(sqe) : execute_io(sqe);
        if (!result.complete) {
            // Held by the asynchronous event queue; the slot is returned now and the completion is
            // built from the command identifier when an event arrives.
            sq.pool.mark_completed(request);
            sq.pool.mark_posted(request);
            sq.pool.release(request);
            return;
        }
        complete(sq, request, result.status, result.dw0);
    }

    void complete(detail::submission_queue& sq, typename detail::command_pool::request& request,
                  spec::status status, std::uint32_t dw0)
    {
        auto& cqe = request.payload.cqe;
        cqe = {};
        cqe.dw0 = dw0;
        cqe.sq_id = sq.ring.qid();
        cqe.sq_head = static_cast<std::uint16_t>(sq.ring.head());
        cqe.cid = request.payload.sqe.command_id();
        cqe.set_status(status, false);
        sq.pool.mark_completed(request);
        auto& cq = *completion_queues_[sq.ring.cqid()];
        if (!cq.held.empty() || cq.ring.full()) {
            ++statistics_.completions_held;
            cq.held.push_back(request.payload);
            return;
        }
        if (post(cq, cqe)) {
            sq.pool.mark_posted(request);
            sq.pool.release(request);
        } else {
            cq.held.push_back(request.payload);
        }
    }

    /// Writes one CQE; false when the DMA failed (the controller is then in a fatal state).
    bool post(detail::completion_queue& cq, const spec::completion_queue_entry& cqe)
    {
        if (cq.ring.post(dma_, cqe)) {
            ++statistics_.dma_errors;
            state_machine_.handle(controller_event::fatal_error);
            return false;
        }
        ++statistics_.completions_posted;
        ++cq.posted_since_signal;
        return true;
    }

    void post_held_completions(detail::completion_queue& cq)
    {
        while (!cq.held.empty() && !cq.ring.full() && state_machine_.state() == controller_state::ready) {
            auto& slot = cq.held.front();
            auto& sq = *submission_queues_[slot.sq_id];
            if (!post(cq, slot.cqe)) {
                return;
            }
            cq.held.pop_front();
            auto& request = sq.pool.at(slot.request_index);
            sq.pool.mark_posted(request);
            sq.pool.release(request);
        }
    }

    void report_async_events()
    {
        if (!completion_queue_exists(0)) {
            return;
        }
        auto& admin_sq = *submission_queues_[0];
        // While the admin queue's requests all wait for CQ space the event stays queued.
        while (admin_sq.pool.available() != 0) {
            const auto report = events_.next_report();
            if (!report) {
                return;
            }
            auto* request = admin_sq.pool.acquire();
            NVMEKIT_ASSERT(request != nullptr, "an available request could not be acquired");
            request->payload.sqe = {};
            request->payload.sqe.cdw0.set(spec::command_dword0::cid, report->command_id);
            request->payload.sq_id = 0;
            request->payload.request_index = request->index();
            complete(admin_sq, *request, spec::status::success(), report->event.raw);
        }
    }

    /// Signals each vector at most once per poll, however many entries and CQs it covers
    /// (DESIGN.md, batching). THR counts completion queue entries (Base 2.0 5.27.1.9), so every
    /// entry is one step of aggregation; entries of a vector already due are covered by its signal.
    void signal_interrupts()
    {
        const auto now = clock_.now();
        for (auto& cq : completion_queues_) {
            if (!cq || cq->posted_since_signal == 0) {
                continue;
            }
            const std::uint32_t posted = std::exchange(cq->posted_since_signal, 0U);
            const std::uint16_t vector = cq->ring.interrupt_vector();
            if (!cq->ring.interrupts_enabled() || vector_due_[vector]) {
                continue;
            }
            const bool coalesce = cq->ring.qid() != 0;
            for (std::uint32_t entry = 0; entry < posted; ++entry) {
                if (coalescer_.on_completion(vector, coalesce, now)) {
                    mark_vector_due(vector);
                    break;
                }
            }
        }
        coalescer_.expire(now, [this](std::uint16_t vector) { mark_vector_due(vector); });
        for (const std::uint16_t vector : due_vectors_) {
            vector_due_[vector] = false;
            msix_.signal(vector);
        }
        due_vectors_.clear();
        update_intx();
    }

    void mark_vector_due(std::uint16_t vector)
    {
        if (!vector_due_[vector]) {
            vector_due_[vector] = true;
            due_vectors_.push_back(vector); // within the capacity reserved at construction
        }
    }

    /// Pin-based interrupts (when MSI-X is off and the provider has INTx): the pin is asserted
    /// while a CQ with interrupts enabled holds entries and INTMS does not mask vector 0.
    void update_intx()
    {
        if constexpr (IntxInterruptProvider<interrupts_type>) {
            bool level = false;
            if (!msix_.enabled() && (registers_.interrupt_mask() & 1U) == 0) {
                for (const auto& cq : completion_queues_) {
                    if (cq && cq->ring.interrupts_enabled() && cq->ring.outstanding() != 0) {
                        level = true;
                        break;
                    }
                }
            }
            if (level != intx_level_) {
                intx_level_ = level;
                interrupts_.set_intx(level);
            }
        }
    }

    // ---- admin commands -----------------------------------------------------------------------

    [[nodiscard]] static spec::status error(auto code) noexcept { return spec::status{code}.with_dnr(); }

    command_result execute_admin(const spec::submission_queue_entry& sqe)
    {
        if (sqe.cdw0.get(spec::command_dword0::fuse) != spec::fused_operation::normal) {
            return {error(spec::generic_status::invalid_field)};
        }
        switch (static_cast<spec::admin_opcode>(sqe.opcode())) {
        case spec::admin_opcode::create_io_cq: return {create_io_cq(sqe)};
        case spec::admin_opcode::create_io_sq: return {create_io_sq(sqe)};
        case spec::admin_opcode::delete_io_cq: return {delete_io_cq(sqe)};
        case spec::admin_opcode::delete_io_sq: return {delete_io_sq(sqe)};
        case spec::admin_opcode::identify: return {identify(sqe)};
        case spec::admin_opcode::set_features: return set_features(sqe);
        case spec::admin_opcode::get_features: return get_features(sqe);
        case spec::admin_opcode::async_event_request:
            if (!events_.add_request(sqe.command_id())) {
                return {error(spec::command_specific_status::async_event_request_limit_exceeded)};
            }
            return {spec::status::success(), 0, false};
        case spec::admin_opcode::doorbell_buffer_config: return {doorbell_buffer_config(sqe)};
        default: return {error(spec::generic_status::invalid_opcode)};
        }
    }

    command_result execute_io(const spec::submission_queue_entry& sqe)
    {
        switch (static_cast<spec::nvm_opcode>(sqe.opcode())) {
        case spec::nvm_opcode::flush:
        case spec::nvm_opcode::write:
        case spec::nvm_opcode::read:
        case spec::nvm_opcode::write_uncorrectable:
        case spec::nvm_opcode::compare:
        case spec::nvm_opcode::write_zeroes:
        case spec::nvm_opcode::dataset_management:
        case spec::nvm_opcode::verify:
        case spec::nvm_opcode::copy:
            // No namespace is attached to this controller yet.
            return {error(spec::generic_status::invalid_namespace_or_format)};
        default: return {error(spec::generic_status::invalid_opcode)};
        }
    }

    /// The number of I/O queues the host may use: what Set Features Number of Queues granted, or
    /// the controller's maximum before it was set.
    [[nodiscard]] std::uint16_t allowed_submission_queues() const noexcept
    {
        return granted_queues_ ? static_cast<std::uint16_t>(granted_queues_->submission_queue_count())
                               : limits.io_queues;
    }
    [[nodiscard]] std::uint16_t allowed_completion_queues() const noexcept
    {
        return granted_queues_ ? static_cast<std::uint16_t>(granted_queues_->completion_queue_count())
                               : limits.io_queues;
    }

    /// Validates the queue memory of a Create I/O SQ/CQ and builds its description.
    spec::status make_queue_memory(const spec::submission_queue_entry& sqe, bool physically_contiguous,
                                   std::uint32_t entries, std::size_t entry_bytes, std::optional<queue_memory>& out)
    {
        const std::uint64_t page_mask = memory_page_size() - 1U;
        if (physically_contiguous) {
            if ((sqe.dptr.prp1 & page_mask) != 0) {
                return error(spec::generic_status::prp_offset_invalid);
            }
            if (sqe.dptr.prp1 > ~std::uint64_t{0} - std::uint64_t{entries} * entry_bytes) {
                return error(spec::generic_status::invalid_field); // the queue would wrap the address space
            }
            out.emplace(queue_memory::contiguous(sqe.dptr.prp1));
            return spec::status::success();
        }
        if (registers_.cap().get(spec::cap_register::cqr)) {
            return error(spec::generic_status::invalid_field);
        }
        queue_memory memory = queue_memory::contiguous(0);
        const spec::status status = queue_memory::from_prp_list(dma_, sqe.dptr.prp1, std::size_t{entries} * entry_bytes,
                                                                static_cast<std::uint32_t>(memory_page_size()), memory);
        if (!status.is_success()) {
            return status.with_dnr();
        }
        out.emplace(std::move(memory));
        return spec::status::success();
    }

    /// Create I/O Completion Queue, Base 2.0 5.4.
    spec::status create_io_cq(const spec::submission_queue_entry& sqe)
    {
        const auto view = spec::create_io_cq_view::decode(sqe);
        if (view.queue_id == 0 || view.queue_id > allowed_completion_queues() || completion_queue_exists(view.queue_id)) {
            return error(spec::command_specific_status::invalid_queue_identifier);
        }
        if (view.queue_size < 2 || view.queue_size > registers_.cap().max_queue_entries()) {
            return error(spec::command_specific_status::invalid_queue_size);
        }
        if (view.interrupt_vector >= limits.msix_vectors) {
            return error(spec::command_specific_status::invalid_interrupt_vector);
        }
        std::optional<queue_memory> memory;
        if (const auto status = make_queue_memory(sqe, view.physically_contiguous, view.queue_size, 16, memory);
            !status.is_success()) {
            return status;
        }
        completion_queues_[view.queue_id] = std::make_unique<detail::completion_queue>(
            view.queue_id, view.queue_size, std::move(*memory), view.interrupt_vector, view.interrupts_enabled);
        publish_doorbell_entries(view.queue_id, true, view.queue_size);
        return spec::status::success();
    }

    /// Create I/O Submission Queue, Base 2.0 5.5.
    spec::status create_io_sq(const spec::submission_queue_entry& sqe)
    {
        const auto view = spec::create_io_sq_view::decode(sqe);
        if (view.queue_id == 0 || view.queue_id > allowed_submission_queues() ||
            submission_queue_exists(view.queue_id)) {
            return error(spec::command_specific_status::invalid_queue_identifier);
        }
        if (view.queue_size < 2 || view.queue_size > registers_.cap().max_queue_entries()) {
            return error(spec::command_specific_status::invalid_queue_size);
        }
        if (view.cq_id == 0 || !completion_queue_exists(view.cq_id)) {
            return error(spec::command_specific_status::completion_queue_invalid);
        }
        std::optional<queue_memory> memory;
        if (const auto status = make_queue_memory(sqe, view.physically_contiguous, view.queue_size, 64, memory);
            !status.is_success()) {
            return status;
        }
        submission_queues_[view.queue_id] = std::make_unique<detail::submission_queue>(
            view.queue_id, view.cq_id, view.queue_size, std::move(*memory));
        publish_doorbell_entries(view.queue_id, false, view.queue_size);
        ++completion_queues_[view.cq_id]->bound_submission_queues;
        return spec::status::success();
    }

    /// Delete I/O Submission Queue, Base 2.0 5.7. Every command of this queue has completed by
    /// now (commands complete within poll()); completions still waiting for CQ space are dropped,
    /// as the host asked to delete the queue they belong to.
    spec::status delete_io_sq(const spec::submission_queue_entry& sqe)
    {
        const auto view = spec::delete_io_sq_view::decode(sqe);
        if (view.queue_id == 0 || !submission_queue_exists(view.queue_id)) {
            return error(spec::command_specific_status::invalid_queue_identifier);
        }
        auto& sq = *submission_queues_[view.queue_id];
        auto& cq = *completion_queues_[sq.ring.cqid()];
        cq.held.remove_if([&](const detail::command_slot& slot) { return slot.sq_id == view.queue_id; });
        --cq.bound_submission_queues;
        publish_doorbell_entries(view.queue_id, false, 0);
        submission_queues_[view.queue_id].reset();
        return spec::status::success();
    }

    /// Delete I/O Completion Queue, Base 2.0 5.6.
    spec::status delete_io_cq(const spec::submission_queue_entry& sqe)
    {
        const auto view = spec::delete_io_cq_view::decode(sqe);
        if (view.queue_id == 0 || !completion_queue_exists(view.queue_id)) {
            return error(spec::command_specific_status::invalid_queue_identifier);
        }
        if (completion_queues_[view.queue_id]->bound_submission_queues != 0) {
            return error(spec::command_specific_status::invalid_queue_deletion);
        }
        publish_doorbell_entries(view.queue_id, true, 0);
        completion_queues_[view.queue_id].reset();
        return spec::status::success();
    }

    /// Identify (Base 2.0 5.17): the controller data structure for now; namespaces come with the
    /// command set.
    spec::status identify(const spec::submission_queue_entry& sqe)
    {
        const auto view = spec::identify_view::decode(sqe);
        switch (view.cns) {
        case spec::cns::identify_controller: {
            const auto data = identify_controller_data();
            return transfer_to_host(sqe, std::as_bytes(std::span{&data, 1}));
        }
        case spec::cns::active_namespace_list: {
            const spec::active_namespace_id_list data{};
            return transfer_to_host(sqe, std::as_bytes(std::span{&data, 1}));
        }
        default: return error(spec::generic_status::invalid_field);
        }
    }

    /// Copies `data` to the host buffer described by PRP1/PRP2 when it spans at most two memory
    /// pages (all the admin data of this controller does). The full PRP/SGL walker replaces this.
    spec::status transfer_to_host(const spec::submission_queue_entry& sqe, std::span<const std::byte> data)
    {
        if (sqe.pointer_type() != spec::data_pointer_type::prp) {
            return error(spec::generic_status::invalid_field);
        }
        const std::uint64_t page = memory_page_size();
        const std::uint64_t prp1 = sqe.dptr.prp1;
        if ((prp1 & 3U) != 0) {
            return error(spec::generic_status::prp_offset_invalid);
        }
        const std::size_t first = static_cast<std::size_t>(std::min<std::uint64_t>(data.size(), page - (prp1 & (page - 1))));
        if (dma_.write(prp1, data.first(first))) {
            ++statistics_.dma_errors;
            return error(spec::generic_status::data_transfer_error);
        }
        if (first == data.size()) {
            return spec::status::success();
        }
        const std::uint64_t prp2 = sqe.dptr.prp2;
        if ((prp2 & (page - 1)) != 0) {
            return error(spec::generic_status::prp_offset_invalid);
        }
        if (dma_.write(prp2, data.subspan(first))) {
            ++statistics_.dma_errors;
            return error(spec::generic_status::data_transfer_error);
        }
        return spec::status::success();
    }

    /// Set Features (Base 2.0 5.27): Number of Queues (07h), Interrupt Coalescing (08h) and
    /// Interrupt Vector Configuration (09h) for now.
    command_result set_features(const spec::submission_queue_entry& sqe)
    {
        const auto view = spec::set_features_view::decode(sqe);
        if (view.save) {
            return {error(spec::command_specific_status::feature_not_saveable)};
        }
        switch (view.feature_id) {
        case spec::feature_id::number_of_queues: {
            const spec::number_of_queues requested{view.cdw11};
            if (requested.get(requested.nsqr) == 0xffff || requested.get(requested.ncqr) == 0xffff) {
                return {error(spec::generic_status::invalid_field)};
            }
            if (granted_queues_) {
                return {error(spec::generic_status::command_sequence_error)};
            }
            granted_queues_ = spec::number_of_queues::from_counts(
                std::min<std::uint32_t>(requested.submission_queue_count(), limits.io_queues),
                std::min<std::uint32_t>(requested.completion_queue_count(), limits.io_queues));
            return {spec::status::success(), granted_queues_->raw};
        }
        case spec::feature_id::interrupt_coalescing:
            coalescer_.configure(spec::interrupt_coalescing{view.cdw11});
            return {spec::status::success()};
        case spec::feature_id::interrupt_vector_configuration: {
            const spec::interrupt_vector_configuration value{view.cdw11};
            if (!coalescer_.set_coalescing_disabled(value.get(value.iv), value.get(value.cd))) {
                return {error(spec::generic_status::invalid_field)};
            }
            return {spec::status::success()};
        }
        default: return {error(spec::generic_status::invalid_field)};
        }
    }

    /// Get Features (Base 2.0 5.15): the features Set Features takes.
    command_result get_features(const spec::submission_queue_entry& sqe)
    {
        const auto view = spec::get_features_view::decode(sqe);
        switch (view.feature_id) {
        case spec::feature_id::number_of_queues: {
            const auto maximum = spec::number_of_queues::from_counts(limits.io_queues, limits.io_queues);
            return feature_value(view.select, granted_queues_.value_or(maximum).raw, maximum.raw);
        }
        case spec::feature_id::interrupt_coalescing:
            return feature_value(view.select, coalescer_.configuration().raw, 0);
        case spec::feature_id::interrupt_vector_configuration: {
            const spec::interrupt_vector_configuration requested{view.cdw11};
            const std::uint16_t vector = requested.get(requested.iv);
            if (vector >= limits.msix_vectors) {
                return {error(spec::generic_status::invalid_field)};
            }
            const auto current = spec::interrupt_vector_configuration{}
                                     .with(spec::interrupt_vector_configuration::iv, vector)
                                     .with(spec::interrupt_vector_configuration::cd,
                                           coalescer_.coalescing_disabled(vector));
            const auto default_value = spec::interrupt_vector_configuration{}.with(
                spec::interrupt_vector_configuration::iv, vector);
            return feature_value(view.select, current.raw, default_value.raw);
        }
        default: return {error(spec::generic_status::invalid_field)};
        }
    }

    /// A changeable, not saveable, controller-wide feature's value for each SEL (Base 2.0 5.15):
    /// saved reads as the default when the feature cannot be saved.
    [[nodiscard]] static command_result feature_value(spec::feature_select select, std::uint32_t current,
                                                      std::uint32_t default_value)
    {
        switch (select) {
        case spec::feature_select::current: return {spec::status::success(), current};
        case spec::feature_select::default_value:
        case spec::feature_select::saved: return {spec::status::success(), default_value};
        case spec::feature_select::supported_capabilities:
            return {spec::status::success(),
                    spec::feature_capabilities{}.with(spec::feature_capabilities::changeable, true).raw};
        }
        return {error(spec::generic_status::invalid_field)};
    }

    /// Doorbell Buffer Config (Base 2.0 5.8): PRP1 the shadow doorbell buffer, PRP2 the EventIdx
    /// buffer, each one memory page.
    spec::status doorbell_buffer_config(const spec::submission_queue_entry& sqe)
    {
        const auto view = spec::doorbell_buffer_config_view::decode(sqe);
        const std::uint64_t page_mask = memory_page_size() - 1U;
        if (sqe.pointer_type() != spec::data_pointer_type::prp || (view.shadow_doorbell_address & page_mask) != 0 ||
            (view.eventidx_address & page_mask) != 0) {
            return error(spec::generic_status::invalid_field);
        }
        shadow_doorbells_ = shadow_doorbell_buffers{view.shadow_doorbell_address, view.eventidx_address};
        return spec::status::success();
    }

    dma_type& dma_;
    clock_type& clock_;
    controller_config config_;
    register_file registers_;
    msix_type msix_;
    interrupts_type& interrupts_;
    interrupt_coalescer coalescer_;
    doorbell_channel doorbells_;
    /// Doorbell writes of queues above limits.io_queues, not yet taken by poll().
    std::atomic<std::uint32_t> invalid_doorbell_registers_{0};
    std::atomic<std::uint32_t> invalid_doorbell_values_{0};    ///< doorbell values beyond their queue's size
    static constexpr std::size_t doorbell_slots = 2U * (std::size_t{limits.io_queues} + 1U);
    /// Per doorbell (SQ tail 2*qid, CQ head 2*qid+1): the queue's entries, 0 when it does not exist.
    std::unique_ptr<std::atomic<std::uint32_t>[]> doorbell_entries_ =
        std::make_unique<std::atomic<std::uint32_t>[]>(doorbell_slots);
    async_event_queue events_;
    reset_operations reset_ops_{this};
    reset_state_machine<reset_operations> state_machine_;
    std::vector<std::unique_ptr<detail::submission_queue>> submission_queues_;
    std::vector<std::unique_ptr<detail::completion_queue>> completion_queues_;
    std::vector<spec::submission_queue_entry> fetch_buffer_;
    std::vector<bool> vector_due_;           ///< per MSI-X vector: signalled at the end of this poll
    std::vector<std::uint16_t> due_vectors_; ///< those vectors, in the order they became due
    std::optional<spec::number_of_queues> granted_queues_;
    std::optional<shadow_doorbell_buffers> shadow_doorbells_;
    std::chrono::nanoseconds enable_started_{0};
    controller_statistics statistics_{};
    bool intx_level_ = false;
};

NVMEKIT_END_NAMESPACE
