#pragma once
/// Provider and configuration faults as std::error_code values of nvmekit's own category.
///
/// NVMe statuses are data (spec::status), never error codes; these codes are what providers
/// return to the controller and what the controller reports to its embedder.

#include <string>
#include <system_error>

#include <nvmekit/config.hpp>

NVMEKIT_BEGIN_NAMESPACE

enum class errc {
    dma_unmapped = 1,     ///< host address not backed by any memory the DMA provider allows
    dma_fault,            ///< the DMA provider failed the access (injected or real fault)
    dma_out_of_range,     ///< the access would wrap the 64-bit host address space
    invalid_configuration ///< the embedder's configuration cannot be honoured
};

namespace detail {
class error_category final : public std::error_category {
public:
    [[nodiscard]] const char* name() const noexcept override { return "nvmekit"; }
    [[nodiscard]] std::string message(int value) const override
    {
        switch (static_cast<errc>(value)) {
        case errc::dma_unmapped: return "host address not mapped for DMA";
        case errc::dma_fault: return "DMA access failed";
        case errc::dma_out_of_range: return "DMA range wraps the host address space";
        case errc::invalid_configuration: return "invalid configuration";
        }
        return "unknown nvmekit error";
    }
};
} // namespace detail

/// The category of every nvmekit error code.
[[nodiscard]] inline const std::error_category& error_category() noexcept
{
    static const detail::error_category category;
    return category;
}

/// Success, for the providers' per-access paths to return: `std::error_code{}` calls the standard
/// library's out-of-line `std::system_category()` each time one is built, which a copy of this
/// (the same value and category) does not.
inline const std::error_code no_error{};

[[nodiscard]] inline std::error_code make_error_code(errc value) noexcept
{
    return {static_cast<int>(value), error_category()};
}

NVMEKIT_END_NAMESPACE

template <>
struct std::is_error_code_enum<nvmekit::errc> : std::true_type {};
