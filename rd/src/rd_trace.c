/* The RD trace: one JSON object per line, written to a file opened with O_APPEND by write(2)s
 * of whole lines only, so the nodes of several processes may share one file without tearing
 * lines. The frequent records (a model step, a PDU written or read: a host of many EUs makes a
 * million a second) wait in a buffer; the others (ownership: init, release, activate, ...)
 * go out at once with what waits before them, and hakoi_rd_trace_flush empties the buffer
 * before a checkpoint leaves. A process killed then loses only records after its last
 * checkpoint or ownership event: the steps a take-over runs again, which hako-rd check does
 * not count against the lost node anyway. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hako/log.h"
#include "rd_internal.h"

#define TRACE_BUFFER 65536

struct hakoi_rd_trace {
	int fd;
	int failed; /* a write failed: logged once */
	char path[512];
	size_t used; /* bytes waiting in buf: whole lines */
	char buf[TRACE_BUFFER];
};

static void put(hakoi_rd_trace_t *tr, const char *data, size_t n)
{
	ssize_t w;
	do {
		w = write(tr->fd, data, n);
	} while (w < 0 && errno == EINTR);
	if (w != (ssize_t)n && !tr->failed) {
		tr->failed = 1;
		HAKO_ERROR("rd: trace %s: write failed (%s); later records may be missing",
		           tr->path, w < 0 ? strerror(errno) : "short write");
	}
}

void hakoi_rd_trace_flush(hakoi_rd_trace_t *tr)
{
	if (tr != NULL && tr->used > 0) {
		put(tr, tr->buf, tr->used);
		tr->used = 0;
	}
}

hakoi_rd_trace_t *hakoi_rd_trace_open(const char *path)
{
	hakoi_rd_trace_t *tr = calloc(1, sizeof(*tr));
	if (tr == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	tr->fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (tr->fd < 0) {
		int e = errno;
		free(tr);
		errno = e;
		return NULL;
	}
	snprintf(tr->path, sizeof(tr->path), "%s", path);
	return tr;
}

void hakoi_rd_trace_close(hakoi_rd_trace_t *tr)
{
	if (tr == NULL) {
		return;
	}
	hakoi_rd_trace_flush(tr);
	close(tr->fd);
	free(tr);
}

void hakoi_rd_json_escape(const char *s, char *buf, size_t len)
{
	size_t o = 0;
	if (len == 0) {
		return;
	}
	for (; *s != '\0'; s++) {
		unsigned char c = (unsigned char)*s;
		char tmp[8];
		size_t n;
		if (c == '"' || c == '\\') {
			tmp[0] = '\\';
			tmp[1] = (char)c;
			n = 2;
		} else if (c < 0x20) {
			n = (size_t)snprintf(tmp, sizeof(tmp), "\\u%04x", c);
		} else {
			tmp[0] = (char)c;
			n = 1;
		}
		if (o + n >= len) {
			break;
		}
		memcpy(buf + o, tmp, n);
		o += n;
	}
	buf[o] = '\0';
}

static const char *const ev_names[HAKOI_RD_EV_COUNT] = {
    [HAKOI_RD_EV_INIT] = "init",         [HAKOI_RD_EV_WRITE] = "write",
    [HAKOI_RD_EV_STEP] = "step",         [HAKOI_RD_EV_RELEASE] = "release",
    [HAKOI_RD_EV_ACTIVATE] = "activate", [HAKOI_RD_EV_RELEASED] = "released",
    [HAKOI_RD_EV_RECLAIM] = "reclaim",   [HAKOI_RD_EV_RESTART] = "restart",
    [HAKOI_RD_EV_READ] = "read",
};

const char *hakoi_rd_trace_ev_name(hakoi_rd_trace_ev_t ev)
{
	return (unsigned)ev < HAKOI_RD_EV_COUNT ? ev_names[ev] : NULL;
}

hakoi_rd_trace_ev_t hakoi_rd_trace_ev_of(const char *name)
{
	for (int k = 0; name != NULL && k < HAKOI_RD_EV_COUNT; k++) {
		if (strcmp(ev_names[k], name) == 0) {
			return (hakoi_rd_trace_ev_t)k;
		}
	}
	return HAKOI_RD_EV_COUNT;
}

/* Decimal digits of v at p (no terminator); the count. */
static size_t put_u64(char *p, uint64_t v)
{
	char tmp[20];
	size_t n = 0;
	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v != 0);
	for (size_t i = 0; i < n; i++) {
		p[i] = tmp[n - 1 - i];
	}
	return n;
}

static size_t put_i64(char *p, int64_t v)
{
	if (v >= 0) {
		return put_u64(p, (uint64_t)v);
	}
	p[0] = '-';
	return 1 + put_u64(p + 1, 0 - (uint64_t)v);
}

static size_t put_str(char *p, const char *s)
{
	size_t n = strlen(s);
	memcpy(p, s, n);
	return n;
}

void hakoi_rd_trace_step(hakoi_rd_trace_t *tr, hako_time_t t, uint8_t node, uint32_t eu,
                         uint8_t epoch, uint64_t step, hako_time_t model_time)
{
	if (tr == NULL) {
		return;
	}
	/* The record hakoi_rd_trace_emit makes of a step, without printf: the one a host of
	 * many EUs makes a thousand times a world second per EU. At most 178 bytes. */
	char line[192];
	size_t n = put_str(line, "{\"t\":");
	n += put_i64(line + n, t);
	n += put_str(line + n, ",\"node\":");
	n += put_u64(line + n, node);
	n += put_str(line + n, ",\"eu\":");
	n += put_u64(line + n, eu);
	n += put_str(line + n, ",\"epoch\":");
	n += put_u64(line + n, epoch);
	n += put_str(line + n, ",\"ev\":\"step\",\"step\":");
	n += put_u64(line + n, step);
	n += put_str(line + n, ",\"mt\":");
	n += put_i64(line + n, model_time);
	n += put_str(line + n, "}\n");
	if (tr->used + n > sizeof(tr->buf)) {
		hakoi_rd_trace_flush(tr);
	}
	memcpy(tr->buf + tr->used, line, n);
	tr->used += n;
}

void hakoi_rd_trace_emit(hakoi_rd_trace_t *tr, hako_time_t t, uint8_t node, uint32_t eu,
                         uint8_t epoch, hakoi_rd_trace_ev_t ev, const char *extra)
{
	if (tr == NULL || hakoi_rd_trace_ev_name(ev) == NULL) {
		return;
	}
	char line[640];
	int n = snprintf(
	    line, sizeof(line),
	    "{\"t\":%" PRId64 ",\"node\":%u,\"eu\":%" PRIu32 ",\"epoch\":%u,\"ev\":\"%s\"%s}\n",
	    (int64_t)t, node, eu, epoch, hakoi_rd_trace_ev_name(ev), extra != NULL ? extra : "");
	if (n < 0 || (size_t)n >= sizeof(line)) {
		return; /* cannot happen with the records rd_node.c makes */
	}
	if (tr->used + (size_t)n > sizeof(tr->buf)) {
		hakoi_rd_trace_flush(tr);
	}
	memcpy(tr->buf + tr->used, line, (size_t)n);
	tr->used += (size_t)n;
	if (ev != HAKOI_RD_EV_STEP && ev != HAKOI_RD_EV_WRITE && ev != HAKOI_RD_EV_READ) {
		hakoi_rd_trace_flush(tr);
	}
}
