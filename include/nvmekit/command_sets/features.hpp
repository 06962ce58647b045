#pragma once
/// Set Features and Get Features (Base 2.0 5.27 and 5.15), handlers of the admin command table.
///
/// The features a feature table keeps (feature_table.hpp: Arbitration, Power Management,
/// Temperature Threshold, Error Recovery, Volatile Write Cache, Asynchronous Event Configuration,
/// Timestamp, Keep Alive Timer, Host Behavior Support, ...) go to the controller's table; the ones
/// that shape the controller itself are decided here: Number of Queues (07h), granted once per
/// Controller Reset, and Interrupt Coalescing (08h) and Interrupt Vector Configuration (09h),
/// applied to every processing context's coalescing. Everything goes through the
/// AdminHandlerContext (handler_context.hpp).

#include <algorithm>
#include <cstdint>
#include <span>

#include <nvmekit/config.hpp>
#include <nvmekit/core/dispatcher.hpp>
#include <nvmekit/spec/commands.hpp>
#include <nvmekit/spec/features.hpp>
#include <nvmekit/spec/status.hpp>
#include <nvmekit/state/feature_table.hpp>
#include <nvmekit/state/interrupt_coalescing.hpp>

NVMEKIT_BEGIN_NAMESPACE

template <typename Context>
struct feature_commands {
    using command = typename Context::command;

    static command_result set_features(Context& c, command& cmd)
    {
        const auto view = spec::set_features_view::decode(cmd.sqe);
        if (feature_table::handles(view.feature_id)) {
            return set_table_feature(c, cmd, view);
        }
        const bool controller_feature = view.feature_id == spec::feature_id::number_of_queues ||
                                        view.feature_id == spec::feature_id::interrupt_coalescing ||
                                        view.feature_id == spec::feature_id::interrupt_vector_configuration;
        if (!controller_feature) {
            return fail(spec::generic_status::invalid_field);
        }
        if (view.save) {
            return fail(spec::command_specific_status::feature_not_saveable);
        }
        switch (view.feature_id) {
        case spec::feature_id::number_of_queues: {
            const spec::number_of_queues requested{view.cdw11};
            if (requested.get(requested.nsqr) == 0xffff || requested.get(requested.ncqr) == 0xffff) {
                return fail(spec::generic_status::invalid_field);
            }
            // Allowed until the first I/O queue is created after a Controller Reset; the allocation
            // does not change between resets, so a repeated request gets the first answer
            // (Base 2.0 5.27.1.5).
            if (c.io_queue_created()) {
                return fail(spec::generic_status::command_sequence_error);
            }
            if (const auto granted = c.granted_queues()) {
                return command_result::success(granted->raw);
            }
            const std::uint16_t maximum = c.max_io_queues();
            const auto granted = spec::number_of_queues::from_counts(
                std::min<std::uint32_t>(requested.submission_queue_count(), maximum),
                std::min<std::uint32_t>(requested.completion_queue_count(), maximum));
            c.grant_queues(granted);
            return command_result::success(granted.raw);
        }
        case spec::feature_id::interrupt_coalescing:
            c.for_each_coalescer([&](interrupt_coalescer& coalescer) {
                coalescer.configure(spec::interrupt_coalescing{view.cdw11});
            });
            return command_result::success();
        case spec::feature_id::interrupt_vector_configuration: {
            const spec::interrupt_vector_configuration value{view.cdw11};
            if (value.get(value.iv) >= Context::limits.msix_vectors) {
                return fail(spec::generic_status::invalid_field);
            }
            c.for_each_coalescer([&](interrupt_coalescer& coalescer) {
                static_cast<void>(
                    coalescer.set_coalescing_disabled(value.get(value.iv), value.get(value.cd)));
            });
            return command_result::success();
        }
        default: return fail(spec::generic_status::invalid_field);
        }
    }

    static command_result get_features(Context& c, command& cmd)
    {
        const auto view = spec::get_features_view::decode(cmd.sqe);
        if (feature_table::handles(view.feature_id)) {
            return get_table_feature(c, cmd, view);
        }
        switch (view.feature_id) {
        case spec::feature_id::number_of_queues: {
            const auto maximum = spec::number_of_queues::from_counts(c.max_io_queues(), c.max_io_queues());
            return feature_value(view.select, c.granted_queues().value_or(maximum).raw, maximum.raw);
        }
        case spec::feature_id::interrupt_coalescing:
            return feature_value(view.select, c.admin_coalescer().configuration().raw, 0);
        case spec::feature_id::interrupt_vector_configuration: {
            const spec::interrupt_vector_configuration requested{cmd.sqe.cdw11};
            const std::uint16_t vector = requested.get(requested.iv);
            if (vector >= Context::limits.msix_vectors) {
                return fail(spec::generic_status::invalid_field);
            }
            const auto current = spec::interrupt_vector_configuration{}
                                     .with(spec::interrupt_vector_configuration::iv, vector)
                                     .with(spec::interrupt_vector_configuration::cd,
                                           c.admin_coalescer().coalescing_disabled(vector));
            const auto default_value =
                spec::interrupt_vector_configuration{}.with(spec::interrupt_vector_configuration::iv, vector);
            return feature_value(view.select, current.raw, default_value.raw);
        }
        default: return fail(spec::generic_status::invalid_field);
        }
    }

private:
    [[nodiscard]] static command_result fail(auto code) noexcept
    {
        return command_result::failure(spec::status{code}.with_dnr());
    }

    static command_result set_table_feature(Context& c, command& cmd, const spec::set_features_view& view)
    {
        auto& features = c.features();
        feature_result result;
        if (view.feature_id == spec::feature_id::timestamp) {
            spec::timestamp_data data{};
            if (auto status = c.transfer_from_host(cmd, std::as_writable_bytes(std::span{&data, 1}));
                !status.is_success()) {
                return command_result::failure(status);
            }
            result = features.set_timestamp(data, c.clock().now(), view.save);
        } else if (view.feature_id == spec::feature_id::host_behavior_support) {
            spec::host_behavior_support data{};
            if (auto status = c.transfer_from_host(cmd, std::as_writable_bytes(std::span{&data, 1}));
                !status.is_success()) {
                return command_result::failure(status);
            }
            result = features.set_host_behavior(data, view.save);
        } else {
            result = features.set(view.feature_id, view.cdw11, view.save);
        }
        if (!result.status.is_success()) {
            return command_result::failure(result.status, result.dw0);
        }
        if (view.feature_id == spec::feature_id::keep_alive_timer) {
            c.keep_alive_received(); // the timer starts (or stops, with KATO 0)
        }
        if (view.feature_id == spec::feature_id::temperature_threshold) {
            c.check_temperature(); // a threshold may now be crossed
        }
        return command_result::success(result.dw0);
    }

    static command_result get_table_feature(Context& c, command& cmd, const spec::get_features_view& view)
    {
        auto& features = c.features();
        feature_result result;
        if (view.feature_id == spec::feature_id::timestamp) {
            spec::timestamp_data data{};
            result = features.get_timestamp(view.select, c.clock().now(), data);
            if (result.status.is_success() && view.select != spec::feature_select::supported_capabilities) {
                if (auto status = c.transfer_to_host(cmd, std::as_bytes(std::span{&data, 1}));
                    !status.is_success()) {
                    return command_result::failure(status);
                }
            }
        } else if (view.feature_id == spec::feature_id::host_behavior_support) {
            spec::host_behavior_support data{};
            result = features.get_host_behavior(view.select, data);
            if (result.status.is_success() && view.select != spec::feature_select::supported_capabilities) {
                if (auto status = c.transfer_to_host(cmd, std::as_bytes(std::span{&data, 1}));
                    !status.is_success()) {
                    return command_result::failure(status);
                }
            }
        } else {
            result = features.get(view.feature_id, view.select, cmd.sqe.cdw11);
        }
        return result.status.is_success() ? command_result::success(result.dw0)
                                          : command_result::failure(result.status, result.dw0);
    }

    /// A changeable, not saveable, controller-wide feature's value for each SEL (Base 2.0 5.15):
    /// saved reads as the default when the feature cannot be saved.
    [[nodiscard]] static command_result feature_value(spec::feature_select select, std::uint32_t current,
                                                      std::uint32_t default_value)
    {
        switch (select) {
        case spec::feature_select::current: return command_result::success(current);
        case spec::feature_select::default_value:
        case spec::feature_select::saved: return command_result::success(default_value);
        case spec::feature_select::supported_capabilities:
            return command_result::success(
                spec::feature_capabilities{}.with(spec::feature_capabilities::changeable, true).raw);
        }
        return fail(spec::generic_status::invalid_field);
    }
};

NVMEKIT_END_NAMESPACE
