/// The old path of <nvmekit/state/reset_state_machine.hpp>, which it includes: code that includes this path
/// keeps compiling for one release.
#pragma once

#include <nvmekit/state/reset_state_machine.hpp>
