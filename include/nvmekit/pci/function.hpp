#pragma once
/// The PCIe function: the controller's side of BAR0 and of the host's PCIe accesses, a transport
/// of the controller core (controller.hpp, io_context.hpp).
///
/// It owns:
/// - the BAR0 layout: registers, doorbells, then the MSI-X table and PBA, each page aligned
///   (msix_table_offset(), msix_pba_offset(), bar0_size());
/// - the host's BAR0 accesses (mmio_read, mmio_write): registers through the register file,
///   register events handed to the reset state machine, the MSI-X table and PBA, and doorbell
///   writes checked (pci::doorbell_table) and handed to the channel of the context that owns the
///   queue (doorbell_channel.hpp);
/// - what the transport that owns PCI configuration space sets: MSI-X Message Control, Function
///   Level Reset, where BAR0 is decoded and Bus Master Enable (both kept out of reach of DMA,
///   dma_guard.hpp);
/// - applying doorbell values to the queues' rings, and invalid doorbell writes counted, logged
///   and reported as asynchronous events (Base 2.0 5.2.2);
/// - shadow doorbells and EventIdx (pci/shadow_doorbells.hpp), read and written per poll group;
/// - interrupt signalling: MSI-X vectors raised per context with coalescing
///   (pci/interrupt_signalling.hpp) and the INTx pin.
///
/// Composition: pci::function<Controller, Traits> is a base of nvmekit::controller (CRTP;
/// controller.hpp). It reaches the controller's queues, registers, poll groups and logs through
/// self(), resolved at compile time: nothing on the I/O path is virtual or indirect.

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include <nvmekit/config.hpp>
#include <nvmekit/contracts/interrupts.hpp>
#include <nvmekit/contracts/tracer.hpp>
#include <nvmekit/core/controller_config.hpp>
#include <nvmekit/core/io_context.hpp>
#include <nvmekit/pci/doorbell_channel.hpp>
#include <nvmekit/pci/doorbell_table.hpp>
#include <nvmekit/pci/interrupt_signalling.hpp>
#include <nvmekit/pci/msix.hpp>
#include <nvmekit/pci/shadow_doorbells.hpp>
#include <nvmekit/queues/queue_pair.hpp>
#include <nvmekit/runtime/poll_group_state.hpp>
#include <nvmekit/spec/log_pages.hpp>
#include <nvmekit/spec/registers.hpp>
#include <nvmekit/spec/status.hpp>
#include <nvmekit/state/error_log.hpp>
#include <nvmekit/state/interrupt_coalescing.hpp>
#include <nvmekit/state/register_file.hpp>
#include <nvmekit/state/reset_state_machine.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace pci {

/// The PCIe function of `Controller`; see the top of this header. `Controller` derives from it
/// and befriends it.
template <typename Controller, typename Traits>
class function {
protected:
    using command = detail::controller_command<Controller, Traits>;
    using group_type = detail::poll_group_state<command, Traits::threading::concurrent_groups>;
    using interrupts_type = typename Traits::interrupts;
    static constexpr nvmekit::limits limits = Traits::limits;
    /// Doorbell Buffer Config: the shadow doorbells are read in place, which asynchronous DMA
    /// cannot do, so a controller with it reports the command as not supported.
    static constexpr bool shadow_doorbells_supported = !dma_completes_later_v<typename Traits::dma>;
    using msix_type = msix_table<interrupts_type>;
    static constexpr std::uint64_t page_bytes = 4096;

    explicit function(interrupts_type& interrupts)
        : msix_{interrupts, limits.msix_vectors}
        , intx_{interrupts}
        , interrupts_state_{limits.msix_vectors}
        , doorbells_{limits.io_queues}
    {}

    [[nodiscard]] Controller& self() noexcept { return static_cast<Controller&>(*this); }
    [[nodiscard]] const Controller& self() const noexcept { return static_cast<const Controller&>(*this); }

    [[nodiscard]] static constexpr std::uint64_t round_up(std::uint64_t value,
                                                          std::uint64_t alignment) noexcept
    {
        return (value + alignment - 1) / alignment * alignment;
    }

public:
    // ---- BAR0 layout ------------------------------------------------------------------------

    /// First byte of the MSI-X table in BAR0 (page aligned, after the doorbells).
    [[nodiscard]] std::uint64_t msix_table_offset() const noexcept
    {
        const std::uint64_t doorbells_end =
            spec::doorbell_base_offset +
            (2U * (std::uint64_t{limits.io_queues} + 1U)) * self().registers_.doorbell_stride_bytes();
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
        const std::uint64_t end =
            msix_pba_offset() + round_up(msix_type::pba_bytes(limits.msix_vectors), page_bytes);
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
        if (self().coordination_.fatal_pending()) {
            // A concurrent group's fatal queue DMA error shows in CSTS.CFS from now, not only
            // after the admin context's next poll.
            const typename Controller::coordination_scope scope{self().coordination_.admin()};
            self().take_fatal_error();
        }
        const std::uint64_t host_errors = self().registers_.host_error_count();
        const std::uint64_t value = self().registers_.read(offset, width);
        trace_register_error(host_errors, offset);
        return value;
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
        const std::uint64_t host_errors = self().registers_.host_error_count();
        const register_event event = self().registers_.write(offset, width, value);
        trace_register_error(host_errors, offset);
        switch (event.kind) {
        case register_event_kind::none:
        case register_event_kind::admin_queue_attributes_written: break;
        case register_event_kind::cc_written:
            self().with_groups_paused([&] {
                self().on_cc_written(spec::cc_register{static_cast<std::uint32_t>(event.old_value)},
                                     spec::cc_register{static_cast<std::uint32_t>(event.new_value)});
            });
            break;
        case register_event_kind::nssr_written:
            if (event.new_value == spec::nvm_subsystem_reset_value) {
                self().handle_event(controller_event::subsystem_reset);
            }
            break;
        case register_event_kind::interrupt_mask_changed: update_intx(); break;
        case register_event_kind::doorbell: {
            // Checked here, on the host-facing side, so that a bad write never replaces a good one
            // still waiting in the channel: hardware applies doorbell writes one by one.
            const auto value = static_cast<std::uint32_t>(event.new_value);
            switch (doorbell_table_.check(event.queue_id, event.completion_queue, value)) {
            case pci::doorbell_table::write_check::valid:
                ring_doorbell(event.queue_id, event.completion_queue, value);
                break;
            case pci::doorbell_table::write_check::no_queue: // an invalid doorbell register (Base 2.0 5.2)
                trace_doorbell_error(event.completion_queue ? trace_event::err_doorbell_invalid_cq
                                                            : trace_event::err_doorbell_invalid_sq,
                                     event.queue_id, value);
                break;
            case pci::doorbell_table::write_check::beyond_queue:
                trace_doorbell_error(event.completion_queue ? trace_event::err_doorbell_invalid_cq_head
                                                            : trace_event::err_doorbell_invalid_sq_tail,
                                     event.queue_id, value);
                break;
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
    void function_level_reset() { self().handle_event(controller_event::function_reset); }

    /// Where the host decodes BAR0 (0: nowhere, the default). From then on every DMA touching
    /// [address, address + bar0_size()) is refused, whatever the DMA provider would do with it:
    /// a data transfer ends in Data Transfer Error, a queue access in a fatal controller status,
    /// so no host value can make the controller read or write its own registers. The transport
    /// that owns PCI configuration space calls this when the host programs BAR0.
    void set_bar0_address(std::uint64_t address) noexcept
    {
        bar0_address_ = address;
        if (bus_master_.load(std::memory_order_relaxed)) {
            self().dma_.exclude(address, address == 0 ? 0 : bar0_size());
        }
    }
    /// The BAR0 address set by set_bar0_address (0: none).
    [[nodiscard]] std::uint64_t bar0_address() const noexcept { return bar0_address_; }

    /// PCI Command.Bus Master Enable, set by the transport that owns PCI configuration space
    /// (enabled until then, for embedders without one). While it is clear the function masters
    /// nothing (PCIe Base 4.0 7.5.1.1.3): no command is fetched, no data moves, no completion is
    /// posted and no MSI-X message is sent; doorbells and backend completions wait, register
    /// events (CC.EN, CC.SHN, resets) still run, and setting it again resumes. Any DMA that
    /// would still be attempted is refused (Data Transfer Error). Call it where set_bar0_address
    /// is called.
    void set_bus_master(bool enabled) noexcept
    {
        bus_master_.store(enabled, std::memory_order_release);
        if (enabled) {
            self().dma_.exclude(bar0_address_, bar0_address_ == 0 ? 0 : bar0_size());
            for (auto& group : self().coordination_.groups()) {
                if (group->runner) {
                    group->runner->notify(); // it may have slept through doorbells meanwhile
                }
            }
        } else {
            self().dma_.exclude(0, std::numeric_limits<std::uint64_t>::max()); // every address
        }
    }
    [[nodiscard]] bool bus_master() const noexcept { return bus_master_.load(std::memory_order_relaxed); }

    [[nodiscard]] msix_table<interrupts_type>& msix() noexcept { return msix_; }

    // ---- what the admin command set configures (AdminHandlerContext) --------------------------

    /// The coalescers of every context, configured alike (Set Features 08h and 09h, resets).
    template <typename F>
    void for_each_coalescer(F&& f)
    {
        f(interrupts_state_.coalescer());
        for (auto& group : self().coordination_.groups()) {
            f(group->interrupts.coalescer());
        }
    }

    /// The admin context's interrupt coalescing; every context's is configured alike.
    [[nodiscard]] const interrupt_coalescer& admin_coalescer() const noexcept
    {
        return interrupts_state_.coalescer();
    }

    /// Doorbell Buffer Config's buffers: shadow doorbells at `shadow_address`, EventIdx at
    /// `event_index_address` (each one memory page, checked by the caller).
    void configure_shadow_doorbells(std::uint64_t shadow_address, std::uint64_t event_index_address)
    {
        shadow_doorbells_.configure(shadow_address, event_index_address,
                                    self().registers_.doorbell_stride_bytes());
    }

protected:
    // ---- doorbells ----------------------------------------------------------------------------

    /// The admin context's doorbells (every context's, unless groups are concurrent), after the
    /// invalid doorbell writes counted since the last poll.
    void drain_doorbells()
    {
        take_doorbell_errors();
        if (self().concurrent()) {
            doorbells_.drain([this](std::uint16_t qid, bool completion_queue, std::uint32_t value) {
                apply_doorbell(self().coordination_.admin(), qid, completion_queue, value);
            });
            return;
        }
        drain_every_doorbell([this](std::uint16_t qid, bool completion_queue, std::uint32_t value) {
            apply_doorbell(self().cq_owner(qid), qid, completion_queue, value);
        });
    }

    /// Invalid doorbell writes counted on the host-facing side (and by concurrent groups): counted,
    /// logged and reported as asynchronous events.
    void take_doorbell_errors()
    {
        if (const auto writes = doorbell_table_.take_invalid_registers(); writes != 0) {
            record_invalid_doorbells(spec::error_event::invalid_doorbell_register, writes);
        }
        if (const auto writes = doorbell_table_.take_invalid_values(); writes != 0) {
            record_invalid_doorbells(spec::error_event::invalid_doorbell_value, writes);
        }
    }

    /// Admin context: `writes` invalid doorbell writes of one kind. Each is an error with its own
    /// Error Information entry, the log page the asynchronous event names (Base 2.0 5.2.2); one
    /// event reports them all.
    void record_invalid_doorbells(spec::error_event event, std::uint64_t writes)
    {
        self().statistics_.invalid_doorbells += writes;
        // Not tied to a command (Base 2.0 5.16.1.2): SQID, CID and Parameter Error Location are
        // FFFFh, and the status is the most applicable one: a doorbell of a queue that does not
        // exist names an invalid queue, a value beyond the queue is an invalid field.
        error_record record{};
        record.status = event == spec::error_event::invalid_doorbell_register
                            ? spec::status{spec::command_specific_status::invalid_queue_identifier}
                            : spec::status{spec::generic_status::invalid_field};
        // Entries that newer ones of the same burst would replace at once only advance the count.
        const std::uint64_t kept = std::min<std::uint64_t>(writes, self().logs_.errors().capacity());
        self().logs_.skip_errors(writes - kept);
        for (std::uint64_t i = 0; i < kept; ++i) {
            self().record_error(record);
        }
        self().logs_.events().post(spec::async_event_completion{event});
    }

    /// A doorbell value for queue `qid`, which `group` owns (for a CQ) or runs (for an SQ).
    /// A doorbell register write arms the queue's shadow slot (read_shadow_doorbells).
    void apply_doorbell(group_type& group, std::uint16_t qid, bool completion_queue, std::uint32_t value)
    {
        if (completion_queue) {
            apply_cq_head(group, qid, value, true);
        } else {
            apply_sq_tail(qid, value, true);
        }
    }

    /// Hands a checked doorbell value to the context that owns the queue, and wakes that
    /// context's thread when it sleeps. A queue's group is stored before its doorbell becomes
    /// valid (pci::doorbell_table).
    void ring_doorbell(std::uint16_t qid, bool completion_queue, std::uint32_t value)
    {
        group_type* group =
            qid == 0 ? nullptr
                     : self().coordination_.groups()[doorbell_table_.group(qid, completion_queue)].get();
        auto& channel = group != nullptr ? group->doorbells : doorbells_;
        if (completion_queue) {
            channel.ring_cq_head(qid, value);
        } else {
            channel.ring_sq_tail(qid, value);
        }
        if (group != nullptr && group->runner) {
            group->runner->notify(); // after the value is visible (poll_group.hpp, the producers' rule)
        }
    }

    /// Forgets every doorbell value not yet taken (the admin channel's and every group's).
    void clear_every_doorbell() noexcept
    {
        doorbells_.clear();
        for (auto& group : self().coordination_.groups()) {
            group->doorbells.clear();
        }
    }

    /// The admin queue's doorbells, then every poll group's.
    template <typename F>
    void drain_every_doorbell(F&& f)
    {
        doorbells_.drain(f);
        for (auto& group : self().coordination_.groups()) {
            group->doorbells.drain(f);
        }
    }

    /// `from_register`: written to the doorbell register (not read from a shadow slot).
    void apply_sq_tail(std::uint16_t qid, std::uint32_t value, bool from_register = false)
    {
        if (!self().submission_queue_exists(qid)) {
            trace_doorbell_error(trace_event::err_doorbell_invalid_sq, qid, value);
            report_invalid_doorbell(spec::error_event::invalid_doorbell_register);
            return;
        }
        auto& sq = *self().submission_queues_[qid];
        sq.shadow_armed = sq.shadow_armed || from_register;
        if (!sq.ring.set_tail(value)) {
            trace_doorbell_error(trace_event::err_doorbell_invalid_sq_tail, qid, value);
            report_invalid_doorbell(spec::error_event::invalid_doorbell_value);
        }
    }

    void apply_cq_head(group_type& group, std::uint16_t qid, std::uint32_t value, bool from_register = false)
    {
        if (!self().completion_queue_exists(qid)) {
            trace_doorbell_error(trace_event::err_doorbell_invalid_cq, qid, value);
            report_invalid_doorbell(spec::error_event::invalid_doorbell_register);
            return;
        }
        auto& cq = *self().completion_queues_[qid];
        cq.shadow_armed = cq.shadow_armed || from_register;
        if (!cq.ring.set_head(value)) {
            trace_doorbell_error(trace_event::err_doorbell_invalid_cq_head, qid, value);
            report_invalid_doorbell(spec::error_event::invalid_doorbell_value);
            return;
        }
        self().post_held_completions(group, cq);
    }

    void report_invalid_doorbell(spec::error_event event)
    {
        if (self().concurrent()) { // counted and reported by the admin context
            if (event == spec::error_event::invalid_doorbell_register) {
                doorbell_table_.count_invalid_register();
            } else {
                doorbell_table_.count_invalid_value();
            }
            return;
        }
        record_invalid_doorbells(event, 1);
    }

    /// The shadow doorbells (pci/shadow_doorbells.hpp) of one group's queues (the admin queue has none). A
    /// queue's slot is taken as work only once the host has written the queue's doorbell register since
    /// creating it: a host may re-create a queue without clearing its slots (SPDK's driver does), and the old
    /// queue's tail must not run as new commands. Hosts write the register first, because a new queue's
    /// EventIdx (0) asks them to.
    void read_shadow_doorbells(group_type& group)
    {
        if (!shadow_doorbells_.enabled()) {
            return;
        }
        for (const std::uint16_t qid : group.completion_queues) {
            read_shadow_cq_head(group, qid);
        }
        for (const std::uint16_t qid : group.submission_queues) {
            read_shadow_sq_tail(group, qid);
        }
    }

    void read_shadow_cq_head(group_type& group, std::uint16_t qid)
    {
        std::uint32_t head = 0;
        if (!self().completion_queues_[qid]->shadow_armed) {
            return;
        }
        if (read_shadow(group, qid, true, head) && head != self().completion_queues_[qid]->ring.head()) {
            apply_cq_head(group, qid, head);
        }
    }

    void read_shadow_sq_tail(group_type& group, std::uint16_t qid)
    {
        std::uint32_t tail = 0;
        if (!self().submission_queues_[qid]->shadow_armed) {
            return;
        }
        if (read_shadow(group, qid, false, tail) && tail != self().submission_queues_[qid]->ring.tail()) {
            apply_sq_tail(qid, tail);
        }
    }

    bool read_shadow(group_type& group, std::uint16_t qid, bool completion_queue, std::uint32_t& value)
    {
        if constexpr (shadow_doorbells_supported) {
            if (shadow_doorbells_.read(self().dma_, qid, completion_queue, value)) {
                ++group.dma_errors;
                nvmekit::detail::emit_trace(
                    self().tracer_, trace_record{.event = trace_event::err_shadow_doorbell_dma, .qid = qid});
                return false;
            }
            return true;
        } else {
            return false; // never enabled (Doorbell Buffer Config is not offered)
        }
    }

    /// The EventIdx of one group's queues.
    void write_event_indexes(group_type& group)
    {
        if (!shadow_doorbells_.enabled()) {
            return;
        }
        for (const std::uint16_t qid : group.submission_queues) {
            write_event_index(group, qid, false, self().submission_queues_[qid]->ring.tail());
        }
        for (const std::uint16_t qid : group.completion_queues) {
            write_event_index(group, qid, true, self().completion_queues_[qid]->ring.head());
        }
    }

    void write_event_index(group_type& group, std::uint16_t qid, bool completion_queue, std::uint32_t value)
    {
        if constexpr (shadow_doorbells_supported) {
            if (shadow_doorbells_.write_event_index(self().dma_, qid, completion_queue, value)) {
                ++group.dma_errors;
                nvmekit::detail::emit_trace(
                    self().tracer_, trace_record{.event = trace_event::err_shadow_doorbell_dma, .qid = qid});
            }
        }
    }

    /// A new queue's EventIdx is 0, its tail or head, before the host learns of the queue: whatever
    /// an earlier queue left in the slot, the host's first doorbell then goes to the register,
    /// which arms the shadow slot (read_shadow_doorbells).
    void write_new_queue_event_index(std::uint16_t qid, bool completion_queue)
    {
        if (shadow_doorbells_.enabled()) {
            write_event_index(self().coordination_.admin(), qid, completion_queue, 0);
        }
    }

    // ---- interrupts ----------------------------------------------------------------------------

    /// The admin context's interrupts: every CQ's, unless groups are concurrent (then the admin
    /// CQ's, and the INTx pin for all).
    void signal_interrupts()
    {
        const auto now = self().clock_.now();
        auto& state = interrupts_state_;
        if (self().concurrent()) {
            if (self().completion_queues_[0]) {
                consider_interrupt(*self().completion_queues_[0], state, now);
            }
        } else {
            for (auto& cq : self().completion_queues_) {
                if (cq) {
                    consider_interrupt(*cq, state, now);
                }
            }
        }
        signal_due_vectors(state, now);
        update_intx();
    }

    /// A concurrent group's interrupts: its CQs' vectors, and whether it wants the INTx pin.
    void signal_group_interrupts(group_type& group)
    {
        const auto now = self().clock_.now();
        for (const std::uint16_t qid : group.completion_queues) {
            consider_interrupt(*self().completion_queues_[qid], group.interrupts, now);
        }
        signal_due_vectors(group.interrupts, now);
        if constexpr (IntxInterruptProvider<interrupts_type>) {
            const bool wanted = group_wants_intx(group);
            if (wanted != group.intx_wanted.load(std::memory_order_relaxed)) {
                group.intx_wanted.store(wanted, std::memory_order_relaxed);
                refresh_intx();
            }
        }
    }

    /// Entries posted on `cq` since the last poll: due for its vector unless coalesced.
    static void consider_interrupt(detail::completion_queue<command>& cq, pci::vector_signalling& signalling,
                                   std::chrono::nanoseconds now)
    {
        if (cq.posted_since_signal == 0) {
            return;
        }
        const std::uint32_t posted = std::exchange(cq.posted_since_signal, 0U);
        if (cq.ring.interrupts_enabled()) {
            signalling.on_completions(cq.ring.interrupt_vector(), cq.ring.qid() != 0, posted, now);
        }
    }

    void signal_due_vectors(pci::vector_signalling& signalling, std::chrono::nanoseconds now)
    {
        signalling.raise_due(now, [this](std::uint16_t vector) {
            nvmekit::detail::emit_trace(
                self().tracer_, trace_record{.event = trace_event::interrupt_raised, .value = vector});
            msix_.signal(vector);
        });
    }

    [[nodiscard]] static bool cq_wants_intx(const detail::completion_queue<command>& cq) noexcept
    {
        return cq.ring.interrupts_enabled() && cq.ring.outstanding() != 0;
    }

    /// Pin-based interrupts (when MSI-X is off and the provider has INTx): the pin is asserted
    /// while a CQ with interrupts enabled holds entries and INTMS does not mask vector 0. Admin
    /// context. With concurrent groups, running groups report their CQs at the end of each poll
    /// (signal_group_interrupts); while they are paused or stopped the admin context reads their
    /// CQs itself.
    void update_intx()
    {
        if constexpr (IntxInterruptProvider<interrupts_type>) {
            const bool allowed = !msix_.enabled() && (self().registers_.interrupt_mask() & 1U) == 0;
            if (self().concurrent()) {
                intx_.report_admin(allowed, self().completion_queues_[0] &&
                                                cq_wants_intx(*self().completion_queues_[0]));
                if (self().coordination_.paused_or_stopped()) {
                    for (auto& group : self().coordination_.groups()) {
                        group->intx_wanted.store(group_wants_intx(*group), std::memory_order_relaxed);
                    }
                }
                refresh_intx();
                return;
            }
            intx_.set_level(allowed &&
                            std::any_of(self().completion_queues_.begin(), self().completion_queues_.end(),
                                        [](const auto& cq) { return cq && cq_wants_intx(*cq); }));
        }
    }

    /// Whether a CQ of `group` wants the INTx pin; its owner only.
    [[nodiscard]] bool group_wants_intx(const group_type& group) const
    {
        return std::any_of(
            group.completion_queues.begin(), group.completion_queues.end(),
            [this](std::uint16_t qid) { return cq_wants_intx(*self().completion_queues_[qid]); });
    }

    /// Concurrent groups: sets the pin from what the admin context and the groups last reported
    /// (pci::intx_pin). Any thread.
    void refresh_intx()
    {
        if constexpr (IntxInterruptProvider<interrupts_type>) {
            intx_.refresh([this] {
                return std::any_of(
                    self().coordination_.groups().begin(), self().coordination_.groups().end(),
                    [](const auto& group) { return group->intx_wanted.load(std::memory_order_relaxed); });
            });
        }
    }

    void trace_doorbell_error(trace_event event, std::uint16_t qid, std::uint32_t value) noexcept
    {
        nvmekit::detail::emit_trace(self().tracer_, trace_record{.event = event, .qid = qid, .value = value});
    }

    /// The register file's host error of the access at `offset`, if it counted one since
    /// `host_errors_before`.
    void trace_register_error(std::uint64_t host_errors_before, std::uint64_t offset) noexcept
    {
        if (self().registers_.host_error_count() != host_errors_before) {
            nvmekit::detail::emit_trace(self().tracer_, trace_record{.event = register_error_event(
                                                                         self().registers_.last_host_error()),
                                                                     .value = offset});
        }
    }

    msix_type msix_;
    pci::intx_pin<interrupts_type> intx_;
    /// Coalescing and due vectors of the admin context; of every CQ unless groups are concurrent,
    /// when each group has its own (configured alike).
    pci::vector_signalling interrupts_state_;
    doorbell_channel doorbells_; ///< the admin queue's; the I/O queues' are in their poll groups
    /// By doorbell: its queue's entries and poll group, and the invalid writes not yet taken.
    pci::doorbell_table doorbell_table_{limits.io_queues};
    std::uint64_t bar0_address_ = 0;     ///< where the host decodes BAR0 (set_bar0_address)
    std::atomic<bool> bus_master_{true}; ///< PCI Command.Bus Master Enable (set_bus_master)
    shadow_doorbells shadow_doorbells_;  ///< Doorbell Buffer Config's buffers, when configured
};

} // namespace pci
NVMEKIT_END_NAMESPACE
