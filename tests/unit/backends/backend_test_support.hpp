#pragma once
/// What the backend tests share: one block request run on a backend (the shipped backends complete
/// every request inside submit(), so the outcome is known when run() returns), page-aligned
/// buffers for O_DIRECT, and temporary files (in scratch_directory.hpp's directory, where O_DIRECT works).

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <span>
#include <string>

#include <fcntl.h>
#include <unistd.h>

#include <nvmekit/block_backend.hpp>

#include "scratch_directory.hpp"

namespace nvmekit_test {

/// How a request ended: how many times its completion ran (1 for a correct backend) and with
/// what status.
struct outcome {
    int calls = 0;
    nvmekit::block_status status = nvmekit::block_status::success;
};

/// Submits one request and returns its outcome.
template <typename Backend>
outcome run(Backend& backend, nvmekit::block_operation operation, std::uint64_t offset, std::uint64_t length,
            std::span<const nvmekit::io_segment> segments = {}, bool force_unit_access = false)
{
    outcome result;
    nvmekit::block_request request{.operation = operation,
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
                                   .context = &result};
    backend.submit(request);
    return result;
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
