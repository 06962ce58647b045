#pragma once
/// Identify command data structures (Base 2.0 5.17, NVM Command Set 1.0 4.1.5): the CNS and CSI
/// values, Identify Controller with its power state descriptors, Identify Namespace with its LBA
/// formats, the NVM command set specific and command set independent structures, namespace ID
/// lists, namespace identification descriptors and the I/O Command Set data structure.
///
/// Every structure is exactly one Identify payload (4096 bytes) unless noted, so a handler fills
/// one and copies it to host memory as is.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include <nvmekit/config.hpp>
#include <nvmekit/spec/bits.hpp>
#include <nvmekit/spec/text.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace spec {

/// Size of every Identify data structure.
inline constexpr std::size_t identify_data_size = 4096;

/// Controller or Namespace Structure (CNS, Identify CDW10 bits 07:00), Base 2.0 5.17.
enum class cns : std::uint8_t {
    identify_namespace = 0x00,
    identify_controller = 0x01,
    active_namespace_list = 0x02,
    namespace_id_descriptor_list = 0x03,
    nvm_set_list = 0x04,
    io_command_set_namespace = 0x05,             ///< I/O Command Set specific Identify Namespace
    io_command_set_controller = 0x06,            ///< I/O Command Set specific Identify Controller
    io_command_set_active_namespace_list = 0x07, ///< active NSIDs of one I/O Command Set
    io_command_set_independent_namespace = 0x08, ///< I/O Command Set Independent Identify Namespace
    allocated_namespace_list = 0x10,
    allocated_namespace = 0x11,       ///< Identify Namespace for an allocated NSID
    namespace_controller_list = 0x12, ///< controllers attached to the NSID
    controller_list = 0x13,           ///< controllers in the NVM subsystem
    primary_controller_capabilities = 0x14,
    secondary_controller_list = 0x15,
    namespace_granularity_list = 0x16,
    uuid_list = 0x17,
    domain_list = 0x18,
    endurance_group_list = 0x19,
    io_command_set_allocated_namespace_list = 0x1a,
    io_command_set_allocated_namespace = 0x1b,
    io_command_set = 0x1c, ///< Identify I/O Command Set data structure
};

/// Name of a CNS value as the spec titles its data structure, or an empty view if reserved.
[[nodiscard]] constexpr std::string_view name(cns value) noexcept
{
    switch (value) {
    case cns::identify_namespace: return "Identify Namespace";
    case cns::identify_controller: return "Identify Controller";
    case cns::active_namespace_list: return "Active Namespace ID List";
    case cns::namespace_id_descriptor_list: return "Namespace Identification Descriptor List";
    case cns::nvm_set_list: return "NVM Set List";
    case cns::io_command_set_namespace: return "I/O Command Set Specific Identify Namespace";
    case cns::io_command_set_controller: return "I/O Command Set Specific Identify Controller";
    case cns::io_command_set_active_namespace_list:
        return "I/O Command Set Specific Active Namespace ID List";
    case cns::io_command_set_independent_namespace: return "I/O Command Set Independent Identify Namespace";
    case cns::allocated_namespace_list: return "Allocated Namespace ID List";
    case cns::allocated_namespace: return "Identify Namespace (Allocated NSID)";
    case cns::namespace_controller_list: return "Namespace Attached Controller List";
    case cns::controller_list: return "Controller List";
    case cns::primary_controller_capabilities: return "Primary Controller Capabilities";
    case cns::secondary_controller_list: return "Secondary Controller List";
    case cns::namespace_granularity_list: return "Namespace Granularity List";
    case cns::uuid_list: return "UUID List";
    case cns::domain_list: return "Domain List";
    case cns::endurance_group_list: return "Endurance Group List";
    case cns::io_command_set_allocated_namespace_list:
        return "I/O Command Set Specific Allocated Namespace ID List";
    case cns::io_command_set_allocated_namespace:
        return "I/O Command Set Specific Identify Namespace (Allocated NSID)";
    case cns::io_command_set: return "Identify I/O Command Set";
    }
    return {};
}

/// Command Set Identifier (CSI, Identify CDW11 bits 31:24), Base 2.0 5.17.
enum class command_set_identifier : std::uint8_t {
    nvm = 0x00,
    key_value = 0x01,
    zoned = 0x02,
};

/// Name of a CSI value, or an empty view if reserved.
[[nodiscard]] constexpr std::string_view name(command_set_identifier value) noexcept
{
    switch (value) {
    case command_set_identifier::nvm: return "NVM";
    case command_set_identifier::key_value: return "Key Value";
    case command_set_identifier::zoned: return "Zoned Namespace";
    }
    return {};
}

/// Scale of the Idle and Active Power fields (IPS, APS), Base 2.0 Figure 276.
enum class power_scale : std::uint8_t {
    not_reported = 0b00,
    hundred_microwatts = 0b01, ///< 0.0001 W units
    ten_milliwatts = 0b10,     ///< 0.01 W units
};

/// Power State Descriptor byte 03, Base 2.0 Figure 276.
struct power_state_flags : word<power_state_flags, std::uint8_t> {
    using word::word;
    static constexpr field<0, 1, bool> max_power_scale{}; // MXPS: bit 00 (MP in 0.0001 W, else 0.01 W)
    static constexpr field<1, 1, bool> non_operational{}; // NOPS: bit 01
};

/// One of the RRT, RRL, RWT, RWL bytes: a relative value in bits 04:00.
struct power_state_relative : word<power_state_relative, std::uint8_t> {
    using word::word;
    static constexpr field<0, 5, std::uint8_t> value{}; // bits 04:00
};

/// Power State Descriptor byte 18.
struct idle_power_attributes : word<idle_power_attributes, std::uint8_t> {
    using word::word;
    static constexpr field<6, 2, power_scale> scale{}; // IPS: bits 07:06
};

/// Power State Descriptor byte 22.
struct active_power_attributes : word<active_power_attributes, std::uint8_t> {
    using word::word;
    static constexpr field<0, 3, std::uint8_t> workload{}; // APW: bits 02:00
    static constexpr field<6, 2, power_scale> scale{};     // APS: bits 07:06
};

/// Power State Descriptor (32 bytes), Base 2.0 Figure 276.
struct power_state_descriptor {
    std::uint16_t mp;                   // bytes 01:00 MP Maximum Power (scale per MXPS)
    std::uint8_t rsvd2;                 // byte 02
    power_state_flags flags;            // byte 03 MXPS, NOPS
    std::uint32_t enlat;                // bytes 07:04 ENLAT Entry Latency (microseconds)
    std::uint32_t exlat;                // bytes 11:08 EXLAT Exit Latency (microseconds)
    power_state_relative rrt;           // byte 12 RRT Relative Read Throughput
    power_state_relative rrl;           // byte 13 RRL Relative Read Latency
    power_state_relative rwt;           // byte 14 RWT Relative Write Throughput
    power_state_relative rwl;           // byte 15 RWL Relative Write Latency
    std::uint16_t idlp;                 // bytes 17:16 IDLP Idle Power
    idle_power_attributes ips;          // byte 18 IPS Idle Power Scale
    std::uint8_t rsvd19;                // byte 19
    std::uint16_t actp;                 // bytes 21:20 ACTP Active Power
    active_power_attributes apw_aps;    // byte 22 APW Active Power Workload, APS Active Power Scale
    std::array<std::uint8_t, 9> rsvd23; // bytes 31:23
};
static_assert(sizeof(power_state_descriptor) == 32);
static_assert(offsetof(power_state_descriptor, mp) == 0);
static_assert(offsetof(power_state_descriptor, flags) == 3);
static_assert(offsetof(power_state_descriptor, enlat) == 4);
static_assert(offsetof(power_state_descriptor, exlat) == 8);
static_assert(offsetof(power_state_descriptor, rrt) == 12);
static_assert(offsetof(power_state_descriptor, rrl) == 13);
static_assert(offsetof(power_state_descriptor, rwt) == 14);
static_assert(offsetof(power_state_descriptor, rwl) == 15);
static_assert(offsetof(power_state_descriptor, idlp) == 16);
static_assert(offsetof(power_state_descriptor, ips) == 18);
static_assert(offsetof(power_state_descriptor, actp) == 20);
static_assert(offsetof(power_state_descriptor, apw_aps) == 22);
static_assert(offsetof(power_state_descriptor, rsvd23) == 23);
static_assert(is_wire_type_v<power_state_descriptor>);

/// CMIC Controller Multi-Path I/O and Namespace Sharing Capabilities (byte 76).
struct controller_multipath_caps : word<controller_multipath_caps, std::uint8_t> {
    using word::word;
    static constexpr field<0, 1, bool> multiple_ports{};         // MPORTS: bit 00
    static constexpr field<1, 1, bool> multiple_controllers{};   // MCTRS: bit 01
    static constexpr field<2, 1, bool> sriov_virtual_function{}; // FT: bit 02
    static constexpr field<3, 1, bool> ana_reporting{};          // ANARS: bit 03
};

/// OAES Optional Asynchronous Events Supported (bytes 95:92).
struct async_events_supported : word<async_events_supported, std::uint32_t> {
    using word::word;
    static constexpr field<8, 1, bool> namespace_attribute{};        // NSAN: bit 08
    static constexpr field<9, 1, bool> firmware_activation{};        // FAN: bit 09
    static constexpr field<11, 1, bool> ana_change{};                // ANACN: bit 11
    static constexpr field<12, 1, bool> predictable_latency{};       // PLEALCN: bit 12
    static constexpr field<13, 1, bool> lba_status_information{};    // LSIAN: bit 13
    static constexpr field<14, 1, bool> endurance_group_event{};     // EGEALCN: bit 14
    static constexpr field<27, 1, bool> zone_descriptor_changed{};   // ZDCN: bit 27
    static constexpr field<31, 1, bool> discovery_log_page_change{}; // DLPCN: bit 31
};

/// CTRATT Controller Attributes (bytes 99:96).
struct controller_attributes : word<controller_attributes, std::uint32_t> {
    using word::word;
    static constexpr field<0, 1, bool> host_identifier_128bit{};        // HIDS: bit 00
    static constexpr field<1, 1, bool> non_operational_permissive{};    // NOPSPM: bit 01
    static constexpr field<2, 1, bool> nvm_sets{};                      // NSETS: bit 02
    static constexpr field<3, 1, bool> read_recovery_levels{};          // RRLVLS: bit 03
    static constexpr field<4, 1, bool> endurance_groups{};              // EGS: bit 04
    static constexpr field<5, 1, bool> predictable_latency_mode{};      // PLM: bit 05
    static constexpr field<6, 1, bool> traffic_based_keep_alive{};      // TBKAS: bit 06
    static constexpr field<7, 1, bool> namespace_granularity{};         // NG: bit 07
    static constexpr field<8, 1, bool> sq_associations{};               // SQA: bit 08
    static constexpr field<9, 1, bool> uuid_list{};                     // ULIST: bit 09
    static constexpr field<10, 1, bool> multi_domain_subsystem{};       // MDS: bit 10
    static constexpr field<11, 1, bool> fixed_capacity_management{};    // FCM: bit 11
    static constexpr field<12, 1, bool> variable_capacity_management{}; // VCM: bit 12
    static constexpr field<13, 1, bool> delete_endurance_group{};       // DEG: bit 13
    static constexpr field<14, 1, bool> delete_nvm_set{};               // DNVMS: bit 14
    static constexpr field<15, 1, bool> extended_lba_formats{};         // ELBAS: bit 15
};

/// CNTRLTYPE Controller Type (byte 111).
enum class controller_type : std::uint8_t {
    not_reported = 0x0,
    io = 0x1,
    discovery = 0x2,
    admin = 0x3,
};

/// Short name of a controller type as the formatter prints it ("io", "discovery", ...), or an
/// empty view if reserved.
[[nodiscard]] constexpr std::string_view name(controller_type value) noexcept
{
    switch (value) {
    case controller_type::not_reported: return "not reported";
    case controller_type::io: return "io";
    case controller_type::discovery: return "discovery";
    case controller_type::admin: return "admin";
    }
    return {};
}

/// OACS Optional Admin Command Support (bytes 257:256).
struct admin_command_support : word<admin_command_support, std::uint16_t> {
    using word::word;
    static constexpr field<0, 1, bool> security{};                  // bit 00 Security Send/Receive
    static constexpr field<1, 1, bool> format_nvm{};                // bit 01 Format NVM
    static constexpr field<2, 1, bool> firmware{};                  // bit 02 Firmware Commit/Image Download
    static constexpr field<3, 1, bool> namespace_management{};      // bit 03 Namespace Management/Attachment
    static constexpr field<4, 1, bool> device_self_test{};          // bit 04 Device Self-test
    static constexpr field<5, 1, bool> directives{};                // bit 05 Directive Send/Receive
    static constexpr field<6, 1, bool> nvme_mi{};                   // bit 06 NVMe-MI Send/Receive
    static constexpr field<7, 1, bool> virtualization_management{}; // bit 07 Virtualization Management
    static constexpr field<8, 1, bool> doorbell_buffer_config{};    // bit 08 Doorbell Buffer Config
    static constexpr field<9, 1, bool> get_lba_status{};            // bit 09 Get LBA Status
    static constexpr field<10, 1, bool> lockdown{};                 // bit 10 Command and Feature Lockdown
};

/// FRMW Firmware Updates (byte 260).
struct firmware_updates : word<firmware_updates, std::uint8_t> {
    using word::word;
    static constexpr field<0, 1, bool> slot1_read_only{};          // bit 00
    static constexpr field<1, 3, std::uint8_t> slot_count{};       // bits 03:01 (1 to 7)
    static constexpr field<4, 1, bool> activation_without_reset{}; // bit 04
};

/// LPA Log Page Attributes (byte 261).
struct log_page_attributes : word<log_page_attributes, std::uint8_t> {
    using word::word;
    static constexpr field<0, 1, bool> smart_per_namespace{};   // bit 00
    static constexpr field<1, 1, bool> commands_effects{};      // bit 01 Commands Supported and Effects
    static constexpr field<2, 1, bool> extended_data{};         // bit 02 NUMDU, LPOL/LPOU in Get Log Page
    static constexpr field<3, 1, bool> telemetry{};             // bit 03 Telemetry logs and notices
    static constexpr field<4, 1, bool> persistent_event_log{};  // bit 04
    static constexpr field<5, 1, bool> supported_log_pages{};   // bit 05 LIDs 00h, 05h, 12h, 13h scope
    static constexpr field<6, 1, bool> telemetry_data_area_4{}; // bit 06
};

/// SQES or CQES: required and maximum queue entry sizes as powers of two (bytes 512, 513).
struct queue_entry_sizes : word<queue_entry_sizes, std::uint8_t> {
    using word::word;
    static constexpr field<0, 4, std::uint8_t> required{}; // bits 03:00
    static constexpr field<4, 4, std::uint8_t> maximum{};  // bits 07:04
};

/// ONCS Optional NVM Command Support (bytes 521:520).
struct nvm_command_support : word<nvm_command_support, std::uint16_t> {
    using word::word;
    static constexpr field<0, 1, bool> compare{};              // bit 00
    static constexpr field<1, 1, bool> write_uncorrectable{};  // bit 01
    static constexpr field<2, 1, bool> dataset_management{};   // bit 02
    static constexpr field<3, 1, bool> write_zeroes{};         // bit 03
    static constexpr field<4, 1, bool> save_select_features{}; // bit 04 Save in Set, Select in Get Features
    static constexpr field<5, 1, bool> reservations{};         // bit 05
    static constexpr field<6, 1, bool> timestamp{};            // bit 06
    static constexpr field<7, 1, bool> verify{};               // bit 07
    static constexpr field<8, 1, bool> copy{};                 // bit 08
};

/// FUSES Fused Operation Support (bytes 523:522).
struct fused_operation_support : word<fused_operation_support, std::uint16_t> {
    using word::word;
    static constexpr field<0, 1, bool> compare_and_write{}; // bit 00
};

/// FNA Format NVM Attributes (byte 524).
struct format_nvm_attributes : word<format_nvm_attributes, std::uint8_t> {
    using word::word;
    static constexpr field<0, 1, bool> format_all_namespaces{};       // bit 00
    static constexpr field<1, 1, bool> secure_erase_all_namespaces{}; // bit 01
    static constexpr field<2, 1, bool> cryptographic_erase{};         // bit 02
};

/// Flush with NSID FFFFFFFFh behaviour (VWC bits 02:01).
enum class flush_broadcast : std::uint8_t {
    not_indicated = 0b00,
    not_supported = 0b10,
    supported = 0b11,
};

/// VWC Volatile Write Cache (byte 525).
struct volatile_write_cache_support : word<volatile_write_cache_support, std::uint8_t> {
    using word::word;
    static constexpr field<0, 1, bool> present{};                   // bit 00
    static constexpr field<1, 2, flush_broadcast> flush_behavior{}; // bits 02:01
};

/// SGL support for the NVM command set (SGLS bits 01:00).
enum class sgl_data_block_support : std::uint8_t {
    not_supported = 0b00,
    supported = 0b01,               ///< no alignment or granularity requirement
    supported_dword_aligned = 0b10, ///< Data Blocks dword aligned and granular
};

/// SGLS SGL Support (bytes 539:536).
struct sgl_support : word<sgl_support, std::uint32_t> {
    using word::word;
    static constexpr field<0, 2, sgl_data_block_support> support{}; // bits 01:00
    static constexpr field<2, 1, bool> keyed_data_block{};          // bit 02
    static constexpr field<16, 1, bool> bit_bucket{};               // bit 16
    static constexpr field<17, 1, bool> metadata_byte_aligned{};    // bit 17 byte-aligned contiguous MPTR
    static constexpr field<18, 1, bool> length_larger_than_data{};  // bit 18
    static constexpr field<19, 1, bool> metadata_sgl{};             // bit 19 MPTR holds an SGL descriptor
    static constexpr field<20, 1, bool> address_as_offset{};        // bit 20
    static constexpr field<21, 1, bool> transport_data_block{};     // bit 21
};

/// Identify Controller data structure (CNS 01h), Base 2.0 Figure 275.
struct identify_controller {
    // clang-format off
    std::uint16_t vid;                          // bytes 01:00 VID PCI Vendor ID
    std::uint16_t ssvid;                        // bytes 03:02 SSVID PCI Subsystem Vendor ID
    std::array<char, 20> sn;                    // bytes 23:04 SN Serial Number (space padded)
    std::array<char, 40> mn;                    // bytes 63:24 MN Model Number (space padded)
    std::array<char, 8> fr;                     // bytes 71:64 FR Firmware Revision (space padded)
    std::uint8_t rab;                           // byte 72 RAB Recommended Arbitration Burst
    std::array<std::uint8_t, 3> ieee;           // bytes 75:73 IEEE OUI Identifier (little-endian)
    controller_multipath_caps cmic;             // byte 76 CMIC
    std::uint8_t mdts;                          // byte 77 MDTS Maximum Data Transfer Size (2^n CAP.MPSMIN pages)
    std::uint16_t cntlid;                       // bytes 79:78 CNTLID Controller ID
    std::uint32_t ver;                          // bytes 83:80 VER Version (as the VS register)
    std::uint32_t rtd3r;                        // bytes 87:84 RTD3R RTD3 Resume Latency (microseconds)
    std::uint32_t rtd3e;                        // bytes 91:88 RTD3E RTD3 Entry Latency (microseconds)
    async_events_supported oaes;                // bytes 95:92 OAES
    controller_attributes ctratt;               // bytes 99:96 CTRATT
    std::uint16_t rrls;                         // bytes 101:100 RRLS Read Recovery Levels Supported
    std::array<std::uint8_t, 9> rsvd102;        // bytes 110:102
    controller_type cntrltype;                  // byte 111 CNTRLTYPE
    std::array<std::uint8_t, 16> fguid;         // bytes 127:112 FGUID FRU Globally Unique Identifier
    std::uint16_t crdt1;                        // bytes 129:128 CRDT1 Command Retry Delay Time 1 (100 ms)
    std::uint16_t crdt2;                        // bytes 131:130 CRDT2
    std::uint16_t crdt3;                        // bytes 133:132 CRDT3
    std::array<std::uint8_t, 119> rsvd134;      // bytes 252:134
    std::uint8_t nvmsr;                         // byte 253 NVMSR NVM Subsystem Report (NVMe-MI)
    std::uint8_t vwci;                          // byte 254 VWCI VPD Write Cycle Information (NVMe-MI)
    std::uint8_t mec;                           // byte 255 MEC Management Endpoint Capabilities (NVMe-MI)
    admin_command_support oacs;                 // bytes 257:256 OACS
    std::uint8_t acl;                           // byte 258 ACL Abort Command Limit (0's based)
    std::uint8_t aerl;                          // byte 259 AERL Asynchronous Event Request Limit (0's based)
    firmware_updates frmw;                      // byte 260 FRMW
    log_page_attributes lpa;                    // byte 261 LPA
    std::uint8_t elpe;                          // byte 262 ELPE Error Log Page Entries (0's based)
    std::uint8_t npss;                          // byte 263 NPSS Number of Power States Support (0's based)
    std::uint8_t avscc;                         // byte 264 AVSCC Admin Vendor Specific Command Configuration
    std::uint8_t apsta;                         // byte 265 APSTA Autonomous Power State Transition Attributes
    std::uint16_t wctemp;                       // bytes 267:266 WCTEMP Warning Composite Temperature (K)
    std::uint16_t cctemp;                       // bytes 269:268 CCTEMP Critical Composite Temperature (K)
    std::uint16_t mtfa;                         // bytes 271:270 MTFA Maximum Time for Firmware Activation
    std::uint32_t hmpre;                        // bytes 275:272 HMPRE Host Memory Buffer Preferred Size
    std::uint32_t hmmin;                        // bytes 279:276 HMMIN Host Memory Buffer Minimum Size
    uint128_le tnvmcap;                         // bytes 295:280 TNVMCAP Total NVM Capacity (bytes)
    uint128_le unvmcap;                         // bytes 311:296 UNVMCAP Unallocated NVM Capacity (bytes)
    std::uint32_t rpmbs;                        // bytes 315:312 RPMBS Replay Protected Memory Block Support
    std::uint16_t edstt;                        // bytes 317:316 EDSTT Extended Device Self-test Time (minutes)
    std::uint8_t dsto;                          // byte 318 DSTO Device Self-test Options
    std::uint8_t fwug;                          // byte 319 FWUG Firmware Update Granularity (4 KiB)
    std::uint16_t kas;                          // bytes 321:320 KAS Keep Alive Support (100 ms)
    std::uint16_t hctma;                        // bytes 323:322 HCTMA Host Controlled Thermal Management Attributes
    std::uint16_t mntmt;                        // bytes 325:324 MNTMT Minimum Thermal Management Temperature
    std::uint16_t mxtmt;                        // bytes 327:326 MXTMT Maximum Thermal Management Temperature
    std::uint32_t sanicap;                      // bytes 331:328 SANICAP Sanitize Capabilities
    std::uint32_t hmminds;                      // bytes 335:332 HMMINDS Host Memory Buffer Minimum Descriptor Entry Size
    std::uint16_t hmmaxd;                       // bytes 337:336 HMMAXD Host Memory Maximum Descriptors Entries
    std::uint16_t nsetidmax;                    // bytes 339:338 NSETIDMAX NVM Set Identifier Maximum
    std::uint16_t endgidmax;                    // bytes 341:340 ENDGIDMAX Endurance Group Identifier Maximum
    std::uint8_t anatt;                         // byte 342 ANATT ANA Transition Time (seconds)
    std::uint8_t anacap;                        // byte 343 ANACAP Asymmetric Namespace Access Capabilities
    std::uint32_t anagrpmax;                    // bytes 347:344 ANAGRPMAX ANA Group Identifier Maximum
    std::uint32_t nanagrpid;                    // bytes 351:348 NANAGRPID Number of ANA Group Identifiers
    std::uint32_t pels;                         // bytes 355:352 PELS Persistent Event Log Size (64 KiB)
    std::uint16_t domainid;                     // bytes 357:356 Domain Identifier
    std::array<std::uint8_t, 10> rsvd358;       // bytes 367:358
    uint128_le megcap;                          // bytes 383:368 MEGCAP Max Endurance Group Capacity (bytes)
    std::array<std::uint8_t, 128> rsvd384;      // bytes 511:384
    queue_entry_sizes sqes;                     // byte 512 SQES Submission Queue Entry Size
    queue_entry_sizes cqes;                     // byte 513 CQES Completion Queue Entry Size
    std::uint16_t maxcmd;                       // bytes 515:514 MAXCMD Maximum Outstanding Commands (fabrics)
    std::uint32_t nn;                           // bytes 519:516 NN Number of Namespaces (maximum NSID)
    nvm_command_support oncs;                   // bytes 521:520 ONCS
    fused_operation_support fuses;              // bytes 523:522 FUSES
    format_nvm_attributes fna;                  // byte 524 FNA
    volatile_write_cache_support vwc;                   // byte 525 VWC
    std::uint16_t awun;                         // bytes 527:526 AWUN Atomic Write Unit Normal (0's based)
    std::uint16_t awupf;                        // bytes 529:528 AWUPF Atomic Write Unit Power Fail (0's based)
    std::uint8_t icsvscc;                       // byte 530 ICSVSCC I/O Command Set Vendor Specific Command Configuration
    std::uint8_t nwpc;                          // byte 531 NWPC Namespace Write Protection Capabilities
    std::uint16_t acwu;                         // bytes 533:532 ACWU Atomic Compare & Write Unit (0's based)
    std::uint16_t ocfs;                         // bytes 535:534 OCFS Optional Copy Formats Supported
    sgl_support sgls;                           // bytes 539:536 SGLS
    std::uint32_t mnan;                         // bytes 543:540 MNAN Maximum Number of Allowed Namespaces
    uint128_le maxdna;                          // bytes 559:544 MAXDNA Maximum Domain Namespace Attachments
    std::uint32_t maxcna;                       // bytes 563:560 MAXCNA Maximum I/O Controller Namespace Attachments
    std::array<std::uint8_t, 204> rsvd564;      // bytes 767:564
    std::array<char, 256> subnqn;               // bytes 1023:768 SUBNQN NVM Subsystem NQN (NUL terminated)
    std::array<std::uint8_t, 768> rsvd1024;     // bytes 1791:1024
    std::uint32_t ioccsz;                       // bytes 1795:1792 IOCCSZ I/O Queue Command Capsule Size (16 B, fabrics)
    std::uint32_t iorcsz;                       // bytes 1799:1796 IORCSZ I/O Queue Response Capsule Size (16 B, fabrics)
    std::uint16_t icdoff;                       // bytes 1801:1800 ICDOFF In Capsule Data Offset (16 B, fabrics)
    std::uint8_t fcatt;                         // byte 1802 FCATT Fabrics Controller Attributes
    std::uint8_t msdbd;                         // byte 1803 MSDBD Maximum SGL Data Block Descriptors
    std::uint16_t ofcs;                         // bytes 1805:1804 OFCS Optional Fabric Commands Support
    std::array<std::uint8_t, 242> rsvd1806;     // bytes 2047:1806
    std::array<power_state_descriptor, 32> psd; // bytes 3071:2048 PSD0-PSD31
    std::array<std::uint8_t, 1024> vs;          // bytes 4095:3072 Vendor Specific
    // clang-format on

    [[nodiscard]] constexpr std::string_view serial_number() const noexcept { return text_of(sn); }
    [[nodiscard]] constexpr std::string_view model_number() const noexcept { return text_of(mn); }
    [[nodiscard]] constexpr std::string_view firmware_revision() const noexcept { return text_of(fr); }
    [[nodiscard]] constexpr std::string_view subsystem_nqn() const noexcept { return text_of(subnqn); }
    /// Setters return false when the text was cut to fit the field.
    constexpr bool set_serial_number(std::string_view text) noexcept { return assign_space_padded(sn, text); }
    constexpr bool set_model_number(std::string_view text) noexcept { return assign_space_padded(mn, text); }
    constexpr bool set_firmware_revision(std::string_view text) noexcept
    {
        return assign_space_padded(fr, text);
    }
    constexpr bool set_subsystem_nqn(std::string_view text) noexcept
    {
        return assign_null_padded(subnqn, text);
    }

    /// The 24-bit IEEE OUI (byte 73 is its least significant byte).
    [[nodiscard]] constexpr std::uint32_t ieee_oui() const noexcept
    {
        return load_le<std::uint32_t>(ieee, 0);
    }
    /// Stores the low 24 bits of `oui`.
    constexpr void set_ieee_oui(std::uint32_t oui) noexcept { store_le(ieee, 0, oui); }
};
static_assert(sizeof(identify_controller) == identify_data_size);
static_assert(offsetof(identify_controller, vid) == 0);
static_assert(offsetof(identify_controller, ssvid) == 2);
static_assert(offsetof(identify_controller, sn) == 4);
static_assert(offsetof(identify_controller, mn) == 24);
static_assert(offsetof(identify_controller, fr) == 64);
static_assert(offsetof(identify_controller, rab) == 72);
static_assert(offsetof(identify_controller, ieee) == 73);
static_assert(offsetof(identify_controller, cmic) == 76);
static_assert(offsetof(identify_controller, mdts) == 77);
static_assert(offsetof(identify_controller, cntlid) == 78);
static_assert(offsetof(identify_controller, ver) == 80);
static_assert(offsetof(identify_controller, rtd3r) == 84);
static_assert(offsetof(identify_controller, rtd3e) == 88);
static_assert(offsetof(identify_controller, oaes) == 92);
static_assert(offsetof(identify_controller, ctratt) == 96);
static_assert(offsetof(identify_controller, rrls) == 100);
static_assert(offsetof(identify_controller, cntrltype) == 111);
static_assert(offsetof(identify_controller, fguid) == 112);
static_assert(offsetof(identify_controller, crdt1) == 128);
static_assert(offsetof(identify_controller, crdt2) == 130);
static_assert(offsetof(identify_controller, crdt3) == 132);
static_assert(offsetof(identify_controller, nvmsr) == 253);
static_assert(offsetof(identify_controller, vwci) == 254);
static_assert(offsetof(identify_controller, mec) == 255);
static_assert(offsetof(identify_controller, oacs) == 256);
static_assert(offsetof(identify_controller, acl) == 258);
static_assert(offsetof(identify_controller, aerl) == 259);
static_assert(offsetof(identify_controller, frmw) == 260);
static_assert(offsetof(identify_controller, lpa) == 261);
static_assert(offsetof(identify_controller, elpe) == 262);
static_assert(offsetof(identify_controller, npss) == 263);
static_assert(offsetof(identify_controller, avscc) == 264);
static_assert(offsetof(identify_controller, apsta) == 265);
static_assert(offsetof(identify_controller, wctemp) == 266);
static_assert(offsetof(identify_controller, cctemp) == 268);
static_assert(offsetof(identify_controller, mtfa) == 270);
static_assert(offsetof(identify_controller, hmpre) == 272);
static_assert(offsetof(identify_controller, hmmin) == 276);
static_assert(offsetof(identify_controller, tnvmcap) == 280);
static_assert(offsetof(identify_controller, unvmcap) == 296);
static_assert(offsetof(identify_controller, rpmbs) == 312);
static_assert(offsetof(identify_controller, edstt) == 316);
static_assert(offsetof(identify_controller, dsto) == 318);
static_assert(offsetof(identify_controller, fwug) == 319);
static_assert(offsetof(identify_controller, kas) == 320);
static_assert(offsetof(identify_controller, hctma) == 322);
static_assert(offsetof(identify_controller, mntmt) == 324);
static_assert(offsetof(identify_controller, mxtmt) == 326);
static_assert(offsetof(identify_controller, sanicap) == 328);
static_assert(offsetof(identify_controller, hmminds) == 332);
static_assert(offsetof(identify_controller, hmmaxd) == 336);
static_assert(offsetof(identify_controller, nsetidmax) == 338);
static_assert(offsetof(identify_controller, endgidmax) == 340);
static_assert(offsetof(identify_controller, anatt) == 342);
static_assert(offsetof(identify_controller, anacap) == 343);
static_assert(offsetof(identify_controller, anagrpmax) == 344);
static_assert(offsetof(identify_controller, nanagrpid) == 348);
static_assert(offsetof(identify_controller, pels) == 352);
static_assert(offsetof(identify_controller, domainid) == 356);
static_assert(offsetof(identify_controller, megcap) == 368);
static_assert(offsetof(identify_controller, sqes) == 512);
static_assert(offsetof(identify_controller, cqes) == 513);
static_assert(offsetof(identify_controller, maxcmd) == 514);
static_assert(offsetof(identify_controller, nn) == 516);
static_assert(offsetof(identify_controller, oncs) == 520);
static_assert(offsetof(identify_controller, fuses) == 522);
static_assert(offsetof(identify_controller, fna) == 524);
static_assert(offsetof(identify_controller, vwc) == 525);
static_assert(offsetof(identify_controller, awun) == 526);
static_assert(offsetof(identify_controller, awupf) == 528);
static_assert(offsetof(identify_controller, icsvscc) == 530);
static_assert(offsetof(identify_controller, nwpc) == 531);
static_assert(offsetof(identify_controller, acwu) == 532);
static_assert(offsetof(identify_controller, ocfs) == 534);
static_assert(offsetof(identify_controller, sgls) == 536);
static_assert(offsetof(identify_controller, mnan) == 540);
static_assert(offsetof(identify_controller, maxdna) == 544);
static_assert(offsetof(identify_controller, maxcna) == 560);
static_assert(offsetof(identify_controller, subnqn) == 768);
static_assert(offsetof(identify_controller, ioccsz) == 1792);
static_assert(offsetof(identify_controller, iorcsz) == 1796);
static_assert(offsetof(identify_controller, icdoff) == 1800);
static_assert(offsetof(identify_controller, fcatt) == 1802);
static_assert(offsetof(identify_controller, msdbd) == 1803);
static_assert(offsetof(identify_controller, ofcs) == 1804);
static_assert(offsetof(identify_controller, psd) == 2048);
static_assert(offsetof(identify_controller, vs) == 3072);
static_assert(is_wire_type_v<identify_controller>);

/// RP Relative Performance of an LBA format, NVM Command Set 1.0 4.1.5.
enum class lba_relative_performance : std::uint8_t {
    best = 0b00,
    better = 0b01,
    good = 0b10,
    degraded = 0b11,
};

/// LBA Format data structure (4 bytes), NVM Command Set 1.0 4.1.5.
struct lba_format : word<lba_format, std::uint32_t> {
    using word::word;
    // clang-format off
    static constexpr field<0, 16, std::uint16_t> ms{};                     // MS Metadata Size: bits 15:00
    static constexpr field<16, 8, std::uint8_t> lbads{};                   // LBADS LBA Data Size (2^n): bits 23:16
    static constexpr field<24, 2, lba_relative_performance> rp{};          // RP: bits 25:24
    // clang-format on

    /// Bytes of user data per logical block (2^LBADS), or 0 if LBADS is 0 (format not supported)
    /// or too large to represent.
    [[nodiscard]] constexpr std::uint64_t data_size() const noexcept
    {
        const unsigned shift = get(lbads);
        return shift == 0 || shift >= 64 ? 0 : std::uint64_t{1} << shift;
    }
};
static_assert(sizeof(lba_format) == 4);
static_assert(is_wire_type_v<lba_format>);

/// NSFEAT Namespace Features (byte 24).
struct namespace_features : word<namespace_features, std::uint8_t> {
    using word::word;
    // clang-format off
    static constexpr field<0, 1, bool> thin_provisioning{};    // THINP: bit 00
    static constexpr field<1, 1, bool> namespace_atomics{};    // NSABP: bit 01 (NAWUN, NAWUPF, NACWU valid)
    static constexpr field<2, 1, bool> deallocated_error{};    // DAE: bit 02 Deallocated or Unwritten Logical Block error
    static constexpr field<3, 1, bool> identifier_reuse{};     // UIDREUSE: bit 03 (NGUID, EUI64 never reused)
    static constexpr field<4, 1, bool> optimal_performance{};  // OPTPERF: bit 04 (NPWG, NPWA, NPDG, NPDA, NOWS valid)
    // clang-format on
};

/// FLBAS Formatted LBA Size (byte 26).
struct formatted_lba_size : word<formatted_lba_size, std::uint8_t> {
    using word::word;
    // clang-format off
    static constexpr field<0, 4, std::uint8_t> format_index_low{};  // bits 03:00
    static constexpr field<4, 1, bool> extended_metadata{};          // bit 04 (metadata at the end of each LBA)
    static constexpr field<5, 2, std::uint8_t> format_index_high{}; // bits 06:05
    // clang-format on

    /// The index of the LBA format in use (0 to 63), joined from both halves.
    [[nodiscard]] constexpr std::uint8_t format_index() const noexcept
    {
        return static_cast<std::uint8_t>(get(format_index_low) | (get(format_index_high) << 4));
    }
    constexpr formatted_lba_size& set_format_index(std::uint8_t index) noexcept
    {
        set(format_index_low, static_cast<std::uint8_t>(index & 0x0fU));
        return set(format_index_high, static_cast<std::uint8_t>(index >> 4));
    }
};

/// MC Metadata Capabilities (byte 27).
struct metadata_capabilities : word<metadata_capabilities, std::uint8_t> {
    using word::word;
    static constexpr field<0, 1, bool> extended_lba{};    // bit 00 metadata as part of an extended LBA
    static constexpr field<1, 1, bool> separate_buffer{}; // bit 01 metadata in a separate buffer
};

/// DPC End-to-end Data Protection Capabilities (byte 28).
struct protection_capabilities : word<protection_capabilities, std::uint8_t> {
    using word::word;
    static constexpr field<0, 1, bool> type1{};       // bit 00
    static constexpr field<1, 1, bool> type2{};       // bit 01
    static constexpr field<2, 1, bool> type3{};       // bit 02
    static constexpr field<3, 1, bool> first_bytes{}; // bit 03 PI in the first bytes of metadata
    static constexpr field<4, 1, bool> last_bytes{};  // bit 04 PI in the last bytes of metadata
};

/// Protection Information type (DPS bits 02:00).
enum class protection_information_type : std::uint8_t {
    none = 0b000,
    type1 = 0b001,
    type2 = 0b010,
    type3 = 0b011,
};

/// DPS End-to-end Data Protection Type Settings (byte 29).
struct protection_settings : word<protection_settings, std::uint8_t> {
    using word::word;
    // clang-format off
    static constexpr field<0, 3, protection_information_type> type{}; // PIT: bits 02:00
    static constexpr field<3, 1, bool> first_bytes{};                  // PIP: bit 03 PI at the start of metadata
    // clang-format on
};

/// NMIC Namespace Multi-path I/O and Namespace Sharing Capabilities (byte 30).
struct namespace_multipath_caps : word<namespace_multipath_caps, std::uint8_t> {
    using word::word;
    static constexpr field<0, 1, bool> shared{}; // SHRNS: bit 00
};

/// RESCAP Reservation Capabilities (byte 31).
struct reservation_capabilities : word<reservation_capabilities, std::uint8_t> {
    using word::word;
    static constexpr field<0, 1, bool> persist_through_power_loss{};        // PTPLS: bit 00
    static constexpr field<1, 1, bool> write_exclusive{};                   // WES: bit 01
    static constexpr field<2, 1, bool> exclusive_access{};                  // EAS: bit 02
    static constexpr field<3, 1, bool> write_exclusive_registrants_only{};  // WERO: bit 03
    static constexpr field<4, 1, bool> exclusive_access_registrants_only{}; // EARO: bit 04
    static constexpr field<5, 1, bool> write_exclusive_all_registrants{};   // WEAR: bit 05
    static constexpr field<6, 1, bool> exclusive_access_all_registrants{};  // EAAR: bit 06
    static constexpr field<7, 1, bool> ignore_existing_key{};               // IEKEY: bit 07
};

/// FPI Format Progress Indicator (byte 32).
struct format_progress : word<format_progress, std::uint8_t> {
    using word::word;
    static constexpr field<0, 7, std::uint8_t> percent_remaining{}; // FPIR: bits 06:00
    static constexpr field<7, 1, bool> supported{};                 // FPIS: bit 07
};

/// Value read from a deallocated logical block (DLFEAT bits 02:00).
enum class deallocated_read_value : std::uint8_t {
    not_reported = 0b000,
    zeroes = 0b001, ///< all bytes 00h
    ones = 0b010,   ///< all bytes FFh
};

/// DLFEAT Deallocate Logical Block Features (byte 33).
struct deallocate_features : word<deallocate_features, std::uint8_t> {
    using word::word;
    // clang-format off
    static constexpr field<0, 3, deallocated_read_value> read_behavior{}; // bits 02:00
    static constexpr field<3, 1, bool> write_zeroes_deallocate{};          // bit 03 Deallocate bit in Write Zeroes
    static constexpr field<4, 1, bool> guard_crc{};                        // bit 04 Guard is the CRC of deallocated data
    // clang-format on
};

/// NSATTR Namespace Attributes (byte 99).
struct namespace_attributes : word<namespace_attributes, std::uint8_t> {
    using word::word;
    static constexpr field<0, 1, bool> write_protected{}; // bit 00
};

/// Identify Namespace data structure (CNS 00h, CNS 11h), NVM Command Set 1.0 Figure 97.
struct identify_namespace {
    // clang-format off
    std::uint64_t nsze;                     // bytes 07:00 NSZE Namespace Size (LBAs)
    std::uint64_t ncap;                     // bytes 15:08 NCAP Namespace Capacity (LBAs)
    std::uint64_t nuse;                     // bytes 23:16 NUSE Namespace Utilization (LBAs)
    namespace_features nsfeat;              // byte 24 NSFEAT
    std::uint8_t nlbaf;                     // byte 25 NLBAF Number of LBA Formats (0's based)
    formatted_lba_size flbas;               // byte 26 FLBAS
    metadata_capabilities mc;               // byte 27 MC
    protection_capabilities dpc;            // byte 28 DPC
    protection_settings dps;                // byte 29 DPS
    namespace_multipath_caps nmic;          // byte 30 NMIC
    reservation_capabilities rescap;        // byte 31 RESCAP
    format_progress fpi;                    // byte 32 FPI
    deallocate_features dlfeat;             // byte 33 DLFEAT
    std::uint16_t nawun;                    // bytes 35:34 NAWUN Namespace Atomic Write Unit Normal (0's based)
    std::uint16_t nawupf;                   // bytes 37:36 NAWUPF Namespace Atomic Write Unit Power Fail
    std::uint16_t nacwu;                    // bytes 39:38 NACWU Namespace Atomic Compare & Write Unit
    std::uint16_t nabsn;                    // bytes 41:40 NABSN Namespace Atomic Boundary Size Normal
    std::uint16_t nabo;                     // bytes 43:42 NABO Namespace Atomic Boundary Offset
    std::uint16_t nabspf;                   // bytes 45:44 NABSPF Namespace Atomic Boundary Size Power Fail
    std::uint16_t noiob;                    // bytes 47:46 NOIOB Namespace Optimal I/O Boundary
    uint128_le nvmcap;                      // bytes 63:48 NVMCAP NVM Capacity (bytes)
    std::uint16_t npwg;                     // bytes 65:64 NPWG Namespace Preferred Write Granularity (0's based)
    std::uint16_t npwa;                     // bytes 67:66 NPWA Namespace Preferred Write Alignment (0's based)
    std::uint16_t npdg;                     // bytes 69:68 NPDG Namespace Preferred Deallocate Granularity
    std::uint16_t npda;                     // bytes 71:70 NPDA Namespace Preferred Deallocate Alignment
    std::uint16_t nows;                     // bytes 73:72 NOWS Namespace Optimal Write Size (0's based)
    std::uint16_t mssrl;                    // bytes 75:74 MSSRL Maximum Single Source Range Length
    std::uint32_t mcl;                      // bytes 79:76 MCL Maximum Copy Length
    std::uint8_t msrc;                      // byte 80 MSRC Maximum Source Range Count (0's based)
    std::uint8_t rsvd81;                    // byte 81
    std::uint8_t nulbaf;                    // byte 82 NULBAF Number of Unique Capability LBA Formats
    std::array<std::uint8_t, 9> rsvd83;     // bytes 91:83
    std::uint32_t anagrpid;                 // bytes 95:92 ANAGRPID ANA Group Identifier
    std::array<std::uint8_t, 3> rsvd96;     // bytes 98:96
    namespace_attributes nsattr;            // byte 99 NSATTR
    std::uint16_t nvmsetid;                 // bytes 101:100 NVMSETID NVM Set Identifier
    std::uint16_t endgid;                   // bytes 103:102 ENDGID Endurance Group Identifier
    std::array<std::uint8_t, 16> nguid;     // bytes 119:104 NGUID Namespace Globally Unique Identifier
    std::array<std::uint8_t, 8> eui64;      // bytes 127:120 EUI64 IEEE Extended Unique Identifier
    std::array<lba_format, 64> lbaf;        // bytes 383:128 LBAF0-LBAF63
    std::array<std::uint8_t, 3712> vs;      // bytes 4095:384 Vendor Specific
    // clang-format on

    /// The LBA format in use (the one FLBAS selects).
    [[nodiscard]] constexpr lba_format formatted_lba_format() const noexcept
    {
        return lbaf[flbas.format_index()];
    }
    [[nodiscard]] constexpr std::uint64_t nvm_capacity() const noexcept { return nvmcap.low(); }
};
static_assert(sizeof(identify_namespace) == identify_data_size);
static_assert(offsetof(identify_namespace, nsze) == 0);
static_assert(offsetof(identify_namespace, ncap) == 8);
static_assert(offsetof(identify_namespace, nuse) == 16);
static_assert(offsetof(identify_namespace, nsfeat) == 24);
static_assert(offsetof(identify_namespace, nlbaf) == 25);
static_assert(offsetof(identify_namespace, flbas) == 26);
static_assert(offsetof(identify_namespace, mc) == 27);
static_assert(offsetof(identify_namespace, dpc) == 28);
static_assert(offsetof(identify_namespace, dps) == 29);
static_assert(offsetof(identify_namespace, nmic) == 30);
static_assert(offsetof(identify_namespace, rescap) == 31);
static_assert(offsetof(identify_namespace, fpi) == 32);
static_assert(offsetof(identify_namespace, dlfeat) == 33);
static_assert(offsetof(identify_namespace, nawun) == 34);
static_assert(offsetof(identify_namespace, nawupf) == 36);
static_assert(offsetof(identify_namespace, nacwu) == 38);
static_assert(offsetof(identify_namespace, nabsn) == 40);
static_assert(offsetof(identify_namespace, nabo) == 42);
static_assert(offsetof(identify_namespace, nabspf) == 44);
static_assert(offsetof(identify_namespace, noiob) == 46);
static_assert(offsetof(identify_namespace, nvmcap) == 48);
static_assert(offsetof(identify_namespace, npwg) == 64);
static_assert(offsetof(identify_namespace, npwa) == 66);
static_assert(offsetof(identify_namespace, npdg) == 68);
static_assert(offsetof(identify_namespace, npda) == 70);
static_assert(offsetof(identify_namespace, nows) == 72);
static_assert(offsetof(identify_namespace, mssrl) == 74);
static_assert(offsetof(identify_namespace, mcl) == 76);
static_assert(offsetof(identify_namespace, msrc) == 80);
static_assert(offsetof(identify_namespace, nulbaf) == 82);
static_assert(offsetof(identify_namespace, anagrpid) == 92);
static_assert(offsetof(identify_namespace, nsattr) == 99);
static_assert(offsetof(identify_namespace, nvmsetid) == 100);
static_assert(offsetof(identify_namespace, endgid) == 102);
static_assert(offsetof(identify_namespace, nguid) == 104);
static_assert(offsetof(identify_namespace, eui64) == 120);
static_assert(offsetof(identify_namespace, lbaf) == 128);
static_assert(offsetof(identify_namespace, vs) == 384);
static_assert(is_wire_type_v<identify_namespace>);

/// Protection Information Format of an extended LBA format (ELBAF bits 08:07).
enum class protection_information_format : std::uint8_t {
    guard_16b = 0b00,
    guard_32b = 0b01,
    guard_64b = 0b10,
};

/// Extended LBA Format data structure (4 bytes), NVM Command Set 1.0 4.1.5.
struct extended_lba_format : word<extended_lba_format, std::uint32_t> {
    using word::word;
    static constexpr field<0, 7, std::uint8_t> sts{};                  // STS Storage Tag Size: bits 06:00
    static constexpr field<7, 2, protection_information_format> pif{}; // PIF: bits 08:07
};
static_assert(sizeof(extended_lba_format) == 4);
static_assert(is_wire_type_v<extended_lba_format>);

/// PIC Protection Information Capabilities (byte 08 of the NVM Identify Namespace).
struct protection_information_capabilities : word<protection_information_capabilities, std::uint8_t> {
    using word::word;
    // clang-format off
    static constexpr field<0, 1, bool> storage_tag_16b{};       // 16BPISTS: bit 00 16b Guard PI with storage tag
    static constexpr field<1, 1, bool> storage_tag_mask_16b{};  // 16BPISTM: bit 01 16b Guard PI storage tag mask
    static constexpr field<2, 1, bool> storage_tag_check_read{}; // STCRS: bit 02
    // clang-format on
};

/// NVM Command Set specific Identify Namespace (CNS 05h, CSI 00h), NVM Command Set 1.0 4.1.5.
struct nvm_identify_namespace {
    std::uint64_t lbstm;                       // bytes 07:00 LBSTM Logical Block Storage Tag Mask
    protection_information_capabilities pic;   // byte 08 PIC
    std::array<std::uint8_t, 3> rsvd9;         // bytes 11:09
    std::array<extended_lba_format, 64> elbaf; // bytes 267:12 ELBAF0-ELBAF63 (one per LBAF)
    std::array<std::uint8_t, 3828> rsvd268;    // bytes 4095:268
};
static_assert(sizeof(nvm_identify_namespace) == identify_data_size);
static_assert(offsetof(nvm_identify_namespace, lbstm) == 0);
static_assert(offsetof(nvm_identify_namespace, pic) == 8);
static_assert(offsetof(nvm_identify_namespace, elbaf) == 12);
static_assert(offsetof(nvm_identify_namespace, rsvd268) == 268);
static_assert(is_wire_type_v<nvm_identify_namespace>);

/// NVM Command Set specific Identify Controller (CNS 06h, CSI 00h), NVM Command Set 1.0 4.1.5.
/// VSL, WZSL and WUSL are powers of two in units of CAP.MPSMIN pages; 0h means no limit.
struct nvm_identify_controller {
    std::uint8_t vsl;                      // byte 00 VSL Verify Size Limit
    std::uint8_t wzsl;                     // byte 01 WZSL Write Zeroes Size Limit
    std::uint8_t wusl;                     // byte 02 WUSL Write Uncorrectable Size Limit
    std::uint8_t dmrl;                     // byte 03 DMRL Dataset Management Ranges Limit
    std::uint32_t dmrsl;                   // bytes 07:04 DMRSL Dataset Management Range Size Limit (LBAs)
    std::uint64_t dmsl;                    // bytes 15:08 DMSL Dataset Management Size Limit (LBAs)
    std::array<std::uint8_t, 4080> rsvd16; // bytes 4095:16
};
static_assert(sizeof(nvm_identify_controller) == identify_data_size);
static_assert(offsetof(nvm_identify_controller, vsl) == 0);
static_assert(offsetof(nvm_identify_controller, wzsl) == 1);
static_assert(offsetof(nvm_identify_controller, wusl) == 2);
static_assert(offsetof(nvm_identify_controller, dmrl) == 3);
static_assert(offsetof(nvm_identify_controller, dmrsl) == 4);
static_assert(offsetof(nvm_identify_controller, dmsl) == 8);
static_assert(offsetof(nvm_identify_controller, rsvd16) == 16);
static_assert(is_wire_type_v<nvm_identify_controller>);

/// NSTAT Namespace Status (byte 14 of the command set independent Identify Namespace).
struct namespace_status : word<namespace_status, std::uint8_t> {
    using word::word;
    static constexpr field<0, 1, bool> ready{}; // NRDY: bit 00
};

/// I/O Command Set Independent Identify Namespace (CNS 08h), Base 2.0 5.17.
struct independent_identify_namespace {
    namespace_features nsfeat;             // byte 00 NSFEAT (bits 03:00 meaningful here)
    namespace_multipath_caps nmic;         // byte 01 NMIC
    reservation_capabilities rescap;       // byte 02 RESCAP
    format_progress fpi;                   // byte 03 FPI
    std::uint32_t anagrpid;                // bytes 07:04 ANAGRPID
    namespace_attributes nsattr;           // byte 08 NSATTR
    std::uint8_t rsvd9;                    // byte 09
    std::uint16_t nvmsetid;                // bytes 11:10 NVMSETID
    std::uint16_t endgid;                  // bytes 13:12 ENDGID
    namespace_status nstat;                // byte 14 NSTAT
    std::array<std::uint8_t, 4081> rsvd15; // bytes 4095:15
};
static_assert(sizeof(independent_identify_namespace) == identify_data_size);
static_assert(offsetof(independent_identify_namespace, nmic) == 1);
static_assert(offsetof(independent_identify_namespace, rescap) == 2);
static_assert(offsetof(independent_identify_namespace, fpi) == 3);
static_assert(offsetof(independent_identify_namespace, anagrpid) == 4);
static_assert(offsetof(independent_identify_namespace, nsattr) == 8);
static_assert(offsetof(independent_identify_namespace, nvmsetid) == 10);
static_assert(offsetof(independent_identify_namespace, endgid) == 12);
static_assert(offsetof(independent_identify_namespace, nstat) == 14);
static_assert(is_wire_type_v<independent_identify_namespace>);

/// Namespace List (CNS 02h, 07h, 10h, 1Ah), Base 2.0 5.17: up to 1024 NSIDs in increasing
/// order, the unused entries zero.
struct active_namespace_id_list {
    static constexpr std::size_t capacity = 1024;
    std::array<std::uint32_t, capacity> nsids; // bytes 4095:00, entry n at bytes 4n+3:4n

    /// Number of NSIDs before the first zero entry.
    [[nodiscard]] constexpr std::size_t size() const noexcept
    {
        std::size_t count = 0;
        while (count < capacity && nsids[count] != 0) {
            ++count;
        }
        return count;
    }
};
static_assert(sizeof(active_namespace_id_list) == identify_data_size);
static_assert(is_wire_type_v<active_namespace_id_list>);

using namespace_id_list = active_namespace_id_list;

/// Controller List (Base 2.0, Controller List data structure): the data of Identify CNS 12h and
/// 13h and of Namespace Attachment. A count, then that many controller identifiers in increasing
/// order; the unused entries zero.
struct controller_list {
    static constexpr std::size_t capacity = 2047;
    std::uint16_t count;                     // bytes 01:00 Number of Identifiers
    std::array<std::uint16_t, capacity> ids; // bytes 4095:02, identifier n at bytes 2n+3:2n+2

    /// The identifiers the count covers (at most `capacity`).
    [[nodiscard]] constexpr std::span<const std::uint16_t> identifiers() const noexcept
    {
        return std::span<const std::uint16_t>{ids}.first(count < capacity ? count : capacity);
    }
    /// Appends `id`; false when the list is full.
    constexpr bool push_back(std::uint16_t id) noexcept
    {
        if (count >= capacity) {
            return false;
        }
        ids[count++] = id;
        return true;
    }
};
static_assert(sizeof(controller_list) == identify_data_size);
static_assert(offsetof(controller_list, count) == 0);
static_assert(offsetof(controller_list, ids) == 2);
static_assert(is_wire_type_v<controller_list>);

/// NIDT Namespace Identifier Type, Base 2.0 5.17 (CNS 03h).
enum class namespace_id_type : std::uint8_t {
    eui64 = 0x1,
    nguid = 0x2,
    uuid = 0x3,
    csi = 0x4,
};

/// The NIDL a descriptor of `type` carries (8, 16, 16, 1), or 0 for a reserved type.
[[nodiscard]] constexpr std::uint8_t expected_length(namespace_id_type type) noexcept
{
    switch (type) {
    case namespace_id_type::eui64: return 8;
    case namespace_id_type::nguid: return 16; // NOLINT(bugprone-branch-clone): a table of sizes
    case namespace_id_type::uuid: return 16;
    case namespace_id_type::csi: return 1;
    }
    return 0;
}

[[nodiscard]] constexpr std::string_view name(namespace_id_type type) noexcept
{
    switch (type) {
    case namespace_id_type::eui64: return "EUI64";
    case namespace_id_type::nguid: return "NGUID";
    case namespace_id_type::uuid: return "UUID";
    case namespace_id_type::csi: return "CSI";
    }
    return {};
}

/// Namespace Identification Descriptor header (4 bytes), Base 2.0 5.17 (CNS 03h); NIDL bytes of
/// NID follow it.
struct namespace_id_descriptor_header {
    namespace_id_type nidt;            // byte 00 NIDT
    std::uint8_t nidl;                 // byte 01 NIDL (0h ends the list)
    std::array<std::uint8_t, 2> rsvd2; // bytes 03:02
};
static_assert(sizeof(namespace_id_descriptor_header) == 4);
static_assert(offsetof(namespace_id_descriptor_header, nidt) == 0);
static_assert(offsetof(namespace_id_descriptor_header, nidl) == 1);
static_assert(is_wire_type_v<namespace_id_descriptor_header>);

/// Namespace Identification Descriptor list (CNS 03h), Base 2.0 5.17: descriptors packed
/// one after another; the bytes after the last one are zero, so an NIDL of 0h ends the list.
struct namespace_id_descriptor_list {
    static constexpr std::size_t header_size = sizeof(namespace_id_descriptor_header);

    std::array<std::uint8_t, identify_data_size> bytes; // bytes 4095:00

    /// One descriptor read from the list.
    struct descriptor {
        namespace_id_type type;
        std::span<const std::uint8_t> id; ///< NIDL bytes of NID
        std::size_t next_offset;          ///< where the following descriptor starts
    };

    /// Writes a descriptor at `offset` and returns the offset after it, or std::nullopt (writing
    /// nothing) if `id` is not the length the type requires or the descriptor does not fit.
    constexpr std::optional<std::size_t> put(std::size_t offset, namespace_id_type type,
                                             std::span<const std::uint8_t> id) noexcept
    {
        const std::size_t length = expected_length(type);
        if (length == 0 || id.size() != length || offset > bytes.size() ||
            bytes.size() - offset < header_size + length) {
            return std::nullopt;
        }
        bytes[offset] = static_cast<std::uint8_t>(type);
        bytes[offset + 1] = static_cast<std::uint8_t>(length);
        bytes[offset + 2] = 0;
        bytes[offset + 3] = 0;
        for (std::size_t i = 0; i < length; ++i) {
            bytes[offset + header_size + i] = id[i];
        }
        return offset + header_size + length;
    }

    /// The descriptor at `offset`, or std::nullopt at the end of the list (NIDL 0h) or where a
    /// descriptor would run past the 4096 bytes.
    [[nodiscard]] constexpr std::optional<descriptor> at(std::size_t offset) const noexcept
    {
        if (offset > bytes.size() || bytes.size() - offset < header_size) {
            return std::nullopt;
        }
        const std::size_t length = bytes[offset + 1];
        if (length == 0 || bytes.size() - offset - header_size < length) {
            return std::nullopt;
        }
        return descriptor{static_cast<namespace_id_type>(bytes[offset]),
                          std::span<const std::uint8_t>{bytes}.subspan(offset + header_size, length),
                          offset + header_size + length};
    }

    /// The NID of the first descriptor of `type`, or std::nullopt if the list has none.
    [[nodiscard]] constexpr std::optional<std::span<const std::uint8_t>>
    find(namespace_id_type type) const noexcept
    {
        std::size_t offset = 0;
        while (const auto entry = at(offset)) {
            if (entry->type == type) {
                return entry->id;
            }
            offset = entry->next_offset;
        }
        return std::nullopt;
    }
};
static_assert(sizeof(namespace_id_descriptor_list) == identify_data_size);
static_assert(is_wire_type_v<namespace_id_descriptor_list>);

/// I/O Command Set Vector: one combination of I/O command sets, Base 2.0 5.17 (CNS 1Ch).
struct io_command_set_vector : word<io_command_set_vector, std::uint64_t> {
    using word::word;
    static constexpr field<0, 1, bool> nvm{};       // NVMCS: bit 00
    static constexpr field<1, 1, bool> key_value{}; // KVCS: bit 01
    static constexpr field<2, 1, bool> zoned{};     // ZNSCS: bit 02
};
static_assert(sizeof(io_command_set_vector) == 8);

/// Identify I/O Command Set data structure (CNS 1Ch), Base 2.0 5.17: 512 command set
/// combinations, selected by index through the I/O Command Set Profile feature.
struct identify_io_command_set {
    std::array<io_command_set_vector, 512> vectors; // entry n at bytes 8n+7:8n
};
static_assert(sizeof(identify_io_command_set) == identify_data_size);
static_assert(is_wire_type_v<identify_io_command_set>);

} // namespace spec
NVMEKIT_END_NAMESPACE
