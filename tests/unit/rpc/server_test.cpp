#include <nvmekit/rpc/server.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <future>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>
#include <fcntl.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>
#include <gtest/gtest.h>
#include <nvmekit/testing/manual_clock.hpp>

namespace {
namespace rpc_server_test {

namespace rpc = nvmekit::rpc;
using nlohmann::json;
using namespace std::chrono_literals;

bool path_exists(const std::string& path)
{
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0;
}

/// How long a test waits for something that should happen at once: long enough that no load
/// makes it pass unnoticed, so it only stops a test that would otherwise hang.
constexpr auto hang_guard = 30s;

/// Polls `condition` until it holds, for up to hang_guard.
template <typename Condition>
bool eventually(Condition condition)
{
    const auto deadline = std::chrono::steady_clock::now() + hang_guard;
    while (!condition()) {
        if (std::chrono::steady_clock::now() > deadline) {
            return false;
        }
        std::this_thread::sleep_for(1ms);
    }
    return true;
}

/// A blocking client socket with a line reader (responses are one line each).
class test_client {
public:
    /// A socket, not connected yet.
    test_client() : fd_{::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)}
    {
        if (fd_ < 0) {
            throw std::runtime_error(std::string{"socket: "} + std::strerror(errno));
        }
    }
    explicit test_client(const std::string& path) : test_client{} { connect(path); }

    /// Connects (which takes no new descriptor).
    void connect(const std::string& path) const
    {
        sockaddr_un address{};
        address.sun_family = AF_UNIX;
        std::strncpy(address.sun_path, path.c_str(), sizeof address.sun_path - 1);
        if (::connect(fd_, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
            throw std::runtime_error(std::string{"connect: "} + std::strerror(errno));
        }
    }
    test_client(const test_client&) = delete;
    test_client& operator=(const test_client&) = delete;
    ~test_client() { close(); }

    void close()
    {
        if (fd_ >= 0) {
            ::close(fd_);
            fd_ = -1;
        }
    }

    void shutdown_write() const { ::shutdown(fd_, SHUT_WR); }

    /// Sends everything; false when the server closed the connection.
    bool send(const std::string& bytes) const
    {
        std::size_t done = 0;
        while (done < bytes.size()) {
            const ssize_t sent = ::send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
            if (sent < 0) {
                if (errno == EINTR) {
                    continue;
                }
                return false;
            }
            done += static_cast<std::size_t>(sent);
        }
        return true;
    }

    /// The next response line, parsed; nothing on end of stream, error or hang_guard without one.
    std::optional<json> read_response()
    {
        for (;;) {
            if (const auto newline = buffer_.find('\n'); newline != std::string::npos) {
                const std::string line = buffer_.substr(0, newline);
                buffer_.erase(0, newline + 1);
                return json::parse(line);
            }
            if (!fill(static_cast<int>(std::chrono::milliseconds{hang_guard}.count()))) {
                return std::nullopt;
            }
        }
    }

    /// Reads until the server closes the connection (end of stream or reset); false after
    /// hang_guard.
    bool wait_closed()
    {
        const auto deadline = std::chrono::steady_clock::now() + hang_guard;
        while (std::chrono::steady_clock::now() < deadline) {
            if (!fill(100)) {
                if (closed_) {
                    return true;
                }
            }
        }
        return false;
    }

    /// Whether nothing arrives within `ms`.
    bool quiet_for(int ms)
    {
        const std::size_t before = buffer_.size();
        fill(ms);
        return buffer_.size() == before && !closed_;
    }

    [[nodiscard]] std::size_t received() const { return received_; }

private:
    bool fill(int timeout_ms)
    {
        pollfd p{fd_, POLLIN, 0};
        if (::poll(&p, 1, timeout_ms) <= 0) {
            return false;
        }
        char chunk[65536];
        const ssize_t got = ::recv(fd_, chunk, sizeof chunk, 0);
        if (got <= 0) {
            closed_ = true;
            return false;
        }
        received_ += static_cast<std::size_t>(got);
        buffer_.append(chunk, static_cast<std::size_t>(got));
        return true;
    }

    int fd_;
    std::string buffer_;
    std::size_t received_ = 0;
    bool closed_ = false;
};

std::string request(const std::string& method, const json& id, const json& params = nullptr)
{
    json r = {{"jsonrpc", "2.0"}, {"method", method}, {"id", id}};
    if (!params.is_null()) {
        r["params"] = params;
    }
    return r.dump(2); // as rpc.py sends it
}

struct server_fixture : ::testing::Test {
    std::string directory;
    std::string path;
    rpc::registry methods;
    std::atomic<int> echo_calls{0};

    void SetUp() override
    {
        std::string pattern = "/tmp/nvmekit-rpc-XXXXXX";
        ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
        directory = pattern;
        path = directory + "/rpc.sock";
        methods.add("echo", [this](const json& params) -> rpc::outcome {
            ++echo_calls;
            return params;
        });
        methods.add("big", [](const json& params) -> rpc::outcome {
            auto [bytes] = rpc::params{params}.read(rpc::required<std::size_t>("bytes"));
            return std::string(bytes, 'b');
        });
    }
    void TearDown() override
    {
        ::unlink(path.c_str());
        ::unlink((directory + "/file").c_str());
        ::rmdir(directory.c_str());
    }

    rpc::server_options options() const
    {
        rpc::server_options o;
        o.socket_path = path;
        return o;
    }

    /// options() on `clock`'s time.
    rpc::server_options options_on(const nvmekit::testing::manual_clock& clock) const
    {
        auto o = options();
        o.clock = [&clock] { return clock.now(); };
        return o;
    }
};

/// Sends an echo request with `id` and reads its response: one round of the server's loop at
/// least, after everything sent before it on any connection has been read.
void round_trip(test_client& client, int id)
{
    ASSERT_TRUE(client.send(request("echo", id)));
    const auto response = client.read_response();
    ASSERT_TRUE(response);
    EXPECT_EQ((*response)["id"], id);
}

TEST_F(server_fixture, default_socket_path_is_in_the_runtime_directory)
{
    const uid_t me = ::geteuid();
    EXPECT_EQ(rpc::default_socket_path(directory.c_str(), me), directory + "/nvmekit.sock");
    EXPECT_EQ(rpc::default_socket_path((directory + "/").c_str(), me), directory + "/nvmekit.sock");
    std::ofstream{directory + "/file"} << "not a directory";
    const uid_t stranger = me == 65534 ? 65533 : 65534;
    // Without an absolute path of an existing directory: /run for root, nothing for another user
    // (never a world-writable directory such as /var/tmp).
    for (const std::string& unusable :
         {std::string{}, std::string{"relative"}, directory + "/missing", directory + "/file"}) {
        EXPECT_EQ(rpc::default_socket_path(unusable.c_str(), 0), "/run/nvmekit.sock") << unusable;
        EXPECT_EQ(rpc::default_socket_path(unusable.c_str(), stranger), std::nullopt) << unusable;
    }
    EXPECT_EQ(rpc::default_socket_path(nullptr, 0), "/run/nvmekit.sock");
    EXPECT_EQ(rpc::default_socket_path(nullptr, stranger), std::nullopt);
    // Another user's directory is not this user's runtime directory.
    EXPECT_EQ(rpc::default_socket_path(directory.c_str(), stranger), std::nullopt);
    if (me != 0) {
        EXPECT_EQ(rpc::default_socket_path(directory.c_str(), 0), "/run/nvmekit.sock");
    }
}

TEST_F(server_fixture, without_a_path_it_listens_in_the_runtime_directory)
{
    const char* previous = std::getenv("XDG_RUNTIME_DIR");
    const std::optional<std::string> saved =
        previous != nullptr ? std::optional<std::string>{previous} : std::nullopt;
    ASSERT_EQ(::setenv("XDG_RUNTIME_DIR", directory.c_str(), 1), 0);
    rpc::server server{methods};
    if (saved) {
        ::setenv("XDG_RUNTIME_DIR", saved->c_str(), 1);
    } else {
        ::unsetenv("XDG_RUNTIME_DIR");
    }
    EXPECT_EQ(server.socket_path(), directory + "/nvmekit.sock");
    server.start();
    test_client client{directory + "/nvmekit.sock"};
    round_trip(client, 1);
    server.stop();
    EXPECT_FALSE(path_exists(directory + "/nvmekit.sock"));
}

TEST_F(server_fixture, answers_and_removes_its_socket_when_stopped)
{
    rpc::server server{methods, options()};
    server.start();
    EXPECT_TRUE(path_exists(path));
    ASSERT_TRUE(eventually([&] { return server.running(); }));
    test_client client{path};
    ASSERT_TRUE(client.send(request("rpc_get_methods", 1)));
    const auto response = client.read_response();
    ASSERT_TRUE(response);
    EXPECT_EQ(*response,
              json::parse(R"({"jsonrpc": "2.0", "id": 1, "result": ["rpc_get_methods", "echo", "big"]})"));
    server.stop();
    EXPECT_FALSE(server.running());
    EXPECT_FALSE(path_exists(path));
    EXPECT_TRUE(client.wait_closed());
}

TEST_F(server_fixture, two_clients_at_once)
{
    rpc::server server{methods, options()};
    server.start();
    test_client a{path};
    test_client b{path};
    const std::string from_a = request("echo", "a-1", {{"who", "a"}});
    ASSERT_TRUE(a.send(from_a.substr(0, 20)));
    // b is answered while a's request is incomplete, several requests in one write, in order.
    ASSERT_TRUE(b.send(request("echo", 1, {{"n", 1}}) + "\n" + request("echo", 2, {{"n", 2}})));
    auto response = b.read_response();
    ASSERT_TRUE(response);
    EXPECT_EQ((*response)["id"], 1);
    response = b.read_response();
    ASSERT_TRUE(response);
    EXPECT_EQ((*response)["id"], 2);
    EXPECT_EQ((*response)["result"]["n"], 2);
    EXPECT_TRUE(a.quiet_for(20));
    ASSERT_TRUE(a.send(from_a.substr(20)));
    response = a.read_response();
    ASSERT_TRUE(response);
    EXPECT_EQ((*response)["id"], "a-1");
    EXPECT_EQ((*response)["result"]["who"], "a");
    EXPECT_EQ(server.statistics().clients_connected, 2U);
}

TEST_F(server_fixture, client_disconnecting_mid_request_harms_nobody)
{
    rpc::server server{methods, options()};
    server.start();
    test_client b{path};
    {
        test_client a{path};
        ASSERT_TRUE(a.send(request("echo", 1).substr(0, 25)));
        ASSERT_TRUE(eventually([&] { return server.statistics().clients_connected == 2; }));
    }
    ASSERT_TRUE(eventually([&] { return server.statistics().clients_lost == 1; }));
    EXPECT_EQ(echo_calls.load(), 0);
    ASSERT_TRUE(b.send(request("echo", 7, {{"x", 1}})));
    const auto response = b.read_response();
    ASSERT_TRUE(response);
    EXPECT_EQ((*response)["id"], 7);
    EXPECT_EQ(server.statistics().clients_connected, 1U);
}

TEST_F(server_fixture, complete_requests_before_the_client_closes_its_side_are_answered)
{
    rpc::server server{methods, options()};
    server.start();
    test_client a{path};
    ASSERT_TRUE(a.send(request("echo", 1) + request("echo", 2)));
    a.shutdown_write(); // no more requests, responses still wanted
    const auto first = a.read_response();
    const auto second = a.read_response();
    ASSERT_TRUE(first && second);
    EXPECT_EQ((*first)["id"], 1);
    EXPECT_EQ((*second)["id"], 2);
    EXPECT_TRUE(a.wait_closed());
}

TEST_F(server_fixture, notification_gets_no_response)
{
    rpc::server server{methods, options()};
    server.start();
    test_client a{path};
    json notification = json::parse(request("echo", 0));
    notification.erase("id");
    ASSERT_TRUE(a.send(notification.dump() + request("echo", 2)));
    const auto response = a.read_response();
    ASSERT_TRUE(response);
    EXPECT_EQ((*response)["id"], 2);
    EXPECT_EQ(echo_calls.load(), 2);
}

TEST_F(server_fixture, garbage_gets_a_parse_error_and_the_connection_is_closed)
{
    rpc::server server{methods, options()};
    server.start();
    test_client a{path};
    test_client b{path};
    ASSERT_TRUE(a.send(request("echo", 1) + "\n}{"));
    auto response = a.read_response();
    ASSERT_TRUE(response);
    EXPECT_EQ((*response)["id"], 1);
    response = a.read_response();
    ASSERT_TRUE(response);
    EXPECT_EQ((*response)["id"], nullptr);
    EXPECT_EQ((*response)["error"]["code"], -32700);
    EXPECT_TRUE(a.wait_closed());
    ASSERT_TRUE(b.send(request("echo", 3)));
    response = b.read_response();
    ASSERT_TRUE(response);
    EXPECT_EQ((*response)["id"], 3);
    EXPECT_EQ(server.statistics().parse_errors, 1U);
}

// A number beyond a double (nlohmann_json throws out_of_range, not parse_error) gets a Parse
// Error and closes that connection; the server and its other clients go on.
TEST_F(server_fixture, number_out_of_range_gets_a_parse_error_and_the_server_goes_on)
{
    rpc::server server{methods, options()};
    server.start();
    test_client a{path};
    test_client b{path};
    ASSERT_TRUE(a.send(R"({"jsonrpc":"2.0","method":"spdk_get_version","id":1e400})"));
    auto response = a.read_response();
    ASSERT_TRUE(response);
    EXPECT_EQ((*response)["id"], nullptr);
    EXPECT_EQ((*response)["error"]["code"], -32700);
    EXPECT_TRUE(a.wait_closed());
    EXPECT_TRUE(server.running());
    ASSERT_TRUE(
        b.send(R"({"jsonrpc":"2.0","method":"echo","params":[)" + std::string(400, '1') + "],\"id\":4}"));
    response = b.read_response();
    ASSERT_TRUE(response);
    EXPECT_EQ((*response)["error"]["code"], -32700);
    test_client c{path};
    ASSERT_TRUE(c.send(request("echo", 5)));
    response = c.read_response();
    ASSERT_TRUE(response);
    EXPECT_EQ((*response)["id"], 5);
    EXPECT_EQ(server.statistics().parse_errors, 2U);
}

TEST_F(server_fixture, huge_request_is_refused_and_the_connection_closed)
{
    auto o = options();
    o.limits.max_request_bytes = 1 << 20;
    rpc::server server{methods, o};
    server.start();
    test_client a{path};
    test_client b{path};
    std::thread sender{[&] {
        // Fails part way once the server has closed the connection.
        (void)a.send(R"({"jsonrpc": "2.0", "id": 1, "method": "echo", "params": {"data": ")" +
                     std::string(std::size_t{8} << 20, 'x') + "\"}}");
    }};
    const auto response = a.read_response();
    sender.join();
    ASSERT_TRUE(response);
    EXPECT_EQ((*response)["id"], nullptr);
    EXPECT_EQ((*response)["error"]["code"], -32700);
    EXPECT_EQ((*response)["error"]["message"], "request is longer than 1048576 bytes");
    EXPECT_TRUE(a.wait_closed());
    EXPECT_EQ(echo_calls.load(), 0);
    ASSERT_TRUE(b.send(request("echo", 2)));
    ASSERT_TRUE(b.read_response());
}

TEST_F(server_fixture, client_that_never_reads_is_dropped_past_the_output_bound)
{
    auto o = options();
    o.max_output_bytes = 1 << 20;
    rpc::server server{methods, o};
    server.start();
    test_client slow{path};
    test_client other{path};
    constexpr std::size_t response_bytes = 256 * 1024;
    constexpr int requests = 64; // 16 MiB of responses asked for
    std::string burst;
    for (int i = 0; i < requests; ++i) {
        burst += request("big", i, {{"bytes", response_bytes}});
    }
    ASSERT_TRUE(slow.send(burst));
    ASSERT_TRUE(eventually([&] { return server.statistics().slow_clients_dropped == 1; }));
    // The other client is served meanwhile and after.
    ASSERT_TRUE(other.send(request("echo", 1)));
    ASSERT_TRUE(other.read_response());
    // What reached the slow client is what the socket held plus at most the bound, then the end.
    EXPECT_TRUE(slow.wait_closed());
    EXPECT_LT(slow.received(), (std::size_t{1} << 20) + (std::size_t{4} << 20));
    EXPECT_LT(server.statistics().responses, static_cast<std::uint64_t>(requests));
}

TEST_F(server_fixture, slow_reader_within_the_bound_gets_everything)
{
    auto o = options();
    o.max_output_bytes = 4 << 20;
    rpc::server server{methods, o};
    server.start();
    test_client client{path};
    std::string burst;
    for (int i = 0; i < 8; ++i) {
        burst += request("big", i, {{"bytes", 256 * 1024}});
    }
    ASSERT_TRUE(client.send(burst));
    std::this_thread::sleep_for(50ms); // let the responses pile up
    for (int i = 0; i < 8; ++i) {
        const auto response = client.read_response();
        ASSERT_TRUE(response) << i;
        EXPECT_EQ((*response)["id"], i);
        EXPECT_EQ((*response)["result"].get<std::string>().size(), 256U * 1024U);
    }
    EXPECT_EQ(server.statistics().slow_clients_dropped, 0U);
}

TEST_F(server_fixture, stop_while_clients_are_connected)
{
    rpc::server server{methods, options()};
    server.start();
    test_client idle{path};
    test_client partial{path};
    test_client not_reading{path};
    ASSERT_TRUE(partial.send(request("echo", 1).substr(0, 10)));
    std::string burst;
    for (int i = 0; i < 16; ++i) {
        burst += request("big", i, {{"bytes", 256 * 1024}});
    }
    ASSERT_TRUE(not_reading.send(burst));
    ASSERT_TRUE(eventually([&] { return server.statistics().clients_connected == 3; }));
    // Every response is queued for the client that does not read: 4 MiB, more than its socket holds.
    ASSERT_TRUE(eventually([&] { return server.statistics().responses == 16; }));
    // stop() waits for none of them: not for the partial request to complete, nor for the client
    // that does not read to take its responses (it never would, so a stop() that waited for it
    // would not return at all while the clients stay).
    std::promise<void> stopped;
    auto stop_returned = stopped.get_future();
    std::thread stopper{[&] {
        server.stop();
        stopped.set_value();
    }};
    const bool returned = stop_returned.wait_for(hang_guard) == std::future_status::ready;
    if (!returned) {
        not_reading.close(); // lets a stop() that waits for its clients return, to report it
        partial.close();
        idle.close();
    }
    stopper.join();
    ASSERT_TRUE(returned) << "stop() waited for its clients";
    EXPECT_FALSE(server.running());
    EXPECT_FALSE(path_exists(path));
    EXPECT_EQ(server.statistics().clients_connected, 0U);
    EXPECT_TRUE(idle.wait_closed());
    EXPECT_TRUE(partial.wait_closed());
    EXPECT_TRUE(not_reading.wait_closed());
    // The responses not sent by then are lost: the client gets what its socket held, not 4 MiB.
    EXPECT_LT(not_reading.received(), std::size_t{16} * 256 * 1024);
    // And it starts again.
    server.start();
    test_client again{path};
    ASSERT_TRUE(again.send(request("echo", 5)));
    ASSERT_TRUE(again.read_response());
}

TEST_F(server_fixture, stop_from_a_handler_still_answers_it)
{
    rpc::server* self = nullptr;
    methods.add("shutdown", [&self](const json&) -> rpc::outcome {
        self->stop();
        return true;
    });
    rpc::server server{methods, options()};
    self = &server;
    server.start();
    test_client client{path};
    ASSERT_TRUE(client.send(request("shutdown", 1)));
    const auto response = client.read_response();
    ASSERT_TRUE(response);
    EXPECT_EQ((*response)["result"], true);
    EXPECT_TRUE(client.wait_closed());
    EXPECT_TRUE(eventually([&] { return !server.running(); }));
    EXPECT_TRUE(eventually([&] { return !path_exists(path); }));
    // And it starts again.
    server.start();
    test_client again{path};
    ASSERT_TRUE(again.send(request("echo", 2)));
    ASSERT_TRUE(again.read_response());
}

TEST_F(server_fixture, run_on_the_callers_thread_and_stop_from_another)
{
    rpc::server server{methods, options()};
    std::thread runner{[&] { server.run(); }};
    ASSERT_TRUE(eventually([&] { return server.running(); }));
    {
        test_client client{path};
        ASSERT_TRUE(client.send(request("echo", 1)));
        ASSERT_TRUE(client.read_response());
    }
    server.stop();
    runner.join();
    EXPECT_FALSE(server.running());
    EXPECT_FALSE(path_exists(path));
}

TEST_F(server_fixture, refuses_to_start_where_a_server_answers)
{
    rpc::server first{methods, options()};
    first.start();
    rpc::server second{methods, options()};
    try {
        second.start();
        FAIL() << "started over a live server";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string{e.what()}.find("already answers"), std::string::npos) << e.what();
    }
    test_client client{path};
    ASSERT_TRUE(client.send(request("echo", 1)));
    ASSERT_TRUE(client.read_response());
    first.stop();
    second.start();
    test_client again{path};
    ASSERT_TRUE(again.send(request("echo", 2)));
    ASSERT_TRUE(again.read_response());
}

TEST_F(server_fixture, the_socket_is_its_owners_alone_whatever_the_umask)
{
    const mode_t previous = ::umask(0);
    rpc::server server{methods, options()};
    server.start();
    ::umask(previous);
    struct stat socket_file {};
    ASSERT_EQ(::stat(path.c_str(), &socket_file), 0);
    EXPECT_EQ(socket_file.st_mode & 07777, 0600U);
}

TEST_F(server_fixture, a_peer_of_another_user_is_refused)
{
    if (::geteuid() != 0) {
        GTEST_SKIP() << "needs root, to connect as another user";
    }
    auto o = options();
    o.socket_mode = 0666; // the file lets anyone connect: the credentials check must still refuse
    rpc::server server{methods, o};
    server.start();
    ASSERT_EQ(::chmod(directory.c_str(), 0755), 0); // let nobody reach the socket file
    // A thread of its own connects as nobody (65534): the raw system calls change that thread's
    // credentials alone, which are the ones SO_PEERCRED records at connect(2).
    enum class outcome { answered, refused, could_not_connect, could_not_become_nobody };
    auto stranger = std::async(std::launch::async, [&] {
        if (::syscall(SYS_setresgid, 65534, 65534, 65534) != 0 ||
            ::syscall(SYS_setresuid, 65534, 65534, 65534) != 0) {
            return outcome::could_not_become_nobody;
        }
        try {
            test_client client{path};
            if (!client.send(request("echo", 1))) {
                return outcome::refused;
            }
            return client.read_response() ? outcome::answered : outcome::refused;
        } catch (const std::runtime_error&) {
            return outcome::could_not_connect;
        }
    });
    EXPECT_EQ(static_cast<int>(stranger.get()), static_cast<int>(outcome::refused))
        << "0: answered, 2: could not connect, 3: could not become nobody";
    EXPECT_TRUE(eventually([&] { return server.statistics().clients_denied == 1U; }));
    // The server's own user still gets answers.
    test_client owner{path};
    ASSERT_TRUE(owner.send(request("echo", 2)));
    ASSERT_TRUE(owner.read_response());
}

TEST_F(server_fixture, removes_a_stale_socket_file)
{
    {
        const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
        sockaddr_un address{};
        address.sun_family = AF_UNIX;
        std::strncpy(address.sun_path, path.c_str(), sizeof address.sun_path - 1);
        ASSERT_EQ(::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address), 0);
        ASSERT_EQ(::listen(fd, 1), 0);
        ::close(fd); // as a server that died leaves it
    }
    ASSERT_TRUE(path_exists(path));
    rpc::server server{methods, options()};
    server.start();
    test_client client{path};
    ASSERT_TRUE(client.send(request("echo", 1)));
    ASSERT_TRUE(client.read_response());
}

TEST_F(server_fixture, refuses_a_path_that_is_not_a_socket)
{
    auto o = options();
    o.socket_path = directory + "/file";
    std::ofstream{o.socket_path} << "keep me";
    rpc::server server{methods, o};
    EXPECT_THROW(server.start(), std::runtime_error);
    std::string content;
    std::getline(std::ifstream{o.socket_path}, content);
    EXPECT_EQ(content, "keep me");

    o.socket_path = directory + "/" + std::string(200, 'x');
    rpc::server too_long{methods, o};
    EXPECT_THROW(too_long.start(), std::invalid_argument);
}

// Without close_idle_when_full; with it, see a_new_client_at_max_clients_closes_the_one_idle_longest.
TEST_F(server_fixture, connections_beyond_max_clients_are_closed)
{
    auto o = options();
    o.max_clients = 2;
    o.close_idle_when_full = false;
    rpc::server server{methods, o};
    server.start();
    test_client a{path};
    test_client b{path};
    ASSERT_TRUE(eventually([&] { return server.statistics().clients_connected == 2; }));
    test_client c{path};
    EXPECT_TRUE(c.wait_closed());
    EXPECT_TRUE(eventually([&] { return server.statistics().clients_refused == 1; }));
    ASSERT_TRUE(b.send(request("echo", 1)));
    ASSERT_TRUE(b.read_response());
    ASSERT_TRUE(a.send(request("echo", 2)));
    ASSERT_TRUE(a.read_response());
    EXPECT_EQ(server.statistics().idle_clients_closed, 0U);
}

TEST_F(server_fixture, timeout_defaults)
{
    const rpc::server_options o;
    EXPECT_EQ(o.request_timeout, 10s);
    EXPECT_TRUE(o.close_idle_when_full);
    EXPECT_EQ(o.accept_retry_delay, 100ms);
}

// Clients that hold half-written requests lock nobody out for longer than request_timeout: they
// are disconnected, and their slots go to new clients. On a manual clock: the server's rounds
// are made by the clients' bytes, the deadlines by the clock.
TEST_F(server_fixture, partial_requests_time_out_and_free_their_slots)
{
    nvmekit::testing::manual_clock clock;
    auto o = options_on(clock);
    o.max_clients = 2;
    o.request_timeout = 10s;
    rpc::server server{methods, o};
    server.start();
    test_client a{path};
    test_client b{path};
    ASSERT_TRUE(eventually([&] { return server.statistics().clients_connected == 2; }));
    ASSERT_TRUE(a.send(request("echo", 1).substr(0, 20)));
    ASSERT_TRUE(b.send(request("echo", 2).substr(0, 20)));
    {
        // Read by then (sent before it connects), the partial requests keep both slots: not idle.
        test_client refused{path};
        EXPECT_TRUE(refused.wait_closed());
    }
    ASSERT_TRUE(eventually([&] { return server.statistics().clients_refused == 1; }));
    clock.advance(10s - 1ns);
    {
        test_client refused{path};
        EXPECT_TRUE(refused.wait_closed());
    }
    ASSERT_TRUE(eventually([&] { return server.statistics().clients_refused == 2; }));
    EXPECT_EQ(server.statistics().clients_timed_out, 0U);
    clock.advance(1ns);
    test_client c{path}; // its connection is a round of the server's: a and b go, c is admitted
    round_trip(c, 3);
    EXPECT_TRUE(a.wait_closed());
    EXPECT_TRUE(b.wait_closed());
    const auto s = server.statistics();
    EXPECT_EQ(s.clients_timed_out, 2U);
    EXPECT_EQ(s.clients_refused, 2U);
    EXPECT_EQ(s.clients_connected, 1U);
    EXPECT_EQ(echo_calls.load(), 1);
}

// More bytes do not extend a request's time (a client cannot trickle one byte at a time); a
// request completed in time is answered, and the next one has its own time.
TEST_F(server_fixture, a_request_has_request_timeout_from_its_first_byte)
{
    nvmekit::testing::manual_clock clock;
    auto o = options_on(clock);
    o.request_timeout = 10s;
    rpc::server server{methods, o};
    server.start();
    test_client other{path};
    test_client a{path};
    const std::string first = request("echo", 1);
    ASSERT_TRUE(a.send(first.substr(0, 10)));
    round_trip(other, 100); // a's bytes are read by then
    clock.advance(9s);
    ASSERT_TRUE(a.send(first.substr(10)));
    auto response = a.read_response();
    ASSERT_TRUE(response);
    EXPECT_EQ((*response)["id"], 1);
    // The next request: its first byte at 9 s, a byte more at 18 s, expired at 19 s.
    const std::string second = request("echo", 2);
    ASSERT_TRUE(a.send(second.substr(0, 1)));
    round_trip(other, 101);
    clock.advance(9s);
    ASSERT_TRUE(a.send(second.substr(1, 1)));
    round_trip(other, 102);
    EXPECT_EQ(server.statistics().clients_timed_out, 0U);
    clock.advance(1s);
    round_trip(other, 103);
    EXPECT_TRUE(a.wait_closed());
    EXPECT_EQ(server.statistics().clients_timed_out, 1U);
    EXPECT_TRUE(eventually([&] { return server.statistics().clients_connected == 1; }));
}

// Nothing else happening: the server wakes for the deadline by itself (the steady clock, a
// short timeout; only the hang guard is wall-clock time).
TEST_F(server_fixture, partial_request_times_out_with_no_other_activity)
{
    auto o = options();
    o.request_timeout = 20ms;
    rpc::server server{methods, o};
    server.start();
    test_client a{path};
    ASSERT_TRUE(a.send(request("echo", 1).substr(0, 20)));
    EXPECT_TRUE(a.wait_closed());
    EXPECT_TRUE(eventually([&] { return server.statistics().clients_timed_out == 1; }));
    EXPECT_EQ(echo_calls.load(), 0);
}

// A client that takes none of its responses for request_timeout goes too, within the output bound.
TEST_F(server_fixture, client_that_reads_none_of_its_responses_times_out)
{
    nvmekit::testing::manual_clock clock;
    auto o = options_on(clock);
    o.request_timeout = 10s;
    rpc::server server{methods, o};
    server.start();
    test_client not_reading{path};
    test_client other{path};
    std::string burst;
    for (int i = 0; i < 16; ++i) {
        burst += request("big", i, {{"bytes", 256 * 1024}});
    }
    ASSERT_TRUE(not_reading.send(burst));
    ASSERT_TRUE(eventually([&] { return server.statistics().responses == 16; }));
    clock.advance(10s);
    round_trip(other, 1);
    EXPECT_TRUE(eventually([&] { return server.statistics().clients_timed_out == 1; }));
    EXPECT_TRUE(not_reading.wait_closed());
    EXPECT_EQ(server.statistics().slow_clients_dropped, 0U);
    EXPECT_TRUE(eventually([&] { return server.statistics().clients_connected == 1; }));
}

// Connections that send nothing cannot lock others out: at max_clients a new connection closes
// the one idle longest; one with a partial request is not idle.
TEST_F(server_fixture, a_new_client_at_max_clients_closes_the_one_idle_longest)
{
    nvmekit::testing::manual_clock clock;
    auto o = options_on(clock);
    o.max_clients = 3;
    rpc::server server{methods, o};
    server.start();
    test_client active{path};
    test_client silent{path};
    test_client partial{path};
    ASSERT_TRUE(eventually([&] { return server.statistics().clients_connected == 3; }));
    clock.advance(1s);
    round_trip(active, 1);
    ASSERT_TRUE(partial.send(request("echo", 2).substr(0, 10)));
    round_trip(active, 3);
    test_client newcomer{path};
    EXPECT_TRUE(silent.wait_closed());
    round_trip(newcomer, 4);
    clock.advance(1s);
    round_trip(active, 5);
    EXPECT_EQ(server.statistics().idle_clients_closed, 1U);
    EXPECT_EQ(server.statistics().clients_refused, 0U);
    // Now the idle one longest is newcomer's (active's last request came after it).
    test_client another{path};
    EXPECT_TRUE(newcomer.wait_closed());
    round_trip(another, 6);
    ASSERT_TRUE(partial.send(request("echo", 2).substr(10)));
    const auto response = partial.read_response();
    ASSERT_TRUE(response);
    EXPECT_EQ((*response)["id"], 2);
    EXPECT_EQ(server.statistics().idle_clients_closed, 2U);
}

/// Lowers the soft RLIMIT_NOFILE to the lowest free descriptor, so that the next descriptor the
/// process opens fails with EMFILE; restored when it goes.
class descriptors_exhausted {
public:
    descriptors_exhausted()
    {
        if (::getrlimit(RLIMIT_NOFILE, &saved_) != 0) {
            throw std::runtime_error("getrlimit");
        }
        const int lowest_free = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (lowest_free < 0) {
            throw std::runtime_error("open /dev/null");
        }
        ::close(lowest_free);
        rlimit lowered = saved_;
        lowered.rlim_cur = static_cast<rlim_t>(lowest_free);
        if (::setrlimit(RLIMIT_NOFILE, &lowered) != 0) {
            throw std::runtime_error("setrlimit");
        }
    }
    descriptors_exhausted(const descriptors_exhausted&) = delete;
    descriptors_exhausted& operator=(const descriptors_exhausted&) = delete;
    ~descriptors_exhausted() { restore(); }

    void restore()
    {
        if (!restored_) {
            ::setrlimit(RLIMIT_NOFILE, &saved_);
            restored_ = true;
        }
    }

private:
    rlimit saved_{};
    bool restored_ = false;
};

// accept(2) failing for want of descriptors leaves the connection waiting and the listener
// readable: the server leaves the listener out of its poll for accept_retry_delay instead of
// failing again every round. Counted in rounds (each round trip of `busy` is one at least) on a
// manual clock, not in time.
TEST_F(server_fixture, accept_failing_for_want_of_descriptors_pauses_instead_of_spinning)
{
    nvmekit::testing::manual_clock clock;
    auto o = options_on(clock);
    o.accept_retry_delay = 100ms;
    std::mutex log_mutex;
    std::vector<std::string> lines;
    rpc::server server{methods, o, [&](std::string_view text) {
                           const std::lock_guard lock{log_mutex};
                           lines.emplace_back(text);
                       }};
    server.start();
    test_client busy{path};
    test_client waiting; // its descriptor taken before the limit
    ASSERT_TRUE(eventually([&] { return server.statistics().clients_connected == 1; }));
    // One answer before the descriptors run out: UndefinedBehaviorSanitizer checks a polymorphic
    // type's vptr the first time it meets the type with a pipe(2) of its own (to probe memory),
    // which fails without a descriptor and reports a valid object as invalid. Once checked, the
    // types of an answer are in its cache. (Builds without it are unaffected.)
    round_trip(busy, 1000);
    const auto log_count = [&](std::string_view what) {
        const std::lock_guard lock{log_mutex};
        return std::count_if(lines.begin(), lines.end(),
                             [&](const std::string& line) { return line.find(what) != std::string::npos; });
    };
    {
        descriptors_exhausted limit;
        waiting.connect(path); // queued in the backlog: accept4 fails with EMFILE
        ASSERT_TRUE(eventually([&] { return server.statistics().accept_failures == 1; }));
        for (int i = 0; i < 50; ++i) {
            round_trip(busy, i);
        }
        EXPECT_EQ(server.statistics().accept_failures, 1U) << "accept retried before accept_retry_delay";
        clock.advance(100ms);
        round_trip(busy, 50);
        ASSERT_TRUE(eventually([&] { return server.statistics().accept_failures == 2; }));
        for (int i = 51; i < 100; ++i) {
            round_trip(busy, i);
        }
        EXPECT_EQ(server.statistics().accept_failures, 2U);
        EXPECT_EQ(log_count("accept failed: Too many open files"), 1) << "logged once per episode";
        limit.restore();
        clock.advance(100ms);
        round_trip(busy, 100);
    }
    ASSERT_TRUE(eventually([&] { return server.statistics().clients_accepted == 2; }));
    round_trip(waiting, 101);
    EXPECT_EQ(server.statistics().accept_failures, 2U);
    EXPECT_EQ(log_count("accept failed"), 1);
    EXPECT_EQ(log_count("accepting again after 2 failed accept(s)"), 1);
}

} // namespace rpc_server_test
} // namespace
