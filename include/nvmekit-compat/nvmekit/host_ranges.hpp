/// The old path of <nvmekit/data/host_ranges.hpp>, which it includes: code that includes this path
/// keeps compiling for one release.
#pragma once

#include <nvmekit/data/host_ranges.hpp>
