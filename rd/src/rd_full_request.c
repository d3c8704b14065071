/* RD-Full's requester (hako/rd_full.h): a tool's session to the federation's server
 * (hako_conductor_session_open) that asks for a hand-off and waits for the answer. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hako/log.h"
#include "hako/rd_full.h"
#include "rd_full_wire.h"
#include "rd_internal.h"

struct hako_rd_full_requester {
	hako_conductor_session_t *s;
};

void hako_rd_full_requester_close(hako_rd_full_requester_t *rq)
{
	if (rq != NULL) {
		hako_conductor_session_close(rq->s);
		free(rq);
	}
}

int hako_rd_full_requester_open(const hako_conductor_config_t *cfg, hako_rd_full_requester_t **out)
{
	if (out != NULL) {
		*out = NULL;
	}
	if (cfg == NULL || out == NULL) {
		return HAKO_EINVAL;
	}
	hako_rd_full_requester_t *rq = calloc(1, sizeof(*rq));
	if (rq == NULL) {
		return HAKO_ENOMEM;
	}
	hako_error_t err;
	int r = hako_conductor_session_open(cfg, &rq->s, &err);
	if (r != 0) {
		char line[1600];
		HAKO_ERROR("%s", hako_error_format(&err, line, sizeof(line)));
		free(rq);
		return r;
	}
	*out = rq;
	return 0;
}

int hako_rd_full_requester_ask(hako_rd_full_requester_t *rq, uint32_t eu, uint8_t to,
                               int timeout_ms, hako_rd_commit_t *out, char *why, size_t why_len)
{
	if (why != NULL && why_len > 0) {
		why[0] = '\0';
	}
	if (rq == NULL) {
		return HAKO_EINVAL;
	}
	/* Answers to an earlier request that timed out may still come: dropped. */
	hako_conductor_ext_msg_t x;
	while (hako_conductor_session_recv(rq->s, 0, &x) == 0) {
	}
	hakoi_rdf_msg_t m;
	hakoi_rdf_init(&m, HAKOI_RDF_REQUEST);
	m.eu = eu;
	m.to = to;
	uint8_t buf[HAKOI_RDF_MAX];
	size_t len = hakoi_rdf_encode(&m, buf);
	if (hako_conductor_session_send(rq->s, HAKO_RD_FULL_EXT_ID, buf, len) != 0) {
		return HAKO_EIO;
	}
	hako_time_t until = hako_now_usec() + (hako_time_t)timeout_ms * 1000;
	for (;;) {
		hako_time_t left = until - hako_now_usec();
		if (left <= 0 ||
		    hako_conductor_session_recv(rq->s, (int)((left + 999) / 1000), &x) != 0) {
			if (why != NULL) {
				snprintf(why, why_len,
				         "no answer from the server at %s within %d ms",
				         hako_conductor_session_address(rq->s), timeout_ms);
			}
			return HAKO_ETIMEDOUT;
		}
		if (x.ext != HAKO_RD_FULL_EXT_ID) {
			continue;
		}
		if (x.result != 0) { /* the conductor's: no RD-Full on that node */
			if (why != NULL) {
				snprintf(why, why_len, "%.*s", (int)x.len, (const char *)x.body);
			}
			return x.result == HAKO_ENOTSUP ? HAKO_ESTATE : x.result;
		}
		hakoi_rdf_msg_t rep;
		char bad[160];
		if (hakoi_rdf_decode(x.body, x.len, &rep, bad, sizeof(bad)) != 0 ||
		    rep.kind != HAKOI_RDF_REPLY || rep.eu != eu || rep.to != to) {
			continue; /* not the answer */
		}
		if (why != NULL) {
			snprintf(why, why_len, "%s", rep.reason);
		}
		if (rep.result == 0 && out != NULL) {
			*out = (hako_rd_commit_t){.eu = eu,
			                          .seq = rep.seq,
			                          .status = HAKO_RD_OWNER_RELEASING,
			                          .epoch = (uint8_t)(rep.epoch < 0 ? 0 : rep.epoch),
			                          .next = to,
			                          .commit_usec = rep.commit};
		}
		return rep.result;
	}
}

/* hako_rd_full_request's kept connection: one per process, for the last config asked with.
 * A fresh one costs a ZeroMQ context, a CURVE handshake and the server's session more than the
 * request itself (bench/rd_handoff: zmq-fresh-rt vs zmq-kept-rt), and a tool that asks again
 * (hako-rd move in a loop, a test) would pay it each time. The lock makes the socket one
 * thread's at a time; a caller that finds it taken opens a connection of its own instead of
 * waiting. After a fork the child drops the parent's (its ZeroMQ context is the parent's):
 * neither closed nor used there. */
static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t kept_once = PTHREAD_ONCE_INIT;
static hako_rd_full_requester_t *kept;
static hako_conductor_config_t kept_cfg;
static pid_t kept_pid;
static _Atomic unsigned kept_opens; /* connections opened by hako_rd_full_request */

static void kept_drop_in_child(void)
{
	pthread_mutex_init(&kept_lock, NULL);
	kept = NULL; /* the parent's: left alone */
}

static void kept_close_at_exit(void)
{
	if (pthread_mutex_trylock(&kept_lock) != 0) {
		return; /* a request in flight on another thread: its process is ending anyway */
	}
	if (kept != NULL && kept_pid == getpid()) {
		hako_rd_full_requester_close(kept);
	}
	kept = NULL;
	pthread_mutex_unlock(&kept_lock);
}

static void kept_init(void)
{
	pthread_atfork(NULL, NULL, kept_drop_in_child);
	atexit(kept_close_at_exit);
}

unsigned hakoi_rd_full_request_opens(void)
{
	return atomic_load(&kept_opens);
}

void hakoi_rd_full_request_drop(void)
{
	pthread_once(&kept_once, kept_init);
	kept_close_at_exit();
}

static int open_for(const hako_conductor_config_t *cfg, hako_rd_full_requester_t **rq, char *why,
                    size_t why_len)
{
	int r = hako_rd_full_requester_open(cfg, rq);
	if (r != 0) {
		if (why != NULL && why_len > 0) {
			snprintf(why, why_len, "cannot connect to %s: %s", cfg->control_address,
			         hako_strerror(r));
		}
		return r;
	}
	atomic_fetch_add(&kept_opens, 1);
	return 0;
}

int hako_rd_full_request(const hako_conductor_config_t *cfg, uint32_t eu, uint8_t to,
                         int timeout_ms, hako_rd_commit_t *out, char *why, size_t why_len)
{
	if (why != NULL && why_len > 0) {
		why[0] = '\0';
	}
	if (cfg == NULL) {
		return HAKO_EINVAL;
	}
	pthread_once(&kept_once, kept_init);
	hako_rd_full_requester_t *rq = NULL;
	int r;
	if (pthread_mutex_trylock(&kept_lock) != 0) {
		/* another thread's request on the kept one: a connection of this call's own */
		if ((r = open_for(cfg, &rq, why, why_len)) != 0) {
			return r;
		}
		r = hako_rd_full_requester_ask(rq, eu, to, timeout_ms, out, why, why_len);
		hako_rd_full_requester_close(rq);
		return r;
	}
	if (kept != NULL && kept_pid != getpid()) {
		kept = NULL; /* a child the atfork handler missed (vfork, clone): the parent's */
	}
	/* Another server, key or identity: another connection (the whole config is compared,
	 * as hako_conductor_session_open reads many of its fields). */
	if (kept != NULL && memcmp(&kept_cfg, cfg, sizeof(*cfg)) != 0) {
		hako_rd_full_requester_close(kept);
		kept = NULL;
	}
	if (kept == NULL) {
		if ((r = open_for(cfg, &kept, why, why_len)) != 0) {
			pthread_mutex_unlock(&kept_lock);
			return r;
		}
		memcpy(&kept_cfg, cfg, sizeof(*cfg));
		kept_pid = getpid();
	}
	r = hako_rd_full_requester_ask(kept, eu, to, timeout_ms, out, why, why_len);
	if (r == HAKO_ETIMEDOUT || r == HAKO_EIO) {
		/* no answer, or the socket failed: the next request starts on a new connection
		 * (ZeroMQ reconnects by itself, but a server that came back with other keys or a
		 * peer that dropped us would not answer this one) */
		hako_rd_full_requester_close(kept);
		kept = NULL;
	}
	pthread_mutex_unlock(&kept_lock);
	return r;
}
