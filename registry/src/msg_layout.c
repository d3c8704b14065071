/* The layout engine: offsets and sizes of a type as gcc lays out the equivalent C struct on
 * x86-64 and aarch64 (natural alignment, tail padding to the struct's alignment). */
#include "msg_internal.h"

static const struct kind_info {
	const char *name;
	uint32_t size; /* also the alignment */
} kinds[] = {
    [HAKO_MSG_BOOL] = {"bool", 4}, /* Hakoniwa's Hako_bool is an int */
    [HAKO_MSG_BYTE] = {"byte", 1},
    [HAKO_MSG_CHAR] = {"char", 1},
    [HAKO_MSG_INT8] = {"int8", 1},
    [HAKO_MSG_UINT8] = {"uint8", 1},
    [HAKO_MSG_INT16] = {"int16", 2},
    [HAKO_MSG_UINT16] = {"uint16", 2},
    [HAKO_MSG_INT32] = {"int32", 4},
    [HAKO_MSG_UINT32] = {"uint32", 4},
    [HAKO_MSG_INT64] = {"int64", 8},
    [HAKO_MSG_UINT64] = {"uint64", 8},
    [HAKO_MSG_FLOAT32] = {"float32", 4},
    [HAKO_MSG_FLOAT64] = {"float64", 8},
    [HAKO_MSG_STRING] = {"string", HAKO_MSG_STRING_SIZE}, /* char[128], aligned as char */
    [HAKO_MSG_STRUCT] = {"struct", 0},
};

const char *hako_msg_kind_name(hako_msg_kind_t kind)
{
	if ((unsigned)kind >= sizeof(kinds) / sizeof(kinds[0])) {
		return "unknown";
	}
	return kinds[kind].name;
}

static uint64_t align_up(uint64_t v, uint32_t align)
{
	return (v + align - 1) / align * align;
}

uint32_t hako_msg_pdu_fixed_size(const hako_msg_type_t *type)
{
	if (type == NULL) {
		return 0;
	}
	return 24u + (uint32_t)align_up(type->size, 8);
}

uint32_t hako_msg_data_end(const hako_msg_type_t *type)
{
	/* Fields are in offset order and each starts at or after the end of the one before, so
	 * the last field ends last; only its own tail padding is left to look into. */
	uint32_t base = 0;
	while (type != NULL && type->field_count > 0) {
		const hako_msg_field_t *f = &type->fields[type->field_count - 1];
		if (f->kind != HAKO_MSG_STRUCT || f->form == HAKO_MSG_VARRAY ||
		    (f->form == HAKO_MSG_ARRAY && f->count == 0)) {
			return base + f->offset + f->size;
		}
		base += f->offset + (f->form == HAKO_MSG_ARRAY ? (f->count - 1) * f->elem_size : 0);
		type = f->type;
	}
	return base;
}

/* hako_msg_type_t.cdr_plain of a laid-out type: its fields back to back in C, no bool, string or
 * variable array at any depth, so its CDR is its C bytes up to the last field (a primitive sits
 * at the same offset in both as long as the struct starts aligned in both). */
static uint32_t cdr_plain(const hako_msg_field_t *fields, size_t count)
{
	uint64_t pos = 0;
	for (size_t i = 0; i < count; i++) {
		const hako_msg_field_t *f = &fields[i];
		if (f->kind == HAKO_MSG_BOOL || f->kind == HAKO_MSG_STRING ||
		    f->form == HAKO_MSG_VARRAY || f->offset != pos) {
			return 0;
		}
		if (f->kind == HAKO_MSG_STRUCT) {
			uint32_t n = f->form == HAKO_MSG_ARRAY ? f->count : 1;
			uint32_t plain = f->type->cdr_plain;
			/* elements after the first start right after the one before */
			if (plain == 0 || (n > 1 && plain != f->elem_size)) {
				return 0;
			}
			pos = f->offset + (uint64_t)(n - 1) * f->elem_size + plain;
		} else {
			pos = f->offset + (uint64_t)f->size;
		}
	}
	return (uint32_t)pos;
}

int hakoi_msg_layout(hako_msg_type_t *type, hako_msg_field_t *fields, size_t count,
                     hako_error_t *err)
{
	uint64_t end = 0;
	uint32_t max_align = 1;
	int has_varray = 0;

	for (size_t i = 0; i < count; i++) {
		hako_msg_field_t *f = &fields[i];
		uint32_t field_align;
		uint64_t size;
		if (f->kind == HAKO_MSG_STRUCT) {
			f->elem_size = f->type->size;
			f->elem_align = f->type->align;
			has_varray |= f->type->has_varray;
		} else {
			f->elem_size = kinds[f->kind].size;
			f->elem_align = f->kind == HAKO_MSG_STRING ? 1 : kinds[f->kind].size;
		}
		switch (f->form) {
		case HAKO_MSG_ARRAY:
			size = (uint64_t)f->count * f->elem_size;
			field_align = f->elem_align;
			break;
		case HAKO_MSG_VARRAY:
			size = HAKO_MSG_VARRAY_SIZE;
			field_align = 4; /* {int32 length, int32 offset} */
			has_varray = 1;
			break;
		default:
			size = f->elem_size;
			field_align = f->elem_align;
			break;
		}
		if (f->form != HAKO_MSG_ARRAY) {
			f->count = 0;
		}
		uint64_t offset = align_up(end, field_align);
		end = offset + size;
		if (end > HAKOI_MSG_SIZE_MAX) {
			return hako_error_set(err, HAKO_ECONFIG, type->path, f->line, 0,
			                      "%s: the struct would be larger than %u bytes",
			                      f->name, HAKOI_MSG_SIZE_MAX);
		}
		f->offset = (uint32_t)offset;
		f->size = (uint32_t)size;
		if (field_align > max_align) {
			max_align = field_align;
		}
	}
	end = align_up(end, max_align);
	if (end > HAKOI_MSG_SIZE_MAX) {
		return hako_error_set(err, HAKO_ECONFIG, type->path, 0, 0,
		                      "the struct would be larger than %u bytes",
		                      HAKOI_MSG_SIZE_MAX);
	}
	type->size = (uint32_t)end;
	type->align = max_align;
	type->has_varray = has_varray;
	type->cdr_plain = cdr_plain(fields, count);
	return 0;
}
