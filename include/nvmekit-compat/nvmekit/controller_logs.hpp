/// The old path of <nvmekit/state/controller_logs.hpp>, which it includes: code that includes this path
/// keeps compiling for one release.
#pragma once

#include <nvmekit/state/controller_logs.hpp>
