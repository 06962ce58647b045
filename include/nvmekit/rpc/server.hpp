#pragma once
/// A JSON-RPC server on a Unix stream socket, as SPDK's application serves `scripts/rpc.py`:
/// requests decoded from each client's stream (jsonrpc.hpp), dispatched to a registry, responses
/// written back in order. One thread, poll(2), non-blocking sockets; several clients at once.
///
///     nvmekit::rpc::registry methods;
///     nvmekit::rpc::server server{methods, {.socket_path = "/var/tmp/nvmekit.sock"}};
///     server.start();   // listens, then serves on a thread of its own
///     ...
///     server.stop();    // from any thread
///
/// or `server.run()` on a thread of the embedder's, ended by stop() from another one (or from a
/// handler). Handlers run on the server's thread.
///
/// What a client can do to it: a client that closes mid-request loses that request; one that
/// sends garbage gets a Parse Error and is disconnected; one that sends a request over
/// decoder_limits gets a Parse Error and is disconnected; one that stops reading its responses
/// is disconnected once more than max_output_bytes of them wait for it; beyond max_clients,
/// new connections are closed at once. None of it affects the other clients.
///
/// The socket path: start() refuses a path where a server answers (or that is not a socket),
/// removes a socket file nothing answers at (left by a server that died), and removes its own
/// socket file when it stops.

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <nvmekit/config.hpp>
#include <nvmekit/rpc/jsonrpc.hpp>
#include <nvmekit/transport/unix_socket_path.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace rpc {

struct server_options {
    /// rpc.py's default is /var/tmp/spdk.sock; its -s option names another.
    std::string socket_path = "/var/tmp/nvmekit.sock";
    decoder_limits limits{};
    /// Responses waiting for a client beyond this: the client is disconnected.
    std::size_t max_output_bytes = std::size_t{64} << 20;
    /// Connections beyond this are closed as soon as they are accepted.
    std::size_t max_clients = 64;
    /// The socket file's mode: its owner's alone by default.
    mode_t socket_mode = 0600;
    /// Accept only peers running as the server's own user or as root (SO_PEERCRED): a socket
    /// whose directory or mode lets others connect still admits no one else.
    bool same_user_only = true;
};

/// What happened, for the embedder's log.
using server_logger = std::function<void(std::string_view)>;

/// Counters, readable from any thread while the server runs.
struct server_statistics {
    std::uint64_t clients_accepted = 0;
    std::uint64_t clients_refused = 0;      ///< over max_clients
    std::uint64_t clients_denied = 0;       ///< another user's (same_user_only)
    std::uint64_t requests = 0;             ///< decoded values dispatched
    std::uint64_t responses = 0;            ///< responses queued
    std::uint64_t parse_errors = 0;         ///< streams failed (garbage, too long, too deep)
    std::uint64_t slow_clients_dropped = 0; ///< over max_output_bytes
    std::uint64_t clients_lost = 0;         ///< connection errors, closes mid-request
    std::uint64_t clients_connected = 0;    ///< now
};

namespace detail {

class fd_holder {
public:
    fd_holder() = default;
    explicit fd_holder(int fd) noexcept : fd_{fd} {}
    fd_holder(fd_holder&& other) noexcept : fd_{std::exchange(other.fd_, -1)} {}
    fd_holder& operator=(fd_holder&& other) noexcept
    {
        if (this != &other) {
            reset(std::exchange(other.fd_, -1));
        }
        return *this;
    }
    fd_holder(const fd_holder&) = delete;
    fd_holder& operator=(const fd_holder&) = delete;
    ~fd_holder() { reset(); }
    [[nodiscard]] int get() const noexcept { return fd_; }
    [[nodiscard]] bool valid() const noexcept { return fd_ >= 0; }
    void reset(int fd = -1) noexcept
    {
        if (fd_ >= 0) {
            ::close(fd_);
        }
        fd_ = fd;
    }

private:
    int fd_ = -1;
};

[[noreturn]] inline void throw_errno(const std::string& what)
{
    throw std::system_error(errno, std::generic_category(), "rpc server: " + what);
}

} // namespace detail

class server {
public:
    server(const registry& methods, server_options options = {}, server_logger logger = {})
        : methods_{methods}
        , options_{std::move(options)}
        , logger_{std::move(logger)}
        , wake_{::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)}
    {
        if (!wake_.valid()) {
            detail::throw_errno("eventfd");
        }
    }
    server(const server&) = delete;
    server& operator=(const server&) = delete;
    ~server() { stop(); }

    [[nodiscard]] const std::string& socket_path() const noexcept { return options_.socket_path; }

    /// Creates the listening socket (once). Throws std::runtime_error when a server answers at
    /// the path or the path is something other than a socket, std::system_error when the socket
    /// cannot be created, std::invalid_argument for a path too long for a socket address.
    void listen()
    {
        const std::lock_guard lock{control_};
        if (listener_.valid()) {
            return;
        }
        const sockaddr_un address = transport::unix_socket_address(options_.socket_path, "rpc server");
        clear_path();
        detail::fd_holder listener{::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)};
        if (!listener.valid()) {
            detail::throw_errno("socket() for " + options_.socket_path);
        }
        if (::bind(listener.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
            detail::throw_errno("bind " + options_.socket_path);
        }
        // Whoever may connect may manage the server (export files, open listeners): the socket is
        // its owner's alone (0600), set before listen(2), so no one connects under the umask's
        // mode; accept_clients() also checks each peer's credentials.
        struct stat bound {};
        if (::chmod(options_.socket_path.c_str(), options_.socket_mode) != 0 ||
            ::stat(options_.socket_path.c_str(), &bound) != 0 || ::listen(listener.get(), 16) != 0) {
            const int error = errno;
            ::unlink(options_.socket_path.c_str());
            errno = error;
            detail::throw_errno("listen " + options_.socket_path);
        }
        socket_device_ = bound.st_dev;
        socket_inode_ = bound.st_ino;
        listener_ = std::move(listener);
        stop_requested_.store(false);
        log("listening on " + options_.socket_path);
    }

    /// listen(), then serves on a thread of the server's until stop(). Not from a handler.
    void start()
    {
        std::thread previous;
        {
            const std::lock_guard lock{control_};
            if (thread_.joinable()) {
                if (!stop_requested_.load()) {
                    return; // serving already
                }
                previous = std::move(thread_); // stopped from a handler: ending by itself
            }
        }
        if (previous.joinable()) {
            previous.join();
        }
        listen();
        const std::lock_guard lock{control_};
        if (thread_.joinable()) {
            return;
        }
        stop_requested_.store(false);
        thread_ = std::thread{[this] { loop(); }};
    }

    /// listen(), then serves on the calling thread until stop(). The server must outlive run().
    void run()
    {
        listen();
        loop();
    }

    /// Ends run() (or the thread of start()) and waits for it when it is the server's thread:
    /// every client is disconnected (responses not yet sent are lost), the socket closed and its
    /// file removed. Any thread; also from a handler (which does not wait: its response is still
    /// sent). The server can be started again afterwards; a stop() before run() has created the
    /// socket does not end that run().
    void stop()
    {
        stop_requested_.store(true);
        const std::uint64_t one = 1;
        [[maybe_unused]] const ssize_t written = ::write(wake_.get(), &one, sizeof one);
        std::thread finished;
        {
            const std::lock_guard lock{control_};
            if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) {
                finished = std::move(thread_);
            }
        }
        if (finished.joinable()) {
            finished.join();
        }
        if (!running_.load()) {
            close_listener();
        }
    }

    [[nodiscard]] bool running() const noexcept { return running_.load(); }

    [[nodiscard]] server_statistics statistics() const
    {
        server_statistics s;
        s.clients_accepted = counters_.clients_accepted.load(std::memory_order_relaxed);
        s.clients_refused = counters_.clients_refused.load(std::memory_order_relaxed);
        s.clients_denied = counters_.clients_denied.load(std::memory_order_relaxed);
        s.requests = counters_.requests.load(std::memory_order_relaxed);
        s.responses = counters_.responses.load(std::memory_order_relaxed);
        s.parse_errors = counters_.parse_errors.load(std::memory_order_relaxed);
        s.slow_clients_dropped = counters_.slow_clients_dropped.load(std::memory_order_relaxed);
        s.clients_lost = counters_.clients_lost.load(std::memory_order_relaxed);
        s.clients_connected = counters_.clients_connected.load(std::memory_order_relaxed);
        return s;
    }

private:
    /// Bytes read from a client per poll round at most, so that one busy client cannot starve
    /// the others.
    static constexpr std::size_t read_chunk = 64 * 1024;
    static constexpr std::size_t reads_per_round = 16;

    struct client {
        explicit client(int fd, const decoder_limits& limits) : socket{fd}, decoder{limits} {}
        detail::fd_holder socket;
        stream_decoder decoder;
        std::string output;
        std::size_t output_sent = 0;
        bool reading = true; ///< false once the client closed its side or its stream failed
        bool closed = false;

        [[nodiscard]] std::size_t pending() const noexcept { return output.size() - output_sent; }
    };

    struct atomic_counters {
        std::atomic<std::uint64_t> clients_accepted{0};
        std::atomic<std::uint64_t> clients_refused{0};
        std::atomic<std::uint64_t> clients_denied{0};
        std::atomic<std::uint64_t> requests{0};
        std::atomic<std::uint64_t> responses{0};
        std::atomic<std::uint64_t> parse_errors{0};
        std::atomic<std::uint64_t> slow_clients_dropped{0};
        std::atomic<std::uint64_t> clients_lost{0};
        std::atomic<std::uint64_t> clients_connected{0};
    };

    static void count(std::atomic<std::uint64_t>& counter)
    {
        counter.fetch_add(1, std::memory_order_relaxed);
    }

    void log(const std::string& text) const
    {
        if (logger_) {
            logger_(text);
        }
    }

    /// Refuses a path where a server answers or that is no socket; removes a stale socket file.
    void clear_path() const
    {
        if (transport::prepare_unix_socket_path(options_.socket_path, "rpc server") ==
            transport::socket_path_state::stale_removed) {
            log("removed stale socket " + options_.socket_path);
        }
    }

    void close_listener()
    {
        const std::lock_guard lock{control_};
        if (!listener_.valid()) {
            return;
        }
        listener_.reset();
        // Remove the socket file only if it is still ours.
        struct stat current {};
        if (::lstat(options_.socket_path.c_str(), &current) == 0 && current.st_dev == socket_device_ &&
            current.st_ino == socket_inode_) {
            ::unlink(options_.socket_path.c_str());
        }
        log("stopped listening on " + options_.socket_path);
    }

    void loop()
    {
        running_.store(true);
        std::vector<pollfd> fds;
        while (!stop_requested_.load()) {
            fds.clear();
            fds.push_back({wake_.get(), POLLIN, 0});
            fds.push_back({listener_.get(), POLLIN, 0});
            for (const auto& c : clients_) {
                const short events =
                    static_cast<short>((c->reading ? POLLIN : 0) | (c->pending() > 0 ? POLLOUT : 0));
                fds.push_back({c->socket.get(), events, 0});
            }
            if (::poll(fds.data(), fds.size(), -1) < 0) {
                if (errno == EINTR) {
                    continue;
                }
                log(std::string{"poll failed: "} + std::strerror(errno));
                break;
            }
            if ((fds[0].revents & POLLIN) != 0) {
                std::uint64_t value = 0;
                [[maybe_unused]] const ssize_t got = ::read(wake_.get(), &value, sizeof value);
            }
            if (stop_requested_.load()) {
                break;
            }
            // Clients accepted below are polled from the next round on.
            const std::size_t polled = clients_.size();
            for (std::size_t i = 0; i < polled; ++i) {
                const short revents = fds[i + 2].revents;
                client& c = *clients_[i];
                if ((revents & (POLLIN | POLLHUP | POLLERR)) != 0 && c.reading && !stop_requested_.load()) {
                    receive(c);
                }
                if (!c.closed && ((revents & POLLOUT) != 0 || c.pending() > 0)) {
                    transmit(c);
                }
                if (!c.closed && (revents & (POLLERR | POLLNVAL)) != 0 && !c.reading) {
                    drop(c, counters_.clients_lost, "connection error");
                }
                if (!c.closed && !c.reading && c.pending() == 0) {
                    close_client(c);
                }
            }
            std::erase_if(clients_, [](const std::unique_ptr<client>& c) { return c->closed; });
            counters_.clients_connected.store(clients_.size(), std::memory_order_relaxed);
            if ((fds[1].revents & POLLIN) != 0) {
                accept_clients();
            }
        }
        clients_.clear();
        counters_.clients_connected.store(0, std::memory_order_relaxed);
        running_.store(false);
        close_listener();
    }

    void accept_clients()
    {
        for (;;) {
            const int fd = ::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
            if (fd < 0) {
                if (errno == EINTR) {
                    continue;
                }
                if (errno != EAGAIN && errno != EWOULDBLOCK) {
                    log(std::string{"accept failed: "} + std::strerror(errno));
                }
                return;
            }
            if (options_.same_user_only && !peer_allowed(fd)) {
                count(counters_.clients_denied);
                ::close(fd);
                continue;
            }
            if (clients_.size() >= options_.max_clients) {
                count(counters_.clients_refused);
                ::close(fd);
                log("connection refused: " + std::to_string(options_.max_clients) + " clients already");
                continue;
            }
            clients_.push_back(std::make_unique<client>(fd, options_.limits));
            count(counters_.clients_accepted);
            counters_.clients_connected.store(clients_.size(), std::memory_order_relaxed);
        }
    }

    /// Whether the peer on `fd` runs as this process's effective user or as root.
    [[nodiscard]] bool peer_allowed(int fd) const
    {
        ucred peer{};
        socklen_t size = sizeof peer;
        if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &size) != 0 || size != sizeof peer) {
            log(std::string{"connection refused: no peer credentials: "} + std::strerror(errno));
            return false;
        }
        if (peer.uid == 0 || peer.uid == ::geteuid()) {
            return true;
        }
        log("connection refused: uid " + std::to_string(peer.uid) + " (pid " + std::to_string(peer.pid) +
            ") is neither this server's user nor root");
        return false;
    }

    void receive(client& c)
    {
        chunk_.resize(read_chunk);
        for (std::size_t round = 0;
             round < reads_per_round && c.reading && !c.closed && !stop_requested_.load(); ++round) {
            const ssize_t got = ::recv(c.socket.get(), chunk_.data(), chunk_.size(), 0);
            if (got < 0) {
                if (errno == EINTR) {
                    continue;
                }
                if (errno != EAGAIN && errno != EWOULDBLOCK) {
                    drop(c, counters_.clients_lost, std::string{"receive failed: "} + std::strerror(errno));
                }
                return;
            }
            if (got == 0) {
                // The client closed its side: what it sent completely is answered, a partial
                // request is dropped.
                c.reading = false;
                if (c.decoder.buffered() > 0) {
                    count(counters_.clients_lost);
                }
                return;
            }
            c.decoder.feed(std::string_view{chunk_.data(), static_cast<std::size_t>(got)});
            process(c);
        }
    }

    void process(client& c)
    {
        for (auto item = c.decoder.next(); item.status != decode_status::need_more; item = c.decoder.next()) {
            if (item.status == decode_status::failed) {
                count(counters_.parse_errors);
                log("client stream failed: " + item.error_message);
                queue(c, item.error_response());
                c.reading = false; // answered, then closed once the answer is out
                return;
            }
            count(counters_.requests);
            // Nothing a client sends may end the server: an exception that escapes the registry's
            // own handling (in its checks or encoding) answers this request with Internal Error,
            // and the connection stays open, as for any other failed request.
            std::optional<std::string> response;
            try {
                response = methods_.dispatch(item.value);
            } catch (const std::exception& e) {
                log(std::string{"request failed: "} + e.what());
                response = encode_error(nullptr, {error_code::internal_error, "the request failed"});
            } catch (...) {
                log("request failed");
                response = encode_error(nullptr, {error_code::internal_error, "the request failed"});
            }
            if (response) {
                queue(c, *response);
            }
            if (c.closed || stop_requested_.load()) {
                return;
            }
        }
    }

    void queue(client& c, const std::string& response)
    {
        if (c.output_sent > 0 && c.output_sent >= c.output.size() / 2) {
            c.output.erase(0, c.output_sent);
            c.output_sent = 0;
        }
        if (c.pending() + response.size() > options_.max_output_bytes) {
            drop(c, counters_.slow_clients_dropped,
                 "client dropped: more than " + std::to_string(options_.max_output_bytes) +
                     " bytes of responses waiting for it");
            return;
        }
        c.output += response;
        count(counters_.responses);
    }

    void transmit(client& c)
    {
        while (c.pending() > 0) {
            const ssize_t sent = ::send(c.socket.get(), c.output.data() + c.output_sent, c.pending(),
                                        MSG_NOSIGNAL | MSG_DONTWAIT);
            if (sent < 0) {
                if (errno == EINTR) {
                    continue;
                }
                if (errno != EAGAIN && errno != EWOULDBLOCK) {
                    drop(c, counters_.clients_lost, std::string{"send failed: "} + std::strerror(errno));
                }
                return;
            }
            c.output_sent += static_cast<std::size_t>(sent);
        }
        c.output.clear();
        c.output_sent = 0;
    }

    void drop(client& c, std::atomic<std::uint64_t>& counter, const std::string& why)
    {
        count(counter);
        log(why);
        close_client(c);
    }

    static void close_client(client& c)
    {
        c.closed = true;
        c.reading = false;
        c.socket.reset();
        c.output.clear();
        c.output.shrink_to_fit();
        c.output_sent = 0;
    }

    const registry& methods_;
    server_options options_;
    server_logger logger_;
    detail::fd_holder wake_;
    detail::fd_holder listener_;
    dev_t socket_device_ = 0;
    ino_t socket_inode_ = 0;
    std::vector<std::unique_ptr<client>> clients_;
    std::string chunk_; ///< what one recv() reads into
    std::mutex control_;
    std::thread thread_;
    std::atomic<bool> stop_requested_{false};
    std::atomic<bool> running_{false};
    atomic_counters counters_;
};

} // namespace rpc
NVMEKIT_END_NAMESPACE
