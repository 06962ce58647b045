// A program that uses nvmekit as an installed package: builds a command and prints it.
#include <nvmekit/format/commands.hpp>
#include <nvmekit/spec/commands.hpp>

#include <fmt/core.h>

int main()
{
    namespace spec = nvmekit::spec;
    spec::submission_queue_entry sqe{};
    sqe.cdw0.set(spec::command_dword0::opc, static_cast<std::uint8_t>(spec::nvm_opcode::read));
    sqe.cdw0.set(spec::command_dword0::cid, 5);
    sqe.nsid = 1;
    sqe.dptr.prp1 = 0x1000;
    sqe.cdw10 = 0x10; // SLBA
    sqe.cdw12 = 7;    // NLB, 0-based
    fmt::print("nvmekit {}.{}.{}: {}\n", NVMEKIT_VERSION_MAJOR, NVMEKIT_VERSION_MINOR, NVMEKIT_VERSION_PATCH,
               spec::io_command{sqe});
    return 0;
}
