#include <nvmekit/pci/msix.hpp>

#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

namespace {

using nvmekit::msix_message;

/// Records every MSI-X message the table sends.
struct recording_interrupts {
    std::vector<std::pair<std::uint16_t, msix_message>> raised;
    void raise_msix(std::uint16_t vector, msix_message message) { raised.emplace_back(vector, message); }
};
static_assert(nvmekit::InterruptProvider<recording_interrupts>);

using table_type = nvmekit::msix_table<recording_interrupts>;

constexpr std::uint64_t entry(std::uint16_t vector) { return std::uint64_t{vector} * 16; }
constexpr std::uint64_t address_low(std::uint16_t vector) { return entry(vector); }
constexpr std::uint64_t address_high(std::uint16_t vector) { return entry(vector) + 4; }
constexpr std::uint64_t data(std::uint16_t vector) { return entry(vector) + 8; }
constexpr std::uint64_t control(std::uint16_t vector) { return entry(vector) + 12; }

/// Programs `vector` with a distinct address and data, and unmasks it.
void program(table_type& table, std::uint16_t vector)
{
    table.write_table(address_low(vector), 4, 0xfee0'0000U + vector * 0x10U);
    table.write_table(address_high(vector), 4, 0x1U);
    table.write_table(data(vector), 4, 0x4000U + vector);
    table.write_table(control(vector), 4, 0);
}

msix_message message_of(std::uint16_t vector)
{
    return {0x1'fee0'0000ULL + vector * 0x10U, 0x4000U + vector};
}

} // namespace

TEST(msix_table, sizes_follow_the_vector_count)
{
    EXPECT_EQ(table_type::table_bytes(1), 16U);
    EXPECT_EQ(table_type::table_bytes(2048), 32768U);
    EXPECT_EQ(table_type::pba_bytes(1), 8U);
    EXPECT_EQ(table_type::pba_bytes(64), 8U);
    EXPECT_EQ(table_type::pba_bytes(65), 16U);
    EXPECT_EQ(table_type::pba_bytes(2048), 256U);
}

TEST(msix_table, rejects_zero_or_more_than_2048_vectors)
{
    recording_interrupts interrupts;
    EXPECT_THROW(table_type(interrupts, 0), std::invalid_argument);
    EXPECT_THROW(table_type(interrupts, 2049), std::invalid_argument);
    EXPECT_EQ(table_type(interrupts, 1).vectors(), 1U);
    EXPECT_EQ(table_type(interrupts, 2048).vectors(), 2048U);
}

TEST(msix_table, starts_masked_with_zero_address_and_data)
{
    recording_interrupts interrupts;
    const table_type table{interrupts, 3};
    for (std::uint16_t vector = 0; vector < 3; ++vector) {
        EXPECT_EQ(table.read_table(address_low(vector), 4), 0U);
        EXPECT_EQ(table.read_table(address_high(vector), 4), 0U);
        EXPECT_EQ(table.read_table(data(vector), 4), 0U);
        EXPECT_EQ(table.read_table(control(vector), 4), 1U);
        EXPECT_TRUE(table.masked(vector));
        EXPECT_FALSE(table.pending(vector));
        EXPECT_EQ(table.message(vector), (msix_message{0, 0}));
    }
    EXPECT_FALSE(table.enabled());
    EXPECT_FALSE(table.function_masked());
    EXPECT_EQ(table.read_pba(0, 8), 0U);
    EXPECT_EQ(table.host_error_count(), 0U);
}

TEST(msix_table, dword_access_reads_back_each_field)
{
    recording_interrupts interrupts;
    table_type table{interrupts, 4};
    table.write_table(address_low(2), 4, 0xfee0'1234U);
    table.write_table(address_high(2), 4, 0xabcd'0001U);
    table.write_table(data(2), 4, 0x0000'4021U);
    table.write_table(control(2), 4, 0);
    EXPECT_EQ(table.read_table(address_low(2), 4), 0xfee0'1234U);
    EXPECT_EQ(table.read_table(address_high(2), 4), 0xabcd'0001U);
    EXPECT_EQ(table.read_table(data(2), 4), 0x0000'4021U);
    EXPECT_EQ(table.read_table(control(2), 4), 0U);
    EXPECT_FALSE(table.masked(2));
    EXPECT_EQ(table.message(2), (msix_message{0xabcd'0001'fee0'1234ULL, 0x4021U}));
    // Neighbours untouched.
    EXPECT_EQ(table.read_table(control(1), 4), 1U);
    EXPECT_EQ(table.read_table(address_low(3), 4), 0U);
    EXPECT_EQ(table.host_error_count(), 0U);
}

TEST(msix_table, qword_access_covers_two_dwords_low_first)
{
    recording_interrupts interrupts;
    table_type table{interrupts, 2};
    table.write_table(entry(1), 8, 0x0000'0002'fee0'0040ULL);
    table.write_table(entry(1) + 8, 8, 0x0000'0000'0000'0055ULL); // data 55h, unmasked
    EXPECT_EQ(table.read_table(entry(1), 8), 0x0000'0002'fee0'0040ULL);
    EXPECT_EQ(table.read_table(entry(1) + 8, 8), 0x0000'0000'0000'0055ULL);
    EXPECT_EQ(table.read_table(address_low(1), 4), 0xfee0'0040U);
    EXPECT_EQ(table.read_table(address_high(1), 4), 0x2U);
    EXPECT_EQ(table.read_table(data(1), 4), 0x55U);
    EXPECT_FALSE(table.masked(1));
    table.write_table(entry(1) + 8, 8, 0x0000'0001'0000'0066ULL);
    EXPECT_TRUE(table.masked(1));
    EXPECT_EQ(table.read_table(entry(1) + 8, 8), 0x0000'0001'0000'0066ULL);
    EXPECT_EQ(table.message(1), (msix_message{0x2'fee0'0040ULL, 0x66U}));
    EXPECT_EQ(table.host_error_count(), 0U);
}

TEST(msix_table, address_bits_1_0_and_reserved_control_bits_read_zero)
{
    recording_interrupts interrupts;
    table_type table{interrupts, 1};
    table.write_table(address_low(0), 4, 0xfee0'0003U);
    EXPECT_EQ(table.read_table(address_low(0), 4), 0xfee0'0000U);
    table.write_table(control(0), 4, 0xffff'fffeU);
    EXPECT_EQ(table.read_table(control(0), 4), 0U);
    table.write_table(control(0), 4, 0xffff'ffffU);
    EXPECT_EQ(table.read_table(control(0), 4), 1U);
    EXPECT_EQ(table.host_error_count(), 0U);
}

TEST(msix_table, bad_offsets_and_widths_are_counted_host_errors)
{
    recording_interrupts interrupts;
    table_type table{interrupts, 2};
    program(table, 0);
    const auto before = table.read_table(entry(0), 8);

    EXPECT_EQ(table.read_table(32, 4), 0U);                    // past the end
    EXPECT_EQ(table.read_table(28, 8), 0U);                    // misaligned qword (and straddles the end)
    EXPECT_EQ(table.read_table(4, 8), 0U);                     // qword not 8-aligned
    EXPECT_EQ(table.read_table(2, 4), 0U);                     // dword not 4-aligned
    EXPECT_EQ(table.read_table(0, 2), 0U);                     // word access
    EXPECT_EQ(table.read_table(0, 1), 0U);                     // byte access
    EXPECT_EQ(table.read_table(0, 16), 0U);                    // too wide
    EXPECT_EQ(table.read_table(~std::uint64_t{0} - 3, 4), 0U); // would wrap
    EXPECT_EQ(table.host_error_count(), 8U);

    table.write_table(32, 4, 0xdead'beefU);
    table.write_table(4, 8, 0xdead'beef'dead'beefULL);
    table.write_table(0, 2, 0xbeefU);
    table.write_table(1, 4, 0xdead'beefU);
    table.write_table(~std::uint64_t{0} - 7, 8, 1);
    EXPECT_EQ(table.host_error_count(), 13U);
    EXPECT_EQ(table.read_table(entry(0), 8), before);
    EXPECT_EQ(table.read_table(entry(1), 8), 0U);
    EXPECT_EQ(table.read_table(entry(1) + 8, 8), 0x1'0000'0000ULL);
    EXPECT_EQ(table.host_error_count(), 13U);
}

TEST(msix_table, signal_raises_an_unmasked_vector_of_an_enabled_function)
{
    recording_interrupts interrupts;
    table_type table{interrupts, 4};
    program(table, 3);
    table.set_enabled(true);
    EXPECT_TRUE(table.signal(3));
    ASSERT_EQ(interrupts.raised.size(), 1U);
    EXPECT_EQ(interrupts.raised[0].first, 3U);
    EXPECT_EQ(interrupts.raised[0].second, message_of(3));
    EXPECT_FALSE(table.pending(3));
    EXPECT_TRUE(table.signal(3));
    EXPECT_EQ(interrupts.raised.size(), 2U);
}

TEST(msix_table, masked_vector_sets_pending_and_fires_when_unmasked)
{
    recording_interrupts interrupts;
    table_type table{interrupts, 4};
    table.set_enabled(true);
    table.write_table(address_low(1), 4, 0xfee0'0010U);
    table.write_table(data(1), 4, 0x41U);
    EXPECT_FALSE(table.signal(1)); // still masked from reset
    EXPECT_FALSE(table.signal(1));
    EXPECT_TRUE(interrupts.raised.empty());
    EXPECT_TRUE(table.pending(1));
    EXPECT_EQ(table.read_pba(0, 8), 0b10U);

    // Rewriting the mask as still masked fires nothing.
    table.write_table(control(1), 4, 1);
    EXPECT_TRUE(interrupts.raised.empty());

    table.write_table(control(1), 4, 0);
    ASSERT_EQ(interrupts.raised.size(), 1U); // two requests, one message
    EXPECT_EQ(interrupts.raised[0].first, 1U);
    EXPECT_EQ(interrupts.raised[0].second, (msix_message{0xfee0'0010U, 0x41U}));
    EXPECT_FALSE(table.pending(1));
    EXPECT_EQ(table.read_pba(0, 8), 0U);

    // Writing 0 to an already unmasked vector fires nothing more.
    table.write_table(control(1), 4, 0);
    EXPECT_EQ(interrupts.raised.size(), 1U);
}

TEST(msix_table, unmasking_a_vector_without_pending_bit_fires_nothing)
{
    recording_interrupts interrupts;
    table_type table{interrupts, 2};
    table.set_enabled(true);
    table.write_table(control(0), 4, 0);
    EXPECT_TRUE(interrupts.raised.empty());
    EXPECT_FALSE(table.pending(0));
}

TEST(msix_table, qword_unmask_sends_the_data_written_with_it)
{
    recording_interrupts interrupts;
    table_type table{interrupts, 1};
    table.set_enabled(true);
    EXPECT_FALSE(table.signal(0));
    table.write_table(entry(0), 8, 0xfee0'0000ULL);
    table.write_table(entry(0) + 8, 8, 0x0000'0000'0000'0077ULL);
    ASSERT_EQ(interrupts.raised.size(), 1U);
    EXPECT_EQ(interrupts.raised[0].second, (msix_message{0xfee0'0000ULL, 0x77U}));
}

TEST(msix_table, function_mask_holds_every_vector_pending)
{
    recording_interrupts interrupts;
    table_type table{interrupts, 70};
    for (std::uint16_t vector = 0; vector < 70; ++vector) {
        program(table, vector);
    }
    table.set_enabled(true);
    table.set_function_mask(true);
    EXPECT_TRUE(table.function_masked());
    EXPECT_FALSE(table.signal(65));
    EXPECT_FALSE(table.signal(2));
    EXPECT_FALSE(table.signal(0));
    EXPECT_TRUE(interrupts.raised.empty());
    EXPECT_FALSE(table.masked(2)); // the vector's own bit is unchanged
    EXPECT_EQ(table.read_pba(0, 8), 0b101U);
    EXPECT_EQ(table.read_pba(8, 8), 0b10U);

    // Masking vector 2 itself keeps it pending after the function is unmasked.
    table.write_table(control(2), 4, 1);
    table.set_function_mask(false);
    ASSERT_EQ(interrupts.raised.size(), 2U); // ascending vector order
    EXPECT_EQ(interrupts.raised[0].first, 0U);
    EXPECT_EQ(interrupts.raised[0].second, message_of(0));
    EXPECT_EQ(interrupts.raised[1].first, 65U);
    EXPECT_EQ(interrupts.raised[1].second, message_of(65));
    EXPECT_TRUE(table.pending(2));
    EXPECT_EQ(table.read_pba(0, 8), 0b100U);
    EXPECT_EQ(table.read_pba(8, 8), 0U);

    // Clearing an already clear function mask fires nothing.
    table.set_function_mask(false);
    EXPECT_EQ(interrupts.raised.size(), 2U);

    table.write_table(control(2), 4, 0);
    ASSERT_EQ(interrupts.raised.size(), 3U);
    EXPECT_EQ(interrupts.raised[2].first, 2U);
}

TEST(msix_table, unmasking_a_vector_under_function_mask_fires_nothing)
{
    recording_interrupts interrupts;
    table_type table{interrupts, 1};
    table.set_enabled(true);
    table.set_function_mask(true);
    EXPECT_FALSE(table.signal(0));
    table.write_table(control(0), 4, 0);
    EXPECT_TRUE(interrupts.raised.empty());
    EXPECT_TRUE(table.pending(0));
    table.set_function_mask(false);
    EXPECT_EQ(interrupts.raised.size(), 1U);
    EXPECT_FALSE(table.pending(0));
}

TEST(msix_table, disabled_msix_records_nothing)
{
    recording_interrupts interrupts;
    table_type table{interrupts, 2};
    program(table, 0);
    EXPECT_FALSE(table.signal(0));
    EXPECT_FALSE(table.signal(1)); // masked too: still nothing
    EXPECT_TRUE(interrupts.raised.empty());
    EXPECT_FALSE(table.pending(0));
    EXPECT_FALSE(table.pending(1));
    table.set_enabled(true);
    EXPECT_TRUE(interrupts.raised.empty());
}

TEST(msix_table, enabling_fires_vectors_left_pending)
{
    recording_interrupts interrupts;
    table_type table{interrupts, 2};
    table.set_enabled(true);
    EXPECT_FALSE(table.signal(1)); // masked: pending
    program(table, 0);
    program(table, 1); // unmasking fires vector 1 at once
    ASSERT_EQ(interrupts.raised.size(), 1U);

    table.set_function_mask(true);
    EXPECT_FALSE(table.signal(0));
    table.set_enabled(false);
    EXPECT_TRUE(table.pending(0)); // disabling keeps the PBA
    table.set_function_mask(false);
    EXPECT_EQ(interrupts.raised.size(), 1U);
    table.set_enabled(true);
    ASSERT_EQ(interrupts.raised.size(), 2U);
    EXPECT_EQ(interrupts.raised[1].first, 0U);
    EXPECT_EQ(interrupts.raised[1].second, message_of(0));
    EXPECT_FALSE(table.pending(0));
}

TEST(msix_table, message_control_reports_and_applies_enable_and_function_mask)
{
    using nvmekit::msix_message_control;
    recording_interrupts interrupts;
    table_type table{interrupts, 33};
    EXPECT_EQ(table.message_control().raw, 32U);
    table.write_message_control(msix_message_control{0xc000});
    EXPECT_TRUE(table.enabled());
    EXPECT_TRUE(table.function_masked());
    EXPECT_EQ(table.message_control().raw, 0xc000U | 32U);
    program(table, 5);
    EXPECT_FALSE(table.signal(5));
    table.write_message_control(msix_message_control{0x87ff}); // Table Size is read-only
    EXPECT_EQ(table.message_control().raw, 0x8000U | 32U);
    ASSERT_EQ(interrupts.raised.size(), 1U);
    EXPECT_EQ(interrupts.raised[0].first, 5U);
    table.write_message_control(msix_message_control{0});
    EXPECT_FALSE(table.enabled());
    EXPECT_FALSE(table.function_masked());
}

TEST(msix_table, pba_reads_by_dword_and_qword)
{
    recording_interrupts interrupts;
    table_type table{interrupts, 100};
    table.set_enabled(true);
    EXPECT_FALSE(table.signal(0));
    EXPECT_FALSE(table.signal(33));
    EXPECT_FALSE(table.signal(63));
    EXPECT_FALSE(table.signal(64));
    EXPECT_FALSE(table.signal(99));
    EXPECT_EQ(table.read_pba(0, 8), 0x8000'0002'0000'0001ULL);
    EXPECT_EQ(table.read_pba(0, 4), 0x0000'0001U);
    EXPECT_EQ(table.read_pba(4, 4), 0x8000'0002U);
    EXPECT_EQ(table.read_pba(8, 8), 0x0000'0008'0000'0001ULL);
    EXPECT_EQ(table.read_pba(8, 4), 0x1U);
    EXPECT_EQ(table.read_pba(12, 4), 0x8U);
    EXPECT_TRUE(table.pending(99));
    EXPECT_FALSE(table.pending(98));
    EXPECT_EQ(table.host_error_count(), 0U);
}

TEST(msix_table, pba_is_read_only_and_bounded)
{
    recording_interrupts interrupts;
    table_type table{interrupts, 65};
    table.set_enabled(true);
    EXPECT_FALSE(table.signal(64));
    table.write_pba(8, 8, 0);
    table.write_pba(0, 4, ~std::uint64_t{0});
    EXPECT_EQ(table.host_error_count(), 2U);
    EXPECT_EQ(table.read_pba(8, 8), 1U);
    EXPECT_EQ(table.read_pba(0, 8), 0U);
    EXPECT_EQ(table.read_pba(16, 4), 0U); // past the end
    EXPECT_EQ(table.read_pba(2, 4), 0U);  // misaligned
    EXPECT_EQ(table.read_pba(4, 8), 0U);  // misaligned qword
    EXPECT_EQ(table.read_pba(8, 2), 0U);  // bad width
    EXPECT_EQ(table.host_error_count(), 6U);
}

TEST(msix_table, reset_restores_the_power_on_state)
{
    recording_interrupts interrupts;
    table_type table{interrupts, 3};
    program(table, 0);
    program(table, 1);
    table.set_enabled(true);
    table.write_table(control(2), 4, 1);
    EXPECT_FALSE(table.signal(2));
    table.set_function_mask(true);
    EXPECT_EQ(table.read_table(3, 4), 0U); // one host error
    table.reset();
    EXPECT_FALSE(table.enabled());
    EXPECT_FALSE(table.function_masked());
    for (std::uint16_t vector = 0; vector < 3; ++vector) {
        EXPECT_EQ(table.read_table(entry(vector), 8), 0U);
        EXPECT_EQ(table.read_table(entry(vector) + 8, 8), 0x1'0000'0000ULL);
        EXPECT_TRUE(table.masked(vector));
        EXPECT_FALSE(table.pending(vector));
    }
    EXPECT_EQ(table.read_pba(0, 8), 0U);
    EXPECT_EQ(table.host_error_count(), 1U); // diagnostics survive the reset
    table.set_enabled(true);
    EXPECT_FALSE(table.signal(0));
    EXPECT_TRUE(table.pending(0));
    EXPECT_TRUE(interrupts.raised.empty());
}

TEST(msix_table, largest_table_reaches_its_last_vector)
{
    recording_interrupts interrupts;
    table_type table{interrupts, 2048};
    program(table, 2047);
    table.set_enabled(true);
    EXPECT_TRUE(table.signal(2047));
    ASSERT_EQ(interrupts.raised.size(), 1U);
    EXPECT_EQ(interrupts.raised[0].second, message_of(2047));
    EXPECT_EQ(table.read_table(table_type::table_bytes(2048) - 4, 4), 0U);
    EXPECT_EQ(table.read_table(table_type::table_bytes(2048), 4), 0U);
    EXPECT_EQ(table.read_pba(table_type::pba_bytes(2048) - 8, 8), 0U);
    EXPECT_EQ(table.read_pba(table_type::pba_bytes(2048), 8), 0U);
    EXPECT_EQ(table.host_error_count(), 2U);
}

#ifndef NDEBUG
TEST(msix_table_death, signal_beyond_the_table_asserts)
{
    recording_interrupts interrupts;
    table_type table{interrupts, 2};
    EXPECT_DEATH(table.signal(2), "vector beyond the table");
}
#endif

// ---- signalling from other threads ----------------------------------------------------------------

namespace {

/// Counts messages from any thread.
struct counting_interrupts {
    std::atomic<std::uint64_t> raised{0};
    void raise_msix(std::uint16_t, msix_message) noexcept { raised.fetch_add(1, std::memory_order_relaxed); }
};

} // namespace

// Poll groups signal their vectors while the transport's thread masks and unmasks them. Whatever
// the interleaving, a signal that found its vector masked is delivered once the mask is lifted:
// when both threads are done and nothing masks the vector, no Pending bit is left behind, and no
// signal was delivered twice. (Run under ThreadSanitizer in CI: the accesses are race-free.)
TEST(msix_table_threads, a_signal_racing_an_unmask_is_never_lost_or_doubled)
{
    constexpr std::uint64_t signals = 100'000;
    for (const bool function_mask : {false, true}) {
        counting_interrupts interrupts;
        nvmekit::msix_table<counting_interrupts> table{interrupts, 4};
        table.set_enabled(true);
        table.write_table(control(2), 4, 0);
        std::atomic<bool> done{false};
        std::atomic<std::uint64_t> toggles{0};
        std::uint64_t sent = 0;
        std::thread signaller{[&] {
            // At least `signals` signals, and on until the other thread has toggled many times.
            while (sent < signals || toggles.load() < 1000) {
                static_cast<void>(table.signal(2));
                ++sent;
            }
            done.store(true);
        }};
        while (!done.load()) {
            if (function_mask) {
                table.set_function_mask(true);
                table.set_function_mask(false);
            } else {
                table.write_table(control(2), 4, 1);
                table.write_table(control(2), 4, 0);
            }
            toggles.fetch_add(1);
        }
        signaller.join();
        EXPECT_FALSE(table.pending(2)) << "a signal stayed pending with nothing masking it";
        EXPECT_GE(interrupts.raised.load(), 1U);
        EXPECT_LE(interrupts.raised.load(), sent) << "a pending signal was delivered twice";
        EXPECT_GE(toggles.load(), 1000U);
    }
}
