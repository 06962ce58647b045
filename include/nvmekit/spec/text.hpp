#pragma once
/// Fixed-width text fields of the spec data structures: ASCII or UTF-8 in a std::array<char, N>,
/// either padded with spaces (SN, MN, FR, firmware slot revisions, TRSVCID, TRADDR) or
/// NUL-terminated and padded with NULs (SUBNQN, HOSTNQN).
///
///     spec::assign_space_padded(ctrl.sn, "NVMEKIT0001");  // "NVMEKIT0001         "
///     std::string_view serial = spec::text_of(ctrl.sn);   // "NVMEKIT0001"
///     std::string_view host = spec::nul_terminated_text_of(data.hostnqn); // spaces kept

#include <array>
#include <cstddef>
#include <string_view>

#include <nvmekit/config.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace spec {

/// The text of a fixed-width field: up to its first NUL, without trailing spaces. Reads
/// space-padded and NUL-padded fields alike.
template <std::size_t N>
[[nodiscard]] constexpr std::string_view text_of(const std::array<char, N>& field) noexcept
{
    std::size_t length = 0;
    while (length < N && field[length] != '\0') {
        ++length;
    }
    while (length > 0 && field[length - 1] == ' ') {
        --length;
    }
    return std::string_view{field.data(), length};
}

/// The text of a NUL-terminated field as it is: up to its first NUL (the whole field without
/// one), trailing spaces included. An NQN is compared byte for byte this way: "nqn.x " is not
/// "nqn.x" (NVMe over Fabrics 1.1 7.9).
template <std::size_t N>
[[nodiscard]] constexpr std::string_view nul_terminated_text_of(const std::array<char, N>& field) noexcept
{
    std::size_t length = 0;
    while (length < N && field[length] != '\0') {
        ++length;
    }
    return std::string_view{field.data(), length};
}

/// Stores `text` left-justified in a space-padded field. Returns false, having stored the first
/// N characters, when `text` is longer than the field.
template <std::size_t N>
constexpr bool assign_space_padded(std::array<char, N>& field, std::string_view text) noexcept
{
    for (std::size_t i = 0; i < N; ++i) {
        field[i] = i < text.size() ? text[i] : ' ';
    }
    return text.size() <= N;
}

/// Stores `text` in a NUL-terminated field padded with NULs. Returns false, having stored the
/// first N - 1 characters and the terminator, when `text` and its terminator do not fit.
template <std::size_t N>
constexpr bool assign_null_padded(std::array<char, N>& field, std::string_view text) noexcept
{
    static_assert(N >= 1, "a NUL-terminated field holds at least its terminator");
    for (std::size_t i = 0; i < N; ++i) {
        field[i] = i < text.size() && i < N - 1 ? text[i] : '\0';
    }
    return text.size() < N;
}

} // namespace spec
NVMEKIT_END_NAMESPACE
