#include <nvmekit/systemc/nb_initiator.hpp>
#include <nvmekit/systemc/router.hpp>

#include <array>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

// The router between two initiators and two targets, its sockets called from the test's own
// thread once the design is elaborated (nothing here waits). SystemC elaborates one design per
// process: ctest runs every test in a process of its own; run by hand, the binary runs the first
// test and skips the others that need a design.

namespace {

namespace sysc = nvmekit::systemc;

/// An initiator whose backward path records what arrives and answers `bw_status`.
struct test_initiator : sc_core::sc_module {
    tlm_utils::simple_initiator_socket<test_initiator> socket{"socket"};
    std::vector<tlm::tlm_phase> phases;
    std::vector<const tlm::tlm_generic_payload*> payloads;
    std::vector<std::array<sc_dt::uint64, 2>> invalidated;
    tlm::tlm_sync_enum bw_status = tlm::TLM_ACCEPTED;

    explicit test_initiator(const sc_core::sc_module_name& name) : sc_core::sc_module{name}
    {
        socket.register_nb_transport_bw(this, &test_initiator::backward);
        socket.register_invalidate_direct_mem_ptr(this, &test_initiator::invalidate);
    }

    tlm::tlm_sync_enum backward(tlm::tlm_generic_payload& payload, tlm::tlm_phase& phase, sc_core::sc_time&)
    {
        phases.push_back(phase);
        payloads.push_back(&payload);
        return bw_status;
    }
    void invalidate(sc_dt::uint64 start, sc_dt::uint64 end) { invalidated.push_back({start, end}); }
};

/// A target of 64 KiB that records the addresses it is given and answers AT requests with
/// END_REQ; the test sends its BEGIN_RESP.
struct test_target : sc_core::sc_module {
    tlm_utils::simple_target_socket<test_target> socket{"socket"};
    std::array<unsigned char, 0x10000> bytes{};
    std::vector<std::uint64_t> addresses;
    std::vector<tlm::tlm_phase> phases;

    explicit test_target(const sc_core::sc_module_name& name) : sc_core::sc_module{name}
    {
        socket.register_b_transport(this, &test_target::transport);
        socket.register_transport_dbg(this, &test_target::debug);
        socket.register_nb_transport_fw(this, &test_target::forward);
        socket.register_get_direct_mem_ptr(this, &test_target::direct);
    }

    void transport(tlm::tlm_generic_payload& payload, sc_core::sc_time& delay)
    {
        addresses.push_back(payload.get_address());
        delay += sc_core::sc_time{5, sc_core::SC_NS};
        payload.get_data_ptr()[0] = bytes.at(payload.get_address() & 0xffffU);
        payload.set_response_status(tlm::TLM_OK_RESPONSE);
    }
    unsigned int debug(tlm::tlm_generic_payload& payload)
    {
        addresses.push_back(payload.get_address());
        return payload.get_data_length();
    }
    tlm::tlm_sync_enum forward(tlm::tlm_generic_payload& payload, tlm::tlm_phase& phase, sc_core::sc_time&)
    {
        addresses.push_back(payload.get_address());
        phases.push_back(phase);
        if (phase == tlm::BEGIN_REQ) {
            phase = tlm::END_REQ;
            return tlm::TLM_UPDATED;
        }
        return tlm::TLM_COMPLETED; // END_RESP
    }
    bool direct(tlm::tlm_generic_payload& /*payload*/, tlm::tlm_dmi& dmi)
    {
        dmi.set_dmi_ptr(bytes.data());
        dmi.set_start_address(0);
        dmi.set_end_address(bytes.size() - 1);
        dmi.allow_read_write();
        return true;
    }
};

/// Two initiators and two targets on a router: target `low` at 0x1000 (rebased to 0, 0x1000
/// bytes) and at 0x8000 (as 0x4000, 0x100 bytes), target `high` at 0x10000 (addresses kept,
/// 0x10000 bytes; it takes the low 16 bits).
struct bench {
    test_initiator first{"first"};
    test_initiator second{"second"};
    sysc::router router{"router"};
    test_target low{"low"};
    test_target high{"high"};

    bench()
    {
        first.socket.bind(router.target_socket);
        second.socket.bind(router.target_socket);
        const std::size_t low_index = router.bind_target(low.socket);
        const std::size_t high_index = router.bind_target(high.socket);
        router.map(low_index, 0x1000, 0x1000);
        router.map(low_index, 0x8000, 0x100, 0x4000);
        router.map(high_index, 0x10000, 0x10000, 0x10000);
        sc_core::sc_start(sc_core::SC_ZERO_TIME); // elaborates: the sockets are bound
    }
};

/// Makes `payload` a plain read of `length` bytes at `address` into `data`.
void read_at(tlm::tlm_generic_payload& payload, std::uint64_t address, unsigned char* data,
             unsigned length = 1)
{
    sysc::prepare_payload(payload, tlm::TLM_READ_COMMAND, address, data, length);
}

class systemc_router : public ::testing::Test {
protected:
    void SetUp() override
    {
        if (sc_core::sc_get_curr_simcontext()->elaboration_done()) {
            GTEST_SKIP() << "a simulation already ran in this process; run one test per process";
        }
    }
};

TEST_F(systemc_router, blocking_accesses_reach_their_window_rebased_and_get_their_address_back)
{
    bench b;
    b.low.bytes[0x10] = 0x5a;
    b.low.bytes[0x4020] = 0x6b;
    unsigned char data = 0;
    tlm::tlm_generic_payload payload;
    read_at(payload, 0x1010, &data);
    sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
    b.first.socket->b_transport(payload, delay);
    EXPECT_TRUE(payload.is_response_ok());
    EXPECT_EQ(data, 0x5a);
    EXPECT_EQ(payload.get_address(), 0x1010U) << "restored for the initiator";
    EXPECT_EQ(delay, (sc_core::sc_time{5, sc_core::SC_NS})) << "the target's delay, none of the router's";

    read_at(payload, 0x8020, &data);
    b.second.socket->b_transport(payload, delay);
    EXPECT_EQ(data, 0x6b) << "the second window of the same target, at its target base";
    read_at(payload, 0x1ffff, &data);
    b.first.socket->b_transport(payload, delay);
    EXPECT_TRUE(payload.is_response_ok());
    EXPECT_EQ(b.low.addresses, (std::vector<std::uint64_t>{0x10, 0x4020}));
    EXPECT_EQ(b.high.addresses, (std::vector<std::uint64_t>{0x1ffff}));

    std::array<unsigned char, 8> buffer{};
    read_at(payload, 0x1800, buffer.data(), 8);
    EXPECT_EQ(b.first.socket->transport_dbg(payload), 8U);
    EXPECT_EQ(payload.get_address(), 0x1800U);
    EXPECT_EQ(b.low.addresses.back(), 0x800U);
    EXPECT_EQ(b.router.address_errors(), 0U);
}

TEST_F(systemc_router, an_access_no_window_holds_whole_is_an_address_error)
{
    bench b;
    std::array<unsigned char, 8> buffer{};
    sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
    for (const std::uint64_t address : {0x0ULL, 0x2000ULL, 0x80fcULL, 0x1fffcULL, 0x20000ULL}) {
        tlm::tlm_generic_payload payload; // 0x80fc and 0x1fffc cross a window's end
        read_at(payload, address, buffer.data(), 8);
        b.first.socket->b_transport(payload, delay);
        EXPECT_EQ(payload.get_response_status(), tlm::TLM_ADDRESS_ERROR_RESPONSE) << address;
        read_at(payload, address, buffer.data(), 8);
        EXPECT_EQ(b.first.socket->transport_dbg(payload), 0U) << address;
    }
    EXPECT_TRUE(b.low.addresses.empty());
    EXPECT_TRUE(b.high.addresses.empty());
    EXPECT_EQ(b.router.address_errors(), 10U);

    // AT: completed at once.
    tlm::tlm_generic_payload payload;
    read_at(payload, 0x3000, buffer.data(), 4);
    tlm::tlm_phase phase = tlm::BEGIN_REQ;
    EXPECT_EQ(b.second.socket->nb_transport_fw(payload, phase, delay), tlm::TLM_COMPLETED);
    EXPECT_EQ(payload.get_response_status(), tlm::TLM_ADDRESS_ERROR_RESPONSE);
    EXPECT_EQ(b.router.routes_in_flight(), 0U);
}

TEST_F(systemc_router, at_phases_follow_the_route_begin_req_took_both_ways)
{
    bench b;
    unsigned char a = 0;
    unsigned char c = 0;
    tlm::tlm_generic_payload from_first;
    tlm::tlm_generic_payload from_second;
    read_at(from_first, 0x10040, &a);
    read_at(from_second, 0x1040, &c);
    sc_core::sc_time delay = sc_core::SC_ZERO_TIME;

    tlm::tlm_phase phase = tlm::BEGIN_REQ;
    EXPECT_EQ(b.first.socket->nb_transport_fw(from_first, phase, delay), tlm::TLM_UPDATED);
    EXPECT_EQ(phase, tlm::END_REQ);
    phase = tlm::BEGIN_REQ;
    EXPECT_EQ(b.second.socket->nb_transport_fw(from_second, phase, delay), tlm::TLM_UPDATED);
    EXPECT_EQ(b.router.routes_in_flight(), 2U);
    EXPECT_EQ(from_second.get_address(), 0x40U) << "the target's address while the transaction lasts";

    // The responses, in the other order, each to the initiator that began its transaction.
    phase = tlm::BEGIN_RESP;
    EXPECT_EQ(b.low.socket->nb_transport_bw(from_second, phase, delay), tlm::TLM_ACCEPTED);
    phase = tlm::BEGIN_RESP;
    EXPECT_EQ(b.high.socket->nb_transport_bw(from_first, phase, delay), tlm::TLM_ACCEPTED);
    EXPECT_EQ(b.second.payloads, (std::vector<const tlm::tlm_generic_payload*>{&from_second}));
    EXPECT_EQ(b.first.payloads, (std::vector<const tlm::tlm_generic_payload*>{&from_first}));
    EXPECT_EQ(b.first.phases, (std::vector<tlm::tlm_phase>{tlm::BEGIN_RESP}));

    // END_RESP goes to the target of the route, whatever the address now says; then it is over.
    phase = tlm::END_RESP;
    EXPECT_EQ(b.second.socket->nb_transport_fw(from_second, phase, delay), tlm::TLM_COMPLETED);
    EXPECT_EQ(b.low.phases, (std::vector<tlm::tlm_phase>{tlm::BEGIN_REQ, tlm::END_RESP}));
    EXPECT_EQ(from_second.get_address(), 0x1040U) << "the initiator's address back";
    EXPECT_EQ(b.router.routes_in_flight(), 1U);

    // An initiator may end the transaction on the backward path too.
    b.first.bw_status = tlm::TLM_COMPLETED;
    tlm::tlm_generic_payload again;
    read_at(again, 0x10080, &a);
    phase = tlm::BEGIN_REQ;
    static_cast<void>(b.first.socket->nb_transport_fw(again, phase, delay));
    phase = tlm::BEGIN_RESP;
    EXPECT_EQ(b.high.socket->nb_transport_bw(again, phase, delay), tlm::TLM_COMPLETED);
    phase = tlm::END_RESP;
    static_cast<void>(b.first.socket->nb_transport_fw(from_first, phase, delay));
    EXPECT_EQ(b.router.routes_in_flight(), 0U);
    EXPECT_EQ(again.get_address(), 0x10080U);
    EXPECT_EQ(b.high.addresses, (std::vector<std::uint64_t>{0x10040, 0x10080, 0x10040}));
}

TEST_F(systemc_router, dmi_regions_and_their_invalidation_are_in_the_initiator_addresses)
{
    bench b;
    unsigned char data = 0;
    tlm::tlm_generic_payload payload;
    read_at(payload, 0x8010, &data);
    tlm::tlm_dmi dmi;
    ASSERT_TRUE(b.second.socket->get_direct_mem_ptr(payload, dmi));
    // The target grants all of its 64 KiB; the window shows 0x100 bytes of it from 0x4000.
    EXPECT_EQ(dmi.get_start_address(), 0x8000U);
    EXPECT_EQ(dmi.get_end_address(), 0x80ffU);
    EXPECT_EQ(dmi.get_dmi_ptr(), b.low.bytes.data() + 0x4000);
    EXPECT_EQ(payload.get_address(), 0x8010U);

    read_at(payload, 0x4000, &data);
    tlm::tlm_dmi none;
    EXPECT_FALSE(b.first.socket->get_direct_mem_ptr(payload, none)) << "no window there";

    // The target takes back [0x0f00, 0x4010]: the part in each of its windows, translated.
    b.low.socket->invalidate_direct_mem_ptr(0x0f00, 0x4010);
    const std::vector<std::array<sc_dt::uint64, 2>> expected{{0x1f00, 0x1fff}, {0x8000, 0x8010}};
    EXPECT_EQ(b.first.invalidated, expected);
    EXPECT_EQ(b.second.invalidated, expected);
}

TEST_F(systemc_router, windows_that_overlap_are_refused)
{
    sysc::router router{"router"};
    test_target target{"target"};
    const std::size_t index = router.bind_target(target.socket);
    router.map(index, 0x1000, 0x1000);
    EXPECT_THROW(router.map(index, 0x1fff, 0x10), std::invalid_argument);
    EXPECT_THROW(router.map(index, 0x0, 0x1001), std::invalid_argument);
    EXPECT_THROW(router.map(index, 0x3000, 0), std::invalid_argument);
    EXPECT_THROW(router.map(index, ~0ULL, 2), std::invalid_argument);
    EXPECT_THROW(router.map(index + 1, 0x3000, 0x10), std::invalid_argument);
    router.map(index, 0x2000, 0x10); // adjacent
    EXPECT_EQ(router.windows().size(), 2U);
    EXPECT_NE(router.decode(0x2000, 0x10), nullptr);
    EXPECT_EQ(router.decode(0x1ff8, 0x10), nullptr) << "two windows, not one";
}

} // namespace

// libsystemc refers to sc_main; gtest's main() runs the tests, so it is never called.
int sc_main(int /*argc*/, char* /*argv*/[]) { return 0; }
