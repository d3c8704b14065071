/* PDU -> JSON, by hand: the fields in the order of the .msg, numbers that read back exactly
 * (pdu_json_number.c), and strings that are not UTF-8 kept byte for byte. */
#include "hako/pdu.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pdu_internal.h"
#include "pdu_json_internal.h"

struct out {
	char *buf;
	size_t len;
	size_t cap;
	int pretty;
	int depth;
	const uint8_t *pdu;
	hako_pdu_meta_t m;
	uint64_t heap_left; /* as in validate: arrays may not share heap bytes */
	hako_error_t *err;
};

static int grow(struct out *o, size_t need)
{
	size_t ncap = o->cap > 0 ? o->cap : 256;
	while (ncap - o->len < need) {
		if (ncap > SIZE_MAX / 2) {
			return HAKO_ENOMEM;
		}
		ncap *= 2;
	}
	char *nbuf = realloc(o->buf, ncap);
	if (nbuf == NULL) {
		return HAKO_ENOMEM;
	}
	o->buf = nbuf;
	o->cap = ncap;
	return 0;
}

/* Room for n more bytes; the emitters below write into o->buf + o->len directly. */
static inline int reserve(struct out *o, size_t n)
{
	return o->cap - o->len >= n ? 0 : grow(o, n);
}

/* Inline, so the short constant pieces (",", ":", "true") become plain stores. */
static inline __attribute__((always_inline)) int put(struct out *o, const char *s, size_t n)
{
	int rc = reserve(o, n);
	if (rc == 0) {
		memcpy(o->buf + o->len, s, n);
		o->len += n;
	}
	return rc;
}

/* A line break and the indentation of the current depth (pretty output only). */
static int newline(struct out *o)
{
	if (!o->pretty) {
		return 0;
	}
	size_t n = 1 + 2 * (size_t)o->depth;
	int rc = reserve(o, n);
	if (rc == 0) {
		o->buf[o->len] = '\n';
		memset(o->buf + o->len + 1, ' ', n - 1);
		o->len += n;
	}
	return rc;
}

static const char hex[] = "0123456789abcdef";

/* A JSON string of n bytes. A byte that is not part of valid UTF-8 is written as \udcXX (XX
 * its value: Python's "surrogateescape"), which read_string turns back into that byte. A lone
 * surrogate is still JSON (RFC 8259 section 8.2) and stands for no character, so no other
 * writer means anything else by it, and the text round-trips byte for byte. (\u00XX would
 * read back as the character U+00XX, two bytes of UTF-8: another string, maybe too long.) */
static int put_string(struct out *o, const uint8_t *s, size_t n)
{
	int rc = reserve(o, 6 * n + 2);
	if (rc != 0) {
		return rc;
	}
	char *d = o->buf + o->len;
	*d++ = '"';
	for (size_t i = 0; i < n;) {
		uint8_t c = s[i];
		if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
			*d++ = (char)c;
			i++;
			continue;
		}
		size_t k = c >= 0x80 ? hakoi_utf8_len(s + i, n - i) : 0;
		if (k > 0) {
			memcpy(d, s + i, k);
			d += k;
			i += k;
			continue;
		}
		*d++ = '\\';
		switch (c) {
		case '"': *d++ = '"'; break;
		case '\\': *d++ = '\\'; break;
		case '\b': *d++ = 'b'; break;
		case '\f': *d++ = 'f'; break;
		case '\n': *d++ = 'n'; break;
		case '\r': *d++ = 'r'; break;
		case '\t': *d++ = 't'; break;
		default:
			memcpy(d, c < 0x80 ? "u00" : "udc", 3);
			d[3] = hex[c >> 4];
			d[4] = hex[c & 15];
			d += 5;
			break;
		}
		i++;
	}
	*d++ = '"';
	o->len = (size_t)(d - o->buf);
	return 0;
}

/* Decimal digits of v ending at end; returns the first. */
static char *u64_digits(uint64_t v, char *end)
{
	do {
		*--end = (char)('0' + v % 10);
		v /= 10;
	} while (v != 0);
	return end;
}

static int put_u64(struct out *o, uint64_t v)
{
	char tmp[24];
	char *p = u64_digits(v, tmp + sizeof(tmp));
	return put(o, p, (size_t)(tmp + sizeof(tmp) - p));
}

static int put_i64(struct out *o, int64_t v)
{
	char tmp[24];
	uint64_t mag = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
	char *p = u64_digits(mag, tmp + sizeof(tmp));
	if (v < 0) {
		*--p = '-';
	}
	return put(o, p, (size_t)(tmp + sizeof(tmp) - p));
}

/* NaN and the infinities have no JSON number: they are the strings "nan", "inf", "-inf". */
static int put_nonfinite(struct out *o, double v)
{
	if (isnan(v)) {
		return put(o, "\"nan\"", 5);
	}
	return v > 0 ? put(o, "\"inf\"", 5) : put(o, "\"-inf\"", 6);
}

static int put_f64(struct out *o, double v)
{
	char buf[HAKOI_JSON_NUMBER_BUF];
	return isfinite(v) ? put(o, buf, hakoi_json_fmt_f64(v, buf)) : put_nonfinite(o, v);
}

static int put_f32(struct out *o, float v)
{
	char buf[HAKOI_JSON_NUMBER_BUF];
	return isfinite(v) ? put(o, buf, hakoi_json_fmt_f32(v, buf)) : put_nonfinite(o, v);
}

/* One value of a primitive kind at p. */
static int put_scalar(struct out *o, hako_msg_kind_t kind, const uint8_t *p)
{
	switch (kind) {
	case HAKO_MSG_BOOL: {
		int32_t v;
		memcpy(&v, p, sizeof(v));
		return v != 0 ? put(o, "true", 4) : put(o, "false", 5);
	}
	case HAKO_MSG_BYTE:
	case HAKO_MSG_CHAR:
	case HAKO_MSG_UINT8: return put_u64(o, *p);
	case HAKO_MSG_INT8: return put_i64(o, (int8_t)*p);
	case HAKO_MSG_INT16: {
		int16_t v;
		memcpy(&v, p, sizeof(v));
		return put_i64(o, v);
	}
	case HAKO_MSG_UINT16: {
		uint16_t v;
		memcpy(&v, p, sizeof(v));
		return put_u64(o, v);
	}
	case HAKO_MSG_INT32: {
		int32_t v;
		memcpy(&v, p, sizeof(v));
		return put_i64(o, v);
	}
	case HAKO_MSG_UINT32: {
		uint32_t v;
		memcpy(&v, p, sizeof(v));
		return put_u64(o, v);
	}
	case HAKO_MSG_INT64: {
		int64_t v;
		memcpy(&v, p, sizeof(v));
		return put_i64(o, v);
	}
	case HAKO_MSG_UINT64: {
		uint64_t v;
		memcpy(&v, p, sizeof(v));
		if (v > (uint64_t)INT64_MAX) {
			/* past what JSON readers (jansson included) take as an integer */
			char tmp[24];
			char *d = u64_digits(v, tmp + sizeof(tmp) - 1);
			*--d = '"';
			tmp[sizeof(tmp) - 1] = '"';
			return put(o, d, (size_t)(tmp + sizeof(tmp) - d));
		}
		return put_u64(o, v);
	}
	case HAKO_MSG_FLOAT32: {
		float v;
		memcpy(&v, p, sizeof(v));
		return put_f32(o, v);
	}
	case HAKO_MSG_FLOAT64: {
		double v;
		memcpy(&v, p, sizeof(v));
		return put_f64(o, v);
	}
	case HAKO_MSG_STRING: {
		const uint8_t *nul = memchr(p, 0, HAKO_MSG_STRING_SIZE);
		return put_string(o, p, nul != NULL ? (size_t)(nul - p) : HAKO_MSG_STRING_SIZE);
	}
	case HAKO_MSG_STRUCT: break;
	}
	return HAKO_EINVAL;
}

/* "0".."255" for byte arrays, the bulk of large PDUs (images, point clouds). */
static int put_bytes(struct out *o, const uint8_t *p, uint32_t count)
{
	const size_t sep = o->pretty ? 2 : 1;
	int rc = reserve(o, (size_t)count * (3 + sep));
	if (rc != 0) {
		return rc;
	}
	char *d = o->buf + o->len;
	for (uint32_t i = 0; i < count; i++) {
		unsigned v = p[i];
		if (i > 0) {
			*d++ = ',';
			if (sep == 2) {
				*d++ = ' ';
			}
		}
		if (v >= 100) {
			*d++ = (char)('0' + v / 100);
			*d++ = (char)('0' + v / 10 % 10);
		} else if (v >= 10) {
			*d++ = (char)('0' + v / 10);
		}
		*d++ = (char)('0' + v % 10);
	}
	o->len = (size_t)(d - o->buf);
	return 0;
}

static int put_struct(struct out *o, const hako_msg_type_t *type, uint32_t at,
                      const hakoi_pdu_frame_t *up);

/* count elements of f from byte at, as a JSON array. */
static int put_array(struct out *o, const hako_msg_field_t *f, uint32_t at, uint32_t count,
                     const hakoi_pdu_frame_t *fr)
{
	int rc = put(o, "[", 1);
	if (rc != 0 || count == 0) {
		return rc != 0 ? rc : put(o, "]", 1);
	}
	if (f->kind == HAKO_MSG_STRUCT) {
		o->depth++;
		for (uint32_t i = 0; i < count && rc == 0; i++) {
			hakoi_pdu_frame_t el = {fr, NULL, i};
			if (i > 0) {
				rc = put(o, ",", 1);
			}
			if (rc == 0 && (rc = newline(o)) == 0) {
				rc = put_struct(o, f->type, at + i * f->elem_size, &el);
			}
		}
		o->depth--;
		if (rc == 0) {
			rc = newline(o);
		}
	} else if (f->kind == HAKO_MSG_UINT8 || f->kind == HAKO_MSG_BYTE ||
	           f->kind == HAKO_MSG_CHAR) {
		rc = put_bytes(o, o->pdu + at, count);
	} else {
		for (uint32_t i = 0; i < count && rc == 0; i++) {
			if (i > 0) {
				rc = o->pretty ? put(o, ", ", 2) : put(o, ",", 1);
			}
			if (rc == 0) {
				rc = put_scalar(o, f->kind, o->pdu + at + i * f->elem_size);
			}
		}
	}
	return rc != 0 ? rc : put(o, "]", 1);
}

static int out_fail(struct out *o, const hakoi_pdu_frame_t *at, const char *what)
{
	char where[256];
	hakoi_pdu_path_format(at, where, sizeof(where));
	return hako_error_set(o->err, HAKO_EPROTO, NULL, 0, 0, "%s: %s", where, what);
}

static int put_field(struct out *o, const hako_msg_field_t *f, uint32_t at,
                     const hakoi_pdu_frame_t *fr)
{
	switch (f->form) {
	case HAKO_MSG_SINGLE:
		return f->kind == HAKO_MSG_STRUCT ? put_struct(o, f->type, at, fr)
		                                  : put_scalar(o, f->kind, o->pdu + at);
	case HAKO_MSG_ARRAY: return put_array(o, f, at, f->count, fr);
	case HAKO_MSG_VARRAY: {
		/* checked again: the PDU may sit in memory another process writes */
		char why[160];
		uint32_t start;
		uint32_t count;
		if (hakoi_pdu_varray_at(o->pdu, &o->m, at, f->elem_size, &start, &count, why,
		                        sizeof(why)) != 0) {
			return out_fail(o, fr, why);
		}
		uint64_t bytes = (uint64_t)count * f->elem_size;
		if (bytes > o->heap_left) {
			char what[96];
			snprintf(what, sizeof(what),
			         "variable arrays overlap (together more than the %u-byte heap)",
			         o->m.total_size - o->m.heap_off);
			return out_fail(o, fr, what);
		}
		o->heap_left -= bytes;
		return put_array(o, f, start, count, fr);
	}
	}
	return HAKO_EINVAL;
}

static int put_struct(struct out *o, const hako_msg_type_t *type, uint32_t at,
                      const hakoi_pdu_frame_t *up)
{
	int rc;
	if (type->field_count == 0) {
		return put(o, "{}", 2);
	}
	if ((rc = put(o, "{", 1)) != 0) {
		return rc;
	}
	o->depth++;
	for (size_t i = 0; i < type->field_count; i++) {
		const hako_msg_field_t *f = &type->fields[i];
		hakoi_pdu_frame_t fr = {up, f->name, 0};
		if ((i > 0 && (rc = put(o, ",", 1)) != 0) || (rc = newline(o)) != 0 ||
		    (rc = put_string(o, (const uint8_t *)f->name, strlen(f->name))) != 0 ||
		    (rc = o->pretty ? put(o, ": ", 2) : put(o, ":", 1)) != 0 ||
		    (rc = put_field(o, f, at + f->offset, &fr)) != 0) {
			return rc;
		}
	}
	o->depth--;
	if ((rc = newline(o)) != 0) {
		return rc;
	}
	return put(o, "}", 1);
}

int hako_pdu_to_json(const hako_msg_type_t *type, const void *pdu, size_t len, int flags,
                     char **out, hako_error_t *err)
{
	if (out == NULL || (flags & ~HAKO_PDU_JSON_PRETTY) != 0) {
		return hako_error_set(err, HAKO_EINVAL, NULL, 0, 0, "no output or unknown flags");
	}
	*out = NULL;
	int rc = hako_pdu_validate(type, pdu, len, err);
	if (rc != 0) {
		return rc;
	}
	struct out o = {.pretty = (flags & HAKO_PDU_JSON_PRETTY) != 0, .pdu = pdu, .err = err};
	char why[160];
	if ((rc = hakoi_pdu_meta_check(pdu, len, &o.m, why, sizeof(why))) != 0) {
		return hako_error_set(err, rc, NULL, 0, 0, "%s", why);
	}
	o.heap_left = o.m.total_size - o.m.heap_off;
	/* a byte of PDU is about 4 bytes of JSON at most, except for strings and escapes */
	if ((rc = grow(&o, 64 + (size_t)o.m.total_size * 4)) == 0 &&
	    (rc = put_struct(&o, type, HAKO_PDU_META_SIZE, NULL)) == 0) {
		rc = put(&o, "", 1);
	}
	if (rc != 0) {
		free(o.buf);
		if (rc == HAKO_ENOMEM) {
			hako_error_set(err, rc, NULL, 0, 0, "out of memory");
		}
		return rc;
	}
	*out = o.buf;
	return 0;
}
