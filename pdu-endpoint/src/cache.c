/* The endpoint cache: a hash map from (robot, channel id) to an entry holding a ring of PDU slots
 * (one slot in latest mode, `depth` in queue mode).
 *
 * Every stored PDU that read_next may return is linked into one arrival list (latest: the pending
 * keys' slots, linked on their first pending write; queue: every queued PDU, linked on write).
 * Slots unlink themselves when read or dropped, so read_next is O(1) and never returns a dropped
 * PDU. Slot buffers are kept and grown, so steady-state writes do not allocate.
 *
 * hako_cache_write_fill has the producer write straight into a slot and gives the subscribers
 * that slot's buffer: the buffer is pinned while they run (outside the lock). A write that
 * finds its slot's buffer pinned (another thread writing the same key meanwhile) gives the slot
 * a new buffer and leaves the pinned one as an orphan, freed by its last unpin.
 *
 * Subscriptions. A write takes a reference on each subscription it will call (under the lock,
 * where only live ones are linked), so a handle is freed by whoever drops the last reference:
 * unsubscribe (the list's) or the write that called it last. Whether a call may still begin is
 * a separate count: a write announces each call (`calls` + 1) and then looks at `dead`;
 * unsubscribe sets `dead` and then waits for `calls` to drop to 0. Both are seq_cst, so either
 * the write sees `dead` and skips the call, or unsubscribe sees the call and waits for it: a
 * subscription pinned by a write that is busy in another subscriber's callback does not hold
 * its unsubscribe up. A write that finishes a call wakes a waiting unsubscribe (`waiters`, the
 * same pair again) without touching the handle after its count went down.
 */
#define _POSIX_C_SOURCE 200809L

#include "hako/endpoint_cache.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

typedef struct slot {
	void *data;
	size_t len;
	size_t cap;
	struct entry *owner;
	struct slot *prev; /* arrival list */
	struct slot *next;
	bool linked;
	uint32_t pins; /* subscriber calls running on data (write_fill) */
} slot_t;

/* A pinned buffer a slot let go of. */
typedef struct orphan {
	void *data;
	uint32_t pins;
	struct orphan *next;
} orphan_t;

/* A subscription; linked (under the cache lock) while it is live. */
struct hako_cache_sub {
	hako_cache_t *c;
	struct entry *e; /* NULL: every key */
	hako_cache_cb_t cb;
	void *user;
	struct hako_cache_sub *prev;
	struct hako_cache_sub *next;
	atomic_int dead;
	atomic_uint calls; /* calls announced and not finished (see the top comment) */
	atomic_uint refs;  /* the list's (until unsubscribed) + one per write about to call it */
};
typedef struct hako_cache_sub sub_t;

typedef struct sub_list {
	sub_t *head;
	sub_t *tail;
	size_t n;
} sub_list_t;

typedef struct entry {
	hako_pdu_key_t key;
	uint64_t hash;
	struct entry *chain; /* hash bucket */
	bool written;        /* subscribe and read may create an entry before its first write */
	bool read;           /* read at least once: stored even with subscribers */
	slot_t *slots;       /* ring of nslots; NULL until the first PDU is stored */
	uint32_t head;
	uint32_t count;
	sub_list_t subs;
} entry_t;

struct hako_cache {
	pthread_mutex_t lock;
	hako_cache_mode_t mode;
	uint32_t nslots;
	entry_t **buckets;
	size_t nbuckets;
	size_t nentries;
	slot_t *arr_head;
	slot_t *arr_tail;
	orphan_t *orphans;
	hako_cache_stats_t st;
	sub_list_t all;      /* subscriptions to every key */
	bool store_read;     /* HAKO_CACHE_STORE_READ */
	bool read_all;       /* read_next was called: every key is stored */
	atomic_uint waiters; /* unsubscribes waiting for a call to finish */
	pthread_cond_t calls_done;
};

#define INITIAL_BUCKETS 16

static bool key_valid(const hako_pdu_key_t *key)
{
	return key != NULL && memchr(key->robot, '\0', sizeof(key->robot)) != NULL;
}

static uint64_t key_hash(const hako_pdu_key_t *key)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */
	for (const char *p = key->robot; *p != '\0'; p++) {
		h ^= (unsigned char)*p;
		h *= 1099511628211ull;
	}
	uint32_t id = (uint32_t)key->channel_id;
	for (int i = 0; i < 4; i++) {
		h ^= (id >> (8 * i)) & 0xffu;
		h *= 1099511628211ull;
	}
	return h;
}

static bool key_equal(const hako_pdu_key_t *a, const hako_pdu_key_t *b)
{
	return a->channel_id == b->channel_id && strcmp(a->robot, b->robot) == 0;
}

static entry_t *find_entry(hako_cache_t *c, const hako_pdu_key_t *key, uint64_t h)
{
	for (entry_t *e = c->buckets[h % c->nbuckets]; e != NULL; e = e->chain) {
		if (e->hash == h && key_equal(&e->key, key)) {
			return e;
		}
	}
	return NULL;
}

static void grow_buckets(hako_cache_t *c)
{
	size_t n = c->nbuckets * 2;
	entry_t **b = calloc(n, sizeof(*b));
	if (b == NULL) {
		return; /* keep the longer chains; still correct */
	}
	for (size_t i = 0; i < c->nbuckets; i++) {
		entry_t *e = c->buckets[i];
		while (e != NULL) {
			entry_t *next = e->chain;
			e->chain = b[e->hash % n];
			b[e->hash % n] = e;
			e = next;
		}
	}
	free(c->buckets);
	c->buckets = b;
	c->nbuckets = n;
}

static entry_t *get_entry(hako_cache_t *c, const hako_pdu_key_t *key)
{
	uint64_t h = key_hash(key);
	entry_t *e = find_entry(c, key, h);
	if (e != NULL) {
		return e;
	}
	e = calloc(1, sizeof(*e));
	if (e == NULL) {
		return NULL;
	}
	memset(&e->key, 0, sizeof(e->key));
	strcpy(e->key.robot, key->robot);
	e->key.channel_id = key->channel_id;
	e->hash = h;
	if (c->nentries + 1 > c->nbuckets * 3 / 4) {
		grow_buckets(c);
	}
	e->chain = c->buckets[h % c->nbuckets];
	c->buckets[h % c->nbuckets] = e;
	c->nentries++;
	return e;
}

/* The slots are made at the first PDU stored: keys that are only subscribed or read cost none. */
static int entry_slots(hako_cache_t *c, entry_t *e)
{
	if (e->slots != NULL) {
		return 0;
	}
	e->slots = calloc(c->nslots, sizeof(*e->slots));
	if (e->slots == NULL) {
		return HAKO_ENOMEM;
	}
	for (uint32_t i = 0; i < c->nslots; i++) {
		e->slots[i].owner = e;
	}
	return 0;
}

static void arr_link(hako_cache_t *c, slot_t *s)
{
	s->next = NULL;
	s->prev = c->arr_tail;
	if (c->arr_tail != NULL) {
		c->arr_tail->next = s;
	} else {
		c->arr_head = s;
	}
	c->arr_tail = s;
	s->linked = true;
}

static void arr_unlink(hako_cache_t *c, slot_t *s)
{
	if (!s->linked) {
		return;
	}
	if (s->prev != NULL) {
		s->prev->next = s->next;
	} else {
		c->arr_head = s->next;
	}
	if (s->next != NULL) {
		s->next->prev = s->prev;
	} else {
		c->arr_tail = s->prev;
	}
	s->prev = s->next = NULL;
	s->linked = false;
}

static void buffer_unpin(hako_cache_t *c, slot_t *s, void *data)
{
	if (s->pins > 0 && s->data == data) {
		s->pins--;
		return;
	}
	for (orphan_t **o = &c->orphans; *o != NULL; o = &(*o)->next) {
		if ((*o)->data == data) {
			if (--(*o)->pins == 0) {
				orphan_t *dead = *o;
				*o = dead->next;
				free(dead->data);
				free(dead);
			}
			return;
		}
	}
}

/* A buffer of at least len bytes to write the next PDU of s into: s's own (grown, keeping its
 * content) or, if subscribers are running on s's buffer, a new one with *o the orphan node to
 * pass to slot_take. The slot is unchanged until slot_take, so a failure leaves it as it was. */
static void *slot_target(slot_t *s, size_t len, orphan_t **o)
{
	*o = NULL;
	if (s->pins > 0) {
		void *nb = malloc(len > 0 ? len : 1);
		*o = malloc(sizeof(**o));
		if (nb == NULL || *o == NULL) {
			free(nb);
			free(*o);
			*o = NULL;
			return NULL;
		}
		return nb;
	}
	if (len > s->cap || s->data == NULL) {
		void *p = realloc(s->data, len > 0 ? len : 1);
		if (p == NULL) {
			return NULL;
		}
		s->data = p;
		s->cap = len;
	}
	return s->data;
}

static void slot_take(hako_cache_t *c, slot_t *s, void *buf, size_t cap, size_t len, orphan_t *o)
{
	if (o != NULL) {
		o->data = s->data;
		o->pins = s->pins;
		o->next = c->orphans;
		c->orphans = o;
		s->data = buf;
		s->cap = cap;
		s->pins = 0;
	}
	s->len = len;
}

static void slot_abandon(void *buf, orphan_t *o)
{
	if (o != NULL) {
		free(buf);
		free(o);
	}
}

static int slot_store(hako_cache_t *c, slot_t *s, const void *data, size_t len)
{
	orphan_t *o;
	void *dst = slot_target(s, len, &o);
	if (dst == NULL) {
		return HAKO_ENOMEM;
	}
	if (len > 0) {
		memcpy(dst, data, len);
	}
	slot_take(c, s, dst, len, len, o);
	return 0;
}

int hako_cache_create(hako_cache_mode_t mode, uint32_t depth, hako_cache_t **out)
{
	if (out == NULL || (mode != HAKO_CACHE_LATEST && mode != HAKO_CACHE_QUEUE) || depth < 1 ||
	    depth > HAKO_CACHE_MAX_DEPTH) {
		return HAKO_EINVAL;
	}
	*out = NULL;
	hako_cache_t *c = calloc(1, sizeof(*c));
	if (c == NULL) {
		return HAKO_ENOMEM;
	}
	c->buckets = calloc(INITIAL_BUCKETS, sizeof(*c->buckets));
	if (c->buckets == NULL) {
		free(c);
		return HAKO_ENOMEM;
	}
	if (pthread_mutex_init(&c->lock, NULL) != 0) {
		free(c->buckets);
		free(c);
		return HAKO_ENOMEM;
	}
	if (pthread_cond_init(&c->calls_done, NULL) != 0) {
		pthread_mutex_destroy(&c->lock);
		free(c->buckets);
		free(c);
		return HAKO_ENOMEM;
	}
	c->nbuckets = INITIAL_BUCKETS;
	c->mode = mode;
	c->nslots = mode == HAKO_CACHE_QUEUE ? depth : 1;
	*out = c;
	return 0;
}

static void free_subs(sub_list_t *l)
{
	sub_t *s = l->head;
	while (s != NULL) {
		sub_t *next = s->next;
		free(s);
		s = next;
	}
}

void hako_cache_destroy(hako_cache_t *c)
{
	if (c == NULL) {
		return;
	}
	for (size_t i = 0; i < c->nbuckets; i++) {
		entry_t *e = c->buckets[i];
		while (e != NULL) {
			entry_t *next = e->chain;
			for (uint32_t k = 0; e->slots != NULL && k < c->nslots; k++) {
				free(e->slots[k].data);
			}
			free(e->slots);
			free_subs(&e->subs);
			free(e);
			e = next;
		}
	}
	free_subs(&c->all);
	while (c->orphans != NULL) {
		orphan_t *o = c->orphans;
		c->orphans = o->next;
		free(o->data);
		free(o);
	}
	free(c->buckets);
	pthread_cond_destroy(&c->calls_done);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

/* ---- what is stored ---- */

static bool stores(const hako_cache_t *c, const entry_t *e)
{
	return !c->store_read || e->read || c->read_all || (e->subs.n == 0 && c->all.n == 0);
}

int hako_cache_set_store(hako_cache_t *c, hako_cache_store_t store)
{
	if (c == NULL || (store != HAKO_CACHE_STORE_ALL && store != HAKO_CACHE_STORE_READ)) {
		return HAKO_EINVAL;
	}
	pthread_mutex_lock(&c->lock);
	c->store_read = store == HAKO_CACHE_STORE_READ;
	pthread_mutex_unlock(&c->lock);
	return 0;
}

/* e stopped being stored: what it holds would be older than what its subscribers got. */
static void forget_locked(hako_cache_t *c, entry_t *e)
{
	if (e->count == 0) {
		return;
	}
	for (uint32_t i = 0; i < e->count; i++) {
		arr_unlink(c, &e->slots[(e->head + i) % c->nslots]);
	}
	if (c->mode == HAKO_CACHE_QUEUE) {
		c->st.dropped += e->count;
	}
	e->head = 0;
	e->count = 0;
}

/* The slot the next PDU of e goes to: latest the only one; queue the one after the newest (when
 * full, the oldest one's). */
static slot_t *next_slot(hako_cache_t *c, entry_t *e)
{
	return c->mode == HAKO_CACHE_LATEST ? &e->slots[0]
	                                    : &e->slots[(e->head + e->count) % c->nslots];
}

/* s (from next_slot) holds a new PDU: queue it. */
static void publish_locked(hako_cache_t *c, entry_t *e, slot_t *s)
{
	if (c->mode == HAKO_CACHE_LATEST) {
		e->count = 1;
		if (!s->linked) { /* an already pending key keeps its place */
			arr_link(c, s);
		}
	} else {
		if (e->count == c->nslots) {
			arr_unlink(c, s);
			e->head = (e->head + 1) % c->nslots;
			e->count--;
			c->st.dropped++;
		}
		e->count++;
		arr_link(c, s);
	}
	if (!e->written) {
		e->written = true;
		c->st.keys++;
	}
	c->st.writes++;
}

static int store_locked(hako_cache_t *c, entry_t *e, const void *data, size_t len)
{
	int rc = entry_slots(c, e);
	if (rc != 0) {
		return rc;
	}
	/* When full the new PDU goes into the oldest one's slot; store first so a failed
	 * allocation leaves the queue as it was. */
	slot_t *s = next_slot(c, e);
	rc = slot_store(c, s, data, len);
	if (rc != 0) {
		return rc;
	}
	publish_locked(c, e, s);
	return 0;
}

/* ---- calling the subscribers ---- */

/* The subscriptions one write calls, each with a reference taken under the lock. */
#define CALLS_INLINE 16
typedef struct calls {
	sub_t *inline_[CALLS_INLINE];
	sub_t **v;
	size_t n;
} calls_t;

/* The caches whose callbacks this thread is running (innermost first): an unsubscribe from
 * inside one of them must not wait for itself. */
typedef struct frame {
	const hako_cache_t *c;
	const struct frame *up;
} frame_t;
static _Thread_local const frame_t *tls_frames;

static void take_list(calls_t *k, const sub_list_t *l)
{
	for (sub_t *s = l->head; s != NULL; s = s->next) {
		atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
		k->v[k->n++] = s;
	}
}

/* Under the lock. HAKO_ENOMEM (nothing taken) only with more than CALLS_INLINE subscribers. */
static int calls_take(hako_cache_t *c, entry_t *e, calls_t *k)
{
	size_t n = e->subs.n + c->all.n;
	k->v = k->inline_;
	k->n = 0;
	if (n > CALLS_INLINE && (k->v = malloc(n * sizeof(*k->v))) == NULL) {
		k->v = k->inline_;
		return HAKO_ENOMEM;
	}
	take_list(k, &e->subs);
	take_list(k, &c->all);
	return 0;
}

static void sub_unref(sub_t *s)
{
	if (atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) == 1) {
		free(s);
	}
}

/* One call of s, unless it was unsubscribed: the announce / dead pair of the top comment. */
static void call_one(hako_cache_t *c, sub_t *s, const hako_pdu_key_t *key, const void *data,
                     size_t len)
{
	atomic_fetch_add(&s->calls, 1);
	if (!atomic_load(&s->dead)) {
		s->cb(s->user, key, data, len);
	}
	atomic_fetch_sub(&s->calls, 1);
	if (atomic_load(&c->waiters) > 0) {
		pthread_mutex_lock(&c->lock);
		pthread_cond_broadcast(&c->calls_done);
		pthread_mutex_unlock(&c->lock);
	}
}

/* Outside the lock. Drops the references calls_take took. */
static void calls_run(hako_cache_t *c, calls_t *k, const hako_pdu_key_t *key, const void *data,
                      size_t len)
{
	frame_t f = {c, tls_frames};
	tls_frames = &f;
	for (size_t i = 0; i < k->n; i++) {
		call_one(c, k->v[i], key, data, len);
		sub_unref(k->v[i]);
	}
	tls_frames = f.up;
	if (k->v != k->inline_) {
		free(k->v);
	}
}

/* calls_take without calling (the PDU never came to be). */
static void calls_drop(calls_t *k)
{
	for (size_t i = 0; i < k->n; i++) {
		sub_unref(k->v[i]);
	}
	if (k->v != k->inline_) {
		free(k->v);
	}
}

/* ---- writing ---- */

int hako_cache_write(hako_cache_t *c, const hako_pdu_key_t *key, const void *data, size_t len)
{
	if (c == NULL || !key_valid(key) || (data == NULL && len > 0)) {
		return HAKO_EINVAL;
	}
	calls_t k;
	pthread_mutex_lock(&c->lock);
	entry_t *e = get_entry(c, key);
	if (e == NULL || calls_take(c, e, &k) != 0) {
		pthread_mutex_unlock(&c->lock);
		return HAKO_ENOMEM;
	}
	if (stores(c, e)) {
		int rc = store_locked(c, e, data, len);
		if (rc != 0) {
			pthread_mutex_unlock(&c->lock);
			calls_drop(&k);
			return rc;
		}
	} else {
		forget_locked(c, e);
		c->st.passed++;
	}
	hako_pdu_key_t kk = e->key;
	pthread_mutex_unlock(&c->lock);
	/* The subscribers get the caller's buffer, not the slot's copy. */
	calls_run(c, &k, &kk, data, len);
	return 0;
}

/* A buffer of the calling thread for PDUs that are only passed to subscribers. Taken out while
 * in use, so a write_fill nested in a callback (poll-mode receive from a subscriber) gets its
 * own; freed when the thread exits. */
typedef struct scratch {
	void *data;
	size_t cap;
} scratch_t;

static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;
static bool scratch_keyed; /* else (no thread key left) every write_fill allocates its own */

static void scratch_free(void *p)
{
	scratch_t *s = p;
	if (s != NULL) {
		free(s->data);
		free(s);
	}
}

static void scratch_init(void)
{
	scratch_keyed = pthread_key_create(&scratch_key, scratch_free) == 0;
}

static scratch_t *scratch_take(size_t cap)
{
	pthread_once(&scratch_once, scratch_init);
	scratch_t *s = scratch_keyed ? pthread_getspecific(scratch_key) : NULL;
	if (s != NULL) {
		pthread_setspecific(scratch_key, NULL);
	} else if ((s = calloc(1, sizeof(*s))) == NULL) {
		return NULL;
	}
	if (s->cap < cap || s->data == NULL) {
		void *p = realloc(s->data, cap > 0 ? cap : 1);
		if (p == NULL) {
			scratch_free(s);
			return NULL;
		}
		s->data = p;
		s->cap = cap;
	}
	return s;
}

static void scratch_give(scratch_t *s)
{
	if (scratch_keyed && pthread_getspecific(scratch_key) == NULL &&
	    pthread_setspecific(scratch_key, s) == 0) {
		return;
	}
	scratch_free(s);
}

/* write_fill of a PDU only for the subscribers k took, counted in `passed` already: filled
 * outside the lock. */
static int pass_fill(hako_cache_t *c, calls_t *k, const hako_pdu_key_t *key, size_t cap,
                     hako_cache_fill_fn fill, void *arg, size_t *len_out)
{
	scratch_t *s = scratch_take(cap);
	size_t len = 0;
	int rc = s == NULL ? HAKO_ENOMEM : fill(arg, s->data, cap, &len);
	if (rc != 0 || len > cap) {
		if (s != NULL) {
			scratch_give(s);
		}
		calls_drop(k);
		pthread_mutex_lock(&c->lock); /* rare: the fill found nothing, or no memory */
		c->st.passed--;
		pthread_mutex_unlock(&c->lock);
		return rc != 0 ? rc : HAKO_EINVAL;
	}
	if (len_out != NULL) {
		*len_out = len;
	}
	calls_run(c, k, key, s->data, len);
	scratch_give(s);
	return 0;
}

int hako_cache_write_fill(hako_cache_t *c, const hako_pdu_key_t *key, size_t cap,
                          hako_cache_fill_fn fill, void *arg, size_t *len_out)
{
	if (len_out != NULL) {
		*len_out = 0;
	}
	if (c == NULL || !key_valid(key) || fill == NULL) {
		return HAKO_EINVAL;
	}
	calls_t k;
	pthread_mutex_lock(&c->lock);
	entry_t *e = get_entry(c, key);
	if (e == NULL || calls_take(c, e, &k) != 0) {
		pthread_mutex_unlock(&c->lock);
		return HAKO_ENOMEM;
	}
	hako_pdu_key_t kk = e->key;
	if (!stores(c, e)) {
		forget_locked(c, e);
		c->st.passed++;
		pthread_mutex_unlock(&c->lock);
		return pass_fill(c, &k, &kk, cap, fill, arg, len_out);
	}
	if (entry_slots(c, e) != 0) {
		pthread_mutex_unlock(&c->lock);
		calls_drop(&k);
		return HAKO_ENOMEM;
	}
	/* Growing keeps the old content: a fill that fails leaves the slot's PDU as it was. */
	slot_t *s = next_slot(c, e);
	orphan_t *o;
	void *dst = slot_target(s, cap, &o);
	if (dst == NULL) {
		pthread_mutex_unlock(&c->lock);
		calls_drop(&k);
		return HAKO_ENOMEM;
	}
	size_t len = 0;
	int rc = fill(arg, dst, cap, &len);
	if (rc != 0 || len > cap) {
		slot_abandon(dst, o);
		pthread_mutex_unlock(&c->lock);
		calls_drop(&k);
		return rc != 0 ? rc : HAKO_EINVAL;
	}
	slot_take(c, s, dst, cap, len, o);
	publish_locked(c, e, s);
	void *data = s->data;
	if (k.n > 0) {
		s->pins++;
	}
	pthread_mutex_unlock(&c->lock);
	if (len_out != NULL) {
		*len_out = len;
	}
	if (k.n == 0) {
		calls_drop(&k);
		return 0;
	}
	calls_run(c, &k, &kk, data, len);
	pthread_mutex_lock(&c->lock);
	buffer_unpin(c, s, data);
	pthread_mutex_unlock(&c->lock);
	return 0;
}

/* ---- reading ---- */

/* Copy the front slot of e out; consume it unless latest mode keeps it. */
static int take_locked(hako_cache_t *c, entry_t *e, void *buf, size_t cap, size_t *len)
{
	slot_t *s = &e->slots[e->head];
	*len = s->len;
	if (s->len > cap) {
		return HAKO_ETOOBIG;
	}
	if (s->len > 0) {
		memcpy(buf, s->data, s->len);
	}
	arr_unlink(c, s);
	if (c->mode == HAKO_CACHE_QUEUE) {
		e->head = (e->head + 1) % c->nslots;
		e->count--;
	}
	c->st.reads++;
	return 0;
}

int hako_cache_read(hako_cache_t *c, const hako_pdu_key_t *key, void *buf, size_t cap, size_t *len)
{
	if (c == NULL || !key_valid(key) || len == NULL || (buf == NULL && cap > 0)) {
		return HAKO_EINVAL;
	}
	pthread_mutex_lock(&c->lock);
	/* The entry keeps the read mark for a key that has not arrived yet. Out of memory, the
	 * mark is lost: the key is still stored while it has no subscriber. */
	entry_t *e = get_entry(c, key);
	int rc = HAKO_EAGAIN;
	if (e != NULL) {
		e->read = true;
		if (e->count > 0) {
			rc = take_locked(c, e, buf, cap, len);
		}
	}
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int hako_cache_read_next(hako_cache_t *c, hako_pdu_key_t *key, void *buf, size_t cap, size_t *len)
{
	if (c == NULL || key == NULL || len == NULL || (buf == NULL && cap > 0)) {
		return HAKO_EINVAL;
	}
	pthread_mutex_lock(&c->lock);
	c->read_all = true;
	int rc = HAKO_EAGAIN;
	if (c->arr_head != NULL) {
		entry_t *e = c->arr_head->owner;
		/* The arrival list is ordered, so its head is its entry's oldest PDU. */
		rc = take_locked(c, e, buf, cap, len);
		if (rc == 0 || rc == HAKO_ETOOBIG) {
			*key = e->key;
		}
	}
	pthread_mutex_unlock(&c->lock);
	return rc;
}

/* ---- subscriptions ---- */

static void list_append(sub_list_t *l, sub_t *s)
{
	s->next = NULL;
	s->prev = l->tail;
	if (l->tail != NULL) {
		l->tail->next = s;
	} else {
		l->head = s;
	}
	l->tail = s;
	l->n++;
}

static void list_remove(sub_list_t *l, sub_t *s)
{
	if (s->prev != NULL) {
		s->prev->next = s->next;
	} else {
		l->head = s->next;
	}
	if (s->next != NULL) {
		s->next->prev = s->prev;
	} else {
		l->tail = s->prev;
	}
	s->prev = s->next = NULL;
	l->n--;
}

int hako_cache_subscribe(hako_cache_t *c, const hako_pdu_key_t *key, hako_cache_cb_t cb, void *user,
                         hako_cache_sub_t **out)
{
	if (out != NULL) {
		*out = NULL;
	}
	if (c == NULL || (key != NULL && !key_valid(key)) || cb == NULL) {
		return HAKO_EINVAL;
	}
	sub_t *s = calloc(1, sizeof(*s));
	if (s == NULL) {
		return HAKO_ENOMEM;
	}
	s->c = c;
	s->cb = cb;
	s->user = user;
	atomic_init(&s->refs, 1);
	pthread_mutex_lock(&c->lock);
	if (key != NULL && (s->e = get_entry(c, key)) == NULL) {
		pthread_mutex_unlock(&c->lock);
		free(s);
		return HAKO_ENOMEM;
	}
	list_append(s->e != NULL ? &s->e->subs : &c->all, s);
	pthread_mutex_unlock(&c->lock);
	if (out != NULL) {
		*out = s;
	}
	return 0;
}

static bool in_callback_of(const hako_cache_t *c)
{
	for (const frame_t *f = tls_frames; f != NULL; f = f->up) {
		if (f->c == c) {
			return true;
		}
	}
	return false;
}

void hako_cache_unsubscribe(hako_cache_sub_t *s)
{
	if (s == NULL) {
		return;
	}
	hako_cache_t *c = s->c;
	pthread_mutex_lock(&c->lock);
	list_remove(s->e != NULL ? &s->e->subs : &c->all, s);
	atomic_store(&s->dead, 1);
	if (!in_callback_of(c)) {
		atomic_fetch_add(&c->waiters, 1);
		while (atomic_load(&s->calls) > 0) {
			pthread_cond_wait(&c->calls_done, &c->lock);
		}
		atomic_fetch_sub(&c->waiters, 1);
	}
	pthread_mutex_unlock(&c->lock);
	sub_unref(s);
}

void hako_cache_get_stats(hako_cache_t *c, hako_cache_stats_t *st)
{
	if (c == NULL || st == NULL) {
		return;
	}
	pthread_mutex_lock(&c->lock);
	*st = c->st;
	pthread_mutex_unlock(&c->lock);
}
