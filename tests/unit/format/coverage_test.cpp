// Every struct and enum of the spec layer has an fmt formatter, checked at compile time, and
// each one prints a value-initialized value. spec/commands.hpp is covered by commands_test.cpp;
// bits.hpp's templates and the text.hpp helpers are not printed types.
#include <nvmekit/format.hpp>
#include <nvmekit/spec.hpp>

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <string_view>

namespace spec = nvmekit::spec;

namespace {

template <typename... Types>
struct type_list {};

using spec_types = type_list<
    // spec/bits.hpp
    spec::uint128_le,
    // spec/data_pointer.hpp
    spec::prp_entry, spec::prp2_role, spec::sgl_descriptor_type, spec::sgl_descriptor_subtype,
    spec::sgl_identifier, spec::sgl_descriptor,
    // spec/fabrics.hpp
    spec::fabrics_command, spec::connect_attributes, spec::connect_command, spec::connect_data,
    spec::connect_response_dword0, spec::connect_invalid_parameter_dword0, spec::property_size,
    spec::property_attributes, spec::property_get_command, spec::property_set_command,
    spec::disconnect_command, spec::authentication_send_command, spec::authentication_receive_command,
    spec::transport_type, spec::address_family, spec::discovery_subsystem_type,
    spec::secure_channel_requirement, spec::transport_requirements, spec::discovery_entry_flags,
    spec::discovery_log_header, spec::discovery_log_entry,
    // spec/features.hpp
    spec::feature_id, spec::feature_select, spec::feature_capabilities, spec::arbitration,
    spec::power_management, spec::lba_range_type, spec::lba_range_kind, spec::lba_range_attributes,
    spec::lba_range_type_entry, spec::threshold_type, spec::temperature_select, spec::temperature_threshold,
    spec::error_recovery, spec::volatile_write_cache, spec::number_of_queues, spec::interrupt_coalescing,
    spec::interrupt_vector_configuration, spec::write_atomicity_normal, spec::async_event_configuration,
    spec::autonomous_power_state_transition, spec::apst_entry, spec::host_memory_buffer,
    spec::timestamp_origin, spec::timestamp_attributes, spec::timestamp_data, spec::keep_alive_timer,
    spec::host_controlled_thermal_management, spec::non_operational_power_state_config,
    spec::host_behavior_support,
    // spec/identify.hpp
    spec::cns, spec::command_set_identifier, spec::power_scale, spec::power_state_flags,
    spec::power_state_relative, spec::idle_power_attributes, spec::active_power_attributes,
    spec::power_state_descriptor, spec::controller_multipath_caps, spec::async_events_supported,
    spec::controller_attributes, spec::controller_type, spec::admin_command_support, spec::firmware_updates,
    spec::log_page_attributes, spec::queue_entry_sizes, spec::nvm_command_support,
    spec::fused_operation_support, spec::format_nvm_attributes, spec::flush_broadcast,
    spec::volatile_write_cache_support, spec::sgl_data_block_support, spec::sgl_support,
    spec::identify_controller, spec::lba_relative_performance, spec::lba_format, spec::namespace_features,
    spec::formatted_lba_size, spec::metadata_capabilities, spec::protection_capabilities,
    spec::protection_information_type, spec::protection_settings, spec::namespace_multipath_caps,
    spec::reservation_capabilities, spec::format_progress, spec::deallocated_read_value,
    spec::deallocate_features, spec::namespace_attributes, spec::identify_namespace,
    spec::protection_information_format, spec::extended_lba_format, spec::protection_information_capabilities,
    spec::nvm_identify_namespace, spec::nvm_identify_controller, spec::namespace_status,
    spec::independent_identify_namespace, spec::active_namespace_id_list, spec::namespace_id_type,
    spec::namespace_id_descriptor_header, spec::namespace_id_descriptor_list,
    spec::namespace_id_descriptor_list::descriptor, spec::io_command_set_vector,
    spec::identify_io_command_set, spec::controller_list,
    // spec/log_pages.hpp
    spec::log_page_id, spec::parameter_error_location, spec::error_information_entry,
    spec::smart_critical_warning, spec::endurance_group_critical_warning, spec::smart_health_log,
    spec::active_firmware_info, spec::firmware_slot_log, spec::changed_namespace_list,
    spec::command_submission_execution, spec::command_effects, spec::commands_supported_and_effects,
    spec::telemetry_log_header, spec::async_event_type, spec::error_event, spec::smart_health_event,
    spec::notice_event, spec::immediate_event, spec::async_event_completion, spec::lba_status_action,
    spec::lba_status_log_header, spec::lba_status_namespace_element, spec::lba_range_descriptor,
    // spec/opcodes.hpp
    spec::admin_opcode, spec::nvm_opcode, spec::fabrics_command_type, spec::data_transfer,
    // spec/queue_entries.hpp
    spec::fused_operation, spec::data_pointer_type, spec::command_dword0, spec::data_pointer,
    spec::submission_queue_entry, spec::completion_queue_entry,
    // spec/registers.hpp
    spec::register_offset, spec::register_description, spec::controller_power_scope, spec::cap_register,
    spec::vs_register, spec::intms_register, spec::intmc_register, spec::io_command_set_selected,
    spec::arbitration_mechanism, spec::shutdown_notification, spec::cc_register, spec::shutdown_status,
    spec::csts_register, spec::nssr_register, spec::aqa_register, spec::asq_register, spec::acq_register,
    spec::cmbloc_register, spec::cmb_size_units, spec::cmbsz_register, spec::boot_read_status,
    spec::bpinfo_register, spec::bprsel_register, spec::bpmbl_register, spec::cmbmsc_register,
    spec::cmbsts_register, spec::cmbebs_register, spec::cmbswtp_register, spec::nssd_register,
    spec::crto_register, spec::pmr_time_units, spec::pmrcap_register, spec::pmrctl_register,
    spec::pmr_health_status, spec::pmrsts_register, spec::pmrebs_register, spec::pmrswtp_register,
    spec::pmrmscl_register, spec::pmrmscu_register, spec::controller_register_block, spec::doorbell_location,
    // spec/status.hpp
    spec::status_code_type, spec::generic_status, spec::command_specific_status, spec::fabrics_status,
    spec::media_status, spec::path_status, spec::status,
    // spec/tcp.hpp
    spec::pdu_type, spec::pdu_flags, spec::pdu_common_header, spec::digest_options, spec::icreq_pdu,
    spec::icresp_pdu, spec::fatal_error_status, spec::term_req_pdu, spec::capsule_cmd_pdu,
    spec::capsule_resp_pdu, spec::h2c_data_pdu, spec::c2h_data_pdu, spec::r2t_pdu>;

/// Fails to compile, naming `T`, when `T` has no formatter.
template <typename T>
constexpr bool has_formatter()
{
    static_assert(fmt::is_formattable<T>::value, "every spec type has an fmt::formatter");
    return true;
}

template <typename... Types>
constexpr bool all_have_formatters(type_list<Types...> /*types*/)
{
    return (has_formatter<Types>() && ...);
}

static_assert(all_have_formatters(spec_types{}));

/// `T`'s name, as the compiler spells it in the function's signature.
template <typename T>
constexpr std::string_view type_name()
{
    return __PRETTY_FUNCTION__;
}

/// The types whose value-initialized value prints as nothing.
template <typename... Types>
std::string types_printing_nothing(type_list<Types...> /*types*/)
{
    std::string empty;
    const auto check = [&empty]<typename T>() {
        const auto value = std::make_unique<T>(); // several are 4 KiB
        if (fmt::format("{}", *value).empty()) {
            empty += fmt::format("{}\n", type_name<T>());
        }
    };
    (check.template operator()<Types>(), ...);
    return empty;
}

} // namespace

TEST(format_coverage, every_formatter_prints_a_value_initialized_value)
{
    EXPECT_EQ(types_printing_nothing(spec_types{}), "");
}
