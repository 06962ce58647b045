#pragma once
/// What the backend tests share: one block request run on a backend (run(): most shipped backends
/// complete every request inside submit(), so the outcome is known when it returns; run_polled()
/// polls a backend that completes later until it does), page-aligned buffers for O_DIRECT, and
/// temporary files (in scratch_directory.hpp's directory, where O_DIRECT works).

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <nvmekit/block_backend.hpp>

#include "scratch_directory.hpp"

namespace nvmekit_test {

/// How a request ended: how many times its completion ran (1 for a correct backend) and with
/// what status.
struct outcome {
    int calls = 0;
    nvmekit::block_status status = nvmekit::block_status::success;
};

/// A request that records its outcome; it must stay where it is until it completes.
struct recorded_request {
    outcome result;
    nvmekit::block_request request;

    recorded_request(nvmekit::block_operation operation, std::uint64_t offset, std::uint64_t length,
                     std::span<const nvmekit::io_segment> segments = {}, bool force_unit_access = false)
        : request{.operation = operation,
                  .force_unit_access = force_unit_access,
                  .offset = offset,
                  .length = length,
                  .segments = segments,
                  .complete =
                      [](nvmekit::block_request& done, nvmekit::block_status status) {
                          auto* self = static_cast<outcome*>(done.context);
                          ++self->calls;
                          self->status = status;
                      },
                  .context = &result}
    {}
    recorded_request(const recorded_request&) = delete;
    recorded_request& operator=(const recorded_request&) = delete;
};

/// Submits one request and returns its outcome.
template <typename Backend>
outcome run(Backend& backend, nvmekit::block_operation operation, std::uint64_t offset, std::uint64_t length,
            std::span<const nvmekit::io_segment> segments = {}, bool force_unit_access = false)
{
    recorded_request one{operation, offset, length, segments, force_unit_access};
    backend.submit(one.request);
    return one.result;
}

/// Submits one request, polls the backend until it completes (at most 10 s), and returns its
/// outcome: for backends that complete in a later poll().
template <typename Backend>
outcome run_polled(Backend& backend, nvmekit::block_operation operation, std::uint64_t offset,
                   std::uint64_t length, std::span<const nvmekit::io_segment> segments = {},
                   bool force_unit_access = false)
{
    recorded_request one{operation, offset, length, segments, force_unit_access};
    backend.submit(one.request);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{10};
    while (one.result.calls == 0 && std::chrono::steady_clock::now() < deadline) {
        backend.poll();
    }
    EXPECT_EQ(one.result.calls, 1) << "the request did not complete exactly once within 10 s";
    return one.result;
}

/// Writes `bytes` at `offset` (run_polled) and returns the status.
template <typename Backend>
nvmekit::block_status write_bytes(Backend& backend, std::uint64_t offset, std::span<std::byte> bytes,
                                  bool force_unit_access = false)
{
    const std::array segments{nvmekit::io_segment{bytes.data(), bytes.size()}};
    return run_polled(backend, nvmekit::block_operation::write, offset, bytes.size(), segments,
                      force_unit_access)
        .status;
}

/// `length` bytes read at `offset` (run_polled), which must succeed.
template <typename Backend>
std::vector<std::byte> read_bytes(Backend& backend, std::uint64_t offset, std::size_t length)
{
    std::vector<std::byte> bytes(length, std::byte{0xee});
    const std::array segments{nvmekit::io_segment{bytes.data(), bytes.size()}};
    EXPECT_EQ(run_polled(backend, nvmekit::block_operation::read, offset, length, segments).status,
              nvmekit::block_status::success);
    return bytes;
}

/// `length` bytes of a pattern that depends on `seed`, none of them zero.
inline std::vector<std::byte> pattern(std::size_t length, std::uint8_t seed)
{
    std::vector<std::byte> bytes(length);
    for (std::size_t i = 0; i < length; ++i) {
        bytes[i] = static_cast<std::byte>((i * 13 + seed) % 251 + 1);
    }
    return bytes;
}

inline std::vector<std::byte> zeros(std::size_t length)
{
    return std::vector<std::byte>(length, std::byte{0});
}

struct aligned_deleter {
    void operator()(std::byte* bytes) const noexcept { std::free(bytes); }
};
using aligned_bytes = std::unique_ptr<std::byte[], aligned_deleter>;

/// `size` bytes aligned to 4 KiB (a multiple of 4 KiB), as O_DIRECT needs.
inline aligned_bytes aligned_buffer(std::size_t size)
{
    return aligned_bytes{static_cast<std::byte*>(std::aligned_alloc(4096, size))};
}

/// Whether the file system holding `path` supports FALLOC_FL_ZERO_RANGE (tmpfs does not). Zeroes
/// the first 4 KiB of the file.
inline bool zero_range_supported(const std::string& path)
{
    const int fd = ::open(path.c_str(), O_RDWR);
    if (fd < 0) {
        return false;
    }
    const bool supported = ::fallocate(fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, 0, 4096) == 0;
    ::close(fd);
    return supported;
}

} // namespace nvmekit_test
