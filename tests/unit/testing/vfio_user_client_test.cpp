#include <nvmekit/testing/vfio_user_client.hpp>

#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include <nvmekit/backends/ram_backend.hpp>
#include <nvmekit/controller.hpp>
#include <nvmekit/testing/flat_memory.hpp>
#include <nvmekit/testing/host.hpp>
#include <nvmekit/testing/manual_clock.hpp>
#include <nvmekit/transport/eventfd_interrupts.hpp>
#include <nvmekit/transport/mapped_memory.hpp>
#include <nvmekit/transport/vfio_user/server.hpp>

// The client against the project's vfio-user server on a thread of its own, over a real socket:
// the host driver brings the function up through it, with the queues in a memfd both share.

namespace {
namespace testing_vfio_user_client_test {

namespace spec = nvmekit::spec;
namespace vu = nvmekit::transport::vfio_user;
using nvmekit::testing::vfio_user_client;

struct traits : nvmekit::default_traits {
    using dma = nvmekit::transport::mapped_memory;
    using interrupts = nvmekit::transport::eventfd_interrupts;
    using clock = nvmekit::steady_clock;
    static constexpr nvmekit::limits limits{.io_queues = 4, .queue_entries = 256, .msix_vectors = 5};
};
/// The same with poll groups on threads of their own, as nvmekit-serve --group-threads runs them.
struct threaded_traits : traits {
    using threading = nvmekit::multi_threaded;
};

constexpr std::uint64_t guest_base = 0x1'0000'0000;
constexpr std::size_t guest_bytes = 4U << 20;

/// The server side, on a thread of its own; with `Traits` multi_threaded, `groups` poll groups
/// on threads of their own too.
template <typename Traits = traits>
struct device {
    using controller_type = nvmekit::controller<Traits>;
    static constexpr bool threaded = Traits::threading::concurrent_groups;

    nvmekit::transport::mapped_memory memory;
    nvmekit::transport::eventfd_interrupts interrupts{traits::limits.msix_vectors};
    nvmekit::steady_clock clock;
    nvmekit::subsystem<nvmekit::any_backend> subsystem{{.nqn = "nqn.2026-11.io.nvmekit:client-test"}};
    controller_type ctrl;
    vu::server<controller_type> server;
    std::atomic<bool> stop{false};
    bool server_polls = false;
    std::thread thread;

    explicit device(const std::string& path, std::uint16_t groups = 1, bool mappable_doorbells = false)
        : ctrl{memory,
               interrupts,
               clock,
               (subsystem.add_namespace(nvmekit::ram_backend{1 << 20, {.concurrent = threaded}}), subsystem),
               {.poll_groups = groups, .concurrent_poll_groups = threaded}}
        , server{ctrl, memory, interrupts, {.socket_path = path, .mappable_doorbells = mappable_doorbells}}
    {
        if constexpr (threaded) {
            ctrl.start_poll_groups({.name = "test-group"});
        }
        server_polls = mappable_doorbells;
        thread = std::thread{[this] {
            // Mapped doorbells wake nothing: the server polls them without waiting.
            const std::chrono::milliseconds wait{server_polls ? 0 : 1};
            while (!stop.load()) {
                server.run_once(wait);
            }
        }};
    }
    device(const device&) = delete;
    device& operator=(const device&) = delete;
    ~device()
    {
        stop = true;
        thread.join();
        ctrl.stop_poll_groups();
    }
};

/// Guest RAM in a memfd, mapped here and given to the server.
struct shared_memory {
    int fd = ::memfd_create("guest", MFD_CLOEXEC);
    std::byte* data = nullptr;
    shared_memory()
    {
        EXPECT_EQ(::ftruncate(fd, guest_bytes), 0);
        data =
            static_cast<std::byte*>(::mmap(nullptr, guest_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
    }
    shared_memory(const shared_memory&) = delete;
    shared_memory& operator=(const shared_memory&) = delete;
    ~shared_memory()
    {
        ::munmap(data, guest_bytes);
        ::close(fd);
    }
};

std::string socket_path(const char* name)
{
    return "/tmp/nvmekit-client-" + std::to_string(::getpid()) + "-" + name + ".sock";
}

/// VERSION, DMA_MAP of `guest` and Memory Space and Bus Master Enable; whether all were accepted.
bool open_session(vfio_user_client& client, const shared_memory& guest)
{
    return client.negotiate() == 0U && client.map_dma(guest.fd, guest_base, guest_bytes) == 0U &&
           client.enable_function();
}

/// A client with its guest memory in a memfd and the host driver over both, its session open.
struct remote_host {
    vfio_user_client client;
    shared_memory guest;
    nvmekit::testing::flat_memory memory;
    nvmekit::testing::manual_clock clock;
    nvmekit::testing::in_process_host<vfio_user_client> host{client, memory, clock};

    explicit remote_host(const std::string& path) : client{path}
    {
        EXPECT_TRUE(open_session(client, guest));
        memory.add_range(guest_base, std::span{guest.data, guest_bytes});
    }
};

TEST(vfio_user_client, negotiates_maps_memory_and_reads_the_function)
{
    const auto path = socket_path("session");
    device<> d{path};
    vfio_user_client client{path};
    shared_memory guest;
    EXPECT_EQ(client.negotiate(), 0U);
    EXPECT_EQ(client.map_dma(guest.fd, guest_base, guest_bytes), 0U);
    EXPECT_EQ(client.region_size(vu::region_index::bar0), d.ctrl.bar0_size());
    // Class Code 01:08:02 in config space; BAR0 decodes once Memory Space Enable is set.
    const auto class_code = client.region_read(vu::region_index::config, 8, 4);
    ASSERT_TRUE(class_code.has_value());
    EXPECT_EQ(*class_code >> 8, 0x010802U);
    EXPECT_TRUE(client.enable_function());
    const auto vs = client.region_read(vu::region_index::bar0, 0x08, 4);
    ASSERT_TRUE(vs.has_value());
    EXPECT_EQ(*vs, 0x00020000U); // NVMe 2.0
    // A message the server refuses comes back with its errno.
    EXPECT_NE(
        vfio_user_client::error_of(client.call(static_cast<vu::command>(0x7f), std::span<const std::byte>{})),
        0U);
}

TEST(vfio_user_client, drives_a_remote_function_through_the_host_driver)
{
    const auto path = socket_path("host");
    device<> d{path};
    remote_host remote{path};
    auto& host = remote.host;
    auto& guest = remote.guest;
    const auto up = host.bring_up({.io_queue_pairs = 2, .interrupts = false, .max_polls = 1'000'000});
    EXPECT_EQ(up.io_queue_pairs, 2U);

    // A write and a read back, the data in the shared memory.
    const std::uint64_t out = host.allocate(4096);
    const std::uint64_t in = host.allocate(4096);
    for (std::size_t i = 0; i < 4096; ++i) {
        guest.data[out - guest_base + i] = static_cast<std::byte>(i * 13U);
    }
    auto write = host.lba_command(spec::nvm_opcode::write, 1, 8, 8);
    host.describe_data(write, out, 4096);
    EXPECT_TRUE(host.io(1, write).ok());
    auto read = host.lba_command(spec::nvm_opcode::read, 1, 8, 8);
    host.describe_data(read, in, 4096);
    EXPECT_TRUE(host.io(2, read).ok());
    EXPECT_EQ(std::memcmp(guest.data + (out - guest_base), guest.data + (in - guest_base), 4096), 0);
}

TEST(vfio_user_client, a_posted_doorbell_write_gets_no_reply)
{
    const auto path = socket_path("posted");
    device<> d{path};
    vfio_user_client client{path};
    shared_memory guest;
    ASSERT_TRUE(open_session(client, guest));
    // CC written posted, then read back: the only reply on the stream is the read's.
    const std::uint64_t sent = client.messages_sent();
    client.post_region_write(0x14, 0x00460000U); // IOSQES 6, IOCQES 4, EN 0
    EXPECT_EQ(client.messages_sent(), sent + 1);
    EXPECT_EQ(client.region_read(vu::region_index::bar0, 0x14, 4), 0x00460000U);
}

TEST(vfio_user_client, drives_poll_groups_on_threads_of_their_own_with_msix_on_eventfds)
{
    // nvmekit-serve --groups 2 --group-threads: the I/O queues' groups run on threads of their
    // own, the server's thread keeps the messages, and each group raises its CQ's vector on the
    // eventfd the client gave, while the client hands vector 0 a new one.
    const auto path = socket_path("groups");
    device<threaded_traits> d{path, 2};
    remote_host remote{path};
    auto& client = remote.client;
    std::array<int, 3> vectors{};
    std::array<int, 3> watchers{};
    for (std::size_t i = 0; i < vectors.size(); ++i) {
        vectors[i] = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        watchers[i] = ::dup(vectors[i]);
    }
    ASSERT_EQ(client.set_msix_eventfds(0, vectors), 0U);
    auto& host = remote.host;
    ASSERT_EQ(host.bring_up({.io_queue_pairs = 2, .max_polls = 1'000'000}).io_queue_pairs, 2U);
    // A buffer per queue, so per group: the groups' threads never write the same bytes (their
    // order reaches this thread only through the CQ in shared memory, which TSan cannot see).
    const std::array buffers{host.allocate(4096), host.allocate(4096)};
    for (int round = 0; round < 50; ++round) {
        for (std::uint16_t qid = 1; qid <= 2; ++qid) {
            auto read =
                host.lba_command(spec::nvm_opcode::read, 1, static_cast<std::uint64_t>(round) * 8U, 8);
            host.describe_data(read, buffers[qid - 1U], 4096);
            ASSERT_TRUE(host.io(qid, read).ok());
        }
        if (round % 10 == 0) {
            const std::array fresh{::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)};
            EXPECT_EQ(client.set_msix_eventfds(0, fresh), 0U);
            ::close(fresh[0]);
        }
    }
    for (std::size_t i = 1; i < watchers.size(); ++i) {
        std::uint64_t count = 0;
        EXPECT_EQ(::read(watchers[i], &count, sizeof count), static_cast<ssize_t>(sizeof count));
        EXPECT_GT(count, 0U) << "vector " << i;
    }
    for (std::size_t i = 0; i < vectors.size(); ++i) {
        ::close(vectors[i]);
        ::close(watchers[i]);
    }
}

TEST(vfio_user_client, regions_mapped_and_unmapped_while_poll_group_threads_run_io)
{
    // QEMU maps and unmaps guest memory while the device runs (memory hot-plug, a reset of the
    // guest's memory map): the server changes its regions only while the group threads, which
    // read them for every command, are paused. ThreadSanitizer checks it in the TSan build.
    const auto path = socket_path("remap");
    device<threaded_traits> d{path, 2};
    remote_host remote{path};
    auto& client = remote.client;
    auto& host = remote.host;
    ASSERT_EQ(host.bring_up({.io_queue_pairs = 2, .max_polls = 1'000'000}).io_queue_pairs, 2U);
    // A buffer per queue, so per group: the groups' threads never write the same bytes (their
    // order reaches this thread only through the CQ in shared memory, which TSan cannot see).
    const std::array buffers{host.allocate(4096), host.allocate(4096)};
    shared_memory extra;
    constexpr std::uint64_t extra_base = guest_base + 0x1'0000'0000;
    for (int round = 0; round < 20; ++round) {
        // Reads in flight on both groups while the region comes and goes.
        std::vector<std::pair<std::uint16_t, std::uint16_t>> submitted;
        for (std::uint16_t qid = 1; qid <= 2; ++qid) {
            for (std::uint64_t i = 0; i < 8; ++i) {
                auto read = host.lba_command(spec::nvm_opcode::read, 1, i * 8U, 8);
                host.describe_data(read, buffers[qid - 1U], 4096);
                submitted.emplace_back(qid, host.submit(qid, read));
            }
        }
        ASSERT_EQ(client.map_dma(extra.fd, extra_base, guest_bytes), 0U);
        ASSERT_EQ(client.unmap_dma(extra_base, guest_bytes), 0U);
        for (const auto& [qid, cid] : submitted) {
            ASSERT_TRUE(host.wait_for(qid, cid).ok());
        }
    }
    // A region that is not mapped (any more) is refused, and I/O goes on.
    EXPECT_EQ(client.unmap_dma(extra_base, guest_bytes), static_cast<std::uint32_t>(ENOENT));
    auto read = host.lba_command(spec::nvm_opcode::read, 1, 0, 8);
    host.describe_data(read, buffers[0], 4096);
    EXPECT_TRUE(host.io(1, read).ok());
}

TEST(vfio_user_client, rings_mapped_doorbells_with_stores_and_the_others_by_message)
{
    const auto path = socket_path("mapped");
    device<> d{path, 1, true};
    remote_host remote{path};
    auto& client = remote.client;
    auto& host = remote.host;
    ASSERT_TRUE(client.map_doorbells());
    EXPECT_TRUE(client.doorbells_mapped());
    const std::uint64_t messages_before = client.messages_sent();
    ASSERT_EQ(
        host.bring_up({.io_queue_pairs = 2, .interrupts = false, .max_polls = 1'000'000}).io_queue_pairs, 2U);
    const std::uint64_t buffer = host.allocate(4096);
    const std::uint64_t messages_after_bring_up = client.messages_sent();
    for (std::uint16_t qid = 1; qid <= 2; ++qid) {
        auto read = host.lba_command(spec::nvm_opcode::read, 1, 0, 8);
        host.describe_data(read, buffer, 4096);
        EXPECT_TRUE(host.io(qid, read).ok());
    }
    // The I/O's doorbells were stores: no message (the host reads no register meanwhile).
    EXPECT_EQ(client.messages_sent(), messages_after_bring_up);
    EXPECT_GT(messages_after_bring_up, messages_before); // the registers still go by message

    // A reset clears the page with the doorbells: the host starts again from 0 after CC.EN.
    host.disable();
    ASSERT_EQ(
        host.bring_up({.io_queue_pairs = 1, .interrupts = false, .max_polls = 1'000'000}).io_queue_pairs, 1U);
    auto read = host.lba_command(spec::nvm_opcode::read, 1, 0, 8);
    host.describe_data(read, buffer, 4096);
    EXPECT_TRUE(host.io(1, read).ok());
}

TEST(vfio_user_client, a_server_without_mappable_doorbells_offers_none)
{
    const auto path = socket_path("unmapped");
    device<> d{path};
    vfio_user_client client{path};
    ASSERT_EQ(client.negotiate(), 0U);
    EXPECT_FALSE(client.map_doorbells());
    EXPECT_FALSE(client.doorbells_mapped());
}

} // namespace testing_vfio_user_client_test
} // namespace
