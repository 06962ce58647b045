#pragma once
/// Every spec formatter: `fmt::format("{}", value)` for any type of the spec layer.

#include <nvmekit/format/commands.hpp>
#include <nvmekit/format/data_pointer.hpp>
#include <nvmekit/format/fabrics.hpp>
#include <nvmekit/format/features.hpp>
#include <nvmekit/format/identify.hpp>
#include <nvmekit/format/log_pages.hpp>
#include <nvmekit/format/opcodes.hpp>
#include <nvmekit/format/queue_entries.hpp>
#include <nvmekit/format/registers.hpp>
#include <nvmekit/format/status.hpp>
#include <nvmekit/format/tcp.hpp>
