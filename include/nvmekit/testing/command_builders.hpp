#pragma once
/// Builders of the submission queue entries the testing hosts send (in_process_host over BAR0 and
/// host memory, loopback_host over message-based queues, tcp_host over NVMe/TCP): the command
/// identifier and the data pointer are left to the host that submits them. Also the CC value
/// hosts enable a controller with.

#include <cstdint>

#include <nvmekit/config.hpp>
#include <nvmekit/spec/commands.hpp>
#include <nvmekit/spec/features.hpp>
#include <nvmekit/spec/identify.hpp>
#include <nvmekit/spec/log_pages.hpp>
#include <nvmekit/spec/opcodes.hpp>
#include <nvmekit/spec/queue_entries.hpp>
#include <nvmekit/spec/registers.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace testing {

/// Static builders; the hosts derive from it, so `host_type::command(...)` names them too.
struct command_builders {
    [[nodiscard]] static spec::submission_queue_entry command(spec::admin_opcode opcode,
                                                              std::uint32_t nsid = 0)
    {
        spec::submission_queue_entry sqe{};
        sqe.cdw0.set(spec::command_dword0::opc, static_cast<std::uint8_t>(opcode));
        sqe.nsid = nsid;
        return sqe;
    }
    [[nodiscard]] static spec::submission_queue_entry command(spec::nvm_opcode opcode, std::uint32_t nsid)
    {
        spec::submission_queue_entry sqe{};
        sqe.cdw0.set(spec::command_dword0::opc, static_cast<std::uint8_t>(opcode));
        sqe.nsid = nsid;
        return sqe;
    }
    [[nodiscard]] static spec::submission_queue_entry identify_command(spec::cns cns, std::uint32_t nsid,
                                                                       std::uint64_t buffer)
    {
        auto sqe = command(spec::admin_opcode::identify, nsid);
        spec::identify_view{.cns = cns}.encode(sqe);
        sqe.dptr.prp1 = buffer;
        return sqe;
    }
    [[nodiscard]] static spec::submission_queue_entry
    set_features_command(spec::feature_id fid, std::uint32_t cdw11, bool save = false)
    {
        auto sqe = command(spec::admin_opcode::set_features);
        spec::set_features_view{.feature_id = fid, .save = save, .cdw11 = cdw11}.encode(sqe);
        return sqe;
    }
    [[nodiscard]] static spec::submission_queue_entry get_features_command(spec::feature_id fid,
                                                                           spec::feature_select select)
    {
        auto sqe = command(spec::admin_opcode::get_features);
        spec::get_features_view{.feature_id = fid, .select = select}.encode(sqe);
        return sqe;
    }
    /// Get Log Page of `bytes` (a multiple of 4) into `buffer` (PRPs are the caller's: see build_prps).
    [[nodiscard]] static spec::submission_queue_entry
    get_log_page_command(spec::log_page_id lid, std::uint32_t bytes, std::uint32_t nsid = 0xffffffffU,
                         bool retain_async_event = false, std::uint64_t offset = 0,
                         std::uint8_t log_specific_field = 0)
    {
        auto sqe = command(spec::admin_opcode::get_log_page, nsid);
        spec::get_log_page_view{.log_page_id = lid,
                                .log_specific_field = log_specific_field,
                                .retain_async_event = retain_async_event,
                                .dword_count = bytes / 4U,
                                .offset = offset}
            .encode(sqe);
        return sqe;
    }
    /// Read, Write, Compare or Verify of `blocks` blocks at `slba` (data pointer left to the caller).
    template <typename View = spec::read_view>
    [[nodiscard]] static spec::submission_queue_entry lba_command(spec::nvm_opcode opcode, std::uint32_t nsid,
                                                                  std::uint64_t slba, std::uint32_t blocks)
    {
        auto sqe = command(opcode, nsid);
        View view{};
        view.starting_lba = slba;
        view.block_count = blocks;
        view.encode(sqe);
        return sqe;
    }

    [[nodiscard]] static spec::submission_queue_entry async_event_request_command()
    {
        return command(spec::admin_opcode::async_event_request);
    }
    [[nodiscard]] static spec::submission_queue_entry
    doorbell_buffer_config_command(std::uint64_t shadow, std::uint64_t event_index)
    {
        auto sqe = command(spec::admin_opcode::doorbell_buffer_config);
        sqe.dptr = {shadow, event_index};
        return sqe;
    }
    [[nodiscard]] static spec::submission_queue_entry delete_queue_command(spec::admin_opcode opcode,
                                                                           std::uint16_t qid)
    {
        auto sqe = command(opcode);
        sqe.cdw10 = qid;
        return sqe;
    }
    /// CC.EN = 1 with 64-byte SQEs and 16-byte CQEs (IOSQES 6, IOCQES 4), the rest 0.
    [[nodiscard]] static constexpr spec::cc_register enabled_cc() noexcept
    {
        return spec::cc_register{}
            .with(spec::cc_register::iosqes, 6)
            .with(spec::cc_register::iocqes, 4)
            .with(spec::cc_register::en, true);
    }
};

} // namespace testing
NVMEKIT_END_NAMESPACE
