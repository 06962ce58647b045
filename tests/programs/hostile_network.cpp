// nvmekit-hostile-network: the hostile-network test of nvmekit-serve (ctest examples.hostile_network).
//
//     nvmekit-hostile-network PATH-TO-nvmekit-serve [-- SERVE-OPTION...]
//
// It starts the real server with a RAM namespace over NVMe/TCP on 127.0.0.1 and over vfio-user,
// with its JSON-RPC management socket, under a descriptor limit of its own (RLIMIT_NOFILE, as
// `prlimit --nofile` sets it). Two well-behaved clients do verified I/O (a pattern written, read
// back and compared) all along: an NVMe/TCP host (testing::tcp_host) and a VM-like vfio-user
// client (testing::vfio_user_client under the in-process host driver, its guest memory a memfd).
// Meanwhile hostile clients:
//
//   - JSON-RPC: garbage, a number beyond a double (1e400), nesting far deeper than the decoder's
//     limit, each answered with Parse Error and closed; then more half-written requests held open
//     than the server takes clients (64);
//   - NVMe/TCP: connections that send malformed PDUs (bad HLEN and PLEN, unknown PDU types, a
//     second ICReq, header and data digest errors, H2CData naming no R2T, garbage), each of which
//     must be terminated (C2HTermReq or a close) or, for a data digest error, fail its command;
//   - hundreds of discovery associations (Connect to the discovery NQN with KATO 0) from made-up
//     host NQNs, all from one address, left open: the bound on associations per address must
//     leave room for another host's;
//   - hundreds of TCP connections opened and left idle, more than the server's descriptors allow:
//     its descriptor reserve must keep management and new hosts answered meanwhile.
//
// Then, with every hostile connection still open and no I/O, the server's CPU time is measured
// over an idle period; then the hostile clients go, and the well-behaved clients (their old
// sessions and new ones), a new discovery association and a JSON-RPC call must work; the server
// must exit 0 on SIGTERM. Checks that fail are named on stderr with the server's log, and the
// program exits 1; a summary of the figures is printed either way.

#include "hostile_network.hpp"
#include "command_line.hpp"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <sys/resource.h>
#include <sys/wait.h>

#include <fmt/format.h>

#include <nvmekit/spec/fabrics.hpp>
#include <nvmekit/spec/tcp.hpp>
#include <nvmekit/transport/tcp/connection_params.hpp>
#include <nvmekit/transport/tcp/pdu_encode.hpp>

namespace {

using namespace nvmekit_hostile;

const nvmekit_programs::program program_info{
    "nvmekit-hostile-network",
    "nvmekit-hostile-network PATH-TO-nvmekit-serve [-- SERVE-OPTION...]\n"
    "Starts nvmekit-serve (NVMe/TCP on 127.0.0.1, vfio-user, JSON-RPC; the options after -- added)\n"
    "under a low descriptor limit, attacks it with hostile clients while two well-behaved clients\n"
    "do verified I/O, and checks that the I/O never fails, that resources stay bounded and that\n"
    "everything works afterwards.\n"};

// ---- what the test does, in numbers --------------------------------------------------------------

/// The server's descriptor limit (soft and hard): above what the server holds for the
/// associations and the JSON-RPC clients together (about 300), below that plus the idle flood.
constexpr rlim_t server_descriptor_limit = 384;
/// The descriptors NVMe/TCP connections leave to the rest of the server
/// (tcp::target_options::descriptor_reserve): they hold at most the limit less this many.
constexpr std::size_t server_descriptor_reserve = 128;
constexpr std::size_t idle_connections = 300;
/// The loopback addresses the idle flood comes from (127.0.0.2 onwards), so that a bound on
/// connections per host address does not stop it short of the descriptor limit.
constexpr std::uint32_t idle_sources = 10;
constexpr std::size_t discovery_associations = 200;
/// Associations from one host address (tcp::target_options::max_associations_per_address).
constexpr std::size_t associations_per_address = 64;
/// The loopback address (127.0.0.100) of the hosts that probe during the attack: another host
/// than the discovery flood's (127.0.0.1) and the idle flood's (127.0.0.2 onwards).
constexpr std::uint32_t probe_source = 100;
/// More than the management socket's client limit (rpc::server_options::max_clients, 64).
constexpr std::size_t half_written_request_count = 80;
constexpr std::size_t rpc_max_clients = 64;
constexpr std::size_t malformed_rounds = 3;
/// How long everything stays open, with verified I/O going on, once the flood is in place.
constexpr auto attack_hold = 3s;
/// The idle period over which the server's CPU time is measured.
constexpr auto idle_period = 2s;
/// Verified operations (write, read back, compare) each well-behaved client must complete during
/// the attack: a floor far below what a loaded machine does (hundreds a second in the ASan
/// build, thousands in Release), so that only a stalled client falls under it.
constexpr std::uint64_t min_verified_operations = 50;
/// RSS growth allowed during the attack over the RSS before it. Each discovery association is a
/// controller with its admin buffers and request pools, about 1.4 MiB: with 200 of them the
/// server grew by 286 MiB in Release and 329 MiB under ASan + UBSan at -O0 (README.md,
/// "Reliability"); a bound on associations per listener lowers both.
constexpr std::uint64_t rss_growth_bound = std::uint64_t{512} << 20;
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool sanitized_build = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool sanitized_build = true;
#else
constexpr bool sanitized_build = false;
#endif
#else
constexpr bool sanitized_build = false;
#endif
/// The server's CPU time over the idle period, as a share of it: idle connections must not make
/// the server spin (an idle connected host once cost about 100,000 loop rounds a second), which
/// costs a whole core. While a vfio-user client is connected the loop still wakes every
/// millisecond and looks at every connection and controller: with the attackers' connections
/// open, measured 7.5-11% in Release and about 36% in the ASan build at -O0 (each round there
/// several times costlier), whose bound is higher. The server is taken to be built as this
/// program is (they come from one build tree).
constexpr double idle_cpu_bound = sanitized_build ? 0.75 : 0.5;

/// Bounds on waits: a broken server fails a check instead of hanging the test; never a budget
/// that a loaded machine could exceed.
constexpr auto startup_patience = 60s;
constexpr auto answer_patience = 10s;
constexpr auto handshake_patience = 3s;

const std::string subsystem_nqn = "nqn.2026-11.io.nvmekit:hostile-network";
const std::string good_host_nqn = "nqn.2014-08.org.nvmexpress:uuid:6e766d65-6b69-7400-0000-00000000600d";

// ---- checks and figures --------------------------------------------------------------------------

/// Counts the checks that failed; each is printed as it is made.
class checks {
public:
    bool operator()(bool held, std::string_view what)
    {
        if (held) {
            fmt::print("  ok: {}\n", what);
        } else {
            fmt::print(stderr, "  FAILED: {}\n", what);
            ++failed_;
        }
        std::fflush(stdout);
        return held;
    }
    [[nodiscard]] int failed() const noexcept { return failed_; }

private:
    int failed_ = 0;
};

void step(std::string_view what)
{
    fmt::print("== {}\n", what);
    std::fflush(stdout);
}

constexpr double mib(std::uint64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }

/// One way of breaking the NVMe/TCP protocol: what a connection sends first (each answered
/// with one PDU), then what it must not send.
struct malformed_case {
    std::string name;
    std::vector<std::vector<std::byte>> prelude;
    std::vector<std::byte> hostile;
    /// A failed response (not a termination) is the right answer: a data digest error fails
    /// its command, the connection lives on.
    bool failed_response_expected = false;
};

std::vector<malformed_case> malformed_cases()
{
    std::vector<malformed_case> cases;
    const auto discovery = std::string{spec::discovery_nqn};
    const std::string made_up_host = "nqn.2026-11.io.nvmekit.hostile:malformed";
    {
        auto icreq = icreq_pdu();
        icreq[2] = std::byte{64}; // HLEN 64, not 128
        cases.push_back({"ICReq with HLEN 64", {}, icreq});
    }
    {
        auto icreq = icreq_pdu();
        const std::uint32_t plen = 100; // PLEN below HLEN
        std::memcpy(icreq.data() + 4, &plen, sizeof plen);
        cases.push_back({"ICReq with PLEN below HLEN", {}, icreq});
    }
    {
        auto icreq = icreq_pdu();
        icreq[8] = std::byte{1}; // PFV 1
        cases.push_back({"ICReq of PDU format version 1", {}, icreq});
    }
    cases.push_back({"CapsuleCmd before ICReq", {}, connect_pdu(discovery, made_up_host, 0)});
    cases.push_back({"CapsuleCmd with HLEN 16", {icreq_pdu()}, raw_pdu(0x04, 16, 72, 64)});
    cases.push_back({"CapsuleCmd with PLEN below HLEN", {icreq_pdu()}, raw_pdu(0x04, 72, 40, 64)});
    cases.push_back({"CapsuleCmd with PLEN of 4 GiB - 1", {icreq_pdu()}, raw_pdu(0x04, 72, 0xffffffffU, 64)});
    cases.push_back({"unknown PDU type 7Fh", {icreq_pdu()}, raw_pdu(0x7f, 8, 8, 0)});
    cases.push_back({"reserved PDU type 08h", {icreq_pdu()}, raw_pdu(0x08, 24, 24, 16)});
    cases.push_back({"a second ICReq", {icreq_pdu()}, icreq_pdu()});
    cases.push_back({"a controller-to-host PDU (CapsuleResp)", {icreq_pdu()}, raw_pdu(0x05, 24, 24, 16)});
    {
        tcp::connection_params digests{};
        digests.header_digest = true;
        auto capsule = connect_pdu(discovery, made_up_host, 0, digests);
        capsule[sizeof(spec::capsule_cmd_pdu)] ^= std::byte{0x5a}; // the header digest
        cases.push_back({"header digest error", {icreq_pdu(true, false)}, capsule});
    }
    {
        tcp::connection_params digests{};
        digests.data_digest = true;
        auto capsule = connect_pdu(discovery, made_up_host, 0, digests);
        capsule.back() ^= std::byte{0x5a}; // the data digest
        cases.push_back({"data digest error", {icreq_pdu(false, true)}, capsule, true});
    }
    {
        const std::array<std::byte, 512> data{};
        const std::array<std::span<const std::byte>, 1> parts{data};
        const tcp::connection_params params{};
        std::vector<std::byte> h2c(tcp::pdu_size(spec::pdu_type::h2c_data, data.size(), params));
        tcp::encode_h2c_data({.cccid = 1, .ttag = 7, .datao = 0, .last = true}, parts, params, h2c);
        cases.push_back({"H2CData naming no R2T", {icreq_pdu()}, h2c});
        cases.push_back({"H2CData naming no R2T, after Connect",
                         {icreq_pdu(), connect_pdu(discovery, made_up_host, 0)},
                         h2c});
    }
    {
        std::vector<std::byte> garbage(4096);
        std::uint32_t x = 0x12345678;
        for (auto& b : garbage) {
            x = x * 1664525U + 1013904223U;
            b = static_cast<std::byte>(x >> 24);
        }
        cases.push_back({"4 KiB of garbage", {}, garbage});
        cases.push_back({"4 KiB of garbage after ICReq", {icreq_pdu()}, garbage});
    }
    return cases;
}

/// What the malformed connections got.
struct malformed_figures {
    std::size_t tried = 0;
    std::size_t terminated = 0;      ///< C2HTermReq
    std::size_t closed = 0;          ///< closed without one
    std::size_t failed_commands = 0; ///< a failed response, the connection kept
    std::vector<std::string> wrong;  ///< cases answered otherwise (or not at all)
};

void send_malformed(std::uint16_t port, malformed_figures& figures)
{
    const auto cases = malformed_cases();
    auto opened = open_tcp_connections(port, cases.size(), clock_type::now() + handshake_patience);
    figures.tried += cases.size();
    if (opened.connected.size() != cases.size()) {
        figures.wrong.push_back(
            fmt::format("{} of {} connections opened", opened.connected.size(), cases.size()));
        return;
    }
    auto& connections = opened.connected;
    std::vector<bool> broken(cases.size(), false);
    for (std::size_t stage = 0;; ++stage) {
        std::vector<std::size_t> sent;
        std::vector<int> descriptors;
        for (std::size_t i = 0; i < cases.size(); ++i) {
            if (broken[i] || stage > cases[i].prelude.size()) {
                continue;
            }
            const auto& bytes = stage < cases[i].prelude.size() ? cases[i].prelude[stage] : cases[i].hostile;
            // A peer that closes while bytes are still going out is an answer too (below).
            static_cast<void>(send_all(connections[i].get(), bytes, clock_type::now() + answer_patience));
            sent.push_back(i);
            descriptors.push_back(connections[i].get());
        }
        if (sent.empty()) {
            break;
        }
        const auto answers = receive_pdus(descriptors, clock_type::now() + answer_patience);
        for (std::size_t k = 0; k < sent.size(); ++k) {
            const std::size_t i = sent[k];
            const auto& answer = answers[k];
            const bool hostile_stage = stage == cases[i].prelude.size();
            if (!hostile_stage) {
                if (answer.what != tcp_answer::kind::pdu || answer.type() == spec::pdu_type::c2h_term_req) {
                    figures.wrong.push_back(cases[i].name + ": the well-formed PDU before it was refused");
                    broken[i] = true;
                }
                continue;
            }
            if (answer.what == tcp_answer::kind::closed) {
                ++figures.closed;
            } else if (answer.what == tcp_answer::kind::pdu &&
                       answer.type() == spec::pdu_type::c2h_term_req) {
                ++figures.terminated;
            } else if (cases[i].failed_response_expected && answer.what == tcp_answer::kind::pdu &&
                       answer.type() == spec::pdu_type::capsule_resp && !successful_response(answer)) {
                ++figures.failed_commands;
            } else {
                figures.wrong.push_back(cases[i].name + ": " +
                                        (answer.what == tcp_answer::kind::silent
                                             ? std::string{"no answer"}
                                             : fmt::format("answered with PDU type {:02x}h",
                                                           static_cast<unsigned>(answer.type()))));
            }
        }
    }
}

/// What the discovery associations got.
struct association_figures {
    std::size_t tried = 0;
    std::size_t connected = 0; ///< TCP handshakes completed
    std::size_t accepted = 0;  ///< Connect succeeded
    std::size_t refused = 0;   ///< Connect failed, a termination or a close
    std::size_t silent = 0;    ///< no answer to ICReq or Connect: not accepted for want of descriptors
};

/// `count` discovery associations with KATO 0 from made-up host NQNs, all at once, from
/// 127.0.0.`source` (0: 127.0.0.1), each answer awaited for `patience`; the connections stay open
/// (returned) until the caller drops them.
std::vector<unique_fd> open_discovery_associations(std::uint16_t port, std::size_t count,
                                                   std::string_view host_prefix, association_figures& figures,
                                                   std::chrono::milliseconds patience = answer_patience,
                                                   std::uint32_t source = 0)
{
    figures.tried += count;
    auto opened = open_tcp_connections(port, count, clock_type::now() + handshake_patience,
                                       source == 0 ? 0 : 1, source);
    figures.refused += opened.refused;
    figures.silent += opened.no_handshake;
    figures.connected += opened.connected.size();
    auto& connections = opened.connected;
    const auto icreq = icreq_pdu();
    std::vector<int> descriptors;
    for (const auto& c : connections) {
        static_cast<void>(send_all(c.get(), icreq, clock_type::now() + patience));
        descriptors.push_back(c.get());
    }
    const auto icresps = receive_pdus(descriptors, clock_type::now() + patience);
    descriptors.clear();
    for (std::size_t i = 0; i < connections.size(); ++i) {
        if (icresps[i].what == tcp_answer::kind::pdu && icresps[i].type() == spec::pdu_type::icresp) {
            const auto capsule =
                connect_pdu(std::string{spec::discovery_nqn}, fmt::format("{}{:04}", host_prefix, i), 0);
            static_cast<void>(send_all(connections[i].get(), capsule, clock_type::now() + patience));
            descriptors.push_back(connections[i].get());
        } else if (icresps[i].what == tcp_answer::kind::silent) {
            ++figures.silent;
        } else {
            ++figures.refused;
        }
    }
    for (const auto& response : receive_pdus(descriptors, clock_type::now() + patience)) {
        if (successful_response(response)) {
            ++figures.accepted;
        } else if (response.what == tcp_answer::kind::silent) {
            ++figures.silent;
        } else {
            ++figures.refused;
        }
    }
    return std::move(connections);
}

/// One discovery association from a host NQN of its own (`host_prefix` names it), from
/// 127.0.0.`source` (0: 127.0.0.1), closed again.
association_figures probe_association(std::uint16_t port, std::string_view host_prefix,
                                      std::chrono::milliseconds patience, std::uint32_t source = 0)
{
    association_figures figures;
    // The connection closes as the returned vector goes.
    open_discovery_associations(port, 1, fmt::format("nqn.2026-11.io.nvmekit.hostile:{}", host_prefix),
                                figures, patience, source);
    return figures;
}

/// What a probing association got, for the summary.
std::string describe(const association_figures& probe)
{
    return probe.accepted == 1 ? "was accepted" : probe.silent == 1 ? "was not answered" : "was refused";
}

const std::string subsystems_request = R"({"jsonrpc":"2.0","id":1,"method":"nvmf_get_subsystems"})";

// ---- the test --------------------------------------------------------------------------------------

/// Waits until the server answers on the management socket, takes TCP connections and has made
/// its vfio-user socket; false when it exits or `patience` runs out first.
bool wait_until_ready(server_process& server, const std::string& rpc_socket,
                      const std::string& vfio_user_socket, std::uint16_t port,
                      std::chrono::milliseconds patience)
{
    const auto deadline = clock_type::now() + patience;
    while (clock_type::now() < deadline && server.running()) {
        const auto answer = rpc_exchange(rpc_socket, subsystems_request, 2s);
        if (lists_subsystem(answer.line, subsystem_nqn) && std::filesystem::exists(vfio_user_socket)) {
            auto opened = open_tcp_connections(port, 1, clock_type::now() + 2s);
            if (opened.connected.size() == 1) {
                return true;
            }
        }
        std::this_thread::sleep_for(100ms);
    }
    return false;
}

struct figures {
    std::uint64_t rss_before = 0;
    std::uint64_t rss_peak = 0;
    std::uint64_t rss_after = 0;
    std::size_t descriptors_before = 0;
    std::size_t descriptors_peak = 0;
    std::size_t descriptors_after = 0;
    double attack_seconds = 0;
    double cpu_attack = 0;
    double cpu_idle = 0;
    double cpu_quiet = 0; ///< over the idle period before the attack
    double idle_seconds = 0;
    std::uint64_t tcp_operations = 0;
    std::uint64_t vfio_user_operations = 0;
    std::size_t rpc_malformed_tried = 0;
    std::size_t rpc_malformed_answered = 0;
    std::size_t holders_tried = 0;
    std::size_t holders_connected = 0;
    std::size_t holders_closed = 0;
    std::string rpc_during_hold;
    std::string rpc_during_flood;
    std::string association_beside_flood;
    std::string association_during_flood;
    malformed_figures malformed;
    association_figures associations;
    std::size_t idle_tried = 0;
    std::size_t idle_connected = 0;
    std::size_t idle_refused = 0;
    std::size_t idle_no_handshake = 0;
    std::size_t idle_closed_during_flood = 0; ///< to make room for newer ones (before icreq_timeout)
    std::size_t idle_closed_by_server = 0;
};

void print_summary(const figures& f)
{
    fmt::print("\n==== hostile-network summary (descriptor limit {}) ====\n", server_descriptor_limit);
    fmt::print("verified I/O during the attack ({:.1f} s): NVMe/TCP {} operations, vfio-user {} operations "
               "(write, read back, compare; floor {})\n",
               f.attack_seconds, f.tcp_operations, f.vfio_user_operations, min_verified_operations);
    fmt::print("JSON-RPC malformed requests: {} sent, {} answered with Parse Error and closed\n",
               f.rpc_malformed_tried, f.rpc_malformed_answered);
    fmt::print("JSON-RPC half-written requests: {} tried, {} connected, {} closed by the server at once "
               "(client limit {}); a new call meanwhile: {}\n",
               f.holders_tried, f.holders_connected, f.holders_closed, rpc_max_clients, f.rpc_during_hold);
    fmt::print("malformed NVMe/TCP connections: {} tried, {} terminated by C2HTermReq, {} closed, "
               "{} failed commands (data digest), {} answered otherwise\n",
               f.malformed.tried, f.malformed.terminated, f.malformed.closed, f.malformed.failed_commands,
               f.malformed.wrong.size());
    fmt::print(
        "discovery associations (KATO 0, made-up host NQNs, one address): {} tried, {} TCP handshakes, "
        "{} accepted, {} refused, {} unanswered (bound per address {}); one more from another host "
        "meanwhile {}\n",
        f.associations.tried, f.associations.connected, f.associations.accepted, f.associations.refused,
        f.associations.silent, associations_per_address, f.association_beside_flood);
    fmt::print("idle TCP connections from {} addresses: {} tried, {} handshakes completed, {} refused, "
               "{} without a handshake (SYN dropped: backlog full), {} closed by the server during the "
               "flood to make room for newer ones, {} by the end\n",
               idle_sources, f.idle_tried, f.idle_connected, f.idle_refused, f.idle_no_handshake,
               f.idle_closed_during_flood, f.idle_closed_by_server);
    fmt::print("while the idle connections were open: a JSON-RPC call {}; a new discovery association from "
               "another host {}\n",
               f.rpc_during_flood, f.association_during_flood);
    fmt::print("server descriptors: {} before, {} at most during the attack (limit {}, NVMe/TCP connections "
               "at most {}), {} after\n",
               f.descriptors_before, f.descriptors_peak, server_descriptor_limit,
               server_descriptor_limit - server_descriptor_reserve, f.descriptors_after);
    fmt::print(
        "server RSS: {:.1f} MiB before, {:.1f} MiB peak during the attack (+{:.1f} MiB, bound +{:.0f} MiB), "
        "{:.1f} MiB after\n",
        mib(f.rss_before), mib(f.rss_peak), mib(f.rss_peak > f.rss_before ? f.rss_peak - f.rss_before : 0),
        mib(rss_growth_bound), mib(f.rss_after));
    const auto share = [](double cpu, double seconds) { return 100.0 * cpu / std::max(seconds, 1e-9); };
    const double idle = std::chrono::duration<double>(idle_period).count();
    fmt::print(
        "server CPU: {:.2f} s over the {:.1f} s attack ({:.0f}%); idle with the hostile connections open "
        "{:.3f} s over {:.1f} s ({:.1f}%, bound {:.0f}%), idle before the attack {:.3f} s over {:.1f} s "
        "({:.1f}%)\n",
        f.cpu_attack, f.attack_seconds, share(f.cpu_attack, f.attack_seconds), f.cpu_idle, f.idle_seconds,
        share(f.cpu_idle, f.idle_seconds), 100.0 * idle_cpu_bound, f.cpu_quiet, idle,
        share(f.cpu_quiet, idle));
    std::fflush(stdout);
}

/// A short description of a JSON-RPC answer, for the summary.
std::string describe(const rpc_answer& answer)
{
    if (!answer.connected) {
        return "could not connect";
    }
    if (!answer.line.empty()) {
        return "was answered";
    }
    return answer.closed ? "was closed unanswered" : "was not answered in time";
}

/// The test, one phase after another; each phase adds its figures and checks.
class hostile_network_test {
public:
    hostile_network_test(const std::string& serve_program, const std::vector<std::string>& serve_options)
        : port_{free_tcp_port()}
        , server_{serve_program, server_arguments(serve_options), server_descriptor_limit,
                  work_.path() + "/serve.log"}
    {
        step(fmt::format("started {} (descriptor limit {}, NVMe/TCP on 127.0.0.1:{})", serve_program,
                         server_descriptor_limit, port_));
    }

    /// Runs every phase; the exit status.
    int run()
    {
        if (!check_(wait_until_ready(server_, rpc_socket_, vfio_user_socket_, port_, startup_patience),
                    "the server answers JSON-RPC, takes NVMe/TCP connections and has its vfio-user socket")) {
            return fail_with_log("the server did not start");
        }
        bring_up_clients();
        attack();
        if (server_.running()) {
            idle_with_the_attackers();
            release_the_attackers();
            afterwards();
            terminate();
        } else {
            check_(false, "the server is alive after the attack (" + server_.describe_exit() + ")");
        }
        print_summary(f_);
        if (check_.failed() != 0) {
            return fail_with_log(fmt::format("{} check(s) failed", check_.failed()));
        }
        fmt::print("all checks passed\n");
        return 0;
    }

private:
    std::vector<std::string> server_arguments(const std::vector<std::string>& serve_options) const
    {
        std::vector<std::string> arguments{"--vfio-user", vfio_user_socket_,
                                           "--tcp",       fmt::format("127.0.0.1:{}", port_),
                                           "--ram",       "64M",
                                           "--nqn",       subsystem_nqn,
                                           "-r",          rpc_socket_};
        arguments.insert(arguments.end(), serve_options.begin(), serve_options.end());
        return arguments;
    }

    int fail_with_log(std::string_view why)
    {
        fmt::print(stderr, "{} (server {}); its log ends:\n{}", why, server_.describe_exit(),
                   server_.log_tail(40));
        return 1;
    }

    /// Both well-behaved clients bring their controllers up and do one verified operation; then
    /// the server's resources with them alone, and its CPU time over an idle period.
    void bring_up_clients()
    {
        step("well-behaved clients: an NVMe/TCP host and a vfio-user client bring their controllers up");
        good_tcp_ = std::make_unique<tcp_verifier>(port_, subsystem_nqn, good_host_nqn, 0, answer_patience);
        good_vm_ = std::make_unique<vfio_user_verifier>(vfio_user_socket_, 65536);
        good_tcp_->verify_once();
        good_vm_->verify_once();
        std::this_thread::sleep_for(200ms);
        f_.rss_before = server_.rss_bytes().value_or(0);
        f_.descriptors_before = server_.open_descriptors().value_or(0);
        // The cost of the well-behaved clients alone, for comparison with the idle period under
        // attack: a connected vfio-user client makes the loop wake every millisecond.
        const double start = server_.cpu_seconds().value_or(0);
        std::this_thread::sleep_for(idle_period);
        f_.cpu_quiet = server_.cpu_seconds().value_or(0) - start;
    }

    /// Every hostile client in turn while both well-behaved clients do verified I/O on threads of
    /// their own; the hostile connections stay open.
    void attack()
    {
        step("the attack, while both clients do verified I/O");
        const auto start = clock_type::now();
        const double cpu_start = server_.cpu_seconds().value_or(0);
        sampler_.emplace(server_);
        {
            io_loop tcp_loop{*good_tcp_};
            io_loop vm_loop{*good_vm_};
            malformed_requests();
            half_written_requests();
            malformed_pdus();
            discovery_flood();
            idle_flood();
            std::this_thread::sleep_for(attack_hold);
            tcp_loop.stop();
            vm_loop.stop();
            f_.tcp_operations = tcp_loop.operations();
            f_.vfio_user_operations = vm_loop.operations();
            check_(tcp_loop.failure().empty(),
                   "NVMe/TCP verified I/O never failed during the attack" +
                       (tcp_loop.failure().empty() ? "" : ": " + tcp_loop.failure()));
            check_(vm_loop.failure().empty(),
                   "vfio-user verified I/O never failed during the attack" +
                       (vm_loop.failure().empty() ? "" : ": " + vm_loop.failure()));
        }
        f_.attack_seconds = std::chrono::duration<double>(clock_type::now() - start).count();
        f_.cpu_attack = server_.cpu_seconds().value_or(0) - cpu_start;
        check_(f_.tcp_operations >= min_verified_operations,
               fmt::format("NVMe/TCP: {} verified operations during the attack (at least {})",
                           f_.tcp_operations, min_verified_operations));
        check_(f_.vfio_user_operations >= min_verified_operations,
               fmt::format("vfio-user: {} verified operations during the attack (at least {})",
                           f_.vfio_user_operations, min_verified_operations));
    }

    /// JSON-RPC: malformed requests, each answered with Parse Error (-32700), then closed.
    void malformed_requests()
    {
        const std::string deep = std::string(100'000, '[') + std::string(100'000, ']');
        const std::vector<std::string> malformed = {
            "this is not JSON\n",
            std::string{R"({"jsonrpc":"2.0","id":1,"method":"spdk_get_version","params":{"x":}})"} + "\n",
            std::string{R"({"jsonrpc":"2.0","id":1e400,"method":"spdk_get_version"})"} + "\n",
            std::string{R"({"jsonrpc":"2.0","id":1,"method":"nvmf_get_subsystems","params":[1e400]})"} + "\n",
            deep,
            R"({"a":)" + std::string(5'000, '{'),
        };
        for (int round = 0; round < 5; ++round) {
            for (const auto& request : malformed) {
                ++f_.rpc_malformed_tried;
                const auto answer = rpc_exchange(rpc_socket_, request, answer_patience, true);
                if (rpc_error_code(answer.line) == -32700 && answer.closed) {
                    ++f_.rpc_malformed_answered;
                }
            }
        }
        check_(f_.rpc_malformed_answered == f_.rpc_malformed_tried,
               "every malformed JSON-RPC request (garbage, 1e400, deep nesting) is answered with Parse Error "
               "and closed");
    }

    /// JSON-RPC: more half-written requests held open than the server takes clients; those
    /// beyond its limit are closed at once (no client is idle to make room), the others stay.
    void half_written_requests()
    {
        const std::string_view partial = R"({"jsonrpc":"2.0","id":7,"method":"spdk_get_ver)";
        for (std::size_t i = 0; i < half_written_request_count; ++i) {
            ++f_.holders_tried;
            auto s = unix_connect(rpc_socket_, clock_type::now() + answer_patience);
            if (s.get() < 0) {
                continue;
            }
            static_cast<void>(send_all(s.get(), std::as_bytes(std::span{partial}), clock_type::now() + 1s));
            holders_.push_back(std::move(s));
        }
        f_.holders_connected = holders_.size();
        // Well within the server's request timeout (10 s), after which it would close them all.
        const std::size_t expected = half_written_request_count - rpc_max_clients;
        std::vector<bool> closed(holders_.size(), false);
        for (const auto deadline = clock_type::now() + 5s;;) {
            for (std::size_t i = 0; i < holders_.size(); ++i) {
                closed[i] = closed[i] || closed_by_peer(holders_[i]);
            }
            f_.holders_closed = static_cast<std::size_t>(std::count(closed.begin(), closed.end(), true));
            if (f_.holders_closed >= expected || clock_type::now() >= deadline) {
                break;
            }
            std::this_thread::sleep_for(50ms);
        }
        check_(f_.holders_connected == half_written_request_count && f_.holders_closed >= expected,
               fmt::format("the management socket keeps at most {} clients: {} of {} half-written requests "
                           "closed at once",
                           rpc_max_clients, f_.holders_closed, f_.holders_connected));
        f_.rpc_during_hold = describe(rpc_exchange(rpc_socket_, subsystems_request, 2s));
    }

    /// NVMe/TCP: connections that send malformed PDUs.
    void malformed_pdus()
    {
        for (std::size_t round = 0; round < malformed_rounds; ++round) {
            send_malformed(port_, f_.malformed);
        }
        std::string wrong;
        for (const auto& w : f_.malformed.wrong) {
            wrong += "\n      " + w;
        }
        check_(f_.malformed.wrong.empty(),
               "every malformed PDU ends its connection (C2HTermReq or close), a data digest error fails its "
               "command" +
                   wrong);
    }

    /// NVMe/TCP: discovery associations from made-up hosts, all from 127.0.0.1, KATO 0, left
    /// open; then what another host gets meanwhile.
    void discovery_flood()
    {
        associations_ = open_discovery_associations(port_, discovery_associations,
                                                    "nqn.2026-11.io.nvmekit.hostile:host-", f_.associations);
        check_(f_.associations.silent == 0,
               fmt::format("every discovery association is answered, accepted or refused with a status: "
                           "{} accepted, {} refused",
                           f_.associations.accepted, f_.associations.refused));
        // (The well-behaved NVMe/TCP host's association comes from 127.0.0.1 too.)
        check_(f_.associations.accepted < associations_per_address,
               fmt::format("made-up host NQNs from one address hold at most {} associations with the "
                           "well-behaved host's: {} accepted",
                           associations_per_address, f_.associations.accepted));
        const auto beside = probe_association(port_, "probe-beside-", 2s, probe_source);
        f_.association_beside_flood = describe(beside);
        check_(beside.accepted == 1,
               "meanwhile a discovery association from another host is accepted within 2 s");
    }

    /// NVMe/TCP: idle connections from several addresses, more than the server's descriptors
    /// allow; then what a new management client and a new host get meanwhile.
    void idle_flood()
    {
        // The half-written requests have shown the management socket's client limit; they go, so
        // that the call below finds a client slot and shows what the descriptors allow.
        holders_.clear();
        auto idle = open_tcp_connections(port_, idle_connections, clock_type::now() + handshake_patience,
                                         idle_sources);
        f_.idle_tried = idle_connections;
        f_.idle_connected = idle.connected.size();
        f_.idle_refused = idle.refused;
        f_.idle_no_handshake = idle.no_handshake;
        idle_ = std::move(idle.connected);
        // Well within icreq_timeout (5 s) of their handshakes, the server has closed idle
        // connections only to make room for newer ones: the flood reached its bound.
        for (const auto& c : idle_) {
            f_.idle_closed_during_flood += closed_by_peer(c) ? 1U : 0U;
        }
        check_(
            f_.idle_closed_during_flood != 0,
            fmt::format("the idle flood reached the server's bound on NVMe/TCP connections ({}, its "
                        "descriptor limit less a reserve of {}): {} idle connections closed for newer ones",
                        server_descriptor_limit - server_descriptor_reserve, server_descriptor_reserve,
                        f_.idle_closed_during_flood));
        const auto rpc = rpc_exchange(rpc_socket_, subsystems_request, 2s);
        f_.rpc_during_flood = describe(rpc);
        check_(lists_subsystem(rpc.line, subsystem_nqn),
               "while the idle connections are open, a new JSON-RPC call (nvmf_get_subsystems) is answered "
               "within 2 s");
        const auto probe = probe_association(port_, "probe-during-", 2s, probe_source);
        f_.association_during_flood = describe(probe);
        check_(probe.accepted == 1,
               "while the idle connections are open, a new discovery association from another host is "
               "accepted within 2 s");
    }

    /// No I/O for a while, every hostile connection still open: the server's CPU time, and the
    /// resources it held at most.
    void idle_with_the_attackers()
    {
        step(fmt::format("idle: no I/O for {} s, every hostile connection still open", idle_period.count()));
        const auto start = clock_type::now();
        const double cpu_start = server_.cpu_seconds().value_or(0);
        std::this_thread::sleep_for(idle_period);
        f_.cpu_idle = server_.cpu_seconds().value_or(0) - cpu_start;
        f_.idle_seconds = std::chrono::duration<double>(clock_type::now() - start).count();
        f_.rss_peak = std::max({sampler_->rss_peak(), server_.rss_bytes().value_or(0), f_.rss_before});
        f_.descriptors_peak = sampler_->descriptors_peak();
        sampler_.reset();
        check_(f_.cpu_idle < idle_cpu_bound * f_.idle_seconds,
               fmt::format("idle hostile connections cost little CPU: {:.3f} s over {:.1f} s (below {:.0f}%)",
                           f_.cpu_idle, f_.idle_seconds, 100.0 * idle_cpu_bound));
        check_(f_.rss_peak - f_.rss_before < rss_growth_bound,
               fmt::format("the server's RSS grew by {:.1f} MiB during the attack (below {:.0f} MiB)",
                           mib(f_.rss_peak - f_.rss_before), mib(rss_growth_bound)));
        // The flood reached the bound on NVMe/TCP connections (idle_flood), which leaves the
        // reserve to the rest of the server.
        check_(f_.descriptors_peak < server_descriptor_limit,
               fmt::format("the server never ran out of descriptors: {} open at most, limit {}",
                           f_.descriptors_peak, server_descriptor_limit));
    }

    void release_the_attackers()
    {
        step("the hostile clients go");
        for (const auto& c : idle_) {
            f_.idle_closed_by_server += closed_by_peer(c) ? 1U : 0U;
        }
        idle_.clear();
        associations_.clear();
        holders_.clear();
    }

    /// Runs `operation`; a check named `what` that fails with the exception's message.
    template <typename Operation>
    void check_works(std::string_view what, Operation&& operation)
    {
        try {
            std::forward<Operation>(operation)();
            check_(true, what);
        } catch (const std::exception& e) {
            check_(false, std::string{what} + ": " + e.what());
        }
    }

    /// Management, the well-behaved clients' sessions and new ones, and a new discovery
    /// association work again.
    void afterwards()
    {
        step("afterwards: the well-behaved clients, old sessions and new ones, and management");
        // The server frees what the hostile clients held as it sees them go: a JSON-RPC call that
        // answers is the first sign it has caught up.
        rpc_answer fresh = rpc_exchange(rpc_socket_, subsystems_request, 2s);
        for (const auto deadline = clock_type::now() + answer_patience;
             !lists_subsystem(fresh.line, subsystem_nqn) && clock_type::now() < deadline;) {
            std::this_thread::sleep_for(100ms);
            fresh = rpc_exchange(rpc_socket_, subsystems_request, 2s);
        }
        check_(lists_subsystem(fresh.line, subsystem_nqn),
               "a new JSON-RPC call (nvmf_get_subsystems) answers after the attack, listing the subsystem");
        check_works("the NVMe/TCP host's session still does verified I/O", [&] {
            for (int i = 0; i < 8; ++i) {
                good_tcp_->verify_once();
            }
        });
        check_works("the vfio-user client's session still does verified I/O", [&] {
            for (int i = 0; i < 8; ++i) {
                good_vm_->verify_once();
            }
        });
        check_works("a new NVMe/TCP host (a new association) does verified I/O", [&] {
            tcp_verifier fresh_host{port_, subsystem_nqn, good_host_nqn, 16384, answer_patience};
            for (int i = 0; i < 8; ++i) {
                fresh_host.verify_once();
            }
        });
        check_(probe_association(port_, "after-", answer_patience).accepted == 1,
               "a new discovery association is accepted after the attack");
        good_vm_.reset(); // a VM that goes away and comes back
        check_works("a new vfio-user client brings the function up again and does verified I/O", [&] {
            std::unique_ptr<vfio_user_verifier> vm;
            for (const auto deadline = clock_type::now() + answer_patience; !vm;) {
                try {
                    vm = std::make_unique<vfio_user_verifier>(vfio_user_socket_, 98304);
                } catch (const std::exception&) {
                    // The server may not have seen the old client go yet.
                    if (clock_type::now() > deadline) {
                        throw;
                    }
                    std::this_thread::sleep_for(100ms);
                }
            }
            for (int i = 0; i < 8; ++i) {
                vm->verify_once();
            }
        });
        f_.rss_after = server_.rss_bytes().value_or(0);
        f_.descriptors_after = server_.open_descriptors().value_or(0);
    }

    void terminate()
    {
        step("SIGTERM");
        good_tcp_.reset();
        const auto status = server_.terminate(30s);
        check_(status && WIFEXITED(*status) && WEXITSTATUS(*status) == 0,
               "the server exits 0 on SIGTERM (" + server_.describe_exit() + ")");
    }

    checks check_;
    figures f_;
    temporary_directory work_;
    std::string rpc_socket_ = work_.path() + "/rpc.sock";
    std::string vfio_user_socket_ = work_.path() + "/vfio-user.sock";
    std::uint16_t port_;
    server_process server_;
    std::optional<resource_sampler> sampler_;
    std::unique_ptr<tcp_verifier> good_tcp_;
    std::unique_ptr<vfio_user_verifier> good_vm_;
    std::vector<unique_fd> holders_;
    std::vector<unique_fd> associations_;
    std::vector<unique_fd> idle_;
};

} // namespace

int main(int argc, char** argv)
{
    std::string serve_program;
    std::vector<std::string> serve_options;
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        if (arg == "--") {
            serve_options.assign(argv + i + 1, argv + argc);
            break;
        }
        if (nvmekit_programs::standard_option(program_info, arg)) {
            continue;
        }
        if (arg.starts_with("-") || !serve_program.empty()) {
            nvmekit_programs::bad_usage(program_info, "unknown option " + std::string{arg});
        }
        serve_program = arg;
    }
    if (serve_program.empty()) {
        nvmekit_programs::bad_usage(program_info, "the path of nvmekit-serve is needed");
    }
    // A server that closes a connection while this process writes to it must not end the test.
    std::signal(SIGPIPE, SIG_IGN);
    try {
        raise_descriptor_limit();
        hostile_network_test test{serve_program, serve_options};
        return test.run();
    } catch (const std::exception& e) {
        fmt::print(stderr, "nvmekit-hostile-network: {}\n", e.what());
        return 1;
    }
}
