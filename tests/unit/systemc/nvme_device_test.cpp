#include <nvmekit/systemc/nvme_device.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <nvmekit/backends/ram_backend.hpp>
#include <nvmekit/backends/timed_backend.hpp>
#include <nvmekit/systemc/host_platform.hpp>
#include <nvmekit/testing/host.hpp>
#include <nvmekit/timing/simple_model.hpp>
#include <nvmekit/timing/ssd_model.hpp>

// The device under TLM, driven by the in-process host driver through host_bus: the driver's
// bring-up, commands and checks run unchanged, over configuration and BAR0 transactions, with
// DMA and MSI-X as transactions to host memory. Every test runs in both modes: loosely timed
// (systemc_nvme_device/lt.*, b_transport) and approximately timed (systemc_nvme_device/at.*,
// the non-blocking protocol on the controller's asynchronous DMA).
//
// SystemC elaborates one design per process, so each test builds its platform and runs one
// simulation; ctest runs every test in a process of its own (gtest_discover_tests). Run by hand,
// the binary runs the first test and skips the others (name one with --gtest_filter).

namespace {

using namespace std::chrono_literals;
namespace sysc = nvmekit::systemc;
namespace spec = nvmekit::spec;
using nvmekit::testing::in_process_host;

constexpr std::uint64_t memory_base = 0x100000;
constexpr std::uint64_t bar0_base = 0xf0000000;
constexpr std::uint32_t block_bytes = 512;

using timed_ram =
    nvmekit::timed_backend<nvmekit::ram_backend, nvmekit::timing::simple_model, sysc::simulation_clock>;
using ssd_ram =
    nvmekit::timed_backend<nvmekit::ram_backend, nvmekit::timing::ssd_model, sysc::simulation_clock>;

/// Host memory, the device (`Traits` choose LT or AT) and the host's bus, bound to each other, and
/// the host program.
template <typename Traits>
struct platform {
    nvmekit::testing::flat_memory memory;
    nvmekit::testing::recording_msix msix;
    nvmekit::testing::manual_clock host_clock; // the driver's own bookkeeping; the device runs on sc_time
    sysc::host_memory<nvmekit::testing::recording_msix> ram;
    sysc::nvme_device<Traits> device;
    sysc::host_bus bus{"bus"};
    sc_core::sc_signal<bool> intx{"intx"};
    std::unique_ptr<sysc::host_program> program;

    explicit platform(sysc::device_options options = {}, const sysc::host_memory_options& memory_options = {})
        : ram{"ram", memory, msix, memory_options}, device{"nvme", std::move(options)}
    {
        memory.add_range(memory_base, 16U << 20);
        device.dma_socket.bind(ram.socket);
        bus.bar0_socket.bind(device.bar0_socket);
        bus.config_socket.bind(device.config_socket);
        device.intx.bind(intx);
        bus.wake_on(ram.msi_event());
    }

    /// Runs `host_code` as the host's program with a driver bound to the device, and rethrows what
    /// it threw.
    void run(std::function<void(in_process_host<sysc::host_bus>&)> host_code)
    {
        program = std::make_unique<sysc::host_program>("host", [this, host_code = std::move(host_code)] {
            bus.enumerate(bar0_base);
            in_process_host<sysc::host_bus> host{bus, memory, host_clock, msix};
            host_code(host);
        });
        sc_core::sc_start();
        ASSERT_TRUE(program->finished()) << "the simulation stopped before the host program ended";
        if (program->failure()) {
            std::rethrow_exception(program->failure());
        }
    }
};

/// The current simulated time, as a value (sc_time_stamp() refers to a time that moves on).
sc_core::sc_time simulated_now() { return sc_core::sc_time_stamp(); }

/// Skips a test when this process already ran a simulation. `Traits` are the device's.
template <typename Traits>
class systemc_nvme_device : public ::testing::Test {
protected:
    void SetUp() override
    {
        if (sc_core::sc_get_curr_simcontext()->elaboration_done()) {
            GTEST_SKIP() << "a simulation already ran in this process; run one test per process";
        }
    }
};

struct mode_names {
    template <typename Traits>
    static std::string GetName(int /*index*/)
    {
        return sysc::nvme_device<Traits>::approximately_timed ? "at" : "lt";
    }
};
using modes = ::testing::Types<sysc::device_traits, sysc::at_device_traits>;
TYPED_TEST_SUITE(systemc_nvme_device, modes, mode_names);

std::vector<std::byte> pattern(std::size_t bytes, std::uint8_t seed)
{
    std::vector<std::byte> data(bytes);
    for (std::size_t i = 0; i < bytes; ++i) {
        data[i] = static_cast<std::byte>((i * 7U + seed) & 0xffU);
    }
    return data;
}

/// Writes `data` at `slba` and reads it back through the driver; returns the read bytes.
std::vector<std::byte> write_then_read(in_process_host<sysc::host_bus>& host, std::uint64_t slba,
                                       const std::vector<std::byte>& data)
{
    const auto blocks = static_cast<std::uint32_t>(data.size() / block_bytes);
    const std::uint64_t buffer = host.allocate(data.size());
    EXPECT_FALSE(host.memory().write(buffer, data));
    auto write = host.lba_command(spec::nvm_opcode::write, 1, slba, blocks);
    host.describe_data(write, buffer, data.size());
    EXPECT_TRUE(host.io(1, write).ok());
    host.release(buffer);

    const std::uint64_t readback = host.allocate(data.size());
    auto read = host.lba_command(spec::nvm_opcode::read, 1, slba, blocks);
    host.describe_data(read, readback, data.size());
    EXPECT_TRUE(host.io(1, read).ok());
    std::vector<std::byte> out(data.size());
    EXPECT_FALSE(host.memory().read(readback, out));
    host.release(readback);
    return out;
}

TYPED_TEST(systemc_nvme_device, configuration_space_shows_an_nvme_function_with_bar0_and_msix)
{
    platform<TypeParam> rig;
    rig.device.subsystem().add_namespace(nvmekit::ram_backend{1U << 20});
    rig.run([&](in_process_host<sysc::host_bus>&) {
        EXPECT_EQ(rig.bus.config_read(nvmekit::pci::header::class_code, 1), 0x02U); // prog-if
        EXPECT_EQ(rig.bus.config_read(nvmekit::pci::header::class_code + 1, 2), 0x0108U);
        EXPECT_EQ(rig.device.config_space().bar0_address(), bar0_base);
        EXPECT_TRUE(rig.device.config_space().memory_enabled());
        EXPECT_TRUE(rig.device.controller().bus_master());
        EXPECT_EQ(rig.bus.msix_table_offset(), rig.device.controller().msix_table_offset());
        EXPECT_EQ(rig.bus.msix().vectors(), rig.device.controller().msix().vectors());
        // VS reads 2.0.0 through BAR0.
        EXPECT_EQ(rig.bus.mmio_read(0x08, 4), 0x00020000U);
    });
}

TYPED_TEST(systemc_nvme_device, brings_up_and_identifies_over_tlm)
{
    platform<TypeParam> rig;
    rig.device.subsystem().add_namespace(nvmekit::ram_backend{1U << 20});
    rig.run([&](in_process_host<sysc::host_bus>& host) {
        const auto result = host.bring_up({.io_queue_pairs = 2});
        EXPECT_EQ(result.io_queue_pairs, 2U);

        const std::uint64_t buffer = host.allocate(4096);
        const auto identify = host.admin(host.identify_command(spec::cns::identify_namespace, 1, buffer));
        ASSERT_TRUE(identify.ok());
        const auto ns = host.memory().load<spec::identify_namespace>(buffer);
        EXPECT_EQ(ns.nsze, (1U << 20) / block_bytes);
        EXPECT_GT(sc_core::sc_time_stamp(), sc_core::SC_ZERO_TIME);
    });
    EXPECT_GT(rig.device.transactions(), 0U);
    EXPECT_GT(rig.msix.total(), 0U); // every completion was reaped after its MSI-X write
    // DMA and MSI-X writes reach host memory by the mode's protocol only.
    if constexpr (sysc::nvme_device<TypeParam>::approximately_timed) {
        EXPECT_EQ(rig.ram.blocking_transactions(), 0U);
        EXPECT_EQ(rig.ram.non_blocking_transactions(), rig.device.transactions());
    } else {
        EXPECT_EQ(rig.ram.blocking_transactions(), rig.device.transactions());
        EXPECT_EQ(rig.ram.non_blocking_transactions(), 0U);
    }
}

TYPED_TEST(systemc_nvme_device, io_writes_and_reads_back_through_dma_transactions)
{
    platform<TypeParam> rig;
    rig.device.subsystem().add_namespace(nvmekit::ram_backend{1U << 20});
    rig.run([&](in_process_host<sysc::host_bus>& host) {
        host.bring_up();
        const auto data = pattern(3 * 4096 + 1024, 0x5a); // PRP1, PRP2 and a PRP list
        EXPECT_EQ(write_then_read(host, 24, data), data);
    });
    EXPECT_EQ(rig.ram.refused(), 0U);
    EXPECT_GT(rig.ram.bytes_transferred(), 2U * (3 * 4096 + 1024));
}

TYPED_TEST(systemc_nvme_device, a_command_error_completes_with_its_status)
{
    platform<TypeParam> rig;
    rig.device.subsystem().add_namespace(nvmekit::ram_backend{1U << 20});
    rig.run([&](in_process_host<sysc::host_bus>& host) {
        host.bring_up();
        const std::uint64_t buffer = host.allocate(4096);
        const std::uint64_t last_block = (1U << 20) / block_bytes - 1;
        auto read = host.lba_command(spec::nvm_opcode::read, 1, last_block, 8); // runs past the end
        host.describe_data(read, buffer, 4096);
        EXPECT_EQ(host.io(1, read).status(), spec::status{spec::generic_status::lba_out_of_range}.with_dnr());

        auto unknown = host.command(spec::nvm_opcode::read, 9); // no namespace 9
        host.describe_data(unknown, buffer, 512);
        EXPECT_FALSE(host.io(1, unknown).ok());
    });
}

TYPED_TEST(systemc_nvme_device, a_dma_the_host_memory_refuses_is_a_data_transfer_error)
{
    platform<TypeParam> rig;
    rig.device.subsystem().add_namespace(nvmekit::ram_backend{1U << 20});
    rig.run([&](in_process_host<sysc::host_bus>& host) {
        host.bring_up();
        auto read = host.lba_command(spec::nvm_opcode::read, 1, 0, 1);
        read.dptr.prp1 = 0x80000000; // outside host memory: the target answers an address error
        EXPECT_EQ(host.io(1, read).status(),
                  spec::status{spec::generic_status::data_transfer_error}.with_dnr());
    });
    EXPECT_GT(rig.ram.refused(), 0U);
}

TYPED_TEST(systemc_nvme_device, controller_reset_and_function_level_reset_bring_it_back)
{
    platform<TypeParam> rig;
    rig.device.subsystem().add_namespace(nvmekit::ram_backend{1U << 20});
    rig.run([&](in_process_host<sysc::host_bus>& host) {
        host.bring_up();
        const auto data = pattern(4096, 0x11);
        EXPECT_EQ(write_then_read(host, 0, data), data);

        host.disable(); // CC.EN = 0: a Controller Reset
        EXPECT_FALSE(rig.device.controller().submission_queue_exists(1));
        host.bring_up();
        EXPECT_EQ(write_then_read(host, 0, data), data); // the namespace kept its data

        // Initiate Function Level Reset: Device Control bit 15 in the PCI Express capability.
        const std::uint32_t device_control =
            nvmekit::pci::pci_express_capability_offset + nvmekit::pci::pci_express_register::device_control;
        rig.bus.config_write(device_control, 2, 0x8000U | rig.bus.config_read(device_control, 2));
        EXPECT_FALSE(rig.device.config_space().memory_enabled()); // FLR clears the Command register
        rig.bus.enumerate(bar0_base);
        host.bring_up();
        EXPECT_EQ(write_then_read(host, 0, data), data);
        host.shut_down();
    });
}

/// Stops the simulation `stop_after` after the host submitted `commands` 4 KiB writes, then
/// destroys the platform: nothing asserts, and in AT mode transactions were in flight.
template <typename Traits>
void stop_with_writes_in_flight(bool by_sc_stop)
{
    const sc_core::sc_time stop_after{3, sc_core::SC_US};
    auto rig = std::make_unique<platform<Traits>>(
        sysc::device_options{},
        sysc::host_memory_options{.access_latency = sc_core::sc_time{1, sc_core::SC_US}});
    rig->device.subsystem().add_namespace(nvmekit::ram_backend{1U << 20});
    bool submitted = false;
    std::size_t in_flight = 0;
    rig->program = std::make_unique<sysc::host_program>("host", [&] {
        rig->bus.enumerate(bar0_base);
        {
            // Gone before the thread stops for good: what it allocated must not show as a leak.
            in_process_host<sysc::host_bus> host{rig->bus, rig->memory, rig->host_clock, rig->msix};
            host.bring_up();
            for (std::uint64_t lba = 0; lba < 64; lba += 8) {
                auto write = host.lba_command(spec::nvm_opcode::write, 1, lba, 8);
                host.describe_data(write, host.allocate(4096), 4096);
                static_cast<void>(host.submit(1, write));
            }
        }
        submitted = true;
        if (by_sc_stop) {
            sc_core::wait(stop_after);
            in_flight = rig->device.transactions_in_flight();
            return; // host_program calls sc_stop()
        }
        sc_core::wait(); // until the simulation ends around it
    });
    if (by_sc_stop) {
        sc_core::sc_start();
    } else {
        while (!submitted) { // bring-up, a microsecond at a time
            sc_core::sc_start(sc_core::sc_time{1, sc_core::SC_US});
        }
        sc_core::sc_start(stop_after);
        in_flight = rig->device.transactions_in_flight();
    }
    ASSERT_TRUE(submitted);
    if constexpr (sysc::nvme_device<Traits>::approximately_timed) {
        EXPECT_GT(in_flight, 0U) << "the test must stop the simulation with DMA in flight";
        EXPECT_FALSE(rig->device.controller().dma_idle());
    }
    rig.reset(); // the device's teardown releases what is in flight
}

TYPED_TEST(systemc_nvme_device, destroyed_after_sc_stop_with_dma_in_flight)
{
    stop_with_writes_in_flight<TypeParam>(true);
}

TYPED_TEST(systemc_nvme_device, destroyed_when_sc_start_ends_with_dma_in_flight)
{
    stop_with_writes_in_flight<TypeParam>(false);
}

TYPED_TEST(systemc_nvme_device, bar0_is_not_decoded_until_memory_space_is_enabled)
{
    platform<TypeParam> rig;
    rig.program = std::make_unique<sysc::host_program>("host", [&] {
        EXPECT_EQ(rig.bus.mmio_read(0x08, 4), 0xffffffffU); // an unsupported request
        rig.bus.enumerate(bar0_base);
        EXPECT_EQ(rig.bus.mmio_read(0x08, 4), 0x00020000U);
    });
    sc_core::sc_start();
    EXPECT_TRUE(rig.program->finished());
}

TYPED_TEST(systemc_nvme_device, dma_takes_the_time_host_memory_annotates_within_the_global_quantum)
{
    tlm::tlm_global_quantum::instance().set(sc_core::sc_time{10, sc_core::SC_US});
    const sc_core::sc_time access{1, sc_core::SC_US};
    platform<TypeParam> rig{{}, {.access_latency = access}};
    rig.device.subsystem().add_namespace(nvmekit::ram_backend{1U << 20});
    sc_core::sc_time identify_time;
    rig.run([&](in_process_host<sysc::host_bus>& host) {
        host.bring_up();
        const std::uint64_t buffer = host.allocate(4096);
        const sc_core::sc_time start = simulated_now();
        EXPECT_TRUE(host.admin(host.identify_command(spec::cns::identify_controller, 0, buffer)).ok());
        identify_time = sc_core::sc_time_stamp() - start;
    });
    // The SQE read, the data write, the CQE write and the MSI-X write each take `access`; the host
    // sees the completion once the MSI-X write has landed, in less than a quantum beyond.
    EXPECT_GE(identify_time, 4 * access);
    EXPECT_LE(identify_time, 4 * access + tlm::tlm_global_quantum::instance().get() + access);
}

TYPED_TEST(systemc_nvme_device, at_overlaps_the_dma_of_queued_commands_and_lt_serialises_it)
{
    // Eight 4 KiB reads submitted at once, host memory taking 1 us per access: one fetch of the
    // eight entries, then per command a data write, a CQE write and an MSI-X write.
    const sc_core::sc_time access{1, sc_core::SC_US};
    platform<TypeParam> rig{{}, {.access_latency = access}};
    rig.device.subsystem().add_namespace(nvmekit::ram_backend{1U << 20});
    sc_core::sc_time batch_time;
    rig.run([&](in_process_host<sysc::host_bus>& host) {
        host.bring_up();
        std::vector<std::uint16_t> cids;
        const sc_core::sc_time start = simulated_now();
        for (std::uint64_t slba = 0; slba < 8 * 8; slba += 8) {
            auto read = host.lba_command(spec::nvm_opcode::read, 1, slba, 8);
            host.describe_data(read, host.allocate(4096), 4096);
            cids.push_back(host.submit(1, read));
        }
        for (const std::uint16_t cid : cids) {
            EXPECT_TRUE(host.wait_for(1, cid).ok());
        }
        batch_time = sc_core::sc_time_stamp() - start;
    });
    if constexpr (sysc::nvme_device<TypeParam>::approximately_timed) {
        // The commands' data and completion writes are in flight together.
        EXPECT_LE(batch_time, 6 * access) << batch_time.to_string();
        EXPECT_GT(rig.ram.most_waiting_responses(), 0U); // and their responses begin one at a time
    } else {
        EXPECT_GE(batch_time, 8 * 2 * access) << batch_time.to_string(); // one access at a time
    }
}

TYPED_TEST(systemc_nvme_device, intx_follows_pending_completions_when_msix_is_off)
{
    platform<TypeParam> rig;
    rig.device.subsystem().add_namespace(nvmekit::ram_backend{1U << 20});
    rig.run([&](in_process_host<sysc::host_bus>& host) {
        host.bring_up({.reap_by_interrupt = false});
        rig.bus.set_msix_control(false, false);
        const std::uint64_t buffer = host.allocate(4096);
        auto read = host.lba_command(spec::nvm_opcode::read, 1, 0, 1);
        host.describe_data(read, buffer, 512);
        const std::uint16_t cid = host.submit(1, read);
        for (int step = 0; step < 100 && !rig.intx.read(); ++step) {
            rig.bus.poll();
        }
        EXPECT_TRUE(rig.intx.read());
        EXPECT_TRUE(host.wait_for(1, cid).ok()); // reaps the CQE and writes the CQ head doorbell
        for (int step = 0; step < 100 && rig.intx.read(); ++step) {
            rig.bus.poll();
        }
        EXPECT_FALSE(rig.intx.read());
    });
}

/// The simple model the latency tests time their namespace with, and a QD1 4 KiB read's time on it.
const nvmekit::timing::simple_parameters qd1_parameters{.read_latency = 80us,
                                                        .write_latency = 20us,
                                                        .transfer_bytes_per_second = 2'000'000'000,
                                                        .parallelism = 1};
const sc_core::sc_time qd1_read_time{82048, sc_core::SC_NS}; // 80 us + 4096 bytes at 2 GB/s

/// The simulated time of eight QD1 4 KiB reads on a namespace timed by qd1_parameters, the device
/// polling every `poll_period` while busy, or at the backend's next completion with `use_next_due`.
template <typename Traits>
std::vector<sc_core::sc_time> qd1_read_latencies(const sc_core::sc_time& poll_period, bool use_next_due)
{
    sysc::device_options options;
    options.poll_period = poll_period;
    platform<Traits> rig{options};
    auto& ns = rig.device.subsystem().add_namespace(timed_ram{nvmekit::ram_backend{1U << 20},
                                                              nvmekit::timing::simple_model{qd1_parameters},
                                                              rig.device.clock(), 64});
    if (use_next_due) {
        const timed_ram* timed = ns.backend().template get_if<timed_ram>();
        rig.device.set_next_due([timed] { return timed->next_due(); });
    }
    std::vector<sc_core::sc_time> latencies;
    rig.run([&](in_process_host<sysc::host_bus>& host) {
        host.bring_up();
        const std::uint64_t buffer = host.allocate(4096);
        for (std::uint64_t slba = 0; slba < 8 * 8; slba += 8) {
            auto read = host.lba_command(spec::nvm_opcode::read, 1, slba, 8);
            host.describe_data(read, buffer, 4096);
            const sc_core::sc_time start = simulated_now();
            EXPECT_TRUE(host.io(1, read).ok());
            latencies.push_back(sc_core::sc_time_stamp() - start);
        }
    });
    return latencies;
}

TYPED_TEST(systemc_nvme_device, qd1_read_takes_the_model_latency_plus_transfer_time_in_simulated_time)
{
    const nvmekit::timing::simple_model model{qd1_parameters};
    ASSERT_EQ(sysc::to_sc_time(model.service_time({nvmekit::block_operation::read, 0, 4096, false})),
              qd1_read_time);
    const sc_core::sc_time poll_period{1, sc_core::SC_US};
    for (const auto& latency : qd1_read_latencies<TypeParam>(poll_period, false)) {
        EXPECT_GE(latency, qd1_read_time);
        EXPECT_LE(latency, qd1_read_time + poll_period) << latency.to_string();
    }
}

TYPED_TEST(systemc_nvme_device, with_next_due_a_qd1_read_takes_exactly_the_model_time)
{
    // The device polls when the completion is due and the host wakes on the MSI-X write: with
    // no bus or memory latency nothing else takes simulated time.
    for (const auto& latency : qd1_read_latencies<TypeParam>(sc_core::sc_time{1, sc_core::SC_US}, true)) {
        EXPECT_EQ(latency, qd1_read_time) << latency.to_string();
    }
}

/// Keeps `queue_depth` one-block reads in flight until `total` have completed, the n-th (from 0)
/// at LBA `lba_of(n)`, all into one buffer, and returns the simulated time that took.
template <typename LbaOf>
sc_core::sc_time reads_at_queue_depth(in_process_host<sysc::host_bus>& host, std::size_t queue_depth,
                                      std::size_t total, LbaOf lba_of)
{
    const std::uint64_t buffer = host.allocate(block_bytes);
    std::size_t submitted = 0;
    const auto submit_read = [&] {
        auto read = host.lba_command(spec::nvm_opcode::read, 1, lba_of(submitted++), 1);
        host.describe_data(read, buffer, block_bytes);
        host.submit(1, read);
    };
    const sc_core::sc_time start = simulated_now();
    while (submitted < queue_depth) {
        submit_read();
    }
    std::vector<nvmekit::testing::completion> done;
    for (std::size_t completed = 0; completed < total;) {
        done.clear();
        host.reap(1, done);
        for (const auto& completion : done) {
            EXPECT_TRUE(completion.ok());
            ++completed;
            if (submitted < total) {
                submit_read();
            }
        }
    }
    return simulated_now() - start;
}

TYPED_TEST(systemc_nvme_device, throughput_under_load_is_the_model_parallelism_over_its_latency)
{
    // 4 servers of 100 us each: at queue depth 16 the device completes 4 reads per 100 us.
    constexpr std::size_t parallelism = 4;
    constexpr std::size_t total = 400;
    platform<TypeParam> rig;
    auto& ns = rig.device.subsystem().add_namespace(
        timed_ram{nvmekit::ram_backend{1U << 20},
                  nvmekit::timing::simple_model{{.read_latency = 100us, .parallelism = parallelism}},
                  rig.device.clock(), 64});
    const timed_ram* timed = ns.backend().template get_if<timed_ram>();
    rig.device.set_next_due([timed] { return timed->next_due(); });

    sc_core::sc_time elapsed;
    rig.run([&](in_process_host<sysc::host_bus>& host) {
        host.bring_up();
        elapsed = reads_at_queue_depth(host, 16, total, [](std::size_t) { return 0; });
    });
    // total / parallelism rounds of 100 us each, the first starting at once.
    const sc_core::sc_time expected{100.0 * total / parallelism, sc_core::SC_US};
    EXPECT_EQ(elapsed, expected) << elapsed.to_string();
}

TYPED_TEST(systemc_nvme_device, throughput_under_load_is_the_ssd_model_channel_and_lun_parallelism)
{
    // 2 channels x 2 LUNs, 40 us page reads, transfers free: page p is read on unit p mod 4, so
    // reads of consecutive pages at queue depth 16 keep the four LUNs busy, four reads per 40 us.
    constexpr std::uint32_t units = 2 * 2;
    constexpr std::size_t total = 400;
    constexpr std::uint64_t blocks_per_page = 4096 / block_bytes;
    nvmekit::timing::ssd_parameters parameters;
    parameters.geometry.channels = 2;
    parameters.geometry.luns_per_channel = 2;
    platform<TypeParam> rig;
    auto& ns = rig.device.subsystem().add_namespace(ssd_ram{
        nvmekit::ram_backend{1U << 20}, nvmekit::timing::ssd_model{parameters}, rig.device.clock(), 64});
    const ssd_ram* timed = ns.backend().template get_if<ssd_ram>();
    rig.device.set_next_due([timed] { return timed->next_due(); });

    sc_core::sc_time elapsed;
    rig.run([&](in_process_host<sysc::host_bus>& host) {
        host.bring_up();
        elapsed =
            reads_at_queue_depth(host, 16, total, [](std::size_t n) { return (n % 256) * blocks_per_page; });
    });
    EXPECT_EQ(timed->model().statistics().pages_read, total);
    const sc_core::sc_time expected{40.0 * total / units, sc_core::SC_US};
    EXPECT_EQ(elapsed, expected) << elapsed.to_string();
}

} // namespace

// libsystemc refers to sc_main; gtest's main() runs the tests, so it is never called.
int sc_main(int /*argc*/, char* /*argv*/[]) { return 0; }
