// libFuzzer target: the whole controller under a hostile host. The input is a program of host
// actions: BAR0 reads and writes of every width (registers, doorbells, MSI-X table and PBA),
// stores into host memory (queues, PRP lists, SGL segments, data), polls, clock advances,
// Function Level Resets and MSI-X control changes. Any crash, sanitizer report or broken
// invariant is a finding.
//
// The invariants are what a host can observe and the spec fixes, checked after every step
// against a model the target keeps of its own (host_model), never against the controller's
// internal state:
// - CSTS: RDY becomes 1 only while CC.EN = 1 and CFS = 0, and 0 only once CC.EN = 0 (a reset);
//   CFS clears only through a reset; SHST never reads 11b, leaves 00b only after a shutdown
//   notification (CC.SHN != 00b), never goes from 10b back to 01b and returns to 00b only
//   through a reset; NSSRO becomes 1 only on a write to NSSR (Base 2.0 3.5-3.7, Figure 42).
// - No DMA while CSTS.RDY reads 0 (before an enable completes and after a reset completes).
// - Every completion is written at the tail slot of a completion queue the host created, with
//   that queue's phase tag; it names a submission queue bound to that CQ, a CID the controller
//   fetched from that SQ and has not completed yet, and an SQ head within the ring that has not
//   moved past the tail the host wrote, is past the command's own entry and not past what the
//   controller has fetched (Base 2.0 3.3.1, 4.6).
// - After a reset every request is back in its pool and no backend I/O is outstanding.
// The model follows the queues through the controller's own DMA: a read at an SQ's head slot is
// a fetch, a 16-byte write at a CQ's tail slot a completion, cross-checked against the number of
// completions the controller counts. Where it cannot be sure (data pointed into a queue, a queue
// described by a PRP list, an admin queue command still running at the end of a step) it stops
// checking completions until the next reset instead of guessing, so a finding is always a real
// departure from the spec.

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <system_error>
#include <vector>

#include "fuzz_input.hpp"

#include <nvmekit/backends/ram_backend.hpp>
#include <nvmekit/controller.hpp>
#include <nvmekit/spec/commands.hpp>
#include <nvmekit/spec/opcodes.hpp>
#include <nvmekit/spec/queue_entries.hpp>
#include <nvmekit/spec/registers.hpp>
#include <nvmekit/testing/flat_memory.hpp>
#include <nvmekit/testing/manual_clock.hpp>

namespace {

namespace spec = nvmekit::spec;
using nvmekit_fuzz::counting_interrupts;
using nvmekit_fuzz::reader;

constexpr std::uint64_t host_base = 0x10000;
constexpr std::size_t host_size = 256 * 1024;
constexpr std::uint16_t io_queues = 4;
constexpr std::uint64_t doorbell_base = 0x1000; // CAP.DSTRD = 0: 4-byte doorbells
constexpr std::uint64_t nssr_offset = 0x20;
constexpr std::size_t max_tracked_commands = 256;

[[noreturn]] void finding(const char* what, unsigned long long a = 0, unsigned long long b = 0)
{
    std::fprintf(stderr, "fuzz_controller: invariant broken: %s (%llu, %llu)\n", what, a, b);
    std::abort();
}

/// Distance from `from` forward to `to` in a ring of `entries` slots.
std::uint32_t forward(std::uint32_t from, std::uint32_t to, std::uint32_t entries) noexcept
{
    return to >= from ? to - from : entries - from + to;
}

/// A physically contiguous queue the host created, as the host knows it.
struct shadow_queue {
    bool live = false;
    std::uint64_t base = 0;
    std::uint32_t entries = 0;
    std::uint32_t slot_bytes = 0;
    [[nodiscard]] std::uint64_t end() const noexcept { return base + std::uint64_t{entries} * slot_bytes; }
    [[nodiscard]] bool overlaps(std::uint64_t address, std::size_t length) const noexcept
    {
        return live && address < end() && address + length > base;
    }
};

/// A command the controller fetched, with the count of entries fetched from its SQ up to and
/// including it: the SQ head of its completion can be no earlier than that.
struct fetched_command {
    spec::submission_queue_entry sqe;
    std::uint64_t fetched_through;
};

struct shadow_sq : shadow_queue {
    std::uint16_t cqid = 0;
    std::uint32_t fetch_head = 0;           ///< slot the controller's next fetch reads
    std::uint64_t fetched = 0;              ///< entries fetched since the queue was created
    std::uint32_t sq_head = 0;              ///< SQHD of the last completion
    std::uint32_t tail = 0;                 ///< last valid tail the host wrote
    bool tail_known = true;                 ///< false once the tail was written in a way not modelled
    bool tail_went_back = false;            ///< the host moved the tail behind the head
    std::vector<fetched_command> in_flight; ///< fetched, not yet completed
};

struct shadow_cq : shadow_queue {
    std::uint32_t tail = 0;
    bool phase = true;
};

/// A completion the controller wrote at a CQ's tail slot during the current step.
struct observed_completion {
    std::uint16_t cqid;
    bool phase;
    spec::completion_queue_entry entry;
};

/// What the host knows and has seen; see the top of the file.
class host_model {
public:
    const nvmekit::register_file* registers = nullptr;

    [[nodiscard]] bool ready() const noexcept { return registers->csts().get(spec::csts_register::rdy); }

    void before_dma(const char* kind, std::uint64_t address)
    {
        if (!ready()) {
            finding(kind, address);
        }
    }

    /// A successful DMA read: a fetch when it reads whole entries at an SQ's head slot.
    void on_read(std::uint64_t address, std::span<const std::byte> bytes)
    {
        if (!exact_) {
            return;
        }
        for (auto& sq : sqs_) {
            if (!sq.overlaps(address, bytes.size())) {
                continue;
            }
            const std::uint64_t offset = address - sq.base;
            if (address < sq.base || offset % 64 != 0 || bytes.size() % 64 != 0 ||
                address + bytes.size() > sq.end()) {
                continue; // not entries of this queue: data the host pointed into it
            }
            if (offset / 64 != sq.fetch_head) {
                lose(); // whole entries away from the head: data or a fetch, no way to tell
                return;
            }
            // The controller's head moves past the whole read (or further, when it fetched more).
            sq.fetched += bytes.size() / 64;
            for (std::size_t at = 0; at < bytes.size(); at += 64) {
                fetched_command command{{}, sq.fetched};
                std::memcpy(&command.sqe, bytes.data() + at, sizeof command.sqe);
                sq.in_flight.push_back(command);
            }
            sq.fetch_head = (sq.fetch_head + static_cast<std::uint32_t>(bytes.size() / 64)) % sq.entries;
            if (sq.in_flight.size() > max_tracked_commands) {
                lose();
                return;
            }
        }
    }

    /// A successful DMA write: a completion when it is 16 bytes at a CQ's tail slot.
    void on_write(std::uint64_t address, std::span<const std::byte> bytes)
    {
        if (!exact_) {
            return;
        }
        for (std::uint16_t qid = 0; qid <= io_queues; ++qid) {
            auto& cq = cqs_[qid];
            if (!cq.overlaps(address, bytes.size())) {
                continue;
            }
            const std::uint64_t offset = address - cq.base;
            if (address < cq.base || offset % 16 != 0 || bytes.size() != 16) {
                continue; // no completion looks like this: data the host pointed into the queue
            }
            if (offset / 16 != cq.tail) {
                lose(); // a completion-shaped write away from the tail: data, or a misplaced CQE
                return;
            }
            observed_completion completion{qid, cq.phase, {}};
            std::memcpy(&completion.entry, bytes.data(), sizeof completion.entry);
            step_completions_.push_back(completion);
            cq.tail = cq.tail + 1 == cq.entries ? 0 : cq.tail + 1;
            if (cq.tail == 0) {
                cq.phase = !cq.phase;
            }
        }
    }

    /// A BAR0 write of the host: SQ Tail Doorbells move the model's tails.
    void on_bar0_write(std::uint64_t offset, unsigned width, std::uint64_t value)
    {
        if (offset + width <= doorbell_base) {
            return;
        }
        for (std::uint16_t qid = 0; qid <= io_queues; ++qid) {
            auto& sq = sqs_[qid];
            const std::uint64_t doorbell = doorbell_base + std::uint64_t{2U * qid} * 4U;
            if (!sq.live || offset >= doorbell + 4 || offset + width <= doorbell) {
                continue;
            }
            if (offset != doorbell || width != 4) {
                sq.tail_known = false; // partial or wide doorbell writes are not modelled
                continue;
            }
            const auto tail = static_cast<std::uint32_t>(value);
            if (tail >= sq.entries) {
                continue; // Invalid Doorbell Write Value: the controller ignores it
            }
            // A tail moved behind the head the host last saw lets the head wrap around to it.
            if (forward(sq.sq_head, tail, sq.entries) < forward(sq.sq_head, sq.tail, sq.entries)) {
                sq.tail_went_back = true;
            }
            sq.tail = tail;
        }
    }

    /// Checks the completions of the step against the number the controller posted.
    void settle_completions(std::uint64_t posted)
    {
        if (!exact_) {
            step_completions_.clear();
            return;
        }
        if (step_completions_.size() > posted) {
            // More completion-shaped writes at tail slots than completions: data written at a
            // tail slot, so some of them are not completions.
            lose();
            return;
        }
        if (step_completions_.size() < posted) {
            finding("a completion was written outside the tail slot of every completion queue",
                    step_completions_.size(), posted);
        }
        for (const auto& completion : step_completions_) {
            check_completion(completion);
            if (!exact_) {
                break;
            }
        }
        step_completions_.clear();
        // An admin command that changes the queues and has not completed yet may already have
        // changed them; the model learns of it only from the completion.
        for (const auto& command : sqs_[0].in_flight) {
            if (changes_queues(command.sqe.opcode())) {
                lose();
                return;
            }
        }
    }

    /// The controller left the disabled state: it took the admin queues from AQA, ASQ and ACQ.
    void on_enable()
    {
        clear();
        const auto aqa = registers->aqa();
        auto& asq = sqs_[0];
        asq.live = true;
        asq.base = registers->asq().raw;
        asq.entries = aqa.get(spec::aqa_register::asqs) + 1U;
        asq.slot_bytes = 64;
        auto& acq = cqs_[0];
        acq.live = true;
        acq.base = registers->acq().raw;
        acq.entries = aqa.get(spec::aqa_register::acqs) + 1U;
        acq.slot_bytes = 16;
        // Queues that wrap the address space or leave host memory cannot be modelled.
        for (const shadow_queue* queue :
             {static_cast<const shadow_queue*>(&asq), static_cast<const shadow_queue*>(&acq)}) {
            if (queue->base < host_base || queue->end() > host_base + host_size) {
                lose();
            }
        }
    }

    /// A reset: every queue is gone.
    void clear()
    {
        for (auto& sq : sqs_) {
            sq = {};
        }
        for (auto& cq : cqs_) {
            cq = {};
        }
        step_completions_.clear();
        shadow_doorbells_ = false;
        exact_ = true;
    }

private:
    static bool changes_queues(std::uint8_t opcode) noexcept
    {
        using op = spec::admin_opcode;
        switch (static_cast<op>(opcode)) {
        case op::create_io_sq:
        case op::create_io_cq:
        case op::delete_io_sq:
        case op::delete_io_cq:
        case op::doorbell_buffer_config: return true;
        default: return false;
        }
    }

    void lose() noexcept { exact_ = false; }

    void check_completion(const observed_completion& completion)
    {
        const auto& e = completion.entry;
        if (e.phase() != completion.phase) {
            finding("completion with the wrong phase tag", completion.cqid, e.status_phase);
        }
        if (e.sq_id > io_queues || !sqs_[e.sq_id].live || sqs_[e.sq_id].cqid != completion.cqid) {
            finding("completion for a submission queue not bound to its completion queue", e.sq_id,
                    completion.cqid);
        }
        auto& sq = sqs_[e.sq_id];
        if (e.sq_head >= sq.entries) {
            finding("completion with an SQ head outside the ring", e.sq_head, sq.entries);
        }
        if (sq.tail_known && !sq.tail_went_back && !shadow_doorbells_ &&
            forward(sq.sq_head, e.sq_head, sq.entries) > forward(sq.sq_head, sq.tail, sq.entries)) {
            finding("completion with an SQ head past the tail the host wrote", e.sq_head, sq.tail);
        }
        sq.sq_head = e.sq_head;
        // The earliest fetched command with this CID: the completion's own command was fetched no
        // earlier, so the SQ head it reports has moved at least past that entry, and no further
        // than the controller has fetched.
        const auto fetched =
            std::find_if(sq.in_flight.begin(), sq.in_flight.end(),
                         [&](const fetched_command& c) { return c.sqe.command_id() == e.cid; });
        if (fetched == sq.in_flight.end()) {
            finding("completion for a CID not fetched from its SQ, or completed already", e.cid, e.sq_id);
        }
        const std::uint64_t since = sq.fetched - fetched->fetched_through;
        const auto head_then = static_cast<std::uint32_t>(fetched->fetched_through % sq.entries);
        if (since < sq.entries && forward(head_then, e.sq_head, sq.entries) > since) {
            finding("completion with an SQ head before its command or past the controller's fetches",
                    e.sq_head, head_then);
        }
        const spec::submission_queue_entry sqe = fetched->sqe;
        sq.in_flight.erase(fetched);
        if (e.sq_id == 0 && e.status().is_success()) {
            apply_admin_success(sqe);
        }
    }

    /// What a successful admin command did to the queues.
    void apply_admin_success(const spec::submission_queue_entry& sqe)
    {
        using op = spec::admin_opcode;
        switch (static_cast<op>(sqe.opcode())) {
        case op::create_io_cq: {
            const auto view = spec::create_io_cq_view::decode(sqe);
            if (view.queue_id == 0 || view.queue_id > io_queues || cqs_[view.queue_id].live) {
                finding("Create I/O CQ succeeded for an invalid or existing queue", view.queue_id);
            }
            auto& cq = cqs_[view.queue_id];
            cq = {};
            cq.live = true;
            cq.base = sqe.dptr.prp1;
            cq.entries = view.queue_size;
            cq.slot_bytes = 16;
            if (!view.physically_contiguous) {
                lose(); // a PRP-list queue: its pages are not modelled
            }
            break;
        }
        case op::create_io_sq: {
            const auto view = spec::create_io_sq_view::decode(sqe);
            if (view.queue_id == 0 || view.queue_id > io_queues || sqs_[view.queue_id].live) {
                finding("Create I/O SQ succeeded for an invalid or existing queue", view.queue_id);
            }
            if (view.cq_id > io_queues || view.cq_id == 0 || !cqs_[view.cq_id].live) {
                finding("Create I/O SQ succeeded for a completion queue that does not exist", view.cq_id);
            }
            auto& sq = sqs_[view.queue_id];
            sq = {};
            sq.live = true;
            sq.base = sqe.dptr.prp1;
            sq.entries = view.queue_size;
            sq.slot_bytes = 64;
            sq.cqid = view.cq_id;
            if (!view.physically_contiguous) {
                lose();
            }
            break;
        }
        case op::delete_io_sq: {
            const auto qid = spec::delete_io_sq_view::decode(sqe).queue_id;
            if (qid == 0 || qid > io_queues || !sqs_[qid].live) {
                finding("Delete I/O SQ succeeded for a queue that does not exist", qid);
            }
            sqs_[qid] = {};
            break;
        }
        case op::delete_io_cq: {
            const auto qid = spec::delete_io_cq_view::decode(sqe).queue_id;
            if (qid == 0 || qid > io_queues || !cqs_[qid].live) {
                finding("Delete I/O CQ succeeded for a queue that does not exist", qid);
            }
            for (const auto& sq : sqs_) {
                if (sq.live && sq.cqid == qid) {
                    finding("Delete I/O CQ succeeded while a submission queue uses it", qid);
                }
            }
            cqs_[qid] = {};
            break;
        }
        case op::doorbell_buffer_config: shadow_doorbells_ = true; break; // tails come from host memory
        default: break;
        }
    }

    std::array<shadow_sq, io_queues + 1> sqs_{};
    std::array<shadow_cq, io_queues + 1> cqs_{};
    std::vector<observed_completion> step_completions_;
    bool shadow_doorbells_ = false;
    bool exact_ = true;
};

/// Host memory as the controller reaches it, reported to the model.
class observed_memory {
public:
    explicit observed_memory(host_model& model) : model_{&model} { memory_.add_range(host_base, host_size); }

    std::error_code read(std::uint64_t address, std::span<std::byte> destination)
    {
        model_->before_dma("DMA read while CSTS.RDY = 0", address);
        auto error = memory_.read(address, destination);
        if (!error) {
            model_->on_read(address, destination);
        }
        return error;
    }
    std::error_code write(std::uint64_t address, std::span<const std::byte> source)
    {
        model_->before_dma("DMA write while CSTS.RDY = 0", address);
        auto error = memory_.write(address, source);
        if (!error) {
            model_->on_write(address, source);
        }
        return error;
    }
    std::span<std::byte> map(std::uint64_t address, std::size_t length)
    {
        model_->before_dma("DMA mapping while CSTS.RDY = 0", address);
        return memory_.map(address, length);
    }
    nvmekit::testing::flat_memory& memory() noexcept { return memory_; }

private:
    host_model* model_;
    nvmekit::testing::flat_memory memory_;
};

struct traits : nvmekit::default_traits {
    using dma = observed_memory;
    using interrupts = counting_interrupts;
    using clock = nvmekit::testing::manual_clock;
    static constexpr nvmekit::limits limits{.io_queues = io_queues,
                                            .queue_entries = 64,
                                            .mdts = 3,
                                            .msix_vectors = 5,
                                            .aerl = 3,
                                            .commands_per_queue = 16,
                                            .max_segments = 64,
                                            .staging_buffers = 2};
};

using controller_type = nvmekit::controller<traits>;

/// The CSTS rules of the top of the file, from the registers before and after one step.
void check_csts(spec::csts_register before, spec::csts_register after, spec::cc_register cc, bool wrote_nssr)
{
    using csts = spec::csts_register;
    using status = spec::shutdown_status;
    const bool enabled = cc.get(spec::cc_register::en);
    const auto shst_before = before.get(csts::shst);
    const auto shst = after.get(csts::shst);
    const bool rdy_before = before.get(csts::rdy);
    const bool rdy = after.get(csts::rdy);
    if (!rdy_before && rdy && (!enabled || after.get(csts::cfs))) {
        finding("CSTS.RDY became 1 without CC.EN = 1 or with CSTS.CFS = 1", cc.raw, after.raw);
    }
    if (rdy_before && !rdy && enabled) {
        finding("CSTS.RDY became 0 while CC.EN = 1", cc.raw, after.raw);
    }
    if (before.get(csts::cfs) && !after.get(csts::cfs) && enabled) {
        finding("CSTS.CFS cleared without a reset", cc.raw, after.raw);
    }
    if (static_cast<unsigned>(shst) == 0b11) {
        finding("CSTS.SHST reads the reserved value 11b", after.raw);
    }
    if (shst_before == status::normal && shst != status::normal &&
        cc.get(spec::cc_register::shn) == spec::shutdown_notification::none) {
        finding("CSTS.SHST left 00b without a shutdown notification", cc.raw, after.raw);
    }
    if (shst_before == status::complete && shst == status::processing) {
        finding("CSTS.SHST went from complete back to processing", before.raw, after.raw);
    }
    if (shst_before != status::normal && shst == status::normal && enabled) {
        finding("CSTS.SHST returned to 00b without a reset", cc.raw, after.raw);
    }
    if (!before.get(csts::nssro) && after.get(csts::nssro) && !wrote_nssr) {
        finding("CSTS.NSSRO became 1 without an NVM Subsystem Reset", before.raw, after.raw);
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    host_model model;
    observed_memory memory{model};
    counting_interrupts interrupts;
    nvmekit::testing::manual_clock clock;
    nvmekit::subsystem<nvmekit::any_backend> subsystem;
    subsystem.add_namespace(nvmekit::ram_backend{64 * 1024}, {.lba_format = 1});
    subsystem.add_namespace(nvmekit::ram_backend{64 * 1024}, {.lba_format = 3, .extended_metadata = true});
    controller_type ctrl{memory, interrupts, clock, subsystem};
    model.registers = &ctrl.registers();
    const std::uint64_t bar0 = ctrl.bar0_size();

    auto csts = ctrl.registers().csts();
    auto state = ctrl.state();
    std::uint64_t posted = ctrl.statistics().completions_posted;
    reader in{{data, size}};
    // One host action: a BAR0 write or read, a host memory store, a poll, time, FLR or MSI-X
    // control. Returns whether it wrote NSSR.
    const auto step = [&]() -> bool {
        const auto op = in.take<std::uint8_t>();
        switch (op % 8) {
        case 0:
        case 1: { // BAR0 write
            static constexpr unsigned widths[] = {1, 2, 4, 8};
            const unsigned width = widths[in.take<std::uint8_t>() % 4];
            const std::uint64_t offset = in.take<std::uint16_t>() % bar0;
            const auto value = in.take<std::uint64_t>();
            model.on_bar0_write(offset, width, value);
            ctrl.mmio_write(offset, width, value);
            return offset < nssr_offset + 4 && offset + width > nssr_offset;
        }
        case 2: { // BAR0 read
            static constexpr unsigned widths[] = {1, 2, 4, 8, 3};
            const unsigned width = widths[in.take<std::uint8_t>() % 5];
            static_cast<void>(ctrl.mmio_read(in.take<std::uint16_t>() % bar0, width));
            return false;
        }
        case 3:
        case 4: { // host memory store
            const std::uint64_t offset = in.take<std::uint32_t>() % host_size;
            const auto bytes = in.take_bytes(in.take<std::uint8_t>() % 80U + 1U);
            const auto room = std::min<std::size_t>(bytes.size(), host_size - offset);
            if (room != 0) {
                std::memcpy(memory.memory().bytes(host_base + offset, room).data(), bytes.data(), room);
            }
            return false;
        }
        case 5: ctrl.poll(); return false;
        case 6: clock.advance(std::chrono::microseconds{in.take<std::uint16_t>()} * 16); return false;
        default: {
            const auto which = in.take<std::uint8_t>();
            if (which % 16 == 0) {
                ctrl.function_level_reset();
            } else {
                ctrl.set_msix_control((which & 1U) != 0, (which & 2U) != 0);
            }
            return false;
        }
        }
    };
    // The checks after a step (top of the file).
    const auto check = [&](bool wrote_nssr) {
        const std::uint64_t now_posted = ctrl.statistics().completions_posted;
        model.settle_completions(now_posted - posted);
        posted = now_posted;
        const auto csts_after = ctrl.registers().csts();
        check_csts(csts, csts_after, ctrl.registers().cc(), wrote_nssr);
        const auto state_after = ctrl.state();
        const bool was_off =
            state == nvmekit::controller_state::disabled || state == nvmekit::controller_state::failed;
        const bool is_off = state_after == nvmekit::controller_state::disabled ||
                            state_after == nvmekit::controller_state::failed;
        if (state_after == nvmekit::controller_state::disabled &&
            (state != state_after || csts.get(spec::csts_register::rdy))) {
            model.clear();
            if (!csts_after.get(spec::csts_register::rdy) &&
                (ctrl.requests_in_use() != 0 || ctrl.io_outstanding() != 0)) {
                finding("requests not back in their pools after a reset", ctrl.requests_in_use(),
                        ctrl.io_outstanding());
            }
        }
        if (was_off && !is_off) {
            model.on_enable();
        }
        csts = csts_after;
        state = state_after;
    };

    for (int i = 0; i < 4096 && !in.empty(); ++i) {
        check(step());
    }
    // Let everything in flight finish, then the controller must account for every request.
    for (int i = 0; i < 8; ++i) {
        ctrl.poll();
        check(false);
    }
    model.on_bar0_write(0x14, 4, 0);
    ctrl.mmio_write(0x14, 4, 0); // CC.EN = 0: every queue goes, every request must come back
    check(false);
    ctrl.poll();
    check(false);
    if (ctrl.requests_in_use() != 0 || ctrl.io_outstanding() != 0) {
        finding("requests outstanding at the end", ctrl.requests_in_use(), ctrl.io_outstanding());
    }
    return 0;
}
