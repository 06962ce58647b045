#pragma once
/// Data pointers: PRP entries (Base 2.0 4.1.1) and SGL descriptors (Base 2.0 4.1.2).
///
/// The page arithmetic takes the memory page size in bytes (2^(12 + CC.MPS)); every function
/// that takes one expects a power of two, which `is_valid_prp_page_size` checks.

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nvmekit/config.hpp>
#include <nvmekit/spec/bits.hpp>
#include <nvmekit/spec/queue_entries.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace spec {

/// Whether `page_size` is a memory page size CC.MPS can select: a power of two from 4 KiB
/// (MPS 0) to 128 MiB (MPS 15).
[[nodiscard]] constexpr bool is_valid_prp_page_size(std::uint64_t page_size) noexcept
{
    return std::has_single_bit(page_size) && page_size >= (std::uint64_t{1} << 12) &&
           page_size <= (std::uint64_t{1} << 27);
}

/// A PRP entry: Page Base Address and Offset (PBAO). The offset is the low log2(page size)
/// bits; bits 01:00 are always 00b (dword alignment).
struct prp_entry : word<prp_entry, std::uint64_t> {
    using word::word;

    /// Offset of the entry within its memory page.
    [[nodiscard]] constexpr std::uint64_t offset(std::uint64_t page_size) const noexcept
    {
        return raw & (page_size - 1);
    }
    /// Address of the memory page the entry points into.
    [[nodiscard]] constexpr std::uint64_t page_base(std::uint64_t page_size) const noexcept
    {
        return raw & ~(page_size - 1);
    }
    /// Bits 01:00 cleared, as every PRP entry requires.
    [[nodiscard]] constexpr bool is_dword_aligned() const noexcept { return (raw & 0x3U) == 0; }
    /// Bits 02:00 cleared: PRP List entries are 8 bytes, so a PRP List pointer is qword aligned.
    [[nodiscard]] constexpr bool is_qword_aligned() const noexcept { return (raw & 0x7U) == 0; }
    /// Offset zero, as required of every entry other than PRP1 and a PRP List pointer.
    [[nodiscard]] constexpr bool is_page_aligned(std::uint64_t page_size) const noexcept
    {
        return offset(page_size) == 0;
    }
};
static_assert(sizeof(prp_entry) == 8);
static_assert(is_wire_type_v<prp_entry>);

/// Number of PRP entries a PRP List page holds (each entry is 8 bytes).
[[nodiscard]] constexpr std::uint64_t prp_list_entries_per_page(std::uint64_t page_size) noexcept
{
    return page_size / sizeof(std::uint64_t);
}

/// Number of memory pages, and so of PRP entries, that a transfer of `length` bytes touches
/// when it starts at PRP1 `first` (only the offset of `first` matters). Zero for an empty
/// transfer.
[[nodiscard]] constexpr std::uint64_t prp_entry_count(prp_entry first, std::uint64_t length,
                                                      std::uint64_t page_size) noexcept
{
    if (length == 0) {
        return 0;
    }
    const std::uint64_t first_page_bytes = page_size - first.offset(page_size);
    if (length <= first_page_bytes) {
        return 1;
    }
    return 2 + (length - first_page_bytes - 1) / page_size;
}

/// What PRP2 holds for a transfer (Base 2.0 4.2, PRP Entry 2).
enum class prp2_role : std::uint8_t {
    unused,       ///< the transfer stays within the first memory page; PRP2 is reserved
    data_page,    ///< the transfer crosses exactly one page boundary; PRP2 is the second page
    list_pointer, ///< the transfer crosses more than one page boundary; PRP2 points to a PRP List
};

[[nodiscard]] constexpr prp2_role prp2_role_for(prp_entry first, std::uint64_t length,
                                                std::uint64_t page_size) noexcept
{
    const std::uint64_t entries = prp_entry_count(first, length, page_size);
    if (entries <= 1) {
        return prp2_role::unused;
    }
    return entries == 2 ? prp2_role::data_page : prp2_role::list_pointer;
}

[[nodiscard]] constexpr bool prp2_is_list_pointer(prp_entry first, std::uint64_t length,
                                                  std::uint64_t page_size) noexcept
{
    return prp2_role_for(first, length, page_size) == prp2_role::list_pointer;
}

/// Number of data entries the PRP List(s) must supply: every page after the first when PRP2 is
/// a list pointer, otherwise none. Chained list pages spend their last entry on the next list.
[[nodiscard]] constexpr std::uint64_t prp_list_data_entry_count(prp_entry first, std::uint64_t length,
                                                                std::uint64_t page_size) noexcept
{
    return prp2_is_list_pointer(first, length, page_size) ? prp_entry_count(first, length, page_size) - 1 : 0;
}

/// Size of every SGL descriptor, and the unit of an SGL segment's length.
inline constexpr std::size_t sgl_descriptor_size = 16;

/// SGL Descriptor Type (SGL Identifier bits 07:04), Base 2.0 4.1.2.
enum class sgl_descriptor_type : std::uint8_t {
    data_block = 0x0,
    bit_bucket = 0x1,
    segment = 0x2,
    last_segment = 0x3,
    keyed_data_block = 0x4,
    transport_data_block = 0x5,
    vendor_specific = 0xf,
};

/// SGL Descriptor Sub Type (SGL Identifier bits 03:00). Ah to Fh are transport specific (for
/// example NVMe/TCP uses Ah in Transport Data Block descriptors): see `is_transport_specific`.
enum class sgl_descriptor_subtype : std::uint8_t {
    address = 0x0, ///< the Address field is a memory address
    offset = 0x1,  ///< the Address field is an offset (e.g. into in-capsule data)
};

[[nodiscard]] constexpr bool is_transport_specific(sgl_descriptor_subtype subtype) noexcept
{
    const auto value = static_cast<std::uint8_t>(subtype);
    return value >= 0xa && value <= 0xf;
}

/// Descriptor name as nvmekit prints it, or an empty view for a reserved type.
[[nodiscard]] constexpr std::string_view name(sgl_descriptor_type type) noexcept
{
    using enum sgl_descriptor_type;
    switch (type) {
    case data_block: return "DATA_BLOCK";
    case bit_bucket: return "BIT_BUCKET";
    case segment: return "SEGMENT";
    case last_segment: return "LAST_SEGMENT";
    case keyed_data_block: return "KEYED_DATA_BLOCK";
    case transport_data_block: return "TRANSPORT_DATA_BLOCK";
    case vendor_specific: return "VENDOR_SPECIFIC";
    }
    return {};
}

/// Sub type name: "ADDRESS", "OFFSET", "TRANSPORT_SPECIFIC" (Ah-Fh), or empty when reserved.
[[nodiscard]] constexpr std::string_view name(sgl_descriptor_subtype subtype) noexcept
{
    switch (subtype) {
    case sgl_descriptor_subtype::address: return "ADDRESS";
    case sgl_descriptor_subtype::offset: return "OFFSET";
    }
    return is_transport_specific(subtype) ? std::string_view{"TRANSPORT_SPECIFIC"} : std::string_view{};
}

/// SGL Identifier, byte 15 of every SGL descriptor.
struct sgl_identifier : word<sgl_identifier, std::uint8_t> {
    using word::word;
    static constexpr field<0, 4, sgl_descriptor_subtype> subtype{}; // Descriptor Sub Type: bits 03:00
    static constexpr field<4, 4, sgl_descriptor_type> type{};       // Descriptor Type: bits 07:04
};
static_assert(sizeof(sgl_identifier) == 1);

/// An SGL descriptor (16 bytes), generic layout. The static makers build each descriptor type;
/// the accessors read the fields each type defines:
///
/// | type                 | bytes 07:00 | bytes 11:08            | bytes 14:12          |
/// |----------------------|-------------|------------------------|----------------------|
/// | Data Block           | Address     | Length                 | reserved             |
/// | Bit Bucket           | reserved    | Length                 | reserved             |
/// | (Last) Segment       | Address     | Length (multiple of 16)| reserved             |
/// | Keyed Data Block     | Address     | Length 10:08, Key 14:11                       |
/// | Transport Data Block | reserved    | Length                 | reserved             |
struct sgl_descriptor {
    std::uint64_t address;              // bytes 07:00 Address
    std::uint32_t length;               // bytes 11:08 Length (Keyed: Length 10:08, Key bits 07:00 in byte 11)
    std::array<std::uint8_t, 3> rsvd12; // bytes 14:12 reserved (Keyed: Key bits 31:08)
    sgl_identifier identifier;          // byte 15 SGL Identifier

    [[nodiscard]] constexpr sgl_descriptor_type type() const noexcept
    {
        return identifier.get(sgl_identifier::type);
    }
    [[nodiscard]] constexpr sgl_descriptor_subtype subtype() const noexcept
    {
        return identifier.get(sgl_identifier::subtype);
    }

    /// Length of a Keyed SGL Data Block descriptor: bytes 10:08.
    [[nodiscard]] constexpr std::uint32_t keyed_length() const noexcept { return length & 0x00ff'ffffU; }
    /// Key of a Keyed SGL Data Block descriptor: bytes 14:11.
    [[nodiscard]] constexpr std::uint32_t key() const noexcept
    {
        return (length >> 24) | (load_le<std::uint32_t>(rsvd12, 0) << 8);
    }

    /// SGL Data Block descriptor.
    [[nodiscard]] static constexpr sgl_descriptor
    data_block(std::uint64_t address, std::uint32_t length,
               sgl_descriptor_subtype subtype = sgl_descriptor_subtype::address) noexcept
    {
        return make(sgl_descriptor_type::data_block, subtype, address, length);
    }
    /// SGL Bit Bucket descriptor: `length` bytes of read data are discarded.
    [[nodiscard]] static constexpr sgl_descriptor bit_bucket(std::uint32_t length) noexcept
    {
        return make(sgl_descriptor_type::bit_bucket, sgl_descriptor_subtype::address, 0, length);
    }
    /// SGL Segment descriptor: the next segment, `length` bytes of descriptors, is not the last.
    [[nodiscard]] static constexpr sgl_descriptor segment(std::uint64_t address,
                                                          std::uint32_t length) noexcept
    {
        return make(sgl_descriptor_type::segment, sgl_descriptor_subtype::address, address, length);
    }
    /// SGL Last Segment descriptor: the next segment is the last one.
    [[nodiscard]] static constexpr sgl_descriptor last_segment(std::uint64_t address,
                                                               std::uint32_t length) noexcept
    {
        return make(sgl_descriptor_type::last_segment, sgl_descriptor_subtype::address, address, length);
    }
    /// Keyed SGL Data Block descriptor; `length` keeps its low 24 bits.
    [[nodiscard]] static constexpr sgl_descriptor
    keyed_data_block(std::uint64_t address, std::uint32_t length, std::uint32_t key,
                     sgl_descriptor_subtype subtype = sgl_descriptor_subtype::address) noexcept
    {
        sgl_descriptor descriptor = make(sgl_descriptor_type::keyed_data_block, subtype, address,
                                         (length & 0x00ff'ffffU) | (key << 24));
        store_le(descriptor.rsvd12, 0, key >> 8);
        return descriptor;
    }
    /// Transport SGL Data Block descriptor: the transport moves `length` bytes (e.g. NVMe/TCP
    /// with subtype Ah: C2HData and R2T/H2CData).
    [[nodiscard]] static constexpr sgl_descriptor
    transport_data_block(std::uint32_t length, sgl_descriptor_subtype subtype) noexcept
    {
        return make(sgl_descriptor_type::transport_data_block, subtype, 0, length);
    }

    friend constexpr bool operator==(const sgl_descriptor&, const sgl_descriptor&) noexcept = default;

private:
    [[nodiscard]] static constexpr sgl_descriptor make(sgl_descriptor_type type,
                                                       sgl_descriptor_subtype subtype, std::uint64_t address,
                                                       std::uint32_t length) noexcept
    {
        return sgl_descriptor{
            address,
            length,
            {},
            sgl_identifier{}.with(sgl_identifier::type, type).with(sgl_identifier::subtype, subtype)};
    }
};
static_assert(sizeof(sgl_descriptor) == sgl_descriptor_size);
static_assert(offsetof(sgl_descriptor, address) == 0);
static_assert(offsetof(sgl_descriptor, length) == 8);
static_assert(offsetof(sgl_descriptor, rsvd12) == 12);
static_assert(offsetof(sgl_descriptor, identifier) == 15);
static_assert(is_wire_type_v<sgl_descriptor>);

/// The command's DPTR (SQE bytes 39:24) read as SGL1.
[[nodiscard]] constexpr sgl_descriptor to_sgl_descriptor(const data_pointer& pointer) noexcept
{
    return std::bit_cast<sgl_descriptor>(pointer);
}

/// An SGL descriptor stored as a command's DPTR.
[[nodiscard]] constexpr data_pointer to_data_pointer(const sgl_descriptor& descriptor) noexcept
{
    return std::bit_cast<data_pointer>(descriptor);
}

/// Whether a (Last) Segment descriptor's Length is valid: a non-zero whole number of
/// descriptors. Anything else is an Invalid SGL Segment Descriptor.
[[nodiscard]] constexpr bool is_valid_sgl_segment_length(std::uint32_t length) noexcept
{
    return length != 0 && length % sgl_descriptor_size == 0;
}

/// Number of descriptors in a segment of `length` bytes.
[[nodiscard]] constexpr std::uint32_t sgl_segment_descriptor_count(std::uint32_t length) noexcept
{
    return static_cast<std::uint32_t>(length / sgl_descriptor_size);
}

/// Segment and Last Segment descriptors point to the next segment. The last descriptor of a
/// segment that is not the last is one of them; a Last Segment holds none.
[[nodiscard]] constexpr bool is_segment_pointer(sgl_descriptor_type type) noexcept
{
    return type == sgl_descriptor_type::segment || type == sgl_descriptor_type::last_segment;
}

/// Descriptor types that describe data to transfer (or, for the Bit Bucket, to discard).
[[nodiscard]] constexpr bool is_data_descriptor(sgl_descriptor_type type) noexcept
{
    using enum sgl_descriptor_type;
    return type == data_block || type == bit_bucket || type == keyed_data_block ||
           type == transport_data_block;
}

} // namespace spec
NVMEKIT_END_NAMESPACE
