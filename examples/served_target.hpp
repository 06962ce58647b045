#pragma once
// nvmekit-serve's NVMe-oF target built through JSON-RPC, served: each VFIOUSER listener of a
// subsystem is an emulated NVMe PCI function on the socket `cntrl` in the listener's directory,
// with a controller of that subsystem; each TCP listener address is one NVMe/TCP target
// (transport/tcp/target.hpp) serving every subsystem that listens there, to the hosts each
// allows (nvmf_subsystem_add_host, allow_any_host), with a discovery controller listing them
// and the referrals (nvmf_discovery_add_referral).
// Namespaces added and removed while hosts run reach every controller of the subsystem
// (Namespace Attribute Changed), over either transport; a host removed loses its controllers.
//
// The methods run on the JSON-RPC server's thread; the functions on the thread that calls
// run_once(), which sleeps in poll(2) while nothing is to be done: on every TCP listener's and
// connection's descriptors, each function's socket, and an eventfd that a change handed over
// writes. The hooks hand each change to that thread and wait for it, so a change that fails
// (a socket that cannot be created, a queue depth above the build's limits) fails the method
// with its reason, and the registry is put back as it was. A change made on that thread itself
// (a configuration loaded before the loop starts) runs at once.

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <nvmekit/backends/any_backend.hpp>
#include <nvmekit/contracts/clock.hpp>
#include <nvmekit/controller.hpp>
#include <nvmekit/rpc/bdev_registry.hpp>
#include <nvmekit/rpc/nvmf_methods.hpp>
#include <nvmekit/rpc/nvmf_registry.hpp>
#include <nvmekit/storage/subsystem.hpp>
#include <nvmekit/transport/eventfd_interrupts.hpp>
#include <nvmekit/transport/mapped_memory.hpp>
#include <nvmekit/transport/tcp/target.hpp>
#include <nvmekit/transport/vfio_user/server.hpp>

namespace nvmekit_serve {

/// `Traits`: the controllers of the VFIOUSER functions; `TcpTraits`: those NVMe/TCP hosts create.
template <typename Traits, typename TcpTraits>
class served_target {
public:
    using controller_type = nvmekit::controller<Traits>;
    using server_type = nvmekit::transport::vfio_user::server<controller_type>;
    using tcp_target = nvmekit::transport::tcp::target<TcpTraits>;

    /// `target` gives the VFIOUSER transport's options; `function` the PCI IDs of every function.
    /// The thread that constructs it is the one that calls run_once().
    served_target(const nvmekit::rpc::nvmf_registry& target, nvmekit::pci::nvme_function_config function,
                  nvmekit::transport::vfio_user::server_logger logger)
        : target_{target}
        , function_{function}
        , logger_{std::move(logger)}
        , loop_thread_{std::this_thread::get_id()}
    {
        if (wake_.get() < 0) {
            nvmekit::transport::tcp::throw_errno("served_target: eventfd");
        }
    }
    served_target(const served_target&) = delete;
    served_target& operator=(const served_target&) = delete;

    /// The hooks for add_nvmf_methods.
    nvmekit::rpc::nvmf_method_hooks hooks()
    {
        namespace rpc = nvmekit::rpc;
        return {
            .listener_added =
                [this](const rpc::nvmf_subsystem& s, const rpc::nvmf_listen_address& a) {
                    on_loop([&] {
                        if (a.trtype == "VFIOUSER") {
                            add_function(s, a);
                        } else {
                            add_tcp_listener(s, a);
                        }
                    });
                },
            .listener_removed =
                [this](const rpc::nvmf_subsystem& s, const rpc::nvmf_listen_address& a) {
                    on_loop([&] {
                        if (a.trtype == "VFIOUSER") {
                            remove_function(s.nqn, a);
                        } else {
                            remove_tcp_listener(s.nqn, a);
                        }
                    });
                },
            .namespace_added =
                [this](const rpc::nvmf_subsystem& s, const rpc::nvmf_namespace& ns) {
                    on_loop([&] {
                        if (auto* served = find(s.nqn)) {
                            add_namespace(*served, ns);
                        }
                    });
                },
            .namespace_removed =
                [this](const rpc::nvmf_subsystem& s, const rpc::nvmf_namespace& ns) {
                    on_loop([&] {
                        if (auto* served = find(s.nqn)) {
                            remove_namespace(*served, ns.nsid);
                        }
                    });
                },
            .subsystem_removed =
                [this](const rpc::nvmf_subsystem& s) {
                    on_loop([&] {
                        if (const auto* served = find(s.nqn); served != nullptr && served->owned == nullptr) {
                            throw std::runtime_error(
                                "subsystem " + s.nqn +
                                " is the command line's: it lasts as long as the program");
                        }
                        for (const auto& a : s.listeners) {
                            if (a.trtype != "VFIOUSER") {
                                remove_tcp_listener(s.nqn, a);
                            }
                        }
                        if (auto* served = find(s.nqn)) {
                            for (auto& f : served->functions) {
                                drain(*f);
                            }
                            subsystems_.erase(s.nqn);
                        }
                    });
                },
            .hosts_changed =
                [this](const rpc::nvmf_subsystem& s) {
                    on_loop([&] {
                        for (auto& [key, listener] : tcp_) {
                            listener->target.set_host_access(s.nqn, host_access(s));
                        }
                    });
                },
            .referrals_changed =
                [this](const std::vector<rpc::nvmf_referral>& referrals) {
                    on_loop([&] {
                        for (auto& [key, listener] : tcp_) {
                            listener->target.set_referrals(tcp_referrals(referrals));
                        }
                    });
                },
            .controllers =
                [this](const rpc::nvmf_subsystem& s) {
                    return report(s.nqn, &served_target::controllers, &served_target::tcp_controllers);
                },
            .qpairs =
                [this](const rpc::nvmf_subsystem& s) {
                    return report(s.nqn, &served_target::qpairs, &served_target::tcp_qpairs);
                },
            .stats =
                [this] {
                    nlohmann::json out;
                    on_loop([&] { out = stats(); });
                    return out;
                },
        };
    }

    /// Runs the changes handed over, serves every function and TCP listener once, then waits in
    /// poll(2) for any of their descriptors or a change handed over: up to `idle_wait` when
    /// nothing is to be done, not at all while a controller has work, at most a millisecond while
    /// a vfio-user client is connected (doorbells it writes to shared memory, mapped or shadow,
    /// wake nothing). A connected NVMe/TCP host with nothing under way costs no CPU.
    void run_once(std::chrono::milliseconds idle_wait)
    {
        run_pending();
        bool work = false;
        bool clients = false;
        for (auto& [nqn, served] : subsystems_) {
            for (auto& f : served->functions) {
                f->server.run_once(std::chrono::milliseconds{0});
                work = work || f->ctrl.io_outstanding() != 0;
                clients = clients || f->server.connected();
            }
        }
        for (auto& [key, listener] : tcp_) {
            listener->target.poll(std::chrono::milliseconds{0});
            work = work || listener->target.has_work();
        }
        if (work || idle_wait.count() == 0) {
            return;
        }
        const auto wait = clients ? std::min(idle_wait, std::chrono::milliseconds{1}) : idle_wait;
        pollfds_.clear();
        pollfds_.push_back({wake_.get(), POLLIN, 0});
        for (auto& [nqn, served] : subsystems_) {
            for (auto& f : served->functions) {
                pollfds_.push_back({f->server.descriptor(), POLLIN, 0});
            }
        }
        for (auto& [key, listener] : tcp_) {
            listener->target.add_pollfds(pollfds_);
        }
        if (::poll(pollfds_.data(), pollfds_.size(), static_cast<int>(wait.count())) > 0 &&
            (pollfds_[0].revents & POLLIN) != 0) {
            std::uint64_t count = 0;
            static_cast<void>(::read(wake_.get(), &count, sizeof(count)));
        }
    }

    /// The port TCP listener `a` listens on (the one chosen for its trsvcid "0"); 0 when it is
    /// not listening.
    [[nodiscard]] std::uint16_t tcp_port(const nvmekit::rpc::nvmf_listen_address& a) const
    {
        const auto it = tcp_.find(tcp_key(a));
        return it == tcp_.end() ? 0 : it->second->target.port();
    }

    /// Runs what is still handed over, then refuses further changes and lets the backend
    /// requests in flight finish; the functions stay until the object is destroyed.
    void close()
    {
        {
            const std::lock_guard lock{mutex_};
            closed_ = true;
        }
        run_pending();
        for (auto& [nqn, served] : subsystems_) {
            for (auto& f : served->functions) {
                drain(*f);
            }
        }
        // The targets end their controllers before the subsystems go.
        tcp_.clear();
    }

    /// Serves the embedder's subsystem `subsystem`, recorded in the registry as `s`, like the
    /// subsystems made here: namespaces added and removed through management reach it (`drain`
    /// first lets the embedder's own controllers of it finish their backend requests; without
    /// `namespaces_may_change` they are refused), and so do
    /// the listeners added for it, including the TCP listeners of `s`, which start now. It cannot
    /// be deleted. Call before run_once(), from the thread that calls it.
    void adopt(const nvmekit::rpc::nvmf_subsystem& s, nvmekit::subsystem<nvmekit::any_backend>& subsystem,
               std::function<void()> drain, bool namespaces_may_change = true)
    {
        if (!drain) {
            throw std::invalid_argument("served_target::adopt: no drain");
        }
        subsystems_[s.nqn] =
            std::make_unique<served_subsystem>(subsystem, std::move(drain), !namespaces_may_change);
        for (const auto& a : s.listeners) {
            if (a.trtype == "TCP") {
                add_tcp_listener(s, a);
            }
        }
    }

private:
    struct function {
        function(nvmekit::subsystem<nvmekit::any_backend>& subsystem, nvmekit::controller_config config,
                 nvmekit::transport::vfio_user::server_options options,
                 const nvmekit::transport::vfio_user::server_logger& logger)
            : interrupts{Traits::limits.msix_vectors}
            , ctrl{memory, interrupts, clock, subsystem, config}
            , server{ctrl, memory, interrupts, std::move(options), logger}
        {}
        nvmekit::transport::mapped_memory memory;
        nvmekit::transport::eventfd_interrupts interrupts;
        nvmekit::steady_clock clock;
        controller_type ctrl;
        server_type server;
        nvmekit::rpc::nvmf_listen_address address;
    };
    /// A subsystem served: made here from the registry's record, or the embedder's own
    /// (adopt(): the command line's, whose function the embedder serves itself).
    struct served_subsystem {
        explicit served_subsystem(const nvmekit::rpc::nvmf_subsystem& s)
            : owned{std::make_unique<nvmekit::subsystem<nvmekit::any_backend>>(
                  nvmekit::subsystem_identity{
                      .nqn = s.nqn, .serial_number = s.serial_number, .model_number = s.model_number},
                  nvmekit::subsystem_options{.max_namespaces = s.max_namespaces})}
            , subsystem{*owned}
        {}
        served_subsystem(nvmekit::subsystem<nvmekit::any_backend>& adopted, std::function<void()> drain,
                         bool fixed)
            : subsystem{adopted}, drain_adopted{std::move(drain)}, namespaces_fixed{fixed}
        {}
        std::unique_ptr<nvmekit::subsystem<nvmekit::any_backend>> owned;
        nvmekit::subsystem<nvmekit::any_backend>& subsystem;
        /// Lets the embedder's controllers of an adopted subsystem finish their backend requests.
        std::function<void()> drain_adopted;
        /// An adopted subsystem whose namespaces the embedder cannot let change.
        bool namespaces_fixed = false;
        std::vector<std::unique_ptr<function>> functions;
        /// The TCP listener addresses it is served at.
        std::vector<nvmekit::rpc::nvmf_listen_address> tcp_addresses;
    };
    /// One TCP listener address: the target serving each subsystem that listens there.
    struct tcp_listener {
        tcp_listener(nvmekit::transport::tcp::target_options options, nvmekit::rpc::nvmf_listen_address a)
            : target{std::move(options)}, address{std::move(a)}
        {}
        tcp_target target;
        nvmekit::rpc::nvmf_listen_address address;
    };

    /// One report of the functions of subsystem `nqn`, then of its controllers at each TCP
    /// listener, made on the loop thread.
    nlohmann::json report(const std::string& nqn,
                          nlohmann::json (served_target::*what)(const function&) const,
                          nlohmann::json (served_target::*tcp_what)(const tcp_listener&, const std::string&)
                              const)
    {
        nlohmann::json out = nlohmann::json::array();
        on_loop([&] {
            if (auto* served = find(nqn)) {
                for (const auto& f : served->functions) {
                    for (auto& entry : (this->*what)(*f)) {
                        out.push_back(std::move(entry));
                    }
                }
            }
            for (const auto& [key, listener] : tcp_) {
                for (auto& entry : (this->*tcp_what)(*listener, nqn)) {
                    out.push_back(std::move(entry));
                }
            }
        });
        return out;
    }

    /// nvmf_subsystem_get_controllers' entries of subsystem `nqn`'s controllers at `listener`.
    nlohmann::json tcp_controllers(const tcp_listener& listener, const std::string& nqn) const
    {
        nlohmann::json out = nlohmann::json::array();
        listener.target.for_each_controller([&](const typename tcp_target::controller_view& c) {
            if (c.subsystem_nqn == nqn) {
                out.push_back({{"cntlid", c.ctrl.controller_id()},
                               {"hostnqn", std::string{c.host_nqn}},
                               {"hostid", nvmekit::rpc::uuid_string(c.host_id)},
                               {"num_io_qpairs", c.qids.size() - 1}});
            }
        });
        return out;
    }

    /// nvmf_subsystem_get_qpairs' entries of subsystem `nqn`'s queues at `listener`.
    nlohmann::json tcp_qpairs(const tcp_listener& listener, const std::string& nqn) const
    {
        nlohmann::json out = nlohmann::json::array();
        listener.target.for_each_controller([&](const typename tcp_target::controller_view& c) {
            if (c.subsystem_nqn != nqn) {
                return;
            }
            for (const std::uint16_t qid : c.qids) {
                out.push_back({{"cntlid", c.ctrl.controller_id()},
                               {"qid", qid},
                               {"state", "active"},
                               {"listen_address", nvmekit::rpc::listen_address_json(listener.address)}});
            }
        });
        return out;
    }

    /// Whether a host has the function's controller running (vfio-user: connected, CSTS.RDY).
    static bool in_use(const function& f)
    {
        return f.server.connected() && f.ctrl.state() == nvmekit::controller_state::ready;
    }

    /// The I/O queue IDs of the function's controller.
    static std::vector<std::uint16_t> io_queues(const function& f)
    {
        std::vector<std::uint16_t> qids;
        for (std::uint16_t qid = 1; qid <= Traits::limits.io_queues; ++qid) {
            if (f.ctrl.submission_queue_exists(qid)) {
                qids.push_back(qid);
            }
        }
        return qids;
    }

    /// nvmf_subsystem_get_controllers' entry of a function (vfio-user has no host NQN or ID).
    nlohmann::json controllers(const function& f) const
    {
        if (!in_use(f)) {
            return nlohmann::json::array();
        }
        return nlohmann::json::array({{{"cntlid", f.ctrl.controller_id()},
                                       {"hostnqn", ""},
                                       {"hostid", ""},
                                       {"num_io_qpairs", io_queues(f).size()}}});
    }

    /// nvmf_subsystem_get_qpairs' entries of a function: its admin queue and its I/O queues.
    nlohmann::json qpairs(const function& f) const
    {
        nlohmann::json out = nlohmann::json::array();
        if (!in_use(f)) {
            return out;
        }
        std::vector<std::uint16_t> qids = io_queues(f);
        qids.insert(qids.begin(), 0);
        for (const std::uint16_t qid : qids) {
            out.push_back({{"cntlid", f.ctrl.controller_id()},
                           {"qid", qid},
                           {"state", "active"},
                           {"listen_address", nvmekit::rpc::listen_address_json(f.address)}});
        }
        return out;
    }

    /// nvmf_get_stats: each poll group of each function, with the queues it holds now and the
    /// commands it completed (cumulative queue counts are not kept, so SPDK's admin_qpairs and
    /// io_qpairs are left out).
    nlohmann::json stats() const
    {
        nlohmann::json groups = nlohmann::json::array();
        for (const auto& [nqn, served] : subsystems_) {
            for (const auto& f : served->functions) {
                const std::vector<std::uint16_t> qids =
                    in_use(*f) ? io_queues(*f) : std::vector<std::uint16_t>{};
                for (std::uint16_t group = 0; group < f->ctrl.poll_group_count(); ++group) {
                    const auto in_group = std::count_if(qids.begin(), qids.end(), [&](std::uint16_t qid) {
                        return f->ctrl.submission_queue_group(qid) == group;
                    });
                    groups.push_back({{"name", f->address.traddr + "/cntrl group " + std::to_string(group)},
                                      {"current_admin_qpairs", group == 0 && in_use(*f) ? 1 : 0},
                                      {"current_io_qpairs", in_group},
                                      {"pending_bdev_io", group == 0 ? f->ctrl.io_outstanding() : 0},
                                      {"completed_nvme_io", f->ctrl.group_statistics(group).commands},
                                      {"transports", nlohmann::json::array({{{"trtype", "VFIOUSER"}}})}});
                }
            }
        }
        // Each TCP listener is one loop: its controllers' queues and commands.
        for (const auto& [key, listener] : tcp_) {
            std::size_t admin = 0;
            std::size_t io = 0;
            std::uint64_t pending = 0;
            std::uint64_t completed = 0;
            listener->target.for_each_controller([&](const typename tcp_target::controller_view& c) {
                ++admin;
                io += c.qids.size() - 1;
                pending += c.ctrl.io_outstanding();
                for (std::uint16_t group = 0; group < c.ctrl.poll_group_count(); ++group) {
                    completed += c.ctrl.group_statistics(group).commands;
                }
            });
            groups.push_back({{"name", "tcp " + key},
                              {"current_admin_qpairs", admin},
                              {"current_io_qpairs", io},
                              {"pending_bdev_io", pending},
                              {"completed_nvme_io", completed},
                              {"transports", nlohmann::json::array({{{"trtype", "TCP"}}})}});
        }
        return {{"tick_rate", 1'000'000'000}, {"poll_groups", std::move(groups)}};
    }

    /// Runs `change` on the thread of run_once() and waits for it; its exception is rethrown here.
    template <typename Change>
    void on_loop(Change&& change)
    {
        if (std::this_thread::get_id() == loop_thread_) {
            change();
            return;
        }
        std::packaged_task<void()> task{std::forward<Change>(change)};
        auto done = task.get_future();
        {
            const std::lock_guard lock{mutex_};
            if (closed_) {
                throw std::runtime_error("nvmekit-serve is shutting down");
            }
            pending_.push_back(std::move(task));
        }
        const std::uint64_t one = 1;
        static_cast<void>(::write(wake_.get(), &one, sizeof(one)));
        done.get();
    }

    void run_pending()
    {
        std::vector<std::packaged_task<void()>> tasks;
        {
            const std::lock_guard lock{mutex_};
            tasks.swap(pending_);
        }
        for (auto& task : tasks) {
            task();
        }
    }

    served_subsystem* find(const std::string& nqn)
    {
        const auto it = subsystems_.find(nqn);
        return it == subsystems_.end() ? nullptr : it->second.get();
    }

    /// The controller configuration transport `trtype` asks for, refused when it is beyond what
    /// this build offers (`limits`: Traits' or TcpTraits').
    nvmekit::controller_config controller_config(const std::string& trtype,
                                                 const nvmekit::limits& limits) const
    {
        const auto transport = target_.transport(trtype);
        if (!transport) {
            throw std::runtime_error("no " + trtype + " transport");
        }
        const auto above = [&](const char* name, std::uint64_t value, std::uint64_t limit) {
            return std::runtime_error("the " + trtype + " transport's " + std::string{name} + " " +
                                      std::to_string(value) + " is above this nvmekit-serve's " +
                                      std::to_string(limit));
        };
        if (transport->max_queue_depth > limits.queue_entries) {
            throw above("max_queue_depth", transport->max_queue_depth, limits.queue_entries);
        }
        if (transport->max_io_qpairs_per_ctrlr > limits.io_queues) {
            throw above("max_io_qpairs_per_ctrlr", transport->max_io_qpairs_per_ctrlr, limits.io_queues);
        }
        if (transport->max_io_size > limits.max_transfer_bytes()) {
            throw above("max_io_size", transport->max_io_size, limits.max_transfer_bytes());
        }
        std::uint8_t mdts = 1;
        while ((std::uint64_t{4096} << mdts) < transport->max_io_size) {
            ++mdts;
        }
        // No NVM Subsystem Reset (CAP.NSSRS = 0): management never enables it (nvmf_create_subsystem's
        // enable_nssr, accepted only false), as SPDK then reports it.
        return {.subsystem_reset_supported = false,
                .io_queues = static_cast<std::uint16_t>(transport->max_io_qpairs_per_ctrlr),
                .queue_entries = transport->max_queue_depth,
                .mdts = mdts};
    }

    void add_function(const nvmekit::rpc::nvmf_subsystem& s, const nvmekit::rpc::nvmf_listen_address& a)
    {
        const nvmekit::controller_config config = controller_config("VFIOUSER", Traits::limits);
        auto [served, created] = subsystem_for(s);
        try {
            const std::string socket = a.traddr + "/cntrl";
            auto added = std::make_unique<function>(
                served->subsystem, config,
                nvmekit::transport::vfio_user::server_options{.socket_path = socket, .function = function_},
                logger_);
            added->address = a;
            spdlog::info("{}: serving a controller on {} (BAR0 {} KiB)", s.nqn, socket,
                         added->ctrl.bar0_size() >> 10);
            served->functions.push_back(std::move(added));
        } catch (...) {
            if (created) {
                subsystems_.erase(s.nqn);
            }
            throw;
        }
    }

    /// The served subsystem of `s`, made with its namespaces when it is not served yet (and
    /// whether it was made).
    std::pair<served_subsystem*, bool> subsystem_for(const nvmekit::rpc::nvmf_subsystem& s)
    {
        auto& served = subsystems_[s.nqn];
        if (served != nullptr) {
            return {served.get(), false};
        }
        served = std::make_unique<served_subsystem>(s);
        try {
            for (const auto& ns : s.namespaces) {
                add_namespace(*served, ns);
            }
        } catch (...) {
            subsystems_.erase(s.nqn);
            throw;
        }
        return {served.get(), true};
    }

    /// Forgets subsystem `nqn` when nothing serves it any more.
    void forget_if_unserved(const std::string& nqn)
    {
        if (auto* served = find(nqn); served != nullptr && served->owned != nullptr &&
                                      served->functions.empty() && served->tcp_addresses.empty()) {
            subsystems_.erase(nqn);
        }
    }

    static nvmekit::transport::tcp::host_access host_access(const nvmekit::rpc::nvmf_subsystem& s)
    {
        return {.any = s.allow_any_host, .hosts = s.hosts};
    }

    /// The registry's referrals as a TCP target's discovery controller lists them.
    static std::vector<nvmekit::transport::tcp::discovery_referral>
    tcp_referrals(const std::vector<nvmekit::rpc::nvmf_referral>& referrals)
    {
        std::vector<nvmekit::transport::tcp::discovery_referral> out;
        for (const auto& r : referrals) {
            std::uint16_t port = 0;
            std::from_chars(r.address.trsvcid.data(), r.address.trsvcid.data() + r.address.trsvcid.size(),
                            port);
            out.push_back({.address = r.address.traddr,
                           .port = port,
                           .nqn = r.subnqn,
                           .secure_channel = r.secure_channel,
                           .family = r.address.adrfam == "IPv6" ? nvmekit::spec::address_family::ipv6
                                                                : nvmekit::spec::address_family::ipv4});
        }
        return out;
    }

    /// "ADDR:PORT" ("[ADDR]:PORT" for IPv6): one TCP listener.
    static std::string tcp_key(const nvmekit::rpc::nvmf_listen_address& a)
    {
        return a.adrfam == "IPv6" ? "[" + a.traddr + "]:" + a.trsvcid : a.traddr + ":" + a.trsvcid;
    }

    /// Serves `s` at TCP listener `a`: on the target already listening there, or a new one with
    /// the TCP transport's options.
    void add_tcp_listener(const nvmekit::rpc::nvmf_subsystem& s, const nvmekit::rpc::nvmf_listen_address& a)
    {
        const std::string key = tcp_key(a);
        auto [served, created] = subsystem_for(s);
        try {
            auto it = tcp_.find(key);
            if (it == tcp_.end()) {
                it = tcp_.emplace(key, std::make_unique<tcp_listener>(tcp_options(a), a)).first;
                it->second->target.set_referrals(tcp_referrals(target_.referrals()));
                spdlog::info("NVMe/TCP listener on {} (port {})", key, it->second->target.port());
            }
            it->second->target.add_subsystem(served->subsystem, host_access(s));
            served->tcp_addresses.push_back(a);
            spdlog::info("{}: served over NVMe/TCP on {}", s.nqn, key);
        } catch (...) {
            if (const auto it = tcp_.find(key); it != tcp_.end() &&
                                                it->second->target.association_count() == 0 &&
                                                it->second->target.subsystem_count() == 0) {
                tcp_.erase(it);
            }
            if (created) {
                subsystems_.erase(s.nqn);
            }
            throw;
        }
    }

    /// Stops serving subsystem `nqn` at TCP listener `a` (its controllers there end); the
    /// listener closes when it serves nothing more.
    void remove_tcp_listener(const std::string& nqn, const nvmekit::rpc::nvmf_listen_address& a)
    {
        const auto it = tcp_.find(tcp_key(a));
        if (it == tcp_.end()) {
            return;
        }
        it->second->target.remove_subsystem(nqn);
        if (auto* served = find(nqn)) {
            std::erase(served->tcp_addresses, a);
        }
        spdlog::info("{}: no longer served over NVMe/TCP on {}", nqn, it->first);
        if (it->second->target.subsystem_count() == 0) {
            spdlog::info("NVMe/TCP listener on {} closed", it->first);
            tcp_.erase(it);
        }
        forget_if_unserved(nqn);
    }

    /// The options of a target listening at `a`, from the TCP transport.
    nvmekit::transport::tcp::target_options tcp_options(const nvmekit::rpc::nvmf_listen_address& a) const
    {
        nvmekit::transport::tcp::target_options options;
        options.address = a.traddr;
        std::uint16_t port = 0;
        const auto parsed = std::from_chars(a.trsvcid.data(), a.trsvcid.data() + a.trsvcid.size(), port);
        if (parsed.ec != std::errc{} || parsed.ptr != a.trsvcid.data() + a.trsvcid.size()) {
            throw std::runtime_error("'" + a.trsvcid + "' is not a TCP port");
        }
        options.port = port;
        options.controller = controller_config("TCP", TcpTraits::limits);
        const auto transport = target_.transport("TCP");
        options.limits.io_in_capsule_data = transport->in_capsule_data_size;
        options.max_data_length = transport->max_io_size;
        return options;
    }

    void remove_function(const std::string& nqn, const nvmekit::rpc::nvmf_listen_address& a)
    {
        auto* served = find(nqn);
        if (served == nullptr) {
            return;
        }
        auto& functions = served->functions;
        const auto it =
            std::find_if(functions.begin(), functions.end(), [&](const auto& f) { return f->address == a; });
        if (it == functions.end()) {
            return;
        }
        drain(**it);
        spdlog::info("{}: controller on {}/cntrl removed", nqn, a.traddr);
        functions.erase(it);
        forget_if_unserved(nqn);
    }

    static void add_namespace(served_subsystem& served, const nvmekit::rpc::nvmf_namespace& ns)
    {
        refuse_if_fixed(served);
        const std::uint32_t block_size = ns.device->block_size();
        if (block_size != 512 && block_size != 4096) {
            throw std::runtime_error("bdev '" + ns.device->name() + "': block size " +
                                     std::to_string(block_size) + " cannot be served (512 or 4096)");
        }
        nvmekit::namespace_identifiers identifiers{};
        identifiers.uuid = ns.uuid.value_or(ns.device->uuid());
        identifiers.nguid = ns.nguid.value_or(identifiers.uuid);
        if (ns.eui64) {
            identifiers.eui64 = *ns.eui64;
        }
        served.subsystem.add_namespace(nvmekit::any_backend{nvmekit::rpc::bdev_backend{ns.device}},
                                       {.lba_format = static_cast<std::uint8_t>(block_size == 512 ? 0 : 2)},
                                       ns.nsid, identifiers);
        spdlog::info("{}: namespace {} on bdev {}", served.subsystem.identity().nqn, ns.nsid,
                     ns.device->name());
    }

    /// Throws when `served` is an adopted subsystem whose namespaces cannot change.
    static void refuse_if_fixed(const served_subsystem& served)
    {
        if (served.namespaces_fixed) {
            throw std::runtime_error("the namespaces of " + served.subsystem.identity().nqn +
                                     " cannot change while its poll groups run on threads of their own");
        }
    }

    void remove_namespace(served_subsystem& served, std::uint32_t nsid)
    {
        refuse_if_fixed(served);
        for (auto& f : served.functions) {
            drain(*f);
        }
        for (auto& [key, listener] : tcp_) {
            listener->target.drain_backends();
        }
        if (served.drain_adopted) {
            served.drain_adopted();
        }
        served.subsystem.remove_namespace(nsid);
        spdlog::info("{}: namespace {} removed", served.subsystem.identity().nqn, nsid);
    }

    /// Polls the controller until its backend requests have finished (10 s at most).
    static void drain(function& f)
    {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{10};
        while (f.ctrl.io_outstanding() != 0 && std::chrono::steady_clock::now() < deadline) {
            f.ctrl.poll();
        }
    }

    const nvmekit::rpc::nvmf_registry& target_;
    nvmekit::pci::nvme_function_config function_;
    nvmekit::transport::vfio_user::server_logger logger_;
    std::map<std::string, std::unique_ptr<served_subsystem>> subsystems_;
    /// The TCP listeners by tcp_key(), after the subsystems they serve, so they go first.
    std::map<std::string, std::unique_ptr<tcp_listener>> tcp_;
    std::mutex mutex_;
    std::vector<std::packaged_task<void()>> pending_;
    /// Written by on_loop(): wakes run_once() from its poll(2) when a change is handed over.
    nvmekit::transport::tcp::unique_fd wake_{::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)};
    std::vector<pollfd> pollfds_;
    bool closed_ = false;
    std::thread::id loop_thread_;
};

} // namespace nvmekit_serve
