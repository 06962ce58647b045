#pragma once
/// What one NVMe/TCP connection has to send, in order, and the gathering send of it on a
/// non-blocking socket. PDU headers, digests and small PDUs are encoded into the queue's own
/// bytes (append); a read's data stays in the buffer that holds it and is sent from there
/// (append_buffer), so it is never copied on its way out. A buffer is named by a tag; the caller
/// resolves a tag to its bytes when sending and learns when a buffer has been sent whole, so it
/// can reuse it.
///
///     queue.append(pdu_size(...), [&](std::span<std::byte> out) { return encode_...(..., out); });
///     queue.append_buffer(slot, length);
///     queue.flush(fd, [&](std::uint32_t tag) { return bytes_of(tag); },
///                 [&](std::uint32_t tag) { release(tag); });
///
/// Bytes already sent are dropped once they are most of the queue's own bytes and at least
/// `compact_after` of them, so a connection that always has something queued does not grow
/// without end; what is queued is the caller's to bound (pending()).

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <optional>
#include <span>
#include <vector>

#include <sys/socket.h>
#include <sys/uio.h>

#include <nvmekit/config.hpp>

NVMEKIT_BEGIN_NAMESPACE
namespace transport::tcp {

class send_queue {
public:
    /// The outcome of a flush.
    enum class flush_result : std::uint8_t {
        sent,        ///< everything queued was sent
        would_block, ///< the socket takes no more for now
        failed,      ///< the socket failed (the connection is over)
    };

    explicit send_queue(std::size_t compact_after = 64 * 1024) : compact_after_{compact_after} {}

    /// Bytes queued and not sent yet.
    [[nodiscard]] std::size_t pending() const noexcept { return pending_; }
    [[nodiscard]] bool empty() const noexcept { return pending_ == 0; }

    /// Queues what `encode` writes into a span of `size` bytes (it returns how many it wrote).
    template <typename Encoder>
    void append(std::size_t size, Encoder&& encode)
    {
        compact();
        const std::size_t start = used_;
        if (bytes_.size() < start + size) {
            // Grown, never shrunk: appending a PDU neither allocates nor zero-fills once the
            // queue has held as many bytes as it holds now.
            bytes_.resize(std::max(start + size, bytes_.size() * 2));
        }
        const std::size_t written = encode(std::span{bytes_}.subspan(start, size));
        used_ = start + written;
        if (!parts_.empty() && !parts_.back().tag && parts_.back().end == start) {
            parts_.back().end += written;
        } else {
            parts_.push_back({start, start + written, std::nullopt});
        }
        pending_ += written;
    }

    /// Queues the first `length` bytes of buffer `tag`, which must stay as they are until the
    /// flush that sends their last byte reports `tag` sent.
    void append_buffer(std::uint32_t tag, std::size_t length)
    {
        parts_.push_back({0, length, tag});
        pending_ += length;
    }

    /// Sends what the socket `fd` takes, gathering up to 128 parts a call (64 reads' data with
    /// their headers and responses: each call has a fixed cost in the kernel). `buffer_of(tag)`
    /// gives the bytes of buffer `tag`; `on_sent(tag)` runs once a buffer part is sent whole.
    template <typename BufferOf, typename OnSent>
    flush_result flush(int fd, BufferOf&& buffer_of, OnSent&& on_sent)
    {
        while (!parts_.empty()) {
            std::array<iovec, 128> vectors{};
            std::size_t count = 0;
            for (const auto& part : parts_) {
                if (count == vectors.size()) {
                    break;
                }
                std::byte* base = part.tag ? buffer_of(*part.tag).data() : bytes_.data();
                vectors[count++] = {base + part.begin, part.end - part.begin};
            }
            msghdr message{};
            message.msg_iov = vectors.data();
            message.msg_iovlen = count;
            const ssize_t sent = ::sendmsg(fd, &message, MSG_DONTWAIT | MSG_NOSIGNAL);
            if (sent < 0) {
                return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? flush_result::would_block
                                                                                 : flush_result::failed;
            }
            consume(static_cast<std::size_t>(sent), on_sent);
        }
        used_ = 0;
        return flush_result::sent;
    }

    /// Forgets everything queued (the connection is closing).
    void clear() noexcept
    {
        parts_.clear();
        used_ = 0;
        pending_ = 0;
    }

    /// Size of the queue's own bytes, sent ones not dropped yet included (for tests).
    [[nodiscard]] std::size_t stored_bytes() const noexcept { return used_; }

private:
    /// A run to send: bytes_[begin, end), or bytes [begin, end) of buffer `tag`.
    struct part {
        std::size_t begin = 0;
        std::size_t end = 0;
        std::optional<std::uint32_t> tag{};
    };

    template <typename OnSent>
    void consume(std::size_t sent, OnSent& on_sent)
    {
        pending_ -= sent;
        while (!parts_.empty()) {
            auto& front = parts_.front();
            const std::size_t taken = std::min(sent, front.end - front.begin);
            front.begin += taken;
            sent -= taken;
            if (front.begin != front.end) {
                return;
            }
            const auto tag = front.tag;
            parts_.pop_front();
            if (tag) {
                on_sent(*tag);
            }
        }
    }

    void compact()
    {
        if (used_ < compact_after_) {
            return; // fewer bytes than that sent, whatever the parts say
        }
        const auto first = std::find_if(parts_.begin(), parts_.end(), [](const part& p) { return !p.tag; });
        const std::size_t sent = first == parts_.end() ? used_ : first->begin;
        if (sent < compact_after_ || sent * 2 < used_) {
            return;
        }
        std::memmove(bytes_.data(), bytes_.data() + sent, used_ - sent);
        used_ -= sent;
        for (auto& p : parts_) {
            if (!p.tag) {
                p.begin -= sent;
                p.end -= sent;
            }
        }
    }

    std::vector<std::byte> bytes_; ///< the queue's own bytes are the first used_
    std::size_t used_ = 0;
    std::deque<part> parts_;
    std::size_t pending_ = 0;
    std::size_t compact_after_;
};

} // namespace transport::tcp
NVMEKIT_END_NAMESPACE
