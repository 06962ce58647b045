// nvmekit-perf --transport vfio-user: the host and the device in two threads of one process,
// talking vfio-user over a real UNIX socket, in a translation unit of its own (perf_run.hpp says
// why). The device is what nvmekit-serve runs: a controller on mapped_memory and
// eventfd_interrupts behind transport::vfio_user::server, whose run_once() loop runs on a thread
// of its own. The host is testing::vfio_user_client driving in_process_host: guest memory
// is a memfd given to the server with DMA_MAP, BAR0 is reached by REGION_READ/REGION_WRITE
// messages, and the I/O queues are polled by their phase tags (no interrupts). Every doorbell is
// a REGION_WRITE message, posted (No Reply) unless --doorbell-replies asks to wait for each reply;
// with --mapped-doorbells the client maps BAR0's doorbell page, which the server offers as a
// sparse-mmap area, and rings a doorbell with a store that the server's loop polls for.
// The server's thread waits for messages in poll(2) as nvmekit-serve's does (up to 1 ms, and not
// at all while the backend holds I/O); --server-busy-poll makes it spin instead. With --threads
// the I/O queues' poll groups run on threads of their own (nvmekit-serve --group-threads), which
// sleep when idle unless --server-busy-poll; the server's CPU is then that of all its threads.

#include "perf_run.hpp"

#include <sys/mman.h>

#include <nvmekit/testing/vfio_user_client.hpp>
#include <nvmekit/transport/eventfd_interrupts.hpp>
#include <nvmekit/transport/vfio_user/server.hpp>

namespace nvmekit_perf {
namespace {

template <typename Backend, typename Threading>
struct vfio_user_traits : nvmekit::default_traits {
    using threading = Threading;
    using dma = nvmekit::transport::mapped_memory;
    using interrupts = nvmekit::transport::eventfd_interrupts;
    using clock = nvmekit::steady_clock;
    using backend = Backend;
    static constexpr nvmekit::limits limits = perf_traits<Backend, nvmekit::single_threaded>::limits;
};

/// Guest RAM the client shares with the server: a memfd, mapped here.
class shared_guest_memory {
public:
    explicit shared_guest_memory(std::size_t bytes) : bytes_{bytes}
    {
        fd_.reset(::memfd_create("nvmekit-perf-guest", MFD_CLOEXEC));
        if (!fd_.valid() || ::ftruncate(fd_.get(), static_cast<off_t>(bytes)) != 0) {
            throw std::runtime_error("cannot create the guest memory's memfd");
        }
        void* mapping = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd_.get(), 0);
        if (mapping == MAP_FAILED) {
            throw std::runtime_error("cannot map the guest memory");
        }
        data_ = static_cast<std::byte*>(mapping);
    }
    shared_guest_memory(const shared_guest_memory&) = delete;
    shared_guest_memory& operator=(const shared_guest_memory&) = delete;
    ~shared_guest_memory() { ::munmap(data_, bytes_); }
    [[nodiscard]] int fd() const noexcept { return fd_.get(); }
    [[nodiscard]] std::span<std::byte> bytes() const noexcept { return {data_, bytes_}; }

private:
    std::size_t bytes_;
    nvmekit::transport::vfio_user::unique_fd fd_;
    std::byte* data_ = nullptr;
};

template <typename Threading, typename Backend>
results run_over_vfio_user(const options& o, Backend backend, std::uint32_t lba_bytes)
{
    using traits = vfio_user_traits<Backend, Threading>;
    using controller_type = nvmekit::controller<traits>;
    namespace vu = nvmekit::transport::vfio_user;

    // The device: what nvmekit-serve builds for one vfio-user function.
    nvmekit::transport::mapped_memory device_memory;
    nvmekit::transport::eventfd_interrupts interrupts{traits::limits.msix_vectors};
    nvmekit::steady_clock clock;
    nvmekit::subsystem<Backend> subsystem{{.nqn = "nqn.2026-11.io.nvmekit:perf"}};
    subsystem.add_namespace(std::move(backend),
                            {.lba_format = static_cast<std::uint8_t>(lba_bytes == 512 ? 0 : 2)});
    controller_type ctrl{device_memory,
                         interrupts,
                         clock,
                         subsystem,
                         {.poll_groups = o.groups, .concurrent_poll_groups = o.threads}};
    const std::string socket = fmt::format("/tmp/nvmekit-perf-{}.sock", ::getpid());
    vu::server<controller_type> server{
        ctrl, device_memory, interrupts, {.socket_path = socket, .mappable_doorbells = o.mapped_doorbells}};
    if constexpr (Threading::concurrent_groups) {
        // nvmekit-serve --group-threads: the I/O queues' groups on threads of their own, the
        // messages and the admin queue on the server's.
        ctrl.start_poll_groups({.name = "perf-group", .busy_poll = o.server_busy_poll});
    }
    std::atomic<bool> stop{false};
    std::thread serving{[&] {
        while (!stop.load(std::memory_order_relaxed)) {
            // nvmekit-serve's loop: wait in poll(2) for the next message unless I/O is
            // outstanding in the backend; --server-busy-poll never waits.
            // Mapped doorbells are stores that wake nothing: the server polls them.
            const bool wait = !o.server_busy_poll && !o.mapped_doorbells && ctrl.io_outstanding() == 0;
            server.run_once(std::chrono::milliseconds{wait ? 1 : 0});
        }
    }};
    const auto join = [&] {
        stop = true;
        if (serving.joinable()) {
            serving.join();
        }
    };

    results r;
    try {
        // The host: guest RAM in a memfd, given to the server.
        shared_guest_memory guest{host_memory_bytes(o)};
        nvmekit::testing::flat_memory memory;
        memory.add_range(host_memory_base, guest.bytes());
        nvmekit::testing::vfio_user_client client{socket};
        if (client.negotiate() != 0 ||
            client.map_dma(guest.fd(), host_memory_base, guest.bytes().size()) != 0 ||
            !client.enable_function()) {
            throw std::runtime_error("the vfio-user server refused the session's set-up");
        }
        if (o.mapped_doorbells && !client.map_doorbells()) {
            throw std::runtime_error("the vfio-user server did not offer its doorbells to map");
        }
        nvmekit::testing::manual_clock host_clock;
        nvmekit::testing::in_process_host host{client, memory, host_clock};
        const std::uint32_t entries = queue_entries(o);
        const auto up = host.bring_up(
            {.io_queue_pairs = o.queues, .io_entries = entries, .interrupts = false, .max_polls = 1'000'000});
        const std::uint64_t blocks = o.size / lba_bytes; // the namespace is --size bytes
        const std::uint64_t messages_before = client.messages_sent();
        // The device's CPU: every thread of the process but this one (the server's and the groups').
        const double device_cpu_before = process_cpu_seconds() - thread_cpu_seconds();
        r = drive(
            o, memory, host, blocks, lba_bytes, entries, up.cap.get(spec::cap_register::dstrd),
            [&](std::uint64_t offset, std::uint32_t value) {
                if (o.doorbell_replies) {
                    client.mmio_write(offset, 4, value);
                } else {
                    client.ring_doorbell(offset, value); // a store when mapped, else posted
                }
            },
            [](std::uint64_t /*round*/) {});
        r.server_cpu_seconds = process_cpu_seconds() - thread_cpu_seconds() - device_cpu_before;
        r.doorbell_messages = client.messages_sent() - messages_before;
        join();
    } catch (...) {
        join();
        throw;
    }
    ctrl.stop_poll_groups();
    if (ctrl.requests_in_use() != 0) {
        throw std::runtime_error("requests still in use after the run");
    }
    return r;
}

template <typename Threading>
results run_vfio_user_with(const options& o, std::uint32_t lba_bytes)
{
    if (o.backend == "null") {
        return run_over_vfio_user<Threading>(o, nvmekit::null_backend{o.size, {.fill_reads = false}},
                                             lba_bytes);
    }
    return run_over_vfio_user<Threading>(
        o,
        nvmekit::ram_backend{
            o.size, {.chunk_size = ram_chunk_size(o.size), .preallocate = true, .concurrent = o.threads}},
        lba_bytes);
}

} // namespace

results run_vfio_user(const options& o, std::uint32_t lba_bytes)
{
    if (o.threads) {
        return run_vfio_user_with<nvmekit::multi_threaded>(o, lba_bytes);
    }
    return run_vfio_user_with<nvmekit::single_threaded>(o, lba_bytes);
}

} // namespace nvmekit_perf
