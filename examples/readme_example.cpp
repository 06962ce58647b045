// README.md's example ("Using nvmekit from another project"), line for line: the package tests
// build and run it against every form of the installed library, and package.readme_example fails
// when README's code block and this file differ (lines after these comments).
// clang-format off
#include <nvmekit/nvmekit.hpp>   // the controller, subsystem, backends and testing providers
namespace nt = nvmekit::testing;
struct traits : nvmekit::default_traits {
    using dma = nt::flat_memory; using interrupts = nt::recording_msix; using clock = nt::manual_clock;
};
int main() {
    nt::flat_memory memory; memory.add_range(0x100000, 16 << 20);
    nt::recording_msix msix; nt::manual_clock clock;
    nvmekit::subsystem<nvmekit::any_backend> subsystem{{.nqn = "nqn.2026-11.io.example:disk"}};
    subsystem.add_namespace(nvmekit::ram_backend{std::uint64_t{1} << 40});   // 1 TiB, sparse: NSID 1
    nvmekit::controller<traits> ctrl{memory, msix, clock, subsystem};   // your DMA/MSI-X/clock in an embedder
    nt::in_process_host host{ctrl, memory, clock};
    host.bring_up({.io_queue_pairs = 2});                    // CC.EN, admin queue, Identify, queues
    const auto buffer = host.allocate(4096);
    auto read = host.lba_command(nvmekit::spec::nvm_opcode::read, 1, /*slba*/ 0, /*blocks*/ 8);
    read.dptr = host.build_prps(buffer, 4096);
    return host.io(1, read).ok() ? 0 : 1;
}
