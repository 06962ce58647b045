/// The old path of <nvmekit/state/telemetry_log.hpp>, which it includes: code that includes this path
/// keeps compiling for one release.
#pragma once

#include <nvmekit/state/telemetry_log.hpp>
