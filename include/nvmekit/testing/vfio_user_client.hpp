#pragma once
/// The host side of vfio-user (QEMU's docs/interop/vfio-user.rst), as QEMU's vfio-user-pci
/// speaks it, over a real UNIX socket: command messages with their file descriptors, replies,
/// VERSION negotiation, DMA_MAP of memory the client shares by a descriptor, and accesses to
/// the function's regions by REGION_READ/REGION_WRITE. One thread at a time uses it.
///
/// It also serves as the controller of an in_process_host, whose BAR0 accesses then travel as
/// messages to a server in another thread or process; the host's memory is a flat_memory range
/// made of the memory the client maps (a memfd), so that both sides see the same queues:
///
///     nvmekit::testing::vfio_user_client client{"/tmp/nvme.sock"};
///     client.negotiate();
///     client.map_dma(memfd, 0x1'0000'0000, bytes);   // guest RAM, shared
///     client.enable_function();                      // Memory Space and Bus Master Enable
///     nvmekit::testing::flat_memory memory;
///     memory.add_range(0x1'0000'0000, std::span{mapping, bytes});
///     nvmekit::testing::in_process_host host{client, memory, clock};
///     host.bring_up({.interrupts = false});
///
/// post_region_write() sends a BAR0 write with the No Reply flag, as a client posts its MMIO
/// writes; it allocates nothing. Failures of the connection are thrown as host_error (the
/// message-level calls return an empty reply instead).

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <nvmekit/config.hpp>
#include <nvmekit/testing/host_base.hpp>
#include <nvmekit/transport/vfio_user/protocol.hpp>
#include <nvmekit/transport/vfio_user/socket.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace testing {

struct vfio_user_client_options {
    /// How long a reply may take before the call gives up: a bound that keeps a broken server
    /// from hanging the caller, not a budget a loaded machine could exceed.
    std::chrono::milliseconds patience{30'000};
    /// What poll() waits, as an in_process_host polls: the server runs on its own.
    std::chrono::microseconds poll_pause{20};
};

class vfio_user_client {
public:
    /// Connects to the server listening at `path`; throws std::system_error when it cannot.
    explicit vfio_user_client(const std::string& path, vfio_user_client_options options = {})
        : options_{options}
    {
        sockaddr_un address{};
        address.sun_family = AF_UNIX;
        if (path.size() >= sizeof address.sun_path) {
            throw std::system_error{std::make_error_code(std::errc::filename_too_long), path};
        }
        std::memcpy(address.sun_path, path.c_str(), path.size());
        fd_.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
        if (!fd_.valid() ||
            ::connect(fd_.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
            throw std::system_error{errno, std::generic_category(), "cannot connect to " + path};
        }
    }

    vfio_user_client(const vfio_user_client&) = delete;
    vfio_user_client& operator=(const vfio_user_client&) = delete;
    ~vfio_user_client()
    {
        if (!doorbells_.empty()) {
            ::munmap(doorbells_.data(), doorbells_.size());
        }
    }

    [[nodiscard]] int fd() const noexcept { return fd_.get(); }
    void close() noexcept { fd_.reset(); }
    /// Messages sent so far (commands, posted or not).
    [[nodiscard]] std::uint64_t messages_sent() const noexcept { return messages_sent_; }

    // ---- messages -----------------------------------------------------------------------------

    /// The bytes of a command message with the next message ID (several can go in one send_raw,
    /// as a client that posts its writes sends them).
    std::vector<std::byte> message(transport::vfio_user::command code, std::span<const std::byte> payload,
                                   bool no_reply = false)
    {
        namespace vu = transport::vfio_user;
        std::vector<std::byte> bytes(vu::header_size + payload.size());
        auto header = vu::make_request_header(code, ++id_, payload.size());
        header.flags.set(vu::message_flags::no_reply, no_reply);
        std::memcpy(bytes.data(), &header, sizeof header);
        if (!payload.empty()) {
            std::memcpy(bytes.data() + vu::header_size, payload.data(), payload.size());
        }
        return bytes;
    }

    /// Sends `bytes` with `fds` as SCM_RIGHTS data; false when the connection failed.
    bool send_raw(std::span<const std::byte> bytes, std::span<const int> fds = {})
    {
        ++messages_sent_;
        return transport::vfio_user::send_message(fd_.get(), bytes, fds);
    }

    /// The next message from the server (header and payload); empty when the server closed the
    /// connection or sent nothing within the patience.
    std::vector<std::byte> receive()
    {
        namespace vu = transport::vfio_user;
        std::vector<std::byte> bytes(vu::header_size);
        if (!read_all(bytes)) {
            return {};
        }
        vu::message_header header{};
        std::memcpy(&header, bytes.data(), sizeof header);
        bytes.resize(std::max<std::size_t>(header.message_size, vu::header_size));
        if (header.message_size > vu::header_size && !read_all(std::span{bytes}.subspan(vu::header_size))) {
            return {};
        }
        return bytes;
    }

    /// Sends a command and returns its reply (empty as receive()).
    std::vector<std::byte> call(transport::vfio_user::command code, std::span<const std::byte> payload,
                                std::span<const int> fds = {})
    {
        if (!send_raw(message(code, payload), fds)) {
            return {};
        }
        return receive();
    }
    template <typename T>
    std::vector<std::byte> call(transport::vfio_user::command code, const T& payload,
                                std::span<const int> fds = {})
    {
        return call(code, std::as_bytes(std::span{&payload, 1}), fds);
    }

    /// The errno a reply carries: 0 for success, ~0 for no reply at all.
    [[nodiscard]] static std::uint32_t error_of(std::span<const std::byte> reply) noexcept
    {
        namespace vu = transport::vfio_user;
        if (reply.size() < vu::header_size) {
            return ~0U;
        }
        vu::message_header header{};
        std::memcpy(&header, reply.data(), sizeof header);
        return header.flags.get(vu::message_flags::error) ? header.error_number : 0U;
    }

    /// The payload of a REGION_WRITE of the `count` low bytes of `value`.
    [[nodiscard]] static std::vector<std::byte>
    region_write_payload(transport::vfio_user::region_index region, std::uint64_t offset, std::uint32_t count,
                         std::uint64_t value)
    {
        namespace vu = transport::vfio_user;
        std::vector<std::byte> payload(sizeof(vu::region_access) + count);
        const vu::region_access access{offset, static_cast<std::uint32_t>(region), count};
        std::memcpy(payload.data(), &access, sizeof access);
        std::memcpy(payload.data() + sizeof access, &value, std::min<std::size_t>(count, sizeof value));
        return payload;
    }

    /// The payload of a VERSION request for protocol 0.0 with QEMU's capabilities.
    [[nodiscard]] static std::vector<std::byte> version_payload()
    {
        static constexpr char json[] =
            R"({"capabilities":{"max_msg_fds":16,"max_data_xfer_size":1048576,"pgsizes":4096,"max_dma_maps":65535}})";
        std::vector<std::byte> payload(4 + sizeof json);
        const std::uint16_t major = 0;
        const std::uint16_t minor = 0;
        std::memcpy(payload.data(), &major, 2);
        std::memcpy(payload.data() + 2, &minor, 2);
        std::memcpy(payload.data() + 4, json, sizeof json);
        return payload;
    }

    // ---- the steps of a session ---------------------------------------------------------------

    /// VERSION; the errno of the reply (0: negotiated).
    std::uint32_t negotiate()
    {
        return error_of(
            call(transport::vfio_user::command::version, std::span<const std::byte>{version_payload()}));
    }

    /// A DMA_MAP request of `size` bytes from file offset `offset` at DMA address `address`,
    /// readable and (when `writable`) writable by the device.
    [[nodiscard]] static transport::vfio_user::dma_map dma_map_request(std::uint64_t address,
                                                                       std::uint64_t size,
                                                                       std::uint64_t offset = 0,
                                                                       bool writable = true) noexcept
    {
        namespace vu = transport::vfio_user;
        vu::dma_map map{};
        map.argsz = sizeof map;
        map.flags =
            vu::dma_map_flags{}.with(vu::dma_map_flags::read, true).with(vu::dma_map_flags::write, writable);
        map.offset = offset;
        map.address = address;
        map.size = size;
        return map;
    }

    /// DMA_MAP of `size` bytes of `fd` from `offset` at DMA address `address` (dma_map_request);
    /// the errno of the reply.
    std::uint32_t map_dma(int fd, std::uint64_t address, std::uint64_t size, std::uint64_t offset = 0,
                          bool writable = true)
    {
        const std::array fds{fd};
        return error_of(call(transport::vfio_user::command::dma_map,
                             dma_map_request(address, size, offset, writable), fds));
    }

    /// DMA_UNMAP of the region mapped at `address` with `size` bytes; the errno of the reply.
    std::uint32_t unmap_dma(std::uint64_t address, std::uint64_t size)
    {
        namespace vu = transport::vfio_user;
        vu::dma_unmap unmap{};
        unmap.argsz = sizeof unmap;
        unmap.address = address;
        unmap.size = size;
        return error_of(call(vu::command::dma_unmap, unmap));
    }

    /// SET_IRQS giving MSI-X vectors `first`, `first` + 1, ... the eventfds `fds` to signal (the
    /// server takes its own copies of the descriptors); the errno of the reply.
    std::uint32_t set_msix_eventfds(std::uint32_t first, std::span<const int> fds)
    {
        namespace vu = transport::vfio_user;
        vu::irq_set set{};
        set.argsz = sizeof set;
        set.flags = vu::irq_set_flags{}
                        .with(vu::irq_set_flags::data_eventfd, true)
                        .with(vu::irq_set_flags::action_trigger, true);
        set.index = static_cast<std::uint32_t>(vu::irq_index::msix);
        set.start = first;
        set.count = static_cast<std::uint32_t>(fds.size());
        return error_of(call(vu::command::device_set_irqs, set, fds));
    }

    /// The size of region `region` (DEVICE_GET_REGION_INFO); nullopt when the server refused.
    std::optional<std::uint64_t> region_size(transport::vfio_user::region_index region)
    {
        namespace vu = transport::vfio_user;
        vu::region_info request{};
        request.argsz = sizeof request;
        request.index = static_cast<std::uint32_t>(region);
        const auto reply = call(vu::command::device_get_region_info, request);
        if (error_of(reply) != 0 || reply.size() < vu::header_size + sizeof request) {
            return std::nullopt;
        }
        std::memcpy(&request, reply.data() + vu::header_size, sizeof request);
        return request.size;
    }

    /// REGION_READ of `count` (at most 8) bytes; nullopt when the server refused.
    std::optional<std::uint64_t> region_read(transport::vfio_user::region_index region, std::uint64_t offset,
                                             std::uint32_t count)
    {
        namespace vu = transport::vfio_user;
        const vu::region_access access{offset, static_cast<std::uint32_t>(region), count};
        const auto reply = call(vu::command::region_read, access);
        if (error_of(reply) != 0 || reply.size() < vu::header_size + sizeof access + count) {
            return std::nullopt;
        }
        std::uint64_t value = 0;
        std::memcpy(&value, reply.data() + vu::header_size + sizeof access, std::min<std::size_t>(count, 8));
        return value;
    }

    /// REGION_WRITE of the `count` (at most 8) low bytes of `value`, waiting for the reply;
    /// whether the server accepted it.
    bool region_write(transport::vfio_user::region_index region, std::uint64_t offset, std::uint32_t count,
                      std::uint64_t value)
    {
        const auto payload = region_write_payload(region, offset, count, value);
        return error_of(call(transport::vfio_user::command::region_write,
                             std::span<const std::byte>{payload})) == 0;
    }

    /// REGION_WRITE of 4 bytes of BAR0 with the No Reply flag, as a client posts a doorbell
    /// write; nothing is allocated. Throws host_error when the connection failed.
    void post_region_write(std::uint64_t offset, std::uint32_t value)
    {
        namespace vu = transport::vfio_user;
        auto header =
            vu::make_request_header(vu::command::region_write, ++id_, sizeof(vu::region_access) + 4);
        header.flags.set(vu::message_flags::no_reply, true);
        const vu::region_access access{offset, static_cast<std::uint32_t>(vu::region_index::bar0), 4};
        std::memcpy(posted_.data(), &header, sizeof header);
        std::memcpy(posted_.data() + vu::header_size, &access, sizeof access);
        std::memcpy(posted_.data() + vu::header_size + sizeof access, &value, sizeof value);
        ++messages_sent_;
        if (!vu::send_message(fd_.get(), posted_)) {
            throw host_error{"vfio-user: the server closed the connection"};
        }
    }

    /// PCI Command: Memory Space Enable and Bus Master Enable, as firmware sets them before a
    /// driver touches BAR0; whether the server accepted the write.
    bool enable_function() { return region_write(transport::vfio_user::region_index::config, 4, 2, 0x0006); }

    /// Maps BAR0's doorbells when the server offers them as a sparse-mmap area (DEVICE_GET_REGION_INFO
    /// with its descriptor); from then on ring_doorbell() stores into them. False when the server
    /// does not offer them (doorbells then go by message).
    bool map_doorbells()
    {
        namespace vu = transport::vfio_user;
        vu::region_info request{};
        request.argsz = static_cast<std::uint32_t>(vu::region_info_full_size(1));
        request.index = static_cast<std::uint32_t>(vu::region_index::bar0);
        if (!send_raw(message(vu::command::device_get_region_info, std::as_bytes(std::span{&request, 1})))) {
            return false;
        }
        vu::received_message reply;
        pollfd wait{fd_.get(), POLLIN, 0};
        if (::poll(&wait, 1, static_cast<int>(options_.patience.count())) <= 0 ||
            vu::receive_message(fd_.get(), reply, {}, vu::accepted_messages::commands_and_replies) !=
                vu::receive_status::message ||
            error_of(reply.bytes) != 0 || reply.fds.empty() ||
            reply.bytes.size() < vu::header_size + vu::region_info_full_size(1)) {
            return false;
        }
        vu::region_info info{};
        std::memcpy(&info, reply.bytes.data() + vu::header_size, sizeof info);
        vu::sparse_mmap_area area{};
        std::memcpy(&area,
                    reply.bytes.data() + vu::header_size + info.cap_offset + sizeof(vu::sparse_mmap_cap),
                    sizeof area);
        if (!info.flags.get(vu::region_info_flags::mmap) || area.size == 0) {
            return false;
        }
        void* mapping = ::mmap(nullptr, area.size, PROT_READ | PROT_WRITE, MAP_SHARED, reply.fds[0].get(),
                               static_cast<off_t>(info.offset + area.offset));
        if (mapping == MAP_FAILED) {
            return false;
        }
        doorbells_ = {static_cast<std::byte*>(mapping), static_cast<std::size_t>(area.size)};
        doorbells_offset_ = area.offset;
        return true;
    }

    /// Writes a doorbell of BAR0: a store into the mapped doorbells when map_doorbells() mapped
    /// them, else a posted REGION_WRITE.
    void ring_doorbell(std::uint64_t offset, std::uint32_t value)
    {
        if (in_mapped_doorbells(offset)) {
            std::atomic_ref{
                *reinterpret_cast<std::uint32_t*>(doorbells_.data() + (offset - doorbells_offset_))}
                .store(value, std::memory_order_release);
            return;
        }
        post_region_write(offset, value);
    }
    [[nodiscard]] bool doorbells_mapped() const noexcept { return !doorbells_.empty(); }

    // ---- what in_process_host needs of a controller -------------------------------------------

    /// A BAR0 read by REGION_READ; throws host_error when the server refused it.
    std::uint64_t mmio_read(std::uint64_t offset, unsigned width)
    {
        const auto value = region_read(transport::vfio_user::region_index::bar0, offset, width);
        if (!value) {
            throw host_error{"vfio-user: BAR0 read refused"};
        }
        return *value;
    }
    /// A BAR0 write by REGION_WRITE, waiting for the reply, or a store when it is a doorbell in
    /// the mapped doorbells; throws host_error when refused.
    void mmio_write(std::uint64_t offset, unsigned width, std::uint64_t value)
    {
        if (width == 4 && in_mapped_doorbells(offset)) {
            ring_doorbell(offset, static_cast<std::uint32_t>(value));
            return;
        }
        if (!region_write(transport::vfio_user::region_index::bar0, offset, width, value)) {
            throw host_error{"vfio-user: BAR0 write refused"};
        }
    }
    /// The server runs the controller on its own thread: a pause between two looks.
    void poll() const { std::this_thread::sleep_for(options_.poll_pause); }
    /// MSI-X is the client's to emulate (QEMU's vfio-user-pci does; it tells the server which
    /// vectors to signal with SET_IRQS): the host's MSI-X programming has nothing to write.
    void set_msix_control(bool /*enabled*/, bool /*function_masked*/) const noexcept {}
    [[nodiscard]] std::uint64_t msix_table_offset() const noexcept { return 0; }
    struct no_msix_table {
        [[nodiscard]] std::uint16_t vectors() const noexcept { return 0; }
    };
    [[nodiscard]] no_msix_table msix() const noexcept { return {}; }

private:
    [[nodiscard]] bool in_mapped_doorbells(std::uint64_t offset) const noexcept
    {
        return !doorbells_.empty() && offset >= doorbells_offset_ &&
               offset - doorbells_offset_ + 4 <= doorbells_.size();
    }

    bool read_all(std::span<std::byte> out)
    {
        std::size_t done = 0;
        while (done < out.size()) {
            pollfd wait{fd_.get(), POLLIN, 0};
            if (::poll(&wait, 1, static_cast<int>(options_.patience.count())) <= 0) {
                return false;
            }
            const ssize_t got = ::read(fd_.get(), out.data() + done, out.size() - done);
            if (got <= 0) {
                return false;
            }
            done += static_cast<std::size_t>(got);
        }
        return true;
    }

    vfio_user_client_options options_;
    transport::vfio_user::unique_fd fd_;
    std::uint16_t id_ = 0;
    std::uint64_t messages_sent_ = 0;
    std::array<std::byte, transport::vfio_user::header_size + sizeof(transport::vfio_user::region_access) + 4>
        posted_{};
    std::span<std::byte> doorbells_{}; ///< the mapped doorbells, when map_doorbells() mapped them
    std::uint64_t doorbells_offset_ = 0;
};

} // namespace testing
NVMEKIT_END_NAMESPACE
