/// The old path of <nvmekit/state/register_file.hpp>, which it includes: code that includes this path
/// keeps compiling for one release.
#pragma once

#include <nvmekit/state/register_file.hpp>
