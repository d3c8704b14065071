/* RD-Full's requester (hako/rd_full.h): a tool's session to the federation's server
 * (hako_conductor_session_open) that asks for a hand-off and waits for the answer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hako/log.h"
#include "hako/rd_full.h"
#include "rd_full_wire.h"

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

int hako_rd_full_request(const hako_conductor_config_t *cfg, uint32_t eu, uint8_t to,
                         int timeout_ms, hako_rd_commit_t *out, char *why, size_t why_len)
{
	hako_rd_full_requester_t *rq = NULL;
	int r = hako_rd_full_requester_open(cfg, &rq);
	if (r != 0) {
		if (why != NULL && why_len > 0) {
			snprintf(why, why_len, "cannot connect to %s: %s",
			         cfg != NULL ? cfg->control_address : "?", hako_strerror(r));
		}
		return r;
	}
	r = hako_rd_full_requester_ask(rq, eu, to, timeout_ms, out, why, why_len);
	hako_rd_full_requester_close(rq);
	return r;
}
