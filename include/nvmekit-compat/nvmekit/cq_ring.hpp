/// The old path of <nvmekit/queues/cq_ring.hpp>, which it includes: code that includes this path
/// keeps compiling for one release.
#pragma once

#include <nvmekit/queues/cq_ring.hpp>
