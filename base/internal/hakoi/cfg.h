/* The config toolkit's walker: a loader is a table of fields, not code per key.
 *
 * A table describes the members of one JSON object: key, kind, where the value goes (offset
 * into the caller's struct), whether it is required, its range or its names, and, for what a
 * table cannot say (a cross-reference, a file path, an array of objects), a callback. The walker
 * refuses unknown keys, reports what is missing, converts and range-checks values, and words
 * every error kind the same way in every file:
 *
 *   file:line:column: path.to.key: missing (must be <what>)
 *   file:line:column: path.to.key: must be <what>
 *   file:line:column: path.to.key: is <value>; must be <what>
 *   file:line:column: path.to.key: unknown key (known: a, b, c)
 *
 * Files are parsed with duplicate keys refused (jansson's JSON_REJECT_DUPLICATES), so a key
 * given twice is an error at its position in every file hako reads.
 */
#ifndef HAKOI_CFG_H
#define HAKOI_CFG_H

#include <jansson.h>
#include <stddef.h>

#include "hakoi/json_pos.h"

typedef enum hakoi_kind {
	HAKOI_K_STRING, /* char[size]: non-empty (HAKOI_F_EMPTY_OK allows ""), no NUL, < size */
	HAKOI_K_INT,    /* an integer of size 1, 2, 4 or 8 bytes (HAKOI_F_UNSIGNED) in [min, max] */
	HAKOI_K_NUMBER, /* a double in [dmin, dmax], integer or real, finite */
	HAKOI_K_BOOL,   /* an int, 0 or 1 */
	HAKOI_K_ENUM,   /* an int: values[i] (or i) for the string names[i] */
	HAKOI_K_OBJECT, /* a nested object walked with its own table at the same base + offset */
	HAKOI_K_CUSTOM, /* parse() gets the value; the path holds the key */
	HAKOI_K_IGNORE, /* accepted and not stored: a key of the original hako does not use */
} hakoi_kind_t;

/* Flags. */
#define HAKOI_F_REQUIRED (1u << 0)
#define HAKOI_F_UNSIGNED (1u << 1) /* HAKOI_K_INT: the field is unsigned */
#define HAKOI_F_EMPTY_OK (1u << 2) /* HAKOI_K_STRING: "" is a value */
#define HAKOI_F_NULL_OK  (1u << 3) /* null is the same as absent */

typedef struct hakoi_field hakoi_field_t;
typedef struct hakoi_walk hakoi_walk_t;

/* A field's own parser (HAKOI_K_CUSTOM), or a check run after the table's fields were read
 * (hakoi_walk's `after`): 0 or an error reported through w (hakoi_walk_fail...). */
typedef int (*hakoi_parse_fn)(hakoi_walk_t *w, json_t *value, void *base, const hakoi_field_t *f);

struct hakoi_field {
	const char *key;
	hakoi_kind_t kind;
	unsigned flags;
	size_t offset; /* of the value in the caller's struct */
	size_t size;   /* of the value (strings: the buffer) */
	long long min, max;
	double dmin, dmax;
	const char *const *names;    /* HAKOI_K_ENUM, NULL-terminated */
	const int *values;           /* HAKOI_K_ENUM, NULL: the index of the name */
	const hakoi_field_t *fields; /* HAKOI_K_OBJECT, ended by a field with key NULL */
	hakoi_parse_fn parse;        /* HAKOI_K_CUSTOM */
	const char *expect;          /* what the value must be, when the kind's wording is not
	                                enough ("an integer >= 1 (microseconds)") */
	size_t present;              /* HAKOI_PRESENT(T, M): an int set to 1 when the key is
	                                given; 0 = none */
};

/* The walk: the document position (file, text, path, error) and the loader's own context. */
struct hakoi_walk {
	hakoi_jctx_t j;
	void *user;
};

#define HAKOI_MEMBER_SIZE(type, member) sizeof(((type *)0)->member)
#define HAKOI_PRESENT(type, member)     (offsetof(type, member) + 1)

/* Table entries. T is the struct the table fills, M its member. */
#define HAKOI_STRING(key, flags, T, M)                                                             \
	{                                                                                          \
		(key), HAKOI_K_STRING, (flags), offsetof(T, M), HAKOI_MEMBER_SIZE(T, M)            \
	}
#define HAKOI_INT(key, flags, T, M, lo, hi)                                                        \
	{                                                                                          \
		(key), HAKOI_K_INT, (flags), offsetof(T, M), HAKOI_MEMBER_SIZE(T, M), (lo), (hi)   \
	}
#define HAKOI_NUMBER(key, flags, T, M, lo, hi)                                                     \
	{                                                                                          \
		(key), HAKOI_K_NUMBER, (flags), offsetof(T, M), sizeof(double), 0, 0, (lo), (hi)   \
	}
#define HAKOI_BOOL(key, flags, T, M)                                                               \
	{                                                                                          \
		(key), HAKOI_K_BOOL, (flags), offsetof(T, M), sizeof(int)                          \
	}
#define HAKOI_ENUM(key, flags, T, M, names_, values_)                                              \
	{                                                                                          \
		(key), HAKOI_K_ENUM, (flags), offsetof(T, M), sizeof(int), 0, 0, 0, 0, (names_),   \
		    (values_)                                                                      \
	}
#define HAKOI_OBJECT(key, flags, T, M, table)                                                      \
	{                                                                                          \
		(key), HAKOI_K_OBJECT, (flags), offsetof(T, M), HAKOI_MEMBER_SIZE(T, M), 0, 0, 0,  \
		    0, NULL, NULL, (table)                                                         \
	}
#define HAKOI_CUSTOM(key, flags, fn, expect_)                                                      \
	{                                                                                          \
		(key), HAKOI_K_CUSTOM, (flags), 0, 0, 0, 0, 0, 0, NULL, NULL, NULL, (fn),          \
		    (expect_)                                                                      \
	}
#define HAKOI_IGNORE(key)                                                                          \
	{                                                                                          \
		(key), HAKOI_K_IGNORE, 0                                                           \
	}
#define HAKOI_END                                                                                  \
	{                                                                                          \
		NULL                                                                               \
	}

/* Read and parse a config file: 0 (*root to json_decref, *text to free) or an error in err with
 * the file named (cannot read, invalid JSON at line:column, a duplicate key at its place). */
int hakoi_cfg_load(const char *path, hako_error_t *err, json_t **root, char **text, size_t *len);
/* The same for text already in memory (file names it in errors). */
int hakoi_cfg_parse(const char *file, const char *text, size_t len, hako_error_t *err,
                    json_t **root);

/* Start a walk over a parsed document. */
void hakoi_walk_init(hakoi_walk_t *w, hako_error_t *err, const char *file, const char *text,
                     size_t len, void *user);

/* Walk obj (which must be an object: "must be an object" otherwise) with fields into base: every
 * member must be in the table, every required one present; each value is converted and stored.
 * The path must hold obj's place (empty for the top level). 0 or the first error. */
int hakoi_walk_object(hakoi_walk_t *w, json_t *obj, const hakoi_field_t *fields, void *base);

/* Walk one value with one field (the key already pushed by the caller). */
int hakoi_walk_value(hakoi_walk_t *w, json_t *v, const hakoi_field_t *f, void *base);

/* Arrays: fn(w, element, i, arg) for each element, with "[i]" on the path. "must be an array"
 * (or "an array of 1 or more ..." with nonempty) otherwise. */
typedef int (*hakoi_elem_fn)(hakoi_walk_t *w, json_t *elem, size_t index, void *arg);
int hakoi_walk_array(hakoi_walk_t *w, json_t *arr, int nonempty, hakoi_elem_fn fn, void *arg);

/* Errors at the current path, worded as above. All return code (HAKO_ECONFIG unless told). */
int hakoi_walk_fail(hakoi_walk_t *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int hakoi_walk_fail_missing(hakoi_walk_t *w, const char *expected);
int hakoi_walk_fail_must(hakoi_walk_t *w, const char *expected);

#define hakoi_walk_push_key(w, k)   hakoi_jctx_push_key(&(w)->j, (k))
#define hakoi_walk_push_index(w, i) hakoi_jctx_push_index(&(w)->j, (i))
#define hakoi_walk_pop(w)           hakoi_jctx_pop(&(w)->j)

/* What a field must be, in words ("a string", "an integer in [1, 65535]", "\"a\" or \"b\""). */
void hakoi_field_expect(const hakoi_field_t *f, char *buf, size_t len);

#endif
