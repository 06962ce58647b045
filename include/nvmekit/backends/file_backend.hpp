#pragma once
/// A BlockBackend on a regular file or a block device (Linux).
///
/// Every request runs synchronously inside submit() (pread/pwrite/fdatasync/fallocate) and
/// completes there, so submit() blocks for as long as the I/O takes; poll() always returns 0.
/// Put the backend on a thread of its own, or use an asynchronous backend, when that matters.
///
/// - Reads and writes loop until every byte moved, retrying on EINTR and after short transfers.
///   A read that meets end of file (a file shrunk behind the backend's back) gives zeros for the
///   rest; holes of a sparse file read as zeros too.
/// - Flush is fdatasync. A write with force_unit_access is fdatasync'ed before it completes.
/// - Write Zeroes uses fallocate(FALLOC_FL_ZERO_RANGE) and Deallocate
///   fallocate(FALLOC_FL_PUNCH_HOLE); both keep the size and, when the file system or device
///   refuses (EOPNOTSUPP, ENOSYS, EINVAL), fall back to writing zeros, so both ranges read back as
///   zeros either way.
/// - `volatile_cache = false` opens the file with O_DSYNC: every write is durable when it
///   completes, flush and FUA need no sync and has_volatile_cache() is false.
/// - `direct = true` opens a second descriptor with O_DIRECT. A read or write goes through it when
///   its offset and every segment's address and size are multiples of `direct_alignment`; any
///   other request, the rest of a short direct transfer, and the zero-writing fallbacks use the
///   ordinary descriptor. Linux keeps the two coherent: a direct read writes back dirty cached
///   pages of its range first and a direct write drops them.
/// - Errors: EIO on a read gives unrecovered_read_error; EIO on a write, a flush or a zeroing gives
///   write_fault; any other error internal_error. A write, Write Zeroes or Deallocate on a
///   read-only backend, or any request after close(), completes with internal_error.
///
/// Threads: submit() may run on several threads at once (poll groups on threads of their own
/// submitting to one namespace), each request object used by one thread. Every transfer is a
/// positioned pread/pwrite (no shared file offset) straight between the file and the request's own
/// segments: there is no bounce buffer, and the zero-writing fallback reads a constant buffer of
/// zeros. The descriptors and options are fixed while the file is open; the counters
/// (sync_count, zero_fill_count, direct_count) and the remembered refusals of fallocate are
/// relaxed atomics, exact and readable on any thread. Requests on different bytes therefore never
/// interfere; requests on the same bytes at once leave them undefined, as on a drive, and are
/// memory-safe. A flush syncs every write completed before it on any thread. close(), moves and
/// destruction must not overlap any other call.

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nvmekit/config.hpp>
#include <nvmekit/contracts/block_backend.hpp>

NVMEKIT_BEGIN_NAMESPACE

/// Options of a file_backend.
struct file_backend_options {
    /// When set: create the regular file if it is missing and set its size to this many bytes
    /// (an existing file is truncated or extended; new space is a hole).
    std::optional<std::uint64_t> create_size{};
    /// Open read-only; writes, Write Zeroes and Deallocate then fail with internal_error.
    bool read_only = false;
    /// Also open the file with O_DIRECT and use it for aligned requests (see the top of the header).
    bool direct = false;
    /// Alignment of offsets, buffers and sizes that O_DIRECT needs: a power of two of at least 512,
    /// no smaller than the device's logical block size.
    std::size_t direct_alignment = 4096;
    /// Whether writes may sit in the page cache until a flush (true) or are durable when they
    /// complete (false: O_DSYNC).
    bool volatile_cache = true;
    /// Use fallocate for Write Zeroes and Deallocate; false always writes zeros.
    bool use_fallocate = true;
};

namespace detail {
inline constexpr std::array<std::byte, 65536> file_backend_zeros{};
/// The most bytes one pread/pwrite call is asked for (Linux moves at most 0x7ffff000 anyway).
inline constexpr std::size_t file_backend_max_transfer = std::size_t{1} << 30;

[[noreturn]] inline void throw_file_error(int error, const std::string& path, const char* what)
{
    throw std::system_error(error, std::system_category(),
                            "file_backend: " + std::string{what} + " '" + path + "'");
}
} // namespace detail

/// A synchronous backend on a file or block device (see the top of this header).
class file_backend {
public:
    /// Opens `path`. Throws std::system_error, whose message names the path, when the file
    /// cannot be opened, created, sized or measured, is neither a regular file nor a block
    /// device, or the options contradict each other (create_size with read_only or with a block
    /// device, a bad direct_alignment).
    explicit file_backend(const std::string& path, file_backend_options options = {}) : options_{options}
    {
        const std::size_t alignment = options.direct_alignment;
        if (options.direct && (alignment < 512 || (alignment & (alignment - 1)) != 0)) {
            detail::throw_file_error(EINVAL, path,
                                     "direct_alignment must be a power of two of at least 512 for");
        }
        if (options.create_size && options.read_only) {
            detail::throw_file_error(EINVAL, path, "create_size and read_only exclude each other for");
        }
        int flags = (options.read_only ? O_RDONLY : O_RDWR) | O_CLOEXEC;
        if (!options.volatile_cache && !options.read_only) {
            flags |= O_DSYNC;
        }
        fd_ = ::open(path.c_str(), flags | (options.create_size ? O_CREAT : 0), 0644);
        if (fd_ < 0) {
            detail::throw_file_error(errno, path, "cannot open");
        }
        try {
            measure(path);
            if (options.direct) {
                direct_fd_ = ::open(path.c_str(), flags | O_DIRECT);
                if (direct_fd_ < 0) {
                    detail::throw_file_error(errno, path, "cannot open with O_DIRECT");
                }
            }
        } catch (...) {
            release();
            throw;
        }
    }

    file_backend(const file_backend&) = delete;
    file_backend& operator=(const file_backend&) = delete;

    file_backend(file_backend&& other) noexcept
        : options_{other.options_}
        , capacity_{other.capacity_}
        , fd_{std::exchange(other.fd_, -1)}
        , direct_fd_{std::exchange(other.direct_fd_, -1)}
        , block_device_{other.block_device_}
        , zero_range_supported_{other.zero_range_supported_.load(std::memory_order_relaxed)}
        , punch_hole_supported_{other.punch_hole_supported_.load(std::memory_order_relaxed)}
        , sync_count_{other.sync_count_.load(std::memory_order_relaxed)}
        , zero_fill_count_{other.zero_fill_count_.load(std::memory_order_relaxed)}
        , direct_count_{other.direct_count_.load(std::memory_order_relaxed)}
    {}

    file_backend& operator=(file_backend&& other) noexcept
    {
        if (this != &other) {
            static_cast<void>(close());
            options_ = other.options_;
            capacity_ = other.capacity_;
            fd_ = std::exchange(other.fd_, -1);
            direct_fd_ = std::exchange(other.direct_fd_, -1);
            block_device_ = other.block_device_;
            copy_relaxed(zero_range_supported_, other.zero_range_supported_);
            copy_relaxed(punch_hole_supported_, other.punch_hole_supported_);
            copy_relaxed(sync_count_, other.sync_count_);
            copy_relaxed(zero_fill_count_, other.zero_fill_count_);
            copy_relaxed(direct_count_, other.direct_count_);
        }
        return *this;
    }

    /// Closes the file, syncing it first when the cache is volatile.
    ~file_backend() { static_cast<void>(close()); }

    /// The size of the file (or device) when it was opened.
    [[nodiscard]] std::uint64_t capacity_bytes() const noexcept { return capacity_; }

    /// Runs `request` synchronously and completes it before returning.
    void submit(block_request& request) noexcept
    {
        block_status status = validate_block_request(request, capacity_);
        if (status == block_status::success) {
            status = run(request);
        }
        detail::complete_request(request, status);
    }

    /// Nothing is ever pending: returns 0.
    std::size_t poll() noexcept { return 0; }

    /// Whether writes may be lost without a flush (options.volatile_cache on a writable file).
    [[nodiscard]] bool has_volatile_cache() const noexcept
    {
        return options_.volatile_cache && !options_.read_only;
    }

    /// Always 0: requests complete inside submit().
    [[nodiscard]] std::size_t outstanding() const noexcept { return 0; }

    /// Syncs (when the cache is volatile) and closes the file; later requests fail with
    /// internal_error. Returns the first error of the sync or the closes; closing twice is a no-op.
    std::error_code close() noexcept
    {
        std::error_code result;
        if (fd_ >= 0 && has_volatile_cache() && sync() != 0) {
            result = {errno, std::system_category()};
        }
        for (int* fd : {&direct_fd_, &fd_}) {
            if (*fd >= 0 && ::close(std::exchange(*fd, -1)) != 0 && !result) {
                result = {errno, std::system_category()};
            }
        }
        return result;
    }

    /// The ordinary (not O_DIRECT) file descriptor, or -1 once closed.
    [[nodiscard]] int native_handle() const noexcept { return fd_; }

    /// The O_DIRECT file descriptor, or -1 when the file was not opened for direct I/O or is closed.
    [[nodiscard]] int direct_handle() const noexcept { return direct_fd_; }

    /// Whether `request` (a read or write) goes through the O_DIRECT descriptor: the file was
    /// opened for direct I/O and the request's offset and every segment's address and size are
    /// multiples of direct_alignment.
    [[nodiscard]] bool direct_eligible(const block_request& request) const noexcept
    {
        if (direct_fd_ < 0) {
            return false;
        }
        const std::size_t mask = options_.direct_alignment - 1;
        if ((request.offset & mask) != 0) {
            return false;
        }
        return std::all_of(request.segments.begin(), request.segments.end(),
                           [mask](const io_segment& segment) {
                               return (segment.size & mask) == 0 &&
                                      (reinterpret_cast<std::uintptr_t>(segment.data) & mask) == 0;
                           });
    }

    /// Whether the file is open (not closed and not moved from).
    [[nodiscard]] bool is_open() const noexcept { return fd_ >= 0; }
    /// Whether the backend is a block device rather than a regular file.
    [[nodiscard]] bool is_block_device() const noexcept { return block_device_; }
    /// Whether the backend was opened read-only.
    [[nodiscard]] bool read_only() const noexcept { return options_.read_only; }

    /// fdatasync calls made so far (flushes, FUA writes, close).
    [[nodiscard]] std::uint64_t sync_count() const noexcept
    {
        return sync_count_.load(std::memory_order_relaxed);
    }
    /// Write Zeroes and Deallocate requests served by writing zeros instead of fallocate.
    [[nodiscard]] std::uint64_t zero_fill_count() const noexcept
    {
        return zero_fill_count_.load(std::memory_order_relaxed);
    }
    /// Reads and writes that went through the O_DIRECT descriptor.
    [[nodiscard]] std::uint64_t direct_count() const noexcept
    {
        return direct_count_.load(std::memory_order_relaxed);
    }

private:
    template <typename T>
    static void copy_relaxed(std::atomic<T>& target, const std::atomic<T>& source) noexcept
    {
        target.store(source.load(std::memory_order_relaxed), std::memory_order_relaxed);
    }

    void measure(const std::string& path)
    {
        struct stat status {};
        if (::fstat(fd_, &status) != 0) {
            detail::throw_file_error(errno, path, "cannot stat");
        }
        if (S_ISREG(status.st_mode)) {
            if (options_.create_size) {
                if (*options_.create_size > static_cast<std::uint64_t>(INT64_MAX)) {
                    detail::throw_file_error(EFBIG, path, "create_size too large for");
                }
                const auto size = static_cast<off_t>(*options_.create_size);
                if (status.st_size != size && ::ftruncate(fd_, size) != 0) {
                    detail::throw_file_error(errno, path, "cannot set the size of");
                }
                status.st_size = size;
            }
            capacity_ = static_cast<std::uint64_t>(status.st_size);
        } else if (S_ISBLK(status.st_mode)) {
            if (options_.create_size) {
                detail::throw_file_error(EINVAL, path, "create_size does not apply to the block device");
            }
            std::uint64_t size = 0;
            if (::ioctl(fd_, BLKGETSIZE64, &size) != 0) {
                detail::throw_file_error(errno, path, "cannot read the size of the block device");
            }
            capacity_ = size;
            block_device_ = true;
        } else {
            detail::throw_file_error(EINVAL, path, "neither a regular file nor a block device:");
        }
    }

    void release() noexcept
    {
        for (int* fd : {&direct_fd_, &fd_}) {
            if (*fd >= 0) {
                ::close(std::exchange(*fd, -1));
            }
        }
    }

    /// fdatasync, retried on EINTR; 0 or -1 with errno set.
    int sync() noexcept
    {
        sync_count_.fetch_add(1, std::memory_order_relaxed);
        int result = 0;
        do {
            result = ::fdatasync(fd_);
        } while (result != 0 && errno == EINTR);
        return result;
    }

    [[nodiscard]] static block_status write_error(int error) noexcept
    {
        return error == EIO ? block_status::write_fault : block_status::internal_error;
    }

    block_status run(const block_request& request) noexcept
    {
        if (fd_ < 0) {
            return block_status::internal_error;
        }
        if (options_.read_only && request.operation != block_operation::read &&
            request.operation != block_operation::flush) {
            return block_status::internal_error;
        }
        switch (request.operation) {
        case block_operation::read: return transfer(request, false);
        case block_operation::write: return finish_write(request, transfer(request, true));
        case block_operation::flush:
            if (!has_volatile_cache()) {
                return block_status::success;
            }
            return sync() == 0 ? block_status::success : write_error(errno);
        case block_operation::write_zeroes:
            return finish_write(
                request, zero(request.offset, request.length, FALLOC_FL_ZERO_RANGE, zero_range_supported_));
        case block_operation::deallocate:
            return zero(request.offset, request.length, FALLOC_FL_PUNCH_HOLE, punch_hole_supported_);
        }
        return block_status::internal_error;
    }

    /// Applies force_unit_access once the data is written.
    block_status finish_write(const block_request& request, block_status status) noexcept
    {
        if (status != block_status::success || !request.force_unit_access || !has_volatile_cache()) {
            return status;
        }
        return sync() == 0 ? block_status::success : write_error(errno);
    }

    block_status transfer(const block_request& request, bool is_write) noexcept
    {
        int fd = fd_;
        if (direct_eligible(request)) {
            fd = direct_fd_;
            direct_count_.fetch_add(1, std::memory_order_relaxed);
        }
        std::uint64_t position = request.offset;
        for (const io_segment& segment : request.segments) {
            if (segment.data != nullptr && segment.size != 0) {
                const block_status status = is_write ? write_all(fd, segment.data, segment.size, position)
                                                     : read_all(fd, segment.data, segment.size, position);
                if (status != block_status::success) {
                    return status;
                }
            }
            position += segment.size;
        }
        return block_status::success;
    }

    /// Reads `size` bytes at `offset`; a short direct read continues on the ordinary descriptor
    /// (the rest may be unaligned) and end of file gives zeros.
    block_status read_all(int fd, std::byte* data, std::size_t size, std::uint64_t offset) noexcept
    {
        while (size != 0) {
            const std::size_t asked = std::min(size, detail::file_backend_max_transfer);
            const ssize_t done = ::pread(fd, data, asked, static_cast<off_t>(offset));
            if (done < 0) {
                if (errno == EINTR) {
                    continue;
                }
                return errno == EIO ? block_status::unrecovered_read_error : block_status::internal_error;
            }
            if (done == 0) {
                if (fd != fd_) {
                    fd = fd_;
                    continue;
                }
                std::memset(data, 0, size);
                return block_status::success;
            }
            const auto moved = static_cast<std::size_t>(done);
            if (moved < asked) {
                fd = fd_;
            }
            data += moved;
            size -= moved;
            offset += moved;
        }
        return block_status::success;
    }

    /// Writes `size` bytes at `offset`; a short direct write continues on the ordinary descriptor.
    block_status write_all(int fd, const std::byte* data, std::size_t size, std::uint64_t offset) noexcept
    {
        while (size != 0) {
            const std::size_t asked = std::min(size, detail::file_backend_max_transfer);
            const ssize_t done = ::pwrite(fd, data, asked, static_cast<off_t>(offset));
            if (done < 0) {
                if (errno == EINTR) {
                    continue;
                }
                return write_error(errno);
            }
            if (done == 0) {
                if (fd != fd_) {
                    fd = fd_;
                    continue;
                }
                return block_status::write_fault;
            }
            const auto moved = static_cast<std::size_t>(done);
            if (moved < asked) {
                fd = fd_;
            }
            data += moved;
            size -= moved;
            offset += moved;
        }
        return block_status::success;
    }

    /// Zeroes [offset, offset + length) with fallocate(`mode` | FALLOC_FL_KEEP_SIZE), or by
    /// writing zeros when fallocate is off or refused. `supported` remembers a refusal for good;
    /// it is a relaxed atomic because requests on other threads may read it meanwhile (one that
    /// still tries fallocate once more is refused again and falls back the same way).
    block_status zero(std::uint64_t offset, std::uint64_t length, int mode,
                      std::atomic<bool>& supported) noexcept
    {
        if (length == 0) {
            return block_status::success;
        }
        if (options_.use_fallocate && supported.load(std::memory_order_relaxed)) {
            int result = 0;
            do {
                result = ::fallocate(fd_, mode | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(offset),
                                     static_cast<off_t>(length));
            } while (result != 0 && errno == EINTR);
            if (result == 0) {
                return block_status::success;
            }
            if (errno == EOPNOTSUPP || errno == ENOSYS) {
                supported.store(false, std::memory_order_relaxed);
            } else if (errno != EINVAL) {
                return write_error(errno);
            }
        }
        zero_fill_count_.fetch_add(1, std::memory_order_relaxed);
        while (length != 0) {
            const auto piece =
                static_cast<std::size_t>(std::min<std::uint64_t>(length, detail::file_backend_zeros.size()));
            const block_status status = write_all(fd_, detail::file_backend_zeros.data(), piece, offset);
            if (status != block_status::success) {
                return status;
            }
            offset += piece;
            length -= piece;
        }
        return block_status::success;
    }

    file_backend_options options_;
    std::uint64_t capacity_ = 0;
    int fd_ = -1;
    int direct_fd_ = -1;
    bool block_device_ = false;
    // Changed by requests, possibly on several threads at once: relaxed atomics (they order
    // nothing; the kernel orders the I/O).
    std::atomic<bool> zero_range_supported_{true};
    std::atomic<bool> punch_hole_supported_{true};
    std::atomic<std::uint64_t> sync_count_{0};
    std::atomic<std::uint64_t> zero_fill_count_{0};
    std::atomic<std::uint64_t> direct_count_{0};
};

static_assert(check_block_backend<file_backend>());

NVMEKIT_END_NAMESPACE
