#include <nvmekit/controller.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <span>
#include <string>
#include <system_error>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nvmekit/backends/ram_backend.hpp>
#include <nvmekit/contracts/dma.hpp>
#include <nvmekit/spec/data_pointer.hpp>
#include <nvmekit/testing/test_backend.hpp>

#include "controller_fixture.hpp"
#include "splitmix64.hpp"

/// A property test of the data path: random data written and read back through random PRP and
/// SGL layouts (PRP1 offsets, PRP lists chained across list pages at random list offsets, SGL
/// Data Blocks of random sizes at random byte addresses, Bit Buckets on reads, Segment chains of
/// random lengths ending in a Last Segment, separate metadata through MPTR as a contiguous buffer
/// or a metadata SGL), on every LBA format with extended and separate metadata, with random LBAs
/// and block counts up to MDTS, several commands outstanding on several I/O queues. Every read is
/// compared with a shadow model of the namespace, and guard bytes around every host buffer must
/// stay untouched. Campaigns run with zero-copy DMA (flat_memory maps), with copying DMA (every
/// command goes through a staging buffer), and with a backend that completes late and out of
/// order.

namespace {
namespace controller_data_test {

namespace nt = nvmekit::testing;
namespace spec = nvmekit::spec;
using namespace nvmekit_test;
using namespace std::chrono_literals;

/// Host memory the controller reaches by copies only (no map()), so every command's data goes
/// through a staging buffer.
class copying_memory {
public:
    explicit copying_memory(nt::flat_memory& memory) noexcept : memory_{&memory} {}
    std::error_code read(std::uint64_t address, std::span<std::byte> destination) const
    {
        return memory_->read(address, destination);
    }
    std::error_code write(std::uint64_t address, std::span<const std::byte> source)
    {
        return memory_->write(address, source);
    }

private:
    nt::flat_memory* memory_;
};
static_assert(nvmekit::DmaProvider<copying_memory> && !nvmekit::MappingDmaProvider<copying_memory>);

struct staging_traits : test_traits {
    using dma = copying_memory;
};

/// Copying DMA and fewer staging buffers than outstanding commands, so that commands wait for one.
struct scarce_staging_traits : staging_traits {
    static constexpr nvmekit::limits limits{.staging_buffers = 3};
};

enum class backend_kind : std::uint8_t { ram, delayed };

struct campaign_options {
    std::uint8_t lba_format = 0;
    bool extended = false;
    backend_kind backend = backend_kind::ram;
    std::uint64_t seed = 1;
    std::size_t commands = 1000;
    /// Asynchronous DMA only: one page in the middle of the data area of two of the host slots
    /// fails every access, so that commands whose data touches it end in Data Transfer Error.
    bool dma_faults = false;
};

constexpr std::uint64_t page = 4096;
constexpr std::uint64_t namespace_bytes = std::uint64_t{2} << 20;
constexpr std::uint16_t io_queues = 4;
constexpr std::size_t max_in_flight = 8;

// Each outstanding command owns a slot of host memory: data pages, then pages for PRP lists and
// data SGL segments, then pages for metadata SGL descriptors, then pages for separate metadata.
constexpr std::size_t data_pages = 96;
constexpr std::size_t list_pages = 12;
constexpr std::size_t metadata_descriptor_pages = 4;
constexpr std::size_t metadata_pages = 4;
constexpr std::size_t slot_pages = data_pages + list_pages + metadata_descriptor_pages + metadata_pages;
constexpr std::size_t memory_bytes = max_in_flight * slot_pages * page + (std::size_t{4} << 20);

/// One stretch of a transfer, in stream order: host memory, or a bit bucket (reads only).
struct piece {
    std::uint64_t address = 0;
    std::uint32_t length = 0;
    bool bit_bucket = false;
};

/// Host bytes next to a buffer that the command must leave alone.
struct guard {
    std::uint64_t address = 0;
    std::vector<std::byte> bytes;
};

/// One command the host has outstanding.
struct in_flight {
    std::uint16_t qid = 0;
    std::uint16_t cid = 0;
    std::size_t slot = 0;
    bool is_write = false;
    std::uint64_t slba = 0;
    std::uint32_t blocks = 0;
    std::vector<piece> data;
    std::vector<piece> metadata;
    std::vector<guard> guards;
    std::string layout;
    bool expect_fault = false;       ///< its data touches a page that fails (dma_faults)
    std::vector<std::byte> old_data; ///< a faulting write: the media it must leave alone
    std::vector<std::byte> old_metadata;
};

/// How often each layout feature was used, so that the test proves it exercised them.
struct coverage {
    std::size_t prp_lists = 0;             ///< PRP2 a list pointer
    std::size_t chained_prp_lists = 0;     ///< lists that continue on another list page
    std::size_t chain_only_list_pages = 0; ///< first list page holding nothing but the chain pointer
    std::size_t sgl_in_dptr = 0;           ///< one Data Block or Bit Bucket in SGL1 itself
    std::size_t sgl_segment_chains = 0;    ///< SGLs of two or more segments
    std::size_t bit_buckets = 0;
    std::size_t metadata_sgls = 0; ///< PSDT 10b with separate metadata
    std::size_t metadata_segment_chains = 0;
    std::size_t overlapped = 0; ///< commands submitted while 4 or more were outstanding
};

/// The LBA span of a command overlaps another's.
[[nodiscard]] bool overlaps(std::uint64_t slba, std::uint32_t blocks, const in_flight& other) noexcept
{
    return slba < other.slba + other.blocks && other.slba < slba + blocks;
}

/// Runs one campaign on the rig `r` whose namespace 1 has been added.
template <typename Rig>
class campaign {
public:
    campaign(Rig& r, const campaign_options& options) : r_{r}, options_{options}, rng_{options.seed} {}

    void run()
    {
        auto* ns = r_.subsystem.find(1);
        ASSERT_NE(ns, nullptr);
        data_unit_ = ns->data_transfer_bytes(1);
        metadata_unit_ = ns->metadata_transfer_bytes(1);
        blocks_ = ns->block_count();
        max_blocks_ =
            static_cast<std::uint32_t>(Rig::controller_type::limits.max_transfer_bytes() / data_unit_);
        data_shadow_.assign(blocks_ * data_unit_, std::byte{0});
        metadata_shadow_.assign(blocks_ * metadata_unit_, std::byte{0});

        const auto up = r_.host.bring_up({.io_queue_pairs = io_queues, .io_entries = 64});
        ASSERT_EQ(up.io_queue_pairs, io_queues);
        ASSERT_EQ(up.identify.mdts, Rig::controller_type::limits.mdts);
        for (std::size_t slot = 0; slot < max_in_flight; ++slot) {
            slots_.push_back(r_.host.allocate(slot_pages * page));
            free_slots_.push_back(slot);
        }
        if constexpr (Rig::controller_type::dma_completes_later) {
            if (options_.dma_faults) {
                for (const std::size_t slot : {std::size_t{1}, std::size_t{5}}) {
                    const std::uint64_t address = slots_[slot] + (data_pages / 2) * page;
                    r_.dma.fail_range(address, page);
                    faulty_.push_back(address);
                }
            }
        }

        std::size_t depth = 1;
        for (std::size_t issued = 0; issued < options_.commands && !failed_; ++issued) {
            if (issued % 256 == 0) {
                depth = rng_.between(1, max_in_flight); // vary the queue depth over the campaign
            }
            while (in_flight_.size() >= depth && !failed_) {
                complete(rng_.below(in_flight_.size()));
            }
            if (!failed_) {
                issue(issued);
            }
        }
        while (!in_flight_.empty() && !failed_) {
            complete(rng_.below(in_flight_.size()));
        }
        if (failed_) {
            drain(); // so that the controller holds no backend request when it is destroyed
            return;
        }
        for (int i = 0; i < 4; ++i) {
            r_.ctrl.poll();
        }
        EXPECT_EQ(r_.ctrl.requests_in_use(), 0U);
        EXPECT_EQ(r_.ctrl.io_outstanding(), 0U);
        EXPECT_EQ(r_.ctrl.statistics().dma_errors, faults_seen);
        EXPECT_EQ(r_.ctrl.statistics().host_protocol_errors, 0U);
        EXPECT_EQ(r_.ctrl.statistics().commands, r_.ctrl.statistics().completions_posted + 1U); // + AER
        reads_checked = reads_;
        writes_done = writes_;
    }

    std::size_t reads_checked = 0;
    std::size_t writes_done = 0;
    std::size_t faults_seen = 0; ///< commands that ended in Data Transfer Error, as predicted
    coverage seen{};

private:
    // ---- issuing ------------------------------------------------------------------------------

    void issue(std::size_t index)
    {
        const bool is_write = rng_.percent(50);
        std::uint32_t blocks = 0;
        std::uint64_t slba = 0;
        for (int attempt = 0;; ++attempt) {
            blocks = pick_block_count();
            slba = rng_.below(blocks_ - blocks + 1);
            const bool clash = std::any_of(in_flight_.begin(), in_flight_.end(), [&](const in_flight& other) {
                return (is_write || other.is_write) && overlaps(slba, blocks, other);
            });
            if (!clash) {
                break;
            }
            if (attempt == 8) {
                complete(rng_.below(in_flight_.size())); // make room rather than search forever
                if (failed_) {
                    return;
                }
                attempt = 0;
            }
        }

        in_flight command{};
        command.slot = free_slots_.back();
        free_slots_.pop_back();
        command.is_write = is_write;
        command.slba = slba;
        command.blocks = blocks;
        const std::uint64_t base = slots_[command.slot];
        const std::uint64_t data_bytes = blocks * data_unit_;
        const std::uint64_t metadata_bytes = blocks * metadata_unit_;

        using host = typename Rig::host_type;
        auto sqe =
            is_write ? host::template lba_command<spec::write_view>(spec::nvm_opcode::write, 1, slba, blocks)
                     : host::template lba_command<spec::read_view>(spec::nvm_opcode::read, 1, slba, blocks);
        if (is_write && rng_.percent(10)) {
            auto view = spec::write_view::decode(sqe);
            view.force_unit_access = true;
            view.encode(sqe);
        }
        // PRPs, SGL with a contiguous metadata buffer, or SGL with a metadata SGL.
        const unsigned kind = static_cast<unsigned>(rng_.below(metadata_bytes != 0 ? 3 : 2));
        if (kind == 0) {
            sqe.dptr = build_prps(base, data_bytes, command);
        } else {
            sqe.dptr = build_data_sgl(base, data_bytes, command);
            sqe.cdw0.set(spec::command_dword0::psdt, kind == 1
                                                         ? spec::data_pointer_type::sgl_contiguous_metadata
                                                         : spec::data_pointer_type::sgl_metadata_descriptor);
        }
        if (metadata_bytes != 0) {
            sqe.mptr = kind == 2 ? build_metadata_sgl(base, metadata_bytes, command)
                                 : contiguous_metadata(base, metadata_bytes, kind == 0 ? 4U : 1U, command);
        }

        command.expect_fault = touches_faulty_page(command.data);
        if (is_write) {
            const auto data = std::span{data_shadow_}.subspan(slba * data_unit_, data_bytes);
            const auto metadata = std::span{metadata_shadow_}.subspan(slba * metadata_unit_, metadata_bytes);
            if (command.expect_fault) {
                command.old_data.assign(data.begin(), data.end());
                command.old_metadata.assign(metadata.begin(), metadata.end());
            }
            rng_.fill(data);
            rng_.fill(metadata);
            scatter(command.data, data);
            scatter(command.metadata, metadata);
            ++writes_;
        } else {
            const auto poison = static_cast<std::byte>(rng_.next());
            for (const auto* pieces : {&command.data, &command.metadata}) {
                for (const piece& p : *pieces) {
                    if (!p.bit_bucket) {
                        const auto bytes = r_.memory.bytes(p.address, p.length);
                        std::fill(bytes.begin(), bytes.end(), poison);
                    }
                }
            }
            ++reads_;
        }
        for (guard& g : command.guards) {
            rng_.fill(r_.memory.bytes(g.address, g.bytes.size()));
        }
        for (guard& g : command.guards) { // guards may overlap: remember what they hold in the end
            const auto bytes = r_.memory.bytes(g.address, g.bytes.size());
            std::copy(bytes.begin(), bytes.end(), g.bytes.begin());
        }
        command.layout =
            fmt::format("command {} seed {}: {} slba {} blocks {} psdt {} data [{}] metadata [{}]", index,
                        options_.seed, is_write ? "write" : "read", slba, blocks, kind,
                        describe(command.data), describe(command.metadata));
        command.qid = static_cast<std::uint16_t>(rng_.between(1, io_queues));
        command.cid = r_.host.submit(command.qid, sqe);
        seen.overlapped += in_flight_.size() >= 4 ? 1U : 0U;
        in_flight_.push_back(std::move(command));
    }

    /// Mostly small transfers, some of any size up to MDTS, some of exactly MDTS.
    std::uint32_t pick_block_count()
    {
        const auto limit = static_cast<std::uint32_t>(std::min<std::uint64_t>(max_blocks_, blocks_));
        const auto roll = rng_.below(100);
        if (roll < 70) {
            return static_cast<std::uint32_t>(rng_.between(1, std::min<std::uint32_t>(limit, 8)));
        }
        if (roll < 95) {
            return static_cast<std::uint32_t>(rng_.between(1, limit));
        }
        return limit;
    }

    // ---- layouts ------------------------------------------------------------------------------

    [[nodiscard]] static std::uint64_t data_area(std::uint64_t base) noexcept { return base; }
    [[nodiscard]] static std::uint64_t list_area(std::uint64_t base) noexcept
    {
        return base + data_pages * page;
    }
    [[nodiscard]] static std::uint64_t metadata_descriptor_area(std::uint64_t base) noexcept
    {
        return list_area(base) + list_pages * page;
    }
    [[nodiscard]] static std::uint64_t metadata_area(std::uint64_t base) noexcept
    {
        return metadata_descriptor_area(base) + metadata_descriptor_pages * page;
    }

    /// `count` distinct page indexes below `pages`, in random order.
    std::vector<std::size_t> distinct_pages(std::size_t pages, std::size_t count)
    {
        std::vector<std::size_t> all(pages);
        for (std::size_t i = 0; i < pages; ++i) {
            all[i] = i;
        }
        for (std::size_t i = 0; i < count; ++i) {
            std::swap(all[i], all[i + rng_.below(pages - i)]);
        }
        all.resize(count);
        return all;
    }

    void add_guard(in_flight& command, std::uint64_t address, std::uint64_t length)
    {
        if (length != 0) {
            command.guards.push_back(
                guard{address, std::vector<std::byte>(std::min<std::uint64_t>(length, 16))});
        }
    }

    /// PRP1 at a random dword offset of a random page, the other data pages random pages, and a
    /// PRP list starting at a random qword offset of its page (so that short lists chain too),
    /// each full list page chaining to the next (Base 2.0 4.1.1).
    spec::data_pointer build_prps(std::uint64_t base, std::uint64_t length, in_flight& command)
    {
        const std::uint64_t offset = rng_.percent(50) ? 0 : rng_.below(page / 4) * 4;
        const std::uint64_t first_bytes = std::min(length, page - offset);
        const std::size_t more_pages = static_cast<std::size_t>((length - first_bytes + page - 1) / page);
        const auto pages = distinct_pages(data_pages, 1 + more_pages);
        const std::uint64_t first = data_area(base) + pages[0] * page;
        command.data.push_back(piece{first + offset, static_cast<std::uint32_t>(first_bytes)});
        add_guard(command, first + offset - std::min<std::uint64_t>(offset, 16),
                  std::min<std::uint64_t>(offset, 16));
        std::vector<std::uint64_t> entries;
        std::uint64_t left = length - first_bytes;
        for (std::size_t i = 1; i < pages.size(); ++i) {
            const std::uint64_t address = data_area(base) + pages[i] * page;
            const std::uint64_t bytes = std::min(left, page);
            command.data.push_back(piece{address, static_cast<std::uint32_t>(bytes)});
            entries.push_back(address);
            left -= bytes;
        }
        const piece& last = command.data.back();
        const std::uint64_t end = last.address + last.length;
        add_guard(command, end, (page - end % page) % page);

        spec::data_pointer dptr{first + offset, 0};
        if (entries.size() == 1) {
            dptr.prp2 = entries.front();
        } else if (entries.size() > 1) {
            dptr.prp2 = write_prp_list(base, entries);
        }
        return dptr;
    }

    std::uint64_t write_prp_list(std::uint64_t base, std::span<const std::uint64_t> entries)
    {
        constexpr std::uint64_t per_page = page / 8;
        // Entries the first list page holds from the list pointer's offset to its end.
        const std::uint64_t first_capacity =
            rng_.percent(40) ? per_page : rng_.between(1, entries.size() + 1);
        const auto pages = distinct_pages(list_pages, list_pages);
        std::size_t next_page = 0;
        const std::uint64_t pointer =
            list_area(base) + pages[next_page++] * page + (per_page - first_capacity) * 8;
        ++seen.prp_lists;
        seen.chained_prp_lists += entries.size() > first_capacity ? 1U : 0U;
        seen.chain_only_list_pages += first_capacity == 1 ? 1U : 0U;
        std::uint64_t at = pointer;
        std::uint64_t capacity = first_capacity;
        std::size_t index = 0;
        while (entries.size() - index > capacity) {
            for (std::uint64_t i = 0; i + 1 < capacity; ++i) {
                r_.memory.store(at + i * 8, entries[index++]);
            }
            const std::uint64_t next = list_area(base) + pages[next_page++] * page;
            r_.memory.store(at + (capacity - 1) * 8, next); // the last entry chains to the next list page
            at = next;
            capacity = per_page;
        }
        for (std::uint64_t i = 0; index < entries.size(); ++i) {
            r_.memory.store(at + i * 8, entries[index++]);
        }
        return pointer;
    }

    /// `length` split into `count` pieces of random positive lengths.
    std::vector<std::uint32_t> split(std::uint64_t length, std::size_t count)
    {
        std::vector<std::uint64_t> cuts{0, length};
        while (cuts.size() < count + 1) {
            const std::uint64_t cut = rng_.between(1, length - 1);
            if (std::find(cuts.begin(), cuts.end(), cut) == cuts.end()) {
                cuts.push_back(cut);
            }
        }
        std::sort(cuts.begin(), cuts.end());
        std::vector<std::uint32_t> lengths;
        for (std::size_t i = 0; i + 1 < cuts.size(); ++i) {
            lengths.push_back(static_cast<std::uint32_t>(cuts[i + 1] - cuts[i]));
        }
        return lengths;
    }

    /// Pieces of `length` bytes at random byte addresses of an area, in random order, with random
    /// gaps (some empty, so neighbouring pieces merge) guarded on both sides. On reads some pieces
    /// are bit buckets.
    std::vector<piece> scatter_pieces(std::uint64_t area, std::uint64_t area_bytes, std::uint64_t length,
                                      std::size_t max_pieces, bool is_write, in_flight& command)
    {
        const std::size_t count =
            rng_.percent(20) ? 1 : rng_.between(1, std::min<std::uint64_t>(max_pieces, length));
        const auto lengths = split(length, count);
        std::vector<piece> pieces(count);
        std::vector<std::size_t> order(count);
        for (std::size_t i = 0; i < count; ++i) {
            pieces[i].length = lengths[i];
            pieces[i].bit_bucket = !is_write && rng_.percent(15);
            seen.bit_buckets += pieces[i].bit_bucket ? 1U : 0U;
            order[i] = i;
        }
        for (std::size_t i = 0; i + 1 < count; ++i) {
            std::swap(order[i], order[i + rng_.below(count - i)]);
        }
        std::uint64_t free_bytes = area_bytes - length;
        std::uint64_t cursor = area;
        for (std::size_t i = 0; i < count; ++i) {
            piece& p = pieces[order[i]];
            const std::uint64_t gap = rng_.percent(25) ? 0 : rng_.below(free_bytes / (count - i) * 2 / 3 + 1);
            add_guard(command, cursor, gap);
            add_guard(command, cursor + gap - std::min<std::uint64_t>(gap, 16),
                      std::min<std::uint64_t>(gap, 16));
            free_bytes -= gap;
            cursor += gap;
            p.address = cursor;
            cursor += p.length;
        }
        add_guard(command, cursor, area + area_bytes - cursor);
        return pieces;
    }

    /// Writes the descriptors of `pieces` as an SGL: in the descriptor itself when there is one
    /// piece (sometimes), else in segments of random lengths at random 16-byte aligned places of
    /// distinct pages of an area, chained by Segment descriptors, the last reached through a
    /// Last Segment descriptor (Base 2.0 4.1.2). Returns the first descriptor.
    spec::sgl_descriptor write_sgl(std::uint64_t area, std::size_t area_pages, std::span<const piece> pieces,
                                   std::size_t max_segments)
    {
        const auto describe_piece = [](const piece& p) {
            return p.bit_bucket ? spec::sgl_descriptor::bit_bucket(p.length)
                                : spec::sgl_descriptor::data_block(p.address, p.length);
        };
        if (pieces.size() == 1 && rng_.percent(50)) {
            ++seen.sgl_in_dptr;
            return describe_piece(pieces.front());
        }
        const std::size_t segments = rng_.between(1, std::min(pieces.size(), max_segments));
        last_segment_count_ = segments;
        // Data descriptors per segment: at least one each.
        std::vector<std::size_t> counts(segments, 1);
        for (std::size_t extra = pieces.size() - segments; extra != 0; --extra) {
            ++counts[rng_.below(segments)];
        }
        const auto pages = distinct_pages(area_pages, segments);
        std::vector<std::uint64_t> addresses(segments);
        for (std::size_t s = 0; s < segments; ++s) {
            const std::size_t bytes = (counts[s] + (s + 1 < segments ? 1 : 0)) * sizeof(spec::sgl_descriptor);
            addresses[s] = area + pages[s] * page + rng_.below((page - bytes) / 16 + 1) * 16;
        }
        const auto pointer_to = [&](std::size_t s) {
            const auto bytes = static_cast<std::uint32_t>((counts[s] + (s + 1 < segments ? 1 : 0)) *
                                                          sizeof(spec::sgl_descriptor));
            return s + 1 < segments ? spec::sgl_descriptor::segment(addresses[s], bytes)
                                    : spec::sgl_descriptor::last_segment(addresses[s], bytes);
        };
        std::size_t next_piece = 0;
        for (std::size_t s = 0; s < segments; ++s) {
            std::uint64_t at = addresses[s];
            for (std::size_t i = 0; i < counts[s]; ++i) {
                r_.memory.store(at, describe_piece(pieces[next_piece++]));
                at += sizeof(spec::sgl_descriptor);
            }
            if (s + 1 < segments) {
                r_.memory.store(at, pointer_to(s + 1));
            }
        }
        return pointer_to(0);
    }

    spec::data_pointer build_data_sgl(std::uint64_t base, std::uint64_t length, in_flight& command)
    {
        command.data =
            scatter_pieces(data_area(base), data_pages * page, length, 24, command.is_write, command);
        last_segment_count_ = 0;
        const auto first = write_sgl(list_area(base), list_pages, command.data, 6);
        seen.sgl_segment_chains += last_segment_count_ >= 2 ? 1U : 0U;
        return spec::to_data_pointer(first);
    }

    /// MPTR for PSDT 10b: the address of one descriptor (Base 2.0 4.2, Metadata Pointer).
    std::uint64_t build_metadata_sgl(std::uint64_t base, std::uint64_t length, in_flight& command)
    {
        command.metadata =
            scatter_pieces(metadata_area(base), metadata_pages * page, length, 5, command.is_write, command);
        // The segments go in pages 1..3, the descriptor MPTR points to in page 0.
        last_segment_count_ = 0;
        const auto first = write_sgl(metadata_descriptor_area(base) + page, metadata_descriptor_pages - 1,
                                     command.metadata, 3);
        ++seen.metadata_sgls;
        seen.metadata_segment_chains += last_segment_count_ >= 2 ? 1U : 0U;
        const std::uint64_t mptr = metadata_descriptor_area(base) + rng_.below(page / 16) * 16;
        r_.memory.store(mptr, first);
        return mptr;
    }

    /// MPTR for PSDT 00b (dword aligned) and 01b (byte aligned): one contiguous buffer.
    std::uint64_t contiguous_metadata(std::uint64_t base, std::uint64_t length, std::uint64_t alignment,
                                      in_flight& command)
    {
        const std::uint64_t area = metadata_area(base);
        const std::uint64_t address =
            area + rng_.below((metadata_pages * page - length) / alignment + 1) * alignment;
        command.metadata.push_back(piece{address, static_cast<std::uint32_t>(length)});
        add_guard(command, address - std::min<std::uint64_t>(address - area, 16),
                  std::min<std::uint64_t>(address - area, 16));
        add_guard(command, address + length, area + metadata_pages * page - (address + length));
        return address;
    }

    /// Copies `stream` into the host pieces, in order.
    void scatter(std::span<const piece> pieces, std::span<const std::byte> stream)
    {
        std::size_t at = 0;
        for (const piece& p : pieces) {
            if (!p.bit_bucket) {
                const auto bytes = r_.memory.bytes(p.address, p.length);
                std::memcpy(bytes.data(), stream.data() + at, p.length);
            }
            at += p.length;
        }
    }

    [[nodiscard]] static std::string describe(std::span<const piece> pieces)
    {
        std::string text;
        for (const piece& p : pieces) {
            text += p.bit_bucket ? fmt::format(" bucket:{}", p.length)
                                 : fmt::format(" {:#x}:{}", p.address, p.length);
        }
        return text;
    }

    // ---- completing ---------------------------------------------------------------------------

    void complete(std::size_t index)
    {
        in_flight command = std::move(in_flight_[index]);
        in_flight_.erase(in_flight_.begin() + static_cast<std::ptrdiff_t>(index));
        free_slots_.push_back(command.slot);
        const auto result = r_.host.wait_for(command.qid, command.cid);
        if (command.expect_fault) {
            // Nothing reached the media; a read's buffer holds unspecified bytes.
            if (result.status() != spec::status{spec::generic_status::data_transfer_error}.with_dnr()) {
                fail(command, fmt::format("status {}, not Data Transfer Error", result.status()));
                return;
            }
            ++faults_seen;
            if (command.is_write) {
                std::copy(command.old_data.begin(), command.old_data.end(),
                          data_shadow_.begin() + static_cast<std::ptrdiff_t>(command.slba * data_unit_));
                std::copy(command.old_metadata.begin(), command.old_metadata.end(),
                          metadata_shadow_.begin() +
                              static_cast<std::ptrdiff_t>(command.slba * metadata_unit_));
            }
        } else if (result.status() != spec::status::success()) {
            fail(command, fmt::format("status {}", result.status()));
            return;
        } else if (!command.is_write) {
            check(command, command.data, std::span{data_shadow_}.subspan(command.slba * data_unit_), "data");
            check(command, command.metadata,
                  std::span{metadata_shadow_}.subspan(command.slba * metadata_unit_), "metadata");
        }
        for (const guard& g : command.guards) {
            const auto bytes = r_.memory.bytes(g.address, g.bytes.size());
            if (!std::equal(bytes.begin(), bytes.end(), g.bytes.begin())) {
                fail(command, fmt::format("guard bytes at {:#x} changed", g.address));
                return;
            }
        }
    }

    void check(const in_flight& command, std::span<const piece> pieces, std::span<const std::byte> expected,
               const char* what)
    {
        std::size_t at = 0;
        for (const piece& p : pieces) {
            if (!p.bit_bucket) {
                const auto bytes = r_.memory.bytes(p.address, p.length);
                if (std::memcmp(bytes.data(), expected.data() + at, p.length) != 0) {
                    const auto mismatch = std::mismatch(bytes.begin(), bytes.end(),
                                                        expected.begin() + static_cast<std::ptrdiff_t>(at));
                    fail(command, fmt::format("{} mismatch at stream byte {}", what,
                                              at + static_cast<std::size_t>(mismatch.first - bytes.begin())));
                    return;
                }
            }
            at += p.length;
        }
    }

    /// Whether a piece of host memory in `pieces` overlaps a page that fails (dma_faults).
    [[nodiscard]] bool touches_faulty_page(std::span<const piece> pieces) const noexcept
    {
        return std::any_of(pieces.begin(), pieces.end(), [&](const piece& p) {
            return !p.bit_bucket && std::any_of(faulty_.begin(), faulty_.end(), [&](std::uint64_t address) {
                return p.address < address + page && address < p.address + p.length;
            });
        });
    }

    /// Reaps whatever is still outstanding after a failure, without checking it.
    void drain()
    {
        for (const in_flight& command : in_flight_) {
            try {
                static_cast<void>(r_.host.wait_for(command.qid, command.cid));
            } catch (const nt::host_error&) {
            }
        }
        in_flight_.clear();
        for (int i = 0; i < 16 && r_.ctrl.io_outstanding() != 0; ++i) {
            r_.clock.advance(1ms);
            r_.ctrl.poll();
        }
    }

    void fail(const in_flight& command, const std::string& what)
    {
        if (!failed_) {
            ADD_FAILURE() << what << " — " << command.layout;
        }
        failed_ = true;
    }

    Rig& r_;
    campaign_options options_;
    splitmix64 rng_;
    std::uint64_t data_unit_ = 0;
    std::uint64_t metadata_unit_ = 0;
    std::uint64_t blocks_ = 0;
    std::uint32_t max_blocks_ = 0;
    std::vector<std::byte> data_shadow_;
    std::vector<std::byte> metadata_shadow_;
    std::vector<std::uint64_t> slots_;
    std::vector<std::size_t> free_slots_;
    std::vector<std::uint64_t> faulty_; ///< first bytes of the pages that fail (dma_faults)
    std::vector<in_flight> in_flight_;
    std::size_t reads_ = 0;
    std::size_t writes_ = 0;
    std::size_t last_segment_count_ = 0;
    bool failed_ = false;
};

/// The LBA formats as (format, extended) pairs: every format, and the metadata formats both ways.
struct layout_case {
    std::uint8_t format;
    bool extended;
};
constexpr std::array<layout_case, 6> layouts{
    {{0, false}, {1, true}, {1, false}, {2, false}, {3, true}, {3, false}}};

template <typename Rig>
void run_campaign(const campaign_options& options)
{
    Rig r{{}, memory_bytes};
    const nvmekit::namespace_options namespace_options{.lba_format = options.lba_format,
                                                       .extended_metadata = options.extended};
    if (options.backend == backend_kind::ram) {
        r.subsystem.add_namespace(nvmekit::ram_backend{namespace_bytes}, namespace_options);
    } else {
        r.subsystem.add_namespace(
            nt::test_backend<>{
                r.clock, namespace_bytes, 64, {.delay = 0us, .jitter = 3ms, .seed = options.seed}},
            namespace_options);
    }
    const auto& format = nvmekit::supported_lba_formats[options.lba_format];
    SCOPED_TRACE(fmt::format("LBA format {} ({}+{}{}), seed {}", options.lba_format, format.data_bytes,
                             format.metadata_bytes, options.extended ? " extended" : "", options.seed));
    campaign<Rig> c{r, options};
    c.run();
    if (::testing::Test::HasFailure()) {
        return; // the coverage counts of a campaign cut short say nothing more
    }
    // Both kinds of command, and every layout feature, ran in numbers.
    EXPECT_GT(c.reads_checked, options.commands / 3);
    EXPECT_GT(c.writes_done, options.commands / 3);
    const std::size_t some = options.commands / 200;
    EXPECT_GT(c.seen.prp_lists, some);
    EXPECT_GT(c.seen.chained_prp_lists, some);
    EXPECT_GT(c.seen.chain_only_list_pages, some / 4);
    EXPECT_GT(c.seen.sgl_in_dptr, some);
    EXPECT_GT(c.seen.sgl_segment_chains, some);
    EXPECT_GT(c.seen.bit_buckets, some);
    EXPECT_GT(c.seen.overlapped, some);
    if constexpr (Rig::controller_type::dma_completes_later) {
        // Entries, data and completions all went through late requests, and none is left.
        const auto counts = r.dma.counts();
        EXPECT_GT(counts.submitted, options.commands * 3);
        EXPECT_EQ(counts.outstanding, 0U);
        EXPECT_TRUE(r.ctrl.dma_idle());
        if (options.dma_faults) {
            EXPECT_GT(c.faults_seen, some); // the faulty pages were hit, by reads and writes alike
        }
    }
    if constexpr (Rig::controller_type::limits.staging_buffers < max_in_flight) {
        EXPECT_GT(r.ctrl.statistics().staging_waits, some);
    }
    if (format.metadata_bytes != 0 && !options.extended) {
        EXPECT_GT(c.seen.metadata_sgls, some);
        EXPECT_GT(c.seen.metadata_segment_chains, some / 4);
    }
}

TEST(controller_data, zero_copy_ram_namespace_on_every_lba_format)
{
    std::uint64_t seed = 0x5eed'0001;
    for (const auto& layout : layouts) {
        run_campaign<rig>(
            {.lba_format = layout.format, .extended = layout.extended, .seed = seed++, .commands = 10000});
    }
}

TEST(controller_data, staged_ram_namespace_on_every_lba_format)
{
    std::uint64_t seed = 0x5eed'0101;
    for (const auto& layout : layouts) {
        run_campaign<basic_rig<staging_traits>>(
            {.lba_format = layout.format, .extended = layout.extended, .seed = seed++, .commands = 3500});
    }
}

TEST(controller_data, late_out_of_order_backend_on_every_lba_format)
{
    std::uint64_t seed = 0x5eed'0201;
    for (const auto& layout : layouts) {
        run_campaign<rig>({.lba_format = layout.format,
                           .extended = layout.extended,
                           .backend = backend_kind::delayed,
                           .seed = seed++,
                           .commands = 2000});
    }
}

TEST(controller_data, late_backend_with_scarce_staging_buffers_on_every_lba_format)
{
    std::uint64_t seed = 0x5eed'0301;
    for (const auto& layout : layouts) {
        run_campaign<basic_rig<scarce_staging_traits>>({.lba_format = layout.format,
                                                        .extended = layout.extended,
                                                        .backend = backend_kind::delayed,
                                                        .seed = seed++,
                                                        .commands = 1500});
    }
}

TEST(controller_data, asynchronous_dma_late_and_out_of_order_on_every_lba_format)
{
    // Every access to host memory (entries, lists, data, completions) completes in a later poll,
    // in an order of its own: handlers run again from their journals, writes are posted. Two
    // pages of host memory fail every access; the commands touching them, and only those, end
    // in Data Transfer Error without changing the media. 102,000 commands in all.
    std::uint64_t seed = 0x5eed'0401;
    for (const auto& layout : layouts) {
        run_campaign<basic_rig<async_dma_traits>>({.lba_format = layout.format,
                                                   .extended = layout.extended,
                                                   .seed = seed++,
                                                   .commands = 17000,
                                                   .dma_faults = true});
    }
}

} // namespace controller_data_test
} // namespace
