#pragma once
/// The host side of a virtual platform around nvme_device, for tests and examples:
///
/// - `host_memory`: a TLM target over a testing::flat_memory (the memory the device's DMA reaches),
///   with an MSI window: a 32-bit write there is an MSI-X message, handed to a sink
///   (testing::recording_msix) with the written data as the vector, and notifies `msi_event()`.
///   It serves b_transport (LT: the access happens in the call, its time added to the delay) and
///   nb_transport_fw (AT: END_REQ at once, BEGIN_RESP when the access has taken its time, at
///   which point the data moves; one response at a time, the next after END_RESP).
/// - `host_bus`: the host CPU's view of the device, BAR0 and configuration accesses through two
///   initiator sockets, shaped like the controller's own host-facing calls (mmio_read,
///   mmio_write, poll, set_msix_control, msix_table_offset, msix().vectors()). So
///   testing::in_process_host<host_bus> drives the device over TLM unchanged:
///
///     nvmekit::systemc::host_bus bus{"bus"};
///     bus.bar0_socket.bind(device.bar0_socket);
///     bus.config_socket.bind(device.config_socket);
///     // in an SC_THREAD:
///     bus.enumerate(0xf0000000);                       // BAR0, Memory Space and Bus Master Enable
///     nvmekit::testing::in_process_host host{bus, memory, clock, msix};
///     host.bring_up();
///
///   poll() waits `poll_interval` of simulated time (or less, when an MSI arrives), which lets the
///   device run; the host's own memory accesses (queue entries, data) go to the flat_memory
///   directly, as a CPU's do. Every call must come from an SC_THREAD, unless the bus steps the
///   simulation itself (set_stepping(clock)): then the host runs outside it, between sc_start
///   calls (a unit test's own thread), on its own testing::manual_clock; before each access and
///   in each poll() the simulation runs until simulated time has caught up with that clock and
///   nothing more is due at that time, and the accesses themselves take no simulated time.
///
///   The sockets carry offsets (BAR0 offset, configuration offset), for a bus bound straight to
///   the device's target sockets. Through a router (router.hpp) the bus speaks system addresses
///   instead (use_system_addresses(config_base)): configuration accesses at `config_base` plus the
///   offset (an ECAM-like window), BAR0 accesses at the address enumerate() gave BAR0 plus the
///   offset.
/// - `host_program`: runs the host's code in an SC_THREAD and stops the simulation when it ends.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>

#include <systemc>
#include <tlm>
#include <tlm_utils/peq_with_cb_and_phase.h>
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>
#include <tlm_utils/tlm_quantumkeeper.h>

#include <nvmekit/config.hpp>
#include <nvmekit/contracts/interrupts.hpp>
#include <nvmekit/pci/config_space.hpp>
#include <nvmekit/pci/msix.hpp>
#include <nvmekit/testing/flat_memory.hpp>
#include <nvmekit/testing/manual_clock.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace systemc {

/// Where host_memory decodes MSI writes, and what its accesses cost.
struct host_memory_options {
    std::uint64_t msi_base = 0xfee00000U; ///< the x86 interrupt window
    std::uint64_t msi_size = 0x100000U;
    /// Added to the delay of every access.
    sc_core::sc_time access_latency = sc_core::SC_ZERO_TIME;
    /// Bytes per second of the link to memory (0: transfers take no time).
    std::uint64_t bytes_per_second = 0;
};

/// Host memory as a TLM target (see the top of this header). `MsiSink` has
/// `raise_msix(std::uint16_t vector, msix_message message)`.
template <typename MsiSink>
class host_memory : public sc_core::sc_module {
public:
    tlm_utils::simple_target_socket<host_memory> socket;

    host_memory(const sc_core::sc_module_name& name, testing::flat_memory& memory, MsiSink& sink,
                const host_memory_options& options = {})
        : sc_core::sc_module{name}
        , socket{"socket"}
        , memory_{memory}
        , sink_{sink}
        , options_{options}
        , responses_{"responses", this, &host_memory::response_due}
    {
        socket.register_b_transport(this, &host_memory::transport);
        socket.register_nb_transport_fw(this, &host_memory::forward);
    }

    /// Notified at the annotated time of every MSI write.
    [[nodiscard]] const sc_core::sc_event& msi_event() const noexcept { return msi_event_; }
    /// Accesses refused (outside memory, byte enables, streaming).
    [[nodiscard]] std::uint64_t refused() const noexcept { return refused_; }
    /// Bytes read and written by initiators.
    [[nodiscard]] std::uint64_t bytes_transferred() const noexcept { return bytes_; }
    /// Read and write accesses to memory served (MSI writes and refused accesses not counted).
    [[nodiscard]] std::uint64_t reads() const noexcept { return reads_; }
    [[nodiscard]] std::uint64_t writes() const noexcept { return writes_; }
    /// Transactions that came by b_transport (LT).
    [[nodiscard]] std::uint64_t blocking_transactions() const noexcept { return blocking_; }
    /// Transactions that came by nb_transport_fw (AT).
    [[nodiscard]] std::uint64_t non_blocking_transactions() const noexcept { return non_blocking_; }
    /// The most AT responses that waited for the one in progress at once.
    [[nodiscard]] std::size_t most_waiting_responses() const noexcept { return most_waiting_; }

private:
    /// What an access of `length` bytes costs: the access latency and the transfer time.
    [[nodiscard]] sc_core::sc_time access_time(unsigned length) const
    {
        sc_core::sc_time time = options_.access_latency;
        if (options_.bytes_per_second != 0) {
            time += sc_core::sc_time{static_cast<double>(length) * 1e9 /
                                         static_cast<double>(options_.bytes_per_second),
                                     sc_core::SC_NS};
        }
        return time;
    }

    void transport(tlm::tlm_generic_payload& payload, sc_core::sc_time& delay)
    {
        ++blocking_;
        delay += access_time(payload.get_data_length());
        access(payload, delay);
    }

    /// AT: a request is accepted at once (END_REQ) and its response begins once the access has
    /// taken access_time(); END_RESP ends the response phase.
    tlm::tlm_sync_enum forward(tlm::tlm_generic_payload& payload, tlm::tlm_phase& phase,
                               sc_core::sc_time& delay)
    {
        if (phase == tlm::BEGIN_REQ) {
            ++non_blocking_;
            payload.acquire();
            responses_.notify(payload, tlm::BEGIN_RESP, delay + access_time(payload.get_data_length()));
            phase = tlm::END_REQ;
            return tlm::TLM_UPDATED;
        }
        if (phase == tlm::END_RESP) {
            if (delay == sc_core::SC_ZERO_TIME) {
                response_ended(payload);
            } else {
                responses_.notify(payload, phase, delay);
            }
            return tlm::TLM_COMPLETED;
        }
        SC_REPORT_ERROR("nvmekit/host_memory", "an initiator sent a phase other than BEGIN_REQ or END_RESP");
        return tlm::TLM_COMPLETED;
    }

    /// A response due (BEGIN_RESP) or ended late (END_RESP), at its time.
    void response_due(tlm::tlm_generic_payload& payload, const tlm::tlm_phase& phase)
    {
        if (phase == tlm::END_RESP) {
            response_ended(payload);
            return;
        }
        if (responding_ != nullptr) {
            waiting_responses_.push_back(&payload); // one response at a time (response exclusion)
            most_waiting_ = std::max(most_waiting_, waiting_responses_.size());
            return;
        }
        respond(payload);
    }

    /// Makes the access of `payload` and begins its response.
    void respond(tlm::tlm_generic_payload& payload)
    {
        responding_ = &payload;
        access(payload, sc_core::SC_ZERO_TIME);
        tlm::tlm_phase phase = tlm::BEGIN_RESP;
        sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
        const tlm::tlm_sync_enum status = socket->nb_transport_bw(payload, phase, delay);
        if (status == tlm::TLM_COMPLETED || (status == tlm::TLM_UPDATED && phase == tlm::END_RESP)) {
            response_ended(payload);
        }
    }

    void response_ended(tlm::tlm_generic_payload& payload)
    {
        if (responding_ != &payload) {
            return;
        }
        responding_ = nullptr;
        payload.release();
        if (!waiting_responses_.empty()) {
            tlm::tlm_generic_payload& next = *waiting_responses_.front();
            waiting_responses_.pop_front();
            respond(next);
        }
    }

    /// The access itself; an MSI notifies msi_event() after `delay`.
    void access(tlm::tlm_generic_payload& payload, const sc_core::sc_time& delay)
    {
        const std::uint64_t address = payload.get_address();
        const unsigned length = payload.get_data_length();
        payload.set_dmi_allowed(false);
        if (payload.get_byte_enable_ptr() != nullptr || payload.get_streaming_width() != length) {
            ++refused_;
            payload.set_response_status(tlm::TLM_BYTE_ENABLE_ERROR_RESPONSE);
            return;
        }
        if (address >= options_.msi_base && address - options_.msi_base < options_.msi_size) {
            if (!payload.is_write() || length != 4) {
                ++refused_;
                payload.set_response_status(tlm::TLM_COMMAND_ERROR_RESPONSE);
                return;
            }
            std::uint32_t data = 0;
            std::memcpy(&data, payload.get_data_ptr(), sizeof data);
            sink_.raise_msix(static_cast<std::uint16_t>(data), msix_message{address, data});
            msi_event_.notify(delay);
            payload.set_response_status(tlm::TLM_OK_RESPONSE);
            return;
        }
        const auto bytes = reinterpret_cast<std::byte*>(payload.get_data_ptr());
        std::error_code error;
        if (payload.is_read()) {
            error = memory_.read(address, {bytes, length});
        } else if (payload.is_write()) {
            error = memory_.write(address, {bytes, length});
        }
        if (error) {
            ++refused_;
            payload.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
            return;
        }
        bytes_ += length;
        ++(payload.is_read() ? reads_ : writes_);
        payload.set_response_status(tlm::TLM_OK_RESPONSE);
    }

    testing::flat_memory& memory_;
    MsiSink& sink_;
    host_memory_options options_;
    tlm_utils::peq_with_cb_and_phase<host_memory> responses_;
    tlm::tlm_generic_payload* responding_ = nullptr; ///< between BEGIN_RESP and END_RESP
    std::deque<tlm::tlm_generic_payload*> waiting_responses_;
    sc_core::sc_event msi_event_;
    std::uint64_t refused_ = 0;
    std::uint64_t bytes_ = 0;
    std::uint64_t reads_ = 0;
    std::uint64_t writes_ = 0;
    std::uint64_t blocking_ = 0;
    std::uint64_t non_blocking_ = 0;
    std::size_t most_waiting_ = 0;
};

/// The host CPU's accesses to the device (see the top of this header).
class host_bus : public sc_core::sc_module {
public:
    tlm_utils::simple_initiator_socket<host_bus> bar0_socket;
    tlm_utils::simple_initiator_socket<host_bus> config_socket;

    /// What msix() returns: the vector count the MSI-X capability reports.
    struct msix_view {
        std::uint16_t vector_count = 0;
        [[nodiscard]] std::uint16_t vectors() const noexcept { return vector_count; }
    };

    explicit host_bus(const sc_core::sc_module_name& name,
                      const sc_core::sc_time& poll_interval = sc_core::sc_time{1, sc_core::SC_US})
        : sc_core::sc_module{name}
        , bar0_socket{"bar0_socket"}
        , config_socket{"config_socket"}
        , poll_interval_{poll_interval}
    {
        keeper_.reset();
    }

    /// poll() also returns when `event` fires (host_memory::msi_event(): an interrupt wakes the CPU).
    void wake_on(const sc_core::sc_event& event) noexcept { wake_ = &event; }

    /// Sends system addresses instead of offsets (see the top of this header): configuration
    /// accesses at `config_base` + offset, BAR0 accesses at BAR0's address (enumerate()) + offset.
    void use_system_addresses(std::uint64_t config_base) noexcept
    {
        system_addresses_ = true;
        config_base_ = config_base;
    }

    /// Makes the host run outside the simulation and step it to `host_clock`'s time (see the top
    /// of this header); null makes it an SC_THREAD's again.
    void set_stepping(const testing::manual_clock* host_clock) noexcept { stepping_ = host_clock; }

    /// What platform firmware does: places BAR0 at `bar0_address`, sets Memory Space and Bus Master
    /// Enable, and reads the MSI-X capability (table offset and size).
    void enumerate(std::uint64_t bar0_address)
    {
        bar0_address_ = bar0_address;
        config_write(pci::header::bar0, 4, static_cast<std::uint32_t>(bar0_address));
        config_write(pci::header::bar1, 4, static_cast<std::uint32_t>(bar0_address >> 32));
        const pci::command_register command{static_cast<std::uint16_t>(config_read(pci::header::command, 2))};
        config_write(pci::header::command, 2,
                     command.with(pci::command_register::memory_space, true)
                         .with(pci::command_register::bus_master, true)
                         .raw);
        const std::uint32_t control_offset = msix_capability() + pci::msix_register::message_control;
        const msix_message_control control{static_cast<std::uint16_t>(config_read(control_offset, 2))};
        msix_.vector_count = static_cast<std::uint16_t>(control.get(msix_message_control::table_size) + 1U);
        msix_table_offset_ =
            config_read(msix_capability() + pci::msix_register::table, 4) & ~std::uint32_t{7};
    }

    [[nodiscard]] std::uint32_t config_read(std::uint32_t offset, unsigned width)
    {
        return static_cast<std::uint32_t>(
            access(config_socket, tlm::TLM_READ_COMMAND, config_address(offset), width, 0));
    }
    void config_write(std::uint32_t offset, unsigned width, std::uint32_t value)
    {
        access(config_socket, tlm::TLM_WRITE_COMMAND, config_address(offset), width, value);
    }

    [[nodiscard]] std::uint64_t mmio_read(std::uint64_t offset, unsigned width)
    {
        return access(bar0_socket, tlm::TLM_READ_COMMAND, bar0_address(offset), width, 0);
    }
    void mmio_write(std::uint64_t offset, unsigned width, std::uint64_t value)
    {
        access(bar0_socket, tlm::TLM_WRITE_COMMAND, bar0_address(offset), width, value);
    }

    /// Lets simulated time pass: the host's local time, then `poll_interval` (or until an MSI).
    std::size_t poll()
    {
        if (stepping_ != nullptr) {
            catch_up();
            return 0;
        }
        keeper_.sync();
        if (wake_ != nullptr) {
            sc_core::wait(poll_interval_, *wake_);
        } else {
            sc_core::wait(poll_interval_);
        }
        return 0;
    }

    /// Sets MSI-X Enable and Function Mask in the MSI-X capability's Message Control.
    void set_msix_control(bool enabled, bool function_mask)
    {
        const std::uint32_t offset = msix_capability() + pci::msix_register::message_control;
        const msix_message_control control{static_cast<std::uint16_t>(config_read(offset, 2))};
        config_write(offset, 2,
                     control.with(msix_message_control::enable, enabled)
                         .with(msix_message_control::function_mask, function_mask)
                         .raw);
    }

    [[nodiscard]] std::uint64_t msix_table_offset() const noexcept { return msix_table_offset_; }
    [[nodiscard]] const msix_view& msix() const noexcept { return msix_; }

private:
    [[nodiscard]] std::uint64_t config_address(std::uint32_t offset) const noexcept
    {
        return system_addresses_ ? config_base_ + offset : offset;
    }
    [[nodiscard]] std::uint64_t bar0_address(std::uint64_t offset) const noexcept
    {
        return system_addresses_ ? bar0_address_ + offset : offset;
    }

    /// The MSI-X capability's offset, found by walking the capability list.
    [[nodiscard]] std::uint32_t msix_capability()
    {
        std::uint32_t at = config_read(pci::header::capabilities_pointer, 1) & 0xfcU;
        for (int hops = 0; at != 0 && hops < 48; ++hops) {
            if (config_read(at, 1) == pci::capability_id::msix) {
                return at;
            }
            at = config_read(at + 1, 1) & 0xfcU;
        }
        throw std::runtime_error{"host_bus: the device has no MSI-X capability"};
    }

    /// Runs the simulation until its time is the host clock's and nothing is left at that time.
    void catch_up()
    {
        const sc_core::sc_time target{static_cast<double>(stepping_->now().count()), sc_core::SC_NS};
        if (!sc_core::sc_get_curr_simcontext()->elaboration_done() && target == sc_core::SC_ZERO_TIME) {
            return; // not elaborated yet: what is due at 0 runs in the first sc_start
        }
        if (target > sc_core::sc_time_stamp()) {
            sc_core::sc_start(target - sc_core::sc_time_stamp());
        }
        while (sc_core::sc_pending_activity_at_current_time()) {
            sc_core::sc_start(sc_core::SC_ZERO_TIME);
        }
    }

    std::uint64_t access(tlm_utils::simple_initiator_socket<host_bus>& socket, tlm::tlm_command command,
                         std::uint64_t address, unsigned width, std::uint64_t value)
    {
        tlm::tlm_generic_payload payload;
        payload.set_command(command);
        payload.set_address(address);
        payload.set_data_ptr(reinterpret_cast<unsigned char*>(&value)); // little-endian
        payload.set_data_length(width);
        payload.set_streaming_width(width);
        payload.set_byte_enable_ptr(nullptr);
        payload.set_dmi_allowed(false);
        payload.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
        if (stepping_ != nullptr) {
            catch_up();
        }
        sc_core::sc_time delay = stepping_ != nullptr ? sc_core::SC_ZERO_TIME : keeper_.get_local_time();
        socket->b_transport(payload, delay);
        if (stepping_ == nullptr) {
            keeper_.set(delay);
            if (keeper_.need_sync()) {
                keeper_.sync();
            }
        }
        if (!payload.is_response_ok()) {
            if (command == tlm::TLM_READ_COMMAND) {
                return ~std::uint64_t{0} >> (64 - 8 * width); // an unsupported request reads all ones
            }
            return 0;
        }
        return value;
    }

    sc_core::sc_time poll_interval_;
    const sc_core::sc_event* wake_ = nullptr;
    const testing::manual_clock* stepping_ = nullptr;
    tlm_utils::tlm_quantumkeeper keeper_;
    msix_view msix_;
    std::uint64_t msix_table_offset_ = 0;
    bool system_addresses_ = false;
    std::uint64_t config_base_ = 0;
    std::uint64_t bar0_address_ = 0;
};

/// Runs a host program (a function) in an SC_THREAD, then stops the simulation. An exception the
/// program throws ends it too and is kept in `failure()`.
class host_program : public sc_core::sc_module {
public:
    SC_HAS_PROCESS(host_program);

    host_program(const sc_core::sc_module_name& name, std::function<void()> program)
        : sc_core::sc_module{name}, program_{std::move(program)}
    {
        SC_THREAD(run);
    }

    /// What the program threw, if anything.
    [[nodiscard]] std::exception_ptr failure() const noexcept { return failure_; }
    /// True once the program has returned or thrown.
    [[nodiscard]] bool finished() const noexcept { return finished_; }

private:
    void run()
    {
        try {
            program_();
        } catch (...) {
            failure_ = std::current_exception();
        }
        finished_ = true;
        sc_core::sc_stop();
    }

    std::function<void()> program_;
    std::exception_ptr failure_;
    bool finished_ = false;
};

} // namespace systemc
NVMEKIT_END_NAMESPACE
