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
 */
#define _POSIX_C_SOURCE 200809L

#include "hako/endpoint_cache.h"

#include <pthread.h>
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

/* Append-only: write() walks a counted prefix outside the lock, so nodes never move or vanish
 * before destroy. */
typedef struct sub {
	hako_cache_cb_t cb;
	void *user;
	struct sub *next;
} sub_t;

typedef struct entry {
	hako_pdu_key_t key;
	uint64_t hash;
	struct entry *chain; /* hash bucket */
	bool written;        /* subscribe may create an entry before its first write */
	slot_t *slots;       /* ring of nslots */
	uint32_t head;
	uint32_t count;
	sub_t *subs;
	sub_t *subs_tail;
	size_t nsubs;
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
	e->slots = calloc(c->nslots, sizeof(*e->slots));
	if (e->slots == NULL) {
		free(e);
		return NULL;
	}
	for (uint32_t i = 0; i < c->nslots; i++) {
		e->slots[i].owner = e;
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
	c->nbuckets = INITIAL_BUCKETS;
	c->mode = mode;
	c->nslots = mode == HAKO_CACHE_QUEUE ? depth : 1;
	*out = c;
	return 0;
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
			for (uint32_t k = 0; k < c->nslots; k++) {
				free(e->slots[k].data);
			}
			free(e->slots);
			sub_t *s = e->subs;
			while (s != NULL) {
				sub_t *sn = s->next;
				free(s);
				s = sn;
			}
			free(e);
			e = next;
		}
	}
	while (c->orphans != NULL) {
		orphan_t *o = c->orphans;
		c->orphans = o->next;
		free(o->data);
		free(o);
	}
	free(c->buckets);
	pthread_mutex_destroy(&c->lock);
	free(c);
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
	/* When full the new PDU goes into the oldest one's slot; store first so a failed
	 * allocation leaves the queue as it was. */
	slot_t *s = next_slot(c, e);
	int rc = slot_store(c, s, data, len);
	if (rc != 0) {
		return rc;
	}
	publish_locked(c, e, s);
	return 0;
}

int hako_cache_write(hako_cache_t *c, const hako_pdu_key_t *key, const void *data, size_t len)
{
	if (c == NULL || !key_valid(key) || (data == NULL && len > 0)) {
		return HAKO_EINVAL;
	}
	pthread_mutex_lock(&c->lock);
	entry_t *e = get_entry(c, key);
	if (e == NULL) {
		pthread_mutex_unlock(&c->lock);
		return HAKO_ENOMEM;
	}
	int rc = store_locked(c, e, data, len);
	if (rc != 0) {
		pthread_mutex_unlock(&c->lock);
		return rc;
	}
	/* Subscribers run unlocked so they may read; the first nsubs nodes are immutable. */
	sub_t *sub = e->subs;
	size_t nsubs = e->nsubs;
	hako_pdu_key_t k = e->key;
	pthread_mutex_unlock(&c->lock);
	for (size_t i = 0; i < nsubs; i++) {
		sub->cb(sub->user, &k, data, len);
		if (i + 1 < nsubs) { /* the last node's next may be being set by subscribe */
			sub = sub->next;
		}
	}
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
	pthread_mutex_lock(&c->lock);
	entry_t *e = get_entry(c, key);
	if (e == NULL) {
		pthread_mutex_unlock(&c->lock);
		return HAKO_ENOMEM;
	}
	/* Growing keeps the old content: a fill that fails leaves the slot's PDU as it was. */
	slot_t *s = next_slot(c, e);
	orphan_t *o;
	void *dst = slot_target(s, cap, &o);
	if (dst == NULL) {
		pthread_mutex_unlock(&c->lock);
		return HAKO_ENOMEM;
	}
	size_t len = 0;
	int rc = fill(arg, dst, cap, &len);
	if (rc != 0 || len > cap) {
		slot_abandon(dst, o);
		pthread_mutex_unlock(&c->lock);
		return rc != 0 ? rc : HAKO_EINVAL;
	}
	slot_take(c, s, dst, cap, len, o);
	publish_locked(c, e, s);
	sub_t *sub = e->subs;
	size_t nsubs = e->nsubs;
	hako_pdu_key_t k = e->key;
	void *data = s->data;
	if (nsubs > 0) {
		s->pins++;
	}
	pthread_mutex_unlock(&c->lock);
	if (len_out != NULL) {
		*len_out = len;
	}
	if (nsubs == 0) {
		return 0;
	}
	for (size_t i = 0; i < nsubs; i++) {
		sub->cb(sub->user, &k, data, len);
		if (i + 1 < nsubs) {
			sub = sub->next;
		}
	}
	pthread_mutex_lock(&c->lock);
	buffer_unpin(c, s, data);
	pthread_mutex_unlock(&c->lock);
	return 0;
}

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
	entry_t *e = find_entry(c, key, key_hash(key));
	int rc = HAKO_EAGAIN;
	if (e != NULL && e->count > 0) {
		rc = take_locked(c, e, buf, cap, len);
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

int hako_cache_subscribe(hako_cache_t *c, const hako_pdu_key_t *key, hako_cache_cb_t cb, void *user)
{
	if (c == NULL || !key_valid(key) || cb == NULL) {
		return HAKO_EINVAL;
	}
	sub_t *s = calloc(1, sizeof(*s));
	if (s == NULL) {
		return HAKO_ENOMEM;
	}
	s->cb = cb;
	s->user = user;
	pthread_mutex_lock(&c->lock);
	entry_t *e = get_entry(c, key);
	if (e == NULL) {
		pthread_mutex_unlock(&c->lock);
		free(s);
		return HAKO_ENOMEM;
	}
	if (e->subs_tail != NULL) {
		e->subs_tail->next = s;
	} else {
		e->subs = s;
	}
	e->subs_tail = s;
	e->nsubs++;
	pthread_mutex_unlock(&c->lock);
	return 0;
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
