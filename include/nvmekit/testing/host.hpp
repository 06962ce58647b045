#pragma once
/// The in-process host driver: a small NVMe host that drives a controller the way the Linux
/// nvme-pci driver does, over host memory it owns (a flat_memory). Tests, examples and benchmarks
/// use it to bring a controller up, build queues, PRP lists and SGLs in host memory, submit
/// commands and reap completions by interrupt or by polling.
///
///     nvmekit::testing::flat_memory memory;
///     memory.add_range(0x100000, 64 << 20);
///     nvmekit::testing::recording_msix msix;
///     nvmekit::testing::manual_clock clock;
///     nvmekit::controller<traits> ctrl{memory, msix, clock};
///     nvmekit::testing::in_process_host host{ctrl, memory, clock};
///     host.bring_up({.io_queue_pairs = 2});
///     auto completion = host.admin(identify_controller_command(buffer));
///
/// Every check a careful driver makes is made here and a violation throws host_error: a CQE with
/// an unexpected command identifier, an SQ head outside the queue, a controller that does not
/// become ready. Waiting is bounded (`max_polls`), so a broken controller fails a test instead of
/// hanging it.
///
/// The host runs on one thread, but the controller it drives may run poll groups on others. Every
/// access the host makes to host memory (queue entries, data buffers, PRP lists, SGL segments,
/// shadow doorbell buffers) goes through flat_memory's read, write, load and store, never through
/// a span held across calls, and interrupts are checked through recording_msix's count(); with
/// flat_memory::set_synchronized(true) the host is then safe against controller threads.

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nvmekit/config.hpp>
#include <nvmekit/spec/commands.hpp>
#include <nvmekit/spec/data_pointer.hpp>
#include <nvmekit/spec/features.hpp>
#include <nvmekit/spec/identify.hpp>
#include <nvmekit/spec/opcodes.hpp>
#include <nvmekit/spec/queue_entries.hpp>
#include <nvmekit/spec/registers.hpp>
#include <nvmekit/testing/command_builders.hpp>
#include <nvmekit/testing/flat_memory.hpp>
#include <nvmekit/testing/host_base.hpp>
#include <nvmekit/testing/manual_clock.hpp>
#include <nvmekit/testing/recording_msix.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace testing {

/// How the host brings the controller up.
struct host_options {
    std::uint16_t io_queue_pairs = 1;  ///< I/O SQ/CQ pairs to ask for and create
    std::uint32_t admin_entries = 32;  ///< admin SQ and CQ entries
    std::uint32_t io_entries = 256;    ///< entries of each I/O SQ and CQ
    bool interrupts = true;            ///< I/O CQs with IEN = 1 (vector = qid); false: polled queues
    bool physically_contiguous = true; ///< PC = 1; false: queues described by PRP lists
    bool shadow_doorbells = false;     ///< Doorbell Buffer Config when OACS bit 8 says it exists
    /// With shadow doorbells: clear a new queue's shadow and EventIdx slots, as Linux does; false
    /// leaves what an earlier queue with that QID wrote there, as SPDK's driver does.
    bool clear_shadow_slots = true;
    bool reap_by_interrupt = true; ///< with an MSI-X recorder: read a CQ only after its vector fires
    std::size_t max_polls = 10000; ///< bound on every wait
    std::chrono::nanoseconds poll_step{std::chrono::milliseconds{1}}; ///< clock advance per wait step
};

/// What the host negotiated.
struct bring_up_result {
    spec::cap_register cap{};
    spec::identify_controller identify{};
    std::uint16_t submission_queues_granted = 0;
    std::uint16_t completion_queues_granted = 0;
    std::uint16_t io_queue_pairs = 0;
};

template <typename Controller>
class in_process_host : public command_builders, public host_base<in_process_host<Controller>> {
    using base = host_base<in_process_host<Controller>>;
    using base::zero;

public:
    /// A step of the bring-up, for logging (the demo prints them).
    using step_observer = std::function<void(std::string_view)>;

    in_process_host(Controller& controller, flat_memory& memory, manual_clock& clock)
        : base{memory}, controller_{controller}, memory_{memory}, clock_{clock}
    {}

    /// A host that reaps completions the way an interrupt-driven driver does: it reads a CQ only
    /// after the CQ's MSI-X vector was raised (`msix` is the controller's interrupt provider), and
    /// reports a CQ that holds entries without an interrupt as a missed interrupt.
    in_process_host(Controller& controller, flat_memory& memory, manual_clock& clock, recording_msix& msix)
        : base{memory}, controller_{controller}, memory_{memory}, clock_{clock}, msix_{&msix}
    {}

    void on_step(step_observer observer) { observer_ = std::move(observer); }

    [[nodiscard]] Controller& controller() noexcept { return controller_; }
    [[nodiscard]] const host_options& options() const noexcept { return options_; }

    // ---- registers ----------------------------------------------------------------------------

    [[nodiscard]] std::uint32_t read32(spec::register_offset offset)
    {
        return static_cast<std::uint32_t>(controller_.mmio_read(static_cast<std::uint64_t>(offset), 4));
    }
    /// A 64-bit register read as two 32-bit reads, low then high, as Linux does.
    [[nodiscard]] std::uint64_t read64(spec::register_offset offset)
    {
        const auto base = static_cast<std::uint64_t>(offset);
        const std::uint64_t low = controller_.mmio_read(base, 4);
        const std::uint64_t high = controller_.mmio_read(base + 4, 4);
        return low | (high << 32);
    }
    void write32(spec::register_offset offset, std::uint32_t value)
    {
        controller_.mmio_write(static_cast<std::uint64_t>(offset), 4, value);
    }
    /// A 64-bit register written as two 32-bit writes, low then high, as Linux does.
    void write64(spec::register_offset offset, std::uint64_t value)
    {
        const auto base = static_cast<std::uint64_t>(offset);
        controller_.mmio_write(base, 4, value & 0xffffffffU);
        controller_.mmio_write(base + 4, 4, value >> 32);
    }
    [[nodiscard]] spec::csts_register csts()
    {
        return spec::csts_register{read32(spec::register_offset::csts)};
    }
    [[nodiscard]] spec::cc_register cc() { return spec::cc_register{read32(spec::register_offset::cc)}; }

    // ---- controller life cycle ----------------------------------------------------------------

    /// The bring-up Linux's nvme-pci driver performs: disable, program the admin queue, enable and
    /// wait for RDY, Identify Controller, Set Features Number of Queues, create the I/O CQs then
    /// SQs, optionally configure shadow doorbells, and post an Asynchronous Event Request.
    bring_up_result bring_up(const host_options& options = {})
    {
        options_ = options;
        bring_up_result result{};
        result.cap = spec::cap_register{read64(spec::register_offset::cap)};
        cap_ = result.cap;
        step(std::string{"read CAP: mqes="} + std::to_string(cap_.get(cap_.mqes)) +
             " dstrd=" + std::to_string(cap_.get(cap_.dstrd)) + " to=" + std::to_string(cap_.get(cap_.to)));
        program_msix(options.io_queue_pairs);

        disable();
        forget_queues();
        const std::uint32_t admin_entries = options.admin_entries;
        admin_sq_ = make_queue(0, admin_entries, 64, true);
        admin_cq_ = make_queue(0, admin_entries, 16, true);
        spec::aqa_register aqa{};
        aqa.set(aqa.asqs, static_cast<std::uint16_t>(admin_entries - 1))
            .set(aqa.acqs, static_cast<std::uint16_t>(admin_entries - 1));
        write32(spec::register_offset::aqa, aqa.raw);
        write64(spec::register_offset::asq, admin_sq_.base);
        write64(spec::register_offset::acq, admin_cq_.base);
        step("programmed AQA, ASQ and ACQ");
        enable();
        step("CC.EN = 1, CSTS.RDY = 1");

        const std::uint64_t buffer = allocate(4096);
        const auto identify = admin(identify_command(spec::cns::identify_controller, 0, buffer));
        expect_success(identify, "Identify Controller");
        result.identify = memory_.load<spec::identify_controller>(buffer);
        step("Identify Controller: mn \"" + std::string{spec::text_of(result.identify.mn)} + "\"");

        const auto queues = admin(set_features_command(
            spec::feature_id::number_of_queues,
            spec::number_of_queues::from_counts(options.io_queue_pairs, options.io_queue_pairs).raw));
        expect_success(queues, "Set Features Number of Queues");
        const spec::number_of_queues granted{queues.cqe.dw0};
        result.submission_queues_granted = static_cast<std::uint16_t>(granted.submission_queue_count());
        result.completion_queues_granted = static_cast<std::uint16_t>(granted.completion_queue_count());
        step("Number of Queues granted: " + std::to_string(result.submission_queues_granted) + " SQs, " +
             std::to_string(result.completion_queues_granted) + " CQs");

        const std::uint16_t pairs =
            std::min<std::uint16_t>(options.io_queue_pairs, std::min(result.submission_queues_granted,
                                                                     result.completion_queues_granted));
        for (std::uint16_t qid = 1; qid <= pairs; ++qid) {
            expect_success(create_io_cq(qid, options.io_entries, options.interrupts ? qid : 0,
                                        options.interrupts, options.physically_contiguous),
                           "Create I/O CQ");
        }
        for (std::uint16_t qid = 1; qid <= pairs; ++qid) {
            expect_success(create_io_sq(qid, qid, options.io_entries, options.physically_contiguous),
                           "Create I/O SQ");
        }
        result.io_queue_pairs = pairs;
        step("created " + std::to_string(pairs) + " I/O queue pairs of " +
             std::to_string(options.io_entries) + " entries");

        if (options.shadow_doorbells &&
            result.identify.oacs.get(spec::admin_command_support::doorbell_buffer_config)) {
            shadow_ = allocate(4096);
            event_index_ = allocate(4096);
            expect_success(admin(doorbell_buffer_config_command(*shadow_, *event_index_)),
                           "Doorbell Buffer Config");
            step("shadow doorbells configured");
        }

        async_event_cid_ = submit(0, async_event_request_command());
        step("posted an Asynchronous Event Request");
        return result;
    }

    /// CC.EN = 0 and wait for CSTS.RDY = 0 (a controller reset).
    void disable()
    {
        auto cc_value = cc();
        cc_value.set(cc_value.en, false);
        write32(spec::register_offset::cc, cc_value.raw);
        wait_until([this] { return !csts().get(spec::csts_register::rdy); }, "CSTS.RDY = 0 after CC.EN = 0");
        forget_queues();
    }

    /// CC with IOSQES = 6, IOCQES = 4, MPS = 0 (4 KiB), CSS = NVM, AMS = round robin, EN = 1, then
    /// wait for CSTS.RDY = 1 (CAP.TO bounds the wait in a real driver; here max_polls). Other
    /// IOSQES/IOCQES values replay hosts that enable without them (they matter only once I/O
    /// queues are created).
    void enable(std::uint8_t iosqes = 6, std::uint8_t iocqes = 4)
    {
        // Every Phase Tag of the admin CQ reads 0 before CC.EN = 1 (Base 2.0 4.6, P), also
        // after a reset that left old entries behind.
        if (admin_cq_.entries != 0) {
            zero(admin_cq_.base, std::size_t{admin_cq_.entries} * admin_cq_.entry_bytes);
        }
        spec::cc_register cc_value{};
        cc_value.set(cc_value.iosqes, iosqes).set(cc_value.iocqes, iocqes).set(cc_value.en, true);
        write32(spec::register_offset::cc, cc_value.raw);
        wait_until(
            [this] {
                const auto status = csts();
                if (status.get(status.cfs)) {
                    throw host_error{"controller fatal status (CSTS.CFS = 1) while enabling"};
                }
                return status.get(status.rdy);
            },
            "CSTS.RDY = 1 after CC.EN = 1");
        admin_sq_.tail = 0;
        admin_sq_.head = 0;
        admin_cq_.head = 0;
        admin_cq_.phase = true;
    }

    /// The removal sequence: delete the I/O SQs, then the CQs, then CC.SHN = 01b and wait for
    /// CSTS.SHST = 10b.
    void shut_down()
    {
        for (auto& [qid, sq] : io_sqs_) {
            expect_success(admin(delete_queue_command(spec::admin_opcode::delete_io_sq, qid)),
                           "Delete I/O SQ");
        }
        io_sqs_.clear();
        for (auto& [qid, cq] : io_cqs_) {
            expect_success(admin(delete_queue_command(spec::admin_opcode::delete_io_cq, qid)),
                           "Delete I/O CQ");
        }
        io_cqs_.clear();
        auto cc_value = cc();
        cc_value.set(cc_value.shn, spec::shutdown_notification::normal);
        write32(spec::register_offset::cc, cc_value.raw);
        wait_until(
            [this] { return csts().get(spec::csts_register::shst) == spec::shutdown_status::complete; },
            "CSTS.SHST = complete after CC.SHN = normal");
        step("shutdown complete");
    }

    /// Enables MSI-X and programs vectors 0..`last_vector`: message address FEE00000h, data =
    /// vector number, unmasked (what the platform code does under pci_alloc_irq_vectors).
    void program_msix(std::uint16_t last_vector)
    {
        controller_.set_msix_control(true, false);
        const std::uint64_t table = controller_.msix_table_offset();
        const std::uint16_t vectors = controller_.msix().vectors();
        for (std::uint16_t vector = 0; vector <= last_vector && vector < vectors; ++vector) {
            const std::uint64_t entry = table + std::uint64_t{vector} * 16U;
            controller_.mmio_write(entry, 4, msi_address);
            controller_.mmio_write(entry + 4, 4, 0);
            controller_.mmio_write(entry + 8, 4, vector);
            controller_.mmio_write(entry + 12, 4, 0); // Vector Control: Mask = 0
        }
    }

    static constexpr std::uint32_t msi_address = 0xfee00000U;

    // ---- queues -------------------------------------------------------------------------------

    completion create_io_cq(std::uint16_t qid, std::uint32_t entries, std::uint16_t vector, bool interrupts,
                            bool physically_contiguous = true)
    {
        auto queue = make_queue(qid, entries, 16, physically_contiguous);
        clear_shadow_slot(qid, true);
        spec::submission_queue_entry sqe = command(spec::admin_opcode::create_io_cq);
        spec::create_io_cq_view{.queue_id = qid,
                                .queue_size = entries,
                                .physically_contiguous = physically_contiguous,
                                .interrupts_enabled = interrupts,
                                .interrupt_vector = vector}
            .encode(sqe);
        sqe.dptr.prp1 = queue.prp1;
        const auto result = admin(sqe);
        if (result.ok()) {
            queue.vector = vector;
            queue.interrupts = interrupts;
            io_cqs_[qid] = queue;
        }
        return result;
    }

    completion create_io_sq(std::uint16_t qid, std::uint16_t cqid, std::uint32_t entries,
                            bool physically_contiguous = true)
    {
        auto queue = make_queue(qid, entries, 64, physically_contiguous);
        clear_shadow_slot(qid, false);
        queue.cqid = cqid;
        spec::submission_queue_entry sqe = command(spec::admin_opcode::create_io_sq);
        spec::create_io_sq_view{.queue_id = qid,
                                .queue_size = entries,
                                .physically_contiguous = physically_contiguous,
                                .cq_id = cqid}
            .encode(sqe);
        sqe.dptr.prp1 = queue.prp1;
        const auto result = admin(sqe);
        if (result.ok()) {
            io_sqs_[qid] = queue;
        }
        return result;
    }

    completion delete_io_sq(std::uint16_t qid)
    {
        const auto result = admin(delete_queue_command(spec::admin_opcode::delete_io_sq, qid));
        if (result.ok()) {
            io_sqs_.erase(qid);
        }
        return result;
    }

    completion delete_io_cq(std::uint16_t qid)
    {
        const auto result = admin(delete_queue_command(spec::admin_opcode::delete_io_cq, qid));
        if (result.ok()) {
            io_cqs_.erase(qid);
        }
        return result;
    }

    [[nodiscard]] bool has_io_queue(std::uint16_t qid) const { return io_sqs_.contains(qid); }

    /// Host address of entry `index` of SQ `qid` (0: admin), for tests that read or write queue
    /// memory themselves. Throws host_error for an unknown queue or an index outside it.
    [[nodiscard]] std::uint64_t submission_entry_address(std::uint16_t qid, std::uint32_t index)
    {
        return checked_entry_address(submission_queue(qid), index);
    }
    /// Host address of entry `index` of CQ `cqid` (0: admin); throws as submission_entry_address.
    [[nodiscard]] std::uint64_t completion_entry_address(std::uint16_t cqid, std::uint32_t index)
    {
        return checked_entry_address(completion_queue(cqid), index);
    }
    /// The shadow doorbell and EventIdx buffers of Doorbell Buffer Config, once configured.
    [[nodiscard]] std::optional<std::uint64_t> shadow_doorbell_buffer() const noexcept { return shadow_; }
    [[nodiscard]] std::optional<std::uint64_t> event_index_buffer() const noexcept { return event_index_; }

    // ---- commands -----------------------------------------------------------------------------

    /// Submits an admin command and waits for its completion.
    completion admin(spec::submission_queue_entry sqe) { return wait_for(0, submit(0, sqe)); }

    /// Submits a command on I/O queue `qid` and waits for its completion.
    completion io(std::uint16_t qid, spec::submission_queue_entry sqe)
    {
        return wait_for(qid, submit(qid, sqe));
    }

    /// Writes `sqe` (with a fresh command identifier) at the SQ tail and rings the doorbell (or
    /// the shadow doorbell). Returns the command identifier. Throws when the SQ is full.
    std::uint16_t submit(std::uint16_t qid, spec::submission_queue_entry sqe)
    {
        auto& sq = submission_queue(qid);
        const std::uint32_t next = (sq.tail + 1) % sq.entries;
        if (next == sq.head) {
            throw host_error{"submission queue " + std::to_string(qid) + " is full"};
        }
        const std::uint16_t cid = next_cid_++;
        sqe.cdw0.set(spec::command_dword0::cid, cid);
        memory_.store(sq.entry_address(sq.tail), sqe);
        sq.tail = next;
        outstanding_[qid].push_back(cid);
        ring_sq_doorbell(qid, sq.tail);
        return cid;
    }

    /// Polls the controller once and reaps every new completion of CQ `qid` into `out`.
    std::size_t reap(std::uint16_t cqid, std::vector<completion>& out)
    {
        controller_.poll();
        return collect(cqid, out);
    }

    /// Waits for the completion of command `cid` submitted on SQ `qid`; other completions reaped
    /// meanwhile are kept for later waits. With an MSI-X recorder and a CQ whose interrupts are
    /// enabled, the CQ is read only after its vector fires.
    completion wait_for(std::uint16_t qid, std::uint16_t cid)
    {
        const std::uint16_t cqid = qid == 0 ? 0 : submission_queue(qid).cqid;
        for (std::size_t poll = 0; poll < options_.max_polls; ++poll) {
            if (auto found = take_reaped(qid, cid)) {
                return *found;
            }
            controller_.poll();
            if (!interrupt_driven(cqid) || take_interrupt(completion_queue(cqid).vector)) {
                collect(cqid, reaped_);
                if (auto found = take_reaped(qid, cid)) {
                    return *found;
                }
            }
            clock_.advance(options_.poll_step);
        }
        if (interrupt_driven(cqid) && has_new_entry(cqid)) {
            throw host_error{"missed interrupt: CQ " + std::to_string(cqid) +
                             " holds completions but vector " +
                             std::to_string(completion_queue(cqid).vector) + " was not raised"};
        }
        throw host_error{"no completion for command " + std::to_string(cid) + " on queue " +
                         std::to_string(qid)};
    }

    /// Completions reaped while waiting for something else (an Asynchronous Event Request's, say).
    [[nodiscard]] std::vector<completion>& unclaimed() noexcept { return reaped_; }
    [[nodiscard]] std::optional<std::uint16_t> async_event_request_cid() const noexcept
    {
        return async_event_cid_;
    }
    [[nodiscard]] std::size_t outstanding(std::uint16_t qid) const
    {
        const auto it = outstanding_.find(qid);
        return it == outstanding_.end() ? 0 : it->second.size();
    }

    // ---- host memory --------------------------------------------------------------------------

    using base::allocate;

    /// Points `sqe`'s data at `length` bytes at `address` with PRPs (CDW0.PSDT = 00b): PRP1, PRP2
    /// and, for a longer buffer, a PRP list (build_prps), whose pages release(address) frees.
    void describe_data(spec::submission_queue_entry& sqe, std::uint64_t address, std::size_t length)
    {
        const std::size_t descriptors_before = descriptor_memory_.size();
        sqe.dptr = build_prps(address, length);
        sqe.cdw0.set(spec::command_dword0::psdt, spec::data_pointer_type::prp);
        auto& lists = data_descriptors_[address];
        lists.insert(lists.end(),
                     descriptor_memory_.begin() + static_cast<std::ptrdiff_t>(descriptors_before),
                     descriptor_memory_.end());
        descriptor_memory_.resize(descriptors_before);
    }

    /// Frees a buffer allocate() returned, with the PRP list pages describe_data built for it.
    void release(std::uint64_t address)
    {
        if (const auto it = data_descriptors_.find(address); it != data_descriptors_.end()) {
            for (const std::uint64_t list : it->second) {
                memory_.deallocate(list);
            }
            data_descriptors_.erase(it);
        }
        memory_.deallocate(address);
    }

    /// PRP1/PRP2 for a buffer of `length` bytes at `address` with 4 KiB pages, building a PRP
    /// list (chained across list pages when needed) in host memory (Base 2.0 4.1.1).
    spec::data_pointer build_prps(std::uint64_t address, std::size_t length)
    {
        constexpr std::uint64_t page = 4096;
        spec::data_pointer dptr{address, 0};
        const std::uint64_t first = page - (address % page);
        if (length <= first) {
            return dptr;
        }
        std::vector<std::uint64_t> pages;
        for (std::uint64_t next = address + first; next < address + length; next += page) {
            pages.push_back(next);
        }
        if (pages.size() == 1) {
            dptr.prp2 = pages.front();
            return dptr;
        }
        dptr.prp2 = write_prp_list(pages);
        return dptr;
    }

    /// Frees the PRP list pages and SGL segments build_prps, write_prp_list and build_sgl
    /// allocated: call it once the commands that use them have completed.
    void free_descriptor_memory()
    {
        for (const std::uint64_t address : descriptor_memory_) {
            memory_.deallocate(address);
        }
        descriptor_memory_.clear();
    }

    /// Writes `pages` as a PRP list in newly allocated, page-aligned list pages, the last entry of
    /// each full list page chaining to the next (Base 2.0 4.1.1). Returns the first list page; the
    /// pages stay allocated until free_descriptor_memory().
    std::uint64_t write_prp_list(std::span<const std::uint64_t> pages)
    {
        constexpr std::uint64_t page = 4096;
        constexpr std::size_t per_page = page / sizeof(std::uint64_t);
        const std::uint64_t first_list = allocate_descriptor_memory(page, page);
        std::uint64_t list = first_list;
        std::size_t index = 0;
        while (index < pages.size()) {
            const std::size_t remaining = pages.size() - index;
            if (remaining <= per_page) {
                for (std::size_t i = 0; i < remaining; ++i) {
                    memory_.store(list + i * 8, pages[index + i]);
                }
                break;
            }
            for (std::size_t i = 0; i < per_page - 1; ++i) {
                memory_.store(list + i * 8, pages[index + i]);
            }
            index += per_page - 1;
            const std::uint64_t next_list = allocate_descriptor_memory(page, page);
            memory_.store(list + (per_page - 1) * 8, next_list);
            list = next_list;
        }
        return first_list;
    }

    /// One piece of an SGL: a data block of host memory, or (for reads) a bit bucket of `length`
    /// bytes the controller discards.
    struct sgl_piece {
        std::uint64_t address = 0;
        std::uint32_t length = 0;
        bool bit_bucket = false;
    };

    /// Builds an SGL for `pieces` in host memory (Base 2.0 4.1.2) and returns the SGL1 to put in
    /// DPTR (set CDW0.PSDT with use_sgl()). One piece is described in DPTR itself; more go in
    /// segments of at most `descriptors_per_segment` descriptors, chained with Segment
    /// descriptors, the last one reached through a Last Segment descriptor. The segments stay
    /// allocated until free_descriptor_memory().
    spec::data_pointer build_sgl(std::span<const sgl_piece> pieces, std::size_t descriptors_per_segment = 16)
    {
        if (pieces.empty() || descriptors_per_segment < 2) {
            throw std::invalid_argument{"build_sgl: at least one piece and two descriptors per segment"};
        }
        const auto describe = [](const sgl_piece& piece) {
            return piece.bit_bucket ? spec::sgl_descriptor::bit_bucket(piece.length)
                                    : spec::sgl_descriptor::data_block(piece.address, piece.length);
        };
        if (pieces.size() == 1) {
            return spec::to_data_pointer(describe(pieces.front()));
        }
        constexpr std::size_t descriptor_bytes = sizeof(spec::sgl_descriptor);
        // Segments hold per-1 data descriptors and a pointer to the next, except the last one.
        std::size_t index = 0;
        std::uint64_t previous_pointer_address = 0; // where the previous segment points onward
        bool first = true;
        spec::data_pointer dptr{};
        while (index < pieces.size()) {
            const std::size_t remaining = pieces.size() - index;
            const bool last = remaining <= descriptors_per_segment;
            const std::size_t data_count = last ? remaining : descriptors_per_segment - 1;
            const std::size_t count = last ? remaining : descriptors_per_segment;
            const std::uint64_t segment = allocate_descriptor_memory(count * descriptor_bytes, 16);
            for (std::size_t i = 0; i < data_count; ++i) {
                memory_.store(segment + i * descriptor_bytes, describe(pieces[index + i]));
            }
            const auto length = static_cast<std::uint32_t>(count * descriptor_bytes);
            const auto pointer = last ? spec::sgl_descriptor::last_segment(segment, length)
                                      : spec::sgl_descriptor::segment(segment, length);
            if (first) {
                dptr = spec::to_data_pointer(pointer);
                first = false;
            } else {
                memory_.store(previous_pointer_address, pointer);
            }
            previous_pointer_address = segment + data_count * descriptor_bytes;
            index += data_count;
        }
        return dptr;
    }

    /// Marks `sqe` as carrying an SGL in DPTR (CDW0.PSDT = 01b).
    static void use_sgl(spec::submission_queue_entry& sqe) noexcept
    {
        sqe.cdw0.set(spec::command_dword0::psdt, spec::data_pointer_type::sgl_contiguous_metadata);
    }

private:
    struct host_queue {
        std::uint16_t qid = 0;
        std::uint16_t cqid = 0;
        std::uint32_t entries = 0;
        std::uint32_t entry_bytes = 0;
        std::uint64_t base = 0;             ///< contiguous queues
        std::vector<std::uint64_t> pages{}; ///< PRP-list queues
        std::uint64_t prp1 = 0;             ///< what Create I/O SQ/CQ carries
        std::uint32_t tail = 0;             ///< SQ: host's tail
        std::uint32_t head = 0;             ///< SQ: last head the controller reported; CQ: host's head
        std::uint32_t rung = 0;             ///< the last value written to its doorbell (or shadow slot)
        bool phase = true;                  ///< CQ: the phase of new entries
        std::uint16_t vector = 0;
        bool interrupts = true;

        [[nodiscard]] std::uint64_t entry_address(std::uint32_t index) const
        {
            const std::uint64_t offset = std::uint64_t{index} * entry_bytes;
            if (pages.empty()) {
                return base + offset;
            }
            return pages[offset / 4096] + offset % 4096;
        }
    };

    /// Reads every new entry of CQ `cqid` into `out` and rings its head doorbell.
    std::size_t collect(std::uint16_t cqid, std::vector<completion>& out)
    {
        auto& cq = completion_queue(cqid);
        std::size_t reaped = 0;
        for (;;) {
            const auto cqe = memory_.load<spec::completion_queue_entry>(cq.entry_address(cq.head));
            if (cqe.phase() != cq.phase) {
                break;
            }
            check_completion(cqid, cqe);
            out.push_back({cqe});
            ++reaped;
            cq.head = (cq.head + 1) % cq.entries;
            if (cq.head == 0) {
                cq.phase = !cq.phase;
            }
        }
        if (reaped != 0) {
            ring_cq_doorbell(cqid, cq.head);
        }
        return reaped;
    }

    [[nodiscard]] bool has_new_entry(std::uint16_t cqid)
    {
        auto& cq = completion_queue(cqid);
        return memory_.load<spec::completion_queue_entry>(cq.entry_address(cq.head)).phase() == cq.phase;
    }

    [[nodiscard]] bool interrupt_driven(std::uint16_t cqid)
    {
        return msix_ != nullptr && options_.reap_by_interrupt && completion_queue(cqid).interrupts;
    }

    /// True once per new MSI-X message on `vector` since the last call.
    bool take_interrupt(std::uint16_t vector)
    {
        const std::size_t raised = msix_->count(vector);
        std::size_t& seen = interrupts_seen_[vector];
        if (raised == seen) {
            return false;
        }
        seen = raised;
        return true;
    }

    host_queue make_queue(std::uint16_t qid, std::uint32_t entries, std::uint32_t entry_bytes,
                          bool contiguous)
    {
        host_queue queue{};
        queue.qid = qid;
        queue.entries = entries;
        queue.entry_bytes = entry_bytes;
        const std::size_t bytes = std::size_t{entries} * entry_bytes;
        if (contiguous) {
            queue.base = allocate(bytes);
            queue.prp1 = queue.base;
            return queue;
        }
        const std::size_t page_count = (bytes + 4095) / 4096;
        for (std::size_t i = 0; i < page_count; ++i) {
            queue.pages.push_back(allocate(4096));
        }
        // The list pointer has offset 0h (Base 2.0 5.4, 5.5) and a long list is chained.
        queue.prp1 = write_prp_list(queue.pages);
        return queue;
    }

    static std::uint64_t checked_entry_address(const host_queue& queue, std::uint32_t index)
    {
        if (index >= queue.entries) {
            throw host_error{"entry " + std::to_string(index) + " is outside queue " +
                             std::to_string(queue.qid)};
        }
        return queue.entry_address(index);
    }

    host_queue& submission_queue(std::uint16_t qid)
    {
        if (qid == 0) {
            return admin_sq_;
        }
        const auto it = io_sqs_.find(qid);
        if (it == io_sqs_.end()) {
            throw host_error{"no I/O submission queue " + std::to_string(qid)};
        }
        return it->second;
    }

    host_queue& completion_queue(std::uint16_t qid)
    {
        if (qid == 0) {
            return admin_cq_;
        }
        const auto it = io_cqs_.find(qid);
        if (it == io_cqs_.end()) {
            throw host_error{"no I/O completion queue " + std::to_string(qid)};
        }
        return it->second;
    }

    /// Where queue `qid`'s slot lies in the shadow doorbell and EventIdx buffers: they mirror the
    /// doorbell registers' layout from 1000h (Base 2.0 5.8).
    [[nodiscard]] std::uint64_t shadow_slot_offset(std::uint16_t qid, bool completion_queue) const noexcept
    {
        const unsigned dstrd = cap_.get(cap_.dstrd);
        return (completion_queue ? spec::cq_head_doorbell_offset(qid, dstrd)
                                 : spec::sq_tail_doorbell_offset(qid, dstrd)) -
               spec::doorbell_base_offset;
    }

    /// A new queue starts at head = tail = 0, so its shadow doorbell and EventIdx slots must read 0
    /// too, whatever an earlier queue with this identifier left there (Linux clears the buffers).
    void clear_shadow_slot(std::uint16_t qid, bool completion_queue)
    {
        if (!shadow_ || !options_.clear_shadow_slots ||
            (completion_queue ? io_cqs_.contains(qid) : io_sqs_.contains(qid))) {
            return; // a queue the host still uses keeps its slot (creating it again is an error)
        }
        const std::uint64_t offset = shadow_slot_offset(qid, completion_queue);
        memory_.store(*shadow_ + offset, std::uint32_t{0});
        memory_.store(*event_index_ + offset, std::uint32_t{0});
    }

    void ring_sq_doorbell(std::uint16_t qid, std::uint32_t tail)
    {
        if (qid == 0 || update_shadow_slot(submission_queue(qid), false, tail)) {
            controller_.mmio_write(spec::sq_tail_doorbell_offset(qid, cap_.get(cap_.dstrd)), 4, tail);
        }
    }

    void ring_cq_doorbell(std::uint16_t qid, std::uint32_t head)
    {
        if (qid == 0 || update_shadow_slot(completion_queue(qid), true, head)) {
            controller_.mmio_write(spec::cq_head_doorbell_offset(qid, cap_.get(cap_.dstrd)), 4, head);
        }
    }

    /// Writes a new tail or head to the queue's shadow slot, when shadow doorbells are configured,
    /// and tells whether the doorbell register must be written too: without shadow doorbells, or
    /// when the new value passes the queue's EventIdx (the rule Linux and SPDK apply, Base 2.0
    /// 5.8: the controller asks for a register write once the value moves past EventIdx).
    bool update_shadow_slot(host_queue& queue, bool completion_queue, std::uint32_t value)
    {
        const std::uint32_t old = queue.rung;
        queue.rung = value;
        if (!shadow_) {
            return true;
        }
        const std::uint64_t offset = shadow_slot_offset(queue.qid, completion_queue);
        memory_.store(*shadow_ + offset, value);
        const auto event_index = memory_.load<std::uint32_t>(*event_index_ + offset);
        return static_cast<std::uint16_t>(value - event_index - 1U) < static_cast<std::uint16_t>(value - old);
    }

    /// What a careful driver checks in every CQE: it belongs to an outstanding command of an SQ
    /// bound to this CQ, and its SQ head lies inside that SQ.
    void check_completion(std::uint16_t cqid, const spec::completion_queue_entry& cqe)
    {
        const std::uint16_t sqid = cqe.sq_id;
        if (cqid == 0 ? sqid != 0 : (!io_sqs_.contains(sqid) || io_sqs_.at(sqid).cqid != cqid)) {
            throw host_error{"CQE on CQ " + std::to_string(cqid) + " names SQ " + std::to_string(sqid)};
        }
        auto& sq = submission_queue(sqid);
        if (cqe.sq_head >= sq.entries) {
            throw host_error{"CQE SQ head " + std::to_string(cqe.sq_head) + " outside SQ " +
                             std::to_string(sqid)};
        }
        sq.head = cqe.sq_head;
        auto& pending = outstanding_[sqid];
        const auto it = std::find(pending.begin(), pending.end(), cqe.cid);
        if (it == pending.end()) {
            throw host_error{"CQE for command " + std::to_string(cqe.cid) +
                             " that is not outstanding on SQ " + std::to_string(sqid)};
        }
        pending.erase(it);
    }

    std::optional<completion> take_reaped(std::uint16_t qid, std::uint16_t cid)
    {
        for (auto it = reaped_.begin(); it != reaped_.end(); ++it) {
            if (it->cqe.cid == cid && it->cqe.sq_id == qid) {
                completion found = *it;
                reaped_.erase(it);
                return found;
            }
        }
        return std::nullopt;
    }

    template <typename Predicate>
    void wait_until(Predicate&& done, const char* what)
    {
        base::poll_until(controller_, clock_, options_.max_polls, options_.poll_step,
                         std::forward<Predicate>(done), what);
    }

    static void expect_success(const completion& result, const char* what)
    {
        if (!result.ok()) {
            throw host_error{std::string{what} + " failed: status 0x" + to_hex(result.cqe.status().raw)};
        }
    }

    [[nodiscard]] static std::string to_hex(std::uint32_t value)
    {
        constexpr char digits[] = "0123456789abcdef";
        std::string text;
        do {
            text.insert(text.begin(), digits[value & 0xfU]);
            value >>= 4;
        } while (value != 0);
        return text;
    }

    std::uint64_t allocate_descriptor_memory(std::size_t size, std::size_t alignment)
    {
        const std::uint64_t address = allocate(size, alignment);
        descriptor_memory_.push_back(address);
        return address;
    }

    void forget_queues()
    {
        io_sqs_.clear();
        io_cqs_.clear();
        outstanding_.clear();
        reaped_.clear();
        shadow_.reset();
        event_index_.reset();
        async_event_cid_.reset();
    }

    void step(const std::string& text)
    {
        if (observer_) {
            observer_(text);
        }
    }

    Controller& controller_;
    flat_memory& memory_;
    manual_clock& clock_;
    host_options options_{};
    step_observer observer_{};
    spec::cap_register cap_{};
    host_queue admin_sq_{};
    host_queue admin_cq_{};
    std::map<std::uint16_t, host_queue> io_sqs_{};
    std::map<std::uint16_t, host_queue> io_cqs_{};
    std::map<std::uint16_t, std::vector<std::uint16_t>> outstanding_{};
    std::vector<completion> reaped_{};
    std::vector<std::uint64_t> descriptor_memory_{}; ///< PRP list pages and SGL segments built for commands
    /// The PRP list pages describe_data built, by data buffer: release() frees them.
    std::map<std::uint64_t, std::vector<std::uint64_t>> data_descriptors_{};
    std::optional<std::uint64_t> shadow_{};
    std::optional<std::uint64_t> event_index_{};
    std::optional<std::uint16_t> async_event_cid_{};
    std::uint16_t next_cid_ = 0;
    recording_msix* msix_ = nullptr;
    std::map<std::uint16_t, std::size_t> interrupts_seen_{};
};

} // namespace testing
NVMEKIT_END_NAMESPACE
