#include <nvmekit/transport/tcp/target.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <span>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <fcntl.h>
#include <poll.h>
#include <sys/resource.h>
#include <unistd.h>

#include <nvmekit/backends/ram_backend.hpp>
#include <nvmekit/testing/manual_clock.hpp>
#include <nvmekit/testing/tcp_host.hpp>

#include "print_helpers.hpp"
#include "splitmix64.hpp"

// The NVMe/TCP target over real loopback sockets, driven by the library's NVMe/TCP initiator. The
// target's poll loop runs on a thread of its own, as a server's would.

namespace {
namespace transport_tcp_target_test {

namespace spec = nvmekit::spec;
namespace tcp = nvmekit::transport::tcp;
using nvmekit::testing::tcp_host;
using nvmekit::testing::tcp_host_options;
using nvmekit::testing::tcp_queue;
using nvmekit::testing::tcp_terminated;
using target_type = tcp::target<>;

constexpr std::uint64_t namespace_bytes = std::uint64_t{4} << 20;
/// Small enough that a 128 KiB write takes several H2CData PDUs.
constexpr std::uint32_t test_maxh2cdata = 32 * 1024;
/// How long a host waits for what should come at once: long enough that no load makes it run
/// out, so it only stops a test that would otherwise hang.
constexpr std::chrono::seconds hang_guard{30};

/// The time of the targets of manual_time_traits: it stands still until a test moves it.
nvmekit::testing::manual_clock& manual_time()
{
    static nvmekit::testing::manual_clock clock;
    return clock;
}
struct manual_time_clock {
    [[nodiscard]] std::chrono::nanoseconds now() const noexcept { return manual_time().now(); }
};
/// A target whose connect timeout and controllers' Keep Alive Timers run on manual_time().
struct manual_time_traits : tcp::target_traits {
    using clock = manual_time_clock;
};

/// A target of one subsystem with one RAM namespace, polled on its own thread until stopped.
template <typename Traits = tcp::target_traits>
class basic_served_target {
public:
    using served_type = tcp::target<Traits>;

    explicit basic_served_target(const std::function<void(tcp::target_options&)>& configure = {})
        : target_{make_subsystem(subsystem_), options(configure)}
    {
        thread_ = std::thread{[this] {
            while (!stop_.load(std::memory_order_acquire)) {
                target_.poll(std::chrono::milliseconds{2});
            }
        }};
    }
    basic_served_target(const basic_served_target&) = delete;
    basic_served_target& operator=(const basic_served_target&) = delete;
    ~basic_served_target() { halt(); }

    /// Stops the loop; the target's state may then be read from the test's thread.
    void halt()
    {
        stop_.store(true, std::memory_order_release);
        if (thread_.joinable()) {
            thread_.join();
        }
    }

    [[nodiscard]] std::uint16_t port() const { return target_.port(); }
    [[nodiscard]] served_type& target() { return target_; }
    [[nodiscard]] tcp_host host(tcp_host_options options = {}) const
    {
        options.io_in_capsule_data = 8192;
        return tcp_host{"127.0.0.1", port(), options};
    }

private:
    static typename served_type::subsystem_type&
    make_subsystem(typename served_type::subsystem_type& subsystem)
    {
        subsystem.add_namespace(nvmekit::ram_backend{namespace_bytes});
        return subsystem;
    }
    static tcp::target_options options(const std::function<void(tcp::target_options&)>& configure)
    {
        tcp::target_options options;
        options.port = 0;
        options.limits.maxh2cdata = test_maxh2cdata;
        options.limits.io_in_capsule_data = 8192;
        if (configure) {
            configure(options);
        }
        return options;
    }

    typename served_type::subsystem_type subsystem_;
    served_type target_;
    std::atomic<bool> stop_{false};
    std::thread thread_;
};
using served_target = basic_served_target<>;
/// A served target on manual_time().
using manual_time_target = basic_served_target<manual_time_traits>;

[[nodiscard]] std::vector<std::byte> pattern(std::size_t size, unsigned seed)
{
    std::vector<std::byte> data(size);
    for (std::size_t i = 0; i < size; ++i) {
        data[i] = static_cast<std::byte>((i * 131U + seed * 7U + (i >> 9)) & 0xffU);
    }
    return data;
}

/// Connect, enable, one I/O queue.
void bring_up(tcp_host& host)
{
    host.connect_admin();
    host.enable();
    ASSERT_TRUE(host.connect_io(1).ok());
}

/// Returns once the target served by a thread of its own has run a whole round of its loop, its
/// checks of time included, that began after this call did. Each of three Property Gets is
/// answered at the end of a round, so the next is received in a later round: the second's round
/// began after the call, and it had ended before the third was received.
void await_a_round(tcp_host& host)
{
    for (int i = 0; i < 3; ++i) {
        static_cast<void>(host.get_property(spec::register_offset::vs));
    }
}

/// Gives `sqe` command identifier `cid`, PSDT 01b and `sgl` as its data pointer, as a host
/// writing its own capsules does.
void prepare(spec::submission_queue_entry& sqe, std::uint16_t cid, const spec::sgl_descriptor& sgl)
{
    sqe.cdw0.set(spec::command_dword0::cid, cid);
    sqe.cdw0.set(spec::command_dword0::psdt, spec::data_pointer_type::sgl_contiguous_metadata);
    sqe.dptr = spec::to_data_pointer(sgl);
}

/// A Flush capsule of `queue`, encoded as the connection's parameters say.
std::vector<std::byte> flush_capsule(const tcp_queue& queue, std::uint16_t cid)
{
    auto sqe = tcp_host::command(spec::nvm_opcode::flush, 1);
    prepare(sqe, cid, spec::sgl_descriptor::transport_data_block(0, tcp_queue::transport_subtype));
    std::vector<std::byte> out(tcp::pdu_size(spec::pdu_type::capsule_cmd, 0, queue.params()));
    tcp::encode_capsule_cmd(sqe, {}, queue.params(), out);
    return out;
}

/// The fatal error of the C2HTermReq that ends `queue`'s connection (a PDU Sequence Error
/// with FEI FFFFFFFFh, failing the test, when another PDU comes instead).
tcp::fatal_error termination_of(tcp_queue& queue)
{
    try {
        const auto pdu = queue.receive_pdu();
        ADD_FAILURE() << "no C2HTermReq but " << nvmekit::spec::name(pdu.type());
    } catch (const tcp_terminated& terminated) {
        return {terminated.status(), terminated.information()};
    }
    return {spec::fatal_error_status::pdu_sequence_error, 0xffffffffU};
}

/// IPO of a Connect that completed with Connect Invalid Parameters (FFFFh for another status).
std::uint32_t invalid_parameter(const nvmekit::testing::completion& result)
{
    if (result.status() != spec::status{spec::fabrics_status::connect_invalid_parameters}.with_dnr()) {
        ADD_FAILURE() << "not Connect Invalid Parameters";
        return 0xffff;
    }
    return spec::connect_invalid_parameter_dword0{result.cqe.dw0}.get(
        spec::connect_invalid_parameter_dword0::ipo);
}

/// Write and read back through I/O queue 1: in-capsule, by R2T, and a read of many blocks.
void check_io(tcp_host& host)
{
    auto& queue = host.io(1);
    const std::size_t r2ts = queue.r2ts_received();
    const std::size_t h2c = queue.h2c_data_sent();
    const std::size_t c2h = queue.c2h_data_received();
    const auto small = pattern(4096, 1);
    ASSERT_TRUE(host.write(1, 8, small).ok());
    std::vector<std::byte> back;
    ASSERT_TRUE(host.read(1, 8, 8, back).ok());
    EXPECT_EQ(back, small);
    EXPECT_EQ(queue.r2ts_received(), r2ts);

    const auto large = pattern(128 * 1024, 2);
    ASSERT_TRUE(host.write(1, 64, large).ok());
    EXPECT_EQ(queue.r2ts_received(), r2ts + large.size() / test_maxh2cdata); // each of MAXH2CDATA
    EXPECT_EQ(queue.h2c_data_sent(), h2c + large.size() / test_maxh2cdata);
    ASSERT_TRUE(host.read(1, 64, 256, back).ok());
    EXPECT_EQ(back, large);
    EXPECT_EQ(queue.c2h_data_received(), c2h + 2);
}

// ---- connection and properties ------------------------------------------------------------------

TEST(tcp_target, connect_returns_a_controller_id_and_properties_act_as_registers)
{
    served_target served;
    auto host = served.host();
    host.connect_admin();
    const auto cap = spec::cap_register{host.get_property(spec::register_offset::cap, 8)};
    EXPECT_GE(cap.max_queue_entries(), 2U);
    EXPECT_EQ(host.get_property(spec::register_offset::vs), 0x0002'0000U);
    EXPECT_FALSE(
        spec::csts_register{static_cast<std::uint32_t>(host.get_property(spec::register_offset::csts))}.get(
            spec::csts_register::rdy));
    host.enable();
    EXPECT_TRUE(
        spec::cc_register{static_cast<std::uint32_t>(host.get_property(spec::register_offset::cc))}.get(
            spec::cc_register::en));
    EXPECT_EQ(host.property_get(static_cast<spec::register_offset>(0x1000)).status(),
              spec::status{spec::generic_status::invalid_field}.with_dnr());
}

TEST(tcp_target, identify_controller_reports_the_cntlid_connect_returned)
{
    served_target served;
    auto first = served.host();
    auto second = served.host();
    const auto first_id = first.connect_admin();
    const auto second_id = second.connect_admin();
    EXPECT_NE(first_id, second_id);
    first.enable();
    second.enable();
    EXPECT_EQ(first.identify_controller().cntlid, first_id);
    EXPECT_EQ(second.identify_controller().cntlid, second_id);
}

TEST(tcp_target, identify_controller_reports_the_fields_a_fabrics_host_checks)
{
    served_target served{[](tcp::target_options& options) {
        options.limits.io_in_capsule_data = 4096;
        options.controller.queue_entries = 128;
    }};
    auto host = served.host();
    const auto cntlid = host.connect_admin();
    host.enable();
    const auto data = host.identify_controller();
    EXPECT_EQ(data.cntlid, cntlid);
    EXPECT_EQ(data.ioccsz, (64U + 4096U) / 16U); // the SQE and the in-capsule data, 16-byte units
    EXPECT_EQ(data.iorcsz, 1U);
    EXPECT_EQ(data.icdoff, 0U);
    EXPECT_EQ(data.fcatt, 0U); // dynamic controller model
    EXPECT_EQ(data.msdbd, 1U);
    EXPECT_EQ(data.maxcmd, 128U); // CAP.MQES + 1
    EXPECT_EQ(data.cntrltype, spec::controller_type::io);
    EXPECT_NE(data.kas, 0U); // keep alive is mandatory on fabrics
    // SGL support (the Linux host refuses a controller without it), the Data Block with Offset
    // of in-capsule data and the Transport SGL Data Block; no Keyed SGL Data Block (RDMA's).
    EXPECT_EQ(data.sgls.get(spec::sgl_support::support), spec::sgl_data_block_support::supported);
    EXPECT_TRUE(data.sgls.get(spec::sgl_support::address_as_offset));
    EXPECT_TRUE(data.sgls.get(spec::sgl_support::transport_data_block));
    EXPECT_FALSE(data.sgls.get(spec::sgl_support::keyed_data_block));
    EXPECT_FALSE(data.sgls.get(spec::sgl_support::bit_bucket));
    // An SGL may describe more than the command transfers (nvme-cli's --data-size).
    EXPECT_TRUE(data.sgls.get(spec::sgl_support::length_larger_than_data));
}

TEST(tcp_target, a_connection_that_does_not_connect_in_time_is_closed)
{
    constexpr std::chrono::milliseconds timeout{200};
    manual_time_target served{[&](tcp::target_options& options) { options.connect_timeout = timeout; }};
    const auto start = manual_time().now();
    tcp_queue silent{"127.0.0.1", served.port(), {.timeout = hang_guard}};
    tcp_queue initialized{"127.0.0.1", served.port(), {.timeout = hang_guard}};
    initialized.initialize(); // accepted by now, as `silent` before it: both at `start`
    auto host = served.host();
    bring_up(host);
    // Until the timeout has passed neither is closed ...
    manual_time().set(start + timeout - std::chrono::milliseconds{1});
    await_a_round(host);
    EXPECT_EQ(served.target().statistics().connections_closed, 0U);
    // ... then both are.
    manual_time().set(start + timeout + std::chrono::milliseconds{1});
    EXPECT_TRUE(silent.closed_by_target());
    EXPECT_TRUE(initialized.closed_by_target());
    // A connection that connected in time stays, long after the timeout.
    manual_time().advance(100 * timeout);
    await_a_round(host);
    check_io(host);
    served.halt();
    EXPECT_EQ(served.target().statistics().connections_closed, 2U);
}

TEST(tcp_target, only_the_allowed_hosts_connect)
{
    const std::string allowed = "nqn.2014-08.org.nvmexpress:uuid:00000000-0000-0000-0000-0000000000aa";
    served_target served{[&](tcp::target_options& options) { options.allowed_hosts = {allowed}; }};
    tcp_queue refused{"127.0.0.1", served.port(), {}};
    refused.initialize();
    EXPECT_EQ(refused.connect(0, 32, spec::dynamic_controller_id).status(),
              spec::status{spec::fabrics_status::connect_invalid_host}.with_dnr());
    tcp_host_options options;
    options.host_nqn = allowed;
    auto host = served.host(options);
    bring_up(host);
    check_io(host);
}

TEST(tcp_target, commands_before_connect_and_connects_to_unknown_controllers_are_refused)
{
    served_target served;
    tcp_queue queue{"127.0.0.1", served.port(), {}};
    queue.initialize();
    EXPECT_EQ(queue.execute(tcp_host::command(spec::nvm_opcode::flush, 1), {}, {}).status(),
              spec::status{spec::generic_status::command_sequence_error}.with_dnr());

    auto host = served.host();
    const auto cntlid = host.connect_admin();
    host.enable();
    tcp_queue io{"127.0.0.1", served.port(), {}};
    io.initialize();
    EXPECT_EQ(invalid_parameter(io.connect(1, 32, static_cast<std::uint16_t>(cntlid + 100))),
              offsetof(spec::connect_data, cntlid));

    tcp_host_options other_host;
    other_host.host_nqn = "nqn.2014-08.org.nvmexpress:uuid:00000000-0000-0000-0000-000000000002";
    tcp_queue stranger{"127.0.0.1", served.port(), other_host};
    stranger.initialize();
    EXPECT_EQ(invalid_parameter(stranger.connect(1, 32, cntlid)), offsetof(spec::connect_data, hostnqn));

    tcp_host_options wrong_subsystem;
    wrong_subsystem.subsystem_nqn = "nqn.2026-11.io.example:nothing";
    tcp_queue other{"127.0.0.1", served.port(), wrong_subsystem};
    other.initialize();
    EXPECT_EQ(invalid_parameter(other.connect(0, 32, spec::dynamic_controller_id)),
              offsetof(spec::connect_data, subnqn));
}

// ---- I/O --------------------------------------------------------------------------------------

TEST(tcp_target, writes_in_capsule_and_by_r2t_read_back)
{
    served_target served;
    auto host = served.host();
    bring_up(host);
    check_io(host);
}

TEST(tcp_target, header_and_data_digests_carry_the_same_io)
{
    served_target served;
    auto host = served.host({.header_digest = true, .data_digest = true});
    bring_up(host);
    EXPECT_TRUE(host.io(1).params().header_digest);
    EXPECT_TRUE(host.io(1).params().data_digest);
    check_io(host);
}

TEST(tcp_target, a_data_digest_error_fails_the_command_and_the_connection_goes_on)
{
    served_target served;
    auto host = served.host({.data_digest = true});
    bring_up(host);
    auto& queue = host.io(1);

    auto sqe = tcp_host::lba_command(spec::nvm_opcode::write, 1, 0, 1);
    prepare(sqe, 500, spec::sgl_descriptor::data_block(0, 512, spec::sgl_descriptor_subtype::offset));
    const auto data = pattern(512, 3);
    const std::array<std::span<const std::byte>, 1> parts{data};
    std::vector<std::byte> capsule(tcp::pdu_size(spec::pdu_type::capsule_cmd, 512, queue.params()));
    tcp::encode_capsule_cmd(sqe, parts, queue.params(), capsule);
    capsule.back() ^= std::byte{0x01}; // the data digest
    queue.send_bytes(capsule);
    const auto response = queue.receive_pdu();
    ASSERT_EQ(response.type(), spec::pdu_type::capsule_resp);
    const auto cqe = response.header_as<spec::capsule_resp_pdu>().cqe;
    EXPECT_EQ(cqe.cid, 500);
    EXPECT_EQ(cqe.status(), spec::status{spec::generic_status::transient_transport_error});

    std::vector<std::byte> back;
    ASSERT_TRUE(host.read(1, 0, 1, back).ok());
    EXPECT_NE(back, data);
}

/// A Write of `data` at `slba` with command identifier `cid`, its data in the capsule.
std::vector<std::byte> write_capsule(const tcp_queue& queue, std::uint16_t cid, std::uint64_t slba,
                                     std::span<const std::byte> data)
{
    auto sqe = tcp_host::lba_command(spec::nvm_opcode::write, 1, slba,
                                     static_cast<std::uint32_t>(data.size() / 512));
    prepare(sqe, cid,
            spec::sgl_descriptor::data_block(0, static_cast<std::uint32_t>(data.size()),
                                             spec::sgl_descriptor_subtype::offset));
    const std::array<std::span<const std::byte>, 1> parts{data};
    std::vector<std::byte> out(
        tcp::pdu_size(spec::pdu_type::capsule_cmd, static_cast<std::uint32_t>(data.size()), queue.params()));
    tcp::encode_capsule_cmd(sqe, parts, queue.params(), out);
    return out;
}

spec::completion_queue_entry receive_response(tcp_queue& queue)
{
    const auto pdu = queue.receive_pdu();
    if (pdu.type() != spec::pdu_type::capsule_resp) {
        throw nvmekit::testing::host_error{"expected CapsuleResp"};
    }
    return pdu.header_as<spec::capsule_resp_pdu>().cqe;
}

/// The write `cid` sent on I/O queue 1 succeeds, and `data` reads back from `slba`.
void expect_written(tcp_host& host, std::uint16_t cid, std::uint64_t slba, const std::vector<std::byte>& data)
{
    const auto cqe = receive_response(host.io(1));
    EXPECT_EQ(cqe.cid, cid);
    EXPECT_TRUE(cqe.status().is_success());
    std::vector<std::byte> back;
    ASSERT_TRUE(host.read(1, slba, static_cast<std::uint32_t>(data.size() / 512), back).ok());
    EXPECT_EQ(back, data);
}

TEST(tcp_target, commands_sent_back_to_back_all_complete)
{
    served_target served;
    auto host = served.host();
    bring_up(host);
    std::vector<std::byte> burst;
    std::vector<std::vector<std::byte>> data;
    for (std::uint16_t i = 0; i < 8; ++i) {
        data.push_back(pattern(2048, 10U + i));
        const auto capsule =
            write_capsule(host.io(1), static_cast<std::uint16_t>(200 + i), std::uint64_t{i} * 4, data.back());
        burst.insert(burst.end(), capsule.begin(), capsule.end());
    }
    host.io(1).send_bytes(burst);
    std::vector<std::uint16_t> completed;
    for (int i = 0; i < 8; ++i) {
        const auto cqe = receive_response(host.io(1));
        EXPECT_TRUE(cqe.status().is_success());
        completed.push_back(cqe.cid);
    }
    std::sort(completed.begin(), completed.end());
    EXPECT_EQ(completed, (std::vector<std::uint16_t>{200, 201, 202, 203, 204, 205, 206, 207}));
    for (std::uint16_t i = 0; i < 8; ++i) {
        std::vector<std::byte> back;
        ASSERT_TRUE(host.read(1, std::uint64_t{i} * 4, 4, back).ok());
        EXPECT_EQ(back, data[i]);
    }
}

TEST(tcp_target, a_capsule_arriving_a_byte_at_a_time_is_served)
{
    served_target served;
    auto host = served.host({.header_digest = true, .data_digest = true});
    bring_up(host);
    const auto data = pattern(1024, 5);
    const auto capsule = write_capsule(host.io(1), 300, 16, data);
    for (const std::byte b : capsule) {
        host.io(1).send_bytes(std::span{&b, 1});
    }
    expect_written(host, 300, 16, data);
}

TEST(tcp_target, h2c_data_arriving_in_pieces_is_received_in_place)
{
    served_target served;
    auto host = served.host({.data_digest = true});
    bring_up(host);
    auto& queue = host.io(1);
    auto write = tcp_host::lba_command(spec::nvm_opcode::write, 1, 40, 16);
    prepare(write, 77, spec::sgl_descriptor::transport_data_block(8192, tcp_queue::transport_subtype));
    queue.send_capsule(write, {});
    const auto r2t_pdu = queue.receive_pdu();
    ASSERT_EQ(r2t_pdu.type(), spec::pdu_type::r2t);
    const auto r2t = r2t_pdu.header_as<spec::r2t_pdu>();
    EXPECT_EQ(r2t.r2to, 0U);
    EXPECT_EQ(r2t.r2tl, 8192U);

    // The header and a little data first, then the rest in pieces with pauses between them: the
    // target has placed the data by then and receives the pieces into the command's buffer.
    const auto data = pattern(8192, 6);
    const std::array<std::span<const std::byte>, 1> parts{data};
    std::vector<std::byte> h2c(tcp::pdu_size(spec::pdu_type::h2c_data, 8192, queue.params()));
    tcp::encode_h2c_data({.cccid = 77, .ttag = r2t.ttag, .datao = 0, .last = true}, parts, queue.params(),
                         h2c);
    const std::span<const std::byte> bytes{h2c};
    for (std::size_t at = 0; at < bytes.size();) {
        const std::size_t piece = std::min<std::size_t>(at == 0 ? 100 : 3000, bytes.size() - at);
        queue.send_bytes(bytes.subspan(at, piece));
        at += piece;
        std::this_thread::sleep_for(std::chrono::milliseconds{5});
    }
    expect_written(host, 77, 40, data);
}

TEST(tcp_target, a_command_identifier_in_use_is_a_conflict_until_a_reset_ends_its_command)
{
    served_target served;
    auto host = served.host();
    host.connect_admin();
    host.enable();
    auto& admin = host.admin();
    auto event_request = tcp_host::async_event_request_command();
    prepare(event_request, 900, spec::sgl_descriptor::transport_data_block(0, tcp_queue::transport_subtype));
    admin.send_capsule(event_request, {});
    admin.send_capsule(event_request, {}); // CID 900 again, while the first waits for an event
    const auto conflict = receive_response(admin);
    EXPECT_EQ(conflict.cid, 900);
    EXPECT_EQ(conflict.status(), spec::status{spec::generic_status::command_id_conflict}.with_dnr());

    // A Controller Reset ends the request; CID 900 is free again once the controller is back.
    host.set_property(spec::register_offset::cc, 0);
    while (
        spec::csts_register{static_cast<std::uint32_t>(host.get_property(spec::register_offset::csts))}.get(
            spec::csts_register::rdy)) {
    }
    host.enable();
    auto identify = tcp_host::identify_command(spec::cns::identify_controller, 0, 0);
    prepare(identify, 900,
            spec::sgl_descriptor::transport_data_block(sizeof(spec::identify_controller),
                                                       tcp_queue::transport_subtype));
    admin.send_capsule(identify, {});
    const auto data = admin.receive_pdu();
    ASSERT_EQ(data.type(), spec::pdu_type::c2h_data);
    EXPECT_EQ(data.data().size(), sizeof(spec::identify_controller));
    const auto done = receive_response(admin);
    EXPECT_EQ(done.cid, 900);
    EXPECT_TRUE(done.status().is_success());
}

TEST(tcp_target, a_host_that_does_not_read_holds_up_no_other_connection)
{
    served_target served;
    auto slow = served.host({.receive_buffer = 4096});
    auto bystander = served.host();
    bring_up(slow);
    bring_up(bystander);
    const auto data = pattern(128 * 1024, 8);
    ASSERT_TRUE(slow.write(1, 0, data).ok());

    // Reads of 2 MiB in all, whose data the slow host leaves unread for a while.
    constexpr std::uint16_t reads = 16;
    auto& queue = slow.io(1);
    for (std::uint16_t i = 0; i < reads; ++i) {
        auto read = tcp_host::lba_command(spec::nvm_opcode::read, 1, 0, 256);
        prepare(read, static_cast<std::uint16_t>(600 + i),
                spec::sgl_descriptor::transport_data_block(static_cast<std::uint32_t>(data.size()),
                                                           tcp_queue::transport_subtype));
        queue.send_capsule(read, {});
    }
    check_io(bystander);

    for (std::uint16_t i = 0; i < reads; ++i) {
        const auto pdu = queue.receive_pdu();
        ASSERT_EQ(pdu.type(), spec::pdu_type::c2h_data);
        EXPECT_EQ(pdu.header_as<spec::c2h_data_pdu>().cccid, 600 + i);
        EXPECT_TRUE(std::equal(pdu.data().begin(), pdu.data().end(), data.begin(), data.end()));
        const auto cqe = receive_response(queue);
        EXPECT_EQ(cqe.cid, 600 + i);
        EXPECT_TRUE(cqe.status().is_success());
    }
}

// ---- LBA formats with metadata ------------------------------------------------------------------

/// Identify Namespace (CNS 00h) of `nsid` as `host` reads it.
spec::identify_namespace identify_namespace_of(tcp_host& host, std::uint32_t nsid)
{
    std::array<std::byte, sizeof(spec::identify_namespace)> data{};
    EXPECT_TRUE(host.admin()
                    .execute(tcp_host::identify_command(spec::cns::identify_namespace, nsid, 0), {}, data)
                    .ok());
    return std::bit_cast<spec::identify_namespace>(data);
}

/// Format NVM of namespace 1 to LBA format `lbaf`, with the metadata in the extended LBA or not.
nvmekit::testing::completion format_namespace(tcp_host& host, std::uint8_t lbaf, bool extended)
{
    auto format = tcp_host::command(spec::admin_opcode::format_nvm, 1);
    spec::format_nvm_view{.format_index = lbaf, .metadata_in_extended_lba = extended}.encode(format);
    return host.admin().execute(format, {}, {});
}

// A capsule has no metadata pointer: over NVMe/TCP Identify Namespace reports metadata in an
// extended LBA only (MC 01b), nvme format --lbaf=1 (MSET 0) is Invalid Format and --lbaf=1 --ms=1
// formats the namespace, whose 520-byte blocks then travel whole in the data.
TEST(tcp_target, metadata_travels_only_in_an_extended_lba)
{
    served_target served;
    auto host = served.host();
    bring_up(host);
    EXPECT_EQ(identify_namespace_of(host, 1).mc.raw, 0x1U);
    EXPECT_EQ(identify_namespace_of(host, 0xffffffffU).mc.raw, 0x1U);

    EXPECT_EQ(format_namespace(host, 1, false).status(),
              spec::status{spec::command_specific_status::invalid_format}.with_dnr());
    EXPECT_EQ(identify_namespace_of(host, 1).flbas.raw, 0U);

    ASSERT_TRUE(format_namespace(host, 1, true).ok());
    const auto formatted = identify_namespace_of(host, 1);
    EXPECT_EQ(formatted.flbas.raw, 0x11U);
    EXPECT_EQ(formatted.nsze, namespace_bytes / 520);
    const auto blocks = pattern(2 * 520, 9);
    ASSERT_TRUE(host.io(1).execute(tcp_host::lba_command(spec::nvm_opcode::write, 1, 6, 2), blocks, {}).ok());
    std::vector<std::byte> back(blocks.size());
    ASSERT_TRUE(host.io(1).execute(tcp_host::lba_command(spec::nvm_opcode::read, 1, 6, 2), {}, back).ok());
    EXPECT_EQ(back, blocks);

    ASSERT_TRUE(format_namespace(host, 0, false).ok());
    EXPECT_EQ(identify_namespace_of(host, 1).nsze, namespace_bytes / 512);
    check_io(host);
}

// ---- fatal errors -----------------------------------------------------------------------------

TEST(tcp_target, a_header_digest_error_gets_c2h_term_req)
{
    served_target served;
    auto host = served.host({.header_digest = true});
    bring_up(host);
    auto capsule = flush_capsule(host.io(1), 77);
    capsule[sizeof(spec::capsule_cmd_pdu)] ^= std::byte{0x80}; // HDGST
    host.io(1).send_bytes(capsule);
    EXPECT_EQ(termination_of(host.io(1)).status, spec::fatal_error_status::header_digest_error);
    EXPECT_TRUE(host.io(1).closed_by_target());
    // The admin queue of the same association still answers.
    EXPECT_TRUE(
        spec::csts_register{static_cast<std::uint32_t>(host.get_property(spec::register_offset::csts))}.get(
            spec::csts_register::rdy));
}

TEST(tcp_target, a_malformed_pdu_gets_c2h_term_req_and_other_connections_carry_on)
{
    served_target served;
    auto victim = served.host();
    auto bystander = served.host();
    bring_up(victim);
    bring_up(bystander);

    auto capsule = flush_capsule(victim.io(1), 9);
    capsule[2] = std::byte{0x20}; // HLEN of a CapsuleCmd is 72
    victim.io(1).send_bytes(capsule);
    EXPECT_EQ(
        termination_of(victim.io(1)),
        (tcp::fatal_error{spec::fatal_error_status::invalid_pdu_header_field, tcp::header_offset::hlen}));
    ASSERT_TRUE(victim.io(1).last_termination().has_value());
    const auto carried = victim.io(1).last_termination()->data();
    ASSERT_GE(carried.size(), 8U);
    EXPECT_EQ(carried[2], std::byte{0x20}); // the header in error

    check_io(bystander);
    served.halt();
    EXPECT_EQ(served.target().statistics().terminations_sent, 1U);
}

TEST(tcp_target, h2c_data_for_no_r2t_is_fatal)
{
    served_target served;
    auto host = served.host();
    bring_up(host);
    auto& queue = host.io(1);
    const auto data = pattern(512, 4);
    const std::array<std::span<const std::byte>, 1> parts{data};
    std::vector<std::byte> h2c(tcp::pdu_size(spec::pdu_type::h2c_data, 512, queue.params()));
    tcp::encode_h2c_data({.cccid = 1, .ttag = 3, .datao = 0, .last = true}, parts, queue.params(), h2c);
    queue.send_bytes(h2c);
    EXPECT_EQ(termination_of(queue), (tcp::fatal_error{spec::fatal_error_status::invalid_pdu_header_field,
                                                       tcp::header_offset::ttag}));
}

TEST(tcp_target, h2c_term_req_ends_the_connection)
{
    served_target served;
    auto host = served.host();
    bring_up(host);
    std::array<std::byte, spec::tcp_term_req_max_length> term{};
    const auto size =
        tcp::encode_h2c_term_req(tcp::fatal(spec::fatal_error_status::pdu_sequence_error), {}, term);
    host.io(1).send_bytes(std::span{term}.first(size));
    EXPECT_TRUE(host.io(1).closed_by_target());
    EXPECT_TRUE(host.connect_io(2).ok());
    served.halt();
    EXPECT_EQ(served.target().statistics().terminations_received, 1U);
}

TEST(tcp_target, an_association_whose_host_sends_no_keep_alive_within_kato_ends)
{
    constexpr std::chrono::milliseconds kato{500};
    manual_time_target served;
    auto quiet = served.host(
        {.timeout = hang_guard, .keep_alive_timeout_ms = static_cast<std::uint32_t>(kato.count())});
    auto lively = served.host({.keep_alive_timeout_ms = static_cast<std::uint32_t>(kato.count())});
    const auto start = manual_time().now();
    bring_up(quiet); // both Keep Alive Timers start at `start`
    bring_up(lively);
    const auto keep_alive = [&] {
        ASSERT_TRUE(lively.admin().execute(tcp_host::command(spec::admin_opcode::keep_alive), {}, {}).ok());
    };
    // Within KATO of their last Keep Alive (the quiet host's Connect) both associations stay.
    manual_time().set(start + kato / 2);
    keep_alive();
    manual_time().set(start + kato - std::chrono::milliseconds{1});
    keep_alive();
    await_a_round(lively);
    EXPECT_EQ(served.target().statistics().keep_alive_expirations, 0U);
    EXPECT_EQ(served.target().statistics().connections_closed, 0U);
    // Past KATO since the Connect the quiet host's association ends; the lively host's Keep Alives
    // restarted its timer, which has run for 2 ms only.
    manual_time().set(start + kato + std::chrono::milliseconds{1});
    EXPECT_TRUE(quiet.admin().closed_by_target());
    EXPECT_TRUE(quiet.io(1).closed_by_target());
    check_io(lively);
    served.halt();
    EXPECT_EQ(served.target().statistics().keep_alive_expirations, 1U);
    EXPECT_EQ(served.target().association_count(), 1U);
}

TEST(tcp_target, the_keep_alive_timer_feature_reports_the_kato_of_connect)
{
    manual_time_target served; // the timers expire when the test moves the time, not before
    const auto start = manual_time().now();
    const auto kato = [](tcp_host& host) {
        const auto result = host.admin().execute(
            tcp_host::get_features_command(spec::feature_id::keep_alive_timer, spec::feature_select::current),
            {}, {});
        EXPECT_TRUE(result.ok());
        return result.cqe.dw0;
    };
    auto exact = served.host({.keep_alive_timeout_ms = 1500});
    bring_up(exact);
    EXPECT_EQ(kato(exact), 1500U);
    auto rounded = served.host({.timeout = hang_guard, .keep_alive_timeout_ms = 1234});
    bring_up(rounded);
    EXPECT_EQ(kato(rounded), 1300U); // rounded up to KAS (100 ms)
    // Set Features changes it, and Get Features then reports the new value
    ASSERT_TRUE(
        exact.admin()
            .execute(tcp_host::set_features_command(spec::feature_id::keep_alive_timer, 60000), {}, {})
            .ok());
    EXPECT_EQ(kato(exact), 60000U);
    // The timer runs with the new KATO: 1.6 s on, past the Connect's 1.5 s, the association stays,
    // while the other one's 1.3 s has ended it.
    manual_time().set(start + std::chrono::milliseconds{1600});
    await_a_round(exact);
    EXPECT_TRUE(rounded.admin().closed_by_target());
    EXPECT_EQ(kato(exact), 60000U);
    served.halt();
    EXPECT_EQ(served.target().statistics().keep_alive_expirations, 1U);
}

TEST(tcp_target, a_connect_kato_the_controller_cannot_hold_is_an_invalid_parameter)
{
    served_target served;
    tcp_host_options options;
    options.keep_alive_timeout_ms = 0xffffffffU; // rounds up to KAS past 32 bits
    tcp_queue admin{"127.0.0.1", served.port(), options};
    admin.initialize();
    const auto result = admin.connect(0, 32, spec::dynamic_controller_id);
    EXPECT_EQ(invalid_parameter(result), offsetof(spec::connect_command, kato));
    EXPECT_FALSE(spec::connect_invalid_parameter_dword0{result.cqe.dw0}.get(
        spec::connect_invalid_parameter_dword0::in_connect_data)); // in the SQE, not the data
    served.halt();
    EXPECT_EQ(served.target().association_count(), 0U);
}

/// A host of the discovery controller at `port`, with host NQN `host_nqn`, connected and enabled.
tcp_host discovery_host(std::uint16_t port, const std::string& host_nqn)
{
    tcp_host_options options;
    options.subsystem_nqn = std::string{spec::discovery_nqn};
    options.host_nqn = host_nqn;
    options.keep_alive_timeout_ms = 0;
    tcp_host host{"127.0.0.1", port, options};
    host.connect_admin();
    host.enable();
    return host;
}
tcp_host discovery_host(const served_target& served, const std::string& host_nqn)
{
    return discovery_host(served.port(), host_nqn);
}

/// The Discovery log page bytes [offset, offset + bytes) as the host reads them.
std::vector<std::byte> read_log(tcp_host& host, std::uint64_t offset, std::uint32_t bytes)
{
    std::vector<std::byte> out(bytes);
    const auto result =
        host.admin().execute(tcp_host::get_log_page_command(spec::log_page_id{spec::discovery_log_page_id},
                                                            bytes, 0, false, offset),
                             {}, out);
    EXPECT_EQ(result.status(), spec::status::success());
    return out;
}

TEST(tcp_target, the_discovery_controller_lists_the_subsystem_at_this_listener)
{
    const std::string allowed = "nqn.2014-08.org.nvmexpress:uuid:00000000-0000-0000-0000-0000000000aa";
    served_target served{[&](tcp::target_options& options) {
        options.allowed_hosts = {allowed};
        options.port_id = 5;
    }};
    auto host = discovery_host(served, allowed);
    const auto identify = host.identify_controller();
    EXPECT_EQ(identify.cntrltype, spec::controller_type::discovery);
    EXPECT_EQ(spec::text_of(identify.subnqn), spec::discovery_nqn);
    EXPECT_TRUE(identify.lpa.get(spec::log_page_attributes::extended_data));
    // The header first, then the entries from offset 1024, as nvme-cli reads it: the discovery
    // subsystem's own, then the subsystem's
    spec::discovery_log_header header{};
    const auto header_bytes = read_log(host, 0, sizeof(header));
    std::memcpy(&header, header_bytes.data(), sizeof(header));
    EXPECT_EQ(header.numrec, 2U);
    EXPECT_NE(header.genctr, 0U);
    const auto entry_bytes = read_log(host, 2048, 1024);
    spec::discovery_log_entry entry{};
    std::memcpy(&entry, entry_bytes.data(), sizeof(entry));
    EXPECT_EQ(entry.trtype, spec::transport_type::tcp);
    EXPECT_EQ(entry.adrfam, spec::address_family::ipv4);
    EXPECT_EQ(entry.subtype, spec::discovery_subsystem_type::nvm);
    EXPECT_EQ(entry.portid, 5U);
    EXPECT_EQ(entry.cntlid, spec::dynamic_controller_id);
    EXPECT_EQ(entry.address(), "127.0.0.1");
    EXPECT_EQ(entry.service_id(), std::to_string(served.port()));
    EXPECT_EQ(entry.subsystem_nqn(), tcp_host_options{}.subsystem_nqn);
    // Read again whole: the same generation, the same entry
    const auto whole = read_log(host, 0, 3072);
    EXPECT_EQ(std::memcmp(whole.data(), header_bytes.data(), 1024), 0);
    EXPECT_EQ(std::memcmp(whole.data() + 2048, entry_bytes.data(), 1024), 0);
    // A Keep Alive and the features go to the controller core
    EXPECT_TRUE(host.admin().execute(tcp_host::command(spec::admin_opcode::keep_alive), {}, {}).ok());
}

TEST(tcp_target, a_host_not_allowed_discovers_no_subsystem)
{
    served_target served{[](tcp::target_options& options) {
        options.allowed_hosts = {"nqn.2014-08.org.nvmexpress:uuid:00000000-0000-0000-0000-0000000000aa"};
    }};
    auto host =
        discovery_host(served, "nqn.2014-08.org.nvmexpress:uuid:00000000-0000-0000-0000-0000000000bb");
    spec::discovery_log_header header{};
    const auto bytes = read_log(host, 0, sizeof(header));
    std::memcpy(&header, bytes.data(), sizeof(header));
    EXPECT_EQ(header.numrec, 1U); // the discovery subsystem's own entry only
}

TEST(tcp_target, the_discovery_controller_refuses_what_it_does_not_take)
{
    served_target served;
    {
        // Before CC.EN = 1 every command is out of sequence
        tcp_host_options options;
        options.subsystem_nqn = std::string{spec::discovery_nqn};
        auto early = served.host(options);
        early.connect_admin();
        std::array<std::byte, 4096> data{};
        EXPECT_EQ(early.admin()
                      .execute(tcp_host::identify_command(spec::cns::identify_controller, 0, 0), {}, data)
                      .status(),
                  spec::status{spec::generic_status::command_sequence_error}.with_dnr());
    }
    auto host = discovery_host(served, tcp_host_options{}.host_nqn);
    // An NVM admin command: Invalid Command Opcode
    std::array<std::byte, 4096> data{};
    EXPECT_EQ(host.admin()
                  .execute(tcp_host::identify_command(spec::cns::identify_namespace, 1, 0), {}, data)
                  .status(),
              spec::status{spec::generic_status::invalid_field}.with_dnr());
    EXPECT_EQ(
        host.admin().execute(tcp_host::command(spec::admin_opcode::namespace_management), {}, {}).status(),
        spec::status{spec::generic_status::invalid_opcode}.with_dnr());
    // Another log page: Invalid Log Page; an offset past the log: Invalid Field
    EXPECT_EQ(host.admin()
                  .execute(tcp_host::get_log_page_command(spec::log_page_id::smart_health, 512), {},
                           std::span{data}.first(512))
                  .status(),
              spec::status{spec::command_specific_status::invalid_log_page}.with_dnr());
    EXPECT_EQ(host.admin()
                  .execute(tcp_host::get_log_page_command(spec::log_page_id{spec::discovery_log_page_id}, 512,
                                                          0, false, 8192),
                           {}, std::span{data}.first(512))
                  .status(),
              spec::status{spec::generic_status::invalid_field}.with_dnr());
    // No I/O queue: an I/O Connect to the discovery NQN names QID as the invalid parameter
    tcp_host_options options;
    options.subsystem_nqn = std::string{spec::discovery_nqn};
    tcp_queue io{"127.0.0.1", served.port(), options};
    io.initialize();
    const std::uint16_t cntlid = host.identify_controller().cntlid;
    const auto refused = io.connect(1, 32, cntlid);
    EXPECT_EQ(invalid_parameter(refused), offsetof(spec::connect_command, qid));
    // Nor may an I/O Connect to the NVM subsystem name the discovery controller's CNTLID
    tcp_queue nvm_io{"127.0.0.1", served.port(), {}};
    nvm_io.initialize();
    EXPECT_EQ(invalid_parameter(nvm_io.connect(1, 32, cntlid)), offsetof(spec::connect_data, cntlid));
}

TEST(tcp_target, without_discovery_the_discovery_nqn_is_an_unknown_subsystem)
{
    served_target served{[](tcp::target_options& options) { options.discovery = false; }};
    tcp_host_options options;
    options.subsystem_nqn = std::string{spec::discovery_nqn};
    tcp_queue admin{"127.0.0.1", served.port(), options};
    admin.initialize();
    EXPECT_EQ(invalid_parameter(admin.connect(0, 32, spec::dynamic_controller_id)),
              offsetof(spec::connect_data, subnqn));
}

TEST(tcp_target, hostile_byte_streams_end_only_their_own_connections)
{
    served_target served;
    auto bystander = served.host({.data_digest = true});
    bring_up(bystander);
    nvmekit_test::splitmix64 random{0x7c9};
    for (int round = 0; round < 80; ++round) {
        tcp_queue hostile{"127.0.0.1", served.port(), {.header_digest = random.one_in(2)}};
        hostile.initialize();
        if (random.one_in(2)) {
            static_cast<void>(hostile.connect(0, 8, spec::dynamic_controller_id));
        }
        // A valid Write capsule with some of its bytes changed, then bytes at random.
        auto bytes = write_capsule(hostile, 1, 0, pattern(512 * random.between(1, 4), 9));
        for (std::uint64_t flips = random.between(1, 6); flips > 0; --flips) {
            bytes[random.below(bytes.size())] = static_cast<std::byte>(random.next());
        }
        for (std::uint64_t extra = random.below(300); extra > 0; --extra) {
            bytes.push_back(static_cast<std::byte>(random.next()));
        }
        hostile.send_bytes(bytes);
        if (round % 10 == 0) {
            check_io(bystander);
        }
    }
    check_io(bystander);
    // Once the hostile connections are gone, only the bystander's two remain.
    const auto deadline = std::chrono::steady_clock::now() + hang_guard;
    served.halt();
    for (; served.target().connection_count() > 2 && std::chrono::steady_clock::now() < deadline;) {
        served.target().poll(std::chrono::milliseconds{1});
    }
    EXPECT_EQ(served.target().connection_count(), 2U);
    EXPECT_EQ(served.target().association_count(), 1U);
}

TEST(tcp_target, the_admin_connection_ending_ends_the_association)
{
    served_target served;
    {
        auto host = served.host();
        bring_up(host);
        check_io(host);
    }
    auto again = served.host();
    bring_up(again);
    check_io(again);
    served.halt();
    EXPECT_EQ(served.target().association_count(), 1U);
    EXPECT_EQ(served.target().statistics().associations_created, 2U);
}

// ---- subsystems of a listener -------------------------------------------------------------------

constexpr std::string_view host_a = "nqn.2014-08.org.nvmexpress:uuid:00000000-0000-0000-0000-0000000000aa";
constexpr std::string_view host_b = "nqn.2014-08.org.nvmexpress:uuid:00000000-0000-0000-0000-0000000000bb";

/// A target made with no subsystem, polled on its own thread; with() runs a change on the
/// target between two rounds of its loop, as a server's management thread hands it over.
class shared_target {
public:
    shared_target() : target_{options()}
    {
        thread_ = std::thread{[this] {
            while (!stop_.load(std::memory_order_acquire)) {
                {
                    const std::lock_guard lock{mutex_};
                    target_.poll(std::chrono::milliseconds{1});
                }
                while (waiting_.load(std::memory_order_acquire)) {
                    std::this_thread::yield(); // let with() have the lock
                }
            }
        }};
    }
    shared_target(const shared_target&) = delete;
    shared_target& operator=(const shared_target&) = delete;
    ~shared_target()
    {
        stop_.store(true, std::memory_order_release);
        thread_.join();
    }

    template <typename Change>
    auto with(Change&& change)
    {
        waiting_.store(true, std::memory_order_release);
        const std::lock_guard lock{mutex_};
        waiting_.store(false, std::memory_order_release);
        return change(target_);
    }
    [[nodiscard]] std::uint16_t port() const { return target_.port(); }

    /// A host of subsystem `nqn` as host `host_nqn`, not connected yet.
    [[nodiscard]] tcp_host host(std::string_view nqn, std::string_view host_nqn) const
    {
        tcp_host_options options;
        options.subsystem_nqn = std::string{nqn};
        options.host_nqn = std::string{host_nqn};
        options.io_in_capsule_data = 8192;
        return tcp_host{"127.0.0.1", port(), options};
    }

private:
    static tcp::target_options options()
    {
        tcp::target_options options;
        options.port = 0;
        options.limits.maxh2cdata = test_maxh2cdata;
        options.limits.io_in_capsule_data = 8192;
        return options;
    }

    target_type target_;
    std::mutex mutex_;
    std::atomic<bool> waiting_{false};
    std::atomic<bool> stop_{false};
    std::thread thread_;
};

/// A subsystem `nqn` with one RAM namespace of `bytes`.
std::unique_ptr<target_type::subsystem_type> make_subsystem(const std::string& nqn, std::uint64_t bytes)
{
    auto made = std::make_unique<target_type::subsystem_type>(nvmekit::subsystem_identity{.nqn = nqn});
    made->add_namespace(nvmekit::ram_backend{bytes});
    return made;
}

/// NSZE of namespace 1 as `host` identifies it.
std::uint64_t namespace_size(tcp_host& host)
{
    std::array<std::byte, sizeof(spec::identify_namespace)> data{};
    EXPECT_TRUE(
        host.admin().execute(tcp_host::identify_command(spec::cns::identify_namespace, 1, 0), {}, data).ok());
    return std::bit_cast<spec::identify_namespace>(data).nsze;
}

/// The SUBNQNs of the Discovery log page `host` reads after the first entry (the current
/// discovery subsystem's), and its GENCTR.
std::pair<std::vector<std::string>, std::uint64_t> discovered(tcp_host& host)
{
    spec::discovery_log_header header{};
    const auto header_bytes = read_log(host, 0, sizeof(header));
    std::memcpy(&header, header_bytes.data(), sizeof(header));
    std::vector<std::string> nqns;
    for (std::uint64_t i = 0; i < header.numrec; ++i) {
        spec::discovery_log_entry entry{};
        const auto bytes = read_log(host, 1024 * (i + 1), sizeof(entry));
        std::memcpy(&entry, bytes.data(), sizeof(entry));
        EXPECT_EQ(entry.subtype == spec::discovery_subsystem_type::current_discovery, i == 0);
        if (i != 0) {
            nqns.emplace_back(entry.subsystem_nqn());
        }
    }
    return {nqns, header.genctr};
}

TEST(tcp_target, one_listener_serves_several_subsystems_each_with_its_own_controllers)
{
    const std::string first = "nqn.2026-11.io.nvmekit:first";
    const std::string second = "nqn.2026-11.io.nvmekit:second";
    const auto one = make_subsystem(first, namespace_bytes);
    const auto two = make_subsystem(second, 2 * namespace_bytes);
    shared_target shared;
    shared.with([&](target_type& target) {
        target.add_subsystem(*one);
        target.add_subsystem(*two, {.any = false, .hosts = {std::string{host_b}}});
        EXPECT_THROW(target.add_subsystem(*one), std::invalid_argument);
    });

    // Each subsystem numbers its controllers itself: both hosts may get the same CNTLID, and an
    // I/O Connect reaches the controller of the subsystem it names.
    auto a = shared.host(first, host_a);
    auto b = shared.host(second, host_b);
    bring_up(a);
    bring_up(b);
    EXPECT_EQ(a.cntlid(), b.cntlid());
    EXPECT_EQ(namespace_size(a), namespace_bytes / 512);
    EXPECT_EQ(namespace_size(b), 2 * namespace_bytes / 512);
    check_io(a);
    check_io(b);
    EXPECT_EQ(spec::text_of(a.identify_controller().subnqn), first);
    EXPECT_EQ(spec::text_of(b.identify_controller().subnqn), second);
    // host A may not reach the second subsystem
    auto refused = shared.host(second, host_a);
    EXPECT_THROW(refused.connect_admin(), nvmekit::testing::host_error);

    shared.with([&](const target_type& target) {
        std::vector<std::string> seen;
        target.for_each_controller([&](const target_type::controller_view& view) {
            seen.push_back(std::string{view.subsystem_nqn} + " " + std::string{view.host_nqn} + " " +
                           std::to_string(view.qids.size()));
            EXPECT_EQ(view.ctrl.controller_id(), a.cntlid());
        });
        std::sort(seen.begin(), seen.end());
        EXPECT_EQ(seen, (std::vector<std::string>{first + " " + std::string{host_a} + " 2",
                                                  second + " " + std::string{host_b} + " 2"}));
    });

    // The discovery log lists what each host may reach
    auto discover_a = discovery_host(shared.port(), std::string{host_a});
    auto discover_b = discovery_host(shared.port(), std::string{host_b});
    EXPECT_EQ(discovered(discover_a).first, std::vector<std::string>{first});
    EXPECT_EQ(discovered(discover_b).first, (std::vector<std::string>{first, second}));
}

TEST(tcp_target, host_access_changes_reach_connects_the_discovery_log_and_existing_controllers)
{
    const std::string nqn = "nqn.2026-11.io.nvmekit:access";
    const auto served = make_subsystem(nqn, namespace_bytes);
    shared_target shared;
    shared.with([&](target_type& target) { target.add_subsystem(*served); });
    auto a = shared.host(nqn, host_a);
    auto b = shared.host(nqn, host_b);
    bring_up(a);
    bring_up(b);
    auto discover = discovery_host(shared.port(), std::string{host_a});
    const auto [before, generation] = discovered(discover);
    EXPECT_EQ(before, std::vector<std::string>{nqn});

    EXPECT_TRUE(shared.with([&](target_type& target) {
        return target.set_host_access(nqn, {.any = false, .hosts = {std::string{host_b}}});
    }));
    EXPECT_FALSE(shared.with(
        [&](target_type& target) { return target.set_host_access("nqn.2026-11.io.nvmekit:none", {}); }));
    // Host A's controller is gone (its connections closed); host B's goes on
    std::vector<std::byte> back;
    EXPECT_THROW(static_cast<void>(a.read(1, 0, 8, back)), nvmekit::testing::host_error);
    check_io(b);
    auto again = shared.host(nqn, host_a);
    EXPECT_THROW(again.connect_admin(), nvmekit::testing::host_error);
    // ... and the discovery log, a new generation of it, no longer lists the subsystem to host A
    const auto [after, next_generation] = discovered(discover);
    EXPECT_TRUE(after.empty());
    EXPECT_NE(next_generation, generation);
}

TEST(tcp_target, a_removed_subsystem_is_served_no_more_and_may_be_destroyed)
{
    const std::string kept = "nqn.2026-11.io.nvmekit:kept";
    const std::string removed = "nqn.2026-11.io.nvmekit:removed";
    const auto keep = make_subsystem(kept, namespace_bytes);
    auto remove = make_subsystem(removed, namespace_bytes);
    shared_target shared;
    shared.with([&](target_type& target) {
        target.add_subsystem(*keep);
        target.add_subsystem(*remove);
    });
    auto a = shared.host(kept, host_a);
    auto b = shared.host(removed, host_a);
    bring_up(a);
    bring_up(b);
    check_io(b);
    shared.with([&](target_type& target) {
        EXPECT_TRUE(target.remove_subsystem(removed));
        EXPECT_FALSE(target.remove_subsystem(removed));
        EXPECT_FALSE(target.serves(removed));
        EXPECT_TRUE(target.serves(kept));
        EXPECT_EQ(target.subsystem_count(), 1U);
    });
    remove.reset(); // nothing of the target refers to it any more (AddressSanitizer would tell)
    std::vector<std::byte> back;
    EXPECT_THROW(static_cast<void>(b.read(1, 0, 8, back)), nvmekit::testing::host_error);
    tcp_queue queue{"127.0.0.1", shared.port(), {.subsystem_nqn = removed, .host_nqn = std::string{host_a}}};
    queue.initialize();
    EXPECT_EQ(invalid_parameter(queue.connect(0, 32, spec::dynamic_controller_id)),
              offsetof(spec::connect_data, subnqn));
    check_io(a);
    shared.with([](const target_type& target) { EXPECT_EQ(target.association_count(), 1U); });
}

/// Sends an Asynchronous Event Request on `queue` with command identifier `cid`, not waiting.
void request_event(tcp_queue& queue, std::uint16_t cid)
{
    auto sqe = tcp_host::async_event_request_command();
    prepare(sqe, cid, spec::sgl_descriptor::transport_data_block(0, tcp_queue::transport_subtype));
    queue.send_capsule(sqe, {});
}

/// The event that completes the request `cid` sent on `queue`.
spec::async_event_completion event_of(tcp_queue& queue, std::uint16_t cid)
{
    const auto pdu = queue.receive_pdu();
    EXPECT_EQ(pdu.type(), spec::pdu_type::capsule_resp);
    const auto cqe = pdu.header_as<spec::capsule_resp_pdu>().cqe;
    EXPECT_EQ(cqe.cid, cid);
    EXPECT_EQ(cqe.status(), spec::status::success());
    return spec::async_event_completion{cqe.dw0};
}

TEST(tcp_target, a_discovery_controller_reports_discovery_log_changes_to_a_host_that_enabled_them)
{
    const auto first = make_subsystem("nqn.2026-11.io.nvmekit:first", namespace_bytes);
    const auto second = make_subsystem("nqn.2026-11.io.nvmekit:second", namespace_bytes);
    shared_target shared;
    shared.with([&](target_type& target) { target.add_subsystem(*first); });
    auto host = discovery_host(shared.port(), std::string{host_a});
    EXPECT_TRUE(host.identify_controller().oaes.get(spec::async_events_supported::discovery_log_page_change));
    // Discovery Log Page Change Notices (bit 31) kept by Set Features, reported by Get Features
    const std::uint32_t notices = 1U << 31;
    ASSERT_TRUE(
        host.admin()
            .execute(tcp_host::set_features_command(spec::feature_id::async_event_configuration, notices), {},
                     {})
            .ok());
    const auto got =
        host.admin().execute(tcp_host::get_features_command(spec::feature_id::async_event_configuration,
                                                            spec::feature_select::current),
                             {}, {});
    EXPECT_EQ(got.cqe.dw0 & notices, notices);
    const auto [before, generation] = discovered(host);
    EXPECT_EQ(before.size(), 1U);

    request_event(host.admin(), 700);
    shared.with([&](target_type& target) { target.add_subsystem(*second); });
    const auto event = event_of(host.admin(), 700);
    EXPECT_EQ(event.get(spec::async_event_completion::event_type), spec::async_event_type::notice);
    EXPECT_EQ(event.get(spec::async_event_completion::event_information),
              static_cast<std::uint8_t>(spec::notice_event::discovery_log_page_change));
    EXPECT_EQ(event.get(spec::async_event_completion::log_page), spec::log_page_id::discovery);
    // Reading the log (without RAE) acknowledges it: the next change is reported too
    const auto [after, next_generation] = discovered(host);
    EXPECT_EQ(after.size(), 2U);
    EXPECT_NE(next_generation, generation);
    request_event(host.admin(), 701);
    shared.with([&](target_type& target) { EXPECT_TRUE(target.remove_subsystem(second->identity().nqn)); });
    EXPECT_EQ(event_of(host.admin(), 701).get(spec::async_event_completion::log_page),
              spec::log_page_id::discovery);
    EXPECT_EQ(discovered(host).first.size(), 1U);
}

TEST(tcp_target, referrals_are_listed_after_the_subsystems_and_each_change_is_an_event)
{
    const auto served = make_subsystem("nqn.2026-11.io.nvmekit:first", namespace_bytes);
    shared_target shared;
    shared.with([&](target_type& target) { target.add_subsystem(*served); });
    auto host = discovery_host(shared.port(), std::string{host_a});
    ASSERT_TRUE(
        host.admin()
            .execute(tcp_host::set_features_command(spec::feature_id::async_event_configuration, 1U << 31),
                     {}, {})
            .ok());
    const auto [before, generation] = discovered(host);
    EXPECT_EQ(before.size(), 1U);

    // A referral to another discovery service: an AEN, a new GENCTR, and its entry after the subsystem's
    const tcp::discovery_referral other{.address = "127.0.0.2", .port = 8009};
    request_event(host.admin(), 800);
    EXPECT_TRUE(shared.with([&](target_type& target) { return target.add_referral(other); }));
    EXPECT_EQ(event_of(host.admin(), 800).get(spec::async_event_completion::log_page),
              spec::log_page_id::discovery);
    const auto [after, next_generation] = discovered(host);
    EXPECT_EQ(after,
              (std::vector<std::string>{"nqn.2026-11.io.nvmekit:first", std::string{spec::discovery_nqn}}));
    EXPECT_NE(next_generation, generation);
    spec::discovery_log_entry entry{};
    const auto bytes = read_log(host, 3072, sizeof(entry));
    std::memcpy(&entry, bytes.data(), sizeof(entry));
    EXPECT_EQ(entry.trtype, spec::transport_type::tcp);
    EXPECT_EQ(entry.adrfam, spec::address_family::ipv4);
    EXPECT_EQ(entry.subtype, spec::discovery_subsystem_type::referral);
    EXPECT_EQ(entry.treq.get(spec::transport_requirements::secure_channel),
              spec::secure_channel_requirement::not_specified);
    EXPECT_EQ(entry.cntlid, spec::dynamic_controller_id);
    EXPECT_EQ(entry.address(), "127.0.0.2");
    EXPECT_EQ(entry.service_id(), "8009");
    // The same referral again changes nothing
    EXPECT_FALSE(shared.with([&](target_type& target) { return target.add_referral(other); }));
    EXPECT_EQ(discovered(host).second, next_generation);

    // A referral to an NVM subsystem elsewhere, requiring a secure channel: SUBTYPE 2, TREQ required
    const tcp::discovery_referral subsystem_elsewhere{.address = "127.0.0.3",
                                                      .port = 4430,
                                                      .nqn = "nqn.2026-11.io.nvmekit:elsewhere",
                                                      .secure_channel = true};
    request_event(host.admin(), 801);
    shared.with([&](target_type& target) { target.set_referrals({other, subsystem_elsewhere}); });
    EXPECT_EQ(event_of(host.admin(), 801).get(spec::async_event_completion::log_page),
              spec::log_page_id::discovery);
    const auto whole = read_log(host, 0, 5 * 1024);
    spec::discovery_log_header header{};
    std::memcpy(&header, whole.data(), sizeof(header));
    EXPECT_EQ(header.numrec, 4U);
    std::memcpy(&entry, whole.data() + 4096, sizeof(entry));
    EXPECT_EQ(entry.subtype, spec::discovery_subsystem_type::nvm);
    EXPECT_EQ(entry.treq.get(spec::transport_requirements::secure_channel),
              spec::secure_channel_requirement::required);
    EXPECT_EQ(entry.subsystem_nqn(), "nqn.2026-11.io.nvmekit:elsewhere");

    // Removed: an event, and the log lists the subsystem alone again
    request_event(host.admin(), 802);
    shared.with([&](target_type& target) { target.set_referrals({}); });
    static_cast<void>(event_of(host.admin(), 802));
    EXPECT_EQ(discovered(host).first, std::vector<std::string>{"nqn.2026-11.io.nvmekit:first"});
    EXPECT_FALSE(shared.with([&](target_type& target) { return target.remove_referral(other); }));
}

// ---- what a hostile or merely unusual host sends ----------------------------------------------

TEST(tcp_target, an_io_connect_sqsize_above_mqes_or_zero_is_an_invalid_parameter)
{
    served_target served;
    auto host = served.host();
    const auto cntlid = host.connect_admin();
    host.enable();
    ASSERT_TRUE(host.connect_io(1).ok()); // Number of Queues granted
    const auto cap = spec::cap_register{host.get_property(spec::register_offset::cap, 8)};
    const std::uint32_t most = cap.max_queue_entries();
    // NVMe over Fabrics 1.1 3.3: SQSIZE beyond CAP.MQES, or 0, is Connect Invalid Parameters
    // naming SQSIZE in the SQE (IATTR 0), not a queue-creation status.
    for (const std::uint32_t entries : {most + 1, 1U}) {
        tcp_queue io{"127.0.0.1", served.port(), {.io_in_capsule_data = 8192}};
        io.initialize();
        const auto result = io.connect(2, entries, cntlid);
        EXPECT_EQ(invalid_parameter(result), offsetof(spec::connect_command, sqsize)) << entries;
        EXPECT_FALSE(spec::connect_invalid_parameter_dword0{result.cqe.dw0}.get(
            spec::connect_invalid_parameter_dword0::in_connect_data));
    }
    // The largest the controller takes connects.
    tcp_queue io{"127.0.0.1", served.port(), {.io_in_capsule_data = 8192}};
    io.initialize();
    EXPECT_TRUE(io.connect(2, most, cntlid).ok());
    check_io(host);
}

TEST(tcp_target, property_get_and_set_take_only_the_defined_properties_at_their_sizes)
{
    served_target served;
    auto host = served.host();
    host.connect_admin();
    const auto invalid_field = spec::status{spec::generic_status::invalid_field}.with_dnr();
    // NVMe over Fabrics 1.1 Figure 16 (Base 2.0 3.1.4): CAP is 8 bytes at 0h; VS, CC, CSTS, NSSR
    // are 4 bytes; CRTO (68h), which a host reads when CAP.CRMS.CRWMS is set, is 4 bytes.
    EXPECT_TRUE(host.property_get(spec::register_offset::cap, 8).ok());
    EXPECT_TRUE(host.property_get(spec::register_offset::vs).ok());
    EXPECT_TRUE(host.property_get(spec::register_offset::cc).ok());
    EXPECT_TRUE(host.property_get(spec::register_offset::csts).ok());
    EXPECT_TRUE(host.property_get(spec::register_offset::crto).ok());
    // ... and nothing else, nor at another size.
    EXPECT_EQ(host.property_get(spec::register_offset::cap, 4).status(), invalid_field);
    EXPECT_EQ(host.property_get(spec::register_offset::vs, 8).status(), invalid_field);
    EXPECT_EQ(host.property_get(spec::register_offset::cc, 8).status(), invalid_field);
    for (const auto offset :
         {spec::register_offset::intms, spec::register_offset::intmc, spec::register_offset::aqa,
          spec::register_offset::cmbloc, spec::register_offset::cmbsz, spec::register_offset::bpinfo}) {
        EXPECT_EQ(host.property_get(offset).status(), invalid_field) << static_cast<int>(offset);
    }
    for (const auto offset : {spec::register_offset::asq, spec::register_offset::acq}) {
        EXPECT_EQ(host.property_get(offset, 8).status(), invalid_field) << static_cast<int>(offset);
    }
    // Property Set: CC only (NSSR is not offered, below); a read-only property or the admin
    // queue registers of a PCIe controller are no properties to set.
    EXPECT_EQ(host.property_set(spec::register_offset::asq, 0x10000, 8).status(), invalid_field);
    EXPECT_EQ(host.property_set(spec::register_offset::acq, 0x20000, 8).status(), invalid_field);
    EXPECT_EQ(host.property_set(spec::register_offset::aqa, 0x001f001f).status(), invalid_field);
    EXPECT_EQ(host.property_set(spec::register_offset::intms, 1).status(), invalid_field);
    EXPECT_EQ(host.property_set(spec::register_offset::cap, 0, 8).status(), invalid_field);
    EXPECT_EQ(host.property_set(spec::register_offset::vs, 0).status(), invalid_field);
    EXPECT_EQ(host.property_set(spec::register_offset::cc, 0, 8).status(), invalid_field);
    // The controller still comes up as a host brings it up.
    host.enable();
    ASSERT_TRUE(host.connect_io(1).ok());
    check_io(host);
}

TEST(tcp_target, nvm_subsystem_reset_is_not_offered)
{
    served_target served;
    auto host = served.host();
    host.connect_admin();
    host.enable();
    ASSERT_TRUE(host.connect_io(1).ok());
    // CAP.NSSRS = 0: a reset of the one controller that receives it is no reset of the NVM
    // subsystem, whose other controllers (over any listener) would go on.
    EXPECT_FALSE(
        spec::cap_register{host.get_property(spec::register_offset::cap, 8)}.get(spec::cap_register::nssrs));
    const auto invalid_field = spec::status{spec::generic_status::invalid_field}.with_dnr();
    EXPECT_EQ(host.property_get(spec::register_offset::nssr).status(), invalid_field);
    EXPECT_EQ(host.property_set(spec::register_offset::nssr, spec::nvm_subsystem_reset_value).status(),
              invalid_field);
    EXPECT_TRUE(
        spec::csts_register{static_cast<std::uint32_t>(host.get_property(spec::register_offset::csts))}.get(
            spec::csts_register::rdy));
    check_io(host);
}

TEST(tcp_target, a_zero_length_sgl_on_a_command_without_data_is_accepted)
{
    served_target served;
    auto host = served.host();
    bring_up(host);
    auto& queue = host.io(1);
    // What the Linux host sends for a command without data (nvme_tcp_set_sg_null): a Transport
    // SGL Data Block of length 0; and the Data Block descriptors of length 0 other hosts send.
    const std::array<spec::sgl_descriptor, 4> descriptors{
        spec::sgl_descriptor::transport_data_block(0, tcp_queue::transport_subtype),
        spec::sgl_descriptor::data_block(0, 0, spec::sgl_descriptor_subtype::offset),
        spec::sgl_descriptor::data_block(0, 0, spec::sgl_descriptor_subtype::address),
        spec::sgl_descriptor::transport_data_block(0, static_cast<spec::sgl_descriptor_subtype>(0)),
    };
    std::uint16_t cid = 600;
    for (const auto& sgl : descriptors) {
        auto sqe = tcp_host::command(spec::nvm_opcode::flush, 1);
        prepare(sqe, cid, sgl);
        queue.send_capsule(sqe, {});
        const auto response = receive_response(queue);
        EXPECT_EQ(response.cid, cid);
        EXPECT_EQ(response.status(), spec::status::success()) << static_cast<int>(sgl.type());
        ++cid;
    }
    // A command that moves data still needs a descriptor of its length.
    auto read = tcp_host::lba_command(spec::nvm_opcode::read, 1, 0, 1);
    prepare(read, cid, spec::sgl_descriptor::data_block(0, 0, spec::sgl_descriptor_subtype::address));
    queue.send_capsule(read, {});
    EXPECT_FALSE(receive_response(queue).status().is_success());
    check_io(host);
}

TEST(tcp_target, host_nqns_match_the_allowed_hosts_byte_for_byte)
{
    const std::string allowed = "nqn.2014-08.org.nvmexpress:uuid:00000000-0000-0000-0000-0000000000aa";
    served_target served{[&](tcp::target_options& options) { options.allowed_hosts = {allowed}; }};
    // An NQN with trailing spaces is another NQN (NVMe over Fabrics 1.1 7.9: compared as a
    // whole up to its NUL).
    tcp_queue padded{"127.0.0.1", served.port(), {.host_nqn = allowed + " "}};
    padded.initialize();
    EXPECT_EQ(padded.connect(0, 32, spec::dynamic_controller_id).status(),
              spec::status{spec::fabrics_status::connect_invalid_host}.with_dnr());
    // Nor does it discover the subsystem ...
    tcp_host_options options;
    options.host_nqn = allowed;
    auto host = served.host(options);
    bring_up(host);
    auto discover = discovery_host(served, allowed + " ");
    std::vector<std::byte> log = read_log(discover, 0, 4096);
    spec::discovery_log_header header{};
    std::memcpy(&header, log.data(), sizeof(header));
    for (std::uint64_t i = 0; i < header.numrec; ++i) {
        spec::discovery_log_entry entry{};
        std::memcpy(&entry, log.data() + 1024 * (i + 1), sizeof(entry));
        EXPECT_NE(entry.subtype, spec::discovery_subsystem_type::nvm);
    }
    check_io(host);

    // ... nor, where any host may connect, the controller of the host it resembles.
    served_target open;
    auto first = open.host(options);
    bring_up(first);
    tcp_queue io{"127.0.0.1", open.port(), {.host_nqn = allowed + "  ", .io_in_capsule_data = 8192}};
    io.initialize();
    EXPECT_EQ(invalid_parameter(io.connect(2, 32, first.cntlid())), offsetof(spec::connect_data, hostnqn));
    check_io(first);
}

/// The Discovery log page's entries as `host` reads them (up to three).
std::vector<spec::discovery_log_entry> discovery_entries(tcp_host& host)
{
    const auto log = read_log(host, 0, 4096);
    spec::discovery_log_header header{};
    std::memcpy(&header, log.data(), sizeof(header));
    std::vector<spec::discovery_log_entry> entries(std::min<std::uint64_t>(header.numrec, 3));
    for (std::size_t i = 0; i < entries.size(); ++i) {
        std::memcpy(&entries[i], log.data() + 1024 * (i + 1), sizeof(spec::discovery_log_entry));
    }
    return entries;
}

TEST(tcp_target, the_discovery_log_begins_with_the_current_discovery_subsystem)
{
    served_target served{[](tcp::target_options& options) {
        options.port_id = 7;
        options.allowed_hosts = {tcp_host_options{}.host_nqn};
    }};
    auto host = discovery_host(served, tcp_host_options{}.host_nqn);
    const auto entries = discovery_entries(host);
    ASSERT_EQ(entries.size(), 2U);
    // SUBTYPE 3h names the discovery subsystem that returned the log, at this listener, as
    // Linux's nvmet lists it first; then the NVM subsystem.
    const auto& current = entries[0];
    EXPECT_EQ(current.subtype, spec::discovery_subsystem_type::current_discovery);
    EXPECT_EQ(current.subsystem_nqn(), spec::discovery_nqn);
    EXPECT_EQ(current.trtype, spec::transport_type::tcp);
    EXPECT_EQ(current.adrfam, spec::address_family::ipv4);
    EXPECT_EQ(current.address(), "127.0.0.1");
    EXPECT_EQ(current.service_id(), std::to_string(served.port()));
    EXPECT_EQ(current.portid, 7U);
    EXPECT_EQ(current.cntlid, spec::dynamic_controller_id);
    EXPECT_EQ(entries[1].subtype, spec::discovery_subsystem_type::nvm);
    EXPECT_EQ(entries[1].subsystem_nqn(), tcp_host_options{}.subsystem_nqn);
    // A host that may reach no subsystem still sees the discovery subsystem.
    auto stranger =
        discovery_host(served, "nqn.2014-08.org.nvmexpress:uuid:00000000-0000-0000-0000-0000000000bb");
    const auto alone = discovery_entries(stranger);
    ASSERT_EQ(alone.size(), 1U);
    EXPECT_EQ(alone[0].subtype, spec::discovery_subsystem_type::current_discovery);
}

TEST(tcp_target, a_listener_on_any_address_lists_the_address_the_host_connected_to)
{
    served_target served{[](tcp::target_options& options) { options.address = "0.0.0.0"; }};
    auto host = discovery_host(served, tcp_host_options{}.host_nqn);
    const auto entries = discovery_entries(host);
    ASSERT_EQ(entries.size(), 2U);
    for (const auto& entry : entries) {
        EXPECT_EQ(entry.address(), "127.0.0.1");
        EXPECT_EQ(entry.adrfam, spec::address_family::ipv4);
        EXPECT_EQ(entry.service_id(), std::to_string(served.port()));
    }
}

TEST(tcp_target, a_listener_on_any_ipv6_address_lists_the_address_the_host_connected_to)
{
    try {
        static_cast<void>(tcp::listen_on("::1", 0));
    } catch (const std::exception&) {
        GTEST_SKIP() << "no IPv6 loopback on this machine (tests/test_stages.txt allows this skip)";
    }
    served_target served{[](tcp::target_options& options) { options.address = "::"; }};
    tcp_host_options options;
    options.subsystem_nqn = std::string{spec::discovery_nqn};
    options.keep_alive_timeout_ms = 0;
    tcp_host host{"::1", served.port(), options};
    host.connect_admin();
    host.enable();
    const auto entries = discovery_entries(host);
    ASSERT_EQ(entries.size(), 2U);
    for (const auto& entry : entries) {
        EXPECT_EQ(entry.address(), "::1");
        EXPECT_EQ(entry.adrfam, spec::address_family::ipv6);
    }
    // An IPv4 host reaching the same listener (an IPv4-mapped address) is given its IPv4 address.
    tcp_host v4{"127.0.0.1", served.port(), options};
    try {
        v4.connect_admin();
    } catch (const nvmekit::testing::host_error&) {
        return; // IPV6_V6ONLY by default on this system
    }
    v4.enable();
    for (const auto& entry : discovery_entries(v4)) {
        EXPECT_EQ(entry.address(), "127.0.0.1");
        EXPECT_EQ(entry.adrfam, spec::address_family::ipv4);
    }
}

// ---- what a host may make the target hold ------------------------------------------------------

/// Waits (up to hang_guard) until `condition()` holds; whether it did.
template <typename Condition>
bool eventually(Condition&& condition)
{
    const auto deadline = std::chrono::steady_clock::now() + hang_guard;
    while (!condition()) {
        if (std::chrono::steady_clock::now() > deadline) {
            return false;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds{1});
    }
    return true;
}

/// A queue of `served`'s target whose ICReq is answered: it holds a connection there.
template <typename Served>
std::unique_ptr<tcp_queue> initialized_queue(const Served& served, tcp_host_options options = {})
{
    options.timeout = hang_guard;
    auto queue = std::make_unique<tcp_queue>("127.0.0.1", served.port(), options);
    queue->initialize();
    return queue;
}

/// The status of an admin Connect as `host_nqn` to subsystem `nqn` of `served`'s target, from
/// `source_address` (empty: any).
template <typename Served>
spec::status admin_connect_status(const Served& served, const std::string& nqn, const std::string& host_nqn,
                                  std::unique_ptr<tcp_queue>& kept, const std::string& source_address = {})
{
    tcp_host_options options;
    options.subsystem_nqn = nqn;
    options.host_nqn = host_nqn;
    options.keep_alive_timeout_ms = 0;
    options.source_address = source_address;
    kept = initialized_queue(served, options);
    return kept->connect(0, 32, spec::dynamic_controller_id).status();
}

/// A host NQN of its own for each `i`.
std::string made_up_host(unsigned i)
{
    return "nqn.2014-08.org.nvmexpress:uuid:00000000-0000-0000-0000-" + std::to_string(100000000000U + i);
}

TEST(tcp_target, connections_beyond_the_listener_limit_are_closed_at_accept)
{
    manual_time_target served{[](tcp::target_options& options) { options.max_connections = 3; }};
    std::vector<std::unique_ptr<tcp_queue>> kept;
    for (int i = 0; i < 3; ++i) {
        kept.push_back(initialized_queue(served));
    }
    tcp_queue refused{"127.0.0.1", served.port(), {.timeout = hang_guard}};
    EXPECT_TRUE(refused.closed_by_target());
    auto statistics = served.target().statistics();
    EXPECT_EQ(statistics.connections_refused, 1U);
    EXPECT_EQ(statistics.connections_accepted, 3U);
    // Once one has gone, another is served.
    kept.pop_back();
    ASSERT_TRUE(eventually([&] { return served.target().statistics().connections_closed == 1; }));
    kept.push_back(initialized_queue(served));
    served.halt();
    EXPECT_EQ(served.target().connection_count(), 3U);
    EXPECT_EQ(served.target().statistics().connections_refused, 1U);
}

TEST(tcp_target, connections_from_one_address_beyond_its_limit_are_closed_at_accept)
{
    manual_time_target served{[](tcp::target_options& options) { options.max_connections_per_address = 2; }};
    auto first = initialized_queue(served);
    auto second = initialized_queue(served);
    tcp_queue refused{"127.0.0.1", served.port(), {.timeout = hang_guard}};
    EXPECT_TRUE(refused.closed_by_target());
    EXPECT_EQ(served.target().statistics().connections_refused_per_address, 1U);
    // Another address of the loopback is another host: served.
    tcp_host_options elsewhere;
    elsewhere.source_address = "127.0.0.2";
    auto other = initialized_queue(served, elsewhere);
    const auto statistics = served.target().statistics();
    EXPECT_EQ(statistics.connections_accepted, 3U);
    EXPECT_EQ(statistics.connections_refused, 0U);
}

TEST(tcp_target, associations_of_one_host_beyond_its_limit_are_refused_as_controller_busy)
{
    manual_time_target served{[](tcp::target_options& options) { options.max_associations_per_host = 2; }};
    const std::string nvm = tcp_host_options{}.subsystem_nqn;
    const std::string discovery{spec::discovery_nqn};
    const std::string busy_host = made_up_host(1);
    std::array<std::unique_ptr<tcp_queue>, 4> queues;
    EXPECT_TRUE(admin_connect_status(served, nvm, busy_host, queues[0]).is_success());
    EXPECT_TRUE(admin_connect_status(served, discovery, busy_host, queues[1]).is_success());
    // A third, to either subsystem or the discovery controller, is refused; the host may try
    // again later (no DNR).
    EXPECT_EQ(admin_connect_status(served, discovery, busy_host, queues[2]),
              spec::status{spec::fabrics_status::connect_controller_busy});
    EXPECT_EQ(served.target().statistics().associations_refused_per_host, 1U);
    EXPECT_TRUE(admin_connect_status(served, nvm, made_up_host(2), queues[3]).is_success());
    // Once one of its associations has ended, the host connects again.
    queues[0].reset();
    ASSERT_TRUE(
        eventually([&] { return admin_connect_status(served, nvm, busy_host, queues[0]).is_success(); }));
    served.halt();
    EXPECT_EQ(served.target().association_count(), 3U);
    EXPECT_EQ(served.target().statistics().associations_refused, 0U);
}

TEST(tcp_target, associations_beyond_the_listener_limit_are_refused_as_controller_busy)
{
    // Discovery controllers of made-up hosts, asked for no keep alive: each is an association.
    manual_time_target served{[](tcp::target_options& options) { options.max_associations = 4; }};
    const std::string discovery{spec::discovery_nqn};
    std::array<std::unique_ptr<tcp_queue>, 6> queues;
    for (unsigned i = 0; i < 4; ++i) {
        EXPECT_TRUE(admin_connect_status(served, discovery, made_up_host(i), queues[i]).is_success());
    }
    EXPECT_EQ(admin_connect_status(served, discovery, made_up_host(4), queues[4]),
              spec::status{spec::fabrics_status::connect_controller_busy});
    EXPECT_EQ(admin_connect_status(served, tcp_host_options{}.subsystem_nqn, made_up_host(5), queues[5]),
              spec::status{spec::fabrics_status::connect_controller_busy});
    served.halt();
    EXPECT_EQ(served.target().association_count(), 4U);
    EXPECT_EQ(served.target().statistics().associations_refused, 2U);
    EXPECT_EQ(served.target().statistics().associations_created, 4U);
}

TEST(tcp_target, associations_from_one_address_beyond_its_limit_are_refused_as_controller_busy)
{
    // Each Connect with a host NQN of its own, as a peer that makes them up would send.
    manual_time_target served{[](tcp::target_options& options) { options.max_associations_per_address = 2; }};
    const std::string discovery{spec::discovery_nqn};
    const std::string nvm = tcp_host_options{}.subsystem_nqn;
    std::array<std::unique_ptr<tcp_queue>, 5> queues;
    EXPECT_TRUE(
        admin_connect_status(served, discovery, made_up_host(0), queues[0], "127.0.0.1").is_success());
    EXPECT_TRUE(admin_connect_status(served, nvm, made_up_host(1), queues[1], "127.0.0.1").is_success());
    EXPECT_EQ(admin_connect_status(served, discovery, made_up_host(2), queues[2], "127.0.0.1"),
              spec::status{spec::fabrics_status::connect_controller_busy});
    EXPECT_EQ(served.target().statistics().associations_refused_per_address, 1U);
    // Another address of the loopback is another host: served.
    EXPECT_TRUE(
        admin_connect_status(served, discovery, made_up_host(3), queues[3], "127.0.0.2").is_success());
    // Once one of the address's associations has ended, it connects again.
    queues[0].reset();
    ASSERT_TRUE(eventually([&] {
        return admin_connect_status(served, discovery, made_up_host(4), queues[4], "127.0.0.1").is_success();
    }));
    served.halt();
    const auto statistics = served.target().statistics();
    EXPECT_EQ(served.target().association_count(), 3U);
    EXPECT_EQ(statistics.associations_refused, 0U);
    EXPECT_EQ(statistics.associations_refused_per_host, 0U);
}

TEST(tcp_target, a_new_connection_takes_the_place_of_the_oldest_that_sent_no_icreq)
{
    manual_time_target served{[](tcp::target_options& options) { options.max_connections = 3; }};
    const auto accepted = [&](std::uint64_t n) {
        return eventually([&] { return served.target().statistics().connections_accepted == n; });
    };
    tcp_queue oldest{"127.0.0.1", served.port(), {.timeout = hang_guard}};
    ASSERT_TRUE(accepted(1));
    auto initialized = initialized_queue(served);
    tcp_queue newer{"127.0.0.1", served.port(), {.timeout = hang_guard}};
    ASSERT_TRUE(accepted(3));
    // The listener is full: a new host is served in place of the connection accepted longest ago
    // that has sent no ICReq, then of the next one; the one that sent its ICReq stays.
    auto first_newcomer = initialized_queue(served);
    EXPECT_TRUE(oldest.closed_by_target());
    auto second_newcomer = initialized_queue(served);
    EXPECT_TRUE(newer.closed_by_target());
    EXPECT_EQ(served.target().statistics().idle_connections_closed, 2U);
    // With none left that has not sent its ICReq, a connection beyond the limit is closed at once.
    tcp_queue refused{"127.0.0.1", served.port(), {.timeout = hang_guard}};
    EXPECT_TRUE(refused.closed_by_target());
    EXPECT_TRUE(initialized->connect(0, 32, spec::dynamic_controller_id).status().is_success());
    served.halt();
    const auto statistics = served.target().statistics();
    EXPECT_EQ(statistics.connections_accepted, 5U);
    EXPECT_EQ(statistics.connections_refused, 1U);
    EXPECT_EQ(statistics.idle_connections_closed, 2U);
    EXPECT_EQ(served.target().connection_count(), 3U);
}

/// RLIMIT_NOFILE's soft limit lowered to `headroom` above the lowest free descriptor while it
/// lives, then restored.
class lowered_descriptor_limit {
public:
    explicit lowered_descriptor_limit(rlim_t headroom)
    {
        if (::getrlimit(RLIMIT_NOFILE, &original_) != 0) {
            throw std::system_error{errno, std::generic_category(), "getrlimit"};
        }
        const int lowest = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (lowest < 0) {
            throw std::system_error{errno, std::generic_category(), "open /dev/null"};
        }
        ::close(lowest);
        soft_ = std::min(static_cast<rlim_t>(lowest) + headroom, original_.rlim_max);
        const rlimit lowered{soft_, original_.rlim_max};
        if (::setrlimit(RLIMIT_NOFILE, &lowered) != 0) {
            throw std::system_error{errno, std::generic_category(), "setrlimit"};
        }
    }
    lowered_descriptor_limit(const lowered_descriptor_limit&) = delete;
    lowered_descriptor_limit& operator=(const lowered_descriptor_limit&) = delete;
    ~lowered_descriptor_limit() { ::setrlimit(RLIMIT_NOFILE, &original_); }

    [[nodiscard]] std::size_t soft() const noexcept { return static_cast<std::size_t>(soft_); }

private:
    rlimit original_{};
    rlim_t soft_ = 0;
};

TEST(tcp_target, the_connections_of_every_target_leave_the_descriptor_reserve_free)
{
    const std::size_t before = tcp::open_target_connections(); // (0 unless a target leaked)
    const lowered_descriptor_limit limit{64};
    // Three more connections over both targets, whatever the lowered limit.
    const std::size_t reserve = limit.soft() - before - 3;
    const auto configure = [&](tcp::target_options& options) { options.descriptor_reserve = reserve; };
    {
        target_type::subsystem_type subsystem;
        tcp::target_options leaves_nothing;
        leaves_nothing.port = 0;
        leaves_nothing.descriptor_reserve = limit.soft();
        EXPECT_THROW(target_type(subsystem, leaves_nothing), std::invalid_argument);
    }
    manual_time_target first{configure};
    manual_time_target second{configure};
    auto first_a = initialized_queue(first);
    auto first_b = initialized_queue(first);
    tcp_queue silent{"127.0.0.1", second.port(), {.timeout = hang_guard}};
    ASSERT_TRUE(eventually([&] { return second.target().statistics().connections_accepted == 1; }));
    // At the bound, a new host is served in place of the connection that has sent no ICReq.
    auto newcomer = initialized_queue(second);
    EXPECT_TRUE(silent.closed_by_target());
    EXPECT_EQ(second.target().statistics().idle_connections_closed, 1U);
    // With none to close, the next one waits in the backlog, neither accepted nor refused, and
    // the listener is left out of the poll set (no round is woken by it).
    tcp_queue waiting{"127.0.0.1", second.port(), {.timeout = hang_guard}};
    std::this_thread::sleep_for(std::chrono::milliseconds{100});
    second.halt();
    EXPECT_EQ(second.target().statistics().connections_accepted, 2U);
    EXPECT_EQ(second.target().statistics().connections_refused, 0U);
    std::vector<pollfd> fds;
    second.target().add_pollfds(fds);
    ASSERT_FALSE(fds.empty());
    EXPECT_EQ(fds[0].fd, -1);
    EXPECT_FALSE(second.target().has_work());
    // A connection of the other target closes: this one accepts the waiting one.
    first_a.reset();
    ASSERT_TRUE(eventually([&] { return first.target().statistics().connections_closed == 1; }));
    for (int round = 0; round < 1000 && second.target().statistics().connections_accepted < 3; ++round) {
        second.target().poll(std::chrono::milliseconds{2});
    }
    EXPECT_EQ(second.target().statistics().connections_accepted, 3U);
    EXPECT_EQ(tcp::open_target_connections(), before + 3);
}

TEST(tcp_target, a_connection_that_sends_no_icreq_in_time_is_closed)
{
    constexpr std::chrono::milliseconds icreq_timeout{100};
    constexpr std::chrono::milliseconds connect_timeout{1000};
    manual_time_target served{[&](tcp::target_options& options) {
        options.icreq_timeout = icreq_timeout;
        options.connect_timeout = connect_timeout;
    }};
    const auto start = manual_time().now();
    tcp_queue silent{"127.0.0.1", served.port(), {.timeout = hang_guard}};
    auto initialized = initialized_queue(served); // accepted by now, as `silent` before it
    auto host = served.host();
    bring_up(host);
    manual_time().set(start + icreq_timeout - std::chrono::milliseconds{1});
    await_a_round(host);
    EXPECT_EQ(served.target().statistics().connections_closed, 0U);
    // Past icreq_timeout the connection without ICReq is closed; the one that sent its ICReq
    // has until connect_timeout to connect.
    manual_time().set(start + icreq_timeout + std::chrono::milliseconds{1});
    EXPECT_TRUE(silent.closed_by_target());
    await_a_round(host);
    auto statistics = served.target().statistics();
    EXPECT_EQ(statistics.icreq_timeouts, 1U);
    EXPECT_EQ(statistics.connections_closed, 1U);
    manual_time().set(start + connect_timeout + std::chrono::milliseconds{1});
    EXPECT_TRUE(initialized->closed_by_target());
    check_io(host);
    served.halt();
    statistics = served.target().statistics();
    EXPECT_EQ(statistics.icreq_timeouts, 1U);
    EXPECT_EQ(statistics.connect_timeouts, 1U);
}

/// KATO of Get Features Keep Alive Timer (current) on `host`'s admin queue.
std::uint32_t current_kato(tcp_host& host)
{
    const auto result = host.admin().execute(
        tcp_host::get_features_command(spec::feature_id::keep_alive_timer, spec::feature_select::current), {},
        {});
    EXPECT_TRUE(result.ok());
    return result.cqe.dw0;
}

TEST(tcp_target, a_discovery_controller_asked_for_no_kato_ends_after_the_default_kato)
{
    constexpr std::chrono::milliseconds default_kato{120000};
    manual_time_target served;
    const auto start = manual_time().now();
    tcp_host_options options;
    options.subsystem_nqn = std::string{spec::discovery_nqn};
    options.keep_alive_timeout_ms = 0;
    options.timeout = hang_guard;
    tcp_host discovery{"127.0.0.1", served.port(), options};
    discovery.connect_admin();
    discovery.enable();
    EXPECT_EQ(current_kato(discovery), 120000U);
    // An NVM subsystem's controller asked for no KATO has none, and stays.
    auto host = served.host({.keep_alive_timeout_ms = 0});
    bring_up(host);
    EXPECT_EQ(current_kato(host), 0U);
    manual_time().set(start + default_kato - std::chrono::milliseconds{1});
    await_a_round(host);
    EXPECT_EQ(served.target().statistics().keep_alive_expirations, 0U);
    manual_time().set(start + default_kato + std::chrono::milliseconds{1});
    EXPECT_TRUE(discovery.admin().closed_by_target());
    check_io(host);
    served.halt();
    EXPECT_EQ(served.target().statistics().keep_alive_expirations, 1U);
    EXPECT_EQ(served.target().association_count(), 1U);
}

TEST(tcp_target, keep_alive_runs_from_the_admin_connect_before_the_controller_is_enabled)
{
    constexpr std::chrono::milliseconds kato{1000};
    manual_time_target served;
    const auto start = manual_time().now();
    const tcp_host_options with_kato{.timeout = hang_guard,
                                     .keep_alive_timeout_ms = static_cast<std::uint32_t>(kato.count())};
    auto idle = served.host(with_kato);   // connects and is never heard from again
    auto asking = served.host(with_kato); // connects, then sends Property Gets, never enabling
    auto bystander = served.host({.keep_alive_timeout_ms = 0});
    idle.connect_admin();
    asking.connect_admin();
    bystander.connect_admin();
    manual_time().set(start + kato * 6 / 10);
    static_cast<void>(asking.get_property(spec::register_offset::csts));
    manual_time().set(start + kato - std::chrono::milliseconds{1});
    await_a_round(bystander);
    EXPECT_EQ(served.target().statistics().keep_alive_expirations, 0U);
    // KATO after its Connect, with no command, the idle host's association ends; a command
    // restarted the other's timer.
    manual_time().set(start + kato + std::chrono::milliseconds{1});
    EXPECT_TRUE(idle.admin().closed_by_target());
    await_a_round(bystander);
    EXPECT_EQ(served.target().statistics().keep_alive_expirations, 1U);
    static_cast<void>(asking.get_property(spec::register_offset::csts));
    // The other's ends KATO after its last command.
    manual_time().set(start + kato * 2 + std::chrono::milliseconds{2});
    EXPECT_TRUE(asking.admin().closed_by_target());
    await_a_round(bystander);
    served.halt();
    EXPECT_EQ(served.target().statistics().keep_alive_expirations, 2U);
    EXPECT_EQ(served.target().association_count(), 1U);
}

TEST(tcp_target, an_sgl_beyond_mdts_is_an_invalid_field_and_takes_no_buffer)
{
    served_target served; // MDTS 5: 128 KiB, below max_data_length's 1 MiB
    EXPECT_EQ(served.target().max_data_length(), 128U * 1024U);
    auto host = served.host();
    bring_up(host);
    auto& queue = host.io(1);
    for (const auto opcode : {spec::nvm_opcode::write, spec::nvm_opcode::read}) {
        auto sqe = tcp_host::lba_command(opcode, 1, 0, 512); // 256 KiB
        prepare(sqe, 60,
                spec::sgl_descriptor::transport_data_block(256 * 1024, tcp_queue::transport_subtype));
        queue.send_capsule(sqe, {});
        const auto cqe = receive_response(queue); // no R2T before it
        EXPECT_EQ(cqe.cid, 60);
        EXPECT_EQ(cqe.status(), spec::status{spec::generic_status::invalid_field}.with_dnr());
    }
    EXPECT_EQ(served.target().statistics().buffer_bytes, 0U);
    check_io(host);

    // Below MDTS, max_data_length bounds it with Data SGL Length Invalid.
    served_target smaller{[](tcp::target_options& options) { options.max_data_length = 64 * 1024; }};
    EXPECT_EQ(smaller.target().max_data_length(), 64U * 1024U);
    auto other = smaller.host();
    bring_up(other);
    auto sqe = tcp_host::lba_command(spec::nvm_opcode::write, 1, 0, 192); // 96 KiB
    prepare(sqe, 61, spec::sgl_descriptor::transport_data_block(96 * 1024, tcp_queue::transport_subtype));
    other.io(1).send_capsule(sqe, {});
    EXPECT_EQ(receive_response(other.io(1)).status(),
              spec::status{spec::generic_status::data_sgl_length_invalid}.with_dnr());
}

TEST(tcp_target, a_write_by_r2t_is_asked_for_in_r2ts_of_maxh2cdata_bytes)
{
    served_target served;
    auto host = served.host();
    bring_up(host);
    const auto data = pattern(100 * 1024, 21);
    ASSERT_TRUE(host.write(1, 0, data).ok());
    const auto& r2ts = host.io(1).r2ts();
    ASSERT_EQ(r2ts.size(), 4U);
    std::uint32_t offset = 0;
    for (const auto& r2t : r2ts) {
        EXPECT_EQ(r2t.r2to, offset);
        EXPECT_EQ(r2t.r2tl, std::min<std::uint32_t>(test_maxh2cdata, 100 * 1024 - offset));
        offset += r2t.r2tl;
    }
    EXPECT_EQ(offset, data.size());
    std::vector<std::byte> back;
    ASSERT_TRUE(host.read(1, 0, 200, back).ok());
    EXPECT_EQ(back, data);
}

/// The H2CData PDUs that answer `r2t` with `data` (the command's data from offset 0).
std::vector<std::byte> h2c_data_for(const tcp_queue& queue, const spec::r2t_pdu& r2t,
                                    std::span<const std::byte> data)
{
    std::vector<std::byte> out;
    for (std::uint32_t offset = r2t.r2to; offset < r2t.r2to + r2t.r2tl;) {
        const std::uint32_t chunk = std::min(r2t.r2to + r2t.r2tl - offset, queue.params().maxh2cdata);
        const std::array<std::span<const std::byte>, 1> parts{data.subspan(offset, chunk)};
        const std::size_t start = out.size();
        out.resize(start + tcp::pdu_size(spec::pdu_type::h2c_data, chunk, queue.params()));
        tcp::encode_h2c_data({r2t.cccid, r2t.ttag, offset, offset + chunk == r2t.r2to + r2t.r2tl}, parts,
                             queue.params(), std::span{out}.subspan(start));
        offset += chunk;
    }
    return out;
}

/// A Write of `data` at `slba` by R2T (a Transport SGL Data Block) with command identifier `cid`.
std::vector<std::byte> r2t_write_capsule(const tcp_queue& queue, std::uint16_t cid, std::uint64_t slba,
                                         std::span<const std::byte> data)
{
    auto sqe = tcp_host::lba_command(spec::nvm_opcode::write, 1, slba,
                                     static_cast<std::uint32_t>(data.size() / 512));
    prepare(sqe, cid,
            spec::sgl_descriptor::transport_data_block(static_cast<std::uint32_t>(data.size()),
                                                       tcp_queue::transport_subtype));
    std::vector<std::byte> out(tcp::pdu_size(spec::pdu_type::capsule_cmd, 0, queue.params()));
    tcp::encode_capsule_cmd(sqe, {}, queue.params(), out);
    return out;
}

/// The R2Ts `queue` receives before the response of command `cid`, which must succeed.
std::vector<spec::r2t_pdu> r2ts_before_response(tcp_queue& queue, std::uint16_t cid)
{
    std::vector<spec::r2t_pdu> r2ts;
    for (;;) {
        const auto pdu = queue.receive_pdu();
        if (pdu.type() == spec::pdu_type::r2t) {
            r2ts.push_back(pdu.header_as<spec::r2t_pdu>());
            continue;
        }
        EXPECT_EQ(pdu.type(), spec::pdu_type::capsule_resp);
        const auto cqe = pdu.header_as<spec::capsule_resp_pdu>().cqe;
        EXPECT_EQ(cqe.cid, cid);
        EXPECT_TRUE(cqe.status().is_success());
        return r2ts;
    }
}

// ---- SGLs longer than the transfer (SGLS bit 18) ---------------------------------------------------

/// What a command sent with an SGL of its own brought back: its C2HData PDUs and its response.
struct sgl_command_result {
    std::vector<spec::r2t_pdu> r2ts;
    std::vector<std::vector<std::byte>> c2h_data; ///< the data of each C2HData, in order
    spec::completion_queue_entry cqe{};
};

/// Sends `sqe` (command identifier `cid`, PSDT 01b, `sgl`, `capsule_data` in the capsule) on
/// `queue`; answers R2Ts with `r2t_data` and gathers the C2HData until the response.
sgl_command_result execute_with_sgl(tcp_queue& queue, spec::submission_queue_entry sqe, std::uint16_t cid,
                                    const spec::sgl_descriptor& sgl,
                                    std::span<const std::byte> capsule_data = {},
                                    std::span<const std::byte> r2t_data = {})
{
    prepare(sqe, cid, sgl);
    queue.send_capsule(sqe, capsule_data);
    sgl_command_result result;
    for (;;) {
        const auto pdu = queue.receive_pdu(); // digests checked
        switch (pdu.type()) {
        case spec::pdu_type::r2t: {
            const auto r2t = pdu.header_as<spec::r2t_pdu>();
            result.r2ts.push_back(r2t);
            if (std::uint64_t{r2t.r2to} + r2t.r2tl > r2t_data.size()) {
                ADD_FAILURE() << "R2T beyond the data";
                return result;
            }
            queue.send_bytes(h2c_data_for(queue, r2t, r2t_data));
            break;
        }
        case spec::pdu_type::c2h_data: {
            const auto header = pdu.header_as<spec::c2h_data_pdu>();
            EXPECT_EQ(header.cccid, cid);
            EXPECT_EQ(header.datal, pdu.data().size());
            result.c2h_data.emplace_back(pdu.data().begin(), pdu.data().end());
            break;
        }
        case spec::pdu_type::capsule_resp:
            result.cqe = pdu.header_as<spec::capsule_resp_pdu>().cqe;
            EXPECT_EQ(result.cqe.cid, cid);
            return result;
        default: ADD_FAILURE() << "unexpected " << spec::name(pdu.type()); return result;
        }
    }
}

/// A Transport SGL Data Block of `bytes` (R2T or C2HData).
spec::sgl_descriptor transport_sgl(std::uint32_t bytes)
{
    return spec::sgl_descriptor::transport_data_block(bytes, tcp_queue::transport_subtype);
}
/// A Data Block with Offset of `bytes` in the capsule.
spec::sgl_descriptor capsule_sgl(std::uint32_t bytes)
{
    return spec::sgl_descriptor::data_block(0, bytes, spec::sgl_descriptor_subtype::offset);
}

TEST(tcp_target, a_write_or_compare_with_an_sgl_longer_than_its_blocks_uses_the_first_bytes)
{
    served_target served;
    auto host = served.host();
    bring_up(host);
    auto& queue = host.io(1);
    const auto zeroes = std::vector<std::byte>(512);
    const auto one_block = tcp_host::lba_command(spec::nvm_opcode::write, 1, 5, 1);

    // In the capsule: 4096 bytes for one 512-byte block.
    const auto in_capsule = pattern(4096, 40);
    auto result = execute_with_sgl(queue, one_block, 70, capsule_sgl(4096), in_capsule);
    EXPECT_TRUE(result.cqe.status().is_success());
    std::vector<std::byte> back;
    ASSERT_TRUE(host.read(1, 5, 2, back).ok());
    EXPECT_TRUE(std::equal(back.begin(), back.begin() + 512, in_capsule.begin()));
    EXPECT_TRUE(std::equal(back.begin() + 512, back.end(), zeroes.begin())); // the next block untouched

    // By R2T: the whole SGL is asked for, the first block written.
    const auto by_r2t = pattern(4096, 41);
    result = execute_with_sgl(queue, one_block, 71, transport_sgl(4096), {}, by_r2t);
    EXPECT_TRUE(result.cqe.status().is_success());
    ASSERT_EQ(result.r2ts.size(), 1U);
    EXPECT_EQ(result.r2ts[0].r2to, 0U);
    EXPECT_EQ(result.r2ts[0].r2tl, 4096U);
    ASSERT_TRUE(host.read(1, 5, 2, back).ok());
    EXPECT_TRUE(std::equal(back.begin(), back.begin() + 512, by_r2t.begin()));
    EXPECT_TRUE(std::equal(back.begin() + 512, back.end(), zeroes.begin()));

    // Compare reads the first bytes only: what follows them does not matter.
    auto changed = by_r2t;
    changed[600] ^= std::byte{0xff};
    const auto compare = tcp_host::lba_command(spec::nvm_opcode::compare, 1, 5, 1);
    EXPECT_TRUE(execute_with_sgl(queue, compare, 72, capsule_sgl(4096), changed).cqe.status().is_success());
    changed[100] ^= std::byte{0xff};
    EXPECT_EQ(execute_with_sgl(queue, compare, 73, capsule_sgl(4096), changed).cqe.status(),
              spec::status{spec::media_status::compare_failure}.with_dnr());
}

TEST(tcp_target, a_read_with_an_sgl_longer_than_its_data_sends_only_the_data)
{
    for (const bool data_digest : {false, true}) {
        SCOPED_TRACE(data_digest ? "data digest" : "no data digest");
        served_target served;
        auto host = served.host({.data_digest = data_digest});
        bring_up(host);
        auto& queue = host.io(1);
        const auto eight_blocks = pattern(4096, 42);
        const auto block = pattern(512, 43);
        ASSERT_TRUE(host.write(1, 0, eight_blocks).ok());
        ASSERT_TRUE(host.write(1, 20, block).ok());

        // A read of 4096 bytes first: the buffer the next read reuses holds them.
        auto result = execute_with_sgl(queue, tcp_host::lba_command(spec::nvm_opcode::read, 1, 0, 8), 80,
                                       transport_sgl(4096));
        EXPECT_TRUE(result.cqe.status().is_success());
        ASSERT_EQ(result.c2h_data.size(), 1U);
        EXPECT_EQ(result.c2h_data[0], eight_blocks);

        // One block with an SGL of 4096 bytes: one C2HData of its 512 bytes, nothing of the rest.
        result = execute_with_sgl(queue, tcp_host::lba_command(spec::nvm_opcode::read, 1, 20, 1), 81,
                                  transport_sgl(4096));
        EXPECT_TRUE(result.cqe.status().is_success());
        ASSERT_EQ(result.c2h_data.size(), 1U);
        EXPECT_EQ(result.c2h_data[0], block);

        // An admin command as well: a 512-byte log page with an SGL of 8192 bytes.
        result = execute_with_sgl(host.admin(),
                                  tcp_host::get_log_page_command(spec::log_page_id::smart_health, 512), 82,
                                  transport_sgl(8192));
        EXPECT_TRUE(result.cqe.status().is_success());
        ASSERT_EQ(result.c2h_data.size(), 1U);
        EXPECT_EQ(result.c2h_data[0].size(), 512U);
        check_io(host);
    }
}

TEST(tcp_target, an_sgl_shorter_than_the_transfer_is_still_data_sgl_length_invalid)
{
    served_target served;
    auto host = served.host();
    bring_up(host);
    auto& queue = host.io(1);
    const auto length_invalid = spec::status{spec::generic_status::data_sgl_length_invalid}.with_dnr();
    auto result = execute_with_sgl(queue, tcp_host::lba_command(spec::nvm_opcode::read, 1, 0, 2), 90,
                                   transport_sgl(512));
    EXPECT_EQ(result.cqe.status(), length_invalid);
    EXPECT_TRUE(result.c2h_data.empty());
    const auto data = pattern(512, 44);
    result = execute_with_sgl(queue, tcp_host::lba_command(spec::nvm_opcode::write, 1, 0, 2), 91,
                              capsule_sgl(512), data);
    EXPECT_EQ(result.cqe.status(), length_invalid);
    result = execute_with_sgl(queue, tcp_host::lba_command(spec::nvm_opcode::write, 1, 0, 2), 92,
                              transport_sgl(512), {}, data);
    EXPECT_EQ(result.cqe.status(), length_invalid);
    check_io(host);
}

TEST(tcp_target, the_discovery_controller_answers_an_sgl_longer_than_its_data_with_the_data_only)
{
    served_target served;
    auto host = discovery_host(served, tcp_host_options{}.host_nqn);
    auto& admin = host.admin();
    const auto identify_controller = tcp_host::identify_command(spec::cns::identify_controller, 0, 0);
    auto result = execute_with_sgl(admin, identify_controller, 30, transport_sgl(8192));
    EXPECT_TRUE(result.cqe.status().is_success());
    ASSERT_EQ(result.c2h_data.size(), 1U);
    ASSERT_EQ(result.c2h_data[0].size(), sizeof(spec::identify_controller));
    spec::identify_controller identify{};
    std::memcpy(&identify, result.c2h_data[0].data(), sizeof(identify));
    EXPECT_EQ(identify.cntrltype, spec::controller_type::discovery);
    EXPECT_TRUE(identify.sgls.get(spec::sgl_support::length_larger_than_data));

    // The log's first 1024 bytes with an SGL of 4096 (after the Identify filled the buffer).
    const auto header = read_log(host, 0, 1024);
    result = execute_with_sgl(
        admin, tcp_host::get_log_page_command(spec::log_page_id{spec::discovery_log_page_id}, 1024), 31,
        transport_sgl(4096));
    EXPECT_TRUE(result.cqe.status().is_success());
    ASSERT_EQ(result.c2h_data.size(), 1U);
    EXPECT_EQ(result.c2h_data[0], header);

    // Shorter than the data: Data SGL Length Invalid, no data.
    const auto length_invalid = spec::status{spec::generic_status::data_sgl_length_invalid}.with_dnr();
    result = execute_with_sgl(admin, identify_controller, 32, transport_sgl(2048));
    EXPECT_EQ(result.cqe.status(), length_invalid);
    EXPECT_TRUE(result.c2h_data.empty());
    result = execute_with_sgl(
        admin, tcp_host::get_log_page_command(spec::log_page_id{spec::discovery_log_page_id}, 1024), 33,
        transport_sgl(1020));
    EXPECT_EQ(result.cqe.status(), length_invalid);
    EXPECT_TRUE(result.c2h_data.empty());
}

TEST(tcp_target, a_host_maxr2t_bounds_the_r2ts_outstanding_per_command)
{
    served_target served{[](tcp::target_options& options) { options.limits.max_outstanding_r2t = 4; }};
    auto host = served.host({.maxr2t = 1}); // two R2Ts outstanding per command
    bring_up(host);
    auto& queue = host.io(1);
    const auto data = pattern(128 * 1024, 22);
    // The Write, then a Flush whose response comes after every R2T the Write's capsule made.
    auto burst = r2t_write_capsule(queue, 40, 0, data);
    const auto flush = flush_capsule(queue, 41);
    burst.insert(burst.end(), flush.begin(), flush.end());
    queue.send_bytes(burst);
    auto r2ts = r2ts_before_response(queue, 41);
    ASSERT_EQ(r2ts.size(), 2U);
    EXPECT_EQ(r2ts[0].r2to, 0U);
    EXPECT_EQ(r2ts[1].r2to, test_maxh2cdata);
    EXPECT_NE(r2ts[0].ttag, r2ts[1].ttag);
    // Each R2T answered in full makes room for one more.
    for (std::uint32_t next = 2; next < 4; ++next) {
        queue.send_bytes(h2c_data_for(queue, r2ts[next - 2], data));
        const auto pdu = queue.receive_pdu();
        ASSERT_EQ(pdu.type(), spec::pdu_type::r2t);
        r2ts.push_back(pdu.header_as<spec::r2t_pdu>());
        EXPECT_EQ(r2ts.back().r2to, next * test_maxh2cdata);
        EXPECT_EQ(r2ts.back().r2tl, test_maxh2cdata);
    }
    queue.send_bytes(h2c_data_for(queue, r2ts[2], data));
    queue.send_bytes(h2c_data_for(queue, r2ts[3], data));
    EXPECT_TRUE(r2ts_before_response(queue, 40).empty());
    std::vector<std::byte> back;
    ASSERT_TRUE(host.read(1, 0, 256, back).ok());
    EXPECT_EQ(back, data);
}

/// Writes of 128 KiB by R2T (CIDs 100 on, at LBAs 256 apart from `first_lba`) sent at once on
/// `queue`, then answered as a host does.
class pipelined_writes {
public:
    explicit pipelined_writes(tcp_queue& queue, std::uint64_t first_lba = 0)
        : queue_{queue}, first_lba_{first_lba}
    {}

    /// Sends `count` Writes, then a Flush; returns once the Flush's response has come, with the
    /// R2Ts the target sent before it (those its capsules made at once).
    const std::vector<spec::r2t_pdu>& send(std::uint16_t count)
    {
        std::vector<std::byte> burst;
        for (std::uint16_t i = 0; i < count; ++i) {
            data_.push_back(pattern(128 * 1024, 30U + i + static_cast<unsigned>(first_lba_)));
            const auto capsule = r2t_write_capsule(queue_, static_cast<std::uint16_t>(100 + i),
                                                   first_lba_ + std::uint64_t{i} * 256, data_.back());
            burst.insert(burst.end(), capsule.begin(), capsule.end());
        }
        const auto flush = flush_capsule(queue_, 99);
        burst.insert(burst.end(), flush.begin(), flush.end());
        queue_.send_bytes(burst);
        r2ts_ = r2ts_before_response(queue_, 99);
        return r2ts_;
    }

    /// Answers the R2Ts until every Write has succeeded; returns the CIDs in the order of their
    /// first R2T.
    std::vector<std::uint16_t> complete()
    {
        std::vector<std::uint16_t> order;
        std::size_t answered = 0;
        for (std::size_t completed = 0; completed < data_.size();) {
            while (answered < r2ts_.size()) {
                const auto& r2t = r2ts_[answered++];
                if (r2t.r2to == 0) {
                    order.push_back(r2t.cccid);
                }
                queue_.send_bytes(h2c_data_for(queue_, r2t, data_.at(r2t.cccid - 100U)));
            }
            const auto pdu = queue_.receive_pdu();
            if (pdu.type() == spec::pdu_type::r2t) {
                r2ts_.push_back(pdu.header_as<spec::r2t_pdu>());
                continue;
            }
            EXPECT_EQ(pdu.type(), spec::pdu_type::capsule_resp);
            EXPECT_TRUE(pdu.header_as<spec::capsule_resp_pdu>().cqe.status().is_success());
            ++completed;
        }
        return order;
    }

    /// Each Write's data reads back through I/O queue 1 of `host`.
    void expect_read_back(tcp_host& host) const
    {
        for (std::size_t i = 0; i < data_.size(); ++i) {
            std::vector<std::byte> back;
            ASSERT_TRUE(host.read(1, first_lba_ + i * 256, 256, back).ok());
            EXPECT_EQ(back, data_[i]);
        }
    }

private:
    tcp_queue& queue_;
    std::uint64_t first_lba_;
    std::vector<std::vector<std::byte>> data_;
    std::vector<spec::r2t_pdu> r2ts_;
};

TEST(tcp_target, commands_whose_buffers_exceed_the_association_budget_wait_in_order)
{
    constexpr std::size_t budget = 256 * 1024; // two writes of 128 KiB
    served_target served{[](tcp::target_options& options) { options.max_association_buffer_bytes = budget; }};
    auto host = served.host();
    bring_up(host);
    pipelined_writes writes{host.io(1)};
    // Two had their buffers and asked for their data; six wait, holding no storage.
    EXPECT_EQ(writes.send(8).size(), 2U);
    const auto statistics = served.target().statistics();
    EXPECT_EQ(statistics.buffer_waits, 6U);
    EXPECT_EQ(statistics.buffer_bytes, budget);
    EXPECT_EQ(writes.complete(), (std::vector<std::uint16_t>{100, 101, 102, 103, 104, 105, 106, 107}));
    EXPECT_LE(served.target().statistics().buffer_bytes_peak, budget);
    writes.expect_read_back(host);
}

TEST(tcp_target, commands_whose_buffers_exceed_the_target_budget_wait_for_other_hosts_buffers)
{
    constexpr std::size_t budget = 256 * 1024;
    served_target served{[](tcp::target_options& options) { options.max_buffer_bytes = budget; }};
    auto first = served.host();
    auto second = served.host();
    bring_up(first);
    bring_up(second);
    // The first host's two writes take the whole budget; the second's wait (no R2T) until the
    // first host's commands are done and their storage is given back.
    pipelined_writes first_writes{first.io(1)};
    pipelined_writes second_writes{second.io(1), 1024};
    EXPECT_EQ(first_writes.send(2).size(), 2U);
    EXPECT_TRUE(second_writes.send(3).empty());
    EXPECT_EQ(served.target().statistics().buffer_waits, 3U);
    EXPECT_EQ(first_writes.complete(), (std::vector<std::uint16_t>{100, 101}));
    EXPECT_EQ(second_writes.complete(), (std::vector<std::uint16_t>{100, 101, 102}));
    EXPECT_LE(served.target().statistics().buffer_bytes_peak, budget);
    first_writes.expect_read_back(first);
    second_writes.expect_read_back(second);
}

TEST(tcp_target, the_buffer_storage_of_a_closed_queue_is_given_back)
{
    served_target served;
    auto host = served.host();
    bring_up(host);
    {
        tcp_host_options options;
        options.io_in_capsule_data = 8192;
        auto queue = initialized_queue(served, options);
        ASSERT_TRUE(queue->connect(2, 32, host.cntlid()).ok());
        pipelined_writes writes{*queue};
        static_cast<void>(writes.send(8));
        static_cast<void>(writes.complete());
        // The storage is kept for the queue's next commands ...
        EXPECT_EQ(served.target().statistics().buffer_bytes, 8U * 128U * 1024U);
    }
    // ... and given back when its connection closes.
    EXPECT_TRUE(eventually([&] { return served.target().statistics().buffer_bytes == 0; }));
    check_io(host);
}

/// Run in a child process: a target whose process has no descriptor left for the connections
/// waiting to be accepted. 0 when it waits instead of spinning and accepts them once it has
/// descriptors again and its pause is over; another number names the check that failed.
int accepting_without_descriptors()
{
    using paused_target = tcp::target<manual_time_traits>;
    paused_target::subsystem_type subsystem;
    tcp::target_options options;
    options.port = 0;
    options.descriptor_reserve = 0; // accept(2) itself runs out of descriptors here
    paused_target target{subsystem, options};
    constexpr std::uint64_t hosts = 8;
    std::vector<tcp::unique_fd> clients;
    for (std::uint64_t i = 0; i < hosts; ++i) {
        clients.push_back(tcp::connect_to("127.0.0.1", target.port(), [](int) {}));
    }
    // The lowest free descriptor is the last the process may open.
    rlimit original{};
    if (::getrlimit(RLIMIT_NOFILE, &original) != 0) {
        return 10;
    }
    const int lowest = ::open("/dev/null", O_RDONLY | O_CLOEXEC); // the lowest free descriptor
    if (lowest < 0) {
        return 11;
    }
    ::close(lowest);
    const rlimit lowered{static_cast<rlim_t>(lowest) + 1, original.rlim_max};
    if (::setrlimit(RLIMIT_NOFILE, &lowered) != 0) {
        return 12;
    }
    // The listener stays readable while accept fails with EMFILE: each round must still wait
    // out its timeout, not return at once (a lower bound on the time, which load only helps).
    constexpr int rounds = 6;
    constexpr std::chrono::milliseconds wait{50};
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < rounds; ++i) {
        target.poll(wait);
    }
    const auto elapsed = std::chrono::steady_clock::now() - start;
    if (target.statistics().connections_accepted != 1) {
        return 2;
    }
    if (elapsed < (rounds - 1) * wait) {
        return 3;
    }
    if (target.statistics().accept_pauses != 1) { // the clock has not moved: one pause, not over
        return 5;
    }
    // Descriptors again: the others are accepted once the pause (Traits::clock time) is over.
    if (::setrlimit(RLIMIT_NOFILE, &original) != 0) {
        return 13;
    }
    manual_time().advance(std::chrono::seconds{1});
    for (int i = 0; i < 1000 && target.statistics().connections_accepted < hosts; ++i) {
        target.poll(std::chrono::milliseconds{10});
    }
    return target.statistics().connections_accepted == hosts ? 0 : 4;
}

TEST(tcp_target, accepting_pauses_while_no_descriptor_is_left)
{
    EXPECT_EXIT(std::_Exit(accepting_without_descriptors()), ::testing::ExitedWithCode(0), "");
}

} // namespace transport_tcp_target_test
} // namespace
