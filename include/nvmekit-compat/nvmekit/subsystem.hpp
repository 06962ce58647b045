/// The old path of <nvmekit/storage/subsystem.hpp>, which it includes: code that includes this path
/// keeps compiling for one release.
#pragma once

#include <nvmekit/storage/subsystem.hpp>
