// nvmekit-serve: an emulated NVMe PCI function served over vfio-user, for QEMU (10.1 and later)
// and other vfio-user clients, and the same subsystem over NVMe/TCP.
//
//     nvmekit-serve --vfio-user /tmp/nvme.sock --ram 1G
//     nvmekit-serve --vfio-user /tmp/nvme.sock --ram 1G --file /var/tmp/disk.img --log debug
//     nvmekit-serve --tcp 127.0.0.1:4420 --tcp [::1]:4420 --ram 1G
//
// Each --tcp ADDR:PORT (repeatable; an IPv6 address in brackets) listens for NVMe/TCP hosts
// (nvme connect -t tcp -a ADDR -s PORT -n NQN): every admin Connect creates a controller of the
// subsystem, with a CNTLID the subsystem assigns; --host NQN (repeatable) admits only those hosts.
// Each listener also serves the discovery controller (nvme discover -t tcp -a ADDR -s PORT), whose
// log lists the subsystem at that listener to the hosts it admits.
// At least one of --vfio-user and --tcp is needed; all are served by the one thread.
//
// Each --ram SIZE or --file PATH adds a namespace (NSID 1, 2, ... in order); with none, one 1 GiB
// RAM namespace is served. Identify Controller NN is the number of namespaces. --capacity SIZE
// gives the subsystem that much NVM capacity (Identify Controller TNVMCAP): the namespaces above
// take theirs from it, and the host creates sparse RAM namespaces from the rest with Namespace
// Management (nvme create-ns, attach-ns, detach-ns, delete-ns), up to --max-namespaces NSIDs
// (default 16 with --capacity). --queues, --queue-depth and --mdts lower what the host is offered
// below the build's limits; --groups spreads the I/O queues over poll groups, processed on the
// server's thread, or with --group-threads each on a thread of its own (sleeping when idle, woken
// by doorbells; --busy-poll never sleeps), apart from the thread that serves the vfio-user messages
// and admin commands; --cpus LIST (comma separated) pins group i to the i-th CPU of the list, cyclically.
// With --group-threads each --tcp listener also spreads its I/O queues' connections over --groups
// connection groups, each on a thread of its own (the listener's thread keeps accepting, Connects,
// admin and discovery queues); TCP listeners added through -r/-c are served by one thread.
// --mapped-doorbells offers BAR0's doorbell page as a sparse-mmap area in shared memory (QEMU maps
// it; a doorbell is then a store, no message), which the server's thread polls without sleeping
// while a client is connected; clients that do not map it keep writing doorbells by message.
// --io chooses how file namespaces do their I/O: psync (the default, file_backend: pread/pwrite inside the
// command) or uring (uring_backend: io_uring, completing in the server's poll loop, which then polls without
// sleeping while I/O is outstanding; built when liburing is found). --timing simple|ssd[:KEY=VALUE,...] wraps
// every namespace's backend (and those Namespace Management creates) in a timed_backend on the server's
// wall clock, the ssd model starting from FEMU's defaults (the keys are in the usage text); the loop then
// polls without sleeping while a timed request is held, so none completes late (not with --group-threads,
// whose submissions would not wake it). SIGINT or SIGTERM shut the
// server down cleanly (file backends are synced). Nothing a client sends ends the program.
//
// Identity: unless --nqn, --serial or --cntlid give them, the subsystem NQN, the serial number and
// the vfio-user controller's ID are derived from the socket path (made absolute; without
// --vfio-user, the first --tcp listener) and /etc/machine-id, so two servers on one machine differ
// (a host given both keeps them and their namespaces apart) and a server restarted on the same
// socket is the same device again; the namespaces' NGUID and EUI-64 follow the NQN. The PCI IDs default to
// vendor F0E5h, which no vendor holds (pci::unassigned_vendor_id), device 0A0Ah; --vendor-id, --device-id,
// --subsystem-vendor-id and
// --subsystem-id set them (hexadecimal).
//
// --trace prints the controller's trace events (nvmekit/contracts/tracer.hpp) through spdlog: every host
// mistake at debug level, each step of every command at trace level; the log level becomes trace
// unless --log says otherwise (--trace --log debug: the host mistakes alone). Without --trace the
// controller is built with the null tracer, so tracing costs nothing.
//
// Management (built when nlohmann-json is found): -r/--rpc-socket PATH serves SPDK's JSON-RPC
// methods (rpc_get_methods, spdk_get_version, framework_*, bdev_*, nvmf_*) on a Unix socket, so
// SPDK's scripts/rpc.py -s PATH manages the target; -c/--json FILE loads a configuration in SPDK's
// format (what rpc.py save_config writes) at start and refuses to start when a call in it fails.
// Without --vfio-user and --tcp the program serves the management socket alone, by default at
// $XDG_RUNTIME_DIR/nvmekit.sock when that is the absolute path of a directory of the user's, else
// at /run/nvmekit.sock for root; for another user without one, -r PATH is required (never a
// world-writable directory such as /var/tmp: rpc::default_socket_path). A VFIOUSER listener added
// through it (nvmf_subsystem_add_listener) starts an emulated function on the socket `cntrl` in the
// listener's directory, with a controller of its subsystem; a TCP listener (nvmf_create_transport
// -t TCP first) listens on its address and port for NVMe/TCP hosts, of every subsystem that adds
// it, with a discovery controller listing them, to the hosts each subsystem allows
// (nvmf_subsystem_add_host, allow_any_host; a host removed loses its controllers). Removing a
// listener (or the subsystem) ends its controllers; namespaces added or removed meanwhile reach
// every controller of the subsystem.
// With -r or -c, the command line's target is management's too: each --ram is a malloc bdev
// Malloc<i>, each --file an aio bdev AIO<i>, the namespaces are on them, the subsystem, its hosts
// (--host, else any) and its --tcp listeners are recorded with VFIOUSER and TCP transports of
// the command line's limits, so nvmf_get_subsystems and save_config show them and namespaces,
// hosts and listeners change through the socket (namespaces not with --group-threads). The
// --vfio-user function itself is no listener of the record (SPDK's VFIOUSER listener is a
// directory holding `cntrl`), and the command line's subsystem cannot be deleted.

#include "command_line.hpp"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

#include <poll.h>

#include <spdlog/spdlog.h>

#include <nvmekit/backends/file_backend.hpp>
#ifdef NVMEKIT_SERVE_HAVE_URING
#include <nvmekit/backends/uring_backend.hpp>
#endif
#include <nvmekit/backends/ram_backend.hpp>
#include <nvmekit/backends/timed_backend.hpp>
#include <nvmekit/contracts/clock.hpp>
#include <nvmekit/controller.hpp>
#include <nvmekit/pci/config_space.hpp>
#include <nvmekit/spdlog_tracer.hpp>
#include <nvmekit/spec/fabrics.hpp>
#include <nvmekit/storage/instance_identity.hpp>
#include <nvmekit/timing/simple_model.hpp>
#include <nvmekit/timing/ssd_model.hpp>
#include <nvmekit/transport/eventfd_interrupts.hpp>
#include <nvmekit/transport/mapped_memory.hpp>
#include <nvmekit/transport/tcp/target.hpp>
#include <nvmekit/transport/vfio_user/server.hpp>
#ifdef NVMEKIT_SERVE_HAVE_RPC
#include <nvmekit/rpc/bdev_methods.hpp>
#include <nvmekit/rpc/framework_methods.hpp>
#include <nvmekit/rpc/json_config.hpp>
#include <nvmekit/rpc/nvmf_methods.hpp>
#include <nvmekit/rpc/server.hpp>

#include "served_target.hpp"
#endif

namespace {

struct serve_traits : nvmekit::default_traits {
    using dma = nvmekit::transport::mapped_memory;
    using interrupts = nvmekit::transport::eventfd_interrupts;
    using clock = nvmekit::steady_clock;
    static constexpr nvmekit::limits limits{
        .io_queues = 64, .queue_entries = 4096, .mdts = 5, .msix_vectors = 65, .aerl = 3};
};
/// The controllers NVMe/TCP hosts create: serve_traits' limits but for 127 I/O queues, what
/// SPDK's TCP transport grants by default (max_qpairs_per_ctrlr 128).
/// Multi-threaded, for --group-threads' connection groups (without them it runs as one thread).
struct tcp_serve_traits : nvmekit::transport::tcp::target_traits {
    using threading = nvmekit::multi_threaded;
    static constexpr nvmekit::limits limits{
        .io_queues = 127, .queue_entries = 4096, .mdts = 5, .msix_vectors = 128, .aerl = 3};
};
using tcp_target = nvmekit::transport::tcp::target<tcp_serve_traits>;
/// serve_traits with every trace event printed (--trace).
struct traced_serve_traits : serve_traits {
    using tracer = nvmekit::spdlog_tracer;
};
/// `Traits` with poll groups on threads of their own (--group-threads).
template <typename Traits>
struct group_thread_traits : Traits {
    using threading = nvmekit::multi_threaded;
};

std::atomic<bool> stop_requested{false};

extern "C" void on_signal(int /*signal*/) { stop_requested.store(true); }

/// The server's wall clock: the controllers' and the timed backends' (--timing).
nvmekit::steady_clock server_clock;

struct namespace_spec {
    bool file = false;
    std::uint64_t bytes = 0;
    std::string path;
};

/// --timing: the model that times every namespace's requests.
struct timing_spec {
    enum class kind { none, simple, ssd };
    kind model = kind::none;
    nvmekit::timing::simple_parameters simple{};
    nvmekit::timing::ssd_parameters ssd = nvmekit::timing::femu_defaults();
    /// Requests a namespace holds at once; more complete with Internal Error.
    std::size_t max_outstanding = 65536;
};

/// One --tcp listener.
struct tcp_listener {
    std::string address;
    std::uint16_t port = 0;
};

struct options {
    std::string socket;
    std::vector<tcp_listener> tcp;
    std::vector<std::string> hosts; ///< --host: the host NQNs NVMe/TCP accepts (none: any)
    std::vector<namespace_spec> namespaces;
    std::optional<std::string> nqn;             ///< empty: derived (derive_instance_identity)
    std::optional<std::string> serial;          ///< empty: derived
    std::optional<std::uint16_t> controller_id; ///< empty: derived
    std::uint16_t vendor_id = nvmekit::pci::unassigned_vendor_id;
    std::uint16_t device_id = 0x0a0a;
    std::uint16_t subsystem_vendor_id = nvmekit::pci::unassigned_vendor_id;
    std::uint16_t subsystem_id = 0x0000;
    std::uint8_t lba_format = 0;
    bool direct = false;
    bool uring = false;            ///< file namespaces on uring_backend (--io uring) instead of file_backend
    timing_spec timing;            ///< --timing
    std::uint16_t queues = 0;      ///< I/O queue pairs offered (0: the build's limit, 64)
    std::uint32_t queue_depth = 0; ///< entries per queue (0: the build's limit, 4096)
    std::uint8_t mdts = 0;         ///< MDTS (0: the build's limit, 5 = 128 KiB)
    std::uint16_t groups = 1;      ///< poll groups the I/O queues are spread over
    bool group_threads = false;    ///< each poll group on a thread of its own (--group-threads)
    bool busy_poll = false;        ///< group threads never sleep (--busy-poll)
    std::vector<unsigned> cpus;    ///< CPUs the group threads are pinned to (--cpus)
    bool mapped_doorbells = false; ///< BAR0's doorbells offered as shared memory (--mapped-doorbells)
    std::uint64_t capacity = 0;    ///< NVM capacity for Namespace Management (0: none beyond the namespaces)
    /// NSIDs (Identify Controller NN; 0: the namespaces' number, 16 with --capacity)
    std::uint32_t max_namespaces = 0;
    std::optional<std::string> log_level; ///< empty: info, or trace with --trace
    bool trace = false;
    std::optional<std::string> rpc_socket;  ///< -r: the JSON-RPC socket
    std::optional<std::string> json_config; ///< -c: a configuration to load at start
};

constexpr nvmekit_programs::program serve_program{
    "nvmekit-serve",
    "nvmekit-serve [--vfio-user SOCKET] [--tcp ADDR:PORT]... [--host NQN]... [--ram SIZE]...\n"
    "                     [--file PATH]... [--4k] [--direct]\n"
    "                     [--io psync|uring] [--timing simple|ssd[:KEY=VALUE,...]]\n"
    "                     [--capacity SIZE] [--max-namespaces 1-1024]\n"
    "                     [--queues 1-64] [--queue-depth 2-4096] [--mdts 1-5] [--groups 1-64]\n"
    "                     [--group-threads] [--busy-poll] [--cpus LIST] [--mapped-doorbells]\n"
    "                     [--nqn NQN] [--serial SN] [--cntlid 1-65519] [--vendor-id HEX]\n"
    "                     [--device-id HEX] [--subsystem-vendor-id HEX] [--subsystem-id HEX]\n"
    "                     [--log LEVEL] [--trace] [--help] [--version]\n"
    "                     [-r|--rpc-socket PATH] [-c|--json FILE]\n"
    "  SIZE takes K, M or G; with no namespace option one 1G RAM namespace is served.\n"
    "  --capacity gives the subsystem NVM capacity from which the host creates RAM namespaces\n"
    "  (nvme create-ns); the namespaces given take theirs from it too.\n"
    "  The NQN, serial number and CNTLID default to values derived from the socket path and\n"
    "  /etc/machine-id: unique per socket, the same after a restart. PCI IDs default to vendor\n"
    "  F0E5 (held by no vendor), device 0A0A, subsystem F0E5:0000.\n"
    "  --io: how file namespaces do I/O: psync (pread/pwrite, the default) or uring (io_uring).\n"
    "  --timing completes each namespace's requests at a timing model's wall-clock times:\n"
    "    simple: fixed latencies (all 0 unless given), keys read-us, write-us, flush-us,\n"
    "      other-us (Write Zeroes, Deallocate), bytes-per-second (0: no transfer time),\n"
    "      parallelism (requests served at once, default 1);\n"
    "    ssd: NAND with FEMU's defaults (8 channels x 8 LUNs, 40 us read, 200 us program,\n"
    "      2 ms erase), keys channels, luns, planes, blocks, pages, page-bytes, read-us,\n"
    "      program-us, erase-us, channel-bytes-per-second, host-bytes-per-second (0: no\n"
    "      transfer time), write-buffer (SIZE, 0: writes complete when programmed);\n"
    "    both: max-outstanding (requests a namespace holds, default 65536; more fail).\n"
    "    Example: --timing ssd:channels=16,program-us=500,write-buffer=64M. The bdevs\n"
    "    created through -r/-c are not timed; not with --group-threads.\n"
    "  --log LEVEL: trace, debug, info (the default), warn (or warning), err (or error),\n"
    "  critical or off.\n"
    "  --trace prints the controller's trace events: host mistakes (err_*) at debug level, each\n"
    "  step of every command at trace level; it sets --log trace unless --log is given.\n"
    "  -r serves SPDK's JSON-RPC methods on a Unix socket (scripts/rpc.py -s PATH); -c loads a\n"
    "  configuration in SPDK's JSON format at start. Without --vfio-user or --tcp only the\n"
    "  management socket is served, by default $XDG_RUNTIME_DIR/nvmekit.sock (an absolute\n"
    "  path of a directory of the user's), else /run/nvmekit.sock for root; otherwise give -r.\n"
    "  --tcp serves NVMe/TCP hosts on ADDR:PORT (IPv6 as [ADDR]:PORT), as well as or instead of\n"
    "  --vfio-user; give it once per listener. --host NQN (repeatable) lets only those hosts\n"
    "  connect over NVMe/TCP; without it any host may. With --group-threads the I/O queues'\n"
    "  connections of each --tcp listener are spread over --groups threads too.\n"};

[[noreturn]] void usage(const std::string& problem) { nvmekit_programs::bad_usage(serve_program, problem); }

/// A decimal value from `low` to `high`; anything else is a usage error naming the option.
std::uint64_t parse_decimal64(std::string_view option, std::string_view text, std::uint64_t low,
                              std::uint64_t high)
{
    std::uint64_t value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc{} || end != text.data() + text.size() || text.empty() || value < low ||
        value > high) {
        usage(std::string{option} + ": not a number from " + std::to_string(low) + " to " +
              std::to_string(high) + ": " + std::string{text});
    }
    return value;
}

std::uint32_t parse_decimal(std::string_view option, std::string_view text, std::uint32_t low,
                            std::uint32_t high)
{
    return static_cast<std::uint32_t>(parse_decimal64(option, text, low, high));
}

/// A 16-bit hexadecimal value ("1b36", "0x1b36"), `low` to `high`.
std::uint16_t parse_hex16(std::string_view option, std::string_view text, unsigned low = 0,
                          unsigned high = 0xffff)
{
    if (text.starts_with("0x") || text.starts_with("0X")) {
        text.remove_prefix(2);
    }
    unsigned value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value, 16);
    if (error != std::errc{} || end != text.data() + text.size() || text.empty() || value < low ||
        value > high) {
        char range[32];
        std::snprintf(range, sizeof range, "%04X to %04X", low, high);
        usage(std::string{option} + ": not a hexadecimal value from " + range + ": " + std::string{text});
    }
    return static_cast<std::uint16_t>(value);
}

/// The machine's ID (/etc/machine-id, else D-Bus's copy), or empty when there is none.
std::string machine_id()
{
    for (const char* path : {"/etc/machine-id", "/var/lib/dbus/machine-id"}) {
        std::ifstream file{path};
        std::string id;
        if (file && std::getline(file, id) && !id.empty()) {
            return id;
        }
    }
    return {};
}

/// SIZE: bytes, or with K, M, G or T; `option` (if any) names it in the usage error.
std::uint64_t parse_size(std::string_view text, std::string_view option = {})
{
    const std::string problem = (option.empty() ? "" : std::string{option} + ": ") + "not a size: ";
    std::uint64_t value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc{} || value == 0) {
        usage(problem + std::string{text});
    }
    const std::string_view suffix{end, static_cast<std::size_t>(text.data() + text.size() - end)};
    if (suffix.empty()) {
        return value;
    }
    const unsigned shift = suffix == "K" || suffix == "k"   ? 10
                           : suffix == "M" || suffix == "m" ? 20
                           : suffix == "G" || suffix == "g" ? 30
                           : suffix == "T" || suffix == "t" ? 40
                                                            : 64;
    if (shift == 64 || value > (std::uint64_t{1} << (63 - shift))) {
        usage(problem + std::string{text});
    }
    return value << shift;
}

/// `text` when it is an NQN as the management methods accept it (spec::is_valid_nqn), else a
/// usage error naming `option`.
std::string checked_nqn(std::string_view option, std::string text)
{
    if (!nvmekit::spec::is_valid_nqn(text)) {
        usage(std::string{option} + ": '" + text + "' is not an NQN (\"nqn.\" then a name, at most " +
              std::to_string(nvmekit::spec::nqn_max_length) + " bytes)");
    }
    return text;
}

/// Whether two socket paths name the same file: compared made absolute, with the symbolic links
/// of their existing directories resolved.
bool same_path(const std::string& a, const std::string& b)
{
    const auto resolved = [](const std::string& path) {
        std::error_code error;
        auto absolute = std::filesystem::absolute(path, error);
        if (error) {
            return std::filesystem::path{path}.lexically_normal();
        }
        auto canonical = std::filesystem::weakly_canonical(absolute, error);
        return error ? absolute.lexically_normal() : canonical;
    };
    return resolved(a) == resolved(b);
}

/// ADDR:PORT, or [ADDR]:PORT for IPv6.
tcp_listener parse_listener(const std::string& text)
{
    const auto colon = text.rfind(':');
    if (colon == std::string::npos || colon == 0) {
        usage("--tcp is ADDR:PORT: " + text);
    }
    std::string address = text.substr(0, colon);
    if (address.size() >= 2 && address.front() == '[' && address.back() == ']') {
        address = address.substr(1, address.size() - 2);
    }
    return {address, static_cast<std::uint16_t>(
                         parse_decimal("--tcp port", std::string_view{text}.substr(colon + 1), 1, 65535))};
}

/// --timing MODEL[:KEY=VALUE,...] (the keys in the usage text). An unknown model or key, a value
/// out of its range or parameters the model refuses are usage errors naming them.
timing_spec parse_timing(const std::string& text)
{
    timing_spec t;
    const std::size_t colon = text.find(':');
    const std::string name = text.substr(0, colon);
    if (name == "simple") {
        t.model = timing_spec::kind::simple;
    } else if (name == "ssd") {
        t.model = timing_spec::kind::ssd;
    } else {
        usage("--timing is simple or ssd, then :KEY=VALUE,... if any: " + text);
    }
    const std::string keys = colon == std::string::npos ? std::string{} : text.substr(colon + 1);
    for (std::size_t start = 0; colon != std::string::npos && start <= keys.size();) {
        const std::size_t comma = std::min(keys.find(',', start), keys.size());
        const std::string item = keys.substr(start, comma - start);
        start = comma + 1;
        const std::size_t equals = item.find('=');
        if (equals == std::string::npos || equals == 0) {
            usage(fmt::format("--timing {}: not KEY=VALUE: '{}'", name, item));
        }
        const std::string key = item.substr(0, equals);
        const std::string_view value = std::string_view{item}.substr(equals + 1);
        const std::string option = fmt::format("--timing {} {}", name, key);
        const auto number = [&](std::uint64_t low, std::uint64_t high) {
            return parse_decimal64(option, value, low, high);
        };
        // Latencies in microseconds, up to 1000 s; rates in bytes per second, up to 1 PB/s.
        const auto microseconds = [&] {
            return std::chrono::nanoseconds{std::chrono::microseconds{number(0, 1'000'000'000)}};
        };
        constexpr std::uint64_t max_rate = 1'000'000'000'000'000;
        auto& simple = t.simple;
        auto& ssd = t.ssd;
        auto& geometry = t.ssd.geometry;
        const bool is_ssd = t.model == timing_spec::kind::ssd;
        if (key == "max-outstanding") {
            t.max_outstanding = number(1, std::uint64_t{1} << 20);
        } else if (!is_ssd && key == "read-us") {
            simple.read_latency = microseconds();
        } else if (!is_ssd && key == "write-us") {
            simple.write_latency = microseconds();
        } else if (!is_ssd && key == "flush-us") {
            simple.flush_latency = microseconds();
        } else if (!is_ssd && key == "other-us") {
            simple.other_latency = microseconds();
        } else if (!is_ssd && key == "bytes-per-second") {
            simple.transfer_bytes_per_second = number(0, max_rate);
        } else if (!is_ssd && key == "parallelism") {
            simple.parallelism = number(1, 65536);
        } else if (is_ssd && key == "channels") {
            geometry.channels = static_cast<std::uint32_t>(number(1, 256));
        } else if (is_ssd && key == "luns") {
            geometry.luns_per_channel = static_cast<std::uint32_t>(number(1, 256));
        } else if (is_ssd && key == "planes") {
            geometry.planes_per_lun = static_cast<std::uint32_t>(number(1, 16));
        } else if (is_ssd && key == "blocks") {
            geometry.blocks_per_plane = static_cast<std::uint32_t>(number(1, std::uint64_t{1} << 20));
        } else if (is_ssd && key == "pages") {
            geometry.pages_per_block = static_cast<std::uint32_t>(number(1, std::uint64_t{1} << 20));
        } else if (is_ssd && key == "page-bytes") {
            geometry.page_bytes = static_cast<std::uint32_t>(number(512, std::uint64_t{1} << 20));
        } else if (is_ssd && key == "read-us") {
            ssd.page_read = microseconds();
        } else if (is_ssd && key == "program-us") {
            ssd.page_program = microseconds();
        } else if (is_ssd && key == "erase-us") {
            ssd.block_erase = microseconds();
        } else if (is_ssd && key == "channel-bytes-per-second") {
            ssd.channel_bytes_per_second = number(0, max_rate);
        } else if (is_ssd && key == "host-bytes-per-second") {
            ssd.host_bytes_per_second = number(0, max_rate);
        } else if (is_ssd && key == "write-buffer") {
            ssd.write_buffer_bytes = value == "0" ? 0 : parse_size(value, option);
        } else {
            usage(fmt::format("--timing {}: unknown key {}", name, key));
        }
    }
    try { // what the model itself refuses (a write buffer smaller than a page)
        if (t.model == timing_spec::kind::simple) {
            static_cast<void>(nvmekit::timing::simple_model{t.simple});
        } else {
            static_cast<void>(nvmekit::timing::ssd_model{t.ssd});
        }
    } catch (const std::invalid_argument& e) {
        usage("--timing " + text + ": " + e.what());
    }
    return t;
}

options parse(int argc, char** argv)
{
    options o;
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        const auto value = [&]() -> std::string {
            if (i + 1 >= argc) {
                usage(std::string{arg} + " needs a value");
            }
            return argv[++i];
        };
        if (arg == "--vfio-user") {
            o.socket = value();
        } else if (arg == "--tcp") {
            o.tcp.push_back(parse_listener(value()));
        } else if (arg == "--host") {
            o.hosts.push_back(checked_nqn(arg, value()));
        } else if (arg == "--ram") {
            o.namespaces.push_back({false, parse_size(value()), {}});
        } else if (arg == "--file") {
            o.namespaces.push_back({true, 0, value()});
        } else if (arg == "--capacity") {
            o.capacity = parse_size(value());
        } else if (arg == "--max-namespaces") {
            o.max_namespaces = parse_decimal(arg, value(), 1, 1024);
        } else if (arg == "--4k") {
            o.lba_format = 2;
        } else if (arg == "--direct") {
            o.direct = true;
        } else if (arg == "--io") {
            const std::string io = value();
            if (io == "uring") {
#ifdef NVMEKIT_SERVE_HAVE_URING
                o.uring = true;
#else
                usage("--io uring: this nvmekit-serve was built without liburing");
#endif
            } else if (io != "psync") {
                usage("--io is psync or uring: " + io);
            }
        } else if (arg == "--timing") {
            o.timing = parse_timing(value());
        } else if (arg == "--queues") {
            o.queues = static_cast<std::uint16_t>(parse_decimal(arg, value(), 1, 64));
        } else if (arg == "--queue-depth") {
            o.queue_depth = parse_decimal(arg, value(), 2, 4096);
        } else if (arg == "--mdts") {
            o.mdts = static_cast<std::uint8_t>(parse_decimal(arg, value(), 1, 5));
        } else if (arg == "--groups") {
            o.groups = static_cast<std::uint16_t>(parse_decimal(arg, value(), 1, 64));
        } else if (arg == "--group-threads") {
            o.group_threads = true;
        } else if (arg == "--mapped-doorbells") {
            o.mapped_doorbells = true;
        } else if (arg == "--busy-poll") {
            o.busy_poll = true;
        } else if (arg == "--cpus") {
            const std::string list = value();
            for (std::size_t start = 0; start <= list.size();) {
                const std::size_t comma = std::min(list.find(',', start), list.size());
                o.cpus.push_back(parse_decimal(arg, list.substr(start, comma - start), 0, CPU_SETSIZE - 1));
                start = comma + 1;
            }
        } else if (arg == "--nqn") {
            o.nqn = checked_nqn(arg, value());
        } else if (arg == "--serial") {
            o.serial = value();
        } else if (arg == "--cntlid") {
            // FFF0h-FFFFh are reserved controller IDs.
            o.controller_id = static_cast<std::uint16_t>(parse_decimal(arg, value(), 1, 0xffef));
        } else if (arg == "--vendor-id") {
            // 0000h and FFFFh read as "no function" (PCI Local Bus 3.0 6.2.1).
            o.vendor_id = parse_hex16(arg, value(), 0x0001, 0xfffe);
        } else if (arg == "--device-id") {
            o.device_id = parse_hex16(arg, value());
        } else if (arg == "--subsystem-vendor-id") {
            o.subsystem_vendor_id = parse_hex16(arg, value());
        } else if (arg == "--subsystem-id") {
            o.subsystem_id = parse_hex16(arg, value());
        } else if (arg == "--log") {
            // The names spdlog knows; it reads any other as "off": refused instead of silencing the log.
            std::string level = value();
            if (spdlog::level::from_str(level) == spdlog::level::off && level != "off") {
                usage("--log is trace, debug, info, warn (or warning), err (or error), critical or off: " +
                      level);
            }
            o.log_level = std::move(level);
        } else if (arg == "--trace") {
            o.trace = true;
        } else if (arg == "-r" || arg == "--rpc-socket") {
            o.rpc_socket = value();
        } else if (arg == "-c" || arg == "--json") {
            o.json_config = value();
        } else if (!nvmekit_programs::standard_option(serve_program, arg)) {
            usage("unknown option " + std::string{arg});
        }
    }
#ifndef NVMEKIT_SERVE_HAVE_RPC
    if (o.rpc_socket || o.json_config) {
        usage("-r and -c: this nvmekit-serve was built without nlohmann-json");
    }
#endif
    if (o.socket.empty() && o.tcp.empty() && !o.rpc_socket && !o.json_config) {
        usage("--vfio-user SOCKET or --tcp ADDR:PORT (or -r/--rpc-socket PATH, -c/--json FILE) is required");
    }
    const bool files = std::any_of(o.namespaces.begin(), o.namespaces.end(),
                                   [](const namespace_spec& ns) { return ns.file; });
    if (o.direct && !files) {
        usage("--direct applies to --file namespaces, and none is given");
    }
    if (o.uring && !files) {
        usage("--io uring applies to --file namespaces, and none is given");
    }
    if (o.rpc_socket && !o.socket.empty() && same_path(*o.rpc_socket, o.socket)) {
        usage("-r and --vfio-user name the same socket: " + o.socket);
    }
    if (o.socket.empty() && o.tcp.empty()) {
        if (!o.namespaces.empty()) {
            usage("--ram and --file need --vfio-user SOCKET or --tcp ADDR:PORT");
        }
#ifdef NVMEKIT_SERVE_HAVE_RPC
        if (!o.rpc_socket) {
            o.rpc_socket = nvmekit::rpc::default_socket_path();
            if (!o.rpc_socket) {
                usage("no management socket: give -r PATH (the default is $XDG_RUNTIME_DIR/nvmekit.sock, "
                      "and XDG_RUNTIME_DIR is not the absolute path of a directory of this user's; "
                      "/run/nvmekit.sock is root's)");
            }
        }
#endif
        return o;
    }
    if (o.namespaces.empty()) {
        o.namespaces.push_back({false, std::uint64_t{1} << 30, {}});
    }
    if (o.max_namespaces == 0) {
        o.max_namespaces = o.capacity != 0
                               ? std::max<std::uint32_t>(16, static_cast<std::uint32_t>(o.namespaces.size()))
                               : static_cast<std::uint32_t>(o.namespaces.size());
    }
    if ((o.busy_poll || !o.cpus.empty()) && !o.group_threads) {
        usage("--busy-poll and --cpus apply to --group-threads");
    }
    if (o.group_threads && o.uring) {
        usage("--group-threads: the io_uring backend is polled by one thread; use --io psync");
    }
    if (o.group_threads && o.timing.model != timing_spec::kind::none) {
        // The server's thread completes the timed requests, and the group threads do not wake it
        // when they submit one: it could sleep past their time.
        usage("--group-threads: timed requests complete on the server's thread; leave out --timing");
    }
    if (o.max_namespaces < o.namespaces.size()) {
        usage("--max-namespaces " + std::to_string(o.max_namespaces) + " is below the " +
              std::to_string(o.namespaces.size()) + " namespaces given");
    }
    return o;
}

/// The backend of a --file namespace: uring_backend with --io uring, else file_backend.
nvmekit::any_backend file_namespace_backend(const std::string& path, const options& o)
{
#ifdef NVMEKIT_SERVE_HAVE_URING
    if (o.uring) {
        return nvmekit::uring_backend{path, {.file = {.direct = o.direct}}};
    }
#endif
    return nvmekit::file_backend{path, {.direct = o.direct}};
}

/// `backend` timed by --timing's model on the server's clock (itself without --timing).
nvmekit::any_backend timed(nvmekit::any_backend backend, const timing_spec& timing)
{
    switch (timing.model) {
    case timing_spec::kind::none: break;
    case timing_spec::kind::simple:
        return nvmekit::timed_backend{std::move(backend), nvmekit::timing::simple_model{timing.simple},
                                      server_clock, timing.max_outstanding};
    case timing_spec::kind::ssd:
        return nvmekit::timed_backend{std::move(backend), nvmekit::timing::ssd_model{timing.ssd},
                                      server_clock, timing.max_outstanding};
    }
    return backend;
}

/// How --timing times the namespaces, for the log.
std::string timing_description(const timing_spec& timing)
{
    switch (timing.model) {
    case timing_spec::kind::none: break;
    case timing_spec::kind::simple: {
        const auto& p = timing.simple;
        return fmt::format(", timed: simple, read {} us, write {} us, flush {} us, other {} us, {} B/s, "
                           "parallelism {}",
                           p.read_latency.count() / 1000, p.write_latency.count() / 1000,
                           p.flush_latency.count() / 1000, p.other_latency.count() / 1000,
                           p.transfer_bytes_per_second, p.parallelism);
    }
    case timing_spec::kind::ssd: {
        const auto& p = timing.ssd;
        const auto& g = p.geometry;
        return fmt::format(", timed: ssd, {} channels x {} LUNs x {} planes, read {} us, program {} us, "
                           "erase {} us, write buffer {} KiB",
                           g.channels, g.luns_per_channel, g.planes_per_lun, p.page_read.count() / 1000,
                           p.page_program.count() / 1000, p.block_erase.count() / 1000,
                           p.write_buffer_bytes >> 10);
    }
    }
    return {};
}

/// The vfio-user servers' log, through spdlog.
void vfio_user_log(nvmekit::transport::vfio_user::server_log_level level, std::string_view text)
{
    using nvmekit::transport::vfio_user::server_log_level;
    switch (level) {
    case server_log_level::debug: spdlog::debug("{}", text); break;
    case server_log_level::info: spdlog::info("{}", text); break;
    case server_log_level::warning: spdlog::warn("{}", text); break;
    }
}

/// The PCI IDs of every function served.
nvmekit::pci::nvme_function_config pci_function(const options& o)
{
    return {.vendor_id = o.vendor_id,
            .device_id = o.device_id,
            .subsystem_vendor_id = o.subsystem_vendor_id,
            .subsystem_id = o.subsystem_id};
}

/// The NVMe/TCP listeners of --tcp, serving `subsystem`.
std::vector<std::unique_ptr<tcp_target>>
listen_tcp(const options& o, nvmekit::subsystem<nvmekit::any_backend>& subsystem, const std::string& nqn)
{
    std::vector<std::unique_ptr<tcp_target>> targets;
    for (const auto& listener : o.tcp) {
        nvmekit::transport::tcp::target_options target_options;
        target_options.address = listener.address;
        target_options.port = listener.port;
        // --queues' default, 64, for NVMe/TCP hosts too.
        target_options.controller = {.io_queues = o.queues != 0 ? o.queues : serve_traits::limits.io_queues,
                                     .queue_entries = o.queue_depth,
                                     .mdts = o.mdts};
        target_options.allowed_hosts = o.hosts;
        if (o.group_threads) {
            // The I/O queues' connections on --groups connection groups, each on a thread
            // (tcp_group_threads); this thread keeps accepting, Connects and admin queues.
            target_options.connection_groups = o.groups;
        }
        targets.push_back(std::make_unique<tcp_target>(subsystem, target_options));
        spdlog::info("serving {} over NVMe/TCP on {}:{}", nqn, listener.address, targets.back()->port());
    }
    return targets;
}

/// With --group-threads: the connection groups of every --tcp listener, each polled by a thread
/// of its own until this goes (before the listeners do).
class tcp_group_threads {
public:
    tcp_group_threads(const options& o, std::vector<std::unique_ptr<tcp_target>>& targets)
    {
        const auto timeout = std::chrono::milliseconds{o.busy_poll ? 0 : 10};
        for (auto& target : targets) {
            for (std::uint16_t i = 0; i < target->connection_group_count(); ++i) {
                threads_.emplace_back([this, target = target.get(), i, timeout] {
                    while (!stop_.load(std::memory_order_acquire)) {
                        target->poll_group(i, timeout);
                    }
                });
            }
        }
        if (!threads_.empty()) {
            spdlog::info("{} NVMe/TCP connection group thread(s){}", threads_.size(),
                         o.busy_poll ? ", busy-polling" : "");
        }
    }
    tcp_group_threads(const tcp_group_threads&) = delete;
    tcp_group_threads& operator=(const tcp_group_threads&) = delete;
    ~tcp_group_threads()
    {
        stop_.store(true, std::memory_order_release);
        for (auto& thread : threads_) {
            thread.join();
        }
    }

private:
    std::atomic<bool> stop_{false};
    std::vector<std::thread> threads_;
};

/// One round of the NVMe/TCP listeners, without waiting.
void poll_tcp(std::vector<std::unique_ptr<tcp_target>>& targets)
{
    for (auto& target : targets) {
        target->poll(std::chrono::milliseconds{0});
    }
}

/// Waits up to `timeout` in one poll(2) for any listener or connection of `targets`, or for
/// `descriptor` (-1: none), and not at all while a target has work: a host on any listener
/// wakes the loop, and idle hosts cost no CPU.
void wait_for_work(std::vector<std::unique_ptr<tcp_target>>& targets, int descriptor,
                   std::chrono::milliseconds timeout)
{
    thread_local std::vector<pollfd> fds;
    fds.clear();
    if (descriptor >= 0) {
        fds.push_back({descriptor, POLLIN, 0});
    }
    for (auto& target : targets) {
        if (target->has_work()) {
            return;
        }
        target->add_pollfds(fds);
    }
    static_cast<void>(::poll(fds.data(), fds.size(), static_cast<int>(timeout.count())));
}

/// Polls `ctrl` until its backend requests have finished (10 s at most): before a namespace is
/// removed, and at shutdown (an io_uring backend's requests take real time).
template <typename Controller>
void finish_backend_requests(Controller& ctrl)
{
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{10};
    while (ctrl.io_outstanding() != 0 && std::chrono::steady_clock::now() < deadline) {
        ctrl.poll();
    }
}

/// What a serving loop runs besides its own work (management's functions and listeners), with
/// how long it may wait for work.
using serve_also = std::function<void(std::chrono::milliseconds)>;

/// Serves `subsystem` over NVMe/TCP alone until SIGINT or SIGTERM, running `also` (the
/// functions added through management) in the same loop.
void serve_tcp(const options& o, nvmekit::subsystem<nvmekit::any_backend>& subsystem, const std::string& nqn,
               const serve_also& also)
{
    auto targets = listen_tcp(o, subsystem, nqn);
    const tcp_group_threads groups{o, targets};
    while (!stop_requested.load()) {
        if (targets.empty() && also) {
            also(std::chrono::milliseconds{100}); // management serves the listeners, and waits
            continue;
        }
        // Management's own functions (vfio-user clients among them) are served in `also`:
        // with them, no wait is longer than a millisecond.
        wait_for_work(targets, -1, std::chrono::milliseconds{also ? 1 : 100});
        poll_tcp(targets);
        if (also) {
            also(std::chrono::milliseconds{0});
        }
    }
    spdlog::info("shutting down");
}

/// Serves `subsystem` until SIGINT or SIGTERM with a vfio-user controller of `Traits`, and over
/// NVMe/TCP when --tcp asks, running `also` (the functions added through management) in the same
/// loop.
template <typename Traits>
void serve(const options& o, nvmekit::subsystem<nvmekit::any_backend>& subsystem, const std::string& nqn,
           const std::string& serial, std::uint16_t controller_id, const serve_also& also,
           std::function<void()>& drain)
{
    using controller_type = nvmekit::controller<Traits>;
    nvmekit::transport::mapped_memory memory;
    nvmekit::transport::eventfd_interrupts interrupts{Traits::limits.msix_vectors};
    controller_type ctrl{memory,
                         interrupts,
                         server_clock,
                         subsystem,
                         {.identity = {.vendor_id = o.vendor_id,
                                       .subsystem_vendor_id = o.subsystem_vendor_id,
                                       .controller_id = controller_id},
                          .io_queues = o.queues,
                          .queue_entries = o.queue_depth,
                          .mdts = o.mdts,
                          .poll_groups = o.groups,
                          .concurrent_poll_groups = o.group_threads}};
    const auto logger = vfio_user_log;
    nvmekit::transport::vfio_user::server<controller_type> server{
        ctrl,
        memory,
        interrupts,
        {.socket_path = o.socket, .function = pci_function(o), .mappable_doorbells = o.mapped_doorbells},
        logger};
    spdlog::info("serving {} on {} (BAR0 {} KiB, {} MSI-X vectors)", nqn, o.socket, ctrl.bar0_size() >> 10,
                 Traits::limits.msix_vectors);
    spdlog::info("identity: serial {}, CNTLID {}, PCI {:04x}:{:04x} subsystem {:04x}:{:04x}", serial,
                 ctrl.controller_id(), o.vendor_id, o.device_id, o.subsystem_vendor_id, o.subsystem_id);
    spdlog::info("attach QEMU 10.1+ with: -object memory-backend-memfd,id=mem,size=<RAM>,share=on "
                 "-machine q35,memory-backend=mem -device '{{\"driver\":\"vfio-user-pci\",\"socket\":"
                 "{{\"path\":\"{}\",\"type\":\"unix\"}}}}'",
                 o.socket);
    if constexpr (Traits::threading::concurrent_groups) {
        // The I/O queues' groups on threads of their own; this thread keeps the vfio-user
        // messages, the admin queue and the backends' completions.
        ctrl.start_poll_groups({.name = "nvmekit-group", .busy_poll = o.busy_poll}, o.cpus);
        spdlog::info("{} poll group thread(s){}", o.groups, o.busy_poll ? ", busy-polling" : "");
    }
    // Management removes a namespace only once this controller holds no backend request.
    drain = [&ctrl] { finish_backend_requests(ctrl); };
    auto targets = listen_tcp(o, subsystem, nqn);
    const tcp_group_threads tcp_groups{o, targets};
    while (!stop_requested.load()) {
        // Requests in an asynchronous backend (--io uring) complete only when the controller
        // polls it: no sleeping while any is outstanding. Mapped doorbells are stores that wake
        // nothing: polled while a client is connected. Management's functions (`also`) are
        // served a millisecond apart at most. Otherwise the loop sleeps in poll(2) on the
        // vfio-user socket and every NVMe/TCP listener and connection at once.
        const int timeout = ctrl.io_outstanding() != 0 || (o.mapped_doorbells && server.connected()) ? 0
                            : (server.connected() || also)                                           ? 1
                                                                                                     : 100;
        if (targets.empty()) {
            server.run_once(std::chrono::milliseconds{timeout});
        } else {
            wait_for_work(targets, server.descriptor(), std::chrono::milliseconds{timeout});
            server.run_once(std::chrono::milliseconds{0});
        }
        if (also) {
            also(std::chrono::milliseconds{0});
        }
        poll_tcp(targets);
    }
    spdlog::info(
        "shutting down: {} client(s), {} messages, {} error replies, {} doorbells from the mapped page",
        server.statistics().clients, server.statistics().messages, server.statistics().error_replies,
        server.statistics().mapped_doorbells);
    // Backend requests still in flight finish first (an io_uring backend's take real time).
    finish_backend_requests(ctrl);
    ctrl.stop_poll_groups();
    drain = [] {};
}

#ifdef NVMEKIT_SERVE_HAVE_RPC
/// SPDK's management interface: the bdevs and NVMe-oF target it records, the methods on them, a
/// JSON-RPC server for them when -r is given.
class management {
public:
    explicit management(const options& o) : served_{target_, pci_function(o), vfio_user_log}
    {
        namespace rpc = nvmekit::rpc;
        rpc::add_framework_methods(methods_, {.subsystems = {{"bdev", {}}, {"nvmf", {"bdev"}}}});
        rpc::add_bdev_methods(methods_, bdevs_);
        rpc::add_nvmf_methods(methods_, bdevs_, target_, served_.hooks());
        rpc::add_config_methods(methods_, bdevs_, target_);
        if (o.json_config) {
            std::ifstream file{*o.json_config};
            if (!file) {
                throw std::runtime_error("-c " + *o.json_config + ": cannot be read");
            }
            nlohmann::json config;
            try {
                config = nlohmann::json::parse(file);
            } catch (const nlohmann::json::exception& e) {
                throw std::runtime_error("-c " + *o.json_config + ": " + e.what());
            }
            rpc::load_config(methods_, config);
            spdlog::info("loaded {}: {} bdev(s), {} subsystem(s)", *o.json_config, bdevs_.size(),
                         target_.subsystems().size());
        }
        if (o.rpc_socket) {
            server_.emplace(methods_, rpc::server_options{.socket_path = *o.rpc_socket},
                            [](std::string_view text) { spdlog::debug("rpc: {}", text); });
            server_->start();
            spdlog::info("JSON-RPC on {}", *o.rpc_socket);
        }
    }
    management(const management&) = delete;
    management& operator=(const management&) = delete;
    ~management()
    {
        served_.close();
        if (server_) {
            server_->stop();
        }
    }

    /// Serves the functions added through management once; waits up to `idle_wait` when none
    /// is busy.
    void run_once(std::chrono::milliseconds idle_wait) { served_.run_once(idle_wait); }

    /// A bdev for the command line's namespace `index` (Malloc<index> for --ram, AIO<index> for
    /// --file) on `backend`, in blocks of `block_size` bytes; the namespace is then made on the
    /// returned backend, so the bdev is the one management reports and counts.
    nvmekit::any_backend command_line_bdev(const namespace_spec& ns, std::size_t index,
                                           nvmekit::any_backend backend, std::uint32_t block_size)
    {
        const std::uint64_t num_blocks = backend.capacity_bytes() / block_size;
        nlohmann::json driver = nlohmann::json::object();
        if (ns.file) {
            driver = {{"aio",
                       {{"filename", ns.path},
                        {"block_size_override", true},
                        {"readonly", false},
                        {"fallocate", false},
                        {"nowait", false}}}};
        }
        auto device = bdevs_.add({.name = (ns.file ? "AIO" : "Malloc") + std::to_string(index),
                                  .product_name = ns.file ? "AIO disk" : "Malloc disk",
                                  .module = ns.file ? "aio" : "malloc",
                                  .block_size = block_size,
                                  .num_blocks = num_blocks,
                                  .driver_specific = std::move(driver)},
                                 std::move(backend));
        devices_.push_back(device);
        return nvmekit::any_backend{nvmekit::rpc::bdev_backend{std::move(device)}};
    }

    /// Records the command line's target (its transports, the subsystem with its namespaces on the
    /// bdevs command_line_bdev() made, its hosts and its TCP listeners) so management reports,
    /// changes and saves it as it does the targets it builds, and serves its TCP listeners. The
    /// --vfio-user function stays the command line's: SPDK's VFIOUSER listener is a directory
    /// holding the socket `cntrl`, which an arbitrary socket path is not, so it is no listener of
    /// the record. `drain` lets the command line's controller finish its backend requests before
    /// a namespace is removed; with `namespaces_fixed` (poll groups on threads of their own) the
    /// namespaces do not change through management.
    void adopt_command_line(const options& o, nvmekit::subsystem<nvmekit::any_backend>& subsystem,
                            std::function<void()> drain, bool namespaces_fixed)
    {
        namespace rpc = nvmekit::rpc;
        constexpr nvmekit::limits limits = serve_traits::limits;
        const std::uint8_t mdts = o.mdts != 0 ? o.mdts : limits.mdts;
        const auto transport = [&](const char* trtype, std::uint32_t in_capsule) {
            if (target_.transport(trtype)) {
                return; // the configuration made it
            }
            auto made = rpc::default_transport(trtype);
            made.max_queue_depth = o.queue_depth != 0 ? o.queue_depth : limits.queue_entries;
            made.max_io_qpairs_per_ctrlr = o.queues != 0 ? o.queues : limits.io_queues;
            made.max_io_size = std::uint32_t{4096} << mdts;
            made.io_unit_size = made.max_io_size;
            made.in_capsule_data_size = in_capsule;
            if (made.trtype == "VFIOUSER") {
                made.disable_mappable_bar0 = !o.mapped_doorbells;
            }
            target_.add_transport(made);
        };
        if (!o.socket.empty()) {
            transport("VFIOUSER", 0);
        }
        if (!o.tcp.empty()) {
            transport("TCP", nvmekit::transport::tcp::target_limits{}.io_in_capsule_data);
        }
        const auto& identity = subsystem.identity();
        target_.add_subsystem({.nqn = identity.nqn,
                               .serial_number = identity.serial_number,
                               .model_number = identity.model_number,
                               .max_namespaces = subsystem.options().max_namespaces,
                               .allow_any_host = o.hosts.empty()});
        for (const auto& host : o.hosts) {
            target_.add_host(identity.nqn, host);
        }
        for (std::size_t i = 0; i < devices_.size(); ++i) {
            const auto nsid = static_cast<std::uint32_t>(i + 1);
            const auto& ids = subsystem.find(nsid)->identifiers();
            target_.add_namespace(identity.nqn, {.nsid = nsid,
                                                 .device = devices_[i],
                                                 .uuid = ids.uuid,
                                                 .nguid = ids.nguid,
                                                 .eui64 = ids.eui64});
        }
        for (const auto& listener : o.tcp) {
            target_.add_listener(identity.nqn,
                                 {.trtype = "TCP",
                                  .adrfam = listener.address.find(':') != std::string::npos ? "IPv6" : "IPv4",
                                  .traddr = listener.address,
                                  .trsvcid = std::to_string(listener.port)});
        }
        served_.adopt(*target_.subsystem(identity.nqn), subsystem, std::move(drain), !namespaces_fixed);
    }

private:
    nvmekit::rpc::registry methods_;
    nvmekit::rpc::bdev_registry bdevs_;
    nvmekit::rpc::nvmf_registry target_;
    nvmekit_serve::served_target<serve_traits, tcp_serve_traits> served_;
    std::optional<nvmekit::rpc::server> server_;
    /// The command line's bdevs, in namespace order.
    std::vector<std::shared_ptr<nvmekit::rpc::bdev>> devices_;
};
#endif

} // namespace

int main(int argc, char** argv)
{
    const options o = parse(argc, argv);
    spdlog::set_level(spdlog::level::from_str(o.log_level.value_or(o.trace ? "trace" : "info")));
    spdlog::set_pattern("[%H:%M:%S.%e] [%^%l%$] %v");
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
    std::signal(SIGPIPE, SIG_IGN);

#ifdef NVMEKIT_SERVE_HAVE_RPC
    std::optional<management> managed;
    try {
        if (o.rpc_socket || o.json_config) {
            managed.emplace(o);
        }
    } catch (const std::exception& e) {
        spdlog::error("{}", e.what());
        return 1;
    }
    if (o.socket.empty() && o.tcp.empty()) {
        try {
            while (!stop_requested.load()) {
                managed->run_once(std::chrono::milliseconds{100});
            }
        } catch (const std::exception& e) {
            spdlog::error("{}", e.what());
            return 1;
        }
        managed.reset();
        spdlog::info("stopped");
        return 0;
    }
    serve_also also;
    if (managed) {
        also = [&managed](std::chrono::milliseconds wait) { managed->run_once(wait); };
    }
#else
    const serve_also also;
#endif

    // The socket path names the instance: absolute, with the symbolic links of its existing
    // directories resolved, so that the same socket named differently is the same instance.
    std::error_code path_error;
    std::string instance;
    if (o.socket.empty()) {
        instance = "tcp:" + o.tcp.front().address + ":" + std::to_string(o.tcp.front().port);
    } else {
        auto path = std::filesystem::weakly_canonical(std::filesystem::absolute(o.socket), path_error);
        if (path_error) {
            path = std::filesystem::absolute(o.socket).lexically_normal();
        }
        instance = path.string();
    }
    const nvmekit::instance_identity derived = nvmekit::derive_instance_identity(
        instance, machine_id(), "nqn.2026-11.io.nvmekit:serve-", "NVMEKIT-");
    const std::string nqn = o.nqn.value_or(derived.nqn);
    const std::string serial = o.serial.value_or(derived.serial_number);
    const std::uint16_t controller_id = o.controller_id.value_or(derived.controller_id);
    try {
        // What lets the command line's controller finish its backend requests (serve() sets it).
        std::function<void()> drain = [] {};
        // Without --capacity the namespaces are fixed by the command line, so the highest valid
        // NSID (Identify Controller NN) is their number; with it the host may create more.
        nvmekit::subsystem<nvmekit::any_backend> subsystem{
            {.nqn = nqn, .serial_number = serial, .model_number = "nvmekit vfio-user controller"},
            {.max_namespaces = o.max_namespaces, .nvm_capacity_bytes = o.capacity}};
        if (o.capacity != 0) {
            subsystem.set_backend_factory([concurrent = o.group_threads, timing = o.timing](
                                              std::uint64_t bytes) -> std::optional<nvmekit::any_backend> {
                spdlog::info("namespace management: a sparse RAM backend of {} MiB{}", bytes >> 20,
                             timing_description(timing));
                return timed(nvmekit::ram_backend{bytes, {.concurrent = concurrent}}, timing);
            });
        }
        for (std::size_t index = 0; index < o.namespaces.size(); ++index) {
            const auto& ns = o.namespaces[index];
            nvmekit::any_backend backend = timed(ns.file ? file_namespace_backend(ns.path, o)
                                                         : nvmekit::any_backend{nvmekit::ram_backend{
                                                               ns.bytes, {.concurrent = o.group_threads}}},
                                                 o.timing);
            const auto bytes = backend.capacity_bytes();
#ifdef NVMEKIT_SERVE_HAVE_RPC
            if (managed) {
                const std::uint32_t block_size =
                    nvmekit::supported_lba_formats[o.lba_format].data_bytes; // the namespace's blocks
                backend = managed->command_line_bdev(ns, index, std::move(backend), block_size);
            }
#endif
            const auto& added = subsystem.add_namespace(std::move(backend), {.lba_format = o.lba_format});
            if (ns.file) {
                spdlog::info("namespace {}: file {} ({} MiB, {}{})", added.nsid(), ns.path, bytes >> 20,
                             o.uring ? "io_uring" : "pread/pwrite", timing_description(o.timing));
            } else {
                spdlog::info("namespace {}: sparse RAM, {} MiB{}", added.nsid(), bytes >> 20,
                             timing_description(o.timing));
            }
        }
        // With management, the command line's target is one it reports, changes and saves, and
        // its TCP listeners are management's to serve. Management goes before the subsystem.
        options served = o;
#ifdef NVMEKIT_SERVE_HAVE_RPC
        struct release_management {
            std::optional<management>& managed;
            ~release_management() { managed.reset(); }
        } const released_first{managed};
        if (managed) {
            managed->adopt_command_line(
                o, subsystem, [&drain] { drain(); }, o.group_threads);
            served.tcp.clear();
        }
#endif
        if (o.socket.empty()) {
            serve_tcp(served, subsystem, nqn, also);
        } else if (o.group_threads) {
            if (o.trace) {
                serve<group_thread_traits<traced_serve_traits>>(served, subsystem, nqn, serial, controller_id,
                                                                also, drain);
            } else {
                serve<group_thread_traits<serve_traits>>(served, subsystem, nqn, serial, controller_id, also,
                                                         drain);
            }
        } else if (o.trace) {
            serve<traced_serve_traits>(served, subsystem, nqn, serial, controller_id, also, drain);
        } else {
            serve<serve_traits>(served, subsystem, nqn, serial, controller_id, also, drain);
        }
    } catch (const std::exception& e) {
        spdlog::error("{}", e.what());
        return 1;
    }
    spdlog::info("stopped");
    return 0;
}
