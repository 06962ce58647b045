#pragma once
/// A host memory model for tests: one or more address ranges of zero-filled RAM that models
/// MappingDmaProvider, with a first-fit allocator for test and host-driver buffers.
///
///     nvmekit::testing::flat_memory memory;
///     memory.add_range(0x1'0000'0000, 1 << 20);
///     const std::uint64_t queue = memory.allocate(4096).value();
///     memory.store(queue, sqe);
///
/// Every access (read, write, map) succeeds only when it lies inside one range: an access that
/// spans two adjacent ranges is unmapped, as it would be for two separate host buffers. Memory
/// outside the ranges is never touched.
///
/// By default nothing is synchronized: one thread at a time uses the object. A controller whose
/// poll groups run on their own threads shares host memory with the test's host thread; turn on
/// set_synchronized(true) before the threads start, and read, write, load, store, allocate,
/// deallocate and add_range then hold an internal mutex, and map() declines every mapping (so a
/// controller copies through read and write, under the mutex, instead of touching bytes it would
/// hold without it). Spans that bytes() and add_range() return are never synchronized.
///
/// set_shared(true) is the other way to share it: read, write, load, store and map() then change
/// nothing inside the object (the lookup cache is off), so any number of threads may call them at
/// once without a lock, and map() still maps. The bytes are not guarded: accesses from different
/// threads to the same bytes must be ordered by the threads themselves, as with real host memory
/// (ThreadSanitizer checks them, where a mutex would hide them). add_range, allocate, deallocate,
/// copies and moves must not run concurrently with anything. A test whose host thread touches
/// memory only while the controller's threads wait (in lockstep) uses this mode.

#include <array>
#include <bit>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

#include <nvmekit/config.hpp>
#include <nvmekit/contracts/dma.hpp>
#include <nvmekit/error.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace testing {

namespace detail {
/// Zero-filled storage aligned to 4 KiB, as host pages are: in a range whose base is page
/// aligned, a page-aligned host address is page aligned in local memory too, as O_DIRECT needs
/// of a zero-copy buffer. Not a std::vector with an allocator of its own: such a vector
/// constructs and destroys its bytes one at a time, which unoptimised builds do byte by byte
/// (most of a sanitizer build's test time went to it); this one is filled and copied by memset
/// and memcpy.
class page_aligned_bytes {
public:
    static constexpr std::align_val_t alignment{4096};

    page_aligned_bytes() noexcept = default;
    /// `size` zero bytes.
    explicit page_aligned_bytes(std::size_t size) : bytes_{allocate(size)}
    {
        if (size != 0) {
            std::memset(bytes_.get(), 0, size);
        }
    }
    /// A copy of the `size` bytes at `first`.
    page_aligned_bytes(const std::byte* first, std::size_t size) : bytes_{allocate(size)}
    {
        if (size != 0) {
            std::memcpy(bytes_.get(), first, size);
        }
    }

    /// Null when empty.
    [[nodiscard]] std::byte* data() const noexcept { return bytes_.get(); }

private:
    struct release {
        void operator()(std::byte* bytes) const noexcept { ::operator delete(bytes, alignment); }
    };

    [[nodiscard]] static std::unique_ptr<std::byte, release> allocate(std::size_t size)
    {
        return std::unique_ptr<std::byte, release>{
            size == 0 ? nullptr : static_cast<std::byte*>(::operator new(size, alignment))};
    }

    std::unique_ptr<std::byte, release> bytes_{};
};

[[nodiscard]] inline std::string hex_address(std::uint64_t value)
{
    std::array<char, 16> digits{};
    const auto end = std::to_chars(digits.data(), digits.data() + digits.size(), value, 16).ptr;
    return "0x" + std::string(digits.data(), end);
}
} // namespace detail

/// Host memory made of disjoint address ranges; models MappingDmaProvider.
class flat_memory {
public:
    flat_memory() = default;

    /// The same ranges, bytes and allocations, synchronized or shared when `other` is (with a
    /// mutex of its own). Copying a synchronized memory holds its mutex while the ranges are
    /// copied.
    flat_memory(const flat_memory& other)
        : ranges_{other.guarded([&other] { return other.ranges_; })}
        , mutex_{other.mutex_ != nullptr ? std::make_unique<std::mutex>() : nullptr}
        , shared_{other.shared_}
    {}

    /// Takes over `other`'s ranges and modes; `other` is left with no ranges, unsynchronized and
    /// not shared.
    /// Not synchronized: no other thread may use either object meanwhile.
    flat_memory(flat_memory&& other) noexcept
        : ranges_{std::move(other.ranges_)}, mutex_{std::move(other.mutex_)}, shared_{other.shared_}
    {
        other.shared_ = false;
        other.ranges_.clear();
        other.last_hit_ = {};
        ++other.generation_;
    }

    flat_memory& operator=(const flat_memory& other)
    {
        if (this != &other) {
            *this = flat_memory{other};
        }
        return *this;
    }

    flat_memory& operator=(flat_memory&& other) noexcept
    {
        if (this != &other) {
            ranges_ = std::move(other.ranges_);
            mutex_ = std::move(other.mutex_);
            shared_ = std::exchange(other.shared_, false);
            last_hit_ = {};
            other.ranges_.clear();
            other.last_hit_ = {};
            ++generation_;
            ++other.generation_;
        }
        return *this;
    }

    ~flat_memory() = default;

    /// Turns the internal mutex on or off (off at construction). Call it only while no other
    /// thread uses the object: before the threads that share it start, or after they stop.
    void set_synchronized(bool on)
    {
        ++generation_; // map() refuses every view while synchronized
        if (!on) {
            mutex_.reset();
        } else if (mutex_ == nullptr) {
            mutex_ = std::make_unique<std::mutex>();
        }
    }

    /// Changes when views map() returned may no longer be used (StableMappingDmaProvider): when
    /// the object is assigned or its synchronization is turned on or off. Ranges are never
    /// removed, so a view is otherwise valid for the life of the object.
    [[nodiscard]] std::uint64_t mapping_generation() const noexcept { return generation_; }

    /// Whether accesses hold the internal mutex.
    [[nodiscard]] bool synchronized() const noexcept { return mutex_ != nullptr; }

    /// Turns the shared mode on or off (off at construction; see the top of this header). Call it
    /// only while no other thread uses the object.
    void set_shared(bool on) noexcept
    {
        shared_ = on;
        last_hit_ = {};
    }

    /// Whether accesses leave the object unchanged, for several threads at once.
    [[nodiscard]] bool shared() const noexcept { return shared_; }

    /// Adds `size` zero-filled bytes at host address `base` and returns them. Throws
    /// std::invalid_argument when `size` is 0, when the range would wrap 2^64, or when it overlaps
    /// a range already added. The returned span stays valid for the life of the object; like
    /// bytes(), it is not synchronized.
    std::span<std::byte> add_range(std::uint64_t base, std::size_t size)
    {
        return guarded([&] { return unsynchronized_add_range(base, size, nullptr); });
    }

    /// Adds a range at host address `base` made of `storage`, which the caller owns and keeps
    /// alive for the life of the object (memory shared with another process or a device, such
    /// as a memfd mapping a vfio-user client gives its server). Its bytes are used as they are,
    /// not zeroed; a copy of the object copies them into storage of its own. Throws as add_range.
    std::span<std::byte> add_range(std::uint64_t base, std::span<std::byte> storage)
    {
        return guarded([&] { return unsynchronized_add_range(base, storage.size(), storage.data()); });
    }

    /// Copies host memory at `address` into `destination`: dma_out_of_range when the access wraps
    /// 2^64, dma_unmapped when it is not inside one range (and `destination` is untouched).
    std::error_code read(std::uint64_t address, std::span<std::byte> destination) const
    {
        if (mutex_ != nullptr) [[unlikely]] {
            return synchronized_read(address, destination);
        }
        return unsynchronized_read(address, destination);
    }

    /// Copies `source` into host memory at `address`; the errors are those of read(), and a
    /// failed write stores nothing.
    std::error_code write(std::uint64_t address, std::span<const std::byte> source)
    {
        if (mutex_ != nullptr) [[unlikely]] {
            return synchronized_write(address, source);
        }
        return unsynchronized_write(address, source);
    }

    /// The `length` bytes at `address` as a span, or an empty span when they are not inside one
    /// range (or `length` is 0). Always an empty span when synchronized: bytes touched through a
    /// span would escape the mutex, so a caller falls back to read() and write().
    std::span<std::byte> map(std::uint64_t address, std::size_t length)
    {
        if (mutex_ != nullptr) {
            return {};
        }
        const auto found = locate(*this, address, length);
        if (found.error || length == 0) {
            return {};
        }
        return {found.data, length};
    }

    /// Reserves `size` bytes aligned to `alignment` (a power of two) in the first gap, in address
    /// order, of the first range that has one; std::nullopt when no range has room. The bytes
    /// keep whatever they held. Throws std::invalid_argument when `size` is 0 or `alignment` is not
    /// a power of two.
    std::optional<std::uint64_t> allocate(std::size_t size, std::size_t alignment = 4096)
    {
        if (size == 0) {
            throw std::invalid_argument("flat_memory: cannot allocate 0 bytes");
        }
        if (!std::has_single_bit(alignment)) {
            throw std::invalid_argument("flat_memory: the alignment must be a power of two");
        }
        return guarded([&] { return unsynchronized_allocate(size, alignment); });
    }

    /// Releases the allocation that starts at `address`. Throws std::invalid_argument when no
    /// live allocation starts there (a double free, or an address allocate() did not return).
    void deallocate(std::uint64_t address)
    {
        guarded([&] {
            auto next = ranges_.upper_bound(address);
            if (next != ranges_.begin()) {
                auto& allocations = std::prev(next)->second.allocations;
                if (const auto allocation = allocations.find(address); allocation != allocations.end()) {
                    allocations.erase(allocation);
                    return;
                }
            }
            throw std::invalid_argument("flat_memory: no live allocation starts at " +
                                        detail::hex_address(address));
        });
    }

    /// The `size` bytes at `address`, for test setup. Throws std::out_of_range when they are not
    /// inside one range; an empty span when `size` is 0. Not synchronized: the lookup holds the
    /// mutex when there is one, but the bytes behind the span do not. Touch them only while no
    /// other thread reads or writes them (before the threads start, say); otherwise use read,
    /// write, load or store.
    [[nodiscard]] std::span<std::byte> bytes(std::uint64_t address, std::size_t size)
    {
        return guarded([&] {
            const auto found = locate(*this, address, size);
            if (found.error) {
                throw_out_of_range(address, size);
            }
            return size == 0 ? std::span<std::byte>{} : std::span<std::byte>{found.data, size};
        });
    }

    /// The `size` bytes at `address`, read-only; throws, and is no more synchronized than, the
    /// non-const overload.
    [[nodiscard]] std::span<const std::byte> bytes(std::uint64_t address, std::size_t size) const
    {
        return guarded([&] {
            const auto found = locate(*this, address, size);
            if (found.error) {
                throw_out_of_range(address, size);
            }
            return size == 0 ? std::span<const std::byte>{} : std::span<const std::byte>{found.data, size};
        });
    }

    /// Reads a `T` at `address` (all of it under the mutex when synchronized, so never half of
    /// a concurrent store()); throws std::out_of_range as bytes().
    template <class T>
        requires std::is_trivially_copyable_v<T>
    [[nodiscard]] T load(std::uint64_t address) const
    {
        std::array<std::byte, sizeof(T)> raw{};
        if (mutex_ != nullptr) [[unlikely]] {
            synchronized_load(address, raw);
        } else {
            const auto found = locate(*this, address, sizeof(T));
            if (found.error) {
                throw_out_of_range(address, sizeof(T));
            }
            std::memcpy(raw.data(), found.data, sizeof(T));
        }
        return std::bit_cast<T>(raw);
    }

    /// Writes `value` at `address` (under the mutex when synchronized); throws std::out_of_range
    /// as bytes().
    template <class T>
        requires std::is_trivially_copyable_v<T>
    void store(std::uint64_t address, const T& value)
    {
        if (mutex_ != nullptr) [[unlikely]] {
            synchronized_store(address, std::as_bytes(std::span{&value, 1}));
            return;
        }
        const auto found = locate(*this, address, sizeof(T));
        if (found.error) {
            throw_out_of_range(address, sizeof(T));
        }
        std::memcpy(found.data, &value, sizeof(T));
    }

private:
    /// Runs `function` under the mutex when synchronized, else just runs it; for the operations
    /// off the DMA path (read, write, load and store have out-of-line synchronized paths below).
    template <class Function>
    std::invoke_result_t<Function&> guarded(Function&& function) const
    {
        if (mutex_ == nullptr) {
            return function();
        }
        const std::lock_guard lock{*mutex_};
        return function();
    }

    std::error_code unsynchronized_read(std::uint64_t address, std::span<std::byte> destination) const
    {
        const auto found = locate(*this, address, destination.size());
        if (!found.error && !destination.empty()) {
            std::memcpy(destination.data(), found.data, destination.size());
        }
        return found.error;
    }

    std::error_code unsynchronized_write(std::uint64_t address, std::span<const std::byte> source)
    {
        const auto found = locate(*this, address, source.size());
        if (!found.error && !source.empty()) {
            std::memcpy(found.data, source.data(), source.size());
        }
        return found.error;
    }

    /// The synchronized paths of read and write, out of line so that the unsynchronized ones
    /// inline as they did before there was a mutex: one more branch, nothing else.
    [[gnu::noinline]] std::error_code synchronized_read(std::uint64_t address,
                                                        std::span<std::byte> destination) const
    {
        const std::lock_guard lock{*mutex_};
        return unsynchronized_read(address, destination);
    }

    [[gnu::noinline]] std::error_code synchronized_write(std::uint64_t address,
                                                         std::span<const std::byte> source)
    {
        const std::lock_guard lock{*mutex_};
        return unsynchronized_write(address, source);
    }

    /// load() and store() under the mutex; a failed access throws as bytes().
    [[gnu::noinline]] void synchronized_load(std::uint64_t address, std::span<std::byte> destination) const
    {
        const std::lock_guard lock{*mutex_};
        if (unsynchronized_read(address, destination)) {
            throw_out_of_range(address, destination.size());
        }
    }

    [[gnu::noinline]] void synchronized_store(std::uint64_t address, std::span<const std::byte> source)
    {
        const std::lock_guard lock{*mutex_};
        if (unsynchronized_write(address, source)) {
            throw_out_of_range(address, source.size());
        }
    }

    std::span<std::byte> unsynchronized_add_range(std::uint64_t base, std::size_t size, std::byte* adopted)
    {
        if (size == 0) {
            throw std::invalid_argument("flat_memory: a range cannot be empty");
        }
        const std::uint64_t length = size;
        if (length - 1 > max_address - base) {
            throw std::invalid_argument("flat_memory: the range at " + detail::hex_address(base) +
                                        " wraps the 64-bit address space");
        }
        const std::uint64_t last = base + (length - 1);
        const auto next = ranges_.lower_bound(base);
        if (next != ranges_.end() && next->first <= last) {
            throw std::invalid_argument("flat_memory: the range at " + detail::hex_address(base) +
                                        " overlaps the range at " + detail::hex_address(next->first));
        }
        if (next != ranges_.begin() && std::prev(next)->second.last >= base) {
            throw std::invalid_argument("flat_memory: the range at " + detail::hex_address(base) +
                                        " overlaps the range at " +
                                        detail::hex_address(std::prev(next)->first));
        }
        auto& added = ranges_.emplace_hint(next, base, range{last, adopted, size})->second;
        return {added.bytes, size};
    }

    std::optional<std::uint64_t> unsynchronized_allocate(std::size_t size, std::size_t alignment)
    {
        for (auto& [base, memory] : ranges_) {
            std::uint64_t cursor = base;
            bool room_after_last = true;
            for (const auto& [start, length] : memory.allocations) {
                if (cursor < start) {
                    if (const auto found = fit(cursor, start - 1, size, alignment)) {
                        memory.allocations.emplace(*found, size);
                        return found;
                    }
                }
                const std::uint64_t allocation_last = start + (length - 1);
                if (allocation_last == memory.last) {
                    room_after_last = false;
                    break;
                }
                cursor = allocation_last + 1;
            }
            if (room_after_last) {
                if (const auto found = fit(cursor, memory.last, size, alignment)) {
                    memory.allocations.emplace(*found, size);
                    return found;
                }
            }
        }
        return std::nullopt;
    }

    static constexpr std::uint64_t max_address = std::numeric_limits<std::uint64_t>::max();

    using page_aligned_bytes = detail::page_aligned_bytes;

    struct range {
        /// Zero-filled storage of its own, or the caller's `adopted` bytes.
        range(std::uint64_t last_byte, std::byte* adopted, std::size_t length)
            : last{last_byte}
            , size{length}
            , storage(adopted == nullptr ? length : 0)
            , bytes{adopted == nullptr ? storage.data() : adopted}
        {}
        /// Copies the bytes into storage of its own, adopted or not.
        range(const range& other)
            : last{other.last}
            , size{other.size}
            , storage(other.bytes, other.size)
            , bytes{storage.data()}
            , allocations{other.allocations}
        {}
        range(range&& other) noexcept = default; // moved storage keeps its buffer
        range& operator=(const range&) = delete;
        range& operator=(range&&) = delete;
        ~range() = default;

        std::uint64_t last{}; ///< inclusive, so a range may end at 2^64 - 1
        std::size_t size{};
        page_aligned_bytes storage;                           ///< the range's own bytes (empty when adopted)
        std::byte* bytes = nullptr;                           ///< the range's bytes: storage's or adopted
        std::map<std::uint64_t, std::uint64_t> allocations{}; ///< live allocations: address -> size
    };

    template <class Byte>
    struct location {
        Byte* data{};
        std::error_code error{};
    };

    /// Finds the bytes of [address, address + length) inside one range. A zero-length access
    /// succeeds with no data pointer.
    template <class Self,
              class Result = location<std::conditional_t<std::is_const_v<Self>, const std::byte, std::byte>>>
    static Result locate(Self& self, std::uint64_t address, std::uint64_t length) noexcept
    {
        if (length == 0) {
            return Result{};
        }
        if (length - 1 > max_address - address) {
            return Result{nullptr, make_error_code(errc::dma_out_of_range)};
        }
        const std::uint64_t last = address + (length - 1);
        // Most accesses fall in the range of the previous one: try it before the tree.
        const auto& hit = self.last_hit_;
        if (hit.memory != nullptr && address >= hit.base && last <= hit.memory->last) {
            const auto& memory = *hit.memory; // const for a const lookup
            if constexpr (std::is_const_v<Self>) {
                return Result{static_cast<const std::byte*>(memory.bytes) + (address - hit.base), {}};
            } else {
                return Result{hit.memory->bytes + (address - hit.base), {}};
            }
        }
        const auto next = self.ranges_.upper_bound(address);
        if (next == self.ranges_.begin() || last > std::prev(next)->second.last) {
            return Result{nullptr, make_error_code(errc::dma_unmapped)};
        }
        auto& [base, memory] = *std::prev(next);
        if (!self.shared_) {
            // The cache serves const and non-const lookups alike; a const lookup only reads through it.
            self.last_hit_ = cached_range{base, const_cast<range*>(&memory)};
        }
        return Result{memory.bytes + (address - base), {}};
    }

    /// The lowest `alignment`-aligned address in [first, last] with room for `size` bytes.
    static std::optional<std::uint64_t> fit(std::uint64_t first, std::uint64_t last, std::uint64_t size,
                                            std::uint64_t alignment) noexcept
    {
        const std::uint64_t mask = alignment - 1;
        if (first > max_address - mask) {
            return std::nullopt;
        }
        const std::uint64_t aligned = (first + mask) & ~mask;
        if (aligned > last || size - 1 > last - aligned) {
            return std::nullopt;
        }
        return aligned;
    }

    [[noreturn]] static void throw_out_of_range(std::uint64_t address, std::size_t size)
    {
        throw std::out_of_range("flat_memory: " + std::to_string(size) + " bytes at " +
                                detail::hex_address(address) + " are not inside one range");
    }

    std::map<std::uint64_t, range> ranges_; ///< keyed by base address
    /// Held by every access when synchronized; null otherwise. A pointer keeps the class movable.
    std::unique_ptr<std::mutex> mutex_;
    struct cached_range {
        std::uint64_t base = 0;
        range* memory = nullptr;
    };
    /// The range of the last successful lookup (map nodes never move, and ranges are never
    /// removed). Updated by const lookups too, so it is guarded by the mutex like the bytes.
    mutable cached_range last_hit_{};
    bool shared_ = false;          ///< lookups leave last_hit_ alone (set_shared)
    std::uint64_t generation_ = 0; ///< mapping_generation()
};

static_assert(StableMappingDmaProvider<flat_memory>);
static_assert(check_dma_provider<flat_memory>());

} // namespace testing
NVMEKIT_END_NAMESPACE
