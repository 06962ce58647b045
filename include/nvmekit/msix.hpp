#pragma once
/// The MSI-X table, Pending Bit Array and vector masking of one PCI function (PCI Local Bus 3.0
/// 6.8.2).
///
/// The table holds one 16-byte entry per vector: Message Address (dword 0), Message Upper Address
/// (dword 1), Message Data (dword 2) and Vector Control (dword 3, bit 0 = Mask, set at reset). The
/// PBA holds one Pending bit per vector, packed into qwords. The host reaches both through MMIO
/// (`read_table`/`write_table`, `read_pba`/`write_pba`, offsets relative to the start of each
/// structure); the Function Mask and MSI-X Enable bits of Message Control live in PCI
/// configuration space, so the transport that owns config space forwards them through
/// `set_function_mask`/`set_enabled` (or `write_message_control`).
///
/// `signal(vector)` is how the controller asks for an interrupt: it reaches the InterruptProvider
/// only for an unmasked vector of an enabled, unmasked function, and otherwise sets the vector's
/// Pending bit, which fires when the mask is lifted.
///
/// Not synchronised: table and config-space accesses and `signal` must come from one context at a
/// time (a multi-threaded embedder serialises them, e.g. on the admin context).

#include <bit>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include <nvmekit/config.hpp>
#include <nvmekit/interrupts.hpp>
#include <nvmekit/spec/bits.hpp>

NVMEKIT_BEGIN_NAMESPACE

/// Vector Control, dword 3 of an MSI-X table entry (PCI Local Bus 3.0 6.8.2.9). Bits 31:01 are
/// reserved and read as 0.
struct msix_vector_control : spec::word<msix_vector_control, std::uint32_t> {
    using word::word;
    static constexpr field<0, 1, bool> mask{}; // Mask Bit: bit 00, 1 after reset
};

/// Message Control of the MSI-X capability in PCI configuration space (PCI Local Bus 3.0 6.8.2.3).
struct msix_message_control : spec::word<msix_message_control, std::uint16_t> {
    using word::word;
    static constexpr field<0, 11, std::uint16_t> table_size{}; // Table Size: bits 10:00 (0's based), read-only
    static constexpr field<14, 1, bool> function_mask{};      // Function Mask: bit 14
    static constexpr field<15, 1, bool> enable{};             // MSI-X Enable: bit 15
};

namespace detail {
/// One MSI-X table entry as the host sees it (PCI Local Bus 3.0 Figure 6-11).
struct msix_entry {
    std::uint32_t address_low{};  // dword 0: Message Address
    std::uint32_t address_high{}; // dword 1: Message Upper Address
    std::uint32_t data{};         // dword 2: Message Data
    msix_vector_control control{msix_vector_control{}.with(msix_vector_control::mask, true)}; // dword 3
};

/// True for an aligned 4- or 8-byte access lying wholly within `size` bytes (PCI Local Bus 3.0
/// 6.8.2: the table and PBA take aligned full DWORD or QWORD accesses only).
[[nodiscard]] constexpr bool msix_access_valid(std::uint64_t offset, unsigned width, std::uint64_t size) noexcept
{
    return (width == 4 || width == 8) && offset % width == 0 && offset < size && width <= size - offset;
}
} // namespace detail

template <typename Interrupts>
class msix_table {
    // Checked here rather than in the template head, so a wrong type gets one readable message.
    static_assert(check_interrupt_provider<Interrupts>());

public:
    /// Largest table the capability can describe (Table Size is 11 bits, 0's based).
    static constexpr std::uint16_t max_vectors = 2048;
    static constexpr std::uint64_t entry_bytes = 16;

    /// A table of `vectors` entries (1 to 2048) in their reset state; throws std::invalid_argument
    /// otherwise.
    msix_table(Interrupts& interrupts, std::uint16_t vectors)
        : interrupts_{&interrupts}, vectors_{checked_vectors(vectors)}, entries_(vectors),
          pending_(pba_bytes(vectors) / 8)
    {
    }

    [[nodiscard]] std::uint16_t vectors() const noexcept { return vectors_; }

    /// Bytes of a table of `vectors` entries.
    [[nodiscard]] static constexpr std::uint64_t table_bytes(std::uint16_t vectors) noexcept
    {
        return std::uint64_t{vectors} * entry_bytes;
    }
    /// Bytes of the PBA for `vectors` entries: one bit per vector, in whole qwords.
    [[nodiscard]] static constexpr std::uint64_t pba_bytes(std::uint16_t vectors) noexcept
    {
        return (std::uint64_t{vectors} + 63) / 64 * 8;
    }

    /// MMIO read of the table at `offset` from its start, `width` 4 or 8 bytes, naturally aligned.
    /// A qword covers dwords 0-1 or 2-3 of an entry, low dword first. Any other access reads 0 and
    /// counts a host error.
    [[nodiscard]] std::uint64_t read_table(std::uint64_t offset, unsigned width) const noexcept
    {
        if (!detail::msix_access_valid(offset, width, table_bytes(vectors_))) {
            ++host_errors_;
            return 0;
        }
        const auto& entry = entries_[offset / entry_bytes];
        const auto dword = static_cast<unsigned>(offset % entry_bytes / 4);
        if (width == 4) {
            return read_dword(entry, dword);
        }
        return spec::join_dwords(read_dword(entry, dword), read_dword(entry, dword + 1));
    }

    /// MMIO write of the table (same access rules as `read_table`; a bad access is ignored and
    /// counted). Message Address bits 01:00 read as 0 (PCI Local Bus 3.0 6.8.2.6). Clearing a
    /// vector's Mask bit sends its pending message, if any, when the function is enabled and
    /// unmasked; a qword write to dwords 2-3 stores the data before the mask takes effect.
    void write_table(std::uint64_t offset, unsigned width, std::uint64_t value)
    {
        if (!detail::msix_access_valid(offset, width, table_bytes(vectors_))) {
            ++host_errors_;
            return;
        }
        const auto vector = static_cast<std::uint16_t>(offset / entry_bytes);
        const auto dword = static_cast<unsigned>(offset % entry_bytes / 4);
        std::uint32_t low = 0;
        std::uint32_t high = 0;
        spec::split_qword(value, low, high);
        write_dword(vector, dword, low);
        if (width == 8) {
            write_dword(vector, dword + 1, high);
        }
    }

    /// MMIO read of the PBA (same access rules as `read_table`). Bits past the last vector read 0.
    [[nodiscard]] std::uint64_t read_pba(std::uint64_t offset, unsigned width) const noexcept
    {
        if (!detail::msix_access_valid(offset, width, pba_bytes(vectors_))) {
            ++host_errors_;
            return 0;
        }
        const std::uint64_t qword = pending_[offset / 8];
        if (width == 8) {
            return qword;
        }
        return offset % 8 == 0 ? static_cast<std::uint32_t>(qword) : static_cast<std::uint32_t>(qword >> 32);
    }

    /// The PBA is read-only to software (PCI Local Bus 3.0 6.8.2.10): every write is ignored and
    /// counted as a host error.
    void write_pba(std::uint64_t /*offset*/, unsigned /*width*/, std::uint64_t /*value*/) noexcept
    {
        ++host_errors_;
    }

    /// MSI-X Enable from config space. Enabling sends the pending messages of unmasked vectors
    /// (when the function is not masked).
    void set_enabled(bool enabled) { update_control(enabled, function_mask_); }
    /// Function Mask from config space. Unmasking sends the pending messages of unmasked vectors
    /// (when MSI-X is enabled).
    void set_function_mask(bool masked) { update_control(enabled_, masked); }
    [[nodiscard]] bool enabled() const noexcept { return enabled_; }
    [[nodiscard]] bool function_masked() const noexcept { return function_mask_; }

    /// Message Control as config space reads it: Table Size (vectors - 1), Function Mask, Enable.
    [[nodiscard]] msix_message_control message_control() const noexcept
    {
        return msix_message_control{}
            .with(msix_message_control::table_size, static_cast<std::uint16_t>(vectors_ - 1))
            .with(msix_message_control::function_mask, function_mask_)
            .with(msix_message_control::enable, enabled_);
    }
    /// A config-space write of Message Control: applies Function Mask and MSI-X Enable together
    /// (Table Size is read-only).
    void write_message_control(msix_message_control value)
    {
        update_control(value.get(msix_message_control::enable), value.get(msix_message_control::function_mask));
    }

    /// Requests an interrupt on `vector`. Sends it now (returns true) when MSI-X is enabled and
    /// neither the vector nor the function is masked; sets the vector's Pending bit when MSI-X is
    /// enabled but a mask applies; does nothing when MSI-X is disabled (the function then uses
    /// INTx or MSI, PCI Local Bus 3.0 6.8.2.3). `vector` must be below vectors(): the controller
    /// checks IV when it creates a CQ.
    bool signal(std::uint16_t vector)
    {
        NVMEKIT_ASSERT(vector < vectors_, "msix_table::signal: vector beyond the table");
        if (!enabled_) {
            return false;
        }
        if (function_mask_ || masked(vector)) {
            set_pending(vector);
            return false;
        }
        interrupts_->raise_msix(vector, message(vector));
        return true;
    }

    /// The vector's Pending bit.
    [[nodiscard]] bool pending(std::uint16_t vector) const noexcept
    {
        NVMEKIT_ASSERT(vector < vectors_, "msix_table::pending: vector beyond the table");
        return ((pending_[vector / 64] >> (vector % 64)) & 1U) != 0;
    }
    /// The vector's own Mask bit (the Function Mask is separate: function_masked()).
    [[nodiscard]] bool masked(std::uint16_t vector) const noexcept
    {
        NVMEKIT_ASSERT(vector < vectors_, "msix_table::masked: vector beyond the table");
        return entries_[vector].control.get(msix_vector_control::mask);
    }
    /// The vector's current Message Address and Message Data.
    [[nodiscard]] msix_message message(std::uint16_t vector) const noexcept
    {
        NVMEKIT_ASSERT(vector < vectors_, "msix_table::message: vector beyond the table");
        const auto& entry = entries_[vector];
        return {spec::join_dwords(entry.address_low, entry.address_high), entry.data};
    }

    /// Power-on / Function Level Reset: every entry masked with address and data 0, PBA clear,
    /// Function Mask clear, MSI-X disabled (PCI Local Bus 3.0 6.8.2). A controller reset (CC.EN
    /// 1 to 0) is not a PCI reset and must not call this. host_error_count() is kept.
    void reset() noexcept
    {
        for (auto& entry : entries_) {
            entry = detail::msix_entry{};
        }
        for (auto& qword : pending_) {
            qword = 0;
        }
        function_mask_ = false;
        enabled_ = false;
    }

    /// Table and PBA accesses that broke the access rules, since construction.
    [[nodiscard]] std::uint64_t host_error_count() const noexcept { return host_errors_; }

private:
    static std::uint16_t checked_vectors(std::uint16_t vectors)
    {
        if (vectors == 0 || vectors > max_vectors) {
            throw std::invalid_argument("msix_table: the number of vectors must be 1 to 2048");
        }
        return vectors;
    }

    [[nodiscard]] static std::uint32_t read_dword(const detail::msix_entry& entry, unsigned dword) noexcept
    {
        switch (dword) {
        case 0: return entry.address_low;
        case 1: return entry.address_high;
        case 2: return entry.data;
        default: return entry.control.raw;
        }
    }

    void write_dword(std::uint16_t vector, unsigned dword, std::uint32_t value)
    {
        auto& entry = entries_[vector];
        switch (dword) {
        case 0: entry.address_low = value & ~std::uint32_t{0b11}; break; // bits 01:00 read as 0
        case 1: entry.address_high = value; break;
        case 2: entry.data = value; break;
        default: {
            const bool was_masked = entry.control.get(msix_vector_control::mask);
            const bool mask = msix_vector_control{value}.get(msix_vector_control::mask);
            entry.control = msix_vector_control{}.with(msix_vector_control::mask, mask);
            if (was_masked && !mask) {
                send_if_pending(vector);
            }
            break;
        }
        }
    }

    void set_pending(std::uint16_t vector) noexcept
    {
        pending_[vector / 64] |= std::uint64_t{1} << (vector % 64);
    }

    void send_if_pending(std::uint16_t vector)
    {
        if (!enabled_ || function_mask_ || masked(vector) || !pending(vector)) {
            return;
        }
        pending_[vector / 64] &= ~(std::uint64_t{1} << (vector % 64));
        interrupts_->raise_msix(vector, message(vector));
    }

    void update_control(bool enabled, bool function_mask)
    {
        const bool was_delivering = enabled_ && !function_mask_;
        enabled_ = enabled;
        function_mask_ = function_mask;
        if (was_delivering || !enabled_ || function_mask_) {
            return;
        }
        for (std::size_t word = 0; word < pending_.size(); ++word) {
            std::uint64_t bits = pending_[word];
            while (bits != 0) {
                const auto bit = static_cast<unsigned>(std::countr_zero(bits));
                bits &= bits - 1;
                send_if_pending(static_cast<std::uint16_t>(word * 64 + bit));
            }
        }
    }

    Interrupts* interrupts_;
    std::uint16_t vectors_;
    std::vector<detail::msix_entry> entries_;
    std::vector<std::uint64_t> pending_;
    bool enabled_ = false;
    bool function_mask_ = false;
    mutable std::uint64_t host_errors_ = 0;
};

NVMEKIT_END_NAMESPACE
