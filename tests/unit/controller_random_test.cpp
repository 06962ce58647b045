#include <nvmekit/controller.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "controller_fixture.hpp"
#include "splitmix64.hpp"

/// A randomized campaign against the composed controller: the in-process host interleaves admin
/// and I/O commands, queue creation and deletion (valid and invalid), raw doorbell writes,
/// controller resets, shutdowns, NVM Subsystem Resets, Function Level Resets, register and MSI-X
/// table writes, polls and clock advances, while the DMA wrapper injects failures. It asserts:
/// nothing crashes (run it under ASan+UBSan), no byte of any completion queue changes and no DMA
/// write or interrupt happens while CSTS.RDY reads 0, every request is back in its pool whenever
/// RDY reads 0 and whenever the host has reaped every completion, and a clean bring-up and
/// Identify Controller work at the end. The test keeps its own model of the controller: which I/O
/// queues exist (created with success, deleted with success, all gone after a reset), the Number
/// of Queues granted and whether it may still be set. While that model is exact (it is lost only
/// by host actions it does not follow: random CC and register writes, an in-range admin SQ tail
/// doorbell, a failed bring-up), the statuses of admin and I/O commands are checked against it,
/// with or without DMA faults, as are Identify data no fault hit and every CQE's SQ Head Pointer,
/// and the controller's queues are compared with the model after every step. While the host
/// driver's view of the queues is also the controller's and no fault is being injected, invalid
/// doorbell counts and every request back in its pool after a drain are checked too. While the
/// host has kept to the protocol and no fault was injected since the last bring-up ("strict"), a
/// host_error or CSTS.CFS is a failure.

namespace {
namespace controller_random_test {

namespace nt = nvmekit::testing;
namespace spec = nvmekit::spec;
using namespace nvmekit_test;
using namespace std::chrono_literals;

struct random_traits : recording_dma_traits {
    // Small limits so that random queue identifiers, sizes and vectors hit both sides of every bound.
    static constexpr nvmekit::limits limits{
        .io_queues = 8, .queue_entries = 64, .mdts = 5, .msix_vectors = 9, .aerl = 3};
};
using random_rig = basic_rig<random_traits>;
using controller_type = random_rig::controller_type;

constexpr std::uint16_t max_qid = random_traits::limits.io_queues;
constexpr std::uint32_t max_entries = random_traits::limits.queue_entries;
constexpr std::uint16_t msix_vectors = random_traits::limits.msix_vectors;
constexpr std::uint64_t page = 4096;
constexpr std::size_t campaign_memory_size = std::size_t{64} << 20;
constexpr std::uint64_t unmapped_address = 0x7f00'0000'0000;
constexpr std::size_t steps_per_seed = 12000;
// Lower bounds, per seed, on how much of a campaign each check covers: about two thirds of the
// least the three seeds reach with one poll group, with 2 and 4, and with 2 and 4 on threads of
// their own (3665 steps started strict, 11161 with the model exact, 2835 statuses checked in
// strict mode and 4762 outside it, 8267 SQ heads, 522 Identify data and 276 drains checked).
constexpr std::uint64_t min_strict_steps = 2400;
constexpr std::uint64_t min_model_exact_steps = 7400;
constexpr std::uint64_t min_strict_statuses = 1850;
constexpr std::uint64_t min_model_statuses = 3100;
constexpr std::uint64_t min_sq_heads = 5500;
constexpr std::uint64_t min_identify_data = 340;
constexpr std::uint64_t min_drains = 180;

enum class step_kind : std::uint8_t {
    identify,
    get_features,
    set_features,
    invalid_admin_opcode,
    async_event_request,
    io_batch,
    io_wait,
    create_cq,
    create_sq,
    delete_sq,
    delete_cq,
    invalid_queue_command,
    doorbell,
    controller_reset,
    shutdown,
    subsystem_reset,
    function_level_reset,
    register_write,
    msix_write,
    poll,
    drain,
    clock_advance,
    fault_injection,
};

struct step_weight {
    step_kind kind;
    unsigned weight;
    std::string_view name;
};

constexpr auto step_weights = std::to_array<step_weight>({
    {step_kind::identify, 14, "identify"},
    {step_kind::get_features, 8, "get_features"},
    {step_kind::set_features, 6, "set_features"},
    {step_kind::invalid_admin_opcode, 6, "invalid_admin_opcode"},
    {step_kind::async_event_request, 3, "async_event_request"},
    {step_kind::io_batch, 24, "io_batch"},
    {step_kind::io_wait, 12, "io_wait"},
    {step_kind::create_cq, 14, "create_cq"},
    {step_kind::create_sq, 14, "create_sq"},
    {step_kind::delete_sq, 8, "delete_sq"},
    {step_kind::delete_cq, 8, "delete_cq"},
    {step_kind::invalid_queue_command, 6, "invalid_queue_command"},
    {step_kind::doorbell, 10, "doorbell"},
    {step_kind::controller_reset, 3, "controller_reset"},
    {step_kind::shutdown, 1, "shutdown"},
    {step_kind::subsystem_reset, 1, "subsystem_reset"},
    {step_kind::function_level_reset, 1, "function_level_reset"},
    {step_kind::register_write, 4, "register_write"},
    {step_kind::msix_write, 5, "msix_write"},
    {step_kind::poll, 10, "poll"},
    {step_kind::drain, 10, "drain"},
    {step_kind::clock_advance, 5, "clock_advance"},
    {step_kind::fault_injection, 3, "fault_injection"},
});

constexpr unsigned total_weight = [] {
    unsigned sum = 0;
    for (const auto& entry : step_weights) {
        sum += entry.weight;
    }
    return sum;
}();

/// The NVM opcodes the controller knows (they complete with Invalid Namespace or Format while no
/// namespace is attached); every other I/O opcode is Invalid Command Opcode. The controller has
/// no public table of them yet, so this list follows its dispatch.
constexpr auto known_nvm_opcodes = std::to_array<spec::nvm_opcode>(
    {spec::nvm_opcode::flush, spec::nvm_opcode::write, spec::nvm_opcode::read, spec::nvm_opcode::write_zeroes,
     spec::nvm_opcode::dataset_management, spec::nvm_opcode::compare, spec::nvm_opcode::verify,
     spec::nvm_opcode::copy, spec::nvm_opcode::write_uncorrectable});

[[nodiscard]] bool known_nvm_opcode(std::uint8_t opcode) noexcept
{
    return std::ranges::find(known_nvm_opcodes, static_cast<spec::nvm_opcode>(opcode)) !=
           known_nvm_opcodes.end();
}

/// Admin opcodes the controller does not implement (Invalid Command Opcode).
constexpr auto unsupported_admin_opcodes =
    std::to_array<std::uint8_t>({0x03, 0x07, 0x0b, 0x0e, 0x14, 0x1c, 0x7f, 0x81, 0x84, 0xc0, 0xc3, 0xff});

struct seed_setup {
    std::uint64_t seed;
    nvmekit::controller_config config;
};

void PrintTo(const seed_setup& setup, std::ostream* out)
{
    *out << "seed 0x" << std::hex << setup.seed << std::dec << ", CAP.DSTRD "
         << unsigned{setup.config.doorbell_stride} << ", ready delay " << setup.config.ready_delay.count()
         << " ns";
}

struct memory_range {
    std::uint64_t address = 0;
    std::size_t length = 0;
};

/// One seed's campaign: providers, controller, host and the test's model of what exists.
class campaign {
public:
    explicit campaign(const seed_setup& setup)
        : rng_{setup.seed}
        , seed_{setup.seed}
        , rig_{setup.config, campaign_memory_size}
        , dstrd_{setup.config.doorbell_stride}
    {
        rig_.dma.set_recording(false); // the counters are enough, and a long log would only cost memory
        buffer_a_ = rig_.host.allocate(page);
        buffer_b_ = rig_.host.allocate(page);
        buffer_c_ = rig_.host.allocate(page);
    }

    void run(std::size_t steps)
    {
        recover("initial bring-up");
        for (step_ = 0; step_ < steps && failures_ == 0; ++step_) {
            run_one_step();
        }
        if (failures_ == 0) {
            finish();
        }
    }

    [[nodiscard]] std::size_t failures() const noexcept { return failures_; }
    [[nodiscard]] const std::map<std::string, std::uint64_t>& step_counts() const noexcept
    {
        return step_counts_;
    }
    [[nodiscard]] const std::map<std::string, std::uint64_t>& status_counts() const noexcept
    {
        return status_counts_;
    }
    [[nodiscard]] const std::map<std::string, std::uint64_t>& event_counts() const noexcept
    {
        return event_counts_;
    }
    [[nodiscard]] const controller_type& controller() const noexcept { return rig_.ctrl; }
    [[nodiscard]] const nt::recording_dma<nt::flat_memory>& dma() const noexcept { return rig_.dma; }

private:
    struct io_cq {
        std::uint32_t entries = 0;
    };
    struct io_sq {
        std::uint16_t cqid = 0;
        std::uint32_t entries = 0;
        std::uint64_t life = 0; ///< tells apart the SQs that had this QID in turn
        std::uint32_t tail = 0; ///< the host's tail: every submission goes through the test
        bool tail_known = true; ///< false once a raw in-range tail doorbell moved the controller's
    };
    /// An I/O command: its expected status, and the SQ (which life of its QID) and slot it went to.
    struct expected_io {
        spec::status status;
        std::uint64_t sq_life = 0;
        std::uint32_t slot = 0;
    };

    // ---- the loop ---------------------------------------------------------------------------

    void run_one_step()
    {
        const step_weight& chosen = choose_step();
        current_ = chosen.name;
        ++step_counts_[std::string{chosen.name}];
        note(strict() ? "strict" : model_exact() ? "not strict, model exact" : "not strict, model lost");
        const bool strict_before = strict();
        if (strict_before) {
            ++event_counts_["steps started in strict mode"];
        }
        if (model_exact()) {
            ++event_counts_["steps started with the model exact"];
        }
        try {
            dispatch(chosen.kind);
        } catch (const nt::host_error& error) {
            ++event_counts_["host_error caught"];
            if (strict_before && strict()) {
                fail(std::string{
                         "host_error while the host kept to the protocol and no fault was injected: "} +
                     error.what());
                return;
            }
            recover("host_error");
        }
        if (failures_ == 0) {
            end_of_step_checks();
        }
        if (failures_ == 0) {
            compare_queues_with_model();
        }
    }

    const step_weight& choose_step()
    {
        auto ticket = static_cast<unsigned>(rng_.below(total_weight));
        for (const auto& entry : step_weights) {
            if (ticket < entry.weight) {
                return entry;
            }
            ticket -= entry.weight;
        }
        return step_weights.back();
    }

    void dispatch(step_kind kind)
    {
        switch (kind) {
        case step_kind::identify: step_identify(); break;
        case step_kind::get_features: step_get_features(); break;
        case step_kind::set_features: step_set_features(); break;
        case step_kind::invalid_admin_opcode: step_invalid_admin_opcode(); break;
        case step_kind::async_event_request: step_async_event_request(); break;
        case step_kind::io_batch: step_io_batch(); break;
        case step_kind::io_wait: step_io_wait(); break;
        case step_kind::create_cq: step_create_cq(); break;
        case step_kind::create_sq: step_create_sq(); break;
        case step_kind::delete_sq: step_delete_sq(); break;
        case step_kind::delete_cq: step_delete_cq(); break;
        case step_kind::invalid_queue_command: step_invalid_queue_command(); break;
        case step_kind::doorbell: step_doorbell(); break;
        case step_kind::controller_reset: step_controller_reset(); break;
        case step_kind::shutdown: step_shutdown(); break;
        case step_kind::subsystem_reset: step_subsystem_reset(); break;
        case step_kind::function_level_reset: step_function_level_reset(); break;
        case step_kind::register_write: step_register_write(); break;
        case step_kind::msix_write: step_msix_write(); break;
        case step_kind::poll: step_poll(); break;
        case step_kind::drain: step_drain(); break;
        case step_kind::clock_advance:
            rig_.clock.advance(std::chrono::microseconds{rng_.below(20000)});
            break;
        case step_kind::fault_injection: step_fault_injection(); break;
        }
    }

    void end_of_step_checks()
    {
        take_unclaimed();
        const auto csts = rig_.host.csts();
        if (csts.get(csts.cfs)) {
            ++event_counts_["CSTS.CFS = 1 seen"];
            if (strict()) {
                fail("CSTS.CFS = 1 while the host kept to the protocol and no fault was injected");
                return;
            }
            recover("CSTS.CFS");
            return;
        }
        if (!csts.get(csts.rdy)) {
            ++event_counts_["CSTS.RDY = 0 at the end of a step"];
            check_quiet_while_not_ready(8, true);
            if (rng_.percent(50)) {
                recover("CSTS.RDY = 0");
            }
        }
    }

    // ---- the model and its modes -------------------------------------------------------------

    /// The host has kept to the protocol and no DMA fault was injected since the last clean
    /// bring-up: the controller's answers are fully determined, and a host_error or CSTS.CFS is a
    /// failure.
    [[nodiscard]] bool strict() const noexcept { return !dirty_ && !faulted_ && !faults_on_ && !model_lost_; }

    /// The model of queues, Number of Queues and SQ tails follows every host action since the last
    /// reset: statuses that depend on nothing else are checked, faults or not.
    [[nodiscard]] bool model_exact() const noexcept { return !model_lost_; }

    /// The model is exact, the host driver's view of every queue is the controller's (no raw
    /// in-range doorbell, no queue it does not know) and no fault is being injected (a concurrent
    /// poll group may hit one, and the controller fail, at any time): faults may have been
    /// injected earlier in this controller life.
    [[nodiscard]] bool host_view_exact() const noexcept { return model_exact() && !dirty_ && !faults_on_; }

    void lose_model(std::string_view why)
    {
        if (!model_lost_) {
            ++event_counts_["model lost: " + std::string{why}];
        }
        model_lost_ = true;
    }

    /// Every way the controller resets (CC.EN 1→0, NVM Subsystem Reset, Function Level Reset)
    /// deletes every I/O queue and reverts Number of Queues to its default (Base 2.0 3.7.2): the
    /// model is exact again.
    void model_reset()
    {
        model_cqs_.clear();
        model_sqs_.clear();
        granted_.reset();
        io_queue_created_since_enable_ = false;
        model_lost_ = false;
    }

    /// The controller's I/O queues are the model's.
    void compare_queues_with_model()
    {
        if (!model_exact()) {
            return;
        }
        ++event_counts_["queues compared with the model"];
        for (std::uint16_t qid = 1; qid <= max_qid; ++qid) {
            const bool cq = rig_.ctrl.completion_queue_exists(qid);
            const bool sq = rig_.ctrl.submission_queue_exists(qid);
            if (cq != model_cqs_.contains(qid) || sq != model_sqs_.contains(qid)) {
                fail("I/O queue " + std::to_string(qid) + ": the controller has " + (cq ? "a" : "no") +
                     " CQ and " + (sq ? "an" : "no") + " SQ, the model " +
                     (model_cqs_.contains(qid) ? "a" : "no") + " CQ and " +
                     (model_sqs_.contains(qid) ? "an" : "no") + " SQ");
                return;
            }
        }
    }

    void fail(const std::string& what)
    {
        ++failures_;
        std::string recent;
        for (const auto& line : history_) {
            recent += "\n  " + line;
        }
        ADD_FAILURE() << "seed 0x" << std::hex << seed_ << std::dec << ", step " << step_ << " (" << current_
                      << "): " << what << "\nlast steps:" << recent;
    }

    /// Notes what a step did, for the failure message.
    void note(std::string text)
    {
        history_.push_back(std::to_string(step_) + " " + std::string{current_} + ": " + std::move(text));
        if (history_.size() > 40) {
            history_.erase(history_.begin());
        }
    }

    void count_status(spec::status status)
    {
        const std::string_view text = spec::name(status);
        ++status_counts_[text.empty() ? "status 0x" + std::to_string(status.raw) : std::string{text}];
    }

    /// Checks a status the model determines, whenever the model is exact. A command that moves
    /// data may instead end in Data Transfer Error when a DMA access failed while it ran
    /// (`dma_failed`).
    void expect_status(const nt::completion& completion, spec::status expected, std::string_view what,
                       bool dma_failed = false)
    {
        count_status(completion.status());
        if (!model_exact()) {
            return;
        }
        ++event_counts_[strict() ? "statuses checked exactly (strict mode)"
                                 : "statuses checked exactly (model exact, not strict)"];
        if (completion.status().raw == expected.raw) {
            return;
        }
        if (dma_failed && completion.status().raw == dnr(spec::generic_status::data_transfer_error).raw) {
            ++event_counts_["Data Transfer Error after an injected DMA fault"];
            return;
        }
        fail(std::string{what} + ": status " + std::string{spec::name(completion.status())} + " (0x" +
             std::to_string(completion.status().raw) + "), expected " + std::string{spec::name(expected)} +
             " (0x" + std::to_string(expected.raw) + ")");
    }

    /// The SQ Head Pointer of a CQE (Base 2.0 4.6: the SQ's head when the entry was created) for the
    /// command in `slot` of an SQ of `entries` whose host tail is `tail`: the command was fetched,
    /// so the head lies past its slot and no further than the tail.
    [[nodiscard]] static bool sq_head_possible(std::uint32_t head, std::uint32_t slot, std::uint32_t tail,
                                               std::uint32_t entries) noexcept
    {
        const std::uint32_t first = (slot + 1) % entries;
        return head < entries && (head + entries - first) % entries <= (tail + entries - first) % entries;
    }

    void expect_sq_head(const nt::completion& completion, std::uint32_t slot, std::uint32_t tail,
                        std::uint32_t entries, std::string_view what)
    {
        ++event_counts_["CQE SQ heads checked"];
        if (!sq_head_possible(completion.cqe.sq_head, slot, tail, entries)) {
            fail(std::string{what} + ": CQE of command " + std::to_string(completion.cqe.cid) + " on SQ " +
                 std::to_string(completion.cqe.sq_id) + " has SQ head " +
                 std::to_string(completion.cqe.sq_head) + "; the command was in slot " +
                 std::to_string(slot) + " of " + std::to_string(entries) + " and the host's tail is " +
                 std::to_string(tail));
        }
    }

    /// The admin SQ slot holding command `cid`, when exactly one does.
    [[nodiscard]] std::optional<std::uint32_t> admin_slot(std::uint16_t cid) const
    {
        std::optional<std::uint32_t> found;
        for (std::uint32_t i = 0; i < admin_entries_; ++i) {
            const auto cdw0 = rig_.memory.load<std::uint32_t>(asq_ + std::uint64_t{i} * 64U);
            if ((cdw0 >> 16) == cid) {
                if (found) {
                    return std::nullopt;
                }
                found = i;
            }
        }
        return found;
    }

    /// An admin command the host waited for was the last one it submitted: the controller's head
    /// when it completed is the slot after it.
    void expect_admin_sq_head(const nt::completion& completion, std::string_view what)
    {
        if (!model_exact() || admin_entries_ == 0) {
            return;
        }
        if (const auto slot = admin_slot(completion.cqe.cid)) {
            expect_sq_head(completion, *slot, (*slot + 1) % admin_entries_, admin_entries_, what);
        }
    }

    /// An I/O completion: its status and SQ head.
    void expect_io(const nt::completion& completion, const expected_io& expected, std::string_view what)
    {
        expect_status(completion, expected.status, what);
        const auto it = sqs_.find(completion.cqe.sq_id);
        if (failures_ == 0 && model_exact() && it != sqs_.end() && it->second.life == expected.sq_life &&
            it->second.tail_known) {
            expect_sq_head(completion, expected.slot, it->second.tail, it->second.entries, what);
        }
    }

    /// A completion reaped outside a wait: I/O completions are checked against the status their
    /// command was given when it was submitted; the rest (Asynchronous Event Requests) are counted.
    void on_reaped(const nt::completion& completion)
    {
        const std::uint32_t key = (std::uint32_t{completion.cqe.sq_id} << 16) | completion.cqe.cid;
        if (const auto it = expected_io_.find(key); it != expected_io_.end()) {
            expect_io(completion, it->second, "I/O command");
            expected_io_.erase(it);
            return;
        }
        count_status(completion.status());
        if (completion.cqe.sq_id == 0) {
            ++event_counts_["asynchronous event completions"];
        }
    }

    void take_unclaimed()
    {
        auto& unclaimed = rig_.host.unclaimed();
        for (const auto& completion : unclaimed) {
            on_reaped(completion);
        }
        unclaimed.clear();
    }

    nt::completion admin(const spec::submission_queue_entry& sqe, spec::status expected,
                         std::string_view what)
    {
        const std::size_t dma_failures = rig_.dma.failures();
        const auto completion = rig_.host.admin(sqe);
        expect_status(completion, expected, what, rig_.dma.failures() != dma_failures);
        expect_admin_sq_head(completion, what);
        take_unclaimed();
        return completion;
    }

    // ---- the "no completion once RDY reads 0" check -------------------------------------------

    /// Called right after the host read CSTS.RDY = 0 (or CSTS.SHST = 10b when `allow_ready`):
    /// snapshots every completion queue this and the previous controller life used, polls the
    /// controller many times (ringing doorbells in between) and checks that no byte of them
    /// changed, no DMA write and no interrupt happened, and every request is in its pool, for as
    /// long as RDY stays 0.
    void check_quiet_while_not_ready(unsigned polls, bool ring_doorbells, bool allow_ready = false)
    {
        ++event_counts_["quiet checks (RDY = 0 or SHST = 10b)"];
        if (!allow_ready && rig_.ctrl.requests_in_use() != 0) {
            fail("requests_in_use() = " + std::to_string(rig_.ctrl.requests_in_use()) +
                 " while CSTS.RDY = 0");
            return;
        }
        std::vector<std::vector<std::byte>> snapshot;
        snapshot.reserve(watched_.size());
        for (const auto& range : watched_) {
            const auto bytes = rig_.memory.bytes(range.address, range.length);
            snapshot.emplace_back(bytes.begin(), bytes.end());
        }
        const std::size_t writes = rig_.dma.writes();
        const std::uint64_t posted = rig_.ctrl.statistics().completions_posted;
        const std::size_t interrupts = rig_.msix.events().size();
        const bool ready_at_start = rig_.host.csts().get(spec::csts_register::rdy);
        for (unsigned i = 0; i < polls; ++i) {
            // Doorbells written while the controller is not ready must be dropped; they are not
            // written while enabling, when the next poll may make the controller ready and
            // legitimately take them.
            if (ring_doorbells && rig_.ctrl.state() != nvmekit::controller_state::enabling &&
                rng_.percent(40)) {
                const auto qid = static_cast<std::uint16_t>(rng_.below(max_qid + 1U));
                const bool completion_queue = rng_.percent(50);
                const auto offset = completion_queue ? spec::cq_head_doorbell_offset(qid, dstrd_)
                                                     : spec::sq_tail_doorbell_offset(qid, dstrd_);
                rig_.ctrl.mmio_write(offset, 4, rng_.below(4));
            }
            rig_.ctrl.poll();
            if (rng_.percent(50)) {
                rig_.clock.advance(std::chrono::microseconds{rng_.below(5000)});
            }
            if (rig_.host.csts().get(spec::csts_register::rdy) != ready_at_start) {
                ++event_counts_["quiet check ended by a change of RDY"];
                return;
            }
            ++event_counts_["quiet polls"];
            for (std::size_t r = 0; r < watched_.size(); ++r) {
                const auto bytes = rig_.memory.bytes(watched_[r].address, watched_[r].length);
                if (!std::equal(bytes.begin(), bytes.end(), snapshot[r].begin(), snapshot[r].end())) {
                    fail("completion queue memory at 0x" + hex(watched_[r].address) +
                         " changed after the host read CSTS.RDY = 0 (or SHST = 10b)");
                    return;
                }
            }
            if (rig_.dma.writes() != writes || rig_.ctrl.statistics().completions_posted != posted) {
                fail("DMA write or completion posted after the host read CSTS.RDY = 0 (or SHST = 10b)");
                return;
            }
            if (rig_.msix.events().size() != interrupts) {
                fail("interrupt raised after the host read CSTS.RDY = 0 (or SHST = 10b)");
                return;
            }
            if (!allow_ready && rig_.ctrl.requests_in_use() != 0) {
                fail("requests_in_use() != 0 while CSTS.RDY = 0");
                return;
            }
        }
    }

    /// After something that resets the controller: RDY must read 0 (at once: this controller
    /// resets synchronously), then the quiet check, then every request is back in its pool.
    void expect_not_ready_after(std::string_view what)
    {
        if (rig_.host.csts().get(spec::csts_register::rdy)) {
            fail(std::string{what} + " left CSTS.RDY = 1");
            return;
        }
        model_reset();
        check_quiet_while_not_ready(24, true);
        if (rig_.ctrl.requests_in_use() != 0) {
            fail(std::string{what} + ": requests_in_use() = " + std::to_string(rig_.ctrl.requests_in_use()) +
                 " after the reset");
        }
        if (rig_.ctrl.submission_queue_exists(0) || rig_.ctrl.completion_queue_exists(0)) {
            fail(std::string{what} + ": the admin queues still exist after the reset");
        }
    }

    void write_cc_enable(bool enable)
    {
        auto cc = rig_.host.cc();
        cc.set(cc.en, enable);
        rig_.host.write32(spec::register_offset::cc, cc.raw);
    }

    /// CC.EN 1→0 from whatever state the controller is in, with the checks.
    void controller_reset(std::string_view why)
    {
        if (rig_.ctrl.requests_in_use() != 0) {
            ++event_counts_["resets with requests in use (completions held, CQ full)"];
        }
        write_cc_enable(false);
        expect_not_ready_after(why);
    }

    // ---- bring-up and recovery ----------------------------------------------------------------

    void forget_model()
    {
        shadow_doorbells_.reset();
        cqs_.clear();
        sqs_.clear();
        expected_io_.clear();
    }

    /// Returns the memory of the previous lives to the allocator; called only once the controller
    /// is reset (it references none of it) and before the host allocates again.
    void release_dead_memory(bool keep_admin_queues)
    {
        for (const std::uint64_t address : dead_allocations_) {
            if (keep_admin_queues && (address == asq_ || address == acq_)) {
                continue;
            }
            try {
                rig_.memory.deallocate(address);
            } catch (const std::invalid_argument&) {
                fail("test bookkeeping: 0x" + hex(address) + " is not a live host allocation");
            }
        }
        dead_allocations_.clear();
        if (keep_admin_queues) {
            dead_allocations_.insert(asq_);
            dead_allocations_.insert(acq_);
        }
    }

    /// The admin command of `opcode` (with `cid`, or with QID `qid` in CDW10) still in the admin SQ.
    [[nodiscard]] std::optional<spec::submission_queue_entry>
    find_admin_command(std::uint8_t opcode, std::optional<std::uint16_t> cid,
                       std::optional<std::uint16_t> qid) const
    {
        for (std::uint32_t i = 0; i < admin_entries_; ++i) {
            const auto sqe = rig_.memory.load<spec::submission_queue_entry>(asq_ + std::uint64_t{i} * 64U);
            if (sqe.opcode() != opcode || (cid && sqe.command_id() != *cid) ||
                (qid && (sqe.cdw10 & 0xffffU) != *qid)) {
                continue;
            }
            return sqe;
        }
        return std::nullopt;
    }

    /// Learns where the host put the memory of a Create I/O SQ/CQ: each allocation is released
    /// after the next reset, and a completion queue's memory is watched.
    void learn_queue_memory(const spec::submission_queue_entry& sqe, bool completion_queue)
    {
        const auto cdw10 = spec::create_io_queue_cdw10{sqe.cdw10};
        const std::uint32_t entries = cdw10.entries();
        const bool contiguous = completion_queue
                                    ? spec::create_io_cq_cdw11{sqe.cdw11}.get(spec::create_io_cq_cdw11::pc)
                                    : spec::create_io_sq_cdw11{sqe.cdw11}.get(spec::create_io_sq_cdw11::pc);
        const std::size_t bytes = std::size_t{entries} * (completion_queue ? 16U : 64U);
        if (sqe.dptr.prp1 < memory_base || sqe.dptr.prp1 >= memory_base + campaign_memory_size) {
            return; // a raw command's address outside host memory: nothing to learn
        }
        dead_allocations_.insert(sqe.dptr.prp1);
        if (contiguous) {
            if (completion_queue) {
                watch({sqe.dptr.prp1, bytes});
            }
            return;
        }
        const std::size_t pages = (bytes + page - 1) / page;
        for (std::size_t i = 0; i < pages; ++i) {
            const auto address = rig_.memory.load<std::uint64_t>(sqe.dptr.prp1 + i * 8U);
            dead_allocations_.insert(address);
            if (completion_queue) {
                watch({address, static_cast<std::size_t>(page)});
            }
        }
    }

    void watch(memory_range range)
    {
        watched_.push_back(range);
        if (watched_.size() > 48) {
            watched_.erase(watched_.begin());
        }
    }

    bool bring_up()
    {
        nt::host_options options{};
        options.admin_entries = rng_.pick(std::to_array<std::uint32_t>({4, 8, 16, 32, 64}));
        const auto max_pairs =
            static_cast<std::uint16_t>(std::min<std::uint32_t>(4, (options.admin_entries - 2) / 2));
        options.io_queue_pairs = static_cast<std::uint16_t>(rng_.between(1, max_pairs));
        options.io_entries = rng_.pick(std::to_array<std::uint32_t>({2, 3, 4, 8, 16, 64}));
        options.interrupts = rng_.percent(70);
        options.physically_contiguous = true;
        options.shadow_doorbells = rng_.percent(25);
        // Linux clears a new queue's shadow slots; SPDK's driver leaves what the queue that had the
        // QID before wrote there, and the controller must not take it as new work.
        options.clear_shadow_slots = rng_.percent(50);
        clear_shadow_slots_ = options.clear_shadow_slots;
        options.max_polls = 256;
        options.poll_step = 1ms;
        forget_model();
        model_reset();
        release_dead_memory(false);
        ++event_counts_["bring-ups"];
        note("bring-up: admin " + std::to_string(options.admin_entries) + ", pairs " +
             std::to_string(options.io_queue_pairs) + " of " + std::to_string(options.io_entries) +
             (options.shadow_doorbells ? ", shadow doorbells" : "") +
             (options.shadow_doorbells && !options.clear_shadow_slots ? " (slots not cleared)" : ""));
        cc_iosqes_ = 6; // what in_process_host::bring_up enables with
        cc_iocqes_ = 4;
        nt::bring_up_result result{};
        try {
            result = rig_.host.bring_up(options);
        } catch (const nt::host_error&) {
            ++event_counts_["bring-ups that failed"];
            learn_admin_queues(options.admin_entries);
            lose_model("failed bring-up");
            return false;
        }
        learn_admin_queues(options.admin_entries);
        for (std::uint16_t qid = 1; qid <= result.io_queue_pairs; ++qid) {
            const auto create_cq =
                find_admin_command(static_cast<std::uint8_t>(spec::admin_opcode::create_io_cq), {}, qid);
            const auto create_sq =
                find_admin_command(static_cast<std::uint8_t>(spec::admin_opcode::create_io_sq), {}, qid);
            if (!create_cq || !create_sq) {
                fail("bring-up's Create I/O CQ/SQ " + std::to_string(qid) + " not found in the admin SQ");
                return false;
            }
            learn_queue_memory(*create_cq, true);
            learn_queue_memory(*create_sq, false);
            cqs_[qid] = io_cq{options.io_entries};
            sqs_[qid] = io_sq{qid, options.io_entries, ++sq_lives_};
            model_cqs_[qid] = options.io_entries;
            model_sqs_[qid] = qid;
            io_queue_created_since_enable_ = true;
        }
        if (const auto identify =
                find_admin_command(static_cast<std::uint8_t>(spec::admin_opcode::identify), {}, {})) {
            dead_allocations_.insert(identify->dptr.prp1);
        }
        if (const auto dbbuf = find_admin_command(
                static_cast<std::uint8_t>(spec::admin_opcode::doorbell_buffer_config), {}, {})) {
            dead_allocations_.insert(dbbuf->dptr.prp1);
            dead_allocations_.insert(dbbuf->dptr.prp2);
            shadow_doorbells_ = dbbuf->dptr.prp1;
            ++event_counts_["bring-ups with shadow doorbells"];
            if (!clear_shadow_slots_) {
                ++event_counts_["bring-ups with shadow doorbells, new queues' slots not cleared"];
            }
        }
        granted_ = std::pair{result.submission_queues_granted, result.completion_queues_granted};
        dirty_ = false;
        faulted_ = faults_on_;
        return true;
    }

    void learn_admin_queues(std::uint32_t admin_entries)
    {
        asq_ = rig_.host.read64(spec::register_offset::asq);
        acq_ = rig_.host.read64(spec::register_offset::acq);
        admin_entries_ = admin_entries;
        if (asq_ >= memory_base && acq_ >= memory_base) {
            dead_allocations_.insert(asq_);
            dead_allocations_.insert(acq_);
            watch({acq_, std::size_t{admin_entries} * 16U});
        }
    }

    /// Re-enables the controller through the host with the admin queue registers the reset kept
    /// (Base 2.0 3.7.2): in_process_host::enable() clears the admin CQ and its view of the queue.
    bool re_enable_with_kept_admin_queues()
    {
        ++event_counts_["re-enables with the kept admin queues"];
        forget_model();
        release_dead_memory(true);
        rig_.host.disable();
        model_reset(); // Number of Queues not set: every queue up to the limit may be created
        // Some hosts enable with CC.IOSQES/IOCQES other than 6/4 (0 until they set up I/O queues):
        // the controller becomes ready, and Create I/O SQ/CQ refuse the sizes it cannot use.
        cc_iosqes_ = 6;
        cc_iocqes_ = 4;
        if (rng_.percent(20)) {
            cc_iosqes_ = static_cast<std::uint8_t>(rng_.pick(std::to_array<std::uint64_t>({0, 0, 6, 5, 7})));
            cc_iocqes_ = static_cast<std::uint8_t>(rng_.pick(std::to_array<std::uint64_t>({0, 0, 4, 3, 5})));
        }
        if (cc_iosqes_ != 6 || cc_iocqes_ != 4) {
            ++event_counts_["re-enables with CC.IOSQES/IOCQES other than 6/4"];
        }
        try {
            rig_.host.enable(cc_iosqes_, cc_iocqes_);
        } catch (const nt::host_error& error) {
            if (!faults_on_) {
                fail("enable with CC.IOSQES " + std::to_string(cc_iosqes_) + ", IOCQES " +
                     std::to_string(cc_iocqes_) + " and no fault injected: " + error.what());
            }
            lose_model("failed enable");
            return false;
        }
        dirty_ = false;
        faulted_ = faults_on_;
        admin(host_type::identify_command(spec::cns::identify_controller, 0, buffer_a_),
              spec::status::success(), "Identify after re-enable");
        if (rng_.percent(70)) {
            rig_.host.submit(0, host_type::async_event_request_command());
        }
        return true;
    }

    /// After a reset: a full bring-up, or (when the admin queue registers are as the host left
    /// them) an enable that keeps them.
    void re_enable()
    {
        if (!dirty_ && !aqa_changed_ && admin_entries_ != 0 && rng_.percent(60)) {
            if (!re_enable_with_kept_admin_queues()) {
                recover("re-enable failed");
            }
            return;
        }
        if (!bring_up()) {
            recover("bring-up failed");
        }
    }

    /// CC.EN 1→0 (checked), then a bring-up; with fault injection on a failed bring-up is retried
    /// once with faults still on, then with them off, when it must work.
    void recover(std::string_view why)
    {
        ++event_counts_["recoveries: " + std::string{why}];
        for (int attempt = 0; attempt < 3; ++attempt) {
            if (attempt == 2 && faults_on_) {
                stop_faults();
            }
            controller_reset("recovery reset");
            if (failures_ != 0) {
                return;
            }
            if (bring_up()) {
                aqa_changed_ = false;
                return;
            }
            if (!faults_on_) {
                break;
            }
        }
        fail("bring-up failed with fault injection off");
    }

    void finish()
    {
        current_ = "final bring-up";
        stop_faults();
        recover("final");
        if (failures_ != 0) {
            return;
        }
        const std::uint64_t buffer = buffer_a_;
        const auto completion =
            rig_.host.admin(host_type::identify_command(spec::cns::identify_controller, 0, buffer));
        EXPECT_TRUE(completion.ok()) << spec::name(completion.status());
        const auto expected = rig_.ctrl.identify_controller_data();
        EXPECT_EQ(0,
                  std::memcmp(rig_.memory.bytes(buffer, sizeof expected).data(), &expected, sizeof expected));
        rig_.host.shut_down();
        EXPECT_EQ(rig_.host.csts().get(spec::csts_register::shst), spec::shutdown_status::complete);
    }

    // ---- admin commands ---------------------------------------------------------------------

    void step_identify()
    {
        const unsigned cns_choice = static_cast<unsigned>(rng_.below(100));
        spec::cns cns = spec::cns::identify_controller;
        bool cns_valid = true;
        if (cns_choice >= 70 && cns_choice < 85) {
            cns = spec::cns::active_namespace_list;
        } else if (cns_choice >= 85) {
            cns = static_cast<spec::cns>(
                rng_.pick(std::to_array<std::uint8_t>({0x00, 0x03, 0x04, 0x05, 0x14, 0x1f, 0xff})));
            cns_valid = false;
        }
        auto sqe = host_type::identify_command(cns, 0, buffer_a_);
        fill_pattern(buffer_a_);
        fill_pattern(buffer_c_);
        spec::status expected = spec::status::success();
        std::uint64_t first_length = page;
        const unsigned variant = static_cast<unsigned>(rng_.below(100));
        if (variant < 50) {
            ++event_counts_["identify: page-aligned PRP1"];
        } else if (variant < 70) {
            const std::uint64_t offset = 4U * rng_.between(1, 1023);
            sqe.dptr = {buffer_a_ + offset, buffer_c_};
            first_length = page - offset;
            ++event_counts_["identify: PRP1 offset, PRP2 second page"];
        } else if (variant < 78) {
            const std::uint64_t offset = 4U * rng_.between(1, 1023);
            sqe.dptr = {buffer_a_ + offset, buffer_c_ + 4U * rng_.between(1, 1023)};
            expected = dnr(spec::generic_status::prp_offset_invalid);
        } else if (variant < 86) {
            sqe.dptr.prp1 = buffer_a_ + rng_.between(1, 3);
            expected = dnr(spec::generic_status::prp_offset_invalid);
        } else if (variant < 93) {
            sqe.dptr.prp1 = unmapped_address + page * rng_.below(16);
            expected = dnr(spec::generic_status::data_transfer_error);
        } else {
            // Admin commands carry PRPs on PCIe: an SGL is refused.
            sqe.cdw0.set(spec::command_dword0::psdt, spec::data_pointer_type::sgl_contiguous_metadata);
            expected = dnr(spec::generic_status::invalid_field);
        }
        if (!cns_valid) {
            // No namespace exists: NSID 0 is not a namespace for the namespace structures.
            const bool namespace_structure = cns == spec::cns::identify_namespace ||
                                             cns == spec::cns::namespace_id_descriptor_list ||
                                             cns == spec::cns::io_command_set_namespace;
            expected = dnr(namespace_structure ? spec::generic_status::invalid_namespace_or_format
                                               : spec::generic_status::invalid_field);
        }
        const std::size_t dma_failures = rig_.dma.failures();
        const auto completion = admin(sqe, expected, "Identify");
        // The data is exact unless an injected fault hit the transfer.
        if (!model_exact() || rig_.dma.failures() != dma_failures || !completion.ok() || variant >= 70) {
            return;
        }
        ++event_counts_["Identify data checked"];
        std::array<std::byte, page> data{};
        if (cns == spec::cns::identify_controller) {
            const auto identify = rig_.ctrl.identify_controller_data();
            std::memcpy(data.data(), &identify, sizeof identify);
        }
        const auto first = rig_.memory.bytes(sqe.dptr.prp1, first_length);
        bool same = std::equal(first.begin(), first.end(), data.begin());
        if (first_length < page) {
            const auto second = rig_.memory.bytes(buffer_c_, page - first_length);
            same = same && std::equal(second.begin(), second.end(),
                                      data.begin() + static_cast<std::ptrdiff_t>(first_length));
        }
        if (!same) {
            fail("Identify data in host memory differs from the controller's");
        }
    }

    void fill_pattern(std::uint64_t buffer)
    {
        const auto bytes = rig_.memory.bytes(buffer, page);
        std::fill(bytes.begin(), bytes.end(), std::byte{0xa5});
    }

    [[nodiscard]] std::uint16_t allowed_submission_queues() const noexcept
    {
        return granted_ ? granted_->first : max_qid;
    }
    [[nodiscard]] std::uint16_t allowed_completion_queues() const noexcept
    {
        return granted_ ? granted_->second : max_qid;
    }

    void step_get_features()
    {
        const auto fid = static_cast<spec::feature_id>(rng_.pick(
            std::to_array<std::uint8_t>({0x07, 0x07, 0x08, 0x09, 0x09, 0x01, 0x0b, 0x03, 0x7f, 0xc0})));
        const auto select =
            static_cast<spec::feature_select>(rng_.percent(80) ? rng_.below(4) : rng_.between(4, 7));
        auto sqe = host_type::get_features_command(fid, select);
        std::uint16_t vector = 0;
        if (fid == spec::feature_id::interrupt_vector_configuration) {
            vector = static_cast<std::uint16_t>(rng_.percent(80) ? rng_.below(msix_vectors)
                                                                 : rng_.between(msix_vectors, 0xffff));
            sqe.cdw11 = spec::interrupt_vector_configuration{}
                            .with(spec::interrupt_vector_configuration::iv, vector)
                            .raw;
        }
        spec::status expected = spec::status::success();
        const bool known =
            fid == spec::feature_id::number_of_queues || fid == spec::feature_id::interrupt_coalescing ||
            fid == spec::feature_id::interrupt_vector_configuration || fid == spec::feature_id::arbitration ||
            fid == spec::feature_id::async_event_configuration;
        if (!known || static_cast<unsigned>(select) > 3 ||
            (fid == spec::feature_id::interrupt_vector_configuration && vector >= msix_vectors)) {
            expected = dnr(spec::generic_status::invalid_field);
        }
        const auto completion = admin(sqe, expected, "Get Features");
        if (!model_exact() || !completion.ok() || fid != spec::feature_id::number_of_queues) {
            return;
        }
        const auto maximum = spec::number_of_queues::from_counts(max_qid, max_qid).raw;
        std::uint32_t expected_dw0 = maximum;
        if (select == spec::feature_select::current && granted_) {
            expected_dw0 = spec::number_of_queues::from_counts(granted_->first, granted_->second).raw;
        } else if (select == spec::feature_select::supported_capabilities) {
            expected_dw0 =
                spec::feature_capabilities{}.with(spec::feature_capabilities::changeable, true).raw;
        }
        if (completion.cqe.dw0 != expected_dw0) {
            fail("Get Features Number of Queues: dw0 0x" + hex(completion.cqe.dw0) + ", expected 0x" +
                 hex(expected_dw0));
        }
    }

    void step_set_features()
    {
        const unsigned variant = static_cast<unsigned>(rng_.below(100));
        const bool save = rng_.percent(10);
        spec::submission_queue_entry sqe{};
        spec::status expected = spec::status::success();
        std::optional<std::pair<std::uint16_t, std::uint16_t>> grant;
        if (variant < 35) {
            const std::uint32_t sqs = rng_.percent(90) ? rng_.between(1, 12) : 0x10000;
            const std::uint32_t cqs = rng_.percent(90) ? rng_.between(1, 12) : 0x10000;
            sqe = host_type::set_features_command(spec::feature_id::number_of_queues,
                                                  spec::number_of_queues::from_counts(sqs, cqs).raw, save);
            // Number of Queues may be set any number of times after an enable until the first I/O
            // queue is created; from then on until the next reset it is a Command Sequence Error,
            // whether or not those queues were deleted since. The allocation does not change
            // between resets: a repeated request is answered with the first (Base 2.0 5.27.1.5).
            if (sqs == 0x10000 || cqs == 0x10000) {
                expected = dnr(spec::generic_status::invalid_field);
            } else if (io_queue_created_since_enable_) {
                expected = dnr(spec::generic_status::command_sequence_error);
            } else if (granted_) {
                grant = granted_;
            } else {
                grant = std::pair{static_cast<std::uint16_t>(std::min<std::uint32_t>(sqs, max_qid)),
                                  static_cast<std::uint16_t>(std::min<std::uint32_t>(cqs, max_qid))};
            }
        } else if (variant < 60) {
            sqe = host_type::set_features_command(spec::feature_id::interrupt_coalescing,
                                                  rng_.word() & 0xffffU, save);
        } else if (variant < 85) {
            const auto vector = static_cast<std::uint16_t>(
                rng_.percent(80) ? rng_.below(msix_vectors) : rng_.between(msix_vectors, 0xffff));
            sqe = host_type::set_features_command(
                spec::feature_id::interrupt_vector_configuration,
                spec::interrupt_vector_configuration{}
                    .with(spec::interrupt_vector_configuration::iv, vector)
                    .with(spec::interrupt_vector_configuration::cd, rng_.percent(50))
                    .raw,
                save);
            if (vector >= msix_vectors) {
                expected = dnr(spec::generic_status::invalid_field);
            }
        } else {
            const auto fid = static_cast<spec::feature_id>(
                rng_.pick(std::to_array<std::uint8_t>({0x03, 0x0c, 0x7d, 0xff})));
            sqe = host_type::set_features_command(fid, rng_.word(), save);
            expected = dnr(spec::generic_status::invalid_field);
        }
        if (save && variant < 85) { // a feature this controller has, which cannot be saved

            expected = dnr(spec::command_specific_status::feature_not_saveable);
            grant.reset();
        }
        const auto completion = admin(sqe, expected, "Set Features");
        if (grant && completion.ok()) {
            granted_ = grant;
            const auto expected_dw0 = spec::number_of_queues::from_counts(grant->first, grant->second).raw;
            if (model_exact() && completion.cqe.dw0 != expected_dw0) {
                fail("Set Features Number of Queues: dw0 0x" + hex(completion.cqe.dw0) + ", expected 0x" +
                     hex(expected_dw0));
            }
        }
    }

    void step_invalid_admin_opcode()
    {
        auto sqe = host_type::command(spec::admin_opcode::get_log_page);
        sqe.cdw0.set(spec::command_dword0::opc, rng_.pick(unsupported_admin_opcodes));
        sqe.nsid = rng_.word();
        sqe.cdw10 = rng_.word();
        sqe.dptr.prp1 = rng_.next();
        spec::status expected = dnr(spec::generic_status::invalid_opcode);
        if (rng_.percent(20)) {
            sqe.cdw0.set(spec::command_dword0::fuse, static_cast<spec::fused_operation>(rng_.between(1, 3)));
            expected = dnr(spec::generic_status::invalid_field);
        }
        admin(sqe, expected, "unsupported admin command");
    }

    void step_async_event_request()
    {
        // No wait: it completes when an event arrives, or at once with Asynchronous Event Request
        // Limit Exceeded beyond AERL + 1 outstanding requests.
        if (!has_admin_room()) {
            return;
        }
        rig_.host.submit(0, host_type::async_event_request_command());
        if (rng_.percent(50)) {
            rig_.ctrl.poll();
        }
    }

    [[nodiscard]] bool has_admin_room() const { return rig_.host.outstanding(0) + 2 < admin_entries_; }

    // ---- I/O commands -------------------------------------------------------------------------

    [[nodiscard]] std::optional<std::uint16_t> random_io_sq()
    {
        if (sqs_.empty()) {
            return std::nullopt;
        }
        auto it = sqs_.begin();
        std::advance(it, static_cast<std::ptrdiff_t>(rng_.below(sqs_.size())));
        return it->first;
    }

    [[nodiscard]] std::uint32_t room_in(std::uint16_t sqid) const
    {
        const auto& sq = sqs_.at(sqid);
        const std::size_t outstanding = rig_.host.outstanding(sqid);
        // Bound the backlog of a CQ, so draining it stays within the host's max_polls.
        std::size_t on_cq = 0;
        for (const auto& [qid, other] : sqs_) {
            if (other.cqid == sq.cqid) {
                on_cq += rig_.host.outstanding(qid);
            }
        }
        if (outstanding + 1 >= sq.entries || on_cq >= 96) {
            return 0;
        }
        return static_cast<std::uint32_t>(std::min<std::size_t>(sq.entries - 1 - outstanding, 96 - on_cq));
    }

    std::pair<spec::submission_queue_entry, spec::status> random_io_command()
    {
        std::uint8_t opcode = 0;
        const unsigned choice = static_cast<unsigned>(rng_.below(100));
        if (choice < 50) {
            opcode = static_cast<std::uint8_t>(rng_.pick(known_nvm_opcodes));
        } else {
            opcode = static_cast<std::uint8_t>(rng_.below(256));
        }
        spec::submission_queue_entry sqe{};
        sqe.cdw0.set(spec::command_dword0::opc, opcode);
        sqe.nsid = rng_.pick(std::to_array<std::uint32_t>({0, 1, 2, 0xffffffffU, rng_.word()}));
        sqe.dptr = {rng_.next(), rng_.next()};
        sqe.cdw10 = rng_.word();
        sqe.cdw12 = rng_.word();
        spec::status expected = known_nvm_opcode(opcode)
                                    ? dnr(spec::generic_status::invalid_namespace_or_format)
                                    : dnr(spec::generic_status::invalid_opcode);
        if (opcode == static_cast<std::uint8_t>(spec::nvm_opcode::flush) && sqe.nsid == 0xffffffffU) {
            expected = spec::status::success(); // every attached namespace: none here
        }
        return {sqe, expected};
    }

    /// Submits up to `count` commands on `sqid` without waiting; returns how many.
    std::uint32_t submit_burst(std::uint16_t sqid, std::uint32_t count)
    {
        const std::uint32_t submitted = std::min(count, room_in(sqid));
        note("submit " + std::to_string(submitted) + " on SQ " + std::to_string(sqid));
        auto& sq = sqs_.at(sqid);
        for (std::uint32_t i = 0; i < submitted; ++i) {
            const auto [sqe, expected] = random_io_command();
            const std::uint16_t cid = rig_.host.submit(sqid, sqe);
            expected_io_[(std::uint32_t{sqid} << 16) | cid] = expected_io{expected, sq.life, sq.tail};
            sq.tail = (sq.tail + 1) % sq.entries;
        }
        event_counts_["I/O commands submitted"] += submitted;
        return submitted;
    }

    void step_io_batch()
    {
        const auto sqid = random_io_sq();
        if (!sqid) {
            ++event_counts_["I/O steps without an I/O queue"];
            return;
        }
        submit_burst(*sqid, static_cast<std::uint32_t>(rng_.between(1, 24)));
        if (rng_.percent(40)) {
            rig_.ctrl.poll();
        }
    }

    void step_io_wait()
    {
        const auto sqid = random_io_sq();
        if (!sqid || room_in(*sqid) == 0) {
            ++event_counts_["I/O steps without an I/O queue"];
            return;
        }
        const auto [sqe, expected] = random_io_command();
        auto& sq = sqs_.at(*sqid);
        const std::uint32_t slot = sq.tail;
        const std::uint16_t cid = rig_.host.submit(*sqid, sqe);
        sq.tail = (sq.tail + 1) % sq.entries;
        const auto completion = rig_.host.wait_for(*sqid, cid);
        expect_io(completion, expected_io{expected, sq.life, slot}, "I/O command (waited)");
        ++event_counts_["I/O commands submitted"];
        take_unclaimed();
    }

    /// Reaps every completion queue the host knows until its I/O SQs have nothing outstanding,
    /// then, while the host's view is exact, checks that every request is back in its pool.
    void step_drain()
    {
        drain_all();
        if (!host_view_exact() || rig_.ctrl.state() != nvmekit::controller_state::ready) {
            return;
        }
        for (const auto& [sqid, sq] : sqs_) {
            if (rig_.host.outstanding(sqid) != 0) {
                fail("SQ " + std::to_string(sqid) + " still has " +
                     std::to_string(rig_.host.outstanding(sqid)) +
                     " commands without a completion after draining");
                return;
            }
        }
        ++event_counts_["drains checked: every request back in its pool"];
        if (rig_.ctrl.requests_in_use() != 0) {
            fail("requests_in_use() = " + std::to_string(rig_.ctrl.requests_in_use()) +
                 " after the host reaped every completion");
        }
    }

    void drain_all()
    {
        std::vector<nt::completion> reaped;
        for (int round = 0; round < 256; ++round) {
            bool pending = false;
            reaped.clear();
            rig_.host.reap(0, reaped);
            for (const auto& [cqid, cq] : cqs_) {
                rig_.host.reap(cqid, reaped);
            }
            for (const auto& completion : reaped) {
                on_reaped(completion);
            }
            for (const auto& [sqid, sq] : sqs_) {
                pending = pending || rig_.host.outstanding(sqid) != 0;
            }
            if (!pending) {
                rig_.ctrl.poll(); // takes the last CQ head doorbells
                return;
            }
            rig_.clock.advance(1ms);
        }
    }

    /// Reaps the CQ of `sqid` until the SQ has nothing outstanding (a careful host does this
    /// before deleting an SQ, as posted completions would name an SQ it no longer knows).
    void drain_sq(std::uint16_t sqid)
    {
        std::vector<nt::completion> reaped;
        const std::uint16_t cqid = sqs_.at(sqid).cqid;
        for (int round = 0; round < 256 && rig_.host.outstanding(sqid) != 0; ++round) {
            reaped.clear();
            rig_.host.reap(cqid, reaped);
            for (const auto& completion : reaped) {
                on_reaped(completion);
            }
        }
    }

    void step_poll()
    {
        const auto polls = rng_.between(1, 3);
        for (std::uint64_t i = 0; i < polls; ++i) {
            rig_.ctrl.poll();
        }
    }

    // ---- queue creation and deletion --------------------------------------------------------

    /// A new queue starts with tail and head 0, but its shadow doorbells still hold what the host
    /// last wrote for the queue that had the identifier before. in_process_host clears them for the
    /// queues it creates when it behaves as Linux does; the test then does it for the raw Create
    /// commands it builds too. Behaving as SPDK's driver does, neither clears them.
    void clear_shadow_doorbell(std::uint16_t qid, bool completion_queue)
    {
        if (!shadow_doorbells_ || !clear_shadow_slots_ || qid == 0 || qid > max_qid) {
            return;
        }
        const std::uint64_t slot = 2U * std::uint64_t{qid} + (completion_queue ? 1U : 0U);
        rig_.memory.store<std::uint32_t>(*shadow_doorbells_ + slot * (std::uint64_t{4} << dstrd_), 0);
    }

    /// Whether I/O queue `qid` exists, for choosing a command's fields only: the model's answer
    /// while it is exact; once it is lost, the controller's (no status is checked then, and the
    /// host driver still must not be handed a queue it does not know).
    [[nodiscard]] bool exists_for_choice(std::uint16_t qid, bool completion_queue) const
    {
        if (!model_exact()) {
            return completion_queue ? rig_.ctrl.completion_queue_exists(qid)
                                    : rig_.ctrl.submission_queue_exists(qid);
        }
        return completion_queue ? model_cqs_.contains(qid) : model_sqs_.contains(qid);
    }

    [[nodiscard]] std::uint16_t random_new_qid(bool completion_queue)
    {
        const std::uint16_t allowed =
            completion_queue ? allowed_completion_queues() : allowed_submission_queues();
        if (rng_.percent(75)) {
            std::vector<std::uint16_t> free;
            for (std::uint16_t qid = 1; qid <= allowed; ++qid) {
                if (!exists_for_choice(qid, completion_queue)) {
                    free.push_back(qid);
                }
            }
            if (!free.empty()) {
                return free[rng_.below(free.size())];
            }
        }
        return static_cast<std::uint16_t>(rng_.below(max_qid + 3U));
    }

    [[nodiscard]] std::uint32_t random_entries()
    {
        if (rng_.percent(85)) {
            return static_cast<std::uint32_t>(rng_.pick(
                std::to_array<std::uint64_t>({2, 3, 4, 5, 8, 16, 31, 64, rng_.between(2, max_entries)})));
        }
        return rng_.percent(30) ? 1U : static_cast<std::uint32_t>(rng_.between(max_entries + 1, 100));
    }

    /// The status of a Create I/O CQ/SQ from the model, in the controller's order of checks:
    /// identifier (0, above the Number of Queues granted, or in use: Invalid Queue Identifier),
    /// size, entry size, vector or CQ (missing: Completion Queue Invalid), then the queue memory
    /// (Base 2.0 5.4, 5.5).
    [[nodiscard]] spec::status expected_create_status(const spec::submission_queue_entry& sqe,
                                                      bool completion_queue) const
    {
        const auto cdw10 = spec::create_io_queue_cdw10{sqe.cdw10};
        const std::uint16_t qid = cdw10.get(cdw10.qid);
        const std::uint32_t entries = cdw10.entries();
        const std::uint16_t allowed =
            completion_queue ? allowed_completion_queues() : allowed_submission_queues();
        const bool in_use = completion_queue ? model_cqs_.contains(qid) : model_sqs_.contains(qid);
        if (qid == 0 || qid > allowed || in_use) {
            return dnr(spec::command_specific_status::invalid_queue_identifier);
        }
        if (entries < 2 || entries > max_entries) {
            return dnr(spec::command_specific_status::invalid_queue_size);
        }
        // The entry sizes of CC.IOCQES (bits 23:20) and CC.IOSQES (bits 19:16), checked at creation
        // rather than at CC.EN = 1: only 16-byte CQ and 64-byte SQ entries are supported.
        if (completion_queue ? cc_iocqes_ != 4 : cc_iosqes_ != 6) {
            return dnr(spec::command_specific_status::invalid_queue_size);
        }
        bool contiguous = false;
        if (completion_queue) {
            const auto cdw11 = spec::create_io_cq_cdw11{sqe.cdw11};
            if (cdw11.get(cdw11.iv) >= msix_vectors) {
                return dnr(spec::command_specific_status::invalid_interrupt_vector);
            }
            contiguous = cdw11.get(cdw11.pc);
        } else {
            const auto cdw11 = spec::create_io_sq_cdw11{sqe.cdw11};
            const std::uint16_t cqid = cdw11.get(cdw11.cqid);
            if (cqid == 0 || !model_cqs_.contains(cqid)) {
                return dnr(spec::command_specific_status::completion_queue_invalid);
            }
            contiguous = cdw11.get(cdw11.pc);
        }
        const std::uint64_t prp1 = sqe.dptr.prp1;
        const std::size_t bytes = std::size_t{entries} * (completion_queue ? 16U : 64U);
        if (contiguous) {
            if ((prp1 & (page - 1)) != 0) {
                return dnr(spec::generic_status::prp_offset_invalid);
            }
            if (prp1 > ~std::uint64_t{0} - bytes) {
                return dnr(spec::generic_status::invalid_field);
            }
            return spec::status::success();
        }
        if ((prp1 & (page - 1)) != 0) {
            return dnr(spec::generic_status::prp_offset_invalid);
        }
        const std::size_t pages = (bytes + page - 1) / page;
        if (prp1 < memory_base || prp1 + pages * 8U > memory_base + campaign_memory_size) {
            return dnr(spec::generic_status::data_transfer_error);
        }
        for (std::size_t i = 0; i < pages; ++i) {
            if ((rig_.memory.load<std::uint64_t>(prp1 + i * 8U) & (page - 1)) != 0) {
                return dnr(spec::generic_status::prp_offset_invalid);
            }
        }
        return spec::status::success();
    }

    /// A Create I/O CQ/SQ completed: a queue created with success is in the model, and Number of
    /// Queues can no longer be set until the next reset.
    void model_add_queue(const spec::submission_queue_entry& sqe, bool completion_queue)
    {
        const auto cdw10 = spec::create_io_queue_cdw10{sqe.cdw10};
        const std::uint16_t qid = cdw10.get(cdw10.qid);
        if (completion_queue) {
            model_cqs_[qid] = cdw10.entries();
        } else {
            model_sqs_[qid] = spec::create_io_sq_cdw11{sqe.cdw11}.get(spec::create_io_sq_cdw11::cqid);
        }
        io_queue_created_since_enable_ = true;
    }

    /// The expected status of a Delete I/O SQ/CQ from the model: a missing queue is an Invalid
    /// Queue Identifier, a CQ with an SQ still bound to it an Invalid Queue Deletion (Base 2.0
    /// 5.6, 5.7).
    [[nodiscard]] spec::status expected_delete_status(std::uint16_t qid, bool completion_queue) const
    {
        if (qid == 0 || !(completion_queue ? model_cqs_.contains(qid) : model_sqs_.contains(qid))) {
            return dnr(spec::command_specific_status::invalid_queue_identifier);
        }
        if (completion_queue && std::any_of(model_sqs_.begin(), model_sqs_.end(),
                                            [qid](const auto& sq) { return sq.second == qid; })) {
            return dnr(spec::command_specific_status::invalid_queue_deletion);
        }
        return spec::status::success();
    }

    void model_remove_queue(std::uint16_t qid, bool completion_queue)
    {
        if (completion_queue) {
            model_cqs_.erase(qid);
        } else {
            model_sqs_.erase(qid);
        }
    }

    void step_create_cq()
    {
        const std::uint16_t qid = random_new_qid(true);
        const std::uint32_t entries = random_entries();
        const auto vector = static_cast<std::uint16_t>(rng_.percent(90) ? rng_.below(msix_vectors)
                                                                        : rng_.between(msix_vectors, 2047));
        const bool interrupts = rng_.percent(70);
        const bool contiguous = rng_.percent(60);
        if (!has_admin_room()) {
            return;
        }
        if (!exists_for_choice(qid, true)) {
            clear_shadow_doorbell(qid, true);
        }
        note("create CQ " + std::to_string(qid) + " entries " + std::to_string(entries) + " vector " +
             std::to_string(vector) + (contiguous ? "" : " PRP list"));
        const std::size_t dma_failures = rig_.dma.failures();
        const auto completion = rig_.host.create_io_cq(qid, entries, vector, interrupts, contiguous);
        take_unclaimed();
        const auto sqe = find_admin_command(static_cast<std::uint8_t>(spec::admin_opcode::create_io_cq),
                                            completion.cqe.cid, {});
        if (!sqe) {
            if (strict()) {
                fail("Create I/O CQ not found in the admin SQ");
            }
            return;
        }
        // The expected status needs the PRP1 the host chose, read back from the admin SQ.
        const char* what = contiguous ? "Create I/O CQ" : "Create I/O CQ (PRP list)";
        expect_status(completion, expected_create_status(*sqe, true), what,
                      rig_.dma.failures() != dma_failures);
        expect_admin_sq_head(completion, what);
        const bool created = completion.ok();
        if (created) {
            cqs_[qid] = io_cq{entries};
            model_add_queue(*sqe, true);
        }
        learn_queue_memory(*sqe, true);
        ++event_counts_[created ? "CQs created" : "CQ creations refused"];
    }

    void step_create_sq()
    {
        const std::uint16_t qid = random_new_qid(false);
        const std::uint32_t entries = random_entries();
        std::uint16_t cqid = 0;
        if (!cqs_.empty() && rng_.percent(85)) {
            auto it = cqs_.begin();
            std::advance(it, static_cast<std::ptrdiff_t>(rng_.below(cqs_.size())));
            cqid = it->first;
        } else {
            cqid = static_cast<std::uint16_t>(rng_.below(max_qid + 2U));
            if (exists_for_choice(cqid, true) && !cqs_.contains(cqid)) {
                cqid = 0; // a CQ the host does not know (after a raw create) would break its checks
            }
        }
        const bool contiguous = rng_.percent(60);
        if (!has_admin_room()) {
            return;
        }
        if (!exists_for_choice(qid, false)) {
            clear_shadow_doorbell(qid, false);
        }
        note("create SQ " + std::to_string(qid) + " on CQ " + std::to_string(cqid) + " entries " +
             std::to_string(entries) + (contiguous ? "" : " PRP list"));
        const std::size_t dma_failures = rig_.dma.failures();
        const auto completion = rig_.host.create_io_sq(qid, cqid, entries, contiguous);
        take_unclaimed();
        const auto sqe = find_admin_command(static_cast<std::uint8_t>(spec::admin_opcode::create_io_sq),
                                            completion.cqe.cid, {});
        if (!sqe) {
            if (strict()) {
                fail("Create I/O SQ not found in the admin SQ");
            }
            return;
        }
        const char* what = contiguous ? "Create I/O SQ" : "Create I/O SQ (PRP list)";
        expect_status(completion, expected_create_status(*sqe, false), what,
                      rig_.dma.failures() != dma_failures);
        expect_admin_sq_head(completion, what);
        const bool created = completion.ok();
        if (created) {
            sqs_[qid] = io_sq{cqid, entries, ++sq_lives_};
            model_add_queue(*sqe, false);
        }
        learn_queue_memory(*sqe, false);
        ++event_counts_[created ? "SQs created" : "SQ creations refused"];
    }

    void step_delete_sq()
    {
        std::uint16_t qid = 0;
        if (const auto known = random_io_sq(); known && rng_.percent(80)) {
            qid = *known;
        } else {
            qid = static_cast<std::uint16_t>(
                rng_.pick(std::to_array<std::uint64_t>({0, 0xffff, rng_.below(max_qid + 3U)})));
            if (exists_for_choice(qid, false) && !sqs_.contains(qid)) {
                qid = 0;
            }
        }
        const spec::status expected = expected_delete_status(qid, false);
        if (sqs_.contains(qid) && rig_.host.outstanding(qid) != 0) {
            if (rng_.percent(15)) {
                // Completions already posted name an SQ the host will no longer know, and held
                // ones are dropped: the host driver cannot follow that, so the session leaves
                // strict mode.
                ++event_counts_["SQ deletions with commands outstanding"];
                dirty_ = true;
            } else {
                drain_sq(qid);
            }
        }
        note("delete SQ " + std::to_string(qid) + ", outstanding " +
             std::to_string(rig_.host.outstanding(qid)) + ", requests in use " +
             std::to_string(rig_.ctrl.requests_in_use()));
        const auto completion = rig_.host.delete_io_sq(qid);
        take_unclaimed();
        expect_status(completion, expected, "Delete I/O SQ");
        expect_admin_sq_head(completion, "Delete I/O SQ");
        if (completion.ok()) {
            sqs_.erase(qid);
            model_remove_queue(qid, false);
            ++event_counts_["SQs deleted"];
        }
    }

    void step_delete_cq()
    {
        std::uint16_t qid = 0;
        std::vector<std::uint16_t> unbound;
        for (const auto& entry : cqs_) {
            const std::uint16_t cqid = entry.first;
            if (std::none_of(sqs_.begin(), sqs_.end(),
                             [cqid](const auto& sq) { return sq.second.cqid == cqid; })) {
                unbound.push_back(cqid);
            }
        }
        if (!unbound.empty() && rng_.percent(70)) {
            qid = unbound[rng_.below(unbound.size())];
        } else if (!cqs_.empty() && rng_.percent(70)) {
            auto it = cqs_.begin();
            std::advance(it, static_cast<std::ptrdiff_t>(rng_.below(cqs_.size())));
            qid = it->first;
        } else {
            qid = static_cast<std::uint16_t>(
                rng_.pick(std::to_array<std::uint64_t>({0, 0xffff, rng_.below(max_qid + 3U)})));
            if (exists_for_choice(qid, true) && !cqs_.contains(qid)) {
                qid = 0;
            }
        }
        const spec::status expected = expected_delete_status(qid, true);
        note("delete CQ " + std::to_string(qid));
        const auto completion = rig_.host.delete_io_cq(qid);
        take_unclaimed();
        expect_status(completion, expected, "Delete I/O CQ");
        expect_admin_sq_head(completion, "Delete I/O CQ");
        if (completion.ok()) {
            cqs_.erase(qid);
            model_remove_queue(qid, true);
            ++event_counts_["CQs deleted"];
        }
    }

    /// Create/Delete commands with fields the host driver never builds, sent as raw admin commands.
    void step_invalid_queue_command()
    {
        if (!has_admin_room()) {
            return;
        }
        const unsigned variant = static_cast<unsigned>(rng_.below(11));
        const bool completion_queue = variant == 8 ? rng_.percent(50) : variant % 2 == 0;
        spec::submission_queue_entry sqe{};
        std::uint16_t qid = random_new_qid(completion_queue);
        std::uint32_t entries = static_cast<std::uint32_t>(rng_.between(2, max_entries));
        bool contiguous = true;
        std::uint64_t prp1 = buffer_b_;
        std::uint16_t vector = static_cast<std::uint16_t>(rng_.below(msix_vectors));
        std::uint16_t cqid = cqs_.empty() ? 0 : cqs_.begin()->first;
        bool unmapped_queue = false;
        switch (variant) {
        case 0: entries = rng_.percent(50) ? 1U : 65536U; break;
        case 1: prp1 = buffer_b_ + rng_.between(1, page - 1); break;
        case 2: prp1 = 0xffff'ffff'ffff'f000ULL; break;
        case 3: cqid = 0; break;
        case 4:
            contiguous = false;
            prp1 = rng_.percent(50) ? buffer_b_ + 8U * rng_.between(1, 511) : unmapped_address;
            break;
        case 5: qid = 0xffff; break;
        case 6: {
            contiguous = false;
            prp1 = buffer_b_;
            const auto list = rig_.memory.bytes(buffer_b_, page);
            std::fill(list.begin(), list.end(), std::byte{0});
            rig_.memory.store<std::uint64_t>(buffer_b_, buffer_c_ + 8U * rng_.between(1, 511));
            break;
        }
        case 7:
            sqe = host_type::delete_queue_command(
                rng_.percent(50) ? spec::admin_opcode::delete_io_sq : spec::admin_opcode::delete_io_cq,
                static_cast<std::uint16_t>(
                    rng_.pick(std::to_array<std::uint64_t>({0, 0xffff, max_qid + 1U}))));
            break;
        case 8:
            // A queue whose memory is not host memory: the controller cannot know; the first
            // access fails and the controller reports CSTS.CFS.
            prp1 = unmapped_address;
            unmapped_queue = true;
            break;
        case 9: break; // a fused Create: CDW0.FUSE is set once the command is built
        default: vector = static_cast<std::uint16_t>(rng_.between(msix_vectors, 0xffff)); break;
        }
        if (variant != 7) {
            if (!exists_for_choice(qid, completion_queue)) {
                clear_shadow_doorbell(qid, completion_queue);
            }
            sqe = completion_queue ? create_cq_command(qid, entries, prp1, contiguous, vector)
                                   : create_sq_command(qid, cqid, entries, prp1, contiguous);
            if (variant == 9) {
                sqe.cdw0.set(spec::command_dword0::fuse, spec::fused_operation::first);
            }
        }
        spec::status expected = spec::status::success();
        if (variant == 9) {
            expected = dnr(spec::generic_status::invalid_field);
        } else if (variant == 7) {
            expected = dnr(spec::command_specific_status::invalid_queue_identifier);
        } else {
            expected = expected_create_status(sqe, completion_queue);
        }
        const auto completion = admin(sqe, expected, "raw queue command");
        ++event_counts_["raw queue commands"];
        if (!completion.ok()) {
            return;
        }
        if (variant == 7) {
            model_remove_queue(static_cast<std::uint16_t>(sqe.cdw10 & 0xffffU),
                               sqe.opcode() == static_cast<std::uint8_t>(spec::admin_opcode::delete_io_cq));
        } else {
            model_add_queue(sqe, completion_queue);
        }
        // The controller now has a queue the host driver does not know.
        dirty_ = true;
        ++event_counts_["raw queue commands that created a queue"];
        if (unmapped_queue) {
            unmapped_queue_created(qid, completion_queue, entries);
        }
    }

    /// Uses a queue at an unmapped address: an unmapped SQ (on a CQ the host knows) gets a tail
    /// doorbell and its fetch fails; an unmapped CQ gets an SQ in host memory with one command,
    /// whose completion cannot be posted. Either way CSTS.CFS must be set.
    void unmapped_queue_created(std::uint16_t qid, bool completion_queue, std::uint32_t entries)
    {
        std::uint16_t sqid = qid;
        if (completion_queue) {
            sqid = random_new_qid(false);
            if (!exists_for_choice(sqid, false)) {
                clear_shadow_doorbell(sqid, false);
            }
            const auto sqe = create_sq_command(sqid, qid, 2, buffer_b_);
            if (!admin(sqe, expected_create_status(sqe, false), "SQ on an unmapped CQ").ok()) {
                return;
            }
            model_add_queue(sqe, false);
            entries = 2;
            rig_.memory.store(buffer_b_, spec::submission_queue_entry{});
        }
        const auto tail = static_cast<std::uint32_t>(rng_.between(1, entries - 1));
        if (shadow_doorbells_) {
            // With shadow doorbells on, the controller takes the tail from the shadow buffer.
            rig_.memory.store<std::uint32_t>(*shadow_doorbells_ + 2U * sqid * (std::uint64_t{4} << dstrd_),
                                             tail);
        }
        rig_.ctrl.mmio_write(spec::sq_tail_doorbell_offset(sqid, dstrd_), 4, tail);
        rig_.ctrl.poll();
        const auto csts = rig_.host.csts();
        ++event_counts_["unmapped queues used"];
        if (!csts.get(csts.cfs)) {
            fail("a queue at an unmapped address was used without CSTS.CFS = 1");
        }
    }

    // ---- doorbells --------------------------------------------------------------------------

    void step_doorbell()
    {
        const bool completion_queue = rng_.percent(50);
        std::uint16_t qid = 0;
        if (rng_.percent(60)) {
            if (completion_queue && !cqs_.empty() && rng_.percent(70)) {
                auto it = cqs_.begin();
                std::advance(it, static_cast<std::ptrdiff_t>(rng_.below(cqs_.size())));
                qid = it->first;
            } else if (!completion_queue && !sqs_.empty() && rng_.percent(70)) {
                auto it = sqs_.begin();
                std::advance(it, static_cast<std::ptrdiff_t>(rng_.below(sqs_.size())));
                qid = it->first;
            }
        } else {
            qid = static_cast<std::uint16_t>(rng_.below(max_qid + 4U));
        }
        // The queue's size when the host knows the queue.
        std::optional<std::uint32_t> entries;
        if (qid == 0) {
            entries = admin_entries_;
        } else if (completion_queue && cqs_.contains(qid)) {
            entries = cqs_.at(qid).entries;
        } else if (!completion_queue && sqs_.contains(qid)) {
            entries = sqs_.at(qid).entries;
        }
        std::uint64_t value = 0;
        const unsigned kind = static_cast<unsigned>(rng_.below(100));
        if (kind < 55) {
            value = entries ? *entries + rng_.below(70000) : rng_.below(70000);
        } else if (kind < 70) {
            value = rng_.pick(std::to_array<std::uint64_t>({0xffffffffU, 0x10000, 0x8000'0000U, 65}));
        } else if (kind < 90) {
            value = entries ? rng_.below(*entries) : rng_.below(64);
        } else {
            value = rng_.word();
        }
        std::uint64_t offset = completion_queue ? spec::cq_head_doorbell_offset(qid, dstrd_)
                                                : spec::sq_tail_doorbell_offset(qid, dstrd_);
        unsigned width = 4;
        const bool bad_access = rng_.percent(10);
        if (bad_access) {
            ++event_counts_["doorbell writes with a bad width or offset"];
            if (rng_.percent(50)) {
                width = static_cast<unsigned>(rng_.pick(std::to_array<std::uint64_t>({1, 2, 8})));
            } else {
                offset += rng_.between(1, 3);
            }
        }
        const bool exists = qid == 0 || exists_for_choice(qid, completion_queue);
        // A doorbell of a missing queue, above the limit or not, is a write to an invalid doorbell
        // register (Base 2.0 5.2); a bad width or offset never reaches the doorbells.
        const bool decodable = !bad_access;
        bool invalid = false;
        if (decodable) {
            if (!exists) {
                invalid = true;
            } else if (entries && value >= *entries) {
                invalid = true;
            } else {
                // A value inside the queue moves the controller's tail or head where the host
                // did not put it: the session leaves strict mode. The controller may run stale
                // commands of an SQ whose tail moved: admin ones may create or delete queues.
                dirty_ = true;
                ++event_counts_["doorbell writes with an in-range value"];
                if (!completion_queue && qid == 0) {
                    lose_model("in-range admin SQ tail doorbell");
                } else if (!completion_queue && sqs_.contains(qid)) {
                    sqs_.at(qid).tail_known = false;
                }
            }
        }
        note(std::string{"doorbell "} + (completion_queue ? "CQ " : "SQ ") + std::to_string(qid) + " value " +
             std::to_string(value) + " width " + std::to_string(width) + " offset 0x" + hex(offset));
        // The doorbell channel keeps the latest valid value per doorbell until the next poll, so a
        // raw in-range write would replace the host driver's own pending doorbell and leave the
        // driver's view of the queue wrong: let the driver's value be taken first.
        rig_.ctrl.poll();
        const bool ready = rig_.ctrl.state() == nvmekit::controller_state::ready;
        const std::uint64_t invalid_before = rig_.ctrl.statistics().invalid_doorbells;
        rig_.ctrl.mmio_write(offset, width, value);
        if (!ready) {
            ++event_counts_["doorbell writes while not ready"];
            return;
        }
        rig_.ctrl.poll();
        const std::uint64_t counted = rig_.ctrl.statistics().invalid_doorbells - invalid_before;
        event_counts_["invalid doorbell writes"] += invalid ? 1 : 0;
        // An in-range value is invalid or not depending on what the controller has posted (a CQ
        // head may not pass the last entry posted): only the other writes are checked.
        const bool in_range = decodable && !invalid;
        if (host_view_exact() && !in_range && counted != (invalid ? 1U : 0U)) {
            fail("doorbell write qid " + std::to_string(qid) + (completion_queue ? " CQ" : " SQ") +
                 " value " + std::to_string(value) + " counted " + std::to_string(counted) +
                 " invalid doorbells, expected " + (invalid ? "1" : "0"));
        }
    }

    // ---- resets -----------------------------------------------------------------------------

    void step_controller_reset()
    {
        const unsigned variant = static_cast<unsigned>(rng_.below(4));
        if (variant >= 1 && rig_.ctrl.state() == nvmekit::controller_state::ready) {
            // Commands in flight at the reset: submitted and not fetched, or completed and held
            // because their CQ is full.
            for (const auto& [sqid, sq] : sqs_) {
                submit_burst(sqid, static_cast<std::uint32_t>(rng_.between(1, 16)));
            }
            for (unsigned poll = 1; poll < variant; ++poll) {
                rig_.ctrl.poll();
            }
        }
        controller_reset("CC.EN 1→0");
        if (failures_ == 0) {
            re_enable();
        }
    }

    void step_shutdown()
    {
        const bool abrupt = rng_.percent(30);
        if (abrupt) {
            auto cc = rig_.host.cc();
            cc.set(cc.shn, spec::shutdown_notification::abrupt);
            rig_.host.write32(spec::register_offset::cc, cc.raw);
            ++event_counts_["abrupt shutdowns"];
        } else {
            rig_.host.shut_down();
            forget_model();
            ++event_counts_["normal shutdowns"];
        }
        const auto csts = rig_.host.csts();
        if (strict() && csts.get(csts.shst) != spec::shutdown_status::complete) {
            fail("CSTS.SHST is not 10b after the shutdown");
            return;
        }
        // Shutdown complete: the controller processes nothing until a reset, so nothing may reach
        // the completion queues (RDY still reads 1).
        check_quiet_while_not_ready(16, true, true);
        if (failures_ == 0) {
            controller_reset("reset after shutdown");
        }
        if (failures_ == 0) {
            re_enable();
        }
    }

    void step_subsystem_reset()
    {
        const bool real = rng_.percent(85);
        const std::uint32_t value = real ? spec::nvm_subsystem_reset_value : rng_.word();
        const bool was_ready = rig_.host.csts().get(spec::csts_register::rdy);
        rig_.host.write32(spec::register_offset::nssr, value);
        if (!real && value != spec::nvm_subsystem_reset_value) {
            if (was_ready && !rig_.host.csts().get(spec::csts_register::rdy)) {
                fail("an NSSR write of a value other than \"NVMe\" reset the controller");
            }
            return;
        }
        ++event_counts_["NVM subsystem resets"];
        if (!rig_.host.csts().get(spec::csts_register::nssro)) {
            fail("CSTS.NSSRO not set after an NVM Subsystem Reset");
        }
        expect_not_ready_after("NSSR");
        if (failures_ == 0 && !bring_up()) {
            recover("bring-up after NSSR failed");
        }
    }

    void step_function_level_reset()
    {
        rig_.ctrl.function_level_reset();
        ++event_counts_["function level resets"];
        if (rig_.ctrl.msix().enabled()) {
            fail("MSI-X still enabled after a Function Level Reset");
        }
        expect_not_ready_after("FLR");
        if (failures_ == 0 && !bring_up()) {
            recover("bring-up after FLR failed");
        }
    }

    // ---- registers and MSI-X ----------------------------------------------------------------

    void step_register_write()
    {
        const unsigned variant = static_cast<unsigned>(rng_.below(100));
        if (variant < 20) {
            rig_.host.write32(spec::register_offset::cc, rng_.word());
            dirty_ = true;
            lose_model("CC written");
            ++event_counts_["CC written with a random value"];
        } else if (variant < 35) {
            auto cc = rig_.host.cc();
            cc.set(cc.en, !cc.get(cc.en));
            rig_.host.write32(spec::register_offset::cc, cc.raw);
            dirty_ = true;
            lose_model("CC written");
            ++event_counts_["CC.EN toggled"];
        } else if (variant < 45) {
            auto cc = rig_.host.cc();
            cc.set(cc.shn, static_cast<spec::shutdown_notification>(rng_.below(4)));
            rig_.host.write32(spec::register_offset::cc, cc.raw);
            dirty_ = true;
            lose_model("CC written");
            ++event_counts_["CC.SHN written"];
        } else if (variant < 60) {
            rig_.host.write32(spec::register_offset::aqa,
                              rng_.percent(50) ? rng_.word() : rng_.word() & 0x0fff0fffU);
            aqa_changed_ = true;
            ++event_counts_["AQA written"];
        } else if (variant < 85) {
            rig_.host.write32(rng_.percent(50) ? spec::register_offset::intms : spec::register_offset::intmc,
                              rng_.word());
            ++event_counts_["INTMS/INTMC written"];
        } else {
            const std::uint64_t offset = rng_.below(0x1000);
            const auto width = static_cast<unsigned>(rng_.pick(std::to_array<std::uint64_t>({1, 2, 4, 8})));
            rig_.ctrl.mmio_write(offset, width, rng_.next());
            if (offset + width > 0x14 && offset < 0x38) {
                dirty_ = true;
                lose_model("CC written");
                aqa_changed_ = true;
            }
            ++event_counts_["random BAR0 register writes"];
            static_cast<void>(rig_.ctrl.mmio_read(rng_.below(0x1000), width));
        }
    }

    void step_msix_write()
    {
        const unsigned variant = static_cast<unsigned>(rng_.below(100));
        const std::uint64_t table = rig_.ctrl.msix_table_offset();
        if (variant < 50) {
            const std::uint64_t vector = rng_.below(msix_vectors + 2U);
            const std::uint64_t dword = rng_.below(4);
            const unsigned width = dword % 2 == 0 && rng_.percent(20) ? 8U : 4U;
            std::uint64_t value = rng_.next();
            if (dword == 3 && rng_.percent(70)) {
                value = rng_.below(2); // Vector Control: mask or unmask
            }
            rig_.ctrl.mmio_write(table + vector * 16U + dword * 4U, width, value);
            ++event_counts_["MSI-X table writes"];
        } else if (variant < 65) {
            rig_.ctrl.set_msix_control(rng_.percent(80), rng_.percent(20));
            ++event_counts_["MSI-X control changes"];
        } else if (variant < 80) {
            rig_.ctrl.mmio_write(rig_.ctrl.msix_pba_offset() + 8U * rng_.below(3), 8, rng_.next());
            ++event_counts_["MSI-X PBA writes"];
        } else {
            static_cast<void>(rig_.ctrl.mmio_read(table + rng_.below(msix_vectors * 16U + 64U), 4));
            static_cast<void>(rig_.ctrl.mmio_read(rig_.ctrl.msix_pba_offset() + rng_.below(64), 8));
            static_cast<void>(rig_.ctrl.mmio_read(rng_.next(), 4));
            rig_.ctrl.mmio_write(rig_.ctrl.bar0_size() + rng_.below(1U << 20), 4, rng_.word());
            ++event_counts_["MSI-X reads and writes past BAR0"];
        }
    }

    // ---- DMA fault injection ------------------------------------------------------------------

    void stop_faults()
    {
        rig_.dma.clear_faults();
        faults_on_ = false;
    }

    void step_fault_injection()
    {
        if (faults_on_) {
            stop_faults();
            ++event_counts_["fault injection off"];
            return;
        }
        faults_on_ = true;
        faulted_ = true;
        const unsigned variant = static_cast<unsigned>(rng_.below(100));
        if (variant < 45) {
            const double probability = rng_.pick(std::to_array<double>({0.001, 0.005, 0.02, 0.1}));
            const auto kinds = rng_.pick(std::to_array<nt::access_kind>(
                {nt::access_kind::read, nt::access_kind::write, nt::access_kind::any}));
            rig_.dma.fail_randomly(probability, rng_.next(), kinds);
            ++event_counts_["fault injection on: fail_randomly"];
        } else if (variant < 80) {
            std::vector<memory_range> targets{{buffer_a_, static_cast<std::size_t>(page)}};
            targets.push_back({asq_, std::size_t{admin_entries_} * 64U});
            for (const auto& range : watched_) {
                targets.push_back(range);
            }
            const auto& target = targets[rng_.below(targets.size())];
            rig_.dma.fail_range(target.address, target.length,
                                rng_.pick(std::to_array<nt::access_kind>(
                                    {nt::access_kind::read, nt::access_kind::write, nt::access_kind::any})));
            ++event_counts_["fault injection on: fail_range on a queue or buffer"];
        } else {
            rig_.dma.fail_nth(rng_.between(1, 40));
            ++event_counts_["fault injection on: fail_nth"];
        }
    }

    [[nodiscard]] static std::string hex(std::uint64_t value)
    {
        char text[24];
        std::snprintf(text, sizeof text, "%llx", static_cast<unsigned long long>(value));
        return text;
    }

    splitmix64 rng_;
    std::uint64_t seed_;
    random_rig rig_;
    unsigned dstrd_ = 0;

    std::size_t step_ = 0;
    std::string_view current_ = "start";
    std::size_t failures_ = 0;

    bool faults_on_ = false;
    bool faulted_ = false;
    bool dirty_ = false;
    bool aqa_changed_ = false;
    std::optional<std::pair<std::uint16_t, std::uint16_t>> granted_{};

    std::optional<std::uint64_t> shadow_doorbells_{};
    std::uint64_t asq_ = 0;
    std::uint64_t acq_ = 0;
    std::uint32_t admin_entries_ = 0;
    std::map<std::uint16_t, io_cq> cqs_{};
    std::map<std::uint16_t, io_sq> sqs_{};
    std::map<std::uint32_t, expected_io> expected_io_{};
    /// A completion posted before its SQ was deleted may be reaped once another SQ has the QID.
    std::uint64_t sq_lives_ = 0;

    // The model of the controller's I/O queues (the host driver's cqs_/sqs_ above are the ones it
    // knows and uses; a raw Create adds a queue to the model only).
    std::map<std::uint16_t, std::uint32_t> model_cqs_{}; ///< CQ → entries
    std::map<std::uint16_t, std::uint16_t> model_sqs_{}; ///< SQ → its CQ
    bool io_queue_created_since_enable_ = false;         ///< Number of Queues can no longer be set
    std::uint8_t cc_iosqes_ = 6;                         ///< CC.IOSQES of the last enable
    std::uint8_t cc_iocqes_ = 4;
    bool clear_shadow_slots_ = true; ///< the host clears a new queue's shadow slots (Linux) or not (SPDK)
    bool model_lost_ = false;
    std::vector<memory_range> watched_{};
    std::set<std::uint64_t> dead_allocations_{};
    std::uint64_t buffer_a_ = 0;
    std::uint64_t buffer_b_ = 0;
    std::uint64_t buffer_c_ = 0;

    std::vector<std::string> history_{};
    std::map<std::string, std::uint64_t> step_counts_{};
    std::map<std::string, std::uint64_t> status_counts_{};
    std::map<std::string, std::uint64_t> event_counts_{};
};

class controller_random : public ::testing::TestWithParam<seed_setup> {};

TEST_P(controller_random, survives_interleaved_host_actions_with_dma_faults)
{
    const auto& setup = GetParam();
    const auto started = std::chrono::steady_clock::now();
    campaign run{setup};
    run.run(steps_per_seed);
    const auto elapsed =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started);

    std::uint64_t steps = 0;
    for (const auto& [name, count] : run.step_counts()) {
        steps += count;
        RecordProperty("step." + name, static_cast<int>(count));
    }
    for (const auto& [name, count] : run.status_counts()) {
        RecordProperty("status." + name, static_cast<int>(count));
    }
    for (const auto& [name, count] : run.event_counts()) {
        RecordProperty("event." + name, static_cast<int>(count));
    }
    std::printf("[ summary  ] seed 0x%llx: %llu steps in %lld ms\n",
                static_cast<unsigned long long>(setup.seed), static_cast<unsigned long long>(steps),
                static_cast<long long>(elapsed.count()));
    for (const auto& [name, count] : run.step_counts()) {
        std::printf("[ step     ] %-28s %llu\n", name.c_str(), static_cast<unsigned long long>(count));
    }
    for (const auto& [name, count] : run.status_counts()) {
        std::printf("[ status   ] %-44s %llu\n", name.c_str(), static_cast<unsigned long long>(count));
    }
    for (const auto& [name, count] : run.event_counts()) {
        std::printf("[ event    ] %-56s %llu\n", name.c_str(), static_cast<unsigned long long>(count));
    }
    const auto& statistics = run.controller().statistics();
    std::printf("[ ctrl     ] commands %llu, completions posted %llu, held %llu, invalid doorbells %llu, DMA "
                "errors %llu, "
                "host protocol errors %llu, DMA failures injected or unmapped %zu\n",
                static_cast<unsigned long long>(statistics.commands),
                static_cast<unsigned long long>(statistics.completions_posted),
                static_cast<unsigned long long>(statistics.completions_held),
                static_cast<unsigned long long>(statistics.invalid_doorbells),
                static_cast<unsigned long long>(statistics.dma_errors),
                static_cast<unsigned long long>(statistics.host_protocol_errors), run.dma().failures());
    std::fflush(stdout);

    EXPECT_EQ(run.failures(), 0U);
    EXPECT_GE(steps, 10000U);
    // The checks must not silently stop happening.
    const auto count = [&](const char* name) {
        const auto it = run.event_counts().find(name);
        return it == run.event_counts().end() ? std::uint64_t{0} : it->second;
    };
    EXPECT_GE(count("steps started in strict mode"), min_strict_steps);
    EXPECT_GE(count("steps started with the model exact"), min_model_exact_steps);
    EXPECT_GE(count("statuses checked exactly (strict mode)"), min_strict_statuses);
    EXPECT_GE(count("statuses checked exactly (model exact, not strict)"), min_model_statuses);
    EXPECT_GE(count("CQE SQ heads checked"), min_sq_heads);
    EXPECT_GE(count("Identify data checked"), min_identify_data);
    EXPECT_GE(count("drains checked: every request back in its pool"), min_drains);
}

nvmekit::controller_config config_with(unsigned dstrd, std::chrono::nanoseconds ready_delay)
{
    nvmekit::controller_config config{};
    config.doorbell_stride = static_cast<std::uint8_t>(dstrd);
    config.ready_delay = ready_delay;
    return config;
}

INSTANTIATE_TEST_SUITE_P(seeds, controller_random,
                         ::testing::Values(seed_setup{0x6e766d656b697401ULL, config_with(0, 0ns)},
                                           seed_setup{0x00c0ffee12345678ULL, config_with(1, 2ms)},
                                           seed_setup{0x5eed5eed5eed5eedULL, config_with(2, 0ns)}),
                         [](const ::testing::TestParamInfo<seed_setup>& info) {
                             return "seed" + std::to_string(info.index);
                         });

/// A controller and host with the campaign's traits, brought up with one queue pair of 2 entries.
class controller_bug_repro : public ::testing::Test {
protected:
    controller_bug_repro()
    {
        r.dma.set_recording(false);
        r.host.bring_up({.io_queue_pairs = 1, .admin_entries = 8, .io_entries = 2, .max_polls = 64});
    }

    random_rig r{{}, std::size_t{1} << 20};
};

// Regression: a doorbell written while the controller is disabled (CC.EN = 0, CSTS.RDY = 0) and not
// polled before the next CC.EN 0→1 used to be applied by the first poll after the enable, so the
// new admin SQ (head = tail = 0, Base 2.0 3.5.1) took tail 3 and the controller executed three
// stale admin commands. There is no queue while disabled: the write must be dropped.
TEST_F(controller_bug_repro, doorbell_written_while_disabled_is_not_applied_after_enable)
{
    auto cc = r.host.cc();
    cc.set(cc.en, false);
    r.host.write32(spec::register_offset::cc, cc.raw);
    ASSERT_FALSE(r.host.csts().get(spec::csts_register::rdy));
    r.ctrl.mmio_write(spec::sq_tail_doorbell_offset(0, 0), 4, 3);
    const std::uint64_t commands = r.ctrl.statistics().commands;
    cc.set(cc.en, true);
    r.host.write32(spec::register_offset::cc, cc.raw);
    r.ctrl.poll();
    ASSERT_TRUE(r.host.csts().get(spec::csts_register::rdy));
    EXPECT_EQ(r.ctrl.statistics().commands, commands);
}

// Regression: the doorbell channel keeps one value per doorbell until the next poll(), and an
// invalid CQ Head value (65 for a 2-entry CQ) written before the controller took the host's valid
// head (1) used to replace it: the invalid write was reported (Invalid Doorbell Write Value, Base
// 2.0 5.2) but the valid head was lost, the CQ stayed full and the next command never completed.
// Hardware applies every doorbell write in order, so the valid head must stand.
TEST_F(controller_bug_repro, invalid_doorbell_value_does_not_replace_a_pending_valid_one)
{
    const auto flush = host_type::command(spec::nvm_opcode::flush, 1);
    ASSERT_EQ(r.host.io(1, flush).status(), dnr(spec::generic_status::invalid_namespace_or_format));
    // The host reaped the entry and wrote CQ 1 Head = 1; no poll has taken it yet.
    r.ctrl.mmio_write(spec::cq_head_doorbell_offset(1, 0), 4, 65);
    const std::uint64_t invalid = r.ctrl.statistics().invalid_doorbells;
    EXPECT_NO_THROW(r.host.io(1, flush));
    EXPECT_EQ(r.ctrl.statistics().invalid_doorbells, invalid + 1);
    EXPECT_EQ(r.ctrl.statistics().completions_held, 0U);
}

} // namespace controller_random_test
} // namespace
