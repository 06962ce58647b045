#pragma once
/// The NVM command set's I/O commands (NVM Command Set 1.0 section 3): Flush, Write, Read, Write
/// Uncorrectable, Compare, Write Zeroes, Dataset Management, Verify and Copy, as handlers of the
/// controller's I/O dispatch table.
///
/// Data moves between host memory and the namespace's backend without a copy when the DMA
/// provider maps the host ranges; otherwise through one of the controller's staging buffers.
/// Commands that need a staging buffer and find none wait for one (nothing changed yet), so a host
/// cannot make the controller allocate beyond its limits.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include <nvmekit/config.hpp>
#include <nvmekit/contracts/block_backend.hpp>
#include <nvmekit/contracts/dma.hpp>
#include <nvmekit/contracts/handler_context.hpp>
#include <nvmekit/contracts/tracer.hpp>
#include <nvmekit/core/dispatcher.hpp>
#include <nvmekit/data/host_ranges.hpp>
#include <nvmekit/spec/commands.hpp>
#include <nvmekit/spec/opcodes.hpp>
#include <nvmekit/spec/status.hpp>

NVMEKIT_BEGIN_NAMESPACE

template <typename Controller>
struct nvm_command_set {
    using command = typename Controller::command;
    using table_type = typename Controller::table_type;
    using namespace_type = typename Controller::namespace_type;

    /// The built-in I/O command table.
    [[nodiscard]] static constexpr table_type table()
    {
        using spec::nvm_opcode;
        const auto op = [](nvm_opcode opcode) { return static_cast<std::uint8_t>(opcode); };
        return table_type{}
            .with(op(nvm_opcode::flush), &flush, effects::none())
            .with(op(nvm_opcode::write), &write, effects::changes_content())
            .with(op(nvm_opcode::read), &read, effects::none())
            .with(op(nvm_opcode::write_uncorrectable), &write_uncorrectable, effects::changes_content())
            .with(op(nvm_opcode::compare), &compare, effects::none())
            .with(op(nvm_opcode::write_zeroes), &write_zeroes, effects::changes_content())
            .with(op(nvm_opcode::dataset_management), &dataset_management, effects::changes_content())
            .with(op(nvm_opcode::verify), &verify, effects::none())
            .with(op(nvm_opcode::copy), &copy, effects::changes_content());
    }

    /// Copy limits this controller reports (MSSRL, MCL in blocks; MSRC 0's based): a copy fits one
    /// staging buffer.
    [[nodiscard]] static constexpr std::uint32_t max_copy_blocks(std::uint32_t block_bytes) noexcept
    {
        return static_cast<std::uint32_t>(
            std::min<std::uint64_t>(Controller::limits.max_transfer_bytes() / block_bytes, 65535U));
    }
    static constexpr std::uint16_t max_copy_ranges = 128;
    static constexpr std::uint16_t max_dsm_ranges = 256;

    static constexpr std::uint32_t broadcast_nsid = 0xffffffffU;

private:
    [[nodiscard]] static spec::status error(auto code) noexcept { return spec::status{code}.with_dnr(); }
    [[nodiscard]] static command_result fail(auto code) noexcept
    {
        return command_result::failure(error(code));
    }
    [[nodiscard]] static command_result result_of(spec::status status) noexcept
    {
        return status.is_success() ? command_result::success() : command_result::failure(status);
    }

    /// The attached namespace the command names, or null.
    [[nodiscard]] static namespace_type* resolve(Controller& c, command& cmd) noexcept
    {
        cmd.ns = c.attached_namespace(cmd.sqe.nsid);
        return cmd.ns;
    }

    /// Outcome of preparing a command's data buffers.
    enum class prepared : std::uint8_t { ready, failed, parked };

    /// Maps the host ranges into `segments`; false when a range cannot be mapped.
    template <std::size_t N>
    [[nodiscard]] static bool map_ranges(Controller& c, const host_range_list& ranges,
                                         std::array<io_segment, N>& segments, std::uint32_t& count)
    {
        if constexpr (MappingDmaProvider<typename Controller::dma_type>) {
            if (ranges.size() > N) {
                return false;
            }
            count = 0;
            for (const host_range& range : ranges.ranges()) {
                if (range.bit_bucket) {
                    segments[count++] = io_segment{nullptr, range.length};
                    continue;
                }
                const std::span<std::byte> mapped = c.map_host(range.address, range.length);
                if (mapped.size() != range.length) {
                    return false;
                }
                segments[count++] = io_segment{mapped.data(), mapped.size()};
            }
            return true;
        } else {
            return false;
        }
    }

    /// The common case without a range list: data described by PRP1 alone or PRP1 and a PRP2
    /// page, no separate metadata, and a provider that maps both pieces. Fills `cmd`'s segments
    /// as prepare_buffers would and returns true; false changes nothing that prepare_buffers
    /// does not set again, and prepare_buffers then walks (and reports every error of) the same
    /// pointer.
    [[nodiscard]] static bool map_simple_prps(Controller& c, command& cmd, std::uint64_t data_bytes,
                                              std::uint64_t metadata_bytes)
    {
        if constexpr (MappingDmaProvider<typename Controller::dma_type>) {
            if (metadata_bytes != 0 || data_bytes == 0 || data_bytes > c.max_transfer_bytes() ||
                cmd.sqe.pointer_type() != spec::data_pointer_type::prp) {
                return false;
            }
            const std::uint64_t page = c.memory_page_size();
            const std::uint64_t prp1 = cmd.sqe.dptr.prp1;
            if ((prp1 & 3U) != 0) {
                return false; // PRP Offset Invalid: the walk reports it
            }
            const std::uint64_t first = std::min(data_bytes, page - (prp1 & (page - 1U)));
            const std::uint64_t rest = data_bytes - first;
            if (rest > page) {
                return false; // PRP2 is a list pointer
            }
            const std::span<std::byte> one = c.map_host(prp1, first);
            if (one.size() != first) {
                return false;
            }
            cmd.data_segments[0] = io_segment{one.data(), first};
            if (rest != 0) {
                const std::uint64_t prp2 = cmd.sqe.dptr.prp2;
                if ((prp2 & (page - 1U)) != 0) {
                    return false;
                }
                const std::span<std::byte> two = c.map_host(prp2, rest);
                if (two.size() != rest) {
                    return false;
                }
                cmd.data_segments[1] = io_segment{two.data(), rest};
            }
            cmd.data_segment_count = rest != 0 ? 2U : 1U;
            cmd.progress.metadata_segments = 0;
            return true;
        } else {
            static_cast<void>(c);
            static_cast<void>(cmd);
            static_cast<void>(data_bytes);
            static_cast<void>(metadata_bytes);
            return false;
        }
    }

    /// Walks the data (and separate metadata) pointer and fills `cmd`'s segments: mapped host
    /// memory, or a staging buffer that holds the host's data for a write. On `failed`, `status`
    /// says why.
    [[nodiscard]] static prepared prepare_buffers(Controller& c, command& cmd, std::uint64_t data_bytes,
                                                  std::uint64_t metadata_bytes, transfer_direction direction,
                                                  spec::status& status)
    {
        if (map_simple_prps(c, cmd, data_bytes, metadata_bytes)) {
            c.trace_command(trace_event::data_prepared, cmd, data_bytes);
            return prepared::ready;
        }
        const prepared result =
            walk_and_prepare_buffers(c, cmd, data_bytes, metadata_bytes, direction, status);
        if (result == prepared::ready) {
            c.trace_command(trace_event::data_prepared, cmd, data_bytes);
        }
        return result;
    }

    /// prepare_buffers past the common case: the full PRP/SGL walk, mapping or staging.
    [[nodiscard]] static prepared walk_and_prepare_buffers(Controller& c, command& cmd,
                                                           std::uint64_t data_bytes,
                                                           std::uint64_t metadata_bytes,
                                                           transfer_direction direction, spec::status& status)
    {
        host_range_list ranges = c.scratch_ranges(cmd);
        status = c.walk_data(cmd, data_bytes, direction, ranges);
        if (!status.is_success()) {
            return prepared::failed;
        }
        host_range_list metadata_ranges = c.scratch_metadata_ranges(cmd);
        if (metadata_bytes != 0) {
            status = c.walk_metadata(cmd, metadata_bytes, direction, metadata_ranges);
            if (!status.is_success()) {
                return prepared::failed;
            }
        }
        std::uint32_t metadata_count = 0;
        if (map_ranges(c, ranges, cmd.data_segments, cmd.data_segment_count) &&
            (metadata_bytes == 0 || map_ranges(c, metadata_ranges, cmd.metadata_segments, metadata_count))) {
            cmd.progress.metadata_segments = metadata_count; // read by submit_data
            return prepared::ready;
        }
        auto* staging = c.acquire_staging(cmd);
        if (staging == nullptr) {
            return prepared::parked;
        }
        for (const host_range& range : ranges.ranges()) {
            [[maybe_unused]] const bool stored =
                staging->ranges.push(range.address, range.length, range.bit_bucket);
            NVMEKIT_ASSERT(stored, "a staging buffer holds as many ranges as the scratch list");
        }
        for (const host_range& range : metadata_ranges.ranges()) {
            if (!staging->metadata_ranges.push(range.address, range.length, range.bit_bucket)) {
                status = error(spec::generic_status::invalid_sgl_descriptor_count);
                return prepared::failed;
            }
        }
        const auto data = std::span{staging->bytes}.first(data_bytes);
        const auto metadata =
            std::span{staging->bytes}.subspan(Controller::limits.max_transfer_bytes(), metadata_bytes);
        if (direction == transfer_direction::host_to_controller) {
            status = c.read_host(cmd, staging->ranges, data);
            if (status.is_success() && metadata_bytes != 0) {
                status = c.read_host(cmd, staging->metadata_ranges, metadata);
            }
            if (!status.is_success()) {
                return prepared::failed;
            }
        }
        cmd.data_segments[0] = io_segment{data.data(), data.size()};
        cmd.data_segment_count = 1;
        cmd.metadata_segments[0] = io_segment{metadata.data(), metadata.size()};
        cmd.progress.metadata_segments = metadata_bytes != 0 ? 1U : 0U;
        return prepared::ready;
    }

    /// Sets what the submitter owns of `request` (the callback and context are set by
    /// submit_blocks). The relay slot is left alone: every relaying backend empties it before it
    /// completes the request, so it is empty here, and copying a whole request per command costs
    /// the stores of the slot on every Read and Write.
    static void assign_request(block_request& request, block_operation operation, bool fua,
                               std::uint64_t offset, std::uint64_t length,
                               std::span<const io_segment> segments)
    {
        NVMEKIT_ASSERT(request.relay.complete == nullptr, "a request reused while a backend relays it");
        request.operation = operation;
        request.force_unit_access = fua;
        request.offset = offset;
        request.length = length;
        request.segments = segments;
        request.error_offset = block_request::unknown_offset;
    }

    /// Submits the data request and, with separate metadata, the metadata request.
    NVMEKIT_HOT_INLINE static command_result
    submit_data(Controller& c, command& cmd, block_operation operation, bool fua, std::uint64_t slba,
                std::uint64_t data_bytes, std::uint64_t metadata_bytes,
                command_result (*continuation)(Controller&, command&))
    {
        auto& ns = *cmd.ns;
        assign_request(cmd.block[0], operation, fua, ns.data_offset(slba), data_bytes,
                       std::span<const io_segment>{cmd.data_segments}.first(cmd.data_segment_count));
        std::uint8_t count = 1;
        if (metadata_bytes != 0) {
            assign_request(
                cmd.block[1], operation, fua, ns.metadata_offset(slba), metadata_bytes,
                std::span<const io_segment>{cmd.metadata_segments}.first(cmd.progress.metadata_segments));
            count = 2;
        }
        if (c.submit_blocks_now(cmd, count, continuation)) {
            return continuation(c, cmd);
        }
        return command_result::pending();
    }

    /// Submits one request without host data (write zeroes, deallocate, flush, verify reads).
    static command_result submit_plain(Controller& c, command& cmd, block_operation operation,
                                       std::uint64_t offset, std::uint64_t length,
                                       command_result (*continuation)(Controller&, command&))
    {
        cmd.block[0] = block_request{.operation = operation, .offset = offset, .length = length};
        if (operation == block_operation::read) {
            cmd.data_segments[0] = io_segment{nullptr, length}; // discarded
            cmd.block[0].segments = std::span<const io_segment>{cmd.data_segments}.first(1);
        }
        return c.submit_blocks_then(cmd, 1, continuation);
    }

    /// LBA range and transfer size checks shared by the data commands.
    [[nodiscard]] static spec::status check_range(const namespace_type& ns, std::uint64_t slba,
                                                  std::uint64_t blocks)
    {
        if (!ns.contains(slba, blocks)) {
            return error(spec::generic_status::lba_out_of_range);
        }
        return spec::status::success();
    }

    /// Resolves the command's namespace into `cmd.ns` and checks that [slba, slba + blocks) lies
    /// in it (Invalid Namespace or Format, LBA Out of Range) and, for a command that moves the
    /// blocks' data, that it fits MDTS (Invalid Field).
    [[nodiscard]] NVMEKIT_HOT_INLINE static spec::status
    locate(Controller& c, command& cmd, std::uint64_t slba, std::uint64_t blocks, bool moves_data = false)
    {
        auto* ns = resolve(c, cmd);
        if (ns == nullptr) {
            return error(spec::generic_status::invalid_namespace_or_format);
        }
        if (const auto status = check_range(*ns, slba, blocks); !status.is_success()) {
            return status;
        }
        if (moves_data && ns->data_transfer_bytes(blocks) > c.max_transfer_bytes()) {
            return error(spec::generic_status::invalid_field);
        }
        return spec::status::success();
    }

    /// The completion of a command whose backend request failed.
    [[nodiscard]] static command_result backend_failed(Controller& c, command& cmd)
    {
        return command_result::failure(c.backend_failure(cmd, cmd.block_result));
    }

    /// Unrecovered Read Error for a read of an uncorrectable block, recorded with its LBA.
    [[nodiscard]] static bool uncorrectable(Controller& c, command& cmd, std::uint64_t slba,
                                            std::uint64_t blocks)
    {
        if (const auto lba = cmd.ns->first_uncorrectable(slba, blocks)) {
            c.record_media_error(cmd, *lba);
            return true;
        }
        return false;
    }

    // ---- Read and Write (NVM Command Set 1.0 3.3.4, 3.3.6) -----------------------------------

    [[gnu::flatten]] static command_result read(Controller& c, command& cmd)
    {
        const auto view = spec::read_view::decode(cmd.sqe);
        if (const auto status = locate(c, cmd, view.starting_lba, view.block_count, true);
            !status.is_success()) {
            return command_result::failure(status);
        }
        auto* ns = cmd.ns;
        const std::uint64_t data_bytes = ns->data_transfer_bytes(view.block_count);
        const std::uint64_t metadata_bytes = ns->metadata_transfer_bytes(view.block_count);
        if (uncorrectable(c, cmd, view.starting_lba, view.block_count)) {
            return fail(spec::media_status::unrecovered_read_error);
        }
        spec::status status;
        switch (prepare_buffers(c, cmd, data_bytes, metadata_bytes, transfer_direction::controller_to_host,
                                status)) {
        case prepared::failed: return command_result::failure(status);
        case prepared::parked: return command_result::pending();
        case prepared::ready: break;
        }
        return submit_data(c, cmd, block_operation::read, false, view.starting_lba, data_bytes,
                           metadata_bytes, &read_done);
    }

    static command_result read_done(Controller& c, command& cmd)
    {
        if (cmd.block_result != block_status::success) {
            return backend_failed(c, cmd);
        }
        const auto view = spec::read_view::decode(cmd.sqe);
        if (cmd.staging != nullptr) {
            const std::uint64_t data_bytes = cmd.ns->data_transfer_bytes(view.block_count);
            const std::uint64_t metadata_bytes = cmd.ns->metadata_transfer_bytes(view.block_count);
            auto& staging = *cmd.staging;
            auto status = c.write_host(cmd, staging.ranges, std::span{staging.bytes}.first(data_bytes));
            if (status.is_success() && metadata_bytes != 0) {
                status = c.write_host(cmd, staging.metadata_ranges,
                                      std::span{staging.bytes}.subspan(
                                          Controller::limits.max_transfer_bytes(), metadata_bytes));
            }
            if (!status.is_success()) {
                return command_result::failure(status);
            }
        }
        c.count_read(cmd, std::uint64_t{view.block_count} * cmd.ns->block_bytes());
        return command_result::success();
    }

    [[gnu::flatten]] static command_result write(Controller& c, command& cmd)
    {
        const auto view = spec::write_view::decode(cmd.sqe);
        if (const auto status = locate(c, cmd, view.starting_lba, view.block_count, true);
            !status.is_success()) {
            return command_result::failure(status);
        }
        auto* ns = cmd.ns;
        const std::uint64_t data_bytes = ns->data_transfer_bytes(view.block_count);
        const std::uint64_t metadata_bytes = ns->metadata_transfer_bytes(view.block_count);
        spec::status status;
        switch (prepare_buffers(c, cmd, data_bytes, metadata_bytes, transfer_direction::host_to_controller,
                                status)) {
        case prepared::failed: return command_result::failure(status);
        case prepared::parked: return command_result::pending();
        case prepared::ready: break;
        }
        // With the volatile write cache disabled (Feature 06h) every write is durable on completion.
        const bool durable = view.force_unit_access || !c.volatile_write_cache_enabled();
        return submit_data(c, cmd, block_operation::write, durable, view.starting_lba, data_bytes,
                           metadata_bytes, &write_done);
    }

    static command_result write_done(Controller& c, command& cmd)
    {
        if (cmd.block_result != block_status::success) {
            return backend_failed(c, cmd);
        }
        const auto view = spec::write_view::decode(cmd.sqe);
        // Rewritten blocks are correctable again; a full range table leaves them uncorrectable.
        static_cast<void>(cmd.ns->clear_uncorrectable(view.starting_lba, view.block_count));
        c.count_write(cmd, std::uint64_t{view.block_count} * cmd.ns->block_bytes());
        return command_result::success();
    }

    // ---- Flush (3.3.2) ------------------------------------------------------------------------

    static command_result flush(Controller& c, command& cmd)
    {
        if (cmd.sqe.nsid == broadcast_nsid) {
            cmd.progress.last_nsid = 0;
            return flush_next(c, cmd);
        }
        auto* ns = resolve(c, cmd);
        if (ns == nullptr) {
            return fail(spec::generic_status::invalid_namespace_or_format);
        }
        if (!ns->backend().has_volatile_cache()) {
            return command_result::success();
        }
        return submit_plain(c, cmd, block_operation::flush, 0, 0, &flush_done);
    }

    static command_result flush_done(Controller& c, command& cmd)
    {
        if (cmd.block_result != block_status::success) {
            return backend_failed(c, cmd);
        }
        return command_result::success();
    }

    /// Flush with NSID FFFFFFFFh: every attached namespace with a volatile cache, one at a time.
    static command_result flush_next(Controller& c, command& cmd)
    {
        if (cmd.block_result != block_status::success) {
            return backend_failed(c, cmd);
        }
        const std::uint32_t limit = c.nvm_subsystem().options().max_namespaces;
        for (auto nsid = cmd.progress.last_nsid + 1U; nsid <= limit; ++nsid) {
            auto* ns = c.attached_namespace(nsid);
            if (ns != nullptr && ns->backend().has_volatile_cache()) {
                cmd.progress.last_nsid = nsid;
                cmd.ns = ns;
                return submit_plain(c, cmd, block_operation::flush, 0, 0, &flush_next);
            }
        }
        return command_result::success();
    }

    // ---- Write Uncorrectable (3.3.7) ------------------------------------------------------------

    static command_result write_uncorrectable(Controller& c, command& cmd)
    {
        const auto view = spec::write_uncorrectable_view::decode(cmd.sqe);
        if (const auto status = locate(c, cmd, view.starting_lba, view.block_count); !status.is_success()) {
            return command_result::failure(status);
        }
        auto* ns = cmd.ns;
        if (!ns->mark_uncorrectable(view.starting_lba, view.block_count)) {
            return command_result::failure(spec::status{spec::generic_status::internal_error});
        }
        return command_result::success();
    }

    // ---- Compare (3.3.1) ----------------------------------------------------------------------

    static command_result compare(Controller& c, command& cmd)
    {
        const auto view = spec::compare_view::decode(cmd.sqe);
        if (const auto status = locate(c, cmd, view.starting_lba, view.block_count, true);
            !status.is_success()) {
            return command_result::failure(status);
        }
        auto* ns = cmd.ns;
        const std::uint64_t data_bytes = ns->data_transfer_bytes(view.block_count);
        const std::uint64_t metadata_bytes = ns->metadata_transfer_bytes(view.block_count);
        if (uncorrectable(c, cmd, view.starting_lba, view.block_count)) {
            return fail(spec::media_status::unrecovered_read_error);
        }
        // Walk the host buffers first (statuses for bad pointers), then stage the media data.
        {
            host_range_list ranges = c.scratch_ranges(cmd);
            if (auto status = c.walk_data(cmd, data_bytes, transfer_direction::host_to_controller, ranges);
                !status.is_success()) {
                return command_result::failure(status);
            }
        }
        auto* staging = c.acquire_staging(cmd);
        if (staging == nullptr) {
            return command_result::pending();
        }
        if (auto status =
                c.walk_data(cmd, data_bytes, transfer_direction::host_to_controller, staging->ranges);
            !status.is_success()) {
            return command_result::failure(status);
        }
        if (metadata_bytes != 0) {
            if (auto status = c.walk_metadata(cmd, metadata_bytes, transfer_direction::host_to_controller,
                                              staging->metadata_ranges);
                !status.is_success()) {
                return command_result::failure(status);
            }
        }
        cmd.data_segments[0] = io_segment{staging->bytes.data(), data_bytes};
        cmd.data_segment_count = 1;
        cmd.metadata_segments[0] =
            io_segment{staging->bytes.data() + Controller::limits.max_transfer_bytes(), metadata_bytes};
        cmd.progress.metadata_segments = metadata_bytes != 0 ? 1U : 0U;
        return submit_data(c, cmd, block_operation::read, false, view.starting_lba, data_bytes,
                           metadata_bytes, &compare_done);
    }

    /// Compares `media` with the host bytes of `ranges`, a page at a time.
    [[nodiscard]] static spec::status compare_with_host(Controller& c, const command& cmd,
                                                        const host_range_list& ranges,
                                                        std::span<const std::byte> media)
    {
        std::array<std::byte, 4096> host{};
        for (std::uint64_t offset = 0; offset < media.size(); offset += host.size()) {
            const auto piece = std::min<std::uint64_t>(host.size(), media.size() - offset);
            const auto window = std::span{host}.first(piece);
            if (auto status = c.read_host(cmd, ranges, offset, window); !status.is_success()) {
                return status;
            }
            if (std::memcmp(window.data(), media.data() + offset, piece) != 0) {
                return error(spec::media_status::compare_failure);
            }
        }
        return spec::status::success();
    }

    static command_result compare_done(Controller& c, command& cmd)
    {
        if (cmd.block_result != block_status::success) {
            return backend_failed(c, cmd);
        }
        const auto view = spec::compare_view::decode(cmd.sqe);
        const std::uint64_t data_bytes = cmd.ns->data_transfer_bytes(view.block_count);
        const std::uint64_t metadata_bytes = cmd.ns->metadata_transfer_bytes(view.block_count);
        auto& staging = *cmd.staging;
        auto status = compare_with_host(c, cmd, staging.ranges, std::span{staging.bytes}.first(data_bytes));
        if (status.is_success() && metadata_bytes != 0) {
            status = compare_with_host(
                c, cmd, staging.metadata_ranges,
                std::span{staging.bytes}.subspan(Controller::limits.max_transfer_bytes(), metadata_bytes));
        }
        if (status.is_success()) {
            c.count_read(cmd, std::uint64_t{view.block_count} * cmd.ns->block_bytes());
        }
        return result_of(status);
    }

    // ---- Verify (3.3.8) -------------------------------------------------------------------------

    static command_result verify(Controller& c, command& cmd)
    {
        const auto view = spec::verify_view::decode(cmd.sqe);
        if (const auto status = locate(c, cmd, view.starting_lba, view.block_count); !status.is_success()) {
            return command_result::failure(status);
        }
        auto* ns = cmd.ns;
        if (uncorrectable(c, cmd, view.starting_lba, view.block_count)) {
            return fail(spec::media_status::unrecovered_read_error);
        }
        // The media is read (so backend media errors surface) and the data discarded.
        return submit_plain(c, cmd, block_operation::read, ns->data_offset(view.starting_lba),
                            ns->data_offset(view.block_count), &flush_done);
    }

    // ---- Write Zeroes (3.3.9) -----------------------------------------------------------------

    static command_result write_zeroes(Controller& c, command& cmd)
    {
        const auto view = spec::write_zeroes_view::decode(cmd.sqe);
        if (const auto status = locate(c, cmd, view.starting_lba, view.block_count); !status.is_success()) {
            return command_result::failure(status);
        }
        auto* ns = cmd.ns;
        // Deallocated blocks read as zeroes (DLFEAT), so DEAC deallocates instead of writing.
        const auto operation = view.deallocate ? block_operation::deallocate : block_operation::write_zeroes;
        // FUA (CDW12 bit 30), implied when the volatile write cache is disabled, as for Write.
        const bool durable = view.force_unit_access || !c.volatile_write_cache_enabled();
        cmd.block[0] = block_request{.operation = operation,
                                     .force_unit_access = durable,
                                     .offset = ns->data_offset(view.starting_lba),
                                     .length = ns->data_offset(view.block_count)};
        std::uint8_t count = 1;
        if (const auto metadata_bytes = ns->metadata_transfer_bytes(view.block_count); metadata_bytes != 0) {
            cmd.block[1] = block_request{.operation = operation,
                                         .force_unit_access = durable,
                                         .offset = ns->metadata_offset(view.starting_lba),
                                         .length = metadata_bytes};
            count = 2;
        }
        cmd.continuation = &zeroes_done;
        c.submit_blocks(cmd, count);
        return command_result::pending();
    }

    static command_result zeroes_done(Controller& c, command& cmd)
    {
        if (cmd.block_result != block_status::success) {
            return backend_failed(c, cmd);
        }
        const auto view = spec::write_zeroes_view::decode(cmd.sqe);
        static_cast<void>(cmd.ns->clear_uncorrectable(view.starting_lba, view.block_count));
        return command_result::success();
    }

    // ---- Dataset Management (3.3.3) -------------------------------------------------------------

    static command_result dataset_management(Controller& c, command& cmd)
    {
        auto* ns = resolve(c, cmd);
        if (ns == nullptr) {
            return fail(spec::generic_status::invalid_namespace_or_format);
        }
        const auto view = spec::dataset_management_view::decode(cmd.sqe);
        const std::size_t bytes = std::size_t{view.range_count} * sizeof(spec::dataset_management_range);
        auto* staging = c.acquire_staging(cmd);
        if (staging == nullptr) {
            return command_result::pending();
        }
        if (auto status = c.transfer_from_host(cmd, std::span{staging->bytes}.first(bytes));
            !status.is_success()) {
            return command_result::failure(status);
        }
        if (!view.deallocate) {
            return command_result::success(); // IDR/IDW and context attributes are hints
        }
        for (std::uint16_t i = 0; i < view.range_count; ++i) {
            const auto range = dsm_range(cmd, i);
            if (!ns->contains(range.starting_lba, range.block_count)) {
                return fail(spec::generic_status::lba_out_of_range);
            }
        }
        cmd.progress.next_range = 0;
        cmd.block_result = block_status::success;
        return dsm_next(c, cmd);
    }

    [[nodiscard]] static spec::dataset_management_range dsm_range(const command& cmd, std::size_t index)
    {
        spec::dataset_management_range range{};
        std::memcpy(&range, cmd.staging->bytes.data() + index * sizeof(range), sizeof(range));
        return range;
    }

    static command_result dsm_next(Controller& c, command& cmd)
    {
        if (cmd.block_result != block_status::success) {
            return backend_failed(c, cmd);
        }
        const auto view = spec::dataset_management_view::decode(cmd.sqe);
        while (cmd.progress.next_range < view.range_count) {
            const auto range = dsm_range(cmd, cmd.progress.next_range++);
            if (range.block_count == 0) {
                continue;
            }
            static_cast<void>(cmd.ns->clear_uncorrectable(range.starting_lba, range.block_count));
            // Separate metadata is deallocated too: DLFEAT says it reads back as zeroes.
            cmd.block[0] = block_request{.operation = block_operation::deallocate,
                                         .offset = cmd.ns->data_offset(range.starting_lba),
                                         .length = cmd.ns->data_offset(range.block_count)};
            std::uint8_t count = 1;
            if (const auto metadata_bytes = cmd.ns->metadata_transfer_bytes(range.block_count);
                metadata_bytes != 0) {
                cmd.block[1] = block_request{.operation = block_operation::deallocate,
                                             .offset = cmd.ns->metadata_offset(range.starting_lba),
                                             .length = metadata_bytes};
                count = 2;
            }
            cmd.continuation = &dsm_next;
            c.submit_blocks(cmd, count);
            return command_result::pending();
        }
        return command_result::success();
    }

    // ---- Copy (3.3.10), source range format 0 -------------------------------------------------

    /// Staging layout of a copy: data from 0, separate metadata from MDTS, source ranges after the
    /// metadata area.
    [[nodiscard]] static constexpr std::size_t copy_ranges_offset() noexcept
    {
        return Controller::limits.max_transfer_bytes() + Controller::limits.max_transfer_bytes() / 16U;
    }

    [[nodiscard]] static spec::copy_source_range copy_range(const command& cmd, std::size_t index)
    {
        spec::copy_source_range range{};
        std::memcpy(&range, cmd.staging->bytes.data() + copy_ranges_offset() + index * sizeof(range),
                    sizeof(range));
        return range;
    }

    static command_result copy(Controller& c, command& cmd)
    {
        auto* ns = resolve(c, cmd);
        if (ns == nullptr) {
            return fail(spec::generic_status::invalid_namespace_or_format);
        }
        const auto view = spec::copy_view::decode(cmd.sqe);
        if (view.descriptor_format != 0) {
            return fail(spec::generic_status::invalid_field);
        }
        if (view.range_count > max_copy_ranges) {
            return fail(spec::command_specific_status::command_size_limit_exceeded);
        }
        auto* staging = c.acquire_staging(cmd);
        if (staging == nullptr) {
            return command_result::pending();
        }
        const std::size_t bytes = std::size_t{view.range_count} * sizeof(spec::copy_source_range);
        if (auto status =
                c.transfer_from_host(cmd, std::span{staging->bytes}.subspan(copy_ranges_offset(), bytes));
            !status.is_success()) {
            return command_result::failure(status);
        }
        const std::uint32_t limit = max_copy_blocks(ns->block_bytes() + ns->metadata_bytes());
        std::uint64_t total = 0;
        for (std::uint16_t i = 0; i < view.range_count; ++i) {
            const auto range = copy_range(cmd, i);
            if (range.block_count() > limit) {
                return fail(spec::command_specific_status::command_size_limit_exceeded);
            }
            if (!ns->contains(range.starting_lba, range.block_count())) {
                return fail(spec::generic_status::lba_out_of_range);
            }
            total += range.block_count();
        }
        if (total > limit) {
            return fail(spec::command_specific_status::command_size_limit_exceeded);
        }
        if (!ns->contains(view.destination_lba, total)) {
            return fail(spec::generic_status::lba_out_of_range);
        }
        for (std::uint16_t i = 0; i < view.range_count; ++i) {
            const auto range = copy_range(cmd, i);
            if (uncorrectable(c, cmd, range.starting_lba, range.block_count())) {
                return fail(spec::media_status::unrecovered_read_error);
            }
        }
        cmd.progress.next_range = 0;
        cmd.progress.blocks_done = 0;
        cmd.block_result = block_status::success;
        return copy_next(c, cmd);
    }

    static command_result copy_next(Controller& c, command& cmd)
    {
        if (cmd.block_result != block_status::success) {
            return backend_failed(c, cmd);
        }
        auto& ns = *cmd.ns;
        const auto view = spec::copy_view::decode(cmd.sqe);
        const std::uint16_t index = cmd.progress.next_range;
        const std::uint64_t done = cmd.progress.blocks_done;
        auto* bytes = cmd.staging->bytes.data();
        const std::uint64_t metadata_base = Controller::limits.max_transfer_bytes();
        const auto data_unit = ns.data_transfer_bytes(1);
        const auto metadata_unit = ns.metadata_transfer_bytes(1);
        if (index < view.range_count) {
            const auto range = copy_range(cmd, index);
            cmd.progress.next_range = static_cast<std::uint16_t>(index + 1U);
            cmd.progress.blocks_done = done + range.block_count();
            cmd.data_segments[0] = io_segment{bytes + done * data_unit, range.block_count() * data_unit};
            cmd.data_segment_count = 1;
            cmd.metadata_segments[0] =
                io_segment{bytes + metadata_base + done * metadata_unit, range.block_count() * metadata_unit};
            const std::uint64_t metadata_bytes = range.block_count() * metadata_unit;
            return submit_copy(c, cmd, block_operation::read, range.starting_lba,
                               range.block_count() * data_unit, metadata_bytes, &copy_next);
        }
        if (index == view.range_count) {
            cmd.progress.next_range = static_cast<std::uint16_t>(index + 1U);
            cmd.data_segments[0] = io_segment{bytes, done * data_unit};
            cmd.data_segment_count = 1;
            cmd.metadata_segments[0] = io_segment{bytes + metadata_base, done * metadata_unit};
            return submit_copy(c, cmd, block_operation::write, view.destination_lba, done * data_unit,
                               done * metadata_unit, &copy_next);
        }
        static_cast<void>(ns.clear_uncorrectable(view.destination_lba, done));
        c.count_write(cmd, done * ns.block_bytes());
        return command_result::success();
    }

    static command_result submit_copy(Controller& c, command& cmd, block_operation operation,
                                      std::uint64_t slba, std::uint64_t data_bytes,
                                      std::uint64_t metadata_bytes,
                                      command_result (*continuation)(Controller&, command&))
    {
        auto& ns = *cmd.ns;
        const auto view = spec::copy_view::decode(cmd.sqe);
        const bool fua = operation == block_operation::write &&
                         (view.force_unit_access || !c.volatile_write_cache_enabled());
        cmd.block[0] = block_request{.operation = operation,
                                     .force_unit_access = fua,
                                     .offset = ns.data_offset(slba),
                                     .length = data_bytes,
                                     .segments = std::span<const io_segment>{cmd.data_segments}.first(1)};
        std::uint8_t count = 1;
        if (metadata_bytes != 0) {
            cmd.block[1] =
                block_request{.operation = operation,
                              .force_unit_access = fua,
                              .offset = ns.metadata_offset(slba),
                              .length = metadata_bytes,
                              .segments = std::span<const io_segment>{cmd.metadata_segments}.first(1)};
            count = 2;
        }
        cmd.continuation = continuation;
        c.submit_blocks(cmd, count);
        return command_result::pending();
    }
};

NVMEKIT_END_NAMESPACE
