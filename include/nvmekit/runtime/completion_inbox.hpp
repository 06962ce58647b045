#pragma once
/// completion_inbox: how a backend completion that runs on the wrong thread reaches the context
/// that owns its command. With concurrent poll groups a backend that completes requests from its
/// poll() does so on the thread that polls it, while the command belongs to one poll group; the
/// completion is then handed to that group as a routed_completion and finished by the group at
/// its next poll.
///
///     nvmekit::routed_completion node;             // lives in the request's owner, one per request
///     node.request = &request;
///     node.status = status;
///     node.finish = &finish_on_owner;              // what the owner does with it
///     inbox.push(node);                            // any thread
///     inbox.drain([](nvmekit::routed_completion& n) { n.finish(*n.request, n.status); });  // owner
///
/// The inbox is intrusive and unbounded: a node is part of its request's owner (one per
/// outstanding request), so pushing allocates nothing and can never fail. Producers push with a
/// compare-exchange on the head of a singly linked list (a Treiber stack); the consumer takes the
/// whole list with one exchange and runs it in push order. A node may be pushed again (its request
/// resubmitted and completed again) once the consumer has called `finish` for it.
///
/// Threading: any number of producers concurrently with one consumer; the consumer may move to
/// another thread only through a hand-over that synchronizes. Lock-free: a producer retries only
/// when another producer or the consumer changed the head meanwhile.

#include <atomic>
#include <cstddef>

#include <nvmekit/config.hpp>
#include <nvmekit/contracts/block_backend.hpp>

NVMEKIT_BEGIN_NAMESPACE

/// One completion handed from the thread that ran it to the context that owns the request.
struct routed_completion {
    routed_completion* next = nullptr;
    block_request* request = nullptr;
    block_status status = block_status::success;
    /// Runs on the owner's thread when the inbox is drained.
    void (*finish)(block_request&, block_status) = nullptr;
};

/// See the comment at the top of this header.
class completion_inbox {
public:
    completion_inbox() = default;
    completion_inbox(const completion_inbox&) = delete;
    completion_inbox& operator=(const completion_inbox&) = delete;

    /// Hands `node` to the consumer. Any thread; never blocks, allocates or fails.
    void push(routed_completion& node) noexcept
    {
        routed_completion* head = head_.load(std::memory_order_relaxed);
        do {
            node.next = head;
        } while (
            !head_.compare_exchange_weak(head, &node, std::memory_order_release, std::memory_order_relaxed));
    }

    /// Consumer: takes every node pushed so far and calls `f(node)` on each, in push order (for
    /// one producer thread; pushes from different threads in the order their exchanges landed).
    /// A node pushed while this runs waits for the next drain. Returns how many it took. `f` must
    /// not throw: the nodes after one that threw would be lost.
    template <typename F>
    std::size_t drain(F&& f)
    {
        routed_completion* taken = head_.exchange(nullptr, std::memory_order_acquire);
        if (taken == nullptr) {
            return 0;
        }
        routed_completion* ordered = nullptr; // the stack reversed: oldest first
        std::size_t count = 0;
        while (taken != nullptr) {
            routed_completion* next = taken->next;
            taken->next = ordered;
            ordered = taken;
            taken = next;
            ++count;
        }
        while (ordered != nullptr) {
            routed_completion* next = ordered->next; // `f` may push the node again
            f(*ordered);
            ordered = next;
        }
        return count;
    }

    /// True when nothing is waiting; exact only for the consumer when producers are quiet.
    [[nodiscard]] bool empty_approx() const noexcept
    {
        return head_.load(std::memory_order_relaxed) == nullptr;
    }

private:
    std::atomic<routed_completion*> head_{nullptr};
};

NVMEKIT_END_NAMESPACE
