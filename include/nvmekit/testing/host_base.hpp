#pragma once
/// What the two testing hosts share, so that a test written against one runs against the other:
/// in_process_host (host.hpp: BAR0, doorbells, queues and PRPs in host memory) and loopback_host
/// (loopback.hpp: properties, message-based queues and SGLs over the transport's buffers). Both
/// hold their data in a flat_memory, allocate and release buffers in it, and point a command at a
/// buffer with describe_data(sqe, address, length), each with its own kind of data pointer;
/// admin_read and get_log_page are built on those.
///
///     const auto buffer = host.allocate(4096);
///     auto read = host.lba_command(nvmekit::spec::nvm_opcode::read, 1, 0, 8);
///     host.describe_data(read, buffer, 4096); // PRPs or one SGL Data Block
///     host.io(1, read);
///     host.release(buffer);

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include <nvmekit/config.hpp>
#include <nvmekit/spec/log_pages.hpp>
#include <nvmekit/spec/queue_entries.hpp>
#include <nvmekit/testing/command_builders.hpp>
#include <nvmekit/testing/flat_memory.hpp>
#include <nvmekit/testing/manual_clock.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace testing {

/// A protocol violation seen by the host, or a controller that did not answer in time.
class host_error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// One reaped completion.
struct completion {
    spec::completion_queue_entry cqe{};
    [[nodiscard]] spec::status status() const noexcept { return cqe.status(); }
    [[nodiscard]] bool ok() const noexcept { return cqe.status().is_success(); }
};

/// The data buffers and the commands with data both hosts offer. `Host` derives from it (and from
/// command_builders) and provides `admin(sqe)`, `describe_data(sqe, address, length)` and, when
/// describing data allocates memory of its own, a `release(address)` that frees it with the buffer.
template <typename Host>
class host_base {
public:
    explicit host_base(flat_memory& memory) noexcept : memory_{memory} {}

    /// The memory the host's data buffers live in.
    [[nodiscard]] flat_memory& memory() noexcept { return memory_; }

    /// Allocates a zeroed data buffer (page aligned by default).
    std::uint64_t allocate(std::size_t size, std::size_t alignment = 4096)
    {
        const auto address = memory_.allocate(std::max<std::size_t>(size, 1), alignment);
        if (!address) {
            throw host_error{"host memory exhausted"};
        }
        zero(*address, size);
        return *address;
    }

    /// Frees a buffer allocate() returned.
    void release(std::uint64_t address) { memory_.deallocate(address); }

    /// Runs an admin command that returns `bytes` of data; the data lands in `out` (resized).
    completion admin_read(spec::submission_queue_entry sqe, std::size_t bytes, std::vector<std::byte>& out)
    {
        auto& host = static_cast<Host&>(*this);
        const std::uint64_t buffer = allocate(std::max<std::size_t>(bytes, 4));
        host.describe_data(sqe, buffer, bytes);
        const auto result = host.admin(sqe);
        out.resize(bytes);
        if (memory_.read(buffer, out)) {
            throw host_error{"cannot read back the " + std::to_string(bytes) + " bytes of an admin command"};
        }
        host.release(buffer);
        return result;
    }

    /// Reads a whole log page (RAE as given), e.g. to acknowledge an asynchronous event.
    completion get_log_page(spec::log_page_id lid, std::size_t bytes, std::vector<std::byte>& out,
                            bool retain_async_event = false, std::uint32_t nsid = 0xffffffffU)
    {
        return admin_read(command_builders::get_log_page_command(lid, static_cast<std::uint32_t>(bytes), nsid,
                                                                 retain_async_event),
                          bytes, out);
    }

protected:
    /// Polls `controller` until `done()` holds, advancing `clock` by `step` after each poll that
    /// did not end the wait; throws host_error naming `what` after `max_polls` polls.
    template <typename Controller, typename Predicate>
    static void poll_until(Controller& controller, manual_clock& clock, std::size_t max_polls,
                           std::chrono::nanoseconds step, Predicate&& done, const char* what)
    {
        for (std::size_t poll = 0; poll < max_polls; ++poll) {
            controller.poll();
            if (done()) {
                return;
            }
            clock.advance(step);
        }
        throw host_error{std::string{"timed out waiting for "} + what};
    }

    /// Zeroes `size` bytes at `address` through write(), a page at a time.
    void zero(std::uint64_t address, std::size_t size)
    {
        static constexpr std::array<std::byte, 4096> zeroes{};
        for (std::size_t done = 0; done < size;) {
            const std::size_t chunk = std::min(zeroes.size(), size - done);
            if (memory_.write(address + done, std::span{zeroes.data(), chunk})) {
                throw host_error{"cannot zero " + std::to_string(size) + " bytes of host memory"};
            }
            done += chunk;
        }
    }

private:
    flat_memory& memory_;
};

} // namespace testing
NVMEKIT_END_NAMESPACE
