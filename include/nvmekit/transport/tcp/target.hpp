#pragma once
/// An NVMe/TCP target (NVMe/TCP Transport Specification 1.0): a listening socket, its queue-pair
/// connections and the controllers (associations) they create, served by poll loops over
/// non-blocking POSIX sockets; no thread per connection. By default one loop (poll()) serves
/// everything; with connection groups the I/O queues' connections are spread over poll groups,
/// each polled on a thread of the embedder's (see "Connection groups" below).
///
///     nvmekit::transport::tcp::target<>::subsystem_type subsystem;   // namespaces: the embedder's
///     subsystem.add_namespace(nvmekit::ram_backend{1ULL << 30});
///     nvmekit::transport::tcp::target<> target{subsystem, {.address = "127.0.0.1", .port = 4420}};
///     while (running) {
///         target.poll(std::chrono::milliseconds{10});
///     }
///
/// A connection answers ICReq with ICResp (digests and MAXH2CDATA from target_limits), then takes
/// command capsules. Fabrics commands are the transport's: Connect on QID 0 creates a controller
/// of the subsystem (CNTLID FFFFh; the subsystem assigns the CNTLID) and connects its admin queue
/// (SQSIZE + 1 entries); Connect on an I/O QID names that controller by CNTLID, from the same
/// host (HOSTNQN, HOSTID, byte for byte), and connects the queue (a QID or SQSIZE the controller
/// does not take is Connect Invalid Parameters naming it); Property Get/Set become
/// controller::property_read/property_write (CAP, VS, CC, CSTS and CRTO, each at its size; no
/// NSSR: NVM Subsystem Reset is not offered); Disconnect disconnects an I/O queue. Every other
/// command goes to controller::submit with its SGL rewritten to one Data Block over a buffer of
/// the connection (command_buffers, the association's DMA provider): in-capsule data and H2CData
/// are received straight into it, a larger write is asked for by R2Ts of at most MAXH2CDATA
/// bytes each, in order, with up to MAXR2T + 1 of them outstanding (the host's ICReq, within
/// target_limits::max_outstanding_r2t), and a completed read's data is sent from it as one
/// C2HData (LAST_PDU, never SUCCESS) before the response capsule. Data is thus copied once each
/// way between the socket and the buffer the controller reaches. A command may describe at most
/// max_data_length() bytes (the smaller of target_options::max_data_length and MDTS). Its SGL may
/// describe more than it transfers (SGLS bit 18): a write's data is asked for whole and the
/// controller uses its first bytes; a read's C2HData carries only the bytes the controller
/// transferred (none: no C2HData).
///
/// Errors: a fatal stream error (pdu_stream, an H2CData naming no R2T or outside it) is answered
/// with C2HTermReq and the connection is closed; an H2CTermReq closes it; a data digest error
/// fails its command with Transient Transport Error. Other connections carry on. A Controller
/// Reset frees the slots of the commands it ended. The admin connection's end ends the
/// association: its I/O connections are closed, the controller is disabled and destroyed once
/// its backend is idle and no connection sends from its buffers.
///
/// Bounds (target_options; statistics() counts each refusal, timeout and wait): a connection
/// beyond max_connections_per_address from its host's IP address is closed as it is accepted.
/// The connections of every target of the process together leave descriptor_reserve of
/// RLIMIT_NOFILE's descriptors to the rest of the process. When the listener is full (at
/// max_connections, or at that bound), a new connection takes the place of the connection
/// accepted longest ago that has not sent its ICReq, which is closed; with none to close, a
/// connection beyond max_connections is closed as it is accepted, and at the descriptor bound it
/// waits in the backlog, the listener left out of the poll set. A connection that sends no
/// ICReq within icreq_timeout, or has not connected within connect_timeout, is closed; one
/// stops reading while send_backlog_limit bytes wait for its host. An admin Connect beyond
/// max_associations, beyond max_associations_per_host for its host NQN or beyond
/// max_associations_per_address from its host's IP address completes with Connect Controller
/// Busy. The command buffers' storage is bounded
/// per association (max_association_buffer_bytes) and over the target (max_buffer_bytes): a
/// command whose buffer does not fit waits, in order behind its queue's other waiting commands
/// and before its first R2T, until buffers are freed (in-capsule data is always taken); a
/// closed connection's free storage is given back (command_buffers::trim). A connection that
/// cannot be accepted for want of descriptors waits in the backlog while the listener is left
/// out of the poll set for accept_pause.
///
/// Keep alive: the admin Connect's KATO becomes the controller's Keep Alive Timer feature (Get
/// Features reports it, Keep Alive commands restart the timer, Set Features changes it); a
/// discovery controller asked for none gets discovery_keep_alive_timeout. The timer runs from
/// the admin Connect: while the controller is ready it is the controller's, and its expiry ends
/// the association; while it is not (never enabled, reset, shut down) the target ends the
/// association when KATO passes without a command on the admin queue.
///
/// Time: the controllers' timers, icreq_timeout, connect_timeout, the keep alive of controllers
/// not ready, termination_linger and accept_pause all read Traits::clock, so a test or simulator
/// that gives its own clock decides when they expire.
///
/// Subsystems: one listener serves any number of subsystems (add_subsystem, remove_subsystem);
/// a Connect's SUBNQN picks one, and each numbers its controllers itself, so an I/O Connect
/// names a controller by SUBNQN and CNTLID. Each has its hosts (host_access: any, or a list;
/// the constructor that takes a subsystem uses target_options::allowed_hosts); changing them
/// ends the controllers of hosts no longer allowed.
///
/// Discovery: a Connect to the well-known discovery NQN creates a discovery controller (admin
/// queue only, any host): Identify Controller and the Discovery log page (the current discovery
/// subsystem first, SUBTYPE 3h, then one entry per subsystem of this listener the host may
/// connect to, each with the listener's address, or on 0.0.0.0 or :: the address the host
/// connected to; then one per referral, add_referral: another discovery service or an NVM
/// subsystem elsewhere; read at any dword offset; GENCTR changes with the subsystems, their
/// hosts and the referrals, and a Discovery Log Page Change event reports it to the hosts that
/// enabled it) come from discovery.hpp, Property Get/Set,
/// features, Asynchronous Event Requests and Keep Alive from the controller core, other opcodes
/// complete with Invalid Command Opcode.
///
/// An embedder that waits for several targets, or for a target beside descriptors of its own,
/// in one poll(2) asks each for add_pollfds() and has_work(), then calls poll(0) on each.
///
/// Connection groups (target_options::connection_groups = N, Traits concurrent_target_traits):
///
///     for (std::uint16_t i = 0; i < target.connection_group_count(); ++i) {
///         threads.emplace_back([&, i] { while (running) target.poll_group(i, 10ms); });
///     }
///     while (running) target.poll(10ms);        // accepts, Connects, admin queues, discovery
///
/// poll() accepts connections and serves them until their Connect; the admin and discovery
/// queues stay with it, as does every association's lifetime: controller creation and
/// destruction, the admin context (controller::poll), Controller Reset, shutdown, keep alive
/// expiry, host access and subsystem changes. An I/O queue's connection, once its Connect
/// succeeds, moves to group i (round-robin), whose thread from then on receives its PDUs,
/// submits its commands to poll group i of the controller (concurrent_poll_groups: the queue was
/// placed there), runs that poll group, takes the completions and sends them: a queue pair lives
/// on one group, its commands take no lock and allocate nothing in steady state, and each
/// connection's command buffers are a partition of the association's command_buffers that only
/// its group's thread uses. poll() and the groups share no connection: they tell each other what
/// happens by mailbox (mailbox.hpp), woken by an eventfd. A Controller Reset makes the groups end
/// their connections' commands (and a counter each connection checks keeps a connection whose
/// queue the reset deleted away from the controller even before the message arrives; while the
/// controller is not ready its group answers new commands itself with Command Sequence Error, as
/// the controller's submit() would). An ended association makes them close its connections and
/// answer. A connection closed in a group (Disconnect, the host's close, a fatal error) reaches
/// poll(), which disconnects its queue, frees its buffers once the backend is idle and destroys
/// the controller once no group holds anything of it. remove_subsystem() thus waits for the
/// groups: keep their threads running while poll() runs, and stop them before the target is
/// destroyed.
///
/// Not yet: other listeners of the embedder in the log (each target lists its own address);
/// with connection groups, the buffers of commands a Controller Reset ended are freed only when
/// their connection closes (the host closes it to connect the queue again).

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include <cerrno>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <nvmekit/config.hpp>
#include <nvmekit/contracts/clock.hpp>
#include <nvmekit/contracts/threading.hpp>
#include <nvmekit/controller.hpp>
#include <nvmekit/runtime/mailbox.hpp>
#include <nvmekit/spec/data_pointer.hpp>
#include <nvmekit/spec/fabrics.hpp>
#include <nvmekit/spec/opcodes.hpp>
#include <nvmekit/spec/registers.hpp>
#include <nvmekit/spec/status.hpp>
#include <nvmekit/spec/tcp.hpp>
#include <nvmekit/transport/tcp/command_buffers.hpp>
#include <nvmekit/transport/tcp/command_slots.hpp>
#include <nvmekit/transport/tcp/connection_params.hpp>
#include <nvmekit/transport/tcp/descriptor_reserve.hpp>
#include <nvmekit/transport/tcp/discovery.hpp>
#include <nvmekit/transport/tcp/pdu_encode.hpp>
#include <nvmekit/transport/tcp/pdu_stream.hpp>
#include <nvmekit/transport/tcp/send_queue.hpp>
#include <nvmekit/transport/tcp/socket.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace transport::tcp {

/// Controller traits of a TCP target: its "host memory" is the target's command buffers.
struct target_traits : default_traits {
    using dma = command_buffers;
    using interrupts = no_interrupts;
    using clock = steady_clock;
};

/// Controller traits of a TCP target whose connections are spread over connection groups
/// (target_options::connection_groups): the controllers' I/O queues run on concurrent poll groups.
struct concurrent_target_traits : target_traits {
    using threading = multi_threaded;
};

/// How a target listens and what it grants.
struct target_options {
    /// IPv4 or IPv6 address to listen on, and the port (0: any free port; see target::port()).
    std::string address = "127.0.0.1";
    std::uint16_t port = spec::tcp_default_port;
    target_limits limits{};
    /// Largest data one command may describe (SPDK's max_io_size); a larger SGL completes with
    /// Data SGL Length Invalid. The controllers' MDTS bounds it too: an SGL beyond MDTS completes
    /// with Invalid Field in Command (Base 2.0 Figure 275, MDTS), so the limit in effect is the
    /// smaller of the two (max_data_length()).
    std::uint32_t max_data_length = 1U << 20;
    /// Configuration of each controller Connect creates (CNTLID is the subsystem's to assign).
    /// NVM Subsystem Reset is not offered (subsystem_reset_supported is taken as false: CAP.NSSRS
    /// reads 0 and a Property Set of NSSR fails), since a reset of the one controller that
    /// receives it would be no reset of the subsystem, whose other controllers go on.
    controller_config controller{};
    /// A connection stops reading while more than this many bytes wait to be sent to its host.
    std::size_t send_backlog_limit = std::size_t{4} << 20;
    /// How long a terminated connection may take to send its C2HTermReq before it is closed
    /// (Traits::clock time).
    std::chrono::milliseconds termination_linger{500};
    /// How long a connection may take from its acceptance to a successful Connect before it is
    /// closed (a peer that opens connections and sends nothing holds no resources for long;
    /// Traits::clock time).
    std::chrono::milliseconds connect_timeout{10000};
    /// How long a connection may take from its acceptance to its ICReq before it is closed, a
    /// shorter bound than connect_timeout's on a peer that opens connections and sends nothing
    /// (Traits::clock time).
    std::chrono::milliseconds icreq_timeout{5000};
    /// Connections (of any state, in poll() or in a connection group) this listener holds at
    /// once. One accepted beyond it takes the place of the connection accepted longest ago that
    /// has not sent its ICReq yet, which is closed (idle peers cannot lock new hosts out); when
    /// every connection has sent its ICReq, it is closed at once (no PDU is exchanged). SPDK and
    /// Linux's nvmet have no such limit; a host of 127 I/O queues needs 128 connections per
    /// controller.
    std::size_t max_connections = 1024;
    /// Connections from one host IP address (IPv4 and its IPv4-mapped IPv6 form counting as one)
    /// this listener holds at once; one beyond it is closed at once.
    std::size_t max_connections_per_address = 256;
    /// Descriptors the connections of every target of the process together leave free, for the
    /// rest of the process (a management socket, vfio-user clients, files): they hold at most
    /// RLIMIT_NOFILE's soft limit less this many (read as the target is made, and again as it
    /// accepts or waits at the bound). At that bound a new connection is taken only in place of
    /// one that has not sent its ICReq yet (the one accepted longest ago, closed); otherwise it
    /// waits in the listen backlog, the listener left out of the poll set until a connection
    /// closes (one of another target: from this target's next poll round). 0: no reserve
    /// (accept(2) failing for want of descriptors pauses accepting, accept_pause). The
    /// constructor throws std::invalid_argument when the soft limit is not above it.
    std::size_t descriptor_reserve = 128;
    /// Associations (controllers, discovery ones included, until their end is complete) this
    /// listener holds at once; an admin Connect beyond it completes with Connect Controller Busy
    /// (as SPDK answers when it cannot create a controller; a later Connect may succeed). Each
    /// costs about a megabyte with the default limits (the controller's admin buffers and
    /// request pools). Per subsystem, SPDK bounds controllers by min_cntlid..max_cntlid.
    std::size_t max_associations = 128;
    /// Associations one host NQN holds at once, with any subsystem of this listener or its
    /// discovery controller; an admin Connect beyond it completes with Connect Controller Busy.
    std::size_t max_associations_per_host = 32;
    /// Associations whose admin connection came from one host IP address (IPv4 and its
    /// IPv4-mapped IPv6 form counting as one) this listener holds at once, whatever their host
    /// NQNs: a peer that makes up a new host NQN for each Connect is bounded by it. An admin
    /// Connect beyond it completes with Connect Controller Busy.
    std::size_t max_associations_per_address = 64;
    /// KATO given to a discovery controller whose Connect asks for none (KATO 0): it ends when the
    /// host sends no Keep Alive for this long, as Linux's nvmet gives 120 s (NVMET_DISC_KATO_MS).
    /// 0: a discovery controller without KATO lives as long as its connection.
    std::chrono::milliseconds discovery_keep_alive_timeout{120000};
    /// Bytes of command buffer storage (the data of commands in flight, and free buffers kept for
    /// reuse) all of this listener's associations hold at once: SPDK's num_shared_buffers times
    /// io_unit_size (511 x 128 KiB by default). A command whose buffer does not fit waits, in
    /// order behind its queue's other waiting commands, until buffers are freed; a command's
    /// in-capsule data is taken whatever the budget (it is in the socket already, and at most
    /// the queue's in-capsule size). One command may always run when nothing else holds storage.
    std::size_t max_buffer_bytes = std::size_t{64} << 20;
    /// Bytes of command buffer storage one association holds at once (within max_buffer_bytes),
    /// so that one host's commands cannot take every buffer: the role of SPDK's buf_cache_size,
    /// the buffers a poll group may keep for itself.
    std::size_t max_association_buffer_bytes = std::size_t{16} << 20;
    /// How long the listener is left out of the poll set when a connection cannot be accepted
    /// for want of a descriptor (EMFILE, ENFILE) or of memory: it stays readable while the
    /// connection waits in the backlog, and would otherwise wake every round (Traits::clock
    /// time; the wait poll() is given bounds how late accepting resumes).
    std::chrono::milliseconds accept_pause{100};
    /// Host NQNs allowed to connect to the subsystem given to the constructor; empty: any host.
    /// Another host's Connect completes with Connect Invalid Host. (Subsystems added with
    /// target::add_subsystem() carry their own host_access.)
    std::vector<std::string> allowed_hosts{};
    /// Whether the listener also serves a discovery controller on the well-known discovery NQN,
    /// to any host: its Discovery log page lists the subsystem at this listener when the host
    /// may connect to it.
    bool discovery = true;
    /// PORTID of this listener in the Discovery log page.
    std::uint16_t port_id = 1;
    /// 0: poll() serves every connection. N > 0: each I/O queue's connection, once its Connect
    /// succeeds, moves to one of N connection groups (round-robin), which the embedder polls with
    /// poll_group(i), each from a thread of its own; the I/O queue runs on the same poll group of
    /// its controller (controller_config::concurrent_poll_groups), so a command goes from its
    /// socket to the backend and back on that thread. Needs Traits::threading = multi_threaded
    /// (concurrent_target_traits) and controller.io_queues of N or more (0: the build's limit).
    std::uint16_t connection_groups = 0;
};

/// Which hosts may connect to a subsystem of a target: any host, or those `hosts` names.
struct host_access {
    bool any = true;
    std::vector<std::string> hosts{};

    [[nodiscard]] bool allows(std::string_view host_nqn) const
    {
        return any || std::find(hosts.begin(), hosts.end(), host_nqn) != hosts.end();
    }
};

/// What a target has done, for tests and logs.
struct target_statistics {
    std::uint64_t connections_accepted = 0;
    std::uint64_t connections_closed = 0;
    std::uint64_t associations_created = 0;
    std::uint64_t commands = 0;
    std::uint64_t r2ts = 0;
    std::uint64_t c2h_data_pdus = 0;
    std::uint64_t terminations_sent = 0;     ///< C2HTermReq
    std::uint64_t terminations_received = 0; ///< H2CTermReq
    std::uint64_t data_digest_errors = 0;
    std::uint64_t keep_alive_expirations = 0; ///< associations ended by their KATO
    std::uint64_t accept_pauses = 0;          ///< accepting paused for want of descriptors
    std::uint64_t icreq_timeouts = 0;         ///< connections closed without an ICReq in icreq_timeout
    std::uint64_t connect_timeouts = 0;       ///< connections closed without a Connect in connect_timeout
    /// Connections closed at once for max_connections and for max_connections_per_address.
    std::uint64_t connections_refused = 0;
    std::uint64_t connections_refused_per_address = 0;
    /// Connections that had sent no ICReq closed to make room for a new one, the listener being
    /// full (max_connections, descriptor_reserve).
    std::uint64_t idle_connections_closed = 0;
    /// Admin Connects refused (Connect Controller Busy) for max_associations, for
    /// max_associations_per_host and for max_associations_per_address.
    std::uint64_t associations_refused = 0;
    std::uint64_t associations_refused_per_host = 0;
    std::uint64_t associations_refused_per_address = 0;
    /// Commands that waited for buffer storage (max_buffer_bytes, max_association_buffer_bytes).
    std::uint64_t buffer_waits = 0;
    /// Bytes of command buffer storage held now, and the most held at once.
    std::uint64_t buffer_bytes = 0;
    std::uint64_t buffer_bytes_peak = 0;
};

namespace detail {

/// target_statistics as one thread counts them and any thread reads them: each counter has one
/// writer (a relaxed load and store, no read-modify-write on the command path).
struct target_counters {
    std::atomic<std::uint64_t> connections_accepted{0};
    std::atomic<std::uint64_t> connections_closed{0};
    std::atomic<std::uint64_t> associations_created{0};
    std::atomic<std::uint64_t> commands{0};
    std::atomic<std::uint64_t> r2ts{0};
    std::atomic<std::uint64_t> c2h_data_pdus{0};
    std::atomic<std::uint64_t> terminations_sent{0};
    std::atomic<std::uint64_t> terminations_received{0};
    std::atomic<std::uint64_t> data_digest_errors{0};
    std::atomic<std::uint64_t> keep_alive_expirations{0};
    std::atomic<std::uint64_t> accept_pauses{0};
    std::atomic<std::uint64_t> icreq_timeouts{0};
    std::atomic<std::uint64_t> connect_timeouts{0};
    std::atomic<std::uint64_t> connections_refused{0};
    std::atomic<std::uint64_t> connections_refused_per_address{0};
    std::atomic<std::uint64_t> idle_connections_closed{0};
    std::atomic<std::uint64_t> associations_refused{0};
    std::atomic<std::uint64_t> associations_refused_per_host{0};
    std::atomic<std::uint64_t> associations_refused_per_address{0};
    std::atomic<std::uint64_t> buffer_waits{0};

    static void bump(std::atomic<std::uint64_t>& counter) noexcept
    {
        counter.store(counter.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    }

    void add_to(target_statistics& out) const noexcept
    {
        const auto get = [](const std::atomic<std::uint64_t>& c) {
            return c.load(std::memory_order_relaxed);
        };
        out.connections_accepted += get(connections_accepted);
        out.connections_closed += get(connections_closed);
        out.associations_created += get(associations_created);
        out.commands += get(commands);
        out.r2ts += get(r2ts);
        out.c2h_data_pdus += get(c2h_data_pdus);
        out.terminations_sent += get(terminations_sent);
        out.terminations_received += get(terminations_received);
        out.data_digest_errors += get(data_digest_errors);
        out.keep_alive_expirations += get(keep_alive_expirations);
        out.accept_pauses += get(accept_pauses);
        out.icreq_timeouts += get(icreq_timeouts);
        out.connect_timeouts += get(connect_timeouts);
        out.connections_refused += get(connections_refused);
        out.connections_refused_per_address += get(connections_refused_per_address);
        out.idle_connections_closed += get(idle_connections_closed);
        out.associations_refused += get(associations_refused);
        out.associations_refused_per_host += get(associations_refused_per_host);
        out.associations_refused_per_address += get(associations_refused_per_address);
        out.buffer_waits += get(buffer_waits);
    }
};

/// The completion entry of a command the transport answers itself.
[[nodiscard]] inline spec::completion_queue_entry
local_completion(std::uint16_t cid, spec::status status, std::uint32_t dw0 = 0, std::uint32_t dw1 = 0)
{
    spec::completion_queue_entry cqe{};
    cqe.cid = cid;
    cqe.dw0 = dw0;
    cqe.dw1 = dw1;
    cqe.set_status(status, false);
    return cqe;
}

/// Connect Invalid Parameters naming the field in error (IATTR, IPO).
[[nodiscard]] inline spec::completion_queue_entry invalid_connect_parameter(std::uint16_t cid, bool in_data,
                                                                            std::uint16_t offset)
{
    const auto dw0 = spec::connect_invalid_parameter_dword0{}
                         .with(spec::connect_invalid_parameter_dword0::in_connect_data, in_data)
                         .with(spec::connect_invalid_parameter_dword0::ipo, offset);
    return local_completion(cid, spec::status{spec::fabrics_status::connect_invalid_parameters}.with_dnr(),
                            dw0.raw);
}

} // namespace detail

template <typename Traits = target_traits>
class target {
public:
    using controller_type = controller<Traits>;
    using subsystem_type = typename controller_type::subsystem_type;
    static_assert(std::is_same_v<typename Traits::dma, command_buffers>,
                  "tcp::target: Traits::dma must be transport::tcp::command_buffers");

    /// Listens on options.address and options.port, serving no subsystem until add_subsystem()
    /// (its discovery controller lists none).
    explicit target(target_options options) : options_{std::move(options)}
    {
        if (!options_.limits.valid()) {
            throw std::invalid_argument{"tcp::target: invalid target limits"};
        }
        options_.controller.identity.fabrics = identify_fields(options_.limits);
        options_.controller.subsystem_reset_supported = false;
        // (An MDTS above the traits' limit makes the controllers' constructor throw at Connect.)
        const std::uint8_t mdts = options_.controller.mdts == 0
                                      ? Traits::limits.mdts
                                      : std::min(options_.controller.mdts, Traits::limits.mdts);
        mdts_bytes_ = std::uint64_t{4096} << mdts;
        discovery_controller_ = options_.controller;
        discovery_controller_.identity.fabrics->discovery = true;
        if (options_.connection_groups != 0) {
            if constexpr (!controller_type::threading_type::concurrent_groups) {
                throw std::invalid_argument{
                    "tcp::target: connection_groups needs Traits::threading = multi_threaded "
                    "(tcp::concurrent_target_traits)"};
            }
            options_.controller.poll_groups = options_.connection_groups;
            options_.controller.concurrent_poll_groups = true;
            // Called on the admin context (this thread) inside connect_io_queue(): the group the
            // connection goes to.
            options_.controller.queue_placement = [this](std::uint16_t, std::uint16_t) { return placement_; };
            for (std::uint16_t i = 0; i < options_.connection_groups; ++i) {
                groups_.push_back(std::make_unique<group>(i));
            }
        }
        discovery_controller_.poll_groups = 1;
        discovery_controller_.concurrent_poll_groups = false;
        discovery_controller_.queue_placement = {};
        connection_bound_ = connection_descriptor_bound(options_.descriptor_reserve);
        if (connection_bound_ == 0) {
            throw std::invalid_argument{"tcp::target: RLIMIT_NOFILE's soft limit leaves no descriptor beyond "
                                        "descriptor_reserve (" +
                                        std::to_string(options_.descriptor_reserve) + ")"};
        }
        listener_ = listen_on(options_.address, options_.port);
        port_ = local_port(listener_.get());
        listens_on_any_address_ = is_unspecified_address(options_.address);
    }

    /// Listens on options.address and options.port and serves `subsystem` to the hosts
    /// options.allowed_hosts names (any host when it is empty). `subsystem` outlives the target.
    explicit target(subsystem_type& subsystem, target_options options = {}) : target{std::move(options)}
    {
        add_subsystem(subsystem, {.any = options_.allowed_hosts.empty(), .hosts = options_.allowed_hosts});
    }

    target(const target&) = delete;
    target& operator=(const target&) = delete;

    /// The embedder's group threads have stopped (no poll_group() runs).
    ~target()
    {
        for (auto& g : groups_) {
            g->inbox.drain(
                [](to_group&& m) {
                    if (m.what == to_group::kind::adopt) {
                        delete m.adopted;
                    }
                },
                mailbox_capacity);
            for (auto& m : g->overflow) {
                if (m.what == to_group::kind::adopt) {
                    delete m.adopted;
                }
            }
            g->overflow.clear();
            for (auto& c : g->connections) {
                c->socket.reset();
            }
            g->connections.clear();
        }
        for (auto& connection : connections_) {
            close_connection(*connection);
        }
        connections_.clear();
        for (auto& association : associations_) {
            drain(*association);
        }
    }

    /// What the controllers of a target with `limits` report in Identify Controller: the I/O
    /// queues' in-capsule data, and SGLS with SGL support, the Data Block with Offset that
    /// describes in-capsule data, the Transport SGL Data Block that asks for R2T/C2HData, and
    /// SGLs longer than the transfer (bit 18: the controller uses the first bytes, and a read's
    /// C2HData carries only those).
    [[nodiscard]] static fabrics_identity identify_fields(const target_limits& limits) noexcept
    {
        spec::sgl_support sgls{};
        sgls.set(spec::sgl_support::support, spec::sgl_data_block_support::supported)
            .set(spec::sgl_support::length_larger_than_data, true)
            .set(spec::sgl_support::address_as_offset, true)
            .set(spec::sgl_support::transport_data_block, true);
        return {.io_in_capsule_data = limits.io_in_capsule_data, .sgls = sgls};
    }

    // The subsystems a target serves. Call these from the thread that calls poll(); a subsystem
    // outlives the target or its remove_subsystem().

    /// Serves `subsystem` at this listener too: a Connect naming its NQN creates one of its
    /// controllers, when `access` allows the host. Throws std::invalid_argument when a subsystem
    /// of that NQN is served already (or it is the discovery NQN).
    void add_subsystem(subsystem_type& subsystem, host_access access = {})
    {
        const std::string& nqn = subsystem.identity().nqn;
        if (nqn == spec::discovery_nqn || find_subsystem(nqn) != nullptr) {
            throw std::invalid_argument{"tcp::target: subsystem " + nqn + " is served already"};
        }
        subsystems_.push_back({&subsystem, std::move(access)});
        discovery_changed();
    }

    /// Changes which hosts may connect to subsystem `nqn`; the controllers of hosts no longer
    /// allowed are ended (their connections closed). False when no such subsystem is served.
    bool set_host_access(std::string_view nqn, const host_access& access)
    {
        auto* served = find_subsystem(nqn);
        if (served == nullptr) {
            return false;
        }
        served->access = access;
        discovery_changed();
        for (auto& association : associations_) {
            if (association->subsystem == served->subsystem && !association->dying &&
                !served->access.allows(association->host_nqn)) {
                end_association(*association);
            }
        }
        return true;
    }

    /// Stops serving subsystem `nqn`: its controllers are ended and destroyed before this
    /// returns (their backend requests finished), so the subsystem may go. False when no such
    /// subsystem is served.
    bool remove_subsystem(std::string_view nqn)
    {
        auto* served = find_subsystem(nqn);
        if (served == nullptr) {
            return false;
        }
        subsystem_type* const gone = served->subsystem;
        for (auto& association : associations_) {
            if (association->subsystem == gone) {
                end_association(*association);
            }
        }
        // Connection groups close the associations' connections on their threads.
        wait_for_groups(
            [gone](const association& a) { return a.subsystem != gone || a.groups_pending == 0; });
        for (auto& association : associations_) {
            if (association->subsystem == gone) {
                drain(*association);
            }
        }
        std::erase_if(connections_, [](const auto& connection) { return connection->closed; });
        std::erase_if(associations_,
                      [gone](const auto& association) { return association->subsystem == gone; });
        std::erase_if(subsystems_, [gone](const served_subsystem& s) { return s.subsystem == gone; });
        discovery_changed();
        return true;
    }

    // Referrals: what the Discovery log page lists beyond this listener's subsystems (other
    // discovery services, or NVM subsystems elsewhere), after them, to every host. Each change
    // makes a new GENCTR and a Discovery Log Page Change event. Call these from the thread that
    // calls poll().

    /// Lists `referral` too; false (and no change) when it is listed already.
    bool add_referral(discovery_referral referral)
    {
        if (std::find(referrals_.begin(), referrals_.end(), referral) != referrals_.end()) {
            return false;
        }
        referrals_.push_back(std::move(referral));
        discovery_changed();
        return true;
    }

    /// Lists `referral` no more; false when it was not listed.
    bool remove_referral(const discovery_referral& referral)
    {
        if (std::erase(referrals_, referral) == 0) {
            return false;
        }
        discovery_changed();
        return true;
    }

    /// Lists `referrals` instead of those listed now (a change only when they differ).
    void set_referrals(std::vector<discovery_referral> referrals)
    {
        if (referrals == referrals_) {
            return;
        }
        referrals_ = std::move(referrals);
        discovery_changed();
    }

    [[nodiscard]] const std::vector<discovery_referral>& referrals() const noexcept { return referrals_; }

    /// GENCTR of the Discovery log page now.
    [[nodiscard]] std::uint64_t discovery_generation() const noexcept { return discovery_generation_; }

    /// Whether subsystem `nqn` is served here.
    [[nodiscard]] bool serves(std::string_view nqn) const { return find_subsystem(nqn) != nullptr; }
    /// How many subsystems are served here.
    [[nodiscard]] std::size_t subsystem_count() const noexcept { return subsystems_.size(); }

    /// Lets every controller finish its backend requests (as before a namespace is removed).
    void drain_backends()
    {
        for (auto& association : associations_) {
            drain(*association);
        }
    }

    /// One controller a host created through this target, as for_each_controller() shows it.
    struct controller_view {
        std::string_view subsystem_nqn;
        std::string_view host_nqn;
        std::array<std::uint8_t, 16> host_id{};
        /// The connected queues: 0 (the admin queue), then the I/O queues in connection order.
        std::vector<std::uint16_t> qids;
        const controller_type& ctrl;
    };

    /// Calls `visit(const controller_view&)` for each live controller of an NVM subsystem (not
    /// the discovery controllers).
    template <typename Visit>
    void for_each_controller(Visit&& visit) const
    {
        for (const auto& association : associations_) {
            if (association->dying || association->discovery || association->admin == nullptr) {
                continue;
            }
            std::vector<std::uint16_t> qids{0};
            for (const connection* io : association->io) {
                qids.push_back(io->qid);
            }
            for (const auto& [qid, serial] : association->group_queues) {
                qids.push_back(qid);
            }
            visit(controller_view{.subsystem_nqn = association->subsystem->identity().nqn,
                                  .host_nqn = association->host_nqn,
                                  .host_id = association->host_id,
                                  .qids = std::move(qids),
                                  .ctrl = *association->ctrl});
        }
    }

    /// The address the target listens on, as given.
    [[nodiscard]] const std::string& address() const noexcept { return options_.address; }
    /// The port the target listens on.
    [[nodiscard]] std::uint16_t port() const noexcept { return port_; }
    /// What the target has done: poll()'s counts and every connection group's.
    [[nodiscard]] target_statistics statistics() const noexcept
    {
        target_statistics out{};
        statistics_.add_to(out);
        for (const auto& g : groups_) {
            g->counters.add_to(out);
        }
        out.buffer_bytes = target_buffers_.used();
        out.buffer_bytes_peak = target_buffers_.peak();
        return out;
    }
    /// The largest data one command may describe: target_options::max_data_length, or the
    /// controllers' MDTS when that is smaller.
    [[nodiscard]] std::uint64_t max_data_length() const noexcept
    {
        return std::min<std::uint64_t>(options_.max_data_length, mdts_bytes_);
    }
    /// Connections served by poll(): those not connected yet, admin and discovery queues, and
    /// without connection groups every I/O queue too.
    [[nodiscard]] std::size_t connection_count() const noexcept { return connections_.size(); }
    [[nodiscard]] std::size_t association_count() const noexcept { return associations_.size(); }
    /// target_options::connection_groups.
    [[nodiscard]] std::uint16_t connection_group_count() const noexcept
    {
        return static_cast<std::uint16_t>(groups_.size());
    }

    /// One round of the loop: waits up to `timeout` for socket activity (not at all while a
    /// controller has work), accepts connections, receives and sends, runs the controllers and
    /// sends their completions.
    void poll(std::chrono::milliseconds timeout)
    {
        take_group_messages();
        send_to_groups();
        if (at_descriptor_bound()) {
            // (A soft limit raised since the last accept lets it accept again.)
            connection_bound_ = connection_descriptor_bound(options_.descriptor_reserve);
        }
        pollfds_.clear();
        add_pollfds(pollfds_);
        const std::chrono::nanoseconds now = clock_.now();
        const int wait = has_work() ? 0 : static_cast<int>(timeout.count());
        if (::poll(pollfds_.data(), pollfds_.size(), wait) < 0 && errno != EINTR) {
            throw_errno("tcp::target: poll");
        }
        // Connections accepted below are polled from the next round on (add_pollfds' order).
        const std::size_t first = groups_.empty() ? 1 : 2;
        if (!groups_.empty() && (pollfds_[1].revents & POLLIN) != 0) {
            std::uint64_t count = 0;
            static_cast<void>(::read(main_wake_.get(), &count, sizeof(count)));
        }
        take_group_messages();
        const std::size_t polled = connections_.size();
        for (std::size_t i = 0; i < polled; ++i) {
            auto& connection = *connections_[i];
            const short revents = pollfds_[i + first].revents;
            if ((revents & (POLLIN | POLLHUP | POLLERR)) != 0 && !connection.closed) {
                receive(connection);
            }
        }
        if ((pollfds_[0].revents & POLLIN) != 0) {
            accept_connections();
        }
        run_controllers();
        end_expired_associations();
        for (auto& association : associations_) {
            // Free storage kept in poll()'s partition goes back when a budget ran short.
            association->buffers.trim_if_short(0);
        }
        for (auto& connection : connections_) {
            if (!connection->closed && !connection->waiting.empty()) {
                resume_waiting(*connection);
            }
            if (!connection->closed) {
                flush(*connection);
            }
            if (connection->terminating && !connection->closed &&
                (connection->out.empty() || now >= connection->linger_until)) {
                close_connection(*connection);
            }
            if (!connection->initialized && !connection->closed && now >= connection->icreq_deadline) {
                detail::target_counters::bump(statistics_.icreq_timeouts);
                close_connection(*connection);
            }
            if (!connection->ever_connected && !connection->closed && now >= connection->connect_deadline) {
                detail::target_counters::bump(statistics_.connect_timeouts);
                close_connection(*connection);
            }
        }
        // Storage given back by the sends and closes above may let waiting commands start now.
        for (auto& connection : connections_) {
            if (!connection->closed && !connection->waiting.empty()) {
                resume_waiting(*connection);
                flush(*connection);
            }
        }
        hand_over_connections();
        send_to_groups();
        std::erase_if(connections_, [](const auto& connection) { return connection->closed; });
        std::erase_if(associations_, [this](const auto& association) { return retire(*association); });
    }

    // An embedder's loop that waits for several targets at once, or for a target beside
    // descriptors of its own, gathers what each would wait for, waits in one poll(2) (not at all
    // when one of them has work), then runs each target's poll(0):
    //
    //     std::vector<pollfd> fds{{my_wakeup, POLLIN, 0}};
    //     bool work = false;
    //     for (auto& t : targets) { t.add_pollfds(fds); work = work || t.has_work(); }
    //     ::poll(fds.data(), fds.size(), work ? 0 : 100);
    //     for (auto& t : targets) { t.poll(std::chrono::milliseconds{0}); }

    /// Whether poll() has work now, and so would not wait: a controller with commands under way
    /// or changing state (enable, reset, shutdown), an association ending, buffers to free, a
    /// discovery change to report.
    [[nodiscard]] bool has_work() const { return busy(); }

    /// Appends the descriptors poll() waits on, with the events it waits for, to `out`: the
    /// listener's (as -1, which poll(2) skips, while accepting pauses: accept_pause; and at the
    /// descriptor bound while no connection waits for its ICReq, when none could make room for
    /// a new one: descriptor_reserve), the connection groups' wake-up, then each connection
    /// poll() serves (POLLIN unless it has stopped reading, POLLOUT while it has data to send).
    void add_pollfds(std::vector<pollfd>& out) const
    {
        const bool accepting =
            clock_.now() >= accept_resumes_ && (!at_descriptor_bound() || oldest_awaiting_icreq() != nullptr);
        out.push_back({accepting ? listener_.get() : -1, POLLIN, 0});
        if (!groups_.empty()) {
            out.push_back({main_wake_.get(), POLLIN, 0});
        }
        for (const auto& connection : connections_) {
            short events = 0;
            if (!connection->terminating && connection->out.pending() < options_.send_backlog_limit) {
                events |= POLLIN;
            }
            if (!connection->out.empty()) {
                events |= POLLOUT;
            }
            out.push_back({connection->socket.get(), events, 0});
        }
    }

    /// One round of connection group `index` (0 to connection_group_count() - 1): waits up to
    /// `timeout` for socket activity (not at all while its commands are under way), receives
    /// from and sends to its connections, submits their commands to their controllers' poll
    /// group `index`, runs that poll group and sends the completions. Call it from one thread per
    /// group, in a loop, for as long as poll() runs (the target's changes wait for the groups);
    /// stop those threads before the target is destroyed.
    void poll_group(std::uint16_t index, std::chrono::milliseconds timeout)
    {
        NVMEKIT_ASSERT(index < groups_.size(), "tcp::target::poll_group: no such group");
        group& g = *groups_[index];
        take_messages(g);
        g.pollfds.clear();
        g.pollfds.push_back({g.wake.get(), POLLIN, 0});
        for (const auto& c : g.connections) {
            short events = 0;
            if (!c->terminating && c->out.pending() < options_.send_backlog_limit) {
                events |= POLLIN;
            }
            if (!c->out.empty()) {
                events |= POLLOUT;
            }
            g.pollfds.push_back({c->socket.get(), events, 0});
        }
        const int wait = g.busy ? 0 : static_cast<int>(timeout.count());
        if (::poll(g.pollfds.data(), g.pollfds.size(), wait) < 0 && errno != EINTR) {
            throw_errno("tcp::target: poll");
        }
        if ((g.pollfds[0].revents & POLLIN) != 0) {
            std::uint64_t count = 0;
            static_cast<void>(::read(g.wake.get(), &count, sizeof(count)));
        }
        take_messages(g);
        g.busy = false;
        const std::chrono::nanoseconds now = clock_.now();
        // Adopted connections were not in this round's poll: their first turn reads anyway.
        const std::size_t polled = std::min(g.connections.size(), g.pollfds.size() - 1);
        for (std::size_t i = 0; i < g.connections.size(); ++i) {
            connection& c = *g.connections[i];
            if (c.closed) {
                continue;
            }
            const short revents = i < polled ? g.pollfds[i + 1].revents : short{POLLIN};
            const bool ran = c.owner->ctrl->run_in_group(index, [&](bool running) {
                // A Controller Reset since the Connect deleted the queue (a later Connect may have
                // made the QID another connection's, on another group): leave the controller alone.
                if (c.connected && !c.queue_gone &&
                    c.owner->queue_epoch.load(std::memory_order_acquire) != c.queue_epoch) {
                    abandon_in_group(c);
                    c.queue_gone = true;
                }
                c.controller_running = running && !c.queue_gone;
                if (!c.leftover.empty()) {
                    const auto bytes = std::exchange(c.leftover, {});
                    consume(c, bytes);
                }
                if ((revents & (POLLIN | POLLHUP | POLLERR)) != 0 && !c.closed) {
                    receive(c);
                }
                if (c.controller_running && !c.closed) {
                    g.busy = collect(c) != 0 || g.busy;
                }
                if (!c.closed) {
                    // Free storage kept in the connection's partition goes back when a budget ran
                    // short; commands waiting for storage try again.
                    c.owner->buffers.trim_if_short(c.partition);
                    if (!c.waiting.empty()) {
                        resume_waiting(c);
                    }
                    flush(c);
                }
            });
            if (!ran) {
                g.busy = true; // the admin context has the group paused: next round
            }
            if (!c.closed) {
                g.busy = g.busy || c.in_flight.used() != 0;
            }
            if (c.terminating && !c.closed && (c.out.empty() || now >= c.linger_until)) {
                close_connection(c);
            }
        }
        // Storage given back by the sends and closes above may let waiting commands start now.
        for (auto& c : g.connections) {
            if (!c->closed && !c->waiting.empty()) {
                static_cast<void>(c->owner->ctrl->run_in_group(index, [&](bool running) {
                    c->controller_running = running && !c->queue_gone;
                    resume_waiting(*c);
                    flush(*c);
                }));
            }
        }
        // Each controller with queues here runs its poll group once.
        g.owners.clear();
        for (const auto& c : g.connections) {
            if (!c->closed && std::find(g.owners.begin(), g.owners.end(), c->owner) == g.owners.end()) {
                g.owners.push_back(c->owner);
            }
        }
        for (association* owner : g.owners) {
            g.busy = owner->ctrl->poll_group(index) != 0 || g.busy;
        }
        std::erase_if(g.connections, [](const auto& c) { return c->closed; });
        send_to_main(g);
        g.busy = g.busy || !g.outbox.empty();
    }

private:
    struct association;

    /// One command of a connection, from its capsule to its response.
    struct command_slot {
        /// waiting_buffer: the capsule is in, its buffer does not fit the budgets yet (no buffer).
        enum class phase : std::uint8_t { free, waiting_buffer, receiving, awaiting_h2c, submitted, sending };
        phase state = phase::free;
        spec::submission_queue_entry sqe{};
        command_buffers::buffer_id buffer = 0;
        std::uint32_t length = 0;
        spec::data_transfer direction = spec::data_transfer::none;
        /// A write by R2T: the bytes its R2Ts have asked for, the bytes received, and its R2Ts
        /// not yet answered in full (each in the connection's r2t_windows).
        std::uint32_t r2t_asked = 0;
        std::uint32_t r2t_received = 0;
        std::uint32_t r2t_outstanding = 0;
        /// The command completes with this status without reaching the controller.
        std::optional<spec::status> failed{};
    };

    /// Where the data of the PDU being received goes.
    enum class data_sink : std::uint8_t { none, capsule, h2c, fabrics };

    struct connection {
        unique_fd socket;
        /// Its place among the process's connections (descriptor_reserve), given up as the
        /// socket closes.
        connection_ticket ticket;
        pdu_stream stream;
        connection_params params{};
        association* owner = nullptr;
        std::uint16_t qid = 0;
        bool connected = false;
        bool terminating = false;
        bool closed = false;
        std::chrono::nanoseconds linger_until{};     ///< Traits::clock time
        std::chrono::nanoseconds icreq_deadline{};   ///< Traits::clock time
        std::chrono::nanoseconds connect_deadline{}; ///< Traits::clock time
        /// Its ICReq was answered.
        bool initialized = false;
        bool ever_connected = false;
        /// The IP address of its host (max_connections_per_address).
        peer_address peer{};
        std::uint16_t sq_head = 0;
        std::uint32_t entries = 1;
        std::vector<command_slot> slots;
        /// Which of `slots` are free, and which holds a CID: a slot is in flight from its
        /// capsule until it is free again.
        command_slots in_flight{};
        /// The slots waiting for buffer storage, in the order their capsules came.
        std::deque<std::uint32_t> waiting;
        /// The R2Ts outstanding, r2t_per_command for each slot (an empty window is free): an R2T's
        /// TTAG is its index here, so slot index * r2t_per_command + k.
        std::vector<r2t_window> r2t_windows;
        std::uint32_t r2t_per_command = 1;
        std::vector<std::byte> in = std::vector<std::byte>(64 * 1024);
        /// What waits to be sent; a read's data is sent from its command's buffer, tagged with
        /// the slot's index.
        send_queue out;
        data_sink sink = data_sink::none;
        std::uint32_t sink_slot = 0;
        std::uint16_t sink_ttag = 0;
        spec::submission_queue_entry fabrics_sqe{};
        std::array<std::byte, sizeof(spec::connect_data)> fabrics_data{};
        std::uint32_t fabrics_length = 0;
        /// The counters of the thread that serves it.
        detail::target_counters* counters = nullptr;
        /// Its buffers' partition of the association's command_buffers (0: the admin connection's,
        /// and every connection's without connection groups).
        std::uint8_t partition = 0;
        /// The connection group it moves to or is in (-1: served by poll()).
        int group = -1;
        /// Its Connect succeeded on poll()'s thread: it moves to its group at the end of the round.
        bool handoff = false;
        /// Bytes received after the Connect before the move, which the group consumes first.
        std::vector<std::byte> leftover;
        /// False in a group while its controller is not ready: commands are answered here.
        bool controller_running = true;
        /// In a group: buffers of commands a Controller Reset ended, given back with the connection.
        std::vector<command_buffers::buffer_id> quarantine;
        /// Tells this connection's queue from a later one of the same QID.
        std::uint64_t serial = 0;
        /// In a group: the association's queue_epoch when the queue connected, and whether a
        /// Controller Reset has deleted the queue since.
        std::uint32_t queue_epoch = 0;
        bool queue_gone = false;
    };

    struct association {
        association(buffer_budget& target_budget, std::size_t limit) : budget{limit, &target_budget} {}
        association(const association&) = delete;
        association& operator=(const association&) = delete;
        ~association() = default;

        /// Its command buffers' storage, within the target's (max_association_buffer_bytes).
        buffer_budget budget;
        command_buffers buffers{&budget};
        no_interrupts interrupts;
        std::unique_ptr<controller_type> ctrl;
        /// HOSTNQN and HOSTID of the admin Connect: an I/O Connect must name the same host.
        std::string host_nqn;
        std::array<std::uint8_t, 16> host_id{};
        /// The IP address the admin Connect came from (max_associations_per_address).
        peer_address peer{};
        connection* admin = nullptr;
        std::vector<connection*> io;
        /// Buffers of commands whose queue went away while the controller may still hold them.
        std::vector<command_buffers::buffer_id> quarantine;
        bool dying = false;
        /// The KATO of its Connect (or discovery_keep_alive_timeout), and the last time a command
        /// came on its admin queue: while the controller is not ready (before CC.EN = 1, after a
        /// reset or a shutdown) the target ends the association when KATO passes without one.
        std::uint32_t connect_kato_ms = 0;
        std::chrono::nanoseconds last_admin_command{};
        /// A connection of partition 0 closed: its free storage goes once the quarantine is empty.
        bool trim_pending = false;
        /// Connections that connected a queue of it and are not closed yet.
        std::size_t connections = 0;
        /// A discovery controller (Connect to the discovery NQN): admin queue only, Identify and
        /// the Discovery log page answered by the target (discovery_command).
        bool discovery = false;
        /// The subsystem the controller belongs to (discovery_subsystem_ for a discovery one).
        subsystem_type* subsystem = nullptr;
        /// With connection groups: the connected I/O queues (QID, connection serial), the groups
        /// that have had a connection of it, how many of them have not yet answered its end,
        /// the buffer partitions in use and those of closed connections.
        std::vector<std::pair<std::uint16_t, std::uint64_t>> group_queues;
        std::vector<bool> in_group;
        std::size_t groups_pending = 0;
        std::array<bool, command_buffers::partition_count> partition_taken{true};
        /// Counts the Controller Resets (CC.EN 1 to 0): a group connection whose queue connected
        /// before the last one leaves the controller alone, whether or not the groups' abandon
        /// message has reached it.
        std::atomic<std::uint32_t> queue_epoch{0};
        std::vector<std::uint8_t> retired_partitions;
    };

    /// What poll() tells a connection group.
    struct to_group {
        enum class kind : std::uint8_t {
            adopt,   ///< serve `adopted` from now on
            abandon, ///< a Controller Reset ended the commands of `owner`'s connections
            end,     ///< close `owner`'s connections and answer `ended`
        };
        kind what = kind::adopt;
        connection* adopted = nullptr;
        association* owner = nullptr;
    };

    /// What a connection group tells poll().
    struct to_main {
        enum class kind : std::uint8_t {
            closed, ///< a connection of `owner` closed: its queue, partition and held buffers
            ended,  ///< the group holds nothing of `owner` any more
        };
        kind what = kind::closed;
        association* owner = nullptr;
        std::uint16_t qid = 0;
        std::uint64_t serial = 0;
        std::uint8_t partition = 0;
        std::vector<command_buffers::buffer_id> quarantine{};
        peer_address peer{};
    };

    static constexpr std::size_t mailbox_capacity = 1024;

    /// A connection group: its connections, and what poll() and it tell each other.
    struct group {
        explicit group(std::uint16_t i) : index{i}
        {
            if (wake.get() < 0) {
                throw_errno("tcp::target: eventfd");
            }
        }
        std::uint16_t index;
        std::vector<std::unique_ptr<connection>> connections;
        std::vector<pollfd> pollfds;
        std::vector<association*> owners;
        mailbox<to_group> inbox{mailbox_capacity};
        /// Messages poll() could not post yet (the inbox was full), in order.
        std::vector<to_group> overflow;
        /// Messages to poll() not posted yet.
        std::vector<to_main> outbox;
        unique_fd wake{::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)};
        detail::target_counters counters;
        bool busy = false;
    };

    /// A subsystem served at this listener, and who may connect to it.
    struct served_subsystem {
        subsystem_type* subsystem;
        host_access access;
    };

    [[nodiscard]] const served_subsystem* find_subsystem(std::string_view nqn) const
    {
        const auto it =
            std::find_if(subsystems_.begin(), subsystems_.end(),
                         [nqn](const served_subsystem& s) { return s.subsystem->identity().nqn == nqn; });
        return it == subsystems_.end() ? nullptr : &*it;
    }
    [[nodiscard]] served_subsystem* find_subsystem(std::string_view nqn)
    {
        return const_cast<served_subsystem*>(std::as_const(*this).find_subsystem(nqn));
    }

    /// Ends an association as its host's admin connection ending would.
    void end_association(association& owner)
    {
        if (owner.admin != nullptr) {
            close_connection(*owner.admin);
        }
    }

    // ---- the loop ----------------------------------------------------------------------------

    [[nodiscard]] bool busy() const
    {
        for (const auto& association : associations_) {
            if (association->dying || !association->quarantine.empty()) {
                return true;
            }
            if (changing_state(*association->ctrl)) {
                return true;
            }
        }
        return controllers_active_;
    }

    /// Whether an enable, a reset or a shutdown is under way: the controller finishes it in poll().
    [[nodiscard]] static bool changing_state(controller_type& ctrl)
    {
        const spec::cc_register cc{
            static_cast<std::uint32_t>(read_property(ctrl, spec::register_offset::cc))};
        const spec::csts_register csts{
            static_cast<std::uint32_t>(read_property(ctrl, spec::register_offset::csts))};
        const bool shutting_down = cc.get(spec::cc_register::shn) != spec::shutdown_notification::none &&
                                   csts.get(spec::csts_register::shst) != spec::shutdown_status::complete;
        return cc.get(spec::cc_register::en) != csts.get(spec::csts_register::rdy) || shutting_down;
    }

    [[nodiscard]] static std::uint64_t read_property(controller_type& ctrl, spec::register_offset offset)
    {
        return ctrl.property_read(static_cast<std::uint64_t>(offset), 4).value_or(0);
    }

    void accept_connections()
    {
        connection_bound_ = connection_descriptor_bound(options_.descriptor_reserve);
        for (;;) {
            // At the descriptor bound a connection is accepted only to take the place of one that
            // has sent no ICReq; otherwise it waits in the backlog (add_pollfds leaves the
            // listener out until a connection closes).
            if (at_descriptor_bound() && oldest_awaiting_icreq() == nullptr) {
                return;
            }
            sockaddr_storage peer{};
            socklen_t peer_length = sizeof(peer);
            unique_fd fd{::accept4(listener_.get(), reinterpret_cast<sockaddr*>(&peer), &peer_length,
                                   SOCK_NONBLOCK | SOCK_CLOEXEC)};
            if (fd.get() < 0) {
                // EAGAIN, or an aborted connection: nothing to serve. No descriptor or memory for
                // it: it waits in the backlog while the listener, readable all the while, is left
                // out of the poll set for a moment (add_pollfds), not polled in a busy loop.
                if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                    accept_resumes_ = clock_.now() + options_.accept_pause;
                    detail::target_counters::bump(statistics_.accept_pauses);
                }
                return;
            }
            // Beyond a limit the connection is closed at once (`fd` goes): it holds nothing. Its
            // address's limit comes first, so that a peer beyond it closes no other's connection.
            const peer_address address = peer_address_of(peer);
            const auto from_address = connections_from_.find(address);
            if ((from_address == connections_from_.end() ? 0 : from_address->second) >=
                options_.max_connections_per_address) {
                detail::target_counters::bump(statistics_.connections_refused_per_address);
                continue;
            }
            if (live_connections_ >= options_.max_connections || at_descriptor_bound()) {
                // The listener is full: the connection accepted longest ago that has sent no
                // ICReq makes room, so that idle peers cannot lock new hosts out.
                connection* idle = oldest_awaiting_icreq();
                if (idle == nullptr) {
                    detail::target_counters::bump(statistics_.connections_refused);
                    continue;
                }
                close_connection(*idle);
                detail::target_counters::bump(statistics_.idle_connections_closed);
            }
            const int on = 1;
            ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
            auto added = std::make_unique<connection>();
            added->socket = std::move(fd);
            added->ticket = connection_ticket::take();
            added->peer = address;
            added->slots.resize(1);
            const auto now = clock_.now();
            added->icreq_deadline = now + options_.icreq_timeout;
            added->connect_deadline = now + options_.connect_timeout;
            added->counters = &statistics_;
            connections_.push_back(std::move(added));
            ++live_connections_;
            ++connections_from_[address];
            detail::target_counters::bump(statistics_.connections_accepted);
        }
    }

    /// Whether the connections of every target of the process have reached
    /// connection_descriptor_bound (descriptor_reserve).
    [[nodiscard]] bool at_descriptor_bound() const noexcept
    {
        return open_target_connections() >= connection_bound_;
    }

    /// The connection accepted longest ago that has not sent its ICReq (nullptr: none). Such
    /// connections are all poll()'s, in connections_ in the order they were accepted.
    [[nodiscard]] connection* oldest_awaiting_icreq() const noexcept
    {
        for (const auto& c : connections_) {
            if (!c->initialized && !c->closed && !c->terminating) {
                return c.get();
            }
        }
        return nullptr;
    }

    /// A connection from `address` is closed (on poll()'s thread, or its close reached poll()).
    void connection_gone(const peer_address& address)
    {
        --live_connections_;
        if (const auto it = connections_from_.find(address);
            it != connections_from_.end() && --it->second == 0) {
            connections_from_.erase(it);
        }
    }

    void receive(connection& c)
    {
        // A bounded number of reads per round keeps one busy host from starving the others.
        for (int round = 0; round < 16 && !c.closed && !c.terminating && !c.handoff; ++round) {
            if (c.out.pending() >= options_.send_backlog_limit) {
                return;
            }
            // PDU data whose place is known is received right there (the command's buffer);
            // headers, digests and the data that came with them pass through `in`.
            const auto window = c.stream.data_window();
            const auto into = window.empty() ? std::span<std::byte>{c.in} : window;
            const ssize_t got = ::recv(c.socket.get(), into.data(), into.size(), MSG_DONTWAIT);
            if (got == 0) {
                close_connection(c);
                return;
            }
            if (got < 0) {
                if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                    close_connection(c);
                }
                return;
            }
            const auto received = static_cast<std::size_t>(got);
            if (!window.empty()) {
                if (c.stream.commit_data(received) == stream_event::data) {
                    on_data(c);
                }
            } else {
                consume(c, std::span<const std::byte>{c.in}.first(received));
            }
            if (received < into.size()) {
                return;
            }
        }
    }

    void consume(connection& c, std::span<const std::byte> bytes)
    {
        while (!c.closed && !c.terminating) {
            const auto step = c.stream.feed(bytes);
            bytes = bytes.subspan(step.consumed);
            switch (step.event) {
            case stream_event::need_more: return;
            case stream_event::header: on_header(c); break;
            case stream_event::data: on_data(c); break;
            case stream_event::fatal: terminate(c, c.stream.error(), c.stream.header_bytes()); return;
            case stream_event::closed:
                detail::target_counters::bump(c.counters->terminations_received);
                close_connection(c);
                return;
            }
            if (c.handoff) {
                // What follows the Connect is its group's to consume.
                c.leftover.assign(bytes.begin(), bytes.end());
                return;
            }
        }
    }

    void on_header(connection& c)
    {
        switch (c.stream.type()) {
        case spec::pdu_type::icreq: on_icreq(c); return;
        case spec::pdu_type::capsule_cmd: on_capsule(c); return;
        case spec::pdu_type::h2c_data: on_h2c_data(c); return;
        default:
            NVMEKIT_ASSERT(false, "tcp::target: the stream reported a PDU the host does not send");
            return;
        }
    }

    void on_icreq(connection& c)
    {
        const auto params = negotiate(c.stream.icreq(), options_.limits);
        if (!params) {
            c.stream.fail(params.error());
            terminate(c, params.error(), c.stream.header_bytes());
            return;
        }
        c.params = *params;
        c.initialized = true;
        append(c, sizeof(spec::icresp_pdu),
               [&](std::span<std::byte> out) { return encode_icresp(c.params, out); });
        c.stream.establish(c.params);
    }

    void on_capsule(connection& c)
    {
        const spec::submission_queue_entry sqe = c.stream.capsule_cmd().sqe;
        const std::uint32_t in_capsule = c.stream.data_length();
        detail::target_counters::bump(c.counters->commands);
        c.sq_head = static_cast<std::uint16_t>((c.sq_head + 1U) % c.entries);
        if (c.connected && c.qid == 0) {
            // (Only poll()'s thread serves admin queues.)
            c.owner->last_admin_command = clock_.now();
        }
        if (sqe.opcode() == spec::fabrics_command_opcode) {
            c.fabrics_sqe = sqe;
            c.fabrics_length = in_capsule;
            if (in_capsule == 0) {
                on_fabrics_command(c);
            } else if (in_capsule <= c.fabrics_data.size()) {
                c.sink = data_sink::fabrics;
                c.stream.place_data(std::span{c.fabrics_data}.first(in_capsule));
            } else {
                c.sink = data_sink::fabrics;
                c.stream.discard_data();
            }
            return;
        }
        const std::uint16_t cid = sqe.cdw0.get(spec::command_dword0::cid);
        const auto refuse = [&](spec::status status) {
            respond(c, detail::local_completion(cid, status));
            if (in_capsule != 0) {
                c.sink = data_sink::none;
                c.stream.discard_data();
            }
        };
        if (!c.connected || !c.controller_running) {
            // (In a group, a controller that is not ready refuses the command as its submit() would.)
            refuse(spec::status{spec::generic_status::command_sequence_error}.with_dnr());
            return;
        }
        if (c.in_flight.find(cid)) {
            refuse(spec::status{spec::generic_status::command_id_conflict}.with_dnr());
            return;
        }
        if (c.in_flight.used() == c.in_flight.size()) {
            // The host sent more commands than its queue holds (SQSIZE + 1).
            refuse(spec::status{spec::generic_status::internal_error});
            return;
        }
        const auto sgl = spec::to_sgl_descriptor(sqe.dptr);
        const bool capsule_block = sgl.type() == spec::sgl_descriptor_type::data_block &&
                                   sgl.subtype() == spec::sgl_descriptor_subtype::offset;
        const bool transport_block = sgl.type() == spec::sgl_descriptor_type::transport_data_block &&
                                     spec::is_transport_specific(sgl.subtype());
        // A Data Block or Transport SGL Data Block of length 0, whatever its subtype and address,
        // describes no data: a command that moves none carries one (the Linux host's is a
        // Transport SGL Data Block, subtype Ah; others send a Data Block).
        const bool no_data = sgl.length == 0 && in_capsule == 0 &&
                             (sgl.type() == spec::sgl_descriptor_type::data_block ||
                              sgl.type() == spec::sgl_descriptor_type::transport_data_block);
        if (!capsule_block && !transport_block && !no_data) {
            refuse(spec::status{spec::generic_status::sgl_descriptor_type_invalid}.with_dnr());
            return;
        }
        if (sgl.length > mdts_bytes_) {
            // Base 2.0 Figure 275, MDTS: a command beyond it is aborted with Invalid Field in
            // Command. No buffer is taken for it.
            refuse(spec::status{spec::generic_status::invalid_field}.with_dnr());
            return;
        }
        if (sgl.length > options_.max_data_length) {
            refuse(spec::status{spec::generic_status::data_sgl_length_invalid}.with_dnr());
            return;
        }
        if (capsule_block && !no_data && (sgl.address != 0 || sgl.length != in_capsule)) {
            refuse(spec::status{sgl.address != 0 ? spec::generic_status::sgl_offset_invalid
                                                 : spec::generic_status::data_sgl_length_invalid}
                       .with_dnr());
            return;
        }
        if (transport_block && in_capsule != 0) {
            refuse(spec::status{spec::generic_status::data_sgl_length_invalid}.with_dnr());
            return;
        }
        const auto free_slot = c.in_flight.take(cid);
        auto& slot = c.slots[*free_slot];
        slot.state = command_slot::phase::receiving;
        slot.sqe = sqe;
        slot.length = sgl.length;
        slot.direction = spec::transfer_direction(sqe.opcode());
        slot.failed.reset();
        if (in_capsule != 0 || sgl.length == 0) {
            // In-capsule data is in the socket already (and at most the queue's capsule size):
            // its buffer is taken whatever the budgets.
            slot.buffer = c.owner->buffers.acquire(sgl.length, c.partition);
            if (in_capsule != 0) {
                c.sink = data_sink::capsule;
                c.sink_slot = *free_slot;
                c.stream.place_data(c.owner->buffers.bytes(slot.buffer));
                return;
            }
            start(c, *free_slot);
            return;
        }
        // The buffer of a write by R2T or of a read: taken when it fits the budgets, after the
        // commands of this queue that wait already; otherwise this one waits too (no R2T yet).
        if (c.waiting.empty()) {
            if (const auto buffer = c.owner->buffers.try_acquire(sgl.length, c.partition)) {
                slot.buffer = *buffer;
                start(c, *free_slot);
                return;
            }
        }
        slot.state = command_slot::phase::waiting_buffer;
        c.waiting.push_back(*free_slot);
        detail::target_counters::bump(c.counters->buffer_waits);
    }

    /// Starts the commands of `c` waiting for buffer storage, in order, while their buffers fit.
    void resume_waiting(connection& c)
    {
        while (!c.waiting.empty() && !c.closed && !c.terminating) {
            const std::uint32_t index = c.waiting.front();
            auto& slot = c.slots[index];
            const auto buffer = c.owner->buffers.try_acquire(slot.length, c.partition);
            if (!buffer) {
                return;
            }
            c.waiting.pop_front();
            slot.buffer = *buffer;
            slot.state = command_slot::phase::receiving;
            start(c, index);
        }
    }

    void on_h2c_data(connection& c)
    {
        const auto pdu = c.stream.h2c_data();
        // An R2T outstanding has a window (r2tl != 0), and its slot awaits H2CData.
        if (pdu.ttag >= c.r2t_windows.size() || c.r2t_windows[pdu.ttag].r2tl == 0) {
            fail(c, invalid_header_field(header_offset::ttag));
            return;
        }
        const std::uint32_t index = pdu.ttag / c.r2t_per_command;
        NVMEKIT_ASSERT(c.slots[index].state == command_slot::phase::awaiting_h2c,
                       "tcp::target: an R2T window of a slot that awaits no data");
        if (const auto error = check_h2c_data(pdu, c.r2t_windows[pdu.ttag])) {
            fail(c, *error);
            return;
        }
        c.sink = data_sink::h2c;
        c.sink_slot = index;
        c.sink_ttag = pdu.ttag;
        c.stream.place_data(c.owner->buffers.bytes(c.slots[index].buffer).subspan(pdu.datao, pdu.datal));
    }

    void on_data(connection& c)
    {
        const bool digest_ok = c.stream.data_digest_ok();
        if (!digest_ok) {
            detail::target_counters::bump(c.counters->data_digest_errors);
        }
        const data_sink sink = std::exchange(c.sink, data_sink::none);
        switch (sink) {
        case data_sink::none: return;
        case data_sink::fabrics:
            if (!digest_ok) {
                respond(c, detail::local_completion(
                               c.fabrics_sqe.cdw0.get(spec::command_dword0::cid),
                               spec::status{spec::generic_status::transient_transport_error}));
                return;
            }
            on_fabrics_command(c);
            return;
        case data_sink::capsule: {
            auto& slot = c.slots[c.sink_slot];
            if (!digest_ok) {
                slot.failed = spec::status{spec::generic_status::transient_transport_error};
            }
            start(c, c.sink_slot);
            return;
        }
        case data_sink::h2c: {
            auto& slot = c.slots[c.sink_slot];
            auto& window = c.r2t_windows[c.sink_ttag];
            window.received += c.stream.data_length();
            slot.r2t_received += c.stream.data_length();
            if (!digest_ok) {
                slot.failed = spec::status{spec::generic_status::transient_transport_error};
            }
            if (window.received == window.r2tl) {
                window = {};
                --slot.r2t_outstanding;
                request_data(c, c.sink_slot);
            }
            return;
        }
        }
    }

    /// The capsule (and its in-capsule data) is in: ask for the rest of a write, or run it.
    void start(connection& c, std::uint32_t index)
    {
        auto& slot = c.slots[index];
        const bool writes = slot.direction == spec::data_transfer::host_to_controller ||
                            slot.direction == spec::data_transfer::bidirectional;
        const auto sgl = spec::to_sgl_descriptor(slot.sqe.dptr);
        const bool needs_r2t =
            writes && slot.length != 0 && sgl.type() == spec::sgl_descriptor_type::transport_data_block;
        if (!needs_r2t || slot.failed) {
            submit(c, index);
            return;
        }
        slot.state = command_slot::phase::awaiting_h2c;
        slot.r2t_asked = 0;
        slot.r2t_received = 0;
        slot.r2t_outstanding = 0;
        request_data(c, index);
    }

    /// Asks for more of a write's data while it has fewer R2Ts outstanding than the connection
    /// allows (MAXR2T + 1 of ICReq, within target_limits::max_outstanding_r2t), each for at most
    /// MAXH2CDATA bytes, in order (as SPDK does; the Linux host answers several R2Ts of one
    /// command); runs the command once all its data is in, or once a failed one has none
    /// outstanding (the rest is not asked for).
    void request_data(connection& c, std::uint32_t index)
    {
        auto& slot = c.slots[index];
        while (!slot.failed && slot.r2t_outstanding < c.r2t_per_command && slot.r2t_asked < slot.length) {
            const std::uint32_t first = index * c.r2t_per_command;
            std::uint32_t ttag = first;
            while (c.r2t_windows[ttag].r2tl != 0) {
                ++ttag;
            }
            NVMEKIT_ASSERT(ttag < first + c.r2t_per_command, "tcp::target: no free R2T window");
            const std::uint32_t length = std::min(slot.length - slot.r2t_asked, c.params.maxh2cdata);
            const r2t_window window{slot.sqe.cdw0.get(spec::command_dword0::cid),
                                    static_cast<std::uint16_t>(ttag), slot.r2t_asked, length, 0};
            c.r2t_windows[ttag] = window;
            slot.r2t_asked += length;
            ++slot.r2t_outstanding;
            detail::target_counters::bump(c.counters->r2ts);
            append(c, pdu_size(spec::pdu_type::r2t, 0, c.params), [&](std::span<std::byte> out) {
                return encode_r2t({window.cccid, window.ttag, window.r2to, window.r2tl}, c.params, out);
            });
        }
        if (slot.r2t_outstanding == 0 && (slot.failed || slot.r2t_received == slot.length)) {
            submit(c, index);
        }
    }

    /// Hands the command to the controller with its SGL over the command's buffer.
    void submit(connection& c, std::uint32_t index)
    {
        auto& slot = c.slots[index];
        const std::uint16_t cid = slot.sqe.cdw0.get(spec::command_dword0::cid);
        if (slot.failed) {
            finish(c, index, detail::local_completion(cid, *slot.failed));
            return;
        }
        // Until the controller is ready the core refuses every command (Command Sequence Error).
        if (c.owner->discovery && c.owner->ctrl->state() == controller_state::ready) {
            if (const auto answered = discovery_command(c, slot)) {
                finish(c, index, *answered);
                return;
            }
        }
        if (!c.controller_running) {
            finish(c, index,
                   detail::local_completion(
                       cid, spec::status{spec::generic_status::command_sequence_error}.with_dnr()));
            return;
        }
        auto sqe = slot.sqe;
        sqe.dptr = spec::to_data_pointer(
            spec::sgl_descriptor::data_block(c.owner->buffers.address(slot.buffer), slot.length));
        slot.state = command_slot::phase::submitted;
        if (!c.owner->ctrl->submit(c.qid, sqe)) {
            finish(c, index,
                   detail::local_completion(
                       cid, spec::status{spec::generic_status::command_sequence_error}.with_dnr()));
        }
    }

    /// Sends a completed command's read data (on success) and its response; frees its slot.
    /// The data is what the controller transferred, the first bytes of the buffer: with an SGL
    /// longer than the transfer (SGLS bit 18) the rest holds an earlier command's bytes, and a
    /// command that transferred none sends no C2HData.
    void finish(connection& c, std::uint32_t index, spec::completion_queue_entry cqe)
    {
        auto& slot = c.slots[index];
        const bool reads = slot.direction == spec::data_transfer::controller_to_host ||
                           slot.direction == spec::data_transfer::bidirectional;
        const auto sent = static_cast<std::uint32_t>(
            reads && cqe.status().is_success()
                ? std::min<std::size_t>(slot.length, c.owner->buffers.transferred(slot.buffer))
                : 0);
        if (sent != 0) {
            // The data leaves from the command's buffer: header, data, digest, then the response.
            const auto data = std::span<const std::byte>{c.owner->buffers.bytes(slot.buffer)}.first(sent);
            const c2h_data_fields fields{cqe.cid, 0, true, false};
            detail::target_counters::bump(c.counters->c2h_data_pdus);
            append(c, layout_of(spec::pdu_type::c2h_data, sent, c.params).prefix_size(),
                   [&](std::span<std::byte> out) {
                       return encode_c2h_data_prefix(fields, sent, c.params, out);
                   });
            c.out.append_buffer(index, sent);
            if (c.params.data_digest) {
                const std::array<std::span<const std::byte>, 1> parts{data};
                const auto digest = digest_bytes(data_digest(parts));
                append(c, digest.size(), [&](std::span<std::byte> out) {
                    std::memcpy(out.data(), digest.data(), digest.size());
                    return digest.size();
                });
            }
            slot.state = command_slot::phase::sending;
        } else {
            c.owner->buffers.release(slot.buffer);
            free_slot(c, index);
        }
        respond(c, cqe);
    }

    /// Slot `index` of `c` takes no command any more (its buffer is dealt with); its R2Ts are
    /// answered no more.
    static void free_slot(connection& c, std::uint32_t index)
    {
        auto& slot = c.slots[index];
        if (slot.state == command_slot::phase::awaiting_h2c) {
            const auto first =
                static_cast<std::ptrdiff_t>(index) * static_cast<std::ptrdiff_t>(c.r2t_per_command);
            std::fill_n(c.r2t_windows.begin() + first, c.r2t_per_command, r2t_window{});
            slot.r2t_outstanding = 0;
        }
        slot.state = command_slot::phase::free;
        c.in_flight.release(index);
    }

    void respond(connection& c, spec::completion_queue_entry cqe)
    {
        cqe.sq_head = c.sq_head;
        cqe.sq_id = c.qid;
        append(c, pdu_size(spec::pdu_type::capsule_resp, 0, c.params),
               [&](std::span<std::byte> out) { return encode_capsule_resp(cqe, c.params, out); });
    }

    // ---- fabrics commands --------------------------------------------------------------------

    void on_fabrics_command(connection& c)
    {
        const auto command = spec::to_fabrics_command(c.fabrics_sqe);
        const std::uint16_t cid = command.command_id();
        switch (command.fctype) {
        case spec::fabrics_command_type::connect: {
            const auto connect_command = spec::fabrics_command_cast<spec::connect_command>(c.fabrics_sqe);
            if (!c.connected) {
                c.qid = connect_command.qid; // the response names the queue asked for
            }
            respond(c, connect(c, connect_command));
            return;
        }
        case spec::fabrics_command_type::property_get:
        case spec::fabrics_command_type::property_set: respond(c, property(c, c.fabrics_sqe)); return;
        case spec::fabrics_command_type::disconnect:
            if (!c.connected || c.qid == 0) {
                respond(c, detail::local_completion(
                               cid, spec::status{spec::fabrics_status::invalid_queue_type}.with_dnr()));
                return;
            }
            respond(c, detail::local_completion(cid, spec::status::success()));
            disconnect_queue(c);
            c.terminating = true;
            c.linger_until = clock_.now() + options_.termination_linger;
            return;
        default:
            respond(c, detail::local_completion(
                           cid, spec::status{spec::generic_status::invalid_field}.with_dnr()));
            return;
        }
    }

    spec::completion_queue_entry connect(connection& c, const spec::connect_command& command)
    {
        const std::uint16_t cid = command.command_id();
        if (c.connected) {
            return detail::local_completion(
                cid, spec::status{spec::generic_status::command_sequence_error}.with_dnr());
        }
        if (command.recfmt != 0) {
            return detail::local_completion(
                cid, spec::status{spec::fabrics_status::connect_incompatible_format}.with_dnr());
        }
        if (c.fabrics_length != sizeof(spec::connect_data)) {
            return detail::local_completion(
                cid, spec::status{spec::generic_status::data_sgl_length_invalid}.with_dnr());
        }
        spec::connect_data data{};
        std::memcpy(&data, c.fabrics_data.data(), sizeof(data));
        // Any host may reach the discovery controller; its log lists what the host may connect to.
        const bool discovery = options_.discovery && data.subsystem_nqn() == spec::discovery_nqn;
        const served_subsystem* served = discovery ? nullptr : find_subsystem(data.subsystem_nqn());
        if (!discovery && served == nullptr) {
            return detail::invalid_connect_parameter(cid, true, offsetof(spec::connect_data, subnqn));
        }
        if (!discovery && !served->access.allows(data.host_nqn())) {
            return detail::local_completion(
                cid, spec::status{spec::fabrics_status::connect_invalid_host}.with_dnr());
        }
        const std::uint32_t entries = command.queue_entries();
        if (command.sqsize == 0) {
            return detail::invalid_connect_parameter(cid, false, offsetof(spec::connect_command, sqsize));
        }
        const bool admin = command.qid == 0;
        association* owner = nullptr;
        if (admin) {
            if (data.cntlid != spec::dynamic_controller_id) {
                return detail::invalid_connect_parameter(cid, true, offsetof(spec::connect_data, cntlid));
            }
            // An association costs memory until its end is complete: dying ones count too.
            if (associations_.size() >= options_.max_associations) {
                detail::target_counters::bump(statistics_.associations_refused);
                return detail::local_completion(cid,
                                                spec::status{spec::fabrics_status::connect_controller_busy});
            }
            if (static_cast<std::size_t>(
                    std::count_if(associations_.begin(), associations_.end(), [&](const auto& a) {
                        return a->host_nqn == data.host_nqn();
                    })) >= options_.max_associations_per_host) {
                detail::target_counters::bump(statistics_.associations_refused_per_host);
                return detail::local_completion(cid,
                                                spec::status{spec::fabrics_status::connect_controller_busy});
            }
            // A peer that makes up a host NQN for each Connect is bounded by its address.
            if (static_cast<std::size_t>(std::count_if(associations_.begin(), associations_.end(),
                                                       [&](const auto& a) { return a->peer == c.peer; })) >=
                options_.max_associations_per_address) {
                detail::target_counters::bump(statistics_.associations_refused_per_address);
                return detail::local_completion(cid,
                                                spec::status{spec::fabrics_status::connect_controller_busy});
            }
            auto created =
                std::make_unique<association>(target_buffers_, options_.max_association_buffer_bytes);
            created->subsystem = discovery ? &discovery_subsystem_ : served->subsystem;
            created->ctrl = std::make_unique<controller_type>(
                created->buffers, created->interrupts, clock_, *created->subsystem,
                discovery ? discovery_controller_ : options_.controller);
            // KATO becomes the controller's Keep Alive Timer feature; its timer runs from here. A
            // discovery controller asked for none gets discovery_keep_alive_timeout.
            const std::uint32_t keep_alive_ms =
                discovery && command.kato == 0
                    ? static_cast<std::uint32_t>(std::clamp<std::chrono::milliseconds::rep>(
                          options_.discovery_keep_alive_timeout.count(), 0, 0xffff'ffff))
                    : command.kato;
            const auto status = created->ctrl->connect_admin_queue(entries, keep_alive_ms);
            if (!status.is_success()) {
                const bool kato =
                    status.with_dnr(false) == spec::status{spec::generic_status::keep_alive_timeout_invalid};
                return detail::invalid_connect_parameter(cid, false,
                                                         kato ? offsetof(spec::connect_command, kato)
                                                              : offsetof(spec::connect_command, sqsize));
            }
            created->host_nqn = std::string{data.host_nqn()};
            created->host_id = data.hostid;
            created->peer = c.peer;
            created->discovery = discovery;
            created->admin = &c;
            created->connect_kato_ms = keep_alive_ms;
            created->last_admin_command = clock_.now();
            owner = created.get();
            associations_.push_back(std::move(created));
            detail::target_counters::bump(statistics_.associations_created);
        } else {
            if (discovery) {
                // A discovery controller has no I/O queues.
                return detail::invalid_connect_parameter(cid, false, offsetof(spec::connect_command, qid));
            }
            // CNTLIDs are unique within a subsystem, not across the subsystems of a listener.
            for (const auto& candidate : associations_) {
                if (!candidate->dying && candidate->subsystem == served->subsystem &&
                    candidate->ctrl->controller_id() == data.cntlid) {
                    owner = candidate.get();
                }
            }
            if (owner == nullptr) {
                return detail::invalid_connect_parameter(cid, true, offsetof(spec::connect_data, cntlid));
            }
            if (owner->host_nqn != data.host_nqn()) {
                return detail::invalid_connect_parameter(cid, true, offsetof(spec::connect_data, hostnqn));
            }
            if (owner->host_id != data.hostid) {
                return detail::invalid_connect_parameter(cid, true, offsetof(spec::connect_data, hostid));
            }
            if (!groups_.empty()) {
                // The queue's connection and its poll group: the next group round-robin; its
                // buffers: a partition of their own.
                const auto free_partition =
                    std::find(owner->partition_taken.begin(), owner->partition_taken.end(), false);
                if (free_partition == owner->partition_taken.end()) {
                    return detail::local_completion(cid, spec::status{spec::generic_status::internal_error});
                }
                placement_ = next_group_;
                c.partition = static_cast<std::uint8_t>(free_partition - owner->partition_taken.begin());
            }
            const auto status = owner->ctrl->connect_io_queue(command.qid, entries);
            if (!status.is_success()) {
                c.partition = 0;
                // A QID or an SQSIZE (above CAP.MQES) the controller does not take is a Connect
                // parameter the host got wrong (NVMe over Fabrics 1.1 3.3), named by IPO.
                const auto code = status.with_dnr(false);
                if (code == spec::status{spec::command_specific_status::invalid_queue_identifier}) {
                    return detail::invalid_connect_parameter(cid, false,
                                                             offsetof(spec::connect_command, qid));
                }
                if (code == spec::status{spec::command_specific_status::invalid_queue_size}) {
                    return detail::invalid_connect_parameter(cid, false,
                                                             offsetof(spec::connect_command, sqsize));
                }
                return detail::local_completion(cid, status);
            }
            if (groups_.empty()) {
                owner->io.push_back(&c);
            } else {
                owner->partition_taken[c.partition] = true;
                owner->buffers.prepare(c.partition);
                c.group = placement_;
                c.serial = next_serial_++;
                c.handoff = true;
                next_group_ = static_cast<std::uint16_t>((next_group_ + 1) % groups_.size());
                owner->group_queues.emplace_back(command.qid, c.serial);
                c.queue_epoch = owner->queue_epoch.load(std::memory_order_relaxed);
                owner->in_group.resize(groups_.size(), false);
                owner->in_group[placement_] = true;
            }
        }
        c.owner = owner;
        c.qid = command.qid;
        c.connected = true;
        c.ever_connected = true;
        ++owner->connections;
        c.entries = entries;
        // The Connect itself was the queue's first entry.
        c.sq_head = static_cast<std::uint16_t>(1U % entries);
        c.slots.assign(entries, command_slot{});
        c.in_flight.reset(entries);
        // TTAGs are 16 bits: slot index * R2Ts per command + k.
        c.r2t_per_command = std::max<std::uint32_t>(
            1, std::min<std::uint32_t>(c.params.max_outstanding_r2t, 65536U / entries));
        c.r2t_windows.assign(std::size_t{entries} * c.r2t_per_command, r2t_window{});
        c.params.set_queue(admin, options_.limits,
                           command.cattr.get(spec::connect_attributes::disable_sq_flow_control));
        c.stream.set_max_in_capsule_data(c.params.max_in_capsule_data);
        const auto dw0 = spec::connect_response_dword0{}.with(spec::connect_response_dword0::cntlid,
                                                              owner->ctrl->controller_id());
        return detail::local_completion(cid, spec::status::success(), dw0.raw);
    }

    spec::completion_queue_entry property(connection& c, const spec::submission_queue_entry& sqe)
    {
        const auto command = spec::to_fabrics_command(sqe);
        const std::uint16_t cid = command.command_id();
        if (!c.connected) {
            return detail::local_completion(
                cid, spec::status{spec::generic_status::command_sequence_error}.with_dnr());
        }
        if (c.qid != 0) {
            return detail::local_completion(
                cid, spec::status{spec::fabrics_status::invalid_queue_type}.with_dnr());
        }
        auto& ctrl = *c.owner->ctrl;
        if (command.fctype == spec::fabrics_command_type::property_get) {
            const auto get = spec::fabrics_command_cast<spec::property_get_command>(sqe);
            const unsigned width = spec::property_size_bytes(get.size());
            const auto value = width == 0 ? std::nullopt : ctrl.property_read(get.ofst, width);
            if (!value) {
                return detail::local_completion(cid,
                                                spec::status{spec::generic_status::invalid_field}.with_dnr());
            }
            auto cqe = detail::local_completion(cid, spec::status::success());
            spec::set_property_get_value(cqe, *value);
            return cqe;
        }
        const auto set = spec::fabrics_command_cast<spec::property_set_command>(sqe);
        const unsigned width = spec::property_size_bytes(set.size());
        const bool was_enabled =
            spec::cc_register{static_cast<std::uint32_t>(read_property(ctrl, spec::register_offset::cc))}.get(
                spec::cc_register::en);
        if (width == 0 || !ctrl.property_write(set.ofst, width, set.value)) {
            return detail::local_completion(cid,
                                            spec::status{spec::generic_status::invalid_field}.with_dnr());
        }
        const bool enabled =
            spec::cc_register{static_cast<std::uint32_t>(read_property(ctrl, spec::register_offset::cc))}.get(
                spec::cc_register::en);
        if (was_enabled && !enabled) {
            abandon_commands(*c.owner);
        }
        ctrl.poll();
        return detail::local_completion(cid, spec::status::success());
    }

    // ---- the discovery controller ------------------------------------------------------------

    /// ASQSZ: the admin queues controller::connect_admin_queue takes have up to 4096 entries.
    static constexpr std::uint16_t max_admin_queue_entries = 4096;

    /// A command to a discovery controller that the target answers itself: opcodes a discovery
    /// controller does not take (Invalid Command Opcode), Identify (Controller only) and Get Log
    /// Page (the Discovery log page only). Nothing for those the controller core runs (features,
    /// Asynchronous Event Request, Keep Alive). Its data goes to the first bytes of the command's
    /// buffer, which may be longer (SGLS bit 18), and is noted as transferred, so C2HData sends
    /// only that.
    std::optional<spec::completion_queue_entry> discovery_command(connection& c, const command_slot& slot)
    {
        const std::uint16_t cid = slot.sqe.cdw0.get(spec::command_dword0::cid);
        const auto opcode = static_cast<spec::admin_opcode>(slot.sqe.opcode());
        const auto fail = [&](auto code) {
            return detail::local_completion(cid, spec::status{code}.with_dnr());
        };
        if (!discovery_takes(slot.sqe.opcode())) {
            return fail(spec::generic_status::invalid_opcode);
        }
        const auto out = c.owner->buffers.bytes(slot.buffer);
        if (opcode == spec::admin_opcode::identify) {
            if (spec::identify_view::decode(slot.sqe).cns != spec::cns::identify_controller) {
                return fail(spec::generic_status::invalid_field);
            }
            if (out.size() < sizeof(spec::identify_controller)) {
                return fail(spec::generic_status::data_sgl_length_invalid);
            }
            const auto data =
                discovery_identify(identify_data<controller_type>::controller_data(*c.owner->ctrl));
            std::memcpy(out.data(), &data, sizeof(data));
            c.owner->buffers.note_transferred(slot.buffer, sizeof(data));
            return detail::local_completion(cid, spec::status::success());
        }
        if (opcode == spec::admin_opcode::get_log_page) {
            const auto command = spec::get_log_page_view::decode(slot.sqe);
            if (command.log_page_id != spec::log_page_id{spec::discovery_log_page_id}) {
                return fail(spec::command_specific_status::invalid_log_page);
            }
            // This listener's entries: first the discovery subsystem that returns the log
            // (SUBTYPE 3h, as Linux's nvmet lists it), then each NVM subsystem the host may reach.
            const auto address = advertised_address(c);
            const auto at_this_listener = [&](std::string_view nqn, spec::discovery_subsystem_type subtype) {
                return discovery_record{.address = address.text,
                                        .port = port_,
                                        .nqn = std::string{nqn},
                                        .port_id = options_.port_id,
                                        .admin_sq = max_admin_queue_entries,
                                        .subtype = subtype,
                                        .family = address.ipv6 ? spec::address_family::ipv6
                                                               : spec::address_family::ipv4};
            };
            std::vector<discovery_record> records{
                at_this_listener(spec::discovery_nqn, spec::discovery_subsystem_type::current_discovery)};
            for (const auto& served : subsystems_) {
                if (served.access.allows(c.owner->host_nqn)) {
                    records.push_back(at_this_listener(served.subsystem->identity().nqn,
                                                       spec::discovery_subsystem_type::nvm));
                }
            }
            for (const auto& referral : referrals_) {
                records.push_back(referral_record(referral));
            }
            const auto log = discovery_log(discovery_generation_, records);
            if (!command.retain_async_event) {
                c.owner->ctrl->acknowledge_discovery_log();
            }
            const auto status = read_discovery_log(command, log, out);
            if (status.is_success()) {
                c.owner->buffers.note_transferred(slot.buffer,
                                                  static_cast<std::size_t>(command.byte_count()));
            }
            return detail::local_completion(cid, status);
        }
        return std::nullopt;
    }

    /// TRADDR of this listener's Discovery log entries as the host on `c` sees them: the address
    /// it listens on, or on 0.0.0.0 or :: the one `c`'s host connected to (as Linux's nvmet does:
    /// an entry naming every address names none a host can connect to).
    [[nodiscard]] address_text advertised_address(const connection& c) const
    {
        if (listens_on_any_address_) {
            try {
                return local_address(c.socket.get());
            } catch (const std::system_error&) {
                // (a connection already reset: its entries name what the listener was given)
            }
        }
        return {options_.address, options_.address.find(':') != std::string::npos};
    }

    /// What the Discovery log page may list changed: a new GENCTR, and a Discovery Log Page
    /// Change event for each discovery controller whose host enabled it.
    void discovery_changed()
    {
        ++discovery_generation_;
        for (auto& association : associations_) {
            if (association->discovery && !association->dying) {
                static_cast<void>(association->ctrl->report_discovery_log_change());
                controllers_active_ = true;
            }
        }
    }

    // ---- controllers -------------------------------------------------------------------------

    /// Ends each association whose Keep Alive Timer expired: its connections are closed, which
    /// tears the controller down. The timer starts when the admin queue connects (Base 2.0 3.9.4;
    /// NVMe over Fabrics: at the admin Connect). While the controller is ready it is the
    /// controller's (restarted by Keep Alive; on expiry the controller reports CSTS.CFS); while
    /// it is not (before CC.EN = 1, during a reset or after a shutdown) it is the target's, and
    /// any command on the admin queue restarts it (as Linux's nvmet's traffic-based keep alive),
    /// since no Keep Alive command can be taken then. The controller core's own timer, which a
    /// PCIe function shares, runs only while it is ready.
    void end_expired_associations()
    {
        const std::chrono::nanoseconds now = clock_.now();
        for (auto& association : associations_) {
            if (association->dying || association->admin == nullptr) {
                continue;
            }
            auto& ctrl = *association->ctrl;
            const bool controller_expired = ctrl.registers().csts().get(spec::csts_register::cfs) &&
                                            ctrl.statistics().keep_alive_expirations != 0;
            const bool idle_while_not_ready = association->connect_kato_ms != 0 &&
                                              ctrl.state() != controller_state::ready &&
                                              now - association->last_admin_command >
                                                  std::chrono::milliseconds{association->connect_kato_ms};
            if (controller_expired || idle_while_not_ready) {
                detail::target_counters::bump(statistics_.keep_alive_expirations);
                close_connection(*association->admin);
            }
        }
    }

    /// Polls every controller and sends the completions; remembers whether any had work, so the
    /// next round does not sleep while commands are on their way.
    void run_controllers()
    {
        controllers_active_ = false;
        for (auto& association : associations_) {
            std::size_t work = association->ctrl->poll() + association->ctrl->io_outstanding();
            if (association->admin != nullptr) {
                work += collect(*association->admin);
            }
            for (connection* io : association->io) {
                work += collect(*io);
            }
            controllers_active_ = controllers_active_ || work != 0;
        }
    }

    /// Sends the completions of `c`'s queue; returns how many.
    std::size_t collect(connection& c)
    {
        std::size_t collected = 0;
        while (auto cqe = c.owner->ctrl->take_completion(c.qid)) {
            ++collected;
            // A command abandoned by a reset has no slot any more: its completion, if the
            // controller still posts one, is not the host's to see.
            if (const auto index = c.in_flight.find(cqe->cid);
                index && c.slots[*index].state == command_slot::phase::submitted) {
                finish(c, *index, *cqe);
            }
        }
        return collected;
    }

    /// A Controller Reset or an NVM Subsystem Reset ended every command of the association without
    /// a completion: their slots are free again (their buffers wait for the backend).
    void abandon_commands(association& owner)
    {
        const auto abandon = [&owner](connection& c) {
            for (std::uint32_t i = 0; i < c.slots.size(); ++i) {
                if (c.slots[i].state == command_slot::phase::submitted) {
                    owner.quarantine.push_back(c.slots[i].buffer);
                    free_slot(c, i);
                }
            }
        };
        if (owner.admin != nullptr) {
            abandon(*owner.admin);
        }
        for (connection* io : owner.io) {
            abandon(*io);
        }
        // The reset deleted the I/O queues; the groups end their connections' commands.
        owner.queue_epoch.fetch_add(1, std::memory_order_release);
        owner.group_queues.clear();
        post_to_groups_of(owner, to_group::kind::abandon);
    }

    /// The queue of `c` leaves its controller (Disconnect, or the connection's end).
    void disconnect_queue(connection& c)
    {
        if (!c.connected) {
            return;
        }
        c.connected = false;
        association& owner = *c.owner;
        auto& quarantine = c.group < 0 ? owner.quarantine : c.quarantine;
        for (std::uint32_t i = 0; i < c.slots.size(); ++i) {
            switch (c.slots[i].state) {
            case command_slot::phase::free:
            case command_slot::phase::sending: continue;     // freed once sent, or when the connection closes
            case command_slot::phase::waiting_buffer: break; // no buffer yet
            case command_slot::phase::submitted: quarantine.push_back(c.slots[i].buffer); break;
            case command_slot::phase::receiving:
            case command_slot::phase::awaiting_h2c: owner.buffers.release(c.slots[i].buffer); break;
            }
            free_slot(c, i);
        }
        c.waiting.clear();
        if (c.qid == 0) {
            owner.admin = nullptr;
            owner.dying = true;
            for (connection* io : std::exchange(owner.io, {})) {
                close_connection(*io);
            }
            // A connection whose I/O Connect succeeded this round has not moved yet: it ends here;
            // the groups close theirs, and answer.
            for (auto& other : connections_) {
                if (other && other->owner == &owner && other->handoff) {
                    close_connection(*other);
                }
            }
            owner.groups_pending += post_to_groups_of(owner, to_group::kind::end);
            if (const auto cc =
                    owner.ctrl->property_read(static_cast<std::uint64_t>(spec::register_offset::cc), 4);
                cc && (*cc & 1U) != 0) {
                owner.ctrl->property_write(static_cast<std::uint64_t>(spec::register_offset::cc), 4,
                                           *cc & ~1ULL);
            }
        } else if (c.group < 0) {
            static_cast<void>(owner.ctrl->disconnect_io_queue(c.qid));
            std::erase(owner.io, &c);
        }
        // (A group's queue is disconnected by poll() when the connection's end reaches it.)
    }

    /// Frees quarantined buffers once the controller holds no backend I/O; true when a dying
    /// association may go.
    bool retire(association& owner)
    {
        if (!owner.quarantine.empty() || owner.dying) {
            owner.ctrl->poll();
            if (owner.ctrl->backend_idle()) {
                for (const auto id : owner.quarantine) {
                    owner.buffers.release(id);
                }
                owner.quarantine.clear();
            }
        }
        if (owner.quarantine.empty()) {
            // The storage that closed connections' commands held goes back (trimmed), and the
            // partitions of closed group connections, holding nothing any more, are reusable.
            if (std::exchange(owner.trim_pending, false)) {
                owner.buffers.trim(0);
            }
            for (const auto number : std::exchange(owner.retired_partitions, {})) {
                owner.buffers.trim(number);
                owner.partition_taken[number] = false;
            }
        }
        return owner.dying && owner.quarantine.empty() && owner.connections == 0 && owner.groups_pending == 0;
    }

    void drain(association& owner)
    {
        for (int round = 0; round < 100000 && !owner.ctrl->backend_idle(); ++round) {
            owner.ctrl->poll();
        }
    }

    // ---- connection groups --------------------------------------------------------------------
    // poll() and the groups share no connection: a connection moves to its group by a message,
    // and everything else they tell each other goes by message too (a mailbox each way, woken by
    // an eventfd). poll()'s thread keeps the associations: controllers' admin contexts, their
    // creation and destruction, resets, keep alive, host access and subsystem changes.

    /// Posts `message` to group `g` (behind those waiting for room) and wakes it.
    void post(group& g, to_group message)
    {
        g.overflow.push_back(message);
        send_to_groups();
    }

    /// Posts `what` about `owner` to each group that has had a connection of it; how many.
    std::size_t post_to_groups_of(association& owner, typename to_group::kind what)
    {
        std::size_t posted = 0;
        for (std::size_t i = 0; i < owner.in_group.size(); ++i) {
            if (owner.in_group[i]) {
                post(*groups_[i], {.what = what, .owner = &owner});
                ++posted;
            }
        }
        return posted;
    }

    /// Posts what waits for room in the groups' mailboxes.
    void send_to_groups()
    {
        for (auto& g : groups_) {
            std::size_t sent = 0;
            while (sent < g->overflow.size() && g->inbox.try_push(std::move(g->overflow[sent]))) {
                ++sent;
            }
            if (sent != 0) {
                g->overflow.erase(g->overflow.begin(),
                                  g->overflow.begin() + static_cast<std::ptrdiff_t>(sent));
                const std::uint64_t one = 1;
                static_cast<void>(::write(g->wake.get(), &one, sizeof(one)));
            }
        }
    }

    /// Moves the connections whose I/O Connect succeeded this round to their groups.
    void hand_over_connections()
    {
        for (auto& c : connections_) {
            if (c->handoff && !c->closed) {
                c->handoff = false;
                const auto index = static_cast<std::size_t>(c->group);
                post(*groups_[index], {.what = to_group::kind::adopt, .adopted = c.release()});
            }
        }
        std::erase(connections_, nullptr);
    }

    /// What the groups told poll().
    void take_group_messages()
    {
        main_inbox_.drain(
            [this](to_main&& m) {
                if (m.what == to_main::kind::ended) {
                    --m.owner->groups_pending;
                    return;
                }
                group_connection_closed(m);
            },
            mailbox_capacity);
    }

    /// A connection of a group closed (its message reached poll()).
    void group_connection_closed(const to_main& m)
    {
        connection_gone(m.peer);
        {
            {
                association& owner = *m.owner;
                --owner.connections;
                owner.quarantine.insert(owner.quarantine.end(), m.quarantine.begin(), m.quarantine.end());
                owner.retired_partitions.push_back(m.partition);
                // The queue leaves the controller unless a reset deleted it (and a later
                // connection may have connected the QID again).
                const auto queue = std::find(owner.group_queues.begin(), owner.group_queues.end(),
                                             std::pair{m.qid, m.serial});
                if (queue != owner.group_queues.end()) {
                    owner.group_queues.erase(queue);
                    if (!owner.dying) {
                        static_cast<void>(owner.ctrl->disconnect_io_queue(m.qid));
                    }
                }
            }
        }
    }

    /// Waits (taking the groups' messages) until `done(association)` holds for every association.
    template <typename Done>
    void wait_for_groups(Done&& done)
    {
        if (groups_.empty()) {
            return;
        }
        send_to_groups();
        for (;;) {
            take_group_messages();
            if (std::all_of(associations_.begin(), associations_.end(),
                            [&](const auto& a) { return done(*a); })) {
                return;
            }
            send_to_groups();
            pollfd wake{main_wake_.get(), POLLIN, 0};
            if (::poll(&wake, 1, 1) > 0) {
                std::uint64_t count = 0;
                static_cast<void>(::read(main_wake_.get(), &count, sizeof(count)));
            }
        }
    }

    /// Group `g` takes poll()'s messages.
    void take_messages(group& g)
    {
        g.inbox.drain(
            [&](to_group&& m) {
                switch (m.what) {
                case to_group::kind::adopt:
                    m.adopted->counters = &g.counters;
                    g.connections.emplace_back(m.adopted);
                    return;
                case to_group::kind::abandon:
                    for (auto& c : g.connections) {
                        if (c->owner == m.owner && !c->closed && c->connected) {
                            abandon_in_group(*c);
                            c->queue_gone = true;
                        }
                    }
                    return;
                case to_group::kind::end:
                    // (Closed ones leave g.connections at the end of the round.)
                    for (auto& c : g.connections) {
                        if (c->owner == m.owner) {
                            close_connection(*c);
                        }
                    }
                    g.outbox.push_back({.what = to_main::kind::ended, .owner = m.owner});
                    return;
                }
            },
            mailbox_capacity);
        send_to_main(g);
    }

    /// A Controller Reset ended the commands of group connection `c` without completions: their
    /// slots are free, their buffers held until the connection closes.
    static void abandon_in_group(connection& c)
    {
        for (std::uint32_t i = 0; i < c.slots.size(); ++i) {
            if (c.slots[i].state == command_slot::phase::submitted) {
                c.quarantine.push_back(c.slots[i].buffer);
                free_slot(c, i);
            }
        }
    }

    /// Group `g` posts what it has for poll(), in order, and wakes it.
    void send_to_main(group& g)
    {
        std::size_t sent = 0;
        while (sent < g.outbox.size() && main_inbox_.try_push(std::move(g.outbox[sent]))) {
            ++sent;
        }
        if (sent != 0) {
            g.outbox.erase(g.outbox.begin(), g.outbox.begin() + static_cast<std::ptrdiff_t>(sent));
            const std::uint64_t one = 1;
            static_cast<void>(::write(main_wake_.get(), &one, sizeof(one)));
        }
    }

    // ---- sending and closing -----------------------------------------------------------------

    template <typename Encoder>
    static void append(connection& c, std::size_t size, Encoder&& encode)
    {
        c.out.append(size, std::forward<Encoder>(encode));
    }

    /// Sends what the socket takes; a read's slot is freed once its data is out.
    void flush(connection& c)
    {
        const auto result = c.out.flush(
            c.socket.get(), [&c](std::uint32_t slot) { return c.owner->buffers.bytes(c.slots[slot].buffer); },
            [&c](std::uint32_t index) {
                c.owner->buffers.release(c.slots[index].buffer);
                free_slot(c, index);
            });
        if (result == send_queue::flush_result::failed) {
            close_connection(c);
        }
    }

    /// A fatal error of the stream or of a PDU's fields: C2HTermReq, then the connection ends.
    void fail(connection& c, const fatal_error& error)
    {
        c.stream.fail(error);
        terminate(c, error, c.stream.header_bytes());
    }

    void terminate(connection& c, const fatal_error& error, std::span<const std::byte> header)
    {
        if (c.terminating) {
            return;
        }
        detail::target_counters::bump(c.counters->terminations_sent);
        append(c, spec::tcp_term_req_max_length,
               [&](std::span<std::byte> out) { return encode_c2h_term_req(error, header, out); });
        c.terminating = true;
        c.linger_until = clock_.now() + options_.termination_linger;
        disconnect_queue(c);
        flush(c);
    }

    void close_connection(connection& c)
    {
        if (c.closed) {
            return;
        }
        disconnect_queue(c);
        if (c.ever_connected) {
            for (std::uint32_t i = 0; i < c.slots.size(); ++i) {
                if (c.slots[i].state == command_slot::phase::sending) {
                    c.owner->buffers.release(c.slots[i].buffer);
                    free_slot(c, i);
                }
            }
            c.out.clear();
            if (c.group < 0) {
                --c.owner->connections;
                // Its commands' free storage goes now, that of those the controller still holds
                // once they are released (retire).
                c.owner->buffers.trim(c.partition);
                c.owner->trim_pending = true;
            } else {
                // poll() counts it closed, disconnects its queue and frees its buffers (at once
                // when it has not moved to its group yet).
                to_main closed{.what = to_main::kind::closed,
                               .owner = c.owner,
                               .qid = c.qid,
                               .serial = c.serial,
                               .partition = c.partition,
                               .quarantine = std::exchange(c.quarantine, {}),
                               .peer = c.peer};
                if (c.handoff) {
                    c.handoff = false;
                    group_connection_closed(closed);
                } else {
                    groups_[static_cast<std::size_t>(c.group)]->outbox.push_back(std::move(closed));
                }
            }
        }
        if (c.group < 0) {
            connection_gone(c.peer); // (a group's connection: when its close reaches poll())
        }
        c.socket.reset();
        c.ticket.reset();
        c.closed = true;
        detail::target_counters::bump(c.counters->connections_closed);
    }

    target_options options_;
    /// The controllers' MDTS in bytes.
    std::uint64_t mdts_bytes_ = 0;
    /// The storage of every association's command buffers (max_buffer_bytes); each association's
    /// budget draws on it, so it outlives them.
    buffer_budget target_buffers_{options_.max_buffer_bytes};
    /// The subsystems served, in the order they were added (the Discovery log's order).
    std::vector<served_subsystem> subsystems_;
    /// What discovery controllers belong to; it has no namespaces.
    subsystem_type discovery_subsystem_{{.nqn = std::string{spec::discovery_nqn}}, {.max_namespaces = 1}};
    /// The referrals the Discovery log page lists after the subsystems.
    std::vector<discovery_referral> referrals_;
    /// GENCTR of the Discovery log page: changes whenever what the log may list changes.
    std::uint64_t discovery_generation_ = 1;
    /// The configuration of discovery controllers: options_.controller's, as a discovery one.
    controller_config discovery_controller_{};
    typename Traits::clock clock_{};
    unique_fd listener_;
    std::uint16_t port_ = 0;
    /// Whether the listener is on 0.0.0.0 or ::: the Discovery log then gives each host the
    /// address it connected to.
    bool listens_on_any_address_ = false;
    /// Traits::clock time before which no connection is accepted (accept_pause).
    std::chrono::nanoseconds accept_resumes_{};
    std::vector<std::unique_ptr<connection>> connections_;
    /// Connections not closed (in poll() and in the groups), in all and from each peer address.
    std::size_t live_connections_ = 0;
    std::map<peer_address, std::size_t> connections_from_;
    /// The connections every target of the process may hold (connection_descriptor_bound of
    /// descriptor_reserve), read again as the target accepts or waits at it.
    std::size_t connection_bound_ = 0;
    std::vector<std::unique_ptr<association>> associations_;
    std::vector<pollfd> pollfds_;
    bool controllers_active_ = false;
    /// poll()'s counts (each group counts its own).
    detail::target_counters statistics_{};
    /// With connection_groups: the groups, what they tell poll() and the eventfd that wakes it,
    /// the group of the I/O queue being connected (queue_placement), the next group round-robin
    /// and the serial of the next connection moved to a group.
    std::vector<std::unique_ptr<group>> groups_;
    mailbox<to_main> main_inbox_{mailbox_capacity};
    unique_fd main_wake_{::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)};
    std::uint16_t placement_ = 0;
    std::uint16_t next_group_ = 0;
    std::uint64_t next_serial_ = 1;
};

} // namespace transport::tcp
NVMEKIT_END_NAMESPACE
