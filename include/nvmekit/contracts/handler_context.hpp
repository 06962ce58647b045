#pragma once
/// The HandlerContext concept: what a command handler may do with the controller that runs it.
///
/// A handler is `command_result handler(Context& c, Command& cmd)` in a dispatch table
/// (dispatcher.hpp). The built-in NVM command set (command_sets/nvm.hpp) uses nothing but the
/// expressions below, and a vendor handler has exactly the same reach: it can resolve its
/// namespace, walk or map its data, take a staging buffer, submit block requests to the
/// namespace's backend, complete at once or later, record an error and count its I/O.
/// examples/read_checksummed.hpp is a vendor I/O command built on them, and
/// examples/vendor_async_command.cpp runs it.
///
// clang-format off
/// | expression                                   | type                     | semantics |
/// |----------------------------------------------|--------------------------|-----------|
/// | `C::command`                                 | type                     | one command from fetch to completion; `cmd.sqe` is the entry the host submitted, `cmd.ns` its resolved namespace, `cmd.block[0..1]` its backend requests, `cmd.block_result` their outcome (the first failure, else success) when the continuation runs, `cmd.data_segments` / `cmd.data_segment_count` and `cmd.metadata_segments` storage for the `io_segment`s those requests point at (it lives as long as the command), `cmd.continuation` what runs when they complete, `cmd.staging` its staging buffer, `cmd.progress` its progress (command_progress) |
/// | `C::namespace_type`                          | type                     | the namespaces of the controller's subsystem |
/// | `c.attached_namespace(nsid)`                 | `C::namespace_type*`     | the namespace `nsid` when it exists and is attached to this controller, else null |
/// | `c.max_transfer_bytes()`                     | `std::uint64_t`          | MDTS in bytes |
/// | `c.memory_page_size()`                       | `std::uint64_t`          | the host's memory page size (CC.MPS) |
/// | `c.message_based()`                          | `bool`                   | the controller's queues are message-based (a fabrics or loopback transport): data pointers are SGLs, never PRPs |
/// | `c.scratch_ranges(cmd)`                      | `host_range_list`        | an empty range list owned by the command's processing context, valid until the handler returns |
/// | `c.scratch_metadata_ranges(cmd)`             | `host_range_list`        | the same for up to 16 metadata ranges |
/// | `c.walk_data(cmd, len, dir, ranges)`         | `spec::status`           | walks the command's data pointer (PRP or SGL) for `len` bytes into `ranges`; the status the specification names for a bad pointer (DNR set) |
/// | `c.walk_metadata(cmd, len, dir, ranges)`     | `spec::status`           | the same for MPTR |
/// | `c.map_host(addr, len)`                      | `std::span<std::byte>`   | a zero-copy view of host memory when the DMA provider maps it, else an empty span |
/// | `c.read_host(cmd, ranges, dst)`              | `spec::status`           | copies the host bytes `ranges` describe into `dst` (a failed DMA is Data Transfer Error and counts) |
/// | `c.read_host(cmd, ranges, offset, dst)`      | `spec::status`           | the same from byte `offset` of the ranges on |
/// | `c.write_host(cmd, ranges, src)`             | `spec::status`           | copies `src` to the host bytes `ranges` describe |
/// | `c.transfer_from_host(cmd, dst)`             | `spec::status`           | walks the data pointer and reads `dst.size()` bytes |
/// | `c.transfer_to_host(cmd, src)`               | `spec::status`           | walks the data pointer and writes `src` |
/// | `c.acquire_staging(cmd)`                     | `C::staging_type*`       | a staging buffer (`bytes`, `ranges`, `metadata_ranges`) held until the command ends, or null: the command then waits and its handler runs again when one is free, so it must not have changed anything before asking |
/// | `c.submit_blocks(cmd, n)`                    | `void`                   | submits `cmd.block[0..n)` (1 or 2) to `cmd.ns`'s backend; when all completed, `cmd.continuation(c, cmd)` runs on the command's context and its result completes the command (or it submits again and returns pending) |
/// | `c.submit_blocks_then(cmd, n, next)`         | `command_result`         | sets `cmd.continuation = next` and submits as `submit_blocks` does; returns pending, for the handler to return. When the backend completed the requests inside submit(), `next` is called directly after submit() returned and its result completes the command |
/// | `c.submit_blocks_now(cmd, n, next)`          | `bool`                   | sets `cmd.continuation = next` and submits as `submit_blocks` does. True when the backend completed the requests at once: the handler continues itself (calls `next` and returns its result). False: `next` runs later, or has run, and the handler returns pending |
/// | `c.backend_failure(cmd, status)`             | `spec::status`           | the NVMe status of a failed block request, with the media error recorded |
/// | `c.record_media_error(cmd, lba)`             | `void`                   | the LBA of a media error, for the command's Error Information entry |
/// | `c.finish(cmd, result)`                      | `void`                   | completes a command its handler left pending; exactly once. After a reset or the deletion of its queue the command ends without a completion, as a built-in one does |
/// | `c.release_without_completion(cmd)`          | `void`                   | ends a command that will never be completed by the controller (its completion is built elsewhere, as Asynchronous Event Requests are) |
/// | `c.count_read(cmd, bytes)`, `c.count_write(cmd, bytes)` | `void`        | SMART / Health data units and command counts |
/// | `c.volatile_write_cache_enabled()`           | `bool`                   | the Volatile Write Cache feature (writes must reach stable media unless it is on) |
/// | `c.trace_command(event, cmd, value)`         | `void`                   | an event for the controller's tracer (tracer.hpp) |
// clang-format on
///
/// AdminHandlerContext adds what the admin command set (command_sets/admin.hpp) needs of the
/// controller's own state: identify data, logs, features, queues, asynchronous events, keep alive.
/// It is not needed for vendor I/O commands.
///
/// Every expression is called from the context that runs the command (a poll group or the admin
/// context) and never blocks.
///
/// With a DMA provider whose requests complete later (AsyncDmaProvider; dma_journal.hpp) a read of
/// host memory that has not arrived yet returns Data Transfer Error, and the controller runs the
/// handler (or the continuation that read) again once it has: the reads it already made are then
/// served in the same order, and writes it already made are not repeated. A handler therefore
/// returns a failed status as it gets it, changes no state before its reads of host memory
/// succeed (the rule acquire_staging already sets), and makes the same accesses when it runs
/// again on the same inputs. The built-in command sets and examples/read_checksummed.hpp do.

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>

#include <nvmekit/config.hpp>
#include <nvmekit/contracts/block_backend.hpp>
#include <nvmekit/contracts/tracer.hpp>
#include <nvmekit/core/dispatcher.hpp>
#include <nvmekit/data/host_ranges.hpp>
#include <nvmekit/queues/queue_memory.hpp>
#include <nvmekit/spec/features.hpp>
#include <nvmekit/spec/log_pages.hpp>
#include <nvmekit/spec/queue_entries.hpp>
#include <nvmekit/spec/status.hpp>
#include <nvmekit/state/interrupt_coalescing.hpp>

NVMEKIT_BEGIN_NAMESPACE

/// What a command that runs in several steps (it submits to a backend, continues, submits again)
/// has done so far. Each member belongs to the commands its comment names, which set it before
/// they read it; `vendor` is zero when a command's handler first runs, and again when a command
/// that waited for a staging buffer is dispatched once more (the others are not cleared: that
/// would cost every command four stores).
struct command_progress {
    std::uint32_t metadata_segments = 0; ///< Read, Write, Compare: separate metadata segments prepared
    std::uint32_t last_nsid = 0;         ///< Flush and Format NVM of every namespace: the last one done
    std::uint64_t blocks_done = 0;       ///< Copy: blocks read so far
    std::uint16_t next_range = 0;        ///< Dataset Management and Copy: the next range
    std::uint64_t vendor = 0;            ///< free for a vendor command's handler
};

/// The context of an I/O command handler (see the table above).
// clang-format off
template <typename C>
concept HandlerContext =
    requires(C& c, const C& cc, typename C::command& cmd, std::uint32_t nsid, std::uint64_t u64,
             transfer_direction direction, host_range_list& ranges, std::span<std::byte> bytes,
             std::span<const std::byte> const_bytes, command_result result, block_status status, trace_event event) {
        { c.attached_namespace(nsid) } -> std::same_as<typename C::namespace_type*>;
        { cc.max_transfer_bytes() } -> std::same_as<std::uint64_t>;
        { cc.memory_page_size() } -> std::same_as<std::uint64_t>;
        { cc.message_based() } -> std::same_as<bool>;
        { c.scratch_ranges(cmd) } -> std::same_as<host_range_list>;
        { c.scratch_metadata_ranges(cmd) } -> std::same_as<host_range_list>;
        { c.walk_data(cmd, u64, direction, ranges) } -> std::same_as<spec::status>;
        { c.walk_metadata(cmd, u64, direction, ranges) } -> std::same_as<spec::status>;
        { c.map_host(u64, std::size_t{}) } -> std::same_as<std::span<std::byte>>;
        { c.read_host(cmd, ranges, bytes) } -> std::same_as<spec::status>;
        { c.read_host(cmd, ranges, u64, bytes) } -> std::same_as<spec::status>;
        { c.write_host(cmd, ranges, const_bytes) } -> std::same_as<spec::status>;
        { c.transfer_from_host(cmd, bytes) } -> std::same_as<spec::status>;
        { c.transfer_to_host(cmd, const_bytes) } -> std::same_as<spec::status>;
        { c.acquire_staging(cmd) } -> std::same_as<typename C::staging_type*>;
        { c.submit_blocks(cmd, std::uint8_t{}) } -> std::same_as<void>;
        { c.submit_blocks_then(cmd, std::uint8_t{}, cmd.continuation) } -> std::same_as<command_result>;
        { c.submit_blocks_now(cmd, std::uint8_t{}, cmd.continuation) } -> std::same_as<bool>;
        { c.backend_failure(cmd, status) } -> std::same_as<spec::status>;
        { c.record_media_error(cmd, u64) } -> std::same_as<void>;
        { c.finish(cmd, result) } -> std::same_as<void>;
        { c.release_without_completion(cmd) } -> std::same_as<void>;
        { c.count_read(cmd, u64) } -> std::same_as<void>;
        { c.count_write(cmd, u64) } -> std::same_as<void>;
        { cc.volatile_write_cache_enabled() } -> std::same_as<bool>;
        { c.trace_command(event, cmd, u64) } -> std::same_as<void>;
        cmd.sqe;
        cmd.ns;
        cmd.block;
        { cmd.block_result } -> std::convertible_to<block_status>;
        { cmd.data_segments[0] } -> std::same_as<io_segment&>;
        { cmd.data_segment_count } -> std::convertible_to<std::uint32_t>;
        { cmd.metadata_segments[0] } -> std::same_as<io_segment&>;
        cmd.continuation;
        cmd.staging;
        { cmd.progress } -> std::convertible_to<command_progress>;
    };
// clang-format on

/// The context of the admin command set: a HandlerContext with the controller's own state.
///
// clang-format off
/// | expression                                   | semantics |
/// |----------------------------------------------|-----------|
/// | `c.nvm_subsystem()`, `c.controller_id()`, `c.clock()` | the subsystem, this controller's CNTLID, the time source |
/// | `cc.identity()`, `cc.mdts()`, `cc.registers()`, `cc.message_based()`, `cc.errors()`, `cc.firmware()`, `cc.features()` | what Identify Controller reports (command_sets/identify.hpp): PCI vendor IDs, MDTS, VS, queue management, ELPE, firmware slots, features |
/// | `c.smart_health_data()`, `c.error_information_log()`, `c.firmware()`, `c.telemetry()`, `c.capture_telemetry()` | log page sources |
/// | `c.changed_namespaces()`, `c.clear_changed_namespaces()` | the Changed Namespace List log and its reset when read with RAE clear |
/// | `c.acknowledge_event_type(type)`, `c.async_events()` | asynchronous event requests and their acknowledgement by a log read |
/// | `c.log_buffer()`, `c.admin_buffer()`         | controller-owned buffers of MDTS and 16 KiB for building log and identify data |
/// | `c.keep_alive_received()`                    | restarts the Keep Alive timer |
/// | `cc.registers()`, `cc.allowed_submission_queues()`, `cc.allowed_completion_queues()`, `cc.submission_queue_exists(qid)`, `cc.completion_queue_exists(qid)`, `cc.bound_submission_queues(qid)` | what queue management checks a command against: CAP and CC, the queues Number of Queues allows, the queues that exist |
/// | `c.queue_memory_from_prp_list(cmd, prp, bytes, memory)`, `c.add_completion_queue(qid, entries, memory, vector, ien)`, `c.add_submission_queue(qid, cqid, entries, memory)`, `c.delete_submission_queue(cmd, qid)`, `c.delete_completion_queue(qid)`, `c.configure_shadow_doorbells(shadow, eventidx)` | queues in host memory and shadow doorbells (command_sets/queue_management.hpp, Base 2.0 5.4 - 5.8) |
/// | `c.features()`, `c.io_queue_created()`, `c.granted_queues()`, `c.grant_queues(value)`, `c.max_io_queues()`, `c.for_each_coalescer(f)`, `c.admin_coalescer()`, `c.check_temperature()` | Set/Get Features (command_sets/features.hpp): the feature table, Number of Queues, interrupt coalescing, a Temperature Threshold change |
/// | `c.abort_waiting(sqid, cid)`                 | aborts the command `cid` of SQ `sqid` if it still waits for a staging buffer; true when it did |
/// | `c.waits_for_staging(ns)`                    | whether a command naming `ns` waits for a staging buffer |
// clang-format on
// clang-format off
template <typename C>
concept AdminHandlerContext =
    HandlerContext<C> && requires(C& c, const C& cc, typename C::command& cmd,
                                  const typename C::namespace_type& ns, spec::async_event_type type,
                                  queue_memory& memory) {
        c.nvm_subsystem();
        { cc.controller_id() } -> std::same_as<std::uint16_t>;
        c.clock();
        cc.identity();
        { cc.mdts() } -> std::same_as<std::uint8_t>;
        cc.errors();
        cc.firmware();
        cc.features();
        cc.smart_health_data();
        c.error_information_log();
        c.firmware();
        c.telemetry();
        c.capture_telemetry();
        c.changed_namespaces();
        c.clear_changed_namespaces();
        c.acknowledge_event_type(type);
        c.async_events();
        { c.log_buffer() } -> std::same_as<std::span<std::byte>>;
        { c.admin_buffer() } -> std::same_as<std::span<std::byte>>;
        c.keep_alive_received();
        cc.registers();
        { cc.allowed_submission_queues() } -> std::same_as<std::uint16_t>;
        { cc.allowed_completion_queues() } -> std::same_as<std::uint16_t>;
        { cc.submission_queue_exists(std::uint16_t{}) } -> std::same_as<bool>;
        { cc.completion_queue_exists(std::uint16_t{}) } -> std::same_as<bool>;
        { cc.bound_submission_queues(std::uint16_t{}) } -> std::same_as<std::uint32_t>;
        { c.queue_memory_from_prp_list(cmd, std::uint64_t{}, std::size_t{}, memory) } -> std::same_as<spec::status>;
        c.add_completion_queue(std::uint16_t{}, std::uint32_t{}, queue_memory::contiguous(0), std::uint16_t{}, bool{});
        c.add_submission_queue(std::uint16_t{}, std::uint16_t{}, std::uint32_t{}, queue_memory::contiguous(0));
        { c.delete_submission_queue(cmd, std::uint16_t{}) } -> std::same_as<command_result>;
        c.delete_completion_queue(std::uint16_t{});
        c.configure_shadow_doorbells(std::uint64_t{}, std::uint64_t{});
        c.features();
        { cc.io_queue_created() } -> std::same_as<bool>;
        cc.granted_queues();
        c.grant_queues(spec::number_of_queues{});
        { cc.max_io_queues() } -> std::same_as<std::uint16_t>;
        c.for_each_coalescer([](interrupt_coalescer&) {});
        cc.admin_coalescer();
        c.check_temperature();
        { c.abort_waiting(std::uint16_t{}, std::uint16_t{}) } -> std::same_as<bool>;
        { c.waits_for_staging(&ns) } -> std::same_as<bool>;
    };
// clang-format on

NVMEKIT_END_NAMESPACE
