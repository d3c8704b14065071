/* The tcp comm: a server that serves any number of clients, or a client that keeps (re)connecting
 * to one server. Frames are Hakoniwa's v1/v2 (hako/frame.h), one after another on the stream.
 *
 * Threads. The comm has no thread of its own: between start and stop it is served by the I/O
 * loop of its endpoint set (ep_loop.h), which polls the listening socket (server) or the
 * connecting socket (client) and the peers among the fds of the set's other comms. The loop
 * thread accepts, connects with back-off, reads, frames and delivers, writes what the senders
 * queued, and is the only one that closes a peer. Each peer has an io (its socket) and a timer
 * (its frame deadlines, the release of an idle big buffer); the comm has a timer (connect
 * deadline, retry, accept pause), a timer for its big send buffers, and a task that senders post
 * when they queued frames or found a peer dead. Senders (any thread, the loop's included, from
 * inside a subscriber) take a reference on each peer under peers_lock and then work under the
 * peer's own lock, so a sender never waits for the loop's poll and never touches a closed fd.
 *
 * Send path. A PDU is encoded once (a refcounted frame buffer) and handed to every peer:
 *  - latency: when the peer's queue is empty, nobody is writing to it and the previous send to it
 *    is older than BATCH_GAP_NS, the sender writes the frame itself (one non-blocking sendmsg of
 *    the header and the caller's bytes: no frame buffer, no copy, when the socket takes it all);
 *    what the socket does not take stays queued for the loop (POLLOUT);
 *  - throughput: sends that come back to back, or find frames queued, only enqueue and post the
 *    comm's task, which writes the whole queue with sendmsg(iovec) batches on the loop thread.
 *    A post is one atomic exchange while the task is queued, and the loop's eventfd is written
 *    only when the loop sleeps: not once per PDU;
 *  - a full queue: blocking (default) waits up to write_timeout_ms for room, then disconnects
 *    the stuck peer; non-blocking drops the oldest queued frame. Both are counted. A send from
 *    a callback of this comm (a subscriber) cannot wait for the loop it runs on: it writes the
 *    queue inline, then drops the oldest. A blocking send from a callback of another comm of
 *    the same loop (a bridge forwarding between two endpoints of a set) waits for the peer's
 *    socket itself (poll, within write_timeout_ms), as the loop cannot write meanwhile: the
 *    loop's other comms wait with it, as a blocked forwarder's comm thread waited before.
 * Whoever writes a queue holds no lock but marks the peer `writing`: nobody else writes, drops
 * from or frees that queue meanwhile (senders that would drop wait for the write to end).
 *
 * Receive path. Per peer one buffer read in big chunks; hako_frame_needed frames the stream. The
 * buffer grows as a frame's bytes arrive (doubled when full, never past the announced frame:
 * header + at most max_body_bytes, rounded up to a page), so a peer holds memory for what it
 * sent, not for what its header announced. A protocol error closes that peer (rejected); a
 * frame that stays incomplete with no byte arriving for read_timeout_ms, or that is not whole
 * frame_timeout_ms after its first byte (a trickle does not extend that), drops the peer (an
 * idle peer without a partial frame is kept, once it has sent a frame: see below).
 * Limits across peers (a server's memory must not be linear in hostile peers): at most
 * max_clients peers, and the receive buffers of all peers together, beyond the RX_CHUNK each
 * reads into (so small frames are always served), stay within max_buffered_bytes: a peer whose
 * buffer would have to grow past it, once the buffers kept by idle peers are released, is
 * dropped (rejected, with the reason). A listening socket's backlog is SOMAXCONN unless the
 * file sets one.
 * Places that idle peers cannot hold (server): connections that never send a frame must not
 * lock out the peers that do.
 *  - First frame: a peer of a server that takes input (direction in or inout) must have sent a
 *    whole frame FIRST_FRAME_MS after it connected, or it is dropped (disconnects); a first
 *    frame in progress then has frame_timeout_ms from its first byte instead, if that is set.
 *    A peer that sent nothing at all may be a client that only listens: it is kept while the
 *    server is less than half full (then it gives way like any idle peer, below). A server
 *    that only sends (out) waits for nothing from its peers.
 *  - Per address: one address (IPv6: one /64) holds at most per_addr peers, half of
 *    max_clients (at least PER_ADDR_MIN, or max_clients if smaller), so that a single host
 *    cannot take every place.
 *  - Making room: a connection that finds its address's places or all places taken takes the
 *    place of an idle peer (of its address, or of any): one that never sent a frame and
 *    connected EVICT_NEW_MS ago or more (the oldest; those with nothing of a frame first),
 *    else one whose last frame is EVICT_IDLE_MS old or more (the longest idle). A peer that
 *    streams, or one that just connected, never gives way. With no such peer, the connection
 *    is accepted and closed at once (rejected). All peers may share one address (127.0.0.1 in
 *    tests, a proxy): a new client of it still gets in, in the place of its oldest idle peer.
 * Each of these is logged once (until a peer sends its first frame), then at debug level.
 * Receive buffer policy (memory per peer): RX_CHUNK (128 KiB) at least; a buffer grown for a big
 * frame is kept for the next one as long as it is at most RX_KEEP_MAX (4 MiB), because a freshly
 * allocated big buffer is freshly mapped memory (glibc mmaps allocations above its threshold):
 * ~256 page faults per MiB, which made 1 MiB frames cost several times raw tcp. It goes back to
 * RX_CHUNK after RX_SHRINK_FRAMES frames in a row that all fit in RX_CHUNK, or once the peer has
 * sent nothing for RX_IDLE_MS with no partial frame, or when another peer needs the room under
 * max_buffered_bytes. A buffer above RX_KEEP_MAX (frames larger than 4 MiB) is shrunk right
 * after its frame. So a peer holds at most 4 MiB, or for a bigger frame twice what arrived of it
 * (at most the size of the frame before it while that one's buffer is reused), and 128 KiB once
 * its big frames stop.
 *
 * Send path memory: a frame is one malloc'd buffer (ep_net.c), encoded once for all peers. For
 * frames of FCACHE_MIN and more the comm keeps up to FCACHE_SLOTS released buffers of at most
 * FCACHE_MAX bytes each and encodes the next big frame into one of them (a cached buffer is
 * free again once its reference is the cache's only one), for the same page-fault reason. The
 * loop frees them when no big frame was sent for RX_IDLE_MS: at most FCACHE_SLOTS x FCACHE_MAX
 * per comm, nothing once big sends stop.
 *
 * Stop. The comm first leaves the loop (its fds and timers are removed on the loop thread, the
 * set's other comms are served on), then the stopping thread writes what the peers have queued
 * (bounded by write_timeout_ms, 0: STOP_DRAIN_MS), ends each drained peer's stream (FIN after the
 * data) and reads until the peer's EOF within the same bound: close() over unread bytes would
 * reset the connection and the peer could lose what is still in flight. Peers that could not
 * take their queue in time are closed abortively, the rest counted in send_dropped. (Stopped
 * from a callback of its loop, the drain runs there and holds up the loop meanwhile.)
 */
#define _GNU_SOURCE

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "ep_comm.h"
#include "ep_loop.h"
#include "ep_net.h"
#include "hako/log.h"

#define RX_CHUNK          (128u << 10) /* receive buffer kept per peer */
#define RX_KEEP_MAX       (4u << 20)   /* a grown receive buffer up to this is kept */
#define RX_SHRINK_FRAMES  256u         /* ... until this many small frames in a row */
#define RX_IDLE_MS        2000u        /* ... or this long without a byte (nor a partial frame) */
#define RX_ROUND          4096u        /* grown buffers are rounded up to this */
#define RX_IDLE_NS        ((uint64_t)RX_IDLE_MS * 1000000u)
#define FCACHE_SLOTS      4            /* big send buffers kept per comm */
#define FCACHE_MIN        (128u << 10) /* frames from this size (glibc mmaps them) use the cache */
#define FCACHE_MAX        (4u << 20)   /* larger ones are malloc'd and freed as usual */
#define IOV_BATCH         512          /* frames per sendmsg */
#define BATCH_GAP_NS      15000u       /* sends closer than this are batched */
#define BACKOFF_MIN_MS    50u
#define BACKOFF_MAX_MS    1000u
#define ACCEPT_PAUSE_MS   100u /* after EMFILE & co: do not spin on the listening socket */
#define DEFAULT_CONN_TOUT 1000u
#define STOP_DRAIN_MS     1000u  /* write_timeout_ms 0 */
#define FIRST_FRAME_MS    5000u  /* a server's peer must send a whole frame within this */
#define EVICT_NEW_MS      1000u  /* a peer with no frame yet is idle after this ... */
#define EVICT_IDLE_MS     30000u /* ... one that sent frames after this long without one */
#define PER_ADDR_MIN      16u    /* peers per address: max_clients / 2, at least this */
#define MS_NS(ms)         ((uint64_t)(ms)*1000000u)

enum { DEAD_NONE = 0, DEAD_BROKEN, DEAD_STUCK };

typedef struct tcp_comm tcp_comm_t;

typedef struct tcp_peer {
	atomic_int refs; /* peers array + senders holding it */
	char addr[64];
	tcp_comm_t *comm;
	pthread_mutex_t lock;
	pthread_cond_t room; /* queue space freed, write ended, or peer closed */
	/* Under lock. */
	int fd;
	hakoi_frameq_t q;
	int writing; /* a thread is in sendmsg for the queue without the lock */
	int closed;  /* fd closed, queue freed */
	int dead;    /* DEAD_*: a sender saw it fail; the loop closes it */
	int dead_errno;
	int waiters;  /* senders waiting on room */
	int want_out; /* the socket is full: the loop polls POLLOUT */
	uint64_t last_send_ns;
	/* Loop thread only (the stopping thread once the comm left the loop). */
	size_t index;        /* in the comm's peers */
	hakoi_io_t io;       /* the socket */
	hakoi_timer_t timer; /* the frame deadlines, the idle release of a big buffer */
	uint8_t *rbuf;
	size_t rcap;
	size_t rlen;
	uint32_t rx_small;  /* frames in a row that fit in RX_CHUNK */
	size_t rneed;       /* bytes of the partial frame at rbuf (0: not known yet) */
	uint64_t rx_ns;     /* last bytes received */
	uint64_t fstart_ns; /* first bytes of the partial frame at rbuf (0: none) */
	uint64_t since_ns;  /* connected */
	uint64_t frame_ns;  /* last whole frame received (0: none yet) */
	uint8_t akey[16];   /* its address for the per-address limit (hakoi_addr_key) */
	int listener;       /* silent at its first-frame deadline while there was room: kept */
	int bye;            /* stop: queue written, FIN sent */
	int eof;            /* stop: the peer's EOF (or an error) read */
} tcp_peer_t;

struct tcp_comm {
	hakoi_comm_ctx_t ctx;
	const hako_comm_config_t *cfg;
	const hako_comm_tcp_options_t *opt;
	hako_frame_version_t ver;
	int server;
	int lfd;
	uint16_t port;
	hakoi_loop_t *loop;
	int started; /* start .. stop (the caller's) */

	pthread_mutex_t peers_lock; /* the array; the loop thread reads it without the lock */
	tcp_peer_t **peers;
	size_t npeers;
	size_t peers_cap;

	/* Loop thread. */
	int attached;          /* served by the loop: start .. stop */
	int attach_err;        /* what attaching met (out of memory) */
	hakoi_io_t lio;        /* server: the listening socket; client: the connecting one */
	hakoi_timer_t ctimer;  /* server: the end of an accept pause; client: connect, retry */
	hakoi_timer_t fctimer; /* the big send buffers' idle release */
	hakoi_task_t work;     /* posted by senders: frames queued, a peer found dead */
	size_t rx_total;       /* rx_held of the peers' buffers together (<= max_buffered_bytes) */
	int full_logged;       /* a connection refused for the limits, and said so */
	int quiet_logged;      /* a peer dropped for no first frame, and said so */
	int evict_logged;      /* a peer dropped to make room, and said so */
	uint32_t per_addr;     /* server: peers one address may hold */

	/* Client (loop thread). */
	struct sockaddr_storage raddr;
	socklen_t raddr_len;
	char raddr_str[64];
	int cfd; /* connecting */
	uint32_t backoff_ms;
	int ever_connected;
	int fail_logged;

	/* Big send buffers kept for reuse (see the top comment). */
	pthread_mutex_t fc_lock;
	hakoi_frame_buf_t *fc[FCACHE_SLOTS]; /* the cache holds one reference on each */
	size_t fc_cap[FCACHE_SLOTS];         /* bytes from data on */
	atomic_int fc_count;
	_Atomic uint64_t fc_last_ns; /* last big send */
};

#define now_ns hakoi_now_ns

/* Where a send runs, for what a full queue may do (see the top comment). */
enum { FROM_OTHER = 0, FROM_OWN, FROM_LOOP };

/* Senders queued frames or found a peer dead: the loop thread handles it. */
static void wake(tcp_comm_t *c)
{
	hakoi_loop_post(c->loop, &c->work);
}

/* ---- peers ---- */

static void peer_unref(tcp_peer_t *p)
{
	if (atomic_fetch_sub(&p->refs, 1) != 1) {
		return;
	}
	hakoi_frameq_free(&p->q);
	free(p->rbuf);
	pthread_cond_destroy(&p->room);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

static void set_sockopts(const tcp_comm_t *c, int fd)
{
	const hako_comm_tcp_options_t *o = c->opt;
	int one = 1;
	if (o->no_delay) {
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	}
	if (o->keepalive) {
		setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
	}
	if (o->recv_buffer_size > 0) {
		int v = (int)o->recv_buffer_size;
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v));
	}
	if (o->send_buffer_size > 0) {
		int v = (int)o->send_buffer_size;
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v));
	}
	if (o->linger_enabled) {
		struct linger l = {.l_onoff = 1, .l_linger = (int)o->linger_timeout_sec};
		setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
	}
}

static void peer_io(hakoi_io_t *io, short revents);
static void peer_timer(hakoi_timer_t *t);

/* Add a connected socket as a peer (loop thread). NULL on ENOMEM (fd closed then). */
static tcp_peer_t *peer_add(tcp_comm_t *c, int fd, const struct sockaddr *sa)
{
	tcp_peer_t *p = calloc(1, sizeof(*p));
	if (p == NULL || hakoi_frameq_init(&p->q, c->cfg->send_queue_depth) != 0) {
		free(p);
		close(fd);
		return NULL;
	}
	atomic_init(&p->refs, 1);
	p->fd = fd;
	p->comm = c;
	hakoi_sockaddr_str(sa, p->addr, sizeof(p->addr));
	hakoi_addr_key(sa, p->akey);
	pthread_mutex_init(&p->lock, NULL);
	hakoi_cond_init(&p->room);
	p->rx_ns = now_ns();
	p->since_ns = p->rx_ns;
	p->io = (hakoi_io_t){.fd = fd, .events = POLLIN, .cb = peer_io, .arg = p, .owner = c};
	p->timer = (hakoi_timer_t){.cb = peer_timer, .arg = p, .owner = c};

	pthread_mutex_lock(&c->peers_lock);
	int r = 0;
	if (c->npeers == c->peers_cap) {
		size_t cap = c->peers_cap ? c->peers_cap * 2 : 8;
		tcp_peer_t **n = realloc(c->peers, cap * sizeof(*n));
		if (n == NULL) {
			r = HAKO_ENOMEM;
		} else {
			c->peers = n;
			c->peers_cap = cap;
		}
	}
	if (r == 0 && (r = hakoi_io_add(c->loop, &p->io)) == 0 &&
	    (r = hakoi_timer_add(c->loop, &p->timer)) != 0) {
		hakoi_io_del(c->loop, &p->io);
	}
	if (r != 0) {
		pthread_mutex_unlock(&c->peers_lock);
		close(fd);
		p->fd = -1;
		peer_unref(p);
		return NULL;
	}
	p->index = c->npeers;
	c->peers[c->npeers++] = p;
	pthread_mutex_unlock(&c->peers_lock);
	atomic_fetch_add_explicit(&c->ctx.ctr->peers, 1, memory_order_relaxed);
	return p;
}

/* Close the socket and free what is queued (counted as dropped). abortive: do not linger. */
static void peer_shut(tcp_comm_t *c, tcp_peer_t *p, int abortive)
{
	pthread_mutex_lock(&p->lock);
	if (!p->closed) {
		p->closed = 1;
		if (abortive) {
			struct linger l = {.l_onoff = 0, .l_linger = 0};
			setsockopt(p->fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
		}
		close(p->fd);
		p->fd = -1;
		if (p->q.count > 0) {
			hakoi_count(&c->ctx.ctr->send_dropped, p->q.count);
		}
		while (p->q.count > 0) {
			hakoi_frameq_pop(&p->q);
		}
		pthread_cond_broadcast(&p->room);
	}
	pthread_mutex_unlock(&p->lock);
}

/* What a receive buffer counts under max_buffered_bytes: beyond the RX_CHUNK every peer reads
 * into (bounded by max_clients), so a peer with small frames is served whatever big frames
 * the others hold. */
static size_t rx_held(size_t cap)
{
	return cap > RX_CHUNK ? cap - RX_CHUNK : 0;
}

/* Take p off the loop and the array, close it and drop the array's reference. */
static void peer_remove(tcp_comm_t *c, tcp_peer_t *p, int abortive)
{
	/* No-ops once the comm left the loop (stop removes them on the loop thread first). */
	hakoi_io_del(c->loop, &p->io);
	hakoi_timer_del(c->loop, &p->timer);
	pthread_mutex_lock(&c->peers_lock);
	tcp_peer_t *last = c->peers[--c->npeers];
	c->peers[p->index] = last;
	last->index = p->index;
	pthread_mutex_unlock(&c->peers_lock);
	atomic_fetch_sub_explicit(&c->ctx.ctr->peers, 1, memory_order_relaxed);
	/* The receive side is the loop thread's (or stop's, after it): give the room back now, a
	 * sender may still hold a reference on p. */
	c->rx_total -= rx_held(p->rcap);
	free(p->rbuf);
	p->rbuf = NULL;
	p->rcap = 0;
	p->rlen = 0;
	peer_shut(c, p, abortive);
	peer_unref(p);
}

/* Body bytes of an encoded frame (for bytes_out). */
static size_t frame_body_len(hako_frame_version_t v, const hakoi_frame_buf_t *f)
{
	if (v == HAKO_FRAME_V2) {
		return f->len - HAKO_FRAME_V2_HEADER_SIZE;
	}
	const uint8_t *d = f->data;
	uint32_t name_len =
	    (uint32_t)d[4] | (uint32_t)d[5] << 8 | (uint32_t)d[6] << 16 | (uint32_t)d[7] << 24;
	return f->len - 12u - name_len;
}

/* Write the queue in batches. Lock held on entry and exit (released during the syscall). A
 * queue another thread is writing is left to it. */
static void flush_locked(tcp_comm_t *c, tcp_peer_t *p)
{
	while (p->q.count > 0 && !p->closed && !p->dead && !p->writing) {
		struct iovec iov[IOV_BATCH];
		uint32_t n = p->q.count < IOV_BATCH ? p->q.count : IOV_BATCH;
		size_t total = 0;
		for (uint32_t i = 0; i < n; i++) {
			hakoi_frame_buf_t *f = p->q.items[(p->q.head + i) % p->q.cap];
			size_t off = i == 0 ? p->q.off : 0;
			iov[i].iov_base = f->data + off;
			iov[i].iov_len = f->len - off;
			total += f->len - off;
		}
		struct msghdr msg = {.msg_iov = iov, .msg_iovlen = n};
		int fd = p->fd;
		p->writing = 1;
		pthread_mutex_unlock(&p->lock);
		ssize_t w = sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
		int e = errno;
		pthread_mutex_lock(&p->lock);
		p->writing = 0;
		if (w < 0) {
			if (e == EINTR) {
				continue;
			}
			if (e == EAGAIN || e == EWOULDBLOCK) {
				p->want_out = 1;
			} else {
				p->dead = DEAD_BROKEN;
				p->dead_errno = e;
			}
			break;
		}
		size_t left = (size_t)w;
		uint64_t frames = 0;
		uint64_t bytes = 0;
		while (left > 0) {
			hakoi_frame_buf_t *f = hakoi_frameq_head(&p->q);
			size_t rem = f->len - p->q.off;
			if (left < rem) {
				p->q.off += left;
				break;
			}
			left -= rem;
			bytes += frame_body_len(c->ver, f);
			frames++;
			hakoi_frameq_pop(&p->q);
		}
		if (frames > 0) {
			hakoi_count(&c->ctx.ctr->frames_out, frames);
			hakoi_count(&c->ctx.ctr->bytes_out, bytes);
		}
		if (p->waiters > 0) {
			pthread_cond_broadcast(&p->room);
		}
		if ((size_t)w < total) {
			p->want_out = 1;
			break;
		}
	}
	if (p->waiters > 0) {
		pthread_cond_broadcast(&p->room); /* writing ended */
	}
	if (p->q.count == 0) {
		p->want_out = 0;
	}
}

/* ---- big send buffers ---- */

/* Encode a frame, into a cached buffer when it is big (see the top comment). *cap = the
 * buffer's capacity for frame_release (0: not cacheable). NULL with *r on failure. */
static hakoi_frame_buf_t *frame_get(tcp_comm_t *c, const hako_pdu_key_t *key, const void *data,
                                    size_t len, size_t *cap, int *r)
{
	size_t n = hako_frame_size(c->ver, key->robot, (uint32_t)len);
	*cap = 0;
	if (n < FCACHE_MIN || n > FCACHE_MAX) {
		return hakoi_frame_buf_new(c->ver, key, data, len, 0, r);
	}
	hakoi_frame_buf_t *f = NULL;
	size_t fcap = 0;
	if (atomic_load_explicit(&c->fc_count, memory_order_relaxed) > 0) {
		pthread_mutex_lock(&c->fc_lock);
		for (int i = 0; i < FCACHE_SLOTS; i++) {
			/* refs 1: only the cache holds it, the queues that had it are done. */
			if (c->fc[i] != NULL && c->fc_cap[i] >= n &&
			    __atomic_load_n(&c->fc[i]->refs, __ATOMIC_ACQUIRE) == 1) {
				f = c->fc[i];
				fcap = c->fc_cap[i];
				c->fc[i] = NULL;
				atomic_fetch_sub_explicit(&c->fc_count, 1, memory_order_relaxed);
				break;
			}
		}
		pthread_mutex_unlock(&c->fc_lock);
	}
	if (f == NULL) {
		fcap = (n + RX_ROUND - 1) / RX_ROUND * RX_ROUND;
		f = malloc(sizeof(*f) + fcap); /* the layout of hakoi_frame_buf_new, headroom 0 */
		if (f == NULL) {
			*r = HAKO_ENOMEM;
			return NULL;
		}
		f->refs = 1;
		f->data = f->storage;
	}
	hako_frame_t fr = {
	    .channel_id = key->channel_id,
	    .request_type = HAKO_FRAME_PDU_DATA,
	    .body = data,
	    .body_len = (uint32_t)len,
	};
	memcpy(fr.robot, key->robot, strlen(key->robot) + 1);
	size_t out = 0;
	int e = hako_frame_encode(c->ver, &fr, f->data, fcap, &out);
	if (e != 0) {
		free(f);
		*r = e;
		return NULL;
	}
	f->len = out;
	*cap = fcap;
	atomic_store_explicit(&c->fc_last_ns, now_ns(), memory_order_relaxed);
	return f;
}

/* The sender's reference on f: into the cache (an empty slot, or one whose buffer is free and
 * smaller), else dropped. */
static void frame_release(tcp_comm_t *c, hakoi_frame_buf_t *f, size_t cap)
{
	if (cap == 0) {
		hakoi_frame_buf_unref(f);
		return;
	}
	hakoi_frame_buf_t *old = f;
	pthread_mutex_lock(&c->fc_lock);
	int slot = -1;
	for (int i = 0; i < FCACHE_SLOTS; i++) {
		if (c->fc[i] == NULL) {
			slot = i;
			break;
		}
		if (slot < 0 && c->fc_cap[i] < cap &&
		    __atomic_load_n(&c->fc[i]->refs, __ATOMIC_ACQUIRE) == 1) {
			slot = i;
		}
	}
	int first = 0;
	if (slot >= 0) {
		old = c->fc[slot];
		if (old == NULL) {
			first =
			    atomic_fetch_add_explicit(&c->fc_count, 1, memory_order_relaxed) == 0;
		}
		c->fc[slot] = f;
		c->fc_cap[slot] = cap;
	}
	pthread_mutex_unlock(&c->fc_lock);
	hakoi_frame_buf_unref(old);
	if (first) {
		wake(c); /* the loop times the cache's release (tcp_work) */
	}
}

/* Free the cached buffers (idle, or close). */
static void frame_cache_clear(tcp_comm_t *c)
{
	hakoi_frame_buf_t *drop[FCACHE_SLOTS];
	pthread_mutex_lock(&c->fc_lock);
	for (int i = 0; i < FCACHE_SLOTS; i++) {
		drop[i] = c->fc[i];
		c->fc[i] = NULL;
	}
	atomic_store_explicit(&c->fc_count, 0, memory_order_relaxed);
	pthread_mutex_unlock(&c->fc_lock);
	for (int i = 0; i < FCACHE_SLOTS; i++) {
		hakoi_frame_buf_unref(drop[i]);
	}
}

/* ---- send ---- */

static int peer_gone(const void *arg)
{
	const tcp_peer_t *p = arg;
	return p->closed || p->dead;
}

static void declare_stuck(tcp_comm_t *c, tcp_peer_t *p)
{
	if (!peer_gone(p)) {
		HAKO_WARN("endpoint '%s': peer %s: send queue full (%u frames) for %u ms; "
		          "connection closed",
		          c->ctx.ep_name, p->addr, (unsigned)p->q.cap,
		          (unsigned)c->opt->write_timeout_ms);
		p->dead = DEAD_STUCK;
	}
}

/* A blocking send on the loop thread to a peer of another comm of the loop: the loop cannot
 * write the queue while this thread waits, so write it here as the socket takes it, within
 * write_timeout_ms. Lock held (released while polling). 1 = room. */
static int wait_socket_room_locked(tcp_comm_t *c, tcp_peer_t *p)
{
	uint64_t deadline = now_ns() + (uint64_t)c->opt->write_timeout_ms * 1000000u;
	for (;;) {
		flush_locked(c, p);
		if (peer_gone(p)) {
			return 0;
		}
		if (p->q.count < p->q.cap) {
			return 1;
		}
		uint64_t now = now_ns();
		if (now >= deadline) {
			declare_stuck(c, p);
			return 0;
		}
		struct pollfd pfd = {.fd = p->fd, .events = POLLOUT};
		int ms = (int)((deadline - now + 999999u) / 1000000u);
		pthread_mutex_unlock(&p->lock);
		poll(&pfd, 1, ms);
		pthread_mutex_lock(&p->lock);
	}
}

/* The queue is full (lock held): make room per the options and where the send runs (FROM_*).
 * 1 = room now (push), 0 = the frame is dropped (counted by the caller). */
static int wait_room_locked(tcp_comm_t *c, tcp_peer_t *p, int from)
{
	const hako_comm_tcp_options_t *o = c->opt;
	if (from == FROM_OWN) {
		/* A callback of this comm cannot wait for the loop it runs on: write now, then
		 * drop the oldest. */
		flush_locked(c, p);
		return !p->closed && !p->dead;
	}
	if (!o->blocking) {
		/* Dropping the oldest must not race with a write in progress. */
		while (p->writing && !p->closed && !p->dead) {
			p->waiters++;
			pthread_cond_wait(&p->room, &p->lock);
			p->waiters--;
		}
		return !p->closed && !p->dead;
	}
	if (from == FROM_LOOP) {
		return wait_socket_room_locked(c, p);
	}
	if (hakoi_frameq_wait_room(&p->q, &p->lock, &p->room, &p->waiters, o->write_timeout_ms,
	                           peer_gone, p)) {
		return 1;
	}
	declare_stuck(c, p);
	return 0;
}

/* One PDU being sent. The direct write (latency path) sends the header and the caller's bytes
 * with one sendmsg, without encoding the frame into a buffer; the frame buffer is made only
 * when something has to be queued (once for all peers). */
typedef struct tx_pdu {
	const hako_pdu_key_t *key;
	const void *data;
	size_t len;
	uint8_t hdr[HAKO_FRAME_V2_HEADER_SIZE]; /* v1's is shorter */
	size_t hlen;
	hakoi_frame_buf_t *f; /* NULL until needed */
	size_t fcap;
} tx_pdu_t;

static void put_u32_add(uint8_t *p, uint32_t add)
{
	uint32_t v =
	    (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
	v += add;
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

/* The frame header of t (made by the first direct write): encoded with an empty body, then the
 * length fields (frame.h's layout) grown by the body length. 0 or the error of hako_frame_encode.
 */
static int tx_header(tcp_comm_t *c, tx_pdu_t *t)
{
	hako_frame_t fr = {
	    .channel_id = t->key->channel_id,
	    .request_type = HAKO_FRAME_PDU_DATA,
	};
	memcpy(fr.robot, t->key->robot, strlen(t->key->robot) + 1);
	int e = hako_frame_encode(c->ver, &fr, t->hdr, sizeof(t->hdr), &t->hlen);
	if (e != 0) {
		return e;
	}
	if (c->ver == HAKO_FRAME_V2) {
		put_u32_add(t->hdr + 144, (uint32_t)t->len); /* total_len */
		put_u32_add(t->hdr + 148, (uint32_t)t->len); /* body_len */
	} else {
		put_u32_add(t->hdr, (uint32_t)t->len); /* header_len */
	}
	return 0;
}

/* The encoded frame of t (made on first use). NULL on ENOMEM. */
static hakoi_frame_buf_t *tx_frame(tcp_comm_t *c, tx_pdu_t *t)
{
	if (t->f == NULL) {
		int r = 0;
		t->f = frame_get(c, t->key, t->data, t->len, &t->fcap, &r);
	}
	return t->f;
}

/* Hand t to one peer. 1 = written or queued, 0 = dropped (counted here). */
static int send_peer(tcp_comm_t *c, tcp_peer_t *p, tx_pdu_t *t, uint64_t now, int from)
{
	int need_wake = 0;
	int handed = 0;
	hakoi_frame_buf_t *f = NULL;
	pthread_mutex_lock(&p->lock);
	if (p->closed || p->dead) {
		goto out;
	}
	uint64_t last = p->last_send_ns;
	if (now > last) {
		p->last_send_ns = now;
	}
	if (p->q.count == 0 && !p->writing && now >= last + BATCH_GAP_NS &&
	    (t->hlen > 0 || tx_header(c, t) == 0)) {
		struct iovec iov[2] = {
		    {.iov_base = t->hdr, .iov_len = t->hlen},
		    {.iov_base = (void *)t->data, .iov_len = t->len},
		};
		struct msghdr msg = {.msg_iov = iov, .msg_iovlen = t->len > 0 ? 2 : 1};
		size_t total = t->hlen + t->len;
		ssize_t w = sendmsg(p->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w == (ssize_t)total) {
			pthread_mutex_unlock(&p->lock);
			hakoi_count(&c->ctx.ctr->frames_out, 1);
			hakoi_count(&c->ctx.ctr->bytes_out, t->len);
			return 1;
		}
		if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
			p->dead = DEAD_BROKEN;
			p->dead_errno = errno;
			need_wake = 1;
			goto out;
		}
		f = tx_frame(c, t);
		if (f == NULL) {
			if (w > 0) { /* part of the frame is on the wire: the stream is broken */
				p->dead = DEAD_BROKEN;
				p->dead_errno = ENOMEM;
				need_wake = 1;
			}
			goto out;
		}
		hakoi_frameq_push(&p->q, f);
		p->q.off = w > 0 ? (size_t)w : 0;
		handed = 1;
		need_wake = 1;
		goto out;
	}
	if (p->q.count >= p->q.cap && !wait_room_locked(c, p, from)) {
		need_wake = p->dead != DEAD_NONE;
		goto out;
	}
	f = tx_frame(c, t);
	if (f == NULL) {
		goto out;
	}
	int r = hakoi_frameq_push(&p->q, f);
	if (r == 1) {
		hakoi_count(&c->ctx.ctr->send_dropped, 1); /* the oldest */
	}
	handed = r >= 0; /* -1: depth 1 with its frame partly written: this one is dropped */
	need_wake = 1;
out:
	pthread_mutex_unlock(&p->lock);
	if (!handed) {
		hakoi_count(&c->ctx.ctr->send_dropped, 1);
	}
	if (need_wake) {
		wake(c);
	}
	return handed;
}

static int tcp_send(void *impl, const hako_pdu_key_t *key, const void *data, size_t len)
{
	tcp_comm_t *c = impl;
	if (len > c->cfg->max_body_bytes) {
		return HAKO_ETOOBIG;
	}
	tcp_peer_t *stack[16];
	tcp_peer_t **snap = stack;
	pthread_mutex_lock(&c->peers_lock);
	size_t n = c->npeers;
	if (n > sizeof(stack) / sizeof(stack[0])) {
		snap = malloc(n * sizeof(*snap));
		if (snap == NULL) {
			pthread_mutex_unlock(&c->peers_lock);
			return HAKO_ENOMEM;
		}
	}
	for (size_t i = 0; i < n; i++) {
		snap[i] = c->peers[i];
		atomic_fetch_add_explicit(&snap[i]->refs, 1, memory_order_relaxed);
	}
	pthread_mutex_unlock(&c->peers_lock);
	if (n == 0) {
		hakoi_count(&c->ctx.ctr->send_dropped, 1);
		return HAKO_ENOTCONN;
	}
	tx_pdu_t t = {.key = key, .data = data, .len = len};
	int r = 0;
	if (hako_frame_size(c->ver, key->robot, (uint32_t)len) == 0) {
		r = strlen(key->robot) >= HAKO_FRAME_ROBOT_MAX ? HAKO_ENAMETOOLONG : HAKO_ETOOBIG;
	} else {
		uint64_t now = now_ns();
		int from = hakoi_loop_current() == c       ? FROM_OWN
		           : hakoi_loop_on_thread(c->loop) ? FROM_LOOP
		                                           : FROM_OTHER;
		size_t handed = 0;
		for (size_t i = 0; i < n; i++) {
			handed += (size_t)send_peer(c, snap[i], &t, now, from);
		}
		if (t.f != NULL) {
			frame_release(c, t.f, t.fcap);
		}
		r = handed > 0 ? 0 : HAKO_ENOTCONN;
	}
	for (size_t i = 0; i < n; i++) {
		peer_unref(snap[i]);
	}
	if (snap != stack) {
		free(snap);
	}
	return r;
}

/* ---- receive (loop thread) ---- */

enum { RX_OK = 0, RX_EOF, RX_LOST, RX_REJECT };

static void handle_frame(tcp_comm_t *c, tcp_peer_t *p, const hako_frame_t *fr)
{
	if (p->frame_ns == 0) {
		/* A peer speaks the protocol: the next limit that strikes is said again. */
		c->quiet_logged = 0;
		c->evict_logged = 0;
	}
	p->frame_ns = p->rx_ns;
	if (fr->request_type != HAKO_FRAME_PDU_DATA) {
		hakoi_count(&c->ctx.ctr->recv_ignored, 1);
		HAKO_DEBUG("endpoint '%s': peer %s: ignored a frame of type 0x%08x (not PDU data)",
		           c->ctx.ep_name, p->addr, (unsigned)fr->request_type);
		return;
	}
	if (c->cfg->direction == HAKO_COMM_OUT) {
		hakoi_count(&c->ctx.ctr->recv_ignored, 1);
		return;
	}
	hako_pdu_key_t key;
	memset(&key, 0, sizeof(key));
	memcpy(key.robot, fr->robot, sizeof(key.robot));
	key.robot[sizeof(key.robot) - 1] = '\0';
	key.channel_id = fr->channel_id;
	c->ctx.deliver(c->ctx.ep, &key, fr->body, fr->body_len);
}

static size_t rx_round(size_t n)
{
	return (n + RX_ROUND - 1) / RX_ROUND * RX_ROUND;
}

/* Release the buffers of the peers but p that hold no partial frame (they allocate RX_CHUNK
 * again on their next bytes): the room under max_buffered_bytes goes to frames in progress. */
static void rx_reclaim(tcp_comm_t *c, const tcp_peer_t *p)
{
	for (size_t i = 0; i < c->npeers; i++) {
		tcp_peer_t *q = c->peers[i];
		if (q != p && q->rcap > RX_CHUNK && q->rlen == 0) {
			c->rx_total -= rx_held(q->rcap);
			free(q->rbuf);
			q->rbuf = NULL;
			q->rcap = 0;
			q->rx_small = 0;
		}
	}
}

/* p's receive buffer := want bytes (keeping its rlen bytes), within max_buffered_bytes over all
 * peers. RX_OK, RX_REJECT (no room: a peer that wants more than the endpoint gives) or RX_LOST
 * (out of memory), with why. */
static int rx_resize(tcp_comm_t *c, tcp_peer_t *p, size_t want, char *why, size_t why_len)
{
	if (rx_held(want) > rx_held(p->rcap)) {
		size_t more = rx_held(want) - rx_held(p->rcap);
		size_t cap = c->cfg->max_buffered_bytes;
		if (c->rx_total + more > cap) {
			rx_reclaim(c, p);
		}
		if (c->rx_total + more > cap) {
			snprintf(why, why_len,
			         "its frame needs a buffer of %zu bytes, more than the other "
			         "peers' frames leave of max_buffered_bytes (%zu of %zu)",
			         want, cap - c->rx_total, cap);
			return RX_REJECT;
		}
	}
	uint8_t *nb = realloc(p->rbuf, want);
	if (nb == NULL) {
		snprintf(why, why_len, "out of memory for a receive buffer of %zu bytes", want);
		return RX_LOST;
	}
	c->rx_total = c->rx_total - rx_held(p->rcap) + rx_held(want);
	p->rbuf = nb;
	p->rcap = want;
	return RX_OK;
}

/* Frame and deliver what the buffer holds; keep the partial rest. RX_REJECT with why. */
static int rx_parse(tcp_comm_t *c, tcp_peer_t *p, char *why, size_t why_len)
{
	size_t pos = 0;
	size_t needed = 0;
	int rc = RX_OK;
	hako_error_t e;
	for (;;) {
		size_t avail = p->rlen - pos;
		needed = 0;
		if (hako_frame_needed(c->ver, p->rbuf + pos, avail, c->cfg->max_body_bytes, &needed,
		                      &e) != 0) {
			snprintf(why, why_len, "%s", e.message);
			rc = RX_REJECT;
			break;
		}
		if (needed == 0 || avail < needed) {
			break;
		}
		hako_frame_t fr;
		if (hako_frame_decode(c->ver, p->rbuf + pos, needed, c->cfg->max_body_bytes, &fr,
		                      &e) != 0) {
			snprintf(why, why_len, "%s", e.message);
			rc = RX_REJECT;
			break;
		}
		handle_frame(c, p, &fr);
		pos += needed;
		p->rx_small = needed <= RX_CHUNK ? p->rx_small + (p->rx_small < UINT32_MAX) : 0;
	}
	if (rc != RX_OK) {
		return rc;
	}
	if (pos > 0) {
		memmove(p->rbuf, p->rbuf + pos, p->rlen - pos);
		p->rlen -= pos;
	}
	p->rneed = needed;
	/* The frame deadline runs from the first bytes of a frame: one that began in this read if
	 * frames ended in it (rx_ns is this read's time). */
	if (p->rlen == 0) {
		p->fstart_ns = 0;
	} else if (pos > 0 || p->fstart_ns == 0) {
		p->fstart_ns = p->rx_ns;
	}
	/* Grow when full, by doubling up to the frame the header announced (bounded by
	 * max_body_bytes): memory follows the bytes that arrived. Shrink per the top comment. */
	size_t want = p->rcap;
	if (needed > p->rcap) {
		if (p->rlen == p->rcap) {
			want = rx_round(needed < p->rcap * 2 ? needed : p->rcap * 2);
		}
	} else if (p->rcap > RX_CHUNK &&
	           (p->rcap > RX_KEEP_MAX || p->rx_small >= RX_SHRINK_FRAMES)) {
		want = needed > RX_CHUNK ? rx_round(needed) : RX_CHUNK;
	}
	if (want > p->rcap) {
		return rx_resize(c, p, want, why, why_len);
	}
	if (want < p->rcap) {
		rx_resize(c, p, want, why, why_len); /* a failed shrink keeps the bigger buffer */
		why[0] = '\0';
	}
	return RX_OK;
}

/* The peer has been quiet for RX_IDLE_MS with nothing partial: give its big buffer back. */
static void rx_idle_shrink(tcp_comm_t *c, tcp_peer_t *p)
{
	char why[8];
	if (p->rcap <= RX_CHUNK || p->rlen > RX_CHUNK) {
		return;
	}
	rx_resize(c, p, RX_CHUNK, why, sizeof(why));
}

static int rx_peer(tcp_comm_t *c, tcp_peer_t *p, char *why, size_t why_len)
{
	if (p->rbuf == NULL) {
		int rc = rx_resize(c, p, RX_CHUNK, why, why_len);
		if (rc != RX_OK) {
			return rc;
		}
	}
	for (int i = 0; i < 8; i++) {
		size_t space = p->rcap - p->rlen;
		if (p->rneed > RX_CHUNK && p->rneed > p->rlen && p->rneed - p->rlen < space) {
			/* A big frame: read up to its end only, or the start of the next one would
			 * be moved down (up to a kept buffer's size) after it. */
			space = p->rneed - p->rlen;
		}
		ssize_t r = recv(p->fd, p->rbuf + p->rlen, space, MSG_DONTWAIT);
		if (r < 0) {
			if (errno == EINTR) {
				continue;
			}
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				return RX_OK;
			}
			snprintf(why, why_len, "%s", strerror(errno));
			return RX_LOST;
		}
		if (r == 0) {
			if (p->rlen > 0) {
				snprintf(why, why_len,
				         "end of stream in the middle of a frame (%zu bytes of it)",
				         p->rlen);
				return RX_REJECT;
			}
			return RX_EOF;
		}
		p->rlen += (size_t)r;
		p->rx_ns = now_ns();
		int rc = rx_parse(c, p, why, why_len);
		if (rc != RX_OK) {
			return rc;
		}
		if ((size_t)r < space) {
			return RX_OK; /* drained: the next read would say EAGAIN */
		}
	}
	return RX_OK;
}

/* ---- client connection (loop thread) ---- */

static void client_schedule_retry(tcp_comm_t *c, uint64_t now)
{
	hakoi_timer_set(c->loop, &c->ctimer, now + (uint64_t)c->backoff_ms * 1000000u);
	c->backoff_ms = c->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : c->backoff_ms * 2;
}

/* The connecting socket off the loop (closed unless handed on). */
static void client_unwatch(tcp_comm_t *c, int close_it)
{
	hakoi_io_del(c->loop, &c->lio);
	hakoi_timer_cancel(c->loop, &c->ctimer);
	if (close_it && c->cfd >= 0) {
		close(c->cfd);
	}
	c->cfd = -1;
}

static void client_fail(tcp_comm_t *c, int e, uint64_t now)
{
	client_unwatch(c, 1);
	if (!c->fail_logged) {
		HAKO_INFO("endpoint '%s': cannot connect to %s: %s; retrying", c->ctx.ep_name,
		          c->raddr_str, strerror(e));
		c->fail_logged = 1;
	} else {
		HAKO_DEBUG("endpoint '%s': connect to %s: %s", c->ctx.ep_name, c->raddr_str,
		           strerror(e));
	}
	client_schedule_retry(c, now);
}

static void client_connected(tcp_comm_t *c)
{
	int fd = c->cfd;
	client_unwatch(c, 0);
	if (peer_add(c, fd, (const struct sockaddr *)&c->raddr) == NULL) {
		client_fail(c, ENOMEM, now_ns());
		return;
	}
	hakoi_count(&c->ctx.ctr->connects, 1);
	if (c->ever_connected) {
		hakoi_count(&c->ctx.ctr->reconnects, 1);
	}
	c->ever_connected = 1;
	c->fail_logged = 0;
	c->backoff_ms = BACKOFF_MIN_MS;
	HAKO_INFO("endpoint '%s': connected to %s", c->ctx.ep_name, c->raddr_str);
}

static void client_connect_io(hakoi_io_t *io, short revents)
{
	(void)revents;
	tcp_comm_t *c = io->arg;
	int e = 0;
	socklen_t l = sizeof(e);
	if (getsockopt(c->cfd, SOL_SOCKET, SO_ERROR, &e, &l) != 0) {
		e = errno;
	}
	if (e != 0) {
		client_fail(c, e, now_ns());
		return;
	}
	client_connected(c);
}

static void client_try_connect(tcp_comm_t *c, uint64_t now)
{
	int fd = socket(c->raddr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		client_fail(c, errno, now);
		return;
	}
	set_sockopts(c, fd);
	c->cfd = fd;
	if (connect(fd, (const struct sockaddr *)&c->raddr, c->raddr_len) == 0) {
		client_connected(c);
		return;
	}
	if (errno != EINPROGRESS) {
		client_fail(c, errno, now);
		return;
	}
	c->lio = (hakoi_io_t){
	    .fd = fd, .events = POLLOUT, .cb = client_connect_io, .arg = c, .owner = c};
	if (hakoi_io_add(c->loop, &c->lio) != 0) {
		client_fail(c, ENOMEM, now);
		return;
	}
	uint32_t t = c->opt->connect_timeout_ms ? c->opt->connect_timeout_ms : DEFAULT_CONN_TOUT;
	hakoi_timer_set(c->loop, &c->ctimer, now + (uint64_t)t * 1000000u);
}

/* ---- server accept (loop thread) ---- */

static uint64_t peer_deadline(const tcp_comm_t *c, const tcp_peer_t *p);

/* Close p for one of the limits on idle peers (counted in disconnects). The first of each kind
 * (*said) is a warning, the next ones are debug lines until a peer sends its first frame. */
static void limit_drop(tcp_comm_t *c, tcp_peer_t *p, int *said, const char *why)
{
	if (!*said) {
		HAKO_WARN("endpoint '%s': peer %s: %s; connection closed (more of these at debug "
		          "level)",
		          c->ctx.ep_name, p->addr, why);
		*said = 1;
	} else {
		HAKO_DEBUG("endpoint '%s': peer %s: %s; connection closed", c->ctx.ep_name, p->addr,
		           why);
	}
	hakoi_count(&c->ctx.ctr->disconnects, 1);
	peer_remove(c, p, 1);
}

/* Whether p may give way to a new peer (it is idle: see the top comment), and its place in the
 * order in which idle peers give way: *tier (peers that never sent a frame, those with nothing
 * of one first; then those that did), then *t, the oldest first. */
static int idle_order(const tcp_peer_t *p, uint64_t now, int *tier, uint64_t *t)
{
	if (p->frame_ns == 0) {
		*tier = p->rlen > 0;
		*t = p->since_ns;
		return now - p->since_ns >= MS_NS(EVICT_NEW_MS);
	}
	*tier = 2;
	*t = p->frame_ns;
	return now - p->frame_ns >= MS_NS(EVICT_IDLE_MS);
}

/* Whether a connection from key may come in: 1 with *victim NULL (there is room) or the peer
 * whose place it takes (of its address when that one holds per_addr peers), 0 if it may not. */
static int admit(tcp_comm_t *c, const uint8_t key[16], uint64_t now, tcp_peer_t **victim)
{
	size_t same = 0;
	for (size_t i = 0; i < c->npeers; i++) {
		same += memcmp(c->peers[i]->akey, key, 16) == 0;
	}
	int addr_full = same >= c->per_addr;
	*victim = NULL;
	if (!addr_full && c->npeers < c->cfg->max_clients) {
		return 1;
	}
	int best_tier = 0;
	uint64_t best_t = 0;
	for (size_t i = 0; i < c->npeers; i++) {
		tcp_peer_t *p = c->peers[i];
		int tier;
		uint64_t t;
		if ((addr_full && memcmp(p->akey, key, 16) != 0) ||
		    !idle_order(p, now, &tier, &t)) {
			continue;
		}
		if (*victim == NULL || tier < best_tier || (tier == best_tier && t < best_t)) {
			*victim = p;
			best_tier = tier;
			best_t = t;
		}
	}
	return *victim != NULL;
}

/* A connection refused (accepted and closed at once rather than left in the backlog: a connect
 * that hangs tells its program nothing). */
static void refuse(tcp_comm_t *c, int fd, const char *addr)
{
	close(fd);
	hakoi_count(&c->ctx.ctr->rejected, 1);
	if (!c->full_logged) {
		HAKO_WARN("endpoint '%s': peer %s closed at once: %zu peers connected (max_clients "
		          "%u, %u per address) and none idle long enough to give way (more of "
		          "these at debug level)",
		          c->ctx.ep_name, addr, c->npeers, (unsigned)c->cfg->max_clients,
		          (unsigned)c->per_addr);
		c->full_logged = 1;
	} else {
		HAKO_DEBUG("endpoint '%s': peer %s closed at once: no place", c->ctx.ep_name, addr);
	}
}

static void server_accept(tcp_comm_t *c)
{
	for (;;) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		int fd = accept4(c->lfd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED) {
				continue;
			}
			if (errno != EAGAIN && errno != EWOULDBLOCK) {
				HAKO_WARN("endpoint '%s': accept: %s", c->ctx.ep_name,
				          strerror(errno));
				/* Out of fds & co: pause, do not spin on the socket. */
				hakoi_io_events(c->loop, &c->lio, 0);
				hakoi_timer_set(c->loop, &c->ctimer,
				                now_ns() + ACCEPT_PAUSE_MS * 1000000ull);
			}
			return;
		}
		char addr[64];
		uint8_t key[16];
		uint64_t now = now_ns();
		tcp_peer_t *victim = NULL;
		hakoi_sockaddr_str((const struct sockaddr *)&ss, addr, sizeof(addr));
		hakoi_addr_key((const struct sockaddr *)&ss, key);
		if (!admit(c, key, now, &victim)) {
			refuse(c, fd, addr);
			continue;
		}
		if (victim != NULL) {
			char why[160];
			if (victim->frame_ns == 0) {
				snprintf(
				    why, sizeof(why),
				    "no frame in the %llu ms since it connected; its place goes "
				    "to %s",
				    (unsigned long long)((now - victim->since_ns) / 1000000u),
				    addr);
			} else {
				snprintf(why, sizeof(why),
				         "no frame for %llu ms; its place goes to %s",
				         (unsigned long long)((now - victim->frame_ns) / 1000000u),
				         addr);
			}
			limit_drop(c, victim, &c->evict_logged, why);
		} else {
			c->full_logged = 0;
		}
		set_sockopts(c, fd);
		tcp_peer_t *p = peer_add(c, fd, (const struct sockaddr *)&ss);
		if (p == NULL) {
			HAKO_WARN("endpoint '%s': out of memory for a new peer", c->ctx.ep_name);
			continue;
		}
		uint64_t d = peer_deadline(c, p);
		if (d != 0) {
			hakoi_timer_set(c->loop, &p->timer, d);
		}
		hakoi_count(&c->ctx.ctr->accepted, 1);
		HAKO_INFO("endpoint '%s': peer %s connected", c->ctx.ep_name, p->addr);
	}
}

static void server_listen_io(hakoi_io_t *io, short revents)
{
	(void)revents;
	server_accept(io->arg);
}

/* The comm's timer: the end of an accept pause (server); a connect's deadline or the next
 * attempt (client). */
static void comm_timer(hakoi_timer_t *t)
{
	tcp_comm_t *c = t->arg;
	uint64_t now = now_ns();
	if (c->server) {
		hakoi_io_events(c->loop, &c->lio, POLLIN);
	} else if (c->cfd >= 0) {
		client_fail(c, ETIMEDOUT, now);
	} else if (c->npeers == 0) {
		client_try_connect(c, now);
	}
}

/* ---- serving the peers (loop thread) ---- */

static void drop_peer(tcp_comm_t *c, tcp_peer_t *p, int kind, const char *why)
{
	const char *name = c->ctx.ep_name;
	if (kind == RX_REJECT) {
		hakoi_count(&c->ctx.ctr->rejected, 1);
		HAKO_WARN("endpoint '%s': peer %s: %s; connection closed", name, p->addr, why);
	} else {
		hakoi_count(&c->ctx.ctr->disconnects, 1);
		if (!c->server) {
			HAKO_WARN("endpoint '%s': connection to %s lost: %s", name, c->raddr_str,
			          kind == RX_EOF ? "closed by the server"
			          : why != NULL  ? why
			                         : "send queue stuck");
		} else if (kind == RX_EOF) {
			HAKO_INFO("endpoint '%s': peer %s disconnected", name, p->addr);
		} else if (why != NULL) {
			HAKO_WARN("endpoint '%s': peer %s: %s; connection closed", name, p->addr,
			          why);
		}
	}
	peer_remove(c, p, kind != RX_EOF);
	if (!c->server) {
		client_schedule_retry(c, now_ns());
	}
}

/* When p must have sent its first frame (0: it need not, or did): see the top comment. */
static uint64_t first_deadline(const tcp_comm_t *c, const tcp_peer_t *p)
{
	if (!c->server || c->cfg->direction == HAKO_COMM_OUT || p->frame_ns != 0 || p->listener ||
	    (p->rlen > 0 && c->cfg->frame_timeout_ms > 0)) {
		return 0;
	}
	return p->since_ns + MS_NS(FIRST_FRAME_MS);
}

/* The next time p's timer has something to check (0: none): its first frame's or partial
 * frame's deadlines, or the release of an idle big buffer. */
static uint64_t peer_deadline(const tcp_comm_t *c, const tcp_peer_t *p)
{
	const uint64_t rto_ns = (uint64_t)c->opt->read_timeout_ms * 1000000u;
	const uint64_t fto_ns = (uint64_t)c->cfg->frame_timeout_ms * 1000000u;
	uint64_t d = 0;
	if (p->rlen > 0) {
		if (rto_ns > 0) {
			d = p->rx_ns + rto_ns;
		}
		if (fto_ns > 0 && (d == 0 || p->fstart_ns + fto_ns < d)) {
			d = p->fstart_ns + fto_ns;
		}
	} else if (p->rcap > RX_CHUNK) {
		d = p->rx_ns + RX_IDLE_NS;
	}
	uint64_t first = first_deadline(c, p);
	if (first != 0 && (d == 0 || first < d)) {
		d = first;
	}
	return d;
}

/* Serve p: read what revents says, write its queue, check that it is alive and its deadlines,
 * then poll and time it for what is left. A peer that fails is dropped (and may be freed). */
static void peer_serve(tcp_comm_t *c, tcp_peer_t *p, short rev)
{
	const uint64_t rto_ns = (uint64_t)c->opt->read_timeout_ms * 1000000u;
	const uint64_t fto_ns = (uint64_t)c->cfg->frame_timeout_ms * 1000000u;
	char why[sizeof(((hako_error_t *)0)->message)];
	int kind = RX_OK;
	short ev = POLLIN;
	why[0] = '\0';
	if (rev & (POLLIN | POLLERR | POLLHUP)) {
		kind = rx_peer(c, p, why, sizeof(why));
	}
	if (kind == RX_OK) {
		pthread_mutex_lock(&p->lock);
		if (p->q.count > 0 && !p->dead && (!p->want_out || (rev & (POLLOUT | POLLERR)))) {
			p->want_out = 0;
			flush_locked(c, p);
		}
		if (p->dead == DEAD_BROKEN) {
			kind = RX_LOST;
			snprintf(why, sizeof(why), "%s", strerror(p->dead_errno));
		} else if (p->dead == DEAD_STUCK) {
			kind = RX_LOST;
		}
		if (p->want_out) {
			ev |= POLLOUT;
		}
		pthread_mutex_unlock(&p->lock);
	}
	uint64_t now = now_ns();
	if (kind == RX_OK && rto_ns > 0 && p->rlen > 0 && now >= p->rx_ns + rto_ns) {
		kind = RX_LOST;
		snprintf(why, sizeof(why),
		         "no complete frame for %u ms (%zu bytes of one received)",
		         (unsigned)c->opt->read_timeout_ms, p->rlen);
	}
	if (kind == RX_OK && fto_ns > 0 && p->rlen > 0 && now >= p->fstart_ns + fto_ns) {
		kind = RX_LOST;
		snprintf(why, sizeof(why),
		         "a frame not whole %u ms after its first byte "
		         "(frame_timeout_ms; %zu bytes of it received)",
		         (unsigned)c->cfg->frame_timeout_ms, p->rlen);
	}
	if (kind != RX_OK) {
		drop_peer(c, p, kind, why[0] != '\0' ? why : NULL);
		return;
	}
	uint64_t first = first_deadline(c, p);
	if (first != 0 && now >= first && p->rlen == 0 && c->npeers * 2 < c->cfg->max_clients) {
		/* Nothing at all (a client that only listens, as to an inout server): kept while
		 * the server has room; an idle peer gives way to a new connection anyway. */
		p->listener = 1;
		first = 0;
	}
	if (first != 0 && now >= first) {
		snprintf(why, sizeof(why),
		         "no whole frame within %u ms of connecting (%zu bytes of one received)",
		         FIRST_FRAME_MS, p->rlen);
		limit_drop(c, p, &c->quiet_logged, why);
		return;
	}
	if (p->rcap > RX_CHUNK && p->rlen == 0 && now >= p->rx_ns + RX_IDLE_NS) {
		rx_idle_shrink(c, p);
	}
	if (ev != p->io.events) {
		hakoi_io_events(c->loop, &p->io, ev);
	}
	/* Lazily: a timer that fires early finds nothing due and is set again from here. */
	uint64_t d = peer_deadline(c, p);
	if (d != 0 && (!hakoi_timer_armed(&p->timer) || d < p->timer.when)) {
		hakoi_timer_set(c->loop, &p->timer, d);
	}
}

static void peer_io(hakoi_io_t *io, short revents)
{
	tcp_peer_t *p = io->arg;
	peer_serve(p->comm, p, revents);
}

static void peer_timer(hakoi_timer_t *t)
{
	tcp_peer_t *p = t->arg;
	peer_serve(p->comm, p, 0);
}

/* The big send buffers go once no big frame was sent for RX_IDLE_MS. */
static void fcache_timer(hakoi_timer_t *t)
{
	tcp_comm_t *c = t->arg;
	if (atomic_load_explicit(&c->fc_count, memory_order_relaxed) == 0) {
		return;
	}
	uint64_t last = atomic_load_explicit(&c->fc_last_ns, memory_order_relaxed);
	if (now_ns() >= last + RX_IDLE_NS) {
		frame_cache_clear(c);
	} else {
		hakoi_timer_set(c->loop, &c->fctimer, last + RX_IDLE_NS);
	}
}

/* Posted by senders: write the queues they filled, drop the peers they found dead. Last to
 * first: dropping peers[i] moves the last (already served) into i. */
static void tcp_work(hakoi_task_t *t)
{
	tcp_comm_t *c = t->arg;
	if (!c->attached) {
		return; /* posted by a send that raced with stop */
	}
	for (size_t i = c->npeers; i-- > 0;) {
		tcp_peer_t *p = c->peers[i];
		pthread_mutex_lock(&p->lock);
		int todo = p->dead != DEAD_NONE || (p->q.count > 0 && !p->want_out);
		pthread_mutex_unlock(&p->lock);
		if (todo) {
			peer_serve(c, p, 0);
		}
	}
	if (atomic_load_explicit(&c->fc_count, memory_order_relaxed) > 0 &&
	    !hakoi_timer_armed(&c->fctimer)) {
		uint64_t last = atomic_load_explicit(&c->fc_last_ns, memory_order_relaxed);
		hakoi_timer_set(c->loop, &c->fctimer, last + RX_IDLE_NS);
	}
}

/* Start serving (loop thread): the listening socket, or the first connection attempt. */
static void tcp_attach(void *arg)
{
	tcp_comm_t *c = arg;
	c->attached = 1;
	c->full_logged = 0;
	c->quiet_logged = 0;
	c->evict_logged = 0;
	c->ctimer = (hakoi_timer_t){.cb = comm_timer, .arg = c, .owner = c};
	c->fctimer = (hakoi_timer_t){.cb = fcache_timer, .arg = c, .owner = c};
	int r = hakoi_timer_add(c->loop, &c->ctimer);
	if (r == 0) {
		r = hakoi_timer_add(c->loop, &c->fctimer);
	}
	if (r == 0 && c->server) {
		c->lio = (hakoi_io_t){
		    .fd = c->lfd, .events = POLLIN, .cb = server_listen_io, .arg = c, .owner = c};
		r = hakoi_io_add(c->loop, &c->lio);
	}
	c->attach_err = r;
	if (r == 0 && !c->server) {
		c->backoff_ms = BACKOFF_MIN_MS;
		c->fail_logged = 0;
		client_try_connect(c, now_ns());
	}
}

/* Stop serving (loop thread): nothing of the comm stays on the loop; its peers stay open for
 * stop's drain. */
static void tcp_detach(void *arg)
{
	tcp_comm_t *c = arg;
	c->attached = 0;
	hakoi_io_del(c->loop, &c->lio);
	if (!c->server && c->cfd >= 0) {
		close(c->cfd);
		c->cfd = -1;
	}
	hakoi_timer_del(c->loop, &c->ctimer);
	hakoi_timer_del(c->loop, &c->fctimer);
	for (size_t i = 0; i < c->npeers; i++) {
		hakoi_io_del(c->loop, &c->peers[i]->io);
		hakoi_timer_del(c->loop, &c->peers[i]->timer);
	}
	hakoi_loop_cancel(c->loop, &c->work);
}

static int ms_until(uint64_t when, uint64_t now)
{
	if (when <= now) {
		return 0;
	}
	uint64_t ms = (when - now + 999999u) / 1000000u;
	return ms > 60000u ? 60000 : (int)ms;
}

/* Stop (after the comm left the loop): see the top comment. */
static void drain_on_stop(tcp_comm_t *c)
{
	size_t np = c->npeers;
	if (np == 0) {
		return;
	}
	struct pollfd *pfds = calloc(np, sizeof(*pfds));
	tcp_peer_t **who = calloc(np, sizeof(*who));
	if (pfds == NULL || who == NULL) {
		free(pfds);
		free(who);
		return;
	}
	uint32_t ms = c->opt->write_timeout_ms > 0 ? c->opt->write_timeout_ms : STOP_DRAIN_MS;
	uint64_t deadline = now_ns() + (uint64_t)ms * 1000000u;
	char sink[4096];
	for (;;) {
		size_t k = 0;
		for (size_t i = 0; i < np; i++) {
			tcp_peer_t *p = c->peers[i];
			short ev = 0;
			pthread_mutex_lock(&p->lock);
			if (!p->closed && !p->dead && !p->bye) {
				if (p->q.count > 0) {
					flush_locked(c, p);
				}
				if (p->q.count > 0 && !p->dead) {
					ev = POLLOUT;
				} else if (!p->dead) {
					shutdown(p->fd, SHUT_WR);
					p->bye = 1;
				}
			}
			if (p->bye && !p->eof) {
				ev = POLLIN;
			}
			if (ev != 0) {
				pfds[k] = (struct pollfd){.fd = p->fd, .events = ev};
				who[k++] = p;
			}
			pthread_mutex_unlock(&p->lock);
		}
		uint64_t now = now_ns();
		if (k == 0 || now >= deadline) {
			break;
		}
		if (poll(pfds, k, ms_until(deadline, now)) <= 0) {
			continue;
		}
		for (size_t j = 0; j < k; j++) {
			tcp_peer_t *p = who[j];
			if (!p->bye || pfds[j].revents == 0) {
				continue;
			}
			/* Read and drop what the peer still sends, up to its EOF. */
			for (;;) {
				ssize_t r = recv(p->fd, sink, sizeof(sink), MSG_DONTWAIT);
				if (r > 0) {
					continue;
				}
				if (r == 0 ||
				    (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
					p->eof = 1;
				}
				if (r == 0 || errno != EINTR) {
					break;
				}
			}
		}
	}
	free(pfds);
	free(who);
}

/* ---- life cycle ---- */

static int tcp_listen(tcp_comm_t *c, hako_error_t *err)
{
	const hako_comm_config_t *cfg = c->cfg;
	struct sockaddr_storage ss;
	socklen_t sl = 0;
	if (hakoi_sockaddr(&cfg->local, &ss, &sl) != 0) {
		return hako_error_set(err, HAKO_EINVAL, cfg->path, 0, 0,
		                      "tcp server: invalid local address '%s'", cfg->local.address);
	}
	const char *host = cfg->local.address[0] != '\0' ? cfg->local.address : "0.0.0.0";
	int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		return hako_error_set(err, HAKO_EIO, cfg->path, 0, 0,
		                      "cannot create a tcp socket for %s:%u: %s", host,
		                      (unsigned)cfg->local.port, strerror(errno));
	}
	int one = 1;
	if (c->opt->reuse_address) {
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	}
	int backlog = c->opt->backlog > 0 ? (int)c->opt->backlog : SOMAXCONN;
	if (bind(fd, (const struct sockaddr *)&ss, sl) != 0 || listen(fd, backlog) != 0) {
		int e = errno;
		close(fd);
		return hako_error_set(err, e == EADDRINUSE ? HAKO_EBUSY : HAKO_EIO, cfg->path, 0, 0,
		                      "cannot listen on %s:%u: %s", host, (unsigned)cfg->local.port,
		                      strerror(e));
	}
	struct sockaddr_storage bound;
	socklen_t bl = sizeof(bound);
	c->port = cfg->local.port;
	if (getsockname(fd, (struct sockaddr *)&bound, &bl) == 0) {
		c->port = bound.ss_family == AF_INET6
		              ? ntohs(((struct sockaddr_in6 *)&bound)->sin6_port)
		              : ntohs(((struct sockaddr_in *)&bound)->sin_port);
	}
	c->lfd = fd;
	return 0;
}

static void tcp_close(void *impl);

static int tcp_open(const hakoi_comm_ctx_t *ctx, void **impl, hako_error_t *err)
{
	const hako_comm_config_t *cfg = ctx->cfg;
	*impl = NULL;
	if (ctx->loop == NULL) {
		return hako_error_set(err, HAKO_EINVAL, cfg->path, 0, 0, "tcp: no I/O loop");
	}
	tcp_comm_t *c = calloc(1, sizeof(*c));
	if (c == NULL) {
		return hako_error_set(err, HAKO_ENOMEM, cfg->path, 0, 0, "out of memory");
	}
	c->ctx = *ctx;
	c->cfg = cfg;
	c->opt = cfg->opts;
	c->ver = cfg->raw_version == 1 ? HAKO_FRAME_V1 : HAKO_FRAME_V2;
	c->server = cfg->role == HAKO_COMM_SERVER;
	c->per_addr = cfg->max_clients / 2;
	if (c->per_addr < PER_ADDR_MIN) {
		c->per_addr = cfg->max_clients < PER_ADDR_MIN ? cfg->max_clients : PER_ADDR_MIN;
	}
	c->lfd = -1;
	c->cfd = -1;
	c->loop = ctx->loop;
	c->work = (hakoi_task_t){.fn = tcp_work, .arg = c, .owner = c};
	pthread_mutex_init(&c->peers_lock, NULL);
	pthread_mutex_init(&c->fc_lock, NULL);
	int r = 0;
	if (c->server) {
		r = tcp_listen(c, err);
	} else if (hakoi_sockaddr(&cfg->remote, &c->raddr, &c->raddr_len) != 0) {
		r = hako_error_set(err, HAKO_EINVAL, cfg->path, 0, 0,
		                   "tcp client: invalid remote address '%s'", cfg->remote.address);
	} else {
		hakoi_sockaddr_str((const struct sockaddr *)&c->raddr, c->raddr_str,
		                   sizeof(c->raddr_str));
	}
	if (r != 0) {
		tcp_close(c);
		return r;
	}
	*impl = c;
	return 0;
}

static int tcp_start(void *impl, hako_domain_t *dom, hako_error_t *err)
{
	(void)dom;
	tcp_comm_t *c = impl;
	if (c->started) {
		return hako_error_set(err, HAKO_ESTATE, c->cfg->path, 0, 0, "already started");
	}
	if (hakoi_loop_hold(c->loop) != 0) {
		return hako_error_set(err, HAKO_EIO, c->cfg->path, 0, 0,
		                      "cannot start the I/O loop's thread");
	}
	hakoi_loop_call(c->loop, tcp_attach, c);
	if (c->attach_err != 0) {
		hakoi_loop_call(c->loop, tcp_detach, c);
		hakoi_loop_release(c->loop);
		return hako_error_set(err, c->attach_err, c->cfg->path, 0, 0,
		                      "cannot serve the tcp comm: %s",
		                      hako_strerror(c->attach_err));
	}
	c->started = 1;
	return 0;
}

static void tcp_stop(void *impl)
{
	tcp_comm_t *c = impl;
	if (!c->started) {
		return;
	}
	hakoi_loop_call(c->loop, tcp_detach, c);
	drain_on_stop(c);
	while (c->npeers > 0) {
		/* Drained ones end in order; the others (stuck, broken) at once. */
		tcp_peer_t *p = c->peers[c->npeers - 1];
		peer_remove(c, p, !p->bye);
	}
	c->started = 0;
	hakoi_loop_release(c->loop);
}

static void tcp_close(void *impl)
{
	tcp_comm_t *c = impl;
	if (c == NULL) {
		return;
	}
	tcp_stop(c);
	if (c->loop != NULL) {
		/* A send that raced with stop may have posted the task again. */
		hakoi_loop_cancel(c->loop, &c->work);
	}
	if (c->lfd >= 0) {
		close(c->lfd);
	}
	free(c->peers);
	frame_cache_clear(c);
	pthread_mutex_destroy(&c->fc_lock);
	pthread_mutex_destroy(&c->peers_lock);
	free(c);
}

static uint16_t tcp_local_port(void *impl)
{
	tcp_comm_t *c = impl;
	return c->server ? c->port : 0;
}

/* ---- the comm file ---- */

typedef hako_comm_tcp_options_t tcp_opts_t;

static void tcp_defaults(hako_comm_config_t *cc)
{
	/* backlog 0: not in the file, SOMAXCONN (Hakoniwa's 5 made a burst of connects wait for
	 * SYN retransmits, ~1 s each). */
	*(tcp_opts_t *)cc->opts = (tcp_opts_t){.backlog = 0,
	                                       .connect_timeout_ms = 1000,
	                                       .read_timeout_ms = 1000,
	                                       .write_timeout_ms = 1000,
	                                       .blocking = 1,
	                                       .reuse_address = 1,
	                                       .keepalive = 1,
	                                       .no_delay = 1};
}

static int refuse_mux(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)v;
	(void)base;
	(void)f;
	return hakoi_walk_fail(w, "TCP mux (expected_clients) is not supported");
}

static int tcp_check_addrs(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)v;
	(void)f;
	const hako_comm_config_t *cc = base;
	int server = cc->role == HAKO_COMM_SERVER;
	return hakoi_comm_check_addrs(w, cc, server ? "local" : "remote",
	                              server ? "remote" : "local",
	                              server ? "a server" : "a client");
}

static const hakoi_field_t tcp_linger_fields[] = {
    HAKOI_COMM_BOOL("enabled", tcp_opts_t, linger_enabled),
    HAKOI_COMM_INT("timeout_sec", tcp_opts_t, linger_timeout_sec, 0, 65535),
    HAKOI_END,
};

static const hakoi_field_t tcp_option_fields[] = {
    HAKOI_COMM_INT("backlog", tcp_opts_t, backlog, 1, 65535),
    HAKOI_COMM_INT("connect_timeout_ms", tcp_opts_t, connect_timeout_ms, 0, HAKOI_COMM_MAX_MS),
    HAKOI_COMM_INT("read_timeout_ms", tcp_opts_t, read_timeout_ms, 0, HAKOI_COMM_MAX_MS),
    HAKOI_COMM_INT("write_timeout_ms", tcp_opts_t, write_timeout_ms, 0, HAKOI_COMM_MAX_MS),
    HAKOI_COMM_BOOL("blocking", tcp_opts_t, blocking),
    HAKOI_COMM_BOOL("reuse_address", tcp_opts_t, reuse_address),
    HAKOI_COMM_BOOL("keepalive", tcp_opts_t, keepalive),
    HAKOI_COMM_BOOL("no_delay", tcp_opts_t, no_delay),
    HAKOI_COMM_INT("recv_buffer_size", tcp_opts_t, recv_buffer_size, 1, HAKOI_COMM_MAX_BUF),
    HAKOI_COMM_INT("send_buffer_size", tcp_opts_t, send_buffer_size, 1, HAKOI_COMM_MAX_BUF),
    HAKOI_COMM_OBJECT("linger", 0, tcp_linger_fields),
    HAKOI_COMM_NET_OPTIONS,
    HAKOI_COMM_STREAM_OPTIONS,
    HAKOI_END,
};

static const hakoi_field_t tcp_fields[] = {
    HAKOI_COMM_COMMON_FIELDS,
    HAKOI_CUSTOM("expected_clients", 0, refuse_mux, NULL),
    HAKOI_COMM_ROLE_FIELD,
    HAKOI_COMM_ADDR_FIELD("local", local, hakoi_comm_ip_local_fields),
    HAKOI_COMM_ADDR_FIELD("remote", remote, hakoi_comm_ip_remote_fields),
    HAKOI_CHECK(tcp_check_addrs),
    HAKOI_COMM_OBJECT("options", 0, tcp_option_fields),
    HAKOI_END,
};

const hako_comm_tcp_options_t *hako_comm_tcp_options(const hako_comm_config_t *cc)
{
	return cc != NULL && cc->protocol == HAKO_COMM_TCP ? cc->opts : NULL;
}

const hakoi_comm_t hakoi_comm_tcp = {
    .name = "tcp",
    .protocol = HAKO_COMM_TCP,
    .uses_loop = 1,
    .opts_size = sizeof(tcp_opts_t),
    .defaults = tcp_defaults,
    .fields = tcp_fields,
    .open = tcp_open,
    .start = tcp_start,
    .stop = tcp_stop,
    .close = tcp_close,
    .send = tcp_send,
    .local_port = tcp_local_port,
};
