/// The old path of <nvmekit/contracts/interrupts.hpp>, which it includes: code that includes this path
/// keeps compiling for one release.
#pragma once

#include <nvmekit/contracts/interrupts.hpp>
