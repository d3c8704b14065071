/* See ep_test_util.h. */
#define _GNU_SOURCE

#include "ep_test_util.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "hako/endpoint_config.h"

static char g_dir[256];
static hako_endpoint_t *g_eps[EPT_MAX_EPS]; /* open ones: a failed test's are closed by teardown */

/* The folder is the common kit's (htu_tmpdir: removed at exit and on a fatal signal too);
 * prefix is kept for the callers' sake. */
int ept_setup_dir(const char *prefix)
{
	(void)prefix;
	return htu_tmpdir(g_dir, sizeof(g_dir)) != NULL ? 0 : -1;
}

int ept_remove_dir(void)
{
	if (g_dir[0] == '\0') {
		return 0;
	}
	htu_remove_tmpdirs();
	g_dir[0] = '\0';
	return 0;
}

int ept_group_setup(void **state)
{
	(void)state;
	return ept_setup_dir("hako_ep_test");
}

int ept_group_setup_many_fds(void **state)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 4096) {
		rl.rlim_cur = rl.rlim_max < 4096 ? rl.rlim_max : 4096;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	return ept_group_setup(state);
}

int ept_group_teardown(void **state)
{
	(void)state;
	return ept_remove_dir();
}

const char *ept_dir(void)
{
	return g_dir;
}

void ept_write_file(const char *name, const char *text)
{
	char p[1024];
	snprintf(p, sizeof(p), "%s/%s", g_dir, name);
	assert_int_equal(htu_write_file(p, text), 0);
}

void ept_put_ports(const char *comm, int local_port, int remote_port, char *out, size_t cap)
{
	size_t n = 0;
	while (*comm != '\0') {
		int lp = strncmp(comm, "LPORT", 5) == 0;
		if (lp || strncmp(comm, "RPORT", 5) == 0) {
			int v = lp ? (local_port > 0 ? local_port : 0) : remote_port;
			n += (size_t)snprintf(out + n, cap - n, "%d", v);
			comm += 5;
		} else if (n + 1 < cap) {
			out[n++] = *comm++;
		}
		assert_true(n + 1 < cap);
	}
	out[n] = '\0';
}

int ept_open(const char *name, const char *comm, int depth, hako_endpoint_t **out,
             hako_error_t *err)
{
	char buf[1024], file[300];
	snprintf(file, sizeof(file), "%s.comm.json", name);
	ept_write_file(file, comm);
	snprintf(buf, sizeof(buf),
	         "{\"type\": \"buffer\", \"store\": {\"mode\": \"queue\", \"depth\": %d}}", depth);
	snprintf(file, sizeof(file), "%s.cache.json", name);
	ept_write_file(file, buf);
	snprintf(buf, sizeof(buf),
	         "{\"name\": \"%s\", \"cache\": \"%s.cache.json\", \"comm\": \"%s.comm.json\", "
	         "\"pdu_def_path\": null}",
	         name, name, name);
	snprintf(file, sizeof(file), "%s.json", name);
	ept_write_file(file, buf);

	char path[512];
	snprintf(path, sizeof(path), "%s/%s.json", g_dir, name);
	hako_endpoint_config_t *cfg = NULL;
	int r = hako_endpoint_config_load(path, &cfg, err);
	if (r != 0) {
		fprintf(stderr, "load %s: %s: %s:%d: %s\n", name, hako_strerror(r), err->file,
		        err->line, err->message);
		return r;
	}
	r = hako_endpoint_open_config(cfg, out, err);
	if (r != 0) {
		fprintf(stderr, "open %s: %s: %s: %s\n", name, hako_strerror(r), err->file,
		        err->message);
	}
	return r;
}

int ept_open_ports(const char *name, const char *comm, int local_port, int remote_port,
                   hako_endpoint_t **out, hako_error_t *err)
{
	char buf[1024];
	ept_put_ports(comm, local_port, remote_port, buf, sizeof(buf));
	int r = ept_open(name, buf, 64, out, err);
	if (r == 0) {
		ept_track(*out);
	}
	return r;
}

hako_endpoint_t *ept_must_open(const char *name, const char *comm, int local_port, int remote_port)
{
	hako_endpoint_t *ep = NULL;
	hako_error_t err;
	hako_error_clear(&err);
	assert_int_equal(ept_open_ports(name, comm, local_port, remote_port, &ep, &err), 0);
	assert_int_equal(hako_endpoint_start(ep, &err), 0);
	return ep;
}

void ept_track(hako_endpoint_t *ep)
{
	for (int i = 0; i < EPT_MAX_EPS; i++) {
		if (g_eps[i] == NULL) {
			g_eps[i] = ep;
			return;
		}
	}
	fail_msg("too many endpoints");
}

void ept_close(hako_endpoint_t *ep)
{
	for (int i = 0; i < EPT_MAX_EPS; i++) {
		if (g_eps[i] == ep) {
			g_eps[i] = NULL;
		}
	}
	hako_endpoint_close(ep);
}

int ept_close_all(void **state)
{
	(void)state;
	for (int i = EPT_MAX_EPS; i-- > 0;) {
		hako_endpoint_close(g_eps[i]);
		g_eps[i] = NULL;
	}
	return 0;
}

uint64_t ept_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void ept_sleep_ms(unsigned ms)
{
	htu_sleep_usec((hako_time_t)ms * 1000);
}

hako_pdu_key_t ept_key(const char *robot, int32_t ch)
{
	hako_pdu_key_t k;
	memset(&k, 0, sizeof(k));
	snprintf(k.robot, sizeof(k.robot), "%s", robot);
	k.channel_id = ch;
	return k;
}

hako_endpoint_stats_t ept_stats(const hako_endpoint_t *ep)
{
	hako_endpoint_stats_t st;
	hako_endpoint_get_stats(ep, &st);
	return st;
}

int ept_recv_wait(hako_endpoint_t *ep, const hako_pdu_key_t *k, void *buf, size_t cap, size_t *len)
{
	uint64_t end = ept_now_ms() + EPT_WAIT_MS;
	int r;
	while ((r = hako_endpoint_recv(ep, k, buf, cap, len)) == HAKO_EAGAIN &&
	       ept_now_ms() < end) {
		ept_sleep_ms(2);
	}
	return r;
}
