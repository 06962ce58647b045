#pragma once
/// The state of one processing context, a poll group or the admin context: the queues it owns,
/// its doorbell channel, fetch buffer and walk scratch, staging buffers, backend requests in
/// flight, counters and interrupt coalescing. Contexts share nothing on the I/O path; the
/// threading model is stated in poll_group.hpp.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <vector>

#include <nvmekit/config.hpp>
#include <nvmekit/data/host_ranges.hpp>
#include <nvmekit/pci/doorbell_channel.hpp>
#include <nvmekit/pci/interrupt_signalling.hpp>
#include <nvmekit/queues/queue_pair.hpp>
#include <nvmekit/runtime/completion_inbox.hpp>
#include <nvmekit/runtime/mailbox.hpp>
#include <nvmekit/runtime/poll_group.hpp>
#include <nvmekit/runtime/poll_group_statistics.hpp>
#include <nvmekit/spec/queue_entries.hpp>
#include <nvmekit/state/error_log.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace detail {

/// A counter one thread writes and any thread reads: a relaxed load and store, no atomic
/// read-modify-write, so counting costs what a plain increment does.
class owned_counter {
public:
    void add(std::uint64_t n) noexcept
    {
        value_.store(value_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
    }
    void subtract(std::uint64_t n) noexcept
    {
        value_.store(value_.load(std::memory_order_relaxed) - n, std::memory_order_relaxed);
    }
    owned_counter& operator++() noexcept
    {
        add(1);
        return *this;
    }
    owned_counter& operator--() noexcept
    {
        subtract(1);
        return *this;
    }
    owned_counter& operator+=(std::uint64_t n) noexcept
    {
        add(n);
        return *this;
    }
    [[nodiscard]] std::uint64_t load() const noexcept { return value_.load(std::memory_order_relaxed); }

private:
    std::atomic<std::uint64_t> value_{0};
};

/// owned_counter of a single_threaded controller, whose counters no other thread reads: a plain
/// integer the optimiser may keep in a register.
class plain_counter {
public:
    void add(std::uint64_t n) noexcept { value_ += n; }
    void subtract(std::uint64_t n) noexcept { value_ -= n; }
    plain_counter& operator++() noexcept
    {
        ++value_;
        return *this;
    }
    plain_counter& operator--() noexcept
    {
        --value_;
        return *this;
    }
    plain_counter& operator+=(std::uint64_t n) noexcept
    {
        value_ += n;
        return *this;
    }
    [[nodiscard]] std::uint64_t load() const noexcept { return value_; }

private:
    std::uint64_t value_ = 0;
};

/// A controller-wide buffer for data staged between host memory and a backend.
struct staging_buffer {
    std::vector<std::byte> bytes;
    std::vector<host_range> range_storage;
    host_range_list ranges{std::span<host_range>{}};
    std::vector<host_range> metadata_range_storage;
    host_range_list metadata_ranges{std::span<host_range>{}};
    staging_buffer* next_free = nullptr;
};

/// The I/O state of one processing context: a poll group, or the admin context (the admin queue).
/// Everything a command touches while it runs lives here (or in its queues), so that contexts
/// share nothing on the I/O path: the queues it owns (QIDs in ascending order) and the doorbell
/// channel their doorbell writes reach, its fetch buffer and walk scratch, its staging buffers
/// and the commands waiting for one, its backend requests in flight and its counters (atomic
/// only when `Concurrent`: then other threads read them).
template <typename Command, bool Concurrent>
struct poll_group_state {
    using counter = std::conditional_t<Concurrent, owned_counter, plain_counter>;
    poll_group_state(std::uint16_t max_qid, std::size_t fetch_batch, std::size_t max_segments,
                     std::uint16_t vectors)
        : doorbells{max_qid}, fetch_buffer(fetch_batch), scratch_ranges(max_segments), interrupts{vectors}
    {
        completion_queues.reserve(max_qid);
        submission_queues.reserve(max_qid);
    }
    doorbell_channel doorbells;
    std::vector<std::uint16_t> completion_queues;
    std::vector<std::uint16_t> submission_queues;
    std::vector<spec::submission_queue_entry> fetch_buffer;
    std::vector<host_range> scratch_ranges;
    std::vector<host_range> scratch_metadata_ranges = std::vector<host_range>(16);
    std::vector<std::unique_ptr<staging_buffer>> staging;
    staging_buffer* free_staging = nullptr;
    waiting_list<Command> waiting_for_staging;
    counter io_outstanding; ///< backend requests of its commands
    /// Concurrent groups: backend completions of its commands that ran on another thread (the
    /// admin context polls the backends), finished by the context at its next poll.
    completion_inbox routed;
    // Hot counters, summed into controller_statistics and the SMART log.
    counter commands;
    counter completions_posted;
    counter completions_held;
    counter staging_waits;
    counter dma_errors;
    counter read_commands;
    counter read_512_units;
    counter write_commands;
    counter written_512_units;
    counter media_errors;
    poll_group_statistics statistics;
    /// Concurrent groups: failed commands' Error Information entries, for the admin context, and
    /// how many did not fit (they still count in the Error Count).
    mailbox<error_record> errors{256};
    counter errors_lost;
    std::uint64_t errors_lost_taken = 0; ///< of errors_lost, those the admin context has counted
    pci::vector_signalling interrupts;
    std::atomic<bool> intx_wanted{false}; ///< a CQ of the group holds entries (pin-based interrupts)
    /// False while the controller is not ready (or this group hit a fatal DMA error): the group
    /// then runs no command. Written by the admin context while the group is paused, and by the
    /// group itself when it fails.
    bool stopped = true;
    // The pause handshake between the admin context and a concurrent group
    // (group_coordination::enter_poll and pause).
    std::atomic<bool> in_poll{false};
    std::atomic<bool> pause_requested{false};
    std::unique_ptr<poll_group_runner<>> runner; ///< the group's thread, after start_poll_groups()
};

} // namespace detail
NVMEKIT_END_NAMESPACE
