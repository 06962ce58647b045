/// The old path of <nvmekit/core/io_context.hpp>, which it includes: code that includes this path
/// keeps compiling for one release.
#pragma once

#include <nvmekit/core/io_context.hpp>
