/* The bridge runtime over comm-less endpoints (an in-process bus: a send on the source runs the
 * bridge synchronously) with a fake clock: the exact forwarded sequences of every policy, their
 * independence per destination and per PDU, epochs, pause, a failing destination, errors of
 * create, the callback contract of destroy (also while other threads send), and a queue source
 * that forwards 10,000 PDUs without storing one. Configs are built in C. */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "hako/bridge.h"
#include "hako/pdu.h"
#include "hako_test_util.h"

static char dir[256];

static void put(const char *name, const char *text)
{
	char p[700];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	assert_int_equal(htu_write_file(p, text), 0);
}

static int group_setup(void **state)
{
	(void)state;
	htu_tmpdir(dir, sizeof(dir));
	put("pdudef.json", "{\"robots\": [{\"name\": \"R\", \"shm_pdu_readers\": ["
	                   "{\"type\": \"std_msgs/UInt64\", \"org_name\": \"a\", "
	                   "\"channel_id\": 1, \"pdu_size\": 32},"
	                   "{\"type\": \"std_msgs/UInt64\", \"org_name\": \"b\", "
	                   "\"channel_id\": 2, \"pdu_size\": 32},"
	                   "{\"type\": \"std_msgs/UInt64\", \"org_name\": \"c\", "
	                   "\"channel_id\": 3, \"pdu_size\": 32}], \"shm_pdu_writers\": []}]}\n");
	put("latest.json", "{\"type\": \"buffer\", \"store\": {\"mode\": \"latest\"}}\n");
	put("queue4.json",
	    "{\"type\": \"buffer\", \"store\": {\"mode\": \"queue\", \"depth\": 4}}\n");
	put("qsrc.json", "{\"name\": \"qsrc\", \"cache\": \"queue4.json\", \"comm\": null, "
	                 "\"pdu_def_path\": \"pdudef.json\"}\n");
	const char *names[] = {"src", "d1", "d2"};
	for (int i = 0; i < 3; i++) {
		char f[64], text[256];
		snprintf(f, sizeof(f), "%s.json", names[i]);
		snprintf(text, sizeof(text),
		         "{\"name\": \"%s\", \"cache\": \"latest.json\", \"comm\": null, "
		         "\"pdu_def_path\": \"pdudef.json\"}\n",
		         names[i]);
		put(f, text);
	}
	/* a tcp client that is never started: every send to it fails (HAKO_ESTATE) */
	put("tcp.json", "{\"protocol\": \"tcp\", \"name\": \"tcp\", \"direction\": \"inout\", "
	                "\"role\": \"client\", \"remote\": {\"address\": \"127.0.0.1\", "
	                "\"port\": 9}}\n");
	put("bad.json", "{\"name\": \"bad\", \"cache\": \"latest.json\", \"comm\": \"tcp.json\", "
	                "\"pdu_def_path\": \"pdudef.json\"}\n");
	put("nopdu.json", "{\"name\": \"nopdu\", \"cache\": \"latest.json\", \"comm\": null, "
	                  "\"pdu_def_path\": null}\n");
	put("container.json", "[{\"nodeId\": \"n1\", \"endpoints\": [\n"
	                      "  {\"id\": \"src\", \"config_path\": \"src.json\"},\n"
	                      "  {\"id\": \"d1\", \"config_path\": \"d1.json\"},\n"
	                      "  {\"id\": \"d2\", \"config_path\": \"d2.json\"},\n"
	                      "  {\"id\": \"bad\", \"config_path\": \"bad.json\"},\n"
	                      "  {\"id\": \"qsrc\", \"config_path\": \"qsrc.json\"},\n"
	                      "  {\"id\": \"nopdu\", \"config_path\": \"nopdu.json\"}]}]\n");
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	htu_remove_tmpdirs();
	return 0;
}

/* ---- a config built in C ---- */

typedef struct tcfg {
	hako_bridge_config_t cfg;
	hako_bridge_policy_cfg_t pol[4];
	hako_bridge_group_cfg_t grp[4];
	hako_bridge_pdu_ref_t refs[4][4];
	hako_bridge_connection_cfg_t conn[4];
	char dests[4][4][HAKO_NAME_MAX];
	hako_bridge_transfer_cfg_t xf[4][4];
} tcfg_t;

static void tcfg_init(tcfg_t *t)
{
	memset(t, 0, sizeof(*t));
	snprintf(t->cfg.path, sizeof(t->cfg.path), "%s/bridge.json", dir);
	snprintf(t->cfg.node, sizeof(t->cfg.node), "n1");
	t->cfg.policies = t->pol;
	t->cfg.groups = t->grp;
	t->cfg.connections = t->conn;
}

static size_t policy(tcfg_t *t, const char *id, hako_bridge_policy_type_t type, int atomic,
                     uint32_t ms)
{
	size_t i = t->cfg.policy_count++;
	snprintf(t->pol[i].id, sizeof(t->pol[i].id), "%s", id);
	t->pol[i].type = type;
	t->pol[i].atomic = atomic;
	t->pol[i].interval_ms = ms;
	return i;
}

/* members: PDU names of robot R, NULL-terminated */
static size_t group(tcfg_t *t, const char *id, const char *const *members)
{
	size_t i = t->cfg.group_count++;
	snprintf(t->grp[i].id, sizeof(t->grp[i].id), "%s", id);
	t->grp[i].pdus = t->refs[i];
	for (size_t m = 0; members[m] != NULL; m++) {
		hako_bridge_pdu_ref_t *r = &t->refs[i][m];
		snprintf(r->id, sizeof(r->id), "m_%s", members[m]);
		snprintf(r->robot, sizeof(r->robot), "R");
		snprintf(r->pdu, sizeof(r->pdu), "%s", members[m]);
		t->grp[i].count++;
	}
	return i;
}

/* dests: endpoint ids, NULL-terminated */
static size_t connection(tcfg_t *t, const char *id, const char *src, const char *const *dests,
                         int validate)
{
	size_t i = t->cfg.connection_count++;
	hako_bridge_connection_cfg_t *c = &t->conn[i];
	snprintf(c->id, sizeof(c->id), "%s", id);
	snprintf(c->node_id, sizeof(c->node_id), "n1");
	snprintf(c->source, sizeof(c->source), "%s", src);
	c->destinations = t->dests[i];
	for (size_t d = 0; dests[d] != NULL; d++) {
		snprintf(t->dests[i][d], HAKO_NAME_MAX, "%s", dests[d]);
		c->dest_count++;
	}
	c->transfers = t->xf[i];
	c->epoch_validation = validate;
	return i;
}

static void transfer(tcfg_t *t, size_t conn, size_t grp, size_t pol)
{
	hako_bridge_connection_cfg_t *c = &t->conn[conn];
	c->transfers[c->transfer_count].group = grp;
	c->transfers[c->transfer_count].policy = pol;
	c->transfer_count++;
}

/* ---- fixture: endpoints, fake clock, recorders ---- */

static hako_time_t fake_now;

static hako_time_t fake_clock(void *user)
{
	(void)user;
	return fake_now;
}

#define MAX_REC 64

typedef struct rec {
	atomic_int n;
	char seq[MAX_REC][16]; /* "<pdu><value>", e.g. "a30" */
} rec_t;

static void on_forward(void *user, const hako_pdu_key_t *key, const void *data, size_t len)
{
	rec_t *r = user;
	uint64_t v = 0;
	if (len >= HAKO_PDU_META_SIZE + 8) {
		memcpy(&v, (const uint8_t *)data + HAKO_PDU_META_SIZE, 8);
	}
	int i = atomic_fetch_add(&r->n, 1);
	if (i < MAX_REC) {
		snprintf(r->seq[i], sizeof(r->seq[0]), "%c%llu", 'a' + key->channel_id - 1,
		         (unsigned long long)v);
	}
}

typedef struct fx {
	hako_endpoint_set_t *eps;
	hako_endpoint_t *src;
	rec_t d1;
	rec_t d2;
	tcfg_t t;
	hako_bridge_t *b;
} fx_t;

static void fx_open(fx_t *f)
{
	memset(f, 0, sizeof(*f));
	char path[700];
	hako_error_t err;
	snprintf(path, sizeof(path), "%s/container.json", dir);
	int r = hako_endpoint_set_open(path, "n1", &f->eps, &err);
	if (r != 0) {
		char buf[1200];
		fail_msg("%s", hako_error_format(&err, buf, sizeof(buf)));
	}
	f->src = hako_endpoint_set_get(f->eps, "src");
	assert_non_null(f->src);
	const char *pdus[] = {"a", "b", "c"};
	for (int i = 0; i < 3; i++) {
		assert_int_equal(
		    hako_endpoint_subscribe_by_name(hako_endpoint_set_get(f->eps, "d1"), "R",
		                                    pdus[i], on_forward, &f->d1, NULL),
		    0);
		assert_int_equal(
		    hako_endpoint_subscribe_by_name(hako_endpoint_set_get(f->eps, "d2"), "R",
		                                    pdus[i], on_forward, &f->d2, NULL),
		    0);
	}
	tcfg_init(&f->t);
	fake_now = 0;
}

static void fx_create(fx_t *f)
{
	hako_error_t err;
	int r = hako_bridge_create(&f->t.cfg, f->eps, fake_clock, NULL, &f->b, &err);
	if (r != 0) {
		char buf[1200];
		fail_msg("%s", hako_error_format(&err, buf, sizeof(buf)));
	}
}

static void fx_close(fx_t *f)
{
	hako_bridge_destroy(f->b);
	hako_endpoint_set_close(f->eps);
}

/* A 32-byte PDU of std_msgs/UInt64 with meta epoch `epoch`. */
static void make_pdu(uint8_t pdu[32], uint64_t v, uint8_t epoch)
{
	memset(pdu, 0, 32);
	uint32_t meta[5] = {HAKO_PDU_MAGIC, HAKO_PDU_VERSION, 24, 32, 32};
	memcpy(pdu, meta, sizeof(meta));
	memcpy(pdu + 24, &v, 8);
	assert_int_equal(hako_pdu_set_epoch(pdu, 32, epoch), 0);
}

/* Send pdu `name` = v on the source at time t (the bridge runs in this call). */
static void arrive_e(fx_t *f, hako_time_t t, const char *name, uint64_t v, uint8_t epoch)
{
	uint8_t pdu[32];
	fake_now = t;
	make_pdu(pdu, v, epoch);
	assert_int_equal(hako_endpoint_send_by_name(f->src, "R", name, pdu, sizeof(pdu)), 0);
}

static void arrive(fx_t *f, hako_time_t t, const char *name, uint64_t v)
{
	arrive_e(f, t, name, v, 0);
}

static int tick_at(fx_t *f, hako_time_t t)
{
	fake_now = t;
	return hako_bridge_tick(f->b);
}

/* The recorded sequence, space-separated, against the expected one. */
static void expect_seq(const rec_t *r, const char *want)
{
	char got[MAX_REC * 17] = "";
	for (int i = 0; i < atomic_load(&r->n) && i < MAX_REC; i++) {
		if (i > 0) {
			strcat(got, " ");
		}
		strcat(got, r->seq[i]);
	}
	assert_string_equal(got, want);
}

static hako_bridge_conn_stats_t stats(fx_t *f, size_t i)
{
	hako_bridge_conn_stats_t st;
	assert_int_equal(hako_bridge_get_stats(f->b, i, &st), 0);
	return st;
}

#define MS 1000

static const char *const ONLY_D1[] = {"d1", NULL};
static const char *const D1_D2[] = {"d1", "d2", NULL};

/* ---- policies ---- */

static void test_immediate(void **state)
{
	(void)state;
	fx_t f;
	fx_open(&f);
	size_t p = policy(&f.t, "imm", HAKO_BRIDGE_IMMEDIATE, 0, 0);
	size_t g = group(&f.t, "g", (const char *const[]){"a", "b", NULL});
	transfer(&f.t, connection(&f.t, "c1", "src", ONLY_D1, 0), g, p);
	fx_create(&f);
	assert_int_equal(hako_bridge_connection_count(f.b), 1);
	assert_int_equal(hako_bridge_next_due(f.b), -1);
	arrive(&f, 0, "a", 1);
	arrive(&f, 0, "b", 2);
	arrive(&f, 5, "a", 3);
	arrive(&f, 5, "c", 9); /* not in the group */
	expect_seq(&f.d1, "a1 b2 a3");
	expect_seq(&f.d2, "");
	assert_int_equal(tick_at(&f, 10), 0);
	hako_bridge_conn_stats_t st = stats(&f, 0);
	assert_string_equal(st.id, "c1");
	assert_int_equal(st.forwarded, 3);
	assert_int_equal(st.bytes, 96);
	assert_int_equal(st.dropped_policy + st.dropped_epoch + st.dropped_paused, 0);
	assert_int_equal(st.send_failed, 0);
	assert_int_equal(st.active, 1);
	assert_int_equal(hako_bridge_get_stats(f.b, 1, &st), HAKO_ENOENT);
	fx_close(&f);
}

static void test_atomic_group(void **state)
{
	(void)state;
	fx_t f;
	fx_open(&f);
	size_t p = policy(&f.t, "frame", HAKO_BRIDGE_IMMEDIATE, 1, 0);
	size_t g = group(&f.t, "g", (const char *const[]){"a", "b", "c", NULL});
	transfer(&f.t, connection(&f.t, "c1", "src", ONLY_D1, 0), g, p);
	fx_create(&f);
	arrive(&f, 0, "a", 1);
	arrive(&f, 0, "b", 1);
	expect_seq(&f.d1, ""); /* c missing: nothing */
	arrive(&f, 0, "c", 1);
	expect_seq(&f.d1, "a1 b1 c1");
	/* marks reset; arrival order does not matter, the latest value of a member is sent */
	arrive(&f, 1, "c", 2);
	arrive(&f, 1, "a", 2);
	arrive(&f, 1, "a", 3);
	expect_seq(&f.d1, "a1 b1 c1");
	arrive(&f, 1, "b", 3);
	expect_seq(&f.d1, "a1 b1 c1 a3 b3 c2");
	arrive(&f, 2, "a", 4);
	arrive(&f, 2, "b", 4);
	assert_int_equal(tick_at(&f, 1000 * MS), 0);
	expect_seq(&f.d1, "a1 b1 c1 a3 b3 c2");
	assert_int_equal(stats(&f, 0).forwarded, 6);
	fx_close(&f);
}

static void test_throttle(void **state)
{
	(void)state;
	fx_t f;
	fx_open(&f);
	size_t p = policy(&f.t, "thr", HAKO_BRIDGE_THROTTLE, 0, 100);
	size_t g = group(&f.t, "g", (const char *const[]){"a", NULL});
	transfer(&f.t, connection(&f.t, "c1", "src", ONLY_D1, 0), g, p);
	fx_create(&f);
	arrive(&f, 0 * MS, "a", 0);
	expect_seq(&f.d1, "a0");
	assert_int_equal(hako_bridge_next_due(f.b), -1);
	arrive(&f, 10 * MS, "a", 10);
	arrive(&f, 20 * MS, "a", 20);
	arrive(&f, 30 * MS, "a", 30);
	expect_seq(&f.d1, "a0");
	assert_int_equal(hako_bridge_next_due(f.b), 100 * MS);
	assert_int_equal(tick_at(&f, 99 * MS), 0);
	expect_seq(&f.d1, "a0");
	assert_int_equal(tick_at(&f, 100 * MS), 1); /* the trailing value: the last one */
	expect_seq(&f.d1, "a0 a30");
	assert_int_equal(hako_bridge_next_due(f.b), -1);
	assert_int_equal(tick_at(&f, 300 * MS), 0);
	hako_bridge_conn_stats_t st = stats(&f, 0);
	assert_int_equal(st.forwarded, 2);
	assert_int_equal(st.dropped_policy, 2); /* 10 and 20 */
	/* the window restarts at the trailing send (t=100) */
	arrive(&f, 150 * MS, "a", 150);
	expect_seq(&f.d1, "a0 a30");
	assert_int_equal(hako_bridge_next_due(f.b), 200 * MS);
	/* a late tick: an arrival after the window end sends itself, the pending one is dropped */
	arrive(&f, 210 * MS, "a", 210);
	expect_seq(&f.d1, "a0 a30 a210");
	assert_int_equal(stats(&f, 0).dropped_policy, 3);
	assert_int_equal(tick_at(&f, 400 * MS), 0);
	arrive(&f, 500 * MS, "a", 500);
	expect_seq(&f.d1, "a0 a30 a210 a500");
	fx_close(&f);
}

static void test_ticker(void **state)
{
	(void)state;
	fx_t f;
	fx_open(&f);
	size_t p = policy(&f.t, "tick", HAKO_BRIDGE_TICKER, 0, 50);
	size_t g = group(&f.t, "g", (const char *const[]){"a", NULL});
	transfer(&f.t, connection(&f.t, "c1", "src", ONLY_D1, 0), g, p);
	fx_create(&f);
	assert_int_equal(hako_bridge_next_due(f.b), 0); /* the first tick arms it */
	assert_int_equal(tick_at(&f, 0), 0);
	assert_int_equal(hako_bridge_next_due(f.b), 50 * MS);
	assert_int_equal(tick_at(&f, 50 * MS), 0); /* nothing arrived yet */
	arrive(&f, 60 * MS, "a", 7);
	expect_seq(&f.d1, ""); /* a ticker never sends on arrival */
	assert_int_equal(tick_at(&f, 99 * MS), 0);
	assert_int_equal(tick_at(&f, 100 * MS), 1);
	assert_int_equal(tick_at(&f, 120 * MS), 0);
	assert_int_equal(tick_at(&f, 150 * MS), 1); /* unchanged, sent again */
	arrive(&f, 160 * MS, "a", 8);
	arrive(&f, 170 * MS, "a", 9);
	assert_int_equal(tick_at(&f, 200 * MS), 1);
	expect_seq(&f.d1, "a7 a7 a9");
	/* far behind: one send, no burst, and the next one a whole interval later */
	assert_int_equal(tick_at(&f, 1000 * MS), 1);
	assert_int_equal(hako_bridge_next_due(f.b), 1050 * MS);
	assert_int_equal(tick_at(&f, 1049 * MS), 0);
	assert_int_equal(tick_at(&f, 1050 * MS), 1);
	expect_seq(&f.d1, "a7 a7 a9 a9 a9");
	assert_int_equal(stats(&f, 0).forwarded, 5);
	fx_close(&f);
}

/* Hakoniwa bug #14: one policy object shared by every PDU and destination made them share a
 * window. Here each (destination, PDU) has its own. */
static void test_instances_independent(void **state)
{
	(void)state;
	fx_t f;
	fx_open(&f);
	size_t p = policy(&f.t, "thr", HAKO_BRIDGE_THROTTLE, 0, 100);
	size_t g = group(&f.t, "g", (const char *const[]){"a", "b", NULL});
	transfer(&f.t, connection(&f.t, "c1", "src", D1_D2, 0), g, p);
	fx_create(&f);
	arrive(&f, 0, "a", 0);
	arrive(&f, 10 * MS, "b", 10); /* b's window is its own: sent at once */
	arrive(&f, 20 * MS, "a", 20);
	expect_seq(&f.d1, "a0 b10");
	expect_seq(&f.d2, "a0 b10");
	assert_int_equal(tick_at(&f, 100 * MS), 2); /* a20 to both destinations */
	arrive(&f, 105 * MS, "b", 105);
	expect_seq(&f.d1, "a0 b10 a20");
	assert_int_equal(hako_bridge_next_due(f.b), 110 * MS);
	assert_int_equal(tick_at(&f, 110 * MS), 2);
	expect_seq(&f.d1, "a0 b10 a20 b105");
	expect_seq(&f.d2, "a0 b10 a20 b105");
	hako_bridge_conn_stats_t st = stats(&f, 0);
	assert_int_equal(st.forwarded, 8);
	assert_int_equal(st.dropped_policy, 0);
	fx_close(&f);
}

/* Two connections over the same source PDU: each has its own policy and statistics. */
static void test_two_connections_same_source(void **state)
{
	(void)state;
	fx_t f;
	fx_open(&f);
	size_t imm = policy(&f.t, "imm", HAKO_BRIDGE_IMMEDIATE, 0, 0);
	size_t thr = policy(&f.t, "thr", HAKO_BRIDGE_THROTTLE, 0, 100);
	size_t g = group(&f.t, "g", (const char *const[]){"a", NULL});
	transfer(&f.t, connection(&f.t, "fast", "src", ONLY_D1, 0), g, imm);
	transfer(&f.t, connection(&f.t, "slow", "src", (const char *const[]){"d2", NULL}, 0), g,
	         thr);
	fx_create(&f);
	for (int i = 0; i < 4; i++) {
		arrive(&f, i * 10 * MS, "a", (uint64_t)i);
	}
	expect_seq(&f.d1, "a0 a1 a2 a3");
	expect_seq(&f.d2, "a0");
	assert_int_equal(hako_bridge_set_active(f.b, "fast", 0), 0);
	arrive(&f, 50 * MS, "a", 5);
	assert_int_equal(stats(&f, 0).dropped_paused, 1);
	assert_int_equal(stats(&f, 1).dropped_paused, 0);
	assert_int_equal(tick_at(&f, 100 * MS), 1);
	expect_seq(&f.d2, "a0 a5");
	assert_int_equal(stats(&f, 1).dropped_policy, 3);
	fx_close(&f);
}

/* ---- epochs ---- */

static void test_epoch_validation(void **state)
{
	(void)state;
	fx_t f;
	fx_open(&f);
	size_t p = policy(&f.t, "imm", HAKO_BRIDGE_IMMEDIATE, 0, 0);
	size_t g = group(&f.t, "g", (const char *const[]){"a", NULL});
	transfer(&f.t, connection(&f.t, "c1", "src", ONLY_D1, 1), g, p);
	fx_create(&f);
	uint8_t e = 99;
	assert_int_equal(hako_bridge_get_epoch(f.b, "c1", &e), 0);
	assert_int_equal(e, 0);
	arrive_e(&f, 0, "a", 1, 0);
	expect_seq(&f.d1, "a1");
	assert_int_equal(hako_bridge_bump_epoch(f.b, "c1", &e), 0);
	assert_int_equal(e, 1);
	arrive_e(&f, 0, "a", 2, 0); /* the old owner: dropped */
	expect_seq(&f.d1, "a1");
	assert_int_equal(stats(&f, 0).dropped_epoch, 1);
	arrive_e(&f, 0, "a", 3, 1);
	expect_seq(&f.d1, "a1 a3");
	/* no valid meta: dropped when validating */
	assert_int_equal(hako_endpoint_send_by_name(f.src, "R", "a", "not a pdu", 9), 0);
	uint8_t zeros[32] = {0};
	assert_int_equal(hako_endpoint_send_by_name(f.src, "R", "a", zeros, sizeof(zeros)), 0);
	expect_seq(&f.d1, "a1 a3");
	hako_bridge_conn_stats_t st = stats(&f, 0);
	assert_int_equal(st.dropped_epoch, 3);
	assert_int_equal(st.forwarded, 2);
	assert_int_equal(st.epoch, 1);
	/* set, wrap-around */
	assert_int_equal(hako_bridge_set_epoch(f.b, "c1", 255), 0);
	assert_int_equal(hako_bridge_bump_epoch(f.b, "c1", &e), 0);
	assert_int_equal(e, 0);
	arrive_e(&f, 0, "a", 4, 0);
	expect_seq(&f.d1, "a1 a3 a4");
	/* unknown connection */
	assert_int_equal(hako_bridge_set_epoch(f.b, "nope", 1), HAKO_ENOENT);
	assert_int_equal(hako_bridge_bump_epoch(f.b, "nope", &e), HAKO_ENOENT);
	assert_int_equal(hako_bridge_get_epoch(f.b, "nope", &e), HAKO_ENOENT);
	assert_int_equal(hako_bridge_set_active(f.b, "nope", 0), HAKO_ENOENT);
	fx_close(&f);
}

/* An RD follower: the old owner's epoch passes until the new owner's first PDU, then never;
 * the connection never goes back. */
static void test_epoch_follow(void **state)
{
	(void)state;
	fx_t f;
	fx_open(&f);
	size_t p = policy(&f.t, "imm", HAKO_BRIDGE_IMMEDIATE, 0, 0);
	size_t g = group(&f.t, "g", (const char *const[]){"a", NULL});
	transfer(&f.t, connection(&f.t, "c1", "src", ONLY_D1, 1), g, p);
	fx_create(&f);
	uint8_t e = 99;
	assert_int_equal(hako_bridge_follow_epoch(f.b, "c1", 4, 1, &e), 0);
	assert_int_equal(e, 4);
	arrive_e(&f, 0, "a", 1, 4); /* the old owner, before its commit point */
	arrive_e(&f, 0, "a", 2, 6); /* two ahead: never */
	arrive_e(&f, 0, "a", 3, 5); /* the new owner: moves the connection */
	arrive_e(&f, 0, "a", 4, 4); /* the old owner after that: dropped */
	arrive_e(&f, 0, "a", 5, 5);
	expect_seq(&f.d1, "a1 a3 a5");
	hako_bridge_conn_stats_t st = stats(&f, 0);
	assert_int_equal(st.epoch, 5);
	assert_int_equal(st.dropped_epoch, 2);
	/* A follower that still computes 4 (its world is before the commit point) does not move
	 * the connection back. */
	assert_int_equal(hako_bridge_follow_epoch(f.b, "c1", 4, 1, &e), 0);
	assert_int_equal(e, 5);
	arrive_e(&f, 0, "a", 6, 4);
	expect_seq(&f.d1, "a1 a3 a5");
	/* 255 is behind 5 (mod 256): only set_epoch goes there. Without next_ok only the epoch
	 * itself passes; forward across the wrap. */
	assert_int_equal(hako_bridge_follow_epoch(f.b, "c1", 255, 0, &e), 0);
	assert_int_equal(e, 5);
	assert_int_equal(hako_bridge_set_epoch(f.b, "c1", 254), 0);
	assert_int_equal(hako_bridge_follow_epoch(f.b, "c1", 255, 0, &e), 0);
	assert_int_equal(e, 255);
	arrive_e(&f, 0, "a", 7, 0);
	arrive_e(&f, 0, "a", 8, 255);
	expect_seq(&f.d1, "a1 a3 a5 a8");
	assert_int_equal(hako_bridge_follow_epoch(f.b, "c1", 255, 1, &e), 0);
	arrive_e(&f, 0, "a", 9, 0);
	expect_seq(&f.d1, "a1 a3 a5 a8 a9");
	assert_int_equal(stats(&f, 0).epoch, 0);
	/* set_epoch goes anywhere (a reset) and clears next_ok. */
	assert_int_equal(hako_bridge_set_epoch(f.b, "c1", 3), 0);
	arrive_e(&f, 0, "a", 10, 4);
	arrive_e(&f, 0, "a", 11, 3);
	expect_seq(&f.d1, "a1 a3 a5 a8 a9 a11");
	assert_int_equal(hako_bridge_follow_epoch(f.b, "nope", 1, 1, &e), HAKO_ENOENT);
	fx_close(&f);
}

static void test_epoch_not_validated(void **state)
{
	(void)state;
	fx_t f;
	fx_open(&f);
	size_t p = policy(&f.t, "imm", HAKO_BRIDGE_IMMEDIATE, 0, 0);
	size_t g = group(&f.t, "g", (const char *const[]){"a", NULL});
	transfer(&f.t, connection(&f.t, "c1", "src", ONLY_D1, 0), g, p);
	fx_create(&f);
	assert_int_equal(hako_bridge_bump_epoch(f.b, "c1", NULL), 0);
	arrive_e(&f, 0, "a", 1, 0);
	assert_int_equal(hako_endpoint_send_by_name(f.src, "R", "a", "not a pdu", 9), 0);
	assert_int_equal(stats(&f, 0).forwarded, 2);
	assert_int_equal(stats(&f, 0).dropped_epoch, 0);
	fx_close(&f);
}

static void test_epoch_atomic_and_stored(void **state)
{
	(void)state;
	fx_t f;
	fx_open(&f);
	size_t frame = policy(&f.t, "frame", HAKO_BRIDGE_IMMEDIATE, 1, 0);
	size_t tick = policy(&f.t, "tick", HAKO_BRIDGE_TICKER, 0, 50);
	size_t g = group(&f.t, "g", (const char *const[]){"a", "b", NULL});
	size_t gc = group(&f.t, "gc", (const char *const[]){"c", NULL});
	size_t c = connection(&f.t, "c1", "src", ONLY_D1, 1);
	transfer(&f.t, c, g, frame);
	transfer(&f.t, c, gc, tick);
	fx_create(&f);
	assert_int_equal(hako_bridge_set_epoch(f.b, "c1", 1), 0);
	/* one stale member drops the whole frame */
	arrive_e(&f, 0, "a", 1, 1);
	arrive_e(&f, 0, "b", 1, 0);
	arrive_e(&f, 0, "b", 2, 1);
	expect_seq(&f.d1, ""); /* a was dropped with the frame */
	arrive_e(&f, 0, "a", 3, 1);
	expect_seq(&f.d1, "a3 b2");
	assert_int_equal(stats(&f, 0).dropped_epoch, 1);
	/* a value stored before a bump is not resent after it */
	assert_int_equal(tick_at(&f, 0), 0);
	arrive_e(&f, 10 * MS, "c", 5, 1);
	assert_int_equal(tick_at(&f, 50 * MS), 1);
	assert_int_equal(hako_bridge_bump_epoch(f.b, "c1", NULL), 0);
	assert_int_equal(tick_at(&f, 100 * MS), 0);
	assert_int_equal(tick_at(&f, 150 * MS), 0);
	expect_seq(&f.d1, "a3 b2 c5");
	assert_int_equal(stats(&f, 0).dropped_epoch, 2);
	/* an atomic frame half-marked before a bump */
	arrive_e(&f, 160 * MS, "a", 6, 2);
	assert_int_equal(hako_bridge_set_epoch(f.b, "c1", 3), 0);
	arrive_e(&f, 160 * MS, "b", 6, 3);
	expect_seq(&f.d1, "a3 b2 c5");
	assert_int_equal(stats(&f, 0).dropped_epoch, 3);
	fx_close(&f);
}

/* ---- control and failures ---- */

static void test_pause_resume(void **state)
{
	(void)state;
	fx_t f;
	fx_open(&f);
	size_t imm = policy(&f.t, "imm", HAKO_BRIDGE_IMMEDIATE, 0, 0);
	size_t tick = policy(&f.t, "tick", HAKO_BRIDGE_TICKER, 0, 50);
	size_t ga = group(&f.t, "ga", (const char *const[]){"a", NULL});
	size_t gb = group(&f.t, "gb", (const char *const[]){"b", NULL});
	size_t c = connection(&f.t, "c1", "src", ONLY_D1, 0);
	transfer(&f.t, c, ga, imm);
	transfer(&f.t, c, gb, tick);
	fx_create(&f);
	assert_int_equal(tick_at(&f, 0), 0);
	arrive(&f, 0, "a", 1);
	arrive(&f, 0, "b", 1);
	assert_int_equal(tick_at(&f, 50 * MS), 1);
	expect_seq(&f.d1, "a1 b1");
	assert_int_equal(hako_bridge_set_active(f.b, "c1", 0), 0);
	assert_int_equal(stats(&f, 0).active, 0);
	arrive(&f, 60 * MS, "a", 2);
	arrive(&f, 60 * MS, "b", 2);
	assert_int_equal(tick_at(&f, 100 * MS), 0); /* paused: the ticker is silent */
	assert_int_equal(tick_at(&f, 150 * MS), 0);
	expect_seq(&f.d1, "a1 b1");
	assert_int_equal(hako_bridge_next_due(f.b), -1);
	assert_int_equal(stats(&f, 0).dropped_paused, 2);
	assert_int_equal(hako_bridge_set_active(f.b, "c1", 1), 0);
	arrive(&f, 160 * MS, "a", 3);
	/* resumed late: one send of the value stored before the pause, then every interval */
	assert_int_equal(tick_at(&f, 170 * MS), 1);
	assert_int_equal(hako_bridge_next_due(f.b), 220 * MS);
	expect_seq(&f.d1, "a1 b1 a3 b1");
	hako_bridge_conn_stats_t st = stats(&f, 0);
	assert_int_equal(st.forwarded, 4);
	assert_int_equal(st.active, 1);
	fx_close(&f);
}

static void test_pause_counts(void **state)
{
	(void)state;
	fx_t f;
	fx_open(&f);
	size_t imm = policy(&f.t, "imm", HAKO_BRIDGE_IMMEDIATE, 0, 0);
	size_t frame = policy(&f.t, "frame", HAKO_BRIDGE_IMMEDIATE, 1, 0);
	size_t ga = group(&f.t, "ga", (const char *const[]){"a", NULL});
	size_t gbc = group(&f.t, "gbc", (const char *const[]){"b", "c", NULL});
	transfer(&f.t, connection(&f.t, "c1", "src", D1_D2, 0), ga, imm);
	transfer(&f.t, connection(&f.t, "c2", "src", ONLY_D1, 0), gbc, frame);
	fx_create(&f);
	assert_int_equal(hako_bridge_set_active(f.b, "c1", 0), 0);
	arrive(&f, 0, "a", 1); /* counted once, not once per destination */
	assert_int_equal(stats(&f, 0).dropped_paused, 1);
	assert_int_equal(hako_bridge_set_active(f.b, "c1", 1), 0);
	arrive(&f, 0, "a", 2);
	expect_seq(&f.d1, "a2");
	expect_seq(&f.d2, "a2");
	/* a frame that straddles a pause is dropped */
	arrive(&f, 0, "b", 3);
	assert_int_equal(hako_bridge_set_active(f.b, "c2", 0), 0);
	arrive(&f, 0, "c", 3);
	assert_int_equal(hako_bridge_set_active(f.b, "c2", 1), 0);
	arrive(&f, 0, "c", 4);
	expect_seq(&f.d1, "a2");
	arrive(&f, 0, "b", 4);
	expect_seq(&f.d1, "a2 b4 c4");
	hako_bridge_conn_stats_t st = stats(&f, 1);
	assert_int_equal(st.dropped_paused, 1);
	assert_int_equal(st.forwarded, 2);
	assert_int_equal(st.active, 1);
	fx_close(&f);
}

static void test_failing_destination(void **state)
{
	(void)state;
	fx_t f;
	fx_open(&f);
	size_t p = policy(&f.t, "imm", HAKO_BRIDGE_IMMEDIATE, 0, 0);
	size_t g = group(&f.t, "g", (const char *const[]){"a", NULL});
	transfer(&f.t, connection(&f.t, "c1", "src", (const char *const[]){"bad", "d1", NULL}, 0),
	         g, p);
	fx_create(&f);
	arrive(&f, 0, "a", 1);
	arrive(&f, 0, "a", 2);
	expect_seq(&f.d1, "a1 a2");
	hako_bridge_conn_stats_t st = stats(&f, 0);
	assert_int_equal(st.forwarded, 2);
	assert_int_equal(st.send_failed, 2);
	assert_int_equal(st.bytes, 64);
	fx_close(&f);
}

/* A source without a pdudef (the loader accepts it): names resolve on the destinations. */
static void test_source_without_pdudef(void **state)
{
	(void)state;
	fx_t f;
	fx_open(&f);
	size_t p = policy(&f.t, "imm", HAKO_BRIDGE_IMMEDIATE, 0, 0);
	size_t g = group(&f.t, "g", (const char *const[]){"b", NULL});
	transfer(&f.t, connection(&f.t, "c1", "nopdu", ONLY_D1, 0), g, p);
	fx_create(&f);
	hako_pdu_key_t k;
	memset(&k, 0, sizeof(k));
	snprintf(k.robot, sizeof(k.robot), "R");
	k.channel_id = 2;
	uint8_t pdu[32];
	make_pdu(pdu, 7, 0);
	assert_int_equal(hako_endpoint_send(hako_endpoint_set_get(f.eps, "nopdu"), &k, pdu, 32), 0);
	expect_seq(&f.d1, "b7");
	fx_close(&f);
}

/* A connection without destinations (Hakoniwa's monitor connections): the bridge is built and
 * forwards nothing; the other connection of the same source is served. */
static void test_monitor_only(void **state)
{
	(void)state;
	fx_t f;
	fx_open(&f);
	size_t p = policy(&f.t, "imm", HAKO_BRIDGE_IMMEDIATE, 0, 0);
	size_t g = group(&f.t, "g", (const char *const[]){"a", NULL});
	static const char *const NONE[] = {NULL};
	transfer(&f.t, connection(&f.t, "monitor", "src", NONE, 0), g, p);
	transfer(&f.t, connection(&f.t, "c1", "src", ONLY_D1, 0), g, p);
	fx_create(&f);
	arrive(&f, 0, "a", 5);
	expect_seq(&f.d1, "a5");
	expect_seq(&f.d2, "");
	assert_int_equal(stats(&f, 0).forwarded, 0);
	assert_int_equal(stats(&f, 1).forwarded, 1);
	fx_close(&f);
}

/* A group member no pdudef has (a file loaded as Hakoniwa loads it): strict, the bridge is not
 * built and says why; otherwise the member is skipped and the others are forwarded, and an
 * atomic transfer that could never complete is skipped whole. */
static void test_member_missing(void **state)
{
	(void)state;
	fx_t f;
	fx_open(&f);
	size_t p = policy(&f.t, "imm", HAKO_BRIDGE_IMMEDIATE, 0, 0);
	size_t pa = policy(&f.t, "atomic", HAKO_BRIDGE_IMMEDIATE, 1, 0);
	size_t g = group(&f.t, "g", (const char *const[]){"a", "nosuch", "b", NULL});
	size_t c = connection(&f.t, "c1", "src", ONLY_D1, 0);
	transfer(&f.t, c, g, p);
	transfer(&f.t, connection(&f.t, "c2", "src", (const char *const[]){"d2", NULL}, 0), g, pa);
	f.t.cfg.strict = 1;
	hako_error_t err;
	assert_int_equal(hako_bridge_create(&f.t.cfg, f.eps, fake_clock, NULL, &f.b, &err),
	                 HAKO_ECONFIG);
	assert_null(f.b);
	assert_non_null(strstr(err.message, "member 'm_nosuch' (R/nosuch)"));
	f.t.cfg.strict = 0;
	fx_create(&f);
	arrive(&f, 0, "a", 1);
	arrive(&f, 0, "b", 2);
	expect_seq(&f.d1, "a1 b2");
	expect_seq(&f.d2, ""); /* the atomic transfer was skipped */
	fx_close(&f);
}

/* Arrivals from several threads while another ticks (wall clock): nothing lost, nothing
 * counted twice. The sanitizer builds look for races and leaks. */
#define SENDERS 2
#define SENDS   2000

static hako_time_t wall(void *user)
{
	(void)user;
	return hako_now_usec();
}

static void *sender(void *arg)
{
	fx_t *f = arg;
	uint8_t pdu[32];
	for (uint64_t i = 0; i < SENDS; i++) {
		make_pdu(pdu, i, 0);
		hako_endpoint_send_by_name(f->src, "R", i % 2 ? "b" : "a", pdu, sizeof(pdu));
	}
	return NULL;
}

static void test_concurrent_arrivals(void **state)
{
	(void)state;
	fx_t f;
	fx_open(&f);
	size_t imm = policy(&f.t, "imm", HAKO_BRIDGE_IMMEDIATE, 0, 0);
	size_t thr = policy(&f.t, "thr", HAKO_BRIDGE_THROTTLE, 0, 1);
	size_t ga = group(&f.t, "ga", (const char *const[]){"a", NULL});
	size_t gb = group(&f.t, "gb", (const char *const[]){"b", NULL});
	transfer(&f.t, connection(&f.t, "c1", "src", ONLY_D1, 0), ga, imm);
	transfer(&f.t, connection(&f.t, "c2", "src", (const char *const[]){"d2", NULL}, 0), gb,
	         thr);
	hako_error_t err;
	assert_int_equal(hako_bridge_create(&f.t.cfg, f.eps, wall, NULL, &f.b, &err), 0);
	pthread_t th[SENDERS];
	for (int i = 0; i < SENDERS; i++) {
		assert_int_equal(pthread_create(&th[i], NULL, sender, &f), 0);
	}
	for (int i = 0; i < 200; i++) {
		hako_bridge_tick(f.b);
		if (i % 50 == 0) {
			hako_bridge_set_epoch(f.b, "c2", 0); /* control calls race too */
			hako_bridge_next_due(f.b);
		}
		htu_sleep_usec(100);
	}
	for (int i = 0; i < SENDERS; i++) {
		pthread_join(th[i], NULL);
	}
	htu_sleep_usec(2000); /* past the last window */
	hako_bridge_tick(f.b);
	hako_bridge_conn_stats_t a = stats(&f, 0), b = stats(&f, 1);
	assert_int_equal(a.forwarded, SENDERS * SENDS / 2);
	assert_int_equal(atomic_load(&f.d1.n), SENDERS * SENDS / 2);
	assert_int_equal(b.forwarded + b.dropped_policy, SENDERS * SENDS / 2);
	assert_int_equal(atomic_load(&f.d2.n), (int)b.forwarded);
	assert_int_equal(hako_bridge_next_due(f.b), -1);
	fx_close(&f);
}

/* ---- create errors, destroy contract ---- */

static void expect_create_error(fx_t *f, int code, const char *needle)
{
	hako_error_t err;
	hako_bridge_t *b = (hako_bridge_t *)&err; /* must be reset to NULL */
	assert_int_equal(hako_bridge_create(&f->t.cfg, f->eps, fake_clock, NULL, &b, &err), code);
	assert_null(b);
	if (strstr(err.message, needle) == NULL) {
		fail_msg("'%s' does not mention '%s'", err.message, needle);
	}
}

static void test_create_errors(void **state)
{
	(void)state;
	fx_t f;
	fx_open(&f);
	size_t p = policy(&f.t, "imm", HAKO_BRIDGE_IMMEDIATE, 0, 0);
	size_t g = group(&f.t, "g", (const char *const[]){"a", NULL});
	size_t bad = group(&f.t, "gx", (const char *const[]){"b", "zz", NULL});
	size_t c = connection(&f.t, "c1", "nosuch", ONLY_D1, 0);
	transfer(&f.t, c, g, p);
	expect_create_error(&f, HAKO_ECONFIG, "connection 'c1': source endpoint 'nosuch'");
	snprintf(f.t.conn[c].source, HAKO_NAME_MAX, "src");
	snprintf(f.t.dests[c][0], HAKO_NAME_MAX, "gone");
	expect_create_error(&f, HAKO_ECONFIG, "destination endpoint 'gone'");
	snprintf(f.t.dests[c][0], HAKO_NAME_MAX, "d1");
	transfer(&f.t, c, bad, p);
	f.t.cfg.strict = 1; /* loaded with HAKO_BRIDGE_LOAD_STRICT (test_member_missing: not) */
	expect_create_error(&f, HAKO_ECONFIG,
	                    "connection 'c1': group 'gx' member 'm_zz' (R/zz): not in the pdudef "
	                    "of source endpoint 'src'");
	f.t.conn[c].transfers[1].policy = 7;
	expect_create_error(&f, HAKO_EINVAL, "policy or group");
	f.t.conn[c].transfer_count = 1;
	f.t.cfg.strict = 0;
	/* two connections of one node with one id: the control calls could not tell them apart */
	size_t twin = connection(&f.t, "c1", "src", ONLY_D1, 0);
	transfer(&f.t, twin, g, p);
	expect_create_error(&f, HAKO_EINVAL,
	                    "connection 'c1' is given twice (connections 0 and 1)");
	hako_bridge_t *b = NULL;
	assert_int_equal(hako_bridge_create(NULL, f.eps, fake_clock, NULL, &b, NULL), HAKO_EINVAL);
	assert_int_equal(hako_bridge_create(&f.t.cfg, f.eps, NULL, NULL, &b, NULL), HAKO_EINVAL);
	/* a failed create left no live subscription behind: the bus still works */
	arrive(&f, 0, "a", 1);
	expect_seq(&f.d1, "");
	hako_bridge_destroy(NULL);
	assert_int_equal(hako_bridge_tick(NULL), HAKO_EINVAL);
	assert_int_equal(hako_bridge_next_due(NULL), -1);
	assert_int_equal(hako_bridge_connection_count(NULL), 0);
	fx_close(&f);
}

static void test_destroy_then_arrivals(void **state)
{
	(void)state;
	fx_t f;
	fx_open(&f);
	/* With HAKO_CACHE_STORE_READ the source stores a PDU only when nobody subscribes to it:
	 * what shows whether the bridge's subscriptions are still there. */
	assert_int_equal(hako_endpoint_set_store(f.src, HAKO_CACHE_STORE_READ), 0);
	size_t p = policy(&f.t, "thr", HAKO_BRIDGE_THROTTLE, 0, 100);
	size_t g = group(&f.t, "g", (const char *const[]){"a", "b", "c", NULL});
	transfer(&f.t, connection(&f.t, "c1", "src", D1_D2, 0), g, p);
	fx_create(&f);
	arrive(&f, 0, "a", 1);
	hako_endpoint_stats_t st;
	hako_endpoint_get_stats(f.src, &st);
	assert_int_equal(st.frames_in, 1);
	hako_bridge_destroy(f.b);
	f.b = NULL;
	/* destroy ended the subscriptions: the source stores its PDUs again, nothing is
	 * forwarded, nothing freed is touched (the sanitizer build checks) */
	arrive(&f, 200 * MS, "a", 2);
	arrive(&f, 200 * MS, "b", 2);
	expect_seq(&f.d1, "a1");
	uint8_t pdu[32];
	size_t len = 0;
	assert_int_equal(hako_endpoint_recv_by_name(f.src, "R", "b", pdu, sizeof(pdu), &len), 0);
	uint64_t v = 0;
	memcpy(&v, pdu + HAKO_PDU_META_SIZE, sizeof(v));
	assert_int_equal(v, 2);
	/* a new bridge over the same endpoints */
	fx_create(&f);
	arrive(&f, 300 * MS, "b", 3);
	expect_seq(&f.d1, "a1 b3");
	fx_close(&f);
}

/* Destroy while two threads send on the source at full rate: once it returns no arrival runs
 * in the bridge any more (the destinations' counts stay put while the senders go on), and
 * nothing freed is touched (the sanitizer builds check). */
typedef struct hammer {
	fx_t *f;
	atomic_int stop;
	_Atomic uint64_t sent;
} hammer_t;

static void *hammer_main(void *arg)
{
	hammer_t *h = arg;
	uint8_t pdu[32];
	for (uint64_t i = 0; !atomic_load(&h->stop); i++) {
		make_pdu(pdu, i, 0);
		hako_endpoint_send_by_name(h->f->src, "R", i % 2 ? "b" : "a", pdu, sizeof(pdu));
		atomic_fetch_add(&h->sent, 1);
	}
	return NULL;
}

static void test_destroy_while_arriving(void **state)
{
	(void)state;
	fx_t f;
	fx_open(&f);
	size_t p = policy(&f.t, "imm", HAKO_BRIDGE_IMMEDIATE, 0, 0);
	size_t g = group(&f.t, "g", (const char *const[]){"a", "b", NULL});
	transfer(&f.t, connection(&f.t, "c1", "src", D1_D2, 0), g, p);
	hako_error_t err;
	assert_int_equal(hako_bridge_create(&f.t.cfg, f.eps, wall, NULL, &f.b, &err), 0);
	hammer_t h = {.f = &f};
	pthread_t th[SENDERS];
	for (int i = 0; i < SENDERS; i++) {
		assert_int_equal(pthread_create(&th[i], NULL, hammer_main, &h), 0);
	}
	int ok;
	HTU_WAIT_UNTIL(ok, atomic_load(&f.d1.n) > 1000, HTU_TIMEOUT_USEC);
	assert_true(ok);
	hako_bridge_destroy(f.b);
	f.b = NULL;
	int d1 = atomic_load(&f.d1.n), d2 = atomic_load(&f.d2.n);
	uint64_t sent = atomic_load(&h.sent);
	HTU_WAIT_UNTIL(ok, atomic_load(&h.sent) > sent + 10000, HTU_TIMEOUT_USEC);
	assert_true(ok);
	atomic_store(&h.stop, 1);
	for (int i = 0; i < SENDERS; i++) {
		pthread_join(th[i], NULL);
	}
	assert_int_equal(atomic_load(&f.d1.n), d1);
	assert_int_equal(atomic_load(&f.d2.n), d2);
	fx_close(&f);
}

/* A queue source (depth 4) whose PDUs only the bridge takes, as hako-bridge opens it
 * (HAKO_CACHE_STORE_READ): 10,000 forwarded, none stored, none counted as a drop. */
static void test_forward_without_storing(void **state)
{
	(void)state;
	fx_t f;
	fx_open(&f);
	hako_endpoint_t *q = hako_endpoint_set_get(f.eps, "qsrc");
	assert_non_null(q);
	assert_int_equal(hako_endpoint_set_store(q, HAKO_CACHE_STORE_READ), 0);
	size_t p = policy(&f.t, "imm", HAKO_BRIDGE_IMMEDIATE, 0, 0);
	size_t g = group(&f.t, "g", (const char *const[]){"a", NULL});
	transfer(&f.t, connection(&f.t, "c1", "qsrc", ONLY_D1, 0), g, p);
	fx_create(&f);
	uint8_t pdu[32];
	for (uint64_t i = 0; i < 10000; i++) {
		make_pdu(pdu, i, 0);
		assert_int_equal(hako_endpoint_send_by_name(q, "R", "a", pdu, sizeof(pdu)), 0);
	}
	assert_int_equal(stats(&f, 0).forwarded, 10000);
	assert_int_equal(atomic_load(&f.d1.n), 10000);
	hako_endpoint_stats_t st;
	hako_endpoint_get_stats(q, &st);
	assert_int_equal(st.frames_in, 10000);
	assert_int_equal(st.recv_dropped, 0);
	size_t len = 0;
	assert_int_equal(hako_endpoint_recv_by_name(q, "R", "a", pdu, sizeof(pdu), &len),
	                 HAKO_EAGAIN);
	fx_close(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_immediate),
	    cmocka_unit_test(test_atomic_group),
	    cmocka_unit_test(test_throttle),
	    cmocka_unit_test(test_ticker),
	    cmocka_unit_test(test_monitor_only),
	    cmocka_unit_test(test_member_missing),
	    cmocka_unit_test(test_instances_independent),
	    cmocka_unit_test(test_two_connections_same_source),
	    cmocka_unit_test(test_epoch_validation),
	    cmocka_unit_test(test_epoch_follow),
	    cmocka_unit_test(test_epoch_not_validated),
	    cmocka_unit_test(test_epoch_atomic_and_stored),
	    cmocka_unit_test(test_pause_resume),
	    cmocka_unit_test(test_pause_counts),
	    cmocka_unit_test(test_failing_destination),
	    cmocka_unit_test(test_source_without_pdudef),
	    cmocka_unit_test(test_concurrent_arrivals),
	    cmocka_unit_test(test_create_errors),
	    cmocka_unit_test(test_destroy_then_arrivals),
	    cmocka_unit_test(test_destroy_while_arriving),
	    cmocka_unit_test(test_forward_without_storing),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
