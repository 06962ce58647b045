// nvmekit-systemc-platform: a small SystemC virtual platform. Host memory as a TLM target, a router
// (nvmekit::systemc::router: one address map for the host CPU's configuration and BAR0 accesses and
// for the device's DMA and MSI-X writes), the NVMe
// device (nvmekit::systemc::nvme_device, loosely timed, or with --at approximately timed) on a RAM
// namespace timed by the SSD model with FEMU's defaults (or, with --untimed, on plain RAM, or with
// --null on the null backend: nothing then takes simulated time, which measures the platform's
// own speed), and a host program: the in-process host driver over TLM, which brings the device up
// and runs a random 4 KiB read/write workload at a fixed queue depth, checking every read against
// what was written (except on the null backend, which keeps nothing). Prints simulated IOPS and
// latency percentiles, and how many simulated commands ran per wall-clock second. The same seed
// gives the same run: the trace digest (each command's LBA, kind and completion time) is identical
// from run to run. Exits non-zero when a command fails or a read returns other data than was
// written.
#include "block_pattern.hpp"
#include "command_line.hpp"

#include <nvmekit/backends/null_backend.hpp>
#include <nvmekit/backends/ram_backend.hpp>
#include <nvmekit/backends/timed_backend.hpp>
#include <nvmekit/systemc/host_platform.hpp>
#include <nvmekit/systemc/nvme_device.hpp>
#include <nvmekit/systemc/router.hpp>
#include <nvmekit/testing/host.hpp>
#include <nvmekit/timing/ssd_model.hpp>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <random>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace {

namespace sysc = nvmekit::systemc;
namespace spec = nvmekit::spec;
using host_type = nvmekit::testing::in_process_host<sysc::host_bus>;
using timed_ram =
    nvmekit::timed_backend<nvmekit::ram_backend, nvmekit::timing::ssd_model, sysc::simulation_clock>;

constexpr nvmekit_programs::program program{
    "nvmekit-systemc-platform",
    "nvmekit-systemc-platform [--seed N] [--commands N] [--queue-depth N] [--untimed | --null] [--at]\n"
    "  a SystemC TLM-2.0 virtual platform: the NVMe device on an SSD timing model (or, with\n"
    "  --untimed, on plain RAM; with --null, on the null backend, reads unchecked), driven by a\n"
    "  random verified 4 KiB read/write workload; prints simulated IOPS and latency percentiles.\n"
    "  --at: the device's DMA is approximately timed (nb_transport) instead of loosely timed\n"};

// The address map the router decodes.
constexpr std::uint64_t memory_base = 0x1000'0000;
constexpr std::uint64_t memory_bytes = std::uint64_t{16} << 20;
constexpr std::uint64_t config_base = 0xe000'0000; // the device's configuration space, ECAM-like
constexpr std::uint64_t config_bytes = 4096;
constexpr std::uint64_t bar0_base = 0xf000'0000;
constexpr std::uint64_t namespace_bytes = std::uint64_t{256} << 20;
constexpr std::uint32_t block_bytes = 4096;
constexpr std::uint8_t lba_format_4k = 2; // supported_lba_formats[2]: 4096-byte blocks

struct settings {
    std::uint64_t seed = 1;
    std::uint64_t commands = 20000;
    std::uint32_t queue_depth = 16;
    bool untimed = false;      ///< a RAM namespace without a timing model
    bool null_backend = false; ///< a null namespace: no data kept, no time taken, reads not checked
    bool approximately_timed = false;
};

std::uint64_t number(std::string_view text)
{
    std::uint64_t value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc{} || end != text.data() + text.size()) {
        nvmekit_programs::bad_usage(program, "not a number: " + std::string{text});
    }
    return value;
}

settings parse(int argc, char** argv)
{
    settings result;
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        if (nvmekit_programs::standard_option(program, arg)) {
            continue;
        }
        if (arg == "--untimed" || arg == "--null") {
            (arg == "--null" ? result.null_backend : result.untimed) = true;
            continue;
        }
        if (arg == "--at") {
            result.approximately_timed = true;
            continue;
        }
        if (arg != "--seed" && arg != "--commands" && arg != "--queue-depth") {
            nvmekit_programs::bad_usage(program, "unknown option " + std::string{arg});
        }
        if (i + 1 >= argc) {
            nvmekit_programs::bad_usage(program, "missing value of " + std::string{arg});
        }
        const std::uint64_t value = number(argv[++i]);
        if (arg == "--seed") {
            result.seed = value;
        } else if (arg == "--commands") {
            result.commands = value;
        } else if (value >= 1 && value <= 128) {
            result.queue_depth = static_cast<std::uint32_t>(value);
        } else {
            nvmekit_programs::bad_usage(program, "--queue-depth takes 1 to 128");
        }
    }
    return result;
}

/// The current simulated time, as a value (sc_time_stamp() refers to a time that moves on).
sc_core::sc_time simulated_now() { return sc_core::sc_time_stamp(); }

/// The workload's outcome.
struct report {
    std::uint64_t commands = 0;
    std::uint64_t errors = 0;
    std::uint64_t mismatches = 0;
    std::vector<sc_core::sc_time> latencies;
    std::uint64_t digest = 0xcbf29ce484222325ULL; // FNV-1a over every completion
    sc_core::sc_time elapsed;

    void record(std::uint64_t value)
    {
        for (int byte = 0; byte < 8; ++byte) {
            digest = (digest ^ ((value >> (8 * byte)) & 0xffU)) * 0x100000001b3ULL;
        }
    }
};

/// Random 4 KiB reads and writes at `queue_depth` on I/O queue 1, each read checked against the
/// generation of its block's last write. No two commands in flight touch the same block.
void run_workload(host_type& host, const settings& options, report& out)
{
    struct slot {
        std::uint64_t buffer = 0;
        std::uint64_t lba = 0;
        std::uint32_t generation = 0;
        bool write = false;
        sc_core::sc_time submitted;
    };
    std::mt19937_64 random{options.seed};
    const std::uint64_t blocks = namespace_bytes / block_bytes;
    std::vector<std::uint32_t> generations(blocks, 0);
    std::unordered_set<std::uint64_t> busy;
    std::vector<slot> slots(options.queue_depth);
    std::vector<std::size_t> free_slots;
    std::vector<std::size_t> slot_of_cid(65536, 0);
    std::vector<std::byte> expected(block_bytes);
    for (std::size_t i = 0; i < slots.size(); ++i) {
        slots[i].buffer = host.allocate(block_bytes);
        free_slots.push_back(i);
    }

    const sc_core::sc_time start = simulated_now();
    std::uint64_t submitted = 0;
    std::vector<nvmekit::testing::completion> completions;
    while (out.commands < options.commands) {
        while (!free_slots.empty() && submitted < options.commands) {
            const std::size_t index = free_slots.back();
            free_slots.pop_back();
            slot& command = slots[index];
            command.write = random() % 2 == 0;
            do {
                command.lba = random() % blocks;
            } while (!busy.insert(command.lba).second);
            const auto buffer = host.memory().bytes(command.buffer, block_bytes);
            if (command.write) {
                command.generation = generations[command.lba] + 1U;
                nvmekit_programs::fill_pattern(buffer, command.lba, command.generation);
            } else {
                command.generation = generations[command.lba];
                std::fill(buffer.begin(), buffer.end(), std::byte{0xa5}); // stale data must not pass
            }
            auto sqe = host_type::lba_command(
                command.write ? spec::nvm_opcode::write : spec::nvm_opcode::read, 1, command.lba, 1);
            host.describe_data(sqe, command.buffer, block_bytes);
            command.submitted = sc_core::sc_time_stamp();
            slot_of_cid[host.submit(1, sqe)] = index;
            ++submitted;
        }
        completions.clear();
        host.reap(1, completions);
        for (const auto& completion : completions) {
            const std::size_t index = slot_of_cid[completion.cqe.cid];
            const slot& command = slots[index];
            const sc_core::sc_time latency = sc_core::sc_time_stamp() - command.submitted;
            out.latencies.push_back(latency);
            out.record(command.lba * 2 + (command.write ? 1 : 0));
            out.record(static_cast<std::uint64_t>(sc_core::sc_time_stamp().value()));
            busy.erase(command.lba);
            free_slots.push_back(index);
            ++out.commands;
            if (!completion.ok()) {
                ++out.errors;
                continue;
            }
            if (command.write || options.null_backend) {
                generations[command.lba] = command.generation;
                continue;
            }
            if (command.generation == 0) {
                std::fill(expected.begin(), expected.end(), std::byte{0}); // never written: zeroes
            } else {
                nvmekit_programs::fill_pattern(expected, command.lba, command.generation);
            }
            const auto data = host.memory().bytes(command.buffer, block_bytes);
            if (!std::equal(data.begin(), data.end(), expected.begin())) {
                ++out.mismatches;
            }
        }
    }
    out.elapsed = sc_core::sc_time_stamp() - start;
}

double microseconds(const sc_core::sc_time& time) { return time.to_seconds() * 1e6; }

} // namespace

// libsystemc's own main() calls sc_main after printing a banner on stderr; this program's main()
// elaborates and runs the platform itself, so sc_main exists only because libsystemc refers to it.
int sc_main(int /*argc*/, char* /*argv*/[]) { return 1; }

namespace {

/// The platform with a device of `Traits` (LT or AT).
template <typename Traits>
int run_platform(const settings& options)
{
    sc_core::sc_report_handler::set_actions("/OSCI/SystemC", sc_core::SC_INFO, sc_core::SC_DO_NOTHING);

    nvmekit::testing::flat_memory memory;
    memory.add_range(memory_base, memory_bytes);
    nvmekit::testing::recording_msix msix;
    nvmekit::testing::manual_clock host_clock; // the driver's bookkeeping; the platform runs on sc_time

    const sysc::host_memory_options memory_options{};
    sysc::host_memory<nvmekit::testing::recording_msix> ram{"ram", memory, msix, memory_options};
    sysc::nvme_device<Traits> device{"nvme"};
    sysc::host_bus bus{"bus", sc_core::sc_time{10, sc_core::SC_US}}; // an MSI wakes it earlier
    sysc::router interconnect{"router"};
    sc_core::sc_signal<bool> intx{"intx"};
    // Every initiator on the router: the host CPU's two sockets and the device's DMA.
    bus.config_socket.bind(interconnect.target_socket);
    bus.bar0_socket.bind(interconnect.target_socket);
    device.dma_socket.bind(interconnect.target_socket);
    // The targets and the address map: host RAM and the MSI window keep their addresses (host
    // memory decodes both), configuration space and BAR0 are rebased to offsets.
    const std::size_t ram_target = interconnect.bind_target(ram.socket);
    const std::size_t config_target = interconnect.bind_target(device.config_socket);
    const std::size_t bar0_target = interconnect.bind_target(device.bar0_socket);
    interconnect.map(ram_target, memory_base, memory_bytes, memory_base);
    interconnect.map(ram_target, memory_options.msi_base, memory_options.msi_size, memory_options.msi_base);
    interconnect.map(config_target, config_base, config_bytes);
    interconnect.map(bar0_target, bar0_base, device.controller().bar0_size());
    bus.use_system_addresses(config_base);
    device.intx.bind(intx);
    bus.wake_on(ram.msi_event());

    if (options.null_backend) {
        device.subsystem().add_namespace(nvmekit::null_backend{namespace_bytes},
                                         {.lba_format = lba_format_4k});
    } else if (options.untimed) {
        device.subsystem().add_namespace(nvmekit::ram_backend{namespace_bytes},
                                         {.lba_format = lba_format_4k});
    } else {
        auto& ns = device.subsystem().add_namespace(
            timed_ram{nvmekit::ram_backend{namespace_bytes},
                      nvmekit::timing::ssd_model{nvmekit::timing::femu_defaults()}, device.clock(), 1024},
            {.lba_format = lba_format_4k});
        const timed_ram* timed = ns.backend().template get_if<timed_ram>();
        device.set_next_due([timed] { return timed->next_due(); });
    }

    report result;
    sysc::host_program host_program{"host", [&] {
                                        bus.enumerate(bar0_base);
                                        host_type host{bus, memory, host_clock, msix};
                                        host.bring_up({.io_queue_pairs = 1, .io_entries = 256});
                                        run_workload(host, options, result);
                                        host.shut_down();
                                    }};

    const auto wall_start = std::chrono::steady_clock::now();
    sc_core::sc_start();
    const std::chrono::duration<double> wall = std::chrono::steady_clock::now() - wall_start;
    if (host_program.failure()) {
        try {
            std::rethrow_exception(host_program.failure());
        } catch (const std::exception& error) {
            std::fprintf(stderr, "nvmekit-systemc-platform: %s\n", error.what());
            return 1;
        }
    }

    std::vector<sc_core::sc_time> sorted = result.latencies;
    std::sort(sorted.begin(), sorted.end());
    const auto percentile = [&](double p) {
        if (sorted.empty()) {
            return 0.0;
        }
        const auto rank =
            static_cast<std::size_t>(std::llround(p / 100.0 * static_cast<double>(sorted.size() - 1)));
        return microseconds(sorted[rank]);
    };
    const double simulated_seconds = result.elapsed.to_seconds();
    std::printf("workload: %llu random 4 KiB reads and writes, queue depth %u, seed %llu, %s\n",
                static_cast<unsigned long long>(result.commands), options.queue_depth,
                static_cast<unsigned long long>(options.seed),
                options.approximately_timed ? "approximately timed" : "loosely timed");
    if (simulated_seconds > 0) {
        std::printf("simulated: %.3f ms, %.0f IOPS\n", simulated_seconds * 1e3,
                    static_cast<double>(result.commands) / simulated_seconds);
    } else {
        std::printf("simulated: no time passed (no latency anywhere), IOPS not defined\n");
    }
    std::printf("latency (us): p50 %.1f  p90 %.1f  p99 %.1f  p99.9 %.1f  max %.1f\n", percentile(50),
                percentile(90), percentile(99), percentile(99.9), percentile(100));
    std::printf("errors %llu, mismatches %llu, trace digest %016llx\n",
                static_cast<unsigned long long>(result.errors),
                static_cast<unsigned long long>(result.mismatches),
                static_cast<unsigned long long>(result.digest));
    std::printf("router: %zu windows, %llu address errors, %zu transactions left in flight\n",
                interconnect.windows().size(), static_cast<unsigned long long>(interconnect.address_errors()),
                interconnect.routes_in_flight());
    std::printf("wall clock: %.3f s, %.0f simulated commands per second\n", wall.count(),
                wall.count() > 0 ? static_cast<double>(result.commands) / wall.count() : 0.0);
    return result.errors == 0 && result.mismatches == 0 && result.commands == options.commands &&
                   interconnect.address_errors() == 0
               ? 0
               : 1;
}

} // namespace

int main(int argc, char** argv)
{
    const settings options = parse(argc, argv);
    try {
        return options.approximately_timed ? run_platform<sysc::at_device_traits>(options)
                                           : run_platform<sysc::device_traits>(options);
    } catch (const std::exception& error) {
        std::fprintf(stderr, "nvmekit-systemc-platform: %s\n", error.what());
        return 1;
    }
}
