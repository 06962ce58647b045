#pragma once
/// The discovery controller's own data (NVMe Base 2.0 3.1.3.3 Discovery controller; the
/// Discovery log page, 5.16.1.23): the log page built from the subsystems a host may reach and
/// read in pieces by Get Log Page, the Identify Controller a discovery controller reports, and
/// the admin commands it takes. The target (target.hpp) serves it on the well-known discovery
/// NQN; what it needs of a controller beyond these (Property Get/Set, Keep Alive, features)
/// comes from the controller core.
///
///     const auto log = discovery_log(1, {{.address = "127.0.0.1", .port = 4420, .nqn = nqn},
///                                         referral_record({.address = "192.0.2.9", .port = 8009})});
///     const auto status = read_discovery_log(spec::get_log_page_view::decode(sqe), log, out);

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nvmekit/config.hpp>
#include <nvmekit/spec/commands.hpp>
#include <nvmekit/spec/fabrics.hpp>
#include <nvmekit/spec/identify.hpp>
#include <nvmekit/spec/opcodes.hpp>
#include <nvmekit/spec/status.hpp>
#include <nvmekit/spec/text.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace transport::tcp {

/// An NVM subsystem reachable through an NVMe/TCP listener, or a referral: one Discovery log
/// page entry.
struct discovery_record {
    std::string address; ///< TRADDR: an IPv4 or IPv6 address
    std::uint16_t port = spec::tcp_default_port;
    std::string nqn;             ///< SUBNQN
    std::uint16_t port_id = 1;   ///< PORTID
    std::uint16_t admin_sq = 32; ///< ASQSZ: the largest admin submission queue the controller takes
    /// SUBTYPE: an NVM subsystem, or a referral to another discovery service.
    spec::discovery_subsystem_type subtype = spec::discovery_subsystem_type::nvm;
    /// TREQ's secure channel requirement: not specified unless TLS is required, since an
    /// older libnvme (Debian 12's 1.3) starts TLS for an entry that says "not required".
    spec::secure_channel_requirement secure_channel = spec::secure_channel_requirement::not_specified;
    /// ADRFAM; none: from the address (IPv6 when it holds a colon).
    std::optional<spec::address_family> family{};
};

/// A referral (NVMe Base 2.0 5.16.1.23; SPDK's nvmf_discovery_add_referral): another NVMe/TCP
/// discovery service, or an NVM subsystem elsewhere, that a discovery controller lists beside
/// what it serves itself.
struct discovery_referral {
    std::string address; ///< TRADDR
    std::uint16_t port = 8009;
    /// SUBNQN: the well-known discovery NQN (the default), a unique discovery NQN or an NVM
    /// subsystem's.
    std::string nqn = std::string{spec::discovery_nqn};
    bool secure_channel = false; ///< TREQ: a secure channel is required
    /// ADRFAM; none: from the address.
    std::optional<spec::address_family> family{};

    friend bool operator==(const discovery_referral&, const discovery_referral&) = default;
};

/// The Discovery log page entry of `referral`, as SPDK writes it: SUBTYPE 1 (referral to another
/// discovery service) when SUBNQN is the well-known discovery NQN, SUBTYPE 2 (NVM subsystem)
/// for any other NQN; PORTID 0 (not a port of this target); ASQSZ 32, the least a controller
/// takes. (SUBTYPE 3 names the discovery subsystem that returns the log, never a referral.)
/// TREQ's secure channel: required with `secure_channel`, else not specified, where SPDK writes
/// "not required": libnvme before SECTYPE decided (linux-nvme/libnvme#612, #665) connects
/// with TLS to any TCP entry whose TREQ says required or not required, which a host without
/// TLS refuses. nvme-cli's `connect-all` follows a SUBTYPE 1 entry with a discovery of its own
/// and connects to a SUBTYPE 2 one.
[[nodiscard]] inline discovery_record referral_record(const discovery_referral& referral)
{
    return {.address = referral.address,
            .port = referral.port,
            .nqn = referral.nqn,
            .port_id = 0,
            .admin_sq = 32,
            .subtype = referral.nqn == spec::discovery_nqn ? spec::discovery_subsystem_type::referral
                                                           : spec::discovery_subsystem_type::nvm,
            .secure_channel = referral.secure_channel ? spec::secure_channel_requirement::required
                                                      : spec::secure_channel_requirement::not_specified,
            .family = referral.family};
}

/// The Discovery log page (header, then one 1024-byte entry per record) of generation
/// `generation` (GENCTR): RECFMT 0; each entry TRTYPE TCP, ADRFAM as the record gives it or from
/// the address (IPv6 when it holds a colon), SUBTYPE and TREQ's secure channel as the record
/// says, CNTLID FFFFh (the dynamic controller model), TRSVCID the port in decimal, TSAS SECTYPE
/// 0 (no security).
[[nodiscard]] inline std::vector<std::byte> discovery_log(std::uint64_t generation,
                                                          std::span<const discovery_record> records)
{
    std::vector<std::byte> log(sizeof(spec::discovery_log_header) +
                               records.size() * sizeof(spec::discovery_log_entry));
    spec::discovery_log_header header{};
    header.genctr = generation;
    header.numrec = records.size();
    header.recfmt = 0;
    std::memcpy(log.data(), &header, sizeof(header));
    std::size_t at = sizeof(header);
    for (const auto& record : records) {
        spec::discovery_log_entry entry{};
        entry.trtype = spec::transport_type::tcp;
        entry.adrfam = record.family.value_or(record.address.find(':') != std::string::npos
                                                  ? spec::address_family::ipv6
                                                  : spec::address_family::ipv4);
        entry.subtype = record.subtype;
        entry.treq.set(spec::transport_requirements::secure_channel, record.secure_channel);
        entry.portid = record.port_id;
        entry.cntlid = spec::dynamic_controller_id;
        entry.asqsz = record.admin_sq;
        static_cast<void>(entry.set_service_id(std::to_string(record.port)));
        static_cast<void>(entry.set_address(record.address));
        static_cast<void>(entry.set_subsystem_nqn(record.nqn));
        std::memcpy(log.data() + at, &entry, sizeof(entry));
        at += sizeof(entry);
    }
    return log;
}

/// Get Log Page of the Discovery log page into the first dword_count * 4 bytes of `out` (the
/// command's data): the log's bytes from the offset, zeroes past its end. An index offset (OT),
/// an offset not dword aligned, or one past the end of the log: Invalid Field in Command; `out`
/// shorter than NUMD gives: Data SGL Length Invalid. A longer `out` (an SGL longer than the
/// data, SGLS bit 18) keeps its bytes past the data.
[[nodiscard]] inline spec::status read_discovery_log(const spec::get_log_page_view& command,
                                                     std::span<const std::byte> log, std::span<std::byte> out)
{
    if (command.offset_is_index || command.offset % 4 != 0 || command.offset > log.size()) {
        return spec::status{spec::generic_status::invalid_field}.with_dnr();
    }
    if (out.size() < command.byte_count()) {
        return spec::status{spec::generic_status::data_sgl_length_invalid}.with_dnr();
    }
    const auto bytes = static_cast<std::size_t>(command.byte_count());
    const auto from = static_cast<std::size_t>(command.offset);
    const std::size_t copied = std::min(bytes, log.size() - from);
    std::memcpy(out.data(), log.data() + from, copied);
    std::fill(out.begin() + static_cast<std::ptrdiff_t>(copied),
              out.begin() + static_cast<std::ptrdiff_t>(bytes), std::byte{0});
    return spec::status::success();
}

/// The Identify Controller of a discovery controller, from what an I/O controller of the same
/// target reports (CNTLID, VER, MDTS, KAS, MAXCMD, SGLS, the serial and model): CNTRLTYPE
/// discovery, SUBNQN the discovery NQN, IOCCSZ 4 (no in-capsule data), LPA with extended data
/// (the log is read at offsets), OAES with Discovery Log Page Change Notices, and nothing of
/// namespaces, NVM commands or I/O queues.
[[nodiscard]] inline spec::identify_controller discovery_identify(const spec::identify_controller& io)
{
    spec::identify_controller data{};
    data.vid = io.vid;
    data.ssvid = io.ssvid;
    data.sn = io.sn;
    data.mn = io.mn;
    data.fr = io.fr;
    data.mdts = io.mdts;
    data.cntlid = io.cntlid;
    data.ver = io.ver;
    data.cntrltype = spec::controller_type::discovery;
    data.lpa.set(spec::log_page_attributes::extended_data, true);
    // OAES: Discovery Log Page Change Notices are the only events it reports.
    data.oaes.set(spec::async_events_supported::discovery_log_page_change, true);
    data.elpe = io.elpe;
    data.kas = io.kas;
    data.sqes = io.sqes;
    data.cqes = io.cqes;
    data.maxcmd = io.maxcmd;
    data.sgls = io.sgls;
    spec::assign_null_padded(data.subnqn, spec::discovery_nqn);
    data.ioccsz = 4;
    data.iorcsz = 1;
    data.msdbd = io.msdbd;
    return data;
}

/// Whether a discovery controller takes admin opcode `opcode` (Base 2.0 Figure 28): Get Log
/// Page, Identify, Set and Get Features, Asynchronous Event Request and Keep Alive; the others
/// complete with Invalid Command Opcode. (Fabrics commands are the transport's.)
[[nodiscard]] constexpr bool discovery_takes(std::uint8_t opcode) noexcept
{
    using spec::admin_opcode;
    switch (static_cast<admin_opcode>(opcode)) {
    case admin_opcode::get_log_page:
    case admin_opcode::identify:
    case admin_opcode::set_features:
    case admin_opcode::get_features:
    case admin_opcode::async_event_request:
    case admin_opcode::keep_alive: return true;
    default: return false;
    }
}

} // namespace transport::tcp
NVMEKIT_END_NAMESPACE
