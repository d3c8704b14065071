/* RD-Full's message bodies (rd_full_wire.h): encode, and check before decode. */
#include "rd_full_wire.h"

#include <stdio.h>
#include <string.h>

#include "hako/error.h"
#include "hakoi/bytes.h"

void hakoi_rdf_init(hakoi_rdf_msg_t *m, uint8_t kind)
{
	memset(m, 0, sizeof(*m));
	m->kind = kind;
	m->epoch = -1;
	m->commit = -1;
	m->release = -1;
}

size_t hakoi_rdf_encode(const hakoi_rdf_msg_t *m, uint8_t *buf)
{
	memset(buf, 0, HAKOI_RDF_FIXED);
	buf[0] = m->kind;
	hakoi_put_le32(buf + 4, m->eu);
	hakoi_put_le32(buf + 8, m->seq);
	hakoi_put_le32(buf + 12, m->status);
	hakoi_put_le32(buf + 16, (uint32_t)m->epoch);
	hakoi_put_le32(buf + 20, m->curr);
	hakoi_put_le32(buf + 24, m->next);
	hakoi_put_le32(buf + 28, m->to);
	hakoi_put_le32(buf + 32, m->from_stored);
	hakoi_put_le32(buf + 36, (uint32_t)m->result);
	hakoi_put_le64(buf + 40, (uint64_t)m->commit);
	hakoi_put_le64(buf + 48, (uint64_t)m->release);
	if (m->kind != HAKOI_RDF_REPLY) {
		return HAKOI_RDF_FIXED;
	}
	size_t n = strnlen(m->reason, HAKOI_RDF_REASON - 1);
	memcpy(buf + HAKOI_RDF_FIXED, m->reason, n);
	buf[HAKOI_RDF_FIXED + n] = '\0';
	return HAKOI_RDF_FIXED + n + 1;
}

static int bad(char *why, size_t n, const char *what)
{
	snprintf(why, n, "%s", what);
	return HAKO_EPROTO;
}

int hakoi_rdf_decode(const void *body, size_t len, hakoi_rdf_msg_t *m, char *why, size_t why_len)
{
	const uint8_t *b = body;
	memset(m, 0, sizeof(*m));
	if (b == NULL || len < HAKOI_RDF_FIXED || len > HAKOI_RDF_MAX) {
		snprintf(why, why_len, "an RD-Full message of %zu bytes (%u..%u)", len,
		         HAKOI_RDF_FIXED, HAKOI_RDF_MAX);
		return HAKO_EPROTO;
	}
	m->kind = b[0];
	if (m->kind < HAKOI_RDF_REQUEST || m->kind > HAKOI_RDF_ACTIVATED) {
		snprintf(why, why_len, "an RD-Full message of unknown kind %u", m->kind);
		return HAKO_EPROTO;
	}
	if ((m->kind == HAKOI_RDF_REPLY) != (len > HAKOI_RDF_FIXED)) {
		return bad(why, why_len,
		           "an RD-Full reason on a message that is no reply, or none "
		           "on a reply");
	}
	m->eu = hakoi_get_le32(b + 4);
	m->seq = hakoi_get_le32(b + 8);
	m->status = hakoi_get_le32(b + 12);
	m->epoch = (int32_t)hakoi_get_le32(b + 16);
	m->curr = hakoi_get_le32(b + 20);
	m->next = hakoi_get_le32(b + 24);
	m->to = hakoi_get_le32(b + 28);
	m->from_stored = hakoi_get_le32(b + 32);
	m->result = (int32_t)hakoi_get_le32(b + 36);
	m->commit = (int64_t)hakoi_get_le64(b + 40);
	m->release = (int64_t)hakoi_get_le64(b + 48);
	/* Node ids are uint8, epochs uint8 (or -1), statuses 0..2, times in range. */
	if (m->curr > 255 || m->next > 255 || m->to > 255 || m->status > 2 || m->epoch < -1 ||
	    m->epoch > 255 || m->from_stored > 1 || m->commit < -1 || m->commit > (1ll << 60) ||
	    m->release < -1 || m->release > (1ll << 60)) {
		return bad(why, why_len, "an RD-Full field out of range");
	}
	if (m->kind == HAKOI_RDF_REPLY) {
		size_t n = len - HAKOI_RDF_FIXED;
		if (memchr(b + HAKOI_RDF_FIXED, 0, n) == NULL) {
			return bad(why, why_len, "an RD-Full reason that is not terminated");
		}
		memcpy(m->reason, b + HAKOI_RDF_FIXED, n);
	}
	return 0;
}
