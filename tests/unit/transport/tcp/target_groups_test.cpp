#include <nvmekit/transport/tcp/target.hpp>

#include <atomic>
#include <bit>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <nvmekit/backends/ram_backend.hpp>
#include <nvmekit/testing/tcp_host.hpp>

#include "print_helpers.hpp"
#include "thread_group.hpp"

// The NVMe/TCP target with its I/O connections spread over connection groups, each polled on a
// thread of its own while poll() runs on another (as a server runs them), driven by several
// hosts whose queues do verified I/O from threads of their own. Built for ThreadSanitizer too
// (the ci-tsan preset).

namespace {
namespace transport_tcp_target_groups_test {

namespace spec = nvmekit::spec;
namespace tcp = nvmekit::transport::tcp;
using nvmekit::testing::tcp_host;
using nvmekit::testing::tcp_host_options;
using target_type = tcp::target<tcp::concurrent_target_traits>;

constexpr std::string_view nqn = "nqn.2026-11.io.nvmekit:grouped";
constexpr std::uint64_t namespace_bytes = std::uint64_t{16} << 20;
/// How long a test waits for what should come soon: long enough that no load makes it run out,
/// so it only stops a test that would otherwise hang.
constexpr std::chrono::seconds hang_guard{30};

std::string host_nqn(unsigned n)
{
    return "nqn.2014-08.org.nvmexpress:uuid:00000000-0000-0000-0000-0000000000" + std::to_string(10 + n);
}

/// A target of one subsystem with a RAM namespace (safe from several threads), its poll() on one
/// thread and each connection group's poll_group() on one more.
class grouped_target {
public:
    explicit grouped_target(std::uint16_t groups,
                            const std::function<void(tcp::target_options&)>& configure = {})
        : subsystem_{make_subsystem()}, target_{*subsystem_, options(groups, configure)}
    {
        main_ = std::thread{[this] {
            while (!stop_main_.load(std::memory_order_acquire)) {
                {
                    const std::lock_guard lock{mutex_};
                    target_.poll(std::chrono::milliseconds{1});
                }
                while (waiting_.load(std::memory_order_acquire)) {
                    std::this_thread::yield(); // let with() have the lock
                }
            }
        }};
        for (std::uint16_t i = 0; i < groups; ++i) {
            groups_.emplace_back([this, i] {
                while (!stop_groups_.load(std::memory_order_acquire)) {
                    target_.poll_group(i, std::chrono::milliseconds{1});
                }
            });
        }
    }
    grouped_target(const grouped_target&) = delete;
    grouped_target& operator=(const grouped_target&) = delete;
    ~grouped_target()
    {
        // The groups stop first: the target's changes (and its destruction) wait for them no more.
        stop_groups_.store(true, std::memory_order_release);
        for (auto& t : groups_) {
            t.join();
        }
        stop_main_.store(true, std::memory_order_release);
        main_.join();
    }

    /// Runs `change(target)` on the test's thread while poll() does not run.
    template <typename Change>
    auto with(Change&& change)
    {
        waiting_.store(true, std::memory_order_release);
        const std::lock_guard lock{mutex_};
        waiting_.store(false, std::memory_order_release);
        return change(target_);
    }
    [[nodiscard]] std::uint16_t port() const { return target_.port(); }

    /// Host `n`, whose every wait for the target ends after `timeout`.
    [[nodiscard]] tcp_host host(unsigned n, std::chrono::milliseconds timeout = hang_guard) const
    {
        tcp_host_options options;
        options.subsystem_nqn = std::string{nqn};
        options.host_nqn = host_nqn(n);
        options.io_in_capsule_data = 8192;
        options.timeout = timeout;
        return tcp_host{"127.0.0.1", port(), options};
    }

private:
    static std::unique_ptr<target_type::subsystem_type> make_subsystem()
    {
        auto subsystem = std::make_unique<target_type::subsystem_type>(
            nvmekit::subsystem_identity{.nqn = std::string{nqn}});
        subsystem->add_namespace(nvmekit::ram_backend{namespace_bytes, {.concurrent = true}});
        return subsystem;
    }
    static tcp::target_options options(std::uint16_t groups,
                                       const std::function<void(tcp::target_options&)>& configure)
    {
        tcp::target_options options;
        options.port = 0;
        options.limits.maxh2cdata = 16 * 1024;
        options.limits.io_in_capsule_data = 8192;
        options.connection_groups = groups;
        options.controller.io_queues = 8;
        if (configure) {
            configure(options);
        }
        return options;
    }

    std::unique_ptr<target_type::subsystem_type> subsystem_;
    target_type target_;
    std::mutex mutex_;
    std::atomic<bool> waiting_{false};
    std::atomic<bool> stop_main_{false};
    std::atomic<bool> stop_groups_{false};
    std::thread main_;
    std::vector<std::thread> groups_;
};

/// Connect, enable, I/O queues 1 to `queues`.
void bring_up(tcp_host& host, std::uint16_t queues)
{
    host.connect_admin();
    host.enable();
    for (std::uint16_t qid = 1; qid <= queues; ++qid) {
        ASSERT_TRUE(host.connect_io(qid).ok()) << "qid " << qid;
    }
}

/// Waits (hang_guard at most) until every worker has verified `rounds` rounds.
void await_progress(const std::vector<std::atomic<std::size_t>>& progress, std::size_t rounds)
{
    const auto deadline = std::chrono::steady_clock::now() + hang_guard;
    for (const auto& p : progress) {
        while (p.load(std::memory_order_acquire) < rounds && std::chrono::steady_clock::now() < deadline) {
            std::this_thread::sleep_for(std::chrono::milliseconds{1});
        }
    }
}

std::vector<std::byte> pattern(std::size_t size, std::uint64_t seed)
{
    std::vector<std::byte> data(size);
    for (std::size_t i = 0; i < size; ++i) {
        data[i] = static_cast<std::byte>((i * 131U + seed * 7U + (i >> 9) + (seed >> 3)) & 0xffU);
    }
    return data;
}

/// What one I/O worker did.
struct worker_result {
    std::size_t verified = 0;
    std::string failure;
};

/// Writes and reads back on queue `qid` of `host`, in LBA range `region` (of region_blocks
/// blocks), until `rounds` are done or `stop` is set: small writes in the capsule, larger ones by
/// R2T (H2CData split at 16 KiB), reads by C2HData. With `tolerate_end`, a failure ends the
/// worker quietly (its association is being reset or ended).
worker_result run_worker(tcp_host& host, std::uint16_t qid, std::uint64_t region, std::size_t rounds,
                         const std::atomic<bool>& stop, bool tolerate_end = false,
                         std::atomic<std::size_t>* progress = nullptr)
{
    constexpr std::uint64_t region_blocks = 1024;
    worker_result result;
    try {
        for (std::size_t round = 0; round < rounds && !stop.load(std::memory_order_acquire); ++round) {
            const std::size_t size = (round % 3 == 0) ? 64 * 1024 : 4096;
            const std::uint64_t slba = region * region_blocks + (round * 8) % (region_blocks - 128);
            const auto data = pattern(size, region * 1000 + round);
            const auto written = host.write(qid, slba, data);
            if (!written.ok()) {
                if (!tolerate_end) {
                    result.failure = "write failed: status " + std::to_string(written.cqe.status_phase >> 1);
                }
                return result;
            }
            std::vector<std::byte> back;
            const auto read = host.read(qid, slba, static_cast<std::uint32_t>(size / 512), back);
            if (!read.ok()) {
                if (!tolerate_end) {
                    result.failure = "read failed";
                }
                return result;
            }
            if (back != data) {
                result.failure = "read back other data at LBA " + std::to_string(slba);
                return result;
            }
            ++result.verified;
            if (progress != nullptr) {
                progress->store(result.verified, std::memory_order_release);
            }
        }
    } catch (const std::exception& e) {
        if (!tolerate_end) {
            result.failure = e.what();
        }
    }
    return result;
}

TEST(tcp_target_groups, many_connections_over_groups_do_verified_io)
{
    grouped_target served{3};
    std::vector<tcp_host> hosts;
    hosts.push_back(served.host(1));
    hosts.push_back(served.host(2));
    for (auto& host : hosts) {
        bring_up(host, tcp_host::max_io_queues);
    }
    // Eight I/O queues of two controllers, each driven by a thread of its own
    const std::atomic<bool> stop{false};
    std::vector<worker_result> results(2 * tcp_host::max_io_queues);
    {
        const nvmekit_test::thread_group workers{results.size(), [&](std::size_t i) {
                                                     auto& host = hosts[i / tcp_host::max_io_queues];
                                                     const auto qid = static_cast<std::uint16_t>(
                                                         1 + i % tcp_host::max_io_queues);
                                                     results[i] = run_worker(host, qid, i, 60, stop);
                                                 }};
    }
    for (std::size_t i = 0; i < results.size(); ++i) {
        EXPECT_EQ(results[i].failure, "") << "worker " << i;
        EXPECT_EQ(results[i].verified, 60U) << "worker " << i;
    }
    // Every group ran commands of both controllers' queues
    served.with([&](target_type& target) {
        EXPECT_EQ(target.connection_group_count(), 3U);
        std::size_t controllers = 0;
        target.for_each_controller([&](const target_type::controller_view& view) {
            ++controllers;
            EXPECT_EQ(view.qids.size(), 1U + tcp_host::max_io_queues);
            for (std::uint16_t g = 0; g < 3; ++g) {
                EXPECT_GT(view.ctrl.group_statistics(g).commands, 0U) << "group " << g;
            }
        });
        EXPECT_EQ(controllers, 2U);
        const auto statistics = target.statistics();
        EXPECT_GE(statistics.commands, results.size() * 120U);
        EXPECT_GT(statistics.r2ts, 0U);
        EXPECT_GT(statistics.c2h_data_pdus, 0U);
    });

    // A Disconnect of I/O queue 4 (in its group): its queue leaves the controller, and a new
    // connection connects it again
    spec::disconnect_command disconnect{};
    disconnect.cdw0.set(spec::command_dword0::opc, spec::fabrics_command_opcode);
    disconnect.fctype = spec::fabrics_command_type::disconnect;
    EXPECT_TRUE(hosts[0].io(4).execute(std::bit_cast<spec::submission_queue_entry>(disconnect), {}, {}).ok());
    const auto queues_of_first = [&] {
        std::size_t queues = 0;
        served.with([&](target_type& target) {
            target.for_each_controller([&](const target_type::controller_view& view) {
                if (view.host_nqn == host_nqn(1)) {
                    queues = view.qids.size() - 1;
                }
            });
        });
        return queues;
    };
    const auto deadline = std::chrono::steady_clock::now() + hang_guard;
    while (queues_of_first() != 3 && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds{1});
    }
    EXPECT_EQ(queues_of_first(), 3U);
    ASSERT_TRUE(hosts[0].connect_io(4).ok());
    EXPECT_EQ(queues_of_first(), 4U);
    const auto again = run_worker(hosts[0], 4, 3, 10, stop);
    EXPECT_EQ(again.failure, "");
    EXPECT_EQ(again.verified, 10U);
}

TEST(tcp_target_groups, a_reset_and_an_ended_association_while_others_run_io)
{
    grouped_target served{4};
    auto steady = served.host(1);
    bring_up(steady, tcp_host::max_io_queues);
    std::atomic<bool> stop_steady{false};
    std::vector<worker_result> steady_results(tcp_host::max_io_queues);
    nvmekit_test::thread_group steady_workers{steady_results.size(), [&](std::size_t i) {
                                                  steady_results[i] =
                                                      run_worker(steady, static_cast<std::uint16_t>(1 + i), i,
                                                                 1'000'000, stop_steady);
                                              }};

    // A Controller Reset of another controller while its queues and the steady host's run I/O
    {
        // The commands the reset ends go unanswered: the workers wait this long for them.
        auto reset = served.host(2, std::chrono::milliseconds{3000});
        bring_up(reset, tcp_host::max_io_queues);
        const std::atomic<bool> never{false};
        std::vector<worker_result> results(tcp_host::max_io_queues);
        std::vector<std::atomic<std::size_t>> progress(results.size());
        {
            const nvmekit_test::thread_group workers{results.size(), [&](std::size_t i) {
                                                         results[i] = run_worker(
                                                             reset, static_cast<std::uint16_t>(1 + i), 4 + i,
                                                             1'000'000, never, true, &progress[i]);
                                                     }};
            await_progress(progress, 2); // every queue has I/O under way
            reset.set_property(spec::register_offset::cc, 0);
            while (spec::csts_register{
                static_cast<std::uint32_t>(reset.get_property(spec::register_offset::csts))}
                       .get(spec::csts_register::rdy)) {
                std::this_thread::yield();
            }
            // The workers stop at their queue's first failed or unanswered command.
        }
        for (const auto& r : results) {
            EXPECT_EQ(r.failure, "");
        }
        // Enabled again: the I/O queues connect again (on new connections) and serve verified I/O
        reset.enable();
        for (std::uint16_t qid = 1; qid <= tcp_host::max_io_queues; ++qid) {
            // The old connections are still open: the queues are new ones of the same QIDs
            ASSERT_TRUE(reset.connect_io(qid).ok()) << "qid " << qid;
        }
        const std::atomic<bool> no{false};
        for (std::uint16_t qid = 1; qid <= tcp_host::max_io_queues; ++qid) {
            const auto again = run_worker(reset, qid, 4 + qid - 1, 10, no);
            EXPECT_EQ(again.failure, "");
            EXPECT_EQ(again.verified, 10U);
        }
    } // the host goes: every connection of its association closes

    // An association the target ends (its host no longer allowed) while its queues run I/O
    {
        auto ended = served.host(3);
        bring_up(ended, tcp_host::max_io_queues);
        const std::atomic<bool> never{false};
        std::vector<worker_result> results(tcp_host::max_io_queues);
        std::vector<std::atomic<std::size_t>> progress(results.size());
        {
            const nvmekit_test::thread_group workers{results.size(), [&](std::size_t i) {
                                                         results[i] = run_worker(
                                                             ended, static_cast<std::uint16_t>(1 + i), 8 + i,
                                                             1'000'000, never, true, &progress[i]);
                                                     }};
            await_progress(progress, 2); // every queue has I/O under way
            served.with([&](target_type& target) {
                EXPECT_TRUE(target.set_host_access(nqn, {.any = false, .hosts = {host_nqn(1), host_nqn(2)}}));
            });
        }
        for (const auto& r : results) {
            EXPECT_EQ(r.failure, "");
            EXPECT_GT(r.verified, 0U);
        }
    }

    stop_steady.store(true, std::memory_order_release);
    steady_workers.join();
    for (std::size_t i = 0; i < steady_results.size(); ++i) {
        EXPECT_EQ(steady_results[i].failure, "") << "steady worker " << i;
        EXPECT_GT(steady_results[i].verified, 0U) << "steady worker " << i;
    }
    // Only the steady host's controller is left, with its four queues, once the ended ones are gone
    const auto deadline = std::chrono::steady_clock::now() + hang_guard;
    std::size_t associations = 0;
    do {
        associations = served.with([](target_type& target) { return target.association_count(); });
    } while (associations != 1 && std::chrono::steady_clock::now() < deadline);
    EXPECT_EQ(associations, 1U);
    served.with([&](target_type& target) {
        target.for_each_controller([&](const target_type::controller_view& view) {
            EXPECT_EQ(view.host_nqn, host_nqn(1));
            EXPECT_EQ(view.qids.size(), 1U + tcp_host::max_io_queues);
        });
        // Removing the subsystem ends the last association through the groups before it returns
        EXPECT_TRUE(target.remove_subsystem(nqn));
        EXPECT_EQ(target.association_count(), 0U);
    });
}

TEST(tcp_target_groups, queues_of_every_group_share_a_tight_buffer_budget_and_all_verify)
{
    // Room for three 64 KiB commands of the eight queues' (and their storage kept for reuse):
    // commands wait, and storage kept by one group's connections goes back for another's.
    constexpr std::size_t budget = 192 * 1024;
    grouped_target served{3, [](tcp::target_options& options) { options.max_buffer_bytes = budget; }};
    {
        std::vector<tcp_host> hosts;
        hosts.push_back(served.host(1));
        hosts.push_back(served.host(2));
        for (auto& host : hosts) {
            bring_up(host, tcp_host::max_io_queues);
        }
        const std::atomic<bool> stop{false};
        std::vector<worker_result> results(2 * tcp_host::max_io_queues);
        {
            const nvmekit_test::thread_group workers{results.size(), [&](std::size_t i) {
                                                         auto& host = hosts[i / tcp_host::max_io_queues];
                                                         const auto qid = static_cast<std::uint16_t>(
                                                             1 + i % tcp_host::max_io_queues);
                                                         results[i] = run_worker(host, qid, i, 30, stop);
                                                     }};
        }
        for (std::size_t i = 0; i < results.size(); ++i) {
            EXPECT_EQ(results[i].failure, "") << "worker " << i;
            EXPECT_EQ(results[i].verified, 30U) << "worker " << i;
        }
        const auto statistics = served.with([](target_type& target) { return target.statistics(); });
        EXPECT_GT(statistics.buffer_waits, 0U);
        // In-capsule data (4 KiB writes here, one at a time per queue) is taken whatever the budget.
        EXPECT_LE(statistics.buffer_bytes_peak, budget + results.size() * 8192U);
    }
    // The hosts are gone: so are their associations and every byte of their buffers.
    const auto deadline = std::chrono::steady_clock::now() + hang_guard;
    while (served.with([](target_type& target) { return target.association_count(); }) != 0 &&
           std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds{1});
    }
    EXPECT_EQ(served.with([](target_type& target) { return target.statistics().buffer_bytes; }), 0U);
}

TEST(tcp_target_groups, connection_groups_need_the_multi_threaded_policy)
{
    tcp::target_options options;
    options.port = 0;
    options.connection_groups = 2;
    EXPECT_THROW(tcp::target<> target{options}, std::invalid_argument);
}

} // namespace transport_tcp_target_groups_test
} // namespace
