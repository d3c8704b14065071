/* The numbers of PDU <-> JSON: doubles and floats written in the shortest form that reads back
 * as the same value, and JSON numbers read with one rounding, as strtod, mostly without the C
 * library (the hottest paths of float-heavy PDUs; and the locale's decimal point is not
 * JSON's). */
#include "pdu_json_internal.h"

#include <errno.h>
#include <float.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- out: the shortest decimal that reads back as the same value ---- */

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
int hakoi_json_is_integral(double v)
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
 * or 16, or 15 and fewer, the shortest that reads back as a; elsewhere printf. */
size_t hakoi_json_fmt_f64(double v, char *buf)
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
size_t hakoi_json_fmt_f32(float v, char *buf)
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

/* ---- in ---- */

int hakoi_json_scan_number(const char *p, const char *end, hakoi_json_number_t *n)
{
	const char *q = p;
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

double hakoi_json_number_value(const hakoi_json_number_t *n, int *overflow)
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

void hakoi_json_number_text(const hakoi_json_number_t *n, char *buf, size_t len)
{
	int k = (int)(n->end - n->start);
	snprintf(buf, len, "%.*s%s", k > 40 ? 40 : k, n->start, k > 40 ? "..." : "");
}
