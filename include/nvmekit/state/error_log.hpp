#pragma once
/// The Error Information log (log 01h, Base 2.0 5.16.1.2): the most recent errors, newest first.
///
/// A bounded ring of 64-byte entries; its capacity is ELPE + 1 (Identify Controller byte 262,
/// 0's based, so 1 to 256 entries). When full, a new entry replaces the oldest. Each entry gets
/// the next Error Count: it starts at 1, is never 0 for a valid entry (0 marks an unused entry),
/// and rolls over from FFFFFFFF_FFFFFFFFh to 1. Reading the log does not clear it; a Controller
/// Level Reset should (`clear()`), while the Error Count is retained. The number of entries
/// ever recorded feeds the SMART / Health "Number of Error Information Log Entries".

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <stdexcept>
#include <vector>

#include <nvmekit/config.hpp>
#include <nvmekit/spec/log_pages.hpp>
#include <nvmekit/spec/status.hpp>
#include <nvmekit/state/log_page.hpp>

NVMEKIT_BEGIN_NAMESPACE

/// The facts of one error, as the controller knows them when it posts the failed completion.
/// Fields not tied to a command keep their "not applicable" defaults (Base 2.0 5.16.1.2).
struct error_record {
    std::uint16_t sq_id = spec::error_field_not_applicable;      ///< SQID of the failed command
    std::uint16_t command_id = spec::error_field_not_applicable; ///< CID of the failed command
    spec::status status{};                                       ///< status the command completed with
    bool phase_tag = false;                                      ///< phase tag of that completion
    spec::parameter_error_location location = spec::parameter_error_location::not_applicable();
    std::uint64_t lba = 0;                     ///< first LBA in error, if applicable
    std::uint32_t nsid = 0;                    ///< namespace of the error, if applicable
    std::uint8_t vendor_specific_log_page = 0; ///< LID of vendor-specific detail, 0 for none
    std::uint8_t transport_type = 0;           ///< TRTYPE, 0 when the error is not transport related
    std::uint64_t command_specific_information = 0;
    std::uint16_t transport_specific_information = 0;
};

class error_log {
public:
    static constexpr std::size_t entry_size = sizeof(spec::error_information_entry);
    static constexpr std::size_t default_capacity = 64;
    /// ELPE is one byte, 0's based.
    static constexpr std::size_t max_capacity = 256;

    /// `capacity` entries (ELPE + 1, 1 to 256); `last_error_count` restores the Error Count
    /// retained across power off (the next entry gets `last_error_count + 1`). Throws
    /// std::invalid_argument for a capacity out of range.
    explicit error_log(std::size_t capacity = default_capacity, std::uint64_t last_error_count = 0)
        : entries_(checked_capacity(capacity)), last_error_count_{last_error_count}
    {}

    /// Counts `n` errors that could not be recorded (their entries were lost before they reached
    /// the log): the Error Count advances by `n`, so the next entry shows the gap.
    void skip(std::uint64_t n) noexcept
    {
        for (; n != 0; --n) {
            last_error_count_ =
                last_error_count_ == std::numeric_limits<std::uint64_t>::max() ? 1 : last_error_count_ + 1;
        }
    }

    /// Records an error, replacing the oldest entry when full. Returns its Error Count.
    std::uint64_t record(const error_record& error) noexcept
    {
        last_error_count_ =
            last_error_count_ == std::numeric_limits<std::uint64_t>::max() ? 1 : last_error_count_ + 1;
        spec::error_information_entry& entry = entries_[newest_];
        entry = spec::error_information_entry{};
        entry.error_count = last_error_count_;
        entry.sqid = error.sq_id;
        entry.cid = error.command_id;
        entry.set_status(error.status, error.phase_tag);
        entry.error_location = error.location;
        entry.lba = error.lba;
        entry.nsid = error.nsid;
        entry.vendor_specific_log_page = error.vendor_specific_log_page;
        entry.transport_type = error.transport_type;
        entry.command_specific_information = error.command_specific_information;
        entry.transport_specific_information = error.transport_specific_information;
        newest_ = (newest_ + 1) % entries_.size();
        count_ = std::min(count_ + 1, entries_.size());
        ++lifetime_entries_;
        return last_error_count_;
    }

    /// Entries the log holds (ELPE + 1).
    [[nodiscard]] std::size_t capacity() const noexcept { return entries_.size(); }
    /// The ELPE value of Identify Controller: capacity - 1.
    [[nodiscard]] std::uint8_t elpe() const noexcept
    {
        return static_cast<std::uint8_t>(entries_.size() - 1);
    }
    /// Valid entries currently held.
    [[nodiscard]] std::size_t size() const noexcept { return count_; }
    /// Size of the log page in bytes: capacity x 64.
    [[nodiscard]] std::uint64_t log_size() const noexcept
    {
        return std::uint64_t{entries_.size()} * entry_size;
    }
    /// Error Count of the newest entry ever recorded (0 before the first).
    [[nodiscard]] std::uint64_t last_error_count() const noexcept { return last_error_count_; }
    /// Entries recorded by this object, cleared or not: SMART / Health "Number of Error
    /// Information Log Entries" (add the count from before power off, if persisted).
    [[nodiscard]] std::uint64_t lifetime_entries() const noexcept { return lifetime_entries_; }

    /// Entry `index` of the log page, 0 = newest; an all-zero entry past the recorded ones.
    [[nodiscard]] spec::error_information_entry entry(std::size_t index) const noexcept
    {
        if (index >= count_) {
            return spec::error_information_entry{};
        }
        return entries_[(newest_ + entries_.size() - 1 - index) % entries_.size()];
    }

    /// Copies the window [offset, offset + out.size()) of the log page: entries newest first,
    /// zeros past the recorded entries and past the end of the log. No checks on `offset`.
    void copy(std::uint64_t offset, std::span<std::byte> out) const noexcept
    {
        std::size_t done = 0;
        while (done < out.size()) {
            if (offset > std::numeric_limits<std::uint64_t>::max() - done) {
                std::fill(out.begin() + static_cast<std::ptrdiff_t>(done), out.end(), std::byte{0});
                return;
            }
            const std::uint64_t position = offset + done;
            const std::uint64_t index = position / entry_size;
            const auto within = static_cast<std::size_t>(position % entry_size);
            const std::size_t chunk = std::min(entry_size - within, out.size() - done);
            if (index < count_) {
                const auto bytes =
                    std::bit_cast<std::array<std::byte, entry_size>>(entry(static_cast<std::size_t>(index)));
                std::memcpy(out.data() + done, bytes.data() + within, chunk);
            } else {
                std::fill_n(out.begin() + static_cast<std::ptrdiff_t>(done), chunk, std::byte{0});
            }
            done += chunk;
        }
    }

    /// The log page from its start into `out` (see `copy`).
    void copy(std::span<std::byte> out) const noexcept { copy(0, out); }

    /// Serves a Get Log Page window: Invalid Field in Command for a misaligned offset or one past
    /// the log (Base 2.0 Figure 199), else the window with zeros past the end.
    spec::status read(std::uint64_t offset, std::span<std::byte> out) const noexcept
    {
        const spec::status status = check_log_page_offset(offset, log_size());
        if (status.is_success()) {
            copy(offset, out);
        }
        return status;
    }

    /// Removes every entry (Controller Level Reset, power cycle). The Error Count and the
    /// lifetime entry count are kept.
    void clear() noexcept
    {
        std::fill(entries_.begin(), entries_.end(), spec::error_information_entry{});
        newest_ = 0;
        count_ = 0;
    }

private:
    static std::size_t checked_capacity(std::size_t capacity)
    {
        if (capacity == 0 || capacity > max_capacity) {
            throw std::invalid_argument{"nvmekit::error_log: capacity (ELPE + 1) must be 1 to 256 entries"};
        }
        return capacity;
    }

    std::vector<spec::error_information_entry> entries_;
    std::size_t newest_ = 0; ///< slot the next entry goes to
    std::size_t count_ = 0;
    std::uint64_t last_error_count_ = 0;
    std::uint64_t lifetime_entries_ = 0;
};

NVMEKIT_END_NAMESPACE
