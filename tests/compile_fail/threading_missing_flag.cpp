// Must not compile: a threading policy without its compile-time concurrent_groups flag is
// rejected where it enters the library, with the readable ThreadingPolicy diagnostic.

#include <nvmekit/contracts/threading.hpp>

struct unflagged_threading {};

static_assert(nvmekit::check_threading_policy<unflagged_threading>());
