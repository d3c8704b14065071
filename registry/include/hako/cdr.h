/* ROS 2 CDR for every registry type, and the `ros2msg` schema text Foxglove and MCAP read.
 *
 * CDR here is what ROS 2's rmw layers and @foxglove/rosmsg2-serialization write: XCDR1, little
 * endian, the 4-byte encapsulation header 00 01 00 00 (CDR_LE), then the fields in .msg order.
 * Every primitive is aligned to its size (8 for int64, uint64, float64) counted from the first
 * byte after the header, padding bytes are zero. bool, byte, char, int8, uint8: 1 byte (a PDU
 * bool is 4 bytes, any nonzero is true and becomes 1); string: uint32 length with the NUL, the
 * bytes, the NUL; T[N]: N elements, no count; T[]: uint32 count, then the elements (no padding
 * when the count is 0); nested types inline, with no alignment of their own; a type without
 * fields is one uint8 0 (what ROS 2's IDL adds to an empty struct). No padding at the end.
 *
 * The PDU side is hako's binary PDU (hako/pdu.h). Decoding writes the PDU as
 * hako_pdu_writer_* does (heap at 24 + base rounded up to 8, an array of structs before its
 * elements' own arrays), so PDU -> CDR -> PDU gives the same bytes back for any PDU hako wrote.
 *
 * No allocation, no intermediate form: one pass over the PDU or the CDR.
 */
#ifndef HAKO_CDR_H
#define HAKO_CDR_H

#include "hako/api.h"

#include <stddef.h>
#include <stdint.h>

#include "hako/error.h"
#include "hako/msg.h"

#ifdef __cplusplus
extern "C" {
#endif

#define HAKO_CDR_HEADER_SIZE 4u

/* The PDU (pdu_len bytes) of `type` as CDR into out (cap bytes); *len = the CDR's size.
 * The PDU is validated first (hako_pdu_validate): HAKO_EPROTO, err->message naming the field.
 * If cap is too small: HAKO_ETOOBIG and *len = the size needed (out NULL, cap 0 asks for it);
 * what out holds then is unspecified. HAKO_EINVAL for a NULL type, PDU or len. */
HAKO_API int hako_cdr_encode(const hako_msg_type_t *type, const void *pdu, size_t pdu_len,
                             void *out, size_t cap, size_t *len, hako_error_t *err);

/* CDR bytes (len, header included) of `type` as a PDU into pdu (cap bytes); *pdu_len = its
 * size; the PDU's epoch is 0. Input is hostile: every length and count is checked against the
 * bytes that remain before it is used. HAKO_EPROTO, err->message naming the field path
 * ("points[2].data: count 4000000000 is larger than the 12 bytes left"), for: a header other
 * than CDR_LE (00 01; big endian, XCDR2 and parameter lists are not supported), data cut off,
 * a string without its NUL, with a NUL inside or of 128 bytes or more (a PDU string is a
 * 128-byte slot), a PDU larger than INT32_MAX bytes. Bytes after the message are allowed (CDR
 * readers ignore them: some writers pad the message to 4). A bool byte other than 0 is true.
 * If cap is too small: HAKO_ETOOBIG and *pdu_len = the size needed (pdu NULL, cap 0 asks for
 * it); what pdu holds then is unspecified. */
HAKO_API int hako_cdr_decode(const hako_msg_type_t *type, const void *cdr, size_t len, void *pdu,
                             size_t cap, size_t *pdu_len, hako_error_t *err);

/* The `ros2msg` schema of `type`, as MCAP's ros2 profile and Foxglove want it: the type's
 * fields, one `<type> <name>` line each, then for every type it uses (at any depth, each once,
 * in the order first met) a line of 80 '=', a line `MSG: pkg/Type` and that type's fields.
 * Written from the type model, so nested types are always named in full (`pkg/Type`), and the
 * .msg comments are not part of it. Into out (cap bytes, NUL-terminated); *len = its length
 * without the NUL. If cap is too small: HAKO_ETOOBIG and *len = the length (out NULL, cap 0
 * asks for it; cap must be at least *len + 1). HAKO_EINVAL for a NULL type or len. */
HAKO_API int hako_cdr_schema(const hako_msg_type_t *type, char *out, size_t cap, size_t *len);

/* "ros2msg": the schema encoding of hako_cdr_schema; "cdr": the message encoding. */
#define HAKO_CDR_SCHEMA_ENCODING  "ros2msg"
#define HAKO_CDR_MESSAGE_ENCODING "cdr"

#ifdef __cplusplus
}
#endif
#endif
