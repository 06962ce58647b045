#pragma once
/// The command dispatcher: one constexpr table per queue type, indexed by opcode. The "is it
/// supported" check, dispatch and the Commands Supported and Effects log (Base 2.0 5.16.1.6) are
/// all read from the same table, so they cannot disagree.
///
///     constexpr auto admin = nvmekit::dispatch_table<my_context, my_command>{}
///                                .with(0x06, &identify, nvmekit::effects::none())
///                                .with(0xc0, &my_vendor_command, nvmekit::effects::none());
///     admin.supported(0x06);            // true
///     admin.dispatch(ctx, command);     // calls identify(ctx, command)
///
/// Vendor-specific commands (admin C0h-FFh, I/O 80h-FFh) and replacements of built-in handlers go
/// through with(); without() removes a command.

#include <array>
#include <cstddef>
#include <cstdint>

#include <nvmekit/config.hpp>
#include <nvmekit/spec/log_pages.hpp>
#include <nvmekit/spec/status.hpp>

NVMEKIT_BEGIN_NAMESPACE

/// What a handler tells the controller about its command.
struct command_result {
    enum class disposition : std::uint8_t {
        complete, ///< post the completion now with `status` and `dw0`
        pending,  ///< the command completes later (backend I/O, Asynchronous Event Request)
    };
    // Ordered so the struct packs into 8 bytes and returns in one register.
    std::uint32_t dw0 = 0;
    spec::status status = spec::status::success();
    disposition when = disposition::complete;

    [[nodiscard]] static constexpr command_result success(std::uint32_t dw0 = 0) noexcept
    {
        return {dw0, spec::status::success(), disposition::complete};
    }
    [[nodiscard]] static constexpr command_result pending() noexcept
    {
        return {0, spec::status::success(), disposition::pending};
    }
    /// A failed command; DNR is set unless the status says otherwise.
    [[nodiscard]] static constexpr command_result failure(spec::status status, std::uint32_t dw0 = 0) noexcept
    {
        return {dw0, status, disposition::complete};
    }
    [[nodiscard]] constexpr bool is_pending() const noexcept { return when == disposition::pending; }
};
static_assert(sizeof(command_result) == 8);

/// Effects entries for the table (Base 2.0 5.16.1.6; CSUPP is set by the table itself).
namespace effects {
[[nodiscard]] constexpr spec::command_effects none() noexcept { return spec::command_effects{}; }
/// The command changes logical block content (LBCC).
[[nodiscard]] constexpr spec::command_effects changes_content() noexcept
{
    return spec::command_effects{}.with(spec::command_effects::lbcc, true);
}
/// Namespace capability and inventory change, run exclusively for every namespace (Format NVM,
/// Namespace Attachment).
[[nodiscard]] constexpr spec::command_effects changes_namespaces() noexcept
{
    return spec::command_effects{}
        .with(spec::command_effects::lbcc, true)
        .with(spec::command_effects::ncc, true)
        .with(spec::command_effects::nic, true)
        .with(spec::command_effects::cse, spec::command_submission_execution::any_namespace_exclusive);
}
/// Namespace capability and inventory change without a change of logical block content, run
/// exclusively for every namespace (Namespace Management, Namespace Attachment).
[[nodiscard]] constexpr spec::command_effects changes_inventory() noexcept
{
    return spec::command_effects{}
        .with(spec::command_effects::ncc, true)
        .with(spec::command_effects::nic, true)
        .with(spec::command_effects::cse, spec::command_submission_execution::any_namespace_exclusive);
}
/// Controller capability change (Firmware Commit).
[[nodiscard]] constexpr spec::command_effects changes_controller() noexcept
{
    return spec::command_effects{}.with(spec::command_effects::ccc, true);
}
} // namespace effects

/// A dispatch table for handlers `command_result handler(Context&, Command&)`.
template <typename Context, typename Command>
class dispatch_table {
public:
    using context_type = Context;
    using command_type = Command;
    using handler_type = command_result (*)(Context&, Command&);

    constexpr dispatch_table() = default;

    /// This table with `opcode` handled by `handler` (added, or replacing the built-in handler).
    [[nodiscard]] constexpr dispatch_table with(std::uint8_t opcode, handler_type handler,
                                                spec::command_effects effects = effects::none()) const
    {
        dispatch_table table = *this;
        table.handlers_[opcode] = handler;
        table.effects_[opcode] = effects.with(spec::command_effects::csupp, true);
        return table;
    }

    /// This table without `opcode`: the command then completes with Invalid Command Opcode.
    [[nodiscard]] constexpr dispatch_table without(std::uint8_t opcode) const
    {
        dispatch_table table = *this;
        table.handlers_[opcode] = nullptr;
        table.effects_[opcode] = spec::command_effects{};
        return table;
    }

    [[nodiscard]] constexpr bool supported(std::uint8_t opcode) const noexcept
    {
        return effects_[opcode].get(spec::command_effects::csupp);
    }

    [[nodiscard]] constexpr handler_type handler(std::uint8_t opcode) const noexcept
    {
        return handlers_[opcode];
    }

    /// The Commands Supported and Effects entry of `opcode` (all zero when unsupported).
    [[nodiscard]] constexpr spec::command_effects effects(std::uint8_t opcode) const noexcept
    {
        return effects_[opcode];
    }

    /// Runs the handler of `opcode`; Invalid Command Opcode when there is none.
    command_result dispatch(Context& context, std::uint8_t opcode, Command& command) const
    {
        if (!supported(opcode)) {
            return command_result::failure(spec::status{spec::generic_status::invalid_opcode}.with_dnr());
        }
        return handlers_[opcode](context, command);
    }

    /// Copies the effects of every opcode into a Commands Supported and Effects array.
    constexpr void fill_effects(std::array<spec::command_effects, 256>& out) const noexcept
    {
        out = effects_;
    }

    /// Number of supported opcodes.
    [[nodiscard]] constexpr std::size_t size() const noexcept
    {
        std::size_t count = 0;
        for (const auto& effects : effects_) {
            count += effects.get(spec::command_effects::csupp) ? 1U : 0U;
        }
        return count;
    }

private:
    std::array<handler_type, 256> handlers_{};
    std::array<spec::command_effects, 256> effects_{};
};

NVMEKIT_END_NAMESPACE
