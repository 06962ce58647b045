// nvmekit-perf: an in-process host driving an nvmekit controller as fast as it can, in the style
// of spdk_nvme_perf and fio.
//
//     nvmekit-perf [--backend null|ram|file|uring] [--rw randread|randwrite|randrw|read|write]
//                  [--bs 4096] [--qd 128] [--queues 1] [--size 1G] [--time 3] [--mix 50] [--count N]
//                  [--file PATH] [--direct] [--json] [--transport in-process|vfio-user|tcp]
//
// --transport vfio-user runs the workload a second time over vfio-user (perf_vfio_user.cpp): the
// device's vfio-user server on a thread of its own, the host a vfio-user client over a UNIX
// socket, and reports its IOPS, latency, the server's CPU time per command and the doorbell
// messages per command beside the in-process figures. --doorbell-replies waits for each doorbell
// message's reply (else they are posted), --doorbell-per-command rings after every SQE and CQE,
// --mapped-doorbells stores them into the doorbell page the server offers to map, and
// --server-busy-poll keeps the server from sleeping between messages; with --threads the
// server's poll groups run on threads of their own.
//
// --transport tcp runs it a second time over NVMe/TCP (perf_tcp.cpp): the target's poll() loop
// on a thread of its own, the host a pipelined initiator on a loopback socket with --queues
// connections (up to 4) of --qd commands each, and reports its IOPS, latency and the target
// thread's CPU time per command beside the in-process figures. A read is a capsule out and
// C2HData and a response back; a write carries its data in the capsule (--bs up to 8 KiB).
// --server-busy-poll keeps the target from waiting in poll(2) when idle. With --threads the
// target's I/O connections are spread over --groups connection groups, each on a thread of its
// own beside the poll() thread, and the target CPU is that of all of them.
//
// One thread runs both sides: the host writes SQEs straight into queue memory and rings doorbells,
// the controller runs inside poll(), and the host reaps CQEs by their phase tag. Time spent inside
// poll() is the controller's; the rest of the loop is the host's. The run first measures the
// machine's own ceiling, single-core memcpy bandwidth at the chosen block size, and reports the
// data rate as a fraction of it, by the wall clock and by CPU time. The RAM backend's namespace
// and the ceiling's buffer are both on transparent huge pages unless --no-huge-pages. The RAM
// backend writes with non-temporal stores unless --temporal-writes; the ceiling's write copies
// are then the backend's copy routine too, and the fraction is of that ceiling (the plain memcpy
// ceiling is reported beside it).
//
// --backend file (file_backend: pread/pwrite inside the command) and --backend uring
// (uring_backend: io_uring, completing in poll(); built when liburing is found) run on the file
// --file names (/var/tmp/nvmekit-perf.img by default), created at --size and filled with data
// first unless it already is, so that reads do not read holes; --direct opens it with O_DIRECT
// too (the host's buffers are 4 KiB aligned, so 4 KiB requests go direct).

#include "command_line.hpp"
#include "perf_run.hpp"

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
#include <memory>
#include <new>
#include <optional>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <sys/mman.h>

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
#include <nvmekit/testing/tcp_host.hpp>
#include <nvmekit/transport/mapped_memory.hpp>
#include <nvmekit/transport/tcp/connection_params.hpp>

namespace {

using namespace nvmekit_perf;

constexpr nvmekit_programs::program perf_program{
    "nvmekit-perf",
    "nvmekit-perf [--backend null|ram|file|uring] [--rw randread|randwrite|randrw|read|write]\n"
    "                    [--bs BYTES] [--qd N] [--queues N] [--size BYTES[K|M|G]] [--time SECONDS]\n"
    "                    [--mix READ_PERCENT] [--count COMMANDS] [--groups N] [--threads] [--json]\n"
    "                    [--file PATH] [--direct] [--multi-threaded] [--transport in-process|vfio-user|tcp]\n"
    "                    [--doorbell-replies] [--doorbell-per-command] [--server-busy-poll]\n"
    "                    [--mapped-doorbells] [--no-huge-pages] [--temporal-writes]\n"
    "                    [--help] [--version]\n"};

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
        } else if (arg == "--transport") {
            o.transport = value();
            if (o.transport != "in-process" && o.transport != "vfio-user" && o.transport != "tcp") {
                usage("--transport is in-process, vfio-user or tcp");
            }
#ifndef NVMEKIT_PERF_HAVE_VFIO_USER
            if (o.transport == "vfio-user") {
                usage("--transport vfio-user: this nvmekit-perf was built without nlohmann_json");
            }
#endif
        } else if (arg == "--doorbell-replies") {
            o.doorbell_replies = true;
        } else if (arg == "--doorbell-per-command") {
            o.doorbell_per_command = true;
        } else if (arg == "--mapped-doorbells") {
            o.mapped_doorbells = true;
        } else if (arg == "--server-busy-poll") {
            o.server_busy_poll = true;
        } else if (arg == "--file") {
            o.file = value();
        } else if (arg == "--direct") {
            o.direct = true;
        } else if (arg == "--no-huge-pages") {
            o.huge_pages = false;
        } else if (arg == "--temporal-writes") {
            o.non_temporal_writes = false;
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
    if (o.transport == "vfio-user" && (o.backend == "file" || o.backend == "uring")) {
        usage("--transport vfio-user runs the null and ram backends");
    }
    if (o.transport == "tcp") {
        if (o.backend == "file" || o.backend == "uring") {
            usage("--transport tcp runs the null and ram backends");
        }
        if (o.queues > nvmekit::testing::tcp_host::max_io_queues) {
            usage(
                fmt::format("--transport tcp: --queues 1 to {}", nvmekit::testing::tcp_host::max_io_queues));
        }
        if (o.rw != workload::randread && o.rw != workload::read &&
            o.block_size > nvmekit::transport::tcp::admin_in_capsule_data_size) {
            usage("--transport tcp: writes are sent in their capsule, --bs up to 8 KiB");
        }
    }
    return o;
}

// ---- the machine's ceiling --------------------------------------------------------------------

/// The ceiling's bandwidth, by the wall clock and by the measuring thread's CPU time.
struct ceiling_rate {
    double wall_gib_per_s = 0;
    double cpu_gib_per_s = 0;
};

/// Single-core memcpy bandwidth at `block` bytes per copy between random block-aligned places of
/// a `region`-byte buffer (the namespace's size, as the backend sees it) and a small ring of host
/// buffers, in the direction of the workload: reads copy out of the region, writes into it, and
/// a mix does both in the workload's proportion. Measured for about `seconds`. The region is
/// allocated as the RAM backend allocates its one chunk (2 MiB aligned and advised for
/// transparent huge pages with `huge_pages`, else 64-byte aligned) and the ring page aligned, as
/// the host's buffers are, so that the copies are the backend's in size, place and alignment.
/// With `non_temporal_writes` the copies into the region are the RAM backend's
/// copy_non_temporal, with one fence per 256 copies (the backend fences once per poll(), for
/// every write of the pass, or once per write with `concurrent`).
ceiling_rate copy_ceiling_gib_per_s(std::uint64_t region, std::uint32_t block, unsigned read_percent,
                                    double seconds, bool huge_pages, bool non_temporal_writes)
{
    region = std::max<std::uint64_t>(std::min<std::uint64_t>(region, std::uint64_t{1} << 30), block);
    const std::size_t alignment = huge_pages && region >= nvmekit::ram_backend::huge_page_bytes
                                      ? nvmekit::ram_backend::huge_page_bytes
                                      : std::size_t{64};
    const auto release = [alignment](std::byte* data) {
        ::operator delete (data, std::align_val_t{alignment});
    };
    const std::unique_ptr<std::byte, decltype(release)> backing{
        static_cast<std::byte*>(::operator new (region, std::align_val_t{alignment})), release};
#if defined(MADV_HUGEPAGE)
    if (alignment == nvmekit::ram_backend::huge_page_bytes) {
        static_cast<void>(
            ::madvise(backing.get(), region - region % nvmekit::ram_backend::huge_page_bytes, MADV_HUGEPAGE));
    }
#endif
    std::memset(backing.get(), 0x5a, region);
    const nvmekit::testing::detail::page_aligned_bytes ring(std::size_t{block} * 128);
    std::memset(ring.data(), 0xa5, std::size_t{block} * 128);
    const std::uint64_t blocks = region / block;
    std::mt19937_64 random{7};
    std::uint64_t copied = 0;
    const double cpu_start = thread_cpu_seconds();
    const auto start = steady::now();
    const auto deadline = start + std::chrono::duration<double>(seconds);
    std::size_t slot = 0;
    while (steady::now() < deadline) {
        for (int i = 0; i < 256; ++i) {
            std::byte* far = backing.get() + (random() % blocks) * block;
            std::byte* near = ring.data() + slot * block;
            if (random() % 100 < read_percent) {
                std::memcpy(near, far, block);
            } else if (non_temporal_writes) {
                nvmekit::detail::copy_non_temporal(far, near, block);
            } else {
                std::memcpy(far, near, block);
            }
            slot = (slot + 1) % 128;
            copied += block;
        }
        if (non_temporal_writes) {
            nvmekit::detail::non_temporal_fence();
        }
    }
    const double elapsed = std::chrono::duration<double>(steady::now() - start).count();
    const double cpu = thread_cpu_seconds() - cpu_start;
    volatile std::byte sink = ring.data()[0];
    static_cast<void>(sink);
    const double gib = static_cast<double>(copied) / double(1ULL << 30);
    return {.wall_gib_per_s = gib / elapsed, .cpu_gib_per_s = gib / cpu};
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
    const ceiling_rate memcpy_ceilings =
        copy_ceiling_gib_per_s(o.size, o.block_size, read_percent, 1.0, o.huge_pages, false);
    // The RAM backend's own copy, when it is not memcpy (non-temporal stores for writes): the
    // fraction is of the ceiling of the copy the backend makes.
    const bool backend_copy = o.backend == "ram" && o.non_temporal_writes && read_percent < 100;
    const ceiling_rate ceilings =
        backend_copy ? copy_ceiling_gib_per_s(o.size, o.block_size, read_percent, 1.0, o.huge_pages, true)
                     : memcpy_ceilings;
    const double ceiling = ceilings.wall_gib_per_s;
    results r;
    results over_vfio_user;
    results over_tcp;
    try {
        if (o.backend == "null") {
            r = run(o, nvmekit::null_backend{o.size, {.fill_reads = false}}, lba_bytes);
        } else if (o.backend == "file" || o.backend == "uring") {
            r = run_file_backend(o, lba_bytes);
        } else {
            r = run(o,
                    nvmekit::ram_backend{o.size,
                                         {.chunk_size = ram_chunk_size(o.size),
                                          .preallocate = true,
                                          .concurrent = o.threads,
                                          .huge_pages = o.huge_pages,
                                          .non_temporal_writes = o.non_temporal_writes}},
                    lba_bytes);
        }
#ifdef NVMEKIT_PERF_HAVE_VFIO_USER
        if (o.transport == "vfio-user") {
            over_vfio_user = run_vfio_user(o, lba_bytes);
        }
#endif
        if (o.transport == "tcp") {
            over_tcp = run_tcp(o, lba_bytes);
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
    // The same fraction by CPU time (the run's process CPU against the ceiling thread's), which a
    // busy machine's time slices do not move as much as they move the wall clock. One thread
    // only: with --threads the process's CPU holds busy-polling that moves no data.
    const double cpu_gib_per_s =
        static_cast<double>(r.commands) * o.block_size / std::max(r.cpu_seconds, 1e-9) / double(1ULL << 30);
    const bool cpu_fraction = o.backend != "null" && !o.threads;
    const bool vfio_user = o.transport == "vfio-user";
    const auto per_command = [](double seconds, std::uint64_t commands) {
        return seconds * 1e9 / static_cast<double>(std::max<std::uint64_t>(commands, 1));
    };
    const results& v = over_vfio_user;
    const double v_iops = static_cast<double>(v.commands) / std::max(v.seconds, 1e-9);
    const double server_ns = per_command(v.server_cpu_seconds, v.commands);
    const double messages_per_command = static_cast<double>(v.doorbell_messages) /
                                        static_cast<double>(std::max<std::uint64_t>(v.commands, 1));
    const bool tcp = o.transport == "tcp";
    const results& t = over_tcp;
    const double t_iops = static_cast<double>(t.commands) / std::max(t.seconds, 1e-9);
    const double target_ns = per_command(t.server_cpu_seconds, t.commands);
    // The target thread's share of a core over the run.
    const double target_utilisation = t.server_cpu_seconds / std::max(t.seconds, 1e-9);
    if (o.json) {
        fmt::print(
            "{{\"backend\": \"{}\", \"rw\": \"{}\", \"bs\": {}, \"qd\": {}, \"queues\": {}, "
            "\"poll_groups\": {}, \"seconds\": {:.3f}, "
            "\"commands\": {}, \"errors\": {}, \"iops\": {:.0f}, \"mib_per_s\": {:.1f}, "
            "\"latency_us\": {{\"avg\": {:.3f}, \"p50\": {:.3f}, \"p99\": {:.3f}, \"p999\": {:.3f}}}, "
            "\"threads\": {}, \"process_cpu_ns_per_command\": {:.1f}, "
            "\"controller_ns_per_command\": {:.1f}, \"host_ns_per_command\": {:.1f}, "
            "\"controller_commands_per_cpu_second\": {:.0f}, "
            "\"memcpy_ceiling_gib_per_s\": {:.2f}, \"memcpy_ceiling_cpu_gib_per_s\": {:.2f}, "
            "\"ceiling_copy\": \"{}\", \"ceiling_gib_per_s\": {:.2f}, \"fraction_of_ceiling\": {}, "
            "\"ceiling_cpu_gib_per_s\": {:.2f}, \"fraction_of_ceiling_cpu\": {}, "
            "\"huge_pages\": {}, \"non_temporal_writes\": {}, "
            "\"vfio_user\": {}, \"tcp\": {}}}\n",
            o.backend, name(o.rw), o.block_size, o.queue_depth, o.queues, o.groups, r.seconds, r.commands,
            r.errors, iops, mib_per_s, r.latency.mean() / 1000.0, us(r.latency.percentile(50)),
            us(r.latency.percentile(99)), us(r.latency.percentile(99.9)), o.threads,
            r.cpu_seconds * 1e9 / static_cast<double>(std::max<std::uint64_t>(r.commands, 1)), controller_ns,
            host_ns, 1e9 / controller_ns, memcpy_ceilings.wall_gib_per_s, memcpy_ceilings.cpu_gib_per_s,
            backend_copy ? "non-temporal" : "memcpy", ceiling,
            // The null backend moves no data: a fraction of the copy ceiling means nothing.
            o.backend == "null" ? std::string{"null"} : fmt::format("{:.3f}", gib_per_s / ceiling),
            ceilings.cpu_gib_per_s,
            cpu_fraction ? fmt::format("{:.3f}", cpu_gib_per_s / ceilings.cpu_gib_per_s)
                         : std::string{"null"},
            o.huge_pages, o.backend == "ram" && o.non_temporal_writes,
            !vfio_user ? std::string{"null"}
                       : fmt::format("{{\"doorbells\": \"{}\", \"commands\": {}, \"errors\": {}, "
                                     "\"iops\": {:.0f}, \"latency_us\": {{\"avg\": {:.3f}, \"p50\": {:.3f}, "
                                     "\"p99\": {:.3f}, \"p999\": {:.3f}}}, "
                                     "\"server_cpu_ns_per_command\": {:.1f}, "
                                     "\"server_commands_per_cpu_second\": {:.0f}, "
                                     "\"doorbell_messages_per_command\": {:.3f}, \"server_busy_poll\": {}}}",
                                     o.mapped_doorbells   ? "mapped"
                                     : o.doorbell_replies ? "replied"
                                                          : "posted",
                                     v.commands, v.errors, v_iops, v.latency.mean() / 1000.0,
                                     us(v.latency.percentile(50)), us(v.latency.percentile(99)),
                                     us(v.latency.percentile(99.9)), server_ns, 1e9 / server_ns,
                                     messages_per_command, o.server_busy_poll),
            !tcp ? std::string{"null"}
                 : fmt::format("{{\"commands\": {}, \"errors\": {}, \"iops\": {:.0f}, "
                               "\"latency_us\": {{\"avg\": {:.3f}, \"p50\": {:.3f}, \"p99\": {:.3f}, "
                               "\"p999\": {:.3f}}}, \"target_cpu_ns_per_command\": {:.1f}, "
                               "\"target_cpu_utilisation\": {:.3f}, \"iops_per_target_core\": {:.0f}, "
                               "\"process_cpu_ns_per_command\": {:.1f}, \"server_busy_poll\": {}}}",
                               t.commands, t.errors, t_iops, t.latency.mean() / 1000.0,
                               us(t.latency.percentile(50)), us(t.latency.percentile(99)),
                               us(t.latency.percentile(99.9)), target_ns, target_utilisation, 1e9 / target_ns,
                               per_command(t.cpu_seconds, t.commands), o.server_busy_poll));
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
        } else if (backend_copy) {
            fmt::print("  memcpy ceiling   {:>12.2f} GiB/s at {} B ({:.2f} per CPU second)\n",
                       memcpy_ceilings.wall_gib_per_s, o.block_size, memcpy_ceilings.cpu_gib_per_s);
            fmt::print("  backend's copy   {:>12.2f} GiB/s (non-temporal writes); this run: {:.2f} GiB/s = "
                       "{:.1f}% of it\n",
                       ceiling, gib_per_s, 100.0 * gib_per_s / ceiling);
        } else {
            fmt::print("  memcpy ceiling   {:>12.2f} GiB/s at {} B; this run: {:.2f} GiB/s = {:.1f}% of it\n",
                       ceiling, o.block_size, gib_per_s, 100.0 * gib_per_s / ceiling);
        }
        if (cpu_fraction) {
            fmt::print(
                "  by CPU time      {:>12.2f} GiB/s per CPU second; this run: {:.2f} = {:.1f}% of it\n",
                ceilings.cpu_gib_per_s, cpu_gib_per_s, 100.0 * cpu_gib_per_s / ceilings.cpu_gib_per_s);
        }
        if (vfio_user) {
            fmt::print(
                "over vfio-user: the same workload, the device's server on a thread of its own, a UNIX "
                "socket, doorbells {}, server {}\n",
                o.mapped_doorbells   ? "stored into the mapped doorbell page"
                : o.doorbell_replies ? "waiting for each reply"
                                     : "posted (No Reply)",
                o.server_busy_poll || o.mapped_doorbells ? "busy-polling" : "waiting in poll(2) when idle");
            fmt::print("  IOPS             {:>12.0f}   ({} commands, {} errors)\n", v_iops, v.commands,
                       v.errors);
            fmt::print("  latency (us)     avg {:.3f}  p50 {:.3f}  p99 {:.3f}  p99.9 {:.3f}\n",
                       v.latency.mean() / 1000.0, us(v.latency.percentile(50)), us(v.latency.percentile(99)),
                       us(v.latency.percentile(99.9)));
            fmt::print(
                "  server CPU       {:>12.1f} ns/command  ({:.2f} M commands per server CPU second{})\n",
                server_ns, 1e3 / server_ns,
                o.threads ? fmt::format("; the server's thread and {} group thread(s)", o.groups) : "");
            fmt::print("  doorbells        {:>12.3f} messages/command\n", messages_per_command);
        }
        if (tcp) {
            fmt::print(
                "over NVMe/TCP: the same workload, the target's poll() loop on a thread of its own{}, {} "
                "loopback connection(s) of QD {}, target {}\n",
                o.threads ? fmt::format(" and {} connection group thread(s)", o.groups) : std::string{},
                o.queues, o.queue_depth,
                o.server_busy_poll ? "busy-polling" : "waiting in poll(2) when idle");
            fmt::print("  IOPS             {:>12.0f}   ({} commands, {} errors)\n", t_iops, t.commands,
                       t.errors);
            fmt::print("  latency (us)     avg {:.3f}  p50 {:.3f}  p99 {:.3f}  p99.9 {:.3f}\n",
                       t.latency.mean() / 1000.0, us(t.latency.percentile(50)), us(t.latency.percentile(99)),
                       us(t.latency.percentile(99.9)));
            fmt::print("  target CPU       {:>12.1f} ns/command  ({:.0f} K IOPS per target core; the target "
                       "thread {:.0f}% busy)\n",
                       target_ns, 1e6 / target_ns, 100.0 * target_utilisation);
            fmt::print("  process CPU      {:>12.1f} ns/command  (the target and the host)\n",
                       per_command(t.cpu_seconds, t.commands));
        }
    }
    return r.errors == 0 && over_vfio_user.errors == 0 && over_tcp.errors == 0 ? 0 : 1;
}
