#pragma once
/// The vfio-user protocol as data: message header, command payloads, request decoders and reply
/// encoders. No sockets and no threads; the server transport feeds bytes in and sends bytes out.
///
/// Section names cite QEMU's docs/interop/vfio-user.rst ("vfio-user: Header"); the payload
/// structures that the protocol takes from <linux/vfio.h> cite their uapi struct names. All data
/// is in host byte order, which nvmekit requires to be little-endian.
///
/// Every decoder takes the payload (the bytes after the 16-byte header, exactly
/// `message_size - 16` of them) and the number of file descriptors that arrived with the message
/// as SCM_RIGHTS data, checks every field, and returns either the decoded request or the errno
/// value to put in the reply's error field. Nothing a client sends is trusted.
///
/// Each part has its own header under protocol/, and this header includes them all:
///   protocol/wire.hpp          command IDs, message header, payload structures, flags, constants
///   protocol/limits.hpp        protocol_limits, what the server advertises and enforces
///   protocol/capabilities.hpp  the VERSION request's client capabilities and their JSON reader
///   protocol/decode.hpp        parse_result, parse_header and the request decoders
///   protocol/encode.hpp        the reply encoders

#include <nvmekit/transport/vfio_user/protocol/capabilities.hpp>
#include <nvmekit/transport/vfio_user/protocol/decode.hpp>
#include <nvmekit/transport/vfio_user/protocol/encode.hpp>
#include <nvmekit/transport/vfio_user/protocol/limits.hpp>
#include <nvmekit/transport/vfio_user/protocol/wire.hpp>
