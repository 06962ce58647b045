#pragma once
/// Where the tests put their temporary files: a directory whose file system supports O_DIRECT, so
/// the direct-I/O tests run instead of skipping where /tmp is a tmpfs. Searched once per process,
/// in this order: the tests' build directory, /var/tmp, $TMPDIR, /tmp.

#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

namespace nvmekit_test {

/// The outcome of the search.
struct scratch_directory_search {
    std::string directory;  ///< the first candidate where O_DIRECT works, else the first writable one
    bool direct_io = false; ///< whether O_DIRECT works in `directory`
    std::string report;     ///< every candidate tried, and why O_DIRECT did not work there
};

namespace detail {

inline std::string errno_text(const char* what)
{
    return std::string{what} + ": " + std::generic_category().message(errno);
}

/// Empty when a file can be created in `directory` and an aligned 4 KiB O_DIRECT write and read
/// of it work; else why not. `writable` says whether the file could be created at all.
inline std::string direct_io_failure(const std::string& directory, bool& writable)
{
    std::string name = directory + "/nvmekit_direct_probe_XXXXXX";
    const int fd = ::mkstemp(name.data());
    writable = fd >= 0;
    if (!writable) {
        return errno_text("cannot create a file");
    }
    ::close(fd);
    std::string failure;
    const int direct = ::open(name.c_str(), O_RDWR | O_DIRECT);
    if (direct < 0) {
        failure = errno_text("open with O_DIRECT");
    } else {
        constexpr std::size_t block = 4096;
        const std::unique_ptr<void, decltype(&std::free)> buffer{std::aligned_alloc(block, block),
                                                                 &std::free};
        std::memset(buffer.get(), 0x5a, block);
        const ssize_t written = ::pwrite(direct, buffer.get(), block, 0);
        if (written != static_cast<ssize_t>(block)) {
            failure = written < 0 ? errno_text("4 KiB O_DIRECT write") : "short 4 KiB O_DIRECT write";
        } else if (const ssize_t read = ::pread(direct, buffer.get(), block, 0);
                   read != static_cast<ssize_t>(block)) {
            failure = read < 0 ? errno_text("4 KiB O_DIRECT read") : "short 4 KiB O_DIRECT read";
        }
        ::close(direct);
    }
    ::unlink(name.c_str());
    return failure;
}

} // namespace detail

/// The directory for temporary files (see the file comment); the search runs on the first call.
inline const scratch_directory_search& scratch_directory()
{
    static const scratch_directory_search found = [] {
        std::vector<std::string> candidates;
#ifdef NVMEKIT_TEST_BINARY_DIR
        candidates.emplace_back(NVMEKIT_TEST_BINARY_DIR);
#endif
        candidates.emplace_back("/var/tmp");
        if (const char* tmpdir = std::getenv("TMPDIR"); tmpdir != nullptr && *tmpdir != '\0') {
            candidates.emplace_back(tmpdir);
        }
        candidates.emplace_back("/tmp");
        scratch_directory_search search;
        for (const auto& candidate : candidates) {
            bool writable = false;
            const std::string failure = detail::direct_io_failure(candidate, writable);
            if (failure.empty()) {
                search.directory = candidate;
                search.direct_io = true;
                return search;
            }
            search.report += (search.report.empty() ? "" : "; ") + candidate + ": " + failure;
            if (writable && search.directory.empty()) {
                search.directory = candidate;
            }
        }
        if (search.directory.empty()) {
            search.directory = "/tmp";
        }
        return search;
    }();
    return found;
}

/// Why the direct-I/O tests skip: O_DIRECT works in none of the candidate directories.
inline std::string no_direct_io_reason()
{
    return "O_DIRECT works in no candidate directory (" + scratch_directory().report + ")";
}

/// Creates an empty file <scratch directory>/<prefix>_XXXXXX and returns its path; throws when it
/// cannot.
inline std::string make_temporary_file(const std::string& prefix)
{
    std::string name = scratch_directory().directory + "/" + prefix + "_XXXXXX";
    const int fd = ::mkstemp(name.data());
    if (fd < 0) {
        throw std::system_error(errno, std::generic_category(), "cannot create " + name);
    }
    ::close(fd);
    return name;
}

} // namespace nvmekit_test
