#pragma once
/// An NVM subsystem: its identity (NQN, serial, model, firmware revision) and the namespaces that
/// one or more controllers share.
///
///     nvmekit::subsystem<nvmekit::ram_backend> subsystem{{.nqn = "nqn.2026-11.io.example:disk0"}};
///     subsystem.add_namespace(nvmekit::ram_backend{1ULL << 30});   // NSID 1, attached later
///     nvmekit::controller<traits> ctrl{dma, msix, clock, subsystem};
///
/// Namespaces added before a controller is created are attached to it when it registers; later
/// ones are attached with attach() (or the host's Namespace Attachment command). Attach and detach
/// notify every affected controller, which raises the Namespace Attribute Changed event and adds
/// the NSID to its Changed Namespace List log.
///
/// Capacity: the subsystem has an NVM capacity pool (Identify Controller TNVMCAP) that every
/// namespace takes its backend's capacity from; what is left (UNVMCAP) is what the host's
/// Namespace Management can create namespaces from, and a deleted namespace returns its capacity.
/// A namespace the host creates needs a backend: the subsystem makes it with the backend factory
/// (set_backend_factory); a subsystem of RAM namespaces makes sparse RAM backends by default.

#include <array>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <nvmekit/backends/any_backend.hpp>
#include <nvmekit/backends/ram_backend.hpp>
#include <nvmekit/config.hpp>
#include <nvmekit/contracts/block_backend.hpp>
#include <nvmekit/storage/nvm_namespace.hpp>

NVMEKIT_BEGIN_NAMESPACE

/// What Identify Controller reports about the subsystem.
struct subsystem_identity {
    std::string nqn = "nqn.2026-11.io.nvmekit:subsystem0";
    std::string serial_number = "NVMEKIT0001";
    std::string model_number = "nvmekit emulated controller";
    std::string firmware_revision = "0.1.0";
    std::array<std::uint8_t, 3> ieee_oui{}; ///< IEEE OUI (Identify Controller bytes 75:73)
};

/// How the subsystem numbers and attaches namespaces.
struct subsystem_options {
    /// NN: the highest NSID the subsystem can hold (1 to 1024, one Identify list page).
    std::uint32_t max_namespaces = 256;
    /// Attach every namespace to every controller when either of them is created (namespaces
    /// the host creates with Namespace Management are attached only by Namespace Attachment).
    bool attach_automatically = true;
    /// TNVMCAP: the NVM capacity in bytes that namespaces are allocated from. 0: the capacity of
    /// the namespaces added with add_namespace(), growing with each, so nothing is left to create
    /// namespaces from until one is deleted.
    std::uint64_t nvm_capacity_bytes = 0;
};

/// Why the subsystem could not create a namespace.
enum class namespace_creation_error : std::uint8_t {
    none,
    insufficient_capacity,  ///< more bytes than the pool has unallocated
    identifier_unavailable, ///< every NSID up to max_namespaces is allocated
    no_backend,             ///< no backend factory, or the factory made none
};

/// What the host asks of a namespace it creates (Namespace Management, Base 2.0).
struct namespace_request {
    std::uint64_t blocks = 0;    ///< NSZE (= NCAP: no thin provisioning)
    namespace_options options{}; ///< LBA format, extended metadata, NMIC
};

/// The outcome of subsystem::create_namespace.
struct namespace_creation {
    namespace_creation_error error = namespace_creation_error::none;
    std::uint32_t nsid = 0; ///< the new NSID when error is none
};

/// A controller's end of the subsystem: it is told about namespace changes.
struct namespace_listener {
    void* context = nullptr;
    void (*changed)(void* context, std::uint32_t nsid) = nullptr;
};

template <typename Backend>
class subsystem {
public:
    using backend_type = Backend;
    using namespace_type = nvm_namespace<Backend>;
    static constexpr std::uint32_t max_supported_namespaces = 1024;

    /// Makes the backend of a namespace of the given bytes, or none (the host is then told the
    /// capacity is insufficient). Called on the admin context.
    using backend_factory = std::function<std::optional<Backend>(std::uint64_t bytes)>;

    explicit subsystem(subsystem_identity identity = {}, subsystem_options options = {})
        : identity_{std::move(identity)}, options_{options}, total_capacity_{options.nvm_capacity_bytes}
    {
        if (options_.max_namespaces == 0 || options_.max_namespaces > max_supported_namespaces) {
            throw std::invalid_argument("subsystem: max_namespaces must be 1 to 1024");
        }
        if constexpr (std::is_same_v<Backend, ram_backend>) {
            ram_defaults_ = ram_backend_options{};
        }
    }
    subsystem(const subsystem&) = delete;
    subsystem& operator=(const subsystem&) = delete;

    [[nodiscard]] const subsystem_identity& identity() const noexcept { return identity_; }
    [[nodiscard]] const subsystem_options& options() const noexcept { return options_; }

    /// Adds a namespace on `backend` with NSID `nsid` (0: the lowest free NSID). Unless
    /// `identifiers` gives them (as a management client may), its NGUID, EUI-64 and UUID are
    /// derived from the subsystem NQN and the NSID, so they are unique within the subsystem and
    /// differ between subsystems with different NQNs. Throws std::invalid_argument for an NSID in
    /// use or out of range, a full subsystem, or a backend smaller than one block.
    namespace_type& add_namespace(Backend backend, namespace_options options = {}, std::uint32_t nsid = 0,
                                  std::optional<namespace_identifiers> identifiers = std::nullopt)
    {
        if (nsid == 0) {
            nsid = 1;
            while (namespaces_.contains(nsid)) {
                ++nsid;
            }
        }
        if (nsid > options_.max_namespaces) {
            throw std::invalid_argument("subsystem: NSID " + std::to_string(nsid) +
                                        " beyond max_namespaces " + std::to_string(options_.max_namespaces));
        }
        if (namespaces_.contains(nsid)) {
            throw std::invalid_argument("subsystem: NSID " + std::to_string(nsid) + " is in use");
        }
        if (options.lba_format >= supported_lba_formats.size()) {
            throw std::invalid_argument("subsystem: LBA format index out of range");
        }
        const auto& format = supported_lba_formats[options.lba_format];
        if (backend.capacity_bytes() < std::uint64_t{format.data_bytes} + format.metadata_bytes) {
            throw std::invalid_argument("subsystem: the backend of NSID " + std::to_string(nsid) +
                                        " is smaller than one block");
        }
        if (options_.nvm_capacity_bytes != 0 && backend.capacity_bytes() > unallocated_capacity()) {
            throw std::invalid_argument("subsystem: the backend of NSID " + std::to_string(nsid) +
                                        " is larger than the unallocated NVM capacity");
        }
        note_backend_kind(backend);
        if (options_.nvm_capacity_bytes == 0) {
            total_capacity_ += backend.capacity_bytes();
        }
        allocated_capacity_ += backend.capacity_bytes();
        auto entry = std::make_unique<namespace_type>(
            nsid, std::move(backend), identifiers.value_or(make_identifiers(nsid, 0)), options);
        auto& added = *entry;
        namespaces_.emplace(nsid, std::move(entry));
        if (options_.attach_automatically) {
            for (const auto& [controller_id, listener] : controllers_) {
                attach(nsid, controller_id);
            }
        }
        return added;
    }

    /// Detaches the namespace from every controller and removes it. Throws std::logic_error when
    /// its backend still has requests outstanding (poll the controllers first).
    void remove_namespace(std::uint32_t nsid)
    {
        auto* ns = find(nsid);
        if (ns == nullptr) {
            throw std::invalid_argument("subsystem: no namespace " + std::to_string(nsid));
        }
        if (ns->backend().outstanding() != 0) {
            throw std::logic_error("subsystem: namespace " + std::to_string(nsid) + " has I/O outstanding");
        }
        const std::vector<std::uint16_t> attached(ns->attached_controllers().begin(),
                                                  ns->attached_controllers().end());
        for (const std::uint16_t controller_id : attached) {
            detach(nsid, controller_id);
        }
        allocated_capacity_ -= ns->backend().capacity_bytes();
        retired_lba_status_generations_ += ns->uncorrectable_generation() + 1U;
        namespaces_.erase(nsid);
    }

    // ---- capacity and Namespace Management ------------------------------------------------------

    /// TNVMCAP: bytes of NVM capacity in the subsystem.
    [[nodiscard]] std::uint64_t total_capacity() const noexcept { return total_capacity_; }
    /// Bytes allocated to namespaces (the sum of their backends' capacities).
    [[nodiscard]] std::uint64_t allocated_capacity() const noexcept { return allocated_capacity_; }
    /// UNVMCAP: bytes not allocated to any namespace.
    [[nodiscard]] std::uint64_t unallocated_capacity() const noexcept
    {
        return total_capacity_ - allocated_capacity_;
    }

    /// Sets how namespaces the host creates get their backends (empty: none can be created,
    /// unless the subsystem holds RAM namespaces, which makes sparse RAM backends).
    void set_backend_factory(backend_factory factory) { factory_ = std::move(factory); }

    /// Creates a namespace of `request.blocks` blocks at the lowest free NSID, from the
    /// unallocated capacity, on a backend the factory makes; it is attached to no controller.
    /// Its identifiers differ from those of any namespace that held the NSID before.
    namespace_creation create_namespace(const namespace_request& request)
    {
        NVMEKIT_ASSERT(request.options.lba_format < supported_lba_formats.size(),
                       "lba format index out of range");
        const auto& format = supported_lba_formats[request.options.lba_format];
        const std::uint64_t unit = std::uint64_t{format.data_bytes} + format.metadata_bytes;
        if (request.blocks == 0 || request.blocks > std::numeric_limits<std::uint64_t>::max() / unit ||
            request.blocks * unit > unallocated_capacity()) {
            return {namespace_creation_error::insufficient_capacity};
        }
        std::uint32_t nsid = 1;
        while (namespaces_.contains(nsid)) {
            ++nsid;
        }
        if (nsid > options_.max_namespaces) {
            return {namespace_creation_error::identifier_unavailable};
        }
        std::optional<Backend> backend = make_backend(request.blocks * unit);
        if (!backend || backend->capacity_bytes() != request.blocks * unit) {
            return {namespace_creation_error::no_backend};
        }
        allocated_capacity_ += backend->capacity_bytes();
        ++creations_;
        namespaces_.emplace(nsid, std::make_unique<namespace_type>(nsid, std::move(*backend),
                                                                   make_identifiers(nsid, creations_),
                                                                   request.options));
        return {namespace_creation_error::none, nsid};
    }

    /// Whether the namespace may be removed now: no request of it is in its backend.
    [[nodiscard]] bool removable(std::uint32_t nsid) const noexcept
    {
        const auto* ns = find(nsid);
        return ns != nullptr && ns->backend().outstanding() == 0;
    }

    /// Calls `visit(std::uint16_t controller_id)` for every controller, in increasing ID order.
    template <typename Visitor>
    void for_each_controller(Visitor&& visit) const
    {
        for (const auto& [controller_id, listener] : controllers_) {
            visit(controller_id);
        }
    }

    /// Counts changes of what the LBA Status Information log reports: the uncorrectable ranges of
    /// every namespace, the namespaces removed, and attachments.
    [[nodiscard]] std::uint64_t lba_status_generation() const noexcept
    {
        std::uint64_t generation = retired_lba_status_generations_;
        for (const auto& [nsid, ns] : namespaces_) {
            generation += ns->uncorrectable_generation();
        }
        return generation;
    }

    [[nodiscard]] namespace_type* find(std::uint32_t nsid) noexcept
    {
        const auto it = namespaces_.find(nsid);
        return it == namespaces_.end() ? nullptr : it->second.get();
    }
    [[nodiscard]] const namespace_type* find(std::uint32_t nsid) const noexcept
    {
        const auto it = namespaces_.find(nsid);
        return it == namespaces_.end() ? nullptr : it->second.get();
    }

    /// Calls `visit(namespace_type&)` for every namespace in NSID order.
    template <typename Visitor>
    void for_each_namespace(Visitor&& visit)
    {
        for (auto& [nsid, ns] : namespaces_) {
            visit(*ns);
        }
    }
    [[nodiscard]] std::size_t namespace_count() const noexcept { return namespaces_.size(); }

    /// Attaches a namespace to a controller and notifies it. False when either does not exist or
    /// the namespace is already attached there.
    bool attach(std::uint32_t nsid, std::uint16_t controller_id)
    {
        auto* ns = find(nsid);
        if (ns == nullptr || !controllers_.contains(controller_id) || !ns->attach(controller_id)) {
            return false;
        }
        ++retired_lba_status_generations_;
        notify(controller_id, nsid);
        return true;
    }

    /// Detaches a namespace from a controller and notifies it. False when it was not attached.
    bool detach(std::uint32_t nsid, std::uint16_t controller_id)
    {
        auto* ns = find(nsid);
        if (ns == nullptr || !ns->detach(controller_id)) {
            return false;
        }
        ++retired_lba_status_generations_;
        notify(controller_id, nsid);
        return true;
    }

    /// The namespace `nsid` when it is attached to `controller_id`, else null.
    [[nodiscard]] namespace_type* attached_namespace(std::uint32_t nsid, std::uint16_t controller_id) noexcept
    {
        auto* ns = find(nsid);
        return ns != nullptr && ns->attached_to(controller_id) ? ns : nullptr;
    }

    /// A controller joins the subsystem; it gets the lowest free controller ID (1-based) unless it
    /// asks for one. Namespaces are attached to it (without notifications: it has just started)
    /// when attach_automatically is set. Throws std::invalid_argument for an ID in use.
    std::uint16_t register_controller(namespace_listener listener, std::uint16_t controller_id = 0)
    {
        if (controller_id == 0) {
            controller_id = 1;
            while (controllers_.contains(controller_id)) {
                ++controller_id;
            }
        }
        if (controller_id >= 0xfff0U || controllers_.contains(controller_id)) {
            throw std::invalid_argument("subsystem: controller ID " + std::to_string(controller_id) +
                                        " is in use or reserved");
        }
        controllers_.emplace(controller_id, listener);
        if (options_.attach_automatically) {
            for (auto& [nsid, ns] : namespaces_) {
                ns->attach(controller_id);
            }
        }
        return controller_id;
    }

    /// A controller leaves: it is detached from every namespace, silently.
    void unregister_controller(std::uint16_t controller_id) noexcept
    {
        controllers_.erase(controller_id);
        for (auto& [nsid, ns] : namespaces_) {
            ns->detach(controller_id);
        }
    }

    [[nodiscard]] bool has_controller(std::uint16_t controller_id) const noexcept
    {
        return controllers_.contains(controller_id);
    }

private:
    void notify(std::uint16_t controller_id, std::uint32_t nsid)
    {
        const auto it = controllers_.find(controller_id);
        if (it != controllers_.end() && it->second.changed != nullptr) {
            it->second.changed(it->second.context, nsid);
        }
    }

    /// FNV-1a of the NQN, so two subsystems give different identifiers.
    [[nodiscard]] std::uint64_t nqn_hash() const noexcept
    {
        std::uint64_t hash = 0xcbf29ce484222325ULL;
        for (const char c : identity_.nqn) {
            hash = (hash ^ static_cast<std::uint8_t>(c)) * 0x100000001b3ULL;
        }
        return hash;
    }

    /// Remembers whether every namespace added so far is on a RAM backend, and their options:
    /// then namespaces the host creates get sparse RAM backends like them by default.
    void note_backend_kind(const Backend& backend)
    {
        if constexpr (std::is_same_v<Backend, ram_backend>) {
            if (!other_backend_seen_ && namespaces_.empty()) {
                ram_defaults_ = backend.options();
            }
        } else if constexpr (std::is_same_v<Backend, any_backend>) {
            if (const auto* ram = backend.template get_if<ram_backend>();
                ram != nullptr && !other_backend_seen_) {
                if (!ram_defaults_) {
                    ram_defaults_ = ram->options();
                }
            } else {
                other_backend_seen_ = true;
                ram_defaults_.reset();
            }
        } else {
            other_backend_seen_ = true;
        }
    }

    [[nodiscard]] std::optional<Backend> make_backend(std::uint64_t bytes)
    {
        if (factory_) {
            return factory_(bytes);
        }
        if constexpr (std::is_same_v<Backend, ram_backend> || std::is_same_v<Backend, any_backend>) {
            if (ram_defaults_) {
                auto options = *ram_defaults_;
                options.preallocate = false; // sparse: a new namespace costs what is written
                try {
                    return std::optional<Backend>{std::in_place, ram_backend{bytes, options}};
                } catch (const std::exception&) {
                    return std::nullopt; // too large for the chunk size, or out of memory
                }
            }
        }
        return std::nullopt;
    }

    /// `creation` is 0 for namespaces the embedder adds, and the count of namespaces created so
    /// far for one the host creates, so that a re-created NSID gets new identifiers.
    [[nodiscard]] namespace_identifiers make_identifiers(std::uint32_t nsid,
                                                         std::uint32_t creation) const noexcept
    {
        namespace_identifiers ids{};
        const std::uint64_t hash = nqn_hash();
        for (std::size_t i = 0; i < 8; ++i) {
            const auto byte = static_cast<std::uint8_t>(hash >> (56 - 8 * i));
            ids.nguid[i] = byte;
            ids.uuid[i] = byte;
        }
        for (std::size_t i = 0; i < 4; ++i) {
            const auto byte = static_cast<std::uint8_t>(nsid >> (24 - 8 * i));
            ids.nguid[12 + i] = byte;
            ids.uuid[12 + i] = byte;
            ids.eui64[4 + i] = byte;
        }
        // EUI-64: the subsystem's OUI-like prefix from the hash, then the NSID.
        for (std::size_t i = 0; i < 4; ++i) {
            ids.eui64[i] = static_cast<std::uint8_t>(hash >> (8 * i));
        }
        for (std::size_t i = 0; i < 4; ++i) {
            const auto byte = static_cast<std::uint8_t>(creation >> (24 - 8 * i));
            ids.nguid[8 + i] = byte;
            ids.uuid[8 + i] = byte;
            ids.eui64[i] = static_cast<std::uint8_t>(ids.eui64[i] ^ byte);
        }
        // version 8 (custom), RFC 9562
        ids.uuid[6] = static_cast<std::uint8_t>((ids.uuid[6] & 0x0fU) | 0x80U);
        ids.uuid[8] = static_cast<std::uint8_t>((ids.uuid[8] & 0x3fU) | 0x80U); // variant 10b
        return ids;
    }

    subsystem_identity identity_;
    subsystem_options options_;
    std::map<std::uint32_t, std::unique_ptr<namespace_type>> namespaces_;
    std::map<std::uint16_t, namespace_listener> controllers_;
    std::uint64_t total_capacity_ = 0;
    std::uint64_t allocated_capacity_ = 0;
    backend_factory factory_{};
    std::optional<ram_backend_options> ram_defaults_{};
    bool other_backend_seen_ = false;
    std::uint32_t creations_ = 0;
    std::uint64_t retired_lba_status_generations_ = 0;
};

NVMEKIT_END_NAMESPACE
