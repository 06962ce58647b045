// nvmekit-perf's file backends (--backend file and uring), in a translation unit of their own
// (perf_run.hpp says why).

#include "perf_run.hpp"

namespace nvmekit_perf {
namespace {

/// Creates the file of --backend file|uring at `o.size` bytes and writes data into every block
/// unless every block is allocated already (reads of holes would not read the file system).
void prepare_file(const options& o)
{
    const int fd = ::open(o.file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        throw std::runtime_error(fmt::format("cannot open {}: {}", o.file, std::strerror(errno)));
    }
    struct stat status {};
    const bool filled = ::fstat(fd, &status) == 0 && static_cast<std::uint64_t>(status.st_size) == o.size &&
                        static_cast<std::uint64_t>(status.st_blocks) * 512 >= o.size;
    std::string problem;
    if (!filled) {
        if (!o.json) {
            fmt::print(stderr, "filling {} ({} MiB)\n", o.file, o.size >> 20);
        }
        std::vector<std::byte> chunk(std::size_t{1} << 20);
        std::mt19937_64 random{1};
        for (auto& byte : chunk) {
            byte = static_cast<std::byte>(random());
        }
        if (::ftruncate(fd, static_cast<off_t>(o.size)) != 0) {
            problem = std::strerror(errno);
        }
        for (std::uint64_t offset = 0; problem.empty() && offset < o.size; offset += chunk.size()) {
            const auto piece =
                static_cast<std::size_t>(std::min<std::uint64_t>(chunk.size(), o.size - offset));
            if (::pwrite(fd, chunk.data(), piece, static_cast<off_t>(offset)) !=
                static_cast<ssize_t>(piece)) {
                problem = "short write";
            }
        }
        if (problem.empty() && ::fsync(fd) != 0) {
            problem = std::strerror(errno);
        }
    }
    ::close(fd);
    if (!problem.empty()) {
        throw std::runtime_error(fmt::format("cannot fill {}: {}", o.file, problem));
    }
}

/// The backend of --backend file or uring, type-erased so that both share one controller type.
nvmekit::any_backend file_namespace(const options& o)
{
    const nvmekit::file_backend_options file{.direct = o.direct};
#ifdef NVMEKIT_PERF_HAVE_URING
    if (o.backend == "uring") {
        // A ring as deep as every queue's commands together: none waits in the backend.
        const auto depth =
            std::bit_ceil(std::min<std::uint32_t>(std::uint32_t{o.queues} * o.queue_depth, 4096));
        return nvmekit::uring_backend{o.file, {.file = file, .ring_entries = depth}};
    }
#endif
    return nvmekit::file_backend{o.file, file};
}

} // namespace

results run_file_backend(const options& o, std::uint32_t lba_bytes)
{
    prepare_file(o);
    return run(o, file_namespace(o), lba_bytes);
}

} // namespace nvmekit_perf
