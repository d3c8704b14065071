/* Shared by endpoint_throughput and endpoint_latency: see endpoint_common.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "endpoint_common.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "bench_common.h"

static char g_dir[256];
static char g_domain[HAKO_NAME_MAX];
static pid_t g_owner;
static volatile pid_t g_child;
static int g_cleaned;

static const char CACHE_JSON[] = "{\"type\": \"buffer\", \"store\": {\"mode\": \"latest\"}}\n";

void epb_cleanup(void)
{
	if (getpid() != g_owner || g_cleaned) {
		return;
	}
	g_cleaned = 1;
	if (g_child > 0) {
		kill(g_child, SIGKILL);
		waitpid(g_child, NULL, 0);
		g_child = 0;
	}
	if (g_domain[0] != '\0') {
		hako_domain_remove(g_domain);
		g_domain[0] = '\0';
	}
	if (g_dir[0] != '\0') {
		DIR *d = opendir(g_dir);
		if (d != NULL) {
			struct dirent *e;
			while ((e = readdir(d)) != NULL) {
				if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
					unlinkat(dirfd(d), e->d_name, 0);
				}
			}
			closedir(d);
		}
		rmdir(g_dir);
		g_dir[0] = '\0';
	}
}

static const char *g_prog = "endpoint bench";

void epb_init(const char *tag, const char *prog)
{
	g_owner = getpid();
	g_prog = prog;
	snprintf(g_dir, sizeof(g_dir), "/tmp/hako-%s-%d-XXXXXX", tag, (int)getpid());
	if (mkdtemp(g_dir) == NULL) {
		fprintf(stderr, "%s: mkdtemp %s: %s\n", tag, g_dir, strerror(errno));
		g_dir[0] = '\0';
		exit(1);
	}
	atexit(epb_cleanup);
	bench_exit_init(prog, epb_cleanup, 1);
	signal(SIGPIPE, SIG_IGN);
	if (epb_write_file("cache.json", CACHE_JSON) != 0) {
		fprintf(stderr, "%s: cannot write %s/cache.json: %s\n", tag, g_dir,
		        strerror(errno));
		exit(1);
	}
}

const char *epb_dir(void)
{
	return g_dir;
}

const char *epb_file(const char *name, char *buf, size_t cap)
{
	snprintf(buf, cap, "%s/%s", g_dir, name);
	return buf;
}

int epb_write_file(const char *name, const char *text)
{
	char path[512];
	epb_file(name, path, sizeof(path));
	FILE *f = fopen(path, "w");
	if (f == NULL) {
		return -1;
	}
	size_t n = strlen(text);
	int ok = fwrite(text, 1, n, f) == n;
	if (fclose(f) != 0) {
		ok = 0;
	}
	return ok ? 0 : -1;
}

void epb_set_domain(const char *name)
{
	snprintf(g_domain, sizeof(g_domain), "%s", name != NULL ? name : "");
}

void epb_sleep_us(long us)
{
	struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
	}
}

/* ---- the child ---- */

int epb_spawn(epb_child_t *c, int cpu, void (*fn)(void *arg, int rfd, int wfd), void *arg)
{
	int p2c[2], c2p[2];
	c->pid = -1;
	c->to_child = c->from_child = -1;
	if (pipe2(p2c, O_CLOEXEC) != 0) {
		return -1;
	}
	if (pipe2(c2p, O_CLOEXEC) != 0) {
		close(p2c[0]);
		close(p2c[1]);
		return -1;
	}
	pid_t parent = getpid();
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid < 0) {
		close(p2c[0]);
		close(p2c[1]);
		close(c2p[0]);
		close(c2p[1]);
		return -1;
	}
	if (pid == 0) {
		bench_child_init(parent);
		signal(SIGTERM, SIG_DFL);
		if (cpu >= 0) {
			bench_pin_cpu(cpu);
		}
		close(p2c[1]);
		close(c2p[0]);
		fn(arg, p2c[0], c2p[1]);
		_exit(0);
	}
	g_child = pid;
	close(p2c[0]);
	close(c2p[1]);
	c->pid = pid;
	c->to_child = p2c[1];
	c->from_child = c2p[0];
	return 0;
}

int epb_reap(epb_child_t *c, int timeout_ms, char *why, size_t cap)
{
	if (c->pid <= 0) {
		return 0;
	}
	if (c->to_child >= 0) {
		epb_send_msg(c->to_child, 'Q', 0, NULL);
		close(c->to_child);
		c->to_child = -1;
	}
	if (c->from_child >= 0) {
		close(c->from_child);
		c->from_child = -1;
	}
	int status = 0, waited = 0;
	pid_t r;
	while ((r = waitpid(c->pid, &status, WNOHANG)) == 0 && waited < timeout_ms) {
		epb_sleep_us(1000);
		waited++;
	}
	int rc = 0;
	if (r == 0) {
		kill(c->pid, SIGKILL);
		waitpid(c->pid, &status, 0);
		snprintf(why, cap, "the child did not exit within %d ms (killed)", timeout_ms);
		rc = -1;
	} else if (r < 0) {
		snprintf(why, cap, "waitpid: %s", strerror(errno));
		rc = -1;
	} else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		if (WIFSIGNALED(status)) {
			snprintf(why, cap, "the child died of signal %d", WTERMSIG(status));
		} else {
			snprintf(why, cap, "the child exited with status %d", WEXITSTATUS(status));
		}
		rc = -1;
	}
	c->pid = -1;
	g_child = 0;
	return rc;
}

int epb_send_msg(int fd, int code, uint32_t value, const char *text)
{
	epb_msg_t m;
	memset(&m, 0, sizeof(m));
	m.code = code;
	m.value = value;
	if (text != NULL) {
		snprintf(m.text, sizeof(m.text), "%s", text);
	}
	return bench_write_full(fd, &m, sizeof(m));
}

int epb_recv_msg(int fd, epb_msg_t *m, int timeout_ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	int r;
	do {
		r = poll(&p, 1, timeout_ms);
	} while (r < 0 && errno == EINTR);
	if (r == 0) {
		return -2;
	}
	if (r < 0) {
		return -1;
	}
	return bench_read_full(fd, m, sizeof(*m));
}

/* ---- the link ---- */

int epb_fail(char *why, size_t cap, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, cap, fmt, ap);
	va_end(ap);
	return code;
}

/* Write <stem>.json, <stem>-comm.json and (shm) <stem>-pdudef.json, load them and open the
 * endpoint. port0: the loader refuses port 0 (1..65535, as Hakoniwa's schema), so the file says 1
 * and the loaded config is patched to 0: the kernel picks a free port, hako_endpoint_local_port
 * tells which. */
static int open_ep(const char *stem, const char *comm, const char *pdudef, int port0,
                   hako_endpoint_t **out, char *why, size_t cap)
{
	char name[128], text[1024], path[512];
	snprintf(name, sizeof(name), "%s-comm.json", stem);
	if (epb_write_file(name, comm) != 0) {
		return epb_fail(why, cap, HAKO_EIO, "cannot write %s: %s", name, strerror(errno));
	}
	char pd[160] = "null";
	if (pdudef != NULL) {
		snprintf(name, sizeof(name), "%s-pdudef.json", stem);
		if (epb_write_file(name, pdudef) != 0) {
			return epb_fail(why, cap, HAKO_EIO, "cannot write %s: %s", name,
			                strerror(errno));
		}
		snprintf(pd, sizeof(pd), "\"%s\"", name);
	}
	snprintf(text, sizeof(text),
	         "{\"name\": \"%s\", \"cache\": \"cache.json\", \"comm\": \"%s-comm.json\", "
	         "\"pdu_def_path\": %s}\n",
	         stem, stem, pd);
	snprintf(name, sizeof(name), "%s.json", stem);
	if (epb_write_file(name, text) != 0) {
		return epb_fail(why, cap, HAKO_EIO, "cannot write %s: %s", name, strerror(errno));
	}
	epb_file(name, path, sizeof(path));
	hako_endpoint_config_t *cfg = NULL;
	hako_error_t err;
	hako_error_clear(&err);
	char msg[1200];
	int r = hako_endpoint_config_load(path, &cfg, &err);
	if (r != 0) {
		return epb_fail(why, cap, r, "load %s: %s", name,
		                hako_error_format(&err, msg, sizeof(msg)));
	}
	if (port0 && cfg->comm != NULL) {
		cfg->comm->local.port = 0;
	}
	r = hako_endpoint_open_config(cfg, out, &err);
	if (r != 0) {
		return epb_fail(why, cap, r, "open %s: %s (%s)", name, hako_strerror(r),
		                hako_error_format(&err, msg, sizeof(msg)));
	}
	return 0;
}

static int start_ep(hako_endpoint_t *ep, hako_domain_t *dom, char *why, size_t cap)
{
	hako_error_t err;
	hako_error_clear(&err);
	char msg[1200];
	if (dom != NULL) {
		hako_endpoint_set_domain(ep, dom);
	}
	int r = hako_endpoint_start(ep, &err);
	if (r != 0) {
		return epb_fail(why, cap, r, "start %s: %s (%s)", hako_endpoint_name(ep),
		                hako_strerror(r), hako_error_format(&err, msg, sizeof(msg)));
	}
	return 0;
}

static void options_json(const epb_link_opts_t *o, char *buf, size_t cap)
{
	/* write_timeout_ms: tcp's blocking back-pressure waits that long for room in a full send
	 * queue before it drops the peer; a receiver busy for more than the default second must
	 * not end the run. */
	snprintf(buf, cap, "{\"send_queue_depth\": %u, \"max_body_bytes\": %u%s}",
	         o->send_queue_depth, o->max_body_bytes,
	         o->proto == EPB_UDP ? "" : ", \"write_timeout_ms\": 30000");
}

static void set_keys(epb_link_t *l, const epb_link_opts_t *o)
{
	memset(&l->send_key, 0, sizeof(l->send_key));
	memset(&l->recv_key, 0, sizeof(l->recv_key));
	snprintf(l->send_key.robot, sizeof(l->send_key.robot), "%s", o->robot);
	snprintf(l->recv_key.robot, sizeof(l->recv_key.robot), "%s", o->robot);
	l->send_key.channel_id = o->send.channel_id;
	l->recv_key.channel_id = o->recv.channel_id;
}

static int open_shm(epb_link_t *l, const epb_link_opts_t *o, const char *stem, char *why,
                    size_t cap)
{
	char pdudef[1024], comm[1024];
	/* Both PDUs in both files (the pdudef has no direction that matters here); the comm file
	 * asks to be notified of what this side receives only. */
	snprintf(
	    pdudef, sizeof(pdudef),
	    "{\"robots\": [{\"name\": \"%s\", \"shm_pdu_readers\": [], \"shm_pdu_writers\": [\n"
	    "  {\"type\": \"bench_msgs/Blob\", \"org_name\": \"%s\", \"channel_id\": %d, "
	    "\"pdu_size\": %u},\n"
	    "  {\"type\": \"bench_msgs/Blob\", \"org_name\": \"%s\", \"channel_id\": %d, "
	    "\"pdu_size\": %u}]}]}\n",
	    o->robot, o->send.name, (int)o->send.channel_id, o->send.size, o->recv.name,
	    (int)o->recv.channel_id, o->recv.size);
	snprintf(comm, sizeof(comm),
	         "{\"protocol\": \"shm\", \"name\": \"%s\", \"impl_type\": \"callback\",\n"
	         " \"io\": {\"robots\": [{\"name\": \"%s\", \"pdu\": [\n"
	         "  {\"name\": \"%s\", \"notify_on_recv\": false},\n"
	         "  {\"name\": \"%s\", \"notify_on_recv\": true}]}]}}\n",
	         stem, o->robot, o->send.name, o->recv.name);
	int r = open_ep(stem, comm, pdudef, 0, &l->rx, why, cap);
	if (r != 0) {
		return r;
	}
	l->tx = l->rx;
	return start_ep(l->rx, o->dom, why, cap);
}

int epb_link_parent_open(epb_link_t *l, const epb_link_opts_t *o, uint16_t *port, char *why,
                         size_t cap)
{
	memset(l, 0, sizeof(*l));
	l->proto = o->proto;
	set_keys(l, o);
	*port = 0;
	char opts[256], comm[1024];
	options_json(o, opts, sizeof(opts));
	int r;
	switch (o->proto) {
	case EPB_TCP:
	case EPB_WS:
		snprintf(comm, sizeof(comm),
		         "{\"protocol\": \"%s\", \"name\": \"p\", \"role\": \"server\", "
		         "\"comm_raw_version\": \"v2\",\n"
		         " \"local\": {\"address\": \"127.0.0.1\", \"port\": 1},\n"
		         " \"options\": %s}\n",
		         o->proto == EPB_TCP ? "tcp" : "websocket", opts);
		if ((r = open_ep("p", comm, NULL, 1, &l->rx, why, cap)) != 0) {
			return r;
		}
		l->tx = l->rx;
		break;
	case EPB_UDP:
		snprintf(comm, sizeof(comm),
		         "{\"protocol\": \"udp\", \"name\": \"p-in\", \"direction\": \"in\", "
		         "\"comm_raw_version\": \"v2\",\n"
		         " \"local\": {\"address\": \"127.0.0.1\", \"port\": 1},\n"
		         " \"options\": %s}\n",
		         opts);
		if ((r = open_ep("p-in", comm, NULL, 1, &l->rx, why, cap)) != 0) {
			return r;
		}
		break;
	case EPB_SHM: return open_shm(l, o, "p", why, cap);
	}
	if ((r = start_ep(l->rx, NULL, why, cap)) != 0) {
		return r;
	}
	*port = hako_endpoint_local_port(l->rx);
	if (*port == 0) {
		return epb_fail(why, cap, HAKO_EIO, "hako_endpoint_local_port gave 0 after start");
	}
	return 0;
}

static int open_udp_out(hako_endpoint_t **out, const char *stem, const epb_link_opts_t *o,
                        uint16_t port, char *why, size_t cap)
{
	char opts[256], comm[1024];
	options_json(o, opts, sizeof(opts));
	snprintf(comm, sizeof(comm),
	         "{\"protocol\": \"udp\", \"name\": \"%s\", \"direction\": \"out\", "
	         "\"comm_raw_version\": \"v2\",\n"
	         " \"remote\": {\"address\": \"127.0.0.1\", \"port\": %u},\n"
	         " \"options\": %s}\n",
	         stem, (unsigned)port, opts);
	int r = open_ep(stem, comm, NULL, 0, out, why, cap);
	if (r != 0) {
		return r;
	}
	return start_ep(*out, NULL, why, cap);
}

int epb_link_child_open(epb_link_t *l, const epb_link_opts_t *o, uint16_t parent_port,
                        uint16_t *port, char *why, size_t cap)
{
	memset(l, 0, sizeof(*l));
	l->proto = o->proto;
	set_keys(l, o);
	*port = 0;
	char opts[256], comm[1024];
	options_json(o, opts, sizeof(opts));
	int r;
	switch (o->proto) {
	case EPB_TCP:
		snprintf(comm, sizeof(comm),
		         "{\"protocol\": \"tcp\", \"name\": \"c\", \"role\": \"client\", "
		         "\"comm_raw_version\": \"v2\",\n"
		         " \"remote\": {\"address\": \"127.0.0.1\", \"port\": %u},\n"
		         " \"options\": %s}\n",
		         (unsigned)parent_port, opts);
		break;
	case EPB_WS:
		snprintf(comm, sizeof(comm),
		         "{\"protocol\": \"websocket\", \"name\": \"c\", \"role\": \"client\", "
		         "\"comm_raw_version\": \"v2\",\n"
		         " \"remote\": {\"host\": \"127.0.0.1\", \"port\": %u, \"path\": \"/\"},\n"
		         " \"options\": %s}\n",
		         (unsigned)parent_port, opts);
		break;
	case EPB_UDP:
		snprintf(comm, sizeof(comm),
		         "{\"protocol\": \"udp\", \"name\": \"c-in\", \"direction\": \"in\", "
		         "\"comm_raw_version\": \"v2\",\n"
		         " \"local\": {\"address\": \"127.0.0.1\", \"port\": 1},\n"
		         " \"options\": %s}\n",
		         opts);
		if ((r = open_ep("c-in", comm, NULL, 1, &l->rx, why, cap)) != 0 ||
		    (r = start_ep(l->rx, NULL, why, cap)) != 0) {
			return r;
		}
		*port = hako_endpoint_local_port(l->rx);
		if (*port == 0) {
			return epb_fail(why, cap, HAKO_EIO, "hako_endpoint_local_port gave 0");
		}
		return open_udp_out(&l->tx, "c-out", o, parent_port, why, cap);
	case EPB_SHM: return open_shm(l, o, "c", why, cap);
	}
	if ((r = open_ep("c", comm, NULL, 0, &l->rx, why, cap)) != 0) {
		return r;
	}
	l->tx = l->rx;
	return start_ep(l->rx, NULL, why, cap);
}

int epb_link_parent_connect(epb_link_t *l, const epb_link_opts_t *o, uint16_t child_port,
                            int timeout_ms, char *why, size_t cap)
{
	switch (o->proto) {
	case EPB_UDP: return open_udp_out(&l->tx, "p-out", o, child_port, why, cap);
	case EPB_SHM: return 0;
	case EPB_TCP:
	case EPB_WS: break;
	}
	int64_t end = bench_now_ns() + (int64_t)timeout_ms * 1000000;
	for (;;) {
		hako_endpoint_stats_t st;
		hako_endpoint_get_stats(l->rx, &st);
		if (st.peers > 0) {
			return 0;
		}
		if (bench_now_ns() > end) {
			return epb_fail(why, cap, HAKO_ETIMEDOUT,
			                "the child did not connect within %d ms", timeout_ms);
		}
		epb_sleep_us(1000);
	}
}

void epb_link_close(epb_link_t *l)
{
	if (l->tx != NULL && l->tx != l->rx) {
		hako_endpoint_close(l->tx);
	}
	hako_endpoint_close(l->rx);
	l->tx = l->rx = NULL;
}

void epb_link_tx_stats(const epb_link_t *l, hako_endpoint_stats_t *st)
{
	hako_endpoint_get_stats(l->tx, st);
}

void epb_link_rx_stats(const epb_link_t *l, hako_endpoint_stats_t *st)
{
	hako_endpoint_get_stats(l->rx, st);
}

int epb_send_produced(const epb_link_t *l, uint64_t stamp, size_t len)
{
	void *buf = NULL;
	int r = hako_endpoint_loan(l->tx, &l->send_key, len, &buf);
	if (r != 0) {
		return r;
	}
	memcpy(buf, &stamp, sizeof(stamp));
	if (len > sizeof(stamp)) {
		memset((uint8_t *)buf + sizeof(stamp), (int)(stamp & 0xff), len - sizeof(stamp));
	}
	return hako_endpoint_commit(l->tx, &l->send_key, len);
}

int epb_send_copy_loaned(const epb_link_t *l, const void *data, size_t len)
{
	void *buf = NULL;
	int r = hako_endpoint_loan(l->tx, &l->send_key, len, &buf);
	if (r != 0) {
		return r;
	}
	memcpy(buf, data, len);
	return hako_endpoint_commit(l->tx, &l->send_key, len);
}

/* ---- the command line and the report ---- */

int epb_check_opts(bench_opts_t *o, long max_rounds, const char *stamp, void (*usage)(FILE *out),
                   size_t *sum)
{
	if (o->quick) {
		if (!o->payloads_given) {
			o->payloads[0] = 64;
			o->payloads[1] = 65536;
			o->npayloads = 2;
		}
		o->rounds = 1;
	}
	if (o->rounds < 1 || o->rounds > max_rounds || o->count < 0) {
		usage(stderr);
		return 2;
	}
	*sum = 0;
	for (int p = 0; p < o->npayloads; p++) {
		if (o->payloads[p] < 8) {
			fprintf(stderr, "payloads must be >= 8 bytes (%s)\n", stamp);
			return 2;
		}
		*sum += ((size_t)o->payloads[p] + 4095) & ~(size_t)4095;
	}
	return -1;
}

hako_domain_t *epb_create_domain(const char *tag, size_t payload_sum, char *name, size_t cap)
{
	snprintf(name, cap, "bench-%s-%d", tag, (int)getpid());
	hako_domain_config_t cfg;
	hako_domain_config_default(&cfg);
	cfg.max_assets = 4;
	cfg.max_channels = 64;
	/* every payload has its own two channels (robot bench-<size>), two buffers each */
	cfg.arena_bytes = 4ull * payload_sum + (8ull << 20);
	epb_set_domain(name);
	hako_domain_t *dom = NULL;
	int r = hako_domain_create(name, &cfg, &dom);
	if (r != 0) {
		epb_set_domain("");
		fprintf(stderr, "%s: skipped: shm: create domain %s: %s\n", g_prog, name,
		        hako_strerror(r));
		return NULL;
	}
	return dom;
}

void epb_run_failed(int r, const char *variant, const char *size, const char *why, int *disabled,
                    char *disabled_why, size_t cap)
{
	if (r == HAKO_ENOTSUP) {
		*disabled = 1;
		snprintf(disabled_why, cap, "%s", why);
		fprintf(stderr, "%s: skipped: %s: %s\n", g_prog, variant, why);
	} else {
		fprintf(stderr, "%s: skipped: %s %s (this round): %s\n", g_prog, variant, size,
		        why);
	}
}

void epb_print_skipped(const char *const *names, int n, const int *enabled, const int *disabled,
                       const char (*disabled_why)[600])
{
	for (int v = 0; v < n; v++) {
		if (enabled[v] && disabled[v]) {
			printf("# skipped %s: %s\n", names[v], disabled_why[v]);
		}
	}
}

void epb_both(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	va_start(ap, fmt);
	fprintf(stderr, "%s: ", g_prog);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}

static char *g_child_err;
static size_t g_child_err_cap;

void epb_set_child_error(char *buf, size_t cap)
{
	g_child_err = buf;
	g_child_err_cap = cap;
}

void epb_child_fail(int wfd, const char *fmt, ...)
{
	char local[240];
	char *buf = g_child_err != NULL ? g_child_err : local;
	size_t cap = g_child_err != NULL ? g_child_err_cap : sizeof(local);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, cap, fmt, ap);
	va_end(ap);
	epb_send_msg(wfd, 'E', 0, buf);
	_exit(4);
}

void *epb_zmq_open(int type, const char *ep, int bind, int timeout_ms, char *why, size_t cap,
                   void **ctx)
{
	*ctx = zmq_ctx_new();
	void *s = *ctx != NULL ? zmq_socket(*ctx, type) : NULL;
	int to = timeout_ms, linger = 1000;
	if (s == NULL || zmq_setsockopt(s, ZMQ_RCVTIMEO, &to, sizeof(to)) != 0 ||
	    zmq_setsockopt(s, ZMQ_SNDTIMEO, &to, sizeof(to)) != 0 ||
	    zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof(linger)) != 0 ||
	    (bind ? zmq_bind(s, ep) : zmq_connect(s, ep)) != 0) {
		snprintf(why, cap, "zmq %s %s: %s", bind ? "bind" : "connect", ep,
		         zmq_strerror(zmq_errno()));
		if (s != NULL) {
			zmq_close(s);
		}
		if (*ctx != NULL) {
			zmq_ctx_term(*ctx);
		}
		*ctx = NULL;
		return NULL;
	}
	return s;
}

int epb_send_stamped(const epb_link_t *l, int loan, uint8_t *buf, size_t len, uint64_t stamp,
                     int64_t *t0)
{
	if (loan) {
		*t0 = bench_now_ns(); /* producing the PDU in place is part of the time */
		return epb_send_produced(l, stamp, len);
	}
	memcpy(buf, &stamp, sizeof(stamp));
	*t0 = bench_now_ns();
	return hako_endpoint_send(l->tx, &l->send_key, buf, len);
}

void epb_done_init(epb_done_t *d)
{
	d->done = 0;
	pthread_mutex_init(&d->lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&d->cond, &ca);
	pthread_condattr_destroy(&ca);
}

void epb_done_destroy(epb_done_t *d)
{
	pthread_cond_destroy(&d->cond);
	pthread_mutex_destroy(&d->lock);
}

void epb_done_set(epb_done_t *d)
{
	pthread_mutex_lock(&d->lock);
	d->done = 1;
	pthread_cond_signal(&d->cond);
	pthread_mutex_unlock(&d->lock);
}

void epb_done_wait_ms(epb_done_t *d, long ms)
{
	struct timespec dl;
	clock_gettime(CLOCK_MONOTONIC, &dl);
	dl.tv_nsec += ms * 1000000L;
	while (dl.tv_nsec >= 1000000000L) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000L;
	}
	pthread_cond_timedwait(&d->cond, &d->lock, &dl);
}
