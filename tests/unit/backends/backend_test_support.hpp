#pragma once
/// What the backend tests share: one block request run on a backend (run(): most shipped backends
/// complete every request inside submit(), so the outcome is known when it returns; run_polled()
/// polls a backend that completes later until it does), page-aligned buffers for O_DIRECT, and
/// temporary files (in scratch_directory.hpp's directory, where O_DIRECT works).

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <nvmekit/contracts/block_backend.hpp>

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

/// What submit_inline() did with one request: the status it returned (std::nullopt: none) and
/// how the completion callback ran.
struct inline_outcome {
    std::optional<nvmekit::block_status> returned;
    outcome callback;
};

/// Submits one request with submit_inline() and returns what happened by the time it returned.
template <typename Backend>
inline_outcome run_inline(Backend& backend, nvmekit::block_operation operation, std::uint64_t offset,
                          std::uint64_t length, std::span<const nvmekit::io_segment> segments = {})
{
    recorded_request one{operation, offset, length, segments};
    const auto returned = backend.submit_inline(one.request);
    return inline_outcome{returned, one.result};
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

/// Writes 3000 and 5000 bytes from two segments at offset 1000 and reads them back in one piece;
/// returns the 8000 bytes written.
template <typename Backend>
std::vector<std::byte> expect_two_segment_round_trip(Backend& backend)
{
    auto first = pattern(3000, 2);
    auto second = pattern(5000, 3);
    const std::array segments{nvmekit::io_segment{first.data(), first.size()},
                              nvmekit::io_segment{second.data(), second.size()}};
    EXPECT_EQ(run_polled(backend, nvmekit::block_operation::write, 1000, 8000, segments).status,
              nvmekit::block_status::success);
    std::vector<std::byte> expected(first.size() + second.size());
    std::copy(second.begin(), second.end(), std::copy(first.begin(), first.end(), expected.begin()));
    EXPECT_EQ(read_bytes(backend, 1000, 8000), expected);
    return expected;
}

/// A test with a temporary file of its own at `path_` (in the scratch directory), removed after it.
class temporary_file_test : public ::testing::Test {
protected:
    void SetUp() override { path_ = make_temporary_file("nvmekit_backend"); }
    void TearDown() override { ::unlink(path_.c_str()); }

    [[nodiscard]] struct stat file_status() const
    {
        struct stat status {};
        EXPECT_EQ(::stat(path_.c_str(), &status), 0);
        return status;
    }

    /// On a backend of 256 KiB over `path_`: 256 KiB written with FUA, then the middle 128 KiB
    /// deallocated by fallocate (not by writing zeros): the file loses those blocks, keeps its
    /// size, and the range reads back as zeros.
    template <typename Backend>
    void expect_deallocate_punches_a_hole(Backend& backend)
    {
        constexpr std::uint64_t kib = 1024;
        auto data = pattern(256 * kib, 9);
        ASSERT_EQ(write_bytes(backend, 0, data, true), nvmekit::block_status::success);
        const blkcnt_t blocks_before = file_status().st_blocks;
        EXPECT_EQ(run_polled(backend, nvmekit::block_operation::deallocate, 64 * kib, 128 * kib).status,
                  nvmekit::block_status::success);
        EXPECT_EQ(backend.zero_fill_count(), 0U);
        EXPECT_EQ(file_status().st_blocks, blocks_before - 128 * 1024 / 512);
        EXPECT_EQ(file_status().st_size, 256 * 1024);
        std::vector<std::byte> expected = data;
        std::fill(expected.begin() + 64 * kib, expected.begin() + 192 * kib, std::byte{0});
        EXPECT_EQ(read_bytes(backend, 0, 256 * kib), expected);
    }

    std::string path_;
};

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
