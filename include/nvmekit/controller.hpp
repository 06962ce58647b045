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
/// Composition: this header holds the public API and the controller's own state (configuration,
/// registers, queues, poll groups, features, logs, namespaces); the rest is in parts, each owning
/// its data, composed statically (CRTP bases reaching the controller through self(), or members):
///
// clang-format off
/// | header                      | what it owns |
/// |-----------------------------|--------------|
/// | io_context.hpp              | a command's record and request life: fetch, dispatch, the handlers' data interface, staging buffers, backend requests, completion, the DMA provider behind its BAR0 guard, asynchronous DMA (dma_journal.hpp), retired queues |
/// | pci/function.hpp            | the PCIe function: BAR0 layout and accesses, MSI-X table, Bus Master Enable, doorbells and shadow doorbells applied to the rings, interrupt signalling and INTx |
/// | pci/reset_operations.hpp    | the reset state machine's hands: enable, Controller Reset, shutdown and its flushes, NVM Subsystem Reset, FLR |
/// | group_coordination.hpp      | the admin context and the poll groups, and how they take turns |
/// | queue_pair.hpp              | a submission and a completion queue: ring, request pool, held completions |
/// | pci/doorbell_table.hpp, pci/shadow_doorbells.hpp, pci/interrupt_signalling.hpp | doorbell validity and ownership, Doorbell Buffer Config's buffers, vector coalescing and the INTx pin |
/// | controller_config.hpp, controller_logs.hpp, handler_context.hpp | configuration and limits, the log pages and events, the handlers' context concepts |
// clang-format on
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
#include <nvmekit/pci/function.hpp>
#include <nvmekit/pci/interrupt_signalling.hpp>
#include <nvmekit/pci/reset_operations.hpp>
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

/// The controller: its parts composed, and its public API. The parts are bases reached at compile
/// time (CRTP): each owns its data and reaches the rest through the controller (see the top of
/// this file for what each owns).
template <typename Traits>
class controller : public detail::io_context<controller<Traits>, Traits>,
                   public pci::function<controller<Traits>, Traits>,
                   public pci::reset_operations<controller<Traits>, Traits> {
    using io_context_type = detail::io_context<controller<Traits>, Traits>;
    using pci_function_type = pci::function<controller<Traits>, Traits>;
    using reset_operations_type = pci::reset_operations<controller<Traits>, Traits>;
    friend io_context_type;
    friend pci_function_type;
    friend reset_operations_type;

    // What the controller's own members use of its parts.
    using io_context_type::acquire_request;
    using io_context_type::complete;
    using io_context_type::dma_;
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
    using pci_function_type::apply_cq_head;
    using pci_function_type::apply_doorbell;
    using pci_function_type::bus_master_;
    using pci_function_type::clear_every_doorbell;
    using pci_function_type::doorbell_table_;
    using pci_function_type::drain_doorbells;
    using pci_function_type::drain_every_doorbell;
    using pci_function_type::read_shadow_doorbells;
    using pci_function_type::shadow_doorbells_;
    using pci_function_type::signal_group_interrupts;
    using pci_function_type::signal_interrupts;
    using pci_function_type::trace_doorbell_error;
    using pci_function_type::update_intx;
    using pci_function_type::write_event_indexes;
    using pci_function_type::write_new_queue_event_index;
    using reset_operations_type::ready_clear_deferred_;
    using reset_operations_type::set_csts_bit;
    using reset_operations_type::shutdown_flushes_;
    using reset_operations_type::state_machine_;

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
        : io_context_type{dma}
        , pci_function_type{interrupts}
        , clock_{clock}
        , config_{detail::checked_controller_config(config, limits, threading_type::concurrent_groups)}
        , subsystem_{&subsystem}
        , registers_{detail::controller_register_config(config_)}
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
        return this->mmio_read(offset, width);
    }

    /// Writes a controller property: CC, NSSR and the others act as the same register written
    /// through BAR0 does (the reset state machine, shutdown, NVM Subsystem Reset). False, changing
    /// nothing, when `offset` names no property.
    bool property_write(std::uint64_t offset, unsigned width, std::uint64_t value)
    {
        if (!is_property(offset, width)) {
            return false;
        }
        this->mmio_write(offset, width, value);
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

    /// For a message-based transport whose I/O queues live on concurrent poll groups: runs
    /// `f(running)` as part of poll group `index`, so that `f` may call submit() and
    /// take_completion() for that group's queues from the thread that polls the group, never
    /// while the admin context has the groups paused. `running` is false while the group is
    /// stopped (the controller is not ready, and the admin context acts for the group): `f` must
    /// then leave the controller alone. Returns false, without calling `f`, while the admin
    /// context asks the group to pause (try again at the next turn). Without concurrent poll
    /// groups `f` runs at once, with `running` true while the controller is ready. Not from
    /// inside poll_group() nor while start_poll_groups()'s threads run.
    template <typename F>
    bool run_in_group(std::uint16_t index, F&& f)
    {
        NVMEKIT_ASSERT(index < coordination_.groups().size(), "run_in_group: no such group");
        auto& group = *coordination_.groups()[index];
        if (!concurrent()) {
            std::forward<F>(f)(state_machine_.state() == controller_state::ready);
            return true;
        }
        if (!coordination_type::enter_poll(group)) {
            return false;
        }
        {
            const coordination_scope scope{group};
            std::forward<F>(f)(!group.stopped && bus_master_.load(std::memory_order_acquire));
        }
        coordination_type::leave_poll(group);
        return true;
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
    /// The largest admin queue (AQA.ASQS and AQA.ACQS are 12 bits, 0's based).
    static constexpr std::uint32_t max_admin_queue_entries = 4096;

    /// A property is a register below the doorbells, accessed 4 or 8 bytes at a time.
    [[nodiscard]] static constexpr bool is_property(std::uint64_t offset, unsigned width) noexcept
    {
        return (width == 4 || width == 8) && offset % width == 0 &&
               offset + width <= spec::doorbell_base_offset;
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
    // AdminHandlerContext (handler_context.hpp), with what io_context.hpp (data, staging buffers,
    // backend requests, finish) and pci/function.hpp (coalescing, shadow doorbells) contribute.

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

    // ---- namespaces, logs, features and events ---------------------------------------------------

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

    // ---- the controller's own state ----------------------------------------------------------------

    clock_type& clock_;
    controller_config config_;
    subsystem_type* subsystem_;
    register_file registers_;
    /// The admin context and the poll groups.
    coordination_type coordination_{std::uint16_t{0}, fetch_batch, limits.max_segments, std::uint16_t{1}};
    std::uint16_t next_group_ = 0; ///< round-robin placement
    std::vector<std::unique_ptr<detail::submission_queue<command>>> submission_queues_;
    std::vector<std::unique_ptr<detail::completion_queue<command>>> completion_queues_;
    std::optional<spec::number_of_queues> granted_queues_;
    /// The admin queue is message-based (connect_admin_queue), of this many entries.
    bool message_based_ = false;
    std::uint32_t admin_queue_entries_ = 0;
    /// The CDW0 bits every command is checked for, and the value they must have: FUSE 00b (fused
    /// operations are not supported), and on message-based queues PSDT 01b as well.
    std::uint32_t cdw0_checked_ =
        spec::command_dword0{}.with(spec::command_dword0::fuse, spec::fused_operation{3}).raw;
    std::uint32_t cdw0_required_ = 0;
    bool io_queue_created_ = false; ///< an I/O SQ or CQ was created since the last Controller Reset
    controller_statistics statistics_{};
    /// Called from every context that detects an event.
    [[no_unique_address]] tracer_type tracer_{};

    std::unique_ptr<subsystem_type> owned_subsystem_;
    std::uint16_t controller_id_ = 0;
    /// By NSID: the namespace when attached to this controller (kept in step with the subsystem's
    /// notifications).
    namespace_table<namespace_type> attached_namespaces_;
    /// Admin data built or received by a handler (Identify, logs, features).
    static constexpr std::size_t admin_data_bytes = 16384;
    std::vector<std::byte> admin_data_;
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
