/* PDU types: ROS-style .msg files, their layout as C structs, and a registry that finds them.
 *
 * A .msg file holds one field per line: `<type> <name>` with type a primitive (bool, byte, char,
 * int8..int64, uint8..uint64, float32, float64, string), a nested type (`pkg/Type`, or `Type`
 * from the same package), a fixed array `T[N]` or a variable array `T[]`; `#` starts a comment.
 * Constants (`int32 X=1`), default values, bounded strings/arrays and wstring are refused with an
 * error naming the file and the line.
 *
 * Layout (Hakoniwa's binary format, ARCHITECTURE section 3): the base is the C struct with
 * natural alignment as gcc lays it out on x86-64 / aarch64; string = char[128]; bool = 4 bytes;
 * byte and char = uint8; a variable array is {int32 length, int32 offset from the heap start}
 * (8 bytes, 4-aligned).
 */
#ifndef HAKO_MSG_H
#define HAKO_MSG_H

#include "hako/api.h"

#include <stddef.h>
#include <stdint.h>

#include "hako/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define HAKO_MSG_NAME_MAX    64  /* package, type and field names, with the NUL */
#define HAKO_MSG_FULL_MAX    128 /* "pkg/Type" with the NUL */
#define HAKO_MSG_STRING_SIZE 128
#define HAKO_MSG_VARRAY_SIZE 8

typedef enum hako_msg_kind {
	HAKO_MSG_BOOL = 0,
	HAKO_MSG_BYTE,
	HAKO_MSG_CHAR,
	HAKO_MSG_INT8,
	HAKO_MSG_UINT8,
	HAKO_MSG_INT16,
	HAKO_MSG_UINT16,
	HAKO_MSG_INT32,
	HAKO_MSG_UINT32,
	HAKO_MSG_INT64,
	HAKO_MSG_UINT64,
	HAKO_MSG_FLOAT32,
	HAKO_MSG_FLOAT64,
	HAKO_MSG_STRING,
	HAKO_MSG_STRUCT,
} hako_msg_kind_t;

typedef enum hako_msg_form {
	HAKO_MSG_SINGLE = 0, /* T name */
	HAKO_MSG_ARRAY = 1,  /* T[N] name: N elements inline in the base */
	HAKO_MSG_VARRAY =
	    2, /* T[] name: {int32 length, int32 offset} in the base, elements in the heap */
} hako_msg_form_t;

typedef struct hako_msg_type hako_msg_type_t;

typedef struct hako_msg_field {
	char name[HAKO_MSG_NAME_MAX];
	hako_msg_kind_t kind;
	hako_msg_form_t form;
	const hako_msg_type_t *type; /* the nested type when kind == HAKO_MSG_STRUCT, else NULL */
	uint32_t count;              /* N for HAKO_MSG_ARRAY, else 0 */
	uint32_t elem_size; /* one element: 1..8, 4 for bool, 128 for string, struct size */
	uint32_t elem_align;
	uint32_t offset; /* of the field in the base struct */
	uint32_t size;   /* bytes in the base: elem_size, N * elem_size, or 8 for a varray */
	int line;        /* line of the field in its .msg file */
} hako_msg_field_t;

struct hako_msg_type {
	char pkg[HAKO_MSG_NAME_MAX];
	char name[HAKO_MSG_NAME_MAX];
	char full_name[HAKO_MSG_FULL_MAX]; /* "pkg/Type" */
	char path[512]; /* its .msg file ("<builtin>/pkg/Type.msg" if built in) */
	size_t field_count;
	const hako_msg_field_t *fields;
	uint32_t size;  /* sizeof the C struct, tail padding included */
	uint32_t align; /* its alignment (1 for a type without fields) */
	int has_varray; /* a field at any depth is a variable array */
	/* Nonzero when the type's ROS 2 CDR (hako/cdr.h), starting at a CDR position aligned to
	 * `align`, is the first cdr_plain bytes of its C struct: only primitives other than bool,
	 * at any depth, with no padding between them (Twist, Pose, Vector3, ...). 0 otherwise. */
	uint32_t cdr_plain;
};

/* "bool", "int32", ..., "string", "struct". */
HAKO_API const char *hako_msg_kind_name(hako_msg_kind_t kind);

/* The PDU size of a type without heap data: 24-byte meta + base rounded up to 8. */
HAKO_API uint32_t hako_msg_pdu_fixed_size(const hako_msg_type_t *type);

/* Where the bytes of the type's fields end: its size without tail padding, at any depth (a
 * nested struct at the end counts up to its own last field). Hakoniwa's Python writer starts
 * the heap right there (heap offset 24 + this, often not a multiple of 8), the C++ one at
 * 24 + size rounded up to 8; a reader accepts any heap offset from 24 + this on. */
HAKO_API uint32_t hako_msg_data_end(const hako_msg_type_t *type);

typedef struct hako_msg_registry hako_msg_registry_t;

/* A registry whose search path is $HAKO_MSG_PATH (folders separated by ':'), then the built-in
 * packages (compiled into the library). A folder holds packages as <pkg>/<Type>.msg or
 * <pkg>/msg/<Type>.msg. Types load on first use and stay until destroy. */
HAKO_API int hako_msg_registry_create(hako_msg_registry_t **out);
HAKO_API void hako_msg_registry_destroy(hako_msg_registry_t *reg);

/* Search `dir` before the folders already on the path. */
HAKO_API int hako_msg_registry_add_path(hako_msg_registry_t *reg, const char *dir);

/* The type "pkg/Type", loaded with its nested types. HAKO_ENOENT if no folder has it (err says
 * where it looked), HAKO_ECONFIG for a malformed .msg (err: file, line, column, what), including
 * a type that nests itself. */
HAKO_API int hako_msg_registry_get(hako_msg_registry_t *reg, const char *full_name,
                                   const hako_msg_type_t **out, hako_error_t *err);

/* Define pkg/name from .msg text (tests, tools, generated code). `path` is what errors name.
 * HAKO_EEXIST if the registry has that type already. */
HAKO_API int hako_msg_registry_add_text(hako_msg_registry_t *reg, const char *pkg, const char *name,
                                        const char *text, const char *path,
                                        const hako_msg_type_t **out, hako_error_t *err);

/* Every type the search path and the built-in packages provide, as sorted "pkg/Type" names
 * (loaded or not). Free with hako_msg_names_free. */
HAKO_API int hako_msg_registry_list(hako_msg_registry_t *reg, char ***names, size_t *count);
HAKO_API void hako_msg_names_free(char **names, size_t count);

/* The built-in packages compiled into the library (every package and type of Hakoniwa's
 * hakoniwa-pdu-registry: std_msgs, geometry_msgs, sensor_msgs, hako_msgs, hako_srv_msgs,
 * drone_srv_msgs, ...): the text of pkg/Type.msg or NULL. */
HAKO_API const char *hako_msg_builtin_text(const char *pkg, const char *name);
/* Number of built-in types, and the i-th one's package and name. */
HAKO_API size_t hako_msg_builtin_count(void);
HAKO_API void hako_msg_builtin_at(size_t i, const char **pkg, const char **name);

#ifdef __cplusplus
}
#endif
#endif
