#pragma once
/// The in-memory loopback transport: a host that reaches a controller without BAR0, doorbells,
/// queue memory, PRPs or interrupts, the way a fabrics host does. Registers are properties
/// (controller::property_read/property_write), the queues are message-based (the controller's
/// connect_admin_queue, connect_io_queue, submit and take_completion), and a command's data is a
/// buffer the transport carries, described by one SGL Data Block descriptor and reached through
/// the controller's DMA provider, which maps the transport's buffers (a flat_memory here).
///
///     nvmekit::testing::flat_memory buffers;          // the transport's data buffers
///     buffers.add_range(0x100000, 16 << 20);
///     nvmekit::controller<traits> ctrl{buffers, msix, clock};
///     nvmekit::testing::loopback_host host{ctrl, buffers, clock};
///     host.bring_up({.io_queue_pairs = 2});
///     const auto buffer = host.allocate(4096);
///     auto read = host.lba_command(nvmekit::spec::nvm_opcode::read, 1, 0, 1);
///     host.describe_data(read, buffer, 4096);
///     host.io(1, read);
///
/// Every completion is checked as a careful host would (its queue, a command identifier that is
/// outstanding) and a violation throws host_error; waits are bounded (`max_polls`).

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nvmekit/config.hpp>
#include <nvmekit/spec/data_pointer.hpp>
#include <nvmekit/spec/features.hpp>
#include <nvmekit/spec/queue_entries.hpp>
#include <nvmekit/spec/registers.hpp>
#include <nvmekit/testing/command_builders.hpp>
#include <nvmekit/testing/flat_memory.hpp>
#include <nvmekit/testing/host_base.hpp>
#include <nvmekit/testing/manual_clock.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace testing {

/// How loopback_host brings the controller up.
struct loopback_options {
    std::uint16_t io_queue_pairs = 1; ///< I/O queue pairs to ask for and connect
    std::uint32_t admin_entries = 32; ///< entries of the admin queue pair
    std::uint32_t io_entries = 128;   ///< entries of each I/O queue pair
    std::size_t max_polls = 10000;    ///< bound on every wait
    std::chrono::nanoseconds poll_step{std::chrono::milliseconds{1}}; ///< clock advance per wait step
};

template <typename Controller>
class loopback_host : public command_builders, public host_base<loopback_host<Controller>> {
    using base = host_base<loopback_host<Controller>>;

public:
    loopback_host(Controller& controller, flat_memory& buffers, manual_clock& clock)
        : base{buffers}, controller_{controller}, clock_{clock}
    {}

    // ---- properties ---------------------------------------------------------------------------

    [[nodiscard]] std::uint64_t get_property(spec::register_offset offset, unsigned width = 4)
    {
        const auto value = controller_.property_read(static_cast<std::uint64_t>(offset), width);
        if (!value) {
            throw host_error{"property read refused"};
        }
        return *value;
    }
    void set_property(spec::register_offset offset, std::uint64_t value, unsigned width = 4)
    {
        if (!controller_.property_write(static_cast<std::uint64_t>(offset), width, value)) {
            throw host_error{"property write refused"};
        }
    }
    [[nodiscard]] spec::csts_register csts()
    {
        return spec::csts_register{static_cast<std::uint32_t>(get_property(spec::register_offset::csts))};
    }

    // ---- controller life cycle ----------------------------------------------------------------

    /// Connects the admin queue (once), enables the controller, waits for CSTS.RDY, asks for
    /// the I/O queues with Set Features Number of Queues, connects them and posts an
    /// Asynchronous Event Request (as a fabrics host does once connected).
    void bring_up(const loopback_options& options = {})
    {
        options_ = options;
        if (!controller_.message_based()) {
            if (const auto status = controller_.connect_admin_queue(options.admin_entries);
                !status.is_success()) {
                throw host_error{"admin queue refused"};
            }
        }
        enable();
        const auto granted = admin(set_features_command(
            spec::feature_id::number_of_queues,
            spec::number_of_queues::from_counts(options.io_queue_pairs, options.io_queue_pairs).raw));
        if (!granted.ok()) {
            throw host_error{"Set Features Number of Queues failed"};
        }
        const spec::number_of_queues queues{granted.cqe.dw0};
        const auto pairs = std::min<std::uint32_t>(
            {options.io_queue_pairs, queues.submission_queue_count(), queues.completion_queue_count()});
        for (std::uint16_t qid = 1; qid <= pairs; ++qid) {
            if (const auto status = controller_.connect_io_queue(qid, options.io_entries);
                !status.is_success()) {
                throw host_error{"I/O queue " + std::to_string(qid) + " refused"};
            }
        }
        async_event_cid_ = submit(0, async_event_request_command());
    }

    /// CC.EN = 1 with 64-byte SQEs and 16-byte CQEs, then waits for CSTS.RDY = 1.
    void enable()
    {
        set_property(spec::register_offset::cc, enabled_cc().raw);
        wait_until([&] { return csts().get(spec::csts_register::rdy); }, "CSTS.RDY = 1");
    }

    /// CC.EN = 0 (a Controller Reset), then waits for CSTS.RDY = 0. Commands in flight are lost.
    void disable()
    {
        set_property(spec::register_offset::cc, 0);
        wait_until([&] { return !csts().get(spec::csts_register::rdy); }, "CSTS.RDY = 0");
        outstanding_.clear();
        reaped_.clear();
        async_event_cid_.reset();
    }

    // ---- commands -----------------------------------------------------------------------------

    /// Hands `sqe` (with a fresh command identifier and CDW0.PSDT = 01b, as fabrics hosts set on
    /// every command) to queue `qid`. Throws when the controller refuses it (queue full, not
    /// connected, controller not ready).
    std::uint16_t submit(std::uint16_t qid, spec::submission_queue_entry sqe)
    {
        sqe.cdw0.set(spec::command_dword0::psdt, spec::data_pointer_type::sgl_contiguous_metadata);
        return submit_as_is(qid, sqe);
    }

    /// submit() with `sqe`'s PSDT left as it is (to send what a host must not).
    std::uint16_t submit_as_is(std::uint16_t qid, spec::submission_queue_entry sqe)
    {
        const std::uint16_t cid = next_cid_++;
        sqe.cdw0.set(spec::command_dword0::cid, cid);
        if (!controller_.submit(qid, sqe)) {
            throw host_error{"queue " + std::to_string(qid) + " refused a command"};
        }
        outstanding_[qid].push_back(cid);
        return cid;
    }

    completion admin(spec::submission_queue_entry sqe) { return wait_for(0, submit(0, sqe)); }
    completion io(std::uint16_t qid, spec::submission_queue_entry sqe)
    {
        return wait_for(qid, submit(qid, sqe));
    }

    /// Waits for command `cid` of queue `qid`; others completed meanwhile are kept for later.
    completion wait_for(std::uint16_t qid, std::uint16_t cid)
    {
        for (std::size_t poll = 0; poll < options_.max_polls; ++poll) {
            if (auto found = take_reaped(qid, cid)) {
                return *found;
            }
            controller_.poll();
            collect(qid);
            if (auto found = take_reaped(qid, cid)) {
                return *found;
            }
            clock_.advance(options_.poll_step);
        }
        throw host_error{"no completion for command " + std::to_string(cid) + " on queue " +
                         std::to_string(qid)};
    }

    /// Polls once and takes every completion of queue `qid`.
    std::vector<completion> reap(std::uint16_t qid)
    {
        std::vector<completion> out;
        reap(qid, out);
        return out;
    }

    /// Polls once and appends every completion of queue `qid` to `out`; returns how many.
    std::size_t reap(std::uint16_t qid, std::vector<completion>& out)
    {
        controller_.poll();
        collect(qid);
        const std::size_t before = out.size();
        std::erase_if(reaped_, [&](const completion& c) {
            if (c.cqe.sq_id != qid) {
                return false;
            }
            out.push_back(c);
            return true;
        });
        return out.size() - before;
    }

    /// The Asynchronous Event Request bring_up() posted, while it is outstanding.
    [[nodiscard]] std::optional<std::uint16_t> async_event_request_cid() const noexcept
    {
        return async_event_cid_;
    }

    [[nodiscard]] std::size_t outstanding(std::uint16_t qid) const
    {
        const auto it = outstanding_.find(qid);
        return it == outstanding_.end() ? 0 : it->second.size();
    }

    // ---- data buffers -------------------------------------------------------------------------

    // allocate(size), release(address), memory(), admin_read and get_log_page: host_base.

    /// Points `sqe`'s data at `length` bytes of buffer `address`: one SGL Data Block descriptor
    /// (CDW0.PSDT = 01b).
    static void describe_data(spec::submission_queue_entry& sqe, std::uint64_t address, std::size_t length)
    {
        if (length > 0xffffffffU) {
            throw host_error{"an SGL Data Block describes at most 4 GiB - 1"};
        }
        sqe.dptr = spec::to_data_pointer(
            spec::sgl_descriptor::data_block(address, static_cast<std::uint32_t>(length)));
        sqe.cdw0.set(spec::command_dword0::psdt, spec::data_pointer_type::sgl_contiguous_metadata);
    }

private:
    void collect(std::uint16_t qid)
    {
        while (auto cqe = controller_.take_completion(qid)) {
            auto& pending = outstanding_[cqe->sq_id];
            const auto it = std::find(pending.begin(), pending.end(), cqe->cid);
            if (cqe->sq_id != qid || it == pending.end()) {
                throw host_error{"completion for command " + std::to_string(cqe->cid) + " of SQ " +
                                 std::to_string(cqe->sq_id) + " on queue " + std::to_string(qid) +
                                 ", which has no such command outstanding"};
            }
            pending.erase(it);
            reaped_.push_back(completion{*cqe});
        }
    }

    std::optional<completion> take_reaped(std::uint16_t qid, std::uint16_t cid)
    {
        const auto it = std::find_if(reaped_.begin(), reaped_.end(), [&](const completion& c) {
            return c.cqe.sq_id == qid && c.cqe.cid == cid;
        });
        if (it == reaped_.end()) {
            return std::nullopt;
        }
        const completion found = *it;
        reaped_.erase(it);
        return found;
    }

    template <typename Predicate>
    void wait_until(Predicate&& done, const char* what)
    {
        base::poll_until(controller_, clock_, options_.max_polls, options_.poll_step,
                         std::forward<Predicate>(done), what);
    }

    Controller& controller_;
    manual_clock& clock_;
    loopback_options options_{};
    std::map<std::uint16_t, std::vector<std::uint16_t>> outstanding_;
    std::vector<completion> reaped_;
    std::optional<std::uint16_t> async_event_cid_{};
    std::uint16_t next_cid_ = 1;
};

} // namespace testing
NVMEKIT_END_NAMESPACE
