/* RD-Full: a node's conductor writing the authority's decisions into its domain, and finding
 * what its executors wrote there (hako/rd_master.h). A write is the conductor's own when the
 * channel's write number is the one its own write got; anything newer is an executor's. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "hako/log.h"
#include "hako/rd_master.h"
#include "rd_internal.h"

struct mirror_eu {
	const hako_rd_eu_config_t *cfg;
	hako_channel_t *status_ch;
	hako_channel_t *context_ch;
	uint64_t status_seen; /* the last write looked at (or written) */
	uint64_t context_seen;
	uint32_t resets;
	/* The last announcement written, of a hand-off this node's owner has to release (curr
	 * is this node): its epoch and commit point; ann_epoch -1 when there is none. */
	int ann_epoch;
	hako_time_t ann_commit;
	uint8_t *buf;
	size_t cap;
};

struct hako_rd_mirror {
	hako_domain_t *dom;
	const hako_rd_config_t *cfg;
	uint8_t node;
	hako_msg_registry_t *reg;
	hakoi_rd_types_t types;
	size_t eu_count;
	struct mirror_eu eus[];
};

static struct mirror_eu *eu_of(hako_rd_mirror_t *mr, uint32_t eu)
{
	for (size_t i = 0; i < mr->eu_count; i++) {
		if (mr->eus[i].cfg->id == eu) {
			return &mr->eus[i];
		}
	}
	return NULL;
}

static int open_channel(hako_domain_t *dom, const hako_rd_pdu_ref_t *ref, hako_channel_t **ch)
{
	int r = hako_channel_create(dom, ref->robot, ref->channel_id, ref->pdu_size, ch);
	if (r != 0) {
		HAKO_ERROR("rd: channel %s/%s (id %" PRId32 ", %" PRIu32 " bytes): %s", ref->robot,
		           ref->name, ref->channel_id, ref->pdu_size, hako_strerror(r));
	}
	return r;
}

int hako_rd_mirror_open(hako_domain_t *dom, const hako_rd_config_t *cfg, uint8_t node_id,
                        hako_rd_mirror_t **out)
{
	if (out != NULL) {
		*out = NULL;
	}
	if (dom == NULL || cfg == NULL || out == NULL) {
		return HAKO_EINVAL;
	}
	hako_rd_mirror_t *mr = calloc(1, sizeof(*mr) + cfg->eu_count * sizeof(mr->eus[0]));
	if (mr == NULL) {
		return HAKO_ENOMEM;
	}
	mr->dom = dom;
	mr->cfg = cfg;
	mr->node = node_id;
	mr->eu_count = cfg->eu_count;
	hako_error_t err;
	int r = hako_msg_registry_create(&mr->reg);
	if (r == 0 && (r = hakoi_rd_types_get(mr->reg, &mr->types, &err)) != 0) {
		HAKO_ERROR("rd: the control-plane types cannot be used: %s", err.message);
	}
	for (size_t i = 0; r == 0 && i < cfg->eu_count; i++) {
		struct mirror_eu *e = &mr->eus[i];
		e->cfg = &cfg->eus[i];
		if ((r = open_channel(dom, &e->cfg->status, &e->status_ch)) != 0 ||
		    (r = open_channel(dom, &e->cfg->context, &e->context_ch)) != 0) {
			break;
		}
		e->cap = e->cfg->status.pdu_size > e->cfg->context.pdu_size
		             ? e->cfg->status.pdu_size
		             : e->cfg->context.pdu_size;
		e->buf = malloc(e->cap);
		if (e->buf == NULL) {
			r = HAKO_ENOMEM;
		}
		e->ann_epoch = -1;
		e->status_seen = hako_channel_seq(e->status_ch);
		e->context_seen = hako_channel_seq(e->context_ch);
		e->resets = hako_domain_reset_count(dom);
	}
	if (r != 0) {
		hako_rd_mirror_close(mr);
		return r;
	}
	*out = mr;
	return 0;
}

void hako_rd_mirror_close(hako_rd_mirror_t *mr)
{
	if (mr == NULL) {
		return;
	}
	for (size_t i = 0; i < mr->eu_count; i++) {
		free(mr->eus[i].buf);
	}
	hako_msg_registry_destroy(mr->reg);
	free(mr);
}

/* A write of this conductor: remember its number, so that scan does not take it for an
 * executor's. */
static int write_own(hako_rd_mirror_t *mr, hako_channel_t *ch, uint64_t *seen, const void *pdu,
                     size_t len)
{
	int r = hako_channel_write(ch, pdu, len);
	if (r == 0) {
		*seen = hako_channel_seq(ch);
	}
	(void)mr;
	return r;
}

/* The announcement of a committed hand-off, in the EU's context channel (before its status:
 * an owner that sees the status finds it). */
static int write_announce(hako_rd_mirror_t *mr, struct mirror_eu *e, uint8_t epoch, uint8_t curr,
                          hako_time_t commit)
{
	hakoi_rd_context_t cx = {mr->cfg->config_hash,  epoch, curr, commit,
	                         HAKOI_RD_CTX_ANNOUNCE, NULL,  0};
	size_t len = 0;
	int r = hakoi_rd_context_encode(&mr->types, &cx, e->buf, e->cap, &len);
	return r != 0 ? r : write_own(mr, e->context_ch, &e->context_seen, e->buf, len);
}

int hako_rd_mirror_apply(hako_rd_mirror_t *mr, const hako_rd_commit_t *c)
{
	struct mirror_eu *e = mr != NULL && c != NULL ? eu_of(mr, c->eu) : NULL;
	if (e == NULL) {
		return HAKO_EINVAL;
	}
	int r;
	e->ann_epoch = -1;
	if (c->status == HAKO_RD_OWNER_RELEASING) {
		if ((r = write_announce(mr, e, c->epoch, c->curr, c->commit_usec)) != 0) {
			return r;
		}
		if (c->curr == mr->node) {
			e->ann_epoch = c->epoch;
			e->ann_commit = c->commit_usec;
		}
	}
	size_t len = 0;
	hakoi_rd_status_t st = {mr->cfg->config_hash, (uint8_t)c->status, c->epoch, c->curr,
	                        c->next};
	if ((r = hakoi_rd_status_encode(&mr->types, &st, e->buf, e->cap, &len)) != 0 ||
	    (r = write_own(mr, e->status_ch, &e->status_seen, e->buf, len)) != 0) {
		return r;
	}
	return 0;
}

int hako_rd_mirror_put_context(hako_rd_mirror_t *mr, uint32_t eu, const void *pdu, size_t len,
                               int epoch, hako_time_t release_usec)
{
	struct mirror_eu *e = mr != NULL ? eu_of(mr, eu) : NULL;
	if (e == NULL) {
		return HAKO_EINVAL;
	}
	hakoi_rd_context_t cx = {mr->cfg->config_hash, 0, 0, 0, 0, NULL, 0};
	char why[300];
	if (pdu != NULL &&
	    (hakoi_rd_context_decode(&mr->types, pdu, len, &cx, why, sizeof(why)) != 0 ||
	     cx.config_hash != mr->cfg->config_hash || cx.len > e->cfg->max_context_bytes)) {
		HAKO_WARN("rd: EU %s: a relayed context is refused: %s", e->cfg->name,
		          cx.config_hash != mr->cfg->config_hash ? "another RD config" : why);
		return HAKO_EPROTO;
	}
	if (epoch >= 0) {
		/* A restart from the authority's committed context: its owner is the authority
		 * (0), so the new owner traces a restart, not a hand-off. */
		cx.epoch = (uint8_t)epoch;
		cx.owner = 0;
	}
	if (release_usec >= 0) {
		cx.release_time = release_usec;
	}
	/* Encoded again (into the conductor's own buffer: pdu may be the caller's). */
	uint8_t *copy = NULL;
	if (cx.len > 0) {
		copy = malloc(cx.len);
		if (copy == NULL) {
			return HAKO_ENOMEM;
		}
		memcpy(copy, cx.bytes, cx.len);
		cx.bytes = copy;
	}
	size_t out = 0;
	int r = hakoi_rd_context_encode(&mr->types, &cx, e->buf, e->cap, &out);
	if (r == 0) {
		r = write_own(mr, e->context_ch, &e->context_seen, e->buf, out);
	}
	free(copy);
	return r;
}

int hako_rd_mirror_scan(hako_rd_mirror_t *mr, void (*fn)(void *arg, const hako_rd_relay_t *r),
                        void *arg)
{
	if (mr == NULL || fn == NULL) {
		return HAKO_EINVAL;
	}
	uint32_t resets = hako_domain_reset_count(mr->dom);
	for (size_t i = 0; i < mr->eu_count; i++) {
		struct mirror_eu *e = &mr->eus[i];
		if (e->resets != resets) { /* the numbers start again from 0 */
			e->resets = resets;
			e->status_seen = 0;
			e->context_seen = 0;
			e->ann_epoch = -1;
		}
		size_t len = 0;
		uint64_t seq = 0;
		char why[300];
		if (hako_channel_seq(e->context_ch) != e->context_seen &&
		    hako_channel_read(e->context_ch, e->buf, e->cap, &len, &seq) == 0 && seq != 0) {
			e->context_seen = seq;
			hakoi_rd_context_t cx;
			if (hakoi_rd_context_decode(&mr->types, e->buf, len, &cx, why,
			                            sizeof(why)) == 0 &&
			    cx.config_hash == mr->cfg->config_hash && cx.owner == mr->node &&
			    cx.model_step != HAKOI_RD_CTX_ANNOUNCE) {
				hako_rd_relay_t rl = {e->cfg->id, HAKO_RD_RELAY_CONTEXT, cx.epoch,
				                      e->buf, len};
				fn(arg, &rl);
				/* The owner's checkpoint replaced the announcement of the hand-off
				 * it has to release (its release context has the announced epoch):
				 * written again, and the owner holds its model until it reads it.
				 */
				if (e->ann_epoch >= 0 && cx.epoch != (uint8_t)e->ann_epoch) {
					HAKO_DEBUG(
					    "rd: EU %s: a checkpoint replaced the announcement "
					    "of epoch %d: written again",
					    e->cfg->name, e->ann_epoch);
					write_announce(mr, e, (uint8_t)e->ann_epoch, mr->node,
					               e->ann_commit);
				}
			}
		}
		if (hako_channel_seq(e->status_ch) != e->status_seen &&
		    hako_channel_read(e->status_ch, e->buf, e->cap, &len, &seq) == 0 && seq != 0) {
			e->status_seen = seq;
			hakoi_rd_status_t st;
			if (hakoi_rd_status_decode(&mr->types, e->buf, len, &st, why,
			                           sizeof(why)) == 0 &&
			    st.config_hash == mr->cfg->config_hash && st.curr == mr->node &&
			    st.next == mr->node && st.status != HAKO_RD_OWNER_RELEASING) {
				hako_rd_relay_t rl = {e->cfg->id, HAKO_RD_RELAY_ACTIVATED, st.epoch,
				                      NULL, 0};
				fn(arg, &rl);
			}
		}
	}
	return 0;
}
