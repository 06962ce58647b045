#pragma once
/// Submission Queue Entry (64 bytes) and Completion Queue Entry (16 bytes), Base 2.0 4.2 and 4.6.

#include <bit>
#include <cstddef>
#include <cstdint>

#include <nvmekit/config.hpp>
#include <nvmekit/spec/bits.hpp>
#include <nvmekit/spec/status.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace spec {

/// Fused Operation (CDW0.FUSE), Base 2.0 Figure 88.
enum class fused_operation : std::uint8_t {
    normal = 0b00,
    first = 0b01,
    second = 0b10,
};

/// PRP or SGL for Data Transfer (CDW0.PSDT), Base 2.0 Figure 88.
enum class data_pointer_type : std::uint8_t {
    prp = 0b00,
    sgl_contiguous_metadata = 0b01, ///< SGLs for data; MPTR is the address of a contiguous buffer
    sgl_metadata_descriptor = 0b10, ///< SGLs for data; MPTR is the address of an SGL segment
};

/// Command Dword 0, common to every command, Base 2.0 Figure 88.
struct command_dword0 : word<command_dword0, std::uint32_t> {
    using word::word;
    static constexpr field<0, 8, std::uint8_t> opc{};        // OPC: bits 07:00
    static constexpr field<8, 2, fused_operation> fuse{};    // FUSE: bits 09:08
    static constexpr field<14, 2, data_pointer_type> psdt{}; // PSDT: bits 15:14
    static constexpr field<16, 16, std::uint16_t> cid{};     // CID: bits 31:16
};

/// Data Pointer (DPTR, SQE bytes 39:24): two PRP entries, or one SGL descriptor (see data_pointer.hpp).
struct data_pointer {
    std::uint64_t prp1; // bytes 07:00 (PRP Entry 1, or SGL descriptor bytes 07:00)
    std::uint64_t prp2; // bytes 15:08 (PRP Entry 2, or SGL descriptor bytes 15:08)
    friend constexpr bool operator==(const data_pointer&, const data_pointer&) noexcept = default;
};
static_assert(sizeof(data_pointer) == 16);
static_assert(is_wire_type_v<data_pointer>);

/// Submission Queue Entry, Base 2.0 Figure 87. Command-specific dwords are decoded by the views
/// in commands.hpp.
struct submission_queue_entry {
    command_dword0 cdw0; // bytes 03:00
    std::uint32_t nsid;  // bytes 07:04 (Fabrics: FCTYPE in byte 04)
    std::uint32_t cdw2;  // bytes 11:08
    std::uint32_t cdw3;  // bytes 15:12
    std::uint64_t mptr;  // bytes 23:16 Metadata Pointer
    data_pointer dptr;   // bytes 39:24
    std::uint32_t cdw10; // bytes 43:40
    std::uint32_t cdw11; // bytes 47:44
    std::uint32_t cdw12; // bytes 51:48
    std::uint32_t cdw13; // bytes 55:52
    std::uint32_t cdw14; // bytes 59:56
    std::uint32_t cdw15; // bytes 63:60

    [[nodiscard]] constexpr std::uint8_t opcode() const noexcept { return cdw0.get(command_dword0::opc); }
    [[nodiscard]] constexpr std::uint16_t command_id() const noexcept
    {
        return cdw0.get(command_dword0::cid);
    }
    [[nodiscard]] constexpr spec::data_pointer_type pointer_type() const noexcept
    {
        return cdw0.get(command_dword0::psdt);
    }

    friend constexpr bool operator==(const submission_queue_entry&,
                                     const submission_queue_entry&) noexcept = default;
};
static_assert(sizeof(submission_queue_entry) == 64);
static_assert(is_wire_type_v<submission_queue_entry>);
static_assert(offsetof(submission_queue_entry, nsid) == 4);
static_assert(offsetof(submission_queue_entry, cdw2) == 8);
static_assert(offsetof(submission_queue_entry, mptr) == 16);
static_assert(offsetof(submission_queue_entry, dptr) == 24);
static_assert(offsetof(submission_queue_entry, cdw10) == 40);
static_assert(offsetof(submission_queue_entry, cdw15) == 60);

using sqe = submission_queue_entry;

/// Completion Queue Entry, Base 2.0 Figure 89.
struct completion_queue_entry {
    std::uint32_t dw0;          // bytes 03:00 command specific
    std::uint32_t dw1;          // bytes 07:04 command specific
    std::uint16_t sq_head;      // bytes 09:08 SQHD
    std::uint16_t sq_id;        // bytes 11:10 SQID
    std::uint16_t cid;          // bytes 13:12 CID
    std::uint16_t status_phase; // bytes 15:14: P bit 00, Status bits 15:01

    [[nodiscard]] constexpr bool phase() const noexcept { return (status_phase & 1U) != 0; }
    [[nodiscard]] constexpr spec::status status() const noexcept
    {
        return spec::status{static_cast<std::uint16_t>(status_phase >> 1)};
    }
    constexpr void set_status(spec::status value, bool phase) noexcept
    {
        status_phase = static_cast<std::uint16_t>((value.raw << 1) | (phase ? 1U : 0U));
    }

    friend constexpr bool operator==(const completion_queue_entry&,
                                     const completion_queue_entry&) noexcept = default;
};
static_assert(sizeof(completion_queue_entry) == 16);
static_assert(is_wire_type_v<completion_queue_entry>);
static_assert(offsetof(completion_queue_entry, sq_head) == 8);
static_assert(offsetof(completion_queue_entry, sq_id) == 10);
static_assert(offsetof(completion_queue_entry, cid) == 12);
static_assert(offsetof(completion_queue_entry, status_phase) == 14);

using cqe = completion_queue_entry;

} // namespace spec
NVMEKIT_END_NAMESPACE
