/* Subscriptions and what the cache stores (pdu-endpoint/src/cache.c, endpoint.c): the unsubscribe
 * contract (no call of a subscription after hako_endpoint_unsubscribe returns) against a tcp
 * stream at full rate, from inside a callback, and across hako_endpoint_close; subscriptions to
 * every key; HAKO_CACHE_STORE_READ (PDUs only for subscribers are not stored, a queue counts no
 * drops, a read brings storing back). Waits poll with a generous limit; nothing asserts timing. */
#define _GNU_SOURCE

#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hako/endpoint.h"

#include "ep_test_util.h"

#define TCP_SERVER                                                                                 \
	"{\"protocol\":\"tcp\",\"role\":\"server\",\"direction\":\"inout\","                       \
	"\"local\":{\"address\":\"127.0.0.1\",\"port\":0},\"options\":{\"read_timeout_ms\":0}}"
#define TCP_CLIENT_FMT                                                                             \
	"{\"protocol\":\"tcp\",\"role\":\"client\",\"direction\":\"inout\","                       \
	"\"remote\":{\"address\":\"127.0.0.1\",\"port\":%u}}"

/* ---- endpoints ---- */

static hako_endpoint_t *open_started(const char *name, const char *comm, int depth)
{
	hako_endpoint_t *ep = NULL;
	hako_error_t err;
	assert_int_equal(ept_open(name, comm, depth, &ep, &err), 0);
	ept_track(ep);
	assert_int_equal(hako_endpoint_start(ep, &err), 0);
	return ep;
}

/* A tcp server rx (queue cache of depth) and a client tx connected to it. */
static void tcp_pair(int depth, hako_endpoint_t **rx, hako_endpoint_t **tx)
{
	*rx = open_started("rx", TCP_SERVER, depth);
	char comm[256];
	snprintf(comm, sizeof(comm), TCP_CLIENT_FMT, (unsigned)hako_endpoint_local_port(*rx));
	*tx = open_started("tx", comm, 4);
	EPT_WAIT_UNTIL(ept_stats(*tx).peers == 1 && ept_stats(*rx).peers == 1);
	assert_int_equal(ept_stats(*rx).peers, 1);
}

/* A comm-less endpoint (in-process bus: a send runs the subscribers in the sender's thread) with
 * a latest cache (depth 0) or a queue of depth. */
static hako_endpoint_t *open_bus(const char *name, int depth)
{
	char text[256], file[64], path[512];
	snprintf(file, sizeof(file), "%s.cache.json", name);
	if (depth > 0) {
		snprintf(text, sizeof(text),
		         "{\"type\": \"buffer\", \"store\": {\"mode\": \"queue\", \"depth\": %d}}",
		         depth);
	} else {
		snprintf(text, sizeof(text),
		         "{\"type\": \"buffer\", \"store\": {\"mode\": \"latest\"}}");
	}
	ept_write_file(file, text);
	snprintf(text, sizeof(text),
	         "{\"name\": \"%s\", \"cache\": \"%s.cache.json\", \"comm\": null, "
	         "\"pdu_def_path\": null}",
	         name, name);
	snprintf(file, sizeof(file), "%s.json", name);
	ept_write_file(file, text);
	snprintf(path, sizeof(path), "%s/%s.json", ept_dir(), name);
	hako_endpoint_t *ep = NULL;
	hako_error_t err;
	assert_int_equal(hako_endpoint_open(path, &ep, &err), 0);
	ept_track(ep);
	assert_int_equal(hako_endpoint_start(ep, &err), 0);
	return ep;
}

static void send_u64(hako_endpoint_t *ep, const hako_pdu_key_t *k, uint64_t v)
{
	uint8_t pdu[16];
	memset(pdu, 0, sizeof(pdu));
	memcpy(pdu, &v, sizeof(v));
	assert_int_equal(hako_endpoint_send(ep, k, pdu, sizeof(pdu)), 0);
}

static uint64_t u64_of(const void *data, size_t len)
{
	uint64_t v = UINT64_MAX;
	if (len >= sizeof(v)) {
		memcpy(&v, data, sizeof(v));
	}
	return v;
}

/* recv of k: its first 8 bytes, or -1 with the error. */
static int recv_u64(hako_endpoint_t *ep, const hako_pdu_key_t *k, uint64_t *v)
{
	uint8_t buf[64];
	size_t len = 0;
	int r = hako_endpoint_recv(ep, k, buf, sizeof(buf), &len);
	if (r == 0) {
		*v = u64_of(buf, len);
	}
	return r;
}

/* ---- a sender thread at full rate ---- */

typedef struct stream {
	hako_endpoint_t *tx;
	hako_pdu_key_t key;
	atomic_int stop;
	_Atomic uint64_t attempts;
	pthread_t th;
} stream_t;

static void *stream_main(void *arg)
{
	stream_t *s = arg;
	uint8_t pdu[64];
	memset(pdu, 0x5a, sizeof(pdu));
	for (uint64_t i = 0; !atomic_load(&s->stop); i++) {
		memcpy(pdu, &i, sizeof(i));
		hako_endpoint_send(s->tx, &s->key, pdu, sizeof(pdu)); /* fails once rx is closed */
		atomic_fetch_add(&s->attempts, 1);
	}
	return NULL;
}

static void stream_start(stream_t *s, hako_endpoint_t *tx, hako_pdu_key_t key)
{
	memset(s, 0, sizeof(*s));
	s->tx = tx;
	s->key = key;
	assert_int_equal(pthread_create(&s->th, NULL, stream_main, s), 0);
}

static void stream_stop(stream_t *s)
{
	atomic_store(&s->stop, 1);
	pthread_join(s->th, NULL);
}

/* ---- recorders ---- */

typedef struct counter {
	atomic_int calls;
	atomic_int ended; /* set by the test once the subscription ended */
	atomic_int late;  /* calls that began, or were still running, after that */
} counter_t;

static void on_count(void *user, const hako_pdu_key_t *key, const void *data, size_t len)
{
	(void)key;
	(void)data;
	(void)len;
	counter_t *c = user;
	if (atomic_load(&c->ended)) {
		atomic_fetch_add(&c->late, 1);
	}
	atomic_fetch_add(&c->calls, 1);
	/* A little work, so that unsubscribe often finds a call in progress. */
	for (volatile int i = 0; i < 200; i++) {
	}
	if (atomic_load(&c->ended)) {
		atomic_fetch_add(&c->late, 1);
	}
}

/* A probe's user data lives on the heap and is freed as soon as unsubscribe returns: a later
 * call is a use after free (the sanitizer build reports it); `c` is static and counts it in
 * every build. */
typedef struct probe {
	counter_t *c;
	uint64_t canary;
} probe_t;

static atomic_int bad_canaries;

static void on_probe(void *user, const hako_pdu_key_t *key, const void *data, size_t len)
{
	probe_t *p = user;
	if (p->canary != 0xC0FFEE) {
		atomic_fetch_add(&bad_canaries, 1);
	}
	on_count(p->c, key, data, len);
}

/* ---- the unsubscribe contract ---- */

#define STRESS_ROUNDS 1000

/* The rx comm thread delivers a tcp stream at full rate while this thread subscribes and
 * unsubscribes in a loop, every other round only after the new subscription got a call (so
 * unsubscribe often races a call in progress). */
static void test_unsubscribe_stress_tcp(void **state)
{
	(void)state;
	hako_endpoint_t *rx, *tx;
	tcp_pair(4, &rx, &tx);
	hako_pdu_key_t k = ept_key("stream", 1);
	static counter_t base;
	memset(&base, 0, sizeof(base));
	assert_int_equal(hako_endpoint_subscribe(rx, &k, on_count, &base, NULL), 0);
	stream_t s;
	stream_start(&s, tx, k);

	static counter_t probes[STRESS_ROUNDS];
	memset(probes, 0, sizeof(probes));
	int raced = 0;
	for (int i = 0; i < STRESS_ROUNDS; i++) {
		probe_t *p = malloc(sizeof(*p));
		assert_non_null(p);
		p->c = &probes[i];
		p->canary = 0xC0FFEE;
		hako_endpoint_sub_t *sub = NULL;
		assert_int_equal(hako_endpoint_subscribe(rx, &k, on_probe, p, &sub), 0);
		assert_non_null(sub);
		if (i % 2 == 0) {
			uint64_t end = ept_now_ms() + EPT_WAIT_MS;
			while (atomic_load(&probes[i].calls) == 0 && ept_now_ms() < end) {
				sched_yield();
			}
			assert_true(atomic_load(&probes[i].calls) > 0);
		}
		hako_endpoint_unsubscribe(sub);
		atomic_store(&probes[i].ended, 1);
		p->canary = 0;
		free(p);
		raced += atomic_load(&probes[i].calls) > 0;
	}
	/* Deliveries go on after the last unsubscribe: a late call had every chance to come. */
	int seen = atomic_load(&base.calls);
	EPT_WAIT_UNTIL(atomic_load(&base.calls) > seen + 1000);
	assert_true(atomic_load(&base.calls) > seen + 1000);
	stream_stop(&s);
	for (int i = 0; i < STRESS_ROUNDS; i++) {
		if (atomic_load(&probes[i].late) != 0) {
			fail_msg("round %d: %d call(s) after unsubscribe returned", i,
			         atomic_load(&probes[i].late));
		}
	}
	assert_true(raced >= STRESS_ROUNDS / 2);
	assert_int_equal(atomic_load(&bad_canaries), 0);
	assert_int_equal(atomic_load(&base.late), 0);
}

/* A subscriber that ends a subscription from inside its callback. */
typedef struct ender {
	hako_endpoint_sub_t *sub;   /* the one to end */
	hako_endpoint_sub_t **slot; /* where its handle is, cleared when ended */
	atomic_int calls;
	atomic_int at;       /* end it at this call */
	atomic_int finished; /* calls that ran to their end */
	atomic_int returned; /* unsubscribe returned inside the call */
} ender_t;

static void on_ender(void *user, const hako_pdu_key_t *key, const void *data, size_t len)
{
	(void)key;
	(void)data;
	(void)len;
	ender_t *e = user;
	if (atomic_fetch_add(&e->calls, 1) + 1 == atomic_load(&e->at)) {
		hako_endpoint_unsubscribe(*e->slot);
		*e->slot = NULL;
		atomic_store(&e->returned, 1);
	}
	atomic_fetch_add(&e->finished, 1);
}

static void test_unsubscribe_inside_callback(void **state)
{
	(void)state;
	hako_endpoint_t *bus = open_bus("bus", 0);
	hako_pdu_key_t k = ept_key("k", 1), other = ept_key("other", 2);
	static ender_t self, killer, all;
	static counter_t victim, keep;
	memset(&self, 0, sizeof(self));
	memset(&killer, 0, sizeof(killer));
	memset(&all, 0, sizeof(all));
	memset(&victim, 0, sizeof(victim));
	memset(&keep, 0, sizeof(keep));
	hako_endpoint_sub_t *s_self = NULL, *s_killer = NULL, *s_victim = NULL, *s_all = NULL;
	/* self ends itself at its 3rd call; killer ends victim (called after it) at its 2nd; a
	 * subscription to every key ends itself at its 1st. */
	self.slot = &s_self;
	atomic_store(&self.at, 3);
	killer.slot = &s_victim;
	atomic_store(&killer.at, 2);
	all.slot = &s_all;
	atomic_store(&all.at, 1);
	assert_int_equal(hako_endpoint_subscribe(bus, &k, on_ender, &self, &s_self), 0);
	assert_int_equal(hako_endpoint_subscribe(bus, &k, on_ender, &killer, &s_killer), 0);
	assert_int_equal(hako_endpoint_subscribe(bus, &k, on_count, &victim, &s_victim), 0);
	assert_int_equal(hako_endpoint_subscribe(bus, NULL, on_ender, &all, &s_all), 0);
	assert_int_equal(hako_endpoint_subscribe(bus, &k, on_count, &keep, NULL), 0);
	for (uint64_t i = 0; i < 10; i++) {
		send_u64(bus, &k, i);
	}
	send_u64(bus, &other, 1);
	assert_int_equal(atomic_load(&self.calls), 3);
	assert_int_equal(atomic_load(&self.finished), 3); /* the ending call ran to its end */
	assert_int_equal(atomic_load(&self.returned), 1);
	assert_null(s_self);
	assert_int_equal(atomic_load(&killer.calls), 10);
	assert_int_equal(atomic_load(&victim.calls), 1); /* not in the delivery that ended it */
	assert_null(s_victim);
	assert_int_equal(atomic_load(&all.calls), 1);
	assert_int_equal(atomic_load(&keep.calls), 10);
	hako_endpoint_unsubscribe(s_killer);

	/* The same in a tcp comm thread: no deadlock, and no call after the ending one while the
	 * stream goes on. */
	hako_endpoint_t *rx, *tx;
	tcp_pair(4, &rx, &tx);
	static ender_t tself;
	static counter_t tkeep;
	memset(&tself, 0, sizeof(tself));
	memset(&tkeep, 0, sizeof(tkeep));
	hako_endpoint_sub_t *s_tself = NULL;
	tself.slot = &s_tself;
	atomic_store(&tself.at, 5);
	assert_int_equal(hako_endpoint_subscribe(rx, &k, on_ender, &tself, &s_tself), 0);
	assert_int_equal(hako_endpoint_subscribe(rx, &k, on_count, &tkeep, NULL), 0);
	for (uint64_t i = 0; i < 100; i++) {
		send_u64(tx, &k, i);
	}
	EPT_WAIT_UNTIL(atomic_load(&tkeep.calls) == 100);
	assert_int_equal(atomic_load(&tkeep.calls), 100);
	assert_int_equal(atomic_load(&tself.calls), 5);
	assert_int_equal(atomic_load(&tself.finished), 5);
}

/* Closing an endpoint ends its subscriptions while the stream goes on: no call after close
 * returns, and the handles are freed with it (the sanitizer build checks for leaks). */
static void test_close_with_live_subscriptions(void **state)
{
	(void)state;
	hako_endpoint_t *rx, *tx;
	tcp_pair(4, &rx, &tx);
	hako_pdu_key_t k = ept_key("stream", 1), k2 = ept_key("quiet", 2);
	static counter_t a, all, quiet;
	memset(&a, 0, sizeof(a));
	memset(&all, 0, sizeof(all));
	memset(&quiet, 0, sizeof(quiet));
	hako_endpoint_sub_t *kept = NULL;
	assert_int_equal(hako_endpoint_subscribe(rx, &k, on_count, &a, &kept), 0);
	assert_int_equal(hako_endpoint_subscribe(rx, NULL, on_count, &all, NULL), 0);
	assert_int_equal(hako_endpoint_subscribe(rx, &k2, on_count, &quiet, NULL), 0);
	stream_t s;
	stream_start(&s, tx, k);
	EPT_WAIT_UNTIL(atomic_load(&a.calls) > 100 && atomic_load(&all.calls) > 100);
	assert_true(atomic_load(&a.calls) > 100);
	ept_close(rx);
	atomic_store(&a.ended, 1);
	atomic_store(&all.ended, 1);
	atomic_store(&quiet.ended, 1);
	int ca = atomic_load(&a.calls), call = atomic_load(&all.calls);
	uint64_t tried = atomic_load(&s.attempts);
	EPT_WAIT_UNTIL(atomic_load(&s.attempts) > tried + 1000);
	stream_stop(&s);
	assert_int_equal(atomic_load(&a.late), 0);
	assert_int_equal(atomic_load(&all.late), 0);
	assert_int_equal(atomic_load(&a.calls), ca);
	assert_int_equal(atomic_load(&all.calls), call);
	assert_int_equal(atomic_load(&quiet.calls), 0);
}

/* ---- every key, order ---- */

static char order[64];

static void on_order(void *user, const hako_pdu_key_t *key, const void *data, size_t len)
{
	(void)data;
	(void)len;
	char item[160];
	snprintf(item, sizeof(item), "%s%s:%s", order[0] != '\0' ? " " : "", (const char *)user,
	         key->robot);
	strncat(order, item, sizeof(order) - strlen(order) - 1);
}

static void test_every_key_and_order(void **state)
{
	(void)state;
	hako_endpoint_t *bus = open_bus("order", 0);
	hako_pdu_key_t a = ept_key("A", 1), b = ept_key("B", 1);
	hako_endpoint_sub_t *s1 = NULL, *s2 = NULL, *s3 = NULL;
	assert_int_equal(hako_endpoint_subscribe(bus, &a, on_order, "1", &s1), 0);
	assert_int_equal(hako_endpoint_subscribe(bus, NULL, on_order, "2", &s2), 0);
	assert_int_equal(hako_endpoint_subscribe(bus, &a, on_order, "3", &s3), 0);
	order[0] = '\0';
	send_u64(bus, &a, 1);
	send_u64(bus, &b, 1);
	/* the key's subscribers in their order, then every key's */
	assert_string_equal(order, "1:A 3:A 2:A 2:B");
	hako_endpoint_unsubscribe(s1);
	hako_endpoint_unsubscribe(s2);
	order[0] = '\0';
	send_u64(bus, &a, 2);
	send_u64(bus, &b, 2);
	assert_string_equal(order, "3:A");
	hako_endpoint_unsubscribe(s3);
	hako_endpoint_unsubscribe(NULL);

	hako_endpoint_sub_t *bad = (hako_endpoint_sub_t *)&bad;
	hako_pdu_key_t empty = ept_key("", 1);
	assert_int_equal(hako_endpoint_subscribe(bus, &empty, on_order, NULL, &bad), HAKO_EINVAL);
	assert_null(bad);
	assert_int_equal(hako_endpoint_subscribe(bus, &a, NULL, NULL, NULL), HAKO_EINVAL);
	assert_int_equal(hako_endpoint_subscribe(NULL, &a, on_order, NULL, NULL), HAKO_EINVAL);
	assert_int_equal(hako_endpoint_subscribe_by_name(bus, "A", "x", on_order, NULL, &bad),
	                 HAKO_ENOENT); /* no pdudef */
	assert_null(bad);
}

/* ---- what is stored ---- */

typedef struct last {
	atomic_int calls;
	_Atomic uint64_t value;
	atomic_int out_of_order;
} last_t;

static void on_last(void *user, const hako_pdu_key_t *key, const void *data, size_t len)
{
	(void)key;
	last_t *l = user;
	uint64_t v = u64_of(data, len);
	int n = atomic_fetch_add(&l->calls, 1);
	if (n > 0 && v != atomic_load(&l->value) + 1) {
		atomic_fetch_add(&l->out_of_order, 1);
	}
	atomic_store(&l->value, v);
}

/* HAKO_CACHE_STORE_READ on a latest bus, rule by rule. */
static void test_store_read_rules(void **state)
{
	(void)state;
	hako_endpoint_t *bus = open_bus("rules", 0);
	assert_int_equal(hako_endpoint_set_store(bus, (hako_cache_store_t)7), HAKO_EINVAL);
	assert_int_equal(hako_endpoint_set_store(NULL, HAKO_CACHE_STORE_READ), HAKO_EINVAL);
	assert_int_equal(hako_endpoint_set_store(bus, HAKO_CACHE_STORE_READ), 0);
	hako_pdu_key_t x = ept_key("x", 1), y = ept_key("y", 1), z = ept_key("z", 1),
	               w = ept_key("w", 1);
	uint64_t v = 0;
	static last_t lx, ly, lw;
	memset(&lx, 0, sizeof(lx));
	memset(&ly, 0, sizeof(ly));
	memset(&lw, 0, sizeof(lw));

	/* x arrives with nobody subscribed: stored. Once subscribed (never read), its PDUs go to
	 * the subscriber only, and the stored one is dropped: a first read does not get a value
	 * older than the subscriber's. */
	send_u64(bus, &x, 1);
	assert_int_equal(hako_endpoint_subscribe(bus, &x, on_last, &lx, NULL), 0);
	send_u64(bus, &x, 2);
	assert_int_equal(atomic_load(&lx.value), 2);
	assert_int_equal(recv_u64(bus, &x, &v), HAKO_EAGAIN);
	/* that read marked x: stored from now on, and the subscriber still gets it */
	send_u64(bus, &x, 3);
	assert_int_equal(recv_u64(bus, &x, &v), 0);
	assert_int_equal(v, 3);
	assert_int_equal(atomic_load(&lx.value), 3);

	/* y subscribed and never read: delivered, counted, not stored */
	assert_int_equal(hako_endpoint_subscribe(bus, &y, on_last, &ly, NULL), 0);
	for (uint64_t i = 0; i < 5; i++) {
		send_u64(bus, &y, i);
	}
	assert_int_equal(atomic_load(&ly.calls), 5);
	/* z has no subscriber: stored as always */
	send_u64(bus, &z, 7);
	assert_int_equal(recv_u64(bus, &z, &v), 0);
	assert_int_equal(v, 7);

	/* recv_next marks every key: w, subscribed and never read by key, is stored after it */
	assert_int_equal(hako_endpoint_subscribe(bus, &w, on_last, &lw, NULL), 0);
	send_u64(bus, &w, 1);
	hako_pdu_key_t got;
	uint8_t buf[64];
	size_t len = 0;
	assert_int_equal(hako_endpoint_recv_next(bus, &got, buf, sizeof(buf), &len), HAKO_EAGAIN);
	send_u64(bus, &w, 2);
	assert_int_equal(hako_endpoint_recv_next(bus, &got, buf, sizeof(buf), &len), 0);
	assert_string_equal(got.robot, "w");
	assert_int_equal(u64_of(buf, len), 2);
	assert_int_equal(atomic_load(&lw.calls), 2);

	hako_endpoint_stats_t st = ept_stats(bus);
	assert_int_equal(st.frames_in, 3 + 5 + 1 + 2); /* every PDU counts, stored or not */
	assert_int_equal(st.recv_dropped, 0);

	/* back to HAKO_CACHE_STORE_ALL: y is stored again */
	assert_int_equal(hako_endpoint_set_store(bus, HAKO_CACHE_STORE_ALL), 0);
	send_u64(bus, &y, 5);
	assert_int_equal(recv_u64(bus, &y, &v), 0);
	assert_int_equal(v, 5);
}

/* 10,000 PDUs over tcp into a queue of depth 4 that only a subscriber takes: with
 * HAKO_CACHE_STORE_READ none is stored, none counted as dropped; once the key is read the queue
 * works (and drops) as a queue. The default stores them all and drops all but 4. */
static void test_store_read_queue_no_drops(void **state)
{
	(void)state;
	hako_endpoint_t *rx, *tx;
	tcp_pair(4, &rx, &tx);
	assert_int_equal(hako_endpoint_set_store(rx, HAKO_CACHE_STORE_READ), 0);
	hako_pdu_key_t k = ept_key("fwd", 3);
	static last_t l;
	memset(&l, 0, sizeof(l));
	assert_int_equal(hako_endpoint_subscribe(rx, &k, on_last, &l, NULL), 0);
	for (uint64_t i = 0; i < 10000; i++) {
		send_u64(tx, &k, i);
	}
	EPT_WAIT_UNTIL(atomic_load(&l.calls) == 10000);
	assert_int_equal(atomic_load(&l.calls), 10000);
	assert_int_equal(atomic_load(&l.out_of_order), 0);
	hako_endpoint_stats_t st = ept_stats(rx);
	assert_int_equal(st.frames_in, 10000);
	assert_int_equal(st.recv_dropped, 0);
	uint64_t v = 0;
	assert_int_equal(recv_u64(rx, &k, &v), HAKO_EAGAIN); /* nothing was stored */

	for (uint64_t i = 10000; i < 10010; i++) {
		send_u64(tx, &k, i);
	}
	EPT_WAIT_UNTIL(atomic_load(&l.calls) == 10010);
	assert_int_equal(atomic_load(&l.calls), 10010);
	assert_int_equal(ept_stats(rx).recv_dropped, 6);
	assert_int_equal(recv_u64(rx, &k, &v), 0);
	assert_int_equal(v, 10006);

	/* the default, on a bus: every PDU stored, a queue of 4 drops the rest */
	hako_endpoint_t *bus = open_bus("qbus", 4);
	static counter_t c;
	memset(&c, 0, sizeof(c));
	assert_int_equal(hako_endpoint_subscribe(bus, &k, on_count, &c, NULL), 0);
	for (uint64_t i = 0; i < 10000; i++) {
		send_u64(bus, &k, i);
	}
	assert_int_equal(atomic_load(&c.calls), 10000);
	assert_int_equal(ept_stats(bus).recv_dropped, 9996);
}

/* ---- the cache itself: write_fill of PDUs only for subscribers ---- */

typedef struct fill_src {
	const char *text;
} fill_src_t;

static int fill_text(void *arg, void *dst, size_t cap, size_t *len)
{
	fill_src_t *f = arg;
	size_t n = strlen(f->text) + 1;
	if (n > cap) {
		return HAKO_ETOOBIG;
	}
	memcpy(dst, f->text, n);
	*len = n;
	return 0;
}

typedef struct nest {
	hako_cache_t *c;
	int depth;
	char outer_before[32];
	char outer_after[32];
	char inner[32];
} nest_t;

/* The outer write_fill's subscriber writes another key with write_fill (as a poll-mode
 * receive from inside a subscriber would): each gets its own buffer. */
static void on_nest(void *user, const hako_pdu_key_t *key, const void *data, size_t len)
{
	(void)len;
	nest_t *n = user;
	if (key->channel_id == 2) {
		snprintf(n->inner, sizeof(n->inner), "%s", (const char *)data);
		return;
	}
	snprintf(n->outer_before, sizeof(n->outer_before), "%s", (const char *)data);
	hako_pdu_key_t inner = ept_key("n", 2);
	fill_src_t f = {"inner"};
	size_t got = 0;
	assert_int_equal(hako_cache_write_fill(n->c, &inner, 32, fill_text, &f, &got), 0);
	snprintf(n->outer_after, sizeof(n->outer_after), "%s", (const char *)data);
}

static void test_cache_fill_passed(void **state)
{
	(void)state;
	hako_cache_t *c = NULL;
	assert_int_equal(hako_cache_create(HAKO_CACHE_QUEUE, 2, &c), 0);
	assert_int_equal(hako_cache_set_store(c, HAKO_CACHE_STORE_READ), 0);
	assert_int_equal(hako_cache_set_store(NULL, HAKO_CACHE_STORE_READ), HAKO_EINVAL);
	static nest_t n;
	memset(&n, 0, sizeof(n));
	n.c = c;
	hako_pdu_key_t outer = ept_key("n", 1), inner = ept_key("n", 2);
	assert_int_equal(hako_cache_subscribe(c, &outer, on_nest, &n, NULL), 0);
	assert_int_equal(hako_cache_subscribe(c, &inner, on_nest, &n, NULL), 0);
	fill_src_t f = {"outer"};
	size_t len = 0;
	assert_int_equal(hako_cache_write_fill(c, &outer, 32, fill_text, &f, &len), 0);
	assert_int_equal(len, 6);
	assert_string_equal(n.outer_before, "outer");
	assert_string_equal(n.inner, "inner");
	assert_string_equal(n.outer_after, "outer"); /* the nested fill used its own buffer */
	/* a failing fill delivers nothing */
	f.text = "far too long for a buffer of 32 bytes, this one";
	assert_int_equal(hako_cache_write_fill(c, &outer, 32, fill_text, &f, &len), HAKO_ETOOBIG);
	hako_cache_stats_t st;
	hako_cache_get_stats(c, &st);
	assert_int_equal(st.passed, 2);
	assert_int_equal(st.writes, 0);
	assert_int_equal(st.keys, 0);
	assert_int_equal(st.dropped, 0);

	/* read once: stored from then on */
	char buf[32];
	assert_int_equal(hako_cache_read(c, &outer, buf, sizeof(buf), &len), HAKO_EAGAIN);
	f.text = "kept";
	assert_int_equal(hako_cache_write_fill(c, &outer, 32, fill_text, &f, &len), 0);
	assert_int_equal(hako_cache_read(c, &outer, buf, sizeof(buf), &len), 0);
	assert_string_equal(buf, "kept");
	hako_cache_get_stats(c, &st);
	assert_int_equal(st.passed, 3); /* the nested inner write again */
	assert_int_equal(st.writes, 1);
	hako_cache_destroy(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(test_unsubscribe_stress_tcp, ept_close_all),
	    cmocka_unit_test_teardown(test_unsubscribe_inside_callback, ept_close_all),
	    cmocka_unit_test_teardown(test_close_with_live_subscriptions, ept_close_all),
	    cmocka_unit_test_teardown(test_every_key_and_order, ept_close_all),
	    cmocka_unit_test_teardown(test_store_read_rules, ept_close_all),
	    cmocka_unit_test_teardown(test_store_read_queue_no_drops, ept_close_all),
	    cmocka_unit_test(test_cache_fill_passed),
	};
	return cmocka_run_group_tests(tests, ept_group_setup, ept_group_teardown);
}
