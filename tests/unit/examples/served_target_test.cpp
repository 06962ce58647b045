#include "served_target.hpp"

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <unistd.h>

#include <nvmekit/backends/ram_backend.hpp>
#include <nvmekit/testing/tcp_host.hpp>
#include <nvmekit/testing/vfio_user_client.hpp>

// nvmekit-serve's managed loop (examples/served_target.hpp): what management builds, served
// from the test's thread as the program serves it from its main thread, with hosts on a thread
// of their own.

namespace {
namespace examples_served_target_test {

namespace rpc = nvmekit::rpc;
namespace spec = nvmekit::spec;
using nvmekit::testing::tcp_host;

/// The controllers of the VFIOUSER functions, as nvmekit-serve's.
struct function_traits : nvmekit::default_traits {
    using dma = nvmekit::transport::mapped_memory;
    using interrupts = nvmekit::transport::eventfd_interrupts;
    using clock = nvmekit::steady_clock;
    static constexpr nvmekit::limits limits{
        .io_queues = 64, .queue_entries = 4096, .mdts = 5, .msix_vectors = 65, .aerl = 3};
};
/// Those NVMe/TCP hosts create, with what SPDK's TCP transport grants by default.
struct tcp_traits : nvmekit::transport::tcp::target_traits {
    static constexpr nvmekit::limits limits{
        .io_queues = 127, .queue_entries = 4096, .mdts = 5, .msix_vectors = 128, .aerl = 3};
};
using served_type = nvmekit_serve::served_target<function_traits, tcp_traits>;

constexpr std::string_view subsystem_nqn = "nqn.2026-11.io.nvmekit:served";

/// A TCP listener address on port 0 (any free port; served_target::tcp_port tells which).
rpc::nvmf_listen_address tcp_listener(std::string address)
{
    return {.trtype = "TCP", .adrfam = "IPv4", .traddr = std::move(address), .trsvcid = "0"};
}

/// A subsystem with one RAM namespace, any host allowed, served at `listeners` by a served
/// target made on this thread (the loop's) from a registry with the default transports.
class rig {
public:
    explicit rig(const std::vector<rpc::nvmf_listen_address>& listeners)
    {
        registry_.add_transport(rpc::default_transport("TCP"));
        registry_.add_transport(rpc::default_transport("VFIOUSER"));
        subsystem_.add_namespace(nvmekit::any_backend{nvmekit::ram_backend{std::uint64_t{4} << 20}});
        record_ = {.nqn = std::string{subsystem_nqn}, .allow_any_host = true, .listeners = listeners};
        served_.adopt(record_, subsystem_, [] {});
    }

    [[nodiscard]] served_type& served() { return served_; }
    [[nodiscard]] const rpc::nvmf_subsystem& record() const { return record_; }

    /// Runs `work` on a thread of its own while this thread runs run_once(`wait`): each wait ends
    /// only by what a descriptor or a change handed over signals. `work` ends by handing over a
    /// change (nvmf_get_stats, as management asks), which wakes the loop. Rethrows what `work`
    /// threw.
    template <typename Work>
    void serve_while(std::chrono::milliseconds wait, Work&& work)
    {
        auto hooks = served_.hooks();
        std::atomic<bool> worked{false};
        std::atomic<bool> woken{false};
        std::exception_ptr failure;
        std::thread worker{[&] {
            try {
                work();
            } catch (...) {
                failure = std::current_exception();
            }
            worked.store(true);
            static_cast<void>(hooks.stats());
            woken.store(true);
        }};
        while (!worked.load()) {
            served_.run_once(wait);
        }
        while (!woken.load()) {
            served_.run_once(std::chrono::milliseconds{0}); // runs the change handed over
        }
        worker.join();
        if (failure) {
            std::rethrow_exception(failure);
        }
    }

private:
    rpc::nvmf_registry registry_;
    nvmekit::subsystem<nvmekit::any_backend> subsystem_{{.nqn = std::string{subsystem_nqn}}};
    rpc::nvmf_subsystem record_;
    served_type served_{registry_, {}, {}};
};

/// A host of the subsystem at `address`:`port`, connected, enabled, with I/O queue 1.
std::unique_ptr<tcp_host> connected_host(const std::string& address, std::uint16_t port)
{
    nvmekit::testing::tcp_host_options options;
    options.subsystem_nqn = std::string{subsystem_nqn};
    options.timeout = std::chrono::seconds{30}; // a hang guard, not a measure
    auto host = std::make_unique<tcp_host>(address, port, options);
    host->connect_admin();
    host->enable();
    if (!host->connect_io(1).ok()) {
        throw nvmekit::testing::host_error{"I/O Connect failed"};
    }
    return host;
}

/// A write and a read back through I/O queue 1 of `host`.
void check_io(tcp_host& host, unsigned seed)
{
    std::vector<std::byte> data(4096);
    for (std::size_t i = 0; i < data.size(); ++i) {
        data[i] = static_cast<std::byte>((i * 7U + seed) & 0xffU);
    }
    if (!host.write(1, seed, data).ok()) {
        throw nvmekit::testing::host_error{"Write failed"};
    }
    std::vector<std::byte> back;
    if (!host.read(1, seed, 8, back).ok() || back != data) {
        throw nvmekit::testing::host_error{"Read did not return what was written"};
    }
}

TEST(served_target, an_idle_connected_host_leaves_the_loop_waiting_in_poll)
{
    const std::vector<rpc::nvmf_listen_address> listeners{tcp_listener("127.0.0.1"),
                                                          tcp_listener("127.0.0.2")};
    rig r{listeners};
    std::vector<std::unique_ptr<tcp_host>> hosts;
    std::vector<std::uint16_t> ports;
    for (const auto& a : listeners) {
        ports.push_back(r.served().tcp_port(a));
        ASSERT_NE(ports.back(), 0U);
    }
    // A wait far longer than the test: every step of the hosts, at either listener, is served
    // because its connection's descriptor (or the listener's) ends the wait.
    constexpr std::chrono::milliseconds forever{60'000};
    r.serve_while(forever, [&] {
        for (std::size_t i = 0; i < listeners.size(); ++i) {
            hosts.push_back(connected_host(listeners[i].traddr, ports[i]));
            check_io(*hosts.back(), static_cast<unsigned>(i));
        }
        // As the Linux host does, one keeps an Asynchronous Event Request outstanding.
        auto event_request = tcp_host::async_event_request_command();
        event_request.cdw0.set(spec::command_dword0::cid, 900);
        event_request.cdw0.set(spec::command_dword0::psdt, spec::data_pointer_type::sgl_contiguous_metadata);
        event_request.dptr = spec::to_data_pointer(
            spec::sgl_descriptor::transport_data_block(0, nvmekit::testing::tcp_queue::transport_subtype));
        hosts[0]->admin().send_capsule(event_request, {});
        static_cast<void>(hosts[0]->get_property(spec::register_offset::csts)); // it has arrived
    });

    // The hosts stay connected with nothing under way: each round waits out its idle wait in
    // poll(2). A loop that does not wait makes many thousands of rounds in a second; one that
    // waits, about five (fewer under load, never more).
    constexpr std::chrono::milliseconds idle{200};
    int rounds = 0;
    const auto start = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - start < std::chrono::seconds{1}) {
        r.served().run_once(idle);
        ++rounds;
    }
    EXPECT_LE(rounds, 20);

    // ... and a command of an idle host ends a long wait.
    r.serve_while(forever, [&] {
        check_io(*hosts[1], 7);
        check_io(*hosts[0], 8);
    });
}

TEST(served_target, its_controllers_offer_no_nvm_subsystem_reset)
{
    std::string directory = "/tmp/nvmekit-served-XXXXXX";
    ASSERT_NE(::mkdtemp(directory.data()), nullptr);
    const auto listener = tcp_listener("127.0.0.1");
    {
        rig r{{listener}};
        // A VFIOUSER listener of the subsystem, added as nvmf_subsystem_add_listener adds it.
        auto hooks = r.served().hooks();
        hooks.listener_added(r.record(), {.trtype = "VFIOUSER", .traddr = directory});
        const std::uint16_t port = r.served().tcp_port(listener);
        // Management never enables NVM Subsystem Reset (SPDK's enable_nssr is accepted only
        // false): CAP.NSSRS reads 0 over either transport.
        std::uint64_t tcp_cap = 0;
        std::optional<std::uint64_t> function_cap;
        r.serve_while(std::chrono::milliseconds{60'000}, [&] {
            auto host = connected_host(listener.traddr, port);
            tcp_cap = host->get_property(spec::register_offset::cap, 8);
            nvmekit::testing::vfio_user_client client{directory + "/cntrl"};
            if (client.negotiate() != 0 || !client.enable_function()) {
                throw nvmekit::testing::host_error{"vfio-user negotiation or Memory Space Enable failed"};
            }
            function_cap = client.region_read(nvmekit::transport::vfio_user::region_index::bar0, 0, 8);
        });
        EXPECT_FALSE(spec::cap_register{tcp_cap}.get(spec::cap_register::nssrs));
        ASSERT_TRUE(function_cap.has_value());
        EXPECT_FALSE(spec::cap_register{*function_cap}.get(spec::cap_register::nssrs));
        EXPECT_EQ(spec::cap_register{*function_cap}.max_queue_entries(), 256U); // BAR0 decodes
    }
    ::rmdir(directory.c_str());
}

} // namespace examples_served_target_test
} // namespace
