#pragma once
/// A type-erased owner of any BlockBackend, itself a BlockBackend, so that one subsystem can hold
/// namespaces on different kinds of backend (RAM, file, test) side by side.
///
///     std::vector<nvmekit::any_backend> namespaces;
///     namespaces.emplace_back(nvmekit::ram_backend{1 << 30});
///     namespaces.emplace_back(nvmekit::file_backend{"/var/lib/disk.img"});
///     if (auto* ram = namespaces[0].get_if<nvmekit::ram_backend>()) { ... }
///
/// The backend lives on the heap, allocated once at construction; each operation costs one
/// indirect call through a static table of function pointers (one table per backend type).
/// A moved-from any_backend is empty: it may be destroyed, assigned or asked has_value(), and
/// every other operation on it is a programming error (NVMEKIT_ASSERT).

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <type_traits>
#include <utility>

#include <nvmekit/config.hpp>
#include <nvmekit/contracts/block_backend.hpp>

NVMEKIT_BEGIN_NAMESPACE

namespace detail {
/// The operations of one erased backend type.
struct any_backend_vtable {
    std::uint64_t (*capacity_bytes)(const void* backend);
    void (*submit)(void* backend, block_request& request);
    std::optional<block_status> (*submit_inline)(void* backend, block_request& request);
    std::size_t (*poll)(void* backend);
    bool (*has_volatile_cache)(const void* backend);
    std::size_t (*outstanding)(const void* backend);
    void (*destroy)(void* backend) noexcept;
};

template <typename Backend>
inline constexpr any_backend_vtable any_backend_vtable_for{
    .capacity_bytes =
        [](const void* backend) { return static_cast<const Backend*>(backend)->capacity_bytes(); },
    .submit = [](void* backend, block_request& request) { static_cast<Backend*>(backend)->submit(request); },
    .submit_inline = [](void* backend, block_request& request) -> std::optional<block_status> {
        if constexpr (InlineSubmitting<Backend>) {
            return static_cast<Backend*>(backend)->submit_inline(request);
        } else {
            static_cast<Backend*>(backend)->submit(request);
            return std::nullopt;
        }
    },
    .poll = [](void* backend) { return static_cast<Backend*>(backend)->poll(); },
    .has_volatile_cache =
        [](const void* backend) { return static_cast<const Backend*>(backend)->has_volatile_cache(); },
    .outstanding = [](const void* backend) { return static_cast<const Backend*>(backend)->outstanding(); },
    .destroy = [](void* backend) noexcept { delete static_cast<Backend*>(backend); },
};

template <typename T>
inline constexpr bool is_in_place_type = false;
template <typename T>
inline constexpr bool is_in_place_type<std::in_place_type_t<T>> = true;
} // namespace detail

/// Owns one backend of any type that models BlockBackend (see the top of this header).
class any_backend {
public:
    /// Takes `backend` (moved or copied in). A type that does not model BlockBackend fails with
    /// the diagnostics of check_block_backend.
    template <typename Backend>
        requires(!std::same_as<std::remove_cvref_t<Backend>, any_backend> &&
                 !detail::is_in_place_type<std::remove_cvref_t<Backend>>)
    // Implicit, as std::function converts from a callable; the constraint keeps copies and moves of
    // any_backend away from it.
    any_backend(Backend&& backend) // NOLINT(bugprone-forwarding-reference-overload)
        : any_backend{std::in_place_type<std::remove_cvref_t<Backend>>, std::forward<Backend>(backend)}
    {}

    /// Builds a `Backend` in place from `arguments`, for backends that cannot be moved.
    template <typename Backend, typename... Arguments>
    explicit any_backend(std::in_place_type_t<Backend>, Arguments&&... arguments)
    {
        static_assert(std::is_same_v<Backend, std::remove_cvref_t<Backend>>,
                      "any_backend: the backend type must not be a reference or const");
        static_assert(check_block_backend<Backend>());
        if constexpr (BlockBackend<Backend>) {
            object_ = new Backend(std::forward<Arguments>(arguments)...);
            vtable_ = &detail::any_backend_vtable_for<Backend>;
        }
    }

    any_backend(const any_backend&) = delete;
    any_backend& operator=(const any_backend&) = delete;

    any_backend(any_backend&& other) noexcept
        : object_{std::exchange(other.object_, nullptr)}, vtable_{std::exchange(other.vtable_, nullptr)}
    {}

    any_backend& operator=(any_backend&& other) noexcept
    {
        if (this != &other) {
            reset();
            object_ = std::exchange(other.object_, nullptr);
            vtable_ = std::exchange(other.vtable_, nullptr);
        }
        return *this;
    }

    /// Destroys the backend it owns.
    ~any_backend() { reset(); }

    /// The owned backend's capacity_bytes().
    [[nodiscard]] std::uint64_t capacity_bytes() const
    {
        check();
        return vtable_->capacity_bytes(object_);
    }

    /// Forwards to the owned backend's submit().
    void submit(block_request& request)
    {
        check();
        vtable_->submit(object_, request);
    }

    /// Forwards to the owned backend's submit_inline(), or to its submit() (std::nullopt) when
    /// it has none.
    std::optional<block_status> submit_inline(block_request& request)
    {
        check();
        return vtable_->submit_inline(object_, request);
    }

    /// Forwards to the owned backend's poll().
    std::size_t poll()
    {
        check();
        return vtable_->poll(object_);
    }

    /// The owned backend's has_volatile_cache().
    [[nodiscard]] bool has_volatile_cache() const
    {
        check();
        return vtable_->has_volatile_cache(object_);
    }

    /// The owned backend's outstanding().
    [[nodiscard]] std::size_t outstanding() const
    {
        check();
        return vtable_->outstanding(object_);
    }

    /// The owned backend when it is a `Backend`, else nullptr.
    template <typename Backend>
    [[nodiscard]] Backend* get_if() noexcept
    {
        if constexpr (BlockBackend<Backend>) {
            return vtable_ == &detail::any_backend_vtable_for<Backend> ? static_cast<Backend*>(object_)
                                                                       : nullptr;
        } else {
            return nullptr;
        }
    }

    /// The owned backend when it is a `Backend`, else nullptr.
    template <typename Backend>
    [[nodiscard]] const Backend* get_if() const noexcept
    {
        if constexpr (BlockBackend<Backend>) {
            return vtable_ == &detail::any_backend_vtable_for<Backend> ? static_cast<const Backend*>(object_)
                                                                       : nullptr;
        } else {
            return nullptr;
        }
    }

    /// Whether it owns a backend (false only after being moved from).
    [[nodiscard]] bool has_value() const noexcept { return object_ != nullptr; }

private:
    void check() const noexcept { NVMEKIT_ASSERT(object_ != nullptr, "operation on an empty any_backend"); }

    void reset() noexcept
    {
        if (object_ != nullptr) {
            vtable_->destroy(object_);
            object_ = nullptr;
            vtable_ = nullptr;
        }
    }

    void* object_ = nullptr;
    const detail::any_backend_vtable* vtable_ = nullptr;
};

static_assert(check_block_backend<any_backend>());
static_assert(InlineSubmitting<any_backend>);

NVMEKIT_END_NAMESPACE
