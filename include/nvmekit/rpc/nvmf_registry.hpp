#pragma once
/// The NVMe-oF target's management state, as SPDK's nvmf library keeps it and its JSON-RPC
/// methods change it: transports (one per transport type), subsystems by NQN, and in each
/// subsystem its namespaces (each on a claimed bdev), allowed hosts and listen addresses; and
/// the discovery service's referrals.
///
///     nvmekit::rpc::bdev_registry bdevs;
///     nvmekit::rpc::nvmf_registry target;
///     target.add_transport(nvmekit::rpc::default_transport("VFIOUSER"));
///     target.add_subsystem({.nqn = "nqn.2016-06.io.spdk:cnode1", .allow_any_host = true});
///     target.add_namespace("nqn.2016-06.io.spdk:cnode1", {.device = bdevs.find("Malloc0")});
///     target.add_listener("nqn.2016-06.io.spdk:cnode1", {.trtype = "VFIOUSER", .traddr = "/run/vm0"});
///
/// The registry records; it starts nothing. Whoever serves the target (nvmekit-serve) reads it,
/// or acts in the hooks of nvmf_methods.hpp.
///
/// Every refusal throws rpc::exception with the code and a message SPDK's methods would answer
/// (Invalid Params, -32602, for most; Internal Error, -32603, for a subsystem NQN taken), the
/// message naming what is wrong; a refused call changes nothing. One mutex guards the state, so
/// any thread may read snapshots (subsystems(), transports()) while another changes it.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nvmekit/config.hpp>
#include <nvmekit/rpc/bdev_registry.hpp>
#include <nvmekit/rpc/jsonrpc.hpp>
#include <nvmekit/spec/fabrics.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace rpc {

/// The NQN of the discovery subsystem every target has (NVMe over Fabrics 1.1, 7.4.4).
inline constexpr std::string_view discovery_nqn = "nqn.2014-08.org.nvmexpress.discovery";

/// A transport's options under SPDK's names. Those of another transport type are not kept (SPDK
/// ignores them too).
struct nvmf_transport_options {
    std::string trtype; ///< "TCP" or "VFIOUSER"
    std::uint32_t max_queue_depth = 128;
    std::uint32_t max_io_qpairs_per_ctrlr = 127;
    std::uint32_t in_capsule_data_size = 4096;
    std::uint32_t max_io_size = 131072;
    std::uint32_t io_unit_size = 131072;
    std::uint32_t max_aq_depth = 128;
    std::uint32_t num_shared_buffers = 511;
    std::uint32_t buf_cache_size = 0xffffffff;
    std::uint32_t abort_timeout_sec = 1;
    bool dif_insert_or_strip = false;
    bool zcopy = false;
    // TCP only.
    bool c2h_success = true;
    std::uint32_t sock_priority = 0;
    std::uint32_t control_msg_num = 32;
    // VFIOUSER only.
    bool disable_mappable_bar0 = false;
    bool disable_adaptive_irq = false;
    bool disable_shadow_doorbells = false;

    friend bool operator==(const nvmf_transport_options&, const nvmf_transport_options&) = default;
};

/// "TCP" and "VFIOUSER", the transport types nvmekit serves.
[[nodiscard]] inline bool is_nvmf_transport_type(std::string_view trtype)
{
    return trtype == "TCP" || trtype == "VFIOUSER";
}

/// nvmekit's defaults for `trtype` (an upper-case type is_nvmf_transport_type accepts): SPDK's
/// for TCP; for VFIOUSER a deeper queue, 64 queue pairs with the admin queue, no in-capsule data
/// and no shared buffers, as SPDK's vfio-user transport has.
[[nodiscard]] inline nvmf_transport_options default_transport(std::string trtype)
{
    nvmf_transport_options options;
    if (trtype == "VFIOUSER") {
        options.max_queue_depth = 256;
        options.max_io_qpairs_per_ctrlr = 63;
        options.in_capsule_data_size = 0;
        options.max_aq_depth = 32;
        options.num_shared_buffers = 0;
        options.buf_cache_size = 0;
    }
    options.trtype = std::move(trtype);
    return options;
}

/// A listen address (SPDK's listen_address object). For VFIOUSER, traddr is a directory in
/// which the socket `cntrl` is created and trsvcid is unused.
struct nvmf_listen_address {
    std::string trtype{};
    std::string adrfam{}; ///< "IPv4" or "IPv6" for TCP; empty when not given for VFIOUSER
    std::string traddr{};
    std::string trsvcid{};

    friend bool operator==(const nvmf_listen_address&, const nvmf_listen_address&) = default;
};

/// A discovery service referral (SPDK's nvmf_discovery_add_referral): another discovery
/// service, or an NVM subsystem elsewhere, that the discovery controllers list. subnqn is the
/// discovery NQN unless given.
struct nvmf_referral {
    nvmf_listen_address address{};
    std::string subnqn{};
    bool secure_channel = false;

    /// The same referral as SPDK tells them apart: the address and the NQN.
    [[nodiscard]] bool same(const nvmf_referral& other) const
    {
        return address == other.address && subnqn == other.subnqn;
    }
    friend bool operator==(const nvmf_referral&, const nvmf_referral&) = default;
};

using nguid_bytes = std::array<std::uint8_t, 16>;
using eui64_bytes = std::array<std::uint8_t, 8>;

/// A namespace of a subsystem. nsid 0 and an absent uuid ask add_namespace() to choose: the
/// lowest free NSID, the bdev's UUID; the NGUID is the UUID's bytes unless given.
struct nvmf_namespace {
    std::uint32_t nsid = 0;
    std::shared_ptr<rpc::bdev> device{};
    std::optional<uuid_bytes> uuid{};
    std::optional<nguid_bytes> nguid{};
    std::optional<eui64_bytes> eui64{};
};

/// A subsystem: what nvmf_create_subsystem sets, and what was added to it since.
struct nvmf_subsystem {
    std::string nqn;
    std::string serial_number = "00000000000000000000";
    std::string model_number = "nvmekit Controller";
    std::uint32_t max_namespaces = 32;
    bool allow_any_host = false;
    std::uint16_t min_cntlid = 1;
    std::uint16_t max_cntlid = 0xffef;
    std::vector<std::string> hosts{};
    std::vector<nvmf_listen_address> listeners{};
    std::vector<nvmf_namespace> namespaces{}; ///< by NSID
};

namespace detail {

[[noreturn]] inline void refuse(int code, const std::string& message) { throw exception{code, message}; }

/// NVMe over Fabrics 1.1, 7.9: an NQN is at most 223 bytes and begins "nqn." (spec::is_valid_nqn).
inline void check_nqn(const std::string& nqn)
{
    if (!spec::is_valid_nqn(nqn)) {
        refuse(error_code::invalid_params,
               "'" + nqn + "' is not an NQN (\"nqn.\" then a name, at most 223 bytes)");
    }
}

/// Identify Controller's SN (20 bytes) and MN (40 bytes): printable ASCII.
inline void check_identify_text(const std::string& text, std::size_t limit, const char* what)
{
    const bool printable =
        std::all_of(text.begin(), text.end(), [](char c) { return c >= 0x20 && c <= 0x7e; });
    if (text.empty() || text.size() > limit || !printable) {
        refuse(error_code::invalid_params, std::string{"Invalid "} + what + " '" + text + "': 1 to " +
                                               std::to_string(limit) + " printable ASCII characters");
    }
}

} // namespace detail

class nvmf_registry {
public:
    // Transports

    /// Adds a transport; refused when one of its type exists.
    void add_transport(nvmf_transport_options options)
    {
        const std::lock_guard lock{mutex_};
        if (find_transport_locked(options.trtype) != nullptr) {
            detail::refuse(error_code::invalid_params,
                           "Transport type '" + options.trtype + "' already exists");
        }
        transports_.push_back(std::move(options));
    }

    [[nodiscard]] std::optional<nvmf_transport_options> transport(std::string_view trtype) const
    {
        const std::lock_guard lock{mutex_};
        const auto* found = find_transport_locked(trtype);
        return found == nullptr ? std::nullopt : std::optional{*found};
    }

    /// The transports in the order they were created.
    [[nodiscard]] std::vector<nvmf_transport_options> transports() const
    {
        const std::lock_guard lock{mutex_};
        return transports_;
    }

    // Subsystems

    /// Adds a subsystem with no namespaces, hosts or listeners (those in `created` are ignored).
    /// max_namespaces 0 means 32, as in SPDK.
    void add_subsystem(nvmf_subsystem created)
    {
        detail::check_nqn(created.nqn);
        detail::check_identify_text(created.serial_number, 20, "SN");
        detail::check_identify_text(created.model_number, 40, "MN");
        if (created.min_cntlid == 0 || created.min_cntlid > created.max_cntlid ||
            created.max_cntlid > 0xffef) {
            detail::refuse(error_code::invalid_params, "Invalid cntlid range [" +
                                                           std::to_string(created.min_cntlid) + "-" +
                                                           std::to_string(created.max_cntlid) +
                                                           "]: 1 <= min_cntlid <= max_cntlid <= 65519");
        }
        if (created.max_namespaces == 0) {
            created.max_namespaces = 32;
        }
        created.hosts.clear();
        created.listeners.clear();
        created.namespaces.clear();
        const std::lock_guard lock{mutex_};
        if (created.nqn == discovery_nqn || find_subsystem_locked(created.nqn) != subsystems_.end()) {
            detail::refuse(error_code::internal_error,
                           "Unable to create subsystem " + created.nqn + ": the NQN is taken");
        }
        subsystems_.push_back(std::move(created));
    }

    /// Removes the subsystem `nqn`, releasing its namespaces' bdevs; answers what it was.
    nvmf_subsystem remove_subsystem(const std::string& nqn)
    {
        const std::lock_guard lock{mutex_};
        const auto it = subsystem_locked(nqn);
        nvmf_subsystem removed = std::move(*it);
        subsystems_.erase(it);
        for (auto& ns : removed.namespaces) {
            ns.device->release();
        }
        return removed;
    }

    /// Puts back a subsystem remove_subsystem() answered (its removal could not be carried
    /// out), claiming its namespaces' bdevs again; it is listed last from then on.
    void restore_subsystem(nvmf_subsystem removed)
    {
        const std::lock_guard lock{mutex_};
        for (auto& ns : removed.namespaces) {
            static_cast<void>(ns.device->claim(removed.nqn));
        }
        subsystems_.push_back(std::move(removed));
    }

    /// A copy of the subsystem `nqn`, or nothing.
    [[nodiscard]] std::optional<nvmf_subsystem> subsystem(std::string_view nqn) const
    {
        const std::lock_guard lock{mutex_};
        const auto it = find_subsystem_locked(nqn);
        return it == subsystems_.end() ? std::nullopt : std::optional{*it};
    }

    /// Copies of the subsystems in the order they were created.
    [[nodiscard]] std::vector<nvmf_subsystem> subsystems() const
    {
        const std::lock_guard lock{mutex_};
        return subsystems_;
    }

    // Namespaces

    /// Adds a namespace on a bdev, claiming it for the subsystem; answers the namespace as
    /// added (its NSID, UUID and NGUID filled in).
    nvmf_namespace add_namespace(const std::string& nqn, nvmf_namespace added)
    {
        if (!added.device) {
            detail::refuse(error_code::invalid_params, "a namespace needs a bdev");
        }
        const std::lock_guard lock{mutex_};
        auto& target = *subsystem_locked(nqn);
        const auto taken = [&](std::uint32_t nsid) {
            return std::any_of(target.namespaces.begin(), target.namespaces.end(),
                               [&](const nvmf_namespace& ns) { return ns.nsid == nsid; });
        };
        if (added.nsid == 0) {
            std::uint32_t nsid = 1;
            while (nsid <= target.max_namespaces && taken(nsid)) {
                ++nsid;
            }
            if (nsid > target.max_namespaces) {
                detail::refuse(error_code::invalid_params, "subsystem " + nqn + " has all its " +
                                                               std::to_string(target.max_namespaces) +
                                                               " namespaces (max_namespaces)");
            }
            added.nsid = nsid;
        } else if (added.nsid > target.max_namespaces) {
            detail::refuse(error_code::invalid_params,
                           "nsid " + std::to_string(added.nsid) + " is above the max_namespaces (" +
                               std::to_string(target.max_namespaces) + ") of subsystem " + nqn);
        } else if (taken(added.nsid)) {
            detail::refuse(error_code::invalid_params,
                           "nsid " + std::to_string(added.nsid) + " is in use in subsystem " + nqn);
        }
        if (!added.uuid) {
            added.uuid = added.device->uuid();
        }
        if (!added.nguid) {
            added.nguid = *added.uuid;
        }
        for (const auto& ns : target.namespaces) {
            if (ns.uuid == added.uuid || ns.nguid == added.nguid ||
                (added.eui64 && ns.eui64 == added.eui64)) {
                detail::refuse(error_code::invalid_params, "namespace " + std::to_string(ns.nsid) +
                                                               " of subsystem " + nqn +
                                                               " has the same uuid, nguid or eui64");
            }
        }
        if (!added.device->claim(nqn)) {
            detail::refuse(error_code::invalid_params, "bdev '" + added.device->name() + "' is claimed by " +
                                                           added.device->claim_owner());
        }
        const auto at = std::find_if(target.namespaces.begin(), target.namespaces.end(),
                                     [&](const nvmf_namespace& ns) { return ns.nsid > added.nsid; });
        target.namespaces.insert(at, added);
        return added;
    }

    /// Removes namespace `nsid`, releasing its bdev; answers what it was.
    nvmf_namespace remove_namespace(const std::string& nqn, std::uint32_t nsid)
    {
        const std::lock_guard lock{mutex_};
        auto& target = *subsystem_locked(nqn);
        const auto it = std::find_if(target.namespaces.begin(), target.namespaces.end(),
                                     [&](const nvmf_namespace& ns) { return ns.nsid == nsid; });
        if (it == target.namespaces.end()) {
            detail::refuse(error_code::invalid_params,
                           "subsystem " + nqn + " has no namespace " + std::to_string(nsid));
        }
        nvmf_namespace removed = std::move(*it);
        target.namespaces.erase(it);
        removed.device->release();
        return removed;
    }

    // Hosts

    /// Allows host `host`; a host allowed already stays so (as SPDK answers).
    void add_host(const std::string& nqn, const std::string& host)
    {
        detail::check_nqn(host);
        const std::lock_guard lock{mutex_};
        auto& target = *subsystem_locked(nqn);
        if (std::find(target.hosts.begin(), target.hosts.end(), host) == target.hosts.end()) {
            target.hosts.push_back(host);
        }
    }

    void remove_host(const std::string& nqn, const std::string& host)
    {
        const std::lock_guard lock{mutex_};
        auto& target = *subsystem_locked(nqn);
        const auto it = std::find(target.hosts.begin(), target.hosts.end(), host);
        if (it == target.hosts.end()) {
            detail::refuse(error_code::invalid_params,
                           "host " + host + " is not allowed on subsystem " + nqn);
        }
        target.hosts.erase(it);
    }

    void allow_any_host(const std::string& nqn, bool allow)
    {
        const std::lock_guard lock{mutex_};
        subsystem_locked(nqn)->allow_any_host = allow;
    }

    // Listeners

    /// Adds a listener; its transport must exist. A VFIOUSER address serves one subsystem only
    /// (it is one socket).
    void add_listener(const std::string& nqn, nvmf_listen_address address)
    {
        const std::lock_guard lock{mutex_};
        auto& target = *subsystem_locked(nqn);
        transport_locked(address.trtype);
        if (std::find(target.listeners.begin(), target.listeners.end(), address) != target.listeners.end()) {
            detail::refuse(error_code::invalid_params,
                           "subsystem " + nqn + " listens on " + describe(address) + " already");
        }
        if (address.trtype == "VFIOUSER") {
            for (const auto& other : subsystems_) {
                for (const auto& listener : other.listeners) {
                    if (listener.trtype == "VFIOUSER" && listener.traddr == address.traddr) {
                        detail::refuse(error_code::invalid_params,
                                       describe(address) + " is in use by subsystem " + other.nqn);
                    }
                }
            }
        }
        target.listeners.push_back(std::move(address));
    }

    void remove_listener(const std::string& nqn, const nvmf_listen_address& address)
    {
        const std::lock_guard lock{mutex_};
        auto& target = *subsystem_locked(nqn);
        transport_locked(address.trtype);
        const auto it = std::find(target.listeners.begin(), target.listeners.end(), address);
        if (it == target.listeners.end()) {
            detail::refuse(error_code::invalid_params,
                           "subsystem " + nqn + " does not listen on " + describe(address));
        }
        target.listeners.erase(it);
    }

    // Referrals

    /// Adds a referral (subnqn: the discovery NQN when empty); false, and no change, when one of
    /// the same address and NQN is there already (SPDK ignores it too). Listed in the order added.
    bool add_referral(nvmf_referral referral)
    {
        if (referral.subnqn.empty()) {
            referral.subnqn = std::string{discovery_nqn};
        }
        detail::check_nqn(referral.subnqn);
        const std::lock_guard lock{mutex_};
        if (std::any_of(referrals_.begin(), referrals_.end(),
                        [&](const nvmf_referral& r) { return r.same(referral); })) {
            return false;
        }
        referrals_.push_back(std::move(referral));
        return true;
    }

    /// Removes the referral of that address and NQN (subnqn: the discovery NQN when empty);
    /// answers what it was. Refused with Internal Error, as SPDK, when there is none.
    nvmf_referral remove_referral(nvmf_referral referral)
    {
        if (referral.subnqn.empty()) {
            referral.subnqn = std::string{discovery_nqn};
        }
        const std::lock_guard lock{mutex_};
        const auto it = std::find_if(referrals_.begin(), referrals_.end(),
                                     [&](const nvmf_referral& r) { return r.same(referral); });
        if (it == referrals_.end()) {
            detail::refuse(error_code::internal_error, "Unable to remove a referral: no referral to " +
                                                           describe(referral.address) + " " +
                                                           referral.subnqn);
        }
        nvmf_referral removed = std::move(*it);
        referrals_.erase(it);
        return removed;
    }

    /// Copies of the referrals in the order they were added.
    [[nodiscard]] std::vector<nvmf_referral> referrals() const
    {
        const std::lock_guard lock{mutex_};
        return referrals_;
    }

    /// "VFIOUSER /run/vm0" or "TCP IPv4 10.0.0.1:4420", for messages.
    [[nodiscard]] static std::string describe(const nvmf_listen_address& address)
    {
        if (address.trtype == "VFIOUSER") {
            return address.trtype + " " + address.traddr;
        }
        return address.trtype + " " + address.adrfam + " " + address.traddr + ":" + address.trsvcid;
    }

private:
    using subsystem_list = std::vector<nvmf_subsystem>;

    [[nodiscard]] const nvmf_transport_options* find_transport_locked(std::string_view trtype) const
    {
        const auto it = std::find_if(transports_.begin(), transports_.end(),
                                     [&](const auto& t) { return t.trtype == trtype; });
        return it == transports_.end() ? nullptr : &*it;
    }
    const nvmf_transport_options& transport_locked(const std::string& trtype) const
    {
        const auto* found = find_transport_locked(trtype);
        if (found == nullptr) {
            detail::refuse(error_code::invalid_params,
                           "Unable to find " + trtype + " transport: create it with nvmf_create_transport");
        }
        return *found;
    }

    [[nodiscard]] subsystem_list::const_iterator find_subsystem_locked(std::string_view nqn) const
    {
        return std::find_if(subsystems_.begin(), subsystems_.end(),
                            [&](const auto& s) { return s.nqn == nqn; });
    }
    subsystem_list::iterator subsystem_locked(const std::string& nqn)
    {
        const auto it =
            std::find_if(subsystems_.begin(), subsystems_.end(), [&](const auto& s) { return s.nqn == nqn; });
        if (it == subsystems_.end()) {
            detail::refuse(error_code::invalid_params, "Unable to find subsystem with NQN " + nqn);
        }
        return it;
    }

    mutable std::mutex mutex_;
    std::vector<nvmf_transport_options> transports_;
    subsystem_list subsystems_;
    std::vector<nvmf_referral> referrals_;
};

} // namespace rpc
NVMEKIT_END_NAMESPACE
