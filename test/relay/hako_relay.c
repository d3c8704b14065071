/* hako-relay: a delaying, lossy link that can be cut, for the tests of things that talk over a
 * network (these machines have no netem). It listens on local ports and forwards each to a
 * target:
 *
 *   tcp  every accepted connection gets its own upstream connection; the bytes of both
 *        directions are delayed by delay + U[0, jitter] and stay in order within a connection
 *        (a chunk never leaves before the one read before it). TCP does not lose bytes: on a
 *        lossy link a connection stalls or breaks, so --loss P breaks a connection (reset on
 *        both sides) with probability P per chunk read.
 *   udp  datagrams of each client address go out from an upstream socket of its own, so the
 *        replies find their way back; each is delayed by delay + U[0, jitter] (so they may be
 *        reordered, as on a real link) and dropped with probability P, in both directions.
 *
 * At run time (unix control socket, one command a line, one reply line each; or signals):
 *   cut       (SIGUSR1) reset every connection, refuse new ones, drop every datagram
 *   hold      stall: nothing moves, nothing is lost (TCP's view of a partition); new
 *             connections wait in the backlog
 *   restore   (SIGUSR2) back to normal; what a hold kept is delivered
 *   delay MS, jitter MS, loss P   change the link for what is read from now on
 *   stats     counters
 * The reply "ok" comes once the command took effect, so a test knows the link is cut when it
 * reads it.
 *
 * One process, one poll loop; the poll timeout is the next delivery time, so an idle relay
 * sleeps.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define MAX_ROUTES    8
#define MAX_FLOWS     64        /* udp client addresses per route */
#define CHUNK_BYTES   65536     /* one read */
#define QUEUE_LIMIT   (4 << 20) /* bytes queued in one direction before reading pauses */
#define DGRAM_MAX     65536
#define DGRAM_LIMIT   100000 /* datagrams in flight before new ones are dropped */
#define MAX_CONTROLS  8
#define CONTROL_LINE  256
#define NSEC_PER_MSEC 1000000ll

typedef int64_t nsec_t;

enum mode { MODE_OPEN, MODE_CUT, MODE_HOLD };
static const char *const mode_names[] = {"open", "cut", "hold"};

struct chunk {
	struct chunk *next;
	nsec_t due;
	size_t len, off;
	unsigned char data[];
};

/* One direction of a connection: bytes read from `from`, queued, written to `to`. */
struct dir {
	int from, to;
	struct chunk *head, *tail;
	size_t queued;
	nsec_t last_due;
	int eof;     /* `from` said EOF: pass it on once the queue is empty */
	int shut;    /* ... and it was passed on */
	int blocked; /* `to` would block: wait for POLLOUT */
};

struct pair {
	struct pair *next;
	int down, up;    /* the accepted connection, the one to the target */
	int connecting;  /* up: connect in progress */
	struct dir d[2]; /* 0: down -> up, 1: up -> down */
};

struct flow {
	struct sockaddr_storage client;
	socklen_t clen;
	int up; /* -1: free */
	uint32_t gen;
	nsec_t last_used;
};

struct route {
	int udp;
	char listen_spec[128], to_spec[128];
	struct sockaddr_storage to;
	socklen_t tolen;
	int lfd;
	struct flow flows[MAX_FLOWS];
};

struct dgram {
	nsec_t due;
	uint64_t seq;
	struct route *route;
	int flow;
	uint32_t gen;
	int toward_target;
	size_t len;
	unsigned char data[];
};

struct control {
	int fd; /* -1: free */
	char line[CONTROL_LINE];
	size_t len;
};

static struct {
	struct route routes[MAX_ROUTES];
	int nroutes;
	struct pair *pairs;
	struct dgram **heap;
	size_t nheap, capheap;
	uint64_t dgram_seq;
	nsec_t delay, jitter;
	double loss;
	uint64_t rng;
	enum mode mode;
	const char *control_path;
	int control_fd;
	struct control controls[MAX_CONTROLS];
	int sig_fd;
	nsec_t accept_pause_until;
	/* counters */
	uint64_t accepted, refused, broken, open_pairs, bytes_fwd, dgrams_in, dgrams_dropped,
	    dgrams_out;
} R;

static void warnx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void warnx(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("hako-relay: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

static nsec_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (nsec_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* splitmix64: a seed makes a run's losses and jitter repeatable. */
static uint64_t rng_next(void)
{
	uint64_t z = (R.rng += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static double rng_unit(void)
{
	return (double)(rng_next() >> 11) * 0x1.0p-53;
}

static nsec_t link_delay(void)
{
	nsec_t j = R.jitter > 0 ? (nsec_t)(rng_unit() * (double)(R.jitter + 1)) : 0;
	return R.delay + j;
}

static int lost(void)
{
	return R.loss > 0.0 && rng_unit() < R.loss;
}

/* Close so that the peer sees a reset, as when a link breaks, not an orderly end. */
static void close_reset(int fd)
{
	if (fd < 0) {
		return;
	}
	struct linger lg = {1, 0};
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	close(fd);
}

static int resolve(const char *spec, int udp, struct sockaddr_storage *out, socklen_t *len)
{
	char host[128];
	const char *colon = strrchr(spec, ':');
	if (colon == NULL || (size_t)(colon - spec) >= sizeof(host)) {
		warnx("'%s' is not HOST:PORT", spec);
		return -1;
	}
	memcpy(host, spec, (size_t)(colon - spec));
	host[colon - spec] = '\0';
	struct addrinfo hints, *res = NULL;
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = udp ? SOCK_DGRAM : SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV;
	int r = getaddrinfo(host[0] ? host : NULL, colon + 1, &hints, &res);
	if (r != 0) {
		warnx("%s: %s", spec, gai_strerror(r));
		return -1;
	}
	memcpy(out, res->ai_addr, res->ai_addrlen);
	*len = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

static void addr_text(const struct sockaddr_storage *a, socklen_t len, char *buf, size_t n)
{
	char host[100], serv[16];
	if (getnameinfo((const struct sockaddr *)a, len, host, sizeof(host), serv, sizeof(serv),
	                NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
		snprintf(buf, n, "?");
		return;
	}
	snprintf(buf, n, "%s:%s", host, serv);
}

/* ---- tcp ---- */

static void free_queue(struct dir *d)
{
	while (d->head != NULL) {
		struct chunk *c = d->head;
		d->head = c->next;
		free(c);
	}
	d->tail = NULL;
	d->queued = 0;
}

static void pair_free(struct pair *p, int reset)
{
	if (reset) {
		close_reset(p->down);
		close_reset(p->up);
	} else {
		close(p->down);
		close(p->up);
	}
	free_queue(&p->d[0]);
	free_queue(&p->d[1]);
	R.open_pairs--;
	free(p);
}

static void cut_all_pairs(void)
{
	while (R.pairs != NULL) {
		struct pair *p = R.pairs;
		R.pairs = p->next;
		pair_free(p, 1);
	}
}

static void accept_one(struct route *rt)
{
	int fd = accept4(rt->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0) {
		if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED) {
			/* Out of descriptors: the listener stays readable; do not spin on it. */
			warnx("accept on %s: %s", rt->listen_spec, strerror(errno));
			R.accept_pause_until = now_ns() + 100 * NSEC_PER_MSEC;
		}
		return;
	}
	if (R.mode == MODE_CUT) {
		R.refused++;
		close_reset(fd);
		return;
	}
	int up = socket(rt->to.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	struct pair *p = calloc(1, sizeof(*p));
	if (up < 0 || p == NULL) {
		warnx("no socket or memory for a connection: %s", strerror(errno));
		close_reset(fd);
		if (up >= 0) {
			close(up);
		}
		free(p);
		return;
	}
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(up, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	p->down = fd;
	p->up = up;
	p->d[0].from = fd;
	p->d[0].to = up;
	p->d[1].from = up;
	p->d[1].to = fd;
	if (connect(up, (struct sockaddr *)&rt->to, rt->tolen) != 0) {
		if (errno != EINPROGRESS) {
			close_reset(fd);
			close(up);
			free(p);
			R.refused++;
			return;
		}
		p->connecting = 1;
	}
	p->next = R.pairs;
	R.pairs = p;
	R.accepted++;
	R.open_pairs++;
}

/* Read one chunk from d->from. -1: the connection is over (error, or broken by loss). */
static int read_dir(struct dir *d)
{
	static unsigned char buf[CHUNK_BYTES];
	ssize_t n = recv(d->from, buf, sizeof(buf), 0);
	if (n < 0) {
		return errno == EAGAIN || errno == EINTR ? 0 : -1;
	}
	if (n == 0) {
		d->eof = 1;
		return 0;
	}
	if (lost()) {
		return -1;
	}
	struct chunk *c = malloc(sizeof(*c) + (size_t)n);
	if (c == NULL) {
		return -1; /* the bytes are read: dropping them would corrupt the stream */
	}
	memcpy(c->data, buf, (size_t)n);
	nsec_t due = now_ns() + link_delay();
	c->due = due > d->last_due ? due : d->last_due; /* order within the connection */
	d->last_due = c->due;
	c->len = (size_t)n;
	c->off = 0;
	c->next = NULL;
	if (d->tail != NULL) {
		d->tail->next = c;
	} else {
		d->head = c;
	}
	d->tail = c;
	d->queued += (size_t)n;
	return 0;
}

/* Write what is due. -1: the connection is over. */
static int flush_dir(struct dir *d, nsec_t now)
{
	while (d->head != NULL && d->head->due <= now) {
		struct chunk *c = d->head;
		ssize_t n = send(d->to, c->data + c->off, c->len - c->off, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR) {
				d->blocked = 1;
				return 0;
			}
			return -1;
		}
		R.bytes_fwd += (uint64_t)n;
		c->off += (size_t)n;
		d->queued -= (size_t)n;
		if (c->off < c->len) {
			d->blocked = 1;
			return 0;
		}
		d->head = c->next;
		if (d->head == NULL) {
			d->tail = NULL;
		}
		free(c);
	}
	d->blocked = 0;
	if (d->eof && d->head == NULL && !d->shut) {
		shutdown(d->to, SHUT_WR);
		d->shut = 1;
	}
	return 0;
}

/* Both ways done, or one side gone: the pair is over. */
static int pair_flush(struct pair *p, nsec_t now)
{
	if (p->connecting || R.mode == MODE_HOLD) {
		return 0;
	}
	for (int i = 0; i < 2; i++) {
		if (flush_dir(&p->d[i], now) != 0) {
			return -1;
		}
	}
	return p->d[0].shut && p->d[1].shut ? -1 : 0;
}

static void pair_events(struct pair *p, int fd, short revents, nsec_t now)
{
	int broken = 0;
	if (fd == p->up && p->connecting) {
		int err = 0;
		socklen_t len = sizeof(err);
		if (!(revents & (POLLOUT | POLLERR | POLLHUP))) {
			return;
		}
		getsockopt(p->up, SOL_SOCKET, SO_ERROR, &err, &len);
		if (err != 0) {
			broken = 1;
		} else {
			p->connecting = 0;
		}
	}
	for (int i = 0; i < 2 && !broken && !p->connecting; i++) {
		struct dir *d = &p->d[i];
		if (d->from == fd && (revents & (POLLIN | POLLHUP | POLLERR)) && !d->eof) {
			broken = read_dir(d) != 0;
		}
		if (d->to == fd && (revents & POLLOUT)) {
			d->blocked = 0;
		}
	}
	if (!broken) {
		broken = pair_flush(p, now) != 0;
	}
	if (broken) {
		int orderly = p->d[0].shut && p->d[1].shut;
		for (struct pair **pp = &R.pairs; *pp != NULL; pp = &(*pp)->next) {
			if (*pp == p) {
				*pp = p->next;
				break;
			}
		}
		R.broken += !orderly;
		pair_free(p, !orderly);
	}
}

/* ---- udp ---- */

static int heap_less(const struct dgram *a, const struct dgram *b)
{
	return a->due < b->due || (a->due == b->due && a->seq < b->seq);
}

static void heap_push(struct dgram *g)
{
	if (R.nheap == R.capheap) {
		size_t cap = R.capheap ? R.capheap * 2 : 256;
		struct dgram **h = realloc(R.heap, cap * sizeof(*h));
		if (h == NULL) {
			free(g);
			R.dgrams_dropped++;
			return;
		}
		R.heap = h;
		R.capheap = cap;
	}
	size_t i = R.nheap++;
	while (i > 0 && heap_less(g, R.heap[(i - 1) / 2])) {
		R.heap[i] = R.heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	R.heap[i] = g;
}

static struct dgram *heap_pop(void)
{
	struct dgram *top = R.heap[0], *last = R.heap[--R.nheap];
	size_t i = 0;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= R.nheap) {
			break;
		}
		if (c + 1 < R.nheap && heap_less(R.heap[c + 1], R.heap[c])) {
			c++;
		}
		if (!heap_less(R.heap[c], last)) {
			break;
		}
		R.heap[i] = R.heap[c];
		i = c;
	}
	if (R.nheap > 0) {
		R.heap[i] = last;
	}
	return top;
}

static void drop_all_dgrams(void)
{
	while (R.nheap > 0) {
		free(heap_pop());
		R.dgrams_dropped++;
	}
}

/* The flow of a client address: found, a free one, or the least recently used one. */
static int flow_of(struct route *rt, const struct sockaddr_storage *a, socklen_t len)
{
	int free_i = -1, lru = 0;
	for (int i = 0; i < MAX_FLOWS; i++) {
		struct flow *f = &rt->flows[i];
		if (f->up >= 0 && f->clen == len && memcmp(&f->client, a, len) == 0) {
			return i;
		}
		if (f->up < 0 && free_i < 0) {
			free_i = i;
		}
		if (f->last_used < rt->flows[lru].last_used) {
			lru = i;
		}
	}
	int i = free_i >= 0 ? free_i : lru;
	struct flow *f = &rt->flows[i];
	if (f->up >= 0) {
		close(f->up);
	}
	f->up = socket(rt->to.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (f->up < 0 || connect(f->up, (struct sockaddr *)&rt->to, rt->tolen) != 0) {
		warnx("udp upstream socket for %s: %s", rt->to_spec, strerror(errno));
		if (f->up >= 0) {
			close(f->up);
		}
		f->up = -1;
		return -1;
	}
	memcpy(&f->client, a, len);
	f->clen = len;
	f->gen++;
	return i;
}

static void udp_read(struct route *rt, int fd, int flow)
{
	unsigned char buf[DGRAM_MAX];
	for (int k = 0; k < 64; k++) { /* a bounded batch: other sockets get their turn */
		struct sockaddr_storage from;
		socklen_t flen = sizeof(from);
		ssize_t n = recvfrom(fd, buf, sizeof(buf), 0, (struct sockaddr *)&from, &flen);
		if (n < 0) {
			return;
		}
		R.dgrams_in++;
		int toward_target = flow < 0;
		int f = toward_target ? flow_of(rt, &from, flen) : flow;
		if (f < 0 || R.mode == MODE_CUT || lost() || R.nheap >= DGRAM_LIMIT) {
			R.dgrams_dropped++;
			continue;
		}
		struct dgram *g = malloc(sizeof(*g) + (size_t)n);
		if (g == NULL) {
			R.dgrams_dropped++;
			continue;
		}
		rt->flows[f].last_used = now_ns();
		g->due = rt->flows[f].last_used + link_delay();
		g->seq = R.dgram_seq++;
		g->route = rt;
		g->flow = f;
		g->gen = rt->flows[f].gen;
		g->toward_target = toward_target;
		g->len = (size_t)n;
		memcpy(g->data, buf, (size_t)n);
		heap_push(g);
	}
}

static void udp_flush(nsec_t now)
{
	while (R.nheap > 0 && R.heap[0]->due <= now) {
		struct dgram *g = heap_pop();
		struct flow *f = &g->route->flows[g->flow];
		ssize_t n = -1;
		if (f->up >= 0 && f->gen == g->gen) {
			n = g->toward_target ? send(f->up, g->data, g->len, 0)
			                     : sendto(g->route->lfd, g->data, g->len, 0,
			                              (struct sockaddr *)&f->client, f->clen);
		}
		if (n < 0) {
			R.dgrams_dropped++; /* a full socket buffer loses it, as a real link would
			                     */
		} else {
			R.dgrams_out++;
		}
		free(g);
	}
}

/* ---- control ---- */

static void set_mode(enum mode m)
{
	if (m == MODE_CUT) {
		cut_all_pairs();
		drop_all_dgrams();
	}
	R.mode = m;
}

static int parse_ms(const char *s, nsec_t *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno != 0 || end == s || *end != '\0' || !(v >= 0.0) || v > 3600e3) {
		return -1;
	}
	*out = (nsec_t)(v * 1e6);
	return 0;
}

static int parse_prob(const char *s, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno != 0 || end == s || *end != '\0' || !(v >= 0.0 && v <= 1.0)) {
		return -1;
	}
	*out = v;
	return 0;
}

/* One command line: the reply in `reply`. 1 when the relay should exit. */
static int run_command(char *line, char *reply, size_t n)
{
	char *arg = strchr(line, ' ');
	if (arg != NULL) {
		*arg++ = '\0';
	}
	snprintf(reply, n, "ok\n");
	if (strcmp(line, "cut") == 0) {
		set_mode(MODE_CUT);
	} else if (strcmp(line, "hold") == 0) {
		set_mode(MODE_HOLD);
	} else if (strcmp(line, "restore") == 0) {
		set_mode(MODE_OPEN);
	} else if (strcmp(line, "delay") == 0 && arg != NULL && parse_ms(arg, &R.delay) == 0) {
	} else if (strcmp(line, "jitter") == 0 && arg != NULL && parse_ms(arg, &R.jitter) == 0) {
	} else if (strcmp(line, "loss") == 0 && arg != NULL && parse_prob(arg, &R.loss) == 0) {
	} else if (strcmp(line, "stats") == 0) {
		snprintf(reply, n,
		         "ok mode=%s accepted=%" PRIu64 " refused=%" PRIu64 " open=%" PRIu64
		         " broken=%" PRIu64 " bytes=%" PRIu64 " dgrams_in=%" PRIu64
		         " dgrams_dropped=%" PRIu64 " dgrams_out=%" PRIu64 " delay_ms=%.3f "
		         "jitter_ms=%.3f loss=%g\n",
		         mode_names[R.mode], R.accepted, R.refused, R.open_pairs, R.broken,
		         R.bytes_fwd, R.dgrams_in, R.dgrams_dropped, R.dgrams_out,
		         (double)R.delay / 1e6, (double)R.jitter / 1e6, R.loss);
	} else if (strcmp(line, "quit") == 0) {
		return 1;
	} else {
		snprintf(reply, n,
		         "error: '%s%s%s': commands are cut, hold, restore, delay MS, jitter MS, "
		         "loss P, stats, quit\n",
		         line, arg != NULL ? " " : "", arg != NULL ? arg : "");
	}
	return 0;
}

static int control_read(struct control *c)
{
	ssize_t n = read(c->fd, c->line + c->len, sizeof(c->line) - 1 - c->len);
	if (n <= 0) {
		if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
			return 0;
		}
		close(c->fd);
		c->fd = -1;
		return 0;
	}
	c->len += (size_t)n;
	int quit = 0;
	char *nl;
	while ((nl = memchr(c->line, '\n', c->len)) != NULL) {
		*nl = '\0';
		if (nl > c->line && nl[-1] == '\r') {
			nl[-1] = '\0';
		}
		char reply[512];
		quit |= run_command(c->line, reply, sizeof(reply));
		/* Short replies to a local socket: a blocking write is fine and keeps order. */
		ssize_t w = write(c->fd, reply, strlen(reply));
		(void)w;
		size_t used = (size_t)(nl - c->line) + 1;
		memmove(c->line, nl + 1, c->len - used);
		c->len -= used;
	}
	if (c->len == sizeof(c->line) - 1) {
		close(c->fd); /* a line longer than any command */
		c->fd = -1;
	}
	return quit;
}

static void control_accept(void)
{
	int fd = accept4(R.control_fd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0) {
		return;
	}
	for (int i = 0; i < MAX_CONTROLS; i++) {
		if (R.controls[i].fd < 0) {
			R.controls[i].fd = fd;
			R.controls[i].len = 0;
			return;
		}
	}
	close(fd);
}

static int open_control(const char *path)
{
	struct sockaddr_un a;
	memset(&a, 0, sizeof(a));
	a.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(a.sun_path)) {
		warnx("--control %s: path too long", path);
		return -1;
	}
	strcpy(a.sun_path, path);
	unlink(path);
	R.control_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (R.control_fd < 0 || bind(R.control_fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
	    listen(R.control_fd, 8) != 0) {
		warnx("--control %s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

/* ---- setup ---- */

static int open_route(struct route *rt)
{
	struct sockaddr_storage a;
	socklen_t alen;
	if (resolve(rt->listen_spec, rt->udp, &a, &alen) != 0 ||
	    resolve(rt->to_spec, rt->udp, &rt->to, &rt->tolen) != 0) {
		return -1;
	}
	rt->lfd = socket(a.ss_family,
	                 (rt->udp ? SOCK_DGRAM : SOCK_STREAM) | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int one = 1;
	if (rt->lfd < 0 || setsockopt(rt->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
	    bind(rt->lfd, (struct sockaddr *)&a, alen) != 0 ||
	    (!rt->udp && listen(rt->lfd, 64) != 0)) {
		warnx("cannot listen on %s: %s", rt->listen_spec, strerror(errno));
		return -1;
	}
	alen = sizeof(a);
	getsockname(rt->lfd, (struct sockaddr *)&a, &alen);
	char here[200], there[200];
	addr_text(&a, alen, here, sizeof(here));
	addr_text(&rt->to, rt->tolen, there, sizeof(there));
	printf("hako-relay: %s %s -> %s\n", rt->udp ? "udp" : "tcp", here, there);
	for (int i = 0; i < MAX_FLOWS; i++) {
		rt->flows[i].up = -1;
	}
	return 0;
}

static void usage(FILE *out)
{
	fprintf(out,
	        "usage: hako-relay [--tcp|--udp] --listen HOST:PORT --to HOST:PORT [...]\n"
	        "                  [--delay-ms MS] [--jitter-ms MS] [--loss P] [--seed N]\n"
	        "                  [--control PATH]\n\n"
	        "Forward each --listen to the --to after it (the protocol is the last --tcp or\n"
	        "--udp before it; port 0 picks one: the routes are printed, then 'ready').\n"
	        "Delay each chunk or datagram by MS + U[0, jitter]; udp: drop with probability\n"
	        "P; tcp: break a connection with probability P per chunk.\n"
	        "At run time: SIGUSR1 cuts, SIGUSR2 restores; --control PATH takes the lines\n"
	        "cut, hold, restore, delay MS, jitter MS, loss P, stats, quit.\n");
}

static int parse_args(int argc, char **argv)
{
	static const struct option longopts[] = {{"tcp", no_argument, NULL, 't'},
	                                         {"udp", no_argument, NULL, 'u'},
	                                         {"listen", required_argument, NULL, 'l'},
	                                         {"to", required_argument, NULL, 'o'},
	                                         {"delay-ms", required_argument, NULL, 'd'},
	                                         {"jitter-ms", required_argument, NULL, 'j'},
	                                         {"loss", required_argument, NULL, 'p'},
	                                         {"seed", required_argument, NULL, 's'},
	                                         {"control", required_argument, NULL, 'c'},
	                                         {"help", no_argument, NULL, 'h'},
	                                         {NULL, 0, NULL, 0}};
	int udp = 0, c, seeded = 0;
	struct route *rt = NULL;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 't': udp = 0; break;
		case 'u': udp = 1; break;
		case 'l':
			if (R.nroutes == MAX_ROUTES || (rt != NULL && rt->to_spec[0] == '\0')) {
				warnx("--listen: at most %d routes, each with its --to",
				      MAX_ROUTES);
				return -1;
			}
			rt = &R.routes[R.nroutes++];
			rt->udp = udp;
			snprintf(rt->listen_spec, sizeof(rt->listen_spec), "%s", optarg);
			break;
		case 'o':
			if (rt == NULL || rt->to_spec[0] != '\0') {
				warnx("--to %s: each --to follows its --listen", optarg);
				return -1;
			}
			snprintf(rt->to_spec, sizeof(rt->to_spec), "%s", optarg);
			break;
		case 'd':
		case 'j':
			if (parse_ms(optarg, c == 'd' ? &R.delay : &R.jitter) != 0) {
				warnx("--%s-ms %s: not a number of ms >= 0",
				      c == 'd' ? "delay" : "jitter", optarg);
				return -1;
			}
			break;
		case 'p':
			if (parse_prob(optarg, &R.loss) != 0) {
				warnx("--loss %s: not a probability in [0, 1]", optarg);
				return -1;
			}
			break;
		case 's':
			R.rng = strtoull(optarg, NULL, 0);
			seeded = 1;
			break;
		case 'c': R.control_path = optarg; break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); return -1;
		}
	}
	if (optind != argc || R.nroutes == 0 || rt->to_spec[0] == '\0') {
		usage(stderr);
		return -1;
	}
	if (!seeded) {
		R.rng = (uint64_t)now_ns() ^ ((uint64_t)getpid() << 32);
	}
	printf("hako-relay: seed %" PRIu64 "\n", R.rng);
	return 0;
}

/* ---- the loop ---- */

enum tag { T_SIG, T_CONTROL, T_CONTROL_CLIENT, T_LISTEN, T_UDP_UP, T_PAIR };
struct slot {
	enum tag tag;
	void *ptr;
	int idx;
};

static struct pollfd *pfds;
static struct slot *slots;
static size_t npfd, cappfd;

static void add_fd(int fd, short events, enum tag tag, void *ptr, int idx)
{
	if (events == 0) {
		/* Not even for POLLHUP: a half-closed socket reports it until the pair ends, and
		 * a socket nothing is read from or written to has nothing to say. */
		return;
	}
	if (npfd == cappfd) {
		size_t cap = cappfd ? cappfd * 2 : 64;
		struct pollfd *p = realloc(pfds, cap * sizeof(*p));
		struct slot *s = p != NULL ? realloc(slots, cap * sizeof(*s)) : NULL;
		if (p != NULL) {
			pfds = p;
		}
		if (s == NULL) {
			return; /* not watched this round; the next has room or not */
		}
		slots = s;
		cappfd = cap;
	}
	pfds[npfd] = (struct pollfd){fd, events, 0};
	slots[npfd] = (struct slot){tag, ptr, idx};
	npfd++;
}

static nsec_t min_due(nsec_t a, nsec_t b)
{
	return a < 0 || (b >= 0 && b < a) ? b : a;
}

/* The poll set of this round, and when the next delivery is due (-1: none). */
static nsec_t build_poll_set(nsec_t now)
{
	nsec_t next = -1;
	npfd = 0;
	add_fd(R.sig_fd, POLLIN, T_SIG, NULL, 0);
	if (R.control_fd >= 0) {
		add_fd(R.control_fd, POLLIN, T_CONTROL, NULL, 0);
	}
	for (int i = 0; i < MAX_CONTROLS; i++) {
		if (R.controls[i].fd >= 0) {
			add_fd(R.controls[i].fd, POLLIN, T_CONTROL_CLIENT, NULL, i);
		}
	}
	int moving = R.mode != MODE_HOLD;
	for (int i = 0; i < R.nroutes; i++) {
		struct route *rt = &R.routes[i];
		if (rt->udp) {
			add_fd(rt->lfd, moving ? POLLIN : 0, T_LISTEN, rt, 0);
			for (int f = 0; f < MAX_FLOWS; f++) {
				if (rt->flows[f].up >= 0) {
					add_fd(rt->flows[f].up, moving ? POLLIN : 0, T_UDP_UP, rt,
					       f);
				}
			}
		} else if (moving && now >= R.accept_pause_until) {
			add_fd(rt->lfd, POLLIN, T_LISTEN, rt, 0);
		} else if (moving) {
			next = min_due(next, R.accept_pause_until);
		}
	}
	if (moving && R.nheap > 0) {
		next = min_due(next, R.heap[0]->due);
	}
	for (struct pair *p = R.pairs; p != NULL; p = p->next) {
		short ev[2] = {0, 0}; /* down, up */
		if (p->connecting) {
			add_fd(p->up, POLLOUT, T_PAIR, p, 1);
			continue;
		}
		for (int i = 0; i < 2 && moving; i++) {
			struct dir *d = &p->d[i];
			if (!d->eof && d->queued < QUEUE_LIMIT) {
				ev[i] |= POLLIN; /* d[0] reads down, d[1] reads up */
			}
			if (d->blocked) {
				ev[1 - i] |= POLLOUT;
			} else if (d->head != NULL) {
				next = min_due(next, d->head->due);
			}
		}
		add_fd(p->down, ev[0], T_PAIR, p, 0);
		add_fd(p->up, ev[1], T_PAIR, p, 1);
	}
	return next;
}

/* Deliver what is due; pairs that end are freed. */
static void deliver(nsec_t now)
{
	if (R.mode == MODE_HOLD) {
		return;
	}
	udp_flush(now);
	for (struct pair **pp = &R.pairs; *pp != NULL;) {
		struct pair *p = *pp;
		if (pair_flush(p, now) != 0) {
			int orderly = p->d[0].shut && p->d[1].shut;
			*pp = p->next;
			R.broken += !orderly;
			pair_free(p, !orderly);
		} else {
			pp = &p->next;
		}
	}
}

/* 1 when a pair slot's pair is still in the list with that socket (an earlier event this round
 * may have freed it). */
static int pair_alive(const struct pair *p, int fd)
{
	for (const struct pair *q = R.pairs; q != NULL; q = q->next) {
		if (q == p) {
			return fd == p->down || fd == p->up;
		}
	}
	return 0;
}

static int handle_events(nsec_t now)
{
	for (size_t i = 0; i < npfd; i++) {
		short re = pfds[i].revents;
		if (re == 0) {
			continue;
		}
		struct slot *s = &slots[i];
		switch (s->tag) {
		case T_SIG: {
			struct signalfd_siginfo si;
			while (read(R.sig_fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
				if (si.ssi_signo == SIGUSR1) {
					set_mode(MODE_CUT);
				} else if (si.ssi_signo == SIGUSR2) {
					set_mode(MODE_OPEN);
				} else {
					return 1;
				}
			}
			break;
		}
		case T_CONTROL: control_accept(); break;
		case T_CONTROL_CLIENT:
			if (control_read(&R.controls[s->idx])) {
				return 1;
			}
			break;
		case T_LISTEN: {
			struct route *rt = s->ptr;
			if (rt->udp) {
				udp_read(rt, rt->lfd, -1);
			} else {
				accept_one(rt);
			}
			break;
		}
		case T_UDP_UP: {
			struct route *rt = s->ptr;
			if (rt->flows[s->idx].up == pfds[i].fd) {
				udp_read(rt, pfds[i].fd, s->idx);
			}
			break;
		}
		case T_PAIR:
			if (pair_alive(s->ptr, pfds[i].fd)) {
				pair_events(s->ptr, pfds[i].fd, re, now);
			}
			break;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	R.control_fd = -1;
	for (int i = 0; i < MAX_CONTROLS; i++) {
		R.controls[i].fd = -1;
	}
	if (parse_args(argc, argv) != 0) {
		return 2;
	}
	sigset_t sigs;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGUSR1);
	sigaddset(&sigs, SIGUSR2);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGHUP);
	sigprocmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);
	R.sig_fd = signalfd(-1, &sigs, SFD_NONBLOCK | SFD_CLOEXEC);
	if (R.sig_fd < 0) {
		warnx("signalfd: %s", strerror(errno));
		return 1;
	}
	for (int i = 0; i < R.nroutes; i++) {
		if (open_route(&R.routes[i]) != 0) {
			return 1;
		}
	}
	if (R.control_path != NULL && open_control(R.control_path) != 0) {
		return 1;
	}
	printf("hako-relay: ready\n");
	int quit = 0;
	while (!quit) {
		nsec_t now = now_ns();
		deliver(now);
		nsec_t next = build_poll_set(now);
		struct timespec ts, *tsp = NULL;
		if (next >= 0) {
			nsec_t wait = next > now ? next - now : 0;
			ts.tv_sec = (time_t)(wait / 1000000000);
			ts.tv_nsec = (long)(wait % 1000000000);
			tsp = &ts;
		}
		int n = ppoll(pfds, npfd, tsp, NULL);
		if (n < 0 && errno != EINTR) {
			warnx("poll: %s", strerror(errno));
			return 1;
		}
		if (n > 0) {
			quit = handle_events(now_ns());
		}
	}
	cut_all_pairs();
	drop_all_dgrams();
	if (R.control_path != NULL) {
		unlink(R.control_path);
	}
	printf("hako-relay: done\n");
	return 0;
}
