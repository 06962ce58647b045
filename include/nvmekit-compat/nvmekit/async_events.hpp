/// The old path of <nvmekit/state/async_events.hpp>, which it includes: code that includes this path
/// keeps compiling for one release.
#pragma once

#include <nvmekit/state/async_events.hpp>
