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
/// Threading: `signal` may run on any number of threads (the poll groups that own the vectors'
/// completion queues) while table, PBA and config-space accesses run on one other thread (the
/// transport's), without locks. A Pending bit set while a mask applies is delivered exactly once
/// by whichever side sees the mask lifted: the signaller sets the bit and then re-reads the
/// masks, the unmasker clears the mask and then takes the bit (both sequentially consistent, so
/// at least one of them sees the other's store; the fetch-and-clear makes it one). The
/// InterruptProvider may then be called from both sides. reset() is not concurrent with anything.
/// A host that rewrites an unmasked entry while it fires may see either message (as on hardware).

#include <array>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>

#include <nvmekit/config.hpp>
#include <nvmekit/contracts/interrupts.hpp>
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
    // Table Size: bits 10:00 (0's based), read-only
    static constexpr field<0, 11, std::uint16_t> table_size{};
    static constexpr field<14, 1, bool> function_mask{}; // Function Mask: bit 14
    static constexpr field<15, 1, bool> enable{};        // MSI-X Enable: bit 15
};

namespace detail {
/// One MSI-X table entry as the host sees it (PCI Local Bus 3.0 Figure 6-11): dword 0 Message
/// Address, dword 1 Message Upper Address, dword 2 Message Data, dword 3 Vector Control.
struct msix_entry {
    static constexpr std::uint32_t reset_control = 1; // Mask set
    std::array<std::atomic<std::uint32_t>, 4> dwords{0U, 0U, 0U, reset_control};
};

/// True for an aligned 4- or 8-byte access lying wholly within `size` bytes (PCI Local Bus 3.0
/// 6.8.2: the table and PBA take aligned full DWORD or QWORD accesses only).
[[nodiscard]] constexpr bool msix_access_valid(std::uint64_t offset, unsigned width,
                                               std::uint64_t size) noexcept
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
        : interrupts_{&interrupts}
        , vectors_{checked_vectors(vectors)}
        , entries_{std::make_unique<detail::msix_entry[]>(vectors)}
        , pending_words_{static_cast<std::size_t>(pba_bytes(vectors) / 8)}
        , pending_{std::make_unique<std::atomic<std::uint64_t>[]>(pending_words_)}
    {
        for (std::size_t word = 0; word < pending_words_; ++word) {
            pending_[word].store(0, std::memory_order_relaxed);
        }
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
            count_host_error();
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
            count_host_error();
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
            count_host_error();
            return 0;
        }
        const std::uint64_t qword = pending_[offset / 8].load(std::memory_order_relaxed);
        if (width == 8) {
            return qword;
        }
        return offset % 8 == 0 ? static_cast<std::uint32_t>(qword) : static_cast<std::uint32_t>(qword >> 32);
    }

    /// The PBA is read-only to software (PCI Local Bus 3.0 6.8.2.10): every write is ignored and
    /// counted as a host error.
    void write_pba(std::uint64_t /*offset*/, unsigned /*width*/, std::uint64_t /*value*/) noexcept
    {
        count_host_error();
    }

    /// MSI-X Enable from config space. Enabling sends the pending messages of unmasked vectors
    /// (when the function is not masked).
    void set_enabled(bool enabled) { update_control(enabled, function_masked()); }
    /// Function Mask from config space. Unmasking sends the pending messages of unmasked vectors
    /// (when MSI-X is enabled).
    void set_function_mask(bool masked) { update_control(enabled(), masked); }
    [[nodiscard]] bool enabled() const noexcept { return enabled_.load(std::memory_order_seq_cst); }
    [[nodiscard]] bool function_masked() const noexcept
    {
        return function_mask_.load(std::memory_order_seq_cst);
    }

    /// Message Control as config space reads it: Table Size (vectors - 1), Function Mask, Enable.
    [[nodiscard]] msix_message_control message_control() const noexcept
    {
        return msix_message_control{}
            .with(msix_message_control::table_size, static_cast<std::uint16_t>(vectors_ - 1))
            .with(msix_message_control::function_mask, function_masked())
            .with(msix_message_control::enable, enabled());
    }
    /// A config-space write of Message Control: applies Function Mask and MSI-X Enable together
    /// (Table Size is read-only).
    void write_message_control(msix_message_control value)
    {
        update_control(value.get(msix_message_control::enable),
                       value.get(msix_message_control::function_mask));
    }

    /// Requests an interrupt on `vector`. Sends it now (returns true) when MSI-X is enabled and
    /// neither the vector nor the function is masked; sets the vector's Pending bit when MSI-X is
    /// enabled but a mask applies; does nothing when MSI-X is disabled (the function then uses
    /// INTx or MSI, PCI Local Bus 3.0 6.8.2.3). `vector` must be below vectors(): the controller
    /// checks IV when it creates a CQ.
    bool signal(std::uint16_t vector)
    {
        NVMEKIT_ASSERT(vector < vectors_, "msix_table::signal: vector beyond the table");
        if (!enabled()) {
            return false;
        }
        if (function_masked() || masked(vector)) {
            set_pending(vector);
            // The mask may have been lifted after the unmasker looked for this bit: deliver it
            // here then (see Threading above).
            send_if_pending(vector);
            return false;
        }
        interrupts_->raise_msix(vector, message(vector));
        return true;
    }

    /// The vector's Pending bit.
    [[nodiscard]] bool pending(std::uint16_t vector) const noexcept
    {
        NVMEKIT_ASSERT(vector < vectors_, "msix_table::pending: vector beyond the table");
        return ((pending_[vector / 64].load(std::memory_order_relaxed) >> (vector % 64)) & 1U) != 0;
    }
    /// The vector's own Mask bit (the Function Mask is separate: function_masked()).
    [[nodiscard]] bool masked(std::uint16_t vector) const noexcept
    {
        NVMEKIT_ASSERT(vector < vectors_, "msix_table::masked: vector beyond the table");
        return msix_vector_control{entries_[vector].dwords[3].load(std::memory_order_seq_cst)}.get(
            msix_vector_control::mask);
    }
    /// The vector's current Message Address and Message Data.
    [[nodiscard]] msix_message message(std::uint16_t vector) const noexcept
    {
        NVMEKIT_ASSERT(vector < vectors_, "msix_table::message: vector beyond the table");
        const auto& entry = entries_[vector];
        return {spec::join_dwords(read_dword(entry, 0), read_dword(entry, 1)), read_dword(entry, 2)};
    }

    /// Power-on / Function Level Reset: every entry masked with address and data 0, PBA clear,
    /// Function Mask clear, MSI-X disabled (PCI Local Bus 3.0 6.8.2). A controller reset (CC.EN
    /// 1 to 0) is not a PCI reset and must not call this. host_error_count() is kept.
    void reset() noexcept
    {
        for (std::uint16_t vector = 0; vector < vectors_; ++vector) {
            auto& dwords = entries_[vector].dwords;
            for (std::size_t dword = 0; dword < dwords.size(); ++dword) {
                dwords[dword].store(dword == 3 ? detail::msix_entry::reset_control : 0U,
                                    std::memory_order_relaxed);
            }
        }
        for (std::size_t word = 0; word < pending_words_; ++word) {
            pending_[word].store(0, std::memory_order_relaxed);
        }
        function_mask_.store(false);
        enabled_.store(false);
    }

    /// Table and PBA accesses that broke the access rules, since construction.
    [[nodiscard]] std::uint64_t host_error_count() const noexcept
    {
        return host_errors_.load(std::memory_order_relaxed);
    }

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
        return entry.dwords[dword].load(dword == 3 ? std::memory_order_seq_cst : std::memory_order_relaxed);
    }

    void count_host_error() const noexcept { host_errors_.fetch_add(1, std::memory_order_relaxed); }

    void write_dword(std::uint16_t vector, unsigned dword, std::uint32_t value)
    {
        auto& entry = entries_[vector];
        switch (dword) {
        // bits 01:00 read as 0
        case 0: entry.dwords[0].store(value & ~std::uint32_t{0b11}, std::memory_order_relaxed); break;
        case 1:
        case 2: entry.dwords[dword].store(value, std::memory_order_relaxed); break;
        default: {
            const bool mask = msix_vector_control{value}.get(msix_vector_control::mask);
            const std::uint32_t control = msix_vector_control{}.with(msix_vector_control::mask, mask).raw;
            const bool was_masked =
                msix_vector_control{entry.dwords[3].exchange(control, std::memory_order_seq_cst)}.get(
                    msix_vector_control::mask);
            if (was_masked && !mask) {
                send_if_pending(vector);
            }
            break;
        }
        }
    }

    void set_pending(std::uint16_t vector) noexcept
    {
        pending_[vector / 64].fetch_or(std::uint64_t{1} << (vector % 64), std::memory_order_seq_cst);
    }

    /// Sends the vector's pending message when nothing masks it any more; the fetch-and-clear
    /// makes one caller the sender when the signaller and the unmasker race.
    void send_if_pending(std::uint16_t vector)
    {
        if (!enabled() || function_masked() || masked(vector) || !pending(vector)) {
            return;
        }
        const std::uint64_t bit = std::uint64_t{1} << (vector % 64);
        if ((pending_[vector / 64].fetch_and(~bit, std::memory_order_seq_cst) & bit) != 0) {
            interrupts_->raise_msix(vector, message(vector));
        }
    }

    void update_control(bool enabled, bool function_mask)
    {
        const bool was_delivering = this->enabled() && !function_masked();
        enabled_.store(enabled);
        function_mask_.store(function_mask);
        if (was_delivering || !enabled || function_mask) {
            return;
        }
        for (std::size_t word = 0; word < pending_words_; ++word) {
            std::uint64_t bits = pending_[word].load(std::memory_order_seq_cst);
            while (bits != 0) {
                const auto bit = static_cast<unsigned>(std::countr_zero(bits));
                bits &= bits - 1;
                send_if_pending(static_cast<std::uint16_t>(word * 64 + bit));
            }
        }
    }

    Interrupts* interrupts_;
    std::uint16_t vectors_;
    std::unique_ptr<detail::msix_entry[]> entries_;
    std::size_t pending_words_;
    std::unique_ptr<std::atomic<std::uint64_t>[]> pending_;
    std::atomic<bool> enabled_{false};
    std::atomic<bool> function_mask_{false};
    mutable std::atomic<std::uint64_t> host_errors_{0};
};

NVMEKIT_END_NAMESPACE
