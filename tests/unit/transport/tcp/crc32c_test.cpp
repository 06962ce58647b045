#include <nvmekit/transport/tcp/crc32c.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include <gtest/gtest.h>

#include <nvmekit/spec/tcp.hpp>

#include "splitmix64.hpp"
#include "transport/tcp/reference_crc32c.hpp"

namespace spec = nvmekit::spec;
namespace tcp = nvmekit::transport::tcp;
using nvmekit_test::as_bytes;
using nvmekit_test::reference_crc32c;

namespace {

constexpr std::array<std::byte, 9> check_string{std::byte{'1'}, std::byte{'2'}, std::byte{'3'},
                                                std::byte{'4'}, std::byte{'5'}, std::byte{'6'},
                                                std::byte{'7'}, std::byte{'8'}, std::byte{'9'}};
// The check value of CRC-32C, computed at compile time by the portable code.
static_assert(tcp::crc32c_of(check_string) == 0xe306'9283);
static_assert(tcp::crc32c_update_portable(0xffff'ffff, check_string) == ~0xe306'9283U);

std::vector<std::byte> filled(std::size_t size, std::uint8_t value)
{
    return std::vector<std::byte>(size, std::byte{value});
}

std::vector<std::byte> counting(std::size_t size, bool down)
{
    std::vector<std::byte> bytes(size);
    for (std::size_t i = 0; i < size; ++i) {
        bytes[i] = std::byte(down ? size - 1 - i : i);
    }
    return bytes;
}

std::vector<std::byte> random_bytes(std::size_t size, std::uint64_t seed)
{
    std::vector<std::byte> bytes(size);
    nvmekit_test::splitmix64 random{seed};
    random.fill(bytes);
    return bytes;
}

} // namespace

TEST(crc32c, standard_check_value)
{
    EXPECT_EQ(tcp::crc32c_of(as_bytes("123456789")), 0xe306'9283U);
    EXPECT_EQ(reference_crc32c(as_bytes("123456789")), 0xe306'9283U);
    EXPECT_EQ(tcp::crc32c_of({}), 0U);
}

// The CRC-32C examples of iSCSI (RFC 3720, B.4), which uses the same CRC as NVMe/TCP digests.
TEST(crc32c, iscsi_test_vectors)
{
    EXPECT_EQ(tcp::crc32c_of(filled(32, 0x00)), 0x8a91'36aaU);
    EXPECT_EQ(tcp::crc32c_of(filled(32, 0xff)), 0x62a8'ab43U);
    EXPECT_EQ(tcp::crc32c_of(counting(32, false)), 0x46dd'794eU);
    EXPECT_EQ(tcp::crc32c_of(counting(32, true)), 0x113f'db5cU);
}

TEST(crc32c, agrees_with_the_bitwise_definition_at_every_length_and_alignment)
{
    const auto data = random_bytes(600, 7);
    for (std::size_t offset = 0; offset < 8; ++offset) {
        for (std::size_t length = 0; offset + length <= 300; ++length) {
            const auto part = std::span{data}.subspan(offset, length);
            ASSERT_EQ(tcp::crc32c_of(part), reference_crc32c(part))
                << "offset " << offset << " length " << length;
            ASSERT_EQ(tcp::crc32c_update_portable(0xffff'ffff, part), ~reference_crc32c(part));
        }
    }
}

TEST(crc32c, incremental_updates_equal_one_pass_at_every_split)
{
    const auto data = random_bytes(1000, 11);
    const std::uint32_t whole = tcp::crc32c_of(data);
    for (std::size_t split = 0; split <= data.size(); ++split) {
        tcp::crc32c digest;
        digest.update(std::span{data}.first(split)).update(std::span{data}.subspan(split));
        ASSERT_EQ(digest.value(), whole) << "split at " << split;
    }
    tcp::crc32c bytewise;
    for (const std::byte byte : data) {
        bytewise.update(std::span{&byte, 1});
    }
    EXPECT_EQ(bytewise.value(), whole);
    bytewise.reset();
    EXPECT_EQ(bytewise.value(), 0U);
    EXPECT_EQ(bytewise.update(as_bytes("123456789")).value(), 0xe306'9283U);
}

TEST(crc32c, sse42_agrees_with_the_portable_code)
{
#if defined(__SSE4_2__)
    if (!__builtin_cpu_supports("sse4.2")) {
        GTEST_SKIP() << "the CPU lacks SSE4.2";
    }
    EXPECT_TRUE(tcp::crc32c_has_sse42);
    const auto data = random_bytes(5000, 13);
    for (std::size_t offset = 0; offset < 8; ++offset) {
        for (std::size_t length = 0; offset + length <= 200; ++length) {
            const auto part = std::span{data}.subspan(offset, length);
            ASSERT_EQ(tcp::crc32c_update_sse42(0xffff'ffff, part),
                      tcp::crc32c_update_portable(0xffff'ffff, part));
            ASSERT_EQ(tcp::crc32c_update_sse42(0x1234'5678, part),
                      tcp::crc32c_update_portable(0x1234'5678, part));
        }
    }
    EXPECT_EQ(tcp::crc32c_update_sse42(0xffff'ffff, data), tcp::crc32c_update_portable(0xffff'ffff, data));
    EXPECT_EQ(tcp::crc32c_of(data), reference_crc32c(data));
#else
    EXPECT_FALSE(tcp::crc32c_has_sse42);
    GTEST_SKIP() << "built without SSE4.2 (transport_tcp_crc32c_sse42_test builds this file with -msse4.2)";
#endif
}

TEST(crc32c, digest_bytes_are_little_endian)
{
    const auto bytes = tcp::digest_bytes(0xe306'9283);
    EXPECT_EQ(bytes,
              (std::array<std::byte, 4>{std::byte{0x83}, std::byte{0x92}, std::byte{0x06}, std::byte{0xe3}}));
    EXPECT_EQ(tcp::load_digest(bytes), 0xe306'9283U);
}

// The header digest of a CapsuleCmd as the Linux host sends its admin Connect with header
// digests on: 72 header bytes, then the CRC-32C of exactly those bytes, little-endian.
TEST(crc32c, header_digest_of_a_connect_capsule)
{
    std::array<std::byte, 72 + 4> pdu{};
    const std::array<std::uint8_t, 8> common{0x04, 0x01, 72, 76, 0x4c, 0x04, 0x00, 0x00}; // PLEN 1100
    for (std::size_t i = 0; i < common.size(); ++i) {
        pdu[i] = std::byte{common[i]};
    }
    pdu[8] = std::byte{0x7f};  // OPC Fabrics
    pdu[9] = std::byte{0x40};  // PSDT: SGL
    pdu[10] = std::byte{0x01}; // CID 1
    pdu[12] = std::byte{0x01}; // FCTYPE Connect
    pdu[32 + 8] = std::byte{0x00};
    pdu[32 + 9] = std::byte{0x04};  // SGL length 1024
    pdu[32 + 15] = std::byte{0x01}; // SGL descriptor type: data block, offset subtype
    pdu[52] = std::byte{0x1f};      // SQSIZE 31
    const auto header = std::span{pdu}.first(72);
    const std::uint32_t expected = reference_crc32c(header);
    const auto stored = tcp::digest_bytes(tcp::crc32c_of(header));
    std::copy(stored.begin(), stored.end(), pdu.begin() + 72);
    EXPECT_EQ(tcp::load_digest(std::span{pdu}.subspan<72, 4>()), expected);
    // A digest over the header and its own digest leaves the CRC-32C residue.
    EXPECT_EQ(tcp::crc32c_of(pdu), 0x4867'4bc7U);
    EXPECT_EQ(sizeof(spec::capsule_cmd_pdu), header.size());
}
