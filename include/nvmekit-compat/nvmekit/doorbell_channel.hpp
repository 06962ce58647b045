/// The old path of <nvmekit/pci/doorbell_channel.hpp>, which it includes: code that includes this path
/// keeps compiling for one release.
#pragma once

#include <nvmekit/pci/doorbell_channel.hpp>
