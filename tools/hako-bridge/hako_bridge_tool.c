/* hako-bridge: the bridge daemon of one node. Loads the bridge file, opens and starts the node's
 * endpoints, runs the bridge until SIGINT / SIGTERM and prints per-connection statistics on exit
 * and on SIGUSR1. Standalone it ticks on the wall clock; with --asset it is a core asset that
 * ticks once per step on world time. An optional control socket (--control) takes text commands.
 *
 * Exit status: 0 after SIGINT / SIGTERM, 1 on a runtime error (config, endpoints, domain, a lost
 * conductor), 2 on a usage error.
 */
#define _GNU_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "hako/bridge.h"
#include "hako/log.h"
#include "hako/rd.h"
#include "hako/rd_route.h"
#include "hako_cli.h"

#define PROG "hako-bridge"

static volatile sig_atomic_t quit_signal;
static volatile sig_atomic_t dump_requested;
/* --rd: the connections that follow the EUs' ownership (NULL without). */
static hako_rd_router_t *router;

/* Before each tick: the EUs' state at the world time now. A failure is logged, not fatal:
 * the connections keep their epochs, and the next tick tries again. */
static void follow_rd(void)
{
	if (router == NULL) {
		return;
	}
	int r = hako_rd_router_update(router);
	if (r < 0) {
		HAKO_WARN("--rd: cannot follow the EUs' state: %s", hako_strerror(r));
	}
}

static int fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, PROG ": ");
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return 1;
}

static int fail_err(const hako_error_t *err)
{
	char buf[1200];
	return fail("%s", hako_error_format(err, buf, sizeof(buf)));
}

/* ---- statistics ---- */

static int format_stats(hako_bridge_t *b, size_t i, char *buf, size_t len)
{
	hako_bridge_conn_stats_t st;
	if (hako_bridge_get_stats(b, i, &st) != 0) {
		return -1;
	}
	snprintf(buf, len,
	         "connection %s: forwarded=%" PRIu64 " bytes=%" PRIu64 " dropped_policy=%" PRIu64
	         " dropped_epoch=%" PRIu64 " dropped_paused=%" PRIu64 " send_failed=%" PRIu64
	         " epoch=%u active=%d",
	         st.id, st.forwarded, st.bytes, st.dropped_policy, st.dropped_epoch,
	         st.dropped_paused, st.send_failed, (unsigned)st.epoch, st.active);
	return 0;
}

static void print_stats(hako_bridge_t *b)
{
	char line[512];
	for (size_t i = 0; format_stats(b, i, line, sizeof(line)) == 0; i++) {
		fprintf(stderr, PROG ": %s\n", line);
	}
	fflush(stderr);
}

/* --stats-json: the statistics (and the routes of --rd) as one JSON object, written to a
 * temporary file and renamed, so a reader never sees half of it. */
static int write_stats_json(hako_bridge_t *b, const char *node, const char *path)
{
	json_t *conns = json_array();
	hako_bridge_conn_stats_t st;
	for (size_t i = 0; conns != NULL && hako_bridge_get_stats(b, i, &st) == 0; i++) {
		json_t *c = json_pack(
		    "{s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:i, s:b}", "id", st.id, "forwarded",
		    (json_int_t)st.forwarded, "bytes", (json_int_t)st.bytes, "dropped_policy",
		    (json_int_t)st.dropped_policy, "dropped_epoch", (json_int_t)st.dropped_epoch,
		    "dropped_paused", (json_int_t)st.dropped_paused, "send_failed",
		    (json_int_t)st.send_failed, "epoch", (int)st.epoch, "active", st.active);
		hako_rd_route_t rt;
		for (size_t k = 0; c != NULL && hako_rd_router_get(router, k, &rt) == 0; k++) {
			if (strcmp(rt.connection, st.id) == 0) {
				json_object_set_new(c, "eu", json_string(rt.eu));
				json_object_set_new(c, "route_changes",
				                    json_integer((json_int_t)rt.changes));
				json_object_set_new(c, "gated", json_boolean(rt.gated));
			}
		}
		json_array_append_new(conns, c);
	}
	json_t *root = json_pack("{s:s, s:o}", "node", node, "connections", conns);
	char tmp[4200];
	int rc = -1;
	if (root != NULL && snprintf(tmp, sizeof(tmp), "%s.tmp", path) < (int)sizeof(tmp) &&
	    json_dump_file(root, tmp, JSON_INDENT(2)) == 0 && rename(tmp, path) == 0) {
		rc = 0;
	}
	json_decref(root);
	if (rc != 0) {
		fail("--stats-json %s: cannot write it: %s", path, strerror(errno));
	}
	return rc;
}

/* ---- control socket ---- */

#define MAX_CLIENTS 8
#define LINE_MAX_   512

typedef struct client {
	int fd;
	size_t used;
	char buf[LINE_MAX_];
} client_t;

typedef struct control {
	hako_bridge_t *b;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	int listen_fd;
	int wake[2];
	pthread_t thread;
	int running;
	client_t clients[MAX_CLIENTS];
} control_t;

static void reply(int fd, const char *fmt, ...)
{
	char buf[600];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof(buf) - 1, fmt, ap);
	va_end(ap);
	if (n < 0) {
		return;
	}
	if ((size_t)n > sizeof(buf) - 2) {
		n = (int)sizeof(buf) - 2;
	}
	buf[n++] = '\n';
	size_t off = 0;
	while (off < (size_t)n) {
		ssize_t w = send(fd, buf + off, (size_t)n - off, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR) {
			continue;
		}
		if (w <= 0) {
			return; /* the client went away; its read side will notice */
		}
		off += (size_t)w;
	}
}

static void conn_error(int fd, int r, const char *conn)
{
	if (r == HAKO_ENOENT) {
		reply(fd, "error: unknown connection '%s'", conn);
	} else {
		reply(fd, "error: %s", hako_strerror(r));
	}
}

static void command(control_t *c, int fd, char *line)
{
	char *save = NULL;
	char *verb = strtok_r(line, " \t\r", &save);
	char *conn = verb != NULL ? strtok_r(NULL, " \t\r", &save) : NULL;
	char *arg = conn != NULL ? strtok_r(NULL, " \t\r", &save) : NULL;
	char *extra = arg != NULL ? strtok_r(NULL, " \t\r", &save) : NULL;
	uint8_t e = 0;
	int r;
	if (verb == NULL) {
		return; /* empty line */
	}
	if (strcmp(verb, "stats") == 0 || strcmp(verb, "help") == 0) {
		if (conn != NULL) {
			reply(fd, "error: usage: %s", verb);
		} else if (verb[0] == 's') {
			char l[512];
			for (size_t i = 0; format_stats(c->b, i, l, sizeof(l)) == 0; i++) {
				reply(fd, "%s", l);
			}
			reply(fd, "ok");
		} else {
			reply(
			    fd,
			    "epoch CONN [N] | bump CONN | pause CONN | resume CONN | stats | help");
			reply(fd, "ok");
		}
		return;
	}
	if (conn == NULL || extra != NULL || (arg != NULL && strcmp(verb, "epoch") != 0)) {
		reply(fd, "error: usage: epoch CONN [N] | bump CONN | pause CONN | resume CONN | "
		          "stats | help");
		return;
	}
	if (strcmp(verb, "epoch") == 0 && arg == NULL) {
		r = hako_bridge_get_epoch(c->b, conn, &e);
	} else if (strcmp(verb, "epoch") == 0) {
		char *end = NULL;
		errno = 0;
		long v = strtol(arg, &end, 10);
		if (errno != 0 || end == arg || *end != '\0' || v < 0 || v > 255) {
			reply(fd, "error: epoch '%s': must be 0..255", arg);
			return;
		}
		e = (uint8_t)v;
		r = hako_bridge_set_epoch(c->b, conn, e);
	} else if (strcmp(verb, "bump") == 0) {
		r = hako_bridge_bump_epoch(c->b, conn, &e);
	} else if (strcmp(verb, "pause") == 0 || strcmp(verb, "resume") == 0) {
		r = hako_bridge_set_active(c->b, conn, verb[0] == 'r');
		if (r == 0) {
			HAKO_INFO("connection '%s' %s", conn,
			          verb[0] == 'r' ? "resumed" : "paused");
			reply(fd, "ok");
			return;
		}
	} else {
		reply(fd, "error: unknown command '%s' (try 'help')", verb);
		return;
	}
	if (r != 0) {
		conn_error(fd, r, conn);
		return;
	}
	if (strcmp(verb, "bump") == 0 || arg != NULL) {
		HAKO_INFO("connection '%s': epoch %u", conn, (unsigned)e);
	}
	reply(fd, "ok epoch=%u", (unsigned)e);
}

/* Read what a client sent and run its complete lines. 0 = keep it, -1 = drop it. */
static int client_input(control_t *c, client_t *cl)
{
	ssize_t n = recv(cl->fd, cl->buf + cl->used, sizeof(cl->buf) - 1 - cl->used, 0);
	if (n < 0 && (errno == EINTR || errno == EAGAIN)) {
		return 0;
	}
	if (n <= 0) {
		return -1;
	}
	cl->used += (size_t)n;
	char *start = cl->buf, *end = cl->buf + cl->used;
	char *nl;
	while ((nl = memchr(start, '\n', (size_t)(end - start))) != NULL) {
		*nl = '\0';
		if (memchr(start, '\0', (size_t)(nl - start)) != NULL) {
			reply(cl->fd, "error: a NUL byte in the command");
		} else {
			command(c, cl->fd, start);
		}
		start = nl + 1;
	}
	size_t rest = cl->used - (size_t)(start - cl->buf);
	if (rest == sizeof(cl->buf) - 1) {
		reply(cl->fd, "error: line too long");
		return -1;
	}
	memmove(cl->buf, start, rest);
	cl->used = rest;
	return 0;
}

static void *control_main(void *arg)
{
	control_t *c = arg;
	for (;;) {
		struct pollfd pfd[2 + MAX_CLIENTS];
		int who[2 + MAX_CLIENTS];
		nfds_t n = 0;
		pfd[n].fd = c->wake[0];
		pfd[n++].events = POLLIN;
		pfd[n].fd = c->listen_fd;
		pfd[n++].events = POLLIN;
		for (int i = 0; i < MAX_CLIENTS; i++) {
			if (c->clients[i].fd >= 0) {
				who[n] = i;
				pfd[n].fd = c->clients[i].fd;
				pfd[n++].events = POLLIN;
			}
		}
		if (poll(pfd, n, -1) < 0) {
			if (errno == EINTR) {
				continue;
			}
			HAKO_ERROR("control socket %s: poll: %s", c->path, strerror(errno));
			return NULL;
		}
		if (pfd[0].revents != 0) {
			return NULL;
		}
		for (nfds_t k = 2; k < n; k++) {
			client_t *cl = &c->clients[who[k]];
			if (pfd[k].revents != 0 && client_input(c, cl) != 0) {
				close(cl->fd);
				cl->fd = -1;
				cl->used = 0;
			}
		}
		if (pfd[1].revents & POLLIN) {
			int fd = accept4(c->listen_fd, NULL, NULL, SOCK_CLOEXEC);
			if (fd < 0) {
				continue;
			}
			int slot = -1;
			for (int i = 0; i < MAX_CLIENTS && slot < 0; i++) {
				slot = c->clients[i].fd < 0 ? i : -1;
			}
			if (slot < 0) {
				reply(fd, "error: too many control clients");
				close(fd);
				continue;
			}
			c->clients[slot].fd = fd;
			c->clients[slot].used = 0;
		}
	}
}

/* A path that is a socket nobody listens on is a leftover of a killed daemon: replace it. */
static int control_open(control_t *c, hako_bridge_t *b, const char *path)
{
	memset(c, 0, sizeof(*c));
	c->b = b;
	c->listen_fd = -1;
	c->wake[0] = c->wake[1] = -1;
	for (int i = 0; i < MAX_CLIENTS; i++) {
		c->clients[i].fd = -1;
	}
	struct sockaddr_un sa;
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sa.sun_path)) {
		return fail("--control %s: path too long (at most %zu bytes)", path,
		            sizeof(sa.sun_path) - 1);
	}
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	snprintf(c->path, sizeof(c->path), "%s", path);
	struct stat stt;
	if (lstat(path, &stt) == 0) {
		if (!S_ISSOCK(stt.st_mode)) {
			return fail("--control %s: exists and is not a socket", path);
		}
		int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		int live = probe >= 0 && connect(probe, (struct sockaddr *)&sa, sizeof(sa)) == 0;
		if (probe >= 0) {
			close(probe);
		}
		if (live) {
			return fail("--control %s: another process listens on it", path);
		}
		unlink(path);
	}
	c->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	/* Whoever may connect may pause the bridge: the socket is the user's only, whatever the
	 * umask (bind creates it with 0777 & ~umask; the chmod closes the window in which another
	 * thread's umask could apply). */
	mode_t old_mask = umask(0077);
	int bound =
	    c->listen_fd >= 0 && bind(c->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
	umask(old_mask);
	if (!bound || chmod(path, 0600) != 0 || listen(c->listen_fd, 4) != 0) {
		int e = errno;
		if (c->listen_fd >= 0) {
			close(c->listen_fd);
			c->listen_fd = -1;
		}
		return fail("--control %s: %s", path, strerror(e));
	}
	if (pipe2(c->wake, O_CLOEXEC) != 0) {
		return fail("--control %s: pipe: %s", path, strerror(errno));
	}
	/* the thread must not take the signals meant for the main loop */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	int r = pthread_create(&c->thread, NULL, control_main, c);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r != 0) {
		return fail("--control %s: thread: %s", path, strerror(r));
	}
	c->running = 1;
	return 0;
}

static void control_close(control_t *c)
{
	if (c->running) {
		ssize_t w = write(c->wake[1], "q", 1);
		(void)w;
		pthread_join(c->thread, NULL);
		c->running = 0;
	}
	for (int i = 0; i < MAX_CLIENTS; i++) {
		if (c->clients[i].fd >= 0) {
			close(c->clients[i].fd);
		}
	}
	if (c->listen_fd >= 0) {
		close(c->listen_fd);
		unlink(c->path);
	}
	for (int i = 0; i < 2; i++) {
		if (c->wake[i] >= 0) {
			close(c->wake[i]);
		}
	}
}

/* ---- main loops ---- */

static void sleep_usec(hako_time_t usec)
{
	if (usec <= 0) {
		return;
	}
	struct timespec ts = {.tv_sec = usec / 1000000, .tv_nsec = (long)(usec % 1000000) * 1000};
	nanosleep(&ts, NULL); /* a signal ends it early: the loop looks at the flags */
}

static void maybe_dump(hako_bridge_t *b)
{
	if (dump_requested) {
		dump_requested = 0;
		print_stats(b);
	}
}

static void run_wall(hako_bridge_t *b, hako_time_t delta)
{
	while (!quit_signal) {
		follow_rd();
		hako_bridge_tick(b);
		maybe_dump(b);
		hako_time_t now = hako_now_usec();
		hako_time_t wake = now + delta;
		hako_time_t due = hako_bridge_next_due(b);
		if (due >= 0 && due < wake) {
			wake = due;
		}
		sleep_usec(wake - now);
	}
}

/* 0 while the domain's conductor runs its master. */
static int conductor_check(hako_domain_t *dom)
{
	hako_domain_info_t info;
	if (hako_domain_get_info(dom, &info) != 0) {
		return fail("domain '%s': cannot read its state", hako_domain_name(dom));
	}
	if (!info.master_alive || !info.master_running) {
		return fail("domain '%s': the conductor (pid %d) is gone", hako_domain_name(dom),
		            info.master_pid);
	}
	return 0;
}

/* Before an acknowledgement or the exit: what the sources hold and the policies hold back
 * leaves now. A reset zeroes the channels once every asset has acknowledged it, and the shm
 * watcher may not have read them yet; nothing ticks while the simulation is stopped. */
static void flush(hako_bridge_t *b)
{
	follow_rd();
	int n = hako_bridge_flush(b);
	if (n > 0) {
		HAKO_DEBUG("flushed %d PDU(s)", n);
	}
}

/* As a core asset: ack every event, tick once per step while running. step_poll (not the
 * blocking step_wait) keeps signals and statistics requests served while other assets lag; it
 * neither refreshes the heartbeat nor looks for a dead conductor, so this loop does both. A stop
 * or a reset is acknowledged after a flush: nothing written before it is lost. */
static int run_asset(hako_bridge_t *b, hako_domain_t *dom, hako_member_t *m, hako_time_t delta)
{
	int running = 0;
	hako_time_t idle = delta < 400 ? delta / 2 + 1 : 200;
	hako_time_t last_check = hako_now_usec();
	while (!quit_signal) {
		maybe_dump(b);
		int ev = hako_member_event(m);
		if (ev < 0) {
			/* removed from the domain (liveness policy "remove") */
			return fail("asset '%s': %s (no longer registered in domain '%s')",
			            hako_member_name(m), hako_strerror(ev), hako_domain_name(dom));
		}
		if (ev != HAKO_EVENT_NONE) {
			running = ev == HAKO_EVENT_START;
			if (ev == HAKO_EVENT_ERROR) {
				HAKO_WARN("the simulation is in error; waiting for a reset");
			}
			if (ev != HAKO_EVENT_START) {
				flush(b);
			}
			int r = hako_member_ack(m, ev);
			if (r != 0 && r != HAKO_ESTATE) {
				return fail("asset '%s': acknowledging %d: %s", hako_member_name(m),
				            ev, hako_strerror(r));
			}
		}
		hako_time_t now = hako_now_usec();
		if (now - last_check >= 100000) {
			last_check = now;
			if (conductor_check(dom) != 0) {
				return 1;
			}
		}
		if (!running) {
			hako_member_heartbeat(m);
			sleep_usec(1000);
			continue;
		}
		int r = hako_member_step_poll(m);
		if (r == 0) {
			follow_rd();
			hako_bridge_tick(b);
			hako_member_step_done(m);
		} else if (r == HAKO_EAGAIN) {
			/* waiting for the others: still alive (the heartbeat timeout is on) */
			hako_member_heartbeat(m);
			sleep_usec(idle);
		} else if (r == HAKO_EINTR) {
			running = 0; /* the stop / reset event follows */
		} else {
			return fail("asset step: %s", hako_strerror(r));
		}
	}
	return 0;
}

static int needs_domain(hako_endpoint_set_t *eps)
{
	for (size_t i = 0; i < hako_endpoint_set_count(eps); i++) {
		const hako_endpoint_config_t *ec =
		    hako_endpoint_config(hako_endpoint_set_at(eps, i));
		if (ec != NULL && ec->comm != NULL && ec->comm->protocol == HAKO_COMM_SHM) {
			return 1;
		}
	}
	return 0;
}

typedef struct options {
	const char *bridge;
	const char *node;
	const char *container;
	const char *asset;
	const char *domain;
	const char *control;
	const char *rd;
	const char *rd_node;
	const char *stats_json;
	hako_time_t delta;
	int quiet;
	int strict;
} options_t;

static int parse(const hako_cli_command_t *cmd, int argc, char **argv, options_t *o)
{
	enum { OPT_STRICT = 256, OPT_RD, OPT_RD_NODE, OPT_STATS_JSON, OPT_NODE_MAP };
	static const struct option longopts[] = {
	    {"node", required_argument, NULL, 'n'},
	    {"container", required_argument, NULL, 'c'},
	    {"asset", required_argument, NULL, 'a'},
	    {"delta-usec", required_argument, NULL, 'd'},
	    {"domain", required_argument, NULL, 'D'},
	    {"control", required_argument, NULL, 'C'},
	    {"verbose", no_argument, NULL, 'v'},
	    {"quiet", no_argument, NULL, 'q'},
	    {"strict", no_argument, NULL, OPT_STRICT},
	    {"rd", required_argument, NULL, OPT_RD},
	    {"rd-node", required_argument, NULL, OPT_RD_NODE},
	    {"stats-json", required_argument, NULL, OPT_STATS_JSON},
	    {"node-map", required_argument, NULL, OPT_NODE_MAP},
	    HAKO_CLI_HELP_VERSION,
	    {NULL, 0, NULL, 0},
	};
	memset(o, 0, sizeof(*o));
	o->delta = 1000;
	opterr = 0;
	int ch;
	while ((ch = getopt_long(argc, argv, ":vqhV", longopts, NULL)) != -1) {
		switch (ch) {
		case 'n': o->node = optarg; break;
		case 'c': o->container = optarg; break;
		case 'a': o->asset = optarg; break;
		case 'D': o->domain = optarg; break;
		case 'C': o->control = optarg; break;
		case 'd': {
			char *end = NULL;
			errno = 0;
			long long v = strtoll(optarg, &end, 10);
			if (errno != 0 || end == optarg || *end != '\0' || v < 1 || v > 60000000) {
				return hako_cli_usage_error(
				    cmd, "--delta-usec %s: must be 1..60000000", optarg);
			}
			o->delta = (hako_time_t)v;
			break;
		}
		case 'v': hako_log_set_level(HAKO_LOG_INFO); break;
		case 'q':
			hako_log_set_level(HAKO_LOG_ERROR);
			o->quiet = 1;
			break;
		case OPT_STRICT: o->strict = 1; break;
		case OPT_RD: o->rd = optarg; break;
		case OPT_RD_NODE: o->rd_node = optarg; break;
		case OPT_STATS_JSON: o->stats_json = optarg; break;
		case OPT_NODE_MAP:
			/* the endpoint loader reads it (docs/endpoint.md) */
			if (optarg[0] == '\0' || setenv("HAKO_NODE_IP_MAP", optarg, 1) != 0) {
				return hako_cli_usage_error(cmd, "--node-map: give a file");
			}
			break;
		default: {
			int r = hako_cli_common_option(cmd, ch, argv);
			return r == 0 ? -1 : r; /* -h, -V: done */
		}
		}
	}
	if (optind >= argc) {
		return hako_cli_usage_error(cmd, "no bridge file given");
	}
	if (optind + 1 < argc) {
		return hako_cli_usage_error(cmd, "unexpected argument '%s'", argv[optind + 1]);
	}
	o->bridge = argv[optind];
	if (o->node == NULL) {
		return hako_cli_usage_error(cmd, "--node NAME is required");
	}
	if (o->rd_node != NULL && o->rd == NULL) {
		return hako_cli_usage_error(cmd, "--rd-node needs --rd FILE");
	}
	return 0;
}

static void print_routes(void)
{
	hako_rd_route_t rt;
	for (size_t i = 0; hako_rd_router_get(router, i, &rt) == 0; i++) {
		fprintf(stderr,
		        PROG ": connection %s follows EU %s: epoch=%u active=%d changes=%" PRIu64
		             "%s\n",
		        rt.connection, rt.eu, rt.epoch, rt.active, rt.changes,
		        rt.gated ? " (active while this node owns it)" : "");
	}
	fflush(stderr);
}

/* The RD node id of --rd-node (a number or a name of the RD file's nodes), or of the bridge
 * node's name; 0 (a relay, no EU's candidate) when the bridge node is not an RD node. */
static int rd_node_id(const options_t *o, const hako_rd_config_t *rd, uint8_t *id)
{
	const char *want = o->rd_node != NULL ? o->rd_node : o->node;
	for (size_t i = 0; i < rd->node_count; i++) {
		char num[8];
		snprintf(num, sizeof(num), "%u", rd->node_ids[i]);
		if (strcmp(rd->node_names[i], want) == 0 || strcmp(num, want) == 0) {
			*id = rd->node_ids[i];
			return 0;
		}
	}
	if (o->rd_node != NULL && strcmp(o->rd_node, "0") != 0) {
		return fail("--rd-node %s: not a node of %s (give a node id or name from its "
		            "\"nodes\", or 0 for a node that owns no EU)",
		            o->rd_node, rd->path);
	}
	*id = 0;
	return 0;
}

static int open_router(const options_t *o, const hako_bridge_config_t *cfg,
                       hako_endpoint_set_t *eps, hako_domain_t *dom, hako_bridge_t *b,
                       hako_rd_config_t **rd)
{
	hako_error_t err;
	if (hako_rd_config_load(o->rd, rd, &err) != 0) {
		return fail_err(&err);
	}
	uint8_t id = 0;
	if (rd_node_id(o, *rd, &id) != 0) {
		return 1;
	}
	int r = hako_rd_router_create(dom, *rd, id, cfg, b, eps, &router, &err);
	if (r != 0) {
		return err.message[0] != '\0' ? fail_err(&err) : fail("--rd: %s", hako_strerror(r));
	}
	if (hako_rd_router_count(router) == 0) {
		HAKO_WARN("--rd %s: no connection of node '%s' carries an EU's PDUs", o->rd,
		          o->node);
	}
	hako_rd_router_update(router);
	if (!o->quiet) {
		fprintf(stderr, PROG ": following the EUs of %s as RD node %u%s\n", o->rd, id,
		        id == 0 ? " (a relay: no EU's candidate)" : "");
		print_routes();
	}
	return 0;
}

static int run(const hako_cli_command_t *cmd, int argc, char **argv)
{
	options_t o;
	int r = parse(cmd, argc, argv, &o);
	if (r != 0) {
		return r < 0 ? 0 : r;
	}
	hako_cli_catch_stop(&quit_signal, 0); /* quit_signal: the signal's number */
	hako_cli_catch_signal(SIGUSR1, &dump_requested, 0);
	signal(SIGPIPE, SIG_IGN);

	hako_error_t err;
	hako_bridge_config_t *cfg = NULL;
	hako_endpoint_set_t *eps = NULL;
	hako_domain_t *dom = NULL;
	hako_member_t *member = NULL;
	hako_bridge_t *b = NULL;
	hako_bridge_world_clock_t *wclock = NULL;
	hako_rd_config_t *rd = NULL;
	control_t ctl;
	memset(&ctl, 0, sizeof(ctl));
	ctl.listen_fd = ctl.wake[0] = ctl.wake[1] = -1;
	for (int i = 0; i < MAX_CLIENTS; i++) {
		ctl.clients[i].fd = -1;
	}
	int rc = 1;

	if (hako_bridge_config_load_flags(o.bridge, o.node, o.container,
	                                  o.strict ? HAKO_BRIDGE_LOAD_STRICT : 0, &cfg,
	                                  &err) != 0) {
		fail_err(&err);
		goto out;
	}
	/* The loader has read and checked the node's endpoints (--container, the file's
	 * endpoints_config_path or its inline "endpoints" block): open those, not the files. */
	if (hako_endpoint_set_open_container(cfg->endpoints, &eps, &err) != 0) {
		fail_err(&err);
		goto out;
	}
	/* Nobody reads the caches here: what the bridge forwards is not copied into them (nor
	 * counted as a queue's drops). */
	for (size_t i = 0; i < hako_endpoint_set_count(eps); i++) {
		hako_endpoint_set_store(hako_endpoint_set_at(eps, i), HAKO_CACHE_STORE_READ);
	}
	if (o.asset != NULL || o.domain != NULL || o.rd != NULL || needs_domain(eps)) {
		const char *name = o.domain != NULL ? o.domain : hako_domain_default_name();
		r = hako_domain_open(name, &dom);
		if (r != 0) {
			fail("domain '%s': %s (is a conductor running?)", name, hako_strerror(r));
			goto out;
		}
		hako_endpoint_set_set_domain(eps, dom);
	}
	if (hako_endpoint_set_start(eps, &err) != 0) {
		fail_err(&err);
		goto out;
	}
	for (size_t i = 0; i < hako_endpoint_set_count(eps); i++) {
		hako_endpoint_t *ep = hako_endpoint_set_at(eps, i);
		if (hako_endpoint_local_port(ep) != 0) {
			HAKO_INFO("endpoint '%s' bound to port %u", hako_endpoint_name(ep),
			          (unsigned)hako_endpoint_local_port(ep));
		}
	}
	if (o.asset != NULL && (r = hako_bridge_world_clock_create(dom, &wclock)) != 0) {
		fail("world clock: %s", hako_strerror(r));
		goto out;
	}
	if (hako_bridge_create(
	        cfg, eps, wclock != NULL ? hako_bridge_world_clock_now : hako_bridge_clock_wall,
	        wclock, &b, &err) != 0) {
		fail_err(&err);
		goto out;
	}
	if (o.control != NULL && control_open(&ctl, b, o.control) != 0) {
		goto out;
	}
	if (o.rd != NULL && open_router(&o, cfg, eps, dom, b, &rd) != 0) {
		goto out;
	}
	if (o.asset != NULL) {
		r = hako_member_register(dom, o.asset, o.delta, &member);
		if (r != 0) {
			fail("asset '%s' in domain '%s': %s", o.asset, hako_domain_name(dom),
			     hako_strerror(r));
			goto out;
		}
	}
	HAKO_INFO("node '%s': %zu connection(s), %zu endpoint(s), %s", o.node,
	          hako_bridge_connection_count(b), hako_endpoint_set_count(eps),
	          o.asset != NULL ? "world time (asset)" : "wall clock");
	rc = 0;
	if (member != NULL) {
		rc = run_asset(b, dom, member, o.delta);
	} else {
		run_wall(b, o.delta);
	}
	if (quit_signal) {
		HAKO_INFO("signal %d: stopping", (int)quit_signal);
		/* Not follow_rd: after a reset the EUs' state is back at epoch 0, and the routes of
		 * the run that ended are the ones its last PDUs (and the summary) belong to. */
		hako_bridge_flush(b);
	}
out:
	control_close(&ctl);
	hako_member_unregister(member);
	/* stop the sources first: no arrival runs while the bridge goes away */
	if (eps != NULL) {
		hako_endpoint_set_stop(eps);
	}
	if (b != NULL && !o.quiet) {
		print_stats(b);
	}
	if (router != NULL && !o.quiet) {
		print_routes();
	}
	if (b != NULL && o.stats_json != NULL && write_stats_json(b, o.node, o.stats_json) != 0) {
		rc = 1;
	}
	hako_rd_router_destroy(router);
	router = NULL;
	hako_rd_config_free(rd);
	hako_bridge_destroy(b);
	hako_bridge_world_clock_destroy(wclock);
	hako_endpoint_set_close(eps);
	hako_domain_close(dom);
	hako_bridge_config_free(cfg);
	return rc;
}

int main(int argc, char **argv)
{
	static const hako_cli_command_t command = {
	    PROG,
	    "BRIDGE_JSON --node NAME [options]",
	    "",
	    "Forward PDUs between the endpoints of node NAME as the bridge file says (transfer\n"
	    "policies immediate / atomic / throttle / ticker, epochs).\n\n"
	    "Signals: SIGINT / SIGTERM stop the bridge (statistics are printed on stderr);\n"
	    "SIGUSR1 prints the statistics and goes on.\n\n"
	    "Control socket: connect (e.g. 'socat - UNIX-CONNECT:PATH') and write one command\n"
	    "per line; each answer ends with a line starting with \"ok\" or \"error:\".\n"
	    "  epoch CONN         show the epoch of connection CONN\n"
	    "  epoch CONN N       set it to N (0..255)\n"
	    "  bump CONN          add 1 (mod 256); answers \"ok epoch=N\"\n"
	    "  pause CONN         drop (and count) what arrives, tick nothing\n"
	    "  resume CONN        forward again\n"
	    "  stats              one line per connection, then \"ok\"\n"
	    "  help               this list\n\n"
	    "Statistics lines: connection ID: forwarded=N bytes=N dropped_policy=N\n"
	    "dropped_epoch=N dropped_paused=N send_failed=N epoch=N active=0|1",
	    "  --node NAME        the node whose connections to run (required)\n"
	    "  --container PATH   endpoint container file (default: the bridge file's\n"
	    "                     endpoints_config_path or inline endpoints block)\n"
	    "  --asset NAME       run as a core asset: tick once per step on world time\n"
	    "  --delta-usec N     tick period in microseconds (default 1000); with --asset,\n"
	    "                     the asset's step\n"
	    "  --domain D         domain of shm endpoints and of --asset (default $HAKO_DOMAIN\n"
	    "                     or \"default\")\n"
	    "  --control PATH     control socket (Unix stream) at PATH (above)\n"
	    "  --rd FILE          RD-Full: connections carrying an EU's PDUs follow its\n"
	    "                     ownership (epoch at each commit point; a local source\n"
	    "                     forwards only while this node owns the EU); docs/rd.md\n"
	    "  --rd-node ID|NAME  this node in the RD file (default: the one named NAME)\n"
	    "  --stats-json FILE  on exit, write the statistics (and routes) to FILE as JSON\n"
	    "  --node-map FILE    resolve node names in tcp/udp comm files through FILE\n"
	    "                     (node-ip-map.json; replaces the files' name_resolver map;\n"
	    "                     default $HAKO_NODE_IP_MAP)\n"
	    "  --strict           refuse what Hakoniwa's bridge loads with a warning (an\n"
	    "                     unknown key, a group member the source's pdudef lacks)\n"
	    "  -v, --verbose      log more (HAKO_LOG=info)\n"
	    "  -q, --quiet        log errors only, no statistics on exit\n",
	    run,
	};
	static const hako_cli_t cli = {
	    .prog = PROG,
	    .version = HAKO_VERSION,
	    .commands = &command,
	    .ncommands = 1,
	    .common_options = "  -h, --help         show this help\n"
	                      "  -V, --version      show the version\n",
	    .epilog = "exit status: 0 after SIGINT/SIGTERM, 1 on an error, 2 on a usage error.\n",
	    .single = 1,
	};
	return hako_cli_main(&cli, argc, argv);
}
