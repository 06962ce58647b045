#pragma once
/// router: a TLM-2.0 interconnect that decodes addresses, for virtual platforms around
/// nvme_device (the host CPU's accesses to configuration space and BAR0, the device's DMA and
/// MSI-X writes to host memory), or any other TLM-2.0 base-protocol traffic.
///
///     nvmekit::systemc::router bus{"bus"};
///     bus.target_socket.bind(...)  // every initiator: host_bus's sockets, the device's dma_socket
///     const auto ram_target = bus.bind_target(ram.socket);        // target 0
///     const auto bar0_target = bus.bind_target(nvme.bar0_socket); // target 1
///     bus.map(ram_target, 0x100000, 16 << 20, 0x100000);         // RAM, addresses kept
///     bus.map(bar0_target, 0xf0000000, 0x4000);                   // BAR0, rebased to 0
///
/// One address space for every initiator: `map(target, base, size, target_base)` routes
/// [base, base + size) to the target bound `target`-th (bind_target's result), which sees the
/// address `address - base + target_base` (0 by default: the window's offset). Windows may not
/// overlap; one target may have several. An access must fall in one window, all of it: any other
/// is answered TLM_ADDRESS_ERROR_RESPONSE without reaching a target.
///
/// - b_transport and transport_dbg are forwarded with the address rebased, and the address is
///   restored when the call returns; transport_dbg of an address no window claims moves 0 bytes.
/// - nb_transport_fw and nb_transport_bw (approximately timed): BEGIN_REQ is decoded and its
///   route remembered (the initiator, the target, the original address); every later phase of
///   the transaction, either way, goes the same route with its phase, delay and return value
///   untouched. The payload carries the target's address from BEGIN_REQ until the transaction
///   ends (END_RESP forwarded, or TLM_COMPLETED returned either way), when the router restores
///   the original address and forgets the route. A BEGIN_REQ no window claims is completed at
///   once: TLM_ADDRESS_ERROR_RESPONSE, TLM_COMPLETED.
/// - get_direct_mem_ptr is forwarded, and the DMI region granted is translated back into the
///   initiator's addresses and clipped to the window; invalidate_direct_mem_ptr from a target
///   reaches every initiator, translated through each window of that target.
///
/// The router takes no time of its own, has no process and keeps nothing between transactions
/// but the routes of AT transactions in flight.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/multi_passthrough_initiator_socket.h>
#include <tlm_utils/multi_passthrough_target_socket.h>

#include <nvmekit/config.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace systemc {

/// A TLM-2.0 address-decoding router (see the top of this header).
class router : public sc_core::sc_module {
public:
    /// Initiators bind their sockets here, as many as they like.
    tlm_utils::multi_passthrough_target_socket<router> target_socket;
    /// Bound to the targets, in bind_target() order.
    tlm_utils::multi_passthrough_initiator_socket<router> initiator_socket;

    /// One window of the address map.
    struct window {
        std::size_t target = 0;        ///< the index bind_target() returned
        std::uint64_t base = 0;        ///< first address of the window
        std::uint64_t size = 0;        ///< bytes
        std::uint64_t target_base = 0; ///< what `base` becomes at the target
    };

    explicit router(const sc_core::sc_module_name& name)
        : sc_core::sc_module{name}, target_socket{"target_socket"}, initiator_socket{"initiator_socket"}
    {
        target_socket.register_b_transport(this, &router::b_transport);
        target_socket.register_nb_transport_fw(this, &router::nb_transport_fw);
        target_socket.register_transport_dbg(this, &router::transport_dbg);
        target_socket.register_get_direct_mem_ptr(this, &router::get_direct_mem_ptr);
        initiator_socket.register_nb_transport_bw(this, &router::nb_transport_bw);
        initiator_socket.register_invalidate_direct_mem_ptr(this, &router::invalidate_direct_mem_ptr);
    }

    /// Binds `target` (a target socket) behind the router; returns its index for map().
    template <typename TargetSocket>
    std::size_t bind_target(TargetSocket& target)
    {
        initiator_socket.bind(target);
        return targets_++;
    }

    /// Routes [base, base + size) to target `target`, where `base` is `target_base`. Throws
    /// std::invalid_argument for an empty or wrapping window, an unknown target, or a window that
    /// overlaps one already mapped.
    void map(std::size_t target, std::uint64_t base, std::uint64_t size, std::uint64_t target_base = 0)
    {
        if (size == 0 || base + (size - 1) < base || target_base + (size - 1) < target_base) {
            throw std::invalid_argument{"router::map: an empty window, or one that wraps"};
        }
        if (target >= targets_) {
            throw std::invalid_argument{"router::map: no target bound with that index"};
        }
        for (const window& other : windows_) {
            if (base <= other.base + (other.size - 1) && other.base <= base + (size - 1)) {
                throw std::invalid_argument{"router::map: the window overlaps one already mapped"};
            }
        }
        windows_.push_back({target, base, size, target_base});
        std::sort(windows_.begin(), windows_.end(),
                  [](const window& a, const window& b) { return a.base < b.base; });
    }

    /// The address map, by base address.
    [[nodiscard]] const std::vector<window>& windows() const noexcept { return windows_; }
    /// The window that holds all of [address, address + length), if one does.
    [[nodiscard]] const window* decode(std::uint64_t address, std::uint64_t length) const noexcept
    {
        const std::uint64_t last = address + (length == 0 ? 0 : length - 1);
        if (last < address) {
            return nullptr;
        }
        auto after = std::upper_bound(windows_.begin(), windows_.end(), address,
                                      [](std::uint64_t value, const window& w) { return value < w.base; });
        if (after == windows_.begin()) {
            return nullptr;
        }
        const window& candidate = *(after - 1);
        return last - candidate.base < candidate.size ? &candidate : nullptr;
    }

    /// Transactions refused for want of a window (b_transport, nb_transport_fw, transport_dbg).
    [[nodiscard]] std::uint64_t address_errors() const noexcept { return address_errors_; }
    /// AT transactions between BEGIN_REQ and their end.
    [[nodiscard]] std::size_t routes_in_flight() const noexcept { return routes_.size(); }

private:
    /// Where an AT transaction goes and where it came from.
    struct route {
        int initiator = 0;
        std::size_t target = 0;
        std::uint64_t address = 0; ///< the initiator's address, restored at the end
    };

    [[nodiscard]] static std::uint64_t target_address(const window& w, std::uint64_t address) noexcept
    {
        return address - w.base + w.target_base;
    }

    [[nodiscard]] const window* decode(const tlm::tlm_generic_payload& payload) const noexcept
    {
        return decode(payload.get_address(), payload.get_data_length());
    }

    void b_transport(int /*initiator*/, tlm::tlm_generic_payload& payload, sc_core::sc_time& delay)
    {
        const window* w = decode(payload);
        if (w == nullptr) {
            ++address_errors_;
            payload.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
            return;
        }
        const std::uint64_t address = payload.get_address();
        payload.set_address(target_address(*w, address));
        initiator_socket[static_cast<int>(w->target)]->b_transport(payload, delay);
        payload.set_address(address);
    }

    unsigned int transport_dbg(int /*initiator*/, tlm::tlm_generic_payload& payload)
    {
        const window* w = decode(payload);
        if (w == nullptr) {
            ++address_errors_;
            payload.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
            return 0;
        }
        const std::uint64_t address = payload.get_address();
        payload.set_address(target_address(*w, address));
        const unsigned int moved = initiator_socket[static_cast<int>(w->target)]->transport_dbg(payload);
        payload.set_address(address);
        return moved;
    }

    bool get_direct_mem_ptr(int /*initiator*/, tlm::tlm_generic_payload& payload, tlm::tlm_dmi& dmi)
    {
        const window* w = decode(payload.get_address(), 1);
        if (w == nullptr) {
            dmi.allow_none();
            dmi.set_start_address(0);
            dmi.set_end_address(std::numeric_limits<sc_dt::uint64>::max());
            return false;
        }
        const std::uint64_t address = payload.get_address();
        payload.set_address(target_address(*w, address));
        const bool granted = initiator_socket[static_cast<int>(w->target)]->get_direct_mem_ptr(payload, dmi);
        payload.set_address(address);
        // Back into the initiator's addresses, within the window (a region's pointer is its start's).
        const std::uint64_t window_last = w->target_base + (w->size - 1);
        std::uint64_t start = std::max<std::uint64_t>(dmi.get_start_address(), w->target_base);
        std::uint64_t end = std::min<std::uint64_t>(dmi.get_end_address(), window_last);
        if (granted && dmi.get_dmi_ptr() != nullptr && start > dmi.get_start_address()) {
            dmi.set_dmi_ptr(dmi.get_dmi_ptr() + (start - dmi.get_start_address()));
        }
        if (start > end) { // the target's region misses the window: a region of the address alone
            start = end = target_address(*w, address);
        }
        dmi.set_start_address(start - w->target_base + w->base);
        dmi.set_end_address(end - w->target_base + w->base);
        return granted;
    }

    tlm::tlm_sync_enum nb_transport_fw(int initiator, tlm::tlm_generic_payload& payload,
                                       tlm::tlm_phase& phase, sc_core::sc_time& delay)
    {
        auto known = routes_.find(&payload);
        if (known == routes_.end()) {
            if (phase != tlm::BEGIN_REQ) {
                SC_REPORT_ERROR("nvmekit/router", "a phase other than BEGIN_REQ for a transaction not begun");
                return tlm::TLM_COMPLETED;
            }
            const window* w = decode(payload);
            if (w == nullptr) {
                ++address_errors_;
                payload.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
                return tlm::TLM_COMPLETED;
            }
            known = routes_.emplace(&payload, route{initiator, w->target, payload.get_address()}).first;
            payload.set_address(target_address(*w, payload.get_address()));
        }
        const route taken = known->second;
        const bool ending = phase == tlm::END_RESP;
        const tlm::tlm_sync_enum status =
            initiator_socket[static_cast<int>(taken.target)]->nb_transport_fw(payload, phase, delay);
        if (ending || status == tlm::TLM_COMPLETED) {
            forget(payload);
        }
        return status;
    }

    tlm::tlm_sync_enum nb_transport_bw(int /*target*/, tlm::tlm_generic_payload& payload,
                                       tlm::tlm_phase& phase, sc_core::sc_time& delay)
    {
        const auto known = routes_.find(&payload);
        if (known == routes_.end()) {
            SC_REPORT_ERROR("nvmekit/router", "a backward phase for a transaction the router did not route");
            return tlm::TLM_COMPLETED;
        }
        const tlm::tlm_sync_enum status =
            target_socket[known->second.initiator]->nb_transport_bw(payload, phase, delay);
        if (status == tlm::TLM_COMPLETED || (status == tlm::TLM_UPDATED && phase == tlm::END_RESP)) {
            forget(payload);
        }
        return status;
    }

    void invalidate_direct_mem_ptr(int target, sc_dt::uint64 start, sc_dt::uint64 end)
    {
        for (const window& w : windows_) {
            if (w.target != static_cast<std::size_t>(target)) {
                continue;
            }
            const std::uint64_t first = std::max<std::uint64_t>(start, w.target_base);
            const std::uint64_t last = std::min<std::uint64_t>(end, w.target_base + (w.size - 1));
            if (first > last) {
                continue;
            }
            for (unsigned int i = 0; i < target_socket.size(); ++i) {
                target_socket[static_cast<int>(i)]->invalidate_direct_mem_ptr(first - w.target_base + w.base,
                                                                              last - w.target_base + w.base);
            }
        }
    }

    /// The transaction has ended: the initiator's address back, the route gone.
    void forget(tlm::tlm_generic_payload& payload)
    {
        const auto known = routes_.find(&payload);
        if (known != routes_.end()) {
            payload.set_address(known->second.address);
            routes_.erase(known);
        }
    }

    std::vector<window> windows_;
    std::size_t targets_ = 0;
    std::unordered_map<const tlm::tlm_generic_payload*, route> routes_;
    std::uint64_t address_errors_ = 0;
};

} // namespace systemc
NVMEKIT_END_NAMESPACE
