/* JSON -> PDU, by hand. */
#include "hako/pdu.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pdu_internal.h"
#include "pdu_json_internal.h"

/* A parser driven by the type: each value is read as what the field needs, straight into the
 * PDU, so no tree is built (jansson's tree costs more than the whole conversion). The PDU is
 * built in a scratch buffer and copied out only when it is complete, so the caller's buffer is
 * not touched on error. Recursion follows the type, never the text. */
struct in {
	const char *start;
	const char *p;
	const char *end;
	uint8_t *b; /* the PDU being built */
	size_t cap;
	size_t used; /* meta + base + heap so far */
	uint32_t heap_off;
	hako_error_t *err;
};

static const char *kind_name(hako_msg_kind_t kind)
{
	return hako_msg_kind_name(kind);
}

/* Line and column (1-based; columns count UTF-8 characters, as jansson's) of at. */
static void locate(const struct in *in, const char *at, int *line, int *column)
{
	*line = 1;
	*column = 1;
	for (const char *q = in->start; q < at && q < in->end; q++) {
		if (*q == '\n') {
			(*line)++;
			*column = 1;
		} else if (((unsigned char)*q & 0xC0) != 0x80) {
			(*column)++;
		}
	}
}

/* The value at `at` (path fr) is refused. */
static int in_fail(const struct in *in, const char *at, const hakoi_pdu_frame_t *fr,
                   const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int in_fail(const struct in *in, const char *at, const hakoi_pdu_frame_t *fr,
                   const char *fmt, ...)
{
	char where[256];
	char what[320];
	int line;
	int column;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	hakoi_pdu_path_format(fr, where, sizeof(where));
	locate(in, at, &line, &column);
	return hako_error_set(in->err, HAKO_ECONFIG, NULL, line, column, "%s: %s",
	                      where[0] != '\0' ? where : "top level", what);
}

/* The text is not JSON (or ends early) at `at`. */
static int syntax(const struct in *in, const char *at, const char *what)
{
	int line;
	int column;
	locate(in, at, &line, &column);
	return hako_error_set(in->err, HAKO_ECONFIG, NULL, line, column, "invalid JSON: %s",
	                      at >= in->end ? "unexpected end of input" : what);
}

static void skip_ws(struct in *in)
{
	while (in->p < in->end &&
	       (*in->p == ' ' || *in->p == '\n' || *in->p == '\r' || *in->p == '\t')) {
		in->p++;
	}
}

static int peek(const struct in *in)
{
	return in->p < in->end ? (unsigned char)*in->p : -1;
}

/* n more zeroed bytes at the end of the PDU; their offset in *at. */
static int in_alloc(struct in *in, uint64_t n, size_t *at)
{
	if (n > HAKOI_PDU_MAX - in->used) {
		return hako_error_set(in->err, HAKO_ETOOBIG, NULL, 0, 0,
		                      "the PDU would be larger than %u bytes", HAKOI_PDU_MAX);
	}
	if (in->cap - in->used < n) {
		size_t ncap = in->cap;
		while (ncap - in->used < n) {
			ncap *= 2;
		}
		if (ncap > HAKOI_PDU_MAX) {
			ncap = HAKOI_PDU_MAX; /* still room for n: checked above */
		}
		uint8_t *nb = realloc(in->b, ncap);
		if (nb == NULL) {
			return hako_error_set(in->err, HAKO_ENOMEM, NULL, 0, 0, "out of memory");
		}
		in->b = nb;
		in->cap = ncap;
	}
	memset(in->b + in->used, 0, (size_t)n);
	*at = in->used;
	in->used += (size_t)n;
	return 0;
}

/* ---- strings ---- */

/* The string at in->p (at its '"'), unescaped into out (cap bytes, not NUL-terminated);
 * *n = its whole length, also past cap. */
static int read_string(struct in *in, char *out, size_t cap, size_t *n, const hakoi_pdu_frame_t *fr)
{
	const char *q = in->p + 1;
	size_t len = 0;
	for (;;) {
		/* the plain run up to the next quote, backslash or control character */
		const char *run = q;
		while (q < in->end && (unsigned char)*q >= 0x20 && *q != '"' && *q != '\\' &&
		       (unsigned char)*q < 0x80) {
			q++;
		}
		if (q > run) {
			size_t k = (size_t)(q - run);
			if (len < cap) {
				memcpy(out + len, run, k < cap - len ? k : cap - len);
			}
			len += k;
		}
		if (q >= in->end) {
			return syntax(in, q, "");
		}
		unsigned char c = (unsigned char)*q;
		char buf[4];
		size_t k;
		if (c == '"') {
			break;
		}
		if (c < 0x20) {
			return syntax(in, q, "control character in a string");
		}
		if (c >= 0x80) {
			k = hakoi_utf8_len((const uint8_t *)q, (size_t)(in->end - q));
			if (k == 0) {
				return syntax(in, q, "invalid UTF-8 in a string");
			}
			memcpy(buf, q, k);
			q += k;
		} else {
			/* a backslash */
			if (q + 1 >= in->end) {
				return syntax(in, in->end, "");
			}
			const char *esc = q;
			k = 1;
			switch (q[1]) {
			case '"': buf[0] = '"'; break;
			case '\\': buf[0] = '\\'; break;
			case '/': buf[0] = '/'; break;
			case 'b': buf[0] = '\b'; break;
			case 'f': buf[0] = '\f'; break;
			case 'n': buf[0] = '\n'; break;
			case 'r': buf[0] = '\r'; break;
			case 't': buf[0] = '\t'; break;
			case 'u': {
				unsigned cp = 0;
				const char *h = q + 2;
				for (int i = 0; i < 4; i++, h++) {
					int d = h >= in->end             ? -1
					        : *h >= '0' && *h <= '9' ? *h - '0'
					        : (*h | 0x20) >= 'a' && (*h | 0x20) <= 'f'
					            ? (*h | 0x20) - 'a' + 10
					            : -1;
					if (d < 0) {
						return syntax(in, esc, "invalid \\u escape");
					}
					cp = cp << 4 | (unsigned)d;
				}
				q += 4;
				if (cp >= 0xDC80 && cp <= 0xDCFF) {
					/* a byte that is not UTF-8, as put_string writes it */
					buf[0] = (char)(cp & 0xFF);
					q += 2;
					goto append;
				}
				if (cp >= 0xDC00 && cp <= 0xDFFF) {
					return syntax(in, esc,
					              "invalid \\u escape (lone surrogate)");
				}
				if (cp >= 0xD800 && cp <= 0xDBFF) {
					unsigned lo = 0;
					if (in->end - h < 6 || h[0] != '\\' || h[1] != 'u') {
						return syntax(
						    in, esc, "invalid \\u escape (lone surrogate)");
					}
					for (int i = 2; i < 6; i++) {
						int ch = h[i] | 0x20;
						int d = h[i] >= '0' && h[i] <= '9' ? h[i] - '0'
						        : ch >= 'a' && ch <= 'f'   ? ch - 'a' + 10
						                                   : -1;
						if (d < 0) {
							return syntax(in, esc,
							              "invalid \\u escape");
						}
						lo = lo << 4 | (unsigned)d;
					}
					if (lo < 0xDC00 || lo > 0xDFFF) {
						return syntax(
						    in, esc, "invalid \\u escape (lone surrogate)");
					}
					cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
					q += 6;
				}
				if (cp == 0) {
					return in_fail(in, in->p, fr,
					               "\\u0000 cannot be in a string");
				}
				if (cp < 0x80) {
					buf[0] = (char)cp;
				} else if (cp < 0x800) {
					buf[0] = (char)(0xC0 | cp >> 6);
					buf[1] = (char)(0x80 | (cp & 0x3F));
					k = 2;
				} else if (cp < 0x10000) {
					buf[0] = (char)(0xE0 | cp >> 12);
					buf[1] = (char)(0x80 | (cp >> 6 & 0x3F));
					buf[2] = (char)(0x80 | (cp & 0x3F));
					k = 3;
				} else {
					buf[0] = (char)(0xF0 | cp >> 18);
					buf[1] = (char)(0x80 | (cp >> 12 & 0x3F));
					buf[2] = (char)(0x80 | (cp >> 6 & 0x3F));
					buf[3] = (char)(0x80 | (cp & 0x3F));
					k = 4;
				}
				break;
			}
			default: return syntax(in, esc, "invalid escape in a string");
			}
			q += 2;
		}
	append:
		for (size_t i = 0; i < k; i++, len++) {
			if (len < cap) {
				out[len] = buf[i];
			}
		}
	}
	in->p = q + 1;
	*n = len;
	return 0;
}

/* ---- numbers ---- */

/* Limits of the integer kinds: signed ones in [smin, smax], unsigned ones in [0, umax]. */
static int int_limits(hako_msg_kind_t kind, int64_t *smin, int64_t *smax, uint64_t *umax)
{
	*smin = 0;
	*smax = 0;
	*umax = 0;
	switch (kind) {
	case HAKO_MSG_BYTE:
	case HAKO_MSG_CHAR:
	case HAKO_MSG_UINT8: *umax = UINT8_MAX; return 0;
	case HAKO_MSG_UINT16: *umax = UINT16_MAX; return 0;
	case HAKO_MSG_UINT32: *umax = UINT32_MAX; return 0;
	case HAKO_MSG_UINT64: *umax = UINT64_MAX; return 0;
	case HAKO_MSG_INT8: *smin = INT8_MIN, *smax = INT8_MAX; return 1;
	case HAKO_MSG_INT16: *smin = INT16_MIN, *smax = INT16_MAX; return 1;
	case HAKO_MSG_INT32: *smin = INT32_MIN, *smax = INT32_MAX; return 1;
	default: *smin = INT64_MIN, *smax = INT64_MAX; return 1;
	}
}

static void store_int(hako_msg_kind_t kind, uint8_t *dst, uint64_t bits)
{
	uint16_t b16 = (uint16_t)bits;
	uint32_t b32 = (uint32_t)bits;
	switch (kind) {
	case HAKO_MSG_INT16:
	case HAKO_MSG_UINT16: memcpy(dst, &b16, 2); break;
	case HAKO_MSG_INT32:
	case HAKO_MSG_UINT32: memcpy(dst, &b32, 4); break;
	case HAKO_MSG_INT64:
	case HAKO_MSG_UINT64: memcpy(dst, &bits, 8); break;
	default: *dst = (uint8_t)bits; break;
	}
}

/* An integer kind: a JSON integer, a real with an integral value, or (uint64 only, as
 * hako_pdu_to_json writes values past INT64_MAX) a string of decimal digits. */
static int read_int(struct in *in, hako_msg_kind_t kind, size_t at, const hakoi_pdu_frame_t *fr)
{
	int64_t smin;
	int64_t smax;
	uint64_t umax;
	int is_signed = int_limits(kind, &smin, &smax, &umax);
	const char *v = in->p;
	hakoi_json_number_t n;
	char text[64];
	uint64_t bits;
	int in_range;
	if (peek(in) == '"' && kind == HAKO_MSG_UINT64) {
		char s[32];
		size_t len;
		int rc = read_string(in, s, sizeof(s) - 1, &len, fr);
		if (rc != 0) {
			return rc;
		}
		size_t i = 0;
		while (i < len && i < sizeof(s) - 1 && s[i] >= '0' && s[i] <= '9') {
			i++;
		}
		if (len == 0 || i != len) {
			return in_fail(in, v, fr, "must be an integer (uint64)");
		}
		s[len] = '\0';
		errno = 0;
		bits = strtoull(s, NULL, 10);
		in_range = errno != ERANGE;
		snprintf(text, sizeof(text), "\"%s\"", s);
	} else {
		if (hakoi_json_scan_number(in->p, in->end, &n) != 0) {
			return in_fail(in, v, fr, "must be an integer (%s)", kind_name(kind));
		}
		in->p = n.end;
		hakoi_json_number_text(&n, text, sizeof(text));
		if (n.integer) {
			if (n.big) {
				in_range = 0;
				bits = 0;
			} else if (is_signed) {
				in_range = n.neg ? n.mag <= (uint64_t)0 - (uint64_t)smin
				                 : n.mag <= (uint64_t)smax;
				bits = n.neg ? (uint64_t)0 - n.mag : n.mag;
			} else {
				in_range = n.mag <= umax && (!n.neg || n.mag == 0);
				bits = n.mag;
			}
		} else {
			int overflow;
			double d = hakoi_json_number_value(&n, &overflow);
			if (overflow < 0) {
				return hako_error_set(in->err, HAKO_ENOMEM, NULL, 0, 0,
				                      "out of memory");
			}
			if (!overflow && !hakoi_json_is_integral(d)) {
				return in_fail(in, v, fr, "must be an integer (%s)",
				               kind_name(kind));
			}
			/* compare in double: 2^63 and 2^64 are exact there */
			if (is_signed) {
				in_range = !overflow && d >= -9223372036854775808.0 &&
				           d < 9223372036854775808.0 && (int64_t)d >= smin &&
				           (int64_t)d <= smax;
				bits = in_range ? (uint64_t)(int64_t)d : 0;
			} else {
				in_range = !overflow && d >= 0 && d < 18446744073709551616.0 &&
				           (uint64_t)d <= umax;
				bits = in_range ? (uint64_t)d : 0;
			}
		}
	}
	if (!in_range) {
		return in_fail(in, v, fr, "%s is out of range for %s", text, kind_name(kind));
	}
	store_int(kind, in->b + at, bits);
	return 0;
}

static int read_float(struct in *in, hako_msg_kind_t kind, size_t at, const hakoi_pdu_frame_t *fr)
{
	const char *v = in->p;
	double d;
	hakoi_json_number_t n;
	if (peek(in) == '"') {
		char s[8];
		size_t len;
		int rc = read_string(in, s, sizeof(s), &len, fr);
		if (rc != 0) {
			return rc;
		}
		if (len == 3 && memcmp(s, "nan", 3) == 0) {
			d = NAN;
		} else if (len == 3 && memcmp(s, "inf", 3) == 0) {
			d = INFINITY;
		} else if (len == 4 && memcmp(s, "-inf", 4) == 0) {
			d = -INFINITY;
		} else {
			return in_fail(in, v, fr,
			               "must be a number (or \"nan\", \"inf\", \"-inf\")");
		}
	} else {
		int overflow;
		if (hakoi_json_scan_number(in->p, in->end, &n) != 0) {
			return in_fail(in, v, fr,
			               "must be a number (or \"nan\", \"inf\", \"-inf\")");
		}
		in->p = n.end;
		d = hakoi_json_number_value(&n, &overflow);
		if (overflow < 0) {
			return hako_error_set(in->err, HAKO_ENOMEM, NULL, 0, 0, "out of memory");
		}
		if (overflow || (kind == HAKO_MSG_FLOAT32 && isinf((float)d))) {
			char text[64];
			hakoi_json_number_text(&n, text, sizeof(text));
			return in_fail(in, v, fr, "%s is out of range for %s", text,
			               kind_name(kind));
		}
	}
	if (kind == HAKO_MSG_FLOAT32) {
		float f = (float)d;
		memcpy(in->b + at, &f, sizeof(f));
	} else {
		memcpy(in->b + at, &d, sizeof(d));
	}
	return 0;
}

static int read_scalar(struct in *in, hako_msg_kind_t kind, size_t at, const hakoi_pdu_frame_t *fr)
{
	switch (kind) {
	case HAKO_MSG_BOOL: {
		int32_t b;
		if (in->end - in->p >= 4 && memcmp(in->p, "true", 4) == 0) {
			b = 1;
			in->p += 4;
		} else if (in->end - in->p >= 5 && memcmp(in->p, "false", 5) == 0) {
			b = 0;
			in->p += 5;
		} else {
			return in_fail(in, in->p, fr, "must be true or false");
		}
		memcpy(in->b + at, &b, sizeof(b));
		return 0;
	}
	case HAKO_MSG_FLOAT32:
	case HAKO_MSG_FLOAT64: return read_float(in, kind, at, fr);
	case HAKO_MSG_STRING: {
		const char *v = in->p;
		size_t len;
		if (peek(in) != '"') {
			return in_fail(in, v, fr, "must be a string");
		}
		/* straight into the slot, zeroed when it was allocated */
		int rc = read_string(in, (char *)in->b + at, HAKO_MSG_STRING_SIZE - 1, &len, fr);
		if (rc != 0) {
			return rc;
		}
		if (len >= HAKO_MSG_STRING_SIZE) {
			return in_fail(in, v, fr, "is %zu bytes long; the limit is %d", len,
			               HAKO_MSG_STRING_SIZE - 1);
		}
		return 0;
	}
	case HAKO_MSG_STRUCT: return HAKO_EINVAL;
	default: return read_int(in, kind, at, fr);
	}
}

/* uint8 / byte / char elements, the bulk of big PDUs: digits straight to bytes. The general
 * path takes over for anything but a plain integer up to 255. */
static int read_byte_fast(struct in *in, size_t at)
{
	const char *q = in->p;
	unsigned v = 0;
	int k = 0;
	while (k < 4 && q + k < in->end && q[k] >= '0' && q[k] <= '9') {
		v = v * 10 + (unsigned)(q[k] - '0');
		k++;
	}
	if (k == 0 || k > 3 || v > 255 || (k > 1 && q[0] == '0') ||
	    (q + k < in->end && (q[k] == '.' || q[k] == 'e' || q[k] == 'E'))) {
		return -1;
	}
	in->b[at] = (uint8_t)v;
	in->p = q + k;
	return 0;
}

/* ---- arrays and objects ---- */

static int read_struct(struct in *in, const hako_msg_type_t *type, size_t at,
                       const hakoi_pdu_frame_t *up);

static int read_element(struct in *in, const hako_msg_field_t *f, size_t at,
                        const hakoi_pdu_frame_t *fr)
{
	skip_ws(in);
	if (in->p >= in->end) {
		return syntax(in, in->p, "");
	}
	if (f->kind == HAKO_MSG_STRUCT) {
		return read_struct(in, f->type, at, fr);
	}
	if ((f->kind == HAKO_MSG_UINT8 || f->kind == HAKO_MSG_BYTE || f->kind == HAKO_MSG_CHAR) &&
	    read_byte_fast(in, at) == 0) {
		return 0;
	}
	return read_scalar(in, f->kind, at, fr);
}

/* After an element: ',' (1) or ']' (0). */
static int next_element(struct in *in)
{
	skip_ws(in);
	int c = peek(in);
	if (c == ',') {
		in->p++;
		return 1;
	}
	if (c == ']') {
		in->p++;
		return 0;
	}
	return syntax(in, in->p, "expected ',' or ']'");
}

/* Elements of the array at in->p (its '['), found by a scan of the text that only matches
 * brackets and strings; -1 if it does not end. */
static long count_elements(const struct in *in)
{
	const char *q = in->p + 1;
	long n = 0;
	int depth = 0;
	int empty = 1;
	for (; q < in->end; q++) {
		char c = *q;
		if (c == ' ' || c == '\n' || c == '\r' || c == '\t') {
			continue;
		}
		if (c == '"') {
			for (q++; q < in->end && *q != '"'; q++) {
				if (*q == '\\') {
					q++;
				}
			}
			if (q >= in->end) {
				return -1;
			}
		} else if (c == '[' || c == '{') {
			depth++;
		} else if (c == ']' || c == '}') {
			if (depth == 0) {
				return empty ? 0 : n + 1;
			}
			depth--;
		} else if (c == ',' && depth == 0) {
			n++;
		}
		empty = 0;
	}
	return -1;
}

/* A variable array somewhere in the type: its elements allocate heap of their own. */
static int type_allocates(const hako_msg_type_t *type)
{
	if (type->has_varray) {
		return 1;
	}
	for (size_t i = 0; i < type->field_count; i++) {
		const hako_msg_field_t *f = &type->fields[i];
		if (f->form == HAKO_MSG_VARRAY ||
		    (f->kind == HAKO_MSG_STRUCT && type_allocates(f->type))) {
			return 1;
		}
	}
	return 0;
}

/* A fixed array (in place at `at`) or a variable array (reference at `at`, elements at the
 * end of the heap). Elements that allocate heap of their own need all their fixed parts
 * first (Hakoniwa's order), so their count is looked up before they are read; all other
 * elements are appended as they come. */
static int read_array(struct in *in, const hako_msg_field_t *f, size_t at,
                      const hakoi_pdu_frame_t *fr)
{
	const char *v = in->p;
	if (peek(in) != '[') {
		return in_fail(in, v, fr, "must be an array");
	}
	int fixed = f->form == HAKO_MSG_ARRAY;
	long want = -1; /* elements known in advance */
	size_t first = at;
	if (fixed) {
		want = (long)f->count;
	} else if (f->kind == HAKO_MSG_STRUCT && type_allocates(f->type)) {
		want = count_elements(in);
		if (want < 0) {
			return syntax(in, in->end, "");
		}
	}
	if (!fixed) {
		first = in->used;
		if (want > 0) {
			int rc = in_alloc(in, (uint64_t)want * f->elem_size, &first);
			if (rc != 0) {
				return rc;
			}
		}
	}
	in->p++;
	skip_ws(in);
	uint64_t n = 0;
	if (peek(in) == ']') {
		in->p++;
	} else {
		for (;;) {
			hakoi_pdu_frame_t el = {fr, NULL, (size_t)n};
			size_t pos = first + (size_t)n * f->elem_size;
			if (want >= 0 && n >= (uint64_t)want) {
				if (fixed) {
					long all =
					    count_elements(&(struct in){.p = v, .end = in->end});
					return in_fail(in, v, fr, "must have %u elements, not %ld",
					               f->count, all);
				}
				return syntax(in, in->p, "expected ']'");
			}
			if (want < 0) {
				/* appended; numbers and bools are written whole, the rest zeroed */
				if (in->cap - in->used >= f->elem_size) {
					pos = in->used;
					in->used += f->elem_size;
					if (f->kind == HAKO_MSG_STRING ||
					    f->kind == HAKO_MSG_STRUCT) {
						memset(in->b + pos, 0, f->elem_size);
					}
				} else {
					int rc = in_alloc(in, f->elem_size, &pos);
					if (rc != 0) {
						return rc;
					}
				}
			}
			int rc = read_element(in, f, pos, &el);
			if (rc == 0) {
				rc = next_element(in);
			}
			if (rc < 0) {
				return rc;
			}
			n++;
			if (rc == 0) {
				break;
			}
		}
	}
	if (want >= 0 && n != (uint64_t)want) {
		if (fixed) {
			return in_fail(in, v, fr, "must have %u elements, not %llu", f->count,
			               (unsigned long long)n);
		}
		return syntax(in, in->p, "expected an element");
	}
	if (!fixed) {
		if (n > (uint64_t)INT32_MAX) {
			return in_fail(in, v, fr, "too many elements");
		}
		hakoi_wr32(in->b + at, (uint32_t)n);
		hakoi_wr32(in->b + at + 4, (uint32_t)(first - in->heap_off));
	}
	return 0;
}

static int read_field(struct in *in, const hako_msg_field_t *f, size_t at,
                      const hakoi_pdu_frame_t *fr)
{
	if (in->p >= in->end) {
		return syntax(in, in->p, "");
	}
	if (f->form != HAKO_MSG_SINGLE) {
		return read_array(in, f, at, fr);
	}
	return f->kind == HAKO_MSG_STRUCT ? read_struct(in, f->type, at, fr)
	                                  : read_scalar(in, f->kind, at, fr);
}

/* The field named key[0..len), trying `hint` first: text from hako_pdu_to_json has the fields
 * in .msg order. */
static long find_field(const hako_msg_type_t *type, const char *key, size_t len, size_t hint)
{
	for (size_t i = 0; i < type->field_count; i++) {
		size_t k = hint + i < type->field_count ? hint + i : hint + i - type->field_count;
		const char *name = type->fields[k].name;
		if (strncmp(name, key, len) == 0 && name[len] == '\0') {
			return (long)k;
		}
	}
	return -1;
}

static int read_struct(struct in *in, const hako_msg_type_t *type, size_t at,
                       const hakoi_pdu_frame_t *up)
{
	if (peek(in) != '{') {
		return in_fail(in, in->p, up, "must be an object");
	}
	in->p++;
	skip_ws(in);
	if (peek(in) == '}') {
		in->p++;
		return 0;
	}
	uint64_t seen_small[4] = {0};
	uint64_t *seen = seen_small;
	if (type->field_count > 256) {
		seen = calloc((type->field_count + 63) / 64, sizeof(*seen));
		if (seen == NULL) {
			return hako_error_set(in->err, HAKO_ENOMEM, NULL, 0, 0, "out of memory");
		}
	}
	size_t hint = 0;
	int rc = 0;
	for (;;) {
		char key[HAKO_MSG_NAME_MAX];
		size_t len;
		skip_ws(in);
		if (peek(in) != '"') {
			rc = syntax(in, in->p, "expected a field name");
			break;
		}
		hakoi_pdu_frame_t kfr = {up, "(a field name)", 0};
		if ((rc = read_string(in, key, sizeof(key) - 1, &len, &kfr)) != 0) {
			break;
		}
		key[len < sizeof(key) ? len : sizeof(key) - 1] = '\0';
		skip_ws(in);
		if (peek(in) != ':') {
			rc = syntax(in, in->p, "expected ':'");
			break;
		}
		in->p++;
		skip_ws(in);
		long i = len < sizeof(key) && memchr(key, '\0', len) == NULL
		             ? find_field(type, key, len, hint)
		             : -1;
		hakoi_pdu_frame_t fr = {up, key, 0};
		if (i < 0) {
			rc = in_fail(in, in->p, &fr, "unknown field (%s has no such field)",
			             type->full_name);
			break;
		}
		if ((seen[i / 64] >> (i % 64) & 1) != 0) {
			rc = in_fail(in, in->p, &fr, "given twice");
			break;
		}
		seen[i / 64] |= 1ull << (i % 64);
		hint = (size_t)i + 1;
		const hako_msg_field_t *f = &type->fields[i];
		fr.name = f->name;
		if ((rc = read_field(in, f, at + f->offset, &fr)) != 0) {
			break;
		}
		skip_ws(in);
		if (peek(in) == ',') {
			in->p++;
			continue;
		}
		if (peek(in) == '}') {
			in->p++;
			break;
		}
		rc = syntax(in, in->p, "expected ',' or '}'");
		break;
	}
	if (seen != seen_small) {
		free(seen);
	}
	return rc;
}

int hako_pdu_from_json(const hako_msg_type_t *type, const char *json, size_t json_len, void *buf,
                       size_t cap, size_t *len, hako_error_t *err)
{
	if (type == NULL || json == NULL || len == NULL || (buf == NULL && cap > 0)) {
		return hako_error_set(err, HAKO_EINVAL, NULL, 0, 0, "missing argument");
	}
	*len = 0;
	if (type->size > HAKOI_PDU_MAX - HAKO_PDU_META_SIZE - 8) {
		*len = SIZE_MAX;
		return hako_error_set(err, HAKO_ETOOBIG, NULL, 0, 0, "%s is too large",
		                      type->full_name);
	}
	uint32_t heap_off = HAKO_PDU_META_SIZE + hakoi_align8(type->size);
	struct in in = {
	    .start = json,
	    .p = json,
	    .end = json + json_len,
	    /* a guess (the PDU of a byte array is about a third of its JSON); it grows */
	    .cap = (size_t)heap_off + (json_len < (32u << 20) ? json_len / 2 : 16u << 20) + 256,
	    .heap_off = heap_off,
	    .err = err,
	};
	size_t base;
	in.b = malloc(in.cap);
	if (in.b == NULL) {
		return hako_error_set(err, HAKO_ENOMEM, NULL, 0, 0, "out of memory");
	}
	int rc = in_alloc(&in, heap_off, &base);
	if (rc == 0) {
		skip_ws(&in);
		rc = in.p < in.end ? read_struct(&in, type, HAKO_PDU_META_SIZE, NULL)
		                   : syntax(&in, in.p, "");
	}
	if (rc == 0) {
		skip_ws(&in);
		if (in.p < in.end) {
			rc = syntax(&in, in.p, "text after the end of the value");
		}
	}
	if (rc == 0) {
		*len = in.used;
		if (in.used > cap) {
			rc = hako_error_set(err, HAKO_ETOOBIG, NULL, 0, 0,
			                    "the PDU needs %zu bytes; the buffer has %zu", in.used,
			                    cap);
		} else {
			uint8_t *p = in.b;
			hakoi_wr32(p, HAKO_PDU_MAGIC);
			hakoi_wr32(p + 4, HAKO_PDU_VERSION);
			hakoi_wr32(p + 8, HAKO_PDU_META_SIZE);
			hakoi_wr32(p + 12, heap_off);
			hakoi_wr32(p + 16, (uint32_t)in.used);
			memcpy(buf, in.b, in.used);
		}
	}
	if (rc == HAKO_ETOOBIG && *len == 0) {
		*len = SIZE_MAX; /* past INT32_MAX bytes: no buffer will do */
	}
	free(in.b);
	return rc;
}
