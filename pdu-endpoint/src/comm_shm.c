/* The shm comm: PDUs go straight into the channels of a hako domain (no framing), keyed by
 * (robot, channel id) with the size of the pdudef, like Hakoniwa's comm_shm.
 *
 * Channels keep only the latest write: shm is state sharing, not a queue. Several writes
 * between two looks at a channel deliver only the last one; the skipped writes are visible only
 * as a jump of the channel's sequence number and are not counted anywhere (the endpoint has no
 * counter for "overwritten before it was read").
 *
 * Receiving (PDUs listed with notify_on_recv, direction in / inout):
 *  - callback: one watcher thread per comm sleeps on a core wait-set (hako_waitset_*) that
 *    watches every notified PDU's channel, and delivers every change it is told of, read
 *    straight into the endpoint's cache (no staging copy). A write costs its writer no syscall
 *    while the watcher is awake, one futex wake-up when it sleeps; the thread count does not
 *    grow with the PDU list. The watcher also looks at every channel each WATCH_TICK_USEC
 *    (a reset followed by as many writes leaves a sequence number unchanged). When the domain
 *    has no wait-set left (HAKO_WAITSET_MAX), it falls back to one thread per notified PDU,
 *    each in hako_channel_wait (which spins HAKO_SPIN_USEC first if that is set).
 *  - poll: no threads; hako_endpoint_process_recv_events checks the sequence numbers and
 *    delivers what changed.
 *  - drain (hako_endpoint_drain, either mode): the caller's thread does what the watcher would,
 *    now: every notified channel written since it was last read is read and delivered. A
 *    watcher can lag behind the writers (the scheduler decides when it runs), and a domain
 *    reset zeroes the channels: a bridge drains its sources before it acknowledges a stop or a
 *    reset, so that nothing written before them is lost.
 * Each notified PDU has a lock, held while it is checked and delivered (by the watcher, a poll
 * or a drain): a write is delivered once, and a drain that returns has delivered the last
 * write of every channel made before it began (or the watcher did, before it).
 * Every change is delivered, also the ones this endpoint (or this process) wrote itself: an
 * endpoint that both writes a PDU and is notified on it receives its own writes.
 * A domain reset restarts sequence numbers from 0; the watchers notice it (reset count) and do
 * not deliver the zeroed content.
 *
 * Sending accepts any PDU of the pdudef, not only the listed ones: its channel is created on
 * first use and cached. Lookups are lock-free: the key table is built at open and never
 * changes; only the channel handles in it are set (atomically) after start.
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ep_comm.h"
#include "hako/log.h"

#define WATCH_TICK_USEC 100000 /* how long stop may wait for a watcher */
/* Tests only: the watcher sleeps this long (us, at most 1 s) after each wake-up before it reads,
 * as a watcher the scheduler left behind would. Unset (the default): no delay. */
#define WATCH_DELAY_ENV "HAKO_TEST_SHM_WATCH_DELAY_USEC"

struct shm_comm;

typedef struct shm_pdu {
	hako_pdu_key_t key;
	const char *name; /* the pdudef's */
	uint32_t size;
	int listed; /* in the comm's robots: its channel is created at start */
	int notify; /* listed with notify_on_recv and the direction receives */
	_Atomic(hako_channel_t *) ch;
	atomic_int loaned; /* a hako_endpoint_loan of this PDU is open (one at a time) */
	/* Watcher / poll / drain state (notify only), under lock. seen is also read without it:
	 * the watcher's wait needs only a recent value (a stale one returns at once, and the check
	 * under the lock decides). */
	pthread_mutex_t lock;
	_Atomic uint64_t seen;
	uint32_t seen_resets;
	uint8_t *buf; /* size bytes: only where the endpoint cannot fill its cache directly */
	pthread_t thread;
	int thread_started;
	struct shm_comm *comm;
} shm_pdu_t;

typedef struct shm_comm {
	hakoi_comm_ctx_t ctx;
	const hako_comm_shm_options_t *opt;
	size_t count; /* every PDU of the pdudef */
	shm_pdu_t *pdus;
	uint32_t mask;   /* slots - 1 */
	uint32_t *slots; /* index + 1 into pdus, 0 = empty */
	size_t notify_count;
	shm_pdu_t **notify;
	hako_domain_t *dom;
	int own_dom; /* opened by start: closed by stop */
	int started;
	atomic_int stopping;
	hako_time_t spin_usec;  /* watchers: HAKO_SPIN_USEC, else 0 */
	hako_time_t delay_usec; /* watchers: WATCH_DELAY_ENV, else 0 */
	hako_waitset_t *ws;     /* callback mode: the one watcher's; NULL = a thread per PDU */
	pthread_t thread;
	int thread_started;
} shm_comm_t;

static uint32_t key_hash(const char *robot, int32_t id)
{
	uint32_t h = 2166136261u; /* FNV-1a */
	for (const unsigned char *p = (const unsigned char *)robot; *p != '\0'; p++) {
		h = (h ^ *p) * 16777619u;
	}
	h = (h ^ (uint32_t)id) * 16777619u;
	return h ^ (h >> 15);
}

static shm_pdu_t *find(const shm_comm_t *c, const char *robot, int32_t id)
{
	for (uint32_t i = key_hash(robot, id) & c->mask;; i = (i + 1) & c->mask) {
		uint32_t e = c->slots[i];
		if (e == 0) {
			return NULL;
		}
		shm_pdu_t *p = &c->pdus[e - 1];
		if (p->key.channel_id == id && strcmp(p->key.robot, robot) == 0) {
			return p;
		}
	}
}

static void shm_close(void *impl);

static int build_table(shm_comm_t *c, hako_error_t *err)
{
	const hako_pdudef_t *def = c->ctx.pdudef;
	for (size_t r = 0; r < def->robot_count; r++) {
		c->count += def->robots[r].pdu_count;
	}
	uint32_t slots = 16;
	while (slots < 2 * c->count) {
		slots *= 2;
	}
	c->mask = slots - 1;
	c->slots = calloc(slots, sizeof(*c->slots));
	c->pdus = calloc(c->count > 0 ? c->count : 1, sizeof(*c->pdus));
	if (c->slots == NULL || c->pdus == NULL) {
		return hako_error_set(err, HAKO_ENOMEM, c->ctx.cfg->path, 0, 0, "out of memory");
	}
	size_t n = 0;
	for (size_t r = 0; r < def->robot_count; r++) {
		const hako_pdudef_robot_t *robot = &def->robots[r];
		if (strlen(robot->name) >= sizeof(c->pdus[0].key.robot)) {
			return hako_error_set(err, HAKO_ENAMETOOLONG, def->path, 0, 0,
			                      "robot name '%s' is too long", robot->name);
		}
		for (size_t i = 0; i < robot->pdu_count; i++) {
			const hako_pdudef_pdu_t *d = &robot->pdus[i];
			if (find(c, robot->name, d->channel_id) != NULL) {
				continue; /* a duplicate: the first one wins, as hako_pdudef_find */
			}
			shm_pdu_t *p = &c->pdus[n];
			strcpy(p->key.robot, robot->name);
			p->key.channel_id = d->channel_id;
			p->name = d->name;
			p->size = d->pdu_size;
			p->comm = c;
			atomic_init(&p->ch, NULL);
			atomic_init(&p->loaned, 0);
			uint32_t s = key_hash(robot->name, d->channel_id) & c->mask;
			while (c->slots[s] != 0) {
				s = (s + 1) & c->mask;
			}
			c->slots[s] = (uint32_t)++n;
		}
	}
	c->count = n;
	return 0;
}

static int mark_listed(shm_comm_t *c, hako_error_t *err)
{
	const hako_comm_config_t *cfg = c->ctx.cfg;
	int receives = cfg->direction != HAKO_COMM_OUT;
	for (size_t r = 0; r < c->opt->robot_count; r++) {
		const hako_comm_shm_robot_t *robot = &c->opt->robots[r];
		for (size_t i = 0; i < robot->pdu_count; i++) {
			const hako_comm_shm_pdu_t *d = &robot->pdus[i];
			shm_pdu_t *p = find(c, robot->name, d->channel_id);
			if (p == NULL) {
				return hako_error_set(err, HAKO_ECONFIG, cfg->path, 0, 0,
				                      "shm: PDU %s/%s (channel %d) is not in %s",
				                      robot->name, d->name, (int)d->channel_id,
				                      c->ctx.pdudef->path);
			}
			p->listed = 1;
			if (d->notify_on_recv && receives && !p->notify) {
				p->notify = 1;
				c->notify_count++;
			}
		}
	}
	c->notify = calloc(c->notify_count > 0 ? c->notify_count : 1, sizeof(*c->notify));
	if (c->notify == NULL) {
		return hako_error_set(err, HAKO_ENOMEM, cfg->path, 0, 0, "out of memory");
	}
	size_t k = 0;
	for (size_t i = 0; i < c->count; i++) {
		shm_pdu_t *p = &c->pdus[i];
		if (p->notify) {
			pthread_mutex_init(&p->lock, NULL);
			c->notify[k++] = p; /* shm_close destroys the locks of the notify list */
			if (c->ctx.deliver_fill == NULL && (p->buf = malloc(p->size)) == NULL) {
				return hako_error_set(err, HAKO_ENOMEM, cfg->path, 0, 0,
				                      "out of memory");
			}
		}
	}
	return 0;
}

static int shm_open(const hakoi_comm_ctx_t *ctx, void **impl, hako_error_t *err)
{
	*impl = NULL;
	if (ctx->pdudef == NULL) {
		return hako_error_set(err, HAKO_ECONFIG, ctx->cfg->path, 0, 0,
		                      "shm: the endpoint has no pdu_def_path (an shm comm needs "
		                      "the pdudef for channel ids and sizes)");
	}
	shm_comm_t *c = calloc(1, sizeof(*c));
	if (c == NULL) {
		return hako_error_set(err, HAKO_ENOMEM, ctx->cfg->path, 0, 0, "out of memory");
	}
	c->ctx = *ctx;
	c->opt = ctx->cfg->opts;
	int r = build_table(c, err);
	if (r == 0) {
		r = mark_listed(c, err);
	}
	if (r != 0) {
		shm_close(c);
		return r;
	}
	HAKO_DEBUG("endpoint '%s': shm comm (%s, asset '%s'): %zu PDUs in the pdudef, %zu notified",
	           ctx->ep_name, c->opt->impl == HAKO_SHM_POLL ? "poll" : "callback",
	           c->opt->asset_name, c->count, c->notify_count);
	*impl = c;
	return 0;
}

struct fill_arg {
	hako_channel_t *ch;
	uint64_t seq;
};

/* Read the channel straight into the endpoint's cache slot: hako_channel_read copies only a
 * complete write (it copies again if the writer lapped it), so the cache never holds a torn
 * PDU, and the watcher's staging copy is saved (a third of the receive cost at 1 MiB). */
static int fill_from_channel(void *arg, void *dst, size_t cap, size_t *len)
{
	struct fill_arg *f = arg;
	if (hako_channel_size(f->ch) > cap) {
		return HAKO_ETOOBIG; /* created elsewhere with another size: nothing copied */
	}
	int r = hako_channel_read(f->ch, dst, cap, len, &f->seq);
	if (r == 0 && f->seq == 0) {
		return HAKO_EAGAIN; /* reset since the last look: nothing written, nothing copied */
	}
	return r;
}

/* Deliver p's channel if it changed since the last look. Returns 1 if delivered. p->lock held. */
static int check_one(shm_pdu_t *p)
{
	shm_comm_t *c = p->comm;
	hako_channel_t *ch = atomic_load_explicit(&p->ch, memory_order_acquire);
	uint32_t resets = hako_domain_reset_count(c->dom);
	if (resets != p->seen_resets) {
		p->seen_resets = resets;
		atomic_store_explicit(&p->seen, 0, memory_order_relaxed);
	}
	if (hako_channel_seq(ch) == atomic_load_explicit(&p->seen, memory_order_relaxed)) {
		return 0;
	}
	size_t len = 0;
	if (c->ctx.deliver_fill != NULL) {
		struct fill_arg f = {ch, 0};
		int r =
		    c->ctx.deliver_fill(c->ctx.ep, &p->key, p->size, fill_from_channel, &f, &len);
		if (r == HAKO_EAGAIN) {
			atomic_store_explicit(&p->seen, 0, memory_order_relaxed);
			return 0;
		}
		if (r != 0) {
			/* Skip this write (else the watcher would spin on it). */
			HAKO_WARN("endpoint '%s': shm %s/%s: read failed: %s", c->ctx.ep_name,
			          p->key.robot, p->name, hako_strerror(r));
			atomic_store_explicit(&p->seen, f.seq != 0 ? f.seq : hako_channel_seq(ch),
			                      memory_order_relaxed);
			return 0;
		}
		atomic_store_explicit(&p->seen, f.seq, memory_order_relaxed);
		return 1;
	}
	uint64_t seq = 0;
	int r = hako_channel_read(ch, p->buf, p->size, &len, &seq);
	if (r != 0) {
		/* Only a channel larger than the pdudef says could do this (created elsewhere). */
		HAKO_WARN("endpoint '%s': shm %s/%s: read failed: %s", c->ctx.ep_name, p->key.robot,
		          p->name, hako_strerror(r));
		atomic_store_explicit(&p->seen, seq, memory_order_relaxed);
		return 0;
	}
	atomic_store_explicit(&p->seen, seq, memory_order_relaxed);
	if (seq == 0) {
		return 0; /* reset since the last look: nothing written */
	}
	c->ctx.deliver(c->ctx.ep, &p->key, p->buf, len);
	return 1;
}

/* check_one under p's lock: the watcher, a poll and a drain may look at p at once. */
static int deliver_changed(shm_pdu_t *p)
{
	pthread_mutex_lock(&p->lock);
	int n = check_one(p);
	pthread_mutex_unlock(&p->lock);
	return n;
}

static void watch_delay(const shm_comm_t *c)
{
	if (c->delay_usec > 0) {
		struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)c->delay_usec * 1000};
		nanosleep(&ts, NULL);
	}
}

static void *watch_main(void *arg)
{
	shm_pdu_t *p = arg;
	shm_comm_t *c = p->comm;
	hako_channel_t *ch = atomic_load(&p->ch);
	while (!atomic_load_explicit(&c->stopping, memory_order_acquire)) {
		uint64_t seen = atomic_load_explicit(&p->seen, memory_order_relaxed);
		int r = hako_channel_wait(ch, seen, c->spin_usec, WATCH_TICK_USEC);
		if (r != 0 && r != HAKO_ETIMEDOUT) {
			HAKO_WARN("endpoint '%s': shm %s/%s: wait failed: %s", c->ctx.ep_name,
			          p->key.robot, p->name, hako_strerror(r));
			return NULL;
		}
		if (r == 0) {
			watch_delay(c);
		}
		if (atomic_load_explicit(&c->stopping, memory_order_acquire)) {
			break;
		}
		/* Also after a timeout: a reset followed by as many writes leaves seq unchanged. */
		deliver_changed(p);
	}
	return NULL;
}

/* The comm's one watcher: every channel the wait-set reports, and all of them every tick. */
static void *watch_all(void *arg)
{
	shm_comm_t *c = arg;
	hako_waitset_event_t ev[64];
	while (!atomic_load_explicit(&c->stopping, memory_order_acquire)) {
		int n = 0;
		int r = hako_waitset_wait(c->ws, WATCH_TICK_USEC, ev, 64, &n);
		if (r == 0) {
			watch_delay(c);
		}
		if (atomic_load_explicit(&c->stopping, memory_order_acquire)) {
			break;
		}
		if (r == HAKO_ETIMEDOUT) {
			for (size_t i = 0; i < c->notify_count; i++) {
				deliver_changed(c->notify[i]);
			}
			continue;
		}
		if (r != 0) {
			HAKO_WARN("endpoint '%s': shm wait-set: %s", c->ctx.ep_name,
			          hako_strerror(r));
			return NULL;
		}
		for (int i = 0; i < n; i++) {
			deliver_changed(ev[i].user);
		}
	}
	return NULL;
}

/* Callback mode: the wait-set and its thread, or (no wait-set left in the domain) a thread
 * per notified PDU. 0 or HAKO_ENOMEM with err set. */
static int start_watchers(shm_comm_t *c, hako_error_t *err)
{
	const char *path = c->ctx.cfg->path;
	int r = hako_waitset_create(c->dom, &c->ws);
	for (size_t i = 0; r == 0 && i < c->notify_count; i++) {
		r = hako_waitset_add(c->ws, atomic_load(&c->notify[i]->ch), c->notify[i]);
	}
	if (r == 0) {
		/* What is there now is old: only later writes are delivered. */
		for (size_t i = 0; i < c->notify_count; i++) {
			atomic_store_explicit(&c->notify[i]->seen,
			                      hako_channel_seq(atomic_load(&c->notify[i]->ch)),
			                      memory_order_relaxed);
		}
		if ((r = pthread_create(&c->thread, NULL, watch_all, c)) != 0) {
			return hako_error_set(err, HAKO_ENOMEM, path, 0, 0,
			                      "endpoint '%s': cannot start the shm watcher: %s",
			                      c->ctx.ep_name, strerror(r));
		}
		c->thread_started = 1;
		return 0;
	}
	HAKO_WARN("endpoint '%s': no wait-set for the shm watcher (%s): one thread per notified "
	          "PDU instead",
	          c->ctx.ep_name, hako_strerror(r));
	hako_waitset_destroy(c->ws);
	c->ws = NULL;
	for (size_t i = 0; i < c->notify_count; i++) {
		shm_pdu_t *p = c->notify[i];
		if ((r = pthread_create(&p->thread, NULL, watch_main, p)) != 0) {
			return hako_error_set(
			    err, HAKO_ENOMEM, path, 0, 0,
			    "endpoint '%s': cannot start the watcher of shm %s/%s: %s",
			    c->ctx.ep_name, p->key.robot, p->name, strerror(r));
		}
		p->thread_started = 1;
	}
	return 0;
}

/* The channel of p in the running domain: created (create != 0) or looked up, then cached. */
static int attach(shm_comm_t *c, shm_pdu_t *p, int create, hako_channel_t **out)
{
	hako_channel_t *ch = NULL;
	int r = create ? hako_channel_create(c->dom, p->key.robot, p->key.channel_id, p->size, &ch)
	               : hako_channel_lookup(c->dom, p->key.robot, p->key.channel_id, &ch);
	if (r != 0) {
		return r;
	}
	/* Racing threads get the same handle from the core: storing it twice is harmless. */
	atomic_store_explicit(&p->ch, ch, memory_order_release);
	*out = ch;
	return 0;
}

static void shm_stop(void *impl)
{
	shm_comm_t *c = impl;
	if (!c->started) {
		return;
	}
	atomic_store_explicit(&c->stopping, 1, memory_order_release);
	if (c->thread_started) {
		hako_waitset_wake(c->ws);
		pthread_join(c->thread, NULL);
		c->thread_started = 0;
	}
	hako_waitset_destroy(c->ws);
	c->ws = NULL;
	for (size_t i = 0; i < c->notify_count; i++) {
		shm_pdu_t *p = c->notify[i];
		if (p->thread_started) {
			pthread_join(p->thread, NULL);
			p->thread_started = 0;
		}
	}
	/* The handles belong to the domain, which may be closed before the next start; an open
	 * loan (a caller that broke the contract) is cancelled so the channel is not wedged. */
	for (size_t i = 0; i < c->count; i++) {
		hako_channel_t *ch = atomic_load(&c->pdus[i].ch);
		if (ch != NULL && atomic_exchange(&c->pdus[i].loaned, 0)) {
			hako_channel_cancel(ch);
		}
		atomic_store(&c->pdus[i].ch, NULL);
	}
	if (c->own_dom) {
		hako_domain_close(c->dom);
		c->own_dom = 0;
	}
	c->dom = NULL;
	c->started = 0;
}

static int shm_start(void *impl, hako_domain_t *dom, hako_error_t *err)
{
	shm_comm_t *c = impl;
	const char *path = c->ctx.cfg->path;
	int r;
	if (dom == NULL) {
		const char *name = hako_domain_default_name();
		if ((r = hako_domain_open(name, &dom)) != 0) {
			return hako_error_set(
			    err, r, path, 0, 0, "endpoint '%s': cannot open shm domain '%s': %s%s",
			    c->ctx.ep_name, name, hako_strerror(r),
			    r == HAKO_ENOENT ? " (is its conductor running?)" : "");
		}
		c->own_dom = 1;
	}
	c->dom = dom;
	c->started = 1;
	const char *spin = getenv("HAKO_SPIN_USEC");
	c->spin_usec = spin != NULL && spin[0] != '\0' ? atol(spin) : 0;
	if (c->spin_usec < 0 || c->spin_usec > WATCH_TICK_USEC) {
		c->spin_usec = c->spin_usec < 0 ? 0 : WATCH_TICK_USEC;
	}
	const char *delay = getenv(WATCH_DELAY_ENV);
	c->delay_usec = delay != NULL && delay[0] != '\0' ? atol(delay) : 0;
	if (c->delay_usec < 0 || c->delay_usec > 999999) {
		c->delay_usec = c->delay_usec < 0 ? 0 : 999999;
	}
	atomic_store(&c->stopping, 0);
	for (size_t i = 0; i < c->count; i++) {
		shm_pdu_t *p = &c->pdus[i];
		hako_channel_t *ch;
		if (!p->listed) {
			continue;
		}
		if ((r = attach(c, p, 1, &ch)) != 0) {
			hako_error_set(
			    err, r, path, 0, 0,
			    "endpoint '%s': cannot create shm channel %s/%s (channel %d, "
			    "%u bytes) in domain '%s': %s",
			    c->ctx.ep_name, p->key.robot, p->name, (int)p->key.channel_id, p->size,
			    hako_domain_name(dom), hako_strerror(r));
			shm_stop(c);
			return r;
		}
	}
	/* What is there now is old: only later writes are delivered. */
	for (size_t i = 0; i < c->notify_count; i++) {
		shm_pdu_t *p = c->notify[i];
		p->seen_resets = hako_domain_reset_count(dom);
		atomic_store_explicit(&p->seen, hako_channel_seq(atomic_load(&p->ch)),
		                      memory_order_relaxed);
	}
	if (c->opt->impl == HAKO_SHM_CALLBACK && c->notify_count > 0 &&
	    (r = start_watchers(c, err)) != 0) {
		shm_stop(c);
		return r;
	}
	return 0;
}

static void shm_close(void *impl)
{
	shm_comm_t *c = impl;
	if (c == NULL) {
		return;
	}
	shm_stop(c);
	for (size_t i = 0; c->pdus != NULL && i < c->count; i++) {
		free(c->pdus[i].buf);
	}
	for (size_t i = 0; c->notify != NULL && i < c->notify_count && c->notify[i] != NULL; i++) {
		pthread_mutex_destroy(&c->notify[i]->lock);
	}
	free(c->notify);
	free(c->slots);
	free(c->pdus);
	free(c);
}

/* The channel of key for writing, created on first use. */
static int writable(shm_comm_t *c, const hako_pdu_key_t *key, size_t len, shm_pdu_t **pp,
                    hako_channel_t **out)
{
	shm_pdu_t *p = find(c, key->robot, key->channel_id);
	if (p == NULL) {
		return HAKO_ENOENT;
	}
	if (len > p->size) {
		return HAKO_ETOOBIG;
	}
	hako_channel_t *ch = atomic_load_explicit(&p->ch, memory_order_acquire);
	int r;
	if (ch == NULL && (r = attach(c, p, 1, &ch)) != 0) {
		HAKO_WARN("endpoint '%s': cannot create shm channel %s/%s (channel %d, %u bytes) "
		          "in domain '%s': %s",
		          c->ctx.ep_name, p->key.robot, p->name, (int)p->key.channel_id, p->size,
		          hako_domain_name(c->dom), hako_strerror(r));
		return r;
	}
	*pp = p;
	*out = ch;
	return 0;
}

static int shm_send(void *impl, const hako_pdu_key_t *key, const void *data, size_t len)
{
	shm_comm_t *c = impl;
	shm_pdu_t *p;
	hako_channel_t *ch;
	int r = writable(c, key, len, &p, &ch);
	if (r != 0) {
		return r;
	}
	if ((r = hako_channel_write(ch, data, len)) != 0) {
		return r;
	}
	hakoi_count(&c->ctx.ctr->frames_out, 1);
	hakoi_count(&c->ctx.ctr->bytes_out, len);
	return 0;
}

/* Loans lend the channel's back buffer itself (hako_channel_loan): a PDU produced in place is
 * never copied on the writing side. */
static int shm_loan(void *impl, const hako_pdu_key_t *key, size_t size, void **buf)
{
	shm_comm_t *c = impl;
	shm_pdu_t *p;
	hako_channel_t *ch;
	int r = writable(c, key, size, &p, &ch);
	if (r != 0) {
		return r;
	}
	if (atomic_exchange(&p->loaned, 1)) {
		return HAKO_EBUSY;
	}
	if ((r = hako_channel_loan(ch, buf, NULL)) != 0) {
		atomic_store(&p->loaned, 0);
	}
	return r;
}

static int shm_commit(void *impl, const hako_pdu_key_t *key, size_t len)
{
	shm_comm_t *c = impl;
	shm_pdu_t *p = find(c, key->robot, key->channel_id);
	hako_channel_t *ch = p != NULL ? atomic_load(&p->ch) : NULL;
	if (ch == NULL || !atomic_load(&p->loaned)) {
		return HAKO_ESTATE;
	}
	if (len > p->size) {
		return HAKO_ETOOBIG; /* still lent */
	}
	/* Clear the mark before publishing: the commit may wake a peer whose answer reaches a
	 * subscriber of this process that loans this PDU again before this thread runs on. That
	 * loan then waits on the channel's writer lock (held until the commit) instead of failing.
	 */
	atomic_store(&p->loaned, 0);
	int r = hako_channel_commit(ch, len);
	if (r == 0) {
		hakoi_count(&c->ctx.ctr->frames_out, 1);
		hakoi_count(&c->ctx.ctr->bytes_out, len);
	}
	return r;
}

static int shm_cancel(void *impl, const hako_pdu_key_t *key)
{
	shm_comm_t *c = impl;
	shm_pdu_t *p = find(c, key->robot, key->channel_id);
	hako_channel_t *ch = p != NULL ? atomic_load(&p->ch) : NULL;
	if (ch == NULL || !atomic_exchange(&p->loaned, 0)) {
		return HAKO_ESTATE;
	}
	return hako_channel_cancel(ch);
}

static int shm_recv_direct(void *impl, const hako_pdu_key_t *key, void *buf, size_t cap,
                           size_t *len)
{
	shm_comm_t *c = impl;
	*len = 0;
	shm_pdu_t *p = find(c, key->robot, key->channel_id);
	if (p == NULL) {
		return HAKO_EAGAIN; /* not in the pdudef: nothing can be there */
	}
	hako_channel_t *ch = atomic_load_explicit(&p->ch, memory_order_acquire);
	/* Look up, not create: reading must not allocate a channel nobody writes. */
	int r;
	if (ch == NULL && (r = attach(c, p, 0, &ch)) != 0) {
		return r == HAKO_ENOENT ? HAKO_EAGAIN : r;
	}
	uint64_t seq = 0;
	r = hako_channel_read(ch, buf, cap, len, &seq);
	if (r == 0 && seq == 0) {
		return HAKO_EAGAIN; /* never written (or reset since) */
	}
	return r;
}

/* Every notified channel written since it was last read, delivered in the caller's thread. */
static int shm_drain(void *impl)
{
	shm_comm_t *c = impl;
	int n = 0;
	for (size_t i = 0; c->started && i < c->notify_count; i++) {
		n += deliver_changed(c->notify[i]);
	}
	return n;
}

static int shm_process(void *impl)
{
	shm_comm_t *c = impl;
	if (c->opt->impl != HAKO_SHM_POLL) {
		return 0; /* callback: the watchers deliver */
	}
	return shm_drain(c);
}

/* ---- the comm file ---- */

typedef hako_comm_shm_options_t shm_opts_t;

static const char *const shm_impls[] = {"callback", "poll", NULL};
static const int shm_impl_values[] = {HAKO_SHM_CALLBACK, HAKO_SHM_POLL};

static int check_asset(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)v;
	(void)f;
	const shm_opts_t *o = ((const hako_comm_config_t *)base)->opts;
	if (o->impl == HAKO_SHM_POLL && o->asset_name[0] == '\0') {
		hakoi_walk_push_key(w, "asset_name");
		return hakoi_walk_fail_missing(w, "a string");
	}
	return 0;
}

/* A robot's name: listed once and in the endpoint's pdudef. Its PDUs, read next, are checked
 * against it (the load's cur). */
static int check_robot(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)v;
	(void)f;
	hakoi_comm_load_t *ld = w->user;
	const shm_opts_t *o = ld->cc->opts;
	hako_comm_shm_robot_t *rb = base;
	size_t i = hakoi_walk_index(w);
	for (size_t k = 0; k < i; k++) {
		if (strcmp(o->robots[k].name, rb->name) == 0) {
			return hakoi_walk_fail_dup(w, k, "robot \"%s\"", rb->name);
		}
	}
	if (ld->def != NULL && hako_pdudef_robot(ld->def, rb->name) == NULL) {
		return hakoi_walk_fail(w, "robot \"%s\" is not in %s", rb->name, ld->def->path);
	}
	ld->cur = rb;
	return 0;
}

/* A PDU's name: listed once for its robot and in the pdudef, which gives its channel and size. */
static int check_pdu(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)v;
	(void)f;
	hakoi_comm_load_t *ld = w->user;
	const hako_comm_shm_robot_t *rb = ld->cur;
	hako_comm_shm_pdu_t *pdu = base;
	size_t j = hakoi_walk_index(w);
	for (size_t k = 0; k < j; k++) {
		if (strcmp(rb->pdus[k].name, pdu->name) == 0) {
			return hakoi_walk_fail_dup(w, k, "PDU \"%s\"", pdu->name);
		}
	}
	if (ld->def != NULL) {
		const hako_pdudef_pdu_t *d = hako_pdudef_find(ld->def, rb->name, pdu->name);
		if (d == NULL) {
			return hakoi_walk_fail(w, "PDU \"%s\" of robot \"%s\" is not in %s",
			                       pdu->name, rb->name, ld->def->path);
		}
		pdu->channel_id = d->channel_id;
		pdu->pdu_size = d->pdu_size;
	}
	return 0;
}

static const hakoi_field_t shm_pdu_fields[] = {
    {.key = "name",
     .kind = HAKOI_K_STRING,
     .flags = HAKOI_F_REQUIRED,
     HAKOI_AT(hako_comm_shm_pdu_t, name),
     .check = check_pdu},
    HAKOI_BOOL("notify_on_recv", 0, hako_comm_shm_pdu_t, notify_on_recv),
    HAKOI_END,
};

static const hakoi_field_t shm_pdu_elem = {.kind = HAKOI_K_OBJECT, .fields = shm_pdu_fields};

static const hakoi_field_t shm_robot_fields[] = {
    {.key = "name",
     .kind = HAKOI_K_STRING,
     .flags = HAKOI_F_REQUIRED,
     HAKOI_AT(hako_comm_shm_robot_t, name),
     .check = check_robot},
    {.key = "pdu",
     .kind = HAKOI_K_ARRAY,
     .flags = HAKOI_F_REQUIRED,
     HAKOI_ELEMS_NEW(hako_comm_shm_robot_t, pdus, pdu_count),
     .elem = &shm_pdu_elem},
    HAKOI_END,
};

static const hakoi_field_t shm_robot_elem = {.kind = HAKOI_K_OBJECT, .fields = shm_robot_fields};

static const hakoi_field_t shm_io_fields[] = {
    {.key = "robots",
     .kind = HAKOI_K_ARRAY,
     .flags = HAKOI_F_REQUIRED,
     HAKOI_COMM_ELEMS_NEW(shm_opts_t, robots, robot_count),
     .elem = &shm_robot_elem},
    HAKOI_END,
};

static const hakoi_field_t shm_fields[] = {
    HAKOI_COMM_COMMON_FIELDS,
    {.key = "impl_type",
     .kind = HAKOI_K_ENUM,
     .flags = HAKOI_F_REQUIRED,
     HAKOI_COMM_AT(shm_opts_t, impl),
     .names = shm_impls,
     .values = shm_impl_values},
    {.key = "asset_name", .kind = HAKOI_K_STRING, HAKOI_COMM_AT(shm_opts_t, asset_name)},
    HAKOI_CHECK(check_asset),
    HAKOI_COMM_OBJECT("io", HAKOI_F_REQUIRED, shm_io_fields),
    HAKOI_END,
};

static void shm_free_opts(void *opts)
{
	shm_opts_t *o = opts;
	for (size_t i = 0; i < o->robot_count; i++) {
		free(o->robots[i].pdus);
	}
	free(o->robots);
}

const hako_comm_shm_options_t *hako_comm_shm_options(const hako_comm_config_t *cc)
{
	return cc != NULL && cc->protocol == HAKO_COMM_SHM ? cc->opts : NULL;
}

const hakoi_comm_t hakoi_comm_shm = {
    .name = "shm",
    .protocol = HAKO_COMM_SHM,
    .opts_size = sizeof(shm_opts_t),
    .fields = shm_fields,
    .free_opts = shm_free_opts,
    .open = shm_open,
    .start = shm_start,
    .stop = shm_stop,
    .close = shm_close,
    .send = shm_send,
    .recv_direct = shm_recv_direct,
    .process = shm_process,
    .drain = shm_drain,
    .loan = shm_loan,
    .commit = shm_commit,
    .cancel = shm_cancel,
};
