/// The old path of <nvmekit/core/dispatcher.hpp>, which it includes: code that includes this path
/// keeps compiling for one release.
#pragma once

#include <nvmekit/core/dispatcher.hpp>
