/* Shared by the PDU codec and the JSON conversion: little-endian access through memcpy (the heap
 * is packed, so nothing in a PDU is reliably aligned), the meta check with a reason, the bounds
 * check of one variable array, and field paths for error messages. */
#ifndef HAKOI_PDU_INTERNAL_H
#define HAKOI_PDU_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "hako/pdu.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the PDU format is little-endian and the base is the native C struct"
#endif

/* Library-internal: not exported, and called without going through the PLT. */
#define HAKOI_HIDDEN __attribute__((visibility("hidden")))

/* The largest PDU: offsets and lengths are int32 in the format. */
#define HAKOI_PDU_MAX ((uint32_t)INT32_MAX)

static inline uint32_t hakoi_rd32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, sizeof(v));
	return v;
}

static inline int32_t hakoi_rd32s(const uint8_t *p)
{
	int32_t v;
	memcpy(&v, p, sizeof(v));
	return v;
}

static inline void hakoi_wr32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, sizeof(v));
}

static inline uint32_t hakoi_align8(uint32_t n)
{
	return (n + 7u) & ~7u;
}

/* One step of the path to the value being looked at: a field (name != NULL) or an element. The
 * steps live on the C stack of the recursive walkers, so a path costs nothing until an error
 * formats it. */
typedef struct hakoi_pdu_frame {
	const struct hakoi_pdu_frame *up;
	const char *name;
	size_t index;
} hakoi_pdu_frame_t;

/* "points[2].data" ("" for no step) into buf. */
HAKOI_HIDDEN void hakoi_pdu_path_format(const hakoi_pdu_frame_t *f, char *buf, size_t len);

/* Number of steps from f to the top. */
HAKOI_HIDDEN size_t hakoi_pdu_path_depth(const hakoi_pdu_frame_t *f);

/* The meta header of a PDU that passes every check (classify VALID, base_off 24, heap_off in
 * [24, total_size], total_size <= len): 0, else -1 and hakoi_pdu_meta_check says why. The heap
 * offset need not be a multiple of 8: Hakoniwa's Python writer starts the heap where the base's
 * last field ends, and its readers follow heap_off wherever it points. Inline: validate and the
 * varray accessor run it on every call. */
static inline int hakoi_pdu_meta_fast(const void *pdu, size_t len, hako_pdu_meta_t *m)
{
	uint32_t w[5];
	if (pdu == NULL || len < HAKO_PDU_META_SIZE) {
		return -1;
	}
	memcpy(w, pdu, sizeof(w));
	if (w[0] != HAKO_PDU_MAGIC || w[1] != HAKO_PDU_VERSION || w[2] != HAKO_PDU_META_SIZE ||
	    w[3] < HAKO_PDU_META_SIZE || w[4] < w[3] || w[4] > len) {
		return -1;
	}
	m->magic = w[0];
	m->version = w[1];
	m->base_off = w[2];
	m->heap_off = w[3];
	m->total_size = w[4];
	m->epoch = __atomic_load_n((const uint8_t *)pdu + HAKO_PDU_EPOCH_OFFSET, __ATOMIC_RELAXED);
	m->flags = ((const uint8_t *)pdu)[21];
	return 0;
}

/* hako_pdu_meta_read with the reason of a refusal in why (HAKO_EPROTO). */
HAKOI_HIDDEN int hakoi_pdu_meta_check(const void *pdu, size_t len, hako_pdu_meta_t *meta, char *why,
                                      size_t why_len);

/* The variable array whose reference is at byte ref_off of a PDU with coherent meta m: its
 * elements start at byte *start, *count of them. HAKO_EPROTO (why says what is wrong) when the
 * length is negative, the offset negative, length x elem_size over INT32_MAX, or the elements
 * run past total_size (why may be NULL). The caller makes sure ref_off + 8 <= total_size. */
HAKOI_HIDDEN int hakoi_pdu_varray_at(const uint8_t *pdu, const hako_pdu_meta_t *m, uint32_t ref_off,
                                     uint32_t elem_size, uint32_t *start, uint32_t *count,
                                     char *why, size_t why_len);

/* A field of the type, at any depth, is a string or a variable array: the fields that need a
 * look at the bytes to validate. */
HAKOI_HIDDEN int hakoi_pdu_type_needs_walk(const hako_msg_type_t *type);

#endif
