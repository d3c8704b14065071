/* The domain's event log: a ring of the latest HAKOI_LOG_ENTRIES events in the segment, written
 * by any process without a lock (so the state machine can log under the domain lock and a
 * dying process cannot wedge it), read by hako-cmd plog. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "internal.h"

void hakoi_log_event(hako_domain_t *dom, const char *fmt, ...)
{
	struct hakoi_header *h = dom->hdr;
	uint32_t n = atomic_fetch_add(&h->log_count, 1);
	struct hakoi_log_entry *e = &dom->log[n % HAKOI_LOG_ENTRIES];
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	atomic_store_explicit(&e->number, 0, memory_order_relaxed);
	atomic_thread_fence(memory_order_release); /* the zero is seen before any new byte */
	e->pid = (int32_t)hakoi_self_pid();
	e->wall_usec = (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
	e->world_time = atomic_load_explicit(&h->world_time, memory_order_relaxed);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(e->text, sizeof(e->text), fmt, ap);
	va_end(ap);
	/* n + 1 never is 0: an entry whose number is 0 is being written (or never was). */
	atomic_store_explicit(&e->number, n + 1 != 0 ? n + 1 : 1, memory_order_release);
}

int hako_domain_read_events(hako_domain_t *dom, uint32_t from, hako_domain_event_t *out, int max,
                            int *count, uint32_t *next)
{
	if (dom == NULL || max < 0 || (out == NULL && max > 0)) {
		return HAKO_EINVAL;
	}
	/* Any value: a process of the domain's user may have written it. Only entries whose
	 * number matches their place are copied, so a made-up count yields nothing, not garbage. */
	uint32_t total = atomic_load(&dom->hdr->log_count);
	uint32_t oldest = total > HAKOI_LOG_ENTRIES ? total - HAKOI_LOG_ENTRIES : 0;
	if (from < oldest || from > total) {
		from = oldest;
	}
	int got = 0;
	uint32_t n = from;
	for (; n != total && got < max; n++) {
		const struct hakoi_log_entry *e = &dom->log[n % HAKOI_LOG_ENTRIES];
		uint32_t want = n + 1 != 0 ? n + 1 : 1;
		if (atomic_load_explicit(&e->number, memory_order_acquire) != want) {
			continue; /* overwritten meanwhile, or still being written */
		}
		hako_domain_event_t *o = &out[got];
		o->number = n;
		o->pid = e->pid;
		o->wall_usec = e->wall_usec;
		o->world_time = e->world_time;
		memcpy(o->text, e->text, sizeof(o->text));
		o->text[sizeof(o->text) - 1] = '\0';       /* the segment is not trusted */
		atomic_thread_fence(memory_order_acquire); /* the copy is done before the check */
		if (atomic_load_explicit(&e->number, memory_order_relaxed) == want) {
			got++;
		}
	}
	if (count != NULL) {
		*count = got;
	}
	if (next != NULL) {
		*next = n;
	}
	return 0;
}
