#pragma once
/// Shared pieces of the spec formatters. The formatters live apart from the spec headers so that
/// code which never prints pays nothing for {fmt}.
///
/// <fmt/format.h> rather than <fmt/core.h>: with only core.h, clang references a libfmt symbol
/// whose mangled name differs from the one in Debian's g++-built libfmt, and fails to link.

#include <fmt/format.h>

#include <nvmekit/config.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace detail {

/// Base of formatters that take no format specification: only "{}" is accepted.
struct plain_formatter {
    constexpr auto parse(fmt::format_parse_context& ctx) -> decltype(ctx.begin())
    {
        const auto* it = ctx.begin();
        if (it != ctx.end() && *it != '}') {
            ctx.on_error("nvmekit types take no format specification");
        }
        return it;
    }
};

} // namespace detail
NVMEKIT_END_NAMESPACE
