/// The old path of <nvmekit/state/shutdown_flushes.hpp>, which it includes: code that includes this path
/// keeps compiling for one release.
#pragma once

#include <nvmekit/state/shutdown_flushes.hpp>
