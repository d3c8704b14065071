/* PDU <-> ROS 2 CDR (XCDR1, little endian), driven by the type model: one pass, no allocation. */
#include "hako/cdr.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "pdu_internal.h"

/* Bytes of one element of a primitive kind in CDR, which is also its alignment there. */
static uint32_t cdr_size(hako_msg_kind_t kind)
{
	switch (kind) {
	case HAKO_MSG_BOOL:
	case HAKO_MSG_BYTE:
	case HAKO_MSG_CHAR:
	case HAKO_MSG_INT8:
	case HAKO_MSG_UINT8: return 1;
	case HAKO_MSG_INT16:
	case HAKO_MSG_UINT16: return 2;
	case HAKO_MSG_INT32:
	case HAKO_MSG_UINT32:
	case HAKO_MSG_FLOAT32: return 4;
	case HAKO_MSG_INT64:
	case HAKO_MSG_UINT64:
	case HAKO_MSG_FLOAT64: return 8;
	case HAKO_MSG_STRING:
	case HAKO_MSG_STRUCT: break;
	}
	return 0;
}

/* Zero bytes that align pos (counted from the end of the header) to a (a power of 2). */
static inline size_t cdr_pad(size_t pos, uint32_t a)
{
	return (size_t)(0u - (pos - HAKO_CDR_HEADER_SIZE)) & (a - 1u);
}

/* ---- encode ---- */

struct ectx {
	const uint8_t *pdu;
	hako_pdu_meta_t m;
	uint8_t *out;
	size_t cap;
	size_t pos; /* CDR bytes so far, header included; keeps counting past cap */
};

/* Room for n bytes aligned to a: where to write them, or NULL past cap (then only count). */
static inline uint8_t *e_put(struct ectx *c, uint32_t a, size_t n)
{
	size_t pad = cdr_pad(c->pos, a);
	size_t at = c->pos + pad;
	c->pos = at + n;
	if (c->pos > c->cap) {
		return NULL;
	}
	for (size_t i = 0; i < pad; i++) {
		c->out[at - pad + i] = 0;
	}
	return c->out + at;
}

static void e_string(struct ectx *c, uint32_t at)
{
	/* validated: the slot holds a NUL */
	const char *s = (const char *)c->pdu + at;
	size_t n = strnlen(s, HAKO_MSG_STRING_SIZE);
	uint8_t *p = e_put(c, 4, 4 + n + 1);
	if (p != NULL) {
		hakoi_wr32(p, (uint32_t)(n + 1));
		memcpy(p + 4, s, n);
		p[4 + n] = 0;
	}
}

static void e_struct(struct ectx *c, const hako_msg_type_t *type, uint32_t at);

static void e_elems(struct ectx *c, const hako_msg_field_t *f, uint32_t at, uint32_t n)
{
	switch (f->kind) {
	case HAKO_MSG_STRUCT:
		for (uint32_t i = 0; i < n; i++) {
			e_struct(c, f->type, at + i * f->elem_size);
		}
		break;
	case HAKO_MSG_STRING:
		for (uint32_t i = 0; i < n; i++) {
			e_string(c, at + i * HAKO_MSG_STRING_SIZE);
		}
		break;
	case HAKO_MSG_BOOL: {
		uint8_t *p = e_put(c, 1, n);
		for (uint32_t i = 0; p != NULL && i < n; i++) {
			p[i] = hakoi_rd32(c->pdu + at + i * 4u) != 0;
		}
		break;
	}
	default: {
		/* same bytes on both sides: little endian, elements back to back */
		if (n == 0) {
			break;
		}
		uint32_t sz = f->elem_size;
		uint8_t *p = e_put(c, sz, (size_t)n * sz);
		if (p != NULL) {
			memcpy(p, c->pdu + at, (size_t)n * sz);
		}
		break;
	}
	}
}

static void e_struct(struct ectx *c, const hako_msg_type_t *type, uint32_t at)
{
	if (type->cdr_plain != 0 && (cdr_pad(c->pos, type->align) == 0)) {
		uint8_t *p = e_put(c, 1, type->cdr_plain);
		if (p != NULL) {
			memcpy(p, c->pdu + at, type->cdr_plain);
		}
		return;
	}
	if (type->field_count == 0) {
		uint8_t *p = e_put(c, 1, 1);
		if (p != NULL) {
			*p = 0;
		}
		return;
	}
	for (size_t i = 0; i < type->field_count; i++) {
		const hako_msg_field_t *f = &type->fields[i];
		uint32_t fat = at + f->offset;
		switch (f->form) {
		case HAKO_MSG_SINGLE: e_elems(c, f, fat, 1); break;
		case HAKO_MSG_ARRAY: e_elems(c, f, fat, f->count); break;
		case HAKO_MSG_VARRAY: {
			uint32_t start = 0;
			uint32_t n = 0;
			/* validated already: cannot fail */
			(void)hakoi_pdu_varray_at(c->pdu, &c->m, fat, f->elem_size, &start, &n,
			                          NULL, 0);
			uint8_t *p = e_put(c, 4, 4);
			if (p != NULL) {
				hakoi_wr32(p, n);
			}
			e_elems(c, f, start, n);
			break;
		}
		}
	}
}

int hako_cdr_encode(const hako_msg_type_t *type, const void *pdu, size_t pdu_len, void *out,
                    size_t cap, size_t *len, hako_error_t *err)
{
	if (type == NULL || pdu == NULL || len == NULL || (out == NULL && cap > 0)) {
		return hako_error_set(err, HAKO_EINVAL, NULL, 0, 0,
		                      "no type, PDU, length or buffer");
	}
	int rc = hako_pdu_validate(type, pdu, pdu_len, err);
	if (rc != 0) {
		return rc;
	}
	struct ectx c = {.pdu = pdu, .out = out, .cap = cap, .pos = HAKO_CDR_HEADER_SIZE};
	(void)hakoi_pdu_meta_fast(pdu, pdu_len, &c.m);
	e_struct(&c, type, HAKO_PDU_META_SIZE);
	*len = c.pos;
	if (c.pos > cap) {
		return hako_error_set(err, HAKO_ETOOBIG, NULL, 0, 0,
		                      "the CDR of %s needs %zu bytes, the buffer has %zu",
		                      type->full_name, c.pos, cap);
	}
	static const uint8_t header[HAKO_CDR_HEADER_SIZE] = {0x00, 0x01, 0x00, 0x00};
	memcpy(out, header, sizeof(header));
	return 0;
}

/* ---- decode ---- */

struct dctx {
	const uint8_t *in;
	size_t len;
	size_t pos; /* next CDR byte */
	uint8_t *out;
	size_t cap;
	int writing;   /* the PDU fits so far; else only count */
	uint64_t used; /* PDU bytes so far: meta, base and heap */
	uint32_t heap_off;
	hako_error_t *err;
	const hako_msg_type_t *type;
};

static int dfail(const struct dctx *c, const hakoi_pdu_frame_t *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int dfail(const struct dctx *c, const hakoi_pdu_frame_t *at, const char *fmt, ...)
{
	char where[256];
	char what[320];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	hakoi_pdu_path_format(at, where, sizeof(where));
	return hako_error_set(c->err, HAKO_EPROTO, NULL, 0, 0, "%s: %s: %s (CDR byte %zu)",
	                      c->type->full_name, where[0] != '\0' ? where : "top level", what,
	                      c->pos);
}

/* n bytes aligned to a from the CDR, or NULL (error set) when they are not all there. */
static const uint8_t *d_take(struct dctx *c, uint32_t a, size_t n, const hakoi_pdu_frame_t *fr,
                             const char *what)
{
	size_t at = c->pos + cdr_pad(c->pos, a);
	if (at > c->len || n > c->len - at) {
		dfail(c, fr, "%s: %zu bytes needed, %zu left", what, n,
		      at > c->len ? (size_t)0 : c->len - at);
		return NULL;
	}
	c->pos = at + n;
	return c->in + at;
}

static inline void d_write(struct dctx *c, uint64_t at, const void *src, size_t n)
{
	if (c->writing) {
		memcpy(c->out + at, src, n);
	}
}

/* The smallest CDR a value of the field's element can take (at least 1), so a count can be
 * checked against the bytes left before anything is allocated. */
static uint64_t min_cdr(const hako_msg_type_t *type, int depth);

static uint64_t min_elem(const hako_msg_field_t *f, int depth)
{
	if (f->kind == HAKO_MSG_STRING) {
		return 4;
	}
	if (f->kind == HAKO_MSG_STRUCT) {
		return min_cdr(f->type, depth + 1);
	}
	return cdr_size(f->kind);
}

static uint64_t min_cdr(const hako_msg_type_t *type, int depth)
{
	if (type->field_count == 0 || depth > 64) {
		return 1;
	}
	uint64_t n = 0;
	for (size_t i = 0; i < type->field_count && n < UINT32_MAX; i++) {
		const hako_msg_field_t *f = &type->fields[i];
		switch (f->form) {
		case HAKO_MSG_SINGLE: n += min_elem(f, depth); break;
		case HAKO_MSG_ARRAY: n += (uint64_t)f->count * min_elem(f, depth); break;
		case HAKO_MSG_VARRAY: n += 4; break;
		}
	}
	return n > 0 ? n : 1;
}

static int d_string(struct dctx *c, uint64_t at, const hakoi_pdu_frame_t *fr)
{
	const uint8_t *p = d_take(c, 4, 4, fr, "string length");
	if (p == NULL) {
		return HAKO_EPROTO;
	}
	uint32_t n = hakoi_rd32(p);
	if (n == 0) {
		/* some writers send an empty string as length 0, no NUL */
		return 0;
	}
	if (n > c->len - c->pos) {
		return dfail(c, fr, "string length %u is larger than the %zu bytes left", n,
		             c->len - c->pos);
	}
	if (n > HAKO_MSG_STRING_SIZE) {
		return dfail(c, fr, "string of %u bytes does not fit a %d-byte PDU string", n - 1,
		             HAKO_MSG_STRING_SIZE);
	}
	const uint8_t *s = c->in + c->pos;
	if (s[n - 1] != 0) {
		return dfail(c, fr, "string of length %u does not end with a NUL", n);
	}
	if (memchr(s, 0, n - 1) != NULL) {
		return dfail(c, fr, "string has a NUL byte inside");
	}
	d_write(c, at, s, n);
	c->pos += n;
	return 0;
}

static int d_struct(struct dctx *c, const hako_msg_type_t *type, uint64_t at,
                    const hakoi_pdu_frame_t *up);

static int d_elems(struct dctx *c, const hako_msg_field_t *f, uint64_t at, uint32_t n,
                   const hakoi_pdu_frame_t *fr)
{
	switch (f->kind) {
	case HAKO_MSG_STRUCT:
		for (uint32_t i = 0; i < n; i++) {
			hakoi_pdu_frame_t el = {fr, NULL, i};
			int rc = d_struct(c, f->type, at + (uint64_t)i * f->elem_size,
			                  f->form == HAKO_MSG_SINGLE ? fr : &el);
			if (rc != 0) {
				return rc;
			}
		}
		return 0;
	case HAKO_MSG_STRING:
		for (uint32_t i = 0; i < n; i++) {
			hakoi_pdu_frame_t el = {fr, NULL, i};
			int rc = d_string(c, at + (uint64_t)i * HAKO_MSG_STRING_SIZE,
			                  f->form == HAKO_MSG_SINGLE ? fr : &el);
			if (rc != 0) {
				return rc;
			}
		}
		return 0;
	case HAKO_MSG_BOOL: {
		const uint8_t *p = d_take(c, 1, n, fr, "bool");
		if (p == NULL) {
			return HAKO_EPROTO;
		}
		for (uint32_t i = 0; c->writing && i < n; i++) {
			hakoi_wr32(c->out + at + (uint64_t)i * 4u, p[i] != 0);
		}
		return 0;
	}
	default: {
		if (n == 0) {
			return 0;
		}
		uint32_t sz = f->elem_size;
		const uint8_t *p = d_take(c, sz, (size_t)n * sz, fr, hako_msg_kind_name(f->kind));
		if (p == NULL) {
			return HAKO_EPROTO;
		}
		d_write(c, at, p, (size_t)n * sz);
		return 0;
	}
	}
}

/* Heap room for n elements of the variable array whose reference is at `ref`. */
static int d_varray(struct dctx *c, const hako_msg_field_t *f, uint64_t ref, uint32_t n,
                    uint64_t *start, const hakoi_pdu_frame_t *fr)
{
	uint64_t bytes = (uint64_t)n * f->elem_size;
	if (bytes > HAKOI_PDU_MAX - c->used) {
		dfail(c, fr, "%u elements of %u bytes make the PDU larger than %u bytes", n,
		      f->elem_size, HAKOI_PDU_MAX);
		return HAKO_ETOOBIG;
	}
	*start = c->used;
	if (c->writing && c->used + bytes > c->cap) {
		c->writing = 0;
	}
	if (c->writing) {
		memset(c->out + c->used, 0, (size_t)bytes);
		hakoi_wr32(c->out + ref, n);
		hakoi_wr32(c->out + ref + 4, (uint32_t)(c->used - c->heap_off));
	}
	c->used += bytes;
	return 0;
}

static int d_struct(struct dctx *c, const hako_msg_type_t *type, uint64_t at,
                    const hakoi_pdu_frame_t *up)
{
	if (type->cdr_plain != 0 && cdr_pad(c->pos, type->align) == 0 &&
	    type->cdr_plain <= c->len - c->pos) {
		d_write(c, at, c->in + c->pos, type->cdr_plain);
		c->pos += type->cdr_plain;
		return 0;
	}
	if (type->field_count == 0) {
		return d_take(c, 1, 1, up, "empty struct's byte") != NULL ? 0 : HAKO_EPROTO;
	}
	for (size_t i = 0; i < type->field_count; i++) {
		const hako_msg_field_t *f = &type->fields[i];
		hakoi_pdu_frame_t fr = {up, f->name, 0};
		uint64_t fat = at + f->offset;
		int rc = 0;
		switch (f->form) {
		case HAKO_MSG_SINGLE: rc = d_elems(c, f, fat, 1, &fr); break;
		case HAKO_MSG_ARRAY: rc = d_elems(c, f, fat, f->count, &fr); break;
		case HAKO_MSG_VARRAY: {
			const uint8_t *p = d_take(c, 4, 4, &fr, "sequence count");
			if (p == NULL) {
				return HAKO_EPROTO;
			}
			uint32_t n = hakoi_rd32(p);
			uint64_t need = (uint64_t)n * min_elem(f, 0);
			if (need > c->len - c->pos) {
				return dfail(c, &fr, "count %u needs at least %llu bytes, %zu left",
				             n, (unsigned long long)need, c->len - c->pos);
			}
			uint64_t start;
			rc = d_varray(c, f, fat, n, &start, &fr);
			if (rc == 0) {
				rc = d_elems(c, f, start, n, &fr);
			}
			break;
		}
		}
		if (rc != 0) {
			return rc;
		}
	}
	return 0;
}

int hako_cdr_decode(const hako_msg_type_t *type, const void *cdr, size_t len, void *pdu, size_t cap,
                    size_t *pdu_len, hako_error_t *err)
{
	if (type == NULL || cdr == NULL || pdu_len == NULL || (pdu == NULL && cap > 0)) {
		return hako_error_set(err, HAKO_EINVAL, NULL, 0, 0,
		                      "no type, CDR, length or buffer");
	}
	const uint8_t *in = cdr;
	if (len < HAKO_CDR_HEADER_SIZE) {
		return hako_error_set(err, HAKO_EPROTO, NULL, 0, 0,
		                      "%s: %zu bytes: shorter than the 4-byte CDR header",
		                      type->full_name, len);
	}
	if (in[0] != 0x00 || in[1] != 0x01) {
		const char *what = in[0] == 0 && in[1] == 0   ? "big-endian CDR"
		                   : in[0] == 0 && in[1] >= 2 ? "not plain XCDR1 (a parameter list "
		                                                "or XCDR2)"
		                                              : "not a CDR encapsulation";
		return hako_error_set(err, HAKO_EPROTO, NULL, 0, 0,
		                      "%s: CDR header %02x %02x: %s; only CDR_LE (00 01) is read",
		                      type->full_name, in[0], in[1], what);
	}
	if (type->size > HAKOI_PDU_MAX - HAKO_PDU_META_SIZE - 8) {
		return hako_error_set(err, HAKO_ETOOBIG, NULL, 0, 0, "%s is too large for a PDU",
		                      type->full_name);
	}
	uint32_t heap_off = HAKO_PDU_META_SIZE + hakoi_align8(type->size);
	struct dctx c = {
	    .in = in,
	    .len = len,
	    .pos = HAKO_CDR_HEADER_SIZE,
	    .out = pdu,
	    .cap = cap,
	    .writing = cap >= heap_off,
	    .used = heap_off,
	    .heap_off = heap_off,
	    .err = err,
	    .type = type,
	};
	if (c.writing) {
		memset(c.out, 0, heap_off);
	}
	int rc = d_struct(&c, type, HAKO_PDU_META_SIZE, NULL);
	if (rc == HAKO_ETOOBIG) {
		*pdu_len = SIZE_MAX;
		return rc;
	}
	if (rc != 0) {
		return rc;
	}
	*pdu_len = (size_t)c.used;
	if (!c.writing) {
		return hako_error_set(err, HAKO_ETOOBIG, NULL, 0, 0,
		                      "the PDU of %s needs %zu bytes, the buffer has %zu",
		                      type->full_name, (size_t)c.used, cap);
	}
	uint8_t *p = pdu;
	hakoi_wr32(p, HAKO_PDU_MAGIC);
	hakoi_wr32(p + 4, HAKO_PDU_VERSION);
	hakoi_wr32(p + 8, HAKO_PDU_META_SIZE);
	hakoi_wr32(p + 12, heap_off);
	hakoi_wr32(p + 16, (uint32_t)c.used);
	hakoi_wr32(p + 20, 0); /* epoch, flags, reserved */
	return 0;
}
