#pragma once
/// Which command slots of one NVMe/TCP queue-pair connection are free, and which slot holds the
/// command of a given CID: the target takes a slot for each capsule, refuses a CID already in
/// flight, and finds a command by the CID of its completion, each in constant time whatever the
/// queue's size (a slot per SQ entry, up to 65536).
///
///     command_slots slots{entries};
///     if (slots.find(cid)) { ... }            // Command ID Conflict
///     const auto slot = slots.take(cid);      // nullopt: every slot is in use
///     ...
///     slots.release(*slot);
///
/// The CIDs in flight are kept in an open-addressed table of twice as many buckets as slots,
/// probed linearly; a release shifts the entries after it back, so no tombstone ever slows a
/// lookup. Allocates only in the constructor and reset().

#include <bit>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include <nvmekit/config.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace transport::tcp {

class command_slots {
public:
    /// `entries` slots (at least 1), all free.
    explicit command_slots(std::uint32_t entries = 1) { reset(entries); }

    /// `entries` slots (at least 1), all free again.
    void reset(std::uint32_t entries)
    {
        NVMEKIT_ASSERT(entries >= 1, "command_slots: at least one slot");
        cid_of_.assign(entries, 0);
        in_use_.assign(entries, false);
        free_.resize(entries);
        for (std::uint32_t i = 0; i < entries; ++i) {
            free_[i] = entries - 1 - i; // slot 0 is taken first
        }
        const std::size_t buckets = std::bit_ceil(std::size_t{entries} * 2);
        bucket_bits_ = static_cast<unsigned>(std::countr_zero(buckets));
        buckets_.assign(buckets, no_slot);
    }

    /// The slot holding the command of `cid`, if one does.
    [[nodiscard]] std::optional<std::uint32_t> find(std::uint16_t cid) const noexcept
    {
        for (std::size_t bucket = home(cid);; bucket = next(bucket)) {
            const std::uint32_t slot = buckets_[bucket];
            if (slot == no_slot) {
                return std::nullopt;
            }
            if (cid_of_[slot] == cid) {
                return slot;
            }
        }
    }

    /// A free slot, now holding the command of `cid` (which no slot holds); nullopt when every
    /// slot is in use.
    [[nodiscard]] std::optional<std::uint32_t> take(std::uint16_t cid)
    {
        NVMEKIT_ASSERT(!find(cid), "command_slots::take: the CID is in flight already");
        if (free_.empty()) {
            return std::nullopt;
        }
        const std::uint32_t slot = free_.back();
        free_.pop_back();
        cid_of_[slot] = cid;
        in_use_[slot] = true;
        std::size_t bucket = home(cid);
        while (buckets_[bucket] != no_slot) {
            bucket = next(bucket);
        }
        buckets_[bucket] = slot;
        return slot;
    }

    /// Frees `slot` (in use) and forgets its CID.
    void release(std::uint32_t slot)
    {
        NVMEKIT_ASSERT(slot < in_use_.size() && in_use_[slot], "command_slots::release: slot not in use");
        in_use_[slot] = false;
        free_.push_back(slot);
        std::size_t hole = home(cid_of_[slot]);
        while (buckets_[hole] != slot) {
            hole = next(hole);
        }
        // Backward shift: an entry after the hole moves into it unless its home lies after the
        // hole, so every entry stays reachable from its home without crossing an empty bucket.
        const std::size_t mask = buckets_.size() - 1;
        for (std::size_t bucket = next(hole); buckets_[bucket] != no_slot; bucket = next(bucket)) {
            const std::size_t entry_home = home(cid_of_[buckets_[bucket]]);
            if (((bucket - entry_home) & mask) >= ((bucket - hole) & mask)) {
                buckets_[hole] = buckets_[bucket];
                hole = bucket;
            }
        }
        buckets_[hole] = no_slot;
    }

    [[nodiscard]] bool in_use(std::uint32_t slot) const noexcept { return in_use_[slot]; }
    [[nodiscard]] std::uint32_t size() const noexcept { return static_cast<std::uint32_t>(in_use_.size()); }
    /// Slots in use.
    [[nodiscard]] std::uint32_t used() const noexcept
    {
        return size() - static_cast<std::uint32_t>(free_.size());
    }

private:
    static constexpr std::uint32_t no_slot = 0xffff'ffffU;

    /// Fibonacci hashing: the CIDs a host hands out in sequence (and any generation bits it
    /// keeps above them) spread over the buckets.
    [[nodiscard]] std::size_t home(std::uint16_t cid) const noexcept
    {
        return static_cast<std::size_t>((std::uint32_t{cid} * 0x9e37'79b1U) >> (32U - bucket_bits_));
    }
    [[nodiscard]] std::size_t next(std::size_t bucket) const noexcept
    {
        return (bucket + 1) & (buckets_.size() - 1);
    }

    std::vector<std::uint16_t> cid_of_;
    std::vector<bool> in_use_;
    std::vector<std::uint32_t> free_;
    std::vector<std::uint32_t> buckets_; ///< a slot, or no_slot
    unsigned bucket_bits_ = 1;
};

} // namespace transport::tcp
NVMEKIT_END_NAMESPACE
