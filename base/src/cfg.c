/* The field-descriptor walker of the config toolkit (hakoi/cfg.h). */
#include "hakoi/cfg.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hakoi/file.h"

int hakoi_cfg_parse(const char *file, const char *text, size_t len, hako_error_t *err,
                    json_t **root)
{
	json_error_t je;
	*root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (*root == NULL) {
		return hako_error_set(err, HAKO_ECONFIG, file, je.line > 0 ? je.line : 0,
		                      je.line > 0 ? je.column : 0, "invalid JSON: %s", je.text);
	}
	return 0;
}

int hakoi_cfg_load(const char *path, hako_error_t *err, json_t **root, char **text, size_t *len)
{
	*root = NULL;
	*text = NULL;
	int e = hakoi_read_file(path, text, len);
	if (e != 0) {
		return hako_error_set(err, hakoi_read_file_code(e), path, 0, 0, "cannot read: %s",
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

int hakoi_walk_fail(hakoi_walk_t *w, const char *fmt, ...)
{
	char what[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return hakoi_jctx_report(&w->j, w->j.depth, HAKO_ECONFIG, what);
}

int hakoi_walk_fail_missing(hakoi_walk_t *w, const char *expected)
{
	return hakoi_jctx_fail_missing(&w->j, expected);
}

int hakoi_walk_fail_must(hakoi_walk_t *w, const char *expected)
{
	return hakoi_walk_fail(w, "must be %s", expected);
}

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
	case HAKOI_K_STRING: snprintf(buf, len, "a string"); break;
	case HAKOI_K_INT: snprintf(buf, len, "an integer in [%lld, %lld]", f->min, f->max); break;
	case HAKOI_K_NUMBER:
		if (isinf(f->dmax)) {
			snprintf(buf, len, "a number >= %g", f->dmin);
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
	case HAKOI_K_OBJECT: snprintf(buf, len, "an object"); break;
	case HAKOI_K_CUSTOM:
	case HAKOI_K_IGNORE: snprintf(buf, len, "a value"); break;
	}
}

static int store_int(void *dst, size_t size, long long v)
{
	switch (size) {
	case 1: *(int8_t *)dst = (int8_t)v; return 0;
	case 2: *(int16_t *)dst = (int16_t)v; return 0;
	case 4: *(int32_t *)dst = (int32_t)v; return 0;
	case 8: *(int64_t *)dst = (int64_t)v; return 0;
	default: return -1;
	}
}

static int walk_string(hakoi_walk_t *w, json_t *v, const hakoi_field_t *f, char *dst)
{
	if (!json_is_string(v)) {
		return hakoi_walk_fail_must(w, "a string");
	}
	size_t n = json_string_length(v);
	if (n == 0 && !(f->flags & HAKOI_F_EMPTY_OK)) {
		return hakoi_walk_fail(w, "must not be empty");
	}
	if (strlen(json_string_value(v)) != n) {
		return hakoi_walk_fail(w, "must not contain a NUL character");
	}
	if (n >= f->size) {
		return hakoi_walk_fail(w, "is %zu bytes long; the limit is %zu", n, f->size - 1);
	}
	memcpy(dst, json_string_value(v), n + 1);
	return 0;
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
	return store_int(dst, f->size, n) == 0 ? 0 : hakoi_walk_fail(w, "bad field size");
}

static int walk_number(hakoi_walk_t *w, json_t *v, const hakoi_field_t *f, double *dst)
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
	*dst = d;
	return 0;
}

static int walk_enum(hakoi_walk_t *w, json_t *v, const hakoi_field_t *f, int *dst)
{
	char expected[256];
	hakoi_field_expect(f, expected, sizeof(expected));
	const char *s = json_string_value(v);
	for (size_t i = 0; s != NULL && f->names[i] != NULL; i++) {
		if (strcmp(s, f->names[i]) == 0) {
			*dst = f->values != NULL ? f->values[i] : (int)i;
			return 0;
		}
	}
	if (s == NULL) {
		return hakoi_walk_fail_must(w, expected);
	}
	return hakoi_walk_fail(w, "is \"%.64s\"; must be %s", s, expected);
}

int hakoi_walk_value(hakoi_walk_t *w, json_t *v, const hakoi_field_t *f, void *base)
{
	char *dst = (char *)base + f->offset;
	switch (f->kind) {
	case HAKOI_K_STRING: return walk_string(w, v, f, dst);
	case HAKOI_K_INT: return walk_int(w, v, f, dst);
	case HAKOI_K_NUMBER: return walk_number(w, v, f, (double *)(void *)dst);
	case HAKOI_K_BOOL:
		if (!json_is_boolean(v)) {
			return hakoi_walk_fail_must(w, "true or false");
		}
		*(int *)(void *)dst = json_is_true(v);
		return 0;
	case HAKOI_K_ENUM: return walk_enum(w, v, f, (int *)(void *)dst);
	case HAKOI_K_OBJECT: return hakoi_walk_object(w, v, f->fields, dst);
	case HAKOI_K_CUSTOM: return f->parse(w, v, base, f);
	case HAKOI_K_IGNORE: return 0;
	}
	return hakoi_walk_fail(w, "unknown field kind");
}

static const hakoi_field_t *find_field(const hakoi_field_t *fields, const char *key)
{
	for (const hakoi_field_t *f = fields; f->key != NULL; f++) {
		if (strcmp(f->key, key) == 0) {
			return f;
		}
	}
	return NULL;
}

static int unknown_key(hakoi_walk_t *w, const hakoi_field_t *fields, const char *key)
{
	char known[400] = "";
	for (const hakoi_field_t *f = fields; f->key != NULL; f++) {
		append(known, sizeof(known), "%s%s", f == fields ? "" : ", ", f->key);
	}
	hakoi_walk_push_key(w, key);
	return fields->key != NULL ? hakoi_walk_fail(w, "unknown key (known: %s)", known)
	                           : hakoi_walk_fail(w, "unknown key (none is allowed here)");
}

int hakoi_walk_object(hakoi_walk_t *w, json_t *obj, const hakoi_field_t *fields, void *base)
{
	if (!json_is_object(obj)) {
		return hakoi_walk_fail_must(w, "an object");
	}
	const char *key;
	json_t *v;
	json_object_foreach(obj, key, v)
	{
		if (find_field(fields, key) == NULL) {
			return unknown_key(w, fields, key);
		}
	}
	/* In the table's order, so that errors come in the order a reader expects. */
	for (const hakoi_field_t *f = fields; f->key != NULL; f++) {
		v = json_object_get(obj, f->key);
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
			continue;
		}
		int r = hakoi_walk_value(w, v, f, base);
		if (r != 0) {
			return r;
		}
		if (f->present != 0) {
			*(int *)(void *)((char *)base + f->present - 1) = 1;
		}
		hakoi_walk_pop(w);
	}
	return 0;
}

int hakoi_walk_array(hakoi_walk_t *w, json_t *arr, int nonempty, hakoi_elem_fn fn, void *arg)
{
	if (!json_is_array(arr)) {
		return hakoi_walk_fail_must(w, "an array");
	}
	if (nonempty && json_array_size(arr) == 0) {
		return hakoi_walk_fail(w, "must not be empty");
	}
	for (size_t i = 0; i < json_array_size(arr); i++) {
		hakoi_walk_push_index(w, i);
		int r = fn(w, json_array_get(arr, i), i, arg);
		if (r != 0) {
			return r;
		}
		hakoi_walk_pop(w);
	}
	return 0;
}
