#pragma once
/// A BlockBackend on a regular file or a block device through io_uring (Linux, liburing 2.3).
///
/// The asynchronous counterpart of file_backend, which opens and owns the file here (the same
/// options, checks and exceptions; see file_backend.hpp): submit() only queues a request, and the
/// request completes in a later poll(). One ring per backend.
///
/// - submit() validates the request (invalid ones, writes to a read-only or closed backend, empty
///   ranges and flushes without a volatile cache complete inside submit()), takes an operation
///   slot and prepares its submission queue entry; it makes no system call and never waits for
///   I/O. poll() hands everything prepared to the kernel in one io_uring_enter (never waiting:
///   no IORING_ENTER_GETEVENTS), reaps the completions that are there, submits what continues
///   (short transfers, the next step of a request) and calls the finished requests' `complete`.
///   The controller polls a backend whenever it has requests outstanding.
/// - Queue depth is bounded by `ring_entries`: at most that many operations are in the kernel at
///   once. Requests beyond it wait, in order, in the backend until poll() reaps enough
///   completions. Operation slots are allocated as the number of outstanding requests reaches a
///   new high (never in steady state); a failed allocation completes the request with
///   internal_error.
/// - Reads and writes: IORING_OP_READ/WRITE for one segment, READV/WRITEV for a run of up to
///   `max_iovecs` segments. A short transfer is submitted again for the rest; a read that meets end
///   of file gives zeros for the rest, as file_backend does. Discarded read bytes (segments
///   without data) are skipped, not read.
/// - O_DIRECT (`file.direct`): a read or write goes through the direct descriptor when its offset
///   and every segment are aligned (file_backend::direct_eligible); others, the rest of a short
///   direct transfer, and the zero-writing fallbacks use the ordinary descriptor.
/// - Flush is IORING_OP_FSYNC with IORING_FSYNC_DATASYNC (fdatasync): it covers every write
///   completed before the flush was submitted. A FUA write is submitted with RWF_DSYNC, so it is
///   durable when it completes; a FUA Write Zeroes is followed by an fdatasync.
/// - Write Zeroes is IORING_OP_FALLOCATE with FALLOC_FL_ZERO_RANGE, Deallocate with
///   FALLOC_FL_PUNCH_HOLE, both with FALLOC_FL_KEEP_SIZE. When the file system refuses
///   (EOPNOTSUPP, ENOSYS, EINVAL), zeros are written instead, 64 KiB per write, and a refusal
///   other than EINVAL is remembered. Either way the range reads back as zeros.
/// - Registered files (`register_files`): both descriptors are registered with the ring and every
///   request names them by index, which saves the kernel a file reference per request. Buffers are
///   not registered: they are the request's own segments (host memory the DMA provider maps),
///   unknown to the backend until the request arrives.
/// - Errors map as in file_backend: EIO on a read gives unrecovered_read_error, EIO on a write,
///   flush or zeroing write_fault, any other error internal_error. EINTR and EAGAIN are retried.
///
/// Threads: submit() may run on several threads at once and concurrently with poll() (poll groups
/// on threads of their own submit, the admin context polls), each request object used by one
/// thread. One mutex guards the ring, the slots and the waiting requests: submit() holds it while
/// it queues; poll() while it talks to the ring, never while a `complete` runs, so a callback may
/// submit again. outstanding() and the counters are relaxed atomics, readable on any thread.
/// close(), moves and destruction must not overlap any other call and need outstanding() == 0
/// (the controller destroys namespaces only when idle); a moved-from backend may only be
/// destroyed or assigned.

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <system_error>
#include <utility>
#include <vector>
#include <fcntl.h>
#include <linux/falloc.h>
#include <sys/uio.h>

#include <liburing.h>

#include <nvmekit/backends/file_backend.hpp>
#include <nvmekit/config.hpp>
#include <nvmekit/contracts/block_backend.hpp>

NVMEKIT_BEGIN_NAMESPACE

/// Options of a uring_backend.
struct uring_backend_options {
    /// How the file is opened: file_backend's options, with the same meaning.
    file_backend_options file{};
    /// Submission queue entries, a power of two from 1 to 4096: the most operations in the kernel
    /// at once (the queue depth). Requests beyond it wait in the backend.
    unsigned ring_entries = 128;
    /// Register the file descriptors with the ring (falls back to plain descriptors when the
    /// kernel refuses).
    bool register_files = true;
};

namespace detail {

/// What one request needs while it is in a uring_backend.
struct uring_operation {
    /// The step the operation's next submission performs.
    enum class step : std::uint8_t { transfer, zero_range, zero_fill, sync };

    block_request* request = nullptr;
    uring_operation* next = nullptr; ///< in the free list, the waiting list or a finished chain
    step next_step = step::transfer;
    bool direct = false;     ///< transfer through the O_DIRECT descriptor
    bool sync_after = false; ///< an fdatasync follows the zeroing (FUA Write Zeroes)
    block_status status = block_status::success;
    std::uint64_t position = 0;      ///< the file offset the next submission starts at
    std::uint64_t remaining = 0;     ///< zero_fill: bytes still to write
    std::size_t segment = 0;         ///< transfer: the segment the next submission starts in
    std::size_t segment_offset = 0;  ///< transfer: bytes of that segment already moved
    std::size_t submitted_bytes = 0; ///< bytes the operation in the kernel asked for
    static constexpr std::size_t max_iovecs = 16;
    std::array<iovec, max_iovecs> iovecs{};
};

/// A singly linked FIFO of operations.
struct uring_operation_list {
    uring_operation* head = nullptr;
    uring_operation* tail = nullptr;

    [[nodiscard]] bool empty() const noexcept { return head == nullptr; }
    void push(uring_operation& operation) noexcept
    {
        operation.next = nullptr;
        (tail == nullptr ? head : tail->next) = &operation;
        tail = &operation;
    }
    uring_operation& pop() noexcept
    {
        uring_operation& first = *head;
        head = first.next;
        if (head == nullptr) {
            tail = nullptr;
        }
        return first;
    }
};

/// What a uring_backend keeps on the heap: the kernel holds pointers to its operations.
struct uring_backend_state {
    static constexpr std::size_t slots_per_chunk = 64;

    file_backend file;
    uring_backend_options options;
    io_uring ring{};
    bool ring_open = false;
    bool registered = false;
    std::mutex mutex;
    std::vector<std::unique_ptr<uring_operation[]>> chunks; ///< every slot ever allocated
    uring_operation* free_slots = nullptr;
    uring_operation_list waiting; ///< queued beyond the ring's depth
    std::size_t in_kernel = 0;    ///< operations submitted or prepared and not yet reaped
    unsigned prepared = 0;        ///< entries prepared since the last io_uring_submit
    bool zero_range_supported = true;
    bool punch_hole_supported = true;
    std::atomic<std::size_t> outstanding{0};
    std::atomic<std::uint64_t> sync_count{0};
    std::atomic<std::uint64_t> dsync_write_count{0};
    std::atomic<std::uint64_t> zero_fill_count{0};
    std::atomic<std::uint64_t> direct_count{0};
    std::atomic<std::uint64_t> resubmit_count{0};
    std::atomic<std::uint64_t> waited_count{0};

    uring_backend_state(const std::string& path, const uring_backend_options& backend_options)
        : file{path, backend_options.file}, options{backend_options}
    {
        const unsigned entries = options.ring_entries;
        if (entries == 0 || entries > 4096 || (entries & (entries - 1)) != 0) {
            throw_file_error(EINVAL, path, "ring_entries must be a power of two from 1 to 4096 for");
        }
        if (const int error = ::io_uring_queue_init(entries, &ring, 0); error < 0) {
            throw_file_error(-error, path, "cannot set up an io_uring for");
        }
        ring_open = true;
        if (options.register_files) {
            const std::array descriptors{file.native_handle(), file.direct_handle()};
            const unsigned count = file.direct_handle() >= 0 ? 2U : 1U;
            registered = ::io_uring_register_files(&ring, descriptors.data(), count) == 0;
        }
    }

    uring_backend_state(const uring_backend_state&) = delete;
    uring_backend_state& operator=(const uring_backend_state&) = delete;

    ~uring_backend_state() { close_ring(); }

    /// Releases the ring and, with it, its references to the registered files.
    void close_ring() noexcept
    {
        if (ring_open) {
            ::io_uring_queue_exit(&ring);
            ring_open = false;
            registered = false;
        }
    }

    [[nodiscard]] bool volatile_cache() const noexcept { return file.has_volatile_cache(); }

    /// A free slot, allocating a chunk of them when none is left; nullptr when memory runs out.
    uring_operation* allocate() noexcept
    {
        if (free_slots == nullptr) {
            try {
                chunks.push_back(std::make_unique<uring_operation[]>(slots_per_chunk));
            } catch (const std::bad_alloc&) {
                return nullptr;
            }
            for (std::size_t i = 0; i < slots_per_chunk; ++i) {
                chunks.back()[i].next = free_slots;
                free_slots = &chunks.back()[i];
            }
        }
        uring_operation* slot = free_slots;
        free_slots = slot->next;
        return slot;
    }

    /// Starts `operation` now when the ring has room, else queues it behind the others waiting.
    void start(uring_operation& operation) noexcept
    {
        if (in_kernel < options.ring_entries && waiting.empty()) {
            prepare(operation);
        } else {
            waited_count.fetch_add(1, std::memory_order_relaxed);
            waiting.push(operation);
        }
    }

    /// Moves waiting operations into the ring while it has room.
    void start_waiting() noexcept
    {
        while (!waiting.empty() && in_kernel < options.ring_entries) {
            prepare(waiting.pop());
        }
    }

    /// Prepares the submission queue entry of `operation`'s next step. The ring has an entry
    /// free: in_kernel never exceeds ring_entries, the submission queue's size.
    void prepare(uring_operation& operation) noexcept
    {
        io_uring_sqe* sqe = ::io_uring_get_sqe(&ring);
        NVMEKIT_ASSERT(sqe != nullptr, "uring_backend: no submission queue entry within the ring's depth");
        const block_request& request = *operation.request;
        const int index = operation.direct ? 1 : 0;
        const int fd = registered ? index : (operation.direct ? file.direct_handle() : file.native_handle());
        switch (operation.next_step) {
        case uring_operation::step::transfer: prepare_transfer(*sqe, fd, operation); break;
        case uring_operation::step::zero_range: {
            const int mode = request.operation == block_operation::deallocate ? FALLOC_FL_PUNCH_HOLE
                                                                              : FALLOC_FL_ZERO_RANGE;
            ::io_uring_prep_fallocate(sqe, fd, mode | FALLOC_FL_KEEP_SIZE,
                                      static_cast<off_t>(operation.position),
                                      static_cast<off_t>(operation.remaining));
            break;
        }
        case uring_operation::step::zero_fill: {
            const auto piece = static_cast<unsigned>(
                std::min<std::uint64_t>(operation.remaining, file_backend_zeros.size()));
            operation.submitted_bytes = piece;
            ::io_uring_prep_write(sqe, fd, file_backend_zeros.data(), piece, operation.position);
            break;
        }
        case uring_operation::step::sync: ::io_uring_prep_fsync(sqe, fd, IORING_FSYNC_DATASYNC); break;
        }
        if (registered) {
            sqe->flags |= IOSQE_FIXED_FILE;
        }
        ::io_uring_sqe_set_data(sqe, &operation);
        ++in_kernel;
        ++prepared;
    }

    /// A read or write of the next run of segments with data (at most max_iovecs of them).
    void prepare_transfer(io_uring_sqe& sqe, int fd, uring_operation& operation) noexcept
    {
        const block_request& request = *operation.request;
        std::size_t count = 0;
        std::size_t bytes = 0;
        for (std::size_t i = operation.segment;
             i < request.segments.size() && count < operation.iovecs.size(); ++i) {
            const io_segment& segment = request.segments[i];
            const std::size_t skip = i == operation.segment ? operation.segment_offset : 0;
            if (segment.data == nullptr && segment.size != 0) {
                break; // a discarded range ends the run (skip_discarded left none at its start)
            }
            if (segment.size > skip) {
                const std::size_t piece = std::min(segment.size - skip, file_backend_max_transfer - bytes);
                operation.iovecs[count++] = iovec{segment.data + skip, piece};
                bytes += piece;
                if (bytes == file_backend_max_transfer) {
                    break; // a result must fit the completion's int; the rest goes next
                }
            }
        }
        NVMEKIT_ASSERT(count != 0, "uring_backend: a transfer submitted with nothing to move");
        operation.submitted_bytes = bytes;
        const bool write = request.operation == block_operation::write;
        if (count == 1) {
            const auto length = static_cast<unsigned>(operation.iovecs[0].iov_len);
            if (write) {
                ::io_uring_prep_write(&sqe, fd, operation.iovecs[0].iov_base, length, operation.position);
            } else {
                ::io_uring_prep_read(&sqe, fd, operation.iovecs[0].iov_base, length, operation.position);
            }
        } else if (write) {
            ::io_uring_prep_writev(&sqe, fd, operation.iovecs.data(), static_cast<unsigned>(count),
                                   operation.position);
        } else {
            ::io_uring_prep_readv(&sqe, fd, operation.iovecs.data(), static_cast<unsigned>(count),
                                  operation.position);
        }
        if (write && request.force_unit_access && volatile_cache()) {
            sqe.rw_flags = RWF_DSYNC;
        }
    }

    /// Moves past `moved` bytes of the transfer, then past every discarded or empty segment that
    /// follows (discarded bytes are skipped, not read). False when nothing is left to move.
    static bool advance(uring_operation& operation, std::uint64_t moved) noexcept
    {
        const auto& segments = operation.request->segments;
        operation.position += moved;
        for (; operation.segment < segments.size(); ++operation.segment, operation.segment_offset = 0) {
            const io_segment& segment = segments[operation.segment];
            const std::size_t left = segment.size - operation.segment_offset;
            if (segment.data == nullptr) {
                operation.position += left; // a submission's run never includes discarded bytes
            } else if (moved < left) {
                operation.segment_offset += static_cast<std::size_t>(moved);
                return true;
            } else {
                moved -= left;
            }
        }
        return false;
    }

    /// Zeros the rest of a read that met end of file.
    static void zero_rest(uring_operation& operation) noexcept
    {
        const auto& segments = operation.request->segments;
        for (std::size_t i = operation.segment; i < segments.size(); ++i) {
            const std::size_t skip = i == operation.segment ? operation.segment_offset : 0;
            if (segments[i].data != nullptr && segments[i].size > skip) {
                std::memset(segments[i].data + skip, 0, segments[i].size - skip);
            }
        }
    }

    [[nodiscard]] static block_status write_error(int error) noexcept
    {
        return error == EIO ? block_status::write_fault : block_status::internal_error;
    }

    /// Sets `operation` up for its first step; false when it finished already (it moves nothing).
    bool begin(uring_operation& operation) noexcept
    {
        const block_request& request = *operation.request;
        operation.position = request.offset;
        operation.segment = 0;
        operation.segment_offset = 0;
        operation.direct = false;
        operation.sync_after = false;
        operation.status = block_status::success;
        switch (request.operation) {
        case block_operation::read:
        case block_operation::write:
            operation.next_step = uring_operation::step::transfer;
            if (file.direct_eligible(request)) {
                operation.direct = true;
                direct_count.fetch_add(1, std::memory_order_relaxed);
            }
            if (request.operation == block_operation::write && request.force_unit_access &&
                volatile_cache()) {
                dsync_write_count.fetch_add(1, std::memory_order_relaxed);
            }
            return advance(operation, 0);
        case block_operation::flush: begin_sync(operation); return true;
        case block_operation::write_zeroes:
        case block_operation::deallocate:
            operation.remaining = request.length;
            operation.sync_after = request.operation == block_operation::write_zeroes &&
                                   request.force_unit_access && volatile_cache();
            begin_zeroing(operation);
            return true;
        }
        return false;
    }

    void begin_zeroing(uring_operation& operation) noexcept
    {
        const bool supported = operation.request->operation == block_operation::deallocate
                                   ? punch_hole_supported
                                   : zero_range_supported;
        if (options.file.use_fallocate && supported) {
            operation.next_step = uring_operation::step::zero_range;
        } else {
            begin_zero_fill(operation);
        }
    }

    void begin_zero_fill(uring_operation& operation) noexcept
    {
        zero_fill_count.fetch_add(1, std::memory_order_relaxed);
        operation.next_step = uring_operation::step::zero_fill;
    }

    void begin_sync(uring_operation& operation) noexcept
    {
        sync_count.fetch_add(1, std::memory_order_relaxed);
        operation.next_step = uring_operation::step::sync;
    }

    /// The step after a zeroing finished: the FUA sync, or the end.
    bool after_zeroing(uring_operation& operation) noexcept
    {
        if (operation.sync_after) {
            operation.sync_after = false;
            begin_sync(operation);
            return true;
        }
        return false;
    }

    /// Handles the kernel's result of `operation`'s step: true when the operation continues (its
    /// next step is set), false when it finished with `operation.status`.
    bool finish_step(uring_operation& operation, int result) noexcept
    {
        if (result == -EINTR || result == -EAGAIN) {
            resubmit_count.fetch_add(1, std::memory_order_relaxed);
            return true; // the same step again
        }
        const block_request& request = *operation.request;
        switch (operation.next_step) {
        case uring_operation::step::transfer: return finish_transfer(operation, result);
        case uring_operation::step::zero_range:
            if (result == 0) {
                return after_zeroing(operation);
            }
            if (result == -EOPNOTSUPP || result == -ENOSYS) {
                (request.operation == block_operation::deallocate ? punch_hole_supported
                                                                  : zero_range_supported) = false;
            } else if (result != -EINVAL) {
                operation.status = write_error(-result);
                return false;
            }
            begin_zero_fill(operation);
            return true;
        case uring_operation::step::zero_fill:
            if (result <= 0) {
                operation.status = result == 0 ? block_status::write_fault : write_error(-result);
                return false;
            }
            operation.position += static_cast<std::uint64_t>(result);
            operation.remaining -= static_cast<std::uint64_t>(result);
            return operation.remaining != 0 || after_zeroing(operation);
        case uring_operation::step::sync:
            if (result < 0) {
                operation.status = write_error(-result);
            }
            return false;
        }
        return false;
    }

    bool finish_transfer(uring_operation& operation, int result) noexcept
    {
        const bool write = operation.request->operation == block_operation::write;
        if (result < 0) {
            operation.status = write ? write_error(-result)
                                     : (result == -EIO ? block_status::unrecovered_read_error
                                                       : block_status::internal_error);
            return false;
        }
        const auto moved = static_cast<std::size_t>(result);
        if (moved == 0) {
            if (operation.direct) {
                operation.direct = false; // the ordinary descriptor tries the rest
                resubmit_count.fetch_add(1, std::memory_order_relaxed);
                return true;
            }
            if (write) {
                operation.status = block_status::write_fault;
            } else {
                zero_rest(operation); // end of file
            }
            return false;
        }
        if (!advance(operation, moved)) {
            return false;
        }
        // A short transfer, or more segments than one submission takes: the rest goes next, a
        // short direct one through the ordinary descriptor (the rest may be unaligned).
        if (moved < operation.submitted_bytes) {
            operation.direct = false;
        }
        resubmit_count.fetch_add(1, std::memory_order_relaxed);
        return true;
    }

    /// Reaps every completion that is there; finished operations go to `finished`.
    void reap(uring_operation_list& finished) noexcept
    {
        io_uring_cqe* cqe = nullptr;
        unsigned head = 0;
        unsigned seen = 0;
        io_uring_for_each_cqe(&ring, head, cqe)
        {
            ++seen;
            auto& operation = *static_cast<uring_operation*>(::io_uring_cqe_get_data(cqe));
            --in_kernel;
            if (finish_step(operation, cqe->res)) {
                start(operation);
            } else {
                finished.push(operation);
            }
        }
        ::io_uring_cq_advance(&ring, seen);
    }

    /// Hands what is prepared to the kernel without waiting. An error (EAGAIN, EBUSY, EINTR)
    /// leaves the entries in the ring for the next poll().
    void submit_prepared() noexcept
    {
        if (prepared == 0) {
            return;
        }
        const int submitted = ::io_uring_submit(&ring);
        if (submitted > 0) {
            prepared -= std::min(prepared, static_cast<unsigned>(submitted));
        }
    }
};

} // namespace detail

/// An asynchronous backend on a file or block device through io_uring (see the top of this header).
class uring_backend {
public:
    /// Opens `path` as file_backend does with `options.file`, and sets up the ring. Throws
    /// std::system_error naming the path when the file cannot be opened (as file_backend), when
    /// ring_entries is not a power of two from 1 to 4096 (EINVAL), or when the kernel refuses an
    /// io_uring (ENOSYS, EPERM: a seccomp filter, ENOMEM: the locked-memory limit).
    explicit uring_backend(const std::string& path, uring_backend_options options = {})
        : state_{std::make_unique<detail::uring_backend_state>(path, options)}
    {}

    uring_backend(uring_backend&&) noexcept = default;
    uring_backend& operator=(uring_backend&& other) noexcept
    {
        if (this != &other) {
            static_cast<void>(close());
            state_ = std::move(other.state_);
        }
        return *this;
    }
    uring_backend(const uring_backend&) = delete;
    uring_backend& operator=(const uring_backend&) = delete;

    /// Closes the file, syncing it first when the cache is volatile.
    ~uring_backend() { static_cast<void>(close()); }

    /// The size of the file (or device) when it was opened.
    [[nodiscard]] std::uint64_t capacity_bytes() const noexcept { return state_->file.capacity_bytes(); }

    /// Queues `request`; it completes in a later poll(), or here when it is invalid or has
    /// nothing to do.
    void submit(block_request& request) noexcept
    {
        auto& state = *state_;
        block_status status = validate_block_request(request, state.file.capacity_bytes());
        if (status == block_status::success) {
            status = refusal(request);
        }
        if (status != block_status::success || nothing_to_do(request)) {
            detail::complete_request(request, status);
            return;
        }
        {
            const std::lock_guard lock{state.mutex};
            detail::uring_operation* operation = state.allocate();
            if (operation != nullptr) {
                operation->request = &request;
                if (state.begin(*operation)) {
                    state.outstanding.fetch_add(1, std::memory_order_relaxed);
                    state.start(*operation);
                    return;
                }
                operation->next = state.free_slots; // nothing to move after all
                state.free_slots = operation;
            } else {
                status = block_status::internal_error;
            }
        }
        detail::complete_request(request, status);
    }

    /// Submits what is queued, reaps what the kernel completed, and completes the finished
    /// requests. Returns how many it completed.
    std::size_t poll() noexcept
    {
        auto& state = *state_;
        detail::uring_operation_list finished;
        {
            const std::lock_guard lock{state.mutex};
            state.submit_prepared();
            state.reap(finished);
            state.start_waiting();
            state.submit_prepared();
        }
        if (finished.empty()) {
            return 0;
        }
        std::size_t completed = 0;
        for (detail::uring_operation* operation = finished.head; operation != nullptr;) {
            detail::uring_operation* next = operation->next; // the slot is not reused before the splice below
            state.outstanding.fetch_sub(1, std::memory_order_relaxed);
            detail::complete_request(*operation->request, operation->status);
            ++completed;
            operation = next;
        }
        const std::lock_guard lock{state.mutex};
        finished.tail->next = state.free_slots;
        state.free_slots = finished.head;
        return completed;
    }

    /// Whether writes may be lost without a flush (options.file.volatile_cache on a writable file).
    [[nodiscard]] bool has_volatile_cache() const noexcept { return state_->volatile_cache(); }

    /// Requests submitted and not yet completed.
    [[nodiscard]] std::size_t outstanding() const noexcept
    {
        return state_->outstanding.load(std::memory_order_relaxed);
    }

    /// Syncs (when the cache is volatile) and closes the file and the ring; later requests fail
    /// with internal_error. Needs outstanding() == 0. Returns the first error of the sync or the
    /// closes; closing twice, or a moved-from backend, is a no-op.
    std::error_code close() noexcept
    {
        if (!state_) {
            return {};
        }
        NVMEKIT_ASSERT(outstanding() == 0, "uring_backend closed with requests outstanding");
        state_->close_ring();
        return state_->file.close();
    }

    /// Whether the file is open.
    [[nodiscard]] bool is_open() const noexcept { return state_ && state_->file.is_open(); }
    /// Whether the descriptors are registered with the ring.
    [[nodiscard]] bool files_registered() const noexcept { return state_->registered; }
    /// The file backend that opened the file (descriptors, options, block device or not).
    [[nodiscard]] const file_backend& file() const noexcept { return state_->file; }

    /// fdatasync operations submitted (flushes and FUA Write Zeroes); close() syncs outside the ring.
    [[nodiscard]] std::uint64_t sync_count() const noexcept { return load(state_->sync_count); }
    /// FUA writes submitted with RWF_DSYNC.
    [[nodiscard]] std::uint64_t dsync_write_count() const noexcept { return load(state_->dsync_write_count); }
    /// Write Zeroes and Deallocate requests served by writing zeros instead of fallocate.
    [[nodiscard]] std::uint64_t zero_fill_count() const noexcept { return load(state_->zero_fill_count); }
    /// Reads and writes that went through the O_DIRECT descriptor.
    [[nodiscard]] std::uint64_t direct_count() const noexcept { return load(state_->direct_count); }
    /// Reads and writes submitted again for their rest (a short transfer, more segments than one
    /// submission takes, a direct transfer retried buffered), and steps retried after EINTR or
    /// EAGAIN.
    [[nodiscard]] std::uint64_t resubmit_count() const noexcept { return load(state_->resubmit_count); }
    /// Requests that waited for room in the ring (the queue depth was reached).
    [[nodiscard]] std::uint64_t waited_count() const noexcept { return load(state_->waited_count); }

private:
    [[nodiscard]] static std::uint64_t load(const std::atomic<std::uint64_t>& counter) noexcept
    {
        return counter.load(std::memory_order_relaxed);
    }

    /// internal_error for a request the backend refuses whole: after close(), or a change to a
    /// read-only file.
    [[nodiscard]] block_status refusal(const block_request& request) const noexcept
    {
        const file_backend& file = state_->file;
        if (!file.is_open()) {
            return block_status::internal_error;
        }
        if (file.read_only() && request.operation != block_operation::read &&
            request.operation != block_operation::flush) {
            return block_status::internal_error;
        }
        return block_status::success;
    }

    /// Requests that succeed without touching the file: empty ranges, and flushes without a
    /// volatile cache.
    [[nodiscard]] bool nothing_to_do(const block_request& request) const noexcept
    {
        if (request.operation == block_operation::flush) {
            return !state_->volatile_cache();
        }
        return request.length == 0;
    }

    std::unique_ptr<detail::uring_backend_state> state_;
};

static_assert(check_block_backend<uring_backend>());

NVMEKIT_END_NAMESPACE
