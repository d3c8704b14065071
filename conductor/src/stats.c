/* A conductor node's statistics (node.c has the node): the drift and age samples of each peer
 * (a ring of the newest, percentiles by selection), the peer table of
 * hako_conductor_node_stats, the status record written into the domain, the trace. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "conductor_internal.h"
#include "hako/log.h"

/* ---- statistics ---- */

void hakoi_ring_push(hakoi_ring_t *r, hako_time_t x)
{
	if (r->v == NULL) {
		r->v = malloc(HAKOI_DRIFT_SAMPLES * sizeof(*r->v));
		if (r->v == NULL) {
			return;
		}
	}
	r->v[r->next] = x;
	r->next = (r->next + 1) % HAKOI_DRIFT_SAMPLES;
	if (r->n < HAKOI_DRIFT_SAMPLES) {
		r->n++;
	}
	r->total++;
	if (r->total == 1 || x > r->max) {
		r->max = x;
	}
}

/* The k-th smallest of a[0..n) (k < n), reordering a: quickselect with a median-of-three
 * pivot, O(n) on average. */
static hako_time_t select_kth(hako_time_t *a, size_t n, size_t k)
{
	size_t lo = 0, hi = n - 1;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		hako_time_t x = a[lo], y = a[mid], z = a[hi];
		hako_time_t pivot =
		    x < y ? (y < z ? y : (x < z ? z : x)) : (x < z ? x : (y < z ? z : y));
		size_t i = lo, j = hi;
		while (i <= j) {
			while (a[i] < pivot) {
				i++;
			}
			while (a[j] > pivot) {
				j--;
			}
			if (i <= j) {
				hako_time_t t = a[i];
				a[i] = a[j];
				a[j] = t;
				i++;
				if (j == 0) {
					break;
				}
				j--;
			}
		}
		/* a[lo..j] <= pivot <= a[i..hi], and a[j+1..i-1] == pivot */
		if (k <= j) {
			hi = j;
		} else if (k >= i) {
			lo = i;
		} else {
			return a[k];
		}
	}
	return a[k];
}

static size_t rank_of(size_t n, double p)
{
	size_t i = (size_t)(p / 100.0 * (double)(n - 1) + 0.5);
	return i < n ? i : n - 1;
}

hako_time_t hakoi_ring_percentile(const hakoi_ring_t *r, double p)
{
	if (r->n == 0) {
		return 0;
	}
	hako_time_t *s = malloc(r->n * sizeof(*s));
	if (s == NULL) {
		return 0;
	}
	memcpy(s, r->v, r->n * sizeof(*s));
	hako_time_t v = select_kth(s, r->n, rank_of(r->n, p));
	free(s);
	return v;
}

void hakoi_ring_p50_p95(hakoi_ring_t *r, int exact, hako_time_t *p50, hako_time_t *p95)
{
	if (r->n == 0) {
		*p50 = *p95 = 0;
		return;
	}
	uint64_t fresh = r->total - r->cached_total, enough = r->n / 64 > 0 ? r->n / 64 : 1;
	if (r->cached_total > r->total || fresh >= (exact ? 1 : enough)) {
		hako_time_t *s = malloc(r->n * sizeof(*s));
		if (s == NULL) {
			*p50 = *p95 = 0;
			return;
		}
		memcpy(s, r->v, r->n * sizeof(*s));
		r->cached_p50 = select_kth(s, r->n, rank_of(r->n, 50));
		r->cached_p95 = select_kth(s, r->n, rank_of(r->n, 95));
		r->cached_total = r->total;
		free(s);
	}
	*p50 = r->cached_p50;
	*p95 = r->cached_p95;
}

void hakoi_ring_free(hakoi_ring_t *r)
{
	free(r->v);
	memset(r, 0, sizeof(*r));
}

void hakoi_write_status(hako_conductor_node_t *n)
{
	if (n->status == NULL) {
		return;
	}
	static __thread hako_conductor_status_t st;
	static __thread char buf[HAKO_CONDUCTOR_STATUS_BYTES];
	memset(&st, 0, sizeof(st));
	hakoi_node_stats(n, st.peers, HAKO_CONDUCTOR_MAX_CLIENTS, &st.peer_count, 0);
	if (st.peer_count > HAKO_CONDUCTOR_MAX_CLIENTS) {
		st.peer_count = HAKO_CONDUCTOR_MAX_CLIENTS;
	}
	snprintf(st.node_id, sizeof(st.node_id), "%s", n->cfg.node_id);
	snprintf(st.server_id, sizeof(st.server_id), "%s", n->cfg.server_id);
	st.role = n->cfg.role;
	st.dmax_usec = n->cfg.max_delay_usec;
	st.world_time_usec = hako_domain_world_time(n->dom);
	st.auth = n->auth.on ? HAKO_CONDUCTOR_AUTH_CURVE : HAKO_CONDUCTOR_AUTH_NONE;
	pthread_mutex_lock(&n->stats_lock);
	st.garbage_unknown = n->garbage_unknown;
	st.auth_refused = n->auth.refused;
	pthread_mutex_unlock(&n->stats_lock);
	size_t len = 0;
	if (hako_conductor_status_format(&st, buf, sizeof(buf), &len) == 0) {
		hako_channel_write(n->status, buf, len + 1);
	}
}

int hakoi_node_stats(hako_conductor_node_t *n, hako_conductor_peer_stats_t *out, int max,
                     int *count, int exact)
{
	if (n == NULL || (out == NULL && max > 0)) {
		return HAKO_EINVAL;
	}
	hako_time_t now = hako_now_usec();
	pthread_mutex_lock(&n->stats_lock);
	for (size_t i = 0; i < n->npeers && (int)i < max; i++) {
		struct hakoi_peer *p = &n->peers[i];
		hako_conductor_peer_stats_t *o = &out[i];
		memset(o, 0, sizeof(*o));
		snprintf(o->node_id, sizeof(o->node_id), "%s", p->id);
		o->joined = p->joined;
		o->connected =
		    p->joined && now - p->last_heard <= (hako_time_t)n->cfg.peer_timeout_ms * 1000;
		o->known_time = p->known_time;
		o->last_heard_usec = p->last_heard > 0 ? now - p->last_heard : -1;
		o->samples = p->drift.total;
		hako_time_t unused;
		hakoi_ring_p50_p95(&p->drift, exact, &o->drift_p50_usec, &o->drift_p95_usec);
		o->drift_max_usec = p->drift.max;
		hakoi_ring_p50_p95(&p->age, exact, &o->age_p50_usec, &unused);
		o->age_max_usec = p->age.max;
		o->messages_in = p->messages_in;
		o->messages_out = p->messages_out;
		o->garbage = p->garbage;
		o->restarts = p->restarts;
	}
	pthread_mutex_unlock(&n->stats_lock);
	if (count != NULL) {
		*count = (int)n->npeers;
	}
	return 0;
}

int hako_conductor_node_stats(hako_conductor_node_t *n, hako_conductor_peer_stats_t *out, int max,
                              int *count)
{
	return hakoi_node_stats(n, out, max, count, 1);
}

int hako_conductor_node_trace(hako_conductor_node_t *n, const char *path)
{
	if (n == NULL || path == NULL) {
		return HAKO_EINVAL;
	}
	FILE *f = fopen(path, "w");
	if (f == NULL) {
		return HAKO_EIO;
	}
	fprintf(f, "wall_ns,node,world_usec,peer,peer_world_usec,age_usec\n");
	n->trace = f; /* read by the main thread from its next message on */
	return 0;
}
