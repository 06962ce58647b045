#pragma once
/// The providers of a controller inside a SystemC simulation, loosely timed (TLM-2.0 LT) or
/// approximately timed (AT):
///
// clang-format off
/// | provider           | concept               | what it does |
/// |--------------------|-----------------------|--------------|
/// | `simulation_clock` | Clock                 | `now()` is `sc_time_stamp()` plus the calling process's local time offset |
/// | `tlm_dma`          | DmaProvider           | LT: one `b_transport` per access through the device's initiator socket, with annotated delay |
/// | `tlm_async_dma`    | AsyncDmaProvider      | AT: one non-blocking transaction per access (nb_initiator.hpp), complete when its response begins |
/// | `tlm_interrupts`   | IntxInterruptProvider | MSI-X as the 32-bit memory write the host programmed (address, data), through the same socket (a posted AT write in AT mode); INTx as a level the module drives on an `sc_out<bool>` |
// clang-format on
///
/// The three share one `initiator_context`: the quantum keeper of the process that polls the
/// controller (nvme_device's poll thread). An access that process makes adds its delay to the
/// keeper's local time and synchronises when the keeper says so (the global quantum,
/// tlm::tlm_global_quantum). An access made while the device serves a host transaction (a
/// BAR0 write that unmasks a pending MSI-X vector, say) runs in the host's process instead: its
/// delay is added to the delay annotated on that host transaction, and it never waits.
///
/// In AT mode the context sends through an nb_initiator instead (use_non_blocking()): DMA
/// requests and MSI-X writes become transactions whose phases take simulated time, and the
/// quantum keeper stays unused.
///
/// Time conversion assumes a SystemC time resolution of 1 ns or finer (the default is 1 ps).
///
/// A C++20 translation unit including this header must define SC_CPLUSPLUS=201703L when SystemC was
/// built for C++17, as Debian's is; the nvmekit::systemc target does it.

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <system_error>

#include <systemc>
#include <tlm>
#include <tlm_utils/tlm_quantumkeeper.h>

#include <nvmekit/config.hpp>
#include <nvmekit/contracts/async_dma.hpp>
#include <nvmekit/contracts/clock.hpp>
#include <nvmekit/contracts/dma.hpp>
#include <nvmekit/contracts/interrupts.hpp>
#include <nvmekit/error.hpp>
#include <nvmekit/systemc/nb_initiator.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace systemc {

/// `time` as nanoseconds since the start of the simulation (rounded down).
[[nodiscard]] inline std::chrono::nanoseconds to_nanoseconds(const sc_core::sc_time& time)
{
    static const sc_core::sc_time::value_type per_nanosecond = sc_core::sc_time{1, sc_core::SC_NS}.value();
    return std::chrono::nanoseconds{static_cast<std::int64_t>(time.value() / per_nanosecond)};
}

/// `duration` as an sc_time.
[[nodiscard]] inline sc_core::sc_time to_sc_time(std::chrono::nanoseconds duration)
{
    return sc_core::sc_time{static_cast<double>(duration.count()), sc_core::SC_NS};
}

/// What the device's providers share: the initiator socket they send on, the quantum keeper of the
/// process that polls the controller, and the delay of the host transaction being served, if any.
class initiator_context {
public:
    explicit initiator_context(tlm::tlm_initiator_socket<>& socket) : socket_{socket} {}

    /// The process that polls the controller; call from it once it runs (keeps its local time).
    void set_owner(const sc_core::sc_process_handle& owner)
    {
        owner_ = owner;
        keeper_.reset();
    }

    /// While alive, accesses from processes other than the owner add their delay to `delay` (the
    /// delay annotated on the host transaction the device is serving).
    class serving_scope {
    public:
        serving_scope(initiator_context& context, sc_core::sc_time& delay) noexcept
            : context_{context}, previous_{context.serving_delay_}
        {
            context_.serving_delay_ = &delay;
        }
        ~serving_scope() { context_.serving_delay_ = previous_; }
        serving_scope(const serving_scope&) = delete;
        serving_scope& operator=(const serving_scope&) = delete;

    private:
        initiator_context& context_;
        sc_core::sc_time* previous_;
    };

    /// The local time offset of the calling process as the device sees it.
    [[nodiscard]] sc_core::sc_time local_time()
    {
        if (on_owner()) {
            return keeper_.get_local_time();
        }
        return serving_delay_ != nullptr ? *serving_delay_ : sc_core::SC_ZERO_TIME;
    }

    /// One blocking transaction of `length` bytes at `address`; false when the target answered
    /// with an error response.
    bool transport(tlm::tlm_command command, std::uint64_t address, unsigned char* data, std::size_t length)
    {
        const bool owner = on_owner();
        bool ok = false;
        {
            // Gone before the owner waits: a simulation that stops during the wait never unwinds
            // this stack, and the payload would be left allocated.
            tlm::tlm_generic_payload payload;
            prepare_payload(payload, command, address, data, length);
            if (owner) {
                sc_core::sc_time delay = keeper_.get_local_time();
                socket_->b_transport(payload, delay);
                keeper_.set(delay);
            } else {
                sc_core::sc_time scratch = sc_core::SC_ZERO_TIME;
                sc_core::sc_time& delay = serving_delay_ != nullptr ? *serving_delay_ : scratch;
                socket_->b_transport(payload, delay);
            }
            ok = payload.is_response_ok();
        }
        ++transactions_;
        if (owner && keeper_.need_sync()) {
            keeper_.sync();
        }
        return ok;
    }

    /// Sends MSI-X writes through `initiator`, the AT path, from now on.
    void use_non_blocking(nb_initiator& initiator) noexcept { non_blocking_ = &initiator; }

    /// A 32-bit or smaller write nobody waits for (an MSI-X message): through the AT path when
    /// there is one, else a blocking transaction. False when it is known to have failed.
    bool post_write(std::uint64_t address, std::span<unsigned char> bytes)
    {
        if (non_blocking_ != nullptr) {
            non_blocking_->post_write(address, bytes, local_time());
            return true;
        }
        return transport(tlm::TLM_WRITE_COMMAND, address, bytes.data(), bytes.size());
    }

    /// Posted writes the target refused on the AT path.
    [[nodiscard]] std::uint64_t failed_posted_writes() const noexcept
    {
        return non_blocking_ != nullptr ? non_blocking_->failed_posted_writes() : 0;
    }

    /// Waits out the owner's local time offset (call from the owner).
    void synchronise()
    {
        if (keeper_.get_local_time() != sc_core::SC_ZERO_TIME) {
            keeper_.sync();
        }
    }

    [[nodiscard]] tlm_utils::tlm_quantumkeeper& keeper() noexcept { return keeper_; }
    /// Transactions sent so far (DMA and MSI-X writes).
    [[nodiscard]] std::uint64_t transactions() const noexcept { return transactions_; }

private:
    [[nodiscard]] bool on_owner() const
    {
        return owner_.valid() && sc_core::sc_get_current_process_handle() == owner_;
    }

    tlm::tlm_initiator_socket<>& socket_;
    tlm_utils::tlm_quantumkeeper keeper_;
    sc_core::sc_process_handle owner_;
    sc_core::sc_time* serving_delay_ = nullptr;
    nb_initiator* non_blocking_ = nullptr;
    std::uint64_t transactions_ = 0;
};

/// The Clock of a controller in a simulation: simulated time, including the local time offset of
/// the process that reads it.
class simulation_clock {
public:
    explicit simulation_clock(initiator_context& context) noexcept : context_{&context} {}

    [[nodiscard]] std::chrono::nanoseconds now() const
    {
        return to_nanoseconds(sc_core::sc_time_stamp() + context_->local_time());
    }

private:
    initiator_context* context_;
};

/// The DmaProvider of a controller in a simulation: every read and write is one b_transport to
/// host memory. A target's error response is errc::dma_fault (the controller's Data Transfer Error).
class tlm_dma {
public:
    explicit tlm_dma(initiator_context& context) noexcept : context_{&context} {}

    std::error_code read(std::uint64_t address, std::span<std::byte> destination)
    {
        return transfer(tlm::TLM_READ_COMMAND, address, destination.data(), destination.size());
    }

    std::error_code write(std::uint64_t address, std::span<const std::byte> source)
    {
        // The payload's data pointer is not const; a write target only reads through it.
        return transfer(tlm::TLM_WRITE_COMMAND, address, const_cast<std::byte*>(source.data()),
                        source.size());
    }

private:
    std::error_code transfer(tlm::tlm_command command, std::uint64_t address, std::byte* data,
                             std::size_t length)
    {
        if (length == 0) {
            return {};
        }
        if (address + length < address) {
            return make_error_code(errc::dma_out_of_range);
        }
        const bool ok = context_->transport(command, address, reinterpret_cast<unsigned char*>(data), length);
        return ok ? std::error_code{} : make_error_code(errc::dma_fault);
    }

    initiator_context* context_;
};

/// The AsyncDmaProvider of a controller in an AT simulation: every request is one non-blocking
/// transaction (nb_initiator), complete in the poll() after its response has begun. A target's
/// error response is errc::dma_fault (the controller's Data Transfer Error).
class tlm_async_dma {
public:
    tlm_async_dma(nb_initiator& initiator, initiator_context& context) noexcept
        : initiator_{&initiator}, context_{&context}
    {}

    /// Begins `request` at the calling process's local time.
    void submit(dma_request& request) { initiator_->submit(request, context_->local_time()); }
    std::size_t poll() { return initiator_->poll(); }
    [[nodiscard]] std::size_t outstanding() const noexcept { return initiator_->outstanding(); }

private:
    nb_initiator* initiator_;
    initiator_context* context_;
};

/// The InterruptProvider of a controller in a simulation: an MSI-X vector is the 32-bit memory
/// write of its message data to its message address (PCI Local Bus 3.0 6.8.3). INTx is a level
/// (`intx_output()`: asserted unless the host set Interrupt Disable in the Command register) whose
/// changes notify `intx_changed()`; the module drives its sc_out<bool> from one process on that
/// event, since the controller changes the level from whichever process calls it.
class tlm_interrupts {
public:
    explicit tlm_interrupts(initiator_context& context) noexcept : context_{&context} {}

    void raise_msix(std::uint16_t /*vector*/, msix_message message)
    {
        std::array<unsigned char, 4> data{};
        std::memcpy(data.data(), &message.data, data.size()); // little-endian host memory
        if (!context_->post_write(message.address, data)) {
            ++lost_messages_;
        }
    }

    void set_intx(bool level)
    {
        level_ = level;
        intx_changed_.notify(context_->local_time());
    }

    /// PCI Command.Interrupt Disable: the pin stays deasserted while it is set.
    void set_intx_disabled(bool disabled)
    {
        disabled_ = disabled;
        intx_changed_.notify(context_->local_time());
    }

    /// The level the INTx pin should have.
    [[nodiscard]] bool intx_output() const noexcept { return level_ && !disabled_; }
    /// Notified when intx_output() may have changed.
    [[nodiscard]] const sc_core::sc_event& intx_changed() const noexcept { return intx_changed_; }
    /// MSI-X writes the host memory refused.
    [[nodiscard]] std::uint64_t lost_messages() const noexcept
    {
        return lost_messages_ + context_->failed_posted_writes();
    }

private:
    initiator_context* context_;
    sc_core::sc_event intx_changed_;
    bool level_ = false;
    bool disabled_ = false;
    std::uint64_t lost_messages_ = 0;
};

static_assert(Clock<simulation_clock>);
static_assert(DmaProvider<tlm_dma>);
static_assert(AsyncDmaProvider<tlm_async_dma> && !InlineAsyncDmaProvider<tlm_async_dma>);
static_assert(IntxInterruptProvider<tlm_interrupts>);

} // namespace systemc
NVMEKIT_END_NAMESPACE
