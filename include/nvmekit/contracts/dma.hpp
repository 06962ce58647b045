#pragma once
/// The DmaProvider concept: how a controller reads and writes host memory.
///
// clang-format off
/// | expression                       | type                 | semantics |
/// |----------------------------------|----------------------|-----------|
/// | `d.read(addr, dst)`              | `std::error_code`    | copies `dst.size()` bytes of host memory at `addr` into `dst`; an empty code on success; on failure `dst` holds unspecified bytes and nothing else changed |
/// | `d.write(addr, src)`             | `std::error_code`    | copies `src` into host memory at `addr`; an empty code on success; a failed write may have stored a prefix |
/// | `d.map(addr, len)` (optional)    | `std::span<std::byte>` | zero-copy view of `len` bytes of host memory at `addr`, valid until the provider's mappings change; an empty span when the range cannot be mapped (the controller then falls back to read/write) |
// clang-format on
///
/// `d` is an lvalue of the provider type, `addr` a `std::uint64_t`, `dst` a `std::span<std::byte>`,
/// `src` a `std::span<const std::byte>`, `len` a `std::size_t`. Providers never throw for host
/// addresses: an address outside the memory the host gave is an error code (the controller turns
/// it into Data Transfer Error), never an out-of-bounds access.
///
/// The controller compiles Read, Write and its submission queue processing as one piece each, so
/// a provider's `map()` is inlined into them: keep it a lookup, and call anything heavy (logging,
/// locking slow paths) out of line, or every controller built on the provider compiles slowly.

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <system_error>
#include <type_traits>

#include <nvmekit/config.hpp>

NVMEKIT_BEGIN_NAMESPACE

// clang-format off
template <typename T>
concept DmaReadable = requires(T& dma, std::uint64_t address, std::span<std::byte> destination) {
    { dma.read(address, destination) } -> std::same_as<std::error_code>;
};
// clang-format on

// clang-format off
template <typename T>
concept DmaWritable = requires(T& dma, std::uint64_t address, std::span<const std::byte> source) {
    { dma.write(address, source) } -> std::same_as<std::error_code>;
};
// clang-format on

/// Reads and writes host memory (see the table above).
template <typename T>
concept DmaProvider = DmaReadable<T> && DmaWritable<T>;

/// A DmaProvider that can also map host memory for zero-copy access.
// clang-format off
template <typename T>
concept MappingDmaProvider = DmaProvider<T> && requires(T& dma, std::uint64_t address, std::size_t length) {
    { dma.map(address, length) } -> std::same_as<std::span<std::byte>>;
};

/// A MappingDmaProvider whose views stay valid while its mapping generation stays the same: a
/// caller may keep a span map() returned and use it for as long as mapping_generation() returns
/// the value it read before the map() call. Whatever can invalidate a view (a region removed, an
/// access window changed) changes the generation first.
template <typename T>
concept StableMappingDmaProvider = MappingDmaProvider<T> && requires(const T& dma) {
    { dma.mapping_generation() } noexcept -> std::same_as<std::uint64_t>;
};
// clang-format on

/// Checks `T` models DmaProvider with one readable diagnostic per missing operation. Use it where
/// a provider enters the library: `static_assert(check_dma_provider<T>());`.
template <typename T>
consteval bool check_dma_provider()
{
    static_assert(DmaReadable<T>,
                  "DmaProvider: the type lacks `std::error_code read(std::uint64_t host_address, "
                  "std::span<std::byte> destination)`");
    static_assert(DmaWritable<T>,
                  "DmaProvider: the type lacks `std::error_code write(std::uint64_t host_address, "
                  "std::span<const std::byte> source)`");
    return DmaProvider<T>;
}

/// Reads a trivially copyable object from host memory.
template <DmaProvider Dma, typename T>
    requires std::is_trivially_copyable_v<T>
[[nodiscard]] std::error_code dma_read_object(Dma& dma, std::uint64_t address, T& object)
{
    return dma.read(address, std::as_writable_bytes(std::span{&object, 1}));
}

/// Writes a trivially copyable object to host memory.
template <DmaProvider Dma, typename T>
    requires std::is_trivially_copyable_v<T>
[[nodiscard]] std::error_code dma_write_object(Dma& dma, std::uint64_t address, const T& object)
{
    return dma.write(address, std::as_bytes(std::span{&object, 1}));
}

NVMEKIT_END_NAMESPACE
