/// The old path of <nvmekit/contracts/handler_context.hpp>, which it includes: code that includes this path
/// keeps compiling for one release.
#pragma once

#include <nvmekit/contracts/handler_context.hpp>
