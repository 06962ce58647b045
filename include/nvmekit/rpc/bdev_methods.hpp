#pragma once
/// SPDK's block-device methods on a bdev_registry, with SPDK's method and parameter names, result
/// shapes and errors (SPDK's doc/jsonrpc.md and its bdev modules), so that `scripts/rpc.py`
/// manages nvmekit's block devices unchanged:
///
/// - `bdev_malloc_create`: num_blocks, block_size; name (default Malloc0, Malloc1, ...), uuid, and
///   the metadata and DIF parameters when they ask for none. Answers the name.
/// - `bdev_null_create`: name, num_blocks, block_size; uuid, and the metadata, DIF and alignment
///   parameters when they ask for none. Answers the name.
/// - `bdev_aio_create`: filename, name; block_size (0: the device's), readonly, fallocate, uuid;
///   nowait when false. Answers the name.
/// - `bdev_malloc_delete`, `bdev_null_delete`, `bdev_aio_delete`: name. Answer true.
/// - `bdev_get_bdevs`: name, timeout. Answers an array of bdev objects.
/// - `bdev_get_iostat`: name or names, reset_mode ("none", "all", "maxmin", "error": what to clear
///   once reported; "maxmin" only the latency maxima and minima, "error" only the error counts,
///   which nvmekit does not keep: it clears nothing), per_channel (false only). Answers
///   {tick_rate, ticks, bdevs: [...]} in the registry's bdev_clock. Each bdev reports the reads,
///   writes and deallocates (SPDK's unmaps) that completed successfully through its
///   bdev_backend, i.e. those of the namespaces on it: operations, bytes, and latency ticks from
///   submission to completion (sum, maximum, minimum; the minimum 0 while none completed).
///   SPDK's copy fields are reported as 0 (nvmekit's backends have no copy) and `io_error` as
///   {}; flush and write zeroes are not counted, nor failed requests, as in SPDK.
///
///     nvmekit::rpc::registry methods;
///     nvmekit::rpc::bdev_registry bdevs;
///     nvmekit::rpc::add_bdev_methods(methods, bdevs);
///
/// Errors, as SPDK answers them: a parameter missing, unknown, of the wrong type or asking for
/// what nvmekit does not do is Invalid Params (-32602) naming it; the rest is a negative errno
/// with its text, e.g. deleting (or asking for) a bdev that does not exist gives -19 "No such
/// device", a name taken -17 "File exists". SPDK's modules answer a decoding failure with
/// -32603; nvmekit answers -32602, the code SPDK's jsonrpc.md gives such failures. Two deliberate
/// differences: deleting a claimed bdev fails with -16 "Device or resource busy" (SPDK hot-removes it from
/// under its user), and `timeout` of bdev_get_bdevs is accepted but not waited for (a bdev is created by the
/// same thread that answers, so waiting could not make one appear).
///
/// The methods are callable at run time only (SPDK_RPC_RUNTIME), like SPDK's.

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <nvmekit/backends/any_backend.hpp>
#include <nvmekit/backends/file_backend.hpp>
#include <nvmekit/backends/null_backend.hpp>
#include <nvmekit/backends/ram_backend.hpp>
#include <nvmekit/config.hpp>
#include <nvmekit/rpc/bdev_registry.hpp>
#include <nvmekit/rpc/jsonrpc.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace rpc {

/// bdev_get_iostat's "tick_rate" and "ticks" come from the registry's bdev_clock, the clock its
/// bdevs' latencies are measured with.
struct bdev_method_options {
    /// How bdev_malloc_create's RAM is kept. `concurrent` keeps chunk memory alive while the bdev
    /// lives, so poll groups on several threads may share a bdev.
    ram_backend_options malloc_backend{.concurrent = true};
};

namespace detail {

/// SPDK's answer for a failed errno-style operation: the negative errno and its text, then what
/// failed when there is more to say.
inline rpc::error errno_error(std::errc failure, const std::string& detail = {})
{
    const std::error_code code = std::make_error_code(failure);
    return {-code.value(), detail.empty() ? code.message() : code.message() + ": " + detail};
}

inline rpc::error system_error_to_rpc(const std::system_error& e) { return {-e.code().value(), e.what()}; }

/// Every io type SPDK reports (spdk_bdev_io_type), true for those nvmekit's backends serve.
inline nlohmann::json supported_io_types(const bdev& device)
{
    const bool writable = !device.read_only();
    nlohmann::json types = nlohmann::json::object();
    for (const char* name :
         {"read",          "write",           "unmap",       "flush",        "reset",
          "nvme_admin",    "nvme_io",         "nvme_io_md",  "write_zeroes", "zcopy",
          "get_zone_info", "zone_management", "zone_append", "compare",      "compare_and_write",
          "abort",         "seek_hole",       "seek_data",   "copy",         "nvme_iov_md"}) {
        types[name] = false;
    }
    types["read"] = true;
    types["write"] = writable;
    types["unmap"] = writable;
    types["write_zeroes"] = writable;
    types["flush"] = true;
    types["reset"] = true;
    return types;
}

inline nlohmann::json bdev_json(const bdev& device)
{
    nlohmann::json out = {
        {"name", device.name()},
        {"aliases", nlohmann::json::array()},
        {"product_name", device.product_name()},
        {"block_size", device.block_size()},
        {"num_blocks", device.num_blocks()},
        {"uuid", uuid_string(device.uuid())},
        {"assigned_rate_limits",
         {{"rw_ios_per_sec", 0}, {"rw_mbytes_per_sec", 0}, {"r_mbytes_per_sec", 0}, {"w_mbytes_per_sec", 0}}},
        {"claimed", device.claimed()},
        {"zoned", false},
        {"supported_io_types", supported_io_types(device)},
        {"driver_specific", device.driver_specific()},
    };
    if (device.claimed()) {
        out["claim_type"] = "exclusive_write";
    }
    return out;
}

inline nlohmann::json iostat_json(const bdev& device)
{
    const bdev_io_counters counters = device.statistics().counters();
    struct kind {
        const char* bytes;
        const char* ops;
        std::string name; ///< of the latency fields
        bdev_io_kind_counters counters;
    };
    nlohmann::json out = {{"name", device.name()}, {"io_error", nlohmann::json::object()}};
    // SPDK reports copies too; nvmekit's backends have no copy operation.
    for (const kind& k : {kind{"bytes_read", "num_read_ops", "read", counters.read},
                          kind{"bytes_written", "num_write_ops", "write", counters.write},
                          kind{"bytes_unmapped", "num_unmap_ops", "unmap", counters.unmap},
                          kind{"bytes_copied", "num_copy_ops", "copy", {}}}) {
        out[k.bytes] = k.counters.bytes;
        out[k.ops] = k.counters.ops;
        out[k.name + "_latency_ticks"] = k.counters.latency_ticks;
        out["max_" + k.name + "_latency_ticks"] = k.counters.max_latency_ticks;
        out["min_" + k.name + "_latency_ticks"] = k.counters.min_latency_ticks;
    }
    return out;
}

/// The "uuid" parameter: random when absent.
inline std::optional<uuid_bytes> uuid_parameter(const std::optional<std::string>& text)
{
    if (!text) {
        return std::nullopt;
    }
    auto parsed = parse_uuid(*text);
    if (!parsed) {
        throw exception{error_code::invalid_params,
                        "parameter 'uuid' must be a UUID (xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx), not \"" +
                            *text + "\""};
    }
    return parsed;
}

/// "physical_block_size" is accepted when it says nothing beyond block_size (absent, 0 or equal).
inline void check_physical_block_size(std::uint32_t physical, std::uint32_t block_size)
{
    if (physical != 0 && physical != block_size) {
        throw exception{error_code::invalid_params,
                        "parameter 'physical_block_size' is not supported with a value other than 0 or "
                        "block_size (" +
                            std::to_string(block_size) + ")"};
    }
}

/// SPDK's malloc and null modules take block sizes that are multiples of 512 and at least one
/// block; the capacity must fit 64 bits.
inline std::optional<rpc::error> check_geometry(std::uint32_t block_size, std::uint64_t num_blocks)
{
    if (block_size == 0 || block_size % 512 != 0) {
        return errno_error(std::errc::invalid_argument,
                           "block_size " + std::to_string(block_size) + " is not a multiple of 512");
    }
    if (num_blocks == 0) {
        return errno_error(std::errc::invalid_argument, "num_blocks must be greater than 0");
    }
    if (num_blocks > ~std::uint64_t{0} / block_size) {
        return errno_error(std::errc::invalid_argument, "num_blocks * block_size exceeds 64 bits");
    }
    return std::nullopt;
}

/// What SPDK's malloc and null modules both take: the geometry, the UUID, and the physical block
/// size and metadata/DIF parameters, which nvmekit accepts only when they ask for nothing.
struct create_parameters {
    std::uint64_t num_blocks = 0;
    std::uint32_t block_size = 0;
    std::optional<uuid_bytes> uuid{};
};

inline create_parameters read_create_parameters(params& in)
{
    create_parameters out;
    out.num_blocks = in.get(required<std::uint64_t>("num_blocks"));
    out.block_size = in.get(required<std::uint32_t>("block_size"));
    out.uuid = uuid_parameter(in.get(maybe<std::string>("uuid")));
    check_physical_block_size(in.get(optional<std::uint32_t>("physical_block_size", 0)), out.block_size);
    static_cast<void>(in.get(accepted_when_default<std::uint32_t>("md_size", 0)));
    static_cast<void>(in.get(accepted_when_default<std::int32_t>("dif_type", 0)));
    static_cast<void>(in.get(accepted_when_default<bool>("dif_is_head_of_md", false)));
    static_cast<void>(in.get(accepted_when_default<std::uint32_t>("dif_pi_format", 0)));
    return out;
}

/// The logical block size of a block device, or 512 for a regular file (SPDK's aio module detects
/// it the same way).
inline std::uint32_t detected_block_size(const std::string& path)
{
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || !S_ISBLK(st.st_mode)) {
        return 512;
    }
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return 512;
    }
    int size = 0;
    const bool known = ::ioctl(fd, BLKSSZGET, &size) == 0 && size > 0;
    ::close(fd);
    return known ? static_cast<std::uint32_t>(size) : 512;
}

/// The bdev `name` (No such device when there is none, as SPDK answers), or every bdev.
inline std::vector<std::shared_ptr<bdev>> selected_bdevs(const bdev_registry& bdevs,
                                                         const std::optional<std::string>& name)
{
    if (!name) {
        return bdevs.list();
    }
    auto device = bdevs.find(*name);
    if (!device) {
        throw exception{errno_error(std::errc::no_such_device)};
    }
    return {std::move(device)};
}

/// A delete method: removes the bdev `name` of `module`.
inline handler delete_method(bdev_registry& bdevs, std::string module)
{
    return [&bdevs, module = std::move(module)](const nlohmann::json& p) -> outcome {
        auto [name] = params{p}.read(required<std::string>("name"));
        const std::shared_ptr<bdev> device = bdevs.find(name);
        const std::errc removed = bdevs.remove(name, module);
        if (removed == std::errc{}) {
            return true;
        }
        if (removed == std::errc::device_or_resource_busy) {
            return errno_error(std::errc::device_or_resource_busy,
                               "bdev '" + name + "' is claimed by " +
                                   (device ? device->claim_owner() : std::string{"another user"}));
        }
        return errno_error(std::errc::no_such_device);
    };
}

/// Adds a bdev, answering its name or the registry's refusal.
inline outcome add_bdev(bdev_registry& bdevs, bdev_options options, any_backend backend)
{
    try {
        return bdevs.add(std::move(options), std::move(backend))->name();
    } catch (const std::system_error& e) {
        return system_error_to_rpc(e);
    }
}

} // namespace detail

/// Adds SPDK's bdev methods (see the list above) on `bdevs` to `methods`; both must outlive the
/// methods' use.
inline void add_bdev_methods(registry& methods, bdev_registry& bdevs, bdev_method_options options = {})
{
    const method_options runtime_only{.allowed_states = states::runtime};
    auto shared = std::make_shared<bdev_method_options>(options);
    // SPDK names an unnamed malloc bdev "Malloc%d" with a counter that only generated names
    // advance, once the bdev's memory is allocated and whether or not the name is then free.
    auto malloc_count = std::make_shared<std::uint64_t>(0);

    methods.add(
        "bdev_malloc_create",
        [&bdevs, shared, malloc_count](const nlohmann::json& p) -> outcome {
            params in{p};
            const auto name = in.get(maybe<std::string>("name"));
            const auto [num_blocks, block_size, uuid] = detail::read_create_parameters(in);
            static_cast<void>(in.read(accepted_when_default<std::uint32_t>("optimal_io_boundary", 0),
                                      accepted_when_default<bool>("md_interleave", false),
                                      accepted_when_default<std::int32_t>("numa_id", -1)));
            if (auto failure = detail::check_geometry(block_size, num_blocks)) {
                return *failure;
            }
            std::optional<ram_backend> memory;
            try {
                memory.emplace(num_blocks * block_size, shared->malloc_backend);
            } catch (const std::invalid_argument& e) {
                return detail::errno_error(std::errc::invalid_argument, e.what());
            }
            return detail::add_bdev(bdevs,
                                    {.name = name ? *name : "Malloc" + std::to_string((*malloc_count)++),
                                     .product_name = "Malloc disk",
                                     .module = "malloc",
                                     .block_size = block_size,
                                     .num_blocks = num_blocks,
                                     .uuid = uuid},
                                    std::move(*memory));
        },
        runtime_only);
    methods.add("bdev_malloc_delete", detail::delete_method(bdevs, "malloc"), runtime_only);

    methods.add(
        "bdev_null_create",
        [&bdevs](const nlohmann::json& p) -> outcome {
            params in{p};
            const auto name = in.get(required<std::string>("name"));
            const auto [num_blocks, block_size, uuid] = detail::read_create_parameters(in);
            static_cast<void>(
                in.read(accepted_when_default<std::uint32_t>("preferred_write_alignment", 0),
                        accepted_when_default<std::uint32_t>("preferred_write_granularity", 0),
                        accepted_when_default<std::uint32_t>("optimal_write_size", 0),
                        accepted_when_default<std::uint32_t>("preferred_unmap_alignment", 0),
                        accepted_when_default<std::uint32_t>("preferred_unmap_granularity", 0)));
            if (auto failure = detail::check_geometry(block_size, num_blocks)) {
                return *failure;
            }
            return detail::add_bdev(bdevs,
                                    {.name = name,
                                     .product_name = "Null disk",
                                     .module = "null",
                                     .block_size = block_size,
                                     .num_blocks = num_blocks,
                                     .uuid = uuid},
                                    null_backend{num_blocks * block_size});
        },
        runtime_only);
    methods.add("bdev_null_delete", detail::delete_method(bdevs, "null"), runtime_only);

    methods.add(
        "bdev_aio_create",
        [&bdevs](const nlohmann::json& p) -> outcome {
            // "nowait" asks SPDK's module for RWF_NOWAIT submissions; file_backend submits plainly.
            [[maybe_unused]] auto [filename, name, block_size, readonly, fallocate, uuid_text, nowait] =
                params{p}.read(required<std::string>("filename"), required<std::string>("name"),
                               optional<std::uint32_t>("block_size", 0), optional<bool>("readonly", false),
                               optional<bool>("fallocate", false), maybe<std::string>("uuid"),
                               accepted_when_default<bool>("nowait", false));
            const auto uuid = detail::uuid_parameter(uuid_text);
            if (bdevs.find(name)) {
                return detail::errno_error(std::errc::file_exists,
                                           "a bdev named '" + name + "' exists already");
            }
            const std::uint32_t detected = detail::detected_block_size(filename);
            const std::uint32_t used = block_size == 0 ? detected : block_size;
            if (used % 512 != 0 || used < detected) {
                return detail::errno_error(std::errc::invalid_argument,
                                           "block_size " + std::to_string(block_size) +
                                               " is not a multiple of 512 of at least the device's " +
                                               std::to_string(detected));
            }
            std::optional<file_backend> file;
            try {
                file.emplace(filename,
                             file_backend_options{.read_only = readonly, .use_fallocate = fallocate});
            } catch (const std::system_error& e) {
                return detail::system_error_to_rpc(e);
            }
            const std::uint64_t num_blocks = file->capacity_bytes() / used;
            if (num_blocks == 0) {
                return detail::errno_error(std::errc::invalid_argument,
                                           "'" + filename + "' is smaller than one block of " +
                                               std::to_string(used) + " bytes");
            }
            nlohmann::json driver = {{"aio",
                                      {{"filename", filename},
                                       {"block_size_override", block_size != 0},
                                       {"readonly", readonly},
                                       {"fallocate", fallocate},
                                       {"nowait", false}}}};
            return detail::add_bdev(bdevs,
                                    {.name = name,
                                     .product_name = "AIO disk",
                                     .module = "aio",
                                     .block_size = used,
                                     .num_blocks = num_blocks,
                                     .uuid = uuid,
                                     .read_only = readonly,
                                     .driver_specific = std::move(driver)},
                                    std::move(*file));
        },
        runtime_only);
    methods.add("bdev_aio_delete", detail::delete_method(bdevs, "aio"), runtime_only);

    methods.add(
        "bdev_get_bdevs",
        [&bdevs](const nlohmann::json& p) -> outcome {
            [[maybe_unused]] auto [name, timeout] =
                params{p}.read(maybe<std::string>("name"), optional<std::uint64_t>("timeout", 0));
            nlohmann::json result = nlohmann::json::array();
            for (const auto& device : detail::selected_bdevs(bdevs, name)) {
                result.push_back(detail::bdev_json(*device));
            }
            return result;
        },
        runtime_only);

    methods.add(
        "bdev_get_iostat",
        [&bdevs](const nlohmann::json& p) -> outcome {
            [[maybe_unused]] auto [name, names, per_channel, reset_mode] =
                params{p}.read(maybe<std::string>("name"), maybe<std::vector<std::string>>("names"),
                               accepted_when_default<bool>("per_channel", false),
                               optional<std::string>("reset_mode", "none"));
            if (reset_mode != "none" && reset_mode != "all" && reset_mode != "maxmin" &&
                reset_mode != "error") {
                throw exception{error_code::invalid_params,
                                "parameter 'reset_mode' must be \"all\", \"maxmin\", "
                                "\"error\" or \"none\", not \"" +
                                    reset_mode + "\""};
            }
            if (name && names) {
                return detail::errno_error(std::errc::invalid_argument,
                                           "give either 'name' or 'names', not both");
            }
            std::vector<std::shared_ptr<bdev>> selected;
            if (names) {
                for (const auto& each : *names) {
                    selected.push_back(detail::selected_bdevs(bdevs, each).front());
                }
            } else {
                selected = detail::selected_bdevs(bdevs, name);
            }
            nlohmann::json devices = nlohmann::json::array();
            for (const auto& device : selected) {
                devices.push_back(detail::iostat_json(*device));
                // "error" clears the error counts: io_error is always empty here.
                if (reset_mode == "all" || reset_mode == "maxmin") {
                    device->statistics().reset(reset_mode == "all" ? bdev_io_reset::all
                                                                   : bdev_io_reset::max_min);
                }
            }
            const bdev_clock& clock = bdevs.clock();
            return nlohmann::json{
                {"tick_rate", clock.tick_rate}, {"ticks", clock.ticks()}, {"bdevs", std::move(devices)}};
        },
        runtime_only);
}

} // namespace rpc
NVMEKIT_END_NAMESPACE
