#pragma once
/// The SGL walker: turns a command's SGL (SGL1 in DPTR, and the segments it leads to) and its
/// metadata pointer into host memory ranges, checking the SGL rules of Base 2.0 4.1.2 for NVMe
/// over PCIe. Also the entry points that pick PRPs or SGLs by CDW0.PSDT.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>

#include <nvmekit/config.hpp>
#include <nvmekit/contracts/dma.hpp>
#include <nvmekit/data/host_ranges.hpp>
#include <nvmekit/data/prp_walker.hpp>
#include <nvmekit/spec/data_pointer.hpp>
#include <nvmekit/spec/identify.hpp>
#include <nvmekit/spec/queue_entries.hpp>
#include <nvmekit/spec/status.hpp>

NVMEKIT_BEGIN_NAMESPACE

/// How to walk one SGL.
struct sgl_walk_options {
    /// Which way the data moves. A Bit Bucket in a host-to-controller transfer has no effect
    /// (Base 2.0 4.1.2, SGL Bit Bucket descriptor).
    transfer_direction direction;
    /// Whether Bit Bucket descriptors are supported (SGLS bit 16); if not, a Bit Bucket is an
    /// SGL Descriptor Type Invalid.
    bool bit_bucket_supported = true;
    /// Descriptors read per DMA read of a segment, 1 to 256 (the local buffer holds 256); larger
    /// values read 256, 0 asserts (and reads 1 when assertions are off).
    std::size_t max_segment_descriptors = 256;
    /// Bound on the descriptors of all the segments that (Last) Segment descriptors point to, for
    /// one SGL (SGL1 itself, or the descriptor at MPTR, is not counted). Beyond it: Invalid
    /// Number of SGL Descriptors.
    std::size_t max_descriptors = 1024;
    /// Require dword alignment and granularity of Data Blocks (SGLS bits 01:00 = 10b): a Data
    /// Block whose Address or Length has bits 01:00 set is SGL Data Block Granularity Invalid.
    bool dword_granularity = false;
    /// Take an SGL that describes more than the transfer (SGLS bit 18): the walk stops once
    /// `length` bytes are described, cutting the range that crosses `length` short and reading no
    /// descriptor after it. Without it the SGL must describe exactly `length` bytes. Either way
    /// one that describes less is a length error.
    bool excess_length = false;
};

/// What the SGL walker implements, for Identify Controller SGLS (Base 2.0 Identify Controller
/// bytes 539:536) and for the controller's own checks.
struct sgl_walker_capabilities {
    /// Keyed SGL Data Block descriptors (SGLS bit 02): fabrics only, SGL Descriptor Type Invalid.
    static constexpr bool keyed_data_block = false;
    /// Transport SGL Data Block descriptors (SGLS bit 21): SGL Descriptor Type Invalid.
    static constexpr bool transport_data_block = false;
    /// Offset sub type (SGLS bit 20): reserved on PCIe, SGL Descriptor Type Invalid.
    static constexpr bool address_as_offset = false;
    /// PSDT 01b with a byte aligned MPTR (SGLS bit 17): supported, no alignment checked.
    static constexpr bool metadata_byte_aligned = true;
    /// PSDT 10b, MPTR holding the address of a one-descriptor SGL segment (SGLS bit 19): supported.
    static constexpr bool metadata_sgl = true;
    /// Alignment of an SGL segment and of MPTR with PSDT 10b: qword (Base 2.0 4.1.2).
    static constexpr std::uint64_t segment_alignment = 8;
    /// Alignment of MPTR with PSDT 00b: dword (Base 2.0 4.2, Metadata Pointer).
    static constexpr std::uint64_t prp_metadata_alignment = 4;
};

/// The SGLS value (Identify Controller bytes 539:536) that tells the host what walk_sgl accepts
/// with `options` (bit 18 from `options.excess_length`).
[[nodiscard]] constexpr spec::sgl_support sgl_support_for(const sgl_walk_options& options) noexcept
{
    using capabilities = sgl_walker_capabilities;
    spec::sgl_support sgls{};
    sgls.set(spec::sgl_support::support, options.dword_granularity
                                             ? spec::sgl_data_block_support::supported_dword_aligned
                                             : spec::sgl_data_block_support::supported);
    sgls.set(spec::sgl_support::keyed_data_block, capabilities::keyed_data_block);
    sgls.set(spec::sgl_support::bit_bucket, options.bit_bucket_supported);
    sgls.set(spec::sgl_support::metadata_byte_aligned, capabilities::metadata_byte_aligned);
    sgls.set(spec::sgl_support::length_larger_than_data, options.excess_length);
    sgls.set(spec::sgl_support::metadata_sgl, capabilities::metadata_sgl);
    sgls.set(spec::sgl_support::address_as_offset, capabilities::address_as_offset);
    sgls.set(spec::sgl_support::transport_data_block, capabilities::transport_data_block);
    return sgls;
}

namespace detail {
/// SGL descriptors the local buffer of a walk holds: 4 KiB.
inline constexpr std::size_t sgl_chunk_descriptors = 256;

/// Whether `length` bytes at `address` run past the end of the 64-bit address space (Address +
/// Length greater than 1_0000_0000_0000_0000h, Base 2.0 4.1.2). A zero length never does.
[[nodiscard]] constexpr bool wraps_address_space(std::uint64_t address, std::uint64_t length) noexcept
{
    return length != 0 && length - 1 > std::numeric_limits<std::uint64_t>::max() - address;
}

/// One SGL walk: the running totals and the status for a length error (data or metadata SGL).
class sgl_walk {
public:
    sgl_walk(std::uint64_t length, const sgl_walk_options& options, spec::status length_invalid,
             host_range_list& out) noexcept
        : length_{length}, options_{options}, length_invalid_{length_invalid}, out_{out}
    {}

    /// Walks the SGL whose first descriptor is `first`.
    template <DmaProvider Dma>
    [[nodiscard]] spec::status run(Dma& dma, const spec::sgl_descriptor& first)
    {
        if (!spec::is_segment_pointer(first.type())) {
            const spec::status status = add_data(first);
            return status.is_success() ? finish() : status;
        }
        NVMEKIT_ASSERT(options_.max_segment_descriptors >= 1, "walk_sgl: max_segment_descriptors is 0");
        const std::size_t chunk_limit =
            std::clamp<std::size_t>(options_.max_segment_descriptors, 1, sgl_chunk_descriptors);
        std::array<spec::sgl_descriptor, sgl_chunk_descriptors> buffer;
        std::size_t budget = options_.max_descriptors;
        spec::sgl_descriptor pointer = first;
        for (;;) {
            if (const spec::status status = check_segment_pointer(pointer); !status.is_success()) {
                return status;
            }
            const bool last_segment = pointer.type() == spec::sgl_descriptor_type::last_segment;
            const std::size_t count = spec::sgl_segment_descriptor_count(pointer.length);
            if (count > budget) {
                return spec::generic_status::invalid_sgl_descriptor_count;
            }
            budget -= count;
            bool has_next = false;
            spec::sgl_descriptor next{};
            for (std::size_t done = 0; done < count;) {
                const std::size_t chunk = std::min(count - done, chunk_limit);
                const std::span<spec::sgl_descriptor> destination{buffer.data(), chunk};
                if (dma.read(pointer.address + done * spec::sgl_descriptor_size,
                             std::as_writable_bytes(destination))) {
                    return spec::generic_status::data_transfer_error;
                }
                for (std::size_t i = 0; i < chunk; ++i) {
                    const spec::sgl_descriptor& descriptor = buffer[i];
                    if (spec::is_segment_pointer(descriptor.type())) {
                        // Base 2.0 4.1.2: a last segment holds no (Last) Segment descriptor; in
                        // another segment only its last descriptor may be one.
                        if (last_segment) {
                            return spec::generic_status::invalid_sgl_segment_descriptor;
                        }
                        if (done + i != count - 1) {
                            return spec::generic_status::invalid_sgl_descriptor_count;
                        }
                        next = descriptor;
                        has_next = true;
                        continue;
                    }
                    if (const spec::status status = add_data(descriptor); !status.is_success()) {
                        return status;
                    }
                    if (options_.excess_length && complete()) {
                        return spec::status::success(); // the rest of the SGL is not used
                    }
                }
                done += chunk;
            }
            if (last_segment) {
                return finish();
            }
            // A Segment descriptor says the segment it points to is not the last one, so that
            // segment must end with a (Last) Segment descriptor.
            if (!has_next) {
                return spec::generic_status::invalid_sgl_segment_descriptor;
            }
            pointer = next;
        }
    }

private:
    [[nodiscard]] spec::status check_segment_pointer(const spec::sgl_descriptor& pointer) const noexcept
    {
        if (pointer.subtype() != spec::sgl_descriptor_subtype::address) {
            return spec::generic_status::sgl_descriptor_type_invalid;
        }
        if (!spec::is_valid_sgl_segment_length(pointer.length) ||
            pointer.address % sgl_walker_capabilities::segment_alignment != 0) {
            return spec::generic_status::invalid_sgl_segment_descriptor;
        }
        if (wraps_address_space(pointer.address, pointer.length)) {
            return length_invalid_;
        }
        return spec::status::success();
    }

    [[nodiscard]] spec::status add_data(const spec::sgl_descriptor& descriptor)
    {
        switch (descriptor.type()) {
        case spec::sgl_descriptor_type::data_block:
            if (descriptor.subtype() != spec::sgl_descriptor_subtype::address) {
                return spec::generic_status::sgl_descriptor_type_invalid;
            }
            if (wraps_address_space(descriptor.address, descriptor.length)) {
                return length_invalid_;
            }
            if (options_.dword_granularity && ((descriptor.address | descriptor.length) & 0x3U) != 0) {
                return spec::generic_status::sgl_data_block_granularity_invalid;
            }
            return add_range(descriptor.address, descriptor.length, false);
        case spec::sgl_descriptor_type::bit_bucket:
            if (!options_.bit_bucket_supported ||
                descriptor.subtype() != spec::sgl_descriptor_subtype::address) {
                return spec::generic_status::sgl_descriptor_type_invalid;
            }
            if (options_.direction == transfer_direction::host_to_controller) {
                return spec::status::success();
            }
            return add_range(0, descriptor.length, true);
        default: return spec::generic_status::sgl_descriptor_type_invalid;
        }
    }

    [[nodiscard]] spec::status add_range(std::uint64_t address, std::uint32_t length, bool bit_bucket)
    {
        if (length > length_ - described_) {
            if (!options_.excess_length) {
                return length_invalid_;
            }
            length = static_cast<std::uint32_t>(length_ - described_);
        }
        if (!out_.push(address, length, bit_bucket)) {
            return spec::generic_status::invalid_sgl_descriptor_count;
        }
        described_ += length;
        return spec::status::success();
    }

    [[nodiscard]] spec::status finish() const noexcept
    {
        return complete() ? spec::status::success() : length_invalid_;
    }

    /// All `length_` bytes are described.
    [[nodiscard]] bool complete() const noexcept { return described_ == length_; }

    std::uint64_t length_;
    std::uint64_t described_ = 0;
    const sgl_walk_options& options_;
    spec::status length_invalid_;
    host_range_list& out_;
};

/// `length` bytes of contiguous host memory at `address` as ranges of at most 4 GiB - 1 bytes.
[[nodiscard]] inline spec::status push_contiguous(std::uint64_t address, std::uint64_t length,
                                                  host_range_list& out) noexcept
{
    if (wraps_address_space(address, length)) {
        return spec::generic_status::invalid_field;
    }
    while (length != 0) {
        const auto piece = static_cast<std::uint32_t>(
            std::min<std::uint64_t>(length, std::numeric_limits<std::uint32_t>::max()));
        if (!out.push(address, piece)) {
            return spec::generic_status::invalid_field;
        }
        address += piece;
        length -= piece;
    }
    return spec::status::success();
}
} // namespace detail

/// Walks the SGL whose first descriptor is `sgl1` (SGL Entry 1 of DPTR) for a transfer of
/// `length` bytes into `out`, which is cleared first.
///
/// Rules (Base 2.0 4.1.2, NVMe over PCIe):
/// - `length` 0: success with no range and no DMA; the SGL is not examined.
/// - Data Block (sub type Address) adds a range; Length 0 is valid and adds nothing. Address +
///   Length beyond 2^64 is Data SGL Length Invalid. With `dword_granularity`, Address or Length
///   bits 01:00 set is SGL Data Block Granularity Invalid.
/// - Bit Bucket (sub type 0h) adds a bit-bucket range for a controller-to-host transfer and has
///   no effect for a host-to-controller one; unsupported, it is SGL Descriptor Type Invalid.
/// - Segment / Last Segment (sub type Address): Length a non-zero multiple of 16 and Address
///   qword aligned, else Invalid SGL Segment Descriptor; Address + Length beyond 2^64 is Data SGL
///   Length Invalid. Only the last descriptor of a segment may be one, else Invalid Number of
///   SGL Descriptors; a last segment holds none, else Invalid SGL Segment Descriptor; a segment
///   reached through a Segment descriptor must end with one, else Invalid SGL Segment Descriptor.
/// - Keyed and Transport Data Blocks, the Offset sub type, reserved and vendor specific types:
///   SGL Descriptor Type Invalid.
/// - The Data Block and (controller-to-host) Bit Bucket lengths must add up to `length`; less is
///   Data SGL Length Invalid. More is Data SGL Length Invalid as soon as the walk passes
///   `length` (SGLS bit 18 cleared); with `options.excess_length` (SGLS bit 18 set) it is taken:
///   the range that crosses `length` is cut short there, and the walk ends, using no later
///   descriptor and reading no further segment (a segment already read in part is not checked
///   past that point).
/// - More descriptors than `options.max_descriptors`, or more ranges than `out` holds: Invalid
///   Number of SGL Descriptors. This bounds every walk, a cycle of segments included.
/// - Segments are read in pieces of `options.max_segment_descriptors` descriptors into a fixed
///   local buffer; a failed read is Data Transfer Error.
///
/// Statuses carry no DNR; the caller adds it. On error `out` holds an unspecified prefix.
template <DmaProvider Dma>
[[nodiscard]] spec::status walk_sgl(Dma& dma, const spec::sgl_descriptor& sgl1, std::uint64_t length,
                                    const sgl_walk_options& options, host_range_list& out)
{
    out.clear();
    if (length == 0) {
        return spec::status::success();
    }
    detail::sgl_walk walk{length, options, spec::generic_status::data_sgl_length_invalid, out};
    return walk.run(dma, sgl1);
}

/// Walks the data pointer of `sqe` by CDW0.PSDT (Base 2.0 4.2): 00b PRPs (walk_prp with
/// `page_size`), 01b and 10b an SGL with SGL1 in DPTR (walk_sgl), 11b (reserved) Invalid Field
/// in Command. Whether SGLs are allowed for the command (not for Admin commands over PCIe) is the
/// caller's check.
template <DmaProvider Dma>
[[nodiscard]] spec::status walk_data_pointer(Dma& dma, const spec::submission_queue_entry& sqe,
                                             std::uint64_t length, std::uint32_t page_size,
                                             const sgl_walk_options& options, host_range_list& out)
{
    switch (sqe.pointer_type()) {
    case spec::data_pointer_type::prp:
        return walk_prp(dma, sqe.dptr.prp1, sqe.dptr.prp2, length, page_size, out);
    case spec::data_pointer_type::sgl_contiguous_metadata:
    case spec::data_pointer_type::sgl_metadata_descriptor:
        return walk_sgl(dma, spec::to_sgl_descriptor(sqe.dptr), length, options, out);
    }
    out.clear();
    return spec::generic_status::invalid_field;
}

/// Walks the metadata pointer of `sqe` for `metadata_length` bytes of metadata into `out`,
/// which is cleared first; `metadata_length` 0 succeeds with no range and no DMA. By CDW0.PSDT
/// (Base 2.0 4.2, Metadata Pointer):
/// - 00b: MPTR is the address of one contiguous buffer and must be dword aligned, else Invalid
///   Field in Command.
/// - 01b: MPTR is the address of one contiguous buffer, byte aligned (SGLS bit 17 set).
/// - 10b: MPTR is the qword aligned address (else Invalid Field in Command) of an SGL segment
///   of exactly one descriptor, read with DMA (a failure is Data Transfer Error) and walked as
///   walk_sgl walks SGL1, with Metadata SGL Length Invalid for the length errors.
/// - 11b: Invalid Field in Command.
/// A contiguous buffer that runs past 2^64, or needs more ranges than `out` holds, is Invalid
/// Field in Command.
template <DmaProvider Dma>
[[nodiscard]] spec::status walk_metadata_pointer(Dma& dma, const spec::submission_queue_entry& sqe,
                                                 std::uint64_t metadata_length,
                                                 const sgl_walk_options& options, host_range_list& out)
{
    out.clear();
    if (metadata_length == 0) {
        return spec::status::success();
    }
    switch (sqe.pointer_type()) {
    case spec::data_pointer_type::prp:
        if (sqe.mptr % sgl_walker_capabilities::prp_metadata_alignment != 0) {
            return spec::generic_status::invalid_field;
        }
        return detail::push_contiguous(sqe.mptr, metadata_length, out);
    case spec::data_pointer_type::sgl_contiguous_metadata:
        return detail::push_contiguous(sqe.mptr, metadata_length, out);
    case spec::data_pointer_type::sgl_metadata_descriptor: {
        if (sqe.mptr % sgl_walker_capabilities::segment_alignment != 0) {
            return spec::generic_status::invalid_field;
        }
        spec::sgl_descriptor first{};
        if (dma_read_object(dma, sqe.mptr, first)) {
            return spec::generic_status::data_transfer_error;
        }
        detail::sgl_walk walk{metadata_length, options, spec::generic_status::metadata_sgl_length_invalid,
                              out};
        return walk.run(dma, first);
    }
    }
    return spec::generic_status::invalid_field;
}

NVMEKIT_END_NAMESPACE
