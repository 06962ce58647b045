// libFuzzer target: the whole NVMe/TCP target over loopback sockets, driven by hostile hosts.
//
// Input: three setup bytes, then a program. The setup chooses the target's limits and timeouts
// (digests allowed, MAXH2CDATA, CPDA, I/O in-capsule data, connect timeout, discovery, allowed
// hosts), how many connections the hosts open (1 to 3), how they close them, and a well-formed
// prefix the program starts from: ICReq on every connection, an admin Connect on the first (to
// the subsystem or to the discovery controller), CC.EN = 1 with Number of Queues, and an I/O
// Connect on each other connection. The program's steps then send ICReqs, Connects, Property
// Get/Set, command capsules with in-capsule data or a transport SGL, H2CData answering the R2Ts
// received, Disconnects, Keep Alives, H2CTermReqs and raw bytes, alter bytes not sent yet, poll
// the target (waiting, and moving the controllers' clock past a Keep Alive Timeout), and close
// connections; each step's bytes are sent at once, in pieces with polls between, or kept for the
// next step.
//
// After every poll the hosts read what the target sent and check it: every PDU is one the
// controller sends, with its HLEN, PLEN, PDO, flags and digests consistent with what the
// connection negotiated, ICResp first and once, and nothing after a C2HTermReq. Once every host
// has closed its connections, the target must close all of its own and end every association
// within a bounded number of polls.

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include "fuzz_input.hpp"

#include <nvmekit/backends/ram_backend.hpp>
#include <nvmekit/spec/fabrics.hpp>
#include <nvmekit/spec/tcp.hpp>
#include <nvmekit/transport/tcp/crc32c.hpp>
#include <nvmekit/transport/tcp/pdu_encode.hpp>
#include <nvmekit/transport/tcp/target.hpp>

namespace {

namespace spec = nvmekit::spec;
namespace tcp = nvmekit::transport::tcp;
/// The controllers' clock, which the program moves forward to make Keep Alive Timers expire
/// (their granularity is 100 ms, far longer than a run).
std::chrono::nanoseconds clock_advance{};
struct program_clock {
    [[nodiscard]] std::chrono::nanoseconds now() const noexcept
    {
        return nvmekit::steady_clock{}.now() + clock_advance;
    }
};
struct program_traits : tcp::target_traits {
    using clock = program_clock;
};
using target_type = tcp::target<program_traits>;

/// Aborts, naming the invariant that does not hold.
#define NVMEKIT_FUZZ_CHECK(condition) \
    ((condition) ? static_cast<void>(0) : check_failed(__LINE__, #condition))

[[noreturn]] void check_failed(int line, const char* condition)
{
    std::fprintf(stderr, "fuzz_tcp_target.cpp:%d: does not hold: %s\n", line, condition);
    std::abort();
}

constexpr std::string_view host_nqn = "nqn.2014-08.org.nvmexpress:uuid:6e766d65-6b69-7400-0000-000000000001";
constexpr std::uint32_t namespace_bytes = 64 * 1024;
/// Largest data one command may describe: keeps a run's transfers small.
constexpr std::uint32_t max_data_length = 64 * 1024;
/// Bytes the hosts may generate in one run (capsule data, H2CData) beyond the input's own.
constexpr std::size_t generated_budget = 512 * 1024;
constexpr std::size_t max_steps = 96;
constexpr std::size_t max_connections = 3;
/// Largest PDU the target may send: a read of max_data_length with its header, padding, digest.
constexpr std::uint32_t max_pdu_bytes = max_data_length + 256;

/// An R2T a host received and may answer.
struct pending_r2t {
    std::uint16_t cccid = 0;
    std::uint16_t ttag = 0;
    std::uint32_t offset = 0;
    std::uint32_t length = 0;
};

/// One host connection: what it has yet to send, what it received, and what it learnt from it.
struct host_connection {
    tcp::unique_fd socket;
    std::vector<std::byte> unsent;
    std::vector<std::byte> received;
    /// Parameters the host encodes its PDUs with: the digests its last ICReq asked for.
    tcp::connection_params params{};
    /// What the ICReq the target answers asked for, unless the host sent other bytes before it.
    std::optional<spec::icreq_pdu> asked;
    bool asked_known = true;
    bool header_digest = false; ///< granted in ICResp
    bool data_digest = false;
    bool icresp = false;
    bool terminated = false; ///< a C2HTermReq arrived
    bool end_of_stream = false;
    std::uint16_t next_cid = 1;
    std::optional<std::uint16_t> connect_cid;
    std::vector<pending_r2t> r2ts;
};

/// The hosts' side of one run.
class hosts {
public:
    hosts(std::uint16_t port, std::size_t count, const tcp::target_limits& limits) : limits_{limits}
    {
        for (std::size_t i = 0; i < count; ++i) {
            auto& c = connections_[i];
            c.socket = tcp::unique_fd{::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)};
            NVMEKIT_FUZZ_CHECK(c.socket.get() >= 0);
            sockaddr_in address{};
            address.sin_family = AF_INET;
            address.sin_port = htons(port);
            address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
            // Non-blocking, then waited for: a signal (the fuzzer's timers) cannot interrupt it.
            const int connected =
                ::connect(c.socket.get(), reinterpret_cast<const sockaddr*>(&address), sizeof(address));
            NVMEKIT_FUZZ_CHECK(connected == 0 || errno == EINPROGRESS);
            pollfd writable{c.socket.get(), POLLOUT, 0};
            while (connected != 0 && ::poll(&writable, 1, 1000) <= 0) {
                NVMEKIT_FUZZ_CHECK(errno == EINTR);
            }
            int error = 0;
            socklen_t error_size = sizeof(error);
            NVMEKIT_FUZZ_CHECK(::getsockopt(c.socket.get(), SOL_SOCKET, SO_ERROR, &error, &error_size) == 0 &&
                               error == 0);
            // Small pieces leave at once rather than waiting for the target's acknowledgement.
            const int on = 1;
            NVMEKIT_FUZZ_CHECK(::setsockopt(c.socket.get(), IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on)) == 0);
            c.params.cpda = limits.cpda;
            c.params.maxh2cdata = limits.maxh2cdata;
        }
        count_ = count;
    }

    [[nodiscard]] std::size_t count() const noexcept { return count_; }
    host_connection& operator[](std::size_t index) noexcept { return connections_[index]; }
    std::uint16_t cntlid = 0xffff;

    /// Sends up to `limit` unsent bytes of connection `index` (what the socket takes; the rest of
    /// a connection the target stopped reading is dropped).
    void send(std::size_t index, std::size_t limit)
    {
        auto& c = connections_[index];
        const std::size_t n = std::min(limit, c.unsent.size());
        if (n == 0) {
            return;
        }
        if (c.socket.get() >= 0 && !c.end_of_stream) {
            static_cast<void>(::send(c.socket.get(), c.unsent.data(), n, MSG_NOSIGNAL | MSG_DONTWAIT));
        }
        c.unsent.erase(c.unsent.begin(), c.unsent.begin() + static_cast<std::ptrdiff_t>(n));
    }

    /// Reads what the target sent on every open connection and checks each PDU complete so far.
    void receive()
    {
        for (std::size_t i = 0; i < count_; ++i) {
            auto& c = connections_[i];
            while (c.socket.get() >= 0 && !c.end_of_stream) {
                std::array<std::byte, 16384> chunk{};
                const ssize_t got = ::recv(c.socket.get(), chunk.data(), chunk.size(), MSG_DONTWAIT);
                if (got <= 0) {
                    c.end_of_stream = got == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
                    break;
                }
                // Nothing may follow a C2HTermReq.
                NVMEKIT_FUZZ_CHECK(!c.terminated);
                c.received.insert(c.received.end(), chunk.begin(), chunk.begin() + got);
                parse(c);
            }
        }
    }

    void close(std::size_t index, bool abortive)
    {
        auto& c = connections_[index];
        if (c.socket.get() < 0) {
            return;
        }
        if (abortive) {
            const linger option{1, 0};
            ::setsockopt(c.socket.get(), SOL_SOCKET, SO_LINGER, &option, sizeof(option));
        }
        c.socket.reset();
        c.unsent.clear();
    }

private:
    /// Checks and takes every complete PDU of `c.received`.
    void parse(host_connection& c)
    {
        std::size_t at = 0;
        while (!c.terminated && c.received.size() - at >= sizeof(spec::pdu_common_header)) {
            const auto bytes = std::span<const std::byte>{c.received}.subspan(at);
            spec::pdu_common_header ch{};
            std::memcpy(&ch, bytes.data(), sizeof(ch));
            NVMEKIT_FUZZ_CHECK(ch.plen >= ch.hlen && ch.plen <= max_pdu_bytes);
            if (bytes.size() < ch.plen) {
                break;
            }
            check_pdu(c, ch, bytes.first(ch.plen));
            at += ch.plen;
        }
        c.received.erase(c.received.begin(), c.received.begin() + static_cast<std::ptrdiff_t>(at));
        // A C2HTermReq is the connection's last PDU.
        NVMEKIT_FUZZ_CHECK(!c.terminated || c.received.empty());
    }

    template <typename Pdu>
    static Pdu header_of(std::span<const std::byte> pdu)
    {
        Pdu header{};
        NVMEKIT_FUZZ_CHECK(pdu.size() >= sizeof(Pdu));
        std::memcpy(&header, pdu.data(), sizeof(Pdu));
        return header;
    }

    void check_pdu(host_connection& c, const spec::pdu_common_header& ch, std::span<const std::byte> pdu)
    {
        using enum spec::pdu_type;
        const auto type = ch.type;
        NVMEKIT_FUZZ_CHECK(type == icresp || type == c2h_term_req || type == capsule_resp ||
                           type == c2h_data || type == r2t);
        NVMEKIT_FUZZ_CHECK(ch.hlen == spec::pdu_header_length(type));
        const auto flags = ch.flags.raw;
        if (type == c2h_term_req) {
            // The header in error follows, at most 128 bytes; no digests, no PDO.
            NVMEKIT_FUZZ_CHECK(flags == 0 && ch.pdo == 0 && ch.plen <= ch.hlen + 128U);
            const auto fes = static_cast<unsigned>(header_of<spec::term_req_pdu>(pdu).fes);
            NVMEKIT_FUZZ_CHECK(fes >= 1 && fes <= 6);
            c.terminated = true;
            return;
        }
        if (type == icresp) {
            NVMEKIT_FUZZ_CHECK(!c.icresp && flags == 0 && ch.pdo == 0 && ch.plen == sizeof(spec::icresp_pdu));
            const auto icresp = header_of<spec::icresp_pdu>(pdu);
            NVMEKIT_FUZZ_CHECK(icresp.pfv == 0 && icresp.cpda == c.params.cpda &&
                               icresp.maxh2cdata == c.params.maxh2cdata);
            c.header_digest = icresp.dgst.get(spec::digest_options::hdgst_enable);
            c.data_digest = icresp.dgst.get(spec::digest_options::ddgst_enable);
            if (const auto asked = expected_icreq(c)) {
                NVMEKIT_FUZZ_CHECK(c.header_digest == (asked->dgst.get(spec::digest_options::hdgst_enable) &&
                                                       limits_.allow_header_digest));
                NVMEKIT_FUZZ_CHECK(c.data_digest == (asked->dgst.get(spec::digest_options::ddgst_enable) &&
                                                     limits_.allow_data_digest));
            }
            c.icresp = true;
            return;
        }
        NVMEKIT_FUZZ_CHECK(c.icresp);
        NVMEKIT_FUZZ_CHECK(ch.flags.get(spec::pdu_flags::hdgstf) == c.header_digest);
        const std::uint32_t header_end = ch.hlen + (c.header_digest ? 4U : 0U);
        if (c.header_digest) {
            NVMEKIT_FUZZ_CHECK(tcp::crc32c_of(pdu.first(ch.hlen)) ==
                               tcp::load_digest(pdu.subspan(ch.hlen).first<spec::tcp_header_digest_size>()));
        }
        if (type != c2h_data) {
            NVMEKIT_FUZZ_CHECK((flags & ~1U) == 0 && ch.pdo == 0 && ch.plen == header_end);
            if (type == r2t) {
                const auto r2t_header = header_of<spec::r2t_pdu>(pdu);
                NVMEKIT_FUZZ_CHECK(r2t_header.r2tl != 0 && r2t_header.r2tl <= max_data_length);
                c.r2ts.push_back({r2t_header.cccid, r2t_header.ttag, r2t_header.r2to, r2t_header.r2tl});
            } else {
                const auto cqe = header_of<spec::capsule_resp_pdu>(pdu).cqe;
                if (c.connect_cid == cqe.cid && cqe.status().is_success()) {
                    cntlid =
                        spec::connect_response_dword0{cqe.dw0}.get(spec::connect_response_dword0::cntlid);
                    c.connect_cid.reset();
                }
            }
            return;
        }
        // C2HData: LAST_PDU (one PDU per read), its data at PDO aligned to HPDA, DATAL bytes.
        const auto header = header_of<spec::c2h_data_pdu>(pdu);
        NVMEKIT_FUZZ_CHECK(ch.flags.get(spec::pdu_flags::ddgstf) == c.data_digest);
        NVMEKIT_FUZZ_CHECK(ch.flags.get(spec::pdu_flags::last_pdu) && (flags & 0xf0U) == 0);
        NVMEKIT_FUZZ_CHECK(header.datal != 0 && header.datao == 0 && ch.pdo >= header_end && ch.pdo % 4 == 0);
        if (const auto asked = expected_icreq(c)) {
            const std::uint32_t alignment = spec::pdu_data_alignment_bytes(asked->hpda);
            NVMEKIT_FUZZ_CHECK(ch.pdo % alignment == 0 && ch.pdo - header_end < alignment);
        }
        NVMEKIT_FUZZ_CHECK(ch.plen == ch.pdo + header.datal + (c.data_digest ? 4U : 0U));
        if (c.data_digest) {
            NVMEKIT_FUZZ_CHECK(tcp::crc32c_of(pdu.subspan(ch.pdo, header.datal)) ==
                               tcp::load_digest(pdu.last<spec::tcp_data_digest_size>()));
        }
    }

    static std::optional<spec::icreq_pdu> expected_icreq(const host_connection& c)
    {
        return c.asked_known ? c.asked : std::nullopt;
    }

    tcp::target_limits limits_;
    std::array<host_connection, max_connections> connections_{};
    std::size_t count_ = 0;
};

/// Turns the program's steps into host PDUs.
class host_program {
public:
    host_program(hosts& connections, target_type& target, nvmekit_fuzz::reader& input)
        : hosts_{connections}, target_{target}, input_{input}
    {}

    /// Polls the target `rounds` times, the first waiting up to `timeout`, and receives.
    void poll(int rounds = 1, std::chrono::milliseconds timeout = std::chrono::milliseconds{0})
    {
        for (int i = 0; i < rounds; ++i) {
            target_.poll(i == 0 ? timeout : std::chrono::milliseconds{0});
            hosts_.receive();
        }
    }

    /// Sends what connection `index` has to send: at once, in pieces with polls between, or not
    /// yet (mode 1).
    void send(std::size_t index, unsigned mode)
    {
        auto& c = hosts_[index];
        switch (mode) {
        case 0:
            hosts_.send(index, c.unsent.size());
            poll();
            return;
        case 1: return;
        case 2: {
            const std::size_t piece = 1U + input_.take<std::uint8_t>();
            for (int round = 0; round < 32 && !c.unsent.empty(); ++round) {
                hosts_.send(index, piece);
                poll();
            }
            hosts_.send(index, c.unsent.size());
            poll();
            return;
        }
        default:
            hosts_.send(index, c.unsent.size());
            poll(4);
            return;
        }
    }

    template <typename Encoder>
    void append(std::size_t index, std::size_t size, Encoder&& encode)
    {
        auto& out = hosts_[index].unsent;
        const std::size_t start = out.size();
        out.resize(start + size);
        out.resize(start + encode(std::span{out}.subspan(start)));
    }

    void icreq(std::size_t index, std::uint8_t hpda, bool header_digest, bool data_digest)
    {
        auto& c = hosts_[index];
        c.params.header_digest = header_digest;
        c.params.data_digest = data_digest;
        const bool first = !c.asked;
        append(index, sizeof(spec::icreq_pdu), [&](std::span<std::byte> out) {
            return tcp::encode_icreq(hpda, header_digest, data_digest, 0, out);
        });
        if (first) {
            c.asked.emplace();
            std::memcpy(&*c.asked, c.unsent.data() + c.unsent.size() - sizeof(spec::icreq_pdu),
                        sizeof(spec::icreq_pdu));
        }
    }

    void capsule(std::size_t index, const spec::submission_queue_entry& sqe, std::span<const std::byte> data)
    {
        const std::array<std::span<const std::byte>, 1> parts{data};
        const auto& params = hosts_[index].params;
        append(index,
               tcp::pdu_size(spec::pdu_type::capsule_cmd, static_cast<std::uint32_t>(data.size()), params),
               [&](std::span<std::byte> out) { return tcp::encode_capsule_cmd(sqe, parts, params, out); });
    }

    /// Connect of `qid` (SQSIZE `sqsize`) to CNTLID `cntlid`, to the subsystem or the discovery NQN.
    void connect(std::size_t index, std::uint16_t qid, std::uint16_t sqsize, std::uint16_t cntlid,
                 std::string_view subsystem_nqn, std::string_view host, std::uint32_t kato,
                 std::uint8_t cattr)
    {
        spec::connect_command command{};
        const std::uint16_t cid = hosts_[index].next_cid++;
        command.cdw0.set(spec::command_dword0::opc, spec::fabrics_command_opcode);
        command.cdw0.set(spec::command_dword0::cid, cid);
        command.fctype = spec::fabrics_command_type::connect;
        command.sgl1 = spec::to_data_pointer(spec::sgl_descriptor::data_block(
            0, sizeof(spec::connect_data), spec::sgl_descriptor_subtype::offset));
        command.qid = qid;
        command.sqsize = sqsize;
        command.kato = kato;
        command.cattr = spec::connect_attributes{cattr};
        spec::connect_data data{};
        data.cntlid = cntlid;
        data.set_subsystem_nqn(subsystem_nqn);
        data.set_host_nqn(host);
        hosts_[index].connect_cid = cid;
        capsule(index, std::bit_cast<spec::submission_queue_entry>(command),
                std::as_bytes(std::span{&data, 1}));
    }

    void property(std::size_t index, bool set, std::uint32_t offset, bool eight_bytes, std::uint64_t value)
    {
        spec::property_set_command command{};
        command.cdw0.set(spec::command_dword0::opc, spec::fabrics_command_opcode);
        command.cdw0.set(spec::command_dword0::cid, hosts_[index].next_cid++);
        command.fctype =
            set ? spec::fabrics_command_type::property_set : spec::fabrics_command_type::property_get;
        command.attrib.set(spec::property_attributes::size,
                           eight_bytes ? spec::property_size::eight_bytes : spec::property_size::four_bytes);
        command.ofst = offset;
        command.value = set ? value : 0;
        capsule(index, std::bit_cast<spec::submission_queue_entry>(command), {});
    }

    /// A command with a transport SGL Data Block of `length` bytes (R2T/C2HData) or, with
    /// `in_capsule`, that many bytes of data in the capsule.
    void command(std::size_t index, spec::submission_queue_entry sqe, std::uint32_t length, bool in_capsule)
    {
        sqe.cdw0.set(spec::command_dword0::psdt, spec::data_pointer_type::sgl_contiguous_metadata);
        if (in_capsule) {
            sqe.dptr = spec::to_data_pointer(
                spec::sgl_descriptor::data_block(0, length, spec::sgl_descriptor_subtype::offset));
        } else {
            sqe.dptr = spec::to_data_pointer(spec::sgl_descriptor::transport_data_block(
                length, static_cast<spec::sgl_descriptor_subtype>(0xa)));
        }
        capsule(index, sqe, in_capsule ? generated(length) : std::span<const std::byte>{});
    }

    /// H2CData answering the oldest R2T of connection `index`, in PDUs of `piece` bytes.
    void h2c_data(std::size_t index, std::uint32_t piece, std::int32_t offset_shift, std::uint16_t ttag_shift)
    {
        auto& c = hosts_[index];
        if (c.r2ts.empty()) {
            return;
        }
        const auto r2t = c.r2ts.front();
        c.r2ts.erase(c.r2ts.begin());
        piece = std::clamp<std::uint32_t>(piece, 1, r2t.length);
        for (std::uint32_t at = 0; at < r2t.length; at += piece) {
            const std::uint32_t length = std::min(piece, r2t.length - at);
            const std::array<std::span<const std::byte>, 1> parts{generated(length)};
            if (parts[0].size() != length) {
                return;
            }
            const tcp::h2c_data_fields fields{r2t.cccid, static_cast<std::uint16_t>(r2t.ttag + ttag_shift),
                                              static_cast<std::uint32_t>(r2t.offset + at + offset_shift),
                                              at + length == r2t.length};
            const auto& params = c.params;
            append(
                index, tcp::pdu_size(spec::pdu_type::h2c_data, length, params),
                [&](std::span<std::byte> out) { return tcp::encode_h2c_data(fields, parts, params, out); });
        }
    }

    void term_req(std::size_t index, spec::fatal_error_status status, std::uint32_t information)
    {
        const std::array<std::byte, 24> header_in_error{};
        append(index, spec::tcp_term_req_max_length, [&](std::span<std::byte> out) {
            return tcp::encode_h2c_term_req({status, information}, header_in_error, out);
        });
    }

    /// `length` bytes of data for the hosts to send (fewer once the run's budget is spent).
    std::span<const std::byte> generated(std::uint32_t length)
    {
        static const auto pattern = [] {
            std::vector<std::byte> bytes(max_data_length);
            for (std::size_t i = 0; i < bytes.size(); ++i) {
                bytes[i] = static_cast<std::byte>((i * 131U + (i >> 9)) & 0xffU);
            }
            return bytes;
        }();
        const std::size_t n =
            std::min<std::size_t>(length, generated_budget - std::min(generated_budget, generated_));
        generated_ += n;
        return std::span<const std::byte>{pattern}.first(std::min(n, pattern.size()));
    }

private:
    hosts& hosts_;
    target_type& target_;
    nvmekit_fuzz::reader& input_;
    std::size_t generated_ = 0;
};

/// Common admin and NVM opcodes, so that most commands reach a handler.
constexpr std::array<std::uint8_t, 16> common_opcodes{0x06, 0x02, 0x09, 0x0a, 0x18, 0x0c, 0x01, 0x02,
                                                      0x00, 0x08, 0x04, 0x05, 0x01, 0x02, 0x7f, 0x10};
/// Register offsets a host reads and writes: CAP, VS, INTMS, CC, CSTS, NSSR, AQA, and beyond.
constexpr std::array<std::uint32_t, 8> property_offsets{0x00, 0x08, 0x0c, 0x14, 0x1c, 0x20, 0x24, 0x1000};
constexpr std::uint64_t enabled_cc = 1U | (6U << 16) | (4U << 20);

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    nvmekit_fuzz::reader input{{data, size}};
    clock_advance = {};
    const auto setup = input.take<std::uint8_t>();
    const auto limits_byte = input.take<std::uint8_t>();
    const auto prefix = input.take<std::uint8_t>();

    tcp::target_options options;
    options.port = 0;
    options.limits.allow_header_digest = (setup & 0x04U) != 0;
    options.limits.allow_data_digest = (setup & 0x08U) != 0;
    options.limits.maxh2cdata = 4096U << ((setup >> 4) & 0x03U);
    options.limits.cpda = (setup & 0x40U) != 0 ? 3 : 0;
    options.limits.io_in_capsule_data = 1024U * (limits_byte & 0x07U);
    options.max_data_length = max_data_length;
    static constexpr std::array<int, 4> connect_timeouts{10000, 0, 1, 10000};
    options.connect_timeout = std::chrono::milliseconds{connect_timeouts[(limits_byte >> 3) & 0x03U]};
    options.discovery = (limits_byte & 0x20U) == 0;
    if ((limits_byte & 0x40U) != 0) {
        options.allowed_hosts = {std::string{host_nqn}};
    }
    options.termination_linger = std::chrono::milliseconds{(limits_byte & 0x80U) != 0 ? 1 : 0};
    const bool abortive_close = (setup & 0x80U) != 0;

    target_type::subsystem_type subsystem;
    subsystem.add_namespace(nvmekit::ram_backend{namespace_bytes});
    target_type target{subsystem, options};
    const std::string subsystem_nqn = subsystem.identity().nqn;

    hosts connections{target.port(), 1 + (setup & 0x03U) % 3, options.limits};
    host_program program{connections, target, input};
    const std::size_t count = connections.count();

    // The well-formed prefix.
    const unsigned level = prefix & 0x03U;
    const bool header_digest = (prefix & 0x04U) != 0;
    const bool data_digest = (prefix & 0x08U) != 0;
    const std::string_view admin_nqn =
        (prefix & 0x10U) != 0 ? spec::discovery_nqn : std::string_view{subsystem_nqn};
    const std::uint32_t kato = (prefix & 0x20U) != 0 ? 1 : 0;
    if (level >= 1) {
        for (std::size_t i = 0; i < count; ++i) {
            program.icreq(i, 0, header_digest, data_digest);
        }
    }
    if (level >= 2) {
        program.connect(0, 0, 31, spec::dynamic_controller_id, admin_nqn, host_nqn, kato, 0);
    }
    if (level >= 3) {
        program.property(0, true, 0x14, false, enabled_cc);
        program.send(0, 0);
        program.poll(2);
        spec::submission_queue_entry queues{};
        queues.cdw0.set(spec::command_dword0::opc, 0x09);
        queues.cdw0.set(spec::command_dword0::cid, connections[0].next_cid++);
        queues.cdw10 = 0x07;       // Number of Queues
        queues.cdw11 = 0x00030003; // 4 SQs and CQs, 0's based
        program.command(0, queues, 0, false);
        program.send(0, 0);
        for (std::size_t i = 1; i < count; ++i) {
            program.connect(i, static_cast<std::uint16_t>(i), 15, connections.cntlid, admin_nqn, host_nqn, 0,
                            (prefix & 0x40U) != 0 ? 0x04 : 0);
        }
    }
    for (std::size_t i = 0; i < count; ++i) {
        program.send(i, 0);
    }

    // The program.
    for (std::size_t step = 0; step < max_steps && !input.empty(); ++step) {
        const auto op = input.take<std::uint8_t>();
        const std::size_t index = ((op >> 4) & 0x03U) % count;
        const unsigned mode = op >> 6;
        auto& c = connections[index];
        switch (op & 0x0fU) {
        case 0: { // raw bytes
            const auto length = input.take<std::uint8_t>();
            const auto bytes = std::as_bytes(input.take_bytes(length));
            c.unsent.insert(c.unsent.end(), bytes.begin(), bytes.end());
            if (!c.icresp) {
                c.asked_known = false;
            }
            break;
        }
        case 1: { // ICReq
            const auto value = input.take<std::uint8_t>();
            program.icreq(index, value & 0x1fU, (value & 0x20U) != 0, (value & 0x40U) != 0);
            break;
        }
        case 2: { // Connect
            const auto qid_byte = input.take<std::uint8_t>();
            const auto sqsize = input.take<std::uint8_t>();
            const auto flags = input.take<std::uint8_t>();
            const std::uint16_t qid = (qid_byte & 0x80U) != 0 ? static_cast<std::uint16_t>(qid_byte * 0x101U)
                                                              : static_cast<std::uint16_t>(qid_byte & 0x07U);
            const std::uint16_t cntlid = (flags & 0x01U) != 0
                                             ? static_cast<std::uint16_t>(input.take<std::uint16_t>())
                                         : qid == 0 ? spec::dynamic_controller_id
                                                    : connections.cntlid;
            const std::string_view nqn = (flags & 0x02U) != 0 ? spec::discovery_nqn
                                         : (flags & 0x04U) != 0
                                             ? std::string_view{"nqn.2026-11.io.nvmekit:other"}
                                             : std::string_view{subsystem_nqn};
            const std::string_view host =
                (flags & 0x08U) != 0 ? std::string_view{"nqn.2014-08.org.nvmexpress:other"} : host_nqn;
            static constexpr std::array<std::uint32_t, 4> katos{0, 1, 5, 120000};
            program.connect(index, qid, sqsize, cntlid, nqn, host, katos[(flags >> 4) & 0x03U],
                            static_cast<std::uint8_t>(flags >> 6));
            break;
        }
        case 3:   // Property Get
        case 4: { // Property Set
            const auto which = input.take<std::uint8_t>();
            const std::uint32_t offset =
                (which & 0x08U) != 0 ? std::uint32_t{which} * 4 : property_offsets[which & 0x07U];
            std::uint64_t value = 0;
            switch ((which >> 4) & 0x03U) {
            case 0: value = enabled_cc; break;
            case 1: value = enabled_cc | (1U << 14); break; // CC.SHN normal
            case 2: value = input.take<std::uint32_t>(); break;
            default: value = input.take<std::uint64_t>(); break;
            }
            program.property(index, (op & 0x0fU) == 4, offset, (which & 0x40U) != 0, value);
            break;
        }
        case 5:   // a command with a transport SGL
        case 6: { // a command with in-capsule data
            const auto opcode_byte = input.take<std::uint8_t>();
            const auto nsid_byte = input.take<std::uint8_t>();
            const auto length_byte = input.take<std::uint8_t>();
            spec::submission_queue_entry sqe{};
            sqe.cdw0.set(spec::command_dword0::opc, (opcode_byte & 0x80U) != 0
                                                        ? opcode_byte & 0x7fU
                                                        : common_opcodes[opcode_byte & 0x0fU]);
            sqe.cdw0.set(spec::command_dword0::cid,
                         (nsid_byte & 0x80U) != 0 ? c.next_cid : static_cast<std::uint16_t>(c.next_cid++));
            sqe.nsid = (nsid_byte & 0x40U) != 0 ? 0xffffffffU : nsid_byte & 0x03U;
            sqe.cdw10 = input.take<std::uint32_t>();
            sqe.cdw11 = input.take<std::uint32_t>();
            sqe.cdw12 = (nsid_byte & 0x20U) != 0 ? input.take<std::uint32_t>()
                                                 : std::max(1U, (length_byte & 0x7fU) / 2U) - 1; // NLB of
                                                                                                 // 512-byte
                                                                                                 // blocks
            const std::uint32_t length = (length_byte & 0x80U) != 0
                                             ? std::uint32_t{input.take<std::uint16_t>()}
                                             : 256U * (length_byte & 0x7fU);
            if ((nsid_byte & 0x10U) != 0) { // a data pointer of the input's, PSDT too
                const auto dptr = input.take_bytes(sizeof(sqe.dptr));
                std::memcpy(&sqe.dptr, dptr.data(), dptr.size());
                sqe.cdw0.set(spec::command_dword0::psdt,
                             static_cast<spec::data_pointer_type>(length_byte >> 6));
                program.capsule(index, sqe,
                                (op & 0x0fU) == 6 ? program.generated(length) : std::span<const std::byte>{});
            } else {
                program.command(index, sqe, length, (op & 0x0fU) == 6);
            }
            break;
        }
        case 7: { // H2CData for the oldest R2T
            const auto how = input.take<std::uint8_t>();
            const std::uint32_t piece =
                (how & 0x01U) != 0 ? 512U * (1U + ((how >> 1) & 0x0fU)) : max_data_length;
            const std::int32_t offset_shift =
                (how & 0x20U) != 0 ? static_cast<std::int8_t>(input.take<std::uint8_t>()) : 0;
            const std::uint16_t ttag_shift = (how & 0x40U) != 0 ? 1 : 0;
            program.h2c_data(index, piece, offset_shift, ttag_shift);
            break;
        }
        case 8: { // Disconnect
            spec::disconnect_command command{};
            command.cdw0.set(spec::command_dword0::opc, spec::fabrics_command_opcode);
            command.cdw0.set(spec::command_dword0::cid, c.next_cid++);
            command.fctype = spec::fabrics_command_type::disconnect;
            program.capsule(index, std::bit_cast<spec::submission_queue_entry>(command), {});
            break;
        }
        case 9: { // H2CTermReq
            const auto fes = input.take<std::uint8_t>();
            program.term_req(index, static_cast<spec::fatal_error_status>(1 + fes % 6), fes >> 3);
            break;
        }
        case 10: { // alter an unsent byte
            const auto at = input.take<std::uint16_t>();
            const auto value = input.take<std::uint8_t>();
            if (!c.unsent.empty()) {
                c.unsent[at % c.unsent.size()] ^= static_cast<std::byte>(value | 1U);
            }
            if (!c.icresp) {
                c.asked_known = false;
            }
            break;
        }
        case 11: { // polls; a wait of 1 ms lets the connect timeout and the linger run out
            const auto rounds = input.take<std::uint8_t>();
            if ((rounds & 0x40U) != 0) {
                clock_advance += std::chrono::milliseconds{150};
            }
            program.poll(1 + (rounds & 0x07U), std::chrono::milliseconds{(rounds & 0x80U) != 0 ? 1 : 0});
            break;
        }
        case 12: // close the connection
            program.send(index, 0);
            connections.close(index, (op & 0x80U) != 0);
            program.poll();
            continue;
        case 13: { // Keep Alive
            spec::submission_queue_entry sqe{};
            sqe.cdw0.set(spec::command_dword0::opc, 0x18);
            sqe.cdw0.set(spec::command_dword0::cid, c.next_cid++);
            program.command(index, sqe, 0, false);
            break;
        }
        default: { // the Discovery log page or Identify Controller, 4 KiB
            spec::submission_queue_entry sqe{};
            const bool log = (op & 0x01U) != 0;
            sqe.cdw0.set(spec::command_dword0::opc, log ? 0x02 : 0x06);
            sqe.cdw0.set(spec::command_dword0::cid, c.next_cid++);
            sqe.cdw10 = log ? 0x70U | (1023U << 16) : 0x01U;
            program.command(index, sqe, 4096, false);
            break;
        }
        }
        program.send(index, mode);
    }

    // The end: what is left is sent, then every host closes its connections.
    for (std::size_t i = 0; i < count; ++i) {
        program.send(i, 0);
    }
    program.poll(2);
    for (std::size_t i = 0; i < count; ++i) {
        connections.close(i, abortive_close);
    }
    for (int round = 0; round < 200 && (target.connection_count() != 0 || target.association_count() != 0);
         ++round) {
        target.poll(std::chrono::milliseconds{round < 20 ? 0 : 1});
    }
    NVMEKIT_FUZZ_CHECK(target.connection_count() == 0);
    NVMEKIT_FUZZ_CHECK(target.association_count() == 0);
    NVMEKIT_FUZZ_CHECK(target.statistics().connections_accepted == target.statistics().connections_closed);
    return 0;
}
