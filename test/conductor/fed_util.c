/* See fed_util.h. */
#define _GNU_SOURCE
#include "fed_util.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "hako/conductor.h"

#ifndef HAKO_CONDUCTOR_EXE
#error "HAKO_CONDUCTOR_EXE, HAKO_CMD_EXE, HAKO_RELAY_EXE: the programs under test"
#endif

static int write_config(fed_t *f, int i);

/* The federation's keys (its files as they are now: the addresses change, the ids do not). */
int fed_keygen(fed_t *f)
{
	hako_conductor_config_t *cfgs[FED_MAX_NODES] = {NULL};
	hako_error_t err;
	int r = 0;
	/* Before fed_start the files have no addresses yet: placeholders (only the ids count). */
	fed_t saved = *f;
	if (f->client_ctl[0] == '\0') {
		f->ctl_port = 1;
		f->time_port = 2;
		snprintf(f->client_ctl, sizeof(f->client_ctl), "tcp://127.0.0.1:1");
		snprintf(f->client_time, sizeof(f->client_time), "tcp://127.0.0.1:2");
	}
	for (int i = 0; i < f->n && r == 0; i++) {
		r = write_config(f, i) != 0
		        ? -1
		        : hako_conductor_config_load(f->node[i].config, &cfgs[i], &err);
	}
	if (r == 0) {
		r = hako_conductor_keygen((const hako_conductor_config_t *const *)cfgs,
		                          (size_t)f->n, NULL, &err);
	}
	if (r != 0) {
		fprintf(stderr, "fed_keygen: %s: %s\n", err.file, err.message);
	}
	for (int i = 0; i < f->n; i++) {
		hako_conductor_config_free(cfgs[i]);
	}
	f->ctl_port = saved.ctl_port;
	f->time_port = saved.time_port;
	memcpy(f->client_ctl, saved.client_ctl, sizeof(f->client_ctl));
	memcpy(f->client_time, saved.client_time, sizeof(f->client_time));
	return r;
}

int fed_init(fed_t *f, const char *name, int nclients, hako_time_t delta, hako_time_t dmax)
{
	memset(f, 0, sizeof(*f));
	snprintf(f->name, sizeof(f->name), "%s", name);
	if (nclients < 1 || nclients >= FED_MAX_NODES ||
	    htu_tmpdir(f->dir, sizeof(f->dir)) == NULL) {
		return -1;
	}
	f->n = nclients + 1;
	f->delta = delta;
	f->dmax = dmax;
	for (int i = 0; i < f->n; i++) {
		fed_node_t *nd = &f->node[i];
		char test[48];
		if (i == 0) {
			snprintf(nd->id, sizeof(nd->id), "srv-01");
		} else {
			snprintf(nd->id, sizeof(nd->id), "cli-%02d", i);
		}
		/* t-<name>_<node>-<pid>: the kit removes it, also after a crash of this test. */
		snprintf(test, sizeof(test), "%s_%s", name, i == 0 ? "srv" : nd->id + 4);
		htu_domain_name(test, nd->domain, sizeof(nd->domain));
		/* Through a copy: gcc's -Wrestrict (Debug) takes two fields of *f for one object.
		 */
		char config[sizeof(nd->config)];
		snprintf(config, sizeof(config), "%s/%s.json", f->dir, nd->id);
		memcpy(nd->config, config, sizeof(config));
		nd->dmax = dmax;
		nd->stats = htu_shared_alloc(sizeof(*nd->stats));
		if (nd->stats == NULL) {
			return -1;
		}
	}
	return fed_keygen(f);
}

static int write_config(fed_t *f, int i)
{
	fed_node_t *nd = &f->node[i];
	char text[2048], clients[512] = "";
	const char *ctl = i == 0 ? "" : f->client_ctl, *tim = i == 0 ? "" : f->client_time;
	char sctl[128], stim[128];
	if (i == 0) {
		snprintf(sctl, sizeof(sctl), "tcp://127.0.0.1:%d", f->ctl_port);
		snprintf(stim, sizeof(stim), "tcp://127.0.0.1:%d", f->time_port);
		ctl = sctl;
		tim = stim;
		size_t len = 0;
		for (int c = 1; c < f->n; c++) {
			len += (size_t)snprintf(clients + len, sizeof(clients) - len,
			                        "%s{\"client_node_id\": \"%s\"}", c > 1 ? ", " : "",
			                        f->node[c].id);
		}
	}
	char role[600];
	if (i == 0) {
		snprintf(role, sizeof(role), "\"clients\": [%s]", clients);
	} else {
		snprintf(role, sizeof(role), "\"node_id\": \"%s\"", nd->id);
	}
	snprintf(text, sizeof(text),
	         "{\n  \"server_machine_id\": \"%s\",\n  %s,\n  \"delta_time_usec\": %lld,\n"
	         "  \"max_delay_time_usec\": %lld,\n  \"control_address\": \"%s\",\n"
	         "  \"time_address\": \"%s\"%s%s\n}\n",
	         f->node[0].id, role, (long long)f->delta, (long long)nd->dmax, ctl, tim,
	         nd->extra[0] ? ",\n  " : "", nd->extra);
	return htu_write_file(nd->config, text);
}

/* The child of a node with an environment variable of its own: set it, then exec. */
static char child_env[128];
static void exec_with_env(void *x)
{
	putenv(child_env);
	htu_exec_main(x);
}

int fed_start_node(fed_t *f, int i)
{
	fed_node_t *nd = &f->node[i];
	if (nd->dom != NULL) {
		hako_domain_close(nd->dom); /* a restart replaces the segment */
		nd->dom = NULL;
	}
	nd->starts++;
	/* Through a local buffer: gcc cannot tell that nd->log is not inside f->dir. */
	char path[sizeof(nd->log)];
	snprintf(path, sizeof(path), "%s/%s-%d.log", f->dir, nd->id, nd->starts);
	memcpy(nd->log, path, sizeof(path));
	snprintf(path, sizeof(path), "%s/%s-%d.csv", f->dir, nd->id, nd->starts);
	memcpy(nd->trace, path, sizeof(path));
	if (write_config(f, i) != 0) {
		return -1;
	}
	const char *argv[] = {HAKO_CONDUCTOR_EXE, "run",     "-v",       "-d", nd->domain,
	                      "--trace",          nd->trace, nd->config, NULL};
	htu_exec_t x; /* the child reads its own copy */
	memset(&x, 0, sizeof(x));
	memcpy(x.argv, argv, sizeof(argv));
	x.log = nd->log;
	snprintf(child_env, sizeof(child_env), "%s", nd->env);
	nd->pid = htu_fork(nd->env[0] != '\0' ? exec_with_env : htu_exec_main, &x);
	if (nd->pid <= 0) {
		return -1;
	}
	/* Its first line comes once the domain, its master and the node run. */
	char ready[96 + sizeof(nd->id)];
	snprintf(ready, sizeof(ready), "hako-conductor: %s %s on domain",
	         i == 0 ? "server" : "client", nd->id);
	int ok;
	HTU_WAIT_UNTIL(ok, strstr(htu_slurp(nd->log), ready) != NULL || htu_child_exited(nd->pid),
	               FED_WAIT_USEC);
	if (!ok || strstr(htu_slurp(nd->log), ready) == NULL) {
		fprintf(stderr, "%s did not start:\n%s\n", nd->id, htu_slurp(nd->log));
		htu_kill_child(nd->pid);
		nd->pid = 0;
		return -1;
	}
	int r = hako_domain_open(nd->domain, &nd->dom);
	if (r != 0) {
		fprintf(stderr, "cannot open domain %s: %s\n", nd->domain, hako_strerror(r));
		return -1;
	}
	return 0;
}

int fed_start(fed_t *f, double relay_delay_ms, double relay_jitter_ms)
{
	int started = 0;
	for (int attempt = 0; attempt < 5 && !started; attempt++) {
		f->ctl_port = relay_free_port(0);
		f->time_port = relay_free_port(0);
		if (f->ctl_port <= 0 || f->time_port <= 0 || f->ctl_port == f->time_port) {
			continue;
		}
		started = fed_start_node(f, 0) == 0;
		if (!started && strstr(htu_slurp(f->node[0].log), "cannot listen") == NULL) {
			return -1;
		}
		/* else another process took a port between our probe and the server's bind */
	}
	if (!started) {
		return -1;
	}
	if (relay_delay_ms >= 0) {
		char ctl[64], tim[64], delay[32], jitter[32];
		snprintf(ctl, sizeof(ctl), "127.0.0.1:%d", f->ctl_port);
		snprintf(tim, sizeof(tim), "127.0.0.1:%d", f->time_port);
		snprintf(delay, sizeof(delay), "%g", relay_delay_ms);
		snprintf(jitter, sizeof(jitter), "%g", relay_jitter_ms);
		const char *args[] = {"--tcp", "--listen",   "127.0.0.1:0", "--to",
		                      ctl,     "--listen",   "127.0.0.1:0", "--to",
		                      tim,     "--delay-ms", delay,         "--jitter-ms",
		                      jitter,  NULL};
		if (relay_start(&f->relay, HAKO_RELAY_EXE, f->dir, args) != 0 ||
		    f->relay.nroutes != 2) {
			return -1;
		}
		snprintf(f->client_ctl, sizeof(f->client_ctl), "tcp://127.0.0.1:%d",
		         f->relay.port[0]);
		snprintf(f->client_time, sizeof(f->client_time), "tcp://127.0.0.1:%d",
		         f->relay.port[1]);
	} else {
		snprintf(f->client_ctl, sizeof(f->client_ctl), "tcp://127.0.0.1:%d", f->ctl_port);
		snprintf(f->client_time, sizeof(f->client_time), "tcp://127.0.0.1:%d",
		         f->time_port);
	}
	for (int i = 1; i < f->n; i++) {
		if (fed_start_node(f, i) != 0) {
			return -1;
		}
	}
	return 0;
}

int fed_stop_node(fed_t *f, int i)
{
	fed_node_t *nd = &f->node[i];
	if (nd->pid <= 0) {
		return -1;
	}
	kill(nd->pid, SIGINT);
	int ok = htu_join_child(nd->pid, FED_WAIT_USEC);
	nd->pid = 0;
	return ok ? 0 : -1;
}

void fed_kill_node(fed_t *f, int i)
{
	htu_kill_child(f->node[i].pid);
	f->node[i].pid = 0;
}

int fed_start_asset(fed_t *f, int i)
{
	fed_node_t *nd = &f->node[i];
	memset(nd->stats, 0, sizeof(*nd->stats));
	/* Read by the child after the fork: its own copy. */
	htu_asset_args_t a = {nd->domain, "asset", f->delta, nd->stats};
	nd->asset = htu_fork(htu_asset_main, &a);
	int ok;
	HTU_WAIT_UNTIL(ok, atomic_load(&nd->stats->registered) != 0, FED_WAIT_USEC);
	return ok && atomic_load(&nd->stats->registered) == 1 ? 0 : -1;
}

void fed_kill_asset(fed_t *f, int i)
{
	htu_kill_child(f->node[i].asset);
	f->node[i].asset = 0;
}

/* The last lines of a file, for the report of a failed test. */
static void dump_tail(const char *title, const char *path, int lines)
{
	const char *text = htu_slurp(path);
	const char *p = text + strlen(text);
	for (int n = 0; p > text && n <= lines; p--) {
		n += p[-1] == '\n';
	}
	fprintf(stderr, "---- %s (%s)\n%s\n", title, path, p);
}

int fed_stop_asset(fed_t *f, int i)
{
	fed_node_t *nd = &f->node[i];
	atomic_store(&nd->stats->quit, 1);
	int ok = htu_join_child(nd->asset, FED_WAIT_USEC);
	nd->asset = 0;
	return ok ? 0 : -1;
}

void fed_teardown(fed_t *f)
{
	relay_stop(&f->relay);
	htu_kill_children();
	if (!f->passed) {
		for (int i = 0; i < f->n; i++) {
			if (f->node[i].log[0] != '\0') {
				dump_tail(f->node[i].id, f->node[i].log, 25);
			}
		}
		if (f->relay.log[0] != '\0') {
			dump_tail("relay", f->relay.log, 10);
		}
	}
	for (int i = 0; i < f->n; i++) {
		hako_domain_close(f->node[i].dom);
		f->node[i].dom = NULL;
		htu_shared_free(f->node[i].stats, sizeof(*f->node[i].stats));
		f->node[i].stats = NULL;
	}
	htu_shared_free(f->checker, sizeof(*f->checker));
	f->checker = NULL;
	htu_remove_all_domains();
	const char *keep = getenv("FED_KEEP"); /* a folder to copy the logs and traces to */
	if (keep != NULL && keep[0] != '\0') {
		char cmd[1024];
		snprintf(cmd, sizeof(cmd), "cp -r '%s' '%s'", f->dir, keep);
		if (system(cmd) == 0) {
			fprintf(stderr, "files copied to %s\n", keep);
		}
	}
	htu_remove_tmpdirs();
}

static pid_t spawn(fed_t *f, char *out, size_t outlen, const char *const *argv)
{
	htu_exec_t x;
	memset(&x, 0, sizeof(x));
	for (int i = 0; argv[i] != NULL && i < 15; i++) {
		x.argv[i] = (char *)argv[i];
	}
	snprintf(out, outlen, "%s/run-%d.txt", f->dir, ++f->runs);
	x.log = out;
	return htu_fork(htu_exec_main, &x);
}

static int exit_code(pid_t pid, hako_time_t timeout)
{
	int status = 0;
	if (htu_wait_child(pid, timeout, &status) != 0) {
		htu_kill_child(pid);
		return -1;
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int fed_run(fed_t *f, char *out, size_t outlen, const char *const *argv)
{
	pid_t pid = spawn(f, out, outlen, argv);
	return pid > 0 ? exit_code(pid, FED_WAIT_USEC) : -1;
}

int fed_hako_cmd(fed_t *f, int i, const char *verb, const char *arg, char *out, size_t outlen)
{
	const char *argv[] = {HAKO_CMD_EXE, "-d", f->node[i].domain, verb, arg, NULL};
	return fed_run(f, out, outlen, argv);
}

/* The domains of the nodes that run, the server's first. */
static void domain_list(fed_t *f, char *buf, size_t len)
{
	size_t n = 0;
	buf[0] = '\0';
	for (int i = 0; i < f->n; i++) {
		if (fed_live(f, i)) {
			n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? "," : "",
			                      f->node[i].domain);
		}
	}
}

pid_t fed_check_begin(fed_t *f, int ms, char *out, size_t outlen)
{
	static char domains[FED_MAX_NODES * HAKO_NAME_MAX + 8];
	char dmax[32], dur[32];
	domain_list(f, domains, sizeof(domains));
	snprintf(dmax, sizeof(dmax), "%lld", (long long)f->dmax);
	snprintf(dur, sizeof(dur), "%d", ms);
	const char *argv[] = {
	    HAKO_CONDUCTOR_EXE, "check", "--dmax-usec", dmax, "--domains", domains,
	    "--duration-ms",    dur,     NULL};
	return spawn(f, out, outlen, argv);
}

int fed_check_end(fed_t *f, pid_t pid, const char *out)
{
	(void)f;
	int rc = exit_code(pid, FED_WAIT_USEC);
	const char *text = htu_slurp(out);
	if (rc != 0 || strstr(text, ": ok\n") == NULL) {
		fprintf(stderr, "hako-conductor check exited %d:\n%s\n", rc, text);
		return -1;
	}
	return 0;
}

static void checker_main(void *arg)
{
	fed_t *f = arg;
	fed_checker_t *c = f->checker;
	while (!atomic_load(&c->stop)) {
		char out[512];
		pid_t pid = fed_check_begin(f, 1000, out, sizeof(out));
		int rc = pid > 0 ? exit_code(pid, FED_WAIT_USEC) : -1;
		const char *text = htu_slurp(out);
		const char *p = strstr(text, "max |server - client| ");
		long long sc = 0, cc = 0;
		if (p != NULL) {
			sscanf(p,
			       "max |server - client| %lld us (bound %*d), max |client - client| "
			       "%lld",
			       &sc, &cc);
		}
		if (sc > atomic_load(&c->worst_sc)) {
			atomic_store(&c->worst_sc, sc);
		}
		if (cc > atomic_load(&c->worst_cc)) {
			atomic_store(&c->worst_cc, cc);
		}
		if (rc != 0 || strstr(text, ": ok\n") == NULL) {
			if (atomic_fetch_add(&c->failed, 1) == 0) {
				snprintf(c->failure, sizeof(c->failure), "exit %d: %s", rc, text);
			}
		}
		atomic_fetch_add(&c->checks, 1);
	}
}

int fed_checker_begin(fed_t *f)
{
	if (f->checker == NULL) {
		f->checker = htu_shared_alloc(sizeof(*f->checker));
		if (f->checker == NULL) {
			return -1;
		}
	}
	memset(f->checker, 0, sizeof(*f->checker));
	f->checker_pid = htu_fork(checker_main, f);
	return f->checker_pid > 0 ? 0 : -1;
}

int fed_checker_end(fed_t *f)
{
	fed_checker_t *c = f->checker;
	atomic_store(&c->stop, 1);
	int ok = htu_join_child(f->checker_pid, FED_WAIT_USEC);
	f->checker_pid = 0;
	if (!ok || atomic_load(&c->failed) != 0 || atomic_load(&c->checks) == 0) {
		fprintf(stderr, "live checks: %d of %d failed; the first: %s\n",
		        atomic_load(&c->failed), atomic_load(&c->checks), c->failure);
		return -1;
	}
	return 0;
}

int fed_check_traces(fed_t *f, char *out, size_t outlen)
{
	char dmax[32];
	snprintf(dmax, sizeof(dmax), "%lld", (long long)f->dmax);
	const char *argv[FED_MAX_NODES + 5] = {HAKO_CONDUCTOR_EXE, "check", "--dmax-usec", dmax};
	for (int i = 0; i < f->n; i++) {
		argv[4 + i] = f->node[i].trace;
	}
	argv[4 + f->n] = NULL;
	int rc = fed_run(f, out, outlen, argv);
	const char *text = htu_slurp(out);
	if (rc != 0 || strstr(text, ": ok\n") == NULL) {
		fprintf(stderr, "hako-conductor check (traces) exited %d:\n%s\n", rc, text);
		return -1;
	}
	return 0;
}

hako_time_t fed_world(fed_t *f, int i)
{
	return hako_domain_world_time(f->node[i].dom);
}

int fed_state(fed_t *f, int i)
{
	return hako_domain_state(f->node[i].dom);
}

int fed_live(fed_t *f, int i)
{
	return f->node[i].pid > 0 && f->node[i].dom != NULL;
}

int fed_all_in(fed_t *f, int state)
{
	int live = 0;
	for (int i = 0; i < f->n; i++) {
		if (fed_live(f, i)) {
			live++;
			if (fed_state(f, i) != state) {
				return 0;
			}
		}
	}
	return live > 0;
}

int fed_stuck(fed_t *f, int i)
{
	hako_asset_info_t a[16];
	int count = 0;
	if (hako_domain_list_assets(f->node[i].dom, a, 16, &count) != 0 || count > 16) {
		return 0;
	}
	hako_time_t world = fed_world(f, i), slowest = world;
	for (int k = 0; k < count; k++) {
		if (!a[k].proxy && a[k].time_usec != world) {
			return 0; /* an asset still has a step to take */
		}
		if (a[k].proxy && a[k].time_usec < slowest) {
			slowest = a[k].time_usec;
		}
	}
	return world + f->delta - slowest > f->node[i].dmax;
}

static int find_proxy(fed_t *f, int i, const char *peer, hako_asset_info_t *out)
{
	hako_asset_info_t a[16];
	int count = 0;
	char name[HAKO_NAME_MAX];
	snprintf(name, sizeof(name), "proxy:%s", peer);
	if (hako_domain_list_assets(f->node[i].dom, a, 16, &count) != 0) {
		return -1;
	}
	for (int k = 0; k < count && k < 16; k++) {
		if (strcmp(a[k].name, name) == 0) {
			*out = a[k];
			return 0;
		}
	}
	return -1;
}

int fed_proxy_note(fed_t *f, int i, const char *peer, char *buf, size_t len)
{
	hako_asset_info_t a;
	buf[0] = '\0';
	if (find_proxy(f, i, peer, &a) != 0) {
		return -1;
	}
	snprintf(buf, len, "%s", a.note);
	return 0;
}

int fed_has_proxy(fed_t *f, int i, const char *peer)
{
	hako_asset_info_t a;
	return find_proxy(f, i, peer, &a) == 0;
}

/* The last 64 KiB of a file (a run's log ends with its table), in a static buffer. */
static const char *slurp_tail(const char *path)
{
	static char buf[65536];
	buf[0] = '\0';
	FILE *f = fopen(path, "r");
	if (f != NULL) {
		if (fseek(f, -(long)(sizeof(buf) - 1), SEEK_END) != 0) {
			rewind(f);
		}
		size_t n = fread(buf, 1, sizeof(buf) - 1, f);
		buf[n] = '\0';
		fclose(f);
	}
	return buf;
}

int fed_peer_row(const char *table_file, const char *peer, fed_peer_row_t *row)
{
	const char *line = slurp_tail(table_file);
	size_t plen = strlen(peer);
	/* The last row of that peer: a run's log may hold several tables. */
	const char *found = NULL;
	while (line != NULL && *line != '\0') {
		if (strncmp(line, peer, plen) == 0 && line[plen] == ' ') {
			found = line;
		}
		line = strchr(line, '\n');
		line = line != NULL ? line + 1 : NULL;
	}
	if (found == NULL) {
		return -1;
	}
	char name[64];
	memset(row, 0, sizeof(*row));
	int n = sscanf(found, "%63s %15s %lld %lld %lld %lld %lld %llu", name, row->state,
	               &row->known, &row->p50, &row->p95, &row->max, &row->age_p50, &row->garbage);
	return n == 8 ? 0 : -1;
}

int fed_status_row(fed_t *f, int i, const char *peer, fed_peer_row_t *row)
{
	char out[512];
	const char *argv[] = {HAKO_CONDUCTOR_EXE, "status", "-d", f->node[i].domain, NULL};
	if (fed_run(f, out, sizeof(out), argv) != 0) {
		fprintf(stderr, "hako-conductor status failed:\n%s\n", htu_slurp(out));
		return -1;
	}
	return fed_peer_row(out, peer, row);
}

void fed_snapshot(fed_t *f, hako_time_t *t)
{
	hako_time_t before, after;
	do {
		before = fed_world(f, 0);
		for (int i = 1; i < f->n; i++) {
			t[i] = fed_world(f, i);
		}
		after = fed_world(f, 0);
	} while (before != after);
	t[0] = after;
}
