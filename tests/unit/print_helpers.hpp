#pragma once
/// GoogleTest printers shared by the tests: statuses print the way nvme-cli does
/// (`Generic/Invalid Field (0x02) [DNR]`) and host ranges as `{address, length}`. A test-only
/// header: include it after the header under test.

#include <ostream>

#include <fmt/format.h>

#include <nvmekit/config.hpp>
#include <nvmekit/format/status.hpp>
#include <nvmekit/host_ranges.hpp>

NVMEKIT_BEGIN_NAMESPACE
inline void PrintTo(const host_range& range, std::ostream* out)
{
    *out << fmt::format("{{{:#x}, {:#x}{}}}", range.address, range.length, range.bit_bucket ? ", bit bucket" : "");
}
namespace spec {
inline void PrintTo(const status& value, std::ostream* out)
{
    *out << fmt::format("{}", value);
}
} // namespace spec
NVMEKIT_END_NAMESPACE
