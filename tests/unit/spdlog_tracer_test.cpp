#include <nvmekit/spdlog_tracer.hpp>

#include <memory>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include <spdlog/sinks/ostream_sink.h>

namespace {
namespace spdlog_tracer_test {

using nvmekit::trace_event;

struct captured_logger {
    std::ostringstream out;
    std::shared_ptr<spdlog::logger> logger;

    explicit captured_logger(spdlog::level::level_enum level)
        : logger{std::make_shared<spdlog::logger>("trace",
                                                  std::make_shared<spdlog::sinks::ostream_sink_st>(out))}
    {
        logger->set_pattern("%l %v");
        logger->set_level(level);
    }
};

TEST(spdlog_tracer, prints_a_command_event_on_one_line_with_its_fields)
{
    captured_logger captured{spdlog::level::trace};
    nvmekit::spdlog_tracer tracer{captured.logger};
    tracer.trace(
        {.event = trace_event::err_invalid_qid,
         .opcode = 0x05,
         .cid = 7,
         .status = nvmekit::spec::status{nvmekit::spec::command_specific_status::invalid_queue_identifier}
                       .with_dnr()});
    EXPECT_EQ(captured.out.str(),
              "debug err_invalid_qid qid=0 cid=7 opcode=0x05 nsid=0 "
              "status=Command Specific/Invalid Queue Identifier (0x01) [DNR] value=0x0\n");
}

TEST(spdlog_tracer, prints_other_events_with_their_queue_and_value)
{
    captured_logger captured{spdlog::level::trace};
    nvmekit::spdlog_tracer tracer{captured.logger};
    tracer.trace({.event = trace_event::err_doorbell_invalid_sq_tail, .qid = 1, .value = 64});
    tracer.trace({.event = trace_event::interrupt_raised, .value = 3});
    EXPECT_EQ(captured.out.str(), "debug err_doorbell_invalid_sq_tail qid=1 value=0x40\n"
                                  "trace interrupt_raised qid=0 value=0x3\n");
}

TEST(spdlog_tracer, command_steps_are_at_trace_level_and_host_mistakes_at_debug)
{
    captured_logger captured{spdlog::level::debug};
    nvmekit::spdlog_tracer tracer{captured.logger};
    tracer.trace({.event = trace_event::sqe_fetched, .qid = 1, .cid = 2});
    tracer.trace({.event = trace_event::err_mmio_misaligned, .value = 2});
    EXPECT_EQ(captured.out.str(), "debug err_mmio_misaligned qid=0 value=0x2\n");
}

static_assert(nvmekit::check_tracer<nvmekit::spdlog_tracer>());

} // namespace spdlog_tracer_test
} // namespace
