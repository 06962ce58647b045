#pragma once
/// SPDK's NVMe-oF target methods on an nvmf_registry, with SPDK's method and parameter names and
/// result shapes (SPDK's doc/jsonrpc.md, "NVMe-oF Target"), so that `scripts/rpc.py` manages
/// nvmekit's target unchanged:
///
/// - `nvmf_create_transport`: trtype ("TCP" or "VFIOUSER", any case) and SPDK's transport
///   options. Honoured: max_queue_depth, max_io_qpairs_per_ctrlr (or the older
///   max_qpairs_per_ctrlr, one more), max_io_size (a power of two, 8 KiB to 4 MiB: MDTS),
///   in_capsule_data_size (TCP: a multiple of 16 up to 128 KiB; VFIOUSER: 0), and the sizes of
///   SPDK's buffer pools (io_unit_size, num_shared_buffers, buf_cache_size, control_msg_num),
///   which nvmekit has no pool for and records as given; iobuf_small_cache_size and
///   iobuf_large_cache_size, SPDK's newer names for the per-poll-group share of those pools,
///   taken and left unused for the same reason; disable_mappable_bar0 (nvmekit's BAR0 is never
///   mappable). Accepted when they ask for the default: max_aq_depth, abort_timeout_sec,
///   dif_insert_or_strip, zcopy, disable_command_passthru, acceptor_poll_rate (10000),
///   masked_oncs and masked_fuses (nothing masked: an empty array), c2h_success and
///   sock_priority (TCP), disable_adaptive_irq and disable_shadow_doorbells (VFIOUSER); kas and
///   min_kato only when absent (the controllers' Keep Alive is their own configuration's).
///   Options of another transport type (RDMA's, TCP's for VFIOUSER and the reverse) are
///   ignored, as SPDK ignores them. Answers true.
/// - `nvmf_get_transports`: trtype. Answers [{trtype, options...}].
/// - `nvmf_create_subsystem`: nqn; serial_number, model_number, max_namespaces (0: 32),
///   allow_any_host, min_cntlid, max_cntlid; ana_reporting, passthrough, enable_nssr,
///   max_discard_size_kib, max_write_zeroes_size_kib, dmrsl and wzsl when they ask for nothing,
///   admin_label only when absent (nvmekit's discovery log has no extended entries to carry it).
///   Answers true.
/// - `nvmf_delete_subsystem`: nqn. Releases the namespaces' bdevs. Answers true.
/// - `nvmf_get_subsystems`: the discovery subsystem, then each subsystem in SPDK's shape; with
///   nqn, only that one (the discovery NQN: the discovery subsystem).
/// - `nvmf_subsystem_add_ns`: nqn, namespace {bdev_name; nsid (0 or absent: the lowest free),
///   uuid (default: the bdev's), nguid (32 hex digits, default: the UUID's bytes), eui64 (16
///   hex digits); anagrpid, ptpl_file, no_auto_visible, hide_metadata when they ask for
///   nothing}. Claims the bdev, so bdev_*_delete answers -16 until the namespace is removed.
///   Answers the NSID.
/// - `nvmf_subsystem_remove_ns`: nqn, nsid. Answers true.
/// - `nvmf_subsystem_add_host` (nqn, host; psk, dhchap_key, dhchap_ctrlr_key when absent),
///   `nvmf_subsystem_remove_host` (nqn, host; timeout_ms, the longest SPDK waits for the host's
///   I/O before it disconnects: accepted, nothing is waited for, the hook runs before the answer),
///   `nvmf_subsystem_allow_any_host` (nqn, allow_any_host). Answer true.
/// - `nvmf_subsystem_get_controllers`, `nvmf_subsystem_get_qpairs` (nqn) and `nvmf_get_stats`:
///   what the embedder's hooks report of the controllers it serves.
/// - `nvmf_subsystem_add_listener` / `nvmf_subsystem_remove_listener`: nqn, listen_address
///   {trtype, adrfam, traddr, trsvcid}; secure_channel, ana_state, sock_impl and numa_id (-1,
///   any NUMA node) when they ask for nothing. TCP takes adrfam IPv4 (the default) or IPv6 and
///   a port in trsvcid; for VFIOUSER traddr is an existing directory in which the socket `cntrl`
///   is created. Answer true.
/// - `nvmf_discovery_add_referral`: address {trtype TCP, adrfam, traddr, trsvcid} of another
///   discovery service (or an NVM subsystem elsewhere), subnqn (default: the discovery NQN),
///   secure_channel (default false: TREQ secure channel not specified). The discovery
///   controllers list it (SUBTYPE 1, referral, for the discovery NQN; 2, NVM subsystem, for
///   another NQN), with a new GENCTR and a Discovery Log Page Change event. One of the same
///   address and subnqn listed already is left as it is. Answers true.
/// - `nvmf_discovery_remove_referral`: address, subnqn (default: the discovery NQN). Internal
///   Error (-32603) when no such referral is listed, as SPDK. Answers true.
/// - `nvmf_discovery_get_referrals`: [{address, secure_channel, subnqn}] in the order added.
///
/// Every method also takes tgt_name when it names the one target, "nvmf_tgt" as SPDK calls its
/// default. They are callable at run time only, like SPDK's.
///
/// Errors: a parameter missing, unknown, of the wrong type or asking for what nvmekit cannot do
/// is Invalid Params (-32602) naming it; an unknown NQN is -32602 "Unable to find subsystem with
/// NQN ..."; a taken NQN -32603 "Unable to create subsystem ..." (SPDK's codes, with the reason
/// added). A refused call changes nothing.
///
///     nvmekit::rpc::registry methods;
///     nvmekit::rpc::bdev_registry bdevs;
///     nvmekit::rpc::nvmf_registry target;
///     nvmekit::rpc::add_bdev_methods(methods, bdevs);
///     nvmekit::rpc::add_nvmf_methods(methods, bdevs, target);

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <nvmekit/config.hpp>
#include <nvmekit/rpc/bdev_registry.hpp>
#include <nvmekit/rpc/jsonrpc.hpp>
#include <nvmekit/rpc/nvmf_registry.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace rpc {

/// What the embedder does when the target changes, e.g. start a vfio-user server for a listener,
/// and what it reports of the controllers it serves. A hook that throws fails the call with
/// Internal Error (-32603) and its message; for the additions the registry is then put back as
/// it was.
struct nvmf_method_hooks {
    std::function<void(const nvmf_subsystem&, const nvmf_listen_address&)> listener_added{};
    std::function<void(const nvmf_subsystem&, const nvmf_listen_address&)> listener_removed{};
    std::function<void(const nvmf_subsystem&, const nvmf_namespace&)> namespace_added{};
    std::function<void(const nvmf_subsystem&, const nvmf_namespace&)> namespace_removed{};
    std::function<void(const nvmf_subsystem&)> subsystem_removed{};
    /// The hosts a subsystem allows changed (add_host, remove_host, allow_any_host): the
    /// subsystem as it is now.
    std::function<void(const nvmf_subsystem&)> hosts_changed{};
    /// The discovery service's referrals changed (add_referral, remove_referral): all of them now.
    std::function<void(const std::vector<nvmf_referral>&)> referrals_changed{};
    /// nvmf_subsystem_get_controllers' answer for a subsystem (none: an empty array).
    std::function<nlohmann::json(const nvmf_subsystem&)> controllers{};
    /// nvmf_subsystem_get_qpairs' answer for a subsystem (none: an empty array).
    std::function<nlohmann::json(const nvmf_subsystem&)> qpairs{};
    /// nvmf_get_stats' answer (none: {"tick_rate": 1000000000, "poll_groups": []}).
    std::function<nlohmann::json()> stats{};
};

/// The name of nvmekit's one NVMe-oF target, as SPDK names its default target.
inline constexpr std::string_view nvmf_target_name = "nvmf_tgt";

// ---------------------------------------------------------------------------------------------
// JSON in SPDK's shapes

/// Upper-case hexadecimal digits of `bytes`, as SPDK prints NGUIDs and EUI-64s.
template <std::size_t N>
[[nodiscard]] std::string hex_string(const std::array<std::uint8_t, N>& bytes)
{
    static constexpr char digits[] = "0123456789ABCDEF";
    std::string text;
    text.reserve(2 * N);
    for (const std::uint8_t byte : bytes) {
        text += digits[byte >> 4];
        text += digits[byte & 0xf];
    }
    return text;
}

/// Parses 2 * N hexadecimal digits (either case; '-' between them is ignored).
template <std::size_t N>
[[nodiscard]] std::optional<std::array<std::uint8_t, N>> parse_hex(std::string_view text)
{
    std::array<std::uint8_t, N> out{};
    std::size_t digits = 0;
    for (const char c : text) {
        if (c == '-') {
            continue;
        }
        if (std::isxdigit(static_cast<unsigned char>(c)) == 0 || digits == 2 * N) {
            return std::nullopt;
        }
        const int value = c <= '9' ? c - '0' : (std::tolower(static_cast<unsigned char>(c)) - 'a' + 10);
        out[digits / 2] = static_cast<std::uint8_t>((out[digits / 2] << 4) | value);
        ++digits;
    }
    return digits == 2 * N ? std::optional{out} : std::nullopt;
}

/// A transport as nvmf_get_transports lists it and nvmf_create_transport takes it.
[[nodiscard]] inline nlohmann::json transport_json(const nvmf_transport_options& t)
{
    nlohmann::json out = {{"trtype", t.trtype},
                          {"max_queue_depth", t.max_queue_depth},
                          {"max_io_qpairs_per_ctrlr", t.max_io_qpairs_per_ctrlr},
                          {"in_capsule_data_size", t.in_capsule_data_size},
                          {"max_io_size", t.max_io_size},
                          {"io_unit_size", t.io_unit_size},
                          {"max_aq_depth", t.max_aq_depth},
                          {"num_shared_buffers", t.num_shared_buffers},
                          {"buf_cache_size", t.buf_cache_size},
                          {"abort_timeout_sec", t.abort_timeout_sec},
                          {"dif_insert_or_strip", t.dif_insert_or_strip},
                          {"zcopy", t.zcopy}};
    if (t.trtype == "TCP") {
        out["c2h_success"] = t.c2h_success;
        out["sock_priority"] = t.sock_priority;
        out["control_msg_num"] = t.control_msg_num;
    } else {
        out["disable_mappable_bar0"] = t.disable_mappable_bar0;
        out["disable_adaptive_irq"] = t.disable_adaptive_irq;
        out["disable_shadow_doorbells"] = t.disable_shadow_doorbells;
    }
    return out;
}

/// A listen_address object.
[[nodiscard]] inline nlohmann::json listen_address_json(const nvmf_listen_address& a)
{
    nlohmann::json out = {{"trtype", a.trtype}, {"traddr", a.traddr}, {"trsvcid", a.trsvcid}};
    if (!a.adrfam.empty()) {
        out["adrfam"] = a.adrfam;
    }
    return out;
}

/// A namespace object as nvmf_subsystem_add_ns takes it (the bdev's name twice over for
/// nvmf_get_subsystems, which lists it as "name" too).
[[nodiscard]] inline nlohmann::json namespace_json(const nvmf_namespace& ns)
{
    nlohmann::json out = {{"nsid", ns.nsid}, {"bdev_name", ns.device->name()}};
    if (ns.uuid) {
        out["uuid"] = uuid_string(*ns.uuid);
    }
    if (ns.nguid) {
        out["nguid"] = hex_string(*ns.nguid);
    }
    if (ns.eui64) {
        out["eui64"] = hex_string(*ns.eui64);
    }
    return out;
}

/// A referral as nvmf_discovery_get_referrals lists it and nvmf_discovery_add_referral takes it.
[[nodiscard]] inline nlohmann::json referral_json(const nvmf_referral& r)
{
    return {{"address", listen_address_json(r.address)},
            {"secure_channel", r.secure_channel},
            {"subnqn", r.subnqn}};
}

/// The discovery subsystem's entry of nvmf_get_subsystems.
[[nodiscard]] inline nlohmann::json discovery_subsystem_json()
{
    return {{"nqn", discovery_nqn},
            {"subtype", "Discovery"},
            {"listen_addresses", nlohmann::json::array()},
            {"allow_any_host", true},
            {"hosts", nlohmann::json::array()}};
}

/// A subsystem's entry of nvmf_get_subsystems.
[[nodiscard]] inline nlohmann::json subsystem_json(const nvmf_subsystem& s)
{
    nlohmann::json listeners = nlohmann::json::array();
    for (const auto& l : s.listeners) {
        listeners.push_back(listen_address_json(l));
    }
    nlohmann::json hosts = nlohmann::json::array();
    for (const auto& h : s.hosts) {
        hosts.push_back({{"nqn", h}});
    }
    nlohmann::json namespaces = nlohmann::json::array();
    for (const auto& ns : s.namespaces) {
        nlohmann::json entry = namespace_json(ns);
        entry["name"] = ns.device->name();
        namespaces.push_back(std::move(entry));
    }
    return {{"nqn", s.nqn},
            {"subtype", "NVMe"},
            {"listen_addresses", std::move(listeners)},
            {"allow_any_host", s.allow_any_host},
            {"hosts", std::move(hosts)},
            {"serial_number", s.serial_number},
            {"model_number", s.model_number},
            {"max_namespaces", s.max_namespaces},
            {"min_cntlid", s.min_cntlid},
            {"max_cntlid", s.max_cntlid},
            {"namespaces", std::move(namespaces)}};
}

/// The "nvmf" subsystem's configuration, as SPDK's save_config writes it: the calls that build
/// the target again (transports, then the discovery referrals, then each subsystem with its
/// hosts, namespaces and listeners).
[[nodiscard]] inline nlohmann::json nvmf_config(const nvmf_registry& target)
{
    nlohmann::json config = nlohmann::json::array();
    const auto call = [&](const char* method, nlohmann::json params) {
        config.push_back({{"method", method}, {"params", std::move(params)}});
    };
    for (const auto& t : target.transports()) {
        call("nvmf_create_transport", transport_json(t));
    }
    for (const auto& r : target.referrals()) {
        call("nvmf_discovery_add_referral", referral_json(r));
    }
    for (const auto& s : target.subsystems()) {
        call("nvmf_create_subsystem", {{"nqn", s.nqn},
                                       {"serial_number", s.serial_number},
                                       {"model_number", s.model_number},
                                       {"max_namespaces", s.max_namespaces},
                                       {"allow_any_host", s.allow_any_host},
                                       {"min_cntlid", s.min_cntlid},
                                       {"max_cntlid", s.max_cntlid}});
        for (const auto& h : s.hosts) {
            call("nvmf_subsystem_add_host", {{"nqn", s.nqn}, {"host", h}});
        }
        for (const auto& ns : s.namespaces) {
            call("nvmf_subsystem_add_ns", {{"nqn", s.nqn}, {"namespace", namespace_json(ns)}});
        }
        for (const auto& l : s.listeners) {
            call("nvmf_subsystem_add_listener", {{"nqn", s.nqn}, {"listen_address", listen_address_json(l)}});
        }
    }
    return config;
}

// ---------------------------------------------------------------------------------------------
// Parameters

namespace detail {

[[noreturn]] inline void invalid_param(const std::string& message)
{
    throw exception{error_code::invalid_params, message};
}

/// tgt_name, when present, must name nvmekit's one target.
inline void read_target_name(params& in)
{
    const auto name = in.get(maybe<std::string>("tgt_name"));
    if (name && *name != nvmf_target_name) {
        invalid_param("Unable to find target " + *name + " (the target is " + std::string{nvmf_target_name} +
                      ")");
    }
}

/// `name` of `in` must be an object: its own params view.
inline nlohmann::json object_parameter(params& in, std::string_view name)
{
    nlohmann::json value = in.get(required<nlohmann::json>(name));
    if (!value.is_object()) {
        invalid_param("parameter '" + std::string{name} + "' must be an object, not " + value.type_name());
    }
    return value;
}

inline std::string upper(std::string text)
{
    for (char& c : text) {
        c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
    return text;
}

/// A transport type nvmekit serves, in SPDK's spelling.
inline std::string transport_type(const std::string& given)
{
    std::string trtype = upper(given);
    if (!is_nvmf_transport_type(trtype)) {
        invalid_param("Transport type '" + given + "' is not supported (nvmekit serves TCP and VFIOUSER)");
    }
    return trtype;
}

/// A parameter nvmekit takes only when it is absent: refused naming it and `why` when present.
inline void refuse_present(params& in, std::string_view name, const std::string& why)
{
    if (in.get(maybe<nlohmann::json>(name))) {
        invalid_param("parameter '" + std::string{name} + "' is not supported: " + why);
    }
}

/// A parameter nvmekit takes only at its default for this transport type.
template <typename T>
void require_default(std::string_view name, const T& value, const T& fallback, const std::string& trtype)
{
    if (value != fallback) {
        invalid_param("parameter '" + std::string{name} + "' is not supported with a value other than " +
                      nlohmann::json(fallback).dump() + " for " + trtype);
    }
}

template <typename T>
void require_range(std::string_view name, T value, T low, T high)
{
    if (value < low || value > high) {
        invalid_param("parameter '" + std::string{name} + "' must be from " + std::to_string(low) + " to " +
                      std::to_string(high) + ", not " + std::to_string(value));
    }
}

inline nvmf_transport_options read_transport(params& in)
{
    nvmf_transport_options t = default_transport(transport_type(in.get(required<std::string>("trtype"))));
    const nvmf_transport_options fallback = t;
    read_target_name(in);
    const bool tcp = t.trtype == "TCP";

    t.max_queue_depth = in.get(optional<std::uint32_t>("max_queue_depth", t.max_queue_depth));
    require_range<std::uint32_t>("max_queue_depth", t.max_queue_depth, 2, 65536);
    t.max_io_qpairs_per_ctrlr =
        in.get(optional<std::uint32_t>("max_io_qpairs_per_ctrlr", t.max_io_qpairs_per_ctrlr));
    require_range<std::uint32_t>("max_io_qpairs_per_ctrlr", t.max_io_qpairs_per_ctrlr, 1, 65535);
    if (const auto all = in.get(maybe<std::uint32_t>("max_qpairs_per_ctrlr"))) {
        require_range<std::uint32_t>("max_qpairs_per_ctrlr", *all, 2, 65536);
        t.max_io_qpairs_per_ctrlr = *all - 1;
    }
    t.max_io_size = in.get(optional<std::uint32_t>("max_io_size", t.max_io_size));
    if (t.max_io_size < 8192 || t.max_io_size > (4U << 20) || (t.max_io_size & (t.max_io_size - 1)) != 0) {
        invalid_param("parameter 'max_io_size' must be a power of two from 8192 to 4194304, not " +
                      std::to_string(t.max_io_size));
    }
    t.in_capsule_data_size = in.get(optional<std::uint32_t>("in_capsule_data_size", t.in_capsule_data_size));
    if (tcp && (t.in_capsule_data_size % 16 != 0 || t.in_capsule_data_size > 131072)) {
        invalid_param("parameter 'in_capsule_data_size' must be a multiple of 16 up to 131072, not " +
                      std::to_string(t.in_capsule_data_size));
    }
    if (!tcp) {
        require_default("in_capsule_data_size", t.in_capsule_data_size, fallback.in_capsule_data_size,
                        t.trtype);
    }
    t.io_unit_size = in.get(optional<std::uint32_t>("io_unit_size", t.io_unit_size));
    require_range<std::uint32_t>("io_unit_size", t.io_unit_size, 1, 0xffffffff);
    t.num_shared_buffers = in.get(optional<std::uint32_t>("num_shared_buffers", t.num_shared_buffers));
    t.buf_cache_size = in.get(optional<std::uint32_t>("buf_cache_size", t.buf_cache_size));
    t.max_aq_depth = in.get(optional<std::uint32_t>("max_aq_depth", t.max_aq_depth));
    require_default("max_aq_depth", t.max_aq_depth, fallback.max_aq_depth, t.trtype);
    t.abort_timeout_sec = in.get(optional<std::uint32_t>("abort_timeout_sec", t.abort_timeout_sec));
    require_default("abort_timeout_sec", t.abort_timeout_sec, fallback.abort_timeout_sec, t.trtype);
    t.dif_insert_or_strip = in.get(accepted_when_default<bool>("dif_insert_or_strip", false));
    t.zcopy = in.get(accepted_when_default<bool>("zcopy", false));
    static_cast<void>(in.get(accepted_when_default<bool>("disable_command_passthru", false)));
    // No acceptor poller: listeners are polled with the queues.
    static_cast<void>(in.get(accepted_when_default<std::uint32_t>("acceptor_poll_rate", 10000)));
    // No buffer pools (see num_shared_buffers): nothing to reserve per poll group.
    static_cast<void>(in.get(maybe<std::uint32_t>("iobuf_small_cache_size")));
    static_cast<void>(in.get(maybe<std::uint32_t>("iobuf_large_cache_size")));
    static_cast<void>(in.get(accepted_when_default<std::vector<std::string>>("masked_oncs", {})));
    static_cast<void>(in.get(accepted_when_default<std::vector<std::string>>("masked_fuses", {})));
    for (const char* keep_alive : {"kas", "min_kato"}) {
        refuse_present(in, keep_alive, "the controllers keep the Keep Alive settings of their configuration");
    }

    // Options of one transport type; SPDK ignores them for the others.
    const auto c2h_success = in.get(optional<bool>("c2h_success", fallback.c2h_success));
    const auto sock_priority = in.get(optional<std::uint32_t>("sock_priority", fallback.sock_priority));
    const auto control_msg_num = in.get(optional<std::uint32_t>("control_msg_num", fallback.control_msg_num));
    const auto mappable = in.get(optional<bool>("disable_mappable_bar0", false));
    const auto adaptive = in.get(optional<bool>("disable_adaptive_irq", false));
    const auto shadow = in.get(optional<bool>("disable_shadow_doorbells", false));
    if (tcp) {
        require_default("c2h_success", c2h_success, fallback.c2h_success, t.trtype);
        require_default("sock_priority", sock_priority, fallback.sock_priority, t.trtype);
        t.control_msg_num = control_msg_num;
    } else {
        t.disable_mappable_bar0 = mappable;
        require_default("disable_adaptive_irq", adaptive, false, t.trtype);
        require_default("disable_shadow_doorbells", shadow, false, t.trtype);
    }
    for (const char* rdma_only : {"num_cqe", "max_srq_depth", "no_srq", "acceptor_backlog", "no_wr_batching",
                                  "ack_timeout", "data_wr_pool_size", "rdma_umr_per_io"}) {
        static_cast<void>(in.get(maybe<nlohmann::json>(rdma_only)));
    }
    in.finish();
    return t;
}

inline nvmf_listen_address read_listen_address(params& in, const std::string& name = "listen_address")
{
    const nlohmann::json object = object_parameter(in, name);
    params address{object};
    auto [trtype_given, adrfam, traddr, trsvcid] =
        address.read(required<std::string>("trtype"), maybe<std::string>("adrfam"),
                     required<std::string>("traddr"), maybe<std::string>("trsvcid"));
    nvmf_listen_address out{transport_type(trtype_given), "", traddr, trsvcid.value_or("")};
    if (out.trtype == "TCP") {
        const std::string family = upper(adrfam.value_or("IPv4"));
        if (family != "IPV4" && family != "IPV6") {
            invalid_param(name + " 'adrfam' must be IPv4 or IPv6 for TCP, not '" + *adrfam + "'");
        }
        out.adrfam = family == "IPV4" ? "IPv4" : "IPv6";
        const bool port = !out.trsvcid.empty() && out.trsvcid.size() <= 5 &&
                          std::all_of(out.trsvcid.begin(), out.trsvcid.end(),
                                      [](char c) { return c >= '0' && c <= '9'; }) &&
                          std::stoul(out.trsvcid) <= 65535;
        if (!port) {
            invalid_param(name + " 'trsvcid' must be a TCP port (0 to 65535), not '" + out.trsvcid + "'");
        }
        if (out.traddr.empty()) {
            invalid_param(name + " 'traddr' must be an address");
        }
    } else {
        out.adrfam = adrfam.value_or("");
        if (out.traddr.empty()) {
            invalid_param(name + " 'traddr' must be the directory for the socket 'cntrl'");
        }
    }
    return out;
}

inline nvmf_namespace read_namespace(params& in, const bdev_registry& bdevs)
{
    const nlohmann::json object = object_parameter(in, "namespace");
    params ns{object};
    [[maybe_unused]] auto [bdev_name, nsid, uuid, nguid, eui64, anagrpid, ptpl_file, no_auto_visible,
                           hide_metadata] =
        ns.read(required<std::string>("bdev_name"), optional<std::uint32_t>("nsid", 0),
                maybe<std::string>("uuid"), maybe<std::string>("nguid"), maybe<std::string>("eui64"),
                accepted_when_default<std::uint32_t>("anagrpid", 0),
                accepted_when_default<std::string>("ptpl_file", ""),
                accepted_when_default<bool>("no_auto_visible", false),
                accepted_when_default<bool>("hide_metadata", false));
    nvmf_namespace out;
    if (nsid == 0xffffffff) {
        invalid_param("namespace 'nsid' must be from 1 to 4294967294 (0: the lowest free)");
    }
    out.nsid = nsid;
    if (uuid) {
        out.uuid = parse_uuid(*uuid);
        if (!out.uuid) {
            invalid_param("namespace 'uuid' must be a UUID (xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx), not \"" +
                          *uuid + "\"");
        }
    }
    if (nguid) {
        out.nguid = parse_hex<16>(*nguid);
        if (!out.nguid) {
            invalid_param("namespace 'nguid' must be 32 hexadecimal digits, not \"" + *nguid + "\"");
        }
    }
    if (eui64) {
        out.eui64 = parse_hex<8>(*eui64);
        if (!out.eui64) {
            invalid_param("namespace 'eui64' must be 16 hexadecimal digits, not \"" + *eui64 + "\"");
        }
    }
    out.device = bdevs.find(bdev_name);
    if (!out.device) {
        invalid_param("Unable to find bdev '" + bdev_name + "'");
    }
    return out;
}

/// Runs `hook`; when it throws, `undo` and answers Internal Error with its message.
template <typename Hook, typename Undo>
void run_hook(const Hook& hook, Undo&& undo)
{
    try {
        hook();
    } catch (const std::exception& e) {
        undo();
        throw exception{error_code::internal_error, e.what()};
    }
}

} // namespace detail

/// Adds SPDK's nvmf methods (see the list above) on `target` and `bdevs` to `methods`; all three
/// must outlive the methods' use.
inline void add_nvmf_methods(registry& methods, bdev_registry& bdevs, nvmf_registry& target,
                             nvmf_method_hooks hooks = {})
{
    const method_options runtime_only{.allowed_states = states::runtime};
    auto shared_hooks = std::make_shared<nvmf_method_hooks>(std::move(hooks));
    // The hosts_changed hook after a change of subsystem `nqn`'s hosts; `undo` puts it back if it fails.
    const auto hosts_changed = [&target, shared_hooks](const std::string& nqn,
                                                       const std::function<void()>& undo) {
        if (shared_hooks->hosts_changed) {
            detail::run_hook([&] { shared_hooks->hosts_changed(*target.subsystem(nqn)); }, undo);
        }
    };

    methods.add(
        "nvmf_create_transport",
        [&target](const nlohmann::json& p) -> outcome {
            params in{p};
            target.add_transport(detail::read_transport(in));
            return true;
        },
        runtime_only);

    methods.add(
        "nvmf_get_transports",
        [&target](const nlohmann::json& p) -> outcome {
            params in{p};
            detail::read_target_name(in);
            const auto trtype = in.get(maybe<std::string>("trtype"));
            in.finish();
            nlohmann::json out = nlohmann::json::array();
            if (trtype) {
                const auto found = target.transport(detail::upper(*trtype));
                if (!found) {
                    detail::invalid_param("Transport type '" + *trtype + "' does not exist");
                }
                out.push_back(transport_json(*found));
                return out;
            }
            for (const auto& t : target.transports()) {
                out.push_back(transport_json(t));
            }
            return out;
        },
        runtime_only);

    methods.add(
        "nvmf_create_subsystem",
        [&target](const nlohmann::json& p) -> outcome {
            params in{p};
            nvmf_subsystem created;
            created.nqn = in.get(required<std::string>("nqn"));
            detail::read_target_name(in);
            created.serial_number = in.get(optional<std::string>("serial_number", created.serial_number));
            created.model_number = in.get(optional<std::string>("model_number", created.model_number));
            created.max_namespaces = in.get(optional<std::uint32_t>("max_namespaces", 0));
            detail::require_range<std::uint32_t>("max_namespaces", created.max_namespaces, 0, 1024);
            created.allow_any_host = in.get(optional<bool>("allow_any_host", false));
            created.min_cntlid = in.get(optional<std::uint16_t>("min_cntlid", created.min_cntlid));
            created.max_cntlid = in.get(optional<std::uint16_t>("max_cntlid", created.max_cntlid));
            detail::refuse_present(in, "admin_label",
                                   "the discovery log has no extended entries to carry it");
            static_cast<void>(in.read(accepted_when_default<bool>("ana_reporting", false),
                                      accepted_when_default<bool>("passthrough", false),
                                      accepted_when_default<bool>("enable_nssr", false),
                                      accepted_when_default<std::uint64_t>("max_discard_size_kib", 0),
                                      accepted_when_default<std::uint64_t>("max_write_zeroes_size_kib", 0),
                                      accepted_when_default<std::uint32_t>("dmrsl", 0),
                                      accepted_when_default<std::uint8_t>("wzsl", 0)));
            target.add_subsystem(std::move(created));
            return true;
        },
        runtime_only);

    methods.add(
        "nvmf_delete_subsystem",
        [&target, shared_hooks](const nlohmann::json& p) -> outcome {
            params in{p};
            const auto nqn = in.get(required<std::string>("nqn"));
            detail::read_target_name(in);
            in.finish();
            const nvmf_subsystem removed = target.remove_subsystem(nqn);
            if (shared_hooks->subsystem_removed) {
                detail::run_hook([&] { shared_hooks->subsystem_removed(removed); },
                                 [&] { target.restore_subsystem(removed); });
            }
            return true;
        },
        runtime_only);

    methods.add(
        "nvmf_get_subsystems",
        [&target](const nlohmann::json& p) -> outcome {
            params in{p};
            detail::read_target_name(in);
            const auto nqn = in.get(maybe<std::string>("nqn"));
            in.finish();
            if (nqn && *nqn == discovery_nqn) {
                return nlohmann::json::array({discovery_subsystem_json()});
            }
            if (nqn) {
                const auto found = target.subsystem(*nqn);
                if (!found) {
                    detail::invalid_param("Unable to find subsystem with NQN " + *nqn);
                }
                return nlohmann::json::array({subsystem_json(*found)});
            }
            nlohmann::json out = nlohmann::json::array({discovery_subsystem_json()});
            for (const auto& s : target.subsystems()) {
                out.push_back(subsystem_json(s));
            }
            return out;
        },
        runtime_only);

    const auto report = [&methods, &target, shared_hooks, runtime_only](
                            const char* name,
                            std::function<nlohmann::json(const nvmf_subsystem&)> nvmf_method_hooks::*hook) {
        methods.add(
            name,
            [&target, shared_hooks, hook](const nlohmann::json& p) -> outcome {
                params in{p};
                const auto nqn = in.get(required<std::string>("nqn"));
                detail::read_target_name(in);
                in.finish();
                const auto found = target.subsystem(nqn);
                if (!found) {
                    detail::invalid_param("Unable to find subsystem with NQN " + nqn);
                }
                nlohmann::json out = nlohmann::json::array();
                if (const auto& answer = (*shared_hooks).*hook) {
                    detail::run_hook([&] { out = answer(*found); }, [] {});
                }
                return out;
            },
            runtime_only);
    };
    report("nvmf_subsystem_get_controllers", &nvmf_method_hooks::controllers);
    report("nvmf_subsystem_get_qpairs", &nvmf_method_hooks::qpairs);

    methods.add(
        "nvmf_get_stats",
        [shared_hooks](const nlohmann::json& p) -> outcome {
            params in{p};
            detail::read_target_name(in);
            in.finish();
            nlohmann::json out = {{"tick_rate", 1'000'000'000}, {"poll_groups", nlohmann::json::array()}};
            if (shared_hooks->stats) {
                detail::run_hook([&] { out = shared_hooks->stats(); }, [] {});
            }
            return out;
        },
        runtime_only);

    methods.add(
        "nvmf_subsystem_add_ns",
        [&target, &bdevs, shared_hooks](const nlohmann::json& p) -> outcome {
            params in{p};
            const auto nqn = in.get(required<std::string>("nqn"));
            nvmf_namespace ns = detail::read_namespace(in, bdevs);
            detail::read_target_name(in);
            in.finish();
            ns = target.add_namespace(nqn, std::move(ns));
            if (shared_hooks->namespace_added) {
                detail::run_hook([&] { shared_hooks->namespace_added(*target.subsystem(nqn), ns); },
                                 [&] { target.remove_namespace(nqn, ns.nsid); });
            }
            return ns.nsid;
        },
        runtime_only);

    methods.add(
        "nvmf_subsystem_remove_ns",
        [&target, shared_hooks](const nlohmann::json& p) -> outcome {
            params in{p};
            const auto nqn = in.get(required<std::string>("nqn"));
            const auto nsid = in.get(required<std::uint32_t>("nsid"));
            detail::read_target_name(in);
            in.finish();
            const nvmf_namespace removed = target.remove_namespace(nqn, nsid);
            if (shared_hooks->namespace_removed) {
                detail::run_hook([&] { shared_hooks->namespace_removed(*target.subsystem(nqn), removed); },
                                 [&] { static_cast<void>(target.add_namespace(nqn, removed)); });
            }
            return true;
        },
        runtime_only);

    methods.add(
        "nvmf_subsystem_add_host",
        [&target, hosts_changed](const nlohmann::json& p) -> outcome {
            params in{p};
            const auto nqn = in.get(required<std::string>("nqn"));
            const auto host = in.get(required<std::string>("host"));
            detail::read_target_name(in);
            static_cast<void>(in.read(accepted_when_default<std::string>("psk", ""),
                                      accepted_when_default<std::string>("dhchap_key", ""),
                                      accepted_when_default<std::string>("dhchap_ctrlr_key", "")));
            const auto before = target.subsystem(nqn);
            const bool had =
                before && std::find(before->hosts.begin(), before->hosts.end(), host) != before->hosts.end();
            target.add_host(nqn, host);
            hosts_changed(nqn, [&] {
                if (!had) {
                    target.remove_host(nqn, host);
                }
            });
            return true;
        },
        runtime_only);

    methods.add(
        "nvmf_subsystem_remove_host",
        [&target, hosts_changed](const nlohmann::json& p) -> outcome {
            params in{p};
            const auto nqn = in.get(required<std::string>("nqn"));
            const auto host = in.get(required<std::string>("host"));
            detail::read_target_name(in);
            // How long SPDK waits for the host's outstanding I/O before it disconnects the host:
            // nothing is waited for here (the hosts_changed hook acts before the call answers).
            static_cast<void>(in.get(maybe<std::uint32_t>("timeout_ms")));
            in.finish();
            target.remove_host(nqn, host);
            hosts_changed(nqn, [&] { target.add_host(nqn, host); });
            return true;
        },
        runtime_only);

    methods.add(
        "nvmf_subsystem_allow_any_host",
        [&target, hosts_changed](const nlohmann::json& p) -> outcome {
            params in{p};
            const auto nqn = in.get(required<std::string>("nqn"));
            const auto allow = in.get(required<bool>("allow_any_host"));
            detail::read_target_name(in);
            in.finish();
            const auto before = target.subsystem(nqn);
            target.allow_any_host(nqn, allow);
            hosts_changed(nqn, [&] { target.allow_any_host(nqn, before->allow_any_host); });
            return true;
        },
        runtime_only);

    methods.add(
        "nvmf_subsystem_add_listener",
        [&target, shared_hooks](const nlohmann::json& p) -> outcome {
            params in{p};
            const auto nqn = in.get(required<std::string>("nqn"));
            const nvmf_listen_address address = detail::read_listen_address(in);
            detail::read_target_name(in);
            static_cast<void>(in.read(accepted_when_default<bool>("secure_channel", false),
                                      accepted_when_default<std::string>("ana_state", "optimized"),
                                      accepted_when_default<std::string>("sock_impl", "posix"),
                                      accepted_when_default<std::int32_t>("numa_id", -1)));
            if (address.trtype == "VFIOUSER") {
                std::error_code failure;
                if (!std::filesystem::is_directory(address.traddr, failure)) {
                    detail::invalid_param("listen_address 'traddr' " + address.traddr +
                                          " is not a directory (the socket 'cntrl' is created in it)");
                }
            }
            target.add_listener(nqn, address);
            if (shared_hooks->listener_added) {
                detail::run_hook([&] { shared_hooks->listener_added(*target.subsystem(nqn), address); },
                                 [&] { target.remove_listener(nqn, address); });
            }
            return true;
        },
        runtime_only);

    methods.add(
        "nvmf_subsystem_remove_listener",
        [&target, shared_hooks](const nlohmann::json& p) -> outcome {
            params in{p};
            const auto nqn = in.get(required<std::string>("nqn"));
            const nvmf_listen_address address = detail::read_listen_address(in);
            detail::read_target_name(in);
            in.finish();
            target.remove_listener(nqn, address);
            if (shared_hooks->listener_removed) {
                detail::run_hook([&] { shared_hooks->listener_removed(*target.subsystem(nqn), address); },
                                 [] {});
            }
            return true;
        },
        runtime_only);

    // The referrals_changed hook after a change of the referrals; `undo` puts them back if it fails.
    const auto referrals_changed = [&target, shared_hooks](const std::function<void()>& undo) {
        if (shared_hooks->referrals_changed) {
            detail::run_hook([&] { shared_hooks->referrals_changed(target.referrals()); }, undo);
        }
    };
    // address and subnqn of a referral method's parameters.
    const auto read_referral = [](params& in) {
        nvmf_referral referral;
        referral.address = detail::read_listen_address(in, "address");
        if (referral.address.trtype != "TCP") {
            detail::invalid_param("address 'trtype' of a referral must be TCP, not " +
                                  referral.address.trtype);
        }
        referral.subnqn = in.get(optional<std::string>("subnqn", std::string{discovery_nqn}));
        detail::read_target_name(in);
        return referral;
    };

    methods.add(
        "nvmf_discovery_add_referral",
        [&target, read_referral, referrals_changed](const nlohmann::json& p) -> outcome {
            params in{p};
            nvmf_referral referral = read_referral(in);
            referral.secure_channel = in.get(optional<bool>("secure_channel", false));
            static_cast<void>(in.get(accepted_when_default<bool>("allow_any_host", true)));
            in.finish();
            if (target.add_referral(referral)) {
                referrals_changed([&] { static_cast<void>(target.remove_referral(referral)); });
            }
            return true;
        },
        runtime_only);

    methods.add(
        "nvmf_discovery_remove_referral",
        [&target, read_referral, referrals_changed](const nlohmann::json& p) -> outcome {
            params in{p};
            const nvmf_referral referral = read_referral(in);
            in.finish();
            const nvmf_referral removed = target.remove_referral(referral);
            referrals_changed([&] { static_cast<void>(target.add_referral(removed)); });
            return true;
        },
        runtime_only);

    methods.add(
        "nvmf_discovery_get_referrals",
        [&target](const nlohmann::json& p) -> outcome {
            params in{p};
            detail::read_target_name(in);
            in.finish();
            nlohmann::json out = nlohmann::json::array();
            for (const auto& r : target.referrals()) {
                out.push_back(referral_json(r));
            }
            return out;
        },
        runtime_only);
}

} // namespace rpc
NVMEKIT_END_NAMESPACE
