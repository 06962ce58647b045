// A program that uses nvmekit's io_uring backend (nvmekit::uring) as an installed package: a
// write and a read of a temporary file, each completing in a later poll().
#include <nvmekit/backends/uring_backend.hpp>

#include <array>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <unistd.h>

int main()
{
    char path[] = "/tmp/nvmekit-uring-consumer-XXXXXX";
    const int fd = ::mkstemp(path);
    if (fd < 0) {
        std::perror("mkstemp");
        return 1;
    }
    ::close(fd);
    int failures = 0;
    {
        nvmekit::uring_backend backend{path, {.file = {.create_size = 4096}}};
        std::array<std::byte, 512> bytes{};
        bytes.fill(std::byte{0x5a});
        const std::array segments{nvmekit::io_segment{bytes.data(), bytes.size()}};
        for (const auto operation : {nvmekit::block_operation::write, nvmekit::block_operation::read}) {
            bool done = false;
            nvmekit::block_request request{
                .operation = operation,
                .offset = 512,
                .length = bytes.size(),
                .segments = segments,
                .complete =
                    [](nvmekit::block_request& finished, nvmekit::block_status status) {
                        *static_cast<bool*>(finished.context) = status == nvmekit::block_status::success;
                    },
                .context = &done};
            backend.submit(request);
            for (int polls = 0; backend.outstanding() != 0 && polls < 10'000'000; ++polls) {
                backend.poll();
            }
            failures += done ? 0 : 1;
            bytes.fill(std::byte{0});
        }
    }
    ::unlink(path);
    std::printf("uring_consumer: %s\n", failures == 0 ? "write and read completed" : "failed");
    return failures == 0 ? 0 : 1;
}
