/// The old path of <nvmekit/storage/nvm_namespace.hpp>, which it includes: code that includes this path
/// keeps compiling for one release.
#pragma once

#include <nvmekit/storage/nvm_namespace.hpp>
