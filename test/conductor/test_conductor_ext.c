/* The conductor's extension seam (hako/conductor_ext.h) with an extension that is not RD-Full:
 * a probe that counts its ops and checks the seam's promises in a live federation (a server
 * and a client node in this process, each its own domain and master, one stepping asset each):
 *   - a message sent with hako_conductor_ext_send_ordered from before_publish reaches the
 *     server before the world time the client sends after it (the probe sends its world time
 *     there, the server checks each peer_time against what it had);
 *   - joined, peer_time, tick, on_message (both ways, with the sender named), a second part;
 *   - a tool's session: answered by the extension (peer NULL), refused by the conductor for an
 *     extension the node does not run;
 *   - start: ids checked, a failing open fails the start and closes the ones opened, and a
 *     file with rd_config_path is refused by hako_conductor_node_start. */
#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "hako/conductor.h"
#include "hako/conductor_ext.h"
#include "hako/domain.h"
#include "hako_test_util.h"

#define PROBE_ID      0x7e57
#define DELTA         1000
#define DMAX          4000
#define PAYLOAD_BYTES 100000
#define WAIT_USEC     20000000

typedef struct probe {
	hako_conductor_node_t *node;
	int server;
	hako_domain_t *dom;
	_Atomic int opened, closed, ticks, joined, peer_times, messages, tool_messages;
	_Atomic int64_t last_sent;     /* client: the last world time sent ordered */
	_Atomic int64_t max_ordered;   /* server: the highest world time received ordered */
	_Atomic int violations;        /* server: a peer time ahead of every ordered message */
	_Atomic int64_t violation_at;  /* the first one's peer time */
	_Atomic int hello_from_server; /* client: the server's message on joined came */
	_Atomic int payload_ok;        /* server: the second part came whole */
	_Atomic int payload_sent;
	char joined_peer[HAKO_CONDUCTOR_ID_MAX];
	char msg_peer[HAKO_CONDUCTOR_ID_MAX];
} probe_t;

static probe_t g_probe[2]; /* 0: server, 1: client */
static _Atomic int g_fail_open;

static int probe_open(hako_conductor_node_t *node, void **state, hako_error_t *err)
{
	if (atomic_load(&g_fail_open)) {
		return hako_error_set(err, HAKO_ECONFIG, "probe", 0, 0,
		                      "the probe refuses to open");
	}
	const hako_conductor_config_t *c = hako_conductor_node_config(node);
	probe_t *p = &g_probe[c->role == HAKO_CONDUCTOR_SERVER ? 0 : 1];
	p->node = node;
	p->server = c->role == HAKO_CONDUCTOR_SERVER;
	p->dom = hako_conductor_node_domain(node);
	atomic_fetch_add(&p->opened, 1);
	*state = p;
	return 0;
}

static void probe_close(void *state)
{
	probe_t *p = state;
	atomic_fetch_add(&p->closed, 1);
}

static void probe_joined(void *state, const char *peer)
{
	probe_t *p = state;
	snprintf(p->joined_peer, sizeof(p->joined_peer), "%s", peer);
	atomic_fetch_add(&p->joined, 1);
	int r = hako_conductor_ext_send(p->node, PROBE_ID, peer, "hello", 5, NULL, 0);
	if (r != 0) {
		fprintf(stderr, "probe: send to %s on joined: %s\n", peer, hako_strerror(r));
	}
}

static void probe_on_message(void *state, const hako_conductor_ext_msg_t *m)
{
	probe_t *p = state;
	atomic_fetch_add(&p->messages, 1);
	if (m->peer == NULL) { /* a tool: answer "pong:" + what it said */
		atomic_fetch_add(&p->tool_messages, 1);
		char out[HAKO_CONDUCTOR_EXT_BODY_MAX];
		int n = snprintf(out, sizeof(out), "pong:%.*s", (int)m->len, (const char *)m->body);
		hako_conductor_ext_reply(p->node, m, out, (size_t)n);
		return;
	}
	snprintf(p->msg_peer, sizeof(p->msg_peer), "%s", m->peer);
	if (!p->server) {
		if (m->len == 5 && memcmp(m->body, "hello", 5) == 0) {
			atomic_store(&p->hello_from_server, 1);
		}
		return;
	}
	if (m->len == sizeof(int64_t)) {
		int64_t w;
		memcpy(&w, m->body, sizeof(w));
		if (w > atomic_load(&p->max_ordered)) {
			atomic_store(&p->max_ordered, w);
		}
	}
	if (m->payload != NULL) {
		const uint8_t *b = m->payload;
		int ok = m->payload_len == PAYLOAD_BYTES;
		for (size_t i = 0; ok && i < m->payload_len; i++) {
			ok = b[i] == (uint8_t)(i * 7);
		}
		atomic_store(&p->payload_ok, ok ? 1 : -1);
	}
}

static void probe_tick(void *state)
{
	probe_t *p = state;
	atomic_fetch_add(&p->ticks, 1);
}

static void probe_peer_time(void *state, const char *peer, hako_time_t world)
{
	probe_t *p = state;
	(void)peer;
	atomic_fetch_add(&p->peer_times, 1);
	/* The client sent its world time w (>= the time it then published) ordered, before that
	 * time: a peer time above every w received means the order was not kept. */
	if (p->server && world > 0 && world > atomic_load(&p->max_ordered)) {
		if (atomic_fetch_add(&p->violations, 1) == 0) {
			atomic_store(&p->violation_at, world);
		}
	}
}

static void probe_before_publish(void *state)
{
	probe_t *p = state;
	if (p->server) {
		return;
	}
	int64_t w = hako_domain_world_time(p->dom);
	if (w > atomic_load(&p->last_sent) &&
	    hako_conductor_ext_send_ordered(p->node, PROBE_ID, &w, sizeof(w), NULL, 0) == 0) {
		atomic_store(&p->last_sent, w);
	}
	if (w > 100000 && !atomic_load(&p->payload_sent)) {
		static uint8_t big[PAYLOAD_BYTES];
		for (size_t i = 0; i < sizeof(big); i++) {
			big[i] = (uint8_t)(i * 7);
		}
		if (hako_conductor_ext_send_ordered(p->node, PROBE_ID, "big", 3, big,
		                                    sizeof(big)) == 0) {
			atomic_store(&p->payload_sent, 1);
		}
	}
}

static const hako_conductor_ext_ops_t probe_ops = {
    .name = "probe",
    .id = PROBE_ID,
    .payload_max = 1u << 20,
    .open = probe_open,
    .close = probe_close,
    .joined = probe_joined,
    .on_message = probe_on_message,
    .tick = probe_tick,
    .peer_time = probe_peer_time,
    .before_publish = probe_before_publish,
};

/* A second extension whose only op is open (the failing-open case). */
static _Atomic int g_other_closed;
static int other_open(hako_conductor_node_t *node, void **state, hako_error_t *err)
{
	(void)node;
	(void)err;
	*state = NULL;
	return 0;
}
static void other_close(void *state)
{
	(void)state;
	atomic_fetch_add(&g_other_closed, 1);
}
static const hako_conductor_ext_ops_t other_ops = {
    .name = "other", .id = 2, .open = other_open, .close = other_close};

/* ---- the federation in this process ---- */

typedef struct side {
	char domain[HAKO_NAME_MAX];
	hako_domain_t *dom;
	hako_master_t *master;
	hako_conductor_config_t cfg;
	hako_conductor_node_t *node;
	hako_member_t *asset;
	pthread_t thread;
	int running;
} side_t;

static side_t S[2];
static char g_ctl[128], g_tim[128];

static void fill_config(hako_conductor_config_t *c, int server)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->path, sizeof(c->path), "test_conductor_ext:%s", server ? "srv" : "cli");
	c->role = server ? HAKO_CONDUCTOR_SERVER : HAKO_CONDUCTOR_CLIENT;
	snprintf(c->node_id, sizeof(c->node_id), "%s", server ? "srv-01" : "cli-01");
	snprintf(c->server_id, sizeof(c->server_id), "srv-01");
	if (server) {
		c->client_count = 1;
		snprintf(c->clients[0], sizeof(c->clients[0]), "cli-01");
	}
	c->delta_usec = DELTA;
	c->max_delay_usec = DMAX;
	c->publish_mode = HAKO_PUBLISH_IMMEDIATE;
	c->publish_interval_usec = DELTA;
	snprintf(c->control_address, sizeof(c->control_address), "%s", g_ctl);
	snprintf(c->time_address, sizeof(c->time_address), "%s", g_tim);
	c->heartbeat_ms = 100;
	c->peer_timeout_ms = 5000;
	c->auth = HAKO_CONDUCTOR_AUTH_NONE; /* ipc:// is loopback */
	c->config_hash = 0x5eed;
}

static void *asset_main(void *arg)
{
	side_t *s = arg;
	int ev = 0;
	if (hako_member_wait_event(s->asset, WAIT_USEC, &ev) != 0 || ev != HAKO_EVENT_START) {
		return NULL;
	}
	hako_member_ack(s->asset, HAKO_EVENT_START);
	while (hako_member_step_wait(s->asset) == 0) {
		hako_member_step_done(s->asset);
	}
	if (hako_member_wait_event(s->asset, WAIT_USEC, &ev) == 0 && ev == HAKO_EVENT_STOP) {
		hako_member_ack(s->asset, HAKO_EVENT_STOP);
	}
	return NULL;
}

static void side_open(side_t *s, int server)
{
	snprintf(s->domain, sizeof(s->domain), "t-ext_%s-%d", server ? "srv" : "cli",
	         (int)getpid());
	hako_domain_remove(s->domain);
	hako_domain_config_t dc;
	hako_domain_config_default(&dc);
	dc.max_assets = 8;
	dc.max_channels = 8;
	dc.arena_bytes = 1u << 20;
	assert_int_equal(hako_domain_create(s->domain, &dc, &s->dom), 0);
	hako_master_config_t mc = {DELTA, DMAX, 0.0};
	assert_int_equal(hako_master_start(s->dom, &mc, &s->master), 0);
	fill_config(&s->cfg, server);
	snprintf(s->cfg.domain, sizeof(s->cfg.domain), "%s", s->domain);
}

static void side_close(side_t *s)
{
	if (s->running) {
		pthread_join(s->thread, NULL);
		s->running = 0;
	}
	hako_member_unregister(s->asset);
	s->asset = NULL;
	hako_conductor_node_stop(s->node);
	s->node = NULL;
	hako_master_stop(s->master);
	s->master = NULL;
	if (s->dom != NULL) {
		hako_domain_close(s->dom);
		s->dom = NULL;
		hako_domain_remove(s->domain);
	}
}

static int setup(void **state)
{
	(void)state;
	memset(g_probe, 0, sizeof(g_probe));
	atomic_store(&g_fail_open, 0);
	snprintf(g_ctl, sizeof(g_ctl), "ipc:///tmp/hako-t-ext-%d-ctl", (int)getpid());
	snprintf(g_tim, sizeof(g_tim), "ipc:///tmp/hako-t-ext-%d-tim", (int)getpid());
	side_open(&S[0], 1);
	side_open(&S[1], 0);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	side_close(&S[1]);
	side_close(&S[0]);
	unlink(g_ctl + strlen("ipc://"));
	unlink(g_tim + strlen("ipc://"));
	return 0;
}

static int client_joined(void)
{
	hako_conductor_peer_stats_t st[1];
	int n = 0;
	return hako_conductor_node_stats(S[0].node, st, 1, &n) == 0 && n == 1 && st[0].joined;
}

static void test_live(void **state)
{
	(void)state;
	const hako_conductor_ext_ops_t *exts[] = {&probe_ops};
	hako_error_t err;
	for (int i = 0; i < 2; i++) {
		if (hako_conductor_node_start_ext(&S[i].cfg, S[i].dom, exts, 1, &S[i].node, &err) !=
		    0) {
			char line[1600];
			fail_msg("%s", hako_error_format(&err, line, sizeof(line)));
		}
		assert_int_equal(
		    hako_member_register(S[i].dom, i == 0 ? "a-srv" : "a-cli", DELTA, &S[i].asset),
		    0);
		assert_int_equal(pthread_create(&S[i].thread, NULL, asset_main, &S[i]), 0);
		S[i].running = 1;
	}
	assert_int_equal(atomic_load(&g_probe[0].opened), 1);
	assert_int_equal(atomic_load(&g_probe[1].opened), 1);
	int ok;
	HTU_WAIT_UNTIL(ok, client_joined(), WAIT_USEC);
	assert_true(ok);
	HTU_WAIT_UNTIL(ok, atomic_load(&g_probe[1].hello_from_server), WAIT_USEC);
	assert_true(ok);
	assert_string_equal(g_probe[0].joined_peer, "cli-01");
	assert_string_equal(g_probe[1].msg_peer, "srv-01");

	assert_int_equal(hako_domain_start(S[0].dom), 0);
	HTU_WAIT_UNTIL(ok,
	               hako_domain_world_time(S[1].dom) >= 300000 &&
	                   atomic_load(&g_probe[0].payload_ok) != 0,
	               WAIT_USEC);
	assert_true(ok);
	assert_int_equal(atomic_load(&g_probe[0].payload_ok), 1);
	assert_string_equal(g_probe[0].msg_peer, "cli-01");
	assert_true(atomic_load(&g_probe[0].messages) > 10);
	assert_true(atomic_load(&g_probe[0].peer_times) > 10);
	assert_true(atomic_load(&g_probe[0].ticks) > 0 && atomic_load(&g_probe[1].ticks) > 0);
	if (atomic_load(&g_probe[0].violations) != 0) {
		fail_msg("%d peer times came before the ordered messages sent before them (first: "
		         "%lld us)",
		         atomic_load(&g_probe[0].violations),
		         (long long)atomic_load(&g_probe[0].violation_at));
	}

	/* A tool: the server's extension answers it; an extension it does not run is refused by
	 * the conductor, saying so. */
	hako_conductor_session_t *ses = NULL;
	assert_int_equal(hako_conductor_session_open(&S[1].cfg, &ses, &err), 0);
	assert_int_equal(hako_conductor_session_send(ses, PROBE_ID, "ping", 4), 0);
	hako_conductor_ext_msg_t m;
	assert_int_equal(hako_conductor_session_recv(ses, 5000, &m), 0);
	assert_int_equal(m.ext, PROBE_ID);
	assert_int_equal(m.result, 0);
	assert_int_equal(m.len, 9);
	assert_memory_equal(m.body, "pong:ping", 9);
	assert_int_equal(atomic_load(&g_probe[0].tool_messages), 1);
	assert_int_equal(hako_conductor_session_send(ses, 999, "x", 1), 0);
	assert_int_equal(hako_conductor_session_recv(ses, 5000, &m), 0);
	assert_int_equal(m.ext, 999);
	assert_int_equal(m.result, HAKO_ENOTSUP);
	assert_non_null(memmem(m.body, m.len, "no extension 999", 16));
	assert_int_equal(hako_conductor_session_recv(ses, 50, &m), HAKO_ETIMEDOUT);
	/* Too long a body is refused before it is sent. */
	char big[HAKO_CONDUCTOR_EXT_BODY_MAX + 1] = {0};
	assert_int_equal(hako_conductor_session_send(ses, PROBE_ID, big, sizeof(big)), HAKO_EINVAL);
	hako_conductor_session_close(ses);

	assert_int_equal(hako_domain_stop(S[0].dom), 0);
	assert_int_equal(hako_domain_wait_state(S[0].dom, HAKO_STATE_STOPPED, WAIT_USEC), 0);
	assert_int_equal(hako_domain_wait_state(S[1].dom, HAKO_STATE_STOPPED, WAIT_USEC), 0);
	side_close(&S[1]);
	side_close(&S[0]);
	assert_int_equal(atomic_load(&g_probe[0].closed), 1);
	assert_int_equal(atomic_load(&g_probe[1].closed), 1);
}

static void test_start_checks(void **state)
{
	(void)state;
	hako_error_t err;
	hako_conductor_node_t *node = NULL;
	/* Two extensions of one id; id 0. */
	const hako_conductor_ext_ops_t *two[] = {&probe_ops, &probe_ops};
	assert_int_equal(hako_conductor_node_start_ext(&S[0].cfg, S[0].dom, two, 2, &node, &err),
	                 HAKO_EINVAL);
	assert_null(node);
	hako_conductor_ext_ops_t zero = probe_ops;
	zero.id = 0;
	const hako_conductor_ext_ops_t *z[] = {&zero};
	assert_int_equal(hako_conductor_node_start_ext(&S[0].cfg, S[0].dom, z, 1, &node, &err),
	                 HAKO_EINVAL);
	/* A failing open fails the start with its error; the one opened before it is closed. */
	atomic_store(&g_fail_open, 1);
	const hako_conductor_ext_ops_t *pair[] = {&other_ops, &probe_ops};
	assert_int_equal(hako_conductor_node_start_ext(&S[0].cfg, S[0].dom, pair, 2, &node, &err),
	                 HAKO_ECONFIG);
	assert_null(node);
	assert_non_null(strstr(err.message, "the probe refuses to open"));
	assert_int_equal(atomic_load(&g_other_closed), 1);
	/* RD-Full is an extension above the conductor: its key alone is refused. */
	hako_conductor_config_t c = S[0].cfg;
	snprintf(c.rd_config_path, sizeof(c.rd_config_path), "/nowhere/rd.json");
	assert_int_equal(hako_conductor_node_start(&c, S[0].dom, &node, &err), HAKO_ECONFIG);
	assert_non_null(strstr(err.message, "hako_rd_full_node_start"));
	assert_null(node);
}

/* An ordered send outside before_publish breaks the order it promises: with assertions on
 * (Debug, sanitizer builds) it aborts, naming the extension. Tried in a child process. */
static void test_ordered_outside_publish(void **state)
{
	(void)state;
#ifdef HAKO_ASSERTS
	const hako_conductor_ext_ops_t *exts[] = {&probe_ops};
	hako_error_t err;
	assert_int_equal(
	    hako_conductor_node_start_ext(&S[1].cfg, S[1].dom, exts, 1, &S[1].node, &err), 0);
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int fd = open("/dev/null", O_WRONLY);
		dup2(fd, 2); /* the assertion's line: not the test's output */
		hako_conductor_ext_send_ordered(g_probe[1].node, PROBE_ID, "x", 1, NULL, 0);
		_exit(0);
	}
	int status = 0;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGABRT);
#else
	skip(); /* the check is HAKO_ASSERT's: Debug and sanitizer builds */
#endif
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_live, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_start_checks, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_ordered_outside_publish, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
