/* One node's view of its execution units: the ownership state machine of RD-Light (rd.h), the
 * fenced writes and reads of the EU's PDUs, and the trace of every event. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hako/log.h"
#include "hako/pdu.h"
#include "hakoi/assert.h"
#include "rd_internal.h"

#define SEQ_UNKNOWN UINT64_MAX /* the view must be read again from the channel */

struct eu_rt {
	const hako_rd_eu_config_t *cfg;
	hako_channel_t *status_ch;
	hako_channel_t *context_ch;
	hako_channel_t *data_ch[HAKO_RD_MAX_PDUS];
	const hako_msg_type_t *data_type[HAKO_RD_MAX_PDUS]; /* NULL: only the meta is checked */
	/* The config's write count and PDU sizes, here beside the state a write checks: a host of
	 * many EUs writing every step would otherwise reach into each EU's config (kilobytes
	 * apart) for them. */
	size_t write_count;
	uint32_t write_size[HAKO_RD_MAX_PDUS];
	char (*data_name)[300]; /* write_count names, JSON-escaped, for the trace */
	uint8_t *buf;           /* a status or context PDU */
	size_t cap;
	/* hako_rd_write_loan: the EU's data channels as one batch, and the loaned buffers */
	hako_channel_batch_t *batch;
	void *loan[HAKO_RD_MAX_PDUS];
	int loaned;

	int local;              /* HAKO_RD_LOCAL_* */
	uint8_t epoch;          /* of this node's ownership (OWNER) */
	hakoi_rd_status_t view; /* the last status known to be good */
	uint64_t view_seq;      /* the channel write behind view, 0 = none (implicit initial) */
	int bad_logged;         /* a bad status was logged since the last good one */
	hako_time_t now;        /* of the last poll, -1 before */

	/* RELEASING */
	uint8_t rel_epoch;
	uint8_t rel_next;
	hako_time_t rel_time;
	hako_time_t reclaim_at;
	uint64_t rel_step;

	/* STANDBY: an activation handed to the application */
	int pending;
	int pend_restart;
	uint8_t pend_epoch;
	uint8_t pend_from;
	hako_time_t pend_time;
	uint64_t pend_step;
	/* a hand-off this node gave up (restore failed, too late): not tried again */
	int skip;
	uint8_t skip_epoch;
	uint8_t skip_from;
	/* the hand-off whose context problem was logged, so it is logged once */
	int wait_logged;
	uint8_t wait_epoch;

	/* RD-Full, OWNER: the commit point announced for this EU (-1: none), its epoch and the
	 * node taking over. The owner stops at it. */
	hako_time_t commit_at;
	uint8_t commit_epoch;
	uint8_t commit_next;
	uint64_t last_step; /* the last model step traced (hako_rd_trace_step) */
};

struct hako_rd_node {
	hako_domain_t *dom;
	const hako_rd_config_t *cfg;
	uint8_t id;
	char name[128];
	hako_msg_registry_t *reg;
	hakoi_rd_types_t types;
	hakoi_rd_trace_t *trace;
	uint32_t reset_count;
	uint64_t stale_drops;
	int no_write_trace; /* hako_rd_trace_writes(node, 0) */
	size_t eu_count;
	struct eu_rt eus[];
};

static double sec(hako_time_t usec)
{
	return (double)usec / 1e6;
}

static const char *node_name(const hako_rd_config_t *cfg, uint8_t id)
{
	for (size_t i = 0; i < cfg->node_count; i++) {
		if (cfg->node_ids[i] == id) {
			return cfg->node_names[i];
		}
	}
	return id == 0 ? "observer" : "?";
}

static struct eu_rt *find_eu(hako_rd_node_t *node, uint32_t eu)
{
	if (node == NULL) {
		return NULL;
	}
	/* EU ids are usually their places in the config (a fleet's drones 0..N-1): one compare,
	 * not a walk over every EU at each call of a host that polls them all each step. */
	if (eu < node->eu_count && node->eus[eu].cfg->id == eu) {
		return &node->eus[eu];
	}
	for (size_t i = 0; i < node->eu_count; i++) {
		if (node->eus[i].cfg->id == eu) {
			return &node->eus[i];
		}
	}
	return NULL;
}

static int is_candidate(const hako_rd_eu_config_t *eu, uint8_t id)
{
	for (size_t i = 0; i < eu->candidate_count; i++) {
		if (eu->candidates[i] == id) {
			return 1;
		}
	}
	return 0;
}

static int full(const hako_rd_node_t *node)
{
	return node->cfg->mode == HAKO_RD_MODE_FULL;
}

static hakoi_rd_status_t initial_status(const hako_rd_node_t *node, const struct eu_rt *e)
{
	return (hakoi_rd_status_t){node->cfg->config_hash, HAKO_RD_OWNER_STABLE, 0,
	                           e->cfg->initial_owner, e->cfg->initial_owner};
}

static void trace(hako_rd_node_t *node, const struct eu_rt *e, hako_time_t t, uint8_t epoch,
                  hakoi_rd_trace_ev_t ev, const char *extra)
{
	hakoi_rd_trace_emit(node->trace, t, node->id, e->cfg->id, epoch, ev, extra);
}

/* Bring e->view up to date with the status channel. A never-written channel means the initial
 * state; a malformed status or one of another config is logged once and ignored. */
static void refresh(hako_rd_node_t *node, struct eu_rt *e)
{
	/* Nothing written since the view: one load instead of a copy of the status (a host of
	 * many EUs refreshes each of them every step). */
	if (e->view_seq != 0 && hako_channel_seq(e->status_ch) == e->view_seq) {
		return;
	}
	size_t len = 0;
	uint64_t seq = 0;
	int r = hako_channel_read(e->status_ch, e->buf, e->cap, &len, &seq);
	if (r == 0 && seq == 0) {
		e->view = initial_status(node, e);
		e->view_seq = 0;
		return;
	}
	if (r == 0 && seq == e->view_seq) {
		return;
	}
	char why[700];
	hakoi_rd_status_t st;
	if (r != 0) {
		snprintf(why, sizeof(why), "cannot read it: %s", hako_strerror(r));
	} else if (hakoi_rd_status_decode(&node->types, e->buf, len, &st, why, sizeof(why)) == 0) {
		if (st.config_hash == node->cfg->config_hash) {
			e->view = st;
			e->view_seq = seq;
			e->bad_logged = 0;
			return;
		}
		snprintf(why, sizeof(why),
		         "written with another RD config (hash 0x%08" PRIx32 ", ours 0x%08" PRIx32
		         " from %s)",
		         st.config_hash, node->cfg->config_hash, node->cfg->path);
	}
	if (!e->bad_logged) {
		e->bad_logged = 1;
		HAKO_ERROR(
		    "rd: node %u (%s): status PDU %s/%s of EU %s is unusable: %s; keeping the "
		    "last known state (owner %u, epoch %u)",
		    node->id, node->name, e->cfg->status.robot, e->cfg->status.name, e->cfg->name,
		    why, e->view.curr, e->view.epoch);
	}
	if (r == 0) {
		e->view_seq = seq; /* do not decode the same bad write again */
	}
}

static int write_status(hako_rd_node_t *node, struct eu_rt *e, hako_rd_status_t status,
                        uint8_t epoch, uint8_t curr, uint8_t next)
{
	hakoi_rd_status_t st = {node->cfg->config_hash, (uint8_t)status, epoch, curr, next};
	size_t len = 0;
	int r = hakoi_rd_status_encode(&node->types, &st, e->buf, e->cap, &len);
	if (r == 0) {
		r = hako_channel_write(e->status_ch, e->buf, len);
	}
	if (r != 0) {
		HAKO_ERROR("rd: node %u (%s): cannot write the status of EU %s: %s", node->id,
		           node->name, e->cfg->name, hako_strerror(r));
		return r;
	}
	e->view = st;
	e->view_seq = SEQ_UNKNOWN;
	return 0;
}

/* The world time a releasing node waits beyond the timeout: Dmax + the largest step, so every
 * step the standby may activate in is visible to it (rd.h). */
static hako_time_t guard_usec(hako_rd_node_t *node)
{
	hako_domain_info_t info;
	if (hako_domain_get_info(node->dom, &info) != 0) {
		return 0;
	}
	hako_time_t delta = info.delta_usec;
	int n = 0, m = 0;
	hako_domain_list_assets(node->dom, NULL, 0, &n);
	hako_asset_info_t *assets = n > 0 ? calloc((size_t)n, sizeof(*assets)) : NULL;
	if (assets != NULL && hako_domain_list_assets(node->dom, assets, n, &m) == 0) {
		for (int i = 0; i < m && i < n; i++) {
			if (assets[i].delta_usec > delta) {
				delta = assets[i].delta_usec;
			}
		}
	}
	free(assets);
	return info.max_delay_usec + delta;
}

/* This node's role in a new run (open, or the first call after a domain reset). */
static void start_run(hako_rd_node_t *node, struct eu_rt *e, int at_open)
{
	hako_time_t world = hako_domain_world_time(node->dom);
	e->local = HAKO_RD_LOCAL_STANDBY;
	e->epoch = 0;
	e->pending = 0;
	e->skip = 0;
	e->wait_logged = 0;
	e->bad_logged = 0;
	e->now = -1;
	e->view = initial_status(node, e); /* the last known state until a good status is read */
	e->view_seq = SEQ_UNKNOWN;
	e->commit_at = -1;
	refresh(node, e);
	if (full(node)) {
		/* The conductor writes every status; the initial owner owns the EU until the
		 * conductor's status says otherwise. */
		if (node->id != 0 && node->id == e->cfg->initial_owner &&
		    (e->view_seq == 0 || (e->view.curr == node->id && e->view.epoch == 0 &&
		                          e->view.status == HAKO_RD_OWNER_STABLE && world == 0))) {
			e->local = HAKO_RD_LOCAL_OWNER;
		}
	} else if (node->id != 0 && node->id == e->cfg->initial_owner) {
		if (e->view_seq == 0) {
			if (write_status(node, e, HAKO_RD_OWNER_STABLE, 0, node->id, node->id) ==
			    0) {
				e->local = HAKO_RD_LOCAL_OWNER;
			}
		} else if (at_open && world == 0) {
			/* Left by an earlier run of this domain: start one epoch later, so
			 * nothing that run wrote passes for current. */
			uint8_t epoch = (uint8_t)(e->view.epoch + 1);
			HAKO_INFO("rd: node %u (%s): EU %s: status of an earlier run (owner %u, "
			          "epoch %u) replaced; this run starts at epoch %u",
			          node->id, node->name, e->cfg->name, e->view.curr, e->view.epoch,
			          epoch);
			if (write_status(node, e, HAKO_RD_OWNER_STABLE, epoch, node->id,
			                 node->id) == 0) {
				e->local = HAKO_RD_LOCAL_OWNER;
				e->epoch = epoch;
			}
		}
	}
	if (e->local == HAKO_RD_LOCAL_STANDBY && node->id != 0 && e->view.curr == node->id &&
	    e->view_seq != 0 && world > 0) {
		HAKO_WARN("rd: node %u (%s): the status says this node owns EU %s (epoch %u), but "
		          "this process has just joined the run: it stays a standby",
		          node->id, node->name, e->cfg->name, e->view.epoch);
	}
	{
		char extra[128];
		snprintf(extra, sizeof(extra),
		         ",\"run\":%" PRIu32 ",\"hash\":%" PRIu32 ",\"role\":\"%s\"",
		         node->reset_count, node->cfg->config_hash,
		         node->id == 0                     ? "observer"
		         : e->local == HAKO_RD_LOCAL_OWNER ? "owner"
		                                           : "standby");
		trace(node, e, world, e->local == HAKO_RD_LOCAL_OWNER ? e->epoch : e->view.epoch,
		      HAKOI_RD_EV_INIT, extra);
	}
}

/* After a domain reset every channel is zero again: the run starts over from the config. */
static void sync_reset(hako_rd_node_t *node)
{
	uint32_t rc = hako_domain_reset_count(node->dom);
	if (rc == node->reset_count) {
		return;
	}
	node->reset_count = rc;
	HAKO_INFO("rd: node %u (%s): domain reset: execution units back to their initial owners",
	          node->id, node->name);
	for (size_t i = 0; i < node->eu_count; i++) {
		start_run(node, &node->eus[i], 0);
	}
}

static int open_channel(hako_rd_node_t *node, const hako_rd_pdu_ref_t *ref, hako_channel_t **ch)
{
	int r = hako_channel_create(node->dom, ref->robot, ref->channel_id, ref->pdu_size, ch);
	if (r != 0) {
		HAKO_ERROR("rd: node %u: channel %s/%s (id %" PRId32 ", %" PRIu32 " bytes): %s",
		           node->id, ref->robot, ref->name, ref->channel_id, ref->pdu_size,
		           hako_strerror(r));
	}
	return r;
}

static int open_eu(hako_rd_node_t *node, struct eu_rt *e, const hako_rd_eu_config_t *cfg)
{
	int r;
	e->cfg = cfg;
	if ((r = open_channel(node, &cfg->status, &e->status_ch)) != 0 ||
	    (r = open_channel(node, &cfg->context, &e->context_ch)) != 0) {
		return r;
	}
	e->write_count = cfg->write_count;
	if (cfg->write_count > 0 &&
	    (e->data_name = calloc(cfg->write_count, sizeof(*e->data_name))) == NULL) {
		return HAKO_ENOMEM;
	}
	for (size_t i = 0; i < cfg->write_count; i++) {
		const hako_rd_pdu_ref_t *w = &cfg->writes[i];
		hako_error_t err;
		e->write_size[i] = w->pdu_size;
		if ((r = open_channel(node, w, &e->data_ch[i])) != 0) {
			return r;
		}
		if (hako_msg_registry_get(node->reg, w->type, &e->data_type[i], &err) != 0) {
			HAKO_DEBUG("rd: type %s of %s/%s is unknown (%s): only the meta header of "
			           "its PDUs is checked",
			           w->type, w->robot, w->name, err.message);
			e->data_type[i] = NULL;
		}
		hakoi_rd_json_escape(w->name, e->data_name[i], sizeof(e->data_name[i]));
	}
	/* One batch for loaned writes (hako_rd_write_loan); none if a channel is named twice in
	 * the EU's writes (a batch holds each once): that EU is written by hako_rd_write only. */
	if (cfg->write_count > 0 &&
	    (r = hako_channel_batch_create(e->data_ch, cfg->write_count, &e->batch)) != 0 &&
	    r != HAKO_EINVAL) {
		return r;
	}
	e->cap = cfg->status.pdu_size > cfg->context.pdu_size ? cfg->status.pdu_size
	                                                      : cfg->context.pdu_size;
	e->buf = malloc(e->cap);
	return e->buf != NULL ? 0 : HAKO_ENOMEM;
}

int hako_rd_node_open(hako_domain_t *dom, const hako_rd_config_t *cfg, uint8_t node_id,
                      const char *trace_path, hako_rd_node_t **out)
{
	if (out != NULL) {
		*out = NULL;
	}
	if (dom == NULL || cfg == NULL || out == NULL) {
		return HAKO_EINVAL;
	}
	const char *name = node_name(cfg, node_id);
	if (node_id != 0 && strcmp(name, "?") == 0) {
		HAKO_ERROR("rd: node %u is not in the nodes of %s", node_id, cfg->path);
		return HAKO_EINVAL;
	}
	hako_rd_node_t *node = calloc(1, sizeof(*node) + cfg->eu_count * sizeof(node->eus[0]));
	if (node == NULL) {
		return HAKO_ENOMEM;
	}
	node->dom = dom;
	node->cfg = cfg;
	node->id = node_id;
	snprintf(node->name, sizeof(node->name), "%s", name);
	node->eu_count = cfg->eu_count;
	node->reset_count = hako_domain_reset_count(dom);
	hako_error_t err;
	int r = hako_msg_registry_create(&node->reg);
	if (r == 0 && (r = hakoi_rd_types_get(node->reg, &node->types, &err)) != 0) {
		HAKO_ERROR("rd: the control-plane types cannot be used: %s: %s", err.file,
		           err.message);
	}
	for (size_t i = 0; r == 0 && i < cfg->eu_count; i++) {
		r = open_eu(node, &node->eus[i], &cfg->eus[i]);
	}
	if (r == 0 && trace_path != NULL) {
		node->trace = hakoi_rd_trace_open(trace_path);
		if (node->trace == NULL) {
			HAKO_ERROR("rd: trace %s: %s", trace_path, strerror(errno));
			r = HAKO_EIO;
		}
	}
	if (r != 0) {
		hako_rd_node_close(node);
		return r;
	}
	for (size_t i = 0; i < node->eu_count; i++) {
		start_run(node, &node->eus[i], 1);
	}
	HAKO_INFO("rd: node %u (%s) opened in domain %s: %zu execution units", node_id, node->name,
	          hako_domain_name(dom), node->eu_count);
	*out = node;
	return 0;
}

void hako_rd_node_close(hako_rd_node_t *node)
{
	if (node == NULL) {
		return;
	}
	for (size_t i = 0; i < node->eu_count; i++) {
		free(node->eus[i].buf);
		free(node->eus[i].data_name);
		hako_channel_batch_destroy(node->eus[i].batch);
	}
	hakoi_rd_trace_close(node->trace);
	hako_msg_registry_destroy(node->reg);
	free(node);
}

uint8_t hako_rd_node_id(const hako_rd_node_t *node)
{
	return node != NULL ? node->id : 0;
}

int hako_rd_get_state(hako_rd_node_t *node, uint32_t eu, hako_rd_eu_state_t *st)
{
	struct eu_rt *e = find_eu(node, eu);
	if (e == NULL || st == NULL) {
		return HAKO_EINVAL;
	}
	sync_reset(node);
	refresh(node, e);
	st->status = (hako_rd_status_t)e->view.status;
	st->epoch = e->view.epoch;
	st->curr_owner = e->view.curr;
	st->next_owner = e->view.next;
	st->local = e->local;
	st->release_time_usec = e->local == HAKO_RD_LOCAL_RELEASING ? e->rel_time
	                        : e->pending                        ? e->pend_time
	                                                            : -1;
	if (st->release_time_usec < 0 && full(node) && e->view.status == HAKO_RD_OWNER_RELEASING) {
		/* RD-Full: the commit point, as the conductor announced it (or the context says).
		 */
		size_t len = 0;
		hakoi_rd_context_t cx;
		char why[200];
		if (hako_channel_read(e->context_ch, e->buf, e->cap, &len, NULL) == 0 &&
		    hakoi_rd_context_decode(&node->types, e->buf, len, &cx, why, sizeof(why)) ==
		        0 &&
		    cx.config_hash == node->cfg->config_hash && cx.epoch == e->view.epoch) {
			st->release_time_usec = cx.release_time;
		}
	}
	return 0;
}

int hako_rd_is_owner(hako_rd_node_t *node, uint32_t eu)
{
	struct eu_rt *e = find_eu(node, eu);
	if (e == NULL) {
		return 0;
	}
	sync_reset(node);
	return e->local == HAKO_RD_LOCAL_OWNER;
}

/* Put context cx into the EU's context channel (a hand-off's, or a checkpoint). */
static int write_context(hako_rd_node_t *node, struct eu_rt *e, const hakoi_rd_context_t *cx)
{
	size_t len = 0;
	int r = hakoi_rd_context_encode(&node->types, cx, e->buf, e->cap, &len);
	return r != 0 ? r : hako_channel_write(e->context_ch, e->buf, len);
}

/* RD-Full: the owner hands over at the commit point the conductor announced. */
static int release_committed(hako_rd_node_t *node, struct eu_rt *e, uint8_t next, const void *ctx,
                             size_t ctx_len, uint64_t model_step, hako_time_t now)
{
	if (e->commit_at < 0) {
		HAKO_WARN("rd: node %u (%s): EU %s: no hand-off was committed; in RD-Full the "
		          "conductor commits them (hako-rd move, an ExMonitor)",
		          node->id, node->name, e->cfg->name);
		return HAKO_ESTATE;
	}
	if (next != 0 && next != e->commit_next) {
		return HAKO_EINVAL;
	}
	if (now < e->commit_at) {
		return HAKO_ESTATE; /* the owner runs until the commit point */
	}
	/* An owner's announced hand-off is to the epoch after its own (poll_committed): an EU's
	 * epoch only moves forward, one at a time, mod 256. */
	HAKO_ASSERT_MSG(e->commit_epoch == (uint8_t)(e->epoch + 1), "epoch %u, commit epoch %u",
	                e->epoch, e->commit_epoch);
	uint8_t epoch = e->commit_epoch;
	/* Traced before the context leaves: a node killed in between has a release on record and
	 * no context out (a restart follows), never a context out and no release. */
	char extra[96];
	snprintf(extra, sizeof(extra), ",\"next\":%u,\"step\":%" PRIu64, e->commit_next,
	         model_step);
	trace(node, e, e->commit_at, epoch, HAKOI_RD_EV_RELEASE, extra);
	hakoi_rd_context_t cx = {
	    node->cfg->config_hash, epoch, node->id, e->commit_at, model_step, ctx, ctx_len};
	int r = write_context(node, e, &cx);
	if (r != 0) {
		HAKO_ERROR("rd: node %u (%s): cannot write the context of EU %s: %s", node->id,
		           node->name, e->cfg->name, hako_strerror(r));
		return r;
	}
	hako_domain_watch_wake(node->dom); /* the conductor relays it */
	e->local = HAKO_RD_LOCAL_RELEASING;
	e->now = e->commit_at;
	e->rel_epoch = epoch;
	e->rel_next = e->commit_next;
	e->rel_time = e->commit_at;
	e->rel_step = model_step;
	e->reclaim_at = -1;
	e->commit_at = -1;
	HAKO_INFO("rd: node %u (%s): EU %s released to node %u at the commit point %.6f s (epoch "
	          "%u, step %" PRIu64 ", %zu context bytes)",
	          node->id, node->name, e->cfg->name, e->rel_next, sec(e->rel_time), epoch,
	          model_step, ctx_len);
	return 0;
}

int hako_rd_release(hako_rd_node_t *node, uint32_t eu, uint8_t next, const void *ctx,
                    size_t ctx_len, uint64_t model_step, hako_time_t now)
{
	struct eu_rt *e = find_eu(node, eu);
	if (e == NULL || (ctx == NULL && ctx_len > 0)) {
		return HAKO_EINVAL;
	}
	sync_reset(node);
	if (e->local != HAKO_RD_LOCAL_OWNER) {
		return HAKO_ENOTOWNER;
	}
	if (ctx_len > e->cfg->max_context_bytes) {
		HAKO_WARN("rd: node %u (%s): context of EU %s is %zu bytes; max_context_bytes is "
		          "%" PRIu32 ": release refused",
		          node->id, node->name, e->cfg->name, ctx_len, e->cfg->max_context_bytes);
		return HAKO_ETOOBIG;
	}
	if (full(node)) {
		return release_committed(node, e, next, ctx, ctx_len, model_step, now);
	}
	if (next == node->id || !is_candidate(e->cfg, next)) {
		return HAKO_EINVAL;
	}
	uint8_t epoch = (uint8_t)(e->epoch + 1);
	hakoi_rd_context_t cx = {
	    node->cfg->config_hash, epoch, node->id, now, model_step, ctx, ctx_len};
	int r = write_context(node, e, &cx);
	if (r != 0) {
		HAKO_ERROR("rd: node %u (%s): cannot write the context of EU %s: %s", node->id,
		           node->name, e->cfg->name, hako_strerror(r));
		return r;
	}
	/* The context is complete before the status names the next owner. */
	if ((r = write_status(node, e, HAKO_RD_OWNER_RELEASING, epoch, node->id, next)) != 0) {
		return r;
	}
	e->local = HAKO_RD_LOCAL_RELEASING;
	e->now = now;
	e->rel_epoch = epoch;
	e->rel_next = next;
	e->rel_time = now;
	e->rel_step = model_step;
	e->reclaim_at = -1; /* worked out at the timeout: most hand-offs never get there */
	char extra[96];
	snprintf(extra, sizeof(extra), ",\"next\":%u,\"step\":%" PRIu64, next, model_step);
	trace(node, e, now, epoch, HAKOI_RD_EV_RELEASE, extra);
	HAKO_INFO("rd: node %u (%s): EU %s released to node %u at %.6f s (epoch %u, step %" PRIu64
	          ", %zu context bytes)",
	          node->id, node->name, e->cfg->name, next, sec(now), epoch, model_step, ctx_len);
	return 0;
}

/* The standby side of a hand-off: is there a release to this node whose context can be used? */
static int poll_standby(hako_rd_node_t *node, struct eu_rt *e, hako_time_t now, hako_rd_event_t *ev,
                        void *ctx, size_t cap, hako_rd_activation_t *act)
{
	const hakoi_rd_status_t v = e->view;
	if (v.status != HAKO_RD_OWNER_RELEASING || v.next != node->id || v.curr == node->id) {
		e->pending = 0;
		e->skip = 0;
		return 0;
	}
	if (e->skip && e->skip_epoch == v.epoch && e->skip_from == v.curr) {
		return 0; /* given up (restore failed, or too late) */
	}
	size_t len = 0;
	uint64_t seq = 0;
	hakoi_rd_context_t cx;
	char why[256] = "";
	int r = hako_channel_read(e->context_ch, e->buf, e->cap, &len, &seq);
	if (r != 0) {
		snprintf(why, sizeof(why), "cannot read it: %s", hako_strerror(r));
	} else if (seq == 0) {
		snprintf(why, sizeof(why), "it was never written");
	} else if (hakoi_rd_context_decode(&node->types, e->buf, len, &cx, why, sizeof(why)) != 0) {
		/* why says it */
	} else if (cx.config_hash != node->cfg->config_hash) {
		snprintf(why, sizeof(why), "written with another RD config (hash 0x%08" PRIx32 ")",
		         cx.config_hash);
	} else if (cx.epoch != v.epoch) {
		snprintf(why, sizeof(why), "its epoch is %u", cx.epoch);
	} else if (cx.model_step == HAKOI_RD_CTX_ANNOUNCE) {
		return 0; /* RD-Full: the commit is announced, the owner's context not yet here */
	} else if (cx.len > e->cfg->max_context_bytes) {
		snprintf(why, sizeof(why), "%zu bytes, more than max_context_bytes %" PRIu32,
		         cx.len, e->cfg->max_context_bytes);
	}
	if (why[0] != '\0') {
		/* Never used: wait for a context of this epoch (or for the owner's timeout). */
		if (!e->wait_logged || e->wait_epoch != v.epoch) {
			e->wait_logged = 1;
			e->wait_epoch = v.epoch;
			HAKO_WARN(
			    "rd: node %u (%s): EU %s is released to this node at epoch %u, but "
			    "its context %s/%s is not usable (%s); waiting",
			    node->id, node->name, e->cfg->name, v.epoch, e->cfg->context.robot,
			    e->cfg->context.name, why);
		}
		return 0;
	}
	if (now <= cx.release_time) {
		return 0; /* this node's clock has not passed the release yet */
	}
	if (now > cx.release_time + node->cfg->handoff_timeout_usec) {
		HAKO_WARN("rd: node %u (%s): EU %s was released to this node at %.6f s (epoch %u); "
		          "now %.6f s is past the %.3f s timeout: not activating",
		          node->id, node->name, e->cfg->name, sec(cx.release_time), v.epoch,
		          sec(now), sec(node->cfg->handoff_timeout_usec));
		e->skip = 1;
		e->skip_epoch = v.epoch;
		e->skip_from = v.curr;
		return 0;
	}
	if (cx.len > cap || (ctx == NULL && cx.len > 0)) {
		HAKO_ERROR("rd: node %u (%s): the context of EU %s is %zu bytes; the buffer given "
		           "to hako_rd_poll holds %zu",
		           node->id, node->name, e->cfg->name, cx.len, cap);
		return HAKO_ETOOBIG;
	}
	if (cx.len > 0) {
		memcpy(ctx, cx.bytes, cx.len);
	}
	e->pending = 1;
	e->pend_epoch = v.epoch;
	e->pend_from = v.curr;
	e->pend_restart = cx.owner == 0; /* RD-Full: from the authority's committed context */
	e->pend_time = cx.release_time;
	e->pend_step = cx.model_step;
	if (act != NULL) {
		*act = (hako_rd_activation_t){v.epoch, cx.owner == 0 ? 0 : v.curr, cx.release_time,
		                              cx.model_step, cx.len};
	}
	*ev = HAKO_RD_EV_ACTIVATE;
	return 0;
}

static int poll_releasing(hako_rd_node_t *node, struct eu_rt *e, hako_time_t now,
                          hako_rd_event_t *ev, void *ctx, size_t cap, hako_rd_activation_t *act)
{
	const hakoi_rd_status_t v = e->view;
	char extra[64];
	/* A releasing node released at the epoch after its ownership's (hako_rd_release,
	 * release_committed), and its own epoch stays until it leaves RELEASING. */
	HAKO_ASSERT_MSG(e->rel_epoch == (uint8_t)(e->epoch + 1), "epoch %u, release epoch %u",
	                e->epoch, e->rel_epoch);
	if (full(node) && v.curr == node->id && v.status == HAKO_RD_OWNER_STABLE &&
	    v.epoch != e->rel_epoch) {
		/* The conductor gave the EU back: the next owner did not activate in time. */
		e->local = HAKO_RD_LOCAL_OWNER;
		e->epoch = v.epoch;
		snprintf(extra, sizeof(extra), ",\"step\":%" PRIu64, e->rel_step);
		trace(node, e, now, v.epoch, HAKOI_RD_EV_RECLAIM, extra);
		HAKO_WARN(
		    "rd: node %u (%s): the conductor gave EU %s back to this node at epoch %u "
		    "(node %u did not take it over)",
		    node->id, node->name, e->cfg->name, v.epoch, e->rel_next);
		*ev = HAKO_RD_EV_RECLAIMED;
		return 0;
	}
	if (v.epoch != e->rel_epoch || v.curr == e->rel_next) {
		/* The next owner activated (and maybe moved on already). */
		e->local = HAKO_RD_LOCAL_STANDBY;
		snprintf(extra, sizeof(extra), ",\"next\":%u", e->rel_next);
		trace(node, e, now, v.epoch, HAKOI_RD_EV_RELEASED, extra);
		HAKO_INFO("rd: node %u (%s): EU %s taken over by node %u (epoch %u)", node->id,
		          node->name, e->cfg->name, e->rel_next, v.epoch);
		/* Handed straight back to this node: ACTIVATE says both. */
		int r = poll_standby(node, e, now, ev, ctx, cap, act);
		if (*ev == HAKO_RD_EV_NONE) {
			*ev = HAKO_RD_EV_RELEASED;
		}
		return r;
	}
	if (full(node) || now < e->rel_time + node->cfg->handoff_timeout_usec) {
		return 0; /* RD-Full: only the conductor takes an EU back */
	}
	if (e->reclaim_at < 0) {
		/* Read now, when the clock parameters and the assets are those of this run. */
		e->reclaim_at = e->rel_time + node->cfg->handoff_timeout_usec + guard_usec(node);
	}
	if (now < e->reclaim_at) {
		return 0;
	}
	uint8_t epoch = (uint8_t)(e->rel_epoch + 1);
	if (write_status(node, e, HAKO_RD_OWNER_STABLE, epoch, node->id, node->id) != 0) {
		return 0; /* logged; tried again at the next poll */
	}
	e->local = HAKO_RD_LOCAL_OWNER;
	e->epoch = epoch;
	snprintf(extra, sizeof(extra), ",\"step\":%" PRIu64, e->rel_step);
	trace(node, e, now, epoch, HAKOI_RD_EV_RECLAIM, extra);
	HAKO_WARN("rd: node %u (%s): node %u (%s) did not activate EU %s within %.3f s of world "
	          "time after the release at %.6f s; taking it back at %.6f s (epoch %u)",
	          node->id, node->name, e->rel_next, node_name(node->cfg, e->rel_next),
	          e->cfg->name, sec(node->cfg->handoff_timeout_usec), sec(e->rel_time), sec(now),
	          epoch);
	*ev = HAKO_RD_EV_RECLAIMED;
	return 0;
}

/* RD-Full, OWNER: a hand-off is committed; COMMIT once the clock reached the commit point
 * (whose time the conductor wrote into the context channel before the status). */
static int poll_committed(hako_rd_node_t *node, struct eu_rt *e, hako_time_t now,
                          hako_rd_event_t *ev, hako_rd_activation_t *act)
{
	const hakoi_rd_status_t v = e->view;
	HAKO_ASSERT_MSG(v.epoch == (uint8_t)(e->epoch + 1), "epoch %u, status epoch %u", e->epoch,
	                v.epoch); /* hako_rd_poll's test: the next epoch, never an older one */
	size_t len = 0;
	hakoi_rd_context_t cx;
	char why[256];
	if (hako_channel_read(e->context_ch, e->buf, e->cap, &len, NULL) != 0 ||
	    hakoi_rd_context_decode(&node->types, e->buf, len, &cx, why, sizeof(why)) != 0 ||
	    cx.config_hash != node->cfg->config_hash || cx.epoch != v.epoch ||
	    cx.model_step != HAKOI_RD_CTX_ANNOUNCE) {
		/* The status came after the announcement, so it was there: this owner's own
		 * checkpoint, written in the moment between the two, replaced it, and the
		 * conductor writes it again. Until then the commit point is unknown: the model
		 * waits, so that it cannot run past it. */
		*ev = HAKO_RD_EV_HOLD;
		return 0;
	}
	e->commit_at = cx.release_time;
	e->commit_epoch = v.epoch;
	e->commit_next = v.next;
	if (now >= e->commit_at) {
		/* The owner's last world time with the EU: what it records from now on (the model
		 * steps up to the commit point, the release) is at the commit point. */
		e->now = e->commit_at;
		*ev = HAKO_RD_EV_COMMIT;
		if (act != NULL) {
			*act = (hako_rd_activation_t){v.epoch, v.next, e->commit_at, 0, 0};
		}
	}
	return 0;
}

/* RD-Full, OWNER: the conductor gave up a hand-off this owner had not released yet (it
 * never reached the commit point, or never saw the announcement) and settled the EU on this
 * node again at a later epoch. The owner never stopped being the only writer: it keeps the
 * EU, at the new epoch. Traced as a release of the abandoned epoch and a reclaim, as when
 * the release had gone out. */
static int owner_settled_back(hako_rd_node_t *node, struct eu_rt *e, hako_time_t now,
                              hako_rd_event_t *ev)
{
	const hakoi_rd_status_t v = e->view;
	uint8_t abandoned = (uint8_t)(v.epoch - 1);
	uint8_t next = e->commit_epoch == abandoned ? e->commit_next : 0;
	char extra[96];
	snprintf(extra, sizeof(extra), ",\"next\":%u,\"step\":%" PRIu64, next, e->last_step);
	trace(node, e, now, abandoned, HAKOI_RD_EV_RELEASE, extra);
	snprintf(extra, sizeof(extra), ",\"step\":%" PRIu64, e->last_step);
	trace(node, e, now, v.epoch, HAKOI_RD_EV_RECLAIM, extra);
	HAKO_WARN("rd: node %u (%s): the conductor abandoned the hand-off of EU %s at epoch %u "
	          "before this node released it; this node keeps the EU at epoch %u",
	          node->id, node->name, e->cfg->name, abandoned, v.epoch);
	e->epoch = v.epoch;
	e->commit_at = -1;
	e->now = now;
	*ev = HAKO_RD_EV_RECLAIMED;
	return 0;
}

int hako_rd_poll(hako_rd_node_t *node, uint32_t eu, hako_time_t now, hako_rd_event_t *ev, void *ctx,
                 size_t cap, hako_rd_activation_t *act)
{
	struct eu_rt *e = find_eu(node, eu);
	if (e == NULL || ev == NULL) {
		return HAKO_EINVAL;
	}
	*ev = HAKO_RD_EV_NONE;
	sync_reset(node);
	e->now = now;
	refresh(node, e);
	switch (e->local) {
	case HAKO_RD_LOCAL_OWNER:
		if (full(node) && e->view.status == HAKO_RD_OWNER_RELEASING &&
		    e->view.curr == node->id && e->view.epoch == (uint8_t)(e->epoch + 1)) {
			return poll_committed(node, e, now, ev, act);
		}
		if (full(node) && e->view.status == HAKO_RD_OWNER_STABLE &&
		    e->view.curr == node->id && e->view.epoch != e->epoch) {
			return owner_settled_back(node, e, now, ev);
		}
		if (e->view.epoch != e->epoch || e->view.curr != node->id) {
			/* Fencing: the status decides. Only an outside writer gets here. */
			HAKO_ERROR("rd: node %u (%s): the status says EU %s belongs to node %u at "
			           "epoch %u, not to this node at epoch %u: this node stops it",
			           node->id, node->name, e->cfg->name, e->view.curr, e->view.epoch,
			           e->epoch);
			e->local = HAKO_RD_LOCAL_STANDBY;
			char extra[64];
			snprintf(extra, sizeof(extra), ",\"next\":%u", e->view.curr);
			trace(node, e, now, e->view.epoch, HAKOI_RD_EV_RELEASED, extra);
			*ev = HAKO_RD_EV_RELEASED;
		}
		return 0;
	case HAKO_RD_LOCAL_RELEASING: return poll_releasing(node, e, now, ev, ctx, cap, act);
	default: return node->id != 0 ? poll_standby(node, e, now, ev, ctx, cap, act) : 0;
	}
}

int hako_rd_activate(hako_rd_node_t *node, uint32_t eu, int ok, hako_time_t now)
{
	struct eu_rt *e = find_eu(node, eu);
	if (e == NULL) {
		return HAKO_EINVAL;
	}
	sync_reset(node);
	if (!e->pending || e->local != HAKO_RD_LOCAL_STANDBY) {
		return HAKO_ESTATE;
	}
	e->pending = 0;
	e->skip = 1; /* whatever happens now, this hand-off is not offered again */
	e->skip_epoch = e->pend_epoch;
	e->skip_from = e->pend_from;
	if (!ok) {
		HAKO_WARN("rd: node %u (%s): could not restore the context of EU %s (epoch %u from "
		          "node %u): not activating; node %u takes it back after its timeout",
		          node->id, node->name, e->cfg->name, e->pend_epoch, e->pend_from,
		          e->pend_from);
		return 0;
	}
	if (now <= e->pend_time || now > e->pend_time + node->cfg->handoff_timeout_usec) {
		HAKO_WARN("rd: node %u (%s): activation of EU %s at %.6f s is outside (%.6f s, "
		          "%.6f s]: refused",
		          node->id, node->name, e->cfg->name, sec(now), sec(e->pend_time),
		          sec(e->pend_time + node->cfg->handoff_timeout_usec));
		return HAKO_ETIMEDOUT;
	}
	refresh(node, e);
	if (e->view.status != HAKO_RD_OWNER_RELEASING || e->view.epoch != e->pend_epoch ||
	    e->view.next != node->id || e->view.curr != e->pend_from) {
		return HAKO_ESTATE;
	}
	int r = write_status(node, e, HAKO_RD_OWNER_ACTIVATING, e->pend_epoch, node->id, node->id);
	if (r == 0) {
		r = write_status(node, e, HAKO_RD_OWNER_STABLE, e->pend_epoch, node->id, node->id);
	}
	if (r != 0) {
		return r;
	}
	e->local = HAKO_RD_LOCAL_OWNER;
	e->epoch = e->pend_epoch;
	e->now = now;
	e->commit_at = -1;
	if (full(node)) {
		hako_domain_watch_wake(node->dom); /* the conductor relays the activation */
	}
	char extra[96];
	if (e->pend_restart) {
		snprintf(extra, sizeof(extra), ",\"lost\":%u,\"step\":%" PRIu64, e->pend_from,
		         e->pend_step);
		trace(node, e, now, e->epoch, HAKOI_RD_EV_RESTART, extra);
	} else {
		snprintf(extra, sizeof(extra), ",\"from\":%u,\"step\":%" PRIu64, e->pend_from,
		         e->pend_step);
		trace(node, e, now, e->epoch, HAKOI_RD_EV_ACTIVATE, extra);
	}
	HAKO_INFO("rd: node %u (%s): EU %s activated at %.6f s (epoch %u, from node %u released "
	          "at %.6f s, step %" PRIu64 ")",
	          node->id, node->name, e->cfg->name, sec(now), e->epoch, e->pend_from,
	          sec(e->pend_time), e->pend_step);
	return 0;
}

/* RD-Full: the context channel also carries the conductor's announcement of a committed
 * hand-off (written before the status). A checkpoint goes there only while the status says
 * this node owns the EU at its epoch and no announcement of the next epoch is in the channel;
 * should one still come in between, the conductor writes it again and the owner holds its
 * model meanwhile (HAKO_RD_EV_HOLD). */
static int checkpoint_allowed(hako_rd_node_t *node, struct eu_rt *e)
{
	refresh(node, e);
	const hakoi_rd_status_t v = e->view;
	if (v.status != HAKO_RD_OWNER_STABLE || v.epoch != e->epoch || v.curr != node->id) {
		return 0;
	}
	size_t len = 0;
	hakoi_rd_context_t cx;
	char why[200];
	int announced =
	    hako_channel_read(e->context_ch, e->buf, e->cap, &len, NULL) == 0 && len > 0 &&
	    hakoi_rd_context_decode(&node->types, e->buf, len, &cx, why, sizeof(why)) == 0 &&
	    cx.config_hash == node->cfg->config_hash && cx.model_step == HAKOI_RD_CTX_ANNOUNCE &&
	    cx.epoch == (uint8_t)(e->epoch + 1);
	return !announced;
}

int hako_rd_checkpoint(hako_rd_node_t *node, uint32_t eu, const void *ctx, size_t ctx_len,
                       uint64_t model_step, hako_time_t now)
{
	struct eu_rt *e = find_eu(node, eu);
	if (e == NULL || (ctx == NULL && ctx_len > 0)) {
		return HAKO_EINVAL;
	}
	sync_reset(node);
	if (e->local != HAKO_RD_LOCAL_OWNER) {
		return HAKO_ENOTOWNER;
	}
	if (ctx_len > e->cfg->max_context_bytes) {
		return HAKO_ETOOBIG;
	}
	if (full(node) && !checkpoint_allowed(node, e)) {
		return 0; /* a hand-off is committed: its release context follows */
	}
	/* Every step traced before the checkpoint is on file before it can be restarted from. */
	hakoi_rd_trace_flush(node->trace);
	/* The epoch of this ownership: a standby reads a context only for a hand-off (the status
	 * RELEASING at epoch + 1), so a checkpoint is never taken for one. */
	hakoi_rd_context_t cx = {
	    node->cfg->config_hash, e->epoch, node->id, now, model_step, ctx, ctx_len};
	return write_context(node, e, &cx);
}

int hako_rd_take_over(hako_rd_node_t *node, uint32_t eu, uint8_t lost, hako_time_t now, void *ctx,
                      size_t cap, hako_rd_activation_t *act)
{
	struct eu_rt *e = find_eu(node, eu);
	if (e == NULL || node->id == 0 || lost == node->id || !is_candidate(e->cfg, node->id)) {
		return HAKO_EINVAL;
	}
	sync_reset(node);
	refresh(node, e);
	const hakoi_rd_status_t v = e->view;
	/* lost owns it, or released it to this node (whose context is then the one to use). */
	int owned = v.curr == lost && (v.status != HAKO_RD_OWNER_RELEASING || v.next == node->id);
	if (full(node) || e->local != HAKO_RD_LOCAL_STANDBY || !owned) {
		HAKO_WARN("rd: node %u (%s): cannot take EU %s over from node %u: %s", node->id,
		          node->name, e->cfg->name, lost,
		          full(node) ? "in RD-Full the conductor restarts it"
		          : e->local != HAKO_RD_LOCAL_STANDBY ? "this node is not standby"
		                                              : "that node does not own it");
		return HAKO_ESTATE;
	}
	size_t len = 0;
	uint64_t seq = 0;
	hakoi_rd_context_t cx;
	char why[256] = "";
	int have = hako_channel_read(e->context_ch, e->buf, e->cap, &len, &seq) == 0 && seq != 0 &&
	           hakoi_rd_context_decode(&node->types, e->buf, len, &cx, why, sizeof(why)) == 0 &&
	           cx.config_hash == node->cfg->config_hash && cx.epoch == v.epoch &&
	           cx.model_step != HAKOI_RD_CTX_ANNOUNCE;
	if (!have) {
		if (v.epoch != 0 || v.status != HAKO_RD_OWNER_STABLE) {
			HAKO_ERROR(
			    "rd: node %u (%s): cannot take EU %s over from node %u: no context "
			    "of its ownership (epoch %u)%s%s",
			    node->id, node->name, e->cfg->name, lost, v.epoch, why[0] ? ": " : "",
			    why);
			return HAKO_ENOENT;
		}
		cx = (hakoi_rd_context_t){node->cfg->config_hash, 0, lost, 0, 0, NULL, 0};
	}
	if (cx.len > cap || (ctx == NULL && cx.len > 0)) {
		return HAKO_ETOOBIG;
	}
	if (cx.len > 0) {
		memcpy(ctx, cx.bytes, cx.len); /* before the status is encoded in the same buffer */
	}
	uint8_t epoch = (uint8_t)(v.epoch + 1);
	int r = write_status(node, e, HAKO_RD_OWNER_STABLE, epoch, node->id, node->id);
	if (r != 0) {
		return r;
	}
	e->local = HAKO_RD_LOCAL_OWNER;
	e->epoch = epoch;
	e->now = now;
	e->pending = 0;
	e->commit_at = -1;
	char extra[96];
	snprintf(extra, sizeof(extra), ",\"lost\":%u,\"step\":%" PRIu64, lost, cx.model_step);
	trace(node, e, now, epoch, HAKOI_RD_EV_RESTART, extra);
	HAKO_WARN("rd: node %u (%s): took EU %s over from the lost node %u at %.6f s (epoch %u), "
	          "from model step %" PRIu64 " (its context of %.6f s)",
	          node->id, node->name, e->cfg->name, lost, sec(now), epoch, cx.model_step,
	          sec(cx.release_time));
	if (act != NULL) {
		*act = (hako_rd_activation_t){epoch, 0, cx.release_time, cx.model_step, cx.len};
	}
	return 0;
}

/* PDU i of EU e, len bytes at data, made ready to publish: checked as a PDU of its type (when
 * the registry knows it) and stamped with the EU's epoch. */
static int seal_pdu(const struct eu_rt *e, size_t i, void *data, size_t len)
{
	int r;
	if (e->data_type[i] != NULL &&
	    (r = hako_pdu_validate(e->data_type[i], data, len, NULL)) != 0) {
		return r;
	}
	return hako_pdu_set_epoch(data, len, e->epoch);
}

/* The trace's record of a write of PDU i of EU e (unless write records are off). */
static void trace_write(hako_rd_node_t *node, struct eu_rt *e, size_t i, hako_time_t model_time)
{
	if (node->no_write_trace) {
		return;
	}
	char extra[400];
	snprintf(extra, sizeof(extra), ",\"pdu\":\"%s\",\"mt\":%" PRId64, e->data_name[i],
	         (int64_t)model_time);
	trace(node, e, e->now >= 0 ? e->now : model_time, e->epoch, HAKOI_RD_EV_WRITE, extra);
}

int hako_rd_write(hako_rd_node_t *node, uint32_t eu, size_t pdu, void *data, size_t len,
                  hako_time_t model_time)
{
	struct eu_rt *e = find_eu(node, eu);
	if (e == NULL || data == NULL || pdu >= e->write_count) {
		return HAKO_EINVAL;
	}
	sync_reset(node);
	if (e->local != HAKO_RD_LOCAL_OWNER) {
		return HAKO_ENOTOWNER;
	}
	if (len > e->write_size[pdu]) {
		return HAKO_ETOOBIG;
	}
	if (e->commit_at >= 0 && model_time > e->commit_at) {
		return HAKO_ENOTOWNER; /* RD-Full: the EU is the next owner's after the commit point
		                        */
	}
	int r;
	if ((r = seal_pdu(e, pdu, data, len)) != 0 ||
	    (r = hako_channel_write(e->data_ch[pdu], data, len)) != 0) {
		return r;
	}
	trace_write(node, e, pdu, model_time);
	return 0;
}

int hako_rd_write_loan(hako_rd_node_t *node, uint32_t eu, void **bufs, size_t n)
{
	struct eu_rt *e = find_eu(node, eu);
	if (e == NULL || bufs == NULL || n < e->write_count || e->batch == NULL) {
		return HAKO_EINVAL;
	}
	sync_reset(node);
	if (e->loaned) {
		return HAKO_ESTATE;
	}
	if (e->local != HAKO_RD_LOCAL_OWNER) {
		return HAKO_ENOTOWNER;
	}
	int r = hako_channel_batch_loan(e->batch, 0, e->write_count, e->loan);
	if (r != 0) {
		return r;
	}
	e->loaned = 1;
	memcpy(bufs, e->loan, e->write_count * sizeof(*bufs));
	return 0;
}

int hako_rd_write_cancel(hako_rd_node_t *node, uint32_t eu)
{
	struct eu_rt *e = find_eu(node, eu);
	if (e == NULL) {
		return HAKO_EINVAL;
	}
	if (!e->loaned) {
		return HAKO_ESTATE;
	}
	e->loaned = 0;
	return hako_channel_batch_cancel(e->batch, 0, e->write_count);
}

/* The checks of hako_rd_write, on the loaned PDUs in place, and their epoch stamped. */
static int check_loaned(struct eu_rt *e, const size_t *lens, hako_time_t model_time)
{
	if (e->local != HAKO_RD_LOCAL_OWNER || (e->commit_at >= 0 && model_time > e->commit_at)) {
		return HAKO_ENOTOWNER; /* RD-Full: the EU is the next owner's after the commit point
		                        */
	}
	for (size_t i = 0; i < e->write_count; i++) {
		if (lens[i] > e->write_size[i]) {
			return HAKO_ETOOBIG;
		}
	}
	int r;
	for (size_t i = 0; i < e->write_count; i++) {
		if ((r = seal_pdu(e, i, e->loan[i], lens[i])) != 0) {
			return r;
		}
	}
	return 0;
}

int hako_rd_write_commit(hako_rd_node_t *node, uint32_t eu, const size_t *lens,
                         hako_time_t model_time)
{
	struct eu_rt *e = find_eu(node, eu);
	if (e == NULL || lens == NULL) {
		return HAKO_EINVAL;
	}
	if (!e->loaned) {
		return HAKO_ESTATE;
	}
	sync_reset(node);
	int r = check_loaned(e, lens, model_time);
	if (r == 0) {
		r = hako_channel_batch_commit(e->batch, 0, e->write_count, lens);
	}
	if (r != 0) {
		hako_channel_batch_cancel(e->batch, 0, e->write_count);
		e->loaned = 0;
		return r;
	}
	e->loaned = 0;
	for (size_t i = 0; i < e->write_count; i++) {
		trace_write(node, e, i, model_time);
	}
	return 0;
}

int hako_rd_read(hako_rd_node_t *node, uint32_t eu, size_t pdu, void *buf, size_t cap, size_t *len)
{
	if (node == NULL) {
		return HAKO_EINVAL;
	}
	return hako_rd_read_at(node, eu, pdu, buf, cap, len, hako_domain_world_time(node->dom));
}

int hako_rd_read_at(hako_rd_node_t *node, uint32_t eu, size_t pdu, void *buf, size_t cap,
                    size_t *len, hako_time_t world)
{
	struct eu_rt *e = find_eu(node, eu);
	if (e == NULL || buf == NULL || pdu >= e->cfg->write_count) {
		return HAKO_EINVAL;
	}
	sync_reset(node);
	size_t n = 0;
	uint64_t seq = 0;
	uint8_t epoch;
	int r = hako_channel_read(e->data_ch[pdu], buf, cap, &n, &seq);
	if (r != 0) {
		return r;
	}
	if (seq == 0) {
		return HAKO_EAGAIN;
	}
	if ((r = hako_pdu_get_epoch(buf, n, &epoch)) != 0) {
		return r;
	}
	/* The epochs written at this world time: the status's, and during a hand-off before its
	 * release time the old owner's too. */
	hako_rd_eu_state_t st;
	hako_rd_get_state(node, eu, &st);
	int ok = epoch == st.epoch ||
	         (st.status == HAKO_RD_OWNER_RELEASING && st.release_time_usec >= 0 &&
	          world < st.release_time_usec && epoch == (uint8_t)(st.epoch - 1));
	if (!ok) {
		node->stale_drops++;
		HAKO_DEBUG("rd: node %u: %s/%s of epoch %u dropped (EU %s is at epoch %u)",
		           node->id, e->cfg->writes[pdu].robot, e->cfg->writes[pdu].name, epoch,
		           e->cfg->name, st.epoch);
		return HAKO_EAGAIN;
	}
	if (node->trace != NULL) {
		char extra[320]; /* the escaped name takes up to 299 bytes */
		snprintf(extra, sizeof(extra), ",\"pdu\":\"%s\"", e->data_name[pdu]);
		trace(node, e, world, epoch, HAKOI_RD_EV_READ, extra);
	}
	if (len != NULL) {
		*len = n;
	}
	return 0;
}

void hako_rd_trace_writes(hako_rd_node_t *node, int on)
{
	if (node != NULL) {
		node->no_write_trace = !on;
	}
}

uint64_t hako_rd_stale_drops(const hako_rd_node_t *node)
{
	return node != NULL ? node->stale_drops : 0;
}

void hako_rd_trace_step(hako_rd_node_t *node, uint32_t eu, uint64_t step, hako_time_t model_time)
{
	struct eu_rt *e = find_eu(node, eu);
	if (e == NULL) {
		return;
	}
	e->last_step = step;
	if (node->trace == NULL) {
		return;
	}
	hakoi_rd_trace_step(node->trace, e->now >= 0 ? e->now : model_time, node->id, e->cfg->id,
	                    e->epoch, step, model_time);
}
