/* The field-descriptor walker of the config toolkit (hakoi/cfg.h). */
#include "hakoi/cfg.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hako/log.h"
#include "hakoi/file.h"

int hakoi_cfg_parse(const char *file, const char *text, size_t len, hako_error_t *err,
                    json_t **root)
{
	json_error_t je;
	*root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (*root == NULL) {
		return hako_error_set(err, HAKO_ECONFIG, file, je.line > 0 ? je.line : 0,
		                      je.line > 0 && je.column > 0 ? je.column : 0,
		                      "invalid JSON: %s", je.text);
	}
	return 0;
}

int hakoi_cfg_load(const char *path, hako_error_t *err, json_t **root, char **text, size_t *len)
{
	*root = NULL;
	*text = NULL;
	int e = hakoi_read_file(path, text, len);
	if (e != 0) {
		return hako_error_set(err, hakoi_read_file_code(e), path, 0, 0, "cannot open: %s",
		                      hakoi_read_file_strerror(e));
	}
	int r = hakoi_cfg_parse(path, *text, *len, err, root);
	if (r != 0) {
		free(*text);
		*text = NULL;
	}
	return r;
}

void hakoi_walk_init(hakoi_walk_t *w, hako_error_t *err, const char *file, const char *text,
                     size_t len, void *user)
{
	memset(w, 0, sizeof(*w));
	w->j.err = err;
	w->j.file = file;
	w->j.text = text;
	w->j.len = len;
	w->user = user;
}

/* ---- errors ---- */

int hakoi_walk_fail(hakoi_walk_t *w, const char *fmt, ...)
{
	char what[900];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return hakoi_jctx_report(&w->j, w->j.depth, HAKO_ECONFIG, what);
}

void hakoi_walk_warn(hakoi_walk_t *w, const char *fmt, ...)
{
	char what[900], msg[1200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	hako_error_t e;
	hako_error_t *keep = w->j.err;
	w->j.err = &e;
	hakoi_jctx_report(&w->j, w->j.depth, HAKO_ECONFIG, what);
	w->j.err = keep;
	HAKO_WARN("%s", hako_error_format(&e, msg, sizeof(msg)));
}

int hakoi_walk_fail_missing(hakoi_walk_t *w, const char *expected)
{
	return hakoi_jctx_fail_missing(&w->j, expected);
}

int hakoi_walk_fail_must(hakoi_walk_t *w, const char *expected)
{
	return hakoi_walk_fail(w, "must be %s", expected);
}

int hakoi_walk_fail_oom(hakoi_walk_t *w)
{
	return hakoi_jctx_fail_oom(&w->j);
}

int hakoi_walk_sub_error(hakoi_walk_t *w, int r, const hako_error_t *sub, const char *resolved)
{
	return hakoi_jctx_sub_error(&w->j, r, sub, resolved);
}

/* The depth of the path up to and including its innermost index; 0 if it has none. */
static size_t index_depth(const hakoi_walk_t *w)
{
	size_t depth = w->j.depth < HAKOI_JCTX_DEPTH ? w->j.depth : HAKOI_JCTX_DEPTH;
	while (depth > 0 && w->j.path[depth - 1].key != NULL) {
		depth--;
	}
	return depth;
}

size_t hakoi_walk_index(const hakoi_walk_t *w)
{
	size_t depth = index_depth(w);
	return depth > 0 ? w->j.path[depth - 1].index : 0;
}

const char *hakoi_walk_key(const hakoi_walk_t *w)
{
	if (w->j.depth == 0 || w->j.depth > HAKOI_JCTX_DEPTH) {
		return NULL;
	}
	return w->j.path[w->j.depth - 1].key;
}

int hakoi_walk_fail_dup(hakoi_walk_t *w, size_t earlier, const char *fmt, ...)
{
	char what[256], where[256];
	hakoi_json_seg_t path[HAKOI_JCTX_DEPTH];
	size_t depth = index_depth(w);
	memcpy(path, w->j.path, depth * sizeof(path[0]));
	if (depth > 0) {
		path[depth - 1].index = earlier;
	}
	hakoi_json_path_format(path, depth, where, sizeof(where));
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return hakoi_walk_fail(w, "%s is already used by %s", what, where);
}

/* ---- what a field must be ---- */

static void append(char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void append(char *buf, size_t len, const char *fmt, ...)
{
	size_t used = strnlen(buf, len);
	if (used + 1 >= len) {
		return;
	}
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf + used, len - used, fmt, ap);
	va_end(ap);
}

void hakoi_field_expect(const hakoi_field_t *f, char *buf, size_t len)
{
	buf[0] = '\0';
	if (f->expect != NULL) {
		snprintf(buf, len, "%s", f->expect);
		return;
	}
	switch (f->kind) {
	case HAKOI_K_STRING:
	case HAKOI_K_PATH: snprintf(buf, len, "a string"); break;
	case HAKOI_K_INT:
		if (f->max == LLONG_MAX) {
			snprintf(buf, len, "an integer >= %lld", f->min);
		} else {
			snprintf(buf, len, "an integer in [%lld, %lld]", f->min, f->max);
		}
		break;
	case HAKOI_K_NUMBER:
		if (isinf(f->dmin) && isinf(f->dmax)) {
			snprintf(buf, len, "a number");
		} else if (isinf(f->dmax)) {
			snprintf(buf, len, "a number >= %g", f->dmin);
		} else if (isinf(f->dmin)) {
			snprintf(buf, len, "a number <= %g", f->dmax);
		} else {
			snprintf(buf, len, "a number in [%g, %g]", f->dmin, f->dmax);
		}
		break;
	case HAKOI_K_BOOL: snprintf(buf, len, "true or false"); break;
	case HAKOI_K_ENUM:
		for (size_t i = 0; f->names[i] != NULL; i++) {
			append(buf, len, "%s\"%s\"",
			       i == 0 ? "" : (f->names[i + 1] == NULL ? " or " : ", "),
			       f->names[i]);
		}
		break;
	case HAKOI_K_OBJECT:
	case HAKOI_K_MAP: snprintf(buf, len, "an object"); break;
	case HAKOI_K_ARRAY: snprintf(buf, len, "an array"); break;
	case HAKOI_K_CUSTOM:
	case HAKOI_K_IGNORE:
	case HAKOI_K_OTHERS:
	case HAKOI_K_CHECK: snprintf(buf, len, "a value"); break;
	}
	if (f->flags & HAKOI_F_NULL_OK) {
		append(buf, len, " or null");
	}
}

/* ---- scalars ---- */

static void store_int(void *dst, size_t size, int is_unsigned, long long v)
{
	switch (size) {
	case 1:
		if (is_unsigned) {
			*(uint8_t *)dst = (uint8_t)v;
		} else {
			*(int8_t *)dst = (int8_t)v;
		}
		break;
	case 2:
		if (is_unsigned) {
			*(uint16_t *)dst = (uint16_t)v;
		} else {
			*(int16_t *)dst = (int16_t)v;
		}
		break;
	case 4:
		if (is_unsigned) {
			*(uint32_t *)dst = (uint32_t)v;
		} else {
			*(int32_t *)dst = (int32_t)v;
		}
		break;
	case 8:
		if (is_unsigned) {
			*(uint64_t *)dst = (uint64_t)v;
		} else {
			*(int64_t *)dst = (int64_t)v;
		}
		break;
	default: break; /* 0: checked, not stored */
	}
}

int hakoi_walk_string(hakoi_walk_t *w, const char *s, size_t n, unsigned flags, char *dst,
                      size_t size)
{
	if (n == 0 && !(flags & HAKOI_F_EMPTY_OK)) {
		return hakoi_walk_fail(w, "must not be empty");
	}
	if (strlen(s) != n) {
		return hakoi_walk_fail(w, "must not contain a NUL character");
	}
	if (dst == NULL || size == 0) {
		return 0;
	}
	if (n >= size) {
		return hakoi_walk_fail(w, "is %zu bytes long; the limit is %zu", n, size - 1);
	}
	memcpy(dst, s, n + 1);
	return 0;
}

int hakoi_walk_resolve(hakoi_walk_t *w, const char *rel, char *dst, size_t size)
{
	const char *file = w->j.file != NULL ? w->j.file : "";
	const char *slash = strrchr(file, '/');
	int dir_len = rel[0] == '/' || slash == NULL ? 0 : (int)(slash - file + 1);
	int n = snprintf(dst, size, "%.*s%s", dir_len, file, rel);
	if (n < 0 || (size_t)n >= size) {
		dst[0] = '\0';
		if (dir_len == 0) {
			return hakoi_walk_fail(w, "is %d bytes long; the limit is %zu", n,
			                       size - 1);
		}
		return hakoi_walk_fail(
		    w, "is %d bytes long once resolved against %.*s; the limit is %zu", n, dir_len,
		    file, size - 1);
	}
	return 0;
}

static int walk_string(hakoi_walk_t *w, json_t *v, const hakoi_field_t *f, char *dst)
{
	if (!json_is_string(v)) {
		char expected[160];
		hakoi_field_expect(f, expected, sizeof(expected));
		return hakoi_walk_fail_must(w, expected);
	}
	const char *s = json_string_value(v);
	size_t n = json_string_length(v);
	if (f->kind == HAKOI_K_STRING || f->size == 0) {
		return hakoi_walk_string(w, s, n, f->flags, f->size > 0 ? dst : NULL, f->size);
	}
	int r = hakoi_walk_string(w, s, n, f->flags, NULL, 0);
	return r != 0 ? r : hakoi_walk_resolve(w, s, dst, f->size);
}

static int walk_int(hakoi_walk_t *w, json_t *v, const hakoi_field_t *f, void *dst)
{
	char expected[160];
	hakoi_field_expect(f, expected, sizeof(expected));
	if (!json_is_integer(v)) {
		return hakoi_walk_fail_must(w, expected);
	}
	long long n = (long long)json_integer_value(v);
	if (n < f->min || n > f->max) {
		return hakoi_walk_fail(w, "is %lld; must be %s", n, expected);
	}
	store_int(dst, f->size, (f->flags & HAKOI_F_UNSIGNED) != 0, n);
	return 0;
}

static int walk_number(hakoi_walk_t *w, json_t *v, const hakoi_field_t *f, void *dst)
{
	char expected[160];
	hakoi_field_expect(f, expected, sizeof(expected));
	if (!json_is_number(v) || !isfinite(json_number_value(v))) {
		return hakoi_walk_fail_must(w, expected);
	}
	double d = json_number_value(v);
	if (d < f->dmin || d > f->dmax) {
		return hakoi_walk_fail(w, "is %g; must be %s", d, expected);
	}
	if (f->size == sizeof(double)) {
		memcpy(dst, &d, sizeof(d));
	}
	return 0;
}

static int walk_enum(hakoi_walk_t *w, json_t *v, const hakoi_field_t *f, void *dst)
{
	char expected[256];
	hakoi_field_expect(f, expected, sizeof(expected));
	const char *s = json_string_value(v);
	if (s == NULL) {
		return hakoi_walk_fail_must(w, expected);
	}
	for (size_t i = 0; f->names[i] != NULL; i++) {
		if (strcmp(s, f->names[i]) == 0) {
			store_int(dst, f->size, 0, f->values != NULL ? f->values[i] : (int)i);
			return 0;
		}
	}
	return hakoi_walk_fail(w, "is \"%.64s\"; must be %s", s, expected);
}

/* ---- arrays and maps ---- */

static int walk_elements(hakoi_walk_t *w, json_t *v, const hakoi_field_t *f, void *base)
{
	int is_map = f->kind == HAKOI_K_MAP;
	char expected[256];
	hakoi_field_expect(f, expected, sizeof(expected));
	if (is_map ? !json_is_object(v) : !json_is_array(v)) {
		return hakoi_walk_fail_must(w, expected);
	}
	size_t n = is_map ? json_object_size(v) : json_array_size(v);
	if (n < (size_t)f->min) {
		return f->min == 1 ? hakoi_walk_fail(w, "must not be empty")
		                   : hakoi_walk_fail(w, "has %zu entries; must have at least %lld",
		                                     n, f->min);
	}
	if (f->max > 0 && n > (size_t)f->max) {
		return hakoi_walk_fail(w, "has %zu entries; the limit is %lld", n, f->max);
	}
	char *elems = (char *)base + f->offset;
	if (f->alloc) {
		elems = n > 0 && f->size > 0 ? calloc(n, f->size) : NULL;
		if (elems == NULL && n > 0 && f->size > 0) {
			return hakoi_walk_fail_oom(w);
		}
		memcpy((char *)base + f->offset, &elems, sizeof(elems));
	}
	size_t *count = f->count != 0 ? (size_t *)(void *)((char *)base + f->count - 1) : NULL;
	if (count != NULL) {
		*count = 0;
	}
	void *it = is_map ? json_object_iter(v) : NULL;
	for (size_t i = 0; i < n; i++) {
		json_t *e;
		if (is_map) {
			hakoi_walk_push_key(w, json_object_iter_key(it));
			e = json_object_iter_value(it);
			it = json_object_iter_next(v, it);
		} else {
			hakoi_walk_push_index(w, i);
			e = json_array_get(v, i);
		}
		void *eb = f->size > 0 ? elems + i * f->size : base;
		if (count != NULL) {
			*count = i + 1;
		}
		int r = f->elem != NULL    ? hakoi_walk_value(w, e, f->elem, eb)
		        : f->parse != NULL ? f->parse(w, e, eb, f)
		                           : 0;
		if (r == 0 && f->check != NULL) {
			r = f->check(w, e, eb, f);
		}
		if (r != 0) {
			return r;
		}
		hakoi_walk_pop(w);
	}
	return 0;
}

/* ---- values, objects ---- */

int hakoi_walk_value(hakoi_walk_t *w, json_t *v, const hakoi_field_t *f, void *base)
{
	char *dst = (char *)base + f->offset;
	char expected[256];
	int r = 0;
	switch (f->kind) {
	case HAKOI_K_STRING:
	case HAKOI_K_PATH: r = walk_string(w, v, f, dst); break;
	case HAKOI_K_INT: r = walk_int(w, v, f, dst); break;
	case HAKOI_K_NUMBER: r = walk_number(w, v, f, dst); break;
	case HAKOI_K_BOOL:
		if (!json_is_boolean(v)) {
			hakoi_field_expect(f, expected, sizeof(expected));
			return hakoi_walk_fail_must(w, expected);
		}
		store_int(dst, f->size, 0, json_is_true(v));
		break;
	case HAKOI_K_ENUM: r = walk_enum(w, v, f, dst); break;
	case HAKOI_K_OBJECT:
		if (!json_is_object(v)) {
			hakoi_field_expect(f, expected, sizeof(expected));
			return hakoi_walk_fail_must(w, expected);
		}
		r = hakoi_walk_object(w, v, f->fields, dst);
		break;
	case HAKOI_K_ARRAY:
	case HAKOI_K_MAP: return walk_elements(w, v, f, base); /* ran check per element */
	case HAKOI_K_CUSTOM: r = f->parse(w, v, base, f); break;
	case HAKOI_K_IGNORE:
	case HAKOI_K_OTHERS:
	case HAKOI_K_CHECK: break;
	}
	if (r == 0 && f->check != NULL && f->kind != HAKOI_K_CHECK) {
		r = f->check(w, v, base, f);
	}
	return r;
}

static int is_member(const hakoi_field_t *f)
{
	return f->kind != HAKOI_K_OTHERS && f->kind != HAKOI_K_CHECK;
}

static int unknown_key(hakoi_walk_t *w, const hakoi_field_t *fields, const char *key)
{
	char known[700] = "";
	for (const hakoi_field_t *f = fields; f->key != NULL; f++) {
		if (is_member(f)) {
			if (strlen(known) + strlen(f->key) + 8 >= sizeof(known)) {
				append(known, sizeof(known), ", ...");
				break;
			}
			append(known, sizeof(known), "%s%s", known[0] != '\0' ? ", " : "", f->key);
		}
	}
	hakoi_walk_push_key(w, key);
	if (w->lenient) {
		hakoi_walk_warn(w, "unknown key, ignored (known: %s)",
		                known[0] != '\0' ? known : "none");
		hakoi_walk_pop(w);
		return 0;
	}
	return known[0] != '\0' ? hakoi_walk_fail(w, "unknown key (known: %s)", known)
	                        : hakoi_walk_fail(w, "unknown key (none is allowed here)");
}

int hakoi_walk_member(hakoi_walk_t *w, json_t *obj, const hakoi_field_t *f, void *base)
{
	json_t *v = json_object_get(obj, f->key);
	if (v != NULL && json_is_null(v) && (f->flags & HAKOI_F_NULL_OK)) {
		v = NULL;
	}
	hakoi_walk_push_key(w, f->key);
	if (v == NULL) {
		if (f->flags & HAKOI_F_REQUIRED) {
			char expected[256];
			hakoi_field_expect(f, expected, sizeof(expected));
			return hakoi_walk_fail_missing(w, expected);
		}
		hakoi_walk_pop(w);
		return 0;
	}
	int r = hakoi_walk_value(w, v, f, base);
	if (r != 0) {
		return r;
	}
	if (f->present != 0) {
		*(int *)(void *)((char *)base + f->present - 1) = 1;
	}
	hakoi_walk_pop(w);
	return 0;
}

int hakoi_walk_object(hakoi_walk_t *w, json_t *obj, const hakoi_field_t *fields, void *base)
{
	if (!json_is_object(obj)) {
		return hakoi_walk_fail_must(w, "an object");
	}
	int others = 0;
	for (const hakoi_field_t *f = fields; f->key != NULL; f++) {
		others |= f->kind == HAKOI_K_OTHERS;
	}
	const char *key;
	json_t *v;
	json_object_foreach(obj, key, v)
	{
		const hakoi_field_t *f = fields;
		while (f->key != NULL && !(is_member(f) && strcmp(f->key, key) == 0)) {
			f++;
		}
		if (f->key == NULL && !others) {
			int r = unknown_key(w, fields, key);
			if (r != 0) {
				return r;
			}
			continue;
		}
	}
	/* In the table's order, so that errors come in the order a reader expects and a check
	 * entry sees every member above it. */
	for (const hakoi_field_t *f = fields; f->key != NULL; f++) {
		int r = 0;
		if (f->kind == HAKOI_K_CHECK && f->check != NULL) {
			r = f->check(w, NULL, base, f);
		} else if (f->kind != HAKOI_K_OTHERS) {
			r = hakoi_walk_member(w, obj, f, base);
		}
		if (r != 0) {
			return r;
		}
	}
	return 0;
}
