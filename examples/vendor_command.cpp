// nvmekit-vendor-command: a vendor-specific admin command end to end. The traits add opcode C0h,
// "Read Vendor Counters", to the controller's admin dispatch table; the in-process host sends it
// with the counter page in CDW10, prints what comes back and the errors it gives for a bad
// parameter, and reads the Commands Supported and Effects log, which lists C0h because the log
// is derived from the same table.
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

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace spec = nvmekit::spec;
namespace nt = nvmekit::testing;

namespace {

// ---- the vendor command, as a device vendor would define it -----------------------------------

constexpr std::uint8_t read_vendor_counters_opcode = 0xc0; // admin vendor-specific range C0h-FFh

/// The counter pages CDW10 bits 03:00 select; bits 31:04 are reserved.
enum class counter_page : std::uint8_t {
    controller = 0,      ///< the controller's command and error counters
    namespace_usage = 1, ///< the namespace named by NSID: size and backend memory in use
};

/// What Read Vendor Counters returns: 64 bytes, little-endian.
struct vendor_counter_page {
    std::array<char, 4> signature;         // bytes 03:00 "NVKC"
    std::uint8_t version;                  // byte 04 layout version (1)
    std::uint8_t page;                     // byte 05 the page CDW10 selected
    std::uint16_t controller_id;           // bytes 07:06 CNTLID of the controller that answered
    std::array<std::uint64_t, 7> counters; // bytes 63:08 the page's counters
};
static_assert(sizeof(vendor_counter_page) == 64);
static_assert(offsetof(vendor_counter_page, page) == 5);
static_assert(offsetof(vendor_counter_page, controller_id) == 6);
static_assert(offsetof(vendor_counter_page, counters) == 8);
static_assert(std::is_trivially_copyable_v<vendor_counter_page>);

constexpr std::array<std::string_view, 7> controller_counter_names{
    "commands",   "completions_posted",   "completions_held", "invalid_doorbells",
    "dma_errors", "host_protocol_errors", "staging_waits"};
constexpr std::array<std::string_view, 4> namespace_counter_names{"nsze", "block_bytes", "capacity_bytes",
                                                                  "ram_bytes_allocated"};

/// Read Vendor Counters (C0h): a handler of the admin table. It sees the command as the host
/// wrote it and uses the controller's handler interface; DW0 of the completion is the number of
/// counters of the page.
template <typename Controller>
nvmekit::command_result read_vendor_counters(Controller& controller, typename Controller::command& cmd)
{
    const auto invalid = [](auto code) {
        return nvmekit::command_result::failure(spec::status{code}.with_dnr());
    };
    if ((cmd.sqe.cdw10 & ~0xfU) != 0) {
        return invalid(spec::generic_status::invalid_field);
    }
    vendor_counter_page data{};
    data.signature = {'N', 'V', 'K', 'C'};
    data.version = 1;
    data.page = static_cast<std::uint8_t>(cmd.sqe.cdw10);
    data.controller_id = controller.controller_id();
    std::uint32_t count = 0;
    switch (static_cast<counter_page>(data.page)) {
    case counter_page::controller: {
        const auto& stats = controller.statistics();
        data.counters = {stats.commands,          stats.completions_posted, stats.completions_held,
                         stats.invalid_doorbells, stats.dma_errors,         stats.host_protocol_errors,
                         stats.staging_waits};
        count = controller_counter_names.size();
        break;
    }
    case counter_page::namespace_usage: {
        auto* ns = controller.attached_namespace(cmd.sqe.nsid);
        if (ns == nullptr) {
            return invalid(spec::generic_status::invalid_namespace_or_format);
        }
        const auto* ram = ns->backend().template get_if<nvmekit::ram_backend>();
        data.counters[0] = ns->block_count();
        data.counters[1] = ns->block_bytes();
        data.counters[2] = ns->backend().capacity_bytes();
        data.counters[3] = ram != nullptr ? ram->bytes_allocated() : 0;
        count = namespace_counter_names.size();
        break;
    }
    default: return invalid(spec::generic_status::invalid_field);
    }
    const auto status = controller.transfer_to_host(cmd, std::as_bytes(std::span{&data, 1}));
    return status.is_success() ? nvmekit::command_result::success(count)
                               : nvmekit::command_result::failure(status);
}

// ---- the controller's traits ------------------------------------------------------------------

/// The providers of the in-process host, as in the tests.
struct host_side_traits : nvmekit::default_traits {
    using dma = nt::flat_memory;
    using interrupts = nt::recording_msix;
    using clock = nt::manual_clock;
};

/// host_side_traits with Read Vendor Counters in the admin table. It changes nothing the host must
/// know about (no LBCC, NCC, NIC, CCC), so its effects are none.
struct vendor_traits : host_side_traits {
    template <typename Table>
    static constexpr Table admin_commands(Table table)
    {
        return table.with(read_vendor_counters_opcode, &read_vendor_counters<typename Table::context_type>,
                          nvmekit::effects::none());
    }
};

using controller_type = nvmekit::controller<vendor_traits>;
using host_type = nt::in_process_host<controller_type>;

// ---- the host side ----------------------------------------------------------------------------

spec::submission_queue_entry read_vendor_counters_command(counter_page page, std::uint32_t nsid = 0)
{
    spec::submission_queue_entry sqe{};
    sqe.cdw0.set(spec::command_dword0::opc, read_vendor_counters_opcode);
    sqe.nsid = nsid;
    sqe.cdw10 = static_cast<std::uint32_t>(page);
    return sqe;
}

/// Sends Read Vendor Counters and prints the page it returns, or its status.
void send(host_type& host, spec::submission_queue_entry sqe, std::string_view what)
{
    std::vector<std::byte> bytes;
    const auto completion = host.admin_read(sqe, sizeof(vendor_counter_page), bytes);
    spdlog::info("C0h {} (cdw10 {:#x}, nsid {}) -> {}, dw0 {}", what, sqe.cdw10, sqe.nsid,
                 completion.status(), completion.cqe.dw0);
    if (!completion.ok()) {
        return;
    }
    vendor_counter_page page{};
    std::memcpy(&page, bytes.data(), sizeof(page));
    fmt::print("  signature {:?} version {} page {} cntlid {}\n",
               std::string_view{page.signature.data(), page.signature.size()}, page.version, page.page,
               page.controller_id);
    const std::span<const std::string_view> names =
        page.page == 0 ? std::span<const std::string_view>{controller_counter_names}
                       : namespace_counter_names;
    for (std::size_t i = 0; i < names.size() && i < completion.cqe.dw0; ++i) {
        fmt::print("  {:<22} : {}\n", names[i], page.counters[i]);
    }
}

int run()
{
    nt::flat_memory memory;
    memory.add_range(0x1'0000'0000, std::size_t{16} << 20);
    nt::recording_msix msix;
    nt::manual_clock clock;
    controller_type::subsystem_type subsystem{{.nqn = "nqn.2026-11.io.nvmekit:vendor-command"}};
    subsystem.add_namespace(nvmekit::ram_backend{std::uint64_t{256} << 20});
    controller_type controller{memory, msix, clock, subsystem};
    host_type host{controller, memory, clock, msix};
    host.bring_up({.io_queue_pairs = 1});
    spdlog::info("controller {} is ready; its admin table holds {} commands, C0h among them: {}",
                 controller.controller_id(), controller_type::admin_table().size(),
                 controller_type::admin_table().supported(read_vendor_counters_opcode));

    // Some I/O, so that the counters are not all zero.
    const std::uint64_t buffer = host.allocate(4096);
    auto write = host_type::lba_command<spec::write_view>(spec::nvm_opcode::write, 1, 0, 8);
    write.dptr = host.build_prps(buffer, 4096);
    spdlog::info("write of 8 blocks at LBA 0 -> {}", host.io(1, write).status());

    send(host, read_vendor_counters_command(counter_page::controller), "controller counters");
    send(host, read_vendor_counters_command(counter_page::namespace_usage, 1), "namespace usage");
    send(host, read_vendor_counters_command(counter_page::namespace_usage, 7),
         "namespace usage of an inactive NSID");
    send(host, read_vendor_counters_command(static_cast<counter_page>(9)), "page 9 (no such page)");

    std::vector<std::byte> bytes;
    const auto log = host.get_log_page(spec::log_page_id::commands_supported_and_effects,
                                       sizeof(spec::commands_supported_and_effects), bytes);
    spdlog::info("Get Log Page Commands Supported and Effects -> {}", log.status());
    if (!log.ok()) {
        return 1;
    }
    spec::commands_supported_and_effects effects{};
    std::memcpy(&effects, bytes.data(), sizeof(effects));
    std::string supported;
    for (std::size_t opcode = 0; opcode < effects.admin_commands.size(); ++opcode) {
        if (effects.admin_commands[opcode].get(spec::command_effects::csupp)) {
            supported += fmt::format(" {:02X}h", opcode);
        }
    }
    fmt::print("  admin commands supported:{}\n", supported);
    const auto vendor_entry = effects.admin_commands[read_vendor_counters_opcode];
    fmt::print("  ACS{} (C0h) : {:#010x} {}\n", read_vendor_counters_opcode, vendor_entry.raw, vendor_entry);

    // A controller with the plain host-side traits does not know C0h.
    nt::recording_msix plain_msix;
    nvmekit::controller<host_side_traits> plain{memory, plain_msix, clock};
    nt::in_process_host<nvmekit::controller<host_side_traits>> plain_host{plain, memory, clock};
    host.shut_down();
    plain_host.bring_up({.io_queue_pairs = 1});
    const auto refused = plain_host.admin(read_vendor_counters_command(counter_page::controller));
    spdlog::info("the same command to a controller without the traits -> {}", refused.status());
    plain_host.shut_down();

    const bool listed = vendor_entry.get(spec::command_effects::csupp);
    const bool refused_as_expected =
        refused.status() == spec::status{spec::generic_status::invalid_opcode}.with_dnr();
    return listed && refused_as_expected ? 0 : 1;
}

} // namespace

int main(int argc, char** argv)
{
    constexpr const char* usage =
        "nvmekit-vendor-command\n"
        "  sends the vendor admin command C0h through the in-process host and prints what it "
        "returns\n";
    nvmekit_programs::no_options({"nvmekit-vendor-command", usage}, argc, argv);
    spdlog::set_pattern("[%l] %v");
    try {
        return run();
    } catch (const std::exception& error) {
        spdlog::critical("{}", error.what());
        return 2;
    }
}
