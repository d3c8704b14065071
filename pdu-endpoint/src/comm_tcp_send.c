/* The tcp comm's send side: a PDU encoded once and handed to every peer, written directly or
 * queued, the peers' queues written in batches, and the big send buffers kept for reuse. See
 * comm_tcp.h for the whole.
 *
 * Send path. A PDU is encoded once (a refcounted frame buffer) and handed to every peer:
 *  - latency: when the peer's queue is empty, nobody is writing to it and the previous send that
 *    found it so is older than BATCH_GAP_NS, the sender writes the frame itself (one non-blocking
 *    sendmsg of the header and the caller's bytes: no frame buffer, no copy, when the socket
 *    takes it all); what the socket does not take stays queued for the loop (POLLOUT);
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
 * Send path memory: a frame is one buffer, encoded once for all peers. Frames up to 4 KiB come
 * from the comm's pool: free buffers in four classes (512 B .. 4 KiB), a stack each of at most
 * a queue's worth (send_queue_depth) and POOL_BYTES, taken by the senders and given back by
 * whoever drops the last reference (the loop thread gives a written batch back under one lock).
 * A malloc per frame, freed by another thread, made glibc shrink and grow the heap all along: a
 * page fault per few frames, a third of a streaming sender's time at 64 B. The loop frees the
 * pool once no buffer was taken for a whole period of RX_IDLE_MS. A pooled frame is the
 * thread's last header (tx_header: a stream of one key encodes it once) and the body, copied.
 * Other frames are malloc'd (ep_net.c), and for frames of FCACHE_MIN and more the comm keeps up
 * to FCACHE_SLOTS released buffers of at most FCACHE_MAX bytes each and encodes the next big
 * frame into one of them (a cached buffer is free again once its reference is the cache's only
 * one), for the page-fault reason of the receive buffers (comm_tcp_recv.c). The loop frees them
 * when no big frame was sent for RX_IDLE_MS: at most FCACHE_SLOTS x FCACHE_MAX per comm,
 * nothing once big sends stop.
 */
#define _GNU_SOURCE

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "comm_tcp.h"
#include "hako/log.h"

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

/* ---- small send buffers (the pool) ---- */

static int pool_class(size_t n)
{
	int k = 0;
	while (k < POOL_CLASSES - 1 && ((size_t)POOL_MIN << k) < n) {
		k++;
	}
	return k;
}

/* Free buffers a class keeps: what one peer's queue holds (the memory the configuration lets a
 * peer take anyway), at most POOL_BYTES. */
static uint32_t pool_max(const tcp_comm_t *c, int k)
{
	uint32_t by_bytes = POOL_BYTES / (POOL_MIN << k);
	uint32_t depth = c->cfg->send_queue_depth + POOL_SLACK;
	return depth < by_bytes ? depth : by_bytes;
}

/* Give n buffers whose last reference went back to the pool; those it has no room for are
 * freed. Any thread; fs is overwritten. */
static void pool_return(tcp_comm_t *c, hakoi_frame_buf_t **fs, size_t n)
{
	if (n == 0) {
		return;
	}
	size_t nfree = 0;
	int kept = 0;
	pthread_mutex_lock(&c->pool_lock);
	for (size_t i = 0; i < n; i++) {
		int k = pool_class(fs[i]->len);
		if (c->pool[k] == NULL) {
			c->pool[k] = malloc(pool_max(c, k) * sizeof(*c->pool[k]));
		}
		if (c->pool[k] != NULL && c->pool_n[k] < pool_max(c, k)) {
			c->pool[k][c->pool_n[k]++] = fs[i];
			kept++;
		} else {
			fs[nfree++] = fs[i];
		}
	}
	int before = atomic_fetch_add_explicit(&c->pool_count, kept, memory_order_relaxed);
	pthread_mutex_unlock(&c->pool_lock);
	for (size_t i = 0; i < nfree; i++) {
		free(fs[i]);
	}
	if (before == 0 && kept > 0 && !atomic_load(&c->pool_timed)) {
		wake(c); /* the loop times the pool's release (hakoi_tcp_work) */
	}
}

/* A pooled buffer's last reference went (hakoi_frame_buf_unref). */
static void pool_release(hakoi_frame_buf_t *f)
{
	pool_return(f->owner, &f, 1);
}

/* A pooled buffer for a frame of n bytes (n <= the largest class): a free one, else a new one.
 * NULL on ENOMEM. */
static hakoi_frame_buf_t *pool_get(tcp_comm_t *c, size_t n, size_t *cap)
{
	int k = pool_class(n);
	hakoi_frame_buf_t *f = NULL;
	if (atomic_load_explicit(&c->pool_count, memory_order_relaxed) > 0) {
		pthread_mutex_lock(&c->pool_lock);
		if (c->pool_n[k] > 0) {
			f = c->pool[k][--c->pool_n[k]];
			atomic_fetch_sub_explicit(&c->pool_count, 1, memory_order_relaxed);
		}
		pthread_mutex_unlock(&c->pool_lock);
	}
	if (f == NULL) {
		f = malloc(sizeof(*f) + ((size_t)POOL_MIN << k));
		if (f == NULL) {
			return NULL;
		}
	}
	f->refs = 1;
	f->data = f->storage;
	f->release = pool_release;
	f->owner = c;
	*cap = (size_t)POOL_MIN << k;
	if (!atomic_load_explicit(&c->pool_used, memory_order_relaxed)) {
		atomic_store_explicit(&c->pool_used, 1, memory_order_relaxed);
	}
	return f;
}

/* Free the pooled buffers (idle, or close). */
void hakoi_tcp_pool_clear(tcp_comm_t *c)
{
	for (int k = 0; k < POOL_CLASSES; k++) {
		for (;;) {
			hakoi_frame_buf_t *drop[64];
			uint32_t n = 0;
			pthread_mutex_lock(&c->pool_lock);
			while (n < 64 && c->pool_n[k] > 0) {
				drop[n++] = c->pool[k][--c->pool_n[k]];
			}
			atomic_fetch_sub_explicit(&c->pool_count, (int)n, memory_order_relaxed);
			pthread_mutex_unlock(&c->pool_lock);
			for (uint32_t i = 0; i < n; i++) {
				free(drop[i]);
			}
			if (n < 64) {
				break;
			}
		}
	}
}

/* Drop a reference on each of n frames (written, off a queue); the pool's that go free go back
 * to it in one batch. fs is overwritten. */
static void frames_unref(tcp_comm_t *c, hakoi_frame_buf_t **fs, size_t n)
{
	size_t keep = 0;
	for (size_t i = 0; i < n; i++) {
		hakoi_frame_buf_t *f = fs[i];
		if (f->release == pool_release && f->owner == c) {
			if (__atomic_sub_fetch(&f->refs, 1, __ATOMIC_ACQ_REL) == 0) {
				fs[keep++] = f;
			}
		} else {
			hakoi_frame_buf_unref(f);
		}
	}
	pool_return(c, fs, keep);
}

/* ---- coalescing small frames into one write ---- */

/* The n iovecs of a batch (cb_lock held): runs of small frames copied back to back into the
 * comm's coalescing buffer become one iovec each; big frames stay as they are. The batch ends
 * before the first small frame the buffer has no room for (*total: its bytes). The bytes and
 * their order are the same. Returns the iovecs left (in place). The kernel gathers each iovec
 * on its own: a few hundred of 368 bytes cost several times their copy into one run. */
static size_t coalesce(tcp_comm_t *c, struct iovec *iov, size_t n, size_t *total)
{
	if (c->cbuf == NULL) {
		c->cbuf = malloc(CB_SIZE);
		if (c->cbuf == NULL) {
			return n;
		}
		atomic_store_explicit(&c->cb_used, 1, memory_order_relaxed);
		wake(c); /* the loop times its release (hakoi_tcp_work) */
	} else if (!atomic_load_explicit(&c->cb_used, memory_order_relaxed)) {
		atomic_store_explicit(&c->cb_used, 1, memory_order_relaxed);
	}
	size_t used = 0;
	size_t k = 0;
	*total = 0;
	for (size_t i = 0; i < n; i++) {
		size_t len = iov[i].iov_len;
		if (len > CB_SMALL) {
			iov[k++] = iov[i];
			*total += len;
			continue;
		}
		if (used + len > CB_SIZE) {
			break;
		}
		*total += len;
		uint8_t *at = c->cbuf + used;
		memcpy(at, iov[i].iov_base, len);
		used += len;
		if (k > 0 && (uint8_t *)iov[k - 1].iov_base + iov[k - 1].iov_len == at) {
			iov[k - 1].iov_len += len;
		} else {
			iov[k++] = (struct iovec){.iov_base = at, .iov_len = len};
		}
	}
	return k;
}

/* Free the coalescing buffer (idle, or close). */
void hakoi_tcp_cbuf_clear(tcp_comm_t *c)
{
	if (pthread_mutex_trylock(&c->cb_lock) != 0) {
		return; /* in use: kept for the next look */
	}
	free(c->cbuf);
	c->cbuf = NULL;
	pthread_mutex_unlock(&c->cb_lock);
}

/* Write the queue in batches. Lock held on entry and exit (released during the syscall). A
 * queue another thread is writing is left to it. */
void hakoi_tcp_flush_locked(tcp_comm_t *c, tcp_peer_t *p)
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
		int fd = p->fd;
		p->writing = 1;
		pthread_mutex_unlock(&p->lock);
		int coalesced = n > 1 && pthread_mutex_trylock(&c->cb_lock) == 0;
		size_t niov = coalesced ? coalesce(c, iov, n, &total) : n;
		struct msghdr msg = {.msg_iov = iov, .msg_iovlen = niov};
		ssize_t w = sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
		int e = errno;
		if (coalesced) {
			pthread_mutex_unlock(&c->cb_lock);
		}
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
		hakoi_frame_buf_t *done[IOV_BATCH];
		while (left > 0) {
			hakoi_frame_buf_t *f = hakoi_frameq_head(&p->q);
			size_t rem = f->len - p->q.off;
			if (left < rem) {
				p->q.off += left;
				break;
			}
			left -= rem;
			bytes += frame_body_len(c->ver, f);
			done[frames++] = hakoi_frameq_take(&p->q);
		}
		frames_unref(c, done, (size_t)frames);
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
		f->release = NULL;
		f->owner = NULL;
	}
	*cap = fcap;
	atomic_store_explicit(&c->fc_last_ns, now_ns(), memory_order_relaxed);
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
		*cap = 0;
		*r = e;
		return NULL;
	}
	f->len = out;
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
		wake(c); /* the loop times the cache's release (hakoi_tcp_work) */
	}
}

/* Free the cached buffers (idle, or close). */
void hakoi_tcp_frame_cache_clear(tcp_comm_t *c)
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

/* Time the kept send buffers' release (loop thread, from the comm's task): the timer runs while
 * any is kept, so the pool need not wake the loop while it is timed. */
void hakoi_tcp_idle_arm(tcp_comm_t *c)
{
	int fc = atomic_load_explicit(&c->fc_count, memory_order_relaxed) > 0;
	int pool = atomic_load_explicit(&c->pool_count, memory_order_relaxed) > 0;
	int cb = atomic_load_explicit(&c->cb_used, memory_order_relaxed);
	if (pool && !atomic_load(&c->pool_timed)) {
		atomic_store(&c->pool_timed, 1);
	}
	if ((fc || pool || cb) && !hakoi_timer_armed(&c->fctimer)) {
		uint64_t due = now_ns() + RX_IDLE_NS;
		if (fc) {
			due =
			    atomic_load_explicit(&c->fc_last_ns, memory_order_relaxed) + RX_IDLE_NS;
		}
		hakoi_timer_set(c->loop, &c->fctimer, due);
	}
}

/* The big send buffers go once no big frame was sent for RX_IDLE_MS; the pooled ones once none
 * was taken for a whole period of RX_IDLE_MS (the senders only mark that they took one: no
 * clock per frame). */
void hakoi_tcp_fcache_timer(hakoi_timer_t *t)
{
	tcp_comm_t *c = t->arg;
	uint64_t now = now_ns();
	uint64_t due = 0;
	if (atomic_load_explicit(&c->fc_count, memory_order_relaxed) > 0) {
		uint64_t last = atomic_load_explicit(&c->fc_last_ns, memory_order_relaxed);
		if (now >= last + RX_IDLE_NS) {
			hakoi_tcp_frame_cache_clear(c);
		} else {
			due = last + RX_IDLE_NS;
		}
	}
	/* From here a buffer given back to an empty pool wakes the loop to time it again. */
	atomic_store(&c->pool_timed, 0);
	if (atomic_load_explicit(&c->pool_count, memory_order_relaxed) > 0 &&
	    !atomic_exchange(&c->pool_used, 0)) {
		hakoi_tcp_pool_clear(c);
	}
	/* The coalescing buffer: the same, by its own mark (set by a write that used it). */
	int cb_kept = 0;
	if (!atomic_exchange(&c->cb_used, 0)) {
		hakoi_tcp_cbuf_clear(c);
	} else {
		cb_kept = 1;
	}
	if (atomic_load_explicit(&c->pool_count, memory_order_relaxed) > 0 || cb_kept) {
		if (atomic_load_explicit(&c->pool_count, memory_order_relaxed) > 0) {
			atomic_store(&c->pool_timed, 1);
		}
		due = due == 0 || now + RX_IDLE_NS < due ? now + RX_IDLE_NS : due;
	}
	if (due != 0) {
		hakoi_timer_set(c->loop, &c->fctimer, due);
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
		hakoi_tcp_flush_locked(c, p);
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
		hakoi_tcp_flush_locked(c, p);
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
	uint64_t now; /* read when a peer's queue is empty (0: not yet) */
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

/* The last frame header a thread made. A PDU frame's header is a function of these alone (the
 * times are zero, frame.h): a stream of PDUs of one key reuses it instead of encoding. */
static _Thread_local struct {
	hako_frame_version_t ver;
	int32_t channel_id;
	uint32_t len;
	size_t hlen; /* 0: none yet */
	char robot[HAKO_FRAME_ROBOT_MAX];
	uint8_t hdr[HAKO_FRAME_V2_HEADER_SIZE];
} tls_hdr;

/* The frame header of t (made by the first direct write or queued copy): encoded with an empty
 * body, then the length fields (frame.h's layout) grown by the body length; or the thread's last
 * one, when it is of the same key and length. 0 or the error of hako_frame_encode. */
static int tx_header(tcp_comm_t *c, tx_pdu_t *t)
{
	if (tls_hdr.hlen > 0 && tls_hdr.ver == c->ver && tls_hdr.len == (uint32_t)t->len &&
	    tls_hdr.channel_id == t->key->channel_id && strcmp(tls_hdr.robot, t->key->robot) == 0) {
		memcpy(t->hdr, tls_hdr.hdr, tls_hdr.hlen);
		t->hlen = tls_hdr.hlen;
		return 0;
	}
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
	tls_hdr.ver = c->ver;
	tls_hdr.channel_id = t->key->channel_id;
	tls_hdr.len = (uint32_t)t->len;
	tls_hdr.hlen = t->hlen;
	memcpy(tls_hdr.robot, fr.robot, sizeof(tls_hdr.robot));
	memcpy(tls_hdr.hdr, t->hdr, t->hlen);
	return 0;
}

/* The encoded frame of t (made on first use): its header and body copied into a pooled buffer
 * (frames up to the pool's largest class), else encoded into a new or cached big one. NULL on
 * ENOMEM. */
static hakoi_frame_buf_t *tx_frame(tcp_comm_t *c, tx_pdu_t *t)
{
	if (t->f != NULL) {
		return t->f;
	}
	size_t largest = (size_t)POOL_MIN << (POOL_CLASSES - 1);
	if (t->len < largest && (t->hlen > 0 || tx_header(c, t) == 0) &&
	    t->hlen + t->len <= largest) {
		size_t cap = 0;
		hakoi_frame_buf_t *f = pool_get(c, t->hlen + t->len, &cap);
		if (f == NULL) {
			return NULL;
		}
		memcpy(f->data, t->hdr, t->hlen);
		if (t->len > 0) {
			memcpy(f->data + t->hlen, t->data, t->len);
		}
		f->len = t->hlen + t->len;
		t->f = f;
		t->fcap = 0;
		return f;
	}
	int r = 0;
	t->f = frame_get(c, t->key, t->data, t->len, &t->fcap, &r);
	return t->f;
}

/* Hand t to one peer. 1 = written or queued, 0 = dropped (counted here). */
static int send_peer(tcp_comm_t *c, tcp_peer_t *p, tx_pdu_t *t, int from)
{
	int need_wake = 0;
	int handed = 0;
	hakoi_frame_buf_t *f = NULL;
	pthread_mutex_lock(&p->lock);
	if (p->closed || p->dead) {
		goto out;
	}
	/* The clock is read only when the queue is empty: back-to-back sends that find frames
	 * queued are batched anyway (a streaming sender pays no clock per PDU). */
	int direct = 0;
	if (p->q.count == 0 && !p->writing) {
		if (t->now == 0) {
			t->now = now_ns();
		}
		uint64_t last = p->last_send_ns;
		if (t->now > last) {
			p->last_send_ns = t->now;
		}
		direct = t->now >= last + BATCH_GAP_NS;
	}
	if (direct && (t->hlen > 0 || tx_header(c, t) == 0)) {
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

int hakoi_tcp_send(void *impl, const hako_pdu_key_t *key, const void *data, size_t len)
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
		int from = hakoi_loop_current() == c       ? FROM_OWN
		           : hakoi_loop_on_thread(c->loop) ? FROM_LOOP
		                                           : FROM_OTHER;
		size_t handed = 0;
		for (size_t i = 0; i < n; i++) {
			handed += (size_t)send_peer(c, snap[i], &t, from);
		}
		if (t.f != NULL) {
			frame_release(c, t.f, t.fcap);
		}
		r = handed > 0 ? 0 : HAKO_ENOTCONN;
	}
	for (size_t i = 0; i < n; i++) {
		hakoi_tcp_peer_unref(snap[i]);
	}
	if (snap != stack) {
		free(snap);
	}
	return r;
}
