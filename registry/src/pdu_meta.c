/* The 24-byte meta header of a PDU: classify, read with coherence checks, the epoch byte. */
#include "hako/pdu.h"

#include "pdu_internal.h"

#include <stdio.h>
#include <string.h>

/* Inline for the epoch calls: the exported name could be interposed, so it is not. */
static inline int classify(const void *pdu, size_t len)
{
	uint64_t w[3];
	if (pdu == NULL || len < HAKO_PDU_META_SIZE) {
		return HAKO_PDU_INVALID;
	}
	/* little-endian: magic in the low half of the first word, version in the high half. Only
	 * that word on the common path: the total size was just stored next to it by a writer. */
	memcpy(w, pdu, sizeof(w[0]));
	if (w[0] == ((uint64_t)HAKO_PDU_VERSION << 32 | HAKO_PDU_MAGIC)) {
		return HAKO_PDU_VALID;
	}
	memcpy(w, pdu, sizeof(w));
	return (w[0] | w[1] | w[2]) == 0 ? HAKO_PDU_UNINITIALIZED : HAKO_PDU_INVALID;
}

int hako_pdu_classify(const void *pdu, size_t len)
{
	return classify(pdu, len);
}

/* Why a meta header that failed the fast check is refused. */
static int meta_refusal(const uint8_t *p, size_t len, const hako_pdu_meta_t *m, char *why,
                        size_t why_len)
{
	switch (classify(p, len)) {
	case HAKO_PDU_VALID: break;
	case HAKO_PDU_UNINITIALIZED:
		snprintf(why, why_len, "never written (the meta header is all zero)");
		return HAKO_EPROTO;
	default:
		if (len < HAKO_PDU_META_SIZE) {
			snprintf(why, why_len, "%zu bytes, shorter than the %u-byte meta header",
			         len, HAKO_PDU_META_SIZE);
		} else if (m->magic != HAKO_PDU_MAGIC) {
			snprintf(why, why_len, "bad magic 0x%08x (expected 0x%08x)", m->magic,
			         HAKO_PDU_MAGIC);
		} else {
			snprintf(why, why_len, "unsupported version %u (expected %u)", m->version,
			         HAKO_PDU_VERSION);
		}
		return HAKO_EPROTO;
	}
	if (m->base_off != HAKO_PDU_META_SIZE) {
		snprintf(why, why_len, "base offset %u (expected %u)", m->base_off,
		         HAKO_PDU_META_SIZE);
	} else if (m->heap_off < m->base_off) {
		snprintf(why, why_len, "heap offset %u (must be at least %u)", m->heap_off,
		         m->base_off);
	} else if (m->total_size < m->heap_off) {
		snprintf(why, why_len, "total size %u is less than the heap offset %u",
		         m->total_size, m->heap_off);
	} else {
		snprintf(why, why_len, "truncated: total size %u but %zu bytes", m->total_size,
		         len);
	}
	return HAKO_EPROTO;
}

int hakoi_pdu_meta_check(const void *pdu, size_t len, hako_pdu_meta_t *meta, char *why,
                         size_t why_len)
{
	if (pdu == NULL || meta == NULL) {
		snprintf(why, why_len, "no PDU");
		return HAKO_EINVAL;
	}
	if (hakoi_pdu_meta_fast(pdu, len, meta) == 0) {
		return 0;
	}
	const uint8_t *p = pdu;
	hako_pdu_meta_t m = {0};
	if (len >= HAKO_PDU_META_SIZE) {
		m.magic = hakoi_rd32(p);
		m.version = hakoi_rd32(p + 4);
		m.base_off = hakoi_rd32(p + 8);
		m.heap_off = hakoi_rd32(p + 12);
		m.total_size = hakoi_rd32(p + 16);
	}
	return meta_refusal(p, len, &m, why, why_len);
}

int hako_pdu_meta_read(const void *pdu, size_t len, hako_pdu_meta_t *meta)
{
	if (meta != NULL && hakoi_pdu_meta_fast(pdu, len, meta) == 0) {
		return 0;
	}
	char why[128];
	return hakoi_pdu_meta_check(pdu, len, meta, why, sizeof(why));
}

int hako_pdu_get_epoch(const void *pdu, size_t len, uint8_t *epoch)
{
	if (pdu == NULL || epoch == NULL) {
		return HAKO_EINVAL;
	}
	if (classify(pdu, len) != HAKO_PDU_VALID) {
		return HAKO_EPROTO;
	}
	*epoch = __atomic_load_n((const uint8_t *)pdu + HAKO_PDU_EPOCH_OFFSET, __ATOMIC_ACQUIRE);
	return 0;
}

int hako_pdu_set_epoch(void *pdu, size_t len, uint8_t epoch)
{
	if (pdu == NULL) {
		return HAKO_EINVAL;
	}
	if (classify(pdu, len) != HAKO_PDU_VALID) {
		return HAKO_EPROTO;
	}
	__atomic_store_n((uint8_t *)pdu + HAKO_PDU_EPOCH_OFFSET, epoch, __ATOMIC_RELEASE);
	return 0;
}
