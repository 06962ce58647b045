#pragma once
/// A namespace of the NVM command set: an NSID, a block backend, an LBA format, unique identifiers,
/// and the state commands leave on it (uncorrectable blocks).
///
/// Backend layout: with an extended-LBA format (FLBAS bit 4) block n occupies bytes
/// [n * (D + M), (n + 1) * (D + M)) of the backend, data then metadata, exactly as the host
/// transfers it; with separate metadata the data of every block comes first (block n at n * D) and
/// the metadata region follows it (block n's metadata at NSZE * D + n * M). Either way the
/// namespace holds floor(capacity / (D + M)) blocks.

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include <nvmekit/config.hpp>
#include <nvmekit/contracts/block_backend.hpp>
#include <nvmekit/spec/identify.hpp>

NVMEKIT_BEGIN_NAMESPACE

/// One LBA format a namespace can be formatted with.
struct lba_format_description {
    std::uint32_t data_bytes = 512;
    std::uint16_t metadata_bytes = 0;
};

/// The LBA formats every namespace reports (LBAF0-LBAF3): 512 and 4096 bytes, without and with
/// metadata. Extended LBA or separate metadata is chosen per format by FLBAS bit 4, among the
/// placements the controller reports in MC (lba_format_selectable).
inline constexpr std::array<lba_format_description, 4> supported_lba_formats{{
    {512, 0},
    {512, 8},
    {4096, 0},
    {4096, 64},
}};

/// MC (Identify Namespace byte 27): where a controller takes metadata. A PCIe controller takes it
/// in an extended LBA (bit 0) or in a separate buffer at MPTR (bit 1). A command capsule carries no
/// metadata pointer, so a controller reached over a fabric takes it only in an extended LBA.
[[nodiscard]] constexpr spec::metadata_capabilities metadata_placements(bool over_fabric) noexcept
{
    return spec::metadata_capabilities{}
        .with(spec::metadata_capabilities::extended_lba, true)
        .with(spec::metadata_capabilities::separate_buffer, !over_fabric);
}

/// Whether a host may choose LBA format `index` with its metadata in an extended LBA (`extended`:
/// Format NVM MSET, FLBAS bit 4) or in a separate buffer, from a controller reporting `mc`: the
/// format must be one of supported_lba_formats, and a format with metadata needs its placement in
/// MC. A format without metadata has nothing to place, so `extended` does not matter for it.
[[nodiscard]] constexpr bool lba_format_selectable(std::uint8_t index, bool extended,
                                                   spec::metadata_capabilities mc) noexcept
{
    if (index >= supported_lba_formats.size()) {
        return false;
    }
    if (supported_lba_formats[index].metadata_bytes == 0) {
        return true;
    }
    return extended ? mc.get(spec::metadata_capabilities::extended_lba)
                    : mc.get(spec::metadata_capabilities::separate_buffer);
}

/// The namespace's unique identifiers (Base 2.0 4.5.1); an all-zero identifier is not reported.
struct namespace_identifiers {
    std::array<std::uint8_t, 16> nguid{};
    std::array<std::uint8_t, 8> eui64{};
    std::array<std::uint8_t, 16> uuid{};
};

/// How a namespace is created.
struct namespace_options {
    std::uint8_t lba_format = 0;    ///< index into supported_lba_formats
    bool extended_metadata = false; ///< metadata at the end of each block's data (FLBAS bit 4)
    /// Most uncorrectable ranges one namespace tracks: Write Uncorrectable beyond it fails with
    /// Internal Error, so a host cannot make the controller allocate without bound.
    std::size_t max_uncorrectable_ranges = 4096;
    /// NMIC bit 0: the namespace may be attached to more than one controller at once. A private
    /// namespace (false) is attached to one controller at most (Namespace Is Private).
    bool shared = true;
};

template <typename Backend>
class nvm_namespace {
public:
    static_assert(check_block_backend<Backend>());

    nvm_namespace(std::uint32_t nsid, Backend backend, namespace_identifiers identifiers,
                  namespace_options options = {})
        : nsid_{nsid}, backend_{std::move(backend)}, identifiers_{identifiers}, options_{options}
    {
        NVMEKIT_ASSERT(options.lba_format < supported_lba_formats.size(), "lba format index out of range");
        set_format(options.lba_format, options.extended_metadata);
    }

    [[nodiscard]] std::uint32_t nsid() const noexcept { return nsid_; }
    [[nodiscard]] Backend& backend() noexcept { return backend_; }
    [[nodiscard]] const Backend& backend() const noexcept { return backend_; }
    [[nodiscard]] const namespace_identifiers& identifiers() const noexcept { return identifiers_; }

    [[nodiscard]] std::uint8_t lba_format() const noexcept { return format_; }
    [[nodiscard]] bool extended_metadata() const noexcept { return extended_; }
    [[nodiscard]] std::uint32_t block_bytes() const noexcept { return block_bytes_; }
    [[nodiscard]] std::uint32_t metadata_bytes() const noexcept { return metadata_bytes_; }
    /// NSZE: blocks in the namespace.
    [[nodiscard]] std::uint64_t block_count() const noexcept { return blocks_; }

    /// Whether [slba, slba + count) lies in the namespace (count may be 0).
    [[nodiscard]] bool contains(std::uint64_t slba, std::uint64_t count) const noexcept
    {
        return slba <= blocks_ && count <= blocks_ - slba;
    }

    /// Bytes the host transfers in the data buffer for `count` blocks (metadata included when
    /// extended).
    [[nodiscard]] std::uint64_t data_transfer_bytes(std::uint64_t count) const noexcept
    {
        return count * unit_bytes_;
    }
    /// Bytes of the separate metadata buffer for `count` blocks (0 when extended or none).
    [[nodiscard]] std::uint64_t metadata_transfer_bytes(std::uint64_t count) const noexcept
    {
        return count * separate_metadata_bytes_;
    }
    /// Backend offset of block `lba`'s data (its data and metadata when extended).
    [[nodiscard]] std::uint64_t data_offset(std::uint64_t lba) const noexcept { return lba * unit_bytes_; }
    /// Backend offset of block `lba`'s separate metadata.
    [[nodiscard]] std::uint64_t metadata_offset(std::uint64_t lba) const noexcept
    {
        return blocks_ * block_bytes() + lba * metadata_bytes();
    }

    /// Format NVM: the new format applies at once; every block reads as deallocated afterwards
    /// (the caller erases the backend) and no block is uncorrectable.
    void set_format(std::uint8_t index, bool extended)
    {
        NVMEKIT_ASSERT(index < supported_lba_formats.size(), "lba format index out of range");
        const auto& format = supported_lba_formats[index];
        format_ = index;
        block_bytes_ = format.data_bytes;
        metadata_bytes_ = format.metadata_bytes;
        extended_ = extended && metadata_bytes_ != 0;
        unit_bytes_ = block_bytes_ + (extended_ ? metadata_bytes_ : 0U);
        separate_metadata_bytes_ = extended_ ? 0U : metadata_bytes_;
        blocks_ = backend_.capacity_bytes() / (std::uint64_t{format.data_bytes} + format.metadata_bytes);
        if (!uncorrectable_.empty()) {
            uncorrectable_.clear();
            ++uncorrectable_generation_;
        }
    }

    // ---- Write Uncorrectable (NVM Command Set 1.0 3.3.7) -------------------------------------

    /// Marks [slba, slba + count) uncorrectable; false when the range table is full.
    [[nodiscard]] bool mark_uncorrectable(std::uint64_t slba, std::uint64_t count)
    {
        if (count == 0) {
            return true;
        }
        std::uint64_t first = slba;
        std::uint64_t last = slba + count; // exclusive
        auto it = uncorrectable_.upper_bound(first);
        if (it != uncorrectable_.begin() && std::prev(it)->second >= first) {
            --it;
        }
        while (it != uncorrectable_.end() && it->first <= last) {
            first = std::min(first, it->first);
            last = std::max(last, it->second);
            it = uncorrectable_.erase(it);
        }
        if (uncorrectable_.size() >= options_.max_uncorrectable_ranges) {
            ++uncorrectable_generation_; // merged ranges were taken out above
            return false;
        }
        uncorrectable_.emplace(first, last);
        ++uncorrectable_generation_;
        return true;
    }

    /// Clears [slba, slba + count): the blocks were rewritten. May split one range in two, so it
    /// can fail when the table is full; the blocks then stay uncorrectable.
    [[nodiscard]] bool clear_uncorrectable(std::uint64_t slba, std::uint64_t count)
    {
        if (count == 0 || uncorrectable_.empty()) {
            return true;
        }
        const std::uint64_t last = slba + count;
        auto it = uncorrectable_.upper_bound(slba);
        if (it != uncorrectable_.begin()) {
            --it;
        }
        while (it != uncorrectable_.end() && it->first < last) {
            const auto [start, end] = *it;
            if (end <= slba) {
                ++it;
                continue;
            }
            if (start < slba && end > last && uncorrectable_.size() >= options_.max_uncorrectable_ranges) {
                return false;
            }
            it = uncorrectable_.erase(it);
            ++uncorrectable_generation_;
            if (start < slba) {
                uncorrectable_.emplace(start, slba);
            }
            if (end > last) {
                uncorrectable_.emplace(last, end);
                break;
            }
        }
        return true;
    }

    /// The first uncorrectable block in [slba, slba + count), if any.
    [[nodiscard]] std::optional<std::uint64_t> first_uncorrectable(std::uint64_t slba,
                                                                   std::uint64_t count) const
    {
        if (count == 0 || uncorrectable_.empty()) {
            return std::nullopt;
        }
        auto it = uncorrectable_.upper_bound(slba);
        if (it != uncorrectable_.begin() && std::prev(it)->second > slba) {
            return slba;
        }
        if (it != uncorrectable_.end() && it->first < slba + count) {
            return it->first;
        }
        return std::nullopt;
    }
    [[nodiscard]] std::size_t uncorrectable_ranges() const noexcept { return uncorrectable_.size(); }

    /// Calls `visit(first, end)` (end exclusive) for each uncorrectable range within
    /// [slba, end), clipped to it, in increasing LBA order.
    template <typename Visitor>
    void for_each_uncorrectable(std::uint64_t slba, std::uint64_t end, Visitor&& visit) const
    {
        auto it = uncorrectable_.upper_bound(slba);
        if (it != uncorrectable_.begin() && std::prev(it)->second > slba) {
            --it;
        }
        for (; it != uncorrectable_.end() && it->first < end; ++it) {
            visit(std::max(it->first, slba), std::min(it->second, end));
        }
    }
    /// Blocks marked uncorrectable now.
    [[nodiscard]] std::uint64_t uncorrectable_blocks() const noexcept
    {
        std::uint64_t blocks = 0;
        for (const auto& [start, end] : uncorrectable_) {
            blocks += end - start;
        }
        return blocks;
    }
    /// Counts changes of the uncorrectable ranges (Write Uncorrectable, writes over them, Format
    /// NVM), so the LBA Status Information log can tell its readers that it changed.
    [[nodiscard]] std::uint64_t uncorrectable_generation() const noexcept
    {
        return uncorrectable_generation_;
    }

    // ---- Identify ------------------------------------------------------------------------------

    /// What every namespace of the subsystem supports: Identify Namespace for NSID FFFFFFFFh
    /// (Base 2.0 5.17.2.1), the LBA formats a host picks from when it creates a namespace, with
    /// `mc` the metadata placements of the controller that reports it (metadata_placements). Size,
    /// capacity, format in use and identifiers are zero.
    [[nodiscard]] static spec::identify_namespace
    common_capabilities(spec::metadata_capabilities mc = metadata_placements(false))
    {
        spec::identify_namespace data{};
        data.nlbaf = static_cast<std::uint8_t>(supported_lba_formats.size() - 1U);
        data.mc = mc;
        data.dlfeat.set(spec::deallocate_features::read_behavior, spec::deallocated_read_value::zeroes)
            .set(spec::deallocate_features::write_zeroes_deallocate, true);
        data.nmic.set(spec::namespace_multipath_caps::shared, true);
        for (std::size_t i = 0; i < supported_lba_formats.size(); ++i) {
            data.lbaf[i] =
                spec::lba_format{}
                    .with(spec::lba_format::ms, supported_lba_formats[i].metadata_bytes)
                    .with(spec::lba_format::lbads,
                          static_cast<std::uint8_t>(std::countr_zero(supported_lba_formats[i].data_bytes)));
        }
        return data;
    }

    /// Identify Namespace (CNS 00h), NVM Command Set 1.0 4.1.5.1, with `mc` the metadata
    /// placements of the controller that reports it.
    [[nodiscard]] spec::identify_namespace
    identify(spec::metadata_capabilities mc = metadata_placements(false)) const
    {
        auto data = common_capabilities(mc);
        data.nsze = blocks_;
        data.ncap = blocks_;
        data.nuse = blocks_;
        // NSFEAT stays 0: not thin provisioned (NUSE equals NSZE).
        data.flbas.set_format_index(format_).set(spec::formatted_lba_size::extended_metadata, extended_);
        data.nmic.set(spec::namespace_multipath_caps::shared, options_.shared);
        // MSSRL, MCL and MSRC are the controller's Copy limits (command_sets/nvm.hpp): it fills them.
        data.nvmcap.set(backend_.capacity_bytes());
        data.nguid = identifiers_.nguid;
        data.eui64 = identifiers_.eui64;
        return data;
    }

    /// NMIC bit 0: whether the namespace may be attached to several controllers at once.
    [[nodiscard]] bool shared() const noexcept { return options_.shared; }

    /// Namespace Identification Descriptor list (CNS 03h), Base 2.0 5.17.2.3.
    [[nodiscard]] spec::namespace_id_descriptor_list id_descriptors() const
    {
        spec::namespace_id_descriptor_list list{};
        std::size_t at = 0;
        const auto add = [&](spec::namespace_id_type type, std::span<const std::uint8_t> id) {
            const bool unset = std::all_of(id.begin(), id.end(), [](std::uint8_t b) { return b == 0; });
            if (unset && type != spec::namespace_id_type::csi) {
                return; // an all-zero identifier is not reported
            }
            list.bytes[at] = static_cast<std::uint8_t>(type);
            list.bytes[at + 1] = static_cast<std::uint8_t>(id.size());
            std::copy(id.begin(), id.end(), list.bytes.begin() + static_cast<std::ptrdiff_t>(at + 4));
            at += 4 + id.size();
        };
        add(spec::namespace_id_type::eui64, identifiers_.eui64);
        add(spec::namespace_id_type::nguid, identifiers_.nguid);
        add(spec::namespace_id_type::uuid, identifiers_.uuid);
        const std::array<std::uint8_t, 1> csi{static_cast<std::uint8_t>(spec::command_set_identifier::nvm)};
        add(spec::namespace_id_type::csi, csi);
        return list;
    }

    /// I/O Command Set specific Identify Namespace for the NVM command set (CNS 05h, CSI 00h).
    [[nodiscard]] spec::nvm_identify_namespace nvm_identify() const
    {
        return spec::nvm_identify_namespace{}; // no protection information: ELBAFs are all zero
    }

    /// I/O Command Set Independent Identify Namespace (CNS 08h), Base 2.0 5.17.2.9.
    [[nodiscard]] spec::independent_identify_namespace independent_identify() const
    {
        spec::independent_identify_namespace data{};
        data.nmic.set(spec::namespace_multipath_caps::shared, options_.shared);
        data.nstat.set(spec::namespace_status::ready, true);
        return data;
    }

    // ---- attachment ---------------------------------------------------------------------------

    [[nodiscard]] bool attached_to(std::uint16_t controller_id) const noexcept
    {
        return std::find(attached_.begin(), attached_.end(), controller_id) != attached_.end();
    }
    [[nodiscard]] std::span<const std::uint16_t> attached_controllers() const noexcept { return attached_; }
    /// Records the attachment; false when already attached.
    bool attach(std::uint16_t controller_id)
    {
        if (attached_to(controller_id)) {
            return false;
        }
        attached_.push_back(controller_id);
        return true;
    }
    /// Removes the attachment; false when not attached.
    bool detach(std::uint16_t controller_id)
    {
        const auto it = std::find(attached_.begin(), attached_.end(), controller_id);
        if (it == attached_.end()) {
            return false;
        }
        attached_.erase(it);
        return true;
    }

private:
    std::uint32_t nsid_;
    Backend backend_;
    namespace_identifiers identifiers_;
    namespace_options options_;
    std::uint8_t format_ = 0;
    bool extended_ = false;
    // Of the current format, kept at hand for the I/O path.
    std::uint32_t block_bytes_ = 0;
    std::uint32_t metadata_bytes_ = 0;
    std::uint32_t unit_bytes_ = 0;              ///< data transfer bytes per block
    std::uint32_t separate_metadata_bytes_ = 0; ///< metadata buffer bytes per block
    std::uint64_t blocks_ = 0;
    /// start -> end (exclusive), disjoint, not touching
    std::map<std::uint64_t, std::uint64_t> uncorrectable_;
    std::uint64_t uncorrectable_generation_ = 0;
    std::vector<std::uint16_t> attached_;
};

NVMEKIT_END_NAMESPACE
