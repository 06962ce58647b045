/// The old path of <nvmekit/state/keep_alive_timer.hpp>, which it includes: code that includes this path
/// keeps compiling for one release.
#pragma once

#include <nvmekit/state/keep_alive_timer.hpp>
