#pragma once
/// The context command handlers run in (HandlerContext and AdminHandlerContext,
/// handler_context.hpp): what the controller offers the I/O and admin command sets beyond a
/// command's data (io_context.hpp), and the controller-wide state the admin commands read and
/// change: features, logs, asynchronous events, attached namespaces, Keep Alive.
///
/// It owns the feature table (command_sets/features.hpp decides Set and Get Features), the log
/// pages and events (controller_logs.hpp), the namespaces attached to this controller, the Keep
/// Alive timer, the admin and log page buffers, the power-on time and the memory page size.
/// (Not to be confused with the admin context that runs the admin queue, group_processing.hpp:
/// this is the admin command set's context, the AdminHandlerContext concept.)
///
/// Composition: detail::admin_context<Controller, Traits> is a base of nvmekit::controller (CRTP;
/// controller.hpp), reaching the subsystem, clock, tracer and poll groups through self().

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include <nvmekit/command_sets/admin.hpp>
#include <nvmekit/command_sets/nvm.hpp>
#include <nvmekit/config.hpp>
#include <nvmekit/contracts/clock.hpp>
#include <nvmekit/contracts/handler_context.hpp>
#include <nvmekit/contracts/tracer.hpp>
#include <nvmekit/core/controller_config.hpp>
#include <nvmekit/core/dispatcher.hpp>
#include <nvmekit/core/io_context.hpp>
#include <nvmekit/runtime/poll_group_state.hpp>
#include <nvmekit/spec/features.hpp>
#include <nvmekit/spec/log_pages.hpp>
#include <nvmekit/state/async_events.hpp>
#include <nvmekit/state/controller_logs.hpp>
#include <nvmekit/state/error_log.hpp>
#include <nvmekit/state/feature_table.hpp>
#include <nvmekit/state/firmware_slots.hpp>
#include <nvmekit/state/health_log.hpp>
#include <nvmekit/state/host_mistakes.hpp>
#include <nvmekit/state/keep_alive_timer.hpp>
#include <nvmekit/state/reset_state_machine.hpp>
#include <nvmekit/state/telemetry_log.hpp>
#include <nvmekit/storage/namespace_table.hpp>
#include <nvmekit/storage/nvm_namespace.hpp>
#include <nvmekit/storage/subsystem.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace detail {

/// Admin context of `Controller`; see the top of this header. `Controller` derives from it and
/// befriends it.
template <typename Controller, typename Traits>
class admin_context {
protected:
    using command = detail::controller_command<Controller, Traits>;
    using group_type = detail::poll_group_state<command, Traits::threading::concurrent_groups>;
    static constexpr nvmekit::limits limits = Traits::limits;
    using dma_type = typename Traits::dma;
    using clock_type = typename Traits::clock;
    using tracer_type = typename Traits::tracer;
    using subsystem_type = subsystem<typename Traits::backend>;
    using namespace_type = nvm_namespace<typename Traits::backend>;
    using table_type = dispatch_table<Controller, command>;

    admin_context(const controller_config& config, clock_type& clock, const subsystem_type& subsystem)
        : features_{detail::controller_feature_config(config), clock.now()}
        , logs_{controller_logs_config{.firmware_revision = subsystem.identity().firmware_revision,
                                       .ieee_oui = subsystem.identity().ieee_oui,
                                       .async_event_requests = std::size_t{limits.aerl} + 1U}}
        , powered_on_at_{clock.now()}
    {
        admin_data_.resize(admin_data_bytes);
    }
    admin_context(const admin_context&) = delete;
    admin_context& operator=(const admin_context&) = delete;

    [[nodiscard]] Controller& self() noexcept { return static_cast<Controller&>(*this); }
    [[nodiscard]] const Controller& self() const noexcept { return static_cast<const Controller&>(*this); }

public:
    // ---- the handlers' interface ----------------------------------------------------------------

    /// MDTS in bytes, as this controller reports it (controller_config::mdts).
    [[nodiscard]] std::uint64_t max_transfer_bytes() const noexcept
    {
        return std::uint64_t{4096} << self().config_.mdts;
    }

    /// The memory page size the host set (CC.MPS).
    [[nodiscard]] std::uint64_t memory_page_size() const noexcept { return memory_page_bytes_; }

    /// The namespace `nsid` when it exists and is attached to this controller.
    [[nodiscard]] namespace_type* attached_namespace(std::uint32_t nsid) noexcept
    {
        return attached_namespaces_.find(nsid);
    }

    [[nodiscard]] subsystem_type& nvm_subsystem() noexcept { return *self().subsystem_; }
    [[nodiscard]] const subsystem_type& nvm_subsystem() const noexcept { return *self().subsystem_; }
    [[nodiscard]] std::uint16_t controller_id() const noexcept { return self().controller_id_; }
    [[nodiscard]] dma_type& dma() noexcept { return self().dma_.inner(); }
    [[nodiscard]] clock_type& clock() noexcept { return self().clock_; }
    /// The tracer that receives this controller's events (Traits::tracer).
    [[nodiscard]] tracer_type& tracer() noexcept { return self().tracer_; }

    /// Backend requests this controller's commands are waiting for.
    [[nodiscard]] std::size_t io_outstanding() const noexcept
    {
        std::uint64_t outstanding = self().coordination_.admin().io_outstanding.load();
        for (const auto& group : self().coordination_.groups()) {
            outstanding += group->io_outstanding.load();
        }
        return outstanding;
    }
    /// True when no backend request of this controller is outstanding, neither a command's nor a
    /// shutdown flush (which may outlive the shutdown a reset abandoned), and no DMA request is in
    /// flight (dma_idle()). Then it may be destroyed.
    [[nodiscard]] bool backend_idle() const noexcept
    {
        return io_outstanding() == 0 && self().shutdown_flushes_.in_backend() == 0 && self().dma_idle();
    }

    /// The admin command table this controller uses: the built-in one as Traits customised it.
    [[nodiscard]] static const table_type& admin_table() noexcept
    {
        static_assert(AdminHandlerContext<Controller>, "the admin command set's context");
        static constexpr table_type table = Traits::admin_commands(admin_command_set<Controller>::table());
        return table;
    }
    /// The I/O command table (NVM command set) this controller uses.
    [[nodiscard]] static const table_type& io_table() noexcept
    {
        static_assert(HandlerContext<Controller>, "the I/O command set's context");
        static constexpr table_type table = Traits::io_commands(nvm_command_set<Controller>::table());
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
    void keep_alive_received() { keep_alive_.restart(self().clock_.now()); }

    /// The host read the log page of an event type without RAE: that type is reported again.
    void acknowledge_event_type(spec::async_event_type type) noexcept { logs_.acknowledge_event_type(type); }

    /// Traces `event` with the fields of `cmd`.
    void trace_command(trace_event event, const command& cmd, std::uint64_t value = 0,
                       spec::status status = spec::status::success()) noexcept
    {
        nvmekit::detail::emit_trace(self().tracer_, trace_record{.event = event,
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
        add(self().coordination_.admin());
        for (const auto& group : self().coordination_.groups()) {
            add(*group);
        }
        return health.build(self().clock_.now() - powered_on_at_, features_.over_temperature_threshold(0),
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

    // ---- controller features (command_sets/features.hpp decides Set/Get Features) -------------

    /// The feature table (feature_table.hpp).
    [[nodiscard]] feature_table& features() noexcept { return features_; }
    [[nodiscard]] const feature_table& features() const noexcept { return features_; }

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

protected:
    /// A namespace was attached to or detached from this controller: the Changed Namespace List
    /// log records it and, when the host enabled the notice, an event reports it.
    void on_namespace_changed(std::uint32_t nsid)
    {
        attached_namespaces_.set(nsid, self().subsystem_->attached_namespace(nsid, self().controller_id_));
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
        const auto& cq = *self().completion_queues_[cmd.sq->ring.cqid()];
        const std::uint64_t slot = std::uint64_t{cq.ring.tail()} + cq.held.size();
        record.phase_tag = cq.ring.phase() != (((slot / cq.ring.entries()) & 1U) != 0);
        record.nsid = cmd.sqe.nsid;
        if (cmd.ns != nullptr && status.type() == spec::status_code_type::media_error) {
            record.lba = cmd.error_lba;
        }
        if (self().concurrent() && cmd.group != &self().coordination_.admin()) {
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

    /// Keep Alive (Base 2.0 3.9): when KATO is set and no Keep Alive arrives in time the controller
    /// records the error and fails (CSTS.CFS) until the host resets it.
    void check_keep_alive()
    {
        const std::uint32_t kato = features_.keep_alive_timeout_ms();
        if (keep_alive_.expired(self().clock_.now(), kato)) {
            nvmekit::detail::emit_trace(
                self().tracer_, trace_record{.event = trace_event::err_keep_alive_expired, .value = kato});
            ++self().statistics_.keep_alive_expirations;
            error_record record{};
            record.status = spec::status{spec::generic_status::keep_alive_timer_expired};
            logs_.record_error(record);
            self().handle_event(controller_event::fatal_error);
        }
    }
    /// By NSID: the namespace when attached to this controller (kept in step with the subsystem's
    /// notifications).
    namespace_table<namespace_type> attached_namespaces_;
    /// Admin data built or received by a handler (Identify, logs, features).
    static constexpr std::size_t admin_data_bytes = 16384;
    std::vector<std::byte> admin_data_;
    keep_alive_timer keep_alive_;
    feature_table features_;
    /// Error Information, SMART / Health, Firmware Slot, Telemetry, Changed Namespace List, events.
    controller_logs logs_;
    std::vector<std::byte> log_window_ = std::vector<std::byte>(limits.max_transfer_bytes());
    std::chrono::nanoseconds powered_on_at_;
    /// The page size CC.MPS set when the controller was enabled (a CC write while enabled does not
    /// change it; groups read it without synchronisation).
    std::uint64_t memory_page_bytes_ = 4096;
};

} // namespace detail
NVMEKIT_END_NAMESPACE
