#pragma once
/// A controller's attached namespaces by NSID, so that an I/O command finds its namespace in
/// O(1): the subsystem owns the namespaces, and the controller keeps this table in step with the
/// subsystem's attach and detach notifications. Entries are atomic pointers, so poll groups on
/// other threads see a change at their next command.
///
///     namespace_table<my_namespace> table{max_namespaces + 1};
///     table.set(1, &ns);                 // attached
///     my_namespace* ns = table.find(1);  // null: not attached, or NSID out of range

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include <nvmekit/config.hpp>

NVMEKIT_BEGIN_NAMESPACE

template <typename Namespace>
class namespace_table {
public:
    /// NSIDs 0 to `slots - 1`, none attached (NSID 0 never is).
    explicit namespace_table(std::size_t slots = 0)
        : slots_{slots}, entries_{std::make_unique<std::atomic<Namespace*>[]>(slots)}
    {
        for (std::size_t nsid = 0; nsid < slots_; ++nsid) {
            entries_[nsid].store(nullptr, std::memory_order_relaxed);
        }
    }

    /// The namespace attached as `nsid`, or null.
    [[nodiscard]] NVMEKIT_HOT_INLINE Namespace* find(std::uint32_t nsid) const noexcept
    {
        return nsid < slots_ ? entries_[nsid].load(std::memory_order_acquire) : nullptr;
    }

    /// `ns` is attached as `nsid` from now on (null: detached); an NSID out of range is ignored,
    /// and NSID 0 names no namespace.
    void set(std::uint32_t nsid, Namespace* ns) noexcept
    {
        if (nsid != 0 && nsid < slots_) {
            entries_[nsid].store(ns, std::memory_order_release);
        }
    }

    [[nodiscard]] std::size_t slots() const noexcept { return slots_; }

private:
    std::size_t slots_;
    std::unique_ptr<std::atomic<Namespace*>[]> entries_;
};

NVMEKIT_END_NAMESPACE
