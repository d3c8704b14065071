/* Shared pieces of the network comms (see ep_net.h). */
#define _GNU_SOURCE

#include "ep_net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hako/error.h"
#include "hako/log.h"

int hakoi_sockaddr(const hako_comm_addr_t *a, struct sockaddr_storage *ss, socklen_t *len)
{
	memset(ss, 0, sizeof(*ss));
	if (a == NULL || !a->present) {
		return HAKO_EINVAL;
	}
	const char *addr = a->address[0] != '\0' ? a->address : "0.0.0.0";
	if (a->family == AF_INET6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(a->port);
		if (inet_pton(AF_INET6, addr, &s6->sin6_addr) != 1) {
			return HAKO_EINVAL;
		}
		*len = sizeof(*s6);
		return 0;
	}
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
	s4->sin_family = AF_INET;
	s4->sin_port = htons(a->port);
	if (inet_pton(AF_INET, addr, &s4->sin_addr) != 1) {
		return HAKO_EINVAL;
	}
	*len = sizeof(*s4);
	return 0;
}

void hakoi_addr_key(const struct sockaddr *sa, uint8_t key[16])
{
	memset(key, 0, 16);
	if (sa->sa_family == AF_INET) {
		key[10] = 0xff;
		key[11] = 0xff;
		memcpy(key + 12, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, 4);
	} else if (sa->sa_family == AF_INET6) {
		const struct in6_addr *a =
		    &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;
		memcpy(key, a->s6_addr, IN6_IS_ADDR_V4MAPPED(a) ? 16 : 8);
	}
}

const char *hakoi_sockaddr_str(const struct sockaddr *sa, char *buf, size_t len)
{
	char host[INET6_ADDRSTRLEN] = "?";
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;
		inet_ntop(AF_INET6, &s6->sin6_addr, host, sizeof(host));
		snprintf(buf, len, "[%s]:%u", host, (unsigned)ntohs(s6->sin6_port));
	} else if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)sa;
		inet_ntop(AF_INET, &s4->sin_addr, host, sizeof(host));
		snprintf(buf, len, "%s:%u", host, (unsigned)ntohs(s4->sin_port));
	} else {
		snprintf(buf, len, "(family %d)", (int)sa->sa_family);
	}
	return buf;
}

int hakoi_set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL, 0);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) {
		return HAKO_EIO;
	}
	return 0;
}

hakoi_frame_buf_t *hakoi_frame_buf_new(hako_frame_version_t v, const hako_pdu_key_t *key,
                                       const void *data, size_t len, size_t headroom, int *r)
{
	*r = 0;
	if (len > UINT32_MAX) {
		*r = HAKO_ETOOBIG;
		return NULL;
	}
	size_t n = hako_frame_size(v, key->robot, (uint32_t)len);
	if (n == 0) {
		*r = strlen(key->robot) >= HAKO_FRAME_ROBOT_MAX ? HAKO_ENAMETOOLONG : HAKO_ETOOBIG;
		return NULL;
	}
	hakoi_frame_buf_t *f = malloc(sizeof(*f) + headroom + n);
	if (f == NULL) {
		*r = HAKO_ENOMEM;
		return NULL;
	}
	f->refs = 1;
	f->data = f->storage + headroom;
	f->release = NULL;
	f->owner = NULL;
	hako_frame_t fr = {
	    .channel_id = key->channel_id,
	    .request_type = HAKO_FRAME_PDU_DATA,
	    .body = data,
	    .body_len = (uint32_t)len,
	};
	memcpy(fr.robot, key->robot, strlen(key->robot) + 1);
	size_t out = 0;
	int e = hako_frame_encode(v, &fr, f->data, n, &out);
	if (e != 0) {
		free(f);
		*r = e;
		return NULL;
	}
	f->len = out;
	return f;
}

void hakoi_frame_log_ignored(const char *ep_name, const char *peer, const hako_frame_t *fr)
{
	const char *what;
	switch (fr->request_type) {
	case HAKO_FRAME_DECLARE_READ: what = "declares it reads"; break;
	case HAKO_FRAME_DECLARE_WRITE: what = "declares it writes"; break;
	case HAKO_FRAME_REQUEST_READ: what = "requests a read of"; break;
	default:
		HAKO_DEBUG("endpoint '%s': peer %s: ignored a frame of type 0x%08x (not PDU data)",
		           ep_name, peer, (unsigned)fr->request_type);
		return;
	}
	HAKO_DEBUG("endpoint '%s': peer %s %s %s/%d (not PDU data: nothing stored)", ep_name, peer,
	           what, fr->robot, (int)fr->channel_id);
}

void hakoi_frame_buf_ref(hakoi_frame_buf_t *f)
{
	__atomic_fetch_add(&f->refs, 1, __ATOMIC_RELAXED);
}

void hakoi_frame_buf_unref(hakoi_frame_buf_t *f)
{
	if (f != NULL && __atomic_sub_fetch(&f->refs, 1, __ATOMIC_ACQ_REL) == 0) {
		if (f->release != NULL) {
			f->release(f);
		} else {
			free(f);
		}
	}
}

int hakoi_frameq_init(hakoi_frameq_t *q, uint32_t cap)
{
	memset(q, 0, sizeof(*q));
	if (cap == 0) {
		cap = 1;
	}
	q->items = calloc(cap, sizeof(*q->items));
	if (q->items == NULL) {
		return HAKO_ENOMEM;
	}
	q->cap = cap;
	return 0;
}

void hakoi_frameq_free(hakoi_frameq_t *q)
{
	while (q->count > 0) {
		hakoi_frameq_pop(q);
	}
	free(q->items);
	q->items = NULL;
	q->cap = 0;
}

int hakoi_frameq_push(hakoi_frameq_t *q, hakoi_frame_buf_t *f)
{
	int dropped = 0;
	if (q->count == q->cap) {
		if (q->off > 0) {
			/* The head is partly on the wire: drop the one after it. */
			if (q->cap == 1) {
				return -1;
			}
			uint32_t victim = (q->head + 1) % q->cap;
			hakoi_frame_buf_unref(q->items[victim]);
			/* Close the gap: shift the later items down by one. */
			for (uint32_t i = 1; i + 1 < q->count; i++) {
				uint32_t a = (q->head + i) % q->cap;
				uint32_t b = (q->head + i + 1) % q->cap;
				q->items[a] = q->items[b];
			}
			q->count--;
		} else {
			hakoi_frame_buf_unref(q->items[q->head]);
			q->head = (q->head + 1) % q->cap;
			q->count--;
		}
		dropped = 1;
	}
	hakoi_frame_buf_ref(f);
	q->items[(q->head + q->count) % q->cap] = f;
	q->count++;
	return dropped;
}

hakoi_frame_buf_t *hakoi_frameq_head(const hakoi_frameq_t *q)
{
	return q->count > 0 ? q->items[q->head] : NULL;
}

void hakoi_frameq_pop(hakoi_frameq_t *q)
{
	hakoi_frame_buf_unref(hakoi_frameq_take(q));
}

hakoi_frame_buf_t *hakoi_frameq_take(hakoi_frameq_t *q)
{
	if (q->count == 0) {
		return NULL;
	}
	hakoi_frame_buf_t *f = q->items[q->head];
	q->items[q->head] = NULL;
	q->head = (q->head + 1) % q->cap;
	q->count--;
	q->off = 0;
	return f;
}

void hakoi_cond_init(pthread_cond_t *cv)
{
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(cv, &ca);
	pthread_condattr_destroy(&ca);
}

int hakoi_frameq_wait_room(const hakoi_frameq_t *q, pthread_mutex_t *m, pthread_cond_t *room,
                           int *waiters, uint32_t timeout_ms, hakoi_gone_fn gone, const void *peer)
{
	if (timeout_ms > 0 && q->count >= q->cap && !gone(peer)) {
		struct timespec dl;
		clock_gettime(CLOCK_MONOTONIC, &dl);
		dl.tv_sec += timeout_ms / 1000u;
		dl.tv_nsec += (long)(timeout_ms % 1000u) * 1000000L;
		if (dl.tv_nsec >= 1000000000L) {
			dl.tv_sec++;
			dl.tv_nsec -= 1000000000L;
		}
		while (q->count >= q->cap && !gone(peer)) {
			(*waiters)++;
			int w = pthread_cond_timedwait(room, m, &dl);
			(*waiters)--;
			if (w == ETIMEDOUT) {
				break;
			}
		}
	}
	return q->count < q->cap && !gone(peer);
}
