/* Hakoniwa's wire frames for PDUs over TCP, UDP and WebSocket (little-endian).
 *
 * v2 (default): a 304-byte header, then the body (the PDU bytes):
 *   @0   robot name, 128 bytes, NUL-terminated, zero-padded (at most 127 chars)
 *   @128 magic u32 0x48414B4F ("HAKO")
 *   @132 version u16 = 2
 *   @134 6 bytes flags / reserved, zero
 *   @140 meta_request_type u32 (HAKO_FRAME_* below)
 *   @144 total_len u32 = 172 + body_len (informational)
 *   @148 body_len u32
 *   @152 hako_time_us u64, @160 asset_time_us u64, @168 real_time_us u64
 *   @176 channel_id i32
 *   @180 124 bytes zero padding
 * v1 (legacy): [u32 header_len][u32 name_len][name][i32 channel_id][body], header_len = the bytes
 *   after the first word (name_len + name + channel id + body). The name has no NUL (at most 127
 *   bytes). v1 has no type or time fields: a request carries its magic (u32) at the start of
 *   the body, as Hakoniwa's Python library sends its declarations ("DPER", "DPPW") and read
 *   requests ("EPPW"). Decode gives, as Hakoniwa's endpoint reads it: for a body of 4 bytes or
 *   more that starts with HAKO_FRAME_DECLARE_READ, _DECLARE_WRITE or _REQUEST_READ, that
 *   request_type and the body after the magic (empty for Python's); for any other body
 *   HAKO_FRAME_PDU_DATA and the whole body. Times are zero.
 *
 * Everything read from the network is checked before use: a length that is negative, larger
 * than the configured limit or than the bytes at hand, a bad magic or version, a name without
 * NUL or longer than 127 chars is refused with HAKO_EPROTO and a reason.
 */
#ifndef HAKO_FRAME_H
#define HAKO_FRAME_H

#include "hako/api.h"

#include <stddef.h>
#include <stdint.h>

#include "hako/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define HAKO_FRAME_V2_HEADER_SIZE   304u
#define HAKO_FRAME_MAGIC            0x48414B4Fu
#define HAKO_FRAME_V2_VERSION       2u
#define HAKO_FRAME_ROBOT_MAX        128u /* bytes with the NUL */
#define HAKO_FRAME_DEFAULT_MAX_BODY (16u << 20)

/* meta_request_type values (v2). */
#define HAKO_FRAME_PDU_DATA      0x42555043u /* "CPUB": PDU data */
#define HAKO_FRAME_DECLARE_READ  0x52455044u /* declare for read */
#define HAKO_FRAME_DECLARE_WRITE 0x57505044u /* declare for write */
#define HAKO_FRAME_REQUEST_READ  0x57505045u /* request read */
#define HAKO_FRAME_RPC_REGISTER  0x43505244u /* register RPC client */
#define HAKO_FRAME_RPC_REQUEST   0x43505243u /* RPC request */
#define HAKO_FRAME_RPC_REPLY     0x43505253u /* RPC reply */

typedef enum hako_frame_version {
	HAKO_FRAME_V1 = 1,
	HAKO_FRAME_V2 = 2,
} hako_frame_version_t;

/* One decoded frame. body points into the buffer it was decoded from (no copy). */
typedef struct hako_frame {
	char robot[HAKO_FRAME_ROBOT_MAX];
	int32_t channel_id;
	uint32_t request_type; /* v2's; v1: PDU data, or the request its body starts with */
	uint64_t hako_time_us;
	uint64_t asset_time_us;
	uint64_t real_time_us;
	const uint8_t *body;
	uint32_t body_len;
} hako_frame_t;

/* Bytes the encoded frame takes: header + body. 0 if robot is NULL or 128 bytes or longer, or
 * the lengths would not fit the frame's u32 length fields. */
HAKO_API size_t hako_frame_size(hako_frame_version_t v, const char *robot, uint32_t body_len);

/* Encode f into buf (cap bytes); *len = bytes written. HAKO_ETOOBIG if cap is too small,
 * HAKO_ENAMETOOLONG for a robot name of 128 bytes or more, HAKO_EINVAL otherwise (also for v1
 * with a request_type other than HAKO_FRAME_PDU_DATA: v1 cannot carry it; v1 drops the times). */
HAKO_API int hako_frame_encode(hako_frame_version_t v, const hako_frame_t *f, void *buf, size_t cap,
                               size_t *len);

/* For a stream: how many bytes the frame that starts at buf needs in all (header + body), from
 * the first bytes of it. *needed = 0 (return 0) = not enough bytes yet to know (v2 needs the
 * 304-byte header, v1 its two length words, 8 bytes); HAKO_EPROTO (with err->message) when the
 * header is invalid or announces more than max_body bytes of body. */
HAKO_API int hako_frame_needed(hako_frame_version_t v, const void *buf, size_t len,
                               uint32_t max_body, size_t *needed, hako_error_t *err);

/* Decode one complete frame of exactly len bytes (a datagram, a WebSocket message, or the
 * `needed` bytes of a stream): a buffer shorter or longer than the frame is refused.
 * HAKO_EPROTO with err->message (file "", line 0) on anything malformed; out is untouched then. */
HAKO_API int hako_frame_decode(hako_frame_version_t v, const void *buf, size_t len,
                               uint32_t max_body, hako_frame_t *out, hako_error_t *err);

/* Decode the frame of one message (a WebSocket message, a datagram): the message is the frame.
 * v2 as hako_frame_decode. v1 as Hakoniwa's readers take it: the body is whatever follows the
 * channel id up to the end of the message, and header_len need only cover the name and the
 * channel id (at least name_len + 8) and fit the message (4 + header_len <= len). Hakoniwa's
 * Python and JavaScript writers send header_len = name_len + 8 and the body after it; its C++
 * writer counts the body in header_len; both decode to the same frame. A stream (tcp) has no
 * message boundary and frames v1 by header_len: hako_frame_needed + hako_frame_decode. */
HAKO_API int hako_frame_decode_message(hako_frame_version_t v, const void *buf, size_t len,
                                       uint32_t max_body, hako_frame_t *out, hako_error_t *err);

#ifdef __cplusplus
}
#endif
#endif
