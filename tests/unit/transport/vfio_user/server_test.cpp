#include <nvmekit/transport/vfio_user/server.hpp>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <gtest/gtest.h>

#include <nvmekit/backends/ram_backend.hpp>
#include <nvmekit/controller.hpp>
#include <nvmekit/spec/commands.hpp>
#include <nvmekit/spec/identify.hpp>
#include <nvmekit/spec/queue_entries.hpp>
#include <nvmekit/spec/registers.hpp>
#include <nvmekit/testing/vfio_user_client.hpp>

namespace {
namespace transport_vfio_user_server_test {

namespace vu = nvmekit::transport::vfio_user;
namespace spec = nvmekit::spec;

struct traits : nvmekit::default_traits {
    using dma = nvmekit::transport::mapped_memory;
    using interrupts = nvmekit::transport::eventfd_interrupts;
    using clock = nvmekit::steady_clock;
    static constexpr nvmekit::limits limits{.io_queues = 4, .queue_entries = 256, .msix_vectors = 5};
};
using controller_type = nvmekit::controller<traits>;

constexpr std::uint64_t guest_bytes = 4U << 20;

// The server runs on a thread of its own and does what a message asks within microseconds; the
// tests wait for it at most `patience`, a bound that only keeps a broken server from hanging the
// test, never a budget a slow or loaded machine could exceed.
constexpr std::chrono::milliseconds patience{30'000};

/// Checks `condition` until it holds or `patience` runs out; whether it held.
template <typename Condition>
bool eventually(Condition condition)
{
    const auto deadline = std::chrono::steady_clock::now() + patience;
    while (!condition()) {
        if (std::chrono::steady_clock::now() > deadline) {
            return false;
        }
        std::this_thread::sleep_for(std::chrono::microseconds{100});
    }
    return true;
}
constexpr std::uint64_t guest_base = 0x100000; // guest physical address of the shared memory

/// The server side: controller, subsystem and vfio-user server on a thread of their own.
struct device {
    nvmekit::transport::mapped_memory memory;
    nvmekit::transport::eventfd_interrupts interrupts{traits::limits.msix_vectors};
    nvmekit::steady_clock clock;
    nvmekit::subsystem<nvmekit::any_backend> subsystem{{.nqn = "nqn.2026-11.io.nvmekit:vfio-user-test"}};
    controller_type ctrl;
    vu::server<controller_type> server;
    std::atomic<bool> stop{false};
    std::thread thread;

    explicit device(const std::string& path,
                    std::chrono::milliseconds dma_reply_timeout = std::chrono::seconds{5})
        : ctrl{memory, interrupts, clock, (subsystem.add_namespace(nvmekit::ram_backend{1 << 20}), subsystem)}
        , server{ctrl,
                 memory,
                 interrupts,
                 {.socket_path = path,
                  .function = {.device_id = 0x0a0a},
                  .dma_reply_timeout = dma_reply_timeout}}
    {
        thread = std::thread{[this] {
            while (!stop.load()) {
                server.run_once(std::chrono::milliseconds{1});
            }
        }};
    }
    ~device() { halt(); }
    /// Stops the server's thread, after which its state can be read from the test's.
    void halt()
    {
        stop = true;
        if (thread.joinable()) {
            thread.join();
        }
    }
};

/// A stream socket connected to the server at `path`.
int connect_to(const std::string& path)
{
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::memcpy(address.sun_path, path.c_str(), path.size());
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    // The server listens from its construction (before the device's thread starts), so the
    // connection is queued at once, even while the server still serves a previous client.
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
        ADD_FAILURE() << "cannot connect to " << path << ": " << std::strerror(errno);
    }
    return fd;
}

/// The testing client, checking that the server accepts every region access.
class client : public nvmekit::testing::vfio_user_client {
public:
    explicit client(const std::string& path) : vfio_user_client{path, {.patience = patience}} {}

    std::uint64_t read_region(vu::region_index region, std::uint64_t offset, std::uint32_t count)
    {
        const auto value = region_read(region, offset, count);
        EXPECT_TRUE(value.has_value()) << "REGION_READ refused";
        return value.value_or(0);
    }
    void write_region(vu::region_index region, std::uint64_t offset, std::uint32_t count, std::uint64_t value)
    {
        EXPECT_TRUE(region_write(region, offset, count, value)) << "REGION_WRITE refused";
    }
};

/// Guest RAM shared with the server through a memfd, as QEMU's memory-backend-memfd does it.
struct guest_memory {
    int fd = ::memfd_create("guest", MFD_CLOEXEC);
    std::byte* data = nullptr;
    guest_memory()
    {
        EXPECT_EQ(::ftruncate(fd, guest_bytes), 0);
        data =
            static_cast<std::byte*>(::mmap(nullptr, guest_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
    }
    ~guest_memory()
    {
        ::munmap(data, guest_bytes);
        ::close(fd);
    }
    template <typename T>
    void store(std::uint64_t address, const T& value)
    {
        std::memcpy(data + (address - guest_base), &value, sizeof value);
    }
    template <typename T>
    T load(std::uint64_t address) const
    {
        T value{};
        std::memcpy(&value, data + (address - guest_base), sizeof value);
        return value;
    }
};

std::string socket_path(const char* name)
{
    return "/tmp/nvmekit-" + std::to_string(::getpid()) + "-" + name + ".sock";
}

std::vector<std::byte> version_request() { return nvmekit::testing::vfio_user_client::version_payload(); }

/// Negotiates and maps the guest memory; false when the server refused either.
bool connect_and_map_memory(client& c, guest_memory& guest)
{
    return c.negotiate() == 0U && c.map_dma(guest.fd, guest_base, guest_bytes) == 0U;
}

/// A SET_IRQS request for the first interrupt of `index`, with its data and action `flags`.
vu::irq_set first_irq_set(vu::irq_index index, vu::irq_set_flags flags)
{
    vu::irq_set set{};
    set.argsz = sizeof set;
    set.flags = flags;
    set.index = static_cast<std::uint32_t>(index);
    set.start = 0;
    set.count = 1;
    return set;
}

/// The flags of a SET_IRQS request giving an interrupt its eventfd.
vu::irq_set_flags eventfd_trigger()
{
    return vu::irq_set_flags{}
        .with(vu::irq_set_flags::data_eventfd, true)
        .with(vu::irq_set_flags::action_trigger, true);
}

/// Negotiates, maps the guest memory and gives MSI-X vector 0 an eventfd.
int connect_and_map(client& c, guest_memory& guest)
{
    EXPECT_TRUE(connect_and_map_memory(c, guest));
    const int vector0 = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    const auto set = first_irq_set(vu::irq_index::msix, eventfd_trigger());
    const std::array irq_fds{vector0};
    EXPECT_EQ(client::error_of(c.call(vu::command::device_set_irqs, set, irq_fds)), 0U);
    return vector0;
}

TEST(vfio_user_server, presents_an_nvme_pci_function)
{
    const auto path = socket_path("info");
    device d{path};
    client c{path};
    EXPECT_EQ(client::error_of(c.call(vu::command::version, std::span<const std::byte>{version_request()})),
              0U);

    vu::device_info info_request{};
    info_request.argsz = sizeof info_request;
    const auto info_reply = c.call(vu::command::device_get_info, info_request);
    ASSERT_EQ(info_reply.size(), vu::header_size + sizeof(vu::device_info));
    vu::device_info info{};
    std::memcpy(&info, info_reply.data() + vu::header_size, sizeof info);
    EXPECT_TRUE(info.flags.get(vu::device_info_flags::pci));
    EXPECT_TRUE(info.flags.get(vu::device_info_flags::reset));
    EXPECT_EQ(info.num_regions, vu::pci_num_regions);
    EXPECT_EQ(info.num_irqs, vu::pci_num_irqs);

    vu::region_info region_request{};
    region_request.argsz = sizeof region_request;
    region_request.index = static_cast<std::uint32_t>(vu::region_index::bar0);
    const auto region_reply = c.call(vu::command::device_get_region_info, region_request);
    vu::region_info bar0{};
    std::memcpy(&bar0, region_reply.data() + vu::header_size, sizeof bar0);
    EXPECT_EQ(bar0.size, d.ctrl.bar0_size());
    EXPECT_GE(bar0.size, 16384U);

    // Config space: vendor/device, class code 01:08:02, the capability list.
    EXPECT_EQ(c.read_region(vu::region_index::config, 0, 4), 0x0a0af0e5U);
    EXPECT_EQ(c.read_region(vu::region_index::config, 8, 4) >> 8, 0x010802U);
    EXPECT_NE(c.read_region(vu::region_index::config, 0x34, 1), 0U);
    // BAR0 does not decode until Memory Space Enable is set: reads give all ones, writes are dropped.
    EXPECT_EQ(c.read_region(vu::region_index::bar0, 8, 4), 0xffff'ffffU);
    c.write_region(vu::region_index::bar0, 0x24, 4, 0x000f'000f);
    c.write_region(vu::region_index::config, 4, 2, 0x0002);        // Memory Space Enable
    EXPECT_EQ(c.read_region(vu::region_index::bar0, 0x24, 4), 0U); // AQA kept its reset value
    // BAR0 registers: CAP and VS read through REGION_READ, 8 bytes at once.
    const spec::cap_register cap{c.read_region(vu::region_index::bar0, 0, 8)};
    EXPECT_EQ(cap.get(spec::cap_register::mqes), 255U);
    EXPECT_EQ(c.read_region(vu::region_index::bar0, 8, 4), 0x00020000U);
    // QEMU reads the whole config space at once: answered dword by dword.
    const vu::region_access all{0, static_cast<std::uint32_t>(vu::region_index::config), 4096};
    const auto whole = c.call(vu::command::region_read, all);
    ASSERT_EQ(whole.size(), vu::header_size + sizeof all + 4096);
}

TEST(vfio_user_server, a_guest_brings_the_controller_up_and_gets_an_interrupt)
{
    const auto path = socket_path("bringup");
    device d{path};
    client c{path};
    guest_memory guest;
    const int vector0 = connect_and_map(c, guest);

    // PCI: memory space and bus master on, MSI-X enabled.
    c.write_region(vu::region_index::config, 4, 2, 0x0006);
    const std::uint32_t msix_cap = 0x50;
    c.write_region(vu::region_index::config, msix_cap + 2, 2, 0x8000);
    // MSI-X table entry 0: an address and data, unmasked.
    const std::uint64_t table = d.ctrl.msix_table_offset();
    c.write_region(vu::region_index::bar0, table, 8, 0xfee00000);
    c.write_region(vu::region_index::bar0, table + 8, 4, 0x41);
    c.write_region(vu::region_index::bar0, table + 12, 4, 0);

    // NVMe bring-up: admin queues in guest memory, CC.EN = 1, wait for CSTS.RDY.
    const std::uint64_t asq = guest_base + 0x10000;
    const std::uint64_t acq = guest_base + 0x20000;
    const std::uint64_t buffer = guest_base + 0x30000;
    c.write_region(vu::region_index::bar0, 0x24, 4, (15U << 16) | 15U); // AQA: 16 entries each
    c.write_region(vu::region_index::bar0, 0x28, 8, asq);
    c.write_region(vu::region_index::bar0, 0x30, 8, acq);
    const auto cc = spec::cc_register{}
                        .with(spec::cc_register::en, true)
                        .with(spec::cc_register::iosqes, 6)
                        .with(spec::cc_register::iocqes, 4);
    c.write_region(vu::region_index::bar0, 0x14, 4, cc.raw);
    ASSERT_TRUE(eventually([&] { return (c.read_region(vu::region_index::bar0, 0x1c, 4) & 1U) != 0; }))
        << "CSTS.RDY never became 1";

    // Identify Controller through the admin queue; the completion raises vector 0's eventfd.
    spec::submission_queue_entry identify{};
    identify.cdw0.set(spec::command_dword0::opc, static_cast<std::uint8_t>(spec::admin_opcode::identify));
    identify.cdw0.set(spec::command_dword0::cid, 0x42);
    spec::identify_view{.cns = spec::cns::identify_controller}.encode(identify);
    identify.dptr.prp1 = buffer;
    guest.store(asq, identify);
    c.write_region(vu::region_index::bar0, spec::sq_tail_doorbell_offset(0, 0), 4, 1);
    pollfd wait{vector0, POLLIN, 0};
    ASSERT_EQ(::poll(&wait, 1, static_cast<int>(patience.count())), 1) << "no MSI-X interrupt";
    const auto cqe = guest.load<spec::completion_queue_entry>(acq);
    EXPECT_EQ(cqe.cid, 0x42);
    EXPECT_TRUE(cqe.status().is_success());
    EXPECT_TRUE(cqe.phase());
    const auto id = guest.load<spec::identify_controller>(buffer);
    EXPECT_EQ(id.subsystem_nqn(), "nqn.2026-11.io.nvmekit:vfio-user-test");
    EXPECT_EQ(id.vid, 0xf0e5);

    // A command whose data pointer is outside the mapped memory: Data Transfer Error.
    identify.cdw0.set(spec::command_dword0::cid, 0x43);
    identify.dptr.prp1 = guest_base + guest_bytes + 0x1000;
    guest.store(asq + 64, identify);
    c.write_region(vu::region_index::bar0, spec::sq_tail_doorbell_offset(0, 0), 4, 2);
    spec::completion_queue_entry second{};
    ASSERT_TRUE(eventually([&] {
        second = guest.load<spec::completion_queue_entry>(acq + 16);
        return second.phase();
    })) << "no completion for CID 0x43";
    EXPECT_EQ(second.cid, 0x43);
    EXPECT_EQ(second.status(), spec::status{spec::generic_status::data_transfer_error}.with_dnr());

    // The guest places BAR0 over mapped guest memory and points a data buffer at it: the
    // controller refuses to write its own registers' window (Data Transfer Error), and the
    // memory there keeps its bytes.
    const std::uint64_t bar = guest_base + 0x80000;
    c.write_region(vu::region_index::config, 0x10, 4, static_cast<std::uint32_t>(bar) | 0x4U);
    c.write_region(vu::region_index::config, 0x14, 4, static_cast<std::uint32_t>(bar >> 32));
    guest.store(bar + 0x100, std::uint64_t{0x1122334455667788});
    identify.cdw0.set(spec::command_dword0::cid, 0x44);
    identify.dptr.prp1 = bar + 0x100;
    guest.store(asq + 128, identify);
    c.write_region(vu::region_index::bar0, spec::sq_tail_doorbell_offset(0, 0), 4, 3);
    spec::completion_queue_entry third{};
    ASSERT_TRUE(eventually([&] {
        third = guest.load<spec::completion_queue_entry>(acq + 32);
        return third.phase();
    })) << "no completion for CID 0x44";
    EXPECT_EQ(third.cid, 0x44);
    EXPECT_EQ(third.status(), spec::status{spec::generic_status::data_transfer_error}.with_dnr());
    EXPECT_EQ(guest.load<std::uint64_t>(bar + 0x100), 0x1122334455667788U);
    ::close(vector0);
}

TEST(vfio_user_server, malformed_messages_get_errors_and_the_server_survives)
{
    const auto path = socket_path("malformed");
    device d{path};
    {
        client c{path};
        // Anything before VERSION is refused.
        vu::device_info info{};
        info.argsz = sizeof info;
        EXPECT_EQ(client::error_of(c.call(vu::command::device_get_info, info)),
                  static_cast<std::uint32_t>(EINVAL));
        EXPECT_EQ(
            client::error_of(c.call(vu::command::version, std::span<const std::byte>{version_request()})),
            0U);
        // Unknown command, short payload, region out of range, unsupported DMA_READ.
        EXPECT_EQ(client::error_of(c.call(static_cast<vu::command>(99), std::span<const std::byte>{})),
                  static_cast<std::uint32_t>(ENOTSUP));
        EXPECT_EQ(client::error_of(c.call(vu::command::device_get_info, std::span<const std::byte>{})),
                  static_cast<std::uint32_t>(EINVAL));
        const vu::region_access beyond{d.ctrl.bar0_size() - 2,
                                       static_cast<std::uint32_t>(vu::region_index::bar0), 4};
        EXPECT_EQ(client::error_of(c.call(vu::command::region_read, beyond)),
                  static_cast<std::uint32_t>(EINVAL));
        EXPECT_EQ(client::error_of(c.call(vu::command::dma_read, std::span<const std::byte>{})),
                  static_cast<std::uint32_t>(ENOTSUP));
        // A header claiming a huge message: the stream is closed, not trusted.
        std::vector<std::byte> bad(vu::header_size);
        vu::message_header header{};
        header.message_id = 1;
        header.command_code = vu::command::region_write;
        header.message_size = 0xffffffffU;
        std::memcpy(bad.data(), &header, sizeof header);
        c.send_raw(bad);
        EXPECT_TRUE(c.receive().empty()); // closed by the server
    }
    // The next client is served.
    client next{path};
    EXPECT_EQ(
        client::error_of(next.call(vu::command::version, std::span<const std::byte>{version_request()})), 0U);
    EXPECT_EQ(next.read_region(vu::region_index::config, 0, 2), 0xf0e5U);
    EXPECT_GE(d.server.statistics().clients, 2U);
    EXPECT_EQ(d.server.statistics().broken_streams, 1U);
}

TEST(vfio_user_server, a_client_that_disconnects_leaves_the_function_reset)
{
    const auto path = socket_path("reconnect");
    device d{path};
    guest_memory guest;
    {
        client c{path};
        const int vector0 = connect_and_map(c, guest);
        c.write_region(vu::region_index::config, 4, 2, 0x0006); // memory space and bus master
        c.write_region(vu::region_index::bar0, 0x24, 4, (15U << 16) | 15U);
        c.write_region(vu::region_index::bar0, 0x28, 8, guest_base + 0x10000);
        c.write_region(vu::region_index::bar0, 0x30, 8, guest_base + 0x20000);
        c.write_region(vu::region_index::bar0, 0x14, 4,
                       spec::cc_register{}
                           .with(spec::cc_register::en, true)
                           .with(spec::cc_register::iosqes, 6)
                           .with(spec::cc_register::iocqes, 4)
                           .raw);
        ::close(vector0);
    }
    client next{path};
    EXPECT_EQ(
        client::error_of(next.call(vu::command::version, std::span<const std::byte>{version_request()})), 0U);
    EXPECT_EQ(next.read_region(vu::region_index::config, 4, 2), 0U); // Command back to its reset value
    next.write_region(vu::region_index::config, 4, 2, 0x0002);
    EXPECT_EQ(next.read_region(vu::region_index::bar0, 0x14, 4), 0U); // CC back to its reset value
    EXPECT_EQ(next.read_region(vu::region_index::bar0, 0x1c, 4) & 1U, 0U);
}

/// A DMA_UNMAP request of [address, address + size).
vu::dma_unmap unmap_request(std::uint64_t address, std::uint64_t size)
{
    vu::dma_unmap unmap{};
    unmap.argsz = sizeof unmap;
    unmap.address = address;
    unmap.size = size;
    return unmap;
}

TEST(vfio_user_server, an_unmap_that_matches_no_mapping_is_refused_and_unmaps_nothing)
{
    const auto path = socket_path("unmap");
    device d{path};
    client c{path};
    guest_memory guest;
    const int vector0 = connect_and_map(c, guest);
    ASSERT_EQ(d.memory.regions().size(), 1U);
    const auto enoent = static_cast<std::uint32_t>(ENOENT); // as libvfio-user answers it
    // Part of the mapping, more than it, a range beside it: no mapping is exactly that range.
    EXPECT_EQ(client::error_of(c.call(vu::command::dma_unmap, unmap_request(guest_base, 0x1000))), enoent);
    EXPECT_EQ(client::error_of(
                  c.call(vu::command::dma_unmap, unmap_request(guest_base + 0x1000, guest_bytes - 0x1000))),
              enoent);
    EXPECT_EQ(client::error_of(c.call(vu::command::dma_unmap, unmap_request(guest_base, 2 * guest_bytes))),
              enoent);
    EXPECT_EQ(
        client::error_of(c.call(vu::command::dma_unmap, unmap_request(guest_base + guest_bytes, 0x1000))),
        enoent);
    EXPECT_EQ(d.server.statistics().error_replies, 4U);
    // Every mapping is kept: the controller still reaches guest memory.
    ASSERT_EQ(d.memory.regions().size(), 1U);
    EXPECT_EQ(d.memory.regions()[0].address, guest_base);
    EXPECT_EQ(d.memory.regions()[0].size, guest_bytes);
    guest.store<std::uint64_t>(guest_base + 0x3000, 0x0123456789abcdefU);
    std::uint64_t seen = 0;
    EXPECT_FALSE(d.memory.read(guest_base + 0x3000, std::as_writable_bytes(std::span{&seen, 1})));
    EXPECT_EQ(seen, 0x0123456789abcdefU);

    // The exact range unmaps it, once.
    EXPECT_EQ(client::error_of(c.call(vu::command::dma_unmap, unmap_request(guest_base, guest_bytes))), 0U);
    EXPECT_TRUE(d.memory.regions().empty());
    EXPECT_EQ(client::error_of(c.call(vu::command::dma_unmap, unmap_request(guest_base, guest_bytes))),
              enoent);
    ::close(vector0);
}

TEST(vfio_user_server, a_region_mapped_without_a_descriptor_unmaps_like_any_other)
{
    // QEMU maps guest memory it cannot share (no file descriptor) too, and unmaps it later.
    const auto path = socket_path("unmap-nofd");
    device d{path};
    client c{path};
    EXPECT_EQ(client::error_of(c.call(vu::command::version, std::span<const std::byte>{version_request()})),
              0U);
    vu::dma_map map{};
    map.argsz = sizeof map;
    map.flags = vu::dma_map_flags{}.with(vu::dma_map_flags::read, true).with(vu::dma_map_flags::write, true);
    map.address = 0x40000000;
    map.size = 0x10000;
    ASSERT_EQ(client::error_of(c.call(vu::command::dma_map, map)), 0U);
    EXPECT_TRUE(d.memory.regions().empty()); // not reachable: the server has nothing to map
    EXPECT_EQ(client::error_of(c.call(vu::command::dma_unmap, unmap_request(0x40000000, 0x1000))),
              static_cast<std::uint32_t>(ENOENT));
    EXPECT_EQ(client::error_of(c.call(vu::command::dma_unmap, unmap_request(0x40000000, 0x10000))), 0U);
    EXPECT_EQ(client::error_of(c.call(vu::command::dma_unmap, unmap_request(0x40000000, 0x10000))),
              static_cast<std::uint32_t>(ENOENT));
}

/// Where the tests' admin queues and Identify data live in guest memory.
constexpr std::uint64_t admin_sq = guest_base + 0x10000;
constexpr std::uint64_t admin_cq = guest_base + 0x20000;
constexpr std::uint64_t identify_buffer = guest_base + 0x30000;

/// AQA (16 entries each), ASQ and ACQ, then CC.EN = 1 as Linux writes it; true once CSTS.RDY reads 1.
template <typename Client>
bool enable_controller(Client& c, std::uint64_t sq = admin_sq, std::uint64_t cq = admin_cq)
{
    c.write_region(vu::region_index::bar0, 0x24, 4, (15U << 16) | 15U);
    c.write_region(vu::region_index::bar0, 0x28, 8, sq);
    c.write_region(vu::region_index::bar0, 0x30, 8, cq);
    c.write_region(vu::region_index::bar0, 0x14, 4,
                   spec::cc_register{}
                       .with(spec::cc_register::en, true)
                       .with(spec::cc_register::iosqes, 6)
                       .with(spec::cc_register::iocqes, 4)
                       .raw);
    return eventually([&] { return (c.read_region(vu::region_index::bar0, 0x1c, 4) & 1U) != 0; });
}

/// Identify Controller with command identifier `cid`, its data to `buffer`.
spec::submission_queue_entry identify_controller_command(std::uint16_t cid, std::uint64_t buffer)
{
    spec::submission_queue_entry identify{};
    identify.cdw0.set(spec::command_dword0::opc, static_cast<std::uint8_t>(spec::admin_opcode::identify));
    identify.cdw0.set(spec::command_dword0::cid, cid);
    spec::identify_view{.cns = spec::cns::identify_controller}.encode(identify);
    identify.dptr.prp1 = buffer;
    return identify;
}

/// Gives the function's INTx an eventfd (SET_IRQS, trigger); returns the client's own descriptor
/// of it to watch, or -1 when the server refused.
int give_intx_eventfd(client& c)
{
    const int intx = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    const int watcher = ::dup(intx);
    const auto set = first_irq_set(vu::irq_index::intx, eventfd_trigger());
    const std::array irq_fds{intx};
    if (client::error_of(c.call(vu::command::device_set_irqs, set, irq_fds)) != 0U) {
        ::close(watcher);
        return -1;
    }
    return watcher;
}

/// SET_IRQS unmasking INTx, as the client sends it after the guest's end of interrupt.
vu::irq_set intx_unmask_request()
{
    return first_irq_set(vu::irq_index::intx, vu::irq_set_flags{}
                                                  .with(vu::irq_set_flags::data_none, true)
                                                  .with(vu::irq_set_flags::action_unmask, true));
}

TEST(vfio_user_server, a_guest_without_msix_gets_intx_on_its_eventfd)
{
    // A guest booted without MSI (Linux pci=nomsi, FreeBSD hw.nvme.force_intx=1): the client
    // gives the INTx eventfd, unmasks the line after each end of interrupt, and never enables MSI-X.
    const auto path = socket_path("intx");
    device d{path};
    client c{path};
    guest_memory guest;
    ASSERT_TRUE(connect_and_map_memory(c, guest));

    vu::irq_info info_request{};
    info_request.argsz = sizeof info_request;
    info_request.index = static_cast<std::uint32_t>(vu::irq_index::intx);
    const auto info_reply = c.call(vu::command::device_get_irq_info, info_request);
    ASSERT_EQ(info_reply.size(), vu::header_size + sizeof(vu::irq_info));
    vu::irq_info info{};
    std::memcpy(&info, info_reply.data() + vu::header_size, sizeof info);
    EXPECT_EQ(info.count, 1U);
    EXPECT_TRUE(info.flags.get(vu::irq_info_flags::eventfd));
    EXPECT_TRUE(info.flags.get(vu::irq_info_flags::maskable));
    EXPECT_TRUE(info.flags.get(vu::irq_info_flags::automasked));

    const int watcher = give_intx_eventfd(c);
    ASSERT_GE(watcher, 0);
    const vu::irq_set unmask = intx_unmask_request();

    c.write_region(vu::region_index::config, 4, 2, 0x0006); // memory space and bus master
    ASSERT_TRUE(enable_controller(c));
    guest.store(admin_sq, identify_controller_command(0x61, identify_buffer));
    c.write_region(vu::region_index::bar0, spec::sq_tail_doorbell_offset(0, 0), 4, 1);
    pollfd wait{watcher, POLLIN, 0};
    ASSERT_EQ(::poll(&wait, 1, static_cast<int>(patience.count())), 1) << "no INTx signal";
    std::uint64_t count = 0;
    ASSERT_EQ(::read(watcher, &count, sizeof count), static_cast<ssize_t>(sizeof count));
    EXPECT_EQ(count, 1U);
    EXPECT_EQ(guest.load<spec::completion_queue_entry>(admin_cq).cid, 0x61);
    EXPECT_NE(c.read_region(vu::region_index::config, 6, 2) & 0x8U, 0U); // Status.Interrupt Status

    // The line masked itself: while the guest has not consumed the entry, an unmask signals again.
    ASSERT_EQ(client::error_of(c.call(vu::command::device_set_irqs, unmask)), 0U);
    ASSERT_EQ(::poll(&wait, 1, static_cast<int>(patience.count())), 1) << "no INTx signal after the unmask";
    ASSERT_EQ(::read(watcher, &count, sizeof count), static_cast<ssize_t>(sizeof count));
    // The guest consumes it (CQ head doorbell), then the client unmasks: the pin is low, nothing
    // more is signalled, and Interrupt Status reads 0.
    c.write_region(vu::region_index::bar0, spec::cq_head_doorbell_offset(0, 0), 4, 1);
    EXPECT_TRUE(eventually([&] { return (c.read_region(vu::region_index::config, 6, 2) & 0x8U) == 0; }));
    ASSERT_EQ(client::error_of(c.call(vu::command::device_set_irqs, unmask)), 0U);
    EXPECT_EQ(c.read_region(vu::region_index::bar0, 0x1c, 4) & 1U, 1U); // a round trip after the unmask
    EXPECT_EQ(::poll(&wait, 1, 0), 0);
    ::close(watcher);
}

TEST(vfio_user_server, nothing_is_fetched_posted_or_signalled_while_bus_master_enable_is_clear)
{
    const auto path = socket_path("busmaster");
    device d{path};
    client c{path};
    guest_memory guest;
    const int vector0 = connect_and_map(c, guest);
    c.write_region(vu::region_index::config, 4, 2, 0x0002);        // memory space only
    c.write_region(vu::region_index::config, 0x50 + 2, 2, 0x8000); // MSI-X enabled
    const std::uint64_t table = d.ctrl.msix_table_offset();
    c.write_region(vu::region_index::bar0, table, 8, 0xfee00000);
    c.write_region(vu::region_index::bar0, table + 8, 4, 0x41);
    c.write_region(vu::region_index::bar0, table + 12, 4, 0);
    ASSERT_TRUE(enable_controller(c)); // CC.EN needs no bus mastering: the controller becomes ready
    guest.store(admin_sq, identify_controller_command(0x71, identify_buffer));
    c.write_region(vu::region_index::bar0, spec::sq_tail_doorbell_offset(0, 0), 4, 1);
    // Several round trips, each followed by a poll of the server: no completion, no interrupt.
    for (int i = 0; i < 10; ++i) {
        static_cast<void>(c.read_region(vu::region_index::bar0, 0x1c, 4));
    }
    pollfd wait{vector0, POLLIN, 0};
    EXPECT_EQ(::poll(&wait, 1, 0), 0);
    EXPECT_FALSE(guest.load<spec::completion_queue_entry>(admin_cq).phase());
    // Bus Master Enable: the command runs, completes and raises vector 0.
    c.write_region(vu::region_index::config, 4, 2, 0x0006);
    ASSERT_EQ(::poll(&wait, 1, static_cast<int>(patience.count())), 1) << "no MSI-X interrupt";
    const auto cqe = guest.load<spec::completion_queue_entry>(admin_cq);
    EXPECT_TRUE(cqe.phase());
    EXPECT_EQ(cqe.cid, 0x71);
    EXPECT_TRUE(cqe.status().is_success());
    ::close(vector0);
}

TEST(vfio_user_server, an_unmask_right_after_the_cq_head_doorbell_signals_nothing)
{
    // QEMU's vfio-user client ends a guest's INTx with its next BAR access: the guest's interrupt
    // handler writes the CQ head doorbell (a posted write) and the client sends the INTx unmask
    // right behind it, so both arrive in one batch. The doorbell has consumed the entry: the pin
    // is low by the time of the unmask, and a signal then would be spurious (QEMU asserts the line
    // until the next BAR access, the guest's handler finds nothing, and Linux ends up disabling
    // the interrupt as one nobody handles).
    const auto path = socket_path("intx-eoi");
    device d{path};
    client c{path};
    guest_memory guest;
    ASSERT_TRUE(connect_and_map_memory(c, guest));
    const int watcher = give_intx_eventfd(c);
    ASSERT_GE(watcher, 0);
    const vu::irq_set unmask = intx_unmask_request();

    c.write_region(vu::region_index::config, 4, 2, 0x0006); // memory space and bus master
    ASSERT_TRUE(enable_controller(c));

    pollfd wait{watcher, POLLIN, 0};
    std::uint64_t count = 0;
    for (std::uint16_t command = 0; command < 4; ++command) {
        guest.store(admin_sq + command * 64U,
                    identify_controller_command(static_cast<std::uint16_t>(0x70 + command), identify_buffer));
        c.write_region(vu::region_index::bar0, spec::sq_tail_doorbell_offset(0, 0), 4, command + 1U);
        ASSERT_EQ(::poll(&wait, 1, static_cast<int>(patience.count())), 1)
            << "no INTx signal for command " << command;
        ASSERT_EQ(::read(watcher, &count, sizeof count), static_cast<ssize_t>(sizeof count));
        EXPECT_EQ(count, 1U);
        EXPECT_EQ(guest.load<spec::completion_queue_entry>(admin_cq + command * 16U).cid, 0x70 + command);

        // The guest's handler: it consumed the entry, writes the CQ head doorbell; the client
        // unmasks right behind the write, without waiting for its reply.
        auto batch =
            c.message(vu::command::region_write,
                      client::region_write_payload(vu::region_index::bar0,
                                                   spec::cq_head_doorbell_offset(0, 0), 4, command + 1U));
        const auto unmask_bytes =
            c.message(vu::command::device_set_irqs, std::as_bytes(std::span{&unmask, 1}));
        batch.insert(batch.end(), unmask_bytes.begin(), unmask_bytes.end());
        c.send_raw(batch);
        EXPECT_EQ(client::error_of(c.receive()), 0U) << "the doorbell write";
        EXPECT_EQ(client::error_of(c.receive()), 0U) << "the unmask";
        EXPECT_EQ(c.read_region(vu::region_index::bar0, 0x1c, 4) & 1U, 1U); // a round trip after both
        EXPECT_EQ(::poll(&wait, 1, 0), 0)
            << "a spurious INTx signal after command " << command << "'s entry was consumed";
        EXPECT_EQ(c.read_region(vu::region_index::config, 6, 2) & 0x8U, 0U) << "Status.Interrupt Status";
    }
    ::close(watcher);
}

// ---- DMA by messages ------------------------------------------------------------------------------

/// A client whose guest memory the server cannot map (QEMU without a shared memory backend): it
/// maps it without a file descriptor and serves the server's DMA_READ/DMA_WRITE requests from a
/// thread of its own, as QEMU's vfio-user proxy does, while the test sends commands.
class messaging_client {
public:
    messaging_client(const std::string& path, std::uint64_t base, std::size_t bytes)
        : fd_{connect_to(path)}, base_{base}, memory_(bytes)
    {
        reader_ = std::thread{[this] { serve(); }};
    }
    messaging_client(const messaging_client&) = delete;
    messaging_client& operator=(const messaging_client&) = delete;
    ~messaging_client()
    {
        ::shutdown(fd_, SHUT_RDWR);
        reader_.join();
        ::close(fd_);
    }

    /// Errno the client answers DMA requests with (0: it serves them).
    std::atomic<std::uint32_t> fail_with{0};
    /// Whether the client closes its socket on the next DMA request instead of answering it.
    std::atomic<bool> vanish_on_dma{false};
    /// Whether the client leaves DMA requests unanswered.
    std::atomic<bool> ignore_dma{false};
    /// Runs `hook` on the client's thread when the next DMA request arrives, before it is answered.
    void before_next_dma_reply(std::function<void(messaging_client&)> hook)
    {
        const std::lock_guard lock{hook_mutex_};
        hook_ = std::move(hook);
    }

    std::atomic<std::uint64_t> dma_reads{0};
    std::atomic<std::uint64_t> dma_writes{0};
    std::atomic<std::uint64_t> largest_count{0};
    std::atomic<std::uint64_t> bad_requests{0}; ///< outside the memory, or malformed

    /// Sends a command, with `fds` as SCM_RIGHTS data; returns its message ID.
    std::uint16_t send(vu::command code, std::span<const std::byte> payload, std::span<const int> fds = {})
    {
        const std::uint16_t id = ++id_;
        std::vector<std::byte> bytes(vu::header_size + payload.size());
        vu::message_header header{};
        header.message_id = id;
        header.command_code = code;
        header.message_size = static_cast<std::uint32_t>(bytes.size());
        std::memcpy(bytes.data(), &header, sizeof header);
        if (!payload.empty()) {
            std::memcpy(bytes.data() + vu::header_size, payload.data(), payload.size());
        }
        write_all(bytes, fds);
        return id;
    }
    template <typename T>
    std::uint16_t send(vu::command code, const T& payload, std::span<const int> fds = {})
    {
        return send(code, std::as_bytes(std::span{&payload, 1}), fds);
    }

    /// The next reply to one of the client's commands; empty when none came.
    std::vector<std::byte> next_reply()
    {
        std::unique_lock lock{replies_mutex_};
        if (!replies_ready_.wait_for(lock, patience, [&] { return !replies_.empty() || closed_; }) ||
            replies_.empty()) {
            return {};
        }
        auto reply = std::move(replies_.front());
        replies_.pop_front();
        return reply;
    }
    template <typename T>
    std::vector<std::byte> call(vu::command code, const T& payload, std::span<const int> fds = {})
    {
        send(code, payload, fds);
        return next_reply();
    }

    std::uint64_t read_region(vu::region_index region, std::uint64_t offset, std::uint32_t count)
    {
        const auto reply = call(vu::command::region_read,
                                vu::region_access{offset, static_cast<std::uint32_t>(region), count});
        std::uint64_t value = 0;
        EXPECT_EQ(client::error_of(reply), 0U);
        if (reply.size() >= vu::header_size + sizeof(vu::region_access) + count) {
            std::memcpy(&value, reply.data() + vu::header_size + sizeof(vu::region_access), count);
        }
        return value;
    }
    void write_region(vu::region_index region, std::uint64_t offset, std::uint32_t count, std::uint64_t value)
    {
        const auto payload = client::region_write_payload(region, offset, count, value);
        EXPECT_EQ(client::error_of(call(vu::command::region_write, std::span<const std::byte>{payload})), 0U);
    }
    std::vector<std::byte> call(vu::command code, std::span<const std::byte> payload)
    {
        send(code, payload);
        return next_reply();
    }

    template <typename T>
    void store(std::uint64_t address, const T& value)
    {
        const std::lock_guard lock{memory_mutex_};
        std::memcpy(memory_.data() + (address - base_), &value, sizeof value);
    }
    template <typename T>
    T load(std::uint64_t address)
    {
        const std::lock_guard lock{memory_mutex_};
        T value{};
        std::memcpy(&value, memory_.data() + (address - base_), sizeof value);
        return value;
    }
    void fill(std::uint64_t address, std::size_t length, std::uint8_t seed)
    {
        const std::lock_guard lock{memory_mutex_};
        for (std::size_t i = 0; i < length; ++i) {
            memory_[address - base_ + i] = static_cast<std::byte>(seed + i * 7U);
        }
    }
    bool equal(std::uint64_t first, std::uint64_t second, std::size_t length)
    {
        const std::lock_guard lock{memory_mutex_};
        return std::memcmp(memory_.data() + (first - base_), memory_.data() + (second - base_), length) == 0;
    }

private:
    void write_all(std::span<const std::byte> bytes, std::span<const int> fds = {})
    {
        const std::lock_guard lock{send_mutex_};
        static_cast<void>(vu::send_message(fd_, bytes, fds)); // a failure shows as no reply
    }
    bool read_all(std::span<std::byte> out)
    {
        std::size_t done = 0;
        while (done < out.size()) {
            const ssize_t got = ::read(fd_, out.data() + done, out.size() - done);
            if (got <= 0) {
                return false;
            }
            done += static_cast<std::size_t>(got);
        }
        return true;
    }

    /// The client's reading thread: replies go to the test, DMA requests are served.
    void serve()
    {
        for (;;) {
            std::vector<std::byte> message(vu::header_size);
            if (!read_all(message)) {
                break;
            }
            vu::message_header header{};
            std::memcpy(&header, message.data(), sizeof header);
            if (header.message_size < vu::header_size) {
                break;
            }
            message.resize(header.message_size);
            if (!read_all(std::span{message}.subspan(vu::header_size))) {
                break;
            }
            if (header.flags.get(vu::message_flags::type) == vu::message_type::reply) {
                const std::lock_guard lock{replies_mutex_};
                replies_.push_back(std::move(message));
                replies_ready_.notify_all();
                continue;
            }
            if (vanish_on_dma) {
                ::shutdown(fd_, SHUT_RDWR);
                break;
            }
            std::function<void(messaging_client&)> hook;
            {
                const std::lock_guard lock{hook_mutex_};
                hook = std::exchange(hook_, nullptr);
            }
            if (hook) {
                hook(*this);
            }
            if (!ignore_dma) {
                answer_dma(header, std::span<const std::byte>{message}.subspan(vu::header_size));
            }
        }
        const std::lock_guard lock{replies_mutex_};
        closed_ = true;
        replies_ready_.notify_all();
    }

    void answer_dma(vu::message_header header, std::span<const std::byte> payload)
    {
        vu::dma_access access{};
        const bool is_dma =
            header.command_code == vu::command::dma_read || header.command_code == vu::command::dma_write;
        if (is_dma && payload.size() >= sizeof access) {
            std::memcpy(&access, payload.data(), sizeof access);
        }
        const bool inside = access.address >= base_ && access.count <= memory_.size() &&
                            access.address - base_ <= memory_.size() - access.count;
        const bool sized = header.command_code == vu::command::dma_read
                               ? payload.size() == sizeof access
                               : payload.size() == sizeof access + access.count;
        std::uint64_t largest = largest_count.load();
        while (access.count > largest && !largest_count.compare_exchange_weak(largest, access.count)) {
        }
        header.flags = vu::message_flags{}.with(vu::message_flags::type, vu::message_type::reply);
        std::vector<std::byte> reply(vu::header_size);
        if (!is_dma || !inside || !sized || fail_with != 0) {
            if (!is_dma || !inside || !sized) {
                ++bad_requests;
            }
            header.flags.set(vu::message_flags::error, true);
            header.error_number = fail_with != 0 ? fail_with.load() : static_cast<std::uint32_t>(EINVAL);
        } else if (header.command_code == vu::command::dma_read) {
            ++dma_reads;
            reply.resize(vu::header_size + sizeof access + access.count);
            std::memcpy(reply.data() + vu::header_size, &access, sizeof access);
            const std::lock_guard lock{memory_mutex_};
            std::memcpy(reply.data() + vu::header_size + sizeof access,
                        memory_.data() + (access.address - base_), access.count);
        } else {
            // As QEMU's client answers a DMA_WRITE: the header alone.
            ++dma_writes;
            const std::lock_guard lock{memory_mutex_};
            std::memcpy(memory_.data() + (access.address - base_), payload.data() + sizeof access,
                        access.count);
        }
        header.message_size = static_cast<std::uint32_t>(reply.size());
        std::memcpy(reply.data(), &header, sizeof header);
        write_all(reply);
    }

    int fd_ = -1;
    std::uint64_t base_;
    std::vector<std::byte> memory_;
    std::mutex memory_mutex_;
    std::mutex hook_mutex_;
    std::function<void(messaging_client&)> hook_;
    std::mutex send_mutex_;
    std::mutex replies_mutex_;
    std::condition_variable replies_ready_;
    std::deque<std::vector<std::byte>> replies_;
    bool closed_ = false;
    std::atomic<std::uint16_t> id_{0};
    std::thread reader_;
};

/// Where the message-served guest memory is, and what lives there.
constexpr std::uint64_t message_base = 0x4000'0000;
constexpr std::size_t message_bytes = 1U << 20;
constexpr std::uint64_t message_admin_sq = message_base + 0x0000;
constexpr std::uint64_t message_admin_cq = message_base + 0x1000;
constexpr std::uint64_t message_io_sq = message_base + 0x2000;
constexpr std::uint64_t message_io_cq = message_base + 0x3000;
constexpr std::uint64_t message_identify = message_base + 0x4000;
constexpr std::uint64_t message_data = message_base + 0x10000; // 4 pages written
constexpr std::uint64_t message_read_back = message_base + 0x20000;
constexpr std::uint64_t message_prp_list = message_base + 0x30000;

/// VERSION with the capabilities QEMU proposes, but with `max_data_xfer_size`.
std::vector<std::byte> version_request_with_max_transfer(std::uint64_t max_data_xfer_size)
{
    const std::string json = R"({"capabilities":{"max_msg_fds":16,"max_data_xfer_size":)" +
                             std::to_string(max_data_xfer_size) + R"(,"pgsizes":4096,"max_dma_maps":65535}})";
    std::vector<std::byte> payload(4 + json.size() + 1);
    std::memcpy(payload.data() + 4, json.c_str(), json.size() + 1);
    return payload;
}

/// VERSION, the message-served memory mapped without a descriptor, then memory space and bus
/// master on; true when the client's commands succeeded.
bool connect_and_map_without_descriptor(messaging_client& c, std::uint64_t max_data_xfer_size = 1U << 20)
{
    const auto version =
        c.call(vu::command::version,
               std::span<const std::byte>{version_request_with_max_transfer(max_data_xfer_size)});
    vu::dma_map map{};
    map.argsz = sizeof map;
    map.flags = vu::dma_map_flags{}.with(vu::dma_map_flags::read, true).with(vu::dma_map_flags::write, true);
    map.address = message_base;
    map.size = message_bytes;
    if (client::error_of(version) != 0U || client::error_of(c.call(vu::command::dma_map, map)) != 0U) {
        return false;
    }
    c.write_region(vu::region_index::config, 4, 2, 0x0006);
    return true;
}

/// connect_and_map_without_descriptor, then the controller enabled with its admin queues in the
/// message-served memory; whether all succeeded.
bool bring_up_in_message_memory(messaging_client& c, std::uint64_t max_data_xfer_size = 1U << 20)
{
    return connect_and_map_without_descriptor(c, max_data_xfer_size) &&
           enable_controller(c, message_admin_sq, message_admin_cq);
}

/// Places `sqe` first in the message-served admin SQ and rings its doorbell.
void submit_first_admin_command(messaging_client& c, const spec::submission_queue_entry& sqe)
{
    c.store(message_admin_sq, sqe);
    c.write_region(vu::region_index::bar0, spec::sq_tail_doorbell_offset(0, 0), 4, 1);
}

/// A host driving its queues in the client's message-served memory, polling for completions.
class message_host {
public:
    explicit message_host(messaging_client& c) : c_{c} {}

    /// Submits `sqe` to the admin queue and waits for its completion.
    std::optional<spec::completion_queue_entry> admin(spec::submission_queue_entry sqe)
    {
        return run(sqe, admin_);
    }
    /// Submits `sqe` to I/O queue 1 and waits for its completion.
    std::optional<spec::completion_queue_entry> io(spec::submission_queue_entry sqe) { return run(sqe, io_); }

private:
    /// A queue pair of 16 entries and where the host is in it.
    struct queue_pair {
        std::uint16_t qid;
        std::uint64_t sq;
        std::uint64_t cq;
        std::uint32_t tail = 0;
        std::uint32_t head = 0;
        bool phase = true;
    };

    std::optional<spec::completion_queue_entry> run(spec::submission_queue_entry sqe, queue_pair& queues)
    {
        sqe.cdw0.set(spec::command_dword0::cid, ++cid_);
        c_.store(queues.sq + queues.tail * 64U, sqe);
        queues.tail = (queues.tail + 1) % 16;
        c_.write_region(vu::region_index::bar0, spec::sq_tail_doorbell_offset(queues.qid, 0), 4, queues.tail);
        spec::completion_queue_entry cqe{};
        if (!eventually([&] {
                cqe = c_.load<spec::completion_queue_entry>(queues.cq + queues.head * 16U);
                return cqe.phase() == queues.phase;
            })) {
            return std::nullopt;
        }
        queues.head = (queues.head + 1) % 16;
        if (queues.head == 0) {
            queues.phase = !queues.phase;
        }
        c_.write_region(vu::region_index::bar0, spec::cq_head_doorbell_offset(queues.qid, 0), 4, queues.head);
        return cqe;
    }

    messaging_client& c_;
    std::uint16_t cid_ = 0;
    queue_pair admin_{0, message_admin_sq, message_admin_cq};
    queue_pair io_{1, message_io_sq, message_io_cq};
};

spec::submission_queue_entry admin_command(spec::admin_opcode opcode)
{
    spec::submission_queue_entry sqe{};
    sqe.cdw0.set(spec::command_dword0::opc, static_cast<std::uint8_t>(opcode));
    return sqe;
}

/// Read or Write of `blocks` 512-byte blocks at LBA 0 of namespace 1, its data at `prp1`/`prp2`.
spec::submission_queue_entry rw_command(spec::nvm_opcode opcode, std::uint32_t blocks, std::uint64_t prp1,
                                        std::uint64_t prp2)
{
    spec::submission_queue_entry sqe{};
    sqe.cdw0.set(spec::command_dword0::opc, static_cast<std::uint8_t>(opcode));
    sqe.nsid = 1;
    if (opcode == spec::nvm_opcode::read) {
        spec::read_view{.starting_lba = 0, .block_count = blocks}.encode(sqe);
    } else {
        spec::write_view{.starting_lba = 0, .block_count = blocks}.encode(sqe);
    }
    sqe.dptr.prp1 = prp1;
    sqe.dptr.prp2 = prp2;
    return sqe;
}

/// Number of Queues, then I/O CQ 1 (polled) and SQ 1, all in the message-served memory.
bool create_io_queues(message_host& host)
{
    auto queues = admin_command(spec::admin_opcode::set_features);
    spec::set_features_view{.feature_id = spec::feature_id::number_of_queues,
                            .cdw11 = spec::number_of_queues::from_counts(1, 1).raw}
        .encode(queues);
    auto cq = admin_command(spec::admin_opcode::create_io_cq);
    spec::create_io_cq_view{.queue_id = 1, .queue_size = 16, .physically_contiguous = true}.encode(cq);
    cq.dptr.prp1 = message_io_cq;
    auto sq = admin_command(spec::admin_opcode::create_io_sq);
    spec::create_io_sq_view{.queue_id = 1, .queue_size = 16, .physically_contiguous = true, .cq_id = 1}
        .encode(sq);
    sq.dptr.prp1 = message_io_sq;
    for (const auto& sqe : {queues, cq, sq}) {
        const auto cqe = host.admin(sqe);
        if (!cqe || !cqe->status().is_success()) {
            return false;
        }
    }
    return true;
}

TEST(vfio_user_server, memory_mapped_without_a_descriptor_is_reached_by_dma_messages)
{
    // Queues, PRP list and data all in memory the client shares without a file descriptor; the
    // client takes at most 4 KiB per message, so 16 KiB transfers are split.
    const auto path = socket_path("dma-messages");
    device d{path};
    messaging_client c{path, message_base, message_bytes};
    ASSERT_TRUE(bring_up_in_message_memory(c, 4096));
    message_host host{c};

    auto identify = admin_command(spec::admin_opcode::identify);
    spec::identify_view{.cns = spec::cns::identify_controller}.encode(identify);
    identify.dptr.prp1 = message_identify;
    const auto identified = host.admin(identify);
    ASSERT_TRUE(identified) << "no completion for Identify";
    EXPECT_TRUE(identified->status().is_success());
    EXPECT_EQ(c.load<spec::identify_controller>(message_identify).subsystem_nqn(),
              "nqn.2026-11.io.nvmekit:vfio-user-test");

    ASSERT_TRUE(create_io_queues(host));
    // 16 KiB from a PRP list: PRP1 the first page, PRP2 the list of the other three.
    c.fill(message_data, 0x4000, 0x5a);
    for (std::uint64_t page = 1; page < 4; ++page) {
        c.store(message_prp_list + (page - 1) * 8, message_data + page * 0x1000);
    }
    const auto written = host.io(rw_command(spec::nvm_opcode::write, 32, message_data, message_prp_list));
    ASSERT_TRUE(written) << "no completion for Write";
    EXPECT_TRUE(written->status().is_success());
    for (std::uint64_t page = 1; page < 4; ++page) {
        c.store(message_prp_list + (page - 1) * 8, message_read_back + page * 0x1000);
    }
    const auto read = host.io(rw_command(spec::nvm_opcode::read, 32, message_read_back, message_prp_list));
    ASSERT_TRUE(read) << "no completion for Read";
    EXPECT_TRUE(read->status().is_success());
    EXPECT_TRUE(c.equal(message_data, message_read_back, 0x4000));

    EXPECT_GT(c.dma_reads.load(), 0U);
    EXPECT_GT(c.dma_writes.load(), 0U);
    EXPECT_EQ(c.largest_count.load(), 4096U);
    EXPECT_EQ(c.bad_requests.load(), 0U);
    d.halt();
    EXPECT_TRUE(d.memory.regions().empty()); // nothing mapped into the server
    EXPECT_EQ(d.server.statistics().message_dma_maps, 1U);
    EXPECT_EQ(d.server.statistics().failed_message_dma, 0U);
    EXPECT_EQ(d.server.statistics().dma_read_requests, c.dma_reads.load());
}

/// Admin commands through queues in shared guest memory (`guest`), rung through `c`.
class shared_queue_host {
public:
    shared_queue_host(messaging_client& c, guest_memory& guest) : c_{c}, guest_{guest} {}

    std::optional<spec::completion_queue_entry> admin(spec::submission_queue_entry sqe)
    {
        sqe.cdw0.set(spec::command_dword0::cid, ++cid_);
        guest_.store(admin_sq + tail_ * 64U, sqe);
        const std::uint64_t slot = admin_cq + tail_ * 16U;
        tail_ = (tail_ + 1) % 16;
        c_.write_region(vu::region_index::bar0, spec::sq_tail_doorbell_offset(0, 0), 4, tail_);
        spec::completion_queue_entry cqe{};
        if (!eventually([&] {
                cqe = guest_.load<spec::completion_queue_entry>(slot);
                return cqe.phase();
            })) {
            return std::nullopt;
        }
        c_.write_region(vu::region_index::bar0, spec::cq_head_doorbell_offset(0, 0), 4, tail_);
        return cqe;
    }

private:
    messaging_client& c_;
    guest_memory& guest_;
    std::uint16_t cid_ = 0;
    std::uint32_t tail_ = 0;
};

/// Maps the shared guest memory (with its descriptor) next to the message-served memory.
bool map_shared_memory(messaging_client& c, guest_memory& guest)
{
    const std::array fds{guest.fd};
    return client::error_of(
               c.call(vu::command::dma_map, client::dma_map_request(guest_base, guest_bytes), fds)) == 0U;
}

spec::submission_queue_entry identify_into(std::uint64_t buffer)
{
    auto identify = admin_command(spec::admin_opcode::identify);
    spec::identify_view{.cns = spec::cns::identify_controller}.encode(identify);
    identify.dptr.prp1 = buffer;
    return identify;
}

/// A device and a client whose admin queues are in shared memory and whose data buffers can be in
/// memory reached by messages.
struct queues_shared_data_by_messages {
    device d;
    messaging_client c;
    guest_memory guest;
    shared_queue_host host{c, guest};

    explicit queues_shared_data_by_messages(
        const std::string& path, std::chrono::milliseconds dma_reply_timeout = std::chrono::seconds{5})
        : d{path, dma_reply_timeout}, c{path, message_base, message_bytes}
    {}
    /// VERSION, both mappings, the controller enabled; whether all succeeded.
    bool set_up()
    {
        return connect_and_map_without_descriptor(c) && map_shared_memory(c, guest) &&
               enable_controller(c, admin_sq, admin_cq);
    }
};

/// The status of an Identify Controller whose data goes to message-served memory (none when it
/// never completes).
std::optional<spec::status> identify_status(shared_queue_host& host)
{
    const auto cqe = host.admin(identify_into(message_identify));
    return cqe ? std::optional{cqe->status()} : std::nullopt;
}

const spec::status data_transfer_error = spec::status{spec::generic_status::data_transfer_error}.with_dnr();
const spec::status success{};

TEST(vfio_user_server, an_error_reply_to_a_dma_message_is_a_data_transfer_error)
{
    // The client's error reply fails the transfer, and the command completes with Data Transfer
    // Error; the next one, answered, succeeds.
    queues_shared_data_by_messages setup{socket_path("dma-error")};
    ASSERT_TRUE(setup.set_up());
    auto& [d, c, guest, host] = setup;
    c.fail_with = EFAULT;
    EXPECT_EQ(identify_status(host), data_transfer_error);
    c.fail_with = 0;
    EXPECT_EQ(identify_status(host), success);
    EXPECT_EQ(c.load<spec::identify_controller>(message_identify).vid, 0xf0e5);
    d.halt();
    EXPECT_GE(d.server.statistics().failed_message_dma, 1U);
}

TEST(vfio_user_server, a_dma_message_left_unanswered_fails_after_the_timeout)
{
    queues_shared_data_by_messages setup{socket_path("dma-timeout"), std::chrono::milliseconds{100}};
    ASSERT_TRUE(setup.set_up());
    auto& [d, c, guest, host] = setup;
    c.ignore_dma = true;
    EXPECT_EQ(identify_status(host), data_transfer_error);
    c.ignore_dma = false;
    EXPECT_EQ(identify_status(host), success);
}

TEST(vfio_user_server, commands_sent_while_a_dma_reply_is_awaited_are_answered_in_order)
{
    // The client sends commands of its own before it answers the server's first DMA request
    // (QEMU's vCPU threads do, while its proxy thread serves the request): the server keeps them
    // while it waits, then answers every one, in the order sent.
    const auto path = socket_path("dma-interleaved");
    device d{path};
    messaging_client c{path, message_base, message_bytes};
    ASSERT_TRUE(bring_up_in_message_memory(c));

    std::vector<std::uint16_t> sent;
    c.before_next_dma_reply([&sent](messaging_client& self) {
        const vu::region_access vendor{0, static_cast<std::uint32_t>(vu::region_index::config), 4};
        sent.push_back(self.send(vu::command::region_read, vendor));
        vu::device_info info{};
        info.argsz = sizeof info;
        sent.push_back(self.send(vu::command::device_get_info, info));
        const vu::region_access csts{0x1c, static_cast<std::uint32_t>(vu::region_index::bar0), 4};
        sent.push_back(self.send(vu::command::region_read, csts));
    });
    submit_first_admin_command(c, identify_controller_command(0x51, message_identify));
    spec::completion_queue_entry cqe{};
    ASSERT_TRUE(eventually([&] {
        cqe = c.load<spec::completion_queue_entry>(message_admin_cq);
        return cqe.phase();
    })) << "no completion for Identify";
    EXPECT_TRUE(cqe.status().is_success());
    EXPECT_EQ(c.load<spec::identify_controller>(message_identify).vid, 0xf0e5);

    ASSERT_EQ(sent.size(), 3U);
    std::vector<std::vector<std::byte>> replies;
    for (std::size_t i = 0; i < sent.size(); ++i) {
        replies.push_back(c.next_reply());
        ASSERT_GE(replies.back().size(), vu::header_size) << "no reply to command " << i;
        vu::message_header header{};
        std::memcpy(&header, replies.back().data(), sizeof header);
        EXPECT_EQ(header.message_id, sent[i]) << "reply " << i << " out of order";
        EXPECT_EQ(client::error_of(replies.back()), 0U);
    }
    std::uint32_t vendor = 0;
    std::memcpy(&vendor, replies[0].data() + vu::header_size + sizeof(vu::region_access), 4);
    EXPECT_EQ(vendor, 0x0a0af0e5U);
    vu::device_info info{};
    std::memcpy(&info, replies[1].data() + vu::header_size, sizeof info);
    EXPECT_EQ(info.num_regions, vu::pci_num_regions);
    std::uint32_t csts = 0;
    std::memcpy(&csts, replies[2].data() + vu::header_size + sizeof(vu::region_access), 4);
    EXPECT_EQ(csts & 1U, 1U);
    d.halt();
    EXPECT_GE(d.server.statistics().deferred_messages, 3U);
}

TEST(vfio_user_server, a_client_that_disconnects_while_a_dma_reply_is_awaited_is_let_go)
{
    const auto path = socket_path("dma-disconnect");
    device d{path};
    {
        messaging_client c{path, message_base, message_bytes};
        ASSERT_TRUE(bring_up_in_message_memory(c));
        c.vanish_on_dma = true;
        submit_first_admin_command(c, identify_controller_command(0x52, message_identify));
        EXPECT_TRUE(c.next_reply().empty()); // the client is gone; nothing more comes
    }
    // The server reset the function and serves the next client.
    client next{path};
    guest_memory guest;
    ASSERT_TRUE(connect_and_map_memory(next, guest));
    next.write_region(vu::region_index::config, 4, 2, 0x0002);
    EXPECT_EQ(next.read_region(vu::region_index::bar0, 0x1c, 4) & 1U, 0U); // CSTS.RDY: reset
    d.halt();
    EXPECT_EQ(d.server.statistics().clients, 2U);
    EXPECT_GE(d.server.statistics().failed_message_dma, 1U);
}

} // namespace transport_vfio_user_server_test
} // namespace
