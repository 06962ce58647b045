#pragma once
/// nvme_device: an NVMe PCI Express function as a SystemC module, loosely timed (TLM-2.0 LT) or
/// approximately timed (AT).
///
///     struct traits : nvmekit::systemc::device_traits {};     // LT; at_device_traits for AT
///     nvmekit::systemc::nvme_device<traits> nvme{"nvme"};
///     nvme.config_socket.bind(bus.config_initiator);          // PCI configuration space
///     nvme.bar0_socket.bind(bus.bar0_initiator);              // BAR0: registers, doorbells, MSI-X
///     nvme.dma_socket.bind(memory.socket);                    // DMA and MSI-X writes to the host
///     nvme.intx.bind(intx_signal);
///     nvme.subsystem().add_namespace(nvmekit::ram_backend{64 << 20});
///
/// Sockets: `config_socket` serves configuration reads and writes (offset = address, 1, 2 or 4
/// bytes, pci::config_space); `bar0_socket` serves BAR0 (offset = address relative to BAR0, the
/// router's job; 1 to 8 bytes) while Memory Space Enable is set, and answers
/// TLM_ADDRESS_ERROR_RESPONSE otherwise. Neither offers DMI: a doorbell write must reach the
/// controller. `dma_socket` carries the controller's DMA and its MSI-X messages (providers.hpp).
/// `intx` is the INTx pin and must be bound.
///
/// Mode: the traits choose it. With device_traits (Traits::dma is tlm_dma) the DMA socket speaks
/// LT: b_transport with annotated delay, synchronised through the quantum keeper. With
/// at_device_traits (tlm_async_dma) it speaks AT: the controller's asynchronous DMA, each access
/// a non-blocking transaction through a payload event queue (nb_initiator.hpp) that completes
/// when its response begins, and MSI-X messages as posted AT writes. The target sockets serve
/// b_transport in both modes.
///
/// Time: each BAR0 or configuration access adds `register_latency` to the transaction's delay.
/// The controller runs in one SC_THREAD: it polls the controller when a BAR0 write arrives (at the
/// write's annotated time), when an AT response begins, every `poll_period` while commands wait
/// for their backend (or, when `next_due` is given, at the time it names: a timed backend's next
/// completion), and every `idle_period` otherwise (timers: keep alive, interrupt coalescing). An
/// SC_METHOD drives `intx`, so the pin has one writer whichever process changed the controller's
/// INTx level.
///
/// Teardown: the device may be destroyed once the simulation has stopped (sc_stop, or the end of
/// sc_start's time), whatever was in flight. In AT mode DMA transactions may then be in flight:
/// the destructor resets the function as a Function Level Reset does, abandons those transactions
/// (nb_initiator::abandon(): they complete as failed, nothing new is sent) and polls the
/// controller until it has taken them all. A timed backend's requests still outstanding are not
/// covered: they complete only as simulated time passes.

#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

#include <nvmekit/config.hpp>
#include <nvmekit/controller.hpp>
#include <nvmekit/core/controller_config.hpp>
#include <nvmekit/pci/config_space.hpp>
#include <nvmekit/systemc/providers.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace systemc {

/// The traits of a controller inside a loosely-timed nvme_device: derive from it to change
/// limits, backend or tracer. The providers must stay these.
struct device_traits : default_traits {
    using dma = tlm_dma;
    using interrupts = tlm_interrupts;
    using clock = simulation_clock;
};

/// The traits of an approximately-timed nvme_device: its DMA is non-blocking transactions.
struct at_device_traits : device_traits {
    using dma = tlm_async_dma;
};

/// The timing and PCI identity of an nvme_device.
struct device_options {
    /// PCI identity; the BAR0 layout is taken from the controller.
    pci::nvme_function_config function{};
    /// Added to the delay of every BAR0 and configuration access.
    sc_core::sc_time register_latency = sc_core::SC_ZERO_TIME;
    /// Poll interval while commands wait for their backend (the device's clock period).
    sc_core::sc_time poll_period{1, sc_core::SC_US};
    /// Poll interval with nothing outstanding, for the controller's timers.
    sc_core::sc_time idle_period{1, sc_core::SC_MS};
    /// When the next backend completion is due (timed_backend::next_due()). When given, the device
    /// polls at that time instead of every poll_period while the backend is busy, so it must cover
    /// every backend of the device's namespaces.
    std::function<std::optional<std::chrono::nanoseconds>()> next_due;
};

/// The NVMe PCI function as a TLM-2.0 module, LT or AT (see the top of this header).
template <typename Traits = device_traits>
class nvme_device : public sc_core::sc_module {
    static_assert(std::is_same_v<typename Traits::dma, tlm_dma> ||
                      std::is_same_v<typename Traits::dma, tlm_async_dma>,
                  "nvme_device: Traits::dma must be nvmekit::systemc::tlm_dma (LT, device_traits) or "
                  "tlm_async_dma (AT, at_device_traits)");
    static_assert(std::is_same_v<typename Traits::interrupts, tlm_interrupts>,
                  "nvme_device: Traits::interrupts must be nvmekit::systemc::tlm_interrupts");
    static_assert(std::is_same_v<typename Traits::clock, simulation_clock>,
                  "nvme_device: Traits::clock must be nvmekit::systemc::simulation_clock");

public:
    using controller_type = nvmekit::controller<Traits>;
    /// True when the DMA socket speaks the non-blocking (AT) protocol.
    static constexpr bool approximately_timed = std::is_same_v<typename Traits::dma, tlm_async_dma>;
    static_assert(controller_type::dma_completes_later == approximately_timed);

    tlm_utils::simple_target_socket<nvme_device> config_socket;
    tlm_utils::simple_target_socket<nvme_device> bar0_socket;
    tlm_utils::simple_initiator_socket<nvme_device> dma_socket;
    sc_core::sc_out<bool> intx;

    SC_HAS_PROCESS(nvme_device);

    explicit nvme_device(const sc_core::sc_module_name& name, device_options options = {},
                         controller_config config = {})
        : nvme_device{name, nullptr, std::move(options), std::move(config)}
    {}

    /// A function of `subsystem`, which other controllers may share and which must outlive the
    /// device.
    nvme_device(const sc_core::sc_module_name& name, typename controller_type::subsystem_type& subsystem,
                device_options options = {}, controller_config config = {})
        : nvme_device{name, &subsystem, std::move(options), std::move(config)}
    {}

    nvme_device(const nvme_device&) = delete;
    nvme_device& operator=(const nvme_device&) = delete;

    /// With AT DMA in flight (a simulation stopped mid-transfer): the function reset, the
    /// transactions abandoned, the controller's requests settled (see the top of this header).
    ~nvme_device() override
    {
        if constexpr (approximately_timed) {
            if (!controller_.dma_idle()) {
                abandon_dma();
            }
        }
    }

    /// Sets device_options::next_due (once the backend it asks exists).
    void set_next_due(std::function<std::optional<std::chrono::nanoseconds>()> next_due)
    {
        options_.next_due = std::move(next_due);
    }

    /// The controller (for inspection and namespace setup; the host reaches it through the sockets).
    [[nodiscard]] controller_type& controller() noexcept { return controller_; }
    /// The controller's subsystem: add namespaces here before the simulation starts.
    [[nodiscard]] typename controller_type::subsystem_type& subsystem() noexcept
    {
        return controller_.nvm_subsystem();
    }
    /// The device's Clock, for a timed backend: simulated time as the device sees it.
    [[nodiscard]] const simulation_clock& clock() const noexcept { return clock_; }
    [[nodiscard]] const pci::config_space& config_space() const noexcept { return config_space_; }
    [[nodiscard]] const tlm_interrupts& interrupts() const noexcept { return interrupts_; }
    /// Times the device polled the controller.
    [[nodiscard]] std::uint64_t polls() const noexcept { return polls_; }
    /// DMA and MSI-X transactions sent.
    [[nodiscard]] std::uint64_t transactions() const noexcept
    {
        return context_.transactions() + non_blocking_.transactions();
    }
    /// AT transactions (DMA and MSI-X) whose response has not begun; 0 in LT mode.
    [[nodiscard]] std::size_t transactions_in_flight() const noexcept { return non_blocking_.in_flight(); }

private:
    nvme_device(const sc_core::sc_module_name& name, typename controller_type::subsystem_type* subsystem,
                device_options options, controller_config config)
        : sc_core::sc_module{name}
        , config_socket{"config_socket"}
        , bar0_socket{"bar0_socket"}
        , dma_socket{"dma_socket"}
        , intx{"intx"}
        , options_{std::move(options)}
        , non_blocking_{dma_socket}
        , context_{dma_socket}
        , clock_{context_}
        , dma_{make_dma(non_blocking_, context_)}
        , interrupts_{context_}
        , own_subsystem_{subsystem == nullptr ? std::make_unique<typename controller_type::subsystem_type>()
                                              : nullptr}
        , controller_{dma_, interrupts_, clock_, subsystem == nullptr ? *own_subsystem_ : *subsystem,
                      std::move(config)}
        , config_space_{pci::bar0_layout_of(controller_, options_.function)}
    {
        config_socket.register_b_transport(this, &nvme_device::config_transport);
        bar0_socket.register_b_transport(this, &nvme_device::bar0_transport);
        dma_socket.register_nb_transport_bw(this, &nvme_device::dma_backward);
        if constexpr (approximately_timed) {
            context_.use_non_blocking(non_blocking_);
        }
        // Until the host sets Bus Master Enable in configuration space the function masters nothing.
        controller_.set_bus_master(config_space_.bus_master());
        SC_THREAD(run);
        SC_METHOD(drive_intx);
        sensitive << interrupts_.intx_changed();
        dont_initialize();
    }

    [[nodiscard]] static typename Traits::dma make_dma(nb_initiator& non_blocking, initiator_context& context)
    {
        if constexpr (approximately_timed) {
            return tlm_async_dma{non_blocking, context};
        } else {
            return tlm_dma{context};
        }
    }

    tlm::tlm_sync_enum dma_backward(tlm::tlm_generic_payload& payload, tlm::tlm_phase& phase,
                                    sc_core::sc_time& delay)
    {
        return non_blocking_.backward(payload, phase, delay);
    }

    void run()
    {
        context_.set_owner(sc_core::sc_get_current_process_handle());
        for (;;) {
            const std::size_t executed = controller_.poll();
            ++polls_;
            context_.synchronise();
            // With next_due the backend says when it has work; without, poll while it is busy.
            const bool busy = !controller_.backend_idle() && !options_.next_due;
            sc_core::sc_time next = busy ? options_.poll_period : options_.idle_period;
            if (executed != 0) {
                next = std::min(next, options_.poll_period); // more may wait behind a batch
            }
            if (options_.next_due) {
                if (const auto due = options_.next_due()) {
                    const sc_core::sc_time at = to_sc_time(*due);
                    const sc_core::sc_time& now = sc_core::sc_time_stamp();
                    next = std::min(next, at > now ? at - now : sc_core::SC_ZERO_TIME);
                }
            }
            sc_core::wait(next, wake_ | non_blocking_.responded());
        }
    }

    /// Teardown with AT DMA in flight: nothing is fetched or posted once the function is reset, and
    /// every request completes (failed) in the controller's next polls; a bounded number of them,
    /// since each poll takes every completion and submits nothing that would not fail at once.
    void abandon_dma()
    {
        controller_.function_level_reset();
        non_blocking_.abandon();
        for (int round = 0; round < 16 && !controller_.dma_idle(); ++round) {
            controller_.poll();
        }
    }

    /// The INTx pin, driven from this one process whichever process changed the level.
    void drive_intx() { intx.write(interrupts_.intx_output()); }

    /// Checks the parts of `payload` a register access cannot have: byte enables, streaming, a
    /// width other than 1, 2, 4 or 8 (`max_width` at most). Sets the error response and returns
    /// false when one is there.
    [[nodiscard]] static bool plain_access(tlm::tlm_generic_payload& payload, unsigned max_width)
    {
        const unsigned width = payload.get_data_length();
        if (payload.get_byte_enable_ptr() != nullptr || payload.get_streaming_width() != width) {
            payload.set_response_status(tlm::TLM_BYTE_ENABLE_ERROR_RESPONSE);
            return false;
        }
        if (width == 0 || width > max_width || (width & (width - 1)) != 0) {
            payload.set_response_status(tlm::TLM_BURST_ERROR_RESPONSE);
            return false;
        }
        if (payload.get_command() == tlm::TLM_IGNORE_COMMAND) {
            payload.set_response_status(tlm::TLM_COMMAND_ERROR_RESPONSE);
            return false;
        }
        return true;
    }

    [[nodiscard]] static std::uint64_t load_value(const tlm::tlm_generic_payload& payload)
    {
        std::uint64_t value = 0;
        std::memcpy(&value, payload.get_data_ptr(), payload.get_data_length()); // little-endian
        return value;
    }

    static void store_value(tlm::tlm_generic_payload& payload, std::uint64_t value)
    {
        std::memcpy(payload.get_data_ptr(), &value, payload.get_data_length());
    }

    void bar0_transport(tlm::tlm_generic_payload& payload, sc_core::sc_time& delay)
    {
        payload.set_dmi_allowed(false);
        if (!plain_access(payload, 8)) {
            return;
        }
        const std::uint64_t offset = payload.get_address();
        if (!config_space_.memory_enabled() || offset >= controller_.bar0_size() ||
            payload.get_data_length() > controller_.bar0_size() - offset) {
            payload.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
            return;
        }
        delay += options_.register_latency;
        const initiator_context::serving_scope serving{context_, delay};
        if (payload.is_read()) {
            store_value(payload, controller_.mmio_read(offset, payload.get_data_length()));
        } else {
            controller_.mmio_write(offset, payload.get_data_length(), load_value(payload));
            wake_.notify(delay); // a doorbell or a register event: poll when the write lands
        }
        payload.set_response_status(tlm::TLM_OK_RESPONSE);
    }

    void config_transport(tlm::tlm_generic_payload& payload, sc_core::sc_time& delay)
    {
        payload.set_dmi_allowed(false);
        if (!plain_access(payload, 4)) {
            return;
        }
        delay += options_.register_latency;
        const initiator_context::serving_scope serving{context_, delay};
        const auto offset = static_cast<std::uint32_t>(payload.get_address());
        const unsigned width = payload.get_data_length();
        if (payload.is_read()) {
            store_value(payload, config_space_.read(offset, width));
            payload.set_response_status(tlm::TLM_OK_RESPONSE);
            return;
        }
        const auto event =
            config_space_.write(offset, width, static_cast<std::uint32_t>(load_value(payload)));
        pci::apply_config_event(event, config_space_, controller_, interrupts_);
        if (event.any()) {
            wake_.notify(delay);
        }
        payload.set_response_status(tlm::TLM_OK_RESPONSE);
    }

    device_options options_;
    nb_initiator non_blocking_; ///< the AT path (unused in LT mode)
    initiator_context context_;
    simulation_clock clock_;
    typename Traits::dma dma_;
    tlm_interrupts interrupts_;
    std::unique_ptr<typename controller_type::subsystem_type> own_subsystem_; ///< without a shared one
    controller_type controller_;
    pci::config_space config_space_;
    sc_core::sc_event wake_;
    std::uint64_t polls_ = 0;
};

} // namespace systemc
NVMEKIT_END_NAMESPACE
