#include "hakoi/json_pos.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>
#include <jansson.h>
#include <stdarg.h>
#include <string.h>
#include <stdio.h>
#include <stdlib.h>

/* A cursor over text that knows its line and column. */
struct scan {
	const char *p;
	const char *end;
	int line;
	int column; /* of the character at p */
};

static int peek(const struct scan *s)
{
	return s->p < s->end ? (unsigned char)*s->p : -1;
}

static void advance(struct scan *s)
{
	unsigned char c = (unsigned char)*s->p++;
	if (c == '\n') {
		s->line++;
		s->column = 1;
	} else if ((c & 0xC0) != 0x80) {
		/* UTF-8 continuation bytes do not start a character; jansson counts the same way */
		s->column++;
	}
}

static void skip_ws(struct scan *s)
{
	int c;
	while ((c = peek(s)) == ' ' || c == '\t' || c == '\n' || c == '\r') {
		advance(s);
	}
}

static int skip_string(struct scan *s)
{
	advance(s);
	for (;;) {
		int c = peek(s);
		if (c < 0) {
			return -1;
		}
		advance(s);
		if (c == '"') {
			return 0;
		}
		if (c == '\\') {
			if (peek(s) < 0) {
				return -1;
			}
			advance(s);
		}
	}
}

/* Skip one value; stops at the ',', '}' or ']' that follows it. */
static int skip_value(struct scan *s)
{
	int depth = 0;
	for (;;) {
		int c = peek(s);
		if (c < 0) {
			return -1;
		}
		if (c == '"') {
			if (skip_string(s) != 0) {
				return -1;
			}
			if (depth == 0) {
				return 0;
			}
			continue;
		}
		if (depth == 0 && (c == ',' || c == '}' || c == ']')) {
			return 0; /* end of a number or literal */
		}
		advance(s);
		if (c == '{' || c == '[') {
			depth++;
		} else if ((c == '}' || c == ']') && --depth == 0) {
			return 0;
		}
	}
}

static int read_hex4(struct scan *s, unsigned *out)
{
	unsigned v = 0;
	for (int i = 0; i < 4; i++) {
		int c = peek(s);
		int d;
		if (c >= '0' && c <= '9') {
			d = c - '0';
		} else if (c >= 'a' && c <= 'f') {
			d = c - 'a' + 10;
		} else if (c >= 'A' && c <= 'F') {
			d = c - 'A' + 10;
		} else {
			return -1;
		}
		v = v << 4 | (unsigned)d;
		advance(s);
	}
	*out = v;
	return 0;
}

static size_t utf8_encode(unsigned cp, unsigned char *buf)
{
	if (cp < 0x80) {
		buf[0] = (unsigned char)cp;
		return 1;
	}
	if (cp < 0x800) {
		buf[0] = (unsigned char)(0xC0 | cp >> 6);
		buf[1] = (unsigned char)(0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000) {
		buf[0] = (unsigned char)(0xE0 | cp >> 12);
		buf[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
		buf[2] = (unsigned char)(0x80 | (cp & 0x3F));
		return 3;
	}
	buf[0] = (unsigned char)(0xF0 | cp >> 18);
	buf[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3F));
	buf[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
	buf[3] = (unsigned char)(0x80 | (cp & 0x3F));
	return 4;
}

/* The bytes an escape (after its backslash) stands for. */
static int read_escape(struct scan *s, unsigned char buf[4], size_t *n)
{
	int c = peek(s);
	if (c < 0) {
		return -1;
	}
	advance(s);
	*n = 1;
	switch (c) {
	case 'b': buf[0] = '\b'; return 0;
	case 'f': buf[0] = '\f'; return 0;
	case 'n': buf[0] = '\n'; return 0;
	case 'r': buf[0] = '\r'; return 0;
	case 't': buf[0] = '\t'; return 0;
	case 'u': break;
	default: buf[0] = (unsigned char)c; return 0;
	}
	unsigned cp;
	if (read_hex4(s, &cp) != 0) {
		return -1;
	}
	if (cp >= 0xD800 && cp < 0xDC00 && s->end - s->p >= 2 && s->p[0] == '\\' &&
	    s->p[1] == 'u') {
		unsigned lo;
		advance(s);
		advance(s);
		if (read_hex4(s, &lo) != 0 || lo < 0xDC00 || lo > 0xDFFF) {
			return -1;
		}
		cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
	}
	*n = utf8_encode(cp, buf);
	return 0;
}

/* Consume the string at s; 1 if it spells key once unescaped, 0 if not, -1 if malformed. */
static int match_key(struct scan *s, const char *key)
{
	const unsigned char *k = (const unsigned char *)key;
	int same = 1;
	advance(s);
	for (;;) {
		int c = peek(s);
		if (c < 0) {
			return -1;
		}
		advance(s);
		if (c == '"') {
			return same && *k == '\0';
		}
		unsigned char buf[4] = {(unsigned char)c};
		size_t n = 1;
		if (c == '\\' && read_escape(s, buf, &n) != 0) {
			return -1;
		}
		for (size_t i = 0; i < n && same; i++) {
			if (*k == '\0' || *k != buf[i]) {
				same = 0;
			} else {
				k++;
			}
		}
	}
}

static int enter_member(struct scan *s, const char *key)
{
	struct scan found = *s;
	int have = 0;
	if (peek(s) != '{') {
		return -1;
	}
	advance(s);
	for (;;) {
		skip_ws(s);
		if (peek(s) != '"') {
			return -1;
		}
		int m = match_key(s, key);
		if (m < 0) {
			return -1;
		}
		skip_ws(s);
		if (peek(s) != ':') {
			return -1;
		}
		advance(s);
		skip_ws(s);
		if (m) {
			found = *s;
			have = 1;
		}
		if (skip_value(s) != 0) {
			return -1;
		}
		skip_ws(s);
		int c = peek(s);
		if (c == '}') {
			break;
		}
		if (c != ',') {
			return -1;
		}
		advance(s);
	}
	if (!have) {
		return -1;
	}
	*s = found;
	return 0;
}

static int enter_element(struct scan *s, size_t index)
{
	if (peek(s) != '[') {
		return -1;
	}
	advance(s);
	for (size_t i = 0;; i++) {
		skip_ws(s);
		if (peek(s) == ']' || peek(s) < 0) {
			return -1;
		}
		if (i == index) {
			return 0;
		}
		if (skip_value(s) != 0) {
			return -1;
		}
		skip_ws(s);
		if (peek(s) != ',') {
			return -1;
		}
		advance(s);
	}
}

int hakoi_json_pos(const char *text, size_t len, const hakoi_json_seg_t *path, size_t depth,
                   int *line, int *column)
{
	if (text == NULL || (path == NULL && depth > 0)) {
		return -1;
	}
	struct scan s = {text, text + len, 1, 1};
	for (size_t i = 0; i < depth; i++) {
		skip_ws(&s);
		int rc = path[i].key != NULL ? enter_member(&s, path[i].key)
		                             : enter_element(&s, path[i].index);
		if (rc != 0) {
			return -1;
		}
	}
	skip_ws(&s);
	if (peek(&s) < 0) {
		return -1;
	}
	*line = s.line;
	*column = s.column;
	return 0;
}

void hakoi_json_path_format(const hakoi_json_seg_t *path, size_t depth, char *buf, size_t len)
{
	if (buf == NULL || len == 0) {
		return;
	}
	buf[0] = '\0';
	size_t used = 0;
	for (size_t i = 0; i < depth && used < len; i++) {
		int n;
		if (path[i].key != NULL) {
			n = snprintf(buf + used, len - used, "%s%s", used > 0 ? "." : "",
			             path[i].key);
		} else {
			n = snprintf(buf + used, len - used, "[%zu]", path[i].index);
		}
		if (n < 0) {
			return;
		}
		used += (size_t)n;
	}
}

void hakoi_jctx_push_key(hakoi_jctx_t *j, const char *key)
{
	if (j->depth < HAKOI_JCTX_DEPTH) {
		j->path[j->depth] = (hakoi_json_seg_t){.key = key};
	}
	j->depth++;
}

void hakoi_jctx_push_index(hakoi_jctx_t *j, size_t index)
{
	if (j->depth < HAKOI_JCTX_DEPTH) {
		j->path[j->depth] = (hakoi_json_seg_t){.index = index};
	}
	j->depth++;
}

void hakoi_jctx_pop(hakoi_jctx_t *j)
{
	j->depth--;
}

int hakoi_jctx_report(hakoi_jctx_t *j, size_t at, int code, const char *what)
{
	char where[256];
	int line = 0, column = 0;
	size_t depth = j->depth < HAKOI_JCTX_DEPTH ? j->depth : HAKOI_JCTX_DEPTH;
	if (at > depth) {
		at = depth;
	}
	hakoi_json_path_format(j->path, depth, where, sizeof(where));
	while (hakoi_json_pos(j->text, j->len, j->path, at, &line, &column) != 0) {
		line = column = 0;
		if (at == 0) {
			break;
		}
		at--;
	}
	return hako_error_set(j->err, code, j->file, line, column, "%s: %s",
	                      where[0] != '\0' ? where : "top level", what);
}

int hakoi_jctx_fail(hakoi_jctx_t *j, const char *fmt, ...)
{
	char what[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return hakoi_jctx_report(j, j->depth, HAKO_ECONFIG, what);
}

int hakoi_jctx_fail_missing(hakoi_jctx_t *j, const char *expected)
{
	char what[256];
	snprintf(what, sizeof(what), "missing (must be %s)", expected);
	return hakoi_jctx_report(j, j->depth - 1, HAKO_ECONFIG, what);
}

int hakoi_jctx_fail_oom(hakoi_jctx_t *j)
{
	return hako_error_set(j->err, HAKO_ENOMEM, j->file, 0, 0, "out of memory");
}

int hakoi_jctx_sub_error(hakoi_jctx_t *j, int r, const hako_error_t *sub, const char *resolved)
{
	if (r == HAKO_ENOENT && sub->line == 0 && strcmp(sub->file, resolved) == 0) {
		char what[700];
		snprintf(what, sizeof(what), "cannot open %s: %s", resolved, strerror(ENOENT));
		return hakoi_jctx_report(j, j->depth, HAKO_ENOENT, what);
	}
	if (j->err != NULL) {
		*j->err = *sub;
	}
	return r;
}

int hakoi_jctx_check_keys(hakoi_jctx_t *j, const void *obj, const char *const *known, size_t n)
{
	const char *key;
	json_t *v;
	json_object_foreach((json_t *)obj, key, v)
	{
		size_t i = 0;
		while (i < n && strcmp(known[i], key) != 0) {
			i++;
		}
		if (i == n) {
			hakoi_jctx_push_key(j, key);
			return hakoi_jctx_fail(j, "unknown key");
		}
	}
	return 0;
}

int hakoi_jctx_get_int(hakoi_jctx_t *j, const void *obj, const char *key, int required,
                       long long min, long long max, long long *out)
{
	char expected[96];
	json_t *v = json_object_get((const json_t *)obj, key);
	snprintf(expected, sizeof(expected), "an integer in [%lld, %lld]", min, max);
	hakoi_jctx_push_key(j, key);
	if (v == NULL) {
		if (required) {
			return hakoi_jctx_fail_missing(j, expected);
		}
		hakoi_jctx_pop(j);
		return 0;
	}
	if (!json_is_integer(v)) {
		return hakoi_jctx_fail(j, "must be %s", expected);
	}
	long long n = (long long)json_integer_value(v);
	if (n < min || n > max) {
		return hakoi_jctx_fail(j, "is %lld; must be %s", n, expected);
	}
	*out = n;
	hakoi_jctx_pop(j);
	return 0;
}
