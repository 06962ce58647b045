/// The old path of <nvmekit/data/dma_guard.hpp>, which it includes: code that includes this path
/// keeps compiling for one release.
#pragma once

#include <nvmekit/data/dma_guard.hpp>
