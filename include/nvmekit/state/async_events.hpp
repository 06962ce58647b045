#pragma once
/// Asynchronous events (Base 2.0 5.2): outstanding Asynchronous Event Request commands on one
/// side, events waiting to be reported on the other; an event completes the oldest request.
///
/// Both sides are bounded: at most AERL + 1 requests are held (the excess completes with
/// Asynchronous Event Request Limit Exceeded, which the caller reports), and the event queue keeps
/// at most `event_capacity` events, dropping an event equal to one already waiting.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>

#include <nvmekit/config.hpp>
#include <nvmekit/spec/log_pages.hpp>

NVMEKIT_BEGIN_NAMESPACE

/// A report pairing a held request (by command identifier) with the event that completes it.
struct async_event_report {
    std::uint16_t command_id{};
    spec::async_event_completion event{};
};

class async_event_queue {
public:
    static constexpr std::size_t max_requests = 16;
    static constexpr std::size_t event_capacity = 16;

    /// `request_limit` is AERL + 1 (1 to max_requests).
    explicit async_event_queue(std::size_t request_limit) : request_limit_{request_limit}
    {
        NVMEKIT_ASSERT(request_limit >= 1 && request_limit <= max_requests, "AERL + 1 out of range");
    }

    /// Holds an Asynchronous Event Request. Returns false when AERL + 1 requests are already
    /// outstanding (the command then completes with Asynchronous Event Request Limit Exceeded).
    [[nodiscard]] bool add_request(std::uint16_t command_id) noexcept
    {
        if (request_count_ == request_limit_) {
            return false;
        }
        requests_[request_count_++] = command_id;
        return true;
    }

    /// Queues an event unless an equal one is already waiting or the queue is full. Returns true
    /// when queued.
    bool post(spec::async_event_completion event) noexcept
    {
        for (std::size_t i = 0; i < event_count_; ++i) {
            if (events_[(event_head_ + i) % event_capacity] == event) {
                return false;
            }
        }
        if (event_count_ == event_capacity) {
            return false;
        }
        events_[(event_head_ + event_count_) % event_capacity] = event;
        ++event_count_;
        return true;
    }

    /// The next (request, event) pair to complete, oldest event first, or nothing when either side
    /// is empty. Events whose type has its bit set in `masked_types` (bit n for event type n) are
    /// skipped and stay queued: a type is masked from its report until the host reads the log page
    /// that acknowledges it (Base 2.0 5.2.2).
    [[nodiscard]] std::optional<async_event_report> next_report(std::uint8_t masked_types = 0) noexcept
    {
        if (request_count_ == 0) {
            return std::nullopt;
        }
        for (std::size_t i = 0; i < event_count_; ++i) {
            const auto event = events_[(event_head_ + i) % event_capacity];
            const auto type = static_cast<unsigned>(event.get(spec::async_event_completion::event_type));
            if ((masked_types & (1U << (type & 7U))) != 0) {
                continue;
            }
            const async_event_report report{requests_[0], event};
            for (std::size_t r = 1; r < request_count_; ++r) {
                requests_[r - 1] = requests_[r];
            }
            --request_count_;
            for (std::size_t j = i; j > 0; --j) { // close the gap, keeping the order of the others
                events_[(event_head_ + j) % event_capacity] = events_[(event_head_ + j - 1) % event_capacity];
            }
            event_head_ = (event_head_ + 1) % event_capacity;
            --event_count_;
            return report;
        }
        return std::nullopt;
    }

    [[nodiscard]] std::size_t outstanding_requests() const noexcept { return request_count_; }
    [[nodiscard]] std::size_t waiting_events() const noexcept { return event_count_; }

    /// Controller reset: outstanding requests are aborted without completion and events dropped.
    void clear() noexcept
    {
        request_count_ = 0;
        event_count_ = 0;
        event_head_ = 0;
    }

private:
    std::size_t request_limit_;
    std::array<std::uint16_t, max_requests> requests_{};
    std::size_t request_count_ = 0;
    std::array<spec::async_event_completion, event_capacity> events_{};
    std::size_t event_head_ = 0;
    std::size_t event_count_ = 0;
};

NVMEKIT_END_NAMESPACE
