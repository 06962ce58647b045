#pragma once
/// The rig of the controller tests: host memory, an MSI-X recorder, a manual clock, a controller
/// and the in-process host driver over them, with the register, doorbell and command helpers
/// several of those tests use (basic_rig); and the same over the in-memory loopback transport
/// (loopback_rig), for the command set tests that run over both (transport_rigs), and with the
/// identity of a controller reached over a fabric (fabrics_rig). A test-only header: include it
/// after the header under test.
///
///     nvmekit_test::rig r{{.ready_delay = 10ms}};
///     r.host.bring_up({.io_queue_pairs = 2});
///     const auto status = r.host.io(1, read_command()).status();
///     EXPECT_EQ(status, dnr(spec::generic_status::invalid_namespace_or_format));
///
/// The traits are a template parameter: derive from test_traits to change the limits, or use
/// recording_dma_traits to reach host memory through a recording_dma (`r.dma`) that counts and
/// fails accesses.

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <ostream>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nvmekit/controller.hpp>
#include <nvmekit/format/status.hpp>
#include <nvmekit/testing/async_dma.hpp>
#include <nvmekit/testing/flat_memory.hpp>
#include <nvmekit/testing/host.hpp>
#include <nvmekit/testing/loopback.hpp>
#include <nvmekit/testing/manual_clock.hpp>
#include <nvmekit/testing/recording_dma.hpp>
#include <nvmekit/testing/recording_msix.hpp>

#include "print_helpers.hpp"

namespace nvmekit_test {

/// The providers of the controller tests, with the default limits.
struct test_traits : nvmekit::default_traits {
    /// NVMEKIT_TEST_THREADED_GROUPS runs the controller tests with concurrent poll groups.
    using threading = nvmekit::multi_threaded;
    using dma = nvmekit::testing::flat_memory;
    using interrupts = nvmekit::testing::recording_msix;
    using clock = nvmekit::testing::manual_clock;
};

/// test_traits whose controller reaches host memory through a recording_dma, so that a test can
/// count and fail its accesses.
struct recording_dma_traits : test_traits {
    using dma = nvmekit::testing::recording_dma<nvmekit::testing::flat_memory>;
};

/// Host memory the controller reaches by DMA that completes late and out of order: every request
/// takes 0 to 3 us of the rig's clock (testing::async_dma), so it completes in a later poll, in
/// an order of its own. Failures are injected through the async_dma interface.
struct async_dma_memory : nvmekit::testing::async_dma<nvmekit::testing::flat_memory> {
    async_dma_memory(nvmekit::testing::flat_memory& memory, nvmekit::testing::manual_clock& clock,
                     std::uint64_t seed = 7)
        : async_dma{memory,
                    clock,
                    4096,
                    {.min_delay = std::chrono::nanoseconds{0},
                     .max_delay = std::chrono::microseconds{3},
                     .seed = seed}}
    {}
};

/// test_traits whose controller reaches host memory through async_dma_memory.
struct async_dma_traits : test_traits {
    using dma = async_dma_memory;
};

/// Host memory reached by DMA that completes in the controller's next poll of its provider, in
/// submission order: the asynchronous path without the time it takes, so that the command-set
/// suites' timings (keep alive, timestamps) hold as over synchronous DMA.
struct prompt_async_dma_memory : nvmekit::testing::async_dma<nvmekit::testing::flat_memory> {
    prompt_async_dma_memory(nvmekit::testing::flat_memory& memory, nvmekit::testing::manual_clock& clock)
        : async_dma{memory, clock, 4096}
    {}
};

struct prompt_async_dma_traits : test_traits {
    using dma = prompt_async_dma_memory;
};

/// Above 4 GiB, so both halves of ASQ, ACQ and every queue address carry address bits.
inline constexpr std::uint64_t memory_base = 0x1'0000'0000;
inline constexpr std::size_t memory_size = std::size_t{8} << 20;

/// `size` bytes of zero-filled host memory at `base`.
struct host_memory : nvmekit::testing::flat_memory {
    explicit host_memory(std::size_t size = memory_size, std::uint64_t base = memory_base)
    {
        add_range(base, size);
    }
};

/// True when NVMEKIT_TEST_THREADED_GROUPS is set to 1: the controller tests then run their poll
/// groups concurrently, each on a thread of its own (lockstep_controller).
[[nodiscard]] inline bool threaded_groups_requested()
{
    const char* threaded = std::getenv("NVMEKIT_TEST_THREADED_GROUPS");
    return threaded != nullptr && std::strtol(threaded, nullptr, 10) == 1;
}

/// Whether a test's `config` leaves the poll groups to the environment: one group, on one thread
/// (a test that configures groups itself keeps its own).
[[nodiscard]] inline bool takes_test_poll_groups(const nvmekit::controller_config& config)
{
    return config.poll_groups == 1 && !config.concurrent_poll_groups;
}

/// `config`, with its I/O queues spread over the poll groups NVMEKIT_TEST_POLL_GROUPS names, and
/// run concurrently when NVMEKIT_TEST_THREADED_GROUPS is 1 (when the environment sets them and
/// the test asked for one group on one thread), so that the whole controller suite runs with 1,
/// 2 or 4 groups, on one thread or on threads of their own: the test suite runs the controller
/// tests again with 2 and 4 groups, and with 4 threaded groups under ThreadSanitizer.
template <typename Traits>
[[nodiscard]] nvmekit::controller_config with_test_poll_groups(nvmekit::controller_config config)
{
    if (takes_test_poll_groups(config)) {
        if (const char* groups = std::getenv("NVMEKIT_TEST_POLL_GROUPS"); groups != nullptr) {
            const long wanted = std::strtol(groups, nullptr, 10);
            config.poll_groups =
                static_cast<std::uint16_t>(std::clamp<long>(wanted, 1, Traits::limits.io_queues));
        }
        // Only a multi_threaded controller may run its groups concurrently.
        config.concurrent_poll_groups = Traits::threading::concurrent_groups && threaded_groups_requested();
    }
    return config;
}

/// The controller of the tests. With concurrent_poll_groups and `lockstep` (the groups the
/// environment asked for, not a test's own concurrent groups), it runs each poll group on a
/// thread of its own, in lockstep with the test: poll() releases every group thread for one
/// poll_group() and runs the admin context's poll() meanwhile, then releases them for a second
/// poll_group() once the admin context is done (what the admin context routed to a group, a
/// backend completion, and the commands of a group that found the admin context pausing it, are
/// then taken in the same step, as one thread does in one poll()), and returns when every group
/// is back. Groups and admin context thus really run at once (ThreadSanitizer sees every access
/// they share), while a test still sees the whole effect of a step when poll() returns.
template <typename Traits>
class lockstep_controller : public nvmekit::controller<Traits> {
    using base = nvmekit::controller<Traits>;

public:
    lockstep_controller(typename base::dma_type& dma, typename base::interrupts_type& interrupts,
                        typename base::clock_type& clock, typename base::subsystem_type& subsystem,
                        nvmekit::controller_config config = {}, bool lockstep = false)
        : base{dma, interrupts, clock, subsystem, config}
    {
        if (lockstep && config.concurrent_poll_groups) {
            for (std::uint16_t index = 0; index < base::poll_group_count(); ++index) {
                threads_.emplace_back([this, index] { run_group(index); });
            }
        }
    }
    lockstep_controller(const lockstep_controller&) = delete;
    lockstep_controller& operator=(const lockstep_controller&) = delete;
    ~lockstep_controller()
    {
        {
            const std::lock_guard lock{mutex_};
            quit_ = true;
        }
        released_.notify_all();
        for (auto& thread : threads_) {
            thread.join();
        }
    }

    /// One step: see the class comment. Without concurrent groups, the controller's poll().
    std::size_t poll()
    {
        if (threads_.empty()) {
            return base::poll();
        }
        release_groups();
        std::size_t executed = base::poll();
        executed += wait_for_groups();
        release_groups();
        executed += wait_for_groups();
        return executed;
    }

private:
    void release_groups()
    {
        {
            const std::lock_guard lock{mutex_};
            ++round_;
            returned_ = 0;
        }
        released_.notify_all();
    }

    std::size_t wait_for_groups()
    {
        std::unique_lock lock{mutex_};
        returned_cv_.wait(lock, [&] { return returned_ == threads_.size(); });
        return std::exchange(executed_, 0);
    }

    void run_group(std::uint16_t index)
    {
        std::uint64_t seen = 0;
        for (;;) {
            {
                std::unique_lock lock{mutex_};
                released_.wait(lock, [&] { return quit_ || round_ != seen; });
                if (quit_) {
                    return;
                }
                seen = round_;
            }
            const std::size_t executed = base::poll_group(index);
            {
                const std::lock_guard lock{mutex_};
                executed_ += executed;
                if (++returned_ == threads_.size()) {
                    returned_cv_.notify_one();
                }
            }
        }
    }

    std::mutex mutex_;
    std::condition_variable released_;
    std::condition_variable returned_cv_;
    std::uint64_t round_ = 0;
    std::size_t returned_ = 0;
    std::size_t executed_ = 0;
    bool quit_ = false;
    std::vector<std::thread> threads_; ///< last: started once the rest is constructed
};

/// The helpers of every rig that need only its host, its host memory, its clock and one step of
/// its controller (`step()`): a rig derives from rig_helpers<itself>.
template <typename Rig>
struct rig_helpers {
    /// `times` steps, each after a 1 ms clock advance.
    void poll(int times)
    {
        for (int i = 0; i < times; ++i) {
            self().clock.advance(std::chrono::milliseconds{1});
            self().step();
        }
    }

    /// A copy of `bytes` bytes of host memory at `address`.
    [[nodiscard]] std::vector<std::byte> snapshot(std::uint64_t address, std::size_t bytes)
    {
        const auto span = self().memory.bytes(address, bytes);
        return {span.begin(), span.end()};
    }

    // ---- asynchronous events --------------------------------------------------------------------

    /// Posts an Asynchronous Event Request and lets the controller take it, so that a doorbell
    /// written next does not replace the admin SQ tail before the controller has seen it.
    [[nodiscard]] std::uint16_t post_async_event_request()
    {
        const auto cid = self().host.submit(0, Rig::host_type::async_event_request_command());
        self().step();
        return cid;
    }
    /// Reads the Error Information log without RAE: error events are reported again (Base 2.0
    /// 5.2.2 masks an event type from its report until its log page is read).
    void acknowledge_errors()
    {
        std::vector<std::byte> log;
        const auto result = self().host.get_log_page(nvmekit::spec::log_page_id::error_information, 64, log);
        EXPECT_EQ(result.status(), nvmekit::spec::status::success());
    }
    /// Completes the Asynchronous Event Request `cid` the host has outstanding and returns its DW0.
    [[nodiscard]] std::uint32_t async_event(std::uint16_t cid)
    {
        const auto completion = self().host.wait_for(0, cid);
        EXPECT_EQ(completion.status(), nvmekit::spec::status::success());
        return completion.cqe.dw0;
    }

private:
    [[nodiscard]] Rig& self() noexcept { return static_cast<Rig&>(*this); }
};

/// The helpers of the PCIe rigs (basic_rig, the SystemC rigs): what needs only BAR0 (`read32`,
/// `write32`, `mmio_read`, `mmio_write`) and the host driver. A rig derives from
/// pcie_helpers<itself>.
template <typename Rig>
struct pcie_helpers {
    // ---- registers --------------------------------------------------------------------------

    void write_cc(nvmekit::spec::cc_register cc)
    {
        self().write32(nvmekit::spec::register_offset::cc, cc.raw);
    }

    /// The admin queue registers programmed by hand: AQA `aqa`, ASQ `asq` and ACQ `acq`.
    void program_admin_queues(std::uint32_t aqa, std::uint64_t asq, std::uint64_t acq)
    {
        self().write32(nvmekit::spec::register_offset::aqa, aqa);
        self().host.write64(nvmekit::spec::register_offset::asq, asq);
        self().host.write64(nvmekit::spec::register_offset::acq, acq);
    }

    // ---- bring-up -----------------------------------------------------------------------------

    /// Brings the controller up, then resets and re-enables it, so that the admin queue works,
    /// no I/O queue exists and Number of Queues has not been set.
    void admin_only()
    {
        self().host.bring_up({.io_queue_pairs = 1});
        self().host.disable();
        self().host.enable();
    }

    /// As admin_only(), then MSI-X vectors 0 to 64 programmed and Number of Queues set to `queues`
    /// SQs and CQs.
    void admin_only(std::uint16_t queues)
    {
        admin_only();
        self().host.program_msix(64);
        const auto granted = self().host.admin(Rig::host_type::set_features_command(
            nvmekit::spec::feature_id::number_of_queues,
            nvmekit::spec::number_of_queues::from_counts(queues, queues).raw));
        ASSERT_TRUE(granted.ok());
    }

    /// Writes the SQ `qid` Tail doorbell (CAP.DSTRD 0).
    void ring_sq_tail(std::uint16_t qid, std::uint32_t tail)
    {
        self().mmio_write(nvmekit::spec::sq_tail_doorbell_offset(qid, 0), 4, tail);
    }
    /// Writes the CQ `qid` Head doorbell (CAP.DSTRD 0).
    void ring_cq_head(std::uint16_t qid, std::uint32_t head)
    {
        self().mmio_write(nvmekit::spec::cq_head_doorbell_offset(qid, 0), 4, head);
    }

    // ---- MSI-X ----------------------------------------------------------------------------------

    /// Sets or clears the Mask bit of MSI-X vector `vector` through its table entry.
    void mask_vector(std::uint16_t vector, bool masked)
    {
        self().mmio_write(self().ctrl.msix_table_offset() + 16U * vector + 12U, 4, masked ? 1U : 0U);
    }
    /// The first 64 bits of the Pending Bit Array.
    [[nodiscard]] std::uint64_t pba() { return self().mmio_read(self().ctrl.msix_pba_offset(), 8); }

private:
    [[nodiscard]] Rig& self() noexcept { return static_cast<Rig&>(*this); }
};

/// Host memory, interrupt recorder, clock, subsystem, controller and host of one test, with the
/// helpers that mean the same over every transport; `Host` is the testing host that drives the
/// controller over `memory` (in_process_host or loopback_host).
template <typename Traits, template <typename> class Host>
struct rig_base : rig_helpers<rig_base<Traits, Host>> {
    using controller_type = lockstep_controller<Traits>;
    using host_type = Host<controller_type>;
    /// What the controller reaches host memory through: the memory itself when Traits::dma is
    /// flat_memory, else a Traits::dma (a wrapper such as recording_dma) over it.
    using dma_type = std::conditional_t<std::is_same_v<typename Traits::dma, nvmekit::testing::flat_memory>,
                                        nvmekit::testing::flat_memory&, typename Traits::dma>;

    host_memory memory;
    nvmekit::testing::manual_clock clock; ///< before `dma`, which may read it (async_dma_memory)
    dma_type dma = make_dma(memory, clock);
    nvmekit::testing::recording_msix msix;
    typename controller_type::subsystem_type subsystem;
    controller_type ctrl;
    host_type host;

    /// Whether the host hands commands over from the test thread (message-based queues): the
    /// controller's poll groups then never run on threads of their own.
    static constexpr bool hands_commands_over =
        !std::is_same_v<host_type, nvmekit::testing::in_process_host<controller_type>>;

    /// A controller with `config`, its poll groups as the environment asks (with_test_poll_groups;
    /// never concurrent when the host hands commands over), and `size` bytes of memory at `base`.
    explicit rig_base(nvmekit::controller_config config = {}, std::size_t size = memory_size,
                      std::uint64_t base = memory_base, nvmekit::subsystem_identity identity = {},
                      nvmekit::subsystem_options subsystem_options = {})
        : memory{shared_if_threaded(host_memory{size, base})}
        , subsystem{std::move(identity), subsystem_options}
        , ctrl{dma,
               msix,
               clock,
               subsystem,
               controller_config_for(config),
               !hands_commands_over && !controller_type::dma_completes_later &&
                   takes_test_poll_groups(config)}
        , host{ctrl, memory, clock}
    {}
    rig_base(const rig_base&) = delete;
    rig_base& operator=(const rig_base&) = delete;

    /// The DMA provider over `memory`: one that takes the clock too (async_dma_memory), or one
    /// made from the memory alone.
    [[nodiscard]] static dma_type make_dma(host_memory& memory, nvmekit::testing::manual_clock& clock)
    {
        if constexpr (std::is_reference_v<dma_type>) {
            return memory;
        } else if constexpr (std::is_constructible_v<dma_type, host_memory&,
                                                     nvmekit::testing::manual_clock&>) {
            return dma_type{memory, clock};
        } else {
            return dma_type{memory};
        }
    }

    /// `config` with the poll groups of the environment (with_test_poll_groups), run by the test
    /// thread's poll() when the host hands commands over or the DMA completes later (which needs
    /// the controller's poll() to run every group).
    [[nodiscard]] static nvmekit::controller_config controller_config_for(nvmekit::controller_config config)
    {
        auto adjusted = with_test_poll_groups<Traits>(config);
        if (hands_commands_over || controller_type::dma_completes_later) {
            adjusted.concurrent_poll_groups = config.concurrent_poll_groups;
        }
        return adjusted;
    }

    /// `memory`, shared (flat_memory::set_shared) when the groups run on threads of their own:
    /// the host thread touches it only between steps, and the bytes stay unguarded so that
    /// ThreadSanitizer checks every access the threads make.
    [[nodiscard]] static host_memory shared_if_threaded(host_memory memory)
    {
        if (threaded_groups_requested()) {
            memory.set_shared(true);
        }
        return memory;
    }

    [[nodiscard]] nvmekit::spec::csts_register csts() { return host.csts(); }

    /// Another controller of the subsystem, on the rig's DMA and clock, interrupting into
    /// `interrupts`.
    [[nodiscard]] auto make_peer(nvmekit::testing::recording_msix& interrupts)
    {
        return std::make_unique<controller_type>(dma, interrupts, clock, subsystem);
    }

    /// One step of the controller (rig_helpers).
    void step() { ctrl.poll(); }
};

/// The rig over PCIe: the in-process host driver over BAR0, doorbells, queues and PRPs in host
/// memory, and MSI-X, with the register, doorbell and MSI-X helpers of the PCIe tests.
template <typename Traits = test_traits>
struct basic_rig : rig_base<Traits, nvmekit::testing::in_process_host>, pcie_helpers<basic_rig<Traits>> {
    using common = rig_base<Traits, nvmekit::testing::in_process_host>;
    using common::ctrl;
    using common::host;
    using common::memory;
    using typename common::host_type;
    /// The same transport with other traits.
    template <typename OtherTraits>
    using with_traits = basic_rig<OtherTraits>;
    static constexpr const char* transport_name = "pcie";

    using common::common;

    // ---- registers --------------------------------------------------------------------------

    /// A 32-bit register read straight from BAR0.
    [[nodiscard]] std::uint32_t read32(nvmekit::spec::register_offset offset)
    {
        return static_cast<std::uint32_t>(ctrl.mmio_read(static_cast<std::uint64_t>(offset), 4));
    }
    void write32(nvmekit::spec::register_offset offset, std::uint32_t value)
    {
        ctrl.mmio_write(static_cast<std::uint64_t>(offset), 4, value);
    }
    /// A BAR0 access of `width` bytes at `offset`.
    [[nodiscard]] std::uint64_t mmio_read(std::uint64_t offset, unsigned width)
    {
        return ctrl.mmio_read(offset, width);
    }
    void mmio_write(std::uint64_t offset, unsigned width, std::uint64_t value)
    {
        ctrl.mmio_write(offset, width, value);
    }
    /// A PCIe Function Level Reset.
    void function_level_reset() { ctrl.function_level_reset(); }
    /// Entry `index` of CQ `cqid` as it is in host memory.
    [[nodiscard]] nvmekit::spec::completion_queue_entry cqe_at(std::uint16_t cqid, std::uint32_t index)
    {
        return memory.template load<nvmekit::spec::completion_queue_entry>(
            host.completion_entry_address(cqid, index));
    }
};

/// The rig over the in-memory loopback transport (testing/loopback.hpp): properties instead of
/// BAR0, message-based queues, data in the transport's buffers (`memory`) described by SGLs, no
/// interrupt. The test thread hands commands over and takes completions, so the poll groups of
/// NVMEKIT_TEST_POLL_GROUPS run in its poll(), never on threads of their own.
template <typename Traits = test_traits>
struct loopback_rig : rig_base<Traits, nvmekit::testing::loopback_host> {
    /// The same transport with other traits.
    template <typename OtherTraits>
    using with_traits = loopback_rig<OtherTraits>;
    static constexpr const char* transport_name = "loopback";

    using rig_base<Traits, nvmekit::testing::loopback_host>::rig_base;
};

/// The loopback rig with the identity a fabrics transport gives its controller
/// (controller_config::identity.fabrics, as the NVMe/TCP target sets it), for what a controller
/// reached over a fabric reports and accepts differently: Identify Controller's fabrics fields,
/// metadata only in an extended LBA.
template <typename Traits = test_traits>
struct fabrics_rig : rig_base<Traits, nvmekit::testing::loopback_host> {
    /// The same transport with other traits.
    template <typename OtherTraits>
    using with_traits = fabrics_rig<OtherTraits>;
    static constexpr const char* transport_name = "fabrics";

    explicit fabrics_rig(nvmekit::controller_config config = {}, std::size_t size = memory_size,
                         std::uint64_t base = memory_base, nvmekit::subsystem_identity identity = {},
                         nvmekit::subsystem_options subsystem_options = {})
        : rig_base<Traits, nvmekit::testing::loopback_host>{with_fabrics_identity(std::move(config)), size,
                                                            base, std::move(identity), subsystem_options}
    {}

    /// `config` with a fabrics identity, unless it has its own: SGL Data Blocks supported, which
    /// every fabric's host needs (and the loopback host sends).
    [[nodiscard]] static nvmekit::controller_config with_fabrics_identity(nvmekit::controller_config config)
    {
        if (!config.identity.fabrics) {
            config.identity.fabrics = nvmekit::fabrics_identity{
                .sgls = nvmekit::spec::sgl_support{}.with(nvmekit::spec::sgl_support::support,
                                                          nvmekit::spec::sgl_data_block_support::supported)};
        }
        return config;
    }
};

/// Whether `Rig`'s controller has the identity of one reached over a fabric (fabrics_rig).
template <typename Rig>
inline constexpr bool over_a_fabric = false;
template <typename Traits>
inline constexpr bool over_a_fabric<fabrics_rig<Traits>> = true;

/// The PCIe rig whose controller reaches host memory through prompt_async_dma_memory: every
/// entry, list, data and completion access is a request that completes after it was submitted.
struct async_dma_rig : basic_rig<prompt_async_dma_traits> {
    static constexpr const char* transport_name = "pcie_async_dma";
    using basic_rig::basic_rig;
};

/// Whether `Rig` drives its controller over PCIe (BAR0, doorbells, PRPs), for the few checks of a
/// typed test that only PCIe has.
template <typename Rig>
inline constexpr bool over_pcie = !Rig::hands_commands_over;

/// Whether `Rig`'s controller offers Doorbell Buffer Config: over PCIe, without asynchronous DMA.
template <typename Rig>
inline constexpr bool offers_shadow_doorbells =
    over_pcie<Rig>&& Rig::controller_type::shadow_doorbells_supported;

/// `Rig`'s transport with other traits: rig_for<TypeParam, async_traits> in a typed test.
template <typename Rig, typename Traits>
using rig_for = typename Rig::template with_traits<Traits>;

} // namespace nvmekit_test

#ifdef NVMEKIT_TEST_SYSTEMC_RIGS
// The same suites over nvme_device under TLM, LT and AT (tests/CMakeLists.txt builds the
// command-set tests a second time with this defined): systemc_rigs.hpp names transport_rigs.
#include "systemc/systemc_rigs.hpp"
#endif

namespace nvmekit_test {

#ifndef NVMEKIT_TEST_SYSTEMC_RIGS
/// The rigs of the command set tests that run over both transports, and over PCIe with
/// asynchronous DMA (TYPED_TEST_SUITE), named after them in the test names.
using transport_rigs = ::testing::Types<basic_rig<>, loopback_rig<>, async_dma_rig>;
/// The rigs of the PCIe tests (bring-up, resets: BAR0, doorbells, MSI-X) that run over every PCIe
/// rig: the in-process one, with synchronous and with asynchronous DMA.
using pcie_rigs = ::testing::Types<basic_rig<>, async_dma_rig>;
/// The rigs of the tests of what a controller reached over a fabric does differently: PCIe, the
/// loopback transport without a fabrics identity, and with one (fabrics_rig).
using local_and_fabric_rigs = ::testing::Types<basic_rig<>, loopback_rig<>, fabrics_rig<>>;
#else
/// Under TLM, those tests run over the SystemC rigs, which are PCIe.
using local_and_fabric_rigs = transport_rigs;
#endif
struct transport_names {
    template <typename Rig>
    static std::string GetName(int /*index*/)
    {
        return Rig::transport_name;
    }
};
/// The fixture of those suites (NVMEKIT_TEST_SUITE_OVER_TRANSPORTS). A rig that cannot run in
/// this process says why in `unavailable()` (a null pointer when it can), and the test is skipped.
template <typename Rig>
class transport_test : public ::testing::Test {
protected:
    void SetUp() override
    {
        if constexpr (requires { Rig::unavailable(); }) {
            if (const char* reason = Rig::unavailable()) {
                GTEST_SKIP() << reason;
            }
        }
    }
};

/// Declares `suite` a typed test suite over transport_rigs: each TYPED_TEST(suite, name) then runs
/// over PCIe and over the loopback transport (suite/pcie.name, suite/loopback.name), with
/// TypeParam the rig.
#define NVMEKIT_TEST_SUITE_OVER_TRANSPORTS(suite)      \
    template <typename Rig>                            \
    using suite = ::nvmekit_test::transport_test<Rig>; \
    TYPED_TEST_SUITE(suite, ::nvmekit_test::transport_rigs, ::nvmekit_test::transport_names)

/// Declares `suite` a typed test suite over pcie_rigs: each TYPED_TEST(suite, name) then runs over
/// the in-process PCIe rigs (suite/pcie.name, suite/pcie_async_dma.name) and, in the builds with
/// the SystemC rigs, over nvme_device under TLM (suite/systemc_lt.name, suite/systemc_at.name).
#define NVMEKIT_TEST_SUITE_OVER_PCIE(suite)            \
    template <typename Rig>                            \
    using suite = ::nvmekit_test::transport_test<Rig>; \
    TYPED_TEST_SUITE(suite, ::nvmekit_test::pcie_rigs, ::nvmekit_test::transport_names)

/// Declares `suite` a typed test suite over local_and_fabric_rigs: each TYPED_TEST(suite, name)
/// runs over PCIe, the loopback transport and the loopback transport with a fabrics identity
/// (suite/pcie.name, suite/loopback.name, suite/fabrics.name); over_a_fabric<TypeParam> tells
/// which.
#define NVMEKIT_TEST_SUITE_OVER_LOCAL_AND_FABRIC(suite) \
    template <typename Rig>                             \
    using suite = ::nvmekit_test::transport_test<Rig>;  \
    TYPED_TEST_SUITE(suite, ::nvmekit_test::local_and_fabric_rigs, ::nvmekit_test::transport_names)

using rig = basic_rig<>;
using host_type = rig::host_type;

/// `code` with Do Not Retry set: how the controller completes every command it refuses.
[[nodiscard]] nvmekit::spec::status dnr(auto code) { return nvmekit::spec::status{code}.with_dnr(); }

/// CSTS with RDY = 1 and nothing else.
[[nodiscard]] inline nvmekit::spec::csts_register ready_status()
{
    return nvmekit::spec::csts_register{}.with(nvmekit::spec::csts_register::rdy, true);
}

/// The CC Linux writes: IOSQES 6, IOCQES 4, MPS 0, CSS NVM, AMS round robin, EN 1.
[[nodiscard]] inline nvmekit::spec::cc_register linux_cc()
{
    return nvmekit::spec::cc_register{}
        .with(nvmekit::spec::cc_register::iosqes, 6)
        .with(nvmekit::spec::cc_register::iocqes, 4)
        .with(nvmekit::spec::cc_register::en, true);
}

/// A Read of namespace 1 (no namespace is attached, so it completes with Invalid Namespace or
/// Format).
[[nodiscard]] inline nvmekit::spec::submission_queue_entry read_command()
{
    return host_type::command(nvmekit::spec::nvm_opcode::read, 1);
}

/// Get Features Number of Queues, current value.
[[nodiscard]] inline nvmekit::spec::submission_queue_entry get_queues()
{
    return host_type::get_features_command(nvmekit::spec::feature_id::number_of_queues,
                                           nvmekit::spec::feature_select::current);
}

/// Create I/O Completion Queue with the given fields and IEN = 1, for the checks the host driver
/// would not send.
[[nodiscard]] inline nvmekit::spec::submission_queue_entry
create_cq_command(std::uint16_t qid, std::uint32_t entries, std::uint64_t prp1, bool contiguous = true,
                  std::uint16_t vector = 0)
{
    auto sqe = host_type::command(nvmekit::spec::admin_opcode::create_io_cq);
    nvmekit::spec::create_io_cq_view{.queue_id = qid,
                                     .queue_size = entries,
                                     .physically_contiguous = contiguous,
                                     .interrupts_enabled = true,
                                     .interrupt_vector = vector}
        .encode(sqe);
    sqe.dptr.prp1 = prp1;
    return sqe;
}

/// Create I/O Submission Queue with the given fields, for the checks the host driver would not
/// send.
[[nodiscard]] inline nvmekit::spec::submission_queue_entry
create_sq_command(std::uint16_t qid, std::uint16_t cqid, std::uint32_t entries, std::uint64_t prp1,
                  bool contiguous = true)
{
    auto sqe = host_type::command(nvmekit::spec::admin_opcode::create_io_sq);
    nvmekit::spec::create_io_sq_view{
        .queue_id = qid, .queue_size = entries, .physically_contiguous = contiguous, .cq_id = cqid}
        .encode(sqe);
    sqe.dptr.prp1 = prp1;
    return sqe;
}

} // namespace nvmekit_test
