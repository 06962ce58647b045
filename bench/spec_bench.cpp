// Micro-benchmarks of the spec layer: what decoding an SQE into a typed view costs on the data
// path, and what printing costs when tracing is on.
#include <nvmekit/format/commands.hpp>
#include <nvmekit/format/status.hpp>
#include <nvmekit/spec/commands.hpp>
#include <nvmekit/spec/queue_entries.hpp>

#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <array>
#include <cstdint>
#include <iterator>

namespace spec = nvmekit::spec;

namespace {

std::array<spec::submission_queue_entry, 256> make_reads()
{
    std::array<spec::submission_queue_entry, 256> entries{};
    std::uint16_t cid = 0;
    for (auto& entry : entries) {
        entry.cdw0.set(entry.cdw0.opc, static_cast<std::uint8_t>(spec::nvm_opcode::read))
            .set(entry.cdw0.cid, cid);
        entry.nsid = 1;
        entry.dptr.prp1 = 0x100000 + cid * 0x1000ULL;
        spec::read_view{.starting_lba = cid * 8ULL, .block_count = 8U}.encode(entry);
        ++cid;
    }
    return entries;
}

void decode_read_view(benchmark::State& state)
{
    const auto entries = make_reads();
    std::size_t index = 0;
    std::uint64_t blocks = 0;
    for (auto _ : state) {
        const auto view = spec::read_view::decode(entries[index]);
        blocks += view.block_count + view.starting_lba;
        index = (index + 1) % entries.size();
    }
    benchmark::DoNotOptimize(blocks);
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(decode_read_view);

void post_completion_status(benchmark::State& state)
{
    spec::completion_queue_entry cqe{};
    bool phase = false;
    for (auto _ : state) {
        cqe.set_status(spec::status::success(), phase);
        phase = !phase;
        benchmark::DoNotOptimize(cqe);
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(post_completion_status);

void format_io_command(benchmark::State& state)
{
    const auto entries = make_reads();
    fmt::memory_buffer buffer;
    std::size_t index = 0;
    for (auto _ : state) {
        buffer.clear();
        fmt::format_to(std::back_inserter(buffer), "{}", spec::io_command{entries[index]});
        benchmark::DoNotOptimize(buffer.data());
        index = (index + 1) % entries.size();
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(format_io_command);

void format_status(benchmark::State& state)
{
    const spec::status status = spec::status{spec::generic_status::invalid_field}.with_dnr();
    fmt::memory_buffer buffer;
    for (auto _ : state) {
        buffer.clear();
        fmt::format_to(std::back_inserter(buffer), "{}", status);
        benchmark::DoNotOptimize(buffer.data());
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(format_status);

} // namespace

BENCHMARK_MAIN();
