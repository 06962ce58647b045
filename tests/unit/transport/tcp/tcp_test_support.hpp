#pragma once
/// Helpers of the NVMe/TCP tests: a byte buffer that PDUs are appended to, and run_stream, which feeds a byte
/// stream to a pdu_stream in chunks and records what comes out. A test-only header.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include <nvmekit/spec/tcp.hpp>
#include <nvmekit/transport/tcp/connection_params.hpp>
#include <nvmekit/transport/tcp/pdu_stream.hpp>

#include "transport/tcp/reference_crc32c.hpp"

namespace nvmekit_test {

namespace tcp = nvmekit::transport::tcp;

/// The little-endian value at `offset` of `bytes`.
template <typename T>
T le_in(std::span<const std::byte> bytes, std::size_t offset)
{
    T value = 0;
    for (std::size_t i = sizeof(T); i-- > 0;) {
        value = static_cast<T>((value << 8) | std::to_integer<T>(bytes[offset + i]));
    }
    return value;
}

/// A growing byte stream: append(encoder) runs an encoder into the free space and keeps what it
/// wrote.
class wire {
public:
    template <typename Encoder>
    std::span<std::byte> append(Encoder&& encoder)
    {
        const std::size_t start = bytes_.size();
        bytes_.resize(start + 70'000);
        const std::size_t size = encoder(std::span{bytes_}.subspan(start));
        bytes_.resize(start + size);
        return std::span{bytes_}.subspan(start, size);
    }
    void append_bytes(std::span<const std::byte> bytes)
    {
        bytes_.insert(bytes_.end(), bytes.begin(), bytes.end());
    }
    [[nodiscard]] std::span<const std::byte> bytes() const { return bytes_; }
    [[nodiscard]] std::span<std::byte> mutable_bytes() { return bytes_; }
    [[nodiscard]] std::size_t size() const { return bytes_.size(); }

private:
    std::vector<std::byte> bytes_;
};

/// One PDU as the stream reported it.
struct received_pdu {
    nvmekit::spec::pdu_type type{};
    std::vector<std::byte> header;
    std::vector<std::byte> data;
    bool data_digest_ok = true;

    friend bool operator==(const received_pdu&, const received_pdu&) = default;
};

/// Everything a stream reported for one input.
struct stream_outcome {
    std::vector<received_pdu> pdus;
    std::optional<tcp::fatal_error> error;
    bool closed = false;
    /// The parameters negotiated from the ICReq.
    tcp::connection_params params{};

    friend bool operator==(const stream_outcome&, const stream_outcome&) = default;
};

/// How run_stream receives PDU data.
enum class placement {
    copy,      // feed() copies into the placed buffer
    zero_copy, // the bytes go straight into data_window(), then commit_data()
    discard,   // discard_data()
};

/// Feeds `bytes` to a new stream in chunks whose sizes `chunk` gives (called with the bytes
/// left), answering ICReq with negotiate(icreq, limits) and placing every PDU's data as `how`
/// says.
inline stream_outcome run_stream(std::span<const std::byte> bytes, const tcp::target_limits& limits,
                                 const std::function<std::size_t(std::size_t)>& chunk,
                                 placement how = placement::copy)
{
    stream_outcome outcome;
    tcp::pdu_stream stream;
    outcome.pdus.reserve(64);
    const auto on_event = [&](tcp::stream_event event) {
        switch (event) {
        case tcp::stream_event::need_more: return;
        case tcp::stream_event::header: {
            const auto header = stream.header_bytes();
            outcome.pdus.push_back({stream.type(), {header.begin(), header.end()}, {}, true});
            if (stream.type() == nvmekit::spec::pdu_type::icreq) {
                const auto params = tcp::negotiate(stream.icreq(), limits);
                if (!params) {
                    stream.fail(params.error());
                    outcome.error = params.error();
                    return;
                }
                outcome.params = *params;
                stream.establish(*params);
            }
            if (stream.data_length() != 0) {
                if (how == placement::discard) {
                    stream.discard_data();
                } else {
                    outcome.pdus.back().data.resize(stream.data_length());
                    stream.place_data(outcome.pdus.back().data);
                }
            }
            return;
        }
        case tcp::stream_event::data: outcome.pdus.back().data_digest_ok = stream.data_digest_ok(); return;
        case tcp::stream_event::fatal: outcome.error = stream.error(); return;
        case tcp::stream_event::closed: {
            const auto header = stream.header_bytes();
            const auto data = stream.term_req_data();
            outcome.pdus.push_back(
                {stream.type(), {header.begin(), header.end()}, {data.begin(), data.end()}, true});
            outcome.closed = true;
            return;
        }
        }
    };
    while (!bytes.empty() && !outcome.error && !outcome.closed) {
        auto piece = bytes.first(std::clamp<std::size_t>(chunk(bytes.size()), 1, bytes.size()));
        bytes = bytes.subspan(piece.size());
        while (!piece.empty() && !outcome.error && !outcome.closed) {
            const auto window = stream.data_window();
            if (how == placement::zero_copy && !window.empty()) {
                const std::size_t n = std::min(window.size(), piece.size());
                std::copy_n(piece.begin(), n, window.begin());
                piece = piece.subspan(n);
                on_event(stream.commit_data(n));
                continue;
            }
            const auto step = stream.feed(piece);
            piece = piece.subspan(step.consumed);
            on_event(step.event);
        }
    }
    return outcome;
}

/// Feeds everything in one call's worth of chunks.
inline stream_outcome run_stream(std::span<const std::byte> bytes, const tcp::target_limits& limits = {})
{
    return run_stream(bytes, limits, [](std::size_t left) { return left; });
}

} // namespace nvmekit_test
