/// The old path of <nvmekit/core/queue_state.hpp>, which it includes: code that includes this path
/// keeps compiling for one release.
#pragma once

#include <nvmekit/core/queue_state.hpp>
