/// The old path of <nvmekit/contracts/tracer.hpp>, which it includes: code that includes this path
/// keeps compiling for one release.
#pragma once

#include <nvmekit/contracts/tracer.hpp>
