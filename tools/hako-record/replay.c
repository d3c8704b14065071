/* hako-replay's work: read the recording in log-time order and, as an asset of the domain,
 * write at the step that brings its clock to T every message whose log time is at most the
 * recorded time of T (start offset + T x speed). The same file gives the same channel contents
 * after every step of the replay. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hako/cdr.h"
#include "hako/log.h"
#include "hako/msg.h"
#include "hako/pdudef.h"
#include "mcap.h"
#include "replay.h"

typedef struct rep_chan {
	int used;
	char robot[HAKO_NAME_MAX]; /* after the remap */
	char name[HAKO_NAME_MAX];
	int32_t id;
	uint32_t size;
	int raw;
	const hako_msg_type_t *mt;
	hako_channel_t *ch;
	uint64_t written, bad;
} rep_chan_t;

typedef struct replayer {
	const rep_opts_t *o;
	hako_mcap_reader_t *r;
	hako_pdudef_t *def;
	hako_msg_registry_t *reg;
	hako_domain_t *dom;
	hako_member_t *m;
	rep_chan_t *chans; /* by the reader's channel index */
	int32_t *by_id;    /* MCAP channel id -> index, -1 */
	uint8_t *pdu;      /* the pending message, as a PDU */
	size_t pdu_cap, pdu_len;
	int pending; /* pdu holds a message not written yet */
	rep_chan_t *pend_chan;
	uint64_t pend_time;
	int at_end;
	int64_t loop_base_ns; /* added to the file's log times, for --loop */
	uint64_t last_log_ns, first_log_ns;
	uint64_t written, errors;
} replayer_t;

static const char *meta_get(const hako_mcap_channel_t *c, const char *key)
{
	for (size_t i = 0; c->metadata != NULL && c->metadata[i] != NULL; i += 2) {
		if (strcmp(c->metadata[i], key) == 0) {
			return c->metadata[i + 1];
		}
	}
	return NULL;
}

static int filtered_out(const rep_opts_t *o, const char *robot, const char *name, const char *topic)
{
	int ok = o->nrobots == 0;
	for (int i = 0; i < o->nrobots && !ok; i++) {
		ok = strcmp(o->robots[i], robot) == 0;
	}
	if (!ok) {
		return 1;
	}
	ok = o->npdus == 0;
	for (int i = 0; i < o->npdus && !ok; i++) {
		const char *p = o->pdus[i];
		const char *slash = strchr(p, '/');
		if (p[0] == '/') {
			ok = strcmp(p, topic) == 0;
		} else if (slash != NULL) {
			ok = strncmp(p, robot, (size_t)(slash - p)) == 0 &&
			     robot[slash - p] == '\0' && strcmp(slash + 1, name) == 0;
		} else {
			ok = strcmp(p, name) == 0;
		}
	}
	return !ok;
}

/* What the channel of the recording is in the domain: robot (remapped), id, size, codec. */
static int setup_channel(replayer_t *P, size_t i)
{
	const hako_mcap_channel_t *mc = hako_mcap_reader_channel(P->r, i);
	rep_chan_t *c = &P->chans[i];
	const char *robot = meta_get(mc, "robot"), *id = meta_get(mc, "channel_id");
	const char *size = meta_get(mc, "pdu_size"), *name = meta_get(mc, "pdu_name");
	if (robot == NULL || id == NULL) {
		fprintf(stderr,
		        "hako-replay: channel %s: no robot or channel_id in its metadata "
		        "(not written by hako-record): left out\n",
		        mc->topic);
		return 0;
	}
	snprintf(c->name, sizeof(c->name), "%s", name != NULL ? name : "");
	if (filtered_out(P->o, robot, c->name, mc->topic)) {
		return 0;
	}
	const char *to = robot;
	for (int k = 0; k < P->o->nremaps; k++) {
		if (strcmp(P->o->remaps[k].from, robot) == 0) {
			to = P->o->remaps[k].to;
		}
	}
	snprintf(c->robot, sizeof(c->robot), "%s", to);
	c->id = (int32_t)strtol(id, NULL, 10);
	c->size = size != NULL ? (uint32_t)strtoul(size, NULL, 10) : 0;
	if (c->size == 0 && P->def != NULL) {
		const hako_pdudef_pdu_t *p = hako_pdudef_find_channel(P->def, c->robot, c->id);
		c->size = p != NULL ? p->pdu_size : 0;
	}
	if (c->size == 0) {
		fprintf(stderr,
		        "hako-replay: channel %s: its PDU size is unknown (no pdu_size in the "
		        "recording, not in the pdudef): left out\n",
		        mc->topic);
		return 0;
	}
	if (strcmp(mc->message_encoding, "hako.pdu") == 0) {
		c->raw = 1;
	} else if (strcmp(mc->message_encoding, HAKO_CDR_MESSAGE_ENCODING) == 0 &&
	           mc->schema != NULL) {
		/* pkg/msg/Type -> pkg/Type */
		char type[HAKO_MSG_FULL_MAX + 8];
		snprintf(type, sizeof(type), "%s", mc->schema->name);
		char *m = strstr(type, "/msg/");
		if (m != NULL) {
			memmove(m + 1, m + 5, strlen(m + 5) + 1);
		}
		hako_error_t err;
		if (hako_msg_registry_get(P->reg, type, &c->mt, &err) != 0) {
			fprintf(stderr, "hako-replay: channel %s: type %s unknown (%s): left out\n",
			        mc->topic, type, err.message);
			return 0;
		}
	} else {
		fprintf(stderr,
		        "hako-replay: channel %s: message encoding '%s' is not cdr or hako.pdu: "
		        "left out\n",
		        mc->topic, mc->message_encoding);
		return 0;
	}
	c->used = 1;
	P->by_id[mc->id] = (int32_t)i;
	return 0;
}

static int create_channels(replayer_t *P)
{
	for (size_t i = 0; i < hako_mcap_reader_channel_count(P->r); i++) {
		rep_chan_t *c = &P->chans[i];
		if (!c->used) {
			continue;
		}
		int rc = hako_channel_create(P->dom, c->robot, c->id, c->size, &c->ch);
		if (rc != 0) {
			fprintf(stderr,
			        "hako-replay: channel %s/%" PRId32 " of %" PRIu32 " bytes: %s\n",
			        c->robot, c->id, c->size, hako_strerror(rc));
			return rc;
		}
	}
	return 0;
}

/* The next message of a channel we replay into pdu, as a PDU: 1, 0 at the end. */
static int fetch(replayer_t *P)
{
	for (;;) {
		hako_mcap_message_t msg;
		int rc = hako_mcap_reader_next(P->r, &msg);
		if (rc == 0) {
			return 0;
		}
		if (rc < 0) {
			P->errors++;
			fprintf(stderr, "hako-replay: %s: %s; going on with the next chunk\n",
			        P->o->file, hako_mcap_reader_error(P->r));
			if (P->errors > 1000) {
				return 0;
			}
			continue;
		}
		int32_t ix = P->by_id[msg.channel->id];
		if (ix < 0) {
			continue;
		}
		rep_chan_t *c = &P->chans[ix];
		size_t need = c->raw ? msg.len : c->size;
		if (need > P->pdu_cap) {
			uint8_t *p = realloc(P->pdu, need);
			if (p == NULL) {
				return HAKO_ENOMEM;
			}
			P->pdu = p;
			P->pdu_cap = need;
		}
		if (c->raw) {
			if (msg.len > c->size) {
				c->bad++;
				continue;
			}
			memcpy(P->pdu, msg.data, msg.len);
			P->pdu_len = msg.len;
		} else {
			hako_error_t err;
			rc = hako_cdr_decode(c->mt, msg.data, msg.len, P->pdu, c->size, &P->pdu_len,
			                     &err);
			if (rc != 0) {
				if (c->bad++ == 0) {
					fprintf(stderr,
					        "hako-replay: %s: message %" PRIu32 ": %s\n",
					        msg.channel->topic, msg.sequence, err.message);
				}
				continue;
			}
		}
		P->pend_chan = c;
		P->pend_time = msg.log_time;
		if (P->first_log_ns == 0 || msg.log_time < P->first_log_ns) {
			P->first_log_ns = msg.log_time;
		}
		if (msg.log_time > P->last_log_ns) {
			P->last_log_ns = msg.log_time;
		}
		return 1;
	}
}

static int rewind_file(replayer_t *P)
{
	P->pending = 0;
	P->at_end = 0;
	return hako_mcap_reader_rewind(P->r, HAKO_MCAP_ORDER_LOG_TIME);
}

/* Write every message whose log time (+ loop base) is <= recorded. */
static int emit_until(replayer_t *P, int64_t recorded)
{
	for (;;) {
		if (!P->pending && !P->at_end) {
			int rc = fetch(P);
			if (rc < 0) {
				return rc;
			}
			P->pending = rc == 1;
			P->at_end = rc == 0;
		}
		if (P->at_end) {
			if (!P->o->loop || P->o->check || P->last_log_ns == 0) {
				return 0;
			}
			/* Once more, after the last message, one step later. */
			P->loop_base_ns += (int64_t)P->last_log_ns - P->o->start_offset_ns +
			                   hako_member_delta(P->m) * 1000;
			int rc = rewind_file(P);
			if (rc != 0) {
				return rc;
			}
			continue;
		}
		if ((int64_t)P->pend_time + P->loop_base_ns > recorded) {
			return 0;
		}
		if (P->o->dump) {
			/* FNV-1a of the values (after the meta header), as
			 * test/tools/record_probe.c */
			uint64_t h = 1469598103934665603ull;
			for (size_t i = 24; i < P->pdu_len; i++) {
				h = (h ^ P->pdu[i]) * 1099511628211ull;
			}
			printf("%" PRId64 " %s:%" PRId32 " %016" PRIx64 "\n",
			       ((int64_t)P->pend_time + P->loop_base_ns) / 1000,
			       P->pend_chan->robot, P->pend_chan->id, P->pdu_len > 24 ? h : 0);
		}
		int rc = P->o->check ? 0 : hako_channel_write(P->pend_chan->ch, P->pdu, P->pdu_len);
		if (rc != 0) {
			fprintf(stderr, "hako-replay: write %s/%" PRId32 ": %s\n",
			        P->pend_chan->robot, P->pend_chan->id, hako_strerror(rc));
			return rc;
		}
		P->pend_chan->written++;
		P->written++;
		P->pending = 0;
	}
}

static int open_domain(replayer_t *P, volatile sig_atomic_t *stop)
{
	hako_time_t until = hako_now_usec() + (hako_time_t)P->o->wait_ms * 1000;
	for (;;) {
		hako_log_level_t lvl = HAKO_LOG_OFF;
		for (int l = HAKO_LOG_DEBUG; l < HAKO_LOG_OFF; l++) {
			if (hako_log_enabled((hako_log_level_t)l)) {
				lvl = (hako_log_level_t)l;
				break;
			}
		}
		hako_log_set_level(HAKO_LOG_OFF);
		int r = hako_domain_open(P->o->domain, &P->dom);
		hako_log_set_level(lvl);
		if (r == 0) {
			return 0;
		}
		if (r != HAKO_ENOENT || hako_now_usec() >= until || *stop) {
			fprintf(stderr, "hako-replay: domain '%s': %s\n", P->o->domain,
			        hako_strerror(r));
			return r;
		}
		struct timespec ts = {0, 20000000};
		nanosleep(&ts, NULL);
	}
}

static void say_file(replayer_t *P)
{
	size_t used = 0;
	for (size_t i = 0; i < hako_mcap_reader_channel_count(P->r); i++) {
		used += P->chans[i].used;
	}
	printf("hako-replay: %s: %s, %zu channels (%zu replayed), %zu schemas\n", P->o->file,
	       hako_mcap_reader_indexed(P->r) ? "indexed" : "no summary: read from the start",
	       hako_mcap_reader_channel_count(P->r), used, hako_mcap_reader_schema_count(P->r));
	for (size_t i = 0; i < hako_mcap_reader_skip_count(P->r); i++) {
		const hako_mcap_skip_t *s = hako_mcap_reader_skip(P->r, i);
		printf("hako-replay: skipped %" PRIu64 " bytes at offset %" PRIu64 ": %s\n",
		       s->bytes, s->offset, s->why);
	}
}

static int run_asset(replayer_t *P, volatile sig_atomic_t *stop)
{
	int rc = 0;
	while (!*stop && rc == 0) {
		int ev = HAKO_EVENT_NONE;
		int r = hako_member_wait_event(P->m, 100000, &ev);
		if (r == HAKO_ETIMEDOUT) {
			continue;
		}
		if (r != 0) {
			return r;
		}
		hako_member_ack(P->m, ev);
		if (ev == HAKO_EVENT_ERROR) {
			fprintf(stderr, "hako-replay: the domain failed\n");
			return HAKO_EINTR;
		}
		if (ev == HAKO_EVENT_RESET) {
			P->loop_base_ns = 0;
			rc = rewind_file(P);
			continue;
		}
		if (ev != HAKO_EVENT_START) {
			continue;
		}
		int said_end = 0;
		while (!*stop && rc == 0) {
			r = hako_member_step_wait(P->m);
			if (r == HAKO_EINTR) {
				break;
			}
			if (r != 0) {
				return r;
			}
			hako_time_t T = hako_member_time(P->m) + hako_member_delta(P->m);
			int64_t recorded =
			    P->o->start_offset_ns + (int64_t)((double)T * 1000.0 * P->o->speed);
			rc = emit_until(P, recorded);
			if (P->at_end && !said_end && !P->o->quiet) {
				said_end = 1;
				printf("hako-replay: the recording ended at world time %.6f s "
				       "(%" PRIu64 " messages written)\n",
				       (double)T / 1e6, P->written);
			}
			hako_member_step_done(P->m);
		}
	}
	return rc;
}

int rep_run(const rep_opts_t *o, volatile sig_atomic_t *stop)
{
	replayer_t P = {.o = o};
	char msg[1024];
	hako_error_t err;
	int rc = hako_mcap_reader_open(&P.r, o->file, msg, sizeof(msg));
	if (rc != 0) {
		fprintf(stderr, "hako-replay: %s\n", msg);
		return rc;
	}
	rc = hako_msg_registry_create(&P.reg);
	if (rc == 0 && o->pdudef != NULL && (rc = hako_pdudef_load(o->pdudef, &P.def, &err)) != 0) {
		fprintf(stderr, "hako-replay: %s\n", hako_error_format(&err, msg, sizeof(msg)));
	}
	size_t n = hako_mcap_reader_channel_count(P.r);
	P.chans = calloc(n ? n : 1, sizeof(*P.chans));
	P.by_id = malloc(65536 * sizeof(*P.by_id));
	if (rc == 0 && (P.chans == NULL || P.by_id == NULL)) {
		rc = HAKO_ENOMEM;
	}
	for (size_t i = 0; rc == 0 && i < 65536; i++) {
		P.by_id[i] = -1;
	}
	for (size_t i = 0; rc == 0 && i < n; i++) {
		rc = setup_channel(&P, i);
	}
	if (rc == 0) {
		rc = rewind_file(&P);
	}
	if (rc == 0 && (!o->quiet || o->check)) {
		say_file(&P);
	}
	if (rc == 0 && o->check) {
		/* Read it all: what a replay would write, and the errors it would meet. */
		while ((rc = emit_until(&P, INT64_MAX)) == 0 && !P.at_end) {
		}
		printf("hako-replay: %" PRIu64 " messages would be written, %" PRIu64
		       " read errors; log times %.6f s to %.6f s\n",
		       P.written, P.errors, (double)P.first_log_ns / 1e9,
		       (double)P.last_log_ns / 1e9);
	} else if (rc == 0) {
		rc = open_domain(&P, stop);
		rc = rc ? rc : create_channels(&P);
		hako_time_t delta = o->delta_usec;
		if (rc == 0 && delta == 0) {
			hako_domain_info_t info;
			rc = hako_domain_get_info(P.dom, &info);
			delta = info.delta_usec > 0 ? info.delta_usec : 1000;
		}
		if (rc == 0 && (rc = hako_member_register(P.dom, o->asset, delta, &P.m)) != 0) {
			fprintf(stderr, "hako-replay: register asset '%s' in domain '%s': %s\n",
			        o->asset, o->domain, hako_strerror(rc));
		}
		if (rc == 0) {
			if (!o->quiet) {
				printf("hako-replay: asset '%s' registered in domain '%s' (step "
				       "%lld us), "
				       "waiting for start\n",
				       o->asset, o->domain, (long long)delta);
			}
			rc = run_asset(&P, stop);
			printf("hako-replay: done: %" PRIu64 " messages written, %" PRIu64
			       " read errors\n",
			       P.written, P.errors);
		}
		hako_member_unregister(P.m);
	}
	/* A message that could not be decoded is said once per channel; the count here. */
	for (size_t i = 0; i < n && P.chans != NULL; i++) {
		if (P.chans[i].bad > 0) {
			printf("hako-replay: %s: %" PRIu64 " messages could not be written back\n",
			       hako_mcap_reader_channel(P.r, i)->topic, P.chans[i].bad);
		}
	}
	free(P.chans);
	free(P.by_id);
	free(P.pdu);
	hako_domain_close(P.dom);
	hako_pdudef_free(P.def);
	hako_msg_registry_destroy(P.reg);
	hako_mcap_reader_close(P.r);
	return rc;
}
