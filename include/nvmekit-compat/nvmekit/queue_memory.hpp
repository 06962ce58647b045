/// The old path of <nvmekit/queues/queue_memory.hpp>, which it includes: code that includes this path
/// keeps compiling for one release.
#pragma once

#include <nvmekit/queues/queue_memory.hpp>
