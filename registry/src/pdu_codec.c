/* The binary codec: validate a whole PDU, bounds-checked access to variable arrays, and the
 * writer that lays a PDU out the way Hakoniwa's converters do. */
#include "hako/pdu.h"

#include "pdu_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---- paths ---- */

static size_t path_put(const hakoi_pdu_frame_t *f, char *buf, size_t len)
{
	if (f == NULL) {
		return 0;
	}
	size_t used = path_put(f->up, buf, len);
	if (used >= len) {
		return used;
	}
	int n = f->name != NULL
	            ? snprintf(buf + used, len - used, "%s%s", used > 0 ? "." : "", f->name)
	            : snprintf(buf + used, len - used, "[%zu]", f->index);
	return n < 0 ? used : used + (size_t)n;
}

void hakoi_pdu_path_format(const hakoi_pdu_frame_t *f, char *buf, size_t len)
{
	if (buf == NULL || len == 0) {
		return;
	}
	buf[0] = '\0';
	path_put(f, buf, len);
}

size_t hakoi_pdu_path_depth(const hakoi_pdu_frame_t *f)
{
	size_t n = 0;
	for (; f != NULL; f = f->up) {
		n++;
	}
	return n;
}

/* ---- checks shared with the JSON conversion ---- */

int hakoi_pdu_varray_at(const uint8_t *pdu, const hako_pdu_meta_t *m, uint32_t ref_off,
                        uint32_t elem_size, uint32_t *start, uint32_t *count, char *why,
                        size_t why_len)
{
	int32_t n = hakoi_rd32s(pdu + ref_off);
	int32_t off = hakoi_rd32s(pdu + ref_off + 4);
	if (n < 0) {
		snprintf(why, why_len, "negative length %d", n);
		return HAKO_EPROTO;
	}
	if (off < 0) {
		snprintf(why, why_len, "negative heap offset %d", off);
		return HAKO_EPROTO;
	}
	uint64_t bytes = (uint64_t)n * elem_size;
	if (bytes > (uint64_t)INT32_MAX) {
		snprintf(why, why_len, "length %d x %u overflows int32", n, elem_size);
		return HAKO_EPROTO;
	}
	uint64_t first = (uint64_t)m->heap_off + (uint64_t)off;
	if (first + bytes > m->total_size) {
		snprintf(why, why_len,
		         "length %d x %u at heap offset %d runs past the end (total size %u)", n,
		         elem_size, off, m->total_size);
		return HAKO_EPROTO;
	}
	*start = (uint32_t)first;
	*count = (uint32_t)n;
	return 0;
}

int hakoi_pdu_type_needs_walk(const hako_msg_type_t *type)
{
	if (type->has_varray) {
		return 1;
	}
	/* a string is a 128-byte slot in place: a smaller type has none (Twist, Pose, ...), and
	 * validating it is the meta check alone */
	if (type->size < HAKO_MSG_STRING_SIZE) {
		return 0;
	}
	for (size_t i = 0; i < type->field_count; i++) {
		const hako_msg_field_t *f = &type->fields[i];
		if (f->kind == HAKO_MSG_STRING || f->form == HAKO_MSG_VARRAY ||
		    (f->kind == HAKO_MSG_STRUCT && hakoi_pdu_type_needs_walk(f->type))) {
			return 1;
		}
	}
	return 0;
}

/* ---- validate ---- */

struct vctx {
	const uint8_t *pdu;
	hako_pdu_meta_t m;
	uint64_t heap_left; /* heap bytes no variable array has claimed yet */
	hako_error_t *err;
};

static int vfail(const struct vctx *c, const hakoi_pdu_frame_t *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int vfail(const struct vctx *c, const hakoi_pdu_frame_t *at, const char *fmt, ...)
{
	char where[256];
	char what[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	hakoi_pdu_path_format(at, where, sizeof(where));
	return hako_error_set(c->err, HAKO_EPROTO, NULL, 0, 0, "%s: %s",
	                      where[0] != '\0' ? where : "top level", what);
}

static int check_string(const struct vctx *c, uint32_t at, const hakoi_pdu_frame_t *f)
{
	if (memchr(c->pdu + at, 0, HAKO_MSG_STRING_SIZE) == NULL) {
		return vfail(c, f, "string not NUL-terminated in its %d-byte slot",
		             HAKO_MSG_STRING_SIZE);
	}
	return 0;
}

static int walk_struct(struct vctx *c, const hako_msg_type_t *type, uint32_t at,
                       const hakoi_pdu_frame_t *up);

/* count elements of field f from byte `at`; only strings and structs need a look. */
static int walk_elements(struct vctx *c, const hako_msg_field_t *f, uint32_t at, uint32_t count,
                         const hakoi_pdu_frame_t *fr)
{
	if (f->kind == HAKO_MSG_STRING) {
		for (uint32_t i = 0; i < count; i++) {
			hakoi_pdu_frame_t el = {fr, NULL, i};
			int rc = check_string(c, at + i * HAKO_MSG_STRING_SIZE, &el);
			if (rc != 0) {
				return rc;
			}
		}
	} else if (f->kind == HAKO_MSG_STRUCT && hakoi_pdu_type_needs_walk(f->type)) {
		for (uint32_t i = 0; i < count; i++) {
			hakoi_pdu_frame_t el = {fr, NULL, i};
			int rc = walk_struct(c, f->type, at + i * f->elem_size, &el);
			if (rc != 0) {
				return rc;
			}
		}
	}
	return 0;
}

static int walk_struct(struct vctx *c, const hako_msg_type_t *type, uint32_t at,
                       const hakoi_pdu_frame_t *up)
{
	for (size_t i = 0; i < type->field_count; i++) {
		const hako_msg_field_t *f = &type->fields[i];
		hakoi_pdu_frame_t fr = {up, f->name, 0};
		uint32_t fat = at + f->offset;
		int rc = 0;
		switch (f->form) {
		case HAKO_MSG_SINGLE:
			if (f->kind == HAKO_MSG_STRING) {
				rc = check_string(c, fat, &fr);
			} else if (f->kind == HAKO_MSG_STRUCT &&
			           hakoi_pdu_type_needs_walk(f->type)) {
				rc = walk_struct(c, f->type, fat, &fr);
			}
			break;
		case HAKO_MSG_ARRAY: rc = walk_elements(c, f, fat, f->count, &fr); break;
		case HAKO_MSG_VARRAY: {
			char why[160];
			uint32_t start;
			uint32_t count;
			if (hakoi_pdu_varray_at(c->pdu, &c->m, fat, f->elem_size, &start, &count,
			                        why, sizeof(why)) != 0) {
				return vfail(c, &fr, "%s", why);
			}
			/* Hakoniwa's writers give every array its own heap bytes; arrays that share
			 * bytes could make the work (and the JSON) grow with the square of the
			 * size. */
			uint64_t bytes = (uint64_t)count * f->elem_size;
			if (bytes > c->heap_left) {
				return vfail(c, &fr,
				             "variable arrays overlap (together more than the "
				             "%u-byte heap)",
				             c->m.total_size - c->m.heap_off);
			}
			c->heap_left -= bytes;
			rc = walk_elements(c, f, start, count, &fr);
			break;
		}
		}
		if (rc != 0) {
			return rc;
		}
	}
	return 0;
}

/* Every field that needs a look at the bytes; apart from validate so its common path stays a
 * leaf function. */
static __attribute__((noinline)) int validate_walk(const hako_msg_type_t *type, const void *pdu,
                                                   const hako_pdu_meta_t *m, hako_error_t *err)
{
	if (!hakoi_pdu_type_needs_walk(type)) {
		return 0;
	}
	struct vctx c = {.pdu = pdu, .m = *m, .heap_left = m->total_size - m->heap_off, .err = err};
	return walk_struct(&c, type, HAKO_PDU_META_SIZE, NULL);
}

/* Why validate refuses a PDU whose meta failed the fast check: the slow path, kept apart so
 * the common path carries no message buffers. */
static __attribute__((noinline)) int validate_refusal(const hako_msg_type_t *type, const void *pdu,
                                                      size_t len, hako_error_t *err)
{
	char why[160];
	hako_pdu_meta_t m;
	if (type == NULL || pdu == NULL) {
		return hako_error_set(err, HAKO_EINVAL, NULL, 0, 0, "no type or no PDU");
	}
	int rc = hakoi_pdu_meta_check(pdu, len, &m, why, sizeof(why));
	if (rc != 0) {
		return hako_error_set(err, rc, NULL, 0, 0, "%s", why);
	}
	return hako_error_set(err, HAKO_EPROTO, NULL, 0, 0,
	                      "heap offset %u is inside the base of %s (its fields end at %u)",
	                      m.heap_off, type->full_name,
	                      HAKO_PDU_META_SIZE + hako_msg_data_end(type));
}

int hako_pdu_validate(const hako_msg_type_t *type, const void *pdu, size_t len, hako_error_t *err)
{
	hako_pdu_meta_t m;
	/* Any heap offset past the base's fields: the C++ writers put it at 24 + size rounded up
	 * to 8, the Python one at 24 + where the last field ends, and the readers of both follow
	 * it. A heap over the fields would let an array and a field share bytes. */
	if (type == NULL || hakoi_pdu_meta_fast(pdu, len, &m) != 0 ||
	    m.heap_off < HAKO_PDU_META_SIZE + (uint64_t)hako_msg_data_end(type)) {
		return validate_refusal(type, pdu, len, err);
	}
	/* fixed types without strings (Twist, Pose, ...) end here */
	if (!type->has_varray && type->size < HAKO_MSG_STRING_SIZE) {
		return 0;
	}
	return validate_walk(type, pdu, &m, err);
}

/* ---- variable arrays ---- */

const void *hako_pdu_varray(const void *pdu, size_t len, const void *ref, uint32_t elem_size,
                            uint32_t *count)
{
	hako_pdu_meta_t m;
	uint32_t start;
	uint32_t n;
	if (count != NULL) {
		*count = 0;
	}
	if (count == NULL || ref == NULL || hakoi_pdu_meta_fast(pdu, len, &m) != 0) {
		return NULL;
	}
	/* integers, not pointers, so a ref into another object compares without UB */
	uintptr_t base = (uintptr_t)pdu;
	uintptr_t r = (uintptr_t)ref;
	if (r < base + HAKO_PDU_META_SIZE || r - base > m.total_size - HAKO_MSG_VARRAY_SIZE) {
		return NULL;
	}
	if (hakoi_pdu_varray_at(pdu, &m, (uint32_t)(r - base), elem_size, &start, &n, NULL, 0) !=
	    0) {
		return NULL;
	}
	*count = n;
	return (const uint8_t *)pdu + start;
}

/* ---- writer ---- */

/* n (a multiple of 8) zero bytes; small bases in place: a memset call costs as much as the
 * rest of a Twist's encoding. */
static void zero_base(uint8_t *p, size_t n)
{
	if (n > 128) {
		memset(p, 0, n);
		return;
	}
	const uint64_t z = 0;
	for (size_t i = 0; i < n; i += 8) {
		memcpy(p + i, &z, sizeof(z));
	}
}

int hako_pdu_writer_init(hako_pdu_writer_t *w, const hako_msg_type_t *type, void *buf, size_t cap)
{
	if (w == NULL) {
		return HAKO_EINVAL;
	}
	w->buf = buf;
	w->cap = cap;
	w->heap_off = 0;
	w->used = 0;
	w->error = 0;
	w->needed = 0;
	if (type == NULL || (buf == NULL && cap > 0)) {
		return w->error = HAKO_EINVAL;
	}
	if (type->size > HAKOI_PDU_MAX - HAKO_PDU_META_SIZE - 8) {
		w->needed = SIZE_MAX;
		return w->error = HAKO_ETOOBIG;
	}
	uint32_t heap_off = HAKO_PDU_META_SIZE + hakoi_align8(type->size);
	w->heap_off = heap_off;
	w->needed = heap_off;
	if (cap < heap_off) {
		return w->error = HAKO_ETOOBIG;
	}
	uint8_t *p = buf;
	hakoi_wr32(p, HAKO_PDU_MAGIC);
	hakoi_wr32(p + 4, HAKO_PDU_VERSION);
	hakoi_wr32(p + 8, HAKO_PDU_META_SIZE);
	hakoi_wr32(p + 12, heap_off);
	hakoi_wr32(p + 16, heap_off);
	hakoi_wr32(p + 20, 0); /* epoch, flags, reserved */
	zero_base(p + HAKO_PDU_META_SIZE, heap_off - HAKO_PDU_META_SIZE);
	w->used = heap_off;
	return 0;
}

void *hako_pdu_writer_varray(hako_pdu_writer_t *w, void *ref, uint32_t count, uint32_t elem_size)
{
	if (w == NULL) {
		return NULL;
	}
	uint64_t bytes = (uint64_t)count * elem_size;
	if (w->needed != SIZE_MAX) {
		if (count > (uint32_t)INT32_MAX || bytes > HAKOI_PDU_MAX - w->needed) {
			w->needed = SIZE_MAX;
			if (w->error == 0) {
				w->error = HAKO_ETOOBIG;
			}
		} else {
			w->needed += (size_t)bytes;
		}
	}
	if (w->error != 0) {
		return NULL;
	}
	uintptr_t base = (uintptr_t)w->buf;
	uintptr_t r = (uintptr_t)ref;
	if (ref == NULL || r < base + HAKO_PDU_META_SIZE ||
	    r - base > (uintptr_t)w->used - HAKO_MSG_VARRAY_SIZE) {
		w->error = HAKO_EINVAL;
		return NULL;
	}
	if (bytes > w->cap - w->used) {
		w->error = HAKO_ETOOBIG;
		return NULL;
	}
	uint8_t *p = w->buf + w->used;
	memset(p, 0, (size_t)bytes);
	hakoi_wr32((uint8_t *)ref, count);
	hakoi_wr32((uint8_t *)ref + 4, w->used - w->heap_off);
	w->used += (uint32_t)bytes;
	return p;
}

int hako_pdu_writer_finish(hako_pdu_writer_t *w, size_t *len)
{
	if (w == NULL) {
		return HAKO_EINVAL;
	}
	if (w->error == 0) {
		hakoi_wr32(w->buf + 16, w->used);
	}
	if (len != NULL) {
		*len = w->needed;
	}
	return w->error;
}
