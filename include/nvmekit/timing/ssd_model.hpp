#pragma once
/// ssd_model: a TimingModel of a NAND flash SSD, in the manner of FEMU's blackbox mode and
/// NVMeVirt's NAND model: channels of LUNs (dies) of planes, page read / program and block erase
/// latencies, a transfer rate per channel, a host link, and a write buffer that completes writes
/// early.
///
///     nvmekit::timing::ssd_parameters parameters = nvmekit::timing::femu_defaults();
///     parameters.channel_bytes_per_second = 800'000'000;
///     parameters.write_buffer_bytes = 16 << 20;
///     nvmekit::timing::ssd_model model{parameters};
///     const auto done = model.complete_at(request, now);
///
/// What it models, exactly:
/// - Mapping. Logical page `p` (offset / page_bytes) lives on parallel unit `p mod U`, U =
///   channels x LUNs x planes: channel `u mod channels`, LUN `(u / channels) mod luns_per_channel`,
///   plane `u / (channels x luns_per_channel)`; consecutive pages go to consecutive channels first,
///   then LUNs, then planes. A request is cut into page pieces and each piece is booked in order.
/// - Timelines. Each channel, each LUN and each direction of the host link has a busy-until
///   time; a step starts when everything it needs is free and moves their busy-until to its end.
///   Steps are booked in the order of the calls and of the pages within a request, so a step
///   never takes an idle gap a resource had before a step booked earlier (FIFO resources). A link
///   whose rate is 0 costs no time and orders nothing. A LUN runs one array operation at a time
///   (planes spread the mapping but no multi-plane command is modelled), and stays busy until its
///   page register is emptied (read) or programmed (write).
/// - Read of a piece: LUN page read (page_read, from max(now, LUN free)), then the piece's bytes
///   over the channel (from max(read end, channel free)), then over the host link device-to-host.
///   The request completes when its last piece has crossed the host link. Reads always go to NAND:
///   data still in the write buffer is not served from it.
/// - Write of a piece: a page of write buffer (see below), the piece's bytes over the host link
///   host-to-device, then, from max(host transfer end, channel free, LUN free), over the channel
///   and a page program (page_program) on the piece's LUN. A partial page costs a whole program.
/// - Write buffer (write_buffer_bytes > 0): holds write_buffer_bytes / page_bytes pieces. A piece
///   takes a buffer page when it arrives, or when the earliest-freeing buffer page frees if the
///   buffer is full (backpressure), and gives it back when its program ends. A write completes
///   when its last piece is in the buffer (host transfer done); a write with force_unit_access
///   completes when its last program ends. A flush completes when every program booked so far has
///   ended. With write_buffer_bytes = 0 (FEMU's behaviour) every write completes when its
///   programs end, and a flush completes at once.
/// - Erase. Each plane writes its blocks in order, a page at a time (a log-structured write
///   point), and wraps to block 0 after blocks_per_plane blocks. A block written before is erased
///   (block_erase, on its LUN, from max(now, LUN free)) before its first page is programmed
///   again. Nothing else: there is no garbage collection, no valid-page copy and no
///   over-provisioning, so erases only ever add their own latency, as for an ideal FTL whose old
///   data is all stale.
/// - Write Zeroes and Deallocate complete at once (mapping updates only).
/// - Host link: one timeline per direction (PCIe is full duplex).
///
/// Not modelled: garbage collection and write amplification, wear, read retry and ECC time,
/// multi-plane and cache operations, suspend/resume of programs and erases, the time of NAND
/// commands and addresses on the channel, controller firmware time, power states, and mapping
/// table caching. A rate of 0 means that link costs no time (FEMU ignores its ch_xfer_lat).
///
/// Deterministic: no randomness at all; times depend only on the parameters and the calls.
/// Memory: fixed at construction (timelines per channel and LUN, a write point per plane, the
/// buffer's release times); complete_at() never allocates. Not thread-safe (see TimingModel).

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <vector>

#include <nvmekit/config.hpp>
#include <nvmekit/contracts/block_backend.hpp>
#include <nvmekit/timing/timing_model.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace timing {

/// The shape of the NAND array. Every count is at least 1.
struct ssd_geometry {
    std::uint32_t channels = 8;
    std::uint32_t luns_per_channel = 8;
    std::uint32_t planes_per_lun = 1;
    std::uint32_t blocks_per_plane = 256;
    std::uint32_t pages_per_block = 256;
    std::uint32_t page_bytes = 4096;

    /// Channels x LUNs x planes: the units logical pages are striped across.
    [[nodiscard]] constexpr std::uint64_t parallel_units() const noexcept
    {
        return std::uint64_t{channels} * luns_per_channel * planes_per_lun;
    }
    /// The bytes of every page of every block.
    [[nodiscard]] constexpr std::uint64_t raw_bytes() const noexcept
    {
        return parallel_units() * blocks_per_plane * pages_per_block * page_bytes;
    }
};

/// The parameters of an ssd_model. The defaults are FEMU's blackbox defaults (femu_defaults()).
struct ssd_parameters {
    ssd_geometry geometry{};
    std::chrono::nanoseconds page_read{std::chrono::microseconds{40}};
    std::chrono::nanoseconds page_program{std::chrono::microseconds{200}};
    std::chrono::nanoseconds block_erase{std::chrono::milliseconds{2}};
    /// Bytes per second on each channel; 0: transfers cost no time.
    std::uint64_t channel_bytes_per_second = 0;
    /// Bytes per second in each direction of the host link (PCIe); 0: transfers cost no time.
    std::uint64_t host_bytes_per_second = 0;
    /// Write buffer (DRAM) size: 0, or at least one page. 0: writes complete when programmed.
    std::uint64_t write_buffer_bytes = 0;
};

/// FEMU's blackbox SSD: 8 channels x 8 LUNs x 1 plane x 256 blocks x 256 pages of 4 KiB
/// (16 GiB raw; FEMU exposes 12 GiB and keeps the rest as over-provisioning for its garbage
/// collection, which this model does not have), 40 us page read, 200 us page program, 2 ms block
/// erase. FEMU's channel transfer latency (ch_xfer_lat) defaults to 0 and is ignored, and it has
/// no host link model and no write buffer, so those are 0 here too: a user who wants them sets
/// channel_bytes_per_second, host_bytes_per_second and write_buffer_bytes.
[[nodiscard]] constexpr ssd_parameters femu_defaults() noexcept { return ssd_parameters{}; }

/// Counters of the NAND operations an ssd_model booked.
struct ssd_statistics {
    std::uint64_t pages_read = 0;
    std::uint64_t pages_programmed = 0;
    std::uint64_t blocks_erased = 0;
    std::uint64_t buffer_waits = 0; ///< write pieces that waited for a full write buffer
    friend bool operator==(const ssd_statistics&, const ssd_statistics&) = default;
};

/// A NAND SSD (see the top of this header).
class ssd_model {
public:
    /// Throws std::invalid_argument when a geometry count is 0, a latency negative, or the write
    /// buffer smaller than a page (but not 0); std::bad_alloc when memory runs out.
    explicit ssd_model(ssd_parameters parameters) : parameters_{parameters}
    {
        const ssd_geometry& g = parameters.geometry;
        if (g.channels == 0 || g.luns_per_channel == 0 || g.planes_per_lun == 0 || g.blocks_per_plane == 0 ||
            g.pages_per_block == 0 || g.page_bytes == 0) {
            throw std::invalid_argument("ssd_model: every geometry count must be at least 1");
        }
        if (parameters.page_read < std::chrono::nanoseconds::zero() ||
            parameters.page_program < std::chrono::nanoseconds::zero() ||
            parameters.block_erase < std::chrono::nanoseconds::zero()) {
            throw std::invalid_argument("ssd_model: latencies cannot be negative");
        }
        if (parameters.write_buffer_bytes != 0 && parameters.write_buffer_bytes < g.page_bytes) {
            throw std::invalid_argument("ssd_model: the write buffer must hold at least one page");
        }
        channel_free_.assign(g.channels, std::chrono::nanoseconds::zero());
        lun_free_.assign(std::size_t{g.channels} * g.luns_per_channel, std::chrono::nanoseconds::zero());
        write_points_.assign(static_cast<std::size_t>(g.parallel_units()), write_point{});
        buffer_pages_ = static_cast<std::size_t>(parameters.write_buffer_bytes / g.page_bytes);
        buffer_release_.reserve(buffer_pages_);
    }

    /// Books `request`, submitted at `now`, and returns when it completes.
    [[nodiscard]] std::chrono::nanoseconds complete_at(const timing_request& request,
                                                       std::chrono::nanoseconds now)
    {
        latest_now_ = std::max(latest_now_, now);
        switch (request.operation) {
        case block_operation::read: return read(request);
        case block_operation::write: return write(request);
        case block_operation::flush:
            return buffer_pages_ != 0 ? std::max(latest_now_, latest_release_) : latest_now_;
        case block_operation::write_zeroes:
        case block_operation::deallocate: break;
        }
        return latest_now_;
    }

    /// The parameters given at construction.
    [[nodiscard]] const ssd_parameters& parameters() const noexcept { return parameters_; }

    /// What was booked so far.
    [[nodiscard]] const ssd_statistics& statistics() const noexcept { return statistics_; }

    /// Write buffer pages holding data whose program ends after `time`.
    [[nodiscard]] std::size_t buffered_pages(std::chrono::nanoseconds time) const noexcept
    {
        return static_cast<std::size_t>(
            std::count_if(buffer_release_.begin(), buffer_release_.end(),
                          [time](std::chrono::nanoseconds release) { return release > time; }));
    }

private:
    /// Where a plane programs its next page.
    struct write_point {
        std::uint32_t block = 0;
        std::uint32_t page = 0;
        bool wrapped = false; ///< every block has been written once: opening one erases it
    };

    /// One page's part of a request.
    struct piece {
        std::uint64_t unit = 0;
        std::uint64_t bytes = 0;
    };

    /// Calls `visit(piece)` for each page piece of [offset, offset + length), in order.
    template <typename Visit>
    void for_each_piece(const timing_request& request, Visit&& visit) const
    {
        const std::uint64_t page_bytes = parameters_.geometry.page_bytes;
        const std::uint64_t units = parameters_.geometry.parallel_units();
        std::uint64_t offset = request.offset;
        std::uint64_t length = request.length;
        while (length != 0) {
            const std::uint64_t page = offset / page_bytes;
            const std::uint64_t bytes = std::min(length, page_bytes - offset % page_bytes);
            visit(piece{page % units, bytes});
            offset += bytes;
            length -= bytes;
        }
    }

    [[nodiscard]] std::size_t channel_of(std::uint64_t unit) const noexcept
    {
        return static_cast<std::size_t>(unit % parameters_.geometry.channels);
    }
    /// LUN index across the device: channel-major, as lun_free_ is laid out.
    [[nodiscard]] std::size_t lun_of(std::uint64_t unit) const noexcept
    {
        const ssd_geometry& g = parameters_.geometry;
        const std::uint64_t lun_in_channel = (unit / g.channels) % g.luns_per_channel;
        return static_cast<std::size_t>(unit % g.channels * g.luns_per_channel + lun_in_channel);
    }

    std::chrono::nanoseconds read(const timing_request& request)
    {
        std::chrono::nanoseconds done = latest_now_;
        for_each_piece(request, [&](piece p) {
            auto& lun = lun_free_[lun_of(p.unit)];
            const auto sensed = std::max(latest_now_, lun) + parameters_.page_read;
            lun = occupy(channel_free_[channel_of(p.unit)], sensed, p.bytes,
                         parameters_.channel_bytes_per_second);
            done =
                std::max(done, occupy(device_to_host_free_, lun, p.bytes, parameters_.host_bytes_per_second));
            ++statistics_.pages_read;
        });
        return done;
    }

    std::chrono::nanoseconds write(const timing_request& request)
    {
        const bool buffered = buffer_pages_ != 0;
        std::chrono::nanoseconds done = latest_now_;
        for_each_piece(request, [&](piece p) {
            const auto admitted = buffered ? take_buffer_page() : latest_now_;
            const auto arrived =
                occupy(host_to_device_free_, admitted, p.bytes, parameters_.host_bytes_per_second);
            auto& lun = lun_free_[lun_of(p.unit)];
            if (open_page(p.unit)) {
                lun = std::max(latest_now_, lun) + parameters_.block_erase;
                ++statistics_.blocks_erased;
            }
            lun = occupy(channel_free_[channel_of(p.unit)], std::max(arrived, lun), p.bytes,
                         parameters_.channel_bytes_per_second) +
                  parameters_.page_program;
            ++statistics_.pages_programmed;
            if (buffered) {
                give_back_buffer_page_at(lun);
            }
            done = std::max(done, buffered && !request.force_unit_access ? arrived : lun);
        });
        return done;
    }

    /// Books `bytes` on a link whose busy-until is `link_free` from `ready` on and returns when
    /// they have crossed it. A link of rate 0 costs no time and is never busy.
    static std::chrono::nanoseconds occupy(std::chrono::nanoseconds& link_free,
                                           std::chrono::nanoseconds ready, std::uint64_t bytes,
                                           std::uint64_t bytes_per_second) noexcept
    {
        if (bytes_per_second == 0) {
            return ready;
        }
        link_free = std::max(ready, link_free) + transfer_time(bytes, bytes_per_second);
        return link_free;
    }

    /// Advances the write point of `unit` by a page; true when the page opens a block written
    /// before, which must be erased first.
    bool open_page(std::uint64_t unit) noexcept
    {
        const ssd_geometry& g = parameters_.geometry;
        write_point& point = write_points_[static_cast<std::size_t>(unit)];
        const bool erase = point.wrapped && point.page == 0;
        if (++point.page == g.pages_per_block) {
            point.page = 0;
            if (++point.block == g.blocks_per_plane) {
                point.block = 0;
                point.wrapped = true;
            }
        }
        return erase;
    }

    /// When a write piece gets a buffer page: at latest_now_ if one is free then, else when the
    /// first one frees. Takes that page (its release time is set by give_back_buffer_page_at).
    std::chrono::nanoseconds take_buffer_page()
    {
        const auto later = std::greater<>{}; // a min-heap on release time
        while (!buffer_release_.empty() && buffer_release_.front() <= latest_now_) {
            std::pop_heap(buffer_release_.begin(), buffer_release_.end(), later);
            buffer_release_.pop_back();
        }
        if (buffer_release_.size() < buffer_pages_) {
            return latest_now_;
        }
        ++statistics_.buffer_waits;
        std::pop_heap(buffer_release_.begin(), buffer_release_.end(), later);
        const auto freed = buffer_release_.back();
        buffer_release_.pop_back();
        return freed;
    }

    void give_back_buffer_page_at(std::chrono::nanoseconds release)
    {
        buffer_release_.push_back(release); // within the capacity reserved at construction
        std::push_heap(buffer_release_.begin(), buffer_release_.end(), std::greater<>{});
        latest_release_ = std::max(latest_release_, release);
    }

    ssd_parameters parameters_;
    std::vector<std::chrono::nanoseconds> channel_free_;
    std::vector<std::chrono::nanoseconds> lun_free_;
    std::vector<write_point> write_points_;
    std::chrono::nanoseconds host_to_device_free_{0};
    std::chrono::nanoseconds device_to_host_free_{0};
    std::size_t buffer_pages_ = 0;
    /// Release times of the buffer pages in use, a min-heap; at most buffer_pages_ entries.
    std::vector<std::chrono::nanoseconds> buffer_release_;
    std::chrono::nanoseconds latest_release_{0};
    std::chrono::nanoseconds latest_now_{0};
    ssd_statistics statistics_{};
};

static_assert(check_timing_model<ssd_model>());

} // namespace timing
NVMEKIT_END_NAMESPACE
