/* Where a value sits in a JSON text. jansson keeps no positions per value, so loaders that want
 * to say "file:line:column: robots[0].name: ..." re-scan the text along the same path. */
#ifndef HAKOI_JSON_POS_H
#define HAKOI_JSON_POS_H

#include <stddef.h>

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

/* Read a whole file into a malloc'd buffer (not NUL-terminated). Returns 0 or an errno value. */
int hakoi_read_file(const char *path, char **text, size_t *len);

#endif
