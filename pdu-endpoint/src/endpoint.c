/* The endpoint object: config + cache + comm, the name lookups, hako_endpoint_wait, statistics,
 * and the container of a node's endpoints. The comms live in comm_*.c behind ep_comm.h. */
#define _POSIX_C_SOURCE 200809L

#include "hako/endpoint.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ep_comm.h"
#include "ep_loop.h"
#include "hako/log.h"

struct hako_endpoint {
	hako_endpoint_config_t *cfg;
	hako_cache_t *cache;
	const hakoi_comm_t *ops; /* NULL: comm-less */
	void *comm;
	hakoi_loop_t *loop; /* a network comm's I/O loop: its set's, or its own (own_loop) */
	int own_loop;
	hako_domain_t *dom;
	hakoi_ep_counters_t ctr;
	atomic_int running;

	/* hako_endpoint_wait: arrivals counts deliveries; empty_seen is the count recv_next saw
	 * before finding nothing. */
	_Atomic uint64_t arrivals;
	uint64_t empty_seen;
	atomic_int waiters;
	pthread_mutex_t wait_lock;
	pthread_cond_t wait_cond;

	/* Loans of comms without their own (heap buffers sent by commit). */
	pthread_mutex_t loan_lock;
	struct ep_loan *loans;
};

typedef struct ep_loan {
	hako_pdu_key_t key;
	void *buf;
	size_t size;
	struct ep_loan *next;
} ep_loan_t;

static void arrived(hako_endpoint_t *ep)
{
	atomic_fetch_add_explicit(&ep->arrivals, 1, memory_order_release);
	if (atomic_load_explicit(&ep->waiters, memory_order_seq_cst) > 0) {
		pthread_mutex_lock(&ep->wait_lock);
		pthread_cond_broadcast(&ep->wait_cond);
		pthread_mutex_unlock(&ep->wait_lock);
	}
}

static void deliver(void *user, const hako_pdu_key_t *key, const void *data, size_t len)
{
	hako_endpoint_t *ep = user;
	hakoi_count(&ep->ctr.frames_in, 1);
	hakoi_count(&ep->ctr.bytes_in, len);
	/* The cache stores it (unless only subscribers want it: hako_endpoint_set_store) and then
	 * calls the subscribers. */
	if (hako_cache_write(ep->cache, key, data, len) != 0) {
		HAKO_WARN(
		    "endpoint '%s': could not store a PDU of %s/%d (%zu bytes): out of memory",
		    ep->cfg->name, key->robot, (int)key->channel_id, len);
		return;
	}
	arrived(ep);
}

static int deliver_fill(void *user, const hako_pdu_key_t *key, size_t cap, hako_cache_fill_fn fill,
                        void *arg, size_t *len)
{
	hako_endpoint_t *ep = user;
	int r = hako_cache_write_fill(ep->cache, key, cap, fill, arg, len);
	if (r == HAKO_ENOMEM) {
		HAKO_WARN(
		    "endpoint '%s': could not store a PDU of %s/%d (%zu bytes): out of memory",
		    ep->cfg->name, key->robot, (int)key->channel_id, cap);
	}
	if (r != 0) {
		return r;
	}
	hakoi_count(&ep->ctr.frames_in, 1);
	hakoi_count(&ep->ctr.bytes_in, *len);
	arrived(ep);
	return 0;
}

/* shared: the loop of the endpoint's set (made by the first endpoint that needs it), or NULL:
 * an endpoint on its own makes its own loop. */
static int ep_open(hako_endpoint_config_t *cfg, hakoi_loop_t **shared, hako_endpoint_t **out,
                   hako_error_t *err)
{
	if (out != NULL) {
		*out = NULL;
	}
	if (cfg == NULL || out == NULL) {
		hako_endpoint_config_free(cfg);
		return hako_error_set(err, HAKO_EINVAL, "", 0, 0,
		                      "hako_endpoint_open: NULL argument");
	}
	hako_endpoint_t *ep = calloc(1, sizeof(*ep));
	if (ep == NULL) {
		hako_endpoint_config_free(cfg);
		return hako_error_set(err, HAKO_ENOMEM, cfg->path, 0, 0, "out of memory");
	}
	ep->cfg = cfg;
	pthread_mutex_init(&ep->wait_lock, NULL);
	pthread_mutex_init(&ep->loan_lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&ep->wait_cond, &ca);
	pthread_condattr_destroy(&ca);

	int r = hako_cache_create(cfg->cache.mode, cfg->cache.depth, &ep->cache);
	if (r != 0) {
		hako_endpoint_close(ep);
		return hako_error_set(err, r, cfg->cache.path, 0, 0, "cannot create the cache: %s",
		                      hako_strerror(r));
	}
	if (cfg->comm != NULL) {
		ep->ops = hakoi_comm_of(cfg->comm->protocol);
		if (ep->ops == NULL) {
			hako_endpoint_close(ep);
			return hako_error_set(err, HAKO_ENOTSUP, cfg->path, 0, 0,
			                      "comm protocol %d is not supported",
			                      (int)cfg->comm->protocol);
		}
		if (ep->ops->uses_loop) {
			hakoi_loop_t **lp = shared != NULL ? shared : &ep->loop;
			ep->own_loop = shared == NULL;
			if (*lp == NULL && (r = hakoi_loop_create(lp)) != 0) {
				hako_endpoint_close(ep);
				return hako_error_set(err, r, cfg->path, 0, 0,
				                      "cannot make the I/O loop: %s",
				                      hako_strerror(r));
			}
			ep->loop = *lp;
		}
		hakoi_comm_ctx_t ctx = {
		    .ep_name = cfg->name,
		    .cfg = cfg->comm,
		    .pdudef = cfg->pdudef,
		    .ctr = &ep->ctr,
		    .deliver = deliver,
		    .deliver_fill = deliver_fill,
		    .ep = ep,
		    .loop = ep->loop,
		};
		r = ep->ops->open(&ctx, &ep->comm, err);
		if (r != 0) {
			ep->ops = NULL; /* nothing to close */
			hako_endpoint_close(ep);
			return r;
		}
	}
	*out = ep;
	return 0;
}

int hako_endpoint_open_config(hako_endpoint_config_t *cfg, hako_endpoint_t **out, hako_error_t *err)
{
	return ep_open(cfg, NULL, out, err);
}

int hako_endpoint_open(const char *config_path, hako_endpoint_t **out, hako_error_t *err)
{
	if (out != NULL) {
		*out = NULL;
	}
	hako_endpoint_config_t *cfg = NULL;
	int r = hako_endpoint_config_load(config_path, &cfg, err);
	if (r != 0) {
		return r;
	}
	return hako_endpoint_open_config(cfg, out, err);
}

void hako_endpoint_close(hako_endpoint_t *ep)
{
	if (ep == NULL) {
		return;
	}
	hako_endpoint_stop(ep);
	if (ep->ops != NULL && ep->comm != NULL) {
		ep->ops->close(ep->comm);
	}
	if (ep->own_loop) {
		hakoi_loop_destroy(ep->loop);
	}
	hako_cache_destroy(ep->cache);
	while (ep->loans != NULL) {
		ep_loan_t *l = ep->loans;
		ep->loans = l->next;
		free(l->buf);
		free(l);
	}
	pthread_mutex_destroy(&ep->loan_lock);
	pthread_cond_destroy(&ep->wait_cond);
	pthread_mutex_destroy(&ep->wait_lock);
	hako_endpoint_config_free(ep->cfg);
	free(ep);
}

int hako_endpoint_set_domain(hako_endpoint_t *ep, hako_domain_t *dom)
{
	if (ep == NULL) {
		return HAKO_EINVAL;
	}
	if (atomic_load(&ep->running)) {
		return HAKO_ESTATE;
	}
	ep->dom = dom;
	return 0;
}

int hako_endpoint_start(hako_endpoint_t *ep, hako_error_t *err)
{
	if (ep == NULL) {
		return hako_error_set(err, HAKO_EINVAL, "", 0, 0,
		                      "hako_endpoint_start: NULL endpoint");
	}
	if (atomic_load(&ep->running)) {
		return hako_error_set(err, HAKO_ESTATE, ep->cfg->path, 0, 0,
		                      "endpoint '%s' is already running", ep->cfg->name);
	}
	if (ep->ops != NULL) {
		int r = ep->ops->start(ep->comm, ep->dom, err);
		if (r != 0) {
			return r;
		}
	}
	atomic_store(&ep->running, 1);
	return 0;
}

int hako_endpoint_stop(hako_endpoint_t *ep)
{
	if (ep == NULL) {
		return HAKO_EINVAL;
	}
	if (!atomic_exchange(&ep->running, 0)) {
		return 0;
	}
	if (ep->ops != NULL) {
		ep->ops->stop(ep->comm);
	}
	return 0;
}

int hako_endpoint_is_running(const hako_endpoint_t *ep)
{
	return ep != NULL && atomic_load(&((hako_endpoint_t *)ep)->running);
}

const char *hako_endpoint_name(const hako_endpoint_t *ep)
{
	return ep != NULL ? ep->cfg->name : "";
}

const hako_endpoint_config_t *hako_endpoint_config(const hako_endpoint_t *ep)
{
	return ep != NULL ? ep->cfg : NULL;
}

uint16_t hako_endpoint_local_port(const hako_endpoint_t *ep)
{
	if (ep == NULL || ep->ops == NULL || ep->ops->local_port == NULL) {
		return 0;
	}
	return ep->ops->local_port(ep->comm);
}

/* ---- names ---- */

int hako_endpoint_resolve(const hako_endpoint_t *ep, const char *robot, const char *pdu_name,
                          hako_pdu_key_t *key, size_t *size)
{
	if (ep == NULL || robot == NULL || pdu_name == NULL) {
		return HAKO_EINVAL;
	}
	if (ep->cfg->pdudef == NULL) {
		return HAKO_ENOENT;
	}
	const hako_pdudef_pdu_t *p = hako_pdudef_find(ep->cfg->pdudef, robot, pdu_name);
	if (p == NULL) {
		return HAKO_ENOENT;
	}
	if (strlen(robot) >= sizeof(key->robot)) {
		return HAKO_ENAMETOOLONG;
	}
	if (key != NULL) {
		memset(key, 0, sizeof(*key));
		strcpy(key->robot, robot);
		key->channel_id = p->channel_id;
	}
	if (size != NULL) {
		*size = p->pdu_size;
	}
	return 0;
}

const char *hako_endpoint_pdu_name(const hako_endpoint_t *ep, const hako_pdu_key_t *key)
{
	if (ep == NULL || key == NULL || ep->cfg->pdudef == NULL) {
		return NULL;
	}
	const hako_pdudef_pdu_t *p =
	    hako_pdudef_find_channel(ep->cfg->pdudef, key->robot, key->channel_id);
	return p != NULL ? p->name : NULL;
}

/* ---- data ---- */

static int key_ok(const hako_pdu_key_t *key)
{
	return key != NULL && memchr(key->robot, '\0', sizeof(key->robot)) != NULL &&
	       key->robot[0] != '\0';
}

int hako_endpoint_send(hako_endpoint_t *ep, const hako_pdu_key_t *key, const void *data, size_t len)
{
	if (ep == NULL || !key_ok(key) || (data == NULL && len > 0)) {
		return HAKO_EINVAL;
	}
	if (ep->ops == NULL) {
		/* In-process bus: into our own cache. */
		deliver(ep, key, data, len);
		return 0;
	}
	if (!atomic_load_explicit(&ep->running, memory_order_acquire)) {
		return HAKO_ESTATE;
	}
	if (ep->cfg->comm->direction == HAKO_COMM_IN) {
		return HAKO_EPERM;
	}
	return ep->ops->send(ep->comm, key, data, len);
}

/* What send checks before handing a PDU to the comm. */
static int send_state(hako_endpoint_t *ep)
{
	if (ep->ops == NULL) {
		return 0;
	}
	if (!atomic_load_explicit(&ep->running, memory_order_acquire)) {
		return HAKO_ESTATE;
	}
	return ep->cfg->comm->direction == HAKO_COMM_IN ? HAKO_EPERM : 0;
}

/* Unlink and return the heap loan of key, NULL if none. */
static ep_loan_t *take_loan(hako_endpoint_t *ep, const hako_pdu_key_t *key)
{
	pthread_mutex_lock(&ep->loan_lock);
	ep_loan_t **l = &ep->loans;
	while (*l != NULL && !((*l)->key.channel_id == key->channel_id &&
	                       strcmp((*l)->key.robot, key->robot) == 0)) {
		l = &(*l)->next;
	}
	ep_loan_t *found = *l;
	if (found != NULL) {
		*l = found->next;
	}
	pthread_mutex_unlock(&ep->loan_lock);
	return found;
}

int hako_endpoint_loan(hako_endpoint_t *ep, const hako_pdu_key_t *key, size_t size, void **buf)
{
	if (buf != NULL) {
		*buf = NULL;
	}
	if (ep == NULL || !key_ok(key) || buf == NULL) {
		return HAKO_EINVAL;
	}
	int r = send_state(ep);
	if (r != 0) {
		return r;
	}
	if (ep->ops != NULL && ep->ops->loan != NULL) {
		return ep->ops->loan(ep->comm, key, size, buf);
	}
	ep_loan_t *l = calloc(1, sizeof(*l));
	if (l == NULL || (l->buf = malloc(size > 0 ? size : 1)) == NULL) {
		free(l);
		return HAKO_ENOMEM;
	}
	l->key = *key;
	l->size = size;
	ep_loan_t *old = take_loan(ep, key);
	pthread_mutex_lock(&ep->loan_lock);
	if (old != NULL) { /* put it back: one loan per key */
		old->next = ep->loans;
		ep->loans = old;
		pthread_mutex_unlock(&ep->loan_lock);
		free(l->buf);
		free(l);
		return HAKO_EBUSY;
	}
	l->next = ep->loans;
	ep->loans = l;
	pthread_mutex_unlock(&ep->loan_lock);
	*buf = l->buf;
	return 0;
}

int hako_endpoint_commit(hako_endpoint_t *ep, const hako_pdu_key_t *key, size_t len)
{
	if (ep == NULL || !key_ok(key)) {
		return HAKO_EINVAL;
	}
	if (ep->ops != NULL && ep->ops->commit != NULL) {
		return ep->ops->commit(ep->comm, key, len);
	}
	ep_loan_t *l = take_loan(ep, key);
	if (l == NULL) {
		return HAKO_ESTATE;
	}
	int r = 0;
	if (len > l->size) {
		pthread_mutex_lock(&ep->loan_lock); /* stays lent: commit again or cancel */
		l->next = ep->loans;
		ep->loans = l;
		pthread_mutex_unlock(&ep->loan_lock);
		return HAKO_ETOOBIG;
	}
	if ((r = send_state(ep)) == 0) {
		if (ep->ops == NULL) {
			deliver(ep, key, l->buf, len);
		} else {
			r = ep->ops->send(ep->comm, key, l->buf, len);
		}
	}
	free(l->buf);
	free(l);
	return r;
}

int hako_endpoint_cancel(hako_endpoint_t *ep, const hako_pdu_key_t *key)
{
	if (ep == NULL || !key_ok(key)) {
		return HAKO_EINVAL;
	}
	if (ep->ops != NULL && ep->ops->cancel != NULL) {
		return ep->ops->cancel(ep->comm, key);
	}
	ep_loan_t *l = take_loan(ep, key);
	if (l == NULL) {
		return HAKO_ESTATE;
	}
	free(l->buf);
	free(l);
	return 0;
}

int hako_endpoint_send_by_name(hako_endpoint_t *ep, const char *robot, const char *pdu_name,
                               const void *data, size_t len)
{
	hako_pdu_key_t key;
	int r = hako_endpoint_resolve(ep, robot, pdu_name, &key, NULL);
	return r != 0 ? r : hako_endpoint_send(ep, &key, data, len);
}

int hako_endpoint_recv(hako_endpoint_t *ep, const hako_pdu_key_t *key, void *buf, size_t cap,
                       size_t *len)
{
	if (ep == NULL || !key_ok(key)) {
		return HAKO_EINVAL;
	}
	int r = hako_cache_read(ep->cache, key, buf, cap, len);
	if (r == HAKO_EAGAIN && ep->ops != NULL && ep->ops->recv_direct != NULL &&
	    atomic_load(&ep->running)) {
		r = ep->ops->recv_direct(ep->comm, key, buf, cap, len);
	}
	return r;
}

int hako_endpoint_read_direct(hako_endpoint_t *ep, const hako_pdu_key_t *key, void *buf, size_t cap,
                              size_t *len)
{
	if (ep == NULL || !key_ok(key) || len == NULL || (buf == NULL && cap > 0)) {
		return HAKO_EINVAL;
	}
	*len = 0;
	if (ep->ops == NULL || ep->ops->recv_direct == NULL) {
		return HAKO_ENOTSUP;
	}
	if (!atomic_load(&ep->running)) {
		return HAKO_ESTATE;
	}
	return ep->ops->recv_direct(ep->comm, key, buf, cap, len);
}

int hako_endpoint_recv_by_name(hako_endpoint_t *ep, const char *robot, const char *pdu_name,
                               void *buf, size_t cap, size_t *len)
{
	hako_pdu_key_t key;
	int r = hako_endpoint_resolve(ep, robot, pdu_name, &key, NULL);
	return r != 0 ? r : hako_endpoint_recv(ep, &key, buf, cap, len);
}

int hako_endpoint_recv_next(hako_endpoint_t *ep, hako_pdu_key_t *key, void *buf, size_t cap,
                            size_t *len)
{
	if (ep == NULL || key == NULL) {
		return HAKO_EINVAL;
	}
	uint64_t seen = atomic_load_explicit(&ep->arrivals, memory_order_acquire);
	int r = hako_cache_read_next(ep->cache, key, buf, cap, len);
	if (r == HAKO_EAGAIN) {
		ep->empty_seen = seen;
	}
	return r;
}

int hako_endpoint_wait(hako_endpoint_t *ep, hako_time_t timeout_usec)
{
	if (ep == NULL) {
		return HAKO_EINVAL;
	}
	uint64_t seen = ep->empty_seen;
	if (atomic_load_explicit(&ep->arrivals, memory_order_acquire) != seen) {
		return 0;
	}
	struct timespec dl;
	clock_gettime(CLOCK_MONOTONIC, &dl);
	if (timeout_usec >= 0) {
		dl.tv_sec += (time_t)(timeout_usec / 1000000);
		dl.tv_nsec += (long)(timeout_usec % 1000000) * 1000;
		if (dl.tv_nsec >= 1000000000L) {
			dl.tv_sec++;
			dl.tv_nsec -= 1000000000L;
		}
	}
	int r = 0;
	pthread_mutex_lock(&ep->wait_lock);
	atomic_fetch_add(&ep->waiters, 1);
	while (atomic_load(&ep->arrivals) == seen) {
		int w = timeout_usec >= 0
		            ? pthread_cond_timedwait(&ep->wait_cond, &ep->wait_lock, &dl)
		            : pthread_cond_wait(&ep->wait_cond, &ep->wait_lock);
		if (w == ETIMEDOUT) {
			r = atomic_load(&ep->arrivals) == seen ? HAKO_ETIMEDOUT : 0;
			break;
		}
	}
	atomic_fetch_sub(&ep->waiters, 1);
	pthread_mutex_unlock(&ep->wait_lock);
	return r;
}

/* The cache holds the subscriptions: it decides what to store by who subscribed and who read,
 * and calls the subscribers after its write. */
int hako_endpoint_subscribe(hako_endpoint_t *ep, const hako_pdu_key_t *key, hako_cache_cb_t cb,
                            void *user, hako_endpoint_sub_t **sub)
{
	if (sub != NULL) {
		*sub = NULL;
	}
	if (ep == NULL || (key != NULL && !key_ok(key)) || cb == NULL) {
		return HAKO_EINVAL;
	}
	return hako_cache_subscribe(ep->cache, key, cb, user, sub);
}

int hako_endpoint_subscribe_by_name(hako_endpoint_t *ep, const char *robot, const char *pdu_name,
                                    hako_cache_cb_t cb, void *user, hako_endpoint_sub_t **sub)
{
	if (sub != NULL) {
		*sub = NULL;
	}
	hako_pdu_key_t key;
	int r = hako_endpoint_resolve(ep, robot, pdu_name, &key, NULL);
	return r != 0 ? r : hako_endpoint_subscribe(ep, &key, cb, user, sub);
}

void hako_endpoint_unsubscribe(hako_endpoint_sub_t *sub)
{
	hako_cache_unsubscribe(sub);
}

int hako_endpoint_set_store(hako_endpoint_t *ep, hako_cache_store_t store)
{
	return ep != NULL ? hako_cache_set_store(ep->cache, store) : HAKO_EINVAL;
}

int hako_endpoint_process_recv_events(hako_endpoint_t *ep)
{
	if (ep == NULL) {
		return HAKO_EINVAL;
	}
	if (ep->ops == NULL || ep->ops->process == NULL || !atomic_load(&ep->running)) {
		return 0;
	}
	return ep->ops->process(ep->comm);
}

int hako_endpoint_drain(hako_endpoint_t *ep)
{
	if (ep == NULL) {
		return HAKO_EINVAL;
	}
	if (ep->ops == NULL || ep->ops->drain == NULL || !atomic_load(&ep->running)) {
		return 0;
	}
	return ep->ops->drain(ep->comm);
}

void hako_endpoint_get_stats(const hako_endpoint_t *ep, hako_endpoint_stats_t *st)
{
	if (st == NULL) {
		return;
	}
	memset(st, 0, sizeof(*st));
	if (ep == NULL) {
		return;
	}
	hakoi_ep_counters_t *c = &((hako_endpoint_t *)ep)->ctr;
	st->frames_in = atomic_load_explicit(&c->frames_in, memory_order_relaxed);
	st->bytes_in = atomic_load_explicit(&c->bytes_in, memory_order_relaxed);
	st->frames_out = atomic_load_explicit(&c->frames_out, memory_order_relaxed);
	st->bytes_out = atomic_load_explicit(&c->bytes_out, memory_order_relaxed);
	st->send_dropped = atomic_load_explicit(&c->send_dropped, memory_order_relaxed);
	st->recv_ignored = atomic_load_explicit(&c->recv_ignored, memory_order_relaxed);
	st->rejected = atomic_load_explicit(&c->rejected, memory_order_relaxed);
	st->accepted = atomic_load_explicit(&c->accepted, memory_order_relaxed);
	st->connects = atomic_load_explicit(&c->connects, memory_order_relaxed);
	st->reconnects = atomic_load_explicit(&c->reconnects, memory_order_relaxed);
	st->disconnects = atomic_load_explicit(&c->disconnects, memory_order_relaxed);
	st->peers = atomic_load_explicit(&c->peers, memory_order_relaxed);
	hako_cache_stats_t cs;
	hako_cache_get_stats(ep->cache, &cs);
	st->recv_dropped = cs.dropped;
}

/* ---- container ---- */

struct hako_endpoint_set {
	char node[HAKO_ENDPOINT_NAME_MAX];
	size_t count;
	hako_endpoint_t **eps;
	hakoi_loop_t *loop; /* serves the network comms of all its endpoints (NULL: none has one) */
};

int hako_endpoint_set_open(const char *container_path, const char *node_id,
                           hako_endpoint_set_t **out, hako_error_t *err)
{
	if (out != NULL) {
		*out = NULL;
	}
	if (out == NULL) {
		return hako_error_set(err, HAKO_EINVAL, "", 0, 0,
		                      "hako_endpoint_set_open: NULL out");
	}
	hako_endpoint_container_t *c = NULL;
	int r = hako_endpoint_container_load(container_path, node_id, &c, err);
	if (r != 0) {
		return r;
	}
	r = hako_endpoint_set_open_container(c, out, err);
	hako_endpoint_container_free(c);
	return r;
}

int hako_endpoint_set_open_container(hako_endpoint_container_t *c, hako_endpoint_set_t **out,
                                     hako_error_t *err)
{
	if (out != NULL) {
		*out = NULL;
	}
	if (c == NULL || out == NULL) {
		return hako_error_set(err, HAKO_EINVAL, "", 0, 0,
		                      "hako_endpoint_set_open_container: NULL argument");
	}
	hako_endpoint_set_t *s = calloc(1, sizeof(*s));
	if (s == NULL || (c->count > 0 && (s->eps = calloc(c->count, sizeof(*s->eps))) == NULL)) {
		free(s);
		return hako_error_set(err, HAKO_ENOMEM, c->path, 0, 0, "out of memory");
	}
	snprintf(s->node, sizeof(s->node), "%s", c->node_id);
	for (size_t i = 0; i < c->count; i++) {
		hako_endpoint_config_t *cfg = c->entries[i].config;
		if (cfg == NULL) { /* taken by an earlier open */
			hako_endpoint_set_close(s);
			return hako_error_set(err, HAKO_EINVAL, c->path, 0, 0,
			                      "endpoint '%s': its config was already taken by "
			                      "another endpoint set",
			                      c->entries[i].id);
		}
		c->entries[i].config = NULL; /* the endpoint takes it */
		/* The endpoint's name is its id in the container. */
		snprintf(cfg->name, sizeof(cfg->name), "%s", c->entries[i].id);
		int r = ep_open(cfg, &s->loop, &s->eps[i], err);
		if (r != 0) {
			hako_endpoint_set_close(s);
			return r;
		}
		s->count = i + 1;
	}
	*out = s;
	return 0;
}

int hako_endpoint_set_start(hako_endpoint_set_t *s, hako_error_t *err)
{
	if (s == NULL) {
		return hako_error_set(err, HAKO_EINVAL, "", 0, 0,
		                      "hako_endpoint_set_start: NULL set");
	}
	for (size_t i = 0; i < s->count; i++) {
		int r = hako_endpoint_start(s->eps[i], err);
		if (r != 0) {
			while (i-- > 0) {
				hako_endpoint_stop(s->eps[i]);
			}
			return r;
		}
	}
	return 0;
}

void hako_endpoint_set_stop(hako_endpoint_set_t *s)
{
	for (size_t i = 0; s != NULL && i < s->count; i++) {
		hako_endpoint_stop(s->eps[i]);
	}
}

void hako_endpoint_set_close(hako_endpoint_set_t *s)
{
	if (s == NULL) {
		return;
	}
	for (size_t i = 0; i < s->count; i++) {
		hako_endpoint_close(s->eps[i]);
	}
	hakoi_loop_destroy(s->loop);
	free(s->eps);
	free(s);
}

hako_endpoint_t *hako_endpoint_set_get(const hako_endpoint_set_t *s, const char *id)
{
	for (size_t i = 0; s != NULL && id != NULL && i < s->count; i++) {
		if (strcmp(s->eps[i]->cfg->name, id) == 0) {
			return s->eps[i];
		}
	}
	return NULL;
}

size_t hako_endpoint_set_count(const hako_endpoint_set_t *s)
{
	return s != NULL ? s->count : 0;
}

hako_endpoint_t *hako_endpoint_set_at(const hako_endpoint_set_t *s, size_t i)
{
	return s != NULL && i < s->count ? s->eps[i] : NULL;
}

const char *hako_endpoint_set_node(const hako_endpoint_set_t *s)
{
	return s != NULL ? s->node : "";
}

int hako_endpoint_set_set_domain(hako_endpoint_set_t *s, hako_domain_t *dom)
{
	if (s == NULL) {
		return HAKO_EINVAL;
	}
	for (size_t i = 0; i < s->count; i++) {
		int r = hako_endpoint_set_domain(s->eps[i], dom);
		if (r != 0) {
			return r;
		}
	}
	return 0;
}
