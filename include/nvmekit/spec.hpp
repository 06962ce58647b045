#pragma once
/// The whole NVMe spec layer: data structures only, no {fmt}.

#include <nvmekit/spec/bits.hpp>
#include <nvmekit/spec/commands.hpp>
#include <nvmekit/spec/data_pointer.hpp>
#include <nvmekit/spec/fabrics.hpp>
#include <nvmekit/spec/features.hpp>
#include <nvmekit/spec/identify.hpp>
#include <nvmekit/spec/log_pages.hpp>
#include <nvmekit/spec/opcodes.hpp>
#include <nvmekit/spec/queue_entries.hpp>
#include <nvmekit/spec/registers.hpp>
#include <nvmekit/spec/status.hpp>
#include <nvmekit/spec/tcp.hpp>
#include <nvmekit/spec/text.hpp>
