/* The tcp comm's insides, shared by its files. Private to hako_endpoint.
 *
 * The tcp comm: a server that serves any number of clients, or a client that keeps (re)connecting
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
 * Files: comm_tcp.c, the comm's life cycle (open, start, stop and its drain, close) and its comm
 * file; comm_tcp_conn.c, the connections (peers, the client's connect with back-off, the
 * server's accept and its limits on idle peers, serving a peer on the loop); comm_tcp_recv.c,
 * receiving (framing the stream, the receive buffers); comm_tcp_send.c, sending (the direct
 * write, the peers' queues, the big send buffers).
 */
#ifndef HAKOI_COMM_TCP_H
#define HAKOI_COMM_TCP_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "ep_comm.h"
#include "ep_loop.h"
#include "ep_net.h"

#define RX_CHUNK          (128u << 10) /* receive buffer kept per peer */
#define RX_KEEP_MAX       (4u << 20)   /* a grown receive buffer up to this is kept */
#define RX_SHRINK_FRAMES  256u         /* ... until this many small frames in a row */
#define RX_IDLE_MS        2000u        /* ... or this long without a byte (nor a partial frame) */
#define RX_ROUND          4096u        /* grown buffers are rounded up to this */
#define RX_IDLE_NS        ((uint64_t)RX_IDLE_MS * 1000000u)
#define FCACHE_SLOTS      4            /* big send buffers kept per comm */
#define FCACHE_MIN        (128u << 10) /* frames from this size (glibc mmaps them) use the cache */
#define FCACHE_MAX        (4u << 20)   /* larger ones are malloc'd and freed as usual */
#define POOL_CLASSES      4            /* small send buffers: 512 B, 1, 2 and 4 KiB */
#define POOL_MIN          512u         /* the smallest class */
#define POOL_BYTES        (4u << 20)   /* free small buffers kept per class, at most */
#define POOL_SLACK        64u          /* ... and a queue's worth and this many more */
#define IOV_BATCH         512          /* frames per sendmsg */
#define CB_SIZE           (256u << 10) /* coalescing buffer: small frames of a batch, one run */
#define CB_SMALL          4096u        /* frames up to this are coalesced */
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
	uint64_t session; /* TCP mux: the session's number, from 1 in accept order (0: not a mux) */
	int bye;          /* stop: queue written, FIN sent */
	int eof;          /* stop: the peer's EOF (or an error) read */
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
	uint64_t sessions;     /* TCP mux: sessions accepted (the last one's number) */
	int ready_logged;      /* TCP mux: said that expected_clients are connected */

	/* Client (loop thread). */
	struct sockaddr_storage raddr;
	socklen_t raddr_len;
	char raddr_str[64];
	int cfd; /* connecting */
	uint32_t backoff_ms;
	int ever_connected;
	int fail_logged;

	/* Big send buffers kept for reuse (comm_tcp_send.c). */
	pthread_mutex_t fc_lock;
	hakoi_frame_buf_t *fc[FCACHE_SLOTS]; /* the cache holds one reference on each */
	size_t fc_cap[FCACHE_SLOTS];         /* bytes from data on */
	atomic_int fc_count;
	_Atomic uint64_t fc_last_ns; /* last big send */

	/* Small send buffers kept for reuse (comm_tcp_send.c). */
	pthread_mutex_t pool_lock;
	hakoi_frame_buf_t **pool[POOL_CLASSES]; /* free buffers, a stack per class (lazily) */
	uint32_t pool_n[POOL_CLASSES];
	atomic_int pool_count; /* free buffers over the classes */
	atomic_int pool_timed; /* the loop times their release (fctimer) */
	atomic_int pool_used;  /* a buffer was taken since the timer last looked */

	/* The coalescing buffer of the batched writes (comm_tcp_send.c): whoever writes a queue
	 * uses it if cb_lock is free, else writes the frames as they are. */
	pthread_mutex_t cb_lock;
	uint8_t *cbuf;      /* CB_SIZE bytes, lazily; freed once unused for RX_IDLE_MS */
	atomic_int cb_used; /* a write used it since the timer last looked */
};

#define now_ns hakoi_now_ns

/* Where a send runs, for what a full queue may do (comm_tcp_send.c). */
enum { FROM_OTHER = 0, FROM_OWN, FROM_LOOP };

/* Senders queued frames or found a peer dead: the loop thread handles it. */
static inline void wake(tcp_comm_t *c)
{
	hakoi_loop_post(c->loop, &c->work);
}

/* What a receive buffer counts under max_buffered_bytes: beyond the RX_CHUNK every peer reads
 * into (bounded by max_clients), so a peer with small frames is served whatever big frames
 * the others hold. */
static inline size_t rx_held(size_t cap)
{
	return cap > RX_CHUNK ? cap - RX_CHUNK : 0;
}

/* comm_tcp_conn.c: peers, connecting, accepting, serving (loop thread unless noted). */
/* Drop a reference on p; the last one frees it (any thread). */
void hakoi_tcp_peer_unref(tcp_peer_t *p);
/* Take p off the loop and the array, close it and drop the array's reference. */
void hakoi_tcp_peer_remove(tcp_comm_t *c, tcp_peer_t *p, int abortive);
/* The client's first connection attempt. */
void hakoi_tcp_client_try_connect(tcp_comm_t *c, uint64_t now);
/* The server's listening socket is readable: accept. */
void hakoi_tcp_server_listen_io(hakoi_io_t *io, short revents);
/* The comm's timer (ctimer). */
void hakoi_tcp_comm_timer(hakoi_timer_t *t);
/* The comm's task (work), posted by senders. */
void hakoi_tcp_work(hakoi_task_t *t);

/* comm_tcp_recv.c: the receive side of a peer (loop thread). */
enum { RX_OK = 0, RX_EOF, RX_LOST, RX_REJECT };
/* Read what the socket has, frame and deliver it. RX_* with why (RX_OK: why unset). */
int hakoi_tcp_rx_peer(tcp_comm_t *c, tcp_peer_t *p, char *why, size_t why_len);
/* The peer has been quiet for RX_IDLE_MS with nothing partial: give its big buffer back. */
void hakoi_tcp_rx_idle_shrink(tcp_comm_t *c, tcp_peer_t *p);

/* comm_tcp_send.c: the send side. */
/* Write p's queue in batches. Lock held on entry and exit (released during the syscall). A
 * queue another thread is writing is left to it. */
void hakoi_tcp_flush_locked(tcp_comm_t *c, tcp_peer_t *p);
/* The comm's send (any thread). */
int hakoi_tcp_send(void *impl, const hako_pdu_key_t *key, const void *data, size_t len);
/* Free the cached big send buffers (idle, or close). */
void hakoi_tcp_frame_cache_clear(tcp_comm_t *c);
/* Free the pooled small send buffers (idle, or close). */
void hakoi_tcp_pool_clear(tcp_comm_t *c);
/* Free the coalescing buffer unless a write is using it (idle, or close). */
void hakoi_tcp_cbuf_clear(tcp_comm_t *c);
/* Time the kept send buffers' idle release (loop thread). */
void hakoi_tcp_idle_arm(tcp_comm_t *c);
/* The kept send buffers' timer (fctimer): big and pooled ones. */
void hakoi_tcp_fcache_timer(hakoi_timer_t *t);

#endif
