#pragma once
/// The Identify data structures a controller returns (Base 2.0 5.17.2): Identify Controller
/// (CNS 01h), Identify Namespace (CNS 00h, with the Copy and Dataset Management limits of the NVM
/// command set, and the metadata placements of the controller's transport) and the I/O Command
/// Set specific Identify Controller of the NVM command set (CNS 06h). Every capability bit names
/// something implemented, and the LBA formats Format NVM and Namespace Management accept are the
/// ones Identify Namespace reports (lba_format_accepted).
///
///     const spec::identify_controller data = identify_data<my_controller>::controller_data(ctrl);

#include <algorithm>
#include <cstdint>

#include <nvmekit/command_sets/nvm.hpp>
#include <nvmekit/command_sets/queue_management.hpp>
#include <nvmekit/config.hpp>
#include <nvmekit/core/controller_config.hpp>
#include <nvmekit/data/sgl_walker.hpp>
#include <nvmekit/spec/identify.hpp>
#include <nvmekit/spec/registers.hpp>
#include <nvmekit/storage/nvm_namespace.hpp>

NVMEKIT_BEGIN_NAMESPACE

template <typename Controller>
struct identify_data {
    using namespace_type = typename Controller::namespace_type;
    using io_set = nvm_command_set<Controller>;

    /// Identify Controller, from the controller's configuration, subsystem, logs and features.
    [[nodiscard]] static spec::identify_controller controller_data(const Controller& c)
    {
        spec::identify_controller data{};
        const auto& identity = c.nvm_subsystem().identity();
        data.vid = c.identity().vendor_id;
        data.ssvid = c.identity().subsystem_vendor_id;
        spec::assign_space_padded(data.sn, identity.serial_number);
        spec::assign_space_padded(data.mn, identity.model_number);
        spec::assign_space_padded(data.fr, c.firmware().active_revision());
        spec::assign_null_padded(data.subnqn, identity.nqn);
        data.ieee = identity.ieee_oui;
        data.cmic.set(spec::controller_multipath_caps::multiple_controllers, true);
        data.mdts = c.mdts();
        data.cntlid = c.controller_id();
        data.ver = c.registers().vs().raw;
        data.oaes.set(spec::async_events_supported::namespace_attribute, true);
        data.cntrltype = spec::controller_type::io;
        data.oacs.set(spec::admin_command_support::format_nvm, true)
            .set(spec::admin_command_support::firmware, true)
            .set(spec::admin_command_support::namespace_management, true)
            .set(spec::admin_command_support::doorbell_buffer_config,
                 queue_management_commands<Controller>::shadow_doorbells_offered(c))
            .set(spec::admin_command_support::get_lba_status, true);
        data.tnvmcap.set(c.nvm_subsystem().total_capacity());
        data.unvmcap.set(c.nvm_subsystem().unallocated_capacity());
        data.acl = 3;
        data.aerl = Controller::limits.aerl;
        data.frmw = c.firmware().attributes();
        data.lpa.set(spec::log_page_attributes::commands_effects, true)
            .set(spec::log_page_attributes::extended_data, true)
            .set(spec::log_page_attributes::telemetry, true);
        data.elpe = c.errors().elpe();
        data.npss = 0;
        data.wctemp = c.features().config().warning_composite_temperature;
        data.cctemp = 373;
        data.fwug = c.firmware().fwug();
        data.kas = static_cast<std::uint16_t>(c.features().config().keep_alive_granularity_ms / 100U);
        data.sqes.set(spec::queue_entry_sizes::required, 6).set(spec::queue_entry_sizes::maximum, 6);
        data.cqes.set(spec::queue_entry_sizes::required, 4).set(spec::queue_entry_sizes::maximum, 4);
        data.nn = c.nvm_subsystem().options().max_namespaces;
        data.oncs.set(spec::nvm_command_support::compare, true)
            .set(spec::nvm_command_support::write_uncorrectable, true)
            .set(spec::nvm_command_support::dataset_management, true)
            .set(spec::nvm_command_support::write_zeroes, true)
            .set(spec::nvm_command_support::save_select_features, true)
            .set(spec::nvm_command_support::timestamp, c.features().config().timestamp_supported)
            .set(spec::nvm_command_support::verify, true)
            .set(spec::nvm_command_support::copy, true);
        data.vwc
            .set(spec::volatile_write_cache_support::present,
                 c.features().config().volatile_write_cache_present)
            .set(spec::volatile_write_cache_support::flush_behavior, spec::flush_broadcast::supported);
        data.ocfs = 1; // Copy source range format 0
        data.sgls = sgl_support_for(sgl_walk_options{.direction = transfer_direction::controller_to_host});
        data.psd[0].mp = 2500; // 25 W in 0.01 W units
        if (const auto& fabrics = c.identity().fabrics) {
            set_fabrics_fields(data, *fabrics, c.registers().cap());
        }
        return data;
    }

    /// The fields of a controller reached over a fabric (fabrics_identity): capsule sizes,
    /// MAXCMD and the SGL support of its transport.
    static void set_fabrics_fields(spec::identify_controller& data, const fabrics_identity& fabrics,
                                   spec::cap_register cap)
    {
        constexpr std::uint32_t sqe_bytes = 64;
        constexpr std::uint32_t capsule_unit = 16;
        data.ioccsz = (sqe_bytes + fabrics.io_in_capsule_data) / capsule_unit;
        data.iorcsz = 1;
        data.icdoff = 0;
        data.fcatt = 0;
        data.msdbd = 1;
        const std::uint32_t queue_entries = std::uint32_t{cap.get(cap.mqes)} + 1U;
        data.maxcmd = fabrics.max_commands != 0
                          ? fabrics.max_commands
                          : static_cast<std::uint16_t>(std::min<std::uint32_t>(queue_entries, 0xffffU));
        data.sgls = fabrics.sgls;
    }

    /// MC: where this controller takes metadata (metadata_placements); over a fabric only in an
    /// extended LBA.
    [[nodiscard]] static spec::metadata_capabilities metadata_capabilities(const Controller& c)
    {
        return metadata_placements(c.identity().fabrics.has_value());
    }

    /// Whether Format NVM and Namespace Management take LBA format `index` with its metadata in an
    /// extended LBA (`extended`) or a separate buffer: what Identify Namespace reports (NLBAF, MC).
    [[nodiscard]] static bool lba_format_accepted(const Controller& c, std::uint8_t index, bool extended)
    {
        return lba_format_selectable(index, extended, metadata_capabilities(c));
    }

    /// Identify Namespace for NSID FFFFFFFFh: what every namespace supports through this controller.
    [[nodiscard]] static spec::identify_namespace common_namespace_data(const Controller& c)
    {
        return namespace_type::common_capabilities(metadata_capabilities(c));
    }

    /// Identify Namespace: the namespace's own data and the Copy limits of the NVM command set.
    [[nodiscard]] static spec::identify_namespace namespace_data(const Controller& c,
                                                                 const namespace_type& ns)
    {
        auto data = ns.identify(metadata_capabilities(c));
        const auto blocks = io_set::max_copy_blocks(ns.block_bytes() + ns.metadata_bytes());
        data.mssrl = static_cast<std::uint16_t>(std::min<std::uint32_t>(blocks, 0xffffU));
        data.mcl = blocks;
        data.msrc = static_cast<std::uint8_t>(io_set::max_copy_ranges - 1U);
        return data;
    }

    /// The NVM command set's Identify Controller: the Dataset Management range limit.
    [[nodiscard]] static spec::nvm_identify_controller nvm_controller_data() noexcept
    {
        spec::nvm_identify_controller data{};
        data.dmrl = static_cast<std::uint8_t>(io_set::max_dsm_ranges - 1U);
        return data;
    }
};

NVMEKIT_END_NAMESPACE
