#include <nvmekit/testing/tcp_host.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <span>
#include <stdexcept>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <nvmekit/transport/tcp/pdu_stream.hpp>

// The initiator against a scripted target on a loopback socket: the target's side of each
// exchange is written out by hand, and what the initiator sent is checked by a pdu_stream.

namespace {
namespace testing_tcp_host_test {

namespace spec = nvmekit::spec;
namespace tcp = nvmekit::transport::tcp;
using nvmekit::testing::host_error;
using nvmekit::testing::tcp_queue;
using nvmekit::testing::tcp_terminated;

/// A listening socket whose one connection is served by `script` on a thread of its own.
class scripted_target {
public:
    explicit scripted_target(std::function<void(scripted_target&)> script) : script_{std::move(script)}
    {
        listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t length = sizeof(address);
        if (::bind(listener_, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0 ||
            ::listen(listener_, 1) != 0 ||
            ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
            throw std::runtime_error{"scripted_target: cannot listen"};
        }
        port_ = ntohs(address.sin_port);
        thread_ = std::thread{[this] {
            fd_ = ::accept(listener_, nullptr, nullptr);
            script_(*this);
            ::shutdown(fd_, SHUT_RDWR);
        }};
    }
    scripted_target(const scripted_target&) = delete;
    scripted_target& operator=(const scripted_target&) = delete;
    ~scripted_target()
    {
        thread_.join();
        ::close(fd_);
        ::close(listener_);
    }

    [[nodiscard]] std::uint16_t port() const { return port_; }

    void send(std::span<const std::byte> bytes) const
    {
        while (!bytes.empty()) {
            const ssize_t sent = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
            if (sent <= 0) {
                return;
            }
            bytes = bytes.subspan(static_cast<std::size_t>(sent));
        }
    }

    /// Feeds the initiator's bytes to the stream until it reports something other than need_more.
    tcp::stream_event next(tcp::pdu_stream& stream, std::vector<std::byte>* data = nullptr)
    {
        for (;;) {
            if (pending_.empty()) {
                std::array<std::byte, 4096> chunk{};
                const ssize_t got = ::recv(fd_, chunk.data(), chunk.size(), 0);
                if (got <= 0) {
                    return tcp::stream_event::closed;
                }
                pending_.assign(chunk.begin(), chunk.begin() + got);
            }
            const auto step = stream.feed(pending_);
            pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(step.consumed));
            if (step.event == tcp::stream_event::header && stream.data_length() != 0) {
                if (data != nullptr) {
                    data->resize(stream.data_length());
                    stream.place_data(*data);
                } else {
                    stream.discard_data();
                }
                continue;
            }
            if (step.event != tcp::stream_event::need_more) {
                return step.event;
            }
        }
    }

    /// Takes the ICReq and answers with `params`.
    void accept_icreq(tcp::pdu_stream& stream, const tcp::connection_params& params)
    {
        if (next(stream) != tcp::stream_event::header || stream.type() != spec::pdu_type::icreq) {
            throw std::runtime_error{"no ICReq"};
        }
        std::array<std::byte, sizeof(spec::icresp_pdu)> icresp{};
        tcp::encode_icresp(params, icresp);
        send(icresp);
        stream.establish(params);
    }

private:
    std::function<void(scripted_target&)> script_;
    int listener_ = -1;
    int fd_ = -1;
    std::uint16_t port_ = 0;
    std::thread thread_;
    std::vector<std::byte> pending_;
};

std::vector<std::byte> capsule_resp(std::uint16_t cid, const tcp::connection_params& params)
{
    spec::completion_queue_entry cqe{};
    cqe.cid = cid;
    std::vector<std::byte> out(tcp::pdu_size(spec::pdu_type::capsule_resp, 0, params));
    tcp::encode_capsule_resp(cqe, params, out);
    return out;
}

TEST(tcp_host, refuses_an_icresp_granting_other_digests)
{
    scripted_target target{[](scripted_target& self) {
        tcp::pdu_stream stream;
        self.accept_icreq(stream, tcp::connection_params{}); // no digests, although asked
    }};
    tcp_queue queue{"127.0.0.1", target.port(), {.header_digest = true}};
    EXPECT_THROW(queue.initialize(), host_error);
}

TEST(tcp_host, answers_an_r2t_with_h2c_data_split_at_maxh2cdata)
{
    struct seen {
        std::uint32_t sgl_length = 0;
        spec::sgl_descriptor_type sgl_type{};
        std::vector<spec::h2c_data_pdu> h2c;
        std::vector<std::byte> data;
    } seen;
    const tcp::connection_params params{.maxh2cdata = 4096};
    scripted_target target{[&](scripted_target& self) {
        tcp::pdu_stream stream;
        self.accept_icreq(stream, params);
        if (self.next(stream) != tcp::stream_event::header || stream.type() != spec::pdu_type::capsule_cmd) {
            return;
        }
        const auto sqe = stream.capsule_cmd().sqe;
        const auto sgl = spec::to_sgl_descriptor(sqe.dptr);
        seen.sgl_length = sgl.length;
        seen.sgl_type = sgl.type();
        const std::uint16_t cid = sqe.cdw0.get(spec::command_dword0::cid);
        std::vector<std::byte> r2t(tcp::pdu_size(spec::pdu_type::r2t, 0, params));
        tcp::encode_r2t({.cccid = cid, .ttag = 7, .r2to = 0, .r2tl = sgl.length}, params, r2t);
        self.send(r2t);
        seen.data.resize(sgl.length);
        tcp::r2t_window window{cid, 7, 0, sgl.length, 0};
        while (window.received < window.r2tl) {
            std::vector<std::byte> part;
            if (self.next(stream, &part) != tcp::stream_event::data) {
                return;
            }
            const auto h2c = stream.h2c_data();
            if (tcp::check_h2c_data(h2c, window)) {
                return;
            }
            seen.h2c.push_back(h2c);
            std::memcpy(seen.data.data() + h2c.datao, part.data(), part.size());
            window.received += h2c.datal;
        }
        self.send(capsule_resp(cid, params));
    }};
    tcp_queue queue{"127.0.0.1", target.port(), {}};
    queue.initialize();
    std::vector<std::byte> data(10000);
    for (std::size_t i = 0; i < data.size(); ++i) {
        data[i] = static_cast<std::byte>(i * 7);
    }
    auto sqe = nvmekit::testing::command_builders::lba_command(spec::nvm_opcode::write, 1, 0, 20);
    EXPECT_TRUE(queue.execute(sqe, data, {}).ok());
    EXPECT_EQ(seen.sgl_type, spec::sgl_descriptor_type::transport_data_block);
    EXPECT_EQ(seen.sgl_length, 10000U);
    ASSERT_EQ(seen.h2c.size(), 3U);
    EXPECT_EQ(seen.h2c[0].datal, 4096U);
    EXPECT_EQ(seen.h2c[2].datao, 8192U);
    EXPECT_EQ(seen.h2c[2].datal, 10000U - 8192U);
    EXPECT_FALSE(seen.h2c[0].ch.flags.get(spec::pdu_flags::last_pdu));
    EXPECT_TRUE(seen.h2c[2].ch.flags.get(spec::pdu_flags::last_pdu));
    EXPECT_EQ(seen.data, data);
    EXPECT_EQ(queue.h2c_data_sent(), 3U);
}

TEST(tcp_host, reports_c2h_term_req_with_its_status_and_field)
{
    scripted_target target{[](scripted_target& self) {
        tcp::pdu_stream stream;
        self.accept_icreq(stream, {});
        static_cast<void>(self.next(stream));
        std::array<std::byte, spec::tcp_term_req_max_length> term{};
        const auto size = tcp::encode_c2h_term_req(tcp::invalid_header_field(tcp::header_offset::pdo),
                                                   stream.header_bytes(), term);
        self.send(std::span{term}.first(size));
    }};
    tcp_queue queue{"127.0.0.1", target.port(), {}};
    queue.initialize();
    try {
        static_cast<void>(
            queue.execute(nvmekit::testing::command_builders::command(spec::nvm_opcode::flush, 1), {}, {}));
        FAIL() << "no termination reported";
    } catch (const tcp_terminated& terminated) {
        EXPECT_EQ(terminated.status(), spec::fatal_error_status::invalid_pdu_header_field);
        EXPECT_EQ(terminated.information(), tcp::header_offset::pdo);
    }
    ASSERT_TRUE(queue.last_termination().has_value());
    EXPECT_EQ(queue.last_termination()->data().size(), sizeof(spec::capsule_cmd_pdu));
}

TEST(tcp_host, keeps_commands_outstanding_and_reaps_them_in_the_order_answered)
{
    const tcp::connection_params params{};
    std::vector<std::uint16_t> capsules;
    std::vector<std::uint32_t> in_capsule;
    scripted_target target{[&](scripted_target& self) {
        tcp::pdu_stream stream;
        self.accept_icreq(stream, params);
        for (int i = 0; i < 3; ++i) {
            std::vector<std::byte> data;
            const auto event = self.next(stream, &data);
            if (event != tcp::stream_event::header && event != tcp::stream_event::data) {
                return;
            }
            capsules.push_back(stream.capsule_cmd().sqe.cdw0.get(spec::command_dword0::cid));
            in_capsule.push_back(static_cast<std::uint32_t>(data.size()));
        }
        // Command 7 first, its data in two C2HData; then 5 (a write, no data back); then 6.
        const auto c2h = [&](std::uint16_t cid, std::uint32_t offset, std::uint32_t length, std::byte fill) {
            const std::vector<std::byte> data(length, fill);
            const std::array<std::span<const std::byte>, 1> parts{data};
            std::vector<std::byte> out(tcp::pdu_size(spec::pdu_type::c2h_data, length, params));
            tcp::encode_c2h_data({cid, offset, offset + length == 1024, false}, parts, params, out);
            self.send(out);
        };
        c2h(7, 0, 512, std::byte{0x77});
        c2h(7, 512, 512, std::byte{0x78});
        self.send(capsule_resp(7, params));
        self.send(capsule_resp(5, params));
        c2h(6, 0, 1024, std::byte{0x66});
        self.send(capsule_resp(6, params));
    }};
    tcp_queue queue{"127.0.0.1", target.port(), {}};
    queue.initialize();
    const auto read = [](std::uint16_t cid) {
        auto sqe = nvmekit::testing::command_builders::lba_command(spec::nvm_opcode::read, 1, 0, 2);
        sqe.cdw0.set(spec::command_dword0::cid, cid);
        return sqe;
    };
    auto write = nvmekit::testing::command_builders::lba_command(spec::nvm_opcode::write, 1, 0, 1);
    write.cdw0.set(spec::command_dword0::cid, 5);
    const std::vector<std::byte> written(512, std::byte{0x55});
    std::vector<std::byte> six(1024);
    std::vector<std::byte> seven(1024);
    queue.submit(write, written, {});
    queue.submit(read(6), {}, six);
    queue.submit(read(7), {}, seven);
    EXPECT_THROW(queue.submit(read(7), {}, seven), host_error);
    EXPECT_EQ(queue.outstanding(), 3U);
    queue.flush();
    std::vector<std::uint16_t> reaped;
    while (reaped.size() < 3) {
        queue.reap(
            [&](const nvmekit::testing::completion& done) {
                EXPECT_TRUE(done.ok());
                reaped.push_back(done.cqe.cid);
            },
            true);
    }
    EXPECT_EQ(reaped, (std::vector<std::uint16_t>{7, 5, 6}));
    EXPECT_EQ(capsules, (std::vector<std::uint16_t>{5, 6, 7}));
    EXPECT_EQ(in_capsule, (std::vector<std::uint32_t>{512, 0, 0}));
    EXPECT_EQ(queue.outstanding(), 0U);
    EXPECT_EQ(queue.c2h_data_received(), 3U);
    EXPECT_EQ(six, std::vector<std::byte>(1024, std::byte{0x66}));
    EXPECT_EQ(std::vector<std::byte>(seven.begin(), seven.begin() + 512),
              std::vector<std::byte>(512, std::byte{0x77}));
    EXPECT_EQ(std::vector<std::byte>(seven.begin() + 512, seven.end()),
              std::vector<std::byte>(512, std::byte{0x78}));
}

TEST(tcp_host, refuses_a_response_to_no_outstanding_command)
{
    scripted_target target{[](scripted_target& self) {
        tcp::pdu_stream stream;
        self.accept_icreq(stream, {});
        static_cast<void>(self.next(stream));
        self.send(capsule_resp(9, {}));
    }};
    tcp_queue queue{"127.0.0.1", target.port(), {}};
    queue.initialize();
    auto flush = nvmekit::testing::command_builders::command(spec::nvm_opcode::flush, 1);
    flush.cdw0.set(spec::command_dword0::cid, 3);
    queue.submit(flush, {}, {});
    queue.flush();
    EXPECT_THROW(queue.reap([](const nvmekit::testing::completion&) {}, true), host_error);
}

} // namespace testing_tcp_host_test
} // namespace
