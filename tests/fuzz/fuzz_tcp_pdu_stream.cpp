// libFuzzer target: the NVMe/TCP PDU stream on arbitrary host bytes. The first three bytes choose
// the target's limits (digests allowed, CPDA, MAXH2CDATA, I/O in-capsule data) and how the rest,
// the connection's byte stream, is split into reads and how PDU data is placed (copied by the
// stream, received straight into the data window, or discarded). The stream must never take more
// than it is given, never ask for more data than the limits allow, take nothing once it failed or
// closed, and report only the fatal errors NVMe/TCP defines, with a FEI only where one is defined;
// a C2HTermReq built from an error must be well formed.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "fuzz_input.hpp"

#include <nvmekit/transport/tcp/connection_params.hpp>
#include <nvmekit/transport/tcp/pdu_encode.hpp>
#include <nvmekit/transport/tcp/pdu_stream.hpp>

namespace {

namespace spec = nvmekit::spec;
namespace tcp = nvmekit::transport::tcp;

void check(bool condition)
{
    if (!condition) {
        std::abort();
    }
}

/// The largest data a PDU may carry under any limits this target sets.
constexpr std::size_t max_data = 32768;

/// Checks a fatal error and the C2HTermReq that reports it.
void check_error(const tcp::pdu_stream& stream)
{
    const auto& error = stream.error();
    const auto status = static_cast<unsigned>(error.status);
    check(status >= 1 && status <= 6);
    const bool has_fei = error.status == spec::fatal_error_status::invalid_pdu_header_field ||
                         error.status == spec::fatal_error_status::unsupported_parameter;
    check(has_fei || error.information == 0);
    check(!has_fei || error.information < 128);
    check(stream.header_bytes().size() <= 128);
    std::array<std::byte, spec::tcp_term_req_max_length> out{};
    const std::size_t size = tcp::encode_c2h_term_req(error, stream.header_bytes(), out);
    check(size == 24 + stream.header_bytes().size());
    check(std::to_integer<unsigned>(out[0]) == 0x03 && std::to_integer<unsigned>(out[1]) == 0);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    nvmekit_fuzz::reader input{{data, size}};
    const auto options = input.take<std::uint8_t>();
    const auto sizes = input.take<std::uint8_t>();
    std::uint32_t split_state = input.take<std::uint8_t>() | 0x100U;

    tcp::target_limits limits{};
    limits.allow_header_digest = (options & 0x01U) != 0;
    limits.allow_data_digest = (options & 0x02U) != 0;
    limits.cpda = static_cast<std::uint8_t>((options >> 2) & 0x1fU);
    limits.maxh2cdata = 4096U << (sizes & 0x03U);
    limits.io_in_capsule_data = 4096U * ((sizes >> 2) & 0x07U);
    const bool io_queue = (sizes & 0x20U) != 0;

    const std::size_t header_bytes = std::min<std::size_t>(size, 3);
    std::span<const std::byte> bytes = std::as_bytes(std::span{data + header_bytes, size - header_bytes});

    static std::array<std::byte, max_data> buffer{};
    tcp::pdu_stream stream;
    const auto next = [&](std::uint32_t bound) {
        split_state = split_state * 1103515245U + 12345U;
        return (split_state >> 16) % bound;
    };
    const auto on_event = [&](tcp::stream_event event) {
        switch (event) {
        case tcp::stream_event::need_more: return;
        case tcp::stream_event::header:
            check(stream.header_bytes().size() == spec::pdu_header_length(stream.type()));
            if (stream.type() == spec::pdu_type::icreq) {
                check(stream.data_length() == 0);
                const auto params = tcp::negotiate(stream.icreq(), limits);
                if (!params) {
                    stream.fail(params.error());
                    return;
                }
                auto negotiated = *params;
                check(!negotiated.header_digest || limits.allow_header_digest);
                check(!negotiated.data_digest || limits.allow_data_digest);
                negotiated.set_queue(!io_queue, limits, false);
                std::array<std::byte, 128> icresp{};
                check(tcp::encode_icresp(negotiated, icresp) == 128);
                stream.establish(negotiated);
                return;
            }
            check(stream.state() == tcp::stream_state::established);
            if (stream.type() == spec::pdu_type::h2c_data) {
                check(stream.data_length() != 0 && stream.data_length() <= limits.maxh2cdata);
                check(stream.h2c_data().datal == stream.data_length());
            } else {
                check(stream.type() == spec::pdu_type::capsule_cmd);
                check(stream.data_length() <= stream.params().max_in_capsule_data);
            }
            if (stream.data_length() != 0) {
                check(stream.data_length() <= max_data);
                if (next(4) == 0) {
                    stream.discard_data();
                } else {
                    stream.place_data(std::span{buffer}.first(stream.data_length()));
                }
            }
            return;
        case tcp::stream_event::data: return;
        case tcp::stream_event::fatal: check_error(stream); return;
        case tcp::stream_event::closed:
            check(stream.type() == spec::pdu_type::h2c_term_req);
            check(stream.term_req_data().size() <= spec::tcp_term_req_max_data);
            return;
        }
    };

    while (!bytes.empty()) {
        auto piece = bytes.first(std::min<std::size_t>(bytes.size(), 1 + next(next(2) == 0 ? 8 : 4096)));
        bytes = bytes.subspan(piece.size());
        while (!piece.empty()) {
            const auto state = stream.state();
            if (state == tcp::stream_state::failed || state == tcp::stream_state::closed) {
                const auto step = stream.feed(piece);
                check(step.consumed == 0);
                check(step.event == (state == tcp::stream_state::failed ? tcp::stream_event::fatal
                                                                        : tcp::stream_event::closed));
                return 0;
            }
            const auto window = stream.data_window();
            if (!window.empty() && next(2) == 0) {
                const std::size_t n = std::min(window.size(), piece.size());
                std::copy_n(piece.begin(), n, window.begin());
                piece = piece.subspan(n);
                on_event(stream.commit_data(n));
                continue;
            }
            const auto step = stream.feed(piece);
            check(step.consumed <= piece.size());
            check(step.consumed != 0 || step.event == tcp::stream_event::fatal);
            piece = piece.subspan(step.consumed);
            on_event(step.event);
        }
    }
    return 0;
}
