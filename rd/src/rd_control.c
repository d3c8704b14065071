/* The control-plane PDUs of RD: ExecutionUnitRuntimeStatus (unit_count 1) and
 * ExecutionUnitRuntimeContext (RD header + application bytes), encoded and validated with the
 * registry's codec so any hako or Hakoniwa tool can read them. */
#include <stdio.h>
#include <string.h>

#include "hako/pdu.h"
#include "rd_internal.h"

uint32_t hakoi_rd_fnv1a(const void *data, size_t len)
{
	const uint8_t *p = data;
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < len; i++) {
		h ^= p[i];
		h *= 16777619u;
	}
	return h;
}

static uint32_t rd32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, sizeof(v));
	return v;
}

static void wr32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, sizeof(v));
}

/* The field `name` of type t, of the expected kind and form; its base offset in *off. */
static int field(const hako_msg_type_t *t, const char *name, hako_msg_kind_t kind,
                 hako_msg_form_t form, uint32_t *off, hako_error_t *err)
{
	for (size_t i = 0; i < t->field_count; i++) {
		const hako_msg_field_t *f = &t->fields[i];
		if (strcmp(f->name, name) == 0) {
			if (f->kind != kind || f->form != form) {
				break;
			}
			*off = f->offset;
			return 0;
		}
	}
	return hako_error_set(err, HAKO_EPROTO, t->path, 0, 0,
	                      "%s: no field %s of the RD layout (%s%s)", t->full_name, name,
	                      hako_msg_kind_name(kind), form == HAKO_MSG_VARRAY ? "[]" : "");
}

int hakoi_rd_types_get(hako_msg_registry_t *reg, hakoi_rd_types_t *t, hako_error_t *err)
{
	int r;
	memset(t, 0, sizeof(*t));
	if ((r = hako_msg_registry_get(reg, HAKOI_RD_STATUS_TYPE, &t->status, err)) != 0 ||
	    (r = hako_msg_registry_get(reg, HAKOI_RD_CONTEXT_TYPE, &t->context, err)) != 0) {
		return r;
	}
	const hako_msg_type_t *s = t->status, *c = t->context;
	if ((r = field(s, "config_hash", HAKO_MSG_UINT32, HAKO_MSG_SINGLE, &t->st_hash, err)) ||
	    (r = field(s, "unit_count", HAKO_MSG_UINT16, HAKO_MSG_SINGLE, &t->st_count, err)) ||
	    (r = field(s, "status", HAKO_MSG_UINT8, HAKO_MSG_VARRAY, &t->st_status, err)) ||
	    (r = field(s, "epoch", HAKO_MSG_UINT8, HAKO_MSG_VARRAY, &t->st_epoch, err)) ||
	    (r = field(s, "curr_owner_node_id", HAKO_MSG_UINT8, HAKO_MSG_VARRAY, &t->st_curr,
	               err)) ||
	    (r = field(s, "next_owner_node_id", HAKO_MSG_UINT8, HAKO_MSG_VARRAY, &t->st_next,
	               err)) ||
	    (r = field(c, "config_hash", HAKO_MSG_UINT32, HAKO_MSG_SINGLE, &t->cx_hash, err)) ||
	    (r = field(c, "epoch", HAKO_MSG_UINT8, HAKO_MSG_SINGLE, &t->cx_epoch, err)) ||
	    (r = field(c, "owner_id", HAKO_MSG_UINT8, HAKO_MSG_SINGLE, &t->cx_owner, err)) ||
	    (r = field(c, "context", HAKO_MSG_UINT8, HAKO_MSG_VARRAY, &t->cx_bytes, err))) {
		return r;
	}
	return 0;
}

static uint32_t heap_off(const hako_msg_type_t *type)
{
	return HAKO_PDU_META_SIZE + ((type->size + 7u) & ~7u);
}

uint32_t hakoi_rd_status_size(const hakoi_rd_types_t *t)
{
	return heap_off(t->status) + 4; /* four uint8[1] arrays, packed */
}

uint32_t hakoi_rd_context_size(const hakoi_rd_types_t *t, uint32_t ctx_max)
{
	return heap_off(t->context) + HAKOI_RD_CTX_HDR_SIZE + ctx_max;
}

int hakoi_rd_status_encode(const hakoi_rd_types_t *t, const hakoi_rd_status_t *st, void *buf,
                           size_t cap, size_t *len)
{
	hako_pdu_writer_t w;
	hako_pdu_writer_init(&w, t->status, buf, cap);
	if (w.error == 0) {
		uint8_t *base = hako_pdu_base(buf);
		const uint32_t arrays[4] = {t->st_status, t->st_epoch, t->st_curr, t->st_next};
		const uint8_t values[4] = {st->status, st->epoch, st->curr, st->next};
		uint16_t one = 1;
		wr32(base + t->st_hash, st->config_hash);
		memcpy(base + t->st_count, &one, sizeof(one));
		for (int i = 0; i < 4; i++) {
			uint8_t *e = hako_pdu_writer_varray(&w, base + arrays[i], 1, 1);
			if (e != NULL) {
				*e = values[i];
			}
		}
	}
	return hako_pdu_writer_finish(&w, len);
}

int hakoi_rd_status_decode(const hakoi_rd_types_t *t, const void *pdu, size_t len,
                           hakoi_rd_status_t *st, char *why, size_t why_len)
{
	hako_error_t e;
	if (hako_pdu_validate(t->status, pdu, len, &e) != 0) {
		snprintf(why, why_len, "%s", e.message);
		return HAKO_EPROTO;
	}
	const uint8_t *base = (const uint8_t *)pdu + HAKO_PDU_META_SIZE;
	uint16_t units;
	memcpy(&units, base + t->st_count, sizeof(units));
	if (units != 1) {
		snprintf(why, why_len, "unit_count %u (this RD layout has one status PDU per EU)",
		         units);
		return HAKO_EPROTO;
	}
	const uint32_t arrays[4] = {t->st_status, t->st_epoch, t->st_curr, t->st_next};
	uint8_t values[4];
	for (int i = 0; i < 4; i++) {
		uint32_t n = 0;
		const uint8_t *a = hako_pdu_varray(pdu, len, base + arrays[i], 1, &n);
		if (a == NULL || n != 1) {
			snprintf(why, why_len, "an array has %u elements, unit_count is 1", n);
			return HAKO_EPROTO;
		}
		values[i] = a[0];
	}
	if (values[0] > HAKO_RD_OWNER_ACTIVATING) {
		snprintf(why, why_len, "status %u is not 0, 1 or 2", values[0]);
		return HAKO_EPROTO;
	}
	st->config_hash = rd32(base + t->st_hash);
	st->status = values[0];
	st->epoch = values[1];
	st->curr = values[2];
	st->next = values[3];
	return 0;
}

int hakoi_rd_context_encode(const hakoi_rd_types_t *t, const hakoi_rd_context_t *cx, void *buf,
                            size_t cap, size_t *len)
{
	hako_pdu_writer_t w;
	hako_pdu_writer_init(&w, t->context, buf, cap);
	if (w.error == 0) {
		uint8_t *base = hako_pdu_base(buf);
		wr32(base + t->cx_hash, cx->config_hash);
		base[t->cx_epoch] = cx->epoch;
		base[t->cx_owner] = cx->owner;
		uint8_t *p = hako_pdu_writer_varray(&w, base + t->cx_bytes,
		                                    (uint32_t)(HAKOI_RD_CTX_HDR_SIZE + cx->len), 1);
		if (p != NULL) {
			uint16_t version = HAKOI_RD_CTX_VERSION, hdr = HAKOI_RD_CTX_HDR_SIZE;
			int64_t when = cx->release_time;
			wr32(p, HAKOI_RD_CTX_MAGIC);
			memcpy(p + 4, &version, 2);
			memcpy(p + 6, &hdr, 2);
			memcpy(p + 8, &when, 8);
			memcpy(p + 16, &cx->model_step, 8);
			if (cx->len > 0) {
				memcpy(p + HAKOI_RD_CTX_HDR_SIZE, cx->bytes, cx->len);
			}
		}
	}
	return hako_pdu_writer_finish(&w, len);
}

int hakoi_rd_context_decode(const hakoi_rd_types_t *t, const void *pdu, size_t len,
                            hakoi_rd_context_t *cx, char *why, size_t why_len)
{
	hako_error_t e;
	if (hako_pdu_validate(t->context, pdu, len, &e) != 0) {
		snprintf(why, why_len, "%s", e.message);
		return HAKO_EPROTO;
	}
	const uint8_t *base = (const uint8_t *)pdu + HAKO_PDU_META_SIZE;
	uint32_t n = 0;
	const uint8_t *p = hako_pdu_varray(pdu, len, base + t->cx_bytes, 1, &n);
	if (p == NULL || n < HAKOI_RD_CTX_HDR_SIZE) {
		snprintf(why, why_len, "context[] has %u bytes, less than the %u-byte RD header", n,
		         HAKOI_RD_CTX_HDR_SIZE);
		return HAKO_EPROTO;
	}
	uint16_t version, hdr;
	memcpy(&version, p + 4, 2);
	memcpy(&hdr, p + 6, 2);
	if (rd32(p) != HAKOI_RD_CTX_MAGIC) {
		snprintf(why, why_len,
		         "context[] does not start with the RD header magic \"RDCX\"");
		return HAKO_EPROTO;
	}
	if (version != HAKOI_RD_CTX_VERSION || hdr < HAKOI_RD_CTX_HDR_SIZE || hdr > n) {
		snprintf(why, why_len,
		         "RD header version %u, length %u (expected version %u, "
		         "length %u..%u)",
		         version, hdr, HAKOI_RD_CTX_VERSION, HAKOI_RD_CTX_HDR_SIZE, n);
		return HAKO_EPROTO;
	}
	int64_t when;
	memcpy(&when, p + 8, 8);
	memcpy(&cx->model_step, p + 16, 8);
	cx->config_hash = rd32(base + t->cx_hash);
	cx->epoch = base[t->cx_epoch];
	cx->owner = base[t->cx_owner];
	cx->release_time = when;
	cx->bytes = p + hdr;
	cx->len = n - hdr;
	return 0;
}
