/// The old path of <nvmekit/queues/sq_ring.hpp>, which it includes: code that includes this path
/// keeps compiling for one release.
#pragma once

#include <nvmekit/queues/sq_ring.hpp>
