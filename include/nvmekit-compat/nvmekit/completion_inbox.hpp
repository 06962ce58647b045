/// The old path of <nvmekit/runtime/completion_inbox.hpp>, which it includes: code that includes this path
/// keeps compiling for one release.
#pragma once

#include <nvmekit/runtime/completion_inbox.hpp>
