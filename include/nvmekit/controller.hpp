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
/// Composition: this header holds the composition, construction and the controller's own state
/// (configuration, registers, subsystem, tracer); the rest is in parts, each owning its data and
/// adding its share of the public API, composed statically (CRTP bases reaching the controller
/// through self(), or members):
///
// clang-format off
/// | header                       | what it owns |
/// |------------------------------|--------------|
/// | core/io_context.hpp          | a command's record and request life: fetch, dispatch, the handlers' data interface, staging buffers, backend requests, completion, the DMA provider behind its BAR0 guard, asynchronous DMA (core/dma_journal.hpp), retired queues |
/// | pci/function.hpp             | the PCIe function: BAR0 layout and accesses, MSI-X table, Bus Master Enable, doorbells and shadow doorbells applied to the rings, interrupt signalling and INTx |
/// | pci/reset_operations.hpp     | the reset state machine's hands: enable, Controller Reset, shutdown and its flushes, NVM Subsystem Reset, FLR |
/// | transport/message_queues.hpp | message-based transports: properties, connected admin and I/O queues, submit() and take_completion(), the CDW0 bits checked |
/// | core/group_processing.hpp    | poll(), poll_group(), the group threads and pauses: the admin context and the poll groups, queue placement and each group's queue list |
/// | core/queue_state.hpp         | the queues by QID (created, deleted, their memory from PRP lists), Number of Queues granted, whether an I/O queue was created |
/// | core/admin_context.hpp       | the handlers' and admin command set's context: features, log pages and events, attached namespaces, Keep Alive, admin and log buffers, memory page size |
/// | core/introspection.hpp       | state(), registers(), statistics() and the controller-wide counters, identity, temperature |
/// | runtime/group_coordination.hpp | how the admin context and the poll groups take turns |
/// | queues/queue_pair.hpp        | a submission and a completion queue: ring, request pool, held completions |
/// | pci/doorbell_table.hpp, pci/shadow_doorbells.hpp, pci/interrupt_signalling.hpp | doorbell validity and ownership, Doorbell Buffer Config's buffers, vector coalescing and the INTx pin |
/// | core/controller_config.hpp, state/controller_logs.hpp, contracts/handler_context.hpp | configuration and limits, the log pages and events, the handlers' context concepts |
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

#include <nvmekit/backends/any_backend.hpp>
#include <nvmekit/command_sets/admin.hpp>
#include <nvmekit/command_sets/features.hpp>
#include <nvmekit/command_sets/identify.hpp>
#include <nvmekit/command_sets/nvm.hpp>
#include <nvmekit/config.hpp>
#include <nvmekit/contracts/async_dma.hpp>
#include <nvmekit/contracts/block_backend.hpp>
#include <nvmekit/contracts/clock.hpp>
#include <nvmekit/contracts/dma.hpp>
#include <nvmekit/contracts/handler_context.hpp>
#include <nvmekit/contracts/interrupts.hpp>
#include <nvmekit/contracts/threading.hpp>
#include <nvmekit/contracts/tracer.hpp>
#include <nvmekit/core/admin_context.hpp>
#include <nvmekit/core/controller_config.hpp>
#include <nvmekit/core/dispatcher.hpp>
#include <nvmekit/core/dma_journal.hpp>
#include <nvmekit/core/group_processing.hpp>
#include <nvmekit/core/introspection.hpp>
#include <nvmekit/core/io_context.hpp>
#include <nvmekit/core/queue_state.hpp>
#include <nvmekit/data/dma_guard.hpp>
#include <nvmekit/data/host_ranges.hpp>
#include <nvmekit/data/prp_walker.hpp>
#include <nvmekit/data/sgl_walker.hpp>
#include <nvmekit/pci/doorbell_channel.hpp>
#include <nvmekit/pci/doorbell_table.hpp>
#include <nvmekit/pci/function.hpp>
#include <nvmekit/pci/interrupt_signalling.hpp>
#include <nvmekit/pci/msix.hpp>
#include <nvmekit/pci/reset_operations.hpp>
#include <nvmekit/pci/shadow_doorbells.hpp>
#include <nvmekit/queues/cq_ring.hpp>
#include <nvmekit/queues/queue_memory.hpp>
#include <nvmekit/queues/queue_pair.hpp>
#include <nvmekit/queues/request_pool.hpp>
#include <nvmekit/queues/sq_ring.hpp>
#include <nvmekit/runtime/completion_inbox.hpp>
#include <nvmekit/runtime/group_coordination.hpp>
#include <nvmekit/runtime/mailbox.hpp>
#include <nvmekit/runtime/poll_group.hpp>
#include <nvmekit/runtime/poll_group_state.hpp>
#include <nvmekit/runtime/poll_group_statistics.hpp>
#include <nvmekit/spec/commands.hpp>
#include <nvmekit/spec/features.hpp>
#include <nvmekit/spec/identify.hpp>
#include <nvmekit/spec/log_pages.hpp>
#include <nvmekit/spec/opcodes.hpp>
#include <nvmekit/spec/queue_entries.hpp>
#include <nvmekit/spec/registers.hpp>
#include <nvmekit/spec/status.hpp>
#include <nvmekit/state/async_events.hpp>
#include <nvmekit/state/controller_enable.hpp>
#include <nvmekit/state/controller_logs.hpp>
#include <nvmekit/state/error_log.hpp>
#include <nvmekit/state/feature_table.hpp>
#include <nvmekit/state/firmware_slots.hpp>
#include <nvmekit/state/health_log.hpp>
#include <nvmekit/state/host_mistakes.hpp>
#include <nvmekit/state/interrupt_coalescing.hpp>
#include <nvmekit/state/keep_alive_timer.hpp>
#include <nvmekit/state/register_file.hpp>
#include <nvmekit/state/reset_state_machine.hpp>
#include <nvmekit/state/shutdown_flushes.hpp>
#include <nvmekit/state/telemetry_log.hpp>
#include <nvmekit/storage/namespace_table.hpp>
#include <nvmekit/storage/nvm_namespace.hpp>
#include <nvmekit/storage/subsystem.hpp>
#include <nvmekit/transport/message_queues.hpp>

NVMEKIT_BEGIN_NAMESPACE

/// The controller: its parts composed, and its public API. The parts are bases reached at compile
/// time (CRTP): each owns its data and reaches the rest through the controller (see the top of
/// this file for what each owns).
template <typename Traits>
class controller : public detail::io_context<controller<Traits>, Traits>,
                   public pci::function<controller<Traits>, Traits>,
                   public pci::reset_operations<controller<Traits>, Traits>,
                   public transport::message_queues<controller<Traits>, Traits>,
                   public detail::group_processing<controller<Traits>, Traits>,
                   public detail::queue_state<controller<Traits>, Traits>,
                   public detail::introspection<controller<Traits>, Traits>,
                   public detail::admin_context<controller<Traits>, Traits> {
    using io_context_type = detail::io_context<controller<Traits>, Traits>;
    using pci_function_type = pci::function<controller<Traits>, Traits>;
    using reset_operations_type = pci::reset_operations<controller<Traits>, Traits>;
    using message_queues_type = transport::message_queues<controller<Traits>, Traits>;
    using group_processing_type = detail::group_processing<controller<Traits>, Traits>;
    using queue_state_type = detail::queue_state<controller<Traits>, Traits>;
    using introspection_type = detail::introspection<controller<Traits>, Traits>;
    using admin_context_type = detail::admin_context<controller<Traits>, Traits>;
    friend io_context_type;
    friend pci_function_type;
    friend reset_operations_type;
    friend message_queues_type;
    friend group_processing_type;
    friend queue_state_type;
    friend introspection_type;
    friend admin_context_type;

    // What the controller's own members use of its parts.
    using admin_context_type::attached_namespaces_;
    using admin_context_type::logs_;
    using admin_context_type::on_namespace_changed;
    using group_processing_type::coordination_;
    using group_processing_type::handle_event;
    using io_context_type::complete;
    using io_context_type::error;
    using io_context_type::fetch_batch;
    using io_context_type::staging_per_group_;

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
    using group_type = typename group_processing_type::group_type;
    using coordination_type = typename group_processing_type::coordination_type;
    using coordination_scope = typename group_processing_type::coordination_scope;

    /// A controller of `subsystem`, which must outlive it. The controller registers with the
    /// subsystem (which assigns CNTLID unless the config names one).
    controller(dma_type& dma, interrupts_type& interrupts, clock_type& clock, subsystem_type& subsystem,
               const controller_config& config = {})
        : controller(checked_config{}, dma, interrupts, clock, subsystem,
                     detail::checked_controller_config(config, limits, threading_type::concurrent_groups))
    {}

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
        this->stop_poll_groups();
        NVMEKIT_ASSERT(this->backend_idle(), "controller destroyed with backend I/O outstanding");
        subsystem_->unregister_controller(controller_id_);
    }

    controller(const controller&) = delete;
    controller& operator=(const controller&) = delete;

private:
    struct checked_config {};
    /// `config` checked: the parts that hold features and logs are built from it before the
    /// controller's own members.
    controller(checked_config, dma_type& dma, interrupts_type& interrupts, clock_type& clock,
               subsystem_type& subsystem, const controller_config& config)
        : io_context_type{dma, config}
        , pci_function_type{interrupts}
        , admin_context_type{config, clock, subsystem}
        , clock_{clock}
        , config_{config}
        , subsystem_{&subsystem}
        , registers_{detail::controller_register_config(config_)}
    {
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

private:
    // ---- the controller's own state ----------------------------------------------------------------

    clock_type& clock_;
    controller_config config_;
    subsystem_type* subsystem_;
    register_file registers_;
    /// Called from every context that detects an event.
    [[no_unique_address]] tracer_type tracer_{};
    std::unique_ptr<subsystem_type> owned_subsystem_;
    std::uint16_t controller_id_ = 0;
};

NVMEKIT_END_NAMESPACE
