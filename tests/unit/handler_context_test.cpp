#include <nvmekit/contracts/handler_context.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <ostream>
#include <span>
#include <system_error>
#include <vector>

#include <gtest/gtest.h>

#include <nvmekit/controller.hpp>
#include <nvmekit/testing/test_backend.hpp>

#include "controller_fixture.hpp"
#include "read_checksummed.hpp"

namespace {
namespace handler_context_test {

namespace spec = nvmekit::spec;
using namespace nvmekit_test;
using namespace std::chrono_literals;
using nvmekit::AdminHandlerContext;
using nvmekit::HandlerContext;
using nvmekit::testing::completion;
using nvmekit::testing::test_backend;

// ---- the concepts ---------------------------------------------------------------------------------

using fixture_controller = nvmekit::controller<test_traits>;
using recording_controller = nvmekit::controller<recording_dma_traits>;

static_assert(HandlerContext<fixture_controller>);
static_assert(AdminHandlerContext<fixture_controller>);
static_assert(HandlerContext<recording_controller>);
static_assert(AdminHandlerContext<recording_controller>);

/// A context that is the controller with one member hidden: only that expression is missing.
struct derived_context : fixture_controller {};
struct without_finish : fixture_controller {
    void finish() = delete;
};
struct without_submit_blocks : fixture_controller {
    void submit_blocks() = delete;
};
struct without_count_read : fixture_controller {
    void count_read() = delete;
};
struct without_scratch_ranges : fixture_controller {
    void scratch_ranges() = delete;
};
/// Lacks an expression only AdminHandlerContext asks for.
struct without_keep_alive : fixture_controller {
    void keep_alive_received() = delete;
};

TEST(handler_context, the_fixture_controller_models_both_concepts)
{
    EXPECT_TRUE(HandlerContext<fixture_controller>);
    EXPECT_TRUE(AdminHandlerContext<fixture_controller>);
    EXPECT_TRUE(HandlerContext<rig::controller_type>); // the fixture's lockstep_controller
    EXPECT_TRUE(AdminHandlerContext<rig::controller_type>);
    EXPECT_TRUE(HandlerContext<derived_context>); // deriving alone changes nothing
    EXPECT_TRUE(AdminHandlerContext<derived_context>);
}

TEST(handler_context, a_context_lacking_one_expression_does_not_model_it)
{
    static_assert(!HandlerContext<without_finish>);
    static_assert(!HandlerContext<without_submit_blocks>);
    static_assert(!HandlerContext<without_count_read>);
    static_assert(!HandlerContext<without_scratch_ranges>);
    static_assert(!AdminHandlerContext<without_finish>);
    static_assert(HandlerContext<without_keep_alive>);
    static_assert(!AdminHandlerContext<without_keep_alive>);
    EXPECT_FALSE(HandlerContext<without_finish>);
    EXPECT_FALSE(HandlerContext<without_submit_blocks>);
    EXPECT_FALSE(HandlerContext<without_count_read>);
    EXPECT_FALSE(HandlerContext<without_scratch_ranges>);
    EXPECT_TRUE(HandlerContext<without_keep_alive>);
    EXPECT_FALSE(AdminHandlerContext<without_keep_alive>);
}

// ---- a vendor I/O command on the concept (examples/read_checksummed.hpp) -------------------------

using nvmekit_examples::read_checksummed_command;
using nvmekit_examples::with_read_checksummed;

/// The CRC-32C of `data`, bit by bit: the test's own, independent of the library's that the
/// handler uses.
[[nodiscard]] std::uint32_t host_crc32c(std::span<const std::byte> data) noexcept
{
    std::uint32_t crc = 0xffffffffU;
    for (const std::byte byte : data) {
        crc ^= std::to_integer<std::uint32_t>(byte);
        for (int bit = 0; bit < 8; ++bit) {
            crc = (crc >> 1U) ^ (0x82f63b78U & (0U - (crc & 1U)));
        }
    }
    return ~crc;
}

/// A DmaProvider that cannot map host memory: Read stages its data as Read Checksummed always does.
class unmapped_dma {
public:
    explicit unmapped_dma(nvmekit::testing::flat_memory& memory) noexcept : memory_{&memory} {}
    std::error_code read(std::uint64_t address, std::span<std::byte> destination)
    {
        return memory_->read(address, destination);
    }
    std::error_code write(std::uint64_t address, std::span<const std::byte> source)
    {
        return memory_->write(address, source);
    }

private:
    nvmekit::testing::flat_memory* memory_;
};
static_assert(nvmekit::DmaProvider<unmapped_dma> && !nvmekit::MappingDmaProvider<unmapped_dma>);

struct delayed_traits : test_traits {
    using backend = test_backend<>;
};
struct staged_traits : delayed_traits {
    using dma = unmapped_dma;
};
using vendor_rig = basic_rig<with_read_checksummed<delayed_traits>>;
using staged_vendor_rig = basic_rig<with_read_checksummed<staged_traits>>;

static_assert(HandlerContext<vendor_rig::controller_type>);
static_assert(HandlerContext<staged_vendor_rig::controller_type>);

constexpr std::uint64_t capacity = std::uint64_t{1} << 20; // 2048 blocks of 512 bytes
constexpr std::chrono::nanoseconds delay = 5ms;

[[nodiscard]] std::vector<std::byte> pattern(std::size_t bytes, unsigned seed)
{
    std::vector<std::byte> data(bytes);
    for (std::size_t i = 0; i < bytes; ++i) {
        data[i] = static_cast<std::byte>((i * 29U + seed * 53U + (i >> 9U) + 3U) & 0xffU);
    }
    return data;
}

[[nodiscard]] spec::submission_queue_entry read_blocks_command(std::uint32_t nsid, std::uint64_t slba,
                                                               std::uint32_t blocks)
{
    return host_type::lba_command(spec::nvm_opcode::read, nsid, slba, blocks);
}

/// Writes `data` at `slba` of namespace 1 with a Write and waits for it.
template <typename Rig>
[[nodiscard]] completion write_blocks(Rig& r, std::uint64_t slba, const std::vector<std::byte>& data)
{
    const std::uint64_t buffer = r.host.allocate(data.size());
    std::memcpy(r.memory.bytes(buffer, data.size()).data(), data.data(), data.size());
    auto sqe = host_type::lba_command<spec::write_view>(spec::nvm_opcode::write, 1, slba,
                                                        static_cast<std::uint32_t>(data.size() / 512));
    sqe.dptr = r.host.build_prps(buffer, data.size());
    return r.host.io(1, sqe);
}

/// Host memory of `bytes` bytes filled with `fill`, and `sqe` pointing at it.
template <typename Rig>
std::uint64_t point_at_buffer(Rig& r, spec::submission_queue_entry& sqe, std::size_t bytes,
                              std::byte fill = {})
{
    const std::uint64_t buffer = r.host.allocate(bytes);
    const auto span = r.memory.bytes(buffer, bytes);
    std::fill(span.begin(), span.end(), fill);
    sqe.dptr = r.host.build_prps(buffer, bytes);
    return buffer;
}

TEST(handler_context_vendor_command, completes_when_the_backend_does_with_the_checksum_and_the_data)
{
    vendor_rig r;
    auto& backend =
        r.subsystem.add_namespace(test_backend<>{r.clock, capacity, 64, {.delay = delay}}).backend();
    r.host.bring_up();
    const auto data = pattern(24 * 512, 1); // three pages: a PRP list
    ASSERT_EQ(write_blocks(r, 40, data).status(), spec::status::success());

    auto sqe = read_checksummed_command(1, 40, 24);
    const std::uint64_t buffer = point_at_buffer(r, sqe, data.size());
    const std::uint16_t cid = r.host.submit(1, sqe);
    std::vector<completion> done;
    for (int i = 0; i < 5; ++i) {
        r.host.reap(1, done); // the clock stands still: the backend holds the read
    }
    EXPECT_TRUE(done.empty());
    EXPECT_EQ(backend.outstanding(), 1U);
    EXPECT_EQ(r.ctrl.requests_in_use(), 1U);
    r.clock.advance(delay);
    r.host.reap(1, done);
    ASSERT_EQ(done.size(), 1U);
    EXPECT_EQ(done[0].cqe.cid, cid);
    EXPECT_EQ(done[0].status(), spec::status::success());
    EXPECT_EQ(done[0].cqe.dw0, host_crc32c(data));
    EXPECT_EQ(r.snapshot(buffer, data.size()), data);
    EXPECT_EQ(r.ctrl.requests_in_use(), 0U);
    EXPECT_EQ(r.ctrl.io_outstanding(), 0U);
    // The backend saw one read of the 24 blocks.
    ASSERT_FALSE(backend.records().empty());
    EXPECT_EQ(backend.records().back(), (nvmekit::testing::block_request_record{
                                            nvmekit::block_operation::read, 40 * 512, data.size(), false}));

    // The built-in Read returns the same bytes; the refusals are Read's.
    auto read = read_blocks_command(1, 40, 24);
    const std::uint64_t read_buffer = point_at_buffer(r, read, data.size());
    ASSERT_EQ(r.host.io(1, read).status(), spec::status::success());
    EXPECT_EQ(r.snapshot(read_buffer, data.size()), data);
    EXPECT_EQ(r.host.io(1, read_checksummed_command(2, 0, 1)).status(),
              dnr(spec::generic_status::invalid_namespace_or_format));
    EXPECT_EQ(r.host.io(1, read_checksummed_command(1, capacity / 512 - 1, 2)).status(),
              dnr(spec::generic_status::lba_out_of_range));
    const auto mdts_blocks = static_cast<std::uint32_t>(r.ctrl.max_transfer_bytes() / 512);
    EXPECT_EQ(r.host.io(1, read_checksummed_command(1, 0, mdts_blocks + 1)).status(),
              dnr(spec::generic_status::invalid_field));
    auto bad_pointer = read_checksummed_command(1, 0, 1);
    bad_pointer.dptr.prp1 = read_buffer + 1; // not dword aligned
    EXPECT_EQ(r.host.io(1, bad_pointer).status(), dnr(spec::generic_status::prp_offset_invalid));
}

/// What the host and the controller show of a command a Controller Reset caught in the backend.
struct reset_outcome {
    bool ready_while_in_backend = false;       ///< CSTS.RDY after CC.EN = 0, the read still in the backend
    std::size_t requests_while_in_backend = 0; ///< requests_in_use() then
    std::size_t io_outstanding_while_in_backend = 0;
    bool ready_after_backend = true;        ///< CSTS.RDY once the backend returned the read
    std::size_t requests_after_backend = 0; ///< requests_in_use() then
    std::size_t io_outstanding_after_backend = 0;
    std::uint64_t completions_posted = 0; ///< completions posted from CC.EN = 0 on
    bool cq_unchanged = false;            ///< the I/O CQ's memory
    bool buffer_unchanged = false;        ///< the command's data buffer
    bool works_after_bring_up = false;    ///< the same command once the host brought it up again
    friend bool operator==(const reset_outcome&, const reset_outcome&) = default;
};

void PrintTo(const reset_outcome& o, std::ostream* out)
{
    *out << "{ready " << o.ready_while_in_backend << ", requests " << o.requests_while_in_backend << ", io "
         << o.io_outstanding_while_in_backend << " | then ready " << o.ready_after_backend << ", requests "
         << o.requests_after_backend << ", io " << o.io_outstanding_after_backend << ", posted "
         << o.completions_posted << ", cq unchanged " << o.cq_unchanged << ", buffer unchanged "
         << o.buffer_unchanged << ", works after " << o.works_after_bring_up << "}";
}

/// Writes a pattern, submits `sqe` (16 blocks at LBA 8) and resets the controller while its read
/// is in the backend, on a fresh rig whose Read stages its data as Read Checksummed does.
[[nodiscard]] reset_outcome reset_with_read_in_backend(const spec::submission_queue_entry& command)
{
    staged_vendor_rig r;
    auto& backend =
        r.subsystem.add_namespace(test_backend<>{r.clock, capacity, 64, {.delay = delay}}).backend();
    r.host.bring_up();
    const auto data = pattern(16 * 512, 2);
    EXPECT_EQ(write_blocks(r, 8, data).status(), spec::status::success());

    reset_outcome outcome;
    auto sqe = command;
    const std::uint64_t buffer = point_at_buffer(r, sqe, data.size(), std::byte{0xee});
    const auto buffer_before = r.snapshot(buffer, data.size());
    const std::uint64_t io_cq = r.host.completion_entry_address(1, 0);
    const std::size_t io_cq_bytes = std::size_t{r.host.options().io_entries} * 16U;
    r.host.submit(1, sqe);
    r.ctrl.poll();
    EXPECT_EQ(backend.outstanding(), 1U);
    const auto cq_before = r.snapshot(io_cq, io_cq_bytes);
    const auto posted_before = r.ctrl.statistics().completions_posted;

    r.write_cc(r.host.cc().with(spec::cc_register::en, false));
    r.ctrl.poll();
    outcome.ready_while_in_backend = r.csts().get(spec::csts_register::rdy);
    outcome.requests_while_in_backend = r.ctrl.requests_in_use();
    outcome.io_outstanding_while_in_backend = r.ctrl.io_outstanding();
    r.clock.advance(delay);
    r.ctrl.poll();
    EXPECT_EQ(backend.outstanding(), 0U);
    outcome.ready_after_backend = r.csts().get(spec::csts_register::rdy);
    outcome.requests_after_backend = r.ctrl.requests_in_use();
    outcome.io_outstanding_after_backend = r.ctrl.io_outstanding();
    r.poll(20);
    outcome.completions_posted = r.ctrl.statistics().completions_posted - posted_before;
    outcome.cq_unchanged = r.snapshot(io_cq, io_cq_bytes) == cq_before;
    outcome.buffer_unchanged = r.snapshot(buffer, data.size()) == buffer_before;

    r.host.disable();
    r.host.bring_up();
    auto again = command;
    const std::uint64_t again_buffer = point_at_buffer(r, again, data.size());
    outcome.works_after_bring_up = r.host.io(1, again).ok() && r.snapshot(again_buffer, data.size()) == data;
    return outcome;
}

TEST(handler_context_vendor_command, a_reset_with_the_read_in_the_backend_ends_it_as_it_ends_a_read)
{
    const reset_outcome read = reset_with_read_in_backend(read_blocks_command(1, 8, 16));
    const reset_outcome vendor = reset_with_read_in_backend(read_checksummed_command(1, 8, 16));
    EXPECT_EQ(vendor, read);
    // And what that is: the reset completes once the backend has returned the read, which held its
    // request until then; nothing reaches the host.
    reset_outcome expected;
    expected.ready_while_in_backend = true;
    expected.requests_while_in_backend = 1;
    expected.io_outstanding_while_in_backend = 1;
    expected.ready_after_backend = false;
    expected.requests_after_backend = 0;
    expected.io_outstanding_after_backend = 0;
    expected.completions_posted = 0;
    expected.cq_unchanged = true;
    expected.buffer_unchanged = true;
    expected.works_after_bring_up = true;
    EXPECT_EQ(vendor, expected);
}

/// The status and Error Information entry of `command` (one block at LBA 100 of namespace 1)
/// when `inject` makes its backend read fail.
struct failure_outcome {
    spec::status status{};
    std::uint64_t error_lba = 0;
    spec::status logged{};
    bool buffer_unchanged = false;
    friend bool operator==(const failure_outcome&, const failure_outcome&) = default;
};

void PrintTo(const failure_outcome& o, std::ostream* out)
{
    *out << "{status " << o.status.raw << ", lba " << o.error_lba << ", logged " << o.logged.raw
         << ", buffer unchanged " << o.buffer_unchanged << "}";
}

template <typename Inject>
[[nodiscard]] failure_outcome fail_backend_read(const spec::submission_queue_entry& command, Inject inject)
{
    staged_vendor_rig r;
    auto& backend =
        r.subsystem.add_namespace(test_backend<>{r.clock, capacity, 64, {.delay = delay}}).backend();
    r.host.bring_up();
    EXPECT_EQ(write_blocks(r, 100, pattern(8 * 512, 3)).status(), spec::status::success());
    inject(backend);
    auto sqe = command;
    const std::uint64_t buffer = point_at_buffer(r, sqe, 8 * 512, std::byte{0xee});
    const auto before = r.snapshot(buffer, 8 * 512);
    failure_outcome outcome;
    outcome.status = r.host.io(1, sqe).status();
    outcome.buffer_unchanged = r.snapshot(buffer, 8 * 512) == before;
    std::vector<std::byte> log;
    EXPECT_TRUE(
        r.host.get_log_page(spec::log_page_id::error_information, sizeof(spec::error_information_entry), log)
            .ok());
    spec::error_information_entry entry{};
    std::memcpy(&entry, log.data(), sizeof(entry));
    outcome.error_lba = entry.lba;
    outcome.logged = entry.status();
    return outcome;
}

TEST(handler_context_vendor_command, a_failed_backend_read_is_an_unrecovered_read_error_as_for_read)
{
    const auto fail_next = [](test_backend<>& backend) {
        backend.fail_nth(1, nvmekit::block_status::unrecovered_read_error);
    };
    const auto media_error_at_lba_103 = [](test_backend<>& backend) {
        backend.add_media_error(103 * 512 + 17, 1);
    };
    for (const bool media_error : {false, true}) {
        SCOPED_TRACE(media_error ? "add_media_error" : "fail_nth");
        const auto read = media_error
                              ? fail_backend_read(read_blocks_command(1, 100, 8), media_error_at_lba_103)
                              : fail_backend_read(read_blocks_command(1, 100, 8), fail_next);
        const auto vendor =
            media_error ? fail_backend_read(read_checksummed_command(1, 100, 8), media_error_at_lba_103)
                        : fail_backend_read(read_checksummed_command(1, 100, 8), fail_next);
        EXPECT_EQ(vendor, read);
        EXPECT_EQ(vendor.status, dnr(spec::media_status::unrecovered_read_error));
        EXPECT_EQ(vendor.logged, dnr(spec::media_status::unrecovered_read_error));
        EXPECT_EQ(vendor.error_lba, media_error ? 103U : 100U); // the block in error, else the first
        EXPECT_TRUE(vendor.buffer_unchanged);
    }
}

} // namespace handler_context_test
} // namespace
