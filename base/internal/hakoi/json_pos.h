/* Where a value sits in a JSON text. jansson keeps no positions per value, so loaders that want
 * to say "file:line:column: robots[0].name: ..." re-scan the text along the same path. */
#ifndef HAKOI_JSON_POS_H
#define HAKOI_JSON_POS_H

#include <stddef.h>

#include "hako/error.h"
#include "hakoi/file.h"

/* One step of a path: an object member (key != NULL) or an array element (key == NULL). */
typedef struct hakoi_json_seg {
	const char *key;
	size_t index;
} hakoi_json_seg_t;

/* Find the first character of the value at path (depth steps) in text, which must be JSON that
 * jansson accepted. Keys compare after unescaping; a repeated key resolves to its last occurrence,
 * the one jansson keeps. line and column are 1-based; columns count Unicode characters, as in
 * jansson's json_error_t. Returns 0, or -1 when the path is not in the text. */
int hakoi_json_pos(const char *text, size_t len, const hakoi_json_seg_t *path, size_t depth,
                   int *line, int *column);

/* Write path as "robots[0].shm_pdu_readers[1].pdu_size" ("" for depth 0) into buf. */
void hakoi_json_path_format(const hakoi_json_seg_t *path, size_t depth, char *buf, size_t len);

/* A loader's place in the document it checks: the file, its text, and the path of the value
 * being checked, so that every error says "file:line:column: path: what". */
#define HAKOI_JCTX_DEPTH 12

typedef struct hakoi_jctx {
	hako_error_t *err;
	const char *file;
	const char *text;
	size_t len;
	hakoi_json_seg_t path[HAKOI_JCTX_DEPTH];
	size_t depth;
} hakoi_jctx_t;

void hakoi_jctx_push_key(hakoi_jctx_t *j, const char *key);
void hakoi_jctx_push_index(hakoi_jctx_t *j, size_t index);
void hakoi_jctx_pop(hakoi_jctx_t *j);
/* Report the value at the current path, positioned at its first `at` segments (a missing value
 * has no position: it points at the object that lacks it). Returns code. */
int hakoi_jctx_report(hakoi_jctx_t *j, size_t at, int code, const char *what);
/* HAKO_ECONFIG at the current path. */
int hakoi_jctx_fail(hakoi_jctx_t *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The member at the top of the path is missing: "missing (must be <expected>)". */
int hakoi_jctx_fail_missing(hakoi_jctx_t *j, const char *expected);
int hakoi_jctx_fail_oom(hakoi_jctx_t *j);
/* A file named at the current path (pushed) failed to load (r != 0, its error in sub): a
 * missing file is reported here, where it is named; other errors point into that file and are
 * passed on as they are. Returns r. */
int hakoi_jctx_sub_error(hakoi_jctx_t *j, int r, const hako_error_t *sub, const char *resolved);
/* Members of obj not in known[] are refused ("unknown key"). obj is a jansson json_t *. */
int hakoi_jctx_check_keys(hakoi_jctx_t *j, const void *obj, const char *const *known, size_t n);

/* The integer member key of obj (a json_t *) in [min, max], at path.key. An absent member is
 * an error when required ("missing (must be an integer in [min, max])"), else *out is left
 * alone. */
int hakoi_jctx_get_int(hakoi_jctx_t *j, const void *obj, const char *key, int required,
                       long long min, long long max, long long *out);

#endif
