#pragma once
/// A Tracer that prints each event as one line through an spdlog logger, at trace level for the
/// steps of a command and at debug level for host mistakes:
///
///     err_invalid_qid qid=0 cid=7 opcode=0x05 nsid=0 status=Command Specific/Invalid Queue Identifier (0x01)
///     [DNR] value=0x0
///
/// In its own header, since spdlog is heavy to compile (the core headers include neither spdlog
/// nor {fmt}).
///
///     struct traced_traits : my_traits { using tracer = nvmekit::spdlog_tracer; };
///     ctrl.tracer().set_logger(spdlog::get("nvme"));   // default: spdlog's default logger

#include <memory>
#include <utility>

#include <spdlog/spdlog.h>

#include <nvmekit/config.hpp>
#include <nvmekit/contracts/tracer.hpp>
#include <nvmekit/format/status.hpp>

NVMEKIT_BEGIN_NAMESPACE

/// Prints trace events to an spdlog logger; models Tracer. Safe from several threads when the
/// logger's sinks are (the `_mt` ones).
class spdlog_tracer {
public:
    spdlog_tracer() : logger_{spdlog::default_logger()} {}
    explicit spdlog_tracer(std::shared_ptr<spdlog::logger> logger) : logger_{std::move(logger)} {}

    /// The logger events go to from now on (set it before the controller runs).
    void set_logger(std::shared_ptr<spdlog::logger> logger) noexcept { logger_ = std::move(logger); }
    [[nodiscard]] const std::shared_ptr<spdlog::logger>& logger() const noexcept { return logger_; }

    void trace(const trace_record& record) const noexcept
    {
        const auto level = is_host_error(record.event) ? spdlog::level::debug : spdlog::level::trace;
        if (!logger_ || !logger_->should_log(level)) {
            return;
        }
        try {
            if (carries_command(record.event)) {
                logger_->log(level, "{} qid={} cid={} opcode={:#04x} nsid={} status={} value={:#x}",
                             name(record.event), record.qid, record.cid, record.opcode, record.nsid,
                             record.status, record.value);
            } else {
                logger_->log(level, "{} qid={} value={:#x}", name(record.event), record.qid, record.value);
            }
        } catch (...) { // a tracer must not throw into the controller; spdlog reports its own errors
        }
    }

private:
    std::shared_ptr<spdlog::logger> logger_;
};

static_assert(Tracer<spdlog_tracer>);

NVMEKIT_END_NAMESPACE
