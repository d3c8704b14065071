/* The run of hako-launch (launch_run.h): the domain, the phases of a launch and the status
 * line, over the supervised processes (launch_supervise.h). */
#define _GNU_SOURCE
#include "launch_run.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hako/conductor.h"
#include "hako/rd_full.h"
#include "hako/domain.h"
#include "hako/error.h"
#include "launch_console.h"
#include "launch_supervise.h"
#include "hakoi/file.h"

#define STATE_WAIT_USEC  10000000 /* each transition of the domain */
#define STATUS_TTY_USEC  200000
#define STATUS_PIPE_USEC 5000000
#define RATE_WINDOW_USEC 1000000
#define SAMPLES          64
#define VIEWER_WAIT_USEC 10000000 /* for hako-viewer's URLs */
#define VIEWER_URL_BYTES 256

enum exit_mode {
	MODE_START,    /* before the simulation: failures are fatal unless restarted */
	MODE_RUN,      /* while it runs */
	MODE_RESTART,  /* while the domain is being restarted for a process */
	MODE_SHUTDOWN, /* stopping: nothing is restarted */
};

static struct launcher {
	hakoi_launch_config_t *cfg;
	hako_domain_t *dom;
	hako_master_t *master;
	hako_asset_info_t *assets;
	int asset_cap;
	int logs_ready;          /* the log folder exists */
	int status_on;           /* the simulation runs: show the status line */
	hako_time_t next_status; /* next sample */
	hako_time_t next_print;  /* next status line when not on a terminal */
	hako_time_t sample_wall[SAMPLES];
	hako_time_t sample_world[SAMPLES];
	int samples;
	char failure[1024];
	hako_time_t wall0; /* simulation start */
	hako_time_t wall_end;
	hako_time_t world_end;
	int restarts_of_domain;
	hako_conductor_node_t *node;       /* a federation node's link to the others */
	uint32_t resets_at_start;          /* a federation node's reset count before its start */
	uint32_t server_restarts;          /* a client: its server's restarts when its run began */
	char viewer_url[VIEWER_URL_BYTES]; /* read-only */
	char viewer_ctl[VIEWER_URL_BYTES]; /* with ?token= */
} L;

static hakoi_sup_t S = {.sigfd = -1};

/* ---- outcome ---- */

/* Record why the launch failed; the first reason is the one reported at the end. */
static void failed(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void failed(const char *fmt, ...)
{
	if (L.failure[0] != '\0') {
		return;
	}
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(L.failure, sizeof(L.failure), fmt, ap);
	va_end(ap);
}

static int failing(void)
{
	return L.failure[0] != '\0' || S.interrupted != 0;
}

/* World time in seconds, at least 3 decimals and as many as the microseconds need. */
static const char *fmt_time(hako_time_t usec, char *buf, size_t len)
{
	snprintf(buf, len, "%lld.%06lld", (long long)(usec / 1000000), (long long)(usec % 1000000));
	size_t keep = (size_t)(strchr(buf, '.') - buf) + 4; /* 3 decimals */
	size_t n = strlen(buf);
	while (n > keep && buf[n - 1] == '0') {
		buf[--n] = '\0';
	}
	return buf;
}

static void describe(int status, char *buf, size_t len)
{
	if (WIFEXITED(status)) {
		snprintf(buf, len, "exited with code %d", WEXITSTATUS(status));
	} else if (WIFSIGNALED(status)) {
		snprintf(buf, len, "was killed by signal %d (%s)", WTERMSIG(status),
		         strsignal(WTERMSIG(status)));
	} else {
		snprintf(buf, len, "ended with status 0x%x", status);
	}
}

static int exited_ok(int status)
{
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* ---- the status line ---- */

static int list_assets(int *count)
{
	*count = 0;
	if (L.dom == NULL) {
		return -1;
	}
	int n = 0;
	if (hako_domain_list_assets(L.dom, L.assets, L.asset_cap, &n) != 0) {
		return -1;
	}
	*count = n < L.asset_cap ? n : L.asset_cap;
	return 0;
}

/* Which process owns which asset: the pid an asset registered with is one of ours. */
static void note_owners(int n)
{
	for (int i = 0; i < n; i++) {
		hakoi_proc_t *p = hakoi_sup_find(&S, L.assets[i].pid);
		if (p != NULL) {
			p->owns_asset = 1;
		}
	}
}

static double measured_factor(hako_time_t wall, hako_time_t world)
{
	if (L.samples == SAMPLES) {
		memmove(L.sample_wall, L.sample_wall + 1, sizeof(L.sample_wall[0]) * (SAMPLES - 1));
		memmove(L.sample_world, L.sample_world + 1,
		        sizeof(L.sample_world[0]) * (SAMPLES - 1));
		L.samples--;
	}
	L.sample_wall[L.samples] = wall;
	L.sample_world[L.samples] = world;
	L.samples++;
	int first = 0;
	while (first + 1 < L.samples && wall - L.sample_wall[first + 1] >= RATE_WINDOW_USEC) {
		first++;
	}
	if (wall - L.sample_wall[first] <= 0 || world < L.sample_world[first]) {
		return -1.0;
	}
	return (double)(world - L.sample_world[first]) / (double)(wall - L.sample_wall[first]);
}

/* Every STATUS_TTY_USEC: note who owns which asset, sample the clock, and show the status
 * line (rewritten in place on a terminal, else one line every STATUS_PIPE_USEC). */
static void status_update(void)
{
	hako_time_t now = hako_now_usec();
	if (L.dom == NULL || now < L.next_status) {
		return;
	}
	L.next_status = now + STATUS_TTY_USEC;
	int n = 0;
	list_assets(&n);
	note_owners(n);
	if (!L.status_on) {
		return;
	}
	hako_domain_info_t info;
	hako_domain_get_info(L.dom, &info);
	double f = measured_factor(now, info.world_time);
	if (hakoi_console_quiet() || (!hakoi_console_tty() && now < L.next_print)) {
		return;
	}
	L.next_print = now + STATUS_PIPE_USEC;
	int alive = 0;
	for (int i = 0; i < n; i++) {
		alive += L.assets[i].alive;
	}
	char t[48], rate[32] = "-", stop[64] = "";
	if (f >= 0.0) {
		snprintf(rate, sizeof(rate), "%.2fx", f);
	}
	if (L.cfg->stop_at_usec > 0) {
		char s[48];
		snprintf(stop, sizeof(stop), " / %s s",
		         fmt_time(L.cfg->stop_at_usec, s, sizeof(s)));
	}
	char text[256];
	snprintf(text, sizeof(text), "%s | world %s s%s | %s real time | assets: %d, %d alive",
	         hako_state_name(info.state), fmt_time(info.world_time, t, sizeof(t)), stop, rate,
	         (int)info.asset_count, alive);
	hakoi_console_status(text);
}

static void status_stop(void)
{
	hakoi_console_status_clear();
	L.status_on = 0;
	fflush(stdout);
}

/* ---- processes ---- */

static int spawn(hakoi_proc_t *p)
{
	char why[1024];
	if (hakoi_sup_spawn(&S, p, why, sizeof(why)) != 0) {
		failed("%s", why);
		return -1;
	}
	return 0;
}

/* Wait up to timeout_usec for what the processes do (and signals), keeping the status line
 * up to date. */
static void pump(hako_time_t timeout_usec)
{
	hako_time_t now = hako_now_usec();
	if (L.status_on && L.next_status - now < timeout_usec) {
		timeout_usec = L.next_status > now ? L.next_status - now : 0;
	}
	hakoi_sup_pump(&S, timeout_usec);
	status_update();
}

/* ---- domain ---- */

static int asset_registered(const char *name)
{
	int n = 0;
	if (list_assets(&n) != 0) {
		return 0;
	}
	note_owners(n);
	for (int i = 0; i < n; i++) {
		if (strcmp(L.assets[i].name, name) == 0 && L.assets[i].alive) {
			return 1;
		}
	}
	return 0;
}

static int owner(const hakoi_proc_t *p)
{
	return p->cfg->wait_for == HAKOI_LAUNCH_WAIT_ASSET || p->owns_asset;
}

static void fail_proc(hakoi_proc_t *p, const char *when)
{
	char how[128], extra[64] = "";
	describe(p->status, how, sizeof(how));
	if (p->restarts > 0) {
		snprintf(extra, sizeof(extra), " (after %d restart%s)", p->restarts,
		         p->restarts == 1 ? "" : "s");
	}
	failed("process \"%s\" %s%s%s", p->cfg->name, how, extra, when);
}

/* The viewer and the recorder: processes beside the run, never awaited, never fatal. */
static int side(const hakoi_launch_proc_t *c)
{
	return c->viewer || c->recorder;
}

/* The viewer is there to look, the recorder to keep a copy, neither is part of the run: their
 * end is said, never fatal. */
static void viewer_exited(const hakoi_proc_t *p, enum exit_mode mode, const char *how)
{
	if (mode == MODE_SHUTDOWN && (p->signalled || exited_ok(p->status))) {
		hakoi_say("%s (pid %d) %s", p->cfg->name, (int)p->pgid, how);
		return;
	}
	hakoi_say("%s: %s (pid %d) %s%s%s; the run goes on without it (its log: %s/%s.log)",
	          p->cfg->name, p->cfg->command, (int)p->pgid, how, p->last[0] != '\0' ? ": " : "",
	          p->last, L.cfg->log_dir, p->cfg->name);
}

/* Look at the processes that exited since the last call. Returns the process whose failure
 * needs the whole simulation restarted (MODE_RUN only), else NULL; a fatal failure is recorded
 * with failed(). */
static hakoi_proc_t *handle_exits(enum exit_mode mode)
{
	hakoi_proc_t *restart_domain = NULL;
	for (int i = 0; i < S.nprocs; i++) {
		hakoi_proc_t *p = &S.procs[i];
		if (!p->exit_pending) {
			continue;
		}
		p->exit_pending = 0;
		char how[128];
		describe(p->status, how, sizeof(how));
		if (p->cfg->phase == HAKOI_LAUNCH_PHASE_AFTER) {
			continue; /* run_after looks at them */
		}
		if (side(p->cfg)) {
			viewer_exited(p, mode, how);
			continue;
		}
		if (mode == MODE_SHUTDOWN) {
			if (!exited_ok(p->status) && !p->signalled && !failing()) {
				fail_proc(p, " after the simulation stopped");
			} else {
				hakoi_say("%s (pid %d) %s", p->cfg->name, (int)p->pgid, how);
			}
			continue;
		}
		if (exited_ok(p->status)) {
			hakoi_say("%s (pid %d) %s", p->cfg->name, (int)p->pgid, how);
			continue;
		}
		if (mode == MODE_RUN && p->cfg->continue_on_failure && !failing()) {
			hakoi_say("%s (pid %d) %s; the run goes on without it (\"on_failure\": "
			          "\"continue\")",
			          p->cfg->name, (int)p->pgid, how);
			continue;
		}
		if (!hakoi_sup_can_restart(p) || failing()) {
			fail_proc(p,
			          mode == MODE_START ? " while the processes were starting" : "");
			continue;
		}
		p->restarts++;
		if (mode == MODE_RUN && owner(p) && restart_domain == NULL) {
			hakoi_say(
			    "%s (pid %d) %s; restarting it (restart %d of %d) and the simulation "
			    "from world time 0",
			    p->cfg->name, (int)p->pgid, how, p->restarts, p->cfg->max_restarts);
			restart_domain = p;
			continue;
		}
		hako_time_t b = hakoi_sup_backoff(p->restarts);
		p->restart_at = hako_now_usec() + b;
		hakoi_say("%s (pid %d) %s; restarting it in %.2f s (restart %d of %d)",
		          p->cfg->name, (int)p->pgid, how, (double)b / 1e6, p->restarts,
		          p->cfg->max_restarts);
	}
	return restart_domain;
}

/* Start the processes whose restart is due. An asset can only register while the domain is
 * stopped, so an asset's process waits for that. */
static int service_restarts(void)
{
	hako_time_t now = hako_now_usec();
	for (int i = 0; i < S.nprocs; i++) {
		hakoi_proc_t *p = &S.procs[i];
		if (p->restart_at == 0 || now < p->restart_at || hakoi_sup_running(p)) {
			continue;
		}
		if (owner(p) && hako_domain_state(L.dom) != HAKO_STATE_STOPPED) {
			continue;
		}
		if (spawn(p) != 0) {
			return -1;
		}
		hakoi_say("restarted %s (pid %d)", p->cfg->name, (int)p->pid);
	}
	return 0;
}

static int domain_error(void)
{
	hako_domain_info_t info;
	hako_domain_get_info(L.dom, &info);
	int n = 0;
	list_assets(&n);
	hakoi_proc_t *culprit = NULL;
	const char *asset = "";
	for (int i = 0; i < n && culprit == NULL; i++) {
		if (!L.assets[i].alive) {
			culprit = hakoi_sup_find(&S, L.assets[i].pid);
			asset = L.assets[i].name;
		}
	}
	if (culprit != NULL) {
		char how[160] = "";
		if (culprit->exited) {
			describe(culprit->status, how, sizeof(how));
			strcat(how, ": ");
		}
		failed("process \"%s\" (asset '%s') %sdomain error: %s", culprit->cfg->name, asset,
		       how, info.error_reason);
	} else {
		failed("domain error: %s", info.error_reason);
	}
	return -1;
}

/* Wait (handling everything) until the domain reaches `state`; -1 after a failure. */
static int wait_state(int state, const char *what, enum exit_mode mode)
{
	hako_time_t deadline = hako_now_usec() + STATE_WAIT_USEC;
	for (;;) {
		int st = hako_domain_state(L.dom);
		if (st == state) {
			return 0;
		}
		if (st == HAKO_STATE_ERROR && state != HAKO_STATE_ERROR) {
			return domain_error();
		}
		if (hako_now_usec() >= deadline) {
			int n = 0;
			char names[512] = "";
			list_assets(&n);
			for (int i = 0; i < n; i++) {
				if (L.assets[i].event != HAKO_EVENT_NONE) {
					hakoi_proc_t *p = hakoi_sup_find(&S, L.assets[i].pid);
					size_t u = strlen(names);
					snprintf(names + u, sizeof(names) - u, "%s'%s'%s%s%s",
					         u > 0 ? ", " : "", L.assets[i].name,
					         p != NULL ? " (process " : "",
					         p != NULL ? p->cfg->name : "",
					         p != NULL ? ")" : "");
				}
			}
			failed("%s: the domain is still %s after %d s%s%s", what,
			       hako_state_name(st), STATE_WAIT_USEC / 1000000,
			       names[0] != '\0' ? "; not acknowledged by " : "", names);
			return -1;
		}
		if (mode != MODE_SHUTDOWN && S.interrupted) {
			return -1;
		}
		pump(20000);
		handle_exits(mode);
		if (mode != MODE_SHUTDOWN && failing()) {
			return -1;
		}
	}
}

/* ---- phases ---- */

static int ready(hakoi_proc_t *p)
{
	switch (p->cfg->wait_for) {
	case HAKOI_LAUNCH_WAIT_ASSET: return asset_registered(p->cfg->wait_what);
	case HAKOI_LAUNCH_WAIT_LOG: return p->seen_log;
	default: return 1;
	}
}

static const char *wait_phrase(const hakoi_proc_t *p, char *buf, size_t len)
{
	switch (p->cfg->wait_for) {
	case HAKOI_LAUNCH_WAIT_ASSET:
		snprintf(buf, len, "register asset '%s'", p->cfg->wait_what);
		break;
	case HAKOI_LAUNCH_WAIT_LOG: snprintf(buf, len, "print \"%s\"", p->cfg->wait_what); break;
	default: buf[0] = '\0';
	}
	return buf;
}

/* Wait until p is ready as its wait_for says, restarting it if it may be. `recheck`: p was
 * ready before, say nothing if it still is. */
static int wait_ready(hakoi_proc_t *p, enum exit_mode mode, int recheck)
{
	char what[256];
	hako_time_t deadline = hako_now_usec() + p->cfg->timeout_ms * 1000;
	wait_phrase(p, what, sizeof(what));
	for (int waited = 0;; waited = 1) {
		if (ready(p)) {
			hakoi_sup_drain(p); /* its own lines about it come first */
			if ((waited || !recheck) && p->cfg->wait_for != HAKOI_LAUNCH_WAIT_NOTHING) {
				hakoi_say("%s is ready (did %s %.2f s after it started)",
				          p->cfg->name, what,
				          (double)(hako_now_usec() - p->started_at) / 1e6);
			}
			return 0;
		}
		if (S.interrupted) {
			return -1;
		}
		int was_running = hakoi_sup_running(p);
		pump(20000);
		handle_exits(mode);
		if (failing()) {
			return -1;
		}
		if (!hakoi_sup_running(p) && p->restart_at == 0 && !ready(p)) {
			char how[128];
			describe(p->status, how, sizeof(how));
			failed("process \"%s\" %s before it did %s", p->cfg->name, how, what);
			return -1;
		}
		if (service_restarts() != 0) {
			return -1;
		}
		if (!was_running && hakoi_sup_running(p)) {
			deadline = hako_now_usec() + p->cfg->timeout_ms * 1000; /* a new try */
		}
		if (hako_now_usec() >= deadline && p->restart_at == 0) {
			failed("process \"%s\" did not %s within %lld ms", p->cfg->name, what,
			       p->cfg->timeout_ms);
			return -1;
		}
	}
}

/* Every awaited asset registered (again, after a restart of the domain). */
static int wait_assets(enum exit_mode mode)
{
	for (int i = 0; i < S.nprocs; i++) {
		hakoi_proc_t *p = &S.procs[i];
		if (p->cfg->phase == HAKOI_LAUNCH_PHASE_RUN && p->started &&
		    p->cfg->wait_for != HAKOI_LAUNCH_WAIT_NOTHING && wait_ready(p, mode, 1) != 0) {
			return -1;
		}
	}
	return 0;
}

/* The "run" processes, in order (again: only those that are not running). */
static int start_processes(int again)
{
	for (int i = 0; i < S.nprocs; i++) {
		hakoi_proc_t *p = &S.procs[i];
		if (p->cfg->phase != HAKOI_LAUNCH_PHASE_RUN || side(p->cfg) ||
		    (again && hakoi_sup_running(p))) {
			continue;
		}
		if (S.interrupted || failing() || spawn(p) != 0) {
			return -1;
		}
		char what[256];
		wait_phrase(p, what, sizeof(what));
		hakoi_say("started %s (pid %d)%s%s", p->cfg->name, (int)p->pid,
		          what[0] != '\0' ? "; waiting for it to " : "", what);
		if (wait_ready(p, MODE_START, 0) != 0) {
			return -1;
		}
		/* Hakoniwa's delay_sec: a pause before the next one starts. */
		hako_time_t until = hako_now_usec() + p->cfg->delay_ms * 1000;
		do {
			pump(0);
			handle_exits(MODE_START);
			if (S.interrupted || failing() || service_restarts() != 0) {
				return -1;
			}
			hako_time_t left = until - hako_now_usec();
			if (left > 0) {
				pump(left < 20000 ? left : 20000);
			}
		} while (hako_now_usec() < until);
	}
	return wait_assets(MODE_START);
}

/* ---- the viewer ---- */

/* hako-viewer's two URLs, from its lines "... read-only at http://..." and "    http://...
 * ?token=...". */
static void viewer_line(hakoi_proc_t *p, const char *line, size_t len)
{
	(void)p;
	(void)len;
	const char *url = strstr(line, "http://");
	if (url == NULL) {
		return;
	}
	size_t n = strcspn(url, " \t\r");
	char *dst = strstr(url, "?token=") != NULL ? L.viewer_ctl : L.viewer_url;
	snprintf(dst, VIEWER_URL_BYTES, "%.*s", (int)n, url);
}

/* Start hako-viewer and say its URLs once it printed them (or why not, within a bounded
 * wait). Whatever becomes of it, the run goes on: -1 only for a signal. */
static int start_viewer(void)
{
	hakoi_proc_t *p = NULL;
	for (int i = 0; i < S.nprocs; i++) {
		if (S.procs[i].cfg->viewer) {
			p = &S.procs[i];
		}
	}
	if (p == NULL) {
		return 0;
	}
	char why[1024];
	p->on_line = viewer_line;
	if (hakoi_sup_spawn(&S, p, why, sizeof(why)) != 0) {
		hakoi_say("viewer: %s; the run goes on without it", why);
		return 0;
	}
	hako_time_t deadline = hako_now_usec() + VIEWER_WAIT_USEC;
	while (L.viewer_ctl[0] == '\0' && hakoi_sup_running(p) && hako_now_usec() < deadline) {
		if (S.interrupted) {
			return -1;
		}
		pump(20000);
	}
	if (L.viewer_ctl[0] != '\0') {
		hakoi_say_always("viewer: %s (read-only), %s (control)", L.viewer_url,
		                 L.viewer_ctl);
		/* The same port speaks Foxglove's WebSocket protocol (docs/viewer.md). */
		hakoi_say_always("Foxglove: open ws://%s (read-only; add ?token=... to "
		                 "publish)",
		                 L.viewer_url + strlen("http://"));
	} else if (hakoi_sup_running(p)) {
		hakoi_say("viewer: hako-viewer (pid %d) printed no URL within %d s; the run goes "
		          "on (its log: %s/viewer.log)",
		          (int)p->pid, VIEWER_WAIT_USEC / 1000000, L.cfg->log_dir);
	}
	handle_exits(MODE_START); /* an early end is said there */
	return 0;
}

/* ---- the recorder ---- */

static void record_line(hakoi_proc_t *p, const char *line, size_t len)
{
	(void)len;
	const char *ready = L.cfg->record.asset != NULL ? "registered (step" : "recording domain";
	if (strstr(line, ready) != NULL) {
		p->seen_log = 1;
	}
}

/* Start hako-record and wait (10 s at most) until it follows the domain, so that it sees the
 * first writes (as an asset: until it is registered, so that the run waits for it). Whatever
 * becomes of it, the run goes on: -1 only for a signal. */
static int start_record(void)
{
	hakoi_proc_t *p = NULL;
	for (int i = 0; i < S.nprocs; i++) {
		if (S.procs[i].cfg->recorder) {
			p = &S.procs[i];
		}
	}
	if (p == NULL) {
		return 0;
	}
	char why[1024];
	p->on_line = record_line;
	if (hakoi_sup_spawn(&S, p, why, sizeof(why)) != 0) {
		hakoi_say("record: %s; the run goes on without it", why);
		return 0;
	}
	hako_time_t deadline = hako_now_usec() + VIEWER_WAIT_USEC;
	while (hakoi_sup_running(p) && hako_now_usec() < deadline) {
		if (S.interrupted) {
			return -1;
		}
		if (p->seen_log) {
			break;
		}
		pump(20000);
	}
	if (hakoi_sup_running(p)) {
		hakoi_say_always("record: %s/%s", L.cfg->log_dir,
		                 L.cfg->record.file != NULL ? L.cfg->record.file : "record.mcap");
	}
	handle_exits(MODE_START); /* an early end is said there */
	return 0;
}

/* ---- a federation node ---- */

static int is_client(void)
{
	return L.cfg->federation != NULL && L.cfg->federation->role == HAKO_CONDUCTOR_CLIENT;
}

/* Link the domain into the federation once the node's processes are ready: a client joins only
 * then, so that the server, which starts the federation when every client has joined, never
 * starts one whose assets are still registering. */
static int link_federation(void)
{
	const hako_conductor_config_t *c = L.cfg->federation;
	hako_error_t err;
	char msg[1200];
	if (hako_rd_full_node_start(c, L.dom, &L.node, &err) != 0) {
		failed("%s", hako_error_format(&err, msg, sizeof(msg)));
		return -1;
	}
	if (L.cfg->trace_file != NULL &&
	    hako_conductor_node_trace(L.node, L.cfg->trace_file) != 0) {
		failed("cannot write the conductor's trace %s: %s", L.cfg->trace_file,
		       strerror(errno));
		return -1;
	}
	/* After a restart of the server, the processes first (rejoin_restarted_server). */
	hako_conductor_node_hold_rejoin(L.node, 1);
	if (c->role == HAKO_CONDUCTOR_SERVER) {
		hakoi_say("federation server %s on %s: waiting for %zu client%s to join",
		          c->node_id, c->control_address, c->client_count,
		          c->client_count == 1 ? "" : "s");
	} else {
		hakoi_say("federation client %s: joining server %s at %s", c->node_id, c->server_id,
		          c->control_address);
	}
	return 0;
}

/* Why the federation did not start within start_timeout_ms, from this node's side. */
static void start_timed_out(const hako_conductor_peer_stats_t *st, int n, int joined)
{
	const hako_conductor_config_t *c = L.cfg->federation;
	long long ms = L.cfg->start_timeout_ms;
	char missing[512] = "";
	for (int i = 0; i < n; i++) {
		size_t u = strlen(missing);
		if (!st[i].joined && snprintf(missing + u, sizeof(missing) - u, "%s%s",
		                              u > 0 ? ", " : "", st[i].node_id) < 0) {
			break;
		}
	}
	if (c->role == HAKO_CONDUCTOR_SERVER) {
		failed("client%s %s did not join within %lld ms (the server listens on %s)",
		       n - joined == 1 ? "" : "s", missing, ms, c->control_address);
	} else if (joined) {
		failed("server %s did not start the federation within %lld ms", c->server_id, ms);
	} else {
		failed("could not join server %s at %s within %lld ms", c->server_id,
		       c->control_address, ms);
	}
}

/* A client: how often its server restarted (hako_conductor_peer_stats_t.restarts). */
static uint32_t server_restarts(void)
{
	hako_conductor_peer_stats_t st;
	int n = 0;
	if (!is_client() || L.node == NULL || hako_conductor_node_stats(L.node, &st, 1, &n) != 0 ||
	    n < 1) {
		return 0;
	}
	return st.restarts;
}

/* Server: until every client has joined. Client: until the server started the federation. */
static int wait_federation(void)
{
	const hako_conductor_config_t *c = L.cfg->federation;
	int server = c->role == HAKO_CONDUCTOR_SERVER;
	hako_time_t deadline =
	    L.cfg->start_timeout_ms > 0 ? hako_now_usec() + L.cfg->start_timeout_ms * 1000 : 0;
	unsigned char told[HAKO_CONDUCTOR_MAX_CLIENTS] = {0};
	/* A short run may be over (and reset) between two looks: a reset or a world time that
	 * moved says it started too. */
	uint32_t resets = hako_domain_reset_count(L.dom);
	L.resets_at_start = resets;
	for (;;) {
		hako_conductor_peer_stats_t st[HAKO_CONDUCTOR_MAX_CLIENTS];
		int n = 0, joined = 0;
		hako_conductor_node_stats(L.node, st, HAKO_CONDUCTOR_MAX_CLIENTS, &n);
		for (int i = 0; i < n; i++) {
			joined += st[i].joined;
			if (st[i].joined && !told[i]) {
				told[i] = 1;
				hakoi_say(server ? "client %s joined" : "joined server %s",
				          st[i].node_id);
			}
		}
		if (server ? joined == n
		           : hako_domain_state(L.dom) != HAKO_STATE_STOPPED ||
		                 hako_domain_world_time(L.dom) > 0 ||
		                 hako_domain_reset_count(L.dom) != resets) {
			return 0;
		}
		if (S.interrupted) {
			return -1;
		}
		if (hako_domain_state(L.dom) == HAKO_STATE_ERROR) {
			return domain_error();
		}
		if (deadline != 0 && hako_now_usec() >= deadline) {
			start_timed_out(st, n, joined);
			return -1;
		}
		pump(20000);
		handle_exits(MODE_START);
		if (failing()) {
			return -1;
		}
	}
}

/* The drift this node held against each peer: its share of the federation's end output. */
static void report_federation(void)
{
	hako_conductor_peer_stats_t st[HAKO_CONDUCTOR_MAX_CLIENTS];
	int n = 0;
	const hako_conductor_config_t *c = L.cfg->federation;
	if (L.node == NULL || L.wall0 == 0 ||
	    hako_conductor_node_stats(L.node, st, HAKO_CONDUCTOR_MAX_CLIENTS, &n) != 0) {
		return;
	}
	char t[48];
	/* drift = this node's world time - the peer's as last received (conductor.h) */
	hakoi_say_always("federation %s %s, world time %s s: drift against each peer (us; Dmax "
	                 "%lld)",
	                 c->role == HAKO_CONDUCTOR_SERVER ? "server" : "client", c->node_id,
	                 fmt_time(L.world_end, t, sizeof(t)), (long long)c->max_delay_usec);
	hakoi_say_always("  %-16s %-6s %10s %10s %10s %9s %9s", "peer", "state", "drift_p50",
	                 "drift_p95", "drift_max", "age_p50", "samples");
	for (int i = 0; i < n; i++) {
		const char *state = !st[i].joined     ? (st[i].samples > 0 ? "left" : "never")
		                    : st[i].connected ? "ok"
		                                      : "lost";
		hakoi_say_always("  %-16s %-6s %10lld %10lld %10lld %9lld %9llu", st[i].node_id,
		                 state, (long long)st[i].drift_p50_usec,
		                 (long long)st[i].drift_p95_usec, (long long)st[i].drift_max_usec,
		                 (long long)st[i].age_p50_usec, (unsigned long long)st[i].samples);
	}
	/* What the node's link cost, from its own counters (bench/conductor_scale.sh reads it). */
	unsigned long long in = 0, out = 0;
	for (int i = 0; i < n; i++) {
		in += st[i].messages_in;
		out += st[i].messages_out;
	}
	hakoi_say_always("  messages: %llu in, %llu out (all peers: in = their time messages, "
	                 "out = control messages to them)",
	                 in, out);
}

/* Start the run. A process that ends meanwhile is left to run_simulation, which may restart
 * it. A federation's server starts it for all once every client joined; a client waits for
 * that. */
static int start_simulation(void)
{
	int r;
	if (L.cfg->federation != NULL && wait_federation() != 0) {
		return -1;
	}
	if (is_client()) {
		L.server_restarts = server_restarts();
		hakoi_say("server %s started the federation", L.cfg->federation->server_id);
	} else if (L.cfg->stop_at_usec > 0 &&
	           (r = hako_domain_set_stop_time(L.dom, L.cfg->stop_at_usec)) != 0) {
		failed("cannot set the stop time: %s", hako_strerror(r));
		return -1;
	}
	if (!is_client() && (r = hako_domain_start(L.dom)) != 0) {
		failed("cannot start the simulation: %s (the domain is %s)", hako_strerror(r),
		       hako_state_name(hako_domain_state(L.dom)));
		return -1;
	}
	/* Runnable until every asset acknowledged the start; a short run may be over already. */
	hako_time_t deadline = hako_now_usec() + STATE_WAIT_USEC;
	while (hako_domain_state(L.dom) == HAKO_STATE_RUNNABLE) {
		if (hako_now_usec() >= deadline) {
			return wait_state(HAKO_STATE_RUNNING, "start", MODE_RUN);
		}
		if (S.interrupted) {
			return -1;
		}
		pump(10000);
	}
	L.wall0 = hako_now_usec();
	L.samples = 0;
	L.status_on = 1;
	L.next_status = L.wall0;
	L.next_print = L.wall0 + STATUS_PIPE_USEC;
	return 0;
}

/* Stop what is left of the run, reset, restart p and everything from world time 0. */
static int restart_domain(hakoi_proc_t *p)
{
	status_stop();
	int st = hako_domain_state(L.dom);
	if (st == HAKO_STATE_RUNNING || st == HAKO_STATE_RUNNABLE) {
		hako_domain_stop(L.dom);
	}
	/* The dead asset cannot acknowledge the stop: the liveness check puts the domain in
	 * Error, which a reset leaves. */
	hako_time_t deadline = hako_now_usec() + STATE_WAIT_USEC;
	while ((st = hako_domain_state(L.dom)) != HAKO_STATE_STOPPED && st != HAKO_STATE_ERROR) {
		if (hako_now_usec() >= deadline || S.interrupted) {
			failed("restart of \"%s\": the domain is still %s after %d s", p->cfg->name,
			       hako_state_name(st), STATE_WAIT_USEC / 1000000);
			return -1;
		}
		pump(20000);
		handle_exits(MODE_RESTART);
	}
	int r = hako_domain_reset(L.dom);
	if (r != 0) {
		failed("restart of \"%s\": cannot reset the domain: %s", p->cfg->name,
		       hako_strerror(r));
		return -1;
	}
	if (wait_state(HAKO_STATE_STOPPED, "reset", MODE_RESTART) != 0) {
		return -1;
	}
	L.restarts_of_domain++;
	p->restart_at = hako_now_usec() + hakoi_sup_backoff(p->restarts);
	while (p->restart_at != 0) {
		if (S.interrupted || failing()) {
			return -1;
		}
		pump(20000);
		handle_exits(MODE_RESTART);
		if (service_restarts() != 0) {
			return -1;
		}
	}
	if (wait_assets(MODE_RESTART) != 0 || start_simulation() != 0) {
		return -1;
	}
	hakoi_say("simulation restarted from world time 0 (%s restarted %d of %d times)",
	          p->cfg->name, p->restarts, p->cfg->max_restarts);
	return 0;
}

/* Every "run" process ended (0 if there are none: a node that only conducts, such as a
 * federation's server, runs until its stop time or a signal). */
static int all_run_processes_done(void)
{
	int runs = 0;
	for (int i = 0; i < S.nprocs; i++) {
		const hakoi_proc_t *p = &S.procs[i];
		if (p->cfg->phase != HAKOI_LAUNCH_PHASE_RUN || side(p->cfg)) {
			continue;
		}
		runs++;
		if (hakoi_sup_running(p) || p->restart_at != 0 || p->exit_pending) {
			return 0;
		}
	}
	return runs > 0;
}

/* End the "run" processes that still run (SIGTERM, then SIGKILL after grace_ms), as at the end
 * of a run. 0, or -1 on a signal. */
static int end_run_processes(void)
{
	for (int i = 0; i < S.nprocs; i++) {
		hakoi_proc_t *p = &S.procs[i];
		if (p->cfg->phase == HAKOI_LAUNCH_PHASE_RUN && !side(p->cfg) &&
		    hakoi_sup_running(p) && !p->signalled) {
			hakoi_sup_signal(p, SIGTERM);
		}
	}
	hako_time_t deadline = hako_now_usec() + L.cfg->grace_ms * 1000;
	for (int killed = 0;;) {
		int left = 0;
		for (int i = 0; i < S.nprocs; i++) {
			const hakoi_proc_t *p = &S.procs[i];
			left += p->cfg->phase == HAKOI_LAUNCH_PHASE_RUN && !side(p->cfg) &&
			        (hakoi_sup_running(p) || p->exit_pending);
		}
		if (left == 0) {
			return 0;
		}
		if (S.interrupted) {
			return -1;
		}
		if (!killed && hako_now_usec() >= deadline) {
			killed = 1;
			for (int i = 0; i < S.nprocs; i++) {
				hakoi_proc_t *p = &S.procs[i];
				if (p->cfg->phase == HAKOI_LAUNCH_PHASE_RUN && !side(p->cfg) &&
				    hakoi_sup_running(p)) {
					hakoi_say("%s (pid %d) ignored SIGTERM: SIGKILL",
					          p->cfg->name, (int)p->pid);
					hakoi_sup_signal(p, SIGKILL);
				}
			}
		}
		pump(20000);
		handle_exits(MODE_SHUTDOWN);
	}
}

/* A client whose server restarted: its conductor stopped and resets the domain, and joins the
 * new server, which starts a new run from world time 0 (docs/conductor.md, Faults). This node
 * begins its run again too: its processes end as at the end of a run and start again, and then
 * the conductor may join (it holds the join until then). 0, or -1 (failed). */
static int rejoin_restarted_server(hako_time_t stopped_at)
{
	char t[48];
	hakoi_say("server %s restarted: the run stopped at world time %s s; this node resets and "
	          "runs again when the new server starts the federation",
	          L.cfg->federation->server_id, fmt_time(stopped_at, t, sizeof(t)));
	hako_time_t deadline = hako_now_usec() + STATE_WAIT_USEC;
	while (hako_domain_state(L.dom) != HAKO_STATE_STOPPED ||
	       hako_domain_world_time(L.dom) != 0) {
		if (hako_domain_state(L.dom) == HAKO_STATE_ERROR) {
			return domain_error();
		}
		if (S.interrupted || hako_now_usec() >= deadline) {
			if (!S.interrupted) {
				failed("the domain was not reset after the server's restart within "
				       "%d s",
				       STATE_WAIT_USEC / 1000000);
			}
			return -1;
		}
		pump(10000);
		handle_exits(MODE_SHUTDOWN); /* an asset may end with the run */
		if (failing()) {
			return -1;
		}
	}
	if (end_run_processes() != 0 || failing() || start_processes(1) != 0) {
		return -1;
	}
	hako_conductor_node_rejoin(L.node);
	return start_simulation();
}

/* How often a client looks at its domain while it runs: 10 ms. Tests stretch it
 * (HAKO_TEST_LAUNCH_CLIENT_POLL_USEC) to stand for a client process that a loaded machine
 * schedules late, so that its server's reset comes between two looks. */
static hako_time_t client_poll_usec(void)
{
	static hako_time_t poll; /* read once: this runs every poll */
	if (poll == 0) {
		const char *e = getenv("HAKO_TEST_LAUNCH_CLIENT_POLL_USEC");
		long v = e != NULL ? strtol(e, NULL, 10) : 0;
		poll = v > 0 && v <= 1000000 ? (hako_time_t)v : 10000;
	}
	return poll;
}

/* Where the domain stopped, once a reset took its clock back to 0: the world time of its last
 * "Stopping -> Stopped" in the domain's event log. The time this process last saw it running is
 * up to a poll behind (9 ms of world time at 1x under load), so it is only the fallback, for a
 * log that no longer holds that event. */
static hako_time_t stopped_at_from_log(hako_time_t fallback)
{
	static hako_domain_event_t ev[256];
	int n = 0;
	if (hako_domain_read_events(L.dom, 0, ev, (int)(sizeof(ev) / sizeof(ev[0])), &n, NULL) !=
	    0) {
		return fallback;
	}
	char stopped[64];
	snprintf(stopped, sizeof(stopped), "%s -> %s", hako_state_name(HAKO_STATE_STOPPING),
	         hako_state_name(HAKO_STATE_STOPPED));
	for (int i = n - 1; i >= 0; i--) {
		if (strcmp(ev[i].text, stopped) == 0) {
			return ev[i].world_time > 0 ? ev[i].world_time : fallback;
		}
	}
	return fallback;
}

/* Server, while the federation runs: say once when a client is lost (no message for
 * peer_timeout_ms) and the federation goes on without it (on_client_loss "drop"; with "error"
 * the domain's error says it). Looked at twice a second: the statistics cost a copy. */
static void report_lost_clients(void)
{
	static hako_time_t next;
	static unsigned char told[HAKO_CONDUCTOR_MAX_CLIENTS];
	const hako_conductor_config_t *c = L.cfg->federation;
	hako_time_t now = hako_now_usec();
	if (c == NULL || is_client() || L.node == NULL || now < next ||
	    c->on_client_loss != HAKO_CLIENT_LOSS_DROP) {
		return;
	}
	next = now + 500000;
	hako_conductor_peer_stats_t st[HAKO_CONDUCTOR_MAX_CLIENTS];
	int n = 0;
	if (hako_conductor_node_stats(L.node, st, HAKO_CONDUCTOR_MAX_CLIENTS, &n) != 0) {
		return;
	}
	char t[48];
	for (int i = 0; i < n; i++) {
		if (st[i].joined) {
			told[i] = 0; /* back (after a reset): a later loss is told again */
		} else if (!told[i] && st[i].known_time > 0) {
			told[i] = 1;
			hakoi_say(
			    "client %s lost (its last world time %s s): dropped, the federation "
			    "goes on without it (on_client_loss: drop)",
			    st[i].node_id, fmt_time(st[i].known_time, t, sizeof(t)));
		}
	}
}

/* Run until the stop time, a signal, a failure, or the end of every process. */
static int run_simulation(void)
{
	char t[48];
	if (L.cfg->stop_at_usec > 0) {
		hakoi_say("simulation running until world time %s s",
		          fmt_time(L.cfg->stop_at_usec, t, sizeof(t)));
	} else {
		hakoi_say("simulation running (no stop time: Ctrl-C to stop)");
	}
	hako_time_t last_world = 0;
	for (;;) {
		/* A client's federation is stopped and then reset by the server: look often enough
		 * to see where it stopped before the reset takes the clock back to 0. */
		pump(is_client() ? client_poll_usec() : 100000);
		hako_time_t now_world = hako_domain_world_time(L.dom);
		last_world = now_world > 0 ? now_world : last_world;
		if (S.interrupted) {
			return -1;
		}
		hakoi_proc_t *p = handle_exits(MODE_RUN);
		if (failing()) {
			return -1;
		}
		if (p != NULL) {
			if (L.cfg->federation != NULL) {
				fail_proc(
				    p,
				    " (a federation node does not restart the simulation alone)");
				return -1;
			}
			if (restart_domain(p) != 0) {
				return -1;
			}
			continue;
		}
		if (service_restarts() != 0) {
			return -1;
		}
		report_lost_clients();
		int st = hako_domain_state(L.dom);
		if (st == HAKO_STATE_ERROR) {
			/* Its process may not have been reaped yet: give the exit a moment to come
			 * in, so that a restartable process is restarted. */
			pump(50000);
			if ((p = handle_exits(MODE_RUN)) != NULL && L.cfg->federation == NULL) {
				if (restart_domain(p) != 0) {
					return -1;
				}
				continue;
			}
			return failing() ? -1 : domain_error();
		}
		/* Before the stop and the processes' ends are taken for the run's: they may be the
		 * server's restart, which this node's conductor carries out by stopping the domain.
		 * Not looked at while it runs: the peer statistics cost a copy of their samples. */
		if (is_client() && st != HAKO_STATE_RUNNING &&
		    server_restarts() != L.server_restarts) {
			if (rejoin_restarted_server(last_world) != 0) {
				return -1;
			}
			last_world = 0;
			continue;
		}
		if (st == HAKO_STATE_STOPPED) {
			L.wall_end = hako_now_usec();
			L.world_end = hako_domain_world_time(L.dom);
			if (L.world_end == 0) { /* reset already (a client's server may be quick) */
				L.world_end = stopped_at_from_log(last_world);
			}
			fmt_time(L.world_end, t, sizeof(t));
			status_stop();
			if (L.cfg->stop_at_usec > 0 && hako_domain_stop_time(L.dom) == 0) {
				hakoi_say(
				    "stop time reached: the simulation stopped at world time %s s",
				    t);
			} else if (is_client()) {
				hakoi_say("the federation stopped at world time %s s", t);
			} else {
				hakoi_say(
				    "the simulation was stopped from outside at world time %s s",
				    t);
			}
			return 0;
		}
		if (all_run_processes_done()) {
			L.wall_end = hako_now_usec();
			L.world_end = hako_domain_world_time(L.dom);
			status_stop();
			hakoi_say(
			    "every process has exited: stopping the simulation at world time %s s",
			    fmt_time(L.world_end, t, sizeof(t)));
			return 0;
		}
	}
}

/* A client's domain is reset by its server, which leads the federation: a reset of its own
 * would reach the server as a request, maybe before the server has seen its own stop. Wait for
 * the server's (it may have come already), unless the server is gone. 1 once reset. */
static int reset_by_server(void)
{
	if (!is_client() || L.node == NULL || L.wall0 == 0) {
		return 0;
	}
	hako_time_t deadline = hako_now_usec() + STATE_WAIT_USEC / 2;
	for (;;) {
		hako_conductor_peer_stats_t st;
		int n = 0;
		if (hako_domain_reset_count(L.dom) != L.resets_at_start &&
		    hako_domain_state(L.dom) == HAKO_STATE_STOPPED) {
			return 1;
		}
		if (hako_conductor_node_stats(L.node, &st, 1, &n) != 0 || n < 1 || !st.connected ||
		    hako_now_usec() >= deadline || S.signals >= 2) {
			return 0; /* no server to do it */
		}
		pump(10000);
		handle_exits(MODE_SHUTDOWN);
	}
}

/* Stop, reset, let the processes finish, then SIGTERM / SIGKILL the rest. */
static void shutdown_run(void)
{
	status_stop();
	for (int i = 0; i < S.nprocs; i++) {
		S.procs[i].restart_at = 0;
	}
	handle_exits(MODE_SHUTDOWN);
	int st = hako_domain_state(L.dom);
	if (st == HAKO_STATE_RUNNING || st == HAKO_STATE_RUNNABLE) {
		hako_domain_stop(L.dom);
	}
	if (st != HAKO_STATE_STOPPED && st != HAKO_STATE_ERROR) {
		hako_time_t deadline = hako_now_usec() + STATE_WAIT_USEC / 2;
		while ((st = hako_domain_state(L.dom)) != HAKO_STATE_STOPPED &&
		       st != HAKO_STATE_ERROR && hako_now_usec() < deadline && S.signals < 2) {
			pump(20000);
			handle_exits(MODE_SHUTDOWN);
		}
	}
	if ((st == HAKO_STATE_STOPPED || st == HAKO_STATE_ERROR) && !reset_by_server() &&
	    hako_domain_reset(L.dom) == 0) {
		hako_time_t deadline = hako_now_usec() + STATE_WAIT_USEC / 2;
		while (hako_domain_state(L.dom) != HAKO_STATE_STOPPED && S.signals < 2) {
			if (hako_now_usec() >= deadline) {
				hakoi_say("the reset was not acknowledged within %d s; going on",
				          STATE_WAIT_USEC / 2000000);
				break;
			}
			pump(20000);
			handle_exits(MODE_SHUTDOWN);
		}
	}
	/* The assets finish their cycle after the reset and exit; the other processes do not
	 * follow the simulation, so they are asked to end now. */
	for (int i = 0; i < S.nprocs; i++) {
		hakoi_proc_t *p = &S.procs[i];
		if (hakoi_sup_running(p) && !p->owns_asset) {
			hakoi_say("stopping %s (pid %d, not an asset): SIGTERM", p->cfg->name,
			          (int)p->pid);
			hakoi_sup_signal(p, SIGTERM);
		}
	}
	hako_time_t deadline = hako_now_usec() + L.cfg->grace_ms * 1000;
	for (;;) {
		int left = 0;
		for (int i = 0; i < S.nprocs; i++) {
			left += hakoi_sup_running(&S.procs[i]) && S.procs[i].owns_asset;
		}
		if (left == 0 || hako_now_usec() >= deadline || S.signals >= 2) {
			break;
		}
		pump(20000);
		handle_exits(MODE_SHUTDOWN);
	}
	hakoi_sup_terminate(&S, 0);
	handle_exits(MODE_SHUTDOWN);
}

static int run_after(void)
{
	for (int i = 0; i < S.nprocs; i++) {
		hakoi_proc_t *p = &S.procs[i];
		if (p->cfg->phase != HAKOI_LAUNCH_PHASE_AFTER) {
			continue;
		}
		if (spawn(p) != 0) {
			return -1;
		}
		hakoi_say("started %s (pid %d), after the simulation", p->cfg->name, (int)p->pid);
		while (hakoi_sup_running(p) && !S.interrupted) {
			pump(100000);
		}
		if (S.interrupted) {
			hakoi_sup_terminate(&S, 1);
			return -1;
		}
		p->exit_pending = 0;
		if (!exited_ok(p->status)) {
			fail_proc(p, "");
			return -1;
		}
		hakoi_say("%s (pid %d) exited with code 0", p->cfg->name, (int)p->pgid);
	}
	return 0;
}

/* ---- setup ---- */

static int create_domain(void)
{
	const char *name = L.cfg->domain;
	/* A process whose failure the run survives: its dead asset is removed, not an error. */
	for (size_t i = 0; i < L.cfg->proc_count; i++) {
		if (L.cfg->procs[i].continue_on_failure) {
			L.cfg->core.liveness_policy = HAKO_LIVENESS_REMOVE;
		}
	}
	int r = hako_domain_create(name, &L.cfg->core, &L.dom);
	if (r == HAKO_EBUSY) {
		hako_domain_t *other = NULL;
		hako_domain_info_t info;
		if (hako_domain_open(name, &other) == 0 &&
		    hako_domain_get_info(other, &info) == 0) {
			failed(
			    "domain '%s' already has a conductor (pid %d); hako-launch is the "
			    "conductor of its domain: stop that one or choose another \"domain\"",
			    name, info.master_pid);
		} else {
			failed("domain '%s' already has a conductor", name);
		}
		hako_domain_close(other);
		return -1;
	}
	if (r != 0) {
		failed("cannot create domain '%s': %s", name, hako_strerror(r));
		return -1;
	}
	if ((r = hako_master_start(L.dom, &L.cfg->master, &L.master)) != 0) {
		failed("cannot start the conductor of domain '%s': %s", name, hako_strerror(r));
		return -1;
	}
	hako_domain_info_t info;
	hako_domain_get_info(L.dom, &info);
	L.asset_cap = (int)info.max_assets;
	L.assets = calloc((size_t)L.asset_cap, sizeof(*L.assets));
	if (L.assets == NULL) {
		failed("out of memory");
		return -1;
	}
	return 0;
}

static void close_domain(void)
{
	if (L.master != NULL) {
		hako_master_stop(L.master);
		L.master = NULL;
	}
	if (L.dom != NULL) {
		/* Remove the segment only if it is still ours (hako-cmd clean --force may have
		 * replaced it). */
		hako_domain_t *now = NULL;
		hako_domain_info_t cur;
		int ours = hako_domain_open(L.cfg->domain, &now) == 0 &&
		           hako_domain_get_info(now, &cur) == 0 && cur.master_pid == (int)getpid();
		hako_domain_close(now);
		hako_domain_close(L.dom);
		L.dom = NULL;
		if (ours) {
			hako_domain_remove(L.cfg->domain);
		}
	}
}

static void describe_setup(void)
{
	const hakoi_launch_config_t *c = L.cfg;
	char stop[64] = "no stop time";
	if (c->stop_at_usec > 0) {
		char t[48];
		snprintf(stop, sizeof(stop), "stop at %s s",
		         fmt_time(c->stop_at_usec, t, sizeof(t)));
	}
	char factor[32];
	if (c->master.real_time_factor == 0.0) {
		snprintf(factor, sizeof(factor), "as fast as possible");
	} else {
		snprintf(factor, sizeof(factor), "%gx real time", c->master.real_time_factor);
	}
	hakoi_say(
	    "domain '%s', conductor in this process (pid %d): delta %g ms, Dmax %g ms, %s, %s; "
	    "logs in %s",
	    c->domain, (int)getpid(), (double)c->master.delta_usec / 1e3,
	    (double)c->master.max_delay_usec / 1e3, factor, stop, c->log_dir);
}

static int finish(int rc)
{
	hakoi_sup_sweep(&S);
	hako_conductor_node_stop(L.node); /* tells the peers it leaves */
	L.node = NULL;
	close_domain();
	if (S.interrupted && L.failure[0] == '\0') {
		hakoi_complain("stopped by SIG%s; every process has ended",
		               sigabbrev_np(S.interrupted));
		rc = 128 + S.interrupted;
	} else if (L.failure[0] != '\0') {
		if (L.logs_ready) {
			hakoi_say("logs in %s", L.cfg->log_dir);
		}
		hakoi_complain("FAILED: %s", L.failure);
		rc = HAKOI_LAUNCH_EXIT_FAILED;
	}
	hakoi_console_close_log();
	hakoi_sup_close(&S);
	free(L.assets);
	hakoi_launch_free(L.cfg);
	return rc;
}

int hakoi_launch_run(hakoi_launch_config_t *cfg)
{
	char why[1024];
	L.cfg = cfg;
	if (hakoi_sup_open(&S, cfg, why, sizeof(why)) != 0) {
		hakoi_complain("%s", why);
		return finish(HAKOI_LAUNCH_EXIT_FAILED);
	}
	if (hakoi_mkdirs(cfg->log_dir_abs, 0755) != 0) {
		failed("cannot create the log folder %s: %s", cfg->log_dir, strerror(errno));
		return finish(HAKOI_LAUNCH_EXIT_FAILED);
	}
	L.logs_ready = 1;
	char own[PATH_MAX];
	snprintf(own, sizeof(own), "%s/hako-launch.log", cfg->log_dir_abs);
	hakoi_console_open_log(own);
	if (create_domain() != 0) {
		return finish(HAKOI_LAUNCH_EXIT_FAILED);
	}
	describe_setup();

	int ok = start_viewer() == 0 && start_record() == 0 && start_processes(0) == 0 &&
	         (L.cfg->federation == NULL || link_federation() == 0) && start_simulation() == 0 &&
	         run_simulation() == 0;
	if (L.wall_end == 0) {
		L.wall_end = hako_now_usec();
		L.world_end = hako_domain_world_time(L.dom);
	}
	shutdown_run();
	report_federation();
	if (ok && !failing()) {
		/* Before the "after" processes, so that a report's last line is the last line. */
		char t[48];
		double wall = (double)(L.wall_end - L.wall0) / 1e6;
		hakoi_say_always(
		    "done: world time %s s in %.2f s of wall time (%.2fx real time)%s; logs in %s",
		    fmt_time(L.world_end, t, sizeof(t)), wall,
		    wall > 0 ? (double)L.world_end / 1e6 / wall : 0.0,
		    L.restarts_of_domain > 0 ? " after restarts" : "", cfg->log_dir);
		run_after();
	} else if (L.failure[0] == '\0' && S.interrupted == 0) {
		failed("the run ended without a reason");
	}
	int has_after = 0;
	for (int i = 0; i < S.nprocs; i++) {
		has_after |=
		    S.procs[i].cfg->phase == HAKOI_LAUNCH_PHASE_AFTER && !S.procs[i].started;
	}
	if (has_after && failing()) {
		hakoi_say("the \"after\" processes were not run");
	}
	return finish(0);
}
