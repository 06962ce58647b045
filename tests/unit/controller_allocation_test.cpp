#include <nvmekit/controller.hpp>

/// Steady-state I/O performs no heap allocation: this translation unit replaces the global
/// operator new and delete (every form the standard library may call) with counting versions over
/// malloc and free, brings a controller up, warms every I/O queue up, and then drives more than
/// 10,000 Reads and Writes through the queues by hand (SQEs and CQEs in host memory, doorbells
/// through mmio_write, the controller through poll()) with the count switched on. The host driver
/// itself allocates per command (its maps and vectors), so it is used only outside the window.

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <span>
#include <system_error>
#include <type_traits>

#include <execinfo.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <nvmekit/backends/null_backend.hpp>
#include <nvmekit/backends/ram_backend.hpp>

#include "controller_fixture.hpp"

// ---- the counting allocator -------------------------------------------------------------------

namespace {

std::atomic<bool> counting{false};
std::atomic<bool> tracing{false}; ///< print a backtrace of counted allocations
std::atomic<std::size_t> allocations{0};
std::atomic<std::size_t> deallocations{0};
thread_local bool reporting = false;

/// Prints where a counted allocation comes from (the first few only; addr2line or gdb decode the
/// addresses): the window must have none, so this runs only in a failing test.
void report_allocation(std::size_t count) noexcept
{
    if (count > 4 || reporting || !tracing.load(std::memory_order_relaxed)) {
        return;
    }
    reporting = true;
    static constexpr char header[] = "controller_allocation_test: heap allocation in the measured window:\n";
    static_cast<void>(::write(STDERR_FILENO, header, sizeof header - 1));
    std::array<void*, 32> frames{};
    const int depth = ::backtrace(frames.data(), static_cast<int>(frames.size()));
    ::backtrace_symbols_fd(frames.data(), depth, STDERR_FILENO);
    reporting = false;
}

void* counted_allocate(std::size_t size, std::size_t alignment) noexcept
{
    if (counting.load(std::memory_order_relaxed)) {
        report_allocation(allocations.fetch_add(1, std::memory_order_relaxed) + 1);
    }
    size = std::max<std::size_t>(size, 1);
    if (alignment <= alignof(std::max_align_t)) {
        return std::malloc(size);
    }
    // aligned_alloc wants a size that is a multiple of the alignment.
    return std::aligned_alloc(alignment, (size + alignment - 1) / alignment * alignment);
}

void* counted_allocate_or_throw(std::size_t size, std::size_t alignment)
{
    void* memory = counted_allocate(size, alignment);
    if (memory == nullptr) {
        throw std::bad_alloc{};
    }
    return memory;
}

void counted_free(void* memory) noexcept
{
    if (memory == nullptr) {
        return;
    }
    if (counting.load(std::memory_order_relaxed)) {
        deallocations.fetch_add(1, std::memory_order_relaxed);
    }
    std::free(memory);
}

/// What the heap did while it was counted.
struct heap_activity {
    std::size_t allocations = 0;
    std::size_t deallocations = 0;
};

/// Starts counting from 0; `trace`: print where the first allocations come from.
void start_counting(bool trace = false) noexcept
{
    allocations.store(0);
    deallocations.store(0);
    tracing.store(trace);
    counting.store(true);
}

heap_activity stop_counting() noexcept
{
    counting.store(false);
    return {allocations.load(), deallocations.load()};
}

constexpr std::size_t default_alignment = alignof(std::max_align_t);

} // namespace

void* operator new(std::size_t size) { return counted_allocate_or_throw(size, default_alignment); }
void* operator new[](std::size_t size) { return counted_allocate_or_throw(size, default_alignment); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept
{
    return counted_allocate(size, default_alignment);
}
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept
{
    return counted_allocate(size, default_alignment);
}
void* operator new(std::size_t size, std::align_val_t alignment)
{
    return counted_allocate_or_throw(size, static_cast<std::size_t>(alignment));
}
void* operator new[](std::size_t size, std::align_val_t alignment)
{
    return counted_allocate_or_throw(size, static_cast<std::size_t>(alignment));
}
void* operator new(std::size_t size, std::align_val_t alignment, const std::nothrow_t&) noexcept
{
    return counted_allocate(size, static_cast<std::size_t>(alignment));
}
void* operator new[](std::size_t size, std::align_val_t alignment, const std::nothrow_t&) noexcept
{
    return counted_allocate(size, static_cast<std::size_t>(alignment));
}

void operator delete(void* memory) noexcept { counted_free(memory); }
void operator delete[](void* memory) noexcept { counted_free(memory); }
void operator delete(void* memory, std::size_t) noexcept { counted_free(memory); }
void operator delete[](void* memory, std::size_t) noexcept { counted_free(memory); }
void operator delete(void* memory, const std::nothrow_t&) noexcept { counted_free(memory); }
void operator delete[](void* memory, const std::nothrow_t&) noexcept { counted_free(memory); }
void operator delete(void* memory, std::align_val_t) noexcept { counted_free(memory); }
void operator delete[](void* memory, std::align_val_t) noexcept { counted_free(memory); }
void operator delete(void* memory, std::size_t, std::align_val_t) noexcept { counted_free(memory); }
void operator delete[](void* memory, std::size_t, std::align_val_t) noexcept { counted_free(memory); }
void operator delete(void* memory, std::align_val_t, const std::nothrow_t&) noexcept { counted_free(memory); }
void operator delete[](void* memory, std::align_val_t, const std::nothrow_t&) noexcept
{
    counted_free(memory);
}

namespace {

namespace spec = nvmekit::spec;
using nvmekit::testing::flat_memory;

// ---- providers that do not allocate ---------------------------------------------------------

/// Counts MSI-X raises per vector (recording_msix keeps a growing vector of them).
struct counting_msix {
    std::array<std::uint64_t, nvmekit::default_traits::limits.msix_vectors> raised{};
    void raise_msix(std::uint16_t vector, nvmekit::msix_message) noexcept { ++raised.at(vector); }
};

/// Host memory the controller can read and write but not map: every data transfer goes through
/// a staging buffer.
struct unmappable_memory {
    flat_memory& memory;
    std::error_code read(std::uint64_t address, std::span<std::byte> destination) const
    {
        return memory.read(address, destination);
    }
    std::error_code write(std::uint64_t address, std::span<const std::byte> source)
    {
        return memory.write(address, source);
    }
};
static_assert(!nvmekit::MappingDmaProvider<unmappable_memory>);

struct zero_copy_traits : nvmekit::default_traits {
    using dma = flat_memory;
    using interrupts = counting_msix;
    using clock = nvmekit::testing::manual_clock;
};
static_assert(nvmekit::MappingDmaProvider<zero_copy_traits::dma>);

struct staging_traits : zero_copy_traits {
    using dma = unmappable_memory;
};

// ---- the workload -------------------------------------------------------------------------------

constexpr std::uint16_t queue_pairs = 4;
constexpr std::uint32_t slots_per_queue = 8; ///< commands outstanding on each SQ at once
constexpr std::uint32_t queue_entries = 256;
constexpr std::uint32_t block_bytes = 512;   ///< LBA format 0
constexpr std::uint32_t region_blocks = 128; ///< LBAs of one slot on each namespace
constexpr std::size_t slot_buffer_bytes = std::size_t{72} << 10;
constexpr std::uint32_t ram_nsid = 1;
constexpr std::uint32_t null_nsid = 2;
constexpr std::uint64_t namespace_bytes =
    std::uint64_t{queue_pairs} * slots_per_queue * region_blocks * block_bytes;

/// One way of describing a slot's buffer: PRPs or an SGL over up to four pieces of it.
struct variant_shape {
    bool sgl;
    std::uint32_t piece_count;
    std::uint32_t piece_offsets[4];
    std::uint32_t piece_bytes;
};

/// One block; two pages (PRP2); a PRP list from offset 0; a PRP list from an unaligned start; one
/// SGL Data Block in DPTR; four discontiguous Data Blocks in a chain of segments.
constexpr std::array<variant_shape, 6> shapes{{
    {false, 1, {512}, block_bytes},
    {false, 1, {1024}, 8 * block_bytes},
    {false, 1, {0}, 128 * block_bytes},
    {false, 1, {2048}, 64 * block_bytes},
    {true, 1, {256}, 16 * block_bytes},
    {true, 4, {64, 20 << 10, 40 << 10, 60 << 10}, 8 * block_bytes},
}};

/// What a slot does at each step: Write then Read back on the RAM namespace, then Write and Read
/// (zeros) on the null namespace, with each shape in turn.
struct step_kind {
    spec::nvm_opcode opcode;
    std::uint32_t nsid;
};
constexpr std::array<step_kind, 4> steps{{
    {spec::nvm_opcode::write, ram_nsid},
    {spec::nvm_opcode::read, ram_nsid},
    {spec::nvm_opcode::write, null_nsid},
    {spec::nvm_opcode::read, null_nsid},
}};

struct prepared_variant {
    spec::data_pointer dptr{};
    bool sgl = false;
    std::uint32_t piece_count = 0;
    std::array<std::uint64_t, 4> piece_addresses{};
    std::uint32_t piece_bytes = 0;
    [[nodiscard]] std::uint32_t blocks() const noexcept { return piece_count * piece_bytes / block_bytes; }
};

struct slot_state {
    std::uint64_t first_lba = 0;
    std::array<prepared_variant, shapes.size()> variants{};
    std::uint64_t step = 0;
    std::uint8_t seed = 0; ///< pattern of the last write to the RAM namespace
    [[nodiscard]] const step_kind& kind() const noexcept { return steps[step % steps.size()]; }
    [[nodiscard]] const prepared_variant& variant() const noexcept
    {
        return variants[(step / steps.size()) % variants.size()];
    }
};

struct queue_state {
    std::uint16_t qid = 0;
    std::uint32_t sq_tail = 0;
    std::uint32_t cq_head = 0;
    bool phase = true;
    std::array<slot_state, slots_per_queue> slots{};
};

[[nodiscard]] constexpr std::byte pattern_byte(std::uint8_t seed, std::size_t index) noexcept
{
    return static_cast<std::byte>((seed * 131U + index * 7U + (index >> 9)) & 0xffU);
}
constexpr std::byte poison{0xa5};

/// Failures seen inside the window, kept without allocating and reported after it.
struct failures {
    std::uint64_t bad_status = 0;
    std::uint64_t bad_entry = 0;
    std::uint64_t bad_data = 0;
    std::uint64_t missing = 0;
    std::uint16_t first_status = 0;
};

template <typename Traits>
struct io_rig {
    using controller_type = nvmekit::controller<Traits>;
    using host_type = nvmekit::testing::in_process_host<controller_type>;
    using dma_type = std::conditional_t<std::is_same_v<typename Traits::dma, flat_memory>, flat_memory&,
                                        typename Traits::dma>;

    nvmekit_test::host_memory memory{std::size_t{16} << 20};
    dma_type dma{memory};
    counting_msix msix;
    nvmekit::testing::manual_clock clock;
    typename controller_type::subsystem_type subsystem;
    controller_type ctrl{dma, msix, clock, subsystem};
    host_type host{ctrl, memory, clock};
    unsigned dstrd = 0;
    std::array<queue_state, queue_pairs> queues{};
    std::uint64_t completed = 0;
    std::uint64_t reads = 0;
    std::uint64_t writes = 0;
    failures failed{};

    io_rig()
    {
        const auto& ram =
            subsystem.add_namespace(nvmekit::ram_backend{namespace_bytes, {.preallocate = true}});
        const auto& null = subsystem.add_namespace(nvmekit::null_backend{namespace_bytes});
        EXPECT_EQ(ram.nsid(), ram_nsid);
        EXPECT_EQ(null.nsid(), null_nsid);
        EXPECT_EQ(ram.block_bytes(), block_bytes);
        EXPECT_EQ(null.block_bytes(), block_bytes);
        const auto up = host.bring_up({.io_queue_pairs = queue_pairs, .io_entries = queue_entries});
        dstrd = up.cap.get(spec::cap_register::dstrd);
        for (std::uint16_t q = 0; q < queue_pairs; ++q) {
            auto& queue = queues[q];
            queue.qid = static_cast<std::uint16_t>(q + 1);
            for (std::uint32_t s = 0; s < slots_per_queue; ++s) {
                prepare_slot(queue.slots[s], (std::uint64_t{q} * slots_per_queue + s) * region_blocks);
            }
        }
    }

    /// The slot's buffer and, for every shape, its PRP list or SGL segments, built once.
    void prepare_slot(slot_state& slot, std::uint64_t first_lba)
    {
        slot.first_lba = first_lba;
        const std::uint64_t buffer = host.allocate(slot_buffer_bytes);
        for (std::size_t v = 0; v < shapes.size(); ++v) {
            const auto& shape = shapes[v];
            auto& variant = slot.variants[v];
            variant.sgl = shape.sgl;
            variant.piece_count = shape.piece_count;
            variant.piece_bytes = shape.piece_bytes;
            std::array<typename host_type::sgl_piece, 4> pieces{};
            for (std::uint32_t p = 0; p < shape.piece_count; ++p) {
                variant.piece_addresses[p] = buffer + shape.piece_offsets[p];
                pieces[p] = {.address = variant.piece_addresses[p], .length = shape.piece_bytes};
            }
            variant.dptr = shape.sgl ? host.build_sgl(std::span{pieces}.first(shape.piece_count), 2)
                                     : host.build_prps(variant.piece_addresses[0], shape.piece_bytes);
        }
    }

    /// Fills the slot's pieces: the pattern of `seed`, or poison before a read.
    void fill(const prepared_variant& variant, bool with_pattern, std::uint8_t seed)
    {
        std::size_t index = 0;
        for (std::uint32_t p = 0; p < variant.piece_count; ++p) {
            for (std::byte& byte : memory.bytes(variant.piece_addresses[p], variant.piece_bytes)) {
                byte = with_pattern ? pattern_byte(seed, index) : poison;
                ++index;
            }
        }
    }

    /// Whether the slot's pieces hold the pattern of `seed` (or zeros: `zeros`).
    [[nodiscard]] bool holds(const prepared_variant& variant, bool zeros, std::uint8_t seed)
    {
        std::size_t index = 0;
        for (std::uint32_t p = 0; p < variant.piece_count; ++p) {
            for (const std::byte byte : memory.bytes(variant.piece_addresses[p], variant.piece_bytes)) {
                if (byte != (zeros ? std::byte{0} : pattern_byte(seed, index))) {
                    return false;
                }
                ++index;
            }
        }
        return true;
    }

    void submit(queue_state& queue, std::uint32_t slot_index)
    {
        auto& slot = queue.slots[slot_index];
        const auto& kind = slot.kind();
        const auto& variant = slot.variant();
        const bool write = kind.opcode == spec::nvm_opcode::write;
        if (write && kind.nsid == ram_nsid) {
            slot.seed = static_cast<std::uint8_t>(slot.seed + 1U);
        }
        fill(variant, write, slot.seed);
        auto sqe = write ? host_type::template lba_command<spec::write_view>(kind.opcode, kind.nsid,
                                                                             slot.first_lba, variant.blocks())
                         : host_type::template lba_command<spec::read_view>(kind.opcode, kind.nsid,
                                                                            slot.first_lba, variant.blocks());
        sqe.dptr = variant.dptr;
        if (variant.sgl) {
            host_type::use_sgl(sqe);
        }
        sqe.cdw0.set(spec::command_dword0::cid, static_cast<std::uint16_t>(slot_index));
        memory.store(host.submission_entry_address(queue.qid, queue.sq_tail), sqe);
        queue.sq_tail = (queue.sq_tail + 1U) % queue_entries;
    }

    void ring_sq(const queue_state& queue)
    {
        ctrl.mmio_write(spec::sq_tail_doorbell_offset(queue.qid, dstrd), 4, queue.sq_tail);
    }

    /// Reads every new CQE of the queue, checks it and its data, and writes the CQ head doorbell.
    std::uint32_t reap(queue_state& queue)
    {
        std::uint32_t reaped = 0;
        for (;;) {
            const auto cqe = memory.load<spec::completion_queue_entry>(
                host.completion_entry_address(queue.qid, queue.cq_head));
            if (cqe.phase() != queue.phase) {
                break;
            }
            queue.cq_head = (queue.cq_head + 1U) % queue_entries;
            if (queue.cq_head == 0) {
                queue.phase = !queue.phase;
            }
            ++reaped;
            ++completed;
            if (cqe.sq_id != queue.qid || cqe.cid >= slots_per_queue || cqe.sq_head >= queue_entries) {
                ++failed.bad_entry;
                continue;
            }
            auto& slot = queue.slots[cqe.cid];
            const auto& kind = slot.kind();
            if (!cqe.status().is_success()) {
                if (failed.bad_status++ == 0) {
                    failed.first_status = cqe.status().raw;
                }
            } else if (kind.opcode == spec::nvm_opcode::read) {
                ++reads;
                if (!holds(slot.variant(), kind.nsid == null_nsid, slot.seed)) {
                    ++failed.bad_data;
                }
            } else {
                ++writes;
            }
            ++slot.step;
        }
        if (reaped != 0) {
            ctrl.mmio_write(spec::cq_head_doorbell_offset(queue.qid, dstrd), 4, queue.cq_head);
        }
        return reaped;
    }

    /// Every slot of every queue submits one command; one poll runs them; every CQ is reaped.
    /// Odd rounds ring the SQ doorbell after each entry, even rounds once per queue.
    void round(std::uint64_t number)
    {
        for (auto& queue : queues) {
            for (std::uint32_t s = 0; s < slots_per_queue; ++s) {
                submit(queue, s);
                if (number % 2 == 1) {
                    ring_sq(queue);
                }
            }
            if (number % 2 == 0) {
                ring_sq(queue);
            }
        }
        ctrl.poll();
        for (auto& queue : queues) {
            const std::uint32_t reaped = reap(queue);
            if (reaped != slots_per_queue) {
                failed.missing += slots_per_queue - std::min(reaped, slots_per_queue);
            }
        }
    }

    void run(std::uint64_t rounds, std::uint64_t& number)
    {
        for (std::uint64_t i = 0; i < rounds; ++i) {
            round(number++);
        }
    }
};

/// Enough rounds that every SQ and CQ wraps twice and every slot goes through every shape and step.
constexpr std::uint64_t warm_up_rounds = 2 * queue_entries / slots_per_queue;
static_assert(warm_up_rounds >= shapes.size() * steps.size());
/// 4 queues x 8 slots x 320 rounds = 10,240 commands.
constexpr std::uint64_t measured_rounds = 320;

template <typename Traits>
void expect_no_allocation_in_steady_state()
{
    io_rig<Traits> r;
    std::uint64_t number = 0;
    r.run(warm_up_rounds, number);
    ASSERT_EQ(r.completed, warm_up_rounds * queue_pairs * slots_per_queue);
    ASSERT_EQ(r.failed.bad_status + r.failed.bad_entry + r.failed.bad_data + r.failed.missing, 0U);
    {
        std::array<void*, 4> frames{};
        static_cast<void>(::backtrace(frames.data(), static_cast<int>(frames.size()))); // loads libgcc now
    }
    const std::uint64_t completed_before = r.completed;
    const std::uint64_t reads_before = r.reads;
    const std::uint64_t writes_before = r.writes;
    const std::uint64_t raised_before = r.msix.raised[1];

    start_counting(true);
    r.run(measured_rounds, number);
    const heap_activity heap = stop_counting();

    EXPECT_EQ(heap.allocations, 0U);
    EXPECT_EQ(heap.deallocations, 0U);
    const std::uint64_t commands = r.completed - completed_before;
    EXPECT_EQ(commands, measured_rounds * queue_pairs * slots_per_queue);
    EXPECT_GE(commands, 10'000U);
    EXPECT_EQ(r.reads - reads_before, commands / 2);
    EXPECT_EQ(r.writes - writes_before, commands / 2);
    EXPECT_EQ(r.failed.bad_status, 0U) << "first status 0x" << std::hex << r.failed.first_status;
    EXPECT_EQ(r.failed.bad_entry, 0U);
    EXPECT_EQ(r.failed.bad_data, 0U);
    EXPECT_EQ(r.failed.missing, 0U);
    EXPECT_EQ(r.ctrl.requests_in_use(), 0U);
    EXPECT_EQ(r.ctrl.statistics().staging_waits, 0U);
    EXPECT_EQ(r.ctrl.statistics().dma_errors, 0U);
    EXPECT_EQ(r.ctrl.statistics().invalid_doorbells, 0U);
    EXPECT_EQ(r.ctrl.statistics().host_protocol_errors, 0U);
    EXPECT_EQ(r.msix.raised[1] - raised_before, measured_rounds); // one interrupt per poll per CQ
}

/// Keeps `pointer` observable, so that the compiler cannot elide a new/delete pair.
template <typename T>
T* escape(T* pointer)
{
    static void* volatile sink = nullptr;
    sink = pointer;
    return static_cast<T*>(sink);
}

TEST(controller_allocation, counting_allocator_counts_every_form)
{
    struct alignas(64) wide {
        std::byte bytes[64];
    };
    start_counting();
    delete escape(new int{1});
    delete[] escape(new int[3]);
    delete escape(new (std::nothrow) int{1});
    operator delete[](escape(new (std::nothrow) int[3]), std::nothrow);
    auto* aligned = escape(new wide{});
    const auto address = reinterpret_cast<std::uintptr_t>(aligned);
    delete aligned;
    delete[] escape(new wide[2]);
    // clang-format off
    operator delete(escape(operator new(100, std::align_val_t{128}, std::nothrow)), std::align_val_t{128},
                    std::nothrow);
    // clang-format on
    const heap_activity heap = stop_counting();
    EXPECT_EQ(address % 64, 0U);
    EXPECT_EQ(heap.allocations, 7U);
    EXPECT_EQ(heap.deallocations, 7U);
}

TEST(controller_allocation, zero_copy_read_and_write_allocate_nothing_in_steady_state)
{
    expect_no_allocation_in_steady_state<zero_copy_traits>();
}

TEST(controller_allocation, staged_read_and_write_allocate_nothing_in_steady_state)
{
    expect_no_allocation_in_steady_state<staging_traits>();
}

} // namespace
