/// The old path of <nvmekit/core/controller_config.hpp>, which it includes: code that includes this path
/// keeps compiling for one release.
#pragma once

#include <nvmekit/core/controller_config.hpp>
