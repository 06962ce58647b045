// nvmekit-spec-tour: a tour of the NVMe spec layer. It builds the registers, commands, completions and
// data structures of a Linux host bringing up an NVMe controller, and prints each one the way
// nvmekit prints it in logs and test failures.
#include "command_line.hpp"

#include <nvmekit/format.hpp>
#include <nvmekit/spec.hpp>

#include <fmt/core.h>

#include <cstdint>
#include <memory>

namespace spec = nvmekit::spec;

namespace {

spec::submission_queue_entry make_command(std::uint8_t opcode, std::uint16_t cid, std::uint32_t nsid,
                                          std::uint64_t prp1)
{
    spec::submission_queue_entry sqe{};
    sqe.cdw0.set(spec::command_dword0::opc, opcode).set(spec::command_dword0::cid, cid);
    sqe.nsid = nsid;
    sqe.dptr.prp1 = prp1;
    return sqe;
}

template <typename View>
spec::submission_queue_entry make_command(spec::admin_opcode opcode, std::uint16_t cid, std::uint32_t nsid,
                                          std::uint64_t prp1, const View& view)
{
    auto sqe = make_command(static_cast<std::uint8_t>(opcode), cid, nsid, prp1);
    view.encode(sqe);
    return sqe;
}

spec::completion_queue_entry make_completion(std::uint16_t sq_id, std::uint16_t cid, std::uint16_t sq_head,
                                             spec::status status, std::uint32_t dw0 = 0)
{
    spec::completion_queue_entry cqe{};
    cqe.sq_id = sq_id;
    cqe.dw0 = dw0;
    cqe.cid = cid;
    cqe.sq_head = sq_head;
    cqe.set_status(status, true);
    return cqe;
}

} // namespace

int main(int argc, char** argv)
{
    nvmekit_programs::no_options({"nvmekit-spec-tour", "nvmekit-spec-tour\n  prints the registers, commands "
                                                       "and data structures of a Linux host's bring-up\n"},
                                 argc, argv);
    fmt::print("nvmekit {}.{}.{}: the NVMe spec layer, following a Linux host's bring-up\n\n",
               NVMEKIT_VERSION_MAJOR, NVMEKIT_VERSION_MINOR, NVMEKIT_VERSION_PATCH);

    fmt::print("Controller registers the host reads:\n");
    spec::cap_register cap{};
    cap.set(cap.mqes, 1023).set(cap.cqr, true).set(cap.to, 20).set(cap.css_nvm, true);
    cap.set(cap.css_io_command_sets, true).set(cap.mpsmax, 4).set(cap.nssrs, true);
    fmt::print("  {}\n  VS {}\n", cap, spec::version_2_0_0);

    fmt::print("\nRegisters the host writes to enable it:\n");
    spec::aqa_register aqa{};
    aqa.set(aqa.asqs, 31).set(aqa.acqs, 31);
    spec::cc_register cc{};
    cc.set(cc.en, true).set(cc.iosqes, 6).set(cc.iocqes, 4);
    spec::csts_register csts{};
    csts.set(csts.rdy, true);
    fmt::print("  {}\n  {} (raw 0x{:08x})\n  then polls {}\n", aqa, cc, cc.raw, csts);

    fmt::print("\nAdmin commands of the bring-up and their completions:\n");
    const auto identify = make_command(spec::admin_opcode::identify, 0, 0, 0x10000,
                                       spec::identify_view{.cns = spec::cns::identify_controller});
    const auto queues =
        make_command(spec::admin_opcode::set_features, 1, 0, 0,
                     spec::set_features_view{.feature_id = spec::feature_id::number_of_queues,
                                             .cdw11 = spec::number_of_queues::from_counts(4, 4).raw});
    const auto create_cq = make_command(spec::admin_opcode::create_io_cq, 2, 0, 0x20000,
                                        spec::create_io_cq_view{.queue_id = 1,
                                                                .queue_size = 1024,
                                                                .physically_contiguous = true,
                                                                .interrupts_enabled = true,
                                                                .interrupt_vector = 1});
    const auto create_sq =
        make_command(spec::admin_opcode::create_io_sq, 3, 0, 0x40000,
                     spec::create_io_sq_view{
                         .queue_id = 1, .queue_size = 1024, .physically_contiguous = true, .cq_id = 1});
    const auto bad_cq = make_command(
        spec::admin_opcode::create_io_cq, 4, 0, 0x60000,
        spec::create_io_cq_view{.queue_id = 1, .queue_size = 4096, .physically_contiguous = true});
    const spec::submission_queue_entry* admin_commands[] = {&identify, &queues, &create_cq, &create_sq,
                                                            &bad_cq};
    const spec::completion_queue_entry completions[] = {
        make_completion(0, 0, 1, spec::status::success()),
        make_completion(0, 1, 2, spec::status::success(), spec::number_of_queues::from_counts(4, 4).raw),
        make_completion(0, 2, 3, spec::status::success()),
        make_completion(0, 3, 4, spec::status::success()),
        make_completion(0, 4, 5,
                        spec::status{spec::command_specific_status::invalid_queue_identifier}.with_dnr()),
    };
    for (std::size_t i = 0; i < std::size(admin_commands); ++i) {
        fmt::print("  > {}\n  < {}\n", spec::admin_command{*admin_commands[i]}, completions[i]);
    }

    fmt::print("\nWhat Identify Controller returns (4096 bytes):\n");
    auto controller = std::make_unique<spec::identify_controller>();
    controller->vid = 0xf0e5;
    controller->ssvid = 0xf0e5;
    controller->set_serial_number("NVMEKIT-0001");
    controller->set_model_number("nvmekit emulated controller");
    controller->set_firmware_revision("0.1.0");
    controller->mdts = 5;
    controller->cntlid = 1;
    controller->cntrltype = spec::controller_type::io;
    controller->ver = spec::version_2_0_0.raw;
    controller->nn = 1;
    controller->sqes.set(controller->sqes.required, 6).set(controller->sqes.maximum, 6);
    controller->cqes.set(controller->cqes.required, 4).set(controller->cqes.maximum, 4);
    controller->set_subsystem_nqn("nqn.2026-11.io.nvmekit:demo");
    fmt::print("{}\n", *controller);

    fmt::print("\nI/O on queue 1:\n");
    auto read = make_command(static_cast<std::uint8_t>(spec::nvm_opcode::read), 5, 1, 0x80000);
    spec::read_view{.starting_lba = 0x10, .block_count = 8}.encode(read);
    auto write = make_command(static_cast<std::uint8_t>(spec::nvm_opcode::write), 6, 1, 0x90000);
    spec::write_view{.starting_lba = 0x2000, .block_count = 1, .force_unit_access = true}.encode(write);
    fmt::print("  > {}\n  < {}\n", spec::io_command{read}, make_completion(1, 5, 1, spec::status::success()));
    fmt::print("  > {}\n  < {}\n", spec::io_command{write},
               make_completion(1, 6, 2, spec::status{spec::generic_status::lba_out_of_range}.with_dnr()));

    fmt::print("\nSMART / Health log after that I/O:\n");
    spec::smart_health_log smart{};
    smart.set_composite_temperature_kelvin(308);
    smart.available_spare = 100;
    smart.available_spare_threshold = 10;
    smart.data_units_read.add(1);
    smart.host_read_commands.add(1);
    smart.host_write_commands.add(1);
    smart.power_cycles.add(1);
    fmt::print("{}\n", smart);
    return 0;
}
