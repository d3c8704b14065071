/* The bridge runtime: one transfer (policy instance, own state, own copy of the last value) per
 * (connection, destination, PDU) or per (connection, destination, atomic group), fed by one
 * subscription ("tap") per (source endpoint, key) that fans an arrival out to its transfers.
 *
 * Threads. Arrivals run in the source comm's thread (or, comm-less, in the sender's); tick and
 * the control calls in the caller's. Each transfer has its own mutex, held while it sends so the
 * PDUs of one transfer leave in order; connection state (epoch, active, statistics) is atomic.
 *
 * Lifetime of the taps: destroy unsubscribes every tap (hako_endpoint_unsubscribe returns once no
 * arrival runs in it and none will) before it frees the transfers the taps point to.
 */
#define _POSIX_C_SOURCE 200809L

#include "hako/bridge.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hako/log.h"
#include "hako/pdu.h"

typedef struct conn {
	const hako_bridge_connection_cfg_t *cfg;
	hako_endpoint_t *src;
	int src_direct; /* its PDUs can be read where they live (shm): tickers poll it */
	/* The epoch (bits 0-7) and, in bit 8, whether a PDU of the next epoch is accepted too
	 * (and moves the connection there): hako_bridge_follow_epoch. One word, so an arrival
	 * and a control call never see half of a change. */
	atomic_uint epoch;
	atomic_int active;
	_Atomic uint64_t forwarded;
	_Atomic uint64_t bytes;
	_Atomic uint64_t dropped_policy;
	_Atomic uint64_t dropped_epoch;
	_Atomic uint64_t dropped_paused;
	_Atomic uint64_t send_failed;
} conn_t;

/* The last value of one PDU of a transfer. */
typedef struct slot {
	hako_pdu_key_t key;
	uint8_t *data;
	size_t len;
	size_t cap;
	int full; /* atomic: marked; throttle: pending; ticker: has a value */
} slot_t;

typedef struct xfer {
	conn_t *conn;
	hako_endpoint_t *dst;
	const char *dst_id;
	const char *group_id;
	hako_bridge_policy_type_t type;
	int atomic;
	hako_time_t interval;
	pthread_mutex_t lock;
	size_t nslots; /* 1 unless atomic */
	slot_t *slots;
	size_t marked; /* atomic */
	int sent_once; /* throttle */
	hako_time_t last;
	int armed; /* ticker */
	hako_time_t next;
	int fresh;   /* ticker: its value has not been sent since it arrived */
	int failing; /* a send failed and was logged; cleared by the next success */
} xfer_t;

typedef struct target {
	xfer_t *x;
	size_t slot;
} target_t;

typedef struct tap {
	hako_bridge_t *b;
	hako_endpoint_t *src;
	hako_pdu_key_t key;
	hako_endpoint_sub_t *sub; /* NULL until subscribed */
	size_t ntargets;          /* grouped by connection, in connection order */
	target_t *targets;
} tap_t;

struct hako_bridge {
	const hako_bridge_config_t *cfg;
	hako_bridge_clock_fn clock;
	void *clock_user;
	size_t nconns;
	conn_t *conns;
	size_t nxfers;
	xfer_t *xfers;
	size_t ntaps;
	tap_t **taps;
	size_t nsrcs;
	hako_endpoint_t **srcs;
};

/* PDUs forwarded by this thread; tick() reports its own share. */
static _Thread_local uint64_t tls_forwarded;

static hako_time_t now_of(hako_bridge_t *b)
{
	return b->clock(b->clock_user);
}

static void count(_Atomic uint64_t *c, uint64_t n)
{
	atomic_fetch_add_explicit(c, n, memory_order_relaxed);
}

/* ---- sending (under the transfer's lock) ---- */

static void send_one(xfer_t *x, const hako_pdu_key_t *key, const void *data, size_t len)
{
	conn_t *c = x->conn;
	int r = hako_endpoint_send(x->dst, key, data, len);
	if (r == 0) {
		count(&c->forwarded, 1);
		count(&c->bytes, len);
		tls_forwarded++;
		if (x->failing) {
			HAKO_INFO("bridge: connection '%s': destination '%s' accepts PDUs again",
			          c->cfg->id, x->dst_id);
			x->failing = 0;
		}
		return;
	}
	count(&c->send_failed, 1);
	if (!x->failing) {
		/* once per failure streak: a dead peer must not flood the log */
		HAKO_WARN("bridge: connection '%s': destination '%s': %s/%d not sent: %s",
		          c->cfg->id, x->dst_id, key->robot, (int)key->channel_id,
		          hako_strerror(r));
		x->failing = 1;
	}
}

/* s->data can hold len bytes (grown by doubling; kept for the next value). */
static int slot_reserve(slot_t *s, size_t len)
{
	if (len <= s->cap) {
		return 0;
	}
	size_t cap = s->cap == 0 ? 64 : s->cap;
	while (cap < len) {
		cap *= 2;
	}
	uint8_t *p = realloc(s->data, cap);
	if (p == NULL) {
		return HAKO_ENOMEM;
	}
	s->data = p;
	s->cap = cap;
	return 0;
}

static int slot_store(slot_t *s, const void *data, size_t len)
{
	if (slot_reserve(s, len) != 0) {
		return HAKO_ENOMEM;
	}
	if (len > 0) {
		memcpy(s->data, data, len);
	}
	s->len = len;
	return 0;
}

#define EPOCH_NEXT_OK 0x100u

/* Epoch check of a PDU against its connection; counts a drop. */
static int epoch_ok(conn_t *c, const void *data, size_t len)
{
	if (!c->cfg->epoch_validation) {
		return 1;
	}
	uint8_t e = 0;
	if (hako_pdu_get_epoch(data, len, &e) == 0) {
		unsigned st = atomic_load_explicit(&c->epoch, memory_order_acquire);
		for (;;) {
			if (e == (uint8_t)st) {
				return 1;
			}
			if (!(st & EPOCH_NEXT_OK) || e != (uint8_t)(st + 1)) {
				break;
			}
			/* The first PDU of the next epoch: the connection is there from now on. */
			if (atomic_compare_exchange_weak_explicit(&c->epoch, &st, (unsigned)e,
			                                          memory_order_acq_rel,
			                                          memory_order_acquire)) {
				return 1;
			}
		}
	}
	count(&c->dropped_epoch, 1);
	return 0;
}

static void clear_marks(xfer_t *x)
{
	for (size_t i = 0; i < x->nslots; i++) {
		x->slots[i].full = 0;
	}
	x->marked = 0;
}

/* All members marked: send the frame in group order unless a member's epoch is stale (it was
 * checked on arrival, but the epoch may have moved since). */
static void atomic_flush(xfer_t *x)
{
	int ok = 1;
	for (size_t i = 0; i < x->nslots; i++) {
		if (!epoch_ok(x->conn, x->slots[i].data, x->slots[i].len)) {
			ok = 0;
		}
	}
	for (size_t i = 0; ok && i < x->nslots; i++) {
		send_one(x, &x->slots[i].key, x->slots[i].data, x->slots[i].len);
	}
	clear_marks(x);
}

/* ---- arrivals (source comm thread) ---- */

static void xfer_arrive(hako_bridge_t *b, xfer_t *x, size_t si, const hako_pdu_key_t *key,
                        const void *data, size_t len)
{
	conn_t *c = x->conn;
	slot_t *s = &x->slots[si];
	hako_time_t now = x->type == HAKO_BRIDGE_THROTTLE ? now_of(b) : 0;
	pthread_mutex_lock(&x->lock);
	switch (x->type) {
	case HAKO_BRIDGE_IMMEDIATE:
		if (!x->atomic) {
			send_one(x, key, data, len);
			break;
		}
		if (slot_store(s, data, len) != 0) {
			HAKO_WARN(
			    "bridge: connection '%s': out of memory, frame of group '%s' dropped",
			    c->cfg->id, x->group_id);
			clear_marks(x);
			break;
		}
		if (!s->full) {
			s->full = 1;
			x->marked++;
		}
		if (x->marked == x->nslots) {
			atomic_flush(x);
		}
		break;
	case HAKO_BRIDGE_THROTTLE:
		if (!x->sent_once || now - x->last >= x->interval) {
			if (s->full) { /* a trailing value the tick has not sent yet: superseded */
				count(&c->dropped_policy, 1);
				s->full = 0;
			}
			send_one(x, key, data, len);
			x->sent_once = 1;
			x->last = now;
			break;
		}
		if (s->full) {
			count(&c->dropped_policy, 1);
		}
		if (slot_store(s, data, len) == 0) {
			s->full = 1;
		} else {
			s->full = 0;
			count(&c->dropped_policy, 1);
		}
		break;
	case HAKO_BRIDGE_TICKER:
		if (slot_store(s, data, len) == 0) {
			s->full = 1;
			x->fresh = 1;
		}
		break;
	}
	pthread_mutex_unlock(&x->lock);
}

static void dispatch(hako_bridge_t *b, tap_t *t, const hako_pdu_key_t *key, const void *data,
                     size_t len)
{
	conn_t *cur = NULL;
	int admit = 0;
	for (size_t i = 0; i < t->ntargets; i++) {
		xfer_t *x = t->targets[i].x;
		if (x->conn != cur) { /* paused / epoch: decided and counted once per connection */
			cur = x->conn;
			if (!atomic_load_explicit(&cur->active, memory_order_acquire)) {
				count(&cur->dropped_paused, 1);
				admit = 0;
			} else {
				admit = epoch_ok(cur, data, len) ? 1 : -1;
			}
		}
		if (admit == 1) {
			xfer_arrive(b, x, t->targets[i].slot, key, data, len);
		} else if (admit == -1 && x->atomic) {
			pthread_mutex_lock(&x->lock); /* one stale member drops the frame */
			clear_marks(x);
			pthread_mutex_unlock(&x->lock);
		}
	}
}

static void on_arrival(void *user, const hako_pdu_key_t *key, const void *data, size_t len)
{
	tap_t *t = user;
	dispatch(t->b, t, key, data, len);
}

/* ---- building ---- */

static conn_t *find_conn(hako_bridge_t *b, const char *id)
{
	for (size_t i = 0; b != NULL && id != NULL && i < b->nconns; i++) {
		if (strcmp(b->conns[i].cfg->id, id) == 0) {
			return &b->conns[i];
		}
	}
	return NULL;
}

static tap_t *tap_get(hako_bridge_t *b, hako_endpoint_t *src, const hako_pdu_key_t *key)
{
	for (size_t i = 0; i < b->ntaps; i++) {
		tap_t *t = b->taps[i];
		if (t->src == src && t->key.channel_id == key->channel_id &&
		    strcmp(t->key.robot, key->robot) == 0) {
			return t;
		}
	}
	tap_t **taps = realloc(b->taps, (b->ntaps + 1) * sizeof(*taps));
	if (taps == NULL) {
		return NULL;
	}
	b->taps = taps;
	tap_t *t = calloc(1, sizeof(*t));
	if (t == NULL) {
		return NULL;
	}
	t->b = b;
	t->src = src;
	t->key = *key;
	b->taps[b->ntaps++] = t;
	return t;
}

static int tap_add(tap_t *t, xfer_t *x, size_t slot)
{
	target_t *tg = realloc(t->targets, (t->ntargets + 1) * sizeof(*tg));
	if (tg == NULL) {
		return HAKO_ENOMEM;
	}
	t->targets = tg;
	t->targets[t->ntargets].x = x;
	t->targets[t->ntargets].slot = slot;
	t->ntargets++;
	return 0;
}

static int add_source(hako_bridge_t *b, hako_endpoint_t *src)
{
	for (size_t i = 0; i < b->nsrcs; i++) {
		if (b->srcs[i] == src) {
			return 0;
		}
	}
	hako_endpoint_t **p = realloc(b->srcs, (b->nsrcs + 1) * sizeof(*p));
	if (p == NULL) {
		return HAKO_ENOMEM;
	}
	b->srcs = p;
	b->srcs[b->nsrcs++] = src;
	return 0;
}

static size_t xfer_count(const hako_bridge_config_t *cfg)
{
	size_t n = 0;
	for (size_t i = 0; i < cfg->connection_count; i++) {
		const hako_bridge_connection_cfg_t *cc = &cfg->connections[i];
		for (size_t j = 0; j < cc->transfer_count; j++) {
			const hako_bridge_policy_cfg_t *p = &cfg->policies[cc->transfers[j].policy];
			const hako_bridge_group_cfg_t *g = &cfg->groups[cc->transfers[j].group];
			n += cc->dest_count * (p->atomic ? 1 : g->count);
		}
	}
	return n;
}

static int check_refs(const hako_bridge_config_t *cfg, hako_error_t *err)
{
	for (size_t i = 0; i < cfg->connection_count; i++) {
		const hako_bridge_connection_cfg_t *cc = &cfg->connections[i];
		for (size_t j = 0; j < cc->transfer_count; j++) {
			if (cc->transfers[j].policy >= cfg->policy_count ||
			    cc->transfers[j].group >= cfg->group_count) {
				return hako_error_set(err, HAKO_EINVAL, cfg->path, 0, 0,
				                      "connection '%s': transfer %zu refers to a "
				                      "policy or group that does not exist",
				                      cc->id, j);
			}
		}
		/* The control calls and the statistics name a connection by its id. */
		for (size_t k = 0; k < i; k++) {
			if (strcmp(cfg->connections[k].id, cc->id) == 0) {
				return hako_error_set(err, HAKO_EINVAL, cfg->path, 0, 0,
				                      "connection '%s' is given twice (connections "
				                      "%zu and %zu): ids are unique per node",
				                      cc->id, k, i);
			}
		}
	}
	return 0;
}

static int xfer_init(xfer_t *x, conn_t *c, hako_endpoint_t *dst, const char *dst_id,
                     const hako_bridge_policy_cfg_t *p, const hako_bridge_group_cfg_t *g,
                     size_t nslots)
{
	x->conn = c;
	x->dst = dst;
	x->dst_id = dst_id;
	x->group_id = g->id;
	x->type = p->type;
	x->atomic = p->atomic && p->type == HAKO_BRIDGE_IMMEDIATE;
	x->interval = (hako_time_t)p->interval_ms * 1000;
	x->nslots = nslots;
	x->slots = calloc(nslots, sizeof(*x->slots));
	if (x->slots == NULL) {
		return HAKO_ENOMEM;
	}
	pthread_mutex_init(&x->lock, NULL);
	return 0;
}

/* The transfers of one (connection, transfer entry, destination) and their taps. */
static int build_transfer(hako_bridge_t *b, conn_t *c, const hako_bridge_transfer_cfg_t *tc,
                          hako_endpoint_t *dst, const char *dst_id, const hako_pdu_key_t *keys,
                          hako_error_t *err)
{
	const hako_bridge_policy_cfg_t *p = &b->cfg->policies[tc->policy];
	const hako_bridge_group_cfg_t *g = &b->cfg->groups[tc->group];
	int atomic = p->atomic && p->type == HAKO_BRIDGE_IMMEDIATE;
	size_t nx = atomic ? 1 : g->count;
	for (size_t k = 0; k < nx; k++) {
		if (!atomic && keys[k].robot[0] == '\0') {
			continue; /* a member no pdudef has (a leniently loaded file): skipped */
		}
		xfer_t *x = &b->xfers[b->nxfers];
		if (xfer_init(x, c, dst, dst_id, p, g, atomic ? g->count : 1) != 0) {
			return hako_error_set(err, HAKO_ENOMEM, b->cfg->path, 0, 0,
			                      "out of memory");
		}
		b->nxfers++;
		for (size_t s = 0; s < x->nslots; s++) {
			size_t m = atomic ? s : k;
			x->slots[s].key = keys[m];
			tap_t *t = tap_get(b, c->src, &keys[m]);
			if (t == NULL || tap_add(t, x, s) != 0) {
				return hako_error_set(err, HAKO_ENOMEM, b->cfg->path, 0, 0,
				                      "out of memory");
			}
		}
	}
	return 0;
}

/* A member's key: from the source's pdudef, or -- a source without one (the loader accepts it,
 * as Hakoniwa's does) -- from the first destination's that knows the name. */
static int resolve(conn_t *c, hako_endpoint_set_t *eps, const hako_bridge_pdu_ref_t *ref,
                   hako_pdu_key_t *key)
{
	if (hako_endpoint_resolve(c->src, ref->robot, ref->pdu, key, NULL) == 0) {
		return 0;
	}
	if (hako_endpoint_config(c->src)->pdudef != NULL) {
		return HAKO_ENOENT;
	}
	for (size_t d = 0; d < c->cfg->dest_count; d++) {
		hako_endpoint_t *dst = hako_endpoint_set_get(eps, c->cfg->destinations[d]);
		if (hako_endpoint_resolve(dst, ref->robot, ref->pdu, key, NULL) == 0) {
			return 0;
		}
	}
	return HAKO_ENOENT;
}

static int build_connection(hako_bridge_t *b, conn_t *c, hako_endpoint_set_t *eps,
                            hako_error_t *err)
{
	const hako_bridge_config_t *cfg = b->cfg;
	const hako_bridge_connection_cfg_t *cc = c->cfg;
	c->src = hako_endpoint_set_get(eps, cc->source);
	if (c->src == NULL) {
		return hako_error_set(
		    err, HAKO_ECONFIG, cfg->path, 0, 0,
		    "connection '%s': source endpoint '%s' is not open on node '%s'", cc->id,
		    cc->source, cfg->node);
	}
	const hako_endpoint_config_t *scfg = hako_endpoint_config(c->src);
	c->src_direct = scfg != NULL && scfg->comm != NULL && scfg->comm->protocol == HAKO_COMM_SHM;
	if (add_source(b, c->src) != 0) {
		return hako_error_set(err, HAKO_ENOMEM, cfg->path, 0, 0, "out of memory");
	}
	if (cc->dest_count == 0) {
		HAKO_INFO("bridge: connection '%s' has no destinations: it forwards nothing (a "
		          "monitor of '%s')",
		          cc->id, cc->source);
	}
	for (size_t d = 0; d < cc->dest_count; d++) {
		if (hako_endpoint_set_get(eps, cc->destinations[d]) == NULL) {
			return hako_error_set(
			    err, HAKO_ECONFIG, cfg->path, 0, 0,
			    "connection '%s': destination endpoint '%s' is not open on node '%s'",
			    cc->id, cc->destinations[d], cfg->node);
		}
	}
	for (size_t j = 0; j < cc->transfer_count; j++) {
		const hako_bridge_group_cfg_t *g = &cfg->groups[cc->transfers[j].group];
		hako_pdu_key_t *keys = calloc(g->count > 0 ? g->count : 1, sizeof(*keys));
		if (keys == NULL) {
			return hako_error_set(err, HAKO_ENOMEM, cfg->path, 0, 0, "out of memory");
		}
		int r = 0;
		size_t missing = 0;
		for (size_t m = 0; m < g->count && r == 0; m++) {
			const hako_bridge_pdu_ref_t *ref = &g->pdus[m];
			if (resolve(c, eps, ref, &keys[m]) == 0) {
				continue;
			}
			keys[m].robot[0] = '\0'; /* skipped */
			missing++;
			if (cfg->strict) {
				r = hako_error_set(
				    err, HAKO_ECONFIG, cfg->path, 0, 0,
				    "connection '%s': group '%s' member '%s' (%s/%s): not "
				    "in the pdudef of source endpoint '%s' nor of its "
				    "destinations",
				    cc->id, g->id, ref->id, ref->robot, ref->pdu, cc->source);
			} else {
				HAKO_WARN(
				    "bridge: connection '%s': group '%s' member '%s' (%s/%s) is "
				    "in no pdudef of its endpoints: not forwarded",
				    cc->id, g->id, ref->id, ref->robot, ref->pdu);
			}
		}
		const hako_bridge_policy_cfg_t *pol = &cfg->policies[cc->transfers[j].policy];
		if (r == 0 && missing > 0 && pol->atomic && pol->type == HAKO_BRIDGE_IMMEDIATE) {
			HAKO_WARN(
			    "bridge: connection '%s': the atomic transfer of group '%s' could "
			    "never complete without its %zu missing member(s): skipped",
			    cc->id, g->id, missing);
			free(keys);
			continue;
		}
		for (size_t d = 0; d < cc->dest_count && r == 0; d++) {
			hako_endpoint_t *dst = hako_endpoint_set_get(eps, cc->destinations[d]);
			r = build_transfer(b, c, &cc->transfers[j], dst, cc->destinations[d], keys,
			                   err);
		}
		free(keys);
		if (r != 0) {
			return r;
		}
	}
	return 0;
}

int hako_bridge_create(const hako_bridge_config_t *cfg, hako_endpoint_set_t *eps,
                       hako_bridge_clock_fn clock, void *clock_user, hako_bridge_t **out,
                       hako_error_t *err)
{
	hako_error_clear(err);
	if (out != NULL) {
		*out = NULL;
	}
	if (cfg == NULL || eps == NULL || clock == NULL || out == NULL) {
		return hako_error_set(err, HAKO_EINVAL, "", 0, 0,
		                      "hako_bridge_create: config, endpoints, clock and out are "
		                      "required");
	}
	int r = check_refs(cfg, err);
	if (r != 0) {
		return r;
	}
	hako_bridge_t *b = calloc(1, sizeof(*b));
	size_t nx = xfer_count(cfg);
	if (b == NULL) {
		return hako_error_set(err, HAKO_ENOMEM, cfg->path, 0, 0, "out of memory");
	}
	b->cfg = cfg;
	b->clock = clock;
	b->clock_user = clock_user;
	b->conns = calloc(cfg->connection_count > 0 ? cfg->connection_count : 1, sizeof(conn_t));
	b->xfers = calloc(nx > 0 ? nx : 1, sizeof(xfer_t));
	if (b->conns == NULL || b->xfers == NULL) {
		hako_bridge_destroy(b);
		return hako_error_set(err, HAKO_ENOMEM, cfg->path, 0, 0, "out of memory");
	}
	for (size_t i = 0; i < cfg->connection_count; i++) {
		conn_t *c = &b->conns[i];
		c->cfg = &cfg->connections[i];
		atomic_init(&c->epoch, 0);
		atomic_init(&c->active, 1);
		b->nconns++;
		r = build_connection(b, c, eps, err);
		if (r != 0) {
			hako_bridge_destroy(b);
			return r;
		}
	}
	for (size_t i = 0; i < b->ntaps; i++) {
		tap_t *t = b->taps[i];
		r = hako_endpoint_subscribe(t->src, &t->key, on_arrival, t, &t->sub);
		if (r != 0) {
			hako_bridge_destroy(b);
			return hako_error_set(err, r, cfg->path, 0, 0,
			                      "cannot subscribe to %s/%d of a source endpoint: %s",
			                      t->key.robot, (int)t->key.channel_id,
			                      hako_strerror(r));
		}
	}
	*out = b;
	return 0;
}

void hako_bridge_destroy(hako_bridge_t *b)
{
	if (b == NULL) {
		return;
	}
	/* The transfers are freed below, once no tap can reach them. */
	for (size_t i = 0; i < b->ntaps; i++) {
		hako_endpoint_unsubscribe(b->taps[i]->sub);
		free(b->taps[i]->targets);
		free(b->taps[i]);
	}
	for (size_t i = 0; i < b->nxfers; i++) {
		xfer_t *x = &b->xfers[i];
		for (size_t s = 0; s < x->nslots; s++) {
			free(x->slots[s].data);
		}
		free(x->slots);
		pthread_mutex_destroy(&x->lock);
	}
	free(b->taps);
	free(b->srcs);
	free(b->xfers);
	free(b->conns);
	free(b);
}

/* ---- time-based work ---- */

/* A ticker over a source that can be read where the PDU lives (shm: its channel) takes the
 * latest value on each tick, as Hakoniwa's bridge does: a PDU not listed with notify_on_recv
 * never arrives, and one that is gets the same value. Never written yet: nothing to send. */
static void poll_source(xfer_t *x, slot_t *s)
{
	if (!x->conn->src_direct) {
		return;
	}
	size_t len = 0;
	int r = hako_endpoint_read_direct(x->conn->src, &s->key, s->data, s->cap, &len);
	if (r == HAKO_ETOOBIG) {
		if (slot_reserve(s, len) != 0) {
			return;
		}
		r = hako_endpoint_read_direct(x->conn->src, &s->key, s->data, s->cap, &len);
	}
	if (r == 0) {
		s->len = len;
		s->full = 1;
	}
}

static void xfer_tick(xfer_t *x, hako_time_t now)
{
	slot_t *s = &x->slots[0];
	pthread_mutex_lock(&x->lock);
	if (x->type == HAKO_BRIDGE_THROTTLE) {
		if (s->full && now - x->last >= x->interval) {
			if (epoch_ok(x->conn, s->data, s->len)) {
				send_one(x, &s->key, s->data, s->len);
			}
			s->full = 0;
			x->last = now;
		}
	} else if (x->type == HAKO_BRIDGE_TICKER) {
		if (!x->armed) {
			x->armed = 1;
			x->next = now + x->interval;
		} else if (now >= x->next) {
			poll_source(x, s);
			if (s->full) {
				if (epoch_ok(x->conn, s->data, s->len)) {
					send_one(x, &s->key, s->data, s->len);
				} else {
					s->full = 0; /* stale: do not count it again every tick */
				}
			}
			x->fresh = 0;
			x->next += x->interval;
			if (now >= x->next) { /* far behind: no burst */
				x->next = now + x->interval;
			}
		}
	}
	pthread_mutex_unlock(&x->lock);
}

/* The sources' news first (take: process or drain them), then each active timed policy
 * (each: tick or flush it). The PDUs forwarded meanwhile. */
static int sweep(hako_bridge_t *b, int (*take)(hako_endpoint_t *),
                 void (*each)(xfer_t *, hako_time_t))
{
	if (b == NULL) {
		return HAKO_EINVAL;
	}
	uint64_t before = tls_forwarded;
	for (size_t i = 0; i < b->nsrcs; i++) {
		take(b->srcs[i]);
	}
	hako_time_t now = now_of(b);
	for (size_t i = 0; i < b->nxfers; i++) {
		xfer_t *x = &b->xfers[i];
		if (x->type == HAKO_BRIDGE_IMMEDIATE ||
		    !atomic_load_explicit(&x->conn->active, memory_order_acquire)) {
			continue;
		}
		each(x, now);
	}
	uint64_t n = tls_forwarded - before;
	return n > INT32_MAX ? INT32_MAX : (int)n;
}

int hako_bridge_tick(hako_bridge_t *b)
{
	return sweep(b, hako_endpoint_process_recv_events, xfer_tick);
}

/* At a flush, a ticker over a source read where the PDU lives (shm) takes the value there if it
 * differs from the one it holds (a PDU not listed with notify_on_recv never arrives: only the
 * ticks read it), so a change since the last tick is not left behind. */
static void poll_news(xfer_t *x, slot_t *s)
{
	if (!x->conn->src_direct) {
		return;
	}
	size_t cap = s->cap > 0 ? s->cap : 64;
	size_t len = 0;
	uint8_t *buf = malloc(cap);
	int r = buf != NULL ? hako_endpoint_read_direct(x->conn->src, &s->key, buf, cap, &len)
	                    : HAKO_ENOMEM;
	if (r == HAKO_ETOOBIG) {
		uint8_t *big = realloc(buf, len);
		r = big != NULL ? hako_endpoint_read_direct(x->conn->src, &s->key, big, len, &len)
		                : HAKO_ENOMEM;
		buf = big != NULL ? big : buf;
	}
	if (r == 0 && (!s->full || len != s->len || (len > 0 && memcmp(buf, s->data, len) != 0)) &&
	    slot_store(s, buf, len) == 0) {
		s->full = 1;
		x->fresh = 1;
	}
	free(buf);
}

/* What a policy holds back leaves now, whatever the time: a throttle's trailing value, a
 * ticker's value not sent since it changed. */
static void xfer_flush(xfer_t *x, hako_time_t now)
{
	slot_t *s = &x->slots[0];
	pthread_mutex_lock(&x->lock);
	if (x->type == HAKO_BRIDGE_THROTTLE && s->full) {
		if (epoch_ok(x->conn, s->data, s->len)) {
			send_one(x, &s->key, s->data, s->len);
		}
		s->full = 0;
		x->sent_once = 1;
		x->last = now;
	} else if (x->type == HAKO_BRIDGE_TICKER) {
		poll_news(x, s);
		if (s->full && x->fresh) {
			if (epoch_ok(x->conn, s->data, s->len)) {
				send_one(x, &s->key, s->data, s->len);
			} else {
				s->full = 0;
			}
		}
		x->fresh = 0;
	}
	pthread_mutex_unlock(&x->lock);
}

int hako_bridge_flush(hako_bridge_t *b)
{
	/* First what the sources have not delivered yet: it may end in a throttle or a ticker. */
	return sweep(b, hako_endpoint_drain, xfer_flush);
}

hako_time_t hako_bridge_next_due(hako_bridge_t *b)
{
	if (b == NULL) {
		return -1;
	}
	hako_time_t due = -1;
	for (size_t i = 0; i < b->nxfers; i++) {
		xfer_t *x = &b->xfers[i];
		if (x->type == HAKO_BRIDGE_IMMEDIATE ||
		    !atomic_load_explicit(&x->conn->active, memory_order_acquire)) {
			continue;
		}
		hako_time_t t = -1;
		pthread_mutex_lock(&x->lock);
		if (x->type == HAKO_BRIDGE_THROTTLE && x->slots[0].full) {
			t = x->last + x->interval;
		} else if (x->type == HAKO_BRIDGE_TICKER) {
			t = x->armed ? x->next : now_of(b); /* the first tick arms it */
		}
		pthread_mutex_unlock(&x->lock);
		if (t >= 0 && (due < 0 || t < due)) {
			due = t;
		}
	}
	return due;
}

/* ---- control ---- */

int hako_bridge_set_epoch(hako_bridge_t *b, const char *connection, uint8_t epoch)
{
	conn_t *c = find_conn(b, connection);
	if (c == NULL) {
		return b == NULL || connection == NULL ? HAKO_EINVAL : HAKO_ENOENT;
	}
	atomic_store_explicit(&c->epoch, epoch, memory_order_release);
	return 0;
}

int hako_bridge_bump_epoch(hako_bridge_t *b, const char *connection, uint8_t *new_epoch)
{
	conn_t *c = find_conn(b, connection);
	if (c == NULL) {
		return b == NULL || connection == NULL ? HAKO_EINVAL : HAKO_ENOENT;
	}
	unsigned old = atomic_load(&c->epoch);
	unsigned next;
	do {
		next = (old + 1) & 0xffu;
	} while (!atomic_compare_exchange_weak(&c->epoch, &old, next));
	if (new_epoch != NULL) {
		*new_epoch = (uint8_t)next;
	}
	return 0;
}

int hako_bridge_follow_epoch(hako_bridge_t *b, const char *connection, uint8_t epoch, int next_ok,
                             uint8_t *now)
{
	conn_t *c = find_conn(b, connection);
	if (c == NULL) {
		return b == NULL || connection == NULL ? HAKO_EINVAL : HAKO_ENOENT;
	}
	unsigned old = atomic_load(&c->epoch);
	unsigned want;
	do {
		uint8_t ahead = (uint8_t)((uint8_t)old - epoch);
		if (ahead >= 1 && ahead < 128) {
			want = old; /* already past it (a PDU of the next epoch came): stays */
		} else {
			want = epoch | (next_ok ? EPOCH_NEXT_OK : 0u);
		}
	} while (want != old && !atomic_compare_exchange_weak(&c->epoch, &old, want));
	if (now != NULL) {
		*now = (uint8_t)want;
	}
	return 0;
}

int hako_bridge_get_epoch(hako_bridge_t *b, const char *connection, uint8_t *epoch)
{
	conn_t *c = find_conn(b, connection);
	if (c == NULL || epoch == NULL) {
		return b == NULL || connection == NULL || epoch == NULL ? HAKO_EINVAL : HAKO_ENOENT;
	}
	*epoch = (uint8_t)atomic_load_explicit(&c->epoch, memory_order_acquire);
	return 0;
}

int hako_bridge_set_active(hako_bridge_t *b, const char *connection, int active)
{
	conn_t *c = find_conn(b, connection);
	if (c == NULL) {
		return b == NULL || connection == NULL ? HAKO_EINVAL : HAKO_ENOENT;
	}
	int was = atomic_exchange(&c->active, active ? 1 : 0);
	if (was && !active) {
		/* a frame that straddles a pause would mix old and new members */
		for (size_t i = 0; i < b->nxfers; i++) {
			xfer_t *x = &b->xfers[i];
			if (x->conn == c && x->atomic) {
				pthread_mutex_lock(&x->lock);
				clear_marks(x);
				pthread_mutex_unlock(&x->lock);
			}
		}
	}
	return 0;
}

size_t hako_bridge_connection_count(const hako_bridge_t *b)
{
	return b != NULL ? b->nconns : 0;
}

int hako_bridge_get_stats(hako_bridge_t *b, size_t i, hako_bridge_conn_stats_t *st)
{
	if (b == NULL || st == NULL) {
		return HAKO_EINVAL;
	}
	if (i >= b->nconns) {
		return HAKO_ENOENT;
	}
	conn_t *c = &b->conns[i];
	memset(st, 0, sizeof(*st));
	snprintf(st->id, sizeof(st->id), "%s", c->cfg->id);
	st->forwarded = atomic_load(&c->forwarded);
	st->bytes = atomic_load(&c->bytes);
	st->dropped_policy = atomic_load(&c->dropped_policy);
	st->dropped_epoch = atomic_load(&c->dropped_epoch);
	st->dropped_paused = atomic_load(&c->dropped_paused);
	st->send_failed = atomic_load(&c->send_failed);
	st->epoch = (uint8_t)atomic_load(&c->epoch);
	st->active = atomic_load(&c->active);
	return 0;
}

/* ---- clocks ---- */

hako_time_t hako_bridge_clock_wall(void *user)
{
	(void)user;
	return hako_now_usec();
}

/* A reset shows in two ways: the domain's reset count moves (the core sets the clocks to 0
 * first), or world time is below the last value read (read between the two). The world time
 * reached before it is taken to be the last value read (a bridge reads at every step), and is
 * added to base; a reset first seen as time going back is not added again when the count moves.
 * Read from the tick and from the sources' threads (throttle arrivals): under a lock, which also
 * keeps the reads in order. */
struct hako_bridge_world_clock {
	hako_domain_t *dom;
	pthread_mutex_t lock;
	hako_time_t base; /* world time of the runs before the last reset */
	hako_time_t last; /* the last world time read */
	uint32_t resets;  /* the domain's reset count when `last` was read */
	int added_early;  /* a reset was added when time went back, before its count moved */
};

int hako_bridge_world_clock_create(hako_domain_t *dom, hako_bridge_world_clock_t **out)
{
	if (out != NULL) {
		*out = NULL;
	}
	if (dom == NULL || out == NULL) {
		return HAKO_EINVAL;
	}
	hako_bridge_world_clock_t *wc = calloc(1, sizeof(*wc));
	if (wc == NULL) {
		return HAKO_ENOMEM;
	}
	wc->dom = dom;
	pthread_mutex_init(&wc->lock, NULL);
	wc->resets = hako_domain_reset_count(dom);
	wc->last = hako_domain_world_time(dom);
	*out = wc;
	return 0;
}

void hako_bridge_world_clock_destroy(hako_bridge_world_clock_t *wc)
{
	if (wc == NULL) {
		return;
	}
	pthread_mutex_destroy(&wc->lock);
	free(wc);
}

hako_time_t hako_bridge_world_clock_now(void *user)
{
	hako_bridge_world_clock_t *wc = user;
	pthread_mutex_lock(&wc->lock);
	uint32_t resets = hako_domain_reset_count(wc->dom);
	hako_time_t w = hako_domain_world_time(wc->dom);
	if (resets != wc->resets) {
		if (!wc->added_early) {
			wc->base += wc->last;
		}
		wc->added_early = 0;
		wc->resets = resets;
	} else if (w < wc->last) {
		wc->base += wc->last;
		wc->added_early = 1;
	}
	wc->last = w;
	hako_time_t now = wc->base + w;
	pthread_mutex_unlock(&wc->lock);
	return now;
}
