#include "cdr_fill.h"

#include <stdio.h>
#include <string.h>

#include "hako/pdu.h"

struct fill {
	hako_pdu_writer_t w;
	uint32_t k; /* the next value's number */
};

static void put_prim(struct fill *F, hako_msg_kind_t kind, uint8_t *at)
{
	uint32_t k = F->k++;
	switch (kind) {
	case HAKO_MSG_BOOL: {
		uint32_t v = k & 1u;
		memcpy(at, &v, 4);
		break;
	}
	case HAKO_MSG_BYTE:
	case HAKO_MSG_CHAR:
	case HAKO_MSG_UINT8: *at = (uint8_t)(200u + k); break;
	case HAKO_MSG_INT8: *at = (uint8_t)(int8_t)(-100 + (int)(k % 50u)); break;
	case HAKO_MSG_INT16: {
		int16_t v = (int16_t)(-30000 + (int)k * 3);
		memcpy(at, &v, 2);
		break;
	}
	case HAKO_MSG_UINT16: {
		uint16_t v = (uint16_t)(60000u + k);
		memcpy(at, &v, 2);
		break;
	}
	case HAKO_MSG_INT32: {
		int32_t v = -2000000000 + (int32_t)k * 7;
		memcpy(at, &v, 4);
		break;
	}
	case HAKO_MSG_UINT32: {
		uint32_t v = 4000000000u + k;
		memcpy(at, &v, 4);
		break;
	}
	case HAKO_MSG_INT64: {
		int64_t v = -(INT64_C(1) << 60) + (int64_t)k * 11;
		memcpy(at, &v, 8);
		break;
	}
	case HAKO_MSG_UINT64: {
		uint64_t v = UINT64_C(0xF000000000000000) + k;
		memcpy(at, &v, 8);
		break;
	}
	case HAKO_MSG_FLOAT32: {
		float v = (float)k * 0.1f - 3.0f;
		memcpy(at, &v, 4);
		break;
	}
	case HAKO_MSG_FLOAT64: {
		double v = (double)k * 0.1 - 3.0;
		memcpy(at, &v, 8);
		break;
	}
	case HAKO_MSG_STRING:
		if (k % 5u != 0) {
			snprintf((char *)at, HAKO_MSG_STRING_SIZE, "str-%u/%.*s", k, (int)(k % 40u),
			         "abcdefghijklmnopqrstuvwxyz0123456789ABCDEF");
		}
		break;
	case HAKO_MSG_STRUCT: break;
	}
}

static void fill_struct(struct fill *F, const hako_msg_type_t *type, uint8_t *at);

static void fill_elems(struct fill *F, const hako_msg_field_t *f, uint8_t *at, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		if (f->kind == HAKO_MSG_STRUCT) {
			fill_struct(F, f->type, at + (size_t)i * f->elem_size);
		} else {
			put_prim(F, f->kind, at + (size_t)i * f->elem_size);
		}
	}
}

static void fill_struct(struct fill *F, const hako_msg_type_t *type, uint8_t *at)
{
	for (size_t i = 0; i < type->field_count; i++) {
		const hako_msg_field_t *f = &type->fields[i];
		uint8_t *fat = at + f->offset;
		switch (f->form) {
		case HAKO_MSG_SINGLE: fill_elems(F, f, fat, 1); break;
		case HAKO_MSG_ARRAY: fill_elems(F, f, fat, f->count); break;
		case HAKO_MSG_VARRAY: {
			uint32_t n = F->k++ % 4u;
			uint8_t *p = hako_pdu_writer_varray(&F->w, fat, n, f->elem_size);
			if (p != NULL) {
				fill_elems(F, f, p, n);
			}
			break;
		}
		}
	}
}

int cdr_fill(const hako_msg_type_t *type, uint32_t seed, void *buf, size_t cap, size_t *len)
{
	struct fill F = {.k = seed};
	int rc = hako_pdu_writer_init(&F.w, type, buf, cap);
	if (rc != 0) {
		return rc;
	}
	fill_struct(&F, type, hako_pdu_base(buf));
	return hako_pdu_writer_finish(&F.w, len);
}
