// Must not compile: a DMA provider with read() but no write() is rejected where it enters the
// library, with the readable DmaProvider diagnostic naming the missing write().

#include <cstddef>
#include <cstdint>
#include <span>
#include <system_error>

#include <nvmekit/contracts/dma.hpp>

struct read_only_dma {
    std::error_code read(std::uint64_t, std::span<std::byte>) { return {}; }
};

static_assert(nvmekit::check_dma_provider<read_only_dma>());
