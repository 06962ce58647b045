#pragma once
// The parts of the hostile-network test (hostile_network.cpp): nvmekit-serve in a child process
// with its resources read from /proc, raw NVMe/TCP and JSON-RPC clients that open many
// connections at once and send what they are told, and the well-behaved clients that do verified
// I/O (an NVMe/TCP host and a VM-like vfio-user client) on threads of their own.

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <optional>
#include <span>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <fmt/format.h>

#include <nvmekit/spec/data_pointer.hpp>
#include <nvmekit/spec/fabrics.hpp>
#include <nvmekit/spec/tcp.hpp>
#include <nvmekit/testing/flat_memory.hpp>
#include <nvmekit/testing/host.hpp>
#include <nvmekit/testing/manual_clock.hpp>
#include <nvmekit/testing/tcp_host.hpp>
#include <nvmekit/testing/vfio_user_client.hpp>
#include <nvmekit/transport/tcp/pdu_encode.hpp>
#include <nvmekit/transport/tcp/socket.hpp>

namespace nvmekit_hostile {

namespace spec = nvmekit::spec;
namespace nt = nvmekit::testing;
namespace tcp = nvmekit::transport::tcp;
using nvmekit::transport::tcp::unique_fd;
using clock_type = std::chrono::steady_clock;
using namespace std::chrono_literals;

// ---- the server process ----------------------------------------------------------------------------

/// nvmekit-serve in a child process: its descriptor limit set before exec, its output in a log.
class server_process {
public:
    server_process(const std::string& program, const std::vector<std::string>& arguments, rlim_t descriptors,
                   const std::string& log_path)
        : log_path_{log_path}
    {
        const int log = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (log < 0) {
            throw std::runtime_error("cannot create " + log_path);
        }
        std::vector<std::string> all{program};
        all.insert(all.end(), arguments.begin(), arguments.end());
        std::vector<char*> argv;
        argv.reserve(all.size() + 1);
        for (auto& argument : all) {
            argv.push_back(argument.data());
        }
        argv.push_back(nullptr);
        pid_ = ::fork();
        if (pid_ == 0) {
            // The child: only async-signal-safe calls until exec.
            const rlimit limit{descriptors, descriptors};
            if (::setrlimit(RLIMIT_NOFILE, &limit) != 0 || ::dup2(log, STDOUT_FILENO) < 0 ||
                ::dup2(log, STDERR_FILENO) < 0) {
                ::_exit(126);
            }
            ::execv(argv[0], argv.data());
            ::_exit(127);
        }
        ::close(log);
        if (pid_ < 0) {
            throw std::runtime_error("fork failed");
        }
    }
    server_process(const server_process&) = delete;
    server_process& operator=(const server_process&) = delete;
    ~server_process()
    {
        if (running()) {
            ::kill(pid_, SIGKILL);
            ::waitpid(pid_, nullptr, 0);
        }
    }

    /// Whether the process has not exited (reaping it when it has).
    bool running()
    {
        if (status_) {
            return false;
        }
        int status = 0;
        if (::waitpid(pid_, &status, WNOHANG) == pid_) {
            status_ = status;
            return false;
        }
        return true;
    }

    /// VmRSS of /proc/PID/status, in bytes.
    [[nodiscard]] std::optional<std::uint64_t> rss_bytes() const
    {
        std::ifstream status{"/proc/" + std::to_string(pid_) + "/status"};
        std::string line;
        while (std::getline(status, line)) {
            if (line.rfind("VmRSS:", 0) == 0) {
                return std::stoull(line.substr(6)) * 1024U;
            }
        }
        return std::nullopt;
    }

    /// The descriptors it holds (the entries of /proc/PID/fd).
    [[nodiscard]] std::optional<std::size_t> open_descriptors() const
    {
        std::error_code error;
        std::filesystem::directory_iterator entries{"/proc/" + std::to_string(pid_) + "/fd", error};
        if (error) {
            return std::nullopt;
        }
        std::size_t count = 0;
        for (auto it = std::filesystem::begin(entries); it != std::filesystem::end(entries);
             it.increment(error)) {
            if (error) {
                return std::nullopt;
            }
            ++count;
        }
        return count;
    }

    /// utime + stime of /proc/PID/stat (fields 14 and 15, after the command name), in seconds.
    [[nodiscard]] std::optional<double> cpu_seconds() const
    {
        std::ifstream stat{"/proc/" + std::to_string(pid_) + "/stat"};
        const std::string text{std::istreambuf_iterator<char>{stat}, std::istreambuf_iterator<char>{}};
        const auto end_of_name = text.rfind(')');
        if (end_of_name == std::string::npos) {
            return std::nullopt;
        }
        std::istringstream fields{text.substr(end_of_name + 2)};
        std::string field;
        std::uint64_t utime = 0;
        std::uint64_t stime = 0;
        // Field 3 (state) is the first after the name; utime is field 14, stime field 15.
        for (int number = 3; number <= 15 && fields >> field; ++number) {
            if (number == 14) {
                utime = std::stoull(field);
            } else if (number == 15) {
                stime = std::stoull(field);
            }
        }
        return static_cast<double>(utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
    }

    /// SIGTERM, then the wait status once it exits within `patience` (else SIGKILL and nullopt).
    std::optional<int> terminate(std::chrono::milliseconds patience)
    {
        if (!running()) {
            return status_;
        }
        ::kill(pid_, SIGTERM);
        const auto deadline = clock_type::now() + patience;
        while (running()) {
            if (clock_type::now() > deadline) {
                ::kill(pid_, SIGKILL);
                int status = 0;
                ::waitpid(pid_, &status, 0);
                status_ = status;
                killed_ = true;
                return std::nullopt;
            }
            std::this_thread::sleep_for(20ms);
        }
        return status_;
    }

    /// How it ended, for a failed check.
    [[nodiscard]] std::string describe_exit() const
    {
        if (!status_) {
            return "still running";
        }
        if (killed_) {
            return "did not exit after SIGTERM, killed";
        }
        if (WIFEXITED(*status_)) {
            return "exited with status " + std::to_string(WEXITSTATUS(*status_));
        }
        if (WIFSIGNALED(*status_)) {
            return "killed by signal " + std::to_string(WTERMSIG(*status_));
        }
        return "ended";
    }

    /// The last `lines` lines of its log.
    [[nodiscard]] std::string log_tail(std::size_t lines) const
    {
        std::ifstream log{log_path_};
        std::vector<std::string> kept;
        std::string line;
        while (std::getline(log, line)) {
            kept.push_back(line);
            if (kept.size() > lines) {
                kept.erase(kept.begin());
            }
        }
        std::string text;
        for (const auto& l : kept) {
            text += "    " + l + "\n";
        }
        return text;
    }

private:
    std::string log_path_;
    pid_t pid_ = -1;
    std::optional<int> status_;
    bool killed_ = false; ///< by terminate(), after SIGTERM went unheeded
};

// ---- sockets ---------------------------------------------------------------------------------------

/// A TCP port free now on 127.0.0.1 (the server binds it a moment later).
inline std::uint16_t free_tcp_port()
{
    const unique_fd s{::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)};
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    if (::bind(s.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0 ||
        ::getsockname(s.get(), reinterpret_cast<sockaddr*>(&address), &length) != 0) {
        throw std::runtime_error("no free TCP port");
    }
    return ntohs(address.sin_port);
}

/// Milliseconds left until `deadline` (0 once it has passed), as poll(2) takes them.
inline int remaining_ms(clock_type::time_point deadline)
{
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_type::now());
    return static_cast<int>(std::max<std::chrono::milliseconds::rep>(left.count(), 0));
}

/// Sends all of `bytes` on non-blocking `fd` by `deadline`; false when the peer is gone or slow.
inline bool send_all(int fd, std::span<const std::byte> bytes, clock_type::time_point deadline)
{
    while (!bytes.empty()) {
        const ssize_t sent = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
        if (sent > 0) {
            bytes = bytes.subspan(static_cast<std::size_t>(sent));
            continue;
        }
        if (sent < 0 && (errno == EAGAIN || errno == EINTR)) {
            pollfd wait{fd, POLLOUT, 0};
            if (::poll(&wait, 1, remaining_ms(deadline)) <= 0) {
                return false;
            }
            continue;
        }
        return false;
    }
    return true;
}

/// The outcome of opening many TCP connections at once.
struct opened_connections {
    std::vector<unique_fd> connected;
    std::size_t refused = 0;      ///< RST (or another error) instead of a handshake
    std::size_t no_handshake = 0; ///< still waiting at the deadline: the SYN was dropped
};

/// Opens `count` non-blocking connections to 127.0.0.1:`port` at once, waiting until `deadline`
/// for their handshakes; with `sources` > 0, from that many loopback addresses in turn
/// (127.0.0.`first_source`, the next one, ...: as many hosts), else from 127.0.0.1. A connection
/// may be complete while the server has not accepted it yet (it waits in the listen backlog).
inline opened_connections open_tcp_connections(std::uint16_t port, std::size_t count,
                                               clock_type::time_point deadline, std::uint32_t sources = 0,
                                               std::uint32_t first_source = 2)
{
    opened_connections result;
    std::vector<unique_fd> pending;
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons(port);
    for (std::size_t i = 0; i < count; ++i) {
        unique_fd s{::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)};
        if (s.get() < 0) {
            throw std::runtime_error("socket: " + std::string{std::strerror(errno)});
        }
        if (sources != 0) {
            sockaddr_in source{};
            source.sin_family = AF_INET;
            source.sin_addr.s_addr =
                htonl((INADDR_LOOPBACK & ~0xffU) + first_source + static_cast<std::uint32_t>(i % sources));
            if (::bind(s.get(), reinterpret_cast<const sockaddr*>(&source), sizeof source) != 0) {
                throw std::runtime_error("bind to a loopback address: " + std::string{std::strerror(errno)});
            }
        }
        if (::connect(s.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0) {
            result.connected.push_back(std::move(s));
        } else if (errno == EINPROGRESS) {
            pending.push_back(std::move(s));
        } else {
            ++result.refused;
        }
    }
    while (!pending.empty()) {
        std::vector<pollfd> fds;
        fds.reserve(pending.size());
        for (const auto& s : pending) {
            fds.push_back({s.get(), POLLOUT, 0});
        }
        if (::poll(fds.data(), fds.size(), remaining_ms(deadline)) <= 0) {
            break;
        }
        std::vector<unique_fd> still;
        for (std::size_t i = 0; i < pending.size(); ++i) {
            if (fds[i].revents == 0) {
                still.push_back(std::move(pending[i]));
                continue;
            }
            int error = 0;
            socklen_t length = sizeof error;
            ::getsockopt(pending[i].get(), SOL_SOCKET, SO_ERROR, &error, &length);
            if (error == 0) {
                result.connected.push_back(std::move(pending[i]));
            } else {
                ++result.refused;
            }
        }
        pending = std::move(still);
    }
    result.no_handshake = pending.size();
    return result;
}

/// How a connection answered.
struct tcp_answer {
    enum class kind { pdu, closed, silent } what = kind::silent;
    std::vector<std::byte> pdu; ///< the first whole PDU received
    [[nodiscard]] spec::pdu_type type() const noexcept
    {
        return pdu.empty() ? spec::pdu_type{0xff} : static_cast<spec::pdu_type>(pdu[0]);
    }
};

/// The next whole PDU of each of `connections` (non-blocking descriptors), waiting until
/// `deadline`; what a connection received beyond its PDU is dropped.
inline std::vector<tcp_answer> receive_pdus(std::span<const int> connections, clock_type::time_point deadline)
{
    std::vector<tcp_answer> answers(connections.size());
    std::vector<std::vector<std::byte>> received(connections.size());
    std::vector<bool> done(connections.size(), false);
    const auto whole = [](const std::vector<std::byte>& bytes) -> std::size_t {
        if (bytes.size() < sizeof(spec::pdu_common_header)) {
            return 0;
        }
        std::uint32_t plen = 0;
        std::memcpy(&plen, bytes.data() + 4, sizeof plen);
        plen = std::max<std::uint32_t>(plen, sizeof(spec::pdu_common_header));
        return bytes.size() >= plen ? plen : 0;
    };
    for (;;) {
        std::vector<pollfd> fds;
        std::vector<std::size_t> index;
        for (std::size_t i = 0; i < connections.size(); ++i) {
            if (!done[i]) {
                fds.push_back({connections[i], POLLIN, 0});
                index.push_back(i);
            }
        }
        if (fds.empty() || ::poll(fds.data(), fds.size(), remaining_ms(deadline)) <= 0) {
            break;
        }
        for (std::size_t k = 0; k < fds.size(); ++k) {
            if (fds[k].revents == 0) {
                continue;
            }
            const std::size_t i = index[k];
            std::array<std::byte, 4096> buffer{};
            const ssize_t got = ::recv(connections[i], buffer.data(), buffer.size(), 0);
            if (got <= 0) {
                if (got < 0 && (errno == EAGAIN || errno == EINTR)) {
                    continue;
                }
                answers[i].what = tcp_answer::kind::closed;
                done[i] = true;
                continue;
            }
            received[i].insert(received[i].end(), buffer.begin(), buffer.begin() + got);
            if (const std::size_t size = whole(received[i]); size != 0) {
                answers[i].what = tcp_answer::kind::pdu;
                answers[i].pdu.assign(received[i].begin(),
                                      received[i].begin() + static_cast<std::ptrdiff_t>(size));
                done[i] = true;
            }
        }
    }
    return answers;
}

/// Whether `connection` was closed by its peer (EOF or reset); what it received is dropped.
inline bool closed_by_peer(const unique_fd& connection)
{
    for (;;) {
        std::array<std::byte, 4096> buffer{};
        const ssize_t got = ::recv(connection.get(), buffer.data(), buffer.size(), MSG_DONTWAIT);
        if (got == 0) {
            return true;
        }
        if (got < 0) {
            return errno != EAGAIN && errno != EINTR;
        }
    }
}

// ---- NVMe/TCP PDUs ---------------------------------------------------------------------------------

/// An ICReq asking for the digests given (HPDA 0, MAXR2T 0).
inline std::vector<std::byte> icreq_pdu(bool header_digest = false, bool data_digest = false)
{
    std::vector<std::byte> bytes(sizeof(spec::icreq_pdu));
    tcp::encode_icreq(0, header_digest, data_digest, 0, bytes);
    return bytes;
}

/// A Connect capsule: the admin queue (CNTLID FFFFh) of `subnqn` for `hostnqn`, KATO `kato_ms`.
inline std::vector<std::byte> connect_pdu(const std::string& subnqn, const std::string& hostnqn,
                                          std::uint32_t kato_ms, const tcp::connection_params& params = {})
{
    spec::connect_command command{};
    command.cdw0.set(spec::command_dword0::opc, spec::fabrics_command_opcode);
    command.cdw0.set(spec::command_dword0::cid, 1);
    command.fctype = spec::fabrics_command_type::connect;
    command.qid = 0;
    command.sqsize = 31;
    command.kato = kato_ms;
    spec::connect_data data{};
    data.cntlid = spec::dynamic_controller_id;
    static_cast<void>(data.set_subsystem_nqn(subnqn));
    static_cast<void>(data.set_host_nqn(hostnqn));
    auto sqe = std::bit_cast<spec::submission_queue_entry>(command);
    sqe.cdw0.set(spec::command_dword0::psdt, spec::data_pointer_type::sgl_contiguous_metadata);
    sqe.dptr = spec::to_data_pointer(
        spec::sgl_descriptor::data_block(0, sizeof data, spec::sgl_descriptor_subtype::offset));
    const std::array<std::span<const std::byte>, 1> parts{std::as_bytes(std::span{&data, 1})};
    std::vector<std::byte> bytes(tcp::pdu_size(spec::pdu_type::capsule_cmd, sizeof data, params));
    tcp::encode_capsule_cmd(sqe, parts, params, bytes);
    return bytes;
}

/// A common header with the fields given, followed by `body` zero bytes.
inline std::vector<std::byte> raw_pdu(std::uint8_t type, std::uint8_t hlen, std::uint32_t plen,
                                      std::size_t body)
{
    std::vector<std::byte> bytes(sizeof(spec::pdu_common_header) + body);
    bytes[0] = std::byte{type};
    bytes[2] = std::byte{hlen};
    std::memcpy(bytes.data() + 4, &plen, sizeof plen);
    return bytes;
}

/// Whether `answer` is a CapsuleResp with a successful status.
inline bool successful_response(const tcp_answer& answer)
{
    if (answer.what != tcp_answer::kind::pdu || answer.type() != spec::pdu_type::capsule_resp ||
        answer.pdu.size() < sizeof(spec::capsule_resp_pdu)) {
        return false;
    }
    spec::capsule_resp_pdu response{};
    std::memcpy(&response, answer.pdu.data(), sizeof response);
    return response.cqe.status().is_success();
}

// ---- JSON-RPC --------------------------------------------------------------------------------------

/// A non-blocking connection to the Unix socket `path`, tried again while the server's backlog
/// is full until `deadline`; invalid when refused.
inline unique_fd unix_connect(const std::string& path, clock_type::time_point deadline)
{
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::memcpy(address.sun_path, path.c_str(), std::min(path.size(), sizeof address.sun_path - 1));
    for (;;) {
        unique_fd s{::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)};
        if (s.get() < 0) {
            return {};
        }
        if (::connect(s.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0) {
            return s;
        }
        // A full backlog (the server is behind with accepting): try again, as a blocking
        // connect would wait.
        if (errno != EAGAIN || clock_type::now() >= deadline) {
            return {};
        }
        std::this_thread::sleep_for(10ms);
    }
}

/// What a JSON-RPC exchange got: the first line of the answer, and whether the server closed.
struct rpc_answer {
    bool connected = false;
    std::string line;
    bool closed = false;
};

/// Sends `request` on a new connection and reads the answer up to its newline, or to the
/// server's close, until `patience` runs out; with `wait_for_close`, reads on to the close.
inline rpc_answer rpc_exchange(const std::string& path, std::string_view request,
                               std::chrono::milliseconds patience, bool wait_for_close = false)
{
    rpc_answer answer;
    const auto deadline = clock_type::now() + patience;
    const auto s = unix_connect(path, deadline);
    if (s.get() < 0) {
        return answer;
    }
    answer.connected = true;
    // A server that closes early (a request it refuses part way) may still have answered: what
    // it sent is read below whether or not all of the request went out.
    static_cast<void>(send_all(s.get(), std::as_bytes(std::span{request}), deadline));
    std::string received;
    while (!answer.closed && (wait_for_close || received.find('\n') == std::string::npos)) {
        pollfd wait{s.get(), POLLIN, 0};
        if (::poll(&wait, 1, remaining_ms(deadline)) <= 0) {
            break;
        }
        std::array<char, 4096> buffer{};
        const ssize_t got = ::recv(s.get(), buffer.data(), buffer.size(), 0);
        if (got < 0 && (errno == EAGAIN || errno == EINTR)) {
            continue;
        }
        if (got <= 0) {
            answer.closed = true;
            break;
        }
        received.append(buffer.data(), static_cast<std::size_t>(got));
    }
    answer.line = received.substr(0, received.find('\n'));
    return answer;
}

/// The error code of a JSON-RPC response line; nullopt when it is no error response.
inline std::optional<int> rpc_error_code(const std::string& line)
{
    const auto response = nlohmann::json::parse(line, nullptr, false);
    if (response.is_discarded() || !response.is_object() || !response.contains("error") ||
        !response["error"].is_object() || !response["error"].contains("code") ||
        !response["error"]["code"].is_number_integer()) {
        return std::nullopt;
    }
    return response["error"]["code"].get<int>();
}

/// Whether a JSON-RPC response line is a result naming subsystem `nqn` (nvmf_get_subsystems).
inline bool lists_subsystem(const std::string& line, const std::string& nqn)
{
    const auto response = nlohmann::json::parse(line, nullptr, false);
    if (response.is_discarded() || !response.is_object() || !response.contains("result") ||
        !response["result"].is_array()) {
        return false;
    }
    return std::any_of(response["result"].begin(), response["result"].end(), [&](const nlohmann::json& s) {
        return s.is_object() && s.contains("nqn") && s["nqn"] == nqn;
    });
}

// ---- the well-behaved clients ----------------------------------------------------------------------

/// Bytes for the `round`-th operation of client `client`: every write differs from the last.
inline void fill_pattern(std::span<std::byte> out, std::uint64_t client, std::uint64_t round)
{
    std::uint64_t x = (client << 48) ^ (round * 0x9e3779b97f4a7c15ULL) ^ 0x2545f4914f6cdd1dULL;
    for (std::size_t i = 0; i < out.size(); i += 8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        std::memcpy(out.data() + i, &x, std::min<std::size_t>(8, out.size() - i));
    }
}

/// An NVMe/TCP host of subsystem `subnqn` at 127.0.0.1:`port`: an admin and an I/O connection,
/// every wait bounded by `patience`; each operation writes a pattern to its own LBA range from
/// `first_lba` (4 KiB in the capsule, or 64 KiB by R2T and H2CData), reads it back and compares.
class tcp_verifier {
public:
    tcp_verifier(std::uint16_t port, const std::string& subnqn, const std::string& hostnqn,
                 std::uint64_t first_lba, std::chrono::milliseconds patience)
        : host_{"127.0.0.1", port, {.subsystem_nqn = subnqn, .host_nqn = hostnqn, .timeout = patience}}
        , first_lba_{first_lba}
    {
        host_.connect_admin();
        host_.enable();
        if (!host_.connect_io(1).ok()) {
            throw nt::host_error{"the I/O queue's Connect failed"};
        }
    }

    void verify_once()
    {
        const std::size_t bytes = round_ % 4 == 3 ? 64 * 1024 : 4096;
        const std::uint64_t slba = first_lba_ + (round_ % 64) * 128;
        written_.resize(bytes);
        fill_pattern(written_, 1, round_);
        if (const auto w = host_.write(1, slba, written_); !w.ok()) {
            throw nt::host_error{fmt::format("NVMe/TCP write of {} bytes at LBA {} failed", bytes, slba)};
        }
        if (const auto r = host_.read(1, slba, static_cast<std::uint32_t>(bytes / 512), read_); !r.ok()) {
            throw nt::host_error{fmt::format("NVMe/TCP read of {} bytes at LBA {} failed", bytes, slba)};
        }
        if (read_ != written_) {
            throw nt::host_error{fmt::format("NVMe/TCP: {} bytes at LBA {} read back differ", bytes, slba)};
        }
        ++round_;
    }

private:
    nt::tcp_host host_;
    std::uint64_t first_lba_;
    std::uint64_t round_ = 0;
    std::vector<std::byte> written_;
    std::vector<std::byte> read_;
};

inline constexpr std::uint64_t guest_base = 0x1'0000'0000;
inline constexpr std::size_t guest_bytes = std::size_t{4} << 20;

/// Guest RAM in a memfd, shared with the server by DMA_MAP, as QEMU shares it.
class guest_memory {
public:
    guest_memory() : fd_{::memfd_create("hostile-network-guest", MFD_CLOEXEC)}
    {
        if (fd_ < 0 || ::ftruncate(fd_, guest_bytes) != 0) {
            throw std::runtime_error("memfd for the guest memory");
        }
        void* mapping = ::mmap(nullptr, guest_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
        if (mapping == MAP_FAILED) {
            throw std::runtime_error("mmap of the guest memory");
        }
        data_ = static_cast<std::byte*>(mapping);
    }
    guest_memory(const guest_memory&) = delete;
    guest_memory& operator=(const guest_memory&) = delete;
    ~guest_memory()
    {
        ::munmap(data_, guest_bytes);
        ::close(fd_);
    }
    [[nodiscard]] int fd() const noexcept { return fd_; }
    [[nodiscard]] std::span<std::byte> bytes() const noexcept { return {data_, guest_bytes}; }

private:
    int fd_;
    std::byte* data_ = nullptr;
};

/// A VM-like vfio-user client: VERSION, DMA_MAP of its guest memory, Memory Space and Bus Master
/// Enable, then the host driver's bring-up (one polled I/O queue pair) over REGION_READ and
/// REGION_WRITE; each operation writes a pattern (4 KiB, or 32 KiB by a PRP list), reads it back
/// into another buffer and compares.
class vfio_user_verifier {
public:
    vfio_user_verifier(const std::string& path, std::uint64_t first_lba)
        : client_{path, {.patience = 30s}}, first_lba_{first_lba}
    {
        if (client_.negotiate() != 0 || client_.map_dma(guest_.fd(), guest_base, guest_bytes) != 0 ||
            !client_.enable_function()) {
            throw nt::host_error{"vfio-user: VERSION, DMA_MAP or the PCI command register refused"};
        }
        memory_.add_range(guest_base, guest_.bytes());
        // Each wait step sleeps (vfio_user_client::poll): 200,000 steps is minutes at most.
        const auto up = host_.bring_up({.io_queue_pairs = 1, .interrupts = false, .max_polls = 200'000});
        if (up.io_queue_pairs != 1) {
            throw nt::host_error{"vfio-user: no I/O queue pair"};
        }
    }

    void verify_once()
    {
        const std::size_t bytes = round_ % 4 == 3 ? max_bytes : 4096;
        const std::uint64_t slba = first_lba_ + (round_ % 64) * (max_bytes / 512);
        written_.resize(bytes);
        fill_pattern(written_, 2, round_);
        // Each buffer goes back with the PRP list describe_data() built for it at the end; a
        // failure leaves them (the verifier has failed anyway).
        const std::uint64_t out = host_.allocate(bytes);
        const std::uint64_t in = host_.allocate(bytes);
        if (memory_.write(out, written_)) {
            throw nt::host_error{"vfio-user: cannot write the guest memory"};
        }
        auto write =
            host_.lba_command(spec::nvm_opcode::write, 1, slba, static_cast<std::uint32_t>(bytes / 512));
        host_.describe_data(write, out, bytes);
        if (!host_.io(1, write).ok()) {
            throw nt::host_error{fmt::format("vfio-user write of {} bytes at LBA {} failed", bytes, slba)};
        }
        auto read =
            host_.lba_command(spec::nvm_opcode::read, 1, slba, static_cast<std::uint32_t>(bytes / 512));
        host_.describe_data(read, in, bytes);
        if (!host_.io(1, read).ok()) {
            throw nt::host_error{fmt::format("vfio-user read of {} bytes at LBA {} failed", bytes, slba)};
        }
        read_.resize(bytes);
        if (memory_.read(in, read_) || read_ != written_) {
            throw nt::host_error{fmt::format("vfio-user: {} bytes at LBA {} read back differ", bytes, slba)};
        }
        host_.release(out);
        host_.release(in);
        ++round_;
    }

private:
    static constexpr std::size_t max_bytes = 32 * 1024;
    using host_type = nt::in_process_host<nt::vfio_user_client>;

    nt::vfio_user_client client_;
    guest_memory guest_;
    nt::flat_memory memory_;
    nt::manual_clock clock_;
    host_type host_{client_, memory_, clock_};
    std::uint64_t first_lba_;
    std::uint64_t round_ = 0;
    std::vector<std::byte> written_;
    std::vector<std::byte> read_;
};

/// Runs a verifier's operations on a thread of its own while `running`, counting them; the first
/// failure ends the thread and is kept.
template <typename Verifier>
class io_loop {
public:
    explicit io_loop(Verifier& verifier)
        : thread_{[this, &verifier] {
            try {
                while (running_.load()) {
                    verifier.verify_once();
                    operations_.fetch_add(1);
                }
            } catch (const std::exception& e) {
                const std::lock_guard lock{mutex_};
                failure_ = e.what();
            }
        }}
    {}
    io_loop(const io_loop&) = delete;
    io_loop& operator=(const io_loop&) = delete;
    ~io_loop() { stop(); }

    void stop()
    {
        running_ = false;
        if (thread_.joinable()) {
            thread_.join();
        }
    }
    [[nodiscard]] std::uint64_t operations() const { return operations_.load(); }
    [[nodiscard]] std::string failure() const
    {
        const std::lock_guard lock{mutex_};
        return failure_;
    }

private:
    std::atomic<bool> running_{true};
    std::atomic<std::uint64_t> operations_{0};
    mutable std::mutex mutex_;
    std::string failure_;
    std::thread thread_;
};

/// Samples the server's RSS and descriptors every 50 ms while it runs; the largest samples.
class resource_sampler {
public:
    explicit resource_sampler(const server_process& server)
        : thread_{[this, &server] {
            while (running_.load()) {
                raise(rss_peak_, server.rss_bytes().value_or(0));
                raise(descriptors_peak_, server.open_descriptors().value_or(0));
                std::this_thread::sleep_for(50ms);
            }
        }}
    {}
    resource_sampler(const resource_sampler&) = delete;
    resource_sampler& operator=(const resource_sampler&) = delete;
    ~resource_sampler()
    {
        running_ = false;
        thread_.join();
    }
    [[nodiscard]] std::uint64_t rss_peak() const { return rss_peak_.load(); }
    [[nodiscard]] std::uint64_t descriptors_peak() const { return descriptors_peak_.load(); }

private:
    static void raise(std::atomic<std::uint64_t>& peak, std::uint64_t sample)
    {
        std::uint64_t seen = peak.load();
        while (sample > seen && !peak.compare_exchange_weak(seen, sample)) {
        }
    }

    std::atomic<bool> running_{true};
    std::atomic<std::uint64_t> rss_peak_{0};
    std::atomic<std::uint64_t> descriptors_peak_{0};
    std::thread thread_;
};

// ---- the test's surroundings ----------------------------------------------------------------------

/// A temporary directory, removed with what it holds.
class temporary_directory {
public:
    temporary_directory()
    {
        const char* base = std::getenv("TMPDIR");
        std::string pattern =
            std::string{base != nullptr && base[0] == '/' ? base : "/tmp"} + "/nvmekit-hostile-XXXXXX";
        if (::mkdtemp(pattern.data()) == nullptr) {
            throw std::runtime_error("mkdtemp " + pattern);
        }
        path_ = pattern;
    }
    temporary_directory(const temporary_directory&) = delete;
    temporary_directory& operator=(const temporary_directory&) = delete;
    ~temporary_directory()
    {
        std::error_code ignored;
        std::filesystem::remove_all(path_, ignored);
    }
    [[nodiscard]] const std::string& path() const noexcept { return path_; }

private:
    std::string path_;
};

/// Raises this process's descriptor limit to its hard limit: the hostile clients hold about 700.
inline void raise_descriptor_limit()
{
    rlimit limit{};
    if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
        limit.rlim_cur = limit.rlim_max;
        ::setrlimit(RLIMIT_NOFILE, &limit);
    }
}

} // namespace nvmekit_hostile
