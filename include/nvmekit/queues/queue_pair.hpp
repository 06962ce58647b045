#pragma once
/// A queue pair's controller-side state: an I/O or admin submission queue (its ring, in host
/// memory or held for a message-based transport, the request pool its commands run in, and its deletion
/// state) and a completion queue (its ring, the completions held while it is full, the SQs bound to it). The
/// controller owns one of each per QID; the commands of a queue's pool are the controller's `command` type.

#include <algorithm>
#include <cstdint>
#include <utility>

#include <boost/intrusive/list.hpp>

#include <nvmekit/config.hpp>
#include <nvmekit/queues/cq_ring.hpp>
#include <nvmekit/queues/queue_memory.hpp>
#include <nvmekit/queues/request_pool.hpp>
#include <nvmekit/queues/sq_ring.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace detail {

using list_hook =
    boost::intrusive::list_member_hook<boost::intrusive::link_mode<boost::intrusive::safe_link>>;

template <typename Command>
using held_list =
    boost::intrusive::list<Command, boost::intrusive::member_hook<Command, list_hook, &Command::held_hook>>;

template <typename Command>
using waiting_list =
    boost::intrusive::list<Command, boost::intrusive::member_hook<Command, list_hook, &Command::wait_hook>>;

template <typename Command>
struct submission_queue {
    sq_ring ring;
    request_pool<Command> pool;
    bool retired = false;        ///< deleted while commands were still in a backend
    Command* deleting = nullptr; ///< the Delete I/O SQ command waiting for those commands
    /// The host has written this queue's doorbell register since creating it; until then its
    /// shadow doorbell slot may hold what an earlier queue with this QID left there.
    bool shadow_armed = false;
    /// Asynchronous DMA: entries are being read; the queue is not fetched again, nor freed, meanwhile.
    bool fetch_in_flight = false;
    submission_queue(std::uint16_t qid, std::uint16_t cqid, std::uint32_t entries, std::uint32_t commands,
                     queue_memory memory)
        : ring{qid, cqid, entries, std::move(memory)}, pool{std::min(entries, commands)}
    {}
    /// A message-based queue (sq_ring::message_based).
    submission_queue(std::uint16_t qid, std::uint16_t cqid, std::uint32_t entries, std::uint32_t commands,
                     sq_ring::message_based_t tag)
        : ring{qid, cqid, entries, tag}, pool{std::min(entries, commands)}
    {}
};

template <typename Command>
struct completion_queue {
    cq_ring ring;
    held_list<Command> held{};
    std::uint16_t bound_submission_queues = 0;
    std::uint32_t posted_since_signal = 0; ///< entries posted since interrupts were last considered
    bool shadow_armed = false;             ///< as submission_queue::shadow_armed
    completion_queue(std::uint16_t qid, std::uint32_t entries, queue_memory memory, std::uint16_t vector,
                     bool ien)
        : ring{qid, entries, std::move(memory), vector, ien}
    {}
    /// A message-based queue (cq_ring::message_based).
    completion_queue(std::uint16_t qid, std::uint32_t entries, cq_ring::message_based_t tag)
        : ring{qid, entries, tag}
    {}
};

} // namespace detail
NVMEKIT_END_NAMESPACE
