/// The old path of <nvmekit/contracts/async_dma.hpp>, which it includes: code that includes this path
/// keeps compiling for one release.
#pragma once

#include <nvmekit/contracts/async_dma.hpp>
