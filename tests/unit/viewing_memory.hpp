#pragma once
/// Helper of the ring tests: a StableMappingDmaProvider over a flat_memory that counts its maps,
/// reads and writes, whose mapping generation the test changes, and which can refuse to map.

#include <cstddef>
#include <cstdint>
#include <span>
#include <system_error>

#include <nvmekit/contracts/dma.hpp>
#include <nvmekit/testing/flat_memory.hpp>

namespace nvmekit_test {

struct viewing_memory {
    nvmekit::testing::flat_memory memory;
    std::uint64_t generation = 0;
    bool refuse_maps = false;
    int maps = 0;
    int reads = 0;
    int writes = 0;

    std::error_code read(std::uint64_t address, std::span<std::byte> destination)
    {
        ++reads;
        return memory.read(address, destination);
    }
    std::error_code write(std::uint64_t address, std::span<const std::byte> source)
    {
        ++writes;
        return memory.write(address, source);
    }
    std::span<std::byte> map(std::uint64_t address, std::size_t length)
    {
        ++maps;
        return refuse_maps ? std::span<std::byte>{} : memory.map(address, length);
    }
    [[nodiscard]] std::uint64_t mapping_generation() const noexcept { return generation; }
};
static_assert(nvmekit::StableMappingDmaProvider<viewing_memory>);

} // namespace nvmekit_test
