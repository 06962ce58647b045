#pragma once
/// A JSON-RPC server on a Unix stream socket, as SPDK's application serves `scripts/rpc.py`:
/// requests decoded from each client's stream (jsonrpc.hpp), dispatched to a registry, responses
/// written back in order. One thread, poll(2), non-blocking sockets; several clients at once.
///
///     nvmekit::rpc::registry methods;
///     nvmekit::rpc::server server{methods, {.socket_path = "/run/user/1000/nvmekit.sock"}};
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
/// is disconnected once more than max_output_bytes of them wait for it, or once it has taken
/// none of them for request_timeout; one that leaves a request incomplete for request_timeout is
/// disconnected; at max_clients, a new connection closes the connection idle longest, or is
/// closed at once when none is idle. None of it affects the other clients. When accept(2) fails
/// (out of descriptors), the server stops accepting for accept_retry_delay instead of retrying
/// at once.
///
/// The socket path: start() refuses a path where a server answers (or that is not a socket),
/// removes a socket file nothing answers at (left by a server that died), and removes its own
/// socket file when it stops. With no path in its options it takes default_socket_path().

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
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
#include <nvmekit/contracts/clock.hpp>
#include <nvmekit/rpc/jsonrpc.hpp>
#include <nvmekit/transport/unique_fd.hpp>
#include <nvmekit/transport/unix_socket_path.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace rpc {

/// The management socket's path where the options give none, where system daemons keep theirs:
/// `runtime_directory`/nvmekit.sock when `runtime_directory` (XDG_RUNTIME_DIR) is the absolute
/// path of a directory that `effective_user` owns, else /run/nvmekit.sock for root, else nothing.
/// Never a world-writable directory such as /var/tmp, where another user could take the name
/// first.
[[nodiscard]] inline std::optional<std::string> default_socket_path(const char* runtime_directory,
                                                                    uid_t effective_user)
{
    struct stat directory {};
    if (runtime_directory != nullptr && runtime_directory[0] == '/' &&
        ::stat(runtime_directory, &directory) == 0 && S_ISDIR(directory.st_mode) &&
        directory.st_uid == effective_user) {
        std::string path{runtime_directory};
        if (path.back() != '/') {
            path += '/';
        }
        return path + "nvmekit.sock";
    }
    if (effective_user == 0) {
        return "/run/nvmekit.sock";
    }
    return std::nullopt;
}

/// default_socket_path() for this process: its XDG_RUNTIME_DIR and effective user.
[[nodiscard]] inline std::optional<std::string> default_socket_path()
{
    return default_socket_path(std::getenv("XDG_RUNTIME_DIR"), ::geteuid());
}

struct server_options {
    /// Empty: default_socket_path() (rpc.py's default is /var/tmp/spdk.sock; its -s option
    /// names another).
    std::string socket_path{};
    decoder_limits limits{};
    /// Responses waiting for a client beyond this: the client is disconnected.
    std::size_t max_output_bytes = std::size_t{64} << 20;
    /// Clients at once. A connection beyond them closes the idle client (no partial request, no
    /// response waiting) whose last byte in or out is oldest, with close_idle_when_full, else
    /// it is closed as soon as it is accepted.
    std::size_t max_clients = 64;
    /// A client that holds part of a request for this long without completing it (counted from
    /// its first byte, or from the end of the request before it when that came in the same
    /// read; more bytes do not extend it), or takes no byte of the responses waiting for it for
    /// this long, is disconnected: a stalled client cannot keep its slot and buffers. A client
    /// with nothing pending has no deadline. Zero: no limit.
    std::chrono::milliseconds request_timeout = std::chrono::seconds{10};
    /// At max_clients, a new connection closes the idle client active longest ago instead of
    /// being refused: connections that send nothing cannot lock others out, and a flood of new
    /// connections closes its own older ones before a client that was active after them.
    bool close_idle_when_full = true;
    /// After accept(2) fails other than for a connection aborted while waiting (EMFILE and
    /// ENFILE: out of descriptors), the listener is left out of poll(2) for this long (at least
    /// 1 ms), instead of being found readable, and failing, again at once; logged once until
    /// an accept succeeds.
    std::chrono::milliseconds accept_retry_delay{100};
    /// The time for request_timeout and accept_retry_delay (a Clock's now()); empty: the
    /// steady clock. A test gives a manual clock's.
    std::function<std::chrono::nanoseconds()> clock{};
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
    std::uint64_t clients_timed_out = 0;    ///< stalled for request_timeout (mid-request, not reading)
    std::uint64_t idle_clients_closed = 0;  ///< closed to admit a new client at max_clients
    std::uint64_t accept_failures = 0;      ///< accept(2) failures, each pausing accepting
    std::uint64_t clients_connected = 0;    ///< now
};

namespace detail {

[[noreturn]] inline void throw_errno(const std::string& what)
{
    throw std::system_error(errno, std::generic_category(), "rpc server: " + what);
}

} // namespace detail

class server {
public:
    /// Throws std::invalid_argument when the options give no socket path and there is no
    /// default_socket_path().
    server(const registry& methods, server_options options = {}, server_logger logger = {})
        : methods_{methods}
        , options_{std::move(options)}
        , logger_{std::move(logger)}
        , wake_{::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)}
    {
        if (!wake_.valid()) {
            detail::throw_errno("eventfd");
        }
        if (options_.socket_path.empty()) {
            auto path = default_socket_path();
            if (!path) {
                throw std::invalid_argument(
                    "rpc server: no socket path given, and no default: XDG_RUNTIME_DIR is not the absolute "
                    "path of a directory of this user's, and the server does not run as root");
            }
            options_.socket_path = std::move(*path);
        }
        if (!options_.clock) {
            options_.clock = [] { return steady_clock{}.now(); };
        }
        options_.accept_retry_delay = std::max(options_.accept_retry_delay, std::chrono::milliseconds{1});
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
        transport::unique_fd listener{::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)};
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
        s.clients_timed_out = counters_.clients_timed_out.load(std::memory_order_relaxed);
        s.idle_clients_closed = counters_.idle_clients_closed.load(std::memory_order_relaxed);
        s.accept_failures = counters_.accept_failures.load(std::memory_order_relaxed);
        s.clients_connected = counters_.clients_connected.load(std::memory_order_relaxed);
        return s;
    }

private:
    /// Bytes read from a client per poll round at most, so that one busy client cannot starve
    /// the others.
    static constexpr std::size_t read_chunk = 64 * 1024;
    static constexpr std::size_t reads_per_round = 16;
    /// No deadline.
    static constexpr std::chrono::nanoseconds never = std::chrono::nanoseconds::max();

    struct client {
        client(int fd, const registry& methods, const decoder_limits& limits, std::chrono::nanoseconds now)
            : socket{fd}, stream{methods, limits}, last_activity{now}
        {}
        transport::unique_fd socket;
        request_stream<registry> stream;
        std::string output;
        std::size_t output_sent = 0;
        bool reading = true; ///< false once the client closed its side or its stream failed
        bool closed = false;
        std::chrono::nanoseconds last_activity;         ///< accepted, or its last byte in or out
        std::chrono::nanoseconds partial_since = never; ///< its partial request's start (never: none)
        std::chrono::nanoseconds output_since{};        ///< the last progress of the responses waiting

        [[nodiscard]] std::size_t pending() const noexcept { return output.size() - output_sent; }
        /// Connected, with no partial request and no response waiting.
        [[nodiscard]] bool idle() const noexcept
        {
            return !closed && reading && partial_since == never && pending() == 0;
        }
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
        std::atomic<std::uint64_t> clients_timed_out{0};
        std::atomic<std::uint64_t> idle_clients_closed{0};
        std::atomic<std::uint64_t> accept_failures{0};
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
        accept_resume_ = std::chrono::nanoseconds::min();
        accept_failures_in_episode_ = 0;
        std::vector<pollfd> fds;
        while (!stop_requested_.load()) {
            const std::chrono::nanoseconds before = options_.clock();
            const bool accepting = before >= accept_resume_;
            fds.clear();
            fds.push_back({wake_.get(), POLLIN, 0});
            // While accepting pauses, the listener is left out: poll(2) skips a negative descriptor.
            fds.push_back({accepting ? listener_.get() : -1, POLLIN, 0});
            for (const auto& c : clients_) {
                const short events =
                    static_cast<short>((c->reading ? POLLIN : 0) | (c->pending() > 0 ? POLLOUT : 0));
                fds.push_back({c->socket.get(), events, 0});
            }
            if (::poll(fds.data(), fds.size(), poll_timeout(before, accepting)) < 0) {
                if (errno == EINTR) {
                    continue;
                }
                log(std::string{"poll failed: "} + std::strerror(errno));
                break;
            }
            // The time of this round: what clients do in it, and their deadlines, are measured by
            // it, so a client whose bytes arrived while a handler ran is read before it expires.
            now_ = options_.clock();
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
            close_stalled_clients();
            std::erase_if(clients_, [](const std::unique_ptr<client>& c) { return c->closed; });
            counters_.clients_connected.store(clients_.size(), std::memory_order_relaxed);
            if (accepting && (fds[1].revents & POLLIN) != 0) {
                accept_clients();
            }
        }
        clients_.clear();
        counters_.clients_connected.store(0, std::memory_order_relaxed);
        running_.store(false);
        close_listener();
    }

    /// When `c` has stalled for request_timeout: mid-request, or with responses it takes none of.
    [[nodiscard]] std::chrono::nanoseconds deadline(const client& c) const noexcept
    {
        if (options_.request_timeout <= std::chrono::milliseconds::zero() || c.closed) {
            return never;
        }
        std::chrono::nanoseconds earliest = never;
        if (c.reading && c.partial_since != never) {
            earliest = c.partial_since + options_.request_timeout;
        }
        if (c.pending() > 0) {
            earliest = std::min(earliest, c.output_since + options_.request_timeout);
        }
        return earliest;
    }

    /// How long poll(2) may wait, from `now`: until the first deadline or the end of a pause in
    /// accepting (-1: no limit).
    [[nodiscard]] int poll_timeout(std::chrono::nanoseconds now, bool accepting) const
    {
        std::chrono::nanoseconds until = accepting ? never : accept_resume_;
        for (const auto& c : clients_) {
            until = std::min(until, deadline(*c));
        }
        if (until == never) {
            return -1;
        }
        if (until <= now) {
            return 0;
        }
        // Rounded up, so that the round after the wait finds the deadline passed.
        const auto wait = std::chrono::ceil<std::chrono::milliseconds>(until - now).count();
        return static_cast<int>(std::min<decltype(wait)>(wait, INT_MAX));
    }

    /// Disconnects the clients whose deadline has passed.
    void close_stalled_clients()
    {
        for (const auto& c : clients_) {
            if (deadline(*c) > now_) {
                continue;
            }
            const auto limit = std::to_string(options_.request_timeout.count()) + " ms";
            drop(*c, counters_.clients_timed_out,
                 c->reading && c->partial_since != never
                     ? "client dropped: a request left incomplete for " + limit
                     : "client dropped: its responses not read for " + limit);
        }
    }

    void accept_clients()
    {
        for (;;) {
            const int fd = ::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
            if (fd < 0) {
                const int error = errno;
                if (error == EINTR || error == ECONNABORTED) {
                    continue; // a connection closed while it waited: the next one
                }
                if (error == EAGAIN || error == EWOULDBLOCK) {
                    accepting_again();
                } else {
                    pause_accepting(error);
                }
                return;
            }
            accepting_again();
            if (options_.same_user_only && !peer_allowed(fd)) {
                count(counters_.clients_denied);
                ::close(fd);
                continue;
            }
            if (clients_.size() >= options_.max_clients && !make_room()) {
                count(counters_.clients_refused);
                ::close(fd);
                log("connection refused: " + std::to_string(options_.max_clients) + " clients already");
                continue;
            }
            clients_.push_back(std::make_unique<client>(fd, methods_, options_.limits, now_));
            count(counters_.clients_accepted);
            counters_.clients_connected.store(clients_.size(), std::memory_order_relaxed);
        }
    }

    /// accept(2) failed with `error` (out of descriptors, most likely: EMFILE, ENFILE): the
    /// connection stays in the backlog and the listener readable, so it is left out of the poll
    /// for accept_retry_delay rather than failing again at once, round after round.
    void pause_accepting(int error)
    {
        count(counters_.accept_failures);
        accept_resume_ = now_ + options_.accept_retry_delay;
        if (accept_failures_in_episode_++ == 0) {
            log(std::string{"accept failed: "} + std::strerror(error) + "; retrying every " +
                std::to_string(options_.accept_retry_delay.count()) + " ms until it succeeds");
        }
    }

    /// An accept found a connection, or none waiting: a run of failures, if any, has ended.
    void accepting_again()
    {
        if (accept_failures_in_episode_ != 0) {
            log("accepting again after " + std::to_string(accept_failures_in_episode_) + " failed accept(s)");
            accept_failures_in_episode_ = 0;
        }
    }

    /// At max_clients, for a new client: closes the clients stalled by now (the time of this
    /// accept, not of the round's start, which the connection may have come after), else the
    /// idle client whose last activity is oldest (close_idle_when_full). False when neither is.
    bool make_room()
    {
        now_ = options_.clock();
        close_stalled_clients();
        std::erase_if(clients_, [](const std::unique_ptr<client>& c) { return c->closed; });
        counters_.clients_connected.store(clients_.size(), std::memory_order_relaxed);
        return clients_.size() < options_.max_clients || close_idle_client();
    }

    /// Closes the idle client whose last activity is oldest (close_idle_when_full); false when
    /// there is none.
    bool close_idle_client()
    {
        if (!options_.close_idle_when_full) {
            return false;
        }
        auto oldest = clients_.end();
        for (auto it = clients_.begin(); it != clients_.end(); ++it) {
            if ((*it)->idle() &&
                (oldest == clients_.end() || (*it)->last_activity < (*oldest)->last_activity)) {
                oldest = it;
            }
        }
        if (oldest == clients_.end()) {
            return false;
        }
        drop(**oldest, counters_.idle_clients_closed,
             "idle client closed to admit a new one: " + std::to_string(options_.max_clients) +
                 " clients already");
        clients_.erase(oldest);
        return true;
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
                if (c.stream.buffered() > 0) {
                    count(counters_.clients_lost);
                }
                return;
            }
            c.last_activity = now_;
            c.stream.feed(std::string_view{chunk_.data(), static_cast<std::size_t>(got)});
            const bool completed = process(c);
            // A partial request's time runs from its first byte, or from the end of the request
            // before it when that came in this read; bytes that do not complete it do not extend it.
            if (c.stream.buffered() == 0) {
                c.partial_since = never;
            } else if (completed || c.partial_since == never) {
                c.partial_since = now_;
            }
        }
    }

    /// Answers the requests complete in `c`'s stream; whether there was any.
    bool process(client& c)
    {
        // Nothing a client sends may end the server: request_stream answers an exception that
        // escapes the registry's own handling (in its checks or encoding) with Internal Error,
        // and the connection stays open, as for any other failed request; a failed stream is
        // answered, then closed once the answer is out.
        const auto answered = c.stream.answer([&](std::string&& response) {
            queue(c, response);
            return !c.closed && !stop_requested_.load();
        });
        for (std::size_t i = 0; i < answered.requests; ++i) {
            count(counters_.requests);
        }
        if (answered.internal_errors != 0) {
            log("request failed: " + answered.internal_error);
        }
        if (answered.failed) {
            count(counters_.parse_errors);
            log("client stream failed: " + answered.failure);
            c.reading = false;
        }
        return answered.requests != 0;
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
        if (c.pending() == 0) {
            c.output_since = now_;
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
            c.output_since = now_;
            c.last_activity = now_;
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
    transport::unique_fd wake_;
    transport::unique_fd listener_;
    dev_t socket_device_ = 0;
    ino_t socket_inode_ = 0;
    std::vector<std::unique_ptr<client>> clients_;
    std::string chunk_;              ///< what one recv() reads into
    std::chrono::nanoseconds now_{}; ///< the time of the loop's round
    std::chrono::nanoseconds accept_resume_ = std::chrono::nanoseconds::min(); ///< accepting pauses until
    std::uint64_t accept_failures_in_episode_ = 0; ///< failed accepts since the last that did not fail
    std::mutex control_;
    std::thread thread_;
    std::atomic<bool> stop_requested_{false};
    std::atomic<bool> running_{false};
    atomic_counters counters_;
};

} // namespace rpc
NVMEKIT_END_NAMESPACE
