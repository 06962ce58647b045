// Must not compile: a timing model without complete_at() is rejected where it enters
// timed_backend, with the readable TimingModel diagnostic naming the missing operation.

#include <nvmekit/backends/ram_backend.hpp>
#include <nvmekit/backends/timed_backend.hpp>
#include <nvmekit/testing/manual_clock.hpp>

struct latency_table {
    std::chrono::nanoseconds latency(const nvmekit::timing::timing_request&) { return {}; }
};

template class nvmekit::timed_backend<nvmekit::ram_backend, latency_table, nvmekit::testing::manual_clock>;
