/* Internals of the type registry: the .msg parser, the layout engine and the built-in table. */
#ifndef HAKOI_MSG_INTERNAL_H
#define HAKOI_MSG_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "hako/error.h"
#include "hako/msg.h"

/* Largest base struct accepted: far beyond any real message, and small enough that offsets,
 * the 24-byte meta and the rounding to 8 never overflow the int32 fields of the PDU format. */
#define HAKOI_MSG_SIZE_MAX (1u << 30)
/* Largest N of T[N] (exclusive). */
#define HAKOI_MSG_ARRAY_MAX (1u << 20)

/* One built-in .msg file, compiled in by cmake/embed_msgs.cmake. The table is sorted by pkg,
 * then name (strcmp order). */
struct hakoi_builtin_msg {
	const char *pkg;
	const char *name;
	const char *text;
};
extern const struct hakoi_builtin_msg hakoi_builtin_msgs[];
extern const size_t hakoi_builtin_msg_count;

/* A field as written in the .msg file, before nested types are resolved. */
typedef struct hakoi_msg_field_def {
	char name[HAKO_MSG_NAME_MAX];
	hako_msg_kind_t kind;
	hako_msg_form_t form;
	uint32_t count;                   /* N of T[N] */
	char type_pkg[HAKO_MSG_NAME_MAX]; /* nested type, when kind == HAKO_MSG_STRUCT */
	char type_name[HAKO_MSG_NAME_MAX];
	int line;
	int column;      /* of the type, where errors about the nested type point */
	int name_column; /* of the name */
} hakoi_msg_field_def_t;

typedef struct hakoi_msg_def {
	size_t count;
	hakoi_msg_field_def_t *fields;
} hakoi_msg_def_t;

/* 1 if s is a package, type or field name: [a-zA-Z][a-zA-Z0-9_]*, shorter than
 * HAKO_MSG_NAME_MAX. */
int hakoi_msg_name_ok(const char *s);

/* Parse len bytes of .msg text of package pkg. `path` is what errors name. 0, HAKO_ECONFIG
 * (err: path, line, column, what) or HAKO_ENOMEM. Free def with hakoi_msg_def_free. */
int hakoi_msg_parse(const char *pkg, const char *text, size_t len, const char *path,
                    hakoi_msg_def_t *def, hako_error_t *err);
void hakoi_msg_def_free(hakoi_msg_def_t *def);

/* Lay out a type whose fields have name, kind, form, count, type (nested types laid out
 * already) and line set: fills the other members of every field and type->size, align,
 * has_varray. HAKO_ECONFIG (err names type->path and the field's line) if the struct would be
 * larger than HAKOI_MSG_SIZE_MAX. */
int hakoi_msg_layout(hako_msg_type_t *type, hako_msg_field_t *fields, size_t count,
                     hako_error_t *err);

#endif
