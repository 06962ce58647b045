#pragma once
/// The InterruptProvider concept: how a controller signals the host.
///
/// | expression                       | type   | semantics |
/// |----------------------------------|--------|-----------|
/// | `i.raise_msix(vector, message)`  | `void` | delivers MSI-X `vector` now; `message` is the table entry's
/// address and data (a simulator writes `data` to `address`; vfio-user signals the vector's eventfd). Masking
/// and pending bits are the controller's job: this is called only for unmasked vectors | |
/// `i.set_intx(level)` (optional)   | `void` | drives the INTx pin (pin-based interrupts, with INTMS/INTMC) |
///
/// `i` is an lvalue of the provider type, `vector` a `std::uint16_t`, `message` an
/// `nvmekit::msix_message`, `level` a `bool`.

#include <concepts>
#include <cstdint>

#include <nvmekit/config.hpp>

NVMEKIT_BEGIN_NAMESPACE

/// The address and data of one MSI-X table entry.
struct msix_message {
    std::uint64_t address{};
    std::uint32_t data{};
    friend constexpr bool operator==(const msix_message&, const msix_message&) noexcept = default;
};

// clang-format off
template <typename T>
concept MsixRaisable = requires(T& interrupts, std::uint16_t vector, msix_message message) {
    { interrupts.raise_msix(vector, message) } -> std::same_as<void>;
};
// clang-format on

/// Signals MSI-X vectors (see the table above).
template <typename T>
concept InterruptProvider = MsixRaisable<T>;

/// An InterruptProvider with a pin-based (INTx) interrupt as well.
// clang-format off
template <typename T>
concept IntxInterruptProvider = InterruptProvider<T> && requires(T& interrupts, bool level) {
    { interrupts.set_intx(level) } -> std::same_as<void>;
};
// clang-format on

/// Checks `T` models InterruptProvider with one readable diagnostic per missing operation.
template <typename T>
consteval bool check_interrupt_provider()
{
    static_assert(MsixRaisable<T>, "InterruptProvider: the type lacks `void raise_msix(std::uint16_t vector, "
                                   "nvmekit::msix_message message)`");
    return InterruptProvider<T>;
}

NVMEKIT_END_NAMESPACE
