// nvmekit-perf: an in-process host driving an nvmekit controller as fast as it can, in the style
// of spdk_nvme_perf and fio.
//
//     nvmekit-perf [--backend null|ram|file|uring] [--rw randread|randwrite|randrw|read|write]
//                  [--bs 4096] [--qd 128] [--queues 1] [--size 1G] [--time 3] [--mix 50] [--count N]
//                  [--file PATH] [--direct] [--json]
//
// One thread runs both sides: the host writes SQEs straight into queue memory and rings doorbells,
// the controller runs inside poll(), and the host reaps CQEs by their phase tag. Time spent inside
// poll() is the controller's; the rest of the loop is the host's. The run first measures the
// machine's own ceiling, single-core memcpy bandwidth at the chosen block size, and reports the
// data rate as a fraction of it.
//
// --backend file (file_backend: pread/pwrite inside the command) and --backend uring
// (uring_backend: io_uring, completing in poll(); built when liburing is found) run on the file
// --file names (/var/tmp/nvmekit-perf.img by default), created at --size and filled with data
// first unless it already is, so that reads do not read holes; --direct opens it with O_DIRECT
// too (the host's buffers are 4 KiB aligned, so 4 KiB requests go direct).

#include "command_line.hpp"

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
#include <nvmekit/clock.hpp>
#include <nvmekit/controller.hpp>
#include <nvmekit/testing/flat_memory.hpp>
#include <nvmekit/testing/host.hpp>
#include <nvmekit/testing/manual_clock.hpp>
#include <nvmekit/transport/mapped_memory.hpp>

namespace {

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
};

constexpr nvmekit_programs::program perf_program{
    "nvmekit-perf",
    "nvmekit-perf [--backend null|ram|file|uring] [--rw randread|randwrite|randrw|read|write]\n"
    "                    [--bs BYTES] [--qd N] [--queues N] [--size BYTES[K|M|G]] [--time SECONDS]\n"
    "                    [--mix READ_PERCENT] [--count COMMANDS] [--groups N] [--threads] [--json]\n"
    "                    [--file PATH] [--direct] [--multi-threaded] [--help] [--version]\n"};

[[noreturn]] void usage(const std::string& problem) { nvmekit_programs::bad_usage(perf_program, problem); }

std::uint64_t parse_size(std::string_view text)
{
    std::uint64_t value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc{} || value == 0) {
        usage(fmt::format("not a size: {}", text));
    }
    const std::string_view suffix{end, static_cast<std::size_t>(text.data() + text.size() - end)};
    if (suffix.empty()) {
        return value;
    }
    if (suffix == "K" || suffix == "k") {
        return value << 10;
    }
    if (suffix == "M" || suffix == "m") {
        return value << 20;
    }
    if (suffix == "G" || suffix == "g") {
        return value << 30;
    }
    usage(fmt::format("not a size: {}", text));
}

options parse(int argc, char** argv)
{
    options o;
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        const auto value = [&]() -> std::string_view {
            if (i + 1 >= argc) {
                usage(fmt::format("{} needs a value", arg));
            }
            return argv[++i];
        };
        if (arg == "--backend") {
            o.backend = value();
            if (o.backend != "null" && o.backend != "ram" && o.backend != "file" && o.backend != "uring") {
                usage("--backend is null, ram, file or uring");
            }
#ifndef NVMEKIT_PERF_HAVE_URING
            if (o.backend == "uring") {
                usage("--backend uring: this nvmekit-perf was built without liburing");
            }
#endif
        } else if (arg == "--file") {
            o.file = value();
        } else if (arg == "--direct") {
            o.direct = true;
        } else if (arg == "--rw") {
            const auto rw = value();
            if (rw == "randread") {
                o.rw = workload::randread;
            } else if (rw == "randwrite") {
                o.rw = workload::randwrite;
            } else if (rw == "randrw") {
                o.rw = workload::randrw;
            } else if (rw == "read") {
                o.rw = workload::read;
            } else if (rw == "write") {
                o.rw = workload::write;
            } else {
                usage("--rw is randread, randwrite, randrw, read or write");
            }
        } else if (arg == "--bs") {
            o.block_size = static_cast<std::uint32_t>(parse_size(value()));
        } else if (arg == "--qd") {
            o.queue_depth = static_cast<std::uint32_t>(parse_size(value()));
        } else if (arg == "--queues") {
            o.queues = static_cast<std::uint16_t>(parse_size(value()));
        } else if (arg == "--size") {
            o.size = parse_size(value());
        } else if (arg == "--time") {
            o.seconds = std::stod(std::string{value()});
        } else if (arg == "--mix") {
            o.read_percent = static_cast<unsigned>(std::stoul(std::string{value()}));
        } else if (arg == "--threads") {
            o.threads = true;
            o.multi_threaded = true;
        } else if (arg == "--multi-threaded") {
            o.multi_threaded = true;
        } else if (arg == "--groups") {
            o.groups = static_cast<std::uint16_t>(parse_size(value()));
            if (o.groups == 0 || o.groups > 16) {
                usage("--groups: 1 to 16");
            }
        } else if (arg == "--count") {
            o.count = parse_size(value());
        } else if (arg == "--json") {
            o.json = true;
        } else if (!nvmekit_programs::standard_option(perf_program, arg)) {
            usage(fmt::format("unknown option {}", arg));
        }
    }
    if (o.block_size < 512 || o.block_size % 512 != 0 || o.block_size > (std::uint32_t{4096} << 5)) {
        usage("--bs is a multiple of 512 up to 128 KiB (MDTS)");
    }
    if (o.queue_depth < 1 || o.queue_depth > 1023) {
        usage("--qd is 1 to 1023");
    }
    if (o.queues < 1 || o.queues > 16) {
        usage("--queues is 1 to 16");
    }
    if (o.size < o.block_size) {
        usage("--size is at least one block");
    }
    return o;
}

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

// ---- the machine's ceiling --------------------------------------------------------------------

/// Single-core memcpy bandwidth at `block` bytes per copy between random block-aligned places of
/// a `region`-byte buffer (the namespace's size, as the backend sees it) and a small ring of host
/// buffers, in the direction of the workload: reads copy out of the region, writes into it, and
/// a mix does both in the workload's proportion. Measured for about `seconds`.
double memcpy_ceiling_gib_per_s(std::uint64_t region, std::uint32_t block, unsigned read_percent,
                                double seconds)
{
    region = std::max<std::uint64_t>(std::min<std::uint64_t>(region, std::uint64_t{1} << 30), block);
    std::vector<std::byte> backing(region, std::byte{0x5a});
    std::vector<std::byte> ring(std::size_t{block} * 128, std::byte{0xa5});
    const std::uint64_t blocks = region / block;
    std::mt19937_64 random{7};
    std::uint64_t copied = 0;
    const auto start = steady::now();
    const auto deadline = start + std::chrono::duration<double>(seconds);
    std::size_t slot = 0;
    while (steady::now() < deadline) {
        for (int i = 0; i < 256; ++i) {
            std::byte* far = backing.data() + (random() % blocks) * block;
            std::byte* near = ring.data() + slot * block;
            if (random() % 100 < read_percent) {
                std::memcpy(near, far, block);
            } else {
                std::memcpy(far, near, block);
            }
            slot = (slot + 1) % 128;
            copied += block;
        }
    }
    const double elapsed = std::chrono::duration<double>(steady::now() - start).count();
    volatile std::byte sink = ring[0];
    static_cast<void>(sink);
    return static_cast<double>(copied) / elapsed / double(1ULL << 30);
}

// ---- the run ----------------------------------------------------------------------------------

struct results {
    std::uint64_t commands = 0;
    std::uint64_t errors = 0;
    double seconds = 0;
    double controller_seconds = 0;
    double cpu_seconds = 0; ///< the process's CPU time (host and every group thread)
    histogram latency;
};

/// CPU time of the whole process, every thread included.
double process_cpu_seconds()
{
    timespec now{};
    ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
    return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

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

template <typename Threading, typename Backend>
results run_with(const options& o, Backend backend, std::uint32_t lba_bytes)
{
    using controller_type = nvmekit::controller<perf_traits<Backend, Threading>>;
    // The host allocates its queues and buffers in one range of memory; the controller reaches
    // all of it through one mapping, as a vfio-user client's DMA_MAP of guest RAM gives it.
    nvmekit::testing::flat_memory memory;
    constexpr std::uint64_t memory_base = 0x1'0000'0000;
    const std::size_t memory_bytes =
        (std::size_t{64} << 20) + std::size_t{o.queues} * o.queue_depth * (o.block_size + 4096);
    const std::span<std::byte> host_range = memory.add_range(memory_base, memory_bytes);
    nvmekit::transport::mapped_memory guest;
    guest.add(memory_base, host_range.data(), host_range.size(), true);
    null_interrupts interrupts;
    nvmekit::steady_clock clock;
    nvmekit::testing::manual_clock host_clock;
    nvmekit::subsystem<Backend> subsystem{{.nqn = "nqn.2026-11.io.nvmekit:perf"}};
    subsystem.add_namespace(std::move(backend),
                            {.lba_format = static_cast<std::uint8_t>(lba_bytes == 512 ? 0 : 2)});
    controller_type ctrl{
        guest, interrupts, clock, subsystem, {.poll_groups = o.groups, .concurrent_poll_groups = o.threads}};
    nvmekit::testing::in_process_host host{ctrl, memory, host_clock};
    const std::uint32_t entries = std::min<std::uint32_t>(1024, std::bit_ceil(o.queue_depth + 1));
    host.bring_up({.io_queue_pairs = o.queues, .io_entries = entries, .interrupts = false});
    if constexpr (Threading::concurrent_groups) {
        if (o.threads) {
            ctrl.start_poll_groups({.name = "perf-group", .busy_poll = true});
        }
    }

    const std::uint64_t blocks = ctrl.attached_namespace(1)->block_count();
    const std::uint32_t blocks_per_io = o.block_size / lba_bytes;
    const std::uint64_t io_slots = blocks / blocks_per_io;
    const unsigned dstrd = ctrl.registers().cap().get(spec::cap_register::dstrd);

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
    const auto next_op = [&](queue_state& state) -> std::pair<spec::nvm_opcode, std::uint64_t> {
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
            slot_index = state.sequential_lba;
            state.sequential_lba = (state.sequential_lba + 1) % io_slots;
        } else {
            slot_index = random() % io_slots;
        }
        return {read ? spec::nvm_opcode::read : spec::nvm_opcode::write, slot_index * blocks_per_io};
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
                }
                if (submitted) {
                    ctrl.mmio_write(spec::sq_tail_doorbell_offset(state.qid, dstrd), 4, state.sq_tail);
                }
            }
        }
        const auto poll_start = steady::now();
        if (!o.threads || rounds % 1024 == 0 || o.backend == "uring") {
            // With --threads, only the admin context: the groups poll on their threads. It also
            // polls the backends, which an asynchronous one needs to complete anything.
            ctrl.poll();
        }
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
            }
            if (reaped) {
                ctrl.mmio_write(spec::cq_head_doorbell_offset(state.qid, dstrd), 4, state.cq_head);
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

/// Creates the file of --backend file|uring at `o.size` bytes and writes data into every block
/// unless every block is allocated already (reads of holes would not read the file system).
void prepare_file(const options& o)
{
    const int fd = ::open(o.file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        throw std::runtime_error(fmt::format("cannot open {}: {}", o.file, std::strerror(errno)));
    }
    struct stat status {};
    const bool filled = ::fstat(fd, &status) == 0 && static_cast<std::uint64_t>(status.st_size) == o.size &&
                        static_cast<std::uint64_t>(status.st_blocks) * 512 >= o.size;
    std::string problem;
    if (!filled) {
        if (!o.json) {
            fmt::print(stderr, "filling {} ({} MiB)\n", o.file, o.size >> 20);
        }
        std::vector<std::byte> chunk(std::size_t{1} << 20);
        std::mt19937_64 random{1};
        for (auto& byte : chunk) {
            byte = static_cast<std::byte>(random());
        }
        if (::ftruncate(fd, static_cast<off_t>(o.size)) != 0) {
            problem = std::strerror(errno);
        }
        for (std::uint64_t offset = 0; problem.empty() && offset < o.size; offset += chunk.size()) {
            const auto piece =
                static_cast<std::size_t>(std::min<std::uint64_t>(chunk.size(), o.size - offset));
            if (::pwrite(fd, chunk.data(), piece, static_cast<off_t>(offset)) !=
                static_cast<ssize_t>(piece)) {
                problem = "short write";
            }
        }
        if (problem.empty() && ::fsync(fd) != 0) {
            problem = std::strerror(errno);
        }
    }
    ::close(fd);
    if (!problem.empty()) {
        throw std::runtime_error(fmt::format("cannot fill {}: {}", o.file, problem));
    }
}

/// The backend of --backend file or uring, type-erased so that both share one controller type.
nvmekit::any_backend file_namespace(const options& o)
{
    const nvmekit::file_backend_options file{.direct = o.direct};
#ifdef NVMEKIT_PERF_HAVE_URING
    if (o.backend == "uring") {
        // A ring as deep as every queue's commands together: none waits in the backend.
        const auto depth =
            std::bit_ceil(std::min<std::uint32_t>(std::uint32_t{o.queues} * o.queue_depth, 4096));
        return nvmekit::uring_backend{o.file, {.file = file, .ring_entries = depth}};
    }
#endif
    return nvmekit::file_backend{o.file, file};
}

std::string_view name(workload w)
{
    switch (w) {
    case workload::randread: return "randread";
    case workload::randwrite: return "randwrite";
    case workload::randrw: return "randrw";
    case workload::read: return "read";
    case workload::write: return "write";
    }
    return "?";
}

} // namespace

int main(int argc, char** argv)
{
    const options o = parse(argc, argv);
    const std::uint32_t lba_bytes = o.block_size % 4096 == 0 ? 4096 : 512;
    unsigned read_percent = o.read_percent;
    if (o.rw == workload::randread || o.rw == workload::read) {
        read_percent = 100;
    } else if (o.rw == workload::randwrite || o.rw == workload::write) {
        read_percent = 0;
    }
    const double ceiling = memcpy_ceiling_gib_per_s(o.size, o.block_size, read_percent, 1.0);
    results r;
    try {
        if (o.backend == "null") {
            r = run(o, nvmekit::null_backend{o.size, {.fill_reads = false}}, lba_bytes);
        } else if (o.backend == "file" || o.backend == "uring") {
            prepare_file(o);
            r = run(o, file_namespace(o), lba_bytes);
        } else {
            // Chunks as large as the namespace (up to 1 GiB): one allocation, few TLB misses.
            const std::size_t chunk = std::min<std::size_t>(std::bit_ceil(o.size), std::size_t{1} << 30);
            r = run(o,
                    nvmekit::ram_backend{
                        o.size, {.chunk_size = std::max<std::size_t>(chunk, 512), .preallocate = true}},
                    lba_bytes);
        }
    } catch (const std::exception& e) {
        fmt::print(stderr, "nvmekit-perf: {}\n", e.what());
        return 1;
    }
    const double iops = static_cast<double>(r.commands) / r.seconds;
    const double mib_per_s = iops * o.block_size / double(1 << 20);
    const double gib_per_s = iops * o.block_size / double(1ULL << 30);
    const double controller_ns =
        r.controller_seconds * 1e9 / static_cast<double>(std::max<std::uint64_t>(r.commands, 1));
    const double host_ns = (r.seconds - r.controller_seconds) * 1e9 /
                           static_cast<double>(std::max<std::uint64_t>(r.commands, 1));
    const auto us = [](std::uint64_t ns) { return static_cast<double>(ns) / 1000.0; };
    if (o.json) {
        fmt::print("{{\"backend\": \"{}\", \"rw\": \"{}\", \"bs\": {}, \"qd\": {}, \"queues\": {}, "
                   "\"poll_groups\": {}, \"seconds\": {:.3f}, "
                   "\"commands\": {}, \"errors\": {}, \"iops\": {:.0f}, \"mib_per_s\": {:.1f}, "
                   "\"latency_us\": {{\"avg\": {:.3f}, \"p50\": {:.3f}, \"p99\": {:.3f}, \"p999\": {:.3f}}}, "
                   "\"threads\": {}, \"process_cpu_ns_per_command\": {:.1f}, "
                   "\"controller_ns_per_command\": {:.1f}, \"host_ns_per_command\": {:.1f}, "
                   "\"controller_commands_per_cpu_second\": {:.0f}, "
                   "\"memcpy_ceiling_gib_per_s\": {:.2f}, \"fraction_of_memcpy_ceiling\": {}}}\n",
                   o.backend, name(o.rw), o.block_size, o.queue_depth, o.queues, o.groups, r.seconds,
                   r.commands, r.errors, iops, mib_per_s, r.latency.mean() / 1000.0,
                   us(r.latency.percentile(50)), us(r.latency.percentile(99)), us(r.latency.percentile(99.9)),
                   o.threads,
                   r.cpu_seconds * 1e9 / static_cast<double>(std::max<std::uint64_t>(r.commands, 1)),
                   controller_ns, host_ns, 1e9 / controller_ns, ceiling,
                   // The null backend moves no data: a fraction of the copy ceiling means nothing.
                   o.backend == "null" ? std::string{"null"} : fmt::format("{:.3f}", gib_per_s / ceiling));
    } else {
        fmt::print("nvmekit-perf: backend {}, {} {} B, QD {} x {} queue(s), {} poll group(s), {:.1f} s, {}\n",
                   o.backend, name(o.rw), o.block_size, o.queue_depth, o.queues, o.groups, r.seconds,
                   o.threads ? fmt::format("{} group thread(s) + the host's", o.groups)
                             : std::string{"one core"});
        fmt::print("  IOPS             {:>12.0f}   ({} commands, {} errors)\n", iops, r.commands, r.errors);
        fmt::print("  bandwidth        {:>12.1f} MiB/s\n", mib_per_s);
        fmt::print("  latency (us)     avg {:.3f}  p50 {:.3f}  p99 {:.3f}  p99.9 {:.3f}\n",
                   r.latency.mean() / 1000.0, us(r.latency.percentile(50)), us(r.latency.percentile(99)),
                   us(r.latency.percentile(99.9)));
        if (o.threads) {
            // The groups busy-poll on their own threads: their time is not inside this thread's poll().
            fmt::print(
                "  process CPU      {:>12.1f} ns/command  (host and {} busy-polling group thread(s))\n",
                r.cpu_seconds * 1e9 / static_cast<double>(std::max<std::uint64_t>(r.commands, 1)), o.groups);
        } else {
            fmt::print("  controller CPU   {:>12.1f} ns/command  ({:.1f} M commands per CPU second)\n",
                       controller_ns, 1e3 / controller_ns);
            fmt::print("  host CPU         {:>12.1f} ns/command\n", host_ns);
        }
        if (o.backend == "null") {
            fmt::print("  memcpy ceiling   {:>12.2f} GiB/s at {} B (the null backend moves no data)\n",
                       ceiling, o.block_size);
        } else {
            fmt::print("  memcpy ceiling   {:>12.2f} GiB/s at {} B; this run: {:.2f} GiB/s = {:.1f}% of it\n",
                       ceiling, o.block_size, gib_per_s, 100.0 * gib_per_s / ceiling);
        }
    }
    return r.errors == 0 ? 0 : 1;
}
