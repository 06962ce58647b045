#pragma once
/// The rigs that run the controller tests' typed suites on nvme_device under TLM: included by
/// controller_fixture.hpp in place of its own transport_rigs and pcie_rigs when
/// NVMEKIT_TEST_SYSTEMC_RIGS is defined (tests/CMakeLists.txt builds the command-set, bring-up and
/// reset test sources a second time so), so the same TYPED_TESTs run over the device, loosely
/// timed (systemc_lt) and approximately timed (systemc_at).
///
/// The test's own thread is the host CPU: its BAR0 and configuration accesses are b_transport
/// calls made between simulation steps (host_bus in stepping mode), and simulated time follows the
/// rig's manual clock, which the host driver and the tests advance: before each access and each
/// host poll the simulation runs up to the clock's time (sc_start), the device's thread polling
/// its controller and moving data by DMA transactions meanwhile. SystemC elaborates one design per
/// process: a rig skips its test when a simulation already ran in the process (ctest runs each
/// test in a process of its own).

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include <systemc>
#include <tlm>

#include <nvmekit/systemc/host_platform.hpp>
#include <nvmekit/systemc/nvme_device.hpp>

namespace nvmekit_test {

/// `Traits` (a test's limits and backend) with the providers of nvme_device, LT or AT.
template <typename Traits, bool ApproximatelyTimed>
struct systemc_traits : Traits {
    using dma =
        std::conditional_t<ApproximatelyTimed, nvmekit::systemc::tlm_async_dma, nvmekit::systemc::tlm_dma>;
    using interrupts = nvmekit::systemc::tlm_interrupts;
    using clock = nvmekit::systemc::simulation_clock;
    using threading = nvmekit::single_threaded;
};

/// The PCIe rig of the typed suites with the controller inside nvme_device (see the top of this
/// header): the members and helpers basic_rig has, the controller reached through TLM.
template <typename Traits, bool ApproximatelyTimed>
struct systemc_rig : rig_helpers<systemc_rig<Traits, ApproximatelyTimed>>,
                     pcie_helpers<systemc_rig<Traits, ApproximatelyTimed>> {
    using device_type = nvmekit::systemc::nvme_device<systemc_traits<Traits, ApproximatelyTimed>>;
    using controller_type = typename device_type::controller_type;
    using host_type = nvmekit::testing::in_process_host<nvmekit::systemc::host_bus>;
    template <typename OtherTraits>
    using with_traits = systemc_rig<OtherTraits, ApproximatelyTimed>;
    static constexpr const char* transport_name = ApproximatelyTimed ? "systemc_at" : "systemc_lt";
    static constexpr bool hands_commands_over = false;
    static constexpr std::uint64_t bar0_address = 0xf000'0000;

    host_memory memory;
    nvmekit::testing::manual_clock clock; ///< the host driver's and the test backends' clock
    nvmekit::testing::recording_msix msix;
    typename controller_type::subsystem_type subsystem;
    nvmekit::systemc::host_memory<nvmekit::testing::recording_msix> ram;
    /// What the device's DMA did, as host memory counted it (a suite's `r.dma.reads()`).
    const nvmekit::systemc::host_memory<nvmekit::testing::recording_msix>& dma = ram;
    device_type device;
    nvmekit::systemc::host_bus bus;
    sc_core::sc_signal<bool> intx;
    controller_type& ctrl;
    host_type host;

    explicit systemc_rig(nvmekit::controller_config config = {}, std::size_t size = memory_size,
                         std::uint64_t base = memory_base, nvmekit::subsystem_identity identity = {},
                         nvmekit::subsystem_options subsystem_options = {})
        : memory{size, base}
        , subsystem{std::move(identity), subsystem_options}
        , ram{"ram", memory, msix}
        , device{"nvme", subsystem, {}, config}
        , bus{"bus"}
        , intx{"intx"}
        , ctrl{device.controller()}
        , host{bus, memory, clock, msix}
    {
        device.dma_socket.bind(ram.socket);
        bus.bar0_socket.bind(device.bar0_socket);
        bus.config_socket.bind(device.config_socket);
        device.intx.bind(intx);
        bus.set_stepping(&clock);
        bus.enumerate(bar0_address);
    }
    systemc_rig(const systemc_rig&) = delete;
    systemc_rig& operator=(const systemc_rig&) = delete;

    /// Why a rig cannot be built now: SystemC elaborates one design per process.
    [[nodiscard]] static const char* unavailable()
    {
        return sc_core::sc_get_curr_simcontext()->elaboration_done()
                   ? "a simulation already ran in this process; run one test per process"
                   : nullptr;
    }

    [[nodiscard]] nvmekit::spec::csts_register csts() { return host.csts(); }

    /// Another controller of the subsystem, in process (its host memory the rig's, its interrupts
    /// `interrupts`): the simulation elaborates no second device once it has started.
    [[nodiscard]] auto make_peer(nvmekit::testing::recording_msix& interrupts)
    {
        return std::make_unique<nvmekit::controller<Traits>>(memory, interrupts, clock, subsystem);
    }

    /// One step: the simulation catches up with the rig's clock (rig_helpers).
    void step() { bus.poll(); }

    /// A 32-bit register read through BAR0.
    [[nodiscard]] std::uint32_t read32(nvmekit::spec::register_offset offset)
    {
        return static_cast<std::uint32_t>(bus.mmio_read(static_cast<std::uint64_t>(offset), 4));
    }
    void write32(nvmekit::spec::register_offset offset, std::uint32_t value)
    {
        bus.mmio_write(static_cast<std::uint64_t>(offset), 4, value);
    }
    /// A BAR0 access of `width` bytes at `offset`, through TLM.
    [[nodiscard]] std::uint64_t mmio_read(std::uint64_t offset, unsigned width)
    {
        return bus.mmio_read(offset, width);
    }
    void mmio_write(std::uint64_t offset, unsigned width, std::uint64_t value)
    {
        bus.mmio_write(offset, width, value);
    }
    /// A Function Level Reset as the host makes one: Initiate Function Level Reset in the PCI
    /// Express capability's Device Control, then the configuration the reset cleared restored
    /// (BAR0, Memory Space and Bus Master Enable), as an operating system does around an FLR.
    void function_level_reset()
    {
        const std::uint32_t device_control =
            nvmekit::pci::pci_express_capability_offset + nvmekit::pci::pci_express_register::device_control;
        bus.config_write(device_control, 2, 0x8000U | bus.config_read(device_control, 2));
        bus.enumerate(bar0_address);
    }

    [[nodiscard]] nvmekit::spec::completion_queue_entry cqe_at(std::uint16_t cqid, std::uint32_t index)
    {
        return memory.template load<nvmekit::spec::completion_queue_entry>(
            host.completion_entry_address(cqid, index));
    }
};

using systemc_lt_rig = systemc_rig<test_traits, false>;
using systemc_at_rig = systemc_rig<test_traits, true>;

/// The transports the typed suites run over in this build.
using transport_rigs = ::testing::Types<systemc_lt_rig, systemc_at_rig>;
/// The PCIe rigs of the bring-up and reset suites in this build: the same two.
using pcie_rigs = transport_rigs;

} // namespace nvmekit_test
