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
/// Threading: by default nothing runs unless the embedder calls a member function, and the same
/// sequence of calls always gives the same results; poll() runs the admin queue and every poll
/// group on the caller's thread. With the multi_threaded policy (Traits::threading, threading.hpp)
/// and controller_config::concurrent_poll_groups the I/O queues' poll groups run concurrently,
/// each on one thread at a time (start_poll_groups() starts one per group, or the embedder calls
/// poll_group(i) from its own loops):
///
/// - The admin context is the thread that calls poll(), mmio_write() for registers,
///   function_level_reset(), set_temperature() and the subsystem's namespace changes: one thread
///   at a time. Admin commands and register events run with every group paused (a per-group
///   seq_cst flag handshake, no lock on the groups' side), so they see and change group state
///   whole; a Controller Reset, shutdown or FLR thus acts on every group before CSTS changes.
/// - Groups share nothing on the I/O path: each owns its queues, doorbell channel, staging
///   buffers, counters and interrupt coalescing; errors reach the admin context's Error
///   Information log through a mailbox, and a fatal queue DMA error through a flag.
/// - Doorbell writes (mmio_write to a doorbell) go to the owning group's channel and wake its
///   thread; MSI-X table and PBA accesses and raises are safe from any thread.
/// - The DMA provider, clock and interrupt provider must be safe to use from every group's
///   thread, and the namespaces' backends must accept submit() from several threads at once and
///   concurrently with poll() (ram_backend with `concurrent = true`, null_backend, file_backend,
///   testing::test_backend). Backends are polled by the admin context only: a request completed
///   inside submit() finishes on its group's thread at once; one completed later, in poll(), is
///   handed to its group (a completion_inbox) and finished at the group's next poll, or by the
///   admin context while the groups are paused or stopped.
/// - Keep polling every group while the controller runs (start_poll_groups() does): a group
///   finishes its routed completions and takes its doorbells only in poll_group().

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <boost/intrusive/list.hpp>

#include <nvmekit/async_dma.hpp>
#include <nvmekit/async_events.hpp>
#include <nvmekit/backends/any_backend.hpp>
#include <nvmekit/block_backend.hpp>
#include <nvmekit/clock.hpp>
#include <nvmekit/command_sets/admin.hpp>
#include <nvmekit/command_sets/features.hpp>
#include <nvmekit/command_sets/identify.hpp>
#include <nvmekit/command_sets/nvm.hpp>
#include <nvmekit/completion_inbox.hpp>
#include <nvmekit/config.hpp>
#include <nvmekit/controller_config.hpp>
#include <nvmekit/controller_enable.hpp>
#include <nvmekit/controller_logs.hpp>
#include <nvmekit/cq_ring.hpp>
#include <nvmekit/dispatcher.hpp>
#include <nvmekit/dma.hpp>
#include <nvmekit/dma_guard.hpp>
#include <nvmekit/dma_journal.hpp>
#include <nvmekit/doorbell_channel.hpp>
#include <nvmekit/error_log.hpp>
#include <nvmekit/feature_table.hpp>
#include <nvmekit/firmware_slots.hpp>
#include <nvmekit/group_coordination.hpp>
#include <nvmekit/handler_context.hpp>
#include <nvmekit/health_log.hpp>
#include <nvmekit/host_mistakes.hpp>
#include <nvmekit/host_ranges.hpp>
#include <nvmekit/interrupt_coalescing.hpp>
#include <nvmekit/interrupts.hpp>
#include <nvmekit/io_context.hpp>
#include <nvmekit/keep_alive_timer.hpp>
#include <nvmekit/mailbox.hpp>
#include <nvmekit/msix.hpp>
#include <nvmekit/namespace_table.hpp>
#include <nvmekit/nvm_namespace.hpp>
#include <nvmekit/pci/doorbell_table.hpp>
#include <nvmekit/pci/interrupt_signalling.hpp>
#include <nvmekit/pci/shadow_doorbells.hpp>
#include <nvmekit/poll_group.hpp>
#include <nvmekit/poll_group_state.hpp>
#include <nvmekit/poll_group_statistics.hpp>
#include <nvmekit/prp_walker.hpp>
#include <nvmekit/queue_memory.hpp>
#include <nvmekit/queue_pair.hpp>
#include <nvmekit/register_file.hpp>
#include <nvmekit/request_pool.hpp>
#include <nvmekit/reset_state_machine.hpp>
#include <nvmekit/sgl_walker.hpp>
#include <nvmekit/shutdown_flushes.hpp>
#include <nvmekit/spec/commands.hpp>
#include <nvmekit/spec/features.hpp>
#include <nvmekit/spec/identify.hpp>
#include <nvmekit/spec/log_pages.hpp>
#include <nvmekit/spec/opcodes.hpp>
#include <nvmekit/spec/queue_entries.hpp>
#include <nvmekit/spec/registers.hpp>
#include <nvmekit/spec/status.hpp>
#include <nvmekit/sq_ring.hpp>
#include <nvmekit/subsystem.hpp>
#include <nvmekit/telemetry_log.hpp>
#include <nvmekit/threading.hpp>
#include <nvmekit/tracer.hpp>

NVMEKIT_BEGIN_NAMESPACE

template <typename Traits>
class controller : public detail::io_context<controller<Traits>, Traits> {
    using io_context_type = detail::io_context<controller<Traits>, Traits>;
    friend io_context_type;
    using io_context_type::acquire_request;
    using io_context_type::complete;
    using io_context_type::dma_slots_;
    using io_context_type::dma_status;
    using io_context_type::drop_completion;
    using io_context_type::error;
    using io_context_type::execute;
    using io_context_type::fetch_batch;
    using io_context_type::free_retired_queues;
    using io_context_type::poll_backends;
    using io_context_type::poll_dma;
    using io_context_type::post_held_completions;
    using io_context_type::process_submission_queue;
    using io_context_type::report_async_events;
    using io_context_type::resume_staging_waiters;
    using io_context_type::retire_submission_queue;
    using io_context_type::retired_queues_;
    using io_context_type::staging_per_group_;
    using io_context_type::with_command_dma;

public:
    using dma_type = typename Traits::dma;
    using interrupts_type = typename Traits::interrupts;
    using clock_type = typename Traits::clock;
    using backend_type = typename Traits::backend;
    using tracer_type = typename Traits::tracer;
    using threading_type = typename Traits::threading;
    using subsystem_type = subsystem<backend_type>;
    using namespace_type = nvm_namespace<backend_type>;
    static constexpr nvmekit::limits limits = Traits::limits;

    /// True when Traits::dma is an AsyncDmaProvider whose requests complete after submit()
    /// returns: the controller then never waits for host memory (dma_journal.hpp). Any other
    /// provider, an InlineAsyncDmaProvider included, takes the synchronous path.
    static constexpr bool dma_completes_later = dma_completes_later_v<dma_type>;
    /// Doorbell Buffer Config: the shadow doorbells are read in place, which asynchronous DMA
    /// cannot do, so a controller with it reports the command as not supported.
    static constexpr bool shadow_doorbells_supported = !dma_completes_later;

private:
    static consteval bool check_dma()
    {
        if constexpr (dma_completes_later) {
            return check_async_dma_provider<dma_type>();
        } else {
            return check_dma_provider<dma_type>();
        }
    }

public:
    static_assert(check_dma());
    static_assert(check_interrupt_provider<interrupts_type>());
    static_assert(check_clock<clock_type>());
    static_assert(check_block_backend<backend_type>());
    static_assert(check_tracer<tracer_type>());
    static_assert(check_threading_policy<threading_type>());
    static_assert(limits.io_queues >= 1, "limits: at least one I/O queue pair");
    static_assert(limits.queue_entries >= 2 && limits.queue_entries <= 65536,
                  "limits: queue_entries 2..65536");
    static_assert(limits.msix_vectors >= 1 && limits.msix_vectors <= 2048, "limits: msix_vectors 1..2048");
    static_assert(limits.aerl < async_event_queue::max_requests, "limits: aerl too large");
    static_assert(limits.mdts >= 1 && limits.mdts <= 10, "limits: mdts 1..10 (8 KiB to 4 MiB)");
    static_assert(limits.commands_per_queue >= 2, "limits: commands_per_queue at least 2");
    static_assert(limits.max_segments >= (1U << limits.mdts) + 1U,
                  "limits: max_segments must hold a PRP transfer of MDTS bytes (2^mdts + 1 ranges)");
    static_assert(limits.staging_buffers >= 1, "limits: at least one staging buffer");

    using no_async_state = detail::no_async_state;
    using async_command_state = detail::async_command_state<controller, Traits>;
    /// One command from fetch to posted completion (io_context.hpp). Handlers receive it; `sqe`
    /// is the command as the host submitted it. The other members belong to the controller.
    using command = detail::controller_command<controller, Traits>;

    using table_type = dispatch_table<controller, command>;
    using group_type = detail::poll_group_state<command, threading_type::concurrent_groups>;
    using coordination_type = detail::group_coordination<group_type, threading_type::concurrent_groups>;
    using coordination_scope = typename coordination_type::scope;

    /// A controller of `subsystem`, which must outlive it. The controller registers with the
    /// subsystem (which assigns CNTLID unless the config names one).
    controller(dma_type& dma, interrupts_type& interrupts, clock_type& clock, subsystem_type& subsystem,
               const controller_config& config = {})
        : dma_{dma}
        , clock_{clock}
        , config_{detail::checked_controller_config(config, limits, threading_type::concurrent_groups)}
        , subsystem_{&subsystem}
        , registers_{detail::controller_register_config(config_)}
        , msix_{interrupts, limits.msix_vectors}
        , intx_{interrupts}
        , interrupts_state_{limits.msix_vectors}
        , doorbells_{limits.io_queues}
        , state_machine_{reset_ops_}
    {
        submission_queues_.resize(std::size_t{limits.io_queues} + 1U);
        completion_queues_.resize(std::size_t{limits.io_queues} + 1U);
        staging_per_group_ = std::max<std::size_t>(1, limits.staging_buffers / config_.poll_groups);
        if constexpr (dma_completes_later) {
            if (config_.concurrent_poll_groups) {
                throw std::invalid_argument(
                    "controller_config: concurrent_poll_groups needs a DMA provider that completes inline "
                    "(asynchronous DMA is processed by poll())");
            }
        }
        coordination_.set_concurrent(config_.concurrent_poll_groups);
        for (std::uint16_t group = 0; group < config_.poll_groups; ++group) {
            coordination_.add_group(std::make_unique<group_type>(limits.io_queues, fetch_batch,
                                                                 limits.max_segments, limits.msix_vectors));
        }
        admin_data_.resize(admin_data_bytes);
        logs_.health().record_power_on(false);
        controller_id_ = subsystem_->register_controller(
            namespace_listener{this,
                               [](void* self, std::uint32_t nsid) {
                                   static_cast<controller*>(self)->on_namespace_changed(nsid);
                               }},
            config_.identity.controller_id);
        attached_namespaces_ =
            namespace_table<namespace_type>{std::size_t{subsystem_->options().max_namespaces} + 1U};
        for (std::uint32_t nsid = 1; nsid < attached_namespaces_.slots(); ++nsid) {
            attached_namespaces_.set(nsid, subsystem_->attached_namespace(nsid, controller_id_));
        }
    }

    /// A controller with a subsystem of its own, holding no namespace yet (reach it through
    /// subsystem()).
    controller(dma_type& dma, interrupts_type& interrupts, clock_type& clock,
               const controller_config& config = {})
        : controller(owned_subsystem{}, dma, interrupts, clock, std::make_unique<subsystem_type>(), config)
    {}

    /// The controller must not hold backend I/O, nor DMA in flight, when destroyed: poll() until
    /// backend_idle().
    ~controller()
    {
        stop_poll_groups();
        NVMEKIT_ASSERT(backend_idle(), "controller destroyed with backend I/O outstanding");
        subsystem_->unregister_controller(controller_id_);
    }

    controller(const controller&) = delete;
    controller& operator=(const controller&) = delete;

private:
    struct owned_subsystem {};
    /// Keeps `subsystem` alive through construction: when the configuration is refused, the
    /// parameter frees it.
    controller(owned_subsystem, dma_type& dma, interrupts_type& interrupts, clock_type& clock,
               std::unique_ptr<subsystem_type> subsystem, const controller_config& config)
        : controller(dma, interrupts, clock, *subsystem, config)
    {
        owned_subsystem_ = std::move(subsystem);
    }

public:
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
        if (coordination_.fatal_pending()) {
            // A concurrent group's fatal queue DMA error shows in CSTS.CFS from now, not only
            // after the admin context's next poll.
            const coordination_scope scope{coordination_.admin()};
            take_fatal_error();
        }
        const std::uint64_t host_errors = registers_.host_error_count();
        const std::uint64_t value = registers_.read(offset, width);
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
        const std::uint64_t host_errors = registers_.host_error_count();
        const register_event event = registers_.write(offset, width, value);
        trace_register_error(host_errors, offset);
        switch (event.kind) {
        case register_event_kind::none:
        case register_event_kind::admin_queue_attributes_written: break;
        case register_event_kind::cc_written:
            with_groups_paused([&] {
                on_cc_written(spec::cc_register{static_cast<std::uint32_t>(event.old_value)},
                              spec::cc_register{static_cast<std::uint32_t>(event.new_value)});
            });
            break;
        case register_event_kind::nssr_written:
            if (event.new_value == spec::nvm_subsystem_reset_value) {
                handle_event(controller_event::subsystem_reset);
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
    void function_level_reset() { handle_event(controller_event::function_reset); }

    /// Where the host decodes BAR0 (0: nowhere, the default). From then on every DMA touching
    /// [address, address + bar0_size()) is refused, whatever the DMA provider would do with it:
    /// a data transfer ends in Data Transfer Error, a queue access in a fatal controller status,
    /// so no host value can make the controller read or write its own registers. The transport
    /// that owns PCI configuration space calls this when the host programs BAR0.
    void set_bar0_address(std::uint64_t address) noexcept
    {
        bar0_address_ = address;
        if (bus_master_.load(std::memory_order_relaxed)) {
            dma_.exclude(address, address == 0 ? 0 : bar0_size());
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
            dma_.exclude(bar0_address_, bar0_address_ == 0 ? 0 : bar0_size());
            for (auto& group : coordination_.groups()) {
                if (group->runner) {
                    group->runner->notify(); // it may have slept through doorbells meanwhile
                }
            }
        } else {
            dma_.exclude(0, std::numeric_limits<std::uint64_t>::max()); // every address
        }
    }
    [[nodiscard]] bool bus_master() const noexcept { return bus_master_.load(std::memory_order_relaxed); }

    /// An internal fatal error: CSTS.CFS reads 1 until the host resets the controller.
    void fatal_error() { handle_event(controller_event::fatal_error); }

    // ---- message-based transports ------------------------------------------------------------
    // A transport without BAR0 (NVMe over Fabrics, the in-memory loopback of testing/loopback.hpp)
    // reaches the controller's registers as properties, and its queues are message-based: each
    // command arrives as an SQE the transport hands over (submit), each completion leaves as the
    // CQE the transport takes (take_completion) and sends on. No doorbell, no queue memory in the
    // host and no interrupt take part; a command's data is reached through its data pointer and
    // the DMA provider, which for such a transport maps the buffers that carry the data. The
    // admin queue is connected before the controller is enabled and lasts across Controller
    // Resets, which delete the I/O queues (NVMe over Fabrics 1.1 3.4, 3.5; Base 2.0 3.7.2); Create
    // and Delete I/O SQ/CQ and Doorbell Buffer Config are then not offered. Call these from the
    // admin context for the admin queue, and from the context that runs an I/O queue's poll group
    // for that queue (the admin context without concurrent poll groups).

    /// Reads a controller property (Base 2.0 3.1.4): a register below the doorbells, 4 or 8 bytes
    /// wide. Nothing when `offset` names no property.
    [[nodiscard]] std::optional<std::uint64_t> property_read(std::uint64_t offset, unsigned width)
    {
        if (!is_property(offset, width)) {
            return std::nullopt;
        }
        return mmio_read(offset, width);
    }

    /// Writes a controller property: CC, NSSR and the others act as the same register written
    /// through BAR0 does (the reset state machine, shutdown, NVM Subsystem Reset). False, changing
    /// nothing, when `offset` names no property.
    bool property_write(std::uint64_t offset, unsigned width, std::uint64_t value)
    {
        if (!is_property(offset, width)) {
            return false;
        }
        mmio_write(offset, width, value);
        return true;
    }

    /// Connects the message-based admin queue pair of `entries` slots (2 to 4096). Only while the
    /// controller is disabled (CC.EN = 0 and CSTS.RDY = 0), and only once: it stays connected for
    /// the controller's life, and from then on CC.EN = 1 takes this queue instead of AQA, ASQ and
    /// ACQ. Returns Invalid Queue Size or a Command Sequence Error otherwise. A fabrics Connect's
    /// KATO (`keep_alive_timeout_ms`, 0: none) becomes the Keep Alive Timer feature and starts the
    /// timer; one the feature does not take (above what KAS rounds into 32 bits) returns Keep
    /// Alive Timeout Invalid.
    spec::status connect_admin_queue(std::uint32_t entries, std::uint32_t keep_alive_timeout_ms = 0)
    {
        if (message_based_ || registers_.cc().get(spec::cc_register::en) ||
            registers_.csts().get(spec::csts_register::rdy)) {
            return error(spec::generic_status::command_sequence_error);
        }
        if (entries < 2 || entries > max_admin_queue_entries) {
            return error(spec::command_specific_status::invalid_queue_size);
        }
        if (keep_alive_timeout_ms != 0) {
            const auto kato = features_.set(spec::feature_id::keep_alive_timer, keep_alive_timeout_ms, false);
            if (!kato.status.is_success()) {
                return kato.status;
            }
            keep_alive_.restart(clock_.now());
        }
        message_based_ = true;
        admin_queue_entries_ = entries;
        cdw0_checked_ = spec::command_dword0{}
                            .with(spec::command_dword0::fuse, spec::fused_operation{3})
                            .with(spec::command_dword0::psdt, spec::data_pointer_type{3})
                            .raw;
        cdw0_required_ =
            spec::command_dword0{}
                .with(spec::command_dword0::psdt, spec::data_pointer_type::sgl_contiguous_metadata)
                .raw;
        return spec::status::success();
    }

    /// Connects message-based I/O queue pair `qid` (an SQ and its CQ of `entries` slots each)
    /// while the controller is ready. `qid` must be within the queues Number of Queues granted
    /// and not connected; `entries` 2 to CAP.MQES + 1. Returns Invalid Queue Identifier, Invalid
    /// Queue Size or a Command Sequence Error (not ready, or no message-based admin queue).
    spec::status connect_io_queue(std::uint16_t qid, std::uint32_t entries)
    {
        if (!message_based_ || state_machine_.state() != controller_state::ready) {
            return error(spec::generic_status::command_sequence_error);
        }
        if (qid == 0 || qid > std::min(allowed_submission_queues(), allowed_completion_queues()) ||
            submission_queue_exists(qid) || completion_queue_exists(qid)) {
            return error(spec::command_specific_status::invalid_queue_identifier);
        }
        if (entries < 2 || entries > registers_.cap().max_queue_entries()) {
            return error(spec::command_specific_status::invalid_queue_size);
        }
        return with_groups_paused([&] {
            completion_queues_[qid] =
                std::make_unique<detail::completion_queue<command>>(qid, entries, cq_ring::message_based);
            const std::uint16_t group = place_completion_queue(qid, 0, false);
            doorbell_table_.set_group(qid, true, group);
            insert_queue(coordination_.groups()[group]->completion_queues, qid);
            submission_queues_[qid] = std::make_unique<detail::submission_queue<command>>(
                qid, qid, entries, limits.commands_per_queue, sq_ring::message_based);
            doorbell_table_.set_group(qid, false, group);
            insert_queue(coordination_.groups()[group]->submission_queues, qid);
            completion_queues_[qid]->bound_submission_queues = 1;
            io_queue_created_ = true;
            return spec::status::success();
        });
    }

    /// Disconnects message-based I/O queue pair `qid`: its waiting commands and untaken
    /// completions are discarded; commands still in a backend end without a completion when the
    /// backend returns them. False when no such queue pair is connected.
    bool disconnect_io_queue(std::uint16_t qid)
    {
        if (qid == 0 || !submission_queue_exists(qid) || !submission_queues_[qid]->ring.is_message_based()) {
            return false;
        }
        with_groups_paused([&] {
            auto& cq = *completion_queues_[qid];
            cq.held.clear_and_dispose([](command* cmd) { drop_completion(*cmd); });
            erase_queue(group_of(*submission_queues_[qid]).submission_queues, qid);
            static_cast<void>(retire_submission_queue(qid));
            erase_queue(cq_owner(qid).completion_queues, qid);
            completion_queues_[qid].reset();
        });
        return true;
    }

    /// Whether the admin queue is message-based (connect_admin_queue).
    [[nodiscard]] bool message_based() const noexcept { return message_based_; }

    /// Hands a command to message-based queue `qid`; it runs at a following poll. False, taking
    /// nothing, when the queue holds entries - 1 commands not yet started (the host exceeded the
    /// queue's size), when no such message-based queue is connected, or when the controller is
    /// not ready (the admin queue takes commands only then).
    [[nodiscard]] bool submit(std::uint16_t qid, const spec::submission_queue_entry& sqe)
    {
        if (!submission_queue_exists(qid) || state_machine_.state() != controller_state::ready) {
            return false;
        }
        return submission_queues_[qid]->ring.push(sqe);
    }

    /// Takes the oldest completion of message-based queue `qid`, making room for one held while
    /// the queue was full. Nothing when the queue holds none or is not connected.
    [[nodiscard]] std::optional<spec::completion_queue_entry> take_completion(std::uint16_t qid)
    {
        if (!completion_queue_exists(qid)) {
            return std::nullopt;
        }
        auto& cq = *completion_queues_[qid];
        auto entry = cq.ring.pop();
        if (entry && !cq.held.empty()) {
            post_held_completions(qid == 0 ? coordination_.admin() : cq_owner(qid), cq);
        }
        return entry;
    }

    // ---- processing side ----------------------------------------------------------------------

    /// Does all the work that is ready: finishes a pending enable or shutdown, takes doorbell
    /// values, fetches and executes commands, posts completions and signals interrupts. Returns
    /// the number of commands executed. With concurrent poll groups it does this for the admin
    /// context alone (the admin queue, register events, events and logs); the groups run in
    /// poll_group().
    std::size_t poll()
    {
        const coordination_scope scope{coordination_.admin()};
        handle_event(controller_event::tick);
        take_group_reports();
        const auto state = state_machine_.state();
        if (state == controller_state::shutting_down || state == controller_state::shut_down) {
            // The queues still exist: the host may consume completions, but commands no longer run
            // until a Controller Reset (Base 2.0 3.6), so a submission is a host protocol error.
            // (Concurrent groups are stopped: their doorbells are taken here.)
            statistics_.host_protocol_errors += doorbell_table_.take_invalid_registers();
            drain_every_doorbell([this](std::uint16_t qid, bool completion_queue, std::uint32_t value) {
                if (completion_queue) {
                    apply_cq_head(cq_owner(qid), qid, value);
                } else {
                    ++statistics_.host_protocol_errors;
                    trace_doorbell_error(trace_event::err_doorbell_not_ready, qid, value);
                }
            });
            poll_dma(); // entries being written still count as posted when their writes complete
            update_intx();
            return 0;
        }
        if (state == controller_state::ready && !bus_master_.load(std::memory_order_acquire)) {
            return 0; // Bus Master Enable is clear: doorbells and backend completions wait
        }
        poll_dma();
        poll_backends();
        free_retired_queues();
        if (ready_clear_deferred_ && io_outstanding() == 0 && this->dma_idle()) {
            ready_clear_deferred_ = false;
            set_csts_bit(spec::csts_register::rdy, false); // the Controller Reset is complete
        }
        if (state != controller_state::ready) {
            statistics_.host_protocol_errors += doorbell_table_.take_invalid_registers();
            drain_every_doorbell([this](std::uint16_t qid, bool, std::uint32_t value) {
                ++statistics_.host_protocol_errors;
                trace_doorbell_error(trace_event::err_doorbell_not_ready, qid, value);
            });
            return 0;
        }
        drain_doorbells();
        if (!concurrent()) {
            for (auto& group : coordination_.groups()) {
                read_shadow_doorbells(*group);
            }
        }
        poll_backends();
        if (!concurrent()) {
            for (auto& group : coordination_.groups()) {
                resume_staging_waiters(*group);
            }
        }
        check_keep_alive();
        std::size_t executed = 0;
        if (submission_queues_[0] && !submission_queues_[0]->ring.empty()) {
            // Admin commands change what the groups use (queues, features, namespaces): concurrent
            // groups are paused while they run.
            with_groups_paused(
                [&] { executed += process_submission_queue(*submission_queues_[0], coordination_.admin()); });
        }
        if (!concurrent()) {
            for (auto& group : coordination_.groups()) {
                if (state_machine_.state() != controller_state::ready) {
                    break; // a command (or a DMA failure) changed the state
                }
                executed += process_group_queues(*group);
                take_fatal_error();
            }
        }
        poll_backends();
        poll_dma();
        free_retired_queues();
        report_async_events();
        if (!concurrent()) {
            for (auto& group : coordination_.groups()) {
                write_event_indexes(*group);
            }
        }
        signal_interrupts();
        return executed;
    }

    /// Runs poll group `index` alone: takes its queues' doorbell values, executes their commands,
    /// posts their completions and signals their interrupts. Returns the number of commands
    /// executed. Without concurrent_poll_groups, poll() already does this for every group, and
    /// this is for tests that drive groups one by one (never concurrently with poll()). With
    /// concurrent_poll_groups, this is how a group runs: from any thread, concurrently with poll()
    /// and with the other groups, one call at a time per group (not while start_poll_groups()'s
    /// threads run).
    std::size_t poll_group(std::uint16_t index)
    {
        NVMEKIT_ASSERT(index < coordination_.groups().size(), "poll_group: no such group");
        auto& group = *coordination_.groups()[index];
        if (!concurrent()) {
            if (state_machine_.state() != controller_state::ready ||
                !bus_master_.load(std::memory_order_relaxed)) {
                return 0;
            }
            group.doorbells.drain([&](std::uint16_t qid, bool completion_queue, std::uint32_t value) {
                apply_doorbell(group, qid, completion_queue, value);
            });
            poll_dma();
            const std::size_t executed = process_group_queues(group);
            take_fatal_error();
            signal_interrupts();
            return executed;
        }
        if (!coordination_type::enter_poll(group)) {
            return 0;
        }
        if (group.stopped || !bus_master_.load(std::memory_order_acquire)) {
            coordination_type::leave_poll(group);
            return 0;
        }
        const coordination_scope scope{group};
        coordination_type::take_routed(group);
        group.doorbells.drain([&](std::uint16_t qid, bool completion_queue, std::uint32_t value) {
            apply_doorbell(group, qid, completion_queue, value);
        });
        read_shadow_doorbells(group);
        resume_staging_waiters(group);
        const std::size_t executed = process_group_queues(group);
        write_event_indexes(group);
        signal_group_interrupts(group);
        coordination_type::leave_poll(group);
        return executed;
    }

    /// Starts one thread per poll group (a poll_group_runner calling poll_group(i), sleeping on
    /// an eventfd when idle and woken by doorbell writes). Needs concurrent_poll_groups (else
    /// throws std::logic_error), and so the multi_threaded policy: with single_threaded it does
    /// not compile. `options` applies to every group; its name gets the group index appended,
    /// and `cpus`, when not empty, pins group i to cpus[i % cpus.size()]. Call from the admin
    /// context.
    // clang-format off
    void start_poll_groups(const poll_group_options& options = {}, const std::vector<unsigned>& cpus = {})
        requires(threading_type::concurrent_groups)
    // clang-format on
    {
        if (!concurrent()) {
            throw std::logic_error(
                "controller::start_poll_groups needs controller_config::concurrent_poll_groups");
        }
        if (poll_groups_started()) {
            return;
        }
        for (std::size_t index = 0; index < coordination_.groups().size(); ++index) {
            auto group_options = options;
            group_options.name += std::to_string(index);
            if (!cpus.empty()) {
                group_options.cpu = cpus[index % cpus.size()];
            }
            auto& group = *coordination_.groups()[index];
            group.runner = std::make_unique<poll_group_runner<>>(
                [this, index] { return poll_group(static_cast<std::uint16_t>(index)); },
                std::move(group_options));
        }
        for (auto& group : coordination_.groups()) {
            group->runner->start();
        }
    }

    /// Stops and joins the threads start_poll_groups() started (nothing when none run). The
    /// queues stay as they are; poll_group() may then be called again.
    void stop_poll_groups()
    {
        if (!poll_groups_started()) {
            return;
        }
        for (auto& group : coordination_.groups()) {
            group->runner->stop();
        }
        for (auto& group : coordination_.groups()) {
            group->runner.reset();
        }
    }

    /// True between start_poll_groups() and stop_poll_groups().
    [[nodiscard]] bool poll_groups_started() const noexcept
    {
        return coordination_.groups().front()->runner != nullptr;
    }

    /// Runs `f` while no poll group runs: with concurrent groups, each is asked to pause and
    /// waited for until it is between polls; they resume when `f` returns. The controller does
    /// this around admin commands and register events; embedders and tests use it to read state
    /// the groups own (requests_in_use(), queue contents) consistently. Call from the admin
    /// context, never from a group.
    template <typename F>
    decltype(auto) with_groups_paused(F&& f)
    {
        struct resume_on_exit {
            controller& self;
            ~resume_on_exit() { self.resume_groups(); }
        } resume{*this};
        coordination_.pause();
        return std::forward<F>(f)();
    }

    /// Number of poll groups (controller_config::poll_groups).
    [[nodiscard]] std::uint16_t poll_group_count() const noexcept
    {
        return static_cast<std::uint16_t>(coordination_.groups().size());
    }
    /// Counters of poll group `index`: polls (busy and idle), commands executed, data bytes read
    /// and written by its commands. Readable while the controller runs.
    [[nodiscard]] poll_group_counters group_statistics(std::uint16_t index) const
    {
        NVMEKIT_ASSERT(index < coordination_.groups().size(), "group_statistics: no such group");
        return coordination_.groups()[index]->statistics.snapshot();
    }
    /// The poll group of I/O CQ `qid`, when it exists.
    [[nodiscard]] std::optional<std::uint16_t> completion_queue_group(std::uint16_t qid) const noexcept
    {
        if (qid == 0 || !completion_queue_exists(qid)) {
            return std::nullopt;
        }
        return doorbell_table_.group(qid, true);
    }
    /// The poll group of I/O SQ `qid` (that of its CQ), when it exists.
    [[nodiscard]] std::optional<std::uint16_t> submission_queue_group(std::uint16_t qid) const noexcept
    {
        if (qid == 0 || !submission_queue_exists(qid)) {
            return std::nullopt;
        }
        return doorbell_table_.group(qid, false);
    }

    // ---- introspection ------------------------------------------------------------------------

    [[nodiscard]] controller_state state() const noexcept { return state_machine_.state(); }
    [[nodiscard]] const register_file& registers() const noexcept { return registers_; }
    [[nodiscard]] controller_statistics statistics() const noexcept
    {
        controller_statistics sum = statistics_;
        const auto add = [&](const group_type& group) {
            sum.commands += group.commands.load();
            sum.completions_posted += group.completions_posted.load();
            sum.completions_held += group.completions_held.load();
            sum.staging_waits += group.staging_waits.load();
            sum.dma_errors += group.dma_errors.load();
        };
        add(coordination_.admin());
        for (const auto& group : coordination_.groups()) {
            add(*group);
        }
        return sum;
    }
    [[nodiscard]] msix_table<interrupts_type>& msix() noexcept { return msix_; }
    /// Commands fetched and not yet returned to their pool, over every queue, deleted queues
    /// whose commands are still in a backend included. Admin context (concurrent groups are
    /// paused while it counts).
    [[nodiscard]] std::size_t requests_in_use()
    {
        return with_groups_paused([this] { return count_requests_in_use(); });
    }

private:
    [[nodiscard]] std::size_t count_requests_in_use() const noexcept
    {
        std::size_t in_use = 0;
        for (const auto& sq : submission_queues_) {
            if (sq) {
                in_use += sq->pool.in_use();
            }
        }
        for (const auto& sq : retired_queues_) { // deleted, with commands still in a backend
            in_use += sq->pool.in_use();
        }
        return in_use;
    }

public:
    [[nodiscard]] bool submission_queue_exists(std::uint16_t qid) const noexcept
    {
        return qid <= limits.io_queues && submission_queues_[qid] != nullptr;
    }
    [[nodiscard]] bool completion_queue_exists(std::uint16_t qid) const noexcept
    {
        return qid <= limits.io_queues && completion_queues_[qid] != nullptr;
    }
    /// The Identify Controller data this controller returns (command_sets/identify.hpp).
    [[nodiscard]] spec::identify_controller identify_controller_data() const
    {
        return identify_data<controller>::controller_data(*this);
    }
    /// What Identify Controller reports of this controller beyond the subsystem's identity.
    [[nodiscard]] const controller_identity& identity() const noexcept { return config_.identity; }
    /// MDTS as Identify Controller reports it (controller_config::mdts).
    [[nodiscard]] std::uint8_t mdts() const noexcept { return config_.mdts; }

    /// The composite temperature the controller reports, in Kelvin.
    [[nodiscard]] std::uint16_t temperature() const noexcept
    {
        return logs_.health().composite_temperature();
    }
    /// Sets the composite temperature the controller reports, in Kelvin (the embedder's sensor).
    void set_temperature(std::uint16_t kelvin)
    {
        logs_.health().set_composite_temperature(kelvin);
        check_temperature();
    }
    [[nodiscard]] const error_log& errors() const noexcept { return logs_.errors(); }

private:
    using msix_type = msix_table<interrupts_type>;
    static constexpr std::uint64_t page_bytes = 4096;
    /// The largest admin queue (AQA.ASQS and AQA.ACQS are 12 bits, 0's based).
    static constexpr std::uint32_t max_admin_queue_entries = 4096;

    /// A property is a register below the doorbells, accessed 4 or 8 bytes at a time.
    [[nodiscard]] static constexpr bool is_property(std::uint64_t offset, unsigned width) noexcept
    {
        return (width == 4 || width == 8) && offset % width == 0 &&
               offset + width <= spec::doorbell_base_offset;
    }

    [[nodiscard]] static constexpr std::uint64_t round_up(std::uint64_t value,
                                                          std::uint64_t alignment) noexcept
    {
        return (value + alignment - 1) / alignment * alignment;
    }

    /// The state machine's hands: what each transition does to this controller.
    struct reset_operations {
        controller* self;

        [[nodiscard]] bool enable_configuration_valid() const { return self->enable_configuration_valid(); }
        [[nodiscard]] bool ready_delay_elapsed() const
        {
            return self->clock_.now() - self->enable_started_ >= self->config_.ready_delay;
        }
        [[nodiscard]] bool shutdown_flush_complete() const
        {
            if (self->shutdown_flushes_.pending() != 0) {
                self->poll_backends();
            }
            return self->shutdown_flushes_.pending() == 0;
        }
        void start_enable() { self->start_enable(); }
        void set_ready(bool ready)
        {
            // A Controller Reset completes (RDY reads 0) only once the backend has returned every
            // request of the commands it aborted: until then a backend may still move data into
            // host memory, which the host may reuse as soon as it sees RDY = 0.
            self->ready_clear_deferred_ = !ready && (self->io_outstanding() != 0 || !self->dma_idle());
            self->set_csts_bit(spec::csts_register::rdy, ready || self->ready_clear_deferred_);
        }
        void stop_and_abort_all() { self->stop_and_abort_all(); }
        void reset_controller_state() { self->reset_controller_state(); }
        void begin_shutdown(bool abrupt)
        {
            if (!abrupt) {
                self->start_shutdown_flush();
            }
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
            self->ready_clear_deferred_ = false; // CSTS returns to its power-on value at once
            self->registers_.reset_power_on();
            self->reset_features();
            static_cast<void>(self->logs_.firmware().on_subsystem_reset());
            self->set_csts_bit(spec::csts_register::nssro, true);
            self->hold_ready_for_dma();
        }
        void function_reset()
        {
            self->ready_clear_deferred_ = false;
            self->registers_.reset_power_on();
            self->reset_features();
            self->msix_.reset();
            self->for_each_coalescer([](interrupt_coalescer& coalescer) { coalescer.reset(); });
            self->hold_ready_for_dma();
        }
        void set_fatal() { self->set_csts_bit(spec::csts_register::cfs, true); }
        void host_protocol_error(controller_state state, controller_event event)
        {
            ++self->statistics_.host_protocol_errors;
            self->tracer_.trace(trace_record{.event = trace_event::err_invalid_state_transition,
                                             .value = std::uint64_t{static_cast<std::uint8_t>(state)} << 8U |
                                                      static_cast<std::uint8_t>(event)});
        }
    };

    /// An NVM Subsystem Reset or FLR with DMA still in flight (asynchronous DMA) completes, RDY
    /// reading 0, only once that DMA has: until then it may still write host memory.
    void hold_ready_for_dma()
    {
        if (!this->dma_idle()) {
            ready_clear_deferred_ = true;
            set_csts_bit(spec::csts_register::rdy, true);
        }
    }

    void set_csts_bit(const auto& field, bool value)
    {
        auto csts = registers_.csts();
        registers_.set_csts(csts.with(field, value));
    }

    void on_cc_written(spec::cc_register old_cc, spec::cc_register new_cc)
    {
        for (const controller_event event : cc_write_events(old_cc, new_cc)) {
            state_machine_.handle(event);
        }
    }

    /// CC, AQA, ASQ and ACQ against CAP (controller_enable.hpp); a refusal is traced.
    [[nodiscard]] bool enable_configuration_valid()
    {
        const auto refusal = enable_refusal(registers_, message_based_);
        if (refusal) {
            tracer_.trace(trace_record{.event = refusal->event, .value = refusal->value});
        }
        return !refusal;
    }

    void start_enable()
    {
        if (ready_clear_deferred_) {
            // CC.EN = 1 before RDY read 0 breaks the reset protocol; the new enable wins.
            ready_clear_deferred_ = false;
            set_csts_bit(spec::csts_register::rdy, false);
            ++statistics_.host_protocol_errors;
            tracer_.trace(trace_record{.event = trace_event::err_enable_before_ready_clear});
        }
        enable_started_ = clock_.now();
        memory_page_bytes_ = std::uint64_t{4096} << registers_.cc().get(spec::cc_register::mps);
        const auto aqa = registers_.aqa();
        const std::uint32_t asq_entries = message_based_ ? admin_queue_entries_ : aqa.get(aqa.asqs) + 1U;
        const std::uint32_t acq_entries = message_based_ ? admin_queue_entries_ : aqa.get(aqa.acqs) + 1U;
        if (message_based_) {
            completion_queues_[0] =
                std::make_unique<detail::completion_queue<command>>(0, acq_entries, cq_ring::message_based);
            submission_queues_[0] = std::make_unique<detail::submission_queue<command>>(
                0, 0, asq_entries, limits.commands_per_queue, sq_ring::message_based);
        } else {
            completion_queues_[0] = std::make_unique<detail::completion_queue<command>>(
                0, acq_entries, queue_memory::contiguous(registers_.acq().raw), 0, true);
            submission_queues_[0] = std::make_unique<detail::submission_queue<command>>(
                0, 0, asq_entries, limits.commands_per_queue, queue_memory::contiguous(registers_.asq().raw));
        }
        completion_queues_[0]->bound_submission_queues = 1;
        // Doorbells written while the controller was disabled belong to no queue of this enable.
        doorbell_table_.clear();
        clear_every_doorbell();
        static_cast<void>(doorbell_table_.take_invalid_registers());
        static_cast<void>(doorbell_table_.take_invalid_values());
        if (!message_based_) { // a message-based queue has no doorbell
            doorbell_table_.publish(0, false, asq_entries);
            doorbell_table_.publish(0, true, acq_entries);
        }
    }

    /// Stops every queue: in-flight commands are dropped without a completion (Base 2.0 3.7.2),
    /// held completions are discarded, and all queues, admin included, are deleted.
    void stop_and_abort_all()
    {
        shutdown_flushes_.abandon(); // flushes still in a backend no longer count
        for (auto& cq : completion_queues_) {
            if (cq) {
                cq->held.clear_and_dispose([](command* cmd) { drop_completion(*cmd); });
            }
        }
        for (std::uint16_t qid = 0; qid <= limits.io_queues; ++qid) {
            retire_submission_queue(qid);
        }
        for (auto& cq : completion_queues_) {
            cq.reset();
        }
        clear_every_doorbell();
        for (auto& group : coordination_.groups()) {
            group->completion_queues.clear();
            group->submission_queues.clear();
            group->intx_wanted.store(false, std::memory_order_relaxed);
        }
        next_group_ = 0;
        static_cast<void>(doorbell_table_.take_invalid_registers());
        logs_.clear_events();
        shadow_doorbells_.disable();
        update_intx(); // no CQ holds an entry any more
    }

    using shutdown_flush_set = detail::shutdown_flushes<namespace_type, routed_completion>;

    /// CC.SHN normal: flush every volatile cache of the attached namespaces (shutdown_flushes.hpp).
    void start_shutdown_flush()
    {
        shutdown_flushes_.start(this, &on_shutdown_flush_complete, [&](auto&& flush) {
            subsystem_->for_each_namespace([&](namespace_type& ns) {
                if (ns.attached_to(controller_id_) && ns.backend().has_volatile_cache()) {
                    flush(ns);
                }
            });
        });
    }

    /// A shutdown flush's completion, on whichever thread the backend completed it: finished in
    /// the admin context.
    static void on_shutdown_flush_complete(block_request& request, block_status status)
    {
        auto& done = *static_cast<typename shutdown_flush_set::flush*>(request.context);
        auto& self = *static_cast<controller*>(done.owner);
        if (!self.coordination_.route(self.coordination_.admin(), done.routed, request, status,
                                      &finish_shutdown_flush)) {
            finish_shutdown_flush(request, status);
        }
    }

    static void finish_shutdown_flush(block_request& request, block_status)
    {
        auto& done = *static_cast<typename shutdown_flush_set::flush*>(request.context);
        static_cast<controller*>(done.owner)->shutdown_flushes_.finished(done);
    }

    void reset_controller_state()
    {
        registers_.reset_controller();
        reset_features();
    }

    void reset_features()
    {
        granted_queues_.reset();
        io_queue_created_ = false;
        for_each_coalescer([](interrupt_coalescer& coalescer) { coalescer.reset(); });
        features_.controller_reset(clock_.now());
        keep_alive_.stop();
        static_cast<void>(logs_.firmware().on_controller_reset());
        // The Error Information log is kept across controller resets, so that a host can read
        // why the controller failed (a Keep Alive expiry, say) after the reset that recovers it.
    }

    // ---- doorbells ----------------------------------------------------------------------------

    /// The admin context's doorbells (every context's, unless groups are concurrent), after the
    /// invalid doorbell writes counted since the last poll.
    void drain_doorbells()
    {
        take_doorbell_errors();
        if (concurrent()) {
            doorbells_.drain([this](std::uint16_t qid, bool completion_queue, std::uint32_t value) {
                apply_doorbell(coordination_.admin(), qid, completion_queue, value);
            });
            return;
        }
        drain_every_doorbell([this](std::uint16_t qid, bool completion_queue, std::uint32_t value) {
            apply_doorbell(cq_owner(qid), qid, completion_queue, value);
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
        statistics_.invalid_doorbells += writes;
        // Not tied to a command (Base 2.0 5.16.1.2): SQID, CID and Parameter Error Location are
        // FFFFh, and the status is the most applicable one: a doorbell of a queue that does not
        // exist names an invalid queue, a value beyond the queue is an invalid field.
        error_record record{};
        record.status = event == spec::error_event::invalid_doorbell_register
                            ? spec::status{spec::command_specific_status::invalid_queue_identifier}
                            : spec::status{spec::generic_status::invalid_field};
        // Entries that newer ones of the same burst would replace at once only advance the count.
        const std::uint64_t kept = std::min<std::uint64_t>(writes, logs_.errors().capacity());
        logs_.skip_errors(writes - kept);
        for (std::uint64_t i = 0; i < kept; ++i) {
            record_error(record);
        }
        logs_.events().post(spec::async_event_completion{event});
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
            qid == 0 ? nullptr : coordination_.groups()[doorbell_table_.group(qid, completion_queue)].get();
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

    /// The context that owns CQ `qid`: the admin context for the admin CQ, else its poll group.
    [[nodiscard]] group_type& cq_owner(std::uint16_t qid) noexcept
    {
        return qid == 0 ? coordination_.admin() : *coordination_.groups()[doorbell_table_.group(qid, true)];
    }

    /// True when poll groups run concurrently with the admin context (poll_group()); a constant
    /// false with single_threaded, so that what only concurrent groups need is compiled out.
    [[nodiscard]] bool concurrent() const noexcept { return coordination_.concurrent(); }

    /// Ends a pause (with_groups_paused): a fatal error a context raised takes effect, and the
    /// groups learn whether the controller is ready (a group runs commands only while it is).
    void resume_groups()
    {
        coordination_.resume([this] {
            if (coordination_.take_fatal()) {
                state_machine_.handle(controller_event::fatal_error);
            }
            return state_machine_.state() != controller_state::ready;
        });
    }

    /// A state machine event from the admin context: with the groups paused, unless it is a tick
    /// that changes nothing.
    void handle_event(controller_event event)
    {
        if (event == controller_event::tick) {
            const auto before = state_machine_.state();
            state_machine_.handle(event);
            if (state_machine_.state() != before) {
                with_groups_paused([] {}); // a tick never leaves ready: the groups only learn of it
            }
            return;
        }
        const coordination_scope scope{coordination_.admin()};
        with_groups_paused([&] { state_machine_.handle(event); });
    }

    /// Admin context: a fatal error a context raised takes effect.
    void take_fatal_error()
    {
        if (coordination_.fatal_pending()) {
            with_groups_paused([] {}); // resume_groups() handles it
        }
    }

    /// Admin context: what concurrent groups report (fatal errors, Error Information entries)
    /// reaches the controller's state and logs; their invalid doorbells are taken with the admin
    /// context's doorbells (drain_doorbells).
    void take_group_reports()
    {
        take_fatal_error();
        if (!concurrent()) {
            return;
        }
        for (auto& group : coordination_.groups()) {
            group->errors.drain([this](error_record&& record) { record_error(record); },
                                std::size_t{1} << 20);
            if (const auto lost = group->errors_lost.load() - group->errors_lost_taken; lost != 0) {
                group->errors_lost_taken += lost;
                logs_.skip_errors(lost);
            }
        }
    }

    /// Forgets every doorbell value not yet taken (the admin channel's and every group's).
    void clear_every_doorbell() noexcept
    {
        doorbells_.clear();
        for (auto& group : coordination_.groups()) {
            group->doorbells.clear();
        }
    }

    /// The admin queue's doorbells, then every poll group's.
    template <typename F>
    void drain_every_doorbell(F&& f)
    {
        doorbells_.drain(f);
        for (auto& group : coordination_.groups()) {
            group->doorbells.drain(f);
        }
    }

    /// Runs the SQs of one poll group; counts its poll and commands.
    std::size_t process_group_queues(group_type& group)
    {
        std::size_t executed = 0;
        for (const std::uint16_t qid : group.submission_queues) {
            if (group.stopped) {
                break;
            }
            if (submission_queues_[qid]) {
                executed += process_submission_queue(*submission_queues_[qid], group);
            }
        }
        group.statistics.record_poll(executed);
        group.statistics.add_commands(executed);
        return executed;
    }

    /// The poll group of a new I/O CQ: queue_placement's choice; else, when its interrupts are
    /// enabled, the group of an I/O CQ that signals the same vector (a group aggregates and raises
    /// the vectors of its CQs, so a vector's CQs are kept together: one interrupt per poll for all
    /// of them, and coalescing that counts them all); else the next group round-robin.
    [[nodiscard]] std::uint16_t place_completion_queue(std::uint16_t qid, std::uint16_t vector,
                                                       bool interrupts_enabled)
    {
        const auto groups = static_cast<std::uint16_t>(coordination_.groups().size());
        if (config_.queue_placement) {
            return static_cast<std::uint16_t>(config_.queue_placement(qid, vector) % groups);
        }
        if (interrupts_enabled && groups > 1) {
            for (std::size_t other = 1; other < completion_queues_.size(); ++other) {
                const auto& cq = completion_queues_[other];
                if (other != qid && cq && cq->ring.interrupts_enabled() &&
                    cq->ring.interrupt_vector() == vector) {
                    return doorbell_table_.group(other, true);
                }
            }
        }
        const std::uint16_t group = next_group_;
        next_group_ = static_cast<std::uint16_t>((next_group_ + 1U) % groups);
        return group;
    }

    static void insert_queue(std::vector<std::uint16_t>& queues, std::uint16_t qid)
    {
        queues.insert(std::lower_bound(queues.begin(), queues.end(), qid), qid); // within the reserve
    }
    static void erase_queue(std::vector<std::uint16_t>& queues, std::uint16_t qid)
    {
        std::erase(queues, qid);
    }

    /// `from_register`: written to the doorbell register (not read from a shadow slot).
    void apply_sq_tail(std::uint16_t qid, std::uint32_t value, bool from_register = false)
    {
        if (!submission_queue_exists(qid)) {
            trace_doorbell_error(trace_event::err_doorbell_invalid_sq, qid, value);
            report_invalid_doorbell(spec::error_event::invalid_doorbell_register);
            return;
        }
        auto& sq = *submission_queues_[qid];
        sq.shadow_armed = sq.shadow_armed || from_register;
        if (!sq.ring.set_tail(value)) {
            trace_doorbell_error(trace_event::err_doorbell_invalid_sq_tail, qid, value);
            report_invalid_doorbell(spec::error_event::invalid_doorbell_value);
        }
    }

    void apply_cq_head(group_type& group, std::uint16_t qid, std::uint32_t value, bool from_register = false)
    {
        if (!completion_queue_exists(qid)) {
            trace_doorbell_error(trace_event::err_doorbell_invalid_cq, qid, value);
            report_invalid_doorbell(spec::error_event::invalid_doorbell_register);
            return;
        }
        auto& cq = *completion_queues_[qid];
        cq.shadow_armed = cq.shadow_armed || from_register;
        if (!cq.ring.set_head(value)) {
            trace_doorbell_error(trace_event::err_doorbell_invalid_cq_head, qid, value);
            report_invalid_doorbell(spec::error_event::invalid_doorbell_value);
            return;
        }
        post_held_completions(group, cq);
    }

    void report_invalid_doorbell(spec::error_event event)
    {
        if (concurrent()) { // counted and reported by the admin context
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
        if (!completion_queues_[qid]->shadow_armed) {
            return;
        }
        if (read_shadow(group, qid, true, head) && head != completion_queues_[qid]->ring.head()) {
            apply_cq_head(group, qid, head);
        }
    }

    void read_shadow_sq_tail(group_type& group, std::uint16_t qid)
    {
        std::uint32_t tail = 0;
        if (!submission_queues_[qid]->shadow_armed) {
            return;
        }
        if (read_shadow(group, qid, false, tail) && tail != submission_queues_[qid]->ring.tail()) {
            apply_sq_tail(qid, tail);
        }
    }

    bool read_shadow(group_type& group, std::uint16_t qid, bool completion_queue, std::uint32_t& value)
    {
        if constexpr (shadow_doorbells_supported) {
            if (shadow_doorbells_.read(dma_, qid, completion_queue, value)) {
                ++group.dma_errors;
                tracer_.trace(trace_record{.event = trace_event::err_shadow_doorbell_dma, .qid = qid});
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
            write_event_index(group, qid, false, submission_queues_[qid]->ring.tail());
        }
        for (const std::uint16_t qid : group.completion_queues) {
            write_event_index(group, qid, true, completion_queues_[qid]->ring.head());
        }
    }

    void write_event_index(group_type& group, std::uint16_t qid, bool completion_queue, std::uint32_t value)
    {
        if constexpr (shadow_doorbells_supported) {
            if (shadow_doorbells_.write_event_index(dma_, qid, completion_queue, value)) {
                ++group.dma_errors;
                tracer_.trace(trace_record{.event = trace_event::err_shadow_doorbell_dma, .qid = qid});
            }
        }
    }

public:
    // ---- the handlers' interface ----------------------------------------------------------------

    /// MDTS in bytes, as this controller reports it (controller_config::mdts).
    [[nodiscard]] std::uint64_t max_transfer_bytes() const noexcept
    {
        return std::uint64_t{4096} << config_.mdts;
    }

    /// The memory page size the host set (CC.MPS).
    [[nodiscard]] std::uint64_t memory_page_size() const noexcept { return memory_page_bytes_; }

    /// The namespace `nsid` when it exists and is attached to this controller.
    [[nodiscard]] namespace_type* attached_namespace(std::uint32_t nsid) noexcept
    {
        return attached_namespaces_.find(nsid);
    }

    [[nodiscard]] subsystem_type& nvm_subsystem() noexcept { return *subsystem_; }
    [[nodiscard]] const subsystem_type& nvm_subsystem() const noexcept { return *subsystem_; }
    [[nodiscard]] std::uint16_t controller_id() const noexcept { return controller_id_; }
    [[nodiscard]] dma_type& dma() noexcept { return dma_.inner(); }
    [[nodiscard]] clock_type& clock() noexcept { return clock_; }
    /// The tracer that receives this controller's events (Traits::tracer).
    [[nodiscard]] tracer_type& tracer() noexcept { return tracer_; }

    /// Backend requests this controller's commands are waiting for.
    [[nodiscard]] std::size_t io_outstanding() const noexcept
    {
        std::uint64_t outstanding = coordination_.admin().io_outstanding.load();
        for (const auto& group : coordination_.groups()) {
            outstanding += group->io_outstanding.load();
        }
        return outstanding;
    }
    /// True when no backend request of this controller is outstanding, neither a command's nor a
    /// shutdown flush (which may outlive the shutdown a reset abandoned), and no DMA request is in
    /// flight (dma_idle()). Then it may be destroyed.
    [[nodiscard]] bool backend_idle() const noexcept
    {
        return io_outstanding() == 0 && shutdown_flushes_.in_backend() == 0 && this->dma_idle();
    }

    /// The admin command table this controller uses: the built-in one as Traits customised it.
    [[nodiscard]] static const table_type& admin_table() noexcept
    {
        static_assert(AdminHandlerContext<controller>, "the admin command set's context");
        static constexpr table_type table = Traits::admin_commands(admin_command_set<controller>::table());
        return table;
    }
    /// The I/O command table (NVM command set) this controller uses.
    [[nodiscard]] static const table_type& io_table() noexcept
    {
        static_assert(HandlerContext<controller>, "the I/O command set's context");
        static constexpr table_type table = Traits::io_commands(nvm_command_set<controller>::table());
        return table;
    }

    // The whole of this public section is the handlers' interface: HandlerContext and
    // AdminHandlerContext (handler_context.hpp); everything after it is the controller's own.

    using staging_type = detail::staging_buffer;

    /// The Volatile Write Cache feature: writes reach stable media before completing unless on.
    [[nodiscard]] bool volatile_write_cache_enabled() const noexcept
    {
        return features_.volatile_write_cache_enabled();
    }

    // ---- the admin command set's context (AdminHandlerContext) ----------------------------------

    [[nodiscard]] error_log& error_information_log() noexcept { return logs_.errors(); }
    [[nodiscard]] firmware_slots& firmware() noexcept { return logs_.firmware(); }
    [[nodiscard]] const firmware_slots& firmware() const noexcept { return logs_.firmware(); }
    [[nodiscard]] telemetry_host_log& telemetry() noexcept { return logs_.telemetry(); }
    [[nodiscard]] async_event_queue& async_events() noexcept { return logs_.events(); }
    /// The Changed Namespace List log as it stands.
    [[nodiscard]] const spec::changed_namespace_list& changed_namespaces() const noexcept
    {
        return logs_.changed_namespaces();
    }
    /// Empties the Changed Namespace List (read without RAE).
    void clear_changed_namespaces() noexcept { logs_.clear_changed_namespaces(); }
    /// A buffer of MDTS bytes for building log page data.
    [[nodiscard]] std::span<std::byte> log_buffer() noexcept { return log_window_; }
    /// A 16 KiB buffer for building identify and other admin data.
    [[nodiscard]] std::span<std::byte> admin_buffer() noexcept { return admin_data_; }
    /// Keep Alive received: the timer restarts.
    void keep_alive_received() { keep_alive_.restart(clock_.now()); }

    /// The coalescers of every context, configured alike (Set Features 08h and 09h, resets).
    template <typename F>
    void for_each_coalescer(F&& f)
    {
        f(interrupts_state_.coalescer());
        for (auto& group : coordination_.groups()) {
            f(group->interrupts.coalescer());
        }
    }

    /// The host read the log page of an event type without RAE: that type is reported again.
    void acknowledge_event_type(spec::async_event_type type) noexcept { logs_.acknowledge_event_type(type); }

    /// Traces `event` with the fields of `cmd`.
    void trace_command(trace_event event, const command& cmd, std::uint64_t value = 0,
                       spec::status status = spec::status::success()) noexcept
    {
        tracer_.trace(trace_record{.event = event,
                                   .opcode = cmd.sqe.opcode(),
                                   .qid = cmd.sq->ring.qid(),
                                   .cid = cmd.sqe.command_id(),
                                   .status = status,
                                   .nsid = cmd.sqe.nsid,
                                   .value = value});
    }

    /// SMART / Health Information (Base 2.0 5.16.1.3), controller-wide.
    [[nodiscard]] spec::smart_health_log smart_health_data() const
    {
        health_log health = logs_.health(); // plus what the contexts counted
        auto& counters = health.counters();
        const auto add = [&](const group_type& group) {
            counters.host_read_commands += group.read_commands.load();
            counters.read_512_units += group.read_512_units.load();
            counters.host_write_commands += group.write_commands.load();
            counters.written_512_units += group.written_512_units.load();
            counters.media_errors += group.media_errors.load();
        };
        add(coordination_.admin());
        for (const auto& group : coordination_.groups()) {
            add(*group);
        }
        return health.build(clock_.now() - powered_on_at_, features_.over_temperature_threshold(0),
                            features_.under_temperature_threshold(0));
    }

    /// Posts the SMART temperature event when the composite temperature crosses a threshold
    /// (once per crossing) and the host enabled that critical warning (Base 2.0 5.27.1.4).
    void check_temperature()
    {
        const auto event = logs_.health().evaluate_temperature(features_.over_temperature_threshold(0),
                                                               features_.under_temperature_threshold(0));
        const auto enabled = features_.async_event_configuration().get(
            spec::async_event_configuration::smart_critical_warnings);
        if (event && (enabled & 0x02U) != 0) { // bit 1: temperature
            logs_.events().post(spec::async_event_completion{spec::async_event_type::smart_health,
                                                             static_cast<std::uint8_t>(*event),
                                                             spec::log_page_id::smart_health});
        }
    }

    /// Telemetry Host-Initiated Create: a snapshot of the controller's counters.
    void capture_telemetry()
    {
        const auto data = smart_health_data();
        logs_.telemetry().capture(std::as_bytes(std::span{&data, 1}));
    }

    // ---- queues in host memory (command_sets/queue_management.hpp creates and deletes them) ----

    /// The number of I/O queues the host may use: what Set Features Number of Queues granted, or
    /// the controller's maximum before it was set.
    [[nodiscard]] std::uint16_t allowed_submission_queues() const noexcept
    {
        return granted_queues_ ? static_cast<std::uint16_t>(granted_queues_->submission_queue_count())
                               : config_.io_queues;
    }
    [[nodiscard]] std::uint16_t allowed_completion_queues() const noexcept
    {
        return granted_queues_ ? static_cast<std::uint16_t>(granted_queues_->completion_queue_count())
                               : config_.io_queues;
    }

    // registers() (introspection, above) gives CAP and CC as the host set them.

    /// The queue memory of `bytes` a PRP list at `prp_list` describes, read through the
    /// controller's DMA (queue_memory::from_prp_list).
    [[nodiscard]] spec::status queue_memory_from_prp_list(const command& cmd, std::uint64_t prp_list,
                                                          std::size_t bytes, queue_memory& out)
    {
        const auto status = with_command_dma(
            cmd,
            [&](auto& dma) {
                return queue_memory::from_prp_list(dma, prp_list, bytes,
                                                   static_cast<std::uint32_t>(memory_page_size()), out);
            },
            false);
        if constexpr (dma_completes_later) {
            if (cmd.async.journal.blocked) {
                return spec::status{spec::generic_status::data_transfer_error}.with_dnr(); // runs again
            }
        }
        return status;
    }

    /// Adds I/O CQ `qid` in `memory`, its identifier, size and vector checked by the caller: placed
    /// in a poll group, its doorbell live.
    void add_completion_queue(std::uint16_t qid, std::uint32_t entries, queue_memory memory,
                              std::uint16_t vector, bool interrupts_enabled)
    {
        completion_queues_[qid] = std::make_unique<detail::completion_queue<command>>(
            qid, entries, std::move(memory), vector, interrupts_enabled);
        const std::uint16_t group = place_completion_queue(qid, vector, interrupts_enabled);
        doorbell_table_.set_group(qid, true, group);
        insert_queue(coordination_.groups()[group]->completion_queues, qid);
        doorbell_table_.publish(qid, true, entries);
        io_queue_created_ = true;
        write_new_queue_event_index(qid, true);
    }

    /// Adds I/O SQ `qid` in `memory`, bound to the existing I/O CQ `cqid`, in that CQ's poll group.
    void add_submission_queue(std::uint16_t qid, std::uint16_t cqid, std::uint32_t entries,
                              queue_memory memory)
    {
        submission_queues_[qid] = std::make_unique<detail::submission_queue<command>>(
            qid, cqid, entries, limits.commands_per_queue, std::move(memory));
        const std::uint16_t group = doorbell_table_.group(cqid, true); // an SQ follows its CQ
        doorbell_table_.set_group(qid, false, group);
        insert_queue(coordination_.groups()[group]->submission_queues, qid);
        doorbell_table_.publish(qid, false, entries);
        ++completion_queues_[cqid]->bound_submission_queues;
        io_queue_created_ = true;
        write_new_queue_event_index(qid, false);
    }

    /// Deletes the existing I/O SQ `qid` for the command `cmd`. Completions still waiting for CQ
    /// space are dropped, as the host asked to delete the queue they belong to; commands still in a
    /// backend end without a completion when the backend is done with them. Returns pending when
    /// such commands remain: `cmd` then completes when the backend returns the last of them (until
    /// then their data may still move, and the host reuses their buffers as soon as the deletion
    /// completes).
    [[nodiscard]] command_result delete_submission_queue(command& cmd, std::uint16_t qid)
    {
        auto& sq = *submission_queues_[qid];
        auto& cq = *completion_queues_[sq.ring.cqid()];
        cq.held.remove_and_dispose_if([&](const command& held) { return held.sq == &sq; },
                                      [](command* held) { drop_completion(*held); });
        --cq.bound_submission_queues;
        doorbell_table_.publish(qid, false, 0);
        // A tail written before the deletion and not yet taken by a concurrent group dies with the
        // queue (it would otherwise reach a queue created later with this QID).
        group_of(sq).doorbells.forget(qid, false);
        erase_queue(group_of(sq).submission_queues, qid);
        if (auto* retired = retire_submission_queue(qid)) {
            retired->deleting = &cmd;
            return command_result::pending();
        }
        return command_result::success();
    }

    /// The I/O SQs bound to the existing CQ `qid`.
    [[nodiscard]] std::uint32_t bound_submission_queues(std::uint16_t qid) const noexcept
    {
        return completion_queues_[qid]->bound_submission_queues;
    }

    /// Deletes the existing I/O CQ `qid`, which no SQ is bound to.
    void delete_completion_queue(std::uint16_t qid)
    {
        doorbell_table_.publish(qid, true, 0);
        cq_owner(qid).doorbells.forget(qid, true); // as for an SQ (delete_submission_queue)
        erase_queue(cq_owner(qid).completion_queues, qid);
        completion_queues_[qid].reset();
    }

    /// Doorbell Buffer Config's buffers: shadow doorbells at `shadow_address`, EventIdx at
    /// `event_index_address` (each one memory page, checked by the caller).
    void configure_shadow_doorbells(std::uint64_t shadow_address, std::uint64_t event_index_address)
    {
        shadow_doorbells_.configure(shadow_address, event_index_address, registers_.doorbell_stride_bytes());
    }

    // ---- controller features (command_sets/features.hpp decides Set/Get Features) -------------

    /// The feature table (feature_table.hpp).
    [[nodiscard]] feature_table& features() noexcept { return features_; }
    [[nodiscard]] const feature_table& features() const noexcept { return features_; }
    /// An I/O queue was created since the last Controller Reset (Number of Queues is then fixed).
    [[nodiscard]] bool io_queue_created() const noexcept { return io_queue_created_; }
    /// The I/O queues Set Features Number of Queues granted since the last Controller Reset.
    [[nodiscard]] std::optional<spec::number_of_queues> granted_queues() const noexcept
    {
        return granted_queues_;
    }
    void grant_queues(spec::number_of_queues granted) noexcept { granted_queues_ = granted; }
    /// I/O queue pairs this controller offers at most (controller_config::io_queues).
    [[nodiscard]] std::uint16_t max_io_queues() const noexcept { return config_.io_queues; }
    /// The admin context's interrupt coalescing; every context's is configured alike.
    [[nodiscard]] const interrupt_coalescer& admin_coalescer() const noexcept
    {
        return interrupts_state_.coalescer();
    }

private:
    /// The admin context's interrupts: every CQ's, unless groups are concurrent (then the admin
    /// CQ's, and the INTx pin for all).
    void signal_interrupts()
    {
        const auto now = clock_.now();
        auto& state = interrupts_state_;
        if (concurrent()) {
            if (completion_queues_[0]) {
                consider_interrupt(*completion_queues_[0], state, now);
            }
        } else {
            for (auto& cq : completion_queues_) {
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
        const auto now = clock_.now();
        for (const std::uint16_t qid : group.completion_queues) {
            consider_interrupt(*completion_queues_[qid], group.interrupts, now);
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
            tracer_.trace(trace_record{.event = trace_event::interrupt_raised, .value = vector});
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
            const bool allowed = !msix_.enabled() && (registers_.interrupt_mask() & 1U) == 0;
            if (concurrent()) {
                intx_.report_admin(allowed, completion_queues_[0] && cq_wants_intx(*completion_queues_[0]));
                if (coordination_.paused_or_stopped()) {
                    for (auto& group : coordination_.groups()) {
                        group->intx_wanted.store(group_wants_intx(*group), std::memory_order_relaxed);
                    }
                }
                refresh_intx();
                return;
            }
            intx_.set_level(allowed && std::any_of(completion_queues_.begin(), completion_queues_.end(),
                                                   [](const auto& cq) { return cq && cq_wants_intx(*cq); }));
        }
    }

    /// Whether a CQ of `group` wants the INTx pin; its owner only.
    [[nodiscard]] bool group_wants_intx(const group_type& group) const
    {
        return std::any_of(group.completion_queues.begin(), group.completion_queues.end(),
                           [this](std::uint16_t qid) { return cq_wants_intx(*completion_queues_[qid]); });
    }

    /// Concurrent groups: sets the pin from what the admin context and the groups last reported
    /// (pci::intx_pin). Any thread.
    void refresh_intx()
    {
        if constexpr (IntxInterruptProvider<interrupts_type>) {
            intx_.refresh([this] {
                return std::any_of(
                    coordination_.groups().begin(), coordination_.groups().end(),
                    [](const auto& group) { return group->intx_wanted.load(std::memory_order_relaxed); });
            });
        }
    }

    // ---- namespaces, logs, features and events ---------------------------------------------------
public:
    /// A discovery controller's Discovery log page changed (fabrics_identity::discovery): when
    /// the host enabled Discovery Log Page Change Notices, a Notice event (F0h, log page 70h)
    /// completes an Asynchronous Event Request at the next poll(). Returns whether it was queued.
    bool report_discovery_log_change()
    {
        if (!features_.async_event_configuration().get(
                spec::async_event_configuration::discovery_log_change_notices)) {
            return false;
        }
        return logs_.events().post(spec::async_event_completion{spec::notice_event::discovery_log_page_change,
                                                                spec::log_page_id::discovery});
    }

    /// The host read the Discovery log page without Retain Asynchronous Event (the transport
    /// answers that log itself): Notice events are reported again.
    void acknowledge_discovery_log() noexcept
    {
        logs_.acknowledge_event_type(spec::async_event_type::notice);
    }

private:
    /// A namespace was attached to or detached from this controller: the Changed Namespace List
    /// log records it and, when the host enabled the notice, an event reports it.
    void on_namespace_changed(std::uint32_t nsid)
    {
        attached_namespaces_.set(nsid, subsystem_->attached_namespace(nsid, controller_id_));
        logs_.note_changed_namespace(nsid);
        if (features_.async_event_configuration().get(
                spec::async_event_configuration::namespace_attribute_notices)) {
            logs_.events().post(spec::async_event_completion{
                spec::async_event_type::notice,
                static_cast<std::uint8_t>(spec::notice_event::namespace_attribute_changed),
                spec::log_page_id::changed_namespace_list});
        }
    }

    /// Records a failed command in the Error Information log.
    void on_command_error(const command& cmd, spec::status status)
    {
        trace_command(host_mistake_event(status), cmd, 0, status);
        error_record record{};
        record.sq_id = cmd.sq->ring.qid();
        record.command_id = cmd.sqe.command_id();
        record.status = status;
        // The Phase Tag the completion is posted with (Base 2.0 5.16.1.2, bytes 13:12 bit 0):
        // completions held for CQ space are posted before it, in order.
        const auto& cq = *completion_queues_[cmd.sq->ring.cqid()];
        const std::uint64_t slot = std::uint64_t{cq.ring.tail()} + cq.held.size();
        record.phase_tag = cq.ring.phase() != (((slot / cq.ring.entries()) & 1U) != 0);
        record.nsid = cmd.sqe.nsid;
        if (cmd.ns != nullptr && status.type() == spec::status_code_type::media_error) {
            record.lba = cmd.error_lba;
        }
        if (concurrent() && cmd.group != &coordination_.admin()) {
            // The log belongs to the admin context, which takes the entry before it runs the next
            // admin command (a Get Log Page after this completion finds it).
            if (!cmd.group->errors.try_push(record)) {
                ++cmd.group->errors_lost;
            }
            return;
        }
        record_error(record);
    }

    void trace_doorbell_error(trace_event event, std::uint16_t qid, std::uint32_t value) noexcept
    {
        tracer_.trace(trace_record{.event = event, .qid = qid, .value = value});
    }

    /// The register file's host error of the access at `offset`, if it counted one since
    /// `host_errors_before`.
    void trace_register_error(std::uint64_t host_errors_before, std::uint64_t offset) noexcept
    {
        if (registers_.host_error_count() != host_errors_before) {
            tracer_.trace(
                trace_record{.event = register_error_event(registers_.last_host_error()), .value = offset});
        }
    }

    void record_error(const error_record& record) { logs_.record_error(record); }

    /// The context that runs an SQ: its CQ's.
    [[nodiscard]] group_type& group_of(const detail::submission_queue<command>& sq) noexcept
    {
        return cq_owner(sq.ring.cqid());
    }

    /// Keep Alive (Base 2.0 3.9): when KATO is set and no Keep Alive arrives in time the controller
    /// records the error and fails (CSTS.CFS) until the host resets it.
    void check_keep_alive()
    {
        const std::uint32_t kato = features_.keep_alive_timeout_ms();
        if (keep_alive_.expired(clock_.now(), kato)) {
            tracer_.trace(trace_record{.event = trace_event::err_keep_alive_expired, .value = kato});
            ++statistics_.keep_alive_expirations;
            error_record record{};
            record.status = spec::status{spec::generic_status::keep_alive_timer_expired};
            logs_.record_error(record);
            handle_event(controller_event::fatal_error);
        }
    }

    // ---- admin commands of the controller core ---------------------------------------------------

    /// A new queue's EventIdx is 0, its tail or head, before the host learns of the queue: whatever
    /// an earlier queue left in the slot, the host's first doorbell then goes to the register,
    /// which arms the shadow slot (read_shadow_doorbells).
    void write_new_queue_event_index(std::uint16_t qid, bool completion_queue)
    {
        if (shadow_doorbells_.enabled()) {
            write_event_index(coordination_.admin(), qid, completion_queue, 0);
        }
    }

    dma_guard<dma_type> dma_; ///< the embedder's provider, refusing the controller's own BAR0
    clock_type& clock_;
    controller_config config_;
    subsystem_type* subsystem_;
    register_file registers_;
    msix_type msix_;
    pci::intx_pin<interrupts_type> intx_;
    /// Coalescing and due vectors of the admin context; of every CQ unless groups are concurrent,
    /// when each group has its own (configured alike).
    pci::vector_signalling interrupts_state_;
    doorbell_channel doorbells_; ///< the admin queue's; the I/O queues' are in their poll groups
    /// The admin context and the poll groups.
    coordination_type coordination_{std::uint16_t{0}, fetch_batch, limits.max_segments, std::uint16_t{1}};
    /// By doorbell: its queue's entries and poll group, and the invalid writes not yet taken.
    pci::doorbell_table doorbell_table_{limits.io_queues};
    std::uint16_t next_group_ = 0; ///< round-robin placement
    reset_operations reset_ops_{this};
    reset_state_machine<reset_operations> state_machine_;
    std::vector<std::unique_ptr<detail::submission_queue<command>>> submission_queues_;
    std::vector<std::unique_ptr<detail::completion_queue<command>>> completion_queues_;
    std::optional<spec::number_of_queues> granted_queues_;
    std::uint64_t bar0_address_ = 0;     ///< where the host decodes BAR0 (set_bar0_address)
    std::atomic<bool> bus_master_{true}; ///< PCI Command.Bus Master Enable (set_bus_master)
    /// The admin queue is message-based (connect_admin_queue), of this many entries.
    bool message_based_ = false;
    std::uint32_t admin_queue_entries_ = 0;
    /// The CDW0 bits every command is checked for, and the value they must have: FUSE 00b (fused
    /// operations are not supported), and on message-based queues PSDT 01b as well.
    std::uint32_t cdw0_checked_ =
        spec::command_dword0{}.with(spec::command_dword0::fuse, spec::fused_operation{3}).raw;
    std::uint32_t cdw0_required_ = 0;
    bool io_queue_created_ = false; ///< an I/O SQ or CQ was created since the last Controller Reset
    pci::shadow_doorbells shadow_doorbells_;
    std::chrono::nanoseconds enable_started_{0};
    controller_statistics statistics_{};
    /// Called from every context that detects an event.
    [[no_unique_address]] tracer_type tracer_{};
    /// A Controller Reset waits for its aborted commands' backend requests before RDY reads 0.
    bool ready_clear_deferred_ = false;

    std::unique_ptr<subsystem_type> owned_subsystem_;
    std::uint16_t controller_id_ = 0;
    /// By NSID: the namespace when attached to this controller (kept in step with the subsystem's
    /// notifications).
    namespace_table<namespace_type> attached_namespaces_;
    /// Admin data built or received by a handler (Identify, logs, features).
    static constexpr std::size_t admin_data_bytes = 16384;
    std::vector<std::byte> admin_data_;
    shutdown_flush_set shutdown_flushes_;
    keep_alive_timer keep_alive_;
    feature_table features_{detail::controller_feature_config(config_), clock_.now()};
    /// Error Information, SMART / Health, Firmware Slot, Telemetry, Changed Namespace List, events.
    controller_logs logs_{
        controller_logs_config{.firmware_revision = subsystem_->identity().firmware_revision,
                               .ieee_oui = subsystem_->identity().ieee_oui,
                               .async_event_requests = std::size_t{limits.aerl} + 1U}};
    std::vector<std::byte> log_window_ = std::vector<std::byte>(limits.max_transfer_bytes());
    std::chrono::nanoseconds powered_on_at_ = clock_.now();
    /// The page size CC.MPS set when the controller was enabled (a CC write while enabled does not
    /// change it; groups read it without synchronisation).
    std::uint64_t memory_page_bytes_ = 4096;
};

NVMEKIT_END_NAMESPACE
