#pragma once
/// What the controller tests on file namespaces share (controller_file_backend_test,
/// controller_uring_backend_test): a temporary file, data patterns, and Write, Read and Flush
/// commands on namespace 1 through the in-process host.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>
#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "controller_fixture.hpp"
#include "scratch_directory.hpp"

namespace nvmekit_test {

/// A file made by mkstemp in the scratch directory (where O_DIRECT works when any candidate
/// directory allows it), removed when the test ends.
class temporary_file {
public:
    temporary_file() : path_{make_temporary_file("nvmekit_controller_file")} {}
    ~temporary_file() { ::unlink(path_.c_str()); }
    temporary_file(const temporary_file&) = delete;
    temporary_file& operator=(const temporary_file&) = delete;

    [[nodiscard]] const std::string& path() const noexcept { return path_; }

    /// `length` bytes of the file at `offset`, read without the controller.
    [[nodiscard]] std::vector<std::byte> read(std::uint64_t offset, std::size_t length) const
    {
        std::vector<std::byte> bytes(length);
        const int fd = ::open(path_.c_str(), O_RDONLY);
        EXPECT_GE(fd, 0);
        EXPECT_EQ(::pread(fd, bytes.data(), length, static_cast<off_t>(offset)),
                  static_cast<ssize_t>(length));
        ::close(fd);
        return bytes;
    }

private:
    std::string path_;
};

/// Bytes no two calls with different seeds share.
[[nodiscard]] inline std::vector<std::byte> pattern(std::size_t length, std::uint32_t seed)
{
    std::vector<std::byte> bytes(length);
    std::uint32_t state = seed * 2654435761U + 1U;
    for (auto& byte : bytes) {
        state = state * 1664525U + 1013904223U;
        byte = static_cast<std::byte>(state >> 24);
    }
    return bytes;
}

/// Writes `data` (and `metadata` through MPTR when not empty) at `slba` of namespace 1.
inline nvmekit::spec::status write_blocks(rig& r, std::uint64_t slba, std::span<const std::byte> data,
                                          std::span<const std::byte> metadata = {}, bool fua = false)
{
    auto* ns = r.subsystem.find(1);
    const auto blocks = static_cast<std::uint32_t>(data.size() / ns->data_transfer_bytes(1));
    auto sqe =
        host_type::lba_command<nvmekit::spec::write_view>(nvmekit::spec::nvm_opcode::write, 1, slba, blocks);
    if (fua) {
        auto view = nvmekit::spec::write_view::decode(sqe);
        view.force_unit_access = true;
        view.encode(sqe);
    }
    const auto buffer = r.host.allocate(data.size());
    std::memcpy(r.memory.bytes(buffer, data.size()).data(), data.data(), data.size());
    sqe.dptr = r.host.build_prps(buffer, data.size());
    if (!metadata.empty()) {
        sqe.mptr = r.host.allocate(metadata.size());
        std::memcpy(r.memory.bytes(sqe.mptr, metadata.size()).data(), metadata.data(), metadata.size());
    }
    return r.host.io(1, sqe).status();
}

/// Reads `blocks` blocks at `slba` of namespace 1 into `data` (and `metadata` when the namespace
/// has separate metadata).
inline nvmekit::spec::status read_blocks(rig& r, std::uint64_t slba, std::uint32_t blocks,
                                         std::vector<std::byte>& data,
                                         std::vector<std::byte>* metadata = nullptr)
{
    auto* ns = r.subsystem.find(1);
    const auto data_bytes = static_cast<std::size_t>(ns->data_transfer_bytes(blocks));
    const auto metadata_bytes = static_cast<std::size_t>(ns->metadata_transfer_bytes(blocks));
    auto sqe =
        host_type::lba_command<nvmekit::spec::read_view>(nvmekit::spec::nvm_opcode::read, 1, slba, blocks);
    const auto buffer = r.host.allocate(data_bytes);
    sqe.dptr = r.host.build_prps(buffer, data_bytes);
    if (metadata_bytes != 0) {
        sqe.mptr = r.host.allocate(metadata_bytes);
    }
    const auto status = r.host.io(1, sqe).status();
    const auto bytes = r.memory.bytes(buffer, data_bytes);
    data.assign(bytes.begin(), bytes.end());
    if (metadata != nullptr && metadata_bytes != 0) {
        const auto stored = r.memory.bytes(sqe.mptr, metadata_bytes);
        metadata->assign(stored.begin(), stored.end());
    }
    return status;
}

[[nodiscard]] inline nvmekit::spec::status flush(rig& r, std::uint32_t nsid = 1)
{
    return r.host.io(1, host_type::command(nvmekit::spec::nvm_opcode::flush, nsid)).status();
}

/// Writes two ranges through a controller on `make()`'s backend (a `Backend`, which counts its
/// syncs in sync_count()) and flushes; then the bytes are in `file`, at block n * 512, and a
/// second controller on `reopen()`'s backend reads them back, and never-written blocks as zeros.
template <typename Backend, typename Make, typename Reopen>
void expect_flushed_data_survives(const temporary_file& file, Make make, Reopen reopen,
                                  const nvmekit::testing::host_options& host = {})
{
    namespace spec = nvmekit::spec;
    const auto first = pattern(8 * 512, 1);
    const auto second = pattern(16 * 512, 2);
    {
        rig r;
        auto& ns = r.subsystem.add_namespace(make());
        r.host.bring_up(host);
        const auto syncs = [&] { return ns.backend().template get_if<Backend>()->sync_count(); };
        ASSERT_EQ(write_blocks(r, 3, first), spec::status::success());
        ASSERT_EQ(write_blocks(r, 1000, second), spec::status::success());
        EXPECT_EQ(syncs(), 0U); // the writes sit in the volatile write cache
        EXPECT_EQ(flush(r), spec::status::success());
        EXPECT_EQ(syncs(), 1U);
        EXPECT_EQ(r.ctrl.requests_in_use(), 0U);
        EXPECT_EQ(r.ctrl.io_outstanding(), 0U);
    }
    EXPECT_EQ(file.read(3 * 512, first.size()), first);
    EXPECT_EQ(file.read(1000 * 512, second.size()), second);

    rig r;
    auto& ns = r.subsystem.add_namespace(reopen());
    EXPECT_EQ(ns.block_count(), ns.backend().capacity_bytes() / 512);
    r.host.bring_up(host);
    std::vector<std::byte> data;
    EXPECT_EQ(read_blocks(r, 3, 8, data), spec::status::success());
    EXPECT_EQ(data, first);
    EXPECT_EQ(read_blocks(r, 1000, 16, data), spec::status::success());
    EXPECT_EQ(data, second);
    EXPECT_EQ(read_blocks(r, 11, 4, data), spec::status::success());
    EXPECT_EQ(data, std::vector<std::byte>(4 * 512)); // never written: zeros
    EXPECT_EQ(r.ctrl.requests_in_use(), 0U);
}

} // namespace nvmekit_test
