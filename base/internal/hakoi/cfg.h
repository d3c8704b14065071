/* The config toolkit's walker: a loader is a table of fields, not code per key.
 *
 * A table describes the members of one JSON object: key, kind, where the value goes (offset
 * into the caller's struct), whether it is required, its range or its names, and, for what a
 * table cannot say (a cross-reference, a rule between two members), a callback. The walker
 * refuses unknown keys (naming the known ones), reports what is missing, converts and
 * range-checks values, allocates arrays, and words every error kind the same way in every file:
 *
 *   file:line:column: path.to.key: missing (must be <what>)
 *   file:line:column: path.to.key: must be <what>
 *   file:line:column: path.to.key: is <value>; must be <what>
 *   file:line:column: path.to.key: must not be empty
 *   file:line:column: path.to.key: is <n> bytes long; the limit is <m>
 *   file:line:column: path.to.key: has <n> entries; the limit is <m>
 *   file:line:column: path.to.key: unknown key (known: a, b, c)
 *   file:line:column: path[2].id: "x" is already used by path[0]
 *   file:line:column: path.to.key: cannot open <file>: <why>
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
	HAKOI_K_PATH,   /* char[size]: a string naming a file, stored resolved against the folder
	                   of the file being read (an absolute path is kept) */
	HAKOI_K_INT,    /* an integer of size 1, 2, 4 or 8 bytes (HAKOI_F_UNSIGNED) in [min, max] */
	HAKOI_K_NUMBER, /* a double in [dmin, dmax] (+-INFINITY: no bound), integer or real */
	HAKOI_K_BOOL,   /* true or false, stored as an integer 1 or 0 of size bytes */
	HAKOI_K_ENUM,   /* a string names[i], stored as the integer values[i] (or i) */
	HAKOI_K_OBJECT, /* a nested object walked with its own table at base + offset */
	HAKOI_K_ARRAY,  /* an array of min..max elements (below) */
	HAKOI_K_MAP,    /* an object whose members are entries keyed by an id (below) */
	HAKOI_K_CUSTOM, /* parse() reads the value; the path holds the key */
	HAKOI_K_IGNORE, /* accepted and not read: a key hako does not use */
	HAKOI_K_OTHERS, /* not a key: any member the table does not name is accepted, not read */
	HAKOI_K_CHECK,  /* not a key: check() runs when the walk reaches this entry (value NULL),
	                   for rules between members read above it; last in a table, it checks
	                   the whole object */
} hakoi_kind_t;

/* Flags. */
#define HAKOI_F_REQUIRED (1u << 0)
#define HAKOI_F_UNSIGNED (1u << 1) /* HAKOI_K_INT: the member is unsigned */
#define HAKOI_F_EMPTY_OK (1u << 2) /* HAKOI_K_STRING: "" is a value */
#define HAKOI_F_NULL_OK  (1u << 3) /* null is the same as absent */

typedef struct hakoi_field hakoi_field_t;
typedef struct hakoi_walk hakoi_walk_t;

/* A callback: 0, or an error reported through w (hakoi_walk_fail...), returned as is.
 * value is the JSON value (NULL for a HAKOI_K_CHECK entry); base is what f->offset is
 * relative to, or for the elements of an array or map, the element's storage. */
typedef int (*hakoi_parse_fn)(hakoi_walk_t *w, json_t *value, void *base, const hakoi_field_t *f);

/* Arrays and maps (HAKOI_K_ARRAY, HAKOI_K_MAP). The number of elements must be in [min, max]
 * (max 0: no limit). Element i is read with *elem (its key unused) into its storage, or by
 * parse() when elem is NULL, then check() runs; "[i]" (an array) or the member's key (a map)
 * is on the path meanwhile. Element storage, size bytes each:
 *   HAKOI_ELEMS_NEW(T, P, N): the walker allocates the elements (zeroed) and stores the
 *     pointer in member P, NULL for an empty array (the caller frees it, also after an
 *     error);
 *   HAKOI_ELEMS_IN(T, A, N): the elements are the fixed array member A (max is its length:
 *     an in-place array written without the macro must set max to at most that);
 *   size 0: no storage of their own; each element's base is the array's base (a callback
 *     merges or stores elements itself); .count = HAKOI_COUNT(T, N) still counts them.
 * The size_t member N counts the elements: it is i + 1 while element i is read, so a free
 * function sees every element that may hold memory; a callback comparing element i with the
 * earlier ones compares with those before hakoi_walk_index(w). */
struct hakoi_field {
	const char *key;
	hakoi_kind_t kind;
	unsigned flags;
	size_t offset; /* of the value in the caller's struct */
	size_t size;   /* of the value (strings: the buffer; arrays, maps: one element); 0 for a
	                  scalar: checked, not stored */
	long long min, max;          /* HAKOI_K_INT: range; arrays, maps: number of elements */
	double dmin, dmax;           /* HAKOI_K_NUMBER */
	const char *const *names;    /* HAKOI_K_ENUM, NULL-terminated */
	const int *values;           /* HAKOI_K_ENUM, NULL: the index of the name */
	const hakoi_field_t *fields; /* HAKOI_K_OBJECT: the table, ended by HAKOI_END */
	const hakoi_field_t *elem;   /* arrays, maps: how each element is read */
	hakoi_parse_fn parse;        /* HAKOI_K_CUSTOM; arrays, maps without elem: each element */
	hakoi_parse_fn check;        /* after the value (each element) was read and stored:
	                                cross-references, duplicates; HAKOI_K_CHECK: the check */
	const char *expect;          /* what the value must be, when the kind's wording is not
	                                enough ("an array of {id}") */
	size_t present;              /* HAKOI_PRESENT(T, M): an int set to 1 when the key is
	                                given; 0 = none */
	size_t count;                /* arrays, maps: offset + 1 of the size_t count; 0 = none */
	int alloc;                   /* arrays, maps: the walker allocates the elements */
};

/* The walk: the document position (file, text, path, error) and the loader's own context. */
struct hakoi_walk {
	hakoi_jctx_t j;
	void *user;
	/* Unknown keys are warned about (file:line:column, logged) and skipped instead of
	 * refused: loading a file as a more forgiving original does. */
	int lenient;
};

#define HAKOI_MEMBER_SIZE(type, member) sizeof(((type *)0)->member)
#define HAKOI_PRESENT(type, member)     (offsetof(type, member) + 1)
#define HAKOI_COUNT(type, member)       (offsetof(type, member) + 1)

/* Designated-initializer pieces, for table entries the shorthands below do not cover:
 *   {.key = "nodes", .kind = HAKOI_K_ARRAY, .flags = HAKOI_F_REQUIRED, .min = 1,
 *    HAKOI_ELEMS_NEW(cfg_t, nodes, node_count), .elem = &node_elem, .check = node_unique} */
#define HAKOI_AT(T, M) .offset = offsetof(T, M), .size = HAKOI_MEMBER_SIZE(T, M)
#define HAKOI_ELEMS_IN(T, A, N)                                                                    \
	.offset = offsetof(T, A), .size = sizeof(((T *)0)->A[0]),                                  \
	.max = (long long)(sizeof(((T *)0)->A) / sizeof(((T *)0)->A[0])),                          \
	.count = offsetof(T, N) + 1
#define HAKOI_ELEMS_NEW(T, P, N)                                                                   \
	.offset = offsetof(T, P), .size = sizeof(*((T *)0)->P), .count = offsetof(T, N) + 1,       \
	.alloc = 1

/* Table entries. T is the struct the table fills, M its member. */
#define HAKOI_STRING(key_, flags_, T, M)                                                           \
	{                                                                                          \
		.key = (key_), .kind = HAKOI_K_STRING, .flags = (flags_), HAKOI_AT(T, M)           \
	}
#define HAKOI_PATH(key_, flags_, T, M)                                                             \
	{                                                                                          \
		.key = (key_), .kind = HAKOI_K_PATH, .flags = (flags_), HAKOI_AT(T, M)             \
	}
#define HAKOI_INT(key_, flags_, T, M, lo, hi)                                                      \
	{                                                                                          \
		.key = (key_), .kind = HAKOI_K_INT, .flags = (flags_), HAKOI_AT(T, M),             \
		.min = (lo), .max = (hi)                                                           \
	}
#define HAKOI_NUMBER(key_, flags_, T, M, lo, hi)                                                   \
	{                                                                                          \
		.key = (key_), .kind = HAKOI_K_NUMBER, .flags = (flags_), HAKOI_AT(T, M),          \
		.dmin = (lo), .dmax = (hi)                                                         \
	}
#define HAKOI_BOOL(key_, flags_, T, M)                                                             \
	{                                                                                          \
		.key = (key_), .kind = HAKOI_K_BOOL, .flags = (flags_), HAKOI_AT(T, M)             \
	}
#define HAKOI_ENUM(key_, flags_, T, M, names_, values_)                                            \
	{                                                                                          \
		.key = (key_), .kind = HAKOI_K_ENUM, .flags = (flags_), HAKOI_AT(T, M),            \
		.names = (names_), .values = (values_)                                             \
	}
#define HAKOI_OBJECT(key_, flags_, T, M, table)                                                    \
	{                                                                                          \
		.key = (key_), .kind = HAKOI_K_OBJECT, .flags = (flags_), HAKOI_AT(T, M),          \
		.fields = (table)                                                                  \
	}
#define HAKOI_CUSTOM(key_, flags_, fn, expect_)                                                    \
	{                                                                                          \
		.key = (key_), .kind = HAKOI_K_CUSTOM, .flags = (flags_), .parse = (fn),           \
		.expect = (expect_)                                                                \
	}
#define HAKOI_IGNORE(key_)                                                                         \
	{                                                                                          \
		.key = (key_), .kind = HAKOI_K_IGNORE                                              \
	}
#define HAKOI_OTHERS                                                                               \
	{                                                                                          \
		.key = "*", .kind = HAKOI_K_OTHERS                                                 \
	}
#define HAKOI_CHECK(fn)                                                                            \
	{                                                                                          \
		.key = "(check)", .kind = HAKOI_K_CHECK, .check = (fn)                             \
	}
#define HAKOI_END                                                                                  \
	{                                                                                          \
		.key = NULL                                                                        \
	}

/* Read and parse a config file: 0 (*root to json_decref, *text to free) or an error in err with
 * the file named (cannot open, invalid JSON at line:column, a duplicate key at its place). */
int hakoi_cfg_load(const char *path, hako_error_t *err, json_t **root, char **text, size_t *len);
/* The same for text already in memory (file names it in errors). */
int hakoi_cfg_parse(const char *file, const char *text, size_t len, hako_error_t *err,
                    json_t **root);

/* Start a walk over a parsed document. */
void hakoi_walk_init(hakoi_walk_t *w, hako_error_t *err, const char *file, const char *text,
                     size_t len, void *user);

/* Walk obj (which must be an object: "must be an object" otherwise) with fields into base: every
 * member must be in the table, every required one present; each value is converted and stored,
 * in the table's order. The path must hold obj's place (empty for the top level). 0 or the
 * first error. */
int hakoi_walk_object(hakoi_walk_t *w, json_t *obj, const hakoi_field_t *fields, void *base);

/* Walk one value with one field (the key already pushed by the caller). */
int hakoi_walk_value(hakoi_walk_t *w, json_t *v, const hakoi_field_t *f, void *base);

/* Read the member f->key of obj with f, as hakoi_walk_object does for each field (missing,
 * null, present flag): for a callback that must read one member before choosing how to read
 * the others (a "type" that selects a table). The path must hold obj's place. */
int hakoi_walk_member(hakoi_walk_t *w, json_t *obj, const hakoi_field_t *f, void *base);

/* Check the string s of n bytes as HAKOI_K_STRING does (flags: HAKOI_F_EMPTY_OK) and copy it
 * into dst (size bytes); for what is not a JSON string value, such as a map's key. */
int hakoi_walk_string(hakoi_walk_t *w, const char *s, size_t n, unsigned flags, char *dst,
                      size_t size);

/* rel resolved against the folder of the file being walked (an absolute rel is kept) into dst;
 * an error at the current path when it does not fit. */
int hakoi_walk_resolve(hakoi_walk_t *w, const char *rel, char *dst, size_t size);

/* The innermost array index on the path (0 if none), and the key on top of it (NULL if the
 * top is an index, or the path is deeper than HAKOI_JCTX_DEPTH): for callbacks of array
 * elements and map entries. */
size_t hakoi_walk_index(const hakoi_walk_t *w);
const char *hakoi_walk_key(const hakoi_walk_t *w);

/* Errors at the current path, worded as above. All return the code (HAKO_ECONFIG unless told).
 */
int hakoi_walk_fail(hakoi_walk_t *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Log a warning positioned at the current path, as hakoi_walk_fail would report it. */
void hakoi_walk_warn(hakoi_walk_t *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int hakoi_walk_fail_missing(hakoi_walk_t *w, const char *expected);
int hakoi_walk_fail_must(hakoi_walk_t *w, const char *expected);
/* "<what> is already used by <the path up to its innermost index, that index being earlier>":
 * robots[2].name, earlier 0 -> "robot \"x\" is already used by robots[0]". */
int hakoi_walk_fail_dup(hakoi_walk_t *w, size_t earlier, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int hakoi_walk_fail_oom(hakoi_walk_t *w);
/* A file named at the current path failed to load with sub (hakoi_jctx_sub_error). */
int hakoi_walk_sub_error(hakoi_walk_t *w, int r, const hako_error_t *sub, const char *resolved);

#define hakoi_walk_push_key(w, k)   hakoi_jctx_push_key(&(w)->j, (k))
#define hakoi_walk_push_index(w, i) hakoi_jctx_push_index(&(w)->j, (i))
#define hakoi_walk_pop(w)           hakoi_jctx_pop(&(w)->j)

/* What a field must be, in words ("a string", "an integer in [1, 65535]", "\"a\" or \"b\""). */
void hakoi_field_expect(const hakoi_field_t *f, char *buf, size_t len);

#endif
