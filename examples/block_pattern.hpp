#pragma once
// The data the example workloads write: each block's contents follow from its LBA and how many
// times it was written, so a read is checked without keeping a copy of the data.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

namespace nvmekit_programs {

/// The pattern block `lba` holds after its `generation`th write: the LBA and the generation in
/// the first 16 bytes (to make a misdirected write obvious in a dump), then pseudo-random words.
inline void fill_pattern(std::span<std::byte> block, std::uint64_t lba, std::uint32_t generation)
{
    std::uint64_t state =
        (lba * 0x9e3779b97f4a7c15ULL) ^ (std::uint64_t{generation} << 40) ^ 0x6e766d656b6974ULL;
    for (std::size_t offset = 0; offset < block.size(); offset += sizeof(std::uint64_t)) {
        std::uint64_t word = 0;
        if (offset == 0) {
            word = lba;
        } else if (offset == sizeof(std::uint64_t)) {
            word = generation;
        } else {
            // splitmix64
            state += 0x9e3779b97f4a7c15ULL;
            word = state;
            word = (word ^ (word >> 30)) * 0xbf58476d1ce4e5b9ULL;
            word = (word ^ (word >> 27)) * 0x94d049bb133111ebULL;
            word ^= word >> 31;
        }
        std::memcpy(block.data() + offset, &word, sizeof(word));
    }
}

} // namespace nvmekit_programs
