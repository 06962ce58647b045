#pragma once
/// Formatter for completion statuses: `Generic/Invalid Field (0x02) [DNR]`.

#include <nvmekit/format/common.hpp>
#include <nvmekit/spec/status.hpp>

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
        auto out = code_name.empty()
                       ? fmt::format_to(ctx.out(), "{} (0x{:02x})", name(value.type()), value.code())
                       : fmt::format_to(ctx.out(), "{}/{} (0x{:02x})", name(value.type()), code_name, value.code());
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
