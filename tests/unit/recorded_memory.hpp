#pragma once
/// Helper of the unit tests that drive a component over DMA: host memory (a flat_memory) reached
/// through a recording_dma, so that a test can check every access the component made and fail
/// the ones it chooses, and the accesses as values gtest compares and prints.
///
///     nvmekit_test::recorded_memory host{0x1'0000'0000, 0x10000};
///     host.memory.store(address, entry);          // setup: not recorded
///     host.dma.fail_nth(1, access_kind::write);   // the next write fails
///     component.post(host.dma, ...);              // recorded
///     EXPECT_EQ(recorded(host.dma), (std::vector{write_at(address, 16, dma_fault)}));

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <system_error>
#include <vector>

#include <nvmekit/error.hpp>
#include <nvmekit/testing/flat_memory.hpp>
#include <nvmekit/testing/recording_dma.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace testing {
/// Failures print an access as `read 0x10000+0x18: Success`.
inline void PrintTo(const dma_access& access, std::ostream* out)
{
    const char* kind = access.kind == access_kind::read    ? "read"
                       : access.kind == access_kind::write ? "write"
                       : access.kind == access_kind::map   ? "map"
                                                           : "?";
    *out << kind << std::hex << " 0x" << access.address << "+0x" << access.length << std::dec << ": "
         << access.result.message();
}
} // namespace testing
NVMEKIT_END_NAMESPACE

namespace nvmekit_test {

/// `size` bytes of zero-filled host memory at `base`, and the recording_dma the component under
/// test reaches them through. Not copyable: `dma` refers to `memory`.
struct recorded_memory {
    recorded_memory(std::uint64_t base, std::size_t size) { memory.add_range(base, size); }
    recorded_memory(const recorded_memory&) = delete;
    recorded_memory& operator=(const recorded_memory&) = delete;

    nvmekit::testing::flat_memory memory;
    nvmekit::testing::recording_dma<nvmekit::testing::flat_memory> dma{memory};
};

inline const std::error_code dma_fault = make_error_code(nvmekit::errc::dma_fault);
inline const std::error_code dma_unmapped = make_error_code(nvmekit::errc::dma_unmapped);

/// Every access `dma` recorded since construction or its last clear(), oldest first.
template <class Inner>
std::vector<nvmekit::testing::dma_access> recorded(const nvmekit::testing::recording_dma<Inner>& dma)
{
    return {dma.accesses().begin(), dma.accesses().end()};
}

/// A read of `length` bytes at `address` as recording_dma records it, with its outcome.
inline nvmekit::testing::dma_access read_at(std::uint64_t address, std::uint64_t length,
                                            std::error_code result = {})
{
    return {nvmekit::testing::access_kind::read, address, length, result};
}

/// A write of `length` bytes at `address` as recording_dma records it, with its outcome.
inline nvmekit::testing::dma_access write_at(std::uint64_t address, std::uint64_t length,
                                             std::error_code result = {})
{
    return {nvmekit::testing::access_kind::write, address, length, result};
}

} // namespace nvmekit_test
