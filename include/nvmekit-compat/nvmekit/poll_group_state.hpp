/// The old path of <nvmekit/runtime/poll_group_state.hpp>, which it includes: code that includes this path
/// keeps compiling for one release.
#pragma once

#include <nvmekit/runtime/poll_group_state.hpp>
