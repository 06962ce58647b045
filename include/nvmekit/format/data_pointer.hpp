#pragma once
/// Formatters for PRP entries and SGL descriptors: `DATA_BLOCK addr=0x1000 len=4096`.

#include <string_view>

#include <nvmekit/format/common.hpp>
#include <nvmekit/spec/data_pointer.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace detail::data_pointer_format {

constexpr std::string_view label(spec::prp2_role value) noexcept
{
    switch (value) {
    case spec::prp2_role::unused: return "unused";
    case spec::prp2_role::data_page: return "data_page";
    case spec::prp2_role::list_pointer: return "list_pointer";
    }
    return {};
}

} // namespace detail::data_pointer_format
NVMEKIT_END_NAMESPACE

/// Prints the raw entry in hex: `0x1000`.
template <>
struct fmt::formatter<nvmekit::spec::prp_entry> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::prp_entry value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        return fmt::format_to(ctx.out(), "{:#x}", value.raw);
    }
};

/// Prints the type name (`KEYED_DATA_BLOCK`), or `0x6` for a reserved type.
template <>
struct fmt::formatter<nvmekit::spec::sgl_descriptor_type>
    : nvmekit::detail::name_or_hex_formatter<nvmekit::spec::sgl_descriptor_type> {};

/// Prints `ADDRESS` or `OFFSET`, and other sub types in hex (`0xa`).
template <>
struct fmt::formatter<nvmekit::spec::sgl_descriptor_subtype> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::sgl_descriptor_subtype value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        using nvmekit::spec::sgl_descriptor_subtype;
        if (value == sgl_descriptor_subtype::address || value == sgl_descriptor_subtype::offset) {
            return fmt::format_to(ctx.out(), "{}", name(value));
        }
        return fmt::format_to(ctx.out(), "{:#x}", static_cast<unsigned>(value));
    }
};

/// `unused`, `data_page` or `list_pointer`.
template <>
struct fmt::formatter<nvmekit::spec::prp2_role>
    : nvmekit::detail::label_or_hex_formatter<nvmekit::spec::prp2_role,
                                              nvmekit::detail::data_pointer_format::label> {};

/// `type=DATA_BLOCK subtype=ADDRESS`; reserved values in hex (`type=0x6 subtype=0x2`).
template <>
struct fmt::formatter<nvmekit::spec::sgl_identifier> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(nvmekit::spec::sgl_identifier value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        using nvmekit::spec::sgl_identifier;
        return fmt::format_to(ctx.out(), "type={} subtype={}", value.get(sgl_identifier::type),
                              value.get(sgl_identifier::subtype));
    }
};

/// Prints the descriptor type and the fields that type defines, then the sub type when it is
/// not Address: `DATA_BLOCK addr=0x1000 len=4096`, `BIT_BUCKET len=512`,
/// `LAST_SEGMENT addr=0x2000 len=48`, `KEYED_DATA_BLOCK addr=0x3000 len=8192 key=0x12345678`,
/// `TRANSPORT_DATA_BLOCK len=4096 subtype=0xa`, `DATA_BLOCK addr=0x0 len=512 subtype=OFFSET`.
template <>
struct fmt::formatter<nvmekit::spec::sgl_descriptor> : nvmekit::detail::plain_formatter {
    template <typename FormatContext>
    auto format(const nvmekit::spec::sgl_descriptor& value, FormatContext& ctx) const -> decltype(ctx.out())
    {
        using nvmekit::spec::sgl_descriptor_subtype;
        using nvmekit::spec::sgl_descriptor_type;
        auto out = ctx.out();
        switch (value.type()) {
        case sgl_descriptor_type::bit_bucket:
        case sgl_descriptor_type::transport_data_block:
            out = fmt::format_to(out, "{} len={}", value.type(), value.length);
            break;
        case sgl_descriptor_type::keyed_data_block:
            out = fmt::format_to(out, "{} addr={:#x} len={} key={:#x}", value.type(), value.address,
                                 value.keyed_length(), value.key());
            break;
        default:
            out = fmt::format_to(out, "{} addr={:#x} len={}", value.type(), value.address, value.length);
            break;
        }
        if (value.subtype() != sgl_descriptor_subtype::address) {
            out = fmt::format_to(out, " subtype={}", value.subtype());
        }
        return out;
    }
};
