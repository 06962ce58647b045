/// The old path of <nvmekit/state/log_page.hpp>, which it includes: code that includes this path
/// keeps compiling for one release.
#pragma once

#include <nvmekit/state/log_page.hpp>
