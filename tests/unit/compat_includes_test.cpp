// The include paths of the headers that moved from include/nvmekit/ into its layer folders still
// compile: each forwards to its new path (include/nvmekit-compat/). This file includes every one.
#include <nvmekit/admin_context.hpp>
#include <nvmekit/async_dma.hpp>
#include <nvmekit/async_events.hpp>
#include <nvmekit/block_backend.hpp>
#include <nvmekit/clock.hpp>
#include <nvmekit/completion_inbox.hpp>
#include <nvmekit/controller_config.hpp>
#include <nvmekit/controller_enable.hpp>
#include <nvmekit/controller_logs.hpp>
#include <nvmekit/cq_ring.hpp>
#include <nvmekit/dispatcher.hpp>
#include <nvmekit/dma.hpp>
#include <nvmekit/dma_guard.hpp>
#include <nvmekit/dma_journal.hpp>
#include <nvmekit/doorbell_channel.hpp>
#include <nvmekit/due_queue.hpp>
#include <nvmekit/error_log.hpp>
#include <nvmekit/feature_table.hpp>
#include <nvmekit/firmware_slots.hpp>
#include <nvmekit/group_coordination.hpp>
#include <nvmekit/group_processing.hpp>
#include <nvmekit/handler_context.hpp>
#include <nvmekit/health_log.hpp>
#include <nvmekit/host_mistakes.hpp>
#include <nvmekit/host_ranges.hpp>
#include <nvmekit/instance_identity.hpp>
#include <nvmekit/interrupt_coalescing.hpp>
#include <nvmekit/interrupts.hpp>
#include <nvmekit/introspection.hpp>
#include <nvmekit/io_context.hpp>
#include <nvmekit/keep_alive_timer.hpp>
#include <nvmekit/log_page.hpp>
#include <nvmekit/mailbox.hpp>
#include <nvmekit/msix.hpp>
#include <nvmekit/namespace_table.hpp>
#include <nvmekit/nvm_namespace.hpp>
#include <nvmekit/poll_group.hpp>
#include <nvmekit/poll_group_state.hpp>
#include <nvmekit/poll_group_statistics.hpp>
#include <nvmekit/prp_walker.hpp>
#include <nvmekit/queue_memory.hpp>
#include <nvmekit/queue_pair.hpp>
#include <nvmekit/queue_state.hpp>
#include <nvmekit/register_file.hpp>
#include <nvmekit/request_pool.hpp>
#include <nvmekit/reset_state_machine.hpp>
#include <nvmekit/sgl_walker.hpp>
#include <nvmekit/shutdown_flushes.hpp>
#include <nvmekit/sq_ring.hpp>
#include <nvmekit/subsystem.hpp>
#include <nvmekit/telemetry_log.hpp>
#include <nvmekit/threading.hpp>
#include <nvmekit/tracer.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {
namespace compat_includes_test {

namespace fs = std::filesystem;

/// The project's include/ directory, found from this source's own path.
fs::path include_directory()
{
    return fs::path{__FILE__}.parent_path().parent_path().parent_path() / "include";
}

std::vector<std::string> headers_in(const fs::path& directory)
{
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator{directory}) {
        if (entry.is_regular_file() && entry.path().extension() == ".hpp") {
            names.push_back(entry.path().filename().string());
        }
    }
    std::sort(names.begin(), names.end());
    return names;
}

TEST(compat_includes, the_root_holds_at_most_eight_headers_and_no_forwarding_one)
{
    const auto root = headers_in(include_directory() / "nvmekit");
    ASSERT_FALSE(root.empty()) << include_directory();
    std::string names;
    for (const auto& name : root) {
        names += " " + name;
    }
    EXPECT_LE(root.size(), 8U) << names;
    for (const auto& name : headers_in(include_directory() / "nvmekit-compat" / "nvmekit")) {
        EXPECT_FALSE(std::binary_search(root.begin(), root.end(), name))
            << name << " is both a header and a forwarding header";
    }
}

TEST(compat_includes, this_file_includes_every_forwarding_header)
{
    std::ifstream source{__FILE__};
    ASSERT_TRUE(source) << __FILE__;
    const std::string text{std::istreambuf_iterator<char>{source}, std::istreambuf_iterator<char>{}};
    const auto forwarding = headers_in(include_directory() / "nvmekit-compat" / "nvmekit");
    EXPECT_GE(forwarding.size(), 53U);
    for (const auto& name : forwarding) {
        EXPECT_NE(text.find("#include <nvmekit/" + name + ">"), std::string::npos) << name;
    }
}

} // namespace compat_includes_test
} // namespace
