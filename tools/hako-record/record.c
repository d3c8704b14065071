/* hako-record's work: a sampler (this thread) that follows the domain without being an asset,
 * so the world never waits for it, and a writer thread that encodes to CDR and writes the MCAP
 * file. Between them a bounded ring: when it is full the sampler drops and counts. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* SCHED_IDLE */
#endif
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hako/cdr.h"
#include "hako/msg.h"
#include "hako/pdudef.h"
#include "record.h"
#include "record_budget.h"
#include "record_ring.h"

#define RESCAN_USEC    100000 /* the channel list is looked at again this often */
#define IDLE_WAIT_USEC 10000  /* not running: for a start, a new channel */
#define RUN_WAIT_USEC  10000
#define HAKO_PDU_RAW   "hako.pdu" /* message encoding of a channel recorded as raw PDU bytes */

typedef struct rec_chan {
	char robot[HAKO_NAME_MAX];
	char name[HAKO_NAME_MAX];
	char type[HAKO_MSG_FULL_MAX]; /* "" = unknown: raw */
	int32_t id;
	uint32_t size;
	hako_channel_t *ch;
	const hako_msg_type_t *mt;
	int selected;
	int64_t period_ns, next_due_ns;
	uint64_t last_seq;
	/* the writer's */
	int mcap_ready;
	uint16_t mcap_id;
	int bad_noted;
	/* counts */
	uint64_t recorded, missed, dropped, decimated, invalid;
} rec_chan_t;

typedef struct rec_schema {
	const hako_msg_type_t *mt;
	uint16_t id;
} rec_schema_t;

typedef struct recorder {
	const rec_opts_t *o;
	hako_domain_t *dom;
	hako_pdudef_t *def;
	hako_msg_registry_t *reg;
	rec_chan_t *chans; /* indexed by the domain's channel index */
	int nchans_cap;
	int nselected;
	int nknown;         /* channels of the domain seen so far */
	hako_waitset_t *ws; /* wakes the sampler at a write to a chosen channel; NULL: none left */
	/* --until-stop, follower: a member that never holds the world but whose acknowledgement
	 * the run's stop waits for, given after a last look (guard_events); NULL: none. */
	hako_member_t *guard;
	hako_waitset_event_t events[256];
	rec_ring_t ring;
	hako_mcap_writer_t *w;
	rec_schema_t *schemas;
	size_t nschemas;
	uint8_t *cdr;
	size_t cdr_cap;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	_Atomic int writer_idle, done;
	int write_error;
	int64_t base_ns, max_log_ns, delta_ns;
	uint32_t resets;
	int64_t step_ns; /* --asset: the log time of this step's reads; -1: the world time */
	uint64_t recorded, missed, dropped, decimated, invalid;
	rec_budget_t budget;
	double rtf; /* the domain's real-time factor (0: free-running), as of the last rescan */
} recorder_t;

static int64_t wall_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int spec_matches(const rec_pdu_spec_t *s, const rec_chan_t *c)
{
	if (s->robot[0] != '\0' && strcmp(s->robot, c->robot) != 0) {
		return 0;
	}
	if (s->id >= 0) {
		return s->id == c->id;
	}
	return strcmp(s->name, "*") == 0 || (c->name[0] != '\0' && strcmp(s->name, c->name) == 0);
}

static int chosen(const rec_opts_t *o, const rec_chan_t *c)
{
	int ok = o->nrobots == 0;
	for (int i = 0; i < o->nrobots && !ok; i++) {
		ok = strcmp(o->robots[i], c->robot) == 0;
	}
	if (!ok) {
		return 0;
	}
	ok = o->ntypes == 0;
	for (int i = 0; i < o->ntypes && !ok; i++) {
		ok = strcmp(o->types[i], c->type) == 0;
	}
	if (!ok) {
		return 0;
	}
	ok = o->npdus == 0;
	for (int i = 0; i < o->npdus && !ok; i++) {
		ok = spec_matches(&o->pdus[i], c);
	}
	return ok && !(o->skip_unknown && c->mt == NULL);
}

static double rate_of(const rec_opts_t *o, const rec_chan_t *c)
{
	for (int i = 0; i < o->nrates; i++) {
		if (spec_matches(&o->rates[i], c)) {
			return o->rates[i].rate_hz;
		}
	}
	return o->rate_hz;
}

/* A channel seen for the first time: its name and type from the pdudef, whether it is chosen. */
static void chan_init(recorder_t *R, rec_chan_t *c, const hako_channel_info_t *ci)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->robot, sizeof(c->robot), "%s", ci->robot);
	c->id = ci->channel_id;
	c->size = ci->size;
	const hako_pdudef_pdu_t *p =
	    R->def != NULL ? hako_pdudef_find_channel(R->def, ci->robot, ci->channel_id) : NULL;
	if (p != NULL) {
		snprintf(c->name, sizeof(c->name), "%s", p->name);
		hako_error_t err;
		if (hako_msg_registry_get(R->reg, p->type, &c->mt, &err) == 0) {
			snprintf(c->type, sizeof(c->type), "%s", p->type);
		} else {
			fprintf(stderr,
			        "hako-record: %s/%s: type %s unknown: recorded as raw PDU bytes\n",
			        c->robot, c->name, p->type);
			c->mt = NULL;
		}
	}
	c->selected = chosen(R->o, c);
	if (hako_channel_lookup(R->dom, ci->robot, ci->channel_id, &c->ch) != 0) {
		c->selected = 0;
	}
	double hz = rate_of(R->o, c);
	c->period_ns = hz > 0 ? (int64_t)(1e9 / hz) : 0;
	/* Writes before the recorder came are not missed: start from the current one. */
	c->last_seq = ci->seq > 0 ? ci->seq - 1 : 0;
	R->nselected += c->selected;
	if (c->selected && R->ws != NULL) {
		hako_waitset_add(R->ws, c->ch, NULL);
	}
	if (c->selected && !R->o->quiet && R->nselected <= 16) { /* the rest: a count */
		printf("hako-record: channel %s/%" PRId32 " (%s, %s, %" PRIu32 " bytes)\n",
		       c->robot, c->id, c->name[0] ? c->name : "no name",
		       c->type[0] ? c->type : "raw", c->size);
	}
}

static int rescan(recorder_t *R)
{
	hako_domain_info_t info;
	int r = hako_domain_get_info(R->dom, &info);
	if (r != 0) {
		return r;
	}
	R->rtf = info.real_time_factor;
	if (R->chans == NULL) {
		if (R->o->wake_on_write && hako_waitset_create(R->dom, &R->ws) != 0) {
			fprintf(stderr,
			        "hako-record: no wait-set left in domain '%s': following its "
			        "clock instead (writes between two world steps may be missed)\n",
			        R->o->domain);
			R->ws = NULL;
		}
		R->nchans_cap = (int)info.max_channels;
		R->chans = calloc((size_t)R->nchans_cap, sizeof(*R->chans));
		if (R->chans == NULL) {
			return HAKO_ENOMEM;
		}
		R->delta_ns = info.delta_usec * 1000;
	}
	hako_channel_info_t *list = malloc(sizeof(*list) * (size_t)R->nchans_cap);
	if (list == NULL) {
		return HAKO_ENOMEM;
	}
	int n = 0;
	r = hako_domain_list_channels(R->dom, list, R->nchans_cap, &n);
	for (int i = 0; r == 0 && i < n && i < R->nchans_cap; i++) {
		int ix = list[i].index;
		if (ix < 0 || ix >= R->nchans_cap) {
			continue;
		}
		rec_chan_t *c = &R->chans[ix];
		if (c->size == 0) {
			chan_init(R, c, &list[i]);
		}
	}
	free(list);
	R->nknown = n;
	return r;
}

/* ---- the writer thread ---- */

static uint16_t schema_for(recorder_t *R, const hako_msg_type_t *mt, int *rc)
{
	for (size_t i = 0; i < R->nschemas; i++) {
		if (R->schemas[i].mt == mt) {
			return R->schemas[i].id;
		}
	}
	size_t len = 0;
	hako_cdr_schema(mt, NULL, 0, &len);
	char *text = malloc(len + 1);
	rec_schema_t *s = realloc(R->schemas, (R->nschemas + 1) * sizeof(*s));
	if (text == NULL || s == NULL) {
		free(text);
		*rc = HAKO_ENOMEM;
		return 0;
	}
	R->schemas = s;
	hako_cdr_schema(mt, text, len + 1, &len);
	/* MCAP's ros2 profile and Foxglove name the schema pkg/msg/Type. */
	char name[HAKO_MSG_FULL_MAX + 8];
	snprintf(name, sizeof(name), "%s/msg/%s", mt->pkg, mt->name);
	uint16_t id = 0;
	*rc = hako_mcap_writer_add_schema(R->w, name, HAKO_CDR_SCHEMA_ENCODING, text, len, &id);
	free(text);
	R->schemas[R->nschemas].mt = mt;
	R->schemas[R->nschemas++].id = id;
	return id;
}

static int channel_for(recorder_t *R, rec_chan_t *c)
{
	int rc = 0;
	uint16_t sid = c->mt != NULL ? schema_for(R, c->mt, &rc) : 0;
	if (rc != 0) {
		return rc;
	}
	char topic[2 * HAKO_NAME_MAX + 16], id[16], size[16];
	if (c->name[0] != '\0') {
		snprintf(topic, sizeof(topic), "/%s/%s", c->robot, c->name);
	} else {
		snprintf(topic, sizeof(topic), "/%s/%" PRId32, c->robot, c->id);
	}
	snprintf(id, sizeof(id), "%" PRId32, c->id);
	snprintf(size, sizeof(size), "%" PRIu32, c->size);
	const char *meta[] = {"robot",    c->robot, "channel_id", id,      "pdu_size", size,
	                      "pdu_name", c->name,  "pdu_type",   c->type, NULL};
	rc = hako_mcap_writer_add_channel(R->w, sid, topic,
	                                  c->mt != NULL ? HAKO_CDR_MESSAGE_ENCODING : HAKO_PDU_RAW,
	                                  meta, &c->mcap_id);
	c->mcap_ready = rc == 0;
	return rc;
}

static int write_entry(recorder_t *R, const rec_entry_t *e)
{
	rec_chan_t *c = &R->chans[e->chan];
	const uint8_t *pdu = (const uint8_t *)(e + 1);
	int rc = 0;
	if (!c->mcap_ready && (rc = channel_for(R, c)) != 0) {
		return rc;
	}
	const void *data = pdu;
	size_t len = e->len;
	if (c->mt != NULL) {
		hako_error_t err;
		rc = hako_cdr_encode(c->mt, pdu, e->len, R->cdr, R->cdr_cap, &len, &err);
		if (rc == HAKO_ETOOBIG) {
			uint8_t *p = realloc(R->cdr, len);
			if (p == NULL) {
				return HAKO_ENOMEM;
			}
			R->cdr = p;
			R->cdr_cap = len;
			rc = hako_cdr_encode(c->mt, pdu, e->len, R->cdr, R->cdr_cap, &len, &err);
		}
		if (rc != 0) {
			/* A PDU its type cannot describe (never written whole, another type):
			 * counted. */
			c->invalid++;
			if (!c->bad_noted) {
				c->bad_noted = 1;
				fprintf(stderr,
				        "hako-record: /%s/%s: write %" PRIu64
				        " is not a valid %s: %s\n",
				        c->robot, c->name, e->seq, c->type, err.message);
			}
			return 0;
		}
		data = R->cdr;
	}
	rc = hako_mcap_writer_write(R->w, c->mcap_id, (uint32_t)e->seq, (uint64_t)e->log_ns,
	                            (uint64_t)e->wall_ns, data, len);
	c->recorded += rc == 0;
	return rc;
}

static void *writer_main(void *arg)
{
	recorder_t *R = arg;
	while (R->o->test_stall_writer && !atomic_load(&R->done)) {
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
	for (;;) {
		const rec_entry_t *e = rec_ring_peek(&R->ring);
		if (e != NULL) {
			if (R->write_error == 0) {
				R->write_error = write_entry(R, e);
				if (R->write_error != 0) {
					fprintf(stderr, "hako-record: %s: %s\n", R->o->out,
					        hako_mcap_writer_error(R->w)[0]
					            ? hako_mcap_writer_error(R->w)
					            : hako_strerror(R->write_error));
				}
			}
			rec_ring_pop(&R->ring);
			continue;
		}
		if (atomic_load(&R->done)) {
			break;
		}
		pthread_mutex_lock(&R->mu);
		atomic_store(&R->writer_idle, 1);
		if (rec_ring_peek(&R->ring) == NULL && !atomic_load(&R->done)) {
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += 50000000;
			if (ts.tv_nsec >= 1000000000) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000;
			}
			pthread_cond_timedwait(&R->cv, &R->mu, &ts);
		}
		atomic_store(&R->writer_idle, 0);
		pthread_mutex_unlock(&R->mu);
	}
	return NULL;
}

static void wake_writer(recorder_t *R)
{
	if (atomic_load(&R->writer_idle)) {
		pthread_mutex_lock(&R->mu);
		pthread_cond_signal(&R->cv);
		pthread_mutex_unlock(&R->mu);
	}
}

/* ---- the sampler ---- */

/* Read each chosen channel whose write number moved; 1 if any did. */
static int scan(recorder_t *R)
{
	int any = 0;
	for (int i = 0; i < R->nchans_cap; i++) {
		rec_chan_t *c = &R->chans[i];
		if (!c->selected) {
			continue;
		}
		uint64_t seq = hako_channel_seq(c->ch);
		if (seq == c->last_seq) {
			continue;
		}
		any = 1;
		if (seq < c->last_seq) { /* a reset we have not seen yet: it restarts from 0 */
			c->last_seq = 0;
		}
		int64_t now_ns = R->step_ns >= 0
		                     ? R->step_ns
		                     : R->base_ns + (int64_t)hako_domain_world_time(R->dom) * 1000;
		if (c->period_ns > 0 && now_ns < c->next_due_ns) {
			c->decimated += seq - c->last_seq;
			c->last_seq = seq;
			continue;
		}
		rec_entry_t *e = rec_ring_reserve(&R->ring, c->size);
		if (e == NULL) {
			c->dropped += seq - c->last_seq;
			c->last_seq = seq;
			continue;
		}
		size_t len = 0;
		uint64_t got = 0;
		if (hako_channel_read(c->ch, e + 1, c->size, &len, &got) != 0 || got == 0 ||
		    got <= c->last_seq) {
			continue;
		}
		c->missed += got - c->last_seq - 1;
		c->last_seq = got;
		int64_t log_ns = R->step_ns >= 0
		                     ? R->step_ns
		                     : R->base_ns + (int64_t)hako_domain_world_time(R->dom) * 1000;
		if (c->period_ns > 0) {
			c->next_due_ns = (log_ns / c->period_ns + 1) * c->period_ns;
		}
		if (log_ns > R->max_log_ns) {
			R->max_log_ns = log_ns;
		}
		e->len = (uint32_t)len;
		e->chan = (uint32_t)i;
		e->seq = got;
		e->log_ns = log_ns;
		e->wall_ns = wall_ns();
		rec_ring_commit(&R->ring);
	}
	return any;
}

/* The world time restarted: carry on after the last time recorded, one step later, so the
 * file's log times keep increasing (docs/hako-record.md). */
static void after_reset(recorder_t *R)
{
	if (R->max_log_ns > 0) { /* nothing recorded yet: nothing to go on from */
		R->base_ns = R->max_log_ns + (R->delta_ns > 0 ? R->delta_ns : 1000000);
	}
	for (int i = 0; i < R->nchans_cap; i++) {
		R->chans[i].last_seq = 0;
		R->chans[i].next_due_ns = 0;
	}
	R->resets++;
	if (!R->o->quiet) {
		printf("hako-record: the domain was reset; log times go on from %.6f s\n",
		       (double)R->base_ns / 1e9);
	}
}

/* --idle: the sampler (and the writer thread, which inherits it) get only CPU time no other
 * thread wants, so a neighbour on the assets' CPU never takes from them; at the end both go back
 * to the normal policy to write out what is buffered (best effort: an unprivileged process may
 * not be allowed back, and then finishes on idle time). */
static void set_idle(recorder_t *R, int idle, int thread)
{
	struct sched_param sp = {0};
	int policy = idle ? SCHED_IDLE : SCHED_OTHER;
	if (pthread_setschedparam(pthread_self(), policy, &sp) != 0 && idle) {
		fprintf(stderr, "hako-record: --idle: SCHED_IDLE refused\n");
	}
	if (thread) {
		pthread_setschedparam(R->thread, policy, &sp);
	}
}

static int64_t process_cpu_ns(void)
{
	struct timespec c;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c);
	return (int64_t)c.tv_sec * 1000000000 + c.tv_nsec;
}

static int open_domain(recorder_t *R, volatile sig_atomic_t *stop)
{
	hako_time_t until = hako_now_usec() + (hako_time_t)R->o->wait_ms * 1000;
	for (;;) {
		int r = hako_domain_open(R->o->domain, &R->dom);
		if (r == 0) {
			return 0;
		}
		if (r != HAKO_ENOENT || hako_now_usec() >= until || *stop) {
			fprintf(stderr, "hako-record: domain '%s': %s\n", R->o->domain,
			        hako_strerror(r));
			return r;
		}
		struct timespec ts = {0, 20000000};
		nanosleep(&ts, NULL);
	}
}

/* A member's clock that never holds the world (the world rule bounds nothing at 2^60 us). */
#define GUARD_FREE (1ll << 60)

/* --until-stop, follower: register the stop guard, so that the run's stop completes only once
 * the sampler had a last look, and a reset after it erases nothing it had not seen. It must
 * be there before the run starts (members register in Stopped); later, none, said once. */
static void guard_open(recorder_t *R)
{
	char name[64];
	snprintf(name, sizeof(name), "hako-record-%d", (int)getpid());
	int r = hako_domain_state(R->dom) == HAKO_STATE_STOPPED
	            ? hako_member_register_proxy(R->dom, name, &R->guard)
	            : HAKO_ESTATE;
	if (r == 0) {
		hako_member_set_time(R->guard, GUARD_FREE);
		return;
	}
	R->guard = NULL;
	fprintf(stderr,
	        "hako-record: cannot guard the run's stop (%s): the writes between its last look "
	        "and the reset after the run may be missed\n",
	        r == HAKO_ESTATE ? "the run had started" : hako_strerror(r));
}

/* The guard's events: a stop is acknowledged after a last look at every chosen channel. */
static void guard_events(recorder_t *R)
{
	if (R->guard == NULL) {
		return;
	}
	hako_member_heartbeat(R->guard);
	int ev = hako_member_event(R->guard);
	if (ev <= HAKO_EVENT_NONE) {
		return;
	}
	if (ev == HAKO_EVENT_STOP && scan(R)) {
		wake_writer(R);
	}
	hako_member_ack(R->guard, ev);
	if (ev == HAKO_EVENT_START || ev == HAKO_EVENT_RESET) {
		hako_member_set_time(R->guard, GUARD_FREE); /* a reset set it to 0 */
	}
}

static int summary_metadata(recorder_t *R)
{
	char v[8][32];
	snprintf(v[0], sizeof(v[0]), "%" PRIu64, R->recorded);
	snprintf(v[1], sizeof(v[1]), "%" PRIu64, R->missed);
	snprintf(v[2], sizeof(v[2]), "%" PRIu64, R->dropped);
	snprintf(v[3], sizeof(v[3]), "%" PRIu64, R->decimated);
	snprintf(v[4], sizeof(v[4]), "%" PRIu64, R->invalid);
	snprintf(v[5], sizeof(v[5]), "%" PRIu32, R->resets);
	snprintf(v[6], sizeof(v[6]), "%d", R->nselected);
	snprintf(v[7], sizeof(v[7]), "%" PRId64, R->delta_ns / 1000);
	const char *kv[] = {"domain",  R->o->domain, "recorded", v[0],        "missed",
	                    v[1],      "dropped",    v[2],       "decimated", v[3],
	                    "invalid", v[4],         "resets",   v[5],        "channels",
	                    v[6],      "delta_usec", v[7],       NULL};
	return hako_mcap_writer_add_metadata(R->w, "hako-record", kv);
}

/* --asset: read every chosen channel at each step of its own, stamped with the time the step
 * brings its clock to. The world waits for it (at most Dmax, as for any asset); it never waits
 * for the writer thread. */
static int run_asset(recorder_t *R, volatile sig_atomic_t *stop, const char **why)
{
	hako_member_t *m;
	hako_time_t delta = R->delta_ns / 1000 > 0 ? R->delta_ns / 1000 : 1000;
	int rc = hako_member_register(R->dom, R->o->asset, delta, &m);
	if (rc != 0) {
		fprintf(stderr, "hako-record: register asset '%s': %s\n", R->o->asset,
		        hako_strerror(rc));
		return rc;
	}
	int count = 0, ran = 0;
	if (!R->o->quiet) {
		printf("hako-record: asset '%s' registered (step %lld us)\n", R->o->asset,
		       (long long)delta);
	}
	while (!*stop && rc == 0) {
		int ev = HAKO_EVENT_NONE;
		int r = hako_member_wait_event(m, 100000, &ev);
		if (r == HAKO_ETIMEDOUT) {
			continue;
		}
		if (r != 0) {
			rc = r;
			break;
		}
		hako_member_ack(m, ev);
		if (ev == HAKO_EVENT_ERROR) {
			*why = "the domain failed";
			break;
		}
		if (ev == HAKO_EVENT_RESET) {
			/* An asset leaves at the reset that follows a run (its stop is acknowledged
			 * while the run ends; leaving then would fail it). */
			if (R->o->until_stop && ran) {
				*why = "the run ended";
				break;
			}
			after_reset(R);
			continue;
		}
		if (ev != HAKO_EVENT_START) {
			continue;
		}
		ran = 1;
		while (!*stop && rc == 0 && hako_member_step_wait(m) == 0) {
			if (hako_domain_list_channels(R->dom, NULL, 0, &count) == 0 &&
			    count != R->nknown) {
				rc = rescan(R);
			}
			hako_time_t T = hako_member_time(m) + hako_member_delta(m);
			R->step_ns = R->base_ns + (int64_t)T * 1000;
			if (scan(R)) {
				wake_writer(R);
			}
			hako_member_step_done(m);
		}
	}
	hako_member_unregister(m);
	return rc;
}

int rec_run(const rec_opts_t *o, volatile sig_atomic_t *stop)
{
	recorder_t R = {.o = o, .step_ns = -1};
	hako_error_t err;
	char msg[1024];
	int rc = hako_msg_registry_create(&R.reg);
	if (rc == 0 && o->pdudef != NULL) {
		rc = hako_pdudef_load(o->pdudef, &R.def, &err);
		if (rc != 0) {
			fprintf(stderr, "hako-record: %s\n",
			        hako_error_format(&err, msg, sizeof(msg)));
		}
	}
	if (rc == 0 && (rc = rec_ring_init(&R.ring, o->buffer_bytes)) != 0) {
		fprintf(stderr, "hako-record: buffer of %zu bytes: %s\n", o->buffer_bytes,
		        hako_strerror(rc));
	}
	rc = rc ? rc : open_domain(&R, stop);
	if (rc == 0) {
		hako_mcap_writer_opts_t wo = {.profile = "ros2",
		                              .library = "hako-record " HAKO_VERSION,
		                              .compression = o->compression,
		                              .chunk_size = o->chunk_size};
		rc = hako_mcap_writer_open(&R.w, o->out, &wo, msg, sizeof(msg));
		if (rc != 0) {
			fprintf(stderr, "hako-record: %s\n", msg);
		}
	}
	if (rc == 0 && (rc = rescan(&R)) != 0) {
		fprintf(stderr, "hako-record: domain '%s': %s\n", o->domain, hako_strerror(rc));
	}
	int thread = 0;
	if (rc == 0) {
		pthread_mutex_init(&R.mu, NULL);
		pthread_cond_init(&R.cv, NULL);
		if (o->idle && o->asset == NULL) {
			set_idle(&R, 1, 0); /* before the thread: it inherits the policy */
		}
		rc = pthread_create(&R.thread, NULL, writer_main, &R) == 0 ? 0 : HAKO_ENOMEM;
		thread = rc == 0;
	}
	if (rc == 0 && o->until_stop && o->asset == NULL && !o->idle) {
		/* (Not with --idle: the run's start and stop would wait for a process that runs
		 * only on idle CPU time.) */
		guard_open(&R);
	}
	if (rc == 0 && !o->quiet) {
		printf("hako-record: recording domain '%s' into %s (%d channels so far)\n",
		       o->domain, o->out, R.nselected);
		fflush(stdout);
	}
	uint32_t resets = rc == 0 ? hako_domain_reset_count(R.dom) : 0;
	int was_running = 0;
	hako_time_t next_rescan = hako_now_usec() + RESCAN_USEC;
	const char *why = "stopped by a signal";
	rec_budget_init(&R.budget, o->cpu_budget);
	if (rc == 0 && o->asset != NULL) {
		rc = run_asset(&R, stop, &why);
	}
	while (rc == 0 && !*stop && o->asset == NULL) {
		guard_events(&R);
		uint32_t seen = hako_domain_changes(R.dom);
		int count = 0;
		if (hako_domain_list_channels(R.dom, NULL, 0, &count) == 0 && count != R.nknown) {
			rc = rescan(&R);
		}
		uint32_t rs = hako_domain_reset_count(R.dom);
		if (rs != resets) {
			resets = rs;
			if (o->until_stop && (was_running || R.max_log_ns > 0)) {
				/* The run ended and was reset between two looks: what was written
				 * after the last one is gone with the reset (not counted). */
				why = "the run ended";
				break;
			}
			after_reset(&R);
		}
		int state = hako_domain_state(R.dom);
		if (state != HAKO_STATE_RUNNING) {
			rec_budget_pause(&R.budget); /* its windows begin with the run */
		}
		/* A quiet window: what is written meanwhile is missed (counted). */
		int any =
		    state == HAKO_STATE_RUNNING && !rec_budget_may_read(&R.budget) ? 0 : scan(&R);
		if (any) {
			wake_writer(&R);
		}
		if (state == HAKO_STATE_RUNNING) {
			was_running = 1;
		} else if (o->until_stop && was_running) {
			scan(&R); /* the last writes of the run */
			why = "the run stopped";
			break;
		}
		hako_time_t now = hako_now_usec();
		if (now >= next_rescan) {
			next_rescan = now + RESCAN_USEC;
			hako_domain_info_t info;
			if (hako_domain_get_info(R.dom, &info) != 0 || !info.master_alive) {
				why = "the domain's conductor is gone";
				break;
			}
			rc = rescan(&R);
		}
		if (!o->wake_on_write && state == HAKO_STATE_RUNNING) {
			/* Look again after poll_usec of wall time, or later if over budget: no
			 * cost to the writers (a wake-up per write would cost each one a system
			 * call while the sampler sleeps). */
			int64_t nap = rec_budget_nap(&R.budget, hako_now_usec(), process_cpu_ns(),
			                             hako_domain_world_time(R.dom), R.rtf,
			                             (int64_t)o->poll_usec * 1000);
			struct timespec ts = {(time_t)(nap / 1000000000), (long)(nap % 1000000000)};
			nanosleep(&ts, NULL);
		} else if (R.ws != NULL && R.nselected > 0 && state == HAKO_STATE_RUNNING) {
			/* Woken by a write to a chosen channel; a channel created meanwhile is
			 * found at the latest when the wait times out. */
			int nev = 0;
			hako_waitset_wait(R.ws, any ? 0 : RUN_WAIT_USEC, R.events,
			                  (int)(sizeof(R.events) / sizeof(R.events[0])), &nev);
		} else if (!any) {
			hako_domain_wait_change(R.dom, seen, IDLE_WAIT_USEC);
		}
	}
	if (rc == 0 && thread && o->asset == NULL && hako_domain_reset_count(R.dom) == resets) {
		/* A last look (at a signal): the writes since the previous one are recorded or
		 * counted, so the counts cover the whole time it followed the domain. */
		scan(&R);
	}
	hako_member_unregister(R.guard); /* before the file is finished: no reset waits for it */
	R.guard = NULL;
	if (thread) {
		if (o->idle && o->asset == NULL) {
			set_idle(&R, 0, 1);
		}
		atomic_store(&R.done, 1);
		pthread_mutex_lock(&R.mu);
		pthread_cond_signal(&R.cv);
		pthread_mutex_unlock(&R.mu);
		pthread_join(R.thread, NULL);
		rc = rc ? rc : R.write_error;
	}
	for (int i = 0; i < R.nchans_cap; i++) {
		rec_chan_t *c = &R.chans[i];
		R.recorded += c->recorded;
		R.missed += c->missed;
		R.dropped += c->dropped;
		R.decimated += c->decimated;
		R.invalid += c->invalid;
	}
	if (R.w != NULL) {
		int mr = summary_metadata(&R);
		hako_mcap_writer_stats_t st;
		hako_mcap_writer_get_stats(R.w, &st);
		int cr = hako_mcap_writer_close(R.w);
		rc = rc ? rc : (mr ? mr : cr);
		if (cr != 0 && rc == cr) {
			fprintf(stderr, "hako-record: %s: closing: %s\n", o->out,
			        hako_strerror(cr));
		}
		if (R.budget.automatic && R.budget.changes > 0) {
			printf("hako-record: automatic budget: %.3f CPUs on average over %" PRIu32
			       " decisions, %.3f at the end; the world's speed recording / not "
			       "recording %.3f (the last decision)\n",
			       R.budget.cpus_sum / R.budget.changes, R.budget.changes,
			       R.budget.cpus, R.budget.ratio);
		}
		printf("hako-record: done (%s): %" PRIu64 " messages on %d channels, %" PRIu64
		       " missed (sequence gaps), %" PRIu64 " dropped (buffer full), %" PRIu64
		       " decimated, %" PRIu64 " invalid, %" PRIu32 " resets; %s\n",
		       why, R.recorded, R.nselected, R.missed, R.dropped, R.decimated, R.invalid,
		       R.resets, o->out);
		fflush(stdout);
	}
	if (thread) {
		pthread_mutex_destroy(&R.mu);
		pthread_cond_destroy(&R.cv);
	}
	hako_waitset_destroy(R.ws);
	free(R.chans);
	free(R.schemas);
	free(R.cdr);
	rec_ring_free(&R.ring);
	hako_domain_close(R.dom);
	hako_pdudef_free(R.def);
	hako_msg_registry_destroy(R.reg);
	return rc;
}
