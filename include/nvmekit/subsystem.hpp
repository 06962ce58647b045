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

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nvmekit/block_backend.hpp>
#include <nvmekit/config.hpp>
#include <nvmekit/nvm_namespace.hpp>

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
    /// Attach every namespace to every controller when either of them is created.
    bool attach_automatically = true;
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

    explicit subsystem(subsystem_identity identity = {}, subsystem_options options = {})
        : identity_{std::move(identity)}, options_{options}
    {
        if (options_.max_namespaces == 0 || options_.max_namespaces > max_supported_namespaces) {
            throw std::invalid_argument("subsystem: max_namespaces must be 1 to 1024");
        }
    }
    subsystem(const subsystem&) = delete;
    subsystem& operator=(const subsystem&) = delete;

    [[nodiscard]] const subsystem_identity& identity() const noexcept { return identity_; }
    [[nodiscard]] const subsystem_options& options() const noexcept { return options_; }

    /// Adds a namespace on `backend` with NSID `nsid` (0: the lowest free NSID). Its NGUID, EUI-64
    /// and UUID are derived from the subsystem NQN and the NSID, so they are unique within the
    /// subsystem and differ between subsystems with different NQNs. Throws std::invalid_argument
    /// for an NSID in use or out of range, a full subsystem, or a backend smaller than one block.
    namespace_type& add_namespace(Backend backend, namespace_options options = {}, std::uint32_t nsid = 0)
    {
        if (nsid == 0) {
            nsid = 1;
            while (namespaces_.contains(nsid)) {
                ++nsid;
            }
        }
        if (nsid > options_.max_namespaces) {
            throw std::invalid_argument("subsystem: NSID " + std::to_string(nsid) + " beyond max_namespaces " +
                                        std::to_string(options_.max_namespaces));
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
        auto entry = std::make_unique<namespace_type>(nsid, std::move(backend), make_identifiers(nsid), options);
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
        namespaces_.erase(nsid);
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

    [[nodiscard]] namespace_identifiers make_identifiers(std::uint32_t nsid) const noexcept
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
        ids.uuid[6] = static_cast<std::uint8_t>((ids.uuid[6] & 0x0fU) | 0x80U); // version 8 (custom), RFC 9562
        ids.uuid[8] = static_cast<std::uint8_t>((ids.uuid[8] & 0x3fU) | 0x80U); // variant 10b
        return ids;
    }

    subsystem_identity identity_;
    subsystem_options options_;
    std::map<std::uint32_t, std::unique_ptr<namespace_type>> namespaces_;
    std::map<std::uint16_t, namespace_listener> controllers_;
};

NVMEKIT_END_NAMESPACE
