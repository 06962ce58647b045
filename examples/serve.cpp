// nvmekit-serve: an emulated NVMe PCI function served over vfio-user, for QEMU (10.1 and later)
// and other vfio-user clients.
//
//     nvmekit-serve --vfio-user /tmp/nvme.sock --ram 1G
//     nvmekit-serve --vfio-user /tmp/nvme.sock --ram 1G --file /var/tmp/disk.img --log debug
//
// Each --ram SIZE or --file PATH adds a namespace (NSID 1, 2, ... in order); with none, one 1 GiB
// RAM namespace is served. Identify Controller NN is the number of namespaces. --queues, --queue-depth and --mdts lower what the host is offered
// below the build's limits; --groups spreads the I/O queues over poll groups (processed on the
// server's thread for now). SIGINT or SIGTERM shut the server down cleanly (file backends are
// synced). Nothing a client sends ends the program.

#include "command_line.hpp"

#include <atomic>
#include <charconv>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include <spdlog/spdlog.h>

#include <nvmekit/backends/file_backend.hpp>
#include <nvmekit/backends/ram_backend.hpp>
#include <nvmekit/clock.hpp>
#include <nvmekit/controller.hpp>
#include <nvmekit/transport/eventfd_interrupts.hpp>
#include <nvmekit/transport/mapped_memory.hpp>
#include <nvmekit/transport/vfio_user/server.hpp>

namespace {

struct serve_traits : nvmekit::default_traits {
    using dma = nvmekit::transport::mapped_memory;
    using interrupts = nvmekit::transport::eventfd_interrupts;
    using clock = nvmekit::steady_clock;
    static constexpr nvmekit::limits limits{
        .io_queues = 64, .queue_entries = 4096, .mdts = 5, .msix_vectors = 65, .aerl = 3};
};
using controller_type = nvmekit::controller<serve_traits>;

std::atomic<bool> stop_requested{false};

extern "C" void on_signal(int /*signal*/) { stop_requested.store(true); }

struct namespace_spec {
    bool file = false;
    std::uint64_t bytes = 0;
    std::string path;
};

struct options {
    std::string socket;
    std::vector<namespace_spec> namespaces;
    std::string nqn = "nqn.2026-11.io.nvmekit:serve";
    std::string serial = "NVMEKIT-SERVE-01";
    std::uint16_t device_id = 0x0a0a;
    std::uint8_t lba_format = 0;
    bool direct = false;
    std::uint16_t queues = 0;      ///< I/O queue pairs offered (0: the build's limit, 64)
    std::uint32_t queue_depth = 0; ///< entries per queue (0: the build's limit, 4096)
    std::uint8_t mdts = 0;         ///< MDTS (0: the build's limit, 5 = 128 KiB)
    std::uint16_t groups = 1;      ///< poll groups the I/O queues are spread over
    std::string log_level = "info";
};

constexpr nvmekit_programs::program serve_program{
    "nvmekit-serve",
    "nvmekit-serve --vfio-user SOCKET [--ram SIZE]... [--file PATH]... [--4k] [--direct]\n"
    "                     [--queues 1-64] [--queue-depth 2-4096] [--mdts 1-5] [--groups 1-64]\n"
    "                     [--nqn NQN] [--serial SN] [--device-id HEX] [--log trace|debug|info|warn]\n"
    "                     [--help] [--version]\n"
    "  SIZE takes K, M or G; with no namespace option one 1G RAM namespace is served.\n"};

[[noreturn]] void usage(const std::string& problem)
{
    nvmekit_programs::bad_usage(serve_program, problem);
}

std::uint64_t parse_size(std::string_view text)
{
    std::uint64_t value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc{} || value == 0) {
        usage("not a size: " + std::string{text});
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
    if (shift == 64) {
        usage("not a size: " + std::string{text});
    }
    return value << shift;
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
        } else if (arg == "--ram") {
            o.namespaces.push_back({false, parse_size(value()), {}});
        } else if (arg == "--file") {
            o.namespaces.push_back({true, 0, value()});
        } else if (arg == "--4k") {
            o.lba_format = 2;
        } else if (arg == "--direct") {
            o.direct = true;
        } else if (arg == "--queues") {
            o.queues = static_cast<std::uint16_t>(std::stoul(value()));
        } else if (arg == "--queue-depth") {
            o.queue_depth = static_cast<std::uint32_t>(std::stoul(value()));
        } else if (arg == "--mdts") {
            o.mdts = static_cast<std::uint8_t>(std::stoul(value()));
        } else if (arg == "--groups") {
            o.groups = static_cast<std::uint16_t>(std::stoul(value()));
        } else if (arg == "--nqn") {
            o.nqn = value();
        } else if (arg == "--serial") {
            o.serial = value();
        } else if (arg == "--device-id") {
            o.device_id = static_cast<std::uint16_t>(std::stoul(value(), nullptr, 16));
        } else if (arg == "--log") {
            o.log_level = value();
        } else if (!nvmekit_programs::standard_option(serve_program, arg)) {
            usage("unknown option " + std::string{arg});
        }
    }
    if (o.socket.empty()) {
        usage("--vfio-user SOCKET is required");
    }
    if (o.namespaces.empty()) {
        o.namespaces.push_back({false, std::uint64_t{1} << 30, {}});
    }
    return o;
}

} // namespace

int main(int argc, char** argv)
{
    const options o = parse(argc, argv);
    spdlog::set_level(spdlog::level::from_str(o.log_level));
    spdlog::set_pattern("[%H:%M:%S.%e] [%^%l%$] %v");
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
    std::signal(SIGPIPE, SIG_IGN);

    try {
        // The namespaces are fixed by the command line and nothing adds one later, so the highest
        // valid NSID (Identify Controller NN) is their number.
        nvmekit::subsystem<nvmekit::any_backend> subsystem{
            {.nqn = o.nqn, .serial_number = o.serial, .model_number = "nvmekit vfio-user controller"},
            {.max_namespaces = static_cast<std::uint32_t>(o.namespaces.size())}};
        for (const auto& ns : o.namespaces) {
            if (ns.file) {
                nvmekit::file_backend backend{ns.path, {.direct = o.direct}};
                const auto bytes = backend.capacity_bytes();
                const auto& added = subsystem.add_namespace(std::move(backend), {.lba_format = o.lba_format});
                spdlog::info("namespace {}: file {} ({} MiB)", added.nsid(), ns.path, bytes >> 20);
            } else {
                const auto& added =
                    subsystem.add_namespace(nvmekit::ram_backend{ns.bytes}, {.lba_format = o.lba_format});
                spdlog::info("namespace {}: sparse RAM, {} MiB", added.nsid(), ns.bytes >> 20);
            }
        }
        nvmekit::transport::mapped_memory memory;
        nvmekit::transport::eventfd_interrupts interrupts{serve_traits::limits.msix_vectors};
        nvmekit::steady_clock clock;
        controller_type ctrl{memory, interrupts, clock, subsystem,
                             {.io_queues = o.queues, .queue_entries = o.queue_depth, .mdts = o.mdts,
                              .poll_groups = o.groups}};
        const auto logger = [](nvmekit::transport::vfio_user::server_log_level level, std::string_view text) {
            using nvmekit::transport::vfio_user::server_log_level;
            switch (level) {
            case server_log_level::debug: spdlog::debug("{}", text); break;
            case server_log_level::info: spdlog::info("{}", text); break;
            case server_log_level::warning: spdlog::warn("{}", text); break;
            }
        };
        nvmekit::transport::vfio_user::server<controller_type> server{
            ctrl, memory, interrupts, {.socket_path = o.socket, .function = {.device_id = o.device_id}}, logger};
        spdlog::info("serving {} on {} (BAR0 {} KiB, {} MSI-X vectors)", o.nqn, o.socket, ctrl.bar0_size() >> 10,
                     serve_traits::limits.msix_vectors);
        spdlog::info("attach QEMU 10.1+ with: -object memory-backend-memfd,id=mem,size=<RAM>,share=on "
                     "-machine q35,memory-backend=mem -device '{{\"driver\":\"vfio-user-pci\",\"socket\":"
                     "{{\"path\":\"{}\",\"type\":\"unix\"}}}}'",
                     o.socket);
        while (!stop_requested.load()) {
            server.run_once(std::chrono::milliseconds{server.connected() ? 1 : 100});
        }
        spdlog::info("shutting down: {} client(s), {} messages, {} error replies", server.statistics().clients,
                     server.statistics().messages, server.statistics().error_replies);
        for (int i = 0; i < 1000 && ctrl.io_outstanding() != 0; ++i) {
            ctrl.poll();
        }
    } catch (const std::exception& e) {
        spdlog::error("{}", e.what());
        return 1;
    }
    spdlog::info("stopped");
    return 0;
}
