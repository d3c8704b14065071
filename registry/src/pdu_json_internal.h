/* What the two directions of PDU <-> JSON share: one idea of valid UTF-8 (what the writer
 * passes through unescaped, the reader accepts) and the numbers (pdu_json_number.c). */
#ifndef HAKOI_PDU_JSON_INTERNAL_H
#define HAKOI_PDU_JSON_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "pdu_internal.h"

/* Length of the valid UTF-8 sequence at s (RFC 3629: no overlong forms, no surrogates, at most
 * U+10FFFF), 0 if there is none. */
static inline size_t hakoi_utf8_len(const uint8_t *s, size_t n)
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

/* ---- numbers out: the shortest decimal that reads back as the same value ---- */

/* Room for any number hakoi_json_fmt_* writes, with the slack its fixed-size copies use. */
#define HAKOI_JSON_NUMBER_BUF 64

/* A finite double or float in its shortest form, '.' as the decimal point and a real always
 * showing one ("7.0"); returns the length. buf: HAKOI_JSON_NUMBER_BUF bytes. */
HAKOI_HIDDEN size_t hakoi_json_fmt_f64(double v, char *buf);
HAKOI_HIDDEN size_t hakoi_json_fmt_f32(float v, char *buf);

/* ---- numbers in ---- */

/* A JSON number as scanned: where it is, and whether it is an integer (no fraction, no
 * exponent). */
typedef struct hakoi_json_number {
	const char *start;
	const char *end;
	int neg;
	int integer;
	int big;       /* integer: more than fits in uint64 */
	uint64_t mag;  /* integer: the magnitude */
	uint64_t mant; /* all digits as one integer, if at most 19 of them */
	int digits;    /* significant digits (leading zeros left out) */
	int exp10;     /* value = mant x 10^exp10 */
} hakoi_json_number_t;

/* The JSON number at p (before end): 0, or -1 if there is none. */
HAKOI_HIDDEN int hakoi_json_scan_number(const char *p, const char *end, hakoi_json_number_t *n);

/* The number as the double nearest to it; *overflow 1 if it is beyond the double range, -1 out
 * of memory. */
HAKOI_HIDDEN double hakoi_json_number_value(const hakoi_json_number_t *n, int *overflow);

/* "300", "2e19": the number as written, for messages. */
HAKOI_HIDDEN void hakoi_json_number_text(const hakoi_json_number_t *n, char *buf, size_t len);

/* Whole (and finite). */
HAKOI_HIDDEN int hakoi_json_is_integral(double v);

#endif
