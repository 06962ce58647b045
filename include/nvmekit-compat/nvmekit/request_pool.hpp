/// The old path of <nvmekit/queues/request_pool.hpp>, which it includes: code that includes this path
/// keeps compiling for one release.
#pragma once

#include <nvmekit/queues/request_pool.hpp>
