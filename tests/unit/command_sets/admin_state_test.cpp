#include <nvmekit/command_sets/admin.hpp>

// The admin commands that change controller and namespace state, through the controller and the
// in-process host: Keep Alive, Abort, Namespace Attachment, Format NVM, Firmware Image Download and
// Firmware Commit (Set/Get Features: features_test.cpp).

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <ostream>
#include <span>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <nvmekit/backends/ram_backend.hpp>
#include <nvmekit/controller.hpp>
#include <nvmekit/testing/test_backend.hpp>

#include "command_sets/feature_helpers.hpp"
#include "controller_fixture.hpp"

namespace {
namespace command_sets_admin_state_test {

namespace spec = nvmekit::spec;
using namespace nvmekit_test;
using namespace std::chrono_literals;
using select = spec::feature_select;
using fid = spec::feature_id;

// ---- suites over both transports ---------------------------------------------------------------

// Keep Alive, Abort, Namespace Attachment, Format NVM and the firmware commands run over PCIe and
// over the loopback transport; resets written straight to the CC or NSSR register stay TEST()s
// over PCIe.
NVMEKIT_TEST_SUITE_OVER_TRANSPORTS(admin_keep_alive);
NVMEKIT_TEST_SUITE_OVER_TRANSPORTS(admin_abort);
NVMEKIT_TEST_SUITE_OVER_TRANSPORTS(admin_namespace_attachment);
NVMEKIT_TEST_SUITE_OVER_TRANSPORTS(admin_format);
NVMEKIT_TEST_SUITE_OVER_TRANSPORTS(admin_firmware);
// Format NVM's metadata settings also run over the loopback transport with a fabrics identity,
// which takes metadata only in an extended LBA.
NVMEKIT_TEST_SUITE_OVER_LOCAL_AND_FABRIC(admin_format_metadata);

// ---- Keep Alive (Base 2.0 3.9) ---------------------------------------------------------------------

TYPED_TEST(admin_keep_alive, no_keep_alive_within_kato_fails_the_controller)
{
    TypeParam r;
    r.host.bring_up();
    ASSERT_EQ(set_feature(r, fid::keep_alive_timer, 1000).status(), spec::status::success());
    r.clock.advance(1000ms);
    r.ctrl.poll();
    EXPECT_FALSE(r.csts().get(spec::csts_register::cfs)); // exactly KATO: not yet expired
    r.clock.advance(1ms);
    r.ctrl.poll();
    EXPECT_TRUE(r.csts().get(spec::csts_register::cfs));
    EXPECT_EQ(r.ctrl.state(), nvmekit::controller_state::failed);

    ASSERT_EQ(r.ctrl.errors().size(), 1U);
    const auto entry = r.ctrl.errors().entry(0);
    EXPECT_EQ(entry.error_count, 1U);
    EXPECT_EQ(entry.status(), spec::status{spec::generic_status::keep_alive_timer_expired});
    EXPECT_EQ(entry.sqid, 0xffffU); // not tied to a command
    EXPECT_EQ(entry.cid, 0xffffU);
    EXPECT_EQ(entry.nsid, 0U);

    // A failed controller runs no command; a reset recovers it, with the timer stopped.
    if constexpr (over_pcie<TypeParam>) {
        r.host.submit(0, host_type::command(spec::admin_opcode::keep_alive));
        r.poll(5);
        EXPECT_EQ(r.host.outstanding(0), 2U); // the Asynchronous Event Request and the Keep Alive
    } else {
        // A message-based queue refuses the command when it is handed over.
        EXPECT_THROW(r.host.submit(0, host_type::command(spec::admin_opcode::keep_alive)),
                     nvmekit::testing::host_error);
        r.poll(5);
        EXPECT_EQ(r.host.outstanding(0), 1U); // the Asynchronous Event Request
    }
    controller_reset(r);
    EXPECT_FALSE(r.csts().get(spec::csts_register::cfs));
    // The Error Information log survives the reset: the host reads why the controller failed.
    std::vector<std::byte> log;
    ASSERT_TRUE(r.host.get_log_page(spec::log_page_id::error_information, 64, log).ok());
    spec::error_information_entry logged{};
    std::memcpy(&logged, log.data(), sizeof logged);
    EXPECT_EQ(logged.error_count, 1U);
    EXPECT_EQ(logged.status(), spec::status{spec::generic_status::keep_alive_timer_expired});
    r.clock.advance(10s);
    r.ctrl.poll();
    EXPECT_FALSE(r.csts().get(spec::csts_register::cfs));
}

TYPED_TEST(admin_keep_alive, keep_alive_commands_keep_the_controller_alive)
{
    TypeParam r;
    r.host.bring_up();
    ASSERT_EQ(set_feature(r, fid::keep_alive_timer, 1000).status(), spec::status::success());
    for (int i = 0; i < 20; ++i) {
        r.clock.advance(900ms);
        const auto alive = r.host.admin(host_type::command(spec::admin_opcode::keep_alive));
        ASSERT_EQ(alive.status(), spec::status::success()) << i;
        EXPECT_EQ(alive.cqe.dw0, 0U);
        EXPECT_FALSE(r.csts().get(spec::csts_register::cfs)) << i;
    }
    EXPECT_EQ(r.ctrl.errors().size(), 0U);
    // Then the keep alives stop.
    r.clock.advance(1001ms);
    r.ctrl.poll();
    EXPECT_TRUE(r.csts().get(spec::csts_register::cfs));
}

TYPED_TEST(admin_keep_alive, other_commands_do_not_restart_the_timer)
{
    TypeParam r;
    r.host.bring_up();
    ASSERT_EQ(set_feature(r, fid::keep_alive_timer, 1000).status(), spec::status::success());
    r.clock.advance(600ms);
    ASSERT_TRUE(get_feature(r, fid::arbitration, select::current).ok());
    r.clock.advance(401ms);
    r.ctrl.poll();
    EXPECT_TRUE(r.csts().get(spec::csts_register::cfs));
}

TYPED_TEST(admin_keep_alive, setting_kato_restarts_the_timer_and_zero_stops_it)
{
    TypeParam r;
    r.host.bring_up();
    ASSERT_EQ(set_feature(r, fid::keep_alive_timer, 1000).status(), spec::status::success());
    r.clock.advance(800ms);
    ASSERT_EQ(set_feature(r, fid::keep_alive_timer, 1000).status(), spec::status::success());
    r.clock.advance(800ms);
    r.ctrl.poll();
    EXPECT_FALSE(r.csts().get(spec::csts_register::cfs)); // 1.6 s since the first Set, 0.8 s since the second
    ASSERT_EQ(set_feature(r, fid::keep_alive_timer, 0).status(), spec::status::success());
    r.clock.advance(60s);
    r.ctrl.poll();
    EXPECT_FALSE(r.csts().get(spec::csts_register::cfs));
    EXPECT_EQ(r.ctrl.errors().size(), 0U);
}

TYPED_TEST(admin_keep_alive, without_kato_keep_alive_succeeds_and_nothing_expires)
{
    TypeParam r;
    r.host.bring_up();
    EXPECT_EQ(r.host.admin(host_type::command(spec::admin_opcode::keep_alive)).status(),
              spec::status::success());
    r.clock.advance(600s);
    r.ctrl.poll();
    EXPECT_FALSE(r.csts().get(spec::csts_register::cfs));
}

// ---- Abort (Base 2.0 5.1) -----------------------------------------------------------------------

/// Host memory reached by read and write only: every I/O needs a staging buffer.
class copying_dma {
public:
    explicit copying_dma(nvmekit::testing::flat_memory& memory) : memory_{&memory} {}
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
static_assert(!nvmekit::MappingDmaProvider<copying_dma>);

struct one_staging_buffer_traits : test_traits {
    using dma = copying_dma;
    using backend = nvmekit::testing::test_backend<>;
    static constexpr nvmekit::limits limits{.staging_buffers = 1};
};

[[nodiscard]] spec::submission_queue_entry abort_command(std::uint16_t sqid, std::uint16_t cid)
{
    auto sqe = host_type::command(spec::admin_opcode::abort);
    spec::abort_view{.sq_id = sqid, .command_id = cid}.encode(sqe);
    return sqe;
}

TYPED_TEST(admin_abort, a_command_that_is_not_outstanding_is_not_aborted)
{
    TypeParam r;
    r.host.bring_up();
    for (const auto& [sqid, cid] :
         std::array<std::pair<std::uint16_t, std::uint16_t>, 3>{{{1, 0xbeef}, {0, 0x1234}, {7, 1}}}) {
        const auto result = r.host.admin(abort_command(sqid, cid));
        EXPECT_EQ(result.status(), spec::status::success());
        EXPECT_EQ(result.cqe.dw0 & 1U, 1U) << sqid << ":" << cid;
    }
}

TYPED_TEST(admin_abort, a_command_waiting_for_a_staging_buffer_is_aborted)
{
    rig_for<TypeParam, one_staging_buffer_traits> r;
    auto& ns =
        r.subsystem.add_namespace(nvmekit::testing::test_backend<>{r.clock, 1 << 20, 8, {.delay = 50ms}});
    r.host.bring_up();
    const auto first_buffer = r.host.allocate(4096);
    const auto second_buffer = r.host.allocate(4096);
    std::vector<std::byte> pattern(4096, std::byte{0x3c});
    std::ranges::copy(pattern, r.memory.bytes(first_buffer, 4096).begin());
    std::ranges::copy(pattern, r.memory.bytes(second_buffer, 4096).begin());
    auto first = host_type::lba_command<spec::write_view>(spec::nvm_opcode::write, 1, 0, 8);
    r.host.describe_data(first, first_buffer, 4096);
    auto second = host_type::lba_command<spec::write_view>(spec::nvm_opcode::write, 1, 8, 8);
    r.host.describe_data(second, second_buffer, 4096);
    const auto first_cid = r.host.submit(1, first);
    const auto second_cid = r.host.submit(1, second);
    r.step(); // the first write holds the only staging buffer in the backend; the second waits
    EXPECT_EQ(r.ctrl.statistics().staging_waits, 1U);
    EXPECT_EQ(ns.backend().outstanding(), 1U);

    const auto aborted = r.host.admin(abort_command(1, second_cid));
    EXPECT_EQ(aborted.status(), spec::status::success());
    EXPECT_EQ(aborted.cqe.dw0 & 1U, 0U);
    const auto second_done = r.host.wait_for(1, second_cid);
    EXPECT_EQ(second_done.status(), spec::status{spec::generic_status::abort_requested});

    // The first write is in the backend: Abort does not reach it, and it completes normally.
    const auto not_aborted = r.host.admin(abort_command(1, first_cid));
    EXPECT_EQ(not_aborted.status(), spec::status::success());
    EXPECT_EQ(not_aborted.cqe.dw0 & 1U, 1U);
    EXPECT_EQ(r.host.wait_for(1, first_cid).status(), spec::status::success());
    r.poll(60);
    EXPECT_EQ(ns.backend().submitted(), 1U); // the aborted write never reached the backend
    std::vector<std::byte> stored(4096);
    ns.backend().peek(0, stored);
    EXPECT_EQ(stored, pattern);
    ns.backend().peek(4096, stored);
    EXPECT_EQ(stored, std::vector<std::byte>(4096));

    // The aborted command left an Error Information entry.
    ASSERT_GE(r.ctrl.errors().size(), 1U);
    const auto entry = r.ctrl.errors().entry(0);
    EXPECT_EQ(entry.sqid, 1U);
    EXPECT_EQ(entry.cid, second_cid);
    EXPECT_EQ(entry.status(), spec::status{spec::generic_status::abort_requested});

    // The queue still works: a write after the abort gets the staging buffer.
    auto third = host_type::lba_command<spec::write_view>(spec::nvm_opcode::write, 1, 8, 8);
    r.host.describe_data(third, second_buffer, 4096);
    EXPECT_EQ(r.host.io(1, third).status(), spec::status::success());
    EXPECT_EQ(r.ctrl.requests_in_use(), 0U);
}

// ---- Namespace Attachment (Base 2.0 5.23) ---------------------------------------------------------

template <typename Rig>
nvmekit::testing::completion namespace_attachment(Rig& r, std::uint32_t nsid, std::uint8_t sel,
                                                  const std::vector<std::uint16_t>& list, std::uint16_t count)
{
    // Controller List: the number of identifiers, then the identifiers, in a 4 KiB buffer.
    const auto buffer = r.host.allocate(4096);
    r.memory.store(buffer, count);
    for (std::size_t i = 0; i < list.size(); ++i) {
        r.memory.store(buffer + 2 + 2 * i, list[i]);
    }
    auto sqe = Rig::host_type::command(spec::admin_opcode::namespace_attachment, nsid);
    sqe.cdw10 = sel;
    r.host.describe_data(sqe, buffer, 4096);
    return r.host.admin(sqe);
}

template <typename Rig>
nvmekit::testing::completion attach(Rig& r, std::uint32_t nsid, const std::vector<std::uint16_t>& list)
{
    return namespace_attachment(r, nsid, 0, list, static_cast<std::uint16_t>(list.size()));
}

template <typename Rig>
nvmekit::testing::completion detach(Rig& r, std::uint32_t nsid, const std::vector<std::uint16_t>& list)
{
    return namespace_attachment(r, nsid, 1, list, static_cast<std::uint16_t>(list.size()));
}

/// The Active Namespace ID list (CNS 02h) from NSID 0, up to its first zero.
template <typename Rig>
std::vector<std::uint32_t> active_namespaces(Rig& r)
{
    std::vector<std::byte> out;
    const auto result = r.host.admin_read(
        Rig::host_type::identify_command(spec::cns::active_namespace_list, 0, 0), 4096, out);
    EXPECT_EQ(result.status(), spec::status::success());
    std::vector<std::uint32_t> nsids;
    for (std::size_t i = 0; i < 1024; ++i) {
        std::uint32_t nsid = 0;
        std::memcpy(&nsid, out.data() + 4 * i, 4);
        if (nsid == 0) {
            break;
        }
        nsids.push_back(nsid);
    }
    return nsids;
}

template <typename Rig>
spec::identify_namespace identify_namespace(Rig& r, std::uint32_t nsid)
{
    std::vector<std::byte> out;
    const auto result = r.host.admin_read(
        Rig::host_type::identify_command(spec::cns::identify_namespace, nsid, 0), 4096, out);
    EXPECT_EQ(result.status(), spec::status::success());
    spec::identify_namespace data{};
    std::memcpy(&data, out.data(), sizeof(data));
    return data;
}

/// Writes `blocks` 512-byte blocks of `fill` at `slba` of `nsid` through I/O queue 1.
template <typename Rig>
spec::status write_blocks(Rig& r, std::uint32_t nsid, std::uint64_t slba, std::uint32_t blocks,
                          std::byte fill, std::uint32_t block_bytes = 512)
{
    const std::size_t bytes = std::size_t{blocks} * block_bytes;
    const auto buffer = r.host.allocate(bytes);
    const auto span = r.memory.bytes(buffer, bytes);
    std::fill(span.begin(), span.end(), fill);
    auto sqe =
        Rig::host_type::template lba_command<spec::write_view>(spec::nvm_opcode::write, nsid, slba, blocks);
    r.host.describe_data(sqe, buffer, bytes);
    return r.host.io(1, sqe).status();
}

/// Reads `blocks` blocks at `slba` of `nsid` through I/O queue 1; `out` receives the data.
template <typename Rig>
spec::status read_blocks(Rig& r, std::uint32_t nsid, std::uint64_t slba, std::uint32_t blocks,
                         std::vector<std::byte>& out, std::uint32_t block_bytes = 512)
{
    const std::size_t bytes = std::size_t{blocks} * block_bytes;
    const auto buffer = r.host.allocate(bytes);
    const auto span = r.memory.bytes(buffer, bytes);
    std::fill(span.begin(), span.end(), std::byte{0xcc});
    auto sqe = Rig::host_type::lba_command(spec::nvm_opcode::read, nsid, slba, blocks);
    r.host.describe_data(sqe, buffer, bytes);
    const auto status = r.host.io(1, sqe).status();
    out.assign(span.begin(), span.end());
    return status;
}

/// Reads the 512-byte block `slba` of `nsid` and expects every byte of it to be `fill`.
template <typename Rig>
void expect_block_holds(Rig& r, std::uint32_t nsid, std::uint64_t slba, std::byte fill)
{
    std::vector<std::byte> data;
    ASSERT_EQ(read_blocks(r, nsid, slba, 1, data), spec::status::success());
    EXPECT_EQ(data, std::vector<std::byte>(512, fill));
}

TYPED_TEST(admin_namespace_attachment, detach_and_attach_for_this_controller)
{
    TypeParam r;
    r.subsystem.add_namespace(nvmekit::ram_backend{1 << 20});
    r.subsystem.add_namespace(nvmekit::ram_backend{1 << 20});
    r.host.bring_up();
    const std::uint16_t self = r.ctrl.controller_id();
    ASSERT_EQ(write_blocks(r, 1, 4, 2, std::byte{0x77}), spec::status::success());
    EXPECT_EQ(active_namespaces(r), (std::vector<std::uint32_t>{1, 2}));
    std::vector<std::byte> log;
    ASSERT_TRUE(r.host.get_log_page(spec::log_page_id::changed_namespace_list, 4096, log).ok()); // clears it

    EXPECT_EQ(detach(r, 1, {self}).status(), spec::status::success());
    EXPECT_EQ(active_namespaces(r), (std::vector<std::uint32_t>{2}));
    EXPECT_EQ(identify_namespace(r, 1).nsze, 0U); // inactive: zero filled
    EXPECT_EQ(identify_namespace(r, 2).nsze, 2048U);
    std::vector<std::byte> data;
    EXPECT_EQ(read_blocks(r, 1, 4, 2, data), dnr(spec::generic_status::invalid_namespace_or_format));
    EXPECT_EQ(write_blocks(r, 1, 4, 2, std::byte{0x11}),
              dnr(spec::generic_status::invalid_namespace_or_format));
    EXPECT_FALSE(r.subsystem.find(1)->attached_to(self));

    EXPECT_EQ(attach(r, 1, {self}).status(), spec::status::success());
    EXPECT_EQ(active_namespaces(r), (std::vector<std::uint32_t>{1, 2}));
    EXPECT_EQ(identify_namespace(r, 1).nsze, 2048U);
    EXPECT_EQ(read_blocks(r, 1, 4, 2, data), spec::status::success());
    EXPECT_EQ(data, std::vector<std::byte>(1024, std::byte{0x77})); // the data stayed in the namespace

    // Both changes are in the Changed Namespace List log, once.
    ASSERT_TRUE(r.host.get_log_page(spec::log_page_id::changed_namespace_list, 4096, log).ok());
    spec::changed_namespace_list changed{};
    std::memcpy(&changed, log.data(), sizeof(changed));
    EXPECT_EQ(changed.nsids[0], 1U);
    EXPECT_EQ(changed.nsids[1], 0U);
}

TYPED_TEST(admin_namespace_attachment, attaching_an_attached_namespace_is_refused)
{
    TypeParam r;
    r.subsystem.add_namespace(nvmekit::ram_backend{1 << 20});
    r.host.bring_up();
    EXPECT_EQ(attach(r, 1, {r.ctrl.controller_id()}).status(),
              dnr(spec::command_specific_status::namespace_already_attached));
    EXPECT_EQ(active_namespaces(r), (std::vector<std::uint32_t>{1}));
}

TYPED_TEST(admin_namespace_attachment, detaching_a_detached_namespace_is_refused)
{
    TypeParam r;
    r.subsystem.add_namespace(nvmekit::ram_backend{1 << 20});
    r.host.bring_up();
    ASSERT_EQ(detach(r, 1, {r.ctrl.controller_id()}).status(), spec::status::success());
    EXPECT_EQ(detach(r, 1, {r.ctrl.controller_id()}).status(),
              dnr(spec::command_specific_status::namespace_not_attached));
    EXPECT_TRUE(active_namespaces(r).empty());
}

TYPED_TEST(admin_namespace_attachment, an_invalid_controller_list_changes_nothing)
{
    TypeParam r;
    r.subsystem.add_namespace(nvmekit::ram_backend{1 << 20});
    r.host.bring_up();
    const std::uint16_t self = r.ctrl.controller_id();
    const auto invalid = dnr(spec::command_specific_status::controller_list_invalid);
    EXPECT_EQ(namespace_attachment(r, 1, 1, {}, 0).status(), invalid);        // no identifier
    EXPECT_EQ(namespace_attachment(r, 1, 1, {self}, 0).status(), invalid);    // count 0
    EXPECT_EQ(detach(r, 1, {0x77}).status(), invalid);                        // no such controller
    EXPECT_EQ(detach(r, 1, {self, 0x77}).status(), invalid);                  // one of them unknown
    EXPECT_EQ(detach(r, 1, {self, self}).status(), invalid);                  // duplicate
    EXPECT_EQ(namespace_attachment(r, 1, 1, {self}, 2048).status(), invalid); // more than 2047
    EXPECT_EQ(attach(r, 1, {0xffff}).status(), invalid);
    EXPECT_EQ(active_namespaces(r), (std::vector<std::uint32_t>{1}));
    EXPECT_TRUE(r.subsystem.find(1)->attached_to(self));
}

TYPED_TEST(admin_namespace_attachment, broadcast_unknown_nsid_and_reserved_select_are_invalid_field)
{
    TypeParam r;
    r.subsystem.add_namespace(nvmekit::ram_backend{1 << 20});
    r.host.bring_up();
    const std::uint16_t self = r.ctrl.controller_id();
    const auto invalid_field = dnr(spec::generic_status::invalid_field);
    EXPECT_EQ(detach(r, 0xffffffffU, {self}).status(), invalid_field);
    EXPECT_EQ(detach(r, 5, {self}).status(), invalid_field);
    EXPECT_EQ(detach(r, 0, {self}).status(), invalid_field);
    EXPECT_EQ(namespace_attachment(r, 1, 2, {self}, 1).status(), invalid_field);
    EXPECT_EQ(namespace_attachment(r, 1, 0xf, {self}, 1).status(), invalid_field);
    EXPECT_EQ(active_namespaces(r), (std::vector<std::uint32_t>{1}));
}

TYPED_TEST(admin_namespace_attachment, a_list_naming_another_controller_changes_only_that_controller)
{
    TypeParam r;
    r.subsystem.add_namespace(nvmekit::ram_backend{1 << 20});
    const auto other = r.make_peer(r.msix);
    r.host.bring_up();
    const std::uint16_t self = r.ctrl.controller_id();
    const std::uint16_t other_id = other->controller_id();
    ASSERT_NE(self, other_id);
    EXPECT_TRUE(r.subsystem.find(1)->attached_to(other_id));
    EXPECT_EQ(detach(r, 1, {other_id}).status(), spec::status::success());
    EXPECT_FALSE(r.subsystem.find(1)->attached_to(other_id));
    EXPECT_EQ(active_namespaces(r), (std::vector<std::uint32_t>{1}));
    // Both at once: the other is not attached, so nothing changes.
    EXPECT_EQ(detach(r, 1, {self, other_id}).status(),
              dnr(spec::command_specific_status::namespace_not_attached));
    EXPECT_TRUE(r.subsystem.find(1)->attached_to(self));
    EXPECT_EQ(attach(r, 1, {other_id}).status(), spec::status::success());
    EXPECT_EQ(detach(r, 1, {other_id, self}).status(), spec::status::success());
    EXPECT_FALSE(r.subsystem.find(1)->attached_to(self));
    EXPECT_FALSE(r.subsystem.find(1)->attached_to(other_id));
    EXPECT_TRUE(active_namespaces(r).empty());
}

// ---- Format NVM (Base 2.0 5.14) ------------------------------------------------------------------

[[nodiscard]] spec::submission_queue_entry
format_command(std::uint32_t nsid, std::uint8_t lbaf, bool extended = false,
               spec::format_secure_erase ses = spec::format_secure_erase::none,
               spec::format_protection_type pi = spec::format_protection_type::none)
{
    auto sqe = host_type::command(spec::admin_opcode::format_nvm, nsid);
    spec::format_nvm_view{.format_index = lbaf,
                          .metadata_in_extended_lba = extended,
                          .protection_type = pi,
                          .secure_erase = ses}
        .encode(sqe);
    return sqe;
}

constexpr std::uint64_t namespace_bytes = 1 << 20;

TYPED_TEST(admin_format, a_new_lba_format_shows_in_identify_namespace_and_old_data_reads_zero)
{
    TypeParam r;
    r.subsystem.add_namespace(nvmekit::ram_backend{namespace_bytes});
    r.host.bring_up();
    ASSERT_EQ(write_blocks(r, 1, 0, 16, std::byte{0x5a}), spec::status::success());
    const auto before = identify_namespace(r, 1);
    EXPECT_EQ(before.nsze, 2048U);
    EXPECT_EQ(before.flbas.format_index(), 0U);

    EXPECT_EQ(r.host.admin(format_command(1, 2)).status(), spec::status::success());
    const auto after = identify_namespace(r, 1);
    EXPECT_EQ(after.nsze, namespace_bytes / 4096);
    EXPECT_EQ(after.ncap, namespace_bytes / 4096);
    EXPECT_EQ(after.flbas.format_index(), 2U);
    EXPECT_FALSE(after.flbas.get(spec::formatted_lba_size::extended_metadata));
    EXPECT_EQ(after.lbaf[2].get(spec::lba_format::lbads), 12U);
    std::vector<std::byte> data;
    ASSERT_EQ(read_blocks(r, 1, 0, 2, data, 4096), spec::status::success());
    EXPECT_EQ(data, std::vector<std::byte>(8192));
    // Blocks are 4 KiB now: LBA 256 is past the end.
    EXPECT_EQ(read_blocks(r, 1, 255, 1, data, 4096), spec::status::success());
    EXPECT_EQ(read_blocks(r, 1, 256, 1, data, 4096), dnr(spec::generic_status::lba_out_of_range));

    ASSERT_EQ(write_blocks(r, 1, 3, 1, std::byte{0x42}, 4096), spec::status::success());
    EXPECT_EQ(r.host.admin(format_command(1, 0, false, spec::format_secure_erase::user_data_erase)).status(),
              spec::status::success());
    EXPECT_EQ(identify_namespace(r, 1).nsze, 2048U);
    ASSERT_EQ(read_blocks(r, 1, 24, 8, data), spec::status::success());
    EXPECT_EQ(data, std::vector<std::byte>(4096));
}

TYPED_TEST(admin_format, mset_selects_extended_or_separate_metadata)
{
    TypeParam r;
    r.subsystem.add_namespace(nvmekit::ram_backend{namespace_bytes});
    r.host.bring_up();

    EXPECT_EQ(r.host.admin(format_command(1, 1, true)).status(), spec::status::success());
    auto id = identify_namespace(r, 1);
    EXPECT_EQ(id.flbas.format_index(), 1U);
    EXPECT_TRUE(id.flbas.get(spec::formatted_lba_size::extended_metadata));
    EXPECT_EQ(id.nsze, namespace_bytes / 520);
    // A block is 520 bytes on the wire: data and metadata round trip in the data buffer.
    const auto buffer = r.host.allocate(1040);
    const auto span = r.memory.bytes(buffer, 1040);
    for (std::size_t i = 0; i < span.size(); ++i) {
        span[i] = static_cast<std::byte>(i * 7 + 1);
    }
    const std::vector<std::byte> written(span.begin(), span.end());
    auto write = host_type::lba_command<spec::write_view>(spec::nvm_opcode::write, 1, 10, 2);
    r.host.describe_data(write, buffer, 1040);
    ASSERT_EQ(r.host.io(1, write).status(), spec::status::success());
    std::vector<std::byte> data;
    ASSERT_EQ(read_blocks(r, 1, 10, 2, data, 520), spec::status::success());
    EXPECT_EQ(data, written);

    EXPECT_EQ(r.host.admin(format_command(1, 3, true)).status(), spec::status::success());
    id = identify_namespace(r, 1);
    EXPECT_EQ(id.flbas.format_index(), 3U);
    EXPECT_TRUE(id.flbas.get(spec::formatted_lba_size::extended_metadata));
    EXPECT_EQ(id.nsze, namespace_bytes / 4160);

    EXPECT_EQ(r.host.admin(format_command(1, 1, false)).status(), spec::status::success());
    id = identify_namespace(r, 1);
    EXPECT_EQ(id.flbas.format_index(), 1U);
    EXPECT_FALSE(id.flbas.get(spec::formatted_lba_size::extended_metadata));
    EXPECT_EQ(id.nsze, namespace_bytes / 520);

    // MSET on a format without metadata: nothing to place, FLBAS bit 4 stays 0.
    EXPECT_EQ(r.host.admin(format_command(1, 2, true)).status(), spec::status::success());
    id = identify_namespace(r, 1);
    EXPECT_EQ(id.flbas.format_index(), 2U);
    EXPECT_FALSE(id.flbas.get(spec::formatted_lba_size::extended_metadata));
}

TYPED_TEST(admin_format, unsupported_formats_and_protection_are_invalid_format)
{
    TypeParam r;
    r.subsystem.add_namespace(nvmekit::ram_backend{namespace_bytes});
    r.host.bring_up();
    ASSERT_EQ(write_blocks(r, 1, 0, 1, std::byte{0x99}), spec::status::success());
    const auto invalid_format = dnr(spec::command_specific_status::invalid_format);
    EXPECT_EQ(r.host.admin(format_command(1, 4)).status(), invalid_format);
    EXPECT_EQ(r.host.admin(format_command(1, 16)).status(), invalid_format); // LBAFU
    EXPECT_EQ(r.host
                  .admin(format_command(1, 1, false, spec::format_secure_erase::none,
                                        spec::format_protection_type::type1))
                  .status(),
              invalid_format);
    EXPECT_EQ(r.host
                  .admin(format_command(1, 3, true, spec::format_secure_erase::none,
                                        spec::format_protection_type::type3))
                  .status(),
              invalid_format);
    const auto id = identify_namespace(r, 1);
    EXPECT_EQ(id.flbas.format_index(), 0U);
    EXPECT_EQ(id.nsze, 2048U);
    expect_block_holds(r, 1, 0, std::byte{0x99}); // nothing was erased
}

TYPED_TEST(admin_format, cryptographic_and_reserved_secure_erase_are_invalid_field)
{
    TypeParam r;
    r.subsystem.add_namespace(nvmekit::ram_backend{namespace_bytes});
    r.host.bring_up();
    ASSERT_EQ(write_blocks(r, 1, 0, 1, std::byte{0x99}), spec::status::success());
    EXPECT_EQ(
        r.host.admin(format_command(1, 2, false, spec::format_secure_erase::cryptographic_erase)).status(),
        dnr(spec::generic_status::invalid_field));
    auto reserved = format_command(1, 2);
    reserved.cdw10 |= 0b111U << 9; // SES 111b
    EXPECT_EQ(r.host.admin(reserved).status(), dnr(spec::generic_status::invalid_field));
    EXPECT_EQ(identify_namespace(r, 1).flbas.format_index(), 0U);
    expect_block_holds(r, 1, 0, std::byte{0x99});
}

TYPED_TEST(admin_format, broadcast_nsid_formats_every_attached_namespace)
{
    TypeParam r;
    r.subsystem.add_namespace(nvmekit::ram_backend{namespace_bytes});
    r.subsystem.add_namespace(nvmekit::ram_backend{2 * namespace_bytes});
    r.subsystem.add_namespace(nvmekit::ram_backend{namespace_bytes}, {}, 7);
    r.subsystem.add_namespace(nvmekit::ram_backend{namespace_bytes}, {}, 9);
    r.host.bring_up();
    for (const std::uint32_t nsid : {1U, 2U, 7U, 9U}) {
        ASSERT_EQ(write_blocks(r, nsid, 0, 1, std::byte{0x31}), spec::status::success());
    }
    ASSERT_TRUE(r.subsystem.detach(9, r.ctrl.controller_id()));

    EXPECT_EQ(r.host.admin(format_command(0xffffffffU, 2)).status(), spec::status::success());
    std::vector<std::byte> data;
    for (const std::uint32_t nsid : {1U, 2U, 7U}) {
        SCOPED_TRACE(nsid);
        const auto id = identify_namespace(r, nsid);
        EXPECT_EQ(id.flbas.format_index(), 2U);
        EXPECT_EQ(id.nsze, (nsid == 2 ? 2 : 1) * namespace_bytes / 4096);
        ASSERT_EQ(read_blocks(r, nsid, 0, 1, data, 4096), spec::status::success());
        EXPECT_EQ(data, std::vector<std::byte>(4096));
    }
    // The namespace attached to no controller here kept its format and data.
    auto* detached = r.subsystem.find(9);
    EXPECT_EQ(detached->lba_format(), 0U);
    std::array<std::byte, 512> kept{};
    nvmekit::io_segment segment{kept.data(), kept.size()};
    nvmekit::block_request read{.operation = nvmekit::block_operation::read,
                                .offset = 0,
                                .length = 512,
                                .segments = std::span{&segment, 1}};
    bool done = false;
    read.context = &done;
    read.complete = [](nvmekit::block_request& request, nvmekit::block_status status) {
        EXPECT_EQ(status, nvmekit::block_status::success);
        *static_cast<bool*>(request.context) = true;
    };
    detached->backend().submit(read);
    while (!done) {
        detached->backend().poll();
    }
    std::array<std::byte, 512> expected{};
    expected.fill(std::byte{0x31});
    EXPECT_EQ(kept, expected);
}

/// `size` bytes of a pattern that differs with `seed`.
[[nodiscard]] std::vector<std::byte> pattern_bytes(std::size_t size, unsigned seed)
{
    std::vector<std::byte> bytes(size);
    for (std::size_t i = 0; i < size; ++i) {
        bytes[i] = static_cast<std::byte>((i * 37U + seed * 101U + (i >> 8)) & 0xffU);
    }
    return bytes;
}

/// Writes `blocks` blocks at `slba` of namespace 1, formatted with separate metadata: the data
/// (`data_bytes` a block) in the data buffer and the metadata (`metadata_bytes` a block) in a
/// buffer of its own at MPTR; then reads both back into fresh buffers.
template <typename Rig>
void expect_separate_metadata_round_trip(Rig& r, std::uint64_t slba, std::uint32_t blocks,
                                         std::uint32_t data_bytes, std::uint32_t metadata_bytes)
{
    const auto data = pattern_bytes(std::size_t{blocks} * data_bytes, static_cast<unsigned>(slba));
    const auto metadata =
        pattern_bytes(std::size_t{blocks} * metadata_bytes, static_cast<unsigned>(slba) + 1U);
    const auto store = [&](const std::vector<std::byte>& bytes) {
        const auto buffer = r.host.allocate(bytes.size());
        std::ranges::copy(bytes, r.memory.bytes(buffer, bytes.size()).begin());
        return buffer;
    };
    auto write =
        Rig::host_type::template lba_command<spec::write_view>(spec::nvm_opcode::write, 1, slba, blocks);
    r.host.describe_data(write, store(data), data.size());
    write.mptr = store(metadata);
    ASSERT_EQ(r.host.io(1, write).status(), spec::status::success());

    const auto data_back = store(std::vector<std::byte>(data.size(), std::byte{0xcc}));
    const auto metadata_back = store(std::vector<std::byte>(metadata.size(), std::byte{0xcc}));
    auto read = Rig::host_type::lba_command(spec::nvm_opcode::read, 1, slba, blocks);
    r.host.describe_data(read, data_back, data.size());
    read.mptr = metadata_back;
    ASSERT_EQ(r.host.io(1, read).status(), spec::status::success());
    const auto data_read = r.memory.bytes(data_back, data.size());
    const auto metadata_read = r.memory.bytes(metadata_back, metadata.size());
    EXPECT_EQ(std::vector<std::byte>(data_read.begin(), data_read.end()), data);
    EXPECT_EQ(std::vector<std::byte>(metadata_read.begin(), metadata_read.end()), metadata);
}

/// Writes `blocks` extended LBAs of `unit_bytes` (data then metadata) at `slba` of namespace 1 and
/// reads them back.
template <typename Rig>
void expect_extended_round_trip(Rig& r, std::uint64_t slba, std::uint32_t blocks, std::uint32_t unit_bytes)
{
    const auto written = pattern_bytes(std::size_t{blocks} * unit_bytes, static_cast<unsigned>(slba) + 7U);
    const auto buffer = r.host.allocate(written.size());
    std::ranges::copy(written, r.memory.bytes(buffer, written.size()).begin());
    auto write =
        Rig::host_type::template lba_command<spec::write_view>(spec::nvm_opcode::write, 1, slba, blocks);
    r.host.describe_data(write, buffer, written.size());
    ASSERT_EQ(r.host.io(1, write).status(), spec::status::success());
    std::vector<std::byte> back;
    ASSERT_EQ(read_blocks(r, 1, slba, blocks, back, unit_bytes), spec::status::success());
    EXPECT_EQ(back, written);
}

// nvme format --lbaf=1 (and 3) as nvme-cli sends it, MSET 0, then --ms=1: Identify Namespace
// reports the new FLBAS and NSZE, and data and metadata round trip through MPTR, then in the
// extended LBA, up to the last block.
TYPED_TEST(admin_format, lba_formats_with_metadata_take_it_at_mptr_or_in_the_extended_lba)
{
    TypeParam r;
    r.subsystem.add_namespace(nvmekit::ram_backend{namespace_bytes});
    r.host.bring_up();
    for (const std::uint8_t lbaf : {std::uint8_t{1}, std::uint8_t{3}}) {
        SCOPED_TRACE(static_cast<int>(lbaf));
        const auto& format = nvmekit::supported_lba_formats[lbaf];
        const std::uint32_t unit = format.data_bytes + format.metadata_bytes;

        ASSERT_EQ(r.host.admin(format_command(1, lbaf)).status(), spec::status::success());
        auto id = identify_namespace(r, 1);
        EXPECT_EQ(id.flbas.raw, lbaf); // the index, bit 4 clear: separate metadata
        EXPECT_EQ(id.nsze, namespace_bytes / unit);
        EXPECT_EQ(id.lbaf[lbaf].get(spec::lba_format::ms), format.metadata_bytes);
        EXPECT_EQ(id.mc.raw, 0x3U);
        expect_separate_metadata_round_trip(r, 3, 2, format.data_bytes, format.metadata_bytes);
        expect_separate_metadata_round_trip(r, id.nsze - 1, 1, format.data_bytes, format.metadata_bytes);

        ASSERT_EQ(r.host.admin(format_command(1, lbaf, true)).status(), spec::status::success());
        id = identify_namespace(r, 1);
        EXPECT_EQ(id.flbas.raw, lbaf | 0x10U); // bit 4: metadata in the extended LBA
        EXPECT_EQ(id.nsze, namespace_bytes / unit);
        std::vector<std::byte> erased;
        ASSERT_EQ(read_blocks(r, 1, 3, 2, erased, unit), spec::status::success());
        EXPECT_EQ(erased, std::vector<std::byte>(std::size_t{2} * unit));
        expect_extended_round_trip(r, 3, 2, unit);
        expect_extended_round_trip(r, id.nsze - 1, 1, unit);
    }
    // Back to 512 bytes without metadata: the whole backend holds data again.
    ASSERT_EQ(r.host.admin(format_command(1, 0)).status(), spec::status::success());
    EXPECT_EQ(identify_namespace(r, 1).nsze, namespace_bytes / 512);
    ASSERT_EQ(write_blocks(r, 1, 2047, 1, std::byte{0x3c}), spec::status::success());
    expect_block_holds(r, 1, 2047, std::byte{0x3c});
}

// ---- Format NVM: the metadata placements of the transport (MC) -----------------------------------

// nvme format --lbaf=1 (MSET 0, nvme-cli's default): a separate metadata buffer, which a fabric
// cannot carry. Over a fabric Identify Namespace reports MC bit 0 alone, and Format NVM refuses
// the setting as Invalid Format, changing and erasing nothing; elsewhere it is taken.
TYPED_TEST(admin_format_metadata, separate_metadata_is_invalid_format_over_a_fabric)
{
    TypeParam r;
    r.subsystem.add_namespace(nvmekit::ram_backend{namespace_bytes});
    r.host.bring_up();
    for (const std::uint8_t lbaf : {std::uint8_t{1}, std::uint8_t{3}}) {
        for (const std::uint32_t nsid : {1U, 0xffffffffU}) {
            SCOPED_TRACE(::testing::Message() << "LBAF " << static_cast<int>(lbaf) << " NSID " << nsid);
            ASSERT_EQ(write_blocks(r, 1, 0, 1, std::byte{0x99}), spec::status::success());
            const auto status = r.host.admin(format_command(nsid, lbaf)).status();
            const auto id = identify_namespace(r, 1);
            if constexpr (over_a_fabric<TypeParam>) {
                EXPECT_EQ(status, dnr(spec::command_specific_status::invalid_format));
                EXPECT_EQ(id.mc.raw, 0x1U);
                EXPECT_EQ(id.flbas.raw, 0U);
                EXPECT_EQ(id.nsze, namespace_bytes / 512);
                expect_block_holds(r, 1, 0, std::byte{0x99}); // nothing was erased
            } else {
                EXPECT_EQ(status, spec::status::success());
                EXPECT_EQ(id.mc.raw, 0x3U);
                EXPECT_EQ(id.flbas.raw, lbaf);
                const auto& format = nvmekit::supported_lba_formats[lbaf];
                EXPECT_EQ(id.nsze, namespace_bytes / (format.data_bytes + format.metadata_bytes));
                ASSERT_EQ(r.host.admin(format_command(1, 0)).status(), spec::status::success());
            }
        }
    }
}

// nvme format --lbaf=1 --ms=1 (and 3): metadata in the extended LBA, which every transport
// carries in the data buffer.
TYPED_TEST(admin_format_metadata, extended_metadata_formats_over_every_transport)
{
    TypeParam r;
    r.subsystem.add_namespace(nvmekit::ram_backend{namespace_bytes});
    r.host.bring_up();
    for (const std::uint8_t lbaf : {std::uint8_t{1}, std::uint8_t{3}}) {
        SCOPED_TRACE(static_cast<int>(lbaf));
        const auto& format = nvmekit::supported_lba_formats[lbaf];
        const std::uint32_t unit = format.data_bytes + format.metadata_bytes;
        ASSERT_EQ(r.host.admin(format_command(1, lbaf, true)).status(), spec::status::success());
        const auto id = identify_namespace(r, 1);
        EXPECT_EQ(id.flbas.raw, lbaf | 0x10U);
        EXPECT_EQ(id.nsze, namespace_bytes / unit);
        EXPECT_EQ(id.mc.raw, over_a_fabric<TypeParam> ? 0x1U : 0x3U);
        expect_extended_round_trip(r, 5, 2, unit);
        expect_extended_round_trip(r, id.nsze - 1, 1, unit);
    }
    ASSERT_EQ(r.host.admin(format_command(0xffffffffU, 1, true)).status(), spec::status::success());
    EXPECT_EQ(identify_namespace(r, 1).flbas.raw, 0x11U);
}

// A format without metadata has nothing to place: MSET 0 and 1 both format it, over a fabric
// too, and FLBAS bit 4 stays 0.
TYPED_TEST(admin_format_metadata, mset_does_not_matter_for_a_format_without_metadata)
{
    TypeParam r;
    r.subsystem.add_namespace(nvmekit::ram_backend{namespace_bytes});
    r.host.bring_up();
    for (const std::uint8_t lbaf : {std::uint8_t{2}, std::uint8_t{0}}) {
        for (const bool mset : {false, true}) {
            SCOPED_TRACE(::testing::Message() << "LBAF " << static_cast<int>(lbaf) << " MSET " << mset);
            ASSERT_EQ(r.host.admin(format_command(1, lbaf, mset)).status(), spec::status::success());
            const auto id = identify_namespace(r, 1);
            EXPECT_EQ(id.flbas.raw, lbaf);
            EXPECT_EQ(id.nsze, namespace_bytes / nvmekit::supported_lba_formats[lbaf].data_bytes);
        }
    }
}

TYPED_TEST(admin_format, an_nsid_not_attached_is_invalid_namespace)
{
    TypeParam r;
    r.subsystem.add_namespace(nvmekit::ram_backend{namespace_bytes});
    r.subsystem.add_namespace(nvmekit::ram_backend{namespace_bytes});
    r.host.bring_up();
    ASSERT_EQ(detach(r, 2, {r.ctrl.controller_id()}).status(), spec::status::success());
    const auto invalid_namespace = dnr(spec::generic_status::invalid_namespace_or_format);
    EXPECT_EQ(r.host.admin(format_command(2, 2)).status(), invalid_namespace); // exists, detached
    EXPECT_EQ(r.host.admin(format_command(3, 2)).status(), invalid_namespace); // no such namespace
    EXPECT_EQ(r.host.admin(format_command(0, 2)).status(), invalid_namespace);
    EXPECT_EQ(r.host.admin(format_command(0xfffffffeU, 2)).status(), invalid_namespace);
    EXPECT_EQ(r.subsystem.find(2)->lba_format(), 0U);
    EXPECT_EQ(identify_namespace(r, 1).flbas.format_index(), 0U);
}

// ---- Firmware Image Download (Base 2.0 5.13) and Firmware Commit (5.12) -------------------------------

using action = spec::firmware_commit_action;

/// An image of `bytes` bytes (a multiple of 4) whose first 8 bytes are `revision`.
std::vector<std::byte> firmware_image(std::string_view revision, std::size_t bytes = 4096)
{
    std::vector<std::byte> image(bytes);
    for (std::size_t i = 0; i < bytes; ++i) {
        image[i] = static_cast<std::byte>(0x80U + (i % 61U));
    }
    for (std::size_t i = 0; i < revision.size(); ++i) {
        image[i] = static_cast<std::byte>(revision[i]);
    }
    return image;
}

/// Firmware Image Download of `piece` at byte `offset` (both multiples of 4).
template <typename Rig>
nvmekit::testing::completion download(Rig& r, std::span<const std::byte> piece, std::uint64_t offset = 0)
{
    const auto buffer = r.host.allocate(piece.size());
    std::ranges::copy(piece, r.memory.bytes(buffer, piece.size()).begin());
    auto sqe = Rig::host_type::command(spec::admin_opcode::firmware_image_download);
    spec::firmware_image_download_view{.dword_count = piece.size() / 4, .offset_bytes = offset}.encode(sqe);
    r.host.describe_data(sqe, buffer, piece.size());
    return r.host.admin(sqe);
}

template <typename Rig>
nvmekit::testing::completion commit(Rig& r, std::uint8_t slot, action ca)
{
    auto sqe = Rig::host_type::command(spec::admin_opcode::firmware_commit);
    spec::firmware_commit_view{.slot = slot, .action = ca}.encode(sqe);
    return r.host.admin(sqe);
}

template <typename Rig>
spec::firmware_slot_log firmware_log(Rig& r)
{
    std::vector<std::byte> out;
    EXPECT_TRUE(r.host.get_log_page(spec::log_page_id::firmware_slot, 512, out).ok());
    spec::firmware_slot_log log{};
    std::memcpy(&log, out.data(), sizeof(log));
    return log;
}

template <typename Rig>
std::string identify_firmware_revision(Rig& r)
{
    return std::string{identify_controller(r).firmware_revision()};
}

/// AFI (active slot, next slot) and FRS1-FRS2 as one comparable value.
struct slot_state {
    unsigned active = 0;
    unsigned next = 0;
    std::string frs1;
    std::string frs2;
    friend bool operator==(const slot_state&, const slot_state&) = default;
};

std::ostream& operator<<(std::ostream& out, const slot_state& s)
{
    return out << "{active " << s.active << ", next " << s.next << ", FRS1 \"" << s.frs1 << "\", FRS2 \""
               << s.frs2 << "\"}";
}

template <typename Rig>
slot_state slots(Rig& r)
{
    const auto log = firmware_log(r);
    return {log.afi.get(spec::active_firmware_info::active_slot),
            log.afi.get(spec::active_firmware_info::next_slot), std::string{log.revision(1)},
            std::string{log.revision(2)}};
}

TYPED_TEST(admin_firmware, identify_reports_two_slots_and_the_initial_revision)
{
    TypeParam r;
    r.host.bring_up();
    const auto identify = identify_controller(r);
    EXPECT_EQ(identify.frmw.get(spec::firmware_updates::slot_count), 2U);
    EXPECT_FALSE(identify.frmw.get(spec::firmware_updates::slot1_read_only));
    EXPECT_FALSE(identify.frmw.get(spec::firmware_updates::activation_without_reset));
    EXPECT_EQ(identify.firmware_revision(), "0.1.0");
    EXPECT_EQ(slots(r), (slot_state{1, 0, "0.1.0", ""}));
}

TYPED_TEST(admin_firmware, replace_stores_the_image_without_activating_it)
{
    TypeParam r;
    r.host.bring_up();
    const auto image = firmware_image("FWREV002");
    ASSERT_EQ(download(r, image).status(), spec::status::success());
    const auto replaced = commit(r, 2, action::replace);
    EXPECT_EQ(replaced.status(), spec::status::success());
    EXPECT_EQ(replaced.cqe.dw0, 0U);
    EXPECT_EQ(slots(r), (slot_state{1, 0, "0.1.0", "FWREV002"}));
    EXPECT_EQ(identify_firmware_revision(r), "0.1.0");
    controller_reset(r);
    EXPECT_EQ(identify_firmware_revision(r), "0.1.0");
    EXPECT_EQ(slots(r), (slot_state{1, 0, "0.1.0", "FWREV002"}));

    // Activating the stored slot later (010b) takes effect at the next reset.
    EXPECT_EQ(commit(r, 2, action::activate_on_reset).status(), spec::status::success());
    EXPECT_EQ(slots(r), (slot_state{1, 2, "0.1.0", "FWREV002"}));
    EXPECT_EQ(identify_firmware_revision(r), "0.1.0");
    controller_reset(r);
    EXPECT_EQ(identify_firmware_revision(r), "FWREV002");
    EXPECT_EQ(slots(r), (slot_state{2, 0, "0.1.0", "FWREV002"}));
}

TEST(admin_firmware, replace_and_activate_on_reset_runs_the_image_after_a_controller_reset)
{
    rig r;
    r.host.bring_up();
    ASSERT_EQ(download(r, firmware_image("FW-3.0.1")).status(), spec::status::success());
    EXPECT_EQ(commit(r, 2, action::replace_and_activate_on_reset).status(), spec::status::success());
    EXPECT_EQ(slots(r), (slot_state{1, 2, "0.1.0", "FW-3.0.1"}));
    EXPECT_EQ(identify_firmware_revision(r), "0.1.0");
    // The reset by CC.EN written directly.
    r.write_cc(r.host.cc().with(spec::cc_register::en, false));
    r.ctrl.poll();
    r.host.enable();
    EXPECT_EQ(identify_firmware_revision(r), "FW-3.0.1");
    EXPECT_EQ(slots(r), (slot_state{2, 0, "0.1.0", "FW-3.0.1"}));

    // Back to slot 1.
    EXPECT_EQ(commit(r, 1, action::activate_on_reset).status(), spec::status::success());
    EXPECT_EQ(slots(r), (slot_state{2, 1, "0.1.0", "FW-3.0.1"}));
    controller_reset(r);
    EXPECT_EQ(identify_firmware_revision(r), "0.1.0");
    EXPECT_EQ(slots(r), (slot_state{1, 0, "0.1.0", "FW-3.0.1"}));
}

TYPED_TEST(admin_firmware, replace_and_activate_now_asks_for_a_controller_reset)
{
    TypeParam r;
    r.host.bring_up();
    ASSERT_EQ(download(r, firmware_image("NOWNOW01")).status(), spec::status::success());
    // The commit was done; the status says the activation waits. No DNR: nvme-cli matches the
    // status without it to print "Success activating firmware ... requires any controller reset".
    EXPECT_EQ(commit(r, 2, action::replace_and_activate_now).status(),
              spec::status{spec::command_specific_status::firmware_activation_requires_controller_reset});
    // The image is stored and waits for the reset.
    EXPECT_EQ(slots(r), (slot_state{1, 2, "0.1.0", "NOWNOW01"}));
    EXPECT_EQ(identify_firmware_revision(r), "0.1.0");
    controller_reset(r);
    EXPECT_EQ(identify_firmware_revision(r), "NOWNOW01");
    EXPECT_EQ(slots(r), (slot_state{2, 0, "0.1.0", "NOWNOW01"}));
}

TEST(admin_firmware, an_nvm_subsystem_reset_also_activates_the_pending_image)
{
    rig r;
    r.host.bring_up();
    ASSERT_EQ(download(r, firmware_image("NSSR0001")).status(), spec::status::success());
    ASSERT_EQ(commit(r, 2, action::replace_and_activate_on_reset).status(), spec::status::success());
    r.write32(spec::register_offset::nssr, spec::nvm_subsystem_reset_value);
    r.ctrl.poll();
    EXPECT_TRUE(r.csts().get(spec::csts_register::nssro));
    EXPECT_FALSE(r.csts().get(spec::csts_register::rdy));
    r.host.bring_up(); // the admin queue registers were reset too
    EXPECT_EQ(identify_firmware_revision(r), "NSSR0001");
    EXPECT_EQ(slots(r), (slot_state{2, 0, "0.1.0", "NSSR0001"}));
}

TYPED_TEST(admin_firmware, commit_without_a_download_is_invalid_firmware_image)
{
    TypeParam r;
    r.host.bring_up();
    const auto invalid_image = dnr(spec::command_specific_status::invalid_firmware_image);
    EXPECT_EQ(commit(r, 2, action::replace).status(), invalid_image);
    EXPECT_EQ(commit(r, 2, action::replace_and_activate_on_reset).status(), invalid_image);
    EXPECT_EQ(commit(r, 2, action::activate_on_reset).status(), invalid_image);        // slot 2 is empty
    EXPECT_EQ(commit(r, 2, action::replace_and_activate_now).status(), invalid_image); // activates slot 2
    EXPECT_EQ(commit(r, 0, action::replace).status(), invalid_image);
    EXPECT_EQ(slots(r), (slot_state{1, 0, "0.1.0", ""}));

    // A committed image is consumed: the next replace needs a new download.
    ASSERT_EQ(download(r, firmware_image("ONCE0001")).status(), spec::status::success());
    ASSERT_EQ(commit(r, 2, action::replace).status(), spec::status::success());
    EXPECT_EQ(commit(r, 2, action::replace).status(), invalid_image);

    // An image whose revision is not printable, or all spaces, is invalid too.
    ASSERT_EQ(download(r, firmware_image("BAD\x01REV1")).status(), spec::status::success());
    EXPECT_EQ(commit(r, 2, action::replace).status(), invalid_image);
    ASSERT_EQ(download(r, firmware_image("        ")).status(), spec::status::success());
    EXPECT_EQ(commit(r, 2, action::replace).status(), invalid_image);
    EXPECT_EQ(slots(r), (slot_state{1, 0, "0.1.0", "ONCE0001"}));
}

TYPED_TEST(admin_firmware, a_reset_discards_an_uncommitted_download)
{
    TypeParam r;
    r.host.bring_up();
    ASSERT_EQ(download(r, firmware_image("LOST0001")).status(), spec::status::success());
    controller_reset(r);
    EXPECT_EQ(commit(r, 2, action::replace).status(),
              dnr(spec::command_specific_status::invalid_firmware_image));
}

TYPED_TEST(admin_firmware, slot_zero_lets_the_controller_choose)
{
    TypeParam r;
    r.host.bring_up();
    ASSERT_EQ(download(r, firmware_image("CHOSEN01")).status(), spec::status::success());
    EXPECT_EQ(commit(r, 0, action::replace).status(), spec::status::success());
    EXPECT_EQ(slots(r), (slot_state{1, 0, "0.1.0", "CHOSEN01"})); // the empty slot that is not active
    // Activation with FS 0: the slot replaced last.
    EXPECT_EQ(commit(r, 0, action::activate_on_reset).status(), spec::status::success());
    EXPECT_EQ(slots(r), (slot_state{1, 2, "0.1.0", "CHOSEN01"}));
    controller_reset(r);
    EXPECT_EQ(identify_firmware_revision(r), "CHOSEN01");
}

TYPED_TEST(admin_firmware, slots_beyond_the_count_and_boot_partitions_are_refused)
{
    TypeParam r;
    r.host.bring_up();
    ASSERT_EQ(download(r, firmware_image("SLOTS001")).status(), spec::status::success());
    const auto invalid_slot = dnr(spec::command_specific_status::invalid_firmware_slot);
    for (std::uint8_t slot = 3; slot <= 7; ++slot) {
        EXPECT_EQ(commit(r, slot, action::replace).status(), invalid_slot) << int{slot};
        EXPECT_EQ(commit(r, slot, action::activate_on_reset).status(), invalid_slot) << int{slot};
    }
    EXPECT_EQ(commit(r, 1, action::replace_boot_partition).status(),
              dnr(spec::generic_status::invalid_field));
    EXPECT_EQ(commit(r, 1, action::activate_boot_partition).status(),
              dnr(spec::generic_status::invalid_field));
    EXPECT_EQ(commit(r, 1, static_cast<action>(0b100)).status(), dnr(spec::generic_status::invalid_field));
    EXPECT_EQ(commit(r, 1, static_cast<action>(0b101)).status(), dnr(spec::generic_status::invalid_field));
    // None of them consumed the download.
    EXPECT_EQ(commit(r, 2, action::replace).status(), spec::status::success());
    EXPECT_EQ(slots(r), (slot_state{1, 0, "0.1.0", "SLOTS001"}));
}

TYPED_TEST(admin_firmware, pieces_may_arrive_out_of_order_but_not_overlap)
{
    TypeParam r;
    r.host.bring_up();
    const auto image = firmware_image("PIECES01", 12288);
    const std::span<const std::byte> all{image};
    ASSERT_EQ(download(r, all.subspan(8192, 4096), 8192).status(), spec::status::success());
    ASSERT_EQ(download(r, all.subspan(4096, 4096), 4096).status(), spec::status::success());
    EXPECT_EQ(download(r, all.subspan(6144, 4096), 6144).status(),
              dnr(spec::command_specific_status::overlapping_range));
    // A gap at the start: the image is incomplete.
    EXPECT_EQ(commit(r, 2, action::replace).status(),
              dnr(spec::command_specific_status::invalid_firmware_image));
    // The missing piece completes it.
    ASSERT_EQ(download(r, all.first(4096), 0).status(), spec::status::success());
    EXPECT_EQ(commit(r, 2, action::replace).status(), spec::status::success());
    EXPECT_EQ(slots(r), (slot_state{1, 0, "0.1.0", "PIECES01"}));
}

TYPED_TEST(admin_firmware, a_piece_at_offset_zero_restarts_the_download)
{
    TypeParam r;
    r.host.bring_up();
    const auto old_image = firmware_image("OLDIMAGE", 8192);
    ASSERT_EQ(download(r, std::span{old_image}.first(4096)).status(), spec::status::success());
    ASSERT_EQ(download(r, firmware_image("NEWIMAGE")).status(), spec::status::success());
    EXPECT_EQ(commit(r, 2, action::replace).status(), spec::status::success());
    EXPECT_EQ(slots(r), (slot_state{1, 0, "0.1.0", "NEWIMAGE"}));
}

TYPED_TEST(admin_firmware, large_pieces_up_to_mdts_are_taken_whole)
{
    TypeParam r;
    r.host.bring_up();
    const auto image = firmware_image("BIGIMAGE", 256 * 1024);
    const std::span<const std::byte> all{image};
    ASSERT_EQ(TypeParam::controller_type::limits.max_transfer_bytes(), 128U * 1024U);
    EXPECT_EQ(download(r, all.first(32 * 1024)).status(), spec::status::success());
    EXPECT_EQ(download(r, all.subspan(32 * 1024, 96 * 1024), 32 * 1024).status(), spec::status::success());
    EXPECT_EQ(download(r, all.subspan(128 * 1024, 128 * 1024), 128 * 1024).status(), spec::status::success());
    EXPECT_EQ(commit(r, 2, action::replace).status(), spec::status::success());
    EXPECT_EQ(slots(r), (slot_state{1, 0, "0.1.0", "BIGIMAGE"}));
}

TYPED_TEST(admin_firmware, pieces_beyond_mdts_or_the_largest_image_are_invalid_field)
{
    TypeParam r;
    r.host.bring_up();
    const auto image = firmware_image("TOOLARGE", 128 * 1024 + 4);
    EXPECT_EQ(download(r, image).status(), dnr(spec::generic_status::invalid_field)); // above MDTS
    const auto piece = firmware_image("TOOLARGE", 4096);
    EXPECT_EQ(download(r, piece, (std::size_t{1} << 20) - 2048).status(),
              dnr(spec::generic_status::invalid_field));
    EXPECT_EQ(download(r, piece, (std::size_t{1} << 20) - 4096).status(), spec::status::success());
}

} // namespace command_sets_admin_state_test
} // namespace
