/// The old path of <nvmekit/state/health_log.hpp>, which it includes: code that includes this path
/// keeps compiling for one release.
#pragma once

#include <nvmekit/state/health_log.hpp>
