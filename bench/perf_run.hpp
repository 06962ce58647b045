#pragma once
// nvmekit-perf's run: the options, the providers and host loop it drives a controller with, and
// its results. Shared by perf.cpp (null and RAM backends, and the program) and perf_file.cpp (the
// file backends), which instantiate it in translation units of their own: a third controller type
// in perf.cpp changes g++'s inlining of the null backend's path, which the instruction counts of
// bench/README.md measure.

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <nvmekit/backends/any_backend.hpp>
#include <nvmekit/backends/file_backend.hpp>
#include <nvmekit/backends/null_backend.hpp>
#include <nvmekit/backends/ram_backend.hpp>
#ifdef NVMEKIT_PERF_HAVE_URING
#include <nvmekit/backends/uring_backend.hpp>
#endif
#include <nvmekit/contracts/clock.hpp>
#include <nvmekit/controller.hpp>
#include <nvmekit/testing/flat_memory.hpp>
#include <nvmekit/testing/host.hpp>
#include <nvmekit/testing/manual_clock.hpp>
#include <nvmekit/transport/mapped_memory.hpp>

namespace nvmekit_perf {

namespace spec = nvmekit::spec;
using steady = std::chrono::steady_clock;

// ---- options ----------------------------------------------------------------------------------

enum class workload { randread, randwrite, randrw, read, write };

struct options {
    std::string backend = "null";
    workload rw = workload::randread;
    std::uint32_t block_size = 4096;
    std::uint32_t queue_depth = 128;
    std::uint16_t queues = 1;
    std::uint64_t size = std::uint64_t{1} << 30;
    double seconds = 3.0;
    unsigned read_percent = 50;
    std::uint64_t count = 0; ///< stop after this many commands (0: run for `seconds`)
    bool json = false;
    std::uint16_t groups = 1;    ///< poll groups the queues are spread over
    bool threads = false;        ///< each group on a thread of its own (else all on this thread)
    bool multi_threaded = false; ///< the controller built with the multi_threaded policy (--threads needs it)
    std::string file = "/var/tmp/nvmekit-perf.img"; ///< --backend file or uring
    bool direct = false;                            ///< the file also opened with O_DIRECT
    bool huge_pages = true; ///< the RAM backend's chunk and the ceiling's buffer on transparent huge pages
    bool non_temporal_writes = true; ///< the RAM backend (and the ceiling) write with non-temporal stores
    std::string transport = "in-process"; ///< or vfio-user, tcp: a server thread over a socket
    bool doorbell_replies = false;        ///< vfio-user: wait for each doorbell's reply (else posted)
    bool server_busy_poll = false;        ///< vfio-user, tcp: the server never waits in poll(2)
    bool mapped_doorbells = false;        ///< vfio-user: doorbells stored into a mapped page (server polls)
    /// A doorbell write per command (SQ tail after each SQE, CQ head after each CQE), as a
    /// driver that does not batch rings them; else one per queue per pass of the loop.
    bool doorbell_per_command = false;
};

// ---- providers ----------------------------------------------------------------------------------

/// Polled queues: the controller never raises an interrupt, this only counts.
struct null_interrupts {
    std::uint64_t raised = 0;
    void raise_msix(std::uint16_t, nvmekit::msix_message) noexcept { ++raised; }
};

/// single_threaded unless --multi-threaded or --threads asks for concurrent groups.
template <typename Backend, typename Threading>
struct perf_traits : nvmekit::default_traits {
    using threading = Threading;
    using dma = nvmekit::transport::mapped_memory;
    using interrupts = null_interrupts;
    using clock = nvmekit::steady_clock;
    using backend = Backend;
    static constexpr nvmekit::limits limits{
        .io_queues = 16, .queue_entries = 1024, .mdts = 5, .msix_vectors = 17};
};

// ---- latency histogram --------------------------------------------------------------------------

/// Log-linear buckets: exact below 128 ns, then 64 sub-buckets per power of two (1.6% wide).
class histogram {
public:
    void add(std::uint64_t value) noexcept
    {
        ++counts_[index(value)];
        ++total_;
        sum_ += value;
    }
    [[nodiscard]] std::uint64_t total() const noexcept { return total_; }
    [[nodiscard]] double mean() const noexcept
    {
        return total_ == 0 ? 0.0 : static_cast<double>(sum_) / total_;
    }
    [[nodiscard]] std::uint64_t percentile(double p) const noexcept
    {
        const auto rank = static_cast<std::uint64_t>(p / 100.0 * static_cast<double>(total_));
        std::uint64_t seen = 0;
        for (std::size_t i = 0; i < counts_.size(); ++i) {
            seen += counts_[i];
            if (seen > rank) {
                return upper(i);
            }
        }
        return upper(counts_.size() - 1);
    }

private:
    static constexpr std::size_t buckets = 128 + 58 * 64;
    [[nodiscard]] static std::size_t index(std::uint64_t value) noexcept
    {
        if (value < 128) {
            return static_cast<std::size_t>(value);
        }
        const unsigned shift = static_cast<unsigned>(std::bit_width(value)) - 7U;
        const auto mantissa = static_cast<std::size_t>(value >> shift) - 64U; // 0..63
        return std::min<std::size_t>(128 + (shift - 1U) * 64U + mantissa, buckets - 1);
    }
    [[nodiscard]] static std::uint64_t upper(std::size_t i) noexcept
    {
        if (i < 128) {
            return i;
        }
        const std::size_t shift = (i - 128) / 64 + 1;
        const std::size_t mantissa = (i - 128) % 64 + 64;
        return ((std::uint64_t{mantissa} + 1U) << shift) - 1U;
    }
    std::array<std::uint64_t, buckets> counts_{};
    std::uint64_t total_ = 0;
    std::uint64_t sum_ = 0;
};

// ---- the run ----------------------------------------------------------------------------------

struct results {
    std::uint64_t commands = 0;
    std::uint64_t errors = 0;
    double seconds = 0;
    double controller_seconds = 0;
    double cpu_seconds = 0;        ///< the process's CPU time (host and every group thread)
    double server_cpu_seconds = 0; ///< --transport vfio-user: the server thread's CPU time; tcp: the target's
    std::uint64_t doorbell_messages = 0; ///< --transport vfio-user: REGION_WRITE messages sent
    histogram latency;
};

/// Seconds on `clock` (a CPU-time clock of clock_gettime).
inline double clock_seconds(clockid_t clock)
{
    timespec now{};
    ::clock_gettime(clock, &now);
    return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

/// CPU time of the whole process, every thread included.
inline double process_cpu_seconds() { return clock_seconds(CLOCK_PROCESS_CPUTIME_ID); }

/// CPU time of the calling thread.
inline double thread_cpu_seconds() { return clock_seconds(CLOCK_THREAD_CPUTIME_ID); }

/// A command slot of one queue: its data buffer and PRP list, and when it was submitted.
struct slot {
    std::uint64_t buffer = 0;
    spec::data_pointer dptr{};
    steady::time_point submitted{};
};

struct queue_state {
    std::uint16_t qid = 0;
    std::uint32_t entries = 0;
    std::uint32_t sq_tail = 0;
    std::uint32_t cq_head = 0;
    bool phase = true;
    std::vector<slot> slots;
    std::vector<std::uint16_t> free_cids;
    std::uint64_t sequential_lba = 0;
};

/// Where the host's memory (queues, data buffers, PRP lists) lies, and how large it is.
constexpr std::uint64_t host_memory_base = 0x1'0000'0000;
inline std::size_t host_memory_bytes(const options& o)
{
    return (std::size_t{64} << 20) + std::size_t{o.queues} * o.queue_depth * (o.block_size + 4096);
}

/// The RAM backend's chunks: as large as the namespace (up to 1 GiB), so one allocation and
/// few TLB misses.
inline std::size_t ram_chunk_size(std::uint64_t size)
{
    const std::size_t chunk = std::min<std::size_t>(std::bit_ceil(size), std::size_t{1} << 30);
    return std::max<std::size_t>(chunk, 512);
}

/// Entries of each I/O queue: a power of two with room for the queue depth.
inline std::uint32_t queue_entries(const options& o)
{
    return std::min<std::uint32_t>(1024, std::bit_ceil(o.queue_depth + 1));
}

/// The workload's next command on a queue: read or write, and its first LBA, one of `io_slots`
/// slots of `blocks_per_io` blocks; a sequential workload takes slot `sequential_slot` and
/// moves it on.
inline std::pair<spec::nvm_opcode, std::uint64_t> next_command(const options& o, std::mt19937_64& random,
                                                               std::uint64_t io_slots,
                                                               std::uint32_t blocks_per_io,
                                                               std::uint64_t& sequential_slot)
{
    bool read = true;
    switch (o.rw) {
    case workload::randread:
    case workload::read: read = true; break;
    case workload::randwrite:
    case workload::write: read = false; break;
    case workload::randrw: read = (random() % 100) < o.read_percent; break;
    }
    std::uint64_t slot_index = 0;
    if (o.rw == workload::read || o.rw == workload::write) {
        slot_index = sequential_slot;
        sequential_slot = (sequential_slot + 1) % io_slots;
    } else {
        slot_index = random() % io_slots;
    }
    return {read ? spec::nvm_opcode::read : spec::nvm_opcode::write, slot_index * blocks_per_io};
}

/// The host's side of a run: `o.queues` I/O queue pairs of `entries` entries that `host` has
/// brought up (CAP.DSTRD `dstrd`), their data buffers in `memory`, kept `o.queue_depth` commands deep until
/// the run ends; completions are found by their phase tag. `ring(offset, value)` writes a doorbell register,
/// `poll(round)` runs the controller wherever it runs on this thread (its time is the controller's). Returns
/// the results with `cpu_seconds` the process's.
template <typename Host, typename Ring, typename Poll>
results drive(const options& o, nvmekit::testing::flat_memory& memory, Host& host, std::uint64_t blocks,
              std::uint32_t lba_bytes, std::uint32_t entries, unsigned dstrd, Ring&& ring, Poll&& poll)
{
    const std::uint32_t blocks_per_io = o.block_size / lba_bytes;
    const std::uint64_t io_slots = blocks / blocks_per_io;

    std::vector<queue_state> queues(o.queues);
    for (std::uint16_t q = 0; q < o.queues; ++q) {
        auto& state = queues[q];
        state.qid = static_cast<std::uint16_t>(q + 1);
        state.entries = entries;
        state.slots.resize(o.queue_depth);
        for (std::uint16_t cid = 0; cid < o.queue_depth; ++cid) {
            auto& s = state.slots[cid];
            s.buffer = host.allocate(o.block_size, 4096);
            s.dptr = host.build_prps(s.buffer, o.block_size);
            state.free_cids.push_back(static_cast<std::uint16_t>(o.queue_depth - 1 - cid));
        }
        state.sequential_lba = (io_slots / o.queues) * q;
    }

    std::mt19937_64 random{42};
    const auto next_op = [&](queue_state& state) {
        return next_command(o, random, io_slots, blocks_per_io, state.sequential_lba);
    };

    results r;
    const auto start = steady::now();
    const auto deadline = start + std::chrono::duration<double>(o.seconds);
    auto next_progress = start + std::chrono::seconds{1};
    std::chrono::nanoseconds controller_time{0};
    const double cpu_start = process_cpu_seconds();
    std::uint64_t rounds = 0;
    while (true) {
        const auto now = steady::now();
        const bool draining =
            o.count != 0 ? r.commands + o.queues * std::uint64_t{o.queue_depth} >= o.count : now >= deadline;
        if (!draining) {
            for (auto& state : queues) {
                bool submitted = false;
                while (!state.free_cids.empty()) {
                    const std::uint16_t cid = state.free_cids.back();
                    state.free_cids.pop_back();
                    auto& s = state.slots[cid];
                    const auto [opcode, slba] = next_op(state);
                    spec::submission_queue_entry sqe{};
                    sqe.cdw0.set(spec::command_dword0::opc, static_cast<std::uint8_t>(opcode));
                    sqe.cdw0.set(spec::command_dword0::cid, cid);
                    sqe.nsid = 1;
                    sqe.dptr = s.dptr;
                    sqe.cdw10 = static_cast<std::uint32_t>(slba);
                    sqe.cdw11 = static_cast<std::uint32_t>(slba >> 32);
                    sqe.cdw12 = blocks_per_io - 1U;
                    const auto entry =
                        memory.map(host.submission_entry_address(state.qid, state.sq_tail), sizeof sqe);
                    std::memcpy(entry.data(), &sqe, sizeof sqe);
                    state.sq_tail = (state.sq_tail + 1) % state.entries;
                    s.submitted = now;
                    submitted = true;
                    if (o.doorbell_per_command) {
                        ring(spec::sq_tail_doorbell_offset(state.qid, dstrd), state.sq_tail);
                        submitted = false;
                    }
                }
                if (submitted) {
                    ring(spec::sq_tail_doorbell_offset(state.qid, dstrd), state.sq_tail);
                }
            }
        }
        const auto poll_start = steady::now();
        poll(rounds);
        const auto poll_end = steady::now();
        controller_time += poll_end - poll_start;
        ++rounds;
        std::size_t outstanding = 0;
        for (auto& state : queues) {
            bool reaped = false;
            while (true) {
                spec::completion_queue_entry cqe{};
                const auto entry =
                    memory.map(host.completion_entry_address(state.qid, state.cq_head), sizeof cqe);
                // Dword 3 (CID, status, phase) in one load, as a driver reads what the device
                // wrote: with --threads a group may be writing this entry now.
                const std::uint32_t dword3 =
                    std::atomic_ref{*reinterpret_cast<std::uint32_t*>(entry.data() + 12)}.load(
                        std::memory_order_acquire);
                std::memcpy(&cqe, entry.data(), 12);
                std::memcpy(reinterpret_cast<std::byte*>(&cqe) + 12, &dword3, sizeof dword3);
                if (cqe.phase() != state.phase) {
                    break;
                }
                const std::uint16_t cid = cqe.cid;
                if (cid >= state.slots.size()) {
                    throw std::runtime_error("completion with an unknown command identifier");
                }
                if (!cqe.status().is_success()) {
                    ++r.errors;
                }
                const auto latency = std::chrono::duration_cast<std::chrono::nanoseconds>(
                    poll_end - state.slots[cid].submitted);
                r.latency.add(static_cast<std::uint64_t>(latency.count()));
                state.free_cids.push_back(cid);
                ++r.commands;
                state.cq_head = (state.cq_head + 1) % state.entries;
                if (state.cq_head == 0) {
                    state.phase = !state.phase;
                }
                reaped = true;
                if (o.doorbell_per_command) {
                    ring(spec::cq_head_doorbell_offset(state.qid, dstrd), state.cq_head);
                    reaped = false;
                }
            }
            if (reaped) {
                ring(spec::cq_head_doorbell_offset(state.qid, dstrd), state.cq_head);
            }
            outstanding += o.queue_depth - state.free_cids.size();
        }
        if (draining && outstanding == 0) {
            break;
        }
        if (!o.json && poll_end >= next_progress) {
            const double elapsed = std::chrono::duration<double>(poll_end - start).count();
            fmt::print(stderr, "\r[{:5.1f} s] {:>10} cmds  {:>9.0f} IOPS  {:>8.1f} MiB/s", elapsed,
                       r.commands, static_cast<double>(r.commands) / elapsed,
                       static_cast<double>(r.commands) * o.block_size / elapsed / double(1 << 20));
            next_progress += std::chrono::seconds{1};
        }
        if (rounds > 100'000'000'000ULL) {
            break;
        }
    }
    r.seconds = std::chrono::duration<double>(steady::now() - start).count();
    r.controller_seconds = std::chrono::duration<double>(controller_time).count();
    r.cpu_seconds = process_cpu_seconds() - cpu_start;
    if (!o.json) {
        fmt::print(stderr, "\n");
    }
    return r;
}

template <typename Threading, typename Backend>
results run_with(const options& o, Backend backend, std::uint32_t lba_bytes)
{
    using controller_type = nvmekit::controller<perf_traits<Backend, Threading>>;
    // The host allocates its queues and buffers in one range of memory; the controller reaches
    // all of it through one mapping, as a vfio-user client's DMA_MAP of guest RAM gives it.
    nvmekit::testing::flat_memory memory;
    const std::span<std::byte> host_range = memory.add_range(host_memory_base, host_memory_bytes(o));
    nvmekit::transport::mapped_memory guest;
    guest.add(host_memory_base, host_range.data(), host_range.size(), true);
    null_interrupts interrupts;
    nvmekit::steady_clock clock;
    nvmekit::testing::manual_clock host_clock;
    nvmekit::subsystem<Backend> subsystem{{.nqn = "nqn.2026-11.io.nvmekit:perf"}};
    subsystem.add_namespace(std::move(backend),
                            {.lba_format = static_cast<std::uint8_t>(lba_bytes == 512 ? 0 : 2)});
    controller_type ctrl{
        guest, interrupts, clock, subsystem, {.poll_groups = o.groups, .concurrent_poll_groups = o.threads}};
    nvmekit::testing::in_process_host host{ctrl, memory, host_clock};
    const std::uint32_t entries = queue_entries(o);
    host.bring_up({.io_queue_pairs = o.queues, .io_entries = entries, .interrupts = false});
    if constexpr (Threading::concurrent_groups) {
        if (o.threads) {
            ctrl.start_poll_groups({.name = "perf-group", .busy_poll = true});
        }
    }

    const unsigned dstrd = ctrl.registers().cap().get(spec::cap_register::dstrd);
    results r = drive(
        o, memory, host, ctrl.attached_namespace(1)->block_count(), lba_bytes, entries, dstrd,
        [&](std::uint64_t offset, std::uint32_t value) { ctrl.mmio_write(offset, 4, value); },
        [&](std::uint64_t round) {
            if (!o.threads || round % 1024 == 0 || o.backend == "uring") {
                // With --threads, only the admin context: the groups poll on their threads. It
                // also polls the backends, which an asynchronous one needs to complete anything.
                ctrl.poll();
            }
        });
    if (ctrl.requests_in_use() != 0) {
        throw std::runtime_error("requests still in use after the run");
    }
    ctrl.stop_poll_groups();
    return r;
}

/// The run, with the controller's threading policy chosen by the options.
template <typename Backend>
results run(const options& o, Backend backend, std::uint32_t lba_bytes)
{
    if (o.multi_threaded) {
        return run_with<nvmekit::multi_threaded>(o, std::move(backend), lba_bytes);
    }
    return run_with<nvmekit::single_threaded>(o, std::move(backend), lba_bytes);
}

/// The run on --backend file or uring (perf_file.cpp).
results run_file_backend(const options& o, std::uint32_t lba_bytes);

/// The run with --transport vfio-user (perf_vfio_user.cpp).
results run_vfio_user(const options& o, std::uint32_t lba_bytes);

/// The run with --transport tcp (perf_tcp.cpp).
results run_tcp(const options& o, std::uint32_t lba_bytes);

} // namespace nvmekit_perf
