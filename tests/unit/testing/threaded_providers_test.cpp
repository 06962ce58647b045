#include <nvmekit/testing/flat_memory.hpp>
#include <nvmekit/testing/manual_clock.hpp>
#include <nvmekit/testing/recording_dma.hpp>
#include <nvmekit/testing/recording_msix.hpp>

/// The test providers shared between threads, as a controller whose poll groups run on threads of
/// their own shares them with the test's host thread: synchronized flat_memory, recording_msix,
/// manual_clock and recording_dma, then the in-process host driving a controller polled by another
/// thread. Built
/// under ThreadSanitizer, any unsynchronized access among them fails the run.

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <nvmekit/backends/ram_backend.hpp>

#include "../controller_fixture.hpp"
#include "../thread_group.hpp"

namespace {

namespace nt = nvmekit::testing;
namespace spec = nvmekit::spec;
using namespace std::chrono_literals;

using nvmekit_test::thread_group;

// ---- flat_memory ---------------------------------------------------------------------------------

/// A record whose words all hold the same value: a read that mixes two writes shows.
struct stamped {
    std::array<std::uint64_t, 8> words{};
    void fill(std::uint64_t value) { words.fill(value); }
    [[nodiscard]] bool whole() const
    {
        for (const std::uint64_t word : words) {
            if (word != words[0]) {
                return false;
            }
        }
        return true;
    }
};

TEST(threaded_flat_memory, a_reader_sees_whole_records_in_order_while_a_writer_writes_them)
{
    nt::flat_memory memory;
    memory.add_range(0x10000, 0x10000);
    memory.set_synchronized(true);
    constexpr std::uint64_t by_store = 0x10000;
    constexpr std::uint64_t by_write = 0x10100;
    constexpr std::uint64_t last = 20000;

    std::atomic<bool> reader_ok{true};
    std::atomic<std::uint64_t> reads{0};
    thread_group threads{2, [&](std::size_t index) {
                             if (index == 0) { // the writer: store() one record, write() the other
                                 for (std::uint64_t value = 1; value <= last; ++value) {
                                     stamped record{};
                                     record.fill(value);
                                     memory.store(by_store, record);
                                     if (memory.write(by_write, std::as_bytes(std::span{&record, 1}))) {
                                         reader_ok = false;
                                     }
                                 }
                                 return;
                             }
                             // The reader: load() one record, read() the other, until it sees the
                             // last value in both; values never go back.
                             std::uint64_t seen_store = 0;
                             std::uint64_t seen_write = 0;
                             while (seen_store != last || seen_write != last) {
                                 const auto loaded = memory.load<stamped>(by_store);
                                 stamped copied{};
                                 if (memory.read(by_write, std::as_writable_bytes(std::span{&copied, 1})) ||
                                     !loaded.whole() || !copied.whole() || loaded.words[0] < seen_store ||
                                     copied.words[0] < seen_write) {
                                     reader_ok = false;
                                     return;
                                 }
                                 seen_store = loaded.words[0];
                                 seen_write = copied.words[0];
                                 reads.fetch_add(1, std::memory_order_relaxed);
                             }
                         }};
    threads.join();
    EXPECT_TRUE(reader_ok);
    EXPECT_GT(reads.load(), 0U);
    EXPECT_EQ(memory.load<stamped>(by_store).words[7], last);
    EXPECT_EQ(memory.load<stamped>(by_write).words[7], last);
}

TEST(threaded_flat_memory, threads_allocate_free_and_copy_at_once_without_sharing_a_byte)
{
    nt::flat_memory memory;
    memory.add_range(0x100000, 0x40000);
    memory.set_synchronized(true);
    constexpr std::size_t thread_count = 4;
    constexpr int rounds = 500;

    std::atomic<int> failures{0};
    thread_group threads{thread_count, [&](std::size_t index) {
                             const auto mark = static_cast<std::byte>(0x10 + index);
                             for (int round = 0; round < rounds; ++round) {
                                 const std::size_t size = 64 + static_cast<std::size_t>(round % 7) * 96;
                                 const auto address = memory.allocate(size, 64);
                                 if (!address) {
                                     ++failures;
                                     continue;
                                 }
                                 const std::vector<std::byte> written(size, mark);
                                 std::vector<std::byte> read_back(size);
                                 if (memory.write(*address, written) || memory.read(*address, read_back) ||
                                     read_back != written) {
                                     ++failures; // another thread got the same bytes
                                 }
                                 memory.deallocate(*address);
                             }
                         }};
    threads.join();
    EXPECT_EQ(failures.load(), 0);
    // Everything was freed: the whole range is one allocation again.
    EXPECT_EQ(memory.allocate(0x40000, 4096), std::optional<std::uint64_t>{0x100000});
}

// ---- recording_msix ------------------------------------------------------------------------------

TEST(threaded_recording_msix, raises_from_several_threads_are_all_counted_while_the_host_reads)
{
    nt::recording_msix msix;
    constexpr std::size_t raisers = 4;
    constexpr std::uint32_t raises = 5000;
    std::atomic<std::size_t> finished{0};

    std::atomic<bool> reader_ok{true};
    std::size_t observations = 0;
    {
        // Each raiser raises its own vector with message data 0, 1, 2, ...; one more thread drives
        // INTx up and down.
        thread_group threads{raisers + 1, [&](std::size_t index) {
                                 if (index == raisers) {
                                     for (std::uint32_t i = 0; i < raises; ++i) {
                                         msix.set_intx(i % 2 == 0);
                                     }
                                 } else {
                                     const auto vector = static_cast<std::uint16_t>(index * 100);
                                     for (std::uint32_t data = 0; data < raises; ++data) {
                                         msix.raise_msix(vector, {0xfee0'0000, data});
                                     }
                                 }
                                 finished.fetch_add(1);
                             }};
        // The host thread: counts only grow and never pass what was raised; a snapshot holds
        // each vector's raises in order.
        std::array<std::size_t, raisers> last_counts{};
        std::size_t last_transitions = 0;
        while (finished.load() != raisers + 1 && reader_ok) {
            for (std::size_t index = 0; index < raisers; ++index) {
                const std::size_t count = msix.count(static_cast<std::uint16_t>(index * 100));
                if (count < last_counts[index] || count > raises) {
                    reader_ok = false;
                }
                last_counts[index] = count;
            }
            const std::size_t transitions = msix.intx_transitions();
            if (transitions < last_transitions || transitions > raises) {
                reader_ok = false;
            }
            last_transitions = transitions;
            static_cast<void>(msix.intx_level());
            const auto snapshot = msix.snapshot();
            std::array<std::uint32_t, raisers> next_data{};
            for (const auto& event : snapshot) {
                const std::size_t index = event.vector / 100U;
                if (event.vector % 100U != 0 || index >= raisers || event.message.data != next_data[index]) {
                    reader_ok = false;
                    break;
                }
                ++next_data[index];
            }
            if (snapshot.size() > msix.total()) {
                reader_ok = false;
            }
            ++observations;
        }
    }
    EXPECT_TRUE(reader_ok);
    EXPECT_GT(observations, 0U);
    EXPECT_EQ(msix.total(), raisers * raises);
    for (std::size_t index = 0; index < raisers; ++index) {
        EXPECT_EQ(msix.count(static_cast<std::uint16_t>(index * 100)), raises) << "vector " << index * 100;
    }
    EXPECT_EQ(msix.intx_transitions(), raises);
    EXPECT_FALSE(msix.intx_level()); // the last call drove it low
    // Quiet again: the view is usable and agrees with the counts.
    EXPECT_EQ(msix.events().size(), raisers * raises);
}

TEST(threaded_recording_msix, clear_while_raising_forgets_exactly_what_came_before_it)
{
    nt::recording_msix msix;
    constexpr std::uint32_t raises = 20000;
    // The last `tail` raises come after the last clear: the raiser waits for the clearing to stop
    // before making them, so that a slow raiser cannot have everything cleared.
    constexpr std::uint32_t tail = 1000;
    std::atomic<bool> stop_clearing{false};
    std::atomic<bool> clearing_stopped{false};
    thread_group raiser{1, [&](std::size_t) {
                            for (std::uint32_t data = 0; data < raises; ++data) {
                                if (data == raises - tail) {
                                    stop_clearing = true;
                                    while (!clearing_stopped) {
                                        std::this_thread::yield();
                                    }
                                }
                                msix.raise_msix(1, {0, data});
                            }
                        }};
    std::size_t clears = 0;
    while (!stop_clearing && clears < 50) {
        msix.clear();
        ++clears;
    }
    clearing_stopped = true;
    raiser.join();
    // What is left is an unbroken run of the latest raises, and count agrees with it.
    const auto events = msix.snapshot();
    ASSERT_GE(events.size(), tail);
    EXPECT_EQ(events.back().message.data, raises - 1);
    for (std::size_t i = 1; i < events.size(); ++i) {
        ASSERT_EQ(events[i].message.data, events[i - 1].message.data + 1);
    }
    EXPECT_EQ(msix.count(1), events.size());
}

// ---- manual_clock --------------------------------------------------------------------------------

TEST(threaded_manual_clock, readers_see_time_only_move_forward_and_what_was_written_before_it)
{
    nt::manual_clock clock;
    constexpr std::size_t steps = 20000;
    // The mover writes slot t - 1 before advancing to t; a reader that sees time t may read every
    // slot below t (release on advance, acquire on now()), which ThreadSanitizer checks.
    std::vector<std::uint64_t> slots(steps, 0);
    std::atomic<bool> readers_ok{true};
    thread_group threads{
        3, [&](std::size_t index) {
            if (index == 0) {
                for (std::size_t step = 0; step < steps; ++step) {
                    slots[step] = step + 1;
                    if (step % 2 == 0) {
                        clock.advance(1ns);
                    } else {
                        clock.set(std::chrono::nanoseconds{static_cast<std::int64_t>(step + 1)});
                    }
                }
                return;
            }
            std::int64_t last = 0;
            while (last != static_cast<std::int64_t>(steps)) {
                const std::int64_t now = clock.now().count();
                if (now < last || now > static_cast<std::int64_t>(steps) ||
                    (now > 0 &&
                     slots[static_cast<std::size_t>(now) - 1] != static_cast<std::uint64_t>(now))) {
                    readers_ok = false;
                    return;
                }
                last = now;
            }
        }};
    threads.join();
    EXPECT_TRUE(readers_ok);
    EXPECT_EQ(clock.now(), std::chrono::nanoseconds{steps});
}

TEST(threaded_manual_clock, advances_from_several_threads_all_count)
{
    nt::manual_clock clock;
    constexpr int per_thread = 10000;
    {
        thread_group threads{3, [&](std::size_t index) {
                                 for (int i = 0; i < per_thread; ++i) {
                                     clock.advance(
                                         std::chrono::nanoseconds{static_cast<std::int64_t>(index + 1)});
                                 }
                             }};
    }
    EXPECT_EQ(clock.now(), std::chrono::nanoseconds{per_thread * (1 + 2 + 3)});
}

// ---- recording_dma under poll-group threads -----------------------------------------------------

/// The controller reaches synchronized host memory through a recording_dma; its I/O queues run on
/// two poll-group threads.
struct recorded_groups_traits : nvmekit_test::recording_dma_traits {
    static constexpr nvmekit::limits limits{.io_queues = 4,
                                            .queue_entries = 64,
                                            .mdts = 3,
                                            .msix_vectors = 5,
                                            .commands_per_queue = 16,
                                            .max_segments = 16,
                                            .staging_buffers = 4};
};

TEST(threaded_recording_dma, poll_group_threads_record_every_access_and_a_failed_range_fails_only_its_command)
{
    using rig_type = nvmekit_test::basic_rig<recorded_groups_traits>;
    using host_type = rig_type::host_type;
    rig_type r{nvmekit::controller_config{.poll_groups = 2, .concurrent_poll_groups = true},
               std::size_t{32} << 20};
    r.memory.set_synchronized(true); // before the groups' threads start
    r.subsystem.add_namespace(nvmekit::ram_backend{std::uint64_t{4} << 20, {.concurrent = true}},
                              {.lba_format = 0});
    r.host.bring_up({.io_queue_pairs = 4,
                     .io_entries = 32,
                     .interrupts = false,
                     .max_polls = 50'000'000,
                     .poll_step = std::chrono::nanoseconds{100}});
    r.dma.clear();
    r.ctrl.start_poll_groups({.name = "recorded"});
    // Data the controller writes into `poisoned` (a read command's) fails; all else goes through.
    const std::uint64_t poisoned = r.host.allocate(4096);
    r.dma.fail_range(poisoned, 4096, nt::access_kind::write);
    constexpr std::uint32_t blocks = 8;
    constexpr std::size_t bytes = std::size_t{blocks} * 512;
    for (std::uint16_t round = 0; round < 4; ++round) {
        for (std::uint16_t qid = 1; qid <= 4; ++qid) {
            const std::uint64_t slba = (std::uint64_t{qid} * 4 + round) * blocks;
            std::vector<std::byte> data(bytes, std::byte{static_cast<unsigned char>(qid * 16 + round)});
            const std::uint64_t source = r.host.allocate(bytes);
            ASSERT_EQ(r.memory.write(source, data), std::error_code{});
            auto write = host_type::lba_command<spec::write_view>(spec::nvm_opcode::write, 1, slba, blocks);
            write.dptr = r.host.build_prps(source, bytes);
            ASSERT_TRUE(r.host.io(qid, write).ok()) << "queue " << qid;
            const std::uint64_t sink = r.host.allocate(bytes);
            auto read = host_type::lba_command<spec::read_view>(spec::nvm_opcode::read, 1, slba, blocks);
            read.dptr = r.host.build_prps(sink, bytes);
            ASSERT_TRUE(r.host.io(qid, read).ok()) << "queue " << qid;
            std::vector<std::byte> back(bytes);
            ASSERT_EQ(r.memory.read(sink, back), std::error_code{});
            EXPECT_EQ(back, data) << "queue " << qid << " round " << round;
            r.memory.deallocate(source);
            r.memory.deallocate(sink);
        }
    }
    auto poisoned_read = host_type::lba_command<spec::read_view>(spec::nvm_opcode::read, 1, 0, blocks);
    poisoned_read.dptr = r.host.build_prps(poisoned, bytes);
    EXPECT_EQ(r.host.io(2, poisoned_read).status(),
              spec::status{spec::generic_status::data_transfer_error}.with_dnr());
    r.ctrl.stop_poll_groups();

    const auto records = r.dma.snapshot();
    nt::dma_counts tally;
    std::size_t poisoned_writes = 0;
    for (const auto& access : records) {
        tally.reads += access.kind == nt::access_kind::read ? 1 : 0;
        tally.writes += access.kind == nt::access_kind::write ? 1 : 0;
        tally.maps += access.kind == nt::access_kind::map ? 1 : 0;
        tally.failures += access.result ? 1 : 0;
        const bool in_poisoned = access.length != 0 && access.address < poisoned + 4096 &&
                                 poisoned < access.address + access.length;
        if (access.kind == nt::access_kind::write && in_poisoned) {
            ++poisoned_writes;
            EXPECT_EQ(access.result, make_error_code(nvmekit::errc::dma_fault));
        } else if (access.kind == nt::access_kind::map) {
            // Synchronized memory declines every map, and the controller copies instead.
            EXPECT_EQ(access.result, make_error_code(nvmekit::errc::dma_unmapped));
        } else {
            EXPECT_EQ(access.result, std::error_code{});
        }
    }
    EXPECT_EQ(r.dma.counts(), tally);
    EXPECT_GE(poisoned_writes, 1U);
    EXPECT_GT(tally.maps, 0U); // the controller tried to map data buffers, then fell back
    EXPECT_EQ(tally.failures, poisoned_writes + tally.maps);
    // 32 commands' data, 16 KiB out and 16 KiB back per queue pair.
    EXPECT_GE(tally.reads, 16U);
    EXPECT_GE(tally.writes, 16U);
    EXPECT_EQ(r.ctrl.requests_in_use(), 0U);
}

// ---- the in-process host against a controller polled from another thread ----------------------------

/// A controller polled by a thread of its own, never by the host. Register accesses and polls run
/// one at a time (a mutex), but every command executes on the poller thread, whose DMA, MSI-X
/// raises and clock reads happen while the host thread writes SQEs and data, reads CQEs, checks
/// interrupts and moves the clock, which is what poll-group threads do to the providers. The
/// host's poll() waits for the poller to finish a poll that began after the call, or, when
/// `host_waits` is false, only yields: the host then reads a CQ and counts its vector's raises
/// while the poller writes the CQE and raises the vector.
class polled_elsewhere {
public:
    using controller_type = nvmekit::controller<nvmekit_test::test_traits>;

    explicit polled_elsewhere(controller_type& controller, bool host_waits = true)
        : controller_{controller}, host_waits_{host_waits}, poller_{[this] { run(); }}
    {}
    polled_elsewhere(const polled_elsewhere&) = delete;
    polled_elsewhere& operator=(const polled_elsewhere&) = delete;
    ~polled_elsewhere() { stop(); }

    void stop()
    {
        stopping_ = true;
        if (poller_.joinable()) {
            poller_.join();
        }
    }
    [[nodiscard]] std::size_t background_polls() const noexcept { return background_polls_.load(); }
    [[nodiscard]] std::size_t background_commands() const noexcept { return background_commands_.load(); }

    // What in_process_host calls.
    [[nodiscard]] std::uint64_t mmio_read(std::uint64_t offset, unsigned width)
    {
        const std::lock_guard lock{mutex_};
        return controller_.mmio_read(offset, width);
    }
    void mmio_write(std::uint64_t offset, unsigned width, std::uint64_t value)
    {
        const std::lock_guard lock{mutex_};
        controller_.mmio_write(offset, width, value);
    }
    std::size_t poll()
    {
        if (!host_waits_) {
            std::this_thread::yield();
            return 0;
        }
        const std::size_t commands = background_commands_.load();
        // The poll counted next may have begun before this call; the one after it did not.
        const std::size_t target = background_polls_.load() + 2;
        while (background_polls_.load() < target) {
            std::this_thread::yield();
        }
        return background_commands_.load() - commands;
    }
    void set_msix_control(bool enabled, bool function_mask)
    {
        const std::lock_guard lock{mutex_};
        controller_.set_msix_control(enabled, function_mask);
    }
    [[nodiscard]] std::uint64_t msix_table_offset()
    {
        const std::lock_guard lock{mutex_};
        return controller_.msix_table_offset();
    }
    struct msix_table {
        std::uint16_t count;
        [[nodiscard]] std::uint16_t vectors() const noexcept { return count; }
    };
    [[nodiscard]] msix_table msix()
    {
        const std::lock_guard lock{mutex_};
        return {controller_.msix().vectors()};
    }

private:
    void run()
    {
        while (!stopping_) {
            {
                const std::lock_guard lock{mutex_};
                background_commands_ += controller_.poll();
            }
            ++background_polls_;
            std::this_thread::yield();
        }
    }

    controller_type& controller_;
    const bool host_waits_;
    std::mutex mutex_;
    std::atomic<bool> stopping_{false};
    std::atomic<std::size_t> background_polls_{0};
    std::atomic<std::size_t> background_commands_{0};
    std::thread poller_;
};

/// Host memory, interrupts, clock and controller of a host that shares them with a poller thread.
struct threaded_rig {
    static constexpr std::uint64_t base = 0x2'0000'0000;
    nt::flat_memory memory;
    nt::recording_msix msix;
    nt::manual_clock clock;
    polled_elsewhere::controller_type::subsystem_type subsystem;
    std::optional<polled_elsewhere::controller_type> ctrl;
    std::optional<polled_elsewhere> polled;
    std::optional<nt::in_process_host<polled_elsewhere>> host;

    explicit threaded_rig(bool interrupts, bool host_waits = true)
    {
        memory.add_range(base, std::size_t{16} << 20);
        memory.set_synchronized(true); // before any other thread starts
        subsystem.add_namespace(nvmekit::ram_backend{std::uint64_t{4} << 20});
        ctrl.emplace(memory, msix, clock, subsystem, nvmekit::controller_config{});
        polled.emplace(*ctrl, host_waits);
        if (interrupts) {
            host.emplace(*polled, memory, clock, msix);
        } else {
            host.emplace(*polled, memory, clock);
        }
    }
    threaded_rig(const threaded_rig&) = delete;
    threaded_rig& operator=(const threaded_rig&) = delete;
    ~threaded_rig()
    {
        polled->stop(); // before the controller and providers go
    }
};

/// Writes then reads back `blocks` 512-byte blocks at every LBA step through `qid`, with data
/// buffers described by PRP lists and SGLs, and checks every byte.
void write_and_read_back(nt::in_process_host<polled_elsewhere>& host, nt::flat_memory& memory,
                         std::uint16_t qid, std::uint32_t seed)
{
    using host_type = nt::in_process_host<polled_elsewhere>;
    constexpr std::uint32_t blocks = 24; // 12 KiB: PRP1, then a PRP list of the other pages
    constexpr std::size_t bytes = std::size_t{blocks} * 512;
    const std::uint64_t source = host.allocate(bytes + 512);
    const std::uint64_t sink = host.allocate(bytes + 512);
    for (std::uint32_t round = 0; round < 8; ++round) {
        const std::uint64_t slba = (seed * 8U + round) * blocks;
        std::vector<std::byte> data(bytes);
        for (std::size_t i = 0; i < bytes; ++i) {
            data[i] = static_cast<std::byte>((i * 7U) ^ (seed + round * 31U));
        }
        // An odd dword offset into the page, so the data spans a PRP list.
        ASSERT_EQ(memory.write(source + 64, data), std::error_code{});
        auto write = host_type::lba_command<spec::write_view>(spec::nvm_opcode::write, 1, slba, blocks);
        write.dptr = host.build_prps(source + 64, bytes);
        ASSERT_TRUE(host.io(qid, write).ok());

        auto read = host_type::lba_command<spec::read_view>(spec::nvm_opcode::read, 1, slba, blocks);
        if (round % 2 == 0) {
            read.dptr = host.build_prps(sink, bytes);
        } else {
            // Two SGL pieces split mid-block, described in a segment in host memory.
            const host_type::sgl_piece pieces[] = {{sink, 5000}, {sink + 5000 + 100, bytes - 5000}};
            read.dptr = host.build_sgl(pieces);
            host_type::use_sgl(read);
        }
        ASSERT_TRUE(host.io(qid, read).ok());
        std::vector<std::byte> back(bytes);
        if (round % 2 == 0) {
            ASSERT_EQ(memory.read(sink, back), std::error_code{});
        } else {
            ASSERT_EQ(memory.read(sink, std::span{back}.first(5000)), std::error_code{});
            ASSERT_EQ(memory.read(sink + 5100, std::span{back}.subspan(5000)), std::error_code{});
        }
        ASSERT_EQ(back, data) << "queue " << qid << " round " << round;
        host.free_descriptor_memory();
    }
}

TEST(threaded_host, brings_up_and_moves_data_while_another_thread_polls_the_controller)
{
    threaded_rig r{true};
    auto& host = *r.host;
    const auto up =
        host.bring_up({.io_queue_pairs = 2, .physically_contiguous = false, .shadow_doorbells = true});
    ASSERT_EQ(up.io_queue_pairs, 2);
    ASSERT_TRUE(host.shadow_doorbell_buffer().has_value());
    for (std::uint16_t qid = 1; qid <= 2; ++qid) {
        write_and_read_back(host, r.memory, qid, qid);
    }
    // An admin command with data read back through the host (Identify Namespace 1).
    std::vector<std::byte> identify;
    ASSERT_TRUE(
        host.admin_read(host.identify_command(spec::cns::identify_namespace, 1, 0), 4096, identify).ok());
    ASSERT_EQ(identify.size(), 4096U);
    std::uint64_t nsze = 0; // NSZE: bytes 07:00
    std::memcpy(&nsze, identify.data(), sizeof(nsze));
    EXPECT_EQ(nsze, (std::uint64_t{4} << 20) / 512);
    // Both queues were reaped by interrupt; the poller did part of the work.
    EXPECT_GT(r.msix.count(1), 0U);
    EXPECT_GT(r.msix.count(2), 0U);
    host.shut_down();
    EXPECT_GE(r.polled->background_commands(), 2U * 8U * 2U); // every I/O command ran on the poller
}

TEST(threaded_host, the_host_reaps_while_the_poller_completes_on_two_interrupt_driven_queues)
{
    // The host does not wait for the poller: it reads CQEs, counts its vectors' raises, writes the
    // shadow doorbells and moves the clock while the poller writes CQEs, raises vectors, reads the
    // shadow doorbells and the clock. Writes are all submitted at once; each read is waited for
    // as soon as it is submitted.
    using host_type = nt::in_process_host<polled_elsewhere>;
    threaded_rig r{true, false};
    auto& host = *r.host;
    host.bring_up({.io_queue_pairs = 2,
                   .io_entries = 64,
                   .shadow_doorbells = true,
                   .max_polls = 10'000'000,
                   .poll_step = 1us});
    ASSERT_TRUE(host.shadow_doorbell_buffer().has_value());
    constexpr std::uint32_t per_queue = 24;
    constexpr std::uint32_t blocks = 2;
    constexpr std::size_t bytes = std::size_t{blocks} * 512;
    struct written {
        std::uint16_t qid;
        std::uint16_t cid;
        std::uint64_t slba;
        std::uint64_t buffer;
        std::vector<std::byte> data;
    };
    for (std::uint32_t pass = 0; pass < 3; ++pass) {
        std::vector<written> writes;
        for (std::uint32_t i = 0; i < per_queue; ++i) {
            for (std::uint16_t qid = 1; qid <= 2; ++qid) {
                const std::uint64_t slba = (std::uint64_t{qid} * per_queue + i) * blocks;
                std::vector<std::byte> data(bytes);
                for (std::size_t b = 0; b < bytes; ++b) {
                    data[b] = static_cast<std::byte>(b + i * 13U + qid * 101U + pass * 7U);
                }
                const std::uint64_t buffer = host.allocate(bytes);
                ASSERT_EQ(r.memory.write(buffer, data), std::error_code{});
                auto write =
                    host_type::lba_command<spec::write_view>(spec::nvm_opcode::write, 1, slba, blocks);
                write.dptr = host.build_prps(buffer, bytes);
                writes.push_back({qid, host.submit(qid, write), slba, buffer, std::move(data)});
            }
        }
        for (const auto& write : writes) {
            ASSERT_TRUE(host.wait_for(write.qid, write.cid).ok());
            r.memory.deallocate(write.buffer);
        }
        for (const auto& write : writes) {
            const std::uint64_t buffer = host.allocate(bytes);
            auto read =
                host_type::lba_command<spec::read_view>(spec::nvm_opcode::read, 1, write.slba, blocks);
            read.dptr = host.build_prps(buffer, bytes);
            ASSERT_TRUE(host.io(write.qid, read).ok());
            std::vector<std::byte> back(bytes);
            ASSERT_EQ(r.memory.read(buffer, back), std::error_code{});
            ASSERT_EQ(back, write.data) << "queue " << write.qid;
            r.memory.deallocate(buffer);
        }
        host.free_descriptor_memory();
    }
    EXPECT_EQ(host.outstanding(1), 0U);
    EXPECT_EQ(host.outstanding(2), 0U);
    EXPECT_GE(r.polled->background_commands(), 3U * 2U * 2U * per_queue);
}

TEST(threaded_host, polled_queues_with_contiguous_memory_and_a_reset_in_between)
{
    threaded_rig r{false};
    auto& host = *r.host;
    host.bring_up({.io_queue_pairs = 1, .io_entries = 16});
    write_and_read_back(host, r.memory, 1, 7);
    host.disable();
    host.bring_up({.io_queue_pairs = 1, .io_entries = 16});
    write_and_read_back(host, r.memory, 1, 9);
    EXPECT_GE(r.polled->background_commands(), 2U * 8U * 2U);
}

} // namespace
