/// The old path of <nvmekit/state/feature_table.hpp>, which it includes: code that includes this path
/// keeps compiling for one release.
#pragma once

#include <nvmekit/state/feature_table.hpp>
