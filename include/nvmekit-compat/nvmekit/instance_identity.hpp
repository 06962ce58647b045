/// The old path of <nvmekit/storage/instance_identity.hpp>, which it includes: code that includes this path
/// keeps compiling for one release.
#pragma once

#include <nvmekit/storage/instance_identity.hpp>
