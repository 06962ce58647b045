/// The old path of <nvmekit/storage/namespace_table.hpp>, which it includes: code that includes this path
/// keeps compiling for one release.
#pragma once

#include <nvmekit/storage/namespace_table.hpp>
