#pragma once
/// The doorbell registers' view of the queues, a part of the PCIe function (Base 2.0 3.1.4.21,
/// 3.1.4.22, 5.2): per doorbell, the entries of the queue it rings (0: no such queue) and the poll
/// group that queue belongs to, so that the host-facing side checks a write and hands it to the
/// right group without touching the queues themselves; and the invalid writes counted there until
/// the admin context takes them.
///
///     pci::doorbell_table table{io_queues};
///     table.set_group(3, true, 1);   // CQ 3 runs in group 1 ...
///     table.publish(3, true, 256);   // ... and its doorbell is live from now on
///     switch (table.check(3, true, head)) { ... }   // on the host-facing side
///
/// Doorbells are indexed as in BAR0: SQ y tail at 2y, CQ y head at 2y + 1. A queue's group is
/// stored before its doorbell is published (release), and the host-facing side reads the entries
/// (acquire) before the group, so a write accepted for a queue finds the queue's group. Safe to
/// use from the host-facing thread and every context at once.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include <nvmekit/config.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace pci {

class doorbell_table {
public:
    /// What a doorbell write is.
    enum class write_check : std::uint8_t {
        valid,       ///< a value within the queue
        no_queue,    ///< no queue behind the register: an invalid doorbell register write
        beyond_queue ///< a value not below the queue's entries: an invalid doorbell write value
    };

    /// Doorbells of QIDs 0 to `max_qid`, none live, every queue in group 0.
    explicit doorbell_table(std::uint16_t max_qid)
        : max_qid_{max_qid}
        , entries_{std::make_unique<std::atomic<std::uint32_t>[]>(slots())}
        , groups_{std::make_unique<std::atomic<std::uint16_t>[]>(slots())}
    {
        for (std::size_t i = 0; i < slots(); ++i) {
            entries_[i].store(0, std::memory_order_relaxed);
            groups_[i].store(0, std::memory_order_relaxed);
        }
    }

    /// The host wrote `value` to queue `qid`'s doorbell: whether the write is valid. An invalid
    /// one is counted for take_invalid_registers() / take_invalid_values().
    [[nodiscard]] write_check check(std::uint16_t qid, bool completion_queue, std::uint32_t value) noexcept
    {
        const std::uint32_t entries =
            qid <= max_qid_ ? entries_[index(qid, completion_queue)].load(std::memory_order_acquire) : 0U;
        if (entries == 0) {
            count_invalid_register();
            return write_check::no_queue;
        }
        if (value >= entries) {
            count_invalid_value();
            return write_check::beyond_queue;
        }
        return write_check::valid;
    }

    /// Makes queue `qid`'s doorbell live for a queue of `entries` entries (0: no queue any more).
    void publish(std::uint16_t qid, bool completion_queue, std::uint32_t entries) noexcept
    {
        entries_[index(qid, completion_queue)].store(entries, std::memory_order_release);
    }
    /// No doorbell is live.
    void clear() noexcept
    {
        for (std::size_t i = 0; i < slots(); ++i) {
            entries_[i].store(0, std::memory_order_release);
        }
    }

    /// The poll group of queue `qid`; set before the queue's doorbell is published.
    void set_group(std::uint16_t qid, bool completion_queue, std::uint16_t group) noexcept
    {
        groups_[index(qid, completion_queue)].store(group, std::memory_order_relaxed);
    }
    [[nodiscard]] std::uint16_t group(std::uint16_t qid, bool completion_queue) const noexcept
    {
        return groups_[index(qid, completion_queue)].load(std::memory_order_acquire);
    }

    /// Invalid writes found elsewhere (by a concurrent group, in a shadow doorbell).
    void count_invalid_register() noexcept { invalid_registers_.fetch_add(1, std::memory_order_relaxed); }
    void count_invalid_value() noexcept { invalid_values_.fetch_add(1, std::memory_order_relaxed); }
    /// The invalid writes counted since the last take, and the count restarts.
    [[nodiscard]] std::uint32_t take_invalid_registers() noexcept
    {
        return invalid_registers_.exchange(0, std::memory_order_relaxed);
    }
    [[nodiscard]] std::uint32_t take_invalid_values() noexcept
    {
        return invalid_values_.exchange(0, std::memory_order_relaxed);
    }

private:
    [[nodiscard]] static constexpr std::size_t index(std::uint16_t qid, bool completion_queue) noexcept
    {
        return 2U * std::size_t{qid} + (completion_queue ? 1U : 0U);
    }
    [[nodiscard]] std::size_t slots() const noexcept { return 2U * (std::size_t{max_qid_} + 1U); }

    std::uint16_t max_qid_;
    std::unique_ptr<std::atomic<std::uint32_t>[]> entries_; ///< 0: no queue
    std::unique_ptr<std::atomic<std::uint16_t>[]> groups_;
    std::atomic<std::uint32_t> invalid_registers_{0};
    std::atomic<std::uint32_t> invalid_values_{0};
};

} // namespace pci
NVMEKIT_END_NAMESPACE
