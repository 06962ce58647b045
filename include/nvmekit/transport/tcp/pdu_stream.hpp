#pragma once
/// The controller's receiver of one NVMe/TCP connection's byte stream (pdu_stream): feed it the
/// bytes as they arrive, in any split, and it reports each PDU the host sends, or the fatal
/// error (FES, FEI) that the C2HTermReq ending the connection carries.
///
///     while (!bytes.empty()) {
///         const auto step = stream.feed(bytes);
///         bytes = bytes.subspan(step.consumed);
///         switch (step.event) {
///         case tcp::stream_event::header: ...   // stream.type(), stream.capsule_cmd() ...; when
///                                               // stream.data_length() != 0: place_data(buffer)
///         case tcp::stream_event::data: ...     // the data is in the buffer; data_digest_ok()
///         case tcp::stream_event::fatal: ...    // send C2HTermReq(stream.error(), header_bytes())
///         case tcp::stream_event::closed: ...   // the host sent H2CTermReq
///         case tcp::stream_event::need_more: break;
///         }
///     }
///
/// Nothing is allocated and nothing but PDU headers is buffered (at most 128 bytes and the
/// header digest; an H2CTermReq's 128 bytes of header in error): PDU data goes straight to where
/// the caller places it (place_data), either copied there by feed() or received there by the
/// caller itself (data_window, commit_data). Padding before the data (PDO) is skipped.
///
/// Connection state: before ICReq only ICReq (or H2CTermReq) is accepted; after it, nothing is
/// until the caller has sent ICResp and called establish(); then CapsuleCmd, H2CData and
/// H2CTermReq. Every field that frames a PDU is checked (reserved fields are ignored, the SQE is
/// the command layer's, ICReq's own fields are negotiate()'s, and an H2CData's CCCID, TTAG and
/// DATAO are checked against its R2T by check_h2c_data()); errors are:
/// - Invalid PDU Header Field, FEI = the offset of the field: a PDU-type the controller never
///   receives (0), FLAGS with a digest flag that differs from what was negotiated or a flag
///   this PDU does not define (1), HLEN other than the type's (2), PDO before the end of the
///   header and its digest, not a multiple of CPDA's alignment, or past PLEN (3), PLEN too
///   small, disagreeing with DATAL, or an ICReq/H2CTermReq length out of bounds (4), DATAL 0
///   (16);
/// - PDU Sequence Error: a PDU other than ICReq before ICReq, ICReq again, bytes before ICResp;
/// - Header Digest Error: HDGST differs from the CRC-32C of the header;
/// - Data Transfer Limit Exceeded: in-capsule data above the queue's limit, H2CData data above
///   MAXH2CDATA.
/// A data digest error is not fatal: the command completes with Transient Transport Error, so
/// the stream reports it with the data (data_digest_ok) and goes on.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>

#include <nvmekit/config.hpp>
#include <nvmekit/spec/tcp.hpp>
#include <nvmekit/transport/tcp/connection_params.hpp>
#include <nvmekit/transport/tcp/crc32c.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace transport::tcp {

/// What one feed() (or commit_data()) step ended with.
enum class stream_event : std::uint8_t {
    /// Every byte given was taken; no PDU part is complete yet.
    need_more,
    /// A PDU header arrived whole, its digest verified and the padding after it skipped. When
    /// data_length() is not 0, place_data() or discard_data() before feeding more.
    header,
    /// The data of the current PDU is complete in the place given; see data_digest_ok().
    data,
    /// A fatal error (error()); the stream takes nothing more.
    fatal,
    /// The host sent H2CTermReq (header and data available); the stream takes nothing more.
    closed,
};

/// Bytes taken from the input and the event the step ended with.
struct feed_result {
    std::size_t consumed = 0;
    stream_event event = stream_event::need_more;

    friend constexpr bool operator==(const feed_result&, const feed_result&) noexcept = default;
};

/// Where the connection is.
enum class stream_state : std::uint8_t {
    awaiting_icreq,  // only ICReq is valid
    awaiting_icresp, // ICReq received: the caller sends ICResp, then establish()
    established,     // CapsuleCmd, H2CData, H2CTermReq
    failed,          // fatal error reported
    closed,          // H2CTermReq received
};

/// Offsets of the header fields the stream checks (the FEI of Invalid PDU Header Field).
namespace header_offset {
inline constexpr std::uint32_t pdu_type = 0;
inline constexpr std::uint32_t flags = 1;
inline constexpr std::uint32_t hlen = 2;
inline constexpr std::uint32_t pdo = 3;
inline constexpr std::uint32_t plen = 4;
inline constexpr std::uint32_t cccid = 8;
inline constexpr std::uint32_t ttag = 10;
inline constexpr std::uint32_t datao = 12;
inline constexpr std::uint32_t datal = 16;
} // namespace header_offset

/// The receiver of one connection, controller side.
class pdu_stream {
public:
    /// Largest PDU header (ICReq) with its digest.
    static constexpr std::size_t max_header_bytes = 128 + spec::tcp_header_digest_size;

    pdu_stream() noexcept = default;

    /// Takes bytes until one event (or until they run out) and reports it; call again with the
    /// bytes not consumed.
    feed_result feed(std::span<const std::byte> bytes) noexcept
    {
        if (state_ == stream_state::failed) {
            return {0, stream_event::fatal};
        }
        if (state_ == stream_state::closed) {
            return {0, stream_event::closed};
        }
        if (bytes.empty()) {
            return {0, stream_event::need_more};
        }
        if (state_ == stream_state::awaiting_icresp) {
            // The host sends nothing after ICReq until it has ICResp. No header of the PDU in
            // error has been read: the termination request carries none.
            header_size_ = 0;
            return {0, fail_at_header(fatal(spec::fatal_error_status::pdu_sequence_error))};
        }
        std::size_t at = 0;
        while (at < bytes.size()) {
            const auto left = bytes.subspan(at);
            switch (phase_) {
            case phase::common_header:
            case phase::header_rest: {
                const std::size_t n = std::min(want_ - have_, left.size());
                std::memcpy(header_.data() + have_, left.data(), n);
                have_ += n;
                at += n;
                if (have_ < want_) {
                    break;
                }
                const stream_event event = phase_ == phase::common_header ? on_common_header() : on_header();
                if (event != stream_event::need_more) {
                    return {at, event};
                }
                break;
            }
            case phase::padding: {
                const std::size_t n = std::min<std::size_t>(padding_left_, left.size());
                padding_left_ -= static_cast<std::uint32_t>(n);
                at += n;
                if (padding_left_ == 0) {
                    phase_ = phase::awaiting_placement;
                    return {at, stream_event::header};
                }
                break;
            }
            case phase::awaiting_placement:
                NVMEKIT_ASSERT(false, "pdu_stream::feed: PDU data not placed");
                return {at, stream_event::header};
            case phase::data: {
                const std::size_t n = std::min<std::size_t>(data_length_ - data_done_, left.size());
                if (!discard_) {
                    std::memcpy(destination_.data() + data_done_, left.data(), n);
                }
                at += n;
                const stream_event event = advance_data(left.first(n));
                if (event != stream_event::need_more) {
                    return {at, event};
                }
                break;
            }
            case phase::data_digest: {
                const std::size_t n = std::min(spec::tcp_data_digest_size - digest_have_, left.size());
                std::memcpy(digest_.data() + digest_have_, left.data(), n);
                digest_have_ += n;
                at += n;
                if (digest_have_ == spec::tcp_data_digest_size) {
                    data_digest_ok_ = load_digest(digest_) == data_crc_.value();
                    return {at, finish_data()};
                }
                break;
            }
            case phase::term_data: {
                const std::size_t n = std::min(term_length_ - term_have_, left.size());
                std::memcpy(term_data_.data() + term_have_, left.data(), n);
                term_have_ += n;
                at += n;
                if (term_have_ == term_length_) {
                    state_ = stream_state::closed;
                    return {at, stream_event::closed};
                }
                break;
            }
            }
        }
        return {at, stream_event::need_more};
    }

    /// After ICReq, once ICResp is sent: the connection's parameters (negotiate()).
    void establish(const connection_params& params) noexcept
    {
        NVMEKIT_ASSERT(state_ == stream_state::awaiting_icresp, "pdu_stream::establish: no ICReq pending");
        params_ = params;
        state_ = stream_state::established;
    }
    /// After Connect: the queue's in-capsule data limit.
    void set_max_in_capsule_data(std::uint32_t bytes) noexcept { params_.max_in_capsule_data = bytes; }
    /// Ends the stream with an error the caller found (an H2CData naming no R2T, a Connect that
    /// cannot be served ...).
    void fail(const fatal_error& error) noexcept
    {
        error_ = error;
        state_ = stream_state::failed;
    }

    /// The PDU of the last `header` or `closed` event, or of the error.
    [[nodiscard]] spec::pdu_type type() const noexcept { return common_.type; }
    [[nodiscard]] const spec::pdu_common_header& common_header() const noexcept { return common_; }
    /// The header bytes (HLEN, or as much as had arrived at an error), digest excluded: the
    /// header in error that C2HTermReq carries.
    [[nodiscard]] std::span<const std::byte> header_bytes() const noexcept
    {
        return std::span{header_}.first(header_size_);
    }
    /// The header as PDU structure `Pdu` of the current type.
    template <typename Pdu>
    [[nodiscard]] Pdu header_as() const noexcept
    {
        static_assert(spec::is_wire_type_v<Pdu>);
        NVMEKIT_ASSERT(sizeof(Pdu) <= header_size_, "pdu_stream::header_as: header shorter than the PDU");
        Pdu pdu{};
        std::memcpy(&pdu, header_.data(), sizeof(Pdu));
        return pdu;
    }
    [[nodiscard]] spec::icreq_pdu icreq() const noexcept { return header_as<spec::icreq_pdu>(); }
    [[nodiscard]] spec::capsule_cmd_pdu capsule_cmd() const noexcept
    {
        return header_as<spec::capsule_cmd_pdu>();
    }
    [[nodiscard]] spec::h2c_data_pdu h2c_data() const noexcept { return header_as<spec::h2c_data_pdu>(); }
    [[nodiscard]] spec::term_req_pdu term_req() const noexcept { return header_as<spec::term_req_pdu>(); }
    /// The H2CTermReq's data: the PDU header the host found in error.
    [[nodiscard]] std::span<const std::byte> term_req_data() const noexcept
    {
        return std::span{term_data_}.first(term_length_);
    }

    /// Data bytes of the current PDU (0 without data).
    [[nodiscard]] std::uint32_t data_length() const noexcept { return data_length_; }
    /// After `header` with data: the data goes to `destination`, exactly data_length() bytes.
    void place_data(std::span<std::byte> destination) noexcept
    {
        NVMEKIT_ASSERT(phase_ == phase::awaiting_placement, "pdu_stream::place_data: no data pending");
        NVMEKIT_ASSERT(destination.size() == data_length_,
                       "pdu_stream::place_data: size differs from the data");
        destination_ = destination;
        discard_ = false;
        phase_ = phase::data;
    }
    /// After `header` with data: the data is read (and its digest checked) but kept nowhere.
    void discard_data() noexcept
    {
        NVMEKIT_ASSERT(phase_ == phase::awaiting_placement, "pdu_stream::discard_data: no data pending");
        destination_ = {};
        discard_ = true;
        phase_ = phase::data;
    }
    /// The part of the placed data still to arrive: a caller may receive into it directly and
    /// then commit_data(); empty outside the data or when discarding.
    [[nodiscard]] std::span<std::byte> data_window() const noexcept
    {
        if (phase_ != phase::data || discard_) {
            return {};
        }
        return destination_.subspan(data_done_);
    }
    /// `bytes` bytes were written at the start of data_window(): `data` when that completes the
    /// data (and there is no data digest), else need_more.
    stream_event commit_data(std::size_t bytes) noexcept
    {
        NVMEKIT_ASSERT(phase_ == phase::data && !discard_, "pdu_stream::commit_data: no data window");
        NVMEKIT_ASSERT(bytes <= data_length_ - data_done_, "pdu_stream::commit_data: past the data");
        return advance_data(destination_.subspan(data_done_, bytes));
    }
    /// After `data`: whether the data digest matched (always true without data digests).
    [[nodiscard]] bool data_digest_ok() const noexcept { return data_digest_ok_; }

    /// Bytes that complete the current step (header, padding, data, digest); 0 when none is
    /// expected (awaiting a placement, ICResp, or done).
    [[nodiscard]] std::size_t bytes_wanted() const noexcept
    {
        if (state_ != stream_state::awaiting_icreq && state_ != stream_state::established) {
            return 0;
        }
        switch (phase_) {
        case phase::common_header:
        case phase::header_rest: return want_ - have_;
        case phase::padding: return padding_left_;
        case phase::awaiting_placement: return 0;
        case phase::data: return data_length_ - data_done_;
        case phase::data_digest: return spec::tcp_data_digest_size - digest_have_;
        case phase::term_data: return term_length_ - term_have_;
        }
        return 0;
    }

    [[nodiscard]] stream_state state() const noexcept { return state_; }
    [[nodiscard]] const connection_params& params() const noexcept { return params_; }
    /// The fatal error, once state() is failed.
    [[nodiscard]] const fatal_error& error() const noexcept { return error_; }

private:
    enum class phase : std::uint8_t {
        common_header,      // the 8 bytes of CH
        header_rest,        // the rest of HLEN and HDGST
        padding,            // PDO padding before the data
        awaiting_placement, // header reported; the caller places the data
        data,               // data to its destination
        data_digest,        // DDGST
        term_data,          // an H2CTermReq's header in error
    };

    static constexpr std::size_t common_header_size = sizeof(spec::pdu_common_header);

    stream_event fail_at_header(const fatal_error& error) noexcept
    {
        fail(error);
        return stream_event::fatal;
    }

    void next_pdu() noexcept
    {
        phase_ = phase::common_header;
        have_ = 0;
        want_ = common_header_size;
    }

    [[nodiscard]] bool established() const noexcept { return state_ == stream_state::established; }

    /// The type and HLEN decide how many bytes the header takes; the other fields are checked once
    /// its digest is.
    stream_event on_common_header() noexcept
    {
        std::memcpy(&common_, header_.data(), common_header_size);
        header_size_ = common_header_size;
        data_length_ = 0;
        term_length_ = 0;
        using enum spec::pdu_type;
        const spec::pdu_type type = common_.type;
        const bool host_pdu = spec::is_host_to_controller(type) && !spec::name(type).empty();
        if (!host_pdu) {
            return fail_at_header(invalid_header_field(header_offset::pdu_type));
        }
        if ((type == icreq) == established()) {
            if (type != h2c_term_req) {
                return fail_at_header(fatal(spec::fatal_error_status::pdu_sequence_error));
            }
        }
        if (common_.hlen != spec::pdu_header_length(type)) {
            return fail_at_header(invalid_header_field(header_offset::hlen));
        }
        header_digest_ = established() && params_.header_digest && type != h2c_term_req;
        want_ = common_.hlen + (header_digest_ ? spec::tcp_header_digest_size : 0);
        phase_ = phase::header_rest;
        return stream_event::need_more;
    }

    stream_event on_header() noexcept
    {
        header_size_ = common_.hlen;
        if (header_digest_) {
            const auto header = std::span{header_}.first(common_.hlen);
            const auto digest =
                std::span{header_}.subspan(common_.hlen).first<spec::tcp_header_digest_size>();
            if (crc32c_of(std::as_bytes(header)) != load_digest(digest)) {
                return fail_at_header(fatal(spec::fatal_error_status::header_digest_error));
            }
        }
        switch (common_.type) {
        case spec::pdu_type::icreq: return on_icreq();
        case spec::pdu_type::h2c_term_req: return on_term_req();
        default: return on_data_carrier();
        }
    }

    stream_event on_icreq() noexcept
    {
        if (common_.flags.raw != 0) {
            return fail_at_header(invalid_header_field(header_offset::flags));
        }
        if (common_.plen != sizeof(spec::icreq_pdu)) {
            return fail_at_header(invalid_header_field(header_offset::plen));
        }
        state_ = stream_state::awaiting_icresp;
        next_pdu();
        return stream_event::header;
    }

    /// H2CTermReq carries no digests; its data is the header in error, at most 128 bytes.
    stream_event on_term_req() noexcept
    {
        if (common_.plen < sizeof(spec::term_req_pdu) || common_.plen > spec::tcp_term_req_max_length) {
            return fail_at_header(invalid_header_field(header_offset::plen));
        }
        term_length_ = common_.plen - sizeof(spec::term_req_pdu);
        term_have_ = 0;
        if (term_length_ == 0) {
            state_ = stream_state::closed;
            return stream_event::closed;
        }
        phase_ = phase::term_data;
        return stream_event::need_more;
    }

    /// CapsuleCmd and H2CData: flags, PDO and PLEN against the connection's parameters.
    stream_event on_data_carrier() noexcept
    {
        using flags = spec::pdu_flags;
        const bool is_h2c = common_.type == spec::pdu_type::h2c_data;
        const flags defined =
            is_h2c ? flags{}.with(flags::hdgstf, true).with(flags::ddgstf, true).with(flags::last_pdu, true)
                   : flags{}.with(flags::hdgstf, true).with(flags::ddgstf, true);
        if ((common_.flags.raw & ~defined.raw) != 0 ||
            common_.flags.get(flags::hdgstf) != params_.header_digest) {
            return fail_at_header(invalid_header_field(header_offset::flags));
        }
        const std::uint64_t header_end = want_;
        const std::uint64_t plen = common_.plen;
        if (plen < header_end) {
            return fail_at_header(invalid_header_field(header_offset::plen));
        }
        const bool has_data = plen > header_end;
        const bool data_digest = common_.flags.get(flags::ddgstf);
        if (data_digest != (has_data && params_.data_digest)) {
            return fail_at_header(invalid_header_field(header_offset::flags));
        }
        std::uint64_t data_length = 0;
        if (has_data) {
            const std::uint64_t digest_size = data_digest ? spec::tcp_data_digest_size : 0;
            const std::uint64_t pdo = common_.pdo;
            if (pdo < header_end || pdo % spec::pdu_data_alignment_bytes(params_.cpda) != 0 ||
                pdo + digest_size >= plen) {
                return fail_at_header(invalid_header_field(header_offset::pdo));
            }
            data_length = plen - pdo - digest_size;
            padding_left_ = static_cast<std::uint32_t>(pdo - header_end);
        }
        if (is_h2c) {
            const auto h2c = h2c_data();
            if (h2c.datal == 0) {
                return fail_at_header(invalid_header_field(header_offset::datal));
            }
            if (h2c.datal != data_length) {
                return fail_at_header(invalid_header_field(header_offset::plen));
            }
            if (h2c.datal > params_.maxh2cdata) {
                return fail_at_header(fatal(spec::fatal_error_status::limit_exceeded));
            }
        } else if (data_length > params_.max_in_capsule_data) {
            return fail_at_header(fatal(spec::fatal_error_status::limit_exceeded));
        }
        if (!has_data) {
            next_pdu();
            return stream_event::header;
        }
        data_length_ = static_cast<std::uint32_t>(data_length);
        data_done_ = 0;
        data_digest_ = data_digest;
        data_digest_ok_ = true;
        data_crc_.reset();
        digest_have_ = 0;
        if (padding_left_ != 0) {
            phase_ = phase::padding;
            return stream_event::need_more;
        }
        phase_ = phase::awaiting_placement;
        return stream_event::header;
    }

    stream_event advance_data(std::span<const std::byte> bytes) noexcept
    {
        if (data_digest_) {
            data_crc_.update(bytes);
        }
        data_done_ += static_cast<std::uint32_t>(bytes.size());
        if (data_done_ < data_length_) {
            return stream_event::need_more;
        }
        if (data_digest_) {
            phase_ = phase::data_digest;
            return stream_event::need_more;
        }
        return finish_data();
    }

    stream_event finish_data() noexcept
    {
        next_pdu();
        return stream_event::data;
    }

    std::array<std::byte, max_header_bytes> header_{};
    std::array<std::byte, spec::tcp_term_req_max_data> term_data_{};
    std::array<std::byte, spec::tcp_data_digest_size> digest_{};
    spec::pdu_common_header common_{};
    connection_params params_{};
    fatal_error error_{};
    std::span<std::byte> destination_{};
    crc32c data_crc_{};
    std::size_t have_ = 0;
    std::size_t want_ = common_header_size;
    std::size_t header_size_ = 0;
    std::size_t term_length_ = 0;
    std::size_t term_have_ = 0;
    std::size_t digest_have_ = 0;
    std::uint32_t padding_left_ = 0;
    std::uint32_t data_length_ = 0;
    std::uint32_t data_done_ = 0;
    stream_state state_ = stream_state::awaiting_icreq;
    phase phase_ = phase::common_header;
    bool header_digest_ = false;
    bool data_digest_ = false;
    bool data_digest_ok_ = true;
    bool discard_ = false;
};

/// One R2T of a command and how much of it the host has sent.
struct r2t_window {
    std::uint16_t cccid = 0;
    std::uint16_t ttag = 0;
    std::uint32_t r2to = 0;
    std::uint32_t r2tl = 0;
    /// Bytes received so far for this R2T.
    std::uint32_t received = 0;
};

/// Checks an H2CData header against the R2T its TTAG names (the caller looks the TTAG up; an
/// unknown one is Invalid PDU Header Field, FEI 10). CCCID other than the R2T's: Invalid PDU
/// Header Field, FEI 8. Data outside [R2TO, R2TO + R2TL): Data Transfer Out of Range. DATAO not
/// where the previous H2CData of the R2T ended: Invalid PDU Header Field, FEI 12. LAST_PDU not
/// set exactly on the PDU that ends the R2T: Invalid PDU Header Field, FEI 1.
[[nodiscard]] constexpr std::optional<fatal_error> check_h2c_data(const spec::h2c_data_pdu& pdu,
                                                                  const r2t_window& r2t) noexcept
{
    if (pdu.ttag != r2t.ttag) {
        return invalid_header_field(header_offset::ttag);
    }
    if (pdu.cccid != r2t.cccid) {
        return invalid_header_field(header_offset::cccid);
    }
    const std::uint64_t begin = pdu.datao;
    const std::uint64_t end = begin + pdu.datal;
    const std::uint64_t r2t_end = std::uint64_t{r2t.r2to} + r2t.r2tl;
    if (begin < r2t.r2to || end > r2t_end) {
        return fatal(spec::fatal_error_status::data_transfer_out_of_range);
    }
    if (begin != std::uint64_t{r2t.r2to} + r2t.received) {
        return invalid_header_field(header_offset::datao);
    }
    if (pdu.ch.flags.get(spec::pdu_flags::last_pdu) != (end == r2t_end)) {
        return invalid_header_field(header_offset::flags);
    }
    return std::nullopt;
}

} // namespace transport::tcp
NVMEKIT_END_NAMESPACE
