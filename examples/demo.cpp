// nvmekit-demo: an emulated NVMe controller on flat host memory, brought up by the in-process host
// the way the Linux nvme-pci driver does it. Each step is logged, then the negotiated queues, a
// few commands on them, a controller reset and a clean shutdown.
#include <nvmekit/controller.hpp>
#include <nvmekit/format.hpp>
#include <nvmekit/testing/flat_memory.hpp>
#include <nvmekit/testing/host.hpp>
#include <nvmekit/testing/manual_clock.hpp>
#include <nvmekit/testing/recording_msix.hpp>

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdint>

namespace spec = nvmekit::spec;
namespace nt = nvmekit::testing;

namespace {

struct demo_traits : nvmekit::default_traits {
    using dma = nt::flat_memory;
    using interrupts = nt::recording_msix;
    using clock = nt::manual_clock;
    static constexpr nvmekit::limits limits{.io_queues = 8, .queue_entries = 1024, .msix_vectors = 9};
};

} // namespace

int main()
{
    spdlog::set_pattern("[%l] %v");
    spdlog::info("nvmekit {}.{}.{}: an emulated NVMe controller and the in-process host", NVMEKIT_VERSION_MAJOR,
                 NVMEKIT_VERSION_MINOR, NVMEKIT_VERSION_PATCH);

    nt::flat_memory memory;
    memory.add_range(0x1'0000'0000, 64 << 20);
    nt::recording_msix msix;
    nt::manual_clock clock;
    nvmekit::controller_config config{};
    config.ready_delay = std::chrono::milliseconds{5};
    nvmekit::controller<demo_traits> controller{memory, msix, clock, config};
    spdlog::info("controller: BAR0 {} KiB, MSI-X table at 0x{:x}, PBA at 0x{:x}", controller.bar0_size() / 1024,
                 controller.msix_table_offset(), controller.msix_pba_offset());

    nt::in_process_host host{controller, memory, clock, msix}; // reaps a CQ when its vector fires
    host.on_step([](std::string_view step) { spdlog::info("host: {}", step); });
    const auto result = host.bring_up({.io_queue_pairs = 4, .io_entries = 128, .shadow_doorbells = true});
    spdlog::info("negotiated: {} I/O queue pairs of 128 entries (granted {} SQs / {} CQs), RDY after {} ms",
                 result.io_queue_pairs, result.submission_queues_granted, result.completion_queues_granted,
                 std::chrono::duration_cast<std::chrono::milliseconds>(clock.now()).count());
    spdlog::info("identify: {}", spec::text_of(result.identify.mn));

    const auto queues = host.admin(
        host.get_features_command(spec::feature_id::number_of_queues, spec::feature_select::current));
    spdlog::info("get features number of queues -> {} dw0={}", queues.status(),
                 spec::number_of_queues{queues.cqe.dw0});
    for (std::uint16_t qid = 1; qid <= result.io_queue_pairs; ++qid) {
        auto read = host.command(spec::nvm_opcode::read, 1);
        spec::read_view{.starting_lba = 0, .block_count = 8}.encode(read);
        read.dptr = host.build_prps(host.allocate(4096), 4096);
        const auto completion = host.io(qid, read);
        read.cdw0.set(spec::command_dword0::cid, completion.cqe.cid);
        spdlog::info("queue {}: {} -> {}", qid, spec::io_command{read}, completion.status());
    }
    spdlog::info("(no namespace is attached yet, so I/O completes with Invalid Namespace or Format)");

    host.disable();
    spdlog::info("controller reset: {}; requests in use {}", spec::csts_register{host.read32(spec::register_offset::csts)},
                 controller.requests_in_use());
    host.bring_up({.io_queue_pairs = 2});
    host.shut_down();
    spdlog::info("after shutdown: {}", spec::csts_register{host.read32(spec::register_offset::csts)});

    const auto& stats = controller.statistics();
    spdlog::info("statistics: {} commands, {} completions, {} MSI-X interrupts, {} host protocol errors",
                 stats.commands, stats.completions_posted, msix.events().size(), stats.host_protocol_errors);
    return 0;
}
