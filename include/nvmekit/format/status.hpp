#pragma once
/// Formatter for completion statuses: `Generic/Invalid Field (0x02) [DNR]`, and for the status
/// code enumerations alone: `Invalid Field (0x02)`.

#include <string_view>
#include <type_traits>

#include <nvmekit/format/common.hpp>
#include <nvmekit/spec/status.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace detail {

/// The code part of a status: `Invalid Field (0x02)`, or the type's name for an unnamed code,
/// `Generic (0x25)`, as the status formatter prints it.
template <typename Out>
Out status_code_text(Out out, spec::status_code_type type, std::string_view code_name, unsigned code)
{
    return fmt::format_to(out, "{} (0x{:02x})", code_name.empty() ? name(type) : code_name, code);
}

/// Formatter of one status code enumeration (`generic_status`, `fabrics_status`, ...).
template <typename Code>
struct status_code_formatter : plain_formatter {
    template <typename FormatContext>
    auto format(Code value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        return status_code_text(ctx.out(), spec::status{value}.type(), name(value),
                                static_cast<unsigned>(value));
    }
};

} // namespace detail
NVMEKIT_END_NAMESPACE

/// Prints type and code name, the raw code, then the set flags among DNR, M and CRD:
/// `Generic/Invalid Field (0x02) [DNR]`, `Media Error/Unrecovered Read Error (0x81)`,
/// `Vendor Specific (0xc3) [M]`.
template <>
struct fmt::formatter<nvmekit::spec::status> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::status value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        using nvmekit::spec::status;
        const auto code_name = name(value);
        auto out = ctx.out();
        if (!code_name.empty()) {
            out = fmt::format_to(out, "{}/", name(value.type()));
        }
        out = nvmekit::detail::status_code_text(out, value.type(), code_name, value.code());
        const bool dnr = value.get(status::dnr);
        const bool more = value.get(status::more);
        const unsigned crd = value.get(status::crd);
        if (dnr || more || crd != 0) {
            out = fmt::format_to(out, " [");
            bool first = true;
            out = nvmekit::detail::append_flags(out, first, {{dnr, "DNR"}, {more, "M"}});
            if (crd != 0) {
                out = fmt::format_to(out, "{}CRD={}", first ? "" : " ", crd);
            }
            out = fmt::format_to(out, "]");
        }
        return out;
    }
};

template <>
struct fmt::formatter<nvmekit::spec::status_code_type> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::status_code_type value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        return fmt::format_to(ctx.out(), "{}", name(value));
    }
};

/// A status code alone, as the status formatter prints its code part: `Invalid Field (0x02)`,
/// `Connect Invalid Host (0x84)`, or the type for an unnamed code, `Generic (0x25)`.
template <typename Code>
    // clang-format off
    requires std::is_same_v<Code, nvmekit::spec::generic_status> ||
             std::is_same_v<Code, nvmekit::spec::command_specific_status> ||
             std::is_same_v<Code, nvmekit::spec::fabrics_status> || std::is_same_v<Code, nvmekit::spec::media_status> ||
             std::is_same_v<Code, nvmekit::spec::path_status>
struct fmt::formatter<Code> : nvmekit::detail::status_code_formatter<Code> {};
// clang-format on
