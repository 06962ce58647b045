/// The old path of <nvmekit/state/host_mistakes.hpp>, which it includes: code that includes this path
/// keeps compiling for one release.
#pragma once

#include <nvmekit/state/host_mistakes.hpp>
