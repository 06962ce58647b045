#pragma once
/// A vfio-user server presenting one controller as an NVMe PCI Express function (QEMU's
/// docs/interop/vfio-user.rst): version negotiation, device/region/IRQ information, config space
/// and BAR0 accesses, DMA regions mapped from the client's file descriptors (zero-copy DMA) or,
/// for memory the client cannot share, served by DMA_READ/DMA_WRITE messages, MSI-X vectors on
/// the client's eventfds, device reset. One client at a time; when it goes, the function is
/// reset, its mappings and eventfds are released, and the next client is accepted.
///
///     nvmekit::transport::mapped_memory memory;
///     nvmekit::transport::eventfd_interrupts interrupts{traits::limits.msix_vectors};
///     nvmekit::controller<traits> ctrl{memory, interrupts, clock, subsystem};
///     nvmekit::transport::vfio_user::server server{ctrl, memory, interrupts, {.socket_path =
///     "/tmp/nvme.sock"}}; while (!stop) server.run_once(std::chrono::milliseconds{1});
///
/// With `mappable_doorbells`, BAR0's doorbells are offered as a sparse-mmap area (REGION_INFO,
/// with the descriptor of a memfd that backs them): a client that maps it writes a doorbell with a
/// store, and run_once() hands every doorbell whose value changed to the controller, as if it had
/// come by REGION_WRITE; a client that does not map it keeps sending messages. Nothing wakes the
/// server for a store: an embedder that offers the mapping polls without waiting (run_once with
/// a zero timeout). The page is cleared when the host writes CC, on a reset and when the client
/// goes, as the doorbell registers are.
///
/// The controller's DMA provider must be `memory` and its interrupt provider `interrupts`. Nothing
/// a client sends ends the server: malformed messages get an error reply, a stream that cannot
/// be trusted is closed, and the server waits for the next client.
///
/// DMA to a region mapped without a file descriptor goes through messages: `memory` hands the
/// access to the server (its dma_fallback, consulted only when no mapped region holds the
/// address), which sends DMA_READ or DMA_WRITE requests of at most the smaller of the two
/// max_data_xfer_size values and waits for each reply on the thread that calls run_once (the
/// controller must poll there: an access from any other thread fails). Commands the client sends
/// meanwhile are kept, in order, and handled once the access is over; an error reply, a malformed
/// one, no reply within dma_reply_timeout or a client gone is a failed DMA (Data Transfer Error, or
/// the controller's fatal status for queue memory). The zero-copy map() of such memory is empty,
/// so the controller stages its data.

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <nvmekit/config.hpp>
#include <nvmekit/pci/config_space.hpp>
#include <nvmekit/spec/registers.hpp>
#include <nvmekit/transport/eventfd_interrupts.hpp>
#include <nvmekit/transport/mapped_memory.hpp>
#include <nvmekit/transport/vfio_user/protocol.hpp>
#include <nvmekit/transport/vfio_user/socket.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace transport::vfio_user {

/// How the server presents itself.
struct server_options {
    std::string socket_path;
    pci::nvme_function_config function{}; ///< IDs; the BAR0 layout is taken from the controller
    protocol_limits limits{};
    /// How long a DMA_READ/DMA_WRITE waits for the client's reply before the access fails (a
    /// reply that comes later is dropped).
    std::chrono::milliseconds dma_reply_timeout{5000};
    /// Offer the doorbells as a sparse-mmap area of BAR0 backed by shared memory.
    bool mappable_doorbells = false;
};

/// What happened, for the embedder's log (level, text).
enum class server_log_level : std::uint8_t { debug, info, warning };
using server_logger = std::function<void(server_log_level, std::string_view)>;

/// Counters of what the server did.
struct server_statistics {
    std::uint64_t clients = 0;
    std::uint64_t messages = 0;
    std::uint64_t error_replies = 0;
    std::uint64_t broken_streams = 0;
    std::uint64_t dma_maps = 0;
    std::uint64_t message_dma_maps = 0;  ///< regions without a file descriptor, served by messages
    std::uint64_t dma_read_requests = 0; ///< DMA_READ messages sent
    std::uint64_t dma_write_requests = 0;
    std::uint64_t failed_message_dma = 0; ///< accesses that got an error, a bad reply or none
    std::uint64_t deferred_messages = 0;  ///< client commands that arrived while a reply was awaited
    std::uint64_t stale_replies = 0;      ///< replies to no request awaited (late, or never asked)
    std::uint64_t undecoded_accesses = 0; ///< BAR0 accesses while Memory Space Enable was clear
    std::uint64_t mapped_doorbells = 0;   ///< doorbell values taken from the mapped doorbell page
};

template <typename Controller>
class server {
public:
    server(Controller& controller, mapped_memory& memory, eventfd_interrupts& interrupts,
           server_options options, server_logger logger = {})
        : controller_{controller}
        , memory_{memory}
        , interrupts_{interrupts}
        , options_{std::move(options)}
        , logger_{std::move(logger)}
        , config_{pci::bar0_layout_of(controller, options_.function)}
        , listener_{listen_unix(options_.socket_path)}
    {
        reply_.resize(std::max<std::size_t>(options_.limits.max_message_size(), version_reply_capacity));
        scratch_.resize(options_.limits.max_data_xfer_size);
        dma_request_.resize(header_size + sizeof(dma_access) + options_.limits.max_data_xfer_size);
        region_sizes_.fill(0);
        region_sizes_[static_cast<std::size_t>(region_index::bar0)] = controller_.bar0_size();
        region_sizes_[static_cast<std::size_t>(region_index::config)] = pci_config_size;
        irq_counts_.fill(0);
        irq_counts_[static_cast<std::size_t>(irq_index::intx)] = 1;
        irq_counts_[static_cast<std::size_t>(irq_index::msix)] = interrupts_.vectors();
        controller_.set_bus_master(config_.bus_master()); // clear until the host sets it
        memory_.set_fallback(&message_dma_);
        if (options_.mappable_doorbells) {
            create_doorbell_page();
        }
    }
    server(const server&) = delete;
    server& operator=(const server&) = delete;
    ~server()
    {
        disconnect();
        if (doorbell_page_ != nullptr) {
            ::munmap(doorbell_page_, doorbell_area_bytes_);
        }
        memory_.set_fallback(nullptr);
        ::unlink(options_.socket_path.c_str());
    }

    [[nodiscard]] bool connected() const noexcept { return client_.valid(); }
    /// What run_once() waits on for POLLIN: the client's socket while one is connected, else the
    /// listening socket; for a loop that waits for it beside other descriptors in one poll(2).
    [[nodiscard]] int descriptor() const noexcept { return connected() ? client_.get() : listener_.get(); }
    [[nodiscard]] const server_statistics& statistics() const noexcept { return statistics_; }
    [[nodiscard]] pci::config_space& config() noexcept { return config_; }

    /// Waits up to `timeout` for a client or a message, handles what arrived, then polls the
    /// controller. Returns the number of messages handled.
    std::size_t run_once(std::chrono::milliseconds timeout)
    {
        serving_thread_ = std::this_thread::get_id();
        std::size_t handled = 0;
        pollfd waiting{connected() ? client_.get() : listener_.get(), POLLIN, 0};
        // Commands kept while a DMA reply was awaited are handled at once, before newer ones.
        const int wait_ms = deferred_.empty() ? static_cast<int>(timeout.count()) : 0;
        const int ready = ::poll(&waiting, 1, wait_ms);
        if (!connected()) {
            if (ready > 0) {
                accept_client();
            }
        } else if (ready > 0 || !deferred_.empty()) {
            // Take every message already waiting, so doorbells do not queue behind polls.
            do {
                if (!handle_message()) {
                    break;
                }
                ++handled;
                waiting.revents = 0;
            } while (still_connected() && (!deferred_.empty() || ::poll(&waiting, 1, 0) > 0));
        }
        if (doorbell_page_ != nullptr && connected()) {
            take_mapped_doorbells();
        }
        controller_.poll();
        static_cast<void>(still_connected());
        return handled;
    }

private:
    static constexpr std::uint64_t pci_config_size = 4096;
    /// Most client commands kept while one DMA reply is awaited; a client that sends more
    /// without answering is not trusted.
    static constexpr std::size_t max_deferred_messages = 4096;

    void log(server_log_level level, std::string_view text) const
    {
        if (logger_) {
            logger_(level, text);
        }
    }

    void accept_client()
    {
        const int fd = ::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) {
            return;
        }
        client_.reset(fd);
        negotiated_ = false;
        client_lost_ = false;
        client_max_data_xfer_size_ = client_capabilities{}.max_data_xfer_size;
        ++statistics_.clients;
        log(server_log_level::info, "vfio-user client connected");
    }

    /// The client went away (or its stream broke): the function returns to its power-on state.
    void disconnect()
    {
        if (!client_.valid()) {
            return;
        }
        client_.reset();
        client_lost_ = false;
        deferred_.clear();
        controller_.function_level_reset();
        controller_.set_msix_control(false, false);
        config_.reset();
        controller_.set_bar0_address(config_.bar0_address());
        controller_.set_bus_master(config_.bus_master());
        interrupts_.clear();
        interrupts_.set_intx_disabled(false);
        clear_doorbell_page();
        unmap_all();
        log(server_log_level::info, "vfio-user client disconnected; waiting for the next one");
    }

    /// Every region unmapped. Regions change only while no poll group runs: groups on threads of
    /// their own (--group-threads) read the region list and the memory it maps.
    void unmap_all()
    {
        controller_.with_groups_paused([this] {
            memory_.clear();
            for (const auto& mapping : mappings_) {
                if (mapping.base != nullptr) {
                    ::munmap(mapping.base, mapping.length);
                }
            }
        });
        mappings_.clear();
    }

    /// Disconnects a client that went away while a DMA reply was awaited (noticed inside the
    /// controller's poll, where the function cannot be reset); whether a client is connected.
    bool still_connected()
    {
        if (client_lost_) {
            disconnect();
        }
        return connected();
    }

    /// Handles one message, the oldest kept one first; false when the connection was closed.
    bool handle_message()
    {
        if (!deferred_.empty()) {
            message_ = std::move(deferred_.front());
            deferred_.pop_front();
        } else {
            const auto status = receive_message(client_.get(), message_, options_.limits,
                                                accepted_messages::commands_and_replies);
            if (status == receive_status::closed) {
                disconnect();
                return false;
            }
            if (status == receive_status::broken) {
                ++statistics_.broken_streams;
                log(server_log_level::warning,
                    "vfio-user: the client's byte stream is malformed; closing it");
                disconnect();
                return false;
            }
            if (message_.header.flags.get(message_flags::type) == message_type::reply) {
                // No request is awaited here: the reply came after its request timed out.
                ++statistics_.stale_replies;
                log(server_log_level::warning, "vfio-user: a reply to no request awaited; dropped");
                return true;
            }
        }
        ++statistics_.messages;
        const auto& header = message_.header;
        const auto payload = std::span<const std::byte>{message_.bytes}.subspan(header_size);
        const std::size_t fds = message_.fds.size();
        if (!negotiated_ && header.command_code != command::version) {
            return reply_error(std::errc::invalid_argument);
        }
        switch (header.command_code) {
        case command::version: return handle_version(payload, fds);
        case command::dma_map: return handle_dma_map(payload, fds);
        case command::dma_unmap: return handle_dma_unmap(payload, fds);
        case command::device_get_info: {
            const auto request = decode_device_get_info(payload, fds);
            if (!request) {
                return reply_error(request.error());
            }
            device_info info{};
            info.argsz = sizeof(device_info);
            info.flags.set(device_info_flags::reset, true).set(device_info_flags::pci, true);
            info.num_regions = pci_num_regions;
            info.num_irqs = pci_num_irqs;
            return send(encode_reply(header, info, reply_));
        }
        case command::device_get_region_info: {
            const auto request = decode_region_info(payload, fds, pci_num_regions);
            if (!request) {
                return reply_error(request.error());
            }
            region_info info{};
            info.index = request->index;
            info.size = region_sizes_[request->index];
            if (info.size != 0) {
                info.flags.set(region_info_flags::read, true).set(region_info_flags::write, true);
            }
            if (doorbell_page_ != nullptr &&
                request->index == static_cast<std::uint32_t>(region_index::bar0)) {
                // The doorbells, mappable at their place in BAR0 (the file's offset is the BAR's).
                info.flags.set(region_info_flags::mmap, true);
                const std::array areas{sparse_mmap_area{spec::doorbell_base_offset, doorbell_area_bytes_}};
                const std::array fds{doorbell_file_.get()};
                return send(encode_region_info_reply(header, request->argsz, info, areas, reply_), fds);
            }
            return send(encode_region_info_reply(header, request->argsz, info, {}, reply_));
        }
        case command::device_get_irq_info: {
            const auto request = decode_irq_info(payload, fds, pci_num_irqs);
            if (!request) {
                return reply_error(request.error());
            }
            irq_info info{};
            info.argsz = sizeof(irq_info);
            info.index = request->index;
            info.count = irq_counts_[request->index];
            if (info.count != 0) {
                info.flags.set(irq_info_flags::eventfd, true);
                if (request->index == static_cast<std::uint32_t>(irq_index::msix)) {
                    info.flags.set(irq_info_flags::noresize, true);
                } else if (request->index == static_cast<std::uint32_t>(irq_index::intx)) {
                    // Level triggered: masked when signalled, unmasked by the client.
                    info.flags.set(irq_info_flags::maskable, true).set(irq_info_flags::automasked, true);
                }
            }
            return send(encode_reply(header, info, reply_));
        }
        case command::device_set_irqs: return handle_set_irqs(payload, fds);
        case command::region_read: return handle_region_read(payload, fds);
        case command::region_write: return handle_region_write(payload, fds);
        case command::device_reset: {
            if (const std::errc error = check_device_reset(payload, fds); error != std::errc{}) {
                return reply_error(error);
            }
            controller_.function_level_reset();
            clear_doorbell_page();
            controller_.set_msix_control(false, false);
            config_.reset(pci::reset_kind::function_level_reset);
            controller_.set_bar0_address(config_.bar0_address());
            controller_.set_bus_master(config_.bus_master());
            interrupts_.set_intx_disabled(false);
            return send(encode_reply(header, std::span<const std::byte>{}, reply_));
        }
        default: return reply_error(std::errc::not_supported);
        }
    }

    bool send(std::size_t bytes, std::span<const int> fds = {})
    {
        if (message_.header.flags.get(message_flags::no_reply)) {
            return true;
        }
        if (!send_message(client_.get(), std::span{reply_}.first(bytes), fds)) {
            disconnect();
            return false;
        }
        return true;
    }

    bool reply_error(std::errc error)
    {
        ++statistics_.error_replies;
        return send(encode_error_reply(message_.header, error, reply_));
    }

    bool handle_version(std::span<const std::byte> payload, std::size_t fds)
    {
        const auto request = decode_version(payload, fds, options_.limits);
        if (!request) {
            return reply_error(request.error());
        }
        const auto version = negotiate_version(*request);
        if (!version) {
            reply_error(version.error());
            disconnect();
            return false;
        }
        negotiated_ = true;
        client_max_data_xfer_size_ = request->capabilities.max_data_xfer_size;
        return send(
            encode_version_reply(message_.header, *version, request->capabilities, options_.limits, reply_));
    }

    bool handle_dma_map(std::span<const std::byte> payload, std::size_t fds)
    {
        const auto request = decode_dma_map(payload, fds, options_.limits);
        if (!request) {
            return reply_error(request.error());
        }
        if (mappings_.size() >= options_.limits.max_dma_maps) {
            return reply_error(std::errc::no_space_on_device);
        }
        if (overlaps_a_mapping(request->address, request->size)) {
            return reply_error(std::errc::file_exists);
        }
        const bool writable = request->flags.get(dma_map_flags::write);
        if (fds == 0) {
            // A region the client cannot share: `memory_` does not hold it, so its accesses come
            // to message_dma_, which serves them with DMA_READ/DMA_WRITE messages.
            log(server_log_level::debug,
                "vfio-user: DMA region without a file descriptor; served by messages");
            mappings_.push_back(mapping{request->address, request->size, nullptr, writable});
            ++statistics_.message_dma_maps;
            return send(encode_reply(message_.header, std::span<const std::byte>{}, reply_));
        }
        const int protection = PROT_READ | (writable ? PROT_WRITE : 0);
        void* base = ::mmap(nullptr, request->size, protection, MAP_SHARED, message_.fds[0].get(),
                            static_cast<off_t>(request->offset));
        if (base == MAP_FAILED) {
            return reply_error(static_cast<std::errc>(errno));
        }
        if (!controller_.with_groups_paused([&] {
                return memory_.add(request->address, static_cast<std::byte*>(base), request->size, writable);
            })) {
            ::munmap(base, request->size);
            return reply_error(std::errc::file_exists);
        }
        mappings_.push_back(mapping{request->address, request->size, base, writable});
        ++statistics_.dma_maps;
        return send(encode_reply(message_.header, std::span<const std::byte>{}, reply_));
    }

    bool handle_dma_unmap(std::span<const std::byte> payload, std::size_t fds)
    {
        const auto request = decode_dma_unmap(payload, fds, options_.limits);
        if (!request) {
            return reply_error(request.error());
        }
        if (request->flags.get(dma_unmap_flags::all)) {
            unmap_all();
        } else {
            const auto it = std::find_if(mappings_.begin(), mappings_.end(), [&](const mapping& m) {
                return m.address == request->address && m.length == request->size;
            });
            if (it == mappings_.end()) {
                // Only a whole region the client mapped can be unmapped (as in libvfio-user, which
                // answers ENOENT): every mapping stays as it is.
                log(server_log_level::warning, "vfio-user: DMA_UNMAP of a range that is not a mapped region");
                return reply_error(std::errc::no_such_file_or_directory);
            }
            if (it->base != nullptr) {
                // No poll group may be inside the region when it goes (see unmap_all).
                controller_.with_groups_paused([&] {
                    memory_.remove(it->address, it->length);
                    ::munmap(it->base, it->length);
                });
            }
            // A region without a descriptor has no DMA to wait for: message DMA runs to its end
            // inside one controller poll, and commands that arrive meanwhile (this one too) are
            // handled only after it.
            mappings_.erase(it);
        }
        return send(encode_reply(message_.header, *request, reply_));
    }

    /// Whether [address, address + size) shares an address with a recorded DMA region.
    [[nodiscard]] bool overlaps_a_mapping(std::uint64_t address, std::uint64_t size) const noexcept
    {
        const std::uint64_t last = address + (size - 1); // decode_dma_map refused a wrap
        return std::any_of(mappings_.begin(), mappings_.end(), [&](const mapping& m) {
            return m.address <= last && address <= m.address + (m.length - 1);
        });
    }

    bool handle_set_irqs(std::span<const std::byte> payload, std::size_t fds)
    {
        const auto request = decode_set_irqs(payload, fds, irq_counts_);
        if (!request) {
            return reply_error(request.error());
        }
        const auto& set = request->fields;
        if (set.index == static_cast<std::uint32_t>(irq_index::msix)) {
            // The client (QEMU's vfio-user-pci) emulates the MSI-X capability and table itself and
            // tells the device which vectors to signal through SET_IRQS: the controller's own
            // MSI-X state follows these messages, not the guest's table writes.
            if (request->disables_all()) {
                interrupts_.clear();
                controller_.set_msix_control(false, false);
            } else if (request->data == irq_set_data::eventfd && request->action == irq_set_action::trigger) {
                for (std::uint32_t i = 0; i < set.count; ++i) {
                    const auto vector = static_cast<std::uint16_t>(set.start + i);
                    const int fd = request->fd_count == 0 ? -1 : message_.fds[i].release();
                    interrupts_.assign(vector, fd);
                    set_vector_masked(vector, fd < 0);
                }
                controller_.set_msix_control(true, false);
            } else if (request->action != irq_set_action::trigger) {
                const bool mask = request->action == irq_set_action::mask;
                for (std::uint32_t i = 0; i < set.count; ++i) {
                    const bool selected =
                        request->data != irq_set_data::boolean || request->bools[i] != std::byte{0};
                    if (selected) {
                        set_vector_masked(static_cast<std::uint16_t>(set.start + i), mask);
                    }
                }
            }
        }
        if (set.index == static_cast<std::uint32_t>(irq_index::intx)) {
            if (request->disables_all()) {
                interrupts_.assign_intx(-1);
            } else if (request->data == irq_set_data::eventfd && request->action == irq_set_action::trigger) {
                interrupts_.assign_intx(request->fd_count == 0 ? -1 : message_.fds[0].release());
            } else if (request->action != irq_set_action::trigger &&
                       (request->data != irq_set_data::boolean || request->bools[0] != std::byte{0})) {
                const bool mask = request->action == irq_set_action::mask;
                if (!mask) {
                    // QEMU unmasks on the guest's first BAR access after an interrupt, typically the
                    // CQ head doorbell write of the guest's handler, posted just before this
                    // message in the same batch. The pin's level is brought up to date with that
                    // doorbell first: unmasked on a stale level, the line would signal entries
                    // the guest has already consumed, and QEMU would hold the guest's line
                    // asserted with nothing to handle until its next BAR access. The reply goes
                    // first: that poll may DMA by messages, which QEMU serves only once the
                    // thread waiting for this reply has it.
                    const bool replied =
                        send(encode_reply(message_.header, std::span<const std::byte>{}, reply_));
                    if (replied) {
                        controller_.poll();
                        interrupts_.mask_intx(false);
                    }
                    return replied;
                }
                interrupts_.mask_intx(mask);
            }
        }
        return send(encode_reply(message_.header, std::span<const std::byte>{}, reply_));
    }

    /// Sets the Mask bit of a vector's MSI-X table entry (Vector Control, byte 12 of the entry).
    void set_vector_masked(std::uint16_t vector, bool masked)
    {
        controller_.mmio_write(controller_.msix_table_offset() + std::uint64_t{vector} * 16U + 12U, 4,
                               masked ? 1U : 0U);
    }

    bool handle_region_read(std::span<const std::byte> payload, std::size_t fds)
    {
        const auto request = decode_region_read(payload, fds, region_sizes_, options_.limits);
        if (!request) {
            return reply_error(request.error());
        }
        const auto data = std::span{scratch_}.first(request->count);
        access_region(request->region, request->offset, data, false);
        return send(encode_region_read_reply(message_.header, *request, data, reply_));
    }

    bool handle_region_write(std::span<const std::byte> payload, std::size_t fds)
    {
        const auto request = decode_region_write(payload, fds, region_sizes_, options_.limits);
        if (!request) {
            return reply_error(request.error());
        }
        const auto data = std::span{scratch_}.first(request->access.count);
        std::memcpy(data.data(), request->data.data(), data.size());
        access_region(request->access.region, request->access.offset, data, true);
        region_access echoed = request->access;
        return send(encode_reply(message_.header, echoed, reply_));
    }

    /// Splits an access into naturally aligned pieces of at most 4 bytes (config space) or 8
    /// bytes (BAR0), as a CPU would issue them.
    void access_region(std::uint32_t region, std::uint64_t offset, std::span<std::byte> data, bool write)
    {
        const unsigned widest = region == static_cast<std::uint32_t>(region_index::config) ? 4U : 8U;
        std::size_t done = 0;
        while (done < data.size()) {
            const std::uint64_t at = offset + done;
            unsigned width = widest;
            while (width > 1 && ((at % width) != 0 || width > data.size() - done)) {
                width /= 2;
            }
            std::uint64_t value = 0;
            if (write) {
                std::memcpy(&value, data.data() + done, width);
                write_piece(region, at, width, value);
            } else {
                value = read_piece(region, at, width);
                std::memcpy(data.data() + done, &value, width);
            }
            done += width;
        }
    }

    [[nodiscard]] std::uint64_t read_piece(std::uint32_t region, std::uint64_t at, unsigned width)
    {
        if (region == static_cast<std::uint32_t>(region_index::config)) {
            config_.set_interrupt_status(interrupts_.intx_level());
            return config_.read(static_cast<std::uint32_t>(at), width);
        }
        if (!config_.memory_enabled()) {
            // Memory Space Enable is clear: BAR0 does not decode, and a read completes as an
            // Unsupported Request would, with all ones.
            ++statistics_.undecoded_accesses;
            return width == 8 ? ~std::uint64_t{0} : (std::uint64_t{1} << (width * 8U)) - 1U;
        }
        return controller_.mmio_read(at, width);
    }

    void write_piece(std::uint32_t region, std::uint64_t at, unsigned width, std::uint64_t value)
    {
        if (region != static_cast<std::uint32_t>(region_index::config)) {
            if (!config_.memory_enabled()) {
                ++statistics_.undecoded_accesses; // Memory Space Enable is clear: dropped
                return;
            }
            controller_.mmio_write(at, width, value);
            if (at == cc_offset && width >= 4) {
                // The doorbells restart from 0 on enable and reset; stale values in the mapped
                // page would read as changes (or hide them).
                clear_doorbell_page();
                log_cc(static_cast<std::uint32_t>(value));
            }
            return;
        }
        const auto event =
            config_.write(static_cast<std::uint32_t>(at), width, static_cast<std::uint32_t>(value));
        if (event.flr_requested) {
            log(server_log_level::info, "vfio-user: Function Level Reset");
            clear_doorbell_page();
        }
        pci::apply_config_event(event, config_, controller_, interrupts_);
    }

    static constexpr std::uint64_t cc_offset = 0x14;
    static constexpr std::uint64_t csts_offset = 0x1c;

    /// Logs the controller's life as the host drives it: enable, disable, shutdown.
    void log_cc(std::uint32_t cc)
    {
        const unsigned shn = (cc >> 14) & 3U;
        const std::uint32_t csts = static_cast<std::uint32_t>(controller_.mmio_read(csts_offset, 4));
        const unsigned shst = (csts >> 2) & 3U;
        if (shn != 0) {
            log(server_log_level::info, std::string{"CC.SHN = "} + (shn == 1 ? "normal" : "abrupt") +
                                            " shutdown; CSTS.SHST = " +
                                            (shst == 2   ? "complete"
                                             : shst == 1 ? "processing"
                                                         : "normal"));
        } else {
            log(server_log_level::debug, std::string{"CC.EN = "} + ((cc & 1U) != 0 ? "1" : "0"));
        }
    }

    /// A DMA region the client mapped; `base` is null for one without a file descriptor.
    struct mapping {
        std::uint64_t address;
        std::uint64_t length;
        void* base;
        bool writable;
    };

    // ---- doorbells in shared memory -----------------------------------------------------------

    /// The memfd behind BAR0's doorbells: as large as BAR0 up to the end of the doorbells, so
    /// that a client maps it at the offset of the doorbells in the BAR; this side maps the
    /// doorbells only.
    void create_doorbell_page()
    {
        const auto cap = controller_.mmio_read(0, 8);
        doorbell_stride_ = 4U << ((cap >> 32) & 0xfU); // CAP.DSTRD: bits 35:32
        doorbell_area_bytes_ = controller_.msix_table_offset() - spec::doorbell_base_offset;
        doorbell_slots_ = static_cast<std::size_t>(doorbell_area_bytes_ / doorbell_stride_);
        doorbell_file_.reset(::memfd_create("nvmekit-doorbells", MFD_CLOEXEC));
        if (!doorbell_file_.valid() ||
            ::ftruncate(doorbell_file_.get(),
                        static_cast<off_t>(spec::doorbell_base_offset + doorbell_area_bytes_)) != 0) {
            throw std::system_error{errno, std::generic_category(), "vfio-user: the doorbell memfd"};
        }
        void* page = ::mmap(nullptr, doorbell_area_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED,
                            doorbell_file_.get(), static_cast<off_t>(spec::doorbell_base_offset));
        if (page == MAP_FAILED) {
            throw std::system_error{errno, std::generic_category(), "vfio-user: mapping the doorbells"};
        }
        doorbell_page_ = static_cast<std::byte*>(page);
        doorbell_seen_.assign(doorbell_slots_, 0);
    }

    [[nodiscard]] std::atomic_ref<std::uint32_t> doorbell_slot(std::size_t slot) const noexcept
    {
        return std::atomic_ref{*reinterpret_cast<std::uint32_t*>(doorbell_page_ + slot * doorbell_stride_)};
    }

    /// Hands the controller every mapped doorbell whose value changed since the last look.
    void take_mapped_doorbells()
    {
        if (!config_.memory_enabled()) {
            return;
        }
        for (std::size_t slot = 0; slot < doorbell_slots_; ++slot) {
            const std::uint32_t value = doorbell_slot(slot).load(std::memory_order_acquire);
            if (value != doorbell_seen_[slot]) {
                doorbell_seen_[slot] = value;
                ++statistics_.mapped_doorbells;
                controller_.mmio_write(spec::doorbell_base_offset + slot * doorbell_stride_, 4, value);
            }
        }
    }

    void clear_doorbell_page() noexcept
    {
        for (std::size_t slot = 0; slot < doorbell_slots_; ++slot) {
            doorbell_slot(slot).store(0, std::memory_order_relaxed);
            doorbell_seen_[slot] = 0;
        }
    }

    // ---- DMA by messages ------------------------------------------------------------------------

    /// What `memory_` hands the accesses no mapped region holds.
    class message_dma final : public dma_fallback {
    public:
        explicit message_dma(server& owner) noexcept : owner_{owner} {}
        std::error_code read(std::uint64_t address, std::span<std::byte> destination) override
        {
            return owner_.message_read(address, destination);
        }
        std::error_code write(std::uint64_t address, std::span<const std::byte> source) override
        {
            return owner_.message_write(address, source);
        }

    private:
        server& owner_;
    };

    /// Whether [address, address + size) lies in regions mapped without a descriptor (adjacent
    /// ones may share it) and, when `writing`, writable ones: dma_unmapped or dma_fault if not.
    [[nodiscard]] std::error_code check_message_range(std::uint64_t address, std::uint64_t size,
                                                      bool writing) const noexcept
    {
        if (size != 0 && size - 1 > UINT64_MAX - address) {
            return make_error_code(errc::dma_unmapped);
        }
        const std::uint64_t last = size == 0 ? address : address + (size - 1);
        std::uint64_t at = address;
        for (;;) {
            const auto holder = std::find_if(mappings_.begin(), mappings_.end(), [&](const mapping& m) {
                return m.base == nullptr && at >= m.address && at - m.address < m.length;
            });
            if (holder == mappings_.end()) {
                return make_error_code(errc::dma_unmapped);
            }
            if (writing && !holder->writable) {
                return make_error_code(errc::dma_fault);
            }
            const std::uint64_t end_of_holder = holder->address + (holder->length - 1);
            if (end_of_holder >= last) {
                return {};
            }
            at = end_of_holder + 1;
        }
    }

    /// The most one DMA_READ/DMA_WRITE moves: the client's max_data_xfer_size and the server's.
    [[nodiscard]] std::size_t message_dma_chunk() const noexcept
    {
        return static_cast<std::size_t>(
            std::min<std::uint64_t>(client_max_data_xfer_size_, options_.limits.max_data_xfer_size));
    }

    /// Whether message DMA may run now: on the thread in run_once, with a client that is there.
    [[nodiscard]] std::error_code check_message_dma_allowed()
    {
        if (std::this_thread::get_id() != serving_thread_) {
            log(server_log_level::warning,
                "vfio-user: DMA by messages from a thread other than the server's");
            return make_error_code(errc::dma_fault);
        }
        if (!connected() || client_lost_ || message_dma_chunk() == 0) {
            return make_error_code(errc::dma_fault);
        }
        return {};
    }

    std::error_code message_read(std::uint64_t address, std::span<std::byte> destination)
    {
        return transfer_by_messages(
            address, destination.size(), false, [&](const dma_access& access, std::size_t done) {
                const std::uint16_t id = ++dma_message_id_;
                const std::size_t size = encode_dma_read_request(id, access, dma_request_);
                ++statistics_.dma_read_requests;
                if (const std::errc error =
                        exchange(std::span{dma_request_}.first(size),
                                 make_request_header(command::dma_read, id, sizeof(dma_access)));
                    error != std::errc{}) {
                    return error;
                }
                const auto data = decode_dma_read_reply(incoming_.header, payload_of(incoming_),
                                                        incoming_.fds.size(), access);
                if (!data) {
                    return data.error();
                }
                std::memcpy(destination.data() + done, data->data(), data->size());
                return std::errc{};
            });
    }

    std::error_code message_write(std::uint64_t address, std::span<const std::byte> source)
    {
        return transfer_by_messages(
            address, source.size(), true, [&](const dma_access& access, std::size_t done) {
                const std::uint16_t id = ++dma_message_id_;
                const auto data = source.subspan(done, static_cast<std::size_t>(access.count));
                const std::size_t size = encode_dma_write_request(id, access.address, data, dma_request_);
                ++statistics_.dma_write_requests;
                if (const std::errc error =
                        exchange(std::span{dma_request_}.first(size),
                                 make_request_header(command::dma_write, id, size - header_size));
                    error != std::errc{}) {
                    return error;
                }
                return check_dma_write_reply(incoming_.header, payload_of(incoming_), incoming_.fds.size(),
                                             access);
            });
    }

    /// Moves [address, address + size) by messages, `message(access, bytes done)` for each piece
    /// of at most message_dma_chunk() bytes, in address order; stops at the first that fails.
    template <typename Message>
    std::error_code transfer_by_messages(std::uint64_t address, std::size_t size, bool writing,
                                         Message&& message)
    {
        if (const auto error = check_message_range(address, size, writing)) {
            return error;
        }
        if (const auto error = check_message_dma_allowed()) {
            return failed_message_dma(error);
        }
        const std::size_t chunk = message_dma_chunk();
        for (std::size_t done = 0; done < size;) {
            const std::size_t count = std::min(chunk, size - done);
            if (const std::errc error = message(dma_access{address + done, count}, done);
                error != std::errc{}) {
                return failed_message_dma(error);
            }
            done += count;
        }
        return {};
    }

    [[nodiscard]] static std::span<const std::byte> payload_of(const received_message& message) noexcept
    {
        return std::span<const std::byte>{message.bytes}.subspan(header_size);
    }

    std::error_code failed_message_dma(std::errc error)
    {
        ++statistics_.failed_message_dma;
        log(server_log_level::warning,
            std::string{"vfio-user: DMA by messages failed: "} + std::make_error_code(error).message());
        return make_error_code(errc::dma_fault);
    }
    std::error_code failed_message_dma(std::error_code error)
    {
        ++statistics_.failed_message_dma;
        return error;
    }

    /// Sends the server's request `bytes` (whose header is `request`) and waits for its reply,
    /// which it leaves in incoming_. Commands that arrive first are kept in deferred_, in order;
    /// a reply to anything else is dropped. ENOTCONN when the client is gone (client_lost_ is
    /// then set; still_connected() disconnects it after the controller's poll), ETIMEDOUT after
    /// options_.dma_reply_timeout.
    std::errc exchange(std::span<const std::byte> bytes, const message_header& request)
    {
        if (!send_message(client_.get(), bytes)) {
            client_lost_ = true;
            return std::errc::not_connected;
        }
        const auto deadline = std::chrono::steady_clock::now() + options_.dma_reply_timeout;
        for (;;) {
            const auto left =
                std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
            if (left.count() <= 0) {
                return std::errc::timed_out;
            }
            pollfd waiting{client_.get(), POLLIN, 0};
            if (::poll(&waiting, 1, static_cast<int>(left.count())) <= 0) {
                continue; // EINTR, or the deadline: checked above
            }
            const auto status = receive_message(client_.get(), incoming_, options_.limits,
                                                accepted_messages::commands_and_replies);
            if (status != receive_status::message) {
                if (status == receive_status::broken) {
                    ++statistics_.broken_streams;
                }
                log(server_log_level::info, "vfio-user: the client went away while a DMA reply was awaited");
                client_lost_ = true;
                return std::errc::not_connected;
            }
            if (incoming_.header.flags.get(message_flags::type) == message_type::command) {
                if (deferred_.size() >= max_deferred_messages) {
                    ++statistics_.broken_streams;
                    log(server_log_level::warning,
                        "vfio-user: too many commands while a DMA reply was awaited");
                    client_lost_ = true;
                    return std::errc::not_connected;
                }
                ++statistics_.deferred_messages;
                deferred_.push_back(std::move(incoming_));
                continue;
            }
            if (is_reply_to(incoming_.header, request)) {
                return std::errc{};
            }
            ++statistics_.stale_replies;
            log(server_log_level::warning, "vfio-user: a reply to no request awaited; dropped");
        }
    }

    Controller& controller_;
    mapped_memory& memory_;
    eventfd_interrupts& interrupts_;
    server_options options_;
    server_logger logger_;
    pci::config_space config_;
    unique_fd listener_;
    unique_fd client_;
    bool negotiated_ = false;
    received_message message_;
    std::vector<std::byte> reply_;
    std::vector<std::byte> scratch_;
    std::array<std::uint64_t, pci_num_regions> region_sizes_{};
    std::array<std::uint32_t, pci_num_irqs> irq_counts_{};
    std::vector<mapping> mappings_;
    server_statistics statistics_{};
    message_dma message_dma_{*this};
    std::thread::id serving_thread_{}; ///< the thread in run_once: the only one message DMA serves
    bool client_lost_ = false;         ///< the client went away while a DMA reply was awaited
    std::uint64_t client_max_data_xfer_size_ = client_capabilities{}.max_data_xfer_size;
    std::uint16_t dma_message_id_ = 0;
    std::vector<std::byte> dma_request_;
    received_message incoming_;             ///< what arrived while a DMA reply was awaited
    std::deque<received_message> deferred_; ///< commands that arrived then, oldest first
    unique_fd doorbell_file_;               ///< mappable_doorbells: the memfd behind them
    std::byte* doorbell_page_ = nullptr;    ///< this side's mapping of the doorbells
    std::uint64_t doorbell_area_bytes_ = 0;
    std::uint64_t doorbell_stride_ = 4;
    std::size_t doorbell_slots_ = 0;
    std::vector<std::uint32_t> doorbell_seen_; ///< each mapped doorbell's value last handed over
};

} // namespace transport::vfio_user
NVMEKIT_END_NAMESPACE
