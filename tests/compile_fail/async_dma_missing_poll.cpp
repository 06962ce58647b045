// Must not compile: an asynchronous DMA provider with submit() and outstanding() but no poll()
// could never complete a request late; it is rejected where it enters the library, with the
// readable AsyncDmaProvider diagnostic naming the missing poll().

#include <cstddef>

#include <nvmekit/contracts/async_dma.hpp>

struct unpollable_dma {
    void submit(nvmekit::dma_request&) {}
    std::size_t outstanding() const { return 0; }
};

static_assert(nvmekit::check_async_dma_provider<unpollable_dma>());
