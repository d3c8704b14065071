/* hako_rd_full_request's kept connection (rd_full_request.c): a server node in this process
 * (RD-Full without an RD config: it answers every request with a refusal, over CURVE), asked
 * through hako_rd_full_request:
 *   - the requests of one config share one connection; another config opens another;
 *   - a request that gets no answer drops its connection: the next one opens a new one;
 *   - a forked child does not use the parent's connection (its ZeroMQ context is the
 *     parent's): it opens its own, and the parent's still answers after the child ended;
 *   - two threads asking at once both get their answers. */
#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "hako/conductor.h"
#include "hako/domain.h"
#include "hako/rd_full.h"
#include "hako_test_util.h"
#include "rd_internal.h"

#define DELTA   1000
#define DMAX    4000
#define ASK_MS  5000
#define REFUSAL "this federation has no rd_config_path"

static char g_domain[HAKO_NAME_MAX];
static char g_keys[64];
static hako_domain_t *g_dom;
static hako_master_t *g_master;
static hako_conductor_node_t *g_node;
static hako_conductor_config_t g_srv; /* the server's file: what hako-rd move reads */

static void fill_config(hako_conductor_config_t *c, int server)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->path, sizeof(c->path), "test_rd_full_request:%s", server ? "srv" : "cli");
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
	snprintf(c->control_address, sizeof(c->control_address), "ipc:///tmp/hako-t-rdfreq-%d-ctl",
	         (int)getpid());
	snprintf(c->time_address, sizeof(c->time_address), "ipc:///tmp/hako-t-rdfreq-%d-tim",
	         (int)getpid());
	snprintf(c->keys_dir, sizeof(c->keys_dir), "%s", g_keys);
	c->heartbeat_ms = 100;
	c->peer_timeout_ms = 5000;
	c->config_hash = 0x5eed;
}

static int setup(void **state)
{
	(void)state;
	htu_init();
	snprintf(g_keys, sizeof(g_keys), "/tmp/hako-t-rdfreq-keys-XXXXXX");
	if (mkdtemp(g_keys) == NULL) {
		return -1;
	}
	hako_conductor_config_t cli;
	fill_config(&g_srv, 1);
	fill_config(&cli, 0);
	const hako_conductor_config_t *set[] = {&g_srv, &cli};
	hako_error_t err;
	if (hako_conductor_keygen(set, 2, NULL, &err) != 0) {
		fprintf(stderr, "keys: %s\n", err.message);
		return -1;
	}
	htu_domain_name("rdfreq", g_domain, sizeof(g_domain));
	hako_domain_config_t dc;
	hako_domain_config_default(&dc);
	dc.max_assets = 8;
	dc.max_channels = 8;
	dc.arena_bytes = 1u << 20;
	hako_master_config_t mc = {DELTA, DMAX, 0.0};
	snprintf(g_srv.domain, sizeof(g_srv.domain), "%s", g_domain);
	if (hako_domain_create(g_domain, &dc, &g_dom) != 0 ||
	    hako_master_start(g_dom, &mc, &g_master) != 0 ||
	    hako_rd_full_node_start(&g_srv, g_dom, &g_node, &err) != 0) {
		fprintf(stderr, "server: %s\n", err.message);
		return -1;
	}
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	hakoi_rd_full_request_drop();
	hako_conductor_node_stop(g_node);
	hako_master_stop(g_master);
	hako_domain_close(g_dom);
	hako_domain_remove(g_domain);
	char path[256];
	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "/tmp/hako-t-rdfreq-%d-%s", (int)getpid(),
		         i == 0 ? "ctl" : "tim");
		unlink(path);
	}
	const char *names[] = {"srv-01.key", "srv-01.pub", "cli-01.key", "cli-01.pub"};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", g_keys, names[i]);
		unlink(path);
	}
	rmdir(g_keys);
	return 0;
}

/* One request, refused by the server as it has no RD config: 0 if so. */
static int ask_refused(const hako_conductor_config_t *cfg)
{
	char why[256];
	int r = hako_rd_full_request(cfg, 0, 2, ASK_MS, NULL, why, sizeof(why));
	if (r != HAKO_ESTATE || strstr(why, REFUSAL) == NULL) {
		fprintf(stderr, "request: %s (%s), not the server's refusal\n", hako_strerror(r),
		        why);
		return -1;
	}
	return 0;
}

static void test_kept(void **state)
{
	(void)state;
	unsigned n0 = hakoi_rd_full_request_opens();
	for (int i = 0; i < 5; i++) {
		assert_int_equal(ask_refused(&g_srv), 0);
	}
	assert_int_equal(hakoi_rd_full_request_opens(), n0 + 1);
	/* another config (here only its path): another connection, kept in turn */
	hako_conductor_config_t other = g_srv;
	snprintf(other.path, sizeof(other.path), "test_rd_full_request:other");
	assert_int_equal(ask_refused(&other), 0);
	assert_int_equal(ask_refused(&other), 0);
	assert_int_equal(hakoi_rd_full_request_opens(), n0 + 2);
	assert_int_equal(ask_refused(&g_srv), 0);
	assert_int_equal(hakoi_rd_full_request_opens(), n0 + 3);
}

static void test_no_answer_drops(void **state)
{
	(void)state;
	hako_conductor_config_t gone = g_srv;
	snprintf(gone.control_address, sizeof(gone.control_address),
	         "ipc:///tmp/hako-t-rdfreq-%d-nobody", (int)getpid());
	unsigned n0 = hakoi_rd_full_request_opens();
	char why[256];
	for (int i = 1; i <= 2; i++) {
		assert_int_equal(hako_rd_full_request(&gone, 0, 2, 100, NULL, why, sizeof(why)),
		                 HAKO_ETIMEDOUT);
		assert_non_null(strstr(why, "no answer"));
		assert_int_equal(hakoi_rd_full_request_opens(), n0 + (unsigned)i);
	}
	/* and the live server is asked on a new one, then that one is kept */
	assert_int_equal(ask_refused(&g_srv), 0);
	assert_int_equal(ask_refused(&g_srv), 0);
	assert_int_equal(hakoi_rd_full_request_opens(), n0 + 3);
}

static void test_fork(void **state)
{
	(void)state;
	assert_int_equal(ask_refused(&g_srv), 0); /* the parent's, kept */
	unsigned n0 = hakoi_rd_full_request_opens();
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* the child's own connection (one more than the parent had), then kept */
		int ok = ask_refused(&g_srv) == 0 && ask_refused(&g_srv) == 0 &&
		         hakoi_rd_full_request_opens() == n0 + 1;
		_exit(ok ? 0 : 1);
	}
	int status = 0;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(ask_refused(&g_srv), 0);
	assert_int_equal(hakoi_rd_full_request_opens(), n0);
}

static void *asker(void *arg)
{
	int *bad = arg;
	for (int i = 0; i < 20; i++) {
		*bad += ask_refused(&g_srv) != 0;
	}
	return NULL;
}

static void test_threads(void **state)
{
	(void)state;
	pthread_t t[4];
	int bad[4] = {0};
	for (int i = 0; i < 4; i++) {
		assert_int_equal(pthread_create(&t[i], NULL, asker, &bad[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(bad[i], 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_kept),
	    cmocka_unit_test(test_no_answer_drops),
	    cmocka_unit_test(test_fork),
	    cmocka_unit_test(test_threads),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
