// Micro-benchmarks of the per-command components: what each step of the life of a command costs
// on its own (fetch and decode, dispatch, data pointer walk, completion post, interrupt, doorbell).
// Host memory is testing::flat_memory, so every DMA access includes a std::map lookup of its range
// and a memcpy; a provider over one mapped guest region would be cheaper.
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include <benchmark/benchmark.h>

#include <nvmekit/contracts/interrupts.hpp>
#include <nvmekit/core/dispatcher.hpp>
#include <nvmekit/data/host_ranges.hpp>
#include <nvmekit/data/prp_walker.hpp>
#include <nvmekit/data/sgl_walker.hpp>
#include <nvmekit/pci/doorbell_channel.hpp>
#include <nvmekit/pci/msix.hpp>
#include <nvmekit/queues/cq_ring.hpp>
#include <nvmekit/queues/queue_memory.hpp>
#include <nvmekit/queues/sq_ring.hpp>
#include <nvmekit/spec/commands.hpp>
#include <nvmekit/spec/data_pointer.hpp>
#include <nvmekit/spec/opcodes.hpp>
#include <nvmekit/spec/queue_entries.hpp>
#include <nvmekit/state/interrupt_coalescing.hpp>
#include <nvmekit/testing/flat_memory.hpp>

namespace spec = nvmekit::spec;

namespace {

constexpr std::uint32_t page_size = 4096;
constexpr std::uint64_t memory_base = 0x1'0000'0000;
constexpr std::size_t memory_bytes = std::size_t{16} << 20;
constexpr std::uint64_t kib = 1024;

/// 16 MiB of host memory at 4 GiB.
nvmekit::testing::flat_memory make_memory()
{
    nvmekit::testing::flat_memory memory;
    memory.add_range(memory_base, memory_bytes);
    return memory;
}

std::uint64_t allocate(nvmekit::testing::flat_memory& memory, std::size_t size,
                       std::size_t alignment = page_size)
{
    return memory.allocate(size, alignment).value();
}

/// `count` data pages with a free page between each two, so that no two of them merge into one
/// host range: the walkers then produce one range per page, as for fragmented host memory.
std::vector<std::uint64_t> scattered_pages(nvmekit::testing::flat_memory& memory, std::size_t count)
{
    const std::uint64_t base = allocate(memory, count * 2 * page_size);
    std::vector<std::uint64_t> pages(count);
    for (std::size_t i = 0; i < count; ++i) {
        pages[i] = base + i * 2 * page_size;
    }
    return pages;
}

/// Skips the benchmark with `message` unless `condition` holds; returns `condition`.
bool expect(benchmark::State& state, bool condition, const char* message)
{
    if (!condition) {
        state.SkipWithError(message);
    }
    return condition;
}

spec::submission_queue_entry make_read(std::uint16_t cid)
{
    spec::submission_queue_entry entry{};
    entry.cdw0.set(entry.cdw0.opc, static_cast<std::uint8_t>(spec::nvm_opcode::read))
        .set(entry.cdw0.cid, cid);
    entry.nsid = 1;
    entry.dptr.prp1 = 0x100000 + cid * 0x1000ULL;
    spec::read_view{.starting_lba = cid * 8ULL, .block_count = 8U}.encode(entry);
    return entry;
}

constexpr std::uint32_t sq_entries = 256;

/// A submission queue of 256 Reads, contiguous (PC = 1) or in four scattered memory pages listed
/// by a PRP List (PC = 0). Each iteration the host rings the tail `batch` entries on and the
/// controller fetches them and decodes each into a read_view.
void sq_fetch_decode(benchmark::State& state)
{
    const auto batch = static_cast<std::uint32_t>(state.range(0));
    const bool prp_list_queue = state.range(1) != 0;
    auto memory = make_memory();
    constexpr std::size_t queue_bytes = std::size_t{sq_entries} * nvmekit::sq_ring::sqe_size;

    nvmekit::queue_memory queue = nvmekit::queue_memory::contiguous(allocate(memory, queue_bytes));
    if (prp_list_queue) {
        const auto pages = scattered_pages(memory, queue_bytes / page_size);
        const std::uint64_t list = allocate(memory, page_size);
        for (std::size_t i = 0; i < pages.size(); ++i) {
            memory.store(list + i * sizeof(std::uint64_t), pages[i]);
        }
        const auto status = nvmekit::queue_memory::from_prp_list(memory, list, queue_bytes, page_size, queue);
        if (!expect(state, status.is_success(), "queue_memory::from_prp_list failed")) {
            return;
        }
    }
    for (std::uint32_t i = 0; i < sq_entries; ++i) {
        memory.store(queue.address_of(std::size_t{i} * nvmekit::sq_ring::sqe_size),
                     make_read(static_cast<std::uint16_t>(i)));
    }
    nvmekit::sq_ring sq{1, 1, sq_entries, std::move(queue)};

    std::array<spec::submission_queue_entry, 32> fetched_entries{};
    const std::span<spec::submission_queue_entry> out{fetched_entries.data(), batch};
    std::uint64_t total = 0;
    for (auto _ : state) {
        if (!sq.set_tail((sq.head() + batch) % sq_entries)) {
            state.SkipWithError("sq_ring::set_tail refused the tail");
            break;
        }
        std::uint32_t fetched = 0;
        if (sq.fetch(memory, out, fetched)) {
            state.SkipWithError("sq_ring::fetch failed");
            break;
        }
        std::uint64_t blocks = 0;
        for (std::uint32_t i = 0; i < fetched; ++i) {
            const auto view = spec::read_view::decode(fetched_entries[i]);
            blocks += view.block_count + view.starting_lba;
        }
        benchmark::DoNotOptimize(blocks);
        total += fetched;
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(total));
}
BENCHMARK(sq_fetch_decode)->ArgNames({"batch", "prp_list_queue"})->Args({1, 0})->Args({32, 0})->Args({32, 1});

struct dispatch_context {
    std::uint64_t handled = 0;
};

nvmekit::command_result handle_read(dispatch_context& context, spec::submission_queue_entry& command)
{
    context.handled += command.nsid;
    return nvmekit::command_result::success();
}

constexpr auto io_table = nvmekit::dispatch_table<dispatch_context, spec::submission_queue_entry>{}.with(
    static_cast<std::uint8_t>(spec::nvm_opcode::read), &handle_read, nvmekit::effects::none());

/// One dispatch through the I/O table: a supported opcode runs a trivial handler, an unsupported
/// one returns Invalid Command Opcode. The opcode is hidden from the optimiser each iteration.
void dispatch(benchmark::State& state, std::uint8_t opcode)
{
    dispatch_context context;
    auto command = make_read(0);
    for (auto _ : state) {
        benchmark::DoNotOptimize(opcode);
        auto result = io_table.dispatch(context, opcode, command);
        benchmark::DoNotOptimize(result);
    }
    benchmark::DoNotOptimize(context.handled);
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK_CAPTURE(dispatch, supported_opcode, static_cast<std::uint8_t>(spec::nvm_opcode::read));
BENCHMARK_CAPTURE(dispatch, unsupported_opcode, std::uint8_t{0x7f});

/// Writes `entries` as a PRP List starting `list_offset` bytes into a new list page; when the
/// entries left outnumber the slots left in a list page, its last slot chains to a new page
/// (Base 2.0 4.1.1). Returns the list pointer for PRP2.
std::uint64_t write_prp_list(nvmekit::testing::flat_memory& memory, std::span<const std::uint64_t> entries,
                             std::uint64_t list_offset)
{
    const std::uint64_t first = allocate(memory, page_size) + list_offset;
    std::uint64_t list = first;
    std::size_t index = 0;
    for (;;) {
        const std::size_t slots = (page_size - list % page_size) / sizeof(std::uint64_t);
        const std::size_t remaining = entries.size() - index;
        const std::size_t data_slots = remaining <= slots ? remaining : slots - 1;
        for (std::size_t i = 0; i < data_slots; ++i) {
            memory.store(list + i * sizeof(std::uint64_t), entries[index + i]);
        }
        index += data_slots;
        if (index == entries.size()) {
            return first;
        }
        const std::uint64_t next = allocate(memory, page_size);
        memory.store(list + data_slots * sizeof(std::uint64_t), next);
        list = next;
    }
}

/// One PRP walk of `length` bytes over scattered data pages; PRP1 starts `prp1_offset` bytes into
/// its page and the PRP List `list_offset` bytes into its first list page. Only the lists are read.
void prp_walk(benchmark::State& state, std::uint64_t length, std::uint64_t prp1_offset,
              std::uint64_t list_offset)
{
    auto memory = make_memory();
    const std::size_t page_count = (prp1_offset + length + page_size - 1) / page_size;
    const auto pages = scattered_pages(memory, page_count);
    const std::uint64_t prp1 = pages.front() + prp1_offset;
    std::uint64_t prp2 = 0;
    if (page_count == 2) {
        prp2 = pages[1];
    } else if (page_count > 2) {
        prp2 = write_prp_list(memory, std::span{pages}.subspan(1), list_offset);
    }

    std::vector<nvmekit::host_range> storage(page_count);
    nvmekit::host_range_list ranges{storage};
    const auto status = nvmekit::walk_prp(memory, prp1, prp2, length, page_size, ranges);
    if (!expect(state, status.is_success() && ranges.total_bytes() == length && ranges.size() == page_count,
                "walk_prp did not describe the transfer")) {
        return;
    }
    for (auto _ : state) {
        auto result = nvmekit::walk_prp(memory, prp1, prp2, length, page_size, ranges);
        benchmark::DoNotOptimize(result);
        benchmark::DoNotOptimize(ranges.total_bytes());
    }
    state.SetItemsProcessed(state.iterations());
    state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(length));
}
BENCHMARK_CAPTURE(prp_walk, 4KiB_prp1, 4 * kib, 0, 0);
BENCHMARK_CAPTURE(prp_walk, 8KiB_prp1_prp2, 8 * kib, 0, 0);
BENCHMARK_CAPTURE(prp_walk, 128KiB_list_32_entries, 128 * kib, 512, 0);
BENCHMARK_CAPTURE(prp_walk, 128KiB_list_crossing_page, 128 * kib, 0, page_size - 16 * sizeof(std::uint64_t));
BENCHMARK_CAPTURE(prp_walk, 2056KiB_chained_list_2_pages, 2056 * kib, 0, 0);

/// Writes an SGL for `blocks` in segments of at most `per_segment` descriptors, each but the
/// last ending with a Segment descriptor to the next, the last reached through a Last Segment
/// descriptor (Base 2.0 4.1.2). Returns SGL1; one block is described in SGL1 itself.
spec::sgl_descriptor write_sgl(nvmekit::testing::flat_memory& memory,
                               std::span<const spec::sgl_descriptor> blocks, std::size_t per_segment)
{
    if (blocks.size() == 1) {
        return blocks.front();
    }
    spec::sgl_descriptor first{};
    std::uint64_t link = 0;
    std::size_t index = 0;
    while (index < blocks.size()) {
        const std::size_t remaining = blocks.size() - index;
        const bool last = remaining <= per_segment;
        const std::size_t data_count = last ? remaining : per_segment - 1;
        const std::size_t count = last ? remaining : per_segment;
        const std::uint64_t segment = allocate(memory, count * spec::sgl_descriptor_size, 16);
        for (std::size_t i = 0; i < data_count; ++i) {
            memory.store(segment + i * spec::sgl_descriptor_size, blocks[index + i]);
        }
        const auto length = static_cast<std::uint32_t>(count * spec::sgl_descriptor_size);
        const auto pointer = last ? spec::sgl_descriptor::last_segment(segment, length)
                                  : spec::sgl_descriptor::segment(segment, length);
        if (index == 0) {
            first = pointer;
        } else {
            memory.store(link, pointer);
        }
        link = segment + data_count * spec::sgl_descriptor_size;
        index += data_count;
    }
    return first;
}

/// One SGL walk of `block_count` Data Blocks of `block_bytes` each (scattered when more than
/// one), in segments of at most `per_segment` descriptors. Only the segments are read.
void sgl_walk(benchmark::State& state, std::size_t block_count, std::uint32_t block_bytes,
              std::size_t per_segment)
{
    auto memory = make_memory();
    std::vector<spec::sgl_descriptor> blocks;
    if (block_count == 1) {
        blocks.push_back(spec::sgl_descriptor::data_block(allocate(memory, block_bytes), block_bytes));
    } else {
        for (const std::uint64_t page : scattered_pages(memory, block_count)) {
            blocks.push_back(spec::sgl_descriptor::data_block(page, block_bytes));
        }
    }
    const spec::sgl_descriptor sgl1 = write_sgl(memory, blocks, per_segment);
    const std::uint64_t length = std::uint64_t{block_count} * block_bytes;
    const nvmekit::sgl_walk_options options{.direction = nvmekit::transfer_direction::controller_to_host};

    std::vector<nvmekit::host_range> storage(block_count);
    nvmekit::host_range_list ranges{storage};
    const auto status = nvmekit::walk_sgl(memory, sgl1, length, options, ranges);
    if (!expect(state, status.is_success() && ranges.total_bytes() == length && ranges.size() == block_count,
                "walk_sgl did not describe the transfer")) {
        return;
    }
    for (auto _ : state) {
        auto result = nvmekit::walk_sgl(memory, sgl1, length, options, ranges);
        benchmark::DoNotOptimize(result);
        benchmark::DoNotOptimize(ranges.total_bytes());
    }
    state.SetItemsProcessed(state.iterations());
    state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(length));
}
BENCHMARK_CAPTURE(sgl_walk, 128KiB_data_block_in_sgl1, 1, 128 * kib, 0);
BENCHMARK_CAPTURE(sgl_walk, 32_data_blocks_last_segment, 32, 4 * kib, 32);
BENCHMARK_CAPTURE(sgl_walk, 32_data_blocks_5_chained_segments, 32, 4 * kib, 8);

/// One completion posted with its phase tag into a 256-entry CQ; the host frees the queue
/// whenever it is full, so the tail wraps and the phase inverts every 256 posts.
void cq_post(benchmark::State& state)
{
    constexpr std::uint32_t entries = 256;
    auto memory = make_memory();
    nvmekit::cq_ring cq{
        1, entries, nvmekit::queue_memory::contiguous(allocate(memory, entries * nvmekit::cq_ring::cqe_size)),
        1, true};
    spec::completion_queue_entry cqe{};
    cqe.sq_id = 1;
    cqe.set_status(spec::status::success(), false);
    std::uint64_t wraps = 0;
    for (auto _ : state) {
        if (cq.full()) {
            if (!cq.set_head(cq.tail())) {
                state.SkipWithError("cq_ring::set_head refused the head");
                break;
            }
        }
        cqe.cid = static_cast<std::uint16_t>(cqe.cid + 1);
        if (cq.post(memory, cqe)) {
            state.SkipWithError("cq_ring::post failed");
            break;
        }
        wraps += cq.tail() == 0 ? 1U : 0U;
        benchmark::ClobberMemory();
    }
    benchmark::DoNotOptimize(wraps);
    state.counters["phase_flips"] = static_cast<double>(wraps);
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(cq_post);

/// An InterruptProvider that counts the messages it receives.
struct counting_interrupts {
    std::uint64_t raised = 0;
    void raise_msix(std::uint16_t /*vector*/, nvmekit::msix_message message) { raised += message.data; }
};

constexpr std::uint16_t msix_vectors = 32;

/// An enabled MSI-X table whose vector 1 is unmasked with a message of data 1.
void unmask_vector_1(nvmekit::msix_table<counting_interrupts>& table)
{
    constexpr std::uint64_t entry = nvmekit::msix_table<counting_interrupts>::entry_bytes;
    table.write_table(entry + 0, 8, 0xfee0'0000ULL);
    table.write_table(entry + 8, 8, 1);
    table.set_enabled(true);
}

/// One msix_table::signal of an unmasked vector reaching the provider (no coalescing).
void msix_signal(benchmark::State& state)
{
    counting_interrupts interrupts;
    nvmekit::msix_table<counting_interrupts> table{interrupts, msix_vectors};
    unmask_vector_1(table);
    std::uint16_t vector = 1;
    for (auto _ : state) {
        benchmark::DoNotOptimize(vector);
        benchmark::DoNotOptimize(table.signal(vector));
    }
    if (!expect(state, interrupts.raised == static_cast<std::uint64_t>(state.iterations()),
                "msix_table::signal did not reach the provider")) {
        return;
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(msix_signal);

/// The interrupt decision for one I/O completion: interrupt_coalescer::on_completion with THR and
/// TIME as given, then msix_table::signal when it says so. Completions come 100 ns apart, so with
/// THR = 7 and TIME = 1 (100 us) every eighth completion signals.
void completion_interrupt(benchmark::State& state, std::uint8_t threshold_zero_based, std::uint8_t time_100us)
{
    counting_interrupts interrupts;
    nvmekit::msix_table<counting_interrupts> table{interrupts, msix_vectors};
    unmask_vector_1(table);
    nvmekit::interrupt_coalescer coalescer{msix_vectors};
    coalescer.configure(threshold_zero_based, time_100us);
    std::uint16_t vector = 1;
    std::chrono::nanoseconds now{0};
    for (auto _ : state) {
        benchmark::DoNotOptimize(vector);
        now += std::chrono::nanoseconds{100};
        if (coalescer.on_completion(vector, true, now)) {
            table.signal(vector);
        }
    }
    state.counters["interrupts_per_completion"] =
        static_cast<double>(interrupts.raised) / static_cast<double>(state.iterations());
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK_CAPTURE(completion_interrupt, coalescing_off, std::uint8_t{0}, std::uint8_t{0});
BENCHMARK_CAPTURE(completion_interrupt, thr_7_time_100us, std::uint8_t{7}, std::uint8_t{1});

/// The host writes `doorbells` SQ Tail doorbells (distinct queues), then the processing side
/// drains them: one thread, so this is the cost of the atomics without contention.
void doorbell_round_trip(benchmark::State& state)
{
    const auto doorbells = static_cast<std::uint16_t>(state.range(0));
    nvmekit::doorbell_channel channel{64};
    std::uint32_t value = 0;
    std::uint64_t seen = 0;
    for (auto _ : state) {
        ++value;
        for (std::uint16_t qid = 1; qid <= doorbells; ++qid) {
            channel.ring_sq_tail(qid, value);
        }
        channel.drain([&](std::uint16_t qid, bool completion_queue, std::uint32_t tail) {
            seen += qid + tail + (completion_queue ? 1U : 0U);
        });
        benchmark::DoNotOptimize(seen);
    }
    state.SetItemsProcessed(state.iterations() * doorbells);
}
BENCHMARK(doorbell_round_trip)->ArgName("doorbells")->Arg(1)->Arg(16);

} // namespace

BENCHMARK_MAIN();
