/* See bridge_asset_kit.h. */
#define _GNU_SOURCE
#include "bridge_asset_kit.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "hako_test_util.h"

void bak_open(bak_t *k, const char *test)
{
	k->ctl_fd = -1;
	assert_non_null(htu_tmpdir(k->dir, sizeof(k->dir)));
	htu_domain_name(test, k->dom_name, sizeof(k->dom_name));
	hako_domain_config_t cfg;
	hako_domain_config_default(&cfg);
	cfg.max_assets = 4;
	cfg.max_channels = 8;
	cfg.arena_bytes = 1 << 20;
	assert_int_equal(hako_domain_create(k->dom_name, &cfg, &k->dom), 0);
	hako_master_config_t mc = {
	    .delta_usec = 1000, .max_delay_usec = 1000, .real_time_factor = 0};
	assert_int_equal(hako_master_start(k->dom, &mc, &k->master), 0);
}

void bak_close(bak_t *k)
{
	if (k->ctl_fd >= 0) {
		close(k->ctl_fd);
		k->ctl_fd = -1;
	}
	htu_kill_children(); /* the daemon, when a test failed before stopping it */
	hako_endpoint_close(k->rx);
	hako_master_stop(k->master);
	hako_domain_close(k->dom);
	htu_remove_domain(k->dom_name);
	htu_remove_tmpdirs();
}

void bak_write_endpoints(bak_t *k, unsigned rx_port)
{
	bak_put(k, "src.json",
	        "{\"name\": \"src\", \"cache\": \"cache.json\", \"comm\": \"src_comm.json\", "
	        "\"pdu_def_path\": \"pdudef.json\"}\n");
	bak_write_tcp_endpoint(k, "dst", 0, rx_port);
	bak_put(k, "container.json",
	        "[{\"nodeId\": \"n1\", \"endpoints\": [\n"
	        "   {\"id\": \"src\", \"config_path\": \"src.json\"},\n"
	        "   {\"id\": \"dst\", \"config_path\": \"dst.json\"}]}]\n");
}

const char *bak_path(bak_t *k, const char *name)
{
	static char p[4][400];
	static int i;
	i = (i + 1) % 4;
	snprintf(p[i], sizeof(p[i]), "%s/%s", k->dir, name);
	return p[i];
}

void bak_put(bak_t *k, const char *name, const char *fmt, ...)
{
	char text[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	assert_int_equal(htu_write_file(bak_path(k, name), text), 0);
}

void bak_write_tcp_endpoint(bak_t *k, const char *name, int server, unsigned port)
{
	char comm[64], ep[64];
	snprintf(comm, sizeof(comm), "%s_comm.json", name);
	snprintf(ep, sizeof(ep), "%s.json", name);
	bak_put(k, comm,
	        "{\"protocol\": \"tcp\", \"name\": \"%s\", \"direction\": \"inout\", \"role\": "
	        "\"%s\", \"%s\": {\"address\": \"127.0.0.1\", \"port\": %u}, "
	        "\"options\": {\"connect_timeout_ms\": 200}}\n",
	        name, server ? "server" : "client", server ? "local" : "remote", port);
	bak_put(k, ep,
	        "{\"name\": \"%s\", \"cache\": \"cache.json\", \"comm\": \"%s\", "
	        "\"pdu_def_path\": \"pdudef.json\"}\n",
	        name, comm);
}

void bak_wait_log(bak_t *k, const char *what)
{
	int ok;
	HTU_WAIT_UNTIL(ok, strstr(htu_slurp(k->log), what) != NULL || htu_child_exited(k->pid),
	               HTU_TIMEOUT_USEC);
	if (!ok || strstr(htu_slurp(k->log), what) == NULL) {
		fail_msg("no '%s' in %s:\n%s", what, k->log, htu_slurp(k->log));
	}
}

static void ctl_connect(bak_t *k)
{
	int ok = 0;
	hako_time_t deadline = hako_now_usec() + HTU_TIMEOUT_USEC;
	while (!ok && hako_now_usec() < deadline) {
		k->ctl_fd = socket(AF_UNIX, SOCK_STREAM, 0);
		struct sockaddr_un sa;
		memset(&sa, 0, sizeof(sa));
		sa.sun_family = AF_UNIX;
		snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", k->sock);
		ok = connect(k->ctl_fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
		if (!ok) {
			close(k->ctl_fd);
			k->ctl_fd = -1;
			htu_sleep_usec(10000);
		}
	}
	assert_true(ok);
}

void bak_start_daemon(bak_t *k, const char *tool, const char *ready, const char *env)
{
	char name[64];
	snprintf(name, sizeof(name), "bridge-%d.log", ++k->starts);
	snprintf(k->log, sizeof(k->log), "%s", bak_path(k, name));
	snprintf(k->sock, sizeof(k->sock), "%s", bak_path(k, "ctl.sock"));
	htu_exec_t x;
	memset(&x, 0, sizeof(x));
	const char *args[] = {tool,           bak_path(k, "bridge.json"),
	                      "--node",       "n1",
	                      "--asset",      "bridge",
	                      "--domain",     k->dom_name,
	                      "--delta-usec", "1000",
	                      "--control",    k->sock,
	                      "-v",           NULL};
	for (int i = 0; args[i] != NULL; i++) {
		x.argv[i] = (char *)args[i];
	}
	x.log = k->log;
	char var[128] = "";
	if (env != NULL) {
		snprintf(var, sizeof(var), "%s", env);
		char *eq = strchr(var, '=');
		assert_non_null(eq);
		*eq = '\0';
		assert_int_equal(setenv(var, eq + 1, 1), 0);
	}
	k->pid = htu_fork(htu_exec_main, &x); /* the child has its own copy of the environment */
	if (env != NULL) {
		assert_int_equal(unsetenv(var), 0);
	}
	assert_true(k->pid > 0);
	bak_wait_log(k, ready);
	ctl_connect(k);
	hako_endpoint_stats_t es;
	int ok;
	HTU_WAIT_UNTIL(ok, (hako_endpoint_get_stats(k->rx, &es), es.peers > 0), HTU_TIMEOUT_USEC);
	if (!ok) {
		fail_msg("the bridge's tcp destination never connected:\n%s", htu_slurp(k->log));
	}
	bak_wait_log(k, "endpoint 'dst': connected to");
}

const char *bak_ctl_stats(bak_t *k)
{
	static char ans[4096];
	size_t used = 0;
	assert_int_equal(send(k->ctl_fd, "stats\n", 6, MSG_NOSIGNAL), 6);
	for (;;) {
		assert_true(used < sizeof(ans) - 1);
		ssize_t n = recv(k->ctl_fd, ans + used, sizeof(ans) - 1 - used, 0);
		assert_true(n > 0);
		used += (size_t)n;
		ans[used] = '\0';
		if (used >= 3 && strcmp(ans + used - 3, "ok\n") == 0) {
			return ans;
		}
	}
}

void bak_expect_state(bak_t *k, int state)
{
	int r = hako_domain_wait_state(k->dom, state, HTU_TIMEOUT_USEC);
	int st = hako_domain_state(k->dom);
	if (r != 0 || st != state) {
		hako_domain_info_t info;
		hako_domain_get_info(k->dom, &info);
		fail_msg("state %s, expected %s (%s)\n%s", hako_state_name(st),
		         hako_state_name(state), info.error_reason, htu_slurp(k->log));
	}
}
