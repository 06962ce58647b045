/// The old path of <nvmekit/data/prp_walker.hpp>, which it includes: code that includes this path
/// keeps compiling for one release.
#pragma once

#include <nvmekit/data/prp_walker.hpp>
