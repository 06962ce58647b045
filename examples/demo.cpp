// nvmekit-demo: an emulated NVMe controller on flat host memory, brought up by the in-process host
// the way the Linux nvme-pci driver does it. A subsystem with a 1 GiB sparse RAM namespace, then
// what `nvme id-ctrl` and `nvme id-ns` would print, a short random read/write workload on several
// queues whose reads are checked against a shadow of every write, the SMART log as `nvme
// smart-log` prints it, and a clean shutdown. Exits non-zero when a command fails or a read
// returns other data than was written.
#include "block_pattern.hpp"
#include "command_line.hpp"

#include <nvmekit/backends/ram_backend.hpp>
#include <nvmekit/controller.hpp>
#include <nvmekit/format.hpp>
#include <nvmekit/storage/subsystem.hpp>
#include <nvmekit/testing/flat_memory.hpp>
#include <nvmekit/testing/host.hpp>
#include <nvmekit/testing/manual_clock.hpp>
#include <nvmekit/testing/recording_msix.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <exception>
#include <random>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <unistd.h>

namespace spec = nvmekit::spec;
namespace nt = nvmekit::testing;

namespace {

struct demo_traits : nvmekit::default_traits {
    using dma = nt::flat_memory;
    using interrupts = nt::recording_msix;
    using clock = nt::manual_clock;
    static constexpr nvmekit::limits limits{.io_queues = 8, .queue_entries = 1024, .msix_vectors = 9};
};

using controller_type = nvmekit::controller<demo_traits>;
using host_type = nt::in_process_host<controller_type>;

constexpr std::uint64_t host_memory_base = 0x1'0000'0000;
constexpr std::size_t host_memory_bytes = std::size_t{64} << 20;
constexpr std::uint64_t namespace_bytes = std::uint64_t{1} << 30;
constexpr std::uint8_t lba_format_4k = 2; // supported_lba_formats[2]: 4096-byte blocks, no metadata
constexpr std::uint32_t block_bytes = 4096;
constexpr std::uint32_t nsid = 1;

constexpr std::uint16_t queue_pairs = 4;
constexpr std::size_t queue_depth = 32; // commands in flight per queue
constexpr std::uint64_t total_commands = 32768;
constexpr std::size_t progress_width = 20;

// ---- identify tables, in the manner of nvme-cli -------------------------------------------------

void print_id_ctrl(const spec::identify_controller& id)
{
    const auto row = [](std::string_view name, const auto& value) {
        fmt::print("{:<9} : {}\n", name, value);
    };
    fmt::print("\nNVMe Identify Controller:\n");
    row("vid", fmt::format("{:#06x}", id.vid));
    row("ssvid", fmt::format("{:#06x}", id.ssvid));
    row("sn", id.serial_number());
    row("mn", id.model_number());
    row("fr", id.firmware_revision());
    row("mdts", fmt::format("{} ({} KiB)", id.mdts, (std::uint64_t{4} << id.mdts)));
    row("cntlid", fmt::format("{:#x}", id.cntlid));
    row("ver", fmt::format("{:#x} ({}.{}.{})", id.ver, id.ver >> 16, (id.ver >> 8) & 0xffU, id.ver & 0xffU));
    row("oacs", id.oacs);
    row("oncs", id.oncs);
    row("sgls", fmt::format("{:#010x} {}", id.sgls.raw, id.sgls));
    row("nn", id.nn);
    row("vwc", fmt::format("{:#04x} {}", id.vwc.raw, id.vwc));
    row("frmw", fmt::format("{:#04x} {}", id.frmw.raw, id.frmw));
    row("lpa", id.lpa);
    row("elpe", fmt::format("{} ({} entries)", id.elpe, id.elpe + 1U));
    row("aerl", fmt::format("{} ({} requests)", id.aerl, id.aerl + 1U));
    row("kas", fmt::format("{} ({} ms)", id.kas, id.kas * 100U));
    row("wctemp", fmt::format("{} K ({} C)", id.wctemp, static_cast<int>(id.wctemp) - 273));
    row("cctemp", fmt::format("{} K ({} C)", id.cctemp, static_cast<int>(id.cctemp) - 273));
    row("subnqn", id.subsystem_nqn());
}

std::string hex_string(std::span<const std::uint8_t> bytes)
{
    std::string text;
    for (const std::uint8_t byte : bytes) {
        text += fmt::format("{:02x}", byte);
    }
    return text;
}

void print_id_ns(std::uint32_t id, const spec::identify_namespace& ns)
{
    const auto row = [](std::string_view name, const auto& value) {
        fmt::print("{:<9} : {}\n", name, value);
    };
    const auto block = std::uint64_t{1} << ns.formatted_lba_format().get(spec::lba_format::lbads);
    fmt::print("\nNVMe Identify Namespace {}:\n", id);
    row("nsze", fmt::format("{:#x} ({} blocks, {} MiB)", ns.nsze, ns.nsze, (ns.nsze * block) >> 20));
    row("ncap", fmt::format("{:#x}", ns.ncap));
    row("nuse", fmt::format("{:#x}", ns.nuse));
    row("nlbaf", ns.nlbaf);
    row("flbas", fmt::format("{:#x} (format {})", ns.flbas.raw, ns.flbas.format_index()));
    row("nguid", hex_string(ns.nguid));
    row("eui64", hex_string(ns.eui64));
    const std::size_t in_use = ns.flbas.format_index();
    for (std::size_t index = 0; index <= ns.nlbaf && index < ns.lbaf.size(); ++index) {
        fmt::print("lbaf {:>2}  : {}{}\n", index, ns.lbaf[index], index == in_use ? " (in use)" : "");
    }
}

// ---- the workload ----------------------------------------------------------------------------

struct workload_result {
    std::uint64_t commands = 0;
    std::uint64_t writes = 0;
    std::uint64_t reads = 0;
    std::uint64_t reads_of_written_blocks = 0;
    std::uint64_t errors = 0;
    std::uint64_t mismatches = 0;
    std::chrono::duration<double> elapsed{};
};

class random_workload {
public:
    random_workload(host_type& host, std::uint64_t blocks) : host_{host}, blocks_{blocks}
    {
        expected_.resize(block_bytes);
        for (std::uint16_t qid = 1; qid <= queue_pairs; ++qid) {
            auto& queue = queues_.emplace_back();
            queue.qid = qid;
            for (std::size_t i = 0; i < queue_depth; ++i) {
                const std::uint64_t buffer = host_.allocate(block_bytes);
                queue.slots.push_back(slot{.buffer = buffer, .dptr = host_.build_prps(buffer, block_bytes)});
                queue.free.push_back(i);
            }
        }
    }

    workload_result run()
    {
        const auto start = std::chrono::steady_clock::now();
        std::uint64_t submitted = 0;
        std::size_t shown = progress_width + 1; // no step shown yet
        while (result_.commands < total_commands) {
            for (auto& queue : queues_) {
                while (!queue.free.empty() && submitted < total_commands) {
                    const std::size_t index = queue.free.back();
                    queue.free.pop_back();
                    submit(queue, queue.slots[index]);
                    queue.in_flight.push_back(index);
                    ++submitted;
                }
            }
            // The oldest command of each queue; the host keeps what it reaps meanwhile.
            for (auto& queue : queues_) {
                if (queue.in_flight.empty()) {
                    continue;
                }
                const std::size_t index = queue.in_flight.front();
                queue.in_flight.pop_front();
                auto& command = queue.slots[index];
                check(command, host_.wait_for(queue.qid, command.cid));
                queue.free.push_back(index);
                ++result_.commands;
            }
            const std::size_t step =
                static_cast<std::size_t>(result_.commands * progress_width / total_commands);
            if (step != shown && result_.commands != total_commands && step % progress_step_ == 0) {
                shown = step;
                print_progress(std::chrono::steady_clock::now() - start);
            }
        }
        result_.elapsed = std::chrono::steady_clock::now() - start;
        print_progress(result_.elapsed);
        if (terminal_) {
            fmt::print("\n");
        }
        return result_;
    }

private:
    struct slot {
        std::uint64_t buffer = 0;
        spec::data_pointer dptr{};
        std::uint64_t lba = 0;
        std::uint32_t generation = 0; ///< written (write) or expected (read); 0: never written
        bool write = false;
        std::uint16_t cid = 0;
    };
    struct queue_state {
        std::uint16_t qid = 0;
        std::vector<slot> slots;
        std::vector<std::size_t> free;
        std::deque<std::size_t> in_flight; ///< in submission order
    };

    /// A block no command in flight touches, so that the order of completions cannot matter:
    /// reads go to a written block three times in four, else anywhere (unwritten blocks read 0).
    std::uint64_t pick_block(bool write)
    {
        for (;;) {
            std::uint64_t lba = 0;
            if (!write && !written_.empty() && random_() % 4 != 0) {
                lba = written_[random_() % written_.size()];
            } else {
                lba = random_() % blocks_;
            }
            if (busy_.insert(lba).second) {
                return lba;
            }
        }
    }

    void submit(queue_state& queue, slot& command)
    {
        command.write = random_() % 2 == 0;
        command.lba = pick_block(command.write);
        const auto found = generations_.find(command.lba);
        const std::uint32_t current = found == generations_.end() ? 0U : found->second;
        const auto buffer = host_.memory().bytes(command.buffer, block_bytes);
        if (command.write) {
            command.generation = current + 1U;
            nvmekit_programs::fill_pattern(buffer, command.lba, command.generation);
        } else {
            command.generation = current;
            std::fill(buffer.begin(), buffer.end(), std::byte{0xa5}); // stale data must not pass
        }
        const auto opcode = command.write ? spec::nvm_opcode::write : spec::nvm_opcode::read;
        auto sqe = host_type::lba_command(opcode, nsid, command.lba, 1);
        sqe.dptr = command.dptr;
        command.cid = host_.submit(queue.qid, sqe);
    }

    void check(const slot& command, const nt::completion& completion)
    {
        busy_.erase(command.lba);
        if (!completion.ok()) {
            if (result_.errors++ == 0) {
                report("{} of LBA {:#x} failed: {}", command.write ? "write" : "read", command.lba,
                       completion.status());
            }
            return;
        }
        if (command.write) {
            ++result_.writes;
            if (command.generation == 1) {
                written_.push_back(command.lba);
            }
            generations_[command.lba] = command.generation;
            return;
        }
        ++result_.reads;
        if (command.generation == 0) {
            std::fill(expected_.begin(), expected_.end(), std::byte{0}); // deallocated blocks read 0
        } else {
            ++result_.reads_of_written_blocks;
            nvmekit_programs::fill_pattern(expected_, command.lba, command.generation);
        }
        const auto data = host_.memory().bytes(command.buffer, block_bytes);
        if (!std::equal(data.begin(), data.end(), expected_.begin())) {
            if (result_.mismatches++ == 0) {
                report("read of LBA {:#x} returned other data than write #{} stored", command.lba,
                       command.generation);
            }
        }
    }

    /// The first failure of a kind, logged below the progress line.
    template <typename... Arguments>
    void report(fmt::format_string<Arguments...> format, Arguments&&... arguments) const
    {
        if (terminal_) {
            fmt::print("\n");
        }
        spdlog::error(format, std::forward<Arguments>(arguments)...);
    }

    /// One progress line, redrawn in place on a terminal and printed on a line of its own elsewhere.
    void print_progress(std::chrono::duration<double> elapsed) const
    {
        const std::size_t filled =
            static_cast<std::size_t>(result_.commands * progress_width / total_commands);
        fmt::print("{}[{:<{}}] {:3}%  {:6} cmds  {} errors  {} mismatches  {:.2f} s{}", terminal_ ? "\r" : "",
                   std::string(filled, '#'), progress_width, result_.commands * 100 / total_commands,
                   result_.commands, result_.errors, result_.mismatches, elapsed.count(),
                   terminal_ ? "" : "\n");
        std::fflush(stdout);
    }

    host_type& host_;
    std::uint64_t blocks_;
    bool terminal_ = isatty(fileno(stdout)) != 0;
    std::size_t progress_step_ = terminal_ ? 1 : progress_width / 4; ///< in 1/progress_width steps
    std::vector<queue_state> queues_;
    std::mt19937_64 random_{20261101};                             // fixed seed: every run does the same I/O
    std::unordered_map<std::uint64_t, std::uint32_t> generations_; ///< the shadow: LBA -> last write
    std::vector<std::uint64_t> written_;
    std::unordered_set<std::uint64_t> busy_;
    std::vector<std::byte> expected_;
    workload_result result_{};
};

template <typename T>
T load_structure(const std::vector<std::byte>& bytes)
{
    T value{};
    std::memcpy(&value, bytes.data(), std::min(sizeof(T), bytes.size()));
    return value;
}

int run()
{
    spdlog::info("nvmekit {}.{}.{}: an emulated NVMe controller and the in-process host",
                 NVMEKIT_VERSION_MAJOR, NVMEKIT_VERSION_MINOR, NVMEKIT_VERSION_PATCH);

    nt::flat_memory memory;
    memory.add_range(host_memory_base, host_memory_bytes);
    nt::recording_msix msix;
    nt::manual_clock clock;

    controller_type::subsystem_type subsystem{{.nqn = "nqn.2026-11.io.nvmekit:demo",
                                               .serial_number = "NVMEKIT-DEMO-0001",
                                               .model_number = "nvmekit demo controller",
                                               .firmware_revision = "1.0.0"}};
    auto& ns = subsystem.add_namespace(nvmekit::ram_backend{namespace_bytes, {.chunk_size = block_bytes}},
                                       {.lba_format = lba_format_4k});
    spdlog::info("subsystem {}: namespace {} on a sparse RAM backend of {} MiB ({} blocks of {} bytes)",
                 subsystem.identity().nqn, ns.nsid(), namespace_bytes >> 20, ns.block_count(),
                 ns.block_bytes());

    nvmekit::controller_config config{};
    config.ready_delay = std::chrono::milliseconds{5};
    controller_type controller{memory, msix, clock, subsystem, config};
    spdlog::info("controller {}: BAR0 {} KiB, MSI-X table at {:#x}, PBA at {:#x}", controller.controller_id(),
                 controller.bar0_size() / 1024, controller.msix_table_offset(), controller.msix_pba_offset());

    host_type host{controller, memory, clock, msix}; // reaps a CQ when its vector fires
    host.on_step([](std::string_view step) { spdlog::info("host: {}", step); });
    const auto bring_up =
        host.bring_up({.io_queue_pairs = queue_pairs, .io_entries = 128, .shadow_doorbells = true});
    spdlog::info("ready after {} ms: {} I/O queue pairs (granted {} SQs / {} CQs)",
                 std::chrono::duration_cast<std::chrono::milliseconds>(clock.now()).count(),
                 bring_up.io_queue_pairs, bring_up.submission_queues_granted,
                 bring_up.completion_queues_granted);

    print_id_ctrl(bring_up.identify);
    std::vector<std::byte> data;
    const auto identify_ns =
        host.admin_read(host_type::identify_command(spec::cns::identify_namespace, nsid, 0), 4096, data);
    if (!identify_ns.ok()) {
        spdlog::error("Identify Namespace failed: {}", identify_ns.status());
        return 1;
    }
    const auto id_ns = load_structure<spec::identify_namespace>(data);
    print_id_ns(nsid, id_ns);

    fmt::print("\n");
    spdlog::info("random 4 KiB reads and writes: {} commands, {} queues x {} in flight, LBAs 0 to {:#x}",
                 total_commands, queue_pairs, queue_depth, id_ns.nsze - 1);
    random_workload workload{host, id_ns.nsze};
    const auto result = workload.run();
    const double seconds = result.elapsed.count();
    spdlog::info("{} commands ({} writes, {} reads, {} of them of written blocks): {} errors, {} verify "
                 "mismatches, {:.3f} s ({:.0f} IOPS, {:.1f} MiB/s)",
                 result.commands, result.writes, result.reads, result.reads_of_written_blocks, result.errors,
                 result.mismatches, seconds, static_cast<double>(result.commands) / seconds,
                 static_cast<double>(result.commands * block_bytes) / seconds / (1 << 20));
    if (const auto* ram = ns.backend().get_if<nvmekit::ram_backend>()) {
        spdlog::info("the RAM backend holds {:.1f} MiB of its {} MiB",
                     static_cast<double>(ram->bytes_allocated()) / (1 << 20), ram->capacity_bytes() >> 20);
    }

    const auto smart =
        host.get_log_page(spec::log_page_id::smart_health, sizeof(spec::smart_health_log), data);
    if (!smart.ok()) {
        spdlog::error("Get Log Page SMART / Health Information failed: {}", smart.status());
        return 1;
    }
    fmt::print("\nSMART / Health Information Log (NSID {:#x}):\n{}\n\n", 0xffffffffU,
               load_structure<spec::smart_health_log>(data));

    host.shut_down();
    const auto& stats = controller.statistics();
    spdlog::info("statistics: {} commands, {} completions, {} MSI-X interrupts, {} host protocol errors",
                 stats.commands, stats.completions_posted, msix.events().size(), stats.host_protocol_errors);

    if (result.errors != 0 || result.mismatches != 0) {
        spdlog::error("FAILED: {} command errors, {} verify mismatches", result.errors, result.mismatches);
        return 1;
    }
    spdlog::info("every read returned what was written");
    return 0;
}

} // namespace

int main(int argc, char** argv)
{
    nvmekit_programs::no_options(
        {"nvmekit-demo",
         "nvmekit-demo\n  brings up a controller with a 1 GiB RAM namespace, prints its identity, runs a "
         "verified\n  random read/write workload and prints the SMART log\n"},
        argc, argv);
    spdlog::set_pattern("[%l] %v");
    try {
        return run();
    } catch (const std::exception& error) {
        fmt::print("\n");
        spdlog::critical("{}", error.what());
        return 2;
    }
}
