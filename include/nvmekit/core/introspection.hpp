#pragma once
/// What the embedder reads of a running controller: its state, registers, counters (its own and
/// every poll group's), identity, temperature and Error Information log.
///
/// It owns the controller-wide counters (controller_statistics; the poll groups count their own).
///
/// Composition: detail::introspection<Controller, Traits> is a base of nvmekit::controller (CRTP;
/// controller.hpp), reaching the rest through self().

#include <cstddef>
#include <cstdint>

#include <nvmekit/command_sets/identify.hpp>
#include <nvmekit/config.hpp>
#include <nvmekit/core/controller_config.hpp>
#include <nvmekit/core/io_context.hpp>
#include <nvmekit/runtime/poll_group_state.hpp>
#include <nvmekit/spec/identify.hpp>
#include <nvmekit/state/error_log.hpp>
#include <nvmekit/state/register_file.hpp>
#include <nvmekit/state/reset_state_machine.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace detail {

/// Introspection of `Controller`; see the top of this header. `Controller` derives from it and
/// befriends it.
template <typename Controller, typename Traits>
class introspection {
protected:
    using command = detail::controller_command<Controller, Traits>;
    using group_type = detail::poll_group_state<command, Traits::threading::concurrent_groups>;

    introspection() = default;
    introspection(const introspection&) = delete;
    introspection& operator=(const introspection&) = delete;

    [[nodiscard]] Controller& self() noexcept { return static_cast<Controller&>(*this); }
    [[nodiscard]] const Controller& self() const noexcept { return static_cast<const Controller&>(*this); }

public:
    // ---- introspection ------------------------------------------------------------------------

    [[nodiscard]] controller_state state() const noexcept { return self().state_machine_.state(); }
    [[nodiscard]] const register_file& registers() const noexcept { return self().registers_; }
    [[nodiscard]] controller_statistics statistics() const noexcept
    {
        controller_statistics sum = statistics_;
        const auto add = [&](const group_type& group) {
            sum.commands += group.commands.load();
            sum.completions_posted += group.completions_posted.load();
            sum.completions_held += group.completions_held.load();
            sum.staging_waits += group.staging_waits.load();
            sum.dma_errors += group.dma_errors.load();
        };
        add(self().coordination_.admin());
        for (const auto& group : self().coordination_.groups()) {
            add(*group);
        }
        return sum;
    }
    /// Commands fetched and not yet returned to their pool, over every queue, deleted queues
    /// whose commands are still in a backend included. Admin context (concurrent groups are
    /// paused while it counts).
    [[nodiscard]] std::size_t requests_in_use()
    {
        return self().with_groups_paused([this] { return self().count_requests_in_use(); });
    }

    /// The Identify Controller data this controller returns (command_sets/identify.hpp).
    [[nodiscard]] spec::identify_controller identify_controller_data() const
    {
        return identify_data<Controller>::controller_data(self());
    }
    /// What Identify Controller reports of this controller beyond the subsystem's identity.
    [[nodiscard]] const controller_identity& identity() const noexcept { return self().config_.identity; }
    /// MDTS as Identify Controller reports it (controller_config::mdts).
    [[nodiscard]] std::uint8_t mdts() const noexcept { return self().config_.mdts; }

    /// The composite temperature the controller reports, in Kelvin.
    [[nodiscard]] std::uint16_t temperature() const noexcept
    {
        return self().logs_.health().composite_temperature();
    }
    /// Sets the composite temperature the controller reports, in Kelvin (the embedder's sensor).
    void set_temperature(std::uint16_t kelvin)
    {
        self().logs_.health().set_composite_temperature(kelvin);
        self().check_temperature();
    }
    [[nodiscard]] const error_log& errors() const noexcept { return self().logs_.errors(); }

protected:
    controller_statistics statistics_{};
};

} // namespace detail
NVMEKIT_END_NAMESPACE
