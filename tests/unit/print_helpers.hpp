#pragma once
/// GoogleTest printers shared by the tests: statuses print the way nvme-cli does
/// (`Generic/Invalid Field (0x02) [DNR]`), host ranges as `{address, length}` and trace records
/// with their event's name. A test-only
/// header: include it after the header under test.

#include <ostream>

#include <fmt/format.h>

#include <nvmekit/config.hpp>
#include <nvmekit/contracts/tracer.hpp>
#include <nvmekit/data/host_ranges.hpp>
#include <nvmekit/format/status.hpp>

NVMEKIT_BEGIN_NAMESPACE
inline void PrintTo(const host_range& range, std::ostream* out)
{
    *out << fmt::format("{{{:#x}, {:#x}{}}}", range.address, range.length,
                        range.bit_bucket ? ", bit bucket" : "");
}
inline void PrintTo(const trace_record& record, std::ostream* out)
{
    *out << fmt::format("{{{} qid={} cid={} opcode={:#04x} nsid={} status={} value={:#x}}}",
                        name(record.event), record.qid, record.cid, record.opcode, record.nsid, record.status,
                        record.value);
}
namespace spec {
inline void PrintTo(const status& value, std::ostream* out) { *out << fmt::format("{}", value); }
} // namespace spec
NVMEKIT_END_NAMESPACE
