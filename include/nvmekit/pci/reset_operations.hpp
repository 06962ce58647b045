#pragma once
/// The controller's reset operations: what the reset state machine (reset_state_machine.hpp)
/// does to the controller on each register-side event, CC.EN and CC.SHN written, Controller
/// Reset, NVM Subsystem Reset, Function Level Reset, a fatal error (Base 2.0 3.5, 3.6, 3.7).
///
/// It owns:
/// - the state machine and its hands (`operations`), and the time an enable started (CAP.TO,
///   controller_config::ready_delay);
/// - enabling: CC, AQA, ASQ and ACQ checked against CAP (controller_enable.hpp), the admin queue
///   created from them (or from the message-based admin queue), CC.MPS taken;
/// - stopping: every queue deleted, in-flight commands dropped without a completion, doorbells
///   forgotten (Base 2.0 3.7.2), and the state a Controller Reset, NVM Subsystem Reset or FLR
///   returns to its power-on value;
/// - a normal shutdown's flush of the volatile caches (shutdown_flushes.hpp);
/// - RDY held at 1 after a Controller Reset until the backend has returned every request of the
///   aborted commands and no DMA is in flight (until then host memory may still change).
///
/// Composition: pci::reset_operations<Controller, Traits> is a base of nvmekit::controller
/// (CRTP; controller.hpp). It reaches the controller's registers, queues, poll groups and
/// features through self(), resolved at compile time.

#include <chrono>
#include <cstdint>
#include <memory>

#include <nvmekit/config.hpp>
#include <nvmekit/contracts/block_backend.hpp>
#include <nvmekit/contracts/tracer.hpp>
#include <nvmekit/core/io_context.hpp>
#include <nvmekit/queues/queue_memory.hpp>
#include <nvmekit/queues/queue_pair.hpp>
#include <nvmekit/runtime/completion_inbox.hpp>
#include <nvmekit/spec/registers.hpp>
#include <nvmekit/state/controller_enable.hpp>
#include <nvmekit/state/interrupt_coalescing.hpp>
#include <nvmekit/state/reset_state_machine.hpp>
#include <nvmekit/state/shutdown_flushes.hpp>
#include <nvmekit/storage/nvm_namespace.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace pci {

/// The reset operations of `Controller`; see the top of this header. `Controller` derives from
/// it and befriends it.
template <typename Controller, typename Traits>
class reset_operations {
protected:
    using command = detail::controller_command<Controller, Traits>;
    using namespace_type = nvm_namespace<typename Traits::backend>;
    static constexpr nvmekit::limits limits = Traits::limits;

    reset_operations() : state_machine_{operations_} {}
    reset_operations(const reset_operations&) = delete;
    reset_operations& operator=(const reset_operations&) = delete;

    [[nodiscard]] Controller& self() noexcept { return static_cast<Controller&>(*this); }
    [[nodiscard]] const Controller& self() const noexcept { return static_cast<const Controller&>(*this); }

    /// The state machine's hands: what each transition does to this controller.
    struct operations {
        reset_operations* owner;

        [[nodiscard]] Controller& self() const noexcept { return owner->self(); }

        [[nodiscard]] bool enable_configuration_valid() const { return self().enable_configuration_valid(); }
        [[nodiscard]] bool ready_delay_elapsed() const
        {
            return self().clock_.now() - self().enable_started_ >= self().config_.ready_delay;
        }
        [[nodiscard]] bool shutdown_flush_complete() const
        {
            if (self().shutdown_flushes_.pending() != 0) {
                self().poll_backends();
            }
            return self().shutdown_flushes_.pending() == 0;
        }
        void start_enable() { self().start_enable(); }
        void set_ready(bool ready)
        {
            // A Controller Reset completes (RDY reads 0) only once the backend has returned every
            // request of the commands it aborted: until then a backend may still move data into
            // host memory, which the host may reuse as soon as it sees RDY = 0.
            self().ready_clear_deferred_ = !ready && (self().io_outstanding() != 0 || !self().dma_idle());
            self().set_csts_bit(spec::csts_register::rdy, ready || self().ready_clear_deferred_);
        }
        void stop_and_abort_all() { self().stop_and_abort_all(); }
        void reset_controller_state() { self().reset_controller_state(); }
        void begin_shutdown(bool abrupt)
        {
            if (!abrupt) {
                self().start_shutdown_flush();
            }
            auto csts = self().registers_.csts();
            self().registers_.set_csts(csts.with(csts.shst, spec::shutdown_status::processing));
        }
        void complete_shutdown()
        {
            auto csts = self().registers_.csts();
            self().registers_.set_csts(csts.with(csts.shst, spec::shutdown_status::complete));
        }
        void subsystem_reset()
        {
            self().ready_clear_deferred_ = false; // CSTS returns to its power-on value at once
            self().registers_.reset_power_on();
            self().reset_features();
            static_cast<void>(self().logs_.firmware().on_subsystem_reset());
            self().set_csts_bit(spec::csts_register::nssro, true);
            self().hold_ready_for_dma();
        }
        void function_reset()
        {
            self().ready_clear_deferred_ = false;
            self().registers_.reset_power_on();
            self().reset_features();
            self().msix_.reset();
            self().for_each_coalescer([](interrupt_coalescer& coalescer) { coalescer.reset(); });
            self().hold_ready_for_dma();
        }
        void set_fatal() { self().set_csts_bit(spec::csts_register::cfs, true); }
        void host_protocol_error(controller_state state, controller_event event)
        {
            ++self().statistics_.host_protocol_errors;
            nvmekit::detail::emit_trace(
                self().tracer_, trace_record{.event = trace_event::err_invalid_state_transition,
                                             .value = std::uint64_t{static_cast<std::uint8_t>(state)} << 8U |
                                                      static_cast<std::uint8_t>(event)});
        }
    };

    /// An NVM Subsystem Reset or FLR with DMA still in flight (asynchronous DMA) completes, RDY
    /// reading 0, only once that DMA has: until then it may still write host memory.
    void hold_ready_for_dma()
    {
        if (!self().dma_idle()) {
            ready_clear_deferred_ = true;
            set_csts_bit(spec::csts_register::rdy, true);
        }
    }

    void set_csts_bit(const auto& field, bool value)
    {
        auto csts = self().registers_.csts();
        self().registers_.set_csts(csts.with(field, value));
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
        const auto refusal = enable_refusal(self().registers_, self().message_based_);
        if (refusal) {
            nvmekit::detail::emit_trace(self().tracer_,
                                        trace_record{.event = refusal->event, .value = refusal->value});
        }
        return !refusal;
    }

    void start_enable()
    {
        if (ready_clear_deferred_) {
            // CC.EN = 1 before RDY read 0 breaks the reset protocol; the new enable wins.
            ready_clear_deferred_ = false;
            set_csts_bit(spec::csts_register::rdy, false);
            ++self().statistics_.host_protocol_errors;
            nvmekit::detail::emit_trace(self().tracer_,
                                        trace_record{.event = trace_event::err_enable_before_ready_clear});
        }
        enable_started_ = self().clock_.now();
        self().memory_page_bytes_ = std::uint64_t{4096} << self().registers_.cc().get(spec::cc_register::mps);
        const auto aqa = self().registers_.aqa();
        const std::uint32_t asq_entries =
            self().message_based_ ? self().admin_queue_entries_ : aqa.get(aqa.asqs) + 1U;
        const std::uint32_t acq_entries =
            self().message_based_ ? self().admin_queue_entries_ : aqa.get(aqa.acqs) + 1U;
        if (self().message_based_) {
            self().completion_queues_[0] =
                std::make_unique<detail::completion_queue<command>>(0, acq_entries, cq_ring::message_based);
            self().submission_queues_[0] = std::make_unique<detail::submission_queue<command>>(
                0, 0, asq_entries, limits.commands_per_queue, sq_ring::message_based);
        } else {
            self().completion_queues_[0] = std::make_unique<detail::completion_queue<command>>(
                0, acq_entries, queue_memory::contiguous(self().registers_.acq().raw), 0, true);
            self().submission_queues_[0] = std::make_unique<detail::submission_queue<command>>(
                0, 0, asq_entries, limits.commands_per_queue,
                queue_memory::contiguous(self().registers_.asq().raw));
        }
        self().completion_queues_[0]->bound_submission_queues = 1;
        // Doorbells written while the controller was disabled belong to no queue of this enable.
        self().doorbell_table_.clear();
        self().clear_every_doorbell();
        static_cast<void>(self().doorbell_table_.take_invalid_registers());
        static_cast<void>(self().doorbell_table_.take_invalid_values());
        if (!self().message_based_) { // a message-based queue has no doorbell
            self().doorbell_table_.publish(0, false, asq_entries);
            self().doorbell_table_.publish(0, true, acq_entries);
        }
    }

    /// Stops every queue: in-flight commands are dropped without a completion (Base 2.0 3.7.2),
    /// held completions are discarded, and all queues, admin included, are deleted.
    void stop_and_abort_all()
    {
        shutdown_flushes_.abandon(); // flushes still in a backend no longer count
        for (auto& cq : self().completion_queues_) {
            if (cq) {
                cq->held.clear_and_dispose([](command* cmd) { Controller::drop_completion(*cmd); });
            }
        }
        for (std::uint16_t qid = 0; qid <= limits.io_queues; ++qid) {
            self().retire_submission_queue(qid);
        }
        for (auto& cq : self().completion_queues_) {
            cq.reset();
        }
        self().clear_every_doorbell();
        for (auto& group : self().coordination_.groups()) {
            group->completion_queues.clear();
            group->submission_queues.clear();
            group->intx_wanted.store(false, std::memory_order_relaxed);
        }
        self().next_group_ = 0;
        static_cast<void>(self().doorbell_table_.take_invalid_registers());
        self().logs_.clear_events();
        self().shadow_doorbells_.disable();
        self().update_intx(); // no CQ holds an entry any more
    }

    using shutdown_flush_set = detail::shutdown_flushes<namespace_type, routed_completion>;

    /// CC.SHN normal: flush every volatile cache of the attached namespaces (shutdown_flushes.hpp).
    void start_shutdown_flush()
    {
        shutdown_flushes_.start(&self(), &on_shutdown_flush_complete, [&](auto&& flush) {
            self().subsystem_->for_each_namespace([&](namespace_type& ns) {
                if (ns.attached_to(self().controller_id_) && ns.backend().has_volatile_cache()) {
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
        auto& self = *static_cast<Controller*>(done.owner);
        if (!self.coordination_.route(self.coordination_.admin(), done.routed, request, status,
                                      &finish_shutdown_flush)) {
            finish_shutdown_flush(request, status);
        }
    }

    static void finish_shutdown_flush(block_request& request, block_status)
    {
        auto& done = *static_cast<typename shutdown_flush_set::flush*>(request.context);
        static_cast<Controller*>(done.owner)->shutdown_flushes_.finished(done);
    }

    void reset_controller_state()
    {
        self().registers_.reset_controller();
        reset_features();
    }

    void reset_features()
    {
        self().granted_queues_.reset();
        self().io_queue_created_ = false;
        self().for_each_coalescer([](interrupt_coalescer& coalescer) { coalescer.reset(); });
        self().features_.controller_reset(self().clock_.now());
        self().keep_alive_.stop();
        static_cast<void>(self().logs_.firmware().on_controller_reset());
        // The Error Information log is kept across controller resets, so that a host can read
        // why the controller failed (a Keep Alive expiry, say) after the reset that recovers it.
    }

    operations operations_{this};
    reset_state_machine<operations> state_machine_;
    std::chrono::nanoseconds enable_started_{0};
    /// A Controller Reset waits for its aborted commands' backend requests before RDY reads 0.
    bool ready_clear_deferred_ = false;
    shutdown_flush_set shutdown_flushes_;
};

} // namespace pci
NVMEKIT_END_NAMESPACE
