#pragma once
/// simple_model: a TimingModel of a device as N identical servers with fixed latencies.
///
///     nvmekit::timing::simple_model model{{.read_latency = 80us,
///                                          .write_latency = 20us,
///                                          .transfer_bytes_per_second = 2'000'000'000,
///                                          .parallelism = 32}};
///     const auto done = model.complete_at(request, now);
///
/// A request occupies one of `parallelism` servers for its service time: the fixed latency of its
/// operation (read, write, flush, or `other_latency` for Write Zeroes and Deallocate) plus, for a
/// read or a write, `length` bytes at `transfer_bytes_per_second` (rounded up to a nanosecond;
/// 0 means no transfer time). It starts on the server that frees first (the lowest-numbered one
/// on a tie), at `now` or when that server frees, whichever is later, and completes when its
/// service time has passed. Requests are served in the order complete_at() is called.
///
/// What it does not model: where the bytes are (every offset costs the same), caches, a flush
/// waiting for earlier writes (it is one more request), queueing by priority, or any variation
/// between identical requests. It reads no clock and allocates only at construction.

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include <nvmekit/config.hpp>
#include <nvmekit/contracts/block_backend.hpp>
#include <nvmekit/timing/timing_model.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace timing {

/// The parameters of a simple_model.
struct simple_parameters {
    std::chrono::nanoseconds read_latency{0};  ///< fixed part of a read
    std::chrono::nanoseconds write_latency{0}; ///< fixed part of a write
    std::chrono::nanoseconds flush_latency{0}; ///< a flush
    std::chrono::nanoseconds other_latency{0}; ///< Write Zeroes and Deallocate
    /// Transfer rate of a read's or write's data; 0: data costs no time.
    std::uint64_t transfer_bytes_per_second = 0;
    /// Requests served at once (internal parallelism); at least 1.
    std::size_t parallelism = 1;
};

/// N servers with fixed latencies (see the top of this header).
class simple_model {
public:
    /// Throws std::invalid_argument when `parallelism` is 0 or a latency is negative.
    explicit simple_model(simple_parameters parameters) : parameters_{parameters}
    {
        if (parameters.parallelism == 0) {
            throw std::invalid_argument("simple_model: parallelism must be at least 1");
        }
        for (const auto latency : {parameters.read_latency, parameters.write_latency,
                                   parameters.flush_latency, parameters.other_latency}) {
            if (latency < std::chrono::nanoseconds::zero()) {
                throw std::invalid_argument("simple_model: latencies cannot be negative");
            }
        }
        server_free_at_.assign(parameters.parallelism, std::chrono::nanoseconds::zero());
    }

    /// Books `request` on the server that frees first and returns when it completes.
    [[nodiscard]] std::chrono::nanoseconds complete_at(const timing_request& request,
                                                       std::chrono::nanoseconds now)
    {
        latest_now_ = std::max(latest_now_, now);
        const auto server = std::min_element(server_free_at_.begin(), server_free_at_.end());
        const std::chrono::nanoseconds start = std::max(latest_now_, *server);
        *server = start + service_time(request);
        return *server;
    }

    /// The time `request` occupies a server.
    [[nodiscard]] std::chrono::nanoseconds service_time(const timing_request& request) const noexcept
    {
        switch (request.operation) {
        case block_operation::read:
            return parameters_.read_latency +
                   transfer_time(request.length, parameters_.transfer_bytes_per_second);
        case block_operation::write:
            return parameters_.write_latency +
                   transfer_time(request.length, parameters_.transfer_bytes_per_second);
        case block_operation::flush: return parameters_.flush_latency;
        case block_operation::write_zeroes:
        case block_operation::deallocate: break;
        }
        return parameters_.other_latency;
    }

    /// The parameters given at construction.
    [[nodiscard]] const simple_parameters& parameters() const noexcept { return parameters_; }

private:
    simple_parameters parameters_;
    std::vector<std::chrono::nanoseconds> server_free_at_;
    std::chrono::nanoseconds latest_now_{0};
};

static_assert(check_timing_model<simple_model>());

} // namespace timing
NVMEKIT_END_NAMESPACE
