/// The old path of <nvmekit/state/firmware_slots.hpp>, which it includes: code that includes this path
/// keeps compiling for one release.
#pragma once

#include <nvmekit/state/firmware_slots.hpp>
