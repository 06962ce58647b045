#pragma once
/// The admin command set (Base 2.0 section 5) as handlers of the controller's admin dispatch
/// table: queue management (queue_management.hpp), Identify, Get Log Page, Get/Set Features, Asynchronous
/// Event Request, Abort, Keep Alive, Namespace Management, Namespace Attachment, Format NVM, Firmware Image
/// Download and Commit, Doorbell Buffer Config, Get LBA Status.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include <nvmekit/command_sets/features.hpp>
#include <nvmekit/command_sets/identify.hpp>
#include <nvmekit/command_sets/queue_management.hpp>
#include <nvmekit/config.hpp>
#include <nvmekit/contracts/handler_context.hpp>
#include <nvmekit/core/dispatcher.hpp>
#include <nvmekit/spec/commands.hpp>
#include <nvmekit/spec/features.hpp>
#include <nvmekit/spec/identify.hpp>
#include <nvmekit/spec/log_pages.hpp>
#include <nvmekit/spec/opcodes.hpp>
#include <nvmekit/spec/status.hpp>
#include <nvmekit/state/log_page.hpp>
#include <nvmekit/state/telemetry_log.hpp>
#include <nvmekit/storage/nvm_namespace.hpp>
#include <nvmekit/storage/subsystem.hpp>

NVMEKIT_BEGIN_NAMESPACE

template <typename Controller>
struct admin_command_set {
    using command = typename Controller::command;
    using table_type = typename Controller::table_type;
    using namespace_type = typename Controller::namespace_type;

    /// The built-in admin command table.
    [[nodiscard]] static constexpr table_type table()
    {
        using spec::admin_opcode;
        using queues = queue_management_commands<Controller>;
        const auto op = [](admin_opcode opcode) { return static_cast<std::uint8_t>(opcode); };
        return table_type{}
            .with(op(admin_opcode::delete_io_sq), &queues::delete_io_sq)
            .with(op(admin_opcode::create_io_sq), &queues::create_io_sq)
            .with(op(admin_opcode::get_log_page), &get_log_page)
            .with(op(admin_opcode::delete_io_cq), &queues::delete_io_cq)
            .with(op(admin_opcode::create_io_cq), &queues::create_io_cq)
            .with(op(admin_opcode::identify), &identify)
            .with(op(admin_opcode::abort), &abort)
            .with(op(admin_opcode::set_features), &feature_commands<Controller>::set_features)
            .with(op(admin_opcode::get_features), &feature_commands<Controller>::get_features)
            .with(op(admin_opcode::async_event_request), &async_event_request)
            .with(op(admin_opcode::firmware_commit), &firmware_commit, effects::changes_controller())
            .with(op(admin_opcode::firmware_image_download), &firmware_image_download)
            .with(op(admin_opcode::namespace_management), &namespace_management, effects::changes_inventory())
            .with(op(admin_opcode::namespace_attachment), &namespace_attachment, effects::changes_inventory())
            .with(op(admin_opcode::keep_alive), &keep_alive)
            .with(op(admin_opcode::doorbell_buffer_config), &queues::doorbell_buffer_config)
            .with(op(admin_opcode::format_nvm), &format_nvm, effects::changes_namespaces())
            .with(op(admin_opcode::get_lba_status), &get_lba_status);
    }

    static constexpr std::uint32_t broadcast_nsid = 0xffffffffU;

private:
    [[nodiscard]] static spec::status error(auto code) noexcept { return spec::status{code}.with_dnr(); }
    [[nodiscard]] static command_result fail(auto code) noexcept
    {
        return command_result::failure(error(code));
    }
    [[nodiscard]] static command_result result_of(spec::status status, std::uint32_t dw0 = 0) noexcept
    {
        return status.is_success() ? command_result::success(dw0) : command_result::failure(status, dw0);
    }

    template <typename T>
    [[nodiscard]] static command_result send(Controller& c, command& cmd, const T& data)
    {
        return result_of(c.transfer_to_host(cmd, std::as_bytes(std::span{&data, 1})));
    }

    // ---- Identify (Base 2.0 5.17) ---------------------------------------------------------------

    /// An NSID that may name a namespace of this subsystem (active or not).
    [[nodiscard]] static bool valid_nsid(const Controller& c, std::uint32_t nsid) noexcept
    {
        return nsid != 0 && nsid <= c.nvm_subsystem().options().max_namespaces;
    }

    static command_result identify(Controller& c, command& cmd)
    {
        const auto view = spec::identify_view::decode(cmd.sqe);
        const std::uint32_t nsid = cmd.sqe.nsid;
        const bool nvm_set = view.command_set_id == spec::command_set_identifier::nvm;
        switch (view.cns) {
        case spec::cns::identify_namespace:
        case spec::cns::io_command_set_namespace: {
            if (view.cns == spec::cns::io_command_set_namespace && !nvm_set) {
                return fail(spec::generic_status::invalid_field);
            }
            if (view.cns == spec::cns::identify_namespace && nsid == broadcast_nsid) {
                // What every namespace supports, for a host about to create one (Base 2.0 5.17.2.1).
                return send(c, cmd, identify_data<Controller>::common_namespace_data(c));
            }
            if (!valid_nsid(c, nsid)) {
                return fail(spec::generic_status::invalid_namespace_or_format);
            }
            auto* ns = c.attached_namespace(nsid);
            if (view.cns == spec::cns::io_command_set_namespace) {
                // No protection information: the structure is zero for active and inactive NSIDs.
                return send(c, cmd, spec::nvm_identify_namespace{});
            }
            // An inactive NSID returns a zero-filled structure (Base 2.0 5.17.2.1).
            return send(c, cmd,
                        ns != nullptr ? identify_data<Controller>::namespace_data(c, *ns)
                                      : spec::identify_namespace{});
        }
        case spec::cns::identify_controller:
            return send(c, cmd, identify_data<Controller>::controller_data(c));
        case spec::cns::io_command_set_controller:
            if (!nvm_set) {
                return fail(spec::generic_status::invalid_field);
            }
            return send(c, cmd, identify_data<Controller>::nvm_controller_data());
        case spec::cns::active_namespace_list:
        case spec::cns::io_command_set_active_namespace_list: {
            if (view.cns == spec::cns::io_command_set_active_namespace_list && !nvm_set) {
                return fail(spec::generic_status::invalid_field);
            }
            if (nsid >= 0xfffffffeU) {
                return fail(spec::generic_status::invalid_namespace_or_format);
            }
            spec::active_namespace_id_list list{};
            std::size_t count = 0;
            c.nvm_subsystem().for_each_namespace([&](namespace_type& ns) {
                if (ns.nsid() > nsid && ns.attached_to(c.controller_id()) && count < list.nsids.size()) {
                    list.nsids[count++] = ns.nsid();
                }
            });
            return send(c, cmd, list);
        }
        case spec::cns::namespace_id_descriptor_list: {
            auto* ns = c.attached_namespace(nsid);
            if (ns == nullptr) {
                return fail(spec::generic_status::invalid_namespace_or_format);
            }
            return send(c, cmd, ns->id_descriptors());
        }
        case spec::cns::io_command_set_independent_namespace: {
            if (!valid_nsid(c, nsid)) {
                return fail(spec::generic_status::invalid_namespace_or_format);
            }
            auto* ns = c.attached_namespace(nsid);
            return send(c, cmd,
                        ns != nullptr ? ns->independent_identify() : spec::independent_identify_namespace{});
        }
        case spec::cns::allocated_namespace_list:
        case spec::cns::io_command_set_allocated_namespace_list: {
            if (view.cns == spec::cns::io_command_set_allocated_namespace_list && !nvm_set) {
                return fail(spec::generic_status::invalid_field);
            }
            if (nsid >= 0xfffffffeU) {
                return fail(spec::generic_status::invalid_namespace_or_format);
            }
            spec::namespace_id_list list{};
            std::size_t count = 0;
            c.nvm_subsystem().for_each_namespace([&](namespace_type& ns) {
                if (ns.nsid() > nsid && count < list.nsids.size()) {
                    list.nsids[count++] = ns.nsid();
                }
            });
            return send(c, cmd, list);
        }
        case spec::cns::allocated_namespace:
        case spec::cns::io_command_set_allocated_namespace: {
            if (view.cns == spec::cns::io_command_set_allocated_namespace && !nvm_set) {
                return fail(spec::generic_status::invalid_field);
            }
            if (!valid_nsid(c, nsid)) {
                return fail(spec::generic_status::invalid_namespace_or_format);
            }
            const auto* ns = c.nvm_subsystem().find(nsid);
            if (view.cns == spec::cns::io_command_set_allocated_namespace) {
                return send(c, cmd, spec::nvm_identify_namespace{});
            }
            // An unallocated NSID returns a zero-filled structure (Base 2.0 5.17.2.11).
            return send(c, cmd,
                        ns != nullptr ? identify_data<Controller>::namespace_data(c, *ns)
                                      : spec::identify_namespace{});
        }
        case spec::cns::namespace_controller_list: {
            if (!valid_nsid(c, nsid)) {
                return fail(spec::generic_status::invalid_namespace_or_format);
            }
            // The controllers attached to the NSID with an identifier of CNTID or above.
            spec::controller_list list{};
            if (const auto* ns = c.nvm_subsystem().find(nsid)) {
                std::vector<std::uint16_t> ids(ns->attached_controllers().begin(),
                                               ns->attached_controllers().end());
                std::sort(ids.begin(), ids.end());
                for (const std::uint16_t id : ids) {
                    if (id >= view.controller_id) {
                        list.push_back(id);
                    }
                }
            }
            return send(c, cmd, list);
        }
        case spec::cns::controller_list: {
            // Every controller of the subsystem with an identifier of CNTID or above.
            spec::controller_list list{};
            c.nvm_subsystem().for_each_controller([&](std::uint16_t id) {
                if (id >= view.controller_id) {
                    list.push_back(id);
                }
            });
            return send(c, cmd, list);
        }
        case spec::cns::io_command_set: {
            // One I/O Command Set combination: the NVM Command Set (bit 0), Base 2.0 5.17.2.18.
            std::array<std::uint64_t, 512> vectors{};
            vectors[0] = 1U;
            return send(c, cmd, vectors);
        }
        default: return fail(spec::generic_status::invalid_field);
        }
    }

    // ---- Get Log Page (Base 2.0 5.16) -------------------------------------------------------------

    static command_result get_log_page(Controller& c, command& cmd)
    {
        const auto view = spec::get_log_page_view::decode(cmd.sqe);
        const std::uint64_t length = view.byte_count();
        if (length > c.max_transfer_bytes()) {
            return fail(spec::generic_status::invalid_field);
        }
        const std::uint32_t nsid = cmd.sqe.nsid;
        std::span<std::byte> log{c.admin_buffer()};
        std::size_t log_size = 0;
        spec::async_event_type acknowledged = spec::async_event_type::vendor_specific;
        bool acknowledges = false;
        switch (view.log_page_id) {
        case spec::log_page_id::error_information:
            log_size = static_cast<std::size_t>(c.error_information_log().log_size());
            c.error_information_log().copy(log.first(log_size));
            acknowledged = spec::async_event_type::error;
            acknowledges = true;
            break;
        case spec::log_page_id::smart_health: {
            if (nsid != 0 && nsid != broadcast_nsid) {
                return fail(spec::generic_status::invalid_field); // LPA bit 0: no per-namespace data
            }
            const auto data = c.smart_health_data();
            log_size = sizeof(data);
            std::memcpy(log.data(), &data, sizeof(data));
            acknowledged = spec::async_event_type::smart_health;
            acknowledges = true;
            break;
        }
        case spec::log_page_id::firmware_slot: {
            const auto data = c.firmware().log();
            log_size = sizeof(data);
            std::memcpy(log.data(), &data, sizeof(data));
            break;
        }
        case spec::log_page_id::changed_namespace_list: {
            log_size = sizeof(spec::changed_namespace_list);
            std::memcpy(log.data(), &c.changed_namespaces(), log_size);
            acknowledged = spec::async_event_type::notice;
            acknowledges = true;
            break;
        }
        case spec::log_page_id::lba_status_information: log_size = lba_status_log(c, log); break;
        case spec::log_page_id::commands_supported_and_effects: {
            if (view.command_set_id != spec::command_set_identifier::nvm) {
                return fail(spec::generic_status::invalid_field);
            }
            spec::commands_supported_and_effects data{};
            Controller::admin_table().fill_effects(data.admin_commands);
            Controller::io_table().fill_effects(data.io_commands);
            if (c.message_based()) {
                // Refused as Invalid Command Opcode there, so not supported (CSUPP 0).
                for (const auto opcode : queue_management_commands<Controller>::opcodes) {
                    data.admin_commands[static_cast<std::uint8_t>(opcode)] = {};
                }
            } else if (!queue_management_commands<Controller>::shadow_doorbells_offered(c)) {
                data.admin_commands[static_cast<std::uint8_t>(spec::admin_opcode::doorbell_buffer_config)] =
                    {};
            }
            log_size = sizeof(data);
            std::memcpy(log.data(), &data, sizeof(data));
            break;
        }
        case spec::log_page_id::telemetry_host_initiated: {
            // A command refused for its offset must not capture: check before the Create.
            if (const auto checked =
                    log_page_transfer_of(view, c.telemetry().bytes().size(), telemetry_offset_alignment);
                !checked.ok()) {
                return command_result::failure(checked.status.with_dnr());
            }
            if (telemetry_create_requested(view)) {
                c.capture_telemetry();
            }
            const auto bytes = c.telemetry().bytes();
            log_size = std::min(bytes.size(), log.size());
            std::memcpy(log.data(), bytes.data(), log_size);
            break;
        }
        case spec::log_page_id::telemetry_controller_initiated: {
            // LPA bit 3 announces both telemetry logs; this controller initiates none (Base 2.0 5.16.1.9).
            const auto header = empty_telemetry_controller_log(c.nvm_subsystem().identity().ieee_oui);
            log_size = sizeof(header);
            std::memcpy(log.data(), &header, sizeof(header));
            break;
        }
        default: return fail(spec::command_specific_status::invalid_log_page);
        }
        const auto transfer =
            log_page_transfer_of(view, log_size,
                                 view.log_page_id == spec::log_page_id::telemetry_host_initiated ||
                                         view.log_page_id == spec::log_page_id::telemetry_controller_initiated
                                     ? telemetry_offset_alignment
                                     : log_page_offset_alignment);
        if (!transfer.ok()) {
            return command_result::failure(transfer.status.with_dnr());
        }
        // The window [offset, offset + length) of the log; bytes past its end read as zero.
        const auto out = c.log_buffer().first(length);
        copy_log_window(log.first(log_size), transfer.offset, out);
        if (const auto status = c.transfer_to_host(cmd, out); !status.is_success()) {
            return command_result::failure(status);
        }
        if (acknowledges && !view.retain_async_event) {
            if (view.log_page_id == spec::log_page_id::changed_namespace_list) {
                c.clear_changed_namespaces();
            }
            c.acknowledge_event_type(acknowledged);
        }
        return command_result::success();
    }

    // ---- Asynchronous Event Request (5.2), Abort (5.1), Keep Alive (5.25) -------------------

    static command_result async_event_request(Controller& c, command& cmd)
    {
        if (!c.async_events().add_request(cmd.sqe.command_id())) {
            return fail(spec::command_specific_status::async_event_request_limit_exceeded);
        }
        // Held by the asynchronous event queue: the request slot is returned now and the
        // completion is built from the command identifier when an event arrives.
        c.release_without_completion(cmd);
        return command_result::pending();
    }

    /// Abort: a command still waiting for a staging buffer is aborted (dw0 bit 0 = 0); any other
    /// command has already reached the backend or completed (dw0 bit 0 = 1, not aborted).
    static command_result abort(Controller& c, command& cmd)
    {
        const auto view = spec::abort_view::decode(cmd.sqe);
        return command_result::success(c.abort_waiting(view.sq_id, view.command_id) ? 0U : 1U);
    }

    static command_result keep_alive(Controller& c, command& /*cmd*/)
    {
        c.keep_alive_received();
        return command_result::success();
    }

    // ---- Namespace Attachment (5.23) ------------------------------------------------------------

    static command_result namespace_attachment(Controller& c, command& cmd)
    {
        const auto view = spec::namespace_attachment_view::decode(cmd.sqe);
        const std::uint32_t nsid = cmd.sqe.nsid;
        if (view.select != spec::namespace_attachment_select::attach &&
            view.select != spec::namespace_attachment_select::detach) {
            return fail(spec::generic_status::invalid_field);
        }
        auto* ns = nsid == broadcast_nsid ? nullptr : c.nvm_subsystem().find(nsid);
        if (ns == nullptr) {
            return fail(spec::generic_status::invalid_field);
        }
        // Controller List (Base 2.0 Figure 139): a count, then that many controller identifiers.
        std::array<std::uint16_t, 2048> list{};
        if (auto status = c.transfer_from_host(cmd, std::as_writable_bytes(std::span{list}));
            !status.is_success()) {
            return command_result::failure(status);
        }
        const std::uint16_t count = list[0];
        if (count == 0 || count > list.size() - 1U) {
            return fail(spec::command_specific_status::controller_list_invalid);
        }
        const auto ids = std::span{list}.subspan(1, count);
        for (std::size_t i = 0; i < ids.size(); ++i) {
            if (!c.nvm_subsystem().has_controller(ids[i]) ||
                std::find(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(i), ids[i]) !=
                    ids.begin() + static_cast<std::ptrdiff_t>(i)) {
                return fail(spec::command_specific_status::controller_list_invalid);
            }
            const bool attached = ns->attached_to(ids[i]);
            if (view.select == spec::namespace_attachment_select::attach && attached) {
                return fail(spec::command_specific_status::namespace_already_attached);
            }
            if (view.select == spec::namespace_attachment_select::detach && !attached) {
                return fail(spec::command_specific_status::namespace_not_attached);
            }
        }
        if (view.select == spec::namespace_attachment_select::attach && !ns->shared() &&
            ns->attached_controllers().size() + ids.size() > 1U) {
            return fail(spec::command_specific_status::namespace_is_private);
        }
        for (const std::uint16_t id : ids) {
            if (view.select == spec::namespace_attachment_select::attach) {
                c.nvm_subsystem().attach(nsid, id);
            } else {
                c.nvm_subsystem().detach(nsid, id);
            }
        }
        return command_result::success();
    }

    // ---- Namespace Management (Base 2.0, Namespace Management command) -------------------------

    static command_result namespace_management(Controller& c, command& cmd)
    {
        const auto view = spec::namespace_management_view::decode(cmd.sqe);
        switch (view.select) {
        case spec::namespace_management_select::create: return create_namespace(c, cmd, view);
        case spec::namespace_management_select::remove: return delete_namespace(c, cmd.sqe.nsid);
        }
        return fail(spec::generic_status::invalid_field);
    }

    /// Create: the host's Identify Namespace structure names NSZE, NCAP, FLBAS, DPS and NMIC (and
    /// ANAGRPID, NVMSETID, ENDGID, which this subsystem does not have); CQE DW0 returns the NSID.
    static command_result create_namespace(Controller& c, command& cmd,
                                           const spec::namespace_management_view& view)
    {
        if (view.command_set_id != spec::command_set_identifier::nvm) {
            return fail(spec::command_specific_status::io_command_set_not_supported);
        }
        spec::identify_namespace requested{};
        if (auto status = c.transfer_from_host(cmd, std::as_writable_bytes(std::span{&requested, 1}));
            !status.is_success()) {
            return command_result::failure(status);
        }
        if (requested.nsze == 0 || requested.ncap > requested.nsze) {
            return fail(spec::generic_status::invalid_field);
        }
        if (requested.ncap < requested.nsze) {
            return fail(spec::command_specific_status::thin_provisioning_not_supported);
        }
        const std::uint8_t format = requested.flbas.format_index();
        const bool extended = requested.flbas.get(spec::formatted_lba_size::extended_metadata);
        if (!identify_data<Controller>::lba_format_accepted(c, format, extended) ||
            requested.dps.get(spec::protection_settings::type) != spec::protection_information_type::none ||
            requested.dps.get(spec::protection_settings::first_bytes)) {
            // A format, or a metadata placement, MC does not report; or protection information.
            return fail(spec::command_specific_status::invalid_format);
        }
        if (requested.anagrpid != 0) {
            return fail(spec::command_specific_status::ana_group_identifier_invalid);
        }
        if (requested.nvmsetid != 0 || requested.endgid != 0) {
            return fail(spec::generic_status::invalid_field);
        }
        const auto created = c.nvm_subsystem().create_namespace(
            namespace_request{.blocks = requested.nsze,
                              .options = namespace_options{
                                  .lba_format = format,
                                  .extended_metadata = extended,
                                  .shared = requested.nmic.get(spec::namespace_multipath_caps::shared),
                              }});
        switch (created.error) {
        case namespace_creation_error::none: return command_result::success(created.nsid);
        case namespace_creation_error::identifier_unavailable:
            return fail(spec::command_specific_status::namespace_identifier_unavailable);
        case namespace_creation_error::insufficient_capacity:
        case namespace_creation_error::no_backend: break;
        }
        return fail(spec::command_specific_status::namespace_insufficient_capacity);
    }

    /// Delete: the namespace is detached from every controller (each raises Namespace Attribute
    /// Changed) and its capacity returns to the pool; NSID FFFFFFFFh deletes every namespace.
    static command_result delete_namespace(Controller& c, std::uint32_t nsid)
    {
        std::vector<std::uint32_t> doomed;
        if (nsid == broadcast_nsid) {
            c.nvm_subsystem().for_each_namespace([&](namespace_type& ns) { doomed.push_back(ns.nsid()); });
        } else if (!valid_nsid(c, nsid)) {
            return fail(spec::generic_status::invalid_namespace_or_format);
        } else if (c.nvm_subsystem().find(nsid) == nullptr) {
            return fail(spec::generic_status::invalid_field); // not an allocated NSID
        } else {
            doomed.push_back(nsid);
        }
        for (const std::uint32_t victim : doomed) {
            if (!c.nvm_subsystem().removable(victim) || c.waits_for_staging(c.nvm_subsystem().find(victim))) {
                // Its I/O is still in a backend: the host may retry once it completes.
                return command_result::failure(spec::status{spec::generic_status::command_interrupted});
            }
        }
        for (const std::uint32_t victim : doomed) {
            c.nvm_subsystem().remove_namespace(victim);
        }
        return command_result::success();
    }

    // ---- Get LBA Status (Base 2.0, Get LBA Status command) -----------------------------------

    /// Reports the Potentially Unrecoverable LBAs of [SLBA, SLBA + RL) (RL 0: to the end of the
    /// namespace). The tracked ones are the ranges Write Uncorrectable marked; the emulated media
    /// has no other failures, so a scan (ATYPE 10h) finds nothing more and reports the same.
    static command_result get_lba_status(Controller& c, command& cmd)
    {
        const auto view = spec::get_lba_status_view::decode(cmd.sqe);
        const std::uint32_t nsid = cmd.sqe.nsid;
        auto* ns = nsid == broadcast_nsid ? nullptr : c.attached_namespace(nsid);
        if (ns == nullptr) {
            return fail(spec::generic_status::invalid_namespace_or_format);
        }
        if (view.action != spec::lba_status_action::scan_untracked &&
            view.action != spec::lba_status_action::tracked) {
            return fail(spec::generic_status::invalid_field);
        }
        if (view.byte_count() > c.max_transfer_bytes()) {
            return fail(spec::generic_status::invalid_field);
        }
        if (view.starting_lba >= ns->block_count()) {
            return fail(spec::generic_status::lba_out_of_range);
        }
        const std::uint64_t end = view.range_length == 0
                                      ? ns->block_count()
                                      : std::min(ns->block_count(), view.starting_lba + view.range_length);
        const auto out = c.log_buffer().first(static_cast<std::size_t>(view.byte_count()));
        std::fill(out.begin(), out.end(), std::byte{0});
        constexpr std::size_t header_bytes = sizeof(spec::lba_status_list_header);
        constexpr std::size_t descriptor_bytes = sizeof(spec::lba_status_descriptor);
        const std::size_t room =
            out.size() < header_bytes ? 0 : (out.size() - header_bytes) / descriptor_bytes;
        spec::lba_status_list_header header{};
        header.cmpc = spec::lba_status_completion::complete;
        ns->for_each_uncorrectable(view.starting_lba, end, [&](std::uint64_t first, std::uint64_t last) {
            while (first < last) {
                if (header.nlsd == room) {
                    header.cmpc = spec::lba_status_completion::incomplete;
                    return;
                }
                const auto blocks =
                    static_cast<std::uint32_t>(std::min<std::uint64_t>(last - first, 0xffffffffU));
                spec::lba_status_descriptor descriptor{};
                descriptor.dslba = first;
                descriptor.nlb = blocks;
                descriptor.status = spec::lba_range_status::unrecoverable;
                std::memcpy(out.data() + header_bytes + header.nlsd * descriptor_bytes, &descriptor,
                            descriptor_bytes);
                ++header.nlsd;
                first += blocks;
            }
        });
        std::memcpy(out.data(), &header, std::min(out.size(), header_bytes));
        return result_of(c.transfer_to_host(cmd, out));
    }

    /// Builds the LBA Status Information log (0Eh) in `log` and returns its size: one namespace
    /// element per attached namespace with tracked Potentially Unrecoverable LBAs, listing them.
    /// The generation counter changes whenever what the log reports changes.
    [[nodiscard]] static std::size_t lba_status_log(Controller& c, std::span<std::byte> log)
    {
        constexpr std::size_t header_bytes = sizeof(spec::lba_status_log_header);
        constexpr std::size_t element_bytes = sizeof(spec::lba_status_namespace_element);
        constexpr std::size_t range_bytes = sizeof(spec::lba_range_descriptor);
        spec::lba_status_log_header header{};
        std::uint64_t unrecoverable = 0;
        std::size_t at = header_bytes;
        c.nvm_subsystem().for_each_namespace([&](namespace_type& ns) {
            if (!ns.attached_to(c.controller_id()) || ns.uncorrectable_ranges() == 0 ||
                log.size() - at < element_bytes + range_bytes) {
                return;
            }
            unrecoverable += ns.uncorrectable_blocks();
            spec::lba_status_namespace_element element{};
            element.neid = ns.nsid();
            element.ratype = spec::lba_status_action::tracked;
            const std::size_t element_at = at;
            at += element_bytes;
            ns.for_each_uncorrectable(0, ns.block_count(), [&](std::uint64_t first, std::uint64_t last) {
                while (first < last && log.size() - at >= range_bytes) {
                    const auto blocks =
                        static_cast<std::uint32_t>(std::min<std::uint64_t>(last - first, 0xffffffffU));
                    spec::lba_range_descriptor range{};
                    range.rslba = first;
                    range.rnlb = blocks;
                    std::memcpy(log.data() + at, &range, range_bytes);
                    at += range_bytes;
                    ++element.nlrd;
                    first += blocks;
                }
            });
            std::memcpy(log.data() + element_at, &element, element_bytes);
            ++header.nlslne;
        });
        header.lslplen = static_cast<std::uint32_t>(at);
        header.estulb = static_cast<std::uint32_t>(std::min<std::uint64_t>(unrecoverable, 0xffffffffU));
        header.lsgc = static_cast<std::uint16_t>(c.nvm_subsystem().lba_status_generation());
        std::memcpy(log.data(), &header, header_bytes);
        return at;
    }

    // ---- Format NVM (5.14) -------------------------------------------------------------------

    static command_result format_nvm(Controller& c, command& cmd)
    {
        const auto view = spec::format_nvm_view::decode(cmd.sqe);
        const std::uint32_t nsid = cmd.sqe.nsid;
        if (nsid != broadcast_nsid && c.attached_namespace(nsid) == nullptr) {
            return fail(spec::generic_status::invalid_namespace_or_format);
        }
        // A format, or a metadata placement (MSET), that Identify Namespace does not report is a
        // setting the controller does not support; so is protection information.
        if (!identify_data<Controller>::lba_format_accepted(c, view.format_index,
                                                            view.metadata_in_extended_lba) ||
            view.protection_type != spec::format_protection_type::none) {
            return fail(spec::command_specific_status::invalid_format);
        }
        if (view.secure_erase != spec::format_secure_erase::none &&
            view.secure_erase != spec::format_secure_erase::user_data_erase) {
            return fail(spec::generic_status::invalid_field); // no cryptographic erase (FNA bit 2)
        }
        cmd.progress.last_nsid = nsid == broadcast_nsid ? 0U : nsid - 1U;
        cmd.block_result = block_status::success;
        return format_next(c, cmd);
    }

    /// Formats the next namespace: the new LBA format, then the whole backend deallocated, so
    /// every block (and the old data, with or without Secure Erase) reads back as zeroes.
    static command_result format_next(Controller& c, command& cmd)
    {
        if (cmd.block_result != block_status::success) {
            return command_result::failure(c.backend_failure(cmd, cmd.block_result));
        }
        const auto view = spec::format_nvm_view::decode(cmd.sqe);
        const bool all = cmd.sqe.nsid == broadcast_nsid;
        const std::uint32_t last = all ? c.nvm_subsystem().options().max_namespaces : cmd.sqe.nsid;
        for (auto nsid = cmd.progress.last_nsid + 1U; nsid <= last; ++nsid) {
            auto* ns = c.attached_namespace(nsid);
            if (ns == nullptr) {
                continue;
            }
            cmd.progress.last_nsid = nsid;
            cmd.ns = ns;
            ns->set_format(view.format_index, view.metadata_in_extended_lba);
            cmd.block[0] = block_request{.operation = block_operation::deallocate,
                                         .offset = 0,
                                         .length = ns->backend().capacity_bytes()};
            cmd.continuation = &format_next;
            c.submit_blocks(cmd, 1);
            return command_result::pending();
        }
        return command_result::success();
    }

    // ---- Firmware Image Download (5.13) and Firmware Commit (5.12) ---------------------------------

    static command_result firmware_image_download(Controller& c, command& cmd)
    {
        const auto view = spec::firmware_image_download_view::decode(cmd.sqe);
        if (view.dword_count * 4U > c.max_transfer_bytes()) {
            return fail(spec::generic_status::invalid_field);
        }
        // A piece may be MDTS bytes, more than admin_data_ holds: the log window has MDTS bytes.
        const auto data = c.log_buffer().first(view.dword_count * 4U);
        if (auto status = c.transfer_from_host(cmd, data); !status.is_success()) {
            return command_result::failure(status);
        }
        const auto status = c.firmware().download(view, data);
        return result_of(status.is_success() ? status : status.with_dnr());
    }

    /// Firmware Commit (Base 2.0 5.12) on the emulated slots; the new revision becomes active at
    /// the reset the commit action asks for.
    static command_result firmware_commit(Controller& c, command& cmd)
    {
        const auto outcome = c.firmware().commit(spec::firmware_commit_view::decode(cmd.sqe));
        if (outcome.status.is_success()) {
            return command_result::success();
        }
        // The "activation requires a reset" statuses report a commit that was done: hosts (nvme-cli)
        // match them without DNR. Every other status refuses the command: DNR.
        using spec::command_specific_status;
        const bool committed =
            outcome.status ==
                spec::status{command_specific_status::firmware_activation_requires_conventional_reset} ||
            outcome.status ==
                spec::status{command_specific_status::firmware_activation_requires_subsystem_reset} ||
            outcome.status ==
                spec::status{command_specific_status::firmware_activation_requires_controller_reset};
        return command_result::failure(committed ? outcome.status : outcome.status.with_dnr());
    }
};

NVMEKIT_END_NAMESPACE
