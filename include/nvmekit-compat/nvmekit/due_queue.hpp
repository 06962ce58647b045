/// The old path of <nvmekit/runtime/due_queue.hpp>, which it includes: code that includes this path
/// keeps compiling for one release.
#pragma once

#include <nvmekit/runtime/due_queue.hpp>
