#pragma once
/// The I/O context: the life of a command's request in the controller core, from the fetch of
/// its submission queue entry to its posted completion, and what the command owns on the way.
///
/// It owns:
/// - detail::controller_command, the controller's record of one command (`controller::command`,
///   the one object handlers receive), taken from its submission queue's request pool;
/// - dispatch: fetching entries (process_submission_queue), running the command set's handler
///   (execute) and completing (finish, complete, post; held while the CQ is full);
/// - the handlers' data interface of handler_context.hpp: walking the data pointer, copying to
///   and from host memory, staging buffers, submitting block requests to the backend, counting
///   I/O and media errors;
/// - asynchronous DMA (dma_journal.hpp): the slots of requests in flight, each command's journal,
///   parking a command and running it again, fetches and completion writes by request;
/// - the DMA provider behind its BAR0 guard (dma_guard.hpp), which every part reaches host
///   memory through;
/// - the submission queues deleted with commands still in a backend (retired queues).
///
/// A command's request: acquire_request (fetched) -> complete (completed; held while the CQ is
/// full) -> completion_posted (free); or drop_completion (a held completion discarded: reset,
/// queue deletion); or release_without_completion (ended without one).
///
/// Composition: detail::io_context<Controller, Traits> is a base of nvmekit::controller (CRTP;
/// controller.hpp). It reaches the rest of the controller, its queues, coordination of the poll
/// groups, tracer and DMA provider, through self(), resolved at compile time: nothing on the I/O
/// path is virtual or indirect.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

#include <nvmekit/config.hpp>
#include <nvmekit/contracts/async_dma.hpp>
#include <nvmekit/contracts/block_backend.hpp>
#include <nvmekit/contracts/dma.hpp>
#include <nvmekit/contracts/handler_context.hpp>
#include <nvmekit/contracts/tracer.hpp>
#include <nvmekit/core/controller_config.hpp>
#include <nvmekit/core/dispatcher.hpp>
#include <nvmekit/core/dma_journal.hpp>
#include <nvmekit/data/dma_guard.hpp>
#include <nvmekit/data/host_ranges.hpp>
#include <nvmekit/data/prp_walker.hpp>
#include <nvmekit/data/sgl_walker.hpp>
#include <nvmekit/error.hpp>
#include <nvmekit/queues/queue_pair.hpp>
#include <nvmekit/queues/request_pool.hpp>
#include <nvmekit/runtime/completion_inbox.hpp>
#include <nvmekit/runtime/poll_group_state.hpp>
#include <nvmekit/spec/queue_entries.hpp>
#include <nvmekit/spec/status.hpp>
#include <nvmekit/state/health_log.hpp>
#include <nvmekit/state/reset_state_machine.hpp>
#include <nvmekit/storage/nvm_namespace.hpp>

NVMEKIT_BEGIN_NAMESPACE

/// True when DMA provider `Dma` is an AsyncDmaProvider whose requests complete after submit()
/// returns: the controller then never waits for host memory (dma_journal.hpp). Any other
/// provider, an InlineAsyncDmaProvider included, takes the synchronous path.
template <typename Dma>
inline constexpr bool dma_completes_later_v = AsyncDmaProvider<Dma> && !InlineAsyncDmaProvider<Dma>;

namespace detail {

struct no_async_state {};

template <typename Controller, typename Traits>
struct controller_command;

/// A command's part of asynchronous DMA (dma_journal.hpp).
template <typename Controller, typename Traits>
struct async_command_state {
    dma_journal journal;
    /// The step that runs again when the journal's reads have completed: null for the
    /// handler, else the continuation that blocked.
    command_result (*step)(Controller&, controller_command<Controller, Traits>&) = nullptr;
    command_result deferred{};  ///< the result of a command finished while its writes were in flight
    bool cqe_in_flight = false; ///< its completion queue entry is being written
};

/// One command from fetch to posted completion (`controller::command`). Handlers receive it;
/// `sqe` is the command as the host submitted it. The other members belong to the controller.
template <typename Controller, typename Traits>
struct controller_command {
    using namespace_type = nvm_namespace<typename Traits::backend>;

    spec::submission_queue_entry sqe{};
    spec::completion_queue_entry cqe{};
    submission_queue<controller_command>* sq = nullptr;
    /// Its request in the SQ's pool (a request_pool<controller_command>::request, which cannot
    /// be named while this type is incomplete): reached without an index into the pool.
    void* request = nullptr;
    list_hook held_hook; ///< waiting for CQ space
    list_hook wait_hook; ///< waiting for a staging buffer
    Controller* owner = nullptr;
    /// The context that runs it.
    poll_group_state<controller_command, Traits::threading::concurrent_groups>* group = nullptr;
    // Backend I/O state.
    namespace_type* ns = nullptr;
    std::array<block_request, 2> block{};
    std::array<routed_completion, 2> routed{}; ///< block[i] completed on another thread
    std::uint8_t blocks_pending = 0;
    /// Its block requests are being submitted: a completion inside submit() only records its
    /// status, and the submitter runs the continuation when submit() has returned.
    bool submitting = false;
    block_status block_result = block_status::success;
    /// Runs when every block request has completed; returns the command's result.
    command_result (*continuation)(Controller&, controller_command&) = nullptr;
    staging_buffer* staging = nullptr;
    command_progress progress{}; ///< what a multi-step command has done so far
    std::uint64_t error_lba = 0; ///< the first LBA of a media error, for its Error Information entry
    std::uint32_t data_segment_count = 0;
    std::array<io_segment, Traits::limits.max_segments> data_segments{};
    std::array<io_segment, 2> metadata_segments{};
    /// Asynchronous DMA only: the journal of its accesses and the step that runs again.
    [[no_unique_address]] mutable std::conditional_t<dma_completes_later_v<typename Traits::dma>,
                                                     async_command_state<Controller, Traits>, no_async_state>
        async{};
};

/// The request life of `Controller`'s commands; see the top of this header. `Controller` derives
/// from it and befriends it.
template <typename Controller, typename Traits>
class io_context {
protected:
    using command = controller_command<Controller, Traits>;
    using group_type = poll_group_state<command, Traits::threading::concurrent_groups>;
    using namespace_type = nvm_namespace<typename Traits::backend>;
    using dma_type = typename Traits::dma;
    static constexpr nvmekit::limits limits = Traits::limits;
    static constexpr bool dma_completes_later = dma_completes_later_v<dma_type>;
    /// Submission queue entries taken at most by one fetch.
    static constexpr std::size_t fetch_batch = 32;
    /// A staging buffer holds MDTS bytes of data, their separate metadata (at most 1/64 of the
    /// data; 1/16 is reserved) and up to 4 KiB of command parameters (Copy source ranges).
    static constexpr std::size_t staging_bytes =
        limits.max_transfer_bytes() + limits.max_transfer_bytes() / 16U + 4096U;

    io_context(dma_type& dma, const controller_config& config) noexcept
        : dma_{dma}
        , sgl_excess_length_{config.identity.fabrics &&
                             config.identity.fabrics->sgls.get(spec::sgl_support::length_larger_than_data)}
    {}

    [[nodiscard]] Controller& self() noexcept { return static_cast<Controller&>(*this); }
    [[nodiscard]] const Controller& self() const noexcept { return static_cast<const Controller&>(*this); }

    [[nodiscard]] static spec::status error(auto code) noexcept { return spec::status{code}.with_dnr(); }

public:
    // ---- the handlers' interface: completion, data, staging, backend (handler_context.hpp) -----

    /// Completes a command a handler left pending. Exactly once per pending command.
    void finish(command& cmd, command_result result)
    {
        NVMEKIT_ASSERT(!result.is_pending(), "finish() with a pending result");
        if constexpr (dma_completes_later) {
            if (!settle_dma(cmd, result)) {
                return; // runs again, or finishes, when its DMA has completed
            }
        }
        auto& sq = *cmd.sq;
        release_staging(cmd);
        // An SQ's CQID was checked when the SQ was created; the CQ outlives the SQ unless a reset
        // deleted both.
        auto* cq = sq.retired ? nullptr : self().completion_queues_[sq.ring.cqid()].get();
        if (cq == nullptr) {
            // The queue was deleted or the controller reset while the command was in a backend:
            // the command ends without a completion.
            release_without_completion(cmd);
            return;
        }
        if (!result.status.is_success()) {
            self().on_command_error(cmd, result.status);
        }
        complete(sq, *cq, cmd, result.status, result.dw0);
    }

    /// Copies `data` to the host buffer of the command's data pointer (PRP or SGL).
    [[nodiscard]] spec::status transfer_to_host(const command& cmd, std::span<const std::byte> data)
    {
        host_range_list ranges{cmd.group->scratch_ranges};
        if (auto status = walk_data(cmd, data.size(), transfer_direction::controller_to_host, ranges);
            !status.is_success()) {
            return status;
        }
        const auto status = dma_status(
            cmd, with_command_dma(cmd, [&](auto& dma) { return copy_to_host(dma, ranges, data); }));
        if (status.is_success()) {
            self().trace_command(trace_event::data_prepared, cmd, data.size());
        }
        return status;
    }

    /// Copies the host buffer of the command's data pointer into `data`.
    [[nodiscard]] spec::status transfer_from_host(const command& cmd, std::span<std::byte> data)
    {
        host_range_list ranges{cmd.group->scratch_ranges};
        if (auto status = walk_data(cmd, data.size(), transfer_direction::host_to_controller, ranges);
            !status.is_success()) {
            return status;
        }
        const auto status = dma_status(
            cmd, with_command_dma(cmd, [&](auto& dma) { return copy_from_host(dma, ranges, data); }));
        if (status.is_success()) {
            self().trace_command(trace_event::data_prepared, cmd, data.size());
        }
        return status;
    }

    /// True when no DMA request of this controller is in flight or waiting to be taken (always,
    /// with a synchronous provider).
    [[nodiscard]] bool dma_idle() const noexcept
    {
        if constexpr (dma_completes_later) {
            return dma_slots_.outstanding() == 0 && !dma_slots_.has_completed();
        } else {
            return true;
        }
    }

    /// An empty range list in the command's processing context, valid until its handler returns.
    [[nodiscard]] host_range_list scratch_ranges(const command& cmd) noexcept
    {
        return host_range_list{cmd.group->scratch_ranges};
    }
    /// The same for metadata ranges (up to 16).
    [[nodiscard]] host_range_list scratch_metadata_ranges(const command& cmd) noexcept
    {
        return host_range_list{cmd.group->scratch_metadata_ranges};
    }

    /// A zero-copy view of `length` bytes of host memory at `address`, or an empty span when the
    /// DMA provider does not map (or not this range).
    [[nodiscard]] std::span<std::byte> map_host(std::uint64_t address, std::size_t length)
    {
        if constexpr (MappingDmaProvider<dma_type>) {
            return dma_.map(address, length);
        } else {
            return {};
        }
    }

    /// Copies the host bytes `ranges` describe (from byte `offset` of them on) into `data`.
    [[nodiscard]] spec::status read_host(const command& cmd, const host_range_list& ranges,
                                         std::span<std::byte> data)
    {
        return dma_status(
            cmd, with_command_dma(cmd, [&](auto& dma) { return copy_from_host(dma, ranges, data); }));
    }
    [[nodiscard]] spec::status read_host(const command& cmd, const host_range_list& ranges,
                                         std::uint64_t offset, std::span<std::byte> data)
    {
        return dma_status(
            cmd, with_command_dma(cmd, [&](auto& dma) { return copy_from_host(dma, ranges, offset, data); }));
    }
    /// Copies `data` to the host bytes `ranges` describe.
    [[nodiscard]] spec::status write_host(const command& cmd, const host_range_list& ranges,
                                          std::span<const std::byte> data)
    {
        return dma_status(cmd,
                          with_command_dma(cmd, [&](auto& dma) { return copy_to_host(dma, ranges, data); }));
    }

    /// Aborts command `command_id` of SQ `sq_id` if it waits for a staging buffer (it completes
    /// with Command Abort Requested); true when it did.
    bool abort_waiting(std::uint16_t sq_id, std::uint16_t command_id)
    {
        for (auto& group : self().coordination_.groups()) {
            auto& waiting_list = group->waiting_for_staging;
            for (auto& waiting : waiting_list) {
                if (waiting.sq->ring.qid() == sq_id && waiting.sqe.command_id() == command_id) {
                    waiting_list.erase(waiting_list.iterator_to(waiting));
                    finish(waiting,
                           command_result::failure(spec::status{spec::generic_status::abort_requested}));
                    return true;
                }
            }
        }
        return false;
    }

    /// Whether a command of this controller that waits for a staging buffer names `ns`.
    [[nodiscard]] bool waits_for_staging(const namespace_type* ns) const noexcept
    {
        for (const auto& group : self().coordination_.groups()) {
            for (const auto& waiting : group->waiting_for_staging) {
                if (waiting.ns == ns) {
                    return true;
                }
            }
        }
        return false;
    }

    [[nodiscard]] spec::status walk_data(const command& cmd, std::uint64_t length,
                                         transfer_direction direction, host_range_list& ranges)
    {
        if (length > self().max_transfer_bytes()) {
            return error(spec::generic_status::invalid_field);
        }
        if (cmd.sq->ring.qid() == 0 && cmd.sqe.pointer_type() != spec::data_pointer_type::prp &&
            !self().message_based_) {
            // Over PCIe admin commands use PRPs (message-based queues carry SGLs only: execute()).
            return error(spec::generic_status::invalid_field);
        }
        const sgl_walk_options options{.direction = direction,
                                       .bit_bucket_supported = true,
                                       .max_segment_descriptors = 256,
                                       .max_descriptors = std::size_t{limits.max_segments} * 4U,
                                       .excess_length = sgl_excess_length_};
        const auto status = with_command_dma(
            cmd,
            [&](auto& dma) {
                return walk_data_pointer(dma, cmd.sqe, length,
                                         static_cast<std::uint32_t>(self().memory_page_size()), options,
                                         ranges);
            },
            false);
        return dma_status(cmd, status);
    }

    [[nodiscard]] spec::status walk_metadata(const command& cmd, std::uint64_t length,
                                             transfer_direction direction, host_range_list& ranges)
    {
        const sgl_walk_options options{.direction = direction,
                                       .bit_bucket_supported = true,
                                       .max_segment_descriptors = 256,
                                       .max_descriptors = 16,
                                       .excess_length = sgl_excess_length_};
        return dma_status(
            cmd,
            with_command_dma(
                cmd, [&](auto& dma) { return walk_metadata_pointer(dma, cmd.sqe, length, options, ranges); },
                false));
    }

    /// A free staging buffer for `cmd`, or null: the command is then parked and dispatched again
    /// when a buffer is released (its handler must not have changed any state yet).
    [[nodiscard]] staging_buffer* acquire_staging(command& cmd)
    {
        if (cmd.staging != nullptr) {
            return cmd.staging;
        }
        auto& group = *cmd.group;
        if (group.free_staging == nullptr && group.staging.size() < staging_per_group_) {
            auto& buffer = group.staging.emplace_back(std::make_unique<staging_buffer>());
            buffer->bytes.resize(staging_bytes);
            buffer->range_storage.resize(limits.max_segments);
            buffer->ranges = host_range_list{buffer->range_storage};
            buffer->metadata_range_storage.resize(16);
            buffer->metadata_ranges = host_range_list{buffer->metadata_range_storage};
            buffer->next_free = group.free_staging;
            group.free_staging = buffer.get();
        }
        if (group.free_staging == nullptr) {
            ++group.staging_waits;
            group.waiting_for_staging.push_back(cmd);
            return nullptr;
        }
        staging_buffer* buffer = std::exchange(group.free_staging, group.free_staging->next_free);
        buffer->ranges.clear();
        buffer->metadata_ranges.clear();
        cmd.staging = buffer;
        return buffer;
    }

    /// Submits `cmd.block[0..count)`; the continuation runs when all have completed.
    void submit_blocks(command& cmd, std::uint8_t count)
    {
        static_cast<void>(submit_blocks_then(cmd, count, cmd.continuation));
    }

    /// Sets `continuation` and submits `cmd.block[0..count)`; returns pending, for the handler
    /// (or continuation) to return. When the backend completed them all inside submit(), the
    /// continuation is called directly once submit() has returned, and its result completes the
    /// command (or it submitted again); otherwise the last completion runs it.
    [[nodiscard]] NVMEKIT_HOT_INLINE command_result submit_blocks_then(
        command& cmd, std::uint8_t count, command_result (*continuation)(Controller&, command&))
    {
        if (submit_blocks_now(cmd, count, continuation)) {
            const command_result result = continuation(self(), cmd);
            if (!result.is_pending()) {
                finish(cmd, result);
            }
        }
        return command_result::pending();
    }

    /// Sets `continuation` and submits `cmd.block[0..count)`. True when the backend completed
    /// them all at once: the caller continues the command itself, by calling `continuation` (or
    /// what it would do) and returning its result. False when the continuation runs later, or
    /// has already run: the caller returns pending.
    [[nodiscard]] NVMEKIT_HOT_INLINE bool
    submit_blocks_now(command& cmd, std::uint8_t count, command_result (*continuation)(Controller&, command&))
    {
        cmd.continuation = continuation;
        if (!submit_blocks_inline(cmd, count)) {
            return false;
        }
        if constexpr (dma_completes_later) {
            // The step runs through continue_blocks, which records it for the DMA journal.
            const command_result result = continue_blocks(cmd, continuation);
            if (!result.is_pending()) {
                finish(cmd, result);
            }
            return false;
        } else {
            if (cmd.sq->retired) [[unlikely]] {
                finish(cmd, command_result::failure(spec::status{spec::generic_status::aborted_sq_deletion}));
                return false;
            }
            return true;
        }
    }

    /// Ends a command without a completion now: after a reset or the deletion of its queue, or an
    /// Asynchronous Event Request (whose completion is built from the command identifier when an
    /// event arrives).
    static void release_without_completion(const command& cmd) noexcept
    {
        if constexpr (dma_completes_later) {
            cmd.async.journal.release(cmd.owner->dma_slots_);
        }
        auto& request = request_of(cmd);
        cmd.sq->pool.mark_completed(request);
        cmd.sq->pool.release(request);
    }

    /// A read of an uncorrectable or failing block: counted as a media error, at `lba`.
    void record_media_error(command& cmd, std::uint64_t lba) noexcept
    {
        ++cmd.group->media_errors;
        cmd.error_lba = lba;
    }

    /// The status of a failed backend request, counting media errors.
    [[nodiscard]] spec::status backend_failure(command& cmd, block_status status) noexcept
    {
        if (status == block_status::unrecovered_read_error || status == block_status::write_fault) {
            ++cmd.group->media_errors;
            // The first block in error when the backend says which (Base 2.0 5.16.1.2: the LBA
            // field holds the first LBA that experienced the error), else the first of the
            // command's data request.
            const block_request& data = cmd.block[0];
            const std::uint64_t at =
                data.error_offset != block_request::unknown_offset ? data.error_offset : data.offset;
            cmd.error_lba = cmd.ns != nullptr ? at / cmd.ns->data_transfer_bytes(1) : 0;
        }
        return block_error(status);
    }

    void count_read(const command& cmd, std::uint64_t bytes) noexcept
    {
        auto& group = *cmd.group;
        ++group.read_commands;
        group.read_512_units += units_512(bytes);
        group.statistics.add_bytes(bytes);
    }

    void count_write(const command& cmd, std::uint64_t bytes) noexcept
    {
        auto& group = *cmd.group;
        ++group.write_commands;
        group.written_512_units += units_512(bytes);
        group.statistics.add_bytes(bytes);
    }

protected:
    // ---- command processing -------------------------------------------------------------------

    [[gnu::flatten]] std::size_t process_submission_queue(submission_queue<command>& sq, group_type& group)
    {
        if constexpr (dma_completes_later) {
            if (!sq.ring.is_message_based()) {
                start_fetch(sq, group); // its commands run when the entries have arrived
                return 0;
            }
        }
        std::size_t executed = 0;
        while (!sq.ring.empty() && !group.stopped) {
            const std::uint32_t room = std::min<std::uint32_t>(
                static_cast<std::uint32_t>(sq.pool.available()), static_cast<std::uint32_t>(fetch_batch));
            if (room == 0) {
                break; // every request of this queue is in use: back-pressure
            }
            if constexpr (!dma_completes_later && StableMappingDmaProvider<dma_guard<dma_type>>) {
                // Entries read where they lie in a view of the queue, each copied once, into its
                // command record. All of a batch are copied before the first runs: their
                // completions report the head past the whole batch, as after a fetch, and a host
                // that sees one may reuse every slot of the batch.
                const std::uint32_t count = std::min(room, sq.ring.pending());
                std::array<command*, fetch_batch> batch;
                std::uint32_t taken = 0;
                if (sq.ring.take_mapped(dma_, count,
                                        [&](std::span<const std::byte, sq_ring::sqe_size> entry) {
                                            batch[taken++] = &acquire_request(sq, group, entry);
                                        })) {
                    for (std::uint32_t i = 0; i < count; ++i) {
                        self().trace_command(trace_event::sqe_fetched, *batch[i]);
                        execute(*batch[i]);
                    }
                    executed += count;
                    continue;
                }
            }
            std::uint32_t fetched = 0;
            if (sq.ring.fetch(ring_dma(), std::span{group.fetch_buffer}.first(room), fetched)) {
                // The SQ cannot be read: a controller fatal status is what the spec offers
                // (Base 2.0 9.5); the host recovers by resetting the controller.
                nvmekit::detail::emit_trace(
                    self().tracer_, trace_record{.event = trace_event::err_queue_dma, .qid = sq.ring.qid()});
                self().coordination_.raise_fatal(group);
                break;
            }
            for (std::uint32_t i = 0; i < fetched; ++i) {
                auto& cmd = acquire_request(sq, group, group.fetch_buffer[i]);
                self().trace_command(trace_event::sqe_fetched, cmd);
                execute(cmd);
                ++executed;
            }
        }
        return executed;
    }

    void execute(command& cmd)
    {
        ++cmd.group->commands;
        cmd.ns = nullptr;
        cmd.blocks_pending = 0;
        cmd.block_result = block_status::success;
        cmd.continuation = nullptr;
        cmd.progress.vendor = 0; // the others are set by the commands that use them
        cmd.data_segment_count = 0;
        if constexpr (dma_completes_later) {
            cmd.async.step = nullptr;
            cmd.async.journal.begin_step(false);
        }
        const std::uint8_t opcode = cmd.sqe.opcode();
        command_result result;
        self().trace_command(trace_event::command_dispatched, cmd);
        if ((cmd.sqe.cdw0.raw & self().cdw0_checked_) != self().cdw0_required_) {
            // A fused operation (not supported), or on a message-based queue a data pointer that
            // is not an SGL (NVMe over Fabrics 1.1 2.3.1: PSDT 01b for every command).
            result = command_result::failure(error(spec::generic_status::invalid_field));
        } else if (cmd.sq->ring.qid() == 0) {
            result = self().admin_table().dispatch(self(), opcode, cmd);
        } else {
            result = self().io_table().dispatch(self(), opcode, cmd);
        }
        if (!result.is_pending()) {
            finish(cmd, result);
        }
    }

    [[nodiscard]] static spec::status dma_status(const command& cmd, spec::status status) noexcept
    {
        if constexpr (dma_completes_later) {
            if (cmd.async.journal.blocked) {
                // A read is in flight: this run's result is void (finish() parks the command).
                return spec::status{spec::generic_status::data_transfer_error}.with_dnr();
            }
        }
        if (status.is_success()) {
            return status;
        }
        if (status == spec::status{spec::generic_status::data_transfer_error}) {
            ++cmd.group->dma_errors;
            cmd.owner->trace_command(trace_event::err_dma, cmd, 0, status.with_dnr());
        }
        return status.with_dnr();
    }

    // ---- asynchronous DMA (dma_completes_later; dma_journal.hpp) ----------------------------

    /// The provider sq_ring::fetch and cq_ring::post take: a synchronous controller's own; with
    /// asynchronous DMA one that refuses everything, since only message-based rings (which never
    /// access host memory) use those calls then.
    [[nodiscard]] auto& ring_dma() noexcept
    {
        if constexpr (dma_completes_later) {
            return no_host_memory_;
        } else {
            return dma_;
        }
    }

    /// Refuses every access (ring_dma() with asynchronous DMA: only message-based rings use it,
    /// and they never access host memory).
    struct refusing_dma {
        static std::error_code read(std::uint64_t, std::span<std::byte>)
        {
            return make_error_code(errc::dma_fault);
        }
        static std::error_code write(std::uint64_t, std::span<const std::byte>)
        {
            return make_error_code(errc::dma_fault);
        }
    };

    /// A command's view of host memory with asynchronous DMA: reads and writes go through its
    /// journal. `speculative` reads that are in flight report success with unspecified bytes, so a
    /// copy over many ranges submits all its reads in one run; the caller then sees the command
    /// blocked (dma_status). Walks of PRP lists and SGL segments are not speculative: they stop at
    /// the first read still in flight.
    struct command_dma {
        io_context* context;
        const command* cmd;
        bool speculative;
        std::error_code read(std::uint64_t address, std::span<std::byte> destination)
        {
            return context->journal_read(*cmd, address, destination, speculative);
        }
        std::error_code write(std::uint64_t address, std::span<const std::byte> source)
        {
            return context->journal_write(*cmd, address, source);
        }
    };

    /// Writes one completion queue entry of `cmd` by a request (cq_ring::post's provider).
    struct completion_writer {
        io_context* context;
        const command* cmd;
        static std::error_code read(std::uint64_t, std::span<std::byte>)
        {
            return make_error_code(errc::dma_fault);
        }
        std::error_code write(std::uint64_t address, std::span<const std::byte> source)
        {
            auto& slot = context->dma_slots_.take(dma_operation::write, address, source.size());
            std::memcpy(slot.bytes.data(), source.data(), source.size());
            slot.kind = dma_slot_kind::completion_write;
            slot.owner = const_cast<command*>(cmd);
            slot.group = cmd->group;
            cmd->async.cqe_in_flight = true;
            context->dma_.inner().submit(slot.request);
            return {};
        }
    };

    /// Runs `f(provider)` with the provider a command's accesses use: the controller's own, or
    /// with asynchronous DMA the command's journal.
    template <typename F>
    decltype(auto) with_command_dma(const command& cmd, F&& f, bool speculative = true)
    {
        if constexpr (dma_completes_later) {
            command_dma journaled{this, &cmd, speculative};
            return f(journaled);
        } else {
            static_cast<void>(speculative);
            return f(dma_);
        }
    }

    std::error_code journal_read(const command& cmd, std::uint64_t address, std::span<std::byte> destination,
                                 bool speculative)
    {
        if (dma_.touches_window(address, destination.size())) {
            return make_error_code(errc::dma_fault);
        }
        if (destination.empty()) {
            return {}; // touches nothing, in every run
        }
        auto& journal = cmd.async.journal;
        bool diverged = false;
        dma_slot* slot = journal.replayed(dma_operation::read, address, destination.size(), diverged);
        if (diverged) {
            return make_error_code(errc::dma_fault); // the handler did not run as it did before
        }
        if (slot == nullptr) {
            if (journal.blocked && !speculative) {
                return make_error_code(std::errc::operation_would_block);
            }
            slot = &dma_slots_.take(dma_operation::read, address, destination.size());
            slot->kind = dma_slot_kind::command_read;
            slot->owner = const_cast<command*>(&cmd);
            slot->group = cmd.group;
            journal.record(*slot);
            dma_.inner().submit(slot->request);
        }
        if (!slot->settled) {
            journal.blocked = true;
            return speculative ? std::error_code{} : make_error_code(std::errc::operation_would_block);
        }
        if (slot->result) {
            return slot->result;
        }
        std::memcpy(destination.data(), slot->bytes.data(), destination.size());
        return {};
    }

    std::error_code journal_write(const command& cmd, std::uint64_t address,
                                  std::span<const std::byte> source)
    {
        if (dma_.touches_window(address, source.size())) {
            return make_error_code(errc::dma_fault);
        }
        if (source.empty()) {
            return {}; // touches nothing, in every run
        }
        auto& journal = cmd.async.journal;
        bool diverged = false;
        if (journal.replayed(dma_operation::write, address, source.size(), diverged) != nullptr) {
            // Posted by an earlier run, unless the handler did not run as it did before.
            return diverged ? make_error_code(errc::dma_fault) : std::error_code{};
        }
        if (journal.blocked) {
            return {}; // this run is void: its bytes may come from reads still in flight
        }
        auto& slot = dma_slots_.take(dma_operation::write, address, source.size());
        std::memcpy(slot.bytes.data(), source.data(), source.size());
        slot.kind = dma_slot_kind::command_write;
        slot.owner = const_cast<command*>(&cmd);
        slot.group = cmd.group;
        journal.record(slot);
        dma_.inner().submit(slot.request);
        return {};
    }

    /// finish() with asynchronous DMA: false while the command must wait for its requests (it
    /// is parked to run again, or its result is kept until its writes complete); true when it may
    /// complete now, its journal emptied and a failed posted write turned into its status.
    bool settle_dma(command& cmd, command_result& result)
    {
        auto& journal = cmd.async.journal;
        if (journal.blocked) {
            journal.parked = true;
            return false;
        }
        if (journal.pending != 0) {
            journal.finish_deferred = true;
            cmd.async.deferred = result;
            return false;
        }
        if (journal.write_failed && result.status.is_success()) {
            result =
                command_result::failure(spec::status{spec::generic_status::data_transfer_error}.with_dnr());
            ++cmd.group->dma_errors;
            self().trace_command(trace_event::err_dma, cmd, 0, result.status);
        }
        journal.release(dma_slots_);
        return true;
    }

    /// Takes the provider's completions and acts on each: a fetch's entries run, a parked command
    /// runs again, a finished command completes, a completion entry counts as posted. What that
    /// submits is polled for again, a bounded number of rounds, so that a provider completing
    /// promptly moves a command from fetch to completion in one poll().
    void poll_dma()
    {
        if constexpr (dma_completes_later) {
            static constexpr int rounds = 8;
            for (int round = 0; round < rounds; ++round) {
                if (dma_slots_.outstanding() != 0) {
                    dma_.inner().poll();
                }
                if (dma_slots_.take_completed([this](dma_slot& slot) { settle(slot); }) == 0) {
                    return;
                }
            }
        }
    }

    void settle(dma_slot& slot)
    {
        switch (slot.kind) {
        case dma_slot_kind::queue_fetch: fetched(slot); return;
        case dma_slot_kind::completion_write: completion_written(slot); return;
        case dma_slot_kind::command_read:
        case dma_slot_kind::command_write: break;
        }
        auto& cmd = *static_cast<command*>(slot.owner);
        auto& journal = cmd.async.journal;
        if (slot.kind == dma_slot_kind::command_write && slot.result) {
            journal.write_failed = true;
        }
        if (--journal.pending != 0) {
            return;
        }
        if (journal.parked) {
            run_again(cmd);
        } else if (journal.finish_deferred) {
            journal.finish_deferred = false;
            finish(cmd, cmd.async.deferred);
        }
    }

    /// A parked command's reads have completed: the step that blocked runs again, served from
    /// its journal; a command whose queue was deleted meanwhile only ends.
    void run_again(command& cmd)
    {
        auto& journal = cmd.async.journal;
        journal.rewind();
        if (cmd.sq->retired) {
            finish(cmd, command_result::failure(spec::status{spec::generic_status::aborted_sq_deletion}));
            return;
        }
        if (cmd.async.step == nullptr) {
            if (cmd.staging != nullptr) { // the walk fills its ranges again
                cmd.staging->ranges.clear();
                cmd.staging->metadata_ranges.clear();
            }
            --cmd.group->commands; // counted once, when first executed
            execute(cmd);
            return;
        }
        cmd.continuation = cmd.async.step;
        const command_result result = cmd.async.step(self(), cmd);
        if (!result.is_pending()) {
            finish(cmd, result);
        }
    }

    /// Starts reading the next entries of `sq` (one contiguous run, as many as its pool can take),
    /// unless a read of its entries is already in flight.
    void start_fetch(submission_queue<command>& sq, group_type& group)
    {
        if (sq.fetch_in_flight || sq.ring.empty() || group.stopped) {
            return;
        }
        const auto room = static_cast<std::uint32_t>(std::min<std::size_t>(sq.pool.available(), fetch_batch));
        if (room == 0) {
            return; // every request of this queue is in use: back-pressure
        }
        const auto run = sq.ring.next_run(room);
        auto& slot =
            dma_slots_.take(dma_operation::read, run.address, std::size_t{run.entries} * sq_ring::sqe_size);
        slot.kind = dma_slot_kind::queue_fetch;
        slot.owner = &sq;
        slot.group = &group;
        slot.entries = run.entries;
        sq.fetch_in_flight = true;
        dma_.inner().submit(slot.request);
    }

    /// A fetch completed: its entries run (unless the queue was deleted, the controller is no
    /// longer ready, or the read failed, which is a controller fatal status as with synchronous DMA).
    void fetched(dma_slot& slot)
    {
        auto& sq = *static_cast<submission_queue<command>*>(slot.owner);
        auto& group = *static_cast<group_type*>(slot.group);
        sq.fetch_in_flight = false;
        const std::uint32_t entries = slot.entries;
        if (sq.retired || group.stopped || self().state_machine_.state() != controller_state::ready) {
            dma_slots_.release(slot);
            return;
        }
        if (slot.result) {
            dma_slots_.release(slot);
            nvmekit::detail::emit_trace(
                self().tracer_, trace_record{.event = trace_event::err_queue_dma, .qid = sq.ring.qid()});
            self().coordination_.raise_fatal(group);
            self().take_fatal_error();
            return;
        }
        std::array<spec::submission_queue_entry, fetch_batch> sqes{};
        std::memcpy(sqes.data(), slot.bytes.data(), std::size_t{entries} * sq_ring::sqe_size);
        dma_slots_.release(slot);
        sq.ring.consume(entries);
        for (std::uint32_t i = 0; i < entries; ++i) {
            auto& cmd = acquire_request(sq, group, sqes[i]);
            self().trace_command(trace_event::sqe_fetched, cmd);
            execute(cmd);
        }
        start_fetch(sq, group);
    }

    /// A completion entry's write completed: it counts as posted (for interrupts and statistics)
    /// and the command's request is free. A failed write is a controller fatal status.
    void completion_written(dma_slot& slot)
    {
        auto& cmd = *static_cast<command*>(slot.owner);
        const bool failed = static_cast<bool>(slot.result);
        dma_slots_.release(slot);
        cmd.async.cqe_in_flight = false;
        auto& group = *cmd.group;
        auto* cq = cmd.sq->retired ? nullptr : self().completion_queues_[cmd.sq->ring.cqid()].get();
        if (failed) {
            nvmekit::detail::emit_trace(self().tracer_, trace_record{.event = trace_event::err_queue_dma,
                                                                     .qid = cmd.sq->ring.cqid()});
            self().coordination_.raise_fatal(group);
        } else if (cq != nullptr) {
            self().trace_command(trace_event::cqe_posted, cmd, cq->ring.qid(), cmd.cqe.status());
            ++group.completions_posted;
            ++cq->posted_since_signal;
        }
        completion_posted(cmd);
        if (failed) {
            self().take_fatal_error();
        }
    }

    // ---- staging buffers --------------------------------------------------------------------

    void release_staging(command& cmd) noexcept
    {
        if (cmd.staging != nullptr) {
            cmd.staging->next_free = cmd.group->free_staging;
            cmd.group->free_staging = std::exchange(cmd.staging, nullptr);
        }
    }

    /// Dispatches again the commands of `group` that waited for a staging buffer, while buffers
    /// are free.
    void resume_staging_waiters(group_type& group)
    {
        while (group.free_staging != nullptr && !group.waiting_for_staging.empty()) {
            auto& cmd = group.waiting_for_staging.front();
            group.waiting_for_staging.pop_front();
            --group.commands; // counted once, when first executed
            execute(cmd);
        }
    }

    // ---- backend requests -------------------------------------------------------------------

    /// Submits `cmd.block[0..count)`; true when the backend completed them all inside submit():
    /// their statuses are recorded and the caller runs the continuation (continue_blocks).
    /// Otherwise the last completion runs it, later, on the command's context.
    NVMEKIT_HOT_INLINE bool submit_blocks_inline(command& cmd, std::uint8_t count)
    {
        NVMEKIT_ASSERT(cmd.ns != nullptr && count >= 1 && count <= cmd.block.size(), "bad block submission");
        cmd.blocks_pending = count;
        cmd.block_result = block_status::success;
        cmd.group->io_outstanding += count;
        for (std::uint8_t i = 0; i < count; ++i) {
            cmd.block[i].complete = &on_block_complete;
            cmd.block[i].context = &cmd;
            self().trace_command(trace_event::backend_submitted, cmd, cmd.block[i].offset);
        }
        auto* ns = cmd.ns;
        // While `submitting` is set no completion finishes the command (finish_block), so it stays
        // this caller's. A completion on another thread is routed to this context and finished at
        // its next poll, after `submitting` is cleared here.
        cmd.submitting = true;
        for (std::uint8_t i = 0; i < count; ++i) {
            if constexpr (InlineSubmitting<typename Traits::backend>) {
                // std::nullopt: submitted, and its completion runs (or ran) the callback.
                if (const auto status = ns->backend().submit_inline(cmd.block[i])) {
                    record_block(cmd, *status);
                }
            } else {
                ns->backend().submit(cmd.block[i]);
            }
        }
        cmd.submitting = false;
        return cmd.blocks_pending == 0;
    }

    /// The command's block requests have all completed: its continuation runs, unless the
    /// command was aborted meanwhile; returns the command's result.
    NVMEKIT_HOT_INLINE command_result continue_blocks(command& cmd,
                                                      command_result (*continuation)(Controller&, command&))
    {
        if (cmd.sq->retired) {
            // Deleted queue or controller reset: the command was aborted, so nothing of it may
            // reach host memory any more (a staged read's copy-out, a multi-step command's next
            // step); it only gives its request back.
            return command_result::failure(spec::status{spec::generic_status::aborted_sq_deletion});
        }
        if constexpr (dma_completes_later) {
            cmd.async.step = continuation;
            cmd.async.journal.begin_step(true);
        }
        return continuation(self(), cmd);
    }

    static void on_block_complete(block_request& request, block_status status)
    {
        auto& cmd = *static_cast<command*>(request.context);
        auto& node = cmd.routed[static_cast<std::size_t>(&request - cmd.block.data())];
        if (!cmd.owner->coordination_.route(*cmd.group, node, request, status, &finish_block)) {
            finish_block(request, status);
        }
    }

    /// on_block_complete on the thread of the command's context.
    static void finish_block(block_request& request, block_status status)
    {
        auto& cmd = *static_cast<command*>(request.context);
        auto& self = *cmd.owner;
        self.record_block(cmd, status);
        if (cmd.blocks_pending != 0 || cmd.submitting) {
            return; // more to come, or completed inside submit(): its submitter continues
        }
        const command_result result = self.continue_blocks(cmd, cmd.continuation);
        if (!result.is_pending()) {
            self.finish(cmd, result);
        }
    }

    /// One of the command's block requests has completed with `status`.
    NVMEKIT_HOT_INLINE void record_block(command& cmd, block_status status) noexcept
    {
        self().trace_command(trace_event::backend_completed, cmd, static_cast<std::uint64_t>(status));
        --cmd.group->io_outstanding;
        if (status != block_status::success && cmd.block_result == block_status::success) {
            cmd.block_result = status;
        }
        --cmd.blocks_pending;
    }

    /// The NVMe status of a backend failure (NVM Command Set 1.0 Figure 18; Base 2.0 Figure 104).
    [[nodiscard]] static spec::status block_error(block_status status) noexcept
    {
        switch (status) {
        case block_status::success: return spec::status::success();
        case block_status::unrecovered_read_error:
            return spec::status{spec::media_status::unrecovered_read_error}.with_dnr();
        case block_status::write_fault: return spec::status{spec::media_status::write_fault}.with_dnr();
        case block_status::out_of_range:
            return spec::status{spec::generic_status::lba_out_of_range}.with_dnr();
        case block_status::internal_error: break;
        }
        return spec::status{spec::generic_status::internal_error};
    }

    /// Admin context: polls every backend with requests outstanding. With concurrent groups, the
    /// completions of a running group's commands are routed to it (self().coordination_.owns()).
    void poll_backends()
    {
        self().subsystem_->for_each_namespace([](namespace_type& ns) {
            if (ns.backend().outstanding() != 0) {
                ns.backend().poll();
            }
        });
        if (!self().coordination_.admin().routed.empty_approx()) {
            Controller::coordination_type::take_routed(self().coordination_.admin());
        }
    }

    /// Frees deleted SQs whose last command has left the backend (their requests belong to their
    /// groups: concurrent groups are paused to read them).
    void free_retired_queues()
    {
        if (retired_queues_.empty()) {
            return;
        }
        self().with_groups_paused([this] { free_idle_retired_queues(); });
    }

    void free_idle_retired_queues()
    {
        std::erase_if(retired_queues_, [this](const auto& sq) {
            if (sq->pool.in_use() != 0 || sq->fetch_in_flight) {
                return false;
            }
            if (auto* deleting = std::exchange(sq->deleting, nullptr)) {
                finish(*deleting, command_result::success()); // Delete I/O SQ: all aborted now
            }
            return true;
        });
    }

    /// Takes an SQ out of service; it is freed at once (returns null), or when its commands leave
    /// the backend (returns it, retired).
    submission_queue<command>* retire_submission_queue(std::uint16_t qid)
    {
        auto& sq = self().submission_queues_[qid];
        if (!sq) {
            return nullptr;
        }
        self().group_of(*sq).waiting_for_staging.remove_if([&](const command& cmd) {
            if (cmd.sq != sq.get()) {
                return false;
            }
            release_without_completion(cmd);
            return true;
        });
        submission_queue<command>* retired = nullptr;
        if (sq->pool.in_use() != 0 || sq->fetch_in_flight) {
            sq->retired = true;
            retired = sq.get();
            retired_queues_.push_back(std::move(sq));
        }
        sq.reset();
        return retired;
    }

    /// Builds `cmd`'s completion entry and posts it on `cq`, its SQ's CQ, or holds it while `cq` is
    /// full.
    void complete(submission_queue<command>& sq, completion_queue<command>& cq, command& cmd,
                  spec::status status, std::uint32_t dw0)
    {
        auto& cqe = cmd.cqe;
        cqe = {};
        cqe.dw0 = dw0;
        cqe.sq_id = sq.ring.qid();
        cqe.sq_head = static_cast<std::uint16_t>(sq.ring.head());
        cqe.cid = cmd.sqe.command_id();
        cqe.set_status(status, false);
        sq.pool.mark_completed(request_of(cmd));
        if (!cq.held.empty() || cq.ring.full()) {
            ++cmd.group->completions_held;
            self().trace_command(trace_event::err_cq_full, cmd, cq.ring.qid(), status);
            cq.held.push_back(cmd);
            return;
        }
        if (post(cq, cmd)) {
            posted_now(cmd);
        } else {
            cq.held.push_back(cmd);
        }
    }

    /// Writes one CQE; false when the DMA failed (the controller is then in a fatal state).
    bool post(completion_queue<command>& cq, const command& cmd)
    {
        auto& group = *cmd.group;
        if constexpr (dma_completes_later) {
            if (!cq.ring.is_message_based()) {
                // Written by a request; counted as posted, and the request freed, when it completes.
                completion_writer writer{this, &cmd};
                static_cast<void>(cq.ring.post(writer, cmd.cqe));
                return true;
            }
        }
        if (cq.ring.post(ring_dma(), cmd.cqe)) {
            nvmekit::detail::emit_trace(
                self().tracer_, trace_record{.event = trace_event::err_queue_dma, .qid = cq.ring.qid()});
            self().coordination_.raise_fatal(group);
            return false;
        }
        self().trace_command(trace_event::cqe_posted, cmd, cq.ring.qid(), cmd.cqe.status());
        ++group.completions_posted;
        ++cq.posted_since_signal;
        return true;
    }

    void post_held_completions(group_type& group, completion_queue<command>& cq)
    {
        while (!cq.held.empty() && !cq.ring.full() && !group.stopped) {
            auto& cmd = cq.held.front();
            if (!post(cq, cmd)) {
                return;
            }
            cq.held.pop_front();
            posted_now(cmd);
        }
    }

    // ---- a command's request: its life in the SQ's pool -----------------------------------------
    // acquire_request (fetched) -> complete (completed; held while the CQ is full) ->
    // completion_posted (free); or drop_completion (a held completion discarded: reset, queue
    // deletion); or release_without_completion (ended without one).

    /// The request of the SQ's pool that holds `cmd`.
    [[nodiscard]] static typename request_pool<command>::request& request_of(const command& cmd) noexcept
    {
        return *static_cast<typename request_pool<command>::request*>(cmd.request);
    }

    /// Takes a request of `sq` for `sqe`, run by `group`. The pool has one: a fetch never takes
    /// more entries than the pool has free. `sqe` is the entry itself, or its 64 bytes where they
    /// lie in a view of host memory (sq_ring::take_mapped).
    template <typename Entry>
    command& acquire_request(submission_queue<command>& sq, group_type& group, const Entry& sqe) noexcept
    {
        auto* request = sq.pool.acquire();
        NVMEKIT_ASSERT(request != nullptr, "a request was taken beyond the pool");
        auto& cmd = request->payload;
        if constexpr (std::is_same_v<Entry, spec::submission_queue_entry>) {
            cmd.sqe = sqe;
        } else {
            std::memcpy(&cmd.sqe, sqe.data(), sizeof cmd.sqe);
        }
        cmd.group = &group;
        cmd.sq = &sq;
        cmd.request = request;
        cmd.owner = &self();
        return cmd;
    }

    /// post() returned: the request is free unless the entry is still being written.
    static void posted_now(const command& cmd) noexcept
    {
        if constexpr (dma_completes_later) {
            if (cmd.async.cqe_in_flight) {
                return;
            }
        }
        completion_posted(cmd);
    }

    /// The command's completion entry was written: its request returns to the pool.
    static void completion_posted(const command& cmd) noexcept
    {
        cmd.sq->pool.release_posted(request_of(cmd));
    }

    /// A completion held for CQ space will never be posted.
    static void drop_completion(const command& cmd) noexcept { cmd.sq->pool.release(request_of(cmd)); }

    void report_async_events()
    {
        if (!self().completion_queue_exists(0)) {
            return;
        }
        auto& admin_sq = *self().submission_queues_[0];
        // While the admin queue's requests all wait for CQ space the event stays queued.
        while (admin_sq.pool.available() != 0) {
            const auto report = self().logs_.next_event_report(); // its type is masked until acknowledged
            if (!report) {
                return;
            }
            spec::submission_queue_entry request{};
            request.cdw0.set(spec::command_dword0::cid, report->command_id);
            auto& cmd = acquire_request(admin_sq, self().coordination_.admin(), request);
            complete(admin_sq, *self().completion_queues_[0], cmd, spec::status::success(),
                     report->event.raw);
        }
    }

    /// The embedder's provider, refusing the controller's own BAR0. First, at the controller's
    /// offset 0, as the I/O path reaches it most.
    dma_guard<dma_type> dma_;
    /// Asynchronous DMA only: the requests in flight and their buffers (dma_journal.hpp).
    [[no_unique_address]] std::conditional_t<dma_completes_later, dma_slot_pool, no_async_state> dma_slots_;
    [[no_unique_address]] std::conditional_t<dma_completes_later, refusing_dma, no_async_state>
        no_host_memory_;
    /// limits.staging_buffers shared out among the poll groups, at least one each.
    std::size_t staging_per_group_ = 1;
    /// A data or metadata SGL may describe more than the transfer: a fabrics controller whose
    /// transport reports SGLS bit 18 (fabrics_identity::sgls). A PCIe function's must match.
    bool sgl_excess_length_ = false;
    /// Deleted submission queues whose commands are still in a backend.
    std::vector<std::unique_ptr<submission_queue<command>>> retired_queues_;
};

} // namespace detail
NVMEKIT_END_NAMESPACE
