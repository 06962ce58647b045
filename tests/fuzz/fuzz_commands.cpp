// libFuzzer target: command processing. Each input starts from a controller the harness brings up
// the way a host driver does (admin queue, Number of Queues, I/O CQs 1 and 2, I/O SQs 1 and 2 on
// them and SQ 3 sharing CQ 1), with three namespaces: 512-byte blocks, 512 + 8 bytes of separate
// metadata, 4096 + 64 bytes of extended metadata. The first input byte chooses whether the first
// two (or all) namespaces sit on a test_backend that completes late and out of order instead of a
// RAM backend. The rest is a program of host actions: 64-byte SQEs (raw, or with fields biased
// toward valid opcodes, NSIDs, CIDs, PSDT, small LBAs and lengths, and data pointers into host
// memory) placed in the admin queue or an I/O queue, stores into host memory (data, PRP lists,
// SGL segments), doorbell rings, polls with completion reaping, and clock advances.
//
// The harness plays the host and checks what it sees:
// - every CQE names an SQ bound to the CQ it appears in, and a CID that SQ has outstanding: a
//   command completes at most once per submission;
// - every status has SCT 0-3 with a code the controller defines, or SCT 7;
// - once the backends drain and every CQE is reaped, requests_in_use() is 0; after CC.EN = 0 it
//   is 0 as well, and no backend I/O is left.
// To keep its own model of the queues exact, the host owns the queue memory: host memory stores
// and data pointers never reach it (the DMA provider refuses controller writes there other than
// CQE posts at the tail of a CQ), Create/Delete I/O Queue commands fuzzed into the admin queue are
// redirected to queue identifiers the host does not use, and Doorbell Buffer Config is not sent
// (shadow doorbells would move SQ tails behind the host's back).

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>
#include <system_error>

#include "fuzz_input.hpp"

#include <nvmekit/backends/ram_backend.hpp>
#include <nvmekit/controller.hpp>
#include <nvmekit/testing/flat_memory.hpp>
#include <nvmekit/testing/manual_clock.hpp>
#include <nvmekit/testing/test_backend.hpp>

namespace {

using nvmekit_fuzz::counting_interrupts;
using nvmekit_fuzz::reader;

using namespace std::chrono_literals;

// Host memory: queue pages (owned by the host's queue model) and a data area for everything else.
constexpr std::uint64_t page = 4096;
// Far from the data area and from small numbers, so data rarely looks like a queue pointer.
constexpr std::uint64_t queue_base = 0x3c5a'0000'0000;
constexpr std::uint16_t max_qid = 4;                     // limits.io_queues
constexpr std::uint64_t queue_pages = 4 * (max_qid + 2); // per qid: SQ, CQ, SQ PRP list, CQ PRP list
constexpr std::uint64_t queue_end = queue_base + queue_pages * page;
constexpr std::uint64_t data_base = 0x200000;
constexpr std::uint64_t data_size = 64 * 1024;
constexpr std::uint64_t data_end = data_base + data_size;

[[nodiscard]] constexpr bool in_queue_memory(std::uint64_t address, std::uint64_t length) noexcept
{
    return address < queue_end && address + length > queue_base;
}

[[nodiscard]] constexpr std::uint64_t sq_page(std::uint16_t qid) noexcept
{
    return queue_base + 4 * std::uint64_t{std::min<std::uint16_t>(qid, max_qid + 1)} * page;
}
[[nodiscard]] constexpr std::uint64_t cq_page(std::uint16_t qid) noexcept { return sq_page(qid) + page; }

/// The host's view of a CQ it owns.
struct cq_model {
    bool owned = false;
    std::uint32_t entries = 0;
    std::uint32_t head = 0;
    bool phase = true;
    std::uint32_t post_slot = 0; ///< where the controller's next CQE must land
};

/// The host's view of an SQ it owns.
struct sq_model {
    bool owned = false;
    std::uint16_t cqid = 0;
    std::uint32_t entries = 0;
    std::uint32_t tail = 0;
    std::uint32_t head = 0;                         ///< as last reported in a CQE (SQHD)
    std::array<std::uint16_t, 65536> outstanding{}; ///< submissions minus completions, per CID
};

struct host_model {
    std::array<cq_model, max_qid + 1> cqs{};
    std::array<sq_model, max_qid + 1> sqs{};
};

/// A DMA provider over flat memory that stands for a host IOMMU: device writes into the queue
/// pages are refused unless they are a 16-byte CQE post at the slot the owned CQ's tail is at.
class guarded_memory {
public:
    guarded_memory(nvmekit::testing::flat_memory& memory, host_model& model)
        : memory_{&memory}, model_{&model}
    {}

    std::error_code read(std::uint64_t address, std::span<std::byte> destination) const
    {
        return memory_->read(address, destination);
    }
    std::error_code write(std::uint64_t address, std::span<const std::byte> source)
    {
        if (in_queue_memory(address, source.size())) {
            auto* cq = post_target(address, source.size());
            if (cq == nullptr) {
                ++refused;
                return std::make_error_code(std::errc::permission_denied);
            }
            cq->post_slot = (cq->post_slot + 1) % cq->entries;
        }
        return memory_->write(address, source);
    }
    std::span<std::byte> map(std::uint64_t address, std::size_t length)
    {
        if (in_queue_memory(address, length)) {
            return {};
        }
        return memory_->map(address, length);
    }

    std::uint64_t refused = 0;

private:
    cq_model* post_target(std::uint64_t address, std::size_t length)
    {
        if (length != 16) {
            return nullptr;
        }
        for (std::uint16_t qid = 0; qid <= max_qid; ++qid) {
            auto& cq = model_->cqs[qid];
            if (cq.owned && address == cq_page(qid) + 16 * std::uint64_t{cq.post_slot}) {
                return &cq;
            }
        }
        return nullptr;
    }

    nvmekit::testing::flat_memory* memory_;
    host_model* model_;
};

struct traits : nvmekit::default_traits {
    using dma = guarded_memory;
    using interrupts = counting_interrupts;
    using clock = nvmekit::testing::manual_clock;
    static constexpr nvmekit::limits limits{.io_queues = max_qid,
                                            .queue_entries = 64,
                                            .mdts = 3,
                                            .msix_vectors = 5,
                                            .aerl = 3,
                                            .commands_per_queue = 16,
                                            .max_segments = 64,
                                            .staging_buffers = 2};
};
using controller_type = nvmekit::controller<traits>;

void check(bool condition)
{
    if (!condition) {
        std::abort();
    }
}

/// A 64-byte SQE as raw dwords (Base 2.0 Figure 88).
struct sqe {
    std::array<std::uint32_t, 16> dw{};
    [[nodiscard]] std::uint8_t opcode() const { return static_cast<std::uint8_t>(dw[0]); }
    void set_opcode(std::uint8_t opcode) { dw[0] = (dw[0] & ~0xffU) | opcode; }
    [[nodiscard]] std::uint16_t cid() const { return static_cast<std::uint16_t>(dw[0] >> 16); }
    void set_cid(std::uint16_t cid) { dw[0] = (dw[0] & 0xffffU) | (std::uint32_t{cid} << 16); }
    void set_psdt(unsigned psdt) { dw[0] = (dw[0] & ~(3U << 14)) | (psdt << 14); }
    [[nodiscard]] std::uint64_t qword(unsigned first_dword) const
    {
        return dw[first_dword] | (std::uint64_t{dw[first_dword + 1]} << 32);
    }
    void set_qword(unsigned first_dword, std::uint64_t value)
    {
        dw[first_dword] = static_cast<std::uint32_t>(value);
        dw[first_dword + 1] = static_cast<std::uint32_t>(value >> 32);
    }
    static constexpr unsigned mptr = 4, prp1 = 6, prp2 = 8;
};

/// An address in the data area from `value`: page aligned, dword aligned or any byte.
std::uint64_t data_address(std::uint64_t value, unsigned alignment)
{
    const std::uint64_t offset = value % data_size;
    switch (alignment % 4) {
    case 0: return data_base + (offset & ~(page - 1));
    case 1: return data_base + (offset & ~std::uint64_t{3});
    case 2: return data_base + (offset & ~std::uint64_t{511});
    default: return data_base + offset;
    }
}

/// A pointer that would reach the queue pages is moved out of host memory (a DMA error instead).
std::uint64_t away_from_queues(std::uint64_t address)
{
    return in_queue_memory(address, 1) ? address | (std::uint64_t{1} << 47) : address;
}

/// After the host stored bytes at [first, last) of the data area, no 8 bytes there (at any
/// alignment) may form a pointer into the queue pages: such a window gets its top byte set.
void keep_pointers_out(nvmekit::testing::flat_memory& memory, std::uint64_t first, std::uint64_t last)
{
    first = first >= data_base + 7 ? first - 7 : data_base;
    last = std::min(last, data_end - 7);
    bool changed = true;
    while (changed) {
        changed = false;
        for (std::uint64_t at = first; at < last; ++at) {
            const auto value = memory.load<std::uint64_t>(at);
            if (in_queue_memory(value, 1)) {
                memory.store<std::uint8_t>(at + 7, 0x80);
                changed = true;
            }
        }
    }
}

constexpr std::uint8_t admin_opcodes[] = {0x06, 0x02, 0x09, 0x0a, 0x0c, 0x08, 0x18, 0x10, 0x11, 0x15,
                                          0x80, 0x00, 0x01, 0x04, 0x05, 0x0d, 0x84, 0x14, 0x19, 0xc0};
constexpr std::uint8_t io_opcodes[] = {0x00, 0x01, 0x02, 0x04, 0x05, 0x08, 0x09, 0x0c, 0x19, 0x0d, 0x81};

class host {
public:
    host(nvmekit::testing::flat_memory& memory, controller_type& ctrl, host_model& model)
        : memory_{memory}, ctrl_{ctrl}, model_{model}
    {}

    /// Brings the controller up with the host's queues; false if the controller refused.
    bool bring_up()
    {
        model_.cqs[0] = {.owned = true, .entries = 16};
        model_.sqs[0].owned = true;
        model_.sqs[0].entries = 16;
        ctrl_.mmio_write(0x24, 4, (15U << 16) | 15U);
        ctrl_.mmio_write(0x28, 8, sq_page(0));
        ctrl_.mmio_write(0x30, 8, cq_page(0));
        ctrl_.mmio_write(0x14, 4, 1U | (6U << 16) | (4U << 20));
        ctrl_.poll();
        if (ctrl_.state() != nvmekit::controller_state::ready) {
            return false;
        }
        struct queue_pair {
            std::uint16_t sqid, cqid, sq_entries, cq_entries;
        };
        // CQ 1 is small so that it fills up; SQ 3 shares it with SQ 1.
        static constexpr queue_pair pairs[] = {{1, 1, 16, 8}, {2, 2, 32, 32}, {3, 1, 8, 0}};
        sqe number_of_queues{};
        number_of_queues.dw = {0x09U | (1U << 16), 0, 0, 0, 0, 0, 0, 0, 0, 0, 7, (3U << 16) | 3U};
        if (!setup_command(number_of_queues)) {
            return false;
        }
        std::uint16_t cid = 2;
        for (const auto& pair : pairs) {
            if (pair.cq_entries != 0) {
                sqe create_cq{};
                create_cq.dw[0] = 0x05U | (std::uint32_t{cid++} << 16);
                create_cq.set_qword(sqe::prp1, cq_page(pair.cqid));
                create_cq.dw[10] = (std::uint32_t(pair.cq_entries - 1) << 16) | pair.cqid;
                create_cq.dw[11] = 1U; // PC, no interrupts
                model_.cqs[pair.cqid] = {.owned = true, .entries = pair.cq_entries};
                if (!setup_command(create_cq)) {
                    return false;
                }
            }
            sqe create_sq{};
            create_sq.dw[0] = 0x01U | (std::uint32_t{cid++} << 16);
            create_sq.set_qword(sqe::prp1, sq_page(pair.sqid));
            create_sq.dw[10] = (std::uint32_t(pair.sq_entries - 1) << 16) | pair.sqid;
            create_sq.dw[11] = 1U | (std::uint32_t{pair.cqid} << 16);
            if (!setup_command(create_sq)) {
                return false;
            }
            auto& sq = model_.sqs[pair.sqid];
            sq.owned = true;
            sq.cqid = pair.cqid;
            sq.entries = pair.sq_entries;
        }
        return true;
    }

    /// Places `command` at the tail of owned SQ `qid`; false when the SQ looks full.
    bool submit(std::uint16_t qid, sqe command, bool ring)
    {
        auto& sq = model_.sqs[qid];
        if ((sq.tail + 1) % sq.entries == sq.head) {
            return false;
        }
        const std::uint64_t slot = sq_page(qid) + 64 * std::uint64_t{sq.tail};
        std::memcpy(memory_.bytes(slot, 64).data(), command.dw.data(), 64);
        sq.tail = (sq.tail + 1) % sq.entries;
        ++sq.outstanding[command.cid()];
        if (ring) {
            ring_sq(qid);
        }
        return true;
    }

    void ring_sq(std::uint16_t qid)
    {
        ctrl_.mmio_write(0x1000 + 8 * std::uint64_t{qid}, 4, model_.sqs[qid].tail);
    }

    /// Reads every owned CQ the way a driver does (phase tags), checks each CQE and rings the
    /// CQ head doorbells.
    void reap()
    {
        for (std::uint16_t cqid = 0; cqid <= max_qid; ++cqid) {
            auto& cq = model_.cqs[cqid];
            if (!cq.owned) {
                continue;
            }
            bool consumed = false;
            while (true) {
                nvmekit::spec::completion_queue_entry cqe{};
                std::memcpy(&cqe, memory_.bytes(cq_page(cqid) + 16 * std::uint64_t{cq.head}, 16).data(), 16);
                if (cqe.phase() != cq.phase) {
                    break;
                }
                check_completion(cqid, cqe);
                consumed = true;
                cq.head = (cq.head + 1) % cq.entries;
                if (cq.head == 0) {
                    cq.phase = !cq.phase;
                }
            }
            if (consumed) {
                ctrl_.mmio_write(0x1000 + 8 * std::uint64_t{cqid} + 4, 4, cq.head);
            }
        }
    }

    std::uint64_t completions = 0;
    std::uint64_t last_status = 0;

private:
    bool setup_command(const sqe& command)
    {
        if (!submit(0, command, true)) {
            return false;
        }
        ctrl_.poll();
        const auto before = completions;
        reap();
        return completions == before + 1 && last_status == 0;
    }

    void check_completion(std::uint16_t cqid, const nvmekit::spec::completion_queue_entry& cqe)
    {
        // The SQ must exist on the host side and be bound to this CQ (Base 2.0 4.1).
        check(cqe.sq_id <= max_qid);
        auto& sq = model_.sqs[cqe.sq_id];
        check(sq.owned && sq.cqid == cqid);
        check(cqe.sq_head < sq.entries);
        // At most one completion per submission of this CID.
        check(sq.outstanding[cqe.cid] != 0);
        --sq.outstanding[cqe.cid];
        sq.head = cqe.sq_head;
        // A status the controller defines (Base 2.0 Figure 100): SCT 0-3 with a named code, or SCT 7.
        const auto status = cqe.status();
        const auto type = static_cast<unsigned>(status.type());
        check(type == 7 || (type <= 3 && !nvmekit::spec::name(status).empty()));
        last_status = status.raw & 0x7ffU;
        ++completions;
    }

    nvmekit::testing::flat_memory& memory_;
    controller_type& ctrl_;
    host_model& model_;
};

/// Redirects a fuzzed admin command that would change the host's own queues (or its view of SQ
/// tails) to queue identifiers the host does not use, with queue memory in their own pages.
void confine_admin_command(nvmekit::testing::flat_memory& memory, sqe& command)
{
    const std::uint8_t opcode = command.opcode();
    const bool create = opcode == 0x01 || opcode == 0x05;
    const bool remove = opcode == 0x00 || opcode == 0x04;
    if (opcode == 0x7c) {
        command.set_opcode(0x7d); // no Doorbell Buffer Config: an unused opcode instead
        return;
    }
    if (!create && !remove) {
        return;
    }
    const bool completion_queue = opcode == 0x04 || opcode == 0x05;
    auto qid = static_cast<std::uint16_t>(command.dw[10]);
    if (completion_queue && (qid == 1 || qid == 2)) {
        qid = qid == 1 ? 4 : 3;
    } else if (!completion_queue && qid >= 1 && qid <= 3) {
        qid = 4;
    }
    command.dw[10] = (command.dw[10] & 0xffff0000U) | qid;
    if (create) {
        const std::uint64_t queue = completion_queue ? cq_page(qid) : sq_page(qid);
        if ((command.dw[11] & 1U) != 0) {
            command.set_qword(sqe::prp1, queue);
        } else {
            // Not physically contiguous: PRP1 is a PRP list naming the queue page.
            const std::uint64_t list = queue + 2 * page;
            memory.store<std::uint64_t>(list, queue);
            command.set_qword(sqe::prp1, list);
        }
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    reader in{{data, size}};
    const auto setup = in.take<std::uint8_t>();

    nvmekit::testing::flat_memory memory;
    memory.add_range(queue_base, queue_end - queue_base);
    memory.add_range(data_base, data_size);
    const auto model_storage = std::make_unique<host_model>(); // per-CID counts: too big for the stack
    host_model& model = *model_storage;
    guarded_memory dma{memory, model};
    counting_interrupts interrupts;
    nvmekit::testing::manual_clock clock;
    nvmekit::subsystem<nvmekit::any_backend> subsystem;
    const nvmekit::testing::test_backend_options late{.delay = 20us, .jitter = 30us, .seed = setup};
    const auto add = [&](bool delayed, std::uint64_t capacity, nvmekit::namespace_options options) {
        if (delayed) {
            subsystem.add_namespace(nvmekit::any_backend{std::in_place_type<nvmekit::testing::test_backend<>>,
                                                         clock, capacity, 8, late},
                                    options);
        } else {
            subsystem.add_namespace(nvmekit::ram_backend{capacity}, options);
        }
    };
    add((setup & 1U) != 0, 64 * 1024, {.lba_format = 0});
    add((setup & 1U) != 0, 64 * 1024, {.lba_format = 1});
    add((setup & 2U) != 0, 64 * 1024, {.lba_format = 3, .extended_metadata = true});
    controller_type ctrl{dma, interrupts, clock, subsystem};
    host driver{memory, ctrl, model};
    check(driver.bring_up());

    for (int step = 0; step < 1024 && !in.empty(); ++step) {
        const auto op = in.take<std::uint8_t>();
        switch (op % 8) {
        case 0:
        case 1:
        case 2: { // an SQE for the admin queue or an I/O queue
            const auto target = in.take<std::uint8_t>();
            const std::uint16_t qid = target % 4;
            const auto bias = in.take<std::uint16_t>();
            sqe command{};
            const auto raw = in.take_bytes(64);
            std::memcpy(command.dw.data(), raw.data(), raw.size());
            if ((bias & 1U) != 0) {
                command.set_opcode(qid == 0 ? admin_opcodes[command.opcode() % std::size(admin_opcodes)]
                                            : io_opcodes[command.opcode() % std::size(io_opcodes)]);
            }
            if ((bias & 2U) != 0) {
                command.dw[1] %= 5; // NSID 0..4: none, the three namespaces, one that does not exist
            }
            if ((bias & 4U) != 0) {
                command.set_cid(command.cid() % 8); // CIDs that collide
            }
            if ((bias & 8U) != 0) {
                command.set_qword(sqe::prp1, data_address(command.qword(sqe::prp1), bias >> 12));
            }
            if ((bias & 16U) != 0) {
                command.set_qword(sqe::prp2, data_address(command.qword(sqe::prp2), bias >> 14));
            }
            if ((bias & 32U) != 0) {
                command.set_qword(sqe::mptr, data_address(command.qword(sqe::mptr), bias >> 10));
            }
            if ((bias & 64U) != 0 && qid != 0) { // small LBAs and lengths
                command.dw[10] %= 160;
                command.dw[11] = 0;
                command.dw[12] = (command.dw[12] & 0xffff0000U) | (command.dw[12] % 24U);
            }
            if ((bias & 128U) != 0) {
                command.set_psdt((bias >> 8) & 3U);
            }
            if ((bias & 0x300U) == 0x300U) { // DPTR as one SGL descriptor (Data Block or segment)
                static constexpr std::uint8_t types[] = {0x00, 0x10, 0x20, 0x30};
                command.set_psdt(1);
                command.dw[8] = (command.dw[8] % 16U + 1U) * 512U;
                command.dw[9] = std::uint32_t{types[(bias >> 12) % 4]} << 24;
            }
            command.set_qword(sqe::prp1, away_from_queues(command.qword(sqe::prp1)));
            command.set_qword(sqe::prp2, away_from_queues(command.qword(sqe::prp2)));
            command.set_qword(sqe::mptr, away_from_queues(command.qword(sqe::mptr)));
            if (qid == 0) {
                confine_admin_command(memory, command);
            }
            static_cast<void>(driver.submit(qid, command, (target & 0x80U) == 0));
            break;
        }
        case 3: { // data bytes
            const std::uint64_t offset = in.take<std::uint16_t>() % data_size;
            const auto bytes = in.take_bytes(in.take<std::uint8_t>() % 96U + 1U);
            const auto room = std::min<std::size_t>(bytes.size(), data_size - offset);
            if (room != 0) {
                std::memcpy(memory.bytes(data_base + offset, room).data(), bytes.data(), room);
                keep_pointers_out(memory, data_base + offset, data_base + offset + room);
            }
            break;
        }
        case 4: { // a PRP list or an SGL segment
            const std::uint64_t offset = (in.take<std::uint16_t>() % data_size) & ~std::uint64_t{7};
            const auto shape = in.take<std::uint8_t>();
            const unsigned count = shape % 8U + 1U;
            std::uint64_t at = data_base + offset;
            for (unsigned i = 0; i < count; ++i) {
                const auto value = in.take<std::uint32_t>();
                if ((shape & 0x80U) == 0) { // PRP entries: page or dword aligned
                    if (at + 8 > data_end) {
                        break;
                    }
                    memory.store<std::uint64_t>(at, data_address(value, (shape >> 3) & 1U));
                    at += 8;
                } else { // SGL descriptors: Data Block, Bit Bucket, Segment, Last Segment
                    if (at + 16 > data_end) {
                        break;
                    }
                    static constexpr std::uint8_t types[] = {0x00, 0x10, 0x20, 0x30};
                    const auto kind = in.take<std::uint8_t>();
                    memory.store<std::uint64_t>(at, data_address(value, kind >> 2));
                    memory.store<std::uint32_t>(at + 8, (value >> 20) % 4096U + 1U);
                    memory.store<std::uint32_t>(at + 12, std::uint32_t{types[kind % 4]} << 24);
                    at += 16;
                }
            }
            keep_pointers_out(memory, data_base + offset, at);
            break;
        }
        case 5: { // doorbells: SQ tail of an owned queue, or a value the controller must ignore
            const auto which = in.take<std::uint8_t>();
            const std::uint16_t qid = which % 4;
            if ((which & 0x80U) == 0) {
                driver.ring_sq(qid);
            } else {
                // Beyond the queue's size, or a queue the host never created: ignored (Base 2.0 5.2).
                const bool completion = (which & 0x40U) != 0;
                const std::uint32_t entries = completion ? model.cqs[qid].entries : model.sqs[qid].entries;
                ctrl.mmio_write(0x1000 + 8 * std::uint64_t{qid} + (completion ? 4 : 0), 4,
                                entries + in.take<std::uint8_t>());
            }
            break;
        }
        case 6:
            ctrl.poll();
            driver.reap();
            break;
        case 7: clock.advance(std::chrono::microseconds{in.take<std::uint8_t>()} * 4); break;
        }
    }

    // Let the backends drain and reap everything: no request may stay in use.
    for (int i = 0; i < 64; ++i) {
        clock.advance(100us);
        ctrl.poll();
        driver.reap();
    }
    if (ctrl.state() == nvmekit::controller_state::ready) {
        check(ctrl.io_outstanding() == 0);
        check(ctrl.requests_in_use() == 0);
    }
    // A Controller Reset takes every queue away; once the backends finish nothing is in use.
    ctrl.mmio_write(0x14, 4, 0);
    for (int i = 0; i < 64 && ctrl.io_outstanding() != 0; ++i) {
        clock.advance(100us);
        ctrl.poll();
    }
    check(ctrl.io_outstanding() == 0 && ctrl.requests_in_use() == 0);
    return 0;
}
