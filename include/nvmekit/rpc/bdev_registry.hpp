#pragma once
/// Named block devices ("bdevs", as SPDK calls them) for the management interface: each a
/// BlockBackend (any_backend) with the block size, block count, UUID and product name a client
/// sees, a claim (a bdev in use by a namespace cannot be deleted) and I/O statistics.
///
///     nvmekit::rpc::bdev_registry bdevs;   // latencies in steady-clock nanoseconds
///     auto disk = bdevs.add({.name = "Malloc0", .product_name = "Malloc disk", .module = "malloc",
///                            .block_size = 512, .num_blocks = 2048},
///                           nvmekit::ram_backend{512 * 2048});
///     disk->claim("nvmf");                 // now remove("Malloc0") answers EBUSY
///     subsystem.add_namespace(nvmekit::rpc::bdev_backend{disk}); // its I/O counts in disk->statistics()
///
/// bdev_methods.hpp serves a registry with SPDK's bdev_* methods.
///
/// Threads: add(), remove(), find() and list() may be called from any thread (one mutex guards
/// the names). A bdev is held by std::shared_ptr, so one removed while a namespace still uses its
/// backend stays alive until the last holder lets go. claim()/release() and the statistics are
/// atomic: the statistics may be recorded from I/O threads while a client reads them.

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <nvmekit/backends/any_backend.hpp>
#include <nvmekit/config.hpp>
#include <nvmekit/contracts/block_backend.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace rpc {

/// A UUID as 16 bytes, first byte first (as printed).
using uuid_bytes = std::array<std::uint8_t, 16>;

/// Parses the canonical form `00112233-4455-6677-8899-aabbccddeeff` (either case).
[[nodiscard]] inline std::optional<uuid_bytes> parse_uuid(std::string_view text)
{
    if (text.size() != 36) {
        return std::nullopt;
    }
    uuid_bytes out{};
    std::size_t byte = 0;
    for (std::size_t i = 0; i < text.size();) {
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (text[i] != '-') {
                return std::nullopt;
            }
            ++i;
            continue;
        }
        const auto nibble = [](char c) -> int {
            if (c >= '0' && c <= '9') {
                return c - '0';
            }
            if (c >= 'a' && c <= 'f') {
                return c - 'a' + 10;
            }
            if (c >= 'A' && c <= 'F') {
                return c - 'A' + 10;
            }
            return -1;
        };
        const int high = nibble(text[i]);
        const int low = nibble(text[i + 1]);
        if (high < 0 || low < 0) {
            return std::nullopt;
        }
        out[byte++] = static_cast<std::uint8_t>((high << 4) | low);
        i += 2;
    }
    return out;
}

/// The canonical lower-case form of `value`.
[[nodiscard]] inline std::string uuid_string(const uuid_bytes& value)
{
    static constexpr char digits[] = "0123456789abcdef";
    std::string text;
    text.reserve(36);
    for (std::size_t i = 0; i < value.size(); ++i) {
        if (i == 4 || i == 6 || i == 8 || i == 10) {
            text += '-';
        }
        text += digits[value[i] >> 4];
        text += digits[value[i] & 0xf];
    }
    return text;
}

/// A random (version 4, RFC 4122 variant) UUID.
[[nodiscard]] inline uuid_bytes random_uuid()
{
    std::random_device entropy;
    uuid_bytes out{};
    for (std::size_t i = 0; i < out.size(); i += 4) {
        const std::uint32_t word = entropy();
        for (std::size_t j = 0; j < 4; ++j) {
            out[i + j] = static_cast<std::uint8_t>(word >> (8 * j));
        }
    }
    out[6] = static_cast<std::uint8_t>((out[6] & 0x0fU) | 0x40U); // version 4
    out[8] = static_cast<std::uint8_t>((out[8] & 0x3fU) | 0x80U); // variant 10b
    return out;
}

/// Where a registry's bdevs take the time of their I/O latencies: ticks now, and how many ticks
/// make a second (bdev_get_iostat reports both).
struct bdev_clock {
    /// Nanoseconds of std::chrono::steady_clock.
    static std::uint64_t steady_ticks() noexcept
    {
        return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                              std::chrono::steady_clock::now().time_since_epoch())
                                              .count());
    }

    std::uint64_t tick_rate = 1'000'000'000;
    /// Now, in ticks; never decreases. Read twice per counted request, from any I/O thread.
    std::uint64_t (*ticks)() noexcept = &steady_ticks;
};

/// A copy of the counters of one kind of operation. Latencies are in the ticks the recorder
/// used; the minimum is 0 while no operation of the kind completed.
struct bdev_io_kind_counters {
    std::uint64_t bytes = 0;
    std::uint64_t ops = 0;
    std::uint64_t latency_ticks = 0;
    std::uint64_t max_latency_ticks = 0;
    std::uint64_t min_latency_ticks = 0;

    friend bool operator==(const bdev_io_kind_counters&, const bdev_io_kind_counters&) = default;
};

/// A copy of a bdev's I/O counters: reads, writes and deallocates (SPDK's "unmap").
struct bdev_io_counters {
    bdev_io_kind_counters read;
    bdev_io_kind_counters write;
    bdev_io_kind_counters unmap;

    friend bool operator==(const bdev_io_counters&, const bdev_io_counters&) = default;
};

/// What bdev_io_statistics::reset() clears (SPDK's reset modes "all" and "maxmin").
enum class bdev_io_reset : std::uint8_t {
    all,    ///< every counter
    max_min ///< only the latency maxima and minima
};

/// I/O statistics of one bdev, recorded by whoever completes its requests (bdev_backend does):
/// relaxed atomics, so any number of threads record at once without a lock. Every counter is
/// exact (no request is lost or counted twice, each maximum and minimum is one a request had);
/// what is not exact is only a reading taken while requests complete, which may see one field of
/// a request counted and the next not yet.
class bdev_io_statistics {
public:
    /// Whether record() counts `operation`: reads, writes and deallocates (SPDK's "unmap"), not
    /// flush and write zeroes (SPDK's iostat has no field for them).
    [[nodiscard]] static constexpr bool counts(block_operation operation) noexcept
    {
        return operation == block_operation::read || operation == block_operation::write ||
               operation == block_operation::deallocate;
    }

    /// Counts one request that completed successfully, of `bytes` that took `latency_ticks`
    /// from submission to completion; an operation counts() refuses is ignored.
    void record(block_operation operation, std::uint64_t bytes, std::uint64_t latency_ticks) noexcept
    {
        kind* target = nullptr;
        switch (operation) {
        case block_operation::read: target = &read_; break;
        case block_operation::write: target = &write_; break;
        case block_operation::deallocate: target = &unmap_; break;
        case block_operation::flush:
        case block_operation::write_zeroes: return;
        }
        target->bytes.fetch_add(bytes, std::memory_order_relaxed);
        target->ops.fetch_add(1, std::memory_order_relaxed);
        target->latency.fetch_add(latency_ticks, std::memory_order_relaxed);
        std::uint64_t seen = target->max_latency.load(std::memory_order_relaxed);
        while (latency_ticks > seen &&
               !target->max_latency.compare_exchange_weak(seen, latency_ticks, std::memory_order_relaxed)) {
        }
        seen = target->min_latency.load(std::memory_order_relaxed);
        while (latency_ticks < seen &&
               !target->min_latency.compare_exchange_weak(seen, latency_ticks, std::memory_order_relaxed)) {
        }
    }

    /// The counters now (each exact; together not one atomic snapshot while I/O runs).
    [[nodiscard]] bdev_io_counters counters() const noexcept
    {
        return {read_.counters(), write_.counters(), unmap_.counters()};
    }

    /// Clears the counters `what` names; a request recorded meanwhile may count in part.
    void reset(bdev_io_reset what) noexcept
    {
        for (kind* k : {&read_, &write_, &unmap_}) {
            k->reset(what);
        }
    }

private:
    struct kind {
        std::atomic<std::uint64_t> bytes{0};
        std::atomic<std::uint64_t> ops{0};
        std::atomic<std::uint64_t> latency{0};
        std::atomic<std::uint64_t> max_latency{0};
        std::atomic<std::uint64_t> min_latency{~std::uint64_t{0}};

        [[nodiscard]] bdev_io_kind_counters counters() const noexcept
        {
            const std::uint64_t smallest = min_latency.load(std::memory_order_relaxed);
            return {bytes.load(std::memory_order_relaxed), ops.load(std::memory_order_relaxed),
                    latency.load(std::memory_order_relaxed), max_latency.load(std::memory_order_relaxed),
                    smallest == ~std::uint64_t{0} ? 0 : smallest};
        }

        void reset(bdev_io_reset what) noexcept
        {
            if (what == bdev_io_reset::all) {
                bytes.store(0, std::memory_order_relaxed);
                ops.store(0, std::memory_order_relaxed);
                latency.store(0, std::memory_order_relaxed);
            }
            max_latency.store(0, std::memory_order_relaxed);
            min_latency.store(~std::uint64_t{0}, std::memory_order_relaxed);
        }
    };
    kind read_;
    kind write_;
    kind unmap_;
};

/// What describes a bdev besides its backend.
struct bdev_options {
    std::string name;
    std::string product_name; ///< as SPDK's modules name theirs: "Malloc disk", "Null disk", "AIO disk"
    std::string module;       ///< the module that created it ("malloc", "null", "aio"): deletes check it
    std::uint32_t block_size = 512;
    std::uint64_t num_blocks = 0;
    std::optional<uuid_bytes> uuid{}; ///< random when absent
    bool read_only = false;           ///< the backend refuses writes
    /// The module's own description, as SPDK's `driver_specific` (an object).
    nlohmann::json driver_specific = nlohmann::json::object();
};

/// One named block device.
class bdev {
public:
    /// `clock` times the requests bdev_backend counts in statistics().
    bdev(bdev_options options, any_backend backend, bdev_clock clock = {})
        : options_{std::move(options)}
        , uuid_{options_.uuid.value_or(random_uuid())}
        , backend_{std::move(backend)}
        , clock_{clock}
    {}
    bdev(const bdev&) = delete;
    bdev& operator=(const bdev&) = delete;

    [[nodiscard]] const std::string& name() const noexcept { return options_.name; }
    [[nodiscard]] const std::string& product_name() const noexcept { return options_.product_name; }
    [[nodiscard]] const std::string& module() const noexcept { return options_.module; }
    [[nodiscard]] std::uint32_t block_size() const noexcept { return options_.block_size; }
    [[nodiscard]] std::uint64_t num_blocks() const noexcept { return options_.num_blocks; }
    [[nodiscard]] const uuid_bytes& uuid() const noexcept { return uuid_; }
    [[nodiscard]] bool read_only() const noexcept { return options_.read_only; }
    [[nodiscard]] const nlohmann::json& driver_specific() const noexcept { return options_.driver_specific; }

    /// The storage: submit, poll (from the thread that owns the I/O).
    [[nodiscard]] any_backend& backend() noexcept { return backend_; }

    /// Claims the bdev for `owner` (e.g. a subsystem's NQN); false when someone holds it already.
    /// A claimed bdev cannot be removed from its registry.
    bool claim(std::string owner)
    {
        const std::lock_guard lock{claim_mutex_};
        if (claimed_.load(std::memory_order_relaxed)) {
            return false;
        }
        claim_owner_ = std::move(owner);
        claimed_.store(true, std::memory_order_release);
        return true;
    }
    /// Gives the claim up.
    void release()
    {
        const std::lock_guard lock{claim_mutex_};
        claim_owner_.clear();
        claimed_.store(false, std::memory_order_release);
    }
    [[nodiscard]] bool claimed() const noexcept { return claimed_.load(std::memory_order_acquire); }
    [[nodiscard]] std::string claim_owner() const
    {
        const std::lock_guard lock{claim_mutex_};
        return claim_owner_;
    }

    [[nodiscard]] bdev_io_statistics& statistics() noexcept { return statistics_; }
    [[nodiscard]] const bdev_io_statistics& statistics() const noexcept { return statistics_; }
    [[nodiscard]] const bdev_clock& clock() const noexcept { return clock_; }

private:
    bdev_options options_;
    uuid_bytes uuid_;
    any_backend backend_;
    bdev_clock clock_;
    mutable std::mutex claim_mutex_;
    std::string claim_owner_;
    std::atomic<bool> claimed_{false};
    bdev_io_statistics statistics_;
};

/// A BlockBackend on a bdev's backend, holding the bdev alive: what a namespace on a bdev is
/// built on. The bdev's backend must be used from one thread at a time, or be one that allows
/// more.
///
/// Reads, writes and deallocates are counted in the bdev's statistics: submit() reads the bdev's
/// clock and relays the request (block_request::relay), so that its completion, inside submit()
/// or a later poll(), reads the clock again, records the request's bytes and latency when it
/// succeeded, and then runs the submitter's own `complete` with the request as it was given.
/// Failed requests are not counted; flush and write zeroes pass through untouched. The cost per
/// counted request is two clock readings and a few relaxed atomic additions, no lock.
class bdev_backend {
public:
    explicit bdev_backend(std::shared_ptr<bdev> device) : device_{std::move(device)}
    {
        NVMEKIT_ASSERT(device_ != nullptr, "bdev_backend needs a bdev");
    }

    [[nodiscard]] std::uint64_t capacity_bytes() const
    {
        return std::uint64_t{device_->block_size()} * device_->num_blocks();
    }
    void submit(block_request& request)
    {
        if (!bdev_io_statistics::counts(request.operation)) {
            device_->backend().submit(request);
            return;
        }
        NVMEKIT_ASSERT(request.relay.complete == nullptr, "block_request relayed by two backends at once");
        request.relay = {request.complete, request.context, device_->clock().ticks()};
        request.complete = &counted_complete;
        request.context = device_.get();
        device_->backend().submit(request);
    }
    std::size_t poll() { return device_->backend().poll(); }
    [[nodiscard]] bool has_volatile_cache() const { return device_->backend().has_volatile_cache(); }
    [[nodiscard]] std::size_t outstanding() const { return device_->backend().outstanding(); }

    [[nodiscard]] const std::shared_ptr<bdev>& device() const noexcept { return device_; }

private:
    /// Counts the request in its bdev (held alive by the bdev_backend, which outlives its requests)
    /// and gives it back to its submitter.
    static void counted_complete(block_request& request, block_status status) noexcept
    {
        auto& device = *static_cast<bdev*>(request.context);
        const block_request_relay relay = std::exchange(request.relay, {});
        if (status == block_status::success) {
            device.statistics().record(request.operation, request.length,
                                       device.clock().ticks() - relay.submitted_at);
        }
        request.complete = relay.complete;
        request.context = relay.context;
        nvmekit::detail::complete_request(request, status);
    }

    std::shared_ptr<bdev> device_;
};

/// The bdevs by name, in the order they were added.
class bdev_registry {
public:
    /// `clock` times the I/O of every bdev added.
    explicit bdev_registry(bdev_clock clock = {}) : clock_{clock} {}

    [[nodiscard]] const bdev_clock& clock() const noexcept { return clock_; }

    /// Adds a bdev. Throws std::system_error: EEXIST when the name is taken, EINVAL when the name
    /// is empty, the block size or count is 0, or the backend is smaller than the blocks.
    std::shared_ptr<bdev> add(bdev_options options, any_backend backend)
    {
        if (options.name.empty()) {
            throw std::system_error(std::make_error_code(std::errc::invalid_argument), "a bdev needs a name");
        }
        if (options.block_size == 0 || options.num_blocks == 0) {
            throw std::system_error(std::make_error_code(std::errc::invalid_argument),
                                    "bdev '" + options.name +
                                        "' needs a block size and a block count above 0");
        }
        const std::uint64_t capacity = backend.capacity_bytes();
        if (options.num_blocks > capacity / options.block_size) {
            throw std::system_error(std::make_error_code(std::errc::invalid_argument),
                                    "bdev '" + options.name + "': " + std::to_string(options.num_blocks) +
                                        " blocks of " + std::to_string(options.block_size) +
                                        " bytes do not fit its backend of " + std::to_string(capacity) +
                                        " bytes");
        }
        auto created = std::make_shared<bdev>(std::move(options), std::move(backend), clock_);
        const std::lock_guard lock{mutex_};
        if (find_locked(created->name()) != bdevs_.end()) {
            throw std::system_error(std::make_error_code(std::errc::file_exists),
                                    "a bdev named '" + created->name() + "' exists already");
        }
        bdevs_.push_back(created);
        return created;
    }

    /// Removes the bdev `name` when `module` created it (any module when empty): no error, or
    /// no_such_device (no bdev of that name and module), or device_or_resource_busy (claimed).
    std::errc remove(std::string_view name, std::string_view module = {})
    {
        const std::lock_guard lock{mutex_};
        const auto it = find_locked(name);
        if (it == bdevs_.end() || (!module.empty() && (*it)->module() != module)) {
            return std::errc::no_such_device;
        }
        if ((*it)->claimed()) {
            return std::errc::device_or_resource_busy;
        }
        bdevs_.erase(it);
        return std::errc{};
    }

    /// The bdev `name`, or nullptr.
    [[nodiscard]] std::shared_ptr<bdev> find(std::string_view name) const
    {
        const std::lock_guard lock{mutex_};
        const auto it = find_locked(name);
        return it == bdevs_.end() ? nullptr : *it;
    }

    /// Every bdev, in the order they were added.
    [[nodiscard]] std::vector<std::shared_ptr<bdev>> list() const
    {
        const std::lock_guard lock{mutex_};
        return bdevs_;
    }

    [[nodiscard]] std::size_t size() const
    {
        const std::lock_guard lock{mutex_};
        return bdevs_.size();
    }

private:
    using list_type = std::vector<std::shared_ptr<bdev>>;

    [[nodiscard]] list_type::const_iterator find_locked(std::string_view name) const
    {
        return std::find_if(bdevs_.begin(), bdevs_.end(), [&](const auto& b) { return b->name() == name; });
    }

    bdev_clock clock_;
    mutable std::mutex mutex_;
    list_type bdevs_;
};

} // namespace rpc
NVMEKIT_END_NAMESPACE
