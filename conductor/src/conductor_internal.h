/* Private to hako_conductor: the node runtime's state. */
#ifndef HAKOI_CONDUCTOR_INTERNAL_H
#define HAKOI_CONDUCTOR_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

#include "hako/conductor.h"
#include "hako/conductor_ext.h"
#include "auth.h"
#include "link.h"
#include "wire.h"

/* The status a node writes into its own domain (hako_conductor_status_t) so often. */
#define HAKOI_STATUS_PERIOD 200000 /* us */
/* The main thread wakes at least this often (lost peers, proxies' heartbeats, the status)
 * when no message or event comes; everything else wakes it at once. */
#define HAKOI_NET_POLL_MS     100
#define HAKOI_DRIFT_SAMPLES   65536 /* per peer, the most recent */
#define HAKOI_JOIN_RETRY_USEC 300000

/* Samples of a signed quantity (us), the newest HAKOI_DRIFT_SAMPLES kept. */
typedef struct hakoi_ring {
	hako_time_t *v;
	size_t n;    /* kept */
	size_t next; /* where the next goes */
	uint64_t total;
	hako_time_t max; /* of all, also the ones dropped */
	/* hakoi_ring_p50_p95's last answer, for the samples up to cached_total. */
	uint64_t cached_total;
	hako_time_t cached_p50, cached_p95;
} hakoi_ring_t;

void hakoi_ring_push(hakoi_ring_t *r, hako_time_t x);
/* The p-th percentile (0..100, nearest rank) of the kept samples; 0 when there are none.
 * O(n): a copy and a selection, no sort. */
hako_time_t hakoi_ring_percentile(const hakoi_ring_t *r, double p);
/* p50 and p95 together from one copy. exact: of the samples as they are now. Not exact (the
 * status, written every 200 ms also while the federation idles on heartbeats): computed again
 * only once 1/64 of the kept samples are new since the last time (at least one), so a figure
 * is at most that far behind and an idle node does not select over 64 Ki samples 5 times a
 * second per peer. */
void hakoi_ring_p50_p95(hakoi_ring_t *r, int exact, hako_time_t *p50, hako_time_t *p95);
void hakoi_ring_free(hakoi_ring_t *r);

/* A ROUTER routing id: a client's control socket is "<id>#c<incarnation>", its time socket
 * "<id>#t<incarnation>", so that a second process with the same node id has routes of its own
 * (it is refused by name, and never takes the live one's route). */
#define HAKOI_ROUTE_MAX (HAKO_CONDUCTOR_ID_MAX + 20)

struct hakoi_peer {
	char id[HAKO_CONDUCTOR_ID_MAX];
	char route[HAKOI_ROUTE_MAX]; /* server: the joined client's control socket */
	hako_member_t *proxy;        /* in this node's domain; NULL once dropped */
	int joined;
	int dropped;
	uint64_t incarnation;         /* of the peer process we joined with */
	uint64_t refused_incarnation; /* server: the last claimant refused (logged once) */
	hako_time_t known_time;
	hako_time_t last_heard; /* hako_now_usec of the last message, 0 = never */
	uint32_t last_seq;
	uint64_t seq_incarnation; /* the sender of last_seq */
	int lost_reported;
	/* Lifecycle. Server: the event sent to this client and not yet acknowledged. Client: the
	 * event the server asked for, being carried out here. */
	uint32_t pending_op;
	uint32_t pending_req;
	/* Client: the local event already forwarded to the server as a request. */
	uint32_t requested_op;
	/* Client: the server's last refusal to let us join (logged once). */
	char refusal[HAKOI_WIRE_REASON];
	/* Statistics (under node->stats_lock). */
	hakoi_ring_t drift;
	hakoi_ring_t age;
	uint64_t messages_in, messages_out, garbage;
	int garbage_logged;
	uint32_t restarts; /* new incarnations after the first (hako_conductor_peer_stats_t) */
};

struct hako_conductor_node {
	hako_conductor_config_t cfg;
	hako_domain_t *dom;
	uint64_t incarnation;
	void *zctx;
	void *ctl;  /* main thread: server ROUTER (bound) / client DEALER ("<id>#c<inc>") */
	void *tout; /* client: DEALER ("<id>#t<inc>"), its times while the link is down */
	/* The time links (link.h), under send_lock: the server's accepted ones (links, nlinks
	 * slots; listen_fd on the time address), a client's one to its server. */
	int listen_fd;
	hakoi_link_t *links;
	size_t nlinks;
	hako_time_t link_retry_at, link_backoff; /* client: the next connect, the wait after */
	int wake_fd; /* eventfd: the watcher tells the main thread the domain changed */
	pthread_t main_thread, watch_thread;
	int threads;
	_Atomic int stop;
	struct hakoi_peer *peers; /* server: its clients; client: one, the server */
	size_t npeers;
	pthread_mutex_t stats_lock;
	hako_channel_t *status;
	hako_time_t next_status;
	hako_time_t next_join;
	uint32_t request_seq;
	hako_time_t fed_stop; /* client: the server's stop time of this run (0: none) */
	/* The time socket's sender state, under send_lock (publish_time). */
	pthread_mutex_t send_lock;
	hako_time_t last_sent;
	uint32_t last_sent_state;
	/* The lowest world time a peer needs from this node to step on (its time as last heard
	 * + delta - Dmax, over the peers); INT64_MIN: none yet. Set by the main thread. */
	_Atomic int64_t peer_need;
	/* The threshold the watcher waits for (hako_domain_wait_watch); INT64_MIN: not waiting. */
	_Atomic int64_t watching;
	hako_time_t last_send_at;
	uint32_t time_seq;
	uint32_t last_state; /* main thread: the domain state it last acted on */
	FILE *trace;
	uint64_t garbage_unknown; /* frames from nobody we know */
	hakoi_auth_t auth;
	/* Client: after a server restart, wait for hako_conductor_node_rejoin (hold_rejoin) before
	 * joining the new server (join_held). */
	_Atomic int hold_rejoin, join_held;
	/* Extensions (hako/conductor_ext.h), in the order given; opened ones have opened set. */
	struct hakoi_ext {
		const hako_conductor_ext_ops_t *ops;
		void *state;
		int opened;
	} exts[HAKO_CONDUCTOR_EXT_MAX];
	size_t next;
	size_t ext_payload_max; /* the largest second part an extension takes */
	/* The second part of the message being dispatched (an EXT's payload) */
	const void *payload;
	size_t payload_len;
};

static inline int64_t hakoi_now_real_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* node.c: the proxy's note (hako-cmd watch shows it) */
void hakoi_note_peer(struct hakoi_peer *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* node.c: read every frame queued on s (routed: a ROUTER's [identity][frame]) */
void hakoi_drain(hako_conductor_node_t *n, void *s, int routed);
/* node.c: one frame from `from` (a route "<id>#c.." / "<id>#t..", or NULL: a client's server);
 * user: the node whose key the connection proved (NULL without authentication); an EXT's
 * second part in n->payload. */
void hakoi_dispatch(hako_conductor_node_t *n, const char *from, const char *user,
                    const uint8_t *buf, size_t len);
void hakoi_count_garbage(hako_conductor_node_t *n, struct hakoi_peer *p, const char *from,
                         const char *why);

/* node_link.c: the time links. Open the server's listener or the client's link state (0 or
 * an error); poll items for them (main thread; returns how many were added at items); after
 * the poll, serve them; the client's connects and every link's hand-shake timeout (main
 * thread, each turn); close them all. */
int hakoi_links_open(hako_conductor_node_t *n, hako_error_t *err);
size_t hakoi_links_poll_items(hako_conductor_node_t *n, void *items, size_t max);
void hakoi_links_serve(hako_conductor_node_t *n, const void *items, size_t count);
void hakoi_links_tick(hako_conductor_node_t *n, hako_time_t now);
void hakoi_links_close(hako_conductor_node_t *n);
/* Under send_lock: a frame to every link that is up (server) or to the server (client): 0 if
 * it went on a link (queued; hakoi_links_flush writes), -1 if no link took it (a client then
 * sends on its ZeroMQ socket). */
int hakoi_links_queue(hako_conductor_node_t *n, const void *part1, size_t len1, const void *part2,
                      size_t len2);
void hakoi_links_flush(hako_conductor_node_t *n);

/* Whether this thread is n's main thread (node.c), or holds n's send lock in the publish of its
 * time (node_time.c): what HAKO_ASSERT checks of the extensions' calls. */
int hakoi_on_main_thread(const hako_conductor_node_t *n);
int hakoi_publishing(const hako_conductor_node_t *n);

/* node_time.c: the watcher thread; this node's time out (either thread, under send_lock);
 * a peer's TIME in (main thread). */
void *hakoi_watch_main(void *arg);
void hakoi_publish_time(hako_conductor_node_t *n);
void hakoi_on_time(hako_conductor_node_t *n, struct hakoi_peer *p, const hakoi_msg_t *m);

/* node_life.c, main thread: the messages of joins and the lifecycle, and the rounds that
 * carry events between the domain and the peers. */
void hakoi_on_join(hako_conductor_node_t *n, const char *from, const hakoi_msg_t *m);
void hakoi_on_join_reply(hako_conductor_node_t *n, struct hakoi_peer *p, const hakoi_msg_t *m);
void hakoi_on_event(hako_conductor_node_t *n, struct hakoi_peer *p, const hakoi_msg_t *m);
void hakoi_on_ack(hako_conductor_node_t *n, struct hakoi_peer *p, const hakoi_msg_t *m);
void hakoi_on_sim_control(hako_conductor_node_t *n, const hakoi_msg_t *m);
void hakoi_on_failed(hako_conductor_node_t *n, const hakoi_msg_t *m);
void hakoi_on_get_sim_state(hako_conductor_node_t *n, const char *from);
void hakoi_server_progress(hako_conductor_node_t *n);
void hakoi_client_progress(hako_conductor_node_t *n);
void hakoi_check_peers(hako_conductor_node_t *n, hako_time_t now);

/* stats.c: the peer table (exact: percentiles of the samples as they are now) and the status
 * record into the domain (main thread). */
int hakoi_node_stats(hako_conductor_node_t *n, hako_conductor_peer_stats_t *out, int max,
                     int *count, int exact);
void hakoi_write_status(hako_conductor_node_t *n);

/* node.c, for ext.c */
struct hakoi_peer *hakoi_peer_by_id(hako_conductor_node_t *n, const char *id);
int hakoi_send_msg(void *s, const char *to, hakoi_msg_t *m);
/* The same with a second part (payload, len bytes; NULL: none). */
int hakoi_send_msg2(void *s, const char *to, hakoi_msg_t *m, const void *payload, size_t len);
void hakoi_base_msg(hako_conductor_node_t *n, hakoi_msg_t *m, uint16_t type);
/* 0 or -1; counted in the peer's messages_out. */
int hakoi_send_ctl(hako_conductor_node_t *n, struct hakoi_peer *p, hakoi_msg_t *m);
int hakoi_send_ctl2(hako_conductor_node_t *n, struct hakoi_peer *p, hakoi_msg_t *m,
                    const void *payload, size_t len);

/* ext.c: an EXT message to its extension (main thread). from: the sender's route (server),
 * p: its peer (NULL: a tool). A tool's message for no extension here is answered with a
 * refusal; a node's is counted as garbage by the caller (non-zero). */
int hakoi_ext_dispatch(hako_conductor_node_t *n, struct hakoi_peer *p, const char *from,
                       const hakoi_msg_t *m);
/* The extensions' ops, each one that has it, in order. */
void hakoi_ext_tick(hako_conductor_node_t *n);
void hakoi_ext_joined(hako_conductor_node_t *n, struct hakoi_peer *p);
void hakoi_ext_peer_time(hako_conductor_node_t *n, struct hakoi_peer *p, hako_time_t world);
void hakoi_ext_peer_lost(hako_conductor_node_t *n, struct hakoi_peer *p);
void hakoi_ext_before_publish(hako_conductor_node_t *n);
int hakoi_ext_wants_tick(hako_conductor_node_t *n);
int hakoi_ext_open_all(hako_conductor_node_t *n, hako_error_t *err);
void hakoi_ext_close_all(hako_conductor_node_t *n);

#endif
