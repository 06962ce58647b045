/// The old path of <nvmekit/runtime/group_coordination.hpp>, which it includes: code that includes this path
/// keeps compiling for one release.
#pragma once

#include <nvmekit/runtime/group_coordination.hpp>
