#pragma once
/// An NVMe/TCP initiator for tests: blocking sockets, one command at a time per queue (or many
/// outstanding, below), every PDU it receives checked (digests, lengths, the command it names). It brings a
/// controller up the way the Linux host does over fabrics: ICReq, Connect on the admin queue, Property Set
/// CC.EN = 1 and Property Get CSTS until RDY, Identify, Set Features Number of Queues, Connect of each I/O
/// queue on a connection of its own.
///
///     nvmekit::testing::tcp_host host{"127.0.0.1", target.port(), {.header_digest = true}};
///     const std::uint16_t cntlid = host.connect_admin();
///     host.enable();
///     host.connect_io(1);
///     host.write(1, 0, data);       // in-capsule, or R2T/H2CData when larger (any number of
///                                   // R2Ts per command, each answered in full as it comes)
///     std::vector<std::byte> back;
///     host.read(1, 0, 8, back);     // C2HData
///
/// tcp_queue is one connection; tests reach it (send_capsule, send_bytes, receive_pdu) to send
/// what a host must not. It also keeps many commands outstanding at once, as a driver does:
///
///     auto& queue = host.io(1);
///     queue.submit(read_sqe, {}, buffer);       // the CID is the caller's, unique while outstanding
///     queue.flush();                            // every capsule submitted, in one send
///     queue.reap([](const completion& c) { ... }, true);   // C2HData into each buffer, then responses
///
/// Failures throw host_error (a C2HTermReq: tcp_terminated, with its FES and FEI); every wait is
/// bounded by options.timeout. Keep Alive is the caller's to send (options.keep_alive_timeout_ms
/// is the KATO asked for).

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <cerrno>
#include <sys/socket.h>
#include <sys/time.h>

#include <nvmekit/config.hpp>
#include <nvmekit/spec/data_pointer.hpp>
#include <nvmekit/spec/fabrics.hpp>
#include <nvmekit/spec/features.hpp>
#include <nvmekit/spec/identify.hpp>
#include <nvmekit/spec/registers.hpp>
#include <nvmekit/spec/tcp.hpp>
#include <nvmekit/testing/command_builders.hpp>
#include <nvmekit/testing/host_base.hpp>
#include <nvmekit/transport/tcp/connection_params.hpp>
#include <nvmekit/transport/tcp/crc32c.hpp>
#include <nvmekit/transport/tcp/pdu_encode.hpp>
#include <nvmekit/transport/tcp/socket.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace testing {

/// How tcp_host connects.
struct tcp_host_options {
    bool header_digest = false;
    bool data_digest = false;
    /// MAXR2T of ICReq (0's based).
    std::uint32_t maxr2t = 0;
    /// HPDA of ICReq (0's based dwords).
    std::uint8_t hpda = 0;
    std::string subsystem_nqn = "nqn.2026-11.io.nvmekit:subsystem0";
    std::string host_nqn = "nqn.2014-08.org.nvmexpress:uuid:6e766d65-6b69-7400-0000-000000000001";
    std::uint32_t admin_entries = 32;
    std::uint32_t io_entries = 32;
    /// In-capsule data the I/O queues send at most (the target's IOCCSZ); the admin queue's is 8 KiB.
    std::uint32_t io_in_capsule_data = transport::tcp::admin_in_capsule_data_size;
    std::chrono::milliseconds timeout{5000};
    /// SO_RCVBUF of each connection, set before connecting (0: the system's): a small one makes
    /// a host that reads slowly.
    int receive_buffer = 0;
    /// KATO of the admin Connect, in milliseconds (0: no keep alive).
    std::uint32_t keep_alive_timeout_ms = 120000;
    /// The local IP address each connection is made from (bound before connecting; empty: the
    /// system's choice), to be another host of a target that counts hosts by address.
    std::string source_address{};
};

/// An R2T as a tcp_queue received it.
struct received_r2t {
    std::uint16_t cccid = 0;
    std::uint16_t ttag = 0;
    std::uint32_t r2to = 0;
    std::uint32_t r2tl = 0;

    friend bool operator==(const received_r2t&, const received_r2t&) = default;
};

/// One PDU as received: its bytes, where its parts are, and whether its digests matched.
struct received_tcp_pdu {
    std::vector<std::byte> bytes;
    spec::pdu_common_header ch{};
    bool header_digest_ok = true;
    bool data_digest_ok = true;

    [[nodiscard]] spec::pdu_type type() const noexcept { return ch.type; }
    /// The header as PDU structure `Pdu`.
    template <typename Pdu>
    [[nodiscard]] Pdu header_as() const
    {
        if (bytes.size() < sizeof(Pdu)) {
            throw host_error{"PDU shorter than its header"};
        }
        Pdu pdu{};
        std::memcpy(&pdu, bytes.data(), sizeof(Pdu));
        return pdu;
    }
    /// The data (PDO to the data digest); a termination request's data is the header after its own.
    [[nodiscard]] std::span<const std::byte> data() const noexcept { return data_of(bytes, ch); }

    /// The data of the whole PDU `pdu` whose common header is `ch`.
    [[nodiscard]] static std::span<const std::byte> data_of(std::span<const std::byte> pdu,
                                                            const spec::pdu_common_header& ch) noexcept
    {
        const bool term = ch.type == spec::pdu_type::c2h_term_req || ch.type == spec::pdu_type::h2c_term_req;
        const std::size_t begin = term ? ch.hlen : ch.pdo;
        if (begin == 0 || begin >= pdu.size()) {
            return {};
        }
        const std::size_t digest = ch.flags.get(spec::pdu_flags::ddgstf) ? spec::tcp_data_digest_size : 0;
        return pdu.subspan(begin, pdu.size() - begin - digest);
    }
};

/// A C2HTermReq the target sent.
class tcp_terminated : public host_error {
public:
    tcp_terminated(spec::fatal_error_status status, std::uint32_t information)
        : host_error{"the target ended the connection with C2HTermReq"}
        , status_{status}
        , information_{information}
    {}
    [[nodiscard]] spec::fatal_error_status status() const noexcept { return status_; }
    [[nodiscard]] std::uint32_t information() const noexcept { return information_; }

private:
    spec::fatal_error_status status_;
    std::uint32_t information_;
};

/// One NVMe/TCP connection (queue pair), host side.
class tcp_queue {
public:
    tcp_queue(const std::string& address, std::uint16_t port, tcp_host_options options)
        : options_{std::move(options)}
    {
        try {
            socket_ = transport::tcp::connect_to(address, port, [this](int fd) {
                timeval timeout{};
                timeout.tv_sec = static_cast<time_t>(options_.timeout.count() / 1000);
                timeout.tv_usec = static_cast<suseconds_t>((options_.timeout.count() % 1000) * 1000);
                ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
                ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
                if (options_.receive_buffer > 0) {
                    ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &options_.receive_buffer,
                                 sizeof(options_.receive_buffer));
                }
                if (!options_.source_address.empty()) {
                    const auto from = transport::tcp::socket_address::parse(options_.source_address, 0);
                    if (::bind(fd, from.get(), from.length) != 0) {
                        transport::tcp::throw_errno("tcp_queue: bind to the source address");
                    }
                }
            });
        } catch (const std::exception& e) {
            throw host_error{std::string{"cannot connect: "} + e.what()};
        }
    }
    tcp_queue(const tcp_queue&) = delete;
    tcp_queue& operator=(const tcp_queue&) = delete;
    ~tcp_queue() = default;

    /// ICReq, then ICResp: the digests granted must be those asked for.
    void initialize()
    {
        std::array<std::byte, sizeof(spec::icreq_pdu)> icreq{};
        transport::tcp::encode_icreq(options_.hpda, options_.header_digest, options_.data_digest,
                                     options_.maxr2t, icreq);
        send_bytes(icreq);
        const auto reply = expect(spec::pdu_type::icresp);
        const auto icresp = reply.header_as<spec::icresp_pdu>();
        params_.header_digest = icresp.dgst.get(spec::digest_options::hdgst_enable);
        params_.data_digest = icresp.dgst.get(spec::digest_options::ddgst_enable);
        if (params_.header_digest != options_.header_digest || params_.data_digest != options_.data_digest) {
            throw host_error{"ICResp granted other digests than asked for"};
        }
        params_.cpda = icresp.cpda;
        params_.hpda = options_.hpda;
        params_.maxh2cdata = icresp.maxh2cdata;
        if (!transport::tcp::is_valid_maxh2cdata(params_.maxh2cdata)) {
            throw host_error{"ICResp MAXH2CDATA invalid"};
        }
    }

    /// Fabrics Connect of queue `qid` with `entries` entries to controller `cntlid`.
    completion connect(std::uint16_t qid, std::uint32_t entries, std::uint16_t cntlid)
    {
        spec::connect_command command{};
        command.cdw0.set(spec::command_dword0::opc, spec::fabrics_command_opcode);
        command.fctype = spec::fabrics_command_type::connect;
        command.qid = qid;
        command.sqsize = static_cast<std::uint16_t>(entries - 1);
        command.kato = qid == 0 ? options_.keep_alive_timeout_ms : 0;
        spec::connect_data data{};
        data.cntlid = cntlid;
        data.set_subsystem_nqn(options_.subsystem_nqn);
        data.set_host_nqn(options_.host_nqn);
        qid_ = qid; // the response names the queue connected
        const auto result = execute(std::bit_cast<spec::submission_queue_entry>(command),
                                    std::as_bytes(std::span{&data, 1}), {});
        if (result.ok()) {
            in_capsule_limit_ =
                qid == 0 ? transport::tcp::admin_in_capsule_data_size : options_.io_in_capsule_data;
        }
        return result;
    }

    /// Sends `sqe` (a fresh CID, PSDT 01b, its SGL set here) with `write_data` in the capsule when it
    /// fits, else by R2T/H2CData, and receives up to `read_data.size()` bytes of C2HData; returns
    /// the response.
    completion execute(spec::submission_queue_entry sqe, std::span<const std::byte> write_data,
                       std::span<std::byte> read_data)
    {
        const std::uint16_t cid = next_cid_++;
        sqe.cdw0.set(spec::command_dword0::cid, cid);
        sqe.cdw0.set(spec::command_dword0::psdt, spec::data_pointer_type::sgl_contiguous_metadata);
        const auto length =
            static_cast<std::uint32_t>(write_data.empty() ? read_data.size() : write_data.size());
        const bool in_capsule = !write_data.empty() && write_data.size() <= in_capsule_limit_;
        if (in_capsule) {
            sqe.dptr = spec::to_data_pointer(
                spec::sgl_descriptor::data_block(0, length, spec::sgl_descriptor_subtype::offset));
        } else {
            sqe.dptr =
                spec::to_data_pointer(spec::sgl_descriptor::transport_data_block(length, transport_subtype));
        }
        send_capsule(sqe, in_capsule ? write_data : std::span<const std::byte>{});
        for (;;) {
            const auto pdu = receive_pdu();
            switch (pdu.type()) {
            case spec::pdu_type::r2t: answer_r2t(pdu.header_as<spec::r2t_pdu>(), cid, write_data); break;
            case spec::pdu_type::c2h_data: {
                const auto header = pdu.header_as<spec::c2h_data_pdu>();
                const auto data = pdu.data();
                if (header.cccid != cid || header.datal != data.size() ||
                    std::uint64_t{header.datao} + header.datal > read_data.size()) {
                    throw host_error{"C2HData outside the command's data"};
                }
                std::memcpy(read_data.data() + header.datao, data.data(), data.size());
                ++c2h_data_received_;
                break;
            }
            case spec::pdu_type::capsule_resp: {
                const auto cqe = pdu.header_as<spec::capsule_resp_pdu>().cqe;
                if (cqe.cid != cid) {
                    throw host_error{"response for command " + std::to_string(cqe.cid) + ", not " +
                                     std::to_string(cid)};
                }
                if (cqe.sq_id != qid_) {
                    throw host_error{"response names SQ " + std::to_string(cqe.sq_id)};
                }
                return completion{cqe};
            }
            default: throw host_error{"unexpected PDU type " + std::string{spec::name(pdu.type())}};
            }
        }
    }

    /// Sends a CapsuleCmd carrying `sqe` as it is and `data` in the capsule.
    void send_capsule(const spec::submission_queue_entry& sqe, std::span<const std::byte> data)
    {
        const std::array<std::span<const std::byte>, 1> parts{data};
        const std::size_t size = transport::tcp::pdu_size(spec::pdu_type::capsule_cmd,
                                                          static_cast<std::uint32_t>(data.size()), params_);
        std::vector<std::byte> out(size);
        transport::tcp::encode_capsule_cmd(sqe, parts, params_, out);
        send_bytes(out);
    }

    void send_bytes(std::span<const std::byte> bytes)
    {
        while (!bytes.empty()) {
            const ssize_t sent = ::send(socket_.get(), bytes.data(), bytes.size(), MSG_NOSIGNAL);
            if (sent <= 0) {
                throw host_error{"send failed"};
            }
            bytes = bytes.subspan(static_cast<std::size_t>(sent));
        }
    }

    /// The next PDU, its digests checked; a C2HTermReq throws tcp_terminated (after it is kept in
    /// last_termination()).
    received_tcp_pdu receive_pdu()
    {
        received_tcp_pdu pdu;
        pdu.bytes.resize(sizeof(spec::pdu_common_header));
        receive_exactly(pdu.bytes);
        std::memcpy(&pdu.ch, pdu.bytes.data(), sizeof(pdu.ch));
        if (pdu.ch.plen < pdu.ch.hlen || pdu.ch.hlen < sizeof(spec::pdu_common_header) ||
            pdu.ch.plen > max_pdu_bytes) {
            throw host_error{"PDU lengths invalid"};
        }
        pdu.bytes.resize(pdu.ch.plen);
        receive_exactly(std::span{pdu.bytes}.subspan(sizeof(spec::pdu_common_header)));
        check_received(pdu.bytes, pdu.ch);
        return pdu;
    }

    // ---- pipelined use ---------------------------------------------------------------------

    /// Queues `sqe` without waiting for anything: its CID as the caller set it (unique among the
    /// commands outstanding here), PSDT 01b and its SGL set here; `write_data` goes in the
    /// capsule (it must fit: no R2T is answered here), `read_data` receives the C2HData and
    /// must stay valid until the command is reaped. flush() sends what is queued.
    void submit(spec::submission_queue_entry sqe, std::span<const std::byte> write_data,
                std::span<std::byte> read_data)
    {
        if (write_data.size() > in_capsule_limit_) {
            throw host_error{"a pipelined write must fit in its capsule"};
        }
        const std::uint16_t cid = sqe.cdw0.get(spec::command_dword0::cid);
        if (cid >= pipelined_.size()) {
            pipelined_.resize(std::size_t{cid} + 1U);
        }
        auto& command = pipelined_[cid];
        if (command.outstanding) {
            throw host_error{"CID " + std::to_string(cid) + " is outstanding already"};
        }
        command = {read_data, true};
        ++outstanding_;
        sqe.cdw0.set(spec::command_dword0::psdt, spec::data_pointer_type::sgl_contiguous_metadata);
        sqe.dptr = write_data.empty() ? spec::to_data_pointer(spec::sgl_descriptor::transport_data_block(
                                            static_cast<std::uint32_t>(read_data.size()), transport_subtype))
                                      : spec::to_data_pointer(spec::sgl_descriptor::data_block(
                                            0, static_cast<std::uint32_t>(write_data.size()),
                                            spec::sgl_descriptor_subtype::offset));
        const std::array<std::span<const std::byte>, 1> parts{write_data};
        const std::size_t start = send_batch_.size();
        send_batch_.resize(start + transport::tcp::pdu_size(spec::pdu_type::capsule_cmd,
                                                            static_cast<std::uint32_t>(write_data.size()),
                                                            params_));
        transport::tcp::encode_capsule_cmd(sqe, parts, params_, std::span{send_batch_}.subspan(start));
    }

    /// Sends every capsule submit() queued.
    void flush()
    {
        send_bytes(send_batch_);
        send_batch_.clear();
    }

    /// Receives what the target has sent (when `wait`, waiting up to options.timeout for it if
    /// nothing is there yet), copies C2HData into the buffers of their commands and calls
    /// `on_completion(const completion&)` for each response, in the order they came; returns how
    /// many. Every PDU is checked as receive_pdu() checks it.
    template <typename OnCompletion>
    std::size_t reap(OnCompletion&& on_completion, bool wait)
    {
        if (received_.empty()) {
            received_.resize(receive_buffer_bytes);
        }
        std::size_t completed = take_received(on_completion);
        for (;;) {
            // take_received() leaves room for the rest of the PDU it stopped at.
            const bool block = wait && completed == 0;
            const std::size_t room = received_.size() - received_end_;
            const ssize_t got =
                ::recv(socket_.get(), received_.data() + received_end_, room, block ? 0 : MSG_DONTWAIT);
            if (got == 0) {
                throw host_error{"the target closed the connection"};
            }
            if (got < 0) {
                if (errno == EINTR) {
                    continue;
                }
                if (!block && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                    return completed;
                }
                throw host_error{"receive failed or timed out"};
            }
            received_end_ += static_cast<std::size_t>(got);
            completed += take_received(on_completion);
            if (static_cast<std::size_t>(got) < room && completed != 0) {
                return completed;
            }
        }
    }

    /// Commands submitted and not reaped yet.
    [[nodiscard]] std::size_t outstanding() const noexcept { return outstanding_; }
    /// The connection's socket, to wait for several queues at once (poll(2)).
    [[nodiscard]] int native_handle() const noexcept { return socket_.get(); }

    /// Whether the target closed the connection (a read returns end of stream within the timeout).
    [[nodiscard]] bool closed_by_target()
    {
        std::array<std::byte, 256> scratch{};
        for (;;) {
            const ssize_t got = ::recv(socket_.get(), scratch.data(), scratch.size(), 0);
            if (got == 0) {
                return true;
            }
            if (got < 0) {
                return errno == ECONNRESET;
            }
        }
    }

    [[nodiscard]] const transport::tcp::connection_params& params() const noexcept { return params_; }
    [[nodiscard]] const std::optional<received_tcp_pdu>& last_termination() const noexcept
    {
        return last_termination_;
    }
    [[nodiscard]] std::size_t c2h_data_received() const noexcept { return c2h_data_received_; }
    [[nodiscard]] std::size_t h2c_data_sent() const noexcept { return h2c_data_sent_; }
    [[nodiscard]] std::size_t r2ts_received() const noexcept { return r2ts_received_; }
    /// The R2Ts execute() answered, in the order they came.
    [[nodiscard]] const std::vector<received_r2t>& r2ts() const noexcept { return r2ts_; }

    /// The SGL subtype NVMe/TCP gives Transport SGL Data Block descriptors.
    static constexpr auto transport_subtype = static_cast<spec::sgl_descriptor_subtype>(0xa);

private:
    static constexpr std::size_t max_pdu_bytes = std::size_t{64} << 20;

    received_tcp_pdu expect(spec::pdu_type type)
    {
        auto pdu = receive_pdu();
        if (pdu.type() != type) {
            throw host_error{"expected " + std::string{spec::name(type)} + ", got " +
                             std::string{spec::name(pdu.type())}};
        }
        return pdu;
    }

    void answer_r2t(const spec::r2t_pdu& r2t, std::uint16_t cid, std::span<const std::byte> data)
    {
        if (r2t.cccid != cid || r2t.r2tl == 0 || std::uint64_t{r2t.r2to} + r2t.r2tl > data.size()) {
            throw host_error{"R2T outside the command's data"};
        }
        ++r2ts_received_;
        r2ts_.push_back({r2t.cccid, r2t.ttag, r2t.r2to, r2t.r2tl});
        std::uint32_t offset = r2t.r2to;
        const std::uint32_t end = r2t.r2to + r2t.r2tl;
        std::vector<std::byte> out;
        while (offset < end) {
            const std::uint32_t chunk = std::min(end - offset, params_.maxh2cdata);
            const std::array<std::span<const std::byte>, 1> parts{data.subspan(offset, chunk)};
            out.resize(transport::tcp::pdu_size(spec::pdu_type::h2c_data, chunk, params_));
            transport::tcp::encode_h2c_data({cid, r2t.ttag, offset, offset + chunk == end}, parts, params_,
                                            out);
            send_bytes(out);
            ++h2c_data_sent_;
            offset += chunk;
        }
    }

    /// Checks the digests of the whole PDU `bytes` (common header `ch`); a C2HTermReq is kept
    /// in last_termination() and thrown as tcp_terminated.
    void check_received(std::span<const std::byte> bytes, const spec::pdu_common_header& ch)
    {
        if (ch.flags.get(spec::pdu_flags::hdgstf)) {
            const auto digest = bytes.subspan(ch.hlen).first<4>();
            if (transport::tcp::crc32c_of(bytes.first(ch.hlen)) != transport::tcp::load_digest(digest)) {
                throw host_error{"header digest error"};
            }
        }
        if (ch.flags.get(spec::pdu_flags::ddgstf)) {
            const auto digest = bytes.last<4>();
            if (transport::tcp::crc32c_of(received_tcp_pdu::data_of(bytes, ch)) !=
                transport::tcp::load_digest(digest)) {
                throw host_error{"data digest error"};
            }
        }
        if (ch.type == spec::pdu_type::c2h_term_req) {
            received_tcp_pdu pdu;
            pdu.bytes.assign(bytes.begin(), bytes.end());
            pdu.ch = ch;
            const auto term = pdu.header_as<spec::term_req_pdu>();
            last_termination_ = std::move(pdu);
            throw tcp_terminated{term.fes, term.error_information()};
        }
    }

    /// Handles every whole PDU received_ holds: C2HData into its command's buffer, a response to
    /// `on_completion`; returns how many responses.
    template <typename OnCompletion>
    std::size_t take_received(OnCompletion& on_completion)
    {
        std::size_t completed = 0;
        for (;;) {
            const std::size_t available = received_end_ - received_begin_;
            if (available < sizeof(spec::pdu_common_header)) {
                make_room(sizeof(spec::pdu_common_header));
                return completed;
            }
            spec::pdu_common_header ch{};
            std::memcpy(&ch, received_.data() + received_begin_, sizeof(ch));
            if (ch.plen < ch.hlen || ch.hlen < sizeof(spec::pdu_common_header) || ch.plen > max_pdu_bytes) {
                throw host_error{"PDU lengths invalid"};
            }
            if (available < ch.plen) {
                make_room(ch.plen);
                return completed;
            }
            const auto bytes = std::span<const std::byte>{received_}.subspan(received_begin_, ch.plen);
            received_begin_ += ch.plen;
            check_received(bytes, ch);
            const auto header_as = [&]<typename Pdu>(std::type_identity<Pdu>) {
                if (bytes.size() < sizeof(Pdu)) {
                    throw host_error{"PDU shorter than its header"};
                }
                Pdu pdu{};
                std::memcpy(&pdu, bytes.data(), sizeof(Pdu));
                return pdu;
            };
            switch (ch.type) {
            case spec::pdu_type::c2h_data: {
                const auto header = header_as(std::type_identity<spec::c2h_data_pdu>{});
                const auto data = received_tcp_pdu::data_of(bytes, ch);
                if (header.cccid >= pipelined_.size() || !pipelined_[header.cccid].outstanding ||
                    header.datal != data.size() ||
                    std::uint64_t{header.datao} + header.datal > pipelined_[header.cccid].read_data.size()) {
                    throw host_error{"C2HData outside the command's data"};
                }
                std::memcpy(pipelined_[header.cccid].read_data.data() + header.datao, data.data(),
                            data.size());
                ++c2h_data_received_;
                break;
            }
            case spec::pdu_type::capsule_resp: {
                const completion result{header_as(std::type_identity<spec::capsule_resp_pdu>{}).cqe};
                if (result.cqe.cid >= pipelined_.size() || !pipelined_[result.cqe.cid].outstanding) {
                    throw host_error{"response for command " + std::to_string(result.cqe.cid) +
                                     ", which is not outstanding"};
                }
                if (result.cqe.sq_id != qid_) {
                    throw host_error{"response names SQ " + std::to_string(result.cqe.sq_id)};
                }
                pipelined_[result.cqe.cid].outstanding = false;
                --outstanding_;
                ++completed;
                on_completion(result);
                break;
            }
            default: throw host_error{"unexpected PDU type " + std::string{spec::name(ch.type)}};
            }
        }
    }

    /// Moves what is left of received_ to its front when fewer than `needed` bytes fit after
    /// it, growing it for a PDU larger than it.
    void make_room(std::size_t needed)
    {
        if (received_.size() - received_begin_ >= needed) {
            return;
        }
        const std::size_t kept = received_end_ - received_begin_;
        std::memmove(received_.data(), received_.data() + received_begin_, kept);
        received_begin_ = 0;
        received_end_ = kept;
        if (received_.size() < needed) {
            received_.resize(needed);
        }
    }

    void receive_exactly(std::span<std::byte> out)
    {
        while (!out.empty()) {
            const ssize_t got = ::recv(socket_.get(), out.data(), out.size(), 0);
            if (got == 0) {
                throw host_error{"the target closed the connection"};
            }
            if (got < 0) {
                if (errno == EINTR) {
                    continue;
                }
                throw host_error{"receive failed or timed out"};
            }
            out = out.subspan(static_cast<std::size_t>(got));
        }
    }

    tcp_host_options options_;
    transport::tcp::unique_fd socket_;
    transport::tcp::connection_params params_{};
    std::uint16_t qid_ = 0;
    std::uint32_t in_capsule_limit_ = transport::tcp::admin_in_capsule_data_size;
    std::uint16_t next_cid_ = 1;
    std::optional<received_tcp_pdu> last_termination_;
    std::size_t c2h_data_received_ = 0;
    std::size_t h2c_data_sent_ = 0;
    std::size_t r2ts_received_ = 0;
    std::vector<received_r2t> r2ts_;

    /// A command submit() sent: where its read data goes.
    struct pipelined_command {
        std::span<std::byte> read_data{};
        bool outstanding = false;
    };
    static constexpr std::size_t receive_buffer_bytes = std::size_t{256} << 10;
    std::vector<pipelined_command> pipelined_; ///< indexed by CID
    std::size_t outstanding_ = 0;
    std::vector<std::byte> send_batch_;
    std::vector<std::byte> received_;
    std::size_t received_begin_ = 0;
    std::size_t received_end_ = 0;
};

/// A host of one controller over NVMe/TCP: an admin connection and I/O connections.
class tcp_host : public command_builders {
public:
    tcp_host(std::string address, std::uint16_t port, tcp_host_options options = {})
        : address_{std::move(address)}, port_{port}, options_{std::move(options)}
    {}

    /// Opens the admin connection and connects it (CNTLID FFFFh); returns the CNTLID granted.
    std::uint16_t connect_admin()
    {
        admin_ = std::make_unique<tcp_queue>(address_, port_, options_);
        admin_->initialize();
        const auto result = admin_->connect(0, options_.admin_entries, spec::dynamic_controller_id);
        if (!result.ok()) {
            throw host_error{"admin Connect failed"};
        }
        cntlid_ = spec::connect_response_dword0{result.cqe.dw0}.get(spec::connect_response_dword0::cntlid);
        return cntlid_;
    }

    [[nodiscard]] completion property_get(spec::register_offset offset, unsigned width = 4)
    {
        return admin().execute(property_command<spec::property_get_command>(offset, width), {}, {});
    }
    [[nodiscard]] completion property_set(spec::register_offset offset, std::uint64_t value,
                                          unsigned width = 4)
    {
        auto command = property_command<spec::property_set_command>(offset, width);
        command.cdw12 = static_cast<std::uint32_t>(value); // VALUE: bytes 55:48
        command.cdw13 = static_cast<std::uint32_t>(value >> 32);
        return admin().execute(command, {}, {});
    }
    std::uint64_t get_property(spec::register_offset offset, unsigned width = 4)
    {
        const auto result = property_get(offset, width);
        if (!result.ok()) {
            throw host_error{"Property Get failed"};
        }
        return spec::property_get_value(result.cqe);
    }
    void set_property(spec::register_offset offset, std::uint64_t value, unsigned width = 4)
    {
        if (!property_set(offset, value, width).ok()) {
            throw host_error{"Property Set failed"};
        }
    }

    /// Property Set CC.EN = 1 (64-byte SQEs, 16-byte CQEs), then Property Get CSTS until RDY.
    void enable()
    {
        set_property(spec::register_offset::cc, enabled_cc().raw);
        const auto deadline = std::chrono::steady_clock::now() + options_.timeout;
        while (
            !spec::csts_register{static_cast<std::uint32_t>(get_property(spec::register_offset::csts))}.get(
                spec::csts_register::rdy)) {
            if (std::chrono::steady_clock::now() > deadline) {
                throw host_error{"CSTS.RDY stayed 0"};
            }
        }
    }

    /// Identify Controller (CNS 01h).
    spec::identify_controller identify_controller()
    {
        std::array<std::byte, sizeof(spec::identify_controller)> data{};
        const auto result = admin().execute(identify_command(spec::cns::identify_controller, 0, 0), {}, data);
        if (!result.ok()) {
            throw host_error{"Identify Controller failed"};
        }
        return std::bit_cast<spec::identify_controller>(data);
    }

    /// Set Features Number of Queues, then Connect of I/O queue `qid` on a new connection.
    completion connect_io(std::uint16_t qid)
    {
        if (!queues_requested_) {
            const auto granted = admin().execute(
                set_features_command(spec::feature_id::number_of_queues,
                                     spec::number_of_queues::from_counts(max_io_queues, max_io_queues).raw),
                {}, {});
            if (!granted.ok()) {
                throw host_error{"Set Features Number of Queues failed"};
            }
            queues_requested_ = true;
        }
        auto queue = std::make_unique<tcp_queue>(address_, port_, options_);
        queue->initialize();
        const auto result = queue->connect(qid, options_.io_entries, cntlid_);
        if (result.ok()) {
            io_[qid] = std::move(queue);
        }
        return result;
    }

    /// Write of `data` (a multiple of 512 bytes) at `slba` of namespace 1 through I/O queue `qid`.
    completion write(std::uint16_t qid, std::uint64_t slba, std::span<const std::byte> data)
    {
        const auto blocks = static_cast<std::uint32_t>(data.size() / 512);
        return io(qid).execute(lba_command(spec::nvm_opcode::write, 1, slba, blocks), data, {});
    }
    /// Read of `blocks` 512-byte blocks at `slba` into `out` (resized).
    completion read(std::uint16_t qid, std::uint64_t slba, std::uint32_t blocks, std::vector<std::byte>& out)
    {
        out.assign(std::size_t{blocks} * 512U, std::byte{0});
        return io(qid).execute(lba_command(spec::nvm_opcode::read, 1, slba, blocks), {}, out);
    }

    [[nodiscard]] tcp_queue& admin()
    {
        if (!admin_) {
            throw host_error{"no admin connection"};
        }
        return *admin_;
    }
    [[nodiscard]] tcp_queue& io(std::uint16_t qid)
    {
        const auto it = io_.find(qid);
        if (it == io_.end()) {
            throw host_error{"I/O queue " + std::to_string(qid) + " not connected"};
        }
        return *it->second;
    }
    [[nodiscard]] std::uint16_t cntlid() const noexcept { return cntlid_; }

    static constexpr std::uint16_t max_io_queues = 4;

private:
    /// Property Get or Set (`Command`) of `width` bytes at `offset`, as an SQE.
    template <typename Command>
    [[nodiscard]] static spec::submission_queue_entry property_command(spec::register_offset offset,
                                                                       unsigned width)
    {
        Command command{};
        command.cdw0.set(spec::command_dword0::opc, spec::fabrics_command_opcode);
        command.fctype = Command::command_type;
        command.attrib.set(spec::property_attributes::size,
                           width == 8 ? spec::property_size::eight_bytes : spec::property_size::four_bytes);
        command.ofst = static_cast<std::uint32_t>(offset);
        return std::bit_cast<spec::submission_queue_entry>(command);
    }

    std::string address_;
    std::uint16_t port_;
    tcp_host_options options_;
    std::unique_ptr<tcp_queue> admin_;
    std::map<std::uint16_t, std::unique_ptr<tcp_queue>> io_;
    std::uint16_t cntlid_ = 0;
    bool queues_requested_ = false;
};

} // namespace testing
NVMEKIT_END_NAMESPACE
