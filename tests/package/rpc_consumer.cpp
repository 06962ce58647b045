// A program that uses nvmekit's JSON-RPC headers (nvmekit::rpc) as an installed package: a
// server on a UNIX socket in a temporary directory answers one request of a client.
#include <nvmekit/rpc/jsonrpc.hpp>
#include <nvmekit/rpc/server.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <nlohmann/json.hpp>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int main()
{
    namespace rpc = nvmekit::rpc;
    rpc::registry methods;
    methods.add("hello", [](const nlohmann::json& params) -> rpc::outcome {
        auto [name] = rpc::params{params}.read(rpc::required<std::string>("name"));
        return "hello " + name;
    });

    char directory[] = "/tmp/nvmekit-rpc-consumer-XXXXXX";
    if (::mkdtemp(directory) == nullptr) {
        std::perror("mkdtemp");
        return 1;
    }
    const std::string path = std::string{directory} + "/rpc.sock";
    std::string response;
    {
        rpc::server server{methods, {.socket_path = path}};
        server.start();

        const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_un address{};
        address.sun_family = AF_UNIX;
        std::strncpy(address.sun_path, path.c_str(), sizeof address.sun_path - 1);
        if (fd < 0 || ::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
            std::perror("connect");
            return 1;
        }
        const std::string request =
            R"({"jsonrpc": "2.0", "method": "hello", "params": {"name": "nvmekit"}, "id": 1})";
        if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) !=
            static_cast<ssize_t>(request.size())) {
            std::perror("send");
            return 1;
        }
        char chunk[256];
        while (response.find('\n') == std::string::npos) {
            const ssize_t got = ::recv(fd, chunk, sizeof chunk, 0);
            if (got <= 0) {
                break;
            }
            response.append(chunk, static_cast<std::size_t>(got));
        }
        ::close(fd);
        server.stop();
    }
    ::rmdir(directory);
    std::printf("%s", response.c_str());
    return response == "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"hello nvmekit\"}\n" ? 0 : 1;
}
