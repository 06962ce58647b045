#pragma once
/// What a controller is built from: the compile-time limits and the traits' defaults, the
/// run-time configuration and identity, the statistics it keeps, and what a configuration turns
/// into at construction (checked against the limits; the CAP register; the feature table).
///
///     struct my_traits : nvmekit::default_traits {
///         static constexpr nvmekit::limits limits{.io_queues = 8, .mdts = 6};
///     };
///     nvmekit::controller<my_traits> ctrl{dma, msix, clock, {.io_queues = 4, .poll_groups = 2}};

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>

#include <nvmekit/backends/any_backend.hpp>
#include <nvmekit/config.hpp>
#include <nvmekit/contracts/threading.hpp>
#include <nvmekit/contracts/tracer.hpp>
#include <nvmekit/spec/identify.hpp>
#include <nvmekit/spec/registers.hpp>
#include <nvmekit/state/feature_table.hpp>
#include <nvmekit/state/register_file.hpp>

NVMEKIT_BEGIN_NAMESPACE

/// Sizes the controller is built for. They bound every allocation the host can cause.
struct limits {
    std::uint16_t io_queues = 64;       ///< I/O submission queues, and as many completion queues
    std::uint32_t queue_entries = 4096; ///< entries of the largest queue (CAP.MQES + 1), 2 to 65536
    std::uint8_t mdts = 5;              ///< Maximum Data Transfer Size, 2^n 4 KiB pages, 1 to 10
    std::uint16_t msix_vectors = 65;    ///< MSI-X table size, 1 to 2048
    std::uint8_t aerl = 3;              ///< Asynchronous Event Request Limit, 0's based
    /// Commands of one SQ in execution at once (its request pool); further entries wait in the SQ.
    std::uint32_t commands_per_queue = 256;
    /// Host memory ranges one command's data may use (PRP entries or SGL descriptors, merged
    /// where contiguous); an SGL needing more completes with Invalid Number of SGL Descriptors.
    std::uint32_t max_segments = 256;
    /// Controller-wide staging buffers of MDTS bytes, for data that cannot be mapped zero-copy
    /// and for commands that need one (Compare, Copy, Dataset Management). A command that finds
    /// none free waits for one. With poll groups they are shared out among the groups (at least
    /// one each), since a group uses only its own.
    std::uint16_t staging_buffers = 16;

    /// MDTS in bytes.
    [[nodiscard]] constexpr std::uint64_t max_transfer_bytes() const noexcept
    {
        return std::uint64_t{4096} << mdts;
    }
};

/// Base of the traits users derive from; it names the defaults a user does not override.
struct default_traits {
    /// ThreadingPolicy (threading.hpp): multi_threaded to allow concurrent_poll_groups.
    using threading = single_threaded;
    /// The namespaces' block backend: type-erased, so RAM, file and user backends can mix.
    using backend = any_backend;
    /// Receives a named event for every host mistake and each step of a command (tracer.hpp).
    using tracer = null_tracer;
    static constexpr nvmekit::limits limits{};
    /// Customises the admin command table: add vendor commands (C0h-FFh) or replace handlers.
    template <typename Table>
    static constexpr Table admin_commands(Table table)
    {
        return table;
    }
    /// Customises the NVM I/O command table: add vendor commands (80h-FFh) or replace handlers.
    template <typename Table>
    static constexpr Table io_commands(Table table)
    {
        return table;
    }
};

/// What a controller reached over a fabric reports in Identify Controller (Base 2.0 Figure 275),
/// as its transport fills it. A host over a fabric reads its capsule sizes and SGL support here
/// (the Linux host refuses a controller whose SGLS lacks SGL support or whose ICDOFF is not 0).
/// The rest is fixed: IORCSZ 1 (the 16-byte CQE alone), ICDOFF 0 (in-capsule data right after
/// the SQE), FCATT 0 (the dynamic controller model) and MSDBD 1 (one data descriptor a command).
struct fabrics_identity {
    /// In-capsule data an I/O queue's command capsule may carry, a multiple of 16 bytes:
    /// IOCCSZ = (64 + io_in_capsule_data) / 16.
    std::uint32_t io_in_capsule_data = 0;
    /// MAXCMD, the commands a host may have outstanding on one queue; 0: CAP.MQES + 1.
    std::uint16_t max_commands = 0;
    /// SGLS: the SGL descriptors the transport takes from the host.
    spec::sgl_support sgls{};
    /// A discovery controller (Base 2.0 3.1.3.3): Asynchronous Event Configuration keeps
    /// Discovery Log Page Change Notices (bit 31), which controller::report_discovery_log_change()
    /// reports.
    bool discovery = false;
};

/// What the controller reports about itself beyond the subsystem's identity.
struct controller_identity {
    /// PCI VID and SSVID: by default pci::unassigned_vendor_id (F0E5h), which no vendor holds;
    /// an embedder gives the same values as its PCI function.
    std::uint16_t vendor_id = 0xf0e5;           ///< PCI VID
    std::uint16_t subsystem_vendor_id = 0xf0e5; ///< PCI SSVID
    std::uint16_t controller_id = 0;            ///< CNTLID; 0: the subsystem assigns one
    /// Set by a fabrics transport; empty for a PCIe function (the fabrics fields read 0).
    std::optional<fabrics_identity> fabrics{};
};

/// Run-time configuration of one controller.
struct controller_config {
    controller_identity identity{};
    /// Time from CC.EN = 1 to CSTS.RDY = 1, measured on the Clock, so hosts' timeouts can be
    /// exercised.
    std::chrono::nanoseconds ready_delay{0};
    std::uint8_t ready_timeout_500ms = 20;   ///< CAP.TO
    std::uint8_t doorbell_stride = 0;        ///< CAP.DSTRD
    bool contiguous_queues_required = false; ///< CAP.CQR
    bool subsystem_reset_supported = true;   ///< CAP.NSSRS
    /// Run-time caps below the compile-time limits (0: the limit itself). They change what the
    /// host is offered (Number of Queues, CAP.MQES, MDTS), not what is allocated.
    std::uint16_t io_queues = 0;     ///< I/O queue pairs granted at most, 1 to limits.io_queues
    std::uint32_t queue_entries = 0; ///< entries per queue at most (CAP.MQES + 1), 2 to limits.queue_entries
    std::uint8_t mdts = 0;           ///< MDTS, 1 to limits.mdts
    /// Poll groups the I/O queues are spread over, 1 to limits.io_queues (threading model: poll_group.hpp).
    /// An I/O CQ and every SQ bound to it belong to one group: the group's doorbells, commands,
    /// completions and interrupts are processed together by poll_group(), and poll() runs the
    /// admin queue and every group. 1: every I/O queue in one group.
    std::uint16_t poll_groups = 1;
    /// The group of a new I/O CQ, from its QID and interrupt vector (a result of poll_groups or
    /// more is taken modulo poll_groups); empty: with the I/O CQs that signal the same vector,
    /// else round-robin in creation order. Called on the admin context.
    std::function<std::uint16_t(std::uint16_t cqid, std::uint16_t vector)> queue_placement{};
    /// false: poll() runs the admin context and every group on the caller's thread. true: the
    /// groups run concurrently with the admin context and with each other: poll() runs only the
    /// admin context, and group i runs when poll_group(i) is called, from any thread (one call at
    /// a time per group): by the threads start_poll_groups() starts, or by the embedder's own
    /// loops (poll_group.hpp states the threading model and what backends must guarantee).
    /// true needs Traits::threading = multi_threaded: with single_threaded the controller's
    /// constructor throws std::invalid_argument.
    bool concurrent_poll_groups = false;
};

/// Counters of what the host did wrong and what the controller did, for tests and logs.
struct controller_statistics {
    std::uint64_t commands = 0;
    std::uint64_t completions_posted = 0;
    std::uint64_t completions_held = 0;  ///< times a completion waited for CQ space
    std::uint64_t invalid_doorbells = 0; ///< invalid doorbell values and writes to missing doorbells
    std::uint64_t dma_errors = 0;
    std::uint64_t host_protocol_errors = 0;
    std::uint64_t staging_waits = 0;          ///< times a command waited for a staging buffer
    std::uint64_t keep_alive_expirations = 0; ///< times the Keep Alive Timer expired (CSTS.CFS set)
};

namespace detail {

/// `config` with its run-time caps resolved against the compile-time limits `caps` (0 -> the limit
/// itself); throws std::invalid_argument when a cap is outside its range, or when the config
/// asks for concurrent poll groups and `concurrent_groups_allowed` (the threading policy's
/// concurrent_groups) is false.
[[nodiscard]] inline controller_config checked_controller_config(controller_config config, const limits& caps,
                                                                 bool concurrent_groups_allowed)
{
    const auto resolve = [](auto value, auto limit, auto minimum, const char* name) {
        if (value == 0) {
            return limit;
        }
        if (value < minimum || value > limit) {
            throw std::invalid_argument(std::string{"controller_config: "} + name + " is " +
                                        std::to_string(value) + "; it must be " + std::to_string(minimum) +
                                        " to " + std::to_string(limit) + " (the traits' limits)");
        }
        return static_cast<decltype(limit)>(value);
    };
    config.io_queues = resolve(config.io_queues, caps.io_queues, std::uint16_t{1}, "io_queues");
    config.queue_entries =
        resolve(config.queue_entries, caps.queue_entries, std::uint32_t{2}, "queue_entries");
    config.mdts = resolve(config.mdts, caps.mdts, std::uint8_t{1}, "mdts");
    if (const auto& fabrics = config.identity.fabrics;
        fabrics && (fabrics->io_in_capsule_data % 16 != 0 || fabrics->io_in_capsule_data > (1U << 30))) {
        throw std::invalid_argument("controller_config: fabrics io_in_capsule_data is " +
                                    std::to_string(fabrics->io_in_capsule_data) +
                                    "; it must be a multiple of 16 up to 1 GiB (IOCCSZ in 16-byte units)");
    }
    if (!concurrent_groups_allowed && config.concurrent_poll_groups) {
        throw std::invalid_argument(
            "controller_config: concurrent_poll_groups needs the multi_threaded policy "
            "(Traits::threading = nvmekit::multi_threaded); these traits are single_threaded");
    }
    if (config.poll_groups == 0 || config.poll_groups > caps.io_queues) {
        throw std::invalid_argument("controller_config: poll_groups is " +
                                    std::to_string(config.poll_groups) + "; it must be 1 to " +
                                    std::to_string(caps.io_queues) + " (the traits' limits.io_queues)");
    }
    return config;
}

/// Temperature Sensors 1-8 the SMART / Health log reports: none, only the Composite
/// Temperature (set_temperature), so Temperature Threshold accepts no TMPSEL naming one
/// (Base 2.0 5.27.1.3).
inline constexpr std::uint8_t reported_temperature_sensors = 0;

/// The feature table matching what Identify Controller and the SMART / Health log report. A
/// volatile write cache is always reported: with WCE cleared every write is durable before it
/// completes (as FUA).
[[nodiscard]] inline feature_table_config controller_feature_config(const controller_config& config)
{
    const bool discovery = config.identity.fabrics && config.identity.fabrics->discovery;
    return feature_table_config{.temperature_sensors = reported_temperature_sensors,
                                .volatile_write_cache_present = true,
                                .supported_async_events = discovery ? 0x8000'010fU : 0x0000'010fU};
}

[[nodiscard]] inline register_file_config controller_register_config(const controller_config& config)
{
    spec::cap_register cap{};
    cap.set(cap.mqes, static_cast<std::uint16_t>(config.queue_entries - 1U))
        .set(cap.cqr, config.contiguous_queues_required)
        .set(cap.to, config.ready_timeout_500ms)
        .set(cap.dstrd, config.doorbell_stride)
        .set(cap.nssrs, config.subsystem_reset_supported)
        .set(cap.css_nvm, true)
        .set(cap.mpsmin, 0)
        .set(cap.mpsmax, 4)
        // Ready with media only (CC.CRIME = 0), as a 2.0 controller reports it: CRMS.CRWMS = 1
        // and CRIMS = 0 (Base 2.0 3.1.4.1), so CRTO reads CRWMT = CAP.TO, CRIMT = 0 and
        // CC.CRIME is read-only 0.
        .set(cap.crwms, true);
    return register_file_config{.cap = cap};
}

} // namespace detail

NVMEKIT_END_NAMESPACE
