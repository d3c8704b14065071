/* PDU <-> JSON, both by hand: output in the field order of the .msg with exact number formats
 * and strings that are not UTF-8; input parsed as the type dictates, straight into the PDU. */
#include "hako/pdu.h"

#include "pdu_internal.h"

#include <errno.h>
#include <float.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ======== PDU -> JSON ======== */

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

/* Length of the valid UTF-8 sequence at s (RFC 3629: no overlong forms, no surrogates, at most
 * U+10FFFF), 0 if there is none. */
static size_t utf8_len(const uint8_t *s, size_t n)
{
	uint8_t c = s[0];
	uint8_t lo = 0x80;
	uint8_t hi = 0xBF;
	size_t k;
	if (c >= 0xC2 && c <= 0xDF) {
		k = 2;
	} else if (c >= 0xE0 && c <= 0xEF) {
		k = 3;
		lo = c == 0xE0 ? 0xA0 : 0x80;
		hi = c == 0xED ? 0x9F : 0xBF;
	} else if (c >= 0xF0 && c <= 0xF4) {
		k = 4;
		lo = c == 0xF0 ? 0x90 : 0x80;
		hi = c == 0xF4 ? 0x8F : 0xBF;
	} else {
		return 0;
	}
	if (n < k || s[1] < lo || s[1] > hi) {
		return 0;
	}
	for (size_t i = 2; i < k; i++) {
		if (s[i] < 0x80 || s[i] > 0xBF) {
			return 0;
		}
	}
	return k;
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
		size_t k = c >= 0x80 ? utf8_len(s + i, n - i) : 0;
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

/* ---- numbers: the shortest decimal that reads back as the same value ---- */

__extension__ typedef unsigned __int128 u128;

static const double pow10_dbl[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                     1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                     1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
static const double pow10_neg[5] = {1e0, 1e-1, 1e-2, 1e-3, 1e-4};

static const uint64_t pow10_u64[20] = {1ull,
                                       10ull,
                                       100ull,
                                       1000ull,
                                       10000ull,
                                       100000ull,
                                       1000000ull,
                                       10000000ull,
                                       100000000ull,
                                       1000000000ull,
                                       10000000000ull,
                                       100000000000ull,
                                       1000000000000ull,
                                       10000000000000ull,
                                       100000000000000ull,
                                       1000000000000000ull,
                                       10000000000000000ull,
                                       100000000000000000ull,
                                       1000000000000000000ull,
                                       10000000000000000000ull};

/* 10^n for n in [0, 38] */
static u128 pow10_u128(int n)
{
	return n < 20 ? (u128)pow10_u64[n] : (u128)pow10_u64[19] * pow10_u64[n - 19];
}

/* Whole, without libm: every double from 2^52 on is. */
static int is_integral(double v)
{
	return fabs(v) >= 4503599627370496.0 ? isfinite(v) : v == (double)(int64_t)v;
}

/* x / 2^sh, rounded to nearest, ties to even. */
static uint64_t shr_round(u128 x, int sh)
{
	if (sh == 0) {
		return (uint64_t)x;
	}
	u128 q = x >> sh;
	u128 r = x - (q << sh);
	u128 half = (u128)1 << (sh - 1);
	if (r > half || (r == half && (q & 1) != 0)) {
		q++;
	}
	return (uint64_t)q;
}

static const char digit_pairs[] = "00010203040506070809101112131415161718192021222324252627282930"
                                  "31323334353637383940414243444546474849505152535455565758596061"
                                  "62636465666768697071727374757677787980818283848586878889909192"
                                  "93949596979899";

/* n x 10^-k as "123.45" / "0.0012" / "7.0" (a real always shows a point) into buf (64 bytes).
 * No library calls: the hottest path of float-heavy PDUs; the fixed-size copies below are a
 * few register moves and may run past the digits (buf and tmp have room for that). */
static size_t fmt_decimal(int neg, uint64_t n, int k, char *buf)
{
	char tmp[48];
	char *e = tmp + 24;
	char *p = e;
	memset(e, 0, 24);
	while (k > 0 && n % 10 == 0) {
		n /= 10;
		k--;
	}
	while (n >= 100) {
		unsigned pair = (unsigned)(n % 100);
		n /= 100;
		p -= 2;
		p[0] = digit_pairs[2 * pair];
		p[1] = digit_pairs[2 * pair + 1];
	}
	if (n >= 10) {
		p -= 2;
		p[0] = digit_pairs[2 * n];
		p[1] = digit_pairs[2 * n + 1];
	} else {
		*--p = (char)('0' + n);
	}
	while (e - p <= k) {
		*--p = '0'; /* at least one digit before the point */
	}
	int ip = (int)(e - p) - k; /* digits before the point */
	char *d = buf;
	if (neg) {
		*d++ = '-';
	}
	memcpy(d, p, 24);
	memcpy(d + ip + 1, p + ip, 24);
	d[ip] = '.';
	if (k == 0) {
		d[ip + 1] = '0';
		k = 1;
	}
	d[ip + 1 + k] = '\0';
	return (size_t)(d - buf) + (size_t)(ip + 1 + k);
}

/* The C library writes the locale's decimal point; JSON wants '.'. A number without '.' or an
 * exponent gets ".0" so the reader sees a real, as jansson writes them. */
static size_t finish_real(char *buf, size_t n)
{
	int real = 0;
	for (size_t i = 0; i < n; i++) {
		char c = buf[i];
		if (c == ',') {
			buf[i] = '.';
			real = 1;
		} else if (c == '.' || c == 'e') {
			real = 1;
		}
	}
	if (!real) {
		memcpy(buf + n, ".0", 3);
		n += 2;
	}
	return n;
}

/* Far from 1 (and subnormal): the shortest of printf's %.{lo..17}g that reads back. Rare in
 * PDUs, so the C library does it. */
static size_t fmt_printf(double v, int lo, int hi, int as_float, char *buf)
{
	int n = 0;
	for (int prec = lo; prec <= hi; prec++) {
		n = snprintf(buf, 32, "%.*g", prec, v);
		double back = strtod(buf, NULL);
		if (prec == hi || (as_float ? (float)back == (float)v : back == v)) {
			break;
		}
	}
	return finish_real(buf, (size_t)n);
}

/* Does round(a x 10^k) / 10^k read back as a = c / 2^sh? Exactly, in 128-bit integers: both
 * sides scaled by 10^k x 2^(sh+2), the half gaps to a's neighbours become 2 x 10^k (10^k below
 * a power of two), and a tie reads back as the even significand. *n = the candidate. */
static int fits(uint64_t c, int sh, int k, uint64_t *n)
{
	u128 unit = pow10_u128(k);
	*n = shr_round((u128)c * unit, sh);
	u128 x = (u128)*n << (sh + 2);
	u128 y = (u128)c * unit * 4;
	u128 above = unit * 2;
	u128 below = c == (1ull << 52) ? unit : above;
	int even = (c & 1) == 0;
	return x >= y ? x - y < above || (x - y == above && even)
	              : y - x < below || (y - x == below && even);
}

/* A finite double, shortest form: in [1e-4, 2^53) a plain decimal of 17 significant digits,
 * or 16, or 15 and fewer, the shortest that reads back as a; elsewhere printf. buf: 64
 * bytes. */
static size_t fmt_f64(double v, char *buf)
{
	int neg = signbit(v) != 0;
	double a = fabs(v);
	if (a == 0) {
		return fmt_decimal(neg, 0, 0, buf);
	}
	if (a < 1e-4 || a >= 9007199254740992.0) {
		/* 15 digits are enough to start with (see below), but subnormals have fewer */
		return fmt_printf(v, a < DBL_MIN ? 1 : 15, 17, 0, buf);
	}
	uint64_t bits;
	memcpy(&bits, &a, sizeof(bits));
	uint64_t c = (bits & 0xFFFFFFFFFFFFFull) | (1ull << 52);
	int sh = 1075 - (int)(bits >> 52); /* a = c / 2^sh, sh in [0, 66] */
	/* 10^e10 <= a: log10(2) x the binary exponent, corrected by a comparison (the doubles of
	 * 10^-1..10^-4 lie above the true powers, so the comparison is exact) */
	int e10 = (int)(((int64_t)((int)(bits >> 52) - 1023) * 78913) >> 18);
	if (e10 < 15 && a >= (e10 + 1 >= 0 ? pow10_dbl[e10 + 1] : pow10_neg[-(e10 + 1)])) {
		e10++;
	}
	if (e10 > -4 && a < (e10 >= 0 ? pow10_dbl[e10] : pow10_neg[-e10])) {
		e10--;
	}
	int k17 = 16 - e10; /* fraction digits of 17 significant ones, which always read back */
	uint64_t n;
	if (!fits(c, sh, k17 - 1, &n)) {
		n = shr_round((u128)c * pow10_u128(k17), sh);
		return fmt_decimal(neg, n, k17, buf);
	}
	/* A form of 15 digits or fewer, if there is one, is the 15-digit rounding of a with its
	 * trailing zeros dropped: a is within 10^15 x 2^-53 < 0.5 units of that rounding. */
	uint64_t n15;
	if (k17 >= 2 && fits(c, sh, k17 - 2, &n15)) {
		return fmt_decimal(neg, n15, k17 - 2, buf);
	}
	return fmt_decimal(neg, n, k17 - 1, buf);
}

/* A finite float, shortest form that reads back through a double (the way
 * hako_pdu_from_json reads it): as fmt_f64, checked in float; a float needs 9 digits at most,
 * so in [1e-4, 2^24) the loop always ends with an answer (above, floats are whole numbers whose
 * shortest form has an exponent). */
static size_t fmt_f32(float v, char *buf)
{
	int neg = signbit(v) != 0;
	double a = fabs((double)v);
	if (a == 0) {
		return fmt_decimal(neg, 0, 0, buf);
	}
	if (a >= 1e-4 && a < 16777216.0) {
		for (int k = 0; k <= 22; k++) {
			double m = a * pow10_dbl[k];
			if (m >= 9007199254740992.0) {
				break;
			}
			uint64_t im = m >= 4503599627370496.0 ? (uint64_t)m : (uint64_t)(m + 0.5);
			if ((float)((double)im / pow10_dbl[k]) == (float)a) {
				return fmt_decimal(neg, im, k, buf);
			}
		}
	}
	return fmt_printf((double)v, a < FLT_MIN ? 1 : 6, 9, 1, buf);
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
	char buf[64];
	return isfinite(v) ? put(o, buf, fmt_f64(v, buf)) : put_nonfinite(o, v);
}

static int put_f32(struct out *o, float v)
{
	char buf[64];
	return isfinite(v) ? put(o, buf, fmt_f32(v, buf)) : put_nonfinite(o, v);
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

/* ======== JSON -> PDU ======== */

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
			k = utf8_len((const uint8_t *)q, (size_t)(in->end - q));
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

/* A JSON number at in->p: its end, and whether it is an integer (no fraction, no exponent). */
struct number {
	const char *start;
	const char *end;
	int neg;
	int integer;
	int big;       /* integer: more than fits in uint64 */
	uint64_t mag;  /* integer: the magnitude */
	uint64_t mant; /* all digits as one integer, if at most 19 of them */
	int digits;    /* significant digits (leading zeros left out) */
	int exp10;     /* value = mant x 10^exp10 */
};

static int scan_number(const struct in *in, struct number *n)
{
	const char *q = in->p;
	const char *end = in->end;
	uint64_t mant = 0;
	int taken = 0;   /* significant digits in mant, at most 19 */
	int dropped = 0; /* significant digits past those */
	int shift = 0;   /* powers of ten the digits in mant are off by */
	unsigned d;
	n->start = q;
	n->neg = 0;
	n->integer = 1;
	n->big = 0;
	if (q < end && *q == '-') {
		n->neg = 1;
		q++;
	}
	const char *int_start = q;
	if (q < end && *q == '0') {
		q++;
	} else if (q < end && (d = (unsigned)(*q - '0')) < 10) {
		do {
			if (taken < 19) {
				mant = mant * 10 + d;
				taken++;
			} else {
				dropped++;
				shift++;
			}
			q++;
		} while (q < end && (d = (unsigned)(*q - '0')) < 10);
	} else {
		return -1;
	}
	int int_len = (int)(q - int_start);
	if (q < end && *q == '.') {
		n->integer = 0;
		q++;
		if (q >= end || (unsigned)(*q - '0') >= 10) {
			return -1;
		}
		for (; q < end && (d = (unsigned)(*q - '0')) < 10; q++) {
			if (taken == 0 && d == 0) {
				shift--; /* a leading zero */
			} else if (taken < 19) {
				mant = mant * 10 + d;
				taken++;
				shift--;
			} else {
				dropped++;
			}
		}
	}
	if (q < end && (*q == 'e' || *q == 'E')) {
		int eneg = 0;
		int e = 0;
		n->integer = 0;
		q++;
		if (q < end && (*q == '+' || *q == '-')) {
			eneg = *q == '-';
			q++;
		}
		if (q >= end || (unsigned)(*q - '0') >= 10) {
			return -1;
		}
		for (; q < end && (d = (unsigned)(*q - '0')) < 10; q++) {
			if (e < 100000) {
				e = e * 10 + (int)d;
			}
		}
		shift += eneg ? -e : e;
	}
	n->end = q;
	n->mant = mant;
	n->digits = taken + dropped;
	n->exp10 = shift;
	n->mag = mant;
	if (n->integer && int_len >= 20) {
		/* 20 digits or more: whether it fits in uint64 */
		uint64_t v = 0;
		n->big = int_len > 20;
		for (const char *p = int_start; p < int_start + int_len && !n->big; p++) {
			uint64_t dig = (uint64_t)(*p - '0');
			if (v > (UINT64_MAX - dig) / 10) {
				n->big = 1;
			}
			v = v * 10 + dig;
		}
		n->mag = v;
	}
	return 0;
}

/* mant x 10^e10 (mant of at most 19 digits) as the nearest double, 0 if out of the range done
 * here. Exact: one rounding, as strtod. */
static int decimal_to_double(uint64_t mant, int e10, double *out)
{
	if (mant == 0) {
		*out = 0;
		return 1;
	}
	/* both exact doubles: one correctly rounded operation */
	if (mant <= (1ull << 53) && e10 >= -22 && e10 <= 22) {
		*out = e10 < 0 ? (double)mant / pow10_dbl[-e10] : (double)mant * pow10_dbl[e10];
		return 1;
	}
	if (e10 >= 0) {
		if (e10 > 19) {
			return 0;
		}
		/* an exact integer below 2^128; the conversion rounds once */
		*out = (double)((u128)mant * pow10_u128(e10));
		return 1;
	}
	if (e10 < -21) {
		return 0;
	}
	/* mant / 10^k with mant shifted to the top of 128 bits: a quotient of at least 56 bits,
	 * the remainder folded into its last bit so the conversion rounds as the exact value */
	int sh = 64 + __builtin_clzll(mant);
	u128 num = (u128)mant << sh;
	u128 den = pow10_u128(-e10);
	u128 q = num / den;
	if (num - q * den != 0) {
		q |= 1;
	}
	uint64_t scale_bits = (uint64_t)(1023 - sh) << 52; /* 2^-sh, sh in [64, 127] */
	double scale;
	memcpy(&scale, &scale_bits, sizeof(scale));
	*out = (double)q * scale;
	return 1;
}

/* The number as the double nearest to it; *overflow if it is beyond the double range. */
static double number_value(const struct number *n, int *overflow)
{
	*overflow = 0;
	if (n->integer && !n->big) {
		double v = (double)n->mag; /* rounds to nearest, as strtod would */
		return n->neg ? -v : v;
	}
	double d;
	if (n->digits <= 19 && decimal_to_double(n->mant, n->exp10, &d)) {
		return n->neg ? -d : d;
	}
	/* strtod wants a NUL-terminated copy with the locale's decimal point */
	size_t len = (size_t)(n->end - n->start);
	char small[64];
	char *copy = len < sizeof(small) ? small : malloc(len + 1);
	if (copy == NULL) {
		*overflow = -1;
		return 0;
	}
	memcpy(copy, n->start, len);
	copy[len] = '\0';
	char point = localeconv()->decimal_point[0];
	if (point != '.') {
		char *dot = strchr(copy, '.');
		if (dot != NULL) {
			*dot = point;
		}
	}
	errno = 0;
	d = strtod(copy, NULL);
	if (errno == ERANGE && isinf(d)) {
		*overflow = 1;
	}
	if (copy != small) {
		free(copy);
	}
	return d;
}

/* "300", "2e19": the number as written, for messages. */
static void number_text(const struct number *n, char *buf, size_t len)
{
	int k = (int)(n->end - n->start);
	snprintf(buf, len, "%.*s%s", k > 40 ? 40 : k, n->start, k > 40 ? "..." : "");
}

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
	struct number n;
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
		if (scan_number(in, &n) != 0) {
			return in_fail(in, v, fr, "must be an integer (%s)", kind_name(kind));
		}
		in->p = n.end;
		number_text(&n, text, sizeof(text));
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
			double d = number_value(&n, &overflow);
			if (overflow < 0) {
				return hako_error_set(in->err, HAKO_ENOMEM, NULL, 0, 0,
				                      "out of memory");
			}
			if (!overflow && !is_integral(d)) {
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
	struct number n;
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
		if (scan_number(in, &n) != 0) {
			return in_fail(in, v, fr,
			               "must be a number (or \"nan\", \"inf\", \"-inf\")");
		}
		in->p = n.end;
		d = number_value(&n, &overflow);
		if (overflow < 0) {
			return hako_error_set(in->err, HAKO_ENOMEM, NULL, 0, 0, "out of memory");
		}
		if (overflow || (kind == HAKO_MSG_FLOAT32 && isinf((float)d))) {
			char text[64];
			number_text(&n, text, sizeof(text));
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
