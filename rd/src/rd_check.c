/* hako-rd check: the invariants of RD verified on JSON-lines traces (format and rules in
 * docs/rd.md).
 *
 * Records are grouped by (run, EU) and replayed in world-time order; the owner's records of
 * one node keep their order. The replay keeps the one current owner of the EU: init (role
 * owner) starts the run's ownership, release ends it, activate and reclaim start the next one.
 * Then:
 *  - ownership: an activate or reclaim while someone owns the EU, or an activation not after
 *    the release it answers, is two owners; a release by a node that does not own the EU too;
 *  - writes and model steps: made by the current owner, at its ownership's epoch; no two nodes
 *    write one PDU at one world time;
 *  - model steps: sorted by number, every number from the first to the last exactly once, and
 *    model time advances by the same delta at each step;
 *  - reads (an observer's trace): no PDU of an epoch read after the commit of a later one (a
 *    release at its commit point, a restart).
 */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "hako/log.h"
#include "hako/rd.h"
#include "rd_internal.h"

struct rec {
	int64_t t;
	int64_t mt;    /* write, step */
	uint64_t step; /* step, release, activate, reclaim */
	uint64_t order;
	uint32_t eu;
	uint32_t run;
	uint32_t hash; /* init */
	uint32_t file;
	uint32_t line;
	uint32_t pdu; /* index into names */
	uint8_t node;
	uint8_t epoch;
	uint8_t ev;
	uint8_t other; /* release: next; activate: from; released: next; restart: the lost owner */
	uint8_t owner; /* init: role owner */
	uint8_t lost;  /* a step the lost owner ran after the context a restart started from */
};

struct check {
	const char *const *paths;
	struct rec *recs;
	size_t n, cap;
	char **names;
	size_t name_count, name_cap;
	hako_rd_check_result_t *res;
	int have_first;
	uint32_t first_run;
	int64_t first_t;
};

static int key_is_owner_init(const struct rec *r)
{
	return r->ev == HAKOI_RD_EV_INIT && r->owner;
}

/* (run, eu, t, input order); a run's owner init comes first whatever its t. */
static int by_time(const void *pa, const void *pb)
{
	const struct rec *a = pa, *b = pb;
	if (a->run != b->run) {
		return a->run < b->run ? -1 : 1;
	}
	if (a->eu != b->eu) {
		return a->eu < b->eu ? -1 : 1;
	}
	int64_t ta = key_is_owner_init(a) ? INT64_MIN : a->t;
	int64_t tb = key_is_owner_init(b) ? INT64_MIN : b->t;
	if (ta != tb) {
		return ta < tb ? -1 : 1;
	}
	return a->order < b->order ? -1 : a->order > b->order;
}

static int by_step(const void *pa, const void *pb)
{
	const struct rec *a = *(const struct rec *const *)pa, *b = *(const struct rec *const *)pb;
	if (a->step != b->step) {
		return a->step < b->step ? -1 : 1;
	}
	return a->order < b->order ? -1 : a->order > b->order;
}

static void violation(struct check *ck, const struct rec *r, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void violation(struct check *ck, const struct rec *r, const char *fmt, ...)
{
	char what[400];
	char line[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	snprintf(line, sizeof(line), "%s:%" PRIu32 ": %s", ck->paths[r->file], r->line, what);
	HAKO_INFO("rd check: %s", line);
	ck->res->violations++;
	if (!ck->have_first || r->run < ck->first_run ||
	    (r->run == ck->first_run && r->t < ck->first_t)) {
		ck->have_first = 1;
		ck->first_run = r->run;
		ck->first_t = r->t;
		snprintf(ck->res->first_violation, sizeof(ck->res->first_violation), "%s", line);
	}
}

/* ---- reading ---- */

static int intern(struct check *ck, const char *name, uint32_t *out)
{
	for (size_t i = 0; i < ck->name_count; i++) {
		if (strcmp(ck->names[i], name) == 0) {
			*out = (uint32_t)i;
			return 0;
		}
	}
	if (ck->name_count == ck->name_cap) {
		size_t cap = ck->name_cap != 0 ? ck->name_cap * 2 : 16;
		char **n = realloc(ck->names, cap * sizeof(*n));
		if (n == NULL) {
			return HAKO_ENOMEM;
		}
		ck->names = n;
		ck->name_cap = cap;
	}
	ck->names[ck->name_count] = strdup(name);
	if (ck->names[ck->name_count] == NULL) {
		return HAKO_ENOMEM;
	}
	*out = (uint32_t)ck->name_count++;
	return 0;
}

/* An integer member in [min, max], or the reason it is not. */
static const char *get_int(json_t *o, const char *key, json_int_t min, json_int_t max,
                           json_int_t *out)
{
	json_t *v = json_object_get(o, key);
	if (v == NULL) {
		return "is missing";
	}
	if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max) {
		return "is out of range or not an integer";
	}
	*out = json_integer_value(v);
	return NULL;
}

static int parse_line(struct check *ck, json_t *o, struct rec *r, const char **bad_key,
                      const char **why)
{
	static const struct {
		const char *key;
		json_int_t min, max;
	} common[] = {{"t", INT64_MIN, INT64_MAX},
	              {"node", 0, 255},
	              {"eu", 0, UINT32_MAX},
	              {"epoch", 0, 255}};
	json_int_t v[4];
	for (size_t i = 0; i < 4; i++) {
		if ((*why = get_int(o, common[i].key, common[i].min, common[i].max, &v[i])) !=
		    NULL) {
			*bad_key = common[i].key;
			return HAKO_EPROTO;
		}
	}
	r->t = v[0];
	r->node = (uint8_t)v[1];
	r->eu = (uint32_t)v[2];
	r->epoch = (uint8_t)v[3];
	const char *ev = json_string_value(json_object_get(o, "ev"));
	*bad_key = "ev";
	*why = "is not a known event";
	if (ev == NULL) {
		return HAKO_EPROTO;
	}
	hakoi_rd_trace_ev_t k = hakoi_rd_trace_ev_of(ev);
	if (k == HAKOI_RD_EV_COUNT) {
		return HAKO_EPROTO;
	}
	r->ev = (uint8_t)k;
	json_int_t x = 0;
	const char *key = NULL;
	*why = NULL;
	switch (r->ev) {
	case HAKOI_RD_EV_INIT: {
		const char *role = json_string_value(json_object_get(o, "role"));
		if ((*why = get_int(o, key = "run", 0, UINT32_MAX, &x)) != NULL) {
			break;
		}
		r->run = (uint32_t)x;
		if ((*why = get_int(o, key = "hash", 0, UINT32_MAX, &x)) != NULL) {
			break;
		}
		r->hash = (uint32_t)x;
		key = "role";
		if (role == NULL || (strcmp(role, "owner") != 0 && strcmp(role, "standby") != 0 &&
		                     strcmp(role, "observer") != 0)) {
			*why = "must be \"owner\", \"standby\" or \"observer\"";
			break;
		}
		r->owner = strcmp(role, "owner") == 0;
		break;
	}
	case HAKOI_RD_EV_READ:
	case HAKOI_RD_EV_WRITE: {
		const char *pdu = json_string_value(json_object_get(o, "pdu"));
		key = "pdu";
		if (pdu == NULL) {
			*why = "is missing";
			break;
		}
		if (intern(ck, pdu, &r->pdu) != 0) {
			return HAKO_ENOMEM;
		}
		if (r->ev == HAKOI_RD_EV_READ) {
			break;
		}
		if ((*why = get_int(o, key = "mt", INT64_MIN, INT64_MAX, &x)) == NULL) {
			r->mt = (int64_t)x;
		}
		break;
	}
	case HAKOI_RD_EV_STEP:
		if ((*why = get_int(o, key = "step", 0, INT64_MAX, &x)) != NULL) {
			break;
		}
		r->step = (uint64_t)x;
		if ((*why = get_int(o, key = "mt", INT64_MIN, INT64_MAX, &x)) == NULL) {
			r->mt = (int64_t)x;
		}
		break;
	case HAKOI_RD_EV_RELEASE:
	case HAKOI_RD_EV_ACTIVATE:
		if ((*why = get_int(o, key = r->ev == HAKOI_RD_EV_RELEASE ? "next" : "from", 1, 255,
		                    &x)) != NULL) {
			break;
		}
		r->other = (uint8_t)x;
		/* fall through */
	case HAKOI_RD_EV_RECLAIM:
		if ((*why = get_int(o, key = "step", 0, INT64_MAX, &x)) == NULL) {
			r->step = (uint64_t)x;
		}
		break;
	case HAKOI_RD_EV_RESTART:
		if ((*why = get_int(o, key = "lost", 0, 255, &x)) != NULL) {
			break;
		}
		r->other = (uint8_t)x;
		if ((*why = get_int(o, key = "step", 0, INT64_MAX, &x)) == NULL) {
			r->step = (uint64_t)x;
		}
		break;
	case HAKOI_RD_EV_RELEASED:
		if ((*why = get_int(o, key = "next", 0, 255, &x)) == NULL) {
			r->other = (uint8_t)x;
		}
		break;
	}
	*bad_key = key;
	return *why != NULL ? HAKO_EPROTO : 0;
}

/* Records are short lines; a longer one is not a trace. */
#define RD_TRACE_LINE_MAX 65536

/* The next line of f into buf (RD_TRACE_LINE_MAX + 2 bytes), NUL-terminated: its length with
 * the newline, 0 at the end, RD_TRACE_LINE_MAX + 1 if longer, SIZE_MAX at a NUL byte. */
static size_t next_line(FILE *f, char *buf)
{
	size_t n = 0;
	int ch;
	while ((ch = getc_unlocked(f)) != EOF) {
		if (ch == 0) {
			return SIZE_MAX;
		}
		buf[n++] = (char)ch;
		if (ch == '\n' || n > RD_TRACE_LINE_MAX) {
			break;
		}
	}
	buf[n] = '\0';
	return n;
}

static int read_trace(struct check *ck, uint32_t file, hako_error_t *err)
{
	const char *path = ck->paths[file];
	FILE *f = fopen(path, "r");
	struct stat st;
	if (f == NULL) {
		int e = errno;
		return hako_error_set(err, e == ENOENT ? HAKO_ENOENT : HAKO_EIO, path, 0, 0,
		                      "cannot open: %s", strerror(e));
	}
	/* A trace is a file or a pipe; a directory reads as nothing and a device as garbage. */
	if (fstat(fileno(f), &st) != 0 || !(S_ISREG(st.st_mode) || S_ISFIFO(st.st_mode))) {
		fclose(f);
		return hako_error_set(err, HAKO_EIO, path, 0, 0, "cannot read: %s",
		                      S_ISDIR(st.st_mode) ? "is a directory"
		                                          : "not a regular file or a pipe");
	}
	int64_t run_of[256]; /* per node: the run of its last init in this file */
	for (int i = 0; i < 256; i++) {
		run_of[i] = 0;
	}
	char *line = malloc(RD_TRACE_LINE_MAX + 2);
	uint32_t lineno = 0;
	int rc = line == NULL ? hako_error_set(err, HAKO_ENOMEM, path, 0, 0, "out of memory") : 0;
	size_t len;
	while (rc == 0 && (len = next_line(f, line)) != 0) {
		lineno++;
		if (len > RD_TRACE_LINE_MAX) {
			rc = hako_error_set(
			    err, HAKO_EPROTO, path, (int)lineno, 0, "%s: not a trace",
			    len == SIZE_MAX ? "a NUL byte" : "a record longer than 64 KiB");
			break;
		}
		int complete = line[len - 1] == '\n';
		while (len > 0 &&
		       (line[len - 1] == '\n' || line[len - 1] == '\r' || line[len - 1] == ' ')) {
			len--;
		}
		if (len == 0) {
			continue;
		}
		json_error_t jerr;
		json_t *o = json_loadb(line, len, 0, &jerr);
		if (o == NULL && !complete) {
			/* The last record, cut short: its writer was killed while writing it. */
			HAKO_INFO(
			    "rd: %s:%u: the last record is cut short (its node died while writing "
			    "it): ignored",
			    path, lineno);
			break;
		}
		if (o == NULL || !json_is_object(o)) {
			rc = hako_error_set(
			    err, HAKO_EPROTO, path, (int)lineno, o == NULL ? jerr.column : 1, "%s",
			    o == NULL ? jerr.text : "a record must be a JSON object");
			json_decref(o);
			break;
		}
		if (ck->n == ck->cap) {
			size_t cap = ck->cap != 0 ? ck->cap * 2 : 4096;
			struct rec *n = realloc(ck->recs, cap * sizeof(*n));
			if (n == NULL) {
				json_decref(o);
				rc = hako_error_set(err, HAKO_ENOMEM, path, 0, 0, "out of memory");
				break;
			}
			ck->recs = n;
			ck->cap = cap;
		}
		struct rec *r = &ck->recs[ck->n];
		memset(r, 0, sizeof(*r));
		const char *key = NULL, *why = NULL;
		rc = parse_line(ck, o, r, &key, &why);
		json_decref(o);
		if (rc != 0) {
			rc = hako_error_set(err, rc, path, (int)lineno, 0, "\"%s\" %s",
			                    key != NULL ? key : "?",
			                    why != NULL ? why : "out of memory");
			break;
		}
		if (r->ev == HAKOI_RD_EV_INIT) {
			run_of[r->node] = r->run;
		} else {
			r->run = (uint32_t)run_of[r->node];
		}
		r->file = file;
		r->line = lineno;
		r->order = ck->n;
		ck->n++;
	}
	if (rc == 0 && ferror(f)) {
		rc = hako_error_set(err, HAKO_EIO, path, (int)lineno, 0, "cannot read: %s",
		                    strerror(errno));
	}
	free(line);
	fclose(f);
	return rc;
}

/* ---- checking ---- */

struct owner {
	int valid;
	uint8_t node;
	uint8_t epoch;
	int64_t since;
};

struct release {
	int valid;
	uint8_t from;
	uint8_t next;
	uint8_t epoch;
	int64_t t;
};

/* Writers of the current world time, to find two writers of one PDU. */
struct writers {
	int64_t t;
	size_t n, cap;
	struct {
		uint32_t pdu;
		uint8_t node;
	} * w;
};

static void check_writer(struct check *ck, struct writers *ws, const struct rec *r)
{
	if (ws->n > 0 && ws->t != r->t) {
		ws->n = 0;
	}
	ws->t = r->t;
	for (size_t i = 0; i < ws->n; i++) {
		if (ws->w[i].pdu == r->pdu) {
			if (ws->w[i].node != r->node) {
				violation(ck, r,
				          "eu %" PRIu32
				          ": nodes %u and %u both wrote \"%s\" at world "
				          "time %" PRId64 " us",
				          r->eu, ws->w[i].node, r->node, ck->names[r->pdu], r->t);
			}
			return;
		}
	}
	if (ws->n == ws->cap) {
		size_t cap = ws->cap != 0 ? ws->cap * 2 : 8;
		void *n = realloc(ws->w, cap * sizeof(*ws->w));
		if (n == NULL) {
			return; /* the ownership check still sees a second writer */
		}
		ws->w = n;
		ws->cap = cap;
	}
	ws->w[ws->n].pdu = r->pdu;
	ws->w[ws->n].node = r->node;
	ws->n++;
}

static void check_owned(struct check *ck, const struct owner *o, const struct release *rel,
                        const struct rec *r)
{
	char what[160];
	if (r->ev == HAKOI_RD_EV_WRITE) {
		snprintf(what, sizeof(what), "wrote \"%s\"", ck->names[r->pdu]);
	} else {
		snprintf(what, sizeof(what), "ran model step %" PRIu64, r->step);
	}
	if (!o->valid) {
		if (rel->valid) {
			violation(ck, r,
			          "eu %" PRIu32 ": node %u %s at world time %" PRId64
			          " us, but nobody owns the EU (node %u released it at %" PRId64
			          " us)",
			          r->eu, r->node, what, r->t, rel->from, rel->t);
		} else {
			violation(ck, r,
			          "eu %" PRIu32 ": node %u %s at world time %" PRId64
			          " us, but nobody owns the EU (no init with role owner)",
			          r->eu, r->node, what, r->t);
		}
	} else if (o->node != r->node) {
		violation(ck, r,
		          "eu %" PRIu32 ": node %u %s at world time %" PRId64
		          " us, but node %u owns the EU (epoch %u since %" PRId64 " us)",
		          r->eu, r->node, what, r->t, o->node, o->epoch, o->since);
	} else if (o->epoch != r->epoch) {
		violation(ck, r,
		          "eu %" PRIu32 ": node %u %s at world time %" PRId64
		          " us with epoch %u; its ownership is epoch %u",
		          r->eu, r->node, what, r->t, r->epoch, o->epoch);
	}
}

static void take(struct owner *o, const struct rec *r)
{
	o->valid = 1;
	o->node = r->node;
	o->epoch = r->epoch;
	o->since = r->t;
}

/* Replay one (run, eu) group in world-time order. */
static void check_ownership(struct check *ck, const struct rec *g, size_t n)
{
	struct owner o = {0};
	struct release rel = {0};
	struct writers ws = {0};
	/* The last commit of a new epoch (a release at its commit point, or a restart): no PDU of
	 * an older epoch may be read after it. */
	struct {
		int valid;
		uint8_t epoch;
		int64_t t;
	} commit = {0};
	for (size_t i = 0; i < n; i++) {
		const struct rec *r = &g[i];
		switch (r->ev) {
		case HAKOI_RD_EV_INIT:
			if (!r->owner) {
				break;
			}
			if (o.valid && o.node != r->node) {
				violation(ck, r,
				          "eu %" PRIu32 ": nodes %u and %u both start run %" PRIu32
				          " as the owner",
				          r->eu, o.node, r->node, r->run);
			}
			take(&o, r);
			break;
		case HAKOI_RD_EV_RELEASE:
			if (!o.valid || o.node != r->node) {
				violation(ck, r,
				          "eu %" PRIu32 ": node %u released the EU at world time "
				          "%" PRId64 " us without owning it",
				          r->eu, r->node, r->t);
			} else if (r->epoch != (uint8_t)(o.epoch + 1)) {
				violation(
				    ck, r,
				    "eu %" PRIu32 ": node %u released the EU with epoch %u; its "
				    "ownership is epoch %u, so the release must be epoch %u",
				    r->eu, r->node, r->epoch, o.epoch, (uint8_t)(o.epoch + 1));
			}
			o.valid = 0;
			rel = (struct release){1, r->node, r->other, r->epoch, r->t};
			commit.valid = 1;
			commit.epoch = r->epoch;
			commit.t = r->t;
			break;
		case HAKOI_RD_EV_ACTIVATE:
		case HAKOI_RD_EV_RECLAIM: {
			int act = r->ev == HAKOI_RD_EV_ACTIVATE;
			if (o.valid) {
				violation(
				    ck, r,
				    "eu %" PRIu32 ": two owners: node %u %s the EU at world time "
				    "%" PRId64 " us while node %u owns it (epoch %u since %" PRId64
				    " us)",
				    r->eu, r->node, act ? "activated" : "took back", r->t, o.node,
				    o.epoch, o.since);
			} else if (!rel.valid) {
				violation(ck, r,
				          "eu %" PRIu32 ": node %u %s the EU at world time %" PRId64
				          " us, but no release precedes it",
				          r->eu, r->node, act ? "activated" : "took back", r->t);
			} else if (act && (r->node != rel.next || r->epoch != rel.epoch)) {
				violation(ck, r,
				          "eu %" PRIu32
				          ": node %u activated the EU at epoch %u, but the "
				          "last release was to node %u at epoch %u",
				          r->eu, r->node, r->epoch, rel.next, rel.epoch);
			} else if (act && r->t <= rel.t) {
				violation(ck, r,
				          "eu %" PRIu32
				          ": two owners: node %u activated the EU at world "
				          "time %" PRId64
				          " us, not after node %u released it at %" PRId64 " us",
				          r->eu, r->node, r->t, rel.from, rel.t);
			} else if (!act &&
			           (r->node != rel.from || r->epoch != (uint8_t)(rel.epoch + 1))) {
				violation(ck, r,
				          "eu %" PRIu32
				          ": node %u took the EU back at epoch %u, but the "
				          "last release was by node %u at epoch %u",
				          r->eu, r->node, r->epoch, rel.from, rel.epoch);
			}
			if (act) {
				ck->res->handoffs++;
			} else {
				ck->res->reclaims++;
			}
			take(&o, r);
			break;
		}
		case HAKOI_RD_EV_RESTART:
			/* The owner was lost: its ownership ended with its last record (any later
			 * one is a step or write without owning, found below). */
			if (o.valid && o.node != r->other) {
				violation(
				    ck, r,
				    "eu %" PRIu32 ": two owners: node %u restarted the EU at world "
				    "time %" PRId64 " us while node %u (not the lost node %u) owns "
				    "it",
				    r->eu, r->node, r->t, o.node, r->other);
			}
			ck->res->restarts++;
			take(&o, r);
			rel.valid = 0;
			commit.valid = 1;
			commit.epoch = r->epoch;
			commit.t = r->t;
			break;
		case HAKOI_RD_EV_READ: {
			ck->res->reads++;
			uint8_t behind = (uint8_t)(commit.epoch - r->epoch);
			if (commit.valid && behind >= 1 && behind < 128 && r->t > commit.t) {
				violation(ck, r,
				          "eu %" PRIu32
				          ": node %u read \"%s\" of epoch %u at world time "
				          "%" PRId64 " us, after the commit of epoch %u at %" PRId64
				          " us",
				          r->eu, r->node, ck->names[r->pdu], r->epoch, r->t,
				          commit.epoch, commit.t);
			}
			break;
		}
		case HAKOI_RD_EV_WRITE:
			ck->res->writes++;
			check_writer(ck, &ws, r);
			check_owned(ck, &o, &rel, r);
			break;
		case HAKOI_RD_EV_STEP:
			ck->res->steps++;
			check_owned(ck, &o, &rel, r);
			break;
		default: break;
		}
	}
	free(ws.w);
}

/* RD-Full: a restart runs again, from the authority's committed context (model step k), the
 * steps the lost owner ran after k; those of the lost owner are not counted. */
static void mark_lost(struct rec *g, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (g[i].ev != HAKOI_RD_EV_RESTART) {
			continue;
		}
		for (size_t j = 0; j < n; j++) {
			if (g[j].ev == HAKOI_RD_EV_STEP && g[j].node == g[i].other &&
			    g[j].step > g[i].step && g[j].t < g[i].t) {
				g[j].lost = 1;
			}
		}
	}
}

/* Model steps of one (run, eu) group: each number once, model time one delta apart. */
static void check_steps(struct check *ck, const struct rec *g, size_t n)
{
	size_t count = 0;
	for (size_t i = 0; i < n; i++) {
		count += g[i].ev == HAKOI_RD_EV_STEP;
	}
	if (count == 0) {
		return;
	}
	const struct rec **s = malloc(count * sizeof(*s));
	if (s == NULL) {
		return;
	}
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		if (g[i].ev == HAKOI_RD_EV_STEP && !g[i].lost) {
			s[k++] = &g[i];
		}
	}
	count = k;
	qsort(s, count, sizeof(*s), by_step);
	int have_delta = 0;
	int64_t delta = 0;
	for (size_t i = 1; i < count; i++) {
		const struct rec *a = s[i - 1], *b = s[i];
		if (b->step == a->step) {
			violation(ck, b,
			          "eu %" PRIu32 ": model step %" PRIu64
			          " run twice (node %u at world "
			          "time %" PRId64 " us, node %u at %" PRId64 " us)",
			          b->eu, b->step, a->node, a->t, b->node, b->t);
			continue;
		}
		if (b->step != a->step + 1) {
			violation(ck, b,
			          "eu %" PRIu32 ": model steps %" PRIu64 "..%" PRIu64
			          " skipped (node %u ran %" PRIu64 " at world time %" PRId64
			          " us, node %u ran %" PRIu64 " at %" PRId64 " us)",
			          b->eu, a->step + 1, b->step - 1, a->node, a->step, a->t, b->node,
			          b->step, b->t);
			continue;
		}
		if (!have_delta) {
			have_delta = 1;
			delta = b->mt - a->mt;
			if (delta <= 0) {
				violation(ck, b,
				          "eu %" PRIu32
				          ": model time does not advance from step %" PRIu64
				          " (%" PRId64 " us) to step %" PRIu64 " (%" PRId64 " us)",
				          b->eu, a->step, a->mt, b->step, b->mt);
			}
		} else if (b->mt - a->mt != delta) {
			violation(
			    ck, b,
			    "eu %" PRIu32 ": model step %" PRIu64 " (node %u) is at model time "
			    "%" PRId64 " us, expected %" PRId64 " us (step %" PRIu64 " at %" PRId64
			    " us + delta %" PRId64 " us)",
			    b->eu, b->step, b->node, b->mt, a->mt + delta, a->step, a->mt, delta);
		}
	}
	free(s);
}

static void check_hashes(struct check *ck)
{
	const struct rec *first = NULL;
	for (size_t i = 0; i < ck->n; i++) {
		const struct rec *r = &ck->recs[i];
		if (r->ev != HAKOI_RD_EV_INIT) {
			continue;
		}
		if (first == NULL) {
			first = r;
		} else if (r->hash != first->hash) {
			violation(ck, r,
			          "node %u used an RD config with hash 0x%08" PRIx32
			          "; node %u (%s:%" PRIu32 ") used 0x%08" PRIx32,
			          r->node, r->hash, first->node, ck->paths[first->file],
			          first->line, first->hash);
			return;
		}
	}
}

int hako_rd_check(const char *const *paths, size_t count, hako_rd_check_result_t *res,
                  hako_error_t *err)
{
	hako_error_clear(err);
	if (paths == NULL || count == 0 || res == NULL || count > UINT32_MAX) {
		return hako_error_set(err, HAKO_EINVAL, NULL, 0, 0, "no trace files");
	}
	memset(res, 0, sizeof(*res));
	struct check ck = {.paths = paths, .res = res};
	int rc = 0;
	for (uint32_t f = 0; f < count && rc == 0; f++) {
		rc = read_trace(&ck, f, err);
	}
	if (rc == 0) {
		check_hashes(&ck);
		if (ck.n > 0) {
			qsort(ck.recs, ck.n, sizeof(*ck.recs), by_time);
		}
		for (size_t i = 0; i < ck.n;) {
			size_t j = i;
			while (j < ck.n && ck.recs[j].run == ck.recs[i].run &&
			       ck.recs[j].eu == ck.recs[i].eu) {
				j++;
			}
			mark_lost(&ck.recs[i], j - i);
			check_ownership(&ck, &ck.recs[i], j - i);
			check_steps(&ck, &ck.recs[i], j - i);
			i = j;
		}
	}
	free(ck.recs);
	for (size_t i = 0; i < ck.name_count; i++) {
		free(ck.names[i]);
	}
	free(ck.names);
	return rc;
}
