// README.md's SystemC example (section "SystemC TLM-2.0"), line for line: it is built and run when
// SystemC is found, and package.readme_systemc_example fails when README's code block and this
// file differ (lines after these comments).
// clang-format off
#include <nvmekit/backends/ram_backend.hpp>
#include <nvmekit/backends/timed_backend.hpp>
#include <nvmekit/systemc/host_platform.hpp>
#include <nvmekit/systemc/nvme_device.hpp>
#include <nvmekit/testing/host.hpp>
#include <nvmekit/timing/simple_model.hpp>
#include <cstdio>

namespace sysc = nvmekit::systemc;
using namespace std::chrono_literals;
using timed_ram = nvmekit::timed_backend<nvmekit::ram_backend, nvmekit::timing::simple_model, sysc::simulation_clock>;
using msix_sink = nvmekit::testing::recording_msix;

int sc_main(int, char*[])
{
    nvmekit::testing::flat_memory memory;                   // host RAM: 16 MiB at 1 MiB
    memory.add_range(0x100000, 16 << 20);
    msix_sink msix;                                         // the MSI-X messages that reach it
    sysc::host_memory<msix_sink> ram{"ram", memory, msix};  // a TLM target: b_transport and nb_transport
    sysc::nvme_device<sysc::at_device_traits> nvme{"nvme"}; // approximately timed; device_traits: loosely
    sysc::host_bus bus{"bus"};                              // the host CPU's configuration and BAR0 accesses
    sc_core::sc_signal<bool> intx{"intx"};
    nvme.dma_socket.bind(ram.socket);                       // DMA and MSI-X writes into host memory
    bus.config_socket.bind(nvme.config_socket);
    bus.bar0_socket.bind(nvme.bar0_socket);
    nvme.intx.bind(intx);
    bus.wake_on(ram.msi_event());                           // an MSI-X write wakes the host

    auto& ns = nvme.subsystem().add_namespace(timed_ram{nvmekit::ram_backend{64 << 20},
        nvmekit::timing::simple_model{{.read_latency = 80us, .transfer_bytes_per_second = 2'000'000'000}},
        nvme.clock(), 64});                                 // completion times in simulated time
    const timed_ram* timed = ns.backend().get_if<timed_ram>();
    nvme.set_next_due([timed] { return timed->next_due(); });  // poll exactly when one is due

    bool ok = false;
    sysc::host_program program{"host", [&] {               // the in-process host driver, over TLM
        bus.enumerate(0xf0000000);                          // BAR0, Memory Space and Bus Master Enable
        nvmekit::testing::manual_clock clock;
        nvmekit::testing::in_process_host<sysc::host_bus> host{bus, memory, clock, msix};
        host.bring_up();
        auto read = host.lba_command(nvmekit::spec::nvm_opcode::read, 1, 0, 8);
        host.describe_data(read, host.allocate(4096), 4096);
        const sc_core::sc_time start = sc_core::sc_time_stamp();
        ok = host.io(1, read).ok();
        std::printf("4 KiB read: %s in %s\n", ok ? "ok" : "failed", (sc_core::sc_time_stamp() - start).to_string().c_str());
    }};
    sc_core::sc_start();
    return ok ? 0 : 1;
}
