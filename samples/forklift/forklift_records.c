/* Step records: writing, reading, merging and the single-process replay. See
 * forklift_records.h. */
#include "forklift_records.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define STEPS_MAGIC   "# forklift steps v1"
#define STEPS_COLUMNS "step,model_usec,world_usec,node,epoch,phase,x,y,yaw,v,lift,hash"

void forklift_steps_write_header(FILE *f, const forklift_steps_info_t *info)
{
	fprintf(f, "%s\n# node=%u domain=%s delta_usec=%" PRId64 " dmax_usec=%" PRId64 "\n",
	        STEPS_MAGIC, info->node, info->domain[0] != '\0' ? info->domain : "-",
	        (int64_t)info->delta_usec, (int64_t)info->dmax_usec);
	if (info->have_mission) {
		forklift_steps_write_mission(f, &info->mission);
	}
	fprintf(f, "%s\n", STEPS_COLUMNS);
}

void forklift_steps_write_mission(FILE *f, const forklift_mission_t *m)
{
	fprintf(f, "# mission forward=%.17g backward=%.17g speed=%.17g lift=%.17g loops=%u\n",
	        m->forward_m, m->backward_m, m->speed, m->lift_height, m->loops);
}

void forklift_record_of(forklift_record_t *r, const forklift_state_t *s, hako_time_t world_usec,
                        uint8_t node, uint8_t epoch)
{
	r->step = s->step;
	r->model_usec = (hako_time_t)s->step * FORKLIFT_DT_USEC;
	r->world_usec = world_usec;
	r->node = node;
	r->epoch = epoch;
	r->phase = s->phase;
	r->x = s->x;
	r->y = s->y;
	r->yaw = s->yaw;
	r->v = s->v;
	r->lift = s->lift;
	r->hash = forklift_state_hash(s);
	r->lost = 0;
}

void forklift_steps_write(FILE *f, const forklift_state_t *s, hako_time_t world_usec, uint8_t node,
                          uint8_t epoch)
{
	forklift_record_t r;
	forklift_record_of(&r, s, world_usec, node, epoch);
	fprintf(f,
	        "%" PRIu64 ",%" PRId64 ",%" PRId64
	        ",%u,%u,%d,%.17g,%.17g,%.17g,%.17g,%.17g,%016" PRIx64 "\n",
	        r.step, (int64_t)r.model_usec, (int64_t)r.world_usec, r.node, r.epoch, r.phase, r.x,
	        r.y, r.yaw, r.v, r.lift, r.hash);
}

static int failf(char *why, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int failf(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
	return -1;
}

static int parse_mission(const char *line, forklift_mission_t *m)
{
	unsigned loops;
	if (sscanf(line, "# mission forward=%lf backward=%lf speed=%lf lift=%lf loops=%u",
	           &m->forward_m, &m->backward_m, &m->speed, &m->lift_height, &loops) != 5) {
		return -1;
	}
	m->loops = loops;
	return forklift_mission_check(m);
}

static int parse_record(char *line, forklift_record_t *r)
{
	char *f[12];
	int n = 0;
	for (char *p = line; n < 12;) {
		f[n++] = p;
		p = strchr(p, ',');
		if (p == NULL) {
			break;
		}
		*p++ = '\0';
	}
	if (n != 12) {
		return -1;
	}
	char *end;
	unsigned long long u[6];
	long long sgn[3];
	errno = 0;
	u[0] = strtoull(f[0], &end, 10);
	if (*end != '\0') {
		return -1;
	}
	sgn[0] = strtoll(f[1], &end, 10);
	if (*end != '\0') {
		return -1;
	}
	sgn[1] = strtoll(f[2], &end, 10);
	if (*end != '\0') {
		return -1;
	}
	u[1] = strtoull(f[3], &end, 10);
	if (*end != '\0' || u[1] > 255) {
		return -1;
	}
	u[2] = strtoull(f[4], &end, 10);
	if (*end != '\0' || u[2] > 255) {
		return -1;
	}
	sgn[2] = strtoll(f[5], &end, 10);
	if (*end != '\0') {
		return -1;
	}
	double d[5];
	for (int i = 0; i < 5; i++) {
		d[i] = strtod(f[6 + i], &end);
		if (*end != '\0' || end == f[6 + i]) {
			return -1;
		}
	}
	u[3] = strtoull(f[11], &end, 16);
	if (*end != '\0' || errno != 0) {
		return -1;
	}
	r->step = u[0];
	r->model_usec = sgn[0];
	r->world_usec = sgn[1];
	r->node = (uint8_t)u[1];
	r->epoch = (uint8_t)u[2];
	r->phase = (int32_t)sgn[2];
	r->x = d[0];
	r->y = d[1];
	r->yaw = d[2];
	r->v = d[3];
	r->lift = d[4];
	r->hash = u[3];
	r->lost = 0;
	return 0;
}

int forklift_steps_load(const char *path, forklift_steps_t *out, char *why, size_t len)
{
	memset(out, 0, sizeof(*out));
	FILE *f = fopen(path, "r");
	if (f == NULL) {
		return failf(why, len, "%s: %s", path, strerror(errno));
	}
	char line[1024];
	size_t cap = 0;
	int lineno = 0;
	int rc = -1;
	why[0] = '\0';
	while (fgets(line, sizeof(line), f) != NULL) {
		lineno++;
		size_t n = strlen(line);
		if (n > 0 && line[n - 1] == '\n') {
			line[--n] = '\0';
		} else if (!feof(f)) {
			failf(why, len, "%s:%d: line too long", path, lineno);
			goto out;
		} else {
			/* The host writes whole lines: one without its newline at the end of the
			 * file was cut short by a kill. Even when it parses, a number in it may be
			 * cut (x=0.12 of 0.1234...), so it is never taken. */
			out->cut_line = lineno;
			snprintf(why, len,
			         "%s:%d: the last line is cut short (its host was killed while "
			         "writing it): skipped",
			         path, lineno);
			break;
		}
		if (lineno == 1) {
			if (strcmp(line, STEPS_MAGIC) != 0) {
				failf(why, len, "%s:1: not a forklift steps file", path);
				goto out;
			}
			continue;
		}
		if (strncmp(line, "# node=", 7) == 0) {
			long long delta, dmax;
			char domain[128];
			if (sscanf(line, "# node=%u domain=%127s delta_usec=%lld dmax_usec=%lld",
			           &out->info.node, domain, &delta, &dmax) != 4 ||
			    delta <= 0) {
				failf(why, len, "%s:%d: malformed header", path, lineno);
				goto out;
			}
			snprintf(out->info.domain, sizeof(out->info.domain), "%s", domain);
			out->info.delta_usec = delta;
			out->info.dmax_usec = dmax;
			continue;
		}
		if (strncmp(line, "# mission", 9) == 0) {
			if (parse_mission(line, &out->info.mission) != 0) {
				failf(why, len, "%s:%d: malformed mission", path, lineno);
				goto out;
			}
			out->info.have_mission = 1;
			continue;
		}
		if (line[0] == '#' || strcmp(line, STEPS_COLUMNS) == 0) {
			continue;
		}
		if (out->count == cap) {
			cap = cap > 0 ? cap * 2 : 4096;
			forklift_record_t *p = realloc(out->rec, cap * sizeof(*p));
			if (p == NULL) {
				failf(why, len, "%s: out of memory", path);
				goto out;
			}
			out->rec = p;
		}
		if (parse_record(line, &out->rec[out->count]) != 0) {
			failf(why, len, "%s:%d: malformed record", path, lineno);
			goto out;
		}
		out->count++;
	}
	if (lineno == 0 || out->cut_line == 1) {
		failf(why, len, "%s: empty%s", path,
		      lineno == 0 ? "" : ": its first line is cut short");
		goto out;
	}
	rc = 0;
out:
	fclose(f);
	if (rc != 0) {
		forklift_steps_free(out);
	}
	return rc;
}

void forklift_steps_free(forklift_steps_t *s)
{
	free(s->rec);
	s->rec = NULL;
	s->count = 0;
}

/* The file whose records end with `last` and then are cut short (a killed host), or NULL. */
static const forklift_steps_t *cut_off_after(const forklift_steps_t *files, size_t count,
                                             const forklift_record_t *last)
{
	for (size_t i = 0; i < count; i++) {
		const forklift_steps_t *f = &files[i];
		if (f->cut_line != 0 && f->count > 0 && f->rec[f->count - 1].step == last->step &&
		    f->rec[f->count - 1].node == last->node) {
			return f;
		}
	}
	return NULL;
}

/* Steps k + 1 .. end have no record, and the host that ran step k was killed with its
 * records of them unwritten (the host writes through a buffer: a kill loses its tail). It
 * ran them: the next owner's first record is checked against the single-process run. Until
 * forklift_run_replay fills them in, they are the killed host's last record moved on in time. */
static void note_lost(forklift_run_t *run, const forklift_steps_t *cut, size_t k, size_t end)
{
	const forklift_record_t *last = &run->rec[k - 1];
	for (size_t j = k; j < end; j++) {
		forklift_record_t *r = &run->rec[j];
		*r = *last;
		r->step = j + 1;
		r->model_usec = (hako_time_t)(j + 1) * FORKLIFT_DT_USEC;
		r->world_usec = last->world_usec + (r->model_usec - last->model_usec);
		r->hash = 0;
		r->lost = 1;
	}
	if (run->lost == 0) {
		snprintf(run->lost_note, sizeof(run->lost_note),
		         "steps %zu..%zu (t=%.3f..%.3f s) have no record: node %u's records end "
		         "cut short at step %" PRIu64 " (line %d; its host was killed)",
		         k + 1, end, (double)(k + 1) * FORKLIFT_DT_USEC / 1e6,
		         (double)end * FORKLIFT_DT_USEC / 1e6, last->node, last->step,
		         cut->cut_line);
	}
	run->lost += end - k;
}

int forklift_run_merge(const forklift_steps_t *files, size_t count, forklift_run_t *run, char *why,
                       size_t len)
{
	memset(run, 0, sizeof(*run));
	uint64_t last = 0;
	for (size_t i = 0; i < count; i++) {
		for (size_t j = 0; j < files[i].count; j++) {
			if (files[i].rec[j].step == 0) {
				return failf(why, len, "node %u recorded a step 0",
				             files[i].info.node);
			}
			if (files[i].rec[j].step > last) {
				last = files[i].rec[j].step;
			}
		}
	}
	run->rec = calloc(last > 0 ? last : 1, sizeof(*run->rec));
	if (run->rec == NULL) {
		return failf(why, len, "out of memory");
	}
	run->steps = last;
	for (size_t i = 0; i < count; i++) {
		for (size_t j = 0; j < files[i].count; j++) {
			const forklift_record_t *r = &files[i].rec[j];
			forklift_record_t *slot = &run->rec[r->step - 1];
			if (slot->step != 0) {
				failf(why, len,
				      "step %" PRIu64 " was run twice: by node %u (epoch %u) and "
				      "node %u (epoch %u)",
				      r->step, slot->node, slot->epoch, r->node, r->epoch);
				forklift_run_free(run);
				return -1;
			}
			*slot = *r;
		}
	}
	for (size_t k = 0; k < run->steps; k++) {
		if (run->rec[k].step != 0) {
			continue;
		}
		size_t end = k; /* the hole is steps k + 1 .. end */
		while (run->rec[end].step == 0) {
			end++; /* the last step is recorded: the hole ends before it */
		}
		const forklift_steps_t *cut =
		    k > 0 ? cut_off_after(files, count, &run->rec[k - 1]) : NULL;
		if (cut == NULL) {
			failf(why, len, "step %zu (t=%.3f s) was never run", k + 1,
			      (double)(k + 1) * FORKLIFT_DT_USEC / 1e6);
			forklift_run_free(run);
			return -1;
		}
		note_lost(run, cut, k, end);
		k = end;
	}
	/* Ownership changes: another node (a hand-off) or the same node at a new epoch (the old
	 * owner reclaimed the EU after the next one failed to activate in time). */
	size_t cap = 0;
	for (size_t k = 1; k < run->steps; k++) {
		const forklift_record_t *a = &run->rec[k - 1];
		const forklift_record_t *b = &run->rec[k];
		if (a->node == b->node && a->epoch == b->epoch) {
			continue;
		}
		if (run->handoff_count == cap) {
			cap = cap > 0 ? cap * 2 : 32;
			forklift_handoff_t *p = realloc(run->handoffs, cap * sizeof(*p));
			if (p == NULL) {
				forklift_run_free(run);
				return failf(why, len, "out of memory");
			}
			run->handoffs = p;
		}
		forklift_handoff_t *h = &run->handoffs[run->handoff_count++];
		h->index = k;
		h->from = a->node;
		h->to = b->node;
		h->epoch = b->epoch;
		h->reclaim = a->node == b->node;
		h->t_usec = a->model_usec;
		h->x = a->x;
		h->gap_usec = b->world_usec - a->world_usec;
		run->reclaims += (size_t)h->reclaim;
	}
	return 0;
}

void forklift_run_free(forklift_run_t *run)
{
	free(run->rec);
	free(run->handoffs);
	memset(run, 0, sizeof(*run));
}

size_t forklift_run_replay(forklift_run_t *run, const forklift_mission_t *m, char *why, size_t len)
{
	forklift_state_t s;
	forklift_model_init(&s, m);
	why[0] = '\0';
	for (size_t k = 0; k < run->steps; k++) {
		forklift_model_step(&s);
		forklift_record_t want;
		forklift_record_of(&want, &s, 0, 0, 0);
		forklift_record_t *got = &run->rec[k];
		if (got->lost) {
			/* Lost with a killed host: what it computed, proven by the step after. */
			forklift_record_of(got, &s, got->world_usec, got->node, got->epoch);
			got->lost = 1;
			continue;
		}
		const char *field = NULL;
		double a = 0, b = 0;
		if (got->x != want.x) {
			field = "x", a = got->x, b = want.x;
		} else if (got->y != want.y) {
			field = "y", a = got->y, b = want.y;
		} else if (got->yaw != want.yaw) {
			field = "yaw", a = got->yaw, b = want.yaw;
		} else if (got->v != want.v) {
			field = "v", a = got->v, b = want.v;
		} else if (got->lift != want.lift) {
			field = "lift", a = got->lift, b = want.lift;
		} else if (got->phase != want.phase) {
			field = "phase", a = got->phase, b = want.phase;
		}
		if (field != NULL) {
			snprintf(why, len,
			         "step %zu (t=%.3f s, node %u, epoch %u): %s = %.17g, the "
			         "single-process run has %.17g",
			         k + 1, got->model_usec / 1e6, got->node, got->epoch, field, a, b);
			return k;
		}
		if (got->hash != want.hash) {
			snprintf(why, len,
			         "step %zu (t=%.3f s, node %u, epoch %u): the packed state differs "
			         "from the single-process run's (hash %016" PRIx64 " vs %016" PRIx64
			         ")",
			         k + 1, got->model_usec / 1e6, got->node, got->epoch, got->hash,
			         want.hash);
			return k;
		}
	}
	/* A hand-off right after lost steps: where the killed host really let go. */
	for (size_t i = 0; i < run->handoff_count; i++) {
		forklift_handoff_t *h = &run->handoffs[i];
		if (run->rec[h->index - 1].lost) {
			h->x = run->rec[h->index - 1].x;
		}
	}
	return run->steps;
}
