#include <nvmekit/testing/loopback.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <nvmekit/backends/ram_backend.hpp>
#include <nvmekit/controller.hpp>
#include <nvmekit/testing/manual_clock.hpp>
#include <nvmekit/testing/recording_msix.hpp>
#include <nvmekit/testing/test_backend.hpp>

#include "print_helpers.hpp"

// The controller core driven through the in-memory loopback transport: no BAR0 beyond the
// properties, no doorbell, no queue in host memory, no PRP and no interrupt. The admin and NVM
// command sets run exactly as over PCIe.

namespace {
namespace testing_loopback_test {

namespace spec = nvmekit::spec;
using nvmekit::testing::completion;
using nvmekit::testing::loopback_options;

struct loopback_traits : nvmekit::default_traits {
    using dma = nvmekit::testing::flat_memory;
    using interrupts = nvmekit::testing::recording_msix;
    using clock = nvmekit::testing::manual_clock;
};
using controller_type = nvmekit::controller<loopback_traits>;
using host_type = nvmekit::testing::loopback_host<controller_type>;

constexpr std::uint64_t buffers_base = 0x10'0000;
constexpr std::size_t buffers_size = std::size_t{4} << 20;
constexpr std::uint64_t namespace_bytes = std::uint64_t{1} << 20;

[[nodiscard]] spec::status dnr(auto code) { return spec::status{code}.with_dnr(); }

struct rig {
    nvmekit::testing::flat_memory buffers;
    nvmekit::testing::recording_msix msix;
    nvmekit::testing::manual_clock clock;
    controller_type::subsystem_type subsystem;
    controller_type ctrl;
    host_type host;

    explicit rig(nvmekit::controller_config config = {})
        : buffers{make_buffers()}, ctrl{buffers, msix, clock, subsystem, config}, host{ctrl, buffers, clock}
    {}

    static nvmekit::testing::flat_memory make_buffers()
    {
        nvmekit::testing::flat_memory memory;
        memory.add_range(buffers_base, buffers_size);
        return memory;
    }

    /// A buffer holding `data`.
    std::uint64_t buffer_with(const std::vector<std::byte>& data)
    {
        const auto address = host.allocate(data.size());
        EXPECT_FALSE(buffers.write(address, data));
        return address;
    }
    std::vector<std::byte> contents(std::uint64_t address, std::size_t size)
    {
        std::vector<std::byte> out(size);
        EXPECT_FALSE(buffers.read(address, out));
        return out;
    }

    /// An NVM command of `blocks` 512-byte blocks at `slba` whose data is `buffer`.
    static spec::submission_queue_entry lba(spec::nvm_opcode opcode, std::uint64_t slba, std::uint32_t blocks,
                                            std::uint64_t buffer)
    {
        auto sqe = host_type::lba_command(opcode, 1, slba, blocks);
        host_type::describe_data(sqe, buffer, blocks * 512U);
        return sqe;
    }

    completion write(std::uint64_t slba, const std::vector<std::byte>& data)
    {
        const auto buffer = buffer_with(data);
        const auto result = host.io(
            1, lba(spec::nvm_opcode::write, slba, static_cast<std::uint32_t>(data.size() / 512), buffer));
        host.release(buffer);
        return result;
    }
    completion read(std::uint64_t slba, std::uint32_t blocks, std::vector<std::byte>& out)
    {
        const auto buffer = host.allocate(std::size_t{blocks} * 512U);
        const auto result = host.io(1, lba(spec::nvm_opcode::read, slba, blocks, buffer));
        out = contents(buffer, std::size_t{blocks} * 512U);
        host.release(buffer);
        return result;
    }
};

[[nodiscard]] std::vector<std::byte> pattern(std::size_t size, unsigned seed)
{
    std::vector<std::byte> data(size);
    for (std::size_t i = 0; i < size; ++i) {
        data[i] = static_cast<std::byte>((i * 131U + seed * 7U) & 0xffU);
    }
    return data;
}

// ---- properties and bring-up --------------------------------------------------------------------

TEST(loopback, properties_are_the_defined_registers_at_their_sizes)
{
    rig r;
    const auto cap = r.ctrl.property_read(0x00, 8);
    ASSERT_TRUE(cap.has_value());
    EXPECT_EQ(*cap, r.ctrl.registers().cap().raw);
    EXPECT_EQ(r.ctrl.property_read(0x08, 4), std::optional<std::uint64_t>{r.ctrl.registers().vs().raw});
    EXPECT_TRUE(r.ctrl.property_read(0x68, 4).has_value());    // CRTO
    EXPECT_FALSE(r.ctrl.property_read(0x00, 4).has_value());   // CAP is 8 bytes
    EXPECT_FALSE(r.ctrl.property_read(0x08, 8).has_value());   // VS is 4
    EXPECT_FALSE(r.ctrl.property_read(0x1000, 4).has_value()); // the first doorbell
    EXPECT_FALSE(r.ctrl.property_read(0x14, 2).has_value());   // width
    EXPECT_FALSE(r.ctrl.property_read(0x16, 4).has_value());   // alignment
    EXPECT_FALSE(r.ctrl.property_read(0x24, 4).has_value());   // AQA: a PCIe controller's register
    EXPECT_FALSE(r.ctrl.property_read(0x0c, 4).has_value());   // INTMS, as well
    EXPECT_FALSE(r.ctrl.property_write(0x1000, 4, 1));
    EXPECT_FALSE(r.ctrl.property_write(0x28, 8, 0x10000)); // ASQ
    EXPECT_FALSE(r.ctrl.property_write(0x08, 4, 0));       // VS is read-only
    EXPECT_EQ(r.ctrl.statistics().host_protocol_errors, 0U);
    // NSSR, and a write of CSTS (whose one writable bit, NSSRO, only an NVM Subsystem Reset
    // sets), only where CAP.NSSRS says NVM Subsystem Reset is supported.
    EXPECT_TRUE(r.ctrl.property_read(0x20, 4).has_value());
    rig without{{.subsystem_reset_supported = false}};
    EXPECT_FALSE(without.ctrl.property_read(0x20, 4).has_value());
    EXPECT_FALSE(without.ctrl.property_write(0x20, 4, spec::nvm_subsystem_reset_value));
    EXPECT_FALSE(without.ctrl.property_write(0x1c, 4, 0x10));
    EXPECT_TRUE(without.ctrl.property_read(0x1c, 4).has_value());
}

TEST(loopback, brings_the_controller_up_without_queue_memory_doorbells_or_interrupts)
{
    rig r;
    r.subsystem.add_namespace(nvmekit::ram_backend{namespace_bytes});
    r.host.bring_up({.io_queue_pairs = 2});
    EXPECT_TRUE(r.host.csts().get(spec::csts_register::rdy));
    EXPECT_TRUE(r.ctrl.message_based());
    EXPECT_EQ(r.ctrl.registers().asq().raw, 0U); // never programmed
    EXPECT_TRUE(r.ctrl.submission_queue_exists(1));
    EXPECT_TRUE(r.ctrl.submission_queue_exists(2));
    EXPECT_FALSE(r.ctrl.submission_queue_exists(3));

    const auto data = pattern(4096, 1);
    ASSERT_TRUE(r.write(8, data).ok());
    std::vector<std::byte> back;
    ASSERT_TRUE(r.read(8, 8, back).ok());
    EXPECT_EQ(back, data);
    EXPECT_EQ(r.msix.total(), 0U); // nothing signalled: the completions were taken
    EXPECT_FALSE(r.msix.intx_level());
}

// ---- admin commands -----------------------------------------------------------------------------

TEST(loopback, identify_controller_over_an_sgl_data_block)
{
    rig r;
    r.host.bring_up();
    std::vector<std::byte> data;
    const auto result = r.host.admin_read(host_type::identify_command(spec::cns::identify_controller, 0, 0),
                                          sizeof(spec::identify_controller), data);
    ASSERT_TRUE(result.ok());
    spec::identify_controller id{};
    std::memcpy(&id, data.data(), sizeof(id));
    const auto expected = r.ctrl.identify_controller_data();
    EXPECT_EQ(id.cntlid, expected.cntlid);
    EXPECT_EQ(0, std::memcmp(id.sn.data(), expected.sn.data(), id.sn.size()));
    // Queues are connected, not created with a shadow doorbell buffer.
    EXPECT_FALSE(id.oacs.get(spec::admin_command_support::doorbell_buffer_config));
    EXPECT_TRUE(id.oacs.get(spec::admin_command_support::namespace_management));
}

TEST(loopback, queue_creation_and_doorbell_buffer_config_are_not_offered)
{
    rig r;
    r.host.bring_up();
    auto create_cq = host_type::command(spec::admin_opcode::create_io_cq);
    spec::create_io_cq_view{.queue_id = 2, .queue_size = 16, .physically_contiguous = true}.encode(create_cq);
    auto create_sq = host_type::command(spec::admin_opcode::create_io_sq);
    spec::create_io_sq_view{.queue_id = 2, .queue_size = 16, .physically_contiguous = true, .cq_id = 1}
        .encode(create_sq);
    const auto invalid = dnr(spec::generic_status::invalid_opcode);
    EXPECT_EQ(r.host.admin(create_cq).status(), invalid);
    EXPECT_EQ(r.host.admin(create_sq).status(), invalid);
    EXPECT_EQ(r.host.admin(host_type::delete_queue_command(spec::admin_opcode::delete_io_sq, 1)).status(),
              invalid);
    EXPECT_EQ(r.host.admin(host_type::delete_queue_command(spec::admin_opcode::delete_io_cq, 1)).status(),
              invalid);
    EXPECT_EQ(
        r.host.admin(host_type::doorbell_buffer_config_command(buffers_base, buffers_base + 4096)).status(),
        invalid);
    EXPECT_TRUE(r.ctrl.submission_queue_exists(1)); // untouched
    // Nor does the Commands Supported and Effects log list them.
    std::vector<std::byte> data;
    ASSERT_TRUE(
        r.host
            .admin_read(host_type::get_log_page_command(spec::log_page_id::commands_supported_and_effects,
                                                        sizeof(spec::commands_supported_and_effects)),
                        sizeof(spec::commands_supported_and_effects), data)
            .ok());
    spec::commands_supported_and_effects effects{};
    std::memcpy(&effects, data.data(), sizeof(effects));
    const auto supported = [&](spec::admin_opcode opcode) {
        return effects.admin_commands[static_cast<std::uint8_t>(opcode)].get(spec::command_effects::csupp);
    };
    EXPECT_FALSE(supported(spec::admin_opcode::create_io_sq));
    EXPECT_FALSE(supported(spec::admin_opcode::create_io_cq));
    EXPECT_FALSE(supported(spec::admin_opcode::delete_io_sq));
    EXPECT_FALSE(supported(spec::admin_opcode::delete_io_cq));
    EXPECT_FALSE(supported(spec::admin_opcode::doorbell_buffer_config));
    EXPECT_TRUE(supported(spec::admin_opcode::identify));
    EXPECT_TRUE(supported(spec::admin_opcode::get_log_page));
}

TEST(loopback, features_and_log_pages)
{
    rig r;
    r.subsystem.add_namespace(nvmekit::ram_backend{namespace_bytes});
    r.host.bring_up();
    // Temperature Threshold: set, then read back.
    ASSERT_TRUE(
        r.host.admin(host_type::set_features_command(spec::feature_id::temperature_threshold, 350)).ok());
    const auto got = r.host.admin(host_type::get_features_command(spec::feature_id::temperature_threshold,
                                                                  spec::feature_select::current));
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(got.cqe.dw0 & 0xffffU, 350U);

    // SMART / Health counts the writes made through the loopback.
    for (unsigned i = 0; i < 3; ++i) {
        ASSERT_TRUE(r.write(i * 8, pattern(4096, i)).ok());
    }
    std::vector<std::byte> data;
    ASSERT_TRUE(r.host
                    .admin_read(host_type::get_log_page_command(spec::log_page_id::smart_health,
                                                                sizeof(spec::smart_health_log)),
                                sizeof(spec::smart_health_log), data)
                    .ok());
    spec::smart_health_log log{};
    std::memcpy(&log, data.data(), sizeof(log));
    EXPECT_EQ(log.host_write_commands.low(), 3U);
}

TEST(loopback, asynchronous_event_on_a_namespace_change)
{
    rig r;
    r.host.bring_up();
    const auto notices = spec::async_event_configuration{}.with(
        spec::async_event_configuration::namespace_attribute_notices, true);
    ASSERT_TRUE(
        r.host
            .admin(host_type::set_features_command(spec::feature_id::async_event_configuration, notices.raw))
            .ok());
    // bring_up() posted an Asynchronous Event Request, as a fabrics host does.
    ASSERT_TRUE(r.host.async_event_request_cid().has_value());
    const auto aer = *r.host.async_event_request_cid();
    EXPECT_TRUE(r.host.reap(0).empty()); // outstanding until an event
    r.subsystem.add_namespace(nvmekit::ram_backend{namespace_bytes});
    const auto event = r.host.wait_for(0, aer);
    ASSERT_TRUE(event.ok());
    const spec::async_event_completion info{event.cqe.dw0};
    EXPECT_EQ(info.get(info.event_type), spec::async_event_type::notice);
    EXPECT_EQ(info.get(info.log_page), spec::log_page_id::changed_namespace_list);
    std::vector<std::byte> data;
    ASSERT_TRUE(r.host
                    .admin_read(host_type::get_log_page_command(spec::log_page_id::changed_namespace_list,
                                                                sizeof(spec::changed_namespace_list)),
                                sizeof(spec::changed_namespace_list), data)
                    .ok());
    spec::changed_namespace_list changed{};
    std::memcpy(&changed, data.data(), sizeof(changed));
    EXPECT_EQ(changed.nsids[0], 1U);
    EXPECT_EQ(changed.nsids[1], 0U);
}

// ---- NVM commands -------------------------------------------------------------------------------

TEST(loopback, nvm_commands_move_data_through_the_transport_buffers)
{
    rig r;
    r.subsystem.add_namespace(nvmekit::ram_backend{namespace_bytes});
    r.host.bring_up();
    const auto data = pattern(8192, 3);
    ASSERT_TRUE(r.write(100, data).ok());

    // Compare: equal, then one byte different.
    auto same = r.buffer_with(data);
    EXPECT_TRUE(r.host.io(1, rig::lba(spec::nvm_opcode::compare, 100, 16, same)).ok());
    auto changed = data;
    changed[4000] ^= std::byte{1};
    auto other = r.buffer_with(changed);
    EXPECT_EQ(r.host.io(1, rig::lba(spec::nvm_opcode::compare, 100, 16, other)).status(),
              dnr(spec::media_status::compare_failure));

    // Write Zeroes, then the blocks read back as zeros.
    auto zeroes = host_type::lba_command<spec::write_zeroes_view>(spec::nvm_opcode::write_zeroes, 1, 104, 4);
    ASSERT_TRUE(r.host.io(1, zeroes).ok());
    std::vector<std::byte> back;
    ASSERT_TRUE(r.read(100, 16, back).ok());
    auto expected = data;
    std::fill(expected.begin() + 4 * 512, expected.begin() + 8 * 512, std::byte{0});
    EXPECT_EQ(back, expected);

    EXPECT_TRUE(r.host.io(1, host_type::command(spec::nvm_opcode::flush, 1)).ok());
}

TEST(loopback, nvm_command_errors_are_those_of_the_pci_function)
{
    rig r;
    r.subsystem.add_namespace(nvmekit::ram_backend{namespace_bytes});
    r.host.bring_up();
    const auto buffer = r.host.allocate(4096);
    const std::uint64_t blocks = namespace_bytes / 512;
    EXPECT_EQ(r.host.io(1, rig::lba(spec::nvm_opcode::read, blocks - 1, 2, buffer)).status(),
              dnr(spec::generic_status::lba_out_of_range));
    auto wrong_namespace = rig::lba(spec::nvm_opcode::read, 0, 1, buffer);
    wrong_namespace.nsid = 7;
    EXPECT_EQ(r.host.io(1, wrong_namespace).status(), dnr(spec::generic_status::invalid_namespace_or_format));
    // A data block shorter than the transfer.
    auto short_data = rig::lba(spec::nvm_opcode::read, 0, 8, buffer);
    host_type::describe_data(short_data, buffer, 512);
    EXPECT_EQ(r.host.io(1, short_data).status(), dnr(spec::generic_status::data_sgl_length_invalid));
    // Data outside the transport's buffers: the DMA provider refuses it.
    auto outside = rig::lba(spec::nvm_opcode::read, 0, 1, buffers_base + buffers_size);
    EXPECT_EQ(r.host.io(1, outside).status(), dnr(spec::generic_status::data_transfer_error));
    // PSDT other than 01b: a message-based queue carries SGLs only, for every command, on the
    // admin queue as on I/O queues.
    auto prp = host_type::lba_command(spec::nvm_opcode::read, 1, 0, 1);
    prp.dptr.prp1 = buffer;
    EXPECT_EQ(r.host.wait_for(1, r.host.submit_as_is(1, prp)).status(),
              dnr(spec::generic_status::invalid_field));
    const auto flush = host_type::command(spec::nvm_opcode::flush, 1);
    EXPECT_EQ(r.host.wait_for(1, r.host.submit_as_is(1, flush)).status(),
              dnr(spec::generic_status::invalid_field));
    EXPECT_TRUE(r.host.io(1, flush).ok());
    const auto identify = host_type::identify_command(spec::cns::identify_controller, 0, buffer);
    EXPECT_EQ(r.host.wait_for(0, r.host.submit_as_is(0, identify)).status(),
              dnr(spec::generic_status::invalid_field));
}

TEST(loopback, an_sgl_longer_than_the_transfer_is_taken_when_the_fabrics_sgls_say_so)
{
    // A fabrics controller whose transport reports SGLS bit 18 uses the first bytes of a longer
    // SGL (Base 2.0 Identify Controller SGLS); without bit 18, or without a fabric, it must match.
    nvmekit::controller_config fabrics;
    fabrics.identity.fabrics = nvmekit::fabrics_identity{
        .sgls = spec::sgl_support{}
                    .with(spec::sgl_support::support, spec::sgl_data_block_support::supported)
                    .with(spec::sgl_support::length_larger_than_data, true)};
    nvmekit::controller_config exact = fabrics;
    exact.identity.fabrics->sgls.set(spec::sgl_support::length_larger_than_data, false);
    for (const auto& [config, longer_taken] : {std::pair{fabrics, true}, std::pair{exact, false},
                                               std::pair{nvmekit::controller_config{}, false}}) {
        SCOPED_TRACE(longer_taken ? "bit 18" : "no bit 18");
        rig r{config};
        r.subsystem.add_namespace(nvmekit::ram_backend{namespace_bytes});
        r.host.bring_up();
        const auto data = pattern(1024, 5);
        ASSERT_TRUE(r.write(0, data).ok());
        const std::vector<std::byte> untouched(4096, std::byte{0xee});
        const auto buffer = r.buffer_with(untouched);

        auto read = rig::lba(spec::nvm_opcode::read, 0, 1, buffer);
        host_type::describe_data(read, buffer, 4096);
        const auto result = r.host.io(1, read);
        auto write = rig::lba(spec::nvm_opcode::write, 1, 1, buffer);
        host_type::describe_data(write, buffer, 4096);
        const auto written = r.host.io(1, write);
        if (!longer_taken) {
            EXPECT_EQ(result.status(), dnr(spec::generic_status::data_sgl_length_invalid));
            EXPECT_EQ(written.status(), dnr(spec::generic_status::data_sgl_length_invalid));
            EXPECT_EQ(r.contents(buffer, 4096), untouched);
            continue;
        }
        ASSERT_TRUE(result.ok());
        const auto back = r.contents(buffer, 4096);
        EXPECT_TRUE(std::equal(back.begin(), back.begin() + 512, data.begin()));
        EXPECT_TRUE(std::equal(back.begin() + 512, back.end(), untouched.begin() + 512));
        // The write takes the first 512 bytes (block 0's data) into block 1.
        ASSERT_TRUE(written.ok());
        std::vector<std::byte> blocks;
        ASSERT_TRUE(r.read(0, 2, blocks).ok());
        EXPECT_TRUE(std::equal(blocks.begin(), blocks.begin() + 512, data.begin()));
        EXPECT_TRUE(std::equal(blocks.begin() + 512, blocks.end(), data.begin()));
        // Shorter is refused either way.
        auto short_read = rig::lba(spec::nvm_opcode::read, 0, 2, buffer);
        host_type::describe_data(short_read, buffer, 1000);
        EXPECT_EQ(r.host.io(1, short_read).status(), dnr(spec::generic_status::data_sgl_length_invalid));
    }
}

// ---- queues -------------------------------------------------------------------------------------

TEST(loopback, a_full_queue_refuses_commands_and_a_full_completion_queue_holds_them)
{
    rig r;
    r.subsystem.add_namespace(nvmekit::ram_backend{namespace_bytes});
    r.host.bring_up({.io_entries = 4});
    const auto buffer = r.host.allocate(512);
    auto read = rig::lba(spec::nvm_opcode::read, 0, 1, buffer);
    // Three commands fill a queue of four entries.
    std::vector<std::uint16_t> cids;
    for (int i = 0; i < 3; ++i) {
        cids.push_back(r.host.submit(1, read));
    }
    EXPECT_FALSE(r.ctrl.submit(1, read));
    r.ctrl.poll(); // they run; their completions fill the CQ (three of four slots)
    for (int i = 0; i < 3; ++i) {
        cids.push_back(r.host.submit(1, read));
    }
    r.ctrl.poll(); // they run too, and their completions are held
    EXPECT_EQ(r.ctrl.statistics().completions_held, 3U);
    std::vector<std::uint16_t> completed;
    for (int polls = 0; polls < 10 && completed.size() < cids.size(); ++polls) {
        for (const auto& c : r.host.reap(1)) {
            EXPECT_TRUE(c.ok());
            completed.push_back(c.cqe.cid);
        }
    }
    EXPECT_EQ(completed, cids); // every one, in order
}

TEST(loopback, connecting_queues_checks_state_identifier_and_size)
{
    rig r;
    EXPECT_EQ(r.ctrl.connect_io_queue(1, 16), dnr(spec::generic_status::command_sequence_error));
    EXPECT_EQ(r.ctrl.connect_admin_queue(1), dnr(spec::command_specific_status::invalid_queue_size));
    EXPECT_EQ(r.ctrl.connect_admin_queue(4097), dnr(spec::command_specific_status::invalid_queue_size));
    r.host.bring_up({.io_queue_pairs = 2});
    EXPECT_EQ(r.ctrl.connect_admin_queue(32), dnr(spec::generic_status::command_sequence_error));
    EXPECT_EQ(r.ctrl.connect_io_queue(1, 16), dnr(spec::command_specific_status::invalid_queue_identifier));
    EXPECT_EQ(r.ctrl.connect_io_queue(3, 16), dnr(spec::command_specific_status::invalid_queue_identifier));
    EXPECT_TRUE(r.ctrl.disconnect_io_queue(2));
    EXPECT_FALSE(r.ctrl.disconnect_io_queue(2));
    EXPECT_EQ(r.ctrl.connect_io_queue(2, 1), dnr(spec::command_specific_status::invalid_queue_size));
    const std::uint32_t too_many = r.ctrl.registers().cap().max_queue_entries() + 1U;
    EXPECT_EQ(r.ctrl.connect_io_queue(2, too_many), dnr(spec::command_specific_status::invalid_queue_size));
    EXPECT_TRUE(r.ctrl.connect_io_queue(2, 16).is_success());
}

TEST(loopback, a_controller_reset_deletes_the_io_queues_and_keeps_the_admin_queue)
{
    rig r;
    r.subsystem.add_namespace(nvmekit::ram_backend{namespace_bytes});
    r.host.bring_up();
    ASSERT_TRUE(r.write(0, pattern(512, 9)).ok());
    r.host.disable();
    EXPECT_FALSE(r.ctrl.submission_queue_exists(1));
    EXPECT_FALSE(r.ctrl.submit(0, host_type::command(spec::admin_opcode::keep_alive))); // not ready
    r.host.bring_up(); // the admin queue is still connected: enable and connect I/O queues again
    std::vector<std::byte> back;
    ASSERT_TRUE(r.read(0, 1, back).ok());
    EXPECT_EQ(back, pattern(512, 9));
}

/// Namespaces on a test_backend whose requests take one second.
struct delayed_traits : loopback_traits {
    using backend = nvmekit::testing::test_backend<>;
};

TEST(loopback, a_reset_while_a_command_is_in_the_backend_posts_nothing_for_it)
{
    using namespace std::chrono_literals;
    auto buffers = rig::make_buffers();
    nvmekit::testing::recording_msix msix;
    nvmekit::testing::manual_clock clock;
    nvmekit::controller<delayed_traits>::subsystem_type subsystem;
    nvmekit::controller<delayed_traits> ctrl{buffers, msix, clock, subsystem};
    nvmekit::testing::loopback_host host{ctrl, buffers, clock};
    auto& backend =
        subsystem.add_namespace(nvmekit::testing::test_backend<>{clock, namespace_bytes, 64, {.delay = 1s}})
            .backend();
    host.bring_up();
    const auto buffer = host.allocate(512);
    host.submit(1, rig::lba(spec::nvm_opcode::read, 0, 1, buffer));
    ctrl.poll();
    EXPECT_EQ(backend.outstanding(), 1U);
    host.set_property(spec::register_offset::cc, 0);
    ctrl.poll();
    EXPECT_TRUE(host.csts().get(spec::csts_register::rdy)); // until the backend returns the read
    clock.advance(2s);
    for (int i = 0; i < 10 && host.csts().get(spec::csts_register::rdy); ++i) {
        ctrl.poll();
    }
    EXPECT_FALSE(host.csts().get(spec::csts_register::rdy));
    EXPECT_EQ(backend.outstanding(), 0U);
    EXPECT_FALSE(ctrl.take_completion(1).has_value());
    EXPECT_FALSE(ctrl.take_completion(0).has_value());
}

} // namespace testing_loopback_test
} // namespace
