/* The binary PDU format of Hakoniwa: [meta 24 B][base][heap], little-endian.
 *
 * meta: magic u32 0x12345678 @0, version u32 1 @4, base offset u32 (24) @8, heap offset u32
 * @12 (hako writes 24 + base size rounded up to 8; it reads any offset past the base's fields,
 * as Hakoniwa's Python writer puts it where the last field ends), total size u32 @16, epoch u8
 * @20, flags u8 @21, two reserved bytes. The base is the C struct of the type (hako/msg.h); a
 * variable array in it is {int32 length, int32 offset from the heap start}; the heap holds the
 * elements, packed. For an array of structs all the elements' fixed parts come first, then their
 * nested payloads.
 *
 * Everything read from a buffer is bounds checked: a PDU that lies about its offsets or lengths
 * is refused, never read past.
 */
#ifndef HAKO_PDU_H
#define HAKO_PDU_H

#include "hako/api.h"

#include <stddef.h>
#include <stdint.h>

#include "hako/error.h"
#include "hako/msg.h"

#ifdef __cplusplus
extern "C" {
#endif

#define HAKO_PDU_META_SIZE    24u
#define HAKO_PDU_MAGIC        0x12345678u
#define HAKO_PDU_VERSION      1u
#define HAKO_PDU_EPOCH_OFFSET 20u

/* Classes of hako_pdu_classify (the values of Hakoniwa's hako_pdu_classify_metadata). */
enum hako_pdu_class {
	HAKO_PDU_INVALID = 0,       /* shorter than the meta header, or another magic / version */
	HAKO_PDU_UNINITIALIZED = 1, /* 24 zero bytes: a channel never written */
	HAKO_PDU_VALID = 2,
};

typedef struct hako_pdu_meta {
	uint32_t magic;
	uint32_t version;
	uint32_t base_off;
	uint32_t heap_off;
	uint32_t total_size;
	uint8_t epoch;
	uint8_t flags;
} hako_pdu_meta_t;

/* Look at the meta header only. */
HAKO_API int hako_pdu_classify(const void *pdu, size_t len);

/* Read the meta header; HAKO_EPROTO unless the class is VALID and the offsets are coherent
 * (base_off == 24, base_off <= heap_off <= total_size <= len). heap_off need not be a multiple
 * of 8: Hakoniwa's Python writer puts the heap where the base's last field ends. */
HAKO_API int hako_pdu_meta_read(const void *pdu, size_t len, hako_pdu_meta_t *meta);

/* The epoch byte (a generation tag, compared only for equality). get: HAKO_EPROTO unless VALID.
 * set: a release store, so a writer that sets it last makes it the commit marker of the PDU. */
HAKO_API int hako_pdu_get_epoch(const void *pdu, size_t len, uint8_t *epoch);
HAKO_API int hako_pdu_set_epoch(void *pdu, size_t len, uint8_t epoch);

/* Check a whole PDU of `type`: meta as above, heap_off >= 24 + hako_msg_data_end(type) (past
 * the base's fields; Hakoniwa's writers use 24 + that or 24 + align8(type->size)), every
 * variable array at any depth inside [heap start, total_size) with no arithmetic overflow
 * (length x element size at most INT32_MAX), the arrays together no larger than the heap
 * (Hakoniwa's writers never let two arrays share heap bytes; sharing would let a small PDU
 * blow up in JSON), and every string slot NUL-terminated.
 * 0, or HAKO_EPROTO with err->message naming the field path ("points[2].data: ..."); HAKO_EINVAL
 * for a NULL type or PDU. */
HAKO_API int hako_pdu_validate(const hako_msg_type_t *type, const void *pdu, size_t len,
                               hako_error_t *err);

/* Pointer to the base struct of a valid PDU (pdu + 24). */
static inline void *hako_pdu_base(void *pdu)
{
	return (uint8_t *)pdu + HAKO_PDU_META_SIZE;
}

/* The elements of the variable array whose {length, offset} reference sits at `ref` (inside the
 * PDU's base or heap), each elem_size bytes: NULL (and *count = 0) if the meta is not coherent,
 * the reference points outside the PDU or the length is negative or overflows. An empty array
 * gives a non-NULL pointer and *count = 0. The heap is packed, so elements are not aligned:
 * read them with memcpy. */
HAKO_API const void *hako_pdu_varray(const void *pdu, size_t len, const void *ref,
                                     uint32_t elem_size, uint32_t *count);

/* ---- Writing ---- */

typedef struct hako_pdu_writer {
	uint8_t *buf;
	size_t cap;
	uint32_t heap_off;
	uint32_t used; /* bytes written so far, meta included */
	int error;     /* first error (HAKO_ETOOBIG when cap is too small), 0 if none */
	size_t needed; /* bytes the PDU would need, also past cap */
} hako_pdu_writer_t;

/* Start a PDU of `type` in buf: meta (epoch 0), zeroed base. Returns the error, if any:
 * HAKO_EINVAL (no type, or buf NULL with cap > 0), HAKO_ETOOBIG (cap below the fixed part).
 * A sizing pass: buf NULL and cap 0, then the same calls as for real (writer_varray returns
 * NULL and does not look at ref, so NULL will do); finish gives the size in *len. */
HAKO_API int hako_pdu_writer_init(hako_pdu_writer_t *w, const hako_msg_type_t *type, void *buf,
                                  size_t cap);
/* Give the variable-array reference at `ref` count elements of elem_size bytes at the end of
 * the heap; returns them zeroed, or NULL after an error. ref must lie in the part of the
 * buffer written so far (base or heap), else HAKO_EINVAL. The heap is packed: the elements are
 * not aligned, fill them with memcpy. count 0 gives a non-NULL pointer to no bytes (the offset
 * is the current end of the heap, as Hakoniwa writes it). Past cap: HAKO_ETOOBIG, and the writer
 * keeps counting `needed` (SIZE_MAX if the PDU would exceed INT32_MAX bytes). Allocate a
 * struct array before its elements' own arrays, element by element (Hakoniwa's order). */
HAKO_API void *hako_pdu_writer_varray(hako_pdu_writer_t *w, void *ref, uint32_t count,
                                      uint32_t elem_size);
/* Write total_size; *len = w->needed (the PDU's size; after HAKO_ETOOBIG the size it needs).
 * Returns w->error. The epoch stays 0: set it last, with hako_pdu_set_epoch. */
HAKO_API int hako_pdu_writer_finish(hako_pdu_writer_t *w, size_t *len);

/* ---- JSON ---- */

/* A PDU of `type` as JSON text: an object with the fields in .msg order, nested types as
 * objects, fixed and variable arrays as arrays (uint8[], byte[], char[] too: of numbers), bool
 * as true/false (any nonzero is true), integers as numbers except uint64 above INT64_MAX, a
 * decimal string ("18446744073709551615"). float32/float64: the shortest decimal that reads
 * back as the same value (always with a '.' or an exponent: 1.0, 0.1, 1e-05); NaN and the
 * infinities as the strings "nan", "inf", "-inf". Strings escaped; a byte that is not part of
 * valid UTF-8 is written as \udcXX, XX its value (Python's "surrogateescape": a lone surrogate
 * is JSON by RFC 8259 and no character, and hako_pdu_from_json reads it back as that byte, so
 * such strings round-trip byte for byte; strict parsers such as jansson refuse it).
 * The PDU is validated first (HAKO_EPROTO). *out is malloc'd and NUL-terminated.
 * flags: HAKO_PDU_JSON_PRETTY (2-space indent, arrays of numbers on one line). */
#define HAKO_PDU_JSON_PRETTY 1
HAKO_API int hako_pdu_to_json(const hako_msg_type_t *type, const void *pdu, size_t len, int flags,
                              char **out, hako_error_t *err);

/* Encode JSON text as a PDU of `type` into buf (cap bytes); *len = its size. Takes what
 * hako_pdu_to_json writes (JSON -> PDU -> JSON is the identity), plus integers written as reals
 * with an integral value (7.0, 1e3) and reals written as integers. Missing fields are zero.
 * HAKO_ECONFIG for text that is not JSON, unknown or repeated fields, wrong kinds (null too),
 * out-of-range numbers, fixed arrays of another length, strings of 128 bytes or more or with
 * \u0000: err->message names the field path ("points[1].data[3]: 300 is out of range for
 * uint8"), err->line/column where the value starts, err->file is left empty. If cap is too
 * small: HAKO_ETOOBIG and *len = the size needed (buf NULL, cap 0 asks for it; SIZE_MAX if the
 * PDU would pass INT32_MAX bytes). buf is written only on success; the PDU's epoch is 0. */
HAKO_API int hako_pdu_from_json(const hako_msg_type_t *type, const char *json, size_t json_len,
                                void *buf, size_t cap, size_t *len, hako_error_t *err);

#ifdef __cplusplus
}
#endif
#endif
