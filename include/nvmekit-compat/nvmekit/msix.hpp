/// The old path of <nvmekit/pci/msix.hpp>, which it includes: code that includes this path
/// keeps compiling for one release.
#pragma once

#include <nvmekit/pci/msix.hpp>
