/// The old path of <nvmekit/state/interrupt_coalescing.hpp>, which it includes: code that includes this path
/// keeps compiling for one release.
#pragma once

#include <nvmekit/state/interrupt_coalescing.hpp>
