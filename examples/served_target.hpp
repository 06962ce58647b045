#pragma once
// nvmekit-serve's NVMe-oF target built through JSON-RPC, served: each VFIOUSER listener of a
// subsystem is an emulated NVMe PCI function on the socket `cntrl` in the listener's directory,
// with a controller of that subsystem; namespaces added and removed while hosts run reach every
// controller of the subsystem (Namespace Attribute Changed). TCP listeners are recorded only.
//
// The methods run on the JSON-RPC server's thread; the functions on the thread that calls
// run_once(). The hooks hand each change to that thread and wait for it, so a change that fails
// (a socket that cannot be created, a queue depth above the build's limits) fails the method
// with its reason, and the registry is put back as it was. A change made on that thread itself
// (a configuration loaded before the loop starts) runs at once.

#include <algorithm>
#include <chrono>
#include <condition_variable>
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

#include <spdlog/spdlog.h>

#include <nvmekit/backends/any_backend.hpp>
#include <nvmekit/clock.hpp>
#include <nvmekit/controller.hpp>
#include <nvmekit/rpc/bdev_registry.hpp>
#include <nvmekit/rpc/nvmf_methods.hpp>
#include <nvmekit/rpc/nvmf_registry.hpp>
#include <nvmekit/subsystem.hpp>
#include <nvmekit/transport/eventfd_interrupts.hpp>
#include <nvmekit/transport/mapped_memory.hpp>
#include <nvmekit/transport/vfio_user/server.hpp>

namespace nvmekit_serve {

template <typename Traits>
class served_target {
public:
    using controller_type = nvmekit::controller<Traits>;
    using server_type = nvmekit::transport::vfio_user::server<controller_type>;

    /// `target` gives the VFIOUSER transport's options; `function` the PCI IDs of every function.
    /// The thread that constructs it is the one that calls run_once().
    served_target(const nvmekit::rpc::nvmf_registry& target, nvmekit::pci::nvme_function_config function,
                  nvmekit::transport::vfio_user::server_logger logger)
        : target_{target}
        , function_{function}
        , logger_{std::move(logger)}
        , loop_thread_{std::this_thread::get_id()}
    {}
    served_target(const served_target&) = delete;
    served_target& operator=(const served_target&) = delete;

    /// The hooks for add_nvmf_methods.
    nvmekit::rpc::nvmf_method_hooks hooks()
    {
        namespace rpc = nvmekit::rpc;
        return {
            .listener_added =
                [this](const rpc::nvmf_subsystem& s, const rpc::nvmf_listen_address& a) {
                    if (a.trtype != "VFIOUSER") {
                        spdlog::warn("{} on {}: recorded; TCP listeners are not served yet", s.nqn,
                                     rpc::nvmf_registry::describe(a));
                        return;
                    }
                    on_loop([&] { add_function(s, a); });
                },
            .listener_removed =
                [this](const rpc::nvmf_subsystem& s, const rpc::nvmf_listen_address& a) {
                    if (a.trtype == "VFIOUSER") {
                        on_loop([&] { remove_function(s.nqn, a); });
                    }
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
                        if (auto* served = find(s.nqn)) {
                            for (auto& f : served->functions) {
                                drain(*f);
                            }
                            subsystems_.erase(s.nqn);
                        }
                    });
                },
            .controllers =
                [this](const rpc::nvmf_subsystem& s) { return report(s.nqn, &served_target::controllers); },
            .qpairs = [this](const rpc::nvmf_subsystem& s) { return report(s.nqn, &served_target::qpairs); },
            .stats =
                [this] {
                    nlohmann::json out;
                    on_loop([&] { out = stats(); });
                    return out;
                },
        };
    }

    /// Runs the changes handed over, then serves every function once; waits up to `idle_wait`
    /// for a change when no host is connected and no I/O is outstanding.
    void run_once(std::chrono::milliseconds idle_wait)
    {
        run_pending();
        bool busy = false;
        std::size_t functions = 0;
        for (auto& [nqn, served] : subsystems_) {
            functions += served->functions.size();
        }
        for (auto& [nqn, served] : subsystems_) {
            for (auto& f : served->functions) {
                // One function may wait in poll(2) for its client; several are polled in turn.
                const bool active = f->server.connected() || f->ctrl.io_outstanding() != 0;
                const bool wait = functions == 1 && f->ctrl.io_outstanding() == 0;
                f->server.run_once(std::chrono::milliseconds{active && wait ? 1 : 0});
                busy = busy || active;
            }
        }
        if (!busy && idle_wait.count() > 0) {
            std::unique_lock lock{mutex_};
            changed_.wait_for(lock, idle_wait, [&] { return !pending_.empty(); });
        }
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
    struct served_subsystem {
        explicit served_subsystem(const nvmekit::rpc::nvmf_subsystem& s)
            : subsystem{{.nqn = s.nqn, .serial_number = s.serial_number, .model_number = s.model_number},
                        {.max_namespaces = s.max_namespaces}}
        {}
        nvmekit::subsystem<nvmekit::any_backend> subsystem;
        std::vector<std::unique_ptr<function>> functions;
    };

    /// One report of the functions of subsystem `nqn`, made on the loop thread.
    nlohmann::json report(const std::string& nqn,
                          nlohmann::json (served_target::*what)(const function&) const)
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
        changed_.notify_all();
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

    /// The controller configuration the VFIOUSER transport asks for, refused when it is beyond
    /// what this build offers.
    nvmekit::controller_config controller_config() const
    {
        const auto transport = target_.transport("VFIOUSER");
        if (!transport) {
            throw std::runtime_error("no VFIOUSER transport");
        }
        constexpr nvmekit::limits limits = Traits::limits;
        const auto above = [](const char* name, std::uint64_t value, std::uint64_t limit) {
            return std::runtime_error("the VFIOUSER transport's " + std::string{name} + " " +
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
        return {.io_queues = static_cast<std::uint16_t>(transport->max_io_qpairs_per_ctrlr),
                .queue_entries = transport->max_queue_depth,
                .mdts = mdts};
    }

    void add_function(const nvmekit::rpc::nvmf_subsystem& s, const nvmekit::rpc::nvmf_listen_address& a)
    {
        const nvmekit::controller_config config = controller_config();
        auto& served = subsystems_[s.nqn];
        const bool created = served == nullptr;
        if (created) {
            served = std::make_unique<served_subsystem>(s);
        }
        try {
            if (created) {
                for (const auto& ns : s.namespaces) {
                    add_namespace(*served, ns);
                }
            }
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
        if (functions.empty()) {
            subsystems_.erase(nqn);
        }
    }

    static void add_namespace(served_subsystem& served, const nvmekit::rpc::nvmf_namespace& ns)
    {
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

    static void remove_namespace(served_subsystem& served, std::uint32_t nsid)
    {
        for (auto& f : served.functions) {
            drain(*f);
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
    std::mutex mutex_;
    std::condition_variable changed_;
    std::vector<std::packaged_task<void()>> pending_;
    bool closed_ = false;
    std::thread::id loop_thread_;
};

} // namespace nvmekit_serve
