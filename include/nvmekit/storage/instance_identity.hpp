#pragma once
/// \file
/// Identities for controllers that an embedder starts more than once: the subsystem NQN, the
/// serial number and the controller ID derived from what names one instance (for nvmekit-serve,
/// its socket path) and the machine (/etc/machine-id). The same inputs give the same identity,
/// so a host sees the same subsystem after a restart; different instances on one machine, or the
/// same socket path on two machines, give different ones, so a host given several of them keeps
/// them apart. The Linux driver, for instance, takes controllers with the same subsystem NQN as
/// paths to one subsystem and refuses the second one's CNTLID ("Duplicate cntlid"), and refuses
/// namespaces whose NGUID or EUI-64 another namespace already has; a subsystem derives its
/// namespaces' NGUID, EUI-64 and UUID from its NQN (subsystem::add_namespace), so distinct NQNs
/// give distinct namespace identifiers.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <nvmekit/config.hpp>

NVMEKIT_BEGIN_NAMESPACE

/// What derive_instance_identity() makes.
struct instance_identity {
    std::string nqn;             ///< NQN_PREFIX then 32 lower-case hexadecimal digits
    std::string serial_number;   ///< 20 ASCII characters (Identify Controller SN, bytes 23:04)
    std::uint16_t controller_id; ///< CNTLID, 0001h to FFEFh (FFF0h and above are reserved)
};

namespace detail {

/// 64 bits of FNV-1a over `parts` (each followed by a NUL, so that ("ab", "c") and ("a", "bc")
/// differ), from `basis`, then the SplitMix64 finaliser to spread the bits.
[[nodiscard]] constexpr std::uint64_t identity_hash(std::uint64_t basis, std::string_view first,
                                                    std::string_view second) noexcept
{
    std::uint64_t hash = basis;
    const auto add = [&hash](std::string_view text) {
        for (const char c : text) {
            hash = (hash ^ static_cast<std::uint8_t>(c)) * 0x100000001b3ULL;
        }
        hash *= 0x100000001b3ULL; // the NUL after the part
    };
    add(first);
    add(second);
    hash ^= hash >> 30;
    hash *= 0xbf58476d1ce4e5b9ULL;
    hash ^= hash >> 27;
    hash *= 0x94d049bb133111ebULL;
    hash ^= hash >> 31;
    return hash;
}

inline void append_hex(std::string& out, std::uint64_t value, std::size_t digits, const char* alphabet)
{
    for (std::size_t i = digits; i-- > 0;) {
        out.push_back(alphabet[(value >> (4 * i)) & 0xfU]);
    }
}

} // namespace detail

/// The identity of the instance named `instance` (for example a socket path, made absolute) on
/// the machine `machine_id` (for example the contents of /etc/machine-id; empty when there is
/// none, which still keeps the instances of one machine apart). 128 bits of the two inputs name
/// the subsystem: `nqn_prefix` + 32 hexadecimal digits; the serial number is `serial_prefix`
/// (at most 8 characters, shorter ones are padded with '-') + 12 upper-case hexadecimal digits;
/// the controller ID is in 0001h to FFEFh.
[[nodiscard]] inline instance_identity derive_instance_identity(
    std::string_view instance, std::string_view machine_id,
    std::string_view nqn_prefix = "nqn.2026-11.io.nvmekit:", std::string_view serial_prefix = "NVMEKIT-")
{
    const std::uint64_t high = detail::identity_hash(0xcbf29ce484222325ULL, machine_id, instance);
    const std::uint64_t low = detail::identity_hash(0x84222325cbf29ce4ULL, machine_id, instance);
    instance_identity identity{};
    identity.nqn.assign(nqn_prefix);
    detail::append_hex(identity.nqn, high, 16, "0123456789abcdef");
    detail::append_hex(identity.nqn, low, 16, "0123456789abcdef");
    identity.serial_number.assign(serial_prefix.substr(0, 8));
    identity.serial_number.resize(8, '-');
    detail::append_hex(identity.serial_number, high ^ (low >> 16), 12, "0123456789ABCDEF");
    identity.controller_id = static_cast<std::uint16_t>(1 + (low >> 48) % 0xffefU);
    return identity;
}

NVMEKIT_END_NAMESPACE
