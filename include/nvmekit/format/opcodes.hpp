#pragma once
/// Formatters for opcodes and the data transfer direction: `IDENTIFY`, `READ`, `CONNECT`,
/// `host_to_controller`.

#include <string_view>

#include <nvmekit/format/common.hpp>
#include <nvmekit/spec/opcodes.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace detail::opcodes_format {

constexpr std::string_view label(spec::data_transfer value) noexcept
{
    switch (value) {
    case spec::data_transfer::none: return "none";
    case spec::data_transfer::host_to_controller: return "host_to_controller";
    case spec::data_transfer::controller_to_host: return "controller_to_host";
    case spec::data_transfer::bidirectional: return "bidirectional";
    }
    return {};
}

} // namespace detail::opcodes_format
NVMEKIT_END_NAMESPACE

/// `IDENTIFY`, `FW_COMMIT`, or the opcode in hex when it has no name (`0xc1`).
template <>
struct fmt::formatter<nvmekit::spec::admin_opcode>
    : nvmekit::detail::name_or_hex_formatter<nvmekit::spec::admin_opcode> {};

/// `READ`, `WRITE_ZEROES`, or the opcode in hex when it has no name (`0x85`).
template <>
struct fmt::formatter<nvmekit::spec::nvm_opcode>
    : nvmekit::detail::name_or_hex_formatter<nvmekit::spec::nvm_opcode> {};

/// `CONNECT`, `PROPERTY_GET`, or FCTYPE in hex when reserved (`0x7e`).
template <>
struct fmt::formatter<nvmekit::spec::fabrics_command_type>
    : nvmekit::detail::name_or_hex_formatter<nvmekit::spec::fabrics_command_type> {};

/// `none`, `host_to_controller`, `controller_to_host` or `bidirectional`.
template <>
struct fmt::formatter<nvmekit::spec::data_transfer>
    : nvmekit::detail::label_or_hex_formatter<nvmekit::spec::data_transfer,
                                              nvmekit::detail::opcodes_format::label> {};
