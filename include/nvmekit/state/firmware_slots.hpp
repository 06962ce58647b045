#pragma once
/// Firmware slots, Firmware Image Download (Base 2.0 5.13), Firmware Commit (Base 2.0 5.12) and
/// the Firmware Slot Information log (log 03h, Base 2.0 5.16.1.4).
///
/// The model keeps, per slot, the revision of the image stored there; the image bytes are held
/// only while being downloaded. The revision of an image is, by this library's definition, its
/// first 8 bytes: printable ASCII (20h to 7Eh), not all spaces, as FRS1-FRS7 and Identify
/// Controller FR hold it. Anything else is an Invalid Firmware Image.
///
/// Download (Base 2.0 5.13): pieces may arrive in any order but must not overlap (Overlapping
/// Range). A piece at offset 0 when offset 0 already holds data starts a new image, discarding the
/// previous pieces, so a host can retry a download from the start. OFST and NUMD must be
/// multiples of FWUG (Invalid Field in Command), except that one piece with a shorter length may
/// end the image; nothing may be downloaded past it. An image larger than `max_image_bytes` is
/// Invalid Field in Command. At commit, an image with a gap is an Invalid Firmware Image.
///
/// Commit (Base 2.0 5.12): FS 0 lets the controller choose a slot that is not active: the
/// lowest-numbered empty writable slot, else the lowest-numbered writable one, for a replace; the
/// slot most recently replaced for an activation. A committed image is consumed: the next commit
/// needs a new download. Activation waits for the reset `activation_reset` names; Commit Action
/// 001b/010b then completes with success (Controller Level Reset), Firmware Activation Requires
/// Conventional Reset (0Bh) or Requires NVM Subsystem Reset (10h). Commit Action 011b activates
/// at once when `activation_without_reset` (FRMW bit 04) is set, else it completes with Firmware
/// Activation Requires Controller Level Reset (11h), or 0Bh/10h, and activates at that reset.
/// Boot partitions (110b, 111b) are not supported: Invalid Field in Command.
///
/// Resets are ordered Controller Level Reset (CC.EN 1 to 0, FLR) < conventional reset < NVM
/// Subsystem Reset: an activation waiting for one kind happens at it or at a stronger one. Every
/// reset discards a download that was not committed.

#include <algorithm>
#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <stdexcept>
#include <string_view>
#include <vector>

#include <nvmekit/config.hpp>
#include <nvmekit/spec/commands.hpp>
#include <nvmekit/spec/identify.hpp>
#include <nvmekit/spec/log_pages.hpp>
#include <nvmekit/spec/status.hpp>
#include <nvmekit/spec/text.hpp>

NVMEKIT_BEGIN_NAMESPACE

/// Kinds of reset, weakest first, that a pending firmware activation may wait for.
enum class firmware_reset : std::uint8_t {
    controller_level = 0, ///< CC.EN 1 to 0, Function Level Reset
    conventional = 1,     ///< PCI Express conventional reset (power cycle, hot reset)
    subsystem = 2,        ///< NVM Subsystem Reset (NSSR)
};

struct firmware_slots_config {
    std::uint8_t slot_count = 2;           ///< FRMW bits 03:01, 1 to 7
    bool slot1_read_only = false;          ///< FRMW bit 00
    bool activation_without_reset = false; ///< FRMW bit 04: Commit Action 011b activates at once
    firmware_reset activation_reset = firmware_reset::controller_level; ///< reset an activation needs
    std::uint8_t update_granularity = 0;                ///< FWUG, 4 KiB units; 00h and FFh: no restriction
    std::size_t max_image_bytes = std::size_t{1} << 20; ///< largest image, a multiple of 4
    std::string_view initial_revision = "1.0";          ///< revision in slot 1, active at power-on
};

/// Outcome of a Firmware Commit.
struct firmware_commit_result {
    spec::status status = spec::status::success();
    std::uint8_t slot = 0;      ///< slot acted on (the controller's choice for FS 0); 0 on error
    bool activated_now = false; ///< 011b ran the image at once: update Identify FR, and post a
                                ///< Firmware Activation Starting notice when enabled
};

class firmware_slots {
public:
    static constexpr std::size_t revision_length = spec::firmware_slot_log::revision_length;
    static constexpr std::size_t max_slots = spec::firmware_slot_log::slot_count;

    /// Throws std::invalid_argument for a slot count outside 1 to 7, a maximum image size that is
    /// 0 or not a multiple of 4, or an initial revision that is empty or longer than 8 characters.
    explicit firmware_slots(const firmware_slots_config& config = {})
        : config_{checked(config)}, image_(config.max_image_bytes), downloaded_(config.max_image_bytes / 4)
    {
        spec::assign_space_padded(slots_[0], config.initial_revision);
        running_ = slots_[0];
        config_.initial_revision = {};
    }

    /// FRMW of Identify Controller (byte 260).
    [[nodiscard]] spec::firmware_updates attributes() const noexcept { return frmw(); }
    /// Same as `attributes()`, named after the Identify Controller field.
    [[nodiscard]] spec::firmware_updates frmw() const noexcept
    {
        return spec::firmware_updates{}
            .with(spec::firmware_updates::slot1_read_only, config_.slot1_read_only)
            .with(spec::firmware_updates::slot_count, config_.slot_count)
            .with(spec::firmware_updates::activation_without_reset, config_.activation_without_reset);
    }
    /// FWUG of Identify Controller (byte 319).
    [[nodiscard]] std::uint8_t fwug() const noexcept { return config_.update_granularity; }

    /// Checks a Firmware Image Download before its data is fetched: Invalid Field in Command for a
    /// piece that breaks FWUG or reaches past `max_image_bytes`, or that follows a short last
    /// piece; Overlapping Range for a piece that overlaps downloaded data (a piece at offset 0
    /// instead restarts the image).
    [[nodiscard]] spec::status check_download(const spec::firmware_image_download_view& view) const noexcept
    {
        return check(view.offset_bytes, view.byte_count(), restarts(view.offset_bytes));
    }

    /// Firmware Image Download of `data` (NUMD + 1 dwords, so a non-empty multiple of 4 bytes) at
    /// dword offset `offset_dwords` (OFST). See `check_download` for the errors; nothing is
    /// stored on error.
    spec::status download(std::uint32_t offset_dwords, std::span<const std::byte> data) noexcept
    {
        NVMEKIT_ASSERT(!data.empty() && data.size() % 4 == 0, "a download is NUMD + 1 whole dwords");
        const std::uint64_t offset = std::uint64_t{offset_dwords} * 4;
        const bool restart = restarts(offset);
        const spec::status status = check(offset, data.size(), restart);
        if (!status.is_success()) {
            return status;
        }
        if (restart) {
            discard_download();
        }
        const auto start = static_cast<std::size_t>(offset);
        std::memcpy(image_.data() + start, data.data(), data.size());
        std::fill_n(downloaded_.begin() + static_cast<std::ptrdiff_t>(start / 4), data.size() / 4, true);
        image_end_ = std::max(image_end_, start + data.size());
        short_tail_ = short_tail_ || data.size() % granularity() != 0;
        return status;
    }

    /// Firmware Image Download of a decoded command whose `data` (`view.byte_count()` bytes) was
    /// fetched from the host.
    spec::status download(const spec::firmware_image_download_view& view,
                          std::span<const std::byte> data) noexcept
    {
        NVMEKIT_ASSERT(data.size() == view.byte_count(), "the data of a download is NUMD + 1 dwords");
        return download(static_cast<std::uint32_t>(view.offset_bytes / 4), data);
    }

    /// OFST counts dwords: a 64-bit offset is most likely a byte offset (`view.offset_bytes`).
    /// Pass the view, or the dword offset as a std::uint32_t.
    // clang-format off
    template <std::integral Offset>
        requires(sizeof(Offset) > sizeof(std::uint32_t))
    spec::status download(Offset offset, std::span<const std::byte> data) = delete;
    // clang-format on

    /// Firmware Commit (Base 2.0 5.12) of slot `slot` (FS, 0 to 7) with Commit Action `action`.
    firmware_commit_result commit(std::uint8_t slot, spec::firmware_commit_action action) noexcept
    {
        using enum spec::firmware_commit_action;
        if (action != replace && action != replace_and_activate_on_reset && action != activate_on_reset &&
            action != replace_and_activate_now) {
            return failure(spec::generic_status::invalid_field);
        }
        if (slot > config_.slot_count) {
            return failure(spec::command_specific_status::invalid_firmware_slot);
        }
        if (action == activate_on_reset || (action == replace_and_activate_now && image_end_ == 0)) {
            return activate(slot == 0 ? last_replaced_ : slot, action == replace_and_activate_now);
        }
        const std::uint8_t target = slot == 0 ? choose_replace_slot() : slot;
        if (target == 0 || (target == 1 && config_.slot1_read_only)) {
            return failure(spec::command_specific_status::invalid_firmware_slot);
        }
        if (!image_valid()) {
            return failure(spec::command_specific_status::invalid_firmware_image);
        }
        std::memcpy(slots_[target - 1].data(), image_.data(), revision_length);
        last_replaced_ = target;
        discard_download();
        if (action == replace) {
            return firmware_commit_result{.slot = target};
        }
        return activate(target, action == replace_and_activate_now);
    }

    /// Firmware Commit from a decoded command.
    firmware_commit_result commit(const spec::firmware_commit_view& view) noexcept
    {
        return commit(view.slot, view.action);
    }

    /// A reset of kind `kind`: runs the pending image when it waits for this kind or a weaker one,
    /// and discards an uncommitted download. Returns true when the running firmware changed
    /// slot or revision (update Identify FR).
    bool on_reset(firmware_reset kind) noexcept
    {
        discard_download();
        if (pending_slot_ == 0 || kind < pending_reset_) {
            return false;
        }
        const bool changed = active_slot_ != pending_slot_ || running_ != slots_[pending_slot_ - 1];
        active_slot_ = pending_slot_;
        running_ = slots_[pending_slot_ - 1];
        pending_slot_ = 0;
        return changed;
    }
    bool on_controller_reset() noexcept { return on_reset(firmware_reset::controller_level); }
    bool on_conventional_reset() noexcept { return on_reset(firmware_reset::conventional); }
    bool on_subsystem_reset() noexcept { return on_reset(firmware_reset::subsystem); }

    /// Revision of the running firmware, for Identify Controller FR (space padded).
    [[nodiscard]] std::string_view active_revision() const noexcept { return spec::text_of(running_); }
    /// Slot the running firmware was loaded from.
    [[nodiscard]] std::uint8_t active_slot() const noexcept { return active_slot_; }
    /// Slot activated at the next qualifying reset, 0 for none.
    [[nodiscard]] std::uint8_t pending_slot() const noexcept { return pending_slot_; }
    /// Revision stored in `slot` (1 to slot count), empty when the slot holds no image.
    [[nodiscard]] std::string_view slot_revision(std::size_t slot) const noexcept
    {
        NVMEKIT_ASSERT(slot >= 1 && slot <= config_.slot_count, "firmware slot out of range");
        return spec::text_of(slots_[slot - 1]);
    }
    /// The image downloaded so far: bytes 0 to the end of the highest piece.
    [[nodiscard]] std::span<const std::byte> downloaded_image() const noexcept
    {
        return std::span<const std::byte>{image_}.first(image_end_);
    }

    /// The Firmware Slot Information log: AFI with the running slot and the pending slot, and
    /// FRS1 to FRSn; slots without an image and slots past the slot count are zero.
    [[nodiscard]] spec::firmware_slot_log log() const noexcept
    {
        spec::firmware_slot_log page{};
        page.afi.set(spec::active_firmware_info::active_slot, active_slot_);
        page.afi.set(spec::active_firmware_info::next_slot, pending_slot_);
        for (std::size_t slot = 0; slot < config_.slot_count; ++slot) {
            page.revisions[slot] = slots_[slot];
        }
        return page;
    }

private:
    using revision_type = spec::firmware_slot_log::revision_type;

    static firmware_slots_config checked(const firmware_slots_config& config)
    {
        if (config.slot_count < 1 || config.slot_count > max_slots) {
            throw std::invalid_argument{"nvmekit::firmware_slots: slot_count must be 1 to 7"};
        }
        if (config.max_image_bytes == 0 || config.max_image_bytes % 4 != 0) {
            throw std::invalid_argument{
                "nvmekit::firmware_slots: max_image_bytes must be a non-zero multiple of 4"};
        }
        if (config.initial_revision.empty() || config.initial_revision.size() > revision_length) {
            throw std::invalid_argument{
                "nvmekit::firmware_slots: initial_revision must be 1 to 8 characters"};
        }
        return config;
    }

    /// Bytes OFST and NUMD must be multiples of: FWUG x 4 KiB, or a dword without a restriction.
    [[nodiscard]] std::uint64_t granularity() const noexcept
    {
        const std::uint8_t fwug = config_.update_granularity;
        return fwug == 0x00 || fwug == 0xff ? 4U : std::uint64_t{fwug} * 4096;
    }

    /// Whether a piece at `offset` starts a new image.
    [[nodiscard]] bool restarts(std::uint64_t offset) const noexcept
    {
        return offset == 0 && image_end_ != 0 && downloaded_[0];
    }

    [[nodiscard]] spec::status check(std::uint64_t offset, std::uint64_t length, bool restart) const noexcept
    {
        const std::uint64_t unit = granularity();
        if (offset % unit != 0 || length > config_.max_image_bytes ||
            offset > config_.max_image_bytes - length) {
            return spec::generic_status::invalid_field;
        }
        if (restart) {
            return spec::status::success();
        }
        const std::uint64_t end = offset + length;
        const bool is_short = length % unit != 0;
        if (short_tail_ && (is_short || end > image_end_)) {
            return spec::generic_status::invalid_field;
        }
        if (is_short && end < image_end_) {
            return spec::generic_status::invalid_field;
        }
        const auto first = static_cast<std::ptrdiff_t>(offset / 4);
        const auto last = static_cast<std::ptrdiff_t>(end / 4);
        if (std::any_of(downloaded_.begin() + first, downloaded_.begin() + last,
                        [](bool held) { return held; })) {
            return spec::command_specific_status::overlapping_range;
        }
        return spec::status::success();
    }

    [[nodiscard]] bool image_valid() const noexcept
    {
        if (image_end_ < revision_length) {
            return false;
        }
        const auto held = downloaded_.begin() + static_cast<std::ptrdiff_t>(image_end_ / 4);
        if (!std::all_of(downloaded_.begin(), held, [](bool piece) { return piece; })) {
            return false;
        }
        bool all_spaces = true;
        for (std::size_t i = 0; i < revision_length; ++i) {
            const auto c = static_cast<unsigned char>(image_[i]);
            if (c < 0x20 || c > 0x7e) {
                return false;
            }
            all_spaces = all_spaces && c == ' ';
        }
        return !all_spaces;
    }

    [[nodiscard]] std::uint8_t choose_replace_slot() const noexcept
    {
        std::uint8_t fallback = 0;
        for (std::uint8_t slot = 1; slot <= config_.slot_count; ++slot) {
            if (slot == active_slot_ || (slot == 1 && config_.slot1_read_only)) {
                continue;
            }
            if (spec::text_of(slots_[slot - 1]).empty()) {
                return slot;
            }
            if (fallback == 0) {
                fallback = slot;
            }
        }
        return fallback;
    }

    /// Activates the image in `slot` now (`now`, 011b) or at the configured reset (001b, 010b).
    firmware_commit_result activate(std::uint8_t slot, bool now) noexcept
    {
        if (slot == 0) {
            return failure(spec::command_specific_status::invalid_firmware_slot);
        }
        if (spec::text_of(slots_[slot - 1]).empty()) {
            return failure(spec::command_specific_status::invalid_firmware_image);
        }
        if (now && config_.activation_without_reset) {
            active_slot_ = slot;
            running_ = slots_[slot - 1];
            if (pending_slot_ == slot) {
                pending_slot_ = 0;
            }
            return firmware_commit_result{.slot = slot, .activated_now = true};
        }
        pending_slot_ = slot;
        pending_reset_ = config_.activation_reset;
        return firmware_commit_result{.status = reset_status(now), .slot = slot};
    }

    /// The status of a commit whose activation waits for a reset (Base 2.0 5.12, Figure 102).
    [[nodiscard]] spec::status reset_status(bool asked_now) const noexcept
    {
        switch (config_.activation_reset) {
        case firmware_reset::conventional:
            return spec::command_specific_status::firmware_activation_requires_conventional_reset;
        case firmware_reset::subsystem:
            return spec::command_specific_status::firmware_activation_requires_subsystem_reset;
        case firmware_reset::controller_level: break;
        }
        if (!asked_now) {
            return spec::status::success();
        }
        return spec::command_specific_status::firmware_activation_requires_controller_reset;
    }

    [[nodiscard]] static firmware_commit_result failure(spec::status status) noexcept
    {
        return firmware_commit_result{.status = status};
    }

    void discard_download() noexcept
    {
        std::fill_n(downloaded_.begin(), static_cast<std::ptrdiff_t>((image_end_ + 3) / 4), false);
        image_end_ = 0;
        short_tail_ = false;
    }

    firmware_slots_config config_;
    std::array<revision_type, max_slots> slots_{};
    revision_type running_{};
    std::uint8_t active_slot_ = 1;
    std::uint8_t pending_slot_ = 0;
    firmware_reset pending_reset_ = firmware_reset::controller_level;
    std::uint8_t last_replaced_ = 0;
    std::vector<std::byte> image_;
    std::vector<bool> downloaded_; ///< one flag per dword of `image_`
    std::size_t image_end_ = 0;    ///< end of the highest piece downloaded
    bool short_tail_ = false;      ///< a piece shorter than the granularity ended the image
};

NVMEKIT_END_NAMESPACE
