// A program that uses nvmekit's SystemC TLM-2.0 device (nvmekit::systemc) as an installed package:
// a host program enables the device's BAR0 through configuration space and reads VS over TLM.
#include <nvmekit/systemc/host_platform.hpp>
#include <nvmekit/systemc/nvme_device.hpp>
#include <nvmekit/testing/flat_memory.hpp>
#include <nvmekit/testing/recording_msix.hpp>

#include <cstdint>
#include <cstdio>

// libsystemc refers to sc_main; this program's main() runs the simulation itself.
int sc_main(int /*argc*/, char* /*argv*/[]) { return 1; }

int main()
{
    nvmekit::systemc::nvme_device<> device{"nvme"};
    nvmekit::systemc::host_bus bus{"bus"};
    sc_core::sc_signal<bool> intx{"intx"};
    bus.bar0_socket.bind(device.bar0_socket);
    bus.config_socket.bind(device.config_socket);
    device.intx.bind(intx);
    // The device masters nothing here: its DMA socket ends in a target that answers every access
    // with an error, as an unpopulated bus would.
    nvmekit::testing::flat_memory memory;
    nvmekit::testing::recording_msix msix;
    nvmekit::systemc::host_memory<nvmekit::testing::recording_msix> ram{"ram", memory, msix};
    device.dma_socket.bind(ram.socket);

    std::uint64_t version = 0;
    nvmekit::systemc::host_program program{"host", [&] {
                                               bus.enumerate(0xf0000000);
                                               version = bus.mmio_read(0x08, 4);
                                           }};
    sc_core::sc_start();
    std::printf("VS %08llx\n", static_cast<unsigned long long>(version));
    return version == 0x00020000U ? 0 : 1;
}
