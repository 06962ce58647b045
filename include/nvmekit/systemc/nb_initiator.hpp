#pragma once
/// nb_initiator: host memory accesses through the TLM-2.0 non-blocking transport interface, the
/// approximately-timed (AT) base protocol, for nvme_device's DMA socket.
///
/// `submit(request)` sends a dma_request as a transaction that completes later: it begins with
/// BEGIN_REQ on nb_transport_fw, and the request counts as done when BEGIN_RESP arrives; the
/// initiator then ends the response with END_RESP. Every phase the target announces, on the
/// backward path or in the value an nb_transport_fw call returns, goes through a payload event
/// queue (tlm_utils::peq_with_cb_and_phase), so it takes effect at its annotated time. The base
/// protocol's rules hold:
///
/// - request exclusion: one transaction at a time is between BEGIN_REQ and END_REQ (a BEGIN_RESP
///   ends the request phase too); the others wait, in submission order;
/// - every transaction ends by END_RESP sent by the initiator, or by TLM_COMPLETED from the
///   target, which the initiator accepts on BEGIN_REQ and on END_RESP;
/// - payloads have a memory manager (a pool here) and are reused once released.
///
/// A request is complete when its response has begun; `poll()` (the AsyncDmaProvider's) then
/// calls its `complete`, with errc::dma_fault when the target's response status is an error.
/// `responded()` is notified when a response begins, so the process that polls the controller
/// can run at that time. Posted writes (`post_write`, MSI-X messages) take the same path and
/// complete silently; failed ones are counted.
///
/// Teardown: `abandon()` ends the protocol for an initiator whose simulation will not run again
/// (it stopped with transactions in flight): every request in flight or waiting to begin completes
/// in the next poll() with errc::dma_fault, posted writes in flight are dropped (counted as
/// failed), and what is submitted afterwards fails the same way without a transaction. The
/// payloads the targets may still hold stay this initiator's, freed with it; phases that would
/// still arrive for them are ignored.
///
/// Every call comes from the simulation's single thread (any process, or between sc_start calls);
/// nothing is locked.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <span>
#include <system_error>
#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/peq_with_cb_and_phase.h>

#include <nvmekit/config.hpp>
#include <nvmekit/contracts/async_dma.hpp>
#include <nvmekit/error.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace systemc {

/// Makes `payload` a plain access of `length` bytes at `address` (no byte enables, no streaming,
/// no DMI), its response not yet given: how the device's DMA and MSI-X transactions start.
inline void prepare_payload(tlm::tlm_generic_payload& payload, tlm::tlm_command command,
                            std::uint64_t address, unsigned char* data, std::size_t length)
{
    payload.set_command(command);
    payload.set_address(address);
    payload.set_data_ptr(data);
    payload.set_data_length(static_cast<unsigned>(length));
    payload.set_streaming_width(static_cast<unsigned>(length));
    payload.set_byte_enable_ptr(nullptr);
    payload.set_dmi_allowed(false);
    payload.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
}

/// Sends dma_requests and posted writes as AT transactions (see the top of this header).
class nb_initiator : private tlm::tlm_mm_interface {
public:
    /// Sends through `socket`, whose backward path must reach `backward()`.
    explicit nb_initiator(tlm::tlm_initiator_socket<>& socket)
        : socket_{socket}, events_{"nb_initiator_events", this, &nb_initiator::phase_due}
    {}
    nb_initiator(const nb_initiator&) = delete;
    nb_initiator& operator=(const nb_initiator&) = delete;
    ~nb_initiator() override = default;

    /// Starts `request`: BEGIN_REQ now (after `delay`), or once the transaction in its request
    /// phase has ended it. A zero-length request, or one whose range wraps, completes in the next
    /// poll() without a transaction.
    void submit(dma_request& request, const sc_core::sc_time& delay = sc_core::SC_ZERO_TIME)
    {
        transaction& sent = take();
        sent.request = &request;
        ++outstanding_;
        if (abandoned_) {
            sent.result = make_error_code(errc::dma_fault);
            finished(sent);
            return;
        }
        if (request.buffer.empty() || request.address + request.buffer.size() < request.address) {
            sent.result =
                request.buffer.empty() ? std::error_code{} : make_error_code(errc::dma_out_of_range);
            finished(sent);
            return;
        }
        const bool read = request.operation == dma_operation::read;
        prepare_payload(sent, read ? tlm::TLM_READ_COMMAND : tlm::TLM_WRITE_COMMAND, request.address,
                        reinterpret_cast<unsigned char*>(request.buffer.data()), request.buffer.size());
        begin(sent, delay);
    }

    /// A write of up to 8 bytes nobody waits for (an MSI-X message): the bytes are copied, and a
    /// failure is only counted (failed_posted_writes()).
    void post_write(std::uint64_t address, std::span<const unsigned char> bytes,
                    const sc_core::sc_time& delay = sc_core::SC_ZERO_TIME)
    {
        NVMEKIT_ASSERT(bytes.size() <= transaction::posted_capacity, "posted writes carry up to 8 bytes");
        if (abandoned_) {
            ++failed_posted_writes_;
            return;
        }
        transaction& sent = take();
        std::copy(bytes.begin(), bytes.end(), sent.posted.begin());
        prepare_payload(sent, tlm::TLM_WRITE_COMMAND, address, sent.posted.data(), bytes.size());
        begin(sent, delay);
    }

    /// Calls `complete` on every request whose response has begun, in the order the responses
    /// began; returns how many. A callback may submit again: what it submits completes later.
    std::size_t poll()
    {
        std::size_t completed = 0;
        for (std::size_t ready = ready_.size() - ready_taken_; ready != 0; --ready) {
            transaction* done = ready_[ready_taken_++];
            dma_request& request = *done->request;
            const std::error_code result = done->result;
            done->release(); // back to the pool before the callback, which may take it again
            --outstanding_;
            ++completed;
            detail::complete_dma_request(request, result);
        }
        if (ready_taken_ == ready_.size()) {
            ready_.clear();
            ready_taken_ = 0;
        }
        return completed;
    }

    /// Ends the protocol for teardown (see the top of this header): the requests in flight or
    /// waiting complete in the next poll() with errc::dma_fault, the posted writes are dropped.
    void abandon()
    {
        abandoned_ = true;
        for (transaction& sent : pool_) {
            if (!sent.active) {
                continue;
            }
            sent.active = false;
            --in_flight_;
            if (sent.request == nullptr) {
                ++failed_posted_writes_;
                continue; // no longer this initiator's to release: a target may hold it
            }
            sent.result = make_error_code(errc::dma_fault);
            ready_.push_back(&sent);
        }
        waiting_.clear();
        waiting_taken_ = 0;
        requesting_ = nullptr;
    }
    /// True once abandon() was called.
    [[nodiscard]] bool abandoned() const noexcept { return abandoned_; }

    /// Requests submitted whose `complete` has not run.
    [[nodiscard]] std::size_t outstanding() const noexcept { return outstanding_; }
    /// Requests and posted writes whose transaction has not ended.
    [[nodiscard]] std::size_t in_flight() const noexcept { return in_flight_; }
    /// Notified at the time a response begins (a request can then be completed by poll()).
    [[nodiscard]] const sc_core::sc_event& responded() const noexcept { return responded_; }
    /// Transactions begun so far.
    [[nodiscard]] std::uint64_t transactions() const noexcept { return transactions_; }
    /// Posted writes the target answered with an error response.
    [[nodiscard]] std::uint64_t failed_posted_writes() const noexcept { return failed_posted_writes_; }

    /// The socket's nb_transport_bw: END_REQ and BEGIN_RESP are taken at their annotated time.
    tlm::tlm_sync_enum backward(tlm::tlm_generic_payload& payload, tlm::tlm_phase& phase,
                                sc_core::sc_time& delay)
    {
        NVMEKIT_ASSERT(phase == tlm::END_REQ || phase == tlm::BEGIN_RESP,
                       "nb_initiator: a target may send only END_REQ and BEGIN_RESP backwards");
        if (abandoned_) {
            return tlm::TLM_COMPLETED; // nothing is waited for any more
        }
        events_.notify(payload, phase, delay);
        return tlm::TLM_ACCEPTED;
    }

private:
    /// A payload of the pool with what the initiator keeps about it.
    struct transaction : tlm::tlm_generic_payload {
        static constexpr std::size_t posted_capacity = 8;
        explicit transaction(tlm::tlm_mm_interface* pool) : tlm::tlm_generic_payload{pool} {}
        dma_request* request = nullptr; ///< null for a posted write
        std::error_code result;
        sc_core::sc_time not_before; ///< when BEGIN_REQ may be sent, for one that waits
        bool active = false;         ///< begun, its response not yet begun
        std::array<unsigned char, posted_capacity> posted{};
    };

    transaction& take()
    {
        transaction* taken = nullptr;
        if (free_.empty()) {
            pool_.emplace_back(static_cast<tlm::tlm_mm_interface*>(this));
            taken = &pool_.back();
        } else {
            taken = free_.back();
            free_.pop_back();
        }
        taken->acquire();
        taken->request = nullptr;
        taken->result.clear();
        return *taken;
    }

    /// tlm_mm_interface: the last reference to a payload was released.
    void free(tlm::tlm_generic_payload* payload) override
    {
        payload->reset();
        free_.push_back(static_cast<transaction*>(payload));
    }

    /// Sends BEGIN_REQ, or queues the transaction behind the one in its request phase.
    void begin(transaction& sent, const sc_core::sc_time& delay)
    {
        ++in_flight_;
        sent.active = true;
        sent.not_before = sc_core::sc_time_stamp() + delay;
        if (requesting_ != nullptr || waiting_taken_ != waiting_.size()) {
            waiting_.push_back(&sent);
            return;
        }
        send_request(sent, delay);
    }

    void send_request(transaction& sent, sc_core::sc_time delay)
    {
        requesting_ = &sent;
        ++transactions_;
        tlm::tlm_phase phase = tlm::BEGIN_REQ;
        switch (socket_->nb_transport_fw(sent, phase, delay)) {
        case tlm::TLM_ACCEPTED: return; // END_REQ or BEGIN_RESP come backwards
        case tlm::TLM_UPDATED: events_.notify(sent, phase, delay); return;
        // The target completed it: recorded as END_RESP, after which nothing more is sent.
        case tlm::TLM_COMPLETED: events_.notify(sent, tlm::END_RESP, delay); return;
        }
    }

    /// The request phase of `sent` is over: the next waiting transaction may begin.
    void end_request(const transaction& sent)
    {
        if (requesting_ != &sent) {
            return;
        }
        requesting_ = nullptr;
        if (waiting_taken_ == waiting_.size()) {
            return;
        }
        transaction& next = *waiting_[waiting_taken_++];
        if (waiting_taken_ == waiting_.size()) {
            waiting_.clear();
            waiting_taken_ = 0;
        }
        const sc_core::sc_time& now = sc_core::sc_time_stamp();
        send_request(next, next.not_before > now ? next.not_before - now : sc_core::SC_ZERO_TIME);
    }

    /// A phase taken at its time (the payload event queue's callback).
    void phase_due(tlm::tlm_generic_payload& payload, const tlm::tlm_phase& phase)
    {
        auto& sent = static_cast<transaction&>(payload);
        if (abandoned_) {
            return; // abandon() settled it
        }
        if (phase == tlm::END_REQ) {
            end_request(sent);
            return;
        }
        end_request(sent); // BEGIN_RESP and completion end the request phase too
        if (phase == tlm::BEGIN_RESP) {
            tlm::tlm_phase end = tlm::END_RESP;
            sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
            static_cast<void>(socket_->nb_transport_fw(sent, end, delay)); // the transaction ends either way
        }
        responded(sent);
    }

    /// The response of `sent` has begun (or the target completed it): a request becomes ready for
    /// poll(), a posted write goes back to the pool.
    void responded(transaction& sent)
    {
        --in_flight_;
        sent.active = false;
        const bool ok = sent.is_response_ok();
        if (sent.request == nullptr) {
            failed_posted_writes_ += ok ? 0U : 1U;
            sent.release();
            return;
        }
        sent.result = ok ? std::error_code{} : make_error_code(errc::dma_fault);
        finished(sent);
    }

    void finished(transaction& sent)
    {
        ready_.push_back(&sent);
        if (!abandoned_) {
            responded_.notify(sc_core::SC_ZERO_TIME);
        }
    }

    tlm::tlm_initiator_socket<>& socket_;
    tlm_utils::peq_with_cb_and_phase<nb_initiator> events_;
    sc_core::sc_event responded_;
    std::deque<transaction> pool_; ///< stable addresses; grows to the most transactions at once
    std::vector<transaction*> free_;
    std::vector<transaction*> waiting_; ///< waiting for BEGIN_REQ, from waiting_taken_ on
    std::size_t waiting_taken_ = 0;
    std::vector<transaction*> ready_; ///< responses begun, from ready_taken_ on
    std::size_t ready_taken_ = 0;
    transaction* requesting_ = nullptr; ///< between BEGIN_REQ and END_REQ
    std::size_t outstanding_ = 0;
    std::size_t in_flight_ = 0;
    std::uint64_t transactions_ = 0;
    std::uint64_t failed_posted_writes_ = 0;
    bool abandoned_ = false;
};

} // namespace systemc
NVMEKIT_END_NAMESPACE
