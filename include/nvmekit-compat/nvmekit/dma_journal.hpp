/// The old path of <nvmekit/core/dma_journal.hpp>, which it includes: code that includes this path
/// keeps compiling for one release.
#pragma once

#include <nvmekit/core/dma_journal.hpp>
