// nvmekit-perf --transport tcp: the host and the target in two threads of one process, talking
// NVMe/TCP over a loopback socket, in a translation unit of its own (perf_run.hpp says why). The
// target is transport::tcp::target, whose poll() loop runs on a thread of its own and waits in
// poll(2) for up to 1 ms when it has nothing to do (--server-busy-poll: never). The host is
// testing::tcp_host: it connects the admin queue, enables the controller and connects --queues
// I/O queues, each a connection of its own, then keeps --qd commands outstanding on each with
// tcp_queue's submit/flush/reap: a read is a capsule out and C2HData and a response back, a
// write carries its data in the capsule. The host waits in poll(2) when no response has arrived.
// The target's CPU is the CPU time of the thread that runs target.poll().

#include "perf_run.hpp"

#include <poll.h>
#include <pthread.h>

#include <algorithm>
#include <cstddef>
#include <functional>
#include <thread>
#include <vector>

#include <nvmekit/testing/tcp_host.hpp>
#include <nvmekit/transport/tcp/target.hpp>

namespace nvmekit_perf {
namespace {

namespace tcp = nvmekit::transport::tcp;

template <typename Backend, typename Threading>
struct tcp_perf_traits : tcp::target_traits {
    using backend = Backend;
    using threading = Threading;
    static constexpr nvmekit::limits limits = perf_traits<Backend, nvmekit::single_threaded>::limits;
};

/// The CPU time thread `thread` has used so far.
double thread_cpu_seconds(std::thread& thread)
{
    clockid_t clock{};
    if (::pthread_getcpuclockid(thread.native_handle(), &clock) != 0) {
        throw std::runtime_error("cannot read the target thread's CPU clock");
    }
    return clock_seconds(clock);
}

/// The host's side: `o.queues` connected I/O queues of `host`, each kept `o.queue_depth`
/// commands deep until the run ends.
results drive_tcp(const options& o, nvmekit::testing::tcp_host& host, std::uint64_t blocks,
                  std::uint32_t lba_bytes, const std::function<double()>& target_cpu)
{
    const std::uint32_t blocks_per_io = o.block_size / lba_bytes;
    const std::uint64_t io_slots = blocks / blocks_per_io;
    struct queue_run {
        nvmekit::testing::tcp_queue* queue = nullptr;
        std::vector<std::uint16_t> free_cids;
        std::vector<steady::time_point> submitted;
        std::span<std::byte> buffers;
        std::uint64_t sequential_slot = 0;
    };
    std::vector<std::byte> memory(std::size_t{o.queues} * o.queue_depth * o.block_size, std::byte{0x5a});
    std::vector<queue_run> queues(o.queues);
    std::vector<pollfd> sockets;
    for (std::uint16_t q = 0; q < o.queues; ++q) {
        auto& run = queues[q];
        run.queue = &host.io(static_cast<std::uint16_t>(q + 1));
        run.submitted.resize(o.queue_depth);
        run.buffers = std::span{memory}.subspan(std::size_t{q} * o.queue_depth * o.block_size,
                                                std::size_t{o.queue_depth} * o.block_size);
        for (std::uint32_t cid = 0; cid < o.queue_depth; ++cid) {
            run.free_cids.push_back(static_cast<std::uint16_t>(o.queue_depth - 1 - cid));
        }
        run.sequential_slot = (io_slots / o.queues) * q;
        sockets.push_back({run.queue->native_handle(), POLLIN, 0});
    }

    std::mt19937_64 random{42};
    results r;
    const auto start = steady::now();
    const auto deadline = start + std::chrono::duration<double>(o.seconds);
    const double cpu_start = process_cpu_seconds();
    const double target_cpu_start = target_cpu();
    for (;;) {
        const bool draining = o.count != 0 ? r.commands + o.queues * std::uint64_t{o.queue_depth} >= o.count
                                           : steady::now() >= deadline;
        std::size_t outstanding = 0;
        for (auto& run : queues) {
            if (!draining && !run.free_cids.empty()) {
                const auto now = steady::now();
                while (!run.free_cids.empty()) {
                    const std::uint16_t cid = run.free_cids.back();
                    run.free_cids.pop_back();
                    const auto [opcode, slba] =
                        next_command(o, random, io_slots, blocks_per_io, run.sequential_slot);
                    auto sqe =
                        nvmekit::testing::command_builders::lba_command(opcode, 1, slba, blocks_per_io);
                    sqe.cdw0.set(spec::command_dword0::cid, cid);
                    const auto buffer = run.buffers.subspan(std::size_t{cid} * o.block_size, o.block_size);
                    if (opcode == spec::nvm_opcode::read) {
                        run.queue->submit(sqe, {}, buffer);
                    } else {
                        run.queue->submit(sqe, buffer, {});
                    }
                    run.submitted[cid] = now;
                }
                run.queue->flush();
            }
            outstanding += run.queue->outstanding();
        }
        if (draining && outstanding == 0) {
            break;
        }
        std::size_t reaped = 0;
        for (auto& run : queues) {
            reaped += run.queue->reap(
                [&](const nvmekit::testing::completion& done) {
                    const std::uint16_t cid = done.cqe.cid;
                    r.latency.add(
                        static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                       steady::now() - run.submitted[cid])
                                                       .count()));
                    ++r.commands;
                    r.errors += done.ok() ? 0 : 1;
                    run.free_cids.push_back(cid);
                },
                false);
        }
        if (reaped == 0 && ::poll(sockets.data(), sockets.size(), 1000) < 0 && errno != EINTR) {
            throw std::runtime_error("poll failed");
        }
    }
    r.seconds = std::chrono::duration<double>(steady::now() - start).count();
    r.server_cpu_seconds = target_cpu() - target_cpu_start;
    r.cpu_seconds = process_cpu_seconds() - cpu_start;
    return r;
}

template <typename Backend, typename Threading>
results run_over_tcp(const options& o, Backend backend, std::uint32_t lba_bytes)
{
    using target_type = tcp::target<tcp_perf_traits<Backend, Threading>>;
    typename target_type::subsystem_type subsystem{{.nqn = "nqn.2026-11.io.nvmekit:perf"}};
    subsystem.add_namespace(std::move(backend),
                            {.lba_format = static_cast<std::uint8_t>(lba_bytes == 512 ? 0 : 2)});
    tcp::target_options target_options{.address = "127.0.0.1", .port = 0};
    // Room for every command of the run in flight at once: none waits for buffer storage.
    const std::size_t in_flight = std::size_t{o.queues} * o.queue_depth * o.block_size;
    target_options.max_buffer_bytes = std::max(target_options.max_buffer_bytes, in_flight);
    target_options.max_association_buffer_bytes =
        std::max(target_options.max_association_buffer_bytes, in_flight);
    if constexpr (Threading::concurrent_groups) {
        // --threads: the I/O queues' connections on --groups connection groups, each on a thread.
        target_options.connection_groups = o.groups;
    }
    target_type target{subsystem, target_options};
    std::atomic<bool> stop{false};
    const std::chrono::milliseconds wait{o.server_busy_poll ? 0 : 1};
    std::thread serving{[&] {
        while (!stop.load(std::memory_order_relaxed)) {
            target.poll(wait);
        }
    }};
    std::vector<std::thread> groups;
    for (std::uint16_t i = 0; i < target.connection_group_count(); ++i) {
        groups.emplace_back([&, i] {
            while (!stop.load(std::memory_order_relaxed)) {
                target.poll_group(i, wait);
            }
        });
    }
    // The target's CPU: its poll() thread's and every group thread's.
    const auto target_cpu = [&] {
        double seconds = thread_cpu_seconds(serving);
        for (auto& group : groups) {
            seconds += thread_cpu_seconds(group);
        }
        return seconds;
    };
    const auto join = [&] {
        stop = true;
        for (auto& group : groups) {
            group.join();
        }
        serving.join();
    };
    results r;
    try {
        nvmekit::testing::tcp_host host{"127.0.0.1",
                                        target.port(),
                                        {.subsystem_nqn = "nqn.2026-11.io.nvmekit:perf",
                                         .io_entries = queue_entries(o),
                                         .keep_alive_timeout_ms = 0}};
        host.connect_admin();
        host.enable();
        for (std::uint16_t q = 1; q <= o.queues; ++q) {
            if (!host.connect_io(q).ok()) {
                throw std::runtime_error(fmt::format("the target refused I/O queue {}", q));
            }
        }
        r = drive_tcp(o, host, o.size / lba_bytes, lba_bytes, target_cpu);
    } catch (...) {
        join();
        throw;
    }
    join();
    return r;
}

template <typename Backend>
results run_over_tcp(const options& o, Backend backend, std::uint32_t lba_bytes)
{
    if (o.threads) {
        return run_over_tcp<Backend, nvmekit::multi_threaded>(o, std::move(backend), lba_bytes);
    }
    return run_over_tcp<Backend, nvmekit::single_threaded>(o, std::move(backend), lba_bytes);
}

} // namespace

results run_tcp(const options& o, std::uint32_t lba_bytes)
{
    if (o.backend == "null") {
        return run_over_tcp(o, nvmekit::null_backend{o.size, {.fill_reads = false}}, lba_bytes);
    }
    return run_over_tcp(
        o,
        nvmekit::ram_backend{
            o.size, {.chunk_size = ram_chunk_size(o.size), .preallocate = true, .concurrent = o.threads}},
        lba_bytes);
}

} // namespace nvmekit_perf
