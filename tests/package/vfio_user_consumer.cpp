// A program that uses nvmekit's vfio-user transport (nvmekit::vfio_user) as an installed package: a
// controller over mapped guest memory and eventfd interrupts behind a vfio-user server, which must accept a
// client on its UNIX socket.
#include <nvmekit/backends/ram_backend.hpp>
#include <nvmekit/controller.hpp>
#include <nvmekit/transport/eventfd_interrupts.hpp>
#include <nvmekit/transport/mapped_memory.hpp>
#include <nvmekit/transport/vfio_user/server.hpp>

#include <fmt/core.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

namespace {

struct traits : nvmekit::default_traits {
    using dma = nvmekit::transport::mapped_memory;
    using interrupts = nvmekit::transport::eventfd_interrupts;
    using clock = nvmekit::steady_clock;
};

/// Connects to the UNIX socket at `path`; -1 when that fails.
int connect_to(const std::string& path)
{
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && ::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
        ::close(fd);
        return -1;
    }
    return fd;
}

} // namespace

int main()
{
    char directory[] = "/tmp/nvmekit_vfio_user_consumer_XXXXXX";
    if (::mkdtemp(directory) == nullptr) {
        fmt::print(stderr, "cannot create a directory for the socket\n");
        return 1;
    }
    const std::string socket_path = std::string{directory} + "/nvme.sock";
    bool accepted = false;
    {
        nvmekit::transport::mapped_memory memory;
        nvmekit::transport::eventfd_interrupts interrupts{traits::limits.msix_vectors};
        nvmekit::steady_clock clock;
        nvmekit::subsystem<nvmekit::any_backend> subsystem{{.nqn = "nqn.2026-11.io.example:transport"}};
        subsystem.add_namespace(nvmekit::ram_backend{std::uint64_t{1} << 20});
        nvmekit::controller<traits> ctrl{memory, interrupts, clock, subsystem};
        nvmekit::transport::vfio_user::server server{ctrl, memory, interrupts, {.socket_path = socket_path}};
        // The server listens from its construction, so the connection is queued at once; the
        // timeout only bounds a server that never accepts.
        const int client = connect_to(socket_path);
        if (client >= 0) {
            server.run_once(std::chrono::milliseconds{30'000});
            accepted = server.connected() && server.statistics().clients == 1;
            ::close(client);
        }
        fmt::print("vfio-user server on {}: {} (BAR0 {} bytes, {} MSI-X vectors)\n", socket_path,
                   accepted ? "accepted a client" : "no client", ctrl.bar0_size(), interrupts.vectors());
    }
    ::rmdir(directory);
    return accepted ? 0 : 1;
}
