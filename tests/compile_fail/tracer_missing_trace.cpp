// Must not compile: a tracer without trace() is rejected where it enters the library, with the
// readable Tracer diagnostic naming the missing operation.

#include <nvmekit/contracts/tracer.hpp>

struct silent_tracer {
    void log(int) {}
};

static_assert(nvmekit::check_tracer<silent_tracer>());
