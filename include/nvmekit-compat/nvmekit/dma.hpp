/// The old path of <nvmekit/contracts/dma.hpp>, which it includes: code that includes this path
/// keeps compiling for one release.
#pragma once

#include <nvmekit/contracts/dma.hpp>
