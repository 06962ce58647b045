/// The old path of <nvmekit/contracts/threading.hpp>, which it includes: code that includes this path
/// keeps compiling for one release.
#pragma once

#include <nvmekit/contracts/threading.hpp>
