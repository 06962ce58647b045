#pragma once
/// Formatters for the pieces of a queue entry every command shares: Command Dword 0
/// (`opc=0x02 fuse=normal psdt=prp cid=5`) and the data pointer (`prp1=0x1000 prp2=0x0`). Whole
/// submission and completion queue entries print through format/commands.hpp.

#include <string_view>

#include <nvmekit/format/common.hpp>
#include <nvmekit/spec/queue_entries.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace detail::queue_entries_format {

constexpr std::string_view label(spec::fused_operation value) noexcept
{
    switch (value) {
    case spec::fused_operation::normal: return "normal";
    case spec::fused_operation::first: return "first";
    case spec::fused_operation::second: return "second";
    }
    return {};
}

constexpr std::string_view label(spec::data_pointer_type value) noexcept
{
    switch (value) {
    case spec::data_pointer_type::prp: return "prp";
    case spec::data_pointer_type::sgl_contiguous_metadata: return "sgl_contiguous_metadata";
    case spec::data_pointer_type::sgl_metadata_descriptor: return "sgl_metadata_descriptor";
    }
    return {};
}

} // namespace detail::queue_entries_format
NVMEKIT_END_NAMESPACE

/// `normal`, `first`, `second`, or `0x3` (reserved).
template <>
struct fmt::formatter<nvmekit::spec::fused_operation>
    : nvmekit::detail::label_or_hex_formatter<nvmekit::spec::fused_operation,
                                              nvmekit::detail::queue_entries_format::label> {};

/// `prp`, `sgl_contiguous_metadata`, `sgl_metadata_descriptor`, or `0x3` (reserved).
template <>
struct fmt::formatter<nvmekit::spec::data_pointer_type>
    : nvmekit::detail::label_or_hex_formatter<nvmekit::spec::data_pointer_type,
                                              nvmekit::detail::queue_entries_format::label> {};

/// `opc=0x02 fuse=normal psdt=prp cid=5`. The opcode is not named: its meaning depends on the
/// queue the command was submitted to.
template <>
struct fmt::formatter<nvmekit::spec::command_dword0> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::command_dword0 value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        using dword = nvmekit::spec::command_dword0;
        return fmt::format_to(ctx.out(), "opc=0x{:02x} fuse={} psdt={} cid={}", value.get(dword::opc),
                              value.get(dword::fuse), value.get(dword::psdt), value.get(dword::cid));
    }
};

/// `prp1=0x1000 prp2=0x0`: both halves as PRP entries (CDW0.PSDT says whether they hold an SGL
/// descriptor instead; data_pointer.hpp's `to_sgl_descriptor` reads it as one).
template <>
struct fmt::formatter<nvmekit::spec::data_pointer> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(const nvmekit::spec::data_pointer& value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        return fmt::format_to(ctx.out(), "prp1={:#x} prp2={:#x}", value.prp1, value.prp2);
    }
};
